/*
 * The engine ("the RNIC") as the lower layers and the connection manager
 * see it.  Sans-I/O: the engine never touches a socket.  The LLP asks it
 * where the next received octets go (rx_iov), tells it how many arrived
 * (rx_done), asks it what to send next (tx_iov) and tells it how much
 * went out (tx_done).  These calls lock the QP internally; the LLP
 * serialises its own receive calls and its own transmit calls (one
 * receiver and one transmitter at a time per QP).
 */
#ifndef UIW_RNIC_RNIC_H
#define UIW_RNIC_RNIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>
#include <uiwarp/uiwarp.h>
#include "../wire/err.h"

struct uiw_rt;

/* The device's runtime (progress thread, epoll); see rt/rt.h. */
struct uiw_rt *uiw_device_rt(struct uiw_device *dev);

/* How the LLP frames the stream; fixed when the QP enters RTS. */
struct uiw_llp_params {
	bool crc;             /* generate and check MPA CRC */
	bool markers_tx;      /* insert markers (the peer asked for them) */
	bool markers_rx;      /* expect markers (we asked for them) */
	bool hold_tx;         /* MPA responder: send no FPDU until one valid
				 FPDU was received (RFC 5044 §7.1.2 rule 4) */
	uint32_t mulpdu;      /* maximum ULPDU we send */
	uint32_t ird, ord;    /* negotiated inbound/outbound Read depth */
	/* RFC 6581 §9.2 peer-to-peer mode; UIW_RTR_* of uiwarp/cm.h. */
	uint8_t rtr_send;     /* initiator: the RTR it sends as its first
				 FPDU (one type), 0: none */
	uint8_t rtr_recv;     /* responder (with hold_tx): the RTR types its
				 first FPDU may be, 0: no RTR expected */
	bool setup_term;      /* responder of an RFC 6581 enhanced connection:
				 the initiator may end the setup with a
				 Terminate 2/0/6 or 2/0/7 (§9.1, §9.2) */
};

/* Callbacks from the engine to the LLP that carries the QP. */
struct uiw_llp_ops {
	/* New transmit work was queued outside the LLP's own calls (a posted
	 * work request, except in poll mode: see poll): the LLP should call
	 * tx_iov soon.  Called without the
	 * QP lock held.  Also called at the end of uiw_qp_llp_attach when
	 * work requests posted while Idle are waiting, from another QP's
	 * thread when a shared CQ overflowed, and from uiw_qp_disconnect. */
	void (*kick)(void *ctx);
	/* The engine wants the connection to end: after the last octet of
	 * tx (a Terminate, or a graceful disconnect) is sent the LLP closes
	 * (abortive: reset at once, discarding unsent octets).  Called
	 * without the QP lock held.  It may be called from inside the LLP's
	 * own rx_done / tx_done / tx_iov (the moment the engine learns that
	 * the stream is over), and from uiw_qp_destroy (abortive); the LLP
	 * may call uiw_qp_llp_detach from inside it. */
	void (*close)(void *ctx, bool abortive);
	/* Optional: poll mode (uiw_cq_set_poll_mode), for a QP that uses a
	 * CQ in poll mode; called on the application's thread without the
	 * QP lock, possibly from several threads at once (two CQs), never
	 * after uiw_qp_llp_detach has started.  how:
	 * UIW_LLP_POLL_RECV (from uiw_cq_poll when the CQ has nothing to
	 *   return and no notification armed): receive what the connection
	 *   holds now on the calling thread, without blocking (rx_iov /
	 *   rx_done as usual; one reader at a time is the LLP's to ensure),
	 *   and keep the progress thread from receiving while the
	 *   application polls.  Returns 1 if octets arrived, else 0.
	 * UIW_LLP_POLL_SEND_RECV: the same after transmitting what is
	 *   queued (UIW_CQ_POLL_DEFER_SEND: uiw_post_send did not kick, see
	 *   uiw_cq_defers_tx, so that a burst of posts leaves in one
	 *   sendmsg at the next poll).
	 * UIW_LLP_POLL_RELEASE (from uiw_cq_req_notify, or leaving poll
	 *   mode: the application will sleep on the CQ's notification):
	 *   the progress thread receives and transmits again, so that no
	 *   completion waits for a poll that will not come.  Returns 0.
	 * UIW_LLP_POLL_FD: the file descriptor that becomes readable (level
	 *   triggered) when the connection has octets for POLL_RECV, or -1;
	 *   uiw_cq_wait sleeps on it. */
	int (*poll)(void *ctx, int how);
};
enum {
	UIW_LLP_POLL_RECV, UIW_LLP_POLL_SEND_RECV, UIW_LLP_POLL_RELEASE,
	UIW_LLP_POLL_FD
};

/* Binds the QP to a connected LLP and moves it Idle -> RTS.
 * Returns 0 or -errno (-EINVAL if the QP is not Idle, MULPDU below 128,
 * IRD/ORD above the device's).  A MULPDU above 64768 is used as 64768
 * (RFC 5044 §3). */
int uiw_qp_llp_attach(struct uiw_qp *qp, const struct uiw_llp_params *p,
		      const struct uiw_llp_ops *ops, void *ctx);
