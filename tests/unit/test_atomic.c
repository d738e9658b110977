/* RFC 7306: masked FetchAdd and CmpSwap against transcriptions of the
 * §5.1.1 and §5.1.2 pseudocode, the Atomic Request/Response and
 * Immediate Data headers against vectors built by hand from Figures 4,
 * 6, 7 and Appendix A, truncation, and every error of §6.3 and §8 that
 * the codec judges. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "wire/atomic.h"

/* A heap copy of exactly len octets, so that ASan sees any over-read. */
static uint8_t *exact(const uint8_t *src, size_t len)
{
	uint8_t *p = malloc(len ? len : 1);

	assert_non_null(p);
	if (len)
		memcpy(p, src, len);
	return p;
}

/* ---- Reference models, written apart from src/wire/atomic.c --------- */

/* RFC 7306 §5.1.1, the pseudocode line by line. */
static uint64_t ref_fetchadd(uint64_t orig, uint64_t add_data,
			     uint64_t add_mask)
{
	uint64_t bit_location = 1, carry = 0, remote = 0;
	uint64_t val1, val2, sum;
	unsigned bit;

	for (bit = 0; bit <= 63; bit++) {
		if (bit != 0)
			bit_location = bit_location << 1;
		val1 = (orig & bit_location) >> bit;
		val2 = (add_data & bit_location) >> bit;
		sum = carry + val1 + val2;
		carry = (sum & 2) >> 1;
		sum = sum & 1;
		if (sum)
			remote |= bit_location;
		carry = ((carry) && (!(add_mask & bit_location)));
	}
	return remote;
}

/* RFC 7306 §5.1.2, the pseudocode. */
static uint64_t ref_cmpswap(uint64_t orig, uint64_t compare_data,
			    uint64_t compare_mask, uint64_t swap_data,
			    uint64_t swap_mask)
{
	if (!((compare_data ^ orig) & compare_mask))
		return (orig & ~(swap_mask)) | (swap_data & swap_mask);
	return orig;
}

/* The prose of §5.1.1 as a third model: every set mask bit ends a
 * field (and bit 63 ends the last one); each field is added modulo 2^w
 * on its own. */
static uint64_t fields_fetchadd(uint64_t orig, uint64_t add, uint64_t mask)
{
	uint64_t out = 0, fmask, a, b;
	unsigned lo = 0, hi, w;

	while (lo < 64) {
		hi = lo;
		while (hi < 63 && !(mask >> hi & 1))
			hi++;
		w = hi - lo + 1;
		fmask = w == 64 ? UINT64_MAX : ((1ull << w) - 1);
		a = orig >> lo & fmask;
		b = add >> lo & fmask;
		out |= ((a + b) & fmask) << lo;
		lo = hi + 1;
	}
	return out;
}

/* xorshift64*: a fixed sequence, so a failure can be replayed. */
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dull;
}

/* Values and masks of several shapes: long runs of ones make long
 * carry chains, sparse and regular masks make many or few fields. */
static uint64_t rnd_value(void)
{
	switch (rnd() % 6) {
	case 0:
		return rnd() | rnd() | rnd();       /* mostly ones */
	case 1:
		return rnd() & rnd() & rnd();       /* mostly zeros */
	case 2:
		return UINT64_MAX;
	case 3:
		return rnd() % 4;
	default:
		return rnd();
	}
}

static uint64_t rnd_mask(void)
{
	static const uint64_t regular[] = {
		0x8080808080808080ull, 0x8000800080008000ull,
		0x8000000080000000ull, 0xaaaaaaaaaaaaaaaaull,
		0x8888888888888888ull, 0x8000000000000000ull,
		0x0000000000008000ull, 0x8000000000000101ull,
	};

	switch (rnd() % 8) {
	case 0:
		return 0;
	case 1:
		return UINT64_MAX;
	case 2:
		return regular[rnd() % 8];
	case 3:
		return rnd() & rnd() & rnd();
	case 4:
		return rnd() | rnd();
	case 5:
		return 1ull << (rnd() % 64);
	default:
		return rnd();
	}
}

/* ---- FetchAdd -------------------------------------------------------- */

