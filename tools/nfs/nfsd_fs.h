/*
 * uiwarp-nfsd's view of the exported tree (nfsd_fs.c): every access
 * relative to the export root's O_PATH descriptor, beneath it and never
 * through a symbolic link; file handles (nfs_fh.h) resolved to paths
 * relative to the root through a bounded cache, and a bounded
 * breadth-first search of the tree on a miss.
 */
#ifndef UIW_NFSD_FS_H
#define UIW_NFSD_FS_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include "nfs_fh.h"

/* A path relative to the export root ("" is the root). */
struct nfsd_path {
	char p[PATH_MAX];
};

/* Opens DIR as the export and sets the export id from key (so that a
 * handle of another export is refused); -1 with errno. */
int nfsd_fs_init(const char *dir, const uint8_t key[NFS_FH_KEYLEN]);
uint32_t nfsd_fs_export_id(void);
dev_t nfsd_fs_dev(void);

/* rel opened beneath the root with openat2(RESOLVE_BENEATH |
 * RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS), or component by
 * component with O_NOFOLLOW where openat2 is missing.  flags as for
 * open(2); O_NOFOLLOW is always added.  -1 with errno. */
int nfsd_open(const char *rel, int flags, mode_t mode);

/* The generation of the object open at fd (FS_IOC_GETVERSION), 0 where
 * the filesystem has none or it cannot be read. */
uint32_t nfsd_gen(int fd, const struct stat *st);

/* The handle of the object at rel (st: its attributes) found in the
 * directory of inode parent; into out, returns the length. */
size_t nfsd_fh_make(const char *rel, const struct stat *st, uint64_t parent,
		    uint8_t out[NFS_FH_LEN]);

/* A handle back to its path and attributes: 0; -EBADF when it is not a
 * handle of this export under this key (NFS3ERR_BADHANDLE); -ESTALE
 * when its object is gone (NFS3ERR_STALE). */
int nfsd_fh_resolve(const void *fh, size_t len, struct nfsd_path *path,
		    struct stat *st);

/* What the cache learns: ino is at rel. */
void nfsd_cache_put(const char *rel, const struct stat *st);

/* dir/name into out; false when too long. */
bool nfsd_path_join(const char *dir, const char *name, struct nfsd_path *out);

#endif
