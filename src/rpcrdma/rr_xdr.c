/*
 * The splitting encoder and the splicing decoder of RPC-over-RDMA's
 * reduced Payload streams (RFC 8166 §3.4): see rr_xdr.h.
 *
 * How libtirpc's XDR routines look from below: every integer is one
 * x_putlong/x_getlong; an opaque body (xdr_opaque, so xdr_bytes and
 * xdr_string too) is one x_putbytes/x_getbytes of its octets, followed,
 * when its length is not a multiple of four, by a second call for its
 * 1 to 3 octets of pad.  So a call of exactly the pad's length right
 * after a body is that body's pad, and any other call is a body.
 */
#include "rr_xdr.h"

#include <arpa/inet.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned xdr_pad(size_t n)
{
	return (unsigned)((4 - (n & 3)) & 3);
}

/* The inline offset of the stream's position pos, when the reduced
 * octets before it are reduced and it lies between floor (after the
 * last reduced body: positions within or before it have no inline
 * offset) and end. */
static bool inline_at(u_int pos, size_t reduced, size_t floor, size_t end,
		      size_t *at)
{
	if (pos < reduced || pos - reduced < floor || pos - reduced > end)
		return false;
	*at = pos - reduced;
	return true;
}

/* ---- the splitting encoder ------------------------------------------- */

static const struct xdr_ops enc_ops;

static bool enc_room(struct uiw_rr_xenc *e, size_t n)
{
	size_t cap;
	uint8_t *nb;

	if (e->failed)
		return false;
	if (n <= e->cap - e->len)
		return true;
	cap = e->cap ? e->cap : 4096;
	while (cap - e->len < n) {
		if (cap > SIZE_MAX / 2) {
			e->failed = true;
			return false;
		}
		cap *= 2;
	}
	nb = realloc(e->buf, cap);
	if (!nb) {
		e->failed = true;
		return false;
	}
	e->buf = nb;
	e->cap = cap;
	return true;
}

static bool enc_put(struct uiw_rr_xenc *e, const void *p, size_t n)
{
	if (!enc_room(e, n))
		return false;
	memcpy(e->buf + e->len, p, n);
	e->len += n;
	return true;
}

static bool_t enc_getlong(XDR *xdrs, long *lp)
{
	(void)xdrs;
	(void)lp;
	return FALSE;
}

static bool_t enc_putlong(XDR *xdrs, const long *lp)
{
	struct uiw_rr_xenc *e = xdrs->x_private;
	uint32_t w = htonl((uint32_t)*lp);

	e->pad_due = 0;
	return enc_put(e, &w, sizeof(w));
}

static bool_t enc_getbytes(XDR *xdrs, char *p, u_int n)
{
	(void)xdrs;
	(void)p;
	(void)n;
	return FALSE;
}

/* RFC 8166 §6.1: only what the binding names is reduced; for a call,
 * a body long enough for its rule's min_len; for a reply, every
 * eligible result that has a Write chunk left (RFC 8267 §6.4.1). */
static bool enc_reduces(struct uiw_rr_xenc *e, size_t n)
{
	const struct uiw_rpcrdma_ddp_rule *r;

	if (!e->counting || e->max_ddp == 0)
		return false;
	r = uiw_rr_ulb_rule(&e->sel, e->item);
	if (!r)
		return false;
	return e->sel.dir == UIW_RPCRDMA_RESULTS || n >= r->min_len;
}

static bool enc_add_ddp(struct uiw_rr_xenc *e, const void *p, size_t n)
{
	if (e->nddp == e->ddp_cap) {
		unsigned cap = e->ddp_cap ? e->ddp_cap * 2 : 8;
		struct uiw_rr_xenc_ddp *nd = realloc(e->ddp, cap * sizeof(*nd));

		if (!nd) {
			e->failed = true;
			return false;
		}
		e->ddp = nd;
		e->ddp_cap = cap;
	}
	e->ddp[e->nddp++] = (struct uiw_rr_xenc_ddp){ e->len, p, n };
	e->max_ddp--;
	return true;
}

