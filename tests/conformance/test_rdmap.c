/*
 * Conformance: the RDMAP errors a peer can provoke (RFC 5040 §4.8,
 * §5, §6.1, §7.2): invalid RDMAP version, unexpected opcodes, RDMA Read
 * Requests with invalid fields (Remote Protection errors carry the
 * Request's RDMA header, R bit), Read Requests beyond IRD, bad Read
 * Responses, Send with Invalidate of an STag that cannot be invalidated;
 * and the RDMAP rules a responder must honour (zero-length Reads are not
 * validated, §5.2.1; Responses go to the sink the Request named, §4.4;
 * a Terminate from the peer ends the stream, §5.4).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "cf_env.h"
#include "rnic/dev.h"
#include "rnic/mr.h"

static uint8_t ubuf[66000];

static void open_env(struct cf_env *e, bool outstanding, uint32_t ird,
		     size_t big_len, int rcvbuf)
{
	struct cf_opts o;

	cf_opts_init(&o);
	o.ird = ird;
	o.big_len = big_len;
	o.raw_rcvbuf = rcvbuf;
	CF_OK(cf_open(e, &o, outstanding));
}

/* Closes the environment and opens a fresh one (loops over variants). */
static void reopen(struct cf_env *e, bool outstanding)
{
	assert_int_equal(cf_close(e), 0);
	memset(e, 0, sizeof(*e));
	open_env(e, outstanding, 0, 0, 0);
}

static void send_bad(struct cf_env *e, const uint8_t *hdr, size_t hl,
		     const void *pl, size_t len, uiw_err_t err,
		     struct cf_term_expect *x)
{
	memcpy(ubuf, hdr, hl);
	if (len)
		memcpy(ubuf + hl, pl, len);
	CF_OK(rp_send_fpdu(&e->rp, ubuf, hl + len));
	memset(x, 0, sizeof(*x));
	x->err = err;
	x->m = x->d = true;
	x->seg_len = (uint16_t)(hl + len);
	x->ddp_hdr = hdr;
	x->ddp_hdr_len = hl;
}

static const uint8_t eight[8] = "8octets!";

/* ---- Invalid RDMAP version (§4.1, §7.2 item 3) ------------------------- */

static void version_case(struct cf_env *e, uint8_t rv)
{
	struct uiw_ddp_hdr h = {
		.last = true, .ddp_ver = 1, .rdmap_ver = rv,
		.opcode = UIW_OP_SEND, .qn = 0,
	};
	uint8_t hdr[UIW_DDP_MAX_HDR_LEN];
	struct cf_term_expect x;
	size_t hl;

	h.msn = e->rp.msn[0]++;
	hl = uiw_ddp_hdr_encode(hdr, &h);
	send_bad(e, hdr, hl, eight, 8, UIW_E_RDMAP_INVALID_VERSION, &x);
	CF_OK(cf_expect_term(e, &x));
}

/* RV 2 and 3 are no RDMAP version; RV 0 is the RDMA Consortium's, which
 * a stream set up with MPA revision 1 does not speak (§4.1). */
static void test_r_version(void **state)
{
	struct cf_env *e = *state;
	static const uint8_t rvs[] = { 2, 3, 0 };
	size_t i;

	for (i = 0; i < sizeof(rvs); i++) {
		if (i)
			reopen(e, true);
		else
			open_env(e, true, 0, 0, 0);
		version_case(e, rvs[i]);
	}
}

/* ---- Unexpected opcodes (§4.1 Figure 4, §7.2 item 2) ------------------- */

static void opcode_case(struct cf_env *e, bool tagged, uint8_t op,
			uint32_t qn)
{
	struct uiw_ddp_hdr h = {
		.tagged = tagged, .last = true, .ddp_ver = 1,
		.rdmap_ver = 1, .opcode = op, .qn = qn, .msn = 1,
	};
	uint8_t hdr[UIW_DDP_MAX_HDR_LEN];
	struct cf_term_expect x;
	size_t hl;

	if (tagged) {
		h.stag = cf_stag(e, CF_WRITE);
		h.to = cf_to(e, CF_WRITE, 0);
	} else {
		h.msn = e->rp.msn[qn < 4 ? qn : 0];
	}
	hl = uiw_ddp_hdr_encode(hdr, &h);
	send_bad(e, hdr, hl, eight, 8, UIW_E_RDMAP_UNEXPECTED_OPCODE, &x);
	CF_OK(cf_expect_term(e, &x));
}

