/* RPC-over-RDMA version 1: the transport header codec (RFC 8166 §4)
 * and the CM private data codec (RFC 8797), src/rpcrdma/. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "rpcrdma/rpcrdma_cm.h"
#include "rpcrdma/rpcrdma_hdr.h"

/* Room for every shape below. */
#define NS 16

struct space {
	struct uiw_rpcrdma_read_seg rs[NS];
	struct uiw_rpcrdma_chunk rc[NS];
	struct uiw_rpcrdma_seg ws[NS];
	struct uiw_rpcrdma_chunk wc[NS];
	struct uiw_rpcrdma_seg ps[NS];
	struct uiw_rpcrdma_space sp;
};

static void space_init(struct space *s, uint32_t max)
{
	memset(s, 0xa5, sizeof(*s));
	s->sp = (struct uiw_rpcrdma_space){
		s->rs, max, s->rc, max, s->ws, max, s->wc, max, s->ps, max,
	};
}

/* A heap copy of exactly len octets, so that AddressSanitizer (make
 * check-asan) sees any read past the length. */
static enum uiw_rpcrdma_err decode_exact(const uint8_t *buf, size_t len,
					 const struct uiw_rpcrdma_space *sp,
					 struct uiw_rpcrdma_hdr *h)
{
	uint8_t *p = malloc(len ? len : 1);
	enum uiw_rpcrdma_err e;

	assert_non_null(p);
	if (len)
		memcpy(p, buf, len);
	e = uiw_rpcrdma_decode(p, len, sp, h);
	free(p);
	return e;
}

/* Big-endian words to octets (for the error cases). */
static size_t words(uint8_t *out, const uint32_t *w, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		out[4 * i] = (uint8_t)(w[i] >> 24);
		out[4 * i + 1] = (uint8_t)(w[i] >> 16);
		out[4 * i + 2] = (uint8_t)(w[i] >> 8);
		out[4 * i + 3] = (uint8_t)w[i];
	}
	return 4 * n;
}

static void assert_reencodes(const struct uiw_rpcrdma_hdr *h,
			     const uint8_t *want, size_t n)
{
	uint8_t out[1024];
	size_t len = 0, elen = 0;

	assert_int_equal(uiw_rpcrdma_encoded_len(h, &elen), UIW_RPCRDMA_OK);
	assert_int_equal(elen, n);
	memset(out, 0xee, sizeof(out));
	assert_int_equal(uiw_rpcrdma_encode(h, out, n, &len), UIW_RPCRDMA_OK);
	assert_int_equal(len, n);
	assert_memory_equal(out, want, n);
	/* one octet less: refused, nothing written */
	memset(out, 0xee, sizeof(out));
	assert_int_equal(uiw_rpcrdma_encode(h, out, n - 1, &len),
			 UIW_RPCRDMA_E_NOSPACE);
	assert_int_equal(out[0], 0xee);
}

/* ---- Hand-computed vectors ----------------------------------------- */

/* §4.7: "Frequently, a Requester does not provide any chunks.  In that
 * case, after the four fixed fields ... there are simply three 32-bit
 * fields that contain zero."  An RDMA_MSG call, XID 0x01020304,
 * asking for 32 credits, followed by its RPC message. */
static const uint8_t vec_msg_plain[] = {
	0x01, 0x02, 0x03, 0x04,   /* rdma_xid */
	0x00, 0x00, 0x00, 0x01,   /* rdma_vers = 1 (§4.2.2) */
	0x00, 0x00, 0x00, 0x20,   /* rdma_credit = 32 */
	0x00, 0x00, 0x00, 0x00,   /* rdma_proc = RDMA_MSG (0) */
	0x00, 0x00, 0x00, 0x00,   /* rdma_reads: not present */
	0x00, 0x00, 0x00, 0x00,   /* rdma_writes: not present */
	0x00, 0x00, 0x00, 0x00,   /* rdma_reply: not present */
	/* the Payload stream: the RPC message, beginning with its XID */
	0x01, 0x02, 0x03, 0x04, 0x00, 0x00, 0x00, 0x00,
};

static void test_vec_msg_plain(void **state)
{
	struct uiw_rpcrdma_hdr h;
	struct space s;

	(void)state;
	space_init(&s, NS);
	assert_int_equal(decode_exact(vec_msg_plain, sizeof(vec_msg_plain),
				      &s.sp, &h), UIW_RPCRDMA_OK);
	assert_int_equal(h.xid, 0x01020304);
	assert_int_equal(h.vers, 1);
	assert_int_equal(h.credit, 32);
	assert_int_equal(h.proc, UIW_RDMA_MSG);
	assert_int_equal(h.nread_seg, 0);
	assert_int_equal(h.nread_chunk, 0);
	assert_int_equal(h.nwrite_chunk, 0);
	assert_false(h.reply_present);
	/* the RPC message starts after the 28 octets (§4.2.4) */
	assert_int_equal(h.hdr_len, 28);
	assert_memory_equal(vec_msg_plain + h.hdr_len, vec_msg_plain, 4);
	assert_int_equal(uiw_rpcrdma_action(UIW_RPCRDMA_RESPONDER, 0, &h),
			 UIW_RPCRDMA_ACT_PROCESS);
	assert_reencodes(&h, vec_msg_plain, 28);
}

/*
 * An NFS WRITE-like call (RFC 8267 §4: the data of WRITE is
 * DDP-eligible): one Read chunk of two RDMA read segments at Position
 * 140, §4.7's "1 PHLOO 1 PHLOO 0" with one P, then empty Write list
 * and no Reply chunk.
 */
static const uint8_t vec_read_chunk[] = {
	0xde, 0xad, 0xbe, 0xef,   /* rdma_xid */
	0x00, 0x00, 0x00, 0x01,   /* rdma_vers */
	0x00, 0x00, 0x00, 0x80,   /* rdma_credit = 128 */
	0x00, 0x00, 0x00, 0x00,   /* RDMA_MSG */
	0x00, 0x00, 0x00, 0x01,   /* Read list: an entry follows */
	0x00, 0x00, 0x00, 0x8c,   /*   P = 140 */
	0x11, 0x22, 0x33, 0x44,   /*   H = 0x11223344 */
	0x00, 0x00, 0x10, 0x00,   /*   L = 4096 */
	0x00, 0x00, 0x7f, 0x00,   /*   OO = 0x00007f0012340000 */
	0x12, 0x34, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x01,   /* another entry */
	0x00, 0x00, 0x00, 0x8c,   /*   P = 140: the same Read chunk */
	0x55, 0x66, 0x77, 0x88,   /*   H */
	0x00, 0x00, 0x00, 0x03,   /*   L = 3: no roundup pad (§3.4.5.2) */
	0x00, 0x00, 0x00, 0x00,   /*   OO = 0x1000 */
	0x00, 0x00, 0x10, 0x00,
	0x00, 0x00, 0x00, 0x00,   /* end of the Read list */
	0x00, 0x00, 0x00, 0x00,   /* Write list: empty */
	0x00, 0x00, 0x00, 0x00,   /* Reply chunk: not present */
};

