/*
 * RFC 6581 enhanced connection establishment: IRD/ORD negotiation
 * (§9.1), peer-to-peer mode and the choice of the RTR indication (§9.2),
 * and the Terminate that ends a connection whose negotiation failed
 * (§8, §9).
 *
 * Choices where the RFC leaves one:
 *  - The responder raises its IRD to the initiator's ORD (up to its
 *    maximum) unless strict: the initiator's ORD is "a request to the
 *    responder to support a responder IRD of at least this value", and a
 *    responder IRD below it would not be a successful negotiation.  It
 *    lowers its ORD to the initiator's IRD ("MUST set its ORD at most to
 *    the initiator IRD"), or, strict, rejects naming the ORD it needs.
 *  - The responder sets the flag of every offered RTR type it supports
 *    (the "SHOULD" of §9.2), not one of them; when it supports none it
 *    sets all the types it does support.
 *  - The initiator picks Write, then Read, then Send: a zero-length
 *    Write involves no queue at the responder, a Read needs an IRD entry
 *    and a Response, a Send an MSN of queue 0.  A Read RTR is possible
 *    only when the responder's IRD is not 0.
 *  - The initiator raises its IRD to the responder's ORD up to its
 *    maximum ("MUST set its IRD at least to the responder ORD"); strict,
 *    or beyond the maximum, that is "insufficient resources": 2/0/6.
 */
#include "mpa2.h"

#include <string.h>
#include <uiwarp/cm.h>

#include "../wire/ddp.h"

uint8_t uiw_mpa2_rtr_flags(const struct uiw_mpa_v2 *v)
{
	uint8_t m = 0;

	if (!v->p2p)
		return 0;
	if (v->rtr_send)
		m |= UIW_RTR_SEND;
	if (v->rtr_write)
		m |= UIW_RTR_WRITE;
	if (v->rtr_read)
		m |= UIW_RTR_READ;
	return m;
}

static void set_rtr_flags(struct uiw_mpa_v2 *v, uint8_t m)
{
	v->rtr_send = m & UIW_RTR_SEND;
	v->rtr_write = m & UIW_RTR_WRITE;
	v->rtr_read = m & UIW_RTR_READ;
}

void uiw_mpa2_request(const struct uiw_mpa2_local *l, struct uiw_mpa_v2 *req)
{
	memset(req, 0, sizeof(*req));
	req->ird = l->ird_manual ? UIW_MPA_V2_IRD_MAX : (uint16_t)l->ird;
	req->ord = l->ord_manual ? UIW_MPA_V2_IRD_MAX : (uint16_t)l->ord;
	/* RFC 6581 §9.2: A for peer-to-peer, and B, C, D for each RTR
	 * type the initiator supports. */
	if (l->p2p) {
		req->p2p = true;
		set_rtr_flags(req, l->rtr);
	}
}

void uiw_mpa2_respond(const struct uiw_mpa2_local *l,
		      const struct uiw_mpa_v2 *req, struct uiw_mpa2_out *out)
{
	struct uiw_mpa_v2 *f = &out->field;

	memset(out, 0, sizeof(*out));
	/* RFC 6581 §9.1: the responder's ORD.  0x3FFF: "leaving its local
	 * endpoint ORD value unchanged, and setting ORD to 0x3FFF". */
	if (req->ird == UIW_MPA_V2_IRD_MAX) {
		out->ord = l->ord;
		f->ord = UIW_MPA_V2_IRD_MAX;
	} else if (l->ord <= req->ird) {
		out->ord = f->ord = (uint16_t)l->ord;
	} else if (l->strict) {
		/* "MAY reject the connection request if the initiator IRD is
		 * not sufficient for the ULP-required ORD and specify the
		 * required ORD in the MPA Reject Frame responder ORD". */
		out->err = UIW_E_MPA_INSUFFICIENT_IRD;
		out->why = "the initiator's IRD is below the ORD this side "
			   "requires";
		out->ord = f->ord = (uint16_t)l->ord;
	} else {
		/* "MUST set its ORD at most to the initiator IRD". */
		out->ord = f->ord = req->ird;
	}
	/* The responder's IRD: at least the initiator's ORD when it can. */
	if (req->ord == UIW_MPA_V2_IRD_MAX) {
		out->ird = l->ird;
		f->ird = UIW_MPA_V2_IRD_MAX;
	} else {
		uint32_t ird = l->ird;

		if (!l->strict && req->ord > ird)
			ird = req->ord < l->max_ird ? req->ord : l->max_ird;
		out->ird = f->ird = (uint16_t)ird;
	}
	/* RFC 6581 §9.2: A echoed; the offered types this side supports,
	 * or, if none, "at least one RTR indication type option it
	 * supports" (here: all of them). */
	if (req->p2p) {
		uint8_t m = uiw_mpa2_rtr_flags(req) & l->rtr;

		if (!m)
			m = l->rtr;
		out->p2p = f->p2p = true;
		set_rtr_flags(f, m);
		out->rtr = m;
	}
}