/* Opcodes 1100b..1111b are reserved (RFC 5040 Figure 4; RFC 7306 §10.1
 * leaves them unassigned), on an untagged and on a tagged segment. */
static void test_r_opcode_reserved(void **state)
{
	struct cf_env *e = *state;
	unsigned op, t, n = 0;

	for (t = 0; t < 2; t++) {
		for (op = 0xc; op <= 0xf; op++) {
			if (n++)
				reopen(e, true);
			else
				open_env(e, true, 0, 0, 0);
			opcode_case(e, t, (uint8_t)op, 0);
		}
	}
}

/* Figure 4: each opcode has its buffer model and queue.  An untagged
 * opcode on a tagged segment, a tagged one on an untagged segment, and
 * opcodes on the wrong queue are unexpected. */
static void test_r_opcode_send_tagged(void **state)
{
	open_env(*state, true, 0, 0, 0);
	opcode_case(*state, true, UIW_OP_SEND, 0);
}

static void test_r_opcode_terminate_tagged(void **state)
{
	open_env(*state, true, 0, 0, 0);
	opcode_case(*state, true, UIW_OP_TERMINATE, 0);
}

static void test_r_opcode_write_untagged(void **state)
{
	open_env(*state, true, 0, 0, 0);
	opcode_case(*state, false, UIW_OP_WRITE, 0);
}

static void test_r_opcode_read_resp_untagged(void **state)
{
	open_env(*state, true, 0, 0, 0);
	opcode_case(*state, false, UIW_OP_READ_RESP, 0);
}

static void test_r_opcode_read_req_on_q0(void **state)
{
	open_env(*state, true, 0, 0, 0);
	opcode_case(*state, false, UIW_OP_READ_REQ, 0);
}

static void test_r_opcode_send_on_q1(void **state)
{
	open_env(*state, true, 0, 0, 0);
	opcode_case(*state, false, UIW_OP_SEND, 1);
}

static void test_r_opcode_send_on_q2(void **state)
{
	open_env(*state, true, 0, 0, 0);
	opcode_case(*state, false, UIW_OP_SEND, 2);
}

/* A Read Response when no RDMA Read is outstanding (§5.2.2). */
static void test_r_read_resp_unsolicited(void **state)
{
	open_env(*state, false, 0, 0, 0);
	opcode_case(*state, true, UIW_OP_READ_RESP, 0);
}

/* ---- RDMA Read Requests (§4.4, §5.2.1, §7.2 items 4a-e) --------------- */

/* Sends a Read Request; the Terminate must carry M, D and R with the
 * Request's DDP and RDMA headers as sent (§4.8, §7.1 case 3). */
static void read_req_case(struct cf_env *e, const struct uiw_read_req *rr,
			  uiw_err_t err)
{
	uint8_t hdr[UIW_DDP_MAX_HDR_LEN], body[UIW_READ_REQ_LEN];
	struct cf_term_expect x;
	size_t hl;

	hl = rp_hdr_untagged(hdr, UIW_OP_READ_REQ, true, UIW_QN_READ_REQ,
			     e->rp.msn[1]++, 0, 0);
	uiw_read_req_encode(body, rr);
	send_bad(e, hdr, hl, body, sizeof(body), err, &x);
	x.r = UIW_ERR_ETYPE(err) == 1 && UIW_ERR_LAYER(err) == 0;
	x.rdmap_hdr = body;
	CF_OK(cf_expect_term(e, &x));
}

#define RR_SINK_STAG 0x00c0ffeeu
#define RR_SINK_TO   0x0000100000002000ull

static void rr_init(struct uiw_read_req *rr, uint32_t src_stag,
		    uint64_t src_to, uint32_t size)
{
	rr->sink_stag = RR_SINK_STAG;
	rr->sink_to = RR_SINK_TO;
	rr->size = size;
	rr->src_stag = src_stag;
	rr->src_to = src_to;
}

