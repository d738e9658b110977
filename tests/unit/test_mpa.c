/* MPA: startup frames, RFC 6581 data, FPDU layout with markers, the copy
 * codecs (RFC 5044 Figures 5 and 6, siw vectors), MULPDU. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "wire/crc32c.h"
#include "wire/mpa.h"

/* A heap copy of exactly len octets, so that ASan catches any read past
 * the end. */
static uint8_t *exact(const uint8_t *src, size_t len)
{
	uint8_t *p = malloc(len ? len : 1);

	assert_non_null(p);
	if (len)
		memcpy(p, src, len);
	return p;
}

static uint16_t be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

/* ---- RFC 5044 §4.4 Figures 5 and 6 ---------------------------------- */

/* Figure 5: the first FPDU of the stream, a 42-octet Send (MSN 1). */
static const uint8_t fig5[0x34] = {
	0x00, 0x00, 0x00, 0x00,             /* marker, FPDUPTR 0 */
	0x00, 0x2a,                         /* ULPDU_Length */
	0x41, 0x43,                         /* DDP/RDMAP control: Send, L */
	0x00, 0x00, 0x00, 0x00,             /* reserved (Invalidate STag) */
	0x00, 0x00, 0x00, 0x00,             /* QN 0 */
	0x00, 0x00, 0x00, 0x01,             /* MSN 1 */
	0x00, 0x00, 0x00, 0x00,             /* MO 0 */
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* 24 octets of Send data */
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	0x52, 0x23, 0x99, 0x83,             /* CRC32c */
};

/* Figure 6: the second FPDU, at stream octet 0x1ec, MSN 2, with a marker
 * at 0x200 whose FPDUPTR is 0x14. */
#define FIG6_POS 0x1ec
static const uint8_t fig6[0x34] = {
	0x00, 0x2a,                         /* 0x1ec ULPDU_Length */
	0x41, 0x43,
	0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00,             /* QN 0 */
	0x00, 0x00, 0x00, 0x02,             /* MSN 2 */
	0x00, 0x00, 0x00, 0x00,             /* MO 0 */
	0x00, 0x00, 0x00, 0x14,             /* 0x200 marker, FPDUPTR 0x14 */
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* 0x204: 24 octets of data */
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	0x84, 0x92, 0x58, 0x98,             /* 0x21c CRC32c */
};

static void send_ulpdu(uint8_t u[42], uint8_t msn)
{
	memset(u, 0, 42);
	u[0] = 0x41;
	u[1] = 0x43;
	u[13] = msn;
}

static void test_fig5_encode(void **state)
{
	uint8_t u[42], out[0x40];

	(void)state;
	send_ulpdu(u, 1);
	assert_int_equal(uiw_mpa_fpdu_encode(out, sizeof(out), 0, u, 42,
					     true, true), sizeof(fig5));
	assert_memory_equal(out, fig5, sizeof(fig5));
	/* exactly enough room works, one octet less does not */
	assert_int_equal(uiw_mpa_fpdu_encode(out, sizeof(fig5), 0, u, 42,
					     true, true), sizeof(fig5));
	assert_int_equal(uiw_mpa_fpdu_encode(out, sizeof(fig5) - 1, 0, u, 42,
					     true, true), 0);
}

static void test_fig6_encode(void **state)
{
	uint8_t u[42], out[0x40];

	(void)state;
	send_ulpdu(u, 2);
	assert_int_equal(uiw_mpa_fpdu_encode(out, sizeof(out), FIG6_POS, u,
					     42, true, true), sizeof(fig6));
	assert_memory_equal(out, fig6, sizeof(fig6));
}

static void decode_fig(const uint8_t *fig, uint64_t pos, uint8_t msn)
{
	uint8_t u[42], got[64], *buf = exact(fig, 0x34);
	uint16_t ulen;
	size_t used;

	send_ulpdu(u, msn);
	assert_int_equal(uiw_mpa_fpdu_decode(buf, 0x34, pos, true, true, got,
					     sizeof(got), &ulen, &used),
			 UIW_OK);
	assert_int_equal(used, 0x34);
	assert_int_equal(ulen, 42);
	assert_memory_equal(got, u, 42);
	free(buf);
}

static void test_fig5_decode(void **state)
{
	(void)state;
	decode_fig(fig5, 0, 1);
}

static void test_fig6_decode(void **state)
{
	(void)state;
	decode_fig(fig6, FIG6_POS, 2);
}

/* Figure 6's note: the first FPDU was 492 octets, so the whole stream is
 * that FPDU followed by Figure 6, and decodes as two Sends. */
