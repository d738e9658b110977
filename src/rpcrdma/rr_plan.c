/*
 * What a received RPC-over-RDMA message means (rr_plan.h): a Responder's
 * plan for a call, a Requester's verdict on a reply.  Pure: no verbs,
 * no allocation; every length and offset the peer sent is checked
 * before it is used.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "rr_plan.h"

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

/* ---- Responder -------------------------------------------------------- */

/* Refused with ERR_CHUNK (§4.5.2): a header whose chunks do not make
 * a Payload stream this Responder can take. */
static void refuse(struct rr_plan *p, const char *why)
{
	p->act = UIW_RPCRDMA_ACT_ERR_CHUNK;
	p->why = why;
}

/* Read chunk indices (not Position Zero) by increasing Position. */
static unsigned sorted_chunks(const struct uiw_rpcrdma_hdr *h,
			      uint32_t order[RR_MAX_RCHUNK])
{
	unsigned n = 0, i, j;

	for (i = 0; i < h->nread_chunk; i++) {
		if (h->read_chunk[i].position == 0)
			continue;
		for (j = n; j > 0 && h->read_chunk[order[j - 1]].position >
				     h->read_chunk[i].position; j--)
			order[j] = order[j - 1];
		order[j] = i;
		n++;
	}
	return n;
}

/*
 * The base stream (the RDMA_MSG inline octets, or a Long Call's
 * Position-Zero chunk) is laid into the assembled stream run by run,
 * around the Read chunks: base octets [b, b + len) go to dst.
 */
struct base {
	const struct uiw_rpcrdma_hdr *h;
	int pos0;               /* chunk index, -1: inline base */
	uint64_t len;
};

static bool base_run(struct rr_plan *p, const struct base *b, uint64_t from,
		     uint64_t len, uint64_t dst)
{
	const struct uiw_rpcrdma_chunk *c;
	uint64_t s = 0;
	uint32_t k;

	if (!len)
		return true;
	if (b->pos0 < 0) {
		if (p->ncopy >= RR_MAX_COPY)
			return false;
		p->copy[p->ncopy++] = (struct rr_copy){
			p->hdr.hdr_len + from, dst, len };
		return true;
	}
	/* the Position-Zero segments that overlap [from, from + len) */
	c = &b->h->read_chunk[b->pos0];
	for (k = 0; k < c->nseg && len; k++) {
		const struct uiw_rpcrdma_seg *g = &b->h->read_seg[c->first + k].target;
		uint64_t e = s + g->length, lo, n;

		if (e > from) {
			lo = from - s;
			n = g->length - lo < len ? g->length - lo : len;
			if (p->nread >= RR_MAX_READ)
				return false;
			p->read[p->nread++] = (struct rr_read){
				g->handle, (uint32_t)n, g->offset + lo, dst };
			from += n;
			dst += n;
			len -= n;
		}
		s = e;
	}
	return len == 0;
}

/* A Read chunk's segments to dst, then its XDR roundup as zeros. */
static bool chunk_reads(struct rr_plan *p, const struct uiw_rpcrdma_chunk *c,
			uint64_t dst, uint64_t clen)
{
	uint32_t k, pad = uiw_xdr_pad(clen);

	for (k = 0; k < c->nseg; k++) {
		const struct uiw_rpcrdma_seg *g =
			&p->hdr.read_seg[c->first + k].target;

		if (!g->length)
			continue;
		if (p->nread >= RR_MAX_READ)
			return false;
		p->read[p->nread++] = (struct rr_read){
			g->handle, g->length, g->offset, dst };
		dst += g->length;
	}
	if (pad)
		p->zero[p->nzero++] = (struct rr_zero){ dst, pad };
	return true;
}

static const char too_big[] = "the call is larger than this Responder "
	"accepts (RFC 8166 §3.4.4)";
static const char too_many[] = "too many Read segments (RFC 8166 §4.5.2)";

/* The assembled stream: base runs and Read chunks by Position.  NULL,
 * or why the chunks make no stream. */
