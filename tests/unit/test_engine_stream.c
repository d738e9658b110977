/*
 * Recorded byte streams: one side's transmit stream is captured while it
 * runs a workload of every operation, then fed to a fresh QP with the
 * same memory, split in every way (every fixed size, random sizes, a cut
 * at every octet boundary, small iovec arrays); the result must be the
 * same every time: the same completions, the same memory, the same octets
 * sent back (Read Responses, or the Terminate of a stream that ends in a
 * violation).  Also: posting from one thread while another moves the
 * octets (the QP lock).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "engine_pipe.h"
#include "rnic/dev.h"
#include "rnic/mr.h"

#define ALL_REMOTE (UIW_ACCESS_LOCAL_WRITE | UIW_ACCESS_REMOTE_WRITE | \
		    UIW_ACCESS_REMOTE_READ)
#define MAX_WC 64

struct range {
	size_t off, len;
};

struct rec {
	struct ep_pipe p;
	struct range posted[16];    /* receive SGEs, offsets into rcv */
	int nposted;
	struct ep_buf src, sink, rcv, tgt, inv;
	size_t rcv_len, tgt_len;
	bool small;
	bool violate;
	/* the reference run */
	uint8_t *stream;            /* a -> b */
	size_t stream_len;
	uint8_t *back;              /* b -> a */
	size_t back_len;
	struct uiw_wc wc[MAX_WC];
	int nwc;
	uint8_t *rcv_ref, *tgt_ref;
	enum uiw_qp_state st;
	struct uiw_term_cause cause;
};

static void post_b_recvs(struct rec *r, struct uiw_qp *qp)
{
	/* Receive buffers, one of them scattered over three SGEs. */
	static const uint32_t big[] = { 0, 1, 4095, 4096, 70000, 300, 100,
					100 };
	static const uint32_t sml[] = { 0, 1, 7, 600, 40, 40, 40, 40 };
	const uint32_t *len = r->small ? sml : big;
	size_t off = 0;
	int i;

	r->nposted = 0;
	for (i = 0; i < 8; i++) {
		if (i == 5) {
			struct uiw_sge g[3];
			struct uiw_recv_wr wr = { .wr_id = 200 + i,
						  .sg_list = g, .num_sge = 3 };

			for (int k = 0; k < 3; k++) {
				g[k].addr = (uintptr_t)r->rcv.p + off;
				g[k].length = 13 + 10 * k;
				g[k].lkey = r->rcv.mr->lkey;
				r->posted[r->nposted++] =
					(struct range){ off, g[k].length };
				off += 13 + 10 * k + 3;
			}
			assert_int_equal(uiw_post_recv(qp, &wr, NULL), 0);
			continue;
		}
		assert_int_equal(ep_post_recv(qp, 200 + i, &r->rcv, off,
					      len[i] + (i == 7 ? 0 : 16)), 0);
		r->posted[r->nposted++] =
			(struct range){ off, len[i] + (i == 7 ? 0 : 16) };
		off += len[i] + 16 + 5;
	}
	assert_true(off <= r->rcv_len);
}