static const struct {
	uint64_t orig, add, mask, want;
	const char *what;
} fa_rows[] = {
	/* the plain form: Add Mask zero is one 64-bit addition (§5.1.1) */
	{ 1, 1, 0, 2, "plain add" },
	{ 0x00000000ffffffffull, 1, 0, 0x0000000100000000ull,
	  "plain add carries across 32 bits" },
	{ UINT64_MAX, 1, 0, 0, "plain add wraps, carry out of 63 lost" },
	{ 0x123456789abcdef0ull, 0, 0, 0x123456789abcdef0ull,
	  "adding 0 changes nothing" },
	{ 0x8000000000000000ull, 0x8000000000000000ull, 0, 0,
	  "bit 63 carries out" },
	/* bit 63 alone ends the only field: the same as the plain add */
	{ 0x00000000ffffffffull, 1, 0x8000000000000000ull,
	  0x0000000100000000ull, "mask bit 63 only" },
	/* two 32-bit fields: no carry from the low word to the high one */
	{ 0x00000000ffffffffull, 1, 0x8000000080000000ull, 0,
	  "two 32-bit fields, low field wraps" },
	{ 0x00000001ffffffffull, 0x0000000100000001ull,
	  0x8000000080000000ull, 0x0000000200000000ull,
	  "two 32-bit fields added apart" },
	/* eight 8-bit fields */
	{ 0x01ff7f80fe000102ull, 0x0101010101010101ull,
	  0x8080808080808080ull, 0x02008081ff010203ull,
	  "eight byte fields, two wrap" },
	{ 0xffffffffffffffffull, 0x0101010101010101ull,
	  0x8080808080808080ull, 0, "eight byte fields, all wrap" },
	/* four 16-bit fields with negative addends (two's complement) */
	{ 0x0005000a00000001ull, 0xffffffff0001ffffull,
	  0x8000800080008000ull, 0x0004000900010000ull,
	  "16-bit fields, -1 -1 +1 -1" },
	/* a boundary in the middle: fields [0..15] and [16..63] */
	{ 0x000000000000ffffull, 1, 0x0000000000008000ull, 0,
	  "16-bit low field wraps, high field untouched" },
	{ 0x0000000000007fffull, 1, 0x0000000000008000ull,
	  0x0000000000008000ull, "carry inside the field reaches its top" },
	{ 0x00000000ffff8000ull, 0x0000000000018000ull,
	  0x0000000000008000ull, 0x0000000100000000ull,
	  "high field carries on past bit 31" },
	/* irregular fields [0], [1..8], [9..63] */
	{ 0x00000000000001ffull, 3, 0x8000000000000101ull, 0,
	  "1-bit and 8-bit fields both wrap" },
	{ 0x00000000000001feull, 3, 0x8000000000000101ull, 1,
	  "1-bit field sets, 8-bit field wraps" },
	{ 0x8000000000000200ull, 0x8000000000000200ull,
	  0x8000000000000101ull, 0x0000000000000400ull,
	  "55-bit field: bit 63 carry lost, bit 9 carries to 10" },
	/* every bit its own field: addition without carries is XOR */
	{ 0xff00ff00ff00ff00ull, 0x0ff00ff00ff00ff0ull, UINT64_MAX,
	  0xf0f0f0f0f0f0f0f0ull, "1-bit fields: XOR" },
	{ UINT64_MAX, UINT64_MAX, UINT64_MAX, 0, "1-bit fields, all wrap" },
	/* 2-bit fields */
	{ 0x5555555555555555ull, 0x5555555555555555ull,
	  0xaaaaaaaaaaaaaaaaull, 0xaaaaaaaaaaaaaaaaull,
	  "2-bit fields 1+1=2" },
	{ 0xffffffffffffffffull, 0x5555555555555555ull,
	  0xaaaaaaaaaaaaaaaaull, 0, "2-bit fields 3+1 wrap" },
};

static void test_fetchadd_table(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(fa_rows) / sizeof(fa_rows[0]); i++) {
		uint64_t o = fa_rows[i].orig, a = fa_rows[i].add;
		uint64_t m = fa_rows[i].mask, w = fa_rows[i].want;

		if (ref_fetchadd(o, a, m) != w ||
		    fields_fetchadd(o, a, m) != w ||
		    uiw_atomic_fetchadd(o, a, m) != w)
			fail_msg("row %zu (%s): ref %016llx fields %016llx "
				 "impl %016llx want %016llx", i,
				 fa_rows[i].what,
				 (unsigned long long)ref_fetchadd(o, a, m),
				 (unsigned long long)fields_fetchadd(o, a, m),
				 (unsigned long long)uiw_atomic_fetchadd(o, a,
									 m),
				 (unsigned long long)w);
	}
}

/* Carries that would cross a boundary never do: for every single-bit
 * boundary b, adding 1 to a field of all ones at [0..b] leaves every bit
 * above b as it was. */
static void test_fetchadd_boundaries(void **state)
{
	unsigned b;

	(void)state;
	for (b = 0; b < 64; b++) {
		uint64_t low = b == 63 ? UINT64_MAX : ((1ull << (b + 1)) - 1);
		uint64_t high = 0xa5a5a5a5a5a5a5a5ull & ~low;
		uint64_t mask = 1ull << b;
		uint64_t got = uiw_atomic_fetchadd(high | low, 1, mask);

		assert_int_equal(got, high);
		assert_int_equal(ref_fetchadd(high | low, 1, mask), high);
		/* without the boundary the carry does go up */
		if (b < 63)
			assert_int_equal(uiw_atomic_fetchadd(high | low, 1, 0),
					 (high | low) + 1);
	}
}

/* Exhaustive over 5-bit windows of value, addend and mask at the bottom,
 * the middle and the top of the word, with fixed noise outside the
 * window for the value's, the addend's and the mask's other bits. */
static void check_window(unsigned shift, unsigned a, unsigned b, unsigned m)
{
	uint64_t win = 0x1full << shift;
	uint64_t o = (0x0123456789abcdefull & ~win) | (uint64_t)a << shift;
	uint64_t d = (0xfedcba9876543210ull & ~win) | (uint64_t)b << shift;
	uint64_t k = (0x8000100001000010ull & ~win) | (uint64_t)m << shift;
	uint64_t want = ref_fetchadd(o, d, k);

	if (uiw_atomic_fetchadd(o, d, k) != want ||
	    fields_fetchadd(o, d, k) != want)
		fail_msg("shift %u a %u b %u m %u", shift, a, b, m);
}

static void test_fetchadd_exhaustive_window(void **state)
{
	static const unsigned shifts[] = { 0, 30, 59 };
	unsigned s, a, b, m;

	(void)state;
	for (s = 0; s < 3; s++)
		for (a = 0; a < 32; a++)
			for (b = 0; b < 32; b++)
				for (m = 0; m < 32; m++)
					check_window(shifts[s], a, b, m);
}

#define N_RANDOM 100000

static void test_fetchadd_random(void **state)
{
	unsigned i;

	(void)state;
	rng_state = 0x9e3779b97f4a7c15ull;
	for (i = 0; i < N_RANDOM; i++) {
		uint64_t o = rnd_value(), a = rnd_value(), m = rnd_mask();
		uint64_t want = ref_fetchadd(o, a, m);

		if (uiw_atomic_fetchadd(o, a, m) != want ||
		    fields_fetchadd(o, a, m) != want)
			fail_msg("iteration %u: %016llx + %016llx mask %016llx",
				 i, (unsigned long long)o,
				 (unsigned long long)a, (unsigned long long)m);
		/* §5.1.1: the zero mask is the plain 64-bit add */
		assert_int_equal(uiw_atomic_fetchadd(o, a,
						     UIW_ATOMIC_ADD_MASK_PLAIN),
				 o + a);
		/* §1.1: FetchAdd of 0 leaves the memory as it was */
		assert_int_equal(uiw_atomic_fetchadd(o, 0, m), o);
	}
}

