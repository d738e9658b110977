/*
 * Receive: DDP segments from the framing (framing.h) are validated,
 * placed and delivered (RFC 5041 §5, §7; RFC 5040 §5, §7; RFC 7306).
 *
 * A segment comes in three steps inside a receive turn: its header
 * (uiw_qp_rx_begin), its payload (uiw_qp_rx_place names where octets go,
 * uiw_qp_rx_put copies octets the framing holds), its end
 * (uiw_qp_rx_end, with the framing's verdict).  The header is decoded
 * and looked up in rdmap_rows[], one row per RDMAP opcode: the row says
 * how the segment must be carried (tagged, or on which queue), what
 * access right its target needs, how its placement is validated and
 * planned, and how its message is delivered.  Payload goes straight to
 * its place: the region of a tagged segment (RFC 5041 §5.1.1), the
 * posted receive buffer at MO (queue 0), engine scratch for the fixed
 * messages of queues 1 to 3 (Read and Atomic Requests, Terminate, Atomic
 * Responses).  A refused segment is placed nowhere: its payload goes to
 * a discard scratch and the error is reported at its end, after the
 * framing's own checks (the framing's error wins: the header may simply
 * be damaged), as one Terminate.
 *
 * Bounds (framing.h): with the segment's length known at its header,
 * every check runs there; without it, the header's own checks run there
 * and each placement is checked against what is left of the region or
 * buffer, then the length checks run again at the end.
 *
 * Order: with an ordered framing MSN and MO must be the next expected
 * (RFC 5041 §7.1).  With an unordered one, queue 0 messages land in the
 * receive buffer their MSN selects and are delivered in MSN order once
 * complete; tagged segments are placed by TO, and a Read completes when
 * all of its Response octets are placed; the fixed messages of queues 1
 * to 3 take their segments in any order but their messages one at a
 * time, in MSN order.
 */
#include "qp.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "dev.h"
#include "srq.h"
#include "../rt/log.h"

/* ---- The rows ------------------------------------------------------------ */

/* How a segment's payload is placed. */
enum {
	PL_NONE = 0,        /* no payload (or not yet planned) */
	PL_DISCARD,         /* refused: scratch, then the error */
	PL_MEM,             /* tagged: registered memory at mem */
	PL_SGL,             /* queue 0: the receive buffer's SGL at sgl_mo */
	PL_SCRATCH,         /* queues 1-3, Immediate Data: engine scratch */
};

struct rdmap_row {
	const char *name;
	bool tagged;                /* carried in tagged segments */
	uint8_t qn;                 /* untagged: its queue */
	uint8_t cls;                /* queue 0/1: the message class (segments
				       of one message keep their class) */
	uint16_t fixed;             /* its message length, 0: any */
	unsigned access;            /* the right its target region needs */
	bool se, inv;               /* Solicited Event; Send with Invalidate */
	void (*validate)(struct uiw_qp *qp);
	void (*deliver)(struct uiw_qp *qp, struct uiw_qp_act *act);
};

static void v_write(struct uiw_qp *qp);
static void v_read_resp(struct uiw_qp *qp);
static void v_q0(struct uiw_qp *qp);
static void v_q1(struct uiw_qp *qp);
static void v_term(struct uiw_qp *qp);
static void v_atomic_resp(struct uiw_qp *qp);
static void d_none(struct uiw_qp *qp, struct uiw_qp_act *act);
static void d_read_resp(struct uiw_qp *qp, struct uiw_qp_act *act);
static void d_q0(struct uiw_qp *qp, struct uiw_qp_act *act);
static void d_q1(struct uiw_qp *qp, struct uiw_qp_act *act);
static void d_term(struct uiw_qp *qp, struct uiw_qp_act *act);
static void d_atomic_resp(struct uiw_qp *qp, struct uiw_qp_act *act);

enum { CLS_NONE = 0, CLS_SEND, CLS_IMM, CLS_READ, CLS_ATOMIC };

/* RFC 5040 §4.2 Figure 5 (and Figure 4), RFC 7306 §4.1 Figure 2. */
static const struct rdmap_row rdmap_rows[16] = {
	[UIW_OP_WRITE] = {
		"RDMA Write", true, 0, CLS_NONE, 0,
		UIW_ACCESS_REMOTE_WRITE, false, false, v_write, d_none },
	[UIW_OP_READ_REQ] = {
		"RDMA Read Request", false, UIW_QN_READ_REQ, CLS_READ,
		UIW_READ_REQ_LEN, UIW_ACCESS_REMOTE_READ, false, false,
		v_q1, d_q1 },
	[UIW_OP_READ_RESP] = {
		"RDMA Read Response", true, 0, CLS_NONE, 0,
		UIW_ACCESS_LOCAL_WRITE, false, false, v_read_resp,
		d_read_resp },
	[UIW_OP_SEND] = {
		"Send", false, UIW_QN_SEND, CLS_SEND, 0,
		UIW_ACCESS_LOCAL_WRITE, false, false, v_q0, d_q0 },
	[UIW_OP_SEND_INV] = {
		"Send with Invalidate", false, UIW_QN_SEND, CLS_SEND, 0,
		UIW_ACCESS_LOCAL_WRITE, false, true, v_q0, d_q0 },
	[UIW_OP_SEND_SE] = {
		"Send with SE", false, UIW_QN_SEND, CLS_SEND, 0,
		UIW_ACCESS_LOCAL_WRITE, true, false, v_q0, d_q0 },
	[UIW_OP_SEND_SE_INV] = {
		"Send with SE and Invalidate", false, UIW_QN_SEND, CLS_SEND,
		0, UIW_ACCESS_LOCAL_WRITE, true, true, v_q0, d_q0 },
	[UIW_OP_TERMINATE] = {
		"Terminate", false, UIW_QN_TERMINATE, CLS_NONE, 0, 0, false,
		false, v_term, d_term },
	[UIW_OP_IMM] = {
		"Immediate Data", false, UIW_QN_SEND, CLS_IMM,
		UIW_IMM_DATA_LEN, 0, false, false, v_q0, d_q0 },
	[UIW_OP_IMM_SE] = {
		"Immediate Data with SE", false, UIW_QN_SEND, CLS_IMM,
		UIW_IMM_DATA_LEN, 0, true, false, v_q0, d_q0 },
	[UIW_OP_ATOMIC_REQ] = {
		"Atomic Request", false, UIW_QN_READ_REQ, CLS_ATOMIC,
		UIW_ATOMIC_REQ_LEN, UIW_ACCESS_REMOTE_ATOMIC, false, false,
		v_q1, d_q1 },
	[UIW_OP_ATOMIC_RESP] = {
		"Atomic Response", false, UIW_QN_ATOMIC_RESP, CLS_NONE,
		UIW_ATOMIC_RESP_LEN, UIW_ACCESS_LOCAL_WRITE, false, false,
		v_atomic_resp, d_atomic_resp },
};

