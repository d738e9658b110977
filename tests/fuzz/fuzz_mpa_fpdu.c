/*
 * uiw_mpa_fpdu_decode and uiw_mpa_fpdu_encode (RFC 5044 §4): every
 * decode is compared with a reference decoder built on the octet walk of
 * fuzz.h; what decodes re-encodes to the same octets (up to what the
 * receiver ignores: pad, marker reserved half, the low FPDUPTR bits, and
 * the CRC field when CRC is off); every prefix of an FPDU asks for more.
 *
 * Input: flags (0x01 markers, 0x02 CRC, 0x04 encode mode, 0x08 round
 * the position down to a multiple of 4, 0x30 both set: long ULPDUs in
 * encode mode), the stream position (8 octets), the receiver's ULPDU
 * capacity (2 octets), a selector (2 octets) for a prefix length or a
 * bit to flip, then:
 *  - decode mode: the stream, decoded FPDU after FPDU as a receiver
 *    would, the position advancing by what each consumed;
 *  - encode mode: a ULPDU length (2 octets) and octets repeated to fill
 *    it; the FPDU is encoded, checked octet by octet, decoded back, and
 *    decoded again with one bit flipped.
 */
#include "fuzz.h"
#include "wire/mpa.h"

#define SENTINEL 0xa5

struct ref_result {
	uiw_err_t err;
	size_t used;
	uint16_t n;
};

/* The reference receiver: RFC 5044 §4 and the order of checks mpa.h
 * documents.  m is scratch. */
FZ_REF
static struct ref_result ref_decode(const uint8_t *buf, size_t len,
				    uint64_t pos, bool markers, bool crc,
				    size_t cap, struct ref_map *m,
				    uint8_t *ulpdu)
{
	struct ref_result res = { UIW_OK, 0, 0 };
	struct ref_fpdu r;
	size_t lo = 0, o, u = 0;
	uint16_t n;

	if (markers && (pos & 3)) {
		res.err = UIW_E_MPA_MARKER;
		return res;
	}
	if (markers && pos % 512 == 0)
		lo = 4;
	if (len < lo + 2)
		return res;
	n = ref_be16(buf + lo);
	if (n > cap) {
		res.err = UIW_E_MPA_MARKER;
		return res;
	}
	ref_fpdu(pos, n, markers, &r);
	if (!r.ok) {
		res.err = UIW_E_MPA_MARKER;
		return res;
	}
	if (len < r.fpdu_len)
		return res;
	FZ_CHECK(ref_walk(pos, n, markers, m->kind, m->ptr, REF_FPDU_MAX) ==
		 r.fpdu_len, "model and walk disagree on fpdu_len %u",
		 r.fpdu_len);
	if (crc && ref_crc32c(buf, r.fpdu_len - 4u) !=
		   ref_le32(buf + r.fpdu_len - 4u)) {
		res.err = UIW_E_MPA_CRC;
		return res;
	}
	for (o = 0; o < r.fpdu_len; o++) {
		if (m->kind[o] == REF_K_MARKER) {
			/* the first octet of a marker (RFC 5044 §4.2: the
			 * two low FPDUPTR bits count as zero) */
			if ((ref_be16(buf + o + 2) & 0xfffcu) != m->ptr[o]) {
				res.err = UIW_E_MPA_MARKER;
				return res;
			}
			o += 3;
		} else if (m->kind[o] == REF_K_ULPDU) {
			ulpdu[u++] = buf[o];
		}
	}
	FZ_CHECK(u == n, "walk found %zu ULPDU octets, want %u", u, n);
	res.used = r.fpdu_len;
	res.n = n;
	return res;
}

/* Runs the codec on an exact copy of buf[0..len) and compares with the
 * reference.  On success the ULPDU is left in *out (n octets). */
