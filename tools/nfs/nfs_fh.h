/*
 * uiwarp-nfsd's file handles (RFC 1813 §2.5: opaque to the client, at
 * most NFS3_FHSIZE octets): what names an object across restarts of the
 * server (its inode number and generation, the export it belongs to,
 * the inode of the directory it was found in as a hint where to look),
 * authenticated by a MAC under the server's secret key so that a client
 * can neither forge one nor alter one it was given.  A pure module: no
 * filesystem access, no state.
 */
#ifndef UIW_NFS_FH_H
#define UIW_NFS_FH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define NFS_FH_VERSION 1
#define NFS_FH_KEYLEN 32    /* two SipHash-2-4 keys */
#define NFS_FH_MACLEN 16    /* two SipHash-2-4 tags */
/* version 1, 3 reserved zero octets, export id 4, ino 8, parent 8,
 * generation 4, then the MAC */
#define NFS_FH_BODYLEN 28
#define NFS_FH_LEN (NFS_FH_BODYLEN + NFS_FH_MACLEN)

struct nfs_fh {
	uint32_t export_id;
	uint64_t ino;
	uint64_t parent;    /* a hint: the directory it was last seen in */
	uint32_t gen;       /* FS_IOC_GETVERSION, 0 where unsupported */
};

/* SipHash-2-4 of n octets under a 16-octet key (Aumasson and
 * Bernstein, "SipHash: a fast short-input PRF", 2012). */
uint64_t nfs_siphash24(const uint8_t key[16], const void *p, size_t n);

/* f's handle under key into out (NFS_FH_LEN octets); returns the
 * length. */
size_t nfs_fh_encode(const uint8_t key[NFS_FH_KEYLEN], const struct nfs_fh *f,
		     uint8_t out[NFS_FH_LEN]);

/* The handle of len octets at p, as key and the export export_id
 * accept it: true with *f filled, false when it is not one (length,
 * version, reserved octets, MAC or export differ: NFS3ERR_BADHANDLE). */
bool nfs_fh_decode(const uint8_t key[NFS_FH_KEYLEN], uint32_t export_id,
		   const void *p, size_t len, struct nfs_fh *f);

#endif