static void test_vec_read_chunk(void **state)
{
	struct uiw_rpcrdma_hdr h;
	struct space s;

	(void)state;
	space_init(&s, NS);
	assert_int_equal(decode_exact(vec_read_chunk, sizeof(vec_read_chunk),
				      &s.sp, &h), UIW_RPCRDMA_OK);
	assert_int_equal(h.xid, 0xdeadbeef);
	assert_int_equal(h.credit, 128);
	assert_int_equal(h.nread_seg, 2);
	assert_int_equal(h.nread_chunk, 1);
	assert_int_equal(h.read_chunk[0].position, 140);
	assert_int_equal(h.read_chunk[0].first, 0);
	assert_int_equal(h.read_chunk[0].nseg, 2);
	assert_int_equal(h.read_seg[0].target.handle, 0x11223344);
	assert_int_equal(h.read_seg[0].target.length, 4096);
	assert_true(h.read_seg[0].target.offset == 0x00007f0012340000ull);
	assert_int_equal(h.read_seg[1].target.handle, 0x55667788);
	assert_int_equal(h.read_seg[1].target.length, 3);
	assert_true(h.read_seg[1].target.offset == 0x1000);
	assert_true(uiw_rpcrdma_read_chunk_len(&h, 0) == 4099);
	assert_true(uiw_rpcrdma_read_chunk_len(&h, 1) == 0);
	assert_false(uiw_rpcrdma_has_pos0(&h));
	assert_int_equal(h.hdr_len, sizeof(vec_read_chunk));
	assert_reencodes(&h, vec_read_chunk, sizeof(vec_read_chunk));
}

/*
 * §4.7's Write list "containing a Write chunk with three segments and a
 * Write chunk with two segments": 1 3 HLOO HLOO HLOO 1 2 HLOO HLOO 0.
 * Segment k (1..5) has H = 0xa000000k, L = k * 0x100, OO = k << 32.
 */
static const uint8_t vec_write_list[] = {
	0x00, 0x00, 0x00, 0x07,   /* rdma_xid = 7 */
	0x00, 0x00, 0x00, 0x01,   /* rdma_vers */
	0x00, 0x00, 0x00, 0x01,   /* rdma_credit = 1 */
	0x00, 0x00, 0x00, 0x00,   /* RDMA_MSG */
	0x00, 0x00, 0x00, 0x00,   /* Read list: empty */
	0x00, 0x00, 0x00, 0x01,   /* Write list: a chunk follows */
	0x00, 0x00, 0x00, 0x03,   /*   3 segments */
	0xa0, 0x00, 0x00, 0x01,  0x00, 0x00, 0x01, 0x00,
	0x00, 0x00, 0x00, 0x01,  0x00, 0x00, 0x00, 0x00,
	0xa0, 0x00, 0x00, 0x02,  0x00, 0x00, 0x02, 0x00,
	0x00, 0x00, 0x00, 0x02,  0x00, 0x00, 0x00, 0x00,
	0xa0, 0x00, 0x00, 0x03,  0x00, 0x00, 0x03, 0x00,
	0x00, 0x00, 0x00, 0x03,  0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x01,   /* another chunk */
	0x00, 0x00, 0x00, 0x02,   /*   2 segments */
	0xa0, 0x00, 0x00, 0x04,  0x00, 0x00, 0x04, 0x00,
	0x00, 0x00, 0x00, 0x04,  0x00, 0x00, 0x00, 0x00,
	0xa0, 0x00, 0x00, 0x05,  0x00, 0x00, 0x05, 0x00,
	0x00, 0x00, 0x00, 0x05,  0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00,   /* end of the Write list */
	0x00, 0x00, 0x00, 0x00,   /* Reply chunk: not present */
};

static void test_vec_write_list(void **state)
{
	struct uiw_rpcrdma_hdr h;
	struct space s;
	uint32_t k;

	(void)state;
	space_init(&s, NS);
	assert_int_equal(decode_exact(vec_write_list, sizeof(vec_write_list),
				      &s.sp, &h), UIW_RPCRDMA_OK);
	assert_int_equal(h.nwrite_chunk, 2);
	assert_int_equal(h.nwrite_seg, 5);
	assert_int_equal(h.write_chunk[0].first, 0);
	assert_int_equal(h.write_chunk[0].nseg, 3);
	assert_int_equal(h.write_chunk[1].first, 3);
	assert_int_equal(h.write_chunk[1].nseg, 2);
	for (k = 1; k <= 5; k++) {
		assert_int_equal(h.write_seg[k - 1].handle, 0xa0000000 | k);
		assert_int_equal(h.write_seg[k - 1].length, k * 0x100);
		assert_true(h.write_seg[k - 1].offset == (uint64_t)k << 32);
	}
	assert_true(uiw_rpcrdma_write_chunk_len(&h, 0) == 0x600);
	assert_true(uiw_rpcrdma_write_chunk_len(&h, 1) == 0x900);
	assert_true(uiw_rpcrdma_write_chunk_len(&h, 2) == 0);
	assert_int_equal(h.hdr_len, 16 + 4 + 4 + 4 + 3 * 16 + 4 + 4 +
			 2 * 16 + 4 + 4);
	assert_reencodes(&h, vec_write_list, sizeof(vec_write_list));
}

/*
 * §4.7: "a Reply chunk with two segments would look like 1 2 HLOO
 * HLOO"; here in the RDMA_NOMSG that a Long Reply sends (§3.5.3),
 * lengths updated to what was written (§4.3.3).
 */
static const uint8_t vec_reply_chunk[] = {
	0x00, 0x00, 0x30, 0x39,   /* rdma_xid = 12345 */
	0x00, 0x00, 0x00, 0x01,   /* rdma_vers */
	0x00, 0x00, 0x00, 0x10,   /* rdma_credit = 16 granted */
	0x00, 0x00, 0x00, 0x01,   /* RDMA_NOMSG */
	0x00, 0x00, 0x00, 0x00,   /* Read list: empty (§4.3.1, replies) */
	0x00, 0x00, 0x00, 0x00,   /* Write list: empty */
	0x00, 0x00, 0x00, 0x01,   /* Reply chunk: present */
	0x00, 0x00, 0x00, 0x02,   /*   2 segments */
	0x00, 0x00, 0xbe, 0xef,  0x00, 0x00, 0x20, 0x00,  /* H, L 8192 */
	0xff, 0xff, 0xff, 0xff,  0xff, 0xff, 0xe0, 0x00,  /* OO */
	0x00, 0x00, 0xca, 0xfe,  0x00, 0x00, 0x00, 0x34,  /* H, L 52 */
	0x00, 0x00, 0x00, 0x00,  0x00, 0x00, 0x00, 0x00,  /* OO = 0 */
};

