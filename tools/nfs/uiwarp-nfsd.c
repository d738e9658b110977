/*
 * uiwarp-nfsd: a user-space NFS version 3 server (RFC 1813) exporting
 * one directory over RPC-over-RDMA (RFC 8166 with RFC 8267's NFS
 * binding) and TCP, with MOUNT version 3 (RFC 1813 §5) over TCP only
 * (RFC 8267 §5.1).  See uiwarp-nfsd(8).
 *
 * rpcgen's dispatch (nfs3_prot_svc.c, mount3_svc.c, -M -m) calls the
 * nfsproc3_*_3_svc functions below; one thread serves every transport
 * from uiw_ru_serve's loop, so credentials set with setfsuid for a call
 * are the only ones in force while it runs.  The exported tree is
 * reached through nfsd_fs.h alone: beneath the root, never through a
 * symbolic link.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <inttypes.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/fsuid.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/param.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include "mount3.h"
#include "nfs3_prot.h"
#include "nfsd_fs.h"
#include "rpc_util.h"
#include "tool_util.h"

#define PROG_NAME "uiwarp-nfsd"
#define NOBODY 65534

/* rpcgen's dispatch functions: the headers have no prototypes. */
void nfs_program_3(struct svc_req *rqstp, SVCXPRT *transp);
void mount_program_3(struct svc_req *rqstp, SVCXPRT *transp);

/* FSINFO (RFC 1813 §3.3.19): what this server moves in one call. */
#define IO_MAX (1024 * 1024)
#define DIR_PREF (64 * 1024)

static struct {
	bool read_only, root_squash, quiet;
	bool as_root;               /* credentials are applied per call */
	char export_path[PATH_MAX];
	char verf[NFS3_WRITEVERFSIZE];
} cfg = { .root_squash = true };

/* ---- Tables ---------------------------------------------------------- */

/* errno to nfsstat3 (RFC 1813 §2.6): the one place it is decided. */
static const struct {
	int err;
	nfsstat3 st;
} errno_map[] = {
	{ EPERM, NFS3ERR_PERM },       { ENOENT, NFS3ERR_NOENT },
	{ EIO, NFS3ERR_IO },           { ENXIO, NFS3ERR_NXIO },
	{ EACCES, NFS3ERR_ACCES },     { EEXIST, NFS3ERR_EXIST },
	{ EXDEV, NFS3ERR_XDEV },       { ENODEV, NFS3ERR_NODEV },
	{ ENOTDIR, NFS3ERR_NOTDIR },   { EISDIR, NFS3ERR_ISDIR },
	{ EINVAL, NFS3ERR_INVAL },     { EFBIG, NFS3ERR_FBIG },
	{ ENOSPC, NFS3ERR_NOSPC },     { EROFS, NFS3ERR_ROFS },
	{ EMLINK, NFS3ERR_MLINK },     { ENAMETOOLONG, NFS3ERR_NAMETOOLONG },
	{ ENOTEMPTY, NFS3ERR_NOTEMPTY }, { EDQUOT, NFS3ERR_DQUOT },
	{ ESTALE, NFS3ERR_STALE },     { EBADF, NFS3ERR_BADHANDLE },
	{ EOPNOTSUPP, NFS3ERR_NOTSUPP }, { EAGAIN, NFS3ERR_JUKEBOX },
	{ ETXTBSY, NFS3ERR_ACCES },    { EOVERFLOW, NFS3ERR_FBIG },
	/* a symbolic link where the server will not follow one */
	{ ELOOP, NFS3ERR_INVAL },
	{ ENOMEM, NFS3ERR_SERVERFAULT },
};

static nfsstat3 st_of(int err)
{
	for (size_t i = 0; i < sizeof(errno_map) / sizeof(*errno_map); i++)
		if (errno_map[i].err == err)
			return errno_map[i].st;
	return NFS3ERR_IO;
}

/* File types (RFC 1813 §2.5 ftype3). */
static const struct {
	mode_t ifmt;
	ftype3 type;
} type_map[] = {
	{ S_IFREG, NF3REG }, { S_IFDIR, NF3DIR }, { S_IFBLK, NF3BLK },
	{ S_IFCHR, NF3CHR }, { S_IFLNK, NF3LNK }, { S_IFSOCK, NF3SOCK },
	{ S_IFIFO, NF3FIFO },
};

static ftype3 ftype_of(mode_t m)
{
	for (size_t i = 0; i < sizeof(type_map) / sizeof(*type_map); i++)
		if ((m & S_IFMT) == type_map[i].ifmt)
			return type_map[i].type;
	return NF3REG;
}

static mode_t ifmt_of(ftype3 t)
{
	for (size_t i = 0; i < sizeof(type_map) / sizeof(*type_map); i++)
		if (type_map[i].type == t)
			return type_map[i].ifmt;
	return 0;
}

/* ACCESS (RFC 1813 §3.3.4): each bit and the access(2) mode that
 * decides it, for directories, for the rest, or both. */
enum { ON_DIR = 1, ON_OTHER = 2 };
static const struct {
	uint32_t bit;
	int mode;
	int on;
} access_map[] = {
	{ ACCESS3_READ, R_OK, ON_DIR | ON_OTHER },
	{ ACCESS3_LOOKUP, X_OK, ON_DIR },
	{ ACCESS3_MODIFY, W_OK, ON_DIR | ON_OTHER },
	{ ACCESS3_EXTEND, W_OK, ON_DIR | ON_OTHER },
	{ ACCESS3_DELETE, W_OK, ON_DIR },
	{ ACCESS3_EXECUTE, X_OK, ON_OTHER },
};

/* One row per procedure (RFC 1813 §3.3): its name, and whether it
 * changes the tree (NFS3ERR_ROFS under --read-only). */
static const struct {
	const char *name;
	bool modifies;
} procs[] = {
	[NFSPROC3_NULL] = { "NULL", false },
	[NFSPROC3_GETATTR] = { "GETATTR", false },
	[NFSPROC3_SETATTR] = { "SETATTR", true },
	[NFSPROC3_LOOKUP] = { "LOOKUP", false },
	[NFSPROC3_ACCESS] = { "ACCESS", false },
	[NFSPROC3_READLINK] = { "READLINK", false },
	[NFSPROC3_READ] = { "READ", false },
	[NFSPROC3_WRITE] = { "WRITE", true },
	[NFSPROC3_CREATE] = { "CREATE", true },
	[NFSPROC3_MKDIR] = { "MKDIR", true },
	[NFSPROC3_SYMLINK] = { "SYMLINK", true },
	[NFSPROC3_MKNOD] = { "MKNOD", true },
	[NFSPROC3_REMOVE] = { "REMOVE", true },
	[NFSPROC3_RMDIR] = { "RMDIR", true },
	[NFSPROC3_RENAME] = { "RENAME", true },
	[NFSPROC3_LINK] = { "LINK", true },
	[NFSPROC3_READDIR] = { "READDIR", false },
	[NFSPROC3_READDIRPLUS] = { "READDIRPLUS", false },
	[NFSPROC3_FSSTAT] = { "FSSTAT", false },
	[NFSPROC3_FSINFO] = { "FSINFO", false },
	[NFSPROC3_PATHCONF] = { "PATHCONF", false },
	[NFSPROC3_COMMIT] = { "COMMIT", true },
};

/* ---- What a reply borrows until it is sent --------------------------- */

/* Buffers a reply points into (READ's data, READDIR's entries, handles)
 * live until rpcgen's dispatch has sent it and calls freeresult. */
static void *scratch[8192];
static size_t nscratch;

static void *scratch_alloc(size_t n)
{
	void *p;

	if (nscratch == sizeof(scratch) / sizeof(*scratch) ||
	    !(p = calloc(1, n ? n : 1)))
		return NULL;
	scratch[nscratch++] = p;
	return p;
}

static void scratch_free(void)
{
	while (nscratch)
		free(scratch[--nscratch]);
}

int nfs_program_3_freeresult(SVCXPRT *transp, xdrproc_t xdr_result,
			     caddr_t result)
{
	scratch_free();
	return 1;
}

int mount_program_3_freeresult(SVCXPRT *transp, xdrproc_t xdr_result,
			       caddr_t result)
{
	scratch_free();
	return 1;
}

