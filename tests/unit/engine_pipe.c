/* Engine test helpers (see engine_pipe.h). */
#include "engine_pipe.h"

#include <setjmp.h>
#include <stdarg.h>
#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include "wire/crc32c.h"
#include "wire/mpa.h"

uint64_t ep_rand(uint64_t *s)
{
	uint64_t x = *s ? *s : 0x853c49e6748fea9bull;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545f4914f6cdd1dull;
}


/* ---- The framing --------------------------------------------------------- */

int ep_framing(void)
{
	const char *m = getenv("UIW_EP_FRAMING");

	if (m && strcmp(m, "msg") == 0)
		return EP_FR_MSG;
	if (m && strcmp(m, "msg-unordered") == 0)
		return EP_FR_MSG_UNORDERED;
	return EP_FR_MPA;
}

/* ---- LLP callbacks ------------------------------------------------------- */

static void cb_kick(void *ctx)
{
	struct ep_side *s = ctx;

	__atomic_fetch_add(&s->kicks, 1, __ATOMIC_SEQ_CST);
}

static void cb_close(void *ctx, bool abortive)
{
	struct ep_side *s = ctx;

	__atomic_fetch_add(&s->closes, 1, __ATOMIC_SEQ_CST);
	s->abortive = abortive;
	/* An abortive close resets at once: the LLP is gone (as the TCP
	 * LLP does from an application thread). */
	if (abortive && s->attached) {
		s->attached = false;
		uiw_qp_llp_detach(s->qp, UIW_E_MPA_CLOSED);
	}
}

static void cb_query(void *ctx, struct uiw_qp_attr *attr)
{
	struct ep_side *s = ctx;

	if (ep_framing() != EP_FR_MPA)
		uiw_msgf_query(&s->msgf, attr);
	else
		uiw_mpa_query(&s->mpa, attr);
}

const struct uiw_llp_ops ep_ops = {
	.kick = cb_kick,
	.close = cb_close,
	.query = cb_query,
};

/* ---- Set-up -------------------------------------------------------------- */

static int side_open(struct ep_side *s, struct uiw_device *dev,
		     const struct ep_cfg *cfg, uint32_t srq_wr)
{
	struct uiw_qp_init_attr qa;

	s->dev = dev;
	s->pd = uiw_pd_alloc(dev);
	if (!s->pd)
		return -1;
	s->cq = uiw_cq_create(dev, cfg->cqe ? cfg->cqe : 1024);
	if (!s->cq)
		return -1;
	memset(&qa, 0, sizeof(qa));
	qa.send_cq = s->cq;
	qa.recv_cq = s->cq;
	qa.cap.max_send_wr = cfg->max_wr ? cfg->max_wr : 64;
	qa.cap.max_recv_wr = cfg->max_wr ? cfg->max_wr : 64;
	qa.cap.max_send_sge = cfg->max_sge ? cfg->max_sge : 4;
	qa.cap.max_recv_sge = cfg->max_sge ? cfg->max_sge : 4;
	qa.cap.max_inline_data = cfg->max_inline;
	qa.sq_sig_all = 1;
	if (srq_wr) {
		struct uiw_srq_attr sa = {
			.max_wr = srq_wr, .max_sge = qa.cap.max_recv_sge,
		};

		s->srq = uiw_srq_create(s->pd, &sa, NULL);
		if (!s->srq)
			return -1;
		qa.srq = s->srq;
	}
	s->qp = uiw_qp_create(s->pd, &qa);
	if (!s->qp)
		return -1;
	s->mp.crc = cfg->crc;
	s->mp.markers_tx = cfg->markers;
	s->mp.markers_rx = cfg->markers;
	s->mp.mulpdu = cfg->mulpdu ? cfg->mulpdu : 65535;
	s->lp.mulpdu = s->mp.mulpdu;
	s->lp.ird = cfg->ird ? cfg->ird : 8;
	s->lp.ord = cfg->ord ? cfg->ord : 8;
	return 0;
}

