/*
 * Conformance: the security rules of RFC 5040 §8.1.1 and RFC 5042 that
 * software can enforce, as far as a remote peer (or the application)
 * can exercise them:
 *  - STags are hard to predict (§8.1.1 rule 8, RFC 5042 §6.1.x);
 *  - once access is revoked (deregistration, local invalidate) the peer
 *    can no longer modify the buffer (rule 6, RFC 5042 §6.2.2);
 *  - a peer cannot invalidate an STag shared by several streams (rule 7,
 *    RFC 5042 §6.4.5);
 *  - a CQ overflow leaves the streams that do not use it unaffected
 *    (rule 10, RFC 5042 §6.4.6).
 * PD isolation (rule 1) and invalidation across PDs are proven by
 * test_ddp (t_not_assoc) and test_rdmap (r_read_not_assoc,
 * r_send_inv_other_pd).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cf_env.h"
#include "rnic/dev.h"
#include "rnic/mr.h"

static uint8_t ubuf[256];

/* ---- STag values (rule 8) ---------------------------------------------- */

#define NMR 256

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* "An RNIC MUST choose the value of STags in a way difficult to predict.
 * It is RECOMMENDED to sparsely populate them over the full available
 * range."  RFC 5042 §6.1.2 (end) names what to avoid: a fixed first
 * STag, monotonically increasing ones, the same STag for each
 * operation. */
static void test_sec_stag_unpredictable(void **state)
{
	static uint8_t buf[4096];
	struct uiw_mr *mr[NMR];
	uint32_t s[NMR], sorted[NMR], first[4], prev = 0;
	unsigned i, steps = 0, keys = 0, same_next = 0;
	bool seen_key[256] = { false };
	struct uiw_device_attr da;
	struct uiw_device *dev;
	struct uiw_pd *pd;

	(void)state;
	/* Many regions at once: distinct, not in steps of one, keys spread
	 * over the 8 bits, indices over the 24. */
	dev = uiw_device_open(NULL);
	assert_non_null(dev);
	pd = uiw_pd_alloc(dev);
	assert_non_null(pd);
	for (i = 0; i < NMR; i++) {
		mr[i] = uiw_reg_mr(pd, buf, sizeof(buf),
				   UIW_ACCESS_LOCAL_WRITE |
				   UIW_ACCESS_REMOTE_WRITE);
		assert_non_null(mr[i]);
		s[i] = mr[i]->rkey;
		assert_int_equal(mr[i]->lkey, mr[i]->rkey);
		if (i && (s[i] >> 8) == (s[i - 1] >> 8) + 1)
			steps++;
		if (!seen_key[s[i] & 0xff]) {
			seen_key[s[i] & 0xff] = true;
			keys++;
		}
	}
	memcpy(sorted, s, sizeof(s));
	qsort(sorted, NMR, sizeof(sorted[0]), cmp_u32);
	for (i = 1; i < NMR; i++)
		assert_true(sorted[i] != sorted[i - 1]);
	if (steps > 8)
		fail_msg("%u of %u consecutive STags have consecutive "
			 "indices", steps, NMR - 1);
	if (keys < 64)
		fail_msg("only %u distinct keys among %u STags", keys, NMR);
	/* Spread over the device's STag table (uiw_device_query's
	 * max_mr entries; for 256 uniform draws the indices span almost
	 * all of it, surely more than half). */
	assert_int_equal(uiw_device_query(dev, &da), 0);
	if ((sorted[NMR - 1] >> 8) - (sorted[0] >> 8) < da.max_mr / 2)
		fail_msg("indices 0x%06x..0x%06x crowd together in a table "
			 "of %u", sorted[0] >> 8, sorted[NMR - 1] >> 8,
			 da.max_mr);
	for (i = 0; i < NMR; i++)
		assert_int_equal(uiw_dereg_mr(mr[i]), 0);
	/* One buffer registered again and again: never the STag it had
	 * just before. */
	for (i = 0; i < 64; i++) {
		struct uiw_mr *m = uiw_reg_mr(pd, buf, sizeof(buf),
					      UIW_ACCESS_LOCAL_WRITE);

		assert_non_null(m);
		if (i && m->rkey == prev)
			same_next++;
		prev = m->rkey;
		assert_int_equal(uiw_dereg_mr(m), 0);
	}
	assert_int_equal(same_next, 0);
	assert_int_equal(uiw_pd_free(pd), 0);
	assert_int_equal(uiw_device_close(dev), 0);
	/* The first STag of a fresh device is not a fixed value. */
	for (i = 0; i < 4; i++) {
		struct uiw_mr *m;

		dev = uiw_device_open(NULL);
		assert_non_null(dev);
		pd = uiw_pd_alloc(dev);
		m = uiw_reg_mr(pd, buf, sizeof(buf), UIW_ACCESS_LOCAL_WRITE);
		assert_non_null(m);
		first[i] = m->rkey;
		assert_int_equal(uiw_dereg_mr(m), 0);
		assert_int_equal(uiw_pd_free(pd), 0);
		assert_int_equal(uiw_device_close(dev), 0);
	}
	if (first[0] == first[1] && first[1] == first[2] &&
	    first[2] == first[3])
		fail_msg("four devices gave the same first STag 0x%08x",
			 first[0]);
}

