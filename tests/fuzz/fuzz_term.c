/*
 * uiw_term_decode and uiw_term_encode (RFC 5040 §4.8, the layout and
 * the siw fallback that ddp.h describes): every decode is compared with
 * a reference reading of the control field and the copied headers, for
 * the input and for each of its prefixes; what decodes re-encodes in the
 * RFC layout to the same octets (for an RFC reading, up to the reserved
 * bits and a Segment Length sent without M) and decodes again to the
 * same cause; the cause always has a name and a completion status.  A
 * Terminate built from the input survives encode and decode.
 *
 * Input: the Terminate payload (what follows the untagged DDP header).
 */
#include "fuzz.h"
#include <uiwarp/uiwarp.h>
#include "wire/ddp.h"

/* RFC 5040 §4.8: Read Request headers are the only RDMA headers. */
static size_t rdmap_len(bool d, const uint8_t *ddp)
{
	return !d || (ddp[1] & 0xf) == 0x1 ? 28 : 0;
}

static void check_cause(uiw_err_t e)
{
	const char *s = uiw_err_str(e);
	int st0 = uiw_err_wc_status(e, 0), st1 = uiw_err_wc_status(e, 1);

	FZ_CHECK(s && strlen(s) > 0 && strlen(s) < 100,
		 "cause %#x has no usable name", e);
	FZ_CHECK(st0 > UIW_WC_SUCCESS && st0 <= UIW_WC_GENERAL_ERR &&
		 st1 > UIW_WC_SUCCESS && st1 <= UIW_WC_GENERAL_ERR,
		 "cause %#x: completion status %d / %d", e, st0, st1);
}

static void ref_ctrl(const uint8_t *c, struct uiw_term *t)
{
	uiw_err_t rfc = UIW_ERR(c[0] >> 4, c[0] & 0xf, c[1]);
	uiw_err_t swp = UIW_ERR(c[0] & 0xf, c[0] >> 4, c[1]);
	/* ddp.h: the RFC reading unless it is implausible and the swapped
	 * (siw) one is plausible */
	bool rfc_bad = !uiw_err_known(rfc) ||
		       ((c[2] & 0xe0) == 0 && (c[2] & 0x07) != 0);
	bool swp_good = uiw_err_known(swp) && (c[2] & 0xf8) == 0;

	if (rfc_bad && swp_good) {
		t->err = swp;
		t->m = c[2] & 1;
		t->d = c[2] & 2;
		t->r = c[2] & 4;
		t->siw_layout = true;
	} else {
		t->err = rfc;
		t->m = c[2] & 0x80;
		t->d = c[2] & 0x40;
		t->r = c[2] & 0x20;
	}
}

/* The reference decoder; returns the octets the Terminate takes. */
static uiw_err_t ref_decode(const uint8_t *b, size_t len, struct uiw_term *t,
			    size_t *need)
{
	size_t at = 4, n;

	memset(t, 0, sizeof(*t));
	*need = 0;
	if (len < 3)
		return UIW_E_RDMAP_OP_UNSPEC;
	ref_ctrl(b, t);
	if (len < 4)
		return UIW_E_RDMAP_OP_UNSPEC;
	if (t->m || t->d) {
		if (len < at + 2)
			return UIW_E_RDMAP_OP_UNSPEC;
		if (t->m)
			t->ddp_seg_len = ref_be16(b + at);
		at += 2;
	}
	if (t->d) {
		if (len < at + 1)
			return UIW_E_RDMAP_OP_UNSPEC;
		n = (b[at] & 0x80) ? 14 : 18;
		if (len < at + n)
			return UIW_E_RDMAP_OP_UNSPEC;
		memcpy(t->ddp_hdr, b + at, n);
		t->ddp_hdr_len = (uint8_t)n;
		at += n;
	}
	if (t->r) {
		n = rdmap_len(t->d, t->ddp_hdr);
		if (len < at + n)
			return UIW_E_RDMAP_OP_UNSPEC;
		memcpy(t->rdmap_hdr, b + at, n);
		t->rdmap_hdr_len = (uint8_t)n;
		at += n;
	}
	*need = at;
	return UIW_OK;
}

static bool same_term(const struct uiw_term *a, const struct uiw_term *b)
{
	return a->err == b->err && a->m == b->m && a->d == b->d &&
	       a->r == b->r && a->ddp_seg_len == b->ddp_seg_len &&
	       a->ddp_hdr_len == b->ddp_hdr_len &&
	       !memcmp(a->ddp_hdr, b->ddp_hdr, a->ddp_hdr_len) &&
	       a->rdmap_hdr_len == b->rdmap_hdr_len &&
	       !memcmp(a->rdmap_hdr, b->rdmap_hdr, a->rdmap_hdr_len);
}

