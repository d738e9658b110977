/*
 * RFC 7306 RDMAP extensions: the Atomic Operation Request and Response
 * headers (§5.2), Immediate Data (§6.2), the masked FetchAdd and CmpSwap
 * arithmetic (§5.1) and the checks of §6.3 and §8 that need no memory.
 * Pure codecs: no allocation, never past the given length.
 *
 * Every field is big-endian on the wire (RFC 7306 §5.1.1, §5.1.2); the
 * structures hold host-order values, and the arithmetic works on host-
 * order values, which is the byte order of the target memory.
 *
 * Wire layouts (the octets after the 18-octet untagged DDP header):
 *
 *   Atomic Request, QN 1, RDMAP opcode 1010b (Figure 4): 52 octets
 *     0   Reserved (28 bits, zero on transmit, ignored on receive) and
 *         AOpCode (the low 4 bits of octet 3)
 *     4   Request Identifier (32)
 *     8   Remote STag (32)
 *     12  Remote Tagged Offset (64)
 *     20  Add or Swap Data (64)
 *     28  Add or Swap Mask (64)
 *     36  Compare Data (64)
 *     44  Compare Mask (64)
 *
 *   Atomic Response, QN 3, opcode 1011b (Figure 6): 12 octets
 *     0   Original Request Identifier (32)
 *     4   Original Remote Data Value (64)
 *   (§4's prose calls this header "32 bytes long"; Figure 6 and the
 *   Appendix A.2 segment both draw 12 octets, and so does tshark.)
 *
 *   Immediate Data, QN 0, opcode 1000b, or 1001b with SE (Figure 7):
 *     0   Immediate Data (64), exactly 8 octets (§6.3)
 *
 * None of these messages carries ULP payload beyond its header (§4.2
 * Figure 3), so each has exactly the length above.
 */
#ifndef UIW_WIRE_ATOMIC_H
#define UIW_WIRE_ATOMIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "ddp.h"
#include "err.h"

#define UIW_ATOMIC_REQ_LEN   52
#define UIW_ATOMIC_RESP_LEN  12
#define UIW_IMM_DATA_LEN     8
/* RFC 7306 §5.1: the target is one 64-bit word at a 64-bit aligned
 * address. */
#define UIW_ATOMIC_OPERAND_LEN 8
#define UIW_ATOMIC_ALIGN       8

/* Atomic Operation Codes (RFC 7306 §5.2.1 Figure 5, IANA registry of
 * §10.1): 0x1 is Reserved, 0x3-0xf are unassigned. */
enum uiw_aopcode {
	UIW_AOP_FETCH_ADD = 0x0,
	UIW_AOP_CMP_SWAP  = 0x2,
};
#define UIW_AOPCODE_MASK 0x0f

/* Masks of the plain (unmasked) operations, as verbs users know them.
 * RFC 7306 §5.1.1: an Add Mask of zero is one 64-bit addition.
 * §5.1.2: compare and swap every bit with all-ones masks.  §5.2.1: a
 * FetchAdd sends Compare Data zero and Compare Mask all ones. */
#define UIW_ATOMIC_ADD_MASK_PLAIN 0ull
#define UIW_ATOMIC_MASK_ALL       UINT64_MAX

struct uiw_atomic_req {
	uint8_t aopcode;          /* enum uiw_aopcode, 4 bits on the wire */
	uint32_t req_id;          /* Request Identifier */
	uint32_t stag;            /* Remote STag */
	uint64_t to;              /* Remote Tagged Offset */
	uint64_t add_swap;        /* Add Data (FetchAdd) or Swap Data */
	uint64_t add_swap_mask;   /* Add Mask or Swap Mask */
	uint64_t compare;         /* Compare Data (CmpSwap) */
	uint64_t compare_mask;    /* Compare Mask (CmpSwap) */
};

struct uiw_atomic_resp {
	uint32_t req_id;          /* Original Request Identifier */
	uint64_t orig_value;      /* Original Remote Data Value */
};

/* ---- The arithmetic (RFC 7306 §5.1), host-order values ------------- */

