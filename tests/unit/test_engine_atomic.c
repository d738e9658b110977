/*
 * RFC 7306 through the engine, without sockets (engine_pipe.c): masked
 * and plain FetchAdd and CmpSwap end to end against the §5.1 pseudocode,
 * the wire format of every RFC 7306 message (queues, MSNs, Request
 * Identifiers, big-endian values), ORD and IRD shared with RDMA Reads,
 * the ordering rules of §5.4 and §7, Immediate Data and Write with
 * Immediate and their completions, every error of §8 with the Terminate
 * on the wire and the completions on both sides (through the API, with
 * frames changed on the wire, and crafted), a peer without RFC 7306
 * (siw's Terminate), and several QPs on several threads doing FetchAdds
 * and a CmpSwap lock on one device's memory at once.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "engine_pipe.h"
#include "wire/atomic.h"
#include "wire/mpa.h"

#define ACC_ALL (UIW_ACCESS_LOCAL_WRITE | UIW_ACCESS_REMOTE_WRITE | \
		 UIW_ACCESS_REMOTE_READ | UIW_ACCESS_REMOTE_ATOMIC)

/* ---- Reference models: the pseudocode of §5.1.1 and §5.1.2 -------------- */

static uint64_t ref_fetchadd(uint64_t orig, uint64_t add, uint64_t mask)
{
	uint64_t out = 0, carry = 0;
	unsigned bit;

	/* bit by bit; the carry out of a bit set in the Add Mask is
	 * dropped */
	for (bit = 0; bit < 64; bit++) {
		uint64_t s = carry + (orig >> bit & 1) + (add >> bit & 1);

		out |= (s & 1) << bit;
		carry = (s >> 1) && !(mask >> bit & 1);
	}
	return out;
}

static uint64_t ref_cmpswap(uint64_t orig, uint64_t cmp, uint64_t cmask,
			    uint64_t swap, uint64_t smask)
{
	if (((cmp ^ orig) & cmask) == 0)
		return (orig & ~smask) | (swap & smask);
	return orig;
}

static uint64_t rng = 0x243f6a8885a308d3ull;

static uint64_t rnd(void)
{
	return ep_rand(&rng);
}

/* ---- Helpers ------------------------------------------------------------- */

static struct uiw_qp_attr qattr(struct uiw_qp *qp)
{
	struct uiw_qp_attr a;

	assert_int_equal(uiw_qp_query(qp, &a), 0);
	return a;
}

static void state_is(struct uiw_qp *qp, enum uiw_qp_state s)
{
	struct uiw_qp_attr a = qattr(qp);

	if (a.state != s)
		print_error("qp %u is %s, expected %s (%s)\n", a.qp_num,
			    uiw_qp_state_str(a.state), uiw_qp_state_str(s),
			    a.term_msg);
	assert_int_equal(a.state, s);
}

static void cause_is(struct uiw_qp *qp, uiw_err_t e, int origin)
{
	struct uiw_qp_attr a = qattr(qp);

	if (a.term.origin != origin || a.term.layer != UIW_ERR_LAYER(e) ||
	    a.term.etype != UIW_ERR_ETYPE(e) ||
	    a.term.ecode != UIW_ERR_ECODE(e))
		print_error("qp %u: cause \"%s\", expected %s (origin %d)\n",
			    a.qp_num, a.term_msg, uiw_err_str(e), origin);
	assert_int_equal(a.term.origin, origin);
	assert_int_equal(a.term.layer, UIW_ERR_LAYER(e));
	assert_int_equal(a.term.etype, UIW_ERR_ETYPE(e));
	assert_int_equal(a.term.ecode, UIW_ERR_ECODE(e));
}

static void term_cause_is(const struct uiw_term_cause *c, uiw_err_t e,
			  int origin)
{
	assert_int_equal(c->origin, origin);
	assert_int_equal(c->layer, UIW_ERR_LAYER(e));
	assert_int_equal(c->etype, UIW_ERR_ETYPE(e));
	assert_int_equal(c->ecode, UIW_ERR_ECODE(e));
}

/* One decoded FPDU of a captured stream. */
struct seg {
	struct uiw_ddp_hdr h;
	size_t hl;
	uint16_t ulen;
	uint8_t u[65536];
};

struct segs_walk {
	struct seg *out;
	int n, max;
};

static int seg_fn(void *arg, const uint8_t *u, uint16_t ulen)
{
	struct segs_walk *w = arg;
	struct seg *g;

	if (w->n >= w->max)
		return 1;
	g = &w->out[w->n++];
	memcpy(g->u, u, ulen);
	g->ulen = ulen;
	assert_int_equal(uiw_ddp_hdr_decode(g->u, g->ulen, &g->h, &g->hl),
			 UIW_OK);
	assert_true(g->hl > 0);
	return 0;
}

/* Decodes every segment of a stream (from octet 0); returns the count. */
static int segs_of(const uint8_t *s, size_t len, bool markers, bool crc,
		   struct seg *out, int max)
{
	struct segs_walk w = { out, 0, max };

	assert_true(ep_walk(s, len, markers, crc, seg_fn, &w) >= 0);
	return w.n;
}

static struct seg *seg_alloc(int n)
{
	struct seg *g = calloc((size_t)n, sizeof(*g));

	assert_non_null(g);
	return g;
}

/* The side's Terminate must be exactly this. */
struct texp {
	uiw_err_t err;
	bool m, d;
	uint16_t seg_len;
	const uint8_t *hdr;     /* expected copied DDP header (18) or NULL */
};

static void term_is(struct ep_pipe *p, struct ep_side *s, bool markers,
		    bool crc, const struct texp *x)
{
	struct uiw_ddp_hdr th;
	struct uiw_term t;
	unsigned per[16];

	ep_drain_tx(p, s);
	assert_int_equal(ep_find_term(s->out, s->out_len, markers, crc, &th,
				      &t), 0);
	assert_true(ep_count_fpdus(s->out, s->out_len, markers, crc,
				   per) >= 1);
	assert_int_equal(per[UIW_OP_TERMINATE], 1);
	assert_false(th.tagged);
	assert_int_equal(th.qn, UIW_QN_TERMINATE);
	if (t.err != x->err)
		print_error("Terminate: %s, expected %s\n",
			    uiw_err_str(t.err), uiw_err_str(x->err));
	assert_int_equal(t.err, x->err);
	assert_int_equal(t.m, x->m);
	assert_int_equal(t.d, x->d);
	/* RFC 7306 §8.1 rule 2: never an RDMA header */
	assert_false(t.r);
	if (x->m)
		assert_int_equal(t.ddp_seg_len, x->seg_len);
	if (x->d && x->hdr) {
		assert_int_equal(t.ddp_hdr_len, UIW_DDP_UNTAGGED_HDR_LEN);
		assert_memory_equal(t.ddp_hdr, x->hdr,
				    UIW_DDP_UNTAGGED_HDR_LEN);
	}
	state_is(s->qp, UIW_QPS_ERROR);
	cause_is(s->qp, x->err, UIW_TERM_LOCAL);
}

/* Polls exactly n completions; checks ids, statuses and opcodes
 * (opcode < 0: any). */
static void wcs_are(struct uiw_cq *cq, int n, const uint64_t *ids,
		    const int *st, const int *op, struct uiw_wc *out)
{
	struct uiw_wc wc[64];
	int i, got = ep_poll(cq, wc, 64);

	if (got != n)
		print_error("%d completions, expected %d\n", got, n);
	assert_int_equal(got, n);
	for (i = 0; i < n; i++) {
		if (wc[i].wr_id != ids[i] || (int)wc[i].status != st[i])
			print_error("wc %d: id %llu %s, expected %llu %s\n", i,
				    (unsigned long long)wc[i].wr_id,
				    uiw_wc_status_str(wc[i].status),
				    (unsigned long long)ids[i],
				    uiw_wc_status_str(st[i]));
		assert_int_equal(wc[i].wr_id, ids[i]);
		assert_int_equal(wc[i].status, st[i]);
		if (op && op[i] >= 0)
			assert_int_equal(wc[i].opcode, op[i]);
		if (out)
			out[i] = wc[i];
	}
}

static int post_atomic(struct uiw_qp *qp, uint64_t id, enum uiw_wr_opcode op,
		       unsigned flags, struct ep_buf *res, size_t off,
		       uint32_t rkey, uint64_t raddr, uint64_t ca,
		       uint64_t swap, uint64_t cam, uint64_t sm)
{
	struct uiw_sge sge = {
		.addr = (uint64_t)(uintptr_t)(res->p + off),
		.length = 8,
		.lkey = res->mr->lkey,
	};
	struct uiw_send_wr wr;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = id;
	wr.opcode = op;
	wr.send_flags = flags;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.wr.atomic.remote_addr = raddr;
	wr.wr.atomic.rkey = rkey;
	wr.wr.atomic.compare_add = ca;
	wr.wr.atomic.swap = swap;
	wr.wr.atomic.compare_add_mask = cam;
	wr.wr.atomic.swap_mask = sm;
	return uiw_post_send(qp, &wr, NULL);
}

static int post_fadd(struct uiw_qp *qp, uint64_t id, struct ep_buf *res,
		     size_t off, struct ep_buf *tgt, size_t toff, uint64_t add)
{
	return post_atomic(qp, id, UIW_WR_ATOMIC_FETCH_ADD, 0, res, off,
			   tgt->mr->rkey, (uint64_t)(uintptr_t)(tgt->p + toff),
			   add, 0, 0, 0);
}

static int post_cswap(struct uiw_qp *qp, uint64_t id, struct ep_buf *res,
		      size_t off, struct ep_buf *tgt, size_t toff,
		      uint64_t cmp, uint64_t swap)
{
	return post_atomic(qp, id, UIW_WR_ATOMIC_CMP_SWP, 0, res, off,
			   tgt->mr->rkey, (uint64_t)(uintptr_t)(tgt->p + toff),
			   cmp, swap, 0, 0);
}

static int post_imm(struct uiw_qp *qp, uint64_t id, unsigned flags,
		    uint64_t imm)
{
	struct uiw_send_wr wr;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = id;
	wr.opcode = UIW_WR_IMMEDIATE;
	wr.send_flags = flags;
	wr.imm_data = imm;
	return uiw_post_send(qp, &wr, NULL);
}

static int post_write_imm(struct uiw_qp *qp, uint64_t id, unsigned flags,
			  struct ep_buf *src, size_t off, uint32_t len,
			  struct ep_buf *tgt, size_t toff, uint64_t imm)
{
	struct uiw_sge sge = {
		.addr = (uint64_t)(uintptr_t)(src->p + off),
		.length = len,
		.lkey = src->mr->lkey,
	};
	struct uiw_send_wr wr;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = id;
	wr.opcode = UIW_WR_RDMA_WRITE_WITH_IMM;
	wr.send_flags = flags;
	wr.imm_data = imm;
	wr.sg_list = len ? &sge : NULL;
	wr.num_sge = len ? 1 : 0;
	wr.wr.rdma.rkey = tgt->mr->rkey;
	wr.wr.rdma.remote_addr = (uint64_t)(uintptr_t)(tgt->p + toff);
	return uiw_post_send(qp, &wr, NULL);
}

static uint64_t word(const struct ep_buf *b, size_t off)
{
	uint64_t v;

	memcpy(&v, b->p + off, 8);
	return v;
}

static void set_word(struct ep_buf *b, size_t off, uint64_t v)
{
	memcpy(b->p + off, &v, 8);
}

