/*
 * uiwarp — a software RNIC in user space.
 *
 * Public API: devices, protection domains, memory regions, completion
 * queues, queue pairs and work requests, modelled on libibverbs; the
 * connection manager is in <uiwarp/cm.h>.
 *
 * Conventions
 *  - Functions returning int return 0 on success and a negative errno value
 *    on failure.  Constructors return NULL and set errno.  In both cases
 *    uiw_last_error() returns a message describing the failure (per thread).
 *  - All objects are thread safe unless stated otherwise.
 */
#ifndef UIWARP_UIWARP_H
#define UIWARP_UIWARP_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define UIW_VERSION_MAJOR 0
#define UIW_VERSION_MINOR 1

struct uiw_device;
struct uiw_pd;
struct uiw_cq;
struct uiw_qp;
struct uiw_srq;

/* Message describing the last failure of a uiw_ call in this thread. */
const char *uiw_last_error(void);

/* ------------------------------------------------------------------ */
/* Device                                                             */

struct uiw_device_attr {
	char name[32];
	uint32_t max_qp;
	uint32_t max_cq;
	uint32_t max_mr;
	uint32_t max_qp_wr;     /* per queue */
	uint32_t max_sge;
	uint32_t max_cqe;
	uint32_t max_ird;       /* inbound RDMA Read / atomic requests per QP */
	uint32_t max_ord;       /* outbound RDMA Read / atomic requests per QP */
	uint32_t max_msg_size;
	uint32_t max_private_data; /* MPA private data, octets */
	uint32_t cap_flags;     /* UIW_DEV_CAP_* */
	uint32_t max_srq;       /* shared receive queues */
	uint32_t max_srq_wr;    /* buffers per SRQ */
	uint32_t max_srq_sge;   /* SGEs per SRQ buffer */
};

/* uiwarp implements the whole of RFC 7306 and reports both flags.  A
 * peer without it (Linux siw, for one) answers these messages with a
 * Terminate, which ends the connection: the work request then completes
 * with an error status and wc.term says what the peer reported. */
enum {
	UIW_DEV_CAP_ATOMIC   = 1u << 0,  /* RFC 7306 atomics */
	UIW_DEV_CAP_IMM_DATA = 1u << 1,  /* RFC 7306 immediate data */
};

/* Opens a new software RNIC.  name may be NULL ("uiw0", "uiw1", ...). */
struct uiw_device *uiw_device_open(const char *name);
/* Closes a device; fails with -EBUSY while objects created on it remain. */
int uiw_device_close(struct uiw_device *dev);
int uiw_device_query(struct uiw_device *dev, struct uiw_device_attr *attr);

/* ------------------------------------------------------------------ */
/* Protection domains and memory regions                              */

struct uiw_pd *uiw_pd_alloc(struct uiw_device *dev);
int uiw_pd_free(struct uiw_pd *pd);   /* -EBUSY while MRs or QPs use it */

enum uiw_access {
	UIW_ACCESS_LOCAL_WRITE   = 1u << 0,
	UIW_ACCESS_REMOTE_WRITE  = 1u << 1,
	UIW_ACCESS_REMOTE_READ   = 1u << 2,
	UIW_ACCESS_REMOTE_ATOMIC = 1u << 3,
};

/* A registered memory region.  lkey and rkey are the same STag:
 * 24-bit index, 8-bit key (RFC 5040 §2.1).  Read-only for the user. */
struct uiw_mr {
	struct uiw_pd *pd;
	void *addr;
	size_t length;
	uint32_t lkey;
	uint32_t rkey;
	unsigned access;
};

struct uiw_mr *uiw_reg_mr(struct uiw_pd *pd, void *addr, size_t length,
			  unsigned access);
int uiw_dereg_mr(struct uiw_mr *mr);

/* ------------------------------------------------------------------ */
/* Completion queues                                                  */

enum uiw_wc_status {
	UIW_WC_SUCCESS = 0,
	UIW_WC_LOC_LEN_ERR,      /* receive buffer too small, bad length */
	UIW_WC_LOC_QP_OP_ERR,    /* local QP operation error */
	UIW_WC_LOC_PROT_ERR,     /* local protection (lkey, PD, rights) */
	UIW_WC_WR_FLUSH_ERR,     /* flushed: the QP left RTS */
	UIW_WC_BAD_RESP_ERR,     /* unexpected response from the peer */
	UIW_WC_LOC_ACCESS_ERR,   /* local access error on placement */
	UIW_WC_REM_INV_REQ_ERR,  /* peer reported an invalid request */
	UIW_WC_REM_ACCESS_ERR,   /* peer reported a protection error */
	UIW_WC_REM_OP_ERR,       /* peer reported an operation error */
	UIW_WC_FATAL_ERR,        /* connection lost, LLP error */
	UIW_WC_GENERAL_ERR,
};
const char *uiw_wc_status_str(enum uiw_wc_status status);