/* ---- Credentials ------------------------------------------------------ */

static void creds_server(void)
{
	if (!cfg.as_root)
		return;
	setfsuid(0);
	setfsgid(0);
	/* per thread: libc's setgroups would signal every thread */
	syscall(SYS_setgroups, 0, NULL);
}

/* The caller's AUTH_SYS identity, root squashed unless told not to;
 * AUTH_NONE and anything else as nobody (RFC 1813 §4.4). */
static void creds_caller(struct svc_req *rq)
{
	uid_t uid = NOBODY;
	gid_t gid = NOBODY, gids[NGRPS];
	size_t ng = 0;

	if (!cfg.as_root)
		return;
	if (rq->rq_cred.oa_flavor == AUTH_SYS && rq->rq_clntcred) {
		const struct authunix_parms *a = rq->rq_clntcred;

		uid = a->aup_uid;
		gid = a->aup_gid;
		for (u_int i = 0; i < a->aup_len && i < NGRPS; i++)
			gids[ng++] = a->aup_gids[i];
		if (cfg.root_squash && uid == 0) {
			uid = NOBODY;
			gid = NOBODY;
			ng = 0;
		}
	}
	syscall(SYS_setgroups, ng, gids);
	setfsgid(gid);
	setfsuid(uid);
}

/* ---- Attributes ------------------------------------------------------- */

static void fattr_of(const struct stat *st, fattr3 *a)
{
	a->type = ftype_of(st->st_mode);
	a->mode = st->st_mode & 07777;
	a->nlink = (uint32)st->st_nlink;
	a->uid = st->st_uid;
	a->gid = st->st_gid;
	a->size = (uint64)st->st_size;
	a->used = (uint64)st->st_blocks * 512;
	a->rdev.specdata1 = major(st->st_rdev);
	a->rdev.specdata2 = minor(st->st_rdev);
	a->fsid = (uint64)nfsd_fs_dev();
	a->fileid = st->st_ino;
	a->atime = (nfstime3){ (uint32)st->st_atim.tv_sec,
			       (uint32)st->st_atim.tv_nsec };
	a->mtime = (nfstime3){ (uint32)st->st_mtim.tv_sec,
			       (uint32)st->st_mtim.tv_nsec };
	a->ctime = (nfstime3){ (uint32)st->st_ctim.tv_sec,
			       (uint32)st->st_ctim.tv_nsec };
}

/* post_op_attr of rel as it is now (none when it cannot be read). */
static void post_attr(const char *rel, post_op_attr *pa)
{
	struct stat st;
	int fd = nfsd_open(rel, O_PATH, 0);

	pa->attributes_follow = fd >= 0 && !fstat(fd, &st);
	if (pa->attributes_follow)
		fattr_of(&st, &pa->post_op_attr_u.attributes);
	if (fd >= 0)
		close(fd);
}

static void post_attr_st(const struct stat *st, post_op_attr *pa)
{
	pa->attributes_follow = TRUE;
	fattr_of(st, &pa->post_op_attr_u.attributes);
}

static void pre_attr(const struct stat *st, pre_op_attr *pa)
{
	pa->attributes_follow = TRUE;
	pa->pre_op_attr_u.attributes.size = (uint64)st->st_size;
	pa->pre_op_attr_u.attributes.mtime =
		(nfstime3){ (uint32)st->st_mtim.tv_sec,
			    (uint32)st->st_mtim.tv_nsec };
	pa->pre_op_attr_u.attributes.ctime =
		(nfstime3){ (uint32)st->st_ctim.tv_sec,
			    (uint32)st->st_ctim.tv_nsec };
}

/* wcc_data (RFC 1813 §2.6): before from the resolve, after from now. */
static void wcc(const struct stat *before, const char *rel, wcc_data *w)
{
	if (before)
		pre_attr(before, &w->before);
	else
		w->before.attributes_follow = FALSE;
	post_attr(rel, &w->after);
}

/* ---- A call's objects --------------------------------------------------- */

struct obj {
	struct nfsd_path path;
	struct stat st;
};

/*
 * The start of every procedure: handles resolved with the server's own
 * credentials (a path the caller may not search still names the object
 * its handle does), then the caller's applied; refusals by the table.
 * fh2/o2 may be NULL.
 */
static nfsstat3 start(struct svc_req *rq, int proc, const nfs_fh3 *fh,
		      struct obj *o, const nfs_fh3 *fh2, struct obj *o2)
{
	int rc = 0;

	creds_server();
	if (fh)
		rc = nfsd_fh_resolve(fh->data.data_val, fh->data.data_len,
				     &o->path, &o->st);
	if (!rc && fh2)
		rc = nfsd_fh_resolve(fh2->data.data_val, fh2->data.data_len,
				     &o2->path, &o2->st);
	if (rc)
		return rc == -EBADF ? NFS3ERR_BADHANDLE : NFS3ERR_STALE;
	creds_caller(rq);
	if (cfg.read_only && procs[proc].modifies)
		return NFS3ERR_ROFS;
	return NFS3_OK;
}

/* A name a client may create or remove in a directory (RFC 1813
 * §3.3.8: "." and ".." are there already; no "/" in one component). */
static nfsstat3 check_name(const char *nm, bool creating)
{
	if (!nm || !*nm)
		return NFS3ERR_NOENT;
	if (strlen(nm) > NAME_MAX)
		return NFS3ERR_NAMETOOLONG;
	if (strchr(nm, '/'))
		return NFS3ERR_INVAL;
	if (!strcmp(nm, ".") || !strcmp(nm, ".."))
		return creating ? NFS3ERR_EXIST : NFS3ERR_INVAL;
	return NFS3_OK;
}

/* The directory's child: its path, checked name and the dir's fd
 * (O_PATH).  *fd -1 on failure, with the status. */
static nfsstat3 child(const struct obj *dir, const char *nm, bool creating,
		      struct nfsd_path *p, int *fd)
{
	nfsstat3 s = check_name(nm, creating);

	*fd = -1;
	if (s)
		return s;
	if (!S_ISDIR(dir->st.st_mode))
		return NFS3ERR_NOTDIR;
	if (!nfsd_path_join(dir->path.p, nm, p))
		return NFS3ERR_NAMETOOLONG;
	if ((*fd = nfsd_open(dir->path.p, O_PATH | O_DIRECTORY, 0)) < 0)
		return st_of(errno);
	return NFS3_OK;
}

/* A handle for the object at rel into a post_op_fh3 and its attributes. */
static void new_obj(const char *rel, uint64_t parent, post_op_fh3 *fh,
		    post_op_attr *pa)
{
	struct stat st;
	int fd = nfsd_open(rel, O_PATH, 0);
	uint8_t *h;

	fh->handle_follows = FALSE;
	pa->attributes_follow = FALSE;
	if (fd < 0)
		return;
	if (!fstat(fd, &st)) {
		post_attr_st(&st, pa);
		if ((h = scratch_alloc(NFS_FH_LEN))) {
			fh->post_op_fh3_u.handle.data.data_len =
				(u_int)nfsd_fh_make(rel, &st, parent, h);
			fh->post_op_fh3_u.handle.data.data_val = (char *)h;
			fh->handle_follows = TRUE;
		}
	}
	close(fd);
}

static void proc_path(int fd, char *buf, size_t len)
{
	snprintf(buf, len, "/proc/self/fd/%d", fd);
}

/* sattr3 (RFC 1813 §2.6) applied to the object at rel: mode, owner,
 * size, times, in that order; -errno on the first failure. */
