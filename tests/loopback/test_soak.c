/*
 * Soak: 128 connections (or $UIW_SOAK_PAIRS, 1 to 128: fewer for slow
 * runs such as valgrind's), 256 QPs on one device, every client on one
 * shared CQ and every server on another.  Each round every connection
 * carries a Write, a Send and a Read from the client and a Send from
 * the server, with lengths that differ between connections and rounds;
 * all of it is posted before any of it is awaited.  Every completion is
 * counted per QP and work request (none lost, none twice, none on the
 * wrong QP) and every octet is verified.  Then everything is torn down
 * cleanly (run under LeakSanitizer or valgrind to see no leak).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "lb_util.h"

#define ACC_ALL (UIW_ACCESS_LOCAL_WRITE | UIW_ACCESS_REMOTE_WRITE | \
		 UIW_ACCESS_REMOTE_READ)

#define NPAIRS_MAX 128
#define ROUNDS 12
#define MAXLEN (32u * 1024u)

/* Work requests of one connection in one round. */
enum { K_WRITE, K_CSEND, K_READ, K_SRECV, K_SSEND, K_CRECV, NK };

struct conn {
	struct lbu_pair p;
	/* client: Write/Send source, Read sink, receive buffer */
	struct lbu_buf *wsrc, *ssrc, *rsink, *crecv;
	/* server: Write sink, receive buffer, Read source, Send source */
	struct lbu_buf *wdst, *srecv, *rsrc, *bsrc;
	int seen[ROUNDS][NK];
	int ncli, nsrv;			/* completions this round */
};

struct soak {
	struct uiw_device *dev;
	struct lbu_listener lst;
	struct uiw_cq *ccq, *scq;
	struct conn c[NPAIRS_MAX];
	int nconn;
	int npairs;			/* connections to make */
};

static size_t len_of(int pair, int round, int k)
{
	/* 1 .. MAXLEN, different for each connection, round and kind. */
	uint32_t x = (uint32_t)pair * 2654435761u ^
		     (uint32_t)(round * 8 + k) * 40503u;

	x ^= x >> 13;
	x *= 0x5bd1e995u;
	x ^= x >> 15;
	return 1 + x % MAXLEN;
}

static uint32_t seed_of(int pair, int round, int k)
{
	return (uint32_t)pair * 1000u + (uint32_t)round * 10u + (uint32_t)k;
}

static uint64_t wrid(int pair, int round, int k)
{
	return (uint64_t)pair << 16 | (uint64_t)round << 8 | (uint64_t)k;
}

/* $UIW_SOAK_PAIRS, or NPAIRS_MAX; -1 if it is not a number in range. */
static int soak_pairs(void)
{
	const char *v = getenv("UIW_SOAK_PAIRS");
	char *end;
	long n;

	if (!v || !*v)
		return NPAIRS_MAX;
	n = strtol(v, &end, 10);
	if (*end || n < 1 || n > NPAIRS_MAX) {
		print_error("UIW_SOAK_PAIRS=%s: expected 1 to %d\n", v,
			    NPAIRS_MAX);
		return -1;
	}
	return (int)n;
}

static int raise_nofile(int npairs)
{
	struct rlimit rl;
	/* Two sockets and a few descriptors (CQ and channel notification)
	 * per connection, and some spare. */
	rlim_t need = (rlim_t)npairs * 8 + 256;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return -1;
	if (rl.rlim_cur >= need)
		return 0;
	if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < need) {
		print_error("RLIMIT_NOFILE hard limit %llu < %llu\n",
			    (unsigned long long)rl.rlim_max,
			    (unsigned long long)need);
		return -1;
	}
	rl.rlim_cur = need;
	return setrlimit(RLIMIT_NOFILE, &rl);
}

