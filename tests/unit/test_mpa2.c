/*
 * RFC 6581 negotiation (cm/mpa2.c): the initiator's field, the
 * responder's answer to every "siw as responder" row of SIW-FACTS.md, the
 * IRD/ORD rules of §9.1 (0x3FFF included), the RTR choice of §9.2, and
 * the Terminate an initiator sends when the negotiation fails.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include <uiwarp/cm.h>

#include "cm/mpa2.h"
#include "wire/ddp.h"
#include "wire/mpa.h"

#define MAX_IRD 128

static struct uiw_mpa_v2 field(const char *hex8)
{
	uint8_t b[4];
	struct uiw_mpa_v2 v;
	unsigned i, x;

	for (i = 0; i < 4; i++) {
		assert_int_equal(sscanf(hex8 + 2 * i, "%2x", &x), 1);
		b[i] = (uint8_t)x;
	}
	uiw_mpa_v2_decode(b, &v);
	return v;
}

static void expect_field(const struct uiw_mpa_v2 *v, const char *hex8)
{
	uint8_t b[4];
	char got[9];

	uiw_mpa_v2_encode(b, v);
	snprintf(got, sizeof(got), "%02x%02x%02x%02x", b[0], b[1], b[2], b[3]);
	if (strcmp(got, hex8))
		fail_msg("field %s, expected %s", got, hex8);
}

static struct uiw_mpa2_local local(uint32_t ird, uint32_t ord, uint8_t rtr)
{
	struct uiw_mpa2_local l = {
		.ird = ird, .ord = ord, .max_ird = MAX_IRD,
		.rtr = rtr ? rtr : UIW_RTR_ALL,
	};

	return l;
}

/* ---- The initiator's Request ---------------------------------------- */

static void test_request(void **state)
{
	struct uiw_mpa2_local l = local(1, 1, 0);
	struct uiw_mpa_v2 v;

	(void)state;
	uiw_mpa2_request(&l, &v);
	expect_field(&v, "00010001");           /* siw's default request */
	l.p2p = true;
	l.rtr = UIW_RTR_WRITE | UIW_RTR_READ;
	uiw_mpa2_request(&l, &v);
	expect_field(&v, "8001c001");           /* siw's p2p request */
	l.rtr = UIW_RTR_ALL;
	l.ird = 32;
	l.ord = 7;
	uiw_mpa2_request(&l, &v);
	expect_field(&v, "c020c007");
	l.rtr = UIW_RTR_SEND;
	uiw_mpa2_request(&l, &v);
	expect_field(&v, "c0200007");
	/* RFC 6581 §9.1: all ones asks for no automatic negotiation. */
	l.p2p = false;
	l.ird_manual = true;
	uiw_mpa2_request(&l, &v);
	expect_field(&v, "3fff0007");
	l.ord_manual = true;
	uiw_mpa2_request(&l, &v);
	expect_field(&v, "3fff3fff");
}

/* ---- The responder: the SIW-FACTS rows ------------------------------ */

struct row {
	const char *req;
	uint32_t ird, ord;      /* our accept's ird/ord (0: default 32) */
	uint8_t rtr;
	const char *rep;        /* our Reply's field */
	const char *siw;        /* siw's, where it differs */
};

/* What this responder answers to the rows of SIW-FACTS.md "siw as
 * responder" that carry the field.  With ird 1 / ord 128 (an IRD as low
 * as the initiator lets it be, an ORD as high as the initiator's IRD
 * lets it be) it gives siw's answer wherever the RFC and our choices
 * allow; with the defaults (32/32) it gives its own. */
static const struct row rows[] = {
	{ "80088008", 1, 128, UIW_RTR_WRITE, "80088008", NULL },
	{ "80088008", 0, 0, 0, "80208008", "80088008" },
	{ "00010001", 1, 128, 0, "00010001", NULL },
	{ "00010001", 0, 0, 0, "00200001", "00010001" },
	/* IRD/ORD "swapped to its view": the responder's ORD is the
	 * initiator's IRD, its IRD the initiator's ORD. */
	{ "80044002", 1, 128, 0, "80024004", NULL },
	{ "80044002", 0, 0, 0, "80204004", "80024004" },
	/* No RTR offered: RFC 6581 §9.2 "MUST set at least one RTR
	 * indication type option it supports"; siw sets C (Write) only,
	 * IRD 0; our IRD is never below 1, and we name every type we
	 * support unless told otherwise. */
	{ "80000000", 1, 128, UIW_RTR_WRITE, "80018000", "80008000" },
	{ "80000000", 0, 0, 0, "c020c000", "80008000" },
	/* Capped at 128; C and D offered: we accept both (§9.2 SHOULD),
	 * siw names only Write. */
	{ "80c8c0c8", 1, 128, UIW_RTR_WRITE, "80808080", NULL },
	{ "80c8c0c8", 1, 128, 0, "8080c080", "80808080" },
	{ "80c8c0c8", 0, 0, 0, "8080c020", "80808080" },
	/* siw's own peer-to-peer Request, and siw's default one. */
	{ "8001c001", 0, 0, 0, "8020c001", NULL },
	{ "00010001", 4, 8, 0, "00040001", NULL },
};

