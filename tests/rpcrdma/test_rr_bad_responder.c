/*
 * The Requester against a Responder written with raw verbs that
 * answers wrongly: Write lists shaped unlike the offer or longer than
 * it, a Read list, a Long Reply with no Reply chunk offered (all
 * BAD_REPLY, RFC 8166 §3.4.6, §4.3); RDMA_ERROR (ERR_VERS with its
 * versions, ERR_CHUNK, §4.5); replies for no call and undecodable ones
 * (dropped and counted, the call waits on); a grant of 0 (counted as
 * 1, §3.3.1); Send With Invalidate of another call's STag or towards
 * an end that did not set R (BAD_REPLY, RFC 8797 §4.1), and of the
 * call's own (counted).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "rr_test.h"

struct pair {
	struct rt_raw l, r;
	struct sockaddr_storage addr;
	struct uiw_rr_opts o;
	struct uiw_rr_clnt *c;
};

static void *connect_run(void *arg)
{
	struct pair *p = arg;
	char err[128];

	p->c = uiw_rr_clnt_connect((struct sockaddr *)&p->addr,
				   sizeof(struct sockaddr_in), &p->o, err,
				   sizeof(err));
	return NULL;
}

static void pair_open(struct pair *p, bool remote_inv)
{
	uint8_t pd[UIW_RPCRDMA_CM_LEN];
	pthread_t th;

	memset(p, 0, sizeof(*p));
	uiw_rr_opts_init(&p->o);
	p->o.remote_inv = remote_inv;
	assert_int_equal(rt_raw_listen(&p->l, &p->addr), 0);
	assert_int_equal(pthread_create(&th, NULL, connect_run, p), 0);
	uiw_rpcrdma_cm_encode(pd, true, 4096, 4096);
	assert_int_equal(rt_raw_accept(&p->l, &p->r, pd, sizeof(pd)), 0);
	pthread_join(th, NULL);
	assert_non_null(p->c);
}

static void pair_close(struct pair *p)
{
	uiw_rr_clnt_close(p->c);
	rt_raw_close(&p->r);
	rt_raw_close(&p->l);
}

/* A call from a thread: 24 octets, a Write chunk of 256 if asked. */
struct ccall {
	pthread_t th;
	struct uiw_rr_clnt *c;
	uint8_t head[24], wbuf[256];
	struct uiw_rr_iov iov;
	struct uiw_rr_call call;
	int ret;
};

static void *ccall_run(void *arg)
{
	struct ccall *k = arg;

	k->ret = uiw_rr_call(k->c, &k->call);
	return NULL;
}

static void ccall_start(struct ccall *k, struct uiw_rr_clnt *c, uint32_t xid,
			bool wchunk, unsigned timeout_ms)
{
	memset(k, 0, sizeof(*k));
	k->c = c;
	rt_put32(k->head, xid);
	k->iov = (struct uiw_rr_iov){ k->head, sizeof(k->head), false };
	k->call.iov = &k->iov;
	k->call.niov = 1;
	k->call.reply_max = 64;
	k->call.timeout_ms = timeout_ms;
	if (wchunk) {
		k->call.wt[0] = (struct uiw_rr_wtarget){ k->wbuf,
							 sizeof(k->wbuf) };
		k->call.nwt = 1;
	}
	assert_int_equal(pthread_create(&k->th, NULL, ccall_run, k), 0);
}

static enum uiw_rr_status ccall_end(struct ccall *k)
{
	pthread_join(k->th, NULL);
	return k->call.status;
}

/* The call as the raw Responder received it: its XID and first Write
 * segment. */
struct got {
	uint32_t xid;
	struct uiw_rpcrdma_seg wseg;
};

static struct got receive_call(struct pair *p)
{
	struct uiw_rpcrdma_read_seg rs[4];
	struct uiw_rpcrdma_chunk rc[4], wc[4];
	struct uiw_rpcrdma_seg ws[4], ps[4];
	struct uiw_rpcrdma_space sp = { rs, 4, rc, 4, ws, 4, wc, 4, ps, 4 };
	struct uiw_rpcrdma_hdr h;
	uint8_t b[4096];
	struct got g = { 0 };
	int n = rt_raw_recv(&p->r, b, sizeof(b), RT_WAIT_MS);

	assert_true(n > 0);
	assert_int_equal(uiw_rpcrdma_decode(b, (size_t)n, &sp, &h), 0);
	g.xid = h.xid;
	if (h.nwrite_seg)
		g.wseg = h.write_seg[0];
	return g;
}

static size_t words(uint8_t *out, const uint32_t *w, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		rt_put32(out + 4 * i, w[i]);
	return 4 * n;
}

static void send_words(struct pair *p, const uint32_t *w, size_t n)
{
	uint8_t m[512];

	assert_int_equal(rt_raw_send(&p->r, m, words(m, w, n)), 0);
}

