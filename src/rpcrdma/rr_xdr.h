/*
 * XDR streams between libtirpc and the message-level transport
 * (rr_xprt.h), for RPC-over-RDMA's reduced Payload streams (RFC 8166
 * §3.4).
 *
 * The splitting encoder writes an RPC message as the pieces uiw_rr_call
 * and uiw_rr_reply take: the octets of the stream in one buffer of its
 * own, except the DDP-eligible opaque bodies, which stay where the
 * caller has them and become pieces of their own (ddp = true), their
 * XDR pad left out (§3.4.4.4).  The splicing decoder reads a reply's
 * reduced Payload stream and takes each reduced result from the Write
 * chunk it landed in (§3.4.6.1).  A Responder decodes calls with plain
 * xdrmem: the transport hands them over whole.
 *
 * Opaque bodies are counted, for the Upper-Layer Binding's rules
 * (rr_ulb.h), from the procedure's arguments or results on: the
 * caller wraps the xdrproc of those in uiw_rr_xdr_body, which starts
 * the count, so that the RPC header, credential and verifier are not
 * counted.
 *
 * A procedure whose rule has a walk (rr_walk.h: NFS version 4's
 * COMPOUND) is not counted but walked.  The encoder first writes the
 * whole message, leaving bodies of UIW_RR_XENC_LEAVE_MIN octets or
 * more where the caller has them (undecided, no copy) and copying the
 * rest; the walk reads that (passing over the bodies left out by their
 * length words) and names the items by their offsets; those chosen
 * become ddp pieces (from the caller's memory, or cut out of the
 * buffer), the bodies left out and not chosen go back inline (pieces
 * of their own, from the caller's memory).  So the walk costs a copy
 * of the small bodies only.  The splicing decoder walks the reply's
 * results before decoding them, and takes each item the walk places in
 * a Write chunk from there.
 */
#ifndef UIW_RR_XDR_H
#define UIW_RR_XDR_H

#include <rpc/rpc.h>

#include "rr_ulb.h"
#include "rr_walk.h"
#include "rr_xprt.h"

/* Bodies at least this long are not copied while a walk is pending. */
#define UIW_RR_XENC_LEAVE_MIN 1024

enum uiw_rr_xenc_kind {
	UIW_RR_XENC_REDUCED,    /* the caller's memory, a ddp piece */
	UIW_RR_XENC_LEFT,       /* the caller's memory, undecided: inline
				   unless a walk chooses it */
	UIW_RR_XENC_CUT,        /* in the buffer at at, taken out as a ddp
				   piece (pad and all) */
	UIW_RR_XENC_MARK,       /* a ddp piece of no octets at at */
};

/* A body out of the buffer's run: where it goes among the buffer's
 * octets. */
struct uiw_rr_xenc_ddp {
	size_t at;              /* octets of the buffer before it */
	const void *base;
	size_t len;
	size_t spos;            /* its position in the unreduced stream */
	enum uiw_rr_xenc_kind kind;
};

struct uiw_rr_xenc {
	XDR xdr;
	struct uiw_rr_sel sel;
	unsigned max_ddp;       /* bodies it may still reduce */
	uint8_t *buf;           /* the stream but the reduced bodies */
	size_t len, cap;
	struct uiw_rr_xenc_ddp *ddp;
	unsigned nddp, ddp_cap;
	struct uiw_rr_iov *iov;
	unsigned iov_cap;
	size_t ddp_octets;      /* reduced bodies and their pads */
	bool counting;          /* inside the arguments or results */
	unsigned item;          /* bodies seen since counting began */
	size_t body_at;         /* buffer octets before the body */
	unsigned body_ddp;      /* reduced bodies before it */
	unsigned pad_due;       /* the pad xdr_opaque sends next */
	bool pad_drop;          /* ... of a reduced body */
	bool failed;            /* out of memory */
	bool walk;              /* begun with uiw_rr_xenc_begin_walk */
	bool body_seen;         /* uiw_rr_xdr_body ran on this stream */
	size_t body_spos;       /* stream position where the body began */
	struct uiw_rr_absent *abs;      /* a walk's bodies left out */
	unsigned abs_cap;
};

void uiw_rr_xenc_init(struct uiw_rr_xenc *e);
void uiw_rr_xenc_fini(struct uiw_rr_xenc *e);
/* Starts a message (the buffer is kept from the last one).  Bodies the
 * rules of sel make eligible are reduced, at most max_ddp of them: a
 * Requester's call reduces every eligible body of at least the rule's
 * min_len (max_ddp UINT_MAX); a Responder's reply reduces the first
 * eligible results, one per Write chunk offered (RFC 8267 §6.4.1). */
XDR *uiw_rr_xenc_begin(struct uiw_rr_xenc *e, const struct uiw_rr_sel *sel,
		       unsigned max_ddp);
/* Starts a message whose arguments or results a walk will read:
 * nothing reduced yet, bodies of UIW_RR_XENC_LEAVE_MIN octets or more
 * left where the caller has them. */
XDR *uiw_rr_xenc_begin_walk(struct uiw_rr_xenc *e,
			    const struct uiw_rr_sel *sel);
/* Requester, after begin_walk and the call: the arguments walked with
 * aw (its items of at least aw->min_len reduced; NULL: none) and with
 * rw (the results' rule: the Write chunks to offer for the slots found,
 * their sizes in len[], their number in *nwt; NULL: none).  -1 when
 * memory ran out. */
