/*
 * uiwarp-nfsd's file handles (tools/nfs/nfs_fh.c): any octets given as
 * a handle are refused or are a handle whose encoding gives them back
 * exactly; a handle made and decoded under the same key and export
 * gives back its fields; one octet changed anywhere, or another export
 * id, is refused.
 *
 * Input: a key (32 octets), an export id (4), the fields (ino 8,
 * parent 8, gen 4), an octet index and a mask, then a handle to decode.
 */
#include "fuzz.h"
#include "../../tools/nfs/nfs_fh.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz in = { data, size };
	uint8_t key[NFS_FH_KEYLEN], h[NFS_FH_LEN], again[NFS_FH_LEN];
	struct nfs_fh f, g;
	uint32_t id;
	uint8_t at, mask;

	for (size_t i = 0; i < sizeof(key); i++)
		key[i] = fz_u8(&in);
	id = fz_u32(&in);
	f.export_id = id;
	f.ino = fz_u64(&in);
	f.parent = fz_u64(&in);
	f.gen = fz_u32(&in);
	at = fz_u8(&in);
	mask = fz_u8(&in);

	FZ_CHECK(nfs_fh_encode(key, &f, h) == NFS_FH_LEN, "encoded length");
	FZ_CHECK(nfs_fh_decode(key, id, h, NFS_FH_LEN, &g) &&
		 g.ino == f.ino && g.parent == f.parent && g.gen == f.gen &&
		 g.export_id == id, "round trip");
	FZ_CHECK(!nfs_fh_decode(key, id + 1, h, NFS_FH_LEN, &g),
		 "another export accepted");
	FZ_CHECK(!nfs_fh_decode(key, id, h, NFS_FH_LEN - 1, &g),
		 "a truncated handle accepted");
	if (mask) {
		h[at % NFS_FH_LEN] ^= mask;
		FZ_CHECK(!nfs_fh_decode(key, id, h, NFS_FH_LEN, &g),
			 "octet %u changed by %#x accepted", at % NFS_FH_LEN,
			 mask);
	}
	/* the rest as a handle: refused, or exactly a handle */
	if (nfs_fh_decode(key, id, in.p, in.n, &g)) {
		nfs_fh_encode(key, &g, again);
		FZ_CHECK(in.n == NFS_FH_LEN && !memcmp(again, in.p, NFS_FH_LEN),
			 "accepted a handle that is not its own encoding");
	}
	return 0;
}