static void test_fig6_stream(void **state)
{
	uint8_t first[482], got[482], s[0x220];
	uint16_t ulen;
	size_t n, used;

	(void)state;
	memset(first, 0, sizeof(first));
	first[0] = 0x41;
	first[1] = 0x43;
	first[13] = 1;
	n = uiw_mpa_fpdu_encode(s, sizeof(s), 0, first, sizeof(first),
				true, true);
	assert_int_equal(n, 0x1ec);
	memcpy(s + n, fig6, sizeof(fig6));
	assert_int_equal(uiw_mpa_fpdu_decode(s, sizeof(s), 0, true, true, got,
					     sizeof(got), &ulen, &used),
			 UIW_OK);
	assert_int_equal(used, 0x1ec);
	assert_int_equal(ulen, sizeof(first));
	assert_memory_equal(got, first, sizeof(first));
	assert_int_equal(uiw_mpa_fpdu_decode(s + used, sizeof(s) - used, used,
					     true, true, got, sizeof(got),
					     &ulen, &used), UIW_OK);
	assert_int_equal(used, 0x34);
	assert_int_equal(ulen, 42);
}

/* ---- siw vectors ------------------------------------------------------ */

/* SIW-FACTS: the RTR, a zero-length RDMA Write to STag 1, with CRC. */
static void test_siw_rtr(void **state)
{
	static const uint8_t want[20] = {
		0x00, 0x0e, 0xc1, 0x40, 0x00, 0x00, 0x00, 0x01,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0xeb, 0xd3, 0x4c, 0x5f,
	};
	uint8_t out[32], got[32], *buf;
	uint16_t ulen;
	size_t used;

	(void)state;
	assert_int_equal(uiw_mpa_fpdu_encode(out, sizeof(out), 4096,
					     want + 2, 14, false, true), 20);
	assert_memory_equal(out, want, 20);
	buf = exact(want, sizeof(want));
	assert_int_equal(uiw_mpa_fpdu_decode(buf, 20, 4096, false, true, got,
					     sizeof(got), &ulen, &used),
			 UIW_OK);
	assert_int_equal(used, 20);
	assert_int_equal(ulen, 14);
	assert_memory_equal(got, want + 2, 14);
	free(buf);
}

/* SIW-FACTS: rping's first Send from siw, CRC off (zero field). */
static void test_siw_send_no_crc(void **state)
{
	uint8_t u[34], out[64], got[64];
	uint16_t ulen;
	size_t used;
	static const uint8_t hdr[20] = {
		0x00, 0x22, 0x41, 0x43, 0, 0, 0, 0, 0, 0, 0, 0,
		0, 0, 0, 1, 0, 0, 0, 0,
	};

	(void)state;
	memcpy(u, hdr + 2, 18);
	memset(u + 18, 0xa5, 16);
	assert_int_equal(uiw_mpa_fpdu_encode(out, sizeof(out), 0, u, 34,
					     false, false), 40);
	assert_memory_equal(out, hdr, 20);
	assert_memory_equal(out + 20, u + 18, 16);
	assert_int_equal(out[36] | out[37] | out[38] | out[39], 0);
	/* with CRC off, any CRC value is accepted */
	out[38] = 0x77;
	assert_int_equal(uiw_mpa_fpdu_decode(out, 40, 0, false, false, got,
					     sizeof(got), &ulen, &used),
			 UIW_OK);
	assert_int_equal(used, 40);
	assert_memory_equal(got, u, 34);
	/* and refused when CRC is on */
	assert_int_equal(uiw_mpa_fpdu_decode(out, 40, 0, false, true, got,
					     sizeof(got), &ulen, &used),
			 UIW_E_MPA_CRC);
}

/* ---- layout properties ---------------------------------------------- */

/* Checks one layout against RFC 5044 §4.1-§4.4 independently of how it
 * was built. */
