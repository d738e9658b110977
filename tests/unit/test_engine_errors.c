/*
 * The error mechanism (RFC 5040 §4.8, §5.4, §7; RFC 5041 §7; RFC 5044
 * §8): every violation produces exactly one Terminate with the right
 * layer, error type, code, M/D/R bits and copied headers; the offending
 * side goes RTS -> Terminate -> Error and asks the LLP to close; every
 * outstanding work request on both sides completes once, the failing one
 * with its mapped status, the rest flushed; the cause can be read with
 * uiw_qp_query; nothing is placed outside a registered region or a
 * posted buffer.
 *
 * Violations a peer can commit through the API (bad STags, rights,
 * bounds, missing or short receive buffers, IRD) go through the pipe
 * between two QPs; the others (CRC, versions, opcodes, QN, MSN, MO,
 * markers, short ULPDUs) are crafted with the wire codecs and fed to
 * the victim split at random places or one octet at a time.
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
#include "wire/crc32c.h"
#include "wire/mpa.h"

#define ALL_REMOTE (UIW_ACCESS_LOCAL_WRITE | UIW_ACCESS_REMOTE_WRITE | \
		    UIW_ACCESS_REMOTE_READ)

static struct uiw_qp_attr qattr(struct uiw_qp *qp)
{
	struct uiw_qp_attr a;

	assert_int_equal(uiw_qp_query(qp, &a), 0);
	return a;
}

static void state_is(struct uiw_qp *qp, enum uiw_qp_state s)
{
	struct uiw_qp_attr a = qattr(qp);

	if (a.state != s)
		print_error("qp %u is %s, expected %s (%s)\n", a.qp_num,
			    uiw_qp_state_str(a.state), uiw_qp_state_str(s),
			    a.term_msg);
	assert_int_equal(a.state, s);
}

static void cause_is(struct uiw_qp *qp, uiw_err_t e, int origin)
{
	struct uiw_qp_attr a = qattr(qp);

	assert_int_equal(a.term.origin, origin);
	assert_int_equal(a.term.layer, UIW_ERR_LAYER(e));
	assert_int_equal(a.term.etype, UIW_ERR_ETYPE(e));
	assert_int_equal(a.term.ecode, UIW_ERR_ECODE(e));
	assert_true(strlen(a.term_msg) > 10);
	assert_non_null(strstr(a.term_msg, uiw_err_str(e)));
}

struct texp {
	uiw_err_t err;
	bool m, d, r;
	uint16_t seg_len;
	const uint8_t *hdr;         /* expected copied DDP header, or NULL */
	const uint8_t *rdmap;       /* expected copied Read Request */
};

/* Drains what s transmits and checks it ends in exactly one Terminate
 * as expected; then s is in Error and has asked the LLP to close. */
static void term_is(struct ep_pipe *p, struct ep_side *s, bool markers,
		    bool crc, const struct texp *x)
{
	struct uiw_ddp_hdr th;
	struct uiw_term t;
	unsigned per[16];
	int n;

	ep_drain_tx(p, s);
	assert_int_equal(ep_find_term(s->out, s->out_len, markers, crc, &th,
				      &t), 0);
	n = ep_count_fpdus(s->out, s->out_len, markers, crc, per);
	assert_true(n >= 1);
	assert_int_equal(per[UIW_OP_TERMINATE], 1);
	/* RFC 5040 §4.8: untagged, queue 2, MSN 1, MO 0, last. */
	assert_false(th.tagged);
	assert_true(th.last);
	assert_int_equal(th.ddp_ver, 1);
	assert_int_equal(th.rdmap_ver, 1);
	assert_int_equal(th.qn, UIW_QN_TERMINATE);
	assert_int_equal(th.msn, 1);
	assert_int_equal(th.mo, 0);
	if (t.err != x->err)
		print_error("Terminate: %s, expected %s\n",
			    uiw_err_str(t.err), uiw_err_str(x->err));
	assert_int_equal(t.err, x->err);
	assert_int_equal(t.m, x->m);
	assert_int_equal(t.d, x->d);
	assert_int_equal(t.r, x->r);
	assert_false(t.siw_layout);
	if (x->m)
		assert_int_equal(t.ddp_seg_len, x->seg_len);
	if (x->d && x->hdr) {
		assert_int_equal(t.ddp_hdr_len, uiw_ddp_hdr_len(x->hdr[0]));
		assert_memory_equal(t.ddp_hdr, x->hdr, t.ddp_hdr_len);
	}
	if (x->r) {
		assert_int_equal(t.rdmap_hdr_len, UIW_READ_REQ_LEN);
		if (x->rdmap)
			assert_memory_equal(t.rdmap_hdr, x->rdmap,
					    UIW_READ_REQ_LEN);
	}
	state_is(s->qp, UIW_QPS_ERROR);
	assert_int_equal(s->closes, 1);
	assert_false(s->abortive);
	cause_is(s->qp, x->err, UIW_TERM_LOCAL);
	/* Nothing more is read, nothing more is sent. */
	{
		struct iovec iov[4];

		assert_int_equal(ep_rx_iov(s->qp, iov, 4), 0);
		assert_int_equal(ep_rx_done(s->qp, 0), -EPROTO);
		assert_int_equal(uiw_mpa_tx_iov(&s->mpa, iov, 4, NULL), 0);
	}
}

/* Polls exactly n completions and checks their ids and statuses. */
static void wcs_are(struct uiw_cq *cq, int n, const uint64_t *ids,
		    const int *st)
{
	struct uiw_wc wc[32];
	int i, got = ep_poll(cq, wc, 32);

	if (got != n)
		print_error("%d completions, expected %d\n", got, n);
	assert_int_equal(got, n);
	for (i = 0; i < n; i++) {
		if (wc[i].wr_id != ids[i] || (int)wc[i].status != st[i])
			print_error("wc %d: id %llu %s, expected %llu %s\n", i,
				    (unsigned long long)wc[i].wr_id,
				    uiw_wc_status_str(wc[i].status),
				    (unsigned long long)ids[i],
				    uiw_wc_status_str(st[i]));
		assert_int_equal(wc[i].wr_id, ids[i]);
		assert_int_equal(wc[i].status, st[i]);
		if (st[i] != UIW_WC_SUCCESS)
			assert_int_not_equal(wc[i].term.origin, UIW_TERM_NONE);
	}
}

static bool all_are(const uint8_t *p, size_t len, uint8_t v)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i] != v)
			return false;
	return true;
}

/* ---- Violations through the API, across the pipe ------------------------- */

struct pair {
	struct ep_pipe p;
	struct ep_buf a_src, a_sink, a_recv;   /* a's memory */
	struct ep_buf b_tgt, b_recv;           /* b's memory */
};

static void pair_open(struct pair *x, const struct ep_cfg *cfg,
		      unsigned b_tgt_access)
{
	assert_int_equal(ep_open(&x->p, cfg), 0);
	x->p.split = 0;
	assert_int_equal(ep_buf_reg(&x->a_src, x->p.a.pd, 8192, 0), 0);
	assert_int_equal(ep_buf_reg(&x->a_sink, x->p.a.pd, 8192,
				    UIW_ACCESS_LOCAL_WRITE), 0);
	assert_int_equal(ep_buf_reg(&x->a_recv, x->p.a.pd, 1024,
				    UIW_ACCESS_LOCAL_WRITE), 0);
	assert_int_equal(ep_buf_reg(&x->b_tgt, x->p.b.pd, 4096,
				    b_tgt_access), 0);
	assert_int_equal(ep_buf_reg(&x->b_recv, x->p.b.pd, 4096,
				    UIW_ACCESS_LOCAL_WRITE), 0);
	ep_fill(x->a_src.p, 8192, 11);
	memset(x->a_sink.p, 0xa5, 8192);
	memset(x->b_tgt.p, 0x3c, 4096);
	memset(x->b_recv.p, 0x77, 4096);
}

static void pair_close(struct pair *x)
{
	ep_buf_free(&x->a_src);
	ep_buf_free(&x->a_sink);
	ep_buf_free(&x->a_recv);
	ep_buf_free(&x->b_tgt);
	ep_buf_free(&x->b_recv);
	assert_int_equal(ep_close(&x->p), 0);
}

/* a's side after it received b's Terminate. */
static void remote_side(struct pair *x, uiw_err_t e)
{
	state_is(x->p.a.qp, UIW_QPS_ERROR);
	cause_is(x->p.a.qp, e, UIW_TERM_REMOTE);
	assert_int_equal(x->p.a.closes, 1);
	/* RFC 5040 §5.4: a sends nothing after receiving a Terminate. */
	{
		unsigned per[16];

		ep_count_fpdus(x->p.a.out, x->p.a.out_len, true, true, per);
		assert_int_equal(per[UIW_OP_TERMINATE], 0);
	}
}

static const struct ep_cfg pair_cfg = { .crc = true, .markers = true,
					.mulpdu = 512, .ird = 4, .ord = 4 };