static void test_vec_reply_chunk(void **state)
{
	struct uiw_rpcrdma_hdr h;
	struct space s;

	(void)state;
	space_init(&s, NS);
	assert_int_equal(decode_exact(vec_reply_chunk, sizeof(vec_reply_chunk),
				      &s.sp, &h), UIW_RPCRDMA_OK);
	assert_int_equal(h.xid, 12345);
	assert_int_equal(h.proc, UIW_RDMA_NOMSG);
	assert_true(h.reply_present);
	assert_int_equal(h.nreply_seg, 2);
	assert_int_equal(h.reply_seg[0].handle, 0xbeef);
	assert_int_equal(h.reply_seg[0].length, 8192);
	assert_true(h.reply_seg[0].offset == 0xffffffffffffe000ull);
	assert_int_equal(h.reply_seg[1].handle, 0xcafe);
	assert_int_equal(h.reply_seg[1].length, 52);
	assert_true(uiw_rpcrdma_segs_len(h.reply_seg, h.nreply_seg) == 8244);
	assert_int_equal(h.hdr_len, sizeof(vec_reply_chunk));
	assert_reencodes(&h, vec_reply_chunk, sizeof(vec_reply_chunk));
}

/* §4.5: the two RDMA_ERROR forms. */
static const uint8_t vec_err_vers[] = {
	0x00, 0x00, 0x00, 0x2a,   /* rdma_xid of the failing call */
	0x00, 0x00, 0x00, 0x02,   /* its rdma_vers, 2, echoed (§4.5) */
	0x00, 0x00, 0x00, 0x01,   /* rdma_credit */
	0x00, 0x00, 0x00, 0x04,   /* RDMA_ERROR */
	0x00, 0x00, 0x00, 0x01,   /* rdma_err = ERR_VERS */
	0x00, 0x00, 0x00, 0x01,   /* rdma_vers_low = 1 */
	0x00, 0x00, 0x00, 0x01,   /* rdma_vers_high = 1 */
};
static const uint8_t vec_err_chunk[] = {
	0x00, 0x00, 0x00, 0x2b,   /* rdma_xid */
	0x00, 0x00, 0x00, 0x01,   /* rdma_vers */
	0x00, 0x00, 0x00, 0x01,   /* rdma_credit */
	0x00, 0x00, 0x00, 0x04,   /* RDMA_ERROR */
	0x00, 0x00, 0x00, 0x02,   /* rdma_err = ERR_CHUNK */
};

static void test_vec_errors(void **state)
{
	/* a version 2 call: 28 octets, xid 0x2a */
	static const uint32_t v2call[] = { 0x2a, 2, 1, 0, 0, 0, 0 };
	uint8_t buf[64], out[64];
	struct uiw_rpcrdma_hdr h;
	struct space s;
	size_t n;

	(void)state;
	space_init(&s, NS);
	n = words(buf, v2call, 7);
	assert_int_equal(decode_exact(buf, n, &s.sp, &h), UIW_RPCRDMA_E_VERS);
	assert_int_equal(h.bad_off, 4);
	assert_int_equal(uiw_rpcrdma_action(UIW_RPCRDMA_RESPONDER,
					    UIW_RPCRDMA_E_VERS, &h),
			 UIW_RPCRDMA_ACT_ERR_VERS);
	assert_int_equal(uiw_rpcrdma_action(UIW_RPCRDMA_REQUESTER,
					    UIW_RPCRDMA_E_VERS, &h),
			 UIW_RPCRDMA_ACT_DISCARD);
	memset(out, 0xee, sizeof(out));
	assert_int_equal(uiw_rpcrdma_encode_err_reply(&h,
			UIW_RPCRDMA_ACT_ERR_VERS, 1, out, sizeof(out)), 28);
	assert_memory_equal(out, vec_err_vers, 28);
	assert_int_equal(out[28], 0xee);
	assert_int_equal(uiw_rpcrdma_encode_err_reply(&h,
			UIW_RPCRDMA_ACT_ERR_VERS, 1, out, 27), -1);
	assert_int_equal(uiw_rpcrdma_encode_err_reply(&h,
			UIW_RPCRDMA_ACT_DISCARD, 1, out, sizeof(out)), 0);

	/* the ERR_VERS reply, at the Requester */
	assert_int_equal(decode_exact(vec_err_vers, 28, &s.sp, &h),
			 UIW_RPCRDMA_E_VERS);   /* it echoes version 2 */
	assert_int_equal(uiw_rpcrdma_action(UIW_RPCRDMA_RESPONDER,
					    UIW_RPCRDMA_E_VERS, &h),
			 UIW_RPCRDMA_ACT_DISCARD);  /* never answered */

	/* ERR_CHUNK for xid 0x2b: 20 octets, decoded although under the
	 * 28 of §4.5 (rpcrdma_hdr.c says why) */
	h.xid = 0x2b;
	h.vers = 1;
	assert_int_equal(uiw_rpcrdma_encode_err_reply(&h,
			UIW_RPCRDMA_ACT_ERR_CHUNK, 1, out, sizeof(out)), 20);
	assert_memory_equal(out, vec_err_chunk, 20);
	assert_int_equal(decode_exact(vec_err_chunk, 20, &s.sp, &h),
			 UIW_RPCRDMA_OK);
	assert_int_equal(h.proc, UIW_RDMA_ERROR);
	assert_int_equal(h.err, UIW_RPCRDMA_ERR_CHUNK);
	assert_int_equal(h.hdr_len, 20);
	assert_int_equal(uiw_rpcrdma_action(UIW_RPCRDMA_REQUESTER, 0, &h),
			 UIW_RPCRDMA_ACT_PROCESS);
	/* §4.2.4: "A Responder MUST silently discard RDMA_ERROR" */
	assert_int_equal(uiw_rpcrdma_action(UIW_RPCRDMA_RESPONDER, 0, &h),
			 UIW_RPCRDMA_ACT_DISCARD);
	assert_reencodes(&h, vec_err_chunk, 20);

	/* an ERR_VERS from a version-1 peer decodes with its range */
	memcpy(buf, vec_err_vers, 28);
	buf[7] = 1;
	buf[27] = 3;
	assert_int_equal(decode_exact(buf, 28, &s.sp, &h), UIW_RPCRDMA_OK);
	assert_int_equal(h.err, UIW_RPCRDMA_ERR_VERS);
	assert_int_equal(h.vers_low, 1);
	assert_int_equal(h.vers_high, 3);
	assert_reencodes(&h, buf, 28);

	/* §4.5: an RDMA_ERROR that cannot be decoded is dropped */
	memcpy(buf, vec_err_chunk, 20);
	buf[19] = 3;
	assert_int_equal(decode_exact(buf, 20, &s.sp, &h),
			 UIW_RPCRDMA_E_ERRCODE);
	assert_int_equal(h.bad_off, 16);
	assert_int_equal(uiw_rpcrdma_action(UIW_RPCRDMA_REQUESTER,
					    UIW_RPCRDMA_E_ERRCODE, &h),
			 UIW_RPCRDMA_ACT_DISCARD);
	assert_int_equal(uiw_rpcrdma_action(UIW_RPCRDMA_RESPONDER,
					    UIW_RPCRDMA_E_ERRCODE, &h),
			 UIW_RPCRDMA_ACT_DISCARD);
	h.err = 3;
	assert_int_equal(uiw_rpcrdma_encode(&h, out, sizeof(out), &n),
			 UIW_RPCRDMA_E_ERRCODE);
}

