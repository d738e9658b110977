/*
 * MPA codecs (RFC 5044, RFC 6581): startup frames, the enhanced
 * connection establishment data, the FPDU layout with markers, the copy
 * codecs built on that layout, and MULPDU.
 */
#include "mpa.h"

#include <string.h>
#include "crc32c.h"

/* RFC 5044 §7.1.1: "MPA ID Req Frame" and "MPA ID Rep Frame" */
const uint8_t uiw_mpa_key_req[UIW_MPA_KEY_LEN] = {
	0x4d, 0x50, 0x41, 0x20, 0x49, 0x44, 0x20, 0x52,
	0x65, 0x71, 0x20, 0x46, 0x72, 0x61, 0x6d, 0x65,
};
const uint8_t uiw_mpa_key_rep[UIW_MPA_KEY_LEN] = {
	0x4d, 0x50, 0x41, 0x20, 0x49, 0x44, 0x20, 0x52,
	0x65, 0x70, 0x20, 0x46, 0x72, 0x61, 0x6d, 0x65,
};

static inline void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static inline uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

/* ---- Startup frames ------------------------------------------------ */

size_t uiw_mpa_frame_encode(uint8_t *buf, size_t cap,
			    const struct uiw_mpa_frame *f)
{
	size_t n;

	if (f->pd_len > UIW_MPA_PD_MAX || (f->pd_len && !f->pd))
		return 0;
	n = UIW_MPA_HDR_LEN + (size_t)f->pd_len;
	if (!buf || cap < n)
		return 0;
	memcpy(buf, f->reply ? uiw_mpa_key_rep : uiw_mpa_key_req,
	       UIW_MPA_KEY_LEN);
	buf[16] = f->flags;
	buf[17] = f->rev;
	put16(buf + 18, f->pd_len);
	if (f->pd_len)
		memcpy(buf + UIW_MPA_HDR_LEN, f->pd, f->pd_len);
	return n;
}

uiw_err_t uiw_mpa_frame_decode(const uint8_t *buf, size_t len,
			       bool expect_reply, struct uiw_mpa_frame *f,
			       size_t *consumed)
{
	const uint8_t *key = expect_reply ? uiw_mpa_key_rep : uiw_mpa_key_req;
	size_t k = len < UIW_MPA_KEY_LEN ? len : UIW_MPA_KEY_LEN;

	*consumed = 0;
	/* RFC 5044 §7.1.1: any other key closes the connection; a wrong
	 * octet is refused as soon as it is seen. */
	if (k && memcmp(buf, key, k) != 0)
		return UIW_E_MPA_INVALID_FRAME;
	if (len < UIW_MPA_HDR_LEN)
		return UIW_OK;
	f->reply = expect_reply;
	f->flags = buf[16];
	f->rev = buf[17];
	f->pd_len = get16(buf + 18);
	f->pd = NULL;
	/* RFC 5044 §7.1.1 PD_Length: more than 512 octets is an error */
	if (f->pd_len > UIW_MPA_PD_MAX)
		return UIW_E_MPA_INVALID_FRAME;
	if (len - UIW_MPA_HDR_LEN < f->pd_len)
		return UIW_OK;
	if (f->pd_len)
		f->pd = buf + UIW_MPA_HDR_LEN;
	*consumed = UIW_MPA_HDR_LEN + (size_t)f->pd_len;
	return UIW_OK;
}

/* ---- RFC 6581 §9 enhanced connection establishment data ------------- */

void uiw_mpa_v2_encode(uint8_t out[UIW_MPA_V2_LEN], const struct uiw_mpa_v2 *v)
{
	const uint16_t max = UIW_MPA_V2_IRD_MAX;
	uint16_t ird = v->ird < max ? v->ird : max;
	uint16_t ord = v->ord < max ? v->ord : max;

	if (v->p2p) {
		ird |= UIW_MPA_V2_PEER2PEER;
		/* RFC 6581 §9.2: B, C and D only with A */
		if (v->rtr_send)
			ird |= UIW_MPA_V2_RTR_SEND;
		if (v->rtr_write)
			ord |= UIW_MPA_V2_RTR_WRITE;
		if (v->rtr_read)
			ord |= UIW_MPA_V2_RTR_READ;
	}
	put16(out, ird);
	put16(out + 2, ord);
}

void uiw_mpa_v2_decode(const uint8_t in[UIW_MPA_V2_LEN], struct uiw_mpa_v2 *v)
{
	uint16_t hi = get16(in), lo = get16(in + 2);

	v->ird = hi & UIW_MPA_V2_IRD_MAX;
	v->ord = lo & UIW_MPA_V2_IRD_MAX;
	v->p2p = hi & UIW_MPA_V2_PEER2PEER;
	/* RFC 6581 §9.2: with A zero, B, C and D MUST be ignored */
	v->rtr_send = v->p2p && (hi & UIW_MPA_V2_RTR_SEND);
	v->rtr_write = v->p2p && (lo & UIW_MPA_V2_RTR_WRITE);
	v->rtr_read = v->p2p && (lo & UIW_MPA_V2_RTR_READ);
}

