/*
 * The RTR of RFC 6581 §9.2 in the engine (rnic/rtr.c), without sockets:
 * an initiator's first FPDU is the RTR, a responder consumes it without
 * a receive or a completion and sends nothing before it, a Read RTR is
 * answered with a zero-length Read Response and counts against the
 * initiator's ORD until then, and a wrong first FPDU ends the stream
 * with the Terminate "no matching RTR option" (2/0/7).  Streams are
 * split one octet at a time, at random, and in 7-octet pieces.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include <uiwarp/cm.h>

#include "engine_pipe.h"
#include "wire/mpa.h"

#define ALL_REMOTE (UIW_ACCESS_LOCAL_WRITE | UIW_ACCESS_REMOTE_WRITE | \
		    UIW_ACCESS_REMOTE_READ)

static void qp_state_is(struct uiw_qp *qp, enum uiw_qp_state s)
{
	struct uiw_qp_attr a;

	assert_int_equal(uiw_qp_query(qp, &a), 0);
	if (a.state != s)
		fail_msg("QP state %s, expected %s (%s)",
			 uiw_qp_state_str(a.state), uiw_qp_state_str(s),
			 a.term_msg);
}

/* The first FPDU of a stream (stream position 0). */
static uint16_t first_ulpdu(const struct ep_side *s, bool markers, bool crc,
			    uint8_t *u, size_t cap, size_t *flen)
{
	uint16_t ulen = 0;

	assert_int_equal(uiw_mpa_fpdu_decode(s->out, s->out_len, 0, markers,
					     crc, u, cap, &ulen, flen),
			 UIW_OK);
	assert_true(*flen > 0);
	return ulen;
}

/* Finds the completion of wr_id among n. */
static const struct uiw_wc *wc_find(const struct uiw_wc *wc, int n,
				    uint64_t id)
{
	int i;

	for (i = 0; i < n; i++)
		if (wc[i].wr_id == id)
			return &wc[i];
	fail_msg("no completion for wr_id %llu", (unsigned long long)id);
	return NULL;
}

/*
 * a (initiator, RTR type t) and b (responder, accepting mask) with work
 * posted on both sides before the connection is up: a Send each way and
 * an RDMA Read from a with ORD 1.  After the exchange every work request
 * completed once, nothing else did, and the data is right.
 */
