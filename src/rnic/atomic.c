/*
 * RFC 7306 in the engine: Atomic Operations and Immediate Data, at the
 * requester and at the responder (the hooks are listed in atomic.h).
 *
 * Requester.  An atomic work request becomes one Atomic Request on
 * queue 1 (§5.2.1 rules 1, 2, 5), in work request order (rule 6), with
 * the SQ counter as its Request Identifier.  It counts against ORD with
 * the RDMA Reads (§5.2) and waits in ext.aoq, oldest first, for its
 * Atomic Response on queue 3 (§5.2.2 rules 2, 3, 5), which must carry
 * the next queue-3 MSN and the Request Identifier of the oldest
 * outstanding atomic.  The Original Remote Data Value is then written to
 * the work request's 8-octet buffer, and only then may the work request
 * complete (§5.4 rules 1, 7; completions stay in order, RFC 5040 §5.5).
 *
 * Responder.  An Atomic Request takes one of the IRD buffers of queue 1
 * (§5.2.2 rule 4) and, once delivered (§5.4 rules 3, 5), is checked:
 * its length, AOpCode and alignment by the codec, then its STag, rights
 * (UIW_ACCESS_REMOTE_ATOMIC), protection domain and bounds here.  A valid
 * one joins the inbound RDMA Read queue (IRQ) so that Read and Atomic
 * Responses are generated in the order of their Requests (§5.2.2 rule 8,
 * §5.4 rule 8, §7).  It is executed when its Response is built, and not
 * before the octets of every earlier Read Response have gone to the LLP
 * (Read Responses are sent from the memory itself, so an atomic must not
 * change it under them, §7 "Read, then Atomic").  The read-modify-write
 * is one compare-and-exchange loop on the aligned 64-bit word, so no
 * other atomic of this device (or of any other in the process, or a
 * local CPU atomic) can come between its read and its write (§5.3, §5.4
 * rule 2); the word is in host order, the values on the wire big-endian.
 *
 * Immediate Data (§6).  Immediate Data and Immediate Data with SE are
 * untagged messages of exactly 8 octets on queue 0 that take the next
 * queue-0 MSN and consume one posted receive (§6.3); they complete it
 * with the 8 octets in the completion (the buffer is not written).  A
 * Write with Immediate is an RDMA Write followed by Immediate Data in the
 * same work request: the Immediate Data is built after the Write's last
 * segment, so the receiver places the Write before it completes the
 * Immediate Data (§7).
 *
 * Errors follow §8: a Terminate for a received RFC 7306 message copies
 * its DDP header but no RDMA header (§8.1 rule 2); a misaligned target is
 * "Remote Operation Error / Catastrophic error, localized to RDMAP
 * Stream" and the memory is left as it was (§8.2).
 */
#include "atomic.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "dev.h"
#include "qp.h"
#include "../rt/log.h"

_Static_assert(UIW_EXT_AOQ >= UIW_MAX_ORD,
	       "the atomic queue must hold ORD requests");
_Static_assert(UIW_DDP_UNTAGGED_HDR_LEN + UIW_ATOMIC_REQ_LEN <=
	       UIW_SEG_KEEP,
	       "an Atomic Request must fit a segment's header octets");

/* ---- Posting ------------------------------------------------------------- */

int uiw_wr_imm_check(struct uiw_qp *qp, const struct uiw_send_wr *wr)
{
	/* RFC 7306 §4.2: no ULP payload, only the 8 octets. */
	if (wr->num_sge != 0)
		return uiw_error(EINVAL, "qp %u: Immediate Data carries no "
				 "payload (num_sge %d, must be 0)", qp->qpn,
				 wr->num_sge);
	return 0;
}

int uiw_wr_atomic_check(struct uiw_qp *qp, const struct uiw_send_wr *wr)
{
	const struct uiw_sge *g;
	enum uiw_mr_check c;

	if (wr->send_flags & UIW_SEND_INLINE)
		return uiw_error(EINVAL, "qp %u: an atomic cannot be inline",
				 qp->qpn);
	if (wr->num_sge != 1 || !wr->sg_list)
		return uiw_error(EINVAL, "qp %u: an atomic takes one SGE (the "
				 "8-octet buffer for the original value), "
				 "not %d", qp->qpn, wr->num_sge);
	g = &wr->sg_list[0];
	if (g->length != UIW_ATOMIC_OPERAND_LEN)
		return uiw_error(EINVAL, "qp %u: an atomic's SGE must be %u "
				 "octets, not %u", qp->qpn,
				 UIW_ATOMIC_OPERAND_LEN, g->length);
	if (qp->state == UIW_QPS_RTS && qp->lp.ord == 0)
		return uiw_error(EINVAL, "qp %u: atomic with ORD 0 (the "
				 "connection allows no outbound Reads or "
				 "atomics)", qp->qpn);
	/* The original value is written there: local write access. */
	c = uiw_mr_check(&qp->dev->mrt, g->lkey, qp->pd,
			 UIW_ACCESS_LOCAL_WRITE, g->addr, g->length);
	if (c != UIW_MRC_OK)
		return uiw_error(EINVAL, "qp %u: atomic SGE (lkey 0x%08x, "
				 "0x%llx+%u): %s", qp->qpn, g->lkey,
				 (unsigned long long)g->addr, g->length,
				 uiw_mr_check_str(c));
	return 0;
}

