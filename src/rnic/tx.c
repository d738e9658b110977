/*
 * Transmit: send work requests and Read Responses become RDMA messages
 * (RFC 5040 §4-5), messages become DDP segments of at most MULPDU octets
 * (RFC 5041 §5.2), segments become MPA FPDUs (RFC 5044 §4) with pad,
 * markers and CRC.  The LLP gets iovecs for one sendmsg: header octets
 * from a per-QP staging ring, payload straight from registered memory,
 * markers from a constant table, pad and CRC from staging.
 *
 * Order (RFC 5040 §5.5): messages go out whole and in the order of their
 * work requests (rule 13); Read Responses go out in the order of their
 * Requests (rule 20) and take the link at message boundaries ahead of
 * queued send WRs.  An RDMA Read waits while ORD Reads are outstanding,
 * and so does everything queued behind it; a fenced WR waits until no
 * Read is outstanding.
 */
#include "qp.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "dev.h"
#include "../rt/log.h"
#include "../wire/crc32c.h"

/* Marker octets for every FPDUPTR value (the low two bits are zero,
 * RFC 5044 §4.2): 16 reserved zero bits, then FPDUPTR. */
static uint8_t marker_tab[65536 / 4][UIW_MPA_MARKER_LEN];
static pthread_once_t marker_once = PTHREAD_ONCE_INIT;
static const uint8_t zeros[4];
/* The layout of the frame being walked: scratch of one call under the
 * QP lock, so one per thread rather than one per QP. */
static __thread struct uiw_mpa_piece tx_pieces[UIW_PIECES_MAX];

static void marker_init(void)
{
	uint32_t i;

	for (i = 0; i < 65536 / 4; i++) {
		marker_tab[i][2] = (uint8_t)((i * 4) >> 8);
		marker_tab[i][3] = (uint8_t)(i * 4);
	}
}

static inline struct uiw_tx_frame *fr_at(struct uiw_qp *qp, uint32_t i)
{
	return &qp->fr[(qp->fr_head + i) % UIW_TX_FRAMES];
}

void uiw_sq_release_holds(struct uiw_qp *qp, struct uiw_sq_slot *s)
{
	uint32_t i;

	if (!s->holding)
		return;
	for (i = 0; i < s->num_sge; i++) {
		if (s->hold[i]) {
			uiw_mr_put(&qp->dev->mrt, s->hold[i]);
			s->hold[i] = NULL;
		}
	}
	s->holding = false;
}

static void irq_release(struct uiw_qp *qp, struct uiw_irq_ent *e)
{
	if (e->hold) {
		uiw_mr_put(&qp->dev->mrt, e->hold);
		e->hold = NULL;
	}
	e->used = false;
}

/* Entries leave the IRQ in order, once their Response is sent. */
static void irq_pop(struct uiw_qp *qp)
{
	while (qp->irq_head != qp->irq_next &&
	       !uiw_irq_at(qp, qp->irq_head)->used)
		qp->irq_head++;
	if (qp->irq_head == qp->irq_next && qp->irq_next == qp->irq_tail)
		qp->irq_head = qp->irq_next = qp->irq_tail;
}

void uiw_tx_reset(struct uiw_qp *qp)
{
	pthread_once(&marker_once, marker_init);
	qp->fr_head = qp->fr_count = qp->fr_sent = 0;
	qp->tx_pos = 0;
	qp->tx_unsent = 0;
	memset(&qp->msg, 0, sizeof(qp->msg));
	/* RFC 5041 §4.3: the first MSN of every queue is one. */
	qp->tx_msn[0] = qp->tx_msn[1] = qp->tx_msn[2] = 1;
	qp->term_pending = qp->term_built = false;
	qp->orq_head = qp->orq_count = 0;
	qp->irq_head = qp->irq_next = qp->irq_tail = qp->irq_unbuilt = 0;
	uiw_ext_reset(qp);
}

/* The stream ends: stop building.  Frames already built still go out
 * (the LLP may be sending them); what they hold is released when they
 * are sent, or by uiw_tx_drop. */
