/*
 * Conformance: RFC 7306 (Atomic Operations and Immediate Data) against a
 * raw peer.  uiwarp as responder: valid FetchAdd and CmpSwap, their
 * order after an RDMA Read (§7), and every error a peer can provoke
 * (§8: misaligned target, beyond IRD, no remote atomic right, another
 * PD, out of bounds, an unsupported AOpCode; Immediate Data of the wrong
 * length).  uiwarp as requester: the Atomic Request and Immediate Data
 * on the wire, and bad Atomic Responses.  A Terminate for an RFC 7306
 * message carries its DDP header and no RDMA header (§8.1 rule 2).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "cf_env.h"
#include "wire/atomic.h"

static uint8_t ubuf[66000];

static void open_env(struct cf_env *e, uint32_t ird, size_t big_len,
		     int rcvbuf)
{
	struct cf_opts o;

	cf_opts_init(&o);
	o.ird = ird;
	o.big_len = big_len;
	o.raw_rcvbuf = rcvbuf;
	CF_OK(cf_open(e, &o, true));
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

/* An Atomic Request with the next queue-1 MSN; its header in hdr and the
 * whole segment in ubuf.  Returns the header length. */
static size_t atomic_msg(struct cf_env *e, uint8_t *hdr,
			 const struct uiw_atomic_req *r)
{
	size_t hl = rp_hdr_untagged(hdr, UIW_OP_ATOMIC_REQ, true,
				    UIW_QN_READ_REQ, e->rp.msn[1]++, 0, 0);

	memcpy(ubuf, hdr, hl);
	assert_int_equal(uiw_atomic_req_encode(ubuf + hl, UIW_ATOMIC_REQ_LEN,
					       r), UIW_ATOMIC_REQ_LEN);
	return hl;
}

static void send_atomic(struct cf_env *e, uint8_t *hdr, size_t *hl,
			const struct uiw_atomic_req *r)
{
	*hl = atomic_msg(e, hdr, r);
	CF_OK(rp_send_fpdu(&e->rp, ubuf, *hl + UIW_ATOMIC_REQ_LEN));
}

static void expect_ext_term(struct cf_env *e, const uint8_t *hdr, size_t hl,
			    size_t plen, uiw_err_t err)
{
	struct cf_term_expect x = {
		.err = err, .m = true, .d = true,
		.seg_len = (uint16_t)(hl + plen),
		.ddp_hdr = hdr, .ddp_hdr_len = hl,
	};

	/* §8.1 rule 2: the DDP header, no RDMA header. */
	CF_OK(cf_expect_term(e, &x));
}

/* The raw peer receives the Atomic Response for req_id (queue 3, MSN
 * msn) and returns the original value it carries. */
static uint64_t recv_atomic_resp(struct cf_env *e, uint32_t req_id,
				 uint32_t msn)
{
	struct uiw_atomic_resp rs;
	struct rp_seg *s = &e->seg;

	CF_OK(rp_recv_seg(&e->rp, s));
	/* §5.2.2 rules 2, 3: untagged, queue 3; §4.1: Invalidate STag 0. */
	assert_false(s->h.tagged);
	assert_int_equal(s->h.opcode, UIW_OP_ATOMIC_RESP);
	assert_int_equal(s->h.qn, UIW_QN_ATOMIC_RESP);
	assert_int_equal(s->h.msn, msn);
	assert_int_equal(s->h.mo, 0);
	assert_true(s->h.last);
	assert_int_equal(s->h.rsvd_ulp, 0);
	assert_int_equal(uiw_atomic_resp_decode(s->pl, s->plen, &rs), UIW_OK);
	assert_int_equal(rs.req_id, req_id);
	return rs.orig_value;
}

/* ---- Responder: valid operations (§5.1, §5.2) -------------------------- */

/* §5.1.1, §5.2.1, §5.2.2: a FetchAdd is performed on the aligned word
 * and answered with the Request Identifier and the original value. */
static void test_atomic_fetchadd(void **state)
{
	struct cf_env *e = *state;
	uint8_t hdr[UIW_DDP_MAX_HDR_LEN];
	struct uiw_atomic_req r;
	uint64_t orig, nv;
	size_t hl;

	open_env(e, 0, 0, 0);
	orig = get64(e->r[CF_ATOMIC].p + 64);
	uiw_atomic_req_fetchadd(&r, 0x1234, cf_stag(e, CF_ATOMIC),
				cf_to(e, CF_ATOMIC, 64), 5, 0);
	send_atomic(e, hdr, &hl, &r);
	assert_int_equal(recv_atomic_resp(e, 0x1234, 1), orig);
	nv = orig + 5;
	cf_mem_placed(e, e->r[CF_ATOMIC].p + 64, &nv, 8);
	CF_OK(cf_check_mem(e));
}

