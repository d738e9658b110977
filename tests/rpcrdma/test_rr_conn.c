/*
 * Connections of the transport over 127.0.0.1: several Requesters on
 * one listener; many calls from several threads within the credits a
 * Responder grants (RFC 8166 §3.3.1), also when it grants few; a
 * Requester that goes away mid-call (the Responder frees what it held
 * and serves the others); a Responder that goes away; timeouts (late
 * replies dropped, credits kept right); RFC 8797 private data on and
 * off; remote invalidation on and off, and the STag dead after every
 * call either way.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rr_test.h"

static void call_ok(struct uiw_rr_clnt *c, uint32_t xid,
		    const struct rt_spec *sp)
{
	char why[256];

	if (rt_call(c, xid, sp, why, sizeof(why)) != UIW_RR_OK)
		fail_msg("xid %08x n %zu op 0x%x: %s", xid, sp->n, sp->op, why);
}

static struct uiw_rr_opts opts(void)
{
	struct uiw_rr_opts o;

	uiw_rr_opts_init(&o);
	return o;
}

/* ---- The case's Responder ---------------------------------------------- */

/*
 * At file scope, and stopped by the teardown whatever the case did.  A
 * case that fails leaves through cmocka's longjmp: a Responder thread
 * left serving a struct on the stack of the case that is gone would
 * share it with the next case's (the same frame puts it at the same
 * address), two threads serving the same connections, which ends in a
 * crash or a hang instead of the failure.  For the same reason no
 * assertion runs while a thread the case started still uses the case's
 * stack (the case joins it first), nor with srv.mu held (the Responder
 * would wait on it for ever).
 */
static struct rt_srv srv;
static bool srv_running;

static void srv_start(const struct uiw_rr_opts *o)
{
	rt_srv_start(&srv, o);
	srv_running = true;
}

static void srv_stop(void)
{
	if (!srv_running)
		return;
	srv_running = false;
	rt_srv_stop(&srv);
}

static int teardown(void **state)
{
	(void)state;
	srv_stop();
	return 0;
}

/* Lets the Responder answer its first n RT_HOLD calls. */
static void release(unsigned n)
{
	pthread_mutex_lock(&srv.mu);
	srv.release = n;
	pthread_mutex_unlock(&srv.mu);
	rt_srv_kick(&srv);
}

/* ---- Many calls, many threads ------------------------------------------ */

struct worker {
	pthread_t th;
	struct uiw_rr_clnt *c;      /* shared, or NULL: connect its own */
	struct rt_srv *srv;
	unsigned id, calls, ok;
	uint32_t delay;
	char why[256];
};

static void *work(void *arg)
{
	struct worker *w = arg;
	struct uiw_rr_clnt *c = w->c ? w->c : rt_connect(w->srv, NULL);
	unsigned i;

	if (!c) {
		snprintf(w->why, sizeof(w->why), "cannot connect");
		return NULL;
	}
	for (i = 0; i < w->calls; i++) {
		/* inline calls, and every eighth a Read and a Write chunk */
		struct rt_spec sp = { .op = (w->delay ? RT_DEFER : RT_ECHO),
				      .n = i % 8 == 7 ? 65536 + i : i % 100,
				      .delay_ms = w->delay };

		if (i % 8 == 7) {
			sp.op |= RT_F_DDP;
			sp.data_ddp = sp.wchunk = true;
			sp.wlen = sp.n;
		}
		if (rt_call(c, w->id << 20 | i, &sp, w->why,
			    sizeof(w->why)) != UIW_RR_OK)
			break;
		w->ok++;
	}
	if (!w->c)
		uiw_rr_clnt_close(c);
	return NULL;
}

static void run_workers(struct worker *w, unsigned n)
{
	unsigned i, started;

	for (started = 0; started < n; started++)
		if (pthread_create(&w[started].th, NULL, work, &w[started]))
			break;
	/* every one joined before any assertion: they use w */
	for (i = 0; i < started; i++)
		pthread_join(w[i].th, NULL);
	assert_int_equal(started, n);
	for (i = 0; i < n; i++)
		if (w[i].ok != w[i].calls)
			fail_msg("worker %u: %u of %u calls: %s", i, w[i].ok,
				 w[i].calls, w[i].why);
}

