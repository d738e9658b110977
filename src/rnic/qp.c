/*
 * Queue pairs: creation, work request posting, the RFC 5040 §6 states
 * (Idle, RTS, Closing, Terminate, Error), completions in order, flushing,
 * and the binding to an LLP (attach, detach, close).
 *
 * Posting (documented in uiwarp.h terms):
 *  - receives may be posted in Idle and RTS; sends may be posted in Idle
 *    (they are queued and go out once the QP is in RTS) and in RTS;
 *  - in Closing, Terminate and Error every post fails with -EINVAL and a
 *    message (RFC 5041 §6.2.1: after a graceful teardown request "any
 *    further data transfer requests ... MUST return an error"); the work
 *    requests that were outstanding when the QP left RTS have completed
 *    (successfully, or with a flush status) exactly once.
 *
 * Locking: qp->lock protects everything in the QP; completions go to a
 * CQ's ring under it (the ring takes no lock).  Callbacks into the LLP
 * (kick, close) are made without the lock, and detach waits until they
 * have returned.
 */
#include "qp.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cq.h"
#include "dev.h"
#include "event.h"
#include "srq.h"
#include "../rt/log.h"

/* The QP whose LLP callback this thread is running (detach from inside
 * a callback must not wait for itself). */
static _Thread_local struct uiw_qp *cb_qp;

static const char *qps(enum uiw_qp_state s)
{
	return uiw_qp_state_str(s);
}

/* ---- Completions --------------------------------------------------------- */

void uiw_qp_post_cqe(struct uiw_qp *qp, struct uiw_cq *cq,
		     struct uiw_wc *wc, struct uiw_qp_act *act)
{
	bool ok, wake;

	wc->qp_num = qp->qpn;
	wc->qp = qp;
	if (wc->status != UIW_WC_SUCCESS)
		wc->term = qp->cause;
	ok = uiw_cq_push(cq, wc, &wake);
	/* Woken here, with the QP lock held: a wake left for after the
	 * lock (act->wake) could find the CQ destroyed by then, once the
	 * QP's end let the program destroy both. */
	if (wake)
		uiw_cq_wake(cq);
	if (ok)
		return;
	if (act->ovf[0] != cq && act->ovf[1] != cq)
		act->ovf[act->ovf[0] ? 1 : 0] = cq;
	if (qp->state != UIW_QPS_TERMINATE && qp->state != UIW_QPS_ERROR) {
		struct uiw_fail f = {
			.err = UIW_E_RDMAP_LOCAL_CATA,
			.origin = UIW_TERM_LOCAL,
			.send_term = true,
			.sq_idx = -1, .rq_idx = -1, .status = -1,
			.detail = "completion queue overflow",
		};

		uiw_qp_fail(qp, &f, act);
	}
}

/* RFC 5040 §5.5 rule 15: operations complete in the order submitted. */
void uiw_qp_complete(struct uiw_qp *qp, struct uiw_qp_act *act)
{
	while (qp->sq_head != qp->sq_tail) {
		struct uiw_sq_slot *s = uiw_sq_at(qp, qp->sq_head);

		if (s->state != UIW_SQ_DONE)
			break;
		qp->sq_head++;
		s->state = UIW_SQ_FREE;
		if (s->signaled) {
			struct uiw_wc wc = {
				.wr_id = s->wr_id,
				.status = UIW_WC_SUCCESS,
				.opcode = s->row->wc_opcode,
				.byte_len = s->length,
			};

			uiw_qp_post_cqe(qp, qp->scq, &wc, act);
		}
	}
}

/* A send WR is done when all its segments are out and, for a Read or
 * an atomic, its Response has been placed (RFC 5040 §5.5 rules 14 and
 * 19; RFC 7306 §5.4 rule 7: read_done, the original value is placed). */
void uiw_qp_sq_check(struct uiw_qp *qp, uint32_t ctr, struct uiw_qp_act *act)
{
	struct uiw_sq_slot *s = uiw_sq_at(qp, ctr);

	if (s->state != UIW_SQ_BUILT || s->segs != 0)
		return;
	if (s->row->ord && !s->read_done)
		return;
	uiw_sq_release_holds(qp, s);
	s->state = UIW_SQ_DONE;
	uiw_qp_complete(qp, act);
}

/* Every outstanding WR completes once: the failing one with status, the
 * others flushed. */
static void qp_flush(struct uiw_qp *qp, int64_t sq_fail, int64_t rq_fail,
		     int status, struct uiw_qp_act *act)
{
	uint32_t c;

	for (c = qp->sq_head; c != qp->sq_tail; c++) {
		struct uiw_sq_slot *s = uiw_sq_at(qp, c);
		struct uiw_wc wc = {
			.wr_id = s->wr_id,
			.status = (int64_t)c == sq_fail ? status
							: UIW_WC_WR_FLUSH_ERR,
			.opcode = s->row->wc_opcode,
		};

		/* A Read: what its Response placed (an atomic's is 0). */
		if (s->row->ord)
			wc.byte_len = s->rd_got;
		if (s->segs)
			s->aborted = true;  /* holds go when they are sent */
		else
			uiw_sq_release_holds(qp, s);
		s->state = UIW_SQ_FREE;
		uiw_qp_post_cqe(qp, qp->scq, &wc, act);
	}
	qp->sq_head = qp->sq_next = qp->sq_tail;
	qp->orq_count = 0;
	uiw_ext_flush(qp);
	if (qp->msg.kind == UIW_MSG_SQ)
		qp->msg.kind = UIW_MSG_NONE;

	for (c = qp->rq.head; c != qp->rq.tail; c++) {
		struct uiw_rq_slot *r = uiw_rq_at(qp, c);
		struct uiw_wc wc = {
			.wr_id = r->wr_id,
			.status = (int64_t)c == rq_fail ? status
							: UIW_WC_WR_FLUSH_ERR,
			.opcode = UIW_WC_RECV,
			.byte_len = r->got,
		};

		uiw_qp_post_cqe(qp, qp->rcq, &wc, act);
	}
	qp->rq.head = qp->rq.tail;
	/* With an SRQ: the buffers it took are flushed, the others stay;
	 * no more of its receives complete (the verbs' last WQE event). */
	if (qp->srq)
		uiw_async_push(qp->dev, UIW_EVENT_QP_LAST_WQE_REACHED, qp, NULL,
			       NULL);
}

