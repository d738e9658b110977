/*
 * Queue pairs: the state shared by qp.c (verbs, states, completions and
 * flushing), tx.c (work requests and Read Responses into DDP segments)
 * and rx.c (the receive state machine and placement).
 */
#ifndef UIW_RNIC_QP_H
#define UIW_RNIC_QP_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>
#include <uiwarp/uiwarp.h>
#include "rnic.h"
#include "mr.h"
#include "atomic.h"
#include "rtr.h"
#include "cq.h"
#include "framing.h"
#include "wr.h"
#include "../wire/ddp.h"

#define UIW_TX_SEGS         64           /* segments built ahead of the
					    framing */
#define UIW_TX_AHEAD        (1u << 20)   /* segment octets built ahead at
					    most */
/* Header octets a segment keeps: the DDP header and the RDMAP octets
 * that are the engine's own (a Read Request, a Terminate, an atomic's
 * request or response, Immediate Data; the longest is a Terminate). */
#define UIW_SEG_KEEP        (UIW_DDP_MAX_HDR_LEN + UIW_TERM_MAX_LEN)

/* ---- Send queue ---------------------------------------------------------- */

enum uiw_sq_state {
	UIW_SQ_FREE = 0,
	UIW_SQ_POSTED,      /* waiting to be transmitted */
	UIW_SQ_ACTIVE,      /* being cut into segments */
	UIW_SQ_BUILT,       /* every segment built (a Read: its Request) */
	UIW_SQ_DONE,        /* complete, waiting for its turn to report */
};

struct uiw_sq_slot {
	uint64_t wr_id;
	const struct uiw_wr_row *row;  /* its opcode's (wr.h) */
	uint8_t state;              /* enum uiw_sq_state */
	bool signaled;
	bool solicited;
	bool fence;
	bool inl;                   /* payload copied at post time */
	bool holding;               /* holds on the source regions taken */
	bool aborted;               /* flushed while segments were in flight */
	bool read_done;             /* Read: the last Response octet placed */
	bool rd_last;               /* Read: the Response's last segment came */
	uint32_t num_sge;
	uint32_t length;            /* payload octets (Read: sink size) */
	uint32_t inv_stag;
	uint32_t rkey;
	uint64_t raddr;
	uint32_t msn;               /* MSN the Send / Read Request got */
	uint32_t rd_got;            /* Read: Response octets placed */
	uint32_t segs;              /* segments built and not yet sent */
	uint32_t nsrc;
	struct iovec *src;          /* payload pieces (max_send_sge) */
	struct uiw_sge *sge;        /* as posted (max_send_sge) */
	struct uiw_mr_entry **hold; /* per sge while transmitting */
	uint8_t *inline_buf;        /* max_inline_data octets */
	/* RFC 7306 (atomic.c) */
	uint64_t imm;               /* Immediate Data (every opcode) */
	struct uiw_atomic_req areq; /* an atomic's request (req_id at
				       build time) */
};

/* ---- Receive queue ------------------------------------------------------- */

struct uiw_rq_slot {
	uint64_t wr_id;
	uint32_t num_sge;
	uint32_t length;            /* octets the buffer takes */
	uint32_t got;               /* octets placed (in order: the next MO) */
	uint32_t total;             /* the message's length, once last */
	bool last;                  /* its last segment arrived */
	uint8_t cls;                /* Send or Immediate Data (rx.c) */
	uint8_t op;                 /* the last segment's opcode */
	uint32_t inv_stag;          /* and its Invalidate STag */
	uint8_t imm[UIW_IMM_DATA_LEN]; /* RFC 7306 Immediate Data */
	struct uiw_sge *sge;        /* max_recv_sge */
};

/* A ring of receive buffers: a QP's RQ, an SRQ's (srq.h).  head
 * (oldest) <= tail, free-running counters, slot = counter % size. */
struct uiw_rq_ring {
	struct uiw_rq_slot *slot;
	uint32_t size, head, tail;
	uint32_t nsge;              /* SGEs each slot holds */
};

/* ---- Inbound RDMA Read Requests (IRQ) ------------------------------------ */