const char *uiw_rdmap_op_name(uint8_t opcode)
{
	return opcode < 16 && rdmap_rows[opcode].name ?
	       rdmap_rows[opcode].name : "message";
}

uint32_t uiw_seg_hdr_len(uint8_t c)
{
	return (uint32_t)uiw_ddp_hdr_len(c);
}

/* ---- State --------------------------------------------------------------- */

static bool known(uint32_t v)
{
	return v != UIW_SEG_LEN_UNKNOWN;
}

static void seg_clear(struct uiw_rx *r)
{
	r->in_seg = false;
	r->len = r->plen = UIW_SEG_LEN_UNKNOWN;
	r->hlen = 0;
	memset(&r->h, 0, sizeof(r->h));
	r->row = NULL;
	r->err = UIW_OK;
	r->loc_status = -1;
	r->have_rdmap = false;
	r->why[0] = 0;
	r->plan = PL_NONE;
	r->mem = NULL;
	r->lim = 0;
	r->lazy = false;
	r->fail_sq = r->fail_rq = -1;
	r->rq_ctr = 0;
	r->held_mem = false;
}

void uiw_rx_release_holds(struct uiw_qp *qp)
{
	struct uiw_rx *r = &qp->rx;
	unsigned i;

	for (i = 0; i < r->nholds; i++)
		uiw_mr_put(&qp->dev->mrt, r->holds[i]);
	r->nholds = 0;
	r->held_rq = -1;
	r->held_mem = false;
}

void uiw_rx_reset(struct uiw_qp *qp)
{
	struct uiw_rx *r = &qp->rx;
	int i;

	uiw_rx_release_holds(qp);
	r->stopped = false;
	memset(r->msg_got, 0, sizeof(r->msg_got));
	memset(r->last_msg, 0, sizeof(r->last_msg));
	/* RFC 5041 §4.3: the initial MSN of each queue is one. */
	for (i = 0; i < UIW_RX_QUEUES; i++) {
		r->msn[i] = 1;
		memset(&r->q[i], 0, offsetof(struct uiw_rx_q, buf));
	}
	r->hdr[0] = 0;
	seg_clear(r);
}

bool uiw_rx_mid_seg(const struct uiw_qp *qp)
{
	return qp->rx.in_seg;
}

/* ---- Errors -------------------------------------------------------------- */

/* Refuses the current segment: nothing more of it is placed; the error
 * is reported when the segment ends.  The first error stands. */
void uiw_rx_refuse(struct uiw_qp *qp, uiw_err_t err, const char *fmt, ...)
{
	struct uiw_rx *r = &qp->rx;
	va_list ap;

	if (r->err == UIW_OK) {
		r->err = err;
		va_start(ap, fmt);
		vsnprintf(r->why, sizeof(r->why), fmt, ap);
		va_end(ap);
	}
	r->plan = PL_DISCARD;
}

/* The stream ends for err (a refused segment, or an error found when a
 * message is delivered): one Terminate that copies the segment's
 * headers (RFC 5040 §7.1). */
void uiw_rx_fail(struct uiw_qp *qp, uiw_err_t err, struct uiw_qp_act *act)
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

/* An error found at delivery, after every octet was validated. */
void uiw_rx_fail_msg(struct uiw_qp *qp, uiw_err_t err, int status,
		     struct uiw_qp_act *act, const char *fmt, ...)
{
	struct uiw_rx *r = &qp->rx;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r->why, sizeof(r->why), fmt, ap);
	va_end(ap);
	r->err = err;
	r->loc_status = status;
	uiw_rx_fail(qp, err, act);
}

/* ---- Validation: tagged -------------------------------------------------- */

/* Plans placement into [to, to + plen) of a region: checked now when
 * the length is known, else at each placement (lazy). */
static void plan_mem(struct uiw_qp *qp, uint32_t stag, uint64_t to,
		     uint64_t lim)
{
	struct uiw_rx *r = &qp->rx;
	const struct rdmap_row *row = r->row;

	if (known(r->plen)) {
		enum uiw_mr_check c = uiw_mr_check(&qp->dev->mrt, stag, qp->pd,
						   row->access, to, r->plen);

		if (c != UIW_MRC_OK) {
			uiw_rx_refuse(qp, uiw_mr_check_err(c, UIW_MRE_DDP),
				      "%s to STag 0x%08x TO 0x%llx, %u octets:"
				      " %s", row->name, stag,
				      (unsigned long long)to, r->plen,
				      uiw_mr_check_str(c));
			return;
		}
	}
	r->plan = PL_MEM;
	r->mem = (uint8_t *)(uintptr_t)to;
	r->lim = lim > UINT32_MAX ? UINT32_MAX : (uint32_t)lim;
	r->lazy = !known(r->plen);
	r->mr_stag = stag;
}

