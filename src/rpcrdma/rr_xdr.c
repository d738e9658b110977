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
 * eligible result that has a Write chunk left (RFC 8267 §6.4.1).
 * Before a walk: every long body, undecided. */
static bool enc_reduces(struct uiw_rr_xenc *e, size_t n)
{
	const struct uiw_rpcrdma_ddp_rule *r;

	if (!e->counting || e->max_ddp == 0)
		return false;
	if (e->walk)
		return n >= UIW_RR_XENC_LEAVE_MIN;
	r = uiw_rr_ulb_rule(&e->sel, e->item);
	if (!r)
		return false;
	return e->sel.dir == UIW_RPCRDMA_RESULTS || n >= r->min_len;
}

static bool ddp_room(struct uiw_rr_xenc *e)
{
	if (e->nddp == e->ddp_cap) {
		unsigned cap = e->ddp_cap ? e->ddp_cap * 2 : 8;
		struct uiw_rr_xenc_ddp *nd;

		if (cap > UINT_MAX / 2 / sizeof(*nd) ||
		    !(nd = realloc(e->ddp, cap * sizeof(*nd)))) {
			e->failed = true;
			return false;
		}
		e->ddp = nd;
		e->ddp_cap = cap;
	}
	return true;
}

static bool enc_add_ddp(struct uiw_rr_xenc *e, const void *p, size_t n)
{
	if (!ddp_room(e))
		return false;
	e->ddp[e->nddp++] = (struct uiw_rr_xenc_ddp){
		e->len, p, n, e->len + e->ddp_octets,
		e->walk ? UIW_RR_XENC_LEFT : UIW_RR_XENC_REDUCED };
	e->max_ddp--;
	e->ddp_octets += n;
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
	if (e->pad_drop)
		return enc_add_ddp(e, p, n);
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
	free(e->abs);
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
	e->abs = keep.abs;
	e->abs_cap = keep.abs_cap;
	if (sel)
		e->sel = *sel;
	e->max_ddp = max_ddp;
	return &e->xdr;
}

XDR *uiw_rr_xenc_begin_walk(struct uiw_rr_xenc *e,
			    const struct uiw_rr_sel *sel)
{
	XDR *x = uiw_rr_xenc_begin(e, sel, UINT_MAX);

	e->walk = true;
	return x;
}

/* Whether an entry's octets are in the buffer's run. */
static bool in_buf(enum uiw_rr_xenc_kind k)
{
	return k == UIW_RR_XENC_CUT || k == UIW_RR_XENC_MARK;
}

/* An entry made after the encoding, in stream order among the rest. */
static int ddp_insert(struct uiw_rr_xenc *e, struct uiw_rr_xenc_ddp d)
{
	unsigned j = e->nddp;

	if (!ddp_room(e))
		return -1;
	while (j > e->body_ddp && e->ddp[j - 1].spos > d.spos)
		j--;
	memmove(&e->ddp[j + 1], &e->ddp[j], (e->nddp - j) * sizeof(d));
	e->ddp[j] = d;
	e->nddp++;
	return 0;
}

int uiw_rr_xenc_walk(struct uiw_rr_xenc *e, const struct uiw_rpcrdma_ddp_rule *r,
		     enum uiw_rpcrdma_dir dir, struct uiw_rpcrdma_walk *w,
		     enum uiw_rpcrdma_walk_end *end)
{
	unsigned n = 0;

	if (e->failed)
		return -1;
	if (!e->body_seen) {
		uiw_rr_walk_init(w, dir, NULL, 0, NULL, 0);
		*end = UIW_RPCRDMA_WALK_STOP;
		return 0;
	}
	if (e->nddp - e->body_ddp > e->abs_cap) {
		unsigned cap = e->nddp - e->body_ddp;
		struct uiw_rr_absent *na = realloc(e->abs, cap * sizeof(*na));

		if (!na)
			return -1;
		e->abs = na;
		e->abs_cap = cap;
	}
	for (unsigned i = e->body_ddp; i < e->nddp; i++) {
		const struct uiw_rr_xenc_ddp *d = &e->ddp[i];

		if (!in_buf(d->kind))
			e->abs[n++] = (struct uiw_rr_absent){
				d->spos - e->body_spos,
				d->len + xdr_pad(d->len) };
	}
	uiw_rr_walk_init(w, dir, e->buf + e->body_at, e->len - e->body_at,
			 e->abs, n);
	*end = uiw_rr_walk_run(w, r);
	return 0;
}

