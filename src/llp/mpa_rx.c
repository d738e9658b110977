/*
 * MPA receive (RFC 5044 §4): the TCP byte stream delineated into FPDUs.
 *
 * For each FPDU the leading marker (if any), ULPDU_Length and the next
 * two octets (the DDP and RDMAP control octets) come first, with
 * UIW_MPA_RX_SPEC more, into scratch (the prelude); then, with the
 * FPDU's layout from uiw_mpa_layout, the rest of the DDP header into
 * scratch; the header goes to the engine (uiw_qp_rx_begin), which says
 * where the payload goes (uiw_qp_rx_place: direct placement, or
 * uiw_qp_rx_put for octets this module holds); markers, pad and CRC go
 * to scratch.  The CRC is computed over exactly the octets that arrived,
 * where they were placed, and checked before the segment ends (§4.4);
 * a marker must point back to its FPDU's start (§4.3, §8 code 3).
 *
 * Where octets go depends only on the state and the stream position, so
 * rx_iov (which names the places) and rx_done (which accounts for what
 * arrived, reading the places it named) agree however the stream is
 * split, down to single octets.  rx_feed takes octets the carrier read
 * ahead: the same state machine copies them; an FPDU that lies whole in
 * the buffer is taken in one step (prelude_direct, body_whole).
 */
#include "mpa.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../rt/log.h"
#include "../wire/crc32c.h"

#define PIECES_MAX UIW_MPA_MAX_PIECES(65535u)

static void fpdu_start(struct uiw_mpa *m)
{
	struct uiw_mpa_rx *r = &m->rx;

	r->stage = UIW_MPA_RX_PRELUDE;
	r->fpdu_pos = r->pos;
	/* RFC 5044 §4.3: a marker every 512 octets, the first one before
	 * the first FPDU of Full Operation. */
	r->mk_lead = m->p.markers_rx &&
		     r->pos % UIW_MPA_MARKER_INTERVAL == 0 ?
		     UIW_MPA_MARKER_LEN : 0;
	r->start_got = 0;
	r->ulen = 0;
	r->crc = UIW_CRC32C_INIT;
	r->crc_whole = false;
	r->npieces = r->pi = 0;
	r->poff = 0;
	r->u = 0;
	r->htarget = 0;
	r->hdr_done = false;
	r->mk_err = UIW_OK;
	r->why[0] = 0;
}

int uiw_mpa_rx_init(struct uiw_mpa *m)
{
	struct uiw_mpa_rx *r = &m->rx;

	memset(r, 0, sizeof(*r));
	/* Without markers an FPDU has at most 4 pieces (LEN, ULPDU, PAD,
	 * CRC); with them, one per marker more. */
	if (m->p.markers_rx) {
		r->pieces_big = calloc(PIECES_MAX, sizeof(*r->pieces_big));
		if (!r->pieces_big)
			return -ENOMEM;
		r->pieces = r->pieces_big;
		r->pieces_max = PIECES_MAX;
	} else {
		r->pieces = r->pieces_inline;
		r->pieces_max = UIW_MPA_RX_PIECES_INLINE;
	}
	fpdu_start(m);
	return 0;
}

void uiw_mpa_rx_fini(struct uiw_mpa *m)
{
	free(m->rx.pieces_big);
	m->rx.pieces_big = NULL;
	m->rx.pieces = m->rx.pieces_inline;
	m->rx.pieces_max = UIW_MPA_RX_PIECES_INLINE;
}

bool uiw_mpa_rx_mid(const struct uiw_mpa *m)
{
	return m->rx.stage == UIW_MPA_RX_BODY || m->rx.start_got > 0;
}

/* ---- Ends of FPDUs ------------------------------------------------------- */

