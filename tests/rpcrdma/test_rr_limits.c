/*
 * The Responder's bounds against idle, slow or hostile Requesters, over
 * 127.0.0.1: the assembly memory of a listener shared by all its
 * connections (never more in use than its budget, every call served in
 * the end, a connection that holds some never taking the last
 * max_call); the connections of a listener (beyond max_conns the one
 * idle the longest is ended, a busy one never; a request is refused
 * when every one is busy); the idle timeout (an idle connection ended,
 * an active or busy one not; a connection that outlives its listener
 * keeps it).  Every wait is on an event or an fd, bounded.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rr_share.h"
#include "rr_test.h"

/* A max_call that one call of 1 MiB of Read chunk data fills. */
#define MAXCALL ((1u << 20) + 4096)

static struct uiw_rr_opts opts(void)
{
	struct uiw_rr_opts o;

	uiw_rr_opts_init(&o);
	return o;
}

static void call_ok(struct uiw_rr_clnt *c, uint32_t xid,
		    const struct rt_spec *sp)
{
	char why[256];

	if (rt_call(c, xid, sp, why, sizeof(why)) != UIW_RR_OK)
		fail_msg("xid %08x n %zu op 0x%x: %s", xid, sp->n, sp->op, why);
}

static void echo_ok(struct uiw_rr_clnt *c, uint32_t xid)
{
	struct rt_spec sp = { .op = RT_ECHO, .n = 16,
			      .timeout_ms = RT_WAIT_MS };

	call_ok(c, xid, &sp);
}

/* A call on its own thread: one of 1 MiB in a Read chunk that the
 * Responder holds until the test releases it, or a plain one. */
struct bg_call {
	pthread_t th;
	struct uiw_rr_clnt *c;
	uint32_t xid;
	struct rt_spec sp;
	enum uiw_rr_status st;
	char why[256];
};

static void *bg_run(void *arg)
{
	struct bg_call *b = arg;

	b->st = rt_call(b->c, b->xid, &b->sp, b->why, sizeof(b->why));
	return NULL;
}

static void bg_start(struct bg_call *b, struct uiw_rr_clnt *c, uint32_t xid,
		     size_t n)
{
	*b = (struct bg_call){ .c = c, .xid = xid,
		.sp = { .op = RT_HOLD, .n = n, .data_ddp = n >= 1024,
			.timeout_ms = RT_WAIT_MS } };
	assert_int_equal(pthread_create(&b->th, NULL, bg_run, b), 0);
}

static void bg_join_ok(struct bg_call *b)
{
	pthread_join(b->th, NULL);
	if (b->st != UIW_RR_OK)
		fail_msg("call %08x: %s", b->xid, b->why);
}

static void release_all(struct rt_srv *srv)
{
	pthread_mutex_lock(&srv->mu);
	srv->release = 1000;
	pthread_mutex_unlock(&srv->mu);
	rt_srv_kick(srv);
}

/* ---- The listener's assembly budget ----------------------------------- */

/* Three connections with three held 1 MiB Read-chunk calls each, on a
 * listener whose budget holds four such calls (each connection's own
 * bound would let it hold four): never more than four handed out at
 * once; once released, every call is served and all the memory comes
 * back. */