/* RDMA Write to an STag that does not exist: DDP invalid STag. */
static void test_write_bad_stag(void **state)
{
	struct pair x;
	struct uiw_ddp_hdr h;
	uint8_t hb[18];
	uint32_t bogus;

	(void)state;
	pair_open(&x, &pair_cfg, ALL_REMOTE);
	bogus = x.b_tgt.mr->rkey ^ 0x80;     /* right index, wrong key */
	assert_int_equal(ep_post_recv(x.p.a.qp, 90, &x.a_recv, 0, 100), 0);
	assert_int_equal(ep_post_recv(x.p.b.qp, 91, &x.b_recv, 0, 100), 0);
	assert_int_equal(ep_post_send(x.p.a.qp, 1, UIW_WR_RDMA_WRITE, 0,
				      &x.a_src, 0, 1000, bogus,
				      (uintptr_t)x.b_tgt.p, 0), 0);
	assert_int_equal(ep_post_send(x.p.a.qp, 2, UIW_WR_RDMA_READ, 0,
				      &x.a_sink, 0, 100, x.b_tgt.mr->rkey,
				      (uintptr_t)x.b_tgt.p, 0), 0);
	/* Let a transmit, then b receive (and answer) all of it. */
	ep_drain_tx(&x.p, &x.p.a);
	ep_pump(&x.p);
	/* The first segment (512 - 14 payload octets) is refused. */
	ep_hdr_write(&h, UIW_OP_WRITE, bogus, (uintptr_t)x.b_tgt.p, false);
	uiw_ddp_hdr_encode(hb, &h);
	{
		struct texp e = { UIW_E_DDP_T_INVALID_STAG, true, true, false,
				  512, hb, NULL };

		term_is(&x.p, &x.p.b, true, true, &e);
	}
	state_is(x.p.b.qp, UIW_QPS_ERROR);
	cause_is(x.p.b.qp, UIW_E_DDP_T_INVALID_STAG, UIW_TERM_LOCAL);
	assert_true(all_are(x.b_tgt.p, 4096, 0x3c));
	/* b: its receive is flushed.  a: the Write had completed (its
	 * octets were out); the Read is flushed, and so is a's receive. */
	wcs_are(x.p.b.cq, 1, (uint64_t[]){ 91 },
		(int[]){ UIW_WC_WR_FLUSH_ERR });
	wcs_are(x.p.a.cq, 3, (uint64_t[]){ 1, 2, 90 },
		(int[]){ UIW_WC_SUCCESS, UIW_WC_WR_FLUSH_ERR,
			 UIW_WC_WR_FLUSH_ERR });
	remote_side(&x, UIW_E_DDP_T_INVALID_STAG);
	assert_true(all_are(x.a_sink.p, 8192, 0xa5));
	pair_close(&x);
}

/* The same, with the Terminate octets checked: b's stream is captured
 * before it reaches a. */
static void write_violation(unsigned access, bool other_pd, uint64_t off,
			    uint32_t len, uint64_t to_override,
			    uint32_t fail_at, uiw_err_t err)
{
	struct pair x;
	struct uiw_ddp_hdr h;
	struct uiw_pd *pd2 = NULL;
	struct ep_buf other;
	uint8_t hb[18];
	uint32_t rkey;
	uint64_t to;

	pair_open(&x, &pair_cfg, access);
	rkey = x.b_tgt.mr->rkey;
	to = (uintptr_t)x.b_tgt.p + off;
	if (other_pd) {
		pd2 = uiw_pd_alloc(x.p.b.dev);
		assert_int_equal(ep_buf_reg(&other, pd2, 4096, ALL_REMOTE), 0);
		memset(other.p, 0x3c, 4096);
		rkey = other.mr->rkey;
		to = (uintptr_t)other.p + off;
	}
	if (to_override)
		to = to_override;
	assert_int_equal(ep_post_recv(x.p.b.qp, 91, &x.b_recv, 0, 100), 0);
	assert_int_equal(ep_post_send(x.p.a.qp, 1, UIW_WR_RDMA_WRITE, 0,
				      &x.a_src, 0, len, rkey, to, 0), 0);
	ep_drain_tx(&x.p, &x.p.a);
	ep_feed(x.p.b.qp, x.p.a.q, x.p.a.q_len, 0, &x.p.rng, 64);
	x.p.a.q_len = 0;
	state_is(x.p.b.qp, UIW_QPS_TERMINATE);
	{
		/* The segment that fails starts at fail_at. */
		uint32_t seg = len - fail_at < 512 - 14 ? len - fail_at
							 : 512 - 14;
		struct texp e = { err, true, true, false,
				  (uint16_t)(14 + seg), hb, NULL };

		ep_hdr_write(&h, UIW_OP_WRITE, rkey, to + fail_at,
			     fail_at + seg == len);
		uiw_ddp_hdr_encode(hb, &h);
		term_is(&x.p, &x.p.b, true, true, &e);
	}
	/* The segments before it were placed, inside the region; the
	 * refused one nowhere. */
	if (fail_at)
		assert_memory_equal(x.b_tgt.p + off, x.a_src.p, fail_at);
	assert_true(all_are(x.b_tgt.p + off + fail_at,
			    4096 - off - fail_at, 0x3c));
	assert_true(all_are(x.b_tgt.p, off, 0x3c));
	if (other_pd)
		assert_true(all_are(other.p, 4096, 0x3c));
	wcs_are(x.p.b.cq, 1, (uint64_t[]){ 91 },
		(int[]){ UIW_WC_WR_FLUSH_ERR });
	/* The Terminate reaches a. */
	ep_pump(&x.p);
	remote_side(&x, err);
	wcs_are(x.p.a.cq, 1, (uint64_t[]){ 1 }, (int[]){ UIW_WC_SUCCESS });
	if (other_pd) {
		ep_buf_free(&other);
		uiw_pd_free(pd2);
	}
	pair_close(&x);
}

static void test_write_access(void **state)
{
	(void)state;
	/* RFC 5040 Figure 9: access rights violation. */
	write_violation(UIW_ACCESS_LOCAL_WRITE | UIW_ACCESS_REMOTE_READ,
			false, 0, 100, 0, 0, UIW_E_RDMAP_ACCESS);
}

static void test_write_bounds(void **state)
{
	(void)state;
	write_violation(ALL_REMOTE, false, 4000, 200, 0, 0,
			UIW_E_DDP_T_BASE_BOUNDS);
	/* Only the ninth segment (octets 3984..4096) crosses the end. */
	write_violation(ALL_REMOTE, false, 0, 4097, 0, 8 * 498,
			UIW_E_DDP_T_BASE_BOUNDS);
}

static void test_write_pd(void **state)
{
	(void)state;
	write_violation(ALL_REMOTE, true, 0, 100, 0, 0,
			UIW_E_DDP_T_STAG_NOT_ASSOC);
}

static void test_write_wrap(void **state)
{
	(void)state;
	write_violation(ALL_REMOTE, false, 0, 300, UINT64_MAX - 100, 0,
			UIW_E_DDP_T_TO_WRAP);
}

/* A zero-length Write is not checked at all (RFC 5041 §5.2). */
static void test_write_zero_unchecked(void **state)
{
	struct pair x;
	struct uiw_wc wc[4];

	(void)state;
	pair_open(&x, &pair_cfg, 0);
	assert_int_equal(ep_post_send(x.p.a.qp, 1, UIW_WR_RDMA_WRITE, 0,
				      NULL, 0, 0, 0x12345678, 99, 0), 0);
	ep_pump(&x.p);
	state_is(x.p.b.qp, UIW_QPS_RTS);
	assert_int_equal(ep_poll(x.p.a.cq, wc, 4), 1);
	assert_int_equal(wc[0].status, UIW_WC_SUCCESS);
	pair_close(&x);
}

/* RDMA Read Request source checks (RFC 5040 §7.2 4a-e): the Terminate
 * carries the Read Request header (R). */
static void read_violation(unsigned access, uint32_t stag_xor, uint64_t off,
			   uint32_t len, uint64_t to_override, bool other_pd,
			   uiw_err_t err)
{
	struct pair x;
	struct uiw_ddp_hdr h;
	struct uiw_read_req rr;
	struct uiw_pd *pd2 = NULL;
	struct ep_buf other, good;
	uint8_t hb[18], rb[28];
	uint32_t rkey;
	uint64_t to;

	pair_open(&x, &pair_cfg, access);
	rkey = x.b_tgt.mr->rkey ^ stag_xor;
	to = (uintptr_t)x.b_tgt.p + off;
	if (other_pd) {
		pd2 = uiw_pd_alloc(x.p.b.dev);
		assert_int_equal(ep_buf_reg(&other, pd2, 4096, ALL_REMOTE), 0);
		rkey = other.mr->rkey;
		to = (uintptr_t)other.p + off;
	}
	if (to_override)
		to = to_override;
	assert_int_equal(ep_post_recv(x.p.a.qp, 90, &x.a_recv, 0, 100), 0);
	/* A good Read first, then the bad one, then a Send. */
	assert_int_equal(ep_buf_reg(&good, x.p.b.pd, 64, ALL_REMOTE), 0);
	assert_int_equal(ep_post_send(x.p.a.qp, 1, UIW_WR_RDMA_READ, 0,
				      &x.a_sink, 0, 10, good.mr->rkey,
				      (uintptr_t)good.p, 0), 0);
	assert_int_equal(ep_post_send(x.p.a.qp, 2, UIW_WR_RDMA_READ, 0,
				      &x.a_sink, 100, len, rkey, to, 0), 0);
	assert_int_equal(ep_post_send(x.p.a.qp, 3, UIW_WR_SEND, 0, &x.a_src,
				      0, 10, 0, 0, 0), 0);
	ep_drain_tx(&x.p, &x.p.a);
	ep_feed(x.p.b.qp, x.p.a.q, x.p.a.q_len, 0, &x.p.rng, 64);
	x.p.a.q_len = 0;
	ep_hdr_untagged(&h, UIW_OP_READ_REQ, UIW_QN_READ_REQ, 2, 0, true);
	uiw_ddp_hdr_encode(hb, &h);
	rr.sink_stag = x.a_sink.mr->lkey;
	rr.sink_to = (uintptr_t)x.a_sink.p + 100;
	rr.size = len;
	rr.src_stag = rkey;
	rr.src_to = to;
	uiw_read_req_encode(rb, &rr);
	{
		struct texp e = { err, true, true, true, 18 + 28, hb, rb };

		term_is(&x.p, &x.p.b, true, true, &e);
	}
	/* b got no receive WR; a's Send had no buffer to go to anyway. */
	ep_pump(&x.p);
	remote_side(&x, err);
	/* a: b failed before answering anything (the first Read's
	 * Response was never built); the second Read is the one the
	 * Terminate names; the Send, done but behind it, and the receive
	 * are flushed. */
	{
		struct uiw_wc wc[8];
		static const int st[] = { UIW_WC_WR_FLUSH_ERR,
					  UIW_WC_REM_ACCESS_ERR,
					  UIW_WC_WR_FLUSH_ERR,
					  UIW_WC_WR_FLUSH_ERR };
		static const uint64_t ids[] = { 1, 2, 3, 90 };
		int n = ep_poll(x.p.a.cq, wc, 8), i;

		assert_int_equal(n, 4);
		for (i = 0; i < 4; i++) {
			assert_int_equal(wc[i].wr_id, ids[i]);
			assert_int_equal(wc[i].status, st[i]);
			assert_int_equal(wc[i].term.origin, UIW_TERM_REMOTE);
			assert_int_equal(wc[i].term.layer, UIW_ERR_LAYER(err));
			assert_int_equal(wc[i].term.etype, UIW_ERR_ETYPE(err));
			assert_int_equal(wc[i].term.ecode, UIW_ERR_ECODE(err));
		}
	}
	assert_true(all_are(x.a_sink.p + 100, 8192 - 100, 0xa5));
	if (other_pd) {
		ep_buf_free(&other);
		uiw_pd_free(pd2);
	}
	ep_buf_free(&good);
	pair_close(&x);
}