void uiw_tx_abort(struct uiw_qp *qp)
{
	uint32_t c;

	for (c = qp->irq_head; c != qp->irq_tail; c++) {
		struct uiw_irq_ent *e = uiw_irq_at(qp, c);

		if (!e->used)
			continue;
		if (e->frames)
			e->aborted = true;
		else
			irq_release(qp, e);
	}
	qp->irq_next = qp->irq_tail;
	qp->irq_unbuilt = 0;
	irq_pop(qp);
	if (qp->msg.kind == UIW_MSG_IRQ)
		qp->msg.kind = UIW_MSG_NONE;
}

/* The LLP is gone: forget every frame and release every hold. */
void uiw_tx_drop(struct uiw_qp *qp)
{
	uint32_t c, i;

	for (i = 0; i < qp->sq_size; i++) {
		qp->sq[i].frames = 0;
		uiw_sq_release_holds(qp, &qp->sq[i]);
		qp->sq[i].aborted = false;
	}
	for (c = 0; c < qp->irq_cap; c++) {
		struct uiw_irq_ent *e = &qp->irq[c];

		e->frames = 0;
		if (e->used)
			irq_release(qp, e);
	}
	qp->irq_head = qp->irq_next = qp->irq_tail;
	qp->irq_unbuilt = 0;
	qp->fr_head = qp->fr_count = qp->fr_sent = 0;
	qp->tx_unsent = 0;
	qp->term_pending = false;
	memset(&qp->msg, 0, sizeof(qp->msg));
}

/* ---- Walking a frame's octets -------------------------------------------- */

/* The next run of payload at cursor (si, so), at most left octets. */
static uint32_t src_run(const struct uiw_tx_frame *f, uint32_t *si,
			uint32_t *so, uint32_t left, const uint8_t **p)
{
	const struct iovec *v;
	uint32_t run;

	while (*so >= f->src[*si].iov_len) {
		(*si)++;
		*so = 0;
	}
	v = &f->src[*si];
	*p = (const uint8_t *)v->iov_base + *so;
	run = (uint32_t)(v->iov_len - *so);
	if (run > left)
		run = left;
	*so += run;
	return run;
}

struct iov_out {
	struct iovec *iov;
	int n, max;
	uint32_t skip;
};

/* Appends a run (after what is left to skip); false once iov is full. */
static bool iov_put(struct iov_out *o, const uint8_t *p, uint32_t len)
{
	if (o->skip >= len) {
		o->skip -= len;
		return true;
	}
	p += o->skip;
	len -= o->skip;
	o->skip = 0;
	if (o->n > 0 && (const uint8_t *)o->iov[o->n - 1].iov_base +
			o->iov[o->n - 1].iov_len == p) {
		o->iov[o->n - 1].iov_len += len;
		return true;
	}
	if (o->n == o->max)
		return false;
	o->iov[o->n].iov_base = (void *)p;
	o->iov[o->n].iov_len = len;
	o->n++;
	return true;
}

struct fwalk {
	const struct uiw_tx_frame *f;
	const struct uiw_mpa_piece *pc;
	unsigned np, pi;
	uint32_t poff;
	uint32_t si, so;            /* payload cursor */
};

static void fwalk_init(struct uiw_qp *qp, struct fwalk *w,
		       const struct uiw_tx_frame *f)
{
	uint32_t flen;

	w->f = f;
	w->pc = tx_pieces;
	w->np = uiw_mpa_layout(f->pos, f->ulen, qp->lp.markers_tx,
			       tx_pieces, UIW_PIECES_MAX, &flen);
	w->pi = 0;
	w->poff = 0;
	w->si = f->src_i;
	w->so = f->src_off;
}