static void check_layout(uint64_t pos, uint32_t n, bool markers)
{
	static struct uiw_mpa_piece p[UIW_MPA_MAX_PIECES(0xffffu)];
	uint32_t flen = 0, sum = 0, uoff = 0;
	uint64_t s = pos, hdr = 0;
	unsigned cnt, i, nmark = 0;
	bool seen_len = false, seen_pad = false;

	cnt = uiw_mpa_layout(pos, n, markers, p, UIW_MPA_MAX_PIECES(n), &flen);
	assert_true(cnt > 0);
	assert_true(cnt <= UIW_MPA_MAX_PIECES(n));
	for (i = 0; i < cnt; i++) {
		assert_true(p[i].len > 0);
		if (markers && s % 512 == 0) {
			/* a marker is due before this octet */
			assert_int_equal(p[i].kind, UIW_MPA_P_MARKER);
		}
		switch (p[i].kind) {
		case UIW_MPA_P_MARKER:
			assert_true(markers);
			assert_int_equal(s % 512, 0);
			assert_int_equal(p[i].len, 4);
			if (!seen_len) {
				assert_int_equal(s, pos);
				assert_int_equal(p[i].fpduptr, 0);
			} else {
				assert_int_equal(p[i].fpduptr, s - hdr);
			}
			assert_int_equal(p[i].fpduptr & 3, 0);
			nmark++;
			break;
		case UIW_MPA_P_LEN:
			assert_false(seen_len);
			assert_int_equal(p[i].len, 2);
			seen_len = true;
			hdr = s;
			break;
		case UIW_MPA_P_ULPDU:
			assert_true(seen_len);
			assert_false(seen_pad);
			assert_int_equal(p[i].off, uoff);
			uoff += p[i].len;
			break;
		case UIW_MPA_P_PAD:
			assert_true(seen_len);
			assert_int_equal(uoff, n);
			assert_int_equal(p[i].len, uiw_mpa_pad_len(n));
			seen_pad = true;
			break;
		case UIW_MPA_P_CRC:
			assert_int_equal(i, cnt - 1);
			assert_int_equal(p[i].len, 4);
			assert_int_equal(uoff, n);
			break;
		default:
			fail();
		}
		s += p[i].len;
		sum += p[i].len;
	}
	assert_int_equal(p[cnt - 1].kind, UIW_MPA_P_CRC);
	assert_int_equal(sum, flen);
	assert_int_equal(flen % 4, 0);
	assert_int_equal(flen, 2 + n + uiw_mpa_pad_len(n) + 4 + 4 * nmark);
	if (!markers)
		assert_int_equal(nmark, 0);
	else {
		/* exactly one marker per multiple of 512 in the FPDU
		 * (d0: offset of the first one, modulo 2^64) */
		uint32_t d0 = (uint32_t)((512 - pos % 512) % 512);
		unsigned want = d0 < flen ? (flen - 1 - d0) / 512 + 1 : 0;

		assert_int_equal(nmark, want);
	}
	/* too few pieces: refused */
	assert_int_equal(uiw_mpa_layout(pos, n, markers, p, cnt - 1, &flen), 0);
}

static void test_layout_small(void **state)
{
	uint64_t pos;
	uint32_t n;

	(void)state;
	for (pos = 0; pos <= 1024; pos += 4)
		for (n = 0; n <= 1500; n++) {
			check_layout(pos, n, true);
			if (pos % 64 == 0)
				check_layout(pos, n, false);
		}
}

static void test_layout_large(void **state)
{
	static const uint32_t lens[] = {
		2043, 2044, 4096, 8192, 9000, 16380, 32768, 60000, 64962,
	};
	uint64_t pos;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++)
		for (pos = 0; pos < 512; pos += 4) {
			check_layout(pos, lens[i], true);
			check_layout((1ull << 40) + pos, lens[i], true);
		}
	check_layout(0, 65535, false);
	check_layout(3, 65535, false);
	/* near the end of a 64-bit stream: positions wrap like sequence
	 * numbers */
	for (pos = UINT64_MAX - 2047; pos != 1024; pos += 4)
		check_layout(pos, 1000, true);
}

static void test_layout_refused(void **state)
{
	struct uiw_mpa_piece p[UIW_MPA_MAX_PIECES(0xffffu)];
	uint32_t flen;

	(void)state;
	/* ULPDU_Length is 16 bits */
	assert_int_equal(uiw_mpa_layout(0, 65536, false, p, 300, &flen), 0);
	/* with markers, FPDUs start at multiples of 4 */
	assert_int_equal(uiw_mpa_layout(2, 10, true, p, 300, &flen), 0);
	assert_int_not_equal(uiw_mpa_layout(2, 10, false, p, 300, &flen), 0);
	/* 65535 octets with markers at 0: a marker would lie more than
	 * 65535 octets after the length field (FPDUPTR is 16 bits) */
	assert_int_equal(uiw_mpa_layout(0, 65535, true, p, 300, &flen), 0);
	assert_int_equal(uiw_mpa_layout(0, 10, false, NULL, 10, &flen), 0);
}

/* RFC 5044 Figure 4's FPDU (16 octets, a marker after ULPDU octet 9). */
static void test_layout_figure4(void **state)
{
	struct uiw_mpa_piece p[16];
	uint32_t flen;
	unsigned n;

	(void)state;
	n = uiw_mpa_layout(512 - 12, 16, true, p, 16, &flen);
	assert_int_equal(n, 6);
	assert_int_equal(p[0].kind, UIW_MPA_P_LEN);
	assert_int_equal(p[1].kind, UIW_MPA_P_ULPDU);
	assert_int_equal(p[1].len, 10);
	assert_int_equal(p[2].kind, UIW_MPA_P_MARKER);
	assert_int_equal(p[2].fpduptr, 0x0c);
	assert_int_equal(p[3].kind, UIW_MPA_P_ULPDU);
	assert_int_equal(p[3].off, 10);
	assert_int_equal(p[3].len, 6);
	assert_int_equal(p[4].kind, UIW_MPA_P_PAD);
	assert_int_equal(p[4].len, 2);
	assert_int_equal(p[5].kind, UIW_MPA_P_CRC);
	assert_int_equal(flen, 28);
}

