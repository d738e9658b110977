/*
 * How a message travels (rr_plan.h): a Requester's call (inline, Read
 * chunks, Long Call) and a Responder's reply (inline, Write chunks,
 * Reply chunk), decided over the pieces of the Payload stream, and the
 * octets of a stream that travel together.  Pure, no allocation.
 */
#include <string.h>

#include "rr_plan.h"

/* ---- Streams of pieces ------------------------------------------------ */

/* The piece's octets in the unreduced stream, XDR pad included. */
static uint64_t piece_len(const struct uiw_rr_iov *v)
{
	return v->ddp ? uiw_xdr_roundup(v->len) : v->len;
}

uint64_t rr_stream_len(const struct uiw_rr_iov *iov, unsigned niov)
{
	uint64_t n = 0;
	unsigned i;

	for (i = 0; i < niov; i++)
		n += piece_len(&iov[i]);
	return n;
}

/* Calls f for each run of octets that travel with the stream: piece
 * octets (src non-NULL) and pads (src NULL), in order. */
static void stream_walk(const struct uiw_rr_iov *iov, unsigned niov,
			const struct rr_ext *x,
			void (*f)(void *, const void *, uint64_t), void *arg)
{
	unsigned i, e = 0;

	for (i = 0; i < niov; i++) {
		const struct uiw_rr_iov *v = &iov[i];
		bool ext = x && e < x->n && x->idx[e] == i;
		uint32_t pad = v->ddp ? uiw_xdr_pad(v->len) : 0;

		if (ext)
			e++;
		if (!ext && v->len)
			f(arg, v->base, v->len);
		if (pad && (!ext || x->keep_ext_pad))
			f(arg, NULL, pad);
	}
}

static void count_run(void *arg, const void *src, uint64_t len)
{
	(void)src;
	*(uint64_t *)arg += len;
}

uint64_t rr_stream_kept(const struct uiw_rr_iov *iov, unsigned niov,
			const struct rr_ext *x)
{
	uint64_t n = 0;

	stream_walk(iov, niov, x, count_run, &n);
	return n;
}

static void copy_run(void *arg, const void *src, uint64_t len)
{
	uint8_t **dst = arg;

	if (src)
		memcpy(*dst, src, len);
	else
		memset(*dst, 0, len);
	*dst += len;
}

void rr_stream_copy(const struct uiw_rr_iov *iov, unsigned niov,
		    const struct rr_ext *x, uint8_t *dst)
{
	stream_walk(iov, niov, x, copy_run, &dst);
}

bool rr_stream_xid(const struct uiw_rr_iov *iov, unsigned niov,
		   uint32_t *xid)
{
	uint8_t w[4];
	unsigned i, got = 0;
	size_t k;

	for (i = 0; i < niov && got < 4; i++)
		for (k = 0; k < iov[i].len && got < 4; k++)
			w[got++] = ((const uint8_t *)iov[i].base)[k];
	if (got < 4)
		return false;
	*xid = (uint32_t)w[0] << 24 | (uint32_t)w[1] << 16 |
	       (uint32_t)w[2] << 8 | w[3];
	return true;
}

/* ---- Requester -------------------------------------------------------- */

/* Appends the segments of len octets from (iov, off) at position,
 * RR_SEG_MAX at most each; false when they do not fit. */
static bool add_segs(struct rr_call_layout *l, uint32_t position,
		     int32_t iov, uint64_t off, uint64_t len)
{
	while (len) {
		uint32_t n = len > RR_SEG_MAX ? RR_SEG_MAX : (uint32_t)len;

		if (l->nseg >= RR_CALL_MAX_SEG)
			return false;
		l->seg[l->nseg++] = (struct rr_call_seg){ position, iov, off,
							  n };
		off += n;
		len -= n;
	}
	return true;
}

/* Segments a piece of len octets takes. */
static unsigned segs_of(uint64_t len)
{
	return (unsigned)((len + RR_SEG_MAX - 1) / RR_SEG_MAX);
}

static void ext_add(struct rr_call_layout *l, uint32_t i)
{
	l->ext_idx[l->ext.n++] = i;
}

/* RFC 8166 §3.5.2: ddp pieces at their Positions in Read chunks, their
 * pads left out of both the chunk and the stream (§3.4.5.2). */
static void reduce(const struct uiw_rr_iov *iov, unsigned niov,
		   struct rr_call_layout *l)
{
	uint64_t pos = 0;
	unsigned i;