/* The next run of octets; false at the end of the frame. */
static bool fwalk_next(struct fwalk *w, const uint8_t **p, uint32_t *len,
		       bool *is_crc)
{
	const struct uiw_tx_frame *f = w->f;
	const struct uiw_mpa_piece *pc;
	uint32_t rem, run, x;

	if (w->pi >= w->np)
		return false;
	pc = &w->pc[w->pi];
	rem = pc->len - w->poff;
	*is_crc = false;
	switch (pc->kind) {
	case UIW_MPA_P_MARKER:
		*p = marker_tab[pc->fpduptr >> 2] + w->poff;
		run = rem;
		break;
	case UIW_MPA_P_LEN:
		*p = f->hdr + w->poff;
		run = rem;
		break;
	case UIW_MPA_P_PAD:
		*p = zeros + w->poff;
		run = rem;
		break;
	case UIW_MPA_P_CRC:
		*p = f->crc + w->poff;
		run = rem;
		*is_crc = true;
		break;
	default:                            /* ULPDU */
		x = pc->off + w->poff;
		if (x < f->hlen) {
			*p = f->hdr + UIW_MPA_LEN_FIELD + x;
			run = f->hlen - x < rem ? f->hlen - x : rem;
		} else {
			run = src_run(f, &w->si, &w->so, rem, p);
		}
		break;
	}
	w->poff += run;
	if (w->poff == pc->len) {
		w->pi++;
		w->poff = 0;
	}
	*len = run;
	return true;
}

/* ---- Frames without markers ---------------------------------------------
 * LEN and the header (f->hdr), the payload (f->src), pad, CRC: no layout
 * to walk.  Most connections run without markers (RFC 6581 §4 lets
 * either side decline them). */

static uint32_t plain_crc(const struct uiw_tx_frame *f)
{
	uint32_t crc = uiw_crc32c_update(UIW_CRC32C_INIT, f->hdr,
					 UIW_MPA_LEN_FIELD + f->hlen);
	uint32_t left = f->ulen - f->hlen, si = f->src_i, so = f->src_off;
	const uint8_t *p;

	while (left > 0) {
		uint32_t run = src_run(f, &si, &so, left, &p);

		crc = uiw_crc32c_update(crc, p, run);
		left -= run;
	}
	return uiw_crc32c_final(uiw_crc32c_update(crc, zeros,
						  uiw_mpa_pad_len(f->ulen)));
}

static int plain_iov(const struct uiw_tx_frame *f, uint32_t skip,
		     struct iovec *iov, int max)
{
	struct iov_out o = { iov, 0, max, skip };
	uint32_t left = f->ulen - f->hlen, si = f->src_i, so = f->src_off;
	const uint8_t *p;

	if (!iov_put(&o, f->hdr, UIW_MPA_LEN_FIELD + f->hlen))
		return o.n;
	while (left > 0) {
		uint32_t run = src_run(f, &si, &so, left, &p);

		if (!iov_put(&o, p, run))
			return o.n;
		left -= run;
	}
	if (iov_put(&o, zeros, uiw_mpa_pad_len(f->ulen)))
		iov_put(&o, f->crc, UIW_MPA_CRC_LEN);
	return o.n;
}

/* Appends the frame's octets from skip on to iov; returns iovecs used. */
static int fr_iov(struct uiw_qp *qp, const struct uiw_tx_frame *f,
		  uint32_t skip, struct iovec *iov, int max)
{
	struct iov_out o = { iov, 0, max, skip };
	struct fwalk w;
	const uint8_t *p;
	uint32_t len;
	bool is_crc;

	if (!qp->lp.markers_tx)
		return plain_iov(f, skip, iov, max);
	fwalk_init(qp, &w, f);
	while (fwalk_next(&w, &p, &len, &is_crc))
		if (!iov_put(&o, p, len))
			break;
	return o.n;
}

/* ---- Building frames ----------------------------------------------------- */

static struct uiw_tx_frame *fr_new(struct uiw_qp *qp, uint8_t owner,
				   uint32_t idx)
{
	struct uiw_tx_frame *f = fr_at(qp, qp->fr_count);

	f->owner = owner;
	f->idx = idx;
	f->src = NULL;
	f->nsrc = f->src_i = f->src_off = 0;
	return f;
}

/* Frames the ULPDU (hlen header octets in hdr, payload after) at the
 * current stream position: length field, CRC over everything before the
 * CRC field (RFC 5044 §4.4), markers by uiw_mpa_layout. */
