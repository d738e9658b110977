/*
 * uiwarp-nfs: an NFS version 3 client in user space (RFC 1813) over
 * RPC-over-RDMA (RFC 8166 with RFC 8267's bindings: READ data comes by
 * RDMA Write, WRITE data goes by RDMA Read) or over TCP, one command a
 * run:
 *
 *   uiwarp-nfs [options] HOST:/EXPORT COMMAND [ARGS]
 *
 * MOUNT version 3 runs over TCP (RFC 8267 §5.1), from rpcbind's port or
 * --mount-port; the export is unmounted at the end.  The NFS calls
 * themselves are in nfs_client.c; this file is the command line: one
 * row per command in a table, each with its own function.
 *
 * Exit status: 0 done; 1 an NFS error (or a local file's); 2 a usage
 * error; 3 the transport (no connection, a call timed out, a reply
 * that breaks the protocol); 128 + the signal's number on SIGINT or
 * SIGTERM (tool_util.h: calls in flight get 2 s, then the process
 * ends regardless).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <uiwarp/rpcrdma.h>
#include "nfs_client.h"
#include "rpc_util.h"
#include "tool_util.h"

#define bad uiw_tool_bad_usage

enum { EXIT_NFS = 1, EXIT_USAGE = 2, EXIT_RPC = 3 };

static struct {
	struct nfsc_opts n;
	size_t rsize, wsize;
	unsigned depth;
	bool sync, progress, quiet, stats;
} o = {
	.depth = 4,
};

static struct nfsc c;

/* ---- results ---------------------------------------------------------- */

/* What a failure of a call about what (a path) says, and the exit
 * status it gives. */
static int report(int rc, const char *what)
{
	char fname[32];

	if (!rc)
		return 0;
	uiw_tool_exit_if_stopped();
	fflush(stdout);
	if (rc > 0) {
		fprintf(stderr, "uiwarp-nfs: %s: %s (%s)\n", what,
			nfsc_stat_name(rc, fname, sizeof(fname)),
			nfsc_stat_text(rc));
		return EXIT_NFS;
	}
	fprintf(stderr, "uiwarp-nfs: %s: %s\n", what, c.err);
	return rc == NFSC_ERR_LOCAL ? EXIT_NFS : EXIT_RPC;
}

/* ---- file types and attributes ------------------------------------------ */

/* ftype3 (RFC 1813 §2.6): one row each */
static const struct {
	char ls;
	const char *name;
} ftypes[] = {
	[NF3REG] = { '-', "regular" },
	[NF3DIR] = { 'd', "directory" },
	[NF3BLK] = { 'b', "block" },
	[NF3CHR] = { 'c', "character" },
	[NF3LNK] = { 'l', "symlink" },
	[NF3SOCK] = { 's', "socket" },
	[NF3FIFO] = { 'p', "fifo" },
};

static char ftype_char(ftype3 t)
{
	return (unsigned)t < sizeof(ftypes) / sizeof(ftypes[0]) &&
	       ftypes[t].name ? ftypes[t].ls : '?';
}

static const char *ftype_name(ftype3 t)
{
	return (unsigned)t < sizeof(ftypes) / sizeof(ftypes[0]) &&
	       ftypes[t].name ? ftypes[t].name : "unknown";
}

/* "drwxr-xr-x" as ls(1) writes it */
static void mode_string(const fattr3 *a, char s[11])
{
	static const char rwx[] = "rwxrwxrwx";
	int i;

	s[0] = ftype_char(a->type);
	for (i = 0; i < 9; i++)
		s[1 + i] = a->mode & (0400u >> i) ? rwx[i] : '-';
	if (a->mode & 04000)
		s[3] = a->mode & 0100 ? 's' : 'S';
	if (a->mode & 02000)
		s[6] = a->mode & 0010 ? 's' : 'S';
	if (a->mode & 01000)
		s[9] = a->mode & 0001 ? 't' : 'T';
	s[10] = 0;
}

static void time_string(const nfstime3 *t, char *buf, size_t len)
{
	time_t tt = (time_t)t->seconds;
	struct tm tm;

	gmtime_r(&tt, &tm);
	strftime(buf, len, "%Y-%m-%d %H:%M", &tm);
}