static void v_write(struct uiw_qp *qp)
{
	struct uiw_rx *r = &qp->rx;

	/* RFC 5041 §5.2: the STag and TO of a zero-length tagged segment
	 * MUST NOT be checked. */
	if (r->plen == 0)
		return;
	plan_mem(qp, r->h.stag, r->h.to, known(r->plen) ? r->plen :
		 UINT32_MAX);
}

/* The outstanding Read a Response segment belongs to (RFC 5040 §5.5
 * rule 20: Responses come in Request order): the oldest with an ordered
 * framing; with an unordered one the oldest not complete whose sink
 * holds the segment's TO.  -1 when none. */
static int64_t read_for(struct uiw_qp *qp)
{
	const struct uiw_ddp_hdr *h = &qp->rx.h;
	uint32_t i;

	if (!qp->lp.unordered)
		return qp->orq[qp->orq_head % qp->orq_cap];
	for (i = 0; i < qp->orq_count; i++) {
		uint32_t ctr = qp->orq[(qp->orq_head + i) % qp->orq_cap];
		struct uiw_sq_slot *s = uiw_sq_at(qp, ctr);
		uint64_t base = s->num_sge ? s->sge[0].addr : 0;

		if (s->read_done || !s->num_sge || s->sge[0].lkey != h->stag)
			continue;
		if (h->to >= base && h->to - base <= s->length)
			return ctr;
	}
	return qp->orq[qp->orq_head % qp->orq_cap];
}

static void v_read_resp(struct uiw_qp *qp)
{
	struct uiw_rx *r = &qp->rx;
	const struct uiw_ddp_hdr *h = &r->h;
	struct uiw_sq_slot *s;
	uint32_t ctr, sink, room;
	uint64_t base, to;

	if (qp->orq_count == 0) {
		uiw_rx_refuse(qp, UIW_E_RDMAP_UNEXPECTED_OPCODE, "RDMA Read "
			      "Response with no RDMA Read outstanding");
		return;
	}
	ctr = (uint32_t)read_for(qp);
	s = uiw_sq_at(qp, ctr);
	r->fail_sq = ctr;
	if (r->plen == 0)
		return;
	sink = s->num_sge ? s->sge[0].lkey : 0;
	base = s->num_sge ? s->sge[0].addr : 0;
	if (h->stag != sink) {
		uiw_rx_refuse(qp, UIW_E_DDP_T_INVALID_STAG, "RDMA Read "
			      "Response to STag 0x%08x, the Read's sink is "
			      "0x%08x", h->stag, sink);
		return;
	}
	/* In order, the next octet of the sink; out of order, anywhere in
	 * it, and never beyond (RFC 5041 §7.2). */
	to = qp->lp.unordered ? h->to : base + s->rd_got;
	room = h->to >= base && h->to - base <= s->length ?
	       s->length - (uint32_t)(h->to - base) : 0;
	if (h->to != to || (known(r->plen) && r->plen > room)) {
		uiw_rx_refuse(qp, UIW_E_DDP_T_BASE_BOUNDS, "RDMA Read Response"
			      " at TO 0x%llx, %u octets; the Read expects TO "
			      "0x%llx, %u more octets",
			      (unsigned long long)h->to, r->plen,
			      (unsigned long long)to, s->length - s->rd_got);
		return;
	}
	plan_mem(qp, h->stag, h->to, room);
}

/* ---- Validation: untagged ------------------------------------------------ */

/* The checks every untagged message of a queue with one message at a
 * time shares (RFC 5041 §7.1): the MSN, the message's class, MO and
 * length against the row's fixed size; then the plan into the queue's
 * scratch. */
static bool q_check(struct uiw_qp *qp, struct uiw_rx_q *q, uint32_t cap)
{
	struct uiw_rx *r = &qp->rx;
	const struct uiw_ddp_hdr *h = &r->h;
	const struct rdmap_row *row = r->row;
	uint32_t qn = h->qn;

	if (h->msn != r->msn[qn]) {
		uiw_rx_refuse(qp, UIW_E_DDP_U_MSN_RANGE, "queue %u MSN %u, "
			      "expected %u", qn, h->msn, r->msn[qn]);
		return false;
	}
	if (q->seen && q->cls != row->cls) {
		uiw_rx_refuse(qp, UIW_E_RDMAP_UNEXPECTED_OPCODE, "%s in the "
			      "middle of %s MSN %u", row->name,
			      uiw_rdmap_op_name(q->op), h->msn);
		return false;
	}
	if (qp->lp.unordered ? h->mo > cap : h->mo != q->got) {
		uiw_rx_refuse(qp, UIW_E_DDP_U_INVALID_MO, "queue %u MSN %u MO "
			      "%u, expected %u", qn, h->msn, h->mo, q->got);
		return false;
	}
	if (known(r->plen) && r->plen > cap - h->mo) {
		uiw_rx_refuse(qp, UIW_E_DDP_U_TOO_LONG, "%s MSN %u of at least "
			      "%llu octets, not %u", row->name, h->msn,
			      (unsigned long long)h->mo + r->plen, cap);
		return false;
	}
	return true;
}

static void plan_scratch(struct uiw_rx *r, uint8_t *buf, uint32_t cap)
{
	uint32_t mo = r->h.mo;

	r->plan = PL_SCRATCH;
	r->mem = buf + (mo < cap ? mo : cap);
	r->lim = mo < cap ? cap - mo : 0;
}

/* The receive buffer a queue 0 segment goes to (its counter), or -1:
 * in order the oldest; out of order the one its MSN selects.  With an
 * SRQ the buffers up to that one are taken from it now (srq.h). */
static int64_t rq_for(struct uiw_qp *qp)
{
	struct uiw_rx *r = &qp->rx;
	uint32_t d = r->h.msn - r->msn[0];
	uint32_t have = qp->rq.tail - qp->rq.head;

	if (d >= have && (!qp->srq || !uiw_srq_take(qp, d + 1 - have)))
		return -1;
	return (int64_t)(qp->rq.head + d);
}