static void budget_shared(void **state)
{
	struct uiw_rr_opts so = opts();
	struct uiw_rr_clnt *c[3];
	struct bg_call b[9];
	struct rt_srv srv;
	uint64_t used, peak, cap;
	unsigned i, conns;

	(void)state;
	so.max_call = MAXCALL;
	so.listen_budget = 4ull * MAXCALL;
	rt_srv_start(&srv, &so);
	for (i = 0; i < 3; i++) {
		c[i] = rt_connect(&srv, NULL);
		assert_non_null(c[i]);
		echo_ok(c[i], 0x100 + i);       /* the grant */
	}
	for (i = 0; i < 9; i++)
		bg_start(&b[i], c[i % 3], 0x1000 + i, 1u << 20);
	/* three at the least: one that holds some never takes the last
	 * max_call, so a connection that holds none takes it */
	assert_true(rt_srv_wait(&srv, &srv.calls, 3 + 3));
	rr_share_stat(rr_listener_share(srv.l), &used, &peak, &cap, &conns);
	assert_true(peak <= cap);
	assert_int_equal(cap, 4ull * MAXCALL);
	assert_int_equal(conns, 3);
	release_all(&srv);
	for (i = 0; i < 9; i++)
		bg_join_ok(&b[i]);
	assert_int_equal(rt_srv_get(&srv, &srv.calls), 3 + 9);
	assert_true(rt_srv_get(&srv, &srv.max_held_all) <= 4);
	/* the budget was used, never exceeded */
	rr_share_stat(rr_listener_share(srv.l), &used, &peak, &cap, &conns);
	assert_true(peak <= cap);
	assert_true(peak >= 3ull << 20);
	assert_int_equal(rt_srv_get(&srv, &srv.reply_errors), 0);
	for (i = 0; i < 3; i++)
		uiw_rr_clnt_close(c[i]);
	assert_true(rt_srv_wait(&srv, &srv.ended, 3));
	/* every octet back: kept buffers went with their connections */
	rr_share_stat(rr_listener_share(srv.l), &used, &peak, &cap, &conns);
	assert_int_equal(used, 0);
	assert_int_equal(conns, 0);
	rt_srv_stop(&srv);
}

/* One connection with four held calls on a budget of three max_calls
 * holds two (the last max_call is not for one that holds some); a
 * second connection's 1 MiB Read-chunk call is served meanwhile. */
static void budget_reserve(void **state)
{
	struct uiw_rr_opts so = opts();
	struct uiw_rr_clnt *a, *d;
	struct bg_call b[4];
	struct rt_srv srv;
	unsigned i;

	(void)state;
	so.max_call = MAXCALL;
	so.listen_budget = 3ull * MAXCALL;
	rt_srv_start(&srv, &so);
	a = rt_connect(&srv, NULL);
	assert_non_null(a);
	echo_ok(a, 1);
	for (i = 0; i < 4; i++)
		bg_start(&b[i], a, 0x2000 + i, 1u << 20);
	assert_true(rt_srv_wait(&srv, &srv.calls, 1 + 2));
	d = rt_connect(&srv, NULL);
	assert_non_null(d);
	{
		struct rt_spec sp = { .op = RT_ECHO, .n = 1u << 20,
				      .data_ddp = true,
				      .timeout_ms = RT_WAIT_MS };

		call_ok(d, 0x3000, &sp);
	}
	/* a's calls still held, never more than two of them */
	assert_int_equal(rt_srv_get(&srv, &srv.deferred_done), 0);
	assert_int_equal(rt_srv_get(&srv, &srv.max_held), 2);
	release_all(&srv);
	for (i = 0; i < 4; i++)
		bg_join_ok(&b[i]);
	assert_int_equal(rt_srv_get(&srv, &srv.calls), 1 + 4 + 1);
	uiw_rr_clnt_close(a);
	uiw_rr_clnt_close(d);
	rt_srv_stop(&srv);
}

/* ---- The listener's connections --------------------------------------- */

static void why_has(struct rt_srv *srv, const char *what)
{
	char why[128];

	pthread_mutex_lock(&srv->mu);
	snprintf(why, sizeof(why), "%s", srv->last_end_why);
	pthread_mutex_unlock(&srv->mu);
	if (!strstr(why, what))
		fail_msg("ended for \"%s\", expected \"%s\"", why, what);
}

/* max_conns 3: two idle connections and a busy one; a fourth sheds the
 * one idle the longest (its Requester sees the end), the busy one
 * lives.  Then with all three busy, a request is refused. */