/* §5.1.2: a CmpSwap that matches swaps; one that does not leaves the
 * memory as it was; both return the original value. */
static void test_atomic_cmpswap(void **state)
{
	struct cf_env *e = *state;
	uint8_t hdr[UIW_DDP_MAX_HDR_LEN];
	struct uiw_atomic_req r;
	uint64_t orig, nv = 0x0123456789abcdefull;
	size_t hl;

	open_env(e, 0, 0, 0);
	orig = get64(e->r[CF_ATOMIC].p + 128);
	uiw_atomic_req_cmpswap(&r, 1, cf_stag(e, CF_ATOMIC),
			       cf_to(e, CF_ATOMIC, 128), orig ^ 1, ~0ull, nv,
			       ~0ull);
	send_atomic(e, hdr, &hl, &r);
	assert_int_equal(recv_atomic_resp(e, 1, 1), orig);
	uiw_atomic_req_cmpswap(&r, 2, cf_stag(e, CF_ATOMIC),
			       cf_to(e, CF_ATOMIC, 128), orig, ~0ull, nv,
			       ~0ull);
	send_atomic(e, hdr, &hl, &r);
	assert_int_equal(recv_atomic_resp(e, 2, 2), orig);
	cf_mem_placed(e, e->r[CF_ATOMIC].p + 128, &nv, 8);
	CF_OK(cf_check_mem(e));
}

/* §7 ("Read, then Atomic"), §5.2.2 rule 8, §5.4 rule 8: Responses in
 * Request order: the RDMA Read Response before the Atomic Response. */
static void test_atomic_after_read(void **state)
{
	struct cf_env *e = *state;
	uint8_t hdr[UIW_DDP_MAX_HDR_LEN];
	struct uiw_read_req rr = { .sink_stag = 0x51, .sink_to = 0x9000,
				   .size = 16 };
	struct uiw_atomic_req r;
	uint64_t orig, nv;
	size_t hl, got = 0;

	open_env(e, 0, 0, 0);
	orig = get64(e->r[CF_ATOMIC].p + 8);
	rr.src_stag = cf_stag(e, CF_READ);
	rr.src_to = cf_to(e, CF_READ, 0);
	CF_OK(rp_send_read_req(&e->rp, &rr));
	uiw_atomic_req_fetchadd(&r, 77, cf_stag(e, CF_ATOMIC),
				cf_to(e, CF_ATOMIC, 8), 0x100, 0);
	send_atomic(e, hdr, &hl, &r);
	assert_int_equal(cf_read_resp(e, 0x51, 0x9000, e->r[CF_READ].p, 16,
				      &got), 0);
	assert_int_equal(recv_atomic_resp(e, 77, 1), orig);
	nv = orig + 0x100;
	cf_mem_placed(e, e->r[CF_ATOMIC].p + 8, &nv, 8);
	CF_OK(cf_check_mem(e));
}

/* ---- Responder: errors (§8.2, §5.2.1 rule 4, §5.2.2 rule 4) -------------- */

/* §5.1.1, §5.1.2, §8.2: a target that is not 64-bit aligned: not
 * performed, memory unchanged, "Remote Operation Error / Catastrophic
 * error, localized to RDMAP Stream". */
static void test_atomic_misaligned(void **state)
{
	struct cf_env *e = *state;
	uint8_t hdr[UIW_DDP_MAX_HDR_LEN];
	struct uiw_atomic_req r;
	size_t hl;

	open_env(e, 0, 0, 0);
	uiw_atomic_req_cmpswap(&r, 7, cf_stag(e, CF_ATOMIC),
			       cf_to(e, CF_ATOMIC, 68), 0, 0, 0x1111, ~0ull);
	send_atomic(e, hdr, &hl, &r);
	expect_ext_term(e, hdr, hl, UIW_ATOMIC_REQ_LEN,
			UIW_E_RDMAP_CATA_STREAM);
}

/* §5.2, §5.2.2 rule 4: Atomic Requests take the queue-1 buffers of IRD
 * with the RDMA Reads; with IRD 1 taken by a Read whose Response cannot
 * finish, an Atomic Request finds no buffer. */
