/*
 * MPA transmit (RFC 5044 §4-§5): each DDP segment the engine hands out
 * becomes an FPDU, ULPDU_Length, the segment (the ULPDU), pad to a
 * multiple of four, CRC over everything before the CRC field (§4.1,
 * §4.4), and markers wherever the stream crosses a multiple of 512
 * octets (§4.3, laid out by uiw_mpa_layout, which the receiver uses
 * too).  The carrier gets iovecs for one system call: ULPDU_Length and
 * the header from the segment (the length field sits in its headroom),
 * payload straight from registered memory, markers from a constant
 * table, pad from zeros, the CRC from the FPDU ring here.
 *
 * The responder's hold (§7.1.2 rule 4: no FPDU before a valid one was
 * received) is the engine's: attached with tx_held, it hands out no
 * segment, not even a Terminate, until the receive side calls
 * uiw_qp_tx_release.  So nothing here waits for it.
 *
 * The alignment plan (§5.1) cuts a batch into messages at FPDU
 * boundaries; the carrier sends them in one system call.
 */
#include "mpa.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "../rt/log.h"
#include "../wire/crc32c.h"

/* Marker octets for every FPDUPTR value (the low two bits are zero,
 * RFC 5044 §4.2): 16 reserved zero bits, then FPDUPTR. */
static uint8_t marker_tab[65536 / 4][UIW_MPA_MARKER_LEN];
static pthread_once_t marker_once = PTHREAD_ONCE_INIT;
static const uint8_t zeros[4];
/* The layout of the FPDU being walked: scratch of one call, so one per
 * thread rather than one per connection. */
static __thread struct uiw_mpa_piece tx_pieces[UIW_MPA_MAX_PIECES(65535u)];

static void marker_init(void)
{
	uint32_t i;

	for (i = 0; i < 65536 / 4; i++) {
		marker_tab[i][2] = (uint8_t)((i * 4) >> 8);
		marker_tab[i][3] = (uint8_t)(i * 4);
	}
}

static inline struct uiw_mpa_tx_fpdu *fp_at(struct uiw_mpa_tx *t,
					     uint32_t i)
{
	return &t->f[(t->head + i) % UIW_MPA_TX_FPDUS];
}

/* ---- Walking an FPDU's octets -------------------------------------------- */

/* The next run of payload at cursor (si, so), at most left octets. */
static uint32_t src_run(const struct uiw_seg_out *g, uint32_t *si,
			uint32_t *so, uint32_t left, const uint8_t **p)
{
	const struct iovec *v;
	uint32_t run;

	while (*so >= g->src[*si].iov_len) {
		(*si)++;
		*so = 0;
	}
	v = &g->src[*si];
	*p = (const uint8_t *)v->iov_base + *so;
	run = (uint32_t)(v->iov_len - *so);
	if (run > left)
		run = left;
	*so += run;
	return run;
}

/* ULPDU_Length and the header: one run (the length field lies in the
 * segment's headroom). */
static inline const uint8_t *lead(const struct uiw_seg_out *g)
{
	return g->hdr - UIW_MPA_LEN_FIELD;
}

struct iov_out {
	struct iovec *iov;
	int n, max;
	uint32_t skip;              /* octets already sent */
};

/* Appends a run after what is left to skip; false once iov is full. */
static bool iov_put(struct iov_out *o, const uint8_t *p, uint32_t len)
{
	if (o->skip >= len) {
		o->skip -= len;
		return true;
	}
	p += o->skip;
	len -= o->skip;
	o->skip = 0;
	return uiw_iov_append(o->iov, &o->n, o->max, p, len);
}

struct fwalk {
	const struct uiw_mpa_tx_fpdu *f;
	unsigned np, pi;
	uint32_t poff;
	uint32_t si, so;            /* payload cursor */
};

