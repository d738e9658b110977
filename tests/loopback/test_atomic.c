/*
 * RFC 7306 over 127.0.0.1 through the public API: FetchAdd and CmpSwap
 * in their plain and masked forms; Immediate Data with and without SE
 * (contents and order of the completions, the solicited event); Write
 * with Immediate from 0 octets to 16 MiB, the data placed when the
 * Immediate Data completes; 8 connections on 8 threads doing FetchAdds
 * of 1 on one word of one device, and a CmpSwap lock guarding a counter
 * under contention; and the errors a requester sees from the responder
 * (a misaligned target, a region without the remote atomic right).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lb_util.h"

#define MIB (1024u * 1024u)
#define ACC_ALL (UIW_ACCESS_LOCAL_WRITE | UIW_ACCESS_REMOTE_WRITE | \
		 UIW_ACCESS_REMOTE_READ | UIW_ACCESS_REMOTE_ATOMIC)

static int post_atomic(struct lbu_side *s, uint64_t id,
		       enum uiw_wr_opcode op, unsigned flags,
		       struct lbu_buf *res, size_t off, struct lbu_buf *tgt,
		       size_t toff, uint64_t ca, uint64_t swap, uint64_t cam,
		       uint64_t sm)
{
	struct uiw_sge sge = {
		.addr = (uint64_t)(uintptr_t)(res->mem + off),
		.length = 8,
		.lkey = res->mr->lkey,
	};
	struct uiw_send_wr wr;
	int rc;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = id;
	wr.opcode = op;
	wr.send_flags = flags | UIW_SEND_SIGNALED;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.wr.atomic.remote_addr = lbu_to(tgt, toff);
	wr.wr.atomic.rkey = tgt->mr->rkey;
	wr.wr.atomic.compare_add = ca;
	wr.wr.atomic.swap = swap;
	wr.wr.atomic.compare_add_mask = cam;
	wr.wr.atomic.swap_mask = sm;
	rc = uiw_post_send(s->qp, &wr, NULL);
	if (rc < 0)
		return lbu_fail("%s: atomic %" PRIu64 ": %s (%s)", s->name, id,
				strerror(-rc), uiw_last_error());
	return 0;
}

static int post_imm(struct lbu_side *s, uint64_t id,
		    enum uiw_wr_opcode op, unsigned flags, struct lbu_buf *b,
		    size_t len, struct lbu_buf *tgt, uint64_t imm)
{
	struct uiw_sge sge;
	struct uiw_send_wr wr;
	int rc;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = id;
	wr.opcode = op;
	wr.send_flags = flags | UIW_SEND_SIGNALED;
	wr.imm_data = imm;
	if (len) {
		sge.addr = (uint64_t)(uintptr_t)b->mem;
		sge.length = (uint32_t)len;
		sge.lkey = b->mr->lkey;
		wr.sg_list = &sge;
		wr.num_sge = 1;
	}
	if (tgt) {
		wr.wr.rdma.remote_addr = lbu_to(tgt, 0);
		wr.wr.rdma.rkey = tgt->mr->rkey;
	}
	rc = uiw_post_send(s->qp, &wr, NULL);
	if (rc < 0)
		return lbu_fail("%s: post %" PRIu64 ": %s (%s)", s->name, id,
				strerror(-rc), uiw_last_error());
	return 0;
}

static uint64_t word(const struct lbu_buf *b, size_t off)
{
	uint64_t v;

	memcpy(&v, b->mem + off, 8);
	return v;
}

static void set_word(struct lbu_buf *b, size_t off, uint64_t v)
{
	memcpy(b->mem + off, &v, 8);
}

static void pair_open(struct lbu_pair *p, int markers)
{
	struct lbu_opts o;

	lbu_opts_init(&o);
	o.crc = UIW_OPT_ON;
	o.cli_markers = o.srv_markers = markers ? UIW_OPT_ON : UIW_OPT_OFF;
	o.sq_sig_all = 1;
	o.rq_depth = 256;
	o.cq_depth = 512;
	LBU_OK(lbu_pair_connect(p, &o));
}

/* ---- Atomics ------------------------------------------------------------- */

