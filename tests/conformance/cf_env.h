/*
 * The uiwarp side of a conformance case: a device, two protection
 * domains, registered regions with guard octets around them in one
 * allocation, completion queues, a QP, and a CM listener or connector in
 * this process (uiwarp's own progress thread runs the connection), facing
 * a raw peer (rawpeer.h) on 127.0.0.1.
 *
 * A case opens the environment (cf_setup, cf_connect, cf_prime and
 * cf_outstanding, or cf_open for all four), sends what it wants on the
 * raw peer, and states what must follow: cf_expect_term for a Terminate,
 * cf_expect_closed for a connection closed without one.  Those check the
 * Terminate octet by octet, the QP state and its term cause, that every
 * work request completed exactly once with the status the case expects
 * (flushed unless said otherwise), that no octet of the allocation
 * changed except where the case said it may, and that the connection is
 * closed on both sides.
 *
 * The lower layer is MPA over TCP, or DDP over SCTP (RFC 5043) when
 * $UIW_CF_LLP is "sctp" (cf_llp()): uiwarp then listens or connects over
 * SCTP on UDP (UIW_LLP_SCTP_UDP), the raw peer is an association of the
 * SCTP peer process (sctppeer.h), the startup is a DDP Stream Session
 * (plain Initiate and Accept, as revision 1 is over TCP), and the
 * checks of the end of a case read its Session Terminate where TCP has
 * its FIN.  Cases about MPA itself do not run there; cf_run_tests says
 * which and why.
 *
 * Functions return 0 on success and -1 with cf_err() / rp_err() set;
 * CF_OK() turns that into a cmocka failure.
 */
#ifndef UIW_TESTS_CF_ENV_H
#define UIW_TESTS_CF_ENV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uiwarp/uiwarp.h>

#include "rawpeer.h"
#include "sctppeer.h"
#include "wire/ddp.h"

