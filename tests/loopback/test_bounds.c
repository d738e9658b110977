/*
 * Bounded resources (RFC 5044 §7.1.2 rule 10, RFC 5042 §6.4, RFC 5040
 * §8.1.1 rule 10), over real sockets on 127.0.0.1:
 *  - a flood of 2000 TCP connections that never send an MPA Request:
 *    the listener accepts them all and holds at most its bound of them,
 *    shedding the oldest (counted as descriptors of this process and as
 *    ids), its heap does not grow with the flood, a legitimate client
 *    connects promptly in the middle of it, and everything is let go
 *    when the flood leaves;
 *  - a small bound (3, uiwarp-ping's) and seven silent connections: the
 *    four oldest are shed at once, a legitimate client connects
 *    promptly, and the startup timer closes the three kept;
 *  - a CQ shared by two QPs overflows: exactly those two QPs stop (each
 *    with a Terminate to its peer), a QP of the same device on another CQ
 *    goes on working in both directions;
 *  - CQ and work queue sizes beyond the device's limits are refused.
 * Private data beyond 512 octets and Read or atomic Requests beyond IRD
 * are proven octet by octet with the raw peer (tests/conformance:
 * mpa_startup:req_pd_too_long, rep_pd_too_long, bounds:*).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cm/cm_internal.h"
#include "lb_util.h"

#define ACC_ALL (UIW_ACCESS_LOCAL_WRITE | UIW_ACCESS_REMOTE_WRITE | \
		 UIW_ACCESS_REMOTE_READ)

/* How soon a client that sends its Request at once must reach
 * ESTABLISHED while idle connections flood the listener. */
#define PROMPT_MS 1000

/* Descriptors open in this process. */
static int nfds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	assert_non_null(d);
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n - 1;	/* opendir's own */
}

/* Octets in use on the heap (one arena: see main). */
static size_t heap_used(void)
{
	struct mallinfo2 mi = mallinfo2();

	return mi.uordblks + mi.hblkhd;
}

/* mallinfo2 is only meaningful with glibc's allocator; under ASan or
 * valgrind (which replace malloc) the heap checks are left out and the
 * descriptor counts carry the test alone. */
static bool heap_measurable(void)
{
	size_t h = heap_used();
	volatile char *p = malloc(256 * 1024);
	bool ok;

	assert_non_null(p);
	p[0] = 1;
	ok = heap_used() >= h + 256 * 1024;
	free((void *)p);
	return ok;
}

/* Waits until nfds() == want; fails after the test timeout. */
static void wait_nfds(int want, const char *what)
{
	int64_t end = lbu_now_ms() + lbu_timeout_ms();
	int n;

	while ((n = nfds()) != want) {
		if (lbu_now_ms() > end)
			fail_msg("%s: %d descriptors, expected %d", what, n,
				 want);
		poll(NULL, 0, 5);
	}
}

/* A TCP connection to 127.0.0.1:port that will never send anything;
 * non-blocking, so a connection the kernel does not complete yet (its
 * accept queue full) does not block the test. */
static int silent_connect(uint16_t port)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
			0);

	assert_true(fd >= 0);
	a.sin_port = htons(port);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0 &&
	    errno != EINPROGRESS)
		fail_msg("connect: %s", strerror(errno));
	return fd;
}

/* The connection was closed by the listener: EOF or a reset. */
static void expect_closed(int fd, const char *what)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	char c;
	ssize_t r;

	if (poll(&p, 1, lbu_timeout_ms()) != 1)
		fail_msg("%s: still open", what);
	r = recv(fd, &c, 1, 0);
	if (r > 0)
		fail_msg("%s: the listener sent data", what);
	if (r < 0 && errno != ECONNRESET)
		fail_msg("%s: %s", what, strerror(errno));
}