int ep_open_idle(struct ep_pipe *p, const struct ep_cfg *cfg)
{
	struct uiw_device *da, *db;

	memset(p, 0, sizeof(*p));
	p->tx_iov_max = 64;
	p->rx_iov_max = 64;
	p->rng = 0x12345678;
	da = uiw_device_open(NULL);
	if (!da)
		return -1;
	db = da;
	if (cfg->two_devices) {
		db = uiw_device_open(NULL);
		if (!db)
			return -1;
		p->own_dev_b = true;
	}
	if (side_open(&p->a, da, cfg, 0) || side_open(&p->b, db, cfg,
						       cfg->srq_b))
		return -1;
	p->b.mp.hold = cfg->hold_b;
	return 0;
}

/* The sides attached, so that the framing of a QP can be found. */
#define EP_SIDES 256
static struct ep_side *sides[EP_SIDES];
static pthread_mutex_t sides_lock = PTHREAD_MUTEX_INITIALIZER;

static struct ep_side *side_of(struct uiw_qp *qp);

struct uiw_mpa *ep_mpa(struct uiw_qp *qp)
{
	struct ep_side *s = side_of(qp);

	return s ? &s->mpa : NULL;
}

int ep_side_attach(struct ep_side *s)
{
	int i, ret = -1;

	s->lp.mulpdu = s->mp.mulpdu;
	pthread_mutex_lock(&sides_lock);
	for (i = 0; i < EP_SIDES && ret; i++) {
		if (!sides[i] || sides[i] == s) {
			sides[i] = s;
			ret = 0;
		}
	}
	pthread_mutex_unlock(&sides_lock);
	if (ret)
		return -1;
	s->rec_hgot = s->rec_left = 0;
	if (ep_framing() != EP_FR_MPA)
		ret = uiw_msgf_attach(&s->msgf, s->qp, &s->lp,
				      ep_framing() == EP_FR_MSG_UNORDERED,
				      &ep_ops, s);
	else
		ret = uiw_mpa_attach(&s->mpa, s->qp, &s->mp, &s->lp, &ep_ops,
				     s);
	if (ret)
		return -1;
	s->attached = true;
	return 0;
}

static struct ep_side *side_of(struct uiw_qp *qp)
{
	struct ep_side *s = NULL;
	int i;

	pthread_mutex_lock(&sides_lock);
	for (i = 0; i < EP_SIDES && !s; i++)
		if (sides[i] && sides[i]->qp == qp)
			s = sides[i];
	pthread_mutex_unlock(&sides_lock);
	return s;
}

static void side_forget(struct ep_side *s)
{
	int i;

	pthread_mutex_lock(&sides_lock);
	for (i = 0; i < EP_SIDES; i++)
		if (sides[i] == s)
			sides[i] = NULL;
	pthread_mutex_unlock(&sides_lock);
	uiw_mpa_fini(&s->mpa);
}

int ep_rx_iov(struct uiw_qp *qp, struct iovec *iov, int max)
{
	return uiw_mpa_rx_iov(ep_mpa(qp), iov, max, NULL);
}

int ep_rx_iov_ahead(struct uiw_qp *qp, struct iovec *iov, int max,
		    size_t *ahead)
{
	return uiw_mpa_rx_iov(ep_mpa(qp), iov, max, ahead);
}

int ep_rx_done(struct uiw_qp *qp, size_t n)
{
	return uiw_mpa_rx_done(ep_mpa(qp), n);
}

int ep_rx_feed(struct uiw_qp *qp, const void *buf, size_t len,
	       struct uiw_mpa_fed *fed)
{
	return uiw_mpa_rx_feed(ep_mpa(qp), buf, len, fed);
}

void ep_llp_fin(struct uiw_qp *qp)
{
	struct ep_side *s = side_of(qp);

	if (ep_framing() != EP_FR_MPA)
		uiw_qp_llp_fin(qp, s && s->msgf.in_msg);
	else
		uiw_qp_llp_fin(qp, s && uiw_mpa_rx_mid(&s->mpa));
}

int ep_attach(struct ep_pipe *p)
{
	if (ep_side_attach(&p->a) || ep_side_attach(&p->b))
		return -1;
	return 0;
}

int ep_open(struct ep_pipe *p, const struct ep_cfg *cfg)
{
	if (ep_open_idle(p, cfg))
		return -1;
	return ep_attach(p);
}

static void side_forget(struct ep_side *s);

