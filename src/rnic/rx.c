/*
 * Receive: a state machine over the LLP's byte stream.  For each FPDU
 * (RFC 5044 §4) it takes the leading marker (if any), the ULPDU_Length
 * field and the next two octets (the DDP and RDMAP control octets) into
 * scratch; then, with the FPDU's layout from uiw_mpa_layout, the rest of
 * the DDP header into scratch; then, once the header is validated, the
 * payload straight into its place: the target region of a tagged segment
 * (RFC 5041 §5.1.1), the posted receive buffer at MO for queue 0, engine
 * scratch for queue 1 (RDMA Read Requests) and queue 2 (Terminate); and
 * markers, pad and CRC into scratch.  The CRC is computed over exactly
 * the octets that arrived, where they were placed, and checked before the
 * segment is delivered (RFC 5044 §4.4).
 *
 * Where octets go depends only on the state and the stream position, so
 * rx_iov (which names the places) and rx_done (which accounts for what
 * arrived) agree however the stream is split, down to single octets.
 *
 * A refused segment is placed nowhere: its payload goes to a discard
 * scratch, and the error is reported when the FPDU ends, after the CRC
 * (a CRC error wins: the header may simply be damaged), as one Terminate.
 */
#include "qp.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "dev.h"
#include "../rt/log.h"
#include "../wire/crc32c.h"

enum dest { DEST_BARRIER, DEST_PLACE, DEST_DISCARD };

struct rx_cur {
	unsigned pi;
	uint32_t poff;
	uint32_t u;
	uint64_t pos;
};

static void fpdu_start(struct uiw_qp *qp)
{
	struct uiw_rx *r = &qp->rx;

	r->stage = UIW_RX_PRELUDE;
	r->fpdu_pos = r->pos;
	/* RFC 5044 §4.3: a marker every 512 octets, the first one before
	 * the first FPDU of Full Operation. */
	r->mk_lead = qp->lp.markers_rx &&
		     r->pos % UIW_MPA_MARKER_INTERVAL == 0 ?
		     UIW_MPA_MARKER_LEN : 0;
	r->start_got = 0;
	r->ulen = 0;
	r->crc = UIW_CRC32C_INIT;
	r->crc_whole = false;
	r->npieces = r->pi = 0;
	r->poff = 0;
	r->u = 0;
	r->htarget = 0;
	r->hdr_done = false;
	memset(r->hdr, 0, sizeof(r->hdr));
	memset(&r->h, 0, sizeof(r->h));
	r->hlen = r->plen = 0;
	r->err = r->mk_err = UIW_OK;
	r->loc_status = -1;
	r->have_rdmap = false;
	r->why[0] = 0;
	r->plan = UIW_PL_NONE;
	r->mem = NULL;
	r->scr_lim = 0;
	r->fail_sq = r->fail_rq = -1;
}

void uiw_rx_release_holds(struct uiw_qp *qp)
{
	struct uiw_rx *r = &qp->rx;
	unsigned i;

	for (i = 0; i < r->nholds; i++)
		uiw_mr_put(&qp->dev->mrt, r->holds[i]);
	r->nholds = 0;
}

void uiw_rx_reset(struct uiw_qp *qp)
{
	struct uiw_rx *r = &qp->rx;

	uiw_rx_release_holds(qp);
	r->pos = 0;
	r->stopped = false;
	r->valid_seen = false;
	r->handed = 0;
	memset(r->msg_got, 0, sizeof(r->msg_got));
	memset(r->last_msg, 0, sizeof(r->last_msg));
	/* RFC 5041 §4.3: the initial MSN of each queue is one. */
	r->msn[0] = r->msn[1] = r->msn[2] = 1;
	r->q1_got = r->q2_got = 0;
	/* Without markers an FPDU has at most 4 pieces (LEN, ULPDU, PAD,
	 * CRC); with them, the buffer made at attach. */
	if (qp->lp.markers_rx && r->pieces_big) {
		r->pieces = r->pieces_big;
		r->pieces_max = UIW_PIECES_MAX;
	} else {
		r->pieces = r->pieces_inline;
		r->pieces_max = UIW_RX_PIECES_INLINE;
	}
	fpdu_start(qp);
}

bool uiw_rx_mid_fpdu(const struct uiw_qp *qp)
{
	return qp->rx.stage == UIW_RX_BODY || qp->rx.start_got > 0;
}

/* ---- Errors -------------------------------------------------------------- */