static void several_clients(void **state)
{
	struct worker w[4];
	unsigned i;

	(void)state;
	srv_start(NULL);
	for (i = 0; i < 4; i++)
		w[i] = (struct worker){ .srv = &srv, .id = i + 1, .calls = 150 };
	run_workers(w, 4);
	assert_true(rt_srv_wait(&srv, &srv.ended, 4));
	assert_int_equal(rt_srv_get(&srv, &srv.accepted), 4);
	assert_int_equal(rt_srv_get(&srv, &srv.calls), 600);
	assert_int_equal(rt_srv_get(&srv, &srv.bad_calls), 0);
	assert_int_equal(srv.total.calls, 600);
	assert_int_equal(srv.total.replies, 600);
	srv_stop();
}

/* Threads share one Requester; the Responder holds each call a little
 * so that they pile up; never more at once than granted. */
static void threads_credits(unsigned srv_credits, unsigned nthreads)
{
	struct uiw_rr_opts so = opts();
	struct rr_clnt_credits cr;
	struct uiw_rr_stats st;
	struct worker w[8];
	struct uiw_rr_clnt *c;
	unsigned i;

	so.credits = srv_credits;
	srv_start(&so);
	c = rt_connect(&srv, NULL);
	assert_non_null(c);
	for (i = 0; i < nthreads; i++)
		w[i] = (struct worker){ .c = c, .srv = &srv, .id = i + 1,
					.calls = 60, .delay = 1 };
	run_workers(w, nthreads);
	rr_clnt_credits(c, &cr);
	uiw_rr_clnt_stats(c, &st);
	/* §3.3.1: never more unacknowledged calls than granted (the
	 * Responder grants what it has posted: its credits) */
	assert_int_equal(cr.over_grant, 0);
	assert_true(cr.peak <= srv_credits);
	assert_true(rt_srv_get(&srv, &srv.max_held) <= srv_credits);
	assert_true(cr.peak > 1);          /* the calls did overlap */
	assert_int_equal(cr.grant, srv_credits);
	assert_int_equal(cr.outstanding, 0);
	if (srv_credits < nthreads)
		assert_true(st.credit_waits > 0);
	assert_int_equal(st.calls, nthreads * 60);
	uiw_rr_clnt_close(c);
	srv_stop();
}

static void threads_default_credits(void **state)
{
	(void)state;
	threads_credits(64, 8);
}

static void threads_few_credits(void **state)
{
	(void)state;
	threads_credits(2, 8);
}

/* A call whose Read chunk was pulled is held by the Responder while
 * many others come through the same connection (with few credits, the
 * receive buffers go round many times): it is answered intact. */
struct held_call {
	pthread_t th;
	struct uiw_rr_clnt *c;
	uint32_t xid;
	enum uiw_rr_status st;
	char why[256];
};

static void *held_call_run(void *arg)
{
	struct held_call *h = arg;
	struct rt_spec sp = { .op = RT_HOLD | RT_F_DDP, .n = 65536,
			      .data_ddp = true, .wchunk = true, .wlen = 65536,
			      .fill = 100, .timeout_ms = RT_WAIT_MS };

	h->st = rt_call(h->c, 0xabc, &sp, h->why, sizeof(h->why));
	return NULL;
}