static int apply_sattr(const char *rel, const sattr3 *sa)
{
	char proc[64];
	struct timespec ts[2] = { { 0, UTIME_OMIT }, { 0, UTIME_OMIT } };
	int fd = nfsd_open(rel, O_PATH, 0), rc = 0;
	struct stat st;

	if (fd < 0)
		return -errno;
	proc_path(fd, proc, sizeof(proc));
	if (fstat(fd, &st) < 0)
		rc = -errno;
	/* the object itself through the descriptor: a symbolic link has
	 * no mode of its own on Linux */
	if (!rc && sa->mode.set_it && !S_ISLNK(st.st_mode) &&
	    chmod(proc, sa->mode.set_mode3_u.mode & 07777) < 0)
		rc = -errno;
	if (!rc && (sa->uid.set_it || sa->gid.set_it) &&
	    fchownat(fd, "", sa->uid.set_it ? sa->uid.set_uid3_u.uid : (uid_t)-1,
		     sa->gid.set_it ? sa->gid.set_gid3_u.gid : (gid_t)-1,
		     AT_EMPTY_PATH) < 0)
		rc = -errno;
	if (!rc && sa->size.set_it) {
		if (!S_ISREG(st.st_mode))
			rc = S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
		else if (truncate(proc, (off_t)sa->size.set_size3_u.size) < 0)
			rc = -errno;
	}
	if (sa->atime.set_it == SET_TO_SERVER_TIME)
		ts[0].tv_nsec = UTIME_NOW;
	else if (sa->atime.set_it == SET_TO_CLIENT_TIME)
		ts[0] = (struct timespec){ sa->atime.set_atime_u.atime.seconds,
					   sa->atime.set_atime_u.atime.nseconds };
	if (sa->mtime.set_it == SET_TO_SERVER_TIME)
		ts[1].tv_nsec = UTIME_NOW;
	else if (sa->mtime.set_it == SET_TO_CLIENT_TIME)
		ts[1] = (struct timespec){ sa->mtime.set_mtime_u.mtime.seconds,
					   sa->mtime.set_mtime_u.mtime.nseconds };
	if (!rc && (ts[0].tv_nsec != UTIME_OMIT || ts[1].tv_nsec != UTIME_OMIT) &&
	    !S_ISLNK(st.st_mode) && utimensat(AT_FDCWD, proc, ts, 0) < 0)
		rc = -errno;
	close(fd);
	return rc;
}

/* ---- The procedures (RFC 1813 §3.3) ------------------------------------ */

bool_t nfsproc3_null_3_svc(void *argp, void *result, struct svc_req *rq)
{
	return TRUE;
}

bool_t nfsproc3_getattr_3_svc(GETATTR3args *a, GETATTR3res *r,
			      struct svc_req *rq)
{
	struct obj o;

	memset(r, 0, sizeof(*r));
	r->status = start(rq, NFSPROC3_GETATTR, &a->object, &o, NULL, NULL);
	if (!r->status)
		fattr_of(&o.st, &r->GETATTR3res_u.resok.obj_attributes);
	return TRUE;
}

bool_t nfsproc3_setattr_3_svc(SETATTR3args *a, SETATTR3res *r,
			      struct svc_req *rq)
{
	struct obj o;
	int rc;

	memset(r, 0, sizeof(*r));
	r->status = start(rq, NFSPROC3_SETATTR, &a->object, &o, NULL, NULL);
	if (r->status == NFS3ERR_BADHANDLE || r->status == NFS3ERR_STALE)
		return TRUE;
	/* §3.3.2: the guard is the ctime the client last saw */
	if (!r->status && a->guard.check &&
	    (a->guard.sattrguard3_u.obj_ctime.seconds !=
	     (uint32)o.st.st_ctim.tv_sec ||
	     a->guard.sattrguard3_u.obj_ctime.nseconds !=
	     (uint32)o.st.st_ctim.tv_nsec))
		r->status = NFS3ERR_NOT_SYNC;
	if (!r->status && (rc = apply_sattr(o.path.p, &a->new_attributes)))
		r->status = st_of(-rc);
	wcc(&o.st, o.path.p, &r->SETATTR3res_u.resok.obj_wcc);
	return TRUE;
}

bool_t nfsproc3_lookup_3_svc(LOOKUP3args *a, LOOKUP3res *r, struct svc_req *rq)
{
	LOOKUP3resok *ok = &r->LOOKUP3res_u.resok;
	struct obj d;
	struct nfsd_path p;
	const char *nm = a->what.name;
	post_op_fh3 fh;
	int fd = -1;
	char *slash;

	memset(r, 0, sizeof(*r));
	r->status = start(rq, NFSPROC3_LOOKUP, &a->what.dir, &d, NULL, NULL);
	if (r->status == NFS3ERR_BADHANDLE || r->status == NFS3ERR_STALE)
		return TRUE;
	if (!r->status && !S_ISDIR(d.st.st_mode))
		r->status = NFS3ERR_NOTDIR;
	/* "." is the directory, ".." its parent; the root's ".." is the
	 * root (nothing above the export is reachable) */
	if (!r->status && (!strcmp(nm, ".") || !strcmp(nm, ".."))) {
		p = d.path;
		if (nm[1] && (slash = strrchr(p.p, '/')))
			*slash = '\0';
		else if (nm[1])
			p.p[0] = '\0';
		/* search permission on the directory all the same */
		if ((fd = nfsd_open(d.path.p, O_PATH | O_DIRECTORY, 0)) < 0)
			r->status = st_of(errno);
		else if (faccessat(fd, "", X_OK, AT_EACCESS | AT_EMPTY_PATH) < 0)
			r->status = st_of(errno);
		if (fd >= 0)
			close(fd);
	} else if (!r->status) {
		r->status = child(&d, nm, false, &p, &fd);
		if (fd >= 0) {
			struct stat st;

			if (fstatat(fd, nm, &st, AT_SYMLINK_NOFOLLOW) < 0)
				r->status = st_of(errno);
			close(fd);
		}
	}
	if (!r->status) {
		new_obj(p.p, d.st.st_ino, &fh, &ok->obj_attributes);
		if (!fh.handle_follows)
			r->status = NFS3ERR_SERVERFAULT;
		else
			ok->object = fh.post_op_fh3_u.handle;
	}
	post_attr(d.path.p, r->status ? &r->LOOKUP3res_u.resfail.dir_attributes :
				    &ok->dir_attributes);
	return TRUE;
}

bool_t nfsproc3_access_3_svc(ACCESS3args *a, ACCESS3res *r, struct svc_req *rq)
{
	struct obj o;
	char proc[64];
	int fd, on;

	memset(r, 0, sizeof(*r));
	r->status = start(rq, NFSPROC3_ACCESS, &a->object, &o, NULL, NULL);
	if (r->status)
		return TRUE;
	post_attr_st(&o.st, &r->ACCESS3res_u.resok.obj_attributes);
	r->ACCESS3res_u.resok.access = 0;
	if ((fd = nfsd_open(o.path.p, O_PATH, 0)) < 0)
		return TRUE;
	proc_path(fd, proc, sizeof(proc));
	on = S_ISDIR(o.st.st_mode) ? ON_DIR : ON_OTHER;
	/* the kernel's own check under the caller's fsuid and groups */
	for (size_t i = 0; i < sizeof(access_map) / sizeof(*access_map); i++)
		if ((a->access & access_map[i].bit) && (access_map[i].on & on) &&
		    (S_ISLNK(o.st.st_mode) ||
		     !faccessat(AT_FDCWD, proc, access_map[i].mode, AT_EACCESS)))
			r->ACCESS3res_u.resok.access |= access_map[i].bit;
	if (cfg.read_only)
		r->ACCESS3res_u.resok.access &= ~(uint32)(ACCESS3_MODIFY |
					ACCESS3_EXTEND | ACCESS3_DELETE);
	close(fd);
	return TRUE;
}

bool_t nfsproc3_readlink_3_svc(READLINK3args *a, READLINK3res *r,
			       struct svc_req *rq)
{
	struct obj o;
	char *buf;
	ssize_t n;
	int fd;

	memset(r, 0, sizeof(*r));
	r->status = start(rq, NFSPROC3_READLINK, &a->symlink, &o, NULL, NULL);
	if (r->status)
		return TRUE;
	post_attr_st(&o.st, &r->READLINK3res_u.resok.symlink_attributes);
	if (!S_ISLNK(o.st.st_mode)) {
		r->status = NFS3ERR_INVAL;
		return TRUE;
	}
	if (!(buf = scratch_alloc(PATH_MAX + 1)) ||
	    (fd = nfsd_open(o.path.p, O_PATH, 0)) < 0) {
		r->status = buf ? st_of(errno) : NFS3ERR_SERVERFAULT;
		return TRUE;
	}
	/* the text as stored, never resolved (§3.3.5) */
	n = readlinkat(fd, "", buf, PATH_MAX);
	if (n < 0)
		r->status = st_of(errno);
	else
		buf[n] = '\0';
	close(fd);
	r->READLINK3res_u.resok.data = buf;
	return TRUE;
}