void ep_side_detach(struct ep_side *s, uiw_err_t err)
{
	if (s->attached) {
		uiw_qp_llp_detach(s->qp, err);
		s->attached = false;
	}
	side_forget(s);
}

static int side_close(struct ep_side *s)
{
	int bad = 0;

	ep_side_detach(s, UIW_E_MPA_CLOSED);
	if (s->qp && uiw_qp_destroy(s->qp))
		bad++;
	if (s->srq && uiw_srq_destroy(s->srq))
		bad++;
	if (s->cq && uiw_cq_destroy(s->cq))
		bad++;
	if (s->pd && uiw_pd_free(s->pd))
		bad++;
	free(s->out);
	free(s->q);
	return bad;
}

int ep_close(struct ep_pipe *p)
{
	struct uiw_device *da = p->a.dev, *db = p->b.dev;
	int bad = side_close(&p->a) + side_close(&p->b);

	if (p->own_dev_b && db && uiw_device_close(db))
		bad++;
	if (da && uiw_device_close(da))
		bad++;
	memset(p, 0, sizeof(*p));
	return bad ? -1 : 0;
}

/* ---- Moving octets ------------------------------------------------------- */

size_t ep_drain_tx(struct ep_pipe *p, struct ep_side *s)
{
	struct iovec iov[1024];
	size_t moved = 0;

	if (ep_framing() != EP_FR_MPA) {
		size_t at = s->q_len;

		if (!s->attached)
			return 0;
		moved = uiw_msgf_tx(&s->msgf, &s->q, &s->q_len, &s->q_cap,
				    p->tx_iov_max);
		if (moved) {
			uiw_msgf_grow(&s->out, &s->out_cap,
				      s->out_len + moved);
			memcpy(s->out + s->out_len, s->q + at, moved);
			s->out_len += moved;
		}
		return moved;
	}

	/* An abortive close detaches the side from inside tx_done. */
	while (s->attached) {
		int n = uiw_mpa_tx_iov(&s->mpa, iov, p->tx_iov_max ?
				       p->tx_iov_max : 64, NULL);
		size_t total = 0, take, k, o;
		int i;

		if (n <= 0)
			break;
		for (i = 0; i < n; i++)
			total += iov[i].iov_len;
		take = total;
		if (p->tx_partial && total > 1)
			take = 1 + ep_rand(&p->rng) % total;
		uiw_msgf_grow(&s->out, &s->out_cap, s->out_len + take);
		uiw_msgf_grow(&s->q, &s->q_cap, s->q_len + take);
		for (i = 0, k = 0; i < n && k < take; i++) {
			o = iov[i].iov_len < take - k ? iov[i].iov_len
						       : take - k;
			memcpy(s->out + s->out_len + k, iov[i].iov_base, o);
			k += o;
		}
		memcpy(s->q + s->q_len, s->out + s->out_len, take);
		s->out_len += take;
		s->q_len += take;
		uiw_mpa_tx_done(&s->mpa, take);
		moved += take;
	}
	return moved;
}

/* How ep_feed hands octets over: UIW_EP_RX=feed uses uiw_mpa_rx_feed,
 * =mixed alternates it with rx_iov / rx_done rounds, anything else (the
 * default) rx_iov / rx_done alone.  The engine tests run in each. */
static int ep_rx_mode(void)
{
	const char *m = getenv("UIW_EP_RX");

	if (m && strcmp(m, "feed") == 0)
		return 1;
	if (m && strcmp(m, "mixed") == 0)
		return 2;
	return 0;
}

/* One uiw_mpa_rx_feed of the next part; false when the QP stopped. */
static bool feed_part(struct uiw_qp *qp, const uint8_t *buf, size_t len,
		      size_t *off, size_t split, uint64_t *rng)
{
	struct uiw_mpa_fed fed;
	size_t take = len - *off;
	int r;

	if (split)
		take = take < split ? take : split;
	else
		take = 1 + ep_rand(rng) % take;
	r = ep_rx_feed(qp, buf + *off, take, &fed);
	*off += fed.used;
	return r == 0 && fed.used == take;
}

static uint32_t get_be(const uint8_t *p, int n)
{
	uint32_t v = 0;

	while (n-- > 0)
		v = v << 8 | *p++;
	return v;
}