/* ---- Revoking access (rule 6) ------------------------------------------ */

/* After uiw_dereg_mr returns, an RDMA Write through the old STag is an
 * invalid STag, and nothing is placed. */
static void test_sec_dereg_revokes(void **state)
{
	struct cf_env *e = *state;
	uint8_t hdr[UIW_DDP_MAX_HDR_LEN], u[64];
	struct cf_term_expect x = { 0 };
	struct cf_opts o;
	uint32_t stag;
	size_t hl;

	cf_opts_init(&o);
	CF_OK(cf_open(e, &o, true));
	stag = cf_stag(e, CF_WRITE);
	/* A Write that works first. */
	CF_OK(rp_send_write(&e->rp, stag, cf_to(e, CF_WRITE, 8), "ok", 2));
	cf_mem_placed(e, e->r[CF_WRITE].p + 8, "ok", 2);
	CF_OK(rp_send_send(&e->rp, UIW_OP_SEND, 0, "s", 1));
	CF_OK(cf_wait_wc(e, e->rcq, CF_WR_RECV(1), UIW_WC_SUCCESS, NULL));
	cf_mem_placed(e, e->r[CF_RECV].p + e->o.recv_len, "s", 1);
	assert_int_equal(uiw_dereg_mr(e->r[CF_WRITE].mr), 0);
	e->r[CF_WRITE].mr = NULL;
	hl = rp_hdr_tagged(hdr, UIW_OP_WRITE, true, stag,
			   cf_to(e, CF_WRITE, 0));
	memcpy(u, hdr, hl);
	memset(u + hl, 0xee, 16);
	CF_OK(rp_send_fpdu(&e->rp, u, hl + 16));
	x.err = UIW_E_DDP_T_INVALID_STAG;
	x.m = x.d = true;
	x.seg_len = (uint16_t)(hl + 16);
	x.ddp_hdr = hdr;
	x.ddp_hdr_len = hl;
	CF_OK(cf_expect_term(e, &x));
}

/* The same after a local invalidate work request (RFC 5040 §5.3). */
static void test_sec_local_inv_revokes(void **state)
{
	struct cf_env *e = *state;
	uint8_t hdr[UIW_DDP_MAX_HDR_LEN], u[64];
	struct cf_term_expect x = { 0 };
	struct uiw_send_wr wr = { .wr_id = 0x700,
				  .opcode = UIW_WR_LOCAL_INV,
				  .send_flags = UIW_SEND_SIGNALED };
	struct cf_opts o;
	uint32_t stag;
	size_t hl;

	cf_opts_init(&o);
	CF_OK(cf_open(e, &o, false));
	stag = cf_stag(e, CF_WRITE);
	wr.invalidate_stag = stag;
	assert_int_equal(uiw_post_send(e->qp, &wr, NULL), 0);
	CF_OK(cf_wait_wc(e, e->scq, 0x700, UIW_WC_SUCCESS, NULL));
	hl = rp_hdr_tagged(hdr, UIW_OP_WRITE, true, stag,
			   cf_to(e, CF_WRITE, 0));
	memcpy(u, hdr, hl);
	memset(u + hl, 0xee, 16);
	CF_OK(rp_send_fpdu(&e->rp, u, hl + 16));
	x.err = UIW_E_DDP_T_INVALID_STAG;
	x.m = x.d = true;
	x.seg_len = (uint16_t)(hl + 16);
	x.ddp_hdr = hdr;
	x.ddp_hdr_len = hl;
	CF_OK(cf_expect_term(e, &x));
}

