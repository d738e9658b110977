/*
 * The NFS version 3 client library of uiwarp-nfs: see nfs_client.h.
 */
#include "nfs_client.h"

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uiwarp/rpcrdma.h>
#include "rpc_util.h"

/* ---- nfsstat3 (RFC 1813 §2.6): one row per value ------------------ */

static const struct {
	int st;
	const char *suffix;     /* after NFS3ERR_ / MNT3ERR_ */
	const char *text;
} stat_table[] = {
	{ NFS3_OK, "OK", "Success" },
	{ NFS3ERR_PERM, "PERM", "Operation not permitted" },
	{ NFS3ERR_NOENT, "NOENT", "No such file or directory" },
	{ NFS3ERR_IO, "IO", "Input/output error" },
	{ NFS3ERR_NXIO, "NXIO", "No such device or address" },
	{ NFS3ERR_ACCES, "ACCES", "Permission denied" },
	{ NFS3ERR_EXIST, "EXIST", "File exists" },
	{ NFS3ERR_XDEV, "XDEV", "Invalid cross-device link" },
	{ NFS3ERR_NODEV, "NODEV", "No such device" },
	{ NFS3ERR_NOTDIR, "NOTDIR", "Not a directory" },
	{ NFS3ERR_ISDIR, "ISDIR", "Is a directory" },
	{ NFS3ERR_INVAL, "INVAL", "Invalid argument" },
	{ NFS3ERR_FBIG, "FBIG", "File too large" },
	{ NFS3ERR_NOSPC, "NOSPC", "No space left on device" },
	{ NFS3ERR_ROFS, "ROFS", "Read-only file system" },
	{ NFS3ERR_MLINK, "MLINK", "Too many links" },
	{ NFS3ERR_NAMETOOLONG, "NAMETOOLONG", "File name too long" },
	{ NFS3ERR_NOTEMPTY, "NOTEMPTY", "Directory not empty" },
	{ NFS3ERR_DQUOT, "DQUOT", "Disk quota exceeded" },
	{ NFS3ERR_STALE, "STALE", "Stale file handle" },
	{ NFS3ERR_REMOTE, "REMOTE", "Too many levels of remote in path" },
	{ NFS3ERR_BADHANDLE, "BADHANDLE", "Illegal NFS file handle" },
	{ NFS3ERR_NOT_SYNC, "NOT_SYNC", "Update synchronization mismatch" },
	{ NFS3ERR_BAD_COOKIE, "BAD_COOKIE", "READDIR cookie is stale" },
	{ NFS3ERR_NOTSUPP, "NOTSUPP", "Operation not supported" },
	{ NFS3ERR_TOOSMALL, "TOOSMALL", "Buffer or request is too small" },
	{ NFS3ERR_SERVERFAULT, "SERVERFAULT", "Server fault" },
	{ NFS3ERR_BADTYPE, "BADTYPE", "Type not supported by the server" },
	{ NFS3ERR_JUKEBOX, "JUKEBOX", "Server busy; try again later" },
};

static int stat_row(int st)
{
	size_t i;

	for (i = 0; i < sizeof(stat_table) / sizeof(stat_table[0]); i++)
		if (stat_table[i].st == st)
			return (int)i;
	return -1;
}

const char *nfsc_stat_suffix(int st)
{
	int i = stat_row(st);

	return i < 0 ? NULL : stat_table[i].suffix;
}

const char *nfsc_stat_name(int st, char *buf, size_t len)
{
	int i = stat_row(st);

	if (st == NFS3_OK)
		snprintf(buf, len, "NFS3_OK");
	else if (i < 0)
		snprintf(buf, len, "NFS3ERR_#%d", st);
	else
		snprintf(buf, len, "NFS3ERR_%s", stat_table[i].suffix);
	return buf;
}

const char *nfsc_stat_text(int st)
{
	int i = stat_row(st);

	return i < 0 ? "unknown error" : stat_table[i].text;
}

/* ---- paths ---------------------------------------------------------- */

int nfsc_path_split(const char *path, char *buf, size_t buflen,
		    const char **parts, int max)
{
	size_t len = strlen(path);
	int n = 0;
	char *save, *tok;

	if (len >= buflen)
		return -1;
	memcpy(buf, path, len + 1);
	for (tok = strtok_r(buf, "/", &save); tok;
	     tok = strtok_r(NULL, "/", &save)) {
		if (!strcmp(tok, "."))
			continue;
		/* RFC 1813 §3.2: filename3 components; MNAMLEN-sized names
		 * (255) are what servers accept */
		if (strlen(tok) > 255 || n == max)
			return -1;
		parts[n++] = tok;
	}
	return n;
}

/* ---- sizes and progress --------------------------------------------- */

void nfsc_fmt_size(uint64_t n, char *buf, size_t len)
{
	static const char *const units[] = { "KiB", "MiB", "GiB", "TiB",
					     "PiB", "EiB" };
	double v = (double)n;
	int u = -1;

	if (n < 1024) {
		snprintf(buf, len, "%u B", (unsigned)n);
		return;
	}
	while (v >= 1024 && u < 5) {
		v /= 1024;
		u++;
	}
	snprintf(buf, len, v < 10 ? "%.2f %s" : v < 100 ? "%.1f %s" :
		 "%.0f %s", v, units[u]);
}

