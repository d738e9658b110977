/*
 * Conformance: what uiwarp puts on the wire, decoded by the raw peer.
 * The transmit-side MUSTs of RFC 5040 §4-6, RFC 5041 §4-5 and RFC 5044
 * §4 and §7.1.2 that an application exercises by posting work requests:
 * message types on their queues and buffer models, MSNs from one, MOs
 * and TOs advancing, L only on the last segment, segments no larger than
 * MULPDU, no more Reads outstanding than ORD, Read Responses in Request
 * order, and an MPA responder that waits for the initiator's first FPDU.
 * (The Terminate format is checked by every error case: rp_recv_term.)
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "cf_env.h"

#define BIG (256u << 10)
#define MSG 150000u

static void open_big(struct cf_env *e, uint32_t ord)
{
	struct cf_opts o;
	size_t i;

	cf_opts_init(&o);
	o.big_len = BIG;
	o.ord = ord;
	CF_OK(cf_open(e, &o, false));
	for (i = 0; i < BIG; i++)
		e->r[CF_BIG].p[i] = (uint8_t)(i * 31 + (i >> 11));
	cf_mem_placed(e, e->r[CF_BIG].p, e->r[CF_BIG].p, BIG);
}

/* Checks the common header rules of every segment uiwarp sends: DDP and
 * RDMAP versions 1 (RFC 5041 §4.1, RFC 5040 §4.1; uiw_ddp_hdr_decode
 * checked them), reserved bits zero (RFC 5041 §4.1, RFC 5040 §4.1), no
 * larger than MULPDU (RFC 5041 §5.2). */
static void seg_common(struct cf_env *e, const struct rp_seg *s)
{
	struct uiw_qp_attr a;

	cf_qp_state(e, &a);
	assert_int_equal(s->h.ddp_rsvd, 0);
	assert_int_equal(s->ulpdu[1] & UIW_RDMAP_RSVD_MASK, 0);
	if (s->len > a.mulpdu || s->len > 64768)
		fail_msg("segment of %zu octets, MULPDU %u", s->len, a.mulpdu);
}

/* RFC 5040 §5.3 (queue 0, untagged), RFC 5041 §4.3 (MSN from 1, +1 per
 * message, same MSN in every segment, MO from 0 advancing), §4.1 (L on
 * the last segment only), §5.2 (all the data, no segment over MULPDU),
 * RFC 5040 §4.1 (Invalidate STag zero in a plain Send). */
static void test_tx_send_segments(void **state)
{
	struct cf_env *e = *state;
	struct rp_seg *s = &e->seg;
	uint32_t msn;
	size_t got, nseg;

	open_big(e, 0);
	CF_OK(cf_post_send(e, 0x10, UIW_WR_SEND, 0, CF_BIG, 0, MSG, 0, 0));
	CF_OK(cf_post_send(e, 0x11, UIW_WR_SEND, UIW_SEND_SOLICITED, CF_BIG,
			   100, 1000, 0, 0));
	for (msn = 1; msn <= 2; msn++) {
		size_t len = msn == 1 ? MSG : 1000, off = msn == 1 ? 0 : 100;

		for (got = 0, nseg = 0;; nseg++) {
			CF_OK(rp_recv_seg(&e->rp, s));
			seg_common(e, s);
			assert_false(s->h.tagged);
			assert_int_equal(s->h.qn, UIW_QN_SEND);
			assert_int_equal(s->h.opcode, msn == 1 ? UIW_OP_SEND :
						      UIW_OP_SEND_SE);
			assert_int_equal(s->h.msn, msn);
			assert_int_equal(s->h.mo, got);
			assert_int_equal(s->h.rsvd_ulp, 0);
			assert_true(got + s->plen <= len);
			assert_memory_equal(s->pl, e->r[CF_BIG].p + off + got,
					    s->plen);
			got += s->plen;
			if (s->h.last)
				break;
		}
		assert_int_equal(got, len);
		if (msn == 1)
			assert_true(nseg >= 2);  /* MSG > MULPDU: segmented */
	}
	CF_OK(cf_wait_wc(e, e->scq, 0x10, UIW_WC_SUCCESS, NULL));
	CF_OK(cf_wait_wc(e, e->scq, 0x11, UIW_WC_SUCCESS, NULL));
	CF_OK(cf_check_mem(e));
}

/* RFC 5040 §4.1, §4.7: Send with Invalidate carries the STag in the
 * Invalidate STag field, opcode 0100b (0110b with SE). */
