/*
 * Faults on the wire: a client connects through the fault-injecting
 * proxy (faultproxy.h) to a server in the same process, and the proxy
 * splits, corrupts, resets or half-closes the stream.
 *
 *  - split into 1-octet writes both ways: Sends, Writes and Reads of
 *    several sizes give the same completions and data as without it;
 *  - one bit flipped inside an FPDU with CRC on: the receiver detects
 *    it, Terminates with the LLP CRC error (RFC 5044 §8 / RFC 5040 §7.2:
 *    layer 2, type 0, code 2) and no damaged message completes with
 *    success;
 *  - a reset, or one direction closed, in the middle of a sequence of
 *    Sends and Reads: every outstanding work request on both sides
 *    completes exactly once, a success only for data that fully
 *    arrived, both QPs leave RTS, both ids see DISCONNECTED and
 *    everything is destroyed cleanly.
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

#include "faultproxy.h"
#include "lb_util.h"

#define ACC_ALL (UIW_ACCESS_LOCAL_WRITE | UIW_ACCESS_REMOTE_WRITE | \
		 UIW_ACCESS_REMOTE_READ)

struct fx {
	struct uiw_device *dev;
	struct lbu_listener lst;
	uint16_t srv_port;		/* the listener's own port */
	struct uiw_fp *fp;
	struct lbu_pair pair;
	int connected;
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	*state = f;
	f->dev = uiw_device_open(NULL);
	if (!f->dev) {
		print_error("uiw_device_open: %s\n", uiw_last_error());
		return -1;
	}
	if (lbu_listener_open(&f->lst, f->dev) < 0) {
		print_error("listener: %s\n", lbu_err());
		return -1;
	}
	f->srv_port = f->lst.port;
	f->fp = uiw_fp_start_to("127.0.0.1", f->srv_port, NULL);
	if (!f->fp) {
		print_error("uiw_fp_start_to: %s\n", strerror(errno));
		return -1;
	}
	/* The client side of lb_util connects to lst.port: the proxy. */
	f->lst.port = uiw_fp_port(f->fp);
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	int rc, ret = 0;

	if (f->connected && lbu_pair_destroy(&f->pair) < 0) {
		print_error("pair destroy: %s\n", lbu_err());
		ret = -1;
	}
	f->lst.port = f->srv_port;
	if (lbu_listener_close(&f->lst) < 0) {
		print_error("listener close: %s\n", lbu_err());
		ret = -1;
	}
	uiw_fp_stop(f->fp);
	if (f->dev) {
		rc = uiw_device_close(f->dev);
		if (rc < 0) {
			print_error("uiw_device_close: %d (%s)\n", rc,
				    uiw_last_error());
			ret = -1;
		}
	}
	free(f);
	return ret;
}

static void fx_connect(struct fx *f, uint32_t depth)
{
	struct lbu_opts o;

	lbu_opts_init(&o);
	o.cli_dev = o.srv_dev = f->dev;
	o.lst = &f->lst;
	o.crc = UIW_OPT_ON;
	o.sq_depth = depth;
	o.rq_depth = depth;
	o.cli_ord = o.srv_ird = 8;
	o.srv_ord = o.cli_ird = 8;
	LBU_OK(lbu_pair_connect(&f->pair, &o));
	f->connected = 1;
}

static uint64_t fp_offset(struct fx *f, enum uiw_fp_dir dir)
{
	struct uiw_fp_stats st;

	uiw_fp_get_stats(f->fp, &st);
	return st.offset[dir];
}

/* ------------------------------------------------------------------ */
/* (a) 1-octet segments both ways                                     */