/* An inline reply to g with credit, echoing its Write chunk (if any)
 * with len octets written; sent With Invalidate of inv when not 0. */
static void reply_inv(struct pair *p, const struct got *g, uint32_t credit,
		      uint32_t len, uint32_t inv)
{
	const uint32_t with_w[] = { g->xid, 1, credit, UIW_RDMA_MSG, 0,
		1, 1, g->wseg.handle, len, (uint32_t)(g->wseg.offset >> 32),
		(uint32_t)g->wseg.offset, 0, 0, g->xid };
	const uint32_t plain[] = { g->xid, 1, credit, UIW_RDMA_MSG, 0, 0, 0,
				   g->xid };
	uint8_t m[128];
	size_t n = g->wseg.handle ? words(m, with_w, 14) : words(m, plain, 8);

	if (inv)
		assert_int_equal(rt_raw_post_inv(&p->r, m, n, inv), 0);
	else
		assert_int_equal(rt_raw_send(&p->r, m, n), 0);
}

static void reply_ok(struct pair *p, const struct got *g, uint32_t credit,
		     uint32_t len)
{
	reply_inv(p, g, credit, len, 0);
}

static struct uiw_rr_stats cstats(struct pair *p)
{
	struct uiw_rr_stats s;

	uiw_rr_clnt_stats(p->c, &s);
	return s;
}

static void bad_write_lists(void **state)
{
	struct pair p;
	struct ccall k;
	struct got g;

	(void)state;
	pair_open(&p, true);
	/* two Write chunks returned, one offered */
	ccall_start(&k, p.c, 1, true, 0);
	g = receive_call(&p);
	{
		const uint32_t w[] = { g.xid, 1, 8, 0, 0,
			1, 1, g.wseg.handle, 10, (uint32_t)(g.wseg.offset >> 32),
			(uint32_t)g.wseg.offset,
			1, 0, 0, 0, g.xid };

		send_words(&p, w, 16);
	}
	assert_int_equal(ccall_end(&k), UIW_RR_BAD_REPLY);
	uiw_rr_call_done(p.c, &k.call);
	/* more octets written than offered */
	ccall_start(&k, p.c, 2, true, 0);
	g = receive_call(&p);
	reply_ok(&p, &g, 8, 257);
	assert_int_equal(ccall_end(&k), UIW_RR_BAD_REPLY);
	uiw_rr_call_done(p.c, &k.call);
	/* another segment count */
	ccall_start(&k, p.c, 3, true, 0);
	g = receive_call(&p);
	{
		const uint32_t w[] = { g.xid, 1, 8, 0, 0,
			1, 2, g.wseg.handle, 10, (uint32_t)(g.wseg.offset >> 32),
			(uint32_t)g.wseg.offset, g.wseg.handle, 0, 0, 0,
			0, 0, g.xid };

		send_words(&p, w, 18);
	}
	assert_int_equal(ccall_end(&k), UIW_RR_BAD_REPLY);
	uiw_rr_call_done(p.c, &k.call);
	/* a Read list in a reply (§4.3.1) */
	ccall_start(&k, p.c, 4, false, 0);
	g = receive_call(&p);
	{
		const uint32_t w[] = { g.xid, 1, 8, 0,
			1, 4, 77, 8, 0, 0, 0, 0, 0, g.xid };

		send_words(&p, w, 14);
	}
	assert_int_equal(ccall_end(&k), UIW_RR_BAD_REPLY);
	uiw_rr_call_done(p.c, &k.call);
	/* a Long Reply into a Reply chunk that was not offered */
	ccall_start(&k, p.c, 5, false, 0);
	g = receive_call(&p);
	{
		const uint32_t w[] = { g.xid, 1, 8, UIW_RDMA_NOMSG, 0, 0,
			1, 1, 77, 8, 0, 0 };

		send_words(&p, w, 12);
	}
	assert_int_equal(ccall_end(&k), UIW_RR_BAD_REPLY);
	uiw_rr_call_done(p.c, &k.call);
	/* and a proper reply still works, its octets counted */
	ccall_start(&k, p.c, 6, true, 0);
	g = receive_call(&p);
	reply_ok(&p, &g, 8, 100);
	assert_int_equal(ccall_end(&k), UIW_RR_OK);
	assert_int_equal(k.call.wlen[0], 100);
	assert_int_equal(k.call.reply_len, 4);
	uiw_rr_call_done(p.c, &k.call);
	pair_close(&p);
}

