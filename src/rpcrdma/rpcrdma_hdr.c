/* The RPC-over-RDMA version 1 transport header codec: rpcrdma_hdr.h. */
#include <string.h>

#include "rpcrdma_hdr.h"

/* ---- The error vocabulary: one row per rule ------------------------- */

static const struct err_row {
	const char *name;
	const char *text;
	/* What a Responder does about a Call with this error (a Requester
	 * silently discards a Reply with any error, §4.5). */
	enum uiw_rpcrdma_act responder;
} err_rows[UIW_RPCRDMA_E_COUNT_] = {
	[UIW_RPCRDMA_OK] = { "OK", "no error", UIW_RPCRDMA_ACT_PROCESS },
	/* §4.5: "not as long as a minimal size RPC-over-RDMA header (28
	 * bytes) ... MUST silently discard the message" */
	[UIW_RPCRDMA_E_SHORT] = { "SHORT",
		"shorter than the 28-octet minimal header (RFC 8166 §4.5)",
		UIW_RPCRDMA_ACT_DISCARD },
	/* §4.5.1 */
	[UIW_RPCRDMA_E_VERS] = { "VERS",
		"rdma_vers is not 1 (RFC 8166 §4.2.2, §4.5.1)",
		UIW_RPCRDMA_ACT_ERR_VERS },
	/* §4.5.2: "an invalid value in the rdma_proc field" */
	[UIW_RPCRDMA_E_PROC] = { "PROC",
		"unknown rdma_proc (RFC 8166 §4.2.4, §4.5.2)",
		UIW_RPCRDMA_ACT_ERR_CHUNK },
	/* §4.6.1: "Responders SHOULD reply with an RDMA_ERROR procedure,
	 * setting the rdma_err field to ERR_CHUNK" */
	[UIW_RPCRDMA_E_MSGP] = { "MSGP",
		"RDMA_MSGP is no longer supported (RFC 8166 §4.6.1)",
		UIW_RPCRDMA_ACT_ERR_CHUNK },
	/* §4.6.2: "Receivers MUST silently discard RDMA_DONE messages" */
	[UIW_RPCRDMA_E_DONE] = { "DONE",
		"RDMA_DONE is no longer supported (RFC 8166 §4.6.2)",
		UIW_RPCRDMA_ACT_DISCARD },
	/* §4.5.2: XDR parsing errors with a recognised rdma_vers get
	 * ERR_CHUNK */
	[UIW_RPCRDMA_E_TRUNC] = { "TRUNC",
		"the header ends inside its chunk lists (RFC 8166 §4.5.2)",
		UIW_RPCRDMA_ACT_ERR_CHUNK },
	/* RFC 4506 §4.19: optional-data is a boolean, 0 or 1 (§4.9) */
	[UIW_RPCRDMA_E_DISCRIM] = { "DISCRIM",
		"a list discriminator neither 0 nor 1 (RFC 4506 §4.4, §4.19; "
		"RFC 8166 §4.5.2)",
		UIW_RPCRDMA_ACT_ERR_CHUNK },
	[UIW_RPCRDMA_E_SEG_COUNT] = { "SEG_COUNT",
		"a segment count larger than the rest of the header can hold "
		"(RFC 4506 §4.13; RFC 8166 §4.5.2)",
		UIW_RPCRDMA_ACT_ERR_CHUNK },
	/* §3.4.5: "The value in this field MUST be a multiple of four." */
	[UIW_RPCRDMA_E_POSITION] = { "POSITION",
		"a Read segment Position that is not a multiple of 4 (RFC "
		"8166 §3.4.5)",
		UIW_RPCRDMA_ACT_ERR_CHUNK },
	/* §3.4.5: the segments of a Read chunk follow one another; a
	 * Position seen again after another one would make two chunks at
	 * one place in the Payload stream */
	[UIW_RPCRDMA_E_READ_SPLIT] = { "READ_SPLIT",
		"the segments of one Read chunk are not together in the Read "
		"list (RFC 8166 §3.4.5)",
		UIW_RPCRDMA_ACT_ERR_CHUNK },
	/* §3.5.3 and §4.2.4: RDMA_MSG carries its Payload stream inline,
	 * from Position zero (its XID, which no ULB makes DDP-eligible,
	 * §3.4.2); a Position-Zero Read chunk carries a whole Payload
	 * stream and goes with RDMA_NOMSG */
	[UIW_RPCRDMA_E_POS0_MSG] = { "POS0_MSG",
		"a Position-Zero Read chunk in RDMA_MSG, whose Payload stream "
		"is inline (RFC 8166 §3.5.3, §4.2.4)",
		UIW_RPCRDMA_ACT_ERR_CHUNK },
	/* §4.2.4: one chunk "MUST be present and MUST hold the Payload
	 * stream"; §4.5.2 names all three absent as an XDR error.  Only a
	 * Position-Zero Read chunk (Long Call) or the Reply chunk (Long
	 * Reply) can hold one (§3.5.3); a Write chunk holds one data item
	 * (§3.4.4.4) */
	[UIW_RPCRDMA_E_NOMSG_EMPTY] = { "NOMSG_EMPTY",
		"RDMA_NOMSG with neither a Position-Zero Read chunk nor a "
		"Reply chunk to hold the Payload stream (RFC 8166 §4.2.4, "
		"§4.5.2)",
		UIW_RPCRDMA_ACT_ERR_CHUNK },
	[UIW_RPCRDMA_E_READ_SEGS] = { "READ_SEGS",
		"more Read segments than this receiver accepts (RFC 8166 "
		"§4.5.2)",
		UIW_RPCRDMA_ACT_ERR_CHUNK },
	[UIW_RPCRDMA_E_READ_CHUNKS] = { "READ_CHUNKS",
		"more Read chunks than this receiver accepts (RFC 8166 "
		"§4.5.2)",
		UIW_RPCRDMA_ACT_ERR_CHUNK },
	[UIW_RPCRDMA_E_WRITE_SEGS] = { "WRITE_SEGS",
		"more Write chunk segments than this receiver accepts (RFC "
		"8166 §4.5.2)",
		UIW_RPCRDMA_ACT_ERR_CHUNK },
	[UIW_RPCRDMA_E_WRITE_CHUNKS] = { "WRITE_CHUNKS",
		"more Write chunks than this receiver accepts (RFC 8166 "
		"§4.5.2)",
		UIW_RPCRDMA_ACT_ERR_CHUNK },
	[UIW_RPCRDMA_E_REPLY_SEGS] = { "REPLY_SEGS",
		"more Reply chunk segments than this receiver accepts (RFC "
		"8166 §4.5.2)",
		UIW_RPCRDMA_ACT_ERR_CHUNK },
	/* §4.5: "A receiver MUST silently discard an RDMA_ERROR procedure
	 * that it cannot decode." */
	[UIW_RPCRDMA_E_ERRCODE] = { "ERRCODE",
		"RDMA_ERROR with an unknown rdma_err (RFC 8166 §4.5)",
		UIW_RPCRDMA_ACT_DISCARD },
	[UIW_RPCRDMA_E_CHUNK_RANGE] = { "CHUNK_RANGE",
		"a chunk names segments outside its array (encoding)",
		UIW_RPCRDMA_ACT_DISCARD },
	[UIW_RPCRDMA_E_NOSPACE] = { "NOSPACE",
		"the output buffer is too small (encoding)",
		UIW_RPCRDMA_ACT_DISCARD },
};