/* The message framing: records of buf, each message in pieces of split
 * octets (0: random) handed to the framing; a record cut by the end of
 * buf goes on with the next call. */
static size_t feed_msgs(struct ep_side *s, const uint8_t *buf, size_t len,
			size_t split, uint64_t *rng)
{
	size_t off = 0;

	while (off < len) {
		size_t take;

		if (s->rec_left == 0) {
			take = UIW_MSGF_REC_LEN - s->rec_hgot;
			take = take < len - off ? take : len - off;
			memcpy(s->rec_hdr + s->rec_hgot, buf + off, take);
			s->rec_hgot += (uint32_t)take;
			off += take;
			if (s->rec_hgot < UIW_MSGF_REC_LEN)
				break;
			s->rec_hgot = 0;
			s->rec_left = get_be(s->rec_hdr, UIW_MSGF_REC_LEN);
			if (s->rec_left == 0 &&
			    uiw_msgf_rx(&s->msgf, NULL, 0, true) < 0)
				return off;
			continue;
		}
		take = s->rec_left < len - off ? s->rec_left : len - off;
		/* In order each message comes whole (its length known at its
		 * header, as SCTP delivers it); out of order in pieces too
		 * (partial delivery: the length known only at the end). */
		if (ep_framing() == EP_FR_MPA || ep_framing() == EP_FR_MSG)
			;
		else if (split)
			take = take < split ? take : split;
		else
			take = 1 + ep_rand(rng) % take;
		s->rec_left -= (uint32_t)take;
		if (uiw_msgf_rx(&s->msgf, buf + off, take,
				s->rec_left == 0) < 0)
			return off + take;
		off += take;
	}
	return off;
}

size_t ep_feed(struct uiw_qp *qp, const uint8_t *buf, size_t len,
	       size_t split, uint64_t *rng, int iov_max)
{
	struct iovec iov[1024];
	int mode = ep_rx_mode(), round = 0;
	size_t off = 0;

	if (ep_framing() != EP_FR_MPA) {
		struct ep_side *s = side_of(qp);

		return s ? feed_msgs(s, buf, len, split, rng) : 0;
	}
	if (iov_max <= 0 || iov_max > 1024)
		iov_max = 64;
	while (off < len) {
		int n, i;
		size_t room = 0, take, k;

		if (mode == 1 || (mode == 2 && round++ % 2 == 0)) {
			if (!feed_part(qp, buf, len, &off, split, rng))
				break;
			continue;
		}
		n = ep_rx_iov(qp, iov, iov_max);
		if (n <= 0)
			break;
		for (i = 0; i < n; i++)
			room += iov[i].iov_len;
		take = len - off < room ? len - off : room;
		if (split)
			take = take < split ? take : split;
		else
			take = 1 + ep_rand(rng) % take;
		for (i = 0, k = 0; k < take; i++) {
			size_t o = iov[i].iov_len < take - k ?
				   iov[i].iov_len : take - k;

			memcpy(iov[i].iov_base, buf + off + k, o);
			k += o;
		}
		off += take;
		if (ep_rx_done(qp, take) < 0)
			break;
	}
	return off;
}

/* An unordered framing (RFC 5043 with the U flag) may hand over the
 * segments of a message in any order: each run of records that make
 * one message (segments up to one with L, of one queue, or tagged)
 * goes last segment first, the others in the order of the generator. */
static void reorder(uint8_t *q, size_t len, uint64_t *rng)
{
	size_t off = 0, start = 0, recs[512], order[512];
	unsigned n = 0, i;

	while (off + UIW_MSGF_REC_LEN <= len) {
		uint32_t rl = get_be(q + off, UIW_MSGF_REC_LEN);
		const uint8_t *seg = q + off + UIW_MSGF_REC_LEN +
				     UIW_MSGF_SSN_LEN;
		bool last;

		if (off + UIW_MSGF_REC_LEN + rl > len)
			break;
		last = rl <= UIW_MSGF_SSN_LEN || (seg[0] & UIW_DDP_L);
		recs[n++] = off;
		off += UIW_MSGF_REC_LEN + rl;
		if (!last && n < 512)
			continue;
		if (n > 1) {
			uint8_t *tmp = malloc(off - start);
			size_t w = 0;

			if (!tmp)
				abort();
			/* the last segment first, the others shuffled */
			order[0] = recs[n - 1];
			for (i = 1; i < n; i++)
				order[i] = recs[i - 1];
			for (i = n - 1; i > 1; i--) {
				unsigned j = 1 + (unsigned)(ep_rand(rng) % i);
				size_t t = order[i];

				order[i] = order[j];
				order[j] = t;
			}
			for (i = 0; i < n; i++) {
				size_t sz = UIW_MSGF_REC_LEN +
					    get_be(q + order[i],
						   UIW_MSGF_REC_LEN);

				memcpy(tmp + w, q + order[i], sz);
				w += sz;
			}
			memcpy(q + start, tmp, off - start);
			free(tmp);
		}
		n = 0;
		start = off;
	}
}