static void run_rtr(uint8_t t, uint8_t mask, bool crc, bool markers,
		    size_t split)
{
	struct ep_cfg cfg = { .crc = crc, .markers = markers, .hold_b = true,
			      .ird = 1, .ord = 1 };
	struct ep_pipe p;
	struct ep_buf sa, ra, sb, rb, src;
	struct uiw_wc wc[8];
	unsigned ops[16];
	uint8_t u[128];
	uint16_t ulen;
	size_t flen;
	int n;

	print_message("RTR %u (accepting %u) crc %d markers %d split %zu\n",
		      t, mask, crc, markers, split);
	assert_int_equal(ep_open_idle(&p, &cfg), 0);
	p.split = split;
	p.a.lp.rtr_send = t;
	p.b.lp.rtr_recv = mask;
	p.b.lp.setup_term = true;  /* an enhanced responder, as cm_ops.c */
	assert_int_equal(ep_buf_reg(&sa, p.a.pd, 100, 0), 0);
	assert_int_equal(ep_buf_reg(&ra, p.a.pd, 400, UIW_ACCESS_LOCAL_WRITE),
			 0);
	assert_int_equal(ep_buf_reg(&sb, p.b.pd, 100, 0), 0);
	assert_int_equal(ep_buf_reg(&rb, p.b.pd, 100, UIW_ACCESS_LOCAL_WRITE),
			 0);
	assert_int_equal(ep_buf_reg(&src, p.b.pd, 64, ALL_REMOTE), 0);
	ep_fill(sa.p, 100, 1);
	ep_fill(sb.p, 100, 2);
	ep_fill(src.p, 64, 3);
	assert_int_equal(ep_post_recv(p.a.qp, 10, &ra, 0, 100), 0);
	assert_int_equal(ep_post_recv(p.b.qp, 20, &rb, 0, 100), 0);
	assert_int_equal(ep_post_send(p.b.qp, 2, UIW_WR_SEND, 0, &sb, 0, 50,
				      0, 0, 0), 0);
	assert_int_equal(ep_post_send(p.a.qp, 1, UIW_WR_SEND, 0, &sa, 0, 60,
				      0, 0, 0), 0);
	assert_int_equal(ep_post_send(p.a.qp, 3, UIW_WR_RDMA_READ, 0, &ra,
				      200, 64, src.mr->rkey,
				      (uintptr_t)src.p, 0), 0);
	assert_int_equal(ep_attach(&p), 0);
	assert_true(p.a.kicks >= 1);
	assert_int_equal(p.b.kicks, 0);

	/* The initiator's first FPDU is the RTR, before its Send. */
	ep_drain_tx(&p, &p.a);
	ulen = first_ulpdu(&p.a, markers, crc, u, sizeof(u), &flen);
	switch (t) {
	case UIW_RTR_WRITE:
		/* Tagged, L, Write, STag 1, TO 0; no payload. */
		assert_int_equal(ulen, 14);
		assert_memory_equal(u, "\xc1\x40\x00\x00\x00\x01"
				    "\0\0\0\0\0\0\0\0", 14);
		/* Octet for octet what siw sends (SIW-FACTS.md). */
		if (crc && !markers)
			assert_memory_equal(p.a.out, "\x00\x0e\xc1\x40"
					    "\0\0\0\x01\0\0\0\0\0\0\0\0"
					    "\xeb\xd3\x4c\x5f", 20);
		break;
	case UIW_RTR_SEND:
		/* Untagged, L, Send, queue 0, MSN 1, MO 0. */
		assert_int_equal(ulen, 18);
		assert_memory_equal(u, "\x41\x43\0\0\0\0\0\0\0\0\0\0\0\x01"
				    "\0\0\0\0", 18);
		break;
	case UIW_RTR_READ:
		/* Queue 1, MSN 1; sink STag 1, TO 0, size 0, source STag
		 * 1, TO 0. */
		assert_int_equal(ulen, 18 + 28);
		assert_memory_equal(u, "\x41\x41\0\0\0\0\0\0\0\x01\0\0\0\x01"
				    "\0\0\0\0", 18);
		assert_memory_equal(u + 18, "\0\0\0\x01\0\0\0\0\0\0\0\0"
				    "\0\0\0\0\0\0\0\x01\0\0\0\0\0\0\0\0", 28);
		/* ORD 1 and the RTR outstanding: the Read waits. */
		assert_int_equal(ep_count_fpdus(p.a.out, p.a.out_len, markers,
						crc, ops), 2);
		assert_int_equal(ops[UIW_OP_READ_REQ], 1);
		assert_int_equal(ops[UIW_OP_SEND], 1);
		break;
	}
	/* b holds until then. */
	assert_int_equal(ep_drain_tx(&p, &p.b), 0);
	ep_pump(&p);

	n = ep_poll(p.a.cq, wc, 8);
	assert_int_equal(n, 3);
	assert_int_equal(wc_find(wc, n, 1)->status, UIW_WC_SUCCESS);
	assert_int_equal(wc_find(wc, n, 3)->status, UIW_WC_SUCCESS);
	assert_int_equal(wc_find(wc, n, 10)->status, UIW_WC_SUCCESS);
	assert_int_equal(wc_find(wc, n, 10)->byte_len, 50);
	n = ep_poll(p.b.cq, wc, 8);
	/* No completion for the RTR: the receive took the real Send. */
	assert_int_equal(n, 2);
	assert_int_equal(wc_find(wc, n, 2)->status, UIW_WC_SUCCESS);
	assert_int_equal(wc_find(wc, n, 20)->status, UIW_WC_SUCCESS);
	assert_int_equal(wc_find(wc, n, 20)->byte_len, 60);
	assert_memory_equal(rb.p, sa.p, 60);
	assert_memory_equal(ra.p, sb.p, 50);
	assert_memory_equal(ra.p + 200, src.p, 64);
	qp_state_is(p.a.qp, UIW_QPS_RTS);
	qp_state_is(p.b.qp, UIW_QPS_RTS);

	/* What crossed: one message more than the work requests. */
	assert_int_equal(ep_count_fpdus(p.a.out, p.a.out_len, markers, crc,
					ops), 3);
	assert_int_equal(ops[UIW_OP_SEND], 1 + (t == UIW_RTR_SEND));
	assert_int_equal(ops[UIW_OP_READ_REQ], 1 + (t == UIW_RTR_READ));
	assert_int_equal(ops[UIW_OP_WRITE], t == UIW_RTR_WRITE);
	assert_int_equal(ep_count_fpdus(p.b.out, p.b.out_len, markers, crc,
					ops), 2 + (t == UIW_RTR_READ));
	assert_int_equal(ops[UIW_OP_READ_RESP], 1 + (t == UIW_RTR_READ));
	assert_int_equal(ops[UIW_OP_SEND], 1);
	/* The responder's first FPDU: the Read RTR's zero-length Response
	 * to sink STag 1, TO 0, or one with data. */
	ulen = first_ulpdu(&p.b, markers, crc, u, sizeof(u), &flen);
	if (t == UIW_RTR_READ) {
		assert_int_equal(ulen, 14);
		assert_memory_equal(u, "\xc1\x42\x00\x00\x00\x01"
				    "\0\0\0\0\0\0\0\0", 14);
	} else {
		/* Its Send, or the Response to the initiator's Read. */
		assert_true((u[1] & 0xf) == UIW_OP_SEND ?
			    ulen == 18 + 50 : ulen == 14 + 64);
	}

	/* Later messages are ordinary: the next Send takes MSN 2. */
	assert_int_equal(ep_post_recv(p.b.qp, 21, &rb, 0, 100), 0);
	assert_int_equal(ep_post_send(p.a.qp, 4, UIW_WR_SEND, 0, &sa, 10, 5,
				      0, 0, 0), 0);
	ep_pump(&p);
	assert_int_equal(ep_poll(p.a.cq, wc, 8), 1);
	assert_int_equal(ep_poll(p.b.cq, wc, 8), 1);
	assert_int_equal(wc[0].wr_id, 21);
	assert_int_equal(wc[0].byte_len, 5);
	assert_memory_equal(rb.p, sa.p + 10, 5);
	ep_buf_free(&sa);
	ep_buf_free(&ra);
	ep_buf_free(&sb);
	ep_buf_free(&rb);
	ep_buf_free(&src);
	assert_int_equal(ep_close(&p), 0);
}