enum uiw_wc_opcode {
	UIW_WC_SEND,
	UIW_WC_RDMA_WRITE,
	UIW_WC_RDMA_READ,
	UIW_WC_LOCAL_INV,
	UIW_WC_FETCH_ADD,
	UIW_WC_CMP_SWP,
	UIW_WC_RECV,            /* an untagged message arrived */
	UIW_WC_RECV_RDMA_WITH_IMM, /* immediate data (RFC 7306): see below */
};

/*
 * Completions of RFC 7306 work requests:
 *  - at the sender, UIW_WR_IMMEDIATE completes as UIW_WC_SEND (byte_len
 *    0) and UIW_WR_RDMA_WRITE_WITH_IMM as UIW_WC_RDMA_WRITE (byte_len:
 *    the octets written), like a Send and a Write;
 *  - at the receiver, each Immediate Data message (alone, or the second
 *    half of a Write with Immediate) consumes the oldest posted receive
 *    (RFC 7306 §6.3) and completes it as UIW_WC_RECV_RDMA_WITH_IMM with
 *    UIW_WC_F_WITH_IMM set, the 8 octets in imm_data, byte_len 0 (the
 *    receive buffer is not written, so it may be empty) and
 *    UIW_WC_F_SOLICITED for Immediate Data with SE.  The receiver cannot
 *    tell whether a Write came first; one that did was placed before
 *    this completion (RFC 7306 §7);
 *  - an atomic completes as UIW_WC_FETCH_ADD or UIW_WC_CMP_SWP with
 *    byte_len 8, once the original remote value is in its local buffer.
 */

enum {
	UIW_WC_F_WITH_INV   = 1u << 0, /* Send with Invalidate: invalidated_stag */
	UIW_WC_F_WITH_IMM   = 1u << 1, /* imm_data is valid */
	UIW_WC_F_SOLICITED  = 1u << 2, /* message carried the SE bit */
};

/* Why a QP left RTS: the RFC 5040 §4.8 Terminate control fields. */
struct uiw_term_cause {
	uint8_t layer;  /* 0 RDMAP, 1 DDP, 2 LLP (UIW_TERM_LAYER_*) */
	uint8_t etype;
	uint8_t ecode;
	uint8_t origin; /* UIW_TERM_NONE, _LOCAL (we sent it), _REMOTE, _LLP */
};
enum { UIW_TERM_NONE = 0, UIW_TERM_LOCAL, UIW_TERM_REMOTE, UIW_TERM_LLP };
enum { UIW_TERM_LAYER_RDMAP = 0, UIW_TERM_LAYER_DDP = 1, UIW_TERM_LAYER_LLP = 2 };
/* Human-readable name of a Terminate cause ("DDP untagged buffer error: invalid QN"). */
const char *uiw_term_cause_str(const struct uiw_term_cause *cause);

struct uiw_wc {
	uint64_t wr_id;
	enum uiw_wc_status status;
	enum uiw_wc_opcode opcode;
	uint32_t byte_len;      /* bytes received / read / written */
	uint32_t flags;         /* UIW_WC_F_* */
	uint32_t invalidated_stag;
	uint32_t qp_num;
	uint64_t imm_data;
	struct uiw_qp *qp;
	/* For error statuses: the Terminate that ended the stream, if any. */
	struct uiw_term_cause term;
};

/* A completion queue of at least cqe entries. */
struct uiw_cq *uiw_cq_create(struct uiw_device *dev, int cqe);
int uiw_cq_destroy(struct uiw_cq *cq);    /* -EBUSY while QPs use it */
/* Returns the number of completions written to wc (0..n), or -errno
 * (-EOVERFLOW once the CQ has overflowed). */
int uiw_cq_poll(struct uiw_cq *cq, int n, struct uiw_wc *wc);
/* A file descriptor that becomes readable when an armed notification
 * fires; use with poll/epoll, then uiw_cq_ack_events(). */