/* ---- CmpSwap --------------------------------------------------------- */

static const struct {
	uint64_t orig, cmp, cmask, swap, smask, want;
	const char *what;
} cs_rows[] = {
	/* plain forms: all-ones masks */
	{ 5, 5, UINT64_MAX, 7, UINT64_MAX, 7, "plain, equal: swapped" },
	{ 5, 6, UINT64_MAX, 7, UINT64_MAX, 5, "plain, different: kept" },
	{ 0, 0, UINT64_MAX, UINT64_MAX, UINT64_MAX, UINT64_MAX,
	  "plain, 0 to all ones" },
	{ 0x8000000000000000ull, 0, UINT64_MAX, 1, UINT64_MAX,
	  0x8000000000000000ull, "plain, differs in bit 63 only" },
	/* the compare mask selects the bits compared */
	{ 0x1234, 0xff34, 0xff, 0x9999, UINT64_MAX, 0x9999,
	  "low byte compared: equal" },
	{ 0x1234, 0x1235, 0xff, 0x9999, UINT64_MAX, 0x1234,
	  "low byte compared: different" },
	{ 0xdeadbeef, 0x12345678, 0, 42, UINT64_MAX, 42,
	  "compare mask zero: always equal" },
	/* the swap mask selects the bits written */
	{ 0x1111111111111111ull, 0x1111111111111111ull, UINT64_MAX,
	  0x2222222222222222ull, 0x00000000ffffffffull,
	  0x1111111122222222ull, "low word swapped" },
	{ 0x1111111111111111ull, 0x1111111111111111ull, UINT64_MAX,
	  0x2222222222222222ull, 0, 0x1111111111111111ull,
	  "swap mask zero: nothing written" },
	{ 0xf0f0f0f0f0f0f0f0ull, 0x00000000000000f0ull, 0xffull,
	  0x0f0f0f0f0f0f0f0full, 0xff00ff00ff00ff00ull,
	  0x0ff00ff00ff00ff0ull, "masked compare, interleaved swap" },
	{ 0xf0f0f0f0f0f0f0f0ull, 0x00000000000000f1ull, 0xffull,
	  0x0f0f0f0f0f0f0f0full, 0xff00ff00ff00ff00ull,
	  0xf0f0f0f0f0f0f0f0ull, "masked compare fails: unchanged" },
	/* a lock word: take bit 0 if it is clear, other bits untouched */
	{ 0xabcd0000ull, 0, 1, 1, 1, 0xabcd0001ull, "lock taken" },
	{ 0xabcd0001ull, 0, 1, 1, 1, 0xabcd0001ull, "lock busy" },
};

static void test_cmpswap_table(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cs_rows) / sizeof(cs_rows[0]); i++) {
		uint64_t ref = ref_cmpswap(cs_rows[i].orig, cs_rows[i].cmp,
					   cs_rows[i].cmask, cs_rows[i].swap,
					   cs_rows[i].smask);
		uint64_t got = uiw_atomic_cmpswap(cs_rows[i].orig,
						  cs_rows[i].cmp,
						  cs_rows[i].cmask,
						  cs_rows[i].swap,
						  cs_rows[i].smask);

		if (ref != cs_rows[i].want || got != cs_rows[i].want)
			fail_msg("row %zu (%s): ref %016llx impl %016llx "
				 "want %016llx", i, cs_rows[i].what,
				 (unsigned long long)ref,
				 (unsigned long long)got,
				 (unsigned long long)cs_rows[i].want);
	}
}

static void test_cmpswap_random(void **state)
{
	unsigned i, matched = 0;

	(void)state;
	rng_state = 0x0123456789abcdefull;
	for (i = 0; i < N_RANDOM; i++) {
		uint64_t o = rnd_value(), cm = rnd_mask(), s = rnd_value();
		uint64_t sm = rnd_mask(), c, want;

		/* half of the compares agree on the compared bits */
		c = (rnd() & 1) ? o ^ (rnd() & ~cm) : rnd_value();
		want = ref_cmpswap(o, c, cm, s, sm);
		if (!((c ^ o) & cm))
			matched++;
		if (uiw_atomic_cmpswap(o, c, cm, s, sm) != want)
			fail_msg("iteration %u: orig %016llx "
				 "cmp %016llx/%016llx swap %016llx/%016llx", i,
				 (unsigned long long)o, (unsigned long long)c,
				 (unsigned long long)cm, (unsigned long long)s,
				 (unsigned long long)sm);
		/* the plain form */
		assert_int_equal(uiw_atomic_cmpswap(o, c, UIW_ATOMIC_MASK_ALL,
						    s, UIW_ATOMIC_MASK_ALL),
				 o == c ? s : o);
		/* bits outside the swap mask never change */
		assert_int_equal(uiw_atomic_cmpswap(o, c, cm, s, sm) & ~sm,
				 o & ~sm);
	}
	/* both branches were exercised many times */
	assert_true(matched > N_RANDOM / 3);
	assert_true(matched < N_RANDOM - N_RANDOM / 10);
}

/* uiw_atomic_apply picks the operation by AOpCode, and a request that is
 * not performed leaves the value alone. */
static void test_apply(void **state)
{
	struct uiw_atomic_req r;
	unsigned op;

	(void)state;
	uiw_atomic_req_fetchadd(&r, 1, 2, 8, 0x0101, 0x8080);
	assert_int_equal(uiw_atomic_apply(&r, 0x00ff), 0x0100);
	assert_int_equal(uiw_atomic_apply(&r, 0x7f7f), 0x8080);
	uiw_atomic_req_fetchadd(&r, 1, 2, 8, 1, UIW_ATOMIC_ADD_MASK_PLAIN);
	assert_int_equal(uiw_atomic_apply(&r, 41), 42);
	uiw_atomic_req_cmpswap(&r, 1, 2, 8, 10, UIW_ATOMIC_MASK_ALL, 20,
			       UIW_ATOMIC_MASK_ALL);
	assert_int_equal(uiw_atomic_apply(&r, 10), 20);
	assert_int_equal(uiw_atomic_apply(&r, 11), 11);
	for (op = 0; op < 16; op++) {
		if (op == UIW_AOP_FETCH_ADD || op == UIW_AOP_CMP_SWAP)
			continue;
		r.aopcode = (uint8_t)op;
		assert_int_equal(uiw_atomic_apply(&r, 10), 10);
	}
}

