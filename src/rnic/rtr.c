/*
 * Peer-to-peer mode (RFC 6581 §9.2): the RTR indication.
 *
 * Initiator: the RTR agreed on in the MPA exchange is its first message,
 * ahead of every work request (RFC 6581 §5: "MUST NOT allow any later
 * FULPDUs to be transmitted before the RTR indication"):
 *  - zero-length Send: untagged, queue 0, MSN 1, MO 0;
 *  - zero-length RDMA Write: tagged, STag 1, TO 0 (STag 1 as siw sends
 *    it, "because some hardware treats STag 0 specially"; a zero-length
 *    tagged segment's STag is not checked, RFC 5041 §5.2);
 *  - zero-length RDMA Read: a Read Request on queue 1 (MSN 1) of size 0,
 *    sink and source STag 1, TOs 0.  Its Response (zero-length, tagged)
 *    is consumed here; until it arrives the Read counts against ORD, so
 *    that the responder's IRD is never exceeded.
 * No work request, no completion: the application never sees it.
 *
 * Responder: it sends nothing before its framing has received a valid
 * unit (the framing's hold, tx_held), and in peer-to-peer mode the first
 * message must be one of the RTR types its Reply accepted, in the form
 * above (any STag and TO for a Write, any sink for a Read).  A Send RTR
 * consumes MSN 1 of queue 0 but no receive buffer; a Write RTR places
 * nothing; a Read RTR goes on as an ordinary zero-length Read Request,
 * whose zero-length Response (RFC 5040 §5.2.1) is then the responder's
 * first message.  A Terminate is taken as usual.  Anything else ends the
 * stream with the Terminate "no matching RTR option" (LLP, MPA, 0x07:
 * RFC 6581 §8): the initiator did not send the indication that was
 * negotiated.
 */
#include "qp.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <uiwarp/cm.h>

#include "../rt/log.h"

/* STag of the zero-length tagged RTR segments. */
#define RTR_STAG 1u

static const char *rtr_name(uint8_t t)
{
	switch (t) {
	case UIW_RTR_SEND:  return "Send";
	case UIW_RTR_WRITE: return "RDMA Write";
	case UIW_RTR_READ:  return "RDMA Read";
	default:            return "none";
	}
}

static void rtr_arm(struct uiw_qp *qp)
{
	qp->rtr.armed = qp->rtr.expect || qp->rtr.rd_out;
}

void uiw_rtr_attach(struct uiw_qp *qp)
{
	memset(&qp->rtr, 0, sizeof(qp->rtr));
	qp->rtr.tx = qp->lp.rtr_send;
	qp->rtr.expect = qp->lp.rtr_recv;
	rtr_arm(qp);
	if (qp->rtr.tx || qp->rtr.expect)
		UIW_DBG(2, "qp %u: peer-to-peer, RTR %s %s", qp->qpn,
			qp->rtr.tx ? "to send:" : "types accepted: mask",
			qp->rtr.tx ? rtr_name(qp->rtr.tx) : "");
}

void uiw_rtr_build(struct uiw_qp *qp)
{
	struct uiw_tx_seg *g;

	switch (qp->rtr.tx) {
	case UIW_RTR_WRITE:
		g = uiw_tx_seg_tagged(qp, UIW_SEG_NONE, 0, UIW_OP_WRITE, true,
				      RTR_STAG, 0);
		break;
	case UIW_RTR_READ: {
		struct uiw_read_req rr = {
			.sink_stag = RTR_STAG,
			.src_stag = RTR_STAG,
		};
		size_t room;

		g = uiw_tx_seg_untagged(qp, UIW_SEG_NONE, 0, UIW_OP_READ_REQ,
					true, UIW_QN_READ_REQ,
					qp->tx_msn[UIW_QN_READ_REQ]++, 0, 0);
		uiw_read_req_encode(uiw_tx_seg_tail(g, &room), &rr);
		uiw_tx_seg_keep(g, UIW_READ_REQ_LEN);
		qp->rtr.rd_out = true;
		break;
	}
	default:
		g = uiw_tx_seg_untagged(qp, UIW_SEG_NONE, 0, UIW_OP_SEND, true,
					UIW_QN_SEND, qp->tx_msn[UIW_QN_SEND]++,
					0, 0);
		break;
	}
	uiw_tx_seg_commit(qp, g, 0, NULL, 0, 0);
	UIW_DBG(2, "qp %u: RTR (zero-length %s) built", qp->qpn,
		rtr_name(qp->rtr.tx));
	qp->rtr.tx = 0;
	rtr_arm(qp);
}

