/*
 * The splicing decoder of src/rpcrdma/rr_xdr.c (RFC 8166 §3.4.6.1): a
 * reply's reduced results stream and the Write chunks it points at,
 * from the input, decoded by a small results type with two bounded
 * opaque bodies (libtirpc's own xdr_bytes): the decoder
 * never reads past the stream or a chunk; a result taken from chunk k
 * is chunk k's content and as long as its inline length word says;
 * the decoder's position is the unreduced stream's; and whatever
 * decodes, the splitting encoder writes again with as many octets
 * inline and the same reduced pieces.
 *
 * Input: c0 (bit 0: only the first body is eligible, else each; bits
 * 1-2: Write chunks offered, 0 to 2), then per chunk a 16-bit count of
 * octets the Responder wrote (the chunk offered is that long plus c0's
 * high nibble), then the stream.
 */
#include <rpc/rpc.h>

#include "fuzz.h"
#include "rr_xdr.h"

#define FZ_MAX1 65536
#define FZ_MAX2 4096

struct fz_res {
	uint32_t status;
	u_int n1;
	char *b1;       /* opaque b1<FZ_MAX1> */
	u_int n2;
	char *b2;       /* opaque b2<FZ_MAX2> */
};

/* union switch (status) { case 0: opaque b1<>; opaque b2<>; }
 * (opaque, not string: a string with a NUL in it decodes longer than
 * it encodes again) */
static bool_t xdr_fz_res(XDR *x, struct fz_res *r)
{
	if (!xdr_uint32_t(x, &r->status))
		return FALSE;
	if (r->status)
		return TRUE;
	return xdr_bytes(x, &r->b1, &r->n1, FZ_MAX1) &&
	       xdr_bytes(x, &r->b2, &r->n2, FZ_MAX2);
}

static const struct uiw_rpcrdma_ddp_rule first[] = {
	{ 7, 1, 1, UIW_RPCRDMA_RESULTS, 1, 0, 0, NULL, NULL },
};
static const struct uiw_rpcrdma_ddp_rule each[] = {
	{ 7, 1, 1, UIW_RPCRDMA_RESULTS, 0, 0, 0, NULL, NULL },
};
static const struct uiw_rpcrdma_ulb ulb_first = { .rules = first, .nrules = 1 };
static const struct uiw_rpcrdma_ulb ulb_each = { .rules = each, .nrules = 1 };

static unsigned pad(size_t n)
{
	return (unsigned)((4 - (n & 3)) & 3);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz f = { data, size };
	uint8_t c0 = fz_u8(&f);
	struct uiw_rr_sel sel = { (c0 & 1) ? &ulb_first : &ulb_each, 7, 1, 1,
				  UIW_RPCRDMA_RESULTS };
	unsigned nwt = (c0 >> 1) & 3;
	struct uiw_rr_wtarget wt[2] = { { 0 } };
	uint64_t wlen[2] = { 0 };
	struct fz_res r = { 0 };
	struct uiw_rr_body b = { (xdrproc_t)xdr_fz_res, &r };
	struct uiw_rr_xdec d;
	uint8_t *stream;
	bool ok;
	XDR *x;

	if (nwt > 2)
		nwt = 2;
	for (unsigned k = 0; k < nwt; k++) {
		wlen[k] = fz_u16(&f);
		wt[k].len = wlen[k] + (c0 >> 4);
		wt[k].base = fz_alloc(wt[k].len);
		for (size_t i = 0; i < wt[k].len; i++)
			((uint8_t *)wt[k].base)[i] = (uint8_t)(i * 13 + k);
	}
	stream = fz_dup(f.p, f.n);
	x = uiw_rr_xdec_init(&d, stream, f.n, &sel, wt, wlen, nwt);
	ok = uiw_rr_xdr_body(x, &b);
	FZ_CHECK(d.pos <= f.n, "read to %zu of %zu", d.pos, f.n);
	FZ_CHECK(d.used <= nwt, "%u chunks used of %u", d.used, nwt);
	if (ok) {
		size_t bodies[2] = { r.n1, r.n2 };
		size_t spliced = 0;
		unsigned k = 0;

		unsigned item = 0;

		/* which bodies came from chunks: the eligible ones, in
		 * order, while chunks last; an empty one makes no call
		 * and is not counted (uiwarp-rpcrdma(3)) */
		for (unsigned i = 0; r.status == 0 && i < 2; i++) {
			const char *got = i == 0 ? r.b1 : r.b2;

			if (bodies[i] == 0)
				continue;
			item++;
			if (((c0 & 1) && item != 1) || k >= nwt)
				continue;
			FZ_CHECK(bodies[i] == wlen[k], "body %u: %zu octets, "
				 "chunk %u wrote %llu", i + 1, bodies[i], k,
				 (unsigned long long)wlen[k]);
			FZ_CHECK(!memcmp(got, wt[k].base, bodies[i]),
				 "body %u is not chunk %u's content", i + 1, k);
			spliced += bodies[i] + pad(bodies[i]);
			k++;
		}
		FZ_CHECK(k == d.used, "%u chunks used, %u expected", d.used, k);
		FZ_CHECK(XDR_GETPOS(x) == d.pos + spliced,
			 "position %u, expected %zu", XDR_GETPOS(x),
			 d.pos + spliced);
		/* as a Responder would write it */
		{
			struct uiw_rr_xenc e;
			const struct uiw_rr_iov *iov;
			unsigned n, j = 0;
			size_t inl = 0;

			uiw_rr_xenc_init(&e);
			x = uiw_rr_xenc_begin(&e, &sel, nwt);
			FZ_CHECK(uiw_rr_xdr_body(x, &b), "does not encode");
			iov = uiw_rr_xenc_finish(&e, &n);
			FZ_CHECK(iov, "no pieces");
			for (unsigned i = 0; i < n; i++) {
				if (!iov[i].ddp) {
					inl += iov[i].len;
					continue;
				}
				FZ_CHECK(j < d.used && iov[i].len == wlen[j],
					 "reduced piece %u of %zu octets", j,
					 iov[i].len);
				j++;
			}
			FZ_CHECK(j == d.used, "%u pieces reduced, %u spliced",
				 j, d.used);
			FZ_CHECK(inl == d.pos, "%zu octets inline, %zu read",
				 inl, d.pos);
			uiw_rr_xenc_fini(&e);
		}
	}
	xdr_free((xdrproc_t)xdr_fz_res, (char *)&r);
	free(stream);
	for (unsigned k = 0; k < nwt; k++)
		free(wt[k].base);
	return 0;
}