static int readlink_fh(const nfs_fh3 *fh, char **target)
{
	READLINK3args args = { .symlink = *fh };
	READLINK3res res;
	int rc = nfsc_call(&c, NFSPROC3_READLINK, &args, &res);

	if (rc == NFS3_OK) {
		*target = strdup(res.READLINK3res_u.resok.data ?
				 res.READLINK3res_u.resok.data : "");
		if (!*target)
			uiw_tool_die("out of memory");
	}
	if (rc >= 0)
		nfsc_free(NFSPROC3_READLINK, &res);
	return rc;
}

/* One line of ls -l. */
static void ls_line(const char *fname, const fattr3 *a, const char *target)
{
	char mode[11], when[32];

	mode_string(a, mode);
	time_string(&a->mtime, when, sizeof(when));
	printf("%s %3u %5u %5u %10" PRIu64 " %s %s%s%s\n", mode, a->nlink,
	       a->uid, a->gid, (uint64_t)a->size, when, fname,
	       target ? " -> " : "", target ? target : "");
}

/* ---- commands ------------------------------------------------------------ */

/* A command's arguments after its own flags. */
struct args {
	int n;
	char **v;
	bool flag;              /* ls -l, ln -s, put -n */
};

static int cmd_ls(struct args *a)
{
	const char *path = a->n ? a->v[0] : "/";
	struct nfsc_dirent *d;
	struct nfsc_fh fh, ent;
	fattr3 attr;
	size_t n, i;
	int rc;

	rc = nfsc_lookup(&c, path, &fh, &attr);
	if (rc)
		return report(rc, path);
	if (attr.type != NF3DIR) {
		char *target = NULL;

		if (a->flag && attr.type == NF3LNK &&
		    (rc = readlink_fh(&fh.fh, &target)))
			return report(rc, path);
		if (a->flag)
			ls_line(path, &attr, target);
		else
			printf("%s\n", path);
		free(target);
		return 0;
	}
	rc = nfsc_readdir(&c, &fh.fh, a->flag, &d, &n);
	if (rc)
		return report(rc, path);
	for (i = 0; i < n && !uiw_tool_stop_signal(); i++) {
		char *target = NULL;

		if (!a->flag) {
			printf("%s\n", d[i].name);
			continue;
		}
		if (!d[i].have_attr) {
			printf("?????????? %s\n", d[i].name);
			continue;
		}
		if (d[i].attr.type == NF3LNK) {
			/* the link's handle, then its text */
			rc = nfsc_lookup_name(&c, &fh.fh, d[i].name, &ent, NULL);
			if (!rc)
				rc = readlink_fh(&ent.fh, &target);
			if (rc < 0)
				break;
			rc = 0;
		}
		ls_line(d[i].name, &d[i].attr, target);
		free(target);
	}
	nfsc_dirents_free(d, n);
	return report(rc, path);
}

static void print_time(const char *key, const nfstime3 *t)
{
	printf("%s=%u.%09u\n", key, t->seconds, t->nseconds);
}

static int cmd_stat(struct args *a)
{
	char hex[2 * NFS3_FHSIZE + 1];
	struct nfsc_fh fh;
	fattr3 f;
	int rc = nfsc_lookup(&c, a->v[0], &fh, &f);

	if (rc)
		return report(rc, a->v[0]);
	printf("path=%s\ntype=%s\nmode=%04o\nnlink=%u\nuid=%u\ngid=%u\n"
	       "size=%" PRIu64 "\nused=%" PRIu64 "\nrdev=%u,%u\n"
	       "fsid=%#" PRIx64 "\nfileid=%" PRIu64 "\n", a->v[0],
	       ftype_name(f.type), f.mode & 07777, f.nlink, f.uid, f.gid,
	       (uint64_t)f.size, (uint64_t)f.used, f.rdev.specdata1,
	       f.rdev.specdata2, (uint64_t)f.fsid, (uint64_t)f.fileid);
	print_time("atime", &f.atime);
	print_time("mtime", &f.mtime);
	print_time("ctime", &f.ctime);
	nfsc_fh_hex(&fh.fh, hex, sizeof(hex));
	printf("handle=@%s\n", hex);
	return 0;
}

/* ---- get and put ------------------------------------------------------------ */

struct local {
	int fd;
	bool seekable;
	const char *what;       /* "get PATH" */
	double t0, last;
	bool shown;
};