static void refuse(struct uiw_qp *qp, uiw_err_t err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Refuses the current segment: nothing more of it is placed; the error
 * is reported when the FPDU ends. */
static void refuse(struct uiw_qp *qp, uiw_err_t err, const char *fmt, ...)
{
	struct uiw_rx *r = &qp->rx;
	va_list ap;

	if (r->err == UIW_OK) {
		r->err = err;
		va_start(ap, fmt);
		vsnprintf(r->why, sizeof(r->why), fmt, ap);
		va_end(ap);
	}
	r->plan = UIW_PL_DISCARD;
}

static void rx_fail(struct uiw_qp *qp, uiw_err_t err,
		    struct uiw_qp_act *act)
{
	struct uiw_rx *r = &qp->rx;
	struct uiw_fail f = {
		.err = err,
		.origin = UIW_TERM_LOCAL,
		.send_term = true,
		.have_seg = true,
		.have_rdmap = r->have_rdmap,
		.sq_idx = r->fail_sq,
		.rq_idx = r->fail_rq,
		.status = err == r->err ? r->loc_status : -1,
		.detail = r->why,
	};

	uiw_qp_fail(qp, &f, act);
}

/* Tagged placement errors (RFC 5041 §7.1, §7.2).  DDP has no code for
 * missing rights; the RDMAP one says what happened (as RNICs do). */
static uiw_err_t tagged_err(enum uiw_mr_check c)
{
	switch (c) {
	case UIW_MRC_PD:
		return UIW_E_DDP_T_STAG_NOT_ASSOC;
	case UIW_MRC_ACCESS:
		return UIW_E_RDMAP_ACCESS;
	case UIW_MRC_WRAP:
		return UIW_E_DDP_T_TO_WRAP;
	case UIW_MRC_BOUNDS:
		return UIW_E_DDP_T_BASE_BOUNDS;
	default:
		return UIW_E_DDP_T_INVALID_STAG;
	}
}

/* RDMA Read Request source errors (RFC 5040 §7.2). */
static uiw_err_t rdmap_err(enum uiw_mr_check c)
{
	switch (c) {
	case UIW_MRC_PD:
		return UIW_E_RDMAP_STAG_NOT_ASSOC;
	case UIW_MRC_ACCESS:
		return UIW_E_RDMAP_ACCESS;
	case UIW_MRC_WRAP:
		return UIW_E_RDMAP_TO_WRAP;
	case UIW_MRC_BOUNDS:
		return UIW_E_RDMAP_BASE_BOUNDS;
	default:
		return UIW_E_RDMAP_INVALID_STAG;
	}
}

/* ---- Header validation --------------------------------------------------- */

static void validate_tagged(struct uiw_qp *qp)
{
	struct uiw_rx *r = &qp->rx;
	const struct uiw_ddp_hdr *h = &r->h;
	enum uiw_mr_check c;

	switch (h->opcode) {
	case UIW_OP_WRITE:
		/* RFC 5041 §5.2: the STag and TO of a zero-length tagged
		 * segment MUST NOT be checked. */
		if (r->plen == 0)
			return;
		c = uiw_mr_check(&qp->dev->mrt, h->stag, qp->pd,
				 UIW_ACCESS_REMOTE_WRITE, h->to, r->plen);
		if (c != UIW_MRC_OK) {
			refuse(qp, tagged_err(c), "RDMA Write to STag 0x%08x "
			       "TO 0x%llx, %u octets: %s", h->stag,
			       (unsigned long long)h->to, r->plen,
			       uiw_mr_check_str(c));
			return;
		}
		r->plan = UIW_PL_MEM;
		r->mem = (uint8_t *)(uintptr_t)h->to;
		r->mr_stag = h->stag;
		r->mr_access = UIW_ACCESS_REMOTE_WRITE;
		return;
	case UIW_OP_READ_RESP: {
		struct uiw_sq_slot *s;
		uint32_t ctr, sink;
		uint64_t to;

		if (qp->orq_count == 0) {
			refuse(qp, UIW_E_RDMAP_UNEXPECTED_OPCODE, "RDMA Read "
			       "Response with no RDMA Read outstanding");
			return;
		}
		/* RFC 5040 §5.5 rule 20: Responses come in Request order. */
		ctr = qp->orq[qp->orq_head % qp->orq_cap];
		s = uiw_sq_at(qp, ctr);
		r->fail_sq = ctr;
		if (r->plen == 0)
			return;
		sink = s->num_sge ? s->sge[0].lkey : 0;
		to = (s->num_sge ? s->sge[0].addr : 0) + s->rd_got;
		if (h->stag != sink) {
			refuse(qp, UIW_E_DDP_T_INVALID_STAG, "RDMA Read "
			       "Response to STag 0x%08x, the Read's sink is "
			       "0x%08x", h->stag, sink);
			return;
		}
		if (h->to != to || r->plen > s->length - s->rd_got) {
			refuse(qp, UIW_E_DDP_T_BASE_BOUNDS, "RDMA Read "
			       "Response at TO 0x%llx, %u octets; the Read "
			       "expects TO 0x%llx, %u more octets",
			       (unsigned long long)h->to, r->plen,
			       (unsigned long long)to,
			       s->length - s->rd_got);
			return;
		}
		c = uiw_mr_check(&qp->dev->mrt, h->stag, qp->pd,
				 UIW_ACCESS_LOCAL_WRITE, h->to, r->plen);
		if (c != UIW_MRC_OK) {
			refuse(qp, tagged_err(c), "RDMA Read sink STag 0x%08x:"
			       " %s", h->stag, uiw_mr_check_str(c));
			return;
		}
		r->plan = UIW_PL_MEM;
		r->mem = (uint8_t *)(uintptr_t)h->to;
		r->mr_stag = h->stag;
		r->mr_access = UIW_ACCESS_LOCAL_WRITE;
		return;
	}
	default:
		refuse(qp, UIW_E_RDMAP_UNEXPECTED_OPCODE, "opcode 0x%x in a "
		       "tagged segment", h->opcode);
		return;
	}
}

static bool is_send(uint8_t op)
{
	return op == UIW_OP_SEND || op == UIW_OP_SEND_INV ||
	       op == UIW_OP_SEND_SE || op == UIW_OP_SEND_SE_INV;
}

/* RFC 5041 §7.1 checks for untagged segments. */
static void validate_untagged(struct uiw_qp *qp)
{
	struct uiw_rx *r = &qp->rx;
	const struct uiw_ddp_hdr *h = &r->h;
	struct uiw_rq_slot *q;

	switch (h->qn) {
	case UIW_QN_SEND:
		/* RFC 7306 §6.3: Immediate Data (atomic.c) */
		if (uiw_ext_rx_q0(qp))
			return;
		if (!is_send(h->opcode)) {
			refuse(qp, UIW_E_RDMAP_UNEXPECTED_OPCODE, "opcode 0x%x "
			       "on queue 0", h->opcode);
			return;
		}
		if (h->msn != r->msn[0]) {
			refuse(qp, UIW_E_DDP_U_MSN_RANGE, "queue 0 MSN %u, "
			       "expected %u", h->msn, r->msn[0]);
			return;
		}
		if (qp->rq_head == qp->rq_tail) {
			refuse(qp, UIW_E_DDP_U_MSN_NO_BUF, "no receive buffer "
			       "posted for queue 0 MSN %u", h->msn);
			return;
		}
		q = uiw_rq_at(qp, qp->rq_head);
		r->fail_rq = qp->rq_head;
		if (h->mo > q->length || h->mo != q->got) {
			refuse(qp, UIW_E_DDP_U_INVALID_MO, "MSN %u MO %u, "
			       "expected MO %u (buffer of %u octets)", h->msn,
			       h->mo, q->got, q->length);
			return;
		}
		if (r->plen > q->length - h->mo) {
			refuse(qp, UIW_E_DDP_U_TOO_LONG, "Send MSN %u of at "
			       "least %llu octets, receive buffer of %u",
			       h->msn, (unsigned long long)h->mo + r->plen,
			       q->length);
			return;
		}
		if (r->plen) {
			r->plan = UIW_PL_SGL;
			r->sgl_mo = h->mo;
		}
		return;
	case UIW_QN_READ_REQ:
		/* RFC 7306 §5.2.1: an Atomic Request (atomic.c) */
		if (uiw_ext_rx_q1(qp))
			return;
		if (h->opcode != UIW_OP_READ_REQ) {
			refuse(qp, UIW_E_RDMAP_UNEXPECTED_OPCODE, "opcode 0x%x "
			       "on queue 1", h->opcode);
			return;
		}
		if (h->msn != r->msn[1]) {
			refuse(qp, UIW_E_DDP_U_MSN_RANGE, "queue 1 MSN %u, "
			       "expected %u", h->msn, r->msn[1]);
			return;
		}
		/* RFC 5040 §6.1: at most IRD inbound Reads.  Queue 1 has
		 * IRD buffers; one more Request finds none. */
		if (r->q1_got == 0 &&
		    (qp->irq_unbuilt >= qp->lp.ird ||
		     qp->irq_tail - qp->irq_head >= qp->irq_cap)) {
			refuse(qp, UIW_E_DDP_U_MSN_NO_BUF, "RDMA Read Request "
			       "MSN %u beyond IRD %u", h->msn, qp->lp.ird);
			return;
		}
		if (h->mo != r->q1_got) {
			refuse(qp, UIW_E_DDP_U_INVALID_MO, "queue 1 MSN %u MO "
			       "%u, expected %u", h->msn, h->mo, r->q1_got);
			return;
		}
		if (r->plen > UIW_READ_REQ_LEN - h->mo) {
			refuse(qp, UIW_E_DDP_U_TOO_LONG, "RDMA Read Request of "
			       "at least %llu octets",
			       (unsigned long long)h->mo + r->plen);
			return;
		}
		r->plan = UIW_PL_SCRATCH;
		r->mem = r->rreq + h->mo;
		r->scr_lim = r->plen;
		return;
	case UIW_QN_TERMINATE:
		if (h->opcode != UIW_OP_TERMINATE) {
			refuse(qp, UIW_E_RDMAP_UNEXPECTED_OPCODE, "opcode 0x%x "
			       "on queue 2", h->opcode);
			return;
		}
		/* A Terminate is taken as it comes (never answered with
		 * one); what does not fit the largest one is dropped. */
		r->plan = UIW_PL_SCRATCH;
		if (h->mo < UIW_TERM_MAX_LEN) {
			r->mem = r->term + h->mo;
			r->scr_lim = UIW_TERM_MAX_LEN - h->mo;
		} else {
			r->mem = r->term;
			r->scr_lim = 0;
		}
		return;
	case UIW_QN_ATOMIC_RESP:
		/* RFC 7306 §5.2.2: Atomic Responses (atomic.c) */
		uiw_ext_rx_q3(qp);
		return;
	default:
		refuse(qp, UIW_E_DDP_U_INVALID_QN, "QN %u", h->qn);
		return;
	}
}

/* The DDP header is complete (or the ULPDU ended before it). */
static void validate_header(struct uiw_qp *qp)
{
	struct uiw_rx *r = &qp->rx;
	size_t need, hl;
	uiw_err_t e;

	r->hdr_done = true;
	r->hlen = r->htarget;
	r->plen = r->ulen - r->hlen;
	need = uiw_ddp_hdr_len(r->hdr[0]);
	if (r->ulen < need) {
		bool tagged = r->ulen > 0 && (r->hdr[0] & UIW_DDP_T);

		/* A header that cannot be read has no valid STag / QN. */
		refuse(qp, tagged ? UIW_E_DDP_T_INVALID_STAG
				  : UIW_E_DDP_U_INVALID_QN,
		       "ULPDU of %u octets cannot hold a %zu-octet DDP header",
		       r->ulen, need);
		return;
	}
	e = uiw_ddp_hdr_decode(r->hdr, r->hlen, &r->h, &hl);
	if (e != UIW_OK) {
		refuse(qp, e, "DDP control 0x%02x, RDMAP control 0x%02x",
		       r->hdr[0], r->hdr[1]);
		return;
	}
	UIW_DBG(3, "qp %u: rx %s op %u ulpdu %u%s", qp->qpn,
		r->h.tagged ? "tagged" : "untagged", r->h.opcode, r->ulen,
		r->h.last ? " L" : "");
	/* RFC 6581 §9.2: the first FPDU of peer-to-peer mode (rtr.c). */
	if (qp->rtr.armed && uiw_rtr_rx_header(qp))
		return;
	if (r->h.tagged)
		validate_tagged(qp);
	else
		validate_untagged(qp);
}

/* ---- Where octets go ----------------------------------------------------- */

/* The receive buffer octet at message offset m (validated in range). */
static void sgl_find(const struct uiw_rq_slot *q, uint32_t m, uint8_t **p,
		     uint32_t *len)
{
	uint32_t i;

	for (i = 0; i < q->num_sge; i++) {
		const struct uiw_sge *g = &q->sge[i];

		if (m < g->length) {
			*p = (uint8_t *)(uintptr_t)g->addr + m;
			*len = g->length - m;
			return;
		}
		m -= g->length;
	}
	*p = NULL;
	*len = 0;
}

static enum dest discard_at(struct uiw_rx *r, uint32_t k, uint32_t rem,
			    uint8_t **p, uint32_t *len)
{
	uint32_t d = k % UIW_RX_DISCARD;

	*p = r->discard + d;
	*len = UIW_RX_DISCARD - d < rem ? UIW_RX_DISCARD - d : rem;
	return DEST_DISCARD;
}

/* Where the octets at cursor c go: at most *len octets at *p. */
static enum dest rx_dest(struct uiw_qp *qp, const struct rx_cur *c,
			 uint8_t **p, uint32_t *len)
{
	struct uiw_rx *r = &qp->rx;
	const struct uiw_mpa_piece *pc = &r->pieces[c->pi];
	uint32_t rem = pc->len - c->poff, x, k;

	switch (pc->kind) {
	case UIW_MPA_P_MARKER: {
		uint64_t at = c->pos - c->poff;

		*p = r->mk[(at / UIW_MPA_MARKER_INTERVAL) %
			   UIW_RX_MARKER_SLOTS] + c->poff;
		*len = rem;
		return DEST_PLACE;
	}
	case UIW_MPA_P_LEN:
		*p = r->lenf + c->poff;
		*len = rem;
		return DEST_PLACE;
	case UIW_MPA_P_PAD:
		*p = r->pad + c->poff;
		*len = rem;
		return DEST_PLACE;
	case UIW_MPA_P_CRC:
		*p = r->crcf + c->poff;
		*len = rem;
		return DEST_PLACE;
	default:
		break;
	}
	/* ULPDU */
	x = pc->off + c->poff;
	if (!r->hdr_done) {
		if (r->htarget == 0) {      /* the control octet first */
			*p = r->hdr + x;
			*len = 1;
			return DEST_PLACE;
		}
		if (x >= r->htarget)
			return DEST_BARRIER;
		*p = r->hdr + x;
		*len = r->htarget - x < rem ? r->htarget - x : rem;
		return DEST_PLACE;
	}
	k = x - r->hlen;
	switch (r->plan) {
	case UIW_PL_MEM:
		*p = r->mem + k;
		*len = rem;
		return DEST_PLACE;
	case UIW_PL_SCRATCH:
		if (k < r->scr_lim) {
			*p = r->mem + k;
			*len = r->scr_lim - k < rem ? r->scr_lim - k : rem;
			return DEST_PLACE;
		}
		return discard_at(r, k - r->scr_lim, rem, p, len);
	case UIW_PL_SGL: {
		uint32_t run;

		sgl_find(uiw_rq_at(qp, qp->rq_head), r->sgl_mo + k, p, &run);
		if (*p) {
			*len = run < rem ? run : rem;
			return DEST_PLACE;
		}
		return discard_at(r, k, rem, p, len);
	}
	default:
		return discard_at(r, k, rem, p, len);
	}
}

static void cur_advance(struct uiw_rx *r, struct rx_cur *c, uint32_t n)
{
	const struct uiw_mpa_piece *pc = &r->pieces[c->pi];

	if (pc->kind == UIW_MPA_P_ULPDU)
		c->u += n;
	c->poff += n;
	c->pos += n;
	if (c->poff == pc->len) {
		c->pi++;
		c->poff = 0;
	}
}

/* ---- Holds on the target memory while the LLP reads into it -------------- */

static bool take_hold(struct uiw_qp *qp, uint32_t stag, unsigned access,
		      uint64_t to, uint64_t len, enum uiw_mr_check *c)
{
	struct uiw_rx *r = &qp->rx;
	struct uiw_mr_entry *e;

	if (r->nholds >= r->holds_cap) {
		*c = UIW_MRC_INVALID;
		return false;
	}
	*c = uiw_mr_get(&qp->dev->mrt, stag, qp->pd, access, to, len, &e);
	if (*c != UIW_MRC_OK)
		return false;
	r->holds[r->nholds++] = e;
	return true;
}

/* Before naming registered memory to the LLP: the region must still be
 * valid (it may have been invalidated or deregistered since the header
 * was checked); then it stays registered until rx_done. */
static void rx_take_holds(struct uiw_qp *qp)
{
	struct uiw_rx *r = &qp->rx;
	enum uiw_mr_check c = UIW_MRC_OK;
	uint32_t k, i;

	if (!r->hdr_done || r->u >= r->hlen + r->plen)
		return;
	k = r->u > r->hlen ? r->u - r->hlen : 0;
	if (r->plan == UIW_PL_MEM) {
		if (!take_hold(qp, r->mr_stag, r->mr_access,
			       (uint64_t)(uintptr_t)(r->mem + k),
			       r->plen - k, &c)) {
			refuse(qp, tagged_err(c), "STag 0x%08x: %s during "
			       "placement", r->mr_stag, uiw_mr_check_str(c));
			if (r->h.opcode == UIW_OP_READ_RESP)
				r->loc_status = UIW_WC_LOC_PROT_ERR;
		}
	} else if (r->plan == UIW_PL_SGL) {
		const struct uiw_rq_slot *q = uiw_rq_at(qp, qp->rq_head);

		for (i = 0; i < q->num_sge; i++) {
			const struct uiw_sge *g = &q->sge[i];

			if (g->length == 0)
				continue;
			if (!take_hold(qp, g->lkey, UIW_ACCESS_LOCAL_WRITE,
				       g->addr, g->length, &c)) {
				uiw_rx_release_holds(qp);
				/* Our own buffer went away: a local error. */
				refuse(qp, UIW_E_DDP_LOCAL_CATA, "receive "
				       "buffer lkey 0x%08x: %s", g->lkey,
				       uiw_mr_check_str(c));
				r->loc_status = UIW_WC_LOC_PROT_ERR;
				break;
			}
		}
	}
}

/* ---- rx_iov -------------------------------------------------------------- */

static bool rx_reading(const struct uiw_qp *qp)
{
	return qp->attached && !qp->rx.stopped && !qp->rx_fin &&
	       (qp->state == UIW_QPS_RTS || qp->state == UIW_QPS_CLOSING);
}

static void iov_add(struct iovec *iov, int *n, uint8_t *p, uint32_t len)
{
	if (*n > 0 && (uint8_t *)iov[*n - 1].iov_base + iov[*n - 1].iov_len ==
		      p) {
		iov[*n - 1].iov_len += len;
		return;
	}
	iov[*n].iov_base = p;
	iov[*n].iov_len = len;
	(*n)++;
}

/* Under qp->lock, the current FPDU's header validated and its last
 * octets named: what uiw_qp_rx_iov_ahead says about the next FPDU. */
static size_t rx_ahead(const struct uiw_qp *qp)
{
	const struct uiw_rx *r = &qp->rx;
	uint32_t have, rest, flen;
	int k = r->h.tagged;

	if (qp->lp.markers_rx || !r->hdr_done || r->h.last)
		return 0;
	have = r->msg_got[k] + r->plen;
	if (r->last_msg[k] <= have)
		return 0;
	rest = r->last_msg[k] - have;
	/* More than this FPDU carried (the peer's segment size): the next
	 * one is not the last. */
	if (rest > r->plen || rest > UIW_RX_AHEAD_MAX)
		return 0;
	/* The next FPDU as the last of a message like this one: the same
	 * header, the rest of the payload; its first 4 + UIW_RX_SPEC
	 * octets are named already. */
	flen = uiw_mpa_plain_len(r->hlen + rest);
	return flen > 4 + UIW_RX_SPEC ? flen - (4 + UIW_RX_SPEC) : 0;
}

int uiw_qp_rx_iov(struct uiw_qp *qp, struct iovec *iov, int max)
{
	return uiw_qp_rx_iov_ahead(qp, iov, max, NULL);
}

int uiw_qp_rx_iov_ahead(struct uiw_qp *qp, struct iovec *iov, int max,
			size_t *ahead)
{
	struct uiw_rx *r;
	struct rx_cur c;
	uint32_t disc = 0;
	size_t total = 0;
	int n = 0, i;

	if (ahead)
		*ahead = 0;
	if (!qp || !iov || max <= 0)
		return 0;
	r = &qp->rx;
	pthread_mutex_lock(&qp->lock);
	uiw_rx_release_holds(qp);
	r->handed = 0;
	if (!rx_reading(qp)) {
		pthread_mutex_unlock(&qp->lock);
		return 0;
	}
	if (r->stage == UIW_RX_PRELUDE) {
		uint32_t want = r->mk_lead + 4u + UIW_RX_SPEC - r->start_got;

		iov_add(iov, &n, r->start + r->start_got, want);
		r->handed = want;
		pthread_mutex_unlock(&qp->lock);
		return n;
	}
	rx_take_holds(qp);
	c.pi = r->pi;
	c.poff = r->poff;
	c.u = r->u;
	c.pos = r->pos;
	while (n < max) {
		uint8_t *p;
		uint32_t len;
		enum dest d;

		if (c.pi == r->npieces) {
			/* The FPDU is complete; the next one starts with
			 * [marker] ULPDU_Length, two control octets and
			 * UIW_RX_SPEC more octets that are its own. */
			uint32_t mk = qp->lp.markers_rx &&
				      c.pos % UIW_MPA_MARKER_INTERVAL == 0 ?
				      UIW_MPA_MARKER_LEN : 0;

			iov_add(iov, &n, r->start, mk + 4 + UIW_RX_SPEC);
			if (ahead)
				*ahead = rx_ahead(qp);
			break;
		}
		d = rx_dest(qp, &c, &p, &len);
		if (d == DEST_BARRIER)
			break;
		if (d == DEST_DISCARD) {
			/* Within one call every discarded octet has its
			 * own scratch octet (the CRC reads them after). */
			if (disc + len > UIW_RX_DISCARD)
				len = UIW_RX_DISCARD - disc;
			if (len == 0)
				break;
			disc += len;
		}
		iov_add(iov, &n, p, len);
		cur_advance(r, &c, len);
	}
	for (i = 0; i < n; i++)
		total += iov[i].iov_len;
	r->handed = total;
	pthread_mutex_unlock(&qp->lock);
	return n;
}

/* ---- Consuming what arrived ---------------------------------------------- */

static void marker_check(struct uiw_qp *qp, const struct uiw_mpa_piece *pc,
			 uint64_t at)
{
	struct uiw_rx *r = &qp->rx;
	const uint8_t *m = r->mk[(at / UIW_MPA_MARKER_INTERVAL) %
				 UIW_RX_MARKER_SLOTS];
	/* RFC 5044 §4.2: the reserved half is ignored, the two low bits
	 * of FPDUPTR count as zero. */
	uint16_t ptr = (uint16_t)((m[2] << 8 | m[3]) & ~3u);

	if (ptr != pc->fpduptr && r->mk_err == UIW_OK) {
		/* Reported before any DDP error of the same FPDU. */
		r->mk_err = UIW_E_MPA_MARKER;
		snprintf(r->why, sizeof(r->why), "marker at stream octet %llu "
			 "has FPDUPTR %u, expected %u",
			 (unsigned long long)at, ptr, pc->fpduptr);
	}
}

static void deliver(struct uiw_qp *qp, struct uiw_qp_act *act);

/* The CRC field is complete: check, then deliver (RFC 5044 §4.4: an
 * FPDU whose CRC does not match is invalid; RFC 5044 §8 code 3 applies
 * when the CRC is valid). */
static void fpdu_end(struct uiw_qp *qp, struct uiw_qp_act *act)
{
	struct uiw_rx *r = &qp->rx;
	uiw_err_t e = UIW_OK;

	if (qp->lp.crc) {
		uint32_t calc = uiw_crc32c_final(r->crc);
		uint32_t got = uiw_crc32c_get(r->crcf);

		if (calc != got) {
			e = UIW_E_MPA_CRC;
			snprintf(r->why, sizeof(r->why), "FPDU at stream octet "
				 "%llu: CRC 0x%08x, computed 0x%08x",
				 (unsigned long long)r->fpdu_pos, got, calc);
		}
	}
	if (e == UIW_OK)
		e = r->mk_err;
	/* RFC 5044 §7.1.2 rule 4: MPA has validated an FPDU (whatever DDP
	 * makes of it): a responder may send from now on. */
	if (e == UIW_OK && !r->valid_seen) {
		r->valid_seen = true;
		uiw_qp_tx_release(qp);
	}
	if (e == UIW_OK)
		e = r->err;
	if (e != UIW_OK) {
		rx_fail(qp, e, act);
		return;
	}
	r->msg_got[r->h.tagged] += r->plen;
	if (r->h.last) {
		r->last_msg[r->h.tagged] = r->msg_got[r->h.tagged];
		r->msg_got[r->h.tagged] = 0;
	}
	deliver(qp, act);
	if (!r->stopped)
		fpdu_start(qp);
}

/* Consumes n octets of the FPDU body: copied from src first when src is
 * given (the prelude, replayed), otherwise already where rx_dest said.
 * Returns the octets consumed (fewer when the FPDU or the stream ends). */
static uint32_t body_consume(struct uiw_qp *qp, const uint8_t *src,
			     uint32_t n, struct uiw_qp_act *act)
{
	struct uiw_rx *r = &qp->rx;
	uint32_t done = 0;

	while (done < n && r->stage == UIW_RX_BODY && !r->stopped) {
		const struct uiw_mpa_piece *pc = &r->pieces[r->pi];
		struct rx_cur c = { r->pi, r->poff, r->u, r->pos };
		uint8_t *p;
		uint32_t len, t;

		if (rx_dest(qp, &c, &p, &len) == DEST_BARRIER) {
			/* More arrived than was asked for. */
			struct uiw_fail f = {
				.err = UIW_E_RDMAP_LOCAL_CATA,
				.origin = UIW_TERM_LOCAL,
				.send_term = true,
				.sq_idx = -1, .rq_idx = -1, .status = -1,
				.detail = "receive octets beyond rx_iov",
			};

			uiw_qp_fail(qp, &f, act);
			break;
		}
		t = len < n - done ? len : n - done;
		if (src) {
			memcpy(p, src + done, t);
			if (r->feeding && pc->kind == UIW_MPA_P_ULPDU &&
			    r->hdr_done) {
				r->fed_payload += t;
				if (t > r->fed_run)
					r->fed_run = t;
			}
		}
		/* From the source when there is one: the same octets, and
		 * not read back from memory the application may touch. */
		if (qp->lp.crc && pc->kind != UIW_MPA_P_CRC && !r->crc_whole)
			r->crc = uiw_crc32c_update(r->crc, src ? src + done : p,
						   t);
		cur_advance(r, &c, t);
		r->pi = c.pi;
		r->poff = c.poff;
		r->u = c.u;
		r->pos = c.pos;
		done += t;
		if (pc->kind == UIW_MPA_P_ULPDU && !r->hdr_done) {
			if (r->htarget == 0) {
				size_t hl = uiw_ddp_hdr_len(r->hdr[0]);

				r->htarget = (uint8_t)(r->ulen < hl ? r->ulen
								    : hl);
			}
			if (r->u == r->htarget) {
				validate_header(qp);
				/* rx_feed places the payload itself, now:
				 * the memory is held from here on, as
				 * rx_iov holds what it names. */
				if (r->feeding)
					rx_take_holds(qp);
			}
		}
		if (c.poff == 0 && c.pi > 0 && &r->pieces[c.pi - 1] == pc) {
			if (pc->kind == UIW_MPA_P_MARKER) {
				marker_check(qp, pc, c.pos - pc->len);
			} else if (pc->kind == UIW_MPA_P_CRC) {
				fpdu_end(qp, act);
				if (r->feeding)
					uiw_rx_release_holds(qp);
			}
		}
	}
	return done;
}

/* r->ulen is known: lays the FPDU out at r->fpdu_pos and starts its
 * body.  False when no FPDU of that length can lie there (the QP then
 * fails). */
static bool fpdu_lay(struct uiw_qp *qp, struct uiw_qp_act *act,
		     uint32_t *flen)
{
	struct uiw_rx *r = &qp->rx;

	r->npieces = uiw_mpa_layout(r->fpdu_pos, r->ulen, qp->lp.markers_rx,
				    r->pieces, r->pieces_max, flen);
	if (r->npieces == 0) {
		/* RFC 5044 §8 code 3: no FPDU of this length can lie here
		 * (its markers could not point back). */
		snprintf(r->why, sizeof(r->why), "ULPDU_Length %u cannot "
			 "delimit an FPDU at stream octet %llu", r->ulen,
			 (unsigned long long)r->fpdu_pos);
		r->have_rdmap = false;
		rx_fail(qp, UIW_E_MPA_MARKER, act);
		return false;
	}
	r->stage = UIW_RX_BODY;
	r->pi = 0;
	r->poff = 0;
	r->u = 0;
	if (r->ulen == 0)
		validate_header(qp);
	r->pos = r->fpdu_pos;
	return true;
}

/* [marker] ULPDU_Length and the two control octets are in (and maybe
 * some of the UIW_RX_SPEC octets after them): lay the FPDU out and
 * replay what arrived through the layout (markers, CRC, header). */
static void prelude_done(struct uiw_qp *qp, struct uiw_qp_act *act)
{
	struct uiw_rx *r = &qp->rx;

	while (!r->stopped && r->stage == UIW_RX_PRELUDE &&
	       r->start_got >= r->mk_lead + 4u) {
		uint32_t flen, got = r->start_got, used;

		r->ulen = (uint16_t)(r->start[r->mk_lead] << 8 |
				     r->start[r->mk_lead + 1]);
		if (!fpdu_lay(qp, act, &flen))
			return;
		used = body_consume(qp, r->start, got, act);
		if (used < got && !r->stopped && r->stage == UIW_RX_PRELUDE) {
			/* The FPDU ended inside what was named for it (only
			 * a short, invalid one can); the rest begins the
			 * next FPDU. */
			memmove(r->start, r->start + used, got - used);
			r->start_got = (uint8_t)(got - used);
		}
	}
}

/* prelude_direct, after the header, with all of the FPDU's rest (rest
 * octets) at src: payload, pad and CRC taken in one step each, the
 * payload in one copy when its place is one run (else 0: body_consume
 * walks it), then the FPDU ends as body_consume would end it. */
static size_t body_whole(struct uiw_qp *qp, const uint8_t *src,
			 uint32_t rest, struct uiw_qp_act *act)
{
	struct uiw_rx *r = &qp->rx;
	struct rx_cur c = { r->pi, r->poff, r->u, r->pos };
	uint32_t plen = r->ulen - r->hlen, pad = uiw_mpa_pad_len(r->ulen);
	uint32_t len = 0;
	uint8_t *p = NULL;

	if (r->stopped || r->stage != UIW_RX_BODY || r->pi != 1 ||
	    rest != plen + pad + UIW_MPA_CRC_LEN)
		return 0;
	if (plen && (rx_dest(qp, &c, &p, &len) == DEST_BARRIER || len < plen))
		return 0;
	if (plen) {
		memcpy(p, src, plen);
		if (r->feeding) {
			r->fed_payload += plen;
			if (plen > r->fed_run)
				r->fed_run = plen;
		}
	}
	memcpy(r->pad, src + plen, pad);
	memcpy(r->crcf, src + plen + pad, UIW_MPA_CRC_LEN);
	/* the CRC: prelude_direct took it over the whole FPDU (crc_whole) */
	r->u = r->ulen;
	r->pi = r->npieces;
	r->poff = 0;
	r->pos += rest;
	fpdu_end(qp, act);
	if (r->feeding)
		uiw_rx_release_holds(qp);
	return rest;
}

/* rx_feed, without markers, at an FPDU's first octet with its prelude at
 * hand: the FPDU is laid out from src (no copy to start[] and replay),
 * and when all of it is there its CRC is taken in one pass.  When the
 * DDP header is there too, ULPDU_Length and the header are taken in one
 * step (the walk of body_consume takes the length field, the control
 * octet and the rest of the header in three) and the header validated;
 * with the whole FPDU at hand, its rest too (body_whole).  Returns the
 * octets taken; body_consume goes on from there. */
static size_t prelude_direct(struct uiw_qp *qp, const uint8_t *src,
			     size_t n, struct uiw_qp_act *act)
{
	struct uiw_rx *r = &qp->rx;
	uint32_t flen, hl, take;

	r->ulen = (uint16_t)(src[0] << 8 | src[1]);
	if (!fpdu_lay(qp, act, &flen))
		return 0;
	if (qp->lp.crc && n >= flen) {
		r->crc = uiw_crc32c_update(r->crc, src,
					   flen - UIW_MPA_CRC_LEN);
		r->crc_whole = true;
	}
	/* pieces: [0] ULPDU_Length, [1] the ULPDU (no markers) */
	if (r->ulen == 0 || r->hdr_done)
		return 0;
	hl = (uint32_t)uiw_ddp_hdr_len(src[UIW_MPA_LEN_FIELD]);
	hl = r->ulen < hl ? r->ulen : hl;
	take = UIW_MPA_LEN_FIELD + hl;
	if (n < take)
		return 0;
	memcpy(r->lenf, src, UIW_MPA_LEN_FIELD);
	memcpy(r->hdr, src + UIW_MPA_LEN_FIELD, hl);
	if (qp->lp.crc && !r->crc_whole)
		r->crc = uiw_crc32c_update(r->crc, src, take);
	r->htarget = (uint8_t)hl;
	r->u = hl;
	r->pos += take;
	r->pi = hl == r->pieces[1].len ? 2 : 1;
	r->poff = r->pi == 2 ? 0 : hl;
	validate_header(qp);
	if (r->feeding)
		rx_take_holds(qp);
	if (n >= flen)
		take += body_whole(qp, src + take, flen - take, act);
	return take;
}

/* n octets of the stream: at src (rx_feed), or already where the last
 * rx_iov named (src NULL).  Returns the octets consumed (fewer when the
 * stream ends). */
static size_t rx_consume(struct uiw_qp *qp, const uint8_t *src, size_t n,
			 struct uiw_qp_act *act)
{
	struct uiw_rx *r = &qp->rx;
	size_t off = 0;

	while (off < n && !r->stopped) {
		if (r->stage == UIW_RX_PRELUDE && src && !qp->lp.markers_rx &&
		    r->start_got == 0 && n - off >= 4u + UIW_RX_SPEC) {
			off += prelude_direct(qp, src + off, n - off, act);
		} else if (r->stage == UIW_RX_PRELUDE) {
			/* The octets go to start[]; r->pos stays at the
			 * FPDU's start until they are replayed. */
			uint32_t room = r->mk_lead + 4u + UIW_RX_SPEC -
					r->start_got;
			uint32_t t = n - off < room ? (uint32_t)(n - off)
						    : room;

			if (src)
				memcpy(r->start + r->start_got, src + off, t);
			r->start_got = (uint8_t)(r->start_got + t);
			off += t;
			prelude_done(qp, act);
		} else {
			uint32_t chunk = n - off > UINT32_MAX ?
					 UINT32_MAX : (uint32_t)(n - off);

			off += body_consume(qp, src ? src + off : NULL, chunk,
					    act);
		}
	}
	return off;
}

/* The end of rx_done and rx_feed: the memory held for the LLP is
 * released (what was written has been read for the CRC), the QP lock
 * dropped, the actions run. */
static int rx_finish(struct uiw_qp *qp, struct uiw_qp_act *act)
{
	int ret = qp->rx.stopped ? -EPROTO : 0;

	uiw_rx_release_holds(qp);
	uiw_qp_close_check(qp, act);
	pthread_mutex_unlock(&qp->lock);
	/* The LLP transmits after receiving by itself. */
	act->kick = false;
	uiw_qp_act_run(qp, act);
	return ret;
}

int uiw_qp_rx_done(struct uiw_qp *qp, size_t n)
{
	struct uiw_qp_act act = { 0 };
	struct uiw_rx *r;

	if (!qp)
		return -EINVAL;
	r = &qp->rx;
	pthread_mutex_lock(&qp->lock);
	if (!rx_reading(qp)) {
		uiw_rx_release_holds(qp);
		r->handed = 0;
		pthread_mutex_unlock(&qp->lock);
		return -EPROTO;
	}
	if (n > r->handed) {
		UIW_DBG(1, "qp %u: rx_done for %zu octets, %zu were named",
			qp->qpn, n, r->handed);
		n = r->handed;
	}
	r->handed -= n;
	rx_consume(qp, NULL, n, &act);
	return rx_finish(qp, &act);
}

int uiw_qp_rx_feed(struct uiw_qp *qp, const void *buf, size_t len,
		   struct uiw_rx_fed *fed)
{
	struct uiw_qp_act act = { 0 };
	struct uiw_rx *r;

	if (fed) {
		fed->used = fed->payload = fed->max_run = 0;
		fed->tx = false;
	}
	if (!qp || !fed || (len && !buf))
		return -EINVAL;
	r = &qp->rx;
	pthread_mutex_lock(&qp->lock);
	/* What an rx_iov named is given back: those octets never came. */
	uiw_rx_release_holds(qp);
	r->handed = 0;
	if (!rx_reading(qp)) {
		/* A Terminate may wait to go. */
		fed->tx = true;
		pthread_mutex_unlock(&qp->lock);
		return -EPROTO;
	}
	r->feeding = true;
	r->fed_run = r->fed_payload = 0;
	/* Inside a payload (the last call ended there): its memory is
	 * checked and held again before more is written to it. */
	if (r->stage == UIW_RX_BODY)
		rx_take_holds(qp);
	fed->used = rx_consume(qp, buf, len, &act);
	r->feeding = false;
	fed->payload = r->fed_payload;
	fed->max_run = r->fed_run;
	fed->tx = uiw_tx_wanted(qp);
	return rx_finish(qp, &act);
}

/* ---- Delivery ------------------------------------------------------------ */

static void read_request(struct uiw_qp *qp, struct uiw_qp_act *act)
{
	struct uiw_rx *r = &qp->rx;
	struct uiw_mr_entry *hold = NULL;
	struct uiw_irq_ent *e;
	struct uiw_read_req rr;

	uiw_read_req_decode(r->rreq, &rr);
	r->have_rdmap = true;
	/* RFC 5040 §7.2 (4a-e) and §5.2.1: a zero-length Read is not
	 * checked. */
	if (rr.size > 0) {
		enum uiw_mr_check c = uiw_mr_get(&qp->dev->mrt, rr.src_stag,
						 qp->pd, UIW_ACCESS_REMOTE_READ,
						 rr.src_to, rr.size, &hold);

		if (c != UIW_MRC_OK) {
			snprintf(r->why, sizeof(r->why), "RDMA Read of %u "
				 "octets from STag 0x%08x TO 0x%llx: %s",
				 rr.size, rr.src_stag,
				 (unsigned long long)rr.src_to,
				 uiw_mr_check_str(c));
			rx_fail(qp, rdmap_err(c), act);
			return;
		}
	}
	/* RFC 5040 §5.5 rule 17: the Response starts after the Request
	 * was delivered; it goes out in Request order (rule 20). */
	e = uiw_irq_at(qp, qp->irq_tail++);
	memset(e, 0, sizeof(*e));
	e->rr = rr;
	e->hold = hold;
	e->used = true;
	qp->irq_unbuilt++;
}

static void remote_terminate(struct uiw_qp *qp, struct uiw_qp_act *act)
{
	struct uiw_rx *r = &qp->rx;
	struct uiw_term t;
	uint32_t got = r->q2_got < UIW_TERM_MAX_LEN ? r->q2_got
						     : UIW_TERM_MAX_LEN;
	/* RFC 6581 §9: the setup Terminates come from the initiator of an
	 * enhanced connection, as its first message. */
	bool setup = qp->lp.setup_term && r->msn[0] == 1 && r->msn[1] == 1;
	uiw_err_t de = uiw_term_decode_ex(r->term, got,
					   setup ? 0 : UIW_TERM_NO_SETUP, &t);
	char detail[96];
	struct uiw_fail f = {
		.origin = UIW_TERM_REMOTE,
		.send_term = false,
		.rq_idx = -1,
		.status = -1,
		.detail = detail,
	};

	/* RFC 5040 §5.4: the peer ends the stream. */
	f.err = t.err ? t.err : UIW_E_RDMAP_OP_UNSPEC;
	snprintf(detail, sizeof(detail), "%u octets%s%s%s%s%s", got,
		 t.m ? ", M" : "", t.d ? ", D" : "", t.r ? ", R" : "",
		 t.siw_layout ? ", siw layout" : "",
		 de != UIW_OK || !t.err ? ", truncated" : "");
	f.sq_idx = uiw_qp_find_term_wr(qp, &t);
	uiw_qp_fail(qp, &f, act);
}

static void deliver(struct uiw_qp *qp, struct uiw_qp_act *act)
{
	struct uiw_rx *r = &qp->rx;
	const struct uiw_ddp_hdr *h = &r->h;

	/* An RTR is consumed there, never delivered (RFC 6581 §9.2). */
	if (qp->rtr.seg && uiw_rtr_rx_deliver(qp, act))
		return;
	if (h->tagged) {
		struct uiw_sq_slot *s;

		/* An RDMA Write is placed, not delivered (RFC 5040 §5.1). */
		if (h->opcode != UIW_OP_READ_RESP)
			return;
		s = uiw_sq_at(qp, (uint32_t)r->fail_sq);
		s->rd_got += r->plen;
		if (!h->last)
			return;
		if (s->rd_got != s->length) {
			snprintf(r->why, sizeof(r->why), "RDMA Read Response "
				 "of %u octets, the Read asked for %u",
				 s->rd_got, s->length);
			r->err = UIW_E_RDMAP_OP_UNSPEC;
			rx_fail(qp, r->err, act);
			return;
		}
		/* RFC 5040 §5.5 rule 19: the Read completes now. */
		s->read_done = true;
		qp->orq_head++;
		qp->orq_count--;
		uiw_qp_sq_check(qp, (uint32_t)r->fail_sq, act);
		return;
	}
	switch (h->qn) {
	case UIW_QN_SEND: {
		struct uiw_rq_slot *q = uiw_rq_at(qp, qp->rq_head);
		struct uiw_wc wc = { 0 };

		if (uiw_ext_deliver_q0(qp, act))    /* RFC 7306 */
			return;
		q->got += r->plen;
		if (!h->last)
			return;
		r->msn[0]++;
		wc.wr_id = q->wr_id;
		wc.status = UIW_WC_SUCCESS;
		wc.opcode = UIW_WC_RECV;
		/* RFC 5041 §5.4: the message length is MO + payload of the
		 * last segment. */
		wc.byte_len = q->got;
		if (h->opcode == UIW_OP_SEND_SE ||
		    h->opcode == UIW_OP_SEND_SE_INV)
			wc.flags |= UIW_WC_F_SOLICITED;
		if (h->opcode == UIW_OP_SEND_INV ||
		    h->opcode == UIW_OP_SEND_SE_INV) {
			/* RFC 5040 §5.3, §7.2 (4, 5): the STag must be
			 * valid and of this stream's PD. */
			enum uiw_mr_check c = uiw_mr_invalidate_remote(
				&qp->dev->mrt, h->rsvd_ulp, qp->pd);

			if (c != UIW_MRC_OK) {
				snprintf(r->why, sizeof(r->why), "Send with "
					 "Invalidate of STag 0x%08x: %s",
					 h->rsvd_ulp, uiw_mr_check_str(c));
				r->err = c == UIW_MRC_PD ||
					 c == UIW_MRC_SHARED ?
					 UIW_E_RDMAP_PROT_CANT_INV :
					 UIW_E_RDMAP_INVALID_STAG;
				rx_fail(qp, r->err, act);
				return;
			}
			wc.flags |= UIW_WC_F_WITH_INV;
			wc.invalidated_stag = h->rsvd_ulp;
		}
		qp->rq_head++;
		uiw_qp_post_cqe(qp, qp->rcq, &wc, act);
		return;
	}
	case UIW_QN_READ_REQ:
		if (uiw_ext_deliver_q1(qp, act))    /* RFC 7306 */
			return;
		r->q1_got += r->plen;
		if (!h->last)
			return;
		r->msn[1]++;
		if (r->q1_got != UIW_READ_REQ_LEN) {
			snprintf(r->why, sizeof(r->why), "RDMA Read Request "
				 "of %u octets", r->q1_got);
			r->q1_got = 0;
			r->err = UIW_E_RDMAP_OP_UNSPEC;
			rx_fail(qp, r->err, act);
			return;
		}
		r->q1_got = 0;
		read_request(qp, act);
		return;
	case UIW_QN_TERMINATE: {
		uint64_t end = (uint64_t)h->mo + r->plen;

		if (end > UIW_TERM_MAX_LEN)
			end = UIW_TERM_MAX_LEN;
		if (end > r->q2_got)
			r->q2_got = (uint32_t)end;
		if (h->last)
			remote_terminate(qp, act);
		return;
	}
	case UIW_QN_ATOMIC_RESP:
		uiw_ext_deliver_q3(qp, act);        /* RFC 7306 */
		return;
	default:
		return;
	}
}

/* ---- For atomic.c -------------------------------------------------------- */

void uiw_rx_refuse(struct uiw_qp *qp, uiw_err_t err, const char *why)
{
	refuse(qp, err, "%s", why);
}

void uiw_rx_fail(struct uiw_qp *qp, uiw_err_t err, struct uiw_qp_act *act)
{
	rx_fail(qp, err, act);
}