/* ---- Round trips of every shape --------------------------------------- */

#define SEG(k) { 0x1000 + (k), 0x100 * (k) + 1, 0x7f0000000000ull + (k) }
#define RSEG(p, k) { p, SEG(k) }

static const struct uiw_rpcrdma_read_seg shape_reads[] = {
	RSEG(0, 1), RSEG(0, 2),          /* Position-Zero Read chunk */
	RSEG(8, 3),                      /* a chunk at 8 */
	RSEG(124, 4), RSEG(124, 5), RSEG(124, 6),   /* three at 124 */
	RSEG(64, 7),                     /* positions in any order */
};
static const struct uiw_rpcrdma_seg shape_writes[] = {
	SEG(11), SEG(12), SEG(13), SEG(14), SEG(15), SEG(16),
};
/* chunks of 2, 0 (an empty Write chunk, §3.4.6) and 4 segments */
static const struct uiw_rpcrdma_chunk shape_wchunks[] = {
	{ 0, 0, 2 }, { 0, 2, 0 }, { 0, 2, 4 },
};
static const struct uiw_rpcrdma_seg shape_reply[] = {
	SEG(21), SEG(22), SEG(23),
};

struct shape {
	const char *name;
	uint32_t proc;
	uint32_t read_from, nread;        /* a slice of shape_reads */
	uint32_t nwchunk;                 /* the first n of shape_wchunks */
	bool reply;
	uint32_t want_read_chunks;
};

static const struct shape shapes[] = {
	{ "msg, no chunks",               UIW_RDMA_MSG,   0, 0, 0, false, 0 },
	{ "msg, read chunks at 8,124,64", UIW_RDMA_MSG,   2, 5, 0, false, 3 },
	{ "msg, write list",              UIW_RDMA_MSG,   0, 0, 3, false, 0 },
	{ "msg, one write chunk",         UIW_RDMA_MSG,   0, 0, 1, false, 0 },
	{ "msg, reply chunk",             UIW_RDMA_MSG,   0, 0, 0, true,  0 },
	{ "msg, all three",               UIW_RDMA_MSG,   2, 5, 3, true,  3 },
	{ "nomsg, long call",             UIW_RDMA_NOMSG, 0, 2, 0, false, 1 },
	{ "nomsg, long call, all chunks", UIW_RDMA_NOMSG, 0, 7, 3, true,  4 },
	{ "nomsg, long reply",            UIW_RDMA_NOMSG, 0, 0, 0, true,  0 },
	{ "nomsg, long reply + writes",   UIW_RDMA_NOMSG, 0, 0, 3, true,  0 },
};

static void shape_hdr(const struct shape *sh, struct uiw_rpcrdma_hdr *h)
{
	memset(h, 0, sizeof(*h));
	h->xid = 0x9000 + (uint32_t)(sh - shapes);
	h->vers = 1;
	h->credit = 64;
	h->proc = sh->proc;
	h->read_seg = shape_reads + sh->read_from;
	h->nread_seg = sh->nread;
	h->write_seg = shape_writes;
	h->nwrite_seg = 6;
	h->write_chunk = shape_wchunks;
	h->nwrite_chunk = sh->nwchunk;
	h->reply_present = sh->reply;
	h->reply_seg = shape_reply;
	h->nreply_seg = sh->reply ? 3 : 0;
}

static void assert_seg_eq(const struct uiw_rpcrdma_seg *a,
			  const struct uiw_rpcrdma_seg *b)
{
	assert_int_equal(a->handle, b->handle);
	assert_int_equal(a->length, b->length);
	assert_true(a->offset == b->offset);
}

static void test_roundtrip_shapes(void **state)
{
	struct uiw_rpcrdma_hdr h, d;
	uint8_t buf[2048];
	struct space s;
	size_t i, n, k;
	uint32_t c, j;

	(void)state;
	for (i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
		const struct shape *sh = &shapes[i];

		print_message("%s\n", sh->name);
		shape_hdr(sh, &h);
		assert_int_equal(uiw_rpcrdma_encode(&h, buf, sizeof(buf), &n),
				 UIW_RPCRDMA_OK);
		/* §4.7 sizes: 16 + reads 24 each + 4, chunks 8 + 16 per
		 * segment + 4, reply 4 (+ 4 + 16 per segment) */
		k = 16 + 24 * sh->nread + 4 + 4 + 4;
		for (j = 0; j < sh->nwchunk; j++)
			k += 8 + 16 * shape_wchunks[j].nseg;
		if (sh->reply)
			k += 4 + 3 * 16;
		assert_int_equal(n, k);
		space_init(&s, NS);
		assert_int_equal(decode_exact(buf, n, &s.sp, &d),
				 UIW_RPCRDMA_OK);
		assert_int_equal(d.hdr_len, n);
		assert_int_equal(d.xid, h.xid);
		assert_int_equal(d.proc, h.proc);
		assert_int_equal(d.credit, 64);
		assert_int_equal(d.nread_seg, sh->nread);
		for (j = 0; j < sh->nread; j++) {
			assert_int_equal(d.read_seg[j].position,
					 h.read_seg[j].position);
			assert_seg_eq(&d.read_seg[j].target,
				      &h.read_seg[j].target);
		}
		assert_int_equal(d.nread_chunk, sh->want_read_chunks);
		for (c = 0; c < d.nread_chunk; c++)
			for (j = 0; j < d.read_chunk[c].nseg; j++)
				assert_int_equal(d.read_seg[d.read_chunk[c].first
							    + j].position,
						 d.read_chunk[c].position);
		assert_int_equal(uiw_rpcrdma_has_pos0(&d),
				 sh->proc == UIW_RDMA_NOMSG && sh->nread > 0);
		assert_int_equal(d.nwrite_chunk, sh->nwchunk);
		for (c = 0; c < sh->nwchunk; c++) {
			assert_int_equal(d.write_chunk[c].nseg,
					 shape_wchunks[c].nseg);
			for (j = 0; j < d.write_chunk[c].nseg; j++)
				assert_seg_eq(&d.write_seg[d.write_chunk[c].first + j],
					      &shape_writes[shape_wchunks[c].first + j]);
			assert_true(uiw_rpcrdma_write_chunk_len(&d, c) ==
				    uiw_rpcrdma_write_chunk_len(&h, c));
		}
		assert_int_equal(d.reply_present, sh->reply);
		assert_int_equal(d.nreply_seg, sh->reply ? 3 : 0);
		for (j = 0; j < d.nreply_seg; j++)
			assert_seg_eq(&d.reply_seg[j], &shape_reply[j]);
		/* and back to the same octets */
		assert_reencodes(&d, buf, n);
	}
}

