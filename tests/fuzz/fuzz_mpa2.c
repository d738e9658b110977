/*
 * The RFC 6581 negotiation of src/cm/mpa2.h: an initiator and a
 * responder with settings from the input exchange their Enhanced RDMA
 * Connection Establishment Data, either honestly or with the Request's
 * and the Reply's 4 octets replaced by octets from the input (a hostile
 * or broken peer).  Every decision is compared with a reference model
 * written from RFC 6581 §9.1 and §9.2, plus the choices mpa2.c documents
 * where the RFC leaves one:
 *  - Request (§9.1, §9.2): IRD and ORD as set, 0x3FFF for "manual"; A
 *    for peer-to-peer with B/C/D for the supported RTR types; nothing
 *    but 14-bit values.
 *  - Responder (§9.1): initiator IRD 0x3FFF -> ORD unchanged, Reply ORD
 *    0x3FFF; otherwise ORD at most the initiator IRD (lowered to it, or,
 *    strict, a reject naming the ORD it needs: the outcome is
 *    UIW_E_MPA_INSUFFICIENT_IRD).  Initiator ORD 0x3FFF -> IRD
 *    unchanged, Reply IRD 0x3FFF; otherwise IRD at least the initiator
 *    ORD when it can (raised up to its maximum unless strict), and the
 *    Reply carries the values the responder uses.  §9.2: A echoed; the
 *    flags set are types it supports; every offered type it supports is
 *    set; at least one is set; B/C/D never without A.
 *  - Initiator on the Reply (§9.1, §9.2): A not echoed -> invalid frame;
 *    ORD at most the responder IRD (unchanged for 0x3FFF); IRD at least
 *    the responder ORD (unchanged for 0x3FFF), and when it cannot
 *    (strict, or above its maximum) the Terminate 2/0/6; peer-to-peer:
 *    exactly one RTR type, one the Reply allows and it supports, Write
 *    before Read before Send, no Read RTR towards a responder IRD of 0,
 *    and when none is left the Terminate 2/0/7.
 *  - After an honest exchange that succeeded: initiator ORD <= responder
 *    IRD and responder ORD <= initiator IRD (§9.1) unless a side asked
 *    for manual values.
 *  - The setup Terminate FPDU (uiw_mpa2_term_fpdu) decodes as a
 *    Terminate on queue 2, MSN 1, with the cause and no copied headers,
 *    framed at stream octet 0 with the markers and CRC asked for.
 *
 * Input: initiator ird(2) ord(2) max_ird(2) flags(1), responder ird(2)
 * ord(2) max_ird(2) flags(1), mode(1), Request field(4), Reply field(4).
 *   flags: 0x01 strict, 0x02 p2p (initiator), 0x04 ird manual, 0x08 ord
 *   manual (initiator), 0x70 RTR types (UIW_RTR_* << 4; 0 means all)
 *   mode: 0x01 the responder reads the input's Request field, 0x02 the
 *   initiator reads the input's Reply field, 0x04 markers and 0x08 CRC
 *   for the Terminate FPDU, 0xf0 its buffer size / 16
 */
#include "fuzz.h"
#include <uiwarp/cm.h>
#include "cm/mpa2.h"
#include "wire/ddp.h"
#include "wire/mpa.h"

#define MANUAL 0x3fffu

static void take_local(struct fz *in, struct uiw_mpa2_local *l, bool init)
{
	uint8_t f;

	memset(l, 0, sizeof(*l));
	/* the domain mpa2.h gives: values up to the maximum, 14 bits, and
	 * never the all-ones "manual" value unless asked for */
	l->ird = fz_u16(in) % MANUAL;
	l->ord = fz_u16(in) % MANUAL;
	l->max_ird = fz_u16(in) % MANUAL;
	if (l->ird > l->max_ird)
		l->max_ird = l->ird;
	f = fz_u8(in);
	l->strict = f & 0x01;
	l->p2p = init && (f & 0x02);
	l->ird_manual = init && (f & 0x04);
	l->ord_manual = init && (f & 0x08);
	l->rtr = (f >> 4) & UIW_RTR_ALL;
	if (!l->rtr)
		l->rtr = UIW_RTR_ALL;
}