/* ---- Remote invalidation (rule 7) -------------------------------------- */

/* RFC 5040 §8.1.1 rule 7: "An RNIC MUST ensure that a Remote Peer is not
 * able to invalidate an STag enabled for remote access, if the STag is
 * shared on multiple streams."  A second QP in the same protection
 * domain shares every STag of that domain with the first; the raw peer's
 * Send with Invalidate of one must be refused ("STag cannot be
 * invalidated") and the STag must stay valid. */
static void test_sec_remote_inv_shared_stag(void **state)
{
	struct cf_env *e = *state;
	struct uiw_qp_init_attr qa = { 0 };
	uint8_t hdr[UIW_DDP_MAX_HDR_LEN];
	struct cf_term_expect x = { 0 };
	struct uiw_qp *qp2;
	struct cf_opts o;
	uint32_t stag;
	size_t hl;

	cf_opts_init(&o);
	CF_OK(cf_open(e, &o, true));
	qa.send_cq = e->scq;
	qa.recv_cq = e->rcq;
	qa.cap.max_send_wr = qa.cap.max_recv_wr = 4;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
	qp2 = uiw_qp_create(e->pd, &qa);
	assert_non_null(qp2);
	stag = cf_stag(e, CF_WRITE);
	hl = rp_hdr_untagged(hdr, UIW_OP_SEND_INV, true, 0, e->rp.msn[0]++, 0,
			     stag);
	memcpy(ubuf, hdr, hl);
	memcpy(ubuf + hl, "inv", 3);
	CF_OK(rp_send_fpdu(&e->rp, ubuf, hl + 3));
	cf_mem_placed(e, e->r[CF_RECV].p + e->o.recv_len, "inv", 3);
	cf_expect_status(e, CF_WR_RECV(1), UIW_WC_LOC_PROT_ERR);
	x.err = UIW_E_RDMAP_PROT_CANT_INV;
	x.m = x.d = true;
	x.seg_len = (uint16_t)(hl + 3);
	x.ddp_hdr = hdr;
	x.ddp_hdr_len = hl;
	{
		int rc = cf_expect_term(e, &x);

		assert_int_equal(uiw_qp_destroy(qp2), 0);
		CF_OK(rc);
	}
	assert_int_equal(uiw_mr_check(&e->dev->mrt, stag, e->pd,
				      UIW_ACCESS_REMOTE_WRITE,
				      cf_to(e, CF_WRITE, 0), 1), UIW_MRC_OK);
}

/* ---- CQ overflow (rule 10) --------------------------------------------- */

struct two {
	struct uiw_device *dev;
	struct cf_env a, b;
};

static int setup_two(void **state)
{
	struct two *t = calloc(1, sizeof(*t));

	if (!t)
		return -1;
	t->dev = uiw_device_open(NULL);
	if (!t->dev) {
		free(t);
		return -1;
	}
	*state = t;
	return 0;
}

static int teardown_two(void **state)
{
	struct two *t = *state;
	int rc = 0;

	if (cf_close(&t->a) || cf_close(&t->b))
		rc = -1;
	if (uiw_device_close(t->dev))
		rc = -1;
	free(t);
	return rc;
}

/* QP A's receive CQ holds 4 entries; the raw peer sends A five Sends
 * that the application does not poll for: the fifth completion cannot
 * be queued.  A's stream ends (RDMAP local catastrophic error, no copied
 * headers, RFC 5040 Figure 10) and its CQ reports the overflow; QP B on
 * the same device with its own CQs goes on as if nothing happened. */
