/*
 * DDP (RFC 5041 §4) and RDMAP (RFC 5040 §4) headers: control fields,
 * tagged and untagged DDP headers, RDMA Read Request, Terminate.
 * Pure codecs: no allocation, never past the given length.
 */
#ifndef UIW_WIRE_DDP_H
#define UIW_WIRE_DDP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "err.h"

/* DDP control field, octet 0 (RFC 5041 §4.2) */
#define UIW_DDP_T          0x80
#define UIW_DDP_L          0x40
#define UIW_DDP_RSVD_MASK  0x3c
#define UIW_DDP_DV_MASK    0x03
#define UIW_DDP_VERSION    1
/* RDMAP control field, octet 1 (RFC 5040 §4.2) */
#define UIW_RDMAP_RV_SHIFT 6
#define UIW_RDMAP_VERSION  1
#define UIW_RDMAP_RSVD_MASK 0x30
#define UIW_RDMAP_OP_MASK  0x0f

#define UIW_DDP_TAGGED_HDR_LEN   14  /* ctrl(2) STag(4) TO(8) */
#define UIW_DDP_UNTAGGED_HDR_LEN 18  /* ctrl(2) RsvdULP(4) QN MSN MO */
#define UIW_DDP_MAX_HDR_LEN      18

enum uiw_rdmap_opcode {
	UIW_OP_WRITE       = 0x0,
	UIW_OP_READ_REQ    = 0x1,
	UIW_OP_READ_RESP   = 0x2,
	UIW_OP_SEND        = 0x3,
	UIW_OP_SEND_INV    = 0x4,
	UIW_OP_SEND_SE     = 0x5,
	UIW_OP_SEND_SE_INV = 0x6,
	UIW_OP_TERMINATE   = 0x7,
	UIW_OP_IMM         = 0x8,  /* RFC 7306 */
	UIW_OP_IMM_SE      = 0x9,
	UIW_OP_ATOMIC_REQ  = 0xa,
	UIW_OP_ATOMIC_RESP = 0xb,
};

enum uiw_ddp_qn {
	UIW_QN_SEND        = 0,
	UIW_QN_READ_REQ    = 1,  /* and RFC 7306 atomic requests */
	UIW_QN_TERMINATE   = 2,
	UIW_QN_ATOMIC_RESP = 3,  /* RFC 7306 */
};

/* A decoded DDP header together with the RDMAP control octet. */
struct uiw_ddp_hdr {
	bool tagged;            /* T */
	bool last;              /* L */
	uint8_t ddp_rsvd;       /* the 4 reserved bits (ignored on receive) */
	uint8_t ddp_ver;        /* DV */
	uint8_t rdmap_ver;      /* RV */
	uint8_t opcode;         /* enum uiw_rdmap_opcode */
	uint32_t stag;          /* tagged: STag */
	uint64_t to;            /* tagged: Tagged Offset */
	uint32_t rsvd_ulp;      /* untagged: RDMAP's ULP field (Invalidate STag
				   for Send with Invalidate, else 0) */
	uint32_t qn, msn, mo;   /* untagged */
};

/* Header length from the DDP control octet (14 tagged, 18 untagged). */
static inline size_t uiw_ddp_hdr_len(uint8_t ddp_ctrl)
{
	return (ddp_ctrl & UIW_DDP_T) ? UIW_DDP_TAGGED_HDR_LEN
				      : UIW_DDP_UNTAGGED_HDR_LEN;
}

/* Writes the header (14 or 18 octets); returns its length.  Every field
 * is written as given (ddp_ver, rdmap_ver and ddp_rsvd too, so that tests
 * can craft bad headers); the RDMAP reserved bits are written as zero. */