static void test_rtr_types(void **state)
{
	static const uint8_t types[] = { UIW_RTR_SEND, UIW_RTR_WRITE,
					 UIW_RTR_READ };
	static const size_t splits[] = { 1, 0, 7 };
	size_t i, j;

	(void)state;
	for (i = 0; i < 3; i++) {
		for (j = 0; j < 3; j++) {
			run_rtr(types[i], types[i], true, false, splits[j]);
			run_rtr(types[i], UIW_RTR_ALL, false, true,
				splits[j]);
		}
		run_rtr(types[i], UIW_RTR_ALL, true, true, 0);
	}
}

/* ---- The responder's first FPDU ---------------------------------------- */

/* b (responder accepting mask, ORD/IRD 4) gets bytes as its first
 * FPDUs, one octet at a time.  Returns after checking b is in Error. */
static void feed_b(struct ep_pipe *p, uint8_t mask, const uint8_t *bytes,
		   size_t len, struct ep_buf *rcv)
{
	struct ep_cfg cfg = { .crc = true, .hold_b = true, .ird = 4,
			      .ord = 4 };
	uint64_t rng = 5;

	assert_int_equal(ep_open_idle(p, &cfg), 0);
	p->b.lp.rtr_recv = mask;
	p->b.lp.setup_term = true;  /* an enhanced responder, as cm_ops.c */
	assert_int_equal(ep_attach(p), 0);
	assert_int_equal(ep_buf_reg(rcv, p->b.pd, 64, UIW_ACCESS_LOCAL_WRITE),
			 0);
	assert_int_equal(ep_post_recv(p->b.qp, 9, rcv, 0, 64), 0);
	ep_feed(p->b.qp, bytes, len, 1, &rng, 64);
	ep_drain_tx(p, &p->b);
}

static size_t fpdu_of(uint8_t *out, size_t cap, uint64_t pos,
		      const struct uiw_ddp_hdr *h, const void *payload,
		      size_t plen)
{
	static struct ep_ulpdu u;

	u.len = 0;
	ep_ulpdu_hdr(&u, h);
	if (plen)
		ep_ulpdu_put(&u, payload, plen);
	return ep_fpdu(out, cap, pos, &u, false, true);
}

/* The first FPDU is not the RTR agreed on: Terminate 2/0/7, nothing
 * placed, the receive flushed. */
