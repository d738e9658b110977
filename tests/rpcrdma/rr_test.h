/*
 * What the tests of src/rpcrdma/'s transport share (rr_test.c):
 *
 * - a test protocol: a call's Payload stream asks the Responder for a
 *   reply of a given shape, and both ends check every octet;
 * - a Responder run the way libtirpc's svc_run drives one: a thread
 *   polling the listener's and the connections' fds, answering at once
 *   or later (deferred), dropping, and counting what it saw.
 *
 * The raw peer that sends what no well-behaved end would, in either
 * role, is rr_raw.h's.
 */
#ifndef UIW_RR_TEST_H
#define UIW_RR_TEST_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "rr_conn.h"
#include "rr_plan.h"
#include "rr_xprt.h"

/* The longest any one wait of a test may take. */
#define RT_WAIT_MS 20000

/* ---- The test protocol ----------------------------------------------- */

/*
 * Call:  xid | op | fill | delay_ms | n | data[n] + pad | m | trailer[m] + pad
 * Reply: xid | status | n | data[n] + pad | fill | filler[fill] + pad
 *
 * data is the call's, echoed; in the call it is a DDP-eligible item
 * when the Requester says so, in the reply when op has RT_F_DDP.
 */
enum rt_op {
	RT_ECHO = 1,
	RT_DEFER = 2,        /* answered after delay_ms */
	RT_DROP = 3,         /* never answered (uiw_rr_drop) */
	RT_HOLD = 5,         /* answered when the test releases it */
	RT_OP_MASK = 0xff,
	RT_F_DDP = 0x100,    /* reply: data is DDP-eligible */
	RT_F_COPY = 0x200,   /* reply: data from the Responder's own copy,
				not from the call's buffer */
	RT_F_KEEP = 0x400,   /* the Responder keeps the call's first Write
				chunk segment for a later poke */
};

/* What a poke writes: 8 octets of it. */
#define RT_POKE 0xab

/* The patterns of a call's trailer and a reply's filler. */
#define RT_TRAILER_SEED(xid) ((xid) ^ 0x5a5a5a5au)
#define RT_FILLER_SEED(xid)  ((xid) ^ 0xa5a5a5a5u)

struct rt_spec {
	uint32_t op;
	size_t n;            /* the data item */
	bool data_ddp;       /* DDP-eligible in the call */
	size_t trailer;      /* plain octets after it */
	size_t fill;         /* plain octets in the reply after the data */
	uint32_t delay_ms;
	bool wchunk;         /* offer a Write chunk of wlen octets */
	size_t wlen;
	size_t reply_max;    /* 0: exactly what the reply needs */
	unsigned timeout_ms;
};

/* The octet at i of a pattern named by seed. */
static inline uint8_t rt_pat(uint32_t seed, uint64_t i)
{
	return (uint8_t)(seed * 31u + i * 7u + (i >> 8) * 13u + (i >> 16));
}
void rt_fill(uint8_t *p, size_t n, uint32_t seed);
/* Index of the first octet that differs from the pattern, n if none. */
size_t rt_check(const uint8_t *p, size_t n, uint32_t seed);

/* Makes the call described by sp with xid and checks its reply octet
 * by octet; why gets what was wrong.  The status (UIW_RR_OK with why
 * empty when all was right; UIW_RR_BAD_REPLY also for a reply that
 * came back wrong). */
enum uiw_rr_status rt_call(struct uiw_rr_clnt *c, uint32_t xid,
			   const struct rt_spec *sp, char *why, size_t whylen);

/* ---- A Responder as svc_run drives one ------------------------------- */

struct rt_conn;
struct rt_deferred;

struct rt_srv {
	pthread_t th;
	struct uiw_rr_listener *l;
	struct sockaddr_storage addr;
	struct uiw_rr_opts o;
	int cmdfd;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool stop, gated, parked;
	/* what it saw (mu) */
	unsigned accepted, ended, calls, replies, drops, deferred_done;
	unsigned bad_calls;          /* calls the test protocol refused */
	unsigned max_held;           /* calls held at once, one connection */
	unsigned held_now;
	unsigned max_held_all;       /* calls held at once, all connections */
	unsigned reply_errors;       /* uiw_rr_reply returned -1 */
	struct uiw_rr_stats total;   /* of connections that ended */
	char last_end_why[128];
	/* RT_F_KEEP */
	bool kept;
	uint32_t kept_rkey;
	uint64_t kept_addr;
	struct uiw_rr_sconn *kept_conn;
	bool poke;                   /* the test asks for an RDMA Write to it */
	bool poked;
	/* RT_HOLD: released when release > held index */
	unsigned release;
	/* inside the thread */
	struct rt_conn *conns;
	struct rt_deferred *deferred;
};

/* Listens on 127.0.0.1, port 0 (o NULL: defaults) and serves until
 * rt_srv_stop. */
void rt_srv_start(struct rt_srv *srv, const struct uiw_rr_opts *o);
void rt_srv_stop(struct rt_srv *srv);
/* Stops serving (the thread waits) until rt_srv_ungate. */
void rt_srv_gate(struct rt_srv *srv);
void rt_srv_ungate(struct rt_srv *srv);
/* Wakes the thread to look at the flags (poke, release). */
void rt_srv_kick(struct rt_srv *srv);
/* Waits until *field (under mu) is at least want, RT_WAIT_MS at most;
 * false on timeout. */
bool rt_srv_wait(struct rt_srv *srv, const unsigned *field, unsigned want);
/* *field, read under mu. */
unsigned rt_srv_get(struct rt_srv *srv, const unsigned *field);
/* A Requester connected to it. */
struct uiw_rr_clnt *rt_connect(struct rt_srv *srv, const struct uiw_rr_opts *o);

/* ---- XDR --------------------------------------------------------------- */

static inline void rt_put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static inline uint32_t rt_get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

#endif