static void test_split_one(void **state)
{
	static const size_t sizes[] = { 1, 7, 1000, 4096, 20001 };
	struct fx *f = *state;
	struct lbu_side *c, *s;
	struct lbu_buf *csrc, *csink, *sdst, *ssrc;
	struct uiw_wc wc;
	size_t i, n = sizeof(sizes) / sizeof(sizes[0]);
	struct uiw_fp_stats st;

	assert_int_equal(uiw_fp_split(f->fp, UIW_FP_C2S, 1), 0);
	assert_int_equal(uiw_fp_split(f->fp, UIW_FP_S2C, 1), 0);
	fx_connect(f, 16);
	c = &f->pair.cli;
	s = &f->pair.srv;
	LBU_NN(csrc = lbu_buf_alloc(c, 32768, ACC_ALL));
	LBU_NN(csink = lbu_buf_alloc(c, 32768, ACC_ALL));
	LBU_NN(sdst = lbu_buf_alloc(s, 32768, ACC_ALL));
	LBU_NN(ssrc = lbu_buf_alloc(s, 32768, ACC_ALL));

	for (i = 0; i < n; i++) {
		size_t len = sizes[i];
		uint32_t seed = 100 + (uint32_t)i;

		/* Send into a receive. */
		lbu_fill(csrc->mem, len, seed);
		memset(sdst->mem, 0, sdst->len);
		LBU_OK(lbu_post_recv(s, 10 + i, sdst, 0, len));
		LBU_OK(lbu_post_send(c, 20 + i, UIW_WR_SEND,
				     UIW_SEND_SIGNALED, csrc, 0, len, 0, 0,
				     0));
		LBU_OK(lbu_expect_wc(c->scq, 20 + i, UIW_WC_SUCCESS,
				     UIW_WC_SEND, NULL));
		LBU_OK(lbu_expect_wc(s->rcq, 10 + i, UIW_WC_SUCCESS,
				     UIW_WC_RECV, &wc));
		assert_int_equal(wc.byte_len, len);
		LBU_OK(lbu_verify(sdst->mem, len, seed, "send data"));
		LBU_OK(lbu_verify_byte(sdst->mem + len, sdst->len - len, 0,
				       "after send data"));

		/* Write, then a zero-length Send that RFC 5040 §5.5 orders
		 * after it, so the data is placed when the Send lands. */
		lbu_fill(csrc->mem, len, seed + 50);
		memset(sdst->mem, 0, sdst->len);
		LBU_OK(lbu_post_recv(s, 30 + i, sdst, 0, 0));
		LBU_OK(lbu_post_send(c, 40 + i, UIW_WR_RDMA_WRITE,
				     UIW_SEND_SIGNALED, csrc, 0, len,
				     lbu_to(sdst, 3), sdst->mr->rkey, 0));
		LBU_OK(lbu_post_send(c, 50 + i, UIW_WR_SEND,
				     UIW_SEND_SIGNALED, NULL, 0, 0, 0, 0, 0));
		LBU_OK(lbu_expect_wc(c->scq, 40 + i, UIW_WC_SUCCESS,
				     UIW_WC_RDMA_WRITE, &wc));
		assert_int_equal(wc.byte_len, len);
		LBU_OK(lbu_expect_wc(c->scq, 50 + i, UIW_WC_SUCCESS,
				     UIW_WC_SEND, NULL));
		LBU_OK(lbu_expect_wc(s->rcq, 30 + i, UIW_WC_SUCCESS,
				     UIW_WC_RECV, &wc));
		assert_int_equal(wc.byte_len, 0);
		LBU_OK(lbu_verify_byte(sdst->mem, 3, 0, "before write"));
		LBU_OK(lbu_verify(sdst->mem + 3, len, seed + 50,
				  "write data"));
		LBU_OK(lbu_verify_byte(sdst->mem + 3 + len,
				       sdst->len - 3 - len, 0,
				       "after write data"));

		/* Read from the server into the client. */
		lbu_fill(ssrc->mem + 5, len, seed + 90);
		memset(csink->mem, 0, csink->len);
		LBU_OK(lbu_post_send(c, 60 + i, UIW_WR_RDMA_READ,
				     UIW_SEND_SIGNALED, csink, 1, len,
				     lbu_to(ssrc, 5), ssrc->mr->rkey, 0));
		LBU_OK(lbu_expect_wc(c->scq, 60 + i, UIW_WC_SUCCESS,
				     UIW_WC_RDMA_READ, &wc));
		assert_int_equal(wc.byte_len, len);
		LBU_OK(lbu_verify_byte(csink->mem, 1, 0, "before read"));
		LBU_OK(lbu_verify(csink->mem + 1, len, seed + 90,
				  "read data"));
		LBU_OK(lbu_verify_byte(csink->mem + 1 + len,
				       csink->len - 1 - len, 0,
				       "after read data"));
	}
	LBU_OK(lbu_cq_empty(c->scq, "client send CQ"));
	LBU_OK(lbu_cq_empty(c->rcq, "client recv CQ"));
	LBU_OK(lbu_cq_empty(s->scq, "server send CQ"));
	LBU_OK(lbu_cq_empty(s->rcq, "server recv CQ"));
	assert_int_equal(lbu_qp_state(c, NULL), UIW_QPS_RTS);
	assert_int_equal(lbu_qp_state(s, NULL), UIW_QPS_RTS);

	/* The proxy really cut everything into single octets. */
	uiw_fp_get_stats(f->fp, &st);
	assert_true(st.writes[UIW_FP_C2S] == st.offset[UIW_FP_C2S]);
	assert_true(st.writes[UIW_FP_S2C] == st.offset[UIW_FP_S2C]);
	assert_true(st.offset[UIW_FP_S2C] > 20001);
	LBU_OK(lbu_pair_disconnect(&f->pair));
}

