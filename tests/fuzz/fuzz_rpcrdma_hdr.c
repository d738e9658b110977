/*
 * uiw_rpcrdma_decode / _encode (src/rpcrdma/rpcrdma_hdr.c, RFC 8166
 * §4): any octets decode or are refused with the error a reading of the
 * fixed words calls for; whatever decodes obeys the RFC's rules (counts
 * within the caller's bounds, Positions multiples of 4, one Position per
 * Read chunk, RDMA_MSG without and RDMA_NOMSG with a chunk for its
 * Payload stream), re-encodes to its own octets and decodes again to the
 * same header; every shorter prefix of it is refused, never read past;
 * larger bounds change nothing.  Headers built from the input encode, or
 * are refused without a write, and decode back.
 *
 * Input: bounds(1: four bits each for the segment and chunk maxima)
 * then the header as received; the same octets then give the fields of
 * a header to encode.
 */
#include "fuzz.h"
#include "rpcrdma/rpcrdma_hdr.h"

#define BIG 64

struct space {
	struct uiw_rpcrdma_read_seg rs[BIG];
	struct uiw_rpcrdma_chunk rc[BIG];
	struct uiw_rpcrdma_seg ws[BIG];
	struct uiw_rpcrdma_chunk wc[BIG];
	struct uiw_rpcrdma_seg ps[BIG];
	struct uiw_rpcrdma_space sp;
};

static void space_init(struct space *s, uint32_t segs, uint32_t chunks)
{
	s->sp = (struct uiw_rpcrdma_space){ s->rs, segs, s->rc, chunks, s->ws,
					    segs, s->wc, chunks, s->ps, segs };
}

static enum uiw_rpcrdma_err dec(const uint8_t *p, size_t n,
				const struct space *s, struct uiw_rpcrdma_hdr *h)
{
	uint8_t *q = fz_dup(p, n);
	enum uiw_rpcrdma_err e = uiw_rpcrdma_decode(q, n, &s->sp, h);

	free(q);
	return e;
}

/* RFC 8166 §4.2, §4.5, §4.6 read from the fixed words alone: the error
 * that must come before any list is looked at, or OK to go on. */
FZ_REF
static enum uiw_rpcrdma_err ref_fixed(const uint8_t *b, size_t n)
{
	uint32_t vers, proc;

	if (n < 16)
		return UIW_RPCRDMA_E_SHORT;
	vers = ref_be32(b + 4);
	proc = ref_be32(b + 12);
	if (vers != 1 || proc > 4)
		return n < 28 ? UIW_RPCRDMA_E_SHORT :
			vers != 1 ? UIW_RPCRDMA_E_VERS : UIW_RPCRDMA_E_PROC;
	if (proc == 3)
		return UIW_RPCRDMA_E_DONE;
	if (proc == 4)
		return n < 20 ? UIW_RPCRDMA_E_SHORT : UIW_RPCRDMA_OK;
	if (n < 28)
		return UIW_RPCRDMA_E_SHORT;
	return proc == 2 ? UIW_RPCRDMA_E_MSGP : UIW_RPCRDMA_OK;
}

/* field by field: the struct has padding after position */
static bool rseg_eq(const struct uiw_rpcrdma_read_seg *a,
		    const struct uiw_rpcrdma_read_seg *b, uint32_t n)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		if (a[i].position != b[i].position ||
		    a[i].target.handle != b[i].target.handle ||
		    a[i].target.length != b[i].target.length ||
		    a[i].target.offset != b[i].target.offset)
			return false;
	return true;
}

