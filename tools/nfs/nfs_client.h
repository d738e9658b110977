/*
 * The NFS version 3 client of uiwarp-nfs, as a library that tests and
 * benchmarks can use too: MOUNT version 3 over TCP (RFC 1813 §5, RFC
 * 8267 §5.1), NFS version 3 over RPC-over-RDMA with RFC 8267's
 * bindings or over TCP, paths looked up a component at a time from the
 * export's root, whole-file READ and WRITE loops with several calls in
 * flight, and the one table of nfsstat3 names and texts.
 *
 * Results: 0 when done; > 0 an nfsstat3 (or mountstat3: the numbers
 * are the same) the server answered; NFSC_ERR_RPC when a call could
 * not be made or answered (the transport: why in c->err); NFSC_ERR_LOCAL
 * when a local file failed (errno-based text in c->err).
 */
#ifndef UIW_NFS_CLIENT_H
#define UIW_NFS_CLIENT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "nfs3_prot.h"
#include "mount3.h"

#define NFSC_ERR_RPC (-1)
#define NFSC_ERR_LOCAL (-2)

enum nfsc_proto { NFSC_RDMA, NFSC_TCP };
enum nfsc_auth { NFSC_AUTH_SYS, NFSC_AUTH_NONE };

struct nfsc_opts {
	const char *host;
	const char *export;
	enum nfsc_proto proto;
	const char *port;        /* NULL: 20049 (rdma), 2049 (tcp) */
	const char *mount_port;  /* NULL: asked of rpcbind on host */
	enum nfsc_auth auth;
	long uid, gid;           /* -1: the process's own */
	unsigned timeout_s;      /* a call's whole time, retries included */
	unsigned retries;        /* more tries of an idempotent call */
	/* stopped() true: no new call starts (a signal asked for the end) */
	bool (*stopped)(void);
};
void nfsc_opts_init(struct nfsc_opts *o);

struct nfsc {
	struct nfsc_opts o;
	CLIENT *mnt, *nfs;
	nfs_fh3 root;
	char root_data[NFS3_FHSIZE];
	FSINFO3resok fsinfo;
	bool mounted;
	pthread_mutex_t mu;      /* err, and calls' shared counts */
	char err[512];
};

/* ---- nfsstat3: one table ------------------------------------------ */

/* "NOENT" for NFS3ERR_NOENT; NULL for a number the table lacks. */
const char *nfsc_stat_suffix(int st);
/* "NFS3ERR_NOENT"; "NFS3ERR_#n" for an unknown one (buf holds it). */
const char *nfsc_stat_name(int st, char *buf, size_t len);
/* "No such file or directory"; "unknown error" */
const char *nfsc_stat_text(int st);

/* ---- paths ---------------------------------------------------------- */

/* Splits path (absolute or not: both are from the export's root) into
 * its components in buf, skipping empty ones and "."; parts[i] point
 * into buf.  The count, or -1 when buf or max is too small, or a
 * component is longer than NFS's 255. */
int nfsc_path_split(const char *path, char *buf, size_t buflen,
		    const char **parts, int max);

/* ---- sizes and progress --------------------------------------------- */

/* octets in binary units: "512 B", "1.5 KiB", "64.0 MiB", "2.00 GiB" */
void nfsc_fmt_size(uint64_t n, char *buf, size_t len);
/* "<done> / <total> bytes (<pct>%), <rate> MB/s" (total 0: unknown,
 * "<done> bytes, <rate> MB/s"); MB = 10^6 octets; secs <= 0: rate 0. */
void nfsc_fmt_progress(uint64_t done, uint64_t total, double secs,
		       char *buf, size_t len);

/* ---- session -------------------------------------------------------- */

/* MNT the export, connect NFS, FSINFO of the root. */
int nfsc_mount(struct nfsc *c, const struct nfsc_opts *o);
/* UMNT (when mounted) and everything freed. */
void nfsc_unmount(struct nfsc *c);
/* One NFS call of procedure proc (the table in nfs_client.c says its
 * XDR routines and whether it is retried): the nfsstat3 of the results
 * (their first word), or NFSC_ERR_RPC.  res is zeroed first; free it
 * with nfsc_free. */