static void errors_strays_grants(void **state)
{
	struct rr_clnt_credits cr;
	struct pair p;
	struct ccall k;
	struct got g;

	(void)state;
	pair_open(&p, true);
	/* §4.5.1: ERR_VERS completes the call with the versions */
	ccall_start(&k, p.c, 0x10, false, 0);
	g = receive_call(&p);
	{
		const uint32_t w[] = { g.xid, 1, 8, UIW_RDMA_ERROR, 1, 2, 3 };

		send_words(&p, w, 7);
	}
	assert_int_equal(ccall_end(&k), UIW_RR_ERR_VERS);
	assert_int_equal(k.call.vers_low, 2);
	assert_int_equal(k.call.vers_high, 3);
	uiw_rr_call_done(p.c, &k.call);
	/* ERR_CHUNK, 20 octets */
	ccall_start(&k, p.c, 0x11, false, 0);
	g = receive_call(&p);
	{
		const uint32_t w[] = { g.xid, 1, 8, UIW_RDMA_ERROR, 2 };

		send_words(&p, w, 5);
	}
	assert_int_equal(ccall_end(&k), UIW_RR_ERR_CHUNK);
	uiw_rr_call_done(p.c, &k.call);
	assert_int_equal(cstats(&p).rdma_errors_received, 2);
	/* a reply for no call, then the right one */
	ccall_start(&k, p.c, 0x12, false, 0);
	g = receive_call(&p);
	{
		struct got other = { .xid = 0x999 };

		reply_ok(&p, &other, 8, 0);
	}
	reply_ok(&p, &g, 8, 0);
	assert_int_equal(ccall_end(&k), UIW_RR_OK);
	uiw_rr_call_done(p.c, &k.call);
	assert_int_equal(cstats(&p).dropped, 1);
	/* an undecodable reply is dropped (§4.5) and the call waits on */
	ccall_start(&k, p.c, 0x13, false, 300);
	g = receive_call(&p);
	{
		const uint32_t w[] = { g.xid, 1, 8, 0, 2, 0, 0, g.xid };

		send_words(&p, w, 8);
	}
	assert_int_equal(ccall_end(&k), UIW_RR_TIMEDOUT);
	uiw_rr_call_done(p.c, &k.call);
	assert_int_equal(cstats(&p).dropped, 2);
	/* the late proper reply to it is dropped too and frees its credit */
	reply_ok(&p, &g, 8, 0);
	/* §3.3.1: a grant of 0 counts as 1 */
	ccall_start(&k, p.c, 0x14, false, 0);
	g = receive_call(&p);
	reply_ok(&p, &g, 0, 0);
	assert_int_equal(ccall_end(&k), UIW_RR_OK);
	uiw_rr_call_done(p.c, &k.call);
	rr_clnt_credits(p.c, &cr);
	assert_int_equal(cr.grant, 1);
	assert_int_equal(cr.outstanding, 0);
	assert_int_equal(cstats(&p).dropped, 3);
	pair_close(&p);
}

static void invalidation(void **state)
{
	struct uiw_rr_stats st;
	struct pair p;
	struct ccall a, b;
	struct got ga, gb;

	(void)state;
	/* R not set by this end: Send With Invalidate is a bad reply */
	pair_open(&p, false);
	ccall_start(&a, p.c, 0x20, true, 0);
	ga = receive_call(&p);
	reply_inv(&p, &ga, 8, 0, ga.wseg.handle);
	assert_int_equal(ccall_end(&a), UIW_RR_BAD_REPLY);
	uiw_rr_call_done(p.c, &a.call);
	pair_close(&p);

	/* R set: the call's own STag is fine, another call's is not */
	pair_open(&p, true);
	ccall_start(&a, p.c, 0x30, false, 0);    /* for a grant of 8 */
	ga = receive_call(&p);
	reply_ok(&p, &ga, 8, 0);
	assert_int_equal(ccall_end(&a), UIW_RR_OK);
	uiw_rr_call_done(p.c, &a.call);
	ccall_start(&a, p.c, 0x31, true, 0);
	ga = receive_call(&p);
	ccall_start(&b, p.c, 0x32, true, 0);
	gb = receive_call(&p);
	/* b's reply invalidating a's STag */
	reply_inv(&p, &gb, 8, 0, ga.wseg.handle);
	assert_int_equal(ccall_end(&b), UIW_RR_BAD_REPLY);
	uiw_rr_call_done(p.c, &b.call);
	reply_ok(&p, &ga, 8, 0);
	assert_int_equal(ccall_end(&a), UIW_RR_OK);
	uiw_rr_call_done(p.c, &a.call);
	/* its own STag: counted */
	ccall_start(&a, p.c, 0x33, true, 0);
	ga = receive_call(&p);
	reply_inv(&p, &ga, 8, 5, ga.wseg.handle);
	assert_int_equal(ccall_end(&a), UIW_RR_OK);
	assert_int_equal(a.call.wlen[0], 5);
	uiw_rr_call_done(p.c, &a.call);
	uiw_rr_clnt_stats(p.c, &st);
	assert_int_equal(st.remote_invalidations, 1);
	pair_close(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(bad_write_lists),
		cmocka_unit_test(errors_strays_grants),
		cmocka_unit_test(invalidation),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