bool_t nfsproc3_read_3_svc(READ3args *a, READ3res *r, struct svc_req *rq)
{
	READ3resok *ok = &r->READ3res_u.resok;
	struct obj o;
	size_t count = a->count < IO_MAX ? a->count : IO_MAX, got = 0;
	char *buf;
	ssize_t n;
	int fd;

	memset(r, 0, sizeof(*r));
	r->status = start(rq, NFSPROC3_READ, &a->file, &o, NULL, NULL);
	if (r->status)
		return TRUE;
	if (!S_ISREG(o.st.st_mode))
		r->status = S_ISDIR(o.st.st_mode) ? NFS3ERR_ISDIR : NFS3ERR_INVAL;
	else if ((fd = nfsd_open(o.path.p, O_RDONLY, 0)) < 0)
		r->status = st_of(errno);
	else {
		if (!(buf = scratch_alloc(count)))
			r->status = NFS3ERR_SERVERFAULT;
		while (!r->status && got < count &&
		       (n = pread(fd, buf + got, count - got,
				  (off_t)(a->offset + got))) != 0) {
			if (n < 0 && errno != EINTR)
				r->status = st_of(errno);
			else if (n > 0)
				got += (size_t)n;
		}
		if (!r->status) {
			struct stat st;

			ok->count = (count3)got;
			ok->data.data_len = (u_int)got;
			ok->data.data_val = buf;
			ok->eof = !fstat(fd, &st) &&
				  a->offset + got >= (uint64_t)st.st_size;
		}
		close(fd);
	}
	post_attr(o.path.p, r->status ? &r->READ3res_u.resfail.file_attributes :
				    &ok->file_attributes);
	return TRUE;
}

bool_t nfsproc3_write_3_svc(WRITE3args *a, WRITE3res *r, struct svc_req *rq)
{
	WRITE3resok *ok = &r->WRITE3res_u.resok;
	struct obj o;
	size_t len = a->data.data_len, done = 0;
	ssize_t n;
	int fd;

	memset(r, 0, sizeof(*r));
	r->status = start(rq, NFSPROC3_WRITE, &a->file, &o, NULL, NULL);
	if (r->status == NFS3ERR_BADHANDLE || r->status == NFS3ERR_STALE)
		return TRUE;
	if (len > a->count)
		len = a->count;
	if (r->status)
		;
	else if (!S_ISREG(o.st.st_mode))
		r->status = S_ISDIR(o.st.st_mode) ? NFS3ERR_ISDIR : NFS3ERR_INVAL;
	else if ((fd = nfsd_open(o.path.p, O_WRONLY, 0)) < 0)
		r->status = st_of(errno);
	else {
		while (!r->status && done < len) {
			n = pwrite(fd, a->data.data_val + done, len - done,
				   (off_t)(a->offset + done));
			if (n < 0 && errno != EINTR)
				r->status = st_of(errno);
			else if (n > 0)
				done += (size_t)n;
		}
		/* §3.3.7: UNSTABLE may stay in the page cache until
		 * COMMIT; the others are on stable storage before the
		 * reply, and are then reported FILE_SYNC */
		if (!r->status && a->stable != UNSTABLE &&
		    (a->stable == DATA_SYNC ? fdatasync(fd) : fsync(fd)) < 0)
			r->status = st_of(errno);
		close(fd);
		ok->count = (count3)done;
		ok->committed = a->stable == UNSTABLE ? UNSTABLE : FILE_SYNC;
		memcpy(ok->verf, cfg.verf, sizeof(ok->verf));
	}
	wcc(&o.st, o.path.p, &ok->file_wcc);
	return TRUE;
}

/* What CREATE, MKDIR, SYMLINK and MKNOD share: the directory resolved,
 * the name checked, make() run, then the new object's handle and both
 * wcc's.  make returns 0 or -errno. */
struct make_ctx {
	int dfd;
	const char *name;
	const void *arg;
	const sattr3 *sa;           /* applied after, when not NULL */
};

static void do_make(struct svc_req *rq, int proc, const diropargs3 *where,
		    int (*make)(struct make_ctx *c), struct make_ctx *c,
		    nfsstat3 *status, CREATE3resok *ok, CREATE3resfail *fail)
{
	struct obj d;
	struct nfsd_path p;
	int rc;

	*status = start(rq, proc, &where->dir, &d, NULL, NULL);
	if (*status == NFS3ERR_BADHANDLE || *status == NFS3ERR_STALE)
		return;
	if (!*status)
		*status = child(&d, where->name, true, &p, &c->dfd);
	if (!*status) {
		c->name = where->name;
		if ((rc = make(c)))
			*status = st_of(-rc);
		else if (c->sa && (rc = apply_sattr(p.p, c->sa)))
			*status = st_of(-rc);
		if (!*status)
			new_obj(p.p, d.st.st_ino, &ok->obj, &ok->obj_attributes);
	}
	if (c->dfd >= 0)
		close(c->dfd);
	/* resok and resfail are laid out differently */
	wcc(&d.st, d.path.p, *status ? &fail->dir_wcc : &ok->dir_wcc);
}

static int make_file(struct make_ctx *c)
{
	const createhow3 *how = c->arg;
	int flags = O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, fd;
	mode_t mode = 0644;
	struct stat st;
	struct timespec ts[2];

	if (how->mode != UNCHECKED)
		flags |= O_EXCL;
	if (how->mode != EXCLUSIVE &&
	    how->createhow3_u.obj_attributes.mode.set_it)
		mode = how->createhow3_u.obj_attributes.mode.set_mode3_u.mode &
		       07777;
	fd = openat(c->dfd, c->name, flags, mode);
	/* §3.3.8 EXCLUSIVE: the verifier is kept in atime and mtime; a
	 * retransmitted CREATE finds it there and succeeds */
	if (fd < 0 && errno == EEXIST && how->mode == EXCLUSIVE &&
	    !fstatat(c->dfd, c->name, &st, AT_SYMLINK_NOFOLLOW) &&
	    S_ISREG(st.st_mode) &&
	    !memcmp(&st.st_atim.tv_sec, how->createhow3_u.verf, 4) &&
	    !memcmp(&st.st_mtim.tv_sec, how->createhow3_u.verf + 4, 4))
		return 0;
	if (fd < 0)
		return -errno;
	if (how->mode == EXCLUSIVE) {
		uint32_t v[2];

		memcpy(v, how->createhow3_u.verf, sizeof(v));
		ts[0] = (struct timespec){ v[0], 0 };
		ts[1] = (struct timespec){ v[1], 0 };
		futimens(fd, ts);
	} else if (how->createhow3_u.obj_attributes.size.set_it &&
		   ftruncate(fd, (off_t)how->createhow3_u.obj_attributes.size
			     .set_size3_u.size) < 0) {
		int e = errno;

		close(fd);
		return -e;
	}
	close(fd);
	return 0;
}

bool_t nfsproc3_create_3_svc(CREATE3args *a, CREATE3res *r, struct svc_req *rq)
{
	struct make_ctx c = { .dfd = -1, .arg = &a->how };
	sattr3 rest;

	memset(r, 0, sizeof(*r));
	memset(r, 0, sizeof(*r));
	/* mode and size go with the open; owner and times after */
	if (a->how.mode != EXCLUSIVE) {
		rest = a->how.createhow3_u.obj_attributes;
		rest.mode.set_it = FALSE;
		rest.size.set_it = FALSE;
		c.sa = &rest;
	}
	do_make(rq, NFSPROC3_CREATE, &a->where, make_file, &c, &r->status,
		&r->CREATE3res_u.resok, &r->CREATE3res_u.resfail);
	return TRUE;
}

static int make_dir(struct make_ctx *c)
{
	const sattr3 *sa = c->arg;
	mode_t mode = sa->mode.set_it ? sa->mode.set_mode3_u.mode & 07777 : 0755;

	return mkdirat(c->dfd, c->name, mode) < 0 ? -errno : 0;
}