static void marker_check(struct uiw_mpa *m, const struct uiw_mpa_piece *pc,
			 uint64_t at)
{
	struct uiw_mpa_rx *r = &m->rx;
	const uint8_t *k = r->mk[(at / UIW_MPA_MARKER_INTERVAL) %
				UIW_MPA_RX_MARKER_SLOTS];
	/* RFC 5044 §4.2: the reserved half is ignored, the two low bits
	 * of FPDUPTR count as zero. */
	uint16_t ptr = (uint16_t)((k[2] << 8 | k[3]) & ~3u);

	if (ptr != pc->fpduptr && r->mk_err == UIW_OK) {
		/* Reported before any DDP error of the same FPDU. */
		r->mk_err = UIW_E_MPA_MARKER;
		snprintf(r->why, sizeof(r->why), "marker at stream octet %llu "
			 "has FPDUPTR %u, expected %u",
			 (unsigned long long)at, ptr, pc->fpduptr);
	}
}

/* The CRC field is complete: check it, then the engine ends the segment
 * (RFC 5044 §4.4: an FPDU whose CRC does not match is invalid; §8 code
 * 3 when the CRC is valid but a marker is not). */
static void fpdu_end(struct uiw_mpa *m)
{
	struct uiw_mpa_rx *r = &m->rx;
	uiw_err_t e = UIW_OK;

	if (m->p.crc) {
		uint32_t calc = uiw_crc32c_final(r->crc);
		uint32_t got = uiw_crc32c_get(r->crcf);

		if (calc != got) {
			e = UIW_E_MPA_CRC;
			snprintf(r->why, sizeof(r->why), "FPDU at stream octet "
				 "%llu: CRC 0x%08x, computed 0x%08x",
				 (unsigned long long)r->fpdu_pos, got, calc);
		}
	}
	if (e == UIW_OK)
		e = r->mk_err;
	/* RFC 5044 §7.1.2 rule 4: MPA has validated an FPDU (whatever DDP
	 * makes of it): a responder may send from now on. */
	if (e == UIW_OK && !r->valid_seen) {
		r->valid_seen = true;
		if (m->p.hold)
			uiw_qp_tx_release(m->qp);
	}
	if (!uiw_qp_rx_end(m->qp, r->ulen, e, e != UIW_OK ? r->why : NULL))
		r->stopped = true;
	else
		fpdu_start(m);
}

/* The header octets are in: the engine gets them. */
static void hdr_in(struct uiw_mpa *m)
{
	struct uiw_mpa_rx *r = &m->rx;

	r->hdr_done = true;
	if (!uiw_qp_rx_begin(m->qp, r->hdr, r->htarget, r->ulen))
		r->stopped = true;
}

/* r->ulen is known: lays the FPDU out at r->fpdu_pos and starts its
 * body.  False when no FPDU of that length can lie there (the stream
 * then ends). */
static bool fpdu_lay(struct uiw_mpa *m, uint32_t *flen)
{
	struct uiw_mpa_rx *r = &m->rx;

	r->npieces = uiw_mpa_layout(r->fpdu_pos, r->ulen, m->p.markers_rx,
				    r->pieces, r->pieces_max, flen);
	if (r->npieces == 0) {
		/* RFC 5044 §8 code 3: no FPDU of this length can lie here
		 * (its markers could not point back). */
		snprintf(r->why, sizeof(r->why), "ULPDU_Length %u cannot "
			 "delimit an FPDU at stream octet %llu", r->ulen,
			 (unsigned long long)r->fpdu_pos);
		uiw_qp_rx_end(m->qp, r->ulen, UIW_E_MPA_MARKER, r->why);
		r->stopped = true;
		return false;
	}
	r->stage = UIW_MPA_RX_BODY;
	r->pi = 0;
	r->poff = 0;
	r->u = 0;
	r->pos = r->fpdu_pos;
	if (r->ulen == 0) {
		r->htarget = 0;
		hdr_in(m);
	}
	return !r->stopped;
}

/* ---- Where octets go ----------------------------------------------------- */

enum dest { D_SCRATCH, D_PAYLOAD, D_BARRIER };

/* Where the octets at the cursor (piece pi, offset poff, stream pos) go:
 * framing scratch (*p, at most *len octets), the engine's payload
 * (payload offset *k, at most *len octets), or nowhere yet (the header
 * is not complete). */