static void test_tx_send_inv(void **state)
{
	struct cf_env *e = *state;
	struct uiw_send_wr wr = { .wr_id = 0x20,
				  .opcode = UIW_WR_SEND_WITH_INV,
				  .send_flags = UIW_SEND_SIGNALED,
				  .invalidate_stag = 0x12345678 };
	struct rp_seg *s = &e->seg;
	struct cf_opts o;

	cf_opts_init(&o);
	CF_OK(cf_open(e, &o, false));
	assert_int_equal(uiw_post_send(e->qp, &wr, NULL), 0);
	wr.wr_id = 0x21;
	wr.send_flags |= UIW_SEND_SOLICITED;
	wr.invalidate_stag = 0x9abcdef0;
	assert_int_equal(uiw_post_send(e->qp, &wr, NULL), 0);
	CF_OK(rp_recv_seg(&e->rp, s));
	assert_int_equal(s->h.opcode, UIW_OP_SEND_INV);
	assert_int_equal(s->h.rsvd_ulp, 0x12345678);
	assert_int_equal(s->h.msn, 1);
	CF_OK(rp_recv_seg(&e->rp, s));
	assert_int_equal(s->h.opcode, UIW_OP_SEND_SE_INV);
	assert_int_equal(s->h.rsvd_ulp, 0x9abcdef0);
	assert_int_equal(s->h.msn, 2);
}

/* RFC 5040 §5.1 (tagged, the STag of the work request, one buffer),
 * RFC 5041 §5.2 (TO of each segment = first TO + offset), §4.1 (L). */
static void test_tx_write_segments(void **state)
{
	struct cf_env *e = *state;
	struct rp_seg *s = &e->seg;
	const uint64_t to = 0x00007f0000001000ull;
	size_t got = 0;

	open_big(e, 0);
	CF_OK(cf_post_send(e, 0x30, UIW_WR_RDMA_WRITE, 0, CF_BIG, 7, MSG, to,
			   0xabcd0102));
	for (;;) {
		CF_OK(rp_recv_seg(&e->rp, s));
		seg_common(e, s);
		assert_true(s->h.tagged);
		assert_int_equal(s->h.opcode, UIW_OP_WRITE);
		assert_int_equal(s->h.stag, 0xabcd0102);
		assert_int_equal(s->h.to, to + got);
		assert_memory_equal(s->pl, e->r[CF_BIG].p + 7 + got, s->plen);
		got += s->plen;
		if (s->h.last)
			break;
	}
	assert_int_equal(got, MSG);
	CF_OK(cf_wait_wc(e, e->scq, 0x30, UIW_WC_SUCCESS, NULL));
}

/* RFC 5040 §6.1: "For outbound RDMA Read Requests, the RDMAP layer MUST
 * NOT exceed the maximum number of outstanding, outbound RDMA Read
 * Requests" (ORD 2 here); §5.2.1: untagged, queue 1, one segment, MSNs
 * from 1, the Request in Figure 6's layout; §5.5 rule 19: a Read
 * completes only once its Response is delivered; rule 15: in order. */