/* ---- FPDU layout ----------------------------------------------------- */

struct layout {
	struct uiw_mpa_piece *out;
	unsigned n, max;
	uint64_t pos;       /* first octet of the FPDU (its marker, if any) */
	uint64_t hdr;       /* the ULPDU_Length field */
	uint64_t s;         /* the next octet */
	bool markers;
	bool bad;
};

static void lay_put(struct layout *l, uint8_t kind, uint16_t fpduptr,
		    uint32_t off, uint32_t len)
{
	struct uiw_mpa_piece *p;

	if (l->n >= l->max) {
		l->bad = true;
		return;
	}
	p = &l->out[l->n++];
	p->kind = kind;
	p->fpduptr = fpduptr;
	p->off = off;
	p->len = len;
}

/*
 * Emits len octets of one FPDU field, putting a marker before every
 * octet that falls on a 512-octet boundary of the stream (RFC 5044 §4.3).
 * The marker before the ULPDU_Length field lies between FPDUs: FPDUPTR 0,
 * and it belongs to this FPDU.  Every other marker points back to the
 * ULPDU_Length field, including one right before the CRC field.
 * Stream positions are taken modulo 2^64, like sequence numbers.
 */
static void lay_field(struct layout *l, uint8_t kind, uint32_t len)
{
	uint32_t off = 0;

	while (len > 0 && !l->bad) {
		uint32_t run = len;

		if (l->markers) {
			uint32_t r = (uint32_t)(l->s % UIW_MPA_MARKER_INTERVAL);

			if (r == 0) {
				uint64_t d = l->s == l->pos ? 0 : l->s - l->hdr;

				if (d > 0xffff) {   /* FPDUPTR is 16 bits */
					l->bad = true;
					return;
				}
				lay_put(l, UIW_MPA_P_MARKER, (uint16_t)d, 0,
					UIW_MPA_MARKER_LEN);
				l->s += UIW_MPA_MARKER_LEN;
				r = UIW_MPA_MARKER_LEN;
			}
			if (run > UIW_MPA_MARKER_INTERVAL - r)
				run = UIW_MPA_MARKER_INTERVAL - r;
		}
		lay_put(l, kind, 0, off, run);
		l->s += run;
		off += run;
		len -= run;
	}
}

/* Without markers an FPDU is its four fields in a row: what lay_field
 * gives then, without its per-octet-run loop (every FPDU is laid out
 * several times on its way, so this is on the fast path). */
static unsigned layout_plain(uint32_t ulpdu_len, struct uiw_mpa_piece *out,
			     unsigned max, uint32_t *fpdu_len)
{
	uint32_t pad = uiw_mpa_pad_len(ulpdu_len);
	unsigned n = 0;

	/* no piece of length 0 */
	if (!out || max < 2u + (ulpdu_len > 0) + (pad > 0))
		return 0;
	out[n++] = (struct uiw_mpa_piece){ .kind = UIW_MPA_P_LEN,
					   .len = UIW_MPA_LEN_FIELD };
	if (ulpdu_len)
		out[n++] = (struct uiw_mpa_piece){ .kind = UIW_MPA_P_ULPDU,
						   .len = ulpdu_len };
	if (pad)
		out[n++] = (struct uiw_mpa_piece){ .kind = UIW_MPA_P_PAD,
						   .len = pad };
	out[n++] = (struct uiw_mpa_piece){ .kind = UIW_MPA_P_CRC,
					   .len = UIW_MPA_CRC_LEN };
	*fpdu_len = uiw_mpa_plain_len(ulpdu_len);
	return n;
}

unsigned uiw_mpa_layout(uint64_t pos, uint32_t ulpdu_len, bool markers,
			struct uiw_mpa_piece *out, unsigned max,
			uint32_t *fpdu_len)
{
	struct layout l;

	/* RFC 5044 §4.1: ULPDU_Length is 16 bits.  With markers every
	 * FPDU and marker is a multiple of 4 octets, so a stream position
	 * that is not cannot start an FPDU (and no marker may then split
	 * the length, pad or CRC fields). */
	if (ulpdu_len > 0xffff || (markers && (pos & 3)))
		return 0;
	if (!markers)
		return layout_plain(ulpdu_len, out, max, fpdu_len);
	l = (struct layout){
		.out = out, .max = out ? max : 0, .pos = pos, .s = pos,
		.markers = markers,
	};
	l.hdr = pos;
	if (markers && pos % UIW_MPA_MARKER_INTERVAL == 0)
		l.hdr += UIW_MPA_MARKER_LEN;
	lay_field(&l, UIW_MPA_P_LEN, UIW_MPA_LEN_FIELD);
	lay_field(&l, UIW_MPA_P_ULPDU, ulpdu_len);
	lay_field(&l, UIW_MPA_P_PAD, uiw_mpa_pad_len(ulpdu_len));
	lay_field(&l, UIW_MPA_P_CRC, UIW_MPA_CRC_LEN);
	if (l.bad)
		return 0;
	*fpdu_len = (uint32_t)(l.s - pos);
	return l.n;
}