void nfsc_fmt_progress(uint64_t done, uint64_t total, double secs,
		       char *buf, size_t len)
{
	double rate = secs > 0 ? (double)done / secs / 1e6 : 0;

	if (total)
		snprintf(buf, len, "%llu / %llu bytes (%u%%), %.2f MB/s",
			 (unsigned long long)done, (unsigned long long)total,
			 (unsigned)(done >= total ? 100 :
				    (double)done * 100 / (double)total), rate);
	else
		snprintf(buf, len, "%llu bytes, %.2f MB/s",
			 (unsigned long long)done, rate);
}

/* ---- the procedures: one row each ------------------------------------- */

/* RFC 1813 §3.3; idempotent: a call that timed out may be sent again
 * without changing its effect (the ones that create, remove or rename
 * are not: a second REMOVE of a removed file answers NOENT). */
static const struct nfsc_proc {
	const char *name;
	xdrproc_t args, res;
	size_t res_size;
	bool idempotent;
} procs[] = {
#define P(n, a, r, i) [NFSPROC3_##n] = { #n, (xdrproc_t)xdr_##a, \
	(xdrproc_t)xdr_##r, sizeof(r), i }
	P(GETATTR, GETATTR3args, GETATTR3res, true),
	P(SETATTR, SETATTR3args, SETATTR3res, true),
	P(LOOKUP, LOOKUP3args, LOOKUP3res, true),
	P(ACCESS, ACCESS3args, ACCESS3res, true),
	P(READLINK, READLINK3args, READLINK3res, true),
	P(READ, READ3args, READ3res, true),
	P(WRITE, WRITE3args, WRITE3res, true),
	P(CREATE, CREATE3args, CREATE3res, false),
	P(MKDIR, MKDIR3args, MKDIR3res, false),
	P(SYMLINK, SYMLINK3args, SYMLINK3res, false),
	P(MKNOD, MKNOD3args, MKNOD3res, false),
	P(REMOVE, REMOVE3args, REMOVE3res, false),
	P(RMDIR, RMDIR3args, RMDIR3res, false),
	P(RENAME, RENAME3args, RENAME3res, false),
	P(LINK, LINK3args, LINK3res, false),
	P(READDIR, READDIR3args, READDIR3res, true),
	P(READDIRPLUS, READDIRPLUS3args, READDIRPLUS3res, true),
	P(FSSTAT, FSSTAT3args, FSSTAT3res, true),
	P(FSINFO, FSINFO3args, FSINFO3res, true),
	P(PATHCONF, PATHCONF3args, PATHCONF3res, true),
	P(COMMIT, COMMIT3args, COMMIT3res, true),
#undef P
};
#define NPROCS (sizeof(procs) / sizeof(procs[0]))

const char *nfsc_proc_name(rpcproc_t proc)
{
	return proc < NPROCS && procs[proc].name ? procs[proc].name : "?";
}

/* The first failure of a session is the one told. */
static void set_err(struct nfsc *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void set_err(struct nfsc *c, const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&c->mu);
	if (!c->err[0]) {
		va_start(ap, fmt);
		vsnprintf(c->err, sizeof(c->err), fmt, ap);
		va_end(ap);
	}
	pthread_mutex_unlock(&c->mu);
}

static struct timeval tv_of(double s)
{
	return (struct timeval){
		.tv_sec = (time_t)s,
		.tv_usec = (suseconds_t)((s - (double)(time_t)s) * 1e6),
	};
}

/* One RPC with the session's timeout: an idempotent one tried
 * 1 + retries times, each try given its share of the time. */
static int nfsc_rpc(struct nfsc *c, CLIENT *cl, rpcproc_t proc,
		    const char *fname, xdrproc_t xa, void *a, xdrproc_t xr,
		    void *r, bool idempotent)
{
	unsigned tries = idempotent ? 1 + c->o.retries : 1, i;
	struct timeval tv = tv_of((double)c->o.timeout_s / tries);
	enum clnt_stat st = RPC_TIMEDOUT;

	for (i = 0; i < tries; i++) {
		if (c->o.stopped && c->o.stopped()) {
			set_err(c, "%s: stopped", fname);
			return NFSC_ERR_RPC;
		}
		st = clnt_call(cl, proc, xa, a, xr, r, tv);
		if (st != RPC_TIMEDOUT)
			break;
	}
	if (st != RPC_SUCCESS) {
		set_err(c, "%s", clnt_sperror(cl, fname));
		/* clnt_sperror ends its text with a newline on some paths */
		pthread_mutex_lock(&c->mu);
		c->err[strcspn(c->err, "\n")] = 0;
		pthread_mutex_unlock(&c->mu);
		return NFSC_ERR_RPC;
	}
	return 0;
}

int nfsc_call(struct nfsc *c, rpcproc_t proc, void *args, void *res)
{
	const struct nfsc_proc *p = proc < NPROCS ? &procs[proc] : NULL;
	int rc;

	if (!p || !p->name) {
		set_err(c, "procedure %u is not called by this client", proc);
		return NFSC_ERR_RPC;
	}
	/* RFC 1813 §2.6, NFS3ERR_JUKEBOX: the server could not complete
	 * the request in time (a file being brought back, a server going
	 * down); the client waits and sends it again as a new call.  Here
	 * from 100 ms, doubling to 1 s, for as long as the session's
	 * timeout allows, then the error stands. */
	for (unsigned waited_ms = 0, wait_ms = 100;; wait_ms *= 2) {
		memset(res, 0, p->res_size);
		rc = nfsc_rpc(c, c->nfs, proc, p->name, p->args, args, p->res,
			      res, p->idempotent);
		if (rc)
			return rc;
		/* every NFS version 3 result is a union on nfsstat3, its
		 * first member */
		rc = (int)*(nfsstat3 *)res;
		if (rc != NFS3ERR_JUKEBOX)
			return rc;
		if (wait_ms > 1000)
			wait_ms = 1000;
		if (waited_ms + wait_ms > c->o.timeout_s * 1000u ||
		    (c->o.stopped && c->o.stopped()))
			return rc;
		nfsc_free(proc, res);
		poll(NULL, 0, (int)wait_ms);
		waited_ms += wait_ms;
	}
}