static enum dest piece_dest(struct uiw_mpa *m, unsigned pi, uint32_t poff,
			    uint64_t pos, uint8_t **p, uint32_t *k,
			    uint32_t *len)
{
	struct uiw_mpa_rx *r = &m->rx;
	const struct uiw_mpa_piece *pc = &r->pieces[pi];
	uint32_t rem = pc->len - poff, x;

	*len = rem;
	switch (pc->kind) {
	case UIW_MPA_P_MARKER:
		*p = r->mk[((pos - poff) / UIW_MPA_MARKER_INTERVAL) %
			   UIW_MPA_RX_MARKER_SLOTS] + poff;
		return D_SCRATCH;
	case UIW_MPA_P_LEN:
		*p = r->lenf + poff;
		return D_SCRATCH;
	case UIW_MPA_P_PAD:
		*p = r->pad + poff;
		return D_SCRATCH;
	case UIW_MPA_P_CRC:
		*p = r->crcf + poff;
		return D_SCRATCH;
	default:
		break;
	}
	/* ULPDU */
	x = pc->off + poff;
	if (!r->hdr_done) {
		if (r->htarget == 0) {      /* the control octet first */
			*p = r->hdr + x;
			*len = 1;
			return D_SCRATCH;
		}
		if (x >= r->htarget)
			return D_BARRIER;
		*p = r->hdr + x;
		if (r->htarget - x < rem)
			*len = r->htarget - x;
		return D_SCRATCH;
	}
	*k = x - r->htarget;
	return D_PAYLOAD;
}

static void cur_advance(struct uiw_mpa_rx *r, uint32_t n)
{
	const struct uiw_mpa_piece *pc = &r->pieces[r->pi];

	if (pc->kind == UIW_MPA_P_ULPDU)
		r->u += n;
	r->poff += n;
	r->pos += n;
	if (r->poff == pc->len) {
		r->pi++;
		r->poff = 0;
	}
}

/* ---- Consuming what arrived ---------------------------------------------- */

/* Where the next octet that arrived through the named iovecs lies, at
 * most *len octets from there. */
static const uint8_t *named_at(struct uiw_mpa_rx *r, uint32_t *len)
{
	while (r->iov_i < r->niov &&
	       r->iov_off >= r->iov[r->iov_i].iov_len) {
		r->iov_i++;
		r->iov_off = 0;
	}
	if (r->iov_i >= r->niov) {
		*len = 0;
		return NULL;
	}
	if (*len > r->iov[r->iov_i].iov_len - r->iov_off)
		*len = (uint32_t)(r->iov[r->iov_i].iov_len - r->iov_off);
	return (const uint8_t *)r->iov[r->iov_i].iov_base + r->iov_off;
}

static void named_skip(struct uiw_mpa_rx *r, uint32_t n)
{
	while (n > 0) {
		uint32_t t = n;

		if (!named_at(r, &t))
			return;
		r->iov_off += t;
		n -= t;
	}
}

/* Consumes n octets of the FPDU body: copied from src when src is given
 * (rx_feed, or the prelude replayed), otherwise already where rx_iov
 * named them.  Returns the octets consumed (fewer when the FPDU or the
 * stream ends). */
static uint32_t body_consume(struct uiw_mpa *m, const uint8_t *src,
			     uint32_t n)
{
	struct uiw_mpa_rx *r = &m->rx;
	uint32_t done = 0;

	while (done < n && r->stage == UIW_MPA_RX_BODY && !r->stopped) {
		const struct uiw_mpa_piece *pc = &r->pieces[r->pi];
		const uint8_t *from;
		uint8_t *p = NULL;
		uint32_t len, k = 0, t;
		enum dest d = piece_dest(m, r->pi, r->poff, r->pos, &p, &k,
					 &len);

		t = len < n - done ? len : n - done;
		if (d == D_BARRIER) {
			/* More arrived than was asked for: the carrier broke
			 * the contract; the stream cannot go on. */
			snprintf(r->why, sizeof(r->why), "octets beyond what "
				 "was asked for");
			uiw_qp_rx_end(m->qp, r->ulen, UIW_E_RDMAP_LOCAL_CATA,
				      r->why);
			r->stopped = true;
			break;
		}
		if (src) {
			from = src + done;
			if (d == D_SCRATCH) {
				memcpy(p, from, t);
			} else {
				uiw_qp_rx_put(m->qp, k, from, t);
				if (r->feeding) {
					r->fed_payload += t;
					if (t > r->fed_run)
						r->fed_run = t;
				}
			}
		} else {
			from = named_at(r, &t);
			if (!from)
				break;
			r->iov_off += t;
		}
		/* From the source when there is one: the same octets, and
		 * not read back from memory the application may touch. */
		if (m->p.crc && pc->kind != UIW_MPA_P_CRC && !r->crc_whole)
			r->crc = uiw_crc32c_update(r->crc, from, t);
		cur_advance(r, t);
		done += t;
		if (pc->kind == UIW_MPA_P_ULPDU && !r->hdr_done) {
			if (r->htarget == 0) {
				uint32_t hl = uiw_seg_hdr_len(r->hdr[0]);

				r->htarget = (uint8_t)(r->ulen < hl ? r->ulen
								    : hl);
			}
			if (r->u == r->htarget)
				hdr_in(m);
		}
		if (r->poff == 0 && r->pi > 0 && &r->pieces[r->pi - 1] == pc) {
			if (pc->kind == UIW_MPA_P_MARKER)
				marker_check(m, pc, r->pos - pc->len);
			else if (pc->kind == UIW_MPA_P_CRC)
				fpdu_end(m);
		}
	}
	return done;
}