/* The workload: every operation a sends, in one batch. */
static void post_a_work(struct rec *r)
{
	struct uiw_qp *qp = r->p.a.qp;
	uint64_t t = (uintptr_t)r->tgt.p;
	uint32_t rk = r->tgt.mr->rkey;
	const uint32_t s1 = r->small ? 7 : 4095, s2 = r->small ? 600 : 4096;
	const uint32_t s3 = r->small ? 40 : 70000;
	int id = 1;

	assert_int_equal(ep_post_send(qp, id++, UIW_WR_SEND, 0, &r->src, 0, 0,
				      0, 0, 0), 0);
	assert_int_equal(ep_post_send(qp, id++, UIW_WR_SEND,
				      UIW_SEND_SOLICITED, &r->src, 1, 1, 0, 0,
				      0), 0);
	assert_int_equal(ep_post_send(qp, id++, UIW_WR_RDMA_WRITE, 0, &r->src,
				      5, s2, rk, t + 3, 0), 0);
	assert_int_equal(ep_post_send(qp, id++, UIW_WR_SEND, 0, &r->src, 2,
				      s1, 0, 0, 0), 0);
	assert_int_equal(ep_post_send(qp, id++, UIW_WR_RDMA_READ, 0, &r->sink,
				      0, 0, rk, t, 0), 0);
	assert_int_equal(ep_post_send(qp, id++, UIW_WR_RDMA_READ, 0, &r->sink,
				      10, s2, rk, t + 3, 0), 0);
	assert_int_equal(ep_post_send(qp, id++, UIW_WR_SEND_WITH_INV,
				      UIW_SEND_SOLICITED, &r->src, 3, s2, 0, 0,
				      r->inv.mr->rkey), 0);
	assert_int_equal(ep_post_send(qp, id++, UIW_WR_RDMA_WRITE, 0, &r->src,
				      0, 0, 0x1111, 0, 0), 0);
	/* Not over the region of the Read before it: its Response may be
	 * built before or after this Write is placed (RFC 5040 §5.5 rule
	 * 12), and the replays must agree octet for octet. */
	assert_int_equal(ep_post_send(qp, id++, UIW_WR_RDMA_WRITE, 0, &r->src,
				      100, s3, rk, t + 9000, 0), 0);
	assert_int_equal(ep_post_send(qp, id++, UIW_WR_SEND, 0, &r->src, 4,
				      s3, 0, 0, 0), 0);
	assert_int_equal(ep_post_send(qp, id++, UIW_WR_RDMA_READ, 0, &r->sink,
				      20000 * !r->small + 700, s3, rk,
				      t + 9000, 0), 0);
	assert_int_equal(ep_post_send(qp, id++, UIW_WR_SEND, 0, &r->src, 0,
				      23, 0, 0, 0), 0);
	assert_int_equal(ep_post_send(qp, id++, UIW_WR_SEND, 0, &r->src, 0,
				      40, 0, 0, 0), 0);
	if (r->violate)     /* longer than the last buffer (100 / 40) */
		assert_int_equal(ep_post_send(qp, id++, UIW_WR_SEND, 0,
					      &r->src, 0, r->small ? 41 : 101,
					      0, 0, 0), 0);
}

static void rec_open_crc(struct rec *r, bool small, bool violate, bool crc)
{
	struct ep_cfg cfg = { .crc = crc, .markers = true,
			      .mulpdu = small ? 128 : 700, .ird = 8, .ord = 8,
			      .max_wr = 32 };

	memset(r, 0, sizeof(*r));
	r->small = small;
	r->violate = violate;
	r->rcv_len = 100000;
	r->tgt_len = 100000;
	assert_int_equal(ep_open(&r->p, &cfg), 0);
	assert_int_equal(ep_buf_reg(&r->src, r->p.a.pd, 80000, 0), 0);
	assert_int_equal(ep_buf_reg(&r->sink, r->p.a.pd, 100000,
				    UIW_ACCESS_LOCAL_WRITE), 0);
	assert_int_equal(ep_buf_reg(&r->rcv, r->p.b.pd, r->rcv_len,
				    UIW_ACCESS_LOCAL_WRITE), 0);
	assert_int_equal(ep_buf_reg(&r->tgt, r->p.b.pd, r->tgt_len,
				    ALL_REMOTE), 0);
	/* Not remotely accessible: the replays run a second QP on this PD,
	 * and RFC 5040 §8.1.1 rule 7 forbids remote invalidation of a
	 * remotely accessible STag shared by several streams. */
	assert_int_equal(ep_buf_reg(&r->inv, r->p.b.pd, 64,
				    UIW_ACCESS_LOCAL_WRITE), 0);
	ep_fill(r->src.p, 80000, 99);
}

static void rec_open(struct rec *r, bool small, bool violate)
{
	rec_open_crc(r, small, violate, true);
}

