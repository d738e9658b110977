/*
 * Conformance: MPA Full Operation framing errors a peer can provoke
 * (RFC 5044 §4, §6, §8): a CRC that does not match, a marker whose
 * FPDUPTR disagrees with the ULPDU_Length fields, an FPDU length that
 * overruns or falls short, a ULPDU too short for its DDP header; and
 * the framing rules a receiver must honour (reserved marker bits and the
 * low FPDUPTR bits are ignored; an MPA responder sends no FPDU before it
 * has validated one).
 *
 * Each error case checks the Terminate on the wire (LLP errors carry no
 * copied headers, RFC 5040 Figure 10), the QP's state and cause, every
 * completion, the memory around the registered regions, and the close.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "cf_env.h"

static uint8_t fbuf[70000];
static uint8_t ubuf[66000];

static void open_std(struct cf_env *e, enum cf_role role, uint8_t raw_flags,
		     enum uiw_opt crc, enum uiw_opt markers, uint32_t recv_len)
{
	struct cf_opts o;

	cf_opts_init(&o);
	o.role = role;
	o.raw_flags = raw_flags;
	o.crc = crc;
	o.markers = markers;
	o.recv_len = recv_len;
	CF_OK(cf_open(e, &o, true));
}

/* A Send of len octets (pattern p) with the next MSN into ubuf. */
static size_t make_send(struct cf_env *e, size_t len, uint8_t p)
{
	size_t hl = rp_hdr_untagged(ubuf, UIW_OP_SEND, true, 0,
				    e->rp.msn[0]++, 0, 0), i;

	for (i = 0; i < len; i++)
		ubuf[hl + i] = (uint8_t)(p + i);
	return hl + len;
}

/* The receive buffer of receive i may hold anything after an error. */
static void recv_loose(struct cf_env *e, int i)
{
	cf_mem_loose(e, e->r[CF_RECV].p + (size_t)i * e->o.recv_len,
		     e->o.recv_len);
}

static struct cf_term_expect llp_term(uiw_err_t err)
{
	struct cf_term_expect x = { .err = err };

	return x;
}

/* ---- CRC (RFC 5044 §4.4, §6, §8 code 2) ------------------------------ */

/* A CRC field with one bit flipped: LLP error 2/0/2, no headers. */
static void crc_case(struct cf_env *e, enum cf_role role)
{
	struct cf_term_expect x = llp_term(UIW_E_MPA_CRC);
	size_t ul, n;
	int rcv = role == CF_RAW_INITIATES ? 1 : 0;

	open_std(e, role, UIW_MPA_F_C, UIW_OPT_DEFAULT, UIW_OPT_DEFAULT, 0);
	ul = make_send(e, 40, 0x30);
	n = rp_fpdu_build(&e->rp, fbuf, sizeof(fbuf), ubuf, ul);
	assert_true(n > 0);
	fbuf[n - 2] ^= 0x10;
	CF_OK(rp_send_stream(&e->rp, fbuf, n));
	/* The Send's receive fails (its data may have been placed, RFC 5040
	 * §5.5 rule 4), the rest is flushed. */
	cf_expect_status(e, CF_WR_RECV(rcv), UIW_WC_FATAL_ERR);
	recv_loose(e, rcv);
	CF_OK(cf_expect_term(e, &x));
}

static void test_crc_bad_responder(void **state)
{
	crc_case(*state, CF_RAW_INITIATES);
}

static void test_crc_bad_initiator(void **state)
{
	crc_case(*state, CF_RAW_RESPONDS);
}

/* A bit flipped in an RDMA Write's payload: the CRC error is reported;
 * what was placed stays inside the range the (valid) header named. */
static void test_crc_bad_payload(void **state)
{
	struct cf_env *e = *state;
	struct cf_term_expect x = llp_term(UIW_E_MPA_CRC);
	size_t hl, n;

	open_std(e, CF_RAW_INITIATES, UIW_MPA_F_C, UIW_OPT_DEFAULT,
		 UIW_OPT_DEFAULT, 0);
	hl = rp_hdr_tagged(ubuf, UIW_OP_WRITE, true, cf_stag(e, CF_WRITE),
			   cf_to(e, CF_WRITE, 100));
	memset(ubuf + hl, 0x5a, 200);
	n = rp_fpdu_build(&e->rp, fbuf, sizeof(fbuf), ubuf, hl + 200);
	fbuf[2 + hl + 50] ^= 0x01;
	CF_OK(rp_send_stream(&e->rp, fbuf, n));
	cf_mem_loose(e, e->r[CF_WRITE].p + 100, 200);
	CF_OK(cf_expect_term(e, &x));
}

