/*
 * MPA (RFC 5044, RFC 6581): startup frames, FPDU layout with markers,
 * MULPDU.  Pure codecs: no allocation, no I/O, never past a buffer.
 */
#ifndef UIW_WIRE_MPA_H
#define UIW_WIRE_MPA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "err.h"

/* ---- Startup frames (RFC 5044 §7.1.1, RFC 6581 §5) ---------------- */

#define UIW_MPA_KEY_LEN      16
#define UIW_MPA_HDR_LEN      20      /* key, flags, rev, pd_length */
#define UIW_MPA_PD_MAX       512
#define UIW_MPA_FRAME_MAX    (UIW_MPA_HDR_LEN + UIW_MPA_PD_MAX)
extern const uint8_t uiw_mpa_key_req[UIW_MPA_KEY_LEN]; /* "MPA ID Req Frame" */
extern const uint8_t uiw_mpa_key_rep[UIW_MPA_KEY_LEN]; /* "MPA ID Rep Frame" */

enum {
	UIW_MPA_F_M   = 0x80,  /* markers requested by the sender's receiver */
	UIW_MPA_F_C   = 0x40,  /* CRC requested */
	UIW_MPA_F_R   = 0x20,  /* rejected (reply only) */
	UIW_MPA_F_ENH = 0x10,  /* RFC 6581 enhanced connection setup */
	UIW_MPA_F_RES = 0x0f,  /* reserved */
};

struct uiw_mpa_frame {
	bool reply;           /* key: Rep (true) or Req (false) */
	uint8_t flags;        /* UIW_MPA_F_* */
	uint8_t rev;          /* revision */
	uint16_t pd_len;
	const uint8_t *pd;    /* decode: points into the input buffer */
};

/* Encodes f into buf; returns octets written, or 0 when cap is too small
 * or pd_len > UIW_MPA_PD_MAX. */
size_t uiw_mpa_frame_encode(uint8_t *buf, size_t cap,
			    const struct uiw_mpa_frame *f);
/* Decodes a frame at the start of buf (len octets available).
 * expect_reply selects the key.  Returns:
 *   UIW_OK and *consumed = frame length, when a whole frame is there;
 *   UIW_OK and *consumed = 0, when more octets are needed;
 *   UIW_E_MPA_INVALID_FRAME for a wrong key or pd_len > UIW_MPA_PD_MAX.
 * A wrong key octet is refused as soon as it is in buf, pd_len as soon
 * as the 20 header octets are.  f->pd is NULL when pd_len is 0.
 * Flags (including R and the reserved bits) and the revision are not
 * judged here (the CM decides what it accepts). */
uiw_err_t uiw_mpa_frame_decode(const uint8_t *buf, size_t len,
			       bool expect_reply, struct uiw_mpa_frame *f,
			       size_t *consumed);

/* RFC 6581 §9.1 Enhanced RDMA Connection Establishment Data: the first
 * 32 bits of private data when UIW_MPA_F_ENH is set. */
#define UIW_MPA_V2_LEN        4
#define UIW_MPA_V2_IRD_MAX    0x3fff
enum {
	UIW_MPA_V2_PEER2PEER = 0x8000, /* IRD half: A */
	UIW_MPA_V2_RTR_SEND  = 0x4000, /* IRD half: B, zero-length Send */
	UIW_MPA_V2_RTR_WRITE = 0x8000, /* ORD half: C, zero-length Write */
	UIW_MPA_V2_RTR_READ  = 0x4000, /* ORD half: D, zero-length Read */
};
struct uiw_mpa_v2 {
	uint16_t ird, ord;       /* 14-bit values */
	bool p2p;                /* A */
	bool rtr_send, rtr_write, rtr_read;  /* B, C, D */
};
/* Encode: IRD/ORD above 0x3fff are sent as 0x3fff; B, C and D are sent
 * only with A (RFC 6581 §9.2).  Decode: B, C and D read as false when A
 * is 0 (they MUST be ignored then). */
void uiw_mpa_v2_encode(uint8_t out[UIW_MPA_V2_LEN], const struct uiw_mpa_v2 *v);
void uiw_mpa_v2_decode(const uint8_t in[UIW_MPA_V2_LEN], struct uiw_mpa_v2 *v);

/* ---- FPDU framing (RFC 5044 §4) ----------------------------------- */

#define UIW_MPA_MARKER_INTERVAL 512
#define UIW_MPA_MARKER_LEN      4
#define UIW_MPA_LEN_FIELD       2
#define UIW_MPA_CRC_LEN         4

/* Pad octets after a ULPDU so that the FPDU is a multiple of 4. */
static inline unsigned uiw_mpa_pad_len(uint32_t ulpdu_len)
{
	return (unsigned)(-(ulpdu_len + UIW_MPA_LEN_FIELD)) & 3u;
}

/* Octets of an FPDU without markers: ULPDU_Length, ULPDU, pad, CRC (RFC
 * 5044 §4.1; the CRC field is there, zero, when CRC is off). */
static inline uint32_t uiw_mpa_plain_len(uint32_t ulpdu_len)
{
	return UIW_MPA_LEN_FIELD + ulpdu_len + uiw_mpa_pad_len(ulpdu_len) +
	       UIW_MPA_CRC_LEN;
}

/*
 * One FPDU as it lies in the stream, markers included.  The stream
 * position pos counts octets of Full Operation (the first marker is at
 * pos 0 when markers are on).  uiw_mpa_layout describes the FPDU of
 * ulpdu_len octets starting at pos as a sequence of pieces in stream
 * order.  Used by the transmitter (to gather), the receiver (to scatter)
 * and the copy codecs below, so all three agree by construction.
 */