static void b_mem_reset(struct rec *r)
{
	struct uiw_mr_table *t = &r->p.b.dev->mrt;

	memset(r->rcv.p, 0x55, r->rcv_len);
	ep_fill(r->tgt.p, r->tgt_len, 5);
	/* The workload invalidates an STag (a mutated one may invalidate
	 * any); make them valid again so that the stream can be replayed
	 * (test-only reach into the table). */
	atomic_store(&t->ent[r->inv.mr->rkey >> 8].state, UIW_MRE_VALID);
	atomic_store(&t->ent[r->rcv.mr->rkey >> 8].state, UIW_MRE_VALID);
	atomic_store(&t->ent[r->tgt.mr->rkey >> 8].state, UIW_MRE_VALID);
}

/* Runs the workload once through the pipe and keeps everything. */
static void rec_reference(struct rec *r)
{
	struct uiw_qp_attr at;

	b_mem_reset(r);
	post_b_recvs(r, r->p.b.qp);
	post_a_work(r);
	r->p.split = 0;
	ep_pump(&r->p);
	r->stream = malloc(r->p.a.out_len);
	memcpy(r->stream, r->p.a.out, r->p.a.out_len);
	r->stream_len = r->p.a.out_len;
	r->back = malloc(r->p.b.out_len + 1);
	memcpy(r->back, r->p.b.out, r->p.b.out_len);
	r->back_len = r->p.b.out_len;
	r->nwc = ep_poll(r->p.b.cq, r->wc, MAX_WC);
	r->rcv_ref = malloc(r->rcv_len);
	memcpy(r->rcv_ref, r->rcv.p, r->rcv_len);
	r->tgt_ref = malloc(r->tgt_len);
	memcpy(r->tgt_ref, r->tgt.p, r->tgt_len);
	assert_int_equal(uiw_qp_query(r->p.b.qp, &at), 0);
	r->st = at.state;
	r->cause = at.term;
}

static void rec_close(struct rec *r)
{
	ep_buf_free(&r->src);
	ep_buf_free(&r->sink);
	ep_buf_free(&r->rcv);
	ep_buf_free(&r->tgt);
	ep_buf_free(&r->inv);
	assert_int_equal(ep_close(&r->p), 0);
	free(r->stream);
	free(r->back);
	free(r->rcv_ref);
	free(r->tgt_ref);
}

static void wc_same(const struct uiw_wc *a, const struct uiw_wc *b)
{
	assert_int_equal(a->wr_id, b->wr_id);
	assert_int_equal(a->status, b->status);
	assert_int_equal(a->opcode, b->opcode);
	assert_int_equal(a->byte_len, b->byte_len);
	assert_int_equal(a->flags, b->flags);
	assert_int_equal(a->invalidated_stag, b->invalidated_stag);
	assert_memory_equal(&a->term, &b->term, sizeof(a->term));
}

/* Feeds the recorded stream to a fresh QP on b's resources: cut at
 * octet `cut` (0: none), each rx_done of at most `split` octets (0:
 * random), iovec arrays of iov entries; transmits after every receive
 * as an LLP does.  Everything must equal the reference. */