/* Queue 0: Sends (RFC 5040 §5.3) and Immediate Data (RFC 7306 §6). */
static void v_q0(struct uiw_qp *qp)
{
	struct uiw_rx *r = &qp->rx;
	const struct uiw_ddp_hdr *h = &r->h;
	const struct rdmap_row *row = r->row;
	struct uiw_rq_slot *q;
	uint32_t d = h->msn - r->msn[0], cap;
	int64_t ctr;

	/* RFC 5041 §7.1: the MSN is the next one, or (out of order) within
	 * the receive buffers posted. */
	if (qp->lp.unordered ? d >= (1u << 31) : d != 0) {
		uiw_rx_refuse(qp, UIW_E_DDP_U_MSN_RANGE, "queue 0 MSN %u, "
			      "expected %u", h->msn, r->msn[0]);
		return;
	}
	ctr = rq_for(qp);
	if (ctr < 0) {
		uiw_rx_refuse(qp, UIW_E_DDP_U_MSN_NO_BUF, "no receive buffer "
			      "posted for %s MSN %u", row->name, h->msn);
		return;
	}
	q = uiw_rq_at(qp, (uint32_t)ctr);
	r->fail_rq = ctr;
	r->rq_ctr = (uint32_t)ctr;
	/* RFC 5040 §7.2, RFC 7306 §8.2: every segment of a message has its
	 * opcode's class. */
	if (q->cls && q->cls != row->cls) {
		uiw_rx_refuse(qp, UIW_E_RDMAP_UNEXPECTED_OPCODE, "%s in the "
			      "middle of %s MSN %u", row->name,
			      q->cls == CLS_IMM ? "Immediate Data" : "Send",
			      h->msn);
		return;
	}
	/* §6.3: Immediate Data is exactly 8 octets, kept in the slot. */
	cap = row->fixed ? row->fixed : q->length;
	if (qp->lp.unordered ? h->mo > cap : (h->mo > cap || h->mo != q->got)) {
		uiw_rx_refuse(qp, UIW_E_DDP_U_INVALID_MO, "MSN %u MO %u, "
			      "expected MO %u (buffer of %u octets)", h->msn,
			      h->mo, q->got, cap);
		return;
	}
	if (known(r->plen) && r->plen > cap - h->mo) {
		uiw_rx_refuse(qp, UIW_E_DDP_U_TOO_LONG, "%s MSN %u of at least "
			      "%llu octets, room for %u", row->name, h->msn,
			      (unsigned long long)h->mo + r->plen, cap);
		return;
	}
	if (r->plen == 0)
		return;
	if (row->cls == CLS_IMM) {
		plan_scratch(r, q->imm, UIW_IMM_DATA_LEN);
		return;
	}
	r->plan = PL_SGL;
	r->sgl_mo = h->mo;
	r->lim = cap - h->mo;
}

/* Queue 1: RDMA Read Requests (RFC 5040 §5.2.1) and Atomic Requests
 * (RFC 7306 §5.2.1), IRD buffers shared (§5.2.2 rule 4). */
static void v_q1(struct uiw_qp *qp)
{
	struct uiw_rx *r = &qp->rx;
	struct uiw_rx_q *q = &r->q[UIW_QN_READ_REQ];
	const struct rdmap_row *row = r->row;

	if (!q->seen && r->h.msn == r->msn[1] &&
	    (qp->irq_unbuilt >= qp->lp.ird ||
	     qp->irq_tail - qp->irq_head >= qp->irq_cap)) {
		/* RFC 5040 §6.1: at most IRD inbound Reads; one more
		 * Request finds no buffer on queue 1. */
		uiw_rx_refuse(qp, UIW_E_DDP_U_MSN_NO_BUF, "%s MSN %u beyond "
			      "IRD %u", row->name, r->h.msn, qp->lp.ird);
		return;
	}
	if (q_check(qp, q, row->fixed))
		plan_scratch(r, q->buf, row->fixed);
}

static void v_term(struct uiw_qp *qp)
{
	/* A Terminate is taken as it comes (never answered with one);
	 * what does not fit the largest one is dropped. */
	plan_scratch(&qp->rx, qp->rx.q[UIW_QN_TERMINATE].buf,
		     UIW_TERM_MAX_LEN);
}

/* Queue 3: Atomic Responses (RFC 7306 §5.2.2). */
static void v_atomic_resp(struct uiw_qp *qp)
{
	struct uiw_rx *r = &qp->rx;
	struct uiw_rx_q *q = &r->q[UIW_QN_ATOMIC_RESP];
	struct uiw_qp_ext *x = &qp->ext;

	/* §5.2.2 rule 8: one queue-3 MSN each, in Request order. */
	if (r->h.msn != r->msn[3]) {
		uiw_rx_refuse(qp, UIW_E_DDP_U_MSN_RANGE, "queue 3 MSN %u, "
			      "expected %u", r->h.msn, r->msn[3]);
		return;
	}
	/* §5.2.2 rule 5: queue 3 has one buffer per outstanding atomic. */
	if (x->aoq_count == 0) {
		uiw_rx_refuse(qp, UIW_E_DDP_U_MSN_NO_BUF, "Atomic Response MSN "
			      "%u with no atomic outstanding", r->h.msn);
		return;
	}
	r->fail_sq = x->aoq[x->aoq_head % UIW_EXT_AOQ];
	if (q_check(qp, q, UIW_ATOMIC_RESP_LEN))
		plan_scratch(r, q->buf, UIW_ATOMIC_RESP_LEN);
}

/* The row of the decoded header, or a refusal (RFC 5040 §7.2: an opcode
 * on a buffer model or queue it does not use is unexpected). */
