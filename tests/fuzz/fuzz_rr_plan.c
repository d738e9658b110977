/*
 * The transport's decisions (src/rpcrdma/rr_plan.c, rr_layout.c):
 *
 * 1. Any octets as a received call, for any max_call: the plan reads
 *    nothing outside the message, and when it says PROCESS, its
 *    copies, RDMA Reads and pads cover the assembled Payload stream
 *    [0, call_len) exactly once, call_len <= max_call, the inline
 *    octets are used in order, every Read is of a segment the header
 *    named; otherwise its answer encodes (§4.5).
 * 2. A call built by rr_call_layout from pieces taken from the input,
 *    sent as the Requester would (header, inline octets, Read
 *    segments over the pieces and the staging buffer), planned by the
 *    Responder and its Reads carried out in memory: the assembled
 *    stream is the unreduced stream, octet for octet.
 * 3. A reply laid out by rr_reply_layout for a call offering Write
 *    chunks and a Reply chunk of lengths from the input: every RDMA
 *    Write falls inside an offered segment; the Requester's check
 *    (rr_plan_reply) accepts the header; the Write chunks hold the
 *    DDP results, the inline octets or the Reply chunk the rest.
 * 4. Any octets as a reply, judged against an offer from the input:
 *    accepted only with Write chunk lengths within the offer, the
 *    inline stream inside the message, the Reply chunk's octets within
 *    the offered ones; an RDMA_ERROR completes with its status.
 *
 * Input: a selector octet, then each part reads its fields in order
 * (zeros once the input runs out).
 */
#include "fuzz.h"
#include "rpcrdma/rr_plan.h"

#define MAX_PIECES 8
#define MAX_PIECE  20000u

/* ---- 1: any octets ---------------------------------------------------- */

static void any_call(const uint8_t *data, size_t size)
{
	struct fz in = { data, size };
	uint64_t max_call = 4 + fz_u16(&in);
	struct rr_plan *p = malloc(sizeof(*p));
	uint8_t *msg = fz_dup(in.p, in.n), *seen;
	size_t len = in.n;
	uint64_t prev_src, read_total = 0, i, k;
	unsigned j;

	FZ_CHECK(p, "out of memory");
	rr_plan_call(msg, len, max_call, p);
	if (p->act != UIW_RPCRDMA_ACT_PROCESS) {
		uint8_t r[32];
		int m = uiw_rpcrdma_encode_err_reply(&p->hdr, p->act, 1, r,
						     sizeof(r));

		FZ_CHECK(p->why, "refused without a reason");
		FZ_CHECK(m == 0 || m == 20 || m == 28, "answer of %d", m);
		goto out;
	}
	FZ_CHECK(p->call_len >= 4 && p->call_len <= max_call,
		 "call_len %llu, max_call %llu",
		 (unsigned long long)p->call_len, (unsigned long long)max_call);
	FZ_CHECK(p->nwchunk <= UIW_RR_MAX_WCHUNK && p->npseg <= RR_MAX_PSEG,
		 "offered lists too long");
	for (j = 0; j < p->nwchunk; j++)
		FZ_CHECK(p->wchunk[j].first + p->wchunk[j].nseg <= RR_MAX_WSEG,
			 "Write chunk %u outside its segments", j);
	if (p->in_place) {
		FZ_CHECK(!p->nread && p->payload_off + p->call_len == len,
			 "in place, but %u Reads or %zu + %llu != %zu", p->nread,
			 p->payload_off, (unsigned long long)p->call_len, len);
		goto out;
	}
	seen = calloc(1, (size_t)p->call_len);
	FZ_CHECK(seen, "out of memory");
	prev_src = p->hdr.hdr_len;
	for (j = 0; j < p->ncopy; j++) {
		const struct rr_copy *c = &p->copy[j];

		/* the inline octets, in order, none skipped */
		FZ_CHECK(c->src == prev_src && c->src + c->len <= len,
			 "copy %u from %llu (expected %llu, message %zu)", j,
			 (unsigned long long)c->src,
			 (unsigned long long)prev_src, len);
		prev_src += c->len;
		FZ_CHECK(c->dst + c->len <= p->call_len, "copy %u past the end",
			 j);
		for (i = 0; i < c->len; i++)
			seen[c->dst + i]++;
	}
	if (!p->long_call)
		FZ_CHECK(prev_src == len, "inline octets %llu..%zu unused",
			 (unsigned long long)prev_src, len);
	for (j = 0; j < p->nread; j++) {
		const struct rr_read *r = &p->read[j];
		bool named = false;

		FZ_CHECK(r->len && r->dst + r->len <= p->call_len,
			 "Read %u of %u at %llu", j, r->len,
			 (unsigned long long)r->dst);
		/* inside a segment the header names */
		for (k = 0; k < p->hdr.nread_seg; k++) {
			const struct uiw_rpcrdma_seg *g = &p->hdr.read_seg[k].target;

			/* offsets are the peer's addresses: modulo 2^64 */
			named |= g->handle == r->handle &&
				 r->offset - g->offset < g->length &&
				 r->offset - g->offset + r->len <= g->length;
		}
		FZ_CHECK(named, "Read %u outside every segment", j);
		read_total += r->len;
		for (i = 0; i < r->len; i++)
			seen[r->dst + i]++;
	}
	FZ_CHECK(read_total <= max_call, "Reads of %llu octets",
		 (unsigned long long)read_total);
	for (j = 0; j < p->nzero; j++) {
		FZ_CHECK(p->zero[j].len < 4 &&
			 p->zero[j].dst + p->zero[j].len <= p->call_len,
			 "pad %u", j);
		for (i = 0; i < p->zero[j].len; i++)
			seen[p->zero[j].dst + i]++;
	}
	for (i = 0; i < p->call_len; i++)
		FZ_CHECK(seen[i] == 1, "octet %llu of the stream placed %u "
			 "times", (unsigned long long)i, seen[i]);
	free(seen);
out:
	free(msg);
	free(p);
}