static void held_while_others_pass(void **state)
{
	struct uiw_rr_opts so = opts();
	struct held_call h = { 0 };
	char why[256] = "";
	bool held;
	unsigned i;

	(void)state;
	so.credits = 4;
	srv_start(&so);
	h.c = rt_connect(&srv, NULL);
	assert_non_null(h.c);
	{
		struct rt_spec sp = { .op = RT_ECHO };

		call_ok(h.c, 1, &sp);      /* the grant: 4 */
	}
	assert_int_equal(pthread_create(&h.th, NULL, held_call_run, &h), 0);
	/* (the held call's thread uses h until it is joined) */
	held = rt_srv_wait(&srv, &srv.calls, 2);
	for (i = 0; held && i < 60; i++) {
		struct rt_spec sp = { .op = RT_ECHO | RT_F_DDP,
				      .n = i % 2 ? 5000 + i : 40 + i,
				      .data_ddp = true, .trailer = i };

		if (rt_call(h.c, 0x100 + i, &sp, why, sizeof(why)) != UIW_RR_OK)
			break;
	}
	release(1);
	pthread_join(h.th, NULL);
	assert_true(held);
	if (why[0])
		fail_msg("call %u among the others: %s", i, why);
	if (h.st != UIW_RR_OK)
		fail_msg("the held call: %s", h.why);
	assert_int_equal(rt_srv_get(&srv, &srv.reply_errors), 0);
	uiw_rr_clnt_close(h.c);
	srv_stop();
}

/* Calls with Read chunks held by the Responder: its assembly memory
 * is bounded (RR_ABUF_BUDGET max_calls); the calls beyond wait for a
 * buffer to come back and are then served. */
static void *budget_call_run(void *arg)
{
	struct held_call *h = arg;
	struct rt_spec sp = { .op = RT_HOLD, .n = 1u << 20, .data_ddp = true,
			      .timeout_ms = RT_WAIT_MS };

	h->st = rt_call(h->c, h->xid, &sp, h->why, sizeof(h->why));
	return NULL;
}

static void assembly_budget(void **state)
{
	struct uiw_rr_opts so = opts();
	struct held_call h[8];
	struct uiw_rr_clnt *c;
	unsigned i, started;
	bool handed;

	(void)state;
	so.max_call = (1u << 20) + 4096;    /* 4 such calls in the budget */
	srv_start(&so);
	c = rt_connect(&srv, NULL);
	assert_non_null(c);
	{
		struct rt_spec sp = { .op = RT_ECHO };

		call_ok(c, 1, &sp);         /* the grant */
	}
	for (started = 0; started < 8; started++) {
		h[started] = (struct held_call){ .c = c,
						 .xid = 0x5000 + started };
		if (pthread_create(&h[started].th, NULL, budget_call_run,
				   &h[started]))
			break;
	}
	/* (the threads use h until they are joined) */
	handed = started == 8 && rt_srv_wait(&srv, &srv.calls, 1 + 4);
	release(8);
	for (i = 0; i < started; i++)
		pthread_join(h[i].th, NULL);
	assert_int_equal(started, 8);
	assert_true(handed);
	for (i = 0; i < 8; i++)
		if (h[i].st != UIW_RR_OK)
			fail_msg("call %u: %s", i, h[i].why);
	/* never more than the budget's 4 handed out at once */
	assert_true(rt_srv_get(&srv, &srv.max_held) <= 4);
	assert_int_equal(rt_srv_get(&srv, &srv.calls), 9);
	uiw_rr_clnt_close(c);
	srv_stop();
}

/* ---- Ends -------------------------------------------------------------- */

struct pending {
	pthread_t th;
	struct uiw_rr_clnt *c;
	struct rt_spec sp;
	enum uiw_rr_status st;
	uint64_t done_ms;
};

/* A call whose Requester is closed under it: no uiw_rr_call_done
 * afterwards (the Requester is gone). */
static void *pending_call(void *arg)
{
	struct pending *p = arg;
	uint8_t head[24] = { 0 };
	struct uiw_rr_iov iov = { head, sizeof(head), false };
	struct uiw_rr_call call = { .iov = &iov, .niov = 1,
				    .reply_max = 64 };

	rt_put32(head, 0x7777);
	rt_put32(head + 4, p->sp.op);
	uiw_rr_call(p->c, &call);
	p->st = call.status;
	p->done_ms = rr_now_ms();
	return NULL;
}