static void run_atomics(int markers)
{
	struct uiw_device_attr at;
	struct lbu_pair p;
	struct lbu_buf *res, *tgt;
	struct uiw_wc wc[8];
	int i;

	pair_open(&p, markers);
	LBU_OK(uiw_device_query(p.srv.dev, &at));
	assert_true(at.cap_flags & UIW_DEV_CAP_ATOMIC);
	assert_true(at.cap_flags & UIW_DEV_CAP_IMM_DATA);
	LBU_NN(res = lbu_buf_alloc(&p.cli, 64, UIW_ACCESS_LOCAL_WRITE));
	LBU_NN(tgt = lbu_buf_alloc(&p.srv, 64, ACC_ALL));
	set_word(tgt, 0, 100);
	set_word(tgt, 8, 0x00000001ffffffffull);
	set_word(tgt, 16, 7);
	set_word(tgt, 24, 0x1234567800000042ull);
	/* plain FetchAdd, masked FetchAdd (two 32-bit fields), plain
	 * CmpSwap that matches and one that does not, masked CmpSwap */
	LBU_OK(post_atomic(&p.cli, 1, UIW_WR_ATOMIC_FETCH_ADD, 0, res, 0, tgt,
			   0, 23, 0, 0, 0));
	LBU_OK(post_atomic(&p.cli, 2, UIW_WR_ATOMIC_FETCH_ADD,
			   UIW_SEND_ATOMIC_MASKED, res, 8, tgt, 8,
			   0x0000000100000001ull, 0, 0x8000000080000000ull,
			   0));
	LBU_OK(post_atomic(&p.cli, 3, UIW_WR_ATOMIC_CMP_SWP, 0, res, 16, tgt,
			   16, 7, 70, 0, 0));
	LBU_OK(post_atomic(&p.cli, 4, UIW_WR_ATOMIC_CMP_SWP, 0, res, 24, tgt,
			   16, 7, 700, 0, 0));
	LBU_OK(post_atomic(&p.cli, 5, UIW_WR_ATOMIC_CMP_SWP,
			   UIW_SEND_ATOMIC_MASKED, res, 32, tgt, 24, 0x42,
			   0xdeadbeef00000000ull, 0xff,
			   0xffffffff00000000ull));
	LBU_OK(lbu_wait_wc(p.cli.scq, wc, 5));
	for (i = 0; i < 5; i++) {
		assert_int_equal(wc[i].wr_id, i + 1);
		assert_int_equal(wc[i].status, UIW_WC_SUCCESS);
		assert_int_equal(wc[i].opcode, i < 2 ? UIW_WC_FETCH_ADD
						     : UIW_WC_CMP_SWP);
		assert_int_equal(wc[i].byte_len, 8);
	}
	assert_int_equal(word(res, 0), 100);
	assert_int_equal(word(tgt, 0), 123);
	assert_int_equal(word(res, 8), 0x00000001ffffffffull);
	assert_int_equal(word(tgt, 8), 0x0000000200000000ull);
	assert_int_equal(word(res, 16), 7);
	assert_int_equal(word(res, 24), 70);
	assert_int_equal(word(tgt, 16), 70);
	assert_int_equal(word(res, 32), 0x1234567800000042ull);
	assert_int_equal(word(tgt, 24), 0xdeadbeef00000042ull);
	LBU_OK(lbu_cq_empty(p.srv.rcq, "server receive CQ"));
	LBU_OK(lbu_pair_destroy(&p));
}

static void test_atomics(void **state)
{
	(void)state;
	run_atomics(0);
	run_atomics(1);
}

/* ---- Immediate Data ------------------------------------------------------ */