/* Every prefix of every shape (and of the RDMA_ERROR forms) is refused
 * with the error its length calls for, never reading past it. */
static void test_truncated_everywhere(void **state)
{
	struct uiw_rpcrdma_hdr h, d;
	uint8_t buf[2048];
	struct space s;
	enum uiw_rpcrdma_err e;
	size_t i, n, len;

	(void)state;
	for (i = 0; i < sizeof(shapes) / sizeof(shapes[0]) + 2; i++) {
		if (i < sizeof(shapes) / sizeof(shapes[0])) {
			shape_hdr(&shapes[i], &h);
			assert_int_equal(uiw_rpcrdma_encode(&h, buf, sizeof(buf),
							    &n), 0);
		} else if (i == sizeof(shapes) / sizeof(shapes[0])) {
			memcpy(buf, vec_err_chunk, n = 20);
		} else {
			memcpy(buf, vec_err_vers, n = 28);
			buf[7] = 1;
		}
		for (len = 0; len < n; len++) {
			space_init(&s, NS);
			e = decode_exact(buf, len, &s.sp, &d);
			assert_int_not_equal(e, UIW_RPCRDMA_OK);
			assert_true(d.bad_off <= len);
			if (len < 16 || (len < 28 && buf[15] != 4) ||
			    (buf[15] == 4 && len < 20)) {
				assert_int_equal(e, UIW_RPCRDMA_E_SHORT);
				assert_int_equal(uiw_rpcrdma_action(
					UIW_RPCRDMA_RESPONDER, e, &d),
					UIW_RPCRDMA_ACT_DISCARD);
				continue;
			}
			/* a segment count whose segments are cut off is
			 * found as soon as the count is read */
			if (e != UIW_RPCRDMA_E_SEG_COUNT) {
				assert_int_equal(e, UIW_RPCRDMA_E_TRUNC);
				assert_int_equal(d.bad_off, len);
			}
			/* the fixed words are read for the reply */
			assert_int_equal(d.xid, (uint32_t)buf[0] << 24 |
					 buf[1] << 16 | buf[2] << 8 | buf[3]);
			assert_int_equal(uiw_rpcrdma_action(
				UIW_RPCRDMA_RESPONDER, e, &d),
				buf[15] == 4 ? UIW_RPCRDMA_ACT_DISCARD :
					       UIW_RPCRDMA_ACT_ERR_CHUNK);
			assert_int_equal(uiw_rpcrdma_action(
				UIW_RPCRDMA_REQUESTER, e, &d),
				UIW_RPCRDMA_ACT_DISCARD);
		}
	}
}

/* ---- Each decode error ---------------------------------------------------- */

static void expect(const uint32_t *w, size_t nw, uint32_t max,
		   enum uiw_rpcrdma_err want, size_t at,
		   enum uiw_rpcrdma_act act)
{
	struct uiw_rpcrdma_hdr h;
	uint8_t buf[512];
	struct space s;
	size_t n = words(buf, w, nw);

	space_init(&s, max);
	assert_int_equal(decode_exact(buf, n, &s.sp, &h), want);
	assert_int_equal(h.bad_off, at);
	assert_non_null(uiw_rpcrdma_strerror(want));
	assert_int_equal(uiw_rpcrdma_action(UIW_RPCRDMA_RESPONDER, want, &h),
			 act);
	assert_int_equal(uiw_rpcrdma_action(UIW_RPCRDMA_REQUESTER, want, &h),
			 want ? UIW_RPCRDMA_ACT_DISCARD :
				UIW_RPCRDMA_ACT_PROCESS);
}

#define EXPECT(max, want, at, act, ...)					\
	do {								\
		static const uint32_t w_[] = { __VA_ARGS__ };		\
		expect(w_, sizeof(w_) / 4, max, want, at, act);		\
	} while (0)
#define ERRCHUNK UIW_RPCRDMA_ACT_ERR_CHUNK
#define H 0xabc, 0x40, 0, 0x1000          /* a plain segment, HLOO */

