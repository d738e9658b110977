/* CRC32c: RFC 3720 Appendix B.4 vectors, RFC 5044 §4.4 FPDUs, the siw
 * RTR vector, chaining across pieces, short pieces against the bitwise
 * definition, and the wire octet order. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "wire/crc32c.h"

/* CRC bytes of buf as they go on the wire. */
static void wire_crc(const uint8_t *buf, size_t len, uint8_t out[4])
{
	uiw_crc32c_put(out, uiw_crc32c(buf, len));
}

static void check_vector(const uint8_t *buf, size_t len,
			 const uint8_t want[4], uint32_t value)
{
	uint8_t got[4];

	wire_crc(buf, len, got);
	assert_memory_equal(got, want, 4);
	assert_int_equal(uiw_crc32c(buf, len), value);
	assert_int_equal(uiw_crc32c_get(want), value);
}

/* RFC 3720 B.4: 32 bytes of zeroes -> aa 36 91 8a */
static void test_rfc3720_zeroes(void **state)
{
	uint8_t b[32];
	static const uint8_t want[4] = { 0xaa, 0x36, 0x91, 0x8a };

	(void)state;
	memset(b, 0, sizeof(b));
	check_vector(b, sizeof(b), want, 0x8a9136aau);
}

/* RFC 3720 B.4: 32 bytes of ones -> 43 ab a8 62 */
static void test_rfc3720_ones(void **state)
{
	uint8_t b[32];
	static const uint8_t want[4] = { 0x43, 0xab, 0xa8, 0x62 };

	(void)state;
	memset(b, 0xff, sizeof(b));
	check_vector(b, sizeof(b), want, 0x62a8ab43u);
}

/* RFC 3720 B.4: 00..1f -> 4e 79 dd 46 */
static void test_rfc3720_incrementing(void **state)
{
	uint8_t b[32];
	static const uint8_t want[4] = { 0x4e, 0x79, 0xdd, 0x46 };
	int i;

	(void)state;
	for (i = 0; i < 32; i++)
		b[i] = (uint8_t)i;
	check_vector(b, sizeof(b), want, 0x46dd794eu);
}

/* RFC 3720 B.4: 1f..00 -> 5c db 3f 11 */
static void test_rfc3720_decrementing(void **state)
{
	uint8_t b[32];
	static const uint8_t want[4] = { 0x5c, 0xdb, 0x3f, 0x11 };
	int i;

	(void)state;
	for (i = 0; i < 32; i++)
		b[i] = (uint8_t)(31 - i);
	check_vector(b, sizeof(b), want, 0x113fdb5cu);
}

/* RFC 3720 B.4: an iSCSI SCSI Read (10) Command PDU -> 56 3a 96 d9 */
static void test_rfc3720_read_pdu(void **state)
{
	static const uint8_t pdu[48] = {
		0x01, 0xc0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x14, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0x00,
		0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, 0x18,
		0x28, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	};
	static const uint8_t want[4] = { 0x56, 0x3a, 0x96, 0xd9 };

	(void)state;
	check_vector(pdu, sizeof(pdu), want, 0xd9963a56u);
}

/* RFC 5044 §4.4 Figure 5: the CRC covers marker, length and ULPDU
 * (octets 0x00..0x2f) and is sent as 52 23 99 83. */
static void test_rfc5044_figure5(void **state)
{
	uint8_t b[0x30];
	static const uint8_t want[4] = { 0x52, 0x23, 0x99, 0x83 };

	(void)state;
	memset(b, 0, sizeof(b));
	b[0x05] = 0x2a;
	b[0x06] = 0x41;
	b[0x07] = 0x43;
	b[0x13] = 0x01;
	check_vector(b, sizeof(b), want, 0x83992352u);
}

/* RFC 5044 §4.4 Figure 6: octets 0x1ec..0x21b, marker included, sent as
 * 84 92 58 98. */
static void test_rfc5044_figure6(void **state)
{
	uint8_t b[0x30];
	static const uint8_t want[4] = { 0x84, 0x92, 0x58, 0x98 };

	(void)state;
	memset(b, 0, sizeof(b));
	b[0x01] = 0x2a;         /* 0x1ec: length */
	b[0x02] = 0x41;
	b[0x03] = 0x43;
	b[0x0f] = 0x02;         /* 0x1f8: MSN = 2 */
	b[0x17] = 0x14;         /* 0x200: marker, FPDUPTR 0x14 */
	check_vector(b, sizeof(b), want, 0x98589284u);
}

/* SIW-FACTS: siw's RTR FPDU carries eb d3 4c 5f, the value 0x5f4cd3eb. */
static void test_siw_rtr(void **state)
{
	static const uint8_t fpdu[16] = {
		0x00, 0x0e, 0xc1, 0x40, 0x00, 0x00, 0x00, 0x01,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	};
	static const uint8_t want[4] = { 0xeb, 0xd3, 0x4c, 0x5f };

	(void)state;
	check_vector(fpdu, sizeof(fpdu), want, 0x5f4cd3ebu);
}