/* A pair: a requests, b responds. */
struct ax {
	struct ep_pipe p;
	bool markers, crc;
	struct ep_buf res;      /* a: results, 8-octet slots */
	struct ep_buf src;      /* a: Write sources, Read sinks */
	struct ep_buf arcv;     /* a: receive buffers */
	struct ep_buf tgt;      /* b: the targets */
	struct ep_buf brcv;     /* b: receive buffers */
};

#define SRC_LEN (1u << 20)

static void ax_open_cfg(struct ax *x, const struct ep_cfg *cfg,
			unsigned tgt_access, bool attach)
{
	memset(x, 0, sizeof(*x));
	x->markers = cfg->markers;
	x->crc = cfg->crc;
	if (attach)
		assert_int_equal(ep_open(&x->p, cfg), 0);
	else
		assert_int_equal(ep_open_idle(&x->p, cfg), 0);
	assert_int_equal(ep_buf_reg(&x->res, x->p.a.pd, 4096,
				    UIW_ACCESS_LOCAL_WRITE), 0);
	assert_int_equal(ep_buf_reg(&x->src, x->p.a.pd, SRC_LEN,
				    UIW_ACCESS_LOCAL_WRITE), 0);
	assert_int_equal(ep_buf_reg(&x->arcv, x->p.a.pd, 4096,
				    UIW_ACCESS_LOCAL_WRITE), 0);
	assert_int_equal(ep_buf_reg(&x->tgt, x->p.b.pd, SRC_LEN, tgt_access),
			 0);
	assert_int_equal(ep_buf_reg(&x->brcv, x->p.b.pd, 4096,
				    UIW_ACCESS_LOCAL_WRITE), 0);
	memset(x->res.p, 0xa5, 4096);
	memset(x->brcv.p, 0x77, 4096);
	memset(x->tgt.p, 0x3c, SRC_LEN);
}

static void ax_open(struct ax *x, bool markers, bool crc, unsigned access)
{
	struct ep_cfg cfg = { .crc = crc, .markers = markers, .mulpdu = 512,
			      .ird = 8, .ord = 8 };

	ax_open_cfg(x, &cfg, access, true);
}

static void ax_close(struct ax *x)
{
	ep_buf_free(&x->res);
	ep_buf_free(&x->src);
	ep_buf_free(&x->arcv);
	ep_buf_free(&x->tgt);
	ep_buf_free(&x->brcv);
	assert_int_equal(ep_close(&x->p), 0);
}

/* ---- Device and posting -------------------------------------------------- */

static void test_caps_and_posting(void **state)
{
	struct uiw_device_attr at;
	struct uiw_send_wr wr, *bad;
	struct uiw_sge sge;
	struct ep_buf ro;
	struct ax x;

	(void)state;
	ax_open(&x, false, true, ACC_ALL);
	assert_int_equal(uiw_device_query(x.p.a.dev, &at), 0);
	assert_int_equal(at.cap_flags & (UIW_DEV_CAP_ATOMIC |
					 UIW_DEV_CAP_IMM_DATA),
			 UIW_DEV_CAP_ATOMIC | UIW_DEV_CAP_IMM_DATA);
	assert_int_equal(ep_buf_reg(&ro, x.p.a.pd, 64, 0), 0);

	sge = (struct uiw_sge){ (uintptr_t)x.res.p, 8, x.res.mr->lkey };
	memset(&wr, 0, sizeof(wr));
	wr.opcode = UIW_WR_ATOMIC_FETCH_ADD;
	wr.sg_list = &sge;
	wr.wr.atomic.rkey = x.tgt.mr->rkey;
	wr.wr.atomic.remote_addr = (uintptr_t)x.tgt.p;
	/* exactly one SGE of 8 writable octets */
	wr.num_sge = 0;
	assert_int_equal(uiw_post_send(x.p.a.qp, &wr, &bad), -EINVAL);
	assert_ptr_equal(bad, &wr);
	assert_non_null(strstr(uiw_last_error(), "one SGE"));
	wr.num_sge = 2;
	assert_int_equal(uiw_post_send(x.p.a.qp, &wr, NULL), -EINVAL);
	wr.num_sge = 1;
	sge.length = 16;
	assert_int_equal(uiw_post_send(x.p.a.qp, &wr, NULL), -EINVAL);
	assert_non_null(strstr(uiw_last_error(), "8 octets"));
	sge.length = 4;
	wr.opcode = UIW_WR_ATOMIC_CMP_SWP;
	assert_int_equal(uiw_post_send(x.p.a.qp, &wr, NULL), -EINVAL);
	sge = (struct uiw_sge){ (uintptr_t)ro.p, 8, ro.mr->lkey };
	assert_int_equal(uiw_post_send(x.p.a.qp, &wr, NULL), -EINVAL);
	assert_non_null(strstr(uiw_last_error(), "access"));
	sge = (struct uiw_sge){ (uintptr_t)x.res.p, 8, x.res.mr->lkey ^ 1 };
	assert_int_equal(uiw_post_send(x.p.a.qp, &wr, NULL), -EINVAL);
	sge.lkey = x.res.mr->lkey;
	wr.send_flags = UIW_SEND_INLINE;
	assert_int_equal(uiw_post_send(x.p.a.qp, &wr, NULL), -EINVAL);
	/* the masked flag belongs to atomics */
	wr.send_flags = UIW_SEND_ATOMIC_MASKED;
	wr.opcode = UIW_WR_SEND;
	assert_int_equal(uiw_post_send(x.p.a.qp, &wr, NULL), -EINVAL);
	assert_non_null(strstr(uiw_last_error(), "MASKED"));
	wr.opcode = UIW_WR_IMMEDIATE;
	assert_int_equal(uiw_post_send(x.p.a.qp, &wr, NULL), -EINVAL);
	/* Immediate Data has no payload */
	wr.send_flags = 0;
	assert_int_equal(uiw_post_send(x.p.a.qp, &wr, NULL), -EINVAL);
	assert_non_null(strstr(uiw_last_error(), "no payload"));
	/* nothing was posted */
	ep_pump(&x.p);
	assert_int_equal(ep_poll(x.p.a.cq, (struct uiw_wc[4]){ 0 }, 4), 0);
	assert_int_equal(x.p.a.out_len, 0);
	ep_buf_free(&ro);
	ax_close(&x);

	/* ORD 0: no atomic may be posted once the QP is in RTS. */
	{
		struct ep_cfg cfg = { .crc = true, .mulpdu = 512 };

		ax_open_cfg(&x, &cfg, ACC_ALL, false);
		x.p.a.lp.ord = 0;
		assert_int_equal(ep_attach(&x.p), 0);
		assert_int_equal(post_fadd(x.p.a.qp, 1, &x.res, 0, &x.tgt, 0,
					   1), -EINVAL);
		assert_non_null(strstr(uiw_last_error(), "ORD 0"));
		ax_close(&x);
	}
}

/* ---- Arithmetic end to end ------------------------------------------------ */

struct arow {
	enum uiw_wr_opcode op;
	bool masked;
	uint64_t orig, ca, swap, cam, sm;
	uint64_t want;          /* the word afterwards */
};

#define FA UIW_WR_ATOMIC_FETCH_ADD
#define CS UIW_WR_ATOMIC_CMP_SWP

static const struct arow rows[] = {
	/* plain fetch-and-add: one 64-bit field; masks ignored */
	{ FA, false, 5, 7, 0, 0, 0, 12 },
	{ FA, false, UINT64_MAX, 1, 0, 0, 0, 0 },
	{ FA, false, 0xffffffffull, 1, 0, 0, 0, 0x100000000ull },
	{ FA, false, 0xffffffffull, 1, 0xdead, 0x8000000080000000ull,
	  UINT64_MAX, 0x100000000ull },
	{ FA, false, 0x123456789abcdef0ull, 0, 0, 0, 0,
	  0x123456789abcdef0ull },
	/* masked: two 32-bit fields, the low one's carry is dropped */
	{ FA, true, 0x00000001ffffffffull, 0x0000000100000001ull, 0,
	  0x8000000080000000ull, 0, 0x0000000200000000ull },
	/* eight 8-bit fields */
	{ FA, true, 0xff01ff01ff01ff01ull, 0x0101010101010101ull, 0,
	  0x8080808080808080ull, 0, 0x0002000200020002ull },
	/* four 16-bit fields with carries at every boundary */
	{ FA, true, 0x7fff8000ffff0001ull, 0x0001800000010001ull, 0,
	  0x8000800080008000ull, 0, 0x8000000000000002ull },
	/* a one-bit field at bit 0 and a 63-bit one above it */
	{ FA, true, 1, 1, 0, 0x8000000000000001ull, 0, 0 },
	{ FA, true, 0x7fffffffffffffffull, 1, 0, 0x8000000000000001ull, 0,
	  0x7ffffffffffffffeull },
	/* Add Mask 0 in the masked form is the plain addition */
	{ FA, true, 0xffffffffull, 1, 0, 0, 0, 0x100000000ull },
	/* plain compare-and-swap; masks ignored */
	{ CS, false, 10, 10, 20, 0, 0, 20 },
	{ CS, false, 10, 11, 20, 0, 0, 10 },
	{ CS, false, 10, 10, 20, 0x1, 0x1, 20 },
	{ CS, false, UINT64_MAX, UINT64_MAX, 0, 0, 0, 0 },
	/* masked: compare the low octet, swap the high half */
	{ CS, true, 0x1234567800000042ull, 0x42, 0xdeadbeef00000000ull, 0xff,
	  0xffffffff00000000ull, 0xdeadbeef00000042ull },
	/* masked mismatch: nothing changes */
	{ CS, true, 0x1234567800000042ull, 0x4200, 0xdeadbeef00000000ull,
	  0xff00, 0xffffffff00000000ull, 0x1234567800000042ull },
	/* Compare Mask 0 always matches */
	{ CS, true, 0xf0, 0x12345, 0xff, 0, 0x0f, 0xff },
	/* Swap Mask 0 changes nothing even when it matches */
	{ CS, true, 0xf0, 0xf0, 0xff, UINT64_MAX, 0, 0xf0 },
	/* all-ones masks are the plain form */
	{ CS, true, 7, 7, 9, UINT64_MAX, UINT64_MAX, 9 },
};

#define NROWS (sizeof(rows) / sizeof(rows[0]))
#define NRAND 200

static uint64_t row_ref(const struct arow *r)
{
	if (r->op == FA)
		return ref_fetchadd(r->orig, r->ca, r->masked ? r->cam : 0);
	return ref_cmpswap(r->orig, r->ca, r->masked ? r->cam : UINT64_MAX,
			   r->swap, r->masked ? r->sm : UINT64_MAX);
}

/* Runs rows through a -> b in batches; each row has its own word. */
static void run_rows(struct ax *x, const struct arow *rs, size_t n)
{
	struct uiw_wc wc[64];
	size_t i = 0;

	while (i < n) {
		size_t k, batch = n - i < 32 ? n - i : 32;
		int got = 0;

		for (k = 0; k < batch; k++) {
			const struct arow *r = &rs[i + k];

			set_word(&x->tgt, 8 * (i + k), r->orig);
			set_word(&x->res, 8 * k, 0xa5a5a5a5a5a5a5a5ull);
			assert_int_equal(post_atomic(x->p.a.qp, i + k, r->op,
					 r->masked ? UIW_SEND_ATOMIC_MASKED
						   : 0,
					 &x->res, 8 * k, x->tgt.mr->rkey,
					 (uintptr_t)(x->tgt.p + 8 * (i + k)),
					 r->ca, r->swap, r->cam, r->sm), 0);
		}
		ep_pump(&x->p);
		got = ep_poll(x->p.a.cq, wc, 64);
		assert_int_equal(got, (int)batch);
		for (k = 0; k < batch; k++) {
			const struct arow *r = &rs[i + k];
			uint64_t want = row_ref(r);

			/* §5.4: completions in order, after the value is
			 * in the local buffer */
			assert_int_equal(wc[k].wr_id, i + k);
			assert_int_equal(wc[k].status, UIW_WC_SUCCESS);
			assert_int_equal(wc[k].opcode, r->op == FA ?
					 UIW_WC_FETCH_ADD : UIW_WC_CMP_SWP);
			assert_int_equal(wc[k].byte_len, 8);
			assert_int_equal(word(&x->res, 8 * k), r->orig);
			if (word(&x->tgt, 8 * (i + k)) != want)
				print_error("row %zu: 0x%016llx, expected "
					    "0x%016llx\n", i + k,
					    (unsigned long long)word(&x->tgt,
							8 * (i + k)),
					    (unsigned long long)want);
			assert_int_equal(word(&x->tgt, 8 * (i + k)), want);
		}
		i += batch;
	}
}

