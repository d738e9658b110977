/*
 * Asynchronous events and uiw_qp_set_error.  Events: a QP fatal error
 * at both ends when a Terminate ends the stream (a Send with no receive
 * posted), an access error for a protection error (a Write to a bad
 * STag), none after a graceful disconnect, a CQ error when a CQ
 * overflows; the queue's bound (the oldest dropped, counted in `lost`),
 * its fd, -EAGAIN, -EINTR, a blocking wait woken by an event, and
 * destroy taking the events that name the object.  uiw_qp_set_error in
 * Idle and in RTS (each outstanding work request completes once,
 * flushed; the peer sees the connection end), twice.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lb_util.h"

#define ACC_ALL (UIW_ACCESS_LOCAL_WRITE | UIW_ACCESS_REMOTE_WRITE | \
		 UIW_ACCESS_REMOTE_READ)

/* The next event, waiting for it up to the tests' limit. */
static void next_event(struct uiw_device *dev, struct uiw_async_event *ev)
{
	int rc = uiw_device_get_async_event(dev, ev, lbu_timeout_ms());

	if (rc != 0)
		fail_msg("no async event: %d (%s)", rc, uiw_last_error());
}

/* A Send that finds no receive buffer: the responder ends the stream
 * with a Terminate (RFC 5041 §7.2: no buffer); both QPs fail. */
static void test_fatal_terminate(void **state)
{
	struct lbu_pair p;
	struct lbu_opts o;

	(void)state;
	lbu_opts_init(&o);
	LBU_OK(lbu_pair_connect(&p, &o));
	LBU_OK(lbu_no_async_event(p.cli.dev, "connected"));
	LBU_OK(lbu_post_send(&p.cli, 1, UIW_WR_SEND, UIW_SEND_SIGNALED, NULL,
			     0, 0, 0, 0, 0));
	LBU_OK(lbu_expect_async_event(p.srv.dev, lbu_timeout_ms(),
				      UIW_EVENT_QP_FATAL, p.srv.qp, NULL,
				      NULL));
	LBU_OK(lbu_expect_async_event(p.cli.dev, lbu_timeout_ms(),
				      UIW_EVENT_QP_FATAL, p.cli.qp, NULL,
				      NULL));
	LBU_OK(lbu_wait_disconnected(&p.cli));
	LBU_OK(lbu_wait_disconnected(&p.srv));
	LBU_OK(lbu_no_async_event(p.cli.dev, "after the fatal error"));
	LBU_OK(lbu_no_async_event(p.srv.dev, "after the fatal error"));
	LBU_OK(lbu_pair_destroy(&p));
}

/* A Write to an STag with a wrong key: a protection error at both
 * ends, an access error event. */
static void test_access_err(void **state)
{
	struct lbu_pair p;
	struct lbu_opts o;
	struct lbu_buf *t, *s;

	(void)state;
	lbu_opts_init(&o);
	LBU_OK(lbu_pair_connect(&p, &o));
	t = lbu_buf_alloc(&p.srv, 4096, ACC_ALL);
	s = lbu_buf_alloc(&p.cli, 4096, ACC_ALL);
	LBU_NN(t);
	LBU_NN(s);
	LBU_OK(lbu_post_send(&p.cli, 1, UIW_WR_RDMA_WRITE, UIW_SEND_SIGNALED,
			     s, 0, 100, lbu_to(t, 0), t->mr->rkey ^ 0x5a, 0));
	LBU_OK(lbu_expect_async_event(p.srv.dev, lbu_timeout_ms(),
				      UIW_EVENT_QP_ACCESS_ERR, p.srv.qp, NULL,
				      NULL));
	LBU_OK(lbu_expect_async_event(p.cli.dev, lbu_timeout_ms(),
				      UIW_EVENT_QP_ACCESS_ERR, p.cli.qp, NULL,
				      NULL));
	LBU_OK(lbu_pair_destroy(&p));
}