static void same_hdr(const struct uiw_rpcrdma_hdr *a,
		     const struct uiw_rpcrdma_hdr *b)
{
	uint32_t i;

	FZ_CHECK(a->xid == b->xid && a->vers == b->vers &&
		 a->credit == b->credit && a->proc == b->proc &&
		 a->hdr_len == b->hdr_len, "fixed words or length differ");
	if (a->proc == UIW_RDMA_ERROR) {
		FZ_CHECK(a->err == b->err && (a->err != 1 ||
			 (a->vers_low == b->vers_low &&
			  a->vers_high == b->vers_high)), "error body differs");
		return;
	}
	FZ_CHECK(a->nread_seg == b->nread_seg &&
		 a->nread_chunk == b->nread_chunk &&
		 a->nwrite_chunk == b->nwrite_chunk &&
		 a->nwrite_seg == b->nwrite_seg &&
		 a->reply_present == b->reply_present &&
		 a->nreply_seg == b->nreply_seg, "list sizes differ");
	FZ_CHECK(rseg_eq(a->read_seg, b->read_seg, a->nread_seg),
		 "read segments differ");
	for (i = 0; i < a->nread_chunk; i++)
		FZ_CHECK(!memcmp(&a->read_chunk[i], &b->read_chunk[i],
				 sizeof(a->read_chunk[i])), "read chunk %u", i);
	for (i = 0; i < a->nwrite_chunk; i++)
		FZ_CHECK(a->write_chunk[i].first == b->write_chunk[i].first &&
			 a->write_chunk[i].nseg == b->write_chunk[i].nseg,
			 "write chunk %u", i);
	for (i = 0; i < a->nwrite_seg; i++)
		FZ_CHECK(!memcmp(&a->write_seg[i], &b->write_seg[i],
				 sizeof(a->write_seg[i])), "write segment %u", i);
	for (i = 0; i < a->nreply_seg; i++)
		FZ_CHECK(!memcmp(&a->reply_seg[i], &b->reply_seg[i],
				 sizeof(a->reply_seg[i])), "reply segment %u", i);
}

/* The RFC's rules on a decoded RDMA_MSG / RDMA_NOMSG. */
static void check_rules(const struct uiw_rpcrdma_hdr *h, uint32_t segs,
			uint32_t chunks)
{
	uint32_t i, j, next = 0;
	bool pos0 = false;

	FZ_CHECK(h->nread_seg <= segs && h->nread_chunk <= chunks &&
		 h->nwrite_seg <= segs && h->nwrite_chunk <= chunks &&
		 h->nreply_seg <= segs && (h->reply_present || !h->nreply_seg),
		 "bounds exceeded");
	for (i = 0; i < h->nread_chunk; i++) {
		const struct uiw_rpcrdma_chunk *c = &h->read_chunk[i];

		FZ_CHECK(c->first == next && c->nseg > 0, "chunk %u not in order",
			 i);
		FZ_CHECK(!(c->position & 3), "Position %u", c->position);
		for (j = 0; j < c->nseg; j++)
			FZ_CHECK(h->read_seg[c->first + j].position == c->position,
				 "a segment of chunk %u elsewhere", i);
		for (j = 0; j < i; j++)
			FZ_CHECK(h->read_chunk[j].position != c->position,
				 "two chunks at %u", c->position);
		pos0 |= c->position == 0;
		next += c->nseg;
	}
	FZ_CHECK(next == h->nread_seg, "segments outside chunks");
	next = 0;
	for (i = 0; i < h->nwrite_chunk; i++) {
		FZ_CHECK(h->write_chunk[i].first == next, "write chunk order");
		next += h->write_chunk[i].nseg;
	}
	FZ_CHECK(next == h->nwrite_seg, "write segments outside chunks");
	FZ_CHECK(h->proc == UIW_RDMA_MSG ? !pos0 : pos0 || h->reply_present,
		 "procedure %u with pos0 %d reply %d", h->proc, pos0,
		 h->reply_present);
}