static void test_arith_table(void **state)
{
	struct arow rnd_rows[NRAND];
	struct ax x;
	size_t i;

	(void)state;
	/* the table agrees with the pseudocode */
	for (i = 0; i < NROWS; i++)
		assert_int_equal(row_ref(&rows[i]), rows[i].want);
	for (i = 0; i < NRAND; i++) {
		struct arow *r = &rnd_rows[i];

		r->op = i & 1 ? CS : FA;
		r->masked = i % 4 != 0;
		r->orig = rnd() & (i & 2 ? rnd() : UINT64_MAX);
		r->ca = i % 5 == 1 ? r->orig : rnd();
		r->swap = rnd();
		r->cam = rnd() & rnd();
		r->sm = rnd();
		r->want = row_ref(r);
	}
	/* every split, markers and CRC on and off */
	ax_open(&x, false, true, ACC_ALL);
	run_rows(&x, rows, NROWS);
	run_rows(&x, rnd_rows, NRAND);
	ax_close(&x);
	ax_open(&x, true, false, ACC_ALL);
	x.p.split = 1;
	run_rows(&x, rows, NROWS);
	ax_close(&x);
	ax_open(&x, true, true, ACC_ALL);
	x.p.split = 0;
	x.p.tx_partial = true;
	run_rows(&x, rnd_rows, NRAND);
	ax_close(&x);
}

/* ---- The wire ------------------------------------------------------------ */

static void test_wire_format(void **state)
{
	struct seg *g = seg_alloc(64);
	struct uiw_atomic_req rq[2];
	struct uiw_atomic_resp rs;
	uint32_t q1_msn = 1, q3_msn = 1, q0_msn = 1;
	int n, i, nreq = 0, nresp = 0, nimm = 0;
	struct ax x;
	uint64_t v;

	(void)state;
	ax_open(&x, false, true, ACC_ALL);
	set_word(&x.tgt, 0, 0x0102030405060708ull);
	/* queue 1: Read, FetchAdd, Read, CmpSwap share the MSNs */
	assert_int_equal(ep_post_send(x.p.a.qp, 1, UIW_WR_RDMA_READ, 0,
				      &x.src, 0, 8, x.tgt.mr->rkey,
				      (uintptr_t)x.tgt.p, 0), 0);
	assert_int_equal(post_fadd(x.p.a.qp, 2, &x.res, 0, &x.tgt, 0, 0x10),
			 0);
	assert_int_equal(ep_post_send(x.p.a.qp, 3, UIW_WR_RDMA_READ, 0,
				      &x.src, 8, 8, x.tgt.mr->rkey,
				      (uintptr_t)x.tgt.p, 0), 0);
	assert_int_equal(post_cswap(x.p.a.qp, 4, &x.res, 8, &x.tgt, 0,
				    0x0102030405060718ull, 77), 0);
	/* queue 0: Send, Immediate Data, Write with Immediate, Send */
	assert_int_equal(ep_post_recv(x.p.b.qp, 10, &x.brcv, 0, 64), 0);
	assert_int_equal(ep_post_recv(x.p.b.qp, 11, &x.brcv, 64, 64), 0);
	assert_int_equal(ep_post_recv(x.p.b.qp, 12, &x.brcv, 128, 0), 0);
	assert_int_equal(ep_post_recv(x.p.b.qp, 13, &x.brcv, 192, 64), 0);
	assert_int_equal(ep_post_send(x.p.a.qp, 5, UIW_WR_SEND, 0, &x.src, 0,
				      16, 0, 0, 0), 0);
	assert_int_equal(post_imm(x.p.a.qp, 6, UIW_SEND_SOLICITED,
				  0x1122334455667788ull), 0);
	assert_int_equal(post_write_imm(x.p.a.qp, 7, 0, &x.src, 0, 600,
					&x.tgt, 4096, 0x99aabbccddeeff00ull),
			 0);
	assert_int_equal(ep_post_send(x.p.a.qp, 8, UIW_WR_SEND, 0, &x.src, 0,
				      16, 0, 0, 0), 0);
	ep_pump(&x.p);
	assert_int_equal(ep_poll(x.p.a.cq, (struct uiw_wc[16]){ 0 }, 16), 8);
	assert_int_equal(ep_poll(x.p.b.cq, (struct uiw_wc[16]){ 0 }, 16), 4);

	n = segs_of(x.p.a.out, x.p.a.out_len, false, true, g, 64);
	for (i = 0; i < n; i++) {
		const struct uiw_ddp_hdr *h = &g[i].h;
		const uint8_t *pl = g[i].u + g[i].hl;
		size_t plen = g[i].ulen - g[i].hl;

		if (h->tagged)
			continue;
		if (h->qn == UIW_QN_READ_REQ) {
			assert_int_equal(h->msn, q1_msn++);
			assert_true(h->last);
			if (h->opcode != UIW_OP_ATOMIC_REQ) {
				assert_int_equal(h->opcode, UIW_OP_READ_REQ);
				continue;
			}
			/* §5.2.1, Figure 4: 52 octets, reserved zero */
			assert_int_equal(plen, UIW_ATOMIC_REQ_LEN);
			assert_int_equal(h->rsvd_ulp, 0);
			assert_int_equal(pl[0] | pl[1] | pl[2] | (pl[3] & 0xf0),
					 0);
			assert_int_equal(uiw_atomic_req_decode(pl, plen,
							       &rq[nreq]),
					 UIW_OK);
			nreq++;
		} else if (h->qn == UIW_QN_SEND) {
			assert_int_equal(h->msn, q0_msn++);
			if (h->opcode == UIW_OP_IMM ||
			    h->opcode == UIW_OP_IMM_SE) {
				/* §6.2: 8 big-endian octets */
				assert_int_equal(plen, 8);
				assert_int_equal(h->rsvd_ulp, 0);
				assert_true(h->last);
				assert_int_equal(h->mo, 0);
				assert_int_equal(h->opcode, nimm ?
						 UIW_OP_IMM : UIW_OP_IMM_SE);
				assert_memory_equal(pl, nimm ?
					"\x99\xaa\xbb\xcc\xdd\xee\xff\x00" :
					"\x11\x22\x33\x44\x55\x66\x77\x88", 8);
				/* the Write of the second one came first */
				if (nimm)
					assert_true(g[i - 1].h.tagged &&
						    g[i - 1].h.last &&
						    g[i - 1].h.opcode ==
						    UIW_OP_WRITE);
				nimm++;
			}
		}
	}
	assert_int_equal(nreq, 2);
	assert_int_equal(nimm, 2);
	assert_int_equal(q1_msn, 5);
	assert_int_equal(q0_msn, 5);
	/* plain FetchAdd: Compare zero, Compare Mask ones, Add Mask zero */
	assert_int_equal(rq[0].aopcode, UIW_AOP_FETCH_ADD);
	assert_int_equal(rq[0].add_swap, 0x10);
	assert_int_equal(rq[0].add_swap_mask, 0);
	assert_int_equal(rq[0].compare, 0);
	assert_int_equal(rq[0].compare_mask, UINT64_MAX);
	assert_int_equal(rq[0].stag, x.tgt.mr->rkey);
	assert_int_equal(rq[0].to, (uintptr_t)x.tgt.p);
	/* plain CmpSwap: both masks all ones */
	assert_int_equal(rq[1].aopcode, UIW_AOP_CMP_SWAP);
	assert_int_equal(rq[1].compare_mask, UINT64_MAX);
	assert_int_equal(rq[1].add_swap_mask, UINT64_MAX);
	assert_int_equal(rq[1].add_swap, 77);
	assert_int_not_equal(rq[0].req_id, rq[1].req_id);

	/* b answers in Request order: Read, atomic, Read, atomic */
	n = segs_of(x.p.b.out, x.p.b.out_len, false, true, g, 64);
	{
		static const uint8_t want[] = { UIW_OP_READ_RESP,
						UIW_OP_ATOMIC_RESP,
						UIW_OP_READ_RESP,
						UIW_OP_ATOMIC_RESP };
		int k = 0;

		for (i = 0; i < n; i++) {
			const struct uiw_ddp_hdr *h = &g[i].h;
			const uint8_t *pl = g[i].u + g[i].hl;

			assert_true(k < 4);
			assert_int_equal(h->opcode, want[k]);
			k++;
			if (h->opcode != UIW_OP_ATOMIC_RESP)
				continue;
			assert_false(h->tagged);
			assert_true(h->last);
			assert_int_equal(h->qn, UIW_QN_ATOMIC_RESP);
			assert_int_equal(h->msn, q3_msn++);
			assert_int_equal(h->mo, 0);
			assert_int_equal(h->rsvd_ulp, 0);
			assert_int_equal(g[i].ulen - g[i].hl,
					 UIW_ATOMIC_RESP_LEN);
			assert_int_equal(uiw_atomic_resp_decode(pl,
					 UIW_ATOMIC_RESP_LEN, &rs), UIW_OK);
			assert_int_equal(rs.req_id, rq[nresp].req_id);
			/* big-endian on the wire */
			v = nresp ? 0x0102030405060718ull
				  : 0x0102030405060708ull;
			assert_memory_equal(pl + 4, nresp ?
				"\x01\x02\x03\x04\x05\x06\x07\x18" :
				"\x01\x02\x03\x04\x05\x06\x07\x08", 8);
			assert_int_equal(rs.orig_value, v);
			nresp++;
		}
		assert_int_equal(k, 4);
	}
	assert_int_equal(nresp, 2);
	/* Read 1 saw the old value, Read 2 the FetchAdd's; the CmpSwap
	 * matched */
	assert_int_equal(word(&x.src, 0), 0x0102030405060708ull);
	assert_int_equal(word(&x.src, 8), 0x0102030405060718ull);
	assert_int_equal(word(&x.tgt, 0), 77);
	assert_int_equal(word(&x.res, 0), 0x0102030405060708ull);
	assert_int_equal(word(&x.res, 8), 0x0102030405060718ull);
	ax_close(&x);
	free(g);
}