/* A graceful disconnect is no error. */
static void test_graceful_no_event(void **state)
{
	struct uiw_device *cd = uiw_device_open(NULL);
	struct uiw_device *sd = uiw_device_open(NULL);
	struct lbu_pair p;
	struct lbu_opts o;
	struct lbu_buf *r, *s;

	(void)state;
	assert_non_null(cd);
	assert_non_null(sd);
	lbu_opts_init(&o);
	o.cli_dev = cd;
	o.srv_dev = sd;
	LBU_OK(lbu_pair_connect(&p, &o));
	r = lbu_buf_alloc(&p.srv, 4096, ACC_ALL);
	s = lbu_buf_alloc(&p.cli, 4096, ACC_ALL);
	LBU_NN(r);
	LBU_NN(s);
	LBU_OK(lbu_post_recv(&p.srv, 7, r, 0, 4096));
	LBU_OK(lbu_post_send(&p.cli, 7, UIW_WR_SEND, UIW_SEND_SIGNALED, s, 0,
			     1000, 0, 0, 0));
	LBU_OK(lbu_expect_wc(p.srv.rcq, 7, UIW_WC_SUCCESS, UIW_WC_RECV, NULL));
	LBU_OK(lbu_pair_disconnect(&p));
	LBU_OK(lbu_no_async_event(cd, "client after a graceful disconnect"));
	LBU_OK(lbu_no_async_event(sd, "server after a graceful disconnect"));
	LBU_OK(lbu_pair_destroy(&p));
	assert_int_equal(uiw_device_close(cd), 0);
	assert_int_equal(uiw_device_close(sd), 0);
}

/* A connection whose client has a send CQ of two entries, and three
 * signalled zero-length Writes (their STag is not checked, RFC 5041
 * §5.2): the CQ overflows. */
static struct uiw_cq *overflow(struct lbu_pair *p, struct uiw_device *cd)
{
	struct uiw_cq *cq = uiw_cq_create(cd, 2);
	struct lbu_opts o;
	int i;

	assert_non_null(cq);
	lbu_opts_init(&o);
	o.cli_dev = cd;
	o.cli_scq = cq;
	LBU_OK(lbu_pair_connect(p, &o));
	for (i = 0; i < 3; i++)
		LBU_OK(lbu_post_send(&p->cli, 10 + (uint64_t)i,
				     UIW_WR_RDMA_WRITE, UIW_SEND_SIGNALED,
				     NULL, 0, 0, 0, 0, 0));
	return cq;
}

/* A CQ overflows: a CQ error, and the QP fails (RFC 5040 §8.1.1 rule
 * 10).  Destroying the QP takes its event away; the CQ's stays. */
static void test_cq_overflow(void **state)
{
	struct uiw_device *cd = uiw_device_open(NULL);
	struct uiw_async_event ev;
	struct uiw_wc wc[4];
	struct uiw_cq *cq;
	struct lbu_pair p;
	int i, got_cq = 0, got_qp = 0;

	(void)state;
	assert_non_null(cd);
	cq = overflow(&p, cd);
	for (i = 0; i < 2; i++) {
		next_event(cd, &ev);
		if (ev.type == UIW_EVENT_CQ_ERR && ev.cq == cq && !ev.qp)
			got_cq++;
		else if (ev.type == UIW_EVENT_QP_FATAL && ev.qp == p.cli.qp &&
			 !ev.cq)
			got_qp++;
	}
	assert_int_equal(got_cq, 1);
	assert_int_equal(got_qp, 1);
	assert_int_equal(uiw_cq_poll(cq, 4, wc), -EOVERFLOW);
	LBU_OK(lbu_no_async_event(cd, "after the overflow"));
	LBU_OK(lbu_pair_destroy(&p));
	assert_int_equal(uiw_cq_destroy(cq), 0);

	/* Once more, the events left queued. */
	cq = overflow(&p, cd);
	LBU_OK(lbu_wait_disconnected(&p.cli));
	LBU_OK(lbu_pair_destroy(&p));
	LBU_OK(lbu_expect_async_event(cd, 0, UIW_EVENT_CQ_ERR, NULL, NULL,
				      cq));
	LBU_OK(lbu_no_async_event(cd, "the QP destroyed"));
	assert_int_equal(uiw_cq_destroy(cq), 0);
	assert_int_equal(uiw_device_close(cd), 0);
}