static void validate(struct uiw_qp *qp)
{
	struct uiw_rx *r = &qp->rx;
	const struct uiw_ddp_hdr *h = &r->h;
	const struct rdmap_row *row = &rdmap_rows[h->opcode & 15];

	if (!h->tagged && h->qn > UIW_QN_ATOMIC_RESP) {
		uiw_rx_refuse(qp, UIW_E_DDP_U_INVALID_QN, "QN %u", h->qn);
		return;
	}
	if (!row->validate || row->tagged != h->tagged ||
	    (!h->tagged && row->qn != h->qn)) {
		if (h->tagged)
			uiw_rx_refuse(qp, UIW_E_RDMAP_UNEXPECTED_OPCODE,
				      "opcode 0x%x in a tagged segment",
				      h->opcode);
		else
			uiw_rx_refuse(qp, UIW_E_RDMAP_UNEXPECTED_OPCODE,
				      "opcode 0x%x on queue %u", h->opcode,
				      h->qn);
		return;
	}
	r->row = row;
	/* RFC 6581 §9.2: the first message of peer-to-peer mode (rtr.c). */
	if (qp->rtr.armed && uiw_rtr_rx_header(qp))
		return;
	row->validate(qp);
}

/* ---- The segment's header ------------------------------------------------ */

static bool rx_reading(const struct uiw_qp *qp)
{
	return qp->attached && !qp->rx.stopped && !qp->rx_fin &&
	       (qp->state == UIW_QPS_RTS || qp->state == UIW_QPS_CLOSING);
}

bool uiw_qp_rx_begin(struct uiw_qp *qp, const uint8_t *hdr, uint32_t hlen,
		     uint32_t len)
{
	struct uiw_rx *r = &qp->rx;
	size_t need, hl;
	uiw_err_t e;

	if (r->stopped)
		return false;
	seg_clear(r);
	r->in_seg = true;
	r->len = len;
	need = uiw_ddp_hdr_len(hlen ? hdr[0] : 0);
	if (hlen > need)
		hlen = (uint32_t)need;
	memset(r->hdr, 0, sizeof(r->hdr));
	if (hlen)
		memcpy(r->hdr, hdr, hlen);
	r->hlen = hlen;
	if (hlen < need) {
		bool tagged = hlen > 0 && (r->hdr[0] & UIW_DDP_T);

		/* A header that cannot be read has no valid STag / QN. */
		r->plen = 0;
		uiw_rx_refuse(qp, tagged ? UIW_E_DDP_T_INVALID_STAG
					: UIW_E_DDP_U_INVALID_QN,
			      "a segment of %u octets cannot hold a "
			      "%zu-octet DDP header", hlen, need);
		return true;
	}
	r->plen = known(len) ? len - hlen : UIW_SEG_LEN_UNKNOWN;
	e = uiw_ddp_hdr_decode(r->hdr, hlen, &r->h, &hl);
	if (e != UIW_OK) {
		uiw_rx_refuse(qp, e, "DDP control 0x%02x, RDMAP control 0x%02x",
			      r->hdr[0], r->hdr[1]);
		return true;
	}
	UIW_DBG(3, "qp %u: rx %s op %u len %u%s", qp->qpn,
		r->h.tagged ? "tagged" : "untagged", r->h.opcode, len,
		r->h.last ? " L" : "");
	validate(qp);
	return true;
}

/* ---- Where payload octets go --------------------------------------------- */

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

/* Before registered memory is written: the region must still be valid
 * (it may have been invalidated or deregistered since the header was
 * checked, and without a length only now is the range checked), and it
 * stays registered while the octets go there.  False: refused. */
static bool hold_mem(struct uiw_qp *qp, uint32_t off, uint32_t n)
{
	struct uiw_rx *r = &qp->rx;
	enum uiw_mr_check c = UIW_MRC_OK;

	if (r->held_mem && off >= r->held_lo && off + n <= r->held_hi)
		return true;
	/* With the length known the rest of the payload at once (a framing
	 * may name it in many runs), else what is asked for. */
	if (!r->lazy)
		n = r->lim - off;
	if (take_hold(qp, r->mr_stag, r->row->access,
		      (uint64_t)(uintptr_t)r->mem + off, n, &c)) {
		r->held_mem = true;
		r->held_lo = off;
		r->held_hi = off + n;
		return true;
	}
	if (c == UIW_MRC_OK)
		c = UIW_MRC_INVALID;
	uiw_rx_refuse(qp, uiw_mr_check_err(c, UIW_MRE_DDP), "STag 0x%08x: %s "
		      "%s placement", r->mr_stag, uiw_mr_check_str(c),
		      r->lazy ? "at" : "during");
	/* Our own sink (a Read Response's row needs local write) went
	 * away under us: a local protection error for the Read. */
	if (r->row->access == UIW_ACCESS_LOCAL_WRITE && !r->lazy)
		r->loc_status = UIW_WC_LOC_PROT_ERR;
	return false;
}

static bool hold_sgl(struct uiw_qp *qp)
{
	struct uiw_rx *r = &qp->rx;
	const struct uiw_rq_slot *q;
	enum uiw_mr_check c = UIW_MRC_OK;
	uint32_t i;

	if (r->held_rq == (int64_t)r->rq_ctr)
		return true;
	q = uiw_rq_at(qp, r->rq_ctr);
	for (i = 0; i < q->num_sge; i++) {
		const struct uiw_sge *g = &q->sge[i];

		if (g->length == 0)
			continue;
		if (!take_hold(qp, g->lkey, UIW_ACCESS_LOCAL_WRITE, g->addr,
			       g->length, &c)) {
			uiw_rx_release_holds(qp);
			/* Our own buffer went away: a local error. */
			uiw_rx_refuse(qp, UIW_E_DDP_LOCAL_CATA, "receive "
				      "buffer lkey 0x%08x: %s", g->lkey,
				      uiw_mr_check_str(c));
			r->loc_status = UIW_WC_LOC_PROT_ERR;
			return false;
		}
	}
	r->held_rq = r->rq_ctr;
	return true;
}

/* Octets the bound refuses: a refusal with the error the header checks
 * would have drawn had the length been known (RFC 5041 §7). */