/* The segment in hand as an RTR of one of the types in mask, or 0. */
static uint8_t rtr_match(const struct uiw_rx *r, uint8_t mask)
{
	const struct uiw_ddp_hdr *h = &r->h;

	if (!h->last)
		return 0;
	if (h->tagged)
		return (mask & UIW_RTR_WRITE) && h->opcode == UIW_OP_WRITE &&
		       r->plen == 0 ? UIW_RTR_WRITE : 0;
	if ((mask & UIW_RTR_SEND) && h->qn == UIW_QN_SEND &&
	    h->opcode == UIW_OP_SEND && h->msn == r->msn[UIW_QN_SEND] &&
	    h->mo == 0 && r->plen == 0)
		return UIW_RTR_SEND;
	if ((mask & UIW_RTR_READ) && h->qn == UIW_QN_READ_REQ &&
	    h->opcode == UIW_OP_READ_REQ && h->msn == r->msn[UIW_QN_READ_REQ] &&
	    h->mo == 0 && r->plen == UIW_READ_REQ_LEN)
		return UIW_RTR_READ;
	return 0;
}

bool uiw_rtr_rx_header(struct uiw_qp *qp)
{
	struct uiw_rx *r = &qp->rx;
	const struct uiw_ddp_hdr *h = &r->h;

	qp->rtr.seg = 0;
	/* A Terminate ends the stream whatever was agreed (the initiator
	 * may send 2/0/6 or 2/0/7 instead of an RTR). */
	if (!h->tagged && h->qn == UIW_QN_TERMINATE)
		return false;
	if (qp->rtr.rd_out && h->tagged && h->opcode == UIW_OP_READ_RESP) {
		/* RFC 5040 §5.5 rule 20: Responses come in Request order,
		 * and the Read RTR was the first Request. */
		if (r->plen != 0 || !h->last) {
			uiw_rx_refuse(qp, UIW_E_DDP_T_BASE_BOUNDS, "RDMA Read "
				   "Response of %u octets%s to the zero-length"
				   " Read RTR", r->plen,
				   h->last ? "" : " without L");
			return true;
		}
		qp->rtr.seg = UIW_RTR_READ;
		return true;
	}
	if (!qp->rtr.expect)
		return false;
	qp->rtr.seg = rtr_match(r, qp->rtr.expect);
	if (!qp->rtr.seg) {
		/* RFC 6581 §5, §9.2: the first message must be the RTR. */
		uiw_rx_refuse(qp, UIW_E_MPA_NO_MATCHING_RTR, "first message is a"
			   "%s %s of %u octets on %s, not a negotiated RTR",
			   h->last ? "" : " non-final", uiw_rdmap_op_name(h->opcode), r->plen,
			   h->tagged ? "a tagged buffer" :
			   h->qn == UIW_QN_SEND ? "queue 0" :
			   h->qn == UIW_QN_READ_REQ ? "queue 1" : "queue 3+");
		qp->rtr.expect = 0;
		rtr_arm(qp);
		return true;
	}
	qp->rtr.expect = 0;
	rtr_arm(qp);
	UIW_DBG(2, "qp %u: RTR (zero-length %s) received", qp->qpn,
		rtr_name(qp->rtr.seg));
	/* A Send RTR needs no receive buffer: the usual checks are
	 * skipped.  A zero-length Write is not checked anyway (RFC 5041
	 * §5.2), and a Read RTR is an ordinary Read Request so far. */
	return qp->rtr.seg == UIW_RTR_SEND;
}

bool uiw_rtr_rx_deliver(struct uiw_qp *qp, struct uiw_qp_act *act)
{
	struct uiw_rx *r = &qp->rx;
	uint8_t t = qp->rtr.seg;

	qp->rtr.seg = 0;
	switch (t) {
	case UIW_RTR_SEND:
		/* The RTR used MSN 1 of queue 0, and nothing else. */
		r->msn[UIW_QN_SEND]++;
		return true;
	case UIW_RTR_WRITE:
		return true;
	case UIW_RTR_READ:
		if (r->h.tagged) {
			/* Initiator: the Response to our Read RTR.  A Read
			 * that waited for ORD may go now (the LLP transmits
			 * after receiving). */
			qp->rtr.rd_out = false;
			rtr_arm(qp);
			return true;
		} else {
			struct uiw_read_req rr;

			uiw_read_req_decode(r->q[UIW_QN_READ_REQ].buf, &rr);
			if (rr.size == 0)
				return false;
			snprintf(r->why, sizeof(r->why), "first message is an "
				 "RDMA Read Request of %u octets, not a "
				 "zero-length Read RTR", rr.size);
			{
				struct uiw_fail f = {
					.err = UIW_E_MPA_NO_MATCHING_RTR,
					.origin = UIW_TERM_LOCAL,
					.send_term = true,
					.have_seg = true,
					.sq_idx = -1, .rq_idx = -1,
					.status = -1,
					.detail = r->why,
				};

				uiw_qp_fail(qp, &f, act);
			}
			return true;
		}
	default:
		return false;
	}
}