static void test_atomic_beyond_ird(void **state)
{
	struct cf_env *e = *state;
	/* Far more than uiwarp's send buffer (SO_SNDBUF 4 MiB, which the
	 * kernel doubles) and the raw peer's tiny receive window hold, so
	 * the Response cannot finish while the peer does not read. */
	const size_t big = 32u << 20;
	uint8_t hdr[UIW_DDP_MAX_HDR_LEN];
	struct uiw_read_req rr = { .sink_stag = 0x77, .sink_to = 0,
				   .size = (uint32_t)big };
	struct uiw_atomic_req r;
	size_t hl, got = 0;

	open_env(e, 1, big, 4096);
	rr.src_stag = cf_stag(e, CF_BIG);
	rr.src_to = cf_to(e, CF_BIG, 0);
	CF_OK(rp_send_read_req(&e->rp, &rr));
	uiw_atomic_req_fetchadd(&r, 9, cf_stag(e, CF_ATOMIC),
				cf_to(e, CF_ATOMIC, 0), 1, 0);
	send_atomic(e, hdr, &hl, &r);
	/* Once uiwarp has refused it, read what it sent before. */
	CF_OK(cf_wait_not_rts(e));
	assert_int_equal(cf_read_resp(e, 0x77, 0, e->r[CF_BIG].p, big, &got),
			 1);
	expect_ext_term(e, hdr, hl, UIW_ATOMIC_REQ_LEN,
			UIW_E_DDP_U_MSN_NO_BUF);
}

/* §9 and RFC 5040 §8.1.1 rule 5: the target region must allow remote
 * atomics (CF_WRITE allows remote writes only). */
static void test_atomic_access(void **state)
{
	struct cf_env *e = *state;
	uint8_t hdr[UIW_DDP_MAX_HDR_LEN];
	struct uiw_atomic_req r;
	size_t hl;

	open_env(e, 0, 0, 0);
	uiw_atomic_req_fetchadd(&r, 3, cf_stag(e, CF_WRITE),
				cf_to(e, CF_WRITE, 0), 1, 0);
	send_atomic(e, hdr, &hl, &r);
	expect_ext_term(e, hdr, hl, UIW_ATOMIC_REQ_LEN, UIW_E_RDMAP_ACCESS);
}

/* RFC 5040 §8.1.1 rule 1: an STag of another protection domain. */
static void test_atomic_not_assoc(void **state)
{
	struct cf_env *e = *state;
	uint8_t hdr[UIW_DDP_MAX_HDR_LEN];
	struct uiw_atomic_req r;
	size_t hl;

	open_env(e, 0, 0, 0);
	uiw_atomic_req_fetchadd(&r, 3, cf_stag(e, CF_OTHER_PD),
				cf_to(e, CF_OTHER_PD, 0), 1, 0);
	send_atomic(e, hdr, &hl, &r);
	expect_ext_term(e, hdr, hl, UIW_ATOMIC_REQ_LEN,
			UIW_E_RDMAP_STAG_NOT_ASSOC);
}

/* RFC 5040 §8.1.1 rule 3: the 8 octets must lie inside the region. */
static void test_atomic_bounds(void **state)
{
	struct cf_env *e = *state;
	uint8_t hdr[UIW_DDP_MAX_HDR_LEN];
	struct uiw_atomic_req r;
	size_t hl;

	open_env(e, 0, 0, 0);
	uiw_atomic_req_fetchadd(&r, 3, cf_stag(e, CF_ATOMIC),
				cf_to(e, CF_ATOMIC, CF_REG_LEN), 1, 0);
	send_atomic(e, hdr, &hl, &r);
	expect_ext_term(e, hdr, hl, UIW_ATOMIC_REQ_LEN,
			UIW_E_RDMAP_BASE_BOUNDS);
}

/* §5.2.1 rule 4: an AOpCode the RNIC does not support (0001b is
 * reserved) is an error; §1.1 names "Unexpected OpCode". */
static void test_atomic_bad_aopcode(void **state)
{
	struct cf_env *e = *state;
	uint8_t hdr[UIW_DDP_MAX_HDR_LEN];
	struct uiw_atomic_req r;
	size_t hl;

	open_env(e, 0, 0, 0);
	uiw_atomic_req_fetchadd(&r, 4, cf_stag(e, CF_ATOMIC),
				cf_to(e, CF_ATOMIC, 0), 1, 0);
	r.aopcode = 0x1;
	send_atomic(e, hdr, &hl, &r);
	expect_ext_term(e, hdr, hl, UIW_ATOMIC_REQ_LEN,
			UIW_E_RDMAP_UNEXPECTED_OPCODE);
}

