/*
 * The RFC 7306 codecs and arithmetic of src/wire/atomic.h: Atomic
 * Request (§5.2.1 Figure 4), Atomic Response (§5.2.2 Figure 6) and
 * Immediate Data (§6.2 Figure 7) decoded from every prefix of the input
 * and compared with a reference reading of the figures (big-endian
 * fields, the AOpCode in the low 4 bits of octet 3, reserved bits
 * ignored, exactly one length accepted); whatever has its full length
 * re-encodes to the same octets up to the reserved bits, and structures
 * encode and decode back.  Encoders never write past cap.  The masked
 * FetchAdd and CmpSwap are compared with the bit-by-bit pseudocode of
 * §5.1.1 and §5.1.2, the request builders with the field rules of
 * §5.2.1, and the opcode, queue and length checks with the tables of
 * §4.1 (Figure 2), §6.3 and §8.
 *
 * Input: sel(1) len(8) ctrl(1) qn(4), then the octets to decode (whose
 * first 52 also give the values of the arithmetic and the structures).
 *   sel: the opcode of the length and header checks (low 4 bits), the
 *   T bit of the header check (0x10)
 *   len: a message length for uiw_rdmap_ext_len_check
 *   qn: the queue number of the header check
 */
#include "fuzz.h"
#include <uiwarp/uiwarp.h>
#include "wire/atomic.h"
#include "wire/ddp.h"

/* RFC 7306 §5.1.1: "for each bit of the operand, add with carry; after a
 * bit whose Add Mask bit is set, the carry is cleared".  Walked one bit
 * at a time, as the RFC's pseudocode does. */
FZ_REF
static uint64_t ref_fetchadd(uint64_t orig, uint64_t add, uint64_t mask)
{
	uint64_t out = 0;
	unsigned carry = 0, i, s;

	for (i = 0; i < 64; i++) {
		s = (unsigned)(orig >> i & 1) + (unsigned)(add >> i & 1) +
		    carry;
		out |= (uint64_t)(s & 1) << i;
		carry = s >> 1;
		if (mask >> i & 1)
			carry = 0;
	}
	return out;
}

/* §5.1.2: swap the bits of the Swap Mask when every bit of the Compare
 * Mask agrees; one bit at a time. */
FZ_REF
static uint64_t ref_cmpswap(uint64_t orig, uint64_t cmp, uint64_t cmask,
			    uint64_t swap, uint64_t smask)
{
	uint64_t out = orig;
	unsigned i;

	for (i = 0; i < 64; i++)
		if ((cmask >> i & 1) && (orig >> i & 1) != (cmp >> i & 1))
			return orig;
	for (i = 0; i < 64; i++)
		if (smask >> i & 1)
			out = (out & ~(1ull << i)) | (swap & (1ull << i));
	return out;
}

/* §4.1 Figure 2, §6.2, §5.2: the exact payload length of an opcode, 0
 * when RFC 7306 does not define one. */
static size_t ref_ext_len(uint8_t op)
{
	switch (op & 0xf) {
	case 0x8:
	case 0x9:
		return 8;
	case 0xa:
		return 52;
	case 0xb:
		return 12;
	default:
		return 0;
	}
}

/* The error for a payload of len octets (atomic.h's length rule). */
static uiw_err_t ref_len_err(uint8_t op, uint64_t len)
{
	size_t n = ref_ext_len(op);

	if (!n || len == n)
		return UIW_OK;
	return len > n ? UIW_E_DDP_U_TOO_LONG : UIW_E_RDMAP_OP_UNSPEC;
}

/* §4.1 Figure 2: Immediate Data on queue 0, Atomic Request on 1, Atomic
 * Response on 3, all untagged. */
static uiw_err_t ref_hdr_err(bool tagged, uint32_t qn, uint8_t op)
{
	uint32_t want;

	switch (op & 0xf) {
	case 0x8:
	case 0x9:
		want = 0;
		break;
	case 0xa:
		want = 1;
		break;
	case 0xb:
		want = 3;
		break;
	default:
		return UIW_OK;
	}
	if (tagged)
		return UIW_E_RDMAP_UNEXPECTED_OPCODE;
	if (qn > 3)
		return UIW_E_DDP_U_INVALID_QN;
	return qn == want ? UIW_OK : UIW_E_RDMAP_UNEXPECTED_OPCODE;
}

