/*
 * 1,000 connected QPs on one device (issue #5): 500 connections made
 * through the connection manager, both ends on the same device, every
 * client QP on one shared CQ and every server QP on another.  The memory
 * an idle connected QP costs is measured (resident set size and the
 * heap's bytes in use, mallinfo2, before the QPs are made and once all
 * are connected), reported, and must be at most 64 KiB.  Then each
 * connection carries a Send and an RDMA Write with data that differs
 * per connection, and every octet is verified.
 *
 * Two sockets and the CM channels' descriptors per connection need more
 * than the usual 1024 file descriptors: RLIMIT_NOFILE is raised up to
 * the hard limit, and the test fails, saying so, when that is too low.
 * $UIW_MANYQP_PAIRS (1..500) makes fewer connections (slow runs).  Under
 * a sanitizer or valgrind the memory figures are reported, not checked.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <malloc.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>
#include <uiwarp/cm.h>

#include "lb_util.h"

#define NPAIRS_MAX   500
#define MSG_LEN      256
#define IDLE_QP_MAX  (64u * 1024u)
#define ACC (UIW_ACCESS_LOCAL_WRITE | UIW_ACCESS_REMOTE_WRITE)

/* One side of every connection: a PD, a CQ, a CM channel and one
 * registered region shared by all its QPs (so that what is measured is
 * what a QP costs, not the test's buffers). */
struct end {
	struct uiw_pd *pd;
	struct uiw_cq *cq;
	struct uiw_cm_channel *ch;
	uint8_t *buf;
	struct uiw_mr *mr;
	struct uiw_qp *qp[NPAIRS_MAX];
	struct uiw_cm_id *id[NPAIRS_MAX];
	int established[NPAIRS_MAX];
	int disconnected[NPAIRS_MAX];
};

struct many {
	struct uiw_device *dev;
	struct uiw_cm_id *lid;
	struct sockaddr_in addr;
	struct end c, s;
	int npairs, nconn;
};

/* Under valgrind (its preload library) the allocator and the memory
 * figures are valgrind's: the checks then only report. */
static int under_valgrind(void)
{
	const char *p = getenv("LD_PRELOAD");

	return p && strstr(p, "vgpreload") != NULL;
}

static int instrumented(void)
{
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
	return 1;
#else
	return under_valgrind();
#endif
}

static int many_pairs(void)
{
	const char *e = getenv("UIW_MANYQP_PAIRS");
	int n = e ? atoi(e) : NPAIRS_MAX;

	return n < 1 || n > NPAIRS_MAX ? NPAIRS_MAX : n;
}

static int raise_nofile(int npairs)
{
	struct rlimit rl;
	/* Two sockets, two CM channel descriptors per connection and a
	 * little spare. */
	rlim_t need = (rlim_t)npairs * 6 + 256;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0) {
		print_error("getrlimit(RLIMIT_NOFILE) failed\n");
		return -1;
	}
	if (rl.rlim_cur >= need)
		return 0;
	if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < need) {
		print_error("%d connections need %llu file descriptors; the "
			    "RLIMIT_NOFILE hard limit is %llu (raise it, e.g. "
			    "ulimit -Hn, or set UIW_MANYQP_PAIRS lower)\n",
			    npairs, (unsigned long long)need,
			    (unsigned long long)rl.rlim_max);
		return -1;
	}
	rl.rlim_cur = rl.rlim_max == RLIM_INFINITY ? need : rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl) < 0) {
		print_error("setrlimit(RLIMIT_NOFILE, %llu) failed\n",
			    (unsigned long long)rl.rlim_cur);
		return -1;
	}
	return 0;
}

/* Resident set size in octets. */
static long rss_now(void)
{
	long pages = 0, res = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (!f)
		return -1;
	if (fscanf(f, "%ld %ld", &pages, &res) != 2)
		res = -1;
	fclose(f);
	return res < 0 ? -1 : res * sysconf(_SC_PAGESIZE);
}

static struct uiw_qp *make_qp(struct many *m, struct end *e, int i)
{
	struct uiw_qp_init_attr ia;

	memset(&ia, 0, sizeof(ia));
	ia.send_cq = ia.recv_cq = e->cq;
	ia.cap.max_send_wr = 64;
	ia.cap.max_recv_wr = 64;
	ia.cap.max_send_sge = 4;
	ia.cap.max_recv_sge = 4;
	ia.qp_context = (void *)(intptr_t)i;
	(void)m;
	return uiw_qp_create(e->pd, &ia);
}