static const char *assemble(struct rr_plan *p, const struct base *b,
			    uint64_t max_call)
{
	const struct uiw_rpcrdma_hdr *h = &p->hdr;
	uint32_t order[RR_MAX_RCHUNK];
	unsigned n = sorted_chunks(h, order), i;
	uint64_t bpos = 0, upos = 0, total = 0;

	for (i = 0; i < n; i++) {
		const struct uiw_rpcrdma_chunk *c = &h->read_chunk[order[i]];
		uint64_t clen = uiw_rpcrdma_read_chunk_len(h, order[i]);
		uint64_t gap;

		/* §3.4.5: a Position is an offset in the unreduced stream;
		 * it may not fall inside what an earlier chunk put back,
		 * nor past the base octets left */
		if (c->position < upos)
			return "a Read chunk's Position falls inside an earlier "
				"chunk (RFC 8166 §3.4.5)";
		gap = c->position - upos;
		if (gap > b->len - bpos)
			return "a Read chunk's Position lies past the end of the "
				"Payload stream (RFC 8166 §3.4.5)";
		if (clen > max_call || total + gap + uiw_xdr_roundup(clen) >
		    max_call)
			return too_big;
		if (!base_run(p, b, bpos, gap, total))
			return too_many;
		total += gap;
		bpos += gap;
		if (!chunk_reads(p, c, total, clen))
			return too_many;
		total += uiw_xdr_roundup(clen);
		upos = c->position + uiw_xdr_roundup(clen);
		p->read_chunks++;
		p->read_bytes += clen;
	}
	if (b->len - bpos > max_call - total)
		return too_big;
	if (!base_run(p, b, bpos, b->len - bpos, total))
		return too_many;
	p->call_len = total + (b->len - bpos);
	return NULL;
}

static void offered(struct rr_plan *p)
{
	const struct uiw_rpcrdma_hdr *h = &p->hdr;
	uint32_t i;

	p->nwchunk = h->nwrite_chunk;
	for (i = 0; i < h->nwrite_chunk; i++)
		p->wchunk[i] = (struct rr_wchunk){
			h->write_chunk[i].first, h->write_chunk[i].nseg,
			uiw_rpcrdma_write_chunk_len(h, i) };
	p->reply_present = h->reply_present;
	p->npseg = h->nreply_seg;
	p->reply_len = uiw_rpcrdma_segs_len(h->reply_seg, h->nreply_seg);
	/* RFC 8797 §4.1: an STag of this XID's chunks */
	if (h->nwrite_seg) {
		p->has_rkey = true;
		p->rkey = h->write_seg[0].handle;
	} else if (h->nreply_seg) {
		p->has_rkey = true;
		p->rkey = h->reply_seg[0].handle;
	} else if (h->nread_seg) {
		p->has_rkey = true;
		p->rkey = h->read_seg[0].target.handle;
	}
}

void rr_plan_call(const void *msg, size_t len, uint64_t max_call,
		  struct rr_plan *p)
{
	const struct uiw_rpcrdma_space sp = {
		p->rseg_, RR_MAX_RSEG, p->rchunk_, RR_MAX_RCHUNK,
		p->wseg, RR_MAX_WSEG, p->wchunk_, UIW_RR_MAX_WCHUNK,
		p->pseg, RR_MAX_PSEG };
	struct uiw_rpcrdma_hdr *h = &p->hdr;
	struct base b = { h, -1, 0 };
	const char *why;
	uint32_t i;

	p->act = UIW_RPCRDMA_ACT_PROCESS;
	p->why = NULL;
	p->call_len = 0;
	p->in_place = p->long_call = p->check_xid = false;
	p->payload_off = 0;
	p->ncopy = p->nread = p->nzero = p->read_chunks = 0;
	p->read_bytes = 0;
	p->nwchunk = p->npseg = 0;
	p->reply_present = p->has_rkey = false;
	p->reply_len = 0;
	p->rkey = 0;