/* ------------------------------------------------------------------ */
/* Completion accounting                                              */

/* wr_id: side << 16 | idx; kind says how to check a success. */
enum wr_kind { K_NONE, K_SEND, K_RECV, K_READ };

#define MAXWR 64
struct acct {
	struct lbu_side *side;
	enum wr_kind kind[MAXWR];
	uint32_t seed[MAXWR];
	uint8_t *mem[MAXWR];
	size_t len[MAXWR];
	int seen[MAXWR];
	int succ[MAXWR];
	int posted, done, ok, bad;
};

static void acct_init(struct acct *a, struct lbu_side *s)
{
	memset(a, 0, sizeof(*a));
	a->side = s;
}

static int acct_add(struct acct *a, enum wr_kind k, uint8_t *mem,
		    size_t len, uint32_t seed)
{
	int i = a->posted++;

	assert_true(i < MAXWR);
	a->kind[i] = k;
	a->mem[i] = mem;
	a->len[i] = len;
	a->seed[i] = seed;
	return i;
}

static void acct_one(struct acct *a, const struct uiw_wc *wc)
{
	char d[160];
	uint64_t i = wc->wr_id;

	if (i >= (uint64_t)a->posted)
		fail_msg("%s: completion of a WR never posted: %s",
			 a->side->name, lbu_wc_str(wc, d, sizeof(d)));
	if (a->seen[i]++)
		fail_msg("%s: WR %" PRIu64 " completed twice: %s",
			 a->side->name, i, lbu_wc_str(wc, d, sizeof(d)));
	a->done++;
	if (wc->status != UIW_WC_SUCCESS) {
		a->bad++;
		return;
	}
	a->ok++;
	a->succ[i] = 1;
	/* A success only for a message that fully arrived. */
	switch (a->kind[i]) {
	case K_RECV:
		assert_int_equal(wc->opcode, UIW_WC_RECV);
		/* fallthrough */
	case K_READ:
		if (wc->byte_len != a->len[i])
			fail_msg("%s: WR %" PRIu64 " success with %u of %zu "
				 "octets", a->side->name, i, wc->byte_len,
				 a->len[i]);
		LBU_OK(lbu_verify(a->mem[i], a->len[i], a->seed[i],
				  "data of a successful completion"));
		break;
	default:
		break;
	}
}

static int poll_cq(struct uiw_cq *cq, struct acct *a)
{
	struct uiw_wc wc[16];
	int n, k, got = 0;

	for (;;) {
		n = uiw_cq_poll(cq, 16, wc);
		if (n < 0)
			fail_msg("uiw_cq_poll: %d (%s)", n, uiw_last_error());
		for (k = 0; k < n; k++)
			acct_one(a, &wc[k]);
		got += n;
		if (n < 16)
			return got;
	}
}

/* Waits until every WR of both sides has completed, with a deadline;
 * between polls poll(2) on the CQ fds after arming them. */