void nfsc_free(rpcproc_t proc, void *res)
{
	if (proc < NPROCS && procs[proc].name)
		xdr_free(procs[proc].res, res);
}

/* ---- session -------------------------------------------------------- */

void nfsc_opts_init(struct nfsc_opts *o)
{
	*o = (struct nfsc_opts){
		.proto = NFSC_RDMA, .auth = NFSC_AUTH_SYS, .uid = -1,
		.gid = -1, .timeout_s = 30, .retries = 1,
	};
}

static AUTH *make_auth(const struct nfsc_opts *o)
{
	char host[256];

	if (o->auth == NFSC_AUTH_NONE)
		return authnone_create();
	if (o->uid < 0 && o->gid < 0)
		return authunix_create_default();
	if (gethostname(host, sizeof(host)) < 0)
		snprintf(host, sizeof(host), "localhost");
	host[sizeof(host) - 1] = 0;
	/* RFC 5531 appendix A: AUTH_SYS; the groups are left out when the
	 * ids are given, since those of this process would not match */
	return authunix_create(host, o->uid >= 0 ? (uid_t)o->uid : getuid(),
			       o->gid >= 0 ? (gid_t)o->gid : getgid(), 0,
			       NULL);
}

void nfsc_fh_set(struct nfsc_fh *dst, const nfs_fh3 *src)
{
	u_int n = src->data.data_len <= NFS3_FHSIZE ? src->data.data_len :
		  NFS3_FHSIZE;

	memcpy(dst->data, src->data.data_val, n);
	dst->fh.data.data_len = n;
	dst->fh.data.data_val = dst->data;
}

static void set_auth(CLIENT *cl, const struct nfsc_opts *o)
{
	AUTH *a = make_auth(o);

	if (a) {
		if (cl->cl_auth)
			auth_destroy(cl->cl_auth);
		cl->cl_auth = a;
	}
}

static int do_mnt(struct nfsc *c)
{
	char *path = (char *)c->o.export;
	mountres3 res;
	int rc;

	if (c->o.mount_port)
		c->mnt = uiw_ru_clnt_ip(c->o.host, c->o.mount_port,
					SOCK_STREAM, MOUNT_PROGRAM, MOUNT_V3);
	else    /* rpcbind on host says where MOUNT listens */
		c->mnt = clnt_create(c->o.host, MOUNT_PROGRAM, MOUNT_V3,
				     "tcp");
	if (!c->mnt) {
		char where[300];

		snprintf(where, sizeof(where), "MOUNT on %s over tcp",
			 c->o.host);
		set_err(c, "%s", clnt_spcreateerror(where));
		c->err[strcspn(c->err, "\n")] = 0;
		return NFSC_ERR_RPC;
	}
	set_auth(c->mnt, &c->o);
	memset(&res, 0, sizeof(res));
	rc = nfsc_rpc(c, c->mnt, MOUNTPROC3_MNT, "MNT", (xdrproc_t)xdr_dirpath,
		      &path, (xdrproc_t)xdr_mountres3, &res, true);
	if (rc)
		return rc;
	rc = (int)res.fhs_status;
	if (rc == MNT3_OK) {
		nfs_fh3 fh = {
			.data = {
				.data_len = res.mountres3_u.mountinfo.fhandle.fhandle3_len,
				.data_val = res.mountres3_u.mountinfo.fhandle.fhandle3_val,
			},
		};
		struct nfsc_fh f;

		if (fh.data.data_len > NFS3_FHSIZE || !fh.data.data_len) {
			set_err(c, "MNT: a file handle of %u octets",
				fh.data.data_len);
			rc = NFSC_ERR_RPC;
		} else {
			nfsc_fh_set(&f, &fh);
			memcpy(c->root_data, f.data, sizeof(f.data));
			c->root.data.data_len = f.fh.data.data_len;
			c->root.data.data_val = c->root_data;
			c->mounted = true;
		}
	}
	xdr_free((xdrproc_t)xdr_mountres3, (char *)&res);
	return rc;
}


/*
 * RFC 8267 §4's bindings (uiw_rpcrdma_ulb_nfs) but READLINK's: its path
 * comes back inline, or in the Reply chunk the transport offers when
 * the reply could outgrow the inline threshold, as Linux's client does.
 * A Write chunk must be sized before the call, for the longest path
 * (4096 octets) when a link's target is a few octets; and tshark 4.0
 * misdecodes a Write chunk returned shorter than offered by a length
 * that is not a multiple of 4 (docs/rpcrdma-wireshark.md).
 */
static struct uiw_rpcrdma_ddp_rule ulb_rules[32];
static struct uiw_rpcrdma_ulb ulb;
static pthread_once_t ulb_once = PTHREAD_ONCE_INIT;