static int setup(void **state)
{
	struct soak *s;
	int npairs = soak_pairs();

	if (npairs < 0 || raise_nofile(npairs) < 0)
		return -1;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -1;
	*state = s;
	s->npairs = npairs;
	s->dev = uiw_device_open(NULL);
	if (!s->dev) {
		print_error("uiw_device_open: %s\n", uiw_last_error());
		return -1;
	}
	if (lbu_listener_open(&s->lst, s->dev) < 0) {
		print_error("listener: %s\n", lbu_err());
		return -1;
	}
	/* Per round at most 4 completions per client and 2 per server. */
	s->ccq = uiw_cq_create(s->dev, npairs * 4 + 64);
	s->scq = uiw_cq_create(s->dev, npairs * 2 + 64);
	if (!s->ccq || !s->scq) {
		print_error("uiw_cq_create: %s\n", uiw_last_error());
		return -1;
	}
	return 0;
}

static int teardown(void **state)
{
	struct soak *s = *state;
	int i, rc, ret = 0;

	for (i = 0; i < s->nconn; i++) {
		if (lbu_pair_destroy(&s->c[i].p) < 0) {
			print_error("pair %d: %s\n", i, lbu_err());
			ret = -1;
		}
	}
	if (lbu_listener_close(&s->lst) < 0) {
		print_error("listener close: %s\n", lbu_err());
		ret = -1;
	}
	if (s->ccq && (rc = uiw_cq_destroy(s->ccq)) < 0) {
		print_error("uiw_cq_destroy: %d (%s)\n", rc, uiw_last_error());
		ret = -1;
	}
	if (s->scq && (rc = uiw_cq_destroy(s->scq)) < 0) {
		print_error("uiw_cq_destroy: %d (%s)\n", rc, uiw_last_error());
		ret = -1;
	}
	if (s->dev && (rc = uiw_device_close(s->dev)) < 0) {
		print_error("uiw_device_close: %d (%s)\n", rc,
			    uiw_last_error());
		ret = -1;
	}
	free(s);
	return ret;
}

static void post_round(struct soak *s, int i, int r)
{
	struct conn *c = &s->c[i];
	struct lbu_side *cl = &c->p.cli, *sv = &c->p.srv;
	size_t lw = len_of(i, r, K_WRITE), ls = len_of(i, r, K_CSEND);
	size_t lr = len_of(i, r, K_READ), lb = len_of(i, r, K_SSEND);

	c->ncli = c->nsrv = 0;
	memset(c->wdst->mem, 0, c->wdst->len);
	memset(c->srecv->mem, 0, c->srecv->len);
	memset(c->rsink->mem, 0, c->rsink->len);
	memset(c->crecv->mem, 0, c->crecv->len);
	lbu_fill(c->wsrc->mem, lw, seed_of(i, r, K_WRITE));
	lbu_fill(c->ssrc->mem, ls, seed_of(i, r, K_CSEND));
	lbu_fill(c->rsrc->mem, lr, seed_of(i, r, K_READ));
	lbu_fill(c->bsrc->mem, lb, seed_of(i, r, K_SSEND));

	LBU_OK(lbu_post_recv(sv, wrid(i, r, K_SRECV), c->srecv, 0, MAXLEN));
	LBU_OK(lbu_post_recv(cl, wrid(i, r, K_CRECV), c->crecv, 0, MAXLEN));
	/* RFC 5040 §5.5: the Write is placed before the Send behind it
	 * completes at the server, so both are checked then. */
	LBU_OK(lbu_post_send(cl, wrid(i, r, K_WRITE), UIW_WR_RDMA_WRITE,
			     UIW_SEND_SIGNALED, c->wsrc, 0, lw,
			     lbu_to(c->wdst, 0), c->wdst->mr->rkey, 0));
	LBU_OK(lbu_post_send(cl, wrid(i, r, K_CSEND), UIW_WR_SEND,
			     UIW_SEND_SIGNALED, c->ssrc, 0, ls, 0, 0, 0));
	LBU_OK(lbu_post_send(cl, wrid(i, r, K_READ), UIW_WR_RDMA_READ,
			     UIW_SEND_SIGNALED, c->rsink, 0, lr,
			     lbu_to(c->rsrc, 0), c->rsrc->mr->rkey, 0));
	LBU_OK(lbu_post_send(sv, wrid(i, r, K_SSEND), UIW_WR_SEND,
			     UIW_SEND_SIGNALED, c->bsrc, 0, lb, 0, 0, 0));
}