/* ---- Immediate Data (§6) ------------------------------------------------ */

/* §6.3: untagged, queue 0, the next MSN, one buffer, exactly 8 octets;
 * delivered as a completion with the data (the buffer untouched). */
static void test_imm_data(void **state)
{
	struct cf_env *e = *state;
	uint8_t hdr[UIW_DDP_MAX_HDR_LEN];
	struct uiw_wc wc;
	size_t hl;

	open_env(e, 0, 0, 0);
	hl = rp_hdr_untagged(hdr, UIW_OP_IMM_SE, true, 0, e->rp.msn[0]++, 0,
			     0);
	memcpy(ubuf, hdr, hl);
	assert_int_equal(uiw_imm_encode(ubuf + hl, 8, 0x1122334455667788ull),
			 8);
	CF_OK(rp_send_fpdu(&e->rp, ubuf, hl + 8));
	CF_OK(cf_wait_wc(e, e->rcq, CF_WR_RECV(1), UIW_WC_SUCCESS, &wc));
	assert_int_equal(wc.opcode, UIW_WC_RECV_RDMA_WITH_IMM);
	assert_true(wc.flags & UIW_WC_F_WITH_IMM);
	assert_true(wc.flags & UIW_WC_F_SOLICITED);
	assert_int_equal(wc.imm_data, 0x1122334455667788ull);
	CF_OK(cf_check_mem(e));
}

/* §6.3: "The Remote Peer MUST check that Immediate Data ... include
 * exactly 8 bytes": more does not fit its buffer (RFC 5041 "too long");
 * fewer is no valid message (RDMAP unspecified; see atomic.h). */
static void imm_len_case(struct cf_env *e, size_t len, uiw_err_t err)
{
	uint8_t hdr[UIW_DDP_MAX_HDR_LEN];
	size_t hl;

	open_env(e, 0, 0, 0);
	hl = rp_hdr_untagged(hdr, UIW_OP_IMM, true, 0, e->rp.msn[0]++, 0, 0);
	memcpy(ubuf, hdr, hl);
	memset(ubuf + hl, 0x42, len);
	CF_OK(rp_send_fpdu(&e->rp, ubuf, hl + len));
	cf_expect_status(e, CF_WR_RECV(1), CF_WC_ANY_ERROR);
	expect_ext_term(e, hdr, hl, len, err);
}

static void test_imm_long(void **state)
{
	imm_len_case(*state, 12, UIW_E_DDP_U_TOO_LONG);
}

static void test_imm_short(void **state)
{
	imm_len_case(*state, 4, UIW_E_RDMAP_OP_UNSPEC);
}

/* ---- Requester (§5.2.1, §5.2.2, §6.3) ------------------------------------ */

/* uiwarp's FetchAdd on the wire: queue 1 after its RDMA Read (MSN 2),
 * FetchAdd with Compare Data zero and Compare Mask all ones (§5.2.1);
 * the Response's original value lands in the work request's buffer and
 * only then does it complete (§5.4 rules 1, 7). */