static void disconnect_mid_call(void **state)
{
	struct rt_spec sp = { .op = RT_ECHO, .n = 10 };
	struct pending p = { .sp = { .op = RT_HOLD } };
	struct uiw_rr_clnt *other;
	uint64_t t0;
	bool held;

	(void)state;
	srv_start(NULL);
	other = rt_connect(&srv, NULL);
	p.c = rt_connect(&srv, NULL);
	assert_non_null(other);
	assert_non_null(p.c);
	assert_int_equal(pthread_create(&p.th, NULL, pending_call, &p), 0);
	/* (the call's thread uses p until it is joined) */
	held = rt_srv_wait(&srv, &srv.calls, 1);
	/* closing completes the call at once with DISCONNECTED */
	t0 = rr_now_ms();
	uiw_rr_clnt_close(p.c);
	pthread_join(p.th, NULL);
	assert_true(held);
	assert_int_equal(p.st, UIW_RR_DISCONNECTED);
	assert_true(p.done_ms - t0 < 2000);
	/* the Responder sees the connection end and frees what it held */
	assert_true(rt_srv_wait(&srv, &srv.ended, 1));
	assert_int_equal(rt_srv_get(&srv, &srv.held_now), 0);
	/* and serves the others */
	call_ok(other, 1, &sp);
	sp = (struct rt_spec){ .op = RT_ECHO | RT_F_DDP, .n = 1 << 20,
			       .data_ddp = true, .wchunk = true,
			       .wlen = 1 << 20 };
	call_ok(other, 2, &sp);
	uiw_rr_clnt_close(other);
	srv_stop();
}

/* A big call made from a thread, left without uiw_rr_call_done. */
struct big_call {
	pthread_t th;
	struct uiw_rr_clnt *c;
	struct uiw_rr_iov iov[3];
	struct uiw_rr_call call;
};

static void *big_call_run(void *arg)
{
	struct big_call *b = arg;

	uiw_rr_call(b->c, &b->call);
	return NULL;
}

/* A Requester gone while its 16 MiB Read chunk is being read. */
static void disconnect_during_read(void **state)
{
	struct rt_spec small = { .op = RT_ECHO, .n = 100 };
	struct uiw_rr_clnt *other;
	uint8_t *big = malloc(16u << 20);
	unsigned k;

	(void)state;
	assert_non_null(big);
	srv_start(NULL);
	other = rt_connect(&srv, NULL);
	assert_non_null(other);
	for (k = 0; k < 3; k++) {
		uint8_t head[20] = { 0 }, tail[4] = { 0 };
		struct big_call b = { .iov = {
			{ head, 20, false }, { big, 16u << 20, true },
			{ tail, 4, false } } };
		struct rr_clnt_credits cr;
		uint64_t end = rr_now_ms() + RT_WAIT_MS;

		b.call.iov = b.iov;
		b.call.niov = 3;
		b.call.reply_max = 64;
		rt_put32(head, 0x8000 + k);
		rt_put32(head + 4, RT_HOLD);
		rt_put32(head + 16, 16u << 20);
		rt_fill(big, 16u << 20, 0x8000 + k);
		b.c = rt_connect(&srv, NULL);
		assert_non_null(b.c);
		/* taken by the Responder's thread before it goes: a
		 * connection that ends before that thread has seen it
		 * established is freed unseen, and its end never counted */
		assert_true(rt_srv_wait(&srv, &srv.accepted, k + 2));
		assert_int_equal(pthread_create(&b.th, NULL, big_call_run, &b),
				 0);
		/* once the call is on its way, the Requester goes (the
		 * call's thread uses b until it is joined) */
		do {
			rr_clnt_credits(b.c, &cr);
			sched_yield();
		} while (!cr.outstanding && rr_now_ms() < end);
		uiw_rr_clnt_close(b.c);
		pthread_join(b.th, NULL);
		assert_int_equal(cr.outstanding, 1);
		assert_int_equal(b.call.status, UIW_RR_DISCONNECTED);
		/* its end counted before the next one comes */
		assert_true(rt_srv_wait(&srv, &srv.ended, k + 1));
		call_ok(other, 100 + k, &small);
	}
	free(big);
	/* every one of them ended at the Responder, holding nothing
	 * (once the thread has counted its replies to the other) */
	assert_true(rt_srv_wait(&srv, &srv.replies, 3));
	assert_int_equal(rt_srv_get(&srv, &srv.held_now), 0);
	call_ok(other, 200, &small);
	uiw_rr_clnt_close(other);
	srv_stop();
}