const char *uiw_rpcrdma_err_name(enum uiw_rpcrdma_err e)
{
	return (unsigned)e < UIW_RPCRDMA_E_COUNT_ ? err_rows[e].name : "?";
}

const char *uiw_rpcrdma_strerror(enum uiw_rpcrdma_err e)
{
	return (unsigned)e < UIW_RPCRDMA_E_COUNT_ ? err_rows[e].text :
		"unknown error";
}

const char *uiw_rpcrdma_act_name(enum uiw_rpcrdma_act a)
{
	static const char *const names[] = {
		[UIW_RPCRDMA_ACT_PROCESS]   = "process",
		[UIW_RPCRDMA_ACT_DISCARD]   = "discard",
		[UIW_RPCRDMA_ACT_ERR_VERS]  = "ERR_VERS",
		[UIW_RPCRDMA_ACT_ERR_CHUNK] = "ERR_CHUNK",
	};

	return (unsigned)a < 4 ? names[a] : "?";
}

/* ---- Octets ----------------------------------------------------------- */

struct cur {
	const uint8_t *p;
	size_t len, off;
};

static size_t avail(const struct cur *c)
{
	return c->len - c->off;
}

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

/* The next word; false when fewer than 4 octets are left. */
static bool get32(struct cur *c, uint32_t *v)
{
	if (avail(c) < 4)
		return false;
	*v = be32(c->p + c->off);
	c->off += 4;
	return true;
}