static void test_read_violations(void **state)
{
	(void)state;
	read_violation(ALL_REMOTE, 0x01, 0, 100, 0, false,
		       UIW_E_RDMAP_INVALID_STAG);
	read_violation(UIW_ACCESS_LOCAL_WRITE | UIW_ACCESS_REMOTE_WRITE, 0, 0,
		       100, 0, false, UIW_E_RDMAP_ACCESS);
	read_violation(ALL_REMOTE, 0, 4000, 100, 0, false,
		       UIW_E_RDMAP_BASE_BOUNDS);
	read_violation(ALL_REMOTE, 0, 0, 100, UINT64_MAX - 10, false,
		       UIW_E_RDMAP_TO_WRAP);
	read_violation(ALL_REMOTE, 0, 0, 100, 0, true,
		       UIW_E_RDMAP_STAG_NOT_ASSOC);
}

/* No receive posted; a Send longer than the buffer. */
static void send_violation(uint32_t buf_len, uint32_t len, bool post,
			   uiw_err_t err, int b_status)
{
	struct pair x;
	struct uiw_ddp_hdr h;
	uint8_t hb[18];

	pair_open(&x, &pair_cfg, ALL_REMOTE);
	if (post) {
		assert_int_equal(ep_post_recv(x.p.b.qp, 91, &x.b_recv, 100,
					      buf_len), 0);
		assert_int_equal(ep_post_recv(x.p.b.qp, 92, &x.b_recv, 2000,
					      1000), 0);
	}
	assert_int_equal(ep_post_recv(x.p.a.qp, 90, &x.a_recv, 0, 100), 0);
	assert_int_equal(ep_post_send(x.p.a.qp, 1, UIW_WR_SEND, 0, &x.a_src,
				      0, len, 0, 0, 0), 0);
	ep_drain_tx(&x.p, &x.p.a);
	ep_feed(x.p.b.qp, x.p.a.q, x.p.a.q_len, 0, &x.p.rng, 64);
	x.p.a.q_len = 0;
	ep_hdr_send(&h, UIW_OP_SEND, 1, 0, len <= 512 - 18, 0);
	uiw_ddp_hdr_encode(hb, &h);
	{
		uint32_t seg = len < 512 - 18 ? len : 512 - 18;
		struct texp e = { err, true, true, false,
				  (uint16_t)(18 + seg), hb, NULL };

		term_is(&x.p, &x.p.b, true, true, &e);
	}
	/* Nothing outside the posted buffer; nothing at all when the
	 * first segment was refused. */
	assert_true(all_are(x.b_recv.p, 100, 0x77));
	assert_true(all_are(x.b_recv.p + 100 + buf_len, 4096 - 100 - buf_len,
			    0x77));
	if (post)
		wcs_are(x.p.b.cq, 2, (uint64_t[]){ 91, 92 },
			(int[]){ b_status, UIW_WC_WR_FLUSH_ERR });
	else
		wcs_are(x.p.b.cq, 0, NULL, NULL);
	ep_pump(&x.p);
	remote_side(&x, err);
	wcs_are(x.p.a.cq, 2, (uint64_t[]){ 1, 90 },
		(int[]){ UIW_WC_SUCCESS, UIW_WC_WR_FLUSH_ERR });
	pair_close(&x);
}

static void test_no_receive(void **state)
{
	(void)state;
	send_violation(0, 50, false, UIW_E_DDP_U_MSN_NO_BUF, 0);
}

static void test_too_long(void **state)
{
	(void)state;
	/* First segment already too long: nothing placed. */
	send_violation(100, 200, true, UIW_E_DDP_U_TOO_LONG,
		       UIW_WC_LOC_LEN_ERR);
}

/* Too long only in a later segment: the earlier ones were placed into
 * the buffer, never beyond it. */
static void test_too_long_later(void **state)
{
	struct pair x;
	struct uiw_ddp_hdr h;
	uint8_t hb[18];

	(void)state;
	pair_open(&x, &pair_cfg, ALL_REMOTE);
	assert_int_equal(ep_post_recv(x.p.b.qp, 91, &x.b_recv, 100, 1200),
			 0);
	assert_int_equal(ep_post_send(x.p.a.qp, 1, UIW_WR_SEND, 0, &x.a_src,
				      0, 2000, 0, 0, 0), 0);
	ep_drain_tx(&x.p, &x.p.a);
	ep_feed(x.p.b.qp, x.p.a.q, x.p.a.q_len, 1, &x.p.rng, 64);
	x.p.a.q_len = 0;
	/* Segments of 494: MO 0, 494, 988 (too long: 988 + 494 > 1200). */
	ep_hdr_send(&h, UIW_OP_SEND, 1, 988, false, 0);
	uiw_ddp_hdr_encode(hb, &h);
	{
		struct texp e = { UIW_E_DDP_U_TOO_LONG, true, true, false,
				  512, hb, NULL };

		term_is(&x.p, &x.p.b, true, true, &e);
	}
	assert_memory_equal(x.b_recv.p + 100, x.a_src.p, 988);
	assert_true(all_are(x.b_recv.p + 100 + 988, 4096 - 1088, 0x77));
	assert_true(all_are(x.b_recv.p, 100, 0x77));
	wcs_are(x.p.b.cq, 1, (uint64_t[]){ 91 },
		(int[]){ UIW_WC_LOC_LEN_ERR });
	pair_close(&x);
}

/* Send with Invalidate (RFC 5040 §5.3): an STag of another PD cannot be
 * invalidated; an invalid one is an invalid STag. */
static void send_inv_violation(bool other_pd, uiw_err_t err)
{
	struct pair x;
	struct uiw_ddp_hdr h;
	struct uiw_pd *pd2;
	struct ep_buf other;
	uint8_t hb[18];
	uint32_t inv;

	pair_open(&x, &pair_cfg, ALL_REMOTE);
	pd2 = uiw_pd_alloc(x.p.b.dev);
	assert_int_equal(ep_buf_reg(&other, pd2, 64, ALL_REMOTE), 0);
	inv = other_pd ? other.mr->rkey : x.b_tgt.mr->rkey ^ 0x55;
	assert_int_equal(ep_post_recv(x.p.b.qp, 91, &x.b_recv, 0, 100), 0);
	assert_int_equal(ep_post_send(x.p.a.qp, 1, UIW_WR_SEND_WITH_INV, 0,
				      &x.a_src, 0, 40, 0, 0, inv), 0);
	ep_drain_tx(&x.p, &x.p.a);
	ep_feed(x.p.b.qp, x.p.a.q, x.p.a.q_len, 0, &x.p.rng, 64);
	x.p.a.q_len = 0;
	ep_hdr_send(&h, UIW_OP_SEND_INV, 1, 0, true, inv);
	uiw_ddp_hdr_encode(hb, &h);
	{
		/* Figure 10: a remote protection error for a Send with
		 * Invalidate includes the DDP header; there is no RDMA
		 * header to copy. */
		struct texp e = { err, true, true, false, 18 + 40, hb, NULL };

		term_is(&x.p, &x.p.b, true, true, &e);
	}
	wcs_are(x.p.b.cq, 1, (uint64_t[]){ 91 },
		(int[]){ UIW_WC_LOC_PROT_ERR });
	/* The other PD's region is still valid. */
	assert_int_equal(uiw_mr_check(&x.p.b.dev->mrt, other.mr->rkey, pd2, 0,
				      (uintptr_t)other.p, 1), UIW_MRC_OK);
	ep_buf_free(&other);
	uiw_pd_free(pd2);
	pair_close(&x);
}

static void test_send_inv_violation(void **state)
{
	(void)state;
	send_inv_violation(true, UIW_E_RDMAP_PROT_CANT_INV);
	send_inv_violation(false, UIW_E_RDMAP_INVALID_STAG);
}

/* RFC 5040 §8.1.1 rule 7: a remotely accessible STag whose PD serves a
 * second stream cannot be invalidated by a remote peer; once the second
 * QP is gone, it can. */
