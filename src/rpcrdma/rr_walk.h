/*
 * Walks of encoded arguments or results (the uiw_rpcrdma_walk_*
 * functions of <uiwarp/rpcrdma.h>): the cursor a binding's walker
 * reads through, and what it reports.
 *
 * Offsets are those of the unreduced XDR stream of the arguments or
 * results (from their first octet), as a receiver reassembles it
 * (RFC 8166 §3.4): the positions Read chunks name and the splicing
 * decoder counts in.  The octets the walk reads may miss bodies
 * taken out of the stream, in two ways:
 *   - listed: bodies the splitting encoder left where the caller has
 *     them (absent[], unreduced offsets and lengths, pads included);
 *   - reduced: in a reply, the item of each slot whose bit is set in
 *     reduced (the Requester offered a non-empty Write chunk for it,
 *     so the Responder had to put it there, RFC 8267 §6.4.1): only its
 *     length word is inline.
 * Pure: no allocation; never reads outside p[0..len).
 */
#ifndef UIW_RR_WALK_H
#define UIW_RR_WALK_H

#include <uiwarp/rpcrdma.h>

#include "rr_xprt.h"

/* Items a walk records; those after the last travel inline. */
#define UIW_RR_WALK_MAX_ITEMS 16
/* Slots it records (the Write chunks a call can offer). */
#define UIW_RR_WALK_MAX_SLOTS UIW_RR_MAX_WCHUNK

struct uiw_rr_absent {
	size_t off;             /* unreduced */
	size_t len;             /* body and pad */
};

struct uiw_rr_witem {
	size_t off;             /* the body's first octet, unreduced */
	size_t in_at;           /* ... among the octets read; SIZE_MAX:
				   not there (absent) */
	uint32_t len;           /* its length word */
	int slot;               /* RESULTS: its slot; ARGS: -1 */
};

struct uiw_rr_wslot {
	size_t off;             /* where the result begins, unreduced */
	size_t in_at;           /* ... among the octets read */
	size_t len;             /* ARGS: the Write chunk it asks for */
	int item;               /* RESULTS: its item in items[]; -1: none */
};

struct uiw_rpcrdma_walk {
	enum uiw_rpcrdma_dir dir;
	const uint8_t *p;
	size_t len;
	size_t i;               /* octets read */
	size_t u;               /* unreduced position */
	const struct uiw_rr_absent *abs;
	unsigned nabs, next_abs;
	uint32_t reduced;
	bool broken;            /* a call failed: the walk stops */
	struct uiw_rr_witem items[UIW_RR_WALK_MAX_ITEMS];
	unsigned nitems;
	struct uiw_rr_wslot slots[UIW_RR_WALK_MAX_SLOTS];
	unsigned nslots;        /* slots seen (recorded: the first ones) */
	bool slot_open;         /* RESULTS: the last slot has no item yet */
};

/* A walk over p[0..len) in direction dir; absent[] in increasing
 * order (none: NULL, 0). */
void uiw_rr_walk_init(struct uiw_rpcrdma_walk *w, enum uiw_rpcrdma_dir dir,
		      const uint8_t *p, size_t len,
		      const struct uiw_rr_absent *absent, unsigned nabs);
/* RESULTS of a reply: bit k set when slot k's item went to Write chunk
 * k (only its length word inline). */
void uiw_rr_walk_reduced(struct uiw_rpcrdma_walk *w, uint32_t reduced);
/* Runs r's walk; STOP also when a call failed on the way. */
enum uiw_rpcrdma_walk_end uiw_rr_walk_run(struct uiw_rpcrdma_walk *w,
					  const struct uiw_rpcrdma_ddp_rule *r);

/* RFC 8267 §6: NFS version 4's COMPOUND (rr_nfs4.c). */
enum uiw_rpcrdma_walk_end uiw_rr_nfs4_walk(const struct uiw_rpcrdma_ddp_rule *r,
					   struct uiw_rpcrdma_walk *w);

#endif