/* Figure 4 read from the octets. */
static void ref_req(const uint8_t *b, struct uiw_atomic_req *r)
{
	memset(r, 0, sizeof(*r));
	r->aopcode = b[3] & 0xf;
	r->req_id = ref_be32(b + 4);
	r->stag = ref_be32(b + 8);
	r->to = ref_be64(b + 12);
	r->add_swap = ref_be64(b + 20);
	r->add_swap_mask = ref_be64(b + 28);
	r->compare = ref_be64(b + 36);
	r->compare_mask = ref_be64(b + 44);
}

static bool same_req(const struct uiw_atomic_req *a,
		     const struct uiw_atomic_req *b)
{
	return a->aopcode == b->aopcode && a->req_id == b->req_id &&
	       a->stag == b->stag && a->to == b->to &&
	       a->add_swap == b->add_swap &&
	       a->add_swap_mask == b->add_swap_mask &&
	       a->compare == b->compare && a->compare_mask == b->compare_mask;
}

/* §5.2.1 rule 4, §1.1, §8.2: the checks that need no memory. */
static uiw_err_t ref_req_err(const struct uiw_atomic_req *r)
{
	if (r->aopcode != 0x0 && r->aopcode != 0x2)
		return UIW_E_RDMAP_UNEXPECTED_OPCODE;
	if (r->to % 8)
		return UIW_E_RDMAP_CATA_STREAM;
	return UIW_OK;
}

static const struct uiw_atomic_req zero_req;

static void check_req(const uint8_t *src, size_t len)
{
	uint8_t *buf = fz_dup(src, len);
	uint8_t out[UIW_ATOMIC_REQ_LEN + 8];
	struct uiw_atomic_req r, want;
	uiw_err_t err, e;
	size_t i;

	memset(&r, 0x5a, sizeof(r));
	err = uiw_atomic_req_decode(buf, len, &r);
	if (len >= 52)
		ref_req(buf, &want);
	else
		want = zero_req;
	FZ_CHECK(same_req(&r, &want),
		 "Atomic Request of %zu octets: fields differ from Figure 4 "
		 "(aop %u id %08x stag %08x to %016llx)", len, r.aopcode,
		 r.req_id, r.stag, (unsigned long long)r.to);
	e = ref_len_err(0xa, len);
	if (!e)
		e = ref_req_err(&want);
	FZ_CHECK(err == e, "Atomic Request of %zu octets (aop %u to %016llx):"
		 " %#x, want %#x", len, want.aopcode,
		 (unsigned long long)want.to, err, e);
	if (len < 52) {
		free(buf);
		return;
	}
	/* re-encoding: the same octets with the reserved bits zero */
	for (i = 0; i < UIW_ATOMIC_REQ_LEN; i += 13) {
		memset(out, 0xa5, sizeof(out));
		FZ_CHECK(uiw_atomic_req_encode(out, i, &r) == 0 &&
			 fz_all(out, sizeof(out), 0xa5),
			 "request encode into %zu octets wrote or succeeded",
			 i);
	}
	memset(out, 0xa5, sizeof(out));
	FZ_CHECK(uiw_atomic_req_encode(out, sizeof(out) - 1, &r) == 52,
		 "request encode length");
	FZ_CHECK(out[0] == 0 && out[1] == 0 && out[2] == 0 &&
		 out[3] == (buf[3] & 0xf) && !memcmp(out + 4, buf + 4, 48) &&
		 fz_all(out + 52, sizeof(out) - 52, 0xa5),
		 "Atomic Request re-encodes differently at octet %zu",
		 fz_diff(out + 4, buf + 4, 48) + 4);
	free(buf);
}

static void check_resp(const uint8_t *src, size_t len)
{
	uint8_t *buf = fz_dup(src, len), out[UIW_ATOMIC_RESP_LEN + 4];
	struct uiw_atomic_resp r;
	uiw_err_t err;

	memset(&r, 0x5a, sizeof(r));
	err = uiw_atomic_resp_decode(buf, len, &r);
	FZ_CHECK(err == ref_len_err(0xb, len),
		 "Atomic Response of %zu octets: %#x", len, err);
	if (len >= 12)
		FZ_CHECK(r.req_id == ref_be32(buf) &&
			 r.orig_value == ref_be64(buf + 4),
			 "Atomic Response fields differ from Figure 6");
	else
		FZ_CHECK(r.req_id == 0 && r.orig_value == 0,
			 "short Atomic Response (%zu) not zeroed", len);
	if (len >= 12) {
		memset(out, 0xa5, sizeof(out));
		FZ_CHECK(uiw_atomic_resp_encode(out, 11, &r) == 0 &&
			 fz_all(out, sizeof(out), 0xa5),
			 "response encode into 11 octets");
		FZ_CHECK(uiw_atomic_resp_encode(out, sizeof(out), &r) == 12 &&
			 !memcmp(out, buf, 12) &&
			 fz_all(out + 12, sizeof(out) - 12, 0xa5),
			 "Atomic Response re-encodes differently");
	}
	free(buf);
}

