/*
 * uiw_mpa_frame_decode (RFC 5044 §7.1.1, RFC 6581 §5), with either key:
 * compared with a reference decision, every prefix of the input, and a
 * re-encode of what decodes; the RFC 6581 §9.1 data of an enhanced
 * frame goes through uiw_mpa_v2_decode too.  The input is the stream
 * as it arrives; a second decode reads a frame built from the input's
 * first octets with a correct key, so that frames of every shape are
 * reached quickly.
 */
#include "fuzz.h"
#include "wire/mpa.h"

static const char key_req[] = "MPA ID Req Frame";
static const char key_rep[] = "MPA ID Rep Frame";

static void check_v2(const uint8_t *pd)
{
	struct uiw_mpa_v2 v;
	uint8_t in[UIW_MPA_V2_LEN], out[UIW_MPA_V2_LEN];
	uint16_t ird = ref_be16(pd), ord = ref_be16(pd + 2);
	bool a = ird & 0x8000;

	memcpy(in, pd, sizeof(in));
	uiw_mpa_v2_decode(in, &v);
	FZ_CHECK(v.ird == (ird & 0x3fff) && v.ord == (ord & 0x3fff) &&
		 v.p2p == a && v.rtr_send == (a && (ird & 0x4000)) &&
		 v.rtr_write == (a && (ord & 0x8000)) &&
		 v.rtr_read == (a && (ord & 0x4000)),
		 "v2 %04x %04x decoded ird %u ord %u A%d B%d C%d D%d", ird,
		 ord, v.ird, v.ord, v.p2p, v.rtr_send, v.rtr_write,
		 v.rtr_read);
	uiw_mpa_v2_encode(out, &v);
	/* RFC 6581 §9.2: B, C and D are ignored (and not sent) without A */
	if (!a) {
		ird &= 0x3fff;
		ord &= 0x3fff;
	}
	FZ_CHECK(ref_be16(out) == ird && ref_be16(out + 2) == ord,
		 "v2 %04x %04x re-encodes as %04x %04x", ref_be16(pd),
		 ref_be16(pd + 2), ref_be16(out), ref_be16(out + 2));
}

/* Decodes src[0..len) with one key and checks it against the rules. */
static void check_frame(const uint8_t *src, size_t len, bool reply)
{
	const char *key = reply ? key_rep : key_req;
	uint8_t *buf = fz_dup(src, len), *out;
	struct uiw_mpa_frame f;
	size_t used = 0xdead, k = len < 16 ? len : 16, w;
	uiw_err_t err, want = UIW_OK;
	size_t want_used = 0;
	uint16_t pd_len = 0;

	memset(&f, 0x5a, sizeof(f));
	err = uiw_mpa_frame_decode(buf, len, reply, &f, &used);
	/* the rules of mpa.h, from RFC 5044 §7.1.1 */
	if (memcmp(buf, key, k) != 0) {
		want = UIW_E_MPA_INVALID_FRAME;
	} else if (len >= UIW_MPA_HDR_LEN) {
		pd_len = ref_be16(buf + 18);
		if (pd_len > 512)
			want = UIW_E_MPA_INVALID_FRAME;
		else if (len - UIW_MPA_HDR_LEN >= pd_len)
			want_used = UIW_MPA_HDR_LEN + (size_t)pd_len;
	}
	FZ_CHECK(err == want && used == (want == UIW_OK ? want_used : 0),
		 "len %zu reply %d: err %#x used %zu, want err %#x used %zu",
		 len, reply, err, used, want, want_used);
	if (err != UIW_OK || !used) {
		free(buf);
		return;
	}
	FZ_CHECK(f.reply == reply && f.flags == buf[16] && f.rev == buf[17] &&
		 f.pd_len == pd_len, "fields of a %zu-octet frame", used);
	FZ_CHECK(pd_len ? f.pd == buf + UIW_MPA_HDR_LEN : f.pd == NULL,
		 "pd pointer %p for pd_len %u (buffer %p)", (void *)f.pd,
		 pd_len, (void *)buf);
	if ((f.flags & UIW_MPA_F_ENH) && pd_len >= UIW_MPA_V2_LEN)
		check_v2(f.pd);

	/* re-encodes to the same octets, and needs all of its room */
	out = fz_alloc(used);
	FZ_CHECK(uiw_mpa_frame_encode(out, used - 1, &f) == 0,
		 "encoded %zu octets into %zu", used, used - 1);
	w = uiw_mpa_frame_encode(out, used, &f);
	FZ_CHECK(w == used && !memcmp(out, buf, used),
		 "frame of %zu octets re-encodes to %zu (or other octets)",
		 used, w);
	free(out);
	free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *b;
	size_t i, n;
	bool reply;

	/* the stream as it is, with both keys, and a few prefixes of it */
	for (i = 0; i < 2; i++) {
		check_frame(data, size, i);
		check_frame(data, size ? size - 1 : 0, i);
		check_frame(data, size < 20 ? size : 20, i);
		check_frame(data, size < 19 ? size : 19, i);
	}
	/* a correct key, then the input: flags, rev, pd_len, data */
	if (!size)
		return 0;
	reply = data[0] & 1;
	n = UIW_MPA_KEY_LEN + size - 1;
	b = fz_alloc(n);
	memcpy(b, reply ? key_rep : key_req, UIW_MPA_KEY_LEN);
	memcpy(b + UIW_MPA_KEY_LEN, data + 1, size - 1);
	for (i = 0; i <= n; i += (i < 24 ? 1 : 97))
		check_frame(b, i, reply);
	check_frame(b, n, reply);
	check_frame(b, n, !reply);
	free(b);
	return 0;
}