/* RFC 5044 §6: the CRC is verified before the ULPDU goes to DDP, so a
 * damaged header (here an STag that does not exist) is reported as the
 * CRC error, not as the DDP error it now looks like. */
static void test_crc_wins_over_ddp(void **state)
{
	struct cf_env *e = *state;
	struct cf_term_expect x = llp_term(UIW_E_MPA_CRC);
	size_t hl, n;

	open_std(e, CF_RAW_INITIATES, UIW_MPA_F_C, UIW_OPT_DEFAULT,
		 UIW_OPT_DEFAULT, 0);
	hl = rp_hdr_tagged(ubuf, UIW_OP_WRITE, true, cf_stag(e, CF_WRITE),
			   cf_to(e, CF_WRITE, 0));
	memset(ubuf + hl, 0x77, 16);
	n = rp_fpdu_build(&e->rp, fbuf, sizeof(fbuf), ubuf, hl + 16);
	fbuf[2 + 2] ^= 0x80;          /* STag's top octet, after the CRC */
	CF_OK(rp_send_stream(&e->rp, fbuf, n));
	CF_OK(cf_expect_term(e, &x));
}

/* RFC 5040 §5.5 rules 12 and 17: a Read Request is processed only once
 * DDP has delivered it.  A valid Request in an FPDU with a bad CRC is
 * never delivered (RFC 5044 §4.4, §6): no Response, only the Terminate
 * for the CRC. */
static void test_crc_bad_read_request(void **state)
{
	struct cf_env *e = *state;
	struct cf_term_expect x = llp_term(UIW_E_MPA_CRC);
	struct uiw_read_req rr = { .sink_stag = 0x42, .sink_to = 0,
				   .size = 64 };
	size_t hl, n;

	open_std(e, CF_RAW_INITIATES, UIW_MPA_F_C, UIW_OPT_DEFAULT,
		 UIW_OPT_DEFAULT, 0);
	rr.src_stag = cf_stag(e, CF_READ);
	rr.src_to = cf_to(e, CF_READ, 0);
	hl = rp_hdr_untagged(ubuf, UIW_OP_READ_REQ, true, UIW_QN_READ_REQ,
			     e->rp.msn[1]++, 0, 0);
	uiw_read_req_encode(ubuf + hl, &rr);
	n = rp_fpdu_build(&e->rp, fbuf, sizeof(fbuf), ubuf,
			  hl + UIW_READ_REQ_LEN);
	fbuf[n - 3] ^= 0x04;
	CF_OK(rp_send_stream(&e->rp, fbuf, n));
	CF_OK(cf_expect_term(e, &x));
}

/* RFC 5044 §7.1.2 rule 4: an MPA responder MUST receive and validate an
 * FPDU before it sends any.  When the initiator's very first FPDU has a
 * bad CRC, the responder has validated none: it closes without sending
 * a Terminate. */
static void test_crc_first_fpdu_responder(void **state)
{
	struct cf_env *e = *state;
	struct cf_opts o;
	size_t ul, n;

	cf_opts_init(&o);
	CF_OK(cf_setup(e, &o));
	CF_OK(cf_connect(e));
	ul = make_send(e, 24, 0x40);
	n = rp_fpdu_build(&e->rp, fbuf, sizeof(fbuf), ubuf, ul);
	fbuf[n - 1] ^= 0x01;
	CF_OK(rp_send_stream(&e->rp, fbuf, n));
	cf_expect_status(e, CF_WR_RECV(0), UIW_WC_FATAL_ERR);
	recv_loose(e, 0);
	CF_OK(cf_expect_closed(e, UIW_E_MPA_CRC));
}

/* ---- Markers (RFC 5044 §4.2, §4.3, §8 code 3) -------------------------- */

/* Sends a valid RDMA Write (to CF_WRITE at offset 2048) sized so that
 * the next FPDU starts on a marker position. */
