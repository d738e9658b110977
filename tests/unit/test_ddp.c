/* DDP/RDMAP headers, RDMA Read Request, Terminate (RFC 5040 §4.8 with
 * the SIW-FACTS vectors and siw's swapped layout). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "wire/ddp.h"

static uint8_t *exact(const uint8_t *src, size_t len)
{
	uint8_t *p = malloc(len ? len : 1);

	assert_non_null(p);
	if (len)
		memcpy(p, src, len);
	return p;
}

/* RFC 5044 Figure 5's DDP segment header: untagged Send, L, MSN 1. */
static const uint8_t send_hdr[18] = {
	0x41, 0x43, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00,
};

/* SIW-FACTS: siw's RTR, a zero-length RDMA Write to STag 1, TO 0. */
static const uint8_t rtr_hdr[14] = {
	0xc1, 0x40, 0x00, 0x00, 0x00, 0x01,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
};

static void test_hdr_vectors(void **state)
{
	struct uiw_ddp_hdr h;
	uint8_t out[18];
	size_t n;

	(void)state;
	assert_int_equal(uiw_ddp_hdr_decode(send_hdr, 18, &h, &n), UIW_OK);
	assert_int_equal(n, 18);
	assert_false(h.tagged);
	assert_true(h.last);
	assert_int_equal(h.ddp_ver, 1);
	assert_int_equal(h.rdmap_ver, 1);
	assert_int_equal(h.opcode, UIW_OP_SEND);
	assert_int_equal(h.qn, UIW_QN_SEND);
	assert_int_equal(h.msn, 1);
	assert_int_equal(h.mo, 0);
	assert_int_equal(uiw_ddp_hdr_encode(out, &h), 18);
	assert_memory_equal(out, send_hdr, 18);

	assert_int_equal(uiw_ddp_hdr_decode(rtr_hdr, 14, &h, &n), UIW_OK);
	assert_int_equal(n, 14);
	assert_true(h.tagged);
	assert_true(h.last);
	assert_int_equal(h.opcode, UIW_OP_WRITE);
	assert_int_equal(h.stag, 1);
	assert_int_equal(h.to, 0);
	assert_int_equal(uiw_ddp_hdr_encode(out, &h), 14);
	assert_memory_equal(out, rtr_hdr, 14);
}

static void assert_hdr_equal(const struct uiw_ddp_hdr *a,
			     const struct uiw_ddp_hdr *b)
{
	assert_int_equal(a->tagged, b->tagged);
	assert_int_equal(a->last, b->last);
	assert_int_equal(a->ddp_rsvd, b->ddp_rsvd);
	assert_int_equal(a->ddp_ver, b->ddp_ver);
	assert_int_equal(a->rdmap_ver, b->rdmap_ver);
	assert_int_equal(a->opcode, b->opcode);
	assert_int_equal(a->stag, b->stag);
	assert_int_equal(a->to, b->to);
	assert_int_equal(a->rsvd_ulp, b->rsvd_ulp);
	assert_int_equal(a->qn, b->qn);
	assert_int_equal(a->msn, b->msn);
	assert_int_equal(a->mo, b->mo);
}

static void test_hdr_roundtrip(void **state)
{
	struct uiw_ddp_hdr h, g;
	uint8_t out[18];
	size_t n;
	unsigned op, i;

	(void)state;
	for (op = 0; op < 16; op++)
		for (i = 0; i < 4; i++) {
			memset(&h, 0, sizeof(h));
			h.tagged = i & 1;
			h.last = i & 2;
			h.ddp_ver = UIW_DDP_VERSION;
			h.rdmap_ver = UIW_RDMAP_VERSION;
			h.opcode = (uint8_t)op;
			if (h.tagged) {
				h.stag = 0x01020304u * (op + 1);
				h.to = 0xfedcba9876543210ull ^ op;
			} else {
				h.rsvd_ulp = 0xdeadbeefu ^ op;
				h.qn = op % 4;
				h.msn = 0xffffffffu - op;
				h.mo = 0x80000000u + op;
			}
			n = uiw_ddp_hdr_encode(out, &h);
			assert_int_equal(n, uiw_ddp_hdr_len(out[0]));
			assert_int_equal(n, h.tagged ? 14 : 18);
			assert_int_equal(uiw_ddp_hdr_decode(out, sizeof(out),
							    &g, &n), UIW_OK);
			assert_int_equal(n, h.tagged ? 14 : 18);
			assert_hdr_equal(&g, &h);
		}
	/* Send with Invalidate: the STag is RsvdULP[8:39] */
	memset(&h, 0, sizeof(h));
	h.ddp_ver = h.rdmap_ver = 1;
	h.last = true;
	h.opcode = UIW_OP_SEND_INV;
	h.rsvd_ulp = 0x11223344u;
	uiw_ddp_hdr_encode(out, &h);
	assert_int_equal(out[1], 0x44);
	assert_int_equal(out[2], 0x11);
	assert_int_equal(out[5], 0x44);
}