static int end_init(struct many *m, struct end *e)
{
	size_t len = (size_t)m->npairs * 2 * MSG_LEN;

	e->pd = uiw_pd_alloc(m->dev);
	e->cq = uiw_cq_create(m->dev, m->npairs * 2 + 64);
	e->ch = uiw_cm_channel_create(m->dev);
	e->buf = calloc(1, len);
	if (!e->pd || !e->cq || !e->ch || !e->buf) {
		print_error("setup: %s\n", uiw_last_error());
		return -1;
	}
	e->mr = uiw_reg_mr(e->pd, e->buf, len, ACC);
	if (!e->mr) {
		print_error("uiw_reg_mr: %s\n", uiw_last_error());
		return -1;
	}
	return 0;
}

static int setup(void **state)
{
	struct many *m;
	struct sockaddr_storage ss;
	int npairs = many_pairs();

	if (raise_nofile(npairs) < 0)
		return -1;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -1;
	*state = m;
	m->npairs = npairs;
	m->dev = uiw_device_open(NULL);
	if (!m->dev) {
		print_error("uiw_device_open: %s\n", uiw_last_error());
		return -1;
	}
	if (end_init(m, &m->c) < 0 || end_init(m, &m->s) < 0)
		return -1;
	m->addr.sin_family = AF_INET;
	m->addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (uiw_cm_listen(m->s.ch, (struct sockaddr *)&m->addr,
			  sizeof(m->addr), 64, &m->lid) < 0 ||
	    uiw_cm_local_addr(m->lid, &ss) < 0) {
		print_error("listen: %s\n", uiw_last_error());
		return -1;
	}
	m->addr.sin_port = ((struct sockaddr_in *)&ss)->sin_port;
	return 0;
}

/* Takes one CM event from e's channel and records it. */
static int cm_event(struct many *m, struct end *e)
{
	struct uiw_cm_event ev;
	int rc, i;

	rc = uiw_cm_get_event(e->ch, &ev, lbu_timeout_ms());
	if (rc < 0)
		return lbu_fail("CM event: %d (%s)", rc, uiw_last_error());
	switch (ev.type) {
	case UIW_CM_EVENT_CONNECT_REQUEST: {
		uint32_t k;
		struct uiw_conn_param p;

		if (ev.private_data_len != sizeof(k))
			return lbu_fail("Request without the index");
		memcpy(&k, ev.private_data, sizeof(k));
		if (k >= (uint32_t)m->npairs || e->id[k])
			return lbu_fail("Request with index %u", k);
		e->id[k] = ev.id;
		e->qp[k] = make_qp(m, e, (int)k);
		if (!e->qp[k])
			return lbu_fail("server QP %u: %s", k,
					uiw_last_error());
		memset(&p, 0, sizeof(p));
		p.crc = UIW_OPT_ON;
		rc = uiw_cm_accept(ev.id, e->qp[k], &p);
		if (rc < 0)
			return lbu_fail("accept %u: %s", k, uiw_last_error());
		return 0;
	}
	case UIW_CM_EVENT_ESTABLISHED:
	case UIW_CM_EVENT_DISCONNECTED:
		for (i = 0; i < m->npairs; i++) {
			if (e->id[i] != ev.id)
				continue;
			if (ev.type == UIW_CM_EVENT_ESTABLISHED)
				e->established[i]++;
			else
				e->disconnected[i]++;
			return 0;
		}
		return lbu_fail("%s for an unknown id",
				uiw_cm_event_str(ev.type));
	default:
		return lbu_fail("unexpected CM event %s (status %d)",
				uiw_cm_event_str(ev.type), ev.status);
	}
}

static int connect_one(struct many *m, int i)
{
	struct uiw_conn_param p;
	uint32_t k = (uint32_t)i;
	int rc;

	m->c.qp[i] = make_qp(m, &m->c, i);
	if (!m->c.qp[i])
		return lbu_fail("client QP %d: %s", i, uiw_last_error());
	memset(&p, 0, sizeof(p));
	p.crc = UIW_OPT_ON;
	p.private_data = &k;
	p.private_data_len = sizeof(k);
	rc = uiw_cm_connect(m->c.ch, m->c.qp[i], (struct sockaddr *)&m->addr,
			    sizeof(m->addr), &p, &m->c.id[i]);
	if (rc < 0)
		return lbu_fail("connect %d: %s", i, uiw_last_error());
	m->nconn++;
	while (!m->s.established[i])
		if (cm_event(m, &m->s) < 0)
			return -1;
	while (!m->c.established[i])
		if (cm_event(m, &m->c) < 0)
			return -1;
	return 0;
}