static void align_to_marker(struct cf_env *e)
{
	uint64_t pos = e->rp.tx_pos;
	uint32_t want = (uint32_t)(UIW_MPA_MARKER_INTERVAL -
				   pos % UIW_MPA_MARKER_INTERVAL), flen;
	size_t len, hl;

	if (want < 32)
		want += UIW_MPA_MARKER_INTERVAL;
	for (len = 0; len < 1024; len++) {
		struct uiw_mpa_piece p[UIW_MPA_MAX_PIECES(2048)];

		if (uiw_mpa_layout(pos, (uint32_t)(14 + len), e->rp.markers_tx,
				   p, UIW_MPA_MAX_PIECES(2048), &flen) &&
		    flen == want)
			break;
	}
	assert_true(len < 1024);
	hl = rp_hdr_tagged(ubuf, UIW_OP_WRITE, true, cf_stag(e, CF_WRITE),
			   cf_to(e, CF_WRITE, 2048));
	memset(ubuf + hl, 0x3c, len);
	CF_OK(rp_send_fpdu(&e->rp, ubuf, hl + len));
	cf_mem_placed(e, e->r[CF_WRITE].p + 2048, ubuf + hl, len);
	assert_int_equal(e->rp.tx_pos % UIW_MPA_MARKER_INTERVAL, 0);
}

/* uiwarp asks for markers; the raw peer sends a Send that crosses a
 * marker position with the marker's FPDUPTR changed (CRC recomputed, so
 * only the marker is wrong): LLP error 2/0/3. */
static void marker_case(struct cf_env *e, bool leading, uint16_t delta)
{
	struct cf_term_expect x = llp_term(UIW_E_MPA_MARKER);
	size_t ul, n;
	long mo;

	open_std(e, CF_RAW_INITIATES, UIW_MPA_F_C, UIW_OPT_DEFAULT,
		 UIW_OPT_ON, 1024);
	assert_true(e->rp.markers_tx);
	if (leading)
		align_to_marker(e);
	ul = make_send(e, 700, 0x11);
	n = rp_fpdu_build(&e->rp, fbuf, sizeof(fbuf), ubuf, ul);
	mo = rp_fpdu_marker_off(e->rp.tx_pos, ul, true, 0);
	assert_true(mo >= 0);
	if (leading)
		assert_int_equal(mo, 0);
	else
		assert_true(mo > 0);
	{
		uint16_t v = (uint16_t)(fbuf[mo + 2] << 8 | fbuf[mo + 3]);

		v = (uint16_t)(v + delta);
		fbuf[mo + 2] = (uint8_t)(v >> 8);
		fbuf[mo + 3] = (uint8_t)v;
	}
	rp_fpdu_fix_crc(fbuf, n);
	CF_OK(rp_send_stream(&e->rp, fbuf, n));
	cf_expect_status(e, CF_WR_RECV(1), UIW_WC_FATAL_ERR);
	recv_loose(e, 1);
	CF_OK(cf_expect_term(e, &x));
}

static void test_marker_bad_fpduptr(void **state)
{
	marker_case(*state, false, 8);
}

/* The marker right before an FPDU's ULPDU_Length field must be zero
 * (RFC 5044 §4.3: "the Marker MUST be zero"). */
static void test_marker_bad_leading(void **state)
{
	marker_case(*state, true, 16);
}

/* RFC 5044 §4.2: the reserved half of a marker is ignored on receive
 * and the two low FPDUPTR bits are treated as zero: such markers are
 * not errors (they are still covered by the CRC, §4.3). */