static void ulb_make(void)
{
	const struct uiw_rpcrdma_ulb *nfs = uiw_rpcrdma_ulb_nfs();
	size_t i;

	ulb = *nfs;
	ulb.rules = ulb_rules;
	ulb.nrules = 0;
	for (i = 0; i < nfs->nrules; i++) {
		const struct uiw_rpcrdma_ddp_rule *r = &nfs->rules[i];

		if (r->prog == NFS_PROGRAM && r->vers == NFS_V3 &&
		    r->proc == NFSPROC3_READLINK && r->dir == UIW_RPCRDMA_RESULTS)
			continue;
		if (ulb.nrules < sizeof(ulb_rules) / sizeof(ulb_rules[0]))
			ulb_rules[ulb.nrules++] = *r;
	}
}

static const struct uiw_rpcrdma_ulb *nfsc_ulb(void)
{
	pthread_once(&ulb_once, ulb_make);
	return &ulb;
}

int nfsc_mount(struct nfsc *c, const struct nfsc_opts *o)
{
	struct uiw_rpcrdma_opts ro;
	FSINFO3args fa;
	FSINFO3res fr;
	const char *port;
	int rc;

	memset(c, 0, sizeof(*c));
	c->o = *o;
	pthread_mutex_init(&c->mu, NULL);
	rc = do_mnt(c);
	if (rc)
		return rc;
	port = o->port ? o->port : o->proto == NFSC_RDMA ?
	       UIW_RPCRDMA_NFS_PORT : "2049";
	if (o->proto == NFSC_RDMA) {
		uiw_rpcrdma_opts_init(&ro, false);
		/* RFC 8267 §4: READ data by Write chunk, WRITE data by Read
		 * chunk, READLINK and SYMLINK paths the same */
		ro.ulb = nfsc_ulb();
		ro.connect_timeout_ms = o->timeout_s * 1000;
		c->nfs = uiw_rpcrdma_clnt_create(o->host, port, NFS_PROGRAM,
						 NFS_V3, &ro);
	} else {
		c->nfs = uiw_ru_clnt_ip(o->host, port, SOCK_STREAM,
					NFS_PROGRAM, NFS_V3);
	}
	if (!c->nfs) {
		char where[300];

		snprintf(where, sizeof(where), "NFS on %s port %s over %s",
			 o->host, port, o->proto == NFSC_RDMA ? "rdma" : "tcp");
		set_err(c, "%s", clnt_spcreateerror(where));
		c->err[strcspn(c->err, "\n")] = 0;
		return NFSC_ERR_RPC;
	}
	set_auth(c->nfs, o);
	fa.fsroot = c->root;
	rc = nfsc_call(c, NFSPROC3_FSINFO, &fa, &fr);
	if (rc == NFS3_OK)
		c->fsinfo = fr.FSINFO3res_u.resok;
	if (rc >= 0)
		nfsc_free(NFSPROC3_FSINFO, &fr);
	return rc;
}

void nfsc_unmount(struct nfsc *c)
{
	char *path = (char *)c->o.export;

	if (c->nfs) {
		if (c->nfs->cl_auth)
			auth_destroy(c->nfs->cl_auth);
		c->nfs->cl_auth = NULL;
		clnt_destroy(c->nfs);
	}
	if (c->mnt && c->mounted && !(c->o.stopped && c->o.stopped()))
		(void)clnt_call(c->mnt, MOUNTPROC3_UMNT, (xdrproc_t)xdr_dirpath,
				(char *)&path, (xdrproc_t)(void (*)(void))xdr_void,
				NULL, tv_of(c->o.timeout_s));
	if (c->mnt) {
		if (c->mnt->cl_auth)
			auth_destroy(c->mnt->cl_auth);
		c->mnt->cl_auth = NULL;
		clnt_destroy(c->mnt);
	}
	c->nfs = c->mnt = NULL;
	pthread_mutex_destroy(&c->mu);
}

size_t nfsc_rsize(const struct nfsc *c, size_t want)
{
	size_t max = c->fsinfo.rtmax ? c->fsinfo.rtmax : 65536;

	if (!want)
		want = c->fsinfo.rtpref ? c->fsinfo.rtpref : 65536;
	return want < max ? want : max;
}

size_t nfsc_wsize(const struct nfsc *c, size_t want)
{
	size_t max = c->fsinfo.wtmax ? c->fsinfo.wtmax : 65536;

	if (!want)
		want = c->fsinfo.wtpref ? c->fsinfo.wtpref : 65536;
	return want < max ? want : max;
}

void nfsc_sattr_mode(sattr3 *s, long mode)
{
	memset(s, 0, sizeof(*s));
	if (mode >= 0) {
		s->mode.set_it = TRUE;
		s->mode.set_mode3_u.mode = (mode3)mode;
	}
}

/* ---- paths to handles ------------------------------------------------ */

int nfsc_getattr(struct nfsc *c, const nfs_fh3 *fh, fattr3 *a)
{
	GETATTR3args args = { .object = *fh };
	GETATTR3res res;
	int rc = nfsc_call(c, NFSPROC3_GETATTR, &args, &res);

	if (rc == NFS3_OK)
		*a = res.GETATTR3res_u.resok.obj_attributes;
	if (rc >= 0)
		nfsc_free(NFSPROC3_GETATTR, &res);
	return rc;
}