/* 4a: the Data Source STag must be valid. */
static void test_r_read_invalid_stag(void **state)
{
	struct cf_env *e = *state;
	struct uiw_read_req rr;

	open_env(e, true, 0, 0, 0);
	rr_init(&rr, cf_stag(e, CF_READ) ^ 0x80, cf_to(e, CF_READ, 0), 16);
	read_req_case(e, &rr, UIW_E_RDMAP_INVALID_STAG);
}

/* 4c, 4d: the offsets must lie inside the region. */
static void test_r_read_bounds_high(void **state)
{
	struct cf_env *e = *state;
	struct uiw_read_req rr;

	open_env(e, true, 0, 0, 0);
	rr_init(&rr, cf_stag(e, CF_READ), cf_to(e, CF_READ, 4000), 97);
	read_req_case(e, &rr, UIW_E_RDMAP_BASE_BOUNDS);
}

static void test_r_read_bounds_low(void **state)
{
	struct cf_env *e = *state;
	struct uiw_read_req rr;

	open_env(e, true, 0, 0, 0);
	rr_init(&rr, cf_stag(e, CF_READ), cf_to(e, CF_READ, 0) - 1, 16);
	read_req_case(e, &rr, UIW_E_RDMAP_BASE_BOUNDS);
}

/* The STag must allow remote reads (RFC 5040 §8.1.1 rule 5). */
static void test_r_read_access(void **state)
{
	struct cf_env *e = *state;
	struct uiw_read_req rr;

	open_env(e, true, 0, 0, 0);
	rr_init(&rr, cf_stag(e, CF_WRITE), cf_to(e, CF_WRITE, 0), 16);
	read_req_case(e, &rr, UIW_E_RDMAP_ACCESS);
}

/* 4b: the STag must be associated with this stream (another PD's). */
static void test_r_read_not_assoc(void **state)
{
	struct cf_env *e = *state;
	struct uiw_read_req rr;

	open_env(e, true, 0, 0, 0);
	rr_init(&rr, cf_stag(e, CF_OTHER_PD), cf_to(e, CF_OTHER_PD, 0), 16);
	read_req_case(e, &rr, UIW_E_RDMAP_STAG_NOT_ASSOC);
}

/* 4e: TO + size must not wrap. */
static void test_r_read_to_wrap(void **state)
{
	struct cf_env *e = *state;
	struct uiw_read_req rr;

	open_env(e, true, 0, 0, 0);
	rr_init(&rr, cf_stag(e, CF_READ), UINT64_MAX - 15, 32);
	read_req_case(e, &rr, UIW_E_RDMAP_TO_WRAP);
}

/* §5.2.1 / §7.1 (RFC 5041): the MSN of queue 1 starts at 1. */
static void test_r_read_req_msn(void **state)
{
	struct cf_env *e = *state;
	struct uiw_read_req rr;

	open_env(e, true, 0, 0, 0);
	rr_init(&rr, cf_stag(e, CF_READ), cf_to(e, CF_READ, 0), 16);
	e->rp.msn[1] = 2;
	read_req_case(e, &rr, UIW_E_DDP_U_MSN_RANGE);
}

/* A Read Request consumes one queue-1 buffer, which holds exactly its
 * 28-octet header (§4.4, §5.2.1): a longer one does not fit it (RFC 5041
 * §7.2 "too long"); a shorter one is no valid Request and no RFC names
 * its code (uiwarp: Remote Operation Error, Unspecified; the RDMA header
 * is not copied since there is none). */
static void test_r_read_req_long(void **state)
{
	struct cf_env *e = *state;
	uint8_t hdr[UIW_DDP_MAX_HDR_LEN], body[36] = { 0 };
	struct cf_term_expect x;
	size_t hl;

	open_env(e, true, 0, 0, 0);
	hl = rp_hdr_untagged(hdr, UIW_OP_READ_REQ, true, 1, 1, 0, 0);
	send_bad(e, hdr, hl, body, sizeof(body), UIW_E_DDP_U_TOO_LONG, &x);
	CF_OK(cf_expect_term(e, &x));
}

