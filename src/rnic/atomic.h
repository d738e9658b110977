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
 *   receive   uiw_ext_rx_q0/q1/q3   validate a segment on queue 0, 1, 3
 *             uiw_ext_deliver_q0/q1/q3   and deliver it
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
	/* Requester: the MSN of the next Atomic Response expected. */
	uint32_t rx_msn3;
	/* Receive: the message in progress on queues 0, 1 and 3. */
	bool q0_imm;                /* queue 0 carries Immediate Data */
	bool q1_atomic;             /* queue 1 carries an Atomic Request
				       (its octets count in rx.q1_got) */
	uint32_t q0_got, q3_got;
	uint8_t imm[UIW_IMM_DATA_LEN];
	uint8_t areq[UIW_ATOMIC_REQ_LEN];
	uint8_t aresp[UIW_ATOMIC_RESP_LEN];
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

/* Validates the untagged segment in qp->rx on queue 0 / 1 when it is
 * (part of) an Immediate Data / Atomic Request message, and plans its
 * placement; false (nothing done) for the messages of RFC 5040. */
bool uiw_ext_rx_q0(struct uiw_qp *qp);
bool uiw_ext_rx_q1(struct uiw_qp *qp);
/* Validates a segment on queue 3 (Atomic Responses). */
void uiw_ext_rx_q3(struct uiw_qp *qp);
/* Delivers the segment validated by the functions above; q0 and q1
 * return false for the messages of RFC 5040. */
bool uiw_ext_deliver_q0(struct uiw_qp *qp, struct uiw_qp_act *act);
bool uiw_ext_deliver_q1(struct uiw_qp *qp, struct uiw_qp_act *act);
void uiw_ext_deliver_q3(struct uiw_qp *qp, struct uiw_qp_act *act);

/* ---- State (qp.c, tx.c) -------------------------------------------------- */

/* A new stream: MSNs one, nothing outstanding (with uiw_tx_reset). */
void uiw_ext_reset(struct uiw_qp *qp);
/* Every send WR was flushed: no Atomic Request is outstanding. */
void uiw_ext_flush(struct uiw_qp *qp);

#endif