static void test_send_inv_shared_pd(void **state)
{
	struct pair x;
	struct uiw_ddp_hdr h;
	struct uiw_qp_init_attr qa;
	struct uiw_qp *qp2;
	uint8_t hb[18];
	uint32_t inv;

	(void)state;
	pair_open(&x, &pair_cfg, ALL_REMOTE);
	memset(&qa, 0, sizeof(qa));
	qa.send_cq = qa.recv_cq = x.p.b.cq;
	qa.cap.max_send_wr = qa.cap.max_recv_wr = 4;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
	qp2 = uiw_qp_create(x.p.b.pd, &qa);
	assert_non_null(qp2);
	inv = x.b_tgt.mr->rkey;
	assert_int_equal(ep_post_recv(x.p.b.qp, 91, &x.b_recv, 0, 100), 0);
	assert_int_equal(ep_post_send(x.p.a.qp, 1, UIW_WR_SEND_WITH_INV, 0,
				      &x.a_src, 0, 40, 0, 0, inv), 0);
	ep_drain_tx(&x.p, &x.p.a);
	ep_feed(x.p.b.qp, x.p.a.q, x.p.a.q_len, 0, &x.p.rng, 64);
	x.p.a.q_len = 0;
	ep_hdr_send(&h, UIW_OP_SEND_INV, 1, 0, true, inv);
	uiw_ddp_hdr_encode(hb, &h);
	{
		struct texp e = { UIW_E_RDMAP_PROT_CANT_INV, true, true, false,
				  18 + 40, hb, NULL };

		term_is(&x.p, &x.p.b, true, true, &e);
	}
	wcs_are(x.p.b.cq, 1, (uint64_t[]){ 91 },
		(int[]){ UIW_WC_LOC_PROT_ERR });
	/* The STag survived the attempt. */
	assert_int_equal(uiw_mr_check(&x.p.b.dev->mrt, inv, x.p.b.pd, 0,
				      (uintptr_t)x.b_tgt.p, 1), UIW_MRC_OK);
	assert_int_equal(uiw_qp_destroy(qp2), 0);
	pair_close(&x);

	/* One stream on the PD: the same Send with Invalidate succeeds. */
	pair_open(&x, &pair_cfg, ALL_REMOTE);
	inv = x.b_tgt.mr->rkey;
	assert_int_equal(ep_post_recv(x.p.b.qp, 91, &x.b_recv, 0, 100), 0);
	assert_int_equal(ep_post_send(x.p.a.qp, 1, UIW_WR_SEND_WITH_INV, 0,
				      &x.a_src, 0, 40, 0, 0, inv), 0);
	ep_pump(&x.p);
	wcs_are(x.p.b.cq, 1, (uint64_t[]){ 91 }, (int[]){ UIW_WC_SUCCESS });
	assert_int_equal(uiw_mr_check(&x.p.b.dev->mrt, inv, x.p.b.pd, 0,
				      (uintptr_t)x.b_tgt.p, 1),
			 UIW_MRC_INVALID);
	pair_close(&x);
}

/* Invalidated STags (remote and local invalidate) refuse later access. */
static void test_invalidated_stag(void **state)
{
	struct pair x;
	struct uiw_wc wc[8];

	(void)state;
	/* Remote invalidate, then a Write to it. */
	pair_open(&x, &pair_cfg, ALL_REMOTE);
	assert_int_equal(ep_post_recv(x.p.b.qp, 91, &x.b_recv, 0, 100), 0);
	assert_int_equal(ep_post_send(x.p.a.qp, 1, UIW_WR_SEND_WITH_INV, 0,
				      &x.a_src, 0, 10, 0, 0,
				      x.b_tgt.mr->rkey), 0);
	assert_int_equal(ep_post_send(x.p.a.qp, 2, UIW_WR_RDMA_WRITE, 0,
				      &x.a_src, 0, 10, x.b_tgt.mr->rkey,
				      (uintptr_t)x.b_tgt.p, 0), 0);
	ep_pump(&x.p);
	assert_int_equal(ep_poll(x.p.b.cq, wc, 8), 1);
	assert_int_equal(wc[0].status, UIW_WC_SUCCESS);
	assert_int_equal(wc[0].flags, UIW_WC_F_WITH_INV);
	state_is(x.p.b.qp, UIW_QPS_ERROR);
	cause_is(x.p.b.qp, UIW_E_DDP_T_INVALID_STAG, UIW_TERM_LOCAL);
	remote_side(&x, UIW_E_DDP_T_INVALID_STAG);
	assert_true(all_are(x.b_tgt.p, 4096, 0x3c));
	pair_close(&x);

	/* Local invalidate (in send queue order), then a Write to it. */
	pair_open(&x, &pair_cfg, ALL_REMOTE);
	assert_int_equal(ep_post_send(x.p.b.qp, 5, UIW_WR_LOCAL_INV, 0, NULL,
				      0, 0, 0, 0, x.b_tgt.mr->rkey), 0);
	ep_pump(&x.p);
	assert_int_equal(ep_poll(x.p.b.cq, wc, 8), 1);
	assert_int_equal(wc[0].opcode, UIW_WC_LOCAL_INV);
	assert_int_equal(wc[0].status, UIW_WC_SUCCESS);
	assert_int_equal(ep_post_send(x.p.a.qp, 2, UIW_WR_RDMA_WRITE, 0,
				      &x.a_src, 0, 10, x.b_tgt.mr->rkey,
				      (uintptr_t)x.b_tgt.p, 0), 0);
	ep_pump(&x.p);
	cause_is(x.p.b.qp, UIW_E_DDP_T_INVALID_STAG, UIW_TERM_LOCAL);
	assert_true(all_are(x.b_tgt.p, 4096, 0x3c));
	pair_close(&x);

	/* A local invalidate of another PD's STag fails the WR and the
	 * stream: a Terminate (local catastrophic, no headers, §7.1). */
	pair_open(&x, &pair_cfg, ALL_REMOTE);
	{
		struct uiw_pd *pd2 = uiw_pd_alloc(x.p.b.dev);
		struct ep_buf other;
		struct texp e = { UIW_E_RDMAP_LOCAL_CATA, false, false, false,
				  0, NULL, NULL };

		assert_int_equal(ep_buf_reg(&other, pd2, 64, ALL_REMOTE), 0);
		assert_int_equal(ep_post_recv(x.p.b.qp, 91, &x.b_recv, 0, 10),
				 0);
		assert_int_equal(ep_post_send(x.p.b.qp, 5, UIW_WR_LOCAL_INV,
					      0, NULL, 0, 0, 0, 0,
					      other.mr->rkey), 0);
		assert_int_equal(ep_post_send(x.p.b.qp, 6, UIW_WR_SEND, 0,
					      &x.b_recv, 0, 0, 0, 0, 0), 0);
		term_is(&x.p, &x.p.b, true, true, &e);
		wcs_are(x.p.b.cq, 3, (uint64_t[]){ 5, 6, 91 },
			(int[]){ UIW_WC_LOC_PROT_ERR, UIW_WC_WR_FLUSH_ERR,
				 UIW_WC_WR_FLUSH_ERR });
		ep_pump(&x.p);
		remote_side(&x, UIW_E_RDMAP_LOCAL_CATA);
		assert_int_equal(uiw_mr_check(&x.p.b.dev->mrt,
					      other.mr->rkey, pd2, 0,
					      (uintptr_t)other.p, 1),
				 UIW_MRC_OK);
		ep_buf_free(&other);
		uiw_pd_free(pd2);
	}
	pair_close(&x);
}

/* The user deregisters the region of a posted receive buffer, or of a
 * posted Read's sink: the arriving data is placed nowhere; the WR fails
 * with a local protection error and the stream ends. */
static void test_posted_buffer_deregistered(void **state)
{
	struct pair x;
	struct ep_buf r2, sink2;
	uint8_t hb[18];
	struct uiw_ddp_hdr h;

	(void)state;
	/* A receive buffer: a local error at b, no headers (RFC 5040 Figure
	 * 10, local catastrophic). */
	pair_open(&x, &pair_cfg, ALL_REMOTE);
	assert_int_equal(ep_buf_reg(&r2, x.p.b.pd, 100,
				    UIW_ACCESS_LOCAL_WRITE), 0);
	memset(r2.p, 0x77, 100);
	assert_int_equal(ep_post_recv(x.p.b.qp, 91, &r2, 0, 100), 0);
	assert_int_equal(ep_post_recv(x.p.b.qp, 92, &x.b_recv, 0, 100), 0);
	assert_int_equal(uiw_dereg_mr(r2.mr), 0);
	r2.mr = NULL;
	assert_int_equal(ep_post_send(x.p.a.qp, 1, UIW_WR_SEND, 0, &x.a_src,
				      0, 50, 0, 0, 0), 0);
	ep_drain_tx(&x.p, &x.p.a);
	ep_feed(x.p.b.qp, x.p.a.q, x.p.a.q_len, 0, &x.p.rng, 64);
	x.p.a.q_len = 0;
	{
		struct texp e = { UIW_E_DDP_LOCAL_CATA, false, false, false,
				  0, NULL, NULL };

		term_is(&x.p, &x.p.b, true, true, &e);
	}
	assert_true(all_are(r2.p, 100, 0x77));
	wcs_are(x.p.b.cq, 2, (uint64_t[]){ 91, 92 },
		(int[]){ UIW_WC_LOC_PROT_ERR, UIW_WC_WR_FLUSH_ERR });
	ep_buf_free(&r2);
	pair_close(&x);

	/* A Read's sink: the Response is refused as a tagged error (its
	 * STag is not valid any more); the Read fails locally. */
	pair_open(&x, &pair_cfg, ALL_REMOTE);
	assert_int_equal(ep_buf_reg(&sink2, x.p.a.pd, 100,
				    UIW_ACCESS_LOCAL_WRITE), 0);
	memset(sink2.p, 0x66, 100);
	assert_int_equal(ep_post_send(x.p.a.qp, 1, UIW_WR_RDMA_READ, 0,
				      &sink2, 0, 100, x.b_tgt.mr->rkey,
				      (uintptr_t)x.b_tgt.p, 0), 0);
	ep_drain_tx(&x.p, &x.p.a);
	ep_feed(x.p.b.qp, x.p.a.q, x.p.a.q_len, 0, &x.p.rng, 64);
	x.p.a.q_len = 0;
	ep_drain_tx(&x.p, &x.p.b);          /* the Response */
	ep_hdr_write(&h, UIW_OP_READ_RESP, sink2.mr->lkey,
		     (uintptr_t)sink2.p, true);
	uiw_ddp_hdr_encode(hb, &h);
	assert_int_equal(uiw_dereg_mr(sink2.mr), 0);
	sink2.mr = NULL;
	ep_feed(x.p.a.qp, x.p.b.q, x.p.b.q_len, 1, &x.p.rng, 64);
	x.p.b.q_len = 0;
	{
		struct texp e = { UIW_E_DDP_T_INVALID_STAG, true, true, false,
				  14 + 100, hb, NULL };

		term_is(&x.p, &x.p.a, true, true, &e);
	}
	assert_true(all_are(sink2.p, 100, 0x66));
	wcs_are(x.p.a.cq, 1, (uint64_t[]){ 1 },
		(int[]){ UIW_WC_LOC_PROT_ERR });
	ep_buf_free(&sink2);
	pair_close(&x);
}