void uiw_wr_atomic_fill(struct uiw_sq_slot *s, const struct uiw_send_wr *wr)
{
	bool masked = wr->send_flags & UIW_SEND_ATOMIC_MASKED;
	uint64_t to = wr->wr.atomic.remote_addr;
	uint32_t stag = wr->wr.atomic.rkey;

	memset(&s->areq, 0, sizeof(s->areq));
	switch (wr->opcode) {
	case UIW_WR_ATOMIC_FETCH_ADD:
		/* Plain fetch-and-add: one 64-bit field, Add Mask zero. */
		uiw_atomic_req_fetchadd(&s->areq, 0, stag, to,
					wr->wr.atomic.compare_add,
					masked ? wr->wr.atomic.compare_add_mask
					       : UIW_ATOMIC_ADD_MASK_PLAIN);
		break;
	case UIW_WR_ATOMIC_CMP_SWP:
		/* Plain compare-and-swap: every bit compared and swapped. */
		uiw_atomic_req_cmpswap(&s->areq, 0, stag, to,
				       wr->wr.atomic.compare_add,
				       masked ? wr->wr.atomic.compare_add_mask
					      : UIW_ATOMIC_MASK_ALL,
				       wr->wr.atomic.swap,
				       masked ? wr->wr.atomic.swap_mask
					      : UIW_ATOMIC_MASK_ALL);
		break;
	default:
		return;
	}
	s->rkey = stag;
	s->raddr = to;
}

/* ---- Transmit ------------------------------------------------------------ */

/* RFC 7306 messages are untagged and one segment each (each is at most
 * 52 octets, far below any MULPDU), MO 0, the Invalidate STag zero
 * (§4.1); the RDMAP octets are the engine's own. */

/* §5.2.1 rules 1, 2, 5, 6: untagged, queue 1, in order; the SQ counter
 * is the Request Identifier.  The atomic then waits in ext.aoq for its
 * Response. */
void uiw_wr_atomic_build(struct uiw_qp *qp, const struct uiw_wr_row *w,
			 struct uiw_sq_slot *s)
{
	struct uiw_tx_msg *m = &qp->msg;
	struct uiw_qp_ext *x = &qp->ext;
	struct uiw_tx_seg *g;
	uint8_t *p;
	size_t room;

	s->msn = qp->tx_msn[w->msn_qn]++;
	s->areq.req_id = m->idx;
	g = uiw_tx_seg_untagged(qp, UIW_SEG_SQ, m->idx, uiw_wr_op(w, 0, s),
				true, w->msn_qn, s->msn, 0, 0);
	p = uiw_tx_seg_tail(g, &room);
	uiw_tx_seg_keep(g, uiw_atomic_req_encode(p, room, &s->areq));
	x->aoq[(x->aoq_head + x->aoq_count) % UIW_EXT_AOQ] = m->idx;
	x->aoq_count++;
	uiw_wr_built(qp, s);
	uiw_tx_seg_commit(qp, g, 0, NULL, 0, 0);
}

/* §6.3: Immediate Data, message k of the row: untagged, queue 0 with
 * the Sends' MSNs, 8 octets. */
static void imm_build(struct uiw_qp *qp, const struct uiw_wr_row *w,
		      unsigned k, struct uiw_sq_slot *s)
{
	struct uiw_tx_msg *m = &qp->msg;
	struct uiw_tx_seg *g;
	uint8_t *p;
	size_t room;

	s->msn = qp->tx_msn[w->msn_qn]++;
	g = uiw_tx_seg_untagged(qp, UIW_SEG_SQ, m->idx, uiw_wr_op(w, k, s),
				true, w->msn_qn, s->msn, 0, 0);
	p = uiw_tx_seg_tail(g, &room);
	uiw_tx_seg_keep(g, uiw_imm_encode(p, room, s->imm));
	m->imm_next = false;
	uiw_wr_built(qp, s);
	uiw_tx_seg_commit(qp, g, 0, NULL, 0, 0);
}

