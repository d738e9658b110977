/*
 * uiwarp-nfsd's view of the exported tree (nfsd_fs.h).
 *
 * No request reaches outside the export: every path is opened relative
 * to the root's O_PATH descriptor by openat2 with RESOLVE_BENEATH (no
 * ".." above the root, no absolute path), RESOLVE_NO_SYMLINKS (the
 * server follows no symbolic link a client may have planted, RFC 1813
 * §3.3.10: their text is the client's business) and
 * RESOLVE_NO_MAGICLINKS.  Where openat2 is missing (ENOSYS, before
 * Linux 5.6) the path is walked a component at a time with O_NOFOLLOW,
 * refusing "..".
 *
 * Handles name inodes; the cache maps an inode to where it was last
 * seen, checked by dev and ino on every use, since clients rename and
 * remove behind its back.  After a restart the cache is empty: the
 * handle's parent hint is searched first, then the tree breadth-first,
 * a bounded number of entries.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "nfsd_fs.h"

/* The cache's slots (direct-mapped by inode: bounded, a collision
 * forgets the older entry) and the search's bound in directory entries
 * read. */
#define CACHE_SLOTS 65536
#define SEARCH_MAX_ENTRIES 1000000

static int root_fd = -1;
static struct stat root_st;
static uint8_t fh_key[NFS_FH_KEYLEN];
static uint32_t export_id;
static bool no_openat2;

struct slot {
	uint64_t ino;
	char *rel;
};
static struct slot cache[CACHE_SLOTS];

int nfsd_fs_init(const char *dir, const uint8_t key[NFS_FH_KEYLEN])
{
	uint8_t id[16];

	root_fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root_fd < 0 || fstat(root_fd, &root_st) < 0)
		return -1;
	memcpy(fh_key, key, NFS_FH_KEYLEN);
	/* The export id: the root's identity under the key, so that a
	 * handle made for another export of the same key is refused. */
	memcpy(id, &root_st.st_dev, 8);
	memcpy(id + 8, &root_st.st_ino, 8);
	export_id = (uint32_t)nfs_siphash24(key, id, sizeof(id));
	return 0;
}

uint32_t nfsd_fs_export_id(void)
{
	return export_id;
}

dev_t nfsd_fs_dev(void)
{
	return root_st.st_dev;
}

bool nfsd_path_join(const char *dir, const char *name, struct nfsd_path *out)
{
	int n = *dir ? snprintf(out->p, sizeof(out->p), "%s/%s", dir, name) :
		       snprintf(out->p, sizeof(out->p), "%s", name);

	return n >= 0 && (size_t)n < sizeof(out->p);
}

/* openat2's fallback: one component at a time, none of them "..", none
 * a symbolic link. */
static int open_walk(const char *rel, int flags, mode_t mode)
{
	char buf[PATH_MAX], *comp, *save = NULL, *next;
	int fd = dup(root_fd), nfd;

	if (fd < 0)
		return -1;
	if (strlen(rel) >= sizeof(buf)) {
		close(fd);
		errno = ENAMETOOLONG;
		return -1;
	}
	strcpy(buf, *rel ? rel : ".");
	for (comp = strtok_r(buf, "/", &save); comp; comp = next) {
		next = strtok_r(NULL, "/", &save);
		if (!strcmp(comp, "..")) {
			close(fd);
			errno = EXDEV;
			return -1;
		}
		nfd = next ? openat(fd, comp, O_PATH | O_DIRECTORY | O_NOFOLLOW |
				    O_CLOEXEC) :
			     openat(fd, comp, flags | O_NOFOLLOW | O_CLOEXEC, mode);
		close(fd);
		if (nfd < 0)
			return -1;
		fd = nfd;
	}
	return fd;
}

int nfsd_open(const char *rel, int flags, mode_t mode)
{
	struct open_how how = {
		.flags = (uint64_t)(flags | O_NOFOLLOW | O_CLOEXEC),
		.mode = (flags & O_CREAT) ? mode : 0,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
			   RESOLVE_NO_MAGICLINKS,
	};
	long fd;

	if (!no_openat2) {
		fd = syscall(SYS_openat2, root_fd, *rel ? rel : ".", &how,
			     sizeof(how));
		if (fd >= 0 || errno != ENOSYS)
			return (int)fd;
		no_openat2 = true;
	}
	return open_walk(rel, flags, mode);
}

