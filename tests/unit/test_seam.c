/*
 * The framing seam (rnic/framing.h) with a framing that is not MPA: the
 * tests' message framing (msg_framing.h), each DDP segment one message
 * behind its DDP-SSN, unordered as SCTP's U flag allows (RFC 5043 §5).
 *
 *  - the segments of one message in another order: tagged ones placed by
 *    TO, untagged ones by MO, and the message delivered only once all of
 *    it is placed (RFC 5041 §5.3, §5.4);
 *  - Sends delivered in MSN order, whatever order they complete in;
 *    with a shared receive queue, a message that starts first takes the
 *    buffers of those before it too (oldest to the lowest MSN), and a
 *    QP moved to Error flushes only the buffers it took;
 *  - a segment whose length the framing learns only at its end (partial
 *    delivery): placement bounded by the region or buffer, and the
 *    Terminate its header would have drawn (framing.h); guard octets
 *    around every target prove that nothing else was written.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "engine_pipe.h"

#define ALL_REMOTE (UIW_ACCESS_LOCAL_WRITE | UIW_ACCESS_REMOTE_WRITE | \
		    UIW_ACCESS_REMOTE_READ)
#define WHOLE ((size_t)1 << 30)    /* ep_feed split: a message at once */

struct rec {
	const uint8_t *p;
	size_t len;                /* with the record's length field */
};

/* The records (messages) a side has queued for its peer. */
static int records(struct ep_side *s, struct rec *r, int max)
{
	size_t off = 0;
	int n = 0;

	while (off + UIW_MSGF_REC_LEN <= s->q_len && n < max) {
		const uint8_t *p = s->q + off;
		size_t l = (size_t)p[0] << 24 | (size_t)p[1] << 16 |
			   (size_t)p[2] << 8 | p[3];

		r[n].p = p;
		r[n].len = UIW_MSGF_REC_LEN + l;
		off += r[n].len;
		n++;
	}
	assert_int_equal(off, s->q_len);
	return n;
}

static void feed(struct ep_pipe *p, struct ep_side *to, const struct rec *r,
		 size_t split)
{
	assert_int_equal(ep_feed(to->qp, r->p, r->len, split, &p->rng, 64),
			 r->len);
}

/* srq_b: b's receives come from an SRQ of that many buffers. */
static void open_pair_srq(struct ep_pipe *p, uint32_t srq_b)
{
	struct ep_cfg cfg = { .mulpdu = 512, .max_sge = 2, .srq_b = srq_b };
	struct uiw_qp_attr a;

	assert_int_equal(ep_framing(), EP_FR_MSG_UNORDERED);
	assert_int_equal(ep_open(p, &cfg), 0);
	/* the framing names its lower layer; the engine only reports it */
	assert_int_equal(uiw_qp_query(p->b.qp, &a), 0);
	assert_int_equal(a.llp, UIW_LLP_SCTP);
	assert_false(a.crc || a.markers_tx || a.markers_rx);
}

static void open_pair(struct ep_pipe *p)
{
	open_pair_srq(p, 0);
}

static void cause_is(struct uiw_qp *qp, uiw_err_t e)
{
	struct uiw_qp_attr a;

	assert_int_equal(uiw_qp_query(qp, &a), 0);
	assert_int_equal(a.state, UIW_QPS_TERMINATE);
	assert_int_equal(a.term.layer, UIW_ERR_LAYER(e));
	assert_int_equal(a.term.etype, UIW_ERR_ETYPE(e));
	assert_int_equal(a.term.ecode, UIW_ERR_ECODE(e));
}

static bool all_are(const uint8_t *p, size_t n, uint8_t v)
{
	while (n--)
		if (*p++ != v)
			return false;
	return true;
}

/* A Send of five segments, last first: no completion until the one
 * missing segment arrives; then the whole message, in place. */