/* ---- Headers: vectors built by hand from the RFC figures ------------ */

/* Appendix A.1: an Atomic Operation Request DDP segment, CmpSwap, MSN 5,
 * then Figure 4's header. */
static const uint8_t cs_seg[18 + 52] = {
	0x41, 0x4a,                     /* T=0 L=1 DV=1, RV=1 opcode 1010b */
	0x00, 0x00, 0x00, 0x00,         /* Reserved (Invalidate STag) */
	0x00, 0x00, 0x00, 0x01,         /* QN 1 */
	0x00, 0x00, 0x00, 0x05,         /* MSN */
	0x00, 0x00, 0x00, 0x00,         /* MO */
	0x00, 0x00, 0x00, 0x02,         /* Reserved, AOpCode 0010b */
	0x89, 0xab, 0xcd, 0xef,         /* Request Identifier */
	0x00, 0xc0, 0xff, 0xee,         /* Remote STag */
	0x00, 0x00, 0x7f, 0x00, 0x12, 0x34, 0x56, 0x78, /* Remote TO */
	0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, /* Swap Data */
	0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x00, /* Swap Mask */
	0xfe, 0xdc, 0xba, 0x98, 0x76, 0x54, 0x32, 0x10, /* Compare Data */
	0x00, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff, /* Compare Mask */
};

/* The same for a plain FetchAdd of 1, MSN 6: Compare Data zero and
 * Compare Mask all ones as §5.2.1 says a FetchAdd sends them. */
static const uint8_t fa_seg[18 + 52] = {
	0x41, 0x4a,
	0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x01,
	0x00, 0x00, 0x00, 0x06,
	0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00,         /* AOpCode 0000b FetchAdd */
	0x00, 0x00, 0x00, 0x2a,         /* Request Identifier 42 */
	0x00, 0x00, 0x01, 0x07,         /* Remote STag */
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x10, 0x08, /* Remote TO */
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, /* Add Data */
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* Add Mask */
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* Compare Data */
	0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, /* Compare Mask */
};

/* Appendix A.2 with Figure 6: the response to cs_seg, QN 3, MSN 5. */
static const uint8_t resp_seg[18 + 12] = {
	0x41, 0x4b,                     /* opcode 1011b */
	0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x03,         /* QN 3 */
	0x00, 0x00, 0x00, 0x05,         /* MSN */
	0x00, 0x00, 0x00, 0x00,
	0x89, 0xab, 0xcd, 0xef,         /* Original Request Identifier */
	0xfe, 0xdc, 0xba, 0x98, 0x76, 0x54, 0x32, 0x10, /* Original Value */
};

/* Appendix A.3 with Figure 7: Immediate Data with SE, QN 0, MSN 9. */
static const uint8_t imm_seg[18 + 8] = {
	0x41, 0x49,                     /* opcode 1001b */
	0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00,         /* QN 0 */
	0x00, 0x00, 0x00, 0x09,
	0x00, 0x00, 0x00, 0x00,
	0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,
};

static struct uiw_ddp_hdr untagged(uint8_t opcode, uint32_t qn,
				   uint32_t msn)
{
	struct uiw_ddp_hdr h;

	memset(&h, 0, sizeof(h));
	h.last = true;
	h.ddp_ver = UIW_DDP_VERSION;
	h.rdmap_ver = UIW_RDMAP_VERSION;
	h.opcode = opcode;
	h.qn = qn;
	h.msn = msn;
	return h;
}

static void assert_req_equal(const struct uiw_atomic_req *a,
			     const struct uiw_atomic_req *b)
{
	assert_int_equal(a->aopcode, b->aopcode);
	assert_int_equal(a->req_id, b->req_id);
	assert_int_equal(a->stag, b->stag);
	assert_int_equal(a->to, b->to);
	assert_int_equal(a->add_swap, b->add_swap);
	assert_int_equal(a->add_swap_mask, b->add_swap_mask);
	assert_int_equal(a->compare, b->compare);
	assert_int_equal(a->compare_mask, b->compare_mask);
}

static void test_req_vectors(void **state)
{
	struct uiw_ddp_hdr h, g;
	struct uiw_atomic_req r, d;
	uint8_t out[18 + 52];
	size_t n;

	(void)state;
	/* CmpSwap: encode gives the vector */
	h = untagged(UIW_OP_ATOMIC_REQ, UIW_QN_READ_REQ, 5);
	uiw_atomic_req_cmpswap(&r, 0x89abcdefu, 0x00c0ffeeu,
			       0x00007f0012345678ull, 0xfedcba9876543210ull,
			       0x00000000ffffffffull, 0x0123456789abcdefull,
			       0xffffffff00000000ull);
	assert_int_equal(uiw_ddp_hdr_encode(out, &h), 18);
	assert_int_equal(uiw_atomic_req_encode(out + 18, 52, &r), 52);
	assert_memory_equal(out, cs_seg, sizeof(cs_seg));
	/* and decoding the vector gives the request back */
	assert_int_equal(uiw_ddp_hdr_decode(cs_seg, sizeof(cs_seg), &g, &n),
			 UIW_OK);
	assert_int_equal(n, 18);
	assert_int_equal(g.opcode, UIW_OP_ATOMIC_REQ);
	assert_int_equal(g.qn, UIW_QN_READ_REQ);
	assert_int_equal(uiw_rdmap_ext_hdr_check(&g), UIW_OK);
	assert_int_equal(uiw_atomic_req_decode(cs_seg + 18, 52, &d), UIW_OK);
	assert_req_equal(&d, &r);
	assert_int_equal(d.aopcode, UIW_AOP_CMP_SWAP);

	/* FetchAdd */
	h = untagged(UIW_OP_ATOMIC_REQ, UIW_QN_READ_REQ, 6);
	uiw_atomic_req_fetchadd(&r, 42, 0x107, 0x1008, 1,
				UIW_ATOMIC_ADD_MASK_PLAIN);
	assert_int_equal(r.compare, 0);
	assert_int_equal(r.compare_mask, UINT64_MAX);
	assert_int_equal(uiw_ddp_hdr_encode(out, &h), 18);
	assert_int_equal(uiw_atomic_req_encode(out + 18, 52, &r), 52);
	assert_memory_equal(out, fa_seg, sizeof(fa_seg));
	assert_int_equal(uiw_atomic_req_decode(fa_seg + 18, 52, &d), UIW_OK);
	assert_req_equal(&d, &r);
	assert_int_equal(d.aopcode, UIW_AOP_FETCH_ADD);
}

