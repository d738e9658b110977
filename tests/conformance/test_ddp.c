/*
 * Conformance: the DDP errors a peer can provoke (RFC 5041 §7.1, §7.2),
 * tagged (RDMA Write segments) and untagged (Sends on queue 0), and the
 * DDP rules a receiver must honour (zero-length tagged segments are not
 * checked, §5.2; a zero-length message consumes a buffer, RFC 5040 §5.3;
 * placement stops at the first invalid segment, §7.1).
 *
 * Each error case: uiwarp is the MPA responder with four receives posted
 * (the first consumed by the raw peer's first Send), an RDMA Read of its
 * own outstanding and a fenced Send queued behind it; the raw peer sends
 * one bad segment; the Terminate must carry the DDP error with M and D
 * and the segment's header as sent (RFC 5040 Figure 10).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "cf_env.h"

static uint8_t ubuf[66000];

static void open_std(struct cf_env *e, int nrecv)
{
	struct cf_opts o;

	cf_opts_init(&o);
	o.nrecv = nrecv;
	CF_OK(cf_open(e, &o, true));
}

/* Sends hdr (hl octets) and len octets of payload as one FPDU; fills x
 * with err and the copies the Terminate must carry (M, D). */
static void send_bad(struct cf_env *e, const uint8_t *hdr, size_t hl,
		     size_t len, uiw_err_t err, struct cf_term_expect *x)
{
	size_t i;

	memcpy(ubuf, hdr, hl);
	for (i = 0; i < len; i++)
		ubuf[hl + i] = (uint8_t)(0xc0 + i);
	CF_OK(rp_send_fpdu(&e->rp, ubuf, hl + len));
	memset(x, 0, sizeof(*x));
	x->err = err;
	x->m = x->d = true;
	x->seg_len = (uint16_t)(hl + len);
	x->ddp_hdr = hdr;
	x->ddp_hdr_len = hl;
}

/* ---- Tagged buffer errors (RFC 5041 §7.1 checks 1-5, §7.2 type 1) ---- */

enum to_kind { TO_OFF, TO_ABS };
enum { STAG_REGION = 0, STAG_UNUSED, STAG_ZERO };

struct tcase {
	enum cf_reg reg;
	int stag_mode;          /* STAG_REGION (xor stag_xor), _UNUSED, _ZERO */
	uint32_t stag_xor;
	enum to_kind to_kind;
	int64_t to;             /* offset from the region, or absolute */
	size_t len;
	uint8_t dv;             /* 0: valid (1) */
	uint8_t dv_bad;         /* 1: send dv as given */
	uiw_err_t err;
};

/* An STag index that no region of this device uses. */
static uint32_t unused_stag(struct cf_env *e)
{
	uint32_t idx = 0x00abcd;
	int k;

	for (;;) {
		bool used = false;

		for (k = 0; k < CF_NREG; k++)
			if (e->r[k].mr && e->r[k].mr->rkey >> 8 == idx)
				used = true;
		if (!used)
			return idx << 8 | 0x5c;
		idx++;
	}
}

static void run_tagged(struct cf_env *e, const struct tcase *c)
{
	struct uiw_ddp_hdr h = {
		.tagged = true, .last = true,
		.ddp_ver = c->dv_bad ? c->dv : UIW_DDP_VERSION,
		.rdmap_ver = UIW_RDMAP_VERSION, .opcode = UIW_OP_WRITE,
	};
	uint8_t hdr[UIW_DDP_MAX_HDR_LEN];
	struct cf_term_expect x;
	size_t hl;

	open_std(e, 0);
	if (c->stag_mode == STAG_UNUSED)
		h.stag = unused_stag(e);
	else if (c->stag_mode == STAG_ZERO)
		h.stag = 0;
	else
		h.stag = cf_stag(e, c->reg) ^ c->stag_xor;
	h.to = c->to_kind == TO_ABS ? (uint64_t)c->to :
				      cf_to(e, c->reg, 0) + (uint64_t)c->to;
	hl = uiw_ddp_hdr_encode(hdr, &h);
	send_bad(e, hdr, hl, c->len, c->err, &x);
	CF_OK(cf_expect_term(e, &x));
}

#define TAGGED(name, ...)						\
	static void test_##name(void **state)				\
	{								\
		static const struct tcase c = { __VA_ARGS__ };		\
		run_tagged(*state, &c);					\
	}

