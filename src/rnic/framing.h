/*
 * The framing seam: everything a framing (a lower layer that carries DDP
 * segments: MPA over TCP, RFC 5044; DDP over SCTP, RFC 5043; the tests'
 * in-memory message framing) sees of the engine, and all it may use.
 *
 * The engine speaks DDP segments (RFC 5041 §4: a DDP header and its
 * payload; RFC 5040 and RFC 7306 headers ride in the payload of the
 * untagged queues).  It never sees what a framing adds on the wire, nor
 * a stream position: a segment's length and its end are the framing's
 * to know and to say.
 *
 *   attach     uiw_qp_llp_attach (Idle -> RTS), uiw_qp_llp_detach,
 *              uiw_qp_llp_fin, callbacks in struct uiw_llp_ops
 *   transmit   uiw_qp_tx_segs hands out the next DDP segments (header
 *              octets and payload pieces); the framing turns each into
 *              its wire unit (a frame on a stream; a message) and reports whole
 *              segments sent with uiw_qp_tx_sent
 *   receive    inside uiw_qp_rx_enter / uiw_qp_rx_leave (one lock for a
 *              batch of segments): uiw_qp_rx_begin with a segment's
 *              header, uiw_qp_rx_place (iovecs: where payload octets go)
 *              or uiw_qp_rx_put (the framing holds the octets: they are
 *              copied), and uiw_qp_rx_end with the segment's length and
 *              the framing's verdict on its wire unit
 *
 * Placement is bounded at every step (RFC 5041 §5.3, §7; RFC 5040 §8):
 * the header is validated when it arrives (STag, PD, access rights, the
 * TO; queue, MSN, MO and the posted buffer) for the whole segment when
 * the framing gives its length at uiw_qp_rx_begin, and otherwise for
 * what the header alone names; each uiw_qp_rx_place / uiw_qp_rx_put is
 * then bounded by what is left of the registered region or the posted
 * buffer, so octets beyond it go to scratch and the segment ends in the
 * Terminate its header would have drawn had its length been known.
 * Nothing is ever written outside a registered region or a posted
 * buffer, whatever the framing says.
 *
 * Order: a framing that delivers segments in order (on a byte stream) says
 * so in uiw_llp_params.unordered == false, and the engine checks MSN and
 * MO against the next expected (RFC 5041 §7.1).  An unordered framing
 * (SCTP with the U flag, RFC 5043 §10) may hand over the segments of a
 * message in any order: tagged segments are placed by TO, untagged ones
 * by MO (RFC 5041 §5.3: placement out of order), and a message is
 * delivered only once all of its octets are placed.  Queue 0 messages
 * may also complete out of order; they are delivered in MSN order.
 * Queues 1 to 3 take their messages one at a time, in MSN order.
 *
 * Not yet: RFC 5041 §5.4 delivers a message only after every message the
 * data source sent before it (on any queue, tagged ones too) is placed
 * and delivered.  Across queues only the sender's order can tell, and an
 * unordered framing learns it from RFC 5043's DDP-SSN; the seam has no
 * way yet to pass it, so today an unordered framing must hand over a
 * message's segments only once those of earlier messages of other
 * queues are in.  The SCTP framing (src/llp/ddps.c) sidesteps it: it
 * puts each stream's chunks back in DDP-SSN order and attaches ordered.
 */
#ifndef UIW_RNIC_FRAMING_H
#define UIW_RNIC_FRAMING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>
#include <uiwarp/uiwarp.h>
#include "../wire/err.h"

struct uiw_qp;

/* ---- Attaching --------------------------------------------------------- */

/* How the engine runs on the framing; fixed when the QP enters RTS. */
struct uiw_llp_params {
	uint32_t mulpdu;      /* largest DDP segment (header and payload)
				 the framing carries (RFC 5041 §5.2) */
	uint32_t ird, ord;    /* negotiated inbound/outbound Read depth */
	bool unordered;       /* segments may arrive out of order */
	bool tx_held;         /* the framing cannot carry a segment yet: see
				 uiw_qp_tx_release */
	/* RFC 6581 §9.2 peer-to-peer mode; UIW_RTR_* of uiwarp/cm.h. */
	uint8_t rtr_send;     /* initiator: the RTR it sends as its first
				 message (one type), 0: none */
	uint8_t rtr_recv;     /* responder: the RTR types its first message
				 may be, 0: no RTR expected */
	bool setup_term;      /* responder of an RFC 6581 enhanced connection:
				 the initiator may end the setup with a
				 Terminate 2/0/6 or 2/0/7 (§9.1, §9.2) */
};