static void wrong_first(uint8_t mask, const struct uiw_ddp_hdr *h,
			const void *payload, size_t plen, const char *what)
{
	struct ep_pipe p;
	struct ep_buf rcv;
	struct uiw_ddp_hdr th;
	struct uiw_term t;
	struct uiw_qp_attr a;
	struct uiw_wc wc[4];
	uint8_t b[256];
	size_t n = fpdu_of(b, sizeof(b), 0, h, payload, plen);

	print_message("%s\n", what);
	feed_b(&p, mask, b, n, &rcv);
	qp_state_is(p.b.qp, UIW_QPS_ERROR);
	assert_int_equal(uiw_qp_query(p.b.qp, &a), 0);
	assert_int_equal(a.term.layer, 2);
	assert_int_equal(a.term.etype, 0);
	assert_int_equal(a.term.ecode, 7);
	assert_int_equal(a.term.origin, UIW_TERM_LOCAL);
	assert_int_equal(ep_find_term(p.b.out, p.b.out_len, false, true, &th,
				      &t), 0);
	assert_int_equal(t.err, UIW_E_MPA_NO_MATCHING_RTR);
	/* Nothing else went out: the Terminate is b's only FPDU. */
	{
		unsigned ops[16];

		assert_int_equal(ep_count_fpdus(p.b.out, p.b.out_len, false,
						true, ops), 1);
	}
	assert_int_equal(ep_poll(p.b.cq, wc, 4), 1);
	assert_int_equal(wc[0].wr_id, 9);
	assert_int_equal(wc[0].status, UIW_WC_WR_FLUSH_ERR);
	ep_buf_free(&rcv);
	assert_int_equal(ep_close(&p), 0);
}

static void test_rtr_wrong_first_fpdu(void **state)
{
	static const uint8_t data[10] = "0123456789";
	uint8_t rr[28] = { 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0,
			   0, 0, 0, 5, 0, 0, 0, 1 };  /* size 5 */
	struct uiw_ddp_hdr h;

	(void)state;
	ep_hdr_send(&h, UIW_OP_SEND, 1, 0, true, 0);
	wrong_first(UIW_RTR_WRITE, &h, NULL, 0, "Send RTR, Write agreed");
	wrong_first(UIW_RTR_SEND, &h, data, 10, "a Send with data first");
	ep_hdr_send(&h, UIW_OP_SEND, 2, 0, true, 0);
	wrong_first(UIW_RTR_SEND, &h, NULL, 0, "Send RTR with MSN 2");
	ep_hdr_send(&h, UIW_OP_SEND_SE, 1, 0, true, 0);
	wrong_first(UIW_RTR_SEND, &h, NULL, 0, "Send with SE as RTR");
	ep_hdr_write(&h, UIW_OP_WRITE, 1, 0, true);
	wrong_first(UIW_RTR_SEND | UIW_RTR_READ, &h, NULL, 0,
		    "Write RTR, Send or Read agreed");
	wrong_first(UIW_RTR_WRITE, &h, data, 10, "a Write with data first");
	ep_hdr_write(&h, UIW_OP_WRITE, 1, 0, false);
	wrong_first(UIW_RTR_WRITE, &h, NULL, 0, "Write RTR without L");
	ep_hdr_untagged(&h, UIW_OP_READ_REQ, 1, 1, 0, true);
	wrong_first(UIW_RTR_READ, &h, rr, 28, "Read RTR of 5 octets");
	memset(rr + 12, 0, 4);
	wrong_first(UIW_RTR_WRITE, &h, rr, 28, "Read RTR, Write agreed");
	ep_hdr_write(&h, UIW_OP_READ_RESP, 1, 0, true);
	wrong_first(UIW_RTR_ALL, &h, NULL, 0, "a Read Response first");
}

/* A Terminate may come instead of the RTR (an initiator that could not
 * agree, RFC 6581 §9): taken as such, none sent back. */
static void test_rtr_terminate_first(void **state)
{
	static const uint8_t tp[4] = { 0x20, 0x07, 0, 0 };
	struct ep_pipe p;
	struct ep_buf rcv;
	struct uiw_ddp_hdr h;
	struct uiw_qp_attr a;
	uint8_t b[64];
	size_t n;

	(void)state;
	ep_hdr_untagged(&h, UIW_OP_TERMINATE, 2, 1, 0, true);
	n = fpdu_of(b, sizeof(b), 0, &h, tp, 4);
	feed_b(&p, UIW_RTR_WRITE, b, n, &rcv);
	assert_int_equal(uiw_qp_query(p.b.qp, &a), 0);
	assert_int_not_equal(a.state, UIW_QPS_RTS);
	assert_int_equal(a.term.origin, UIW_TERM_REMOTE);
	assert_int_equal(a.term.layer, 2);
	assert_int_equal(a.term.ecode, 7);
	assert_int_equal(p.b.out_len, 0);
	ep_buf_free(&rcv);
	assert_int_equal(ep_close(&p), 0);
}

