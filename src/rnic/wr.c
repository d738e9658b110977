/*
 * The send work request table (wr.h) and the handlers of the opcodes
 * of RFC 5040: Send, Send with Invalidate (§5.3), RDMA Write (§5.1),
 * RDMA Read (§5.2) and local invalidate.  RFC 7306's are in atomic.c.
 */
#include "wr.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "dev.h"
#include "qp.h"
#include "../rt/log.h"

/* ---- Starting ------------------------------------------------------------ */

int uiw_wr_start_source(struct uiw_qp *qp, uint32_t ctr,
			struct uiw_qp_act *act)
{
	struct uiw_sq_slot *s = uiw_sq_at(qp, ctr);
	char why[96];
	uint32_t i;

	if (s->inl)
		return UIW_WR_STARTED;
	for (i = 0; i < s->num_sge; i++) {
		const struct uiw_sge *g = &s->sge[i];
		enum uiw_mr_check c;

		s->hold[i] = NULL;
		if (!g->length)
			continue;
		c = uiw_mr_get(&qp->dev->mrt, g->lkey, qp->pd, 0, g->addr,
			       g->length, &s->hold[i]);
		s->holding = true;
		if (c != UIW_MRC_OK) {
			snprintf(why, sizeof(why), "SGE %u (lkey 0x%08x): %s",
				 i, g->lkey, uiw_mr_check_str(c));
			return uiw_wr_fail(qp, ctr, UIW_WC_LOC_PROT_ERR, why,
					   act);
		}
	}
	return UIW_WR_STARTED;
}

int uiw_wr_start_ord(struct uiw_qp *qp, uint32_t ctr, struct uiw_qp_act *act)
{
	const struct uiw_wr_row *w = uiw_sq_at(qp, ctr)->row;
	char why[64];

	if (qp->lp.ord == 0) {
		snprintf(why, sizeof(why), "%s with ORD 0", w->name);
		return uiw_wr_fail(qp, ctr, UIW_WC_LOC_QP_OP_ERR, why, act);
	}
	/* RFC 5040 §6.1: never more than ORD outstanding (a Read RTR
	 * awaiting its Response is one of them). */
	if (qp->orq_count + qp->rtr.rd_out + qp->ext.aoq_count >= qp->lp.ord)
		return UIW_WR_STALL;
	return UIW_WR_STARTED;
}

static int local_inv_start(struct uiw_qp *qp, uint32_t ctr,
			   struct uiw_qp_act *act)
{
	struct uiw_sq_slot *s = uiw_sq_at(qp, ctr);
	enum uiw_mr_check c = uiw_mr_invalidate(&qp->dev->mrt, s->inv_stag,
						qp->pd);
	char why[96];

	if (c != UIW_MRC_OK) {
		snprintf(why, sizeof(why), "local invalidate of STag 0x%08x: "
			 "%s", s->inv_stag, uiw_mr_check_str(c));
		return uiw_wr_fail(qp, ctr, UIW_WC_LOC_PROT_ERR, why, act);
	}
	qp->sq_next++;
	s->state = UIW_SQ_BUILT;
	uiw_qp_sq_check(qp, ctr, act);
	return UIW_WR_NOSEG;
}

/* ---- Posting ------------------------------------------------------------- */

static int read_check(struct uiw_qp *qp, const struct uiw_send_wr *wr)
{
	if (wr->num_sge > 1)
		return uiw_error(EINVAL, "qp %u: an RDMA Read takes one SGE "
				 "(the sink), not %d", qp->qpn, wr->num_sge);
	if (wr->send_flags & UIW_SEND_INLINE)
		return uiw_error(EINVAL, "qp %u: an RDMA Read cannot be "
				 "inline", qp->qpn);
	if (qp->state == UIW_QPS_RTS && qp->lp.ord == 0)
		return uiw_error(EINVAL, "qp %u: RDMA Read with ORD 0 (the "
				 "connection allows no outbound Reads)",
				 qp->qpn);
	return 0;
}

/* ---- Building ------------------------------------------------------------ */

void uiw_wr_built(struct uiw_qp *qp, struct uiw_sq_slot *s)
{
	s->state = UIW_SQ_BUILT;
	qp->msg.kind = UIW_MSG_NONE;
}

/* Hands out segment g with the next p payload octets of the message
 * (the slot's pieces from the message's cursor on). */
