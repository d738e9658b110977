/*
 * Shared pieces of the libFuzzer targets in tests/fuzz/: a reader that
 * takes fields from the fuzz input, a check that aborts with a message
 * (so that libFuzzer saves the input), exact-size copies (so that
 * AddressSanitizer sees any access past a length), and reference models
 * of the wire formats written from the RFCs, independently of
 * src/wire/, that the targets compare the codecs against.
 */
#ifndef UIW_FUZZ_H
#define UIW_FUZZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Every target defines this; declared here for -Wmissing-prototypes. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* An invariant: on failure print what and where, then abort. */
#define FZ_CHECK(cond, ...)						\
	do {								\
		if (!(cond)) {						\
			fprintf(stderr, "\n%s:%d: invariant violated: %s\n  ", \
				__FILE__, __LINE__, #cond);		\
			fprintf(stderr, __VA_ARGS__);			\
			fputc('\n', stderr);				\
			abort();					\
		}							\
	} while (0)

/* Reference code is not what is being fuzzed: keep libFuzzer's coverage
 * and comparison tracing out of its loops (they would only slow it). */
#define FZ_REF __attribute__((no_sanitize("coverage"), noinline, unused))

/* ---- Input reader: fields in order, zero once the input runs out ---- */

struct fz {
	const uint8_t *p;
	size_t n;
};

static inline uint8_t fz_u8(struct fz *f)
{
	if (!f->n)
		return 0;
	f->n--;
	return *f->p++;
}

static inline uint16_t fz_u16(struct fz *f)
{
	uint16_t v = fz_u8(f);

	return (uint16_t)(v << 8 | fz_u8(f));
}

static inline uint32_t fz_u32(struct fz *f)
{
	uint32_t v = fz_u16(f);

	return v << 16 | fz_u16(f);
}

static inline uint64_t fz_u64(struct fz *f)
{
	uint64_t v = fz_u32(f);

	return v << 32 | fz_u32(f);
}

/* A heap copy of exactly n octets (malloc(0) when n is 0): the codec
 * under test gets a buffer that ends where its length says. */
static inline uint8_t *fz_dup(const void *p, size_t n)
{
	uint8_t *q = malloc(n);

	FZ_CHECK(q || !n, "out of memory (%zu octets)", n);
	if (n)
		memcpy(q, p, n);
	return q;
}

/* True when p[0..n) all hold v. */
FZ_REF
static bool fz_all(const uint8_t *p, size_t n, uint8_t v)
{
	while (n--)
		if (*p++ != v)
			return false;
	return true;
}

/* Index of the first octet where a and b differ, n when none does. */
FZ_REF
static size_t fz_diff(const uint8_t *a, const uint8_t *b, size_t n)
{
	size_t i;

	for (i = 0; i < n && a[i] == b[i]; i++)
		;
	return i;
}

/* Fills out[0..n) with src[0..len) repeated (zeros when len is 0). */
FZ_REF
static void fz_fill(uint8_t *out, size_t n, const uint8_t *src,
		    size_t len)
{
	size_t i;

	for (i = 0; i < n; i++)
		out[i] = len ? src[i % len] : 0;
}

static inline uint8_t *fz_alloc(size_t n)
{
	uint8_t *q = malloc(n);

	FZ_CHECK(q || !n, "out of memory (%zu octets)", n);
	return q;
}

/* ---- Octet order (network order, RFC 5040/5041/5044) ---------------- */

static inline uint16_t ref_be16(const uint8_t *p)
{
	return (uint16_t)((unsigned)p[0] << 8 | p[1]);
}

static inline uint32_t ref_be32(const uint8_t *p)
{
	return (uint32_t)ref_be16(p) << 16 | ref_be16(p + 2);
}

static inline uint64_t ref_be64(const uint8_t *p)
{
	return (uint64_t)ref_be32(p) << 32 | ref_be32(p + 4);
}

static inline void ref_put_be16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

/* ---- CRC32c: reflected polynomial 0x82f63b78 (RFC 3720 §12.1) ------- */

FZ_REF
static uint32_t ref_crc32c_update(uint32_t c, const uint8_t *p,
				  size_t n)
{
	static uint32_t tab[256];
	static bool ready;
	unsigned i, k;

	if (!ready) {
		for (i = 0; i < 256; i++) {
			uint32_t r = i;

			for (k = 0; k < 8; k++)
				r = (r & 1) ? (r >> 1) ^ 0x82f63b78u : r >> 1;
			tab[i] = r;
		}
		ready = true;
	}
	while (n--)
		c = tab[(c ^ *p++) & 0xff] ^ (c >> 8);
	return c;
}

static inline uint32_t ref_crc32c(const uint8_t *p, size_t n)
{
	return ~ref_crc32c_update(0xffffffffu, p, n);
}

/* The CRC field on the wire: least significant octet first. */
static inline uint32_t ref_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

/* ---- MPA FPDU layout (RFC 5044 §4.1-§4.4), in closed form ----------- */

#define REF_MARKER_INTERVAL 512u

/*
 * The FPDU of n ULPDU octets at stream position pos.  content is what
 * MPA puts in the stream apart from markers: ULPDU_Length (2), the
 * ULPDU, pad to a multiple of 4, CRC (4).  With markers, stream octet
 * b with b % 512 == 0 holds a marker whenever a content octet of this
 * FPDU follows it; before boundary k (counting from the first boundary
 * at or after pos) lie lead + 508 k content octets, where lead is the
 * distance from pos to that boundary.  FPDUPTR is 0 for a marker at
 * pos itself (it sits between FPDUs) and otherwise the distance back
 * to the ULPDU_Length field, which must fit in 16 bits.
 */
struct ref_fpdu {
	bool ok;            /* such an FPDU can exist */
	unsigned pad;
	uint32_t content;   /* octets other than markers */
	uint32_t nmarkers;
	uint32_t fpdu_len;  /* content + 4 * nmarkers */
	uint32_t lead;      /* octets from pos to the first boundary */
	uint32_t hdr_off;   /* offset of ULPDU_Length within the FPDU */
	uint32_t max_ptr;   /* largest FPDUPTR */
	unsigned npieces;   /* pieces uiw_mpa_layout must report */
};

FZ_REF
static void ref_fpdu(uint64_t pos, uint32_t n, bool markers,
		     struct ref_fpdu *r)
{
	uint32_t k, c;

	memset(r, 0, sizeof(*r));
	if (n > 0xffffu || (markers && (pos & 3)))
		return;
	r->pad = (4u - (n + 2u) % 4u) % 4u;
	r->content = 2u + n + r->pad + 4u;
	if (markers) {
		r->lead = (uint32_t)((REF_MARKER_INTERVAL -
				      pos % REF_MARKER_INTERVAL) %
				     REF_MARKER_INTERVAL);
		if (r->lead < r->content)
			r->nmarkers = (r->content - 1u - r->lead) / 508u + 1u;
		r->hdr_off = r->lead == 0 ? 4u : 0u;
	}
	r->fpdu_len = r->content + 4u * r->nmarkers;
	if (r->nmarkers) {
		uint32_t last = r->lead + 512u * (r->nmarkers - 1u);

		r->max_ptr = last == 0 ? 0 : last - r->hdr_off;
	}
	r->ok = r->max_ptr <= 0xffffu;
	/* LEN, one ULPDU piece per run between markers, PAD, CRC */
	r->npieces = r->nmarkers + 2u + (r->pad ? 1u : 0u);
	if (n) {
		r->npieces++;
		for (k = 0; k < r->nmarkers; k++) {
			c = r->lead + 508u * k;
			if (c > 2u && c < 2u + n)
				r->npieces++;
		}
	}
}

/* Room for the largest FPDU: 65535 + 10 octets and 129 markers. */
#define REF_FPDU_MAX 0x11000u

/* What each octet of an FPDU is, found by walking the stream one octet
 * at a time (the definition the closed form above must agree with). */
enum { REF_K_MARKER, REF_K_LEN, REF_K_ULPDU, REF_K_PAD, REF_K_CRC };

/* Fills kind[0..fpdu_len) and, for marker octets, the FPDUPTR expected
 * in ptr[] (indexed by the marker's first octet); returns the FPDU
 * length the walk found.  A map of one FPDU: */
struct ref_map {
	uint8_t kind[REF_FPDU_MAX];
	uint32_t ptr[REF_FPDU_MAX];
};

FZ_REF
static uint32_t ref_walk(uint64_t pos, uint32_t n, bool markers,
			 uint8_t *kind, uint32_t *ptr, uint32_t cap)
{
	uint32_t pad = (4u - (n + 2u) % 4u) % 4u;
	uint32_t content = 2u + n + pad + 4u, c = 0, o = 0, hdr = 0, i;
	bool hdr_seen = false;

	while (c < content) {
		if (markers && (pos + o) % REF_MARKER_INTERVAL == 0) {
			FZ_CHECK(o + 4u <= cap, "walk overflow %u", o);
			for (i = 0; i < 4; i++)
				kind[o + i] = REF_K_MARKER;
			ptr[o] = o == 0 ? 0 : o - hdr;
			o += 4;
			continue;
		}
		FZ_CHECK(o < cap, "walk overflow %u", o);
		if (!hdr_seen) {
			hdr = o;
			hdr_seen = true;
		}
		kind[o] = c < 2 ? REF_K_LEN : c < 2 + n ? REF_K_ULPDU :
			  c < 2 + n + pad ? REF_K_PAD : REF_K_CRC;
		o++;
		c++;
	}
	return o;
}

#endif