static void fr_commit(struct uiw_qp *qp, struct uiw_tx_frame *f,
		      uint32_t ulen)
{
	struct fwalk w;
	const uint8_t *p;
	uint32_t len;
	bool is_crc;

	f->ulen = (uint16_t)ulen;
	f->hdr[0] = (uint8_t)(ulen >> 8);
	f->hdr[1] = (uint8_t)ulen;
	f->pos = qp->tx_pos;
	memset(f->crc, 0, sizeof(f->crc));
	if (!qp->lp.markers_tx) {
		f->len = uiw_mpa_plain_len(ulen);
		if (qp->lp.crc)
			uiw_crc32c_put(f->crc, plain_crc(f));
		goto framed;
	}
	if (uiw_mpa_layout(f->pos, ulen, qp->lp.markers_tx, tx_pieces,
			   UIW_PIECES_MAX, &f->len) == 0) {
		/* Cannot happen: MULPDU <= 64768 and positions are
		 * multiples of 4. */
		UIW_DBG(1, "qp %u: no FPDU layout for %u octets at %llu",
			qp->qpn, ulen, (unsigned long long)f->pos);
		f->len = 0;
	}
	if (qp->lp.crc) {
		uint32_t crc = UIW_CRC32C_INIT;

		fwalk_init(qp, &w, f);
		while (fwalk_next(&w, &p, &len, &is_crc))
			if (!is_crc)
				crc = uiw_crc32c_update(crc, p, len);
		uiw_crc32c_put(f->crc, uiw_crc32c_final(crc));
	}
framed:
	qp->tx_pos += f->len;
	qp->tx_unsent += f->len;
	qp->fr_count++;
	UIW_DBG(3, "qp %u: tx fpdu at %llu ulpdu %u (%u octets)", qp->qpn,
		(unsigned long long)f->pos, ulen, f->len);
}

static void hdr_base(struct uiw_ddp_hdr *h, bool tagged, bool last,
		     uint8_t opcode)
{
	memset(h, 0, sizeof(*h));
	h->tagged = tagged;
	h->last = last;
	h->ddp_ver = UIW_DDP_VERSION;
	h->rdmap_ver = UIW_RDMAP_VERSION;
	h->opcode = opcode;
}

/* Moves a payload cursor over n octets of src. */
static void src_advance(const struct iovec *src, uint32_t *si, uint32_t *so,
			uint32_t n)
{
	while (n > 0) {
		uint32_t room = (uint32_t)src[*si].iov_len - *so;

		if (n < room) {
			*so += n;
			return;
		}
		n -= room;
		(*si)++;
		*so = 0;
	}
}

static void build_term(struct uiw_qp *qp)
{
	struct uiw_tx_frame *f = fr_new(qp, UIW_FR_TERM, 0);
	struct uiw_ddp_hdr h;
	size_t n;

	/* RFC 5040 §4.8, §5.4: untagged, queue 2, one segment. */
	hdr_base(&h, false, true, UIW_OP_TERMINATE);
	h.qn = UIW_QN_TERMINATE;
	h.msn = qp->tx_msn[UIW_QN_TERMINATE]++;
	h.mo = 0;
	uiw_ddp_hdr_encode(f->hdr + UIW_MPA_LEN_FIELD, &h);
	n = uiw_term_encode(f->hdr + UIW_MPA_LEN_FIELD +
			    UIW_DDP_UNTAGGED_HDR_LEN, UIW_TERM_MAX_LEN,
			    &qp->term);
	f->hlen = (uint8_t)(UIW_DDP_UNTAGGED_HDR_LEN + n);
	fr_commit(qp, f, f->hlen);
	qp->term_built = true;
}