/* A marker right after the pad, before the CRC field, belongs to this
 * FPDU and points back to its length field; one right after the CRC
 * field belongs to the next FPDU. */
static void test_layout_marker_before_crc(void **state)
{
	struct uiw_mpa_piece p[16];
	uint32_t flen;
	unsigned n;

	(void)state;
	/* pos 480: length at 480, ULPDU 482..511 (30 octets), pad 0 */
	n = uiw_mpa_layout(480, 30, true, p, 16, &flen);
	assert_int_equal(n, 4);
	assert_int_equal(p[2].kind, UIW_MPA_P_MARKER);
	assert_int_equal(p[2].fpduptr, 32);
	assert_int_equal(p[3].kind, UIW_MPA_P_CRC);
	assert_int_equal(flen, 40);
	/* ULPDU 29 octets: pad 1 ends at 512 too */
	n = uiw_mpa_layout(480, 29, true, p, 16, &flen);
	assert_int_equal(n, 5);
	assert_int_equal(p[2].kind, UIW_MPA_P_PAD);
	assert_int_equal(p[3].kind, UIW_MPA_P_MARKER);
	assert_int_equal(p[3].fpduptr, 32);
	/* CRC ending at 512: no marker in this FPDU */
	n = uiw_mpa_layout(480, 26, true, p, 16, &flen);
	assert_int_equal(n, 3);
	assert_int_equal(flen, 32);
}

/* ---- decode validation ------------------------------------------------ */

static void test_decode_truncated(void **state)
{
	uint8_t got[64], *buf;
	uint16_t ulen;
	size_t k, used;

	(void)state;
	for (k = 0; k < sizeof(fig6); k++) {
		buf = exact(fig6, k);
		assert_int_equal(uiw_mpa_fpdu_decode(buf, k, FIG6_POS, true,
						     true, got, sizeof(got),
						     &ulen, &used), UIW_OK);
		assert_int_equal(used, 0);
		free(buf);
		buf = exact(fig5, k);
		assert_int_equal(uiw_mpa_fpdu_decode(buf, k, 0, true, true,
						     got, sizeof(got), &ulen,
						     &used), UIW_OK);
		assert_int_equal(used, 0);
		free(buf);
	}
}

static void test_decode_bad_fpduptr(void **state)
{
	uint8_t b[sizeof(fig6)], got[64];
	uint16_t ulen;
	size_t used;

	(void)state;
	/* marker pointing 4 octets short, CRC made valid again */
	memcpy(b, fig6, sizeof(b));
	b[0x17] = 0x10;
	uiw_crc32c_put(b + 0x30, uiw_crc32c(b, 0x30));
	assert_int_equal(uiw_mpa_fpdu_decode(b, sizeof(b), FIG6_POS, true,
					     true, got, sizeof(got), &ulen,
					     &used), UIW_E_MPA_MARKER);
	assert_int_equal(used, 0);
	/* the same without CRC checking */
	assert_int_equal(uiw_mpa_fpdu_decode(b, sizeof(b), FIG6_POS, true,
					     false, got, sizeof(got), &ulen,
					     &used), UIW_E_MPA_MARKER);
	/* the two low bits count as zero, the reserved half is ignored */
	memcpy(b, fig6, sizeof(b));
	b[0x17] = 0x17;
	b[0x14] = 0xff;
	uiw_crc32c_put(b + 0x30, uiw_crc32c(b, 0x30));
	assert_int_equal(uiw_mpa_fpdu_decode(b, sizeof(b), FIG6_POS, true,
					     true, got, sizeof(got), &ulen,
					     &used), UIW_OK);
	assert_int_equal(used, sizeof(b));
	/* a leading marker must be 0 */
	memcpy(b, fig5, sizeof(b));
	b[3] = 0x08;
	uiw_crc32c_put(b + 0x30, uiw_crc32c(b, 0x30));
	assert_int_equal(uiw_mpa_fpdu_decode(b, sizeof(b), 0, true, true, got,
					     sizeof(got), &ulen, &used),
			 UIW_E_MPA_MARKER);
	/* a misaligned stream position with markers */
	assert_int_equal(uiw_mpa_fpdu_decode(fig6, sizeof(fig6), FIG6_POS + 2,
					     true, true, got, sizeof(got),
					     &ulen, &used), UIW_E_MPA_MARKER);
}