/* Callbacks from the engine to the framing that carries the QP. */
struct uiw_llp_ops {
	/* New transmit work was queued outside the framing's own calls (a
	 * posted work request, except in poll mode: see poll): the framing
	 * should call uiw_qp_tx_segs soon.  Called without the QP lock
	 * held.  Also called at the end of uiw_qp_llp_attach when work
	 * requests posted while Idle are waiting, from another QP's thread
	 * when a shared CQ overflowed, and from uiw_qp_disconnect. */
	void (*kick)(void *ctx);
	/* The engine wants the connection to end: after the last segment
	 * handed out (a Terminate, or a graceful disconnect) is sent, the
	 * framing closes (abortive: at once, discarding unsent segments).
	 * Called without the QP lock held.  It may be called from inside
	 * the framing's own uiw_qp_rx_leave / uiw_qp_tx_sent /
	 * uiw_qp_tx_segs (the moment the engine learns that the stream is
	 * over), and from uiw_qp_destroy (abortive); the framing may call
	 * uiw_qp_llp_detach from inside it. */
	void (*close)(void *ctx, bool abortive);
	/* Optional: poll mode (uiw_cq_set_poll_mode), for a QP that uses a
	 * CQ in poll mode; called on the application's thread without the
	 * QP lock, possibly from several threads at once (two CQs), never
	 * after uiw_qp_llp_detach has started.  how:
	 * UIW_LLP_POLL_RECV (from uiw_cq_poll when the CQ has nothing to
	 *   return and no notification armed): receive what the connection
	 *   holds now on the calling thread, without blocking, and keep the
	 *   progress thread from receiving while the application polls;
	 *   when a lease (UIW_LLP_POLL_LEASE_MS) passes with no such call
	 *   and no release, the progress thread receives again until the
	 *   next.  Returns 1 if octets arrived, else 0.
	 * UIW_LLP_POLL_SEND_RECV: the same after transmitting what is
	 *   queued (UIW_CQ_POLL_DEFER_SEND: uiw_post_send did not kick, see
	 *   uiw_cq_defers_tx, so that a burst of posts leaves in one
	 *   system call at the next poll).
	 * UIW_LLP_POLL_RELEASE (from uiw_cq_req_notify, or leaving poll
	 *   mode: the application will sleep on the CQ's notification):
	 *   the progress thread receives and transmits again, so that no
	 *   completion waits for a poll that will not come.  Returns 0.
	 * UIW_LLP_POLL_RELEASE_RECV: the same when no send was deferred
	 *   (no UIW_CQ_POLL_DEFER_SEND): only receiving goes back, and a
	 *   progress thread that never stopped watching the connection
	 *   need not be woken.
	 * UIW_LLP_POLL_FD: the file descriptor that becomes readable (level
	 *   triggered) when the connection has octets for POLL_RECV, or -1;
	 *   uiw_cq_wait sleeps on it. */
	int (*poll)(void *ctx, int how);
	/* Optional: uiw_qp_query asks the framing what it reports of
	 * itself (attr->llp and its own settings); the engine's fields are
	 * filled already.  Called under the QP lock while attached: it must
	 * not call the engine. */
	void (*query)(void *ctx, struct uiw_qp_attr *attr);
};
/* How long an application may leave a polled connection alone before
 * its progress thread receives again (uiw_llp_ops.poll). */
#define UIW_LLP_POLL_LEASE_MS 10
enum {
	UIW_LLP_POLL_RECV, UIW_LLP_POLL_SEND_RECV, UIW_LLP_POLL_RELEASE,
	UIW_LLP_POLL_RELEASE_RECV,
	UIW_LLP_POLL_FD
};

/* The smallest MULPDU the engine runs with: room for the longest message
 * the engine keeps whole (a Terminate or an Atomic Request, 70 octets
 * with their DDP header) and payload besides. */
#define UIW_MULPDU_MIN 128
/* The largest: a Terminate reports a segment's length in 16 bits (RFC
 * 5040 §4.8, DDP Segment Length); a framing may carry less. */
#define UIW_MULPDU_MAX 65535