static uint8_t flags_of(const struct uiw_mpa_v2 *v)
{
	if (!v->p2p)
		return 0;
	return (v->rtr_send ? UIW_RTR_SEND : 0) |
	       (v->rtr_write ? UIW_RTR_WRITE : 0) |
	       (v->rtr_read ? UIW_RTR_READ : 0);
}

/* The 4 octets as they go on the wire, then read back. */
static void wire_trip(const struct uiw_mpa_v2 *v, struct uiw_mpa_v2 *out,
		      const char *what)
{
	uint8_t w[UIW_MPA_V2_LEN];

	uiw_mpa_v2_encode(w, v);
	uiw_mpa_v2_decode(w, out);
	/* 14-bit fields: a value the codec had to clamp was not one a
	 * side may send */
	FZ_CHECK(v->ird <= MANUAL && v->ord <= MANUAL,
		 "%s field with a value beyond 14 bits: ird %u ord %u", what,
		 v->ird, v->ord);
	FZ_CHECK(out->ird == v->ird && out->ord == v->ord &&
		 flags_of(out) == flags_of(v) && out->p2p == v->p2p,
		 "%s field does not survive the wire", what);
	/* §9.2: B, C and D are 0 when A is 0 */
	FZ_CHECK(v->p2p || (!v->rtr_send && !v->rtr_write && !v->rtr_read),
		 "%s field sets B/C/D without A", what);
}

static void check_request(const struct uiw_mpa2_local *l,
			  const struct uiw_mpa_v2 *req)
{
	FZ_CHECK(req->ird == (l->ird_manual ? MANUAL : l->ird) &&
		 req->ord == (l->ord_manual ? MANUAL : l->ord),
		 "Request IRD %u ORD %u for local %u/%u (manual %d/%d)",
		 req->ird, req->ord, l->ird, l->ord, l->ird_manual,
		 l->ord_manual);
	FZ_CHECK(req->p2p == l->p2p && flags_of(req) ==
		 (l->p2p ? l->rtr : 0),
		 "Request A %d flags %#x for p2p %d rtr %#x", req->p2p,
		 flags_of(req), l->p2p, l->rtr);
}

