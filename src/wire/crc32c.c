/*
 * CRC32c (Castagnoli, generator 0x11EDC6F41) as MPA uses it: RFC 5044
 * §4.4 computes it "in the manner described in the iSCSI Protocol
 * document for Header and Data Digests" (RFC 3720 §12.1).
 *
 * ISA-L's crc32_iscsi(buf, len, init) runs the reflected CRC register
 * over buf starting from init and returns the register as it stands: it
 * neither complements on entry nor on exit.  So the running state starts
 * at all ones (the "most significant 32 bits are complemented" step of
 * RFC 3720 §12.1), pieces chain by passing the state along, and the final
 * complement gives the CRC value.
 *
 * Octet order on the wire.  RFC 3720 §12.1 maps "the x^31 coefficient in
 * bit 7 of the lowest numbered byte ... through x^0 in bit 0 of the
 * highest numbered byte".  Read with ordinary (LSB = bit 0) numbering
 * that looks like "most significant octet first", but RFC 3720 §2.3
 * numbers bits the IETF way: bit 0 is the most significant bit of an
 * octet (2^7) and bit 7 the least (2^0).  In the reflected register the
 * x^31..x^24 coefficients are its least significant octet, with x^31 in
 * 2^0, which is exactly "bit 7" of the first octet in RFC 3720's
 * numbering.  So the value goes least significant octet first.  Every
 * source agrees on that: RFC 3720 Appendix B.4 (32 zero octets give the
 * value 0x8a9136aa, listed as "aa 36 91 8a"), RFC 5044 §4.4 Figures 5 and
 * 6 (values 0x83992352 and 0x98589284, shown as "52 23 99 83" and
 * "84 92 58 98"), Linux siw and tshark's MPA dissector (0x5f4cd3eb sent
 * as "eb d3 4c 5f").  The unit tests check all of them byte for byte.
 */
#include "crc32c.h"

#include <isa-l/crc.h>
#include <stdbool.h>
#include <string.h>

/* crc32_iscsi takes an int length: feed large buffers in slices. */
#define CRC_SLICE (1u << 30)

/*
 * Short pieces: an FPDU of a small message is a header, a few payload
 * octets and a pad, each a piece of its own.  ISA-L's entry (a
 * dispatched call, then the folding loop's set-up) costs more there
 * than the work: about 100 instructions for 16 octets.  x86-64's SSE4.2
 * crc32 instruction runs the same reflected register (Castagnoli
 * polynomial, no complement) at 8 octets a step, 3 cycles a step;
 * ISA-L's folding is faster from a few hundred octets on.
 */
#define CRC_SHORT 128

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define CRC_HW 1
#include <nmmintrin.h>

static bool crc_hw;

__attribute__((constructor)) static void crc_hw_probe(void)
{
	__builtin_cpu_init();
	crc_hw = __builtin_cpu_supports("sse4.2");
}

__attribute__((target("sse4.2"))) static uint32_t
crc_short(uint32_t state, const unsigned char *p, size_t len)
{
	uint64_t c = state;

	for (; len >= 8; p += 8, len -= 8) {
		uint64_t v;

		memcpy(&v, p, 8);
		c = _mm_crc32_u64(c, v);
	}
	state = (uint32_t)c;
	if (len >= 4) {
		uint32_t v;

		memcpy(&v, p, 4);
		state = _mm_crc32_u32(state, v);
		p += 4;
		len -= 4;
	}
	for (; len > 0; p++, len--)
		state = _mm_crc32_u8(state, *p);
	return state;
}
#endif

uint32_t uiw_crc32c_update(uint32_t state, const void *buf, size_t len)
{
	const unsigned char *p = buf;

#ifdef CRC_HW
	if (len <= CRC_SHORT && crc_hw)
		return crc_short(state, p, len);
#endif
	while (len > 0) {
		size_t n = len < CRC_SLICE ? len : CRC_SLICE;

		/* ISA-L's prototype lacks const; it does not write. */
		state = crc32_iscsi((unsigned char *)p, (int)n, state);
		p += n;
		len -= n;
	}
	return state;
}

uint32_t uiw_crc32c_final(uint32_t state)
{
	return ~state;
}

uint32_t uiw_crc32c(const void *buf, size_t len)
{
	return uiw_crc32c_final(uiw_crc32c_update(UIW_CRC32C_INIT, buf, len));
}

void uiw_crc32c_put(uint8_t out[4], uint32_t crc)
{
	out[0] = (uint8_t)crc;
	out[1] = (uint8_t)(crc >> 8);
	out[2] = (uint8_t)(crc >> 16);
	out[3] = (uint8_t)(crc >> 24);
}

uint32_t uiw_crc32c_get(const uint8_t in[4])
{
	return (uint32_t)in[0] | (uint32_t)in[1] << 8 |
	       (uint32_t)in[2] << 16 | (uint32_t)in[3] << 24;
}