/* ---- Pieces from the input -------------------------------------------- */

struct pieces {
	struct uiw_rr_iov iov[MAX_PIECES + 1];
	uint8_t *mem[MAX_PIECES + 1];
	unsigned n;
};

static void pieces_make(struct fz *in, struct pieces *ps, uint32_t xid,
			bool lead_xid)
{
	unsigned n = fz_u8(in) % (MAX_PIECES + 1), i;

	ps->n = 0;
	if (lead_xid) {
		ps->mem[0] = fz_alloc(4);
		ref_put_be16(ps->mem[0], (uint16_t)(xid >> 16));
		ref_put_be16(ps->mem[0] + 2, (uint16_t)xid);
		ps->iov[ps->n++] = (struct uiw_rr_iov){ ps->mem[0], 4, false };
	}
	for (i = 0; i < n; i++) {
		uint8_t f = fz_u8(in);
		size_t len = fz_u16(in) % MAX_PIECE;
		uint8_t *m = fz_alloc(len ? len : 1);
		size_t k;

		/* now and then long pieces, to reach Read chunks and the
		 * Long Call's own segments */
		if (f & 0x40)
			len = len % 64;
		for (k = 0; k < len; k++)
			m[k] = (uint8_t)(k * 131 + i * 7 + f);
		ps->mem[ps->n] = m;
		ps->iov[ps->n++] = (struct uiw_rr_iov){ m, len, (f & 1) != 0 };
	}
}

static void pieces_free(struct pieces *ps)
{
	unsigned i;

	for (i = 0; i < ps->n; i++)
		free(ps->mem[i]);
}

/* ---- 2: a call, there and back ----------------------------------------- */

#define STAGE_HANDLE 0xfff00000u

