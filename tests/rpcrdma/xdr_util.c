/*
 * What the pure XDR-stream tests share: see xdr_util.h.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "xdr_util.h"

static size_t xdr_pad(size_t n)
{
	return (4 - (n & 3)) & 3;
}

uint8_t *xu_pattern(size_t n, unsigned seed)
{
	uint8_t *p = malloc(n ? n : 1);

	assert_non_null(p);
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(i * 7 + seed);
	return p;
}

size_t xu_encode(xdrproc_t proc, void *obj, uint8_t *buf, size_t cap)
{
	XDR x;

	xdrmem_create(&x, (char *)buf, (u_int)cap, XDR_ENCODE);
	assert_true(proc(&x, obj));
	return XDR_GETPOS(&x);
}

void xu_assert_unreduced(const struct uiw_rr_iov *iov, unsigned n,
			 const uint8_t *ref, size_t ref_len, bool aligned)
{
	size_t o = 0;

	for (unsigned i = 0; i < n; i++) {
		assert_true(o + iov[i].len <= ref_len);
		assert_memory_equal(iov[i].base, ref + o, iov[i].len);
		o += iov[i].len;
		if (iov[i].ddp) {
			size_t pad = xdr_pad(iov[i].len);

			assert_true(o + pad <= ref_len);
			for (size_t k = 0; k < pad; k++)
				assert_int_equal(ref[o + k], 0);
			o += pad;
		} else if (aligned) {
			assert_int_equal(iov[i].len & 3, 0);
		}
	}
	assert_int_equal(o, ref_len);
}

unsigned xu_count_ddp(const struct uiw_rr_iov *iov, unsigned n)
{
	unsigned d = 0;

	for (unsigned i = 0; i < n; i++)
		d += iov[i].ddp;
	return d;
}

void xu_land(const struct uiw_rr_iov *iov, unsigned n, const size_t *chunk_len,
	     unsigned nwt, struct xu_landed *l)
{
	size_t total = 0;
	unsigned k = 0;

	memset(l, 0, sizeof(*l));
	for (unsigned i = 0; i < n; i++)
		total += iov[i].len + xdr_pad(iov[i].len);
	l->stream = malloc(total ? total : 1);
	assert_non_null(l->stream);
	for (unsigned i = 0; i < nwt; i++) {
		l->wt[i].len = chunk_len[i];
		l->wt[i].base = chunk_len[i] ? malloc(chunk_len[i]) : NULL;
	}
	for (unsigned i = 0; i < n; i++) {
		bool chunk = iov[i].ddp && k < nwt && chunk_len[k];
		size_t pad = iov[i].ddp ? xdr_pad(iov[i].len) : 0;

		if (chunk) {
			assert_true(iov[i].len <= chunk_len[k]);
			memcpy(l->wt[k].base, iov[i].base, iov[i].len);
			l->wlen[k++] = iov[i].len;
			l->nddp++;
			continue;
		}
		if (iov[i].ddp && k < nwt)
			k++;            /* an empty chunk: the piece inline */
		memcpy(l->stream + l->len, iov[i].base, iov[i].len);
		memset(l->stream + l->len + iov[i].len, 0, pad);
		l->len += iov[i].len + pad;
	}
}

void xu_unland(struct xu_landed *l, unsigned nwt)
{
	for (unsigned i = 0; i < nwt; i++)
		free(l->wt[i].base);
	free(l->stream);
}