/* ---- uiw_qp_set_error ---------------------------------------------- */

/* An unconnected QP of its own device, PD and CQs (idle_free ends it). */
struct idle {
	struct uiw_device *dev;
	struct uiw_pd *pd;
	struct uiw_cq *scq, *rcq;
	struct uiw_qp *qp;
};

static void idle_open(struct idle *x, uint32_t depth, int flush_in_error)
{
	struct uiw_qp_init_attr ia;

	x->dev = uiw_device_open(NULL);
	assert_non_null(x->dev);
	x->pd = uiw_pd_alloc(x->dev);
	x->scq = uiw_cq_create(x->dev, 16);
	x->rcq = uiw_cq_create(x->dev, 16);
	assert_non_null(x->pd);
	assert_non_null(x->scq);
	assert_non_null(x->rcq);
	memset(&ia, 0, sizeof(ia));
	ia.send_cq = x->scq;
	ia.recv_cq = x->rcq;
	ia.cap.max_send_wr = ia.cap.max_recv_wr = depth;
	ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
	ia.flush_in_error = flush_in_error;
	x->qp = uiw_qp_create(x->pd, &ia);
	assert_non_null(x->qp);
}

static void idle_free(struct idle *x)
{
	assert_int_equal(uiw_qp_destroy(x->qp), 0);
	assert_int_equal(uiw_cq_destroy(x->scq), 0);
	assert_int_equal(uiw_cq_destroy(x->rcq), 0);
	assert_int_equal(uiw_pd_free(x->pd), 0);
	assert_int_equal(uiw_device_close(x->dev), 0);
}

/* flush_in_error (the verbs' rule): in Error, posts complete at once,
 * flushed, each once and in order; a request that could not be posted
 * in RTS still fails, with bad_wr on it. */
static void test_flush_in_error(void **state)
{
	struct uiw_sge bad_sge = { .addr = 1, .length = 8, .lkey = 0x12345 };
	struct uiw_send_wr sw[3], *sbad;
	struct uiw_recv_wr rw[3], *rbad;
	struct uiw_wc wc[8];
	struct idle x;
	int i;

	(void)state;
	idle_open(&x, 2, 1);
	assert_int_equal(uiw_qp_set_error(x.qp), 0);
	/* More than the queues hold: nothing stays queued in Error. */
	memset(sw, 0, sizeof(sw));
	memset(rw, 0, sizeof(rw));
	for (i = 0; i < 3; i++) {
		sw[i].wr_id = 300 + (uint64_t)i;
		sw[i].opcode = i == 1 ? UIW_WR_RDMA_WRITE : UIW_WR_SEND;
		sw[i].next = i < 2 ? &sw[i + 1] : NULL;
		rw[i].wr_id = 400 + (uint64_t)i;
		rw[i].next = i < 2 ? &rw[i + 1] : NULL;
	}
	assert_int_equal(uiw_post_send(x.qp, sw, &sbad), 0);
	assert_null(sbad);
	assert_int_equal(uiw_post_recv(x.qp, rw, &rbad), 0);
	assert_null(rbad);
	assert_int_equal(uiw_cq_poll(x.scq, 8, wc), 3);
	for (i = 0; i < 3; i++) {
		assert_int_equal(wc[i].wr_id, 300 + (uint64_t)i);
		assert_int_equal(wc[i].status, UIW_WC_WR_FLUSH_ERR);
		assert_int_equal(wc[i].opcode, i == 1 ? UIW_WC_RDMA_WRITE
						      : UIW_WC_SEND);
	}
	assert_int_equal(uiw_cq_poll(x.rcq, 8, wc), 3);
	for (i = 0; i < 3; i++) {
		assert_int_equal(wc[i].wr_id, 400 + (uint64_t)i);
		assert_int_equal(wc[i].status, UIW_WC_WR_FLUSH_ERR);
		assert_int_equal(wc[i].opcode, UIW_WC_RECV);
	}
	/* Checked first: an invalid lkey fails, the ones before flushed. */
	sw[1].sg_list = &bad_sge;
	sw[1].num_sge = 1;
	assert_int_equal(uiw_post_send(x.qp, sw, &sbad), -EINVAL);
	assert_ptr_equal(sbad, &sw[1]);
	assert_int_equal(uiw_cq_poll(x.scq, 8, wc), 1);
	assert_int_equal(wc[0].wr_id, 300);
	rw[1].sg_list = &bad_sge;
	rw[1].num_sge = 1;
	assert_int_equal(uiw_post_recv(x.qp, rw, &rbad), -EINVAL);
	assert_ptr_equal(rbad, &rw[1]);
	assert_int_equal(uiw_cq_poll(x.rcq, 8, wc), 1);
	assert_int_equal(wc[0].wr_id, 400);
	LBU_OK(lbu_no_async_event(x.dev, "after flushed posts"));
	idle_free(&x);
}