/* LOOKUP of fname in dir into fh (and a, when it came back). */
static int lookup_one(struct nfsc *c, struct nfsc_fh *fh, const char *fname,
		      fattr3 *a, bool *have_a)
{
	LOOKUP3args args = {
		.what = { .dir = fh->fh, .name = (char *)fname },
	};
	LOOKUP3res res;
	int rc = nfsc_call(c, NFSPROC3_LOOKUP, &args, &res);

	if (rc == NFS3_OK) {
		LOOKUP3resok *ok = &res.LOOKUP3res_u.resok;

		if (ok->object.data.data_len > NFS3_FHSIZE ||
		    !ok->object.data.data_len) {
			set_err(c, "LOOKUP %s: a file handle of %u octets",
				fname, ok->object.data.data_len);
			rc = NFSC_ERR_RPC;
		} else {
			nfsc_fh_set(fh, &ok->object);
			*have_a = ok->obj_attributes.attributes_follow;
			if (*have_a && a)
				*a = ok->obj_attributes.post_op_attr_u.attributes;
		}
	}
	if (rc >= 0)
		nfsc_free(NFSPROC3_LOOKUP, &res);
	return rc;
}

int nfsc_lookup_name(struct nfsc *c, const nfs_fh3 *dir, const char *fname,
		     struct nfsc_fh *fh, fattr3 *a)
{
	bool have_a = false;

	nfsc_fh_set(fh, dir);
	return lookup_one(c, fh, fname, a, &have_a);
}

#define MAX_PARTS 256

/* "@HEX": a file handle given by its octets in hex (as stat prints
 * it), for a path that starts from it; NFSC_ERR_LOCAL when it is not
 * one (odd, not hex, longer than NFS3_FHSIZE, RFC 1813 §2.4). */
static int fh_of_hex(struct nfsc *c, const char *hex, struct nfsc_fh *fh)
{
	size_t len = strlen(hex), i;

	if (!len || len % 2 || len / 2 > NFS3_FHSIZE ||
	    strspn(hex, "0123456789abcdefABCDEF") != len) {
		set_err(c, "a file handle is 1 to %d octets in hex",
			NFS3_FHSIZE);
		return NFSC_ERR_LOCAL;
	}
	for (i = 0; i < len / 2; i++) {
		unsigned v;

		sscanf(hex + 2 * i, "%2x", &v);
		fh->data[i] = (char)v;
	}
	fh->fh.data.data_len = (u_int)(len / 2);
	fh->fh.data.data_val = fh->data;
	return 0;
}

void nfsc_fh_hex(const nfs_fh3 *fh, char *buf, size_t len)
{
	size_t i, o = 0;

	if (len)
		buf[0] = 0;
	for (i = 0; i < fh->data.data_len && o + 3 <= len; i++)
		o += (size_t)snprintf(buf + o, len - o, "%02x",
				      (uint8_t)fh->data.data_val[i]);
}

static int walk(struct nfsc *c, const char **parts, int n,
		struct nfsc_fh *fh, fattr3 *a)
{
	bool have_a = false;
	int i = 0, rc;

	if (n > 0 && parts[0][0] == '@') {
		rc = fh_of_hex(c, parts[0] + 1, fh);
		if (rc)
			return rc;
		i = 1;
	} else {
		nfsc_fh_set(fh, &c->root);
	}
	for (; i < n; i++) {
		rc = lookup_one(c, fh, parts[i], a, &have_a);
		if (rc)
			return rc;
	}
	if (a && !have_a)
		return nfsc_getattr(c, &fh->fh, a);
	return 0;
}

int nfsc_lookup(struct nfsc *c, const char *path, struct nfsc_fh *fh,
		fattr3 *a)
{
	const char *parts[MAX_PARTS];
	char buf[4096];
	int n = nfsc_path_split(path, buf, sizeof(buf), parts, MAX_PARTS);

	if (n < 0)
		return NFS3ERR_NAMETOOLONG;
	return walk(c, parts, n, fh, a);
}

int nfsc_lookup_parent(struct nfsc *c, const char *path,
		       struct nfsc_fh *dir, char *fname, size_t len)
{
	const char *parts[MAX_PARTS];
	char buf[4096];
	int n = nfsc_path_split(path, buf, sizeof(buf), parts, MAX_PARTS);

	if (n < 0)
		return NFS3ERR_NAMETOOLONG;
	/* the export's root has no fname in a directory of the export */
	if (n == 0 || !strcmp(parts[n - 1], ".."))
		return NFS3ERR_INVAL;
	snprintf(fname, len, "%s", parts[n - 1]);
	return walk(c, parts, n - 1, dir, NULL);
}

/* ---- directories ------------------------------------------------------ */

/* A server that loops on cookies is cut off here. */
#define MAX_DIRENTS (1u << 22)

static int add_ent(struct nfsc *c, struct nfsc_dirent **d, size_t *n,
		   size_t *cap, const char *fname, uint64_t fileid,
		   const post_op_attr *a)
{
	struct nfsc_dirent *e;

	if (!strcmp(fname, ".") || !strcmp(fname, ".."))
		return 0;
	if (*n == *cap) {
		size_t nc = *cap ? 2 * *cap : 64;
		struct nfsc_dirent *p;

		if (nc > MAX_DIRENTS) {
			set_err(c, "READDIR: more than %u entries", MAX_DIRENTS);
			return NFSC_ERR_RPC;
		}
		p = realloc(*d, nc * sizeof(*p));
		if (!p)
			goto oom;
		*d = p;
		*cap = nc;
	}
	e = &(*d)[*n];
	memset(e, 0, sizeof(*e));
	e->name = strdup(fname);
	if (!e->name)
		goto oom;
	e->fileid = fileid;
	if (a && a->attributes_follow) {
		e->have_attr = true;
		e->attr = a->post_op_attr_u.attributes;
	}
	(*n)++;
	return 0;
oom:
	set_err(c, "out of memory");
	return NFSC_ERR_LOCAL;
}

