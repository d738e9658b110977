/*
 * uiw_mpa_layout: the FPDU layout with markers (RFC 5044 §4.1-§4.4),
 * compared with the closed-form model of fuzz.h.
 *
 * uiw_mpa_mulpdu (RFC 5044 §4.5) too: the formula, and that an FPDU of
 * MULPDU octets fits in the EMSS wherever it starts.
 *
 * Input: flags (0x01 markers, 0x02 a 32-bit ULPDU length instead of a
 * 16-bit one, 0x04 round the position down to a multiple of 4), the
 * stream position (8 octets), the ULPDU length (2 or 4 octets), an
 * octet that picks the piece capacity offered, and an EMSS (4 octets).
 */
#include "fuzz.h"
#include "wire/mpa.h"

/* Checks the pieces against the model, piece by piece in stream order. */
static void check_pieces(uint64_t pos, uint32_t n, bool markers,
			 const struct uiw_mpa_piece *p, unsigned cnt,
			 uint32_t flen, const struct ref_fpdu *r)
{
	/* which of LEN, ULPDU, PAD, CRC comes next */
	enum { S_LEN, S_ULPDU, S_PAD, S_CRC, S_END } st = S_LEN;
	uint64_t s = pos;          /* stream position of the piece */
	uint32_t off = 0, sum = 0, nmark = 0, k = 0;
	unsigned i;
	bool prev_marker = false;

	FZ_CHECK(cnt == r->npieces, "pos %llu n %u: %u pieces, model %u",
		 (unsigned long long)pos, n, cnt, r->npieces);
	FZ_CHECK(flen == r->fpdu_len, "pos %llu n %u: fpdu_len %u, model %u",
		 (unsigned long long)pos, n, flen, r->fpdu_len);
	FZ_CHECK(flen % 4 == 0, "fpdu_len %u not a multiple of 4", flen);
	FZ_CHECK(cnt <= UIW_MPA_MAX_PIECES(n),
		 "n %u: %u pieces above UIW_MPA_MAX_PIECES %u", n, cnt,
		 (unsigned)UIW_MPA_MAX_PIECES(n));
	for (i = 0; i < cnt; i++) {
		const struct uiw_mpa_piece *q = &p[i];
		uint32_t in_blk = (uint32_t)(s % 512u);

		FZ_CHECK(q->len != 0, "piece %u (kind %u) has length 0", i,
			 q->kind);
		FZ_CHECK(st != S_END, "piece %u after the CRC", i);
		if (q->kind == UIW_MPA_P_MARKER) {
			uint64_t want_s = pos + r->lead + 512u * (uint64_t)k;
			uint32_t want_ptr = (r->lead + 512u * k) == 0 ? 0 :
					    r->lead + 512u * k - r->hdr_off;

			FZ_CHECK(markers, "marker piece %u without markers", i);
			FZ_CHECK(q->len == 4, "marker piece %u len %u", i,
				 q->len);
			FZ_CHECK(in_blk == 0, "marker piece %u at stream %llu",
				 i, (unsigned long long)s);
			FZ_CHECK(s == want_s, "marker %u at %llu, model %llu",
				 k, (unsigned long long)s,
				 (unsigned long long)want_s);
			FZ_CHECK(q->fpduptr == want_ptr,
				 "marker %u FPDUPTR %u, model %u", k,
				 q->fpduptr, want_ptr);
			FZ_CHECK(!prev_marker, "two markers in a row at %u", i);
			FZ_CHECK(i == 0 || st != S_LEN,
				 "marker %u inside LEN", i);
			nmark++;
			k++;
			prev_marker = true;
			s += 4;
			sum += 4;
			continue;
		}
		/* a boundary at s is preceded by its marker; none inside */
		if (markers) {
			FZ_CHECK(in_blk != 0 || prev_marker,
				 "piece %u at boundary %llu has no marker", i,
				 (unsigned long long)s);
			FZ_CHECK(in_blk + q->len <= 512,
				 "piece %u (kind %u) at %llu len %u spans a "
				 "marker boundary", i, q->kind,
				 (unsigned long long)s, q->len);
		}
		prev_marker = false;
		switch (q->kind) {
		case UIW_MPA_P_LEN:
			FZ_CHECK(st == S_LEN, "LEN piece %u out of order", i);
			FZ_CHECK(q->len == 2, "LEN piece len %u", q->len);
			FZ_CHECK(s - pos == r->hdr_off, "LEN at offset %llu",
				 (unsigned long long)(s - pos));
			st = S_ULPDU;
			break;
		case UIW_MPA_P_ULPDU:
			FZ_CHECK(st == S_ULPDU, "ULPDU piece %u out of order",
				 i);
			FZ_CHECK(q->off == off,
				 "ULPDU piece %u off %u, want %u", i, q->off,
				 off);
			FZ_CHECK(q->len <= n - off, "ULPDU piece %u past n", i);
			off += q->len;
			break;
		case UIW_MPA_P_PAD:
			FZ_CHECK(st == S_ULPDU, "PAD piece %u out of order", i);
			FZ_CHECK(off == n, "PAD before the ULPDU ended");
			FZ_CHECK(q->len == r->pad &&
				 q->len == uiw_mpa_pad_len(n),
				 "PAD len %u, want %u", q->len, r->pad);
			st = S_CRC;
			break;
		case UIW_MPA_P_CRC:
			FZ_CHECK(st == S_ULPDU || st == S_CRC,
				 "CRC piece %u out of order", i);
			FZ_CHECK(off == n, "CRC before the ULPDU ended");
			FZ_CHECK(q->len == 4, "CRC len %u", q->len);
			FZ_CHECK(r->pad == 0 || st == S_CRC, "PAD missing");
			st = S_END;
			break;
		default:
			FZ_CHECK(0, "piece %u has unknown kind %u", i, q->kind);
		}
		s += q->len;
		sum += q->len;
	}
	FZ_CHECK(st == S_END, "no CRC piece at the end");
	FZ_CHECK(sum == flen, "pieces sum to %u, fpdu_len %u", sum, flen);
	FZ_CHECK(nmark == r->nmarkers, "%u markers, model %u", nmark,
		 r->nmarkers);
	/* RFC 5044 §4.3: after the FPDU the next boundary is not passed */
	FZ_CHECK(!markers || (s - pos) - 4u * nmark == r->content,
		 "content %llu, model %u",
		 (unsigned long long)((s - pos) - 4u * nmark), r->content);
}