static void collect(struct acct *ca, struct acct *sa)
{
	struct acct *acc[2] = { ca, sa };
	int64_t end = lbu_now_ms() + lbu_timeout_ms();
	struct pollfd pfd[4];
	struct uiw_cq *cqs[4];
	int i, j;

	for (;;) {
		for (i = 0; i < 2; i++) {
			poll_cq(acc[i]->side->scq, acc[i]);
			if (acc[i]->side->rcq != acc[i]->side->scq)
				poll_cq(acc[i]->side->rcq, acc[i]);
		}
		if (ca->done == ca->posted && sa->done == sa->posted)
			break;
		if (lbu_now_ms() > end)
			fail_msg("completions: client %d of %d, server %d of "
				 "%d after %d ms", ca->done, ca->posted,
				 sa->done, sa->posted, lbu_timeout_ms());
		for (i = j = 0; i < 2; i++) {
			cqs[j++] = acc[i]->side->scq;
			if (acc[i]->side->rcq != acc[i]->side->scq)
				cqs[j++] = acc[i]->side->rcq;
		}
		for (i = 0; i < j; i++) {
			assert_int_equal(uiw_cq_req_notify(cqs[i], 0), 0);
			pfd[i].fd = uiw_cq_fd(cqs[i]);
			pfd[i].events = POLLIN;
		}
		/* Completions that came before arming are polled first. */
		for (i = 0; i < 2; i++) {
			poll_cq(acc[i]->side->scq, acc[i]);
			if (acc[i]->side->rcq != acc[i]->side->scq)
				poll_cq(acc[i]->side->rcq, acc[i]);
		}
		if (ca->done == ca->posted && sa->done == sa->posted)
			break;
		poll(pfd, (nfds_t)j, 100);
		for (i = 0; i < j; i++)
			uiw_cq_ack_events(cqs[i]);
	}
}

/* After the fault: QPs out of RTS, DISCONNECTED on both, no further
 * completion, clean destruction. */
static void after_fault(struct fx *f, struct acct *ca, struct acct *sa)
{
	struct lbu_side *c = &f->pair.cli, *s = &f->pair.srv;
	int st;

	collect(ca, sa);
	LBU_OK(lbu_wait_disconnected(c));
	LBU_OK(lbu_wait_disconnected(s));
	st = lbu_qp_state(c, NULL);
	assert_true(st >= 0 && st != UIW_QPS_RTS);
	st = lbu_qp_state(s, NULL);
	assert_true(st >= 0 && st != UIW_QPS_RTS);
	/* Exactly once: nothing more arrives. */
	assert_int_equal(poll_cq(c->scq, ca), 0);
	assert_int_equal(poll_cq(c->rcq, ca), 0);
	assert_int_equal(poll_cq(s->scq, sa), 0);
	assert_int_equal(poll_cq(s->rcq, sa), 0);
	assert_int_equal(ca->done, ca->posted);
	assert_int_equal(sa->done, sa->posted);
	LBU_OK(lbu_pair_destroy(&f->pair));
	f->connected = 0;
}

/* ------------------------------------------------------------------ */
/* (b) a flipped bit                                                  */

/* The damaged message is a Send (write == 0) into a posted receive, or
 * a Write followed by a Send into a posted receive (write == 1). */