/* One segment of the current message. */
static void build_segment(struct uiw_qp *qp)
{
	struct uiw_tx_msg *m = &qp->msg;
	struct uiw_ddp_hdr h;
	struct uiw_tx_frame *f;
	uint32_t pmax, p, hl;
	bool last;

	if (m->kind == UIW_MSG_IRQ) {
		struct uiw_irq_ent *e = uiw_irq_at(qp, m->idx);

		/* RFC 7306 §5.2.2: an Atomic Response (atomic.c) */
		if (uiw_ext_build_resp(qp))
			return;
		/* RFC 5040 §5.2.2: tagged, to the sink the Request named. */
		pmax = qp->lp.mulpdu - UIW_DDP_TAGGED_HDR_LEN;
		p = m->len - m->off < pmax ? m->len - m->off : pmax;
		last = m->off + p == m->len;
		hdr_base(&h, true, last, UIW_OP_READ_RESP);
		h.stag = e->rr.sink_stag;
		h.to = e->rr.sink_to + m->off;
		f = fr_new(qp, UIW_FR_IRQ, m->idx);
		hl = (uint32_t)uiw_ddp_hdr_encode(f->hdr + UIW_MPA_LEN_FIELD,
						  &h);
		f->hlen = (uint8_t)hl;
		if (p) {
			f->one.iov_base = (void *)(uintptr_t)(e->rr.src_to +
							      m->off);
			f->one.iov_len = p;
			f->src = &f->one;
			f->nsrc = 1;
		}
		e->frames++;
		e->off += p;
		m->off += p;
		if (last) {
			e->built = true;
			qp->irq_unbuilt--;
			m->kind = UIW_MSG_NONE;
		}
		fr_commit(qp, f, hl + p);
		return;
	}

	{
		struct uiw_sq_slot *s = uiw_sq_at(qp, m->idx);

		/* RFC 7306: Atomic Request, Immediate Data (atomic.c) */
		if (uiw_ext_build_sq(qp))
			return;
		f = fr_new(qp, UIW_FR_SQ, m->idx);
		if (s->opcode == UIW_WR_RDMA_READ) {
			struct uiw_read_req rr = {
				.sink_stag = s->num_sge ? s->sge[0].lkey : 0,
				.sink_to = s->num_sge ? s->sge[0].addr : 0,
				.size = s->length,
				.src_stag = s->rkey,
				.src_to = s->raddr,
			};

			/* RFC 5040 §4.4, §5.2.1: queue 1, one segment. */
			hdr_base(&h, false, true, UIW_OP_READ_REQ);
			h.qn = UIW_QN_READ_REQ;
			h.msn = qp->tx_msn[UIW_QN_READ_REQ]++;
			h.mo = 0;
			s->msn = h.msn;
			hl = (uint32_t)uiw_ddp_hdr_encode(f->hdr +
							  UIW_MPA_LEN_FIELD,
							  &h);
			uiw_read_req_encode(f->hdr + UIW_MPA_LEN_FIELD + hl,
					    &rr);
			hl += UIW_READ_REQ_LEN;
			f->hlen = (uint8_t)hl;
			qp->orq[(qp->orq_head + qp->orq_count) % qp->orq_cap] =
				m->idx;
			qp->orq_count++;
			s->frames++;
			s->state = UIW_SQ_BUILT;
			m->kind = UIW_MSG_NONE;
			fr_commit(qp, f, hl);
			return;
		}
		if (s->opcode == UIW_WR_RDMA_WRITE ||
		    s->opcode == UIW_WR_RDMA_WRITE_WITH_IMM) {
			/* RFC 5040 §5.1: tagged, TO advancing. */
			pmax = qp->lp.mulpdu - UIW_DDP_TAGGED_HDR_LEN;
			p = m->len - m->off < pmax ? m->len - m->off : pmax;
			last = m->off + p == m->len;
			hdr_base(&h, true, last, UIW_OP_WRITE);
			h.stag = s->rkey;
			h.to = s->raddr + m->off;
		} else {
			uint8_t op;

			/* RFC 5040 §5.3: untagged, queue 0, MO advancing. */
			if (s->opcode == UIW_WR_SEND_WITH_INV)
				op = s->solicited ? UIW_OP_SEND_SE_INV
						  : UIW_OP_SEND_INV;
			else
				op = s->solicited ? UIW_OP_SEND_SE
						  : UIW_OP_SEND;
			pmax = qp->lp.mulpdu - UIW_DDP_UNTAGGED_HDR_LEN;
			p = m->len - m->off < pmax ? m->len - m->off : pmax;
			last = m->off + p == m->len;
			hdr_base(&h, false, last, op);
			h.rsvd_ulp = s->opcode == UIW_WR_SEND_WITH_INV ?
				     s->inv_stag : 0;
			h.qn = UIW_QN_SEND;
			h.msn = qp->tx_msn[UIW_QN_SEND];
			h.mo = m->off;
			s->msn = h.msn;
		}
		hl = (uint32_t)uiw_ddp_hdr_encode(f->hdr + UIW_MPA_LEN_FIELD,
						  &h);
		f->hlen = (uint8_t)hl;
		if (p) {
			f->src = s->src;
			f->nsrc = s->nsrc;
			f->src_i = m->src_i;
			f->src_off = m->src_off;
			src_advance(s->src, &m->src_i, &m->src_off, p);
		}
		s->frames++;
		m->off += p;
		if (last && s->opcode == UIW_WR_RDMA_WRITE_WITH_IMM) {
			/* RFC 7306 §6: the Immediate Data message follows
			 * (uiw_ext_build_sq). */
			m->imm_next = true;
		} else if (last) {
			if (s->opcode != UIW_WR_RDMA_WRITE)
				qp->tx_msn[UIW_QN_SEND]++;
			s->state = UIW_SQ_BUILT;
			m->kind = UIW_MSG_NONE;
		}
		fr_commit(qp, f, hl + p);
	}
}