static void test_tx_reads_ord(void **state)
{
	struct cf_env *e = *state;
	struct rp_seg *s = &e->seg;
	struct uiw_read_req rr[3];
	uint8_t data[64];
	struct uiw_wc wc;
	int i;

	open_big(e, 2);
	for (i = 0; i < 3; i++)
		CF_OK(cf_post_send(e, 0x40 + i, UIW_WR_RDMA_READ, 0, CF_SINK,
				   (size_t)i * 64, 64,
				   0x1000 + (uint64_t)i * 64, 0x99000000u + i));
	for (i = 0; i < 2; i++) {
		CF_OK(rp_recv_seg(&e->rp, s));
		seg_common(e, s);
		assert_false(s->h.tagged);
		assert_int_equal(s->h.opcode, UIW_OP_READ_REQ);
		assert_int_equal(s->h.qn, UIW_QN_READ_REQ);
		assert_int_equal(s->h.msn, (uint32_t)i + 1);
		assert_int_equal(s->h.mo, 0);
		assert_true(s->h.last);
		assert_int_equal(s->plen, UIW_READ_REQ_LEN);
		uiw_read_req_decode(s->pl, &rr[i]);
		assert_int_equal(rr[i].sink_stag, cf_stag(e, CF_SINK));
		assert_int_equal(rr[i].sink_to, cf_to(e, CF_SINK, 64u * i));
		assert_int_equal(rr[i].size, 64);
		assert_int_equal(rr[i].src_stag, 0x99000000u + i);
		assert_int_equal(rr[i].src_to, 0x1000 + 64u * i);
	}
	/* ORD 2: the third Request waits (a bounded look for silence). */
	assert_int_equal(rp_quiet_for(&e->rp, 200), 1);
	assert_int_equal(uiw_cq_poll(e->scq, 1, &wc), 0);
	memset(data, 0x61, sizeof(data));
	CF_OK(rp_send_read_resp(&e->rp, rr[0].sink_stag, rr[0].sink_to, true,
				data, 64));
	cf_mem_placed(e, e->r[CF_SINK].p, data, 64);
	CF_OK(cf_wait_wc(e, e->scq, 0x40, UIW_WC_SUCCESS, &wc));
	assert_int_equal(wc.opcode, UIW_WC_RDMA_READ);
	CF_OK(rp_recv_seg(&e->rp, s));
	assert_int_equal(s->h.opcode, UIW_OP_READ_REQ);
	assert_int_equal(s->h.msn, 3);
	uiw_read_req_decode(s->pl, &rr[2]);
	for (i = 1; i < 3; i++) {
		memset(data, 0x61 + i, sizeof(data));
		CF_OK(rp_send_read_resp(&e->rp, rr[i].sink_stag,
					rr[i].sink_to, true, data, 64));
		cf_mem_placed(e, e->r[CF_SINK].p + 64 * i, data, 64);
	}
	CF_OK(cf_wait_wc(e, e->scq, 0x41, UIW_WC_SUCCESS, NULL));
	CF_OK(cf_wait_wc(e, e->scq, 0x42, UIW_WC_SUCCESS, NULL));
	CF_OK(cf_check_mem(e));
}

/* RFC 5040 §5.2.1: "The Data Sink MAY issue a zero-length RDMA Read
 * Request"; it completes with the zero-length Response. */
static void test_tx_zero_length_read(void **state)
{
	struct cf_env *e = *state;
	struct rp_seg *s = &e->seg;
	struct uiw_read_req rr;

	open_big(e, 0);
	CF_OK(cf_post_send(e, 0x50, UIW_WR_RDMA_READ, 0, CF_SINK, 0, 0,
			   0x2000, 0x77000001));
	CF_OK(rp_recv_seg(&e->rp, s));
	assert_int_equal(s->h.opcode, UIW_OP_READ_REQ);
	uiw_read_req_decode(s->pl, &rr);
	assert_int_equal(rr.size, 0);
	CF_OK(rp_send_read_resp(&e->rp, rr.sink_stag, rr.sink_to, true, NULL,
				0));
	CF_OK(cf_wait_wc(e, e->scq, 0x50, UIW_WC_SUCCESS, NULL));
}

/* RFC 5040 §5.5 rule 20, §5.2.2: Read Responses go out in the order of
 * their Requests, each tagged to the sink its Request named. */
static void test_tx_read_resp_order(void **state)
{
	struct cf_env *e = *state;
	struct uiw_read_req rr;
	size_t got;
	int i;

	open_big(e, 0);
	for (i = 0; i < 3; i++) {
		rr.sink_stag = 0x5100 + i;
		rr.sink_to = 0x100000 * (uint64_t)(i + 1);
		rr.size = i == 0 ? 100000 : 50 + i;
		rr.src_stag = cf_stag(e, CF_BIG);
		rr.src_to = cf_to(e, CF_BIG, 1000 * (size_t)i);
		CF_OK(rp_send_read_req(&e->rp, &rr));
	}
	for (i = 0; i < 3; i++) {
		assert_int_equal(cf_read_resp(e, 0x5100 + i,
					      0x100000 * (uint64_t)(i + 1),
					      e->r[CF_BIG].p + 1000 * i,
					      i == 0 ? 100000 : 50 + i, &got),
				 0);
	}
	assert_int_equal(cf_qp_state(e, NULL), UIW_QPS_RTS);
}

/* The most a TCP send buffer may hold here: net.ipv4.tcp_wmem's maximum
 * (autotuning), or twice net.core.wmem_max (an explicit SO_SNDBUF, which
 * the kernel doubles); at least 8 MiB. */
static size_t tcp_wmem_max(void)
{
	unsigned long a, b, c;
	FILE *f = fopen("/proc/sys/net/ipv4/tcp_wmem", "r");
	size_t v = 8u << 20;

	if (f) {
		if (fscanf(f, "%lu %lu %lu", &a, &b, &c) == 3 && c > v)
			v = c;
		fclose(f);
	}
	f = fopen("/proc/sys/net/core/wmem_max", "r");
	if (f) {
		if (fscanf(f, "%lu", &c) == 1 && 2 * c > v)
			v = 2 * c;
		fclose(f);
	}
	return v;
}