static void test_respond_siw_rows(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const struct row *r = &rows[i];
		struct uiw_mpa2_local l = local(r->ird ? r->ird : 32,
						r->ord ? r->ord : 32, r->rtr);
		struct uiw_mpa_v2 req = field(r->req);
		struct uiw_mpa2_out o;

		print_message("request %s ird %u ord %u rtr %x -> %s%s%s\n",
			      r->req, l.ird, l.ord, l.rtr, r->rep,
			      r->siw ? ", siw " : "", r->siw ? r->siw : "");
		uiw_mpa2_respond(&l, &req, &o);
		assert_int_equal(o.err, UIW_OK);
		expect_field(&o.field, r->rep);
		/* What the QP uses is what the Reply says. */
		assert_int_equal(o.ird, o.field.ird);
		assert_int_equal(o.ord, o.field.ord);
		assert_int_equal(o.p2p, req.p2p);
		assert_int_equal(o.rtr, uiw_mpa2_rtr_flags(&o.field));
		/* §9.1: "initiator ORD <= responder IRD", "responder ORD <=
		 * initiator IRD" once the initiator has adjusted. */
		assert_true(o.ord <= req.ird);
	}
}

/* ---- The responder: §9.1 rules -------------------------------------- */

static void test_respond_ird_ord(void **state)
{
	struct uiw_mpa2_local l = local(4, 16, 0);
	struct uiw_mpa_v2 req;
	struct uiw_mpa2_out o;

	(void)state;
	/* ORD lowered to the initiator's IRD; IRD raised to its ORD. */
	req = field("00080020");
	uiw_mpa2_respond(&l, &req, &o);
	assert_int_equal(o.err, UIW_OK);
	assert_int_equal(o.ord, 8);
	assert_int_equal(o.ird, 32);
	/* ... but not beyond this side's maximum. */
	req = field("00080fff");
	uiw_mpa2_respond(&l, &req, &o);
	assert_int_equal(o.ird, MAX_IRD);
	/* An initiator IRD of 0: no Reads from this side. */
	req = field("00000001");
	uiw_mpa2_respond(&l, &req, &o);
	assert_int_equal(o.ord, 0);
	assert_int_equal(o.ird, 4);
	expect_field(&o.field, "00040000");
	/* 0x3FFF: the ULP negotiates; the local value stays, the Reply
	 * carries 0x3FFF (initiator ORD -> responder IRD, initiator IRD ->
	 * responder ORD). */
	req = field("3fff0002");
	uiw_mpa2_respond(&l, &req, &o);
	assert_int_equal(o.ord, 16);
	assert_int_equal(o.ird, 4);
	expect_field(&o.field, "00043fff");
	req = field("00023fff");
	uiw_mpa2_respond(&l, &req, &o);
	assert_int_equal(o.ird, 4);
	assert_int_equal(o.ord, 2);
	expect_field(&o.field, "3fff0002");
	req = field("bfffffff");                /* with p2p and B, C, D */
	uiw_mpa2_respond(&l, &req, &o);
	assert_int_equal(o.ird, 4);
	assert_int_equal(o.ord, 16);
	expect_field(&o.field, "bfffffff");
	/* Strict: IRD not raised; an ORD above the initiator's IRD is a
	 * rejection naming the ORD needed (2/0/6). */
	l.strict = true;
	req = field("00100020");
	uiw_mpa2_respond(&l, &req, &o);
	assert_int_equal(o.err, UIW_OK);
	assert_int_equal(o.ird, 4);
	assert_int_equal(o.ord, 16);
	req = field("800f0020");
	uiw_mpa2_respond(&l, &req, &o);
	assert_int_equal(o.err, UIW_E_MPA_INSUFFICIENT_IRD);
	expect_field(&o.field, "c004c010");
	req = field("3fff0020");                /* 0x3FFF: no rejection */
	uiw_mpa2_respond(&l, &req, &o);
	assert_int_equal(o.err, UIW_OK);
}

/* ---- The responder: §9.2 --------------------------------------------- */

