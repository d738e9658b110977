/*
 * Transmit: send work requests and Read Responses become RDMA messages
 * (RFC 5040 §4-5), messages become DDP segments of at most MULPDU octets
 * (RFC 5041 §5.2).  The framing below takes the segments
 * (uiw_qp_tx_segs): header octets from a per-QP ring, payload straight
 * from registered memory; it makes each one a wire unit and reports it
 * sent (uiw_qp_tx_sent).
 *
 * Order (RFC 5040 §5.5): messages go out whole and in the order of their
 * work requests (rule 13); Read Responses go out in the order of their
 * Requests (rule 20) and take the link at message boundaries ahead of
 * queued send WRs.  An RDMA Read waits while ORD Reads are outstanding,
 * and so does everything queued behind it; a fenced WR waits until no
 * Read is outstanding.
 */
#include "qp.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "dev.h"
#include "../rt/log.h"

static inline struct uiw_tx_seg *seg_at(struct uiw_qp *qp, uint32_t i)
{
	return &qp->seg[(qp->seg_head + i) % UIW_TX_SEGS];
}

void uiw_sq_release_holds(struct uiw_qp *qp, struct uiw_sq_slot *s)
{
	uint32_t i;

	if (!s->holding)
		return;
	for (i = 0; i < s->num_sge; i++) {
		if (s->hold[i]) {
			uiw_mr_put(&qp->dev->mrt, s->hold[i]);
			s->hold[i] = NULL;
		}
	}
	s->holding = false;
}

static void irq_release(struct uiw_qp *qp, struct uiw_irq_ent *e)
{
	if (e->hold) {
		uiw_mr_put(&qp->dev->mrt, e->hold);
		e->hold = NULL;
	}
	e->used = false;
}

/* Entries leave the IRQ in order, once their Response is sent. */
static void irq_pop(struct uiw_qp *qp)
{
	while (qp->irq_head != qp->irq_next &&
	       !uiw_irq_at(qp, qp->irq_head)->used)
		qp->irq_head++;
	if (qp->irq_head == qp->irq_next && qp->irq_next == qp->irq_tail)
		qp->irq_head = qp->irq_next = qp->irq_tail;
}

void uiw_tx_reset(struct uiw_qp *qp)
{
	qp->seg_head = qp->seg_count = 0;
	qp->tx_ahead = 0;
	qp->tx_held = false;
	memset(&qp->msg, 0, sizeof(qp->msg));
	/* RFC 5041 §4.3: the first MSN of every queue is one. */
	qp->tx_msn[0] = qp->tx_msn[1] = qp->tx_msn[2] = 1;
	qp->term_pending = qp->term_built = false;
	qp->orq_head = qp->orq_count = 0;
	qp->irq_head = qp->irq_next = qp->irq_tail = qp->irq_unbuilt = 0;
	uiw_ext_reset(qp);
}

/* The stream ends: stop building.  Segments already built still go out
 * (the framing may be sending them); what they hold is released when
 * they are sent, or by uiw_tx_drop. */
void uiw_tx_abort(struct uiw_qp *qp)
{
	uint32_t c;

	for (c = qp->irq_head; c != qp->irq_tail; c++) {
		struct uiw_irq_ent *e = uiw_irq_at(qp, c);

		if (!e->used)
			continue;
		if (e->segs)
			e->aborted = true;
		else
			irq_release(qp, e);
	}
	qp->irq_next = qp->irq_tail;
	qp->irq_unbuilt = 0;
	irq_pop(qp);
	if (qp->msg.kind == UIW_MSG_IRQ)
		qp->msg.kind = UIW_MSG_NONE;
}

/* The framing is gone: forget every segment and release every hold. */
void uiw_tx_drop(struct uiw_qp *qp)
{
	uint32_t c, i;

	for (i = 0; i < qp->sq_size; i++) {
		qp->sq[i].segs = 0;
		uiw_sq_release_holds(qp, &qp->sq[i]);
		qp->sq[i].aborted = false;
	}
	for (c = 0; c < qp->irq_cap; c++) {
		struct uiw_irq_ent *e = &qp->irq[c];

		e->segs = 0;
		if (e->used)
			irq_release(qp, e);
	}
	qp->irq_head = qp->irq_next = qp->irq_tail;
	qp->irq_unbuilt = 0;
	qp->seg_head = qp->seg_count = 0;
	qp->tx_ahead = 0;
	qp->term_pending = false;
	memset(&qp->msg, 0, sizeof(qp->msg));
}

/* ---- Building segments -------------------------------------------------- */