int uiw_cq_fd(struct uiw_cq *cq);
/* Arms the CQ: the next completion (solicited_only: the next solicited
 * receive completion or any error completion) makes the fd readable. */
int uiw_cq_req_notify(struct uiw_cq *cq, int solicited_only);
/* Consumes notifications that made the fd readable; returns their count. */
int uiw_cq_ack_events(struct uiw_cq *cq);
/* Blocks until the fd is readable or timeout_ms passes (-1: forever);
 * returns 1 on an event, 0 on timeout, -errno on error. */
int uiw_cq_wait(struct uiw_cq *cq, int timeout_ms);
/*
 * Poll mode (busy polling), for the lowest latency.  With mode
 * UIW_CQ_POLL, uiw_cq_poll, when it finds no completion, itself receives
 * on the calling thread for every connected QP that uses this CQ (as its
 * send or receive CQ): it reads what the socket holds (never blocking),
 * runs the protocol and returns the completions that produced, with no
 * hand-over from the device's progress thread.  While the application
 * keeps polling, the progress thread leaves those connections' receive
 * alone; so in poll mode a connection makes receive progress (RDMA
 * Writes are placed, Read Requests answered) while the application
 * calls uiw_cq_poll or uiw_cq_wait, or after it armed the CQ:
 * uiw_cq_req_notify hands receiving back to the progress thread until
 * the notification fires (so the usual arm, poll, uiw_cq_wait sequence
 * still works, and no completion is missed), and the next uiw_cq_poll
 * after that takes it over again.  An application that does none of
 * these (it polled once, then went elsewhere) loses receive to the
 * progress thread after 10 ms, until its next poll: a connection waits
 * for it that long at most.  A reset by the peer never discards what
 * arrived before it.  Instead of spinning, the application
 * may sleep in uiw_cq_wait without arming: in poll mode it then waits
 * until one of those connections has octets to receive or a completion
 * arrives (it returns 1; the next uiw_cq_poll receives), still with no
 * hand-over.  Several threads may poll; one receives for a connection at
 * a time.
 *
 * UIW_CQ_POLL | UIW_CQ_POLL_DEFER_SEND also batches sending: while the
 * CQ is not armed, uiw_post_send on a QP whose send CQ it is only queues
 * the work request, and the next uiw_cq_poll or uiw_cq_wait of the CQ
 * sends everything queued, several messages in one system call (the
 * message rate of small operations multiplies).  The application must
 * then poll (or wait on, or arm) the CQ after posting: a work request is
 * not sent before.
 *
 * mode 0 (the default) hands receiving and sending back for good.
 * Returns 0 or -errno.
 */
enum { UIW_CQ_POLL = 1u << 0, UIW_CQ_POLL_DEFER_SEND = 1u << 1 };
int uiw_cq_set_poll_mode(struct uiw_cq *cq, int mode);

/* ------------------------------------------------------------------ */
/* Queue pairs                                                        */

/* RFC 5040 §6 states. */
enum uiw_qp_state {
	UIW_QPS_IDLE = 0,
	UIW_QPS_RTS,
	UIW_QPS_CLOSING,
	UIW_QPS_TERMINATE,
	UIW_QPS_ERROR,
};
const char *uiw_qp_state_str(enum uiw_qp_state state);

struct uiw_qp_cap {
	uint32_t max_send_wr;
	uint32_t max_recv_wr;
	uint32_t max_send_sge;
	uint32_t max_recv_sge;
	uint32_t max_inline_data; /* 0: no inline sends */
};

struct uiw_qp_init_attr {
	struct uiw_cq *send_cq;
	struct uiw_cq *recv_cq;
	struct uiw_qp_cap cap;
	int sq_sig_all;           /* every send WR is signalled */
	void *qp_context;
	/* Receives come from this shared receive queue (of the same PD)
	 * instead of the QP's own: cap.max_recv_wr and max_recv_sge are
	 * then ignored, and uiw_post_recv fails with -EINVAL. */
	struct uiw_srq *srq;
	/* Access rights an RDMA Read's sink region must have beyond
	 * UIW_ACCESS_LOCAL_WRITE (0: none).  The verbs layer asks for
	 * UIW_ACCESS_REMOTE_WRITE, as iWARP devices do: the sink is the
	 * tagged buffer the peer's Read Response writes (RFC 5040 §4.4). */
	unsigned read_sink_access;
	/* Work requests posted in Error or Terminate complete at once
	 * with UIW_WC_WR_FLUSH_ERR, and receives posted in Closing wait and
	 * are flushed when the close ends, instead of failing with -EINVAL
	 * (the verbs' rule, which the verbs layer asks for: to verbs the
	 * QP is connected, then in error).  Each is still checked as in
	 * RTS first: one that could not be posted there fails. */
	int flush_in_error;
};