enum uiw_mpa_piece_kind {
	UIW_MPA_P_MARKER,   /* 4 octets: 16 zero bits, FPDUPTR (fpduptr) */
	UIW_MPA_P_LEN,      /* 2 octets: ULPDU_Length */
	UIW_MPA_P_ULPDU,    /* len octets of the ULPDU starting at off */
	UIW_MPA_P_PAD,      /* len (0..3) zero octets */
	UIW_MPA_P_CRC,      /* 4 octets */
};
struct uiw_mpa_piece {
	uint8_t kind;
	uint16_t fpduptr;   /* MARKER: value to send / expected */
	uint32_t off;       /* ULPDU: offset within the ULPDU */
	uint32_t len;       /* octets in the stream */
};
/* Upper bound of pieces for an FPDU of ulpdu_len octets: it holds for
 * every ulpdu_len up to 65535 at every stream position (test_mpa checks
 * it over its ranges). */
#define UIW_MPA_MAX_PIECES(ulpdu_len) (2u * ((ulpdu_len) / 508u + 2u) + 4u)
/* Returns the number of pieces written (at most max), or 0 when max is
 * too small or the FPDU cannot exist: ulpdu_len > 65535, or with markers
 * a pos that is not a multiple of 4 (FPDUs and markers are multiples of
 * 4 octets, so no valid FPDU starts there) or a marker that would lie
 * more than 65535 octets after the ULPDU_Length field.  *fpdu_len gets
 * the FPDU's total stream length, markers included (a multiple of 4).
 * All pieces up to (not including) CRC are covered by the CRC (RFC 5044
 * §4.4 rules 1 and 2).
 * The pieces: [MARKER fpduptr 0 when pos % 512 == 0] LEN, then the ULPDU
 * in one or more pieces with a MARKER wherever the stream crosses a
 * multiple of 512 (FPDUPTR = distance from the ULPDU_Length field to the
 * marker), PAD, possibly a MARKER right before the CRC field, CRC.
 * No piece has len 0 (an empty ULPDU or pad gives no piece); markers
 * never split LEN, PAD or CRC.  A marker due right after the CRC field
 * belongs to the next FPDU.  No allocation; O(pieces). */
unsigned uiw_mpa_layout(uint64_t pos, uint32_t ulpdu_len, bool markers,
			struct uiw_mpa_piece *out, unsigned max,
			uint32_t *fpdu_len);

/* Copy codec: writes the FPDU for ulpdu at stream position pos into buf.
 * Returns octets written, or 0 if cap is too small.  crc=false writes a
 * zero CRC field. */
size_t uiw_mpa_fpdu_encode(uint8_t *buf, size_t cap, uint64_t pos,
			   const uint8_t *ulpdu, uint16_t ulpdu_len,
			   bool markers, bool crc);
/* Copy codec: decodes the FPDU at the start of buf (stream position pos,
 * len octets available), checking FPDUPTRs (UIW_E_MPA_MARKER) and the
 * CRC when crc is true (UIW_E_MPA_CRC).  On UIW_OK with *consumed != 0,
 * the ULPDU (markers removed) is copied to ulpdu (cap ulpdu_cap) and its
 * length stored in *ulpdu_len; *consumed = 0 means more octets needed.
 * Never reads past len.  Order of checks: the CRC first, then the
 * markers (RFC 5044 §8 code 3 applies "in the event that the CRC is
 * valid"); a marker's reserved half is ignored and the two low FPDUPTR
 * bits count as zero (§4.2).
 * A ULPDU_Length greater than ulpdu_cap (what this receiver accepts) is
 * reported as UIW_E_MPA_MARKER, the FPDU framing error of RFC 5044 §8
 * code 3: such a length cannot delimit an FPDU this receiver takes, so
 * the stream is out of step.  It is reported as soon as the length
 * field is in buf, before the rest (and the CRC) arrives, so a receiver
 * never waits for octets it will refuse; UIW_E_MPA_INVALID_FRAME stays
 * reserved for startup frames.  With markers, a pos that is not a
 * multiple of 4 is reported as UIW_E_MPA_MARKER too. */
uiw_err_t uiw_mpa_fpdu_decode(const uint8_t *buf, size_t len, uint64_t pos,
			      bool markers, bool crc, uint8_t *ulpdu,
			      size_t ulpdu_cap, uint16_t *ulpdu_len,
			      size_t *consumed);

/* MULPDU for an EMSS (RFC 5044 §4.5 formulas), with or without
 * markers: EMSS - (6 + EMSS mod 4), minus 4 * Ceiling(EMSS / 512) more
 * with markers (the markers that may fall in an FPDU of EMSS octets at
 * any stream position), so that the whole FPDU fits in EMSS.  EMSS above
 * 65535 counts as 65535.  Never less than UIW_MPA_MULPDU_MIN (§4.5: MPA
 * must not shrink MULPDU below 128), which is more than the largest
 * DDP/RDMAP header (18 + 28) plus 4 octets. */
#define UIW_MPA_MULPDU_MIN 128u
/* RFC 5044 §3: "The sending DDP MUST NOT post a ULPDU larger than 64768
 * octets to MPA." */
#define UIW_MPA_ULPDU_MAX 64768u
uint32_t uiw_mpa_mulpdu(uint32_t emss, bool markers);

#endif