int nfsc_call(struct nfsc *c, rpcproc_t proc, void *args, void *res);
void nfsc_free(rpcproc_t proc, void *res);
/* The name of procedure proc ("READ"). */
const char *nfsc_proc_name(rpcproc_t proc);

/* ---- paths to handles ------------------------------------------------ */

/* A file handle with room for its data. */
struct nfsc_fh {
	nfs_fh3 fh;
	char data[NFS3_FHSIZE];
};
void nfsc_fh_set(struct nfsc_fh *dst, const nfs_fh3 *src);

/* A handle's octets in hex (what a path "@HEX" names), cut to len. */
void nfsc_fh_hex(const nfs_fh3 *fh, char *buf, size_t len);
/* The handle (and attributes, a may be NULL) of path: from the export's
 * root, or from the handle "@HEX" of its first component. */
int nfsc_lookup(struct nfsc *c, const char *path, struct nfsc_fh *fh,
		fattr3 *a);
/* The handle of path's directory, and its last component in name. */
int nfsc_lookup_parent(struct nfsc *c, const char *path,
		       struct nfsc_fh *dir, char *name, size_t len);
/* LOOKUP of one name in dir: its handle (and attributes when the server
 * sent them; a may be NULL). */
int nfsc_lookup_name(struct nfsc *c, const nfs_fh3 *dir, const char *name,
		     struct nfsc_fh *fh, fattr3 *a);
int nfsc_getattr(struct nfsc *c, const nfs_fh3 *fh, fattr3 *a);

/* ---- directories ------------------------------------------------------ */

struct nfsc_dirent {
	char *name;
	uint64_t fileid;
	bool have_attr;
	fattr3 attr;
};
/* Every entry of dir (READDIRPLUS, or READDIR where the server does not
 * support it; with want_attr, attributes by LOOKUP then), "." and ".."
 * left out, sorted by name.  Free with nfsc_dirents_free. */
int nfsc_readdir(struct nfsc *c, const nfs_fh3 *dir, bool want_attr,
		 struct nfsc_dirent **out, size_t *n);
void nfsc_dirents_free(struct nfsc_dirent *d, size_t n);

/* ---- whole-file transfers ---------------------------------------------- */

struct nfsc_xfer {
	size_t chunk;            /* rsize or wsize */
	unsigned depth;          /* calls in flight */
	bool file_sync;          /* WRITE FILE_SYNC, no COMMIT */
	/* get: the data in file order (off ascending, no gaps); put: up
	 * to len octets at off, called in file order; returns the count
	 * (0: the end) or -1 with errno. */
	ssize_t (*io)(void *arg, uint64_t off, void *buf, size_t len);
	void *arg;
	/* put: the source can be read again from offset 0 (a resend after
	 * the server's write verifier changed, RFC 1813 §3.3.7). */
	bool rewindable;
	/* Called now and then with the octets moved; may be NULL. */
	void (*progress)(void *arg, uint64_t done, uint64_t total);
	uint64_t total;          /* for progress: the size if known */
	uint64_t done;           /* out: octets moved */
	unsigned resends;        /* out: passes repeated for a new verifier */
};
int nfsc_read_file(struct nfsc *c, const nfs_fh3 *fh, struct nfsc_xfer *x);
int nfsc_write_file(struct nfsc *c, const nfs_fh3 *fh, struct nfsc_xfer *x);

/* rsize / wsize: want (0: the server's preference) bounded by the
 * server's maximum; never 0. */
size_t nfsc_rsize(const struct nfsc *c, size_t want);
size_t nfsc_wsize(const struct nfsc *c, size_t want);

/* A sattr3 that sets the mode only (mode < 0: nothing). */
void nfsc_sattr_mode(sattr3 *s, long mode);

#endif