static void qp_set_cause(struct uiw_qp *qp, uiw_err_t err, int origin,
			 bool term_sent, const char *detail)
{
	static const char *const who[] = {
		[UIW_TERM_NONE] = "",
		[UIW_TERM_LOCAL] = "sent Terminate",
		[UIW_TERM_REMOTE] = "received Terminate",
		[UIW_TERM_LLP] = "connection lost",
	};
	const char *w = origin == UIW_TERM_LOCAL && !term_sent ?
			"local error" : who[origin];

	qp->cause.layer = (uint8_t)UIW_ERR_LAYER(err);
	qp->cause.etype = (uint8_t)UIW_ERR_ETYPE(err);
	qp->cause.ecode = (uint8_t)UIW_ERR_ECODE(err);
	qp->cause.origin = (uint8_t)origin;
	snprintf(qp->term_msg, sizeof(qp->term_msg), "%s: %s%s%s",
		 w, uiw_err_str(err), detail && *detail ? " (" : "",
		 detail && *detail ? detail : "");
	if (detail && *detail)
		strncat(qp->term_msg, ")",
			sizeof(qp->term_msg) - strlen(qp->term_msg) - 1);
}

/* The Terminate message for err (RFC 5040 §4.8, §7.1). */
static void qp_term_build(struct uiw_qp *qp, const struct uiw_fail *f)
{
	struct uiw_term *t = &qp->term;
	uint8_t tmp[UIW_TERM_MAX_LEN];

	memset(t, 0, sizeof(*t));
	t->err = f->err;
	uiw_term_hdrct(f->err, f->have_seg, f->have_rdmap, t);
	if (t->m)
		t->ddp_seg_len = qp->rx.len == UIW_SEG_LEN_UNKNOWN ? 0 :
				 (uint16_t)qp->rx.len;
	if (t->d) {
		memcpy(t->ddp_hdr, qp->rx.hdr, sizeof(t->ddp_hdr));
		t->ddp_hdr_len = (uint8_t)uiw_ddp_hdr_len(qp->rx.hdr[0]);
	}
	if (t->r) {
		memcpy(t->rdmap_hdr, qp->rx.q[UIW_QN_READ_REQ].buf,
		       UIW_READ_REQ_LEN);
		t->rdmap_hdr_len = (uint8_t)(t->d ?
			uiw_term_rdmap_hdr_len(t->ddp_hdr[1]) :
			UIW_READ_REQ_LEN);
		if (t->rdmap_hdr_len == 0)
			t->r = false;
	}
	if (uiw_term_encode(tmp, sizeof(tmp), t) == 0) {
		/* The copies disagree with each other: send the cause alone. */
		t->m = t->d = t->r = false;
	}
}

void uiw_qp_fail(struct uiw_qp *qp, const struct uiw_fail *f,
		 struct uiw_qp_act *act)
{
	int status;
	bool term;

	if (qp->state == UIW_QPS_TERMINATE || qp->state == UIW_QPS_ERROR)
		return;
	/* While the framing holds its segments (a responder that has not
	 * yet received a valid unit sends none, framing.h), not even a
	 * Terminate goes: the connection just closes. */
	term = f->send_term && qp->attached && !qp->tx_held;
	qp_set_cause(qp, f->err, f->origin, term, f->detail);
	if (term) {
		qp_term_build(qp, f);
		qp->term_pending = true;
		qp->term_built = false;
		qp->state = UIW_QPS_TERMINATE;
		act->kick = true;
	} else {
		qp->state = UIW_QPS_ERROR;
		if (qp->attached)
			qp->close_req = true;
	}
	qp->rx.stopped = true;
	UIW_DBG(2, "qp %u: %s", qp->qpn, qp->term_msg);
	uiw_tx_abort(qp);
	/* The async event: an access error when the error's completion
	 * status (the one table, err.c) is a protection error's. */
	status = uiw_err_wc_status(f->err, f->origin == UIW_TERM_REMOTE);
	uiw_async_push(qp->dev, status == UIW_WC_LOC_PROT_ERR ||
		       status == UIW_WC_REM_ACCESS_ERR ?
		       UIW_EVENT_QP_ACCESS_ERR : UIW_EVENT_QP_FATAL, qp, NULL,
		       NULL);
	if (f->status >= 0)
		status = f->status;
	qp_flush(qp, f->sq_idx, f->rq_idx, status, act);
}

/* The oldest send WR that has started (for a lost connection or a
 * Terminate that names no WR). */
static int64_t qp_oldest_started(struct uiw_qp *qp)
{
	uint32_t c;

	for (c = qp->sq_head; c != qp->sq_next; c++) {
		struct uiw_sq_slot *s = uiw_sq_at(qp, c);

		if (s->state == UIW_SQ_ACTIVE || s->state == UIW_SQ_BUILT)
			return c;
	}
	return -1;
}

int64_t uiw_qp_find_term_wr(struct uiw_qp *qp, const struct uiw_term *t)
{
	struct uiw_ddp_hdr h;
	size_t hl;
	uint32_t c;

	/* Only a WR the copied header names is blamed: the others are in
	 * an indeterminate state (RFC 5040 §6.2.1) and are flushed. */
	if (!t->d || uiw_ddp_hdr_decode(t->ddp_hdr, t->ddp_hdr_len, &h, &hl) !=
	    UIW_OK || !hl || h.tagged || h.qn > UIW_QN_READ_REQ)
		return -1;
	for (c = qp->sq_head; c != qp->sq_next; c++) {
		struct uiw_sq_slot *s = uiw_sq_at(qp, c);

		if (s->state != UIW_SQ_ACTIVE && s->state != UIW_SQ_BUILT)
			continue;
		/* The queue and MSN of the WR's untagged message (wr.h). */
		if (s->row->msn_qn == h.qn && s->msn == h.msn)
			return c;
	}
	return -1;
}

void uiw_qp_close_check(struct uiw_qp *qp, struct uiw_qp_act *act)
{
	if (!qp->attached || qp->close_called)
		return;
	/* RFC 5040 §6: Closing ends once the queued work has gone out, the
	 * Reads have their Responses (unless the peer cannot send any more)
	 * and the peer's Read Requests are answered. */
	if (qp->state == UIW_QPS_CLOSING && qp->seg_count == 0 &&
	    qp->msg.kind == UIW_MSG_NONE && qp->sq_next == qp->sq_tail &&
	    qp->irq_next == qp->irq_tail &&
	    (qp->rx_fin || (qp->orq_count == 0 && qp->ext.aoq_count == 0)))
		qp->close_req = true;
	if (qp->close_req && qp->seg_count == 0 && !qp->term_pending) {
		qp->close_called = true;
		act->close = true;
		act->abortive = false;
	}
}

/* ---- Callbacks and deferred work ----------------------------------------- */

static void dev_cq_overflow(struct uiw_device *dev, struct uiw_cq *cq,
			    struct uiw_qp *except);

/* Under qp->lock: keeps the LLP from detaching while a callback runs;
 * false when there is nothing to call. */