/* Binds the QP to a connected framing and moves it Idle -> RTS.
 * Returns 0 or -errno (-EINVAL if the QP is not Idle, MULPDU below
 * UIW_MULPDU_MIN, IRD/ORD above the device's).  A larger MULPDU than
 * UIW_MULPDU_MAX is used as UIW_MULPDU_MAX. */
int uiw_qp_llp_attach(struct uiw_qp *qp, const struct uiw_llp_params *p,
		      const struct uiw_llp_ops *ops, void *ctx);
/* The framing is gone (closed, reset, or finished closing); the engine
 * will not call ops again after this returns.  err: UIW_OK for an
 * orderly close after uiw_qp_disconnect, UIW_E_MPA_CLOSED (the LLP's
 * "connection lost") otherwise.  Moves the QP to Error (or Idle after a
 * clean close) and flushes every outstanding work request exactly
 * once. */
void uiw_qp_llp_detach(struct uiw_qp *qp, uiw_err_t err);
/* The peer closed its half in an orderly way (TCP FIN; SCTP SHUTDOWN)
 * while the QP was in RTS or Closing.  mid_unit: it did so inside a
 * wire unit the framing had begun to receive (an error, as inside a
 * segment). */
void uiw_qp_llp_fin(struct uiw_qp *qp, bool mid_unit);

uint32_t uiw_qp_num(const struct uiw_qp *qp);
enum uiw_qp_state uiw_qp_state(struct uiw_qp *qp);

/* ---- Transmit ----------------------------------------------------------- */

/* A DDP segment to send, as the engine built it: hlen header octets at
 * hdr (the DDP header, and the RDMAP octets the engine keeps itself:
 * a Read Request, a Terminate, an atomic's request or response,
 * Immediate Data), then len - hlen payload octets taken from the pieces
 * at src, starting at piece src_i, offset src_off.  Valid, with the
 * memory it names, until uiw_qp_tx_sent reports it.  hdr[0..hlen) is
 * the engine's (read only); the UIW_SEG_HEADROOM octets right before
 * hdr are the framing's to write, so that a unit's leading field and
 * the header go out as one run (a length field, say). */
#define UIW_SEG_HEADROOM 4
struct uiw_seg_out {
	uint8_t *hdr;
	uint32_t hlen;
	uint32_t len;               /* hlen + payload */
	const struct iovec *src;
	uint32_t src_i, src_off;
	bool term;                  /* a Terminate (RFC 5040 §5.4) */
};

/* Fills out[] with at most max segments: those after the oldest skip
 * segments handed out and not yet reported sent, building new ones
 * while the engine may (a bounded number and octets ahead of
 * uiw_qp_tx_sent; none while held).  Returns the count, 0 when there is
 * nothing (more) to send now, -ENOTCONN when the QP is not attached
 * (the segments handed out before are void: forget them).  max may be
 * 0: the framing has no room, the call only says whether it may go
 * on. */
int uiw_qp_tx_segs(struct uiw_qp *qp, uint32_t skip,
		   const struct uiw_seg_out **out, int max);
/* The oldest n segments handed out are sent whole (the framing keeps
 * count of partly sent ones itself).  Returns false when the engine has
 * nothing more to send now (uiw_qp_tx_segs would return 0 until new
 * work arrives, which kicks the framing); true when it may have. */
bool uiw_qp_tx_sent(struct uiw_qp *qp, uint32_t n);
/* The framing can carry segments from now on (it was attached with
 * tx_held: a responder that must first receive a valid unit, say).  While held, nothing is handed out, and an error closes the
 * connection without a Terminate.  Call inside a receive turn (between
 * uiw_qp_rx_enter and uiw_qp_rx_leave); the framing transmits after the
 * turn as it always does. */
void uiw_qp_tx_release(struct uiw_qp *qp);

/* ---- Receive ------------------------------------------------------------ */

/* A receive turn: takes the QP lock.  False (no lock taken) when the QP
 * no longer receives (Terminate sent or received, not attached): the
 * framing stops reading. */
bool uiw_qp_rx_enter(struct uiw_qp *qp);
/* Inside a turn: gives back the registered memory that earlier
 * uiw_qp_rx_place calls named and a turn kept held (the octets it was
 * named for have arrived, or never will). */