static void decode_side(const uint8_t *data, size_t size)
{
	uint32_t segs = size ? data[0] & 15 : 0, chunks = size ? data[0] >> 4 : 0;
	const uint8_t *b = size ? data + 1 : data;
	size_t n = size ? size - 1 : 0, len, k;
	struct uiw_rpcrdma_hdr h, h2, h3;
	struct space s, s2, s3;
	enum uiw_rpcrdma_err e, want = ref_fixed(b, n);
	uint8_t *out;

	space_init(&s, segs, chunks);
	e = dec(b, n, &s, &h);
	FZ_CHECK(e < UIW_RPCRDMA_E_COUNT_ && uiw_rpcrdma_strerror(e),
		 "error %d has no text", e);
	if (want != UIW_RPCRDMA_OK)
		FZ_CHECK(e == want, "decode gave %s, the fixed words call for %s",
			 uiw_rpcrdma_err_name(e), uiw_rpcrdma_err_name(want));
	if (n >= 16)
		FZ_CHECK(h.xid == ref_be32(b) && h.vers == ref_be32(b + 4) &&
			 h.credit == ref_be32(b + 8) && h.proc == ref_be32(b + 12),
			 "fixed words misread");
	(void)uiw_rpcrdma_action(UIW_RPCRDMA_RESPONDER, e, &h);
	if (e) {
		FZ_CHECK(h.bad_off <= n, "error at %zu past %zu", h.bad_off, n);
		/* the Responder's answer to it encodes */
		{
			uint8_t r[32];
			int m = uiw_rpcrdma_encode_err_reply(&h,
				uiw_rpcrdma_action(UIW_RPCRDMA_RESPONDER, e, &h),
				7, r, sizeof(r));

			FZ_CHECK(m == 0 || m == 20 || m == 28, "reply of %d", m);
		}
		return;
	}
	FZ_CHECK(h.hdr_len >= 20 && h.hdr_len <= n && !(h.hdr_len & 3),
		 "hdr_len %zu of %zu", h.hdr_len, n);
	FZ_CHECK(h.proc == UIW_RDMA_MSG || h.proc == UIW_RDMA_NOMSG ||
		 h.proc == UIW_RDMA_ERROR, "procedure %u decoded", h.proc);
	if (h.proc != UIW_RDMA_ERROR)
		check_rules(&h, segs, chunks);

	/* decode, encode, decode: the same octets and the same header */
	out = fz_alloc(h.hdr_len);
	FZ_CHECK(uiw_rpcrdma_encoded_len(&h, &len) == 0 && len == h.hdr_len,
		 "encoded length %zu, decoded %zu", len, h.hdr_len);
	FZ_CHECK(uiw_rpcrdma_encode(&h, out, h.hdr_len, &len) == 0 &&
		 len == h.hdr_len, "a decoded header does not encode");
	FZ_CHECK(!memcmp(out, b, len), "re-encoded octet %zu differs",
		 fz_diff(out, b, len));
	space_init(&s2, BIG, BIG);
	FZ_CHECK(dec(out, len, &s2, &h2) == 0, "re-encoded header refused");
	same_hdr(&h, &h2);
	free(out);

	/* larger bounds change nothing */
	space_init(&s3, BIG, BIG);
	FZ_CHECK(dec(b, n, &s3, &h3) == 0, "refused with larger bounds");
	same_hdr(&h, &h3);

	/* every prefix is refused (the header is all needed) */
	for (k = 0; k < h.hdr_len; k += k < 64 ? 1 : 13) {
		space_init(&s3, segs, chunks);
		FZ_CHECK(dec(b, k, &s3, &h3) != 0, "prefix of %zu accepted", k);
	}
}