/* Feeding pieces in order gives the one-shot value, for every split. */
static void test_chaining(void **state)
{
	uint8_t b[300];
	size_t i, j;
	uint32_t whole, s;

	(void)state;
	for (i = 0; i < sizeof(b); i++)
		b[i] = (uint8_t)(i * 37 + 11);
	whole = uiw_crc32c(b, sizeof(b));
	for (i = 0; i <= sizeof(b); i++) {
		s = uiw_crc32c_update(UIW_CRC32C_INIT, b, i);
		s = uiw_crc32c_update(s, b + i, sizeof(b) - i);
		assert_int_equal(uiw_crc32c_final(s), whole);
	}
	/* three pieces, with empty ones */
	for (i = 0; i <= 64; i += 7)
		for (j = i; j <= 64; j += 5) {
			s = uiw_crc32c_update(UIW_CRC32C_INIT, b, i);
			s = uiw_crc32c_update(s, b + i, j - i);
			s = uiw_crc32c_update(s, b + j, 0);
			s = uiw_crc32c_update(s, b + j, 64 - j);
			assert_int_equal(uiw_crc32c_final(s),
					 uiw_crc32c(b, 64));
		}
	/* the empty message */
	assert_int_equal(uiw_crc32c(b, 0), 0);
	assert_int_equal(uiw_crc32c_final(UIW_CRC32C_INIT), 0);
}

/* The register, one bit at a time (RFC 3720 §12.1, reflected form). */
static uint32_t bitwise_update(uint32_t c, const uint8_t *p, size_t n)
{
	int k;

	while (n--) {
		c ^= *p++;
		for (k = 0; k < 8; k++)
			c = (c & 1) ? (c >> 1) ^ 0x82f63b78u : c >> 1;
	}
	return c;
}

/* Every length up to 300 octets (short pieces take the crc32
 * instruction where the CPU has it, longer ones ISA-L), at every
 * alignment of the buffer, from an arbitrary running state: the
 * register the bitwise definition gives. */
static void test_short_pieces(void **state)
{
	static uint8_t b[300 + 16];
	uint32_t st = 0x12345678u;
	size_t len, off, i;

	(void)state;
	for (i = 0; i < sizeof(b); i++)
		b[i] = (uint8_t)(i * 151 + 7);
	for (off = 0; off < 16; off++)
		for (len = 0; len <= 300; len++) {
			st = st * 1103515245u + 12345u;
			assert_int_equal(uiw_crc32c_update(st, b + off, len),
					 bitwise_update(st, b + off, len));
		}
}

static uint32_t bitrev32(uint32_t v)
{
	uint32_t r = 0;
	int i;

	for (i = 0; i < 32; i++)
		r |= ((v >> i) & 1u) << (31 - i);
	return r;
}

/* RFC 3720 §12.1: the CRC over a segment extended by its CRC (in wire
 * order) always leaves 0x1c2d19ed as the remainder in polynomial form;
 * that only holds if uiw_crc32c_put's octet order is the right one. */
static void test_residue(void **state)
{
	uint8_t b[64 + 4];
	size_t len, i;

	(void)state;
	for (len = 0; len <= 64; len += 3) {
		for (i = 0; i < len; i++)
			b[i] = (uint8_t)(len * 13 + i * 101);
		uiw_crc32c_put(b + len, uiw_crc32c(b, len));
		assert_int_equal(bitrev32(uiw_crc32c_update(UIW_CRC32C_INIT,
							    b, len + 4)),
				 0x1c2d19edu);
	}
}

static void test_put_get(void **state)
{
	uint8_t b[4];

	(void)state;
	uiw_crc32c_put(b, 0x5f4cd3ebu);
	assert_int_equal(b[0], 0xeb);
	assert_int_equal(b[1], 0xd3);
	assert_int_equal(b[2], 0x4c);
	assert_int_equal(b[3], 0x5f);
	assert_int_equal(uiw_crc32c_get(b), 0x5f4cd3ebu);
	uiw_crc32c_put(b, 0x80000001u);
	assert_int_equal(b[0], 0x01);
	assert_int_equal(b[3], 0x80);
	assert_int_equal(uiw_crc32c_get(b), 0x80000001u);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rfc3720_zeroes),
		cmocka_unit_test(test_rfc3720_ones),
		cmocka_unit_test(test_rfc3720_incrementing),
		cmocka_unit_test(test_rfc3720_decrementing),
		cmocka_unit_test(test_rfc3720_read_pdu),
		cmocka_unit_test(test_rfc5044_figure5),
		cmocka_unit_test(test_rfc5044_figure6),
		cmocka_unit_test(test_siw_rtr),
		cmocka_unit_test(test_chaining),
		cmocka_unit_test(test_short_pieces),
		cmocka_unit_test(test_residue),
		cmocka_unit_test(test_put_get),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