static void beyond(struct uiw_qp *qp, uint64_t end)
{
	struct uiw_rx *r = &qp->rx;

	if (r->plan == PL_MEM)
		uiw_rx_refuse(qp, UIW_E_DDP_T_BASE_BOUNDS, "%s of at least "
			      "%llu octets beyond its target", r->row->name,
			      (unsigned long long)end);
	else
		uiw_rx_refuse(qp, UIW_E_DDP_U_TOO_LONG, "%s MSN %u of at least "
			      "%llu octets, room for %u", r->row->name,
			      r->h.msn, (unsigned long long)r->h.mo + end,
			      r->h.mo + r->lim);
}

/* The place of payload octet off, at most n octets from there (*run);
 * NULL when it is not placed.  Checks bounds and takes holds. */
static uint8_t *dest(struct uiw_qp *qp, uint32_t off, uint32_t n,
		     uint32_t *run)
{
	struct uiw_rx *r = &qp->rx;
	uint8_t *p;

	switch (r->plan) {
	case PL_MEM:
		if (off >= r->lim || n > r->lim - off) {
			if (off >= r->lim) {
				beyond(qp, (uint64_t)off + n);
				return NULL;
			}
			n = r->lim - off;
		}
		if (!hold_mem(qp, off, n))
			return NULL;
		*run = n;
		return r->mem + off;
	case PL_SGL:
		if (off >= r->lim) {
			beyond(qp, (uint64_t)off + n);
			return NULL;
		}
		if (!hold_sgl(qp))
			return NULL;
		sgl_find(uiw_rq_at(qp, r->rq_ctr), r->sgl_mo + off, &p, run);
		if (!p)
			return NULL;
		if (*run > n)
			*run = n;
		if (*run > r->lim - off)
			*run = r->lim - off;
		return p;
	case PL_SCRATCH:
		/* What does not fit a fixed message is dropped; its length
		 * check refuses it at the end. */
		if (off >= r->lim)
			return NULL;
		*run = r->lim - off < n ? r->lim - off : n;
		return r->mem + off;
	default:
		return NULL;
	}
}

int uiw_qp_rx_place(struct uiw_qp *qp, uint32_t off, uint32_t n,
		    struct iovec *iov, int iov_n, int max, uint32_t *named)
{
	struct uiw_rx *r = &qp->rx;
	uint32_t done = 0;

	while (done < n) {
		uint32_t run = 0, k;
		/* Outside a segment (no header given) nothing is placed. */
		uint8_t *p = r->err == UIW_OK && r->in_seg ?
			     dest(qp, off + done, n - done, &run) : NULL;

		if (!p) {
			/* Within one turn every discarded octet has its own
			 * scratch octet (the framing may read them back). */
			k = r->disc % UIW_SEG_DISCARD;
			run = UIW_SEG_DISCARD - r->disc;
			if (run > UIW_SEG_DISCARD - k)
				run = UIW_SEG_DISCARD - k;
			if (run > n - done)
				run = n - done;
			if (run == 0)
				break;
			p = r->discard + k;
			r->disc += run;
		}
		if (!uiw_iov_append(iov, &iov_n, max, p, run))
			break;
		done += run;
	}
	*named = done;
	return iov_n;
}

void uiw_qp_rx_put(struct uiw_qp *qp, uint32_t off, const uint8_t *src,
		   uint32_t n)
{
	struct uiw_rx *r = &qp->rx;
	uint32_t done = 0;

	while (done < n && r->err == UIW_OK && r->in_seg) {
		uint32_t run = 0;
		uint8_t *p = dest(qp, off + done, n - done, &run);

		if (!p)
			break;
		memcpy(p, src + done, run);
		done += run;
	}
	/* rx_put places at once: the memory is not held beyond it. */
	uiw_rx_release_holds(qp);
}

/* ---- The segment's end --------------------------------------------------- */

bool uiw_qp_rx_end(struct uiw_qp *qp, uint32_t len, uiw_err_t ferr,
		   const char *why)
{
	struct uiw_rx *r = &qp->rx;
	struct uiw_qp_act *act = &qp->rx_act;
	uiw_err_t e;
	int k;

	if (r->stopped)
		return false;
	/* No header was given: nothing can be made of it (a refusal). */
	if (!r->in_seg)
		uiw_qp_rx_begin(qp, NULL, 0, len);
	r->in_seg = false;
	if (ferr != UIW_OK) {
		if (why)
			snprintf(r->why, sizeof(r->why), "%s", why);
		r->have_rdmap = false;
		uiw_rx_fail(qp, ferr, act);
		return false;
	}
	if (!known(r->len) && len >= r->hlen && r->err == UIW_OK &&
	    r->row && !qp->rtr.seg) {
		/* The length is known now: the header's checks again, with
		 * it (placement was bounded meanwhile). */
		r->len = len;
		r->plen = len - r->hlen;
		r->row->validate(qp);
	}
	r->len = len;
	r->plen = len >= r->hlen ? len - r->hlen : 0;
	e = r->err;
	if (e != UIW_OK) {
		uiw_rx_fail(qp, e, act);
		return false;
	}
	k = r->h.tagged;
	r->msg_got[k] += r->plen;
	if (r->h.last) {
		r->last_msg[k] = r->msg_got[k];
		r->msg_got[k] = 0;
	}
	/* An RTR is consumed there, never delivered (RFC 6581 §9.2). */
	if (!(qp->rtr.seg && uiw_rtr_rx_deliver(qp, act)))
		r->row->deliver(qp, act);
	return !r->stopped;
}

uint32_t uiw_qp_rx_guess(struct uiw_qp *qp, uint32_t max)
{
	const struct uiw_rx *r = &qp->rx;
	uint32_t have, rest;
	int k = r->h.tagged;

	if (!r->in_seg || !r->row || r->h.last || !known(r->plen))
		return 0;
	have = r->msg_got[k] + r->plen;
	if (r->last_msg[k] <= have)
		return 0;
	rest = r->last_msg[k] - have;
	/* More than this segment carried (the peer's segment size): the
	 * next one is not the last. */
	if (rest > r->plen || rest > max)
		return 0;
	return r->hlen + rest;
}

