/*
 * What a Responder's listener and its connections share (rr_share.c),
 * so that idle, slow or hostile connections never deny service to the
 * others: the assembly memory allowed to all of them (listen_budget)
 * and the connections (max_conns).  It outlives the listener, held by
 * every connection it made (a connection outlives its listener).
 * Connections may be driven by different threads: the share has a
 * mutex, and asks a connection's owner for something through the
 * connection's wake fd.  Internal to src/rpcrdma/ (and its tests).
 */
#ifndef UIW_RR_SHARE_H
#define UIW_RR_SHARE_H

#include <stdbool.h>
#include <stdint.h>

#include "rr_xprt.h"

struct rr_share;

/* What the share asks of a connection (rr_share_pokes): */
enum {
	RR_POKE_BUDGET = 1,     /* assembly memory came back: try again */
	RR_POKE_TRIM = 2,       /* others wait: give the kept buffers back */
	RR_POKE_SHED = 4,       /* the listener needs room: end */
};

/* A connection as the share sees it, inside the connection. */
struct rr_member {
	/* the share's, under its mutex */
	struct rr_member *m_next, **m_pprev;    /* members, newest first */
	struct rr_member *w_next;               /* in line for memory */
	bool waiting, handed, shed;
	uint64_t kept;          /* octets of buffers kept for later calls */
	unsigned pokes;         /* RR_POKE_*; wakefd readable while set */
	/* written by the owner, read by the listener's thread: when the
	 * last call was done, 0 while one is in progress */
	uint64_t idle_since;
	int wakefd;             /* an eventfd in the connection's epoll set */
};

/* The listener's share (o checked; no buffer smaller than min_buf);
 * NULL when out of memory. */
struct rr_share *rr_share_new(const struct uiw_rr_opts *o, uint64_t min_buf);
void rr_share_put(struct rr_share *sh);

/* Room for one more connection: below max_conns, or the member idle
 * the longest (handed out, no call in progress; the older on a tie)
 * asked to end (RR_POKE_SHED).  False when every one is busy. */
bool rr_share_admit(struct rr_share *sh);
/* m counts (a connection being set up), holding a reference. */
void rr_share_join(struct rr_share *sh, struct rr_member *m);
/* m handed out by the listener: it may be shed from now on. */
void rr_share_handed(struct rr_share *sh, struct rr_member *m);
/* m gone, with the octets it held and kept (all freed by now). */
void rr_share_leave(struct rr_share *sh, struct rr_member *m,
		    uint64_t octets);

/* The owner's side (the thread that drives m) -------------------------- */

/* Idle since since (monotonic ms), or busy (0: a call in progress). */
void rr_share_idle(struct rr_member *m, uint64_t since);
/* cap octets more for m, which holds some already or not; false: m
 * waits in line, and the others are asked for their kept buffers.
 * *drop: m's kept buffers were counted back to make room; the owner
 * frees them. */
bool rr_share_take(struct rr_share *sh, struct rr_member *m, uint64_t cap,
		   bool holds, bool *drop);
/* n octets freed. */
void rr_share_give(struct rr_share *sh, uint64_t n);
/* A buffer of n octets done with: true when m may keep it (it keeps
 * fewer than max and nobody waits), else it is counted back and the
 * owner frees it. */
bool rr_share_keep(struct rr_share *sh, struct rr_member *m, uint64_t n,
		   bool room);
/* A kept buffer of n octets in use again (it stays counted). */
void rr_share_reuse(struct rr_share *sh, struct rr_member *m, uint64_t n);
/* Every kept buffer counted back; the owner frees them. */
void rr_share_trim(struct rr_share *sh, struct rr_member *m);
/* m out of the line (it waits no more, or for its own bound). */
void rr_share_unwait(struct rr_share *sh, struct rr_member *m);
/* What m is asked (RR_POKE_*), its wake fd read; 0 at once when
 * nothing is. */
unsigned rr_share_pokes(struct rr_share *sh, struct rr_member *m);

/* For the tests: octets counted now and at most ever, the budget, the
 * connections counted. */
void rr_share_stat(struct rr_share *sh, uint64_t *used, uint64_t *peak,
		   uint64_t *cap, unsigned *conns);
/* The count of memory registrations the members hold now, which they
 * keep with atomic adds and subtractions (uiw_rpcrdma_svc_usage); and
 * that count for the members to add to. */
uint64_t rr_share_mrs(struct rr_share *sh);
uint64_t *rr_share_mr_tally(struct rr_share *sh);

#endif