bool_t nfsproc3_mkdir_3_svc(MKDIR3args *a, MKDIR3res *r, struct svc_req *rq)
{
	sattr3 rest = a->attributes;
	struct make_ctx c = { .dfd = -1, .arg = &a->attributes, .sa = &rest };

	memset(r, 0, sizeof(*r));
	memset(r, 0, sizeof(*r));
	rest.mode.set_it = FALSE;
	do_make(rq, NFSPROC3_MKDIR, &a->where, make_dir, &c, &r->status,
		&r->MKDIR3res_u.resok, &r->MKDIR3res_u.resfail);
	return TRUE;
}

static int make_symlink(struct make_ctx *c)
{
	/* the text verbatim (§3.3.10): never interpreted here */
	return symlinkat(c->arg, c->dfd, c->name) < 0 ? -errno : 0;
}

bool_t nfsproc3_symlink_3_svc(SYMLINK3args *a, SYMLINK3res *r,
			      struct svc_req *rq)
{
	struct make_ctx c = { .dfd = -1, .arg = a->symlink.symlink_data };

	memset(r, 0, sizeof(*r));
	if (!a->symlink.symlink_data) {
		r->status = NFS3ERR_INVAL;
		return TRUE;
	}
	do_make(rq, NFSPROC3_SYMLINK, &a->where, make_symlink, &c, &r->status,
		&r->SYMLINK3res_u.resok, &r->SYMLINK3res_u.resfail);
	return TRUE;
}

static int make_node(struct make_ctx *c)
{
	const mknoddata3 *w = c->arg;
	const sattr3 *sa = w->type == NF3CHR || w->type == NF3BLK ?
		&w->mknoddata3_u.device.dev_attributes :
		&w->mknoddata3_u.pipe_attributes;
	mode_t mode = sa->mode.set_it ? sa->mode.set_mode3_u.mode & 07777 : 0644;
	dev_t dev = 0;

	if (w->type == NF3CHR || w->type == NF3BLK)
		dev = makedev(w->mknoddata3_u.device.spec.specdata1,
			      w->mknoddata3_u.device.spec.specdata2);
	return mknodat(c->dfd, c->name, ifmt_of(w->type) | mode, dev) < 0 ?
	       -errno : 0;
}

bool_t nfsproc3_mknod_3_svc(MKNOD3args *a, MKNOD3res *r, struct svc_req *rq)
{
	struct make_ctx c = { .dfd = -1, .arg = &a->what };

	memset(r, 0, sizeof(*r));
	/* §3.3.11: regular files, directories and links have their own
	 * procedures */
	if (a->what.type != NF3CHR && a->what.type != NF3BLK &&
	    a->what.type != NF3SOCK && a->what.type != NF3FIFO) {
		r->status = NFS3ERR_BADTYPE;
		return TRUE;
	}
	do_make(rq, NFSPROC3_MKNOD, &a->where, make_node, &c, &r->status,
		&r->MKNOD3res_u.resok, &r->MKNOD3res_u.resfail);
	return TRUE;
}

/* REMOVE and RMDIR: flags 0 or AT_REMOVEDIR. */
static void do_remove(struct svc_req *rq, int proc, const diropargs3 *what,
		      int flags, nfsstat3 *status, wcc_data *w)
{
	struct obj d;
	struct nfsd_path p;
	int fd = -1;

	*status = start(rq, proc, &what->dir, &d, NULL, NULL);
	if (*status == NFS3ERR_BADHANDLE || *status == NFS3ERR_STALE)
		return;
	if (!*status)
		*status = child(&d, what->name, false, &p, &fd);
	if (!*status && unlinkat(fd, what->name, flags) < 0)
		*status = st_of(errno == EISDIR && !flags ? EISDIR : errno);
	if (fd >= 0)
		close(fd);
	wcc(&d.st, d.path.p, w);
}

bool_t nfsproc3_remove_3_svc(REMOVE3args *a, REMOVE3res *r, struct svc_req *rq)
{
	do_remove(rq, NFSPROC3_REMOVE, &a->object, 0, &r->status,
		  &r->REMOVE3res_u.resok.dir_wcc);
	return TRUE;
}

bool_t nfsproc3_rmdir_3_svc(RMDIR3args *a, RMDIR3res *r, struct svc_req *rq)
{
	do_remove(rq, NFSPROC3_RMDIR, &a->object, AT_REMOVEDIR, &r->status,
		  &r->RMDIR3res_u.resok.dir_wcc);
	return TRUE;
}

bool_t nfsproc3_rename_3_svc(RENAME3args *a, RENAME3res *r, struct svc_req *rq)
{
	RENAME3resok *ok = &r->RENAME3res_u.resok;
	struct obj f, t;
	struct nfsd_path fp, tp;
	int ffd = -1, tfd = -1;
	struct stat st;

	memset(r, 0, sizeof(*r));
	r->status = start(rq, NFSPROC3_RENAME, &a->from.dir, &f, &a->to.dir, &t);
	if (r->status == NFS3ERR_BADHANDLE || r->status == NFS3ERR_STALE)
		return TRUE;
	if (!r->status)
		r->status = child(&f, a->from.name, false, &fp, &ffd);
	if (!r->status)
		r->status = child(&t, a->to.name, true, &tp, &tfd);
	if (!r->status && renameat(ffd, a->from.name, tfd, a->to.name) < 0)
		r->status = st_of(errno);
	if (!r->status && !fstatat(tfd, a->to.name, &st, AT_SYMLINK_NOFOLLOW))
		nfsd_cache_put(tp.p, &st);
	if (ffd >= 0)
		close(ffd);
	if (tfd >= 0)
		close(tfd);
	wcc(&f.st, f.path.p, &ok->fromdir_wcc);
	wcc(&t.st, t.path.p, &ok->todir_wcc);
	return TRUE;
}

bool_t nfsproc3_link_3_svc(LINK3args *a, LINK3res *r, struct svc_req *rq)
{
	LINK3resok *ok = &r->LINK3res_u.resok;
	struct obj o, d;
	struct nfsd_path p;
	int dfd = -1, ofd = -1;

	memset(r, 0, sizeof(*r));
	r->status = start(rq, NFSPROC3_LINK, &a->file, &o, &a->link.dir, &d);
	if (r->status == NFS3ERR_BADHANDLE || r->status == NFS3ERR_STALE)
		return TRUE;
	if (!r->status && S_ISDIR(o.st.st_mode))
		r->status = NFS3ERR_ISDIR;
	if (!r->status)
		r->status = child(&d, a->link.name, true, &p, &dfd);
	if (!r->status && (ofd = nfsd_open(o.path.p, O_PATH, 0)) < 0)
		r->status = st_of(errno);
	if (!r->status && linkat(ofd, "", dfd, a->link.name, AT_EMPTY_PATH) < 0)
		r->status = st_of(errno);
	if (ofd >= 0)
		close(ofd);
	if (dfd >= 0)
		close(dfd);
	post_attr(o.path.p, &ok->file_attributes);
	wcc(&d.st, d.path.p, &ok->linkdir_wcc);
	return TRUE;
}

/*
 * READDIR and READDIRPLUS (§3.3.16, §3.3.17): cookies are the
 * directory stream's own offsets (d_off: where the next entry starts),
 * stable across calls; the cookie verifier is the server run's, and
 * not checked (§3.3.16 allows a server to ignore it).  Entries are
 * added while their encoded size fits count (READDIR) or dircount and
 * maxcount (READDIRPLUS); NFS3ERR_TOOSMALL when not even one does.
 */
#define XDR_LEN(n) (4 + (((size_t)(n) + 3) & ~(size_t)3))
#define FATTR3_LEN 84
/* status, post_op_attr, cookieverf, the list's end and eof */
#define DIR_REPLY_HEAD (4 + 4 + FATTR3_LEN + 8 + 4 + 4)
/* A READDIR or READDIRPLUS reply is held whole in memory before it is
 * sent: however large a count the client asks for, one reply stays
 * within this (RFC 1813 §3.3.16 lets the server return fewer entries;
 * the client goes on from the last cookie), and with the RPC reply's own
 * header it fits a Reply chunk of 1 MiB (RFC 8166 §3.5.3). */
#define DIR_REPLY_MAX (1024 * 1024 - 4096)

struct dir_walk {
	uint64_t cookie;
	size_t budget, dirbudget;   /* octets left of maxcount, dircount */
	bool plus;
	struct obj *d;
	void **first, **last;       /* the list built, linked by next_of */
	bool eof;
	nfsstat3 status;
	unsigned n;
};