/* ---- Delivery ------------------------------------------------------------ */

static void d_none(struct uiw_qp *qp, struct uiw_qp_act *act)
{
	/* An RDMA Write is placed, not delivered (RFC 5040 §5.1). */
	(void)qp;
	(void)act;
}

/* Completes the Reads at the head of the ORQ whose Responses are all
 * placed (RFC 5040 §5.5 rule 19), oldest first. */
static void reads_complete(struct uiw_qp *qp, struct uiw_qp_act *act)
{
	while (qp->orq_count > 0) {
		uint32_t ctr = qp->orq[qp->orq_head % qp->orq_cap];

		if (!uiw_sq_at(qp, ctr)->read_done)
			break;
		qp->orq_head++;
		qp->orq_count--;
		uiw_qp_sq_check(qp, ctr, act);
	}
}

static void d_read_resp(struct uiw_qp *qp, struct uiw_qp_act *act)
{
	struct uiw_rx *r = &qp->rx;
	const struct uiw_ddp_hdr *h = &r->h;
	struct uiw_sq_slot *s = uiw_sq_at(qp, (uint32_t)r->fail_sq);
	uint64_t base = s->num_sge ? s->sge[0].addr : 0;
	uint64_t end = r->plen ? h->to - base + r->plen : s->rd_got;

	s->rd_got += r->plen;
	if (h->last) {
		/* The Response ends where the Read's sink does. */
		if ((qp->lp.unordered ? end : s->rd_got) != s->length) {
			uiw_rx_fail_msg(qp, UIW_E_RDMAP_OP_UNSPEC, -1, act,
					"RDMA Read Response of %llu octets, "
					"the Read asked for %u",
					(unsigned long long)(qp->lp.unordered ?
							     end : s->rd_got),
					s->length);
			return;
		}
		s->rd_last = true;
	}
	if (!s->rd_last || s->rd_got != s->length)
		return;
	s->read_done = true;
	reads_complete(qp, act);
}

/* Completes the receive buffers at the head of the RQ whose messages are
 * whole (RFC 5041 §5.4, §5.3: in MSN order). */
static void q0_complete(struct uiw_qp *qp, struct uiw_qp_act *act)
{
	struct uiw_rx *r = &qp->rx;

	while (qp->rq.head != qp->rq.tail && !r->stopped) {
		struct uiw_rq_slot *q = uiw_rq_at(qp, qp->rq.head);
		const struct rdmap_row *row = &rdmap_rows[q->op & 15];
		struct uiw_wc wc = { 0 };

		if (!q->last || q->got != q->total)
			break;
		r->msn[0]++;
		wc.wr_id = q->wr_id;
		wc.status = UIW_WC_SUCCESS;
		if (row->se)
			wc.flags |= UIW_WC_F_SOLICITED;
		if (q->cls == CLS_IMM) {
			uint64_t imm;

			/* RFC 7306 §6.3: "MUST check that Immediate Data
			 * ... include exactly 8 bytes" (longer ones were
			 * refused on arrival). */
			if (uiw_imm_decode(q->imm, q->got, &imm) != UIW_OK) {
				r->have_rdmap = false;
				uiw_rx_fail_msg(qp, uiw_rdmap_ext_len_check(
						q->op, q->got), -1, act,
						"Immediate Data MSN %u of %u "
						"octets, not %u", r->msn[0] - 1,
						q->got, UIW_IMM_DATA_LEN);
				return;
			}
			/* §6.1, §6.4: delivered in order, as a Send. */
			wc.opcode = UIW_WC_RECV_RDMA_WITH_IMM;
			wc.flags |= UIW_WC_F_WITH_IMM;
			wc.imm_data = imm;
		} else {
			wc.opcode = UIW_WC_RECV;
			/* RFC 5041 §5.4: the message length is MO + payload
			 * of the last segment. */
			wc.byte_len = q->got;
		}
		if (row->inv) {
			/* RFC 5040 §5.3, §7.2 (4, 5): the STag must be
			 * valid and of this stream's PD. */
			enum uiw_mr_check c = uiw_mr_invalidate_remote(
				&qp->dev->mrt, q->inv_stag, qp->pd);

			if (c != UIW_MRC_OK) {
				r->fail_rq = qp->rq.head;
				uiw_rx_fail_msg(qp, uiw_mr_check_err(c,
						UIW_MRE_INVALIDATE), -1, act,
						"Send with Invalidate of STag "
						"0x%08x: %s", q->inv_stag,
						uiw_mr_check_str(c));
				return;
			}
			wc.flags |= UIW_WC_F_WITH_INV;
			wc.invalidated_stag = q->inv_stag;
		}
		qp->rq.head++;
		uiw_qp_post_cqe(qp, qp->rcq, &wc, act);
	}
}

static void d_q0(struct uiw_qp *qp, struct uiw_qp_act *act)
{
	struct uiw_rx *r = &qp->rx;
	const struct uiw_ddp_hdr *h = &r->h;
	struct uiw_rq_slot *q = uiw_rq_at(qp, r->rq_ctr);

	q->cls = r->row->cls;
	q->got += r->plen;
	if (h->last) {
		q->last = true;
		q->total = h->mo + r->plen;
		q->op = h->opcode;
		q->inv_stag = h->rsvd_ulp;
	}
	if (q->last && q->got > q->total) {
		uiw_rx_fail_msg(qp, UIW_E_DDP_U_INVALID_MO, -1, act, "MSN %u: "
				"%u octets placed, the message has %u",
				h->msn, q->got, q->total);
		return;
	}
	q0_complete(qp, act);
}

