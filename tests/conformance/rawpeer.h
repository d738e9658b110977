/*
 * A raw iWARP peer for the conformance tests.
 *
 * One end of a TCP connection on plain sockets that does the MPA startup
 * (RFC 5044 §7.1) itself, as initiator or responder, with whatever flags,
 * revision and private data a test asks for, and then writes hand-built
 * FPDUs (RFC 5044 §4) at the right stream position: well-formed ones
 * framed with uiwarp's pure wire codecs, or malformed ones assembled
 * octet by octet.  It reads what the other end sends back and decodes it
 * (FPDU with markers and CRC, DDP header, Terminate).  It never uses
 * uiwarp's engine, so what it sees on the wire is what uiwarp sent.
 *
 * Every wait is bounded: sockets are non-blocking and waited for with
 * poll(2) until a deadline (rp_timeout_ms(): 10 s, or
 * $UIW_TEST_TIMEOUT_MS).  Nothing sleeps.
 *
 * Over SCTP (RFC 5043) the same calls carry the same DDP segments: the
 * connection is a DDP stream, one stream of an association the raw SCTP
 * peer process has (sctppeer.h); a "frame" the raw peer writes is one
 * DDP Segment Chunk (PPID 16: DDP-SSN, then the segment) with the U
 * flag, and what it reads are chunks, put back in DDP-SSN order and
 * checked (U flag set, no DDP-SSN twice).  The connection's end is the
 * DDP Stream Session Terminate (PPID 17, function code 4) rather than a
 * FIN.  The calls that are about MPA itself (startup frames, stream
 * octets, FPDU layout) fail there.
 *
 * Functions return 0 (or a count) on success and -1 on failure; rp_err()
 * then says what went wrong.  RP_OK() turns a failure into a cmocka
 * failure when <cmocka.h> is included first.
 */
#ifndef UIW_TESTS_RAWPEER_H
#define UIW_TESTS_RAWPEER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "wire/ddp.h"
#include "wire/ddps.h"
#include "wire/mpa.h"

#define RP_TIMEOUT_MS_DEFAULT 10000
#define RP_ULPDU_MAX 65535
/* DDP-SSNs a chunk may come ahead of its turn (held until then). */
#define RP_HELD_MAX 256

/* What the last failing rp_ call in this thread complained about. */
const char *rp_err(void);
/* Records a message (printf format) for rp_err() and returns -1. */
int rp_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int rp_timeout_ms(void);
int64_t rp_now_ms(void);