static int teardown(void **state)
{
	struct many *m = *state;
	int i, ret = 0;

	if (!m)
		return 0;
	/* Graceful close of every connection from the client side. */
	for (i = 0; i < m->nconn; i++)
		if (m->c.established[i] && uiw_cm_disconnect(m->c.id[i]) < 0)
			ret = -1;
	for (i = 0; i < m->nconn && ret == 0; i++) {
		while (m->c.established[i] && !m->c.disconnected[i])
			if (cm_event(m, &m->c) < 0) {
				print_error("%s\n", lbu_err());
				ret = -1;
				break;
			}
		while (ret == 0 && m->s.established[i] &&
		       !m->s.disconnected[i])
			if (cm_event(m, &m->s) < 0) {
				print_error("%s\n", lbu_err());
				ret = -1;
				break;
			}
	}
	for (i = 0; i < m->npairs; i++) {
		struct end *e[2] = { &m->c, &m->s };
		int k;

		for (k = 0; k < 2; k++) {
			if (e[k]->id[i] && uiw_cm_destroy_id(e[k]->id[i]) < 0)
				ret = -1;
			if (e[k]->qp[i] && uiw_qp_destroy(e[k]->qp[i]) < 0)
				ret = -1;
		}
	}
	if (m->lid && uiw_cm_destroy_id(m->lid) < 0)
		ret = -1;
	{
		struct end *e[2] = { &m->c, &m->s };
		int k;

		for (k = 0; k < 2; k++) {
			if (e[k]->mr && uiw_dereg_mr(e[k]->mr) < 0)
				ret = -1;
			if (e[k]->cq && uiw_cq_destroy(e[k]->cq) < 0)
				ret = -1;
			if (e[k]->pd && uiw_pd_free(e[k]->pd) < 0)
				ret = -1;
			if (e[k]->ch && uiw_cm_channel_destroy(e[k]->ch) < 0)
				ret = -1;
			free(e[k]->buf);
		}
	}
	if (m->dev && uiw_device_close(m->dev) < 0) {
		print_error("uiw_device_close: %s\n", uiw_last_error());
		ret = -1;
	}
	free(m);
	return ret;
}

/* Waits for n completions on cq, each successful and of opcode; counts
 * them per connection (the QP's context is its index). */
static void collect(struct uiw_cq *cq, int n, int *seen, int opcode)
{
	struct uiw_wc wc;
	char b[160];
	int got;

	for (got = 0; got < n; got++) {
		intptr_t k;

		if (lbu_wait_wc(cq, &wc, 1) < 0)
			fail_msg("completion %d of %d: %s", got, n, lbu_err());
		k = (intptr_t)uiw_qp_context(wc.qp);
		if (wc.status != UIW_WC_SUCCESS || (int)wc.opcode != opcode ||
		    k < 0 || k >= NPAIRS_MAX || wc.wr_id != (uint64_t)k)
			fail_msg("bad completion: %s",
				 lbu_wc_str(&wc, b, sizeof(b)));
		seen[k]++;
	}
}

static void post(struct uiw_qp *qp, uint64_t id, enum uiw_wr_opcode op,
		 struct uiw_sge *sge, uint64_t raddr, uint32_t rkey)
{
	struct uiw_send_wr wr, *bad;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = id;
	wr.opcode = op;
	wr.send_flags = UIW_SEND_SIGNALED;
	wr.sg_list = sge;
	wr.num_sge = sge ? 1 : 0;
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	if (uiw_post_send(qp, &wr, &bad) < 0)
		fail_msg("post %d on QP %llu: %s", (int)op,
			 (unsigned long long)id, uiw_last_error());
}

static void post_recv(struct uiw_qp *qp, uint64_t id, struct uiw_sge *sge)
{
	struct uiw_recv_wr wr, *bad;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = id;
	wr.sg_list = sge;
	wr.num_sge = sge ? 1 : 0;
	if (uiw_post_recv(qp, &wr, &bad) < 0)
		fail_msg("post_recv %llu: %s", (unsigned long long)id,
			 uiw_last_error());
}