/* What an IRQ entry answers (tx.c builds the Response by its kind). */
enum uiw_irq_kind {
	UIW_IRQ_READ = 0,           /* an RDMA Read Request (RFC 5040) */
	UIW_IRQ_ATOMIC,             /* an Atomic Request (RFC 7306) */
};

struct uiw_irq_ent {
	struct uiw_read_req rr;
	struct uiw_mr_entry *hold;  /* the source region (size > 0) */
	uint32_t off;               /* Response octets built */
	uint32_t segs;              /* segments built and not yet sent */
	bool used;
	bool built;                 /* the last Response segment is built */
	bool aborted;
	uint8_t kind;               /* enum uiw_irq_kind */
	/* RFC 7306: an Atomic Request (hold: its target region) */
	struct uiw_atomic_req areq;
};

/* ---- Transmit ------------------------------------------------------------ */

enum uiw_seg_owner { UIW_SEG_NONE = 0, UIW_SEG_SQ, UIW_SEG_IRQ, UIW_SEG_TERM };

/* One DDP segment as built: the part the framing sees, what it belongs
 * to, and its header octets (after the framing's headroom). */
struct uiw_tx_seg {
	struct uiw_seg_out out;
	uint8_t owner;              /* enum uiw_seg_owner */
	uint32_t idx;               /* SQ slot or IRQ entry */
	struct iovec one;           /* the payload piece of a Read Response */
	uint8_t buf[UIW_SEG_HEADROOM + UIW_SEG_KEEP];
};

enum uiw_msg_kind { UIW_MSG_NONE = 0, UIW_MSG_SQ, UIW_MSG_IRQ };

/* The message being cut into segments. */
struct uiw_tx_msg {
	uint8_t kind;
	uint32_t idx;
	uint32_t off;               /* payload octets segmented */
	uint32_t len;               /* payload octets */
	uint32_t src_i, src_off;    /* where payload octet off lies */
	bool imm_next;              /* Write with Immediate: the Write is
				       built, the Immediate Data is next */
};

/* ---- Receive ------------------------------------------------------------- */

#define UIW_RX_QUEUES 4             /* queues 0-3 (RFC 5040, RFC 7306) */
#define UIW_RX_QBUF   UIW_ATOMIC_REQ_LEN  /* the longest fixed message */

/* Queues 1-3: the fixed message in progress, in engine scratch. */
struct uiw_rx_q {
	uint32_t got;               /* payload octets placed */
	uint32_t end;               /* the message's length (L seen), or the
				       highest octet (a Terminate) */
	uint8_t op;                 /* opcode of its segments */
	uint8_t cls;
	bool seen;                  /* a segment of it was delivered */
	bool last;                  /* its last segment was */
	uint8_t buf[UIW_RX_QBUF > UIW_TERM_MAX_LEN ? UIW_RX_QBUF
						    : UIW_TERM_MAX_LEN];
};

/* The segment being received (rx.c). */
struct uiw_rx {
	bool stopped;               /* no more input (Terminate, error) */
	bool in_seg;                /* between rx_begin and rx_end */
	uint32_t len;               /* the segment's length, or
				       UIW_SEG_LEN_UNKNOWN */
	uint32_t plen;              /* its payload (len - hlen), or unknown */
	uint32_t hlen;              /* header octets given */
	uint8_t hdr[UIW_DDP_MAX_HDR_LEN];
	struct uiw_ddp_hdr h;
	const struct rdmap_row *row; /* its opcode's row */
	uiw_err_t err;              /* the segment is refused (why) */
	int loc_status;             /* failing WR status, -1: mapped */
	bool have_rdmap;            /* the Terminate copies q[1]'s Request */
	char why[96];
	/* where the payload goes */
	uint8_t plan;
	bool lazy;                  /* PL_MEM: range checked at placement */
	uint8_t *mem;               /* PL_MEM, PL_SCRATCH: octet 0's place */
	uint32_t lim;               /* payload octets that may be placed */
	uint32_t mr_stag;           /* PL_MEM: the region */
	uint32_t rq_ctr;            /* PL_SGL: the receive buffer */
	uint32_t sgl_mo;            /* PL_SGL: MO of payload octet 0 */
	int64_t fail_sq, fail_rq;   /* the WR the segment belongs to, or -1 */
	/* holds on registered memory named to the framing */
	struct uiw_mr_entry **holds;
	unsigned nholds, holds_cap;
	int64_t held_rq;            /* the receive buffer held, -1: none */
	bool held_mem;              /* PL_MEM: payload [held_lo, held_hi)
				       is held */
	uint32_t held_lo, held_hi;
	uint32_t disc;              /* discard octets named this turn */
	/* Messages, untagged [0] and tagged [1] apart, for uiw_qp_rx_guess:
	 * an RPC's Writes of data and Sends of replies, a Write and its
	 * Immediate Data, alternate */
	uint32_t msg_got[2];        /* payload of the message so far */
	uint32_t last_msg[2];       /* payload of the last whole message */
	uint32_t msn[UIW_RX_QUEUES]; /* next MSN expected on each queue */
	struct uiw_rx_q q[UIW_RX_QUEUES]; /* [1]..[3] */
	uint8_t discard[UIW_SEG_DISCARD];
};