static void test_send_segments_out_of_order(void **state)
{
	static const int order[] = { 4, 0, 2, 1 };
	struct ep_pipe p;
	struct ep_buf src, dst;
	struct uiw_wc wc[4];
	struct rec r[16];
	int n, i;

	(void)state;
	open_pair(&p);
	assert_int_equal(ep_buf_reg(&src, p.a.pd, 2000, 0), 0);
	assert_int_equal(ep_buf_reg(&dst, p.b.pd, 4096,
				    UIW_ACCESS_LOCAL_WRITE), 0);
	ep_fill(src.p, 2000, 7);
	memset(dst.p, 0x77, 4096);
	assert_int_equal(ep_post_recv(p.b.qp, 50, &dst, 100, 3000), 0);
	assert_int_equal(ep_post_send(p.a.qp, 1, UIW_WR_SEND, 0, &src, 0,
				      2000, 0, 0, 0), 0);
	ep_drain_tx(&p, &p.a);
	n = records(&p.a, r, 16);
	assert_int_equal(n, 5);      /* 494 octets each after the header */
	for (i = 0; i < 4; i++) {
		feed(&p, &p.b, &r[order[i]], WHOLE);
		assert_int_equal(ep_poll(p.b.cq, wc, 4), 0);
	}
	feed(&p, &p.b, &r[3], WHOLE);
	assert_int_equal(ep_poll(p.b.cq, wc, 4), 1);
	assert_int_equal(wc[0].wr_id, 50);
	assert_int_equal(wc[0].status, UIW_WC_SUCCESS);
	assert_int_equal(wc[0].byte_len, 2000);
	assert_memory_equal(dst.p + 100, src.p, 2000);
	assert_true(all_are(dst.p, 100, 0x77));
	assert_true(all_are(dst.p + 2100, 4096 - 2100, 0x77));
	p.a.q_len = 0;
	ep_buf_free(&src);
	ep_buf_free(&dst);
	assert_int_equal(ep_close(&p), 0);
}

/* ---- Shared receive queues (srq.h) ---------------------------------- */

static void srq_post(struct uiw_srq *srq, uint64_t id, struct ep_buf *b,
		     uint32_t len)
{
	struct uiw_sge sge = { (uint64_t)(uintptr_t)b->p, len, b->mr->lkey };
	struct uiw_recv_wr wr = { .wr_id = id, .sg_list = &sge,
				  .num_sge = 1 }, *bad;

	assert_int_equal(uiw_post_srq_recv(srq, &wr, &bad), 0);
}

/* The SRQ holds room for exactly `room` more buffers. */
static void srq_room(struct uiw_srq *srq, struct ep_buf *b, int room)
{
	int i;

	for (i = 0; i < room; i++)
		srq_post(srq, 90 + (uint64_t)i, b, 1);
	{
		struct uiw_recv_wr wr = { .wr_id = 99 }, *bad;

		assert_int_equal(uiw_post_srq_recv(srq, &wr, &bad), -ENOMEM);
	}
}

static void last_wqe(struct ep_side *s)
{
	struct uiw_async_event ev;

	assert_int_equal(uiw_device_get_async_event(s->dev, &ev, 0), 0);
	assert_int_equal(ev.type, UIW_EVENT_QP_LAST_WQE_REACHED);
	assert_ptr_equal(ev.qp, s->qp);
	assert_int_equal(uiw_device_get_async_event(s->dev, &ev, 0), -EAGAIN);
}

/* Two Sends: the second whole before the first: completions in MSN
 * order, each in its own buffer (RFC 5041 §5.3).  With an SRQ (srq_b
 * buffers) the second takes, oldest first, the buffers of both (the
 * first goes to MSN 1); a third buffer stays in the SRQ when the QP goes
 * to Error. */