static void check(const uint8_t *src, size_t len)
{
	uint8_t *buf = fz_dup(src, len), *out, *again;
	struct uiw_term t, r, g;
	uiw_err_t err, want;
	size_t need, w;

	memset(&t, 0x5a, sizeof(t));
	err = uiw_term_decode(buf, len, &t);
	want = ref_decode(buf, len, &r, &need);
	FZ_CHECK(err == want, "len %zu: err %#x, reference %#x", len, err,
		 want);
	FZ_CHECK(same_term(&t, &r) && t.siw_layout == r.siw_layout,
		 "len %zu: decoded fields differ from the reference (err %#x "
		 "m%d d%d r%d siw%d, reference %#x m%d d%d r%d siw%d)", len,
		 t.err, t.m, t.d, t.r, t.siw_layout, r.err, r.m, r.d, r.r,
		 r.siw_layout);
	if (len >= 3)
		check_cause(t.err);
	if (err != UIW_OK) {
		free(buf);
		return;
	}
	/* re-encode: exactly the octets it took, in the RFC layout */
	out = fz_alloc(need);
	FZ_CHECK(uiw_term_encode(out, need - 1, &t) == 0,
		 "encoded %zu octets into %zu", need, need - 1);
	w = uiw_term_encode(out, need, &t);
	FZ_CHECK(w == need, "decoded Terminate of %zu octets re-encodes to "
		 "%zu", need, w);
	FZ_CHECK(out[0] == (UIW_ERR_LAYER(t.err) << 4 | UIW_ERR_ETYPE(t.err)) &&
		 out[1] == UIW_ERR_ECODE(t.err) &&
		 out[2] == ((t.m ? 0x80 : 0) | (t.d ? 0x40 : 0) |
			    (t.r ? 0x20 : 0)) && out[3] == 0,
		 "control field re-encodes as %02x %02x %02x %02x", out[0],
		 out[1], out[2], out[3]);
	if (!t.siw_layout) {
		/* the same octets but for the reserved bits, and a segment
		 * length that is sent as zero without M */
		size_t from = (t.m || t.d) ? 6 : 4;

		FZ_CHECK(out[0] == buf[0] && out[1] == buf[1] &&
			 out[2] == (buf[2] & 0xe0) &&
			 !memcmp(out + from, buf + from, need - from),
			 "RFC-layout Terminate of %zu octets re-encodes "
			 "differently", need);
		if (t.m)
			FZ_CHECK(!memcmp(out + 4, buf + 4, 2),
				 "segment length re-encodes differently");
		else if (t.d)
			FZ_CHECK(out[4] == 0 && out[5] == 0,
				 "segment length sent without M");
	}
	/* and reads back as the same cause, in the RFC layout, whenever the
	 * cause is one the RFCs define (an undefined triple may read as
	 * siw's layout once reserved bits are cleared) */
	again = fz_dup(out, need);
	FZ_CHECK(uiw_term_decode(again, need, &g) == UIW_OK,
		 "re-encoded Terminate does not decode");
	if (uiw_err_known(t.err)) {
		FZ_CHECK(same_term(&g, &t) && !g.siw_layout,
			 "re-encoded Terminate reads as %#x m%d d%d r%d siw%d, "
			 "was %#x m%d d%d r%d", g.err, g.m, g.d, g.r,
			 g.siw_layout, t.err, t.m, t.d, t.r);
	}
	free(again);
	free(out);
	free(buf);
}

/* A Terminate built from the input: encode, decode. */
static void build(struct fz *in)
{
	struct uiw_term t, g;
	uint8_t fl = fz_u8(in), *out, *buf;
	uint8_t layer = fz_u8(in) & 0xf, etype = fz_u8(in) & 0xf;
	size_t w, need;
	bool good;

	memset(&t, 0, sizeof(t));
	t.err = UIW_ERR(layer, etype, fz_u8(in));
	t.m = fl & 1;
	t.d = fl & 2;
	t.r = fl & 4;
	t.ddp_seg_len = fz_u16(in);
	for (w = 0; w < sizeof(t.ddp_hdr); w++)
		t.ddp_hdr[w] = fz_u8(in);
	for (w = 0; w < sizeof(t.rdmap_hdr); w++)
		t.rdmap_hdr[w] = fz_u8(in);
	t.ddp_hdr_len = (t.ddp_hdr[0] & 0x80) ? 14 : 18;
	t.rdmap_hdr_len = (uint8_t)rdmap_len(t.d, t.ddp_hdr);
	if (fl & 8)    /* a wrong copied DDP header length */
		t.ddp_hdr_len = (uint8_t)(fz_u8(in) % 19);
	if (fl & 16)   /* a wrong copied RDMA header length */
		t.rdmap_hdr_len = (uint8_t)(fz_u8(in) % 29);
	if (!t.d)
		t.ddp_hdr_len = 0;
	if (!t.r)
		t.rdmap_hdr_len = 0;
	/* ddp.h: lengths must agree with the copied headers */
	good = (!t.d || t.ddp_hdr_len == ((t.ddp_hdr[0] & 0x80) ? 14 : 18)) &&
	       (!t.r || t.rdmap_hdr_len == rdmap_len(t.d, t.ddp_hdr));
	need = 4 + ((t.m || t.d) ? 2 : 0) + (t.d ? t.ddp_hdr_len : 0) +
	       (t.r ? t.rdmap_hdr_len : 0);
	out = fz_alloc(UIW_TERM_MAX_LEN);
	w = uiw_term_encode(out, UIW_TERM_MAX_LEN, &t);
	FZ_CHECK(w == (good ? need : 0), "m%d d%d r%d ddp %u rdma %u: encoded "
		 "%zu, want %zu", t.m, t.d, t.r, t.ddp_hdr_len,
		 t.rdmap_hdr_len, w, good ? need : 0);
	if (!w) {
		free(out);
		return;
	}
	buf = fz_dup(out, w);
	FZ_CHECK(uiw_term_decode(buf, w, &g) == UIW_OK,
		 "encoded Terminate does not decode");
	if (!t.m)
		t.ddp_seg_len = 0;
	if (uiw_err_known(t.err))
		FZ_CHECK(same_term(&g, &t) && !g.siw_layout,
			 "Terminate %#x m%d d%d r%d reads back as %#x m%d d%d "
			 "r%d siw%d", t.err, t.m, t.d, t.r, g.err, g.m, g.d,
			 g.r, g.siw_layout);
	check(buf, w);
	free(buf);
	free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz in = { data, size };
	size_t i;

	for (i = 0; i <= size && i <= UIW_TERM_MAX_LEN + 1; i++)
		check(data, i);
	if (size > UIW_TERM_MAX_LEN + 1)
		check(data, size);
	build(&in);
	return 0;
}