static void dir_walk(struct dir_walk *w)
{
	int fd = nfsd_open(w->d->path.p, O_RDONLY | O_DIRECTORY, 0);
	DIR *dir = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *e;
	void *prev = NULL;

	if (!dir) {
		w->status = st_of(errno);
		if (fd >= 0)
			close(fd);
		return;
	}
	if (w->cookie)
		seekdir(dir, (long)w->cookie);
	w->eof = true;
	while ((errno = 0, e = readdir(dir))) {
		size_t nlen = strlen(e->d_name);
		size_t dsize = 4 + 8 + XDR_LEN(nlen) + 8;
		size_t size = dsize + (w->plus ? 4 + FATTR3_LEN + 4 +
				       XDR_LEN(NFS_FH_LEN) : 0);
		struct nfsd_path p;
		struct stat st;
		bool is_dot = !strcmp(e->d_name, "."),
		     is_dotdot = !strcmp(e->d_name, "..");
		void *ent;
		char *nm;

		if (size > w->budget || (w->plus && dsize > w->dirbudget)) {
			w->eof = false;
			break;
		}
		ent = scratch_alloc(w->plus ? sizeof(entryplus3) : sizeof(entry3));
		nm = scratch_alloc(nlen + 1);
		if (!ent || !nm) {
			w->eof = false;
			break;
		}
		memcpy(nm, e->d_name, nlen);
		w->budget -= size;
		w->dirbudget -= dsize;
		if (w->plus) {
			entryplus3 *x = ent;

			x->fileid = e->d_ino;
			x->name = nm;
			x->cookie = (cookie3)e->d_off;
			/* "." and "..": their handles through LOOKUP (the
			 * root's ".." is the root, which fileid tells) */
			if (is_dotdot && !w->d->path.p[0])
				x->fileid = w->d->st.st_ino;
			if (!is_dot && !is_dotdot &&
			    nfsd_path_join(w->d->path.p, e->d_name, &p) &&
			    !fstatat(dirfd(dir), e->d_name, &st,
				     AT_SYMLINK_NOFOLLOW))
				new_obj(p.p, w->d->st.st_ino, &x->name_handle,
					&x->name_attributes);
			if (prev)
				((entryplus3 *)prev)->nextentry = x;
		} else {
			entry3 *x = ent;

			x->fileid = is_dotdot && !w->d->path.p[0] ?
				    w->d->st.st_ino : e->d_ino;
			x->name = nm;
			x->cookie = (cookie3)e->d_off;
			if (prev)
				((entry3 *)prev)->nextentry = x;
		}
		if (!prev)
			*w->first = ent;
		prev = ent;
		w->n++;
	}
	if (!e && errno)
		w->status = st_of(errno);
	if (!w->status && !w->n && !w->eof)
		w->status = NFS3ERR_TOOSMALL;
	closedir(dir);
}

bool_t nfsproc3_readdir_3_svc(READDIR3args *a, READDIR3res *r,
			      struct svc_req *rq)
{
	READDIR3resok *ok = &r->READDIR3res_u.resok;
	struct obj d;
	void *first = NULL;
	struct dir_walk w = { .cookie = a->cookie, .d = &d, .first = &first };

	memset(r, 0, sizeof(*r));
	r->status = start(rq, NFSPROC3_READDIR, &a->dir, &d, NULL, NULL);
	if (r->status)
		return TRUE;
	if (!S_ISDIR(d.st.st_mode))
		r->status = NFS3ERR_NOTDIR;
	w.budget = a->count > DIR_REPLY_HEAD ?
		   MIN(a->count, DIR_REPLY_MAX) - DIR_REPLY_HEAD : 0;
	w.dirbudget = SIZE_MAX;
	if (!r->status) {
		dir_walk(&w);
		r->status = w.status;
	}
	post_attr(d.path.p, r->status ? &r->READDIR3res_u.resfail.dir_attributes :
				    &ok->dir_attributes);
	if (!r->status) {
		memcpy(ok->cookieverf, cfg.verf, NFS3_COOKIEVERFSIZE);
		ok->reply.entries = first;
		ok->reply.eof = w.eof;
	}
	return TRUE;
}

bool_t nfsproc3_readdirplus_3_svc(READDIRPLUS3args *a, READDIRPLUS3res *r,
				  struct svc_req *rq)
{
	READDIRPLUS3resok *ok = &r->READDIRPLUS3res_u.resok;
	struct obj d;
	void *first = NULL;
	struct dir_walk w = { .cookie = a->cookie, .d = &d, .first = &first,
			      .plus = true };

	memset(r, 0, sizeof(*r));
	r->status = start(rq, NFSPROC3_READDIRPLUS, &a->dir, &d, NULL, NULL);
	if (r->status)
		return TRUE;
	if (!S_ISDIR(d.st.st_mode))
		r->status = NFS3ERR_NOTDIR;
	w.budget = a->maxcount > DIR_REPLY_HEAD ?
		   MIN(a->maxcount, DIR_REPLY_MAX) - DIR_REPLY_HEAD : 0;
	w.dirbudget = MIN(a->dircount, DIR_REPLY_MAX);
	if (!r->status) {
		dir_walk(&w);
		r->status = w.status;
	}
	post_attr(d.path.p,
		  r->status ? &r->READDIRPLUS3res_u.resfail.dir_attributes :
			      &ok->dir_attributes);
	if (!r->status) {
		memcpy(ok->cookieverf, cfg.verf, NFS3_COOKIEVERFSIZE);
		ok->reply.entries = first;
		ok->reply.eof = w.eof;
	}
	return TRUE;
}

bool_t nfsproc3_fsstat_3_svc(FSSTAT3args *a, FSSTAT3res *r, struct svc_req *rq)
{
	FSSTAT3resok *ok = &r->FSSTAT3res_u.resok;
	struct obj o;
	struct statvfs v;
	int fd;

	memset(r, 0, sizeof(*r));
	r->status = start(rq, NFSPROC3_FSSTAT, &a->fsroot, &o, NULL, NULL);
	if (r->status)
		return TRUE;
	post_attr_st(&o.st, &ok->obj_attributes);
	if ((fd = nfsd_open(o.path.p, O_PATH, 0)) < 0 || fstatvfs(fd, &v) < 0) {
		r->status = st_of(errno);
	} else {
		ok->tbytes = (uint64)v.f_blocks * v.f_frsize;
		ok->fbytes = (uint64)v.f_bfree * v.f_frsize;
		ok->abytes = (uint64)v.f_bavail * v.f_frsize;
		ok->tfiles = v.f_files;
		ok->ffiles = v.f_ffree;
		ok->afiles = v.f_favail;
		ok->invarsec = 0;
	}
	if (fd >= 0)
		close(fd);
	return TRUE;
}

bool_t nfsproc3_fsinfo_3_svc(FSINFO3args *a, FSINFO3res *r, struct svc_req *rq)
{
	FSINFO3resok *ok = &r->FSINFO3res_u.resok;
	struct obj o;

	memset(r, 0, sizeof(*r));
	r->status = start(rq, NFSPROC3_FSINFO, &a->fsroot, &o, NULL, NULL);
	if (r->status)
		return TRUE;
	post_attr_st(&o.st, &ok->obj_attributes);
	ok->rtmax = ok->rtpref = IO_MAX;
	ok->wtmax = ok->wtpref = IO_MAX;
	ok->rtmult = ok->wtmult = 4096;
	ok->dtpref = DIR_PREF;
	ok->maxfilesize = (uint64)INT64_MAX;
	ok->time_delta = (nfstime3){ 0, 1 };
	ok->properties = FSF3_LINK | FSF3_SYMLINK | FSF3_HOMOGENEOUS |
			 FSF3_CANSETTIME;
	return TRUE;
}

bool_t nfsproc3_pathconf_3_svc(PATHCONF3args *a, PATHCONF3res *r,
			       struct svc_req *rq)
{
	PATHCONF3resok *ok = &r->PATHCONF3res_u.resok;
	struct obj o;