/* A plain segment; the caller has checked that 16 octets are left. */
static void get_seg(struct cur *c, struct uiw_rpcrdma_seg *s)
{
	const uint8_t *p = c->p + c->off;

	s->handle = be32(p);
	s->length = be32(p + 4);
	s->offset = (uint64_t)be32(p + 8) << 32 | be32(p + 12);
	c->off += UIW_RPCRDMA_SEG_LEN;
}

static uint8_t *put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
	return p + 4;
}

static uint8_t *put_seg(uint8_t *p, const struct uiw_rpcrdma_seg *s)
{
	p = put32(p, s->handle);
	p = put32(p, s->length);
	p = put32(p, (uint32_t)(s->offset >> 32));
	return put32(p, (uint32_t)s->offset);
}

static enum uiw_rpcrdma_err fail(struct uiw_rpcrdma_hdr *h,
				 enum uiw_rpcrdma_err e, size_t at)
{
	h->bad_off = at;
	return e;
}

/* ---- Rules the decoder and the encoder share ------------------------- */

/* §3.4.5: Positions are multiples of 4, and the segments of a chunk
 * (one Position) are together.  On error *bad is the segment at fault. */
static enum uiw_rpcrdma_err check_read_list(const struct uiw_rpcrdma_read_seg *s,
					    uint32_t n, uint32_t *bad)
{
	uint32_t i, j;

	for (i = 0; i < n; i++) {
		*bad = i;
		if (s[i].position & 3)
			return UIW_RPCRDMA_E_POSITION;
		if (i == 0 || s[i].position == s[i - 1].position)
			continue;
		/* a new chunk: its Position must not be an earlier one's */
		for (j = 0; j + 1 < i; j++)
			if (s[j].position == s[i].position)
				return UIW_RPCRDMA_E_READ_SPLIT;
	}
	return UIW_RPCRDMA_OK;
}

bool uiw_rpcrdma_has_pos0(const struct uiw_rpcrdma_hdr *h)
{
	uint32_t i;

	for (i = 0; i < h->nread_seg; i++)
		if (h->read_seg[i].position == 0)
			return true;
	return false;
}

/* The rules between the lists and the procedure; *bad_seg is the Read
 * segment at fault or UINT32_MAX when the procedure itself is. */
static enum uiw_rpcrdma_err check_lists(const struct uiw_rpcrdma_hdr *h,
					uint32_t *bad_seg)
{
	enum uiw_rpcrdma_err e = check_read_list(h->read_seg, h->nread_seg,
						 bad_seg);
	uint32_t i;

	if (e)
		return e;
	*bad_seg = UINT32_MAX;
	if (h->proc == UIW_RDMA_MSG) {
		for (i = 0; i < h->nread_seg; i++) {
			if (h->read_seg[i].position == 0) {
				*bad_seg = i;
				return UIW_RPCRDMA_E_POS0_MSG;
			}
		}
	} else if (!uiw_rpcrdma_has_pos0(h) && !h->reply_present) {
		return UIW_RPCRDMA_E_NOMSG_EMPTY;
	}
	return UIW_RPCRDMA_OK;
}

/* ---- Procedure bodies: decode ----------------------------------------- */

static enum uiw_rpcrdma_err trunc_at(struct uiw_rpcrdma_hdr *h,
				     const struct cur *c)
{
	return fail(h, UIW_RPCRDMA_E_TRUNC, c->len);
}