static unsigned run(uint64_t pos, uint32_t n, bool markers, unsigned max,
		    uint32_t *flen)
{
	struct uiw_mpa_piece *p = malloc(max * sizeof(*p) + !max);
	unsigned cnt;

	FZ_CHECK(p, "out of memory");
	*flen = 0xdeadbeef;
	cnt = uiw_mpa_layout(pos, n, markers, p, max, flen);
	FZ_CHECK(cnt <= max, "%u pieces written with room for %u", cnt, max);
	if (cnt) {
		struct ref_fpdu r;

		ref_fpdu(pos, n, markers, &r);
		check_pieces(pos, n, markers, p, cnt, *flen, &r);
	}
	free(p);
	return cnt;
}

/* RFC 5044 §4.5: MULPDU is EMSS - (6 + EMSS mod 4), less 4 octets per
 * marker an EMSS can hold with markers, never below 128; an FPDU of
 * MULPDU octets then fits in the EMSS at every stream position. */
static void check_mulpdu(uint32_t emss, uint64_t pos, bool markers)
{
	uint32_t e = emss > 0xffffu ? 0xffffu : emss;
	uint32_t over = 6u + e % 4u + (markers ? 4u * ((e + 511u) / 512u) : 0);
	uint32_t want = e > over ? e - over : 0, m;
	struct ref_fpdu r;

	m = uiw_mpa_mulpdu(emss, markers);
	FZ_CHECK(m == (want > 128u ? want : 128u),
		 "mulpdu(%u, markers %d) = %u, want %u", emss, markers, m,
		 want > 128u ? want : 128u);
	if (markers)
		pos &= ~(uint64_t)3;
	ref_fpdu(pos, m, markers, &r);
	FZ_CHECK(r.ok, "no FPDU of MULPDU %u at pos %llu", m,
		 (unsigned long long)pos);
	FZ_CHECK(want < 128u || r.fpdu_len <= e,
		 "FPDU of MULPDU %u at pos %llu is %u octets, EMSS %u", m,
		 (unsigned long long)pos, r.fpdu_len, emss);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz in = { data, size };
	uint8_t fl = fz_u8(&in);
	bool markers = fl & 0x01;
	uint64_t pos = fz_u64(&in);
	uint32_t n = (fl & 0x02) ? fz_u32(&in) : fz_u16(&in);
	uint8_t pick = fz_u8(&in);
	struct ref_fpdu r;
	uint32_t flen;
	unsigned cnt, bound, max;

	if (fl & 0x04)
		pos &= ~(uint64_t)3;
	check_mulpdu(fz_u32(&in), pos, markers);
	ref_fpdu(pos, n, markers, &r);
	bound = n <= 0xffffu ? UIW_MPA_MAX_PIECES(n) : 16;

	/* with the documented bound: succeeds exactly when the model can */
	cnt = run(pos, n, markers, bound, &flen);
	FZ_CHECK(!!cnt == r.ok, "pos %llu n %u markers %d: %u pieces but "
		 "model ok=%d (max FPDUPTR %u)", (unsigned long long)pos, n,
		 markers, cnt, r.ok, r.max_ptr);
	if (!cnt)
		return 0;
	/* exactly enough room works, one less does not */
	FZ_CHECK(run(pos, n, markers, cnt, &flen) == cnt,
		 "exact room of %u pieces refused", cnt);
	FZ_CHECK(run(pos, n, markers, cnt - 1, &flen) == 0,
		 "%u pieces reported with room for %u", cnt, cnt - 1);
	/* a capacity picked by the input */
	max = pick % (bound + 1u);
	FZ_CHECK(run(pos, n, markers, max, &flen) ==
		 (max >= cnt ? cnt : 0), "room %u of %u", max, cnt);
	/* no array: nothing to write to */
	FZ_CHECK(uiw_mpa_layout(pos, n, markers, NULL, bound, &flen) == 0,
		 "pieces reported without an array");
	return 0;
}