	p->err = uiw_rpcrdma_decode(msg, len, &sp, h);
	p->act = uiw_rpcrdma_action(UIW_RPCRDMA_RESPONDER, p->err, h);
	if (p->err) {
		p->why = uiw_rpcrdma_strerror(p->err);
		return;
	}
	if (p->act != UIW_RPCRDMA_ACT_PROCESS) {
		/* §4.2.4: a Responder discards RDMA_ERROR */
		p->why = "RDMA_ERROR sent to a Responder (RFC 8166 §4.2.4)";
		return;
	}
	offered(p);
	if (h->proc == UIW_RDMA_NOMSG) {
		for (i = 0; i < h->nread_chunk; i++)
			if (h->read_chunk[i].position == 0)
				b.pos0 = (int)i;
		/* §3.5.3: a call's RDMA_NOMSG carries its Payload stream in
		 * a Position-Zero Read chunk (a Reply chunk alone leaves it
		 * nowhere) */
		if (b.pos0 < 0) {
			refuse(p, "RDMA_NOMSG call without a Position-Zero "
			       "Read chunk (RFC 8166 §3.5.3, §4.2.4)");
			return;
		}
		b.len = uiw_rpcrdma_read_chunk_len(h, (uint32_t)b.pos0);
		if (b.len > max_call) {
			refuse(p, too_big);
			return;
		}
		p->long_call = true;
		p->read_chunks++;
		p->read_bytes += b.len;
	} else {
		b.len = len - h->hdr_len;
	}
	if ((why = assemble(p, &b, max_call))) {
		refuse(p, why);
		return;
	}
	/* §3.2: the Payload stream begins with the XID, which no ULB makes
	 * DDP-eligible (§3.4.2), so it is among the base octets */
	if (b.len < 4) {
		refuse(p, "the Payload stream is too short to hold its XID "
		       "(RFC 8166 §3.2)");
		return;
	}
	if (b.pos0 < 0) {
		/* §4.5.2: rdma_xid must match the RPC message's XID */
		if (be32((const uint8_t *)msg + h->hdr_len) != h->xid) {
			refuse(p, "rdma_xid differs from the XID of the RPC "
			       "message (RFC 8166 §4.2.1, §4.5.2)");
			return;
		}
		p->payload_off = h->hdr_len;
		p->in_place = h->nread_chunk == 0;
	} else {
		p->check_xid = true;
	}
}

/* ---- Requester -------------------------------------------------------- */

enum rr_reply_kind rr_reply_decode(const void *msg, size_t len,
				   struct rr_reply_space *s,
				   struct uiw_rpcrdma_hdr *h,
				   const char **why)
{
	const struct uiw_rpcrdma_space sp = {
		s->rseg, 1, s->rchunk, 1, s->wseg, RR_MAX_WSEG,
		s->wchunk, UIW_RR_MAX_WCHUNK, s->pseg, RR_MAX_PSEG };
	enum uiw_rpcrdma_err e = uiw_rpcrdma_decode(msg, len, &sp, h);

	/* §4.5: a Requester silently discards a reply whose header it
	 * cannot decode, and RDMA_MSGP / RDMA_DONE (§4.6) */
	if (uiw_rpcrdma_action(UIW_RPCRDMA_REQUESTER, e, h) !=
	    UIW_RPCRDMA_ACT_PROCESS) {
		*why = e ? uiw_rpcrdma_strerror(e) :
			"a procedure a Requester discards (RFC 8166 §4.6)";
		return RR_REPLY_DROP;
	}
	return RR_REPLY_MATCH;
}

__attribute__((format(printf, 2, 3)))
static void bad(struct rr_reply_info *r, const char *fmt, ...)
{
	va_list ap;

	r->status = UIW_RR_BAD_REPLY;
	va_start(ap, fmt);
	vsnprintf(r->msg, sizeof(r->msg), fmt, ap);
	va_end(ap);
}

/* §3.4.6, §4.3.2: the Write list comes back as it was offered, each
 * segment's length the octets written (no more than offered).  A
 * Responder of RFC 5666's time returned only the chunks it used: fewer
 * chunks than offered are unused ones. */
static bool check_write_list(const struct uiw_rpcrdma_hdr *h,
			     const struct rr_offer *o, struct rr_reply_info *r)
{
	uint32_t i, k, first = 0;

	if (h->nwrite_chunk > o->nwchunk) {
		bad(r, "the reply returns %u Write chunks, %u were offered "
		    "(RFC 8166 §3.4.6)", h->nwrite_chunk, o->nwchunk);
		return false;
	}
	for (i = 0; i < o->nwchunk; first += o->wnseg[i], i++) {
		const struct uiw_rpcrdma_chunk *c;

		r->wlen[i] = 0;
		if (i >= h->nwrite_chunk)
			continue;
		c = &h->write_chunk[i];
		if (c->nseg != o->wnseg[i]) {
			bad(r, "a returned Write chunk has %u segments, %u were "
			    "offered (RFC 8166 §3.4.6)", c->nseg, o->wnseg[i]);
			return false;
		}
		for (k = 0; k < c->nseg; k++) {
			const struct uiw_rpcrdma_seg *g = &h->write_seg[c->first + k];
			const struct uiw_rpcrdma_seg *f = &o->wseg[first + k];

			if (g->handle != f->handle || g->offset != f->offset) {
				bad(r, "a returned Write segment names handle "
				    "0x%x, 0x%x was offered (RFC 8166 §3.4.6)",
				    g->handle, f->handle);
				return false;
			}
			if (g->length > f->length) {
				bad(r, "a returned Write segment is %u octets, "
				    "%u were offered (RFC 8166 §3.4.6)",
				    g->length, f->length);
				return false;
			}
			r->wlen[i] += g->length;
		}
	}
	return true;
}