/* Things to do once the QP lock is released. */
struct uiw_qp_act {
	bool kick;
	bool close;
	bool abortive;
	bool pinned;                /* the callback is pinned already (ops,
				       ctx taken under the lock that decided
				       it: uiw_qp_act_pin) */
	struct uiw_cq *ovf[2];      /* CQs that overflowed */
	struct uiw_cq *wake[2];     /* CQs whose waiters are to be woken
				       (uiw_cq_push's wake) */
	const struct uiw_llp_ops *ops;
	void *ctx;
};

/* ---- The queue pair ------------------------------------------------------ */

struct uiw_qp {
	struct uiw_device *dev;
	struct uiw_pd *pd;
	struct uiw_cq *scq, *rcq;
	struct uiw_qp *dev_next;
	void *context;
	uint32_t qpn;
	struct uiw_qp_cap cap;
	bool sq_sig_all;
	/* Access an RDMA Read's sink needs beyond local write
	 * (uiw_qp_init_attr.read_sink_access) */
	unsigned read_sink_access;
	bool flush_in_error;        /* uiw_qp_init_attr.flush_in_error */
	/* Receives come from this SRQ (srq.h): they are moved into the RQ
	 * ring below as messages need them. */
	struct uiw_srq *srq;

	pthread_mutex_t lock;
	pthread_cond_t cond;        /* detach and callbacks finished */
	enum uiw_qp_state state;

	/* The LLP */
	bool attached;
	const struct uiw_llp_ops *ops;
	void *ctx;
	struct uiw_llp_params lp;
	/* Poll mode: entries in the send and receive CQs' poller lists
	 * while attached to an LLP with ops->poll (one when they are the
	 * same CQ).  Changed only by attach and detach. */
	struct uiw_cq_poller poller[2];
	/* Callbacks running: counted up under lock (pinned), down without
	 * it; a detach waiting for them counts itself in cb_waiters, and
	 * the last callback to end then wakes it (both seq_cst, so that one
	 * of the two always sees the other). */
	atomic_uint cb_active;
	atomic_uint cb_waiters;
	bool close_req;             /* the connection should end */
	bool close_called;
	bool rx_fin;                /* the peer closed its half */
	bool cq_ovf_seen;           /* failed for a CQ overflow */

	/* Why the QP left RTS */
	struct uiw_term_cause cause;
	char term_msg[128];

	/* Send queue: head (oldest not reported) <= next (next to start)
	 * <= tail; free-running counters, slot = counter % size. */
	struct uiw_sq_slot *sq;
	uint32_t sq_size, sq_head, sq_next, sq_tail;
	/* Receive queue (with an SRQ: the buffers taken from it and not
	 * yet completed) */
	struct uiw_rq_ring rq;
	/* Outstanding outbound Reads (ORD): SQ counters, oldest first */
	uint32_t *orq;
	uint32_t orq_cap, orq_head, orq_count;
	/* Inbound Read Requests: head (oldest) <= next (next to start) <=
	 * tail; irq_unbuilt counts those whose Response is not all built. */
	struct uiw_irq_ent *irq;
	uint32_t irq_cap, irq_head, irq_next, irq_tail, irq_unbuilt;