static void test_tx_atomic(void **state)
{
	struct cf_env *e = *state;
	struct uiw_sge sge;
	struct uiw_send_wr wr = { .wr_id = 0xa0,
				  .opcode = UIW_WR_ATOMIC_FETCH_ADD };
	struct uiw_atomic_req r;
	struct uiw_atomic_resp rs;
	struct rp_seg *s = &e->seg;
	uint8_t hdr[UIW_DDP_MAX_HDR_LEN], data[CF_READ_LEN] = { 0 };
	const uint64_t orig = 0xfeedfacecafebeefull;
	struct uiw_wc wc;
	size_t hl;

	open_env(e, 0, 0, 0);
	/* Answer uiwarp's Read first (the fenced Send then goes). */
	CF_OK(rp_send_read_resp(&e->rp, e->out_rr.sink_stag,
				e->out_rr.sink_to, true, data, sizeof(data)));
	cf_mem_placed(e, e->r[CF_SINK].p, data, sizeof(data));
	CF_OK(cf_wait_wc(e, e->scq, CF_WR_READ, UIW_WC_SUCCESS, NULL));
	CF_OK(rp_recv_seg(&e->rp, s));
	assert_int_equal(s->h.opcode, UIW_OP_SEND);
	CF_OK(cf_wait_wc(e, e->scq, CF_WR_FENCED_SEND, UIW_WC_SUCCESS, NULL));
	sge.addr = cf_to(e, CF_SINK, 256);
	sge.length = 8;
	sge.lkey = e->r[CF_SINK].mr->lkey;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.wr.atomic.remote_addr = 0x0000600000000040ull;
	wr.wr.atomic.rkey = 0x00abcd11;
	wr.wr.atomic.compare_add = 9;
	CF_OK(cf_post_send_wr(e, &wr));
	CF_OK(rp_recv_seg(&e->rp, s));
	assert_false(s->h.tagged);
	assert_int_equal(s->h.opcode, UIW_OP_ATOMIC_REQ);
	assert_int_equal(s->h.qn, UIW_QN_READ_REQ);
	assert_int_equal(s->h.msn, 2);
	assert_true(s->h.last);
	assert_int_equal(s->h.rsvd_ulp, 0);
	assert_int_equal(uiw_atomic_req_decode(s->pl, s->plen, &r), UIW_OK);
	assert_int_equal(r.aopcode, UIW_AOP_FETCH_ADD);
	assert_int_equal(r.stag, 0x00abcd11);
	assert_int_equal(r.to, 0x0000600000000040ull);
	assert_int_equal(r.add_swap, 9);
	assert_int_equal(r.add_swap_mask, 0);
	assert_int_equal(r.compare, 0);
	assert_int_equal(r.compare_mask, UINT64_MAX);
	/* Not complete before the Response (§5.4 rule 7). */
	assert_int_equal(uiw_cq_poll(e->scq, 1, &wc), 0);
	rs.req_id = r.req_id;
	rs.orig_value = orig;
	hl = rp_hdr_untagged(hdr, UIW_OP_ATOMIC_RESP, true,
			     UIW_QN_ATOMIC_RESP, 1, 0, 0);
	memcpy(ubuf, hdr, hl);
	uiw_atomic_resp_encode(ubuf + hl, UIW_ATOMIC_RESP_LEN, &rs);
	CF_OK(rp_send_fpdu(&e->rp, ubuf, hl + UIW_ATOMIC_RESP_LEN));
	CF_OK(cf_wait_wc(e, e->scq, 0xa0, UIW_WC_SUCCESS, &wc));
	assert_int_equal(wc.opcode, UIW_WC_FETCH_ADD);
	assert_int_equal(get64(e->r[CF_SINK].p + 256), orig);
	cf_mem_placed(e, e->r[CF_SINK].p + 256, &orig, 8);
	CF_OK(cf_check_mem(e));
}

/* §5.2.2 rule 7: an Atomic Response that does not answer the outstanding
 * Request (another Request Identifier) is an error; the atomic fails. */
static void test_tx_atomic_resp_wrong_id(void **state)
{
	struct cf_env *e = *state;
	struct uiw_sge sge;
	struct uiw_send_wr wr = { .wr_id = 0xa1,
				  .opcode = UIW_WR_ATOMIC_CMP_SWP };
	struct uiw_atomic_req r;
	struct uiw_atomic_resp rs;
	struct rp_seg *s = &e->seg;
	uint8_t hdr[UIW_DDP_MAX_HDR_LEN];
	struct cf_opts o;
	size_t hl;

	cf_opts_init(&o);
	CF_OK(cf_open(e, &o, false));
	sge.addr = cf_to(e, CF_SINK, 512);
	sge.length = 8;
	sge.lkey = e->r[CF_SINK].mr->lkey;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.wr.atomic.remote_addr = 0x1000;
	wr.wr.atomic.rkey = 0x00abcd22;
	CF_OK(cf_post_send_wr(e, &wr));
	CF_OK(rp_recv_seg(&e->rp, s));
	assert_int_equal(s->h.opcode, UIW_OP_ATOMIC_REQ);
	assert_int_equal(s->h.msn, 1);
	assert_int_equal(uiw_atomic_req_decode(s->pl, s->plen, &r), UIW_OK);
	assert_int_equal(r.aopcode, UIW_AOP_CMP_SWAP);
	/* Plain compare-and-swap: every bit compared and swapped. */
	assert_int_equal(r.compare_mask, UINT64_MAX);
	assert_int_equal(r.add_swap_mask, UINT64_MAX);
	rs.req_id = r.req_id + 1;
	rs.orig_value = 5;
	hl = rp_hdr_untagged(hdr, UIW_OP_ATOMIC_RESP, true,
			     UIW_QN_ATOMIC_RESP, 1, 0, 0);
	memcpy(ubuf, hdr, hl);
	uiw_atomic_resp_encode(ubuf + hl, UIW_ATOMIC_RESP_LEN, &rs);
	CF_OK(rp_send_fpdu(&e->rp, ubuf, hl + UIW_ATOMIC_RESP_LEN));
	cf_expect_status(e, 0xa1, CF_WC_ANY_ERROR);
	expect_ext_term(e, hdr, hl, UIW_ATOMIC_RESP_LEN,
			UIW_E_RDMAP_OP_UNSPEC);
}