enum { SQ_STALL, SQ_STARTED, SQ_NOFRAME };

static int sq_local_fail(struct uiw_qp *qp, uint32_t ctr, int status,
			 const char *detail, struct uiw_qp_act *act)
{
	/* RFC 5040 §7.1 case 1: an error while creating a message sends a
	 * Terminate instead, without copied headers. */
	struct uiw_fail f = {
		.err = UIW_E_RDMAP_LOCAL_CATA,
		.origin = UIW_TERM_LOCAL,
		.send_term = true,
		.sq_idx = ctr, .rq_idx = -1,
		.status = status,
		.detail = detail,
	};

	uiw_qp_fail(qp, &f, act);
	return SQ_NOFRAME;
}

/* Starts the next send WR, if it may go now. */
static int sq_start(struct uiw_qp *qp, struct uiw_qp_act *act)
{
	uint32_t ctr = qp->sq_next;
	struct uiw_sq_slot *s = uiw_sq_at(qp, ctr);
	char why[96];
	uint32_t i;

	if (s->fence && (qp->orq_count > 0 || qp->ext.aoq_count > 0))
		return SQ_STALL;
	switch (s->opcode) {
	case UIW_WR_LOCAL_INV: {
		enum uiw_mr_check c = uiw_mr_invalidate(&qp->dev->mrt,
							s->inv_stag, qp->pd);

		if (c != UIW_MRC_OK) {
			snprintf(why, sizeof(why), "local invalidate of STag "
				 "0x%08x: %s", s->inv_stag,
				 uiw_mr_check_str(c));
			return sq_local_fail(qp, ctr, UIW_WC_LOC_PROT_ERR, why,
					     act);
		}
		qp->sq_next++;
		s->state = UIW_SQ_BUILT;
		uiw_qp_sq_check(qp, ctr, act);
		return SQ_NOFRAME;
	}
	case UIW_WR_RDMA_READ:
		if (qp->lp.ord == 0)
			return sq_local_fail(qp, ctr, UIW_WC_LOC_QP_OP_ERR,
					     "RDMA Read with ORD 0", act);
		/* RFC 5040 §6.1: never more than ORD Reads outstanding
		 * (a Read RTR awaiting its Response is one of them). */
		if (qp->orq_count + qp->rtr.rd_out + qp->ext.aoq_count >=
		    qp->lp.ord)
			return SQ_STALL;
		break;
	case UIW_WR_ATOMIC_FETCH_ADD:
	case UIW_WR_ATOMIC_CMP_SWP:
		if (qp->lp.ord == 0)
			return sq_local_fail(qp, ctr, UIW_WC_LOC_QP_OP_ERR,
					     "atomic with ORD 0", act);
		/* RFC 7306 §5.2: Atomic Requests share ORD with Reads. */
		if (qp->orq_count + qp->rtr.rd_out + qp->ext.aoq_count >=
		    qp->lp.ord)
			return SQ_STALL;
		break;
	default:
		/* The source regions stay registered while we send. */
		if (!s->inl) {
			for (i = 0; i < s->num_sge; i++) {
				const struct uiw_sge *g = &s->sge[i];
				enum uiw_mr_check c;

				s->hold[i] = NULL;
				if (!g->length)
					continue;
				c = uiw_mr_get(&qp->dev->mrt, g->lkey, qp->pd,
					       0, g->addr, g->length,
					       &s->hold[i]);
				s->holding = true;
				if (c != UIW_MRC_OK) {
					snprintf(why, sizeof(why), "SGE %u "
						 "(lkey 0x%08x): %s", i,
						 g->lkey,
						 uiw_mr_check_str(c));
					return sq_local_fail(qp, ctr,
						UIW_WC_LOC_PROT_ERR, why, act);
				}
			}
		}
		break;
	}
	memset(&qp->msg, 0, sizeof(qp->msg));
	qp->msg.kind = UIW_MSG_SQ;
	qp->msg.idx = ctr;
	qp->msg.len = s->opcode == UIW_WR_RDMA_READ ? 0 : s->length;
	s->state = UIW_SQ_ACTIVE;
	qp->sq_next++;
	return SQ_STARTED;
}