static void replay(struct rec *r, size_t split, int iov, size_t cut,
		   uint64_t seed)
{
	struct ep_pipe q;        /* only q.b is used, as a side */
	struct ep_side *s = &q.b;
	struct uiw_qp_init_attr qa;
	struct uiw_wc wc[MAX_WC];
	struct uiw_qp_attr at;
	uint64_t rng = seed;
	size_t off = 0;
	int n, i;

	memset(&q, 0, sizeof(q));
	q.tx_iov_max = 64;
	b_mem_reset(r);
	memset(&qa, 0, sizeof(qa));
	qa.send_cq = qa.recv_cq = r->p.b.cq;
	qa.cap.max_send_wr = qa.cap.max_recv_wr = 32;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 4;
	qa.sq_sig_all = 1;
	s->qp = uiw_qp_create(r->p.b.pd, &qa);
	assert_non_null(s->qp);
	s->lp = r->p.b.lp;
	/* The recorded stream runs ahead of the Responses it waited for;
	 * a deep IRQ keeps the replay inside IRD. */
	s->lp.ird = 128;
	assert_int_equal(ep_side_attach(s), 0);
	post_b_recvs(r, s->qp);

	while (off < r->stream_len) {
		size_t end = cut && off < cut ? cut : r->stream_len;
		struct iovec v[1024];
		size_t room = 0, take, k;

		n = uiw_qp_rx_iov(s->qp, v, iov);
		if (n <= 0)
			break;
		for (i = 0; i < n; i++)
			room += v[i].iov_len;
		take = end - off < room ? end - off : room;
		if (split)
			take = take < split ? take : split;
		else
			take = 1 + ep_rand(&rng) % take;
		for (i = 0, k = 0; k < take; i++) {
			size_t o = v[i].iov_len < take - k ? v[i].iov_len
							    : take - k;

			memcpy(v[i].iov_base, r->stream + off + k, o);
			k += o;
		}
		off += take;
		if (uiw_qp_rx_done(s->qp, take) < 0)
			break;
		/* Transmit as an LLP does after receiving; not for a
		 * stream that ends in a violation: the reference run
		 * received all of it before it sent, and the Responses
		 * not yet built when the Terminate is queued are dropped. */
		if (!r->violate)
			ep_drain_tx(&q, s);
	}
	ep_drain_tx(&q, s);

	n = ep_poll(r->p.b.cq, wc, MAX_WC);
	assert_int_equal(n, r->nwc);
	for (i = 0; i < n; i++)
		wc_same(&wc[i], &r->wc[i]);
	assert_memory_equal(r->rcv.p, r->rcv_ref, r->rcv_len);
	assert_memory_equal(r->tgt.p, r->tgt_ref, r->tgt_len);
	assert_int_equal(s->out_len, r->back_len);
	assert_memory_equal(s->out, r->back, r->back_len);
	assert_int_equal(uiw_qp_query(s->qp, &at), 0);
	assert_int_equal(at.state, r->st);
	assert_memory_equal(&at.term, &r->cause, sizeof(at.term));

	ep_side_detach(s, UIW_E_MPA_CLOSED);
	ep_poll(r->p.b.cq, wc, MAX_WC);          /* the flushed rest */
	assert_int_equal(uiw_qp_destroy(s->qp), 0);
	free(s->out);
	free(s->q);
}

static void check_reference(struct rec *r)
{
	int i;

	if (r->violate) {
		/* The last receive gets the length error; b terminated. */
		assert_int_equal(r->st, UIW_QPS_ERROR);
		assert_int_equal(r->cause.origin, UIW_TERM_LOCAL);
		assert_int_equal(r->cause.layer, 1);
		assert_int_equal(r->cause.etype, 2);
		assert_int_equal(r->cause.ecode, 5);
		assert_int_equal(r->wc[r->nwc - 1].status, UIW_WC_LOC_LEN_ERR);
	} else {
		assert_int_equal(r->st, UIW_QPS_RTS);
		assert_int_equal(r->nwc, 7);     /* the last buffer waits */
		for (i = 0; i < r->nwc; i++)
			assert_int_equal(r->wc[i].status, UIW_WC_SUCCESS);
		assert_int_equal(r->wc[1].flags, UIW_WC_F_SOLICITED);
		assert_int_equal(r->wc[3].flags,
				 UIW_WC_F_SOLICITED | UIW_WC_F_WITH_INV);
		assert_int_equal(r->wc[3].invalidated_stag, r->inv.mr->rkey);
	}
}

/* The full workload (sizes up to 70000, MULPDU 700), every split size
 * from 1 to 64 octets, random splits, small iovec arrays. */
static void test_replay_splits(void **state)
{
	struct rec r;
	size_t s;
	uint64_t seed;

	(void)state;
	rec_open(&r, false, false);
	rec_reference(&r);
	check_reference(&r);
	assert_true(r.stream_len > 150000);
	for (s = 1; s <= 64; s++)
		replay(&r, s, 64, 0, 0);
	for (s = 100; s <= 70000; s = s * 3 + 1)
		replay(&r, s, 64, 0, 0);
	for (seed = 1; seed <= 10; seed++)
		replay(&r, 0, 64, 0, seed);
	replay(&r, 0, 1, 0, 11);
	replay(&r, 0, 2, 0, 12);
	replay(&r, 5, 3, 0, 0);
	rec_close(&r);
}