static void encode_side(const uint8_t *data, size_t size)
{
	struct uiw_rpcrdma_read_seg rs[8];
	struct uiw_rpcrdma_seg ws[8], ps[8];
	struct uiw_rpcrdma_chunk wc[4];
	struct uiw_rpcrdma_hdr h = { 0 }, d;
	struct fz in = { data, size };
	struct space s;
	uint8_t out[1024];
	enum uiw_rpcrdma_err e;
	size_t len, i, elen;
	uint32_t left;

	h.xid = fz_u32(&in);
	h.vers = fz_u8(&in) & 0x80 ? fz_u32(&in) : 1;
	h.credit = fz_u32(&in);
	h.proc = fz_u8(&in) % 6;
	h.err = fz_u8(&in) % 4;
	h.vers_low = fz_u32(&in);
	h.vers_high = fz_u32(&in);
	h.nread_seg = fz_u8(&in) % 9;
	for (i = 0; i < h.nread_seg; i++) {
		uint8_t p = fz_u8(&in);

		/* mostly a few aligned Positions, sometimes anything */
		rs[i].position = p & 0x80 ? fz_u32(&in) : (p & 3) * 4u;
		rs[i].target.handle = fz_u32(&in);
		rs[i].target.length = fz_u32(&in);
		rs[i].target.offset = fz_u64(&in);
	}
	h.nwrite_seg = fz_u8(&in) % 9;
	for (i = 0; i < h.nwrite_seg; i++)
		ws[i] = (struct uiw_rpcrdma_seg){ fz_u32(&in), fz_u32(&in),
						  fz_u64(&in) };
	h.nwrite_chunk = fz_u8(&in) % 5;
	left = h.nwrite_seg;
	for (i = 0; i < h.nwrite_chunk; i++) {
		uint8_t c = fz_u8(&in);

		wc[i].first = h.nwrite_seg - left;
		wc[i].nseg = c % (left + 1);
		if (c & 0x80)      /* now and then out of range */
			wc[i].first += fz_u8(&in);
		left -= wc[i].nseg;
	}
	h.reply_present = fz_u8(&in) & 1;
	h.nreply_seg = h.reply_present ? fz_u8(&in) % 9 : 0;
	for (i = 0; i < h.nreply_seg; i++)
		ps[i] = (struct uiw_rpcrdma_seg){ fz_u32(&in), fz_u32(&in),
						  fz_u64(&in) };
	h.read_seg = rs;
	h.write_seg = ws;
	h.write_chunk = wc;
	h.reply_seg = ps;

	memset(out, 0xee, sizeof(out));
	e = uiw_rpcrdma_encode(&h, out, sizeof(out), &len);
	if (e) {
		FZ_CHECK(fz_all(out, sizeof(out), 0xee), "a refused encode wrote");
		FZ_CHECK(uiw_rpcrdma_encoded_len(&h, &elen) == e,
			 "encoded_len and encode disagree");
		return;
	}
	FZ_CHECK(fz_all(out + len, sizeof(out) - len, 0xee),
		 "encode wrote past its length");
	FZ_CHECK(h.proc <= 1 || h.proc == 4, "procedure %u encoded", h.proc);
	space_init(&s, BIG, BIG);
	e = dec(out, len, &s, &d);
	if (h.vers != 1) {
		/* only an RDMA_ERROR echoing another version (§4.5); the
		 * 20 octets of ERR_CHUNK are under §4.5's minimum then */
		FZ_CHECK(h.proc == 4 && e == (len < 28 ? UIW_RPCRDMA_E_SHORT :
					      UIW_RPCRDMA_E_VERS),
			 "version %u encoded for procedure %u", h.vers, h.proc);
		return;
	}
	FZ_CHECK(e == 0, "an encoded header does not decode: %s",
		 uiw_rpcrdma_strerror(e));
	FZ_CHECK(d.hdr_len == len && d.xid == h.xid && d.credit == h.credit &&
		 d.proc == h.proc, "fixed words do not round-trip");
	if (h.proc == 4) {
		FZ_CHECK(d.err == h.err && (h.err != 1 ||
			 (d.vers_low == h.vers_low && d.vers_high == h.vers_high)),
			 "RDMA_ERROR does not round-trip");
		return;
	}
	FZ_CHECK(d.nread_seg == h.nread_seg &&
		 rseg_eq(d.read_seg, rs, h.nread_seg),
		 "Read list does not round-trip");
	FZ_CHECK(d.nwrite_chunk == h.nwrite_chunk, "Write chunk count");
	for (i = 0; i < h.nwrite_chunk; i++)
		FZ_CHECK(d.write_chunk[i].nseg == wc[i].nseg &&
			 !memcmp(d.write_seg + d.write_chunk[i].first,
				 ws + wc[i].first, wc[i].nseg * sizeof(ws[0])),
			 "Write chunk %zu does not round-trip", i);
	FZ_CHECK(d.reply_present == h.reply_present &&
		 d.nreply_seg == h.nreply_seg &&
		 !memcmp(d.reply_seg, ps, h.nreply_seg * sizeof(ps[0])),
		 "Reply chunk does not round-trip");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	decode_side(data, size);
	encode_side(data, size);
	return 0;
}