/* The LLP is gone (closed, reset, or finished closing); the engine will
 * not call ops again after this returns.  err: UIW_OK for an orderly
 * close after uiw_qp_disconnect, UIW_E_MPA_CLOSED when the connection was
 * lost.  Moves the QP to Error (or Idle after a clean close) and flushes
 * every outstanding work request exactly once. */
void uiw_qp_llp_detach(struct uiw_qp *qp, uiw_err_t err);

/* Receive path.  Fills at most max iovecs with where the next octets of
 * the stream go (direct placement: registered memory, posted receive
 * buffers, or engine scratch for headers, markers, pad and CRC).  Returns
 * the count (>= 1 while the QP accepts input), 0 when the QP no longer
 * reads (Terminate sent or received; the LLP should stop reading). */
int uiw_qp_rx_iov(struct uiw_qp *qp, struct iovec *iov, int max);
/* As uiw_qp_rx_iov; *ahead gets how many octets after those named are
 * worth reading along with them.  When the iovecs end an FPDU that is not
 * its message's last, and a message as long as the one before it of the
 * same kind (tagged or untagged) would end with the next FPDU (carrying
 * no more payload than this one, and at most UIW_RX_AHEAD_MAX octets):
 * the rest of that FPDU.  A ping-pong or
 * a stream of equal messages ends each with a short FPDU, which would
 * otherwise take a read of its own.  0 otherwise, and always with
 * markers.  A guess: octets read ahead go to the engine with
 * uiw_qp_rx_feed like any others. */
#define UIW_RX_AHEAD_MAX 16384
int uiw_qp_rx_iov_ahead(struct uiw_qp *qp, struct iovec *iov, int max,
			size_t *ahead);
/* n octets (n <= the sum of the last rx_iov) arrived.  Returns 0, or
 * -EPROTO when they ended the stream (a Terminate is then queued for tx
 * and ops->close follows once it is sent; or a Terminate arrived).
 * While iovecs that name registered memory are with the LLP, the region
 * cannot finish deregistering; rx_done (n may be 0, e.g. after a read
 * that returned EAGAIN) or the next rx_iov gives them back.  Received
 * octets may queue transmit work (Read Responses, a Terminate, a
 * responder's first FPDU): the LLP calls tx_iov after rx_done. */
int uiw_qp_rx_done(struct uiw_qp *qp, size_t n);

/* What uiw_qp_rx_feed did with a buffer. */
struct uiw_rx_fed {
	size_t used;                /* octets of the buffer consumed */
	size_t payload;             /* of them, DDP payload octets */
	size_t max_run;             /* longest run of payload copied at once */
	bool tx;                    /* the engine may have octets to send */
};
/* Receive path for octets the LLP already holds (read ahead into its own
 * buffer): the engine takes up to len octets of the stream from buf and
 * copies each where it belongs (registered memory, a receive buffer, its
 * own scratch), all under one lock, as rx_iov + copy + rx_done would in
 * as many rounds.  The same checks apply: nothing is placed before its
 * header is validated, and registered memory is held while it is written
 * and released before the call returns.  Must not be called while
 * iovecs of an rx_iov are outstanding (they are given back first).
 * Returns 0 (fed->used == len) or -EPROTO when the stream ended (as
 * rx_done; fed->used tells where), -EINVAL for bad arguments.  When
 * fed->tx is false the LLP need not call tx_iov after it. */
int uiw_qp_rx_feed(struct uiw_qp *qp, const void *buf, size_t len,
		   struct uiw_rx_fed *fed);

/* Transmit path.  Fills at most max iovecs with the next octets to send
 * (FPDUs with headers, payload slices of registered memory, pad, markers
 * and CRC); returns the count, 0 when there is nothing to send now.  The
 * iovecs stay valid until tx_done accounts for them; calling tx_iov again
 * before tx_done returns the same octets (plus possibly more).  The rest
 * of a partly sent FPDU comes alone, so that the next sendmsg starts
 * with a whole FPDU (RFC 5044 §5.1: segments should start at FPDU
 * boundaries). */
int uiw_qp_tx_iov(struct uiw_qp *qp, struct iovec *iov, int max);
/* n octets of the last tx_iov were sent.  Returns false when the engine
 * has nothing more to send now (tx_iov would return 0 until new work
 * arrives, which kicks the LLP); true when it may have. */
bool uiw_qp_tx_done(struct uiw_qp *qp, size_t n);

/* Graceful close requested by the consumer (RFC 5040 §6, RTS -> Closing):
 * the engine stops taking new work requests, lets queued ones go out,
 * then calls ops->close(ctx, false). */
int uiw_qp_disconnect(struct uiw_qp *qp);
/* The peer closed its half in an orderly way (TCP FIN) while the QP was
 * in RTS or Closing. */
void uiw_qp_llp_fin(struct uiw_qp *qp);

uint32_t uiw_qp_num(const struct uiw_qp *qp);
struct uiw_device *uiw_qp_device(const struct uiw_qp *qp);
enum uiw_qp_state uiw_qp_state(struct uiw_qp *qp);
/* Default IRD/ORD a QP offers before negotiation. */
void uiw_qp_default_ird_ord(const struct uiw_qp *qp, uint32_t *ird,
			    uint32_t *ord);

#endif