static void test_sec_cq_overflow_isolated(void **state)
{
	struct two *t = *state;
	struct cf_env *a = &t->a, *b = &t->b;
	struct uiw_qp_attr qa;
	struct uiw_term term;
	struct uiw_wc wc;
	struct cf_opts o;
	size_t extra = 0;
	int i;

	cf_opts_init(&o);
	o.dev = t->dev;
	o.cqe = 4;
	o.nrecv = 8;
	CF_OK(cf_open(a, &o, false));
	cf_opts_init(&o);
	o.dev = t->dev;
	CF_OK(cf_open(b, &o, false));

	for (i = 0; i < 5; i++)
		CF_OK(rp_send_send(&a->rp, UIW_OP_SEND, 0, "flood", 5));
	CF_OK(rp_recv_term(&a->rp, &a->seg, &term));
	if (UIW_ERR_LAYER(term.err) != 0 || UIW_ERR_ETYPE(term.err) != 0)
		fail_msg("Terminate says \"%s\", expected an RDMAP local "
			 "catastrophic error", uiw_err_str(term.err));
	assert_false(term.m || term.d || term.r);
	assert_int_equal(a->seg.plen, UIW_TERM_HDR_LEN);
	CF_OK(rp_wait_closed(&a->rp, &extra));
	assert_int_equal(extra, 0);
	assert_int_equal(uiw_cq_poll(a->rcq, 1, &wc), -EOVERFLOW);
	cf_qp_state(a, &qa);
	assert_true(qa.state == UIW_QPS_TERMINATE ||
		    qa.state == UIW_QPS_ERROR);
	assert_int_equal(qa.term.layer, 0);
	assert_int_equal(qa.term.etype, 0);
	assert_int_equal(qa.term.origin, UIW_TERM_LOCAL);

	/* B is unaffected: both directions still work. */
	assert_int_equal(cf_qp_state(b, NULL), UIW_QPS_RTS);
	CF_OK(rp_send_send(&b->rp, UIW_OP_SEND, 0, "still here", 10));
	CF_OK(cf_wait_wc(b, b->rcq, CF_WR_RECV(1), UIW_WC_SUCCESS, &wc));
	assert_int_equal(wc.byte_len, 10);
	cf_mem_placed(b, b->r[CF_RECV].p + b->o.recv_len, "still here", 10);
	memcpy(b->r[CF_SRC].p, "me too", 6);
	cf_mem_placed(b, b->r[CF_SRC].p, "me too", 6);
	CF_OK(cf_post_send(b, 0x800, UIW_WR_SEND, 0, CF_SRC, 0, 6, 0, 0));
	CF_OK(rp_recv_seg(&b->rp, &b->seg));
	assert_int_equal(b->seg.plen, 6);
	assert_memory_equal(b->seg.pl, "me too", 6);
	CF_OK(cf_wait_wc(b, b->scq, 0x800, UIW_WC_SUCCESS, NULL));
	assert_int_equal(cf_qp_state(b, NULL), UIW_QPS_RTS);
	CF_OK(cf_check_mem(b));

	/* A ends as a failed stream does. */
	rp_close(&a->rp);
	a->rp_open = false;
	CF_OK(cf_wait_event(a, UIW_CM_EVENT_DISCONNECTED, a->id, NULL));
	assert_int_equal(cf_qp_state(a, NULL), UIW_QPS_ERROR);
	/* Received Sends landed in A's buffers before the overflow. */
	for (i = 1; i <= 5; i++)
		cf_mem_loose(a, a->r[CF_RECV].p + (size_t)i * a->o.recv_len,
			     a->o.recv_len);
	CF_OK(cf_check_mem(a));
	assert_int_equal(cf_qp_state(b, NULL), UIW_QPS_RTS);
}

int main(void)
{
	/* Over SCTP (RFC 5043): every case runs. */
	static const struct cf_mpa_only mpa_only[] = { { NULL, NULL } };
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sec_stag_unpredictable),
		cmocka_unit_test_setup_teardown(test_sec_dereg_revokes, cf_state_new,
						cf_state_free),
		cmocka_unit_test_setup_teardown(test_sec_local_inv_revokes,
						cf_state_new, cf_state_free),
		cmocka_unit_test_setup_teardown(test_sec_remote_inv_shared_stag,
						cf_state_new, cf_state_free),
		cmocka_unit_test_setup_teardown(test_sec_cq_overflow_isolated,
						setup_two, teardown_two),
	};

	return cf_run_tests("conformance: security", tests,
			    sizeof(tests) / sizeof(tests[0]), mpa_only);
}