static void fwalk_init(struct fwalk *w, const struct uiw_mpa_tx_fpdu *f)
{
	uint32_t flen;

	w->f = f;
	w->np = uiw_mpa_layout(f->pos, f->seg->len, true, tx_pieces,
			       UIW_MPA_MAX_PIECES(65535u), &flen);
	w->pi = 0;
	w->poff = 0;
	w->si = f->seg->src_i;
	w->so = f->seg->src_off;
}

/* The next run of octets of an FPDU with markers; false at its end. */
static bool fwalk_next(struct fwalk *w, const uint8_t **p, uint32_t *len,
		       bool *is_crc)
{
	const struct uiw_seg_out *g = w->f->seg;
	const struct uiw_mpa_piece *pc;
	uint32_t rem, run, x;

	if (w->pi >= w->np)
		return false;
	pc = &tx_pieces[w->pi];
	rem = pc->len - w->poff;
	run = rem;
	*is_crc = false;
	switch (pc->kind) {
	case UIW_MPA_P_MARKER:
		*p = marker_tab[pc->fpduptr >> 2] + w->poff;
		break;
	case UIW_MPA_P_LEN:
		*p = lead(g) + w->poff;
		break;
	case UIW_MPA_P_PAD:
		*p = zeros + w->poff;
		break;
	case UIW_MPA_P_CRC:
		*p = w->f->crc + w->poff;
		*is_crc = true;
		break;
	default:                            /* ULPDU */
		x = pc->off + w->poff;
		if (x < g->hlen) {
			*p = g->hdr + x;
			run = g->hlen - x < rem ? g->hlen - x : rem;
		} else {
			run = src_run(g, &w->si, &w->so, rem, p);
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

/* ---- FPDUs without markers ----------------------------------------------
 * ULPDU_Length and the header, the payload, pad, CRC: no layout to walk.
 * Most connections run without markers (RFC 6581 §4 lets either side
 * decline them). */

static uint32_t plain_crc(const struct uiw_seg_out *g)
{
	uint32_t crc = uiw_crc32c_update(UIW_CRC32C_INIT, lead(g),
					 UIW_MPA_LEN_FIELD + g->hlen);
	uint32_t left = g->len - g->hlen, si = g->src_i, so = g->src_off;
	const uint8_t *p;

	while (left > 0) {
		uint32_t run = src_run(g, &si, &so, left, &p);

		crc = uiw_crc32c_update(crc, p, run);
		left -= run;
	}
	return uiw_crc32c_final(uiw_crc32c_update(crc, zeros,
						  uiw_mpa_pad_len(g->len)));
}

static bool plain_iov(const struct uiw_mpa_tx_fpdu *f, struct iov_out *o)
{
	const struct uiw_seg_out *g = f->seg;
	uint32_t left = g->len - g->hlen, si = g->src_i, so = g->src_off;
	const uint8_t *p;

	if (!iov_put(o, lead(g), UIW_MPA_LEN_FIELD + g->hlen))
		return false;
	while (left > 0) {
		uint32_t run = src_run(g, &si, &so, left, &p);

		if (!iov_put(o, p, run))
			return false;
		left -= run;
	}
	return iov_put(o, zeros, uiw_mpa_pad_len(g->len)) &&
	       iov_put(o, f->crc, UIW_MPA_CRC_LEN);
}

/* Appends the FPDU's octets from o->skip on; false when the iovecs
 * ran out before its end. */
static bool fpdu_iov(const struct uiw_mpa *m, const struct uiw_mpa_tx_fpdu *f,
		     struct iov_out *o)
{
	struct fwalk w;
	const uint8_t *p;
	uint32_t len;
	bool is_crc;

	if (!m->p.markers_tx)
		return plain_iov(f, o);
	fwalk_init(&w, f);
	while (fwalk_next(&w, &p, &len, &is_crc))
		if (!iov_put(o, p, len))
			return false;
	return true;
}

/* ---- Framing ------------------------------------------------------------- */

/* Frames segment g at the current stream position: length field, CRC
 * over everything before the CRC field (RFC 5044 §4.4), markers by
 * uiw_mpa_layout. */
static void frame(struct uiw_mpa *m, const struct uiw_seg_out *g)
{
	struct uiw_mpa_tx *t = &m->tx;
	struct uiw_mpa_tx_fpdu *f = fp_at(t, t->count);
	uint8_t *lenf = g->hdr - UIW_MPA_LEN_FIELD;
	struct fwalk w;
	const uint8_t *p;
	uint32_t len;
	bool is_crc;

	/* RFC 5044 §4.1: ULPDU_Length, the DDP segment's octets. */
	lenf[0] = (uint8_t)(g->len >> 8);
	lenf[1] = (uint8_t)g->len;
	f->seg = g;
	f->pos = t->pos;
	memset(f->crc, 0, sizeof(f->crc));
	if (!m->p.markers_tx) {
		f->len = uiw_mpa_plain_len(g->len);
		if (m->p.crc)
			uiw_crc32c_put(f->crc, plain_crc(g));
	} else {
		if (uiw_mpa_layout(f->pos, g->len, true, tx_pieces,
				   UIW_MPA_MAX_PIECES(65535u), &f->len) == 0) {
			/* Cannot happen: MULPDU <= 64768 and positions are
			 * multiples of 4. */
			UIW_DBG(1, "mpa qp %u: no FPDU layout for %u octets at "
				"%llu", uiw_qp_num(m->qp), g->len,
				(unsigned long long)f->pos);
			f->len = 0;
		}
		if (m->p.crc) {
			uint32_t crc = UIW_CRC32C_INIT;

			fwalk_init(&w, f);
			while (fwalk_next(&w, &p, &len, &is_crc))
				if (!is_crc)
					crc = uiw_crc32c_update(crc, p, len);
			uiw_crc32c_put(f->crc, uiw_crc32c_final(crc));
		}
	}
	t->pos += f->len;
	t->count++;
	UIW_DBG(3, "mpa qp %u: tx fpdu at %llu ulpdu %u (%u octets)",
		uiw_qp_num(m->qp), (unsigned long long)f->pos, g->len, f->len);
}

/* Appends FPDU f (from skip octets on) to o, and its end to b when it
 * ends in the iovecs. */
static void emit(const struct uiw_mpa *m, const struct uiw_mpa_tx_fpdu *f,
		 struct iov_out *o, struct uiw_mpa_batch *b)
{
	if (o->n >= o->max)
		return;
	if (fpdu_iov(m, f, o) && b)
		b->ends[b->nends++] = f->pos + f->len;
}

int uiw_mpa_tx_iov(struct uiw_mpa *m, struct iovec *iov, int max,
		   struct uiw_mpa_batch *b)
{
	const struct uiw_seg_out *segs[UIW_MPA_TX_FPDUS];
	struct uiw_mpa_tx *t = &m->tx;
	struct iov_out o = { iov, 0, max > 0 ? max : 0, 0 };
	struct uiw_mpa_batch nb;
	uint32_t i, room = 0;
	int got, k;

	if (!b)
		b = &nb;
	b->iov = iov;
	b->pos = uiw_mpa_tx_pos(m);
	b->mid = t->count && t->sent;
	b->nends = 0;
	if (m->p.markers_tx)
		pthread_once(&marker_once, marker_init);
	if (b->mid) {
		/* RFC 5044 §5.1: TCP segments should start at FPDU
		 * boundaries.  The rest of a partly sent FPDU goes alone, so
		 * that the next message starts with a whole one. */
		o.skip = t->sent;
		emit(m, fp_at(t, 0), &o, b);
	} else {
		for (i = 0; i < t->count; i++)
			emit(m, fp_at(t, i), &o, b);
		if (o.n < o.max) {
			room = UIW_MPA_TX_FPDUS - t->count;
			if (room > (uint32_t)(o.max - o.n))
				room = (uint32_t)(o.max - o.n);
		}
	}
	/* One engine call per batch, even with no room: it tells whether
	 * the QP is still attached. */
	got = uiw_qp_tx_segs(m->qp, t->count, segs, (int)room);
	if (got < 0) {
		/* Detached: what was framed is void. */
		t->head = t->count = t->sent = 0;
		return 0;
	}
	for (k = 0; k < got; k++) {
		frame(m, segs[k]);
		emit(m, fp_at(t, t->count - 1), &o, b);
	}
	b->n = o.n;
	b->total = 0;
	for (k = 0; k < o.n; k++)
		b->total += iov[k].iov_len;
	return o.n;
}

bool uiw_mpa_tx_done(struct uiw_mpa *m, size_t n)
{
	struct uiw_mpa_tx *t = &m->tx;
	uint32_t whole = 0;

	while (n > 0 && t->count > 0) {
		struct uiw_mpa_tx_fpdu *f = fp_at(t, 0);
		uint32_t take = f->len - t->sent;

		if (take > n)
			take = (uint32_t)n;
		t->sent += take;
		n -= take;
		if (t->sent < f->len)
			break;
		t->head = (t->head + 1) % UIW_MPA_TX_FPDUS;
		t->count--;
		t->sent = 0;
		whole++;
	}
	if (n > 0)
		UIW_DBG(1, "mpa qp %u: tx_done for %zu octets never handed out",
			uiw_qp_num(m->qp), n);
	/* Only whole segments are the engine's news; the rest of a partly
	 * sent FPDU is still to go. */
	if (whole == 0 && t->count > 0)
		return true;
	return uiw_qp_tx_sent(m->qp, whole);
}

uint64_t uiw_mpa_tx_pos(const struct uiw_mpa *m)
{
	const struct uiw_mpa_tx *t = &m->tx;

	if (t->count == 0)
		return t->pos;
	return t->f[t->head].pos + t->sent;
}

/* ---- The alignment plan -------------------------------------------------- */

/*
 * FPDU alignment (RFC 5044 §5.1): "MPA transmitters SHOULD also use
 * whatever facilities the TCP stack presents to cause the TCP
 * transmitter to start TCP segments at FPDU boundaries."  A batch is cut
 * at FPDU boundaries into the messages of one system call, each ending
 * its segment (eor: the carrier's MSG_EOR), so the transport never
 * appends the next message to it.  Consecutive FPDUs share a message
 * while together they fit in the EMSS: small FPDUs then share a segment
 * that still begins at an FPDU boundary, and a burst of small work
 * requests costs one system call and a few segments instead of one of
 * each per FPDU (not with markers: decoders such as Wireshark find
 * markers only in an FPDU that fills its segment alone).  With MULPDU
 * from the EMSS, each message then travels in a segment of its own
 * unless TCP itself splits one (window limits, §5.1).
 *
 * Where TCP's segment size is the EMSS itself and a full FPDU is exactly
 * one segment (multi), one message carries many segments' worth: TCP
 * cuts a message at every MSS from its start, so FPDUs that fill their
 * segments exactly, and small ones packed as above, still start
 * segments, and a bulk transfer costs one message per batch instead of
 * one per FPDU.  On loopback a full FPDU is shorter than the segment and
 * each needs a message of its own.
 *
 * Alignment given up (the carrier's choice, unaligned): the batch goes
 * as one message and TCP cuts it where it will, except that a first
 * whole FPDU goes alone when more follows, so that it leaves without
 * waiting for the rest (bench/profile.md compares the cuts of large
 * ping-pongs; one message unless a single FPDU follows the first was
 * tried too, and was worse).
 */

/* Appends the next len octets of the batch (iovec *i, offset *ioff) to
 * message msg, as iovecs from mv[*nv] on. */
static void msg_take(const struct iovec *iov, struct iovec *mv,
		     struct uiw_mpa_msg *msg, int *i, size_t *ioff,
		     unsigned *nv, size_t len)
{
	while (len > 0) {
		size_t take = iov[*i].iov_len - *ioff;

		if (take > len)
			take = len;
		mv[*nv].iov_base = (uint8_t *)iov[*i].iov_base + *ioff;
		mv[*nv].iov_len = take;
		(*nv)++;
		msg->iovlen++;
		*ioff += take;
		len -= take;
		if (*ioff == iov[*i].iov_len) {
			(*i)++;
			*ioff = 0;
		}
	}
}

/* The whole batch as one message. */
static unsigned plan_whole(const struct uiw_mpa_batch *b,
			   struct uiw_mpa_msg *msg, size_t *planned)
{
	msg[0].iov = b->iov;
	msg[0].iovlen = (size_t)b->n;
	*planned = b->total;
	return 1;
}

/* Alignment given up: one message, or the first whole FPDU alone and
 * the rest in a second when more follows. */
static unsigned plan_runs(const struct uiw_mpa_batch *b,
			  const struct uiw_mpa_plan_in *in, struct iovec *mv,
			  struct uiw_mpa_msg *msg, unsigned msg_max,
			  size_t *planned, bool *eor)
{
	size_t first, ioff = 0;
	unsigned nv = 0;
	int i = 0;

	*eor = false;
	if (b->mid || in->markers || b->nends == 0 || msg_max < 2 ||
	    b->ends[0] - b->pos >= b->total)
		return plan_whole(b, msg, planned);
	first = (size_t)(b->ends[0] - b->pos);
	msg[0].iov = mv;
	msg[0].iovlen = 0;
	msg_take(b->iov, mv, &msg[0], &i, &ioff, &nv, first);
	msg[1].iov = &mv[nv];
	msg[1].iovlen = 0;
	msg_take(b->iov, mv, &msg[1], &i, &ioff, &nv, b->total - first);
	*planned = b->total;
	/* The rest starts at an FPDU boundary. */
	*eor = true;
	return 2;
}

unsigned uiw_mpa_plan(const struct uiw_mpa_batch *b,
		      const struct uiw_mpa_plan_in *in, struct iovec *mv,
		      struct uiw_mpa_msg *msg, unsigned msg_max,
		      size_t *planned, bool *eor)
{
	size_t base = 0, ioff = 0, mlen = 0, fill;
	unsigned k = 0, nv = 0, j = 0;
	bool open = false;           /* message k - 1 takes more FPDUs */
	int i = 0;

	*planned = 0;
	*eor = true;
	if (b->total == 0 || msg_max == 0)
		return 0;
	/* The usual batch of a ping-pong: a few small whole FPDUs that
	 * would share one message anyway, without walking them. */
	if (b->total <= UIW_MPA_PLAN_SMALL && !in->markers && !b->mid &&
	    b->nends && b->ends[b->nends - 1] == b->pos + b->total) {
		*eor = !in->unaligned;
		return plan_whole(b, msg, planned);
	}
	if (in->unaligned)
		return plan_runs(b, in, mv, msg, msg_max, planned, eor);
	while (base < b->total) {
		uint64_t pos = b->pos + base;
		/* An FPDU whose end is not in the batch was cut by the
		 * carrier's iovec limit. */
		uint64_t end = j < b->nends ? b->ends[j] : UINT64_MAX;
		bool rest = b->mid && base == 0;
		size_t len = end - pos < b->total - base ? (size_t)(end - pos)
							 : b->total - base;
		struct uiw_mpa_msg *h;

		/* A batch cut inside an FPDU: send the whole ones now, that
		 * one whole in the next batch. */
		if (len < end - pos && k > 0)
			break;
		/* the octets of the message's last segment so far */
		fill = in->multi ? mlen % in->emss : mlen;
		if (open && !rest && len == end - pos &&
		    fill + len <= in->emss && !in->markers) {
			h = &msg[k - 1];
		} else {
			if (k == msg_max)
				break;
			h = &msg[k++];
			h->iov = &mv[nv];
			h->iovlen = 0;
			mlen = 0;
		}
		msg_take(b->iov, mv, h, &i, &ioff, &nv, len);
		mlen += len;
		open = pos + len == end;
		if (open)
			j++;
		base += len;
	}
	*planned = base;
	return k;
}
