/*
 * The engine ("the RNIC") as the connection manager and the lower
 * layers see it.  Sans-I/O: the engine never touches a socket.  What a
 * framing uses (attach, segments to send, received segments) is
 * rnic/framing.h; this adds what the connection manager needs and the
 * receive calls of the MPA receive path that still works on the byte
 * stream.  These calls lock the QP internally; the LLP serialises its
 * own receive calls and its own transmit calls (one receiver and one
 * transmitter at a time per QP).
 */
#ifndef UIW_RNIC_RNIC_H
#define UIW_RNIC_RNIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>
#include <uiwarp/uiwarp.h>
#include "framing.h"
#include "../wire/err.h"

struct uiw_rt;

/* The device's runtime (progress thread, epoll); see rt/rt.h. */
struct uiw_rt *uiw_device_rt(struct uiw_device *dev);

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

/* Graceful close requested by the consumer (RFC 5040 §6, RTS -> Closing):
 * the engine stops taking new work requests, lets queued ones go out,
 * then calls ops->close(ctx, false). */
int uiw_qp_disconnect(struct uiw_qp *qp);
struct uiw_device *uiw_qp_device(const struct uiw_qp *qp);
/* Default IRD/ORD a QP offers before negotiation. */
void uiw_qp_default_ird_ord(const struct uiw_qp *qp, uint32_t *ird,
			    uint32_t *ord);

#endif
