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

/* Writes the header (14 or 18 octets); returns its length. */
size_t uiw_ddp_hdr_encode(uint8_t *buf, const struct uiw_ddp_hdr *h);
/* Decodes a header from buf (len octets).  Returns UIW_OK with
 * *hdr_len set, or the RFC error: too short (UIW_E_DDP_LOCAL_CATA is never
 * returned for that; callers supply whole headers: *hdr_len = 0 and UIW_OK
 * means "need more"), invalid DDP version (tagged: UIW_E_DDP_T_INVALID_VERSION,
 * untagged: UIW_E_DDP_U_INVALID_VERSION), invalid RDMAP version
 * (UIW_E_RDMAP_INVALID_VERSION).  DDP version is checked before RDMAP's.
 * The decoded fields are filled even when an error is returned, as far as
 * the octets allow. */
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

/* Terminate header (RFC 5040 §4.8) */
#define UIW_TERM_HDR_LEN   4   /* Terminate Control + Reserved */
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
};
/* Writes the Terminate payload (what follows the untagged DDP header);
 * returns its length, or 0 if cap is too small.  Layout per RFC 5040
 * Figure 7: control(4), [segment length(2)], [DDP hdr], [RDMAP hdr];
 * the DDP header copy starts right after the length field when M is
 * set, right after the control word otherwise. */
size_t uiw_term_encode(uint8_t *buf, size_t cap, const struct uiw_term *t);
/* Decodes a Terminate payload of len octets.  Lengths of the copied
 * headers follow from the copied DDP control octet (T bit) and the
 * copied RDMAP opcode.  Returns UIW_OK, or UIW_E_RDMAP_OP_UNSPEC when
 * the payload is shorter than its own bits claim (fields decoded up to
 * that point are kept, so the cause can still be reported). */
uiw_err_t uiw_term_decode(const uint8_t *buf, size_t len, struct uiw_term *t);

/* Which headers RFC 5040 §4.8 Figure 10 says a Terminate for err should
 * carry: sets t->m, t->d, t->r given the error and whether a DDP segment
 * (and an RDMA Read Request header) is at hand. */
void uiw_term_hdrct(uiw_err_t err, bool have_segment, bool have_rdmap_hdr,
		    struct uiw_term *t);

#endif