static size_t deliver(struct ep_pipe *p, struct ep_side *from,
		      struct ep_side *to)
{
	size_t n;

	if (!from->q_len)
		return 0;
	if (!to->attached || to->rx_stopped) {
		n = from->q_len;
		from->q_len = 0;
		return n;
	}
	if (ep_framing() == EP_FR_MSG_UNORDERED)
		reorder(from->q, from->q_len, &p->rng);
	n = ep_feed(to->qp, from->q, from->q_len, p->split, &p->rng,
		    p->rx_iov_max);
	if (n < from->q_len) {
		/* The receiver stopped reading: the rest is dropped, as an
		 * LLP that stops reading would. */
		to->rx_stopped = true;
		n = from->q_len;
	}
	from->q_len = 0;
	return n;
}

size_t ep_pump(struct ep_pipe *p)
{
	size_t total = 0, moved;

	do {
		moved = 0;
		if (p->a.attached)
			moved += ep_drain_tx(p, &p->a);
		moved += deliver(p, &p->a, &p->b);
		if (p->b.attached)
			moved += ep_drain_tx(p, &p->b);
		moved += deliver(p, &p->b, &p->a);
		total += moved;
	} while (moved);
	return total;
}

/* ---- Buffers and posting ------------------------------------------------- */

int ep_buf_reg(struct ep_buf *b, struct uiw_pd *pd, size_t len,
	       unsigned access)
{
	b->len = len;
	b->base = malloc(len + 2 * EP_GUARD);
	if (!b->base)
		return -1;
	memset(b->base, 0xee, len + 2 * EP_GUARD);
	b->p = b->base + EP_GUARD;
	memset(b->p, 0, len);
	b->mr = uiw_reg_mr(pd, b->p, len, access);
	return b->mr ? 0 : -1;
}

bool ep_buf_guards_ok(const struct ep_buf *b)
{
	size_t i;

	for (i = 0; i < EP_GUARD; i++)
		if (b->base[i] != 0xee || b->p[b->len + i] != 0xee)
			return false;
	return true;
}

void ep_buf_free(struct ep_buf *b)
{
	if (b->mr)
		uiw_dereg_mr(b->mr);
	/* Something was placed outside a registered region: fail loudly,
	 * whatever the test checked. */
	if (b->base && !ep_buf_guards_ok(b)) {
		fprintf(stderr, "engine_pipe: octets written around the "
			"registered region %p+%zu\n", (void *)b->p, b->len);
		abort();
	}
	free(b->base);
	memset(b, 0, sizeof(*b));
}

void ep_fill(uint8_t *p, size_t len, uint32_t seed)
{
	uint64_t s = seed * 2654435761u + 1;
	size_t i;

	for (i = 0; i < len; i++) {
		if ((i & 7) == 0)
			ep_rand(&s);
		p[i] = (uint8_t)(s >> ((i & 7) * 8));
	}
}

int ep_post_recv(struct uiw_qp *qp, uint64_t id, struct ep_buf *b,
		 size_t off, uint32_t len)
{
	struct uiw_sge sge = {
		.addr = (uint64_t)(uintptr_t)(b->p + off),
		.length = len,
		.lkey = b->mr->lkey,
	};
	struct uiw_recv_wr wr = {
		.wr_id = id,
		.sg_list = &sge,
		.num_sge = 1,
	};

	return uiw_post_recv(qp, &wr, NULL);
}