/* One optional-data discriminator: 0 or 1 into *more. */
static enum uiw_rpcrdma_err get_discrim(struct uiw_rpcrdma_hdr *h,
					struct cur *c, bool *more)
{
	size_t at = c->off;
	uint32_t d;

	if (!get32(c, &d))
		return trunc_at(h, c);
	if (d > 1)
		return fail(h, UIW_RPCRDMA_E_DISCRIM, at);
	*more = d;
	return UIW_RPCRDMA_OK;
}

/* A counted array of plain segments (a Write chunk, the Reply chunk)
 * into seg[*nseg..], at most max in all; too_many is the error for
 * more. */
static enum uiw_rpcrdma_err get_write_chunk(struct uiw_rpcrdma_hdr *h,
					    struct cur *c,
					    struct uiw_rpcrdma_seg *seg,
					    uint32_t *nseg, uint32_t max,
					    enum uiw_rpcrdma_err too_many)
{
	size_t at = c->off;
	uint32_t count, i;

	if (!get32(c, &count))
		return trunc_at(h, c);
	/* compared by division: count * 16 would overflow 32 bits */
	if (count > avail(c) / UIW_RPCRDMA_SEG_LEN)
		return fail(h, UIW_RPCRDMA_E_SEG_COUNT, at);
	if (count > max - *nseg)
		return fail(h, too_many, at);
	for (i = 0; i < count; i++)
		get_seg(c, &seg[(*nseg)++]);
	return UIW_RPCRDMA_OK;
}

/* §4.3.1: the Read list, then its segments grouped into chunks. */
static enum uiw_rpcrdma_err dec_read_list(struct uiw_rpcrdma_hdr *h,
					  struct cur *c,
					  const struct uiw_rpcrdma_space *sp)
{
	struct uiw_rpcrdma_read_seg *rs;
	struct uiw_rpcrdma_chunk *ch;
	size_t start = c->off, at;
	enum uiw_rpcrdma_err e;
	uint32_t n = 0, i, bad;
	bool more;

	for (;;) {
		at = c->off;
		if ((e = get_discrim(h, c, &more)))
			return e;
		if (!more)
			break;
		if (avail(c) < UIW_RPCRDMA_READ_LEN - 4)
			return trunc_at(h, c);
		if (n == sp->max_read_seg)
			return fail(h, UIW_RPCRDMA_E_READ_SEGS, at);
		rs = &sp->read_seg[n++];
		get32(c, &rs->position);
		get_seg(c, &rs->target);
	}
	h->read_seg = sp->read_seg;
	h->nread_seg = n;
	if ((e = check_read_list(h->read_seg, n, &bad)))
		return fail(h, e, start + (size_t)bad * UIW_RPCRDMA_READ_LEN + 4);

	/* consecutive segments of one Position make a chunk (§3.4.5) */
	h->read_chunk = sp->read_chunk;
	for (i = 0; i < n; i++) {
		if (i && sp->read_seg[i].position == sp->read_seg[i - 1].position) {
			sp->read_chunk[h->nread_chunk - 1].nseg++;
			continue;
		}
		if (h->nread_chunk == sp->max_read_chunk)
			return fail(h, UIW_RPCRDMA_E_READ_CHUNKS,
				    start + (size_t)i * UIW_RPCRDMA_READ_LEN);
		ch = &sp->read_chunk[h->nread_chunk++];
		ch->position = sp->read_seg[i].position;
		ch->first = i;
		ch->nseg = 1;
	}
	return UIW_RPCRDMA_OK;
}

/* §4.3.2: the Write list, a list of counted arrays. */
static enum uiw_rpcrdma_err dec_write_list(struct uiw_rpcrdma_hdr *h,
					   struct cur *c,
					   const struct uiw_rpcrdma_space *sp)
{
	struct uiw_rpcrdma_chunk *ch;
	enum uiw_rpcrdma_err e;
	size_t at;
	bool more;

	h->write_seg = sp->write_seg;
	h->write_chunk = sp->write_chunk;
	for (;;) {
		at = c->off;
		if ((e = get_discrim(h, c, &more)))
			return e;
		if (!more)
			return UIW_RPCRDMA_OK;
		if (h->nwrite_chunk == sp->max_write_chunk)
			return fail(h, UIW_RPCRDMA_E_WRITE_CHUNKS, at);
		ch = &sp->write_chunk[h->nwrite_chunk];
		ch->position = 0;
		ch->first = h->nwrite_seg;
		if ((e = get_write_chunk(h, c, sp->write_seg, &h->nwrite_seg,
					 sp->max_write_seg,
					 UIW_RPCRDMA_E_WRITE_SEGS)))
			return e;
		ch->nseg = h->nwrite_seg - ch->first;
		h->nwrite_chunk++;
	}
}