#ifdef fail_msg
#define RP_OK(expr)							\
	do {								\
		if ((long)(expr) < 0)					\
			fail_msg("%s:%d: %s: %s", __FILE__, __LINE__,	\
				 #expr, rp_err());			\
	} while (0)
#endif

/* ---- Connection ------------------------------------------------------ */

struct rp_conn {
	int fd;
	/* Full Operation parameters (RFC 5044 §7.1.1) */
	bool full;               /* in Full Operation */
	bool crc;                /* CRC generated and checked */
	bool markers_tx;         /* we insert markers (the other end set M) */
	bool markers_rx;         /* the other end inserts them (we set M) */
	uint64_t tx_pos, rx_pos; /* octets of Full Operation sent / taken */
	/* Octets received and not yet taken */
	uint8_t *rbuf;
	size_t rlen, rcap;
	bool eof;                /* the other end's FIN was read */
	int rx_errno;            /* a receive error (ECONNRESET ...) */
	/* The other end's startup frame, once read */
	bool have_peer;
	uint8_t peer_flags, peer_rev;
	uint16_t peer_pd_len;
	uint8_t peer_pd[UIW_MPA_PD_MAX];
	/* The first octets rp_wait_closed dropped (for messages) */
	uint8_t dropped[64];
	size_t ndropped;
	/* Next MSN we send on untagged queues 0..3 (RFC 5041 §4.3: from 1) */
	uint32_t msn[4];
	/* DDP over SCTP (RFC 5043): the association in the SCTP peer
	 * process and the stream of this DDP stream (both directions). */
	bool sctp;
	int sp;
	uint16_t sid;
	uint16_t tx_ssn, rx_ssn;      /* next DDP-SSN sent / expected */
	struct rp_held {              /* chunks ahead of their turn */
		uint8_t *buf;
		size_t len;
		uint32_t ppid;
		uint16_t flags;
	} held[RP_HELD_MAX];
	bool sess_term_sent;          /* our Session Terminate went */
	bool sess_term_rcvd;          /* the other end's came */
	bool down;                    /* the association is over */
	/* The last session control message received (rp_ddps_recv_ctl). */
	struct uiw_ddps_ctl ctl;
	uint8_t ctl_pd[UIW_DDPS_PD_MAX];
};

/* Listens on 127.0.0.1 (port chosen by the system): the fd, or -1. */
int rp_listen(uint16_t *port);
/* Accepts one connection within the time limit into c. */
int rp_accept(struct rp_conn *c, int lfd);
/* Connects to 127.0.0.1:port.  rcvbuf > 0 sets SO_RCVBUF first (so that
 * a test can keep the other end's transmitter blocked). */
int rp_connect(struct rp_conn *c, uint16_t port, int rcvbuf);
/* Closes the socket (orderly: FIN) and frees the buffer.  SCTP: our
 * Session Terminate (unless it went), then the association's SHUTDOWN. */
void rp_close(struct rp_conn *c);
/* Closes with a reset (SO_LINGER 0).  SCTP: ABORT. */
void rp_abort(struct rp_conn *c);
/* Sends our FIN, keeps reading.  SCTP: our Session Terminate. */
int rp_shutdown_wr(struct rp_conn *c);
/* The receive buffer (SO_RCVBUF of the socket or association). */
int rp_set_rcvbuf(struct rp_conn *c, int bytes);

/* Writes all len octets (not counted as Full Operation octets). */
int rp_write_raw(struct rp_conn *c, const void *buf, size_t len);
/* Reads exactly len octets. */
int rp_read_raw(struct rp_conn *c, void *buf, size_t len);

/* How the other end ended the connection, for rp_wait_closed. */
enum { RP_CLOSED_FIN = 1, RP_CLOSED_RESET = 2 };
/* Waits until the other end closes (FIN or reset) and returns how it
 * did; octets that arrived before are counted in *extra (and dropped).
 * SCTP: its Session Terminate (RP_CLOSED_FIN; one with private data or
 * another control message fails) or the association's end (RESET);
 * *extra counts the DDP segments' octets before it. */
int rp_wait_closed(struct rp_conn *c, size_t *extra);
/* 1 when nothing at all (no octet, no FIN) arrives for ms milliseconds,
 * 0 when something did, -1 on error.  A bounded negative check, used
 * where the RFC says the other end must stay silent. */
int rp_quiet_for(struct rp_conn *c, int ms);

/* ---- MPA startup (RFC 5044 §7.1) -------------------------------------- */

/* Sends a startup frame as given (any key, flags, revision; pd_len is
 * sent as the PD_Length field, pd_send octets of pd follow). */
int rp_mpa_send_frame_raw(struct rp_conn *c, const uint8_t key[16],
			  uint8_t flags, uint8_t rev, uint16_t pd_len,
			  const void *pd, size_t pd_send);
/* Sends a well-formed Request (reply false) or Reply (reply true). */
int rp_mpa_send_frame(struct rp_conn *c, bool reply, uint8_t flags,
		      uint8_t rev, const void *pd, uint16_t pd_len);
/* Reads exactly one startup frame (octet by octet where needed, never
 * past its end) and keeps it in c->peer_*; fails on a wrong key or a
 * PD_Length above 512. */
int rp_mpa_read_frame(struct rp_conn *c, bool reply);
/* Enters Full Operation with our flags and the other end's (CRC when
 * either set C, markers towards whoever set M). */
void rp_full_operation(struct rp_conn *c, uint8_t our_flags);
/* Initiator: Request, then the Reply (which must not have R set), then
 * Full Operation.  Revision 1. */
int rp_mpa_initiate(struct rp_conn *c, uint8_t flags, const void *pd,
		    uint16_t pd_len);
/* Responder: reads the Request, sends an accepting Reply, then Full
 * Operation. */
int rp_mpa_respond(struct rp_conn *c, uint8_t flags, const void *pd,
		   uint16_t pd_len);

/* ---- Full Operation: FPDUs (RFC 5044 §4) ------------------------------ */

/* Frames ulpdu as the FPDU at the current transmit position (markers and
 * CRC as negotiated) into out; returns its length (0 if cap is short).
 * Does not send or advance; see rp_send_stream. */
size_t rp_fpdu_build(const struct rp_conn *c, uint8_t *out, size_t cap,
		     const void *ulpdu, size_t len);
/* Frames as above but with the ULPDU_Length field saying claimed_len
 * (the octets, markers, pad and CRC are laid out for len). */
size_t rp_fpdu_build_len(const struct rp_conn *c, uint8_t *out, size_t cap,
			 const void *ulpdu, size_t len, uint16_t claimed_len);
/* Recomputes the CRC field of an FPDU of flen octets built at the
 * current position (after a test changed octets in it). */
void rp_fpdu_fix_crc(uint8_t *fpdu, size_t flen);
/* Stream offset (from the FPDU's first octet) of the i-th marker inside
 * the FPDU that ulpdu_len octets make at pos; -1 if there is none. */
long rp_fpdu_marker_off(uint64_t pos, size_t ulpdu_len, bool markers,
			unsigned i);
/* Writes octets of Full Operation (advances the transmit position). */
int rp_send_stream(struct rp_conn *c, const void *buf, size_t len);
/* Builds and sends one FPDU (SCTP: one DDP Segment Chunk). */
int rp_send_fpdu(struct rp_conn *c, const void *ulpdu, size_t len);
/* Sends n ULPDUs at once: their FPDUs in one write (so that the other
 * end has them all before it answers the first); SCTP: n chunks in a
 * row. */
int rp_send_fpdus(struct rp_conn *c, const struct iovec *ulpdu, int n);
/* Reads the next FPDU, checking markers and CRC as negotiated; the ULPDU
 * goes to ulpdu (cap octets).  Fails on EOF, reset, time-out or a bad
 * FPDU. */
int rp_recv_fpdu(struct rp_conn *c, uint8_t *ulpdu, size_t cap,
		 size_t *len);

/* ---- DDP and RDMAP (RFC 5041 §4, RFC 5040 §4) ------------------------- */

/* A header with valid versions: tagged (STag, TO) or untagged (QN, MSN,
 * MO, RsvdULP = invalidate STag).  Returns its length (14 / 18). */
size_t rp_hdr_tagged(uint8_t *buf, uint8_t opcode, bool last,
		     uint32_t stag, uint64_t to);
size_t rp_hdr_untagged(uint8_t *buf, uint8_t opcode, bool last,
		       uint32_t qn, uint32_t msn, uint32_t mo, uint32_t inv);
/* One-segment messages, untagged ones with the next MSN of their
 * queue. */
int rp_send_send(struct rp_conn *c, uint8_t opcode, uint32_t inv,
		 const void *payload, size_t len);
int rp_send_write(struct rp_conn *c, uint32_t stag, uint64_t to,
		  const void *payload, size_t len);
int rp_send_read_req(struct rp_conn *c, const struct uiw_read_req *rr);
/* A Read Response segment (tagged, opcode 2). */
int rp_send_read_resp(struct rp_conn *c, uint32_t stag, uint64_t to,
		      bool last, const void *payload, size_t len);

/* A received DDP segment. */
struct rp_seg {
	uint8_t ulpdu[RP_ULPDU_MAX];
	size_t len;                 /* ULPDU octets */
	struct uiw_ddp_hdr h;
	size_t hlen;                /* 14 or 18 */
	const uint8_t *pl;          /* payload after the DDP header */
	size_t plen;
};
/* Reads the next FPDU and decodes its DDP header (valid versions). */
int rp_recv_seg(struct rp_conn *c, struct rp_seg *s);
/* Reads the next FPDU, which must be a Terminate (RFC 5040 §4.8, §5.4:
 * untagged, QN 2, L set, MO 0, RDMAP opcode 7), and decodes its payload
 * in the RFC layout. */
int rp_recv_term(struct rp_conn *c, struct rp_seg *s, struct uiw_term *t);

/* ---- DDP over SCTP (RFC 5043) ------------------------------------------ */

/* Makes c the DDP stream sid of association sp (sctppeer.h), DDP-SSN 0
 * both ways. */
void rp_sctp_init(struct rp_conn *c, int sp, uint16_t sid);
/* One chunk with the next DDP-SSN of the stream before buf (PPID 16 or
 * 17, any other for a case), U flag set. */
int rp_sctp_send(struct rp_conn *c, uint32_t ppid, const void *buf,
		 size_t len);
/* One chunk exactly as given (DDP-SSN included or not) on any stream,
 * ordered or not; the stream's DDP-SSN does not advance. */
int rp_sctp_send_raw(struct rp_conn *c, uint16_t sid, uint32_t ppid,
		     bool unordered, const void *buf, size_t len);
/* A received chunk, in DDP-SSN order. */
struct rp_chunk {
	uint32_t ppid;
	uint16_t ssn;
	uint16_t flags;               /* SP_F_UNORDERED ... */
	size_t len;                   /* with the DDP-SSN */
	uint8_t *buf;                 /* malloc'd: rp_chunk_free */
};
void rp_chunk_free(struct rp_chunk *ch);
/* The next chunk of the stream in DDP-SSN order (timeout_ms 0:
 * rp_timeout_ms()).  Fails on a chunk without the U flag (RFC 5043 §10),
 * a DDP-SSN already received or too far ahead, a time-out, or the
 * association's end (c->down). */
int rp_sctp_next(struct rp_conn *c, struct rp_chunk *ch, int timeout_ms);
/* Session control (RFC 5043 §5.2.3, RFC 6581 §7): sends fc with the
 * IRD/ORD word (enhanced codes) and private data. */
int rp_ddps_send_ctl(struct rp_conn *c, uint16_t fc,
		     const struct uiw_mpa_v2 *v2, const void *pd,
		     uint16_t pd_len);
/* The next chunk must be a valid session control message: decoded into
 * c->ctl (its private data in c->ctl_pd).  Returns its function code. */
int rp_ddps_recv_ctl(struct rp_conn *c);
/* Active side: Initiate (enhanced with v2 when v2 is not NULL), then the
 * Accept (enhanced if and only if the Initiate was). */
int rp_ddps_initiate(struct rp_conn *c, const struct uiw_mpa_v2 *v2,
		     const void *pd, uint16_t pd_len);
/* Passive side: the next chunk of a stream not yet in use on the
 * association opens it: it must be an Initiate (plain or enhanced, in
 * c->ctl), and sets c->sid.  Returns its function code. */
int rp_ddps_await(struct rp_conn *c, int timeout_ms);
/* rp_ddps_await, then the Accept (in kind, with v2 for an enhanced
 * one). */
int rp_ddps_respond(struct rp_conn *c, const struct uiw_mpa_v2 *v2,
		    const void *pd, uint16_t pd_len);

/* Hex dump of n octets (at most 64 shown), for messages. */
const char *rp_hex(const void *p, size_t n, char *buf, size_t cap);

#endif
