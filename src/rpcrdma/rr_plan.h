/*
 * The decisions of the RPC-over-RDMA transport (RFC 8166 §3.4, §3.5,
 * §4.3, §4.5), without I/O: pure functions over octets, lengths and
 * the pieces of a Payload stream, so that rr_clnt.c and rr_svc.c only
 * carry out what is decided here and tests/fuzz/fuzz_rr_plan.c can
 * check every decision against the stream it must reproduce.
 *
 * Receive side (rr_plan.c):
 *   rr_plan_call   a Responder's reading of one received Send: the
 *                  answer to give (drop, ERR_VERS, ERR_CHUNK) or the
 *                  RDMA Reads, copies and zero pads that assemble the
 *                  Payload stream, and the chunks offered for the reply;
 *   rr_plan_reply  a Requester's reading of one received Send against
 *                  what its call offered.
 * Send side (rr_layout.c):
 *   rr_call_layout   how a Requester conveys a call (inline, Read
 *                    chunks, Long Call);
 *   rr_reply_layout  how a Responder conveys a reply (inline, Write
 *                    chunks, Reply chunk, or ERR_CHUNK);
 *   rr_stream_*      the octets of a Payload stream that travel
 *                    together (the inline part, a staging buffer).
 */
#ifndef UIW_RR_PLAN_H
#define UIW_RR_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rpcrdma_hdr.h"
#include "rr_xprt.h"

/* What a Responder accepts in one call's header (more is ERR_CHUNK,
 * RFC 8166 §4.5.2 through the codec's bounds). */
#define RR_MAX_RSEG      64     /* Read segments, all chunks */
#define RR_MAX_RCHUNK    16     /* Read chunks */
#define RR_MAX_WSEG      32     /* segments of all Write chunks */
#define RR_MAX_PSEG      32     /* Reply chunk segments */
/* Reads of one call: every segment, plus one more each time a
 * Position-Zero segment is cut where another Read chunk goes in. */
#define RR_MAX_READ      (RR_MAX_RSEG + RR_MAX_RCHUNK)
/* Inline runs copied around the Read chunks. */
#define RR_MAX_COPY      (RR_MAX_RCHUNK + 1)

/* ---- Responder: a received call -------------------------------------- */

/* One RDMA Read: remote handle/offset/length into the assembled
 * Payload stream at dst. */
struct rr_read {
	uint32_t handle;
	uint32_t len;
	uint64_t offset;
	uint64_t dst;
};

/* Received octets [src, src + len) of the message to dst. */
struct rr_copy {
	uint64_t src, dst, len;
};

/* XDR roundup after a Read chunk: len zero octets at dst. */
struct rr_zero {
	uint64_t dst;
	uint32_t len;
};

struct rr_wchunk {
	uint32_t first, nseg;   /* in wseg[] */
	uint64_t len;
};

struct rr_plan {
	enum uiw_rpcrdma_act act;   /* PROCESS, or the answer */
	enum uiw_rpcrdma_err err;   /* the codec's verdict */
	const char *why;            /* when not PROCESS: in words */
	/* the fixed words (an RDMA_ERROR echoes xid and vers, §4.5) */
	struct uiw_rpcrdma_hdr hdr;

	/* PROCESS: the Payload stream, call_len octets, assembled from
	 * copy[] (received octets), read[] and zero[] (pads), which
	 * together cover [0, call_len) once each.  in_place: nothing to
	 * assemble, the stream is the message's octets from
	 * payload_off. */
	uint64_t call_len;
	bool in_place;
	bool long_call;             /* RDMA_NOMSG: Position-Zero chunk */
	/* the stream's first word comes from a Read: compare it with the
	 * header's xid once the Reads are done (§4.5.2) */
	bool check_xid;
	size_t payload_off;
	struct rr_copy copy[RR_MAX_COPY];
	unsigned ncopy;
	struct rr_read read[RR_MAX_READ];
	unsigned nread;
	struct rr_zero zero[RR_MAX_RCHUNK];
	unsigned nzero;
	unsigned read_chunks;       /* for the statistics */
	uint64_t read_bytes;

	/* offered for the reply (§3.4.6, §4.3.3) */
	struct uiw_rpcrdma_seg wseg[RR_MAX_WSEG];
	struct rr_wchunk wchunk[UIW_RR_MAX_WCHUNK];
	unsigned nwchunk;
	bool reply_present;
	struct uiw_rpcrdma_seg pseg[RR_MAX_PSEG];
	unsigned npseg;
	uint64_t reply_len;
	/* a handle of this call for Send With Invalidate (RFC 8797 §4.1) */
	bool has_rkey;
	uint32_t rkey;