/* Every single-bit flip is refused; outside the length field it is a CRC
 * error (checked before the markers). */
static void test_decode_bit_flips(void **state)
{
	uint8_t b[sizeof(fig6)], got[64];
	uint16_t ulen;
	size_t i, used;
	int bit;
	uiw_err_t e;

	(void)state;
	for (i = 0; i < sizeof(b); i++)
		for (bit = 0; bit < 8; bit++) {
			memcpy(b, fig6, sizeof(b));
			b[i] ^= (uint8_t)(1u << bit);
			e = uiw_mpa_fpdu_decode(b, sizeof(b), FIG6_POS, true,
						true, got, sizeof(got), &ulen,
						&used);
			if (i >= 2) {
				assert_int_equal(e, UIW_E_MPA_CRC);
			} else {
				/* a changed length: refused or incomplete */
				assert_false(e == UIW_OK && used != 0);
			}
		}
}

static void test_decode_too_long(void **state)
{
	uint8_t got[64];
	uint16_t ulen;
	size_t used;

	(void)state;
	/* 42 octets into a 41-octet buffer: refused from the length field
	 * alone */
	assert_int_equal(uiw_mpa_fpdu_decode(fig5, 6, 0, true, true, got, 41,
					     &ulen, &used), UIW_E_MPA_MARKER);
	assert_int_equal(uiw_mpa_fpdu_decode(fig5, sizeof(fig5), 0, true,
					     true, got, 42, &ulen, &used),
			 UIW_OK);
}

/* Random FPDUs in one stream, each decoded when its last octet arrives
 * (fed one octet more at a time), and markers at every 512 octets of the
 * stream pointing at the right length field. */
static void test_stream_roundtrip(void **state)
{
	enum { NF = 40 };
	static uint8_t s[NF * 1600], u[1500], got[1500];
	uint64_t starts[NF];
	uint16_t lens[NF];
	size_t at = 0, used, k, f, i;
	uint16_t ulen;
	unsigned seed = 12345;
	int markers;

	(void)state;
	for (markers = 0; markers <= 1; markers++) {
		at = 0;
		for (f = 0; f < NF; f++) {
			seed = seed * 1103515245u + 12345u;
			lens[f] = (uint16_t)((seed >> 8) % 1400);
			if (f % 7 == 0)
				lens[f] = (uint16_t)(f % 4);
			for (i = 0; i < lens[f]; i++)
				u[i] = (uint8_t)(f * 31 + i);
			starts[f] = at;
			k = uiw_mpa_fpdu_encode(s + at, sizeof(s) - at, at, u,
						lens[f], markers, true);
			assert_true(k > 0);
			at += k;
		}
		if (markers) {
			for (i = 0; i < at; i += 512) {
				uint16_t ptr = be16(s + i + 2);

				assert_int_equal(be16(s + i), 0);
				f = 0;
				while (f + 1 < NF && starts[f + 1] <= i)
					f++;
				if (starts[f] == i)
					assert_int_equal(ptr, 0);
				else
					assert_int_equal(ptr, i - starts[f] -
						(starts[f] % 512 == 0 ? 4 : 0));
			}
		}
		for (f = 0; f < NF; f++) {
			size_t base = (size_t)starts[f];

			for (k = 0;; k++) {
				assert_true(base + k <= at);
				assert_int_equal(uiw_mpa_fpdu_decode(s + base,
						k, base, markers, true, got,
						sizeof(got), &ulen, &used),
						 UIW_OK);
				if (used)
					break;
			}
			assert_int_equal(used, k);
			assert_int_equal(ulen, lens[f]);
			for (i = 0; i < lens[f]; i++)
				assert_int_equal(got[i], (uint8_t)(f * 31 + i));
			if (f + 1 < NF)
				assert_int_equal(base + used, starts[f + 1]);
		}
	}
}

/* ---- MULPDU ------------------------------------------------------------ */