/* ORD and IRD count Reads and atomics together (RFC 7306 §5.2). */
static void test_ord_ird_shared(void **state)
{
	struct ep_cfg cfg = { .crc = true, .mulpdu = 512, .ird = 2, .ord = 2 };
	uint64_t ids[6] = { 1, 2, 3, 4, 5, 6 };
	int st[6] = { 0 }, op[6];
	struct seg *g = seg_alloc(16);
	unsigned per[16];
	struct ax x;
	int i;

	(void)state;
	ax_open_cfg(&x, &cfg, ACC_ALL, true);
	for (i = 0; i < 6; i++) {
		if (i % 3 == 1) {
			assert_int_equal(ep_post_send(x.p.a.qp, ids[i],
					 UIW_WR_RDMA_READ, 0, &x.src, 8 * i, 8,
					 x.tgt.mr->rkey, (uintptr_t)x.tgt.p,
					 0), 0);
			op[i] = UIW_WC_RDMA_READ;
		} else {
			assert_int_equal(post_fadd(x.p.a.qp, ids[i], &x.res,
						   8 * i, &x.tgt, 0, 1), 0);
			op[i] = UIW_WC_FETCH_ADD;
		}
	}
	/* Only ORD requests go out before a Response comes back. */
	ep_drain_tx(&x.p, &x.p.a);
	ep_count_fpdus(x.p.a.out, x.p.a.out_len, false, true, per);
	assert_int_equal(per[UIW_OP_ATOMIC_REQ] + per[UIW_OP_READ_REQ], 2);
	ep_pump(&x.p);
	wcs_are(x.p.a.cq, 6, ids, st, op, NULL);
	ep_count_fpdus(x.p.a.out, x.p.a.out_len, false, true, per);
	assert_int_equal(per[UIW_OP_ATOMIC_REQ], 4);
	assert_int_equal(per[UIW_OP_READ_REQ], 2);
	assert_int_equal(word(&x.tgt, 0) & 0xff, 0x3c + 4);
	ax_close(&x);

	/* A peer beyond our IRD: the atomic finds no queue-1 buffer. */
	ax_open_cfg(&x, &cfg, ACC_ALL, false);
	x.p.a.lp.ord = 3;
	assert_int_equal(ep_attach(&x.p), 0);
	assert_int_equal(ep_post_recv(x.p.b.qp, 50, &x.brcv, 0, 64), 0);
	assert_int_equal(ep_post_send(x.p.a.qp, 1, UIW_WR_RDMA_READ, 0,
				      &x.src, 0, 8, x.tgt.mr->rkey,
				      (uintptr_t)x.tgt.p, 0), 0);
	assert_int_equal(post_fadd(x.p.a.qp, 2, &x.res, 0, &x.tgt, 0, 1), 0);
	assert_int_equal(post_fadd(x.p.a.qp, 3, &x.res, 8, &x.tgt, 0, 1), 0);
	ep_drain_tx(&x.p, &x.p.a);
	{
		int n = segs_of(x.p.a.out, x.p.a.out_len, false, true, g, 16);
		struct texp t = { UIW_E_DDP_U_MSN_NO_BUF, true, true,
				  18 + 52, g[n - 1].u };

		assert_int_equal(n, 3);
		assert_int_equal(g[2].h.msn, 3);
		ep_pump(&x.p);
		term_is(&x.p, &x.p.b, false, true, &t);
	}
	/* the third request is the one the Terminate names; the others
	 * are flushed */
	wcs_are(x.p.a.cq, 3, ids, (int[]){ UIW_WC_WR_FLUSH_ERR,
		UIW_WC_WR_FLUSH_ERR, UIW_WC_REM_OP_ERR },
		(int[]){ UIW_WC_RDMA_READ, UIW_WC_FETCH_ADD,
			 UIW_WC_FETCH_ADD }, NULL);
	cause_is(x.p.a.qp, UIW_E_DDP_U_MSN_NO_BUF, UIW_TERM_REMOTE);
	wcs_are(x.p.b.cq, 1, (uint64_t[]){ 50 },
		(int[]){ UIW_WC_WR_FLUSH_ERR }, NULL, NULL);
	ax_close(&x);
	free(g);
}

/* ---- Ordering (RFC 7306 §5.4, §7) ---------------------------------------- */

static void test_ordering(void **state)
{
	struct uiw_wc wc[8];
	struct ax x;
	int i;

	(void)state;
	ax_open(&x, true, true, ACC_ALL);

	/* Write, then atomic: the atomic sees the written data. */
	set_word(&x.src, 0, 1000);
	assert_int_equal(ep_post_send(x.p.a.qp, 1, UIW_WR_RDMA_WRITE, 0,
				      &x.src, 0, 8, x.tgt.mr->rkey,
				      (uintptr_t)x.tgt.p, 0), 0);
	assert_int_equal(post_fadd(x.p.a.qp, 2, &x.res, 0, &x.tgt, 0, 1), 0);
	ep_pump(&x.p);
	assert_int_equal(ep_poll(x.p.a.cq, wc, 8), 2);
	assert_int_equal(word(&x.res, 0), 1000);
	assert_int_equal(word(&x.tgt, 0), 1001);

	/* Atomic, then atomic: the second sees the first's result.  Three
	 * CmpSwaps posted at once form a chain only if each is processed
	 * after the one before. */
	set_word(&x.tgt, 8, 0);
	for (i = 0; i < 3; i++)
		assert_int_equal(post_cswap(x.p.a.qp, 10 + i, &x.res, 8 * i,
					    &x.tgt, 8, i, i + 1), 0);
	ep_pump(&x.p);
	assert_int_equal(ep_poll(x.p.a.cq, wc, 8), 3);
	for (i = 0; i < 3; i++) {
		assert_int_equal(wc[i].wr_id, 10 + i);
		assert_int_equal(word(&x.res, 8 * i), i);
	}
	assert_int_equal(word(&x.tgt, 8), 3);

	/* Read, atomic, Read of the same word: Responses in Request
	 * order; the first Read does not see the atomic, the second
	 * does. */
	set_word(&x.tgt, 16, 500);
	assert_int_equal(ep_post_send(x.p.a.qp, 20, UIW_WR_RDMA_READ, 0,
				      &x.src, 64, 8, x.tgt.mr->rkey,
				      (uintptr_t)(x.tgt.p + 16), 0), 0);
	assert_int_equal(post_fadd(x.p.a.qp, 21, &x.res, 0, &x.tgt, 16, 5),
			 0);
	assert_int_equal(ep_post_send(x.p.a.qp, 22, UIW_WR_RDMA_READ, 0,
				      &x.src, 72, 8, x.tgt.mr->rkey,
				      (uintptr_t)(x.tgt.p + 16), 0), 0);
	ep_pump(&x.p);
	assert_int_equal(ep_poll(x.p.a.cq, wc, 8), 3);
	assert_int_equal(word(&x.src, 64), 500);
	assert_int_equal(word(&x.res, 0), 500);
	assert_int_equal(word(&x.src, 72), 505);

	/* A long Read Response is sent from the target memory; an atomic
	 * after it on that memory waits until the LLP has taken the
	 * whole Response (handed over a few octets at a time here), so
	 * the Read sees the old contents and its CRC stays right. */
	ep_fill(x.tgt.p + 65536, 65536, 9);
	set_word(&x.tgt, 65536 + 32768, 7);
	x.p.tx_partial = true;
	x.p.split = 0;
	assert_int_equal(ep_post_send(x.p.a.qp, 30, UIW_WR_RDMA_READ, 0,
				      &x.src, 65536, 65536, x.tgt.mr->rkey,
				      (uintptr_t)(x.tgt.p + 65536), 0), 0);
	assert_int_equal(post_fadd(x.p.a.qp, 31, &x.res, 0, &x.tgt,
				   65536 + 32768, 1), 0);
	assert_int_equal(post_cswap(x.p.a.qp, 32, &x.res, 8, &x.tgt,
				    65536 + 32768, 8, 100), 0);
	ep_pump(&x.p);
	assert_int_equal(ep_poll(x.p.a.cq, wc, 8), 3);
	for (i = 0; i < 3; i++)
		assert_int_equal(wc[i].status, UIW_WC_SUCCESS);
	assert_int_equal(word(&x.src, 65536 + 32768), 7);
	assert_int_equal(word(&x.res, 0), 7);
	assert_int_equal(word(&x.res, 8), 8);
	assert_int_equal(word(&x.tgt, 65536 + 32768), 100);
	set_word(&x.src, 65536 + 32768, 100);
	assert_memory_equal(x.src.p + 65536, x.tgt.p + 65536, 65536);
	state_is(x.p.a.qp, UIW_QPS_RTS);
	state_is(x.p.b.qp, UIW_QPS_RTS);

	/* A fenced work request waits for the atomic's Response. */
	x.p.tx_partial = false;
	assert_int_equal(post_fadd(x.p.a.qp, 40, &x.res, 0, &x.tgt, 0, 1), 0);
	assert_int_equal(ep_post_send(x.p.a.qp, 41, UIW_WR_RDMA_WRITE,
				      UIW_SEND_FENCE, &x.src, 0, 8,
				      x.tgt.mr->rkey,
				      (uintptr_t)(x.tgt.p + 24), 0), 0);
	{
		unsigned before[16], after[16];

		ep_count_fpdus(x.p.a.out, x.p.a.out_len, true, true, before);
		ep_drain_tx(&x.p, &x.p.a);
		ep_count_fpdus(x.p.a.out, x.p.a.out_len, true, true, after);
		assert_int_equal(after[UIW_OP_ATOMIC_REQ],
				 before[UIW_OP_ATOMIC_REQ] + 1);
		assert_int_equal(after[UIW_OP_WRITE], before[UIW_OP_WRITE]);
	}
	ep_pump(&x.p);
	assert_int_equal(ep_poll(x.p.a.cq, wc, 8), 2);
	assert_int_equal(word(&x.tgt, 24), 1000);

	/* Graceful close waits for the outstanding atomic. */
	assert_int_equal(post_fadd(x.p.a.qp, 50, &x.res, 0, &x.tgt, 0, 1), 0);
	assert_int_equal(uiw_qp_disconnect(x.p.a.qp), 0);
	ep_drain_tx(&x.p, &x.p.a);
	assert_int_equal(x.p.a.closes, 0);
	ep_pump(&x.p);
	assert_int_equal(ep_poll(x.p.a.cq, wc, 8), 1);
	assert_int_equal(wc[0].status, UIW_WC_SUCCESS);
	assert_int_equal(x.p.a.closes, 1);
	ax_close(&x);
}

/* ---- Immediate Data -------------------------------------------------------- */