/* More Read Requests than IRD: queue 1 has no buffer for the next one. */
static void test_ird_exceeded(void **state)
{
	struct ep_cfg cfg = pair_cfg;
	struct pair x;
	struct uiw_ddp_hdr h;
	uint8_t hb[18];

	(void)state;
	cfg.ird = 2;        /* b takes 2; a was told 4 */
	cfg.ord = 4;
	pair_open(&x, &cfg, ALL_REMOTE);
	for (int i = 0; i < 3; i++)
		assert_int_equal(ep_post_send(x.p.a.qp, 1 + i,
					      UIW_WR_RDMA_READ, 0, &x.a_sink,
					      100 * i, 100, x.b_tgt.mr->rkey,
					      (uintptr_t)x.b_tgt.p, 0), 0);
	ep_drain_tx(&x.p, &x.p.a);
	ep_feed(x.p.b.qp, x.p.a.q, x.p.a.q_len, 0, &x.p.rng, 64);
	x.p.a.q_len = 0;
	ep_hdr_untagged(&h, UIW_OP_READ_REQ, UIW_QN_READ_REQ, 3, 0, true);
	uiw_ddp_hdr_encode(hb, &h);
	{
		struct texp e = { UIW_E_DDP_U_MSN_NO_BUF, true, true, false,
				  18 + 28, hb, NULL };

		term_is(&x.p, &x.p.b, true, true, &e);
	}
	ep_pump(&x.p);
	remote_side(&x, UIW_E_DDP_U_MSN_NO_BUF);
	/* The third Read is named by the Terminate; b answered none. */
	wcs_are(x.p.a.cq, 3, (uint64_t[]){ 1, 2, 3 },
		(int[]){ UIW_WC_WR_FLUSH_ERR, UIW_WC_WR_FLUSH_ERR,
			 UIW_WC_REM_OP_ERR });
	assert_true(all_are(x.a_sink.p, 8192, 0xa5));
	pair_close(&x);
}

/* ---- Crafted frames ------------------------------------------------------ */

struct vic {
	struct ep_pipe p;
	struct ep_buf tgt, rcv, src;
	uint64_t pos;               /* b's stream position */
	bool markers, crc;
	uint8_t buf[140000];
	size_t len;
	struct ep_ulpdu u;
};

static void vic_open(struct vic *v, bool markers, bool crc)
{
	struct ep_cfg cfg = { .crc = crc, .markers = markers, .mulpdu = 1024,
			      .ird = 4, .ord = 4 };

	memset(v, 0, sizeof(*v));
	v->markers = markers;
	v->crc = crc;
	assert_int_equal(ep_open(&v->p, &cfg), 0);
	assert_int_equal(ep_buf_reg(&v->tgt, v->p.b.pd, 4096, ALL_REMOTE), 0);
	assert_int_equal(ep_buf_reg(&v->rcv, v->p.b.pd, 4096,
				    UIW_ACCESS_LOCAL_WRITE), 0);
	assert_int_equal(ep_buf_reg(&v->src, v->p.b.pd, 4096,
				    UIW_ACCESS_LOCAL_WRITE), 0);
	memset(v->tgt.p, 0x3c, 4096);
	memset(v->rcv.p, 0x77, 4096);
}

static void vic_close(struct vic *v)
{
	ep_buf_free(&v->tgt);
	ep_buf_free(&v->rcv);
	ep_buf_free(&v->src);
	assert_int_equal(ep_close(&v->p), 0);
}

/* Appends v->u as an FPDU to the crafted stream. */
static size_t vic_frame(struct vic *v)
{
	size_t n = ep_fpdu(v->buf + v->len, sizeof(v->buf) - v->len,
			   v->pos + v->len, &v->u, v->markers, v->crc);

	assert_true(n > 0);
	v->len += n;
	return n;
}

/* Feeds the crafted stream (split: 0 random, else that size). */
static void vic_feed(struct vic *v, size_t split)
{
	ep_feed(v->p.b.qp, v->buf, v->len, split, &v->p.rng, 64);
	v->pos += v->len;
	v->len = 0;
}

/* A valid Send of n octets on queue 0 (MSN msn). */
static void vic_send(struct vic *v, uint32_t msn, uint32_t n)
{
	struct uiw_ddp_hdr h;
	uint8_t pl[1000];

	ep_fill(pl, n, msn);
	ep_hdr_send(&h, UIW_OP_SEND, msn, 0, true, 0);
	ep_ulpdu_hdr(&v->u, &h);
	ep_ulpdu_put(&v->u, pl, n);
	vic_frame(v);
}

/* One crafted violation after a valid prefix; checks the Terminate, the
 * completions and that the receive buffers beyond the first are
 * untouched. */
static void crafted(bool markers, bool crc, size_t split,
		    void (*build)(struct vic *v), const struct texp *x,
		    int n_wc, const int *st)
{
	struct vic v;
	uint64_t ids[8] = { 10, 11, 12, 13 };

	vic_open(&v, markers, crc);
	for (int i = 0; i < 4; i++)
		assert_int_equal(ep_post_recv(v.p.b.qp, 10 + i, &v.rcv,
					      1000 * i, 1000), 0);
	/* A valid Send first, so that positions and MSNs are not at
	 * their start. */
	vic_send(&v, 1, 333);
	vic_feed(&v, split);
	wcs_are(v.p.b.cq, 1, ids, (int[]){ UIW_WC_SUCCESS });
	state_is(v.p.b.qp, UIW_QPS_RTS);
	build(&v);
	vic_feed(&v, split);
	state_is(v.p.b.qp, UIW_QPS_TERMINATE);
	term_is(&v.p, &v.p.b, markers, crc, x);
	wcs_are(v.p.b.cq, n_wc, ids + 1, st);
	assert_true(all_are(v.tgt.p, 4096, 0x3c));
	assert_true(all_are(v.rcv.p + 2000, 2096, 0x77));
	vic_close(&v);
}

static uint8_t last_hdr[18];

static void build_hdr_only(struct vic *v, const struct uiw_ddp_hdr *h,
			   uint32_t payload)
{
	uint8_t pl[2000];

	memset(pl, 0xee, sizeof(pl));
	ep_ulpdu_hdr(&v->u, h);
	memcpy(last_hdr, v->u.b, 18);
	ep_ulpdu_put(&v->u, pl, payload);
	vic_frame(v);
}

static void b_crc(struct vic *v)
{
	struct uiw_ddp_hdr h;

	ep_hdr_send(&h, UIW_OP_SEND, 2, 0, true, 0);
	build_hdr_only(v, &h, 100);
	v->buf[v->len - 1] ^= 0x40;        /* the last CRC octet */
}

static void b_ddp_ver_u(struct vic *v)
{
	struct uiw_ddp_hdr h;

	ep_hdr_send(&h, UIW_OP_SEND, 2, 0, true, 0);
	h.ddp_ver = 2;
	build_hdr_only(v, &h, 100);
}

static void b_ddp_ver_t(struct vic *v)
{
	struct uiw_ddp_hdr h;

	ep_hdr_write(&h, UIW_OP_WRITE, v->tgt.mr->rkey,
		     (uintptr_t)v->tgt.p, true);
	h.ddp_ver = 0;
	build_hdr_only(v, &h, 100);
}

static void b_rdmap_ver(struct vic *v)
{
	struct uiw_ddp_hdr h;

	ep_hdr_write(&h, UIW_OP_WRITE, v->tgt.mr->rkey,
		     (uintptr_t)v->tgt.p, true);
	h.rdmap_ver = 0;     /* the RDMA Consortium's version */
	build_hdr_only(v, &h, 100);
}

static void b_op_untagged(struct vic *v)
{
	struct uiw_ddp_hdr h;

	/* 1100b: reserved (RFC 5040 §4.3, RFC 7306 §10.1) */
	ep_hdr_send(&h, 0xc, 2, 0, true, 0);
	build_hdr_only(v, &h, 8);
}

static void b_op_tagged(struct vic *v)
{
	struct uiw_ddp_hdr h;

	ep_hdr_write(&h, UIW_OP_SEND, v->tgt.mr->rkey, (uintptr_t)v->tgt.p,
		     true);
	build_hdr_only(v, &h, 100);
}

static void b_op_q1(struct vic *v)
{
	struct uiw_ddp_hdr h;

	ep_hdr_untagged(&h, UIW_OP_SEND, UIW_QN_READ_REQ, 1, 0, true);
	build_hdr_only(v, &h, 28);
}