	for (i = 0; i < niov; i++) {
		const struct uiw_rr_iov *v = &iov[i];

		if (v->ddp && v->len >= RR_DDP_MIN && !(pos & 3) &&
		    pos <= UINT32_MAX &&
		    l->nseg + segs_of(v->len) <= RR_CALL_MAX_SEG) {
			add_segs(l, (uint32_t)pos, (int32_t)i, 0, v->len);
			ext_add(l, i);
			l->nchunks++;
		}
		pos += piece_len(v);
	}
}

/* §3.5.3: the whole stream in a Position-Zero Read chunk, pads and
 * all; long pieces are segments of their own, the rest is staged. */
static bool long_call(const struct uiw_rr_iov *iov, unsigned niov,
		      struct rr_call_layout *l)
{
	uint64_t stage = 0, run = 0;
	unsigned i;

	for (i = 0; i < niov; i++) {
		const struct uiw_rr_iov *v = &iov[i];
		uint32_t pad = v->ddp ? uiw_xdr_pad(v->len) : 0;

		/* room for this piece, the run before it and one after */
		if (v->len >= RR_LONG_SEG_MIN &&
		    l->nseg + segs_of(v->len) + 2 <= RR_CALL_MAX_SEG) {
			if (stage > run && !add_segs(l, 0, -1, run, stage - run))
				return false;
			add_segs(l, 0, (int32_t)i, 0, v->len);
			ext_add(l, i);
			run = stage;
		} else {
			stage += v->len;
		}
		stage += pad;
	}
	if (stage > run && !add_segs(l, 0, -1, run, stage - run))
		return false;
	l->kept_len = stage;
	l->nchunks = 1;
	return true;
}

void rr_call_layout(const struct uiw_rr_iov *iov, unsigned niov,
		    size_t other_hdr, uint32_t send_thresh,
		    struct rr_call_layout *l)
{
	memset(l, 0, sizeof(*l));
	l->ext.idx = l->ext_idx;
	l->stream_len = rr_stream_len(iov, niov);
	l->hdr_len = other_hdr;
	/* Inline whenever the whole call fits (§3.5.1): a Send alone is
	 * the cheapest way, ddp pieces and all. */
	l->kind = RR_CALL_INLINE;
	l->kept_len = l->stream_len;
	if (other_hdr + l->stream_len <= send_thresh)
		return;

	reduce(iov, niov, l);
	l->kept_len = rr_stream_kept(iov, niov, &l->ext);
	l->hdr_len = other_hdr + (size_t)l->nseg * UIW_RPCRDMA_READ_LEN;
	if (l->nseg && l->hdr_len + l->kept_len <= send_thresh) {
		l->kind = RR_CALL_CHUNKS;
		return;
	}

	memset(l->seg, 0, sizeof(l->seg));
	l->nseg = l->nchunks = 0;
	l->ext.n = 0;
	l->ext.keep_ext_pad = true;
	l->kind = RR_CALL_LONG;
	if (!long_call(iov, niov, l)) {
		l->kind = RR_CALL_TOO_BIG;
		return;
	}
	l->hdr_len = other_hdr + (size_t)l->nseg * UIW_RPCRDMA_READ_LEN;
	/* an empty stream still needs its chunk (§4.2.4): one segment of
	 * no octets would name nothing to read, so refuse it instead */
	if (!l->nseg || l->hdr_len > send_thresh)
		l->kind = RR_CALL_TOO_BIG;
}

/* ---- Responder -------------------------------------------------------- */

static void reply_refuse(struct rr_reply_layout *l, const char *why)
{
	l->mode = RR_RMODE_ERR_CHUNK;
	l->why = why;
}

/* Piece i (len octets) into Write chunk k: RDMA Writes filling its
 * segments in order (§3.4.6), the returned lengths in l->wseg. */
static void fill_wchunk(const struct rr_plan *p, unsigned k, int32_t iov,
			uint64_t len, struct rr_reply_layout *l)
{
	const struct rr_wchunk *c = &p->wchunk[k];
	uint64_t off = 0;
	uint32_t j;

	for (j = 0; j < c->nseg; j++) {
		const struct uiw_rpcrdma_seg *g = &p->wseg[c->first + j];
		uint32_t n = len - off < g->length ? (uint32_t)(len - off) :
			g->length;

		l->wseg[c->first + j].length = n;
		if (n)
			l->write[l->nwrite++] = (struct rr_write){
				iov, off, g->handle, n, g->offset };
		off += n;
	}
}