static bool show_progress(void)
{
	return !o.quiet && (o.progress || isatty(2));
}

static void progress(void *arg, uint64_t done, uint64_t total)
{
	struct local *l = arg;
	double now = uiw_tool_now();
	char b[128];

	if (!show_progress() || now - l->last < 0.5)
		return;
	l->last = now;
	nfsc_fmt_progress(done, total, now - l->t0, b, sizeof(b));
	/* a terminal's line is redrawn; elsewhere, a line each time */
	fprintf(stderr, isatty(2) ? "\ruiwarp-nfs: %s: %s\033[K" :
		"uiwarp-nfs: %s: %s\n", l->what, b);
	l->shown = true;
}

static void progress_end(struct local *l, uint64_t done, uint64_t total)
{
	char b[128];

	if (!show_progress())
		return;
	nfsc_fmt_progress(done, total, uiw_tool_now() - l->t0, b, sizeof(b));
	fprintf(stderr, isatty(2) ? "\ruiwarp-nfs: %s: %s\033[K\n" :
		"uiwarp-nfs: %s: %s\n", l->what, b);
}

static ssize_t sink(void *arg, uint64_t off, void *buf, size_t len)
{
	struct local *l = arg;
	size_t done = 0;

	(void)off;      /* nfsc_read_file hands the data in file order */
	while (done < len) {
		ssize_t n = write(l->fd, (char *)buf + done, len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		done += (size_t)n;
	}
	return (ssize_t)len;
}

/* Up to len octets: full chunks but at the end. */
static ssize_t source(void *arg, uint64_t off, void *buf, size_t len)
{
	struct local *l = arg;
	size_t done = 0;

	while (done < len) {
		ssize_t n = l->seekable ?
			    pread(l->fd, (char *)buf + done, len - done,
				  (off_t)(off + done)) :
			    read(l->fd, (char *)buf + done, len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0)
			break;
		done += (size_t)n;
	}
	return (ssize_t)done;
}

static int cmd_get(struct args *a)
{
	const char *path = a->v[0], *dst = a->n > 1 ? a->v[1] : "-";
	char what[512];
	struct local l = { .what = what };
	struct nfsc_xfer x = {
		.depth = o.depth, .io = sink, .arg = &l, .progress = progress,
	};
	struct nfsc_fh fh;
	fattr3 attr;
	int rc;

	snprintf(what, sizeof(what), "get %s", path);
	rc = nfsc_lookup(&c, path, &fh, &attr);
	if (rc)
		return report(rc, path);
	if (attr.type == NF3DIR)
		return report(NFS3ERR_ISDIR, path);
	x.chunk = nfsc_rsize(&c, o.rsize);
	x.total = attr.size;
	if (!strcmp(dst, "-")) {
		l.fd = 1;
	} else {
		l.fd = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (l.fd < 0) {
			fprintf(stderr, "uiwarp-nfs: %s: %s\n", dst,
				strerror(errno));
			return EXIT_NFS;
		}
	}
	l.t0 = l.last = uiw_tool_now();
	rc = nfsc_read_file(&c, &fh.fh, &x);
	if (!rc)
		progress_end(&l, x.done, x.total);
	else if (l.shown && isatty(2))
		fprintf(stderr, "\n");
	if (l.fd != 1 && close(l.fd) < 0 && !rc) {
		fprintf(stderr, "uiwarp-nfs: %s: %s\n", dst, strerror(errno));
		return EXIT_NFS;
	}
	return report(rc, path);
}

/* CREATE (RFC 1813 §3.3.8) of fname in dir, mode mode: its handle in
 * fh (fh NULL: not wanted). */
static int create(struct nfsc_fh *dir, const char *fname, createmode3 how,
		  long mode, struct nfsc_fh *fh, const char *path)
{
	CREATE3args args = {
		.where = { .dir = dir->fh, .name = (char *)fname },
		.how = { .mode = how },
	};
	CREATE3res res;
	int rc;

	nfsc_sattr_mode(&args.how.createhow3_u.obj_attributes, mode);
	/* UNCHECKED over an existing file: empty it (§3.3.8: the
	 * attributes given apply to it) */
	if (how == UNCHECKED) {
		args.how.createhow3_u.obj_attributes.size.set_it = TRUE;
		args.how.createhow3_u.obj_attributes.size.set_size3_u.size = 0;
	}
	rc = nfsc_call(&c, NFSPROC3_CREATE, &args, &res);
	if (rc == NFS3_OK && fh) {
		post_op_fh3 *p = &res.CREATE3res_u.resok.obj;

		if (p->handle_follows)
			nfsc_fh_set(fh, &p->post_op_fh3_u.handle);
		else    /* §3.3.8: a server may leave it out */
			fh->fh.data.data_len = 0;
	}
	if (rc >= 0)
		nfsc_free(NFSPROC3_CREATE, &res);
	if (rc == NFS3_OK && fh && !fh->fh.data.data_len)
		rc = nfsc_lookup(&c, path, fh, NULL);
	return rc;
}

static int cmd_put(struct args *a)
{
	const char *src = a->v[0], *path = a->v[1];
	char what[512], fname[256];
	struct local l = { .what = what };
	struct nfsc_xfer x = {
		.depth = o.depth, .io = source, .arg = &l,
		.progress = progress, .file_sync = o.sync,
	};
	struct nfsc_fh dir, fh;
	struct stat st;
	long mode = 0644;
	int rc;

	snprintf(what, sizeof(what), "put %s", path);
	if (!strcmp(src, "-")) {
		l.fd = 0;
	} else {
		l.fd = open(src, O_RDONLY | O_CLOEXEC);
		if (l.fd < 0) {
			fprintf(stderr, "uiwarp-nfs: %s: %s\n", src,
				strerror(errno));
			return EXIT_NFS;
		}
	}
	if (fstat(l.fd, &st) == 0 && S_ISREG(st.st_mode)) {
		l.seekable = true;
		x.total = (uint64_t)st.st_size;
		mode = st.st_mode & 0777;
	}
	/* a source read once (a pipe) cannot be sent again after a
	 * verifier change: its WRITEs are FILE_SYNC (RFC 1813 §3.3.7) */
	x.rewindable = l.seekable;
	if (!l.seekable)
		x.file_sync = true;
	rc = nfsc_lookup_parent(&c, path, &dir, fname, sizeof(fname));
	if (!rc)
		rc = create(&dir, fname, a->flag ? GUARDED : UNCHECKED, mode,
			    &fh, path);
	if (!rc) {
		x.chunk = nfsc_wsize(&c, o.wsize);
		l.t0 = l.last = uiw_tool_now();
		rc = nfsc_write_file(&c, &fh.fh, &x);
		if (!rc)
			progress_end(&l, x.done, x.total);
		else if (l.shown && isatty(2))
			fprintf(stderr, "\n");
	}
	if (l.fd != 0)
		close(l.fd);
	if (x.resends && !o.quiet)
		fprintf(stderr, "uiwarp-nfs: %s: sent again %u times: the "
			"server's write verifier changed\n", path, x.resends);
	return report(rc, path);
}

/* ---- the namespace ----------------------------------------------------------- */

/* A procedure on (directory of path, last fname) whose arguments begin
 * with that diropargs3: REMOVE, RMDIR. */
static int dirop(rpcproc_t proc, const char *path)
{
	char fname[256];
	struct nfsc_fh dir;
	union {
		REMOVE3res remove;
		RMDIR3res rmdir;
	} res;
	diropargs3 args;
	int rc;

	rc = nfsc_lookup_parent(&c, path, &dir, fname, sizeof(fname));
	if (rc)
		return report(rc, path);
	args = (diropargs3){ .dir = dir.fh, .name = fname };
	/* REMOVE3args and RMDIR3args are each one diropargs3 */
	rc = nfsc_call(&c, proc, &args, &res);
	if (rc >= 0)
		nfsc_free(proc, &res);
	return report(rc, path);
}

static int cmd_rm(struct args *a)
{
	return dirop(NFSPROC3_REMOVE, a->v[0]);
}

static int cmd_rmdir(struct args *a)
{
	return dirop(NFSPROC3_RMDIR, a->v[0]);
}

static int cmd_mv(struct args *a)
{
	char from[256], to[256];
	struct nfsc_fh fd, td;
	RENAME3args args;
	RENAME3res res;
	int rc;

	rc = nfsc_lookup_parent(&c, a->v[0], &fd, from, sizeof(from));
	if (rc)
		return report(rc, a->v[0]);
	rc = nfsc_lookup_parent(&c, a->v[1], &td, to, sizeof(to));
	if (rc)
		return report(rc, a->v[1]);
	args = (RENAME3args){
		.from = { .dir = fd.fh, .name = from },
		.to = { .dir = td.fh, .name = to },
	};
	rc = nfsc_call(&c, NFSPROC3_RENAME, &args, &res);
	if (rc >= 0)
		nfsc_free(NFSPROC3_RENAME, &res);
	return report(rc, a->v[0]);
}

static int cmd_mkdir(struct args *a)
{
	char fname[256];
	struct nfsc_fh dir;
	MKDIR3args args;
	MKDIR3res res;
	int rc;

	rc = nfsc_lookup_parent(&c, a->v[0], &dir, fname, sizeof(fname));
	if (rc)
		return report(rc, a->v[0]);
	args = (MKDIR3args){ .where = { .dir = dir.fh, .name = fname } };
	nfsc_sattr_mode(&args.attributes, 0755);
	rc = nfsc_call(&c, NFSPROC3_MKDIR, &args, &res);
	if (rc >= 0)
		nfsc_free(NFSPROC3_MKDIR, &res);
	return report(rc, a->v[0]);
}

static int cmd_touch(struct args *a)
{
	char fname[256];
	struct nfsc_fh dir, fh;
	SETATTR3args sa;
	SETATTR3res sr;
	int rc;

	rc = nfsc_lookup_parent(&c, a->v[0], &dir, fname, sizeof(fname));
	if (rc)
		return report(rc, a->v[0]);
	rc = create(&dir, fname, GUARDED, 0644, NULL, a->v[0]);
	if (rc != NFS3ERR_EXIST)
		return report(rc, a->v[0]);
	/* there already: its times set to the server's clock, as
	 * touch(1) does */
	rc = nfsc_lookup(&c, a->v[0], &fh, NULL);
	if (rc)
		return report(rc, a->v[0]);
	sa = (SETATTR3args){ .object = fh.fh };
	sa.new_attributes.atime.set_it = SET_TO_SERVER_TIME;
	sa.new_attributes.mtime.set_it = SET_TO_SERVER_TIME;
	rc = nfsc_call(&c, NFSPROC3_SETATTR, &sa, &sr);
	if (rc >= 0)
		nfsc_free(NFSPROC3_SETATTR, &sr);
	return report(rc, a->v[0]);
}

static int cmd_ln(struct args *a)
{
	char fname[256];
	struct nfsc_fh dir;
	SYMLINK3args args;
	SYMLINK3res res;
	int rc;

	if (!a->flag)
		bad("ln makes symbolic links only: ln -s TARGET PATH");
	rc = nfsc_lookup_parent(&c, a->v[1], &dir, fname, sizeof(fname));
	if (rc)
		return report(rc, a->v[1]);
	args = (SYMLINK3args){
		.where = { .dir = dir.fh, .name = fname },
		.symlink = { .symlink_data = a->v[0] },
	};
	nfsc_sattr_mode(&args.symlink.symlink_attributes, 0777);
	rc = nfsc_call(&c, NFSPROC3_SYMLINK, &args, &res);
	if (rc >= 0)
		nfsc_free(NFSPROC3_SYMLINK, &res);
	return report(rc, a->v[1]);
}

static int cmd_readlink(struct args *a)
{
	struct nfsc_fh fh;
	char *target;
	int rc = nfsc_lookup(&c, a->v[0], &fh, NULL);

	if (!rc)
		rc = readlink_fh(&fh.fh, &target);
	if (rc)
		return report(rc, a->v[0]);
	printf("%s\n", target);
	free(target);
	return 0;
}

static int cmd_df(struct args *a)
{
	FSSTAT3args args = { .fsroot = c.root };
	FSSTAT3res res;
	int rc = nfsc_call(&c, NFSPROC3_FSSTAT, &args, &res);

	(void)a;
	if (rc == NFS3_OK) {
		FSSTAT3resok *r = &res.FSSTAT3res_u.resok;

		printf("tbytes=%" PRIu64 "\nfbytes=%" PRIu64 "\nabytes=%"
		       PRIu64 "\ntfiles=%" PRIu64 "\nffiles=%" PRIu64
		       "\nafiles=%" PRIu64 "\ninvarsec=%u\n",
		       (uint64_t)r->tbytes, (uint64_t)r->fbytes,
		       (uint64_t)r->abytes, (uint64_t)r->tfiles,
		       (uint64_t)r->ffiles, (uint64_t)r->afiles, r->invarsec);
	}
	if (rc >= 0)
		nfsc_free(NFSPROC3_FSSTAT, &res);
	return report(rc, c.o.export);
}

static int cmd_fsinfo(struct args *a)
{
	static const struct {
		uint32_t bit;
		const char *name;
	} props[] = {
		{ FSF3_LINK, "link" }, { FSF3_SYMLINK, "symlink" },
		{ FSF3_HOMOGENEOUS, "homogeneous" },
		{ FSF3_CANSETTIME, "cansettime" },
	};
	const FSINFO3resok *f = &c.fsinfo;
	const char *sep = "";
	size_t i;

	(void)a;
	printf("rtmax=%u\nrtpref=%u\nrtmult=%u\nwtmax=%u\nwtpref=%u\n"
	       "wtmult=%u\ndtpref=%u\nmaxfilesize=%" PRIu64 "\n"
	       "time_delta=%u.%09u\nproperties=%#x (", f->rtmax, f->rtpref,
	       f->rtmult, f->wtmax, f->wtpref, f->wtmult, f->dtpref,
	       (uint64_t)f->maxfilesize, f->time_delta.seconds,
	       f->time_delta.nseconds, f->properties);
	for (i = 0; i < sizeof(props) / sizeof(props[0]); i++)
		if (f->properties & props[i].bit) {
			printf("%s%s", sep, props[i].name);
			sep = ",";
		}
	printf(")\nrsize=%zu\nwsize=%zu\n", nfsc_rsize(&c, o.rsize),
	       nfsc_wsize(&c, o.wsize));
	return 0;
}

/* One row per command. */
static const struct command {
	const char *name;
	int min, max;           /* arguments */
	char flag;              /* its one flag, 0: none */
	const char *usage;
	int (*run)(struct args *a);
} commands[] = {
	{ "ls", 0, 1, 'l', "ls [-l] [PATH]", cmd_ls },
	{ "stat", 1, 1, 0, "stat PATH", cmd_stat },
	{ "get", 1, 2, 0, "get PATH [LOCAL|-]", cmd_get },
	{ "put", 2, 2, 'n', "put [-n] LOCAL|- PATH", cmd_put },
	{ "rm", 1, 1, 0, "rm PATH", cmd_rm },
	{ "rmdir", 1, 1, 0, "rmdir PATH", cmd_rmdir },
	{ "mv", 2, 2, 0, "mv FROM TO", cmd_mv },
	{ "mkdir", 1, 1, 0, "mkdir PATH", cmd_mkdir },
	{ "touch", 1, 1, 0, "touch PATH", cmd_touch },
	{ "ln", 2, 2, 's', "ln -s TARGET PATH", cmd_ln },
	{ "readlink", 1, 1, 0, "readlink PATH", cmd_readlink },
	{ "df", 0, 0, 0, "df", cmd_df },
	{ "fsinfo", 0, 0, 0, "fsinfo", cmd_fsinfo },
};
#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

/* ---- options --------------------------------------------------------------- */

static void usage(FILE *f, int rc) __attribute__((noreturn));
static void usage(FILE *f, int rc)
{
	size_t i;

	fprintf(f,
"usage: uiwarp-nfs [options] HOST:/EXPORT COMMAND [ARGS]\n"
"Commands:\n");
	for (i = 0; i < NCOMMANDS; i++)
		fprintf(f, "  %s\n", commands[i].usage);
	fprintf(f,
"Options:\n"
"  -x, --proto rdma|tcp  NFS over RPC-over-RDMA (default) or TCP\n"
"  -p, --port PORT       NFS's port (default 20049 rdma, 2049 tcp)\n"
"  -m, --mount-port PORT MOUNT's TCP port (default: asked of rpcbind)\n"
"      --auth sys|none   AUTH_SYS (default) or AUTH_NONE\n"
"      --uid N, --gid N  AUTH_SYS ids (default: this process's)\n"
"  -r, --rsize SIZE      READ size (default: the server's rtpref;\n"
"                        at most its rtmax)\n"
"  -w, --wsize SIZE      WRITE size (default wtpref; at most wtmax)\n"
"  -d, --depth N         READs or WRITEs in flight (default 4; 1..64)\n"
"      --sync            FILE_SYNC writes, no COMMIT\n"
"  -T, --timeout S       a call's time, retries included (default 30)\n"
"      --retries N       more tries of an idempotent call that timed out\n"
"                        (default 1)\n"
"      --progress        show progress even when stderr is no terminal\n"
"  -q, --quiet           no progress\n"
"      --stats           what RPC-over-RDMA moved, on stderr at the end\n"
"Exit status: 0 ok, 1 NFS or local file error, 2 usage, 3 transport.\n");
	exit(rc);
}

enum { OPT_AUTH = 256, OPT_UID, OPT_GID, OPT_SYNC, OPT_RETRIES, OPT_PROGRESS,
       OPT_STATS };

static const char *port_arg(const char *s)
{
	uiw_tool_arg_long(s, 1, 65535, "port");
	return s;
}

static int parse(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "proto", required_argument, NULL, 'x' },
		{ "port", required_argument, NULL, 'p' },
		{ "mount-port", required_argument, NULL, 'm' },
		{ "auth", required_argument, NULL, OPT_AUTH },
		{ "uid", required_argument, NULL, OPT_UID },
		{ "gid", required_argument, NULL, OPT_GID },
		{ "rsize", required_argument, NULL, 'r' },
		{ "wsize", required_argument, NULL, 'w' },
		{ "depth", required_argument, NULL, 'd' },
		{ "sync", no_argument, NULL, OPT_SYNC },
		{ "timeout", required_argument, NULL, 'T' },
		{ "retries", required_argument, NULL, OPT_RETRIES },
		{ "progress", no_argument, NULL, OPT_PROGRESS },
		{ "quiet", no_argument, NULL, 'q' },
		{ "stats", no_argument, NULL, OPT_STATS },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int opt;

	nfsc_opts_init(&o.n);
	/* '+': the options end at HOST:/EXPORT; the command's own follow */
	while ((opt = getopt_long(argc, argv, "+x:p:m:r:w:d:T:qh", lo,
				  NULL)) != -1) {
		switch (opt) {
		case 'x':
			if (!strcmp(optarg, "rdma"))
				o.n.proto = NFSC_RDMA;
			else if (!strcmp(optarg, "tcp"))
				o.n.proto = NFSC_TCP;
			else
				bad("unknown proto '%s' (rdma or tcp)", optarg);
			break;
		case 'p':
			o.n.port = port_arg(optarg);
			break;
		case 'm':
			o.n.mount_port = port_arg(optarg);
			break;
		case OPT_AUTH:
			if (!strcmp(optarg, "sys"))
				o.n.auth = NFSC_AUTH_SYS;
			else if (!strcmp(optarg, "none"))
				o.n.auth = NFSC_AUTH_NONE;
			else
				bad("unknown auth '%s' (sys or none)", optarg);
			break;
		case OPT_UID:
			o.n.uid = uiw_tool_arg_long(optarg, 0, UINT32_MAX, "uid");
			break;
		case OPT_GID:
			o.n.gid = uiw_tool_arg_long(optarg, 0, UINT32_MAX, "gid");
			break;
		case 'r':
			o.rsize = uiw_tool_arg_size(optarg, 1, 64 << 20,
						    "rsize");
			break;
		case 'w':
			o.wsize = uiw_tool_arg_size(optarg, 1, 64 << 20,
						    "wsize");
			break;
		case 'd':
			o.depth = (unsigned)uiw_tool_arg_long(optarg, 1, 64,
							      "depth");
			break;
		case OPT_SYNC:
			o.sync = true;
			break;
		case 'T':
			o.n.timeout_s = (unsigned)uiw_tool_arg_long(optarg, 1,
								    3600,
								    "timeout");
			break;
		case OPT_RETRIES:
			o.n.retries = (unsigned)uiw_tool_arg_long(optarg, 0, 10,
								  "retries");
			break;
		case OPT_PROGRESS:
			o.progress = true;
			break;
		case 'q':
			o.quiet = true;
			break;
		case OPT_STATS:
			o.stats = true;
			break;
		case 'h':
			usage(stdout, 0);
		default:
			bad("bad option");
		}
	}
	if (o.n.auth == NFSC_AUTH_NONE && (o.n.uid >= 0 || o.n.gid >= 0))
		bad("--uid and --gid are AUTH_SYS's (--auth sys)");
	if (optind + 2 > argc)
		bad("give HOST:/EXPORT and a command");
	return optind;
}