static void test_hdr_versions(void **state)
{
	struct uiw_ddp_hdr h;
	uint8_t b[18];
	size_t n;
	unsigned dv, rv;

	(void)state;
	for (dv = 0; dv < 4; dv++)
		for (rv = 0; rv < 4; rv++) {
			uiw_err_t want_t, want_u;

			if (dv != 1) {
				want_t = UIW_E_DDP_T_INVALID_VERSION;
				want_u = UIW_E_DDP_U_INVALID_VERSION;
			} else if (rv != 1) {
				want_t = want_u = UIW_E_RDMAP_INVALID_VERSION;
			} else {
				want_t = want_u = UIW_OK;
			}
			memcpy(b, send_hdr, 18);
			b[0] = (uint8_t)((b[0] & ~3u) | dv);
			b[1] = (uint8_t)((b[1] & 0x3fu) | rv << 6);
			assert_int_equal(uiw_ddp_hdr_decode(b, 18, &h, &n),
					 want_u);
			assert_int_equal(n, 18);
			assert_int_equal(h.msn, 1);     /* fields kept */
			memcpy(b, rtr_hdr, 14);
			b[0] = (uint8_t)((b[0] & ~3u) | dv);
			b[1] = (uint8_t)((b[1] & 0x3fu) | rv << 6);
			assert_int_equal(uiw_ddp_hdr_decode(b, 14, &h, &n),
					 want_t);
			assert_int_equal(h.stag, 1);
			/* versions are judged from their own octet */
			if (dv != 1) {
				assert_int_equal(uiw_ddp_hdr_decode(b, 1, &h,
								    &n),
						 want_t);
				assert_int_equal(n, 0);
			} else if (rv != 1) {
				assert_int_equal(uiw_ddp_hdr_decode(b, 2, &h,
								    &n),
						 want_t);
				assert_int_equal(n, 0);
			}
		}
}

static void test_hdr_truncated(void **state)
{
	struct uiw_ddp_hdr h;
	uint8_t *b;
	size_t k, n;

	(void)state;
	for (k = 0; k < 18; k++) {
		b = exact(send_hdr, k);
		assert_int_equal(uiw_ddp_hdr_decode(b, k, &h, &n), UIW_OK);
		assert_int_equal(n, 0);
		free(b);
	}
	for (k = 0; k < 14; k++) {
		b = exact(rtr_hdr, k);
		assert_int_equal(uiw_ddp_hdr_decode(b, k, &h, &n), UIW_OK);
		assert_int_equal(n, 0);
		free(b);
	}
	/* reserved bits are not checked */
	b = exact(send_hdr, 18);
	b[0] |= UIW_DDP_RSVD_MASK;
	b[1] |= UIW_RDMAP_RSVD_MASK;
	assert_int_equal(uiw_ddp_hdr_decode(b, 18, &h, &n), UIW_OK);
	assert_int_equal(h.ddp_rsvd, 0xf);
	assert_int_equal(h.opcode, UIW_OP_SEND);
	free(b);
}