size_t uiw_ddp_hdr_encode(uint8_t *buf, const struct uiw_ddp_hdr *h);
/* Decodes a header from buf (len octets).  Returns UIW_OK with
 * *hdr_len set, or the RFC error: too short (UIW_E_DDP_LOCAL_CATA is never
 * returned for that; callers supply whole headers: *hdr_len = 0 and UIW_OK
 * means "need more"), invalid DDP version (tagged: UIW_E_DDP_T_INVALID_VERSION,
 * untagged: UIW_E_DDP_U_INVALID_VERSION), invalid RDMAP version
 * (UIW_E_RDMAP_INVALID_VERSION).  DDP version is checked before RDMAP's.
 * The decoded fields are filled even when an error is returned, as far as
 * the octets allow.
 * Versions are judged as soon as their octet is there (DV from octet 0,
 * RV from octet 1), so a bad one is reported without waiting for the rest
 * of the header; on an error *hdr_len is the header length if all of it
 * is in buf, else 0.  DV must be 1 (RFC 5041 §4.1) and RV must be 1: RV 0
 * is the pre-IETF RDMA Consortium protocol (RFC 5040 §4.1), which uiwarp,
 * like siw, does not speak.  The opcode is not judged here (what is
 * unexpected depends on the stream's state); reserved bits are ignored. */
uiw_err_t uiw_ddp_hdr_decode(const uint8_t *buf, size_t len,
			     struct uiw_ddp_hdr *h, size_t *hdr_len);

/* RDMA Read Request header (RFC 5040 §4.4): 28 octets of queue-1 payload. */
#define UIW_READ_REQ_LEN 28
struct uiw_read_req {
	uint32_t sink_stag;
	uint64_t sink_to;
	uint32_t size;          /* RDMA Read Message Size */
	uint32_t src_stag;
	uint64_t src_to;
};
void uiw_read_req_encode(uint8_t out[UIW_READ_REQ_LEN], const struct uiw_read_req *r);
void uiw_read_req_decode(const uint8_t in[UIW_READ_REQ_LEN], struct uiw_read_req *r);

/*
 * Terminate header (RFC 5040 §4.8), the payload of a Terminate message:
 *
 *   octet 0     Layer (high nibble), EType (low nibble)
 *   octet 1     Error Code
 *   octet 2     M 0x80, D 0x40, R 0x20, then 5 of the 13 reserved bits
 *   octet 3     the other 8 reserved bits
 *   [2 octets]  DDP Segment Length, present when M or D is set
 *   [14 or 18]  Terminated DDP Header, present when D is set
 *   [28]        Terminated RDMA Header, present when R is set
 *
 * Figure 7 draws the 16-bit DDP Segment Length field at the start of the
 * second word with the Terminated DDP Header following it in the same
 * word, and the text says the length "MUST be valid if the M bit is set"
 * and "MUST be present when the D bit is set".  So with D the copied DDP
 * header always starts at octet 6, right after the length field, whether
 * M is set or not (without M the field is there but meaningless, sent as
 * zero).  With neither M nor D there is no length field and a copied
 * RDMA header (R alone) starts at octet 4.  (tshark reads it this way;
 * siw always sends M and D together.)  The copied DDP header is 14 or 18
 * octets by its own T bit; the RDMA header copy is 28 octets for an RDMA
 * Read Request (uiw_term_rdmap_hdr_len; with D its length follows from
 * the copied opcode, without D it can only be a Read Request's).
 */
#define UIW_TERM_HDR_LEN   4   /* Terminate Control + Reserved */
#define UIW_TERM_SEGLEN_LEN 2  /* DDP Segment Length */
#define UIW_TERM_F_M       0x80 /* octet 2: DDP Segment Length valid */
#define UIW_TERM_F_D       0x40 /* octet 2: DDP header included */
#define UIW_TERM_F_R       0x20 /* octet 2: RDMAP header included */
#define UIW_TERM_MAX_LEN   (UIW_TERM_HDR_LEN + 2 + UIW_DDP_MAX_HDR_LEN + UIW_READ_REQ_LEN)