static struct ref_result check_decode(const uint8_t *src, size_t len,
				      uint64_t pos, bool markers, bool crc,
				      size_t cap, uint8_t **out)
{
	uint8_t *buf = fz_dup(src, len);
	uint8_t *got = fz_alloc(cap), *want = fz_alloc(cap);
	static struct ref_map m;
	struct ref_result ref;
	uiw_err_t err;
	uint16_t n = 0xbeef;
	size_t used = 0xdead;

	memset(got, SENTINEL, cap);
	err = uiw_mpa_fpdu_decode(buf, len, pos, markers, crc, got, cap, &n,
				  &used);
	ref = ref_decode(buf, len, pos, markers, crc, cap, &m, want);
	FZ_CHECK(err == ref.err && used == ref.used,
		 "pos %llu len %zu markers %d crc %d cap %zu: got err %#x "
		 "used %zu, reference err %#x used %zu",
		 (unsigned long long)pos, len, markers, crc, cap, err, used,
		 ref.err, ref.used);
	FZ_CHECK(used <= len, "consumed %zu of %zu", used, len);
	if (err != UIW_OK || used == 0) {
		FZ_CHECK(n == 0, "ulpdu_len %u without an FPDU", n);
	} else {
		FZ_CHECK(n == ref.n, "ulpdu_len %u, reference %u", n, ref.n);
		FZ_CHECK(!memcmp(got, want, n), "ULPDU differs (n %u)", n);
		FZ_CHECK(fz_all(got + n, cap - n, SENTINEL),
			 "ULPDU buffer written past ulpdu_len %u", n);
	}
	free(buf);
	free(want);
	if (out && err == UIW_OK && used)
		*out = got;
	else
		free(got);
	return ref;
}

/* The FPDU as uiw_mpa_fpdu_encode must write it, built by the walk. */
FZ_REF
static uint8_t *ref_encode(uint64_t pos, const uint8_t *u, uint16_t n,
			   bool markers, bool crc, uint32_t flen)
{
	static struct ref_map m;
	uint8_t *b = fz_alloc(flen), *kind = m.kind;
	uint32_t *ptr = m.ptr;
	uint32_t o, k = 0;

	FZ_CHECK(ref_walk(pos, n, markers, kind, ptr, REF_FPDU_MAX) == flen,
		 "walk length differs from %u", flen);
	for (o = 0; o < flen; o++) {
		switch (kind[o]) {
		case REF_K_MARKER:
			b[o] = b[o + 1] = 0;
			ref_put_be16(b + o + 2, (uint16_t)ptr[o]);
			o += 3;
			break;
		case REF_K_LEN:
			ref_put_be16(b + o, n);
			o++;
			break;
		case REF_K_ULPDU:
			b[o] = u[k++];
			break;
		case REF_K_PAD:
			b[o] = 0;
			break;
		case REF_K_CRC: {
			uint32_t c = crc ? ref_crc32c(b, o) : 0;

			b[o] = (uint8_t)c;
			b[o + 1] = (uint8_t)(c >> 8);
			b[o + 2] = (uint8_t)(c >> 16);
			b[o + 3] = (uint8_t)(c >> 24);
			o += 3;
			break;
		}
		}
	}
	return b;
}

/* Encodes n octets of u and checks the octets against ref_encode; returns
 * the FPDU (fpdu_len octets) or NULL when no such FPDU exists. */
static uint8_t *check_encode(uint64_t pos, const uint8_t *u, uint16_t n,
			     bool markers, bool crc, uint32_t *flen)
{
	struct ref_fpdu r;
	uint8_t *b, *want, *ucopy = fz_dup(u, n);
	size_t w;

	ref_fpdu(pos, n, markers, &r);
	if (!r.ok) {
		/* room for any FPDU: 65535 + 10 octets and 129 markers */
		b = fz_alloc(0x11000);
		FZ_CHECK(uiw_mpa_fpdu_encode(b, 0x11000, pos, ucopy, n,
					     markers, crc) == 0,
			 "encoded an FPDU that cannot exist (pos %llu n %u)",
			 (unsigned long long)pos, n);
		free(b);
		free(ucopy);
		return NULL;
	}
	*flen = r.fpdu_len;
	b = fz_alloc(r.fpdu_len);
	if (r.fpdu_len > 4) {
		FZ_CHECK(uiw_mpa_fpdu_encode(b, r.fpdu_len - 1, pos, ucopy, n,
					     markers, crc) == 0,
			 "encoded %u octets into %u", r.fpdu_len,
			 r.fpdu_len - 1);
	}
	w = uiw_mpa_fpdu_encode(b, r.fpdu_len, pos, ucopy, n, markers, crc);
	FZ_CHECK(w == r.fpdu_len, "encode wrote %zu, model %u", w,
		 r.fpdu_len);
	want = ref_encode(pos, ucopy, n, markers, crc, r.fpdu_len);
	w = fz_diff(b, want, r.fpdu_len);
	FZ_CHECK(w == r.fpdu_len, "pos %llu n %u markers %d crc %d: "
		 "octet %zu is %#x, want %#x", (unsigned long long)pos, n,
		 markers, crc, w, b[w], want[w]);
	free(want);
	free(ucopy);
	return b;
}