static void check_wc(struct soak *s, const struct uiw_wc *wc, int r,
		     int server)
{
	static const int opc[NK] = {
		[K_WRITE] = UIW_WC_RDMA_WRITE, [K_CSEND] = UIW_WC_SEND,
		[K_READ] = UIW_WC_RDMA_READ, [K_SRECV] = UIW_WC_RECV,
		[K_SSEND] = UIW_WC_SEND, [K_CRECV] = UIW_WC_RECV,
	};
	int i = (int)(wc->wr_id >> 16), wr = (int)(wc->wr_id >> 8 & 0xff);
	int k = (int)(wc->wr_id & 0xff);
	struct conn *c;
	char d[160];
	size_t len;

	if (i >= s->nconn || wr != r || k >= NK)
		fail_msg("round %d: unexpected completion %s", r,
			 lbu_wc_str(wc, d, sizeof(d)));
	c = &s->c[i];
	if (wc->qp != (server ? c->p.srv.qp : c->p.cli.qp))
		fail_msg("completion on the wrong QP: %s",
			 lbu_wc_str(wc, d, sizeof(d)));
	if (server != (k == K_SRECV || k == K_SSEND))
		fail_msg("completion on the wrong side: %s",
			 lbu_wc_str(wc, d, sizeof(d)));
	if (c->seen[r][k]++)
		fail_msg("duplicate completion: %s",
			 lbu_wc_str(wc, d, sizeof(d)));
	if (wc->status != UIW_WC_SUCCESS || (int)wc->opcode != opc[k])
		fail_msg("pair %d round %d: %s", i, r,
			 lbu_wc_str(wc, d, sizeof(d)));
	if (server)
		c->nsrv++;
	else
		c->ncli++;
	switch (k) {
	case K_SRECV:
		len = len_of(i, r, K_CSEND);
		assert_int_equal(wc->byte_len, len);
		LBU_OK(lbu_verify(c->srecv->mem, len, seed_of(i, r, K_CSEND),
				  "send data"));
		len = len_of(i, r, K_WRITE);
		LBU_OK(lbu_verify(c->wdst->mem, len, seed_of(i, r, K_WRITE),
				  "write data"));
		LBU_OK(lbu_verify_byte(c->wdst->mem + len,
				       c->wdst->len - len, 0,
				       "after write data"));
		break;
	case K_READ:
		len = len_of(i, r, K_READ);
		assert_int_equal(wc->byte_len, len);
		LBU_OK(lbu_verify(c->rsink->mem, len, seed_of(i, r, K_READ),
				  "read data"));
		LBU_OK(lbu_verify_byte(c->rsink->mem + len,
				       c->rsink->len - len, 0,
				       "after read data"));
		break;
	case K_CRECV:
		len = len_of(i, r, K_SSEND);
		assert_int_equal(wc->byte_len, len);
		LBU_OK(lbu_verify(c->crecv->mem, len, seed_of(i, r, K_SSEND),
				  "server send data"));
		break;
	case K_WRITE:
		assert_int_equal(wc->byte_len, len_of(i, r, K_WRITE));
		break;
	default:
		break;
	}
}

static int drain(struct soak *s, struct uiw_cq *cq, int r, int server)
{
	struct uiw_wc wc[64];
	int n, k, got = 0;

	for (;;) {
		n = uiw_cq_poll(cq, 64, wc);
		if (n < 0)
			fail_msg("uiw_cq_poll: %d (%s)", n, uiw_last_error());
		for (k = 0; k < n; k++)
			check_wc(s, &wc[k], r, server);
		got += n;
		if (n < 64)
			return got;
	}
}