static void sends_msn_order(uint32_t srq_b)
{
	struct ep_pipe p;
	struct ep_buf src, d1, d2, d3;
	struct uiw_wc wc[4];
	struct rec r[16];

	open_pair_srq(&p, srq_b);
	assert_int_equal(ep_buf_reg(&src, p.a.pd, 1100, 0), 0);
	assert_int_equal(ep_buf_reg(&d1, p.b.pd, 1000,
				    UIW_ACCESS_LOCAL_WRITE), 0);
	assert_int_equal(ep_buf_reg(&d2, p.b.pd, 1000,
				    UIW_ACCESS_LOCAL_WRITE), 0);
	assert_int_equal(ep_buf_reg(&d3, p.b.pd, 1000,
				    UIW_ACCESS_LOCAL_WRITE), 0);
	ep_fill(src.p, 1100, 9);
	if (srq_b) {
		srq_post(p.b.srq, 61, &d1, 1000);
		srq_post(p.b.srq, 62, &d2, 1000);
		srq_post(p.b.srq, 63, &d3, 1000);
	} else {
		assert_int_equal(ep_post_recv(p.b.qp, 61, &d1, 0, 1000), 0);
		assert_int_equal(ep_post_recv(p.b.qp, 62, &d2, 0, 1000), 0);
	}
	assert_int_equal(ep_post_send(p.a.qp, 1, UIW_WR_SEND, 0, &src, 0,
				      1000, 0, 0, 0), 0);
	assert_int_equal(ep_post_send(p.a.qp, 2, UIW_WR_SEND, 0, &src, 1000,
				      100, 0, 0, 0), 0);
	ep_drain_tx(&p, &p.a);
	assert_int_equal(records(&p.a, r, 16), 4);  /* 3 segments, then 1 */
	feed(&p, &p.b, &r[3], WHOLE);
	feed(&p, &p.b, &r[1], WHOLE);
	assert_int_equal(ep_poll(p.b.cq, wc, 4), 0);
	feed(&p, &p.b, &r[2], WHOLE);
	assert_int_equal(ep_poll(p.b.cq, wc, 4), 0);
	feed(&p, &p.b, &r[0], WHOLE);
	assert_int_equal(ep_poll(p.b.cq, wc, 4), 2);
	assert_int_equal(wc[0].wr_id, 61);
	assert_int_equal(wc[0].byte_len, 1000);
	assert_int_equal(wc[1].wr_id, 62);
	assert_int_equal(wc[1].byte_len, 100);
	assert_memory_equal(d1.p, src.p, 1000);
	assert_memory_equal(d2.p, src.p + 1000, 100);
	p.a.q_len = 0;
	if (srq_b) {
		assert_true(all_are(d3.p, 1000, 0));
		assert_int_equal(uiw_qp_set_error(p.b.qp), 0);
		assert_int_equal(ep_poll(p.b.cq, wc, 4), 0);
		last_wqe(&p.b);
		srq_room(p.b.srq, &d3, 3);
	}
	ep_buf_free(&src);
	ep_buf_free(&d1);
	ep_buf_free(&d2);
	ep_buf_free(&d3);
	assert_int_equal(ep_close(&p), 0);
}

static void test_sends_msn_order(void **state)
{
	(void)state;
	sends_msn_order(0);
}

static void test_srq_msn_order(void **state)
{
	(void)state;
	sends_msn_order(4);
}

/* A QP that took a buffer for a message in progress goes to Error: that
 * buffer completes flushed on its CQ, once; the others stay in the SRQ. */
static void test_srq_flush_taken(void **state)
{
	struct ep_pipe p;
	struct ep_buf src, d;
	struct uiw_wc wc[4];
	struct rec r[16];

	(void)state;
	open_pair_srq(&p, 4);
	assert_int_equal(ep_buf_reg(&src, p.a.pd, 1000, 0), 0);
	assert_int_equal(ep_buf_reg(&d, p.b.pd, 1000,
				    UIW_ACCESS_LOCAL_WRITE), 0);
	ep_fill(src.p, 1000, 3);
	srq_post(p.b.srq, 71, &d, 1000);
	srq_post(p.b.srq, 72, &d, 1000);
	srq_post(p.b.srq, 73, &d, 1000);
	assert_int_equal(ep_post_send(p.a.qp, 1, UIW_WR_SEND, 0, &src, 0,
				      1000, 0, 0, 0), 0);
	ep_drain_tx(&p, &p.a);
	assert_int_equal(records(&p.a, r, 16), 3);
	feed(&p, &p.b, &r[1], WHOLE);
	assert_memory_equal(d.p + 494, src.p + 494, 494);
	assert_int_equal(uiw_qp_set_error(p.b.qp), 0);
	assert_int_equal(uiw_qp_set_error(p.b.qp), 0);
	assert_int_equal(ep_poll(p.b.cq, wc, 4), 1);
	assert_int_equal(wc[0].wr_id, 71);
	assert_int_equal(wc[0].status, UIW_WC_WR_FLUSH_ERR);
	assert_int_equal(wc[0].opcode, UIW_WC_RECV);
	last_wqe(&p.b);
	/* 72 and 73 are still there: room for two more. */
	srq_room(p.b.srq, &d, 2);
	p.a.q_len = 0;
	ep_buf_free(&src);
	ep_buf_free(&d);
	assert_int_equal(ep_close(&p), 0);
}