static void test_mulpdu_values(void **state)
{
	(void)state;
	/* EMSS - (6 + EMSS mod 4) */
	assert_int_equal(uiw_mpa_mulpdu(1460, false), 1454);
	assert_int_equal(uiw_mpa_mulpdu(65483, false), 65474);
	assert_int_equal(uiw_mpa_mulpdu(536, false), 530);
	assert_int_equal(uiw_mpa_mulpdu(1461, false), 1454);
	/* EMSS - (6 + 4 * Ceiling(EMSS / 512) + EMSS mod 4) */
	assert_int_equal(uiw_mpa_mulpdu(1460, true), 1460 - (6 + 12));
	assert_int_equal(uiw_mpa_mulpdu(65483, true), 65483 - (6 + 512 + 3));
	assert_int_equal(uiw_mpa_mulpdu(536, true), 536 - (6 + 8));
	assert_int_equal(uiw_mpa_mulpdu(512, true), 512 - (6 + 4));
	assert_int_equal(uiw_mpa_mulpdu(513, true), 513 - (6 + 8 + 1));
	/* never below 128 (RFC 5044 §4.5), so above 18 + 28 + 4 */
	assert_int_equal(uiw_mpa_mulpdu(100, false), 128);
	assert_int_equal(uiw_mpa_mulpdu(0, true), 128);
	assert_int_equal(uiw_mpa_mulpdu(135, true), 128);
	assert_int_equal(uiw_mpa_mulpdu(140, true), 130);
	assert_true(uiw_mpa_mulpdu(0, false) >= 18 + 28 + 4);
	/* EMSS beyond a TCP segment counts as 65535 */
	assert_int_equal(uiw_mpa_mulpdu(1u << 20, false), 65535 - 9);
	assert_int_equal(uiw_mpa_mulpdu(UINT32_MAX, true),
			 65535 - (6 + 4 * 128 + 3));
}

/* An FPDU of MULPDU octets fits in EMSS at every stream position. */
static void test_mulpdu_fits(void **state)
{
	struct uiw_mpa_piece p[UIW_MPA_MAX_PIECES(0xffffu)];
	uint32_t emss, m, flen;
	uint64_t pos;

	(void)state;
	for (emss = 150; emss <= 70000;
	     emss += emss < 9000 ? 3 : (emss < 65000 ? 997 : 29)) {
		m = uiw_mpa_mulpdu(emss, false);
		assert_true(uiw_mpa_layout(0, m, false, p, 300, &flen) > 0);
		assert_true(flen <= (emss > 65535 ? 65535 : emss));
		m = uiw_mpa_mulpdu(emss, true);
		for (pos = 0; pos < 512; pos += 4) {
			assert_true(uiw_mpa_layout(pos, m, true, p, 300,
						   &flen) > 0);
			if (m > 128)
				assert_true(flen <= emss);
		}
	}
}

/* ---- startup frames ---------------------------------------------------- */

static void test_frame_request(void **state)
{
	static const uint8_t want[24] = {
		'M', 'P', 'A', ' ', 'I', 'D', ' ', 'R', 'e', 'q', ' ',
		'F', 'r', 'a', 'm', 'e',
		0x10, 0x02, 0x00, 0x04, 0x80, 0x04, 0x40, 0x02,
	};
	uint8_t pd[4], out[64], *buf;
	struct uiw_mpa_frame f = { .reply = false, .flags = UIW_MPA_F_ENH,
				   .rev = 2, .pd_len = 4, .pd = pd };
	struct uiw_mpa_v2 v = { .ird = 4, .ord = 2, .p2p = true,
				.rtr_read = true };
	struct uiw_mpa_frame g;
	size_t used, k;

	(void)state;
	uiw_mpa_v2_encode(pd, &v);
	assert_int_equal(uiw_mpa_frame_encode(out, sizeof(out), &f), 24);
	assert_memory_equal(out, want, 24);
	assert_int_equal(uiw_mpa_frame_encode(out, 23, &f), 0);
	for (k = 0; k <= 24; k++) {
		buf = exact(want, k);
		memset(&g, 0, sizeof(g));
		assert_int_equal(uiw_mpa_frame_decode(buf, k, false, &g,
						      &used), UIW_OK);
		assert_int_equal(used, k == 24 ? 24 : 0);
		if (k == 24) {
			assert_false(g.reply);
			assert_int_equal(g.flags, UIW_MPA_F_ENH);
			assert_int_equal(g.rev, 2);
			assert_int_equal(g.pd_len, 4);
			assert_ptr_equal(g.pd, buf + 20);
			assert_memory_equal(g.pd, pd, 4);
		}
		free(buf);
	}
	/* the request key is refused where a reply is expected, already
	 * from the first differing octet (the 10th) */
	assert_int_equal(uiw_mpa_frame_decode(want, 24, true, &g, &used),
			 UIW_E_MPA_INVALID_FRAME);
	assert_int_equal(uiw_mpa_frame_decode(want, 9, true, &g, &used),
			 UIW_OK);
	assert_int_equal(used, 0);
	assert_int_equal(uiw_mpa_frame_decode(want, 10, true, &g, &used),
			 UIW_E_MPA_INVALID_FRAME);
}