/* Builds one frame if there is something that may go now. */
static bool tx_build(struct uiw_qp *qp, struct uiw_qp_act *act)
{
	for (;;) {
		if (qp->fr_count == UIW_TX_FRAMES)
			return false;
		if (qp->term_pending) {
			if (qp->term_built)
				return false;
			build_term(qp);
			return true;
		}
		if (qp->state != UIW_QPS_RTS && qp->state != UIW_QPS_CLOSING)
			return false;
		/* RFC 5044 §7.1.2 rule 4: the responder sends nothing
		 * before it has received a valid FPDU. */
		if (qp->tx_held)
			return false;
		/* RFC 6581 §5: the initiator's RTR precedes every other
		 * FPDU (rtr.c). */
		if (qp->rtr.tx) {
			struct uiw_tx_frame *f = fr_new(qp, UIW_FR_NONE, 0);

			f->hlen = (uint8_t)uiw_rtr_encode(qp, f->hdr +
							  UIW_MPA_LEN_FIELD);
			fr_commit(qp, f, f->hlen);
			return true;
		}
		if (qp->msg.kind == UIW_MSG_NONE) {
			bool resp = qp->irq_next != qp->irq_tail;
			bool sq = qp->sq_next != qp->sq_tail;

			/* Whole messages, Responses and send WRs in turn
			 * when both wait (neither starves the other). */
			if (resp && sq && qp->tx_resp_last)
				resp = false;
			/* RFC 7306 §7: an atomic waits for the Read
			 * Responses before it (atomic.c). */
			if (resp && !uiw_ext_resp_ready(qp))
				resp = false;
			if (resp) {
				struct uiw_irq_ent *e =
					uiw_irq_at(qp, qp->irq_next);

				memset(&qp->msg, 0, sizeof(qp->msg));
				qp->msg.kind = UIW_MSG_IRQ;
				qp->msg.idx = qp->irq_next++;
				qp->msg.len = e->rr.size;
				qp->tx_resp_last = true;
			} else if (sq) {
				int r = sq_start(qp, act);

				if (r == SQ_STALL) {
					/* Stalled by ORD or a fence: the
					 * Responses may still go. */
					if (qp->irq_next == qp->irq_tail ||
					    !uiw_ext_resp_ready(qp))
						return false;
					qp->tx_resp_last = false;
					continue;
				}
				qp->tx_resp_last = false;
				if (r == SQ_NOFRAME)
					continue;
			} else {
				return false;
			}
		}
		build_segment(qp);
		return true;
	}
}

/* A frame's last octet was accepted by the LLP. */
static void frame_sent(struct uiw_qp *qp, struct uiw_tx_frame *f,
		       struct uiw_qp_act *act)
{
	switch (f->owner) {
	case UIW_FR_SQ: {
		struct uiw_sq_slot *s = uiw_sq_at(qp, f->idx);

		if (s->frames)
			s->frames--;
		if (s->frames == 0 && s->aborted) {
			uiw_sq_release_holds(qp, s);
			s->aborted = false;
		} else {
			/* RFC 5040 §5.5 rule 14: a Send or Write completes
			 * once the LLP has taken its last octet. */
			uiw_qp_sq_check(qp, f->idx, act);
		}
		break;
	}
	case UIW_FR_IRQ: {
		struct uiw_irq_ent *e = uiw_irq_at(qp, f->idx);

		if (e->frames)
			e->frames--;
		if (e->frames == 0 && (e->built || e->aborted)) {
			irq_release(qp, e);
			irq_pop(qp);
		}
		break;
	}
	case UIW_FR_TERM:
		/* RFC 5040 §5.4: nothing more on this stream. */
		qp->term_pending = false;
		if (qp->state == UIW_QPS_TERMINATE)
			qp->state = UIW_QPS_ERROR;
		qp->close_req = true;
		break;
	default:
		break;
	}
}

