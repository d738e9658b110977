/*
 * DDP over SCTP (RFC 5043, with RFC 6581 §7): the adaptation layer that
 * carries the engine's DDP segments on SCTP associations, and the DDP
 * Stream Sessions that bind QPs to SCTP streams.
 *
 *   associations (sctp.h carriers): one association carries many DDP
 *     streams, each a pair of like-numbered SCTP streams (§4, §8); one
 *     we started is reused for later sessions to the same peer; one
 *     whose peer sent no DDP Adaptation Layer Indication is aborted
 *     (§5.1, §7.1).
 *   sessions: Initiate / Accept / Reject / Terminate (§5.2.3, §6) and
 *     the enhanced codes (RFC 6581 §7), the legal sequences of §6.2 to
 *     §6.4 and every other one ended with a Session Terminate (§6.1).
 *   data: each DDP segment one unordered DATA chunk (§10) behind its
 *     DDP-SSN (§5.2.1); received chunks are put back in DDP-SSN order
 *     per stream (a chunk that comes early waits, bounded) and handed to
 *     the engine in that order (rnic/framing.h, in-order mode), so
 *     delivery and completion keep RFC 5040's order and a loss on one
 *     stream holds up no other.
 *
 * Everything here runs on the SCTP stack's progress thread
 * (uiw_sctp_stack_rt), except where a function says otherwise.
 */
#ifndef UIW_LLP_DDPS_H
#define UIW_LLP_DDPS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "../rnic/framing.h"
#include "../wire/ddps.h"
#include "sctp.h"

struct uiw_qp;
struct uiw_ddps_sess;
struct uiw_ddps_lsn;

/* What a session's owner (a CM id) hears.  Each session reports at most
 * one of accepted/ended before establishment and exactly one ended. */
struct uiw_ddps_owner {
	/* Active side: the peer accepted (Accept or Enhanced Accept, c);
	 * the owner attaches its QP with uiw_ddps_attach, or ends the
	 * session with uiw_ddps_close. */
	void (*accepted)(void *ctx, struct uiw_ddps_sess *s,
			 const struct uiw_ddps_ctl *c,
			 const struct uiw_sctp_info *info);
	/* The session is over; s is freed when this returns (its QP, if
	 * one was attached, is detached already).  err: 0 an orderly end
	 * (both Session Terminates, after an attached QP's disconnect);
	 * -ECONNREFUSED the peer rejected (c: the Reject, with its private
	 * data) or -ECONNREFUSED without c: it answered with a Session
	 * Terminate; -ECONNRESET the peer ended an established session
	 * without our asking, or a protocol error ended it (why says
	 * which); -ETIMEDOUT, -ECONNABORTED and others: the association
	 * failed or went away. */
	void (*ended)(void *ctx, struct uiw_ddps_sess *s, int err,
		      const struct uiw_ddps_ctl *c, const char *why);
};

/* A listener's decision on a new Initiate (RFC 5043 §6.4): the callback
 * takes it (true: it gives the session an owner with uiw_ddps_own and
 * later accepts or rejects it) or refuses (false: the pending limit is
 * reached; a Session Terminate answers). */
typedef bool (*uiw_ddps_initiate_fn)(void *ctx, struct uiw_ddps_sess *s,
				     const struct uiw_ddps_ctl *c,
				     const struct uiw_sctp_info *info);

/* What an Initiate or Accept says: plain or enhanced (RFC 6581 §7: with
 * the IRD/ORD word), and the ULP's private data. */
struct uiw_ddps_hello {
	bool enhanced;
	struct uiw_mpa_v2 v2;
	const void *pd;
	uint16_t pd_len;
};

/* ---- Listening -------------------------------------------------------- */

/* Listens on sa (IP address and SCTP port, 0: any).  Sessions initiated
 * on the associations it accepts go to fn.  Any thread but the stack's
 * (runs there).  Returns 0 or -errno. */
int uiw_ddps_listen(struct uiw_sctp_stack *st, const struct sockaddr *sa,
		    socklen_t salen, int backlog, uiw_ddps_initiate_fn fn,
		    void *ctx, struct uiw_ddps_lsn **out);
void uiw_ddps_lsn_addr(const struct uiw_ddps_lsn *l,
		       struct sockaddr_storage *ss);
/* Stops listening; its associations and sessions live on.  Sessions
 * still awaiting the decision are the owner's to end. */
void uiw_ddps_unlisten(struct uiw_ddps_lsn *l);

/* ---- Active side ------------------------------------------------------ */

/* Starts a session to peer: on an association to it that we started and
 * that has a free stream, else on a new one; sends the Initiate (plain
 * or enhanced, h) on the stream.  An enhanced Initiate that the peer
 * answers with a Session Terminate or an Enhanced Reject is sent again,
 * plain, on another stream (RFC 6581 §7: the peer knows only RFC 5043's
 * codes, or would take the plain session).  Returns 0 with *out (owner's
 * callbacks follow) or -errno. */
int uiw_ddps_connect(struct uiw_sctp_stack *st, const struct sockaddr *peer,
		     socklen_t peerlen, const struct sockaddr *local,
		     socklen_t locallen, uint16_t udp_port,
		     const struct uiw_ddps_hello *h,
		     const struct uiw_ddps_owner *own, void *ctx,
		     struct uiw_ddps_sess **out);

/* ---- Passive side ----------------------------------------------------- */

void uiw_ddps_own(struct uiw_ddps_sess *s, const struct uiw_ddps_owner *own,
		  void *ctx);
/* Sends the Accept (enhanced when the Initiate was, h->v2 then) and
 * attaches qp (see uiw_ddps_attach).  Returns 0 or -errno (the session
 * is then ended: ended follows). */
int uiw_ddps_accept(struct uiw_ddps_sess *s, const struct uiw_ddps_hello *h,
		    struct uiw_qp *qp, const struct uiw_llp_params *lp);
/* Sends a Reject (an Enhanced Reject when enhanced, with v2: RFC 6581
 * §7, a configuration the plain session would have taken) with private
 * data; the session is over (ended follows with 0). */
int uiw_ddps_reject(struct uiw_ddps_sess *s, bool enhanced,
		    const struct uiw_mpa_v2 *v2, const void *pd,
		    uint16_t pd_len);

/* ---- Both -------------------------------------------------------------- */

/* Binds qp to the established session and moves it to RTS (rnic/
 * framing.h) with lp (IRD, ORD, RTR as negotiated), to which this adds
 * MULPDU from the association (SCTP_MAXSEG minus the DDP-SSN, at least
 * 516: RFC 5043 §9) and in-order delivery.  Returns 0 or -errno. */
int uiw_ddps_attach(struct uiw_ddps_sess *s, struct uiw_qp *qp,
		    const struct uiw_llp_params *lp);
/* Ends the session: abortive, or after what the QP has queued (its
 * Terminate, say).  Sends our Session Terminate (RFC 5043 §6.2) unless
 * one went already; ended follows (at the latest when the peer's
 * Terminate comes, or a bound later). */
void uiw_ddps_close(struct uiw_ddps_sess *s, bool abortive);
/* The session's stream, and the association's information. */
uint16_t uiw_ddps_sid(const struct uiw_ddps_sess *s);
const struct uiw_sctp_info *uiw_ddps_info(const struct uiw_ddps_sess *s);

/* Bounds, for tests: the longest a gap in DDP-SSN may stay open before
 * the session ends (ms), and how long an association without sessions
 * stays up.  Any thread; apply to what follows. */
void uiw_ddps_set_gap_ms(unsigned ms);
void uiw_ddps_set_idle_ms(unsigned ms);

#endif