	/* the decoder's space */
	struct uiw_rpcrdma_read_seg rseg_[RR_MAX_RSEG];
	struct uiw_rpcrdma_chunk rchunk_[RR_MAX_RCHUNK];
	struct uiw_rpcrdma_chunk wchunk_[UIW_RR_MAX_WCHUNK];
};

/* A Responder's reading of the len octets of one received Send, for
 * a Payload stream of at most max_call octets.  Never reads outside
 * msg[0..len); every Read, copy and pad lands inside [0, call_len). */
void rr_plan_call(const void *msg, size_t len, uint64_t max_call,
		  struct rr_plan *p);

/* ---- Requester: a received reply ------------------------------------- */

/* What a call offered: each Write chunk's segment lengths and handles,
 * the Reply chunk. */
struct rr_offer {
	unsigned nwchunk;
	uint32_t wnseg[UIW_RR_MAX_WCHUNK];
	struct uiw_rpcrdma_seg wseg[RR_MAX_WSEG];   /* all chunks, in order */
	bool reply_present;
	struct uiw_rpcrdma_seg pseg[RR_MAX_PSEG];
	unsigned npseg;
};

/* The decoder's space of a Requester (a reply may echo at most what
 * a call offers). */
struct rr_reply_space {
	struct uiw_rpcrdma_read_seg rseg[1];
	struct uiw_rpcrdma_chunk rchunk[1];
	struct uiw_rpcrdma_seg wseg[RR_MAX_WSEG];
	struct uiw_rpcrdma_chunk wchunk[UIW_RR_MAX_WCHUNK];
	struct uiw_rpcrdma_seg pseg[RR_MAX_PSEG];
};

struct rr_reply_info {
	enum uiw_rr_status status;
	char msg[128];
	/* OK: the reply's Payload stream is inline at msg + inline_off
	 * (inline_len octets), or, long, the first reply_len octets of the
	 * Reply chunk */
	bool long_reply;
	size_t inline_off, inline_len;
	uint64_t reply_len;
	uint64_t wlen[UIW_RR_MAX_WCHUNK];
	uint32_t vers_low, vers_high;
};

enum rr_reply_kind {
	RR_REPLY_DROP,      /* undecodable (§4.5: silently discarded) */
	RR_REPLY_MATCH,     /* for the xid in *xid: look it up */
};

/* Decodes a received message far enough to name its XID (h, with sp
 * as the decoder's space).  DROP: *why says what was wrong. */
enum rr_reply_kind rr_reply_decode(const void *msg, size_t len,
				   struct rr_reply_space *sp,
				   struct uiw_rpcrdma_hdr *h,
				   const char **why);
/* Judges a decoded reply (h from rr_reply_decode, msg of len octets)
 * against the call's offer. */
void rr_plan_reply(const struct uiw_rpcrdma_hdr *h, size_t len,
		   const struct rr_offer *o, struct rr_reply_info *r);

/* ---- Pieces of a Payload stream -------------------------------------- */

/*
 * A stream of pieces in which some pieces are "external" (they travel
 * apart: a Read chunk, a Write chunk, a segment of their own); ext[]
 * lists them in increasing order.  A ddp piece is followed by its XDR
 * pad in the stream (RFC 8166 §3.4.4.4): kept for the pieces that
 * travel with the stream, and for external ones only when keep_ext_pad
 * (a Long Call's Position-Zero chunk holds the whole stream, pads and
 * all, §3.5.3).
 */
struct rr_ext {
	const uint32_t *idx;
	unsigned n;
	bool keep_ext_pad;
};

/* Octets of the whole, unreduced stream (every piece with its pad). */
uint64_t rr_stream_len(const struct uiw_rr_iov *iov, unsigned niov);
/* Octets that travel with the stream (external pieces left out). */
uint64_t rr_stream_kept(const struct uiw_rr_iov *iov, unsigned niov,
			const struct rr_ext *x);
/* Copies them to dst (which holds rr_stream_kept octets). */
void rr_stream_copy(const struct uiw_rr_iov *iov, unsigned niov,
		    const struct rr_ext *x, uint8_t *dst);
/* The first four octets of the stream (the XID, §3.2); false when it
 * is shorter. */
bool rr_stream_xid(const struct uiw_rr_iov *iov, unsigned niov,
		   uint32_t *xid);

/* ---- Requester: how a call travels (rr_layout.c) --------------------- */