/* A small workload (markers and CRC, MULPDU 128), cut at every octet
 * boundary of its stream. */
static void test_replay_every_cut(void **state)
{
	struct rec r;
	size_t cut;

	(void)state;
	rec_open(&r, true, false);
	rec_reference(&r);
	check_reference(&r);
	assert_true(r.stream_len > 1500 && r.stream_len < 8000);
	for (cut = 1; cut < r.stream_len; cut++)
		replay(&r, SIZE_MAX, 64, cut, 0);
	rec_close(&r);
}

/* A stream that ends in a violation: the same Terminate octets, the same
 * completions, however it is split. */
static void test_replay_violation(void **state)
{
	struct rec r;
	size_t s, cut;

	(void)state;
	rec_open(&r, true, true);
	rec_reference(&r);
	check_reference(&r);
	for (s = 1; s <= 40; s++)
		replay(&r, s, 64, 0, 0);
	for (cut = 1; cut < r.stream_len; cut += 7)
		replay(&r, SIZE_MAX, 64, cut, 0);
	replay(&r, 0, 64, 0, 77);
	rec_close(&r);

	rec_open(&r, false, true);
	rec_reference(&r);
	check_reference(&r);
	replay(&r, 1, 64, 0, 0);
	replay(&r, 0, 2, 0, 5);
	rec_close(&r);
}

/* ---- Mutated streams ----------------------------------------------------- */

/* Feeds a damaged copy of the recorded stream to a fresh QP.  Whatever
 * the damage: nothing changes outside the registered regions or, in the
 * receive region, outside the posted buffers; every posted receive
 * completes exactly once; a stream that b refused ends b's output with
 * exactly one Terminate, and what b sent decodes. */
static void mut_run(struct rec *r, const uint8_t *buf, size_t len,
		    uint64_t seed)
{
	struct ep_pipe q;
	struct ep_side *s = &q.b;
	struct uiw_qp_init_attr qa;
	struct uiw_wc wc[MAX_WC];
	struct uiw_qp_attr at;
	unsigned per[16];
	int seen[8] = { 0 };
	uint64_t rng = seed;
	int n, i;
	size_t k;

	memset(&q, 0, sizeof(q));
	q.tx_iov_max = 64;
	q.rng = seed;
	b_mem_reset(r);
	memset(&qa, 0, sizeof(qa));
	qa.send_cq = qa.recv_cq = r->p.b.cq;
	qa.cap.max_send_wr = qa.cap.max_recv_wr = 32;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 4;
	qa.sq_sig_all = 1;
	s->qp = uiw_qp_create(r->p.b.pd, &qa);
	assert_non_null(s->qp);
	s->lp = r->p.b.lp;
	s->lp.ird = 128;
	assert_int_equal(ep_side_attach(s), 0);
	post_b_recvs(r, s->qp);

	/* Feed in random pieces, transmitting in between. */
	for (k = 0; k < len;) {
		size_t part = 1 + ep_rand(&rng) % 200, used;

		if (part > len - k)
			part = len - k;
		used = ep_feed(s->qp, buf + k, part, 0, &rng,
			       1 + (int)(ep_rand(&rng) % 8));
		ep_drain_tx(&q, s);
		if (used < part)
			break;
		k += part;
	}
	ep_drain_tx(&q, s);
	assert_int_equal(uiw_qp_query(s->qp, &at), 0);

	/* What b sent decodes; one Terminate iff b refused the stream. */
	assert_true(ep_count_fpdus(s->out, s->out_len, true, s->lp.crc, per)
		    >= 0);
	if (at.term.origin == UIW_TERM_LOCAL) {
		struct uiw_ddp_hdr th;
		struct uiw_term t;

		assert_int_equal(at.state, UIW_QPS_ERROR);
		assert_int_equal(per[UIW_OP_TERMINATE], 1);
		assert_int_equal(ep_find_term(s->out, s->out_len, true,
					      s->lp.crc, &th, &t), 0);
		assert_int_equal(t.err >> 12 & 0xf, at.term.layer);
		assert_int_equal(t.err & 0xff, at.term.ecode);
		assert_int_equal(s->closes, 1);
	} else {
		assert_int_equal(per[UIW_OP_TERMINATE], 0);
		if (at.term.origin == UIW_TERM_REMOTE)
			assert_int_equal(at.state, UIW_QPS_ERROR);
		else
			assert_int_equal(at.state, UIW_QPS_RTS);
	}

	/* Nothing outside what may be written. */
	assert_true(ep_buf_guards_ok(&r->rcv));
	assert_true(ep_buf_guards_ok(&r->tgt));
	assert_true(ep_buf_guards_ok(&r->inv));
	{
		size_t from = 0;

		/* The gaps between the posted buffers (they are posted in
		 * increasing order), and the rest of the region. */
		for (i = 0; i <= r->nposted; i++) {
			size_t to = i < r->nposted ? r->posted[i].off
						   : r->rcv_len;

			for (k = from; k < to; k++)
				if (r->rcv.p[k] != 0x55)
					fail_msg("receive region octet %zu "
						 "written outside the posted "
						 "buffers", k);
			if (i < r->nposted)
				from = r->posted[i].off + r->posted[i].len;
		}
	}

	/* Every posted receive completes once (the rest are flushed). */
	ep_side_detach(s, UIW_E_MPA_CLOSED);
	n = ep_poll(r->p.b.cq, wc, MAX_WC);
	assert_int_equal(n, 8);
	for (i = 0; i < n; i++) {
		assert_true(wc[i].wr_id >= 200 && wc[i].wr_id < 208);
		seen[wc[i].wr_id - 200]++;
	}
	for (i = 0; i < 8; i++)
		assert_int_equal(seen[i], 1);
	assert_int_equal(uiw_qp_destroy(s->qp), 0);
	free(s->out);
	free(s->q);
}