static void responder_goes_away(void **state)
{
	struct pending p = { .sp = { .op = RT_HOLD } };
	uint64_t t0;
	bool held;

	(void)state;
	srv_start(NULL);
	p.c = rt_connect(&srv, NULL);
	assert_non_null(p.c);
	assert_int_equal(pthread_create(&p.th, NULL, pending_call, &p), 0);
	/* (the call's thread uses p until it is joined) */
	held = rt_srv_wait(&srv, &srv.calls, 1);
	t0 = rr_now_ms();
	srv_stop();
	pthread_join(p.th, NULL);
	assert_true(held);
	assert_int_equal(p.st, UIW_RR_DISCONNECTED);
	assert_true(p.done_ms - t0 < 5000);
	uiw_rr_clnt_close(p.c);
}

/* ---- Timeouts ---------------------------------------------------------- */

static void timeout_late_reply(void **state)
{
	struct rt_spec late = { .op = RT_HOLD, .timeout_ms = 100,
				.fill = 20000 };
	struct rt_spec sp = { .op = RT_ECHO, .n = 30 };
	struct rr_clnt_credits cr;
	struct uiw_rr_stats st;
	struct uiw_rr_clnt *c;
	char why[256];
	uint64_t t0;

	(void)state;
	srv_start(NULL);
	c = rt_connect(&srv, NULL);
	assert_non_null(c);
	call_ok(c, 1, &sp);
	/* its reply (20 KiB) comes in the Reply chunk, after the call
	 * has given up: the chunk is still ours then.  The Responder
	 * holds it until then, so the call can only end by its own
	 * timeout, however late a loaded machine lets it see that.  The
	 * call itself is inline: a Read chunk of the caller's memory is
	 * deregistered when the call gives up, and a Responder that had
	 * not read it by then would end the connection */
	t0 = rr_now_ms();
	assert_int_equal(rt_call(c, 2, &late, why, sizeof(why)),
			 UIW_RR_TIMEDOUT);
	assert_true(rr_now_ms() - t0 >= 100);
	rr_clnt_credits(c, &cr);
	assert_int_equal(cr.zombies, 1);      /* it keeps its credit */
	assert_int_equal(cr.outstanding, 1);
	/* the Responder answers late; the next call finds that reply,
	 * drops it, and gets its own */
	release(1);
	assert_true(rt_srv_wait(&srv, &srv.deferred_done, 1));
	call_ok(c, 3, &sp);
	uiw_rr_clnt_stats(c, &st);
	assert_int_equal(st.dropped, 1);
	rr_clnt_credits(c, &cr);
	assert_int_equal(cr.zombies, 0);
	assert_int_equal(cr.outstanding, 0);
	assert_int_equal(rt_srv_get(&srv, &srv.reply_errors), 0);
	assert_int_equal(rt_srv_get(&srv, &srv.ended), 0);       /* the connection lives on */
	uiw_rr_clnt_close(c);
	srv_stop();
}

/* Calls the Responder drops: they time out; with every credit held by
 * them the oldest is forgotten, so that calls go on. */