static bool qp_cb_pin(struct uiw_qp *qp, const struct uiw_qp_act *act,
		      const struct uiw_llp_ops **ops, void **ctx)
{
	if ((!act->kick && !act->close) || !qp->attached)
		return false;
	*ops = qp->ops;
	*ctx = qp->ctx;
	atomic_fetch_add(&qp->cb_active, 1);
	return true;
}

/* Without qp->lock: calls the LLP, then unpins.  The lock is taken only
 * to wake a detach that waits for the callback. */
static void qp_cb_run(struct uiw_qp *qp, const struct uiw_qp_act *act,
		      const struct uiw_llp_ops *ops, void *ctx)
{
	struct uiw_qp *prev = cb_qp;

	cb_qp = qp;
	if (act->close)
		ops->close(ctx, act->abortive);
	else
		ops->kick(ctx);
	cb_qp = prev;
	if (atomic_fetch_sub(&qp->cb_active, 1) == 1 &&
	    atomic_load(&qp->cb_waiters) > 0) {
		pthread_mutex_lock(&qp->lock);
		pthread_cond_broadcast(&qp->cond);
		pthread_mutex_unlock(&qp->lock);
	}
}

void uiw_qp_act_pin(struct uiw_qp *qp, struct uiw_qp_act *act)
{
	if (!act->pinned)
		act->pinned = qp_cb_pin(qp, act, &act->ops, &act->ctx);
}

static void qp_callbacks(struct uiw_qp *qp, const struct uiw_qp_act *act)
{
	const struct uiw_llp_ops *ops;
	void *ctx;
	bool pinned;

	if (act->pinned) {
		qp_cb_run(qp, act, act->ops, act->ctx);
		return;
	}
	if (!act->kick && !act->close)
		return;
	pthread_mutex_lock(&qp->lock);
	pinned = qp_cb_pin(qp, act, &ops, &ctx);
	pthread_mutex_unlock(&qp->lock);
	if (pinned)
		qp_cb_run(qp, act, ops, ctx);
}

/* Wakes the waiters of the CQs act names (no lock held). */
static void act_wake(const struct uiw_qp_act *act)
{
	int i;

	for (i = 0; i < 2; i++)
		if (act->wake[i])
			uiw_cq_wake(act->wake[i]);
}

void uiw_qp_act_do(struct uiw_qp *qp, const struct uiw_qp_act *act)
{
	int i;

	act_wake(act);
	for (i = 0; i < 2; i++)
		if (act->ovf[i])
			dev_cq_overflow(qp->dev, act->ovf[i], qp);
	qp_callbacks(qp, act);
}

/* RFC 5040 §8.1.1 rule 10: an overflowed CQ affects only the streams
 * that use it: each goes to Error (with a Terminate when connected).
 * The LLP of each is called without the device lock: one QP at a time,
 * pinned, then the list is looked at again (each QP is handled once). */
static void dev_cq_overflow(struct uiw_device *dev, struct uiw_cq *cq,
			    struct uiw_qp *except)
{
	for (;;) {
		const struct uiw_llp_ops *ops = NULL;
		struct uiw_qp_act act = { 0 };
		struct uiw_qp *qp, *hit = NULL;
		void *ctx = NULL;

		pthread_mutex_lock(&dev->lock);
		for (qp = dev->qps; qp && !hit; qp = qp->dev_next) {
			struct uiw_fail f = {
				.err = UIW_E_RDMAP_LOCAL_CATA,
				.origin = UIW_TERM_LOCAL,
				.send_term = true,
				.sq_idx = -1, .rq_idx = -1, .status = -1,
				.detail = "completion queue overflow",
			};
			bool failed = false;

			if (qp == except || (qp->scq != cq && qp->rcq != cq))
				continue;
			pthread_mutex_lock(&qp->lock);
			if (!qp->cq_ovf_seen) {
				qp->cq_ovf_seen = true;
				memset(&act, 0, sizeof(act));
				uiw_qp_fail(qp, &f, &act);
				uiw_qp_close_check(qp, &act);
				if (qp_cb_pin(qp, &act, &ops, &ctx))
					hit = qp;
				failed = true;
			}
			pthread_mutex_unlock(&qp->lock);
			/* the flushed completions of a QP whose LLP is not
			 * called: woken now (a hit's after the device lock) */
			if (failed && !hit)
				act_wake(&act);
		}
		pthread_mutex_unlock(&dev->lock);
		if (!hit)
			return;
		act_wake(&act);
		qp_cb_run(hit, &act, ops, ctx);
	}
}

/* ---- Creation and destruction -------------------------------------------- */

static void qp_free_mem(struct uiw_qp *qp)
{
	if (qp->sq) {
		/* The slots' arrays are slices of one allocation each. */
		free(qp->sq[0].src);
		free(qp->sq[0].sge);
		free(qp->sq[0].hold);
		free(qp->sq[0].inline_buf);
		free(qp->sq);
	}
	uiw_rq_ring_free(&qp->rq);
	free(qp->orq);
	free(qp->irq);
	free(qp->seg);
	free(qp->rx.holds);
	free(qp);
}

/*
 * Rings sized to what was asked for, each in one allocation: an idle QP
 * costs what its queues hold (test_manyqp measures it).  The inbound
 * Read queue depends on the negotiation and is made when the QP is
 * attached (qp_attach_mem).
 */
static int qp_alloc_mem(struct uiw_qp *qp)
{
	uint32_t ns = qp->cap.max_send_sge ? qp->cap.max_send_sge : 1;
	size_t inl = qp->cap.max_inline_data;
	struct iovec *src;
	struct uiw_sge *sge;
	struct uiw_mr_entry **hold;
	uint8_t *ib = NULL;
	uint32_t i;

	qp->sq = calloc(qp->sq_size, sizeof(*qp->sq));
	qp->orq_cap = UIW_MAX_ORD;
	qp->orq = calloc(qp->orq_cap, sizeof(*qp->orq));
	qp->seg = calloc(UIW_TX_SEGS, sizeof(*qp->seg));
	/* With an SRQ: room for the buffers taken from it (srq.h). */
	if (uiw_rq_ring_alloc(&qp->rq, qp->srq ?
			      uiw_srq_qp_ring(qp->srq, false) :
			      qp->cap.max_recv_wr, qp->srq ?
			      qp->srq->max_sge : qp->cap.max_recv_sge) < 0)
		return -ENOMEM;
	qp->rx.holds_cap = qp->rq.nsge + 1;
	qp->rx.holds = calloc(qp->rx.holds_cap, sizeof(*qp->rx.holds));
	if (!qp->sq || !qp->orq || !qp->seg || !qp->rx.holds)
		return -ENOMEM;
	src = calloc((size_t)qp->sq_size * ns, sizeof(*src));
	sge = calloc((size_t)qp->sq_size * ns, sizeof(*sge));
	hold = calloc((size_t)qp->sq_size * ns, sizeof(*hold));
	if (inl)
		ib = malloc((size_t)qp->sq_size * inl);
	qp->sq[0].src = src;
	qp->sq[0].sge = sge;
	qp->sq[0].hold = hold;
	qp->sq[0].inline_buf = ib;
	if (!src || !sge || !hold || (inl && !ib))
		return -ENOMEM;
	for (i = 0; i < qp->sq_size; i++) {
		struct uiw_sq_slot *s = &qp->sq[i];

		s->src = src + (size_t)i * ns;
		s->sge = sge + (size_t)i * ns;
		s->hold = hold + (size_t)i * ns;
		if (inl)
			s->inline_buf = ib + (size_t)i * inl;
	}
	return 0;
}