/* Completions of wr_ids base .. base + n - 1 on cq, each exactly once
 * and in order; those before the first flushed one succeeded. */
static void check_once(struct uiw_cq *cq, uint64_t base, int n,
		       int flushed_only)
{
	struct uiw_wc wc[64];
	int i, flushed = 0;
	char d[256];

	assert_true(n <= 64);
	LBU_OK(lbu_wait_wc(cq, wc, n));
	for (i = 0; i < n; i++) {
		if (wc[i].wr_id != base + (uint64_t)i)
			fail_msg("completion %d: %s", i,
				 lbu_wc_str(&wc[i], d, sizeof(d)));
		if (wc[i].status == UIW_WC_WR_FLUSH_ERR)
			flushed = 1;
		else if (flushed || flushed_only ||
			 wc[i].status != UIW_WC_SUCCESS)
			fail_msg("completion %d: %s", i,
				 lbu_wc_str(&wc[i], d, sizeof(d)));
	}
	assert_true(flushed);
}

/* In Idle: what was posted completes flushed, once; posts then fail. */
static void test_set_error_idle(void **state)
{
	struct uiw_qp_attr qa;
	struct uiw_send_wr sw = { .opcode = UIW_WR_SEND,
				  .send_flags = UIW_SEND_SIGNALED }, *sbad;
	struct uiw_recv_wr rw = { 0 }, *rbad;
	struct idle x;
	int i;

	(void)state;
	idle_open(&x, 4, 0);
	for (i = 0; i < 3; i++) {
		sw.wr_id = 100 + (uint64_t)i;
		assert_int_equal(uiw_post_send(x.qp, &sw, &sbad), 0);
		rw.wr_id = 200 + (uint64_t)i;
		assert_int_equal(uiw_post_recv(x.qp, &rw, &rbad), 0);
	}
	assert_int_equal(uiw_qp_set_error(x.qp), 0);
	assert_int_equal(uiw_qp_query(x.qp, &qa), 0);
	assert_int_equal(qa.state, UIW_QPS_ERROR);
	check_once(x.scq, 100, 3, 1);
	check_once(x.rcq, 200, 3, 1);
	/* Twice is once. */
	assert_int_equal(uiw_qp_set_error(x.qp), 0);
	LBU_OK(lbu_cq_empty(x.scq, "after the second uiw_qp_set_error"));
	LBU_OK(lbu_cq_empty(x.rcq, "after the second uiw_qp_set_error"));
	assert_int_equal(uiw_post_send(x.qp, &sw, &sbad), -EINVAL);
	assert_ptr_equal(sbad, &sw);
	assert_int_equal(uiw_post_recv(x.qp, &rw, &rbad), -EINVAL);
	assert_ptr_equal(rbad, &rw);
	/* Not an error of the stack: no event. */
	LBU_OK(lbu_no_async_event(x.dev, "after uiw_qp_set_error"));
	assert_int_equal(uiw_qp_set_error(NULL), -EINVAL);
	idle_free(&x);
}