int uiw_rr_xenc_walk_call(struct uiw_rr_xenc *e,
			  const struct uiw_rpcrdma_ddp_rule *aw,
			  const struct uiw_rpcrdma_ddp_rule *rw,
			  size_t len[UIW_RR_MAX_WCHUNK], unsigned *nwt);
/* Responder, after begin_walk and the reply: the results walked with
 * rw, for a call that offered nwchunk Write chunks; for each chunk k,
 * slot k's item becomes a ddp piece, or a ddp piece of no octets when
 * the slot's result has none (RFC 8267 §6.4.1: the chunk goes back
 * unused).  1 when the walk stopped before it found a slot for every
 * chunk (RFC 8166 §4.3.2.1, §6.1: the items of those may follow, in
 * places it cannot tell: no valid reply can be formed); -1 when memory
 * ran out. */
int uiw_rr_xenc_walk_reply(struct uiw_rr_xenc *e,
			   const struct uiw_rpcrdma_ddp_rule *rw,
			   unsigned nwchunk);
/* The walk these are made of: the arguments or results encoded since
 * begin_walk, walked in direction dir with r; *end says how it ended.
 * When they were not encoded on this stream (an RPCSEC_GSS wrap writes
 * them as one opaque of its own), nothing is found and the walk
 * stops.  -1 when memory ran out. */
int uiw_rr_xenc_walk(struct uiw_rr_xenc *e, const struct uiw_rpcrdma_ddp_rule *r,
		     enum uiw_rpcrdma_dir dir, struct uiw_rpcrdma_walk *w,
		     enum uiw_rpcrdma_walk_end *end);
/* The walk's item it, or a ddp piece of no octets where slot s
 * begins, as a ddp piece of the message. */
int uiw_rr_xenc_reduce(struct uiw_rr_xenc *e, const struct uiw_rr_witem *it);
int uiw_rr_xenc_mark(struct uiw_rr_xenc *e, const struct uiw_rr_wslot *s);
/* The pieces of the message encoded since begin; NULL when memory ran
 * out.  They point into e and into the caller's memory. */
const struct uiw_rr_iov *uiw_rr_xenc_finish(struct uiw_rr_xenc *e,
					    unsigned *niov);
/* The arguments or results (from where uiw_rr_xdr_body began), as one
 * unreduced XDR stream in a new buffer (pads of reduced bodies put
 * back); -1 when there is no memory. */
int uiw_rr_xenc_body_copy(const struct uiw_rr_xenc *e, uint8_t **out,
			  size_t *len);

/* The xdrproc that wraps the arguments' or results' own, on either
 * stream: counting starts when it is called.  On another XDR stream it
 * just calls proc. */
struct uiw_rr_body {
	xdrproc_t proc;
	void *where;
};
bool_t uiw_rr_xdr_body(XDR *xdrs, struct uiw_rr_body *b);
#define UIW_RR_XDR_BODY ((xdrproc_t)uiw_rr_xdr_body)
/* xdr_void with xdrproc_t's first parameter: what xdr_replymsg
 * encodes or decodes in place of the results, which come after. */
bool_t uiw_rr_xdr_none(XDR *xdrs, void *where);
#define UIW_RR_XDR_NONE ((xdrproc_t)uiw_rr_xdr_none)

/* The splicing decoder of a reply's Payload stream.  wt[]/wlen[]: the
 * Write chunks the call offered and the octets the Responder wrote in
 * each; the k-th eligible result (sel's RESULTS rules) is taken from
 * wt[k], k < nwt, and its length word, still inline, must equal
 * wlen[k].  With a walk, the item of slot k is taken from wt[k] when
 * that is not empty (RFC 8267 §6.4.1). */
struct uiw_rr_xdec {
	XDR xdr;
	struct uiw_rr_sel sel;
	const uint8_t *p;
	size_t len, pos;
	const struct uiw_rr_wtarget *wt;
	const uint64_t *wlen;
	unsigned nwt, used;     /* Write chunks offered, consumed */
	size_t spliced;         /* octets of the stream not inline */
	size_t splice_end;      /* inline position after the last splice */
	bool counting;
	unsigned item;
	unsigned pad_due;
	bool pad_skip;
	uint32_t taken;         /* Write chunks whose content was taken */
	/* a walked reply (the results' rule has a walk): the items in
	 * Write chunks, at their offsets from the results' first octet */
	bool walk;
	size_t body_u0;         /* stream position of that octet */
	struct uiw_rr_splice {
		size_t off;
		unsigned k;     /* its Write chunk */
	} splice[UIW_RR_MAX_WCHUNK];
	unsigned nsplice, next;
	char why[96];           /* a splice refused */
};

XDR *uiw_rr_xdec_init(struct uiw_rr_xdec *d, const uint8_t *p, size_t len,
		      const struct uiw_rr_sel *sel,
		      const struct uiw_rr_wtarget *wt, const uint64_t *wlen,
		      unsigned nwt);
/* After the results are decoded: false (with why) when a Write chunk
 * holds octets no eligible result took (RFC 8166 §6.1: a Responder
 * reduced what is not eligible). */
bool uiw_rr_xdec_done(struct uiw_rr_xdec *d);

#endif
