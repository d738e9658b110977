/*
 * uiwarp-nfsd's file handles (nfs_fh.h): a fixed layout, big-endian,
 * followed by two SipHash-2-4 tags of it under the two halves of the
 * server's key (128 bits of MAC: a client that tries handles at random
 * has no chance worth counting).
 */
#include <string.h>
#include "nfs_fh.h"

static uint64_t rotl(uint64_t x, int b)
{
	return x << b | x >> (64 - b);
}

static uint64_t le64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

#define SIPROUND(v0, v1, v2, v3) do {					\
	v0 += v1; v1 = rotl(v1, 13); v1 ^= v0; v0 = rotl(v0, 32);	\
	v2 += v3; v3 = rotl(v3, 16); v3 ^= v2;				\
	v0 += v3; v3 = rotl(v3, 21); v3 ^= v0;				\
	v2 += v1; v1 = rotl(v1, 17); v1 ^= v2; v2 = rotl(v2, 32);	\
} while (0)

uint64_t nfs_siphash24(const uint8_t key[16], const void *p, size_t n)
{
	const uint8_t *in = p;
	uint64_t k0 = le64(key), k1 = le64(key + 8), m, b;
	uint64_t v0 = 0x736f6d6570736575ULL ^ k0, v1 = 0x646f72616e646f6dULL ^ k1;
	uint64_t v2 = 0x6c7967656e657261ULL ^ k0, v3 = 0x7465646279746573ULL ^ k1;
	size_t i, left = n & 7;
	uint8_t last[8] = { 0 };

	for (i = 0; i + 8 <= n; i += 8) {
		m = le64(in + i);
		v3 ^= m;
		SIPROUND(v0, v1, v2, v3);
		SIPROUND(v0, v1, v2, v3);
		v0 ^= m;
	}
	if (left)
		memcpy(last, in + i, left);
	b = le64(last) | (uint64_t)n << 56;
	v3 ^= b;
	SIPROUND(v0, v1, v2, v3);
	SIPROUND(v0, v1, v2, v3);
	v0 ^= b;
	v2 ^= 0xff;
	for (i = 0; i < 4; i++)
		SIPROUND(v0, v1, v2, v3);
	return v0 ^ v1 ^ v2 ^ v3;
}

static void put_be(uint8_t *p, uint64_t v, int octets)
{
	for (int i = octets - 1; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

static uint64_t get_be(const uint8_t *p, int octets)
{
	uint64_t v = 0;

	for (int i = 0; i < octets; i++)
		v = v << 8 | p[i];
	return v;
}

static void mac(const uint8_t key[NFS_FH_KEYLEN], const uint8_t *body,
		uint8_t out[NFS_FH_MACLEN])
{
	put_be(out, nfs_siphash24(key, body, NFS_FH_BODYLEN), 8);
	put_be(out + 8, nfs_siphash24(key + 16, body, NFS_FH_BODYLEN), 8);
}

size_t nfs_fh_encode(const uint8_t key[NFS_FH_KEYLEN], const struct nfs_fh *f,
		     uint8_t out[NFS_FH_LEN])
{
	memset(out, 0, NFS_FH_BODYLEN);
	out[0] = NFS_FH_VERSION;
	put_be(out + 4, f->export_id, 4);
	put_be(out + 8, f->ino, 8);
	put_be(out + 16, f->parent, 8);
	put_be(out + 24, f->gen, 4);
	mac(key, out, out + NFS_FH_BODYLEN);
	return NFS_FH_LEN;
}

bool nfs_fh_decode(const uint8_t key[NFS_FH_KEYLEN], uint32_t export_id,
		   const void *p, size_t len, struct nfs_fh *f)
{
	const uint8_t *h = p;
	uint8_t want[NFS_FH_MACLEN], diff = 0;

	if (len != NFS_FH_LEN || h[0] != NFS_FH_VERSION || h[1] || h[2] ||
	    h[3])
		return false;
	mac(key, h, want);
	/* in constant time: how much of a tag is right tells nothing */
	for (int i = 0; i < NFS_FH_MACLEN; i++)
		diff |= (uint8_t)(want[i] ^ h[NFS_FH_BODYLEN + i]);
	if (diff || get_be(h + 4, 4) != export_id)
		return false;
	f->export_id = export_id;
	f->ino = get_be(h + 8, 8);
	f->parent = get_be(h + 16, 8);
	f->gen = (uint32_t)get_be(h + 24, 4);
	return true;
}