/* In RTS with Writes in flight and receives posted at both ends: each
 * completes once (the Writes already done successfully, the rest
 * flushed); the peer sees the connection end and flushes its own.  The
 * server's receive is held meanwhile (its CQ in poll mode and not
 * polled: see uiw_cq_set_poll_mode), so that the Writes cannot all be
 * gone when the client moves to Error. */
static void test_set_error_rts(void **state)
{
	struct lbu_pair p;
	struct lbu_opts o;
	struct lbu_buf *src, *dst, *r;
	struct uiw_qp_attr qa;
	struct uiw_wc wc;
	const size_t chunk = 1024 * 1024;
	const int nw = 32;              /* more than goes out at once */
	int i;

	(void)state;
	lbu_opts_init(&o);
	LBU_OK(lbu_pair_connect(&p, &o));
	src = lbu_buf_alloc(&p.cli, nw * chunk, ACC_ALL);
	dst = lbu_buf_alloc(&p.srv, nw * chunk, ACC_ALL);
	r = lbu_buf_alloc(&p.cli, 4096, ACC_ALL);
	LBU_NN(src);
	LBU_NN(dst);
	LBU_NN(r);
	for (i = 0; i < 4; i++) {
		LBU_OK(lbu_post_recv(&p.cli, 300 + (uint64_t)i, r, 0, 4096));
		LBU_OK(lbu_post_recv(&p.srv, 400 + (uint64_t)i, NULL, 0, 0));
	}
	assert_int_equal(uiw_cq_set_poll_mode(p.srv.rcq, UIW_CQ_POLL), 0);
	assert_int_equal(uiw_cq_poll(p.srv.rcq, 1, &wc), 0);
	for (i = 0; i < nw; i++)
		LBU_OK(lbu_post_send(&p.cli, 100 + (uint64_t)i,
				     UIW_WR_RDMA_WRITE, UIW_SEND_SIGNALED, src,
				     (size_t)i * chunk, chunk,
				     lbu_to(dst, (size_t)i * chunk),
				     dst->mr->rkey, 0));
	assert_int_equal(uiw_qp_set_error(p.cli.qp), 0);
	assert_int_equal(uiw_qp_set_error(p.cli.qp), 0);
	check_once(p.cli.scq, 100, nw, 0);
	check_once(p.cli.rcq, 300, 4, 1);
	assert_int_equal(lbu_qp_state(&p.cli, &qa), UIW_QPS_ERROR);
	assert_int_equal(lbu_post_send(&p.cli, 1, UIW_WR_SEND, 0, NULL, 0, 0,
				       0, 0, 0), -1);
	/* The peer: the stream ends, its receives are flushed. */
	assert_int_equal(uiw_cq_set_poll_mode(p.srv.rcq, 0), 0);
	LBU_OK(lbu_wait_disconnected(&p.srv));
	check_once(p.srv.rcq, 400, 4, 1);
	assert_true(lbu_qp_state(&p.srv, NULL) != UIW_QPS_RTS);
	LBU_OK(lbu_wait_disconnected(&p.cli));
	LBU_OK(lbu_cq_empty(p.cli.scq, "after the connection ended"));
	LBU_OK(lbu_cq_empty(p.cli.rcq, "after the connection ended"));
	LBU_OK(lbu_pair_destroy(&p));
}

/* ---- The queue ----------------------------------------------------- */

#define NQP (UIW_ASYNC_EVENTS_MAX + 6)

struct many {
	struct uiw_device *dev;
	struct uiw_pd *pd;
	struct uiw_cq *cq;
	struct uiw_srq *srq;
	struct uiw_qp *qp[NQP];
};

/* QPs of an SRQ: each uiw_qp_set_error queues one last-WQE event. */
static struct uiw_qp *srq_qp(struct many *m)
{
	struct uiw_qp_init_attr ia;
	struct uiw_qp *qp;

	memset(&ia, 0, sizeof(ia));
	ia.send_cq = ia.recv_cq = m->cq;
	ia.cap.max_send_wr = 1;
	ia.srq = m->srq;
	qp = uiw_qp_create(m->pd, &ia);
	if (!qp)
		fail_msg("uiw_qp_create: %s", uiw_last_error());
	return qp;
}

