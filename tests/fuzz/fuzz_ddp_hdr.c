/*
 * uiw_ddp_hdr_decode and uiw_ddp_hdr_encode (RFC 5041 §4, RFC 5040
 * §4.1-§4.2): every prefix of the input is decoded and compared with the
 * rules of ddp.h (the version checks as soon as their octet is there, the
 * fields as far as the octets go); a whole header re-encodes to the same
 * octets but for the RDMAP reserved bits; and a header built from the
 * input's last octets survives encode and decode.
 *
 * Input: the header octets (a DDP segment as it arrives).
 */
#include "fuzz.h"
#include "wire/ddp.h"

static void check_prefix(const uint8_t *src, size_t len)
{
	uint8_t *buf = fz_dup(src, len), out[UIW_DDP_MAX_HDR_LEN];
	struct uiw_ddp_hdr h;
	uiw_err_t err, want = UIW_OK;
	size_t hl = 0xdead, n = 0, want_hl = 0;
	bool t = false;

	memset(&h, 0x5a, sizeof(h));
	err = uiw_ddp_hdr_decode(buf, len, &h, &hl);
	if (len >= 1) {
		t = buf[0] & 0x80;
		n = t ? 14 : 18;
		/* RFC 5041 §4.1 DV, then RFC 5040 §4.2 RV, each 1 */
		if ((buf[0] & 3) != 1)
			want = t ? UIW_E_DDP_T_INVALID_VERSION :
				   UIW_E_DDP_U_INVALID_VERSION;
		else if (len >= 2 && (buf[1] >> 6) != 1)
			want = UIW_E_RDMAP_INVALID_VERSION;
		/* the header length once all of it is there (also on an
		 * error); UIW_OK with 0 means "need more" */
		if (len >= n)
			want_hl = n;
	}
	FZ_CHECK(err == want && hl == want_hl,
		 "len %zu: err %#x hdr_len %zu, want err %#x hdr_len %zu",
		 len, err, hl, want, want_hl);
	FZ_CHECK(hl == 0 || hl == uiw_ddp_hdr_len(buf[0]),
		 "hdr_len %zu disagrees with uiw_ddp_hdr_len", hl);
	/* the fields, as far as the octets go; zero beyond */
	if (len == 0) {
		FZ_CHECK(!h.tagged && !h.last && !h.ddp_ver && !h.rdmap_ver &&
			 !h.opcode && !h.stag && !h.to && !h.qn && !h.msn &&
			 !h.mo && !h.rsvd_ulp && !h.ddp_rsvd,
			 "fields set from no octets");
		free(buf);
		return;
	}
	FZ_CHECK(h.tagged == t && h.last == !!(buf[0] & 0x40) &&
		 h.ddp_rsvd == ((buf[0] >> 2) & 0xf) &&
		 h.ddp_ver == (buf[0] & 3), "octet 0 %#x misread", buf[0]);
	FZ_CHECK(len >= 2 ? h.rdmap_ver == buf[1] >> 6 &&
			    h.opcode == (buf[1] & 0xf) :
			    h.rdmap_ver == 0 && h.opcode == 0,
		 "octet 1 misread (len %zu)", len);
	if (len >= n && t) {
		FZ_CHECK(h.stag == ref_be32(buf + 2) &&
			 h.to == ref_be64(buf + 6) && !h.qn && !h.msn &&
			 !h.mo && !h.rsvd_ulp, "tagged fields misread");
	} else if (len >= n) {
		FZ_CHECK(h.rsvd_ulp == ref_be32(buf + 2) &&
			 h.qn == ref_be32(buf + 6) &&
			 h.msn == ref_be32(buf + 10) &&
			 h.mo == ref_be32(buf + 14) && !h.stag && !h.to,
			 "untagged fields misread");
	} else {
		FZ_CHECK(!h.stag && !h.to && !h.qn && !h.msn && !h.mo &&
			 !h.rsvd_ulp, "fields set from a partial header");
	}
	/* a whole header (good or not) re-encodes to its octets, the
	 * RDMAP reserved bits written as zero (RFC 5040 §4.2) */
	if (len >= n) {
		FZ_CHECK(uiw_ddp_hdr_encode(out, &h) == n,
			 "encode length differs from %zu", n);
		FZ_CHECK(out[0] == buf[0] && out[1] == (buf[1] & 0xcf) &&
			 !memcmp(out + 2, buf + 2, n - 2),
			 "header of %zu octets does not re-encode", n);
	}
	free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct uiw_ddp_hdr h, g;
	uint8_t out[UIW_DDP_MAX_HDR_LEN], *buf;
	struct fz in;
	size_t i, n, hl;
	uiw_err_t err;

	for (i = 0; i <= size && i <= UIW_DDP_MAX_HDR_LEN + 1; i++)
		check_prefix(data, i);
	if (size > UIW_DDP_MAX_HDR_LEN + 1)
		check_prefix(data, size);

	/* a structure from the input: every field as given, masked to its
	 * width, comes back */
	in.p = data;
	in.n = size;
	memset(&h, 0, sizeof(h));
	i = fz_u8(&in);
	h.tagged = i & 0x80;
	h.last = i & 0x40;
	h.ddp_rsvd = (uint8_t)(i >> 2);        /* wider than 4 bits */
	h.ddp_ver = (uint8_t)i;                /* wider than 2 bits */
	i = fz_u8(&in);
	h.rdmap_ver = (uint8_t)(i >> 4);
	h.opcode = (uint8_t)i;
	h.stag = fz_u32(&in);
	h.to = fz_u64(&in);
	h.rsvd_ulp = fz_u32(&in);
	h.qn = fz_u32(&in);
	h.msn = fz_u32(&in);
	h.mo = fz_u32(&in);
	n = uiw_ddp_hdr_encode(out, &h);
	FZ_CHECK(n == (h.tagged ? 14u : 18u), "encoded %zu octets", n);
	buf = fz_dup(out, n);
	err = uiw_ddp_hdr_decode(buf, n, &g, &hl);
	FZ_CHECK(hl == n, "encoded header of %zu decodes with hdr_len %zu", n,
		 hl);
	FZ_CHECK(g.tagged == h.tagged && g.last == h.last &&
		 g.ddp_rsvd == (h.ddp_rsvd & 0xf) &&
		 g.ddp_ver == (h.ddp_ver & 3) &&
		 g.rdmap_ver == (h.rdmap_ver & 3) &&
		 g.opcode == (h.opcode & 0xf), "control fields round trip");
	FZ_CHECK(h.tagged ? g.stag == h.stag && g.to == h.to :
			    g.rsvd_ulp == h.rsvd_ulp && g.qn == h.qn &&
			    g.msn == h.msn && g.mo == h.mo,
		 "header fields round trip");
	FZ_CHECK((err == UIW_OK) == ((h.ddp_ver & 3) == 1 &&
				     (h.rdmap_ver & 3) == 1),
		 "DV %u RV %u gave err %#x", h.ddp_ver & 3, h.rdmap_ver & 3,
		 err);
	free(buf);
	return 0;
}
