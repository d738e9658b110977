/*
 * The Responder against a Requester written with raw verbs, sending
 * what RFC 8166 says a Responder answers with RDMA_ERROR (ERR_VERS,
 * ERR_CHUNK), drops, or cannot survive: wrong versions and procedures,
 * short and truncated headers, Read chunks past the message, overlapping
 * or larger than max_call, bad STags in Read and Write chunks, a Send
 * longer than the receive buffer, more calls than granted.  The
 * Responder never touches memory it does not own, answers as the RFC
 * says, and when a connection cannot go on it ends that one alone: the
 * listener and the other connections go on.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "rr_test.h"

static struct rt_srv srv;

/* Words to octets (XDR). */
static size_t words(uint8_t *out, const uint32_t *w, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		rt_put32(out + 4 * i, w[i]);
	return 4 * n;
}

/* A valid inline call of the test protocol (RT_ECHO, no data). */
static size_t echo_call(uint8_t *out, uint32_t xid)
{
	const uint32_t w[] = { xid, 1, 8, UIW_RDMA_MSG, 0, 0, 0,
			       xid, RT_ECHO, 0, 0, 0, 0 };

	return words(out, w, sizeof(w) / sizeof(w[0]));
}

static void raw_connect(struct rt_raw *r)
{
	uint8_t pd[UIW_RPCRDMA_CM_LEN];

	uiw_rpcrdma_cm_encode(pd, false, 4096, 4096);
	assert_int_equal(rt_raw_connect(r, &srv, pd, sizeof(pd)), 0);
}

/* The next message received; fails the test when none comes. */
static int expect_msg(struct rt_raw *r, uint8_t *buf, size_t cap)
{
	int n = rt_raw_recv(r, buf, cap, RT_WAIT_MS);

	if (n < 0)
		fail_msg("no message received (%d)", n);
	return n;
}

/* The connection answers a valid call: its reply comes next (nothing
 * was sent for what came before it). */
static void alive(struct rt_raw *r, uint32_t xid)
{
	uint8_t m[64], b[256];
	int n;

	assert_int_equal(rt_raw_send(r, m, echo_call(m, xid)), 0);
	n = expect_msg(r, b, sizeof(b));
	if (n != 44 || rt_get32(b) != xid || rt_get32(b + 12) != UIW_RDMA_MSG)
		fail_msg("expected the reply to %08x, got %d octets: xid %08x "
			 "proc %u", xid, n, rt_get32(b), rt_get32(b + 12));
	/* §3.3.1: a grant, never 0 */
	assert_true(rt_get32(b + 8) >= 1);
	assert_int_equal(rt_get32(b + 28), xid);
}

/* Sends w and expects RDMA_ERROR err for xid (§4.5). */
static void expect_error(struct rt_raw *r, const uint32_t *w, size_t nw,
			 uint32_t err)
{
	uint8_t m[4096], b[256];
	int n;

	assert_int_equal(rt_raw_send(r, m, words(m, w, nw)), 0);
	n = expect_msg(r, b, sizeof(b));
	if (rt_get32(b + 12) != UIW_RDMA_ERROR || rt_get32(b + 16) != err)
		fail_msg("xid %08x: expected RDMA_ERROR %u, got proc %u err %u",
			 w[0], err, rt_get32(b + 12), rt_get32(b + 16));
	assert_int_equal(rt_get32(b), w[0]);        /* the failing xid */
	assert_int_equal(rt_get32(b + 4), w[1]);    /* and its version */
	assert_true(rt_get32(b + 8) >= 1);
	assert_int_equal(n, err == UIW_RPCRDMA_ERR_VERS ? 28 : 20);
	if (err == UIW_RPCRDMA_ERR_VERS) {
		assert_int_equal(rt_get32(b + 20), 1);
		assert_int_equal(rt_get32(b + 24), 1);
	}
}

static void expect_dropped(struct rt_raw *r, const uint32_t *w, size_t nw,
			   uint32_t next_xid)
{
	uint8_t m[4096];

	assert_int_equal(rt_raw_send(r, m, words(m, w, nw)), 0);
	alive(r, next_xid);
}

static int setup(void **state)
{
	struct uiw_rr_opts o;

	(void)state;
	uiw_rr_opts_init(&o);
	o.credits = 8;
	o.max_call = 1u << 20;
	rt_srv_start(&srv, &o);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	rt_srv_stop(&srv);
	return 0;
}

/* ---- Answered or dropped ----------------------------------------------- */