void uiw_wr_imm_build(struct uiw_qp *qp, const struct uiw_wr_row *w,
		      struct uiw_sq_slot *s)
{
	imm_build(qp, w, 0, s);
}

/* §6: an RDMA Write, then Immediate Data in the same work request: the
 * Immediate Data is built after the Write's last segment, so the
 * receiver places the Write before it completes the Immediate Data
 * (§7). */
void uiw_wr_write_imm_build(struct uiw_qp *qp, const struct uiw_wr_row *w,
			    struct uiw_sq_slot *s)
{
	if (qp->msg.imm_next)
		imm_build(qp, w, 1, s);
	else if (uiw_wr_write_seg(qp, w, s))
		qp->msg.imm_next = true;
}

/*
 * The read-modify-write of §5.1 on the aligned word at r->to (a hold on
 * its region keeps it registered).  A compare-and-exchange loop: the
 * value written is computed from the value read, and the exchange only
 * happens if nothing changed the word in between, so the operation is
 * atomic against every other atomic access to the word (§5.3).  When
 * the result equals the original (a CmpSwap that does not match, adding
 * zero) nothing is written.
 */
static uint64_t ext_execute(const struct uiw_atomic_req *r)
{
	uint64_t *w = (uint64_t *)(uintptr_t)r->to;
	uint64_t orig = __atomic_load_n(w, __ATOMIC_ACQUIRE);

	for (;;) {
		uint64_t nv = uiw_atomic_apply(r, orig);

		if (nv == orig)
			break;
		if (__atomic_compare_exchange_n(w, &orig, nv, false,
						__ATOMIC_ACQ_REL,
						__ATOMIC_ACQUIRE))
			break;
	}
	return orig;
}

bool uiw_irq_atomic_ready(const struct uiw_qp *qp)
{
	uint32_t c;

	/* Entries before irq_next are built; those still in use have
	 * segments with the framing. */
	for (c = qp->irq_head; c != qp->irq_next; c++) {
		const struct uiw_irq_ent *e = &qp->irq[c % qp->irq_cap];

		if (e->used && e->kind == UIW_IRQ_READ)
			return false;
	}
	return true;
}

void uiw_irq_atomic_build(struct uiw_qp *qp, struct uiw_irq_ent *e)
{
	struct uiw_tx_msg *m = &qp->msg;
	struct uiw_atomic_resp resp;
	struct uiw_tx_seg *g;
	uint8_t *p;
	size_t room;

	/* §5.4 rule 8, §7: executed in Request order, after the Responses
	 * before it were generated; the Response carries the original
	 * value and the Request Identifier (§5.2.2). */
	resp.req_id = e->areq.req_id;
	resp.orig_value = ext_execute(&e->areq);
	if (e->hold) {
		uiw_mr_put(&qp->dev->mrt, e->hold);
		e->hold = NULL;
	}
	UIW_DBG(3, "qp %u: atomic %u at 0x%llx: 0x%016llx", qp->qpn,
		e->areq.aopcode, (unsigned long long)e->areq.to,
		(unsigned long long)resp.orig_value);
	/* §5.2.2 rules 2, 3: untagged, queue 3. */
	g = uiw_tx_seg_untagged(qp, UIW_SEG_IRQ, m->idx, UIW_OP_ATOMIC_RESP,
				true, UIW_QN_ATOMIC_RESP, qp->ext.tx_msn3++, 0,
				0);
	p = uiw_tx_seg_tail(g, &room);
	uiw_tx_seg_keep(g, uiw_atomic_resp_encode(p, room, &resp));
	e->built = true;
	qp->irq_unbuilt--;
	m->kind = UIW_MSG_NONE;
	uiw_tx_seg_commit(qp, g, 0, NULL, 0, 0);
}

/* ---- Receive (rx.c delivers whole messages here) ------------------------ */