/* At attach (the QP is Idle, nothing in flight): the inbound Read queue
 * for the negotiated IRD (entries stay until their Response is sent: up
 * to IRD not yet built, plus one per segment in flight); with an SRQ the
 * RQ ring the framing needs (srq.h; empty while Idle). */
static int qp_attach_mem(struct uiw_qp *qp, const struct uiw_llp_params *lp)
{
	uint32_t cap = lp->ird + UIW_TX_SEGS;

	uint32_t rq = qp->srq ? uiw_srq_qp_ring(qp->srq, lp->unordered) :
		      qp->rq.size;

	if (rq != qp->rq.size &&
	    uiw_rq_ring_alloc(&qp->rq, rq, qp->rq.nsge) < 0)
		return -ENOMEM;

	if (qp->irq_cap < cap) {
		struct uiw_irq_ent *irq = calloc(cap, sizeof(*irq));

		if (!irq)
			return -ENOMEM;
		free(qp->irq);
		qp->irq = irq;
		qp->irq_cap = cap;
	}
	return 0;
}

struct uiw_qp *uiw_qp_create(struct uiw_pd *pd,
			     const struct uiw_qp_init_attr *attr)
{
	const struct uiw_qp_cap *c;
	struct uiw_device *dev;
	struct uiw_qp *qp;

	if (!pd || !attr)
		return uiw_error_null(EINVAL, "qp_create: NULL argument");
	dev = pd->dev;
	c = &attr->cap;
	if (!attr->send_cq || !attr->recv_cq)
		return uiw_error_null(EINVAL, "qp_create: send_cq and recv_cq "
				      "are needed");
	if (attr->send_cq->dev != dev || attr->recv_cq->dev != dev)
		return uiw_error_null(EINVAL, "qp_create: CQ of another "
				      "device");
	/* With an SRQ the receive capabilities are not looked at. */
	if (c->max_send_wr < 1 || c->max_send_wr > UIW_MAX_QP_WR ||
	    (!attr->srq && (c->max_recv_wr < 1 ||
			    c->max_recv_wr > UIW_MAX_QP_WR)))
		return uiw_error_null(EINVAL, "qp_create: max_send_wr and "
				      "max_recv_wr must be 1..%u",
				      UIW_MAX_QP_WR);
	if (c->max_send_sge > UIW_MAX_SGE ||
	    (!attr->srq && c->max_recv_sge > UIW_MAX_SGE))
		return uiw_error_null(EINVAL, "qp_create: at most %u SGEs",
				      UIW_MAX_SGE);
	if (attr->srq && attr->srq->pd != pd)
		return uiw_error_null(EINVAL, "qp_create: srq %u is in "
				      "another protection domain",
				      attr->srq->srqn);
	if (attr->read_sink_access & ~(unsigned)(UIW_ACCESS_LOCAL_WRITE |
	    UIW_ACCESS_REMOTE_WRITE | UIW_ACCESS_REMOTE_READ |
	    UIW_ACCESS_REMOTE_ATOMIC))
		return uiw_error_null(EINVAL, "qp_create: unknown access bits "
				      "0x%x in read_sink_access",
				      attr->read_sink_access);
	if (c->max_inline_data > UIW_MAX_INLINE)
		return uiw_error_null(EINVAL, "qp_create: max_inline_data "
				      "above %u", UIW_MAX_INLINE);
	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return uiw_error_null(ENOMEM, "qp_create: out of memory");
	qp->dev = dev;
	qp->pd = pd;
	qp->scq = attr->send_cq;
	qp->rcq = attr->recv_cq;
	qp->context = attr->qp_context;
	qp->cap = *c;
	qp->sq_sig_all = attr->sq_sig_all;
	qp->read_sink_access = attr->read_sink_access;
	qp->flush_in_error = attr->flush_in_error;
	qp->sq_size = c->max_send_wr;
	if (attr->srq) {
		qp->srq = attr->srq;
		qp->cap.max_recv_wr = qp->cap.max_recv_sge = 0;
	}
	if (qp_alloc_mem(qp) < 0) {
		qp_free_mem(qp);
		return uiw_error_null(ENOMEM, "qp_create: out of memory");
	}
	pthread_mutex_init(&qp->lock, NULL);
	pthread_cond_init(&qp->cond, NULL);
	qp->state = UIW_QPS_IDLE;
	qp->lp.ird = UIW_DEFAULT_IRD;
	qp->lp.ord = UIW_DEFAULT_ORD;
	uiw_tx_reset(qp);
	uiw_rx_reset(qp);

	pthread_mutex_lock(&dev->lock);
	if (dev->n_qp >= UIW_MAX_QP) {
		pthread_mutex_unlock(&dev->lock);
		pthread_mutex_destroy(&qp->lock);
		pthread_cond_destroy(&qp->cond);
		qp_free_mem(qp);
		return uiw_error_null(ENOMEM, "qp_create: %u QPs exist",
				      UIW_MAX_QP);
	}
	qp->qpn = dev->next_qpn++;
	if (dev->next_qpn == 0)
		dev->next_qpn = 1;
	qp->dev_next = dev->qps;
	dev->qps = qp;
	dev->n_qp++;
	pthread_mutex_unlock(&dev->lock);
	atomic_fetch_add(&pd->users, 1);
	atomic_fetch_add(&pd->qps, 1);
	atomic_fetch_add(&qp->scq->users, 1);
	atomic_fetch_add(&qp->rcq->users, 1);
	if (qp->srq)
		atomic_fetch_add(&qp->srq->users, 1);
	UIW_DBG(3, "qp %u created", qp->qpn);
	return qp;
}

