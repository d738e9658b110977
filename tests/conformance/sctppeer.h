/*
 * A raw SCTP peer for the conformance tests of DDP over SCTP (RFC 5043).
 *
 * usrsctp is one instance per process, and uiwarp's own usrsctp stack
 * (src/llp/sctp_usr.c) lives in the test process, so the raw peer's
 * SCTP runs in a child process of its own: sp_boot() forks it before
 * the test process has initialised usrsctp, and the test drives it over
 * a socketpair with a small command protocol.  The child is set up as
 * uiwarp's backend is: usrsctp in AF_CONN mode without threads, every
 * SCTP packet one UDP datagram (RFC 6951) on sockets of its own on
 * 127.0.0.1, the same path MTU, ASCONF, AUTH, PR-SCTP and stream reset
 * off; and it knows nothing of DDP: it opens associations (with the DDP
 * Adaptation Layer Indication, none, or another value; any stream
 * counts) or listens for them, sends messages with any stream, PPID and
 * U flag, and hands over what it receives with its stream, PPID and
 * flags.  Everything above SCTP (DDP-SSN, session control, DDP
 * segments) is built and checked by the caller (rawpeer.c).
 *
 * The child reads a message from usrsctp only when asked (sp_recv), so
 * that a raw peer that does not read closes its receive window, as a
 * TCP peer that does not read does.  It also parses every packet it
 * receives before usrsctp sees it and keeps a log of the chunks (DATA
 * with its flags and PPID octets as on the wire, INIT and INIT ACK with
 * their stream counts and Adaptation Layer Indication, ABORT, SHUTDOWN):
 * what the other end put on the wire, not what usrsctp made of it.
 *
 * Every wait is bounded (rp_timeout_ms() unless a call names a time);
 * the child ends when the test process does (its end of the socketpair
 * closes, or PR_SET_PDEATHSIG) and on SIGINT/SIGTERM.
 *
 * Functions return 0 (or a count) on success and a negative errno-style
 * code on failure, with rp_err() set.
 */
#ifndef UIW_TESTS_SCTPPEER_H
#define UIW_TESTS_SCTPPEER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SP_ADAPT_DDP    0x00000001u   /* RFC 5043 §5.1 */
#define SP_PPID_DDP     16u           /* RFC 5043 §5.2 */
#define SP_PPID_CTL     17u
#define SP_MSG_MAX      (64 * 1024 + 4096)
#define SP_MTU          1452          /* sctp_usr.c's default */

/* The SCTP flags of a received message (usrsctp's rcv_flags). */
#define SP_F_UNORDERED  0x0400        /* SCTP_UNORDERED */

enum sp_adapt {
	SP_ADAPT_SEND_DDP = 0,   /* the DDP indication in INIT / INIT ACK */
	SP_ADAPT_SEND_NONE,      /* no Adaptation Layer Indication */
	SP_ADAPT_SEND_VALUE,     /* the indication with adapt_value */
};

struct sp_opts {
	enum sp_adapt adapt;
	uint32_t adapt_value;
	uint16_t out_streams;    /* OS in our INIT (0: 16) */
	uint16_t in_streams;     /* MIS in our INIT (0: out_streams) */
	int rcvbuf;              /* SO_RCVBUF (0: 256 KiB) */
};

/* An association as the child knows it. */
struct sp_state {
	bool up;                 /* COMM_UP seen (it was established) */
	bool down;               /* it is over */
	int down_err;            /* 0 orderly SHUTDOWN, ECONNRESET the peer
				    aborted, ETIMEDOUT, ECONNREFUSED ... */
	bool abort_rcvd;         /* an ABORT chunk came from the peer */
	uint16_t lport, pport;   /* SCTP ports: ours, the peer's */
	uint16_t in_streams, out_streams;  /* as negotiated (COMM_UP) */
	/* The peer's INIT or INIT ACK as it was on the wire. */
	bool peer_init_seen;
	uint16_t peer_os, peer_mis;
	bool peer_adapt_seen;
	uint32_t peer_adapt;
	/* What usrsctp reported (SCTP_ADAPTATION_INDICATION). */
	bool notif_adapt_seen;
	uint32_t notif_adapt;
};