/* HOST:/EXPORT (an IPv6 address in brackets: [::1]:/export). */
static void split_target(char *s)
{
	char *colon;

	if (s[0] == '[') {
		char *end = strchr(s, ']');

		if (!end || end[1] != ':')
			bad("'%s' is not [ADDRESS]:/EXPORT", s);
		*end = 0;
		o.n.host = s + 1;
		colon = end + 1;
	} else {
		colon = strchr(s, ':');
		if (!colon)
			bad("'%s' is not HOST:/EXPORT", s);
		*colon = 0;
		o.n.host = s;
	}
	o.n.export = colon + 1;
	if (!o.n.host[0] || o.n.export[0] != '/')
		bad("'%s' is not HOST:/EXPORT (the export's path is "
		    "absolute)", s);
	if (strlen(o.n.export) > MNTPATHLEN)
		bad("the export's path is longer than %d", MNTPATHLEN);
}

/* The command, its flag and its arguments. */
static const struct command *parse_command(int argc, char **argv,
					   struct args *a)
{
	const struct command *cmd = NULL;
	size_t i;
	int k = 1;

	for (i = 0; i < NCOMMANDS; i++)
		if (!strcmp(argv[0], commands[i].name))
			cmd = &commands[i];
	if (!cmd)
		bad("unknown command '%s'", argv[0]);
	a->flag = false;
	while (k < argc && argv[k][0] == '-' && argv[k][1]) {
		if (!strcmp(argv[k], "--")) {
			k++;
			break;
		}
		if (!cmd->flag || argv[k][1] != cmd->flag || argv[k][2])
			bad("%s: unknown flag '%s' (usage: %s)", cmd->name,
			    argv[k], cmd->usage);
		a->flag = true;
		k++;
	}
	a->n = argc - k;
	a->v = argv + k;
	if (a->n < cmd->min || a->n > cmd->max)
		bad("%s: wrong number of arguments (usage: %s)", cmd->name,
		    cmd->usage);
	return cmd;
}