static void sq_commit(struct uiw_qp *qp, struct uiw_tx_seg *g,
		      struct uiw_sq_slot *s, uint32_t p)
{
	struct uiw_tx_msg *m = &qp->msg;
	uint32_t si = m->src_i, so = m->src_off;

	uiw_tx_src_advance(s->src, &m->src_i, &m->src_off, p);
	m->off += p;
	uiw_tx_seg_commit(qp, g, p, s->src, si, so);
}

/* RFC 5040 §5.3: untagged, queue 0, MO advancing; a Send with
 * Invalidate carries the STag to invalidate in its RDMAP header (§4.3,
 * the DDP header's RsvdULP field). */
static void send_build(struct uiw_qp *qp, const struct uiw_wr_row *w,
		       struct uiw_sq_slot *s)
{
	struct uiw_tx_msg *m = &qp->msg;
	uint8_t op = uiw_wr_op(w, 0, s);
	struct uiw_tx_seg *g;
	bool last;
	uint32_t p = uiw_tx_msg_cut(qp, UIW_DDP_UNTAGGED_HDR_LEN, &last);

	s->msn = qp->tx_msn[w->msn_qn];
	g = uiw_tx_seg_untagged(qp, UIW_SEG_SQ, m->idx, op, last, w->msn_qn,
				s->msn, m->off,
				op == UIW_OP_SEND_INV || op == UIW_OP_SEND_SE_INV ?
				s->inv_stag : 0);
	sq_commit(qp, g, s, p);
	if (last) {
		qp->tx_msn[w->msn_qn]++;
		uiw_wr_built(qp, s);
	}
}

bool uiw_wr_write_seg(struct uiw_qp *qp, const struct uiw_wr_row *w,
		      struct uiw_sq_slot *s)
{
	struct uiw_tx_msg *m = &qp->msg;
	struct uiw_tx_seg *g;
	bool last;
	uint32_t p = uiw_tx_msg_cut(qp, UIW_DDP_TAGGED_HDR_LEN, &last);

	g = uiw_tx_seg_tagged(qp, UIW_SEG_SQ, m->idx, uiw_wr_op(w, 0, s),
			      last, s->rkey, s->raddr + m->off);
	sq_commit(qp, g, s, p);
	return last;
}

static void write_build(struct uiw_qp *qp, const struct uiw_wr_row *w,
			struct uiw_sq_slot *s)
{
	if (uiw_wr_write_seg(qp, w, s))
		uiw_wr_built(qp, s);
}

/* RFC 5040 §4.4, §5.2.1: a Read Request, queue 1, one segment; the
 * Read then waits in the ORD queue for its Response. */
static void read_build(struct uiw_qp *qp, const struct uiw_wr_row *w,
		       struct uiw_sq_slot *s)
{
	struct uiw_read_req rr = {
		.sink_stag = s->num_sge ? s->sge[0].lkey : 0,
		.sink_to = s->num_sge ? s->sge[0].addr : 0,
		.size = s->length,
		.src_stag = s->rkey,
		.src_to = s->raddr,
	};
	struct uiw_tx_seg *g;
	size_t room;

	s->msn = qp->tx_msn[w->msn_qn]++;
	g = uiw_tx_seg_untagged(qp, UIW_SEG_SQ, qp->msg.idx,
				uiw_wr_op(w, 0, s), true, w->msn_qn, s->msn,
				0, 0);
	uiw_read_req_encode(uiw_tx_seg_tail(g, &room), &rr);
	uiw_tx_seg_keep(g, UIW_READ_REQ_LEN);
	qp->orq[(qp->orq_head + qp->orq_count) % qp->orq_cap] = qp->msg.idx;
	qp->orq_count++;
	uiw_wr_built(qp, s);
	uiw_tx_seg_commit(qp, g, 0, NULL, 0, 0);
}

/* ---- The table ----------------------------------------------------------- */

#define NO_OP { UIW_WR_NO_OP, UIW_WR_NO_OP }
/* RFC 7306 §5: FetchAdd and CmpSwap differ only in their request's
 * AOpCode (uiw_wr_atomic_fill) and their completion. */
#define ATOMIC_ROW(wc) {                                                \
		.name = "atomic",                                       \
		.op = { { UIW_OP_ATOMIC_REQ, UIW_OP_ATOMIC_REQ }, NO_OP }, \
		.msn_qn = UIW_QN_READ_REQ,                              \
		.ord = true,                                            \
		.masked_ok = true,                                      \
		.sgl = UIW_WR_SGL_SINK,                                 \
		.wc_opcode = (wc),                                      \
		.post_check = uiw_wr_atomic_check,                      \
		.post_fill = uiw_wr_atomic_fill,                        \
		.start = uiw_wr_start_ord,                              \
		.build = uiw_wr_atomic_build,                           \
	}