/* Drops every WR without completions (the QP is going away). */
static void qp_discard(struct uiw_qp *qp)
{
	uint32_t c;

	uiw_tx_drop(qp);
	for (c = qp->sq_head; c != qp->sq_tail; c++)
		uiw_sq_at(qp, c)->state = UIW_SQ_FREE;
	qp->sq_head = qp->sq_next = qp->sq_tail;
	qp->rq.head = qp->rq.tail;
	qp->orq_count = 0;
	uiw_ext_flush(qp);
}

int uiw_qp_destroy(struct uiw_qp *qp)
{
	struct uiw_device *dev;
	struct uiw_qp **pp;
	struct uiw_qp_act act = { 0 };

	if (!qp)
		return uiw_error(EINVAL, "qp_destroy: no QP");
	dev = qp->dev;
	pthread_mutex_lock(&dev->lock);
	for (pp = &dev->qps; *pp && *pp != qp; pp = &(*pp)->dev_next)
		;
	if (!*pp) {
		pthread_mutex_unlock(&dev->lock);
		return uiw_error(EINVAL, "qp_destroy: unknown QP");
	}
	*pp = qp->dev_next;
	dev->n_qp--;
	pthread_mutex_unlock(&dev->lock);

	pthread_mutex_lock(&qp->lock);
	if (qp->attached) {
		/* Abortive disconnect: no Terminate, reset at once. */
		qp->state = UIW_QPS_ERROR;
		qp->rx.stopped = true;
		qp->term_pending = false;
		qp->close_called = true;
		act.close = true;
		act.abortive = true;
	}
	pthread_mutex_unlock(&qp->lock);
	qp_callbacks(qp, &act);

	pthread_mutex_lock(&qp->lock);
	while (qp->attached)
		pthread_cond_wait(&qp->cond, &qp->lock);
	qp_discard(qp);
	pthread_mutex_unlock(&qp->lock);

	atomic_fetch_sub(&qp->pd->users, 1);
	atomic_fetch_sub(&qp->pd->qps, 1);
	atomic_fetch_sub(&qp->scq->users, 1);
	atomic_fetch_sub(&qp->rcq->users, 1);
	if (qp->srq)
		atomic_fetch_sub(&qp->srq->users, 1);
	/* Detached and off the device's list: nothing queues an event
	 * naming it any more. */
	uiw_async_forget(dev, qp);
	pthread_mutex_destroy(&qp->lock);
	pthread_cond_destroy(&qp->cond);
	UIW_DBG(3, "qp %u destroyed", qp->qpn);
	qp_free_mem(qp);
	return 0;
}

int uiw_qp_query(struct uiw_qp *qp, struct uiw_qp_attr *attr)
{
	if (!qp || !attr)
		return uiw_error(EINVAL, "qp_query: NULL argument");
	memset(attr, 0, sizeof(*attr));
	pthread_mutex_lock(&qp->lock);
	attr->state = qp->state;
	attr->qp_num = qp->qpn;
	attr->cap = qp->cap;
	attr->ird = qp->lp.ird;
	attr->ord = qp->lp.ord;
	attr->mulpdu = qp->lp.mulpdu;
	attr->term = qp->cause;
	memcpy(attr->term_msg, qp->term_msg, sizeof(attr->term_msg));
	/* What the lower layer is and how it runs are the framing's. */
	if (qp->attached && qp->ops->query)
		qp->ops->query(qp->ctx, attr);
	pthread_mutex_unlock(&qp->lock);
	return 0;
}

void *uiw_qp_context(struct uiw_qp *qp)
{
	return qp ? qp->context : NULL;
}

uint32_t uiw_qp_num(const struct uiw_qp *qp)
{
	return qp->qpn;
}

struct uiw_device *uiw_qp_device(const struct uiw_qp *qp)
{
	return qp->dev;
}

enum uiw_qp_state uiw_qp_state(struct uiw_qp *qp)
{
	enum uiw_qp_state s;

	pthread_mutex_lock(&qp->lock);
	s = qp->state;
	pthread_mutex_unlock(&qp->lock);
	return s;
}

void uiw_qp_default_ird_ord(const struct uiw_qp *qp, uint32_t *ird,
			    uint32_t *ord)
{
	(void)qp;
	*ird = UIW_DEFAULT_IRD;
	*ord = UIW_DEFAULT_ORD;
}

/* ---- Posting ------------------------------------------------------------- */

/* flush_in_error, in Error or Terminate (whose outstanding work was
 * flushed on entry): posts are checked, then flushed at once. */
static bool post_flushes(const struct uiw_qp *qp)
{
	return qp->flush_in_error && (qp->state == UIW_QPS_ERROR ||
				      qp->state == UIW_QPS_TERMINATE);
}

static int post_check_state(struct uiw_qp *qp, bool recv)
{
	const char *what = recv ? "receive" : "send";

	if (qp->state == UIW_QPS_IDLE || qp->state == UIW_QPS_RTS ||
	    post_flushes(qp))
		return 0;
	/* flush_in_error, Closing: to verbs the QP is still connected; a
	 * receive waits and is flushed with the rest when the close ends.
	 * Nothing new is sent in Closing (RFC 5040 §6): a send fails. */
	if (qp->state == UIW_QPS_CLOSING && qp->flush_in_error && recv)
		return 0;
	if (qp->state == UIW_QPS_ERROR || qp->state == UIW_QPS_TERMINATE)
		return uiw_error(EINVAL, "qp %u: cannot post a %s in state %s "
				 "(%s)", qp->qpn, what, qps(qp->state),
				 qp->term_msg[0] ? qp->term_msg : "no cause");
	return uiw_error(EINVAL, "qp %u: cannot post a %s in state %s",
			 qp->qpn, what, qps(qp->state));
}

/* The checks every opcode shares, as its row (wr.h) describes its SGEs;
 * *total gets the payload octets. */