/* One Send each way on a connected pair, data checked. */
static void exchange(struct lbu_pair *p)
{
	struct lbu_buf *cb, *sb;
	struct uiw_wc wc;

	LBU_NN(cb = lbu_buf_alloc(&p->cli, 4096, ACC_ALL));
	LBU_NN(sb = lbu_buf_alloc(&p->srv, 4096, ACC_ALL));
	lbu_fill(cb->mem, 1000, 41);
	lbu_fill(sb->mem + 2048, 999, 42);
	LBU_OK(lbu_post_recv(&p->srv, 1, sb, 0, 2048));
	LBU_OK(lbu_post_recv(&p->cli, 2, cb, 2048, 2048));
	LBU_OK(lbu_post_send(&p->cli, 3, UIW_WR_SEND, UIW_SEND_SIGNALED, cb,
			     0, 1000, 0, 0, 0));
	LBU_OK(lbu_post_send(&p->srv, 4, UIW_WR_SEND, UIW_SEND_SIGNALED, sb,
			     2048, 999, 0, 0, 0));
	LBU_OK(lbu_expect_wc(p->cli.scq, 3, UIW_WC_SUCCESS, UIW_WC_SEND,
			     NULL));
	LBU_OK(lbu_expect_wc(p->srv.scq, 4, UIW_WC_SUCCESS, UIW_WC_SEND,
			     NULL));
	LBU_OK(lbu_expect_wc(p->srv.rcq, 1, UIW_WC_SUCCESS, UIW_WC_RECV,
			     &wc));
	assert_int_equal(wc.byte_len, 1000);
	LBU_OK(lbu_verify(sb->mem, 1000, 41, "client's Send"));
	LBU_OK(lbu_expect_wc(p->cli.rcq, 2, UIW_WC_SUCCESS, UIW_WC_RECV,
			     &wc));
	assert_int_equal(wc.byte_len, 999);
	LBU_OK(lbu_verify(cb->mem + 2048, 999, 42, "server's Send"));
}

/* Raises RLIMIT_NOFILE to at least need, or fails the test saying why:
 * a flood test that runs out of descriptors would prove nothing. */
static void raise_nofile(rlim_t need)
{
	struct rlimit rl;

	assert_int_equal(getrlimit(RLIMIT_NOFILE, &rl), 0);
	if (rl.rlim_cur >= need)
		return;
	if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < need)
		fail_msg("RLIMIT_NOFILE: this test needs %llu descriptors, the "
			 "hard limit is %llu (raise it: ulimit -Hn)",
			 (unsigned long long)need,
			 (unsigned long long)rl.rlim_max);
	rl.rlim_cur = need;
	if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
		fail_msg("setrlimit(RLIMIT_NOFILE, %llu): %s",
			 (unsigned long long)need, strerror(errno));
}

/* The listener's books once it has accepted n connections in all: the
 * kernel's accept queue is drained, whatever the bound. */
static void wait_accepted(struct uiw_cm_id *lid, uint64_t n,
			  struct uiw_cm_listener_stats *st)
{
	int64_t end = lbu_now_ms() + lbu_timeout_ms();

	for (;;) {
		assert_int_equal(uiw_cm_listener_stats(lid, st), 0);
		if (st->accepted >= n)
			return;
		if (lbu_now_ms() > end)
			fail_msg("the listener accepted %llu of %llu "
				 "connections (%u awaiting, %llu shed)",
				 (unsigned long long)st->accepted,
				 (unsigned long long)n, st->awaiting,
				 (unsigned long long)st->shed);
		poll(NULL, 0, 5);
	}
}

/* Opens fds[from..to) as silent connections to l, backlog at a time:
 * a burst beyond the kernel's accept queue would have its SYNs dropped
 * and retried seconds later whatever the listener does, so each batch
 * waits until the listener has accepted it (it must, bound or not). */
static void silent_flood(struct lbu_listener *l, int backlog, int *fds,
			 int from, int to, struct uiw_cm_listener_stats *st)
{
	uint64_t accepted0;
	int i;

	assert_int_equal(uiw_cm_listener_stats(l->id, st), 0);
	accepted0 = st->accepted - (uint64_t)from;
	for (i = from; i < to; i++) {
		fds[i] = silent_connect(l->port);
		if ((i + 1 - from) % backlog == 0 || i + 1 == to)
			wait_accepted(l->id, accepted0 + (uint64_t)i + 1, st);
	}
}

/* A legitimate client connects through l and exchanges a Send each way;
 * it reaches ESTABLISHED within PROMPT_MS (an idle flood does not delay
 * it, RFC 5044 §7.1.2 rule 10). */
static void connect_promptly(struct uiw_device *dev, struct lbu_listener *l)
{
	struct lbu_pair p;
	struct lbu_opts o;
	int64_t t0, took;

	lbu_opts_init(&o);
	o.srv_dev = dev;
	o.lst = l;
	t0 = lbu_now_ms();
	LBU_OK(lbu_pair_connect(&p, &o));
	took = lbu_now_ms() - t0;
	if (took > PROMPT_MS)
		fail_msg("the client reached ESTABLISHED after %lld ms "
			 "(at most %d)", (long long)took, PROMPT_MS);
	exchange(&p);
	LBU_OK(lbu_pair_destroy(&p));
}