static void test_marker_reserved_ignored(void **state)
{
	struct cf_env *e = *state;
	struct uiw_wc wc;
	size_t ul, n;
	long mo;
	unsigned i;

	open_std(e, CF_RAW_INITIATES, UIW_MPA_F_C, UIW_OPT_DEFAULT,
		 UIW_OPT_ON, 1024);
	align_to_marker(e);
	ul = make_send(e, 900, 0x22);
	n = rp_fpdu_build(&e->rp, fbuf, sizeof(fbuf), ubuf, ul);
	for (i = 0; (mo = rp_fpdu_marker_off(e->rp.tx_pos, ul, true, i)) >= 0;
	     i++) {
		fbuf[mo] = 0xa5;
		fbuf[mo + 1] = (uint8_t)(0x5a + i);
		fbuf[mo + 3] |= 0x03;
	}
	assert_int_equal(i, 2);
	rp_fpdu_fix_crc(fbuf, n);
	CF_OK(rp_send_stream(&e->rp, fbuf, n));
	CF_OK(cf_wait_wc(e, e->rcq, CF_WR_RECV(1), UIW_WC_SUCCESS, &wc));
	assert_int_equal(wc.byte_len, 900);
	cf_mem_placed(e, e->r[CF_RECV].p + 1024, ubuf + 18, 900);
	CF_OK(cf_check_mem(e));
}

/* ---- FPDU lengths (RFC 5044 §4.1, §6) ---------------------------------- */

/* ULPDU_Length says 8 octets more (or fewer) than the FPDU holds; the
 * CRC covers the octets as sent, so the receiver, which must delimit the
 * FPDU by ULPDU_Length, finds a CRC that does not match. */
static void len_crc_case(struct cf_env *e, int delta)
{
	struct cf_term_expect x = llp_term(UIW_E_MPA_CRC);
	size_t ul, n, n2;

	open_std(e, CF_RAW_INITIATES, UIW_MPA_F_C, UIW_OPT_DEFAULT,
		 UIW_OPT_DEFAULT, 0);
	ul = make_send(e, 64, 0x50);
	n = rp_fpdu_build_len(&e->rp, fbuf, sizeof(fbuf), ubuf, ul,
			      (uint16_t)((int)ul + delta));
	/* Another valid FPDU behind it, so that an overrun has octets to
	 * read. */
	e->rp.tx_pos += n;
	ul = make_send(e, 64, 0x60);
	n2 = rp_fpdu_build(&e->rp, fbuf + n, sizeof(fbuf) - n, ubuf, ul);
	e->rp.tx_pos -= n;
	CF_OK(rp_send_stream(&e->rp, fbuf, n + n2));
	cf_expect_status(e, CF_WR_RECV(1), UIW_WC_FATAL_ERR);
	recv_loose(e, 1);
	recv_loose(e, 2);
	CF_OK(cf_expect_term(e, &x));
}

static void test_len_overrun_crc(void **state)
{
	len_crc_case(*state, 8);
}

static void test_len_short_crc(void **state)
{
	len_crc_case(*state, -8);
}

/* Without CRCs the markers find an overrunning length: the FPDU is
 * placed so that it ends just before a marker position; ULPDU_Length
 * claims 8 octets more, so the receiver expects that marker inside the
 * FPDU (pointing back to it) where the sender put the next FPDU's
 * leading marker (zero). */
static void test_len_overrun_markers(void **state)
{
	struct cf_env *e = *state;
	struct cf_term_expect x = llp_term(UIW_E_MPA_MARKER);
	uint64_t pos;
	uint32_t flen;
	size_t ul = 0, n, n2, len;

	open_std(e, CF_RAW_INITIATES, 0, UIW_OPT_OFF, UIW_OPT_ON, 1024);
	assert_false(e->rp.crc);
	assert_true(e->rp.markers_tx);
	/* An FPDU that ends exactly on the next marker position. */
	pos = e->rp.tx_pos;
	for (len = 0; len < 1024; len++) {
		struct uiw_mpa_piece p[UIW_MPA_MAX_PIECES(2048)];

		if (uiw_mpa_layout(pos, (uint32_t)(18 + len), true, p,
				   UIW_MPA_MAX_PIECES(2048), &flen) &&
		    (pos + flen) % UIW_MPA_MARKER_INTERVAL == 0 &&
		    rp_fpdu_marker_off(pos, 18 + len, true, 0) < 0)
			break;
	}
	assert_true(len < 1024);
	ul = make_send(e, len, 0x70);
	n = rp_fpdu_build_len(&e->rp, fbuf, sizeof(fbuf), ubuf, ul,
			      (uint16_t)(ul + 8));
	e->rp.tx_pos += n;
	ul = make_send(e, 64, 0x80);
	n2 = rp_fpdu_build(&e->rp, fbuf + n, sizeof(fbuf) - n, ubuf, ul);
	e->rp.tx_pos -= n;
	assert_int_equal(fbuf[n + 2] | fbuf[n + 3], 0);  /* FPDUPTR 0 */
	CF_OK(rp_send_stream(&e->rp, fbuf, n + n2));
	cf_expect_status(e, CF_WR_RECV(1), UIW_WC_FATAL_ERR);
	recv_loose(e, 1);
	recv_loose(e, 2);
	CF_OK(cf_expect_term(e, &x));
}