void rr_reply_layout(const struct rr_plan *p, const struct uiw_rr_iov *iov,
		     unsigned niov, uint32_t send_thresh, uint32_t credit,
		     struct rr_reply_layout *l)
{
	struct uiw_rpcrdma_hdr *h = &l->hdr;
	unsigned i, k = 0, used = 0;
	size_t msg_len;
	uint64_t off = 0;
	uint32_t j;

	memset(l, 0, sizeof(*l));
	l->ext.idx = l->ext_idx;
	for (i = 0; i < UIW_RR_MAX_WCHUNK; i++)
		l->piece[i] = -1;
	memcpy(l->wseg, p->wseg, sizeof(l->wseg));
	for (i = 0; i < p->nwchunk; i++) {
		l->wchunk[i] = (struct uiw_rpcrdma_chunk){ 0, p->wchunk[i].first,
							  p->wchunk[i].nseg };
		for (j = 0; j < p->wchunk[i].nseg; j++)
			l->wseg[p->wchunk[i].first + j].length = 0;
	}
	/* §4.3.2.1: each ddp result into the next Write chunk; an empty
	 * Write chunk asks for that result inline (§4.3.2.3); unused ones
	 * go back with their segments emptied (§4.3.2.2) */
	for (i = 0; i < niov && k < p->nwchunk; i++) {
		if (!iov[i].ddp)
			continue;
		if (p->wchunk[k].nseg && iov[i].len > p->wchunk[k].len) {
			reply_refuse(l, "a DDP-eligible result is larger than "
				     "the Write chunk offered for it (RFC 8166 "
				     "§3.4.6)");
			return;
		}
		if (p->wchunk[k].nseg) {
			l->piece[k] = (int32_t)i;
			l->ext_idx[l->ext.n++] = i;
			fill_wchunk(p, k, (int32_t)i, iov[i].len, l);
			l->wbytes += iov[i].len;
			/* a piece of no octets (a slot whose result has
			 * no item) leaves its chunk unused */
			used += iov[i].len > 0;
		}
		k++;
	}
	l->wchunks_used = used;
	l->stream_len = rr_stream_kept(iov, niov, &l->ext);

	h->vers = UIW_RPCRDMA_VERSION;
	h->xid = p->hdr.xid;
	h->credit = credit;
	h->write_seg = l->wseg;
	h->nwrite_seg = p->nwchunk ? p->wchunk[p->nwchunk - 1].first +
		p->wchunk[p->nwchunk - 1].nseg : 0;
	h->write_chunk = l->wchunk;
	h->nwrite_chunk = p->nwchunk;
	h->proc = UIW_RDMA_MSG;
	if (uiw_rpcrdma_encoded_len(h, &l->hdr_len) == 0 &&
	    l->hdr_len + l->stream_len <= send_thresh) {
		l->mode = RR_RMODE_INLINE;
		return;
	}
	/* §3.5.3: too long for a Send; the Reply chunk, if one is there
	 * and large enough, else nothing can carry it (§4.5.3) */
	if (!p->reply_present || l->stream_len > p->reply_len) {
		reply_refuse(l, p->reply_present ?
			     "the reply is larger than the Reply chunk offered "
			     "(RFC 8166 §3.5.3, §4.5.3)" :
			     "the reply exceeds the inline threshold and no "
			     "Reply chunk was offered (RFC 8166 §3.5.3, "
			     "§4.3.3)");
		return;
	}
	memcpy(l->pseg, p->pseg, sizeof(l->pseg));
	for (j = 0; j < p->npseg; j++) {
		uint32_t n = l->stream_len - off < p->pseg[j].length ?
			(uint32_t)(l->stream_len - off) : p->pseg[j].length;

		l->pseg[j].length = n;
		if (n)
			l->write[l->nwrite++] = (struct rr_write){
				-1, off, p->pseg[j].handle, n,
				p->pseg[j].offset };
		off += n;
	}
	h->proc = UIW_RDMA_NOMSG;
	h->reply_present = true;
	h->reply_seg = l->pseg;
	h->nreply_seg = p->npseg;
	if (uiw_rpcrdma_encoded_len(h, &msg_len) || msg_len > send_thresh) {
		reply_refuse(l, "the reply's transport header alone exceeds "
			     "the inline threshold (RFC 8166 §3.3.2)");
		return;
	}
	l->hdr_len = msg_len;
	l->mode = RR_RMODE_REPLY_CHUNK;
}