/* RFC 5044 §7.1.2 rule 10, RFC 5042 §6.4.1-6.4.2: FLOOD TCP connections
 * that never send a Request, against a listener with the default bound.
 * The listener accepts every one of them (its kernel queue never fills)
 * and keeps at most its bound, shedding the oldest: this process's
 * descriptors are the flood's own plus the bound, the ids on the
 * channel stay within the bound, and the heap does not grow with the
 * flood beyond the first bound's worth.  A client that sends its
 * Request at once connects promptly in the middle of the flood.  When
 * the flood goes away everything is released. */
static void test_startup_flood(void **state)
{
	enum { FLOOD = 2000 };
	struct uiw_cm_listener_stats st;
	struct uiw_device *dev;
	struct lbu_listener l;
	int *fds, base, i;
	unsigned bound;
	size_t h0, h1, h2, h3, per_conn;
	bool heap = heap_measurable();

	(void)state;
	if (!heap)
		print_message("heap not measurable (malloc replaced): "
			      "descriptors and ids only\n");
	LBU_NN(dev = uiw_device_open(NULL));
	LBU_OK(lbu_listener_open(&l, dev));
	/* Long enough that no startup timer runs out during the test. */
	assert_int_equal(uiw_cm_set_startup_timeout(l.id, 120000), 0);
	assert_int_equal(uiw_cm_listener_stats(l.id, &st), 0);
	bound = st.max_awaiting;
	assert_int_equal(bound, 128);       /* the default (cm.h) */
	raise_nofile((rlim_t)nfds() + FLOOD + bound + 256);
	fds = calloc(FLOOD, sizeof(*fds));
	assert_non_null(fds);
	/* Once before the flood, so that what a first connection leaves
	 * allocated for good is not counted against the flood. */
	connect_promptly(dev, &l);
	base = nfds();
	h0 = heap_used();

	/* The first bound's worth: all held. */
	silent_flood(&l, 16, fds, 0, (int)bound, &st);
	assert_int_equal(st.awaiting, bound);
	assert_int_equal(st.shed, 0);
	assert_int_equal(nfds(), base + 2 * (int)bound);
	h1 = heap_used();
	if (heap)
		assert_true(h1 > h0);
	per_conn = h1 > h0 ? (h1 - h0) / bound : 0;

	/* The rest: each one taken in, the oldest let go. */
	silent_flood(&l, 16, fds, (int)bound, FLOOD, &st);
	assert_int_equal(st.awaiting, bound);
	assert_int_equal(st.shed, FLOOD - bound);
	assert_true(st.channel_ids <= bound + 1);     /* + the listener */
	assert_int_equal(nfds(), base + FLOOD + (int)bound);
	for (i = 0; i < FLOOD - (int)bound; i += 97)
		expect_closed(fds[i], "a shed connection");
	h2 = heap_used();
	print_message("flood: %u awaiting cost %zu octets of heap (%zu "
		      "each); %d more connections: %+ld octets\n", bound,
		      h1 - h0, per_conn, FLOOD - (int)bound,
		      (long)(h2 - h1));
	/* Less than what four more held connections would cost: the
	 * flood's memory is the bound's. */
	if (heap && h2 > h1 && h2 - h1 >= 4 * per_conn)
		fail_msg("heap grew by %zu octets with the flood (one "
			 "awaiting connection costs %zu)", h2 - h1, per_conn);

	connect_promptly(dev, &l);

	for (i = 0; i < FLOOD; i++)
		close(fds[i]);
	free(fds);
	wait_nfds(base, "after the flood");
	h3 = heap_used();
	if (heap && h3 > h0 + per_conn / 4)
		fail_msg("heap %zu octets above its level before the flood",
			 h3 - h0);
	LBU_OK(lbu_listener_close(&l));
	assert_int_equal(uiw_device_close(dev), 0);
}

/* A small bound, as uiwarp-ping -s -P sets with its backlog of 3 (rping's):
 * seven connections that never send a Request.  The listener takes all
 * seven, keeps the three newest and closes the four oldest at once; a
 * client that sends its Request connects promptly; the startup timer
 * (RFC 5044 §7.1.2 rule 10) later closes the three it kept. */