/* A ULPDU shorter than the DDP header its control octet announces, with
 * a valid CRC (RFC 5041 §6.2.2: "DDP Header has one or more invalid
 * fields").  No RFC names a code for it; uiwarp reports the field that
 * cannot be valid: the STag of a tagged header (1/1/0), the QN of an
 * untagged one (1/2/1), copying what arrived (zeros after). */
static void short_hdr_case(struct cf_env *e, bool tagged)
{
	struct cf_term_expect x = { 0 };
	uint8_t h[UIW_DDP_MAX_HDR_LEN];
	size_t hl, cut;

	open_std(e, CF_RAW_INITIATES, UIW_MPA_F_C, UIW_OPT_DEFAULT,
		 UIW_OPT_DEFAULT, 0);
	if (tagged)
		hl = rp_hdr_tagged(h, UIW_OP_WRITE, true,
				   cf_stag(e, CF_WRITE),
				   cf_to(e, CF_WRITE, 0));
	else
		hl = rp_hdr_untagged(h, UIW_OP_SEND, true, 0, e->rp.msn[0],
				     0, 0);
	cut = tagged ? 6 : 10;
	CF_OK(rp_send_fpdu(&e->rp, h, cut));
	x.err = tagged ? UIW_E_DDP_T_INVALID_STAG : UIW_E_DDP_U_INVALID_QN;
	x.m = x.d = true;
	x.seg_len = (uint16_t)cut;
	x.ddp_hdr = h;
	x.ddp_hdr_len = hl;
	x.ddp_hdr_sent = cut;
	CF_OK(cf_expect_term(e, &x));
}

static void test_ulpdu_short_tagged(void **state)
{
	short_hdr_case(*state, true);
}

static void test_ulpdu_short_untagged(void **state)
{
	short_hdr_case(*state, false);
}

/* ---- The connection ends mid-FPDU (RFC 5044 §8 code 1) --------------- */

/* The raw peer sends part of a Send's FPDU and then its FIN: "TCP
 * connection closed, terminated, or lost ... FIN received" is MPA error
 * 1; the stream fails (RFC 5041 §6.2.2: fatal error, every outstanding
 * request completed in error), nothing is reported as received, and no
 * Terminate can follow a FIN that ended an FPDU (uiwarp sends none). */
static void test_fin_mid_fpdu(void **state)
{
	struct cf_env *e = *state;
	size_t ul, n;

	open_std(e, CF_RAW_INITIATES, UIW_MPA_F_C, UIW_OPT_DEFAULT,
		 UIW_OPT_DEFAULT, 0);
	ul = make_send(e, 100, 0x44);
	n = rp_fpdu_build(&e->rp, fbuf, sizeof(fbuf), ubuf, ul);
	CF_OK(rp_send_stream(&e->rp, fbuf, n / 2));
	CF_OK(rp_shutdown_wr(&e->rp));
	/* Which status each outstanding request gets is not the RFCs'
	 * to say: an error, never success. */
	cf_expect_status(e, CF_WR_RECV(1), CF_WC_ANY_ERROR);
	cf_expect_status(e, CF_WR_READ, CF_WC_ANY_ERROR);
	cf_expect_status(e, CF_WR_FENCED_SEND, CF_WC_ANY_ERROR);
	recv_loose(e, 1);
	CF_OK(cf_expect_closed_llp(e, UIW_E_MPA_CLOSED));
}

/* ---- Alignment (RFC 5044 Appendix A, §5.2, §6) ---------------------- */

/* "MPA receivers MUST NOT depend on FPDU Alignment on TCP segment
 * boundaries" and MUST delimit FPDUs by ULPDU_Length: an FPDU written one
 * octet per TCP segment, then three FPDUs (with markers) in a single
 * write, are all received. */