void uiw_mpa2_reply(const struct uiw_mpa2_local *l,
		    const struct uiw_mpa_v2 *req, const struct uiw_mpa_v2 *rep,
		    struct uiw_mpa2_out *out)
{
	memset(out, 0, sizeof(*out));
	out->field = *rep;
	/* RFC 6581 §9.2: the responder MUST echo A. */
	if (rep->p2p != req->p2p) {
		out->err = UIW_E_MPA_INVALID_FRAME;
		out->why = req->p2p ? "the Reply clears the peer-to-peer flag "
				      "A of the Request" :
				      "the Reply sets the peer-to-peer flag A "
				      "the Request did not";
		return;
	}
	/* RFC 6581 §9.1: "MUST set ... its ORD at most to the responder
	 * IRD"; "MUST leave its local endpoint ORD value unchanged upon
	 * receiving a responder IRD value of 0x3FFF". */
	if (rep->ird == UIW_MPA_V2_IRD_MAX || rep->ird >= l->ord)
		out->ord = l->ord;
	else
		out->ord = rep->ird;
	/* "MUST set its IRD at least to the responder ORD"; 0x3FFF leaves
	 * it unchanged. */
	out->ird = l->ird;
	if (rep->ord != UIW_MPA_V2_IRD_MAX && rep->ord > l->ird) {
		if (l->strict || rep->ord > l->max_ird) {
			out->err = UIW_E_MPA_INSUFFICIENT_IRD;
			out->why = "the responder's ORD is above the IRD this "
				   "side can give";
			return;
		}
		out->ird = rep->ord;
	}
	if (req->p2p) {
		uint8_t m = uiw_mpa2_rtr_flags(rep) & l->rtr;

		/* A Read RTR needs an IRD entry at the responder. */
		if (rep->ird == 0)
			m &= (uint8_t)~UIW_RTR_READ;
		out->p2p = true;
		if (m & UIW_RTR_WRITE)
			out->rtr = UIW_RTR_WRITE;
		else if (m & UIW_RTR_READ)
			out->rtr = UIW_RTR_READ;
		else if (m & UIW_RTR_SEND)
			out->rtr = UIW_RTR_SEND;
		else {
			/* §9.2: "MUST send a TERM message", code 7. */
			out->err = UIW_E_MPA_NO_MATCHING_RTR;
			out->why = "the responder accepts no RTR type this "
				   "side supports";
		}
	}
}

size_t uiw_mpa2_term_fpdu(uint8_t *buf, size_t cap, uiw_err_t err,
			  bool markers, bool crc)
{
	uint8_t u[UIW_DDP_UNTAGGED_HDR_LEN + UIW_TERM_MAX_LEN];
	struct uiw_ddp_hdr h;
	struct uiw_term t;
	size_t n, tl;

	/* RFC 5040 §4.8, §5.4: untagged, queue 2, MSN 1, one segment. */
	memset(&h, 0, sizeof(h));
	h.last = true;
	h.ddp_ver = UIW_DDP_VERSION;
	h.rdmap_ver = UIW_RDMAP_VERSION;
	h.opcode = UIW_OP_TERMINATE;
	h.qn = UIW_QN_TERMINATE;
	h.msn = 1;
	n = uiw_ddp_hdr_encode(u, &h);
	memset(&t, 0, sizeof(t));
	t.err = err;
	tl = uiw_term_encode(u + n, sizeof(u) - n, &t);
	if (!tl)
		return 0;
	return uiw_mpa_fpdu_encode(buf, cap, 0, u, (uint16_t)(n + tl),
				   markers, crc);
}