static void test_read_req(void **state)
{
	static const uint8_t want[28] = {
		0x00, 0x00, 0x12, 0x34,                         /* SinkSTag */
		0x00, 0x00, 0x7f, 0xff, 0x00, 0x10, 0x20, 0x30, /* SinkTO */
		0x00, 0x01, 0x00, 0x00,                         /* RDMARDSZ */
		0xab, 0xcd, 0xef, 0x01,                         /* SrcSTag */
		0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x08, /* SrcTO */
	};
	struct uiw_read_req r = {
		.sink_stag = 0x1234, .sink_to = 0x00007fff00102030ull,
		.size = 65536, .src_stag = 0xabcdef01u,
		.src_to = 0x8000000000000008ull,
	};
	struct uiw_read_req g;
	uint8_t out[28];

	(void)state;
	uiw_read_req_encode(out, &r);
	assert_memory_equal(out, want, 28);
	uiw_read_req_decode(want, &g);
	assert_int_equal(g.sink_stag, r.sink_stag);
	assert_int_equal(g.sink_to, r.sink_to);
	assert_int_equal(g.size, r.size);
	assert_int_equal(g.src_stag, r.src_stag);
	assert_int_equal(g.src_to, r.src_to);
}

/* ---- Terminate ------------------------------------------------------- */

/* A Send to queue 7 (invalid QN) as the terminated segment. */
static void bad_qn_hdr(uint8_t h[18])
{
	memcpy(h, send_hdr, 18);
	h[9] = 7;
}

/* SIW-FACTS: DDP untagged buffer error, invalid QN, with M and D:
 * 12 01 c0 in the RFC layout. */
static void test_term_invalid_qn(void **state)
{
	struct uiw_term t, g;
	uint8_t out[UIW_TERM_MAX_LEN], *buf;

	(void)state;
	memset(&t, 0, sizeof(t));
	t.err = UIW_E_DDP_U_INVALID_QN;
	uiw_term_hdrct(t.err, true, false, &t);
	assert_true(t.m && t.d && !t.r);
	t.ddp_seg_len = 18 + 100;
	bad_qn_hdr(t.ddp_hdr);
	t.ddp_hdr_len = 18;
	assert_int_equal(uiw_term_encode(out, sizeof(out), &t), 4 + 2 + 18);
	assert_int_equal(out[0], 0x12);
	assert_int_equal(out[1], 0x01);
	assert_int_equal(out[2], 0xc0);
	assert_int_equal(out[3], 0x00);
	/* DDP Segment Length, then the copied DDP header at octet 6 */
	assert_int_equal(out[4], 0);
	assert_int_equal(out[5], 118);
	assert_memory_equal(out + 6, t.ddp_hdr, 18);
	assert_int_equal(uiw_term_encode(out, 23, &t), 0);

	buf = exact(out, 24);
	assert_int_equal(uiw_term_decode(buf, 24, &g), UIW_OK);
	assert_int_equal(g.err, UIW_E_DDP_U_INVALID_QN);
	assert_true(g.m && g.d && !g.r);
	assert_false(g.siw_layout);
	assert_int_equal(g.ddp_seg_len, 118);
	assert_int_equal(g.ddp_hdr_len, 18);
	assert_memory_equal(g.ddp_hdr, t.ddp_hdr, 18);
	assert_int_equal(g.rdmap_hdr_len, 0);
	free(buf);
}

/* SIW-FACTS: the LLP CRC error: 20 02 00, no headers. */
static void test_term_llp_crc(void **state)
{
	struct uiw_term t, g;
	uint8_t out[UIW_TERM_MAX_LEN];
	static const uint8_t want[4] = { 0x20, 0x02, 0x00, 0x00 };

	(void)state;
	memset(&t, 0, sizeof(t));
	t.err = UIW_E_MPA_CRC;
	uiw_term_hdrct(t.err, true, true, &t);
	assert_false(t.m || t.d || t.r);
	assert_int_equal(uiw_term_encode(out, sizeof(out), &t), 4);
	assert_memory_equal(out, want, 4);
	assert_int_equal(uiw_term_decode(out, 4, &g), UIW_OK);
	assert_int_equal(g.err, UIW_E_MPA_CRC);
	assert_false(g.m || g.d || g.r || g.siw_layout);
}