static void versions_and_procedures(void **state)
{
	struct rt_raw r;
	uint8_t pd[64];

	(void)state;
	raw_connect(&r);
	/* RFC 8797: the Responder's private data came back */
	memcpy(pd, r.peer_pd, r.peer_pd_len);
	{
		struct uiw_rpcrdma_cm cm;

		uiw_rpcrdma_cm_decode(pd, r.peer_pd_len, &cm);
		assert_true(cm.present);
		assert_int_equal(cm.recv_size, 4096);
	}
	alive(&r, 0x100);
	/* §4.5.1: another version: ERR_VERS, versions 1 to 1 */
	{
		const uint32_t w[] = { 0x101, 2, 1, 0, 0, 0, 0 };

		expect_error(&r, w, 7, UIW_RPCRDMA_ERR_VERS);
	}
	/* §4.5.2: an unknown procedure: ERR_CHUNK */
	{
		const uint32_t w[] = { 0x102, 1, 1, 7, 0, 0, 0 };

		expect_error(&r, w, 7, UIW_RPCRDMA_ERR_CHUNK);
	}
	/* §4.6.1: RDMA_MSGP: ERR_CHUNK */
	{
		const uint32_t w[] = { 0x103, 1, 1, UIW_RDMA_MSGP, 0, 0, 0, 0, 0 };

		expect_error(&r, w, 9, UIW_RPCRDMA_ERR_CHUNK);
	}
	/* §4.6.2: RDMA_DONE dropped; §4.2.4: RDMA_ERROR dropped; §4.5:
	 * shorter than 28 octets dropped unread */
	{
		const uint32_t done[] = { 0x104, 1, 1, UIW_RDMA_DONE, 0, 0, 0 };
		const uint32_t error[] = { 0x105, 1, 1, UIW_RDMA_ERROR, 2 };
		const uint32_t shrt[] = { 0x106, 1, 1, UIW_RDMA_MSG, 0, 0 };
		const uint32_t vshort[] = { 0x107, 9, 1, UIW_RDMA_MSG };

		expect_dropped(&r, done, 7, 0x200);
		expect_dropped(&r, error, 5, 0x201);
		expect_dropped(&r, shrt, 6, 0x202);
		expect_dropped(&r, vshort, 4, 0x203);
	}
	rt_raw_close(&r);
}