static void wait_round(struct soak *s, int r)
{
	const int want_c = 4 * s->nconn, want_s = 2 * s->nconn;
	int64_t end = lbu_now_ms() + lbu_timeout_ms();
	int gc = 0, gs = 0, i;
	struct pollfd pfd[2];

	for (;;) {
		gc += drain(s, s->ccq, r, 0);
		gs += drain(s, s->scq, r, 1);
		if (gc >= want_c && gs >= want_s)
			break;
		if (lbu_now_ms() > end)
			fail_msg("round %d: %d of %d client and %d of %d "
				 "server completions", r, gc, want_c, gs,
				 want_s);
		assert_int_equal(uiw_cq_req_notify(s->ccq, 0), 0);
		assert_int_equal(uiw_cq_req_notify(s->scq, 0), 0);
		gc += drain(s, s->ccq, r, 0);
		gs += drain(s, s->scq, r, 1);
		if (gc >= want_c && gs >= want_s)
			break;
		pfd[0].fd = uiw_cq_fd(s->ccq);
		pfd[1].fd = uiw_cq_fd(s->scq);
		pfd[0].events = pfd[1].events = POLLIN;
		poll(pfd, 2, 100);
		uiw_cq_ack_events(s->ccq);
		uiw_cq_ack_events(s->scq);
	}
	/* Exactly the expected ones, each once (duplicates failed above). */
	assert_int_equal(gc, want_c);
	assert_int_equal(gs, want_s);
	for (i = 0; i < s->nconn; i++) {
		assert_int_equal(s->c[i].ncli, 4);
		assert_int_equal(s->c[i].nsrv, 2);
	}
	LBU_OK(lbu_cq_empty(s->ccq, "client CQ"));
	LBU_OK(lbu_cq_empty(s->scq, "server CQ"));
}

static void test_soak_256_qps(void **state)
{
	struct soak *s = *state;
	struct lbu_opts o;
	int64_t t0 = lbu_now_ms(), t1, t2;
	int i, r;

	for (i = 0; i < s->npairs; i++) {
		struct conn *c = &s->c[i];

		lbu_opts_init(&o);
		o.cli_dev = o.srv_dev = s->dev;
		o.lst = &s->lst;
		o.cli_scq = o.cli_rcq = s->ccq;
		o.srv_scq = o.srv_rcq = s->scq;
		o.sq_depth = 8;
		o.rq_depth = 4;
		o.crc = i % 2 ? UIW_OPT_OFF : UIW_OPT_ON;
		o.cli_markers = i % 5 == 1 ? UIW_OPT_ON : UIW_OPT_OFF;
		o.srv_markers = i % 7 == 2 ? UIW_OPT_ON : UIW_OPT_OFF;
		LBU_OK(lbu_pair_connect(&c->p, &o));
		s->nconn++;
		LBU_NN(c->wsrc = lbu_buf_alloc(&c->p.cli, MAXLEN, ACC_ALL));
		LBU_NN(c->ssrc = lbu_buf_alloc(&c->p.cli, MAXLEN, ACC_ALL));
		LBU_NN(c->rsink = lbu_buf_alloc(&c->p.cli, MAXLEN, ACC_ALL));
		LBU_NN(c->crecv = lbu_buf_alloc(&c->p.cli, MAXLEN, ACC_ALL));
		LBU_NN(c->wdst = lbu_buf_alloc(&c->p.srv, MAXLEN, ACC_ALL));
		LBU_NN(c->srecv = lbu_buf_alloc(&c->p.srv, MAXLEN, ACC_ALL));
		LBU_NN(c->rsrc = lbu_buf_alloc(&c->p.srv, MAXLEN, ACC_ALL));
		LBU_NN(c->bsrc = lbu_buf_alloc(&c->p.srv, MAXLEN, ACC_ALL));
	}
	t1 = lbu_now_ms();
	for (r = 0; r < ROUNDS; r++) {
		for (i = 0; i < s->npairs; i++)
			post_round(s, i, r);
		wait_round(s, r);
	}
	for (i = 0; i < s->npairs; i++) {
		assert_int_equal(lbu_qp_state(&s->c[i].p.cli, NULL),
				 UIW_QPS_RTS);
		assert_int_equal(lbu_qp_state(&s->c[i].p.srv, NULL),
				 UIW_QPS_RTS);
	}
	t2 = lbu_now_ms();
	/* Graceful teardown of every connection, checked here rather than
	 * only in the fixture. */
	for (i = 0; i < s->npairs; i++)
		LBU_OK(lbu_pair_disconnect(&s->c[i].p));
	print_message("soak: %d QPs, connect %" PRId64 " ms, %d rounds %" PRId64
		      " ms, disconnect %" PRId64 " ms\n", 2 * s->npairs,
		      t1 - t0, ROUNDS,
		      t2 - t1, lbu_now_ms() - t2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_soak_256_qps, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
