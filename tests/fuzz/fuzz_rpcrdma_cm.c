/*
 * uiw_rpcrdma_cm_decode / _encode / _skip_mpa_v2 (src/rpcrdma/
 * rpcrdma_cm.c, RFC 8797): any private data gives what a reading of
 * §5.1/§5.2 gives (the first Format Identifier at any offset followed
 * by Version 1 with 8 octets inside the buffer, else the defaults: R
 * clear, 1024 both ways), never reading past it; a message found
 * re-encodes to its octets (Reserved bits made zero) and decodes again
 * the same; settings from the input encode as §4 lays them out (sizes
 * rounded down to 1 KiB, capped at 256 KiB, refused under 1 KiB) and
 * decode back; the RFC 6581 word is skipped exactly.
 *
 * Input: the private data; the same octets then give r(1) send(4)
 * recv(4) to encode.
 */
#include "fuzz.h"
#include "rpcrdma/rpcrdma_cm.h"

FZ_REF
static size_t ref_find(const uint8_t *p, size_t n)
{
	size_t i;

	for (i = 0; i + 8 <= n; i++)
		if (ref_be32(p + i) == 0xf6ab0e18u && p[i + 4] == 1)
			return i;
	return SIZE_MAX;
}

static void decode_side(const uint8_t *data, size_t size)
{
	uint8_t *buf = fz_dup(data, size), out[8], canon[8];
	struct uiw_rpcrdma_cm cm, again;
	size_t at = ref_find(buf, size), ulp_len = 0;
	const uint8_t *ulp;

	memset(&cm, 0x5a, sizeof(cm));
	uiw_rpcrdma_cm_decode(buf, size, &cm);
	if (at == SIZE_MAX) {
		FZ_CHECK(!cm.present && !cm.remote_inv && cm.send_size == 1024 &&
			 cm.recv_size == 1024, "defaults expected");
	} else {
		FZ_CHECK(cm.present && cm.offset == at, "message at %zu, found "
			 "%d at %zu", at, cm.present, cm.offset);
		FZ_CHECK(cm.remote_inv == (buf[at + 5] & 1) &&
			 cm.send_size == (buf[at + 6] + 1u) * 1024 &&
			 cm.recv_size == (buf[at + 7] + 1u) * 1024,
			 "fields misread");
		FZ_CHECK(uiw_rpcrdma_cm_encode(out, cm.remote_inv, cm.send_size,
					       cm.recv_size) == 8,
			 "a decoded message does not encode");
		memcpy(canon, buf + at, 8);
		canon[5] &= 1;
		FZ_CHECK(!memcmp(out, canon, 8), "re-encoded octet %zu differs",
			 fz_diff(out, canon, 8));
		uiw_rpcrdma_cm_decode(out, 8, &again);
		FZ_CHECK(again.present && again.remote_inv == cm.remote_inv &&
			 again.send_size == cm.send_size &&
			 again.recv_size == cm.recv_size && again.offset == 0,
			 "decode-encode-decode differs");
	}
	ulp = uiw_rpcrdma_cm_skip_mpa_v2(buf, size, &ulp_len);
	FZ_CHECK(size < 4 ? ulp == NULL : ulp == buf + 4 && ulp_len == size - 4,
		 "the RFC 6581 word skipped wrongly");
	free(buf);
}

static void encode_side(const uint8_t *data, size_t size)
{
	struct fz in = { data, size };
	bool r = fz_u8(&in) & 1;
	uint32_t snd = fz_u32(&in), rcv = fz_u32(&in), want_s, want_r;
	struct uiw_rpcrdma_cm cm;
	uint8_t out[8];
	int n;

	memset(out, 0xee, sizeof(out));
	n = uiw_rpcrdma_cm_encode(out, r, snd, rcv);
	if (snd < 1024 || rcv < 1024) {
		FZ_CHECK(n == -1 && fz_all(out, 8, 0xee),
			 "a size under 1024 encoded");
		return;
	}
	FZ_CHECK(n == 8, "encode gave %d", n);
	FZ_CHECK(ref_be32(out) == 0xf6ab0e18u && out[4] == 1 &&
		 out[5] == (r ? 1 : 0), "identifier, version or flags");
	want_s = snd >= 262144 ? 262144 : snd / 1024 * 1024;
	want_r = rcv >= 262144 ? 262144 : rcv / 1024 * 1024;
	uiw_rpcrdma_cm_decode(out, 8, &cm);
	FZ_CHECK(cm.present && cm.remote_inv == r && cm.send_size == want_s &&
		 cm.recv_size == want_r, "sizes %u/%u came back as %u/%u",
		 want_s, want_r, cm.send_size, cm.recv_size);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	decode_side(data, size);
	encode_side(data, size);
	return 0;
}