/* ---- Copy codecs ----------------------------------------------------- */

#define FPDU_PIECES_MAX UIW_MPA_MAX_PIECES(0xffffu)

size_t uiw_mpa_fpdu_encode(uint8_t *buf, size_t cap, uint64_t pos,
			   const uint8_t *ulpdu, uint16_t ulpdu_len,
			   bool markers, bool crc)
{
	struct uiw_mpa_piece p[FPDU_PIECES_MAX];
	uint32_t flen;
	unsigned n, i;
	size_t at = 0;

	n = uiw_mpa_layout(pos, ulpdu_len, markers, p, FPDU_PIECES_MAX, &flen);
	if (!n || !buf || cap < flen || (ulpdu_len && !ulpdu))
		return 0;
	for (i = 0; i < n; i++) {
		uint8_t *q = buf + at;

		switch (p[i].kind) {
		case UIW_MPA_P_MARKER:
			/* RFC 5044 §4.2: RESERVED zero, then FPDUPTR */
			q[0] = q[1] = 0;
			put16(q + 2, p[i].fpduptr);
			break;
		case UIW_MPA_P_LEN:
			put16(q, ulpdu_len);
			break;
		case UIW_MPA_P_ULPDU:
			memcpy(q, ulpdu + p[i].off, p[i].len);
			break;
		case UIW_MPA_P_PAD:
			memset(q, 0, p[i].len);
			break;
		case UIW_MPA_P_CRC:
			/* RFC 5044 §4.4: everything before the CRC field */
			uiw_crc32c_put(q, crc ? uiw_crc32c(buf, at) : 0);
			break;
		}
		at += p[i].len;
	}
	return at;
}

uiw_err_t uiw_mpa_fpdu_decode(const uint8_t *buf, size_t len, uint64_t pos,
			      bool markers, bool crc, uint8_t *ulpdu,
			      size_t ulpdu_cap, uint16_t *ulpdu_len,
			      size_t *consumed)
{
	struct uiw_mpa_piece p[FPDU_PIECES_MAX];
	size_t lo = 0, at;
	uint32_t flen;
	uint16_t n;
	unsigned cnt, i;

	*consumed = 0;
	*ulpdu_len = 0;
	if (markers && (pos & 3))
		return UIW_E_MPA_MARKER;
	if (markers && pos % UIW_MPA_MARKER_INTERVAL == 0)
		lo = UIW_MPA_MARKER_LEN;
	if (len < lo + UIW_MPA_LEN_FIELD)
		return UIW_OK;
	n = get16(buf + lo);
	/* A length this receiver does not accept cannot delimit an FPDU
	 * it will take: a framing error (see mpa.h). */
	if (n > ulpdu_cap)
		return UIW_E_MPA_MARKER;
	cnt = uiw_mpa_layout(pos, n, markers, p, FPDU_PIECES_MAX, &flen);
	if (!cnt)
		return UIW_E_MPA_MARKER;
	if (len < flen)
		return UIW_OK;
	/* RFC 5044 §8: the CRC first; a marker error counts only when the
	 * CRC is valid.  The CRC field is the last piece. */
	if (crc && uiw_crc32c(buf, flen - UIW_MPA_CRC_LEN) !=
		   uiw_crc32c_get(buf + flen - UIW_MPA_CRC_LEN))
		return UIW_E_MPA_CRC;
	for (i = 0, at = 0; i < cnt; at += p[i].len, i++) {
		/* RFC 5044 §4.2: the two low FPDUPTR bits count as zero */
		if (p[i].kind == UIW_MPA_P_MARKER &&
		    (get16(buf + at + 2) & 0xfffcu) != p[i].fpduptr)
			return UIW_E_MPA_MARKER;
	}
	for (i = 0, at = 0; i < cnt; at += p[i].len, i++)
		if (p[i].kind == UIW_MPA_P_ULPDU)
			memcpy(ulpdu + p[i].off, buf + at, p[i].len);
	*ulpdu_len = n;
	*consumed = flen;
	return UIW_OK;
}

/* ---- MULPDU ------------------------------------------------------------ */

uint32_t uiw_mpa_mulpdu(uint32_t emss, bool markers)
{
	uint32_t over, m;

	/* No TCP segment and no FPDU (16-bit ULPDU_Length) is larger. */
	if (emss > 0xffff)
		emss = 0xffff;
	/* RFC 5044 §4.5: EMSS - (6 + EMSS mod 4), and with markers also
	 * 4 * Ceiling(EMSS / 512) for the markers that may fall in it. */
	over = 6 + emss % 4;
	if (markers)
		over += UIW_MPA_MARKER_LEN *
			((emss + UIW_MPA_MARKER_INTERVAL - 1) /
			 UIW_MPA_MARKER_INTERVAL);
	m = emss > over ? emss - over : 0;
	/* RFC 5044 §4.5: never below 128 octets */
	return m < UIW_MPA_MULPDU_MIN ? UIW_MPA_MULPDU_MIN : m;
}