static void test_immediate(void **state)
{
	struct uiw_wc wc[16];
	struct pollfd pfd;
	struct ax x;
	int i;

	(void)state;
	ax_open(&x, true, true, ACC_ALL);
	ep_fill(x.src.p, 4096, 3);
	for (i = 0; i < 6; i++)
		assert_int_equal(ep_post_recv(x.p.b.qp, 100 + i, &x.brcv,
					      256 * i, i == 2 ? 0 : 256), 0);
	assert_int_equal(uiw_cq_req_notify(x.p.b.cq, 1), 0);
	pfd.fd = uiw_cq_fd(x.p.b.cq);
	pfd.events = POLLIN;

	/* Immediate Data without SE: a completion, no solicited event */
	assert_int_equal(ep_post_send(x.p.a.qp, 1, UIW_WR_SEND, 0, &x.src, 0,
				      10, 0, 0, 0), 0);
	assert_int_equal(post_imm(x.p.a.qp, 2, 0, 0x0102030405060708ull), 0);
	ep_pump(&x.p);
	assert_int_equal(poll(&pfd, 1, 0), 0);
	/* with SE (into a zero-length buffer): the solicited event fires */
	assert_int_equal(post_imm(x.p.a.qp, 3, UIW_SEND_SOLICITED,
				  UINT64_MAX), 0);
	ep_pump(&x.p);
	assert_int_equal(poll(&pfd, 1, 0), 1);
	assert_int_equal(uiw_cq_ack_events(x.p.b.cq), 1);
	/* Write with Immediate, then a Send: completed in order */
	assert_int_equal(post_write_imm(x.p.a.qp, 4, UIW_SEND_SOLICITED,
					&x.src, 100, 1000, &x.tgt, 8192, 42),
			 0);
	assert_int_equal(post_imm(x.p.a.qp, 5, 0, 0), 0);
	assert_int_equal(ep_post_send(x.p.a.qp, 6, UIW_WR_SEND,
				      UIW_SEND_SOLICITED, &x.src, 0, 3, 0, 0,
				      0), 0);
	ep_pump(&x.p);

	wcs_are(x.p.a.cq, 6, (uint64_t[]){ 1, 2, 3, 4, 5, 6 },
		(int[]){ 0, 0, 0, 0, 0, 0 },
		(int[]){ UIW_WC_SEND, UIW_WC_SEND, UIW_WC_SEND,
			 UIW_WC_RDMA_WRITE, UIW_WC_SEND, UIW_WC_SEND }, wc);
	assert_int_equal(wc[1].byte_len, 0);
	assert_int_equal(wc[3].byte_len, 1000);
	wcs_are(x.p.b.cq, 6, (uint64_t[]){ 100, 101, 102, 103, 104, 105 },
		(int[]){ 0, 0, 0, 0, 0, 0 },
		(int[]){ UIW_WC_RECV, UIW_WC_RECV_RDMA_WITH_IMM,
			 UIW_WC_RECV_RDMA_WITH_IMM, UIW_WC_RECV_RDMA_WITH_IMM,
			 UIW_WC_RECV_RDMA_WITH_IMM, UIW_WC_RECV }, wc);
	assert_int_equal(wc[0].byte_len, 10);
	assert_int_equal(wc[0].flags, 0);
	assert_int_equal(wc[1].flags, UIW_WC_F_WITH_IMM);
	assert_int_equal(wc[1].imm_data, 0x0102030405060708ull);
	assert_int_equal(wc[1].byte_len, 0);
	assert_int_equal(wc[2].flags, UIW_WC_F_WITH_IMM | UIW_WC_F_SOLICITED);
	assert_int_equal(wc[2].imm_data, UINT64_MAX);
	assert_int_equal(wc[3].flags, UIW_WC_F_WITH_IMM | UIW_WC_F_SOLICITED);
	assert_int_equal(wc[3].imm_data, 42);
	assert_int_equal(wc[4].flags, UIW_WC_F_WITH_IMM);
	assert_int_equal(wc[4].imm_data, 0);
	assert_int_equal(wc[5].flags, UIW_WC_F_SOLICITED);
	assert_int_equal(wc[5].byte_len, 3);
	for (i = 0; i < 6; i++)
		assert_int_equal(wc[i].qp_num, uiw_qp_num(x.p.b.qp));
	/* the buffers the Immediate Data consumed are not written */
	for (i = 256; i < 1280; i++)
		assert_int_equal(x.brcv.p[i], 0x77);
	assert_memory_equal(x.tgt.p + 8192, x.src.p + 100, 1000);
	ax_close(&x);
}

/* Write with Immediate of 0 octets to 1 MiB: the Immediate Data
 * completes only once every octet of the Write is placed (§7). */
static void test_write_imm_sizes(void **state)
{
	static const uint32_t sizes[] = { 0, 1, 511, 4096, 65537, SRC_LEN };
	struct uiw_wc wc[4];
	size_t si;

	(void)state;
	for (si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
		uint32_t len = sizes[si];
		size_t off = 0, chunk = len > 100000 ? 65536 : 97;
		bool seen = false;
		struct ax x;

		ax_open(&x, si & 1, true, ACC_ALL);
		ep_fill(x.src.p, len, 77 + si);
		assert_int_equal(ep_post_recv(x.p.b.qp, 7, &x.brcv, 0, 0), 0);
		assert_int_equal(post_write_imm(x.p.a.qp, 1, 0, &x.src, 0,
						len, &x.tgt, 0, 0xabcd + si),
				 0);
		ep_drain_tx(&x.p, &x.p.a);
		/* feed b piece by piece; look at its CQ after each */
		while (off < x.p.a.q_len) {
			size_t n = x.p.a.q_len - off < chunk ?
				   x.p.a.q_len - off : chunk;

			assert_int_equal(ep_feed(x.p.b.qp, x.p.a.q + off, n,
						 0, &x.p.rng, 64), n);
			off += n;
			if (!seen && ep_poll(x.p.b.cq, wc, 4) == 1) {
				seen = true;
				assert_int_equal(wc[0].opcode,
						 UIW_WC_RECV_RDMA_WITH_IMM);
				assert_int_equal(wc[0].imm_data, 0xabcd + si);
				assert_memory_equal(x.tgt.p, x.src.p, len);
				/* the Immediate Data is the last FPDU */
				assert_int_equal(off, x.p.a.q_len);
			}
		}
		assert_true(seen);
		x.p.a.q_len = 0;
		ep_pump(&x.p);
		assert_int_equal(ep_poll(x.p.a.cq, wc, 4), 1);
		assert_int_equal(wc[0].opcode, UIW_WC_RDMA_WRITE);
		assert_int_equal(wc[0].byte_len, len);
		if (len < SRC_LEN)
			assert_int_equal(x.tgt.p[len], 0x3c);
		{
			unsigned per[16];

			ep_count_fpdus(x.p.a.out, x.p.a.out_len, si & 1, true,
				       per);
			assert_int_equal(per[UIW_OP_IMM], 1);
			assert_true(per[UIW_OP_WRITE] >= 1);
		}
		ax_close(&x);
	}
}

/* ---- Errors through the API (RFC 7306 §8) -------------------------------- */

/* The first queue-1 FPDU a sent (its DDP header, for the Terminate). */
static void first_q1_hdr(struct ax *x, uint8_t hdr[18])
{
	struct seg *g = seg_alloc(32);
	int n = segs_of(x->p.a.out, x->p.a.out_len, x->markers, x->crc, g,
			32), i;

	for (i = 0; i < n; i++)
		if (!g[i].h.tagged && g[i].h.qn == UIW_QN_READ_REQ)
			break;
	assert_true(i < n);
	memcpy(hdr, g[i].u, 18);
	free(g);
}

struct api_err {
	const char *what;
	unsigned access;        /* the target region's rights */
	int how;                /* 0 misaligned 1 bounds 2 stag 3 pd 4 ok */
	enum uiw_wr_opcode op;
	uiw_err_t err;
	int a_status;
};

static void api_error(const struct api_err *c)
{
	struct ep_buf other;
	struct uiw_pd *opd;
	uint8_t hdr[18];
	uint64_t raddr;
	uint32_t rkey;
	struct uiw_wc wc[4];
	struct ax x;

	ax_open(&x, false, true, c->access);
	opd = uiw_pd_alloc(x.p.b.dev);
	assert_non_null(opd);
	assert_int_equal(ep_buf_reg(&other, opd, 64, ACC_ALL), 0);
	set_word(&x.tgt, 64, 0x1111111111111111ull);
	set_word(&x.tgt, 72, 0x2222222222222222ull);
	raddr = (uintptr_t)(x.tgt.p + 64);
	rkey = x.tgt.mr->rkey;
	switch (c->how) {
	case 0:
		raddr += 4;
		break;
	case 1:
		raddr = (uintptr_t)(x.tgt.p + SRC_LEN);   /* aligned, past */
		break;
	case 2:
		rkey ^= 0x100;
		break;
	case 3:
		rkey = other.mr->rkey;
		raddr = (uintptr_t)other.p;
		break;
	default:
		break;
	}
	assert_int_equal(ep_post_recv(x.p.b.qp, 50, &x.brcv, 0, 64), 0);
	assert_int_equal(ep_post_recv(x.p.a.qp, 60, &x.arcv, 0, 64), 0);
	assert_int_equal(post_atomic(x.p.a.qp, 1, c->op, 0, &x.res, 0, rkey,
				     raddr, 0x1111111111111111ull, 5, 0, 0), 0);
	assert_int_equal(ep_post_send(x.p.a.qp, 2, UIW_WR_SEND, 0, &x.src, 0,
				      4, 0, 0, 0), 0);
	ep_drain_tx(&x.p, &x.p.a);
	first_q1_hdr(&x, hdr);
	ep_pump(&x.p);
	{
		struct texp t = { c->err, true, true, 18 + 52, hdr };

		term_is(&x.p, &x.p.b, false, true, &t);
	}
	/* the responder: its receive flushed, the memory as it was */
	wcs_are(x.p.b.cq, 1, (uint64_t[]){ 50 },
		(int[]){ UIW_WC_WR_FLUSH_ERR }, NULL, NULL);
	assert_int_equal(word(&x.tgt, 64), 0x1111111111111111ull);
	assert_int_equal(word(&x.tgt, 72), 0x2222222222222222ull);
	assert_int_equal(x.tgt.p[SRC_LEN - 1], 0x3c);
	assert_true(ep_buf_guards_ok(&x.tgt));
	/* the requester: the atomic fails with the peer's cause, the rest
	 * is flushed, the result buffer untouched */
	state_is(x.p.a.qp, UIW_QPS_ERROR);
	cause_is(x.p.a.qp, c->err, UIW_TERM_REMOTE);
	wcs_are(x.p.a.cq, 3, (uint64_t[]){ 1, 2, 60 },
		(int[]){ c->a_status, UIW_WC_WR_FLUSH_ERR,
			 UIW_WC_WR_FLUSH_ERR },
		(int[]){ c->op == FA ? UIW_WC_FETCH_ADD : UIW_WC_CMP_SWP,
			 UIW_WC_SEND, UIW_WC_RECV }, wc);
	term_cause_is(&wc[0].term, c->err, UIW_TERM_REMOTE);
	assert_int_equal(word(&x.res, 0), 0xa5a5a5a5a5a5a5a5ull);
	{
		unsigned per[16];

		ep_count_fpdus(x.p.a.out, x.p.a.out_len, false, true, per);
		assert_int_equal(per[UIW_OP_TERMINATE], 0);
	}
	ep_buf_free(&other);
	assert_int_equal(uiw_pd_free(opd), 0);
	ax_close(&x);
}