static void test_immediate_order(void **state)
{
	enum { N = 200 };
	struct lbu_pair p;
	struct lbu_buf *src, *dst, *tgt;
	struct uiw_wc wc[N];
	int i;

	(void)state;
	pair_open(&p, 0);
	LBU_NN(src = lbu_buf_alloc(&p.cli, 4096, 0));
	LBU_NN(dst = lbu_buf_alloc(&p.srv, N * 64, UIW_ACCESS_LOCAL_WRITE));
	LBU_NN(tgt = lbu_buf_alloc(&p.srv, 4096, ACC_ALL));
	memset(dst->mem, 0x77, N * 64);
	lbu_fill(src->mem, 4096, 5);
	for (i = 0; i < N; i++)
		LBU_OK(lbu_post_recv(&p.srv, 1000 + i, dst, 64 * i, 64));
	/* Immediate Data, with SE every third, Write with Immediate and
	 * Sends, interleaved; the receiver completes them in order. */
	for (i = 0; i < N; i++) {
		unsigned se = i % 3 == 0 ? UIW_SEND_SOLICITED : 0;

		switch (i % 4) {
		case 0:
		case 1:
			LBU_OK(post_imm(&p.cli, i, UIW_WR_IMMEDIATE, se, NULL,
					0, NULL, 0x5555000000000000ull + i));
			break;
		case 2:
			LBU_OK(post_imm(&p.cli, i, UIW_WR_RDMA_WRITE_WITH_IMM,
					se, src, 64 + i, tgt,
					0xaaaa000000000000ull + i));
			break;
		default:
			LBU_OK(lbu_post_send(&p.cli, i, UIW_WR_SEND,
					     UIW_SEND_SIGNALED | se, src, 0,
					     i % 64, 0, 0, 0));
			break;
		}
		if (i % 32 == 31)
			LBU_OK(lbu_wait_wc(p.cli.scq, wc, 32));
	}
	LBU_OK(lbu_wait_wc(p.cli.scq, wc, N % 32));
	LBU_OK(lbu_wait_wc(p.srv.rcq, wc, N));
	for (i = 0; i < N; i++) {
		uint32_t se = i % 3 == 0 ? UIW_WC_F_SOLICITED : 0;
		char d[256];

		if (wc[i].wr_id != 1000u + i || wc[i].status)
			fail_msg("receive %d: %s", i,
				 lbu_wc_str(&wc[i], d, sizeof(d)));
		if (i % 4 == 3) {
			assert_int_equal(wc[i].opcode, UIW_WC_RECV);
			assert_int_equal(wc[i].flags, se);
			assert_int_equal(wc[i].byte_len, i % 64);
			LBU_OK(lbu_verify(dst->mem + 64 * i, i % 64, 5,
					  "Send"));
			continue;
		}
		assert_int_equal(wc[i].opcode, UIW_WC_RECV_RDMA_WITH_IMM);
		assert_int_equal(wc[i].flags, UIW_WC_F_WITH_IMM | se);
		assert_int_equal(wc[i].byte_len, 0);
		assert_int_equal(wc[i].imm_data, (i % 4 == 2 ?
				 0xaaaa000000000000ull :
				 0x5555000000000000ull) + i);
		assert_int_equal(wc[i].qp_num, p.srv.attr.qp_num);
		LBU_OK(lbu_verify_byte(dst->mem + 64 * i, 64, 0x77,
				       "buffer taken by Immediate Data"));
	}
	LBU_OK(lbu_verify(tgt->mem, 64 + N - 2, 5, "Write with Immediate"));
	LBU_OK(lbu_pair_destroy(&p));
}