int uiw_rr_xenc_reduce(struct uiw_rr_xenc *e, const struct uiw_rr_witem *it)
{
	size_t spos = e->body_spos + it->off;

	if (it->in_at != SIZE_MAX)
		return ddp_insert(e, (struct uiw_rr_xenc_ddp){
			e->body_at + it->in_at, NULL, it->len, spos,
			UIW_RR_XENC_CUT });
	/* a body left where the caller has it: the walk passed it by its
	 * entry, so there is one */
	for (unsigned i = e->body_ddp; i < e->nddp; i++)
		if (e->ddp[i].spos == spos &&
		    e->ddp[i].kind == UIW_RR_XENC_LEFT)
			e->ddp[i].kind = UIW_RR_XENC_REDUCED;
	return 0;
}

int uiw_rr_xenc_mark(struct uiw_rr_xenc *e, const struct uiw_rr_wslot *s)
{
	return ddp_insert(e, (struct uiw_rr_xenc_ddp){
		e->body_at + s->in_at, NULL, 0, e->body_spos + s->off,
		UIW_RR_XENC_MARK });
}

int uiw_rr_xenc_walk_call(struct uiw_rr_xenc *e,
			  const struct uiw_rpcrdma_ddp_rule *aw,
			  const struct uiw_rpcrdma_ddp_rule *rw,
			  size_t len[UIW_RR_MAX_WCHUNK], unsigned *nwt)
{
	struct uiw_rpcrdma_walk w;
	enum uiw_rpcrdma_walk_end end;
	bool walked = false;

	*nwt = 0;
	if (aw) {
		if (uiw_rr_xenc_walk(e, aw, UIW_RPCRDMA_ARGS, &w, &end))
			return -1;
		/* RFC 8166 §6.1: the binding's items; RFC 8267 §6.4.1:
		 * after a stop, the rest inline, which a Requester may */
		for (unsigned i = 0; i < w.nitems; i++)
			if (w.items[i].len >= aw->min_len &&
			    uiw_rr_xenc_reduce(e, &w.items[i]))
				return -1;
		walked = rw && rw->walk == aw->walk;
	}
	if (rw) {
		if (!walked &&
		    uiw_rr_xenc_walk(e, rw, UIW_RPCRDMA_ARGS, &w, &end))
			return -1;
		*nwt = uiw_rr_ulb_walk_wchunks(rw, w.slots, w.nslots, len);
	}
	return e->failed ? -1 : 0;
}

int uiw_rr_xenc_walk_reply(struct uiw_rr_xenc *e,
			   const struct uiw_rpcrdma_ddp_rule *rw,
			   unsigned nwchunk)
{
	struct uiw_rpcrdma_walk w;
	enum uiw_rpcrdma_walk_end end;
	unsigned k;

	if (uiw_rr_xenc_walk(e, rw, UIW_RPCRDMA_RESULTS, &w, &end))
		return -1;
	/* RFC 8267 §6.4.1: chunk k is slot k's, and a slot's result
	 * without its item returns the chunk unused; an empty chunk takes
	 * its item inline (the transport sees to that) */
	for (k = 0; k < nwchunk && k < w.nslots && k < UIW_RR_WALK_MAX_SLOTS;
	     k++) {
		const struct uiw_rr_wslot *s = &w.slots[k];

		if (s->item >= 0 ? uiw_rr_xenc_reduce(e, &w.items[s->item]) :
				   uiw_rr_xenc_mark(e, s))
			return -1;
	}
	if (e->failed)
		return -1;
	/* chunks the walk found no slot for: at the end, their READs did
	 * not run and they go back unused; after a stop, nothing tells */
	return end == UIW_RPCRDMA_WALK_STOP && w.nslots < nwchunk ? 1 : 0;
}

static const uint8_t xdr_zeros[4];