static void conn_limit(void **state)
{
	struct uiw_rr_opts so = opts();
	struct uiw_rr_clnt *a, *a2, *busy, *c, *d;
	struct bg_call hb, h2, hc;
	struct rt_spec sp = { .op = RT_ECHO, .timeout_ms = RT_WAIT_MS };
	struct rt_srv srv;
	uint64_t used, peak, cap;
	unsigned conns;
	char why[256];

	(void)state;
	so.max_conns = 3;
	rt_srv_start(&srv, &so);
	a = rt_connect(&srv, NULL);
	assert_non_null(a);
	echo_ok(a, 1);
	a2 = rt_connect(&srv, NULL);
	assert_non_null(a2);
	echo_ok(a2, 2);
	busy = rt_connect(&srv, NULL);
	assert_non_null(busy);
	echo_ok(busy, 3);
	bg_start(&hb, busy, 4, 100);
	assert_true(rt_srv_wait(&srv, &srv.calls, 4));

	c = rt_connect(&srv, NULL);
	assert_non_null(c);
	assert_true(rt_srv_wait(&srv, &srv.ended, 1));
	why_has(&srv, "max_conns");
	/* the oldest idle one went: its Requester hears it */
	assert_int_equal(rt_call(a, 5, &sp, why, sizeof(why)),
			 UIW_RR_DISCONNECTED);
	echo_ok(a2, 6);
	echo_ok(c, 7);
	rr_share_stat(rr_listener_share(srv.l), &used, &peak, &cap, &conns);
	assert_int_equal(conns, 3);

	/* every one busy: refused */
	bg_start(&h2, a2, 8, 100);
	bg_start(&hc, c, 9, 100);
	assert_true(rt_srv_wait(&srv, &srv.calls, 8));
	d = rt_connect(&srv, NULL);
	assert_null(d);
	assert_int_equal(rt_srv_get(&srv, &srv.ended), 1);
	assert_int_equal(rt_srv_get(&srv, &srv.accepted), 4);

	release_all(&srv);
	bg_join_ok(&hb);
	bg_join_ok(&h2);
	bg_join_ok(&hc);
	assert_int_equal(rt_srv_get(&srv, &srv.reply_errors), 0);
	uiw_rr_clnt_close(a);
	uiw_rr_clnt_close(a2);
	uiw_rr_clnt_close(busy);
	uiw_rr_clnt_close(c);
	rt_srv_stop(&srv);
}

/* ---- The idle timeout -------------------------------------------------- */

#define IDLE_MS 300

/* An idle connection ends after IDLE_MS; one that keeps calling and one
 * with a call in progress all along do not. */
static void idle_timeout(void **state)
{
	struct uiw_rr_opts so = opts();
	struct uiw_rr_clnt *idle, *active, *held;
	struct rt_spec sp = { .op = RT_ECHO, .timeout_ms = RT_WAIT_MS };
	struct bg_call hb;
	struct rt_srv srv;
	uint64_t t0, t;
	uint32_t xid = 0x100;
	char why[256];

	(void)state;
	so.idle_timeout_ms = IDLE_MS;
	rt_srv_start(&srv, &so);
	held = rt_connect(&srv, NULL);
	assert_non_null(held);
	bg_start(&hb, held, 1, 100);
	assert_true(rt_srv_wait(&srv, &srv.calls, 1));
	/* no call at all: it ends IDLE_MS after it was set up at least */
	t0 = rr_now_ms();
	idle = rt_connect(&srv, NULL);
	assert_non_null(idle);
	active = rt_connect(&srv, NULL);
	assert_non_null(active);
	/* the active one calls until the idle one has ended */
	while (!rt_srv_get(&srv, &srv.ended)) {
		echo_ok(active, xid++);
		if (rr_now_ms() - t0 > RT_WAIT_MS)
			fail_msg("the idle connection lives on");
	}
	t = rr_now_ms() - t0;
	assert_true(t >= IDLE_MS);
	why_has(&srv, "idle");
	assert_int_equal(rt_call(idle, 3, &sp, why, sizeof(why)),
			 UIW_RR_DISCONNECTED);
	/* the held connection's timer went off before the idle one's:
	 * one more round of the Responder, and it still lives */
	echo_ok(active, xid++);
	assert_int_equal(rt_srv_get(&srv, &srv.ended), 1);
	release_all(&srv);
	bg_join_ok(&hb);
	uiw_rr_clnt_close(idle);
	uiw_rr_clnt_close(active);
	uiw_rr_clnt_close(held);
	rt_srv_stop(&srv);
}