/* Check 1: the STag is valid for this stream. */
TAGGED(t_stag_unknown, .reg = CF_WRITE, .stag_mode = STAG_UNUSED, .len = 8,
       .err = UIW_E_DDP_T_INVALID_STAG)
TAGGED(t_stag_wrong_key, .reg = CF_WRITE, .stag_xor = 0x01, .len = 8,
       .err = UIW_E_DDP_T_INVALID_STAG)
TAGGED(t_stag_zero, .reg = CF_WRITE, .stag_mode = STAG_ZERO,
       .to_kind = TO_ABS, .to = 0, .len = 8,
       .err = UIW_E_DDP_T_INVALID_STAG)
/* Checks 3 and 4: base and bounds, to the octet. */
TAGGED(t_bounds_high, .reg = CF_WRITE, .to = CF_REG_LEN - 4, .len = 8,
       .err = UIW_E_DDP_T_BASE_BOUNDS)
TAGGED(t_bounds_low, .reg = CF_WRITE, .to = -1, .len = 8,
       .err = UIW_E_DDP_T_BASE_BOUNDS)
TAGGED(t_bounds_one_past, .reg = CF_WRITE, .to = CF_REG_LEN, .len = 1,
       .err = UIW_E_DDP_T_BASE_BOUNDS)
/* RFC 5041 §8.2: an STag of another protection domain. */
TAGGED(t_not_assoc, .reg = CF_OTHER_PD, .to = 0, .len = 8,
       .err = UIW_E_DDP_T_STAG_NOT_ASSOC)
/* Check 5: the 64-bit sum of TO and length wraps. */
TAGGED(t_to_wrap, .reg = CF_WRITE, .to_kind = TO_ABS, .to = -4, .len = 8,
       .err = UIW_E_DDP_T_TO_WRAP)
/* Check 2 ("an associated buffer that allows Placement"): no remote
 * write right.  RFC 5041 §7.2 has no code for it; RFC 5040 §4.8 does:
 * RDMAP remote protection error, access rights violation. */
TAGGED(t_access_read_only, .reg = CF_READ, .to = 0, .len = 8,
       .err = UIW_E_RDMAP_ACCESS)
TAGGED(t_access_local_only, .reg = CF_LOCAL, .to = 0, .len = 8,
       .err = UIW_E_RDMAP_ACCESS)
/* RFC 5041 §4.1: DV must be 1. */
TAGGED(t_dv0, .reg = CF_WRITE, .to = 0, .len = 8, .dv = 0, .dv_bad = 1,
       .err = UIW_E_DDP_T_INVALID_VERSION)
TAGGED(t_dv2, .reg = CF_WRITE, .to = 0, .len = 8, .dv = 2, .dv_bad = 1,
       .err = UIW_E_DDP_T_INVALID_VERSION)

/* RFC 5041 §7.1: "MUST cease placing the remainder" -- a two-segment
 * Write whose second segment leaves the region: the first segment's
 * octets are placed, nothing of the second, nothing outside. */