static void test_r_read_req_short(void **state)
{
	struct cf_env *e = *state;
	uint8_t hdr[UIW_DDP_MAX_HDR_LEN], body[20] = { 0 };
	struct cf_term_expect x;
	size_t hl;

	open_env(e, true, 0, 0, 0);
	hl = rp_hdr_untagged(hdr, UIW_OP_READ_REQ, true, 1, 1, 0, 0);
	send_bad(e, hdr, hl, body, sizeof(body), UIW_E_RDMAP_OP_UNSPEC, &x);
	CF_OK(cf_expect_term(e, &x));
}

/* §5.2.1: a valid Request gets a valid Response, tagged, to the sink
 * STag and TO copied from the Request, with the source's data. */
static void test_r_read_valid(void **state)
{
	struct cf_env *e = *state;
	struct uiw_read_req rr;
	size_t got = 0;

	open_env(e, true, 0, 0, 0);
	rr_init(&rr, cf_stag(e, CF_READ), cf_to(e, CF_READ, 100), 1000);
	CF_OK(rp_send_read_req(&e->rp, &rr));
	assert_int_equal(cf_read_resp(e, RR_SINK_STAG, RR_SINK_TO,
				      e->r[CF_READ].p + 100, 1000, &got), 0);
	assert_int_equal(got, 1000);
	assert_int_equal(cf_qp_state(e, NULL), UIW_QPS_RTS);
	CF_OK(cf_check_mem(e));
}

/* §5.2.1: a zero-length Read's source STag and TO MUST NOT be validated
 * and it MUST get a zero-length Response. */
static void test_r_read_zero_length_unchecked(void **state)
{
	struct cf_env *e = *state;
	struct uiw_read_req rr;
	struct rp_seg *s = &e->seg;

	open_env(e, true, 0, 0, 0);
	rr_init(&rr, 0xdeadbeef, UINT64_MAX, 0);
	CF_OK(rp_send_read_req(&e->rp, &rr));
	CF_OK(rp_recv_seg(&e->rp, s));
	assert_true(s->h.tagged);
	assert_int_equal(s->h.opcode, UIW_OP_READ_RESP);
	assert_true(s->h.last);
	assert_int_equal(s->h.stag, RR_SINK_STAG);
	assert_int_equal(s->h.to, RR_SINK_TO);
	assert_int_equal(s->plen, 0);
	assert_int_equal(cf_qp_state(e, NULL), UIW_QPS_RTS);
}

/* §6.1: "For inbound RDMA Read Requests, the RDMAP layer MUST NOT exceed
 * the maximum number of outstanding, inbound RDMA Read Requests";
 * §5.2.2: the queue-1 buffers are as many as IRD.  With IRD 1 and a
 * first Read of 8 MiB whose Response cannot finish (the raw peer does
 * not read), a second Request finds no buffer: DDP "Invalid MSN - no
 * buffer available".  The first Response keeps its order before the
 * Terminate (§5.5 rule 20). */
