/*
 * uiw_read_req_decode and uiw_read_req_encode (RFC 5040 §4.4 Figure 6):
 * the 28 octets of an RDMA Read Request header decode to their
 * big-endian fields and re-encode to the same octets; a structure built
 * from the input encodes to what decodes back to it.
 *
 * Input: 28 octets of header, then (optionally) 28 more that give the
 * structure's fields.
 */
#include "fuzz.h"
#include "wire/ddp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz in = { data, size };
	struct uiw_read_req r, g;
	uint8_t *buf, out[UIW_READ_REQ_LEN];

	if (size < UIW_READ_REQ_LEN)
		return 0;
	buf = fz_dup(data, UIW_READ_REQ_LEN);
	memset(&r, 0x5a, sizeof(r));
	uiw_read_req_decode(buf, &r);
	FZ_CHECK(r.sink_stag == ref_be32(buf) &&
		 r.sink_to == ref_be64(buf + 4) &&
		 r.size == ref_be32(buf + 12) &&
		 r.src_stag == ref_be32(buf + 16) &&
		 r.src_to == ref_be64(buf + 20),
		 "Read Request fields misread");
	memset(out, 0x5a, sizeof(out));
	uiw_read_req_encode(out, &r);
	FZ_CHECK(!memcmp(out, buf, UIW_READ_REQ_LEN),
		 "Read Request does not re-encode");
	free(buf);

	in.p += UIW_READ_REQ_LEN;
	in.n -= UIW_READ_REQ_LEN;
	r.sink_stag = fz_u32(&in);
	r.sink_to = fz_u64(&in);
	r.size = fz_u32(&in);
	r.src_stag = fz_u32(&in);
	r.src_to = fz_u64(&in);
	uiw_read_req_encode(out, &r);
	buf = fz_dup(out, UIW_READ_REQ_LEN);
	memset(&g, 0xa5, sizeof(g));
	uiw_read_req_decode(buf, &g);
	FZ_CHECK(g.sink_stag == r.sink_stag && g.sink_to == r.sink_to &&
		 g.size == r.size && g.src_stag == r.src_stag &&
		 g.src_to == r.src_to, "Read Request round trip");
	FZ_CHECK(ref_be32(out + 12) == r.size && ref_be64(out + 20) ==
		 r.src_to, "Read Request octet order");
	free(buf);
	return 0;
}