/* siw's Write RTR as SIW-FACTS.md shows it (CRC on), one octet at a
 * time: consumed, then the responder's own FPDU goes. */
static void test_rtr_siw_write_bytes(void **state)
{
	static const uint8_t siw_rtr[20] = {
		0x00, 0x0e, 0xc1, 0x40, 0x00, 0x00, 0x00, 0x01,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0xeb, 0xd3, 0x4c, 0x5f,
	};
	struct ep_cfg cfg = { .crc = true, .hold_b = true };
	struct ep_pipe p;
	struct ep_buf rcv, snd;
	struct uiw_wc wc[4];
	unsigned ops[16];
	uint64_t rng = 9;

	(void)state;
	assert_int_equal(ep_open_idle(&p, &cfg), 0);
	p.b.lp.rtr_recv = UIW_RTR_WRITE | UIW_RTR_READ;
	p.b.lp.setup_term = true;
	assert_int_equal(ep_buf_reg(&rcv, p.b.pd, 64, UIW_ACCESS_LOCAL_WRITE),
			 0);
	assert_int_equal(ep_buf_reg(&snd, p.b.pd, 64, 0), 0);
	assert_int_equal(ep_post_recv(p.b.qp, 9, &rcv, 0, 64), 0);
	assert_int_equal(ep_post_send(p.b.qp, 8, UIW_WR_SEND, 0, &snd, 0, 32,
				      0, 0, 0), 0);
	assert_int_equal(ep_attach(&p), 0);
	assert_int_equal(ep_drain_tx(&p, &p.b), 0);
	assert_int_equal(ep_feed(p.b.qp, siw_rtr, sizeof(siw_rtr), 1, &rng,
				 64), sizeof(siw_rtr));
	ep_drain_tx(&p, &p.b);
	qp_state_is(p.b.qp, UIW_QPS_RTS);
	assert_int_equal(ep_count_fpdus(p.b.out, p.b.out_len, false, true,
					ops), 1);
	assert_int_equal(ops[UIW_OP_SEND], 1);
	/* Only the Send's completion; the receive is still posted. */
	assert_int_equal(ep_poll(p.b.cq, wc, 4), 1);
	assert_int_equal(wc[0].wr_id, 8);
	ep_buf_free(&rcv);
	ep_buf_free(&snd);
	assert_int_equal(ep_close(&p), 0);
}

/* The initiator's Read RTR gets a Response with data: refused. */
static void test_rtr_read_response_with_data(void **state)
{
	struct ep_cfg cfg = { .crc = true, .hold_b = true };
	struct ep_pipe p;
	struct uiw_ddp_hdr h, th;
	struct uiw_term t;
	uint8_t b[64];
	size_t n;
	uint64_t rng = 1;

	(void)state;
	assert_int_equal(ep_open_idle(&p, &cfg), 0);
	p.a.lp.rtr_send = UIW_RTR_READ;
	assert_int_equal(ep_attach(&p), 0);
	ep_drain_tx(&p, &p.a);
	ep_hdr_write(&h, UIW_OP_READ_RESP, 1, 0, true);
	n = fpdu_of(b, sizeof(b), 0, &h, "abcd", 4);
	ep_feed(p.a.qp, b, n, 0, &rng, 64);
	p.a.out_len = 0;
	ep_drain_tx(&p, &p.a);
	qp_state_is(p.a.qp, UIW_QPS_ERROR);
	assert_int_equal(ep_find_term(p.a.out, p.a.out_len, false, true, &th,
				      &t), 0);
	assert_int_equal(t.err, UIW_E_DDP_T_BASE_BOUNDS);
	assert_int_equal(ep_close(&p), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rtr_types),
		cmocka_unit_test(test_rtr_wrong_first_fpdu),
		cmocka_unit_test(test_rtr_terminate_first),
		cmocka_unit_test(test_rtr_siw_write_bytes),
		cmocka_unit_test(test_rtr_read_response_with_data),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