void uiw_atomic_rx_request(struct uiw_qp *qp, const uint8_t *buf,
			   uint32_t got, struct uiw_qp_act *act)
{
	struct uiw_mr_entry *hold = NULL;
	struct uiw_atomic_req req;
	struct uiw_irq_ent *e;
	enum uiw_mr_check c;
	uiw_err_t err;

	qp->rx.have_rdmap = false;
	/* Length (§4.2), AOpCode (§5.2.1 rule 4) and alignment (§8.2). */
	err = uiw_atomic_req_decode(buf, got, &req);
	if (err != UIW_OK) {
		if (got != UIW_ATOMIC_REQ_LEN)
			uiw_rx_fail_msg(qp, err, -1, act, "Atomic Request of "
					"%u octets, not %u", got,
					UIW_ATOMIC_REQ_LEN);
		else if (err == UIW_E_RDMAP_CATA_STREAM)
			uiw_rx_fail_msg(qp, err, -1, act, "atomic at TO 0x%llx"
					" is not 64-bit aligned",
					(unsigned long long)req.to);
		else
			uiw_rx_fail_msg(qp, err, -1, act, "AOpCode 0x%x is not"
					" supported", req.aopcode);
		return;
	}
	/* RFC 5040 §8.1.1, RFC 7306 §9: the STag, its protection domain,
	 * the remote atomic right and the bounds of the word. */
	c = uiw_mr_get(&qp->dev->mrt, req.stag, qp->pd,
		       UIW_ACCESS_REMOTE_ATOMIC, req.to,
		       UIW_ATOMIC_OPERAND_LEN, &hold);
	if (c != UIW_MRC_OK) {
		uiw_rx_fail_msg(qp, uiw_mr_check_err(c, UIW_MRE_RDMAP), -1,
				act, "atomic on STag 0x%08x TO 0x%llx: %s",
				req.stag, (unsigned long long)req.to,
				uiw_mr_check_str(c));
		return;
	}
	/* §5.4 rules 3, 5, 8: processed in the order delivered, with the
	 * RDMA Read Requests (uiw_irq_atomic_build executes it). */
	e = uiw_irq_at(qp, qp->irq_tail++);
	memset(e, 0, sizeof(*e));
	e->kind = UIW_IRQ_ATOMIC;
	e->areq = req;
	e->hold = hold;
	e->used = true;
	qp->irq_unbuilt++;
}

void uiw_atomic_rx_response(struct uiw_qp *qp, const uint8_t *buf,
			    uint32_t got, struct uiw_qp_act *act)
{
	const struct uiw_ddp_hdr *h = &qp->rx.h;
	struct uiw_qp_ext *x = &qp->ext;
	struct uiw_mr_entry *hold = NULL;
	struct uiw_atomic_resp resp;
	struct uiw_sq_slot *s;
	const struct uiw_sge *g;
	enum uiw_mr_check c;
	uint32_t ctr;

	ctr = x->aoq[x->aoq_head % UIW_EXT_AOQ];
	s = uiw_sq_at(qp, ctr);
	qp->rx.have_rdmap = false;
	/* §5.2.2 rule 7: an invalid Response is an error. */
	if (uiw_atomic_resp_decode(buf, got, &resp) != UIW_OK) {
		uiw_rx_fail_msg(qp, uiw_rdmap_ext_len_check(h->opcode, got),
				UIW_WC_BAD_RESP_ERR, act, "Atomic Response of "
				"%u octets, not %u", got, UIW_ATOMIC_RESP_LEN);
		return;
	}
	if (resp.req_id != s->areq.req_id) {
		uiw_rx_fail_msg(qp, UIW_E_RDMAP_OP_UNSPEC, UIW_WC_BAD_RESP_ERR,
				act, "Atomic Response MSN %u for Request "
				"Identifier %u, expected %u", h->msn,
				resp.req_id, s->areq.req_id);
		return;
	}
	/* §5.4 rules 1, 7: the original value is placed, then the work
	 * request may complete.  The buffer was checked when posted; it
	 * may have been deregistered since. */
	g = &s->sge[0];
	c = uiw_mr_get(&qp->dev->mrt, g->lkey, qp->pd, UIW_ACCESS_LOCAL_WRITE,
		       g->addr, UIW_ATOMIC_OPERAND_LEN, &hold);
	if (c != UIW_MRC_OK) {
		uiw_rx_fail_msg(qp, UIW_E_RDMAP_LOCAL_CATA, UIW_WC_LOC_PROT_ERR,
				act, "atomic result buffer (lkey 0x%08x): %s",
				g->lkey, uiw_mr_check_str(c));
		return;
	}
	memcpy((void *)(uintptr_t)g->addr, &resp.orig_value,
	       UIW_ATOMIC_OPERAND_LEN);
	uiw_mr_put(&qp->dev->mrt, hold);
	x->aoq_head++;
	x->aoq_count--;
	s->read_done = true;
	uiw_qp_sq_check(qp, ctr, act);
}

/* ---- State --------------------------------------------------------------- */

void uiw_ext_reset(struct uiw_qp *qp)
{
	struct uiw_qp_ext *x = &qp->ext;

	x->aoq_head = x->aoq_count = 0;
	/* RFC 5041 §4.3: the first MSN of every queue is one. */
	x->tx_msn3 = 1;
}

void uiw_ext_flush(struct uiw_qp *qp)
{
	qp->ext.aoq_head = qp->ext.aoq_count = 0;
}