static void test_t_second_segment_bounds(void **state)
{
	struct cf_env *e = *state;
	uint8_t h1[UIW_DDP_MAX_HDR_LEN], h2[UIW_DDP_MAX_HDR_LEN];
	struct cf_term_expect x;
	size_t hl, i;
	uint8_t data[64];

	open_std(e, 0);
	for (i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(0x90 + i);
	hl = rp_hdr_tagged(h1, UIW_OP_WRITE, false, cf_stag(e, CF_WRITE),
			   cf_to(e, CF_WRITE, CF_REG_LEN - 96));
	memcpy(ubuf, h1, hl);
	memcpy(ubuf + hl, data, 64);
	CF_OK(rp_send_fpdu(&e->rp, ubuf, hl + 64));
	cf_mem_placed(e, e->r[CF_WRITE].p + CF_REG_LEN - 96, data, 64);
	hl = rp_hdr_tagged(h2, UIW_OP_WRITE, true, cf_stag(e, CF_WRITE),
			   cf_to(e, CF_WRITE, CF_REG_LEN - 32));
	send_bad(e, h2, hl, 64, UIW_E_DDP_T_BASE_BOUNDS, &x);
	CF_OK(cf_expect_term(e, &x));
}

/* RFC 5041 §5.2: "The STag and TO fields MUST NOT be checked for a
 * zero-length Tagged DDP Message": no error; the stream goes on. */
static void test_t_zero_length_unchecked(void **state)
{
	struct cf_env *e = *state;
	uint8_t h[UIW_DDP_MAX_HDR_LEN];
	struct uiw_wc wc;
	size_t hl;

	open_std(e, 0);
	hl = rp_hdr_tagged(h, UIW_OP_WRITE, true, 0xdeadbeef, UINT64_MAX);
	CF_OK(rp_send_fpdu(&e->rp, h, hl));
	hl = rp_hdr_tagged(h, UIW_OP_WRITE, true, cf_stag(e, CF_READ), 0);
	CF_OK(rp_send_fpdu(&e->rp, h, hl));
	CF_OK(rp_send_send(&e->rp, UIW_OP_SEND, 0, "after", 5));
	CF_OK(cf_wait_wc(e, e->rcq, CF_WR_RECV(1), UIW_WC_SUCCESS, &wc));
	assert_int_equal(wc.byte_len, 5);
	cf_mem_placed(e, e->r[CF_RECV].p + e->o.recv_len, "after", 5);
	assert_int_equal(cf_qp_state(e, NULL), UIW_QPS_RTS);
	CF_OK(cf_check_mem(e));
}

/* ---- Untagged buffer errors (RFC 5041 §7.1 checks 1-5, type 2) ------- */

static void run_untagged(struct cf_env *e, int nrecv, uint8_t dv,
			 uint32_t qn, uint32_t msn_delta, bool msn_abs,
			 uint32_t msn, uint32_t mo, size_t len, uiw_err_t err,
			 int rq_status)
{
	struct uiw_ddp_hdr h = {
		.tagged = false, .last = true, .ddp_ver = dv,
		.rdmap_ver = UIW_RDMAP_VERSION, .opcode = UIW_OP_SEND,
		.qn = qn, .mo = mo,
	};
	uint8_t hdr[UIW_DDP_MAX_HDR_LEN];
	struct cf_term_expect x;
	size_t hl;

	open_std(e, nrecv);
	h.msn = msn_abs ? msn : e->rp.msn[0] + msn_delta;
	hl = uiw_ddp_hdr_encode(hdr, &h);
	send_bad(e, hdr, hl, len, err, &x);
	/* RFC 5041 §7.1: nothing of a refused segment is placed (the
	 * memory check at the end sees every octet). */
	if (rq_status >= 0)
		cf_expect_status(e, CF_WR_RECV(1), rq_status);
	CF_OK(cf_expect_term(e, &x));
}

/* RFC 5041 §4.1: DV must be 1. */
static void test_u_dv0(void **state)
{
	run_untagged(*state, 0, 0, 0, 0, false, 0, 0, 8,
		     UIW_E_DDP_U_INVALID_VERSION, -1);
}

static void test_u_dv3(void **state)
{
	run_untagged(*state, 0, 3, 0, 0, false, 0, 0, 8,
		     UIW_E_DDP_U_INVALID_VERSION, -1);
}

/* Check 1: the QN is valid for this stream (RDMAP uses 0, 1, 2). */
static void test_u_invalid_qn(void **state)
{
	run_untagged(*state, 0, 1, 4, 0, false, 0, 0, 8,
		     UIW_E_DDP_U_INVALID_QN, -1);
}

static void test_u_invalid_qn_max(void **state)
{
	run_untagged(*state, 0, 1, 0xffffffffu, 0, false, 0, 0, 8,
		     UIW_E_DDP_U_INVALID_QN, -1);
}

/* Check 2: the next MSN but no buffer posted (the only receive was used
 * by the first Send): "Invalid MSN - no buffer available". */
static void test_u_no_buffer(void **state)
{
	run_untagged(*state, 1, 1, 0, 0, false, 0, 0, 8,
		     UIW_E_DDP_U_MSN_NO_BUF, -1);
}

/* Check 5: an MSN outside the range of the posted buffers (three are
 * posted, for MSNs 2..4): beyond the last, and one already used. */
static void test_u_msn_beyond(void **state)
{
	run_untagged(*state, 0, 1, 0, 5, false, 0, 0, 8,
		     UIW_E_DDP_U_MSN_RANGE, -1);
}

static void test_u_msn_used(void **state)
{
	run_untagged(*state, 0, 1, 0, 0, true, 1, 0, 8,
		     UIW_E_DDP_U_MSN_RANGE, -1);
}

/* Check 3: an MO outside the 256-octet buffer. */
static void test_u_mo_beyond(void **state)
{
	run_untagged(*state, 0, 1, 0, 0, false, 0, 300, 8,
		     UIW_E_DDP_U_INVALID_MO, UIW_WC_LOC_LEN_ERR);
}

/* Check 4: MO + length beyond the buffer: "DDP Message too long for
 * available buffer" (RFC 5040 §5.3: a Send larger than the buffer is an
 * error). */
static void test_u_too_long(void **state)
{
	run_untagged(*state, 0, 1, 0, 0, false, 0, 0, 257,
		     UIW_E_DDP_U_TOO_LONG, UIW_WC_LOC_LEN_ERR);
}

/* The same found on a later segment: the first segment's octets are
 * placed, the overflowing one is not (§7.1 "cease placing"). */
static void test_u_too_long_second_segment(void **state)
{
	struct cf_env *e = *state;
	uint8_t h1[UIW_DDP_MAX_HDR_LEN], h2[UIW_DDP_MAX_HDR_LEN];
	struct cf_term_expect x;
	uint8_t data[200];
	size_t hl, i;
	uint32_t msn;

	open_std(e, 0);
	msn = e->rp.msn[0]++;
	for (i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(0x21 + i);
	hl = rp_hdr_untagged(h1, UIW_OP_SEND, false, 0, msn, 0, 0);
	memcpy(ubuf, h1, hl);
	memcpy(ubuf + hl, data, sizeof(data));
	CF_OK(rp_send_fpdu(&e->rp, ubuf, hl + sizeof(data)));
	cf_mem_placed(e, e->r[CF_RECV].p + e->o.recv_len, data, sizeof(data));
	hl = rp_hdr_untagged(h2, UIW_OP_SEND, true, 0, msn, 200, 0);
	send_bad(e, h2, hl, 100, UIW_E_DDP_U_TOO_LONG, &x);
	cf_expect_status(e, CF_WR_RECV(1), UIW_WC_LOC_LEN_ERR);
	CF_OK(cf_expect_term(e, &x));
}

/* RFC 5040 §5.3: "A zero-length Send Message Type MUST consume an
 * Untagged Buffer"; RFC 5041 §5.4: its length (0) is reported. */
static void test_u_zero_length_send(void **state)
{
	struct cf_env *e = *state;
	struct uiw_wc wc;

	open_std(e, 0);
	CF_OK(rp_send_send(&e->rp, UIW_OP_SEND, 0, NULL, 0));
	CF_OK(cf_wait_wc(e, e->rcq, CF_WR_RECV(1), UIW_WC_SUCCESS, &wc));
	assert_int_equal(wc.byte_len, 0);
	CF_OK(rp_send_send(&e->rp, UIW_OP_SEND_SE, 0, "next", 4));
	CF_OK(cf_wait_wc(e, e->rcq, CF_WR_RECV(2), UIW_WC_SUCCESS, &wc));
	assert_int_equal(wc.byte_len, 4);
	assert_true(wc.flags & UIW_WC_F_SOLICITED);
	cf_mem_placed(e, e->r[CF_RECV].p + 2 * e->o.recv_len, "next", 4);
	CF_OK(cf_check_mem(e));
}

/* ---- Reserved fields (RFC 5041 §4.1, RFC 5040 §4.1) ----------------- */

/* "Rsvd ... MUST be set to zero on transmit, and not checked on receive"
 * (DDP), "Reserved. MUST be set to zero by sender, ignored by the
 * receiver" (RDMAP), and the Invalidate STag field of a plain Send is
 * "ignored by the receiver": segments with all of them set are taken. */
static void test_reserved_ignored(void **state)
{
	struct cf_env *e = *state;
	struct uiw_ddp_hdr h = {
		.tagged = false, .last = true, .ddp_rsvd = 0xf, .ddp_ver = 1,
		.rdmap_ver = 1, .opcode = UIW_OP_SEND, .rsvd_ulp = 0xffffffff,
		.qn = 0,
	};
	struct uiw_wc wc;
	size_t hl;

	open_std(e, 0);
	h.msn = e->rp.msn[0]++;
	hl = uiw_ddp_hdr_encode(ubuf, &h);
	ubuf[1] |= UIW_RDMAP_RSVD_MASK;
	memcpy(ubuf + hl, "reserved", 8);
	CF_OK(rp_send_fpdu(&e->rp, ubuf, hl + 8));
	CF_OK(cf_wait_wc(e, e->rcq, CF_WR_RECV(1), UIW_WC_SUCCESS, &wc));
	assert_int_equal(wc.byte_len, 8);
	assert_false(wc.flags & UIW_WC_F_WITH_INV);
	cf_mem_placed(e, e->r[CF_RECV].p + e->o.recv_len, "reserved", 8);
	h.tagged = true;
	h.opcode = UIW_OP_WRITE;
	h.stag = cf_stag(e, CF_WRITE);
	h.to = cf_to(e, CF_WRITE, 40);
	hl = uiw_ddp_hdr_encode(ubuf, &h);
	ubuf[1] |= UIW_RDMAP_RSVD_MASK;
	memcpy(ubuf + hl, "tagged!!", 8);
	CF_OK(rp_send_fpdu(&e->rp, ubuf, hl + 8));
	cf_mem_placed(e, e->r[CF_WRITE].p + 40, "tagged!!", 8);
	CF_OK(rp_send_send(&e->rp, UIW_OP_SEND, 0, "x", 1));
	CF_OK(cf_wait_wc(e, e->rcq, CF_WR_RECV(2), UIW_WC_SUCCESS, NULL));
	cf_mem_placed(e, e->r[CF_RECV].p + 2 * e->o.recv_len, "x", 1);
	CF_OK(cf_check_mem(e));
}

/* ---- After the first error (RFC 5040 §7.1 rule 4, RFC 5041 §7.1) ---- */

/* Three segments at once (one write; over SCTP three chunks in a row):
 * an RDMA Write to an STag that does not exist, a Send to an invalid
 * queue, a valid Send.  The Terminate
 * captures the first error ("the first RDMA Message ... that experienced
 * an error MUST be captured"); DDP "MUST silently drop any subsequent
 * incoming DDP Segments": the valid Send is neither placed nor
 * delivered (its receive is flushed, not completed). */
static void test_first_error_captured(void **state)
{
	struct cf_env *e = *state;
	uint8_t h1[UIW_DDP_MAX_HDR_LEN], u[3][64];
	struct cf_term_expect x = { 0 };
	struct iovec iov[3];
	size_t hl, ul;

	open_std(e, 0);
	hl = rp_hdr_tagged(h1, UIW_OP_WRITE, true, unused_stag(e),
			   cf_to(e, CF_WRITE, 0));
	memcpy(u[0], h1, hl);
	memset(u[0] + hl, 0x11, 8);
	iov[0].iov_base = u[0];
	iov[0].iov_len = hl + 8;
	ul = rp_hdr_untagged(u[1], UIW_OP_SEND, true, 7, 1, 0, 0);
	memset(u[1] + ul, 0x22, 8);
	iov[1].iov_base = u[1];
	iov[1].iov_len = ul + 8;
	ul = rp_hdr_untagged(u[2], UIW_OP_SEND, true, 0, e->rp.msn[0]++, 0,
			     0);
	memcpy(u[2] + ul, "dropped!", 8);
	iov[2].iov_base = u[2];
	iov[2].iov_len = ul + 8;
	CF_OK(rp_send_fpdus(&e->rp, iov, 3));
	x.err = UIW_E_DDP_T_INVALID_STAG;
	x.m = x.d = true;
	x.seg_len = (uint16_t)(hl + 8);
	x.ddp_hdr = h1;
	x.ddp_hdr_len = hl;
	CF_OK(cf_expect_term(e, &x));
}

#define T(name) cmocka_unit_test_setup_teardown(test_##name, cf_state_new, cf_state_free)

int main(void)
{
	/* Over SCTP (RFC 5043): every case runs. */
	static const struct cf_mpa_only mpa_only[] = { { NULL, NULL } };
	const struct CMUnitTest tests[] = {
		T(t_stag_unknown),
		T(t_stag_wrong_key),
		T(t_stag_zero),
		T(t_bounds_high),
		T(t_bounds_low),
		T(t_bounds_one_past),
		T(t_not_assoc),
		T(t_to_wrap),
		T(t_access_read_only),
		T(t_access_local_only),
		T(t_dv0),
		T(t_dv2),
		T(t_second_segment_bounds),
		T(t_zero_length_unchecked),
		T(u_dv0),
		T(u_dv3),
		T(u_invalid_qn),
		T(u_invalid_qn_max),
		T(u_no_buffer),
		T(u_msn_beyond),
		T(u_msn_used),
		T(u_mo_beyond),
		T(u_too_long),
		T(u_too_long_second_segment),
		T(u_zero_length_send),
		T(reserved_ignored),
		T(first_error_captured),
	};

	return cf_run_tests("conformance: DDP", tests,
			    sizeof(tests) / sizeof(tests[0]), mpa_only);
}
