/*
 * FPDU alignment with TCP segments (RFC 5044 §5.1) as uiw_conn_param's
 * align asks for it, over 127.0.0.1.
 *
 * On loopback a full FPDU (MULPDU 64768: 64776 octets) is shorter than a
 * TCP segment (65483), so the only way to start every segment with an
 * FPDU is a message of its own for each (MSG_EOR).  align ON does that;
 * the default does it to this host only with markers, and otherwise,
 * like align OFF, hands runs of FPDUs to the kernel as one message.
 * Each case streams
 * RDMA Writes of 1 MiB (17 FPDUs each), checks every octet that
 * arrived, and counts the LLP's messages of at least 4 KiB
 * (uiw_tcp_tx_bulk_msgs): at least one per full FPDU when aligned, fewer
 * than half as many as FPDUs when not.
 */
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <setjmp.h>
#include <cmocka.h>

#include "lb_util.h"
#include "../../src/llp/tcp.h"

#define MSG_LEN (1024 * 1024)
#define NMSG 8
#define DEPTH 4

struct align_case {
	const char *name;
	enum uiw_opt align;
	enum uiw_opt markers;
	int aligned;              /* expected: a message per FPDU */
};

static void run_case(const struct align_case *c)
{
	struct lbu_pair p;
	struct lbu_opts o;
	struct lbu_buf *src, *dst;
	uint64_t before, msgs, fpdus, full;
	uint32_t mulpdu;
	unsigned i, done = 0;

	lbu_opts_init(&o);
	o.align = c->align;
	o.cli_markers = o.srv_markers = c->markers;
	LBU_OK(lbu_pair_connect(&p, &o));
	mulpdu = p.cli.attr.mulpdu;
	LBU_NN(src = lbu_buf_alloc(&p.cli, (size_t)DEPTH * MSG_LEN,
				   UIW_ACCESS_LOCAL_WRITE));
	LBU_NN(dst = lbu_buf_alloc(&p.srv, (size_t)NMSG * MSG_LEN,
				   UIW_ACCESS_LOCAL_WRITE |
				   UIW_ACCESS_REMOTE_WRITE |
				   UIW_ACCESS_REMOTE_READ));
	before = atomic_load(&uiw_tcp_tx_bulk_msgs);
	for (i = 0; i < NMSG; i++) {
		size_t so = (size_t)(i % DEPTH) * MSG_LEN;

		if (i >= DEPTH) {
			LBU_OK(lbu_expect_wc(p.cli.scq, i - DEPTH,
					     UIW_WC_SUCCESS,
					     UIW_WC_RDMA_WRITE, NULL));
			done++;
		}
		lbu_fill(src->mem + so, MSG_LEN, 100 + i);
		LBU_OK(lbu_post_send(&p.cli, i, UIW_WR_RDMA_WRITE,
				     UIW_SEND_SIGNALED, src, so, MSG_LEN,
				     lbu_to(dst, (size_t)i * MSG_LEN),
				     dst->mr->rkey, 0));
	}
	for (; done < NMSG; done++)
		LBU_OK(lbu_expect_wc(p.cli.scq, done, UIW_WC_SUCCESS,
				     UIW_WC_RDMA_WRITE, NULL));
	/* RFC 5040 §5.5: the Response follows the Writes, all placed. */
	LBU_OK(lbu_post_send(&p.cli, 1000, UIW_WR_RDMA_READ,
			     UIW_SEND_SIGNALED, src, 0, 8, lbu_to(dst, 0),
			     dst->mr->rkey, 0));
	LBU_OK(lbu_expect_wc(p.cli.scq, 1000, UIW_WC_SUCCESS,
			     UIW_WC_RDMA_READ, NULL));
	msgs = atomic_load(&uiw_tcp_tx_bulk_msgs) - before;
	for (i = 0; i < NMSG; i++) {
		char what[48];

		snprintf(what, sizeof(what), "%s: Write %u", c->name, i);
		LBU_OK(lbu_verify(dst->mem + (size_t)i * MSG_LEN, MSG_LEN,
				  100 + i, what));
	}
	/* full FPDUs: each at least 4 KiB (the last of a Write may be
	 * shorter and then not counted) */
	full = (uint64_t)NMSG * (MSG_LEN / mulpdu);
	fpdus = (uint64_t)NMSG * ((MSG_LEN + mulpdu - 1) / mulpdu);
	printf("%s: MULPDU %u, %llu FPDUs in %llu messages of 4 KiB or "
	       "more\n", c->name, mulpdu, (unsigned long long)fpdus,
	       (unsigned long long)msgs);
	if (c->aligned && msgs < full)
		fail_msg("%s: %llu full FPDUs went in %llu messages: FPDUs "
			 "shared messages, alignment not kept", c->name,
			 (unsigned long long)full, (unsigned long long)msgs);
	if (!c->aligned && msgs * 2 > fpdus)
		fail_msg("%s: %llu FPDUs took %llu messages: still one per "
			 "FPDU", c->name, (unsigned long long)fpdus,
			 (unsigned long long)msgs);
	LBU_OK(lbu_pair_destroy(&p));
}

static const struct align_case cases[] = {
	{ "default, no markers", UIW_OPT_DEFAULT, UIW_OPT_OFF, 0 },
	{ "align on", UIW_OPT_ON, UIW_OPT_OFF, 1 },
	{ "align off", UIW_OPT_OFF, UIW_OPT_OFF, 0 },
	{ "default, markers", UIW_OPT_DEFAULT, UIW_OPT_ON, 1 },
};

static void test_align_case(void **state)
{
	run_case(*state);
}

/* An align value out of range is refused with a message. */
static void test_align_bad(void **state)
{
	struct lbu_pair p;
	struct lbu_opts o;

	(void)state;
	lbu_opts_init(&o);
	o.align = (enum uiw_opt)7;
	assert_true(lbu_pair_connect(&p, &o) < 0);
	assert_non_null(strstr(lbu_err(), "align"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		{ cases[0].name, test_align_case, NULL, NULL,
		  (void *)&cases[0] },
		{ cases[1].name, test_align_case, NULL, NULL,
		  (void *)&cases[1] },
		{ cases[2].name, test_align_case, NULL, NULL,
		  (void *)&cases[2] },
		{ cases[3].name, test_align_case, NULL, NULL,
		  (void *)&cases[3] },
		cmocka_unit_test(test_align_bad),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
