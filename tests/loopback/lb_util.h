/*
 * Helpers for the loopback tests: a connected pair of QPs over the
 * connection manager on 127.0.0.1, registered buffers, posting and
 * waiting for completions with a deadline, data patterns.
 *
 * Every function returns 0 (or a count, or a pointer) on success and a
 * negative value (or NULL) on failure; lbu_err() then says what went
 * wrong.  Nothing here asserts or exits, so the helpers can be used from
 * any test framework and from any thread; LBU_OK() turns a failure into
 * a cmocka failure when <cmocka.h> was included first.
 *
 * Waiting never sleeps: completions are awaited by polling the CQ and,
 * between polls, poll(2) on the CQ's notification fd; CM events by
 * uiw_cm_get_event with the remaining time.  Every wait gives up after
 * lbu_timeout_ms() (30 s, or $UIW_TEST_TIMEOUT_MS) with a message.
 */
#ifndef UIW_TESTS_LB_UTIL_H
#define UIW_TESTS_LB_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <uiwarp/uiwarp.h>

#define LBU_TIMEOUT_MS_DEFAULT 30000

/* What the last failing lbu_ call in this thread complained about. */
const char *lbu_err(void);
/* Records a failure message (printf format) and returns -1. */
int lbu_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The wait limit in milliseconds. */
int lbu_timeout_ms(void);
/* Milliseconds on CLOCK_MONOTONIC. */
int64_t lbu_now_ms(void);