/* siw's swapped layout reads as the same causes. */
static void test_term_siw_layout(void **state)
{
	uint8_t b[24], *buf;
	struct uiw_term g;
	static const uint8_t crc[4] = { 0x02, 0x02, 0x00, 0x00 };

	(void)state;
	/* 21 01 03: DDP untagged, invalid QN, M and D */
	b[0] = 0x21;
	b[1] = 0x01;
	b[2] = 0x03;
	b[3] = 0x00;
	b[4] = 0x00;
	b[5] = 0x76;
	bad_qn_hdr(b + 6);
	buf = exact(b, 24);
	assert_int_equal(uiw_term_decode(buf, 24, &g), UIW_OK);
	assert_int_equal(g.err, UIW_E_DDP_U_INVALID_QN);
	assert_true(g.siw_layout);
	assert_true(g.m && g.d && !g.r);
	assert_int_equal(g.ddp_seg_len, 0x76);
	assert_int_equal(g.ddp_hdr_len, 18);
	assert_int_equal(g.ddp_hdr[9], 7);
	free(buf);
	/* 02 02 00: LLP CRC error */
	assert_int_equal(uiw_term_decode(crc, 4, &g), UIW_OK);
	assert_int_equal(g.err, UIW_E_MPA_CRC);
	assert_true(g.siw_layout);
	assert_false(g.m || g.d || g.r);
	/* 21 02 03: siw's "no buffer" answer to a long Send */
	b[1] = 0x02;
	assert_int_equal(uiw_term_decode(b, 24, &g), UIW_OK);
	assert_int_equal(g.err, UIW_E_DDP_U_MSN_NO_BUF);
	assert_true(g.siw_layout);
	/* 11 00 03: the nibbles read the same both ways, but M/D/R in the
	 * low bits with the high ones clear is siw's layout */
	b[0] = 0x11;
	b[1] = 0x00;
	b[2] = 0x03;
	memcpy(b + 6, rtr_hdr, 14);
	assert_int_equal(uiw_term_decode(b, 20, &g), UIW_OK);
	assert_int_equal(g.err, UIW_E_DDP_T_INVALID_STAG);
	assert_true(g.siw_layout);
	assert_true(g.m && g.d);
	assert_int_equal(g.ddp_hdr_len, 14);
	/* the RFC layout of the same cause stays the RFC reading */
	b[2] = 0xc0;
	assert_int_equal(uiw_term_decode(b, 20, &g), UIW_OK);
	assert_int_equal(g.err, UIW_E_DDP_T_INVALID_STAG);
	assert_false(g.siw_layout);
	/* both readings undefined: the RFC reading is reported */
	b[0] = 0x55;
	b[1] = 0x55;
	b[2] = 0x00;
	assert_int_equal(uiw_term_decode(b, 4, &g), UIW_OK);
	assert_int_equal(g.err, UIW_ERR(5, 5, 0x55));
	assert_false(g.siw_layout);
	/* 20 06 00: the RFC's 2/0/6 (insufficient IRD) and siw's RDMAP
	 * unexpected opcode; 20 07 00 likewise with 2/0/7.  The RFC reading
	 * unless the receiver knows the sender cannot send setup codes. */
	b[0] = 0x20;
	b[2] = 0x00;
	for (b[1] = 0x05; b[1] <= 0x07; b[1]++) {
		assert_int_equal(uiw_term_decode(b, 4, &g), UIW_OK);
		assert_int_equal(g.err, UIW_ERR(2, 0, b[1]));
		assert_false(g.siw_layout);
		assert_int_equal(uiw_term_decode_ex(b, 4, UIW_TERM_NO_SETUP,
						    &g), UIW_OK);
		/* 2/0/5 (local catastrophic) may come at any time */
		assert_int_equal(g.err, b[1] == 0x05 ? UIW_ERR(2, 0, 0x05) :
				 UIW_ERR(0, 2, b[1]));
		assert_int_equal(g.siw_layout, b[1] != 0x05);
	}
}

/* RDMAP remote protection error on an RDMA Read Request: M, D and R,
 * the 18-octet DDP header and the 28-octet Read Request header. */