static void test_decode_errors(void **state)
{
	(void)state;
	/* version (checked before anything after it) and procedure */
	EXPECT(NS, UIW_RPCRDMA_E_VERS, 4, UIW_RPCRDMA_ACT_ERR_VERS,
	       1, 0, 1, 0, 0, 0, 0);
	EXPECT(NS, UIW_RPCRDMA_E_VERS, 4, UIW_RPCRDMA_ACT_ERR_VERS,
	       1, 0xffffffff, 1, 9, 7, 7, 7);
	EXPECT(NS, UIW_RPCRDMA_E_SHORT, 24, UIW_RPCRDMA_ACT_DISCARD,
	       1, 2, 1, 0, 0, 0);
	EXPECT(NS, UIW_RPCRDMA_E_PROC, 12, ERRCHUNK, 1, 1, 1, 5, 0, 0, 0);
	EXPECT(NS, UIW_RPCRDMA_E_PROC, 12, ERRCHUNK,
	       1, 1, 1, 0xffffffff, 0, 0, 0);
	/* discriminators strictly 0 or 1, in each of the three places */
	EXPECT(NS, UIW_RPCRDMA_E_DISCRIM, 16, ERRCHUNK, 1, 1, 1, 0, 2, 0, 0);
	EXPECT(NS, UIW_RPCRDMA_E_DISCRIM, 40, ERRCHUNK,
	       1, 1, 1, 0, 1, 8, H, 0x80000001, 0, 0);
	EXPECT(NS, UIW_RPCRDMA_E_DISCRIM, 20, ERRCHUNK, 1, 1, 1, 0, 0, 2, 0);
	EXPECT(NS, UIW_RPCRDMA_E_DISCRIM, 44, ERRCHUNK,
	       1, 1, 1, 0, 0, 1, 1, H, 2, 0);
	EXPECT(NS, UIW_RPCRDMA_E_DISCRIM, 24, ERRCHUNK, 1, 1, 1, 0, 0, 0, 2);
	/* counts that cannot fit: 0x10000000 * 16 overflows 32 bits */
	EXPECT(NS, UIW_RPCRDMA_E_SEG_COUNT, 24, ERRCHUNK,
	       1, 1, 1, 0, 0, 1, 0x10000000, H, 0, 0);
	EXPECT(NS, UIW_RPCRDMA_E_SEG_COUNT, 24, ERRCHUNK,
	       1, 1, 1, 0, 0, 1, 0xffffffff, H, 0, 0);
	EXPECT(NS, UIW_RPCRDMA_E_SEG_COUNT, 28, ERRCHUNK,
	       1, 1, 1, 1, 0, 0, 1, 2, H);
	EXPECT(NS, UIW_RPCRDMA_E_SEG_COUNT, 28, ERRCHUNK,
	       1, 1, 1, 1, 0, 0, 1, 0xfffffffc, H, H);
	/* the caller's bounds: at the bound it decodes, beyond it not */
	EXPECT(2, UIW_RPCRDMA_OK, 0, UIW_RPCRDMA_ACT_PROCESS,
	       1, 1, 1, 0, 1, 8, H, 1, 8, H, 0, 0, 0);
	EXPECT(2, UIW_RPCRDMA_E_READ_SEGS, 64, ERRCHUNK,
	       1, 1, 1, 0, 1, 8, H, 1, 8, H, 1, 8, H, 0, 0, 0);
	EXPECT(0, UIW_RPCRDMA_E_READ_SEGS, 16, ERRCHUNK,
	       1, 1, 1, 0, 1, 8, H, 0, 0, 0);
	{
		/* read chunks bounded apart from read segments */
		static const uint32_t w[] = { 1, 1, 1, 0, 1, 8, H, 1, 12, H,
					      0, 0, 0 };
		struct uiw_rpcrdma_hdr h;
		uint8_t buf[128];
		struct space s;
		size_t n = words(buf, w, sizeof(w) / 4);

		space_init(&s, NS);
		s.sp.max_read_chunk = 1;
		assert_int_equal(decode_exact(buf, n, &s.sp, &h),
				 UIW_RPCRDMA_E_READ_CHUNKS);
		assert_int_equal(h.bad_off, 40);
		s.sp.max_read_chunk = 2;
		assert_int_equal(decode_exact(buf, n, &s.sp, &h), 0);
	}
	EXPECT(1, UIW_RPCRDMA_E_WRITE_CHUNKS, 28, ERRCHUNK,
	       1, 1, 1, 0, 0, 1, 0, 1, 0, 0, 0);
	EXPECT(2, UIW_RPCRDMA_E_WRITE_SEGS, 48, ERRCHUNK,
	       1, 1, 1, 0, 0, 1, 1, H, 1, 2, H, H, 0, 0);
	EXPECT(2, UIW_RPCRDMA_OK, 0, UIW_RPCRDMA_ACT_PROCESS,
	       1, 1, 1, 0, 0, 1, 1, H, 1, 1, H, 0, 0);
	EXPECT(2, UIW_RPCRDMA_E_REPLY_SEGS, 28, ERRCHUNK,
	       1, 1, 1, 0, 0, 0, 1, 3, H, H, H);
	EXPECT(3, UIW_RPCRDMA_OK, 0, UIW_RPCRDMA_ACT_PROCESS,
	       1, 1, 1, 0, 0, 0, 1, 3, H, H, H);
	/* §3.4.5: Positions are multiples of four */
	EXPECT(NS, UIW_RPCRDMA_E_POSITION, 44, ERRCHUNK,
	       1, 1, 1, 0, 1, 8, H, 1, 10, H, 0, 0, 0);
	/* §3.4.5: one chunk's segments together */
	EXPECT(NS, UIW_RPCRDMA_E_READ_SPLIT, 68, ERRCHUNK,
	       1, 1, 1, 0, 1, 8, H, 1, 16, H, 1, 8, H, 0, 0, 0);
	/* a Position-Zero Read chunk goes with RDMA_NOMSG only */
	EXPECT(NS, UIW_RPCRDMA_E_POS0_MSG, 44, ERRCHUNK,
	       1, 1, 1, 0, 1, 8, H, 1, 0, H, 0, 0, 0);
	EXPECT(NS, UIW_RPCRDMA_OK, 0, UIW_RPCRDMA_ACT_PROCESS,
	       1, 1, 1, 1, 1, 8, H, 1, 0, H, 0, 0, 0);
	/* RDMA_NOMSG needs a chunk for its Payload stream (§4.5.2's
	 * example, then a Write list alone, a Read list without Position
	 * zero) */
	EXPECT(NS, UIW_RPCRDMA_E_NOMSG_EMPTY, 12, ERRCHUNK,
	       1, 1, 1, 1, 0, 0, 0);
	EXPECT(NS, UIW_RPCRDMA_E_NOMSG_EMPTY, 12, ERRCHUNK,
	       1, 1, 1, 1, 0, 1, 1, H, 0, 0);
	EXPECT(NS, UIW_RPCRDMA_E_NOMSG_EMPTY, 12, ERRCHUNK,
	       1, 1, 1, 1, 1, 8, H, 0, 0, 0);
	/* trailing octets after an RDMA_NOMSG header are not looked at */
	EXPECT(NS, UIW_RPCRDMA_OK, 0, UIW_RPCRDMA_ACT_PROCESS,
	       1, 1, 1, 1, 0, 0, 1, 0, 0xffffffff);
}

/* The encoder refuses what the decoder refuses. */
static void test_encode_refusals(void **state)
{
	struct uiw_rpcrdma_read_seg rs[3] = { RSEG(8, 1), RSEG(16, 2),
					      RSEG(8, 3) };
	struct uiw_rpcrdma_chunk wc = { 0, 1, 2 };
	struct uiw_rpcrdma_hdr h = { .xid = 1, .vers = 1, .proc = 0 };
	uint8_t out[256];
	size_t n;

	(void)state;
	h.read_seg = rs;
	h.nread_seg = 3;
	assert_int_equal(uiw_rpcrdma_encode(&h, out, sizeof(out), &n),
			 UIW_RPCRDMA_E_READ_SPLIT);
	rs[1].position = 6;
	assert_int_equal(uiw_rpcrdma_encode(&h, out, sizeof(out), &n),
			 UIW_RPCRDMA_E_POSITION);
	rs[1].position = 0;
	h.nread_seg = 2;
	assert_int_equal(uiw_rpcrdma_encode(&h, out, sizeof(out), &n),
			 UIW_RPCRDMA_E_POS0_MSG);
	h.proc = UIW_RDMA_NOMSG;
	assert_int_equal(uiw_rpcrdma_encode(&h, out, sizeof(out), &n), 0);
	h.nread_seg = 1;   /* only the chunk at 8 */
	assert_int_equal(uiw_rpcrdma_encode(&h, out, sizeof(out), &n),
			 UIW_RPCRDMA_E_NOMSG_EMPTY);
	h.reply_present = true;   /* an empty Reply chunk will do */
	assert_int_equal(uiw_rpcrdma_encode(&h, out, sizeof(out), &n), 0);
	h.vers = 2;
	assert_int_equal(uiw_rpcrdma_encode(&h, out, sizeof(out), &n),
			 UIW_RPCRDMA_E_VERS);
	h.vers = 1;
	/* a Write chunk naming segments past write_seg[] */
	h.write_seg = shape_writes;
	h.nwrite_seg = 2;
	h.write_chunk = &wc;
	h.nwrite_chunk = 1;
	assert_int_equal(uiw_rpcrdma_encode(&h, out, sizeof(out), &n),
			 UIW_RPCRDMA_E_CHUNK_RANGE);
	wc.first = 0xffffffff;
	assert_int_equal(uiw_rpcrdma_encode(&h, out, sizeof(out), &n),
			 UIW_RPCRDMA_E_CHUNK_RANGE);
	wc.first = 0;
	assert_int_equal(uiw_rpcrdma_encode(&h, out, sizeof(out), &n), 0);
	/* §4.6: never sent */
	h.proc = UIW_RDMA_MSGP;
	assert_int_equal(uiw_rpcrdma_encode(&h, out, sizeof(out), &n),
			 UIW_RPCRDMA_E_MSGP);
	h.proc = UIW_RDMA_DONE;
	assert_int_equal(uiw_rpcrdma_encode(&h, out, sizeof(out), &n),
			 UIW_RPCRDMA_E_DONE);
	h.proc = 5;
	assert_int_equal(uiw_rpcrdma_encode(&h, out, sizeof(out), &n),
			 UIW_RPCRDMA_E_PROC);
}