int ep_post_send(struct uiw_qp *qp, uint64_t id, enum uiw_wr_opcode op,
		 unsigned flags, struct ep_buf *b, size_t off, uint32_t len,
		 uint32_t rkey, uint64_t raddr, uint32_t inv)
{
	struct uiw_sge sge;
	struct uiw_send_wr wr;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = id;
	wr.opcode = op;
	wr.send_flags = flags;
	wr.invalidate_stag = inv;
	wr.wr.rdma.rkey = rkey;
	wr.wr.rdma.remote_addr = raddr;
	if (b && (len || op == UIW_WR_RDMA_READ)) {
		sge.addr = (uint64_t)(uintptr_t)(b->p + off);
		sge.length = len;
		sge.lkey = b->mr->lkey;
		wr.sg_list = &sge;
		wr.num_sge = 1;
	}
	return uiw_post_send(qp, &wr, NULL);
}

int ep_poll(struct uiw_cq *cq, struct uiw_wc *wc, int max)
{
	int n = 0, r;

	while (n < max) {
		r = uiw_cq_poll(cq, max - n, wc + n);
		if (r < 0)
			return n ? n : r;
		if (r == 0)
			break;
		n += r;
	}
	return n;
}

/* ---- Crafted frames ------------------------------------------------------ */

void ep_ulpdu_hdr(struct ep_ulpdu *u, const struct uiw_ddp_hdr *h)
{
	u->len = uiw_ddp_hdr_encode(u->b, h);
}

void ep_ulpdu_put(struct ep_ulpdu *u, const void *p, size_t len)
{
	memcpy(u->b + u->len, p, len);
	u->len += len;
}

size_t ep_fpdu(uint8_t *out, size_t cap, uint64_t pos,
	       const struct ep_ulpdu *u, bool markers, bool crc)
{
	size_t n = UIW_MSGF_REC_LEN + UIW_MSGF_SSN_LEN + u->len;
	uint32_t m = (uint32_t)(UIW_MSGF_SSN_LEN + u->len);
	int i;

	if (ep_framing() == EP_FR_MPA)
		return uiw_mpa_fpdu_encode(out, cap, pos, u->b,
					   (uint16_t)u->len, markers, crc);
	/* A message: the record, the DDP-SSN (not checked by the
	 * receiver: RFC 5043 §10 makes that a MAY), the segment. */
	if (n > cap)
		return 0;
	for (i = UIW_MSGF_REC_LEN - 1; i >= 0; i--, m >>= 8)
		out[i] = (uint8_t)m;
	out[UIW_MSGF_REC_LEN] = 0;
	out[UIW_MSGF_REC_LEN + 1] = 0;
	memcpy(out + UIW_MSGF_REC_LEN + UIW_MSGF_SSN_LEN, u->b, u->len);
	return n;
}

static void hdr_init(struct uiw_ddp_hdr *h, bool tagged, bool last,
		     uint8_t op)
{
	memset(h, 0, sizeof(*h));
	h->tagged = tagged;
	h->last = last;
	h->ddp_ver = UIW_DDP_VERSION;
	h->rdmap_ver = UIW_RDMAP_VERSION;
	h->opcode = op;
}

void ep_hdr_send(struct uiw_ddp_hdr *h, uint8_t op, uint32_t msn,
		 uint32_t mo, bool last, uint32_t inv)
{
	hdr_init(h, false, last, op);
	h->qn = 0;
	h->msn = msn;
	h->mo = mo;
	h->rsvd_ulp = inv;
}

void ep_hdr_write(struct uiw_ddp_hdr *h, uint8_t op, uint32_t stag,
		  uint64_t to, bool last)
{
	hdr_init(h, true, last, op);
	h->stag = stag;
	h->to = to;
}

void ep_hdr_untagged(struct uiw_ddp_hdr *h, uint8_t op, uint32_t qn,
		     uint32_t msn, uint32_t mo, bool last)
{
	hdr_init(h, false, last, op);
	h->qn = qn;
	h->msn = msn;
	h->mo = mo;
}