/* The solicited event fires for Immediate Data with SE only. */
static void test_immediate_notify(void **state)
{
	struct lbu_pair p;
	struct uiw_wc wc[2];
	int fd;

	(void)state;
	pair_open(&p, 1);
	LBU_OK(lbu_post_recv(&p.srv, 1, NULL, 0, 0));
	LBU_OK(lbu_post_recv(&p.srv, 2, NULL, 0, 0));
	fd = uiw_cq_fd(p.srv.rcq);
	LBU_OK(uiw_cq_req_notify(p.srv.rcq, 1));
	LBU_OK(post_imm(&p.cli, 1, UIW_WR_IMMEDIATE, 0, NULL, 0, NULL, 11));
	LBU_OK(lbu_expect_wc(p.cli.scq, 1, UIW_WC_SUCCESS, UIW_WC_SEND, NULL));
	LBU_OK(lbu_spin_wc(p.srv.rcq, wc, 1));
	assert_int_equal(wc[0].imm_data, 11);
	assert_int_equal(lbu_fd_readable(fd, 0), 0);
	LBU_OK(post_imm(&p.cli, 2, UIW_WR_IMMEDIATE, UIW_SEND_SOLICITED, NULL,
			0, NULL, 12));
	assert_int_equal(lbu_fd_readable(fd, lbu_timeout_ms()), 1);
	assert_int_equal(uiw_cq_ack_events(p.srv.rcq), 1);
	LBU_OK(lbu_spin_wc(p.srv.rcq, wc, 1));
	assert_int_equal(wc[0].imm_data, 12);
	assert_int_equal(wc[0].flags, UIW_WC_F_WITH_IMM | UIW_WC_F_SOLICITED);
	LBU_OK(lbu_expect_wc(p.cli.scq, 2, UIW_WC_SUCCESS, UIW_WC_SEND, NULL));
	LBU_OK(lbu_pair_destroy(&p));
}

/* Write with Immediate, 0 octets to 16 MiB: when the Immediate Data
 * completes, every octet of the Write is in place (RFC 7306 §7). */
static void test_write_imm_sizes(void **state)
{
	static const size_t sizes[] = { 0, 1, 4095, 4096, 65537, 16 * MIB };
	struct lbu_pair p;
	struct lbu_buf *src, *dst;
	struct uiw_wc wc;
	size_t i;

	(void)state;
	pair_open(&p, 0);
	LBU_NN(src = lbu_buf_alloc(&p.cli, 16 * MIB, 0));
	LBU_NN(dst = lbu_buf_alloc(&p.srv, 16 * MIB + 64, ACC_ALL));
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t len = sizes[i];

		lbu_fill(src->mem, len, 40 + (uint32_t)i);
		memset(dst->mem, 0xa5, len + 64);
		LBU_OK(lbu_post_recv(&p.srv, 100 + i, NULL, 0, 0));
		LBU_OK(post_imm(&p.cli, i, UIW_WR_RDMA_WRITE_WITH_IMM, 0, src,
				len, dst, 0xfeed0000 + i));
		LBU_OK(lbu_expect_wc(p.srv.rcq, 100 + i, UIW_WC_SUCCESS,
				     UIW_WC_RECV_RDMA_WITH_IMM, &wc));
		assert_int_equal(wc.imm_data, 0xfeed0000 + i);
		assert_int_equal(wc.flags, UIW_WC_F_WITH_IMM);
		LBU_OK(lbu_verify(dst->mem, len, 40 + (uint32_t)i,
				  "Write with Immediate"));
		LBU_OK(lbu_verify_byte(dst->mem + len, 64, 0xa5,
				       "after the Write"));
		LBU_OK(lbu_expect_wc(p.cli.scq, i, UIW_WC_SUCCESS,
				     UIW_WC_RDMA_WRITE, &wc));
		assert_int_equal(wc.byte_len, len);
	}
	LBU_OK(lbu_pair_destroy(&p));
}

/* ---- Errors -------------------------------------------------------------- */

/* A misaligned target (RFC 7306 §8.2) and a region without the remote
 * atomic right: the responder sends a Terminate and leaves the word as
 * it was; the requester's atomic completes with the peer's cause, and
 * everything else on both sides is flushed. */