static int sq_post_sgl(struct uiw_qp *qp, const struct uiw_send_wr *wr,
		       const struct uiw_wr_row *w, bool inl, uint64_t *total)
{
	int i;

	*total = 0;
	if (w->sgl == UIW_WR_SGL_NONE)
		return 0;              /* sg_list is ignored */
	for (i = 0; i < wr->num_sge; i++)
		*total += wr->sg_list[i].length;
	if (*total > UIW_MAX_MSG_SIZE)
		return uiw_error(EINVAL, "qp %u: message of %llu octets, at "
				 "most %u", qp->qpn,
				 (unsigned long long)*total, UIW_MAX_MSG_SIZE);
	if (inl) {
		if (*total > qp->cap.max_inline_data)
			return uiw_error(EINVAL, "qp %u: %llu octets inline, "
					 "the QP takes at most %u", qp->qpn,
					 (unsigned long long)*total,
					 qp->cap.max_inline_data);
		return 0;
	}
	/* Local SGEs: a valid lkey of this PD covering the range; a sink
	 * (an RDMA Read's, an atomic's result) needs local write access,
	 * and an RDMA Read's what the QP asks besides (read_sink_access:
	 * the verbs layer asks for remote write, as iWARP devices do). */
	for (i = 0; i < wr->num_sge; i++) {
		const struct uiw_sge *g = &wr->sg_list[i];
		enum uiw_mr_check c;

		if (g->length == 0)
			continue;
		c = uiw_mr_check(&qp->dev->mrt, g->lkey, qp->pd,
				 w->sgl == UIW_WR_SGL_SINK ?
				 UIW_ACCESS_LOCAL_WRITE : 0,
				 g->addr, g->length);
		if (c == UIW_MRC_OK && w->read_sink && qp->read_sink_access &&
		    uiw_mr_check(&qp->dev->mrt, g->lkey, qp->pd,
				 qp->read_sink_access, g->addr,
				 g->length) != UIW_MRC_OK)
			return uiw_error(EINVAL, "qp %u: SGE %d (lkey 0x%08x): "
					 "the RDMA Read's sink lacks %s access "
					 "(read_sink_access 0x%x)", qp->qpn, i,
					 g->lkey, qp->read_sink_access &
					 UIW_ACCESS_REMOTE_WRITE ?
					 "remote write" : "the", qp->read_sink_access);
		if (c != UIW_MRC_OK)
			return uiw_error(EINVAL, "qp %u: SGE %d (lkey 0x%08x, "
					 "0x%llx+%u): %s", qp->qpn, i, g->lkey,
					 (unsigned long long)g->addr,
					 g->length, uiw_mr_check_str(c));
	}
	return 0;
}

/* The payload pieces of a WR that sends from its SGEs: the inline copy,
 * or the SGEs themselves. */
static void sq_post_src(struct uiw_sq_slot *s, const struct uiw_send_wr *wr)
{
	uint32_t off = 0;
	int i;

	if (!s->inl) {
		for (i = 0; i < wr->num_sge; i++) {
			if (!wr->sg_list[i].length)
				continue;
			s->src[s->nsrc].iov_base =
				(void *)(uintptr_t)wr->sg_list[i].addr;
			s->src[s->nsrc].iov_len = wr->sg_list[i].length;
			s->nsrc++;
		}
		return;
	}
	for (i = 0; i < wr->num_sge; i++) {
		const struct uiw_sge *g = &wr->sg_list[i];

		if (g->length)
			memcpy(s->inline_buf + off,
			       (const void *)(uintptr_t)g->addr, g->length);
		off += g->length;
	}
	if (off) {
		s->src[0].iov_base = s->inline_buf;
		s->src[0].iov_len = off;
		s->nsrc = 1;
	}
}

static int sq_post_one(struct uiw_qp *qp, const struct uiw_send_wr *wr,
		       struct uiw_qp_act *act)
{
	const unsigned flags = UIW_SEND_SIGNALED | UIW_SEND_SOLICITED |
			       UIW_SEND_INLINE | UIW_SEND_FENCE |
			       UIW_SEND_ATOMIC_MASKED;
	const struct uiw_wr_row *w;
	struct uiw_sq_slot *s;
	uint64_t total;
	bool inl;
	int ret;

	ret = post_check_state(qp, false);
	if (ret)
		return ret;
	w = uiw_wr_row(wr->opcode);
	if (!w)
		return uiw_error(EINVAL, "qp %u: unknown send opcode %d",
				 qp->qpn, wr->opcode);
	if (wr->send_flags & ~flags)
		return uiw_error(EINVAL, "qp %u: unknown send flags 0x%x",
				 qp->qpn, wr->send_flags & ~flags);
	if ((wr->send_flags & UIW_SEND_ATOMIC_MASKED) && !w->masked_ok)
		return uiw_error(EINVAL, "qp %u: UIW_SEND_ATOMIC_MASKED is "
				 "for atomics only", qp->qpn);
	if (w->post_check) {
		ret = w->post_check(qp, wr);
		if (ret)
			return ret;
	}
	inl = (wr->send_flags & UIW_SEND_INLINE) &&
	      w->sgl == UIW_WR_SGL_SOURCE;
	if (w->sgl != UIW_WR_SGL_NONE) {
		if (wr->num_sge < 0 ||
		    (uint32_t)wr->num_sge > qp->cap.max_send_sge)
			return uiw_error(EINVAL, "qp %u: %d SGEs, the QP takes "
					 "at most %u", qp->qpn, wr->num_sge,
					 qp->cap.max_send_sge);
		if (wr->num_sge > 0 && !wr->sg_list)
			return uiw_error(EINVAL, "qp %u: num_sge %d without "
					 "sg_list", qp->qpn, wr->num_sge);
	}
	if (qp->sq_tail - qp->sq_head >= qp->sq_size)
		return uiw_error(ENOMEM, "qp %u: send queue full (%u WRs)",
				 qp->qpn, qp->sq_size);
	ret = sq_post_sgl(qp, wr, w, inl, &total);
	if (ret)
		return ret;
	if (post_flushes(qp)) {
		struct uiw_wc wc = {
			.wr_id = wr->wr_id,
			.status = UIW_WC_WR_FLUSH_ERR,
			.opcode = w->wc_opcode,
		};

		uiw_qp_post_cqe(qp, qp->scq, &wc, act);
		return 0;
	}

	s = uiw_sq_at(qp, qp->sq_tail);
	s->wr_id = wr->wr_id;
	s->row = w;
	s->signaled = qp->sq_sig_all ||
		      (wr->send_flags & UIW_SEND_SIGNALED);
	s->solicited = wr->send_flags & UIW_SEND_SOLICITED;
	s->fence = wr->send_flags & UIW_SEND_FENCE;
	s->inl = inl;
	s->holding = false;
	s->aborted = false;
	s->read_done = false;
	s->length = (uint32_t)total;
	s->inv_stag = wr->invalidate_stag;
	s->rkey = wr->wr.rdma.rkey;
	s->raddr = wr->wr.rdma.remote_addr;
	s->imm = wr->imm_data;
	s->msn = 0;
	s->rd_got = 0;
	s->rd_last = false;
	s->segs = 0;
	s->nsrc = 0;
	s->num_sge = 0;
	if (w->sgl != UIW_WR_SGL_NONE) {
		s->num_sge = (uint32_t)wr->num_sge;
		if (wr->num_sge)
			memcpy(s->sge, wr->sg_list,
			       (size_t)wr->num_sge * sizeof(*s->sge));
	}
	if (w->sgl == UIW_WR_SGL_SOURCE)
		sq_post_src(s, wr);
	if (w->post_fill)
		w->post_fill(s, wr);
	s->state = UIW_SQ_POSTED;
	qp->sq_tail++;
	return 0;
}