static void read_request(struct uiw_qp *qp, const uint8_t *buf,
			 struct uiw_qp_act *act)
{
	struct uiw_rx *r = &qp->rx;
	struct uiw_mr_entry *hold = NULL;
	struct uiw_irq_ent *e;
	struct uiw_read_req rr;

	uiw_read_req_decode(buf, &rr);
	r->have_rdmap = true;
	/* RFC 5040 §7.2 (4a-e) and §5.2.1: a zero-length Read is not
	 * checked. */
	if (rr.size > 0) {
		enum uiw_mr_check c = uiw_mr_get(&qp->dev->mrt, rr.src_stag,
						 qp->pd, UIW_ACCESS_REMOTE_READ,
						 rr.src_to, rr.size, &hold);

		if (c != UIW_MRC_OK) {
			uiw_rx_fail_msg(qp, uiw_mr_check_err(c, UIW_MRE_RDMAP),
					-1, act, "RDMA Read of %u octets from "
					"STag 0x%08x TO 0x%llx: %s", rr.size,
					rr.src_stag,
					(unsigned long long)rr.src_to,
					uiw_mr_check_str(c));
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

/* A fixed message of queues 1 to 3: its segment counted; true once the
 * message is whole (RFC 5041 §5.4), with *got its length. */
static bool q_whole(struct uiw_rx *r, struct uiw_rx_q *q, uint32_t *got)
{
	const struct uiw_ddp_hdr *h = &r->h;

	q->seen = true;
	q->cls = r->row->cls;
	q->op = h->opcode;
	q->got += r->plen;
	if (h->last) {
		q->last = true;
		q->end = h->mo + r->plen;
	}
	if (!q->last || q->got < q->end)
		return false;
	*got = q->got;
	r->msn[h->qn]++;
	memset(q, 0, offsetof(struct uiw_rx_q, buf));
	return true;
}

static void d_q1(struct uiw_qp *qp, struct uiw_qp_act *act)
{
	struct uiw_rx *r = &qp->rx;
	struct uiw_rx_q *q = &r->q[UIW_QN_READ_REQ];
	uint32_t got;

	if (!q_whole(r, q, &got))
		return;
	if (r->row->cls == CLS_ATOMIC) {
		uiw_atomic_rx_request(qp, q->buf, got, act);
		return;
	}
	if (got != UIW_READ_REQ_LEN) {
		uiw_rx_fail_msg(qp, UIW_E_RDMAP_OP_UNSPEC, -1, act, "RDMA Read "
				"Request of %u octets", got);
		return;
	}
	read_request(qp, q->buf, act);
}

static void d_atomic_resp(struct uiw_qp *qp, struct uiw_qp_act *act)
{
	struct uiw_rx *r = &qp->rx;
	uint32_t got;

	if (q_whole(r, &r->q[UIW_QN_ATOMIC_RESP], &got))
		uiw_atomic_rx_response(qp, r->q[UIW_QN_ATOMIC_RESP].buf, got,
				       act);
}

static void d_term(struct uiw_qp *qp, struct uiw_qp_act *act)
{
	struct uiw_rx *r = &qp->rx;
	struct uiw_rx_q *q = &r->q[UIW_QN_TERMINATE];
	uint64_t end = (uint64_t)r->h.mo + r->plen;
	struct uiw_term t;
	uint32_t got;
	bool setup;
	uiw_err_t de;
	char detail[96];
	struct uiw_fail f = {
		.origin = UIW_TERM_REMOTE,
		.send_term = false,
		.rq_idx = -1,
		.status = -1,
		.detail = detail,
	};

	if (end > UIW_TERM_MAX_LEN)
		end = UIW_TERM_MAX_LEN;
	if (end > q->end)
		q->end = (uint32_t)end;
	if (!r->h.last)
		return;
	got = q->end;
	/* RFC 6581 §9: the setup Terminates come from the initiator of an
	 * enhanced connection, as its first message. */
	setup = qp->lp.setup_term && r->msn[0] == 1 && r->msn[1] == 1;
	de = uiw_term_decode_ex(q->buf, got, setup ? 0 : UIW_TERM_NO_SETUP,
				&t);
	/* RFC 5040 §5.4: the peer ends the stream. */
	f.err = t.err ? t.err : UIW_E_RDMAP_OP_UNSPEC;
	snprintf(detail, sizeof(detail), "%u octets%s%s%s%s%s", got,
		 t.m ? ", M" : "", t.d ? ", D" : "", t.r ? ", R" : "",
		 t.siw_layout ? ", siw layout" : "",
		 de != UIW_OK || !t.err ? ", truncated" : "");
	f.sq_idx = uiw_qp_find_term_wr(qp, &t);
	uiw_qp_fail(qp, &f, act);
}

/* ---- Turns --------------------------------------------------------------- */

bool uiw_qp_rx_enter(struct uiw_qp *qp)
{
	if (!qp)
		return false;
	pthread_mutex_lock(&qp->lock);
	if (!rx_reading(qp)) {
		uiw_rx_release_holds(qp);
		pthread_mutex_unlock(&qp->lock);
		return false;
	}
	memset(&qp->rx_act, 0, sizeof(qp->rx_act));
	qp->rx.disc = 0;
	return true;
}

void uiw_qp_rx_release(struct uiw_qp *qp)
{
	uiw_rx_release_holds(qp);
}

int uiw_qp_rx_leave(struct uiw_qp *qp, bool keep, bool *tx)
{
	struct uiw_qp_act act = qp->rx_act;
	int ret = qp->rx.stopped ? -EPROTO : 0;

	if (!keep || qp->rx.stopped)
		uiw_rx_release_holds(qp);
	if (tx)
		*tx = uiw_tx_wanted(qp);
	uiw_qp_close_check(qp, &act);
	pthread_mutex_unlock(&qp->lock);
	/* The framing transmits after receiving by itself. */
	act.kick = false;
	uiw_qp_act_run(qp, &act);
	return ret;
}
