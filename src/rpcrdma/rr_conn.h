/*
 * What a Requester's and a Responder's connection share (rr_conn.c):
 * the rdma_cm id and its event channel, the RFC 8797 private data both
 * ways, the verbs objects (one PD per connection, one CQ with a
 * completion channel, an RC QP), pools of registered buffers, and the
 * counters.  Internal to src/rpcrdma/ (and its tests).
 */
#ifndef UIW_RR_CONN_H
#define UIW_RR_CONN_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "rpcrdma_cm.h"
#include "rr_xprt.h"

/* ---- Registered buffers ---------------------------------------------- */

struct rr_buf {
	struct rr_buf *next;        /* free list */
	uint8_t *base;
	uint32_t lkey;
	uint32_t idx;               /* creation order */
};

struct rr_pool_chunk;

/* Buffers of one size, registered a chunk at a time (one MR each):
 * growing costs a registration, taking and giving back nothing. */
struct rr_pool {
	struct ibv_pd *pd;
	size_t size;
	int access;
	struct rr_buf *free;
	struct rr_pool_chunk *chunks;
	struct rr_buf **all;        /* by idx */
	unsigned count, nfree;
	unsigned nmr;               /* chunks registered: MRs held */
	/* optional: a count of MRs shared with others (a listener's,
	 * uiw_rpcrdma_svc_usage), kept up to date by grow and destroy */
	uint64_t *mr_tally;
};

void rr_pool_init(struct rr_pool *p, struct ibv_pd *pd, size_t size,
		  int access);
/* n more buffers; 0 or -1 with errno set. */
int rr_pool_grow(struct rr_pool *p, unsigned n);
/* A free buffer, growing by grow (at least one) when none is left;
 * NULL with errno set when that fails. */
struct rr_buf *rr_pool_get(struct rr_pool *p, unsigned grow);
void rr_pool_put(struct rr_pool *p, struct rr_buf *b);
/* Deregisters and frees every buffer (the QP must be gone). */
void rr_pool_destroy(struct rr_pool *p);

/* ---- Work request ids ------------------------------------------------ */

/* wr_id: a pointer (8-aligned) and what it is in the low bits. */
enum rr_wr_kind {
	RR_WR_RECV = 1,     /* struct rr_buf */
	RR_WR_SEND = 2,     /* the role's send context */
	RR_WR_READ = 3,     /* the Responder's request */
	RR_WR_WRITE = 4,    /* unsignaled (seen only when it fails) */
};

static inline uint64_t rr_wr_id(const void *p, enum rr_wr_kind k)
{
	return (uint64_t)(uintptr_t)p | (uint64_t)k;
}

static inline enum rr_wr_kind rr_wr_kind(uint64_t id)
{
	return (enum rr_wr_kind)(id & 7);
}

static inline void *rr_wr_ptr(uint64_t id)
{
	return (void *)(uintptr_t)(id & ~(uint64_t)7);
}

/* A work request of one scatter/gather element: local (addr, len,
 * lkey) and, for RDMA Read and Write, remote (raddr, rkey). */
struct rr_wr {
	struct ibv_send_wr wr;
	struct ibv_sge sge;
};

void rr_wr_init(struct rr_wr *w, enum ibv_wr_opcode op, uint64_t wr_id,
		const void *addr, uint32_t len, uint32_t lkey, uint64_t raddr,
		uint32_t rkey, bool signaled);
/* Posts the chain from first; 0, or -1 with errno set. */
int rr_post(struct ibv_qp *qp, struct ibv_send_wr *first);
/* Appends the chain to the file UIWARP_RPCRDMA_TRACE names, if any
 * (rr_trace.c): what rr_post posts. */
void rr_trace_post(const struct ibv_qp *qp, const struct ibv_send_wr *first);

/* ---- A connection ----------------------------------------------------- */

