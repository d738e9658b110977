/*
 * The engine ("the RNIC") as the connection manager sees it: the
 * framing seam (framing.h: attach, DDP segments in and out) and what a
 * connection's setup needs besides.  Sans-I/O: the engine never touches
 * a socket.
 */
#ifndef UIW_RNIC_RNIC_H
#define UIW_RNIC_RNIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>
#include <uiwarp/uiwarp.h>
#include "../wire/err.h"
#include "framing.h"

struct uiw_rt;

/* The device's runtime (progress thread, epoll); see rt/rt.h. */
struct uiw_rt *uiw_device_rt(struct uiw_device *dev);

/* Graceful close requested by the consumer (RFC 5040 §6, RTS -> Closing):
 * the engine stops taking new work requests, lets queued ones go out,
 * then calls ops->close(ctx, false). */
int uiw_qp_disconnect(struct uiw_qp *qp);
struct uiw_device *uiw_qp_device(const struct uiw_qp *qp);
/* Default IRD/ORD a QP offers before negotiation. */
void uiw_qp_default_ird_ord(const struct uiw_qp *qp, uint32_t *ird,
			    uint32_t *ord);

#endif