static void call_round_trip(struct fz *in)
{
	uint32_t xid = fz_u32(in), thresh = 1024 + 16u * fz_u8(in);
	struct uiw_rpcrdma_read_seg rseg[RR_CALL_MAX_SEG];
	struct uiw_rpcrdma_hdr h = { 0 };
	struct rr_call_layout l;
	struct pieces ps;
	struct rr_plan *p = malloc(sizeof(*p));
	uint8_t *msg, *stage, *want, *got;
	size_t hlen, mlen;
	unsigned i;

	FZ_CHECK(p, "out of memory");
	pieces_make(in, &ps, xid, true);
	/* a header with an empty Read list, nothing else: 28 octets */
	rr_call_layout(ps.iov, ps.n, UIW_RPCRDMA_MIN_LEN, thresh, &l);
	FZ_CHECK(l.stream_len == rr_stream_len(ps.iov, ps.n), "stream length");
	if (l.kind == RR_CALL_TOO_BIG)
		goto out;
	FZ_CHECK(l.kind == RR_CALL_INLINE ? !l.nseg && !l.ext.n :
		 l.nseg > 0, "kind %d with %u segments", l.kind, l.nseg);
	FZ_CHECK(l.hdr_len == UIW_RPCRDMA_MIN_LEN + l.nseg * 24u,
		 "header of %zu octets for %u segments", l.hdr_len, l.nseg);
	FZ_CHECK(l.kind == RR_CALL_LONG || l.hdr_len + l.kept_len <= thresh,
		 "%zu + %llu over %u inline", l.hdr_len,
		 (unsigned long long)l.kept_len, thresh);
	FZ_CHECK(l.kept_len == rr_stream_kept(ps.iov, ps.n, &l.ext),
		 "kept length");
	stage = fz_alloc(l.kept_len ? l.kept_len : 1);
	rr_stream_copy(ps.iov, ps.n, &l.ext, stage);
	for (i = 0; i < l.nseg; i++) {
		const struct rr_call_seg *g = &l.seg[i];

		FZ_CHECK(g->iov < 0 ? g->off + g->len <= l.kept_len :
			 (unsigned)g->iov < ps.n &&
			 g->off + g->len <= ps.iov[g->iov].len,
			 "segment %u outside its source", i);
		FZ_CHECK(l.kind == RR_CALL_LONG ? g->position == 0 :
			 g->position > 0 && !(g->position & 3),
			 "segment %u at Position %u", i, g->position);
		/* the handle names the source, the offset is within it */
		rseg[i] = (struct uiw_rpcrdma_read_seg){ g->position, {
			g->iov < 0 ? STAGE_HANDLE : (uint32_t)g->iov, g->len,
			g->off } };
	}
	h.xid = xid;
	h.vers = 1;
	h.credit = 8;
	h.proc = l.kind == RR_CALL_LONG ? UIW_RDMA_NOMSG : UIW_RDMA_MSG;
	h.read_seg = rseg;
	h.nread_seg = l.nseg;
	FZ_CHECK(uiw_rpcrdma_encoded_len(&h, &hlen) == 0 && hlen == l.hdr_len,
		 "the header encodes to %zu, the layout said %zu", hlen,
		 l.hdr_len);
	mlen = hlen + (l.kind == RR_CALL_LONG ? 0 : l.kept_len);
	msg = fz_alloc(mlen);
	FZ_CHECK(uiw_rpcrdma_encode(&h, msg, mlen, &hlen) == 0, "encode");
	if (l.kind != RR_CALL_LONG)
		memcpy(msg + hlen, stage, l.kept_len);

	rr_plan_call(msg, mlen, 1u << 24, p);
	FZ_CHECK(p->act == UIW_RPCRDMA_ACT_PROCESS,
		 "the Responder refuses a call laid out here: %s", p->why);
	FZ_CHECK(p->call_len == l.stream_len, "assembled %llu, stream %llu",
		 (unsigned long long)p->call_len,
		 (unsigned long long)l.stream_len);
	want = fz_alloc(l.stream_len ? l.stream_len : 1);
	rr_stream_copy(ps.iov, ps.n, NULL, want);
	if (p->in_place) {
		FZ_CHECK(!memcmp(msg + p->payload_off, want, l.stream_len),
			 "in place, differs at %zu", fz_diff(msg + p->payload_off,
							      want, l.stream_len));
	} else {
		got = fz_alloc(l.stream_len);
		memset(got, 0xee, l.stream_len);
		for (i = 0; i < p->ncopy; i++)
			memcpy(got + p->copy[i].dst, msg + p->copy[i].src,
			       p->copy[i].len);
		for (i = 0; i < p->nzero; i++)
			memset(got + p->zero[i].dst, 0, p->zero[i].len);
		for (i = 0; i < p->nread; i++) {
			const struct rr_read *r = &p->read[i];
			const uint8_t *src = r->handle == STAGE_HANDLE ? stage :
				ps.mem[r->handle];

			memcpy(got + r->dst, src + r->offset, r->len);
		}
		FZ_CHECK(!memcmp(got, want, l.stream_len),
			 "assembled stream differs at %zu of %llu",
			 fz_diff(got, want, l.stream_len),
			 (unsigned long long)l.stream_len);
		if (p->check_xid)
			FZ_CHECK(ref_be32(got) == xid, "xid");
		free(got);
	}
	free(want);
	free(msg);
	free(stage);
out:
	pieces_free(&ps);
	free(p);
}