static void b_resp_unexpected(struct vic *v)
{
	struct uiw_ddp_hdr h;

	ep_hdr_write(&h, UIW_OP_READ_RESP, v->tgt.mr->rkey,
		     (uintptr_t)v->tgt.p, true);
	build_hdr_only(v, &h, 100);
}

static void b_qn4(struct vic *v)
{
	struct uiw_ddp_hdr h;

	/* Queue 3 is RFC 7306's; 4 is the first that RDMAP does not use
	 * (RFC 7306 §10.2). */
	ep_hdr_untagged(&h, UIW_OP_SEND, 4, 1, 0, true);
	build_hdr_only(v, &h, 100);
}

static void b_qn_big(struct vic *v)
{
	struct uiw_ddp_hdr h;

	ep_hdr_untagged(&h, UIW_OP_SEND, 0x12345, 1, 0, true);
	build_hdr_only(v, &h, 0);
}

static void b_msn(struct vic *v)
{
	struct uiw_ddp_hdr h;

	ep_hdr_send(&h, UIW_OP_SEND, 3, 0, true, 0);   /* 2 expected */
	build_hdr_only(v, &h, 100);
}

static void b_mo(struct vic *v)
{
	struct uiw_ddp_hdr h;

	ep_hdr_send(&h, UIW_OP_SEND, 2, 8, true, 0);   /* MO 0 expected */
	build_hdr_only(v, &h, 100);
}

static void b_short_u(struct vic *v)
{
	struct uiw_ddp_hdr h;

	ep_hdr_send(&h, UIW_OP_SEND, 2, 0, true, 0);
	ep_ulpdu_hdr(&v->u, &h);
	memcpy(last_hdr, v->u.b, 18);
	memset(last_hdr + 6, 0, 12);
	v->u.len = 6;                                  /* < 18 octets */
	vic_frame(v);
}

static void b_short_t(struct vic *v)
{
	struct uiw_ddp_hdr h;

	ep_hdr_write(&h, UIW_OP_WRITE, v->tgt.mr->rkey, (uintptr_t)v->tgt.p,
		     true);
	ep_ulpdu_hdr(&v->u, &h);
	memcpy(last_hdr, v->u.b, 18);
	memset(last_hdr + 10, 0, 8);
	v->u.len = 10;                                 /* < 14 octets */
	vic_frame(v);
}

static void b_rreq_short(struct vic *v)
{
	struct uiw_ddp_hdr h;

	ep_hdr_untagged(&h, UIW_OP_READ_REQ, UIW_QN_READ_REQ, 1, 0, true);
	build_hdr_only(v, &h, 20);
}

static void b_rreq_long(struct vic *v)
{
	struct uiw_ddp_hdr h;

	ep_hdr_untagged(&h, UIW_OP_READ_REQ, UIW_QN_READ_REQ, 1, 0, true);
	build_hdr_only(v, &h, 40);
}

static const int fl3[] = { UIW_WC_WR_FLUSH_ERR, UIW_WC_WR_FLUSH_ERR,
			   UIW_WC_WR_FLUSH_ERR };

static void test_bad_crc(void **state)
{
	/* RFC 5044 §4.4 / §8 code 2: LLP error, no headers.  The Send's
	 * payload went into its buffer (direct placement) but the
	 * buffer's WR fails. */
	static const int st[] = { UIW_WC_FATAL_ERR, UIW_WC_WR_FLUSH_ERR,
				  UIW_WC_WR_FLUSH_ERR };
	struct texp x = { UIW_E_MPA_CRC, false, false, false, 0, NULL, NULL };

	(void)state;
	crafted(false, true, 0, b_crc, &x, 3, st);
	crafted(true, true, 1, b_crc, &x, 3, st);
}

static void test_bad_versions(void **state)
{
	struct texp x = { 0, true, true, false, 18 + 100, last_hdr, NULL };

	(void)state;
	x.err = UIW_E_DDP_U_INVALID_VERSION;
	crafted(true, true, 0, b_ddp_ver_u, &x, 3, fl3);
	x.err = UIW_E_DDP_T_INVALID_VERSION;
	x.seg_len = 14 + 100;
	crafted(false, true, 1, b_ddp_ver_t, &x, 3, fl3);
	x.err = UIW_E_RDMAP_INVALID_VERSION;
	crafted(true, false, 0, b_rdmap_ver, &x, 3, fl3);
}

static void test_bad_opcodes(void **state)
{
	struct texp x = { UIW_E_RDMAP_UNEXPECTED_OPCODE, true, true, false,
			  18 + 8, last_hdr, NULL };

	(void)state;
	crafted(true, true, 0, b_op_untagged, &x, 3, fl3);
	x.seg_len = 14 + 100;
	crafted(false, true, 0, b_op_tagged, &x, 3, fl3);
	crafted(true, true, 0, b_resp_unexpected, &x, 3, fl3);
	x.seg_len = 18 + 28;
	crafted(false, false, 0, b_op_q1, &x, 3, fl3);
}

static void test_bad_qn(void **state)
{
	struct texp x = { UIW_E_DDP_U_INVALID_QN, true, true, false,
			  18 + 100, last_hdr, NULL };

	(void)state;
	crafted(true, true, 0, b_qn4, &x, 3, fl3);
	x.seg_len = 18;
	crafted(false, true, 1, b_qn_big, &x, 3, fl3);
}

static void test_bad_msn_mo(void **state)
{
	struct texp x = { UIW_E_DDP_U_MSN_RANGE, true, true, false,
			  18 + 100, last_hdr, NULL };
	static const int st_mo[] = { UIW_WC_LOC_LEN_ERR, UIW_WC_WR_FLUSH_ERR,
				     UIW_WC_WR_FLUSH_ERR };

	(void)state;
	crafted(true, true, 0, b_msn, &x, 3, fl3);
	x.err = UIW_E_DDP_U_INVALID_MO;
	crafted(false, true, 0, b_mo, &x, 3, st_mo);
}

static void test_short_ulpdu(void **state)
{
	struct texp x = { UIW_E_DDP_U_INVALID_QN, true, true, false, 6,
			  last_hdr, NULL };

	(void)state;
	crafted(true, true, 1, b_short_u, &x, 3, fl3);
	x.err = UIW_E_DDP_T_INVALID_STAG;
	x.seg_len = 10;
	crafted(false, false, 0, b_short_t, &x, 3, fl3);
}

static void test_bad_read_request(void **state)
{
	struct texp x = { UIW_E_RDMAP_OP_UNSPEC, true, true, false, 18 + 20,
			  last_hdr, NULL };

	(void)state;
	crafted(true, true, 0, b_rreq_short, &x, 3, fl3);
	x.err = UIW_E_DDP_U_TOO_LONG;
	x.seg_len = 18 + 40;
	crafted(false, true, 0, b_rreq_long, &x, 3, fl3);
}

/* RFC 5044 §4.3 / §8 code 3: an FPDUPTR that disagrees. */
static void test_bad_fpduptr(void **state)
{
	struct texp x = { UIW_E_MPA_MARKER, false, false, false, 0, NULL,
			  NULL };
	int crc;

	(void)state;
	for (crc = 0; crc < 2; crc++) {
		struct vic v;
		struct uiw_ddp_hdr h;
		uint8_t pl[700];
		size_t at;

		vic_open(&v, true, crc);
		assert_int_equal(ep_post_recv(v.p.b.qp, 10, &v.rcv, 0, 1000),
				 0);
		memset(pl, 0x11, sizeof(pl));
		ep_hdr_send(&h, UIW_OP_SEND, 1, 0, true, 0);
		ep_ulpdu_hdr(&v.u, &h);
		ep_ulpdu_put(&v.u, pl, sizeof(pl));
		vic_frame(&v);
		/* The FPDU starts with the marker at 0; the next marker at
		 * stream octet 512 points back 508 octets to the length
		 * field at 4. */
		at = 512;
		assert_int_equal(v.buf[at + 2] << 8 | v.buf[at + 3], 508);
		v.buf[at + 3] = 0x10;
		if (crc) {
			/* Keep the CRC right: the marker error must be the
			 * one reported. */
			uint32_t c = uiw_crc32c(v.buf, v.len - 4);

			uiw_crc32c_put(v.buf + v.len - 4, c);
		}
		vic_feed(&v, 0);
		term_is(&v.p, &v.p.b, true, crc, &x);
		wcs_are(v.p.b.cq, 1, (uint64_t[]){ 10 },
			(int[]){ UIW_WC_FATAL_ERR });
		vic_close(&v);
	}
}

/* RFC 5044 §7.1.2 rule 4: an MPA responder sends nothing, not even a
 * Terminate, before MPA has validated an FPDU of the initiator's.  An
 * initiator in the same place sends its Terminate.  Cases: a
 * ULPDU_Length whose FPDU cannot exist (with markers, FPDUPTRs beyond
 * 16 bits: a framing error found before the FPDU completes); a first
 * FPDU with a bad CRC.  A first FPDU that MPA accepts but DDP refuses
 * (invalid QN) is validated: the responder terminates. */