int uiw_post_send(struct uiw_qp *qp, struct uiw_send_wr *wr,
		  struct uiw_send_wr **bad_wr)
{
	struct uiw_qp_act act = { 0 };
	int ret = 0, n = 0;

	if (bad_wr)
		*bad_wr = NULL;
	if (!qp)
		return uiw_error(EINVAL, "post_send: no QP");
	pthread_mutex_lock(&qp->lock);
	for (; wr; wr = wr->next, n++) {
		ret = sq_post_one(qp, wr, &act);
		if (ret)
			break;
	}
	if (ret && bad_wr)
		*bad_wr = wr;
	/* Poll mode: the work goes out at the application's next poll of
	 * the CQ (ops->poll), so that a burst of posts leaves in one
	 * sendmsg; a framing without ops->poll sends only when kicked. */
	if (n && qp->attached && qp->state == UIW_QPS_RTS &&
	    (!qp->ops->poll || !uiw_cq_defers_tx(qp->scq))) {
		act.kick = true;
		uiw_qp_act_pin(qp, &act);
	}
	pthread_mutex_unlock(&qp->lock);
	uiw_qp_act_run(qp, &act);
	return ret;
}

/* post_flushes: each receive is checked as uiw_rq_post checks it (the
 * ring is empty there), then completes flushed. */
static int rq_post_flushed(struct uiw_qp *qp, struct uiw_recv_wr *wr,
			   struct uiw_recv_wr **bad_wr, struct uiw_qp_act *act)
{
	for (; wr; wr = wr->next) {
		struct uiw_recv_wr one = *wr;
		struct uiw_wc wc = {
			.wr_id = wr->wr_id,
			.status = UIW_WC_WR_FLUSH_ERR,
			.opcode = UIW_WC_RECV,
		};
		int ret;

		one.next = NULL;
		ret = uiw_rq_post(&qp->rq, qp->dev, qp->pd,
				  qp->cap.max_recv_sge, "qp", qp->qpn, &one,
				  NULL);
		if (ret) {
			if (bad_wr)
				*bad_wr = wr;
			return ret;
		}
		qp->rq.head = qp->rq.tail;
		uiw_qp_post_cqe(qp, qp->rcq, &wc, act);
	}
	return 0;
}

int uiw_post_recv(struct uiw_qp *qp, struct uiw_recv_wr *wr,
		  struct uiw_recv_wr **bad_wr)
{
	struct uiw_qp_act act = { 0 };
	int ret;

	if (bad_wr)
		*bad_wr = NULL;
	if (!qp)
		return uiw_error(EINVAL, "post_recv: no QP");
	if (qp->srq) {
		if (bad_wr)
			*bad_wr = wr;
		return uiw_error(EINVAL, "qp %u: its receives come from srq "
				 "%u: post them with uiw_post_srq_recv",
				 qp->qpn, qp->srq->srqn);
	}
	pthread_mutex_lock(&qp->lock);
	ret = post_check_state(qp, true);
	if (ret == 0 && post_flushes(qp))
		ret = rq_post_flushed(qp, wr, bad_wr, &act);
	else if (ret == 0)
		ret = uiw_rq_post(&qp->rq, qp->dev, qp->pd,
				  qp->cap.max_recv_sge, "qp", qp->qpn, wr,
				  bad_wr);
	else if (bad_wr)
		*bad_wr = wr;
	pthread_mutex_unlock(&qp->lock);
	uiw_qp_act_run(qp, &act);
	return ret;
}

/* ---- The LLP ------------------------------------------------------------- */

/* Poll mode: uiw_cq_poll of either CQ may drive the LLP's receive. */
static void qp_pollers_add(struct uiw_qp *qp, const struct uiw_llp_ops *ops,
			   void *ctx)
{
	int i;

	for (i = 0; i < 2; i++) {
		qp->poller[i].poll = ops->poll;
		qp->poller[i].ctx = ctx;
	}
	uiw_cq_poller_add(qp->scq, &qp->poller[0]);
	if (qp->rcq != qp->scq)
		uiw_cq_poller_add(qp->rcq, &qp->poller[1]);
}

/* Before the LLP goes: waits for a poll that is calling it. */
static void qp_pollers_del(struct uiw_qp *qp)
{
	uiw_cq_poller_del(qp->scq, &qp->poller[0]);
	uiw_cq_poller_del(qp->rcq, &qp->poller[1]);
}

int uiw_qp_llp_attach(struct uiw_qp *qp, const struct uiw_llp_params *p,
		      const struct uiw_llp_ops *ops, void *ctx)
{
	struct uiw_llp_params lp;
	bool kick = false;
	int ret = 0;

	if (!qp || !p || !ops || !ops->kick || !ops->close)
		return uiw_error(EINVAL, "llp_attach: NULL argument");
	lp = *p;
	if (lp.mulpdu < UIW_MULPDU_MIN)
		return uiw_error(EINVAL, "qp %u: MULPDU %u below %u",
				 qp->qpn, lp.mulpdu, UIW_MULPDU_MIN);
	if (lp.mulpdu > UIW_MULPDU_MAX)
		lp.mulpdu = UIW_MULPDU_MAX;
	if (lp.ird > UIW_MAX_IRD || lp.ord > UIW_MAX_ORD)
		return uiw_error(EINVAL, "qp %u: IRD %u / ORD %u above the "
				 "device's %u / %u", qp->qpn, lp.ird, lp.ord,
				 UIW_MAX_IRD, UIW_MAX_ORD);
	pthread_mutex_lock(&qp->lock);
	if (qp->attached || qp->state != UIW_QPS_IDLE) {
		ret = uiw_error(EINVAL, "qp %u: attach needs an Idle QP, not "
				"%s", qp->qpn, qps(qp->state));
		goto out;
	}
	if (qp_attach_mem(qp, &lp) < 0) {
		ret = uiw_error(ENOMEM, "qp %u: attach: out of memory",
				qp->qpn);
		goto out;
	}
	qp->lp = lp;
	qp->ops = ops;
	qp->ctx = ctx;
	qp->attached = true;
	qp->close_req = qp->close_called = qp->rx_fin = false;
	memset(&qp->cause, 0, sizeof(qp->cause));
	qp->term_msg[0] = 0;
	uiw_tx_reset(qp);
	uiw_rx_reset(qp);
	uiw_rtr_attach(qp);
	qp->tx_held = lp.tx_held;
	qp->state = UIW_QPS_RTS;
	UIW_DBG(1, "qp %u: RTS, mulpdu %u ird %u ord %u%s%s", qp->qpn,
		lp.mulpdu, lp.ird, lp.ord, lp.tx_held ? " held" : "",
		lp.unordered ? " unordered" : "");
	/* Work requests posted while Idle are waiting: ask the framing to
	 * transmit (unless it holds its segments anyway). */
	kick = (qp->sq_next != qp->sq_tail || qp->rtr.tx) && !lp.tx_held;
out:
	pthread_mutex_unlock(&qp->lock);
	if (ret == 0 && ops->poll)
		qp_pollers_add(qp, ops, ctx);
	if (kick) {
		struct uiw_qp_act act = { .kick = true };

		qp_callbacks(qp, &act);
	}
	return ret;
}