static void check_imm(const uint8_t *src, size_t len)
{
	uint8_t *buf = fz_dup(src, len), out[UIW_IMM_DATA_LEN + 4];
	uint64_t v = 0x5a5a5a5a5a5a5a5aull;
	uiw_err_t err;

	err = uiw_imm_decode(buf, len, &v);
	FZ_CHECK(err == ref_len_err(0x8, len) && err == ref_len_err(0x9, len),
		 "Immediate Data of %zu octets: %#x", len, err);
	FZ_CHECK(v == (len >= 8 ? ref_be64(buf) : 0),
		 "Immediate Data of %zu octets reads %016llx", len,
		 (unsigned long long)v);
	memset(out, 0xa5, sizeof(out));
	FZ_CHECK(uiw_imm_encode(out, 7, v) == 0 &&
		 fz_all(out, sizeof(out), 0xa5), "imm encode into 7 octets");
	FZ_CHECK(uiw_imm_encode(out, sizeof(out), v) == 8 &&
		 ref_be64(out) == v && fz_all(out + 8, 4, 0xa5),
		 "Immediate Data %016llx encodes differently",
		 (unsigned long long)v);
	free(buf);
}

/* The arithmetic, the builders and apply, on values from the input. */
static void check_math(const uint8_t *v52)
{
	struct uiw_atomic_req r, b;
	uint64_t orig, got, want;
	uint8_t enc[UIW_ATOMIC_REQ_LEN];

	ref_req(v52, &r);
	orig = ref_be64(v52 + 4) ^ ref_be64(v52 + 44);
	got = uiw_atomic_fetchadd(orig, r.add_swap, r.add_swap_mask);
	want = ref_fetchadd(orig, r.add_swap, r.add_swap_mask);
	FZ_CHECK(got == want, "FetchAdd %016llx + %016llx mask %016llx: "
		 "%016llx, §5.1.1 gives %016llx", (unsigned long long)orig,
		 (unsigned long long)r.add_swap,
		 (unsigned long long)r.add_swap_mask,
		 (unsigned long long)got, (unsigned long long)want);
	FZ_CHECK(uiw_atomic_fetchadd(orig, r.add_swap, 0) ==
		 orig + r.add_swap, "plain FetchAdd is not the 64-bit sum");
	got = uiw_atomic_cmpswap(orig, r.compare, r.compare_mask, r.add_swap,
				 r.add_swap_mask);
	want = ref_cmpswap(orig, r.compare, r.compare_mask, r.add_swap,
			   r.add_swap_mask);
	FZ_CHECK(got == want, "CmpSwap orig %016llx cmp %016llx/%016llx "
		 "swap %016llx/%016llx: %016llx, §5.1.2 gives %016llx",
		 (unsigned long long)orig, (unsigned long long)r.compare,
		 (unsigned long long)r.compare_mask,
		 (unsigned long long)r.add_swap,
		 (unsigned long long)r.add_swap_mask,
		 (unsigned long long)got, (unsigned long long)want);
	FZ_CHECK(uiw_atomic_cmpswap(orig, r.compare, UINT64_MAX, r.add_swap,
				    UINT64_MAX) ==
		 (orig == r.compare ? r.add_swap : orig),
		 "plain CmpSwap differs");
	/* a CmpSwap whose compare fails leaves memory as it was */
	FZ_CHECK(uiw_atomic_cmpswap(orig, ~orig, r.compare_mask | 1,
				    r.add_swap, r.add_swap_mask) == orig,
		 "CmpSwap changed memory although the compare failed");

	/* apply: FetchAdd, CmpSwap, anything else leaves orig */
	got = uiw_atomic_apply(&r, orig);
	want = r.aopcode == 0 ? ref_fetchadd(orig, r.add_swap,
					     r.add_swap_mask) :
	       r.aopcode == 2 ? ref_cmpswap(orig, r.compare, r.compare_mask,
					    r.add_swap, r.add_swap_mask) :
	       orig;
	FZ_CHECK(got == want, "apply with AOpCode %u: %016llx, want %016llx",
		 r.aopcode, (unsigned long long)got,
		 (unsigned long long)want);

	/* §5.2.1: a FetchAdd sends Compare Data 0 and Compare Mask all
	 * ones; both builders fill every field and decode back */
	memset(&b, 0x5a, sizeof(b));
	uiw_atomic_req_fetchadd(&b, r.req_id, r.stag, r.to, r.add_swap,
				r.add_swap_mask);
	FZ_CHECK(b.aopcode == 0 && b.req_id == r.req_id && b.stag == r.stag &&
		 b.to == r.to && b.add_swap == r.add_swap &&
		 b.add_swap_mask == r.add_swap_mask && b.compare == 0 &&
		 b.compare_mask == UINT64_MAX,
		 "FetchAdd request built against §5.2.1");
	FZ_CHECK(uiw_atomic_req_encode(enc, sizeof(enc), &b) == 52 &&
		 ref_be32(enc) == 0 && ref_be64(enc + 36) == 0 &&
		 ref_be64(enc + 44) == UINT64_MAX,
		 "FetchAdd request encodes against Figure 4");
	memset(&b, 0x5a, sizeof(b));
	uiw_atomic_req_cmpswap(&b, r.req_id, r.stag, r.to, r.compare,
			       r.compare_mask, r.add_swap, r.add_swap_mask);
	FZ_CHECK(b.aopcode == 2 && b.req_id == r.req_id && b.stag == r.stag &&
		 b.to == r.to && b.add_swap == r.add_swap &&
		 b.add_swap_mask == r.add_swap_mask &&
		 b.compare == r.compare && b.compare_mask == r.compare_mask,
		 "CmpSwap request built with other fields");
	/* a structure encodes and decodes back (AOpCode 4 bits) */
	r.aopcode = v52[0];
	FZ_CHECK(uiw_atomic_req_encode(enc, sizeof(enc), &r) == 52,
		 "request encode");
	FZ_CHECK(ref_be32(enc) == (uint32_t)(v52[0] & 0xf),
		 "reserved bits or AOpCode written wrongly: %08x",
		 ref_be32(enc));
	r.aopcode &= 0xf;
	ref_req(enc, &b);
	FZ_CHECK(same_req(&r, &b), "request encode-decode round trip");
	FZ_CHECK(uiw_atomic_req_check(&r) == ref_req_err(&r),
		 "request check (aop %u, to %016llx)", r.aopcode,
		 (unsigned long long)r.to);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz in = { data, size };
	uint8_t sel, v52[UIW_ATOMIC_REQ_LEN];
	struct uiw_ddp_hdr h;
	uint64_t len;
	uint32_t qn;
	uiw_err_t e;
	size_t n, i;
	unsigned op;

	sel = fz_u8(&in);
	len = fz_u64(&in);
	(void)fz_u8(&in);
	qn = fz_u32(&in);

	/* lengths and header checks, for the chosen opcode and for all */
	for (op = 0; op < 16; op++) {
		FZ_CHECK(uiw_rdmap_ext_len((uint8_t)op) == ref_ext_len(op) &&
			 uiw_rdmap_ext_len((uint8_t)(op | 0xc0 | (sel & 0x30)))
			 == ref_ext_len(op),
			 "length of opcode %#x: %zu", op,
			 uiw_rdmap_ext_len((uint8_t)op));
		e = uiw_rdmap_ext_len_check((uint8_t)op, len);
		FZ_CHECK(e == ref_len_err((uint8_t)op, len),
			 "opcode %#x with %llu octets: %#x", op,
			 (unsigned long long)len, e);
		memset(&h, 0, sizeof(h));
		h.tagged = sel & 0x10;
		h.last = sel & 0x20;
		h.ddp_ver = 1;
		h.rdmap_ver = 1;
		h.opcode = (uint8_t)op;
		h.qn = qn;
		h.msn = (uint32_t)len;
		h.rsvd_ulp = (uint32_t)(len >> 32);
		e = uiw_rdmap_ext_hdr_check(&h);
		FZ_CHECK(e == ref_hdr_err(h.tagged, qn, (uint8_t)op),
			 "opcode %#x %s qn %u: %#x", op,
			 h.tagged ? "tagged" : "untagged", qn, e);
	}

	/* every prefix of the rest, as each of the three messages */
	n = in.n < 64 ? in.n : 64;
	for (i = 0; i <= n; i++) {
		check_req(in.p, i);
		check_resp(in.p, i);
		check_imm(in.p, i);
	}
	if (in.n > n) {
		check_req(in.p, in.n);
		check_resp(in.p, in.n);
		check_imm(in.p, in.n);
	}
	memset(v52, 0, sizeof(v52));
	memcpy(v52, in.p, in.n < 52 ? in.n : 52);
	check_math(v52);
	return 0;
}