static struct uiw_tx_seg *seg_open(struct uiw_qp *qp, uint8_t owner,
				   uint32_t idx, const struct uiw_ddp_hdr *h)
{
	struct uiw_tx_seg *g = seg_at(qp, qp->seg_count);

	g->owner = owner;
	g->idx = idx;
	g->out.hdr = g->buf + UIW_SEG_HEADROOM;
	g->out.hlen = (uint32_t)uiw_ddp_hdr_encode(g->out.hdr, h);
	g->out.src = NULL;
	g->out.src_i = g->out.src_off = 0;
	g->out.term = false;
	return g;
}

struct uiw_tx_seg *uiw_tx_seg_tagged(struct uiw_qp *qp, uint8_t owner,
				     uint32_t idx, uint8_t opcode, bool last,
				     uint32_t stag, uint64_t to)
{
	struct uiw_ddp_hdr h = {
		.tagged = true, .last = last,
		.ddp_ver = UIW_DDP_VERSION, .rdmap_ver = UIW_RDMAP_VERSION,
		.opcode = opcode, .stag = stag, .to = to,
	};

	return seg_open(qp, owner, idx, &h);
}

struct uiw_tx_seg *uiw_tx_seg_untagged(struct uiw_qp *qp, uint8_t owner,
				       uint32_t idx, uint8_t opcode,
				       bool last, uint32_t qn, uint32_t msn,
				       uint32_t mo, uint32_t inv)
{
	struct uiw_ddp_hdr h = {
		.tagged = false, .last = last,
		.ddp_ver = UIW_DDP_VERSION, .rdmap_ver = UIW_RDMAP_VERSION,
		.opcode = opcode, .rsvd_ulp = inv, .qn = qn, .msn = msn,
		.mo = mo,
	};

	return seg_open(qp, owner, idx, &h);
}

void uiw_tx_seg_commit(struct uiw_qp *qp, struct uiw_tx_seg *g,
		       uint32_t plen, const struct iovec *src, uint32_t src_i,
		       uint32_t src_off)
{
	if (plen) {
		g->out.src = src;
		g->out.src_i = src_i;
		g->out.src_off = src_off;
	}
	g->out.len = g->out.hlen + plen;
	if (g->owner == UIW_SEG_SQ)
		uiw_sq_at(qp, g->idx)->segs++;
	else if (g->owner == UIW_SEG_IRQ)
		uiw_irq_at(qp, g->idx)->segs++;
	qp->tx_ahead += g->out.len;
	qp->seg_count++;
	UIW_DBG(3, "qp %u: tx segment of %u octets (header %u)", qp->qpn,
		g->out.len, g->out.hlen);
}

void uiw_tx_src_advance(const struct iovec *src, uint32_t *si, uint32_t *so,
			uint32_t n)
{
	while (n > 0) {
		uint32_t room = (uint32_t)src[*si].iov_len - *so;

		if (n < room) {
			*so += n;
			return;
		}
		n -= room;
		(*si)++;
		*so = 0;
	}
}

static void build_term(struct uiw_qp *qp)
{
	struct uiw_tx_seg *g;
	uint8_t *p;
	size_t room;

	/* RFC 5040 §4.8, §5.4: untagged, queue 2, one segment. */
	g = uiw_tx_seg_untagged(qp, UIW_SEG_TERM, 0, UIW_OP_TERMINATE, true,
				UIW_QN_TERMINATE,
				qp->tx_msn[UIW_QN_TERMINATE]++, 0, 0);
	p = uiw_tx_seg_tail(g, &room);
	uiw_tx_seg_keep(g, uiw_term_encode(p, room, &qp->term));
	g->out.term = true;
	uiw_tx_seg_commit(qp, g, 0, NULL, 0, 0);
	qp->term_built = true;
}

uint32_t uiw_tx_msg_cut(struct uiw_qp *qp, uint32_t hdr_len, bool *last)
{
	struct uiw_tx_msg *m = &qp->msg;
	uint32_t pmax = qp->lp.mulpdu - hdr_len;
	uint32_t p = m->len - m->off < pmax ? m->len - m->off : pmax;

	*last = m->off + p == m->len;
	return p;
}

/* RFC 5040 §5.2.2: a Read Response, tagged, to the sink the Request
 * named, from the source it named. */
static void read_resp_build(struct uiw_qp *qp, struct uiw_irq_ent *e)
{
	struct uiw_tx_msg *m = &qp->msg;
	struct uiw_tx_seg *g;
	bool last;
	uint32_t p = uiw_tx_msg_cut(qp, UIW_DDP_TAGGED_HDR_LEN, &last);

	g = uiw_tx_seg_tagged(qp, UIW_SEG_IRQ, m->idx, UIW_OP_READ_RESP, last,
			      e->rr.sink_stag, e->rr.sink_to + m->off);
	g->one.iov_base = (void *)(uintptr_t)(e->rr.src_to + m->off);
	g->one.iov_len = p;
	e->off += p;
	m->off += p;
	if (last) {
		e->built = true;
		qp->irq_unbuilt--;
		m->kind = UIW_MSG_NONE;
	}
	uiw_tx_seg_commit(qp, g, p, &g->one, 0, 0);
}

