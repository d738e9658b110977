/*
 * Conformance: the bound on inbound RDMA Read and Atomic Requests (RFC
 * 5040 §6.1 and §8.1.1 rule 11, RFC 7306 §5.2 and §5.2.2 rule 4, RFC
 * 5042 §6.4.3.3).  Reads and atomics share the queue-1 buffers of IRD;
 * with IRD 4, a raw peer sends a Read whose Response cannot finish (it
 * does not read), then a Read, a FetchAdd and a CmpSwap: IRD is full.
 * One more Request, a FetchAdd or a Read, finds no buffer: Terminate
 * DDP "no buffer available" (1/2/0x02) with its DDP header, nothing
 * queued or performed for it (its target word is unchanged), nothing
 * after the Terminate, and the connection closed.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "cf_env.h"
#include "wire/atomic.h"

#define IRD 4
#define SINK_STAG 0x00c0ffeeu
#define SINK_TO   0x0000100000002000ull

static uint8_t ubuf[256];

/* The next queue-1 message (a Read or an Atomic Request) into ubuf, its
 * header also into hdr; sent.  Returns the header length. */
static size_t send_q1(struct cf_env *e, uint8_t *hdr, uint8_t opcode,
		      const void *body, size_t blen)
{
	size_t hl = rp_hdr_untagged(hdr, opcode, true, UIW_QN_READ_REQ,
				    e->rp.msn[1]++, 0, 0);

	memcpy(ubuf, hdr, hl);
	memcpy(ubuf + hl, body, blen);
	CF_OK(rp_send_fpdu(&e->rp, ubuf, hl + blen));
	return hl;
}

static size_t send_read(struct cf_env *e, uint8_t *hdr, int region,
			uint64_t off, uint32_t size, uint64_t sink_to)
{
	struct uiw_read_req rr = {
		.sink_stag = SINK_STAG, .sink_to = sink_to, .size = size,
		.src_stag = cf_stag(e, region), .src_to = cf_to(e, region, off),
	};
	uint8_t body[UIW_READ_REQ_LEN];

	uiw_read_req_encode(body, &rr);
	return send_q1(e, hdr, UIW_OP_READ_REQ, body, sizeof(body));
}

static size_t send_atomic(struct cf_env *e, uint8_t *hdr,
			  const struct uiw_atomic_req *r)
{
	uint8_t body[UIW_ATOMIC_REQ_LEN];

	assert_int_equal(uiw_atomic_req_encode(body, sizeof(body), r),
			 UIW_ATOMIC_REQ_LEN);
	return send_q1(e, hdr, UIW_OP_ATOMIC_REQ, body, sizeof(body));
}

static void beyond_ird(struct cf_env *e, bool excess_is_atomic)
{
	/* Far beyond uiwarp's send buffer and the raw peer's small receive
	 * window: the first Response cannot finish while the peer does not
	 * read, so IRD stays taken. */
	const size_t big = 32u << 20;
	uint8_t hdr[UIW_DDP_MAX_HDR_LEN], *w = NULL;
	struct cf_term_expect x;
	struct uiw_atomic_req r;
	struct uiw_qp_attr a;
	struct cf_opts o;
	uint64_t before;
	size_t hl, got = 0, plen;

	cf_opts_init(&o);
	o.ird = IRD;
	o.big_len = big;
	o.raw_rcvbuf = 4096;
	CF_OK(cf_open(e, &o, true));
	cf_qp_state(e, &a);
	assert_int_equal(a.ird, IRD);
	w = e->r[CF_ATOMIC].p;

	/* IRD requests: Read (stalled), Read, FetchAdd, CmpSwap. */
	send_read(e, hdr, CF_BIG, 0, (uint32_t)big, SINK_TO);
	send_read(e, hdr, CF_READ, 0, 64, SINK_TO + big);
	uiw_atomic_req_fetchadd(&r, 1, cf_stag(e, CF_ATOMIC),
				cf_to(e, CF_ATOMIC, 64), 5, 0);
	send_atomic(e, hdr, &r);
	memcpy(&before, w + 128, 8);
	uiw_atomic_req_cmpswap(&r, 2, cf_stag(e, CF_ATOMIC),
			       cf_to(e, CF_ATOMIC, 128), before, ~0ull,
			       0x0123456789abcdefull, ~0ull);
	send_atomic(e, hdr, &r);
	/* One more: no queue-1 buffer left. */
	if (excess_is_atomic) {
		uiw_atomic_req_fetchadd(&r, 3, cf_stag(e, CF_ATOMIC),
					cf_to(e, CF_ATOMIC, 192), 0x100, 0);
		hl = send_atomic(e, hdr, &r);
		plen = UIW_ATOMIC_REQ_LEN;
	} else {
		hl = send_read(e, hdr, CF_READ, 64, 64, SINK_TO + big + 64);
		plen = UIW_READ_REQ_LEN;
	}
	/* Only once uiwarp has refused it does the raw peer read.  What
	 * went out before the Terminate: only part of the first Response
	 * (the others wait behind it, in Request order). */
	CF_OK(cf_wait_not_rts(e));
	assert_int_equal(cf_read_resp(e, SINK_STAG, SINK_TO, e->r[CF_BIG].p,
				      big, &got), 1);
	assert_true(got < big);
	/* The two atomics within IRD may have been performed before the
	 * stream failed (RFC 5040 §5.5: indeterminate); the one beyond IRD
	 * must not have been: its word is checked with the rest. */
	cf_mem_loose(e, w + 64, 8);
	cf_mem_loose(e, w + 128, 8);
	memset(&x, 0, sizeof(x));
	x.err = UIW_E_DDP_U_MSN_NO_BUF;
	x.m = x.d = true;
	x.seg_len = (uint16_t)(hl + plen);
	x.ddp_hdr = hdr;
	x.ddp_hdr_len = hl;
	CF_OK(cf_expect_term(e, &x));
}

/* The fifth is an Atomic Request. */
static void test_ird_mixed_atomic_beyond(void **state)
{
	beyond_ird(*state, true);
}

/* The fifth is an RDMA Read Request. */
static void test_ird_mixed_read_beyond(void **state)
{
	beyond_ird(*state, false);
}

int main(void)
{
	/* Over SCTP (RFC 5043): every case runs. */
	static const struct cf_mpa_only mpa_only[] = { { NULL, NULL } };
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_ird_mixed_atomic_beyond,
						cf_state_new, cf_state_free),
		cmocka_unit_test_setup_teardown(test_ird_mixed_read_beyond,
						cf_state_new, cf_state_free),
	};

	return cf_run_tests("conformance: bounds", tests,
			    sizeof(tests) / sizeof(tests[0]), mpa_only);
}