const struct uiw_rr_iov *uiw_rr_xenc_finish(struct uiw_rr_xenc *e,
					    unsigned *niov)
{
	unsigned need = 3 * e->nddp + 1, n = 0;
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
		const struct uiw_rr_xenc_ddp *d = &e->ddp[i];
		unsigned pad = xdr_pad(d->len);

		if (d->at > from)
			e->iov[n++] = (struct uiw_rr_iov){
				e->buf + from, d->at - from, false };
		from = d->at;
		switch (d->kind) {
		case UIW_RR_XENC_REDUCED:
			e->iov[n++] = (struct uiw_rr_iov){ d->base, d->len,
							   true };
			break;
		case UIW_RR_XENC_LEFT:
			/* not chosen: back inline, its pad after it */
			e->iov[n++] = (struct uiw_rr_iov){ d->base, d->len,
							   false };
			if (pad)
				e->iov[n++] = (struct uiw_rr_iov){ xdr_zeros,
								   pad, false };
			break;
		case UIW_RR_XENC_CUT:
			e->iov[n++] = (struct uiw_rr_iov){ e->buf + d->at,
							   d->len, true };
			from += d->len + pad;
			break;
		case UIW_RR_XENC_MARK:
			e->iov[n++] = (struct uiw_rr_iov){ e->buf + d->at, 0,
							   true };
			break;
		}
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
		if (!in_buf(e->ddp[i].kind))
			n += e->ddp[i].len + xdr_pad(e->ddp[i].len);
	b = malloc(n ? n : 1);
	if (!b)
		return -1;
	for (unsigned i = e->body_ddp; i < e->nddp; i++) {
		const struct uiw_rr_xenc_ddp *d = &e->ddp[i];

		if (in_buf(d->kind))
			continue;
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
static bool dec_splice(struct uiw_rr_xdec *d, char *p, size_t n, unsigned k)
{
	d->used++;
	d->taken |= 1u << k;
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
	if (d->walk && d->counting) {
		/* the walk named the items by their offsets */
		size_t u = d->pos + d->spliced - d->body_u0;

		while (d->next < d->nsplice && d->splice[d->next].off < u)
			d->next++;
		d->pad_skip = d->next < d->nsplice &&
			      d->splice[d->next].off == u;
		if (d->pad_skip)
			return dec_splice(d, p, n, d->splice[d->next++].k);
		return dec_inline_bytes(d, p, n);
	}
	d->pad_skip = d->counting && d->used < d->nwt &&
		      uiw_rr_ulb_rule(&d->sel, d->item);
	if (d->pad_skip)
		return dec_splice(d, p, n, d->used);
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

	if (d->counting &&
	    (d->walk ? d->next < d->nsplice : d->used < d->nwt))
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
	for (unsigned k = 0; k < d->nwt; k++) {
		if (d->wlen[k] && !(d->taken >> k & 1)) {
			snprintf(d->why, sizeof(d->why),
				 "Write chunk %u holds %llu octets no eligible "
				 "result took", k + 1,
				 (unsigned long long)d->wlen[k]);
			return false;
		}
	}
	return true;
}

/* A reply whose results' rule has a walk: which items are in Write
 * chunks, and where.  RFC 8267 §6.4.1: slot k's item is in chunk k
 * when the call offered a non-empty one (the Responder MUST use it),
 * only its length word inline. */
static void dec_walk(struct uiw_rr_xdec *d)
{
	const struct uiw_rpcrdma_ddp_rule *rw;
	struct uiw_rpcrdma_walk w;
	uint32_t reduced = 0;

	rw = uiw_rr_ulb_walker(&d->sel, UIW_RPCRDMA_RESULTS);
	if (!rw)
		return;
	for (unsigned k = 0; k < d->nwt; k++)
		if (d->wt[k].base && d->wt[k].len)
			reduced |= 1u << k;
	/* no chunk to take an item from: everything is inline */
	if (!reduced)
		return;
	uiw_rr_walk_init(&w, UIW_RPCRDMA_RESULTS, d->p + d->pos,
			 d->len - d->pos, NULL, 0);
	uiw_rr_walk_reduced(&w, reduced);
	/* after a stop the items found stand; a chunk holding octets no
	 * item took fails uiw_rr_xdec_done */
	uiw_rr_walk_run(&w, rw);
	d->walk = true;
	d->body_u0 = d->pos + d->spliced;
	d->nsplice = d->next = 0;
	for (unsigned i = 0; i < w.nitems; i++) {
		const struct uiw_rr_witem *it = &w.items[i];

		/* an empty body makes no x_getbytes call to splice */
		if (it->in_at == SIZE_MAX && it->len && it->slot >= 0 &&
		    (unsigned)it->slot < d->nwt &&
		    d->nsplice < UIW_RR_MAX_WCHUNK)
			d->splice[d->nsplice++] = (struct uiw_rr_splice){
				it->off, (unsigned)it->slot };
	}
}

/* ---- counting from the arguments or results on ----------------------- */

bool_t uiw_rr_xdr_body(XDR *xdrs, struct uiw_rr_body *b)
{
	bool_t ok;

	if (xdrs->x_ops == &enc_ops) {
		struct uiw_rr_xenc *e = xdrs->x_private;

		e->counting = true;
		e->body_seen = true;
		e->item = 0;
		e->body_at = e->len;
		e->body_spos = e->len + e->ddp_octets;
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
		dec_walk(d);
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