static void test_api_errors(void **state)
{
	static const struct api_err cases[] = {
		/* §8.2: misaligned, memory unchanged */
		{ "misaligned", ACC_ALL, 0, CS, UIW_E_RDMAP_CATA_STREAM,
		  UIW_WC_REM_OP_ERR },
		{ "misaligned add", ACC_ALL, 0, FA, UIW_E_RDMAP_CATA_STREAM,
		  UIW_WC_REM_OP_ERR },
		/* the remote atomic right */
		{ "no right", ACC_ALL & ~UIW_ACCESS_REMOTE_ATOMIC, 4, CS,
		  UIW_E_RDMAP_ACCESS, UIW_WC_REM_ACCESS_ERR },
		{ "bounds", ACC_ALL, 1, FA, UIW_E_RDMAP_BASE_BOUNDS,
		  UIW_WC_REM_ACCESS_ERR },
		{ "invalid stag", ACC_ALL, 2, FA, UIW_E_RDMAP_INVALID_STAG,
		  UIW_WC_REM_ACCESS_ERR },
		{ "other pd", ACC_ALL, 3, CS, UIW_E_RDMAP_STAG_NOT_ASSOC,
		  UIW_WC_REM_ACCESS_ERR },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		api_error(&cases[i]);
}

/* ---- Errors on the wire: frames changed between a and b ------------------ */

/* Re-frames what a has queued for b after fn changed ULPDUs (with CRC,
 * without markers), and feeds it to b. */
static void rewrite_and_feed(struct ax *x,
			     void (*fn)(struct seg *g, void *arg), void *arg)
{
	struct seg *g = seg_alloc(8);
	struct ep_ulpdu *u = malloc(sizeof(*u));
	uint8_t *out = malloc(1 << 20);
	size_t base = x->p.a.out_len - x->p.a.q_len, o = 0;
	int n, i;

	assert_int_equal(base, 0);
	assert_non_null(out);
	assert_non_null(u);
	n = segs_of(x->p.a.q, x->p.a.q_len, false, true, g, 8);
	for (i = 0; i < n; i++) {
		fn(&g[i], arg);
		memcpy(u->b, g[i].u, g[i].ulen);
		u->len = g[i].ulen;
		o += ep_fpdu(out + o, (1 << 20) - o, o, u, false, true);
	}
	x->p.a.q_len = 0;
	ep_feed(x->p.b.qp, out, o, 0, &x->p.rng, 64);
	free(out);
	free(u);
	free(g);
}

static void rw_aopcode(struct seg *g, void *arg)
{
	if (g->h.opcode == UIW_OP_ATOMIC_REQ)
		g->u[18 + 3] = (uint8_t)(uintptr_t)arg;   /* the AOpCode */
}

static uint8_t rw_hdr[18];

static void rw_imm_len(struct seg *g, void *arg)
{
	if (g->h.opcode == UIW_OP_IMM) {
		g->ulen = (uint16_t)(18 + (uintptr_t)arg);
		memset(g->u + 18 + 8, 0x5a, 16);
		memcpy(rw_hdr, g->u, 18);
	}
}

static void test_wire_errors(void **state)
{
	static const uint8_t bad_aop[] = { 0x1, 0x3, 0xf };
	struct uiw_wc wc[4];
	uint8_t hdr[18];
	struct ax x;
	size_t i;

	(void)state;
	/* §5.2.1 rule 4: an AOpCode this RNIC does not support (the
	 * reserved 1, unassigned 3 and 15) */
	for (i = 0; i < sizeof(bad_aop); i++) {
		ax_open(&x, false, true, ACC_ALL);
		set_word(&x.tgt, 0, 9);
		assert_int_equal(post_fadd(x.p.a.qp, 1, &x.res, 0, &x.tgt, 0,
					   1), 0);
		ep_drain_tx(&x.p, &x.p.a);
		first_q1_hdr(&x, hdr);
		rewrite_and_feed(&x, rw_aopcode,
				 (void *)(uintptr_t)bad_aop[i]);
		{
			struct texp t = { UIW_E_RDMAP_UNEXPECTED_OPCODE, true,
					  true, 18 + 52, hdr };

			term_is(&x.p, &x.p.b, false, true, &t);
		}
		assert_int_equal(word(&x.tgt, 0), 9);
		ep_pump(&x.p);
		cause_is(x.p.a.qp, UIW_E_RDMAP_UNEXPECTED_OPCODE,
			 UIW_TERM_REMOTE);
		wcs_are(x.p.a.cq, 1, (uint64_t[]){ 1 },
			(int[]){ UIW_WC_REM_INV_REQ_ERR },
			(int[]){ UIW_WC_FETCH_ADD }, wc);
		term_cause_is(&wc[0].term, UIW_E_RDMAP_UNEXPECTED_OPCODE,
			      UIW_TERM_REMOTE);
		ax_close(&x);
	}

	/* §6.3: Immediate Data of 16 or 4 octets instead of 8 */
	for (i = 0; i < 2; i++) {
		uintptr_t len = i ? 4 : 16;
		uiw_err_t e = i ? UIW_E_RDMAP_OP_UNSPEC : UIW_E_DDP_U_TOO_LONG;

		ax_open(&x, false, true, ACC_ALL);
		assert_int_equal(ep_post_recv(x.p.b.qp, 50, &x.brcv, 0, 64),
				 0);
		assert_int_equal(ep_post_recv(x.p.b.qp, 51, &x.brcv, 64, 64),
				 0);
		assert_int_equal(ep_post_recv(x.p.a.qp, 60, &x.arcv, 0, 64),
				 0);
		assert_int_equal(post_imm(x.p.a.qp, 1, 0, 5), 0);
		assert_int_equal(ep_post_send(x.p.a.qp, 2, UIW_WR_SEND, 0,
					      &x.src, 0, 4, 0, 0, 0), 0);
		ep_drain_tx(&x.p, &x.p.a);
		rewrite_and_feed(&x, rw_imm_len, (void *)len);
		{
			struct texp t = { e, true, true,
					  (uint16_t)(18 + len), rw_hdr };

			term_is(&x.p, &x.p.b, false, true, &t);
		}
		/* the receiver: the buffer it took fails, nothing is
		 * written into it */
		wcs_are(x.p.b.cq, 2, (uint64_t[]){ 50, 51 },
			(int[]){ i ? UIW_WC_LOC_QP_OP_ERR : UIW_WC_LOC_LEN_ERR,
				 UIW_WC_WR_FLUSH_ERR },
			(int[]){ UIW_WC_RECV, UIW_WC_RECV }, NULL);
		assert_int_equal(x.brcv.p[0], 0x77);
		/* the sender: Immediate Data completes once sent, as a Send
		 * (RFC 7306 §6.4, RFC 5040 §5.5); the Terminate then ends
		 * the stream and flushes the rest with the peer's cause */
		ep_pump(&x.p);
		state_is(x.p.a.qp, UIW_QPS_ERROR);
		cause_is(x.p.a.qp, e, UIW_TERM_REMOTE);
		wcs_are(x.p.a.cq, 3, (uint64_t[]){ 1, 2, 60 },
			(int[]){ UIW_WC_SUCCESS, UIW_WC_SUCCESS,
				 UIW_WC_WR_FLUSH_ERR },
			(int[]){ UIW_WC_SEND, UIW_WC_SEND, UIW_WC_RECV }, wc);
		term_cause_is(&wc[2].term, e, UIW_TERM_REMOTE);
		ax_close(&x);
	}

	/* Immediate Data with no receive posted: no buffer (§6.3) */
	ax_open(&x, false, true, ACC_ALL);
	assert_int_equal(ep_post_recv(x.p.a.qp, 60, &x.arcv, 0, 64), 0);
	assert_int_equal(post_imm(x.p.a.qp, 1, UIW_SEND_SOLICITED, 5), 0);
	ep_drain_tx(&x.p, &x.p.a);
	{
		struct seg *g = seg_alloc(2);
		struct texp t = { UIW_E_DDP_U_MSN_NO_BUF, true, true, 18 + 8,
				  NULL };

		assert_int_equal(segs_of(x.p.a.out, x.p.a.out_len, false, true,
					 g, 2), 1);
		t.hdr = g[0].u;
		ep_pump(&x.p);
		term_is(&x.p, &x.p.b, false, true, &t);
		free(g);
	}
	cause_is(x.p.a.qp, UIW_E_DDP_U_MSN_NO_BUF, UIW_TERM_REMOTE);
	wcs_are(x.p.a.cq, 2, (uint64_t[]){ 1, 60 },
		(int[]){ UIW_WC_SUCCESS, UIW_WC_WR_FLUSH_ERR },
		(int[]){ UIW_WC_SEND, UIW_WC_RECV }, wc);
	term_cause_is(&wc[1].term, UIW_E_DDP_U_MSN_NO_BUF, UIW_TERM_REMOTE);
	ax_close(&x);
}

/* ---- Crafted segments ---------------------------------------------------- */

/* One ULPDU framed at the receiver's current position (CRC on, no
 * markers), fed split at random. */
struct feeder {
	uint64_t pos;
	uint8_t buf[4096];
};

static void feed_ulpdu(struct feeder *f, struct uiw_qp *qp,
		       const struct uiw_ddp_hdr *h, const void *pl,
		       size_t plen, uint64_t *rngp)
{
	struct ep_ulpdu u;
	size_t n;

	ep_ulpdu_hdr(&u, h);
	ep_ulpdu_put(&u, pl, plen);
	n = ep_fpdu(f->buf, sizeof(f->buf), f->pos, &u, false, true);
	assert_true(n > 0);
	ep_feed(qp, f->buf, n, 0, rngp, 64);
	f->pos += n;
}

/* Responder side: segmented messages are fine; opcodes that change in
 * the middle of a message, or sit on the wrong queue, are not. */
static void test_crafted_responder(void **state)
{
	struct uiw_atomic_req r;
	struct uiw_ddp_hdr h;
	struct feeder f;
	uint8_t pl[64], hdr[18];
	struct ax x;
	struct uiw_wc wc[4];
	struct seg *g = seg_alloc(8);
	int n;

	(void)state;
	/* An Atomic Request in two segments and Immediate Data in two. */
	ax_open(&x, false, true, ACC_ALL);
	memset(&f, 0, sizeof(f));
	set_word(&x.tgt, 0, 40);
	uiw_atomic_req_fetchadd(&r, 0xfeed, x.tgt.mr->rkey,
				(uintptr_t)x.tgt.p, 2, 0);
	uiw_atomic_req_encode(pl, sizeof(pl), &r);
	ep_hdr_untagged(&h, UIW_OP_ATOMIC_REQ, 1, 1, 0, false);
	feed_ulpdu(&f, x.p.b.qp, &h, pl, 30, &x.p.rng);
	ep_hdr_untagged(&h, UIW_OP_ATOMIC_REQ, 1, 1, 30, true);
	feed_ulpdu(&f, x.p.b.qp, &h, pl + 30, 22, &x.p.rng);
	assert_int_equal(ep_post_recv(x.p.b.qp, 9, &x.brcv, 0, 0), 0);
	uiw_imm_encode(pl, 8, 0x0807060504030201ull);
	ep_hdr_send(&h, UIW_OP_IMM_SE, 1, 0, false, 0);
	feed_ulpdu(&f, x.p.b.qp, &h, pl, 4, &x.p.rng);
	ep_hdr_send(&h, UIW_OP_IMM_SE, 1, 4, true, 0);
	feed_ulpdu(&f, x.p.b.qp, &h, pl + 4, 4, &x.p.rng);
	state_is(x.p.b.qp, UIW_QPS_RTS);
	assert_int_equal(word(&x.tgt, 0), 40);      /* not yet executed */
	ep_drain_tx(&x.p, &x.p.b);
	assert_int_equal(word(&x.tgt, 0), 42);
	wcs_are(x.p.b.cq, 1, (uint64_t[]){ 9 }, (int[]){ 0 },
		(int[]){ UIW_WC_RECV_RDMA_WITH_IMM }, wc);
	assert_int_equal(wc[0].imm_data, 0x0807060504030201ull);
	assert_int_equal(wc[0].flags, UIW_WC_F_WITH_IMM | UIW_WC_F_SOLICITED);
	n = segs_of(x.p.b.out, x.p.b.out_len, false, true, g, 8);
	assert_int_equal(n, 1);
	{
		struct uiw_atomic_resp rs;

		assert_int_equal(g[0].h.opcode, UIW_OP_ATOMIC_RESP);
		assert_int_equal(uiw_atomic_resp_decode(g[0].u + 18, 12, &rs),
				 UIW_OK);
		assert_int_equal(rs.req_id, 0xfeed);
		assert_int_equal(rs.orig_value, 40);
	}
	/* then a Read Request segment in the middle of an atomic */
	ep_hdr_untagged(&h, UIW_OP_ATOMIC_REQ, 1, 2, 0, false);
	feed_ulpdu(&f, x.p.b.qp, &h, pl, 20, &x.p.rng);
	ep_hdr_untagged(&h, UIW_OP_READ_REQ, 1, 2, 20, true);
	uiw_ddp_hdr_encode(hdr, &h);
	feed_ulpdu(&f, x.p.b.qp, &h, pl, 8, &x.p.rng);
	{
		struct texp t = { UIW_E_RDMAP_UNEXPECTED_OPCODE, true, true,
				  18 + 8, hdr };

		x.p.b.out_len = 0;
		term_is(&x.p, &x.p.b, false, true, &t);
	}
	ax_close(&x);

	/* Single bad segments, each on a fresh stream. */
	{
		struct bad {
			uint8_t op;
			uint32_t qn, msn, mo;
			bool tagged;
			size_t plen;
			uiw_err_t err;
		} bads[] = {
			/* a Send on queue 3 */
			{ UIW_OP_SEND, 3, 1, 0, false, 12,
			  UIW_E_RDMAP_UNEXPECTED_OPCODE },
			/* an Atomic Request on queue 0, 2 or 3 */
			{ UIW_OP_ATOMIC_REQ, 0, 1, 0, false, 52,
			  UIW_E_RDMAP_UNEXPECTED_OPCODE },
			{ UIW_OP_ATOMIC_REQ, 3, 1, 0, false, 52,
			  UIW_E_RDMAP_UNEXPECTED_OPCODE },
			/* an Atomic Response or Immediate Data on queue 1 */
			{ UIW_OP_ATOMIC_RESP, 1, 1, 0, false, 12,
			  UIW_E_RDMAP_UNEXPECTED_OPCODE },
			{ UIW_OP_IMM, 1, 1, 0, false, 8,
			  UIW_E_RDMAP_UNEXPECTED_OPCODE },
			/* the RFC 7306 opcodes in a tagged segment */
			{ UIW_OP_ATOMIC_REQ, 0, 0, 0, true, 52,
			  UIW_E_RDMAP_UNEXPECTED_OPCODE },
			{ UIW_OP_IMM, 0, 0, 0, true, 8,
			  UIW_E_RDMAP_UNEXPECTED_OPCODE },
			/* queue 4 and beyond do not exist */
			{ UIW_OP_ATOMIC_REQ, 4, 1, 0, false, 52,
			  UIW_E_DDP_U_INVALID_QN },
			/* Atomic Request: wrong MSN, wrong MO, too long,
			 * too short */
			{ UIW_OP_ATOMIC_REQ, 1, 2, 0, false, 52,
			  UIW_E_DDP_U_MSN_RANGE },
			{ UIW_OP_ATOMIC_REQ, 1, 1, 4, false, 48,
			  UIW_E_DDP_U_INVALID_MO },
			{ UIW_OP_ATOMIC_REQ, 1, 1, 0, false, 60,
			  UIW_E_DDP_U_TOO_LONG },
			{ UIW_OP_ATOMIC_REQ, 1, 1, 0, false, 51,
			  UIW_E_RDMAP_OP_UNSPEC },
			/* an Atomic Response nobody asked for */
			{ UIW_OP_ATOMIC_RESP, 3, 1, 0, false, 12,
			  UIW_E_DDP_U_MSN_NO_BUF },
		};
		size_t i;

		for (i = 0; i < sizeof(bads) / sizeof(bads[0]); i++) {
			const struct bad *b = &bads[i];
			struct texp t = { b->err, true, true, 0, NULL };

			ax_open(&x, false, true, ACC_ALL);
			memset(&f, 0, sizeof(f));
			assert_int_equal(ep_post_recv(x.p.b.qp, 9, &x.brcv, 0,
						      64), 0);
			uiw_atomic_req_fetchadd(&r, 1, x.tgt.mr->rkey,
						(uintptr_t)x.tgt.p, 1, 0);
			memset(pl, 0, sizeof(pl));
			uiw_atomic_req_encode(pl, sizeof(pl), &r);
			if (b->tagged)
				ep_hdr_write(&h, b->op, x.tgt.mr->rkey,
					     (uintptr_t)x.tgt.p, true);
			else
				ep_hdr_untagged(&h, b->op, b->qn, b->msn,
						b->mo, true);
			memset(hdr, 0, sizeof(hdr));
			uiw_ddp_hdr_encode(hdr, &h);
			t.seg_len = (uint16_t)((b->tagged ? 14 : 18) +
					       b->plen);
			t.hdr = b->tagged ? NULL : hdr;
			feed_ulpdu(&f, x.p.b.qp, &h, pl, b->plen, &x.p.rng);
			term_is(&x.p, &x.p.b, false, true, &t);
			assert_int_equal(x.tgt.p[0], 0x3c);
			ax_close(&x);
		}
	}
	free(g);
}

/* Requester side: Atomic Responses that do not fit what it asked. */
static void test_crafted_requester(void **state)
{
	struct bad {
		uint32_t msn, req_id_delta;
		size_t plen;
		uint8_t op;
		uiw_err_t err;
		int status;         /* of the atomic */
	} bads[] = {
		/* §5.2.2 rule 7: another Request Identifier */
		{ 1, 1, 12, UIW_OP_ATOMIC_RESP, UIW_E_RDMAP_OP_UNSPEC,
		  UIW_WC_BAD_RESP_ERR },
		/* short, long */
		{ 1, 0, 8, UIW_OP_ATOMIC_RESP, UIW_E_RDMAP_OP_UNSPEC,
		  UIW_WC_BAD_RESP_ERR },
		{ 1, 0, 20, UIW_OP_ATOMIC_RESP, UIW_E_DDP_U_TOO_LONG,
		  UIW_WC_LOC_LEN_ERR },
		/* out of order: the MSN does not match, no WR to blame */
		{ 2, 0, 12, UIW_OP_ATOMIC_RESP, UIW_E_DDP_U_MSN_RANGE,
		  UIW_WC_WR_FLUSH_ERR },
		/* another opcode on queue 3 */
		{ 1, 0, 12, UIW_OP_SEND, UIW_E_RDMAP_UNEXPECTED_OPCODE,
		  UIW_WC_WR_FLUSH_ERR },
	};
	struct uiw_wc wc[4];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bads) / sizeof(bads[0]); i++) {
		const struct bad *b = &bads[i];
		struct uiw_atomic_resp rs;
		struct seg *g = seg_alloc(2);
		struct uiw_atomic_req rq;
		struct uiw_ddp_hdr h;
		struct feeder f;
		uint8_t pl[32], hdr[18];
		struct ax x;

		ax_open(&x, false, true, ACC_ALL);
		memset(&f, 0, sizeof(f));
		assert_int_equal(post_fadd(x.p.a.qp, 1, &x.res, 0, &x.tgt, 0,
					   1), 0);
		ep_drain_tx(&x.p, &x.p.a);
		x.p.a.q_len = 0;             /* b never sees it */
		assert_int_equal(segs_of(x.p.a.out, x.p.a.out_len, false,
					 true, g, 2), 1);
		assert_int_equal(uiw_atomic_req_decode(g[0].u + 18, 52, &rq),
				 UIW_OK);
		rs.req_id = rq.req_id + b->req_id_delta;
		rs.orig_value = 1234;
		memset(pl, 0, sizeof(pl));
		uiw_atomic_resp_encode(pl, sizeof(pl), &rs);
		ep_hdr_untagged(&h, b->op, 3, b->msn, 0, true);
		uiw_ddp_hdr_encode(hdr, &h);
		feed_ulpdu(&f, x.p.a.qp, &h, pl, b->plen, &x.p.rng);
		{
			struct texp t = { b->err, true, true,
					  (uint16_t)(18 + b->plen), hdr };

			term_is(&x.p, &x.p.a, false, true, &t);
		}
		wcs_are(x.p.a.cq, 1, (uint64_t[]){ 1 }, (int[]){ b->status },
			(int[]){ UIW_WC_FETCH_ADD }, wc);
		assert_int_equal(word(&x.res, 0), 0xa5a5a5a5a5a5a5a5ull);
		ax_close(&x);
		free(g);
	}

	/* The result buffer was deregistered while the atomic was out: a
	 * local error (no headers in the Terminate), the value goes
	 * nowhere. */
	{
		struct uiw_atomic_resp rs;
		struct uiw_atomic_req rq;
		struct seg *g = seg_alloc(2);
		struct texp t = { UIW_E_RDMAP_LOCAL_CATA, false, false, 0,
				  NULL };
		struct uiw_ddp_hdr h;
		struct feeder f;
		struct ep_buf res2;
		uint8_t pl[12];
		struct ax x;
		int k;

		ax_open(&x, false, true, ACC_ALL);
		memset(&f, 0, sizeof(f));
		assert_int_equal(ep_buf_reg(&res2, x.p.a.pd, 64,
					    UIW_ACCESS_LOCAL_WRITE), 0);
		memset(res2.p, 0xa5, 64);
		assert_int_equal(post_fadd(x.p.a.qp, 1, &res2, 0, &x.tgt, 0,
					   1), 0);
		ep_drain_tx(&x.p, &x.p.a);
		x.p.a.q_len = 0;
		assert_int_equal(segs_of(x.p.a.out, x.p.a.out_len, false,
					 true, g, 2), 1);
		assert_int_equal(uiw_atomic_req_decode(g[0].u + 18, 52, &rq),
				 UIW_OK);
		assert_int_equal(uiw_dereg_mr(res2.mr), 0);
		res2.mr = NULL;
		rs.req_id = rq.req_id;
		rs.orig_value = 99;
		uiw_atomic_resp_encode(pl, sizeof(pl), &rs);
		ep_hdr_untagged(&h, UIW_OP_ATOMIC_RESP, 3, 1, 0, true);
		feed_ulpdu(&f, x.p.a.qp, &h, pl, 12, &x.p.rng);
		term_is(&x.p, &x.p.a, false, true, &t);
		wcs_are(x.p.a.cq, 1, (uint64_t[]){ 1 },
			(int[]){ UIW_WC_LOC_PROT_ERR },
			(int[]){ UIW_WC_FETCH_ADD }, wc);
		for (k = 0; k < 64; k++)
			assert_int_equal(res2.p[k], 0xa5);
		assert_true(ep_buf_guards_ok(&res2));
		free(res2.base);
		ax_close(&x);
		free(g);
	}
}