/* §4.6: RDMA_MSGP and RDMA_DONE as a receiver meets them. */
static void test_obsolete_procs(void **state)
{
	(void)state;
	/* RDMA_MSGP, rpc_rdma_header_padded (align 64, thresh 1024, three
	 * empty lists): a Responder SHOULD answer ERR_CHUNK, a Requester
	 * MUST drop it (§4.6.1) */
	EXPECT(NS, UIW_RPCRDMA_E_MSGP, 12, ERRCHUNK,
	       0x77, 1, 1, 2, 64, 1024, 0, 0, 0);
	/* the fixed words are there for the ERR_CHUNK reply */
	{
		static const uint32_t w[] = { 0x77, 1, 5, 2, 64, 1024, 0, 0,
					      0 };
		struct uiw_rpcrdma_hdr h;
		uint8_t buf[64], out[64];
		struct space s;

		space_init(&s, NS);
		assert_int_equal(decode_exact(buf, words(buf, w, 9), &s.sp, &h),
				 UIW_RPCRDMA_E_MSGP);
		assert_int_equal(h.xid, 0x77);
		assert_int_equal(uiw_rpcrdma_encode_err_reply(&h,
			uiw_rpcrdma_action(UIW_RPCRDMA_RESPONDER,
					   UIW_RPCRDMA_E_MSGP, &h),
			8, out, sizeof(out)), 20);
		assert_memory_equal(out, "\0\0\0\x77\0\0\0\x01\0\0\0\x08"
				    "\0\0\0\x04\0\0\0\x02", 20);
	}
	/* shorter than 28: discarded as §4.5 says, before any parsing */
	EXPECT(NS, UIW_RPCRDMA_E_SHORT, 24, UIW_RPCRDMA_ACT_DISCARD,
	       0x77, 1, 1, 2, 64, 1024);
	/* RDMA_DONE: 16 octets, "Receivers MUST silently discard" */
	EXPECT(NS, UIW_RPCRDMA_E_DONE, 12, UIW_RPCRDMA_ACT_DISCARD,
	       0x78, 1, 1, 3);
	EXPECT(NS, UIW_RPCRDMA_E_DONE, 12, UIW_RPCRDMA_ACT_DISCARD,
	       0x78, 1, 1, 3, 0, 0, 0, 0);
	assert_string_equal(uiw_rpcrdma_proc_name(2), "RDMA_MSGP");
	assert_string_equal(uiw_rpcrdma_proc_name(3), "RDMA_DONE");
	assert_string_equal(uiw_rpcrdma_proc_name(9), "unknown");
}

static void test_helpers(void **state)
{
	static const struct uiw_rpcrdma_seg big[2] = {
		{ 1, 0xffffffff, 0 }, { 2, 0xffffffff, 0 },
	};
	int e;

	(void)state;
	/* RFC 4506 §3: multiples of four */
	assert_true(uiw_xdr_roundup(0) == 0);
	assert_true(uiw_xdr_roundup(1) == 4);
	assert_true(uiw_xdr_roundup(3) == 4);
	assert_true(uiw_xdr_roundup(4) == 4);
	assert_true(uiw_xdr_roundup(5) == 8);
	assert_true(uiw_xdr_roundup(0xffffffff) == 0x100000000ull);
	assert_int_equal(uiw_xdr_pad(5), 3);
	assert_int_equal(uiw_xdr_pad(8), 0);
	assert_int_equal(uiw_xdr_pad(0xfffffffe), 2);
	/* chunk lengths do not wrap at 32 bits */
	assert_true(uiw_rpcrdma_segs_len(big, 2) == 0x1fffffffeull);
	assert_true(uiw_rpcrdma_segs_len(big, 0) == 0);
	for (e = 0; e < UIW_RPCRDMA_E_COUNT_; e++) {
		assert_non_null(uiw_rpcrdma_strerror(e));
		assert_string_not_equal(uiw_rpcrdma_err_name(e), "?");
	}
	assert_string_equal(uiw_rpcrdma_err_name(UIW_RPCRDMA_E_COUNT_), "?");
	assert_string_equal(uiw_rpcrdma_act_name(UIW_RPCRDMA_ACT_ERR_CHUNK),
			    "ERR_CHUNK");
}

/* ---- RFC 8797 ---------------------------------------------------------------- */

static void test_cm_vector(void **state)
{
	/* R set, Send Size 4096 -> 4096 / 1024 - 1 = 3, Receive Size
	 * 8192 -> 7 (§4.2) */
	static const uint8_t want[8] = {
		0xf6, 0xab, 0x0e, 0x18,   /* Format Identifier */
		0x01,                     /* Version 1 */
		0x01,                     /* Reserved 0, R (bit 15) = 1 */
		0x03,                     /* Send Size */
		0x07,                     /* Receive Size */
	};
	struct uiw_rpcrdma_cm cm;
	uint8_t out[8];

	(void)state;
	assert_int_equal(uiw_rpcrdma_cm_encode(out, true, 4096, 8192), 8);
	assert_memory_equal(out, want, 8);
	uiw_rpcrdma_cm_decode(want, 8, &cm);
	assert_true(cm.present);
	assert_true(cm.remote_inv);
	assert_int_equal(cm.send_size, 4096);
	assert_int_equal(cm.recv_size, 8192);
	assert_int_equal(cm.offset, 0);
	/* §4: the Reserved bits are ignored */
	memcpy(out, want, 8);
	out[5] = 0xfe;
	uiw_rpcrdma_cm_decode(out, 8, &cm);
	assert_true(cm.present);
	assert_false(cm.remote_inv);
	/* the defaults, sizes 0 -> 1024 */
	assert_int_equal(uiw_rpcrdma_cm_encode(out, false, 1024, 1024), 8);
	assert_memory_equal(out, "\xf6\xab\x0e\x18\x01\x00\x00\x00", 8);
}