/* §4.3.3: the Reply chunk comes back as offered, with the octets
 * written; *total gets their sum. */
static bool check_reply_chunk(const struct uiw_rpcrdma_hdr *h,
			      const struct rr_offer *o, uint64_t *total,
			      struct rr_reply_info *r)
{
	uint32_t k;

	*total = 0;
	if (!h->reply_present)
		return true;
	if (!o->reply_present || h->nreply_seg != o->npseg) {
		bad(r, "the reply returns a Reply chunk of %u segments, %u "
		    "were offered (RFC 8166 §4.3.3)", h->nreply_seg,
		    o->reply_present ? o->npseg : 0);
		return false;
	}
	for (k = 0; k < h->nreply_seg; k++) {
		const struct uiw_rpcrdma_seg *g = &h->reply_seg[k];

		if (g->handle != o->pseg[k].handle ||
		    g->offset != o->pseg[k].offset ||
		    g->length > o->pseg[k].length) {
			bad(r, "a returned Reply chunk segment of %u octets "
			    "does not match the one offered (%u) (RFC 8166 "
			    "§4.3.3)", g->length, o->pseg[k].length);
			return false;
		}
		/* a Reply chunk is filled in order (§3.4.6 as for Write
		 * chunks): only the last segment written may be short */
		if (k && g->length && h->reply_seg[k - 1].length !=
		    o->pseg[k - 1].length) {
			bad(r, "Reply chunk segment %u written after a short "
			    "one (RFC 8166 §3.4.6)", k);
			return false;
		}
		*total += g->length;
	}
	return true;
}

void rr_plan_reply(const struct uiw_rpcrdma_hdr *h, size_t len,
		   const struct rr_offer *o, struct rr_reply_info *r)
{
	uint64_t total;

	memset(r, 0, sizeof(*r));
	r->status = UIW_RR_OK;
	if (h->proc == UIW_RDMA_ERROR) {
		/* §4.5: completes the transaction of its XID */
		r->status = h->err == UIW_RPCRDMA_ERR_VERS ? UIW_RR_ERR_VERS :
			UIW_RR_ERR_CHUNK;
		r->vers_low = h->vers_low;
		r->vers_high = h->vers_high;
		if (h->err == UIW_RPCRDMA_ERR_VERS)
			snprintf(r->msg, sizeof(r->msg), "RDMA_ERROR ERR_VERS: "
				 "the Responder speaks versions %u to %u (RFC "
				 "8166 §4.5.1)", h->vers_low, h->vers_high);
		else
			snprintf(r->msg, sizeof(r->msg), "RDMA_ERROR ERR_CHUNK: "
				 "the Responder could not process or answer "
				 "the call's chunks (RFC 8166 §4.5.2, §4.5.3)");
		return;
	}
	if (h->nread_seg) {
		bad(r, "the reply carries a Read list; Responders leave it "
		    "empty (RFC 8166 §4.3.1)");
		return;
	}
	if (!check_write_list(h, o, r) || !check_reply_chunk(h, o, &total, r))
		return;
	if (h->proc == UIW_RDMA_NOMSG) {
		/* §3.5.3: a Long Reply, its Payload stream in the Reply
		 * chunk (the codec has seen that one is there) */
		r->long_reply = true;
		r->reply_len = total;
		return;
	}
	/* RDMA_MSG: the Payload stream is inline; a Reply chunk returned
	 * unused (no octets) is harmless, one with octets contradicts
	 * the procedure (§4.2.4) */
	if (total) {
		bad(r, "RDMA_MSG reply with %llu octets in its Reply chunk "
		    "(RFC 8166 §4.2.4)", (unsigned long long)total);
		return;
	}
	r->inline_off = h->hdr_len;
	r->inline_len = len - h->hdr_len;
}