static int cmp_ent(const void *a, const void *b)
{
	return strcmp(((const struct nfsc_dirent *)a)->name,
		      ((const struct nfsc_dirent *)b)->name);
}

/* RFC 1813 §3.3.17: the entries in batches, each from the last cookie,
 * with the cookie verifier of the batch before. */
static int readdir_plus(struct nfsc *c, const nfs_fh3 *dir,
			struct nfsc_dirent **d, size_t *n, size_t *cap)
{
	READDIRPLUS3args args = {
		.dir = *dir, .dircount = 8192, .maxcount = 32768,
	};
	READDIRPLUS3res res;
	bool eof = false;
	int rc = 0;

	while (!eof) {
		entryplus3 *e;

		rc = nfsc_call(c, NFSPROC3_READDIRPLUS, &args, &res);
		if (rc)
			break;
		e = res.READDIRPLUS3res_u.resok.reply.entries;
		eof = res.READDIRPLUS3res_u.resok.reply.eof;
		if (!e && !eof) {
			set_err(c, "READDIRPLUS: no entry and no end");
			rc = NFSC_ERR_RPC;
		}
		for (; e && !rc; e = e->nextentry) {
			rc = add_ent(c, d, n, cap, e->name, e->fileid,
				     &e->name_attributes);
			args.cookie = e->cookie;
		}
		memcpy(args.cookieverf, res.READDIRPLUS3res_u.resok.cookieverf,
		       NFS3_COOKIEVERFSIZE);
		nfsc_free(NFSPROC3_READDIRPLUS, &res);
		if (rc)
			return rc;
	}
	if (rc > 0)
		nfsc_free(NFSPROC3_READDIRPLUS, &res);
	return rc;
}

/* RFC 1813 §3.3.16, for servers without READDIRPLUS. */
static int readdir_plain(struct nfsc *c, const nfs_fh3 *dir,
			 struct nfsc_dirent **d, size_t *n, size_t *cap)
{
	READDIR3args args = { .dir = *dir, .count = 32768 };
	READDIR3res res;
	bool eof = false;
	int rc = 0;

	while (!eof) {
		entry3 *e;

		rc = nfsc_call(c, NFSPROC3_READDIR, &args, &res);
		if (rc)
			break;
		e = res.READDIR3res_u.resok.reply.entries;
		eof = res.READDIR3res_u.resok.reply.eof;
		if (!e && !eof) {
			set_err(c, "READDIR: no entry and no end");
			rc = NFSC_ERR_RPC;
		}
		for (; e && !rc; e = e->nextentry) {
			rc = add_ent(c, d, n, cap, e->name, e->fileid, NULL);
			args.cookie = e->cookie;
		}
		memcpy(args.cookieverf, res.READDIR3res_u.resok.cookieverf,
		       NFS3_COOKIEVERFSIZE);
		nfsc_free(NFSPROC3_READDIR, &res);
		if (rc)
			return rc;
	}
	if (rc > 0)
		nfsc_free(NFSPROC3_READDIR, &res);
	return rc;
}

int nfsc_readdir(struct nfsc *c, const nfs_fh3 *dir, bool want_attr,
		 struct nfsc_dirent **out, size_t *n)
{
	struct nfsc_dirent *d = NULL;
	size_t cap = 0, i;
	int rc;

	*n = 0;
	rc = readdir_plus(c, dir, &d, n, &cap);
	if (rc == NFS3ERR_NOTSUPP) {
		nfsc_dirents_free(d, *n);
		d = NULL;
		*n = cap = 0;
		rc = readdir_plain(c, dir, &d, n, &cap);
	}
	for (i = 0; !rc && want_attr && i < *n; i++) {
		struct nfsc_fh fh;
		bool have = false;

		if (d[i].have_attr)
			continue;
		nfsc_fh_set(&fh, dir);
		rc = lookup_one(c, &fh, d[i].name, &d[i].attr, &have);
		if (!rc && !have)
			rc = nfsc_getattr(c, &fh.fh, &d[i].attr);
		d[i].have_attr = !rc;
		/* gone between READDIR and LOOKUP: listed without them */
		if (rc == NFS3ERR_NOENT || rc == NFS3ERR_STALE)
			rc = 0;
	}
	if (rc) {
		nfsc_dirents_free(d, *n);
		*n = 0;
		return rc;
	}
	if (*n)
		qsort(d, *n, sizeof(*d), cmp_ent);
	*out = d;
	return 0;
}

void nfsc_dirents_free(struct nfsc_dirent *d, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(d[i].name);
	free(d);
}

/* ---- whole-file transfers ---------------------------------------------- */