static void mutations(bool crc, int iters, uint64_t seed)
{
	struct rec r;
	uint8_t *buf;
	uint64_t rng = seed;
	int it;

	rec_open_crc(&r, true, false, crc);
	rec_reference(&r);
	check_reference(&r);
	buf = malloc(r.stream_len);
	/* The clean stream first: it must go through. */
	mut_run(&r, r.stream, r.stream_len, 1);
	for (it = 0; it < iters; it++) {
		size_t len = r.stream_len;
		int m = 1 + (int)(ep_rand(&rng) % 4), j;

		memcpy(buf, r.stream, len);
		for (j = 0; j < m; j++) {
			size_t at = ep_rand(&rng) % len;

			switch (ep_rand(&rng) % 3) {
			case 0:
				buf[at] = (uint8_t)ep_rand(&rng);
				break;
			case 1:
				buf[at] ^= (uint8_t)(1u << (ep_rand(&rng) % 8));
				break;
			default:
				buf[at] = 0;
				break;
			}
		}
		if (ep_rand(&rng) % 8 == 0)
			len = ep_rand(&rng) % len;
		mut_run(&r, buf, len, it + 2);
	}
	free(buf);
	rec_close(&r);
}

static void test_mutated_streams(void **state)
{
	(void)state;
	/* Without CRC the damage reaches header checks and placement. */
	mutations(false, 3000, 0x1234);
	mutations(true, 300, 0x5678);
}

/* ---- Threads: posting while another thread moves the octets -------------- */

#define THR_MSGS 2000

struct thr {
	struct ep_pipe p;
	struct ep_buf src, rcv;
	int posted;                 /* by the poster, atomically */
	int received;               /* by the receiver, atomically */
	int bad;                    /* the poster saw something wrong */
};