/* [marker] ULPDU_Length and the two control octets are in (and maybe
 * some of the UIW_MPA_RX_SPEC octets after them): lay the FPDU out and
 * replay what arrived through the layout (markers, CRC, header). */
static void prelude_done(struct uiw_mpa *m)
{
	struct uiw_mpa_rx *r = &m->rx;

	while (!r->stopped && r->stage == UIW_MPA_RX_PRELUDE &&
	       r->start_got >= r->mk_lead + 4u) {
		uint32_t flen, got = r->start_got, used;

		r->ulen = (uint16_t)(r->start[r->mk_lead] << 8 |
				     r->start[r->mk_lead + 1]);
		if (!fpdu_lay(m, &flen))
			return;
		used = body_consume(m, r->start, got);
		if (used < got && !r->stopped &&
		    r->stage == UIW_MPA_RX_PRELUDE) {
			/* The FPDU ended inside what was named for it (only
			 * a short, invalid one can); the rest begins the
			 * next FPDU. */
			memmove(r->start, r->start + used, got - used);
			r->start_got = (uint8_t)(got - used);
		}
	}
}

/* prelude_direct, after the header, with all of the FPDU's rest (rest
 * octets) at src: payload, pad and CRC taken in one step each, then the
 * FPDU ends as body_consume would end it. */
static size_t body_whole(struct uiw_mpa *m, const uint8_t *src, uint32_t rest)
{
	struct uiw_mpa_rx *r = &m->rx;
	uint32_t plen = r->ulen - r->htarget, pad = uiw_mpa_pad_len(r->ulen);

	if (r->stopped || r->stage != UIW_MPA_RX_BODY || r->pi != 1 ||
	    rest != plen + pad + UIW_MPA_CRC_LEN)
		return 0;
	if (plen) {
		uiw_qp_rx_put(m->qp, 0, src, plen);
		r->fed_payload += plen;
		if (plen > r->fed_run)
			r->fed_run = plen;
	}
	memcpy(r->pad, src + plen, pad);
	memcpy(r->crcf, src + plen + pad, UIW_MPA_CRC_LEN);
	/* the CRC: prelude_direct took it over the whole FPDU (crc_whole) */
	r->u = r->ulen;
	r->pi = r->npieces;
	r->poff = 0;
	r->pos += rest;
	fpdu_end(m);
	return rest;
}

/* rx_feed, without markers, at an FPDU's first octet with its prelude at
 * hand: the FPDU is laid out from src (no copy to start[] and replay),
 * and when all of it is there its CRC is taken in one pass.  When the
 * DDP header is there too, ULPDU_Length and the header are taken in one
 * step and given to the engine; with the whole FPDU at hand, its rest
 * too (body_whole).  Returns the octets taken; body_consume goes on from
 * there. */