/* RDMA_MSG and RDMA_NOMSG (§4.3): three lists. */
static enum uiw_rpcrdma_err dec_lists(struct uiw_rpcrdma_hdr *h, struct cur *c,
				      const struct uiw_rpcrdma_space *sp)
{
	enum uiw_rpcrdma_err e;
	uint32_t bad;

	if ((e = dec_read_list(h, c, sp)) || (e = dec_write_list(h, c, sp)))
		return e;
	/* §4.3.3: the Reply chunk, an optional Write chunk */
	h->reply_seg = sp->reply_seg;
	if ((e = get_discrim(h, c, &h->reply_present)))
		return e;
	if (h->reply_present &&
	    (e = get_write_chunk(h, c, sp->reply_seg, &h->nreply_seg,
				 sp->max_reply_seg, UIW_RPCRDMA_E_REPLY_SEGS)))
		return e;
	h->hdr_len = c->off;
	if ((e = check_lists(h, &bad)))
		return fail(h, e, bad == UINT32_MAX ? 12 :
			    UIW_RPCRDMA_FIXED_LEN + 4 +
			    (size_t)bad * UIW_RPCRDMA_READ_LEN);
	return UIW_RPCRDMA_OK;
}

/* §4.5: rpc_rdma_error. */
static enum uiw_rpcrdma_err dec_error(struct uiw_rpcrdma_hdr *h, struct cur *c,
				      const struct uiw_rpcrdma_space *sp)
{
	size_t at = c->off;

	if (!get32(c, &h->err))
		return trunc_at(h, c);
	if (h->err == UIW_RPCRDMA_ERR_VERS) {
		if (!get32(c, &h->vers_low) || !get32(c, &h->vers_high))
			return trunc_at(h, c);
	} else if (h->err != UIW_RPCRDMA_ERR_CHUNK) {
		return fail(h, UIW_RPCRDMA_E_ERRCODE, at);
	}
	h->hdr_len = c->off;
	return UIW_RPCRDMA_OK;
}

/* §4.6: refused with the fixed words decoded, which is all a receiver
 * needs to answer or drop them. */
static enum uiw_rpcrdma_err dec_msgp(struct uiw_rpcrdma_hdr *h, struct cur *c,
				     const struct uiw_rpcrdma_space *sp)
{
	return fail(h, UIW_RPCRDMA_E_MSGP, 12);
}

static enum uiw_rpcrdma_err dec_done(struct uiw_rpcrdma_hdr *h, struct cur *c,
				     const struct uiw_rpcrdma_space *sp)
{
	return fail(h, UIW_RPCRDMA_E_DONE, 12);
}

/* ---- Procedure bodies: encode ----------------------------------------- */

/* Length of the body of RDMA_MSG / RDMA_NOMSG, or an error. */
static enum uiw_rpcrdma_err len_lists(const struct uiw_rpcrdma_hdr *h,
				      uint64_t *n)
{
	enum uiw_rpcrdma_err e;
	uint32_t i, bad;

	if (h->vers != UIW_RPCRDMA_VERSION)
		return UIW_RPCRDMA_E_VERS;
	if ((h->nread_seg && !h->read_seg) ||
	    (h->nwrite_chunk && !h->write_chunk) ||
	    (h->reply_present && h->nreply_seg && !h->reply_seg))
		return UIW_RPCRDMA_E_CHUNK_RANGE;
	if ((e = check_lists(h, &bad)))
		return e;
	*n = 4 + (uint64_t)h->nread_seg * UIW_RPCRDMA_READ_LEN + 4 + 4;
	for (i = 0; i < h->nwrite_chunk; i++) {
		const struct uiw_rpcrdma_chunk *ch = &h->write_chunk[i];

		if ((uint64_t)ch->first + ch->nseg > h->nwrite_seg ||
		    (ch->nseg && !h->write_seg))
			return UIW_RPCRDMA_E_CHUNK_RANGE;
		*n += 8 + (uint64_t)ch->nseg * UIW_RPCRDMA_SEG_LEN;
	}
	if (h->reply_present)
		*n += 4 + (uint64_t)h->nreply_seg * UIW_RPCRDMA_SEG_LEN;
	return UIW_RPCRDMA_OK;
}