static void test_r_read_beyond_ird(void **state)
{
	struct cf_env *e = *state;
	/* Far more than uiwarp's send buffer (SO_SNDBUF 4 MiB, which the
	 * kernel doubles) and the raw peer's tiny receive window hold, so
	 * the Response cannot finish while the peer does not read. */
	const size_t big = 32u << 20;
	uint8_t hdr[UIW_DDP_MAX_HDR_LEN], body[UIW_READ_REQ_LEN];
	struct uiw_read_req rr;
	struct cf_term_expect x;
	struct uiw_qp_attr a;
	size_t hl, got = 0;

	open_env(e, true, 1, big, 4096);
	cf_qp_state(e, &a);
	assert_int_equal(a.ird, 1);
	rr_init(&rr, cf_stag(e, CF_BIG), cf_to(e, CF_BIG, 0), (uint32_t)big);
	CF_OK(rp_send_read_req(&e->rp, &rr));
	rr_init(&rr, cf_stag(e, CF_READ), cf_to(e, CF_READ, 0), 64);
	rr.sink_to += big;
	hl = rp_hdr_untagged(hdr, UIW_OP_READ_REQ, true, 1, e->rp.msn[1]++,
			     0, 0);
	uiw_read_req_encode(body, &rr);
	memcpy(ubuf, hdr, hl);
	memcpy(ubuf + hl, body, sizeof(body));
	CF_OK(rp_send_fpdu(&e->rp, ubuf, hl + sizeof(body)));
	/* Once uiwarp has refused it, read: the part of the first Response
	 * built before the Terminate, then the Terminate. */
	CF_OK(cf_wait_not_rts(e));
	assert_int_equal(cf_read_resp(e, RR_SINK_STAG, RR_SINK_TO,
				      e->r[CF_BIG].p, big, &got), 1);
	assert_true(got < big);
	memset(&x, 0, sizeof(x));
	x.err = UIW_E_DDP_U_MSN_NO_BUF;
	x.m = x.d = true;
	x.seg_len = (uint16_t)(hl + sizeof(body));
	x.ddp_hdr = hdr;
	x.ddp_hdr_len = hl;
	CF_OK(cf_expect_term(e, &x));
}

/* ---- RDMA Read Responses (§5.2.2) -------------------------------------- */

/* A Response to the STag that the Read did not name: its placement is
 * refused (RFC 5041 §7.1 check 1); the Read completes in error. */
static void test_r_read_resp_wrong_stag(void **state)
{
	struct cf_env *e = *state;
	uint8_t hdr[UIW_DDP_MAX_HDR_LEN], data[CF_READ_LEN];
	struct cf_term_expect x;
	size_t hl;

	open_env(e, true, 0, 0, 0);
	memset(data, 0xab, sizeof(data));
	hl = rp_hdr_tagged(hdr, UIW_OP_READ_RESP, true,
			   e->out_rr.sink_stag ^ 0x100, e->out_rr.sink_to);
	send_bad(e, hdr, hl, data, sizeof(data), UIW_E_DDP_T_INVALID_STAG,
		 &x);
	cf_expect_status(e, CF_WR_READ, UIW_WC_LOC_PROT_ERR);
	CF_OK(cf_expect_term(e, &x));
}

/* A Response longer than the Read asked for (§5.2.2: the sink "MAY
 * validate that the STag, Tagged Offset, and length ... are the same";
 * uiwarp does, and refuses the octets past the Read's sink range as a
 * base or bounds violation). */
static void test_r_read_resp_too_long(void **state)
{
	struct cf_env *e = *state;
	uint8_t hdr[UIW_DDP_MAX_HDR_LEN], data[CF_READ_LEN + 8];
	struct cf_term_expect x;
	size_t hl;

	open_env(e, true, 0, 0, 0);
	memset(data, 0xcd, sizeof(data));
	hl = rp_hdr_tagged(hdr, UIW_OP_READ_RESP, true, e->out_rr.sink_stag,
			   e->out_rr.sink_to);
	send_bad(e, hdr, hl, data, sizeof(data), UIW_E_DDP_T_BASE_BOUNDS, &x);
	cf_expect_status(e, CF_WR_READ, UIW_WC_LOC_PROT_ERR);
	CF_OK(cf_expect_term(e, &x));
}

/* A Response at another TO than the Read's sink (§5.2.2 "MAY
 * validate"): base or bounds violation. */
static void test_r_read_resp_wrong_to(void **state)
{
	struct cf_env *e = *state;
	uint8_t hdr[UIW_DDP_MAX_HDR_LEN], data[16];
	struct cf_term_expect x;
	size_t hl;

	open_env(e, true, 0, 0, 0);
	memset(data, 0xef, sizeof(data));
	hl = rp_hdr_tagged(hdr, UIW_OP_READ_RESP, true, e->out_rr.sink_stag,
			   e->out_rr.sink_to + 8);
	send_bad(e, hdr, hl, data, sizeof(data), UIW_E_DDP_T_BASE_BOUNDS, &x);
	cf_expect_status(e, CF_WR_READ, UIW_WC_LOC_PROT_ERR);
	CF_OK(cf_expect_term(e, &x));
}

