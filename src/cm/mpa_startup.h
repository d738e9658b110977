/*
 * The MPA startup phase (RFC 5044 §7.1, RFC 6581) of one connection, as
 * a sans-I/O object: octets in, octets and decisions out.  It builds
 * and parses the Request and the Reply for either role, in revision 1
 * or 2 (the enhanced setup of RFC 6581 with IRD/ORD and peer-to-peer
 * negotiation, decided by mpa2.c), rejects, and says at which octet of
 * each direction Full Operation starts.  It has no socket, no thread,
 * no allocation and no clock: the caller moves the octets, tells it the
 * time, and acts on its state.
 *
 * The caller's loop:
 *   - send what uiw_mpa_startup_out gives, then uiw_mpa_startup_sent;
 *   - read at most uiw_mpa_startup_want octets and hand them to
 *     uiw_mpa_startup_input (reading no more keeps the octets that
 *     follow a frame in the stream, for the LLP of Full Operation);
 *     at end of stream, uiw_mpa_startup_eof;
 *   - at the deadline, uiw_mpa_startup_tick;
 *   - then look at the state.
 */
#ifndef UIW_CM_MPA_STARTUP_H
#define UIW_CM_MPA_STARTUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "../wire/err.h"
#include "../wire/mpa.h"
#include "mpa2.h"

enum uiw_mpa_su_state {
	UIW_MPA_SU_SEND_REQ,      /* initiator: the Request is in out */
	UIW_MPA_SU_WAIT_REP,      /* initiator: reading the Reply */
	UIW_MPA_SU_WAIT_REQ,      /* responder: reading the Request */
	UIW_MPA_SU_REQ_RECEIVED,  /* responder: a valid Request; the ULP
				     accepts or rejects */
	UIW_MPA_SU_SEND_REP,      /* responder: the accepting Reply is in out */
	UIW_MPA_SU_SEND_REJ,      /* responder: a Reply with R is in out */
	/* Final states. */
	UIW_MPA_SU_FULL_OP,       /* Full Operation, framed as fr says, from
				     rx_startup / tx_startup on */
	UIW_MPA_SU_REJECTED,      /* R sent or received: MPA is over; close */
	UIW_MPA_SU_TERMINATE,     /* initiator: out holds the Terminate that
				     ends the connection (RFC 6581 §9); send
				     it as the first FPDU, then close */
	UIW_MPA_SU_FAILED,        /* close without more (status, why) */
};

/* One side's startup parameters: the initiator's when it starts, the
 * responder's when it accepts. */
struct uiw_mpa_side {
	bool crc;                   /* set C (RFC 5044 §4.4) */
	bool markers;               /* set M: ask the peer for markers */
	struct uiw_mpa2_local l;    /* its RFC 6581 side */
	const uint8_t *pd;          /* private data (copied into the frame) */
	uint16_t pd_len;            /* at most UIW_MPA_PD_MAX, less the
				       IRD/ORD field in an enhanced frame */
};

/* How Full Operation is framed (RFC 5044 §7.1.1). */
struct uiw_mpa_framing {
	bool crc;                   /* either side set C */
	bool markers_tx;            /* the peer set M */
	bool markers_rx;            /* we set M */
};

struct uiw_mpa_startup {
	enum uiw_mpa_su_state state;
	bool initiator;
	int status;                 /* REJECTED, TERMINATE, FAILED: -errno
				       for the ULP */
	const char *why;            /* a sentence for the log, or NULL */
	int64_t deadline_ms;        /* INT64_MAX: none */
	uint8_t rev;                /* initiator: the revision asked for;
				       responder: the highest it answers */
	uint8_t flags;              /* our C and M */

	/* Initiator: the RFC 6581 field of its Request, when it had one. */
	bool sent_enh;
	struct uiw_mpa_v2 sent_v2;
	struct uiw_mpa2_local local;

	/* The peer's frame, once complete and valid enough to read. */
	bool have_frame;
	uint8_t peer_flags, peer_rev;
	bool peer_enh;              /* it began with the RFC 6581 field */
	struct uiw_mpa_v2 peer_v2;
	const uint8_t *peer_pd;     /* the ULP's part (without the field) */
	uint16_t peer_pd_len;