static void test_small_bound_sheds_oldest(void **state)
{
	enum { IDLE = 7, SMALL = 3, TIMEOUT_MS = 2000 };
	struct uiw_cm_listener_stats st;
	struct uiw_device *dev;
	struct lbu_listener l;
	int fds[IDLE], i;
	char what[48];

	(void)state;
	LBU_NN(dev = uiw_device_open(NULL));
	LBU_OK(lbu_listener_open_backlog(&l, dev, SMALL));
	assert_int_equal(uiw_cm_set_max_awaiting(l.id, SMALL), 0);
	assert_int_equal(uiw_cm_set_startup_timeout(l.id, TIMEOUT_MS), 0);
	silent_flood(&l, SMALL, fds, 0, IDLE, &st);
	assert_int_equal(st.awaiting, SMALL);
	assert_int_equal(st.shed, IDLE - SMALL);
	for (i = 0; i < IDLE - SMALL; i++) {
		snprintf(what, sizeof(what), "idle connection %d (shed)", i);
		expect_closed(fds[i], what);
	}
	/* The newest are still held: their timers have not run out. */
	for (i = IDLE - SMALL; i < IDLE; i++)
		assert_int_equal(lbu_fd_readable(fds[i], 0), 0);

	connect_promptly(dev, &l);

	for (i = IDLE - SMALL; i < IDLE; i++) {
		snprintf(what, sizeof(what), "idle connection %d (timed out)",
			 i);
		expect_closed(fds[i], what);
	}
	for (i = 0; i < IDLE; i++)
		close(fds[i]);
	assert_int_equal(uiw_cm_listener_stats(l.id, &st), 0);
	assert_int_equal(st.awaiting, 0);
	LBU_OK(lbu_listener_close(&l));
	assert_int_equal(uiw_device_close(dev), 0);
}

/* Waits until the side's QP has left RTS; returns its attributes. */
static void wait_left_rts(struct lbu_side *s, struct uiw_qp_attr *a,
			  const char *what)
{
	int64_t end = lbu_now_ms() + lbu_timeout_ms();

	for (;;) {
		int st = lbu_qp_state(s, a);

		LBU_OK(st);
		if (st != UIW_QPS_RTS)
			return;
		if (lbu_now_ms() > end)
			fail_msg("%s: still in RTS", what);
		poll(NULL, 0, 5);
	}
}

/* RFC 5040 §8.1.1 rule 10, RFC 5042 §6.4.3.2 and §6.4.6: the clients of
 * pairs A1 and A2 share CQ X (8 entries); the client of pair B, on the
 * same device, has its own CQ.  A1 posts signalled Writes that nobody
 * polls for: X overflows.  Exactly A1 and A2 stop (RDMAP local
 * catastrophic error, a Terminate to each peer, which reports it as the
 * remote cause), X reports the overflow, and B goes on in both
 * directions. */