static void bad_chunk_lists(void **state)
{
	struct rt_raw r;
	size_t alen;
	uint32_t rkey;
	uint64_t a;

	(void)state;
	raw_connect(&r);
	a = (uintptr_t)rt_raw_area(&r, &alen, &rkey);
	/* a list discriminator of 2 */
	{
		const uint32_t w[] = { 0x301, 1, 1, 0, 2, 0, 0 };

		expect_error(&r, w, 7, UIW_RPCRDMA_ERR_CHUNK);
	}
	/* a Read list that ends inside a segment */
	{
		const uint32_t w[] = { 0x302, 1, 1, 0, 1, 8, rkey, 100 };

		expect_error(&r, w, 8, UIW_RPCRDMA_ERR_CHUNK);
	}
	/* a Write chunk claiming 1000 segments */
	{
		const uint32_t w[] = { 0x303, 1, 1, 0, 0, 1, 1000, 0, 0, 0 };

		expect_error(&r, w, 10, UIW_RPCRDMA_ERR_CHUNK);
	}
	/* a Read chunk at a Position past the end of the Payload stream */
	{
		const uint32_t w[] = { 0x304, 1, 1, 0,
			1, 4000, rkey, 16, (uint32_t)(a >> 32), (uint32_t)a, 0,
			0, 0, 0x304, RT_ECHO, 0, 0, 0, 0 };

		expect_error(&r, w, 19, UIW_RPCRDMA_ERR_CHUNK);
	}
	/* two Read chunks, the second inside what the first puts back */
	{
		const uint32_t w[] = { 0x305, 1, 1, 0,
			1, 20, rkey, 100, (uint32_t)(a >> 32), (uint32_t)a,
			1, 24, rkey, 8, (uint32_t)(a >> 32), (uint32_t)a, 0,
			0, 0, 0x305, RT_ECHO, 0, 0, 0, 0 };

		expect_error(&r, w, 25, UIW_RPCRDMA_ERR_CHUNK);
	}
	/* a Read chunk larger than max_call (1 MiB here) */
	{
		const uint32_t w[] = { 0x306, 1, 1, 0,
			1, 20, rkey, 0xfffffff0u, (uint32_t)(a >> 32),
			(uint32_t)a, 0, 0, 0, 0x306, RT_ECHO, 0, 0, 0, 0 };

		expect_error(&r, w, 19, UIW_RPCRDMA_ERR_CHUNK);
	}
	/* a Position that is not a multiple of 4 */
	{
		const uint32_t w[] = { 0x307, 1, 1, 0,
			1, 18, rkey, 8, (uint32_t)(a >> 32), (uint32_t)a, 0,
			0, 0, 0x307, RT_ECHO, 0, 0, 0, 0 };

		expect_error(&r, w, 19, UIW_RPCRDMA_ERR_CHUNK);
	}
	/* RDMA_NOMSG with a Reply chunk only: the call is nowhere */
	{
		const uint32_t w[] = { 0x308, 1, 1, UIW_RDMA_NOMSG, 0, 0,
			1, 1, rkey, 64, (uint32_t)(a >> 32), (uint32_t)a };

		expect_error(&r, w, 12, UIW_RPCRDMA_ERR_CHUNK);
	}
	/* RDMA_MSG with a Position-Zero Read chunk */
	{
		const uint32_t w[] = { 0x309, 1, 1, 0,
			1, 0, rkey, 24, (uint32_t)(a >> 32), (uint32_t)a, 0,
			0, 0, 0x309, RT_ECHO, 0, 0, 0, 0 };

		expect_error(&r, w, 19, UIW_RPCRDMA_ERR_CHUNK);
	}
	/* rdma_xid not the RPC message's XID (§4.5.2) */
	{
		const uint32_t w[] = { 0x30a, 1, 1, 0, 0, 0, 0,
			0x999, RT_ECHO, 0, 0, 0, 0 };

		expect_error(&r, w, 13, UIW_RPCRDMA_ERR_CHUNK);
	}
	/* more Read segments than the Responder takes (RR_MAX_RSEG) */
	{
		uint32_t w[4 + 6 * (RR_MAX_RSEG + 1) + 3 + 6];
		size_t n = 0;
		unsigned i;

		w[n++] = 0x30b;
		w[n++] = 1;
		w[n++] = 1;
		w[n++] = 0;
		for (i = 0; i <= RR_MAX_RSEG; i++) {
			w[n++] = 1;
			w[n++] = 20;
			w[n++] = rkey;
			w[n++] = 1;
			w[n++] = (uint32_t)(a >> 32);
			w[n++] = (uint32_t)a;
		}
		w[n++] = 0;
		w[n++] = 0;
		w[n++] = 0;
		expect_error(&r, w, n, UIW_RPCRDMA_ERR_CHUNK);
	}
	/* and the connection goes on; a proper Read chunk from the raw
	 * Requester's memory works */
	{
		uint8_t *area = (uint8_t *)(uintptr_t)a, b[256];
		const uint32_t w[] = { 0x30c, 1, 1, 0,
			1, 20, rkey, 10, (uint32_t)(a >> 32), (uint32_t)a, 0,
			0, 0, 0x30c, RT_ECHO, 0, 0, 10, 0 };
		uint8_t m[256];
		int n;

		rt_fill(area, 10, 0x30c);
		assert_int_equal(rt_raw_send(&r, m, words(m, w, 19)), 0);
		n = expect_msg(&r, b, sizeof(b));
		/* RDMA_MSG, 28 octets of header, then xid 0 10 data pad 0 */
		assert_int_equal(n, 28 + 12 + 12 + 4);
		assert_int_equal(rt_get32(b + 12), UIW_RDMA_MSG);
		assert_int_equal(rt_get32(b + 36), 10);
		assert_int_equal(rt_check(b + 40, 10, 0x30c), 10);
	}
	alive(&r, 0x3ff);
	rt_raw_close(&r);
	pthread_mutex_lock(&srv.mu);
	assert_int_equal(srv.bad_calls, 0);
	pthread_mutex_unlock(&srv.mu);
}

/* ---- Ended, alone ------------------------------------------------------ */

/* The connection ends; the listener and another connection go on. */
static void ends_alone(struct rt_raw *r, unsigned ended_before)
{
	struct rt_spec sp = { .op = RT_ECHO, .n = 33 };
	struct uiw_rr_clnt *c;
	char why[256];

	assert_true(rt_raw_wait_dead(r, RT_WAIT_MS));
	assert_true(rt_srv_wait(&srv, &srv.ended, ended_before + 1));
	rt_raw_close(r);
	c = rt_connect(&srv, NULL);
	assert_non_null(c);
	if (rt_call(c, 0x777, &sp, why, sizeof(why)) != UIW_RR_OK)
		fail_msg("after the end: %s", why);
	uiw_rr_clnt_close(c);
}

