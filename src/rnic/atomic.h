/*
 * RFC 7306 in the engine: Atomic Operations (FetchAdd, CmpSwap; §5) and
 * Immediate Data (§6), for the requester and the responder.  atomic.c
 * does the work; tx.c, rx.c and qp.c call in at the few points where
 * the RFC 7306 messages differ from those of RFC 5040:
 *
 *   post, transmit  the rows of the RFC 7306 work requests (wr.h):
 *             uiw_wr_atomic_*, uiw_wr_imm_*, uiw_wr_write_imm_build
 *   respond   uiw_irq_atomic_build  Atomic Response (executes the atomic)
 *             uiw_irq_atomic_ready  may it be built now?
 *             (the IRQ's handlers for an entry of kind UIW_IRQ_ATOMIC)
 *   receive   uiw_atomic_rx_request, uiw_atomic_rx_response: a whole
 *             message of queue 1 or 3 (rx.c's rows validate, place and
 *             gather it; Immediate Data is a queue 0 row of rx.c)
 *   state     uiw_ext_reset, uiw_ext_flush
 *
 * The wire formats, the checks that need no memory and the masked
 * arithmetic are the codecs' (wire/atomic.h).
 */
#ifndef UIW_RNIC_ATOMIC_H
#define UIW_RNIC_ATOMIC_H

#include <stdbool.h>
#include <stdint.h>
#include <uiwarp/uiwarp.h>
#include "../wire/atomic.h"

struct uiw_qp;
struct uiw_qp_act;
struct uiw_sq_slot;
struct uiw_irq_ent;

/* Outstanding Atomic Requests a QP can track: at least the device's
 * ORD (checked in atomic.c). */
#define UIW_EXT_AOQ 128

/* Per-QP state of RFC 7306. */
struct uiw_qp_ext {
	/* Requester: Atomic Requests sent and not answered, as SQ
	 * counters, oldest first.  They count against ORD together with
	 * the RDMA Reads of qp->orq (§5.2). */
	uint32_t aoq[UIW_EXT_AOQ];
	uint32_t aoq_head, aoq_count;
	/* Responder: the MSN of the next Atomic Response (queue 3). */
	uint32_t tx_msn3;
};

/* ---- Responding (tx.c) -------------------------------------------------- */

/* False while Read Responses before the next IRQ entry, an atomic,
 * still have octets with the framing (the atomic may change the memory
 * they are sent from). */
bool uiw_irq_atomic_ready(const struct uiw_qp *qp);
/* Executes the atomic of IRQ entry e (the current message) and builds
 * its Response. */
void uiw_irq_atomic_build(struct uiw_qp *qp, struct uiw_irq_ent *e);

/* ---- Receive (rx.c) ------------------------------------------------------ */

/* A whole Atomic Request (got octets at buf, RFC 7306 §5.2.1): checked
 * and queued with the Read Requests, or the stream fails. */
void uiw_atomic_rx_request(struct uiw_qp *qp, const uint8_t *buf,
			   uint32_t got, struct uiw_qp_act *act);
/* A whole Atomic Response (§5.2.2): the original value placed and the
 * oldest outstanding atomic completed, or the stream fails. */
void uiw_atomic_rx_response(struct uiw_qp *qp, const uint8_t *buf,
			    uint32_t got, struct uiw_qp_act *act);

/* ---- State (qp.c, tx.c) -------------------------------------------------- */

/* A new stream: MSNs one, nothing outstanding (with uiw_tx_reset). */
void uiw_ext_reset(struct uiw_qp *qp);
/* Every send WR was flushed: no Atomic Request is outstanding. */
void uiw_ext_flush(struct uiw_qp *qp);

#endif