static void test_fpdu_unaligned(void **state)
{
	struct cf_env *e = *state;
	struct uiw_wc wc;
	size_t ul, n = 0, i, k;

	open_std(e, CF_RAW_INITIATES, UIW_MPA_F_C, UIW_OPT_DEFAULT,
		 UIW_OPT_ON, 1024);
	ul = make_send(e, 600, 0x01);
	n = rp_fpdu_build(&e->rp, fbuf, sizeof(fbuf), ubuf, ul);
	for (i = 0; i < n; i++)
		CF_OK(rp_send_stream(&e->rp, fbuf + i, 1));
	CF_OK(cf_wait_wc(e, e->rcq, CF_WR_RECV(1), UIW_WC_SUCCESS, &wc));
	assert_int_equal(wc.byte_len, 600);
	cf_mem_placed(e, e->r[CF_RECV].p + 1024, ubuf + 18, 600);
	/* Three FPDUs in one write: two Writes and a Send. */
	for (k = 0, n = 0; k < 3; k++) {
		size_t hl, len = 300 + 100 * k;

		if (k < 2) {
			hl = rp_hdr_tagged(ubuf, UIW_OP_WRITE, true,
					   cf_stag(e, CF_WRITE),
					   cf_to(e, CF_WRITE, 1000 * k));
			for (i = 0; i < len; i++)
				ubuf[hl + i] = (uint8_t)(k * 50 + i);
			cf_mem_placed(e, e->r[CF_WRITE].p + 1000 * k,
				      ubuf + hl, len);
			ul = hl + len;
		} else {
			ul = make_send(e, len, 0x33);
			cf_mem_placed(e, e->r[CF_RECV].p + 2048, ubuf + 18,
				      len);
		}
		i = rp_fpdu_build(&e->rp, fbuf + n, sizeof(fbuf) - n, ubuf,
				  ul);
		e->rp.tx_pos += i;
		n += i;
	}
	e->rp.tx_pos -= n;
	CF_OK(rp_send_stream(&e->rp, fbuf, n));
	CF_OK(cf_wait_wc(e, e->rcq, CF_WR_RECV(2), UIW_WC_SUCCESS, &wc));
	assert_int_equal(wc.byte_len, 500);
	CF_OK(cf_check_mem(e));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_crc_bad_responder, cf_state_new,
						cf_state_free),
		cmocka_unit_test_setup_teardown(test_crc_bad_initiator, cf_state_new,
						cf_state_free),
		cmocka_unit_test_setup_teardown(test_crc_bad_payload, cf_state_new,
						cf_state_free),
		cmocka_unit_test_setup_teardown(test_crc_wins_over_ddp, cf_state_new,
						cf_state_free),
		cmocka_unit_test_setup_teardown(test_crc_bad_read_request,
						cf_state_new, cf_state_free),
		cmocka_unit_test_setup_teardown(test_crc_first_fpdu_responder,
						cf_state_new, cf_state_free),
		cmocka_unit_test_setup_teardown(test_marker_bad_fpduptr, cf_state_new,
						cf_state_free),
		cmocka_unit_test_setup_teardown(test_marker_bad_leading, cf_state_new,
						cf_state_free),
		cmocka_unit_test_setup_teardown(test_marker_reserved_ignored,
						cf_state_new, cf_state_free),
		cmocka_unit_test_setup_teardown(test_len_overrun_crc, cf_state_new,
						cf_state_free),
		cmocka_unit_test_setup_teardown(test_len_short_crc, cf_state_new,
						cf_state_free),
		cmocka_unit_test_setup_teardown(test_len_overrun_markers, cf_state_new,
						cf_state_free),
		cmocka_unit_test_setup_teardown(test_ulpdu_short_tagged, cf_state_new,
						cf_state_free),
		cmocka_unit_test_setup_teardown(test_ulpdu_short_untagged,
						cf_state_new, cf_state_free),
		cmocka_unit_test_setup_teardown(test_fin_mid_fpdu, cf_state_new,
						cf_state_free),
		cmocka_unit_test_setup_teardown(test_fpdu_unaligned, cf_state_new,
						cf_state_free),
	};

	return cmocka_run_group_tests_name("conformance: MPA framing", tests,
					   NULL, NULL);
}