static void test_term_read_req(void **state)
{
	struct uiw_term t, g;
	struct uiw_read_req rr = { .sink_stag = 0x100, .sink_to = 0x2000,
				   .size = 4096, .src_stag = 0xbad,
				   .src_to = 0 };
	struct uiw_ddp_hdr h = { .last = true, .ddp_ver = 1, .rdmap_ver = 1,
				 .opcode = UIW_OP_READ_REQ,
				 .qn = UIW_QN_READ_REQ, .msn = 3 };
	uint8_t out[UIW_TERM_MAX_LEN + 8], *buf;
	size_t k;

	(void)state;
	memset(&t, 0, sizeof(t));
	t.err = UIW_E_RDMAP_INVALID_STAG;
	uiw_term_hdrct(t.err, true, true, &t);
	assert_true(t.m && t.d && t.r);
	t.ddp_seg_len = 18 + 28;
	t.ddp_hdr_len = (uint8_t)uiw_ddp_hdr_encode(t.ddp_hdr, &h);
	uiw_read_req_encode(t.rdmap_hdr, &rr);
	t.rdmap_hdr_len = UIW_READ_REQ_LEN;
	assert_int_equal(uiw_term_encode(out, sizeof(out), &t),
			 UIW_TERM_MAX_LEN);
	assert_int_equal(out[0], 0x01);
	assert_int_equal(out[1], 0x00);
	assert_int_equal(out[2], 0xe0);
	assert_memory_equal(out + 24, t.rdmap_hdr, 28);
	buf = exact(out, UIW_TERM_MAX_LEN);
	assert_int_equal(uiw_term_decode(buf, UIW_TERM_MAX_LEN, &g), UIW_OK);
	assert_int_equal(g.err, UIW_E_RDMAP_INVALID_STAG);
	assert_true(g.m && g.d && g.r);
	assert_int_equal(g.ddp_seg_len, 46);
	assert_int_equal(g.rdmap_hdr_len, 28);
	assert_memory_equal(g.rdmap_hdr, t.rdmap_hdr, 28);
	free(buf);
	/* every shorter payload: OP_UNSPEC, the cause kept from 3 octets */
	for (k = 0; k < UIW_TERM_MAX_LEN; k++) {
		buf = exact(out, k);
		assert_int_equal(uiw_term_decode(buf, k, &g),
				 UIW_E_RDMAP_OP_UNSPEC);
		if (k >= 3) {
			assert_int_equal(g.err, UIW_E_RDMAP_INVALID_STAG);
			assert_true(g.r);
		}
		free(buf);
	}
	/* a copied header length that disagrees with the layout */
	t.rdmap_hdr_len = 0;
	assert_int_equal(uiw_term_encode(out, sizeof(out), &t), 0);
	t.rdmap_hdr_len = 28;
	t.ddp_hdr_len = 14;
	assert_int_equal(uiw_term_encode(out, sizeof(out), &t), 0);
	/* the Terminate with R alone: the Read Request header at octet 4 */
	memset(&t, 0, sizeof(t));
	t.err = UIW_E_RDMAP_ACCESS;
	t.r = true;
	uiw_read_req_encode(t.rdmap_hdr, &rr);
	t.rdmap_hdr_len = 28;
	assert_int_equal(uiw_term_encode(out, sizeof(out), &t), 32);
	assert_int_equal(out[2], 0x20);
	assert_memory_equal(out + 4, t.rdmap_hdr, 28);
	assert_int_equal(uiw_term_decode(out, 32, &g), UIW_OK);
	assert_true(g.r && !g.m && !g.d);
	assert_memory_equal(g.rdmap_hdr, t.rdmap_hdr, 28);
}

/* D without M: the length field is there (zero), the header at 6; M
 * without D: only the length field. */
static void test_term_m_d_alone(void **state)
{
	struct uiw_term t, g;
	uint8_t out[UIW_TERM_MAX_LEN];

	(void)state;
	memset(&t, 0, sizeof(t));
	t.err = UIW_E_DDP_T_BASE_BOUNDS;
	t.d = true;
	t.ddp_seg_len = 99;
	memcpy(t.ddp_hdr, rtr_hdr, 14);
	t.ddp_hdr_len = 14;
	assert_int_equal(uiw_term_encode(out, sizeof(out), &t), 20);
	assert_int_equal(out[2], 0x40);
	assert_int_equal(out[4] | out[5], 0);
	assert_memory_equal(out + 6, rtr_hdr, 14);
	assert_int_equal(uiw_term_decode(out, 20, &g), UIW_OK);
	assert_true(g.d && !g.m);
	assert_int_equal(g.ddp_hdr_len, 14);
	assert_int_equal(g.ddp_seg_len, 0);

	memset(&t, 0, sizeof(t));
	t.err = UIW_E_DDP_U_TOO_LONG;
	t.m = true;
	t.ddp_seg_len = 0x1234;
	assert_int_equal(uiw_term_encode(out, sizeof(out), &t), 6);
	assert_int_equal(out[2], 0x80);
	assert_int_equal(out[4], 0x12);
	assert_int_equal(out[5], 0x34);
	assert_int_equal(uiw_term_decode(out, 6, &g), UIW_OK);
	assert_true(g.m && !g.d);
	assert_int_equal(g.ddp_seg_len, 0x1234);
	assert_int_equal(uiw_term_decode(out, 5, &g), UIW_E_RDMAP_OP_UNSPEC);
	assert_int_equal(g.err, UIW_E_DDP_U_TOO_LONG);
}