#ifdef fail_msg
/* In a cmocka test: fail with the helper's message unless expr is >= 0. */
#define LBU_OK(expr)							\
	do {								\
		if ((long)(expr) < 0)					\
			fail_msg("%s:%d: %s: %s", __FILE__, __LINE__,	\
				 #expr, lbu_err());			\
	} while (0)
/* In a cmocka test: fail with the helper's message if ptr is NULL. */
#define LBU_NN(ptr)							\
	do {								\
		if ((ptr) == NULL)					\
			fail_msg("%s:%d: %s: %s", __FILE__, __LINE__,	\
				 #ptr, lbu_err());			\
	} while (0)
#endif

/* ------------------------------------------------------------------ */
/* Listener                                                           */

#define LBU_MAX_PENDING 32

struct lbu_listener {
	struct uiw_device *dev;
	struct uiw_cm_channel *ch;
	struct uiw_cm_id *id;
	uint16_t port;                  /* host order */
	/* CONNECT_REQUEST ids that no pair has taken yet, oldest first. */
	struct uiw_cm_id *pending[LBU_MAX_PENDING];
	int npending;
};

/* The LLP the tests run on: $UIW_LB_LLP (tcp, the default; sctp-udp,
 * sctp, sctp-kernel: DDP over SCTP), and for SCTP the process's UDP
 * port (a free one, chosen once). */
enum uiw_llp_kind lbu_llp(uint16_t *udp_port);
/* Listens on 127.0.0.1, port chosen by the system, backlog 16. */
int lbu_listener_open(struct lbu_listener *l, struct uiw_device *dev);
/* The same with the backlog given (uiw_cm_listen's). */
int lbu_listener_open_backlog(struct lbu_listener *l, struct uiw_device *dev,
			      int backlog);
int lbu_listener_close(struct lbu_listener *l);

/* ------------------------------------------------------------------ */
/* Registered buffers                                                 */

struct lbu_buf {
	struct lbu_buf *next;   /* the owning side's list */
	uint8_t *mem;           /* page aligned */
	size_t len;
	struct uiw_mr *mr;
};

/* ------------------------------------------------------------------ */
/* One end of a connection                                            */

struct lbu_side {
	const char *name;               /* "client" or "server" */
	struct uiw_device *dev;
	struct uiw_pd *pd;
	struct uiw_cq *scq, *rcq;       /* may be the same CQ */
	struct uiw_qp *qp;
	struct uiw_cm_channel *ch;      /* where this id's events arrive */
	struct uiw_cm_id *id;
	struct uiw_srq *srq;            /* its receives come from there */
	struct lbu_buf *bufs;
	unsigned own;                   /* LBU_OWN_*: what teardown frees */
	/* Set by the CM event pump. */
	int established;
	int disconnected;
	int failed;                     /* CONNECT_ERROR or REJECTED */
	int fail_status;
	/* Negotiated attributes, read once ESTABLISHED. */
	struct uiw_qp_attr attr;
};

enum {
	LBU_OWN_DEV = 1u << 0,
	LBU_OWN_PD  = 1u << 1,
	LBU_OWN_SCQ = 1u << 2,
	LBU_OWN_RCQ = 1u << 3,
	LBU_OWN_CH  = 1u << 4,
};

struct lbu_opts {
	enum uiw_opt crc;               /* what both sides ask for */
	enum uiw_opt cli_markers;       /* client asks the server for markers */
	enum uiw_opt srv_markers;       /* server asks the client for markers */
	enum uiw_opt align;             /* FPDU alignment, both sides */
	uint32_t cli_ird, cli_ord;      /* 0: defaults */
	uint32_t srv_ird, srv_ord;
	uint32_t sq_depth;              /* 0: 64 */
	uint32_t rq_depth;              /* 0: 64 */
	uint32_t max_sge;               /* 0: 4 */
	int cq_depth;                   /* 0: sq + rq + 16 */
	int sq_sig_all;
	/* Shared resources (NULL: the pair creates and frees its own). */
	struct uiw_device *cli_dev, *srv_dev;
	struct lbu_listener *lst;       /* must be on srv_dev */
	struct uiw_cq *cli_scq, *cli_rcq, *srv_scq, *srv_rcq;
	/* The server's QP in this PD (of srv_dev), taking its receives
	 * from srv_srq (of srv_pd) when set; lbu_post_recv then posts to
	 * the SRQ. */
	struct uiw_pd *srv_pd;
	struct uiw_srq *srv_srq;
	/* uiw_qp_init_attr.read_sink_access of both QPs. */
	unsigned read_sink_access;
	/* SCTP over UDP: the UDP port the client sends to (a relay's,
	 * say); 0: the listener's (lbu_llp). */
	uint16_t cli_udp_port;
	/* Private data the client sends with its MPA Request. */
	const void *cli_pdata;
	uint16_t cli_pdata_len;
	/* RFC 5044 §7.1.2: an MPA responder sends no FPDU before it has
	 * received one, so with MPA revision 1 the initiator's ULP must
	 * speak first.  lbu_pair_connect does that for the tests (a
	 * zero-length Send from the client into a zero-length receive on
	 * the server, both completions consumed) unless this is set. */
	int skip_first_send;
};

struct lbu_pair {
	struct lbu_side cli, srv;
	struct lbu_listener *lst;
	int own_lst;
};

void lbu_opts_init(struct lbu_opts *o);
/* Creates both sides, connects them and waits for ESTABLISHED on both.
 * Checks that the QPs are in RTS and that CRC and markers were
 * negotiated as the options say.  On failure everything created is
 * freed again. */
int lbu_pair_connect(struct lbu_pair *p, const struct lbu_opts *o);
/* Graceful close from the client; waits for DISCONNECTED on both. */
int lbu_pair_disconnect(struct lbu_pair *p);
/* Disconnects if still connected, then frees every object. */
int lbu_pair_destroy(struct lbu_pair *p);

/* Processes CM events for the side until it is DISCONNECTED. */
int lbu_wait_disconnected(struct lbu_side *s);
/* Current QP state (UIW_QPS_*), or -1 with a message. */
int lbu_qp_state(struct lbu_side *s, struct uiw_qp_attr *attr);

/* Allocates len octets (at least one page, page aligned), fills them
 * with zeroes and registers them on the side's PD. */
struct lbu_buf *lbu_buf_alloc(struct lbu_side *s, size_t len,
			      unsigned access);
int lbu_buf_free(struct lbu_side *s, struct lbu_buf *b);
/* The tagged offset of b->mem + off as a peer addresses it. */
uint64_t lbu_to(const struct lbu_buf *b, size_t off);

/* ------------------------------------------------------------------ */
/* Work requests                                                      */

/* One receive of len octets at b->mem + off (len 0: no SGE), to the
 * side's SRQ if it has one. */
int lbu_post_recv(struct lbu_side *s, uint64_t wr_id, struct lbu_buf *b,
		  size_t off, size_t len);
/* One send-queue work request with a single local SGE (none if len is
 * 0).  raddr/rkey: the remote buffer for Write and Read; inv: the STag
 * for SEND_WITH_INV and LOCAL_INV. */
int lbu_post_send(struct lbu_side *s, uint64_t wr_id,
		  enum uiw_wr_opcode op, unsigned flags, struct lbu_buf *b,
		  size_t off, size_t len, uint64_t raddr, uint32_t rkey,
		  uint32_t inv);

/* Waits for exactly n completions (arming the CQ and poll(2)ing its fd
 * between polls).  Fails on timeout or CQ error. */
int lbu_wait_wc(struct uiw_cq *cq, struct uiw_wc *wc, int n);
/* The same without touching the notification machinery: polls the CQ
 * and yields.  For tests that check notifications themselves. */
int lbu_spin_wc(struct uiw_cq *cq, struct uiw_wc *wc, int n);
/* Waits for one completion and checks its wr_id, status and opcode
 * (opcode < 0: any).  wc may be NULL. */
int lbu_expect_wc(struct uiw_cq *cq, uint64_t wr_id,
		  enum uiw_wc_status status, int opcode, struct uiw_wc *wc);
/* Fails if the CQ holds a completion right now. */
int lbu_cq_empty(struct uiw_cq *cq, const char *what);
/* 1 if fd is readable within timeout_ms, 0 if not, -1 on error. */
int lbu_fd_readable(int fd, int timeout_ms);
/* A one-line description of a completion, for messages. */
const char *lbu_wc_str(const struct uiw_wc *wc, char *buf, size_t len);

/* Async events: fails unless the device has none queued (and its fd is
 * not readable). */
int lbu_no_async_event(struct uiw_device *dev, const char *when);
/* Takes the next async event, waiting up to timeout_ms, and checks its
 * type and the objects it names (lost must be 0). */
int lbu_expect_async_event(struct uiw_device *dev, int timeout_ms,
			   enum uiw_async_event_type type, struct uiw_qp *qp,
			   struct uiw_srq *srq, struct uiw_cq *cq);

/* ------------------------------------------------------------------ */
/* Data                                                               */

/* A reproducible pseudo-random pattern: octet i of stream `seed` is a
 * function of (seed, i) only, so a message gathered from pieces can be
 * checked as one.  lbu_fill writes octets [0, n) of the stream, and
 * lbu_fill_at octets [base, base + n). */
void lbu_fill(void *p, size_t n, uint32_t seed);
void lbu_fill_at(void *p, size_t n, uint32_t seed, uint64_t base);
/* Checks p against the pattern; the message names the first bad
 * octet and the number of bad octets. */
int lbu_verify(const void *p, size_t n, uint32_t seed, const char *what);
int lbu_verify_at(const void *p, size_t n, uint32_t seed, uint64_t base,
		  const char *what);
/* Checks that every octet of p is c. */
int lbu_verify_byte(const void *p, size_t n, uint8_t c, const char *what);

#endif