static const struct uiw_wr_row rows[] = {
	[UIW_WR_SEND] = {
		.name = "Send",
		.op = { { UIW_OP_SEND, UIW_OP_SEND_SE }, NO_OP },
		.msn_qn = UIW_QN_SEND,
		.sgl = UIW_WR_SGL_SOURCE,
		.wc_opcode = UIW_WC_SEND,
		.start = uiw_wr_start_source,
		.build = send_build,
	},
	[UIW_WR_SEND_WITH_INV] = {
		.name = "Send with Invalidate",
		.op = { { UIW_OP_SEND_INV, UIW_OP_SEND_SE_INV }, NO_OP },
		.msn_qn = UIW_QN_SEND,
		.sgl = UIW_WR_SGL_SOURCE,
		.wc_opcode = UIW_WC_SEND,
		.start = uiw_wr_start_source,
		.build = send_build,
	},
	[UIW_WR_RDMA_WRITE] = {
		.name = "RDMA Write",
		.op = { { UIW_OP_WRITE, UIW_OP_WRITE }, NO_OP },
		.tagged = true,
		.msn_qn = UIW_WR_NO_QN,
		.sgl = UIW_WR_SGL_SOURCE,
		.wc_opcode = UIW_WC_RDMA_WRITE,
		.start = uiw_wr_start_source,
		.build = write_build,
	},
	[UIW_WR_RDMA_READ] = {
		.name = "RDMA Read",
		.op = { { UIW_OP_READ_REQ, UIW_OP_READ_REQ }, NO_OP },
		.msn_qn = UIW_QN_READ_REQ,
		.ord = true,
		.read_sink = true,
		.sgl = UIW_WR_SGL_SINK,
		.wc_opcode = UIW_WC_RDMA_READ,
		.post_check = read_check,
		.start = uiw_wr_start_ord,
		.build = read_build,
	},
	[UIW_WR_LOCAL_INV] = {
		.name = "local invalidate",
		.op = { NO_OP, NO_OP },
		.msn_qn = UIW_WR_NO_QN,
		.sgl = UIW_WR_SGL_NONE,
		.wc_opcode = UIW_WC_LOCAL_INV,
		.start = local_inv_start,
	},
	/* RFC 7306 (uiwarp.h): Write with Immediate completes as a Write,
	 * Immediate Data as a Send. */
	[UIW_WR_RDMA_WRITE_WITH_IMM] = {
		.name = "RDMA Write with Immediate",
		.op = { { UIW_OP_WRITE, UIW_OP_WRITE },
			{ UIW_OP_IMM, UIW_OP_IMM_SE } },
		.tagged = true,
		.msn_qn = UIW_QN_SEND,        /* its Immediate Data's */
		.sgl = UIW_WR_SGL_SOURCE,
		.wc_opcode = UIW_WC_RDMA_WRITE,
		.start = uiw_wr_start_source,
		.build = uiw_wr_write_imm_build,
	},
	[UIW_WR_IMMEDIATE] = {
		.name = "Immediate Data",
		.op = { { UIW_OP_IMM, UIW_OP_IMM_SE }, NO_OP },
		.msn_qn = UIW_QN_SEND,
		.sgl = UIW_WR_SGL_SOURCE,
		.wc_opcode = UIW_WC_SEND,
		.post_check = uiw_wr_imm_check,
		.start = uiw_wr_start_source,
		.build = uiw_wr_imm_build,
	},
	[UIW_WR_ATOMIC_FETCH_ADD] = ATOMIC_ROW(UIW_WC_FETCH_ADD),
	[UIW_WR_ATOMIC_CMP_SWP] = ATOMIC_ROW(UIW_WC_CMP_SWP),
};

const struct uiw_wr_row *uiw_wr_row(int opcode)
{
	if (opcode < 0 || (size_t)opcode >= sizeof(rows) / sizeof(rows[0]) ||
	    !rows[opcode].name)
		return NULL;
	return &rows[opcode];
}

uint8_t uiw_wr_op(const struct uiw_wr_row *w, unsigned k,
		  const struct uiw_sq_slot *s)
{
	return w->op[k][s->solicited ? 1 : 0];
}
