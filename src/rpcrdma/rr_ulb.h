/*
 * Upper-Layer Binding rules (RFC 8166 §6): which opaque bodies of a
 * procedure's arguments or results are DDP-eligible, the Write chunks a
 * Requester offers for its results, and the largest reply it expects.
 * The rules themselves are the caller's (struct uiw_rpcrdma_ulb, in
 * <uiwarp/rpcrdma.h>); this module reads them.
 */
#ifndef UIW_RR_ULB_H
#define UIW_RR_ULB_H

#include <uiwarp/rpcrdma.h>

#include "rr_xprt.h"

/* The procedure a Payload stream belongs to, and which half of it. */
struct uiw_rr_sel {
	const struct uiw_rpcrdma_ulb *ulb;      /* NULL: nothing eligible */
	rpcprog_t prog;
	rpcvers_t vers;
	rpcproc_t proc;
	enum uiw_rpcrdma_dir dir;
};

/* The rule that makes the item-th opaque body (from 1) eligible, or
 * NULL (rules with a walk name no ordinal: never these). */
const struct uiw_rpcrdma_ddp_rule *uiw_rr_ulb_rule(const struct uiw_rr_sel *s,
						   unsigned item);
/* Whether some rule speaks of this procedure and direction at all. */
bool uiw_rr_ulb_any(const struct uiw_rr_sel *s);
/* Whether uiw_rr_ulb_wchunks needs the call's arguments (a RESULTS rule
 * of the procedure has a result_len). */
bool uiw_rr_ulb_wants_args(const struct uiw_rr_sel *s);
/* The Write chunks a Requester offers for the results of a call
 * (s->dir is ignored): their sizes in len[], their number returned.
 * args/args_len: the call's arguments in XDR (unreduced), or NULL when
 * uiw_rr_ulb_wants_args said no. */
unsigned uiw_rr_ulb_wchunks(const struct uiw_rr_sel *s, const uint8_t *args,
			    size_t args_len, size_t len[UIW_RR_MAX_WCHUNK]);
/* The rule of s's procedure in direction dir that has a walk, or
 * NULL (its items then go by ordinal). */
const struct uiw_rpcrdma_ddp_rule *
uiw_rr_ulb_walker(const struct uiw_rr_sel *s, enum uiw_rpcrdma_dir dir);
struct uiw_rr_wslot;
/* The Write chunks a Requester offers for the slots a walk of its
 * arguments found (r: the RESULTS rule with the walk): their sizes in
 * len[] (0: an empty chunk), their number returned. */
unsigned uiw_rr_ulb_walk_wchunks(const struct uiw_rpcrdma_ddp_rule *r,
				 const struct uiw_rr_wslot *slots,
				 unsigned nslots, size_t len[UIW_RR_MAX_WCHUNK]);
/* The largest reply Payload stream (Write chunk data not counted) a
 * Requester prepares for, for the procedure of s (its reply rows, then
 * the ULB's reply_max). */
size_t uiw_rr_ulb_reply_max(const struct uiw_rr_sel *s);

#endif