static void timeout_dropped_calls(void **state)
{
	struct uiw_rr_opts so = opts();
	struct rt_spec drop = { .op = RT_DROP, .timeout_ms = 100 };
	struct rt_spec sp = { .op = RT_ECHO, .n = 7 };
	struct rr_clnt_credits cr;
	struct uiw_rr_clnt *c;
	char why[256];
	unsigned i;

	(void)state;
	so.credits = 2;
	srv_start(&so);
	c = rt_connect(&srv, NULL);
	assert_non_null(c);
	call_ok(c, 1, &sp);             /* the grant: 2 */
	for (i = 0; i < 4; i++) {
		assert_int_equal(rt_call(c, 10 + i, &drop, why, sizeof(why)),
				 UIW_RR_TIMEDOUT);
		/* dropped by the Responder, its receive posted again,
		 * before a later call may forget it: a call sent in its
		 * place while the Responder has not taken it finds no
		 * receive, which ends the connection (RFC 5041 §7.1) */
		assert_true(rt_srv_wait(&srv, &srv.drops, i + 1));
	}
	call_ok(c, 20, &sp);
	rr_clnt_credits(c, &cr);
	assert_true(cr.zombies <= 2);
	assert_int_equal(cr.over_grant, 0);
	assert_int_equal(rt_srv_get(&srv, &srv.drops), 4);
	uiw_rr_clnt_close(c);
	srv_stop();
}

/* ---- RFC 8797 ---------------------------------------------------------- */

static void private_data(bool clnt_pd, bool srv_pd, uint32_t csend,
			 uint32_t crecv, uint32_t want_send, uint32_t want_recv)
{
	struct uiw_rr_opts so = opts(), co = opts();
	struct uiw_rr_clnt *c;
	uint32_t st, rt;
	bool inv;
	unsigned n;

	so.private_data = srv_pd;
	co.private_data = clnt_pd;
	co.inline_send = csend;
	co.inline_recv = crecv;
	srv_start(&so);
	c = rt_connect(&srv, &co);
	assert_non_null(c);
	uiw_rr_clnt_params(c, &st, &rt, &inv);
	assert_int_equal(st, want_send);
	assert_int_equal(rt, want_recv);
	assert_int_equal(inv, clnt_pd && srv_pd);
	/* every size around the thresholds goes through */
	for (n = 900; n < 1200; n += 7) {
		struct rt_spec sp = { .op = RT_ECHO, .n = n, .trailer = 1 };

		call_ok(c, n, &sp);
		sp.data_ddp = true;
		sp.op |= RT_F_DDP;
		call_ok(c, 0x10000 + n, &sp);
	}
	uiw_rr_clnt_close(c);
	srv_stop();
}

static void private_data_on_off(void **state)
{
	(void)state;
	/* RFC 8166 §3.3.3: 1024 without it, either way */
	private_data(false, true, 4096, 4096, 1024, 1024);
	private_data(true, false, 4096, 4096, 1024, 1024);
	private_data(false, false, 4096, 4096, 1024, 1024);
	/* RFC 8797 §4.2: the smaller of own send and peer's receive */
	private_data(true, true, 8192, 2048, 4096, 2048);
	private_data(true, true, 1024, 1024, 1024, 1024);
}

/* ---- Remote invalidation ----------------------------------------------- */

/* A call with a Write chunk of the caller's buf, from a thread. */
struct wcall {
	pthread_t th;
	struct uiw_rr_clnt *c;
	uint32_t xid, op;
	uint8_t head[20], tail[4], data[3000], *buf;
	struct uiw_rr_iov iov[3];
	struct uiw_rr_call call;
	int ret;
};

static void *wcall_run(void *arg)
{
	struct wcall *w = arg;

	rt_put32(w->head, w->xid);
	rt_put32(w->head + 4, w->op);
	rt_put32(w->head + 16, sizeof(w->data));
	rt_fill(w->data, sizeof(w->data), w->xid);
	memset(w->tail, 0, sizeof(w->tail));
	w->iov[0] = (struct uiw_rr_iov){ w->head, 20, false };
	w->iov[1] = (struct uiw_rr_iov){ w->data, sizeof(w->data), true };
	w->iov[2] = (struct uiw_rr_iov){ w->tail, 4, false };
	memset(&w->call, 0, sizeof(w->call));
	w->call.iov = w->iov;
	w->call.niov = 3;
	w->call.wt[0] = (struct uiw_rr_wtarget){ w->buf, sizeof(w->data) };
	w->call.nwt = 1;
	w->call.reply_max = 64;
	w->ret = uiw_rr_call(w->c, &w->call);
	return NULL;
}