	/* Transmit: a ring of segments handed out and not yet sent. */
	struct uiw_tx_seg *seg;
	uint32_t seg_head, seg_count;
	uint32_t tx_ahead;          /* octets of those segments */
	bool tx_held;               /* the framing cannot carry segments yet
				       (uiw_qp_tx_release) */
	struct uiw_tx_msg msg;
	uint32_t tx_msn[3];
	bool term_pending, term_built;
	bool tx_resp_last;          /* the last message was a Response */
	struct uiw_term term;

	struct uiw_rx rx;
	struct uiw_qp_act rx_act;   /* what a receive turn decided */
	struct uiw_qp_ext ext;      /* RFC 7306 (atomic.c) */
	struct uiw_rtr rtr;         /* RFC 6581 RTR (rtr.c) */
};


/* A reason to leave RTS. */
struct uiw_fail {
	uiw_err_t err;
	int origin;                 /* UIW_TERM_LOCAL, _REMOTE, _LLP */
	bool send_term;
	bool have_seg;              /* the Terminate may copy rx's segment */
	bool have_rdmap;            /* ... and its Read Request header */
	int64_t sq_idx, rq_idx;     /* the failing WR (counter), -1: none */
	int status;                 /* its status; -1: from err */
	const char *detail;
};

/* qp.c */
void uiw_qp_fail(struct uiw_qp *qp, const struct uiw_fail *f,
		 struct uiw_qp_act *act);
void uiw_qp_sq_check(struct uiw_qp *qp, uint32_t ctr,
		     struct uiw_qp_act *act);
void uiw_qp_complete(struct uiw_qp *qp, struct uiw_qp_act *act);
void uiw_qp_post_cqe(struct uiw_qp *qp, struct uiw_cq *cq,
		     struct uiw_wc *wc, struct uiw_qp_act *act);
void uiw_qp_close_check(struct uiw_qp *qp, struct uiw_qp_act *act);
/* Under qp->lock, as it is about to be released: pins the LLP callback
 * act asks for (kick or close), so that uiw_qp_act_run calls it without
 * taking the lock again. */
void uiw_qp_act_pin(struct uiw_qp *qp, struct uiw_qp_act *act);
/* Runs what act asks for; call without the QP lock.  Most calls have
 * nothing to run (a receive or transmit turn of the data path): that is
 * decided here, without a call. */
void uiw_qp_act_do(struct uiw_qp *qp, const struct uiw_qp_act *act);
static inline void uiw_qp_act_run(struct uiw_qp *qp,
				  const struct uiw_qp_act *act)
{
	if (act->kick || act->close || act->ovf[0] || act->ovf[1] ||
	    act->wake[0])
		uiw_qp_act_do(qp, act);
}
/* The outstanding send WR a received Terminate names (its copied DDP
 * header: a Read Request or Send by queue and MSN); -1 when none. */
int64_t uiw_qp_find_term_wr(struct uiw_qp *qp, const struct uiw_term *t);
static inline struct uiw_sq_slot *uiw_sq_at(struct uiw_qp *qp, uint32_t c)
{
	return &qp->sq[c % qp->sq_size];
}
static inline struct uiw_rq_slot *uiw_rq_at(struct uiw_qp *qp, uint32_t c)
{
	return &qp->rq.slot[c % qp->rq.size];
}
static inline struct uiw_irq_ent *uiw_irq_at(struct uiw_qp *qp, uint32_t c)
{
	return &qp->irq[c % qp->irq_cap];
}

/* Receive rings, a QP's and an SRQ's (qp.c).  alloc: an empty ring
 * of size slots of nsge SGEs each (at least one), in place of what r
 * held; 0 or -ENOMEM. */
int uiw_rq_ring_alloc(struct uiw_rq_ring *r, uint32_t size, uint32_t nsge);
void uiw_rq_ring_free(struct uiw_rq_ring *r);
/* Under the queue's lock: appends the receive work requests of the
 * list, each checked as uiw_post_recv says (SGE count against max_sge,
 * registrations of pd with local write access, size; -ENOMEM when the
 * ring is full); who and num name the queue in messages ("qp", "srq"
 * and its number).  On failure *bad_wr (if not NULL) is the first not
 * appended. */