static size_t prelude_direct(struct uiw_mpa *m, const uint8_t *src, size_t n)
{
	struct uiw_mpa_rx *r = &m->rx;
	uint32_t flen, hl, take;

	r->ulen = (uint16_t)(src[0] << 8 | src[1]);
	if (!fpdu_lay(m, &flen))
		return 0;
	if (m->p.crc && n >= flen) {
		r->crc = uiw_crc32c_update(r->crc, src,
					   flen - UIW_MPA_CRC_LEN);
		r->crc_whole = true;
	}
	/* pieces: [0] ULPDU_Length, [1] the ULPDU (no markers) */
	if (r->ulen == 0 || r->hdr_done)
		return 0;
	hl = uiw_seg_hdr_len(src[UIW_MPA_LEN_FIELD]);
	hl = r->ulen < hl ? r->ulen : hl;
	take = UIW_MPA_LEN_FIELD + hl;
	if (n < take)
		return 0;
	memcpy(r->lenf, src, UIW_MPA_LEN_FIELD);
	memcpy(r->hdr, src + UIW_MPA_LEN_FIELD, hl);
	if (m->p.crc && !r->crc_whole)
		r->crc = uiw_crc32c_update(r->crc, src, take);
	r->htarget = (uint8_t)hl;
	r->u = hl;
	r->pos += take;
	r->pi = hl == r->pieces[1].len ? 2 : 1;
	r->poff = r->pi == 2 ? 0 : hl;
	hdr_in(m);
	if (n >= flen && !r->stopped)
		take += (uint32_t)body_whole(m, src + take, flen - take);
	return take;
}

/* n octets of the stream: at src (rx_feed), or already where the last
 * rx_iov named (src NULL).  Returns the octets consumed (fewer when the
 * stream ends). */
static size_t consume(struct uiw_mpa *m, const uint8_t *src, size_t n)
{
	struct uiw_mpa_rx *r = &m->rx;
	size_t off = 0;

	while (off < n && !r->stopped) {
		if (r->stage == UIW_MPA_RX_PRELUDE && src &&
		    !m->p.markers_rx && r->start_got == 0 &&
		    n - off >= 4u + UIW_MPA_RX_SPEC) {
			off += prelude_direct(m, src + off, n - off);
		} else if (r->stage == UIW_MPA_RX_PRELUDE) {
			/* The octets go to start[]; r->pos stays at the
			 * FPDU's start until they are replayed. */
			uint32_t room = r->mk_lead + 4u + UIW_MPA_RX_SPEC -
					r->start_got;
			uint32_t t = n - off < room ? (uint32_t)(n - off)
						    : room;

			if (src)
				memcpy(r->start + r->start_got, src + off, t);
			else
				named_skip(r, t);   /* named as start[] */
			r->start_got = (uint8_t)(r->start_got + t);
			off += t;
			prelude_done(m);
		} else {
			uint32_t chunk = n - off > UINT32_MAX ?
					 UINT32_MAX : (uint32_t)(n - off);

			off += body_consume(m, src ? src + off : NULL, chunk);
		}
	}
	return off;
}

/* ---- The carrier's calls ------------------------------------------------- */

/* Under the engine's turn, the current FPDU's header given and its last
 * octets named: what uiw_mpa_rx_iov says about the next FPDU. */
static size_t rx_ahead(struct uiw_mpa *m)
{
	uint32_t seg, flen;

	if (m->p.markers_rx)
		return 0;
	seg = uiw_qp_rx_guess(m->qp, UIW_MPA_RX_AHEAD_MAX);
	if (!seg)
		return 0;
	/* The next FPDU as the last of a message like this one; its first
	 * 4 + UIW_MPA_RX_SPEC octets are named already. */
	flen = uiw_mpa_plain_len(seg);
	return flen > 4 + UIW_MPA_RX_SPEC ? flen - (4 + UIW_MPA_RX_SPEC) : 0;
}