/* RFC 5040 §5.5 rule 14: "A Send or RDMA Write Message MUST NOT be
 * considered Complete at the Local Peer (Data Source) until it has been
 * successfully completed at the DDP layer" -- here, until TCP has taken
 * its last octet.  A Send larger than any TCP send buffer here plus what
 * uiwarp builds ahead, to a raw peer that reads nothing (its receive
 * buffer is tiny), cannot have gone out, so it has not completed; once
 * the raw peer has read it all, it completes. */
static void test_tx_send_completes_after_sent(void **state)
{
	struct cf_env *e = *state;
	const size_t len = tcp_wmem_max() + (4u << 20);
	struct rp_seg *s = &e->seg;
	int big_rcvbuf = 1 << 20;
	struct uiw_wc wc;
	struct cf_opts o;
	size_t got = 0;

	cf_opts_init(&o);
	o.big_len = len;
	o.raw_rcvbuf = 4096;
	CF_OK(cf_open(e, &o, false));
	CF_OK(cf_post_send(e, 0x70, UIW_WR_SEND, 0, CF_BIG, 0, (uint32_t)len,
			   0, 0));
	CF_OK(rp_recv_seg(&e->rp, s));      /* it has started */
	got = s->plen;
	if (uiw_cq_poll(e->scq, 1, &wc) != 0)
		fail_msg("the Send completed (%s, %u octets) when %zu of %zu "
			 "octets had reached the peer",
			 uiw_wc_status_str(wc.status), wc.byte_len, got, len);
	/* Read the rest faster. */
	CF_OK(rp_set_rcvbuf(&e->rp, big_rcvbuf));
	while (!s->h.last) {
		CF_OK(rp_recv_seg(&e->rp, s));
		assert_int_equal(s->h.mo, got);
		got += s->plen;
	}
	assert_int_equal(got, len);
	CF_OK(cf_wait_wc(e, e->scq, 0x70, UIW_WC_SUCCESS, &wc));
	assert_int_equal(wc.byte_len, len);
}

/* RFC 5044 §7.1.2 rule 4: an MPA responder sends no FPDU (nor marker)
 * before it has received and validated one; then what was posted goes
 * out. */
static void test_tx_responder_waits(void **state)
{
	struct cf_env *e = *state;
	struct rp_seg *s = &e->seg;
	struct cf_opts o;

	cf_opts_init(&o);
	CF_OK(cf_setup(e, &o));
	CF_OK(cf_connect(e));
	memcpy(e->r[CF_SRC].p, "early", 5);
	cf_mem_placed(e, e->r[CF_SRC].p, "early", 5);
	CF_OK(cf_post_send(e, 0x60, UIW_WR_SEND, 0, CF_SRC, 0, 5, 0, 0));
	assert_int_equal(rp_quiet_for(&e->rp, 200), 1);
	CF_OK(cf_prime(e));
	CF_OK(rp_recv_seg(&e->rp, s));
	assert_int_equal(s->h.opcode, UIW_OP_SEND);
	assert_int_equal(s->plen, 5);
	assert_memory_equal(s->pl, "early", 5);
	CF_OK(cf_wait_wc(e, e->scq, 0x60, UIW_WC_SUCCESS, NULL));
	CF_OK(cf_check_mem(e));
}

#define T(name) cmocka_unit_test_setup_teardown(test_##name, cf_state_new, cf_state_free)

int main(void)
{
	/* Over SCTP (RFC 5043). */
	static const struct cf_mpa_only mpa_only[] = {
		{ "test_tx_responder_waits", "RFC 5044 §7.1.2 rule 4 (an MPA "
		  "responder waits for the first FPDU); over SCTP either "
		  "side may send first (RFC 6581 §7)" },
		{ NULL, NULL },
	};
	const struct CMUnitTest tests[] = {
		T(tx_send_segments),
		T(tx_send_inv),
		T(tx_write_segments),
		T(tx_reads_ord),
		T(tx_zero_length_read),
		T(tx_read_resp_order),
		T(tx_send_completes_after_sent),
		T(tx_responder_waits),
	};

	return cf_run_tests("conformance: transmit", tests,
			    sizeof(tests) / sizeof(tests[0]), mpa_only);
}
