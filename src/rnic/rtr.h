/*
 * The Ready-to-Receive indication of RFC 6581 §9.2 (peer-to-peer mode)
 * in the engine: the initiator's first message, and the responder's
 * check that its first message is the RTR agreed on.  tx.c, rx.c and
 * qp.c call in here at a few points; the state lives in struct uiw_qp
 * (qp.h).
 */
#ifndef UIW_RNIC_RTR_H
#define UIW_RNIC_RTR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct uiw_qp;
struct uiw_qp_act;

struct uiw_rtr {
	uint8_t tx;         /* initiator: RTR type (UIW_RTR_*) still to build */
	uint8_t expect;     /* responder: types the first message may be, until
			       it arrived */
	bool rd_out;        /* initiator: our Read RTR awaits its Response
			       (it counts against ORD meanwhile) */
	bool armed;         /* expect or rd_out: rx asks uiw_rtr_rx_header */
	uint8_t seg;        /* the segment being received is an RTR (or
			       its Response) of this type */
};

/* At attach: the RTR work that lp.rtr_send / lp.rtr_recv ask for. */
void uiw_rtr_attach(struct uiw_qp *qp);
/* Initiator, from the transmit builder: builds the RTR's segment (its
 * DDP header, and the Read Request for a Read RTR).  Called while
 * qp->rtr.tx is set. */
void uiw_rtr_build(struct uiw_qp *qp);
/* From rx.c's validate while qp->rtr.armed, once the DDP header of a
 * segment is decoded: recognises the RTR (responder) or the Response to
 * the Read RTR (initiator) and refuses a wrong first message.  True when
 * it has dealt with the header (the normal checks are skipped), false
 * when they should run. */
bool uiw_rtr_rx_header(struct uiw_qp *qp);
/* From deliver while qp->rtr.seg is set: consumes the RTR without
 * reaching the application.  True when delivery is complete, false when
 * the normal delivery should go on (a Read RTR becomes an ordinary
 * zero-length Read Request, answered by a zero-length Response). */
bool uiw_rtr_rx_deliver(struct uiw_qp *qp, struct uiw_qp_act *act);

#endif