static void test_resp_vector(void **state)
{
	struct uiw_ddp_hdr h, g;
	struct uiw_atomic_resp r = { .req_id = 0x89abcdefu,
				     .orig_value = 0xfedcba9876543210ull };
	struct uiw_atomic_resp d;
	uint8_t out[18 + 12];
	size_t n;

	(void)state;
	h = untagged(UIW_OP_ATOMIC_RESP, UIW_QN_ATOMIC_RESP, 5);
	assert_int_equal(uiw_ddp_hdr_encode(out, &h), 18);
	assert_int_equal(uiw_atomic_resp_encode(out + 18, 12, &r), 12);
	assert_memory_equal(out, resp_seg, sizeof(resp_seg));
	assert_int_equal(uiw_ddp_hdr_decode(resp_seg, sizeof(resp_seg), &g,
					    &n), UIW_OK);
	assert_int_equal(uiw_rdmap_ext_hdr_check(&g), UIW_OK);
	assert_int_equal(g.qn, 3);
	assert_int_equal(uiw_atomic_resp_decode(resp_seg + 18, 12, &d),
			 UIW_OK);
	assert_int_equal(d.req_id, r.req_id);
	assert_int_equal(d.orig_value, r.orig_value);
}

static void test_imm_vector(void **state)
{
	struct uiw_ddp_hdr h, g;
	uint8_t out[18 + 8];
	uint64_t imm;
	size_t n;

	(void)state;
	h = untagged(UIW_OP_IMM_SE, UIW_QN_SEND, 9);
	assert_int_equal(uiw_ddp_hdr_encode(out, &h), 18);
	assert_int_equal(uiw_imm_encode(out + 18, 8, 0x0102030405060708ull),
			 8);
	assert_memory_equal(out, imm_seg, sizeof(imm_seg));
	assert_int_equal(uiw_ddp_hdr_decode(imm_seg, sizeof(imm_seg), &g, &n),
			 UIW_OK);
	assert_int_equal(g.opcode, UIW_OP_IMM_SE);
	assert_int_equal(uiw_rdmap_ext_hdr_check(&g), UIW_OK);
	assert_int_equal(uiw_imm_decode(imm_seg + 18, 8, &imm), UIW_OK);
	assert_int_equal(imm, 0x0102030405060708ull);
	/* without SE: only the opcode differs */
	h = untagged(UIW_OP_IMM, UIW_QN_SEND, 9);
	uiw_ddp_hdr_encode(out, &h);
	assert_int_equal(out[1], 0x48);
	assert_memory_equal(out + 2, imm_seg + 2, 16);
}

/* Random field values survive encode and decode. */
static void test_roundtrip_random(void **state)
{
	struct uiw_atomic_req r, d;
	struct uiw_atomic_resp p, q;
	uint8_t buf[UIW_ATOMIC_REQ_LEN];
	uint64_t imm;
	unsigned i;

	(void)state;
	rng_state = 0x5bd1e9955bd1e995ull;
	for (i = 0; i < 2000; i++) {
		r.aopcode = (rnd() & 1) ? UIW_AOP_CMP_SWAP : UIW_AOP_FETCH_ADD;
		r.req_id = (uint32_t)rnd();
		r.stag = (uint32_t)rnd();
		r.to = rnd() & ~7ull;
		r.add_swap = rnd();
		r.add_swap_mask = rnd();
		r.compare = rnd();
		r.compare_mask = rnd();
		assert_int_equal(uiw_atomic_req_encode(buf, sizeof(buf), &r),
				 52);
		assert_int_equal(uiw_atomic_req_decode(buf, 52, &d), UIW_OK);
		assert_req_equal(&d, &r);

		p.req_id = (uint32_t)rnd();
		p.orig_value = rnd();
		assert_int_equal(uiw_atomic_resp_encode(buf, 12, &p), 12);
		assert_int_equal(uiw_atomic_resp_decode(buf, 12, &q), UIW_OK);
		assert_int_equal(q.req_id, p.req_id);
		assert_int_equal(q.orig_value, p.orig_value);

		p.orig_value = rnd();
		assert_int_equal(uiw_imm_encode(buf, 8, p.orig_value), 8);
		assert_int_equal(uiw_imm_decode(buf, 8, &imm), UIW_OK);
		assert_int_equal(imm, p.orig_value);
	}
}

/* ---- Truncation and overlong messages (§6.3, §5.2.2 rule 7) --------- */