static void test_frame_reply_flags(void **state)
{
	uint8_t out[32], pd[1] = { 0 };
	struct uiw_mpa_frame f = { .reply = true,
				   .flags = UIW_MPA_F_R | UIW_MPA_F_ENH,
				   .rev = 2 };
	struct uiw_mpa_frame g;
	size_t used;

	(void)state;
	/* SIW-FACTS: siw rejects with "30 02 0000" */
	assert_int_equal(uiw_mpa_frame_encode(out, sizeof(out), &f), 20);
	assert_memory_equal(out, uiw_mpa_key_rep, 16);
	assert_memory_equal(out, "MPA ID Rep Frame", 16);
	assert_int_equal(out[16], 0x30);
	assert_int_equal(out[17], 0x02);
	assert_int_equal(be16(out + 18), 0);
	assert_int_equal(uiw_mpa_frame_decode(out, 20, true, &g, &used),
			 UIW_OK);
	assert_int_equal(used, 20);
	assert_true(g.reply);
	assert_int_equal(g.flags, 0x30);
	assert_null(g.pd);
	/* "20 01 0000": markers refused; reserved bits are not judged */
	out[16] = 0x2f;
	out[17] = 0x01;
	assert_int_equal(uiw_mpa_frame_decode(out, 20, true, &g, &used),
			 UIW_OK);
	assert_int_equal(g.flags & UIW_MPA_F_R, UIW_MPA_F_R);
	assert_int_equal(g.flags & UIW_MPA_F_RES, 0x0f);
	assert_int_equal(g.rev, 1);
	/* the reply key where a request is expected */
	assert_int_equal(uiw_mpa_frame_decode(out, 20, false, &g, &used),
			 UIW_E_MPA_INVALID_FRAME);
	/* pd_len set without data: refused by the encoder */
	f.pd_len = 1;
	assert_int_equal(uiw_mpa_frame_encode(out, sizeof(out), &f), 0);
	f.pd = pd;
	assert_int_equal(uiw_mpa_frame_encode(out, sizeof(out), &f), 21);
}

static void test_frame_pd_len(void **state)
{
	static uint8_t pd[UIW_MPA_PD_MAX + 1], out[UIW_MPA_FRAME_MAX + 8];
	struct uiw_mpa_frame f = { .flags = UIW_MPA_F_C, .rev = 1, .pd = pd,
				   .pd_len = UIW_MPA_PD_MAX };
	struct uiw_mpa_frame g;
	uint8_t *buf;
	size_t used;

	(void)state;
	memset(pd, 0x5a, sizeof(pd));
	assert_int_equal(uiw_mpa_frame_encode(out, sizeof(out), &f),
			 UIW_MPA_FRAME_MAX);
	buf = exact(out, UIW_MPA_FRAME_MAX);
	assert_int_equal(uiw_mpa_frame_decode(buf, UIW_MPA_FRAME_MAX, false,
					      &g, &used), UIW_OK);
	assert_int_equal(used, UIW_MPA_FRAME_MAX);
	assert_int_equal(g.pd_len, 512);
	assert_memory_equal(g.pd, pd, 512);
	/* one octet missing: wait */
	assert_int_equal(uiw_mpa_frame_decode(buf, UIW_MPA_FRAME_MAX - 1,
					      false, &g, &used), UIW_OK);
	assert_int_equal(used, 0);
	free(buf);
	/* 513: the encoder refuses, the decoder reports it from the header
	 * alone */
	f.pd_len = UIW_MPA_PD_MAX + 1;
	assert_int_equal(uiw_mpa_frame_encode(out, sizeof(out), &f), 0);
	out[18] = 0x02;
	out[19] = 0x01;
	buf = exact(out, 20);
	assert_int_equal(uiw_mpa_frame_decode(buf, 20, false, &g, &used),
			 UIW_E_MPA_INVALID_FRAME);
	assert_int_equal(used, 0);
	free(buf);
	/* SIW-FACTS: pd_len 600 */
	out[18] = 0x02;
	out[19] = 0x58;
	assert_int_equal(uiw_mpa_frame_decode(out, 20, false, &g, &used),
			 UIW_E_MPA_INVALID_FRAME);
	/* a wrong key */
	out[18] = 0;
	out[19] = 0;
	out[0] = 'm';
	assert_int_equal(uiw_mpa_frame_decode(out, 20, false, &g, &used),
			 UIW_E_MPA_INVALID_FRAME);
	assert_int_equal(uiw_mpa_frame_decode(out, 1, false, &g, &used),
			 UIW_E_MPA_INVALID_FRAME);
	assert_int_equal(uiw_mpa_frame_decode(out, 0, false, &g, &used),
			 UIW_OK);
	assert_int_equal(used, 0);
}

/* ---- RFC 6581 §9 data: the SIW-FACTS table ------------------------- */

struct v2_vec {
	uint8_t b[4];
	uint16_t ird, ord;
	bool p2p, send, write, read;
};
#define T true
#define F false