static void many_open(struct many *m)
{
	struct uiw_srq_attr sa = { .max_wr = 4 };

	memset(m, 0, sizeof(*m));
	m->dev = uiw_device_open(NULL);
	assert_non_null(m->dev);
	m->pd = uiw_pd_alloc(m->dev);
	m->cq = uiw_cq_create(m->dev, 4);
	assert_non_null(m->pd);
	assert_non_null(m->cq);
	m->srq = uiw_srq_create(m->pd, &sa, NULL);
	assert_non_null(m->srq);
}

static void many_close(struct many *m)
{
	int i;

	for (i = 0; i < NQP; i++)
		if (m->qp[i])
			assert_int_equal(uiw_qp_destroy(m->qp[i]), 0);
	assert_int_equal(uiw_srq_destroy(m->srq), 0);
	assert_int_equal(uiw_cq_destroy(m->cq), 0);
	assert_int_equal(uiw_pd_free(m->pd), 0);
	assert_int_equal(uiw_device_close(m->dev), 0);
}

static void test_queue_bound(void **state)
{
	struct uiw_async_event ev;
	struct many m;
	struct uiw_qp *a, *b, *c;
	int fd, i;

	(void)state;
	many_open(&m);
	fd = uiw_device_async_fd(m.dev);
	assert_true(fd >= 0);
	LBU_OK(lbu_no_async_event(m.dev, "a new device"));
	for (i = 0; i < NQP; i++)
		m.qp[i] = srq_qp(&m);
	assert_int_equal(uiw_qp_set_error(m.qp[0]), 0);
	assert_int_equal(lbu_fd_readable(fd, 0), 1);
	for (i = 1; i < NQP; i++)
		assert_int_equal(uiw_qp_set_error(m.qp[i]), 0);
	/* The six oldest were dropped; the next one says so. */
	next_event(m.dev, &ev);
	assert_int_equal(ev.type, UIW_EVENT_QP_LAST_WQE_REACHED);
	assert_ptr_equal(ev.qp, m.qp[6]);
	assert_int_equal(ev.lost, 6);
	for (i = 7; i < NQP; i++) {
		assert_int_equal(lbu_fd_readable(fd, 0), 1);
		assert_int_equal(uiw_device_get_async_event(m.dev, &ev, 0), 0);
		assert_ptr_equal(ev.qp, m.qp[i]);
		assert_int_equal(ev.lost, 0);
	}
	LBU_OK(lbu_no_async_event(m.dev, "the queue emptied"));
	/* Set to Error again: nothing new. */
	assert_int_equal(uiw_qp_set_error(m.qp[0]), 0);
	LBU_OK(lbu_no_async_event(m.dev, "uiw_qp_set_error twice"));

	/* A QP destroyed takes its queued events with it. */
	for (i = 0; i < NQP; i++) {
		assert_int_equal(uiw_qp_destroy(m.qp[i]), 0);
		m.qp[i] = NULL;
	}
	a = srq_qp(&m);
	b = srq_qp(&m);
	c = srq_qp(&m);
	assert_int_equal(uiw_qp_set_error(a), 0);
	assert_int_equal(uiw_qp_set_error(b), 0);
	assert_int_equal(uiw_qp_set_error(c), 0);
	assert_int_equal(uiw_qp_destroy(b), 0);
	next_event(m.dev, &ev);
	assert_ptr_equal(ev.qp, a);
	next_event(m.dev, &ev);
	assert_ptr_equal(ev.qp, c);
	LBU_OK(lbu_no_async_event(m.dev, "b destroyed"));
	assert_int_equal(uiw_qp_destroy(a), 0);
	assert_int_equal(uiw_qp_set_error(c), 0);
	assert_int_equal(uiw_qp_destroy(c), 0);
	LBU_OK(lbu_no_async_event(m.dev, "c destroyed"));
	assert_int_equal(uiw_device_get_async_event(NULL, &ev, 0), -EINVAL);
	assert_int_equal(uiw_device_get_async_event(m.dev, NULL, 0), -EINVAL);
	assert_string_equal(uiw_async_event_str(UIW_EVENT_CQ_ERR), "CQ error");
	assert_string_equal(uiw_async_event_str(0), "unknown event");
	many_close(&m);
}