/* RFC 5040 Figure 10 */
static void test_term_hdrct(void **state)
{
	static const struct {
		uiw_err_t err;
		bool seg, rdmap;
	} rows[] = {
		{ UIW_E_RDMAP_LOCAL_CATA, false, false },
		{ UIW_E_RDMAP_INVALID_STAG, true, true },
		{ UIW_E_RDMAP_BASE_BOUNDS, true, true },
		{ UIW_E_RDMAP_ACCESS, true, true },
		{ UIW_E_RDMAP_STAG_NOT_ASSOC, true, true },
		{ UIW_E_RDMAP_TO_WRAP, true, true },
		{ UIW_E_RDMAP_PROT_CANT_INV, true, true },
		{ UIW_E_RDMAP_PROT_UNSPEC, true, true },
		{ UIW_E_RDMAP_INVALID_VERSION, true, false },
		{ UIW_E_RDMAP_UNEXPECTED_OPCODE, true, false },
		{ UIW_E_RDMAP_CATA_STREAM, true, false },
		{ UIW_E_RDMAP_OP_UNSPEC, true, false },
		{ UIW_E_DDP_LOCAL_CATA, false, false },
		{ UIW_E_DDP_T_INVALID_STAG, true, false },
		{ UIW_E_DDP_T_INVALID_VERSION, true, false },
		{ UIW_E_DDP_U_INVALID_QN, true, false },
		{ UIW_E_DDP_U_TOO_LONG, true, false },
		{ UIW_E_MPA_CLOSED, false, false },
		{ UIW_E_MPA_CRC, false, false },
		{ UIW_E_MPA_MARKER, false, false },
		{ UIW_E_MPA_INSUFFICIENT_IRD, false, false },
		{ UIW_E_MPA_NO_MATCHING_RTR, false, false },
	};
	struct uiw_term t;
	size_t i;
	int have;

	(void)state;
	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		for (have = 0; have < 4; have++) {
			bool seg = have & 1, rdmap = have & 2;

			memset(&t, 0, sizeof(t));
			t.err = rows[i].err;
			uiw_term_hdrct(rows[i].err, seg, rdmap, &t);
			assert_int_equal(t.m, rows[i].seg && seg);
			assert_int_equal(t.d, rows[i].seg && seg);
			assert_int_equal(t.r, rows[i].rdmap && rdmap);
			assert_int_equal(t.err, rows[i].err);
		}
}

static void test_term_rdmap_len(void **state)
{
	unsigned op;

	(void)state;
	for (op = 0; op < 16; op++)
		assert_int_equal(uiw_term_rdmap_hdr_len((uint8_t)op),
				 op == UIW_OP_READ_REQ ? 28 : 0);
	/* the RDMAP control octet works too (RV bits ignored) */
	assert_int_equal(uiw_term_rdmap_hdr_len(0x41), 28);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hdr_vectors),
		cmocka_unit_test(test_hdr_roundtrip),
		cmocka_unit_test(test_hdr_versions),
		cmocka_unit_test(test_hdr_truncated),
		cmocka_unit_test(test_read_req),
		cmocka_unit_test(test_term_invalid_qn),
		cmocka_unit_test(test_term_llp_crc),
		cmocka_unit_test(test_term_siw_layout),
		cmocka_unit_test(test_term_read_req),
		cmocka_unit_test(test_term_m_d_alone),
		cmocka_unit_test(test_term_hdrct),
		cmocka_unit_test(test_term_rdmap_len),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