static void test_cm_defaults(void **state)
{
	static const uint8_t v2[8] = { 0xf6, 0xab, 0x0e, 0x18, 2, 1, 3, 7 };
	static const uint8_t foreign[12] = "nvme-rdma-pd";
	struct uiw_rpcrdma_cm cm;
	uint8_t buf[32];

	(void)state;
	/* RFC 8797 §5.1: no message = R clear, 1024 both ways */
	uiw_rpcrdma_cm_decode(NULL, 0, &cm);
	assert_false(cm.present);
	assert_false(cm.remote_inv);
	assert_int_equal(cm.send_size, UIW_RPCRDMA_INLINE_DEFAULT);
	assert_int_equal(cm.recv_size, UIW_RPCRDMA_INLINE_DEFAULT);
	uiw_rpcrdma_cm_decode(foreign, sizeof(foreign), &cm);
	assert_false(cm.present);
	assert_int_equal(cm.send_size, 1024);
	/* an unknown Version: not ours (§5.2, §6) */
	uiw_rpcrdma_cm_decode(v2, 8, &cm);
	assert_false(cm.present);
	assert_false(cm.remote_inv);
	assert_int_equal(cm.recv_size, 1024);
	/* cut short: the message may not overrun the buffer (§5.2) */
	assert_int_equal(uiw_rpcrdma_cm_encode(buf, true, 65536, 65536), 8);
	uiw_rpcrdma_cm_decode(buf, 7, &cm);
	assert_false(cm.present);
	/* at any alignment, after other data; a version-2 candidate first
	 * does not hide it */
	memcpy(buf, v2, 8);
	buf[8] = 0x55;
	assert_int_equal(uiw_rpcrdma_cm_encode(buf + 9, true, 65536, 2048), 8);
	uiw_rpcrdma_cm_decode(buf, 17, &cm);
	assert_true(cm.present);
	assert_int_equal(cm.offset, 9);
	assert_true(cm.remote_inv);
	assert_int_equal(cm.send_size, 65536);
	assert_int_equal(cm.recv_size, 2048);
	uiw_rpcrdma_cm_decode(buf, 16, &cm);
	assert_false(cm.present);
}

static void test_cm_sizes(void **state)
{
	struct uiw_rpcrdma_cm cm;
	uint8_t out[8];
	unsigned f;

	(void)state;
	for (f = 0; f < 256; f++) {
		uint32_t size = uiw_rpcrdma_cm_size_decode((uint8_t)f);

		assert_int_equal(size, (f + 1) * 1024);
		assert_int_equal(uiw_rpcrdma_cm_size_encode(size), f);
		assert_int_equal(uiw_rpcrdma_cm_encode(out, f & 1, size,
						       262144 - f * 1024), 8);
		uiw_rpcrdma_cm_decode(out, 8, &cm);
		assert_true(cm.present);
		assert_int_equal(cm.remote_inv, f & 1);
		assert_int_equal(cm.send_size, size);
		assert_int_equal(cm.recv_size, 262144 - f * 1024);
	}
	/* rounded down, capped: never more than one has */
	assert_int_equal(uiw_rpcrdma_cm_size_encode(5000), 3);
	assert_int_equal(uiw_rpcrdma_cm_size_encode(2047), 0);
	assert_int_equal(uiw_rpcrdma_cm_size_encode(262144), 255);
	assert_int_equal(uiw_rpcrdma_cm_size_encode(1u << 30), 255);
	/* under RFC 8166's 1024: refused */
	memset(out, 0xee, 8);
	assert_int_equal(uiw_rpcrdma_cm_encode(out, false, 1023, 4096), -1);
	assert_int_equal(uiw_rpcrdma_cm_encode(out, false, 4096, 0), -1);
	assert_int_equal(out[0], 0xee);
}

static void test_cm_mpa_v2_word(void **state)
{
	/* raw MPA revision 2 private data: the RFC 6581 §9.1 word (A, IRD
	 * 16; ORD 8) and then the RFC 8797 message */
	static const uint8_t raw[12] = {
		0x80, 0x10, 0x00, 0x08,
		0xf6, 0xab, 0x0e, 0x18, 0x01, 0x00, 0x0f, 0x1f,
	};
	struct uiw_rpcrdma_cm cm;
	const uint8_t *ulp;
	size_t n = 99;

	(void)state;
	ulp = uiw_rpcrdma_cm_skip_mpa_v2(raw, sizeof(raw), &n);
	assert_ptr_equal(ulp, raw + 4);
	assert_int_equal(n, 8);
	uiw_rpcrdma_cm_decode(ulp, n, &cm);
	assert_true(cm.present);
	assert_int_equal(cm.offset, 0);
	assert_int_equal(cm.send_size, 16 * 1024);
	assert_int_equal(cm.recv_size, 32 * 1024);
	assert_null(uiw_rpcrdma_cm_skip_mpa_v2(raw, 3, &n));
	ulp = uiw_rpcrdma_cm_skip_mpa_v2(raw, 4, &n);
	assert_non_null(ulp);
	assert_int_equal(n, 0);
	uiw_rpcrdma_cm_decode(ulp, n, &cm);
	assert_false(cm.present);
}

static void test_cm_thresholds(void **state)
{
	struct uiw_rpcrdma_cm local = { true, true, 8192, 4096, 0 }, peer;
	uint8_t pd[8];
	uint32_t snd, rcv;
	bool rinv;

	(void)state;
	/* a peer without the message: RFC 8166's 1024, no invalidation */
	uiw_rpcrdma_cm_decode(NULL, 0, &peer);
	uiw_rpcrdma_cm_thresholds(&local, &peer, &snd, &rcv, &rinv);
	assert_int_equal(snd, 1024);
	assert_int_equal(rcv, 1024);
	assert_false(rinv);
	/* §4.2: each direction the smaller of sender's send size and
	 * receiver's receive size; §4.1: R from both */
	uiw_rpcrdma_cm_encode(pd, true, 262144, 2048);
	uiw_rpcrdma_cm_decode(pd, 8, &peer);
	uiw_rpcrdma_cm_thresholds(&local, &peer, &snd, &rcv, &rinv);
	assert_int_equal(snd, 2048);
	assert_int_equal(rcv, 4096);
	assert_true(rinv);
	local.remote_inv = false;
	uiw_rpcrdma_cm_thresholds(&local, &peer, &snd, &rcv, &rinv);
	assert_false(rinv);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_vec_msg_plain),
		cmocka_unit_test(test_vec_read_chunk),
		cmocka_unit_test(test_vec_write_list),
		cmocka_unit_test(test_vec_reply_chunk),
		cmocka_unit_test(test_vec_errors),
		cmocka_unit_test(test_roundtrip_shapes),
		cmocka_unit_test(test_truncated_everywhere),
		cmocka_unit_test(test_decode_errors),
		cmocka_unit_test(test_encode_refusals),
		cmocka_unit_test(test_obsolete_procs),
		cmocka_unit_test(test_helpers),
		cmocka_unit_test(test_cm_vector),
		cmocka_unit_test(test_cm_defaults),
		cmocka_unit_test(test_cm_sizes),
		cmocka_unit_test(test_cm_mpa_v2_word),
		cmocka_unit_test(test_cm_thresholds),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