struct xrun {
	struct nfsc *c;
	const nfs_fh3 *fh;
	struct nfsc_xfer *x;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	uint64_t next;          /* the next chunk to claim */
	uint64_t end;           /* get: the file's end once READ said eof */
	uint64_t out;           /* get: the next octet handed to io */
	bool src_end;           /* put: io said the end */
	int rc;                 /* the first failure */
	stable_how stable;
	bool have_verf, verf_changed;
	writeverf3 verf;
	void (*work)(struct xrun *r, uint8_t *buf);
};

static void xrun_fail(struct xrun *r, int rc)
{
	pthread_mutex_lock(&r->mu);
	if (!r->rc)
		r->rc = rc;
	pthread_cond_broadcast(&r->cv);
	pthread_mutex_unlock(&r->mu);
}

static void xrun_moved(struct xrun *r, size_t n)
{
	r->x->done += n;
	if (r->x->progress)
		r->x->progress(r->x->arg, r->x->done, r->x->total);
}

/* READ (RFC 1813 §3.3.6) of up to len octets at off into buf; the
 * count read and *eof, or an error. */
static int read_some(struct xrun *r, uint64_t off, uint8_t *buf, size_t len,
		     size_t *got, bool *eof)
{
	READ3args args = { .file = *r->fh, .offset = off, .count = (count3)len };
	READ3res res;
	int rc = nfsc_call(r->c, NFSPROC3_READ, &args, &res);

	if (rc == NFS3_OK) {
		READ3resok *ok = &res.READ3res_u.resok;

		/* a server's count beyond what was asked, or unlike the
		 * data's length, is not believed */
		if (ok->count > len || ok->data.data_len != ok->count) {
			set_err(r->c, "READ at %llu: %u octets for a count of "
				"%u, %zu asked", (unsigned long long)off,
				ok->data.data_len, ok->count, len);
			rc = NFSC_ERR_RPC;
		} else if (!ok->count && !ok->eof) {
			set_err(r->c, "READ at %llu: no data and no end of file",
				(unsigned long long)off);
			rc = NFSC_ERR_RPC;
		} else {
			memcpy(buf, ok->data.data_val, ok->count);
			*got = ok->count;
			*eof = ok->eof;
		}
	}
	if (rc >= 0)
		nfsc_free(NFSPROC3_READ, &res);
	return rc;
}

static void get_worker(struct xrun *r, uint8_t *buf)
{
	size_t chunk = r->x->chunk;

	for (;;) {
		uint64_t off;
		size_t got = 0, n;
		bool eof = false;
		int rc = 0;

		pthread_mutex_lock(&r->mu);
		/* past the size GETATTR gave, one READ at a time, after all
		 * before it: the last one in the size says eof (RFC 1813
		 * §3.3.6), and a file that grew is read on */
		while (!r->rc && r->next < r->end && r->x->total &&
		       r->next >= r->x->total && r->out != r->next)
			pthread_cond_wait(&r->cv, &r->mu);
		if (r->rc || r->next >= r->end) {
			pthread_mutex_unlock(&r->mu);
			break;
		}
		off = r->next;
		r->next += chunk;
		pthread_mutex_unlock(&r->mu);
		while (!rc && got < chunk && !eof) {
			size_t want = chunk - got;

			/* up to the size GETATTR gave, no further: the READ's
			 * Write chunk (RFC 8267 §4.1, sized by the count) then
			 * holds exactly the data the reply returns */
			if (off + got < r->x->total &&
			    r->x->total - (off + got) < want)
				want = r->x->total - (off + got);
			rc = read_some(r, off + got, buf + got, want, &n,
				       &eof);
			if (!rc)
				got += n;
		}
		if (rc) {
			xrun_fail(r, rc);
			break;
		}
		pthread_mutex_lock(&r->mu);
		if (eof && off + got < r->end) {
			r->end = off + got;
			pthread_cond_broadcast(&r->cv);
		}
		/* the data goes out in file order */
		while (!r->rc && r->out != off && off < r->end)
			pthread_cond_wait(&r->cv, &r->mu);
		if (r->rc || off >= r->end) {
			pthread_mutex_unlock(&r->mu);
			continue;
		}
		pthread_mutex_unlock(&r->mu);
		if (got && r->x->io(r->x->arg, off, buf, got) < 0) {
			set_err(r->c, "writing the local file: %s",
				strerror(errno));
			xrun_fail(r, NFSC_ERR_LOCAL);
			break;
		}
		pthread_mutex_lock(&r->mu);
		r->out = off + got;
		xrun_moved(r, got);
		pthread_cond_broadcast(&r->cv);
		pthread_mutex_unlock(&r->mu);
	}
}

/* WRITE (RFC 1813 §3.3.7) of len octets at off; the count written. */
static int write_some(struct xrun *r, uint64_t off, uint8_t *buf, size_t len,
		      size_t *put)
{
	WRITE3args args = {
		.file = *r->fh, .offset = off, .count = (count3)len,
		.stable = r->stable,
		.data = { .data_len = (u_int)len, .data_val = (char *)buf },
	};
	WRITE3res res;
	int rc = nfsc_call(r->c, NFSPROC3_WRITE, &args, &res);

	if (rc == NFS3_OK) {
		WRITE3resok *ok = &res.WRITE3res_u.resok;

		if (!ok->count || ok->count > len) {
			set_err(r->c, "WRITE at %llu: a count of %u for %zu "
				"octets", (unsigned long long)off, ok->count,
				len);
			rc = NFSC_ERR_RPC;
		} else {
			*put = ok->count;
			/* §3.3.7: a verifier unlike the one before says the
			 * server lost what it had not committed */
			pthread_mutex_lock(&r->mu);
			if (!r->have_verf)
				memcpy(r->verf, ok->verf, sizeof(r->verf));
			else if (memcmp(r->verf, ok->verf, sizeof(r->verf)))
				r->verf_changed = true;
			r->have_verf = true;
			pthread_mutex_unlock(&r->mu);
		}
	}
	if (rc >= 0)
		nfsc_free(NFSPROC3_WRITE, &res);
	return rc;
}