/* The lower-layer protocol that carries DDP.  Zero is TCP, so that a
 * zeroed uiw_conn_param or uiw_listen_param keeps meaning TCP. */
enum uiw_llp_kind {
	UIW_LLP_TCP = 0,    /* MPA over TCP (RFC 5044) */
	/* DDP over SCTP (RFC 5043): on the kernel's SCTP where the kernel
	 * has it, otherwise on the user-space stack over UDP. */
	UIW_LLP_SCTP = 1,
	/* DDP over SCTP on the user-space stack (usrsctp), its packets in
	 * UDP (RFC 6951; port: uiw_conn_param.udp_port), whatever the
	 * kernel has.  What uiw_qp_query reports for it. */
	UIW_LLP_SCTP_UDP = 2,
	/* DDP over SCTP on the kernel's SCTP; -EPROTONOSUPPORT where the
	 * kernel has none (never a silent fallback).  UDP encapsulation
	 * when the kernel's net.sctp.udp_port is set. */
	UIW_LLP_SCTP_KERNEL = 3,
};

struct uiw_qp_attr {
	enum uiw_qp_state state;
	uint32_t qp_num;
	struct uiw_qp_cap cap;
	uint32_t ird;             /* negotiated inbound Read/atomic depth */
	uint32_t ord;             /* negotiated outbound Read/atomic depth */
	uint32_t mulpdu;          /* current maximum ULPDU size */
	uint8_t llp;              /* enum uiw_llp_kind: what carries DDP */
	int crc;                  /* MPA CRC in use */
	int markers_tx;           /* we insert markers */
	int markers_rx;           /* the peer inserts markers */
	struct uiw_term_cause term; /* why the QP left RTS, if it did */
	char term_msg[128];       /* a log line describing it */
};

struct uiw_qp *uiw_qp_create(struct uiw_pd *pd,
			     const struct uiw_qp_init_attr *attr);
/* Destroys a QP; a connected QP is disconnected abortively first. */
int uiw_qp_destroy(struct uiw_qp *qp);
int uiw_qp_query(struct uiw_qp *qp, struct uiw_qp_attr *attr);
void *uiw_qp_context(struct uiw_qp *qp);

struct uiw_sge {
	uint64_t addr;
	uint32_t length;
	uint32_t lkey;
};

enum uiw_wr_opcode {
	UIW_WR_SEND = 0,
	UIW_WR_SEND_WITH_INV,     /* invalidates the peer's invalidate_stag */
	UIW_WR_RDMA_WRITE,
	UIW_WR_RDMA_READ,
	UIW_WR_LOCAL_INV,         /* invalidates local invalidate_stag */
	UIW_WR_RDMA_WRITE_WITH_IMM, /* RFC 7306 */
	UIW_WR_IMMEDIATE,         /* RFC 7306 Immediate Data */
	UIW_WR_ATOMIC_FETCH_ADD,  /* RFC 7306 */
	UIW_WR_ATOMIC_CMP_SWP,    /* RFC 7306 */
};

enum {
	UIW_SEND_SIGNALED  = 1u << 0,
	UIW_SEND_SOLICITED = 1u << 1, /* Send with SE / Immediate with SE */
	UIW_SEND_INLINE    = 1u << 2, /* copy payload at post time */
	UIW_SEND_FENCE     = 1u << 3, /* wait for outstanding Reads and
					 atomics first */
	UIW_SEND_ATOMIC_MASKED = 1u << 4, /* the atomic's masks are set */
};