static uint8_t *put_write_chunk(uint8_t *p, const struct uiw_rpcrdma_seg *s,
				uint32_t n)
{
	uint32_t i;

	p = put32(p, n);
	for (i = 0; i < n; i++)
		p = put_seg(p, &s[i]);
	return p;
}

static uint8_t *enc_lists(const struct uiw_rpcrdma_hdr *h, uint8_t *p)
{
	uint32_t i;

	for (i = 0; i < h->nread_seg; i++) {
		p = put32(p, 1);
		p = put32(p, h->read_seg[i].position);
		p = put_seg(p, &h->read_seg[i].target);
	}
	p = put32(p, 0);
	for (i = 0; i < h->nwrite_chunk; i++) {
		p = put32(p, 1);
		p = put_write_chunk(p, h->write_seg + h->write_chunk[i].first,
				    h->write_chunk[i].nseg);
	}
	p = put32(p, 0);
	p = put32(p, h->reply_present);
	if (h->reply_present)
		p = put_write_chunk(p, h->reply_seg, h->nreply_seg);
	return p;
}

static enum uiw_rpcrdma_err len_error(const struct uiw_rpcrdma_hdr *h,
				      uint64_t *n)
{
	if (h->err == UIW_RPCRDMA_ERR_VERS)
		*n = 12;
	else if (h->err == UIW_RPCRDMA_ERR_CHUNK)
		*n = 4;
	else
		return UIW_RPCRDMA_E_ERRCODE;
	return UIW_RPCRDMA_OK;
}

static uint8_t *enc_error(const struct uiw_rpcrdma_hdr *h, uint8_t *p)
{
	p = put32(p, h->err);
	if (h->err == UIW_RPCRDMA_ERR_VERS) {
		p = put32(p, h->vers_low);
		p = put32(p, h->vers_high);
	}
	return p;
}

static enum uiw_rpcrdma_err len_msgp(const struct uiw_rpcrdma_hdr *h,
				     uint64_t *n)
{
	return UIW_RPCRDMA_E_MSGP;    /* §4.6.1: senders MUST NOT send */
}

static enum uiw_rpcrdma_err len_done(const struct uiw_rpcrdma_hdr *h,
				     uint64_t *n)
{
	return UIW_RPCRDMA_E_DONE;    /* §4.6.2: senders MUST NOT send */
}

/* ---- The procedures: one row each (§4.2.4) ---------------------------- */