/* ---- 3: a reply, there and back ---------------------------------------- */

#define SEG_BASE(h) ((uint64_t)(h) << 32)

static void reply_round_trip(struct fz *in)
{
	uint32_t xid = fz_u32(in), thresh = 1024 + 16u * fz_u8(in);
	unsigned nw = fz_u8(in) % (UIW_RR_MAX_WCHUNK + 1), i, j, nseg = 0;
	struct uiw_rpcrdma_seg wseg[RR_MAX_WSEG], pseg[4];
	struct uiw_rpcrdma_chunk wch[UIW_RR_MAX_WCHUNK];
	struct uiw_rpcrdma_hdr h = { 0 }, rh;
	struct rr_plan *p = malloc(sizeof(*p));
	struct rr_reply_layout *l = malloc(sizeof(*l));
	struct rr_reply_space *sp = malloc(sizeof(*sp));
	struct rr_reply_info info;
	struct rr_offer o = { 0 };
	uint8_t *mem[RR_MAX_WSEG + 4], *msg, *stream, *want;
	size_t hlen, mlen;
	const char *why;
	struct pieces ps;
	uint8_t call[2048];
	unsigned nmem = 0;

	FZ_CHECK(p && l && sp, "out of memory");
	/* the call: Write chunks of 0..3 segments, maybe a Reply chunk,
	 * each segment its own handle (1..) and memory */
	for (i = 0; i < nw; i++) {
		unsigned k = fz_u8(in) % 4;

		wch[i] = (struct uiw_rpcrdma_chunk){ 0, nseg, k };
		for (j = 0; j < k; j++, nseg++)
			wseg[nseg] = (struct uiw_rpcrdma_seg){
				nseg + 1, fz_u16(in) % MAX_PIECE,
				SEG_BASE(nseg + 1) };
	}
	h.xid = xid;
	h.vers = 1;
	h.credit = 8;
	h.proc = UIW_RDMA_MSG;
	h.write_seg = wseg;
	h.nwrite_seg = nseg;
	h.write_chunk = wch;
	h.nwrite_chunk = nw;
	h.reply_present = fz_u8(in) & 1;
	if (h.reply_present) {
		h.nreply_seg = 1 + fz_u8(in) % 3;
		for (j = 0; j < h.nreply_seg; j++)
			pseg[j] = (struct uiw_rpcrdma_seg){
				0x100 + j, fz_u16(in) % (4 * MAX_PIECE),
				SEG_BASE(0x100 + j) };
		h.reply_seg = pseg;
	}
	FZ_CHECK(uiw_rpcrdma_encode(&h, call, sizeof(call) - 4, &hlen) == 0,
		 "call header");
	ref_put_be16(call + hlen, (uint16_t)(xid >> 16));
	ref_put_be16(call + hlen + 2, (uint16_t)xid);
	rr_plan_call(call, hlen + 4, 1u << 20, p);
	FZ_CHECK(p->act == UIW_RPCRDMA_ACT_PROCESS, "call refused: %s",
		 p->why);
	/* what the Requester offered, as it keeps it */
	o.nwchunk = nw;
	for (i = 0; i < nw; i++)
		o.wnseg[i] = wch[i].nseg;
	memcpy(o.wseg, wseg, nseg * sizeof(wseg[0]));
	o.reply_present = h.reply_present;
	o.npseg = h.nreply_seg;
	memcpy(o.pseg, pseg, h.nreply_seg * sizeof(pseg[0]));

	pieces_make(in, &ps, xid, true);
	rr_reply_layout(p, ps.iov, ps.n, thresh, 5, l);
	if (l->mode == RR_RMODE_ERR_CHUNK) {
		FZ_CHECK(l->why, "refused without a reason");
		goto out;
	}
	/* the Requester's memory: each offered segment */
	for (i = 0; i < nseg; i++) {
		mem[nmem] = fz_alloc(wseg[i].length + 1);
		memset(mem[nmem++], 0xee, wseg[i].length + 1);
	}
	for (i = 0; i < h.nreply_seg; i++) {
		mem[nmem] = fz_alloc(pseg[i].length + 1);
		memset(mem[nmem++], 0xee, pseg[i].length + 1);
	}
	stream = fz_alloc(l->stream_len ? l->stream_len : 1);
	rr_stream_copy(ps.iov, ps.n, &l->ext, stream);
	for (i = 0; i < l->nwrite; i++) {
		const struct rr_write *w = &l->write[i];
		unsigned m = w->handle >= 0x100 ? nseg + (w->handle - 0x100) :
			w->handle - 1;
		uint64_t seglen = m < nseg ? wseg[m].length :
			pseg[m - nseg].length;
		const uint8_t *src = w->iov < 0 ? stream + w->off :
			(const uint8_t *)ps.iov[w->iov].base + w->off;

		FZ_CHECK(m < nmem && w->len && w->offset >= SEG_BASE(w->handle) &&
			 w->offset - SEG_BASE(w->handle) + w->len <= seglen,
			 "RDMA Write %u outside the segment it names", i);
		FZ_CHECK(w->iov < 0 ? w->off + w->len <= l->stream_len :
			 (unsigned)w->iov < ps.n &&
			 w->off + w->len <= ps.iov[w->iov].len,
			 "RDMA Write %u from outside its source", i);
		memcpy(mem[m] + (w->offset - SEG_BASE(w->handle)), src, w->len);
	}
	/* the reply as sent, and as the Requester judges it */
	mlen = l->hdr_len + (l->mode == RR_RMODE_INLINE ? l->stream_len : 0);
	FZ_CHECK(mlen <= thresh, "reply of %zu octets over %u", mlen, thresh);
	msg = fz_alloc(mlen);
	FZ_CHECK(uiw_rpcrdma_encode(&l->hdr, msg, mlen, &hlen) == 0 &&
		 hlen == l->hdr_len, "reply header");
	if (l->mode == RR_RMODE_INLINE)
		memcpy(msg + hlen, stream, l->stream_len);
	FZ_CHECK(rr_reply_decode(msg, mlen, sp, &rh, &why) == RR_REPLY_MATCH &&
		 rh.xid == xid, "the Requester drops the reply: %s", why);
	rr_plan_reply(&rh, mlen, &o, &info);
	FZ_CHECK(info.status == UIW_RR_OK, "the Requester refuses it: %s",
		 info.msg);
	FZ_CHECK(info.long_reply == (l->mode == RR_RMODE_REPLY_CHUNK),
		 "long reply");
	/* Write chunk k holds DDP result k */
	for (i = 0; i < nw; i++) {
		int32_t pc = l->piece[i];
		uint64_t left = info.wlen[i], off = 0;

		FZ_CHECK(pc < 0 ? info.wlen[i] == 0 :
			 info.wlen[i] == ps.iov[pc].len, "chunk %u: %llu octets",
			 i, (unsigned long long)info.wlen[i]);
		for (j = 0; j < wch[i].nseg && left; j++) {
			unsigned m = wch[i].first + j;
			uint64_t n = left < wseg[m].length ? left : wseg[m].length;

			FZ_CHECK(!memcmp(mem[m], (const uint8_t *)ps.iov[pc].base +
					 off, n), "chunk %u segment %u", i, j);
			off += n;
			left -= n;
		}
	}
	/* and the rest is the reduced stream, inline or in the chunk */
	want = stream;
	if (l->mode == RR_RMODE_INLINE) {
		FZ_CHECK(info.inline_len == l->stream_len &&
			 !memcmp(msg + info.inline_off, want, l->stream_len),
			 "inline stream");
	} else {
		uint64_t off = 0;

		FZ_CHECK(info.reply_len == l->stream_len, "Reply chunk holds "
			 "%llu, stream %llu", (unsigned long long)info.reply_len,
			 (unsigned long long)l->stream_len);
		for (j = 0; j < h.nreply_seg && off < l->stream_len; j++) {
			uint64_t n = l->stream_len - off < pseg[j].length ?
				l->stream_len - off : pseg[j].length;

			FZ_CHECK(!memcmp(mem[nseg + j], want + off, n),
				 "Reply chunk segment %u", j);
			off += n;
		}
	}
	free(msg);
	free(stream);
	for (i = 0; i < nmem; i++)
		free(mem[i]);
out:
	pieces_free(&ps);
	free(p);
	free(l);
	free(sp);
}