/* Reads memory the RNIC writes into (as the Responder's RDMA Write
 * lands): a race by design, which ThreadSanitizer is told of. */
__attribute__((no_sanitize_thread))
static bool poked(const uint8_t *p)
{
	unsigned i;

	for (i = 0; i < 8; i++)
		if (p[i] != RT_POKE)
			return false;
	return true;
}

static void poke(void)
{
	pthread_mutex_lock(&srv.mu);
	srv.kept = false;
	srv.poke = true;
	srv.poked = false;
	pthread_mutex_unlock(&srv.mu);
	rt_srv_kick(&srv);
}

static void remote_inv(bool clnt_inv, bool srv_inv)
{
	struct uiw_rr_opts so = opts(), co = opts();
	struct wcall w = { .xid = 1, .op = RT_HOLD | RT_F_DDP | RT_F_KEEP };
	struct rt_spec sp = { .op = RT_ECHO };
	struct uiw_rr_stats cs;
	uint8_t buf[3000];
	uint64_t end = rr_now_ms() + RT_WAIT_MS;
	char why[256];
	bool inv, held, landed = false;

	so.remote_inv = srv_inv;
	co.remote_inv = clnt_inv;
	srv_start(&so);
	w.c = rt_connect(&srv, &co);
	assert_non_null(w.c);
	uiw_rr_clnt_params(w.c, NULL, NULL, &inv);
	assert_int_equal(inv, clnt_inv && srv_inv);
	memset(buf, 0xee, sizeof(buf));
	w.buf = buf;
	/* while the call is held, its Write chunk takes a poke: the way
	 * of poking works */
	assert_int_equal(pthread_create(&w.th, NULL, wcall_run, &w), 0);
	/* (the call's thread uses w and buf until it is joined) */
	held = rt_srv_wait(&srv, &srv.calls, 1);
	if (held) {
		poke();
		while (!(landed = poked(buf)) && rr_now_ms() < end)
			sched_yield();
	}
	release(1);
	pthread_join(w.th, NULL);
	assert_true(held);
	assert_true(landed);
	assert_int_equal(w.ret, 0);
	assert_int_equal(w.call.wlen[0], sizeof(buf));
	assert_int_equal(rt_check(buf, sizeof(buf), 1), sizeof(buf));
	uiw_rr_call_done(w.c, &w.call);
	uiw_rr_clnt_stats(w.c, &cs);
	assert_int_equal(cs.remote_invalidations, clnt_inv && srv_inv);
	/* RFC 8166 §4.4.1: the call has returned, its STag is dead
	 * (invalidated by the Responder's Send, or deregistered): the
	 * same RDMA Write fails now, ends the connection and leaves the
	 * caller's memory alone */
	poke();
	assert_true(rt_srv_wait(&srv, &srv.ended, 1));
	assert_true(srv.poked);
	assert_int_equal(rt_check(buf, sizeof(buf), 1), sizeof(buf));
	assert_int_equal(srv.total.remote_invalidations, clnt_inv && srv_inv);
	assert_int_equal(rt_call(w.c, 2, &sp, why, sizeof(why)),
			 UIW_RR_DISCONNECTED);
	uiw_rr_clnt_close(w.c);
	srv_stop();
}

static void remote_invalidation(void **state)
{
	(void)state;
	remote_inv(true, true);
	remote_inv(false, true);
	remote_inv(true, false);
}

int main(int argc, char **argv)
{
#define T(f) cmocka_unit_test_teardown(f, teardown)
	const struct CMUnitTest tests[] = {
		T(several_clients),
		T(threads_default_credits),
		T(threads_few_credits),
		T(held_while_others_pass),
		T(assembly_budget),
		T(disconnect_mid_call),
		T(disconnect_during_read),
		T(responder_goes_away),
		T(timeout_late_reply),
		T(timeout_dropped_calls),
		T(private_data_on_off),
		T(remote_invalidation),
	};

	if (argc > 1)
		cmocka_set_test_filter(argv[1]);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