int ep_walk(const uint8_t *s, size_t len, bool markers, bool crc,
	    int (*fn)(void *arg, const uint8_t *u, uint16_t ulen), void *arg)
{
	static uint8_t u[65536];
	size_t off = 0;
	int count = 0;

	while (ep_framing() != EP_FR_MPA &&
	       off + UIW_MSGF_REC_LEN + UIW_MSGF_SSN_LEN <= len) {
		uint32_t rl = get_be(s + off, UIW_MSGF_REC_LEN);

		if (rl < UIW_MSGF_SSN_LEN || off + UIW_MSGF_REC_LEN + rl > len)
			return -1;
		count++;
		if (fn && fn(arg, s + off + UIW_MSGF_REC_LEN +
			     UIW_MSGF_SSN_LEN,
			     (uint16_t)(rl - UIW_MSGF_SSN_LEN)))
			return count;
		off += UIW_MSGF_REC_LEN + rl;
	}
	while (ep_framing() == EP_FR_MPA && off < len) {
		uint16_t ulen;
		size_t used;
		uiw_err_t e = uiw_mpa_fpdu_decode(s + off, len - off, off,
						  markers, crc, u, sizeof(u),
						  &ulen, &used);

		if (e != UIW_OK || used == 0)
			return -1;
		count++;
		if (fn && fn(arg, u, ulen))
			return count;
		off += used;
	}
	return count;
}

struct term_find {
	struct uiw_ddp_hdr *th;
	struct uiw_term *t;
	bool found;
};

static int term_fn(void *arg, const uint8_t *u, uint16_t ulen)
{
	struct term_find *tf = arg;
	size_t hl;

	if (uiw_ddp_hdr_decode(u, ulen, tf->th, &hl) != UIW_OK || !hl)
		return 0;
	if (tf->th->tagged || tf->th->opcode != UIW_OP_TERMINATE)
		return 0;
	uiw_term_decode(u + hl, ulen - hl, tf->t);
	tf->found = true;
	return 1;
}

int ep_find_term(const uint8_t *stream, size_t len, bool markers, bool crc,
		 struct uiw_ddp_hdr *th, struct uiw_term *t)
{
	struct term_find tf = { th, t, false };

	ep_walk(stream, len, markers, crc, term_fn, &tf);
	return tf.found ? 0 : -1;
}

static int count_fn(void *arg, const uint8_t *u, uint16_t ulen)
{
	unsigned *per = arg;

	if (ulen >= 2)
		per[u[1] & 0xf]++;
	return 0;
}

int ep_count_fpdus(const uint8_t *stream, size_t len, bool markers,
		   bool crc, unsigned per_opcode[16])
{
	memset(per_opcode, 0, 16 * sizeof(unsigned));
	return ep_walk(stream, len, markers, crc, count_fn, per_opcode);
}

static bool listed(const char *const *l, const char *name)
{
	for (; l && *l; l++)
		if (strcmp(*l, name) == 0)
			return true;
	return false;
}

static void say(const char *what, const char *const *l, size_t n)
{
	size_t k = 0;

	while (l && l[k])
		k++;
	printf("[  INFO    ] %zu of %zu tests %s:", k, n, what);
	for (; l && *l; l++)
		printf(" %s", *l);
	printf("\n");
}

int ep_run_tests(const char *name, const struct CMUnitTest *tests, size_t n,
		 const char *const *mpa_only, const char *const *ordered_only)
{
	int fr = ep_framing();
	struct CMUnitTest *run;
	size_t i, k = 0;
	int ret;

	if (fr == EP_FR_MPA)
		return _cmocka_run_group_tests(name, tests, n, NULL, NULL);
	run = calloc(n, sizeof(*run));
	if (!run)
		abort();
	for (i = 0; i < n; i++)
		if (!listed(mpa_only, tests[i].name) &&
		    !(fr == EP_FR_MSG_UNORDERED &&
		      listed(ordered_only, tests[i].name)))
			run[k++] = tests[i];
	/* Said, not hidden: these are about MPA itself (CRC, markers, the
	 * responder's hold, the byte stream's own calls), or about errors
	 * of order that an unordered framing does not make errors. */
	say("are about MPA and run over MPA only", mpa_only, n);
	if (fr == EP_FR_MSG_UNORDERED)
		say("check the order of segments and run in order only",
		    ordered_only, n);
	ret = _cmocka_run_group_tests(name, run, k, NULL, NULL);
	free(run);
	return ret;
}
