/*
 * RFC 7306: Atomic Operation Request/Response and Immediate Data
 * codecs, the masked FetchAdd and CmpSwap arithmetic, and the checks
 * of §6.3 and §8 that need no memory.  Layouts in atomic.h.
 */
#include "atomic.h"

#include <string.h>

static inline void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static inline void put64(uint8_t *p, uint64_t v)
{
	put32(p, (uint32_t)(v >> 32));
	put32(p + 4, (uint32_t)v);
}

static inline uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

static inline uint64_t get64(const uint8_t *p)
{
	return (uint64_t)get32(p) << 32 | get32(p + 4);
}

/* ---- Arithmetic (RFC 7306 §5.1) -------------------------------------- */

/*
 * §5.1.1's pseudocode adds bit by bit and clears the carry after every
 * bit set in the Add Mask.  The same in one addition: with the mask
 * bits of both operands cleared, no carry can leave a mask position
 * (at most the incoming carry arrives there, 0 + 0 + 1 < 2), and
 * positions below it add as usual; the sum bit at a mask position is
 * then a ^ b ^ carry-in, which the final XOR restores.  Bit 63's carry
 * falls off the 64-bit word either way.
 */
uint64_t uiw_atomic_fetchadd(uint64_t orig, uint64_t add, uint64_t add_mask)
{
	return ((orig & ~add_mask) + (add & ~add_mask)) ^
	       ((orig ^ add) & add_mask);
}

/* §5.1.2's pseudocode. */
uint64_t uiw_atomic_cmpswap(uint64_t orig, uint64_t compare,
			    uint64_t compare_mask, uint64_t swap,
			    uint64_t swap_mask)
{
	if ((compare ^ orig) & compare_mask)
		return orig;
	return (orig & ~swap_mask) | (swap & swap_mask);
}

uint64_t uiw_atomic_apply(const struct uiw_atomic_req *r, uint64_t orig)
{
	switch (r->aopcode) {
	case UIW_AOP_FETCH_ADD:
		return uiw_atomic_fetchadd(orig, r->add_swap, r->add_swap_mask);
	case UIW_AOP_CMP_SWAP:
		return uiw_atomic_cmpswap(orig, r->compare, r->compare_mask,
					  r->add_swap, r->add_swap_mask);
	default:
		return orig;
	}
}

/* ---- Building requests (§5.2.1) ----------------------------------- */

void uiw_atomic_req_fetchadd(struct uiw_atomic_req *r, uint32_t req_id,
			     uint32_t stag, uint64_t to, uint64_t add,
			     uint64_t add_mask)
{
	memset(r, 0, sizeof(*r));
	r->aopcode = UIW_AOP_FETCH_ADD;
	r->req_id = req_id;
	r->stag = stag;
	r->to = to;
	r->add_swap = add;
	r->add_swap_mask = add_mask;
	/* §5.2.1: "set to zero" / "set to ffffffffffffffffh on transmit" */
	r->compare = 0;
	r->compare_mask = UIW_ATOMIC_MASK_ALL;
}

void uiw_atomic_req_cmpswap(struct uiw_atomic_req *r, uint32_t req_id,
			    uint32_t stag, uint64_t to, uint64_t compare,
			    uint64_t compare_mask, uint64_t swap,
			    uint64_t swap_mask)
{
	memset(r, 0, sizeof(*r));
	r->aopcode = UIW_AOP_CMP_SWAP;
	r->req_id = req_id;
	r->stag = stag;
	r->to = to;
	r->add_swap = swap;
	r->add_swap_mask = swap_mask;
	r->compare = compare;
	r->compare_mask = compare_mask;
}

/* ---- Lengths and the DDP header (§4.1, §4.2, §6.3) ------------------ */

size_t uiw_rdmap_ext_len(uint8_t opcode)
{
	switch (opcode & UIW_RDMAP_OP_MASK) {
	case UIW_OP_IMM:
	case UIW_OP_IMM_SE:
		return UIW_IMM_DATA_LEN;
	case UIW_OP_ATOMIC_REQ:
		return UIW_ATOMIC_REQ_LEN;
	case UIW_OP_ATOMIC_RESP:
		return UIW_ATOMIC_RESP_LEN;
	default:
		return 0;
	}
}

uiw_err_t uiw_rdmap_ext_len_check(uint8_t opcode, uint64_t len)
{
	size_t n = uiw_rdmap_ext_len(opcode);

	if (n == 0 || len == n)
		return UIW_OK;
	return len > n ? UIW_E_DDP_U_TOO_LONG : UIW_E_RDMAP_OP_UNSPEC;
}