static void check_respond(const struct uiw_mpa2_local *l,
			  const struct uiw_mpa_v2 *req,
			  const struct uiw_mpa2_out *o)
{
	const struct uiw_mpa_v2 *f = &o->field;
	uint8_t offered = flags_of(req), set = flags_of(f);
	bool reject = false;

	/* §9.1, the responder's ORD */
	if (req->ird == MANUAL) {
		FZ_CHECK(o->ord == l->ord && f->ord == MANUAL,
			 "initiator IRD 0x3FFF: ORD %u (local %u), Reply ORD "
			 "%#x", o->ord, l->ord, f->ord);
	} else if (l->ord <= req->ird) {
		FZ_CHECK(o->ord == l->ord && f->ord == l->ord,
			 "ORD %u fits the initiator IRD %u but became %u/%u",
			 l->ord, req->ird, o->ord, f->ord);
	} else if (l->strict) {
		/* "MAY reject ... and specify the required ORD in the MPA
		 * Reject Frame responder ORD" */
		reject = true;
		FZ_CHECK(f->ord == l->ord,
			 "reject names ORD %u, not the required %u", f->ord,
			 l->ord);
	} else {
		/* "MUST set its ORD at most to the initiator IRD" */
		FZ_CHECK(o->ord <= req->ird && o->ord == f->ord,
			 "ORD %u (Reply %u) above the initiator IRD %u",
			 o->ord, f->ord, req->ird);
	}
	FZ_CHECK(o->err == (reject ? UIW_E_MPA_INSUFFICIENT_IRD : UIW_OK),
		 "responder outcome %#x, model %s", o->err,
		 reject ? "reject 2/0/6" : "accept");
	FZ_CHECK(!o->err || (o->why && *o->why), "error without a reason");

	/* §9.1, the responder's IRD */
	if (req->ord == MANUAL) {
		FZ_CHECK(o->ird == l->ird && f->ird == MANUAL,
			 "initiator ORD 0x3FFF: IRD %u (local %u), Reply IRD "
			 "%#x", o->ird, l->ird, f->ird);
	} else {
		uint32_t want = l->ird;

		/* "a request to the responder to support a responder IRD
		 * of at least this value": raised as far as it can */
		if (!l->strict && req->ord > want)
			want = req->ord < l->max_ird ? req->ord : l->max_ird;
		FZ_CHECK(o->ird == want && f->ird == want,
			 "IRD %u (Reply %u), model %u: local %u max %u, "
			 "initiator ORD %u, strict %d", o->ird, f->ird, want,
			 l->ird, l->max_ird, req->ord, l->strict);
		FZ_CHECK(f->ird != MANUAL, "Reply IRD reads as manual");
	}
	FZ_CHECK(req->ird == MANUAL || f->ord != MANUAL,
		 "Reply ORD reads as manual");

	/* §9.2 */
	FZ_CHECK(f->p2p == req->p2p && o->p2p == req->p2p,
		 "A not echoed: Request %d, Reply %d, outcome %d", req->p2p,
		 f->p2p, o->p2p);
	if (req->p2p) {
		FZ_CHECK(set && !(set & ~l->rtr),
			 "Reply RTR flags %#x: none, or one this side does not "
			 "support (%#x)", set, l->rtr);
		FZ_CHECK((set & offered & l->rtr) == (offered & l->rtr),
			 "Reply RTR flags %#x leave out an offered type it "
			 "supports (offered %#x, supported %#x)", set, offered,
			 l->rtr);
		FZ_CHECK(o->rtr == set, "accepted types %#x, Reply says %#x",
			 o->rtr, set);
	} else {
		FZ_CHECK(!set && !o->rtr, "RTR flags %#x/%#x without A", set,
			 o->rtr);
	}
}