	/* The outcome: IRD/ORD, peer-to-peer and RTR (mpa2.c), framing. */
	struct uiw_mpa2_out nego;
	struct uiw_mpa_framing fr;

	/* Octets of the startup phase in each direction: Full Operation
	 * (stream position 0 of RFC 5044 §4.2 markers) starts after them. */
	uint32_t rx_startup, tx_startup;

	uint8_t rbuf[UIW_MPA_FRAME_MAX];
	uint32_t rlen, rneed;
	uint8_t wbuf[UIW_MPA_FRAME_MAX];
	uint32_t wlen, woff;
};

/* Starts an initiator: its Request (revision rev, 1 or 2; with 2 the
 * enhanced-setup bit and the IRD/ORD field of RFC 6581 §6) is in out.
 * The startup must be over timeout_ms after now_ms (RFC 5044 §7.1.2
 * rule 10). */
void uiw_mpa_startup_initiator(struct uiw_mpa_startup *s, uint8_t rev,
			       const struct uiw_mpa_side *me, int64_t now_ms,
			       int timeout_ms);
/* Starts a responder that answers revisions 1 to max_rev. */
void uiw_mpa_startup_responder(struct uiw_mpa_startup *s, uint8_t max_rev,
			       int64_t now_ms, int timeout_ms);

/* The octets to send now (*len 0: none), and how many went out. */
const uint8_t *uiw_mpa_startup_out(const struct uiw_mpa_startup *s,
				   size_t *len);
void uiw_mpa_startup_sent(struct uiw_mpa_startup *s, size_t n);

/* How many octets to read next: never past the end of the peer's frame;
 * 1 for a responder between its Request and the end of its Reply (an
 * octet there breaks RFC 5044 §7.1.2 rule 2); 0 when it reads nothing. */
size_t uiw_mpa_startup_want(const struct uiw_mpa_startup *s);
/* Takes octets of the stream; returns how many it used.  Octets it
 * leaves follow the peer's frame: for an initiator in Full Operation
 * they are the first of that phase. */
size_t uiw_mpa_startup_input(struct uiw_mpa_startup *s, const uint8_t *p,
			     size_t n);
/* The peer closed its direction of the stream. */
void uiw_mpa_startup_eof(struct uiw_mpa_startup *s);
/* The time is now_ms: at the deadline the startup fails (-ETIMEDOUT). */
void uiw_mpa_startup_tick(struct uiw_mpa_startup *s, int64_t now_ms);

/* Responder, in UIW_MPA_SU_REQ_RECEIVED.  Accept: the Reply in the
 * Request's revision and format (RFC 6581 §10); 0, or -ENOBUFS when a
 * strict responder needs more than the initiator's IRD (RFC 6581 §9.1:
 * a Reply with R that names the ORD it needs is in out instead), or
 * -EINVAL (why says it) with nothing changed. */
int uiw_mpa_startup_accept(struct uiw_mpa_startup *s,
			   const struct uiw_mpa_side *me, int64_t now_ms,
			   int timeout_ms);
/* Reject: a Reply with R and the private data; an enhanced Request gets
 * the field of l (RFC 6581 §10).  0 or -EINVAL. */
int uiw_mpa_startup_reject(struct uiw_mpa_startup *s,
			   const struct uiw_mpa2_local *l, const uint8_t *pd,
			   uint16_t pd_len, int64_t now_ms, int timeout_ms);

/* The stream failed under it (status, why): the startup is over. */
void uiw_mpa_startup_fail(struct uiw_mpa_startup *s, int status,
			  const char *why);
/* Initiator in Full Operation that cannot go on (status, why): an
 * enhanced connection ends with the Terminate err (RFC 6581 §9.3: 2/0/5
 * for a local error without a code of its own), others just fail. */
void uiw_mpa_startup_abort(struct uiw_mpa_startup *s, uiw_err_t err,
			   int status, const char *why);

/* True in a final state. */
bool uiw_mpa_startup_over(const struct uiw_mpa_startup *s);
const char *uiw_mpa_startup_state_str(enum uiw_mpa_su_state st);

#endif