static void flip_case(struct fx *f, int write)
{
	struct lbu_side *c, *s;
	struct lbu_buf *csrc, *csink, *sdst, *ssrc;
	struct acct ca, sa;
	struct uiw_qp_attr qa;
	const size_t len = 64 * 1024;
	uint64_t at;
	int i, id;

	fx_connect(f, 16);
	c = &f->pair.cli;
	s = &f->pair.srv;
	LBU_NN(csrc = lbu_buf_alloc(c, len, ACC_ALL));
	LBU_NN(csink = lbu_buf_alloc(c, len, ACC_ALL));
	LBU_NN(sdst = lbu_buf_alloc(s, 2 * len, ACC_ALL));
	LBU_NN(ssrc = lbu_buf_alloc(s, len, ACC_ALL));
	assert_true(c->attr.mulpdu > 1200);
	acct_init(&ca, c);
	acct_init(&sa, s);

	/* The client has sent everything up to here (MPA startup and the
	 * first Send); the next FPDU starts at this offset.  Octet 1000
	 * of it is inside the payload of the Send or Write: its header
	 * (MPA 2 + DDP/RDMAP at most 18) < 1000 < mulpdu. */
	at = fp_offset(f, UIW_FP_C2S);
	/* Nothing goes out before every WR is posted: a fault that fires
	 * earlier would make the later posts fail. */
	assert_int_equal(uiw_fp_stall(f->fp, UIW_FP_C2S, at), 0);
	assert_int_equal(uiw_fp_flip(f->fp, UIW_FP_C2S, at + 1000, 3), 0);

	for (i = 0; i < 2; i++) {
		id = acct_add(&sa, K_RECV, sdst->mem + (size_t)i * len, len,
			      700 + (uint32_t)i);
		LBU_OK(lbu_post_recv(s, (uint64_t)id, sdst, (size_t)i * len,
				     len));
	}
	/* The damaged message, then a Read behind it. */
	lbu_fill(csrc->mem, len, 700);
	if (write) {
		id = acct_add(&ca, K_NONE, NULL, len, 0);
		LBU_OK(lbu_post_send(c, (uint64_t)id, UIW_WR_RDMA_WRITE,
				     UIW_SEND_SIGNALED, csrc, 0, len,
				     lbu_to(sdst, len), sdst->mr->rkey, 0));
		id = acct_add(&ca, K_SEND, NULL, 0, 0);
		LBU_OK(lbu_post_send(c, (uint64_t)id, UIW_WR_SEND,
				     UIW_SEND_SIGNALED, NULL, 0, 0, 0, 0, 0));
	} else {
		id = acct_add(&ca, K_SEND, NULL, len, 700);
		LBU_OK(lbu_post_send(c, (uint64_t)id, UIW_WR_SEND,
				     UIW_SEND_SIGNALED, csrc, 0, len, 0, 0,
				     0));
	}
	lbu_fill(ssrc->mem, len, 800);
	id = acct_add(&ca, K_READ, csink->mem, len, 800);
	LBU_OK(lbu_post_send(c, (uint64_t)id, UIW_WR_RDMA_READ,
			     UIW_SEND_SIGNALED, csink, 0, len,
			     lbu_to(ssrc, 0), ssrc->mr->rkey, 0));
	assert_int_equal(uiw_fp_release(f->fp, UIW_FP_C2S), 0);

	collect(&ca, &sa);
	/* The receiver got nothing, the Read never completed. */
	assert_int_equal(sa.ok, 0);
	assert_int_equal(sa.bad, 2);
	/* The Read behind the damaged message fails; the message itself
	 * may have left (and completed) before the Terminate came back. */
	assert_int_equal(ca.succ[ca.posted - 1], 0);
	assert_true(ca.ok <= ca.posted - 1);

	/* RFC 5044 §8 / RFC 5040 §7.2: LLP layer, type 0, code 2 (MPA
	 * CRC error), sent by the server. */
	assert_int_equal(lbu_qp_state(s, &qa) != UIW_QPS_RTS, 1);
	if (qa.term.origin != UIW_TERM_LOCAL ||
	    qa.term.layer != UIW_TERM_LAYER_LLP || qa.term.etype != 0 ||
	    qa.term.ecode != 2)
		fail_msg("server term cause %u/%u/%u origin %u (%s)",
			 qa.term.layer, qa.term.etype, qa.term.ecode,
			 qa.term.origin, qa.term_msg);
	assert_int_equal(lbu_qp_state(c, &qa) != UIW_QPS_RTS, 1);
	if (qa.term.origin != UIW_TERM_REMOTE ||
	    qa.term.layer != UIW_TERM_LAYER_LLP || qa.term.etype != 0 ||
	    qa.term.ecode != 2)
		fail_msg("client term cause %u/%u/%u origin %u (%s)",
			 qa.term.layer, qa.term.etype, qa.term.ecode,
			 qa.term.origin, qa.term_msg);
	{
		struct uiw_fp_stats st;

		uiw_fp_get_stats(f->fp, &st);
		assert_int_equal(st.flips, 1);
	}
	after_fault(f, &ca, &sa);
}