/*
 * RFC 7306 work requests.
 *
 * UIW_WR_IMMEDIATE: 8 octets (imm_data) and no payload (num_sge 0); with
 * UIW_SEND_SOLICITED it is Immediate Data with SE.
 *
 * UIW_WR_RDMA_WRITE_WITH_IMM: an RDMA Write exactly as UIW_WR_RDMA_WRITE
 * (sg_list, wr.rdma; 0 octets or more) followed by an Immediate Data
 * message with imm_data (with SE under UIW_SEND_SOLICITED), both from
 * this one work request; the receiver's completion comes after the
 * Write is placed.
 *
 * UIW_WR_ATOMIC_FETCH_ADD and UIW_WR_ATOMIC_CMP_SWP: one 64-bit word at
 * wr.atomic.remote_addr of the peer's region wr.atomic.rkey, which must
 * be 8-octet aligned (the peer checks it: a misaligned target ends the
 * connection, RFC 7306 §8.2) and registered with
 * UIW_ACCESS_REMOTE_ATOMIC.  sg_list is exactly one SGE of 8 octets with
 * UIW_ACCESS_LOCAL_WRITE: the original remote value is written there in
 * host byte order before the work request completes.  Values are host
 * order at both ends (the target word is in the peer's host order,
 * big-endian on the wire).  Atomics share ORD with RDMA Reads.
 *
 * Without UIW_SEND_ATOMIC_MASKED the plain operations verbs users know
 * are done, and the mask fields are ignored:
 *   FetchAdd:  *remote += compare_add                 (Add Mask 0)
 *   CmpSwap:   if (*remote == compare_add) *remote = swap
 *                                      (Compare and Swap Masks all ones)
 * With UIW_SEND_ATOMIC_MASKED the masked forms of RFC 7306 §5.1:
 *   FetchAdd:  compare_add is the Add Data, compare_add_mask the Add
 *              Mask: each set bit ends a field (it is the field's most
 *              significant bit) and no carry crosses into the next
 *              field; swap and swap_mask are ignored;
 *   CmpSwap:   compare_add / compare_add_mask are the Compare Data and
 *              Compare Mask, swap / swap_mask the Swap Data and Swap
 *              Mask: if (!((*remote ^ compare_add) & compare_add_mask))
 *                  *remote = (*remote & ~swap_mask) | (swap & swap_mask)
 */

struct uiw_send_wr {
	uint64_t wr_id;
	struct uiw_send_wr *next;
	struct uiw_sge *sg_list;
	int num_sge;
	enum uiw_wr_opcode opcode;
	unsigned send_flags;
	uint32_t invalidate_stag;   /* SEND_WITH_INV, LOCAL_INV */
	uint64_t imm_data;          /* WRITE_WITH_IMM, IMMEDIATE */
	union {
		struct {
			uint64_t remote_addr; /* tagged offset */
			uint32_t rkey;        /* remote STag */
		} rdma;
		struct {                      /* FETCH_ADD, CMP_SWP */
			uint64_t remote_addr; /* tagged offset, 8-aligned */
			uint32_t rkey;        /* remote STag */
			uint64_t compare_add; /* Add Data / Compare Data */
			uint64_t swap;        /* Swap Data */
			uint64_t compare_add_mask; /* Add / Compare Mask */
			uint64_t swap_mask;   /* Swap Mask */
		} atomic;
	} wr;
};

struct uiw_recv_wr {
	uint64_t wr_id;
	struct uiw_recv_wr *next;
	struct uiw_sge *sg_list;
	int num_sge;
};

/* Moves a QP to Error at once (the verbs' modify to ERR): a connected
 * QP's stream is closed abortively (no Terminate), and every outstanding
 * work request completes once, flushed (UIW_WC_WR_FLUSH_ERR).  Works in
 * every state; on a QP in Error it does nothing.  It queues no
 * QP_FATAL event (the consumer asked for it), but a QP with an SRQ gets
 * UIW_EVENT_QP_LAST_WQE_REACHED.  Returns 0 or -errno. */
int uiw_qp_set_error(struct uiw_qp *qp);

/* ------------------------------------------------------------------ */
/* Shared receive queues                                              */

/*
 * A shared receive queue: receive buffers that any QP created with it
 * (uiw_qp_init_attr.srq) takes, oldest first, as untagged messages
 * (Sends, Immediate Data) arrive on it.  A buffer is taken when a
 * message's first segment arrives; if the QP leaves RTS the buffers it
 * had taken and not completed complete flushed on its receive CQ, the
 * others stay in the SRQ.
 *
 * The limit event (the verbs' IBV_EVENT_SRQ_LIMIT_REACHED): once armed
 * with a non-zero srq_limit, the first time the number of buffers in
 * the SRQ falls below it the device queues a UIW_EVENT_SRQ_LIMIT_REACHED
 * async event and disarms (srq_limit reads 0 again).  The count is
 * looked at when a QP takes a buffer: armed while already below, the
 * event comes with the next buffer taken.
 *
 * Destroying a QP drops the buffers it had taken and not completed
 * (without completions, as its other work requests).
 */