/* The Responses of the IRQ, by the kind of Request they answer. */
static const struct irq_kind {
	void (*build)(struct uiw_qp *qp, struct uiw_irq_ent *e);
	/* May the next entry's Response be built now?  NULL: yes. */
	bool (*ready)(const struct uiw_qp *qp);
} irq_kinds[] = {
	[UIW_IRQ_READ] = { read_resp_build, NULL },
	/* RFC 7306 §7: an atomic waits for the Read Responses before it. */
	[UIW_IRQ_ATOMIC] = { uiw_irq_atomic_build, uiw_irq_atomic_ready },
};

/* A Response waits, and may be built now. */
static bool irq_ready(const struct uiw_qp *qp)
{
	const struct irq_kind *k;

	if (qp->irq_next == qp->irq_tail)
		return false;
	k = &irq_kinds[qp->irq[qp->irq_next % qp->irq_cap].kind];
	return !k->ready || k->ready(qp);
}

/* One segment of the current message. */
static void build_segment(struct uiw_qp *qp)
{
	struct uiw_tx_msg *m = &qp->msg;

	if (m->kind == UIW_MSG_IRQ) {
		struct uiw_irq_ent *e = uiw_irq_at(qp, m->idx);

		irq_kinds[e->kind].build(qp, e);
	} else {
		struct uiw_sq_slot *s = uiw_sq_at(qp, m->idx);

		s->row->build(qp, s->row, s);
	}
}

int uiw_wr_fail(struct uiw_qp *qp, uint32_t ctr, int status,
		const char *detail, struct uiw_qp_act *act)
{
	/* RFC 5040 §7.1 case 1: an error while creating a message sends a
	 * Terminate instead, without copied headers. */
	struct uiw_fail f = {
		.err = UIW_E_RDMAP_LOCAL_CATA,
		.origin = UIW_TERM_LOCAL,
		.send_term = true,
		.sq_idx = ctr, .rq_idx = -1,
		.status = status,
		.detail = detail,
	};

	uiw_qp_fail(qp, &f, act);
	return UIW_WR_NOSEG;
}

/* Starts the next send WR, if it may go now: the fence (RFC 5040 §5.5:
 * a fenced WR waits until no Read or atomic is outstanding), then what
 * its row asks for. */
static int sq_start(struct uiw_qp *qp, struct uiw_qp_act *act)
{
	uint32_t ctr = qp->sq_next;
	struct uiw_sq_slot *s = uiw_sq_at(qp, ctr);
	const struct uiw_wr_row *w = s->row;
	int r;

	if (s->fence && (qp->orq_count > 0 || qp->ext.aoq_count > 0))
		return UIW_WR_STALL;
	r = w->start(qp, ctr, act);
	if (r != UIW_WR_STARTED)
		return r;
	memset(&qp->msg, 0, sizeof(qp->msg));
	qp->msg.kind = UIW_MSG_SQ;
	qp->msg.idx = ctr;
	qp->msg.len = w->sgl == UIW_WR_SGL_SOURCE ? s->length : 0;
	s->state = UIW_SQ_ACTIVE;
	qp->sq_next++;
	return UIW_WR_STARTED;
}

/* Builds one segment if there is something that may go now. */
static bool tx_build(struct uiw_qp *qp, struct uiw_qp_act *act)
{
	for (;;) {
		if (qp->seg_count == UIW_TX_SEGS)
			return false;
		if (qp->term_pending) {
			if (qp->term_built)
				return false;
			build_term(qp);
			return true;
		}
		if (qp->state != UIW_QPS_RTS && qp->state != UIW_QPS_CLOSING)
			return false;
		/* The framing cannot carry a segment yet (tx_held,
		 * framing.h). */
		if (qp->tx_held)
			return false;
		/* RFC 6581 §5: the initiator's RTR precedes every other
		 * message (rtr.c). */
		if (qp->rtr.tx) {
			uiw_rtr_build(qp);
			return true;
		}
		if (qp->msg.kind == UIW_MSG_NONE) {
			bool resp = qp->irq_next != qp->irq_tail;
			bool sq = qp->sq_next != qp->sq_tail;

			/* Whole messages, Responses and send WRs in turn
			 * when both wait (neither starves the other). */
			if (resp && sq && qp->tx_resp_last)
				resp = false;
			if (resp && !irq_ready(qp))
				resp = false;
			if (resp) {
				struct uiw_irq_ent *e =
					uiw_irq_at(qp, qp->irq_next);

				memset(&qp->msg, 0, sizeof(qp->msg));
				qp->msg.kind = UIW_MSG_IRQ;
				qp->msg.idx = qp->irq_next++;
				qp->msg.len = e->rr.size;
				qp->tx_resp_last = true;
			} else if (sq) {
				int r = sq_start(qp, act);

				if (r == UIW_WR_STALL) {
					/* Stalled by ORD or a fence: the
					 * Responses may still go. */
					if (!irq_ready(qp))
						return false;
					qp->tx_resp_last = false;
					continue;
				}
				qp->tx_resp_last = false;
				if (r == UIW_WR_NOSEG)
					continue;
			} else {
				return false;
			}
		}
		build_segment(qp);
		return true;
	}
}