/* What uiw_mpa_fpdu_encode writes for the FPDU a receiver accepted as
 * fpdu: the octets the receiver ignores made what a sender writes (pad
 * and marker reserved half zero, low FPDUPTR bits zero, a zero CRC field
 * with CRC off); with CRC on, the CRC of those octets. */
FZ_REF
static void ref_canonical(uint8_t *fpdu, const uint8_t *kind,
			  uint32_t flen, bool crc)
{
	bool changed = false;
	uint32_t o;

	for (o = 0; o < flen; o++) {
		uint8_t c = fpdu[o];

		/* markers start at offsets that are multiples of 4 (pos is
		 * one when markers are on): o % 4 < 2 is the reserved half */
		if (kind[o] == REF_K_PAD ||
		    (kind[o] == REF_K_CRC && !crc) ||
		    (kind[o] == REF_K_MARKER && o % 4 < 2))
			c = 0;
		if (kind[o] == REF_K_MARKER && o % 4 == 3)
			c &= 0xfc;
		changed |= c != fpdu[o] && kind[o] != REF_K_CRC;
		fpdu[o] = c;
	}
	if (crc && changed) {
		uint32_t c = ref_crc32c(fpdu, flen - 4u);

		fpdu[flen - 4] = (uint8_t)c;
		fpdu[flen - 3] = (uint8_t)(c >> 8);
		fpdu[flen - 2] = (uint8_t)(c >> 16);
		fpdu[flen - 1] = (uint8_t)(c >> 24);
	}
}

/* A decoded FPDU: re-encoding gives the input with what the receiver
 * ignores made canonical, and every shorter prefix asks for more. */
static void check_decoded(const uint8_t *buf, uint32_t flen, uint64_t pos,
			  bool markers, bool crc, const uint8_t *u, uint16_t n,
			  uint16_t sel)
{
	static struct ref_map m;
	uint8_t *canon = fz_dup(buf, flen), *kind = m.kind;
	uint8_t *re, *again = NULL;
	uint32_t o, elen = 0;
	struct ref_result res;
	size_t plen[2];

	ref_walk(pos, n, markers, kind, m.ptr, REF_FPDU_MAX);
	ref_canonical(canon, kind, flen, crc);
	re = check_encode(pos, u, n, markers, crc, &elen);
	FZ_CHECK(re && elen == flen, "decoded FPDU of %u octets re-encodes "
		 "to %u", flen, elen);
	o = (uint32_t)fz_diff(re, canon, flen);
	FZ_CHECK(o == flen, "round trip: octet %u (kind %u) is %#x, want "
		 "%#x", o, kind[o], re[o], canon[o]);
	/* the re-encoded FPDU decodes to the same ULPDU */
	res = check_decode(re, flen, pos, markers, crc, n, &again);
	FZ_CHECK(res.err == UIW_OK && res.used == flen && res.n == n &&
		 !memcmp(again, u, n), "re-encoded FPDU does not decode");
	free(again);
	/* prefixes: the longest one and one picked by the input */
	plen[0] = flen - 1u;
	plen[1] = sel % flen;
	for (o = 0; o < 2; o++) {
		res = check_decode(buf, plen[o], pos, markers, crc, n, NULL);
		FZ_CHECK(res.err == UIW_OK && res.used == 0,
			 "prefix of %zu of an FPDU of %u: err %#x used %zu",
			 plen[o], flen, res.err, res.used);
	}
	free(re);
	free(canon);
}