static void check_reply(const struct uiw_mpa2_local *l,
			const struct uiw_mpa_v2 *req,
			const struct uiw_mpa_v2 *rep,
			const struct uiw_mpa2_out *o)
{
	uiw_err_t want = UIW_OK;
	uint32_t ird = l->ird, ord = l->ord;
	uint8_t m, pick = 0;

	if (rep->p2p != req->p2p) {
		FZ_CHECK(o->err == UIW_E_MPA_INVALID_FRAME,
			 "Reply with A %d to a Request with A %d: %#x",
			 rep->p2p, req->p2p, o->err);
		return;
	}
	/* §9.1: "its ORD at most to the responder IRD"; unchanged for
	 * 0x3FFF */
	if (rep->ird != MANUAL && rep->ird < ord)
		ord = rep->ird;
	/* "its IRD at least to the responder ORD"; unchanged for 0x3FFF;
	 * "If the initiator does not have sufficient resources for the
	 * required IRD, it MUST send a TERM message ... Code 6" */
	if (rep->ord != MANUAL && rep->ord > ird) {
		if (l->strict || rep->ord > l->max_ird)
			want = UIW_E_MPA_INSUFFICIENT_IRD;
		else
			ird = rep->ord;
	}
	if (!want && req->p2p) {
		m = flags_of(rep) & l->rtr;
		if (rep->ird == 0)
			m &= (uint8_t)~UIW_RTR_READ;
		pick = (m & UIW_RTR_WRITE) ? UIW_RTR_WRITE :
		       (m & UIW_RTR_READ) ? UIW_RTR_READ :
		       (m & UIW_RTR_SEND) ? UIW_RTR_SEND : 0;
		/* "If the initiator is not able to generate any of the
		 * responder-supported RTR indications ... Code 7" */
		if (!pick)
			want = UIW_E_MPA_NO_MATCHING_RTR;
	}
	FZ_CHECK(o->err == want,
		 "initiator outcome %#x, model %#x (local ird %u ord %u max "
		 "%u strict %d rtr %#x; Reply ird %u ord %u A%d flags %#x)",
		 o->err, want, l->ird, l->ord, l->max_ird, l->strict, l->rtr,
		 rep->ird, rep->ord, rep->p2p, flags_of(rep));
	FZ_CHECK(!o->err || (o->why && *o->why), "error without a reason");
	if (want)
		return;
	FZ_CHECK(o->ird == ird && o->ord == ord,
		 "initiator IRD %u ORD %u, model %u %u", o->ird, o->ord, ird,
		 ord);
	FZ_CHECK(rep->ord == MANUAL || o->ird >= rep->ord,
		 "initiator IRD %u below the responder ORD %u", o->ird,
		 rep->ord);
	FZ_CHECK(rep->ird == MANUAL || o->ord <= rep->ird,
		 "initiator ORD %u above the responder IRD %u", o->ord,
		 rep->ird);
	FZ_CHECK(o->p2p == req->p2p && o->rtr == pick,
		 "initiator p2p %d RTR %#x, model %d %#x", o->p2p, o->rtr,
		 req->p2p, pick);
	/* exactly one type, one both sides accept */
	FZ_CHECK(!o->rtr || (!(o->rtr & (o->rtr - 1)) &&
			     (o->rtr & flags_of(rep) & l->rtr)),
		 "RTR %#x is not one type of the Reply's %#x and ours %#x",
		 o->rtr, flags_of(rep), l->rtr);
}