/* A Response that ends (L) short of the Read's length: the Read cannot
 * complete; uiwarp sends RDMAP Remote Operation Error, unspecified (no
 * RFC names a code), and the Read fails.  The octets that came were
 * placed in the sink. */
static void test_r_read_resp_short(void **state)
{
	struct cf_env *e = *state;
	uint8_t hdr[UIW_DDP_MAX_HDR_LEN], data[CF_READ_LEN / 2];
	struct cf_term_expect x;
	size_t hl;

	open_env(e, true, 0, 0, 0);
	memset(data, 0x5e, sizeof(data));
	hl = rp_hdr_tagged(hdr, UIW_OP_READ_RESP, true, e->out_rr.sink_stag,
			   e->out_rr.sink_to);
	send_bad(e, hdr, hl, data, sizeof(data), UIW_E_RDMAP_OP_UNSPEC, &x);
	cf_mem_placed(e, e->r[CF_SINK].p, data, sizeof(data));
	cf_expect_status(e, CF_WR_READ, CF_WC_ANY_ERROR);
	CF_OK(cf_expect_term(e, &x));
}

/* A valid Response completes the Read (§5.5 rule 19) with the data. */
static void test_r_read_resp_valid(void **state)
{
	struct cf_env *e = *state;
	uint8_t data[CF_READ_LEN];
	struct uiw_wc wc;
	size_t i;

	open_env(e, true, 0, 0, 0);
	for (i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(0x40 + i);
	CF_OK(rp_send_read_resp(&e->rp, e->out_rr.sink_stag,
				e->out_rr.sink_to, false, data, 24));
	CF_OK(rp_send_read_resp(&e->rp, e->out_rr.sink_stag,
				e->out_rr.sink_to + 24, true, data + 24,
				sizeof(data) - 24));
	CF_OK(cf_wait_wc(e, e->scq, CF_WR_READ, UIW_WC_SUCCESS, &wc));
	assert_int_equal(wc.byte_len, CF_READ_LEN);
	cf_mem_placed(e, e->r[CF_SINK].p, data, sizeof(data));
	/* The fenced Send goes out now (zero-length, queue 0, MSN 1). */
	CF_OK(rp_recv_seg(&e->rp, &e->seg));
	assert_int_equal(e->seg.h.opcode, UIW_OP_SEND);
	assert_int_equal(e->seg.plen, 0);
	CF_OK(cf_wait_wc(e, e->scq, CF_WR_FENCED_SEND, UIW_WC_SUCCESS, NULL));
	CF_OK(cf_check_mem(e));
}

/* ---- Send with Invalidate (§5.3, §7.2 items 4 and 5) ------------------- */

static void send_inv_case(struct cf_env *e, uint8_t op, uint32_t stag,
			  uiw_err_t err)
{
	uint8_t hdr[UIW_DDP_MAX_HDR_LEN];
	struct cf_term_expect x;
	size_t hl;

	hl = rp_hdr_untagged(hdr, op, true, 0, e->rp.msn[0]++, 0, stag);
	send_bad(e, hdr, hl, eight, 8, err, &x);
	/* The Send was placed in its buffer before it was delivered and
	 * refused. */
	cf_mem_placed(e, e->r[CF_RECV].p + e->o.recv_len, eight, 8);
	cf_expect_status(e, CF_WR_RECV(1), UIW_WC_LOC_PROT_ERR);
	CF_OK(cf_expect_term(e, &x));
}

/* Item 5 / §5.3: an STag not associated with this stream (another PD's,
 * RFC 5040 §8.1.1 rule 1) "cannot be invalidated" -- and stays valid. */
static void test_r_send_inv_other_pd(void **state)
{
	struct cf_env *e = *state;
	uint32_t stag;

	open_env(e, true, 0, 0, 0);
	stag = cf_stag(e, CF_OTHER_PD);
	send_inv_case(e, UIW_OP_SEND_INV, stag, UIW_E_RDMAP_PROT_CANT_INV);
	assert_int_equal(uiw_mr_check(&e->dev->mrt, stag, e->pd2,
				      UIW_ACCESS_REMOTE_WRITE,
				      cf_to(e, CF_OTHER_PD, 0), 1),
			 UIW_MRC_OK);
}

static void test_r_send_se_inv_other_pd(void **state)
{
	struct cf_env *e = *state;
	uint32_t stag;

	open_env(e, true, 0, 0, 0);
	stag = cf_stag(e, CF_OTHER_PD);
	send_inv_case(e, UIW_OP_SEND_SE_INV, stag,
		      UIW_E_RDMAP_PROT_CANT_INV);
	assert_int_equal(uiw_mr_check(&e->dev->mrt, stag, e->pd2,
				      UIW_ACCESS_REMOTE_WRITE,
				      cf_to(e, CF_OTHER_PD, 0), 1),
			 UIW_MRC_OK);
}

/* Item 4: the Invalidate STag must be valid. */
static void test_r_send_inv_invalid(void **state)
{
	struct cf_env *e = *state;

	open_env(e, true, 0, 0, 0);
	send_inv_case(e, UIW_OP_SEND_INV, cf_stag(e, CF_WRITE) ^ 0x40,
		      UIW_E_RDMAP_INVALID_STAG);
}

/* §5.3: a valid Send with Invalidate invalidates the STag; RFC 5040
 * §8.1.1 rule 6: afterwards the peer cannot write through it. */
static void test_r_send_inv_then_write(void **state)
{
	struct cf_env *e = *state;
	uint8_t hdr[UIW_DDP_MAX_HDR_LEN];
	struct cf_term_expect x;
	struct uiw_wc wc;
	uint32_t stag;
	size_t hl;

	open_env(e, true, 0, 0, 0);
	stag = cf_stag(e, CF_WRITE);
	CF_OK(rp_send_send(&e->rp, UIW_OP_SEND_INV, stag, "inv", 3));
	CF_OK(cf_wait_wc(e, e->rcq, CF_WR_RECV(1), UIW_WC_SUCCESS, &wc));
	assert_true(wc.flags & UIW_WC_F_WITH_INV);
	assert_int_equal(wc.invalidated_stag, stag);
	cf_mem_placed(e, e->r[CF_RECV].p + e->o.recv_len, "inv", 3);
	hl = rp_hdr_tagged(hdr, UIW_OP_WRITE, true, stag,
			   cf_to(e, CF_WRITE, 0));
	send_bad(e, hdr, hl, eight, 8, UIW_E_DDP_T_INVALID_STAG, &x);
	CF_OK(cf_expect_term(e, &x));
}

/* ---- Errors while creating a message (§7.1 case 1) ------------------ */

/* A Send whose source region was deregistered after it was posted: the
 * error is found when the message is built, and "the Terminate Message
 * and Error code are sent instead of the request ... the Terminated DDP
 * Header and Terminated RDMA Header fields are set to zero" (no M, D, R;
 * uiwarp: RDMAP local catastrophic error).  The failing one completes
 * with a local protection error; the zero-length Send before it went out
 * just before the stream ended, so it may complete either way (§6.2.1:
 * "the state of all outstanding RDMA Messages is indeterminate"). */
static void test_r_local_error_terminate(void **state)
{
	struct cf_env *e = *state;
	struct cf_term_expect x = { .err = UIW_E_RDMAP_LOCAL_CATA };
	uint8_t data[CF_READ_LEN] = { 0 };

	open_env(e, true, 0, 0, 0);
	CF_OK(cf_post_send(e, 0x302, UIW_WR_SEND, 0, CF_SRC, 0, 32, 0, 0));
	assert_int_equal(uiw_dereg_mr(e->r[CF_SRC].mr), 0);
	e->r[CF_SRC].mr = NULL;
	CF_OK(rp_send_read_resp(&e->rp, e->out_rr.sink_stag,
				e->out_rr.sink_to, true, data, sizeof(data)));
	cf_mem_placed(e, e->r[CF_SINK].p, data, sizeof(data));
	CF_OK(cf_wait_wc(e, e->scq, CF_WR_READ, UIW_WC_SUCCESS, NULL));
	CF_OK(rp_recv_seg(&e->rp, &e->seg));
	assert_int_equal(e->seg.h.opcode, UIW_OP_SEND);
	assert_int_equal(e->seg.plen, 0);
	cf_expect_status(e, CF_WR_FENCED_SEND, CF_WC_SUCCESS_OR_FLUSH);
	cf_expect_status(e, 0x302, UIW_WC_LOC_PROT_ERR);
	CF_OK(cf_expect_term(e, &x));
}

/* ---- A Terminate from the peer (§5.4) ---------------------------------- */

/* The raw peer terminates, blaming uiwarp's RDMA Read (Remote Protection
 * Error, invalid STag, with the Read Request's headers): uiwarp sends
 * nothing more, closes, and completes that Read with a remote access
 * error, everything else flushed. */
static void test_r_terminate_received(void **state)
{
	struct cf_env *e = *state;
	uint8_t hdr[UIW_DDP_MAX_HDR_LEN], th[UIW_TERM_MAX_LEN];
	struct uiw_term t = { .err = UIW_E_RDMAP_INVALID_STAG, .m = true,
			      .d = true, .r = true };
	size_t hl, tl;

	open_env(e, true, 0, 0, 0);
	/* uiwarp's Read Request header, as it went out. */
	t.ddp_hdr_len = (uint8_t)rp_hdr_untagged(t.ddp_hdr, UIW_OP_READ_REQ,
						 true, 1, 1, 0, 0);
	t.ddp_seg_len = UIW_DDP_UNTAGGED_HDR_LEN + UIW_READ_REQ_LEN;
	uiw_read_req_encode(t.rdmap_hdr, &e->out_rr);
	t.rdmap_hdr_len = UIW_READ_REQ_LEN;
	tl = uiw_term_encode(th, sizeof(th), &t);
	assert_true(tl > 0);
	hl = rp_hdr_untagged(hdr, UIW_OP_TERMINATE, true, 2, 1, 0, 0);
	memcpy(ubuf, hdr, hl);
	memcpy(ubuf + hl, th, tl);
	CF_OK(rp_send_fpdu(&e->rp, ubuf, hl + tl));
	cf_expect_status(e, CF_WR_READ, UIW_WC_REM_ACCESS_ERR);
	CF_OK(cf_expect_closed_remote(e, UIW_E_RDMAP_INVALID_STAG));
}

#define T(name) cmocka_unit_test_setup_teardown(test_##name, cf_state_new, cf_state_free)

int main(void)
{
	/* Over SCTP (RFC 5043): every case runs. */
	static const struct cf_mpa_only mpa_only[] = { { NULL, NULL } };
	const struct CMUnitTest tests[] = {
		T(r_version),
		T(r_opcode_reserved),
		T(r_opcode_send_tagged),
		T(r_opcode_terminate_tagged),
		T(r_opcode_write_untagged),
		T(r_opcode_read_resp_untagged),
		T(r_opcode_read_req_on_q0),
		T(r_opcode_send_on_q1),
		T(r_opcode_send_on_q2),
		T(r_read_resp_unsolicited),
		T(r_read_invalid_stag),
		T(r_read_bounds_high),
		T(r_read_bounds_low),
		T(r_read_access),
		T(r_read_not_assoc),
		T(r_read_to_wrap),
		T(r_read_req_msn),
		T(r_read_req_long),
		T(r_read_req_short),
		T(r_read_valid),
		T(r_read_zero_length_unchecked),
		T(r_read_beyond_ird),
		T(r_read_resp_wrong_stag),
		T(r_read_resp_too_long),
		T(r_read_resp_wrong_to),
		T(r_read_resp_short),
		T(r_read_resp_valid),
		T(r_send_inv_other_pd),
		T(r_send_se_inv_other_pd),
		T(r_send_inv_invalid),
		T(r_send_inv_then_write),
		T(r_local_error_terminate),
		T(r_terminate_received),
	};

	return cf_run_tests("conformance: RDMAP", tests,
			    sizeof(tests) / sizeof(tests[0]), mpa_only);
}