static void test_truncated(void **state)
{
	struct uiw_atomic_req r, zero_r;
	struct uiw_atomic_resp p;
	uint8_t longer[64], *b;
	uint64_t imm;
	size_t k;

	(void)state;
	memset(&zero_r, 0, sizeof(zero_r));
	for (k = 0; k < 52; k++) {
		b = exact(cs_seg + 18, k);
		assert_int_equal(uiw_atomic_req_decode(b, k, &r),
				 UIW_E_RDMAP_OP_UNSPEC);
		assert_memory_equal(&r, &zero_r, sizeof(r));
		free(b);
	}
	for (k = 0; k < 12; k++) {
		b = exact(resp_seg + 18, k);
		assert_int_equal(uiw_atomic_resp_decode(b, k, &p),
				 UIW_E_RDMAP_OP_UNSPEC);
		assert_int_equal(p.req_id, 0);
		assert_int_equal(p.orig_value, 0);
		free(b);
	}
	for (k = 0; k < 8; k++) {
		b = exact(imm_seg + 18, k);
		assert_int_equal(uiw_imm_decode(b, k, &imm),
				 UIW_E_RDMAP_OP_UNSPEC);
		assert_int_equal(imm, 0);
		free(b);
	}
	/* longer than the header: too long for the buffer, fields kept */
	memset(longer, 0xee, sizeof(longer));
	memcpy(longer, cs_seg + 18, 52);
	for (k = 53; k <= sizeof(longer); k++) {
		b = exact(longer, k);
		assert_int_equal(uiw_atomic_req_decode(b, k, &r),
				 UIW_E_DDP_U_TOO_LONG);
		assert_int_equal(r.req_id, 0x89abcdefu);
		assert_int_equal(r.compare_mask, 0x00000000ffffffffull);
		free(b);
	}
	memcpy(longer, resp_seg + 18, 12);
	for (k = 13; k < 20; k++) {
		b = exact(longer, k);
		assert_int_equal(uiw_atomic_resp_decode(b, k, &p),
				 UIW_E_DDP_U_TOO_LONG);
		assert_int_equal(p.orig_value, 0xfedcba9876543210ull);
		free(b);
	}
	memcpy(longer, imm_seg + 18, 8);
	for (k = 9; k < 20; k++) {
		b = exact(longer, k);
		assert_int_equal(uiw_imm_decode(b, k, &imm),
				 UIW_E_DDP_U_TOO_LONG);
		assert_int_equal(imm, 0x0102030405060708ull);
		free(b);
	}
}

/* Encoders write nothing when the buffer is too small. */
static void test_encode_cap(void **state)
{
	struct uiw_atomic_req r;
	struct uiw_atomic_resp p = { 1, 2 };
	uint8_t *b;
	size_t k;

	(void)state;
	uiw_atomic_req_fetchadd(&r, 1, 2, 8, 1, 0);
	for (k = 0; k < 52; k++) {
		b = calloc(1, k ? k : 1);
		assert_non_null(b);
		assert_int_equal(uiw_atomic_req_encode(b, k, &r), 0);
		if (k)
			assert_int_equal(b[0], 0);
		free(b);
	}
	for (k = 0; k < 12; k++) {
		b = calloc(1, k ? k : 1);
		assert_non_null(b);
		assert_int_equal(uiw_atomic_resp_encode(b, k, &p), 0);
		free(b);
	}
	for (k = 0; k < 8; k++) {
		b = calloc(1, k ? k : 1);
		assert_non_null(b);
		assert_int_equal(uiw_imm_encode(b, k, 7), 0);
		free(b);
	}
	assert_int_equal(uiw_atomic_req_encode(NULL, 52, &r), 0);
	assert_int_equal(uiw_atomic_resp_encode(NULL, 12, &p), 0);
	assert_int_equal(uiw_imm_encode(NULL, 8, 7), 0);
}

/* ---- Errors (§5.2.1 rule 4, §6.3, §8.2) ----------------------------- */

static void test_aopcode(void **state)
{
	struct uiw_atomic_req r, d;
	uint8_t buf[52];
	unsigned op;

	(void)state;
	uiw_atomic_req_fetchadd(&r, 7, 0x100, 0x2000, 1, 0);
	for (op = 0; op < 16; op++) {
		uiw_err_t want = (op == 0 || op == 2) ?
				 UIW_OK : UIW_E_RDMAP_UNEXPECTED_OPCODE;

		r.aopcode = (uint8_t)op;
		assert_int_equal(uiw_atomic_req_check(&r), want);
		/* encoded as given, so a bad one reaches the decoder */
		uiw_atomic_req_encode(buf, sizeof(buf), &r);
		assert_int_equal(buf[3], op);
		assert_int_equal(uiw_atomic_req_decode(buf, 52, &d), want);
		assert_int_equal(d.aopcode, op);
		assert_int_equal(d.req_id, 7);      /* fields kept */
	}
	/* 0x1 is Reserved in the §10.1 registry: not CmpSwap */
	r.aopcode = 1;
	assert_int_equal(uiw_atomic_req_check(&r),
			 UIW_E_RDMAP_UNEXPECTED_OPCODE);
	/* only 4 bits go on the wire; the reserved bits are zero */
	r.aopcode = 0xf2;
	uiw_atomic_req_encode(buf, sizeof(buf), &r);
	assert_int_equal(buf[0] | buf[1] | buf[2], 0);
	assert_int_equal(buf[3], 0x02);
	/* reserved bits set by a peer are ignored on receive */
	memcpy(buf, cs_seg + 18, 52);
	buf[0] = 0xff;
	buf[1] = 0xff;
	buf[2] = 0xff;
	buf[3] = 0xf2;
	assert_int_equal(uiw_atomic_req_decode(buf, 52, &d), UIW_OK);
	assert_int_equal(d.aopcode, UIW_AOP_CMP_SWAP);
	buf[3] = 0xf1;
	assert_int_equal(uiw_atomic_req_decode(buf, 52, &d),
			 UIW_E_RDMAP_UNEXPECTED_OPCODE);
}