struct uiw_term {
	uiw_err_t err;            /* layer, etype, ecode */
	bool m, d, r;
	uint16_t ddp_seg_len;     /* when m */
	uint8_t ddp_hdr[UIW_DDP_MAX_HDR_LEN];   /* when d */
	uint8_t ddp_hdr_len;
	uint8_t rdmap_hdr[UIW_READ_REQ_LEN];    /* when r */
	uint8_t rdmap_hdr_len;
	bool siw_layout;          /* decode: the control field was read in
				     siw's swapped layout (see below) */
};
/* Octets of Terminated RDMA Header for a message with this RDMAP opcode:
 * 28 for an RDMA Read Request, 0 for the others (which have no RDMAP
 * header of their own; RFC 5040 Figure 10 still sets R for a Send with
 * Invalidate).  The RFC 7306 messages, the Atomic Request included, get
 * 0 too: for them the Terminated RDMA Header "is set to zero" (RFC 7306
 * §8.1 rule 2), so a Terminate for them carries none. */
size_t uiw_term_rdmap_hdr_len(uint8_t opcode);
/* Writes the Terminate payload (what follows the untagged DDP header);
 * returns its length, or 0 if cap is too small or a copied header's
 * length disagrees with the layout above (d: ddp_hdr_len must match the
 * copied T bit; r: rdmap_hdr_len must be uiw_term_rdmap_hdr_len of the
 * copied opcode with d, 28 without).  The control field is written in
 * the RFC layout, reserved bits zero; ddp_seg_len is sent only with m
 * (zero when only d is set). */
size_t uiw_term_encode(uint8_t *buf, size_t cap, const struct uiw_term *t);
/* Decodes a Terminate payload of len octets.  Lengths of the copied
 * headers follow from the copied DDP control octet (T bit) and the
 * copied RDMAP opcode.  Returns UIW_OK, or UIW_E_RDMAP_OP_UNSPEC when
 * the payload is shorter than its own bits claim (fields decoded up to
 * that point are kept, so the cause can still be reported; fewer than 3
 * octets carry no cause at all).  Octets after the last copied header
 * are ignored.
 *
 * siw fallback.  Linux siw (6.1) writes the control field with Layer and
 * EType swapped and M/D/R at 0x01/0x02/0x04 of octet 2: the RFC's
 * "12 01 c0" (DDP untagged buffer error, invalid QN, M and D) is sent as
 * "21 01 03", the RFC's "20 02 00" (LLP CRC error) as "02 02 00".  The
 * RFC reading is kept unless it is implausible (a triple no RFC defines,
 * or M/D/R all clear while octet 2's low three bits are set) and the
 * swapped reading is plausible (a defined triple, octet 2 bits above
 * 0x07 clear); then the swapped reading is used and t->siw_layout set.
 * When both readings are defined triples the RFC one wins (siw's
 * "01 00 00", DDP local catastrophic, reads as RDMAP invalid STag). */
uiw_err_t uiw_term_decode(const uint8_t *buf, size_t len, struct uiw_term *t);

/* What the receiver knows about the sender of a Terminate. */
enum {
	/* The sender cannot have sent RFC 6581's setup Terminates (only
	 * the initiator of an enhanced connection sends them, as its first
	 * FPDU): an RFC reading of 2/0/6 or 2/0/7 is then implausible, and
	 * siw's "20 06" (RDMAP, remote operation error, unexpected opcode)
	 * or "20 07" (catastrophic, stream) is read in siw's layout. */
	UIW_TERM_NO_SETUP = 1u << 0,
};

/* uiw_term_decode with what the receiver knows (UIW_TERM_* flags). */
uiw_err_t uiw_term_decode_ex(const uint8_t *buf, size_t len, unsigned flags,
			     struct uiw_term *t);

/* Which headers RFC 5040 §4.8 Figure 10 says a Terminate for err should
 * carry: sets t->m, t->d, t->r given the error and whether a DDP segment
 * (and an RDMA Read Request header) is at hand.  RDMAP remote protection
 * errors: M and D with a segment, R with a Read Request header; RDMAP
 * remote operation errors and DDP buffer errors: M and D with a segment;
 * local catastrophic errors (RFC 5040: "The DDP Header is not present if
 * the Terminate Error Type is a Local Catastrophic Error") and LLP
 * errors: none.  t->err and the copies are left as they are. */
void uiw_term_hdrct(uiw_err_t err, bool have_segment, bool have_rdmap_hdr,
		    struct uiw_term *t);

#endif