/* A received message. */
struct sp_msg {
	uint16_t sid;
	uint16_t flags;          /* SP_F_UNORDERED ... */
	uint32_t ppid;           /* host order, as usrsctp reports it */
	size_t len;
	uint8_t *data;           /* malloc'd; sp_msg_free */
};
void sp_msg_free(struct sp_msg *m);

/* One chunk of a packet the child received, as it was on the wire. */
struct sp_wire {
	uint8_t type;            /* 0 DATA, 1 INIT, 2 INIT ACK, 6 ABORT ... */
	uint8_t flags;           /* the chunk flags (DATA: U 4, B 2, E 1) */
	uint16_t sport, dport;   /* SCTP ports of the packet */
	uint16_t len;            /* chunk length */
	/* DATA */
	uint32_t tsn;
	uint16_t sid, ssn;
	uint8_t ppid[4];         /* the PPID octets in wire order */
	uint8_t head[4];         /* the first user data octets */
	/* INIT, INIT ACK */
	uint16_t os, mis;
	uint8_t adapt_seen;
	uint32_t adapt;
};
#define SP_DATA_U 0x04
#define SP_DATA_B 0x02
#define SP_DATA_E 0x01

/* Forks the child.  Must run before anything in this process initialises
 * usrsctp (cf_env.c calls it first thing); later calls do nothing.
 * Returns 0 or -errno. */
int sp_boot(void);
bool sp_booted(void);

/* Connects to 127.0.0.1, SCTP port sctp_port over UDP port udp_port;
 * waits until the association is up (or has failed, or the time is
 * out).  *id: the association (also when it failed: sp_state tells how,
 * sp_close frees it). */
int sp_connect(const struct sp_opts *o, uint16_t sctp_port,
	       uint16_t udp_port, int *id);
/* Listens on a UDP port and an SCTP port of 127.0.0.1 (both free ones);
 * *lid: the listener. */
int sp_listen(const struct sp_opts *o, int *lid, uint16_t *sctp_port,
	      uint16_t *udp_port);
/* The next association the listener has; waits up to timeout_ms (0:
 * rp_timeout_ms()). */
int sp_accept(int lid, int *id, int timeout_ms);
/* Sends one user message (waits while the send buffer is full). */
int sp_send(int id, uint16_t sid, uint32_t ppid, bool unordered,
	    const void *buf, size_t len);
/* The next message received on stream sid (sid < 0: any stream), in the
 * order received; messages of other streams are kept for their turn.
 * Waits up to timeout_ms (0: rp_timeout_ms()).  -ETIMEDOUT, or when the
 * association is over: -ECONNRESET (aborted), -ENOTCONN (shut down),
 * with nothing of the stream left. */
int sp_recv(int id, int sid, struct sp_msg *m, int timeout_ms);
/* Whether a message of stream sid (< 0: any) is already here. */
bool sp_pending(int id, int sid);
int sp_state(int id, struct sp_state *st);
/* Waits until the association is over (messages that arrive meanwhile
 * are kept for sp_recv). */
int sp_wait_down(int id, int timeout_ms, struct sp_state *st);
int sp_set_rcvbuf(int id, int bytes);
/* Ends the association: ABORT now, or SHUTDOWN after what was sent; the
 * id (or a listener's) is freed either way. */
int sp_abort(int id);
int sp_close(int id);
/* The chunk log (every chunk received since the last sp_wire_clear, at
 * most a fixed number: *overflow says if some were not kept).  *out is
 * malloc'd. */
int sp_wire_get(struct sp_wire **out, size_t *n, bool *overflow);
int sp_wire_clear(void);

/* The name of a chunk type ("DATA", "INIT", ...), for messages. */
const char *sp_chunk_name(uint8_t type);

#endif