static void test_remote_errors(void **state)
{
	int c;

	(void)state;
	for (c = 0; c < 2; c++) {
		/* RDMAP 0/1/0x02 access rights, 0/2/0x07 catastrophic
		 * error localized to the RDMAP stream */
		const uint8_t etype = c ? 1 : 2, ecode = c ? 0x02 : 0x07;
		struct lbu_pair p;
		struct lbu_buf *res, *tgt;
		struct uiw_qp_attr ca, sa;
		struct uiw_wc wc;

		pair_open(&p, c);
		LBU_NN(res = lbu_buf_alloc(&p.cli, 64,
					   UIW_ACCESS_LOCAL_WRITE));
		LBU_NN(tgt = lbu_buf_alloc(&p.srv, 64, c ?
				ACC_ALL & ~UIW_ACCESS_REMOTE_ATOMIC : ACC_ALL));
		set_word(tgt, 8, 5);
		set_word(tgt, 16, 6);
		set_word(res, 0, 0xa5a5a5a5a5a5a5a5ull);
		LBU_OK(lbu_post_recv(&p.cli, 9, NULL, 0, 0));
		LBU_OK(lbu_post_recv(&p.srv, 9, NULL, 0, 0));
		LBU_OK(post_atomic(&p.cli, 1, UIW_WR_ATOMIC_CMP_SWP, 0, res, 0,
				   tgt, c ? 8 : 12, 5, 50, 0, 0));
		LBU_OK(lbu_expect_wc(p.cli.scq, 1, c ? UIW_WC_REM_ACCESS_ERR :
				     UIW_WC_REM_OP_ERR, UIW_WC_CMP_SWP, &wc));
		assert_int_equal(wc.term.origin, UIW_TERM_REMOTE);
		assert_int_equal(wc.term.layer, UIW_TERM_LAYER_RDMAP);
		assert_int_equal(wc.term.etype, etype);
		assert_int_equal(wc.term.ecode, ecode);
		LBU_OK(lbu_expect_wc(p.cli.rcq, 9, UIW_WC_WR_FLUSH_ERR, -1,
				     NULL));
		LBU_OK(lbu_expect_wc(p.srv.rcq, 9, UIW_WC_WR_FLUSH_ERR, -1,
				     NULL));
		LBU_OK(lbu_wait_disconnected(&p.cli));
		LBU_OK(lbu_wait_disconnected(&p.srv));
		LBU_OK(lbu_qp_state(&p.cli, &ca));
		LBU_OK(lbu_qp_state(&p.srv, &sa));
		assert_int_equal(ca.state, UIW_QPS_ERROR);
		assert_int_equal(sa.state, UIW_QPS_ERROR);
		assert_int_equal(sa.term.origin, UIW_TERM_LOCAL);
		assert_int_equal(sa.term.layer, UIW_TERM_LAYER_RDMAP);
		assert_int_equal(sa.term.etype, etype);
		assert_int_equal(sa.term.ecode, ecode);
		assert_int_equal(word(tgt, 8), 5);
		assert_int_equal(word(tgt, 16), 6);
		assert_int_equal(word(res, 0), 0xa5a5a5a5a5a5a5a5ull);
		LBU_OK(lbu_pair_destroy(&p));
	}
}

/* ---- Concurrency --------------------------------------------------------- */

#define NCONN 8
#define NADD 2000
#define NLOCKERS 4
#define NLOCK 100

struct conc {
	struct uiw_device *srv_dev;
	struct lbu_listener lst;
	struct lbu_pair pairs[NCONN];
	int npairs;
	struct lbu_buf *word;       /* on pairs[0].srv: [0] counter,
				       [8] lock, [16] guarded counter */
	struct lbu_buf wv[NCONN];   /* the word through each QP's PD */
	struct lbu_buf *res[NCONN];
	uint64_t *orig[NCONN];
	int idx[NCONN];
	char err[NCONN][256];
};

static struct conc *cc;

static int conc_fail(int i)
{
	snprintf(cc->err[i], sizeof(cc->err[i]), "%s", lbu_err());
	return -1;
}

