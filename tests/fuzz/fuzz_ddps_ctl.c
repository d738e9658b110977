/*
 * uiw_ddps_ctl_decode and uiw_ddps_ctl_encode (RFC 5043 §5.2.3, RFC
 * 6581 §7): a DDP Stream Session Control payload decodes exactly when a
 * reading of the RFCs says it is well formed, to the fields that reading
 * gives, and re-encodes to its own octets (the IRD/ORD word made
 * canonical: without A, B, C and D are ignored, RFC 6581 §9.2); fields
 * taken from the input encode as the RFCs lay them out, are refused
 * exactly when they must be, and decode back.
 *
 * Input: the payload (DDP-SSN, Function Code, private data) as received;
 * the same octets then give ssn(2) fc(2) word(4) pd_len(2) and private
 * data to encode.
 */
#include <errno.h>
#include "fuzz.h"
#include "wire/ddps.h"

/* RFC 5043 §5.2.3 and RFC 6581 §7, read independently of the codec:
 * 0 when buf[0..len) is a well-formed control message. */
FZ_REF
static int ref_wellformed(const uint8_t *buf, size_t len)
{
	unsigned fc;
	size_t pd;

	if (len < 4)
		return -EPROTO;              /* DDP-SSN and Function Code */
	fc = ref_be16(buf + 2);
	pd = len - 4;
	if (fc < 1 || fc > 7)
		return -EPROTO;              /* 0x001..0x004, 0x005..0x007 */
	if (pd > 512)
		return -EPROTO;              /* "MUST NOT exceed 512" */
	if (fc == 4 && pd)
		return -EPROTO;              /* Terminate: none */
	if (fc >= 5 && pd < 4)
		return -EPROTO;              /* the word comes first */
	return 0;
}

/* The word of RFC 6581 §9.1: |A|B| IRD |C|D| ORD |, 14-bit values; B, C
 * and D only count with A (§9.2). */
static void check_word(const uint8_t *p, const struct uiw_mpa_v2 *v)
{
	bool a = p[0] & 0x80;

	FZ_CHECK(v->ird == (ref_be16(p) & 0x3fff) &&
		 v->ord == (ref_be16(p + 2) & 0x3fff),
		 "IRD/ORD %u/%u misread", v->ird, v->ord);
	FZ_CHECK(v->p2p == a && v->rtr_send == (a && (p[0] & 0x40)) &&
		 v->rtr_write == (a && (p[2] & 0x80)) &&
		 v->rtr_read == (a && (p[2] & 0x40)),
		 "peer-to-peer flags misread");
}

static void decode_side(const uint8_t *data, size_t size)
{
	uint8_t *buf = fz_dup(data, size);
	uint8_t out[UIW_DDPS_CTL_MAX], canon[UIW_DDPS_CTL_MAX];
	struct uiw_ddps_ctl c;
	const char *why = NULL;
	int want = ref_wellformed(buf, size), got, n;
	size_t word;

	memset(&c, 0x5a, sizeof(c));
	got = uiw_ddps_ctl_decode(buf, size, &c, &why);
	FZ_CHECK(got == want, "decode returned %d, the RFCs say %d (%s)", got,
		 want, why ? why : "no reason");
	if (got < 0) {
		FZ_CHECK(why && *why, "refused without a reason");
		free(buf);
		return;
	}
	word = c.fc >= 5 ? 4 : 0;
	FZ_CHECK(c.ssn == ref_be16(buf) && c.fc == ref_be16(buf + 2),
		 "DDP-SSN or Function Code misread");
	FZ_CHECK(c.enhanced == (word != 0) && c.has_v2 == (word != 0),
		 "enhanced %d has_v2 %d for code %u", c.enhanced, c.has_v2,
		 c.fc);
	FZ_CHECK(c.pd == buf + 4 + word && c.pd_len == size - 4 - word,
		 "private data at %td, %u octets", c.pd - buf, c.pd_len);
	if (word)
		check_word(buf + 4, &c.v2);
	FZ_CHECK(strcmp(uiw_ddps_fc_name(c.fc), "unknown") != 0,
		 "a known code without a name");

	/* again: the same octets, the word's ignored flags cleared */
	memset(out, 0xa5, sizeof(out));
	n = uiw_ddps_ctl_encode(out, c.ssn, c.fc, &c.v2, c.pd, c.pd_len);
	FZ_CHECK(n == (int)size, "re-encoded to %d octets, not %zu", n, size);
	memcpy(canon, buf, size);
	if (word && !(canon[4] & 0x80)) {
		canon[4] &= 0x3f;
		canon[6] &= 0x3f;
	}
	FZ_CHECK(!memcmp(out, canon, size), "re-encoded octet %zu differs",
		 fz_diff(out, canon, size));
	free(buf);
}

static void encode_side(const uint8_t *data, size_t size)
{
	struct fz in = { data, size };
	uint8_t out[UIW_DDPS_CTL_MAX + 16], pd[UIW_DDPS_PD_MAX + 64], w[4];
	struct uiw_mpa_v2 v2;
	struct uiw_ddps_ctl c;
	const char *why = NULL;
	uint16_t ssn = fz_u16(&in), fc = fz_u16(&in), pd_len;
	bool word;
	int n, want;
	size_t i;

	/* mostly the seven codes, sometimes anything */
	if (!(fc & 0x8000))
		fc = (uint16_t)(fc % 8);
	for (i = 0; i < 4; i++)
		w[i] = fz_u8(&in);
	uiw_mpa_v2_decode(w, &v2);
	pd_len = (uint16_t)(fz_u16(&in) % sizeof(pd));
	for (i = 0; i < pd_len; i++)
		pd[i] = fz_u8(&in);
	word = fc >= 5 && fc <= 7;
	if (fc < 1 || fc > 7 || (fc == 4 && pd_len))
		want = -EINVAL;
	else if (pd_len + (word ? 4u : 0u) > 512)
		want = -EMSGSIZE;
	else
		want = 4 + (word ? 4 : 0) + pd_len;
	memset(out, 0xee, sizeof(out));
	n = uiw_ddps_ctl_encode(out, ssn, fc, &v2, pd, pd_len);
	FZ_CHECK(n == want, "encode of code %u with %u octets gave %d, not %d",
		 fc, pd_len, n, want);
	if (n < 0) {
		FZ_CHECK(fz_all(out, sizeof(out), 0xee),
			 "a refused encode wrote");
		return;
	}
	FZ_CHECK(fz_all(out + n, sizeof(out) - (size_t)n, 0xee),
		 "encode wrote past its length");
	FZ_CHECK(ref_be16(out) == ssn && ref_be16(out + 2) == fc,
		 "header octets");
	FZ_CHECK(!memcmp(out + 4 + (word ? 4 : 0), pd, pd_len),
		 "private data octets");
	if (word)
		check_word(out + 4, &v2);
	FZ_CHECK(uiw_ddps_ctl_decode(out, (size_t)n, &c, &why) == 0,
		 "an encoded message does not decode: %s", why);
	FZ_CHECK(c.ssn == ssn && c.fc == fc && c.pd_len == pd_len &&
		 (!pd_len || !memcmp(c.pd, pd, pd_len)),
		 "encode-decode round trip");
	if (word)
		FZ_CHECK(c.v2.ird == v2.ird && c.v2.ord == v2.ord &&
			 c.v2.p2p == v2.p2p && c.v2.rtr_send == v2.rtr_send &&
			 c.v2.rtr_write == v2.rtr_write &&
			 c.v2.rtr_read == v2.rtr_read,
			 "the word does not round-trip");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	decode_side(data, size);
	encode_side(data, size);
	return 0;
}