static void test_respond_rtr(void **state)
{
	static const struct {
		const char *req;
		uint8_t ours;
		uint8_t want;
	} v[] = {
		{ "c0010001", UIW_RTR_ALL, UIW_RTR_SEND },
		{ "80018001", UIW_RTR_ALL, UIW_RTR_WRITE },
		{ "80014001", UIW_RTR_ALL, UIW_RTR_READ },
		{ "c001c001", UIW_RTR_ALL, UIW_RTR_ALL },
		{ "c001c001", UIW_RTR_READ, UIW_RTR_READ },
		{ "c0018001", UIW_RTR_READ | UIW_RTR_WRITE, UIW_RTR_WRITE },
		/* None offered that we support: the ones we support. */
		{ "c0010001", UIW_RTR_WRITE | UIW_RTR_READ,
		  UIW_RTR_WRITE | UIW_RTR_READ },
		{ "80010001", UIW_RTR_SEND, UIW_RTR_SEND },
		/* Without A no RTR at all, whatever B, C, D say. */
		{ "4001c001", UIW_RTR_ALL, 0 },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		struct uiw_mpa2_local l = local(8, 8, v[i].ours);
		struct uiw_mpa_v2 req = field(v[i].req);
		struct uiw_mpa2_out o;

		uiw_mpa2_respond(&l, &req, &o);
		assert_int_equal(o.err, UIW_OK);
		assert_int_equal(o.rtr, v[i].want);
		assert_int_equal(uiw_mpa2_rtr_flags(&o.field), v[i].want);
		assert_int_equal(o.field.p2p, req.p2p);
	}
}

/* ---- The initiator's reading of the Reply ---------------------------- */

static void test_reply_ird_ord(void **state)
{
	struct uiw_mpa2_local l = local(4, 8, 0);
	struct uiw_mpa_v2 req, rep;
	struct uiw_mpa2_out o;

	(void)state;
	uiw_mpa2_request(&l, &req);
	/* ORD at most the responder's IRD; IRD at least its ORD. */
	rep = field("00020003");
	uiw_mpa2_reply(&l, &req, &rep, &o);
	assert_int_equal(o.err, UIW_OK);
	assert_int_equal(o.ord, 2);
	assert_int_equal(o.ird, 4);
	rep = field("00200010");
	uiw_mpa2_reply(&l, &req, &rep, &o);
	assert_int_equal(o.err, UIW_OK);
	assert_int_equal(o.ord, 8);
	assert_int_equal(o.ird, 16);
	/* 0x3FFF leaves the local values alone. */
	rep = field("3fff3fff");
	uiw_mpa2_reply(&l, &req, &rep, &o);
	assert_int_equal(o.err, UIW_OK);
	assert_int_equal(o.ord, 8);
	assert_int_equal(o.ird, 4);
	/* Beyond what this side can give: 2/0/6. */
	rep = field("00200081");
	uiw_mpa2_reply(&l, &req, &rep, &o);
	assert_int_equal(o.err, UIW_E_MPA_INSUFFICIENT_IRD);
	rep = field("00203ffe");
	uiw_mpa2_reply(&l, &req, &rep, &o);
	assert_int_equal(o.err, UIW_E_MPA_INSUFFICIENT_IRD);
	/* Strict: no raising at all. */
	l.strict = true;
	rep = field("00200005");
	uiw_mpa2_reply(&l, &req, &rep, &o);
	assert_int_equal(o.err, UIW_E_MPA_INSUFFICIENT_IRD);
	rep = field("00200004");
	uiw_mpa2_reply(&l, &req, &rep, &o);
	assert_int_equal(o.err, UIW_OK);
	assert_int_equal(o.ird, 4);
}