/* §5.2.2 rule 5: queue 3 has a buffer per outstanding atomic only; an
 * Atomic Response with none outstanding finds none. */
static void test_atomic_resp_unsolicited(void **state)
{
	struct cf_env *e = *state;
	struct uiw_atomic_resp rs = { .req_id = 1, .orig_value = 2 };
	uint8_t hdr[UIW_DDP_MAX_HDR_LEN];
	size_t hl;

	open_env(e, 0, 0, 0);
	hl = rp_hdr_untagged(hdr, UIW_OP_ATOMIC_RESP, true,
			     UIW_QN_ATOMIC_RESP, 1, 0, 0);
	memcpy(ubuf, hdr, hl);
	uiw_atomic_resp_encode(ubuf + hl, UIW_ATOMIC_RESP_LEN, &rs);
	CF_OK(rp_send_fpdu(&e->rp, ubuf, hl + UIW_ATOMIC_RESP_LEN));
	expect_ext_term(e, hdr, hl, UIW_ATOMIC_RESP_LEN,
			UIW_E_DDP_U_MSN_NO_BUF);
}

/* §6.3: uiwarp's Immediate Data: queue 0 with the Sends' MSNs, opcode
 * 1001b with SE, exactly the 8 octets (big-endian). */
static void test_tx_imm(void **state)
{
	struct cf_env *e = *state;
	struct uiw_send_wr wr = { .wr_id = 0xb0, .opcode = UIW_WR_IMMEDIATE,
				  .send_flags = UIW_SEND_SOLICITED,
				  .imm_data = 0x0102030405060708ull };
	static const uint8_t be[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	struct rp_seg *s = &e->seg;
	struct cf_opts o;
	uint64_t imm;

	cf_opts_init(&o);
	CF_OK(cf_open(e, &o, false));
	CF_OK(cf_post_send_wr(e, &wr));
	CF_OK(rp_recv_seg(&e->rp, s));
	assert_false(s->h.tagged);
	assert_int_equal(s->h.opcode, UIW_OP_IMM_SE);
	assert_int_equal(s->h.qn, UIW_QN_SEND);
	assert_int_equal(s->h.msn, 1);
	assert_true(s->h.last);
	assert_int_equal(s->plen, UIW_IMM_DATA_LEN);
	assert_int_equal(uiw_imm_decode(s->pl, s->plen, &imm), UIW_OK);
	assert_int_equal(imm, 0x0102030405060708ull);
	assert_memory_equal(s->pl, be, 8);
	CF_OK(cf_wait_wc(e, e->scq, 0xb0, UIW_WC_SUCCESS, NULL));
}

#define T(name) cmocka_unit_test_setup_teardown(test_##name, cf_state_new, cf_state_free)

int main(void)
{
	/* Over SCTP (RFC 5043): every case runs. */
	static const struct cf_mpa_only mpa_only[] = { { NULL, NULL } };
	const struct CMUnitTest tests[] = {
		T(atomic_fetchadd),
		T(atomic_cmpswap),
		T(atomic_after_read),
		T(atomic_misaligned),
		T(atomic_beyond_ird),
		T(atomic_access),
		T(atomic_not_assoc),
		T(atomic_bounds),
		T(atomic_bad_aopcode),
		T(imm_data),
		T(imm_long),
		T(imm_short),
		T(tx_atomic),
		T(tx_atomic_resp_wrong_id),
		T(atomic_resp_unsolicited),
		T(tx_imm),
	};

	return cf_run_tests("conformance: RFC 7306", tests,
			    sizeof(tests) / sizeof(tests[0]), mpa_only);
}