static void bad_read_stag(void **state)
{
	struct rt_raw r, other;
	unsigned ended = rt_srv_get(&srv, &srv.ended);
	size_t alen;
	uint32_t rkey;
	uint64_t a;
	uint8_t m[256];

	(void)state;
	raw_connect(&other);
	raw_connect(&r);
	a = (uintptr_t)rt_raw_area(&r, &alen, &rkey);
	{
		/* §4.5.3: an STag that is not ours to read */
		const uint32_t w[] = { 0x401, 1, 1, 0,
			1, 20, rkey ^ 0x55aa00, 64, (uint32_t)(a >> 32),
			(uint32_t)a, 0, 0, 0, 0x401, RT_ECHO, 0, 0, 64, 0 };

		/* posted, not waited for: the connection may end before
		 * the Send's completion is reported */
		assert_int_equal(rt_raw_post(&r, m, words(m, w, 19)), 0);
	}
	ends_alone(&r, ended);
	alive(&other, 0x402);
	rt_raw_close(&other);
}

static void bad_write_stag(void **state)
{
	struct rt_raw r;
	unsigned ended = rt_srv_get(&srv, &srv.ended);
	size_t alen;
	uint32_t rkey;
	uint64_t a;
	uint8_t m[256];

	(void)state;
	raw_connect(&r);
	a = (uintptr_t)rt_raw_area(&r, &alen, &rkey);
	{
		/* a Write chunk with another STag, and a ddp result for it:
		 * 8 octets of data (RT_F_DDP), the call's data inline */
		const uint32_t w[] = { 0x501, 1, 1, 0, 0,
			1, 1, rkey ^ 0x33cc00, 64, (uint32_t)(a >> 32),
			(uint32_t)a, 0, 0,
			0x501, RT_ECHO | RT_F_DDP, 0, 0, 8, 0, 0, 0 };
		size_t n = words(m, w, 21);

		/* the data as the test protocol has it, at 13 * 4 + 20 */
		rt_fill(m + 72, 8, 0x501);
		assert_int_equal(rt_raw_post(&r, m, n), 0);
	}
	ends_alone(&r, ended);
}

static void send_too_long(void **state)
{
	struct uiw_rr_opts o;
	struct rt_srv small;
	struct rt_raw r;
	uint8_t m[4096];

	(void)state;
	/* a Responder that receives 1024 octets (and says so) */
	uiw_rr_opts_init(&o);
	o.inline_recv = 1024;
	rt_srv_start(&small, &o);
	assert_int_equal(rt_raw_connect(&r, &small, NULL, 0), 0);
	memset(m, 0, sizeof(m));
	echo_call(m, 0x601);
	/* RFC 5041 §7.1: longer than the posted buffer: the RNIC ends the
	 * connection */
	assert_int_equal(rt_raw_post(&r, m, 2000), 0);
	assert_true(rt_raw_wait_dead(&r, RT_WAIT_MS));
	assert_true(rt_srv_wait(&small, &small.ended, 1));
	rt_raw_close(&r);
	{
		struct uiw_rr_clnt *c = rt_connect(&small, NULL);
		struct rt_spec sp = { .op = RT_ECHO, .n = 3000 };
		char why[256];

		assert_non_null(c);
		if (rt_call(c, 0x602, &sp, why, sizeof(why)) != UIW_RR_OK)
			fail_msg("after the end: %s", why);
		uiw_rr_clnt_close(c);
	}
	rt_srv_stop(&small);
}

/* §3.3.1: more calls than the 8 granted, while the Responder's thread
 * does nothing: the ninth finds no receive and the RNIC ends the
 * connection (RFC 5041 §7.1). */
static void credit_overrun(void **state)
{
	struct rt_raw r;
	unsigned ended = rt_srv_get(&srv, &srv.ended), i;
	uint8_t m[64];

	(void)state;
	raw_connect(&r);
	alive(&r, 0x700);
	rt_srv_gate(&srv);
	for (i = 0; i <= 8; i++)
		assert_int_equal(rt_raw_post(&r, m, echo_call(m, 0x701 + i)), 0);
	assert_true(rt_raw_wait_dead(&r, RT_WAIT_MS));
	rt_srv_ungate(&srv);
	ends_alone(&r, ended);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(versions_and_procedures),
		cmocka_unit_test(bad_chunk_lists),
		cmocka_unit_test(bad_read_stag),
		cmocka_unit_test(bad_write_stag),
		cmocka_unit_test(send_too_long),
		cmocka_unit_test(credit_overrun),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