static bool_t enc_putbytes(XDR *xdrs, const char *p, u_int n)
{
	struct uiw_rr_xenc *e = xdrs->x_private;

	if (e->pad_due && n == e->pad_due) {
		e->pad_due = 0;
		if (e->pad_drop) {
			/* RFC 8166 §3.4.4.4: a reduced body's pad leaves
			 * the Payload stream with it */
			e->ddp_octets += n;
			return TRUE;
		}
		return enc_put(e, p, n);
	}
	if (e->counting)
		e->item++;
	e->pad_due = xdr_pad(n);
	e->pad_drop = enc_reduces(e, n);
	if (e->pad_drop) {
		e->ddp_octets += n;
		return enc_add_ddp(e, p, n);
	}
	return enc_put(e, p, n);
}

static u_int enc_getpostn(XDR *xdrs)
{
	struct uiw_rr_xenc *e = xdrs->x_private;

	return (u_int)(e->len + e->ddp_octets);
}

/* As xdrmem: back to an earlier position of the stream, the octets
 * after it dropped; not back into or before a reduced body. */
static bool_t enc_setpostn(XDR *xdrs, u_int pos)
{
	struct uiw_rr_xenc *e = xdrs->x_private;
	size_t floor = e->nddp ? e->ddp[e->nddp - 1].at : 0;

	if (!inline_at(pos, e->ddp_octets, floor, e->len, &e->len))
		return FALSE;
	e->pad_due = 0;
	return TRUE;
}

static int32_t *enc_inline(XDR *xdrs, u_int n)
{
	struct uiw_rr_xenc *e = xdrs->x_private;
	int32_t *p;

	if (!enc_room(e, n))
		return NULL;
	p = (int32_t *)(void *)(e->buf + e->len);
	e->len += n;
	e->pad_due = 0;
	return p;
}

static void xops_destroy(XDR *xdrs)
{
	(void)xdrs;
}

static bool_t xops_control(XDR *xdrs, int req, void *info)
{
	(void)xdrs;
	(void)req;
	(void)info;
	return FALSE;
}

static const struct xdr_ops enc_ops = {
	.x_getlong = enc_getlong,
	.x_putlong = enc_putlong,
	.x_getbytes = enc_getbytes,
	.x_putbytes = enc_putbytes,
	.x_getpostn = enc_getpostn,
	.x_setpostn = enc_setpostn,
	.x_inline = enc_inline,
	.x_destroy = xops_destroy,
	.x_control = xops_control,
};

void uiw_rr_xenc_init(struct uiw_rr_xenc *e)
{
	memset(e, 0, sizeof(*e));
	e->xdr.x_op = XDR_ENCODE;
	e->xdr.x_ops = &enc_ops;
	e->xdr.x_private = e;
}

void uiw_rr_xenc_fini(struct uiw_rr_xenc *e)
{
	free(e->buf);
	free(e->ddp);
	free(e->iov);
	memset(e, 0, sizeof(*e));
}

XDR *uiw_rr_xenc_begin(struct uiw_rr_xenc *e, const struct uiw_rr_sel *sel,
		       unsigned max_ddp)
{
	struct uiw_rr_xenc keep = *e;

	/* a new message in the buffers of the last */
	uiw_rr_xenc_init(e);
	e->buf = keep.buf;
	e->cap = keep.cap;
	e->ddp = keep.ddp;
	e->ddp_cap = keep.ddp_cap;
	e->iov = keep.iov;
	e->iov_cap = keep.iov_cap;
	if (sel)
		e->sel = *sel;
	e->max_ddp = max_ddp;
	return &e->xdr;
}