static const struct proc_row {
	const char *name;
	/* the shortest message decoded as this procedure; shorter ones
	 * are E_SHORT */
	size_t min_len;
	enum uiw_rpcrdma_err (*decode)(struct uiw_rpcrdma_hdr *, struct cur *,
				       const struct uiw_rpcrdma_space *);
	enum uiw_rpcrdma_err (*body_len)(const struct uiw_rpcrdma_hdr *,
					 uint64_t *);
	uint8_t *(*encode)(const struct uiw_rpcrdma_hdr *, uint8_t *);
	/* what a Requester and a Responder do with one that decoded */
	enum uiw_rpcrdma_act ok[2];
} proc_rows[] = {
	[UIW_RDMA_MSG] = { "RDMA_MSG", UIW_RPCRDMA_MIN_LEN, dec_lists,
		len_lists, enc_lists,
		{ UIW_RPCRDMA_ACT_PROCESS, UIW_RPCRDMA_ACT_PROCESS } },
	[UIW_RDMA_NOMSG] = { "RDMA_NOMSG", UIW_RPCRDMA_MIN_LEN, dec_lists,
		len_lists, enc_lists,
		{ UIW_RPCRDMA_ACT_PROCESS, UIW_RPCRDMA_ACT_PROCESS } },
	/* §4.5: shorter than 28 octets is discarded unread */
	[UIW_RDMA_MSGP] = { "RDMA_MSGP", UIW_RPCRDMA_MIN_LEN, dec_msgp,
		len_msgp, NULL,
		{ UIW_RPCRDMA_ACT_DISCARD, UIW_RPCRDMA_ACT_DISCARD } },
	/* RDMA_DONE is discarded however long it is */
	[UIW_RDMA_DONE] = { "RDMA_DONE", UIW_RPCRDMA_FIXED_LEN, dec_done,
		len_done, NULL,
		{ UIW_RPCRDMA_ACT_DISCARD, UIW_RPCRDMA_ACT_DISCARD } },
	/*
	 * §4.5 asks a Responder for an ERR_CHUNK reply of 20 octets, which
	 * the same section's 28-octet minimum would have a Requester drop
	 * unread; the minimum is there so that an XID is never taken from
	 * a message too short to hold one, and an RDMA_ERROR holds its XID
	 * in 20 octets.  So RDMA_ERROR decodes from 20 octets.  It
	 * completes the XID at a Requester; "A Responder MUST silently
	 * discard RDMA_ERROR procedures" (§4.2.4).
	 */
	[UIW_RDMA_ERROR] = { "RDMA_ERROR", UIW_RPCRDMA_ERR_CHUNK_LEN,
		dec_error, len_error, enc_error,
		{ UIW_RPCRDMA_ACT_PROCESS, UIW_RPCRDMA_ACT_DISCARD } },
};

static const struct proc_row *proc_row(uint32_t proc)
{
	return proc < sizeof(proc_rows) / sizeof(proc_rows[0]) ?
		&proc_rows[proc] : NULL;
}

const char *uiw_rpcrdma_proc_name(uint32_t proc)
{
	const struct proc_row *r = proc_row(proc);

	return r ? r->name : "unknown";
}

/* ---- Entry points ------------------------------------------------------ */

enum uiw_rpcrdma_err uiw_rpcrdma_decode(const void *buf, size_t len,
					const struct uiw_rpcrdma_space *sp,
					struct uiw_rpcrdma_hdr *h)
{
	struct cur c = { buf, len, 0 };
	const struct proc_row *r;

	memset(h, 0, sizeof(*h));
	/* §4.2: xid, vers, credit, proc at fixed places in every version */
	if (!get32(&c, &h->xid) || !get32(&c, &h->vers) ||
	    !get32(&c, &h->credit) || !get32(&c, &h->proc))
		return fail(h, UIW_RPCRDMA_E_SHORT, len);
	r = proc_row(h->proc);
	if (h->vers != UIW_RPCRDMA_VERSION || !r) {
		if (len < UIW_RPCRDMA_MIN_LEN)
			return fail(h, UIW_RPCRDMA_E_SHORT, len);
		return h->vers != UIW_RPCRDMA_VERSION ?
			fail(h, UIW_RPCRDMA_E_VERS, 4) :
			fail(h, UIW_RPCRDMA_E_PROC, 12);
	}
	if (len < r->min_len)
		return fail(h, UIW_RPCRDMA_E_SHORT, len);
	return r->decode(h, &c, sp);
}

enum uiw_rpcrdma_err uiw_rpcrdma_encoded_len(const struct uiw_rpcrdma_hdr *h,
					     size_t *len)
{
	const struct proc_row *r = proc_row(h->proc);
	enum uiw_rpcrdma_err e;
	uint64_t n;

	if (!r)
		return UIW_RPCRDMA_E_PROC;
	if ((e = r->body_len(h, &n)))
		return e;
	n += UIW_RPCRDMA_FIXED_LEN;
	if (n > SIZE_MAX)
		return UIW_RPCRDMA_E_NOSPACE;
	*len = (size_t)n;
	return UIW_RPCRDMA_OK;
}