struct rr_conn {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_comp_channel *cc;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct uiw_rr_opts o;
	/* RFC 8797: what this end advertised and what the peer did */
	struct uiw_rpcrdma_cm local, peer;
	uint8_t pd_out[UIW_RPCRDMA_CM_LEN];
	uint8_t pd_out_len;
	uint32_t send_thresh, recv_thresh;
	bool remote_inv;
	/* RDMA Reads this end may have in flight (ORD) and answers (IRD) */
	uint32_t ord, ird;
	uint32_t max_msg;           /* the port's largest message */
	struct rr_pool rpool;       /* receive buffers, inline_recv each */
	struct rr_pool spool;       /* send buffers, inline_send each */
	unsigned posted;            /* receives on the RQ */
	struct uiw_rr_stats st;
};

/* The options checked (NULL: defaults) into k->o, and what this end
 * advertises (RFC 8797 §4, or RFC 8166 §3.3.3's 1024 without private
 * data).  0, or -1 with err filled. */
int rr_conn_opts(struct rr_conn *k, const struct uiw_rr_opts *o, char *err,
		 size_t errlen);
/* What this end advertises (k->o set), R as remote_inv says. */
void rr_conn_local(struct rr_conn *k, bool remote_inv);
/* The peer's private data (NULL / 0: none) into the thresholds. */
void rr_conn_peer(struct rr_conn *k, const void *pd, size_t len);
/* The rdma_conn_param of a connect or accept with this end's private
 * data; ird/ord are this end's answers and asks. */
void rr_conn_param(struct rr_conn *k, struct rdma_conn_param *cp);

/* PD, completion channel (non-blocking), CQ, QP on k->id, the pools
 * (nrecv receive and nsend send buffers) and the receives posted.
 * 0, or -1 with err filled (what was made stays for
 * rr_conn_destroy). */
int rr_conn_verbs(struct rr_conn *k, unsigned max_recv, unsigned max_send,
		  unsigned nrecv, unsigned nsend, char *err, size_t errlen);
int rr_conn_post_recv(struct rr_conn *k, struct rr_buf *b);
/* Takes the completion channel's pending event (one at most: the CQ
 * is armed again only by rr_conn_cq_events) and acknowledges it;
 * returns how many there were.  The CQ stays unarmed: a poll of it may
 * then receive on the calling thread (the drop-in's poll mode). */
unsigned rr_conn_cq_take(struct rr_conn *k);
/* The same, then re-arms the CQ: before sleeping on the channel. */
unsigned rr_conn_cq_events(struct rr_conn *k);
/* Frees what k holds (QP, CQ, channels, MRs, PD, id), in that order. */
void rr_conn_destroy(struct rr_conn *k);

/* The next CM event of ch within timeout_ms (-1: none waiting is an
 * error at once when 0).  0 with *ev, or -1 with errno (ETIMEDOUT,
 * EAGAIN). */
int rr_cm_event(struct rdma_event_channel *ch, int timeout_ms,
		struct rdma_cm_event **ev);
/* The channel's fd made non-blocking. */
int rr_nonblock(int fd);

/* Monotonic milliseconds. */
uint64_t rr_now_ms(void);

__attribute__((format(printf, 3, 4)))
void rr_msg(char *buf, size_t len, const char *fmt, ...);

/* ---- What the tests look at (tests/rpcrdma/) ------------------------- */

struct rr_plan;

struct rr_clnt_credits {
	uint32_t grant;             /* the last grant (0 counted as 1) */
	unsigned outstanding;       /* calls holding a credit now */
	unsigned peak;              /* the most ever at once */
	uint64_t over_grant;        /* calls sent beyond the grant: 0 */
	unsigned zombies;           /* timed-out calls still holding one */
	unsigned posted;            /* receives on the RQ */
};
void rr_clnt_credits(struct uiw_rr_clnt *c, struct rr_clnt_credits *cr);
struct rr_conn *rr_clnt_conn(struct uiw_rr_clnt *c);
struct rr_conn *rr_sconn_conn(struct uiw_rr_sconn *s);
/* What the listener's connections share (rr_share.h). */
struct rr_share;
struct rr_share *rr_listener_share(struct uiw_rr_listener *l);
/* Why the connection ended ("" while it lasts). */
const char *rr_sconn_why(struct uiw_rr_sconn *s);
/* The plan a received call was served by. */
const struct rr_plan *rr_req_plan(const struct uiw_rr_req *req);

#endif