uint32_t nfsd_gen(int fd, const struct stat *st)
{
	char proc[64];
	int rfd, gen = 0;

	/* only files and directories: opening a device or a FIFO to ask
	 * may have effects of its own */
	if (!S_ISREG(st->st_mode) && !S_ISDIR(st->st_mode))
		return 0;
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	rfd = open(proc, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (rfd < 0)
		return 0;
	if (ioctl(rfd, FS_IOC_GETVERSION, &gen) < 0)
		gen = 0;
	close(rfd);
	return (uint32_t)gen;
}

static struct slot *slot_of(uint64_t ino)
{
	return &cache[(ino * 0x9e3779b97f4a7c15ULL) >> 48];
}

void nfsd_cache_put(const char *rel, const struct stat *st)
{
	struct slot *s = slot_of(st->st_ino);
	char *copy;

	if (s->rel && s->ino == st->st_ino && !strcmp(s->rel, rel))
		return;
	if (!(copy = strdup(rel)))
		return;     /* a cache that forgets is still right */
	free(s->rel);
	s->rel = copy;
	s->ino = st->st_ino;
}

static void cache_drop(uint64_t ino)
{
	struct slot *s = slot_of(ino);

	if (s->rel && s->ino == ino) {
		free(s->rel);
		s->rel = NULL;
	}
}

/* The object at rel, if it is ino of the export's filesystem. */
static bool check_at(const char *rel, uint64_t ino, struct stat *st)
{
	int fd = nfsd_open(rel, O_PATH, 0);
	bool ok;

	if (fd < 0)
		return false;
	ok = !fstat(fd, st) && st->st_ino == ino && st->st_dev == root_st.st_dev;
	close(fd);
	return ok;
}

/* A bounded breadth-first search from start (a directory) for ino;
 * hint_only: that directory alone. */
static bool search(const char *start, uint64_t ino, bool hint_only,
		   struct nfsd_path *out)
{
	char **queue = NULL;
	size_t head = 0, tail = 0, cap = 0, seen = 0;
	bool found = false;

	if (!(queue = malloc(sizeof(*queue) * (cap = 64))) ||
	    !(queue[tail++] = strdup(start)))
		goto done;
	while (head < tail && !found && seen < SEARCH_MAX_ENTRIES) {
		char *dir = queue[head++];
		int fd = nfsd_open(dir, O_RDONLY | O_DIRECTORY, 0);
		DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
		struct dirent *e;
		struct stat st;
		struct nfsd_path p;

		if (!d && fd >= 0)
			close(fd);
		while (d && !found && (e = readdir(d)) &&
		       seen++ < SEARCH_MAX_ENTRIES) {
			if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
				continue;
			if (!nfsd_path_join(dir, e->d_name, &p))
				continue;
			if (e->d_ino == ino) {
				*out = p;
				found = true;
				break;
			}
			if (hint_only || (e->d_type != DT_DIR &&
					  e->d_type != DT_UNKNOWN))
				continue;
			/* not into other filesystems mounted below */
			if (fstatat(dirfd(d), e->d_name, &st,
				    AT_SYMLINK_NOFOLLOW) < 0 ||
			    !S_ISDIR(st.st_mode) || st.st_dev != root_st.st_dev)
				continue;
			if (tail == cap) {
				char **q = realloc(queue, sizeof(*q) * cap * 2);

				if (!q)
					continue;
				queue = q;
				cap *= 2;
			}
			if ((queue[tail] = strdup(p.p)))
				tail++;
		}
		if (d)
			closedir(d);
	}
done:
	for (size_t i = 0; i < tail; i++)
		free(queue[i]);
	free(queue);
	return found;
}

int nfsd_fh_resolve(const void *fh, size_t len, struct nfsd_path *path,
		    struct stat *st)
{
	struct nfs_fh f;
	struct slot *s;
	struct nfsd_path hint;
	int fd;
	uint32_t gen;
	bool found = false;

	if (!nfs_fh_decode(fh_key, export_id, fh, len, &f))
		return -EBADF;
	if (f.ino == root_st.st_ino) {
		path->p[0] = '\0';
		found = check_at("", f.ino, st);
	}
	s = slot_of(f.ino);
	if (!found && s->rel && s->ino == f.ino) {
		snprintf(path->p, sizeof(path->p), "%s", s->rel);
		found = check_at(path->p, f.ino, st);
		if (!found)
			cache_drop(f.ino);
	}
	if (!found && f.parent) {
		/* the directory it was made or found in, first */
		s = slot_of(f.parent);
		if (f.parent == root_st.st_ino)
			hint.p[0] = '\0';
		else if (s->rel && s->ino == f.parent)
			snprintf(hint.p, sizeof(hint.p), "%s", s->rel);
		else
			hint.p[0] = '\1';
		found = hint.p[0] != '\1' && search(hint.p, f.ino, true, path) &&
			check_at(path->p, f.ino, st);
	}
	if (!found)
		found = search("", f.ino, false, path) &&
			check_at(path->p, f.ino, st);
	if (!found)
		return -ESTALE;
	/* the inode number reused by another object: RFC 1813 §2.3.3's
	 * stale handle (0 on either side: the generation is unknown) */
	if (f.gen && (fd = nfsd_open(path->p, O_PATH, 0)) >= 0) {
		gen = nfsd_gen(fd, st);
		close(fd);
		if (gen && gen != f.gen)
			return -ESTALE;
	}
	nfsd_cache_put(path->p, st);
	return 0;
}

size_t nfsd_fh_make(const char *rel, const struct stat *st, uint64_t parent,
		    uint8_t out[NFS_FH_LEN])
{
	struct nfs_fh f = {
		.export_id = export_id,
		.ino = st->st_ino,
		.parent = parent,
	};
	int fd = nfsd_open(rel, O_PATH, 0);

	if (fd >= 0) {
		f.gen = nfsd_gen(fd, st);
		close(fd);
	}
	nfsd_cache_put(rel, st);
	return nfs_fh_encode(fh_key, &f, out);
}