/* ---- 4: any octets as a reply ----------------------------------------- */

static void any_reply(const uint8_t *data, size_t size)
{
	struct fz in = { data, size };
	struct rr_offer o = { 0 };
	struct rr_reply_space *sp = malloc(sizeof(*sp));
	struct uiw_rpcrdma_hdr h;
	struct rr_reply_info info;
	uint64_t offered = 0, total = 0;
	unsigned i, j, nseg = 0;
	const char *why;
	uint8_t *msg;
	size_t len;

	FZ_CHECK(sp, "out of memory");
	o.nwchunk = fz_u8(&in) % (UIW_RR_MAX_WCHUNK + 1);
	for (i = 0; i < o.nwchunk; i++) {
		o.wnseg[i] = fz_u8(&in) % 3;
		for (j = 0; j < o.wnseg[i]; j++, nseg++)
			o.wseg[nseg] = (struct uiw_rpcrdma_seg){ fz_u8(&in),
				fz_u16(&in), fz_u8(&in) };
	}
	o.reply_present = fz_u8(&in) & 1;
	o.npseg = o.reply_present ? fz_u8(&in) % 3 : 0;
	for (j = 0; j < o.npseg; j++) {
		o.pseg[j] = (struct uiw_rpcrdma_seg){ fz_u8(&in), fz_u16(&in),
						      fz_u8(&in) };
		offered += o.pseg[j].length;
	}
	len = in.n;
	msg = fz_dup(in.p, len);
	if (rr_reply_decode(msg, len, sp, &h, &why) == RR_REPLY_MATCH) {
		rr_plan_reply(&h, len, &o, &info);
		if (h.proc == UIW_RDMA_ERROR)
			FZ_CHECK(info.status == UIW_RR_ERR_VERS ||
				 info.status == UIW_RR_ERR_CHUNK,
				 "RDMA_ERROR gave %d", info.status);
		if (info.status == UIW_RR_OK) {
			for (i = 0, nseg = 0; i < o.nwchunk; i++) {
				uint64_t cap = 0;

				for (j = 0; j < o.wnseg[i]; j++)
					cap += o.wseg[nseg++].length;
				FZ_CHECK(info.wlen[i] <= cap, "chunk %u: %llu of "
					 "%llu", i, (unsigned long long)info.wlen[i],
					 (unsigned long long)cap);
				total += info.wlen[i];
			}
			if (info.long_reply)
				FZ_CHECK(o.reply_present && info.reply_len <= offered,
					 "Reply chunk of %llu, %llu offered",
					 (unsigned long long)info.reply_len,
					 (unsigned long long)offered);
			else
				FZ_CHECK(info.inline_off == h.hdr_len &&
					 info.inline_off + info.inline_len == len,
					 "inline stream outside the message");
		}
	}
	free(msg);
	free(sp);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz in = { size ? data + 1 : data, size ? size - 1 : 0 };
	uint8_t sel = size ? data[0] : 0;

	any_call(in.p, in.n);
	any_reply(in.p, in.n);
	if (sel & 1)
		call_round_trip(&in);
	else
		reply_round_trip(&in);
	return 0;
}
