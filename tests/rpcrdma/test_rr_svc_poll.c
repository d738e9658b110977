/*
 * The Responder driven as libtirpc's svc_run drives a transport: one
 * thread, poll() on the listener's and the connection's fds, then the
 * non-blocking calls.  The fds are readable when there is something to
 * do (a connection to take, a call, several calls waiting one after
 * the other, the connection's end) and go quiet once it is done, so
 * that svc_run neither sleeps through a call nor spins.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <string.h>

#include "rr_test.h"

#define NPAR 4

struct client {
	pthread_t th;
	struct sockaddr_storage addr;
	struct uiw_rr_clnt *c;
	sem_t go, done;
	int steps;                  /* calls, one per go */
	unsigned ok;
};

static bool readable(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, ms) == 1;
}

static int simple_call(struct uiw_rr_clnt *c, uint32_t xid)
{
	struct rt_spec sp = { .op = RT_ECHO, .n = 50 };
	char why[256];

	return rt_call(c, xid, &sp, why, sizeof(why)) == UIW_RR_OK ? 0 : -1;
}

struct par {
	pthread_t th;
	struct uiw_rr_clnt *c;
	uint32_t xid;
	int ret;
};

static void *par_call(void *arg)
{
	struct par *p = arg;

	p->ret = simple_call(p->c, p->xid);
	return NULL;
}

/* Connects, then for each go: one call (step 0..), NPAR calls at once
 * (the last step), then closes. */
static void *client_main(void *arg)
{
	struct client *cl = arg;
	char err[128];
	int i;

	cl->c = uiw_rr_clnt_connect((struct sockaddr *)&cl->addr,
				    sizeof(struct sockaddr_in), NULL, err,
				    sizeof(err));
	sem_post(&cl->done);
	if (!cl->c)
		return NULL;
	for (i = 0; i < cl->steps; i++) {
		sem_wait(&cl->go);
		if (i < cl->steps - 1) {
			cl->ok += simple_call(cl->c, 0x100 + (uint32_t)i) == 0;
		} else {
			struct par p[NPAR];
			unsigned k;

			for (k = 0; k < NPAR; k++) {
				p[k] = (struct par){ .c = cl->c,
						     .xid = 0x200 + k };
				pthread_create(&p[k].th, NULL, par_call, &p[k]);
			}
			for (k = 0; k < NPAR; k++) {
				pthread_join(p[k].th, NULL);
				cl->ok += p[k].ret == 0;
			}
		}
		sem_post(&cl->done);
	}
	sem_wait(&cl->go);
	uiw_rr_clnt_close(cl->c);
	sem_post(&cl->done);
	return NULL;
}

static void reply_echo(struct uiw_rr_sconn *s, struct uiw_rr_req *req)
{
	uint8_t head[12], tail[4] = { 0 };
	uint32_t n = rt_get32(req->call + 16);
	struct uiw_rr_iov iov[3] = {
		{ head, 12, false }, { req->call + 20, (n + 3) & ~3u, false },
		{ tail, 4, false } };

	rt_put32(head, req->xid);
	rt_put32(head + 4, 0);
	rt_put32(head + 8, n);
	assert_int_equal(uiw_rr_reply(s, req, iov, 3), 0);
}

/* Takes what the fd says is there until recv says EAGAIN; then the fd
 * is quiet within a few rounds (a Send's completion may still wake it
 * once). */
static void drain_quiet(struct uiw_rr_sconn *s)
{
	struct uiw_rr_req *req;
	int fd = uiw_rr_sconn_fd(s), round;

	for (round = 0; round < 4; round++) {
		assert_int_equal(uiw_rr_recv(s, &req), -EAGAIN);
		if (!readable(fd, 0))
			return;
	}
	fail_msg("the connection's fd stays readable with nothing to do");
}

static void serve_as_svc_run(void **state)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	struct client cl = { .steps = 4 };
	struct uiw_rr_listener *l;
	struct uiw_rr_sconn *s = NULL;
	struct uiw_rr_req *req, *held[NPAR];
	struct uiw_rr_stats st;
	char err[128];
	unsigned n, k;
	int i, ret;

	(void)state;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	l = uiw_rr_listen((struct sockaddr *)&a, sizeof(a), NULL, err,
			  sizeof(err));
	assert_non_null(l);
	assert_false(readable(uiw_rr_listener_fd(l), 0));
	assert_null(uiw_rr_accept(l));
	assert_int_equal(errno, EAGAIN);
	uiw_rr_listener_addr(l, &cl.addr);
	assert_int_not_equal(((struct sockaddr_in *)&cl.addr)->sin_port, 0);
	sem_init(&cl.go, 0, 0);
	sem_init(&cl.done, 0, 0);
	assert_int_equal(pthread_create(&cl.th, NULL, client_main, &cl), 0);

	/* the connection: the listener's fd says when to look */
	while (!s) {
		assert_true(readable(uiw_rr_listener_fd(l), RT_WAIT_MS));
		s = uiw_rr_accept(l);
		if (!s)
			assert_int_equal(errno, EAGAIN);
	}
	sem_wait(&cl.done);
	assert_non_null(cl.c);
	assert_null(uiw_rr_accept(l));
	assert_false(readable(uiw_rr_listener_fd(l), 0));

	/* one call at a time: readable, a call, a reply, quiet */
	for (i = 0; i < cl.steps - 1; i++) {
		sem_post(&cl.go);
		req = NULL;
		while (!req) {
			assert_true(readable(uiw_rr_sconn_fd(s), RT_WAIT_MS));
			ret = uiw_rr_recv(s, &req);
			assert_true(ret == 0 || ret == -EAGAIN);
		}
		assert_int_equal(req->xid, 0x100 + (uint32_t)i);
		reply_echo(s, req);
		sem_wait(&cl.done);
		drain_quiet(s);
	}
	/* several at once, taken one per poll: the fd stays readable
	 * while any waits */
	sem_post(&cl.go);
	for (n = 0; n < NPAR;) {
		assert_true(readable(uiw_rr_sconn_fd(s), RT_WAIT_MS));
		ret = uiw_rr_recv(s, &req);
		if (ret == 0)
			held[n++] = req;
		else
			assert_int_equal(ret, -EAGAIN);
	}
	for (k = 0; k < NPAR; k++)
		reply_echo(s, held[k]);
	sem_wait(&cl.done);
	assert_int_equal(cl.ok, cl.steps - 1 + NPAR);
	drain_quiet(s);
	uiw_rr_sconn_stats(s, &st);
	assert_int_equal(st.calls, cl.steps - 1 + NPAR);
	assert_int_equal(st.replies, cl.steps - 1 + NPAR);

	/* the Requester goes: readable, -ENOTCONN, then closed */
	sem_post(&cl.go);
	sem_wait(&cl.done);
	for (;;) {
		assert_true(readable(uiw_rr_sconn_fd(s), RT_WAIT_MS));
		ret = uiw_rr_recv(s, &req);
		if (ret == -ENOTCONN)
			break;
		assert_int_equal(ret, -EAGAIN);
	}
	/* it stays so */
	assert_true(readable(uiw_rr_sconn_fd(s), 0));
	assert_int_equal(uiw_rr_recv(s, &req), -ENOTCONN);
	uiw_rr_sconn_close(s);
	pthread_join(cl.th, NULL);
	uiw_rr_listener_close(l);
	sem_destroy(&cl.go);
	sem_destroy(&cl.done);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(serve_as_svc_run),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