/* A thread waiting for an event. */
struct waiter {
	struct uiw_device *dev;
	int timeout_ms;
	pthread_t th;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int done, rc;
	struct uiw_async_event ev;
};

static void *wait_main(void *arg)
{
	struct waiter *w = arg;
	int rc = uiw_device_get_async_event(w->dev, &w->ev, w->timeout_ms);

	pthread_mutex_lock(&w->lock);
	w->rc = rc;
	w->done = 1;
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

static void waiter_start(struct waiter *w, struct uiw_device *dev,
			 int timeout_ms)
{
	memset(w, 0, sizeof(*w));
	w->dev = dev;
	w->timeout_ms = timeout_ms;
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->cond, NULL);
	assert_int_equal(pthread_create(&w->th, NULL, wait_main, w), 0);
}

/* Until the waiter returns: poke (when given) every 10 ms, give up at
 * the tests' limit. */
static int waiter_end(struct waiter *w, void (*poke)(struct waiter *))
{
	int64_t end = lbu_now_ms() + lbu_timeout_ms();
	int rc;

	pthread_mutex_lock(&w->lock);
	while (!w->done && lbu_now_ms() < end) {
		struct timespec ts;

		pthread_mutex_unlock(&w->lock);
		if (poke)
			poke(w);
		pthread_mutex_lock(&w->lock);
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 10 * 1000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		if (!w->done)
			pthread_cond_timedwait(&w->cond, &w->lock, &ts);
	}
	rc = w->done ? w->rc : 1;
	pthread_mutex_unlock(&w->lock);
	if (rc == 1)
		fail_msg("the waiting thread did not return");
	pthread_join(w->th, NULL);
	pthread_mutex_destroy(&w->lock);
	pthread_cond_destroy(&w->cond);
	return rc;
}

static void on_usr1(int sig)
{
	(void)sig;
}

static void poke_signal(struct waiter *w)
{
	pthread_kill(w->th, SIGUSR1);
}

static void test_wait(void **state)
{
	struct sigaction sa;
	struct waiter w;
	struct many m;
	struct uiw_qp *qp;
	int64_t t0;

	(void)state;
	many_open(&m);
	/* A signal ends a wait with -EINTR (the caller decides). */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;
	sigemptyset(&sa.sa_mask);
	assert_int_equal(sigaction(SIGUSR1, &sa, NULL), 0);
	waiter_start(&w, m.dev, lbu_timeout_ms());
	assert_int_equal(waiter_end(&w, poke_signal), -EINTR);
	/* A blocking wait takes an event queued meanwhile. */
	qp = srq_qp(&m);
	waiter_start(&w, m.dev, -1);
	assert_int_equal(uiw_qp_set_error(qp), 0);
	assert_int_equal(waiter_end(&w, NULL), 0);
	assert_int_equal(w.ev.type, UIW_EVENT_QP_LAST_WQE_REACHED);
	assert_ptr_equal(w.ev.qp, qp);
	/* A timeout with nothing queued: -EAGAIN once it has passed. */
	t0 = lbu_now_ms();
	assert_int_equal(uiw_device_get_async_event(m.dev, &w.ev, 50),
			 -EAGAIN);
	assert_true(lbu_now_ms() - t0 >= 49);
	assert_int_equal(uiw_qp_destroy(qp), 0);
	many_close(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fatal_terminate),
		cmocka_unit_test(test_access_err),
		cmocka_unit_test(test_graceful_no_event),
		cmocka_unit_test(test_cq_overflow),
		cmocka_unit_test(test_set_error_idle),
		cmocka_unit_test(test_flush_in_error),
		cmocka_unit_test(test_set_error_rts),
		cmocka_unit_test(test_queue_bound),
		cmocka_unit_test(test_wait),
	};

	return cmocka_run_group_tests_name("loopback_async", tests, NULL,
					   NULL);
}