uiw_err_t uiw_rdmap_ext_hdr_check(const struct uiw_ddp_hdr *h)
{
	uint32_t qn;

	/* RFC 7306 §4.1 Figure 2 */
	switch (h->opcode & UIW_RDMAP_OP_MASK) {
	case UIW_OP_IMM:
	case UIW_OP_IMM_SE:
		qn = UIW_QN_SEND;
		break;
	case UIW_OP_ATOMIC_REQ:
		qn = UIW_QN_READ_REQ;
		break;
	case UIW_OP_ATOMIC_RESP:
		qn = UIW_QN_ATOMIC_RESP;
		break;
	default:
		return UIW_OK;
	}
	if (h->tagged)
		return UIW_E_RDMAP_UNEXPECTED_OPCODE;
	if (h->qn > UIW_QN_ATOMIC_RESP)
		return UIW_E_DDP_U_INVALID_QN;
	if (h->qn != qn)
		return UIW_E_RDMAP_UNEXPECTED_OPCODE;
	return UIW_OK;
}

/* ---- Atomic Request (§5.2.1 Figure 4) ------------------------------- */

uiw_err_t uiw_atomic_req_check(const struct uiw_atomic_req *r)
{
	/* §5.2.1 rule 4 and §1.1: an AOpCode this RNIC does not support */
	if (r->aopcode != UIW_AOP_FETCH_ADD && r->aopcode != UIW_AOP_CMP_SWAP)
		return UIW_E_RDMAP_UNEXPECTED_OPCODE;
	/* §8.2: the target must be 64-bit aligned */
	if (r->to & (UIW_ATOMIC_ALIGN - 1))
		return UIW_E_RDMAP_CATA_STREAM;
	return UIW_OK;
}

size_t uiw_atomic_req_encode(uint8_t *buf, size_t cap,
			     const struct uiw_atomic_req *r)
{
	if (!buf || cap < UIW_ATOMIC_REQ_LEN)
		return 0;
	/* Reserved (28 bits) zero on transmit, AOpCode in the low 4 */
	put32(buf, r->aopcode & UIW_AOPCODE_MASK);
	put32(buf + 4, r->req_id);
	put32(buf + 8, r->stag);
	put64(buf + 12, r->to);
	put64(buf + 20, r->add_swap);
	put64(buf + 28, r->add_swap_mask);
	put64(buf + 36, r->compare);
	put64(buf + 44, r->compare_mask);
	return UIW_ATOMIC_REQ_LEN;
}

uiw_err_t uiw_atomic_req_decode(const uint8_t *buf, size_t len,
				struct uiw_atomic_req *r)
{
	uiw_err_t err;

	memset(r, 0, sizeof(*r));
	if (len >= UIW_ATOMIC_REQ_LEN) {
		/* reserved bits ignored on receive */
		r->aopcode = buf[3] & UIW_AOPCODE_MASK;
		r->req_id = get32(buf + 4);
		r->stag = get32(buf + 8);
		r->to = get64(buf + 12);
		r->add_swap = get64(buf + 20);
		r->add_swap_mask = get64(buf + 28);
		r->compare = get64(buf + 36);
		r->compare_mask = get64(buf + 44);
	}
	err = uiw_rdmap_ext_len_check(UIW_OP_ATOMIC_REQ, len);
	if (err)
		return err;
	return uiw_atomic_req_check(r);
}

/* ---- Atomic Response (§5.2.2 Figure 6) ------------------------------ */

size_t uiw_atomic_resp_encode(uint8_t *buf, size_t cap,
			      const struct uiw_atomic_resp *r)
{
	if (!buf || cap < UIW_ATOMIC_RESP_LEN)
		return 0;
	put32(buf, r->req_id);
	put64(buf + 4, r->orig_value);
	return UIW_ATOMIC_RESP_LEN;
}

uiw_err_t uiw_atomic_resp_decode(const uint8_t *buf, size_t len,
				 struct uiw_atomic_resp *r)
{
	memset(r, 0, sizeof(*r));
	if (len >= UIW_ATOMIC_RESP_LEN) {
		r->req_id = get32(buf);
		r->orig_value = get64(buf + 4);
	}
	return uiw_rdmap_ext_len_check(UIW_OP_ATOMIC_RESP, len);
}

/* ---- Immediate Data (§6.2 Figure 7, §6.3) --------------------------- */

size_t uiw_imm_encode(uint8_t *buf, size_t cap, uint64_t imm)
{
	if (!buf || cap < UIW_IMM_DATA_LEN)
		return 0;
	put64(buf, imm);
	return UIW_IMM_DATA_LEN;
}

uiw_err_t uiw_imm_decode(const uint8_t *buf, size_t len, uint64_t *imm)
{
	*imm = len >= UIW_IMM_DATA_LEN ? get64(buf) : 0;
	return uiw_rdmap_ext_len_check(UIW_OP_IMM, len);
}