int uiw_rq_post(struct uiw_rq_ring *r, struct uiw_device *dev,
		struct uiw_pd *pd, uint32_t max_sge, const char *who,
		uint32_t num, struct uiw_recv_wr *wr,
		struct uiw_recv_wr **bad_wr);
/* A slot holding a buffer not yet written. */
void uiw_rq_slot_set(struct uiw_rq_slot *r, uint64_t wr_id,
		     const struct uiw_sge *sge, uint32_t num_sge,
		     uint32_t length);

/* tx.c */
void uiw_tx_reset(struct uiw_qp *qp);
bool uiw_tx_wanted(const struct uiw_qp *qp);
/* The one builder of segments (for tx.c, atomic.c, rtr.c).  A new
 * segment at the end of the ring (tx_build checked there is room), its
 * DDP header encoded (RFC 5041 §4: DDP and RDMAP version 1): tagged
 * (§4.2) with stag and to, or untagged (§4.3) on queue qn with msn, mo
 * and the RDMAP Invalidate STag inv (RFC 5040 §4.3).  RDMAP octets the
 * engine keeps go after it (uiw_tx_seg_tail, then uiw_tx_seg_keep);
 * uiw_tx_seg_commit adds the payload, if any, and hands it out. */
struct uiw_tx_seg *uiw_tx_seg_tagged(struct uiw_qp *qp, uint8_t owner,
				     uint32_t idx, uint8_t opcode, bool last,
				     uint32_t stag, uint64_t to);
struct uiw_tx_seg *uiw_tx_seg_untagged(struct uiw_qp *qp, uint8_t owner,
				       uint32_t idx, uint8_t opcode,
				       bool last, uint32_t qn, uint32_t msn,
				       uint32_t mo, uint32_t inv);
/* Where RDMAP octets go after what the segment holds, and how many fit. */
static inline uint8_t *uiw_tx_seg_tail(struct uiw_tx_seg *g, size_t *room)
{
	*room = UIW_SEG_KEEP - g->out.hlen;
	return g->buf + UIW_SEG_HEADROOM + g->out.hlen;
}
static inline void uiw_tx_seg_keep(struct uiw_tx_seg *g, size_t n)
{
	g->out.hlen += (uint32_t)n;
}
/* plen payload octets from src (piece src_i, offset src_off); 0: none. */
void uiw_tx_seg_commit(struct uiw_qp *qp, struct uiw_tx_seg *g,
		       uint32_t plen, const struct iovec *src, uint32_t src_i,
		       uint32_t src_off);
void uiw_tx_drop(struct uiw_qp *qp);
/* Payload octets of the current message's next segment after a header
 * of hdr_len octets (RFC 5041 §5.2: at most MULPDU in all); *last when
 * they end the message. */
uint32_t uiw_tx_msg_cut(struct uiw_qp *qp, uint32_t hdr_len, bool *last);
/* Moves a payload cursor (piece *si, offset *so) over n octets. */
void uiw_tx_src_advance(const struct iovec *src, uint32_t *si, uint32_t *so,
			uint32_t n);
void uiw_tx_abort(struct uiw_qp *qp);
void uiw_sq_release_holds(struct uiw_qp *qp, struct uiw_sq_slot *s);

/* rx.c */
void uiw_rx_reset(struct uiw_qp *qp);
/* Refuses the segment being received (its payload is discarded, err is
 * reported when it ends); the first refusal of a segment stands. */
void uiw_rx_refuse(struct uiw_qp *qp, uiw_err_t err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Ends the stream for err with a Terminate that copies the segment. */
void uiw_rx_fail(struct uiw_qp *qp, uiw_err_t err, struct uiw_qp_act *act);
/* The same for an error found when a message is delivered. */
void uiw_rx_fail_msg(struct uiw_qp *qp, uiw_err_t err, int status,
		     struct uiw_qp_act *act, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
void uiw_rx_release_holds(struct uiw_qp *qp);
bool uiw_rx_mid_seg(const struct uiw_qp *qp);
const char *uiw_rdmap_op_name(uint8_t opcode);

#endif