static void test_alignment(void **state)
{
	struct uiw_atomic_req r, d;
	uint8_t buf[52];
	unsigned lo, op;

	(void)state;
	for (op = 0; op <= 2; op += 2)
		for (lo = 0; lo < 8; lo++) {
			uiw_err_t want = lo ? UIW_E_RDMAP_CATA_STREAM : UIW_OK;

			if (op == UIW_AOP_FETCH_ADD)
				uiw_atomic_req_fetchadd(&r, 1, 0x100,
							0xfff0000000001000ull +
							lo, 1, 0);
			else
				uiw_atomic_req_cmpswap(&r, 1, 0x100,
						       0x1000ull + lo, 0,
						       UINT64_MAX, 1,
						       UINT64_MAX);
			assert_int_equal(uiw_atomic_req_check(&r), want);
			uiw_atomic_req_encode(buf, sizeof(buf), &r);
			assert_int_equal(uiw_atomic_req_decode(buf, 52, &d),
					 want);
			assert_int_equal(d.to, r.to);
		}
	/* the error is the one §8.2 names */
	assert_int_equal(UIW_ERR_LAYER(UIW_E_RDMAP_CATA_STREAM), 0);
	assert_int_equal(UIW_ERR_ETYPE(UIW_E_RDMAP_CATA_STREAM), 2);
	assert_int_equal(UIW_ERR_ECODE(UIW_E_RDMAP_CATA_STREAM), 0x07);
	assert_string_equal(uiw_err_str(UIW_E_RDMAP_CATA_STREAM),
			    "RDMAP remote operation error: catastrophic "
			    "error, localized to RDMAP stream");
}

/* Length first, then AOpCode, then alignment. */
static void test_req_error_order(void **state)
{
	struct uiw_atomic_req r, d;
	uint8_t buf[60];

	(void)state;
	memset(buf, 0, sizeof(buf));
	uiw_atomic_req_fetchadd(&r, 1, 0x100, 0x1003, 1, 0);
	r.aopcode = 5;
	uiw_atomic_req_encode(buf, sizeof(buf), &r);
	assert_int_equal(uiw_atomic_req_decode(buf, 52, &d),
			 UIW_E_RDMAP_UNEXPECTED_OPCODE);
	assert_int_equal(uiw_atomic_req_decode(buf, 53, &d),
			 UIW_E_DDP_U_TOO_LONG);
	assert_int_equal(uiw_atomic_req_decode(buf, 51, &d),
			 UIW_E_RDMAP_OP_UNSPEC);
	r.aopcode = UIW_AOP_FETCH_ADD;
	uiw_atomic_req_encode(buf, sizeof(buf), &r);
	assert_int_equal(uiw_atomic_req_decode(buf, 52, &d),
			 UIW_E_RDMAP_CATA_STREAM);
	assert_int_equal(uiw_atomic_req_decode(buf, 60, &d),
			 UIW_E_DDP_U_TOO_LONG);
}

static void test_len_check(void **state)
{
	static const uint64_t lens[] = { 0, 1, 7, 8, 9, 11, 12, 13, 51, 52,
					 53, 65536, UINT64_MAX };
	unsigned op;
	size_t i;

	(void)state;
	assert_int_equal(uiw_rdmap_ext_len(UIW_OP_IMM), 8);
	assert_int_equal(uiw_rdmap_ext_len(UIW_OP_IMM_SE), 8);
	assert_int_equal(uiw_rdmap_ext_len(UIW_OP_ATOMIC_REQ), 52);
	assert_int_equal(uiw_rdmap_ext_len(UIW_OP_ATOMIC_RESP), 12);
	/* the RDMAP control octet works too (RV bits ignored) */
	assert_int_equal(uiw_rdmap_ext_len(0x4a), 52);
	for (op = 0; op < 16; op++) {
		size_t n = uiw_rdmap_ext_len((uint8_t)op);

		if (op < UIW_OP_IMM || op > UIW_OP_ATOMIC_RESP)
			assert_int_equal(n, 0);
		for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
			uiw_err_t want;

			if (n == 0 || lens[i] == n)
				want = UIW_OK;
			else if (lens[i] > n)
				want = UIW_E_DDP_U_TOO_LONG;
			else
				want = UIW_E_RDMAP_OP_UNSPEC;
			assert_int_equal(uiw_rdmap_ext_len_check((uint8_t)op,
								 lens[i]),
					 want);
		}
	}
	/* §6.3: Immediate Data of exactly 8 octets, with SE or not */
	assert_int_equal(uiw_rdmap_ext_len_check(UIW_OP_IMM, 8), UIW_OK);
	assert_int_equal(uiw_rdmap_ext_len_check(UIW_OP_IMM_SE, 0),
			 UIW_E_RDMAP_OP_UNSPEC);
	assert_int_equal(uiw_rdmap_ext_len_check(UIW_OP_IMM_SE, 16),
			 UIW_E_DDP_U_TOO_LONG);
}

/* §4.1 Figure 2: untagged, and the right queue. */
static void test_hdr_check(void **state)
{
	static const struct {
		uint8_t op;
		uint32_t qn;
	} ext[] = {
		{ UIW_OP_IMM, UIW_QN_SEND },
		{ UIW_OP_IMM_SE, UIW_QN_SEND },
		{ UIW_OP_ATOMIC_REQ, UIW_QN_READ_REQ },
		{ UIW_OP_ATOMIC_RESP, UIW_QN_ATOMIC_RESP },
	};
	struct uiw_ddp_hdr h;
	size_t i;
	uint32_t qn;
	unsigned op;

	(void)state;
	for (i = 0; i < sizeof(ext) / sizeof(ext[0]); i++) {
		for (qn = 0; qn < 6; qn++) {
			uiw_err_t want;

			h = untagged(ext[i].op, qn, 1);
			if (qn > 3)
				want = UIW_E_DDP_U_INVALID_QN;
			else if (qn != ext[i].qn)
				want = UIW_E_RDMAP_UNEXPECTED_OPCODE;
			else
				want = UIW_OK;
			assert_int_equal(uiw_rdmap_ext_hdr_check(&h), want);
		}
		h = untagged(ext[i].op, 0xffffffffu, 1);
		assert_int_equal(uiw_rdmap_ext_hdr_check(&h),
				 UIW_E_DDP_U_INVALID_QN);
		/* the Invalidate STag is ignored by the receiver */
		h = untagged(ext[i].op, ext[i].qn, 1);
		h.rsvd_ulp = 0xdeadbeefu;
		assert_int_equal(uiw_rdmap_ext_hdr_check(&h), UIW_OK);
		/* a tagged segment can never carry these opcodes */
		memset(&h, 0, sizeof(h));
		h.tagged = true;
		h.last = true;
		h.ddp_ver = h.rdmap_ver = 1;
		h.opcode = ext[i].op;
		h.stag = 0x100;
		assert_int_equal(uiw_rdmap_ext_hdr_check(&h),
				 UIW_E_RDMAP_UNEXPECTED_OPCODE);
	}
	/* RFC 5040 opcodes are not judged here */
	for (op = 0; op < UIW_OP_IMM; op++) {
		h = untagged((uint8_t)op, 7, 1);
		assert_int_equal(uiw_rdmap_ext_hdr_check(&h), UIW_OK);
	}
	for (op = UIW_OP_ATOMIC_RESP + 1; op < 16; op++) {
		h = untagged((uint8_t)op, 7, 1);
		assert_int_equal(uiw_rdmap_ext_hdr_check(&h), UIW_OK);
	}
}