struct uiw_srq_attr {
	uint32_t max_wr;     /* buffers it holds (create: at least) */
	uint32_t max_sge;    /* SGEs per buffer */
	uint32_t srq_limit;  /* armed limit; 0: not armed */
};
/* max_wr 1..uiw_device_attr.max_srq_wr, max_sge up to max_srq_sge;
 * srq_limit is not looked at (rdma-core 44 behaviour: arm with
 * uiw_srq_arm).  attr is written back with the actual sizes. */
struct uiw_srq *uiw_srq_create(struct uiw_pd *pd, struct uiw_srq_attr *attr,
			       void *srq_context);
int uiw_srq_destroy(struct uiw_srq *srq);   /* -EBUSY while QPs use it */
int uiw_srq_query(struct uiw_srq *srq, struct uiw_srq_attr *attr);
/* Arms (srq_limit > 0) or disarms (0) the limit event; -EINVAL when
 * srq_limit exceeds max_wr. */
int uiw_srq_arm(struct uiw_srq *srq, uint32_t srq_limit);
void *uiw_srq_context(struct uiw_srq *srq);
/* As uiw_post_recv; -ENOMEM when the SRQ is full. */
int uiw_post_srq_recv(struct uiw_srq *srq, struct uiw_recv_wr *wr,
		      struct uiw_recv_wr **bad_wr);

/* ------------------------------------------------------------------ */
/* Asynchronous events                                                */

/* Events about objects rather than work requests (the verbs' async
 * events).  Each device queues at most UIW_ASYNC_EVENTS_MAX of them; when
 * full, the oldest is dropped (and counted in `lost` of the next one). */
enum uiw_async_event_type {
	/* a QP left RTS for an error: a Terminate sent or received, the
	 * LLP connection lost, a CQ overflow (qp) */
	UIW_EVENT_QP_FATAL = 1,
	/* ... for a protection error instead (RDMAP remote protection
	 * errors, DDP tagged buffer errors: what completes as
	 * UIW_WC_LOC_PROT_ERR or UIW_WC_REM_ACCESS_ERR) (qp) */
	UIW_EVENT_QP_ACCESS_ERR,
	UIW_EVENT_QP_LAST_WQE_REACHED, /* a QP with an SRQ left RTS: no
					  more of its receives complete (qp) */
	UIW_EVENT_SRQ_LIMIT_REACHED,  /* see uiw_srq_arm (srq) */
	UIW_EVENT_CQ_ERR,             /* a CQ overflowed (cq) */
};
#define UIW_ASYNC_EVENTS_MAX 1024
struct uiw_async_event {
	enum uiw_async_event_type type;
	struct uiw_qp *qp;
	struct uiw_srq *srq;
	struct uiw_cq *cq;
	uint32_t lost;                /* events dropped just before it */
};
/* A file descriptor readable while an async event is queued. */
int uiw_device_async_fd(struct uiw_device *dev);
/* Takes the oldest event.  timeout_ms: 0 non-blocking, -1 blocks;
 * -EAGAIN when none came in time, -EINTR when a signal interrupts the
 * wait.  An event names an object by pointer; destroying the object
 * drops its events still queued. */
int uiw_device_get_async_event(struct uiw_device *dev,
			       struct uiw_async_event *ev, int timeout_ms);
const char *uiw_async_event_str(enum uiw_async_event_type type);

/* Post work requests.  On failure *bad_wr (if not NULL) points at the
 * first request not posted.  Receives may be posted in Idle and RTS;
 * sends in Idle (they go out once the QP is in RTS) and RTS.  In Closing,
 * Terminate and Error a post fails with -EINVAL (the work requests that
 * were outstanding when the QP left RTS complete once, flushed), except
 * on a QP made with flush_in_error (see there).  A full queue gives
 * -ENOMEM. */
int uiw_post_send(struct uiw_qp *qp, struct uiw_send_wr *wr,
		  struct uiw_send_wr **bad_wr);
int uiw_post_recv(struct uiw_qp *qp, struct uiw_recv_wr *wr,
		  struct uiw_recv_wr **bad_wr);

#ifdef __cplusplus
}
#endif

#include <uiwarp/cm.h>

#endif