/* Driven by hand: the connection's fd turns readable when the idle
 * timeout ends it, also when its listener was closed before. */
struct connector {
	pthread_t th;
	struct sockaddr_storage addr;
	struct uiw_rr_clnt *c;
};

static void *connect_run(void *arg)
{
	struct connector *k = arg;
	char err[128];

	k->c = uiw_rr_clnt_connect((struct sockaddr *)&k->addr,
				   sizeof(struct sockaddr_in), NULL, err,
				   sizeof(err));
	return NULL;
}

static void idle_after_listener(void **state)
{
	struct uiw_rr_opts so = opts();
	struct sockaddr_in sin = { .sin_family = AF_INET };
	struct uiw_rr_listener *l;
	struct uiw_rr_sconn *s = NULL;
	struct uiw_rr_req *req;
	struct connector k;
	struct rt_spec sp = { .op = RT_ECHO, .timeout_ms = RT_WAIT_MS };
	uint64_t t0, end;
	char err[128], why[256];
	int rc = -EAGAIN;

	(void)state;
	so.idle_timeout_ms = IDLE_MS;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	l = uiw_rr_listen((struct sockaddr *)&sin, sizeof(sin), &so, err,
			  sizeof(err));
	if (!l)
		fail_msg("uiw_rr_listen: %s", err);
	memset(&k, 0, sizeof(k));
	uiw_rr_listener_addr(l, &k.addr);
	t0 = rr_now_ms();
	assert_int_equal(pthread_create(&k.th, NULL, connect_run, &k), 0);
	end = t0 + RT_WAIT_MS;
	while (!s && rr_now_ms() < end) {
		struct pollfd p = { .fd = uiw_rr_listener_fd(l),
				    .events = POLLIN };

		poll(&p, 1, (int)(end - rr_now_ms()));
		s = uiw_rr_accept(l);
	}
	assert_non_null(s);
	pthread_join(k.th, NULL);
	assert_non_null(k.c);
	uiw_rr_listener_close(l);
	/* the fd says when: nothing to do until the connection ends */
	while (rc == -EAGAIN && rr_now_ms() < end) {
		struct pollfd p = { .fd = uiw_rr_sconn_fd(s), .events = POLLIN };

		poll(&p, 1, (int)(end - rr_now_ms()));
		rc = uiw_rr_recv(s, &req);
		assert_true(rc != 0);
	}
	assert_int_equal(rc, -ENOTCONN);
	assert_true(rr_now_ms() - t0 >= IDLE_MS);
	assert_non_null(strstr(rr_sconn_why(s), "idle"));
	uiw_rr_sconn_close(s);
	assert_int_equal(rt_call(k.c, 1, &sp, why, sizeof(why)),
			 UIW_RR_DISCONNECTED);
	uiw_rr_clnt_close(k.c);
}

/* Options out of range are refused with a message. */
static void bad_opts(void **state)
{
	struct uiw_rr_opts so = opts();
	struct sockaddr_in sin = { .sin_family = AF_INET };
	char err[128] = "";

	(void)state;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	so.listen_budget = so.max_call - 1;
	assert_null(uiw_rr_listen((struct sockaddr *)&sin, sizeof(sin), &so,
				  err, sizeof(err)));
	assert_int_equal(errno, EINVAL);
	assert_non_null(strstr(err, "listen_budget"));
	so = opts();
	so.max_conns = 0;
	assert_null(uiw_rr_listen((struct sockaddr *)&sin, sizeof(sin), &so,
				  err, sizeof(err)));
	assert_int_equal(errno, EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(budget_shared),
		cmocka_unit_test(budget_reserve),
		cmocka_unit_test(conn_limit),
		cmocka_unit_test(idle_timeout),
		cmocka_unit_test(idle_after_listener),
		cmocka_unit_test(bad_opts),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