/* A peer without RFC 7306 (siw) ends the stream with a Terminate in its
 * own layout: "RDMAP remote operation error, unexpected opcode" with
 * Layer and EType swapped and M/D at 0x01/0x02, copying our Atomic
 * Request's DDP header.  The atomic fails with that cause. */
static void test_peer_without_atomics(void **state)
{
	struct uiw_ddp_hdr h;
	struct feeder f;
	struct seg *g = seg_alloc(4);
	uint8_t pl[32];
	struct uiw_wc wc[4];
	struct ax x;
	int n;

	(void)state;
	ax_open(&x, false, true, ACC_ALL);
	memset(&f, 0, sizeof(f));
	assert_int_equal(ep_post_recv(x.p.a.qp, 9, &x.arcv, 0, 64), 0);
	assert_int_equal(post_cswap(x.p.a.qp, 1, &x.res, 0, &x.tgt, 0, 0, 1),
			 0);
	assert_int_equal(post_imm(x.p.a.qp, 2, 0, 7), 0);
	ep_drain_tx(&x.p, &x.p.a);
	x.p.a.q_len = 0;
	n = segs_of(x.p.a.out, x.p.a.out_len, false, true, g, 4);
	assert_int_equal(n, 2);
	pl[0] = 0x20;               /* EType 2 << 4 | Layer 0 */
	pl[1] = 0x06;               /* unexpected opcode */
	pl[2] = 0x03;               /* siw's M and D */
	pl[3] = 0;
	pl[4] = 0;
	pl[5] = (uint8_t)g[0].ulen;
	memcpy(pl + 6, g[0].u, 18);
	ep_hdr_untagged(&h, UIW_OP_TERMINATE, UIW_QN_TERMINATE, 1, 0, true);
	feed_ulpdu(&f, x.p.a.qp, &h, pl, 24, &x.p.rng);
	state_is(x.p.a.qp, UIW_QPS_ERROR);
	cause_is(x.p.a.qp, UIW_E_RDMAP_UNEXPECTED_OPCODE, UIW_TERM_REMOTE);
	wcs_are(x.p.a.cq, 3, (uint64_t[]){ 1, 2, 9 },
		(int[]){ UIW_WC_REM_INV_REQ_ERR, UIW_WC_WR_FLUSH_ERR,
			 UIW_WC_WR_FLUSH_ERR },
		(int[]){ UIW_WC_CMP_SWP, UIW_WC_SEND, UIW_WC_RECV }, wc);
	term_cause_is(&wc[0].term, UIW_E_RDMAP_UNEXPECTED_OPCODE,
		      UIW_TERM_REMOTE);
	assert_non_null(strstr(uiw_term_cause_str(&wc[0].term),
			       "unexpected opcode"));
	assert_int_equal(word(&x.res, 0), 0xa5a5a5a5a5a5a5a5ull);
	ax_close(&x);
	free(g);
}