static void *poster(void *arg)
{
	struct thr *t = arg;
	struct uiw_wc wc[16];
	int i, done = 0;

	for (i = 0; i < THR_MSGS; i++) {
		/* Credits: the receiver has 64 buffers. */
		while (i >= __atomic_load_n(&t->received, __ATOMIC_SEQ_CST) +
			    64)
			sched_yield();
		/* Keep the send queue from overflowing: reap completions. */
		int r;

		while ((r = ep_post_send(t->p.a.qp, i, UIW_WR_SEND, 0, &t->src,
					 (size_t)(i % 64), 64, 0, 0, 0)) ==
		       -ENOMEM) {
			int n = uiw_cq_poll(t->p.a.cq, 16, wc);

			if (n < 0)
				t->bad = 1;
			for (int k = 0; k < n; k++) {
				if (wc[k].wr_id != (uint64_t)done ||
				    wc[k].status != UIW_WC_SUCCESS)
					t->bad = 1;
				done++;
			}
			sched_yield();
		}
		if (r != 0)
			t->bad = 1;
		__atomic_store_n(&t->posted, i + 1, __ATOMIC_SEQ_CST);
	}
	while (done < THR_MSGS && !t->bad) {
		int n = uiw_cq_poll(t->p.a.cq, 16, wc);

		if (n < 0)
			t->bad = 1;
		for (int k = 0; k < n; k++) {
			if (wc[k].wr_id != (uint64_t)done ||
			    wc[k].status != UIW_WC_SUCCESS)
				t->bad = 1;
			done++;
		}
		if (n == 0)
			sched_yield();
	}
	return NULL;
}

static void test_threads(void **state)
{
	struct ep_cfg cfg = { .crc = true, .markers = true, .mulpdu = 200,
			      .max_wr = 64, .cqe = 4096 };
	struct thr t;
	pthread_t th;
	struct uiw_wc wc[64];
	struct uiw_recv_wr rw;
	struct uiw_sge g;
	int got = 0, i;

	(void)state;
	memset(&t, 0, sizeof(t));
	assert_int_equal(ep_open(&t.p, &cfg), 0);
	assert_int_equal(ep_buf_reg(&t.src, t.p.a.pd, 128, 0), 0);
	assert_int_equal(ep_buf_reg(&t.rcv, t.p.b.pd, 64 * 64,
				    UIW_ACCESS_LOCAL_WRITE), 0);
	ep_fill(t.src.p, 128, 8);
	for (i = 0; i < 64; i++)
		assert_int_equal(ep_post_recv(t.p.b.qp, i, &t.rcv, 64 * i, 64),
				 0);
	t.p.split = 0;
	assert_int_equal(pthread_create(&th, NULL, poster, &t), 0);
	/* This thread is the LLP: it moves octets and reposts receives. */
	while (got < THR_MSGS) {
		int n;

		ep_pump(&t.p);
		n = uiw_cq_poll(t.p.b.cq, 64, wc);
		assert_true(n >= 0);
		for (i = 0; i < n; i++) {
			uint32_t slot = (uint32_t)(wc[i].wr_id % 64);

			assert_int_equal(wc[i].status, UIW_WC_SUCCESS);
			assert_int_equal(wc[i].byte_len, 64);
			assert_memory_equal(t.rcv.p + 64 * slot,
					    t.src.p + got % 64, 64);
			g.addr = (uintptr_t)t.rcv.p + 64 * slot;
			g.length = 64;
			g.lkey = t.rcv.mr->lkey;
			memset(&rw, 0, sizeof(rw));
			rw.wr_id = wc[i].wr_id + 64;
			rw.sg_list = &g;
			rw.num_sge = 1;
			if (uiw_post_recv(t.p.b.qp, &rw, NULL)) {
				struct uiw_qp_attr at;

				uiw_qp_query(t.p.b.qp, &at);
				print_error("post_recv: %s; b: %s\n",
					    uiw_last_error(), at.term_msg);
				uiw_qp_query(t.p.a.qp, &at);
				print_error("a: %s\n", at.term_msg);
				fail();
			}
			got++;
			__atomic_store_n(&t.received, got, __ATOMIC_SEQ_CST);
		}
		if (n == 0)
			sched_yield();
	}
	pthread_join(th, NULL);
	assert_int_equal(t.bad, 0);
	assert_true(t.p.a.kicks > 0);
	ep_buf_free(&t.src);
	ep_buf_free(&t.rcv);
	assert_int_equal(ep_close(&t.p), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_replay_splits),
		cmocka_unit_test(test_replay_every_cut),
		cmocka_unit_test(test_replay_violation),
		cmocka_unit_test(test_mutated_streams),
		cmocka_unit_test(test_threads),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