/* A Write and a Read back, each message's segments reversed: placed by
 * TO; the Read completes once its whole Response is placed. */
static void test_tagged_out_of_order(void **state)
{
	struct ep_pipe p;
	struct ep_buf src, tgt, sink;
	struct uiw_wc wc[4];
	struct rec r[32];
	int n, i;

	(void)state;
	open_pair(&p);
	assert_int_equal(ep_buf_reg(&src, p.a.pd, 3000, 0), 0);
	assert_int_equal(ep_buf_reg(&sink, p.a.pd, 3000,
				    UIW_ACCESS_LOCAL_WRITE), 0);
	assert_int_equal(ep_buf_reg(&tgt, p.b.pd, 3000, ALL_REMOTE), 0);
	ep_fill(src.p, 3000, 3);
	memset(tgt.p, 0, 3000);
	memset(sink.p, 0, 3000);
	assert_int_equal(ep_post_send(p.a.qp, 1, UIW_WR_RDMA_WRITE, 0, &src,
				      0, 3000, tgt.mr->rkey,
				      (uintptr_t)tgt.p, 0), 0);
	assert_int_equal(ep_post_send(p.a.qp, 2, UIW_WR_RDMA_READ, 0, &sink,
				      0, 3000, tgt.mr->rkey,
				      (uintptr_t)tgt.p, 0), 0);
	ep_drain_tx(&p, &p.a);
	n = records(&p.a, r, 32);
	assert_int_equal(n, 7 + 1);  /* 2986 / 498 rounded up, a Request */
	for (i = 6; i >= 0; i--)
		feed(&p, &p.b, &r[i], WHOLE);
	assert_memory_equal(tgt.p, src.p, 3000);
	feed(&p, &p.b, &r[7], WHOLE);
	p.a.q_len = 0;
	ep_drain_tx(&p, &p.b);
	n = records(&p.b, r, 32);
	assert_int_equal(n, 7);
	for (i = 6; i >= 1; i--)
		feed(&p, &p.a, &r[i], WHOLE);
	/* the Write has completed; the Read waits for its first octets */
	assert_int_equal(ep_poll(p.a.cq, wc, 4), 1);
	assert_int_equal(wc[0].wr_id, 1);
	feed(&p, &p.a, &r[0], WHOLE);
	assert_int_equal(ep_poll(p.a.cq, wc, 4), 1);
	assert_int_equal(wc[0].wr_id, 2);
	assert_int_equal(wc[0].status, UIW_WC_SUCCESS);
	assert_int_equal(wc[0].byte_len, 3000);
	assert_memory_equal(sink.p, src.p, 3000);
	p.b.q_len = 0;
	ep_buf_free(&src);
	ep_buf_free(&tgt);
	ep_buf_free(&sink);
	assert_int_equal(ep_close(&p), 0);
}

/* A Write that runs past its region, its segments in pieces (the length
 * of each known only at its end): what lies in the region is placed,
 * nothing beyond it, and the stream ends in the base-and-bounds
 * Terminate (RFC 5041 §7.2). */
static void test_unknown_len_write_bounds(void **state)
{
	struct ep_pipe p;
	struct ep_buf src, tgt;
	struct rec r[16];
	int n, i;

	(void)state;
	open_pair(&p);
	assert_int_equal(ep_buf_reg(&src, p.a.pd, 2000, 0), 0);
	assert_int_equal(ep_buf_reg(&tgt, p.b.pd, 4096, ALL_REMOTE), 0);
	ep_fill(src.p, 2000, 5);
	memset(tgt.p, 0x3c, 4096);
	/* the Write's last 904 octets lie beyond the region */
	assert_int_equal(ep_post_send(p.a.qp, 1, UIW_WR_RDMA_WRITE, 0, &src,
				      0, 2000, tgt.mr->rkey,
				      (uintptr_t)tgt.p + 3000, 0), 0);
	ep_drain_tx(&p, &p.a);
	n = records(&p.a, r, 16);
	assert_int_equal(n, 5);
	for (i = 0; i < n && p.b.attached; i++)
		ep_feed(p.b.qp, r[i].p, r[i].len, 61, &p.rng, 64);
	cause_is(p.b.qp, UIW_E_DDP_T_BASE_BOUNDS);
	assert_true(all_are(tgt.p, 3000, 0x3c));
	assert_memory_equal(tgt.p + 3000, src.p, 498 * 2);
	assert_true(ep_buf_guards_ok(&tgt));
	p.a.q_len = 0;
	ep_buf_free(&src);
	ep_buf_free(&tgt);
	assert_int_equal(ep_close(&p), 0);
}