static void first_fpdu(bool hold, const uint8_t *bytes, size_t len,
		       uiw_err_t err, bool term, int rq_status)
{
	struct ep_cfg cfg = { .crc = true, .markers = true, .hold_b = hold };
	struct ep_pipe p;
	struct ep_buf rcv;
	struct uiw_qp_attr at;
	uint64_t rng = 3;

	assert_int_equal(ep_open(&p, &cfg), 0);
	assert_int_equal(ep_buf_reg(&rcv, p.b.pd, 64, UIW_ACCESS_LOCAL_WRITE),
			 0);
	assert_int_equal(ep_post_recv(p.b.qp, 9, &rcv, 0, 64), 0);
	ep_feed(p.b.qp, bytes, len, 1, &rng, 64);
	ep_drain_tx(&p, &p.b);
	assert_int_equal(uiw_qp_query(p.b.qp, &at), 0);
	assert_int_equal(at.state, UIW_QPS_ERROR);
	cause_is(p.b.qp, err, UIW_TERM_LOCAL);
	assert_int_equal(p.b.closes, 1);
	if (term) {
		struct uiw_ddp_hdr th;
		struct uiw_term t;

		assert_int_equal(ep_find_term(p.b.out, p.b.out_len, true, true,
					      &th, &t), 0);
		assert_int_equal(t.err, err);
		assert_non_null(strstr(at.term_msg, "sent Terminate"));
	} else {
		assert_int_equal(p.b.out_len, 0);
		assert_non_null(strstr(at.term_msg, "local error"));
	}
	wcs_are(p.b.cq, 1, (uint64_t[]){ 9 }, (int[]){ rq_status });
	ep_buf_free(&rcv);
	assert_int_equal(ep_close(&p), 0);
}

static void test_responder_first_fpdu(void **state)
{
	static const uint8_t bad_len[8] = { 0, 0, 0, 0, 0xff, 0xff, 0x41,
					    0x43 };
	struct ep_ulpdu u;
	struct uiw_ddp_hdr h;
	uint8_t f[64];
	size_t n;
	int hold;

	(void)state;
	for (hold = 0; hold < 2; hold++)
		first_fpdu(hold, bad_len, sizeof(bad_len), UIW_E_MPA_MARKER,
			   !hold, UIW_WC_WR_FLUSH_ERR);
	ep_hdr_untagged(&h, UIW_OP_SEND, 0, 1, 0, true);
	ep_ulpdu_hdr(&u, &h);
	ep_ulpdu_put(&u, "0123456789", 10);
	n = ep_fpdu(f, sizeof(f), 0, &u, true, true);
	f[n - 1] ^= 1;                          /* bad CRC */
	/* The Send's receive buffer took the octets; its WR fails. */
	for (hold = 0; hold < 2; hold++)
		first_fpdu(hold, f, n, UIW_E_MPA_CRC, !hold,
			   UIW_WC_FATAL_ERR);
	ep_hdr_untagged(&h, UIW_OP_SEND, 5, 1, 0, true);  /* invalid QN */
	ep_ulpdu_hdr(&u, &h);
	n = ep_fpdu(f, sizeof(f), 0, &u, true, true);
	for (hold = 0; hold < 2; hold++)
		first_fpdu(hold, f, n, UIW_E_DDP_U_INVALID_QN, true,
			   UIW_WC_WR_FLUSH_ERR);
}

/* After the first error nothing more is taken and exactly one
 * Terminate goes out, whatever follows. */
static void test_one_terminate(void **state)
{
	struct vic v;
	struct uiw_ddp_hdr h;
	struct texp x = { UIW_E_DDP_U_INVALID_QN, true, true, false, 18,
			  last_hdr, NULL };

	(void)state;
	vic_open(&v, false, true);
	ep_hdr_untagged(&h, UIW_OP_SEND, 9, 1, 0, true);
	build_hdr_only(&v, &h, 0);
	ep_hdr_untagged(&h, UIW_OP_SEND, 8, 1, 0, true);
	ep_ulpdu_hdr(&v.u, &h);
	vic_frame(&v);
	vic_send(&v, 1, 10);
	vic_feed(&v, 0);
	term_is(&v.p, &v.p.b, false, true, &x);
	vic_close(&v);
}

/* A Terminate from the peer: decoded, recorded as the remote cause; the
 * WR it names gets a REM_* status, the others are flushed; nothing is
 * sent back. */
static void test_remote_terminate(void **state)
{
	struct vic v;
	struct uiw_ddp_hdr h, rh;
	struct uiw_term t;
	uint8_t pl[64];
	size_t n;
	int siw;

	(void)state;
	for (siw = 0; siw < 2; siw++) {
		vic_open(&v, false, true);
		assert_int_equal(ep_post_recv(v.p.b.qp, 10, &v.rcv, 0, 100),
				 0);
		/* b's Reads go out: MSN 1 and 2 on queue 1. */
		assert_int_equal(ep_post_send(v.p.b.qp, 1, UIW_WR_RDMA_READ, 0,
					      &v.src, 0, 10, 0x1234, 0, 0), 0);
		assert_int_equal(ep_post_send(v.p.b.qp, 2, UIW_WR_RDMA_READ, 0,
					      &v.src, 100, 10, 0x1234, 0, 0),
				 0);
		ep_drain_tx(&v.p, &v.p.b);
		/* The peer refuses the second one. */
		memset(&t, 0, sizeof(t));
		t.err = UIW_E_RDMAP_INVALID_STAG;
		ep_hdr_untagged(&rh, UIW_OP_READ_REQ, UIW_QN_READ_REQ, 2, 0,
				true);
		uiw_term_hdrct(t.err, true, true, &t);
		t.ddp_seg_len = 46;
		t.ddp_hdr_len = (uint8_t)uiw_ddp_hdr_encode(t.ddp_hdr, &rh);
		t.rdmap_hdr_len = 28;
		n = uiw_term_encode(pl, sizeof(pl), &t);
		assert_true(n > 0);
		if (siw) {
			/* Linux siw's swapped layout (SIW-FACTS.md). */
			pl[0] = (uint8_t)((pl[0] >> 4) | (pl[0] << 4));
			pl[2] = (uint8_t)((t.m ? 1 : 0) | (t.d ? 2 : 0) |
					  (t.r ? 4 : 0));
		}
		ep_hdr_untagged(&h, UIW_OP_TERMINATE, UIW_QN_TERMINATE, 1, 0,
				true);
		ep_ulpdu_hdr(&v.u, &h);
		ep_ulpdu_put(&v.u, pl, n);
		vic_frame(&v);
		vic_feed(&v, 1);
		state_is(v.p.b.qp, UIW_QPS_ERROR);
		cause_is(v.p.b.qp, UIW_E_RDMAP_INVALID_STAG, UIW_TERM_REMOTE);
		assert_int_equal(v.p.b.closes, 1);
		wcs_are(v.p.b.cq, 3, (uint64_t[]){ 1, 2, 10 },
			(int[]){ UIW_WC_WR_FLUSH_ERR, UIW_WC_REM_ACCESS_ERR,
				 UIW_WC_WR_FLUSH_ERR });
		{
			size_t before = v.p.b.out_len;

			ep_drain_tx(&v.p, &v.p.b);
			assert_int_equal(v.p.b.out_len, before);
		}
		vic_close(&v);
	}
}

/* The LLP goes away: flushes with FATAL for the WR in progress. */
static void test_llp_lost(void **state)
{
	struct pair x;
	struct uiw_wc wc[8];

	(void)state;
	pair_open(&x, &pair_cfg, ALL_REMOTE);
	assert_int_equal(ep_post_recv(x.p.a.qp, 90, &x.a_recv, 0, 100), 0);
	assert_int_equal(ep_post_send(x.p.a.qp, 1, UIW_WR_SEND, 0, &x.a_src,
				      0, 10, 0, 0, 0), 0);
	assert_int_equal(ep_post_recv(x.p.b.qp, 91, &x.b_recv, 0, 100), 0);
	ep_pump(&x.p);
	assert_int_equal(ep_poll(x.p.a.cq, wc, 8), 1);
	assert_int_equal(ep_poll(x.p.b.cq, wc, 8), 1);
	assert_int_equal(ep_post_send(x.p.a.qp, 2, UIW_WR_RDMA_READ, 0,
				      &x.a_sink, 0, 100, x.b_tgt.mr->rkey,
				      (uintptr_t)x.b_tgt.p, 0), 0);
	assert_int_equal(ep_post_send(x.p.a.qp, 3, UIW_WR_SEND, 0, &x.a_src,
				      0, 10, 0, 0, 0), 0);
	ep_drain_tx(&x.p, &x.p.a);        /* both out, no answer */
	ep_side_detach(&x.p.a, UIW_E_MPA_CLOSED);
	state_is(x.p.a.qp, UIW_QPS_ERROR);
	cause_is(x.p.a.qp, UIW_E_MPA_CLOSED, UIW_TERM_LLP);
	wcs_are(x.p.a.cq, 3, (uint64_t[]){ 2, 3, 90 },
		(int[]){ UIW_WC_FATAL_ERR, UIW_WC_WR_FLUSH_ERR,
			 UIW_WC_WR_FLUSH_ERR });
	/* The peer's FIN in the middle of an FPDU (a message) is an error
	 * too: the first octets of a Send's. */
	{
		struct ep_ulpdu u = { .len = 0 };
		struct uiw_ddp_hdr h;
		uint8_t f[128];
		size_t n;

		ep_hdr_send(&h, UIW_OP_SEND, 1, 0, true, 0);
		ep_ulpdu_hdr(&u, &h);
		ep_ulpdu_put(&u, "0123456789", 10);
		n = ep_fpdu(f, sizeof(f), 0, &u, false, true);
		assert_true(n > 8);
		ep_feed(x.p.b.qp, f, ep_framing() == EP_FR_MPA ? 3 : 8, 0,
			&x.p.rng, 64);
		ep_llp_fin(x.p.b.qp);
		state_is(x.p.b.qp, UIW_QPS_ERROR);
		cause_is(x.p.b.qp, UIW_E_MPA_CLOSED, UIW_TERM_LLP);
		assert_int_equal(x.p.b.closes, 1);
	}
	pair_close(&x);
}

/* CQ overflow: the CQ reports it; every QP using it goes to Error, the
 * others go on (RFC 5040 §8.1.1 rule 10). */
