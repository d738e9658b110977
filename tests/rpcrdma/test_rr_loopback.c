/*
 * The transport at message level over 127.0.0.1 (uiwarp's drop-in
 * libraries): every way a call and a reply travel (inline, Read
 * chunks, Long Call, Write chunks, Reply chunk, and mixes), at every
 * size around the inline thresholds (1024, 4096) and in powers of two
 * up to 16 MiB, each octet checked at both ends, and the counters of
 * both ends saying which way each went.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "rr_test.h"

static struct rt_srv srv;
static struct uiw_rr_clnt *clnt;
static uint32_t next_xid = 0x1000;

static int setup(void **state)
{
	(void)state;
	rt_srv_start(&srv, NULL);
	clnt = rt_connect(&srv, NULL);
	return clnt ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	uiw_rr_clnt_close(clnt);
	rt_srv_stop(&srv);
	return 0;
}

static void call_ok(const struct rt_spec *sp)
{
	char why[256];
	enum uiw_rr_status st = rt_call(clnt, next_xid++, sp, why, sizeof(why));

	if (st != UIW_RR_OK)
		fail_msg("n %zu ddp %d trailer %zu fill %zu wchunk %d/%zu op "
			 "0x%x: %s", sp->n, sp->data_ddp, sp->trailer, sp->fill,
			 sp->wchunk, sp->wlen, sp->op, why);
}

static enum uiw_rr_status call_st(const struct rt_spec *sp, char *why,
				  size_t len)
{
	return rt_call(clnt, next_xid++, sp, why, len);
}

static struct uiw_rr_stats cstats(void)
{
	struct uiw_rr_stats s;

	uiw_rr_clnt_stats(clnt, &s);
	return s;
}

/* Every size the matrix tries: the smallest, every octet from 96
 * under to 32 over each threshold (the call and reply headers take
 * 28 to 80 of them), powers of two (and one more) up to 16 MiB. */
static size_t sizes[600];
static unsigned nsizes;

static void make_sizes(void)
{
	static const size_t thresh[] = { 1024, 4096 };
	size_t n, t;
	unsigned i;

	nsizes = 0;
	for (n = 0; n <= 8; n++)
		sizes[nsizes++] = n;
	for (i = 0; i < 2; i++)
		for (t = thresh[i] - 96; t <= thresh[i] + 32; t++)
			sizes[nsizes++] = t;
	for (n = 16; n <= (16u << 20); n <<= 1) {
		sizes[nsizes++] = n;
		if (n >= 8192 && n < (16u << 20))
			sizes[nsizes++] = n + 1;
	}
}

static void null_call(void **state)
{
	struct rt_spec sp = { .op = RT_ECHO };
	struct uiw_rr_stats before = cstats(), s;
	uint32_t st, rt;
	bool inv;

	(void)state;
	call_ok(&sp);
	s = cstats();
	assert_int_equal(s.calls - before.calls, 1);
	assert_int_equal(s.replies - before.replies, 1);
	assert_int_equal(s.inline_sends - before.inline_sends, 1);
	assert_int_equal(s.read_chunks - before.read_chunks, 0);
	assert_int_equal(s.long_calls - before.long_calls, 0);
	assert_int_equal(s.long_replies - before.long_replies, 0);
	/* RFC 8797 both ways, 4096 each, R set by both */
	uiw_rr_clnt_params(clnt, &st, &rt, &inv);
	assert_int_equal(st, 4096);
	assert_int_equal(rt, 4096);
	assert_true(inv);
}

/* The call's data as a DDP-eligible item (Read chunks once it no
 * longer fits), echoed into a Write chunk: Read and Write chunks. */
static void read_and_write_chunks(void **state)
{
	struct uiw_rr_stats b, a;
	unsigned i;

	(void)state;
	for (i = 0; i < nsizes; i++) {
		struct rt_spec sp = { .op = RT_ECHO | RT_F_DDP, .n = sizes[i],
				      .data_ddp = true, .trailer = 5,
				      .fill = 9, .wchunk = true,
				      .wlen = sizes[i] };

		b = cstats();
		call_ok(&sp);
		a = cstats();
		/* §3.5.2: a Read chunk only when the call would not fit
		 * inline: 52 octets of header (a Write chunk of one
		 * segment), 32 of the stream besides the item */
		if (((sizes[i] + 3) & ~(size_t)3) + 84 > 4096)
			assert_int_equal(a.read_chunks - b.read_chunks, 1);
		else
			assert_int_equal(a.read_chunks - b.read_chunks, 0);
		assert_int_equal(a.write_chunks - b.write_chunks,
				 sizes[i] ? 1 : 0);
		assert_int_equal(a.write_bytes - b.write_bytes, sizes[i]);
		assert_int_equal(a.long_calls - b.long_calls, 0);
		assert_int_equal(a.long_replies - b.long_replies, 0);
	}
}

/* Nothing DDP-eligible: Long Call and Long Reply (Reply chunk) once
 * the streams outgrow the thresholds. */