static void test_v2_vectors(void **state)
{
	static const struct v2_vec vecs[] = {
		/* request 8008 8008 and siw's echo: P2P, Write RTR */
		{ { 0x80, 0x08, 0x80, 0x08 }, 8, 8, T, F, T, F },
		{ { 0x00, 0x01, 0x00, 0x01 }, 1, 1, F, F, F, F },
		/* 8004 4002: P2P, IRD 4, ORD 2, Read RTR; siw replies
		 * 8002 4004, its own view */
		{ { 0x80, 0x04, 0x40, 0x02 }, 4, 2, T, F, F, T },
		{ { 0x80, 0x02, 0x40, 0x04 }, 2, 4, T, F, F, T },
		/* 8000 0000: no RTR offered; siw proposes 8000 8000 */
		{ { 0x80, 0x00, 0x00, 0x00 }, 0, 0, T, F, F, F },
		{ { 0x80, 0x00, 0x80, 0x00 }, 0, 0, T, F, T, F },
		/* 80c8 c0c8 capped by siw to 8080 8080 */
		{ { 0x80, 0xc8, 0xc0, 0xc8 }, 200, 200, T, F, T, T },
		{ { 0x80, 0x80, 0x80, 0x80 }, 128, 128, T, F, T, F },
		/* siw's own P2P request 8001 c001 */
		{ { 0x80, 0x01, 0xc0, 0x01 }, 1, 1, T, F, T, T },
		/* B: zero-length Send RTR; all-ones IRD/ORD */
		{ { 0xff, 0xff, 0x3f, 0xff }, 0x3fff, 0x3fff, T, T, F, F },
	};
	struct uiw_mpa_v2 v;
	uint8_t out[4];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(vecs) / sizeof(vecs[0]); i++) {
		uiw_mpa_v2_decode(vecs[i].b, &v);
		assert_int_equal(v.ird, vecs[i].ird);
		assert_int_equal(v.ord, vecs[i].ord);
		assert_int_equal(v.p2p, vecs[i].p2p);
		assert_int_equal(v.rtr_send, vecs[i].send);
		assert_int_equal(v.rtr_write, vecs[i].write);
		assert_int_equal(v.rtr_read, vecs[i].read);
		uiw_mpa_v2_encode(out, &v);
		assert_memory_equal(out, vecs[i].b, 4);
	}
}

static void test_v2_rules(void **state)
{
	static const uint8_t no_a[4] = { 0x40, 0x01, 0xc0, 0x01 };
	struct uiw_mpa_v2 v = { .ird = 0x4000, .ord = 0xffff,
				.rtr_send = true, .rtr_write = true };
	uint8_t out[4];

	(void)state;
	/* without A, B/C/D are ignored on receive ... */
	uiw_mpa_v2_decode(no_a, &v);
	assert_false(v.p2p);
	assert_false(v.rtr_send || v.rtr_write || v.rtr_read);
	assert_int_equal(v.ird, 1);
	assert_int_equal(v.ord, 1);
	/* ... and not sent; values above 14 bits are sent as 0x3fff */
	v = (struct uiw_mpa_v2){ .ird = 0x4000, .ord = 0xffff,
				 .rtr_send = true, .rtr_write = true };
	uiw_mpa_v2_encode(out, &v);
	assert_int_equal(be16(out), 0x3fff);
	assert_int_equal(be16(out + 2), 0x3fff);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fig5_encode),
		cmocka_unit_test(test_fig6_encode),
		cmocka_unit_test(test_fig5_decode),
		cmocka_unit_test(test_fig6_decode),
		cmocka_unit_test(test_fig6_stream),
		cmocka_unit_test(test_siw_rtr),
		cmocka_unit_test(test_siw_send_no_crc),
		cmocka_unit_test(test_layout_small),
		cmocka_unit_test(test_layout_large),
		cmocka_unit_test(test_layout_refused),
		cmocka_unit_test(test_layout_figure4),
		cmocka_unit_test(test_layout_marker_before_crc),
		cmocka_unit_test(test_decode_truncated),
		cmocka_unit_test(test_decode_bad_fpduptr),
		cmocka_unit_test(test_decode_bit_flips),
		cmocka_unit_test(test_decode_too_long),
		cmocka_unit_test(test_stream_roundtrip),
		cmocka_unit_test(test_mulpdu_values),
		cmocka_unit_test(test_mulpdu_fits),
		cmocka_unit_test(test_frame_request),
		cmocka_unit_test(test_frame_reply_flags),
		cmocka_unit_test(test_frame_pd_len),
		cmocka_unit_test(test_v2_vectors),
		cmocka_unit_test(test_v2_rules),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