static void test_cq_overflow(void **state)
{
	struct ep_cfg cfg = { .crc = true, .cqe = 2 };
	struct ep_pipe p, q;
	struct ep_buf src, rcv, s2, r2;
	struct uiw_qp_init_attr qa;
	struct uiw_qp *idle;
	struct uiw_wc wc[4];

	(void)state;
	assert_int_equal(ep_open(&p, &cfg), 0);
	cfg.cqe = 0;
	assert_int_equal(ep_open(&q, &cfg), 0);
	memset(&qa, 0, sizeof(qa));
	qa.send_cq = qa.recv_cq = p.b.cq;
	qa.cap.max_send_wr = qa.cap.max_recv_wr = 2;
	idle = uiw_qp_create(p.b.pd, &qa);
	assert_non_null(idle);
	assert_int_equal(ep_buf_reg(&src, p.a.pd, 64, 0), 0);
	assert_int_equal(ep_buf_reg(&rcv, p.b.pd, 640, ALL_REMOTE), 0);
	assert_int_equal(ep_buf_reg(&s2, q.a.pd, 64, 0), 0);
	assert_int_equal(ep_buf_reg(&r2, q.b.pd, 64, ALL_REMOTE), 0);
	for (int i = 0; i < 4; i++)
		assert_int_equal(ep_post_recv(p.b.qp, i, &rcv, 64 * i, 64), 0);
	/* a's CQ is drained as it goes; b's is not: its third receive
	 * completion does not fit. */
	for (int i = 0; i < 3; i++) {
		assert_int_equal(ep_post_send(p.a.qp, i, UIW_WR_SEND, 0, &src,
					      0, 8, 0, 0, 0), 0);
		ep_pump(&p);
		assert_int_equal(ep_poll(p.a.cq, wc, 4), 1);
		assert_int_equal(wc[0].status, UIW_WC_SUCCESS);
	}
	assert_int_equal(uiw_cq_poll(p.b.cq, 4, wc), -EOVERFLOW);
	state_is(p.b.qp, UIW_QPS_ERROR);
	cause_is(p.b.qp, UIW_E_RDMAP_LOCAL_CATA, UIW_TERM_LOCAL);
	state_is(idle, UIW_QPS_ERROR);
	remote_side(&(struct pair){ .p = p }, UIW_E_RDMAP_LOCAL_CATA);
	/* An unrelated stream is unaffected. */
	assert_int_equal(ep_post_recv(q.b.qp, 1, &r2, 0, 64), 0);
	assert_int_equal(ep_post_send(q.a.qp, 1, UIW_WR_SEND, 0, &s2, 0, 8, 0,
				      0, 0), 0);
	ep_pump(&q);
	state_is(q.b.qp, UIW_QPS_RTS);
	assert_int_equal(ep_poll(q.b.cq, wc, 4), 1);
	assert_int_equal(uiw_qp_destroy(idle), 0);
	ep_buf_free(&src);
	ep_buf_free(&rcv);
	ep_buf_free(&s2);
	ep_buf_free(&r2);
	assert_int_equal(ep_close(&p), 0);
	assert_int_equal(ep_close(&q), 0);
}

/* A Read posted while Idle on a connection with ORD 0 fails. */
static void test_ord_zero(void **state)
{
	struct ep_cfg cfg = { .crc = true };
	struct ep_pipe p;
	struct ep_buf sink;
	struct texp x = { UIW_E_RDMAP_LOCAL_CATA, false, false, false, 0,
			  NULL, NULL };

	(void)state;
	assert_int_equal(ep_open_idle(&p, &cfg), 0);
	assert_int_equal(ep_buf_reg(&sink, p.a.pd, 64,
				    UIW_ACCESS_LOCAL_WRITE), 0);
	assert_int_equal(ep_post_send(p.a.qp, 1, UIW_WR_RDMA_READ, 0, &sink,
				      0, 8, 1, 0, 0), 0);
	p.a.lp.ord = 0;
	p.a.lp.ird = 0;
	assert_int_equal(ep_attach(&p), 0);
	/* In RTS a Read is refused at once. */
	assert_int_equal(ep_post_send(p.a.qp, 2, UIW_WR_RDMA_READ, 0, &sink,
				      0, 8, 1, 0, 0), -EINVAL);
	term_is(&p, &p.a, false, true, &x);
	wcs_are(p.a.cq, 1, (uint64_t[]){ 1 },
		(int[]){ UIW_WC_LOC_QP_OP_ERR });
	ep_buf_free(&sink);
	assert_int_equal(ep_close(&p), 0);
}

/* ---- Deregistration while octets are being placed ------------------------ */

struct dereg_arg {
	struct uiw_mr *mr;
	volatile int done;
};

static void *dereg_thread(void *arg)
{
	struct dereg_arg *d = arg;

	assert_int_equal(uiw_dereg_mr(d->mr), 0);
	__atomic_store_n(&d->done, 1, __ATOMIC_SEQ_CST);
	return NULL;
}

static void test_dereg_in_flight(void **state)
{
	struct vic v;
	struct uiw_ddp_hdr h;
	struct iovec iov[8];
	struct dereg_arg d;
	struct uiw_mr_entry *e;
	pthread_t th;
	uint8_t pl[600];
	size_t off = 0;
	int n, i;
	struct texp x = { UIW_E_DDP_T_INVALID_STAG, true, true, false,
			  14 + 600, NULL, NULL };

	(void)state;
	vic_open(&v, false, false);
	memset(pl, 0x99, sizeof(pl));
	ep_hdr_write(&h, UIW_OP_WRITE, v.tgt.mr->rkey, (uintptr_t)v.tgt.p,
		     false);
	ep_ulpdu_hdr(&v.u, &h);
	ep_ulpdu_put(&v.u, pl, sizeof(pl));
	vic_frame(&v);
	/* Feed up to the header, then ask where the payload goes: the
	 * target region, now held. */
	while (off < 2 + 14) {
		n = ep_rx_iov(v.p.b.qp, iov, 8);
		assert_true(n > 0);
		size_t take = iov[0].iov_len < 2 + 14 - off ?
			      iov[0].iov_len : 2 + 14 - off;
		memcpy(iov[0].iov_base, v.buf + off, take);
		assert_int_equal(ep_rx_done(v.p.b.qp, take), 0);
		off += take;
	}
	n = ep_rx_iov(v.p.b.qp, iov, 8);
	assert_true(n >= 1);
	assert_ptr_equal(iov[0].iov_base, v.tgt.p);
	assert_int_equal(iov[0].iov_len, 600);
	e = &v.p.b.dev->mrt.ent[v.tgt.mr->lkey >> 8];
	d.mr = v.tgt.mr;
	d.done = 0;
	assert_int_equal(pthread_create(&th, NULL, dereg_thread, &d), 0);
	/* Once the region is dying, dereg waits for our hold. */
	while (atomic_load(&e->state) != UIW_MRE_DYING)
		sched_yield();
	for (i = 0; i < 1000; i++)
		sched_yield();
	assert_int_equal(__atomic_load_n(&d.done, __ATOMIC_SEQ_CST), 0);
	/* The "readv" lands 300 octets, then the LLP reports them. */
	memcpy(v.tgt.p, v.buf + off, 300);
	assert_int_equal(ep_rx_done(v.p.b.qp, 300), 0);
	off += 300;
	pthread_join(th, NULL);
	assert_int_equal(d.done, 1);
	v.tgt.mr = NULL;
	/* The rest of the segment is placed nowhere; the segment fails as
	 * an invalid STag. */
	n = ep_rx_iov(v.p.b.qp, iov, 8);
	assert_true(n >= 1);
	assert_true((uint8_t *)iov[0].iov_base < v.tgt.p ||
		    (uint8_t *)iov[0].iov_base >= v.tgt.p + 4096);
	ep_feed(v.p.b.qp, v.buf + off, v.len - off, 0, &v.p.rng, 8);
	memcpy(last_hdr, v.u.b, 14);
	x.hdr = last_hdr;
	term_is(&v.p, &v.p.b, false, false, &x);
	assert_true(all_are(v.tgt.p + 300, 4096 - 300, 0x3c));
	vic_close(&v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_write_bad_stag),
		cmocka_unit_test(test_write_access),
		cmocka_unit_test(test_write_bounds),
		cmocka_unit_test(test_write_pd),
		cmocka_unit_test(test_write_wrap),
		cmocka_unit_test(test_write_zero_unchecked),
		cmocka_unit_test(test_read_violations),
		cmocka_unit_test(test_no_receive),
		cmocka_unit_test(test_too_long),
		cmocka_unit_test(test_too_long_later),
		cmocka_unit_test(test_send_inv_violation),
		cmocka_unit_test(test_send_inv_shared_pd),
		cmocka_unit_test(test_invalidated_stag),
		cmocka_unit_test(test_ird_exceeded),
		cmocka_unit_test(test_posted_buffer_deregistered),
		cmocka_unit_test(test_bad_crc),
		cmocka_unit_test(test_bad_versions),
		cmocka_unit_test(test_bad_opcodes),
		cmocka_unit_test(test_bad_qn),
		cmocka_unit_test(test_bad_msn_mo),
		cmocka_unit_test(test_short_ulpdu),
		cmocka_unit_test(test_bad_read_request),
		cmocka_unit_test(test_bad_fpduptr),
		cmocka_unit_test(test_responder_first_fpdu),
		cmocka_unit_test(test_one_terminate),
		cmocka_unit_test(test_remote_terminate),
		cmocka_unit_test(test_llp_lost),
		cmocka_unit_test(test_cq_overflow),
		cmocka_unit_test(test_ord_zero),
		cmocka_unit_test(test_dereg_in_flight),
	};
	static const char *const mpa_only[] = {
		"test_bad_crc", "test_bad_fpduptr",
		"test_responder_first_fpdu", "test_dereg_in_flight", NULL,
	};

	return ep_run_tests("engine errors", tests,
			    sizeof(tests) / sizeof(tests[0]), mpa_only, NULL);
}