/* A ddp piece shorter than this travels inline even when the call is
 * reduced: an RDMA Read round trip costs more than the copy. */
#define RR_DDP_MIN       1024u
/* Long Call: a piece at least this long is a segment of the
 * Position-Zero chunk by itself (no copy); shorter ones are copied
 * into the staging buffer. */
#define RR_LONG_SEG_MIN  4096u
/* Segments a Requester puts in one call's Read list. */
#define RR_CALL_MAX_SEG  16
/* The largest segment (RFC 8166 §4.1.2: uint32 length); longer
 * pieces become several segments. */
#define RR_SEG_MAX       0x40000000u

enum rr_call_kind {
	RR_CALL_INLINE,     /* RDMA_MSG, the whole stream in the Send */
	RR_CALL_CHUNKS,     /* RDMA_MSG, ddp pieces in Read chunks */
	RR_CALL_LONG,       /* RDMA_NOMSG, Position-Zero Read chunk */
	RR_CALL_TOO_BIG,    /* its Read list cannot fit a Send */
};

/* One Read segment: from piece iov (or, when iov < 0, from the staging
 * buffer) at off, len octets, at position. */
struct rr_call_seg {
	uint32_t position;
	int32_t iov;
	uint64_t off;
	uint32_t len;
};

struct rr_call_layout {
	enum rr_call_kind kind;
	uint64_t stream_len;      /* unreduced */
	uint64_t kept_len;        /* inline (INLINE, CHUNKS) or staged
				     (LONG) octets */
	size_t hdr_len;           /* the transport header with this Read
				     list */
	struct rr_call_seg seg[RR_CALL_MAX_SEG];
	unsigned nseg;
	/* the external pieces (rr_stream_copy's ext) */
	uint32_t ext_idx[RR_CALL_MAX_SEG];
	struct rr_ext ext;
	unsigned nchunks;         /* Read chunks (LONG: 1) */
};

/* Chooses: inline when other_hdr (the header with an empty Read list)
 * plus the stream fits send_thresh; else the ddp pieces of at least
 * RR_DDP_MIN octets at 4-aligned Positions in Read chunks, when that
 * fits; else a Long Call. */
void rr_call_layout(const struct uiw_rr_iov *iov, unsigned niov,
		    size_t other_hdr, uint32_t send_thresh,
		    struct rr_call_layout *l);

/* ---- Responder: how a reply travels (rr_layout.c) -------------------- */

enum rr_reply_mode {
	RR_RMODE_INLINE,      /* RDMA_MSG */
	RR_RMODE_REPLY_CHUNK, /* RDMA_NOMSG, stream in the Reply chunk */
	RR_RMODE_ERR_CHUNK,   /* cannot be conveyed (§3.5.4, §4.5.3) */
};

/* One RDMA Write: from piece iov at off (iov < 0: the reduced stream
 * at off) to handle/offset, len octets. */
struct rr_write {
	int32_t iov;
	uint64_t off;
	uint32_t handle;
	uint32_t len;
	uint64_t offset;
};

#define RR_MAX_WRITE  (RR_MAX_WSEG + RR_MAX_PSEG)

struct rr_reply_layout {
	enum rr_reply_mode mode;
	const char *why;
	uint64_t stream_len;           /* reduced: inline or Reply chunk */
	/* chunk k holds piece piece[k]; -1: unused (§4.3.2.2) */
	int32_t piece[UIW_RR_MAX_WCHUNK];
	uint32_t ext_idx[UIW_RR_MAX_WCHUNK];
	struct rr_ext ext;
	struct rr_write write[RR_MAX_WRITE];
	unsigned nwrite;
	unsigned wchunks_used;
	uint64_t wbytes;
	/* the returned Write list and Reply chunk, as the header says */
	struct uiw_rpcrdma_seg wseg[RR_MAX_WSEG];
	struct uiw_rpcrdma_chunk wchunk[UIW_RR_MAX_WCHUNK];
	struct uiw_rpcrdma_seg pseg[RR_MAX_PSEG];
	struct uiw_rpcrdma_hdr hdr;
	size_t hdr_len;
};

/* Lays out the reply to the call planned in p: its ddp pieces into
 * the offered Write chunks in order (an empty Write chunk, or none
 * left: inline), the reduced stream inline when the header and it fit
 * send_thresh, else into the Reply chunk.  hdr is ready to encode with
 * credit. */
void rr_reply_layout(const struct rr_plan *p, const struct uiw_rr_iov *iov,
		     unsigned niov, uint32_t send_thresh, uint32_t credit,
		     struct rr_reply_layout *l);

#endif