void uiw_qp_rx_release(struct uiw_qp *qp);
/* Ends the turn: drops the QP lock and runs what the turn decided.
 * keep: registered memory named by uiw_qp_rx_place stays held (it is
 * the target of a read that follows the turn) until a later turn
 * releases it; otherwise it is released now.  Returns 0, or -EPROTO
 * when the stream ended (a Terminate was queued for transmit, or
 * received; ops->close follows once it is sent).  *tx (may be NULL) is
 * set true when the engine may have segments to send. */
int uiw_qp_rx_leave(struct uiw_qp *qp, bool keep, bool *tx);

/* How many header octets the engine needs of a segment whose first
 * octet (the DDP control field) is c: its whole DDP header (RFC 5041
 * §4.2, §4.3: 14 octets tagged, 18 untagged).  The
 * framing gives uiw_qp_rx_begin this many, or the whole segment when it
 * is shorter. */
uint32_t uiw_seg_hdr_len(uint8_t c);
/* The longest header: */
#define UIW_SEG_HDR_MAX 18

#define UIW_SEG_LEN_UNKNOWN UINT32_MAX
/* A new segment (inside a turn).  hdr[0..hlen): its first octets,
 * hlen == min(uiw_seg_hdr_len(hdr[0]), segment length).  len: the
 * segment's length (header and payload) when the framing knows it now,
 * else UIW_SEG_LEN_UNKNOWN.  Returns false when the engine stopped
 * receiving (the framing should end the turn); a refused segment returns
 * true: its payload is discarded and the error is reported at
 * uiw_qp_rx_end, after the framing's own checks. */
bool uiw_qp_rx_begin(struct uiw_qp *qp, const uint8_t *hdr, uint32_t hlen,
		     uint32_t len);
/* Where n payload octets of the current segment, from payload offset off
 * on, go: fills at most max iovecs (after the iov_n already in iov,
 * joining adjacent runs), returns the new count.  *named gets the octets
 * named, fewer than n only when iovecs ran out.  Registered memory named
 * stays held until released (uiw_qp_rx_leave).  Octets the engine does
 * not place go to its scratch: at most UIW_SEG_DISCARD of them per turn
 * have distinct places (the framing may read them back, e.g. for a check,
 * until the turn ends); once they are used up, fewer octets are named. */
int uiw_qp_rx_place(struct uiw_qp *qp, uint32_t off, uint32_t n,
		    struct iovec *iov, int iov_n, int max, uint32_t *named);
#define UIW_SEG_DISCARD 512
/* The framing holds n payload octets at src (from payload offset off
 * on): the engine copies them to their place, under the same bounds.
 * Outside a segment (before uiw_qp_rx_begin, after uiw_qp_rx_end)
 * neither call places anything: place names scratch, put drops. */
void uiw_qp_rx_put(struct uiw_qp *qp, uint32_t off, const uint8_t *src,
		   uint32_t n);
/* The segment ended: len octets in all (header and payload).  ferr: the
 * framing's verdict on its wire unit (UIW_OK, or the error the framing
 * found in it, which wins over what the engine found: the header may
 * simply be damaged), why a line saying what (may be NULL).  The engine then reports the
 * segment's error, or delivers it (RFC 5041 §5.4).  Returns false when
 * the stream ended. */
bool uiw_qp_rx_end(struct uiw_qp *qp, uint32_t len, uiw_err_t ferr,
		   const char *why);
/* After uiw_qp_rx_begin of a segment that is not its message's last:
 * the length (header and payload) the next segment would have if it
 * ends a message as long as the last whole message of the same kind
 * (tagged or untagged), when that is at most max payload octets and no
 * more than this segment carries; else 0.  A ping-pong or a stream of
 * equal messages ends each with a short segment: a stream framing may
 * read it with this one. */
uint32_t uiw_qp_rx_guess(struct uiw_qp *qp, uint32_t max);

/* ---- Helpers ------------------------------------------------------------- */

/* Appends the run [p, p + len) to iov[0..*n), joining it to the last
 * iovec when adjacent; false (nothing appended) when iov is full. */
static inline bool uiw_iov_append(struct iovec *iov, int *n, int max,
				  const void *p, size_t len)
{
	if (len == 0)
		return true;
	if (*n > 0 && (const uint8_t *)iov[*n - 1].iov_base +
		      iov[*n - 1].iov_len == (const uint8_t *)p) {
		iov[*n - 1].iov_len += len;
		return true;
	}
	if (*n >= max)
		return false;
	iov[*n].iov_base = (void *)p;
	iov[*n].iov_len = len;
	(*n)++;
	return true;
}

#endif