/* Masked FetchAdd (§5.1.1): the value written back for orig + add.  A
 * set bit of add_mask is the most significant bit of a field, and the
 * carry out of it is discarded, so each field adds on its own (modulo
 * its width); the carry out of bit 63 is always discarded.  add_mask 0
 * is the plain 64-bit addition. */
uint64_t uiw_atomic_fetchadd(uint64_t orig, uint64_t add, uint64_t add_mask);

/* Masked CmpSwap (§5.1.2): the value written back.  When orig and
 * compare agree on every bit of compare_mask, the bits of swap_mask
 * take swap's bits and the others keep orig's; otherwise orig is
 * unchanged.  All-ones masks are the plain compare-and-swap. */
uint64_t uiw_atomic_cmpswap(uint64_t orig, uint64_t compare,
			    uint64_t compare_mask, uint64_t swap,
			    uint64_t swap_mask);

/* The value r writes over orig (FetchAdd or CmpSwap by r->aopcode).
 * For an AOpCode that uiw_atomic_req_check refuses, orig itself: the
 * memory is never changed by a request that is not performed. */
uint64_t uiw_atomic_apply(const struct uiw_atomic_req *r, uint64_t orig);

/* ---- Requester: building a request (§5.2.1 field rules) ------------ */

/* A FetchAdd: Compare Data zero and Compare Mask all ones, as §5.2.1
 * says a FetchAdd sends them.  add_mask UIW_ATOMIC_ADD_MASK_PLAIN for the
 * plain fetch-and-add. */
void uiw_atomic_req_fetchadd(struct uiw_atomic_req *r, uint32_t req_id,
			     uint32_t stag, uint64_t to, uint64_t add,
			     uint64_t add_mask);
/* A CmpSwap; UIW_ATOMIC_MASK_ALL for both masks is the plain
 * compare-and-swap. */
void uiw_atomic_req_cmpswap(struct uiw_atomic_req *r, uint32_t req_id,
			    uint32_t stag, uint64_t to, uint64_t compare,
			    uint64_t compare_mask, uint64_t swap,
			    uint64_t swap_mask);

/* ---- Codecs ---------------------------------------------------------- */

/*
 * Length rule for the RDMA Messages of RFC 7306, judged on a message's
 * whole payload (the octets after the DDP header, summed over its
 * segments):
 *  - longer than the header: UIW_E_DDP_U_TOO_LONG.  Each of these
 *    messages consumes one untagged buffer that holds exactly its header
 *    (§5.2.1 rule 2, §5.2.2 rules 2, 4, 5, §6.3), so the extra octets do
 *    not fit it (RFC 5041 §7.2, "DDP Message too long for available
 *    buffer").  A receiver that sees a partial message already longer
 *    than the header may report this before the last segment arrives.
 *  - shorter: UIW_E_RDMAP_OP_UNSPEC.  §6.3 says the receiver MUST check
 *    that Immediate Data is exactly 8 octets and §5.2.2 rule 7 that an
 *    invalid Atomic Response is an error, but no RFC names a code for a
 *    header cut short; RDMAP Remote Operation Error, Unspecified Error
 *    is that code (and the one uiw_term_decode uses for a short
 *    Terminate).
 * uiw_rdmap_ext_len is the exact length: 8 for Immediate Data (with or
 * without SE), 52 for an Atomic Request, 12 for an Atomic Response, and
 * 0 for every other opcode, whose lengths uiw_rdmap_ext_len_check does
 * not judge (it returns UIW_OK for them).
 */
size_t uiw_rdmap_ext_len(uint8_t opcode);
uiw_err_t uiw_rdmap_ext_len_check(uint8_t opcode, uint64_t len);