static bool stopped(void)
{
	return uiw_tool_stop_signal() != 0;
}

int main(int argc, char **argv)
{
	const struct command *cmd;
	struct uiw_rpcrdma_stats s;
	struct args a;
	int first, rc;

	uiw_tool_name = "uiwarp-nfs";
	first = parse(argc, argv);
	split_target(argv[first]);
	cmd = parse_command(argc - first - 1, argv + first + 1, &a);
	o.n.stopped = stopped;
	/* Before any thread starts: they inherit the signal mask. */
	uiw_tool_signals_init("server did not answer");
	rc = nfsc_mount(&c, &o.n);
	if (rc) {
		char where[MNTPATHLEN + 300];
		char fname[32];

		uiw_tool_exit_if_stopped();
		snprintf(where, sizeof(where), "%s:%s", o.n.host, o.n.export);
		if (rc > 0 && !c.mounted) {
			/* mountstat3 shares nfsstat3's numbers */
			const char *sfx = nfsc_stat_suffix(rc);

			if (sfx)
				snprintf(fname, sizeof(fname), "MNT3ERR_%s", sfx);
			else
				snprintf(fname, sizeof(fname), "MNT3ERR_#%d", rc);
			fprintf(stderr, "uiwarp-nfs: %s: %s (%s)\n", where,
				fname, nfsc_stat_text(rc));
			rc = EXIT_NFS;
		} else {
			rc = report(rc, where);
		}
		nfsc_unmount(&c);
		return rc;
	}
	rc = cmd->run(&a);
	fflush(stdout);
	if (o.stats) {
		if (uiw_rpcrdma_clnt_stats(c.nfs, &s))
			uiw_ru_print_stats(stderr, "uiwarp-nfs", &s);
		else
			fprintf(stderr, "uiwarp-nfs: rdma: none (NFS over "
				"tcp)\n");
	}
	nfsc_unmount(&c);
	uiw_tool_exit_if_stopped();
	return rc;
}