const struct uiw_rr_iov *uiw_rr_xenc_finish(struct uiw_rr_xenc *e,
					    unsigned *niov)
{
	unsigned need = 2 * e->nddp + 1, n = 0;
	size_t from = 0;

	if (e->failed)
		return NULL;
	if (need > e->iov_cap) {
		struct uiw_rr_iov *ni = realloc(e->iov, need * sizeof(*ni));

		if (!ni)
			return NULL;
		e->iov = ni;
		e->iov_cap = need;
	}
	for (unsigned i = 0; i < e->nddp; i++) {
		if (e->ddp[i].at > from)
			e->iov[n++] = (struct uiw_rr_iov){
				e->buf + from, e->ddp[i].at - from, false };
		e->iov[n++] = (struct uiw_rr_iov){ e->ddp[i].base,
						   e->ddp[i].len, true };
		from = e->ddp[i].at;
	}
	if (e->len > from || n == 0)
		e->iov[n++] = (struct uiw_rr_iov){ e->buf + from,
						   e->len - from, false };
	*niov = n;
	return e->iov;
}

int uiw_rr_xenc_body_copy(const struct uiw_rr_xenc *e, uint8_t **out,
			  size_t *len)
{
	size_t n = e->len - e->body_at, from = e->body_at, o = 0;
	uint8_t *b;

	for (unsigned i = e->body_ddp; i < e->nddp; i++)
		n += e->ddp[i].len + xdr_pad(e->ddp[i].len);
	b = malloc(n ? n : 1);
	if (!b)
		return -1;
	for (unsigned i = e->body_ddp; i < e->nddp; i++) {
		const struct uiw_rr_xenc_ddp *d = &e->ddp[i];

		memcpy(b + o, e->buf + from, d->at - from);
		o += d->at - from;
		memcpy(b + o, d->base, d->len);
		o += d->len;
		memset(b + o, 0, xdr_pad(d->len));
		o += xdr_pad(d->len);
		from = d->at;
	}
	memcpy(b + o, e->buf + from, e->len - from);
	*out = b;
	*len = n;
	return 0;
}

/* ---- the splicing decoder -------------------------------------------- */

static const struct xdr_ops dec_ops;

static bool_t dec_getlong(XDR *xdrs, long *lp)
{
	struct uiw_rr_xdec *d = xdrs->x_private;
	uint32_t w;

	d->pad_due = 0;
	if (d->len - d->pos < sizeof(w))
		return FALSE;
	memcpy(&w, d->p + d->pos, sizeof(w));
	d->pos += sizeof(w);
	/* as libtirpc's xdrmem: the word zero-extended */
	*lp = (long)ntohl(w);
	return TRUE;
}

static bool_t dec_putlong(XDR *xdrs, const long *lp)
{
	(void)xdrs;
	(void)lp;
	return FALSE;
}

static bool dec_inline_bytes(struct uiw_rr_xdec *d, char *p, size_t n)
{
	if (d->len - d->pos < n)
		return false;
	memcpy(p, d->p + d->pos, n);
	d->pos += n;
	return true;
}

/* RFC 8166 §3.4.6.1: the k-th eligible result is the k-th Write chunk's
 * content; its length word stayed inline and must say as much
 * (§3.4.6.2: no pad was written). */
static bool dec_splice(struct uiw_rr_xdec *d, char *p, size_t n)
{
	unsigned k = d->used++;

	if (d->wlen[k] != n) {
		snprintf(d->why, sizeof(d->why),
			 "result %u is %zu octets, its Write chunk holds %llu",
			 d->item, n, (unsigned long long)d->wlen[k]);
		return false;
	}
	if (n > d->wt[k].len) {
		snprintf(d->why, sizeof(d->why),
			 "result %u (%zu octets) exceeds its Write chunk (%zu)",
			 d->item, n, d->wt[k].len);
		return false;
	}
	memcpy(p, d->wt[k].base, n);
	d->spliced += n + xdr_pad(n);
	d->splice_end = d->pos;
	return true;
}

static bool_t dec_getbytes(XDR *xdrs, char *p, u_int n)
{
	struct uiw_rr_xdec *d = xdrs->x_private;

	if (d->pad_due && n == d->pad_due) {
		d->pad_due = 0;
		/* a reduced body's pad is nowhere (RFC 8166 §3.4.6.2):
		 * nothing to give, and xdr_opaque asks for it into a
		 * static buffer of its own that it throws away, which
		 * threads decoding at once share */
		if (d->pad_skip)
			return TRUE;
		return dec_inline_bytes(d, p, n);
	}
	if (d->counting)
		d->item++;
	d->pad_due = xdr_pad(n);
	d->pad_skip = d->counting && d->used < d->nwt &&
		      uiw_rr_ulb_rule(&d->sel, d->item);
	if (d->pad_skip)
		return dec_splice(d, p, n);
	return dec_inline_bytes(d, p, n);
}