void uiw_qp_llp_detach(struct uiw_qp *qp, uiw_err_t err)
{
	struct uiw_qp_act act = { 0 };
	unsigned self;

	if (!qp)
		return;
	/* Poll mode: no uiw_cq_poll calls the LLP after this. */
	qp_pollers_del(qp);
	pthread_mutex_lock(&qp->lock);
	if (!qp->attached) {
		pthread_mutex_unlock(&qp->lock);
		return;
	}
	self = cb_qp == qp ? 1 : 0;
	atomic_fetch_add(&qp->cb_waiters, 1);
	while (atomic_load(&qp->cb_active) > self)
		pthread_cond_wait(&qp->cond, &qp->lock);
	atomic_fetch_sub(&qp->cb_waiters, 1);

	if (qp->state == UIW_QPS_CLOSING && err == UIW_OK) {
		/* RFC 5040 §6: a graceful close ends in Idle; whatever is
		 * still posted is flushed. */
		qp->state = UIW_QPS_IDLE;
		uiw_tx_abort(qp);
		qp_flush(qp, -1, -1, UIW_WC_WR_FLUSH_ERR, &act);
	} else if (qp->state == UIW_QPS_RTS || qp->state == UIW_QPS_CLOSING) {
		struct uiw_fail f = {
			.err = err == UIW_OK ? UIW_E_MPA_CLOSED : err,
			.origin = UIW_TERM_LLP,
			.send_term = false,
			.sq_idx = qp_oldest_started(qp),
			.rq_idx = uiw_rx_mid_seg(qp) &&
				  qp->rq.head != qp->rq.tail &&
				  uiw_rq_at(qp, qp->rq.head)->got ?
				  (int64_t)qp->rq.head : -1,
			.status = -1,
			.detail = "the LLP connection ended",
		};

		uiw_qp_fail(qp, &f, &act);
	} else if (qp->state == UIW_QPS_TERMINATE) {
		qp->state = UIW_QPS_ERROR;
	}
	qp->term_pending = false;
	uiw_tx_drop(qp);
	uiw_rx_release_holds(qp);
	qp->attached = false;
	qp->ops = NULL;
	qp->ctx = NULL;
	pthread_cond_broadcast(&qp->cond);
	UIW_DBG(1, "qp %u: detached (%s), %s", qp->qpn, uiw_err_str(err),
		qps(qp->state));
	pthread_mutex_unlock(&qp->lock);
	act.kick = act.close = false;
	uiw_qp_act_run(qp, &act);
}

int uiw_qp_disconnect(struct uiw_qp *qp)
{
	struct uiw_qp_act act = { 0 };
	int ret = 0;

	if (!qp)
		return uiw_error(EINVAL, "qp_disconnect: no QP");
	pthread_mutex_lock(&qp->lock);
	if (qp->state == UIW_QPS_RTS && qp->attached) {
		qp->state = UIW_QPS_CLOSING;
		act.kick = true;
		uiw_qp_close_check(qp, &act);
	} else if (qp->state != UIW_QPS_CLOSING) {
		ret = uiw_error(EINVAL, "qp %u: disconnect needs a connected "
				"QP in RTS, not %s", qp->qpn, qps(qp->state));
	}
	pthread_mutex_unlock(&qp->lock);
	uiw_qp_act_run(qp, &act);
	return ret;
}

/*
 * The verbs' modify to ERR (rdma-core 44 behaviour: every outstanding
 * work request completes flushed; no Terminate is sent).  A connected
 * stream is reset as uiw_qp_destroy resets it; the framing detaches
 * later and finds the QP in Error already.
 */
int uiw_qp_set_error(struct uiw_qp *qp)
{
	struct uiw_qp_act act = { 0 };
	enum uiw_qp_state was;

	if (!qp)
		return uiw_error(EINVAL, "qp_set_error: no QP");
	pthread_mutex_lock(&qp->lock);
	was = qp->state;
	if (was != UIW_QPS_ERROR) {
		qp->state = UIW_QPS_ERROR;
		qp->rx.stopped = true;
		if (!qp->term_msg[0])
			snprintf(qp->term_msg, sizeof(qp->term_msg),
				 "moved to Error by uiw_qp_set_error in %s",
				 qps(was));
		if (qp->attached) {
			/* Abortive: what is queued is not sent, a pending
			 * Terminate included. */
			qp->term_pending = false;
			qp->close_called = true;
			act.close = true;
			act.abortive = true;
		}
		/* In Terminate every WR was flushed when it was entered. */
		if (was != UIW_QPS_TERMINATE) {
			uiw_tx_abort(qp);
			qp_flush(qp, -1, -1, UIW_WC_WR_FLUSH_ERR, &act);
		}
		UIW_DBG(1, "qp %u: %s -> Error (uiw_qp_set_error)", qp->qpn,
			qps(was));
		uiw_qp_act_pin(qp, &act);
	}
	pthread_mutex_unlock(&qp->lock);
	uiw_qp_act_run(qp, &act);
	return 0;
}

void uiw_qp_llp_fin(struct uiw_qp *qp, bool mid_unit)
{
	struct uiw_qp_act act = { 0 };

	if (!qp)
		return;
	pthread_mutex_lock(&qp->lock);
	if (qp->attached && (qp->state == UIW_QPS_RTS ||
			     qp->state == UIW_QPS_CLOSING)) {
		if (mid_unit || uiw_rx_mid_seg(qp)) {
			struct uiw_fail f = {
				.err = UIW_E_MPA_CLOSED,
				.origin = UIW_TERM_LLP,
				.send_term = false,
				.sq_idx = qp_oldest_started(qp),
				.rq_idx = -1,
				.status = -1,
				.detail = "the peer closed in the middle of "
					  "a segment",
			};

			uiw_qp_fail(qp, &f, &act);
		} else {
			/* RFC 5041 §6.2.1: the peer's graceful teardown. */
			qp->rx_fin = true;
			qp->state = UIW_QPS_CLOSING;
		}
	}
	uiw_qp_close_check(qp, &act);
	pthread_mutex_unlock(&qp->lock);
	/* Called by the LLP: it goes on sending by itself. */
	act.kick = false;
	uiw_qp_act_run(qp, &act);
}