#define CF_OK(expr)							\
	do {								\
		if ((long)(expr) < 0)					\
			fail_msg("%s:%d: %s: %s", __FILE__, __LINE__,	\
				 #expr, rp_err());			\
	} while (0)

/* The registered regions (each CF_REG_LEN octets between guards). */
enum cf_reg {
	CF_WRITE,      /* local write, remote write: RDMA Write target */
	CF_READ,       /* remote read: RDMA Read source */
	CF_LOCAL,      /* local write only: no remote rights */
	CF_OTHER_PD,   /* in the second PD, every remote right */
	CF_RECV,       /* receive buffers (local write) */
	CF_SINK,       /* uiwarp's RDMA Read sink (local write) */
	CF_SRC,        /* uiwarp's Send payloads */
	CF_ATOMIC,     /* local write, remote atomic */
	CF_BIG,        /* remote read, opts.big_len octets (if any) */
	CF_NREG
};
#define CF_REG_LEN   4096
#define CF_GUARD_LEN 4096

/* Work request ids the environment posts. */
#define CF_WR_RECV(i)     (0x100u + (i))   /* receive i at CF_RECV */
#define CF_WR_PRIME_SEND  0x200u           /* uiwarp's first Send */
#define CF_WR_READ        0x300u           /* the outstanding Read */
#define CF_WR_FENCED_SEND 0x301u           /* a Send fenced behind it */

/* What uiwarp's Read asks for (cf_outstanding). */
#define CF_READ_SRC_STAG  0x5eed0001u
#define CF_READ_SRC_TO    0x0000700000001000ull
#define CF_READ_LEN       64u

enum cf_role {
	CF_RAW_INITIATES = 0,  /* uiwarp listens and accepts */
	CF_RAW_RESPONDS,       /* uiwarp connects */
};

enum cf_llp {
	CF_LLP_TCP = 0,        /* MPA over TCP (RFC 5044) */
	CF_LLP_SCTP,           /* DDP over SCTP over UDP (RFC 5043, 6951) */
};
/* The LLP $UIW_CF_LLP names ("tcp" or unset, "sctp"); -1 for anything
 * else. */
int cf_llp(void);
/* The UDP port uiwarp's SCTP listeners receive on (one per process,
 * free when first asked for). */
uint16_t cf_udp_port(void);

struct cf_opts {
	enum cf_role role;
	uint8_t raw_flags;             /* M, C in the raw peer's frame */
	enum uiw_opt crc, markers;     /* uiwarp's connection parameters */
	uint32_t ird, ord;             /* uiwarp's (0: default) */
	int nrecv;                     /* receives posted (0: 4, <0: none) */
	uint32_t recv_len;             /* octets each (0: 256) */
	size_t big_len;                /* CF_BIG size (0: not registered) */
	int raw_rcvbuf;                /* raw peer SO_RCVBUF (0: default) */
	int startup_timeout_ms;        /* listener (0: default) */
	int conn_timeout_ms;           /* connect/accept param (0: default) */
	int cqe;                       /* 0: 256 */
	struct uiw_device *dev;        /* a device to share (NULL: own) */
	enum cf_llp llp;               /* cf_opts_init: cf_llp() */
	uint16_t sctp_sid;             /* SCTP: the raw initiator's stream */
	struct sp_opts sp;             /* SCTP: the raw peer's association */
};

struct cf_region {
	uint8_t *p;
	size_t len;
	struct uiw_mr *mr;
	unsigned access;
	const char *name;
};

struct cf_wr {
	uint64_t id;
	bool recv;
	int expect;        /* enum uiw_wc_status; -1: flushed */
	bool done;
};

struct cf_env {
	struct cf_opts o;
	bool inited;                   /* cf_setup ran (cf_close cleans) */
	struct uiw_device *dev;
	bool own_dev;
	struct uiw_pd *pd, *pd2;
	struct uiw_cq *scq, *rcq;
	struct uiw_qp *qp;
	struct uiw_cm_channel *ch;
	struct uiw_cm_id *lid;         /* listener (CF_RAW_INITIATES) */
	struct uiw_cm_id *id;          /* the connection */
	uint16_t port;                 /* uiwarp's listener port */
	int rp_lfd;                    /* raw listener (CF_RAW_RESPONDS) */
	uint16_t rp_port;
	int sp_lid;                    /* SCTP: the raw listener */
	uint16_t rp_udp_port;          /* SCTP: its UDP port */
	struct rp_conn rp;
	bool rp_open;
	/* One allocation: guard, region, guard, region, ..., guard. */
	uint8_t *arena, *shadow, *loose;
	size_t arena_len;
	struct cf_region r[CF_NREG];
	struct cf_wr wr[64];
	int nwr;
	struct uiw_read_req out_rr;    /* uiwarp's Read Request as received */
	struct rp_seg seg;             /* scratch for received segments */
	bool seg_pending;              /* seg holds an unexamined FPDU */
};

/* What a Terminate must say (RFC 5040 §4.8 and Figure 10). */
struct cf_term_expect {
	uiw_err_t err;
	bool m, d, r;
	uint16_t seg_len;              /* with m */
	const uint8_t *ddp_hdr;        /* with d: the header as sent */
	size_t ddp_hdr_len;            /* 14 or 18; bytes past ddp_hdr_sent
					  must be zero */
	size_t ddp_hdr_sent;           /* 0: ddp_hdr_len */
	const uint8_t *rdmap_hdr;      /* with r: 28 octets */
};

const char *cf_err(void);

void cf_opts_init(struct cf_opts *o);
/* Objects, regions (filled with a known pattern), the listener (or the
 * raw listener), posted receives.  Nothing connected yet. */
int cf_setup(struct cf_env *e, const struct cf_opts *o);
/* MPA startup as o->role says, both sides in Full Operation; over SCTP
 * the DDP Stream Session (a plain Initiate and Accept on the raw peer's
 * stream o->sctp_sid, or on the one uiwarp's Initiate picks). */
int cf_connect(struct cf_env *e);
/* One valid FPDU from the initiator so that the responder may send
 * (RFC 5044 §7.1.2 rule 4): the raw peer's Send into receive 0, or
 * uiwarp's Send of 16 octets to the raw peer. */
int cf_prime(struct cf_env *e);
/* uiwarp posts an RDMA Read of CF_READ_LEN octets into CF_SINK (the raw
 * peer receives its Request, kept in e->out_rr) and a Send fenced behind
 * it, so that both are outstanding. */
int cf_outstanding(struct cf_env *e);
/* cf_setup, cf_connect, cf_prime, and cf_outstanding if outstanding. */
int cf_open(struct cf_env *e, const struct cf_opts *o, bool outstanding);
/* Frees everything; 0 if every object could be freed. */
int cf_close(struct cf_env *e);

/* The tagged offset of octet off of region k (its address). */
uint64_t cf_to(const struct cf_env *e, enum cf_reg k, size_t off);
uint32_t cf_stag(const struct cf_env *e, enum cf_reg k);

/* Memory expectations: octets a case placed on purpose (their expected
 * value), and octets whose value is indeterminate after an error (RFC
 * 5040 §5.5 rules 4-6).  Everything else must keep its pattern. */
void cf_mem_placed(struct cf_env *e, const void *at, const void *data,
		   size_t len);
void cf_mem_loose(struct cf_env *e, const void *at, size_t len);
int cf_check_mem(struct cf_env *e);

/* Work requests (tracked for the exactly-once check). */
int cf_post_recv(struct cf_env *e, uint64_t id, size_t off, uint32_t len);
int cf_post_send(struct cf_env *e, uint64_t id, enum uiw_wr_opcode op,
		 unsigned flags, enum cf_reg k, size_t off, uint32_t len,
		 uint64_t raddr, uint32_t rkey);
/* Posts one send WR as given (signalled) and tracks it. */
int cf_post_send_wr(struct cf_env *e, struct uiw_send_wr *wr);
/* The status a tracked WR must complete with (default: flushed).
 * CF_WC_SUCCESS_OR_FLUSH: either (a WR whose message went out just before
 * the stream ended: RFC 5040 §6.2.1 leaves its state indeterminate). */
#define CF_WC_SUCCESS_OR_FLUSH (-2)
/* CF_WC_ANY_ERROR: any status but success. */
#define CF_WC_ANY_ERROR (-3)
void cf_expect_status(struct cf_env *e, uint64_t id, int status);
/* Waits for the next completion on cq: it must be WR id with status. */
int cf_wait_wc(struct cf_env *e, struct uiw_cq *cq, uint64_t id,
	       int status, struct uiw_wc *out);
/* Collects every completion left: each tracked WR exactly once, with its
 * expected status; nothing else, nothing twice. */
int cf_finish_wcs(struct cf_env *e);

/* Next CM event on the channel: must be type (for id, if not NULL). */
int cf_wait_event(struct cf_env *e, enum uiw_cm_event_type type,
		  struct uiw_cm_id *id, struct uiw_cm_event *ev);
/* 0 when the channel holds no event. */
int cf_no_event(struct cf_env *e);

int cf_qp_state(struct cf_env *e, struct uiw_qp_attr *a);
/* Waits (up to rp_timeout_ms()) until the QP has left RTS: uiwarp has
 * taken what was sent and failed the stream.  For a raw peer that must
 * not read on before then (a Request beyond IRD behind a Response that
 * waits for the raw peer: TCP can hold the late Request back while the
 * raw peer reads the whole Response, and a buffer is rightly free). */
int cf_wait_not_rts(struct cf_env *e);

/* The end of a case that provoked a Terminate: the Terminate is the next
 * FPDU from uiwarp and says what x says; nothing follows it; the QP
 * left RTS for that cause; the raw peer closes; uiwarp reports
 * DISCONNECTED; the QP is in Error; every WR completed once as expected;
 * posting fails; memory is as expected. */
int cf_expect_term(struct cf_env *e, const struct cf_term_expect *x);
/* The same for a stream that must end without any FPDU from uiwarp (an
 * MPA responder that has not validated an FPDU, RFC 5044 §7.1.2 rule 4):
 * uiwarp closes; the QP's cause is err. */
int cf_expect_closed(struct cf_env *e, uiw_err_t err);
/* The same when the raw peer ended the stream with its own Terminate
 * saying err (RFC 5040 §5.4): uiwarp sends nothing back and closes; the
 * QP's cause is err, origin remote. */
int cf_expect_closed_remote(struct cf_env *e, uiw_err_t err);
/* The same when the connection itself ended under the stream (RFC 5044
 * §8 code 1): the QP's cause is err, origin LLP. */
int cf_expect_closed_llp(struct cf_env *e, uiw_err_t err);
/* Reads uiwarp's RDMA Read Response segments to sink_stag, starting at
 * sink_to, and checks their payload against src (len octets expected in
 * all).  Stops after the last one (returns 0), or at the first FPDU that
 * is not a Read Response (returns 1; it stays in e->seg, and
 * cf_expect_term takes it from there).  *got: payload octets read. */
int cf_read_resp(struct cf_env *e, uint32_t sink_stag, uint64_t sink_to,
		 const uint8_t *src, size_t len, size_t *got);

/* The cases a group leaves out over SCTP, each with why (they are about
 * MPA itself: CRC, markers, FPDU delineation, the startup frames). */
struct cf_mpa_only {
	const char *name;              /* "test_..." as in the group */
	const char *why;
};
/* Runs the group over the LLP of $UIW_CF_LLP: over SCTP it starts the
 * raw SCTP peer first (before anything in this process initialises
 * usrsctp), and runs every case but those of mpa_only (terminated by a
 * NULL name), which it lists with their reasons. */
struct CMUnitTest;
int cf_run_tests(const char *name, const struct CMUnitTest *tests, size_t n,
		 const struct cf_mpa_only *mpa_only);

/* cmocka fixtures: the test's state is a zeroed struct cf_env; after
 * the test cf_close checks the end of the connection, then it is freed
 * (the fixture fails when cf_close does). */
int cf_state_new(void **state);
int cf_state_free(void **state);

#endif