/* A Send longer than the receive buffer, in pieces: the buffer holds
 * what fits, no octet after it is written, and the Terminate is "too
 * long" (RFC 5041 §7.1). */
static void test_unknown_len_send_too_long(void **state)
{
	struct ep_pipe p;
	struct ep_buf src, dst;
	struct rec r[16];
	struct uiw_wc wc[4];
	int n, i;

	(void)state;
	open_pair(&p);
	assert_int_equal(ep_buf_reg(&src, p.a.pd, 1500, 0), 0);
	assert_int_equal(ep_buf_reg(&dst, p.b.pd, 4096,
				    UIW_ACCESS_LOCAL_WRITE), 0);
	ep_fill(src.p, 1500, 11);
	memset(dst.p, 0x77, 4096);
	assert_int_equal(ep_post_recv(p.b.qp, 70, &dst, 100, 1000), 0);
	assert_int_equal(ep_post_send(p.a.qp, 1, UIW_WR_SEND, 0, &src, 0,
				      1500, 0, 0, 0), 0);
	ep_drain_tx(&p, &p.a);
	n = records(&p.a, r, 16);
	assert_int_equal(n, 4);
	for (i = 0; i < n && p.b.attached; i++)
		ep_feed(p.b.qp, r[i].p, r[i].len, 37, &p.rng, 64);
	cause_is(p.b.qp, UIW_E_DDP_U_TOO_LONG);
	assert_true(all_are(dst.p, 100, 0x77));
	assert_true(all_are(dst.p + 1100, 4096 - 1100, 0x77));
	assert_memory_equal(dst.p + 100, src.p, 494 * 2);
	/* the receive is flushed with the error, not completed */
	assert_int_equal(ep_poll(p.b.cq, wc, 4), 1);
	assert_int_equal(wc[0].wr_id, 70);
	assert_int_not_equal(wc[0].status, UIW_WC_SUCCESS);
	p.a.q_len = 0;
	ep_buf_free(&src);
	ep_buf_free(&dst);
	assert_int_equal(ep_close(&p), 0);
}

/* A Write to an STag that does not exist, in pieces: the check runs at
 * the first placement; nothing is placed anywhere. */
static void test_unknown_len_bad_stag(void **state)
{
	struct ep_pipe p;
	struct ep_buf src, tgt;
	struct rec r[16];
	int n;

	(void)state;
	open_pair(&p);
	assert_int_equal(ep_buf_reg(&src, p.a.pd, 400, 0), 0);
	assert_int_equal(ep_buf_reg(&tgt, p.b.pd, 4096, ALL_REMOTE), 0);
	memset(tgt.p, 0x3c, 4096);
	assert_int_equal(ep_post_send(p.a.qp, 1, UIW_WR_RDMA_WRITE, 0, &src,
				      0, 400, tgt.mr->rkey ^ 0x100,
				      (uintptr_t)tgt.p, 0), 0);
	ep_drain_tx(&p, &p.a);
	n = records(&p.a, r, 16);
	assert_int_equal(n, 1);
	ep_feed(p.b.qp, r[0].p, r[0].len, 50, &p.rng, 64);
	cause_is(p.b.qp, UIW_E_DDP_T_INVALID_STAG);
	assert_true(all_are(tgt.p, 4096, 0x3c));
	assert_true(ep_buf_guards_ok(&tgt));
	p.a.q_len = 0;
	ep_buf_free(&src);
	ep_buf_free(&tgt);
	assert_int_equal(ep_close(&p), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_send_segments_out_of_order),
		cmocka_unit_test(test_sends_msn_order),
		cmocka_unit_test(test_srq_msn_order),
		cmocka_unit_test(test_srq_flush_taken),
		cmocka_unit_test(test_tagged_out_of_order),
		cmocka_unit_test(test_unknown_len_write_bounds),
		cmocka_unit_test(test_unknown_len_send_too_long),
		cmocka_unit_test(test_unknown_len_bad_stag),
	};

	setenv("UIW_EP_FRAMING", "msg-unordered", 1);
	return cmocka_run_group_tests_name("framing seam", tests, NULL, NULL);
}