/* A segment's last octet was taken by the framing. */
static void seg_sent(struct uiw_qp *qp, const struct uiw_tx_seg *g,
		     struct uiw_qp_act *act)
{
	switch (g->owner) {
	case UIW_SEG_SQ: {
		struct uiw_sq_slot *s = uiw_sq_at(qp, g->idx);

		if (s->segs)
			s->segs--;
		if (s->segs == 0 && s->aborted) {
			uiw_sq_release_holds(qp, s);
			s->aborted = false;
		} else {
			/* RFC 5040 §5.5 rule 14: a Send or Write completes
			 * once the LLP has taken its last octet. */
			uiw_qp_sq_check(qp, g->idx, act);
		}
		break;
	}
	case UIW_SEG_IRQ: {
		struct uiw_irq_ent *e = uiw_irq_at(qp, g->idx);

		if (e->segs)
			e->segs--;
		if (e->segs == 0 && (e->built || e->aborted)) {
			irq_release(qp, e);
			irq_pop(qp);
		}
		break;
	}
	case UIW_SEG_TERM:
		/* RFC 5040 §5.4: nothing more on this stream. */
		qp->term_pending = false;
		if (qp->state == UIW_QPS_TERMINATE)
			qp->state = UIW_QPS_ERROR;
		qp->close_req = true;
		break;
	default:
		break;
	}
}

int uiw_qp_tx_segs(struct uiw_qp *qp, uint32_t skip,
		   const struct uiw_seg_out **out, int max)
{
	struct uiw_qp_act act = { 0 };
	uint32_t i;
	int n = 0;

	if (!qp || max < 0 || (max > 0 && !out))
		return 0;
	pthread_mutex_lock(&qp->lock);
	if (!qp->attached) {
		pthread_mutex_unlock(&qp->lock);
		return -ENOTCONN;
	}
	if (skip > qp->seg_count) {
		UIW_DBG(1, "qp %u: tx_segs after %u segments, %u handed out",
			qp->qpn, skip, qp->seg_count);
		max = 0;
	}
	for (i = skip; i < qp->seg_count && n < max; i++)
		out[n++] = &seg_at(qp, i)->out;
	while (n < max && qp->tx_ahead < UIW_TX_AHEAD && tx_build(qp, &act))
		out[n++] = &seg_at(qp, qp->seg_count - 1)->out;
	uiw_qp_close_check(qp, &act);
	pthread_mutex_unlock(&qp->lock);
	/* The framing is transmitting: it needs no kick. */
	act.kick = false;
	uiw_qp_act_run(qp, &act);
	return n;
}

/* Under qp->lock: false when tx_build would find nothing to build and
 * no segment waits (a conservative test: work that cannot go yet,
 * behind ORD, a fence or the hold, counts as work). */
bool uiw_tx_wanted(const struct uiw_qp *qp)
{
	return qp->seg_count > 0 || qp->term_pending || qp->rtr.tx ||
	       qp->msg.kind != UIW_MSG_NONE || qp->irq_next != qp->irq_tail ||
	       qp->sq_next != qp->sq_tail;
}

bool uiw_qp_tx_sent(struct uiw_qp *qp, uint32_t n)
{
	struct uiw_qp_act act = { 0 };
	bool more;

	if (!qp)
		return false;
	pthread_mutex_lock(&qp->lock);
	if (!qp->attached) {
		pthread_mutex_unlock(&qp->lock);
		return false;
	}
	for (; n > 0 && qp->seg_count > 0; n--) {
		struct uiw_tx_seg *g = seg_at(qp, 0);

		qp->seg_head = (qp->seg_head + 1) % UIW_TX_SEGS;
		qp->seg_count--;
		qp->tx_ahead -= g->out.len;
		seg_sent(qp, g, &act);
	}
	if (n > 0)
		UIW_DBG(1, "qp %u: tx_sent for %u segments never handed out",
			qp->qpn, n);
	uiw_qp_close_check(qp, &act);
	more = uiw_tx_wanted(qp);
	pthread_mutex_unlock(&qp->lock);
	act.kick = false;
	uiw_qp_act_run(qp, &act);
	return more;
}

void uiw_qp_tx_release(struct uiw_qp *qp)
{
	/* Inside a receive turn: the lock is held.  The framing transmits
	 * after the turn. */
	qp->tx_held = false;
}