static void *adder(void *arg)
{
	int i = *(int *)arg;
	struct lbu_side *s = &cc->pairs[i].cli;
	uint32_t depth = s->attr.ord < 16 ? s->attr.ord : 16;
	struct uiw_wc wc[16];
	int posted = 0, done = 0;

	if (depth == 0)
		depth = 1;
	while (done < NADD) {
		int n, k;

		while (posted < NADD && (uint32_t)(posted - done) < depth) {
			if (post_atomic(s, (uint64_t)posted,
					UIW_WR_ATOMIC_FETCH_ADD, 0, cc->res[i],
					8 * (posted % 16), &cc->wv[i], 0, 1,
					0, 0, 0) < 0) {
				conc_fail(i);
				return NULL;
			}
			posted++;
		}
		n = 1;
		if (lbu_wait_wc(s->scq, wc, n) < 0) {
			conc_fail(i);
			return NULL;
		}
		n += uiw_cq_poll(s->scq, 15, wc + 1);
		for (k = 0; k < n; k++, done++) {
			if (wc[k].status != UIW_WC_SUCCESS ||
			    wc[k].wr_id != (uint64_t)done) {
				lbu_fail("FetchAdd %d: wr_id %" PRIu64 " %s",
					 done, wc[k].wr_id,
					 uiw_wc_status_str(wc[k].status));
				conc_fail(i);
				return NULL;
			}
			memcpy(&cc->orig[i][done],
			       cc->res[i]->mem + 8 * (done % 16), 8);
		}
	}
	return NULL;
}

/* Takes the lock word with CmpSwap(0 -> me), reads and rewrites the
 * guarded counter with RDMA Read and Write, releases with
 * CmpSwap(me -> 0). */