int uiw_qp_tx_iov(struct uiw_qp *qp, struct iovec *iov, int max)
{
	struct uiw_qp_act act = { 0 };
	uint32_t i;
	int n = 0;

	if (!qp || !iov || max <= 0)
		return 0;
	pthread_mutex_lock(&qp->lock);
	if (!qp->attached) {
		pthread_mutex_unlock(&qp->lock);
		return 0;
	}
	if (qp->fr_count && qp->fr_sent) {
		/* RFC 5044 §5.1: TCP segments should start at FPDU
		 * boundaries.  The rest of a partly sent FPDU goes alone, so
		 * that the next sendmsg starts with a whole one. */
		n = fr_iov(qp, fr_at(qp, 0), qp->fr_sent, iov, max);
		goto out;
	}
	for (i = 0; i < qp->fr_count && n < max; i++)
		n += fr_iov(qp, fr_at(qp, i), 0, iov + n, max - n);
	while (n < max && qp->tx_unsent < UIW_TX_AHEAD && tx_build(qp, &act))
		n += fr_iov(qp, fr_at(qp, qp->fr_count - 1), 0, iov + n,
			    max - n);
out:
	uiw_qp_close_check(qp, &act);
	pthread_mutex_unlock(&qp->lock);
	/* The LLP is transmitting: it needs no kick. */
	act.kick = false;
	uiw_qp_act_run(qp, &act);
	return n;
}

/* Under qp->lock: false when tx_build would find nothing to build and
 * no frame waits (a conservative test: work that cannot go yet, behind
 * ORD or a fence, counts as work). */
bool uiw_tx_wanted(const struct uiw_qp *qp)
{
	return qp->fr_count > 0 || qp->term_pending || qp->rtr.tx ||
	       qp->msg.kind != UIW_MSG_NONE || qp->irq_next != qp->irq_tail ||
	       qp->sq_next != qp->sq_tail;
}

bool uiw_qp_tx_done(struct uiw_qp *qp, size_t n)
{
	struct uiw_qp_act act = { 0 };
	bool more;

	if (!qp)
		return false;
	pthread_mutex_lock(&qp->lock);
	if (!qp->attached) {
		pthread_mutex_unlock(&qp->lock);
		return false;
	}
	while (n > 0 && qp->fr_count > 0) {
		struct uiw_tx_frame *f = fr_at(qp, 0);
		uint32_t take = f->len - qp->fr_sent;

		if (take > n)
			take = (uint32_t)n;
		qp->fr_sent += take;
		qp->tx_unsent -= take;
		n -= take;
		if (qp->fr_sent < f->len)
			break;
		qp->fr_head = (qp->fr_head + 1) % UIW_TX_FRAMES;
		qp->fr_count--;
		qp->fr_sent = 0;
		frame_sent(qp, f, &act);
	}
	if (n > 0)
		UIW_DBG(1, "qp %u: tx_done for %zu octets never handed out",
			qp->qpn, n);
	uiw_qp_close_check(qp, &act);
	more = uiw_tx_wanted(qp);
	pthread_mutex_unlock(&qp->lock);
	act.kick = false;
	uiw_qp_act_run(qp, &act);
	return more;
}

/* ---- For atomic.c -------------------------------------------------------- */

struct uiw_tx_frame *uiw_tx_frame_new(struct uiw_qp *qp, uint8_t owner,
				      uint32_t idx)
{
	return fr_new(qp, owner, idx);
}

void uiw_tx_frame_commit(struct uiw_qp *qp, struct uiw_tx_frame *f,
			 uint32_t ulen)
{
	fr_commit(qp, f, ulen);
}
