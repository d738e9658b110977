/*
 * CRC32c (RFC 3720 §12.1, RFC 5044 §4.4): the one-shot value equals a
 * bitwise reference; chaining uiw_crc32c_update over any split, from
 * any running state, gives what one update over the whole gives; the
 * wire form of the value is least significant octet first.
 *
 * Input: two split points (2 octets each), a running state (4 octets),
 * then the data.
 */
#include "fuzz.h"
#include "wire/crc32c.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz in = { data, size };
	uint16_t s1 = fz_u16(&in), s2 = fz_u16(&in);
	uint32_t st = fz_u32(&in);
	size_t n = in.n, a, b;
	uint8_t *d = fz_dup(in.p, n), *dc, w[4], *cat;
	uint32_t one, ref, x, y;

	a = n ? s1 % (n + 1) : 0;
	b = n ? s2 % (n + 1) : 0;
	if (a > b) {
		size_t t = a;

		a = b;
		b = t;
	}
	one = uiw_crc32c(d, n);
	ref = ref_crc32c(d, n);
	FZ_CHECK(one == ref, "crc32c of %zu octets %#x, reference %#x", n, one,
		 ref);
	FZ_CHECK(uiw_crc32c_final(uiw_crc32c_update(UIW_CRC32C_INIT, d, n)) ==
		 one, "update+final differs from the one-shot value");

	/* two and three pieces, each from an exact copy of its own */
	x = UIW_CRC32C_INIT;
	dc = fz_dup(d, a);
	x = uiw_crc32c_update(x, dc, a);
	free(dc);
	dc = fz_dup(d + a, n - a);
	x = uiw_crc32c_update(x, dc, n - a);
	free(dc);
	FZ_CHECK(uiw_crc32c_final(x) == one, "split at %zu of %zu: %#x vs %#x",
		 a, n, uiw_crc32c_final(x), one);
	y = uiw_crc32c_update(UIW_CRC32C_INIT, d, a);
	y = uiw_crc32c_update(y, d + a, b - a);
	y = uiw_crc32c_update(y, d + b, n - b);
	FZ_CHECK(uiw_crc32c_final(y) == one, "split at %zu, %zu of %zu", a, b,
		 n);

	/* from any running state: the register the reference gives */
	x = uiw_crc32c_update(st, d, a);
	x = uiw_crc32c_update(x, d + a, n - a);
	y = ref_crc32c_update(st, d, n);
	FZ_CHECK(x == y, "state %#x, split %zu of %zu: %#x, reference %#x",
		 st, a, n, x, y);
	/* an empty piece changes nothing */
	FZ_CHECK(uiw_crc32c_update(st, d, 0) == st, "empty update changed "
		 "the state %#x", st);

	/* the wire form: least significant octet first, and back */
	uiw_crc32c_put(w, one);
	FZ_CHECK(ref_le32(w) == one && uiw_crc32c_get(w) == one,
		 "put/get of %#x", one);
	if (n >= 4)
		FZ_CHECK(uiw_crc32c_get(d) == ref_le32(d),
			 "get of %02x%02x%02x%02x", d[0], d[1], d[2], d[3]);
	/* the data followed by its CRC field leaves the CRC32c residue
	 * (the value of any message that ends in its own correct CRC) */
	cat = fz_alloc(n + 4);
	if (n)
		memcpy(cat, d, n);
	memcpy(cat + n, w, 4);
	FZ_CHECK(uiw_crc32c(cat, n + 4) == 0x48674bc7u,
		 "data + CRC gives %#x, not the residue 0x48674bc7",
		 uiw_crc32c(cat, n + 4));
	free(cat);
	free(d);
	return 0;
}