static void test_shared_cq_overflow(void **state)
{
	struct uiw_device *cdev, *sdev;
	struct uiw_cq *x;
	struct lbu_listener l;
	struct lbu_pair a1, a2, b;
	struct lbu_pair *pa[2] = { &a1, &a2 };
	struct lbu_buf *src, *dst, *bc, *bs;
	struct uiw_qp_attr qa;
	struct uiw_wc wc;
	struct lbu_opts o;
	int i, k;

	(void)state;
	LBU_NN(cdev = uiw_device_open(NULL));
	LBU_NN(sdev = uiw_device_open(NULL));
	LBU_OK(lbu_listener_open(&l, sdev));
	LBU_NN(x = uiw_cq_create(cdev, 8));
	for (k = 0; k < 2; k++) {
		lbu_opts_init(&o);
		o.cli_dev = cdev;
		o.srv_dev = sdev;
		o.lst = &l;
		o.cli_scq = o.cli_rcq = x;
		LBU_OK(lbu_pair_connect(pa[k], &o));
	}
	lbu_opts_init(&o);
	o.cli_dev = cdev;
	o.srv_dev = sdev;
	o.lst = &l;
	LBU_OK(lbu_pair_connect(&b, &o));
	LBU_OK(lbu_cq_empty(x, "shared CQ after connecting"));

	LBU_NN(src = lbu_buf_alloc(&a1.cli, 4096, ACC_ALL));
	LBU_NN(dst = lbu_buf_alloc(&a1.srv, 4096, ACC_ALL));
	/* Posting fails once the overflow has stopped A1: not before the
	 * ninth completion had nowhere to go. */
	for (i = 0; i < 24; i++)
		if (lbu_post_send(&a1.cli, 100 + i, UIW_WR_RDMA_WRITE,
				  UIW_SEND_SIGNALED, src, 0, 8,
				  lbu_to(dst, 0), dst->mr->rkey, 0) < 0)
			break;
	if (i < 9)
		fail_msg("A1 refused its Write %d: %s", i + 1, lbu_err());
	for (k = 0; k < 2; k++) {
		const char *n = k ? "A2 client" : "A1 client";

		wait_left_rts(&pa[k]->cli, &qa, n);
		if (qa.term.origin != UIW_TERM_LOCAL ||
		    qa.term.layer != UIW_TERM_LAYER_RDMAP ||
		    qa.term.etype != 0)
			fail_msg("%s: cause %u/%u/%u origin %u (%s), expected "
				 "a local catastrophic error", n,
				 qa.term.layer, qa.term.etype, qa.term.ecode,
				 qa.term.origin, qa.term_msg);
		/* The peer got the Terminate and reports it. */
		wait_left_rts(&pa[k]->srv, &qa, k ? "A2 server" : "A1 server");
		if (qa.term.origin != UIW_TERM_REMOTE ||
		    qa.term.layer != UIW_TERM_LAYER_RDMAP ||
		    qa.term.etype != 0)
			fail_msg("%s server: cause %u/%u/%u origin %u (%s), "
				 "expected the peer's Terminate", n,
				 qa.term.layer, qa.term.etype, qa.term.ecode,
				 qa.term.origin, qa.term_msg);
		/* RFC 5041 §6.2.1: no more work on a stopped stream. */
		assert_true(lbu_post_send(&pa[k]->cli, 999, UIW_WR_SEND, 0,
					  NULL, 0, 0, 0, 0, 0) < 0);
	}
	assert_int_equal(uiw_cq_poll(x, 1, &wc), -EOVERFLOW);

	/* B, same device, its own CQs: untouched, both directions. */
	assert_int_equal(lbu_qp_state(&b.cli, NULL), UIW_QPS_RTS);
	assert_int_equal(lbu_qp_state(&b.srv, NULL), UIW_QPS_RTS);
	exchange(&b);
	LBU_NN(bc = lbu_buf_alloc(&b.cli, 65536, ACC_ALL));
	LBU_NN(bs = lbu_buf_alloc(&b.srv, 65536, ACC_ALL));
	lbu_fill(bs->mem, 65536, 77);
	LBU_OK(lbu_post_send(&b.cli, 5, UIW_WR_RDMA_READ, UIW_SEND_SIGNALED,
			     bc, 0, 65536, lbu_to(bs, 0), bs->mr->rkey, 0));
	LBU_OK(lbu_expect_wc(b.cli.scq, 5, UIW_WC_SUCCESS, UIW_WC_RDMA_READ,
			     NULL));
	LBU_OK(lbu_verify(bc->mem, 65536, 77, "B's Read after the overflow"));
	assert_int_equal(lbu_qp_state(&b.cli, NULL), UIW_QPS_RTS);

	LBU_OK(lbu_pair_destroy(&b));
	LBU_OK(lbu_pair_destroy(&a2));
	LBU_OK(lbu_pair_destroy(&a1));
	assert_int_equal(uiw_cq_destroy(x), 0);
	LBU_OK(lbu_listener_close(&l));
	assert_int_equal(uiw_device_close(cdev), 0);
	assert_int_equal(uiw_device_close(sdev), 0);
}

/* RFC 5040 §8.1.2 rules 2, 5, 6, RFC 5042 §6.4.1: the application
 * sizes CQs and work queues only within the device's limits
 * (uiw_device_query); beyond them the call fails with a reason. */
static void test_device_limits(void **state)
{
	struct uiw_qp_init_attr qa = { 0 };
	struct uiw_device_attr da;
	struct uiw_device *dev;
	struct uiw_pd *pd;
	struct uiw_cq *cq;

	(void)state;
	LBU_NN(dev = uiw_device_open(NULL));
	assert_int_equal(uiw_device_query(dev, &da), 0);
	assert_null(uiw_cq_create(dev, (int)da.max_cqe + 1));
	assert_non_null(strstr(uiw_last_error(), "cq"));
	assert_null(uiw_cq_create(dev, 0));
	LBU_NN(cq = uiw_cq_create(dev, 16));
	LBU_NN(pd = uiw_pd_alloc(dev));
	qa.send_cq = qa.recv_cq = cq;
	qa.cap.max_send_wr = da.max_qp_wr + 1;
	qa.cap.max_recv_wr = 4;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
	assert_null(uiw_qp_create(pd, &qa));
	qa.cap.max_send_wr = 4;
	qa.cap.max_recv_wr = da.max_qp_wr + 1;
	assert_null(uiw_qp_create(pd, &qa));
	assert_int_equal(uiw_pd_free(pd), 0);
	assert_int_equal(uiw_cq_destroy(cq), 0);
	assert_int_equal(uiw_device_close(dev), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_startup_flood),
		cmocka_unit_test(test_small_bound_sheds_oldest),
		cmocka_unit_test(test_shared_cq_overflow),
		cmocka_unit_test(test_device_limits),
	};

	/* One malloc arena, so that heap_used() sees the progress
	 * threads' allocations too. */
	mallopt(M_ARENA_MAX, 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