/* The connection is lost with atomics outstanding: each completes once,
 * the oldest with the LLP error, the others flushed. */
static void test_flush(void **state)
{
	struct ax x;
	int i;

	(void)state;
	ax_open(&x, true, true, ACC_ALL);
	for (i = 0; i < 3; i++)
		assert_int_equal(post_fadd(x.p.a.qp, 1 + i, &x.res, 8 * i,
					   &x.tgt, 0, 1), 0);
	ep_drain_tx(&x.p, &x.p.a);
	ep_side_detach(&x.p.a, UIW_E_MPA_CLOSED);
	wcs_are(x.p.a.cq, 3, (uint64_t[]){ 1, 2, 3 },
		(int[]){ UIW_WC_FATAL_ERR, UIW_WC_WR_FLUSH_ERR,
			 UIW_WC_WR_FLUSH_ERR },
		(int[]){ UIW_WC_FETCH_ADD, UIW_WC_FETCH_ADD,
			 UIW_WC_FETCH_ADD }, NULL);
	ax_close(&x);
}

/* ---- Concurrency: several QPs on several threads, one device's word ------ */

#define NTHR 4
#define NADD 3000
#define NLOCK 150

struct shared {
	struct uiw_device *dev;     /* the responder */
	struct uiw_pd *pd;
	struct ep_buf mem;          /* [0] counter, [8] lock, [16] data */
};

struct worker {
	struct shared *sh;
	int id;
	struct ep_pipe p;
	struct uiw_device *adev;
	struct ep_buf res;
	uint64_t *orig;             /* FetchAdd results */
	int fails;
};

static int side_mk(struct ep_side *s, struct uiw_device *dev,
		   struct uiw_pd *pd)
{
	struct uiw_qp_init_attr qa;

	memset(s, 0, sizeof(*s));
	s->dev = dev;
	s->pd = pd;
	s->cq = uiw_cq_create(dev, 256);
	if (!s->cq)
		return -1;
	memset(&qa, 0, sizeof(qa));
	qa.send_cq = qa.recv_cq = s->cq;
	qa.cap.max_send_wr = qa.cap.max_recv_wr = 64;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
	qa.sq_sig_all = 1;
	s->qp = uiw_qp_create(pd, &qa);
	if (!s->qp)
		return -1;
	s->mp.crc = true;
	s->mp.mulpdu = 1024;
	s->lp.ird = 8;
	s->lp.ord = 8;
	return 0;
}

static void side_rm(struct ep_side *s)
{
	ep_side_detach(s, UIW_E_MPA_CLOSED);
	uiw_qp_destroy(s->qp);
	uiw_cq_destroy(s->cq);
	free(s->out);
	free(s->q);
}

/* Waits (pumping) for one completion. */
static int one_wc(struct worker *w, struct uiw_wc *wc)
{
	int k;

	for (k = 0; k < 100; k++) {
		if (uiw_cq_poll(w->p.a.cq, 1, wc) == 1)
			return wc->status == UIW_WC_SUCCESS ? 0 : -1;
		ep_pump(&w->p);
		/* keep the captures small: nothing reads them here */
		w->p.a.out_len = w->p.b.out_len = 0;
	}
	return -1;
}

static void *adder(void *arg)
{
	struct worker *w = arg;
	struct uiw_wc wc[16];
	int posted = 0, done = 0;

	while (done < NADD && !w->fails) {
		int n, i;

		while (posted < NADD && posted - done < 8) {
			if (post_fadd(w->p.a.qp, (uint64_t)posted, &w->res,
				      8 * (posted % 8), &w->sh->mem, 0, 1)) {
				w->fails++;
				break;
			}
			posted++;
		}
		ep_pump(&w->p);
		w->p.a.out_len = w->p.b.out_len = 0;
		n = uiw_cq_poll(w->p.a.cq, 16, wc);
		for (i = 0; i < n; i++) {
			if (wc[i].status != UIW_WC_SUCCESS ||
			    wc[i].wr_id != (uint64_t)done)
				w->fails++;
			memcpy(&w->orig[done], w->res.p + 8 * (done % 8), 8);
			done++;
		}
	}
	return NULL;
}

/* A lock word taken with CmpSwap(0 -> id) and released with
 * CmpSwap(id -> 0) protects a counter that is read and written with
 * plain RDMA Read and Write. */
static void *locker(void *arg)
{
	struct worker *w = arg;
	struct ep_buf *m = &w->sh->mem;
	uint64_t me = (uint64_t)w->id + 1;
	struct uiw_wc wc;
	int it;

	for (it = 0; it < NLOCK && !w->fails; it++) {
		uint64_t v;

		do {
			if (post_cswap(w->p.a.qp, 1, &w->res, 0, m, 8, 0, me) ||
			    one_wc(w, &wc)) {
				w->fails++;
				return NULL;
			}
			memcpy(&v, w->res.p, 8);
		} while (v != 0);
		if (ep_post_send(w->p.a.qp, 2, UIW_WR_RDMA_READ, 0, &w->res,
				 8, 8, m->mr->rkey, (uintptr_t)(m->p + 16), 0) ||
		    one_wc(w, &wc)) {
			w->fails++;
			return NULL;
		}
		memcpy(&v, w->res.p + 8, 8);
		v++;
		memcpy(w->res.p + 16, &v, 8);
		/* the Write is placed before the releasing atomic runs
		 * (§7: an atomic after a Write sees it) */
		if (ep_post_send(w->p.a.qp, 3, UIW_WR_RDMA_WRITE, 0, &w->res,
				 16, 8, m->mr->rkey, (uintptr_t)(m->p + 16),
				 0) ||
		    post_cswap(w->p.a.qp, 4, &w->res, 24, m, 8, me, 0) ||
		    one_wc(w, &wc) || one_wc(w, &wc)) {
			w->fails++;
			return NULL;
		}
		memcpy(&v, w->res.p + 24, 8);
		if (v != me)
			w->fails++;
	}
	return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void test_concurrency(void **state)
{
	struct shared sh;
	struct worker w[NTHR];
	pthread_t th[NTHR];
	uint64_t *all;
	int i, j, round;

	(void)state;
	memset(&sh, 0, sizeof(sh));
	sh.dev = uiw_device_open(NULL);
	assert_non_null(sh.dev);
	sh.pd = uiw_pd_alloc(sh.dev);
	assert_non_null(sh.pd);
	assert_int_equal(ep_buf_reg(&sh.mem, sh.pd, 64, ACC_ALL), 0);
	for (i = 0; i < NTHR; i++) {
		struct uiw_pd *apd;

		memset(&w[i], 0, sizeof(w[i]));
		w[i].sh = &sh;
		w[i].id = i;
		w[i].p.tx_iov_max = w[i].p.rx_iov_max = 64;
		w[i].p.rng = 0x1234 + (uint64_t)i;
		w[i].adev = uiw_device_open(NULL);
		assert_non_null(w[i].adev);
		apd = uiw_pd_alloc(w[i].adev);
		assert_non_null(apd);
		assert_int_equal(side_mk(&w[i].p.a, w[i].adev, apd), 0);
		/* every responder QP is on the one device and PD */
		assert_int_equal(side_mk(&w[i].p.b, sh.dev, sh.pd), 0);
		assert_int_equal(ep_attach(&w[i].p), 0);
		assert_int_equal(ep_buf_reg(&w[i].res, apd, 64,
					    UIW_ACCESS_LOCAL_WRITE), 0);
		w[i].orig = calloc(NADD, sizeof(uint64_t));
		assert_non_null(w[i].orig);
	}
	for (round = 0; round < 2; round++) {
		for (i = 0; i < NTHR; i++)
			assert_int_equal(pthread_create(&th[i], NULL,
					 round ? locker : adder, &w[i]), 0);
		for (i = 0; i < NTHR; i++)
			pthread_join(th[i], NULL);
		for (i = 0; i < NTHR; i++)
			assert_int_equal(w[i].fails, 0);
	}
	/* FetchAdds of 1: the exact total, and every original value from
	 * 0 to the total - 1 seen exactly once */
	assert_int_equal(word(&sh.mem, 0), (uint64_t)NTHR * NADD);
	all = calloc((size_t)NTHR * NADD, sizeof(uint64_t));
	assert_non_null(all);
	for (i = 0; i < NTHR; i++)
		memcpy(all + (size_t)i * NADD, w[i].orig,
		       NADD * sizeof(uint64_t));
	qsort(all, (size_t)NTHR * NADD, sizeof(uint64_t), cmp_u64);
	for (j = 0; j < NTHR * NADD; j++)
		assert_int_equal(all[j], (uint64_t)j);
	free(all);
	/* the lock: free again, the counter exact */
	assert_int_equal(word(&sh.mem, 8), 0);
	assert_int_equal(word(&sh.mem, 16), (uint64_t)NTHR * NLOCK);
	for (i = 0; i < NTHR; i++) {
		struct uiw_pd *apd = w[i].p.a.pd;

		ep_buf_free(&w[i].res);
		side_rm(&w[i].p.a);
		side_rm(&w[i].p.b);
		assert_int_equal(uiw_pd_free(apd), 0);
		assert_int_equal(uiw_device_close(w[i].adev), 0);
		free(w[i].orig);
	}
	ep_buf_free(&sh.mem);
	assert_int_equal(uiw_pd_free(sh.pd), 0);
	assert_int_equal(uiw_device_close(sh.dev), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_caps_and_posting),
		cmocka_unit_test(test_arith_table),
		cmocka_unit_test(test_wire_format),
		cmocka_unit_test(test_ord_ird_shared),
		cmocka_unit_test(test_ordering),
		cmocka_unit_test(test_immediate),
		cmocka_unit_test(test_write_imm_sizes),
		cmocka_unit_test(test_api_errors),
		cmocka_unit_test(test_wire_errors),
		cmocka_unit_test(test_crafted_responder),
		cmocka_unit_test(test_crafted_requester),
		cmocka_unit_test(test_peer_without_atomics),
		cmocka_unit_test(test_flush),
		cmocka_unit_test(test_concurrency),
	};

	static const char *const ordered_only[] = {
		"test_crafted_responder", NULL,
	};

	return ep_run_tests("engine: RFC 7306", tests,
			    sizeof(tests) / sizeof(tests[0]), NULL,
			    ordered_only);
}