/*
 * How the DDP header of a message with an RFC 7306 opcode must look
 * (§4.1 Figure 2): untagged, QN 0 for Immediate Data (with SE), QN 1
 * for an Atomic Request, QN 3 for an Atomic Response.  Returns UIW_OK,
 * or UIW_E_DDP_U_INVALID_QN for an untagged QN above 3 (no RDMAP queue,
 * RFC 7306 §10.2; DDP judges the QN before RDMAP sees the opcode), or
 * UIW_E_RDMAP_UNEXPECTED_OPCODE for such an opcode in a tagged segment
 * or on another queue (RFC 5040 §7.2, RFC 7306 §8.2: "The RDMA OpCode
 * MUST be valid").  The Invalidate STag (RsvdULP) is ignored, as §4.1
 * says the receiver does.  Versions are uiw_ddp_hdr_decode's job; other
 * opcodes give UIW_OK (not judged here).
 */
uiw_err_t uiw_rdmap_ext_hdr_check(const struct uiw_ddp_hdr *h);

/*
 * The checks of an Atomic Request that need no memory, in this order:
 *  - an AOpCode other than FetchAdd and CmpSwap:
 *    UIW_E_RDMAP_UNEXPECTED_OPCODE.  §5.2.1 rule 4 requires an error
 *    without naming it; §1.1 says a peer answers an unsupported Atomic
 *    Operation with "a Remote Operation Error or Unexpected OpCode
 *    error", and the AOpCode extends the RDMAP opcode.
 *  - a Remote Tagged Offset that is not 64-bit aligned:
 *    UIW_E_RDMAP_CATA_STREAM, "Remote Operation Error / Catastrophic
 *    error, localized to RDMAP Stream" (§8.2; §5.1.1, §5.1.2: the
 *    operation is not performed and the memory is not modified).  In
 *    uiwarp the TO of a region is the address of its octet, so this is
 *    the alignment of the ULP Buffer address itself.
 * The reserved bits are ignored (§5.2.1).  The STag, its access rights
 * and the bounds of [to, to + 8) are the responder's to check against
 * its regions.  A Terminate for any error on an Atomic Request carries
 * the DDP header but no RDMA header (§8.1 rule 2,
 * uiw_term_rdmap_hdr_len).
 */
uiw_err_t uiw_atomic_req_check(const struct uiw_atomic_req *r);

/* Writes the 52-octet header and returns 52, or 0 if cap is too small.
 * The AOpCode is written as given (low 4 bits, so that tests can craft
 * unsupported ones), the reserved bits as zero. */
size_t uiw_atomic_req_encode(uint8_t *buf, size_t cap,
			     const struct uiw_atomic_req *r);
/* Decodes an Atomic Request's payload of len octets.  Returns the
 * length error of uiw_rdmap_ext_len_check, else that of
 * uiw_atomic_req_check, else UIW_OK.  *r is filled from the first 52
 * octets whenever there are that many (also when an error is returned,
 * so the cause can be reported), and zeroed otherwise. */
uiw_err_t uiw_atomic_req_decode(const uint8_t *buf, size_t len,
				struct uiw_atomic_req *r);

/* Writes the 12-octet header and returns 12, or 0 if cap is too small. */
size_t uiw_atomic_resp_encode(uint8_t *buf, size_t cap,
			      const struct uiw_atomic_resp *r);
/* Decodes an Atomic Response's payload of len octets: the length error
 * of uiw_rdmap_ext_len_check or UIW_OK; *r as for uiw_atomic_req_decode.
 * Matching it to the outstanding request (MSN, Request Identifier) is
 * the requester's job. */
uiw_err_t uiw_atomic_resp_decode(const uint8_t *buf, size_t len,
				 struct uiw_atomic_resp *r);

/* Immediate Data travels as one big-endian 64-bit field like every
 * RDMAP field (Figure 7), so a uint64_t reads the same at both ends
 * whatever their byte order.  Encode writes 8 octets and returns 8, or
 * 0 if cap is too small.  Decode: the length error of
 * uiw_rdmap_ext_len_check for anything but 8 octets (*imm from the
 * first 8 when there are that many, else 0), else UIW_OK. */
size_t uiw_imm_encode(uint8_t *buf, size_t cap, uint64_t imm);
uiw_err_t uiw_imm_decode(const uint8_t *buf, size_t len, uint64_t *imm);

#endif
