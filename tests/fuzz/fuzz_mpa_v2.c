/*
 * uiw_mpa_v2_decode and uiw_mpa_v2_encode (RFC 6581 §9.1, §9.2): the
 * decoded fields are the wire bits (B, C and D only with A), the decoded
 * value re-encodes to the input with B, C and D cleared when A is clear,
 * and any structure encodes to what decodes back to it, clamped.
 *
 * Input: the 4 octets of Enhanced RDMA Connection Establishment Data,
 * then a structure to encode: IRD, ORD (2 octets each), and an octet of
 * flags (0x01 A, 0x02 B, 0x04 C, 0x08 D).
 */
#include "fuzz.h"
#include "wire/mpa.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz in = { data, size };
	uint8_t wire[UIW_MPA_V2_LEN], out[UIW_MPA_V2_LEN], fl;
	uint16_t ird, ord, mx = UIW_MPA_V2_IRD_MAX;
	struct uiw_mpa_v2 v, g;
	bool a;

	if (size < UIW_MPA_V2_LEN)
		return 0;
	memcpy(wire, in.p, UIW_MPA_V2_LEN);
	ird = fz_u16(&in);
	ord = fz_u16(&in);
	a = ird & 0x8000;
	memset(&v, 0x5a, sizeof(v));
	uiw_mpa_v2_decode(wire, &v);
	FZ_CHECK(v.ird == (ird & mx) && v.ord == (ord & mx) && v.p2p == a &&
		 v.rtr_send == (a && (ird & 0x4000)) &&
		 v.rtr_write == (a && (ord & 0x8000)) &&
		 v.rtr_read == (a && (ord & 0x4000)),
		 "%04x %04x decoded ird %u ord %u A%d B%d C%d D%d", ird, ord,
		 v.ird, v.ord, v.p2p, v.rtr_send, v.rtr_write, v.rtr_read);
	uiw_mpa_v2_encode(out, &v);
	if (!a) {
		ird &= mx;
		ord &= mx;
	}
	FZ_CHECK(ref_be16(out) == ird && ref_be16(out + 2) == ord,
		 "%02x%02x %02x%02x re-encodes as %04x %04x", wire[0], wire[1],
		 wire[2], wire[3], ref_be16(out), ref_be16(out + 2));

	/* a structure from the input: encode, then decode */
	v.ird = fz_u16(&in);
	v.ord = fz_u16(&in);
	fl = fz_u8(&in);
	v.p2p = fl & 1;
	v.rtr_send = fl & 2;
	v.rtr_write = fl & 4;
	v.rtr_read = fl & 8;
	uiw_mpa_v2_encode(out, &v);
	uiw_mpa_v2_decode(out, &g);
	FZ_CHECK(g.ird == (v.ird < mx ? v.ird : mx) &&
		 g.ord == (v.ord < mx ? v.ord : mx) && g.p2p == v.p2p &&
		 g.rtr_send == (v.p2p && v.rtr_send) &&
		 g.rtr_write == (v.p2p && v.rtr_write) &&
		 g.rtr_read == (v.p2p && v.rtr_read),
		 "ird %u ord %u flags %#x round trip: ird %u ord %u A%d B%d "
		 "C%d D%d", v.ird, v.ord, fl, g.ird, g.ord, g.p2p, g.rtr_send,
		 g.rtr_write, g.rtr_read);
	/* RFC 6581 §9.2: B, C and D are not sent without A */
	FZ_CHECK(v.p2p || ((out[0] & 0xc0) == 0 && (out[2] & 0xc0) == 0),
		 "B/C/D sent without A: %02x %02x", out[0], out[2]);
	return 0;
}