enum uiw_rpcrdma_err uiw_rpcrdma_encode(const struct uiw_rpcrdma_hdr *h,
					void *out, size_t cap, size_t *len)
{
	enum uiw_rpcrdma_err e;
	uint8_t *p = out;
	size_t n;

	if ((e = uiw_rpcrdma_encoded_len(h, &n)))
		return e;
	if (n > cap)
		return UIW_RPCRDMA_E_NOSPACE;
	p = put32(p, h->xid);
	p = put32(p, h->vers);
	p = put32(p, h->credit);
	p = put32(p, h->proc);
	proc_row(h->proc)->encode(h, p);
	*len = n;
	return UIW_RPCRDMA_OK;
}

enum uiw_rpcrdma_act uiw_rpcrdma_action(enum uiw_rpcrdma_role role,
					enum uiw_rpcrdma_err rc,
					const struct uiw_rpcrdma_hdr *h)
{
	if (rc == UIW_RPCRDMA_OK)
		return proc_row(h->proc)->ok[role];
	/* §4.5: "If errors are detected in the RPC-over-RDMA header of an
	 * RPC Reply message, a Requester MUST silently discard the
	 * message"; §4.6.1 likewise for RDMA_MSGP. */
	if (role == UIW_RPCRDMA_REQUESTER)
		return UIW_RPCRDMA_ACT_DISCARD;
	/* §4.2.4: a Responder never answers an RDMA_ERROR (whose proc
	 * value is fixed for all versions, §4.1.2) */
	if (rc != UIW_RPCRDMA_E_SHORT && h->proc == UIW_RDMA_ERROR)
		return UIW_RPCRDMA_ACT_DISCARD;
	return (unsigned)rc < UIW_RPCRDMA_E_COUNT_ ? err_rows[rc].responder :
		UIW_RPCRDMA_ACT_DISCARD;
}

int uiw_rpcrdma_encode_err_reply(const struct uiw_rpcrdma_hdr *failed,
				 enum uiw_rpcrdma_act act, uint32_t credit,
				 void *out, size_t cap)
{
	/* §4.5: the failing message's rdma_xid and rdma_vers */
	struct uiw_rpcrdma_hdr r = {
		.xid = failed->xid, .vers = failed->vers, .credit = credit,
		.proc = UIW_RDMA_ERROR,
		/* §4.5.1: the versions this codec speaks, low to high */
		.vers_low = UIW_RPCRDMA_VERSION,
		.vers_high = UIW_RPCRDMA_VERSION,
	};
	size_t n;

	if (act == UIW_RPCRDMA_ACT_ERR_VERS)
		r.err = UIW_RPCRDMA_ERR_VERS;
	else if (act == UIW_RPCRDMA_ACT_ERR_CHUNK)
		r.err = UIW_RPCRDMA_ERR_CHUNK;
	else
		return 0;
	if (uiw_rpcrdma_encode(&r, out, cap, &n))
		return -1;
	return (int)n;
}

/* ---- Helpers ------------------------------------------------------------ */

uint64_t uiw_rpcrdma_segs_len(const struct uiw_rpcrdma_seg *seg, uint32_t n)
{
	uint64_t sum = 0;
	uint32_t i;

	for (i = 0; i < n; i++)
		sum += seg[i].length;
	return sum;
}

uint64_t uiw_rpcrdma_read_chunk_len(const struct uiw_rpcrdma_hdr *h,
				    uint32_t chunk)
{
	const struct uiw_rpcrdma_chunk *ch;
	uint64_t sum = 0;
	uint32_t i;

	if (chunk >= h->nread_chunk)
		return 0;
	ch = &h->read_chunk[chunk];
	for (i = 0; i < ch->nseg; i++)
		sum += h->read_seg[ch->first + i].target.length;
	return sum;
}

uint64_t uiw_rpcrdma_write_chunk_len(const struct uiw_rpcrdma_hdr *h,
				     uint32_t chunk)
{
	const struct uiw_rpcrdma_chunk *ch;

	if (chunk >= h->nwrite_chunk)
		return 0;
	ch = &h->write_chunk[chunk];
	return uiw_rpcrdma_segs_len(h->write_seg + ch->first, ch->nseg);
}