static void *locker(void *arg)
{
	int i = *(int *)arg;
	struct lbu_side *s = &cc->pairs[i].cli;
	struct lbu_buf *r = cc->res[i], *w = &cc->wv[i];
	uint64_t me = (uint64_t)i + 1, v;
	struct uiw_wc wc;
	int it;

	for (it = 0; it < NLOCK; it++) {
		do {
			if (post_atomic(s, 1, UIW_WR_ATOMIC_CMP_SWP, 0, r, 0, w,
					8, 0, me, 0, 0) < 0 ||
			    lbu_expect_wc(s->scq, 1, UIW_WC_SUCCESS,
					  UIW_WC_CMP_SWP, &wc) < 0)
				return conc_fail(i), NULL;
			memcpy(&v, r->mem, 8);
		} while (v != 0);
		if (lbu_post_send(s, 2, UIW_WR_RDMA_READ, UIW_SEND_SIGNALED, r,
				  8, 8, lbu_to(w, 16), w->mr->rkey, 0) < 0 ||
		    lbu_expect_wc(s->scq, 2, UIW_WC_SUCCESS, UIW_WC_RDMA_READ,
				  &wc) < 0)
			return conc_fail(i), NULL;
		memcpy(&v, r->mem + 8, 8);
		v++;
		memcpy(r->mem + 16, &v, 8);
		if (lbu_post_send(s, 3, UIW_WR_RDMA_WRITE, UIW_SEND_SIGNALED, r,
				  16, 8, lbu_to(w, 16), w->mr->rkey, 0) < 0 ||
		    post_atomic(s, 4, UIW_WR_ATOMIC_CMP_SWP, 0, r, 24, w, 8, me,
				0, 0, 0) < 0 ||
		    lbu_expect_wc(s->scq, 3, UIW_WC_SUCCESS, UIW_WC_RDMA_WRITE,
				  &wc) < 0 ||
		    lbu_expect_wc(s->scq, 4, UIW_WC_SUCCESS, UIW_WC_CMP_SWP,
				  &wc) < 0)
			return conc_fail(i), NULL;
		memcpy(&v, r->mem + 24, 8);
		if (v != me) {
			lbu_fail("released a lock held by %" PRIu64, v);
			return conc_fail(i), NULL;
		}
	}
	return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void run_threads(void *(*fn)(void *), int n)
{
	pthread_t th[NCONN];
	int i;

	for (i = 0; i < n; i++) {
		cc->idx[i] = i;
		cc->err[i][0] = 0;
		assert_int_equal(pthread_create(&th[i], NULL, fn, &cc->idx[i]),
				 0);
	}
	for (i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	for (i = 0; i < n; i++)
		if (cc->err[i][0])
			fail_msg("thread %d: %s", i, cc->err[i]);
}

static void test_concurrency(void **state)
{
	const uint64_t total = (uint64_t)NCONN * NADD;
	struct lbu_opts o;
	uint64_t *all;
	uint64_t k;
	int i;

	(void)state;
	cc = calloc(1, sizeof(*cc));
	assert_non_null(cc);
	LBU_NN(cc->srv_dev = uiw_device_open(NULL));
	LBU_OK(lbu_listener_open(&cc->lst, cc->srv_dev));
	lbu_opts_init(&o);
	o.srv_dev = cc->srv_dev;
	o.lst = &cc->lst;
	o.sq_sig_all = 1;
	o.cq_depth = 256;
	for (i = 0; i < NCONN; i++) {
		LBU_OK(lbu_pair_connect(&cc->pairs[i], &o));
		cc->npairs++;
		LBU_NN(cc->res[i] = lbu_buf_alloc(&cc->pairs[i].cli, 4096,
						  UIW_ACCESS_LOCAL_WRITE));
		cc->orig[i] = calloc(NADD, sizeof(uint64_t));
		assert_non_null(cc->orig[i]);
	}
	/* One word of the server device.  Each connection's QP has its
	 * own protection domain, so the memory is registered once per
	 * PD: different STags, one word (atomicity is the device's, not
	 * the region's). */
	LBU_NN(cc->word = lbu_buf_alloc(&cc->pairs[0].srv, 64, ACC_ALL));
	for (i = 0; i < NCONN; i++) {
		cc->wv[i].mem = cc->word->mem;
		cc->wv[i].len = 64;
		cc->wv[i].mr = i ? uiw_reg_mr(cc->pairs[i].srv.pd,
					      cc->word->mem, 64, ACC_ALL)
				 : cc->word->mr;
		LBU_NN(cc->wv[i].mr);
	}

	/* NCONN threads, NADD FetchAdds of 1 each: the exact total, and
	 * every value from 0 to total - 1 returned exactly once. */
	run_threads(adder, NCONN);
	assert_int_equal(word(cc->word, 0), total);
	all = calloc(total, sizeof(uint64_t));
	assert_non_null(all);
	for (i = 0; i < NCONN; i++)
		memcpy(all + (size_t)i * NADD, cc->orig[i],
		       NADD * sizeof(uint64_t));
	qsort(all, total, sizeof(uint64_t), cmp_u64);
	for (k = 0; k < total; k++)
		if (all[k] != k)
			fail_msg("FetchAdd results: %" PRIu64 " at %" PRIu64,
				 all[k], k);
	free(all);

	/* A CmpSwap lock under contention: no update of the counter it
	 * guards is lost. */
	run_threads(locker, NLOCKERS);
	assert_int_equal(word(cc->word, 8), 0);
	assert_int_equal(word(cc->word, 16), (uint64_t)NLOCKERS * NLOCK);

	for (i = 1; i < NCONN; i++)
		LBU_OK(uiw_dereg_mr(cc->wv[i].mr));
	for (i = 0; i < NCONN; i++) {
		LBU_OK(lbu_pair_destroy(&cc->pairs[i]));
		free(cc->orig[i]);
	}
	LBU_OK(lbu_listener_close(&cc->lst));
	LBU_OK(uiw_device_close(cc->srv_dev));
	free(cc);
	cc = NULL;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_atomics),
		cmocka_unit_test(test_immediate_order),
		cmocka_unit_test(test_immediate_notify),
		cmocka_unit_test(test_write_imm_sizes),
		cmocka_unit_test(test_remote_errors),
		cmocka_unit_test(test_concurrency),
	};

	return cmocka_run_group_tests_name("loopback: RFC 7306", tests, NULL,
					   NULL);
}