	memset(r, 0, sizeof(*r));
	r->status = start(rq, NFSPROC3_PATHCONF, &a->object, &o, NULL, NULL);
	if (r->status)
		return TRUE;
	post_attr_st(&o.st, &ok->obj_attributes);
	ok->linkmax = 65000;
	ok->name_max = NAME_MAX;
	ok->no_trunc = TRUE;
	ok->chown_restricted = TRUE;
	ok->case_insensitive = FALSE;
	ok->case_preserving = TRUE;
	return TRUE;
}

bool_t nfsproc3_commit_3_svc(COMMIT3args *a, COMMIT3res *r, struct svc_req *rq)
{
	COMMIT3resok *ok = &r->COMMIT3res_u.resok;
	struct obj o;
	int fd;

	memset(r, 0, sizeof(*r));
	r->status = start(rq, NFSPROC3_COMMIT, &a->file, &o, NULL, NULL);
	if (r->status == NFS3ERR_BADHANDLE || r->status == NFS3ERR_STALE)
		return TRUE;
	/* a read-only export has nothing unstable to commit */
	if (r->status == NFS3ERR_ROFS)
		r->status = NFS3_OK;
	else if (!S_ISREG(o.st.st_mode))
		r->status = NFS3ERR_INVAL;
	/* the whole file: fsync is what Linux offers (§3.3.21 allows
	 * more than the range asked) */
	else if ((fd = nfsd_open(o.path.p, O_RDONLY, 0)) < 0 &&
		 (fd = nfsd_open(o.path.p, O_WRONLY, 0)) < 0)
		r->status = st_of(errno);
	else {
		if (fsync(fd) < 0)
			r->status = st_of(errno);
		close(fd);
	}
	wcc(&o.st, o.path.p, &ok->file_wcc);
	memcpy(ok->verf, cfg.verf, sizeof(ok->verf));
	return TRUE;
}

/* ---- MOUNT version 3 (RFC 1813 §5) --------------------------------------- */

/* Who mounted (DUMP): host and path, a bounded list. */
#define MOUNTS_MAX 256
static struct {
	char host[MNTNAMLEN + 1];
} mounts[MOUNTS_MAX];
static size_t nmounts;

static void caller_host(struct svc_req *rq, char *buf, size_t len)
{
	struct netbuf *nb = svc_getrpccaller(rq->rq_xprt);
	const struct sockaddr *sa = nb ? nb->buf : NULL;

	buf[0] = '\0';
	if (sa && sa->sa_family == AF_INET)
		inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr,
			  buf, (socklen_t)len);
	else if (sa && sa->sa_family == AF_INET6)
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr,
			  buf, (socklen_t)len);
}

static bool is_export(const char *path)
{
	return path && (!strcmp(path, cfg.export_path) || !strcmp(path, "/"));
}

bool_t mountproc3_null_3_svc(void *argp, void *result, struct svc_req *rq)
{
	return TRUE;
}

bool_t mountproc3_mnt_3_svc(dirpath *path, mountres3 *r, struct svc_req *rq)
{
	static int flavors[] = { AUTH_SYS, AUTH_NONE };
	mountres3_ok *ok = &r->mountres3_u.mountinfo;
	struct stat st;
	uint8_t *h;
	int fd;
	char host[MNTNAMLEN + 1];

	creds_server();
	if (!is_export(*path)) {
		r->fhs_status = MNT3ERR_NOENT;
		return TRUE;
	}
	if ((fd = nfsd_open("", O_PATH, 0)) < 0 || fstat(fd, &st) < 0 ||
	    !(h = scratch_alloc(NFS_FH_LEN))) {
		r->fhs_status = MNT3ERR_SERVERFAULT;
		if (fd >= 0)
			close(fd);
		return TRUE;
	}
	close(fd);
	r->fhs_status = MNT3_OK;
	ok->fhandle.fhandle3_len = (u_int)nfsd_fh_make("", &st, st.st_ino, h);
	ok->fhandle.fhandle3_val = (char *)h;
	ok->auth_flavors.auth_flavors_len = 2;
	ok->auth_flavors.auth_flavors_val = flavors;
	caller_host(rq, host, sizeof(host));
	for (size_t i = 0; i < nmounts; i++)
		if (!strcmp(mounts[i].host, host))
			return TRUE;
	if (nmounts < MOUNTS_MAX)
		snprintf(mounts[nmounts++].host, sizeof(mounts[0].host), "%s",
			 host);
	return TRUE;
}

bool_t mountproc3_dump_3_svc(void *argp, mountlist *r, struct svc_req *rq)
{
	mountbody *prev = NULL, *b;

	*r = NULL;
	for (size_t i = 0; i < nmounts; i++) {
		if (!(b = scratch_alloc(sizeof(*b))))
			break;
		b->ml_hostname = mounts[i].host;
		b->ml_directory = cfg.export_path;
		if (prev)
			prev->ml_next = b;
		else
			*r = b;
		prev = b;
	}
	return TRUE;
}

static void forget_mount(const char *host)
{
	for (size_t i = 0; i < nmounts; i++)
		if (!strcmp(mounts[i].host, host)) {
			mounts[i] = mounts[--nmounts];
			return;
		}
}

bool_t mountproc3_umnt_3_svc(dirpath *path, void *r, struct svc_req *rq)
{
	char host[MNTNAMLEN + 1];

	caller_host(rq, host, sizeof(host));
	if (is_export(*path))
		forget_mount(host);
	return TRUE;
}

bool_t mountproc3_umntall_3_svc(void *argp, void *r, struct svc_req *rq)
{
	char host[MNTNAMLEN + 1];

	caller_host(rq, host, sizeof(host));
	forget_mount(host);
	return TRUE;
}

bool_t mountproc3_export_3_svc(void *argp, exports *r, struct svc_req *rq)
{
	exportnode *e = scratch_alloc(sizeof(*e));

	*r = e;
	if (e)
		e->ex_dir = cfg.export_path;
	return TRUE;
}

/* ---- The key -------------------------------------------------------------- */

/* The handles' key from path, made (0600, getrandom) when missing;
 * when neither works, one for this run only. */
static void load_key(const char *path, uint8_t key[NFS_FH_KEYLEN])
{
	char dir[PATH_MAX], *slash;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	ssize_t n;

	if (fd >= 0) {
		n = read(fd, key, NFS_FH_KEYLEN);
		close(fd);
		if (n == NFS_FH_KEYLEN)
			return;
		uiw_tool_die("%s: not a key of %d octets", path, NFS_FH_KEYLEN);
	}
	if (getrandom(key, NFS_FH_KEYLEN, 0) != NFS_FH_KEYLEN)
		uiw_tool_die("getrandom: %s", strerror(errno));
	snprintf(dir, sizeof(dir), "%s", path);
	if ((slash = strrchr(dir, '/')) && slash != dir) {
		*slash = '\0';
		mkdir(dir, 0700);
	}
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW,
		  0600);
	if (fd < 0 || write(fd, key, NFS_FH_KEYLEN) != NFS_FH_KEYLEN ||
	    fsync(fd) < 0) {
		fprintf(stderr, PROG_NAME ": warning: cannot keep the handle key "
			"in %s (%s): handles will not survive a restart\n", path,
			strerror(errno));
		if (fd >= 0) {
			close(fd);
			unlink(path);
		}
		return;
	}
	close(fd);
}

/* ---- Usage and the loop --------------------------------------------------- */

static SVCXPRT *rdma, *tcp, *mnt;

/* Connections of libtirpc's TCP transports: the sockets svc_run polls
 * that are connected (not listening) on the NFS or MOUNT port. */
static unsigned tcp_conns(void)
{
	unsigned n = 0, ports[2] = { tcp ? uiw_ru_svc_port(tcp) : 0,
				     uiw_ru_svc_port(mnt) };

	for (int i = 0; i < svc_max_pollfd; i++) {
		struct sockaddr_storage ss;
		socklen_t len = sizeof(ss), il = sizeof(int);
		int fd = svc_pollfd[i].fd, listening = 1;
		unsigned port;

		if (fd < 0 || getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN,
					 &listening, &il) < 0 || listening ||
		    getsockname(fd, (struct sockaddr *)&ss, &len) < 0 ||
		    (ss.ss_family != AF_INET && ss.ss_family != AF_INET6))
			continue;
		port = ntohs(ss.ss_family == AF_INET ?
			     ((struct sockaddr_in *)&ss)->sin_port :
			     ((struct sockaddr_in6 *)&ss)->sin6_port);
		if (port && (port == ports[0] || port == ports[1]))
			n++;
	}
	return n;
}