static bool_t dec_putbytes(XDR *xdrs, const char *p, u_int n)
{
	(void)xdrs;
	(void)p;
	(void)n;
	return FALSE;
}

static u_int dec_getpostn(XDR *xdrs)
{
	struct uiw_rr_xdec *d = xdrs->x_private;

	return (u_int)(d->pos + d->spliced);
}

static bool_t dec_setpostn(XDR *xdrs, u_int pos)
{
	struct uiw_rr_xdec *d = xdrs->x_private;

	if (!inline_at(pos, d->spliced, d->splice_end, d->len, &d->pos))
		return FALSE;
	d->pad_due = 0;
	return TRUE;
}

/* A pointer into the inline stream would run past the place where a
 * reduced result belongs while one may still come: none then. */
static int32_t *dec_inline(XDR *xdrs, u_int n)
{
	struct uiw_rr_xdec *d = xdrs->x_private;
	int32_t *p;

	if (d->counting && d->used < d->nwt)
		return NULL;
	if (d->len - d->pos < n)
		return NULL;
	p = (int32_t *)(void *)(uintptr_t)(d->p + d->pos);
	d->pos += n;
	d->pad_due = 0;
	return p;
}

static const struct xdr_ops dec_ops = {
	.x_getlong = dec_getlong,
	.x_putlong = dec_putlong,
	.x_getbytes = dec_getbytes,
	.x_putbytes = dec_putbytes,
	.x_getpostn = dec_getpostn,
	.x_setpostn = dec_setpostn,
	.x_inline = dec_inline,
	.x_destroy = xops_destroy,
	.x_control = xops_control,
};

XDR *uiw_rr_xdec_init(struct uiw_rr_xdec *d, const uint8_t *p, size_t len,
		      const struct uiw_rr_sel *sel,
		      const struct uiw_rr_wtarget *wt, const uint64_t *wlen,
		      unsigned nwt)
{
	memset(d, 0, sizeof(*d));
	d->xdr.x_op = XDR_DECODE;
	d->xdr.x_ops = &dec_ops;
	d->xdr.x_private = d;
	if (sel)
		d->sel = *sel;
	d->p = p;
	d->len = len;
	d->wt = wt;
	d->wlen = wlen;
	d->nwt = wt && wlen ? nwt : 0;
	return &d->xdr;
}

bool uiw_rr_xdec_done(struct uiw_rr_xdec *d)
{
	for (unsigned k = d->used; k < d->nwt; k++) {
		if (d->wlen[k]) {
			snprintf(d->why, sizeof(d->why),
				 "Write chunk %u holds %llu octets no eligible "
				 "result took", k + 1,
				 (unsigned long long)d->wlen[k]);
			return false;
		}
	}
	return true;
}

/* ---- counting from the arguments or results on ----------------------- */

bool_t uiw_rr_xdr_body(XDR *xdrs, struct uiw_rr_body *b)
{
	bool_t ok;

	if (xdrs->x_ops == &enc_ops) {
		struct uiw_rr_xenc *e = xdrs->x_private;

		e->counting = true;
		e->item = 0;
		e->body_at = e->len;
		e->body_ddp = e->nddp;
		e->pad_due = 0;
		ok = b->proc(xdrs, b->where);
		e->counting = false;
		return ok;
	}
	if (xdrs->x_ops == &dec_ops) {
		struct uiw_rr_xdec *d = xdrs->x_private;

		d->counting = true;
		d->item = 0;
		d->pad_due = 0;
		ok = b->proc(xdrs, b->where);
		d->counting = false;
		return ok;
	}
	return b->proc(xdrs, b->where);
}

bool_t uiw_rr_xdr_none(XDR *xdrs, void *where)
{
	(void)xdrs;
	(void)where;
	return TRUE;
}