static void test_flip_send(void **state)
{
	flip_case(*state, 0);
}

static void test_flip_write(void **state)
{
	flip_case(*state, 1);
}

/* ------------------------------------------------------------------ */
/* (c), (d) reset or half-close mid-transfer                          */

#define MLEN (64u * 1024u)
#define NSEND 12		/* client Sends into server receives */
#define NREAD 6			/* client Reads of server memory */
#define NBACK 6			/* server Sends into client receives */

enum fault { F_RESET_C2S, F_RESET_S2C, F_SHUT_C2S, F_SHUT_S2C };

/* The receives of a (posted first, in order) succeeded for a prefix of
 * at least min and less than all n of them. */
static void check_prefix(const struct acct *a, int min, int n)
{
	int i, k = 0;

	while (k < n && a->succ[k])
		k++;
	for (i = k; i < n; i++)
		if (a->succ[i])
			fail_msg("%s: receive %d succeeded after %d failed",
				 a->side->name, i, k);
	if (k < min || k >= n)
		fail_msg("%s: %d of %d receives succeeded, expected %d to %d",
			 a->side->name, k, n, min, n - 1);
}

static void mid_transfer(struct fx *f, enum fault fault)
{
	struct lbu_side *c, *s;
	struct lbu_buf *csrc, *csink, *crecv, *sdst, *ssrc, *ssend;
	struct acct ca, sa;
	uint64_t at;
	int i, id, rc;

	fx_connect(f, 32);
	c = &f->pair.cli;
	s = &f->pair.srv;
	LBU_NN(csrc = lbu_buf_alloc(c, NSEND * MLEN, ACC_ALL));
	LBU_NN(csink = lbu_buf_alloc(c, NREAD * MLEN, ACC_ALL));
	LBU_NN(crecv = lbu_buf_alloc(c, NBACK * MLEN, ACC_ALL));
	LBU_NN(sdst = lbu_buf_alloc(s, NSEND * MLEN, ACC_ALL));
	LBU_NN(ssrc = lbu_buf_alloc(s, NREAD * MLEN, ACC_ALL));
	LBU_NN(ssend = lbu_buf_alloc(s, NBACK * MLEN, ACC_ALL));
	acct_init(&ca, c);
	acct_init(&sa, s);

	/* Both directions hold until every WR is posted: a fault that
	 * fired earlier would make the later posts fail. */
	assert_int_equal(uiw_fp_stall(f->fp, UIW_FP_C2S,
				      fp_offset(f, UIW_FP_C2S)), 0);
	assert_int_equal(uiw_fp_stall(f->fp, UIW_FP_S2C,
				      fp_offset(f, UIW_FP_S2C)), 0);
	/* Half of the Sends get through, the fault hits in the middle of
	 * one (an offset inside the 7th message's payload). */
	switch (fault) {
	case F_RESET_C2S:
		at = fp_offset(f, UIW_FP_C2S) + 6 * (uint64_t)MLEN + 3333;
		rc = uiw_fp_reset(f->fp, UIW_FP_C2S, at);
		break;
	case F_RESET_S2C:
		at = fp_offset(f, UIW_FP_S2C) + 3 * (uint64_t)MLEN + 3333;
		rc = uiw_fp_reset(f->fp, UIW_FP_S2C, at);
		break;
	case F_SHUT_C2S:
		at = fp_offset(f, UIW_FP_C2S) + 6 * (uint64_t)MLEN + 3333;
		rc = uiw_fp_shut(f->fp, UIW_FP_C2S, at);
		break;
	default:
		at = fp_offset(f, UIW_FP_S2C) + 3 * (uint64_t)MLEN + 3333;
		rc = uiw_fp_shut(f->fp, UIW_FP_S2C, at);
		break;
	}
	assert_int_equal(rc, 0);

	for (i = 0; i < NSEND; i++) {
		id = acct_add(&sa, K_RECV, sdst->mem + (size_t)i * MLEN,
			      MLEN, 1000 + (uint32_t)i);
		LBU_OK(lbu_post_recv(s, (uint64_t)id, sdst,
				     (size_t)i * MLEN, MLEN));
	}
	for (i = 0; i < NBACK; i++) {
		id = acct_add(&ca, K_RECV, crecv->mem + (size_t)i * MLEN,
			      MLEN, 2000 + (uint32_t)i);
		LBU_OK(lbu_post_recv(c, (uint64_t)id, crecv,
				     (size_t)i * MLEN, MLEN));
	}
	for (i = 0; i < NREAD; i++)
		lbu_fill(ssrc->mem + (size_t)i * MLEN, MLEN,
			 3000 + (uint32_t)i);
	for (i = 0; i < NSEND; i++) {
		lbu_fill(csrc->mem + (size_t)i * MLEN, MLEN,
			 1000 + (uint32_t)i);
		id = acct_add(&ca, K_SEND, NULL, MLEN, 1000 + (uint32_t)i);
		LBU_OK(lbu_post_send(c, (uint64_t)id, UIW_WR_SEND,
				     UIW_SEND_SIGNALED, csrc,
				     (size_t)i * MLEN, MLEN, 0, 0, 0));
		if (i % 2 == 0 && i / 2 < NREAD) {
			int r = i / 2;

			id = acct_add(&ca, K_READ,
				      csink->mem + (size_t)r * MLEN, MLEN,
				      3000 + (uint32_t)r);
			LBU_OK(lbu_post_send(c, (uint64_t)id,
					     UIW_WR_RDMA_READ,
					     UIW_SEND_SIGNALED, csink,
					     (size_t)r * MLEN, MLEN,
					     lbu_to(ssrc, (size_t)r * MLEN),
					     ssrc->mr->rkey, 0));
		}
	}
	for (i = 0; i < NBACK; i++) {
		lbu_fill(ssend->mem + (size_t)i * MLEN, MLEN,
			 2000 + (uint32_t)i);
		id = acct_add(&sa, K_SEND, NULL, MLEN, 2000 + (uint32_t)i);
		LBU_OK(lbu_post_send(s, (uint64_t)id, UIW_WR_SEND,
				     UIW_SEND_SIGNALED, ssend,
				     (size_t)i * MLEN, MLEN, 0, 0, 0));
	}
	assert_int_equal(uiw_fp_release(f->fp, UIW_FP_C2S), 0);
	assert_int_equal(uiw_fp_release(f->fp, UIW_FP_S2C), 0);
	after_fault(f, &ca, &sa);
	/* The fault really hit in the middle: the receives before it
	 * succeeded, the one it cut and those after it did not.  The
	 * server's Sends are queued before any Read request reaches it,
	 * so they lead its direction of the stream.  A FIN leaves what came before it readable; a RST lets the
	 * receiving kernel discard what its socket held unread, so after
	 * a reset any prefix (even none) is right. */
	switch (fault) {
	case F_SHUT_C2S:
		check_prefix(&sa, 4, NSEND);
		break;
	case F_SHUT_S2C:
		check_prefix(&ca, 1, NBACK);
		break;
	case F_RESET_C2S:
		check_prefix(&sa, 0, NSEND);
		break;
	case F_RESET_S2C:
		check_prefix(&ca, 0, NBACK);
		break;
	}
	/* The side that lost data has failures; with only the server's
	 * direction cut, the server may legitimately see none (its Sends
	 * left, the client's all arrived). */
	assert_true(ca.bad > 0);
	if (fault == F_RESET_C2S || fault == F_SHUT_C2S)
		assert_true(sa.bad > 0);
}

static void test_reset_c2s_mid(void **state)
{
	mid_transfer(*state, F_RESET_C2S);
}

static void test_reset_s2c_mid(void **state)
{
	mid_transfer(*state, F_RESET_S2C);
}

static void test_shut_c2s_mid(void **state)
{
	mid_transfer(*state, F_SHUT_C2S);
}

static void test_shut_s2c_mid(void **state)
{
	mid_transfer(*state, F_SHUT_S2C);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_split_one, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_flip_send, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_flip_write, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_reset_c2s_mid, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_reset_s2c_mid, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_shut_c2s_mid, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_shut_s2c_mid, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