static void decode_stream(const uint8_t *s, size_t len, uint64_t pos,
			  bool markers, bool crc, size_t cap, uint16_t sel)
{
	size_t off = 0;

	while (off < len) {
		uint8_t *u = NULL;
		struct ref_result r = check_decode(s + off, len - off, pos,
						   markers, crc, cap, &u);

		if (r.err != UIW_OK || r.used == 0)
			break;
		check_decoded(s + off, (uint32_t)r.used, pos, markers, crc, u,
			      r.n, sel);
		free(u);
		off += r.used;
		pos += r.used;
	}
}

static void encode_mode(struct fz *in, uint8_t fl, uint64_t pos,
			bool markers, bool crc, size_t cap, uint16_t sel)
{
	/* mostly short ULPDUs; long ones (up to 129 markers) when asked */
	uint16_t n = (fl & 0x30) == 0x30 ? fz_u16(in) : fz_u16(in) % 1024u;
	static struct ref_map m;
	uint8_t *u = fz_alloc(n), *b, *got = NULL, *kind = m.kind;
	uint32_t flen, bit;
	struct ref_result r;

	fz_fill(u, n, in->p, in->n);
	b = check_encode(pos, u, n, markers, crc, &flen);
	if (!b) {
		free(u);
		return;
	}
	/* decodes back whole, with a receiver capacity of exactly n */
	r = check_decode(b, flen, pos, markers, crc, n, &got);
	FZ_CHECK(r.err == UIW_OK && r.used == flen && r.n == n &&
		 !memcmp(got, u, n), "encoded FPDU (n %u) does not decode", n);
	free(got);
	got = NULL;
	check_decoded(b, flen, pos, markers, crc, u, n, sel);
	/* ... and is refused by a receiver that takes one octet less */
	if (n) {
		r = check_decode(b, flen, pos, markers, crc, n - 1u, NULL);
		FZ_CHECK(r.err == UIW_E_MPA_MARKER, "ULPDU of %u accepted "
			 "with capacity %u", n, n - 1u);
	}
	/* the receiver's capacity from the input, too */
	check_decode(b, flen, pos, markers, crc, cap, NULL);

	/* one bit flipped: RFC 5044 §4.4, CRC32c catches every single-bit
	 * error in the octets it covers, which is all of them, markers
	 * included; only a changed ULPDU_Length changes the layout. */
	ref_walk(pos, n, markers, kind, m.ptr, REF_FPDU_MAX);
	bit = (uint32_t)(sel ^ (uint32_t)in->n * 0x9e37u) % (flen * 8u);
	b[bit / 8] ^= (uint8_t)(1u << (bit % 8));
	r = check_decode(b, flen, pos, markers, crc, 0xffff, &got);
	if (kind[bit / 8] != REF_K_LEN) {
		uint32_t o = bit / 8;

		if (crc) {
			FZ_CHECK(r.err == UIW_E_MPA_CRC, "bit %u (kind %u) "
				 "flipped, CRC on: err %#x", bit, kind[o],
				 r.err);
		} else if (kind[o] == REF_K_MARKER && o % 4 >= 2 &&
			   !(o % 4 == 3 && bit % 8 < 2)) {
			FZ_CHECK(r.err == UIW_E_MPA_MARKER, "FPDUPTR bit %u "
				 "flipped: err %#x", bit, r.err);
		} else {
			FZ_CHECK(r.err == UIW_OK && r.used == flen,
				 "bit %u (kind %u) flipped, CRC off: err %#x",
				 bit, kind[o], r.err);
			FZ_CHECK(kind[o] == REF_K_ULPDU ?
				 memcmp(got, u, n) != 0 :
				 memcmp(got, u, n) == 0,
				 "bit %u (kind %u) flipped: ULPDU %s",
				 bit, kind[o], kind[o] == REF_K_ULPDU ?
				 "unchanged" : "changed");
		}
	}
	free(got);
	free(b);
	free(u);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz in = { data, size };
	uint8_t fl = fz_u8(&in);
	bool markers = fl & 0x01, crc = fl & 0x02;
	uint64_t pos = fz_u64(&in);
	size_t cap = fz_u16(&in);
	uint16_t sel = fz_u16(&in);

	if (fl & 0x08)
		pos &= ~(uint64_t)3;
	if (fl & 0x04)
		encode_mode(&in, fl, pos, markers, crc, cap, sel);
	else
		decode_stream(in.p, in.n, pos, markers, crc, cap, sel);
	return 0;
}