static void test_reply_rtr(void **state)
{
	static const struct {
		uint8_t offered;
		const char *rep;
		uint8_t want;
		uiw_err_t err;
	} v[] = {
		{ UIW_RTR_ALL, "c020c020", UIW_RTR_WRITE, UIW_OK },
		{ UIW_RTR_ALL, "c0204020", UIW_RTR_READ, UIW_OK },
		{ UIW_RTR_ALL, "c0200020", UIW_RTR_SEND, UIW_OK },
		{ UIW_RTR_ALL, "80208020", UIW_RTR_WRITE, UIW_OK },
		{ UIW_RTR_SEND | UIW_RTR_READ, "c020c020", UIW_RTR_READ,
		  UIW_OK },
		{ UIW_RTR_SEND, "c020c020", UIW_RTR_SEND, UIW_OK },
		/* The responder may name types we did not offer; we use
		 * only ours. */
		{ UIW_RTR_SEND, "80208020", 0, UIW_E_MPA_NO_MATCHING_RTR },
		{ UIW_RTR_ALL, "80200020", 0, UIW_E_MPA_NO_MATCHING_RTR },
		/* A Read RTR needs an IRD entry at the responder. */
		{ UIW_RTR_READ, "80004020", 0, UIW_E_MPA_NO_MATCHING_RTR },
		{ UIW_RTR_READ | UIW_RTR_SEND, "c0004020", UIW_RTR_SEND,
		  UIW_OK },
		{ UIW_RTR_READ, "bfff4020", UIW_RTR_READ, UIW_OK },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		struct uiw_mpa2_local l = local(32, 32, v[i].offered);
		struct uiw_mpa_v2 req, rep = field(v[i].rep);
		struct uiw_mpa2_out o;

		l.p2p = true;
		uiw_mpa2_request(&l, &req);
		uiw_mpa2_reply(&l, &req, &rep, &o);
		assert_int_equal(o.err, v[i].err);
		if (v[i].err == UIW_OK) {
			assert_true(o.p2p);
			assert_int_equal(o.rtr, v[i].want);
		}
	}
}

/* RFC 6581 §9.2: A must be echoed. */
static void test_reply_a_mismatch(void **state)
{
	struct uiw_mpa2_local l = local(32, 32, 0);
	struct uiw_mpa_v2 req, rep;
	struct uiw_mpa2_out o;

	(void)state;
	l.p2p = true;
	uiw_mpa2_request(&l, &req);
	rep = field("00200020");
	uiw_mpa2_reply(&l, &req, &rep, &o);
	assert_int_equal(o.err, UIW_E_MPA_INVALID_FRAME);
	l.p2p = false;
	uiw_mpa2_request(&l, &req);
	rep = field("80208020");
	uiw_mpa2_reply(&l, &req, &rep, &o);
	assert_int_equal(o.err, UIW_E_MPA_INVALID_FRAME);
	rep = field("00208020");                /* C without A: ignored */
	uiw_mpa2_reply(&l, &req, &rep, &o);
	assert_int_equal(o.err, UIW_OK);
	assert_false(o.p2p);
	assert_int_equal(o.rtr, 0);
}

/* ---- The Terminate of a failed negotiation ---------------------------- */

static void check_term(uiw_err_t err, bool markers, bool crc)
{
	/* The ULPDU: untagged, L, DV 1; RV 1, Terminate; queue 2, MSN 1,
	 * MO 0; the control field in the RFC layout, no copies. */
	uint8_t want[22] = {
		0x41, 0x47, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 0,
		(uint8_t)(UIW_ERR_LAYER(err) << 4 | UIW_ERR_ETYPE(err)),
		(uint8_t)UIW_ERR_ECODE(err), 0, 0,
	};
	uint8_t b[64], u[64];
	uint16_t ulen = 0;
	size_t n, used = 0;
	struct uiw_term t;

	n = uiw_mpa2_term_fpdu(b, sizeof(b), err, markers, crc);
	assert_int_equal(n, (markers ? 4 : 0) + 2 + 22 + 4);
	if (markers)
		assert_memory_equal(b, "\0\0\0\0", 4);
	if (!crc)
		assert_memory_equal(b + n - 4, "\0\0\0\0", 4);
	assert_int_equal(uiw_mpa_fpdu_decode(b, n, 0, markers, crc, u,
					     sizeof(u), &ulen, &used), UIW_OK);
	assert_int_equal(used, n);
	assert_int_equal(ulen, 22);
	assert_memory_equal(u, want, 22);
	assert_int_equal(uiw_term_decode(u + 18, 4, &t), UIW_OK);
	assert_int_equal(t.err, err);
	assert_false(t.m || t.d || t.r);
	/* Too small a buffer: nothing. */
	assert_int_equal(uiw_mpa2_term_fpdu(b, n - 1, err, markers, crc), 0);
}

static void test_term_fpdu(void **state)
{
	(void)state;
	check_term(UIW_E_MPA_NO_MATCHING_RTR, false, true);
	check_term(UIW_E_MPA_NO_MATCHING_RTR, true, false);
	check_term(UIW_E_MPA_INSUFFICIENT_IRD, false, false);
	check_term(UIW_E_MPA_INSUFFICIENT_IRD, true, true);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_request),
		cmocka_unit_test(test_respond_siw_rows),
		cmocka_unit_test(test_respond_ird_ord),
		cmocka_unit_test(test_respond_rtr),
		cmocka_unit_test(test_reply_ird_ord),
		cmocka_unit_test(test_reply_rtr),
		cmocka_unit_test(test_reply_a_mismatch),
		cmocka_unit_test(test_term_fpdu),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