static void test_1000_qps(void **state)
{
	struct many *m = *state;
	static int seen[NPAIRS_MAX];
	struct mallinfo2 h0, h1;
	long rss0, rss1;
	double per_rss, per_heap;
	int64_t t0 = lbu_now_ms();
	int i, nqp = 2 * m->npairs;

	rss0 = rss_now();
	h0 = mallinfo2();
	for (i = 0; i < m->npairs; i++)
		if (connect_one(m, i) < 0)
			fail_msg("connection %d of %d: %s", i + 1, m->npairs,
				 lbu_err());
	rss1 = rss_now();
	h1 = mallinfo2();
	assert_true(rss0 > 0 && rss1 > 0);
	per_rss = (double)(rss1 - rss0) / nqp;
	per_heap = ((double)h1.uordblks - (double)h0.uordblks) / nqp;
	printf("%d QPs connected in %lld ms; per idle connected QP (with its "
	       "share of the CM and the LLP): %.0f octets resident, %.0f "
	       "octets of heap in use (limit %u)\n", nqp,
	       (long long)(lbu_now_ms() - t0), per_rss, per_heap,
	       IDLE_QP_MAX);
	/* A sanitizer's or valgrind's allocator adds its own bookkeeping
	 * to every block: the figures then only report. */
	if (!instrumented()) {
		assert_true(per_rss <= IDLE_QP_MAX);
		assert_true(per_heap <= IDLE_QP_MAX);
	}

	/* Every connection carries a Send and a Write; data verified. */
	lbu_fill(m->c.buf, (size_t)m->npairs * 2 * MSG_LEN, 77);
	for (i = 0; i < m->npairs; i++) {
		struct uiw_sge r = {
			.addr = (uint64_t)(uintptr_t)(m->s.buf +
						      (size_t)i * 2 * MSG_LEN),
			.length = MSG_LEN, .lkey = m->s.mr->lkey,
		};

		post_recv(m->s.qp[i], (uint64_t)i, &r);
	}
	for (i = 0; i < m->npairs; i++) {
		struct uiw_sge g = {
			.addr = (uint64_t)(uintptr_t)(m->c.buf +
						      (size_t)i * 2 * MSG_LEN),
			.length = MSG_LEN, .lkey = m->c.mr->lkey,
		};

		post(m->c.qp[i], (uint64_t)i, UIW_WR_SEND, &g, 0, 0);
	}
	memset(seen, 0, sizeof(seen));
	collect(m->c.cq, m->npairs, seen, UIW_WC_SEND);
	collect(m->s.cq, m->npairs, seen, UIW_WC_RECV);
	for (i = 0; i < m->npairs; i++)
		assert_int_equal(seen[i], 2);
	for (i = 0; i < m->npairs; i++) {
		size_t off = (size_t)i * 2 * MSG_LEN + MSG_LEN;
		struct uiw_sge g = {
			.addr = (uint64_t)(uintptr_t)(m->c.buf + off),
			.length = MSG_LEN, .lkey = m->c.mr->lkey,
		};

		post(m->c.qp[i], (uint64_t)i, UIW_WR_RDMA_WRITE, &g,
		     (uint64_t)(uintptr_t)(m->s.buf + off), m->s.mr->rkey);
	}
	/* A Write completes once sent; a zero-length Send after it
	 * (RFC 5040 §5.5: in order on the stream) arrives after it is
	 * placed. */
	for (i = 0; i < m->npairs; i++) {
		post_recv(m->s.qp[i], (uint64_t)i, NULL);
		post(m->c.qp[i], (uint64_t)i, UIW_WR_SEND, NULL, 0, 0);
	}
	memset(seen, 0, sizeof(seen));
	collect(m->c.cq, m->npairs, seen, UIW_WC_RDMA_WRITE);
	collect(m->c.cq, m->npairs, seen, UIW_WC_SEND);
	collect(m->s.cq, m->npairs, seen, UIW_WC_RECV);
	for (i = 0; i < m->npairs; i++)
		assert_int_equal(seen[i], 3);
	if (memcmp(m->s.buf, m->c.buf, (size_t)m->npairs * 2 * MSG_LEN))
		fail_msg("data at the sinks differs from the sources");
	printf("%d connections: a Send and a Write each, data verified, "
	       "%lld ms in all\n", m->npairs,
	       (long long)(lbu_now_ms() - t0));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_1000_qps, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