static void check_term(uiw_err_t err, bool markers, bool crc, size_t cap)
{
	uint8_t *buf = fz_alloc(cap + 16), u[128];
	struct uiw_ddp_hdr h;
	struct uiw_term t;
	uint16_t ulen;
	size_t n, used, hl;
	uiw_err_t e;

	memset(buf, 0xa5, cap + 16);
	n = uiw_mpa2_term_fpdu(buf, cap, err, markers, crc);
	FZ_CHECK(fz_all(buf + (n ? n : 0), cap + 16 - n, 0xa5) &&
		 n <= cap, "Terminate FPDU wrote past %zu octets (%zu)",
		 n ? n : 0, cap);
	if (!n) {
		/* too small: then no size this small works */
		free(buf);
		buf = fz_alloc(256);
		FZ_CHECK((n = uiw_mpa2_term_fpdu(buf, 256, err, markers,
						 crc)) > cap,
			 "refused a cap of %zu for a %zu-octet FPDU", cap, n);
		free(buf);
		return;
	}
	e = uiw_mpa_fpdu_decode(buf, n, 0, markers, crc, u, sizeof(u), &ulen,
				&used);
	FZ_CHECK(e == UIW_OK && used == n,
		 "Terminate FPDU (markers %d crc %d) does not decode: %#x, "
		 "%zu of %zu", markers, crc, e, used, n);
	/* RFC 5044 §7.1.2 rule 7: with markers the stream starts with one */
	FZ_CHECK(!markers || fz_all(buf, 4, 0), "no marker at octet 0");
	e = uiw_ddp_hdr_decode(u, ulen, &h, &hl);
	FZ_CHECK(e == UIW_OK && hl == 18 && !h.tagged && h.last &&
		 h.opcode == UIW_OP_TERMINATE && h.qn == 2 && h.msn == 1 &&
		 h.mo == 0,
		 "Terminate FPDU header: %#x T%d L%d op %u qn %u msn %u mo %u",
		 e, h.tagged, h.last, h.opcode, h.qn, h.msn, h.mo);
	e = uiw_term_decode(u + hl, ulen - hl, &t);
	FZ_CHECK(e == UIW_OK && t.err == err && !t.m && !t.d && !t.r &&
		 ulen - hl == UIW_TERM_HDR_LEN,
		 "Terminate says %#x (want %#x), M%d D%d R%d, %zu octets",
		 t.err, err, t.m, t.d, t.r, ulen - hl);
	free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz in = { data, size };
	struct uiw_mpa2_local il, rl;
	struct uiw_mpa_v2 req, req_rx, rep_rx, tmp;
	struct uiw_mpa2_out ro, io;
	uint8_t mode, w[UIW_MPA_V2_LEN];
	bool honest;

	take_local(&in, &il, true);
	take_local(&in, &rl, false);
	mode = fz_u8(&in);

	memset(&req, 0x5a, sizeof(req));
	uiw_mpa2_request(&il, &req);
	check_request(&il, &req);
	wire_trip(&req, &req_rx, "Request");

	/* the Request as the responder reads it */
	if (mode & 0x01) {
		w[0] = fz_u8(&in);
		w[1] = fz_u8(&in);
		w[2] = fz_u8(&in);
		w[3] = fz_u8(&in);
		uiw_mpa_v2_decode(w, &req_rx);
	} else {
		(void)fz_u32(&in);
	}
	memset(&ro, 0x5a, sizeof(ro));
	uiw_mpa2_respond(&rl, &req_rx, &ro);
	check_respond(&rl, &req_rx, &ro);
	FZ_CHECK(uiw_mpa2_rtr_flags(&ro.field) == flags_of(&ro.field),
		 "uiw_mpa2_rtr_flags");
	wire_trip(&ro.field, &tmp, "Reply");
	if (ro.err) {
		/* a reject: the initiator reads its values but goes no
		 * further (RFC 5044 §7.1.2: a Reply with R ends MPA) */
		check_term(UIW_E_MPA_INSUFFICIENT_IRD, mode & 0x04,
			   mode & 0x08, (size_t)(mode >> 4) * 16);
		return 0;
	}

	/* the Reply as the initiator reads it */
	honest = !(mode & 0x03);
	rep_rx = tmp;
	if (mode & 0x02) {
		w[0] = fz_u8(&in);
		w[1] = fz_u8(&in);
		w[2] = fz_u8(&in);
		w[3] = fz_u8(&in);
		uiw_mpa_v2_decode(w, &rep_rx);
	}
	memset(&io, 0x5a, sizeof(io));
	uiw_mpa2_reply(&il, &req, &rep_rx, &io);
	check_reply(&il, &req, &rep_rx, &io);

	if (honest && !io.err) {
		/* §9.1: "after a successful negotiation": initiator ORD <=
		 * responder IRD, responder ORD <= initiator IRD */
		FZ_CHECK(req.ord == MANUAL || req.ird == MANUAL ||
			 (io.ord <= ro.ird && ro.ord <= io.ird),
			 "after the exchange: initiator ird %u ord %u, "
			 "responder ird %u ord %u", io.ird, io.ord, ro.ird,
			 ro.ord);
		/* §9.2: the RTR the initiator sends is one the responder
		 * accepts */
		FZ_CHECK(!io.p2p || (io.rtr & ro.rtr),
			 "initiator RTR %#x not accepted by the responder "
			 "(%#x)", io.rtr, ro.rtr);
	}
	if (io.err == UIW_E_MPA_INSUFFICIENT_IRD ||
	    io.err == UIW_E_MPA_NO_MATCHING_RTR || (mode & 0xf0))
		check_term(io.err ? io.err : UIW_E_MPA_NO_MATCHING_RTR,
			   mode & 0x04, mode & 0x08, (size_t)(mode >> 4) * 16);
	return 0;
}