static void put_worker(struct xrun *r, uint8_t *buf)
{
	size_t chunk = r->x->chunk;

	for (;;) {
		uint64_t off;
		ssize_t n;
		size_t sent = 0, k;
		int rc = 0;

		/* the source is read in file order, under the lock */
		pthread_mutex_lock(&r->mu);
		if (r->rc || r->src_end) {
			pthread_mutex_unlock(&r->mu);
			break;
		}
		off = r->next;
		n = r->x->io(r->x->arg, off, buf, chunk);
		if (n < 0) {
			set_err(r->c, "reading the local file: %s",
				strerror(errno));
			if (!r->rc)
				r->rc = NFSC_ERR_LOCAL;
		}
		if (n <= 0) {
			r->src_end = true;
			pthread_mutex_unlock(&r->mu);
			break;
		}
		r->next += (uint64_t)n;
		pthread_mutex_unlock(&r->mu);
		while (!rc && sent < (size_t)n) {
			rc = write_some(r, off + sent, buf + sent,
					(size_t)n - sent, &k);
			if (!rc)
				sent += k;
		}
		if (rc) {
			xrun_fail(r, rc);
			break;
		}
		pthread_mutex_lock(&r->mu);
		xrun_moved(r, (size_t)n);
		pthread_mutex_unlock(&r->mu);
	}
}

/* A thread of a transfer: its buffer, and the loop of get or put. */
static void *xrun_thread(void *arg)
{
	struct xrun *r = arg;
	uint8_t *buf = malloc(r->x->chunk);

	if (!buf) {
		set_err(r->c, "out of memory");
		xrun_fail(r, NFSC_ERR_LOCAL);
		return NULL;
	}
	r->work(r, buf);
	free(buf);
	return NULL;
}

static int xrun_go(struct nfsc *c, const nfs_fh3 *fh, struct nfsc_xfer *x,
		   struct xrun *r, void (*work)(struct xrun *, uint8_t *))
{
	unsigned depth = x->depth ? x->depth : 1, i, started = 0;
	pthread_t th[64];

	if (depth > 64)
		depth = 64;
	r->c = c;
	r->fh = fh;
	r->x = x;
	r->work = work;
	r->end = UINT64_MAX;
	pthread_mutex_init(&r->mu, NULL);
	pthread_cond_init(&r->cv, NULL);
	for (i = 0; i < depth; i++) {
		int e = pthread_create(&th[i], NULL, xrun_thread, r);

		if (e) {
			set_err(c, "pthread_create: %s", strerror(e));
			xrun_fail(r, NFSC_ERR_LOCAL);
			break;
		}
		started++;
	}
	for (i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	pthread_cond_destroy(&r->cv);
	pthread_mutex_destroy(&r->mu);
	return r->rc;
}

int nfsc_read_file(struct nfsc *c, const nfs_fh3 *fh, struct nfsc_xfer *x)
{
	struct xrun r;

	memset(&r, 0, sizeof(r));
	x->done = 0;
	return xrun_go(c, fh, x, &r, get_worker);
}

static int commit(struct nfsc *c, const nfs_fh3 *fh, writeverf3 verf)
{
	COMMIT3args args = { .file = *fh };   /* 0, 0: the whole file */
	COMMIT3res res;
	int rc = nfsc_call(c, NFSPROC3_COMMIT, &args, &res);

	if (rc == NFS3_OK)
		memcpy(verf, res.COMMIT3res_u.resok.verf, sizeof(writeverf3));
	if (rc >= 0)
		nfsc_free(NFSPROC3_COMMIT, &res);
	return rc;
}

/* A write verifier may change this many times in one put before the
 * client gives up. */
#define MAX_PASSES 3

int nfsc_write_file(struct nfsc *c, const nfs_fh3 *fh, struct nfsc_xfer *x)
{
	unsigned pass;
	writeverf3 cv;
	int rc;

	x->resends = 0;
	for (pass = 0; pass < MAX_PASSES; pass++) {
		struct xrun r;

		memset(&r, 0, sizeof(r));
		r.stable = x->file_sync ? FILE_SYNC : UNSTABLE;
		x->done = 0;
		rc = xrun_go(c, fh, x, &r, put_worker);
		if (rc || x->file_sync)
			return rc;
		/* RFC 1813 §3.3.21: COMMIT's verifier equal to every
		 * WRITE's says the data is on stable storage */
		rc = commit(c, fh, cv);
		if (rc)
			return rc;
		if (!r.verf_changed &&
		    (!r.have_verf || !memcmp(cv, r.verf, sizeof(cv))))
			return 0;
		if (!x->rewindable) {
			set_err(c, "the server's write verifier changed (it "
				"restarted?) and the source cannot be read "
				"again");
			return NFSC_ERR_RPC;
		}
		x->resends++;
	}
	set_err(c, "the server's write verifier changed %u times",
		MAX_PASSES);
	return NFSC_ERR_RPC;
}