int uiw_mpa_rx_iov(struct uiw_mpa *m, struct iovec *iov, int max,
		   size_t *ahead)
{
	struct uiw_mpa_rx *r;
	unsigned pi;
	uint32_t poff;
	uint64_t pos;
	size_t total = 0;
	int n = 0, i;

	if (ahead)
		*ahead = 0;
	if (!m || !iov || max <= 0)
		return 0;
	r = &m->rx;
	r->handed = 0;
	r->niov = 0;
	if (r->stopped || !uiw_qp_rx_enter(m->qp))
		return 0;
	/* What the last rx_iov named and no rx_done took is given back. */
	uiw_qp_rx_release(m->qp);
	if (r->stage == UIW_MPA_RX_PRELUDE) {
		uint32_t want = r->mk_lead + 4u + UIW_MPA_RX_SPEC -
				r->start_got;

		uiw_iov_append(iov, &n, max, r->start + r->start_got, want);
		r->handed = want;
		goto out;
	}
	pi = r->pi;
	poff = r->poff;
	pos = r->pos;
	while (n < max) {
		uint8_t *p = NULL;
		uint32_t len, k = 0, named;
		enum dest d;

		if (pi == r->npieces) {
			/* The FPDU is complete; the next one starts with
			 * [marker] ULPDU_Length, two control octets and
			 * UIW_MPA_RX_SPEC more octets that are its own. */
			uint32_t mk = m->p.markers_rx &&
				      pos % UIW_MPA_MARKER_INTERVAL == 0 ?
				      UIW_MPA_MARKER_LEN : 0;

			uiw_iov_append(iov, &n, max, r->start,
				       mk + 4 + UIW_MPA_RX_SPEC);
			if (ahead)
				*ahead = rx_ahead(m);
			break;
		}
		d = piece_dest(m, pi, poff, pos, &p, &k, &len);
		if (d == D_BARRIER)
			break;
		if (d == D_PAYLOAD) {
			n = uiw_qp_rx_place(m->qp, k, len, iov, n, max,
					    &named);
		} else {
			named = uiw_iov_append(iov, &n, max, p, len) ? len : 0;
		}
		poff += named;
		pos += named;
		if (poff == r->pieces[pi].len) {
			pi++;
			poff = 0;
		}
		/* iovecs used up, or discard scratch */
		if (named < len)
			break;
	}
	for (i = 0; i < n; i++)
		total += iov[i].iov_len;
	r->handed = total;
out:
	r->iov = iov;
	r->niov = n;
	uiw_qp_rx_leave(m->qp, true, NULL);
	return n;
}

int uiw_mpa_rx_done(struct uiw_mpa *m, size_t n)
{
	struct uiw_mpa_rx *r;
	int ret;

	if (!m)
		return -EINVAL;
	r = &m->rx;
	if (r->stopped || !uiw_qp_rx_enter(m->qp)) {
		r->handed = 0;
		r->niov = 0;
		r->tx = true;           /* a Terminate may wait to go */
		return -EPROTO;
	}
	if (n > r->handed) {
		UIW_DBG(1, "qp %u: rx_done for %zu octets, %zu were named",
			uiw_qp_num(m->qp), n, r->handed);
		n = r->handed;
	}
	r->handed -= n;
	r->iov_i = 0;
	r->iov_off = 0;
	consume(m, NULL, n);
	r->niov = 0;
	ret = uiw_qp_rx_leave(m->qp, false, &r->tx);
	return r->stopped ? -EPROTO : ret;
}

int uiw_mpa_rx_feed(struct uiw_mpa *m, const void *buf, size_t len,
		    struct uiw_mpa_fed *fed)
{
	struct uiw_mpa_rx *r;
	int ret;

	if (fed) {
		fed->used = fed->payload = fed->max_run = 0;
		fed->tx = false;
	}
	if (!m || !fed || (len && !buf))
		return -EINVAL;
	r = &m->rx;
	r->handed = 0;
	r->niov = 0;
	if (r->stopped || !uiw_qp_rx_enter(m->qp)) {
		/* A Terminate may wait to go. */
		fed->tx = true;
		return -EPROTO;
	}
	/* What an rx_iov named is given back: those octets never came. */
	uiw_qp_rx_release(m->qp);
	r->feeding = true;
	r->fed_run = r->fed_payload = 0;
	fed->used = consume(m, buf, len);
	r->feeding = false;
	fed->payload = r->fed_payload;
	fed->max_run = r->fed_run;
	ret = uiw_qp_rx_leave(m->qp, false, &fed->tx);
	return r->stopped ? -EPROTO : ret;
}