static void print_usage_line(void)
{
	struct uiw_rpcrdma_usage u = { 0 };

	if (rdma)
		uiw_rpcrdma_svc_usage(rdma, &u);
	fprintf(stderr, PROG_NAME ": usage: rdma_conns=%" PRIu64 " mrs=%" PRIu64
		" held=%" PRIu64 " tcp_conns=%u\n", u.conns, u.mrs, u.held,
		tcp_conns());
}

static int usr1_fd = -1;

/* The loop's fd (an epoll set of the stop fd and SIGUSR1's signalfd):
 * SIGUSR1 prints the usage line, SIGINT or SIGTERM ends serving. */
static bool on_wake(void *arg)
{
	struct signalfd_siginfo si;

	(void)arg;
	while (read(usr1_fd, &si, sizeof(si)) == sizeof(si))
		print_usage_line();
	return !uiw_tool_stop_signal();
}

static int wake_fd(void)
{
	struct epoll_event e = { .events = EPOLLIN };
	sigset_t set;
	int ep = epoll_create1(EPOLL_CLOEXEC);

	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	usr1_fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	if (ep < 0 || usr1_fd < 0 ||
	    epoll_ctl(ep, EPOLL_CTL_ADD, usr1_fd, &e) < 0 ||
	    epoll_ctl(ep, EPOLL_CTL_ADD, uiw_tool_stop_fd(), &e) < 0)
		uiw_tool_die("signal descriptors: %s", strerror(errno));
	return ep;
}

/* ---- main ------------------------------------------------------------------ */

static void usage(FILE *f, int rc) __attribute__((noreturn));
static void usage(FILE *f, int rc)
{
	fprintf(f,
"usage: " PROG_NAME " [options] DIR\n"
"Exports DIR by NFS version 3 over RPC-over-RDMA and TCP, with MOUNT\n"
"version 3 over TCP.\n"
"  --listen ADDR      address to listen on (default 127.0.0.1)\n"
"  --port PORT        NFS over RPC-over-RDMA (default 20049; 0: any)\n"
"  --tcp-port PORT    NFS over TCP (default 2049; 0: none)\n"
"  --mount-port PORT  MOUNT over TCP (default 20048; 0: any)\n"
"  --key-file FILE    the file handles' key (default\n"
"                     /var/lib/uiwarp-nfsd/key, made when missing)\n"
"  --no-root-squash   AUTH_SYS uid 0 stays root (default: nobody)\n"
"  --read-only        refuse every change with NFS3ERR_ROFS\n"
"  --stats            print RPC-over-RDMA's counts at the end\n"
"  -q, --quiet        no line naming the ports at the start\n"
"SIGUSR1 prints a usage line on stderr; SIGINT and SIGTERM end it.\n");
	exit(rc);
}

static const char *port_arg(const char *s, const char *what)
{
	uiw_tool_arg_long(s, 0, 65535, what);
	return s;
}

int main(int argc, char **argv)
{
	enum { O_LISTEN = 256, O_PORT, O_TCP, O_MOUNT, O_KEY, O_NOSQUASH,
	       O_RO, O_STATS };
	static const struct option lo[] = {
		{ "listen", required_argument, NULL, O_LISTEN },
		{ "port", required_argument, NULL, O_PORT },
		{ "tcp-port", required_argument, NULL, O_TCP },
		{ "mount-port", required_argument, NULL, O_MOUNT },
		{ "key-file", required_argument, NULL, O_KEY },
		{ "no-root-squash", no_argument, NULL, O_NOSQUASH },
		{ "read-only", no_argument, NULL, O_RO },
		{ "stats", no_argument, NULL, O_STATS },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *addr = "127.0.0.1", *rport = UIW_RPCRDMA_NFS_PORT;
	const char *tport = "2049", *mport = "20048";
	const char *keyfile = "/var/lib/uiwarp-nfsd/key";
	bool stats = false;
	uint8_t key[NFS_FH_KEYLEN];
	struct uiw_rpcrdma_opts ro;
	struct uiw_rpcrdma_stats s;
	char why[300];
	sigset_t usr1;
	int opt, wake;

	uiw_tool_name = PROG_NAME;
	while ((opt = getopt_long(argc, argv, "qh", lo, NULL)) != -1) {
		switch (opt) {
		case O_LISTEN: addr = optarg; break;
		case O_PORT: rport = port_arg(optarg, "--port"); break;
		case O_TCP:
			tport = !strcmp(optarg, "off") ? NULL :
				port_arg(optarg, "--tcp-port");
			break;
		case O_MOUNT: mport = port_arg(optarg, "--mount-port"); break;
		case O_KEY: keyfile = optarg; break;
		case O_NOSQUASH: cfg.root_squash = false; break;
		case O_RO: cfg.read_only = true; break;
		case O_STATS: stats = true; break;
		case 'q': cfg.quiet = true; break;
		case 'h': usage(stdout, 0);
		default: usage(stderr, 2);
		}
	}
	if (optind + 1 != argc)
		uiw_tool_bad_usage("one directory to export");
	if (!realpath(argv[optind], cfg.export_path))
		uiw_tool_die("%s: %s", argv[optind], strerror(errno));
	cfg.as_root = geteuid() == 0;
	load_key(keyfile, key);
	if (nfsd_fs_init(cfg.export_path, key) < 0)
		uiw_tool_die("%s: %s", cfg.export_path, strerror(errno));
	/* §3.3.7: a verifier of its own per run, so that clients resend
	 * what a restart may have lost */
	if (getrandom(cfg.verf, sizeof(cfg.verf), 0) != sizeof(cfg.verf))
		uiw_tool_die("getrandom: %s", strerror(errno));

	/* before any thread starts (the signal thread among them): they
	 * inherit the mask, and SIGUSR1 goes to the signalfd alone */
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &usr1, NULL);
	uiw_tool_signals_init("the server loop did not end");
	wake = wake_fd();

	uiw_rpcrdma_opts_init(&ro, true);
	ro.ulb = uiw_rpcrdma_ulb_nfs();
	if (!(rdma = uiw_rpcrdma_svc_create(addr, rport, &ro)))
		uiw_tool_die("cannot listen for RPC-over-RDMA on %s port %s: %s",
			     addr, rport, strerror(errno));
	if (tport && strcmp(tport, "0") &&
	    !(tcp = uiw_ru_svc_ip(addr, tport, SOCK_STREAM, why, sizeof(why))))
		uiw_tool_die("%s", why);
	if (!(mnt = uiw_ru_svc_ip(addr, mport, SOCK_STREAM, why, sizeof(why))))
		uiw_tool_die("%s", why);
	/* svc_reg with no netconfig: nothing is told to rpcbind */
	if (!svc_reg(rdma, NFS_PROGRAM, NFS_V3, nfs_program_3, NULL) ||
	    (tcp && !svc_reg(tcp, NFS_PROGRAM, NFS_V3, nfs_program_3, NULL)) ||
	    !svc_reg(mnt, MOUNT_PROGRAM, MOUNT_V3, mount_program_3, NULL))
		uiw_tool_die("svc_reg failed");
	if (!cfg.quiet) {
		printf(PROG_NAME ": exporting %s on %s: rdma port %u, tcp port %u,"
		       " mount port %u\n", cfg.export_path, addr,
		       uiw_ru_svc_port(rdma), tcp ? uiw_ru_svc_port(tcp) : 0,
		       uiw_ru_svc_port(mnt));
		fflush(stdout);
	}
	if (uiw_ru_serve(wake, on_wake, NULL) < 0)
		uiw_tool_die("poll: %s", strerror(errno));
	if (stats && uiw_rpcrdma_svc_stats(rdma, &s))
		uiw_ru_print_stats(stdout, PROG_NAME, &s);
	fflush(stdout);
	svc_destroy(rdma);
	if (tcp)
		svc_destroy(tcp);
	svc_destroy(mnt);
	fprintf(stderr, PROG_NAME ": ended by %s\n",
		uiw_tool_signal_name(uiw_tool_stop_signal()));
	return 0;
}