/* Every error this module returns is a known triple with a name. */
static void test_errors_known(void **state)
{
	static const uiw_err_t errs[] = {
		UIW_E_RDMAP_UNEXPECTED_OPCODE, UIW_E_RDMAP_CATA_STREAM,
		UIW_E_RDMAP_OP_UNSPEC, UIW_E_DDP_U_TOO_LONG,
		UIW_E_DDP_U_INVALID_QN,
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(errs) / sizeof(errs[0]); i++) {
		assert_true(uiw_err_known(errs[i]));
		assert_non_null(strstr(uiw_err_str(errs[i]), "error"));
	}
}

/*
 * The Terminate a responder sends for a misaligned Atomic Request: RDMAP
 * Remote Operation Error, catastrophic error localized to the stream
 * (02 07), M and D with the 18-octet DDP header (RFC 5040 Figure 10),
 * and no RDMA header (RFC 7306 §8.1 rule 2: it "is set to zero").
 */
static void test_term_misaligned(void **state)
{
	static const uint8_t want[4 + 2 + 18] = {
		0x02, 0x07, 0xc0, 0x00,         /* Layer 0 EType 2, 07, M D */
		0x00, 0x46,                     /* DDP Segment Length 70 */
		0x41, 0x4a, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x05,
		0x00, 0x00, 0x00, 0x00,
	};
	struct uiw_atomic_req r;
	struct uiw_ddp_hdr g;
	struct uiw_term t, d;
	uint8_t seg[70], out[UIW_TERM_MAX_LEN];
	size_t n;
	uiw_err_t err;

	(void)state;
	memcpy(seg, cs_seg, sizeof(seg));
	seg[18 + 19] = 0x7c;            /* the TO ends in ...7c: not aligned */
	err = uiw_atomic_req_decode(seg + 18, 52, &r);
	assert_int_equal(err, UIW_E_RDMAP_CATA_STREAM);
	assert_int_equal(r.to & 7, 4);

	memset(&t, 0, sizeof(t));
	t.err = err;
	assert_int_equal(uiw_term_rdmap_hdr_len(UIW_OP_ATOMIC_REQ), 0);
	uiw_term_hdrct(err, true,
		       uiw_term_rdmap_hdr_len(UIW_OP_ATOMIC_REQ) != 0, &t);
	assert_true(t.m && t.d && !t.r);
	t.ddp_seg_len = sizeof(seg);
	memcpy(t.ddp_hdr, seg, 18);
	t.ddp_hdr_len = 18;
	assert_int_equal(uiw_term_encode(out, sizeof(out), &t), sizeof(want));
	assert_memory_equal(out, want, sizeof(want));

	assert_int_equal(uiw_term_decode(out, sizeof(want), &d), UIW_OK);
	assert_int_equal(d.err, UIW_E_RDMAP_CATA_STREAM);
	assert_int_equal(d.ddp_seg_len, 70);
	assert_int_equal(d.rdmap_hdr_len, 0);
	assert_int_equal(uiw_ddp_hdr_decode(d.ddp_hdr, d.ddp_hdr_len, &g, &n),
			 UIW_OK);
	assert_int_equal(g.opcode, UIW_OP_ATOMIC_REQ);
	assert_int_equal(g.msn, 5);

	/* a protection error on an Atomic Request: M and D, still no R */
	memset(&t, 0, sizeof(t));
	t.err = UIW_E_RDMAP_ACCESS;
	uiw_term_hdrct(t.err, true,
		       uiw_term_rdmap_hdr_len(UIW_OP_ATOMIC_REQ) != 0, &t);
	assert_true(t.m && t.d && !t.r);
	t.ddp_seg_len = sizeof(seg);
	memcpy(t.ddp_hdr, cs_seg, 18);
	t.ddp_hdr_len = 18;
	assert_int_equal(uiw_term_encode(out, sizeof(out), &t), 24);
	assert_int_equal(out[0], 0x01);
	assert_int_equal(out[1], 0x02);
	assert_int_equal(out[2], 0xc0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fetchadd_table),
		cmocka_unit_test(test_fetchadd_boundaries),
		cmocka_unit_test(test_fetchadd_exhaustive_window),
		cmocka_unit_test(test_fetchadd_random),
		cmocka_unit_test(test_cmpswap_table),
		cmocka_unit_test(test_cmpswap_random),
		cmocka_unit_test(test_apply),
		cmocka_unit_test(test_req_vectors),
		cmocka_unit_test(test_resp_vector),
		cmocka_unit_test(test_imm_vector),
		cmocka_unit_test(test_roundtrip_random),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_encode_cap),
		cmocka_unit_test(test_aopcode),
		cmocka_unit_test(test_alignment),
		cmocka_unit_test(test_req_error_order),
		cmocka_unit_test(test_len_check),
		cmocka_unit_test(test_hdr_check),
		cmocka_unit_test(test_errors_known),
		cmocka_unit_test(test_term_misaligned),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