static void long_call_long_reply(void **state)
{
	struct uiw_rr_stats b, a;
	unsigned i;

	(void)state;
	for (i = 0; i < nsizes; i++) {
		struct rt_spec sp = { .op = RT_ECHO, .n = sizes[i],
				      .trailer = 3 };
		size_t call = 20 + ((sizes[i] + 3) & ~(size_t)3) + 4 + 4;
		size_t reply = 12 + ((sizes[i] + 3) & ~(size_t)3) + 4;
		/* §4.3.3: a Reply chunk (20 more header octets) when the
		 * reply and its 28-octet header may exceed 4096 */
		size_t hdr = 28 + (reply + 28 > 4096 ? 20 : 0);

		b = cstats();
		call_ok(&sp);
		a = cstats();
		assert_int_equal(a.long_calls - b.long_calls,
				 hdr + call > 4096 ? 1 : 0);
		assert_int_equal(a.long_replies - b.long_replies,
				 reply + 28 > 4096 ? 1 : 0);
		if (reply + 28 > 4096)
			assert_int_equal(a.reply_bytes - b.reply_bytes, reply);
		assert_int_equal(a.write_chunks - b.write_chunks, 0);
	}
}

/* DDP-eligible both ways but no Write chunk: the reply's data goes
 * inline or with the rest into the Reply chunk; the call's in a Read
 * chunk, plain octets around it. */
static void read_chunk_long_reply(void **state)
{
	unsigned i;

	(void)state;
	for (i = 0; i < nsizes; i++) {
		struct rt_spec sp = { .op = RT_ECHO | RT_F_DDP, .n = sizes[i],
				      .data_ddp = true, .trailer = 700,
				      .fill = 300 };

		call_ok(&sp);
	}
}

/* Long Call with a DDP-eligible item inside (the Position-Zero chunk
 * holds it with its pad) and a large plain trailer; the reply from
 * the Responder's own memory into a Write chunk. */
static void long_call_with_ddp_item(void **state)
{
	static const size_t n[] = { 1, 1000, 4095, 4097, 65537, 1 << 20 };
	static const size_t t[] = { 5000, 70001 };
	struct uiw_rr_stats b, a;
	unsigned i, j;

	(void)state;
	for (i = 0; i < sizeof(n) / sizeof(n[0]); i++)
		for (j = 0; j < sizeof(t) / sizeof(t[0]); j++) {
			struct rt_spec sp = { .op = RT_ECHO | RT_F_DDP |
					      RT_F_COPY, .n = n[i],
					      .data_ddp = true, .trailer = t[j],
					      .fill = 4100, .wchunk = true,
					      .wlen = n[i] + 100 };

			b = cstats();
			call_ok(&sp);
			a = cstats();
			assert_int_equal(a.long_calls - b.long_calls, 1);
			assert_int_equal(a.long_replies - b.long_replies, 1);
		}
}

/* DDP pieces of no octets: an empty Write chunk (the result inline,
 * §4.3.2.3), a Write chunk left with 0 octets written, a zero-length
 * Read item. */
static void zero_length_ddp(void **state)
{
	struct rt_spec sp = { .op = RT_ECHO | RT_F_DDP, .data_ddp = true,
			      .wchunk = true, .wlen = 0 };

	(void)state;
	call_ok(&sp);
	sp.wlen = 16;
	call_ok(&sp);
	sp.n = 5;
	sp.wlen = 0;     /* empty Write chunk: the 5 octets come inline */
	call_ok(&sp);
	sp.op = RT_ECHO;  /* not DDP-eligible in the reply: chunk unused */
	sp.wlen = 64;
	call_ok(&sp);
}

/* What cannot be conveyed: a result larger than its Write chunk, a
 * reply larger than the Reply chunk offered. */
static void err_chunk(void **state)
{
	struct rt_spec sp = { .op = RT_ECHO | RT_F_DDP, .n = 5000,
			      .data_ddp = true, .wchunk = true, .wlen = 4000 };
	struct uiw_rr_stats b = cstats(), a;
	char why[256];

	(void)state;
	assert_int_equal(call_st(&sp, why, sizeof(why)), UIW_RR_ERR_CHUNK);
	sp = (struct rt_spec){ .op = RT_ECHO, .n = 10000, .reply_max = 9000 };
	assert_int_equal(call_st(&sp, why, sizeof(why)), UIW_RR_ERR_CHUNK);
	a = cstats();
	assert_int_equal(a.rdma_errors_received - b.rdma_errors_received, 2);
	/* and the connection goes on */
	sp = (struct rt_spec){ .op = RT_ECHO, .n = 10000 };
	call_ok(&sp);
}

/* Counters of both ends for a known mix, remote invalidation
 * included (both ends allow it by default). */
static void counters(void **state)
{
	struct rt_spec sp = { .op = RT_ECHO | RT_F_DDP, .n = 100000,
			      .data_ddp = true, .wchunk = true,
			      .wlen = 100000 };
	struct uiw_rr_stats b = cstats(), a;

	(void)state;
	call_ok(&sp);
	a = cstats();
	assert_int_equal(a.read_chunks - b.read_chunks, 1);
	assert_int_equal(a.read_bytes - b.read_bytes, 100000);
	assert_int_equal(a.write_chunks - b.write_chunks, 1);
	assert_int_equal(a.write_bytes - b.write_bytes, 100000);
	assert_int_equal(a.remote_invalidations - b.remote_invalidations, 1);
	assert_int_equal(a.dropped, 0);
	assert_int_equal(srv.bad_calls, 0);
	/* the two replies err_chunk could not convey, and no other */
	assert_int_equal(srv.reply_errors, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(null_call),
		cmocka_unit_test(read_and_write_chunks),
		cmocka_unit_test(long_call_long_reply),
		cmocka_unit_test(read_chunk_long_reply),
		cmocka_unit_test(long_call_with_ddp_item),
		cmocka_unit_test(zero_length_ddp),
		cmocka_unit_test(err_chunk),
		cmocka_unit_test(counters),
	};

	make_sizes();
	return cmocka_run_group_tests(tests, setup, teardown);
}
