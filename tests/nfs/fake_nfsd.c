/*
 * The tests' NFS version 3 server: see fake_nfsd.h.  A file handle is
 * the node's index and a generation, 8 octets; a node removed makes
 * its handles stale (RFC 1813 §2.3.3).
 */
#include "fake_nfsd.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include <uiwarp/rpcrdma.h>
#include "nfs3_prot.h"
#include "mount3.h"
#include "rpc_util.h"
#include "tool_util.h"

/* rpcgen's dispatch functions: their header gives no prototype */
void nfs_program_3(struct svc_req *rq, SVCXPRT *xprt);
void mount_program_3(struct svc_req *rq, SVCXPRT *xprt);

#define NNODES 128
#define ROOT 1

struct node {
	bool used;
	uint32_t gen;
	unsigned parent;
	char name[256];
	ftype3 type;
	uint32_t mode;
	uint8_t *data;
	size_t size;
	char *target;
	nfstime3 mtime;
};

static struct node nodes[NNODES];
static uint32_t next_gen = 1;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct fake_counts counts;
static int silent_after = -1;
static unsigned jukebox_reads;
static unsigned verf_change_at;
static uint64_t verf = 0x1122334455667788ull;
static unsigned signal_at;
static pid_t signal_pid;
static int signal_sig;
static int read_efd = -1, stop_efd = -1;
static pthread_t th;
static SVCXPRT *xp_rdma, *xp_tcp;
static void *scratch;   /* a reply's allocations, freed after it */
static char fh_scratch[NNODES][8];

/* ---- the tree --------------------------------------------------------- */

static unsigned new_node(unsigned parent, const char *nm, ftype3 type,
			 uint32_t mode)
{
	unsigned i;

	for (i = ROOT; i < NNODES; i++)
		if (!nodes[i].used)
			break;
	if (i == NNODES)
		return 0;
	nodes[i] = (struct node){
		.used = true, .gen = next_gen++, .parent = parent,
		.type = type, .mode = mode,
		.mtime = { .seconds = 1700000000u + i },
	};
	snprintf(nodes[i].name, sizeof(nodes[i].name), "%s", nm);
	return i;
}

static void free_node(unsigned i)
{
	free(nodes[i].data);
	free(nodes[i].target);
	memset(&nodes[i], 0, sizeof(nodes[i]));
}

static unsigned child(unsigned dir, const char *nm)
{
	unsigned i;

	if (!strcmp(nm, "."))
		return dir;
	if (!strcmp(nm, ".."))
		return dir == ROOT ? ROOT : nodes[dir].parent;
	for (i = ROOT + 1; i < NNODES; i++)
		if (nodes[i].used && nodes[i].parent == dir &&
		    !strcmp(nodes[i].name, nm))
			return i;
	return 0;
}

static bool has_children(unsigned dir)
{
	unsigned i;

	for (i = ROOT + 1; i < NNODES; i++)
		if (nodes[i].used && nodes[i].parent == dir)
			return true;
	return false;
}

static void set_data(unsigned i, const void *p, size_t n)
{
	free(nodes[i].data);
	nodes[i].data = n ? malloc(n) : NULL;
	if (n)
		memcpy(nodes[i].data, p, n);
	nodes[i].size = n;
}

void fake_reset(size_t big_size)
{
	static const char hello[] = "hello, world\n";
	unsigned i, d, big;
	uint8_t *b;

	pthread_mutex_lock(&mu);
	for (i = 0; i < NNODES; i++)
		if (nodes[i].used)
			free_node(i);
	new_node(0, "", NF3DIR, 0755);
	set_data(new_node(ROOT, "hello.txt", NF3REG, 0644), hello,
		 sizeof(hello) - 1);
	big = new_node(ROOT, "big.bin", NF3REG, 0600);
	b = malloc(big_size ? big_size : 1);
	uiw_tool_fill(b, big_size, 7);
	set_data(big, b, big_size);
	free(b);
	d = new_node(ROOT, "dir", NF3DIR, 0755);
	for (i = 0; i < 5; i++) {
		char nm[2] = { (char)('a' + i), 0 };

		new_node(d, nm, NF3REG, 0644);
	}
	new_node(new_node(d, "sub", NF3DIR, 0755), "x", NF3REG, 0644);
	nodes[new_node(ROOT, "link", NF3LNK, 0777)].target = strdup("hello.txt");
	new_node(ROOT, "empty", NF3DIR, 0755);
	memset(&counts, 0, sizeof(counts));
	silent_after = -1;
	jukebox_reads = 0;
	verf_change_at = 0;
	signal_at = 0;
	pthread_mutex_unlock(&mu);
}

static unsigned by_path(const char *path)
{
	char buf[1024], *save, *tok;
	unsigned n = ROOT;

	snprintf(buf, sizeof(buf), "%s", path);
	for (tok = strtok_r(buf, "/", &save); tok && n;
	     tok = strtok_r(NULL, "/", &save))
		n = child(n, tok);
	return n;
}

uint8_t *fake_data(const char *path, size_t *len, int *type)
{
	uint8_t *p = NULL;
	unsigned n;

	pthread_mutex_lock(&mu);
	n = by_path(path);
	if (n) {
		*len = nodes[n].size;
		*type = nodes[n].type;
		p = malloc(*len + 1);
		if (p && *len)
			memcpy(p, nodes[n].data, *len);
	}
	pthread_mutex_unlock(&mu);
	return p;
}

char *fake_target(const char *path)
{
	char *t = NULL;
	unsigned n;

	pthread_mutex_lock(&mu);
	n = by_path(path);
	if (n && nodes[n].target)
		t = strdup(nodes[n].target);
	pthread_mutex_unlock(&mu);
	return t;
}

void fake_counts(struct fake_counts *c)
{
	pthread_mutex_lock(&mu);
	*c = counts;
	pthread_mutex_unlock(&mu);
}

void fake_jukebox_reads(unsigned n)
{
	pthread_mutex_lock(&mu);
	jukebox_reads = n;
	pthread_mutex_unlock(&mu);
}

void fake_silent_reads_after(int n)
{
	pthread_mutex_lock(&mu);
	silent_after = n;
	pthread_mutex_unlock(&mu);
}

void fake_change_verf_after(unsigned n)
{
	pthread_mutex_lock(&mu);
	verf_change_at = n;
	pthread_mutex_unlock(&mu);
}

void fake_signal_at_read(unsigned n, pid_t pid, int sig)
{
	pthread_mutex_lock(&mu);
	signal_at = n;
	signal_pid = pid;
	signal_sig = sig;
	pthread_mutex_unlock(&mu);
}

int fake_read_fd(void)
{
	return read_efd;
}

/* ---- handles and attributes ------------------------------------------- */

static void fh_of(unsigned i, nfs_fh3 *fh)
{
	memcpy(fh_scratch[i], &i, 4);
	memcpy(fh_scratch[i] + 4, &nodes[i].gen, 4);
	fh->data.data_len = 8;
	fh->data.data_val = fh_scratch[i];
}

/* The node of fh, or 0 (*st: STALE or BADHANDLE). */
static unsigned node_of(const nfs_fh3 *fh, nfsstat3 *st)
{
	unsigned i;
	uint32_t gen;

	if (fh->data.data_len != 8) {
		*st = NFS3ERR_BADHANDLE;
		return 0;
	}
	memcpy(&i, fh->data.data_val, 4);
	memcpy(&gen, fh->data.data_val + 4, 4);
	if (i < ROOT || i >= NNODES || !nodes[i].used || nodes[i].gen != gen) {
		*st = NFS3ERR_STALE;
		return 0;
	}
	return i;
}

static void attr_of(unsigned i, fattr3 *a)
{
	const struct node *n = &nodes[i];

	*a = (fattr3){
		.type = n->type, .mode = n->mode,
		.nlink = n->type == NF3DIR ? 2 : 1,
		.size = n->type == NF3LNK ? strlen(n->target) : n->size,
		.used = n->size, .fsid = 1, .fileid = i,
		.atime = n->mtime, .mtime = n->mtime, .ctime = n->mtime,
	};
}

static void post_attr(unsigned i, post_op_attr *p)
{
	p->attributes_follow = TRUE;
	attr_of(i, &p->post_op_attr_u.attributes);
}

static void note_cred(struct svc_req *rq)
{
	counts.last_flavor = (int)rq->rq_cred.oa_flavor;
	if (rq->rq_cred.oa_flavor == AUTH_SYS && rq->rq_clntcred) {
		const struct authunix_parms *p = (void *)rq->rq_clntcred;

		counts.last_uid = p->aup_uid;
		counts.last_gid = p->aup_gid;
	}
}

/* Every procedure runs under the lock, on results zeroed (rpcgen's
 * dispatcher hands them over as they were on its stack); NODE(fh) ends
 * it with the handle's error. */
#define BEGIN() memset(r, 0, sizeof(*r)); pthread_mutex_lock(&mu); \
	note_cred(rq)
#define END() do { pthread_mutex_unlock(&mu); return TRUE; } while (0)
#define NODE(var, fh, res) do { \
	nfsstat3 st_; \
	var = node_of(fh, &st_); \
	if (!var) { (res)->status = st_; END(); } \
} while (0)

/* ---- NFS version 3 ---------------------------------------------------- */

bool_t nfsproc3_null_3_svc(void *a, void *r, struct svc_req *rq)
{
	return TRUE;
}

bool_t nfsproc3_getattr_3_svc(GETATTR3args *a, GETATTR3res *r,
			      struct svc_req *rq)
{
	unsigned n;

	BEGIN();
	NODE(n, &a->object, r);
	r->status = NFS3_OK;
	attr_of(n, &r->GETATTR3res_u.resok.obj_attributes);
	END();
}

bool_t nfsproc3_setattr_3_svc(SETATTR3args *a, SETATTR3res *r,
			      struct svc_req *rq)
{
	sattr3 *s = &a->new_attributes;
	unsigned n;

	BEGIN();
	NODE(n, &a->object, r);
	if (s->mode.set_it)
		nodes[n].mode = s->mode.set_mode3_u.mode & 07777;
	if (s->size.set_it && nodes[n].type == NF3REG) {
		size_t sz = s->size.set_size3_u.size;

		nodes[n].data = realloc(nodes[n].data, sz ? sz : 1);
		if (sz > nodes[n].size)
			memset(nodes[n].data + nodes[n].size, 0,
			       sz - nodes[n].size);
		nodes[n].size = sz;
	}
	if (s->mtime.set_it == SET_TO_SERVER_TIME)
		nodes[n].mtime.seconds++;
	r->status = NFS3_OK;
	END();
}

bool_t nfsproc3_lookup_3_svc(LOOKUP3args *a, LOOKUP3res *r,
			     struct svc_req *rq)
{
	unsigned d, n;

	BEGIN();
	NODE(d, &a->what.dir, r);
	if (nodes[d].type != NF3DIR) {
		r->status = NFS3ERR_NOTDIR;
		END();
	}
	n = child(d, a->what.name);
	if (!n) {
		r->status = NFS3ERR_NOENT;
		END();
	}
	r->status = NFS3_OK;
	fh_of(n, &r->LOOKUP3res_u.resok.object);
	post_attr(n, &r->LOOKUP3res_u.resok.obj_attributes);
	END();
}

bool_t nfsproc3_access_3_svc(ACCESS3args *a, ACCESS3res *r,
			     struct svc_req *rq)
{
	unsigned n;

	BEGIN();
	NODE(n, &a->object, r);
	r->status = NFS3_OK;
	r->ACCESS3res_u.resok.access = a->access;
	END();
}

bool_t nfsproc3_readlink_3_svc(READLINK3args *a, READLINK3res *r,
			       struct svc_req *rq)
{
	unsigned n;

	BEGIN();
	NODE(n, &a->symlink, r);
	if (nodes[n].type != NF3LNK) {
		r->status = NFS3ERR_INVAL;
		END();
	}
	r->status = NFS3_OK;
	r->READLINK3res_u.resok.data = nodes[n].target;
	END();
}

bool_t nfsproc3_read_3_svc(READ3args *a, READ3res *r, struct svc_req *rq)
{
	READ3resok *ok = &r->READ3res_u.resok;
	uint64_t one = 1;
	unsigned n;
	size_t off, cnt;

	BEGIN();
	counts.reads++;
	if (write(read_efd, &one, sizeof(one)) < 0)
		perror("fake_nfsd: eventfd");
	if (signal_at && counts.reads == signal_at)
		kill(signal_pid, signal_sig);
	if (silent_after >= 0 && counts.reads > (unsigned)silent_after) {
		/* no reply: rpcgen's dispatcher sends none for FALSE */
		pthread_mutex_unlock(&mu);
		return FALSE;
	}
	if (jukebox_reads) {
		jukebox_reads--;
		r->status = NFS3ERR_JUKEBOX;
		END();
	}
	NODE(n, &a->file, r);
	if (nodes[n].type != NF3REG) {
		r->status = nodes[n].type == NF3DIR ? NFS3ERR_ISDIR :
			    NFS3ERR_INVAL;
		END();
	}
	off = a->offset < nodes[n].size ? a->offset : nodes[n].size;
	cnt = nodes[n].size - off < a->count ? nodes[n].size - off : a->count;
	r->status = NFS3_OK;
	post_attr(n, &ok->file_attributes);
	ok->count = (count3)cnt;
	ok->eof = off + cnt == nodes[n].size;
	ok->data.data_len = (u_int)cnt;
	ok->data.data_val = cnt ? (char *)nodes[n].data + off : NULL;
	END();
}

bool_t nfsproc3_write_3_svc(WRITE3args *a, WRITE3res *r, struct svc_req *rq)
{
	WRITE3resok *ok = &r->WRITE3res_u.resok;
	size_t end, len = a->data.data_len;
	unsigned n;

	BEGIN();
	NODE(n, &a->file, r);
	if (nodes[n].type != NF3REG || len != a->count) {
		r->status = NFS3ERR_INVAL;
		END();
	}
	end = a->offset + len;
	if (end > nodes[n].size) {
		nodes[n].data = realloc(nodes[n].data, end);
		memset(nodes[n].data + nodes[n].size, 0, end - nodes[n].size);
		nodes[n].size = end;
	}
	memcpy(nodes[n].data + a->offset, a->data.data_val, len);
	counts.writes++;
	if (a->stable == UNSTABLE)
		counts.unstable_writes++;
	else
		counts.sync_writes++;
	r->status = NFS3_OK;
	ok->count = (count3)len;
	ok->committed = a->stable;
	/* a server that restarted: what was unstable is lost (here: kept,
	 * but the client cannot know) */
	if (verf_change_at && counts.writes == verf_change_at)
		verf++;
	memcpy(ok->verf, &verf, sizeof(ok->verf));
	END();
}

/* CREATE, MKDIR and SYMLINK: a new node of type in where. */
static unsigned make(diropargs3 *where, ftype3 type, uint32_t mode,
		     bool guarded, nfsstat3 *st)
{
	unsigned d, n;

	d = node_of(&where->dir, st);
	if (!d)
		return 0;
	if (nodes[d].type != NF3DIR) {
		*st = NFS3ERR_NOTDIR;
		return 0;
	}
	n = child(d, where->name);
	if (n && (guarded || nodes[n].type != type)) {
		*st = NFS3ERR_EXIST;
		return 0;
	}
	if (!n)
		n = new_node(d, where->name, type, mode);
	if (!n)
		*st = NFS3ERR_NOSPC;
	else
		*st = NFS3_OK;
	return n;
}

static void created(unsigned n, CREATE3resok *ok)
{
	ok->obj.handle_follows = TRUE;
	fh_of(n, &ok->obj.post_op_fh3_u.handle);
	post_attr(n, &ok->obj_attributes);
}

bool_t nfsproc3_create_3_svc(CREATE3args *a, CREATE3res *r,
			     struct svc_req *rq)
{
	sattr3 *s = &a->how.createhow3_u.obj_attributes;
	nfsstat3 st;
	unsigned n;

	BEGIN();
	if (a->how.mode == EXCLUSIVE) {
		r->status = NFS3ERR_NOTSUPP;
		END();
	}
	n = make(&a->where, NF3REG, s->mode.set_it ?
		 s->mode.set_mode3_u.mode : 0644, a->how.mode == GUARDED, &st);
	r->status = st;
	if (!n)
		END();
	if (s->size.set_it && !s->size.set_size3_u.size)
		set_data(n, NULL, 0);
	created(n, &r->CREATE3res_u.resok);
	END();
}

bool_t nfsproc3_mkdir_3_svc(MKDIR3args *a, MKDIR3res *r, struct svc_req *rq)
{
	nfsstat3 st;
	unsigned n;

	BEGIN();
	n = make(&a->where, NF3DIR, 0755, true, &st);
	r->status = st;
	if (n)
		created(n, &r->MKDIR3res_u.resok);
	END();
}

bool_t nfsproc3_symlink_3_svc(SYMLINK3args *a, SYMLINK3res *r,
			      struct svc_req *rq)
{
	nfsstat3 st;
	unsigned n;

	BEGIN();
	n = make(&a->where, NF3LNK, 0777, true, &st);
	r->status = st;
	if (n) {
		nodes[n].target = strdup(a->symlink.symlink_data);
		created(n, &r->SYMLINK3res_u.resok);
	}
	END();
}

bool_t nfsproc3_mknod_3_svc(MKNOD3args *a, MKNOD3res *r, struct svc_req *rq)
{
	BEGIN();
	r->status = NFS3ERR_NOTSUPP;
	END();
}

/* REMOVE and RMDIR: a name of where that is (dir) or is not a
 * directory. */
static nfsstat3 unlink_node(diropargs3 *where, bool dir)
{
	nfsstat3 st;
	unsigned d = node_of(&where->dir, &st), n;

	if (!d)
		return st;
	n = child(d, where->name);
	if (!n || n == d || !strcmp(where->name, ".."))
		return n ? NFS3ERR_INVAL : NFS3ERR_NOENT;
	if (dir && nodes[n].type != NF3DIR)
		return NFS3ERR_NOTDIR;
	if (!dir && nodes[n].type == NF3DIR)
		return NFS3ERR_ISDIR;
	if (dir && has_children(n))
		return NFS3ERR_NOTEMPTY;
	free_node(n);
	return NFS3_OK;
}

bool_t nfsproc3_remove_3_svc(REMOVE3args *a, REMOVE3res *r,
			     struct svc_req *rq)
{
	BEGIN();
	r->status = unlink_node(&a->object, false);
	END();
}

bool_t nfsproc3_rmdir_3_svc(RMDIR3args *a, RMDIR3res *r, struct svc_req *rq)
{
	BEGIN();
	r->status = unlink_node(&a->object, true);
	END();
}

bool_t nfsproc3_rename_3_svc(RENAME3args *a, RENAME3res *r,
			     struct svc_req *rq)
{
	nfsstat3 st;
	unsigned fd, td, n, old;

	BEGIN();
	NODE(fd, &a->from.dir, r);
	NODE(td, &a->to.dir, r);
	n = child(fd, a->from.name);
	if (!n) {
		r->status = NFS3ERR_NOENT;
		END();
	}
	old = child(td, a->to.name);
	if (old && old != n) {
		if (nodes[old].type == NF3DIR && has_children(old)) {
			r->status = NFS3ERR_NOTEMPTY;
			END();
		}
		free_node(old);
	}
	nodes[n].parent = td;
	snprintf(nodes[n].name, sizeof(nodes[n].name), "%s", a->to.name);
	(void)st;
	r->status = NFS3_OK;
	END();
}

bool_t nfsproc3_link_3_svc(LINK3args *a, LINK3res *r, struct svc_req *rq)
{
	BEGIN();
	r->status = NFS3ERR_NOTSUPP;
	END();
}

/* The children of dir from cookie on (a cookie is a node's index),
 * at most three a reply, so that listings take several calls. */
#define PER_REPLY 3

static unsigned next_child(unsigned dir, uint64_t after)
{
	unsigned i;

	for (i = (unsigned)(after > ROOT ? after + 1 : ROOT + 1); i < NNODES;
	     i++)
		if (nodes[i].used && nodes[i].parent == dir)
			return i;
	return 0;
}

bool_t nfsproc3_readdir_3_svc(READDIR3args *a, READDIR3res *r,
			      struct svc_req *rq)
{
	BEGIN();
	/* READDIRPLUS's list is the one kept up to date; this one is not
	 * asked for by the client while READDIRPLUS works */
	r->status = NFS3ERR_NOTSUPP;
	END();
}

bool_t nfsproc3_readdirplus_3_svc(READDIRPLUS3args *a, READDIRPLUS3res *r,
				  struct svc_req *rq)
{
	READDIRPLUS3resok *ok = &r->READDIRPLUS3res_u.resok;
	entryplus3 *e, **tail = &ok->reply.entries;
	unsigned d, n, k = 0;
	uint64_t cookie = a->cookie;

	BEGIN();
	counts.readdirplus++;
	NODE(d, &a->dir, r);
	if (nodes[d].type != NF3DIR) {
		r->status = NFS3ERR_NOTDIR;
		END();
	}
	e = scratch = calloc(PER_REPLY, sizeof(*e));
	while (k < PER_REPLY && (n = next_child(d, cookie))) {
		e[k] = (entryplus3){
			.fileid = n, .name = nodes[n].name, .cookie = n,
		};
		post_attr(n, &e[k].name_attributes);
		e[k].name_handle.handle_follows = TRUE;
		fh_of(n, &e[k].name_handle.post_op_fh3_u.handle);
		*tail = &e[k];
		tail = &e[k].nextentry;
		cookie = n;
		k++;
	}
	ok->reply.eof = !next_child(d, cookie);
	memset(ok->cookieverf, 0x5a, sizeof(ok->cookieverf));
	r->status = NFS3_OK;
	END();
}

bool_t nfsproc3_fsstat_3_svc(FSSTAT3args *a, FSSTAT3res *r,
			     struct svc_req *rq)
{
	FSSTAT3resok *ok = &r->FSSTAT3res_u.resok;

	BEGIN();
	r->status = NFS3_OK;
	ok->tbytes = 1u << 30;
	ok->fbytes = 1u << 29;
	ok->abytes = 1u << 28;
	ok->tfiles = NNODES;
	ok->ffiles = 100;
	ok->afiles = 99;
	ok->invarsec = 0;
	END();
}

bool_t nfsproc3_fsinfo_3_svc(FSINFO3args *a, FSINFO3res *r,
			     struct svc_req *rq)
{
	FSINFO3resok *ok = &r->FSINFO3res_u.resok;

	BEGIN();
	r->status = NFS3_OK;
	ok->rtmax = ok->wtmax = 1 << 20;
	ok->rtpref = ok->wtpref = 64 << 10;
	ok->rtmult = ok->wtmult = 4096;
	ok->dtpref = 8192;
	ok->maxfilesize = (uint64_t)1 << 40;
	ok->time_delta.nseconds = 1;
	ok->properties = FSF3_SYMLINK | FSF3_HOMOGENEOUS | FSF3_CANSETTIME;
	END();
}

bool_t nfsproc3_pathconf_3_svc(PATHCONF3args *a, PATHCONF3res *r,
			       struct svc_req *rq)
{
	BEGIN();
	r->status = NFS3ERR_NOTSUPP;
	END();
}

bool_t nfsproc3_commit_3_svc(COMMIT3args *a, COMMIT3res *r,
			     struct svc_req *rq)
{
	unsigned n;

	BEGIN();
	NODE(n, &a->file, r);
	counts.commits++;
	r->status = NFS3_OK;
	memcpy(r->COMMIT3res_u.resok.verf, &verf, sizeof(verf));
	END();
}

int nfs_program_3_freeresult(SVCXPRT *x, xdrproc_t xr, caddr_t res)
{
	free(scratch);
	scratch = NULL;
	return 1;
}

/* ---- MOUNT version 3 -------------------------------------------------- */

static int flavors[] = { AUTH_SYS, AUTH_NONE };

bool_t mountproc3_null_3_svc(void *a, void *r, struct svc_req *rq)
{
	return TRUE;
}

bool_t mountproc3_mnt_3_svc(dirpath *a, mountres3 *r, struct svc_req *rq)
{
	nfs_fh3 fh;

	BEGIN();
	counts.mounts++;
	if (strcmp(*a, "/export")) {
		r->fhs_status = MNT3ERR_NOENT;
		END();
	}
	fh_of(ROOT, &fh);
	r->fhs_status = MNT3_OK;
	r->mountres3_u.mountinfo.fhandle.fhandle3_len = fh.data.data_len;
	r->mountres3_u.mountinfo.fhandle.fhandle3_val = fh.data.data_val;
	r->mountres3_u.mountinfo.auth_flavors.auth_flavors_len = 2;
	r->mountres3_u.mountinfo.auth_flavors.auth_flavors_val = flavors;
	END();
}

bool_t mountproc3_dump_3_svc(void *a, mountlist *r, struct svc_req *rq)
{
	*r = NULL;
	return TRUE;
}

bool_t mountproc3_umnt_3_svc(dirpath *a, void *r, struct svc_req *rq)
{
	pthread_mutex_lock(&mu);
	counts.umounts++;
	END();
}

bool_t mountproc3_umntall_3_svc(void *a, void *r, struct svc_req *rq)
{
	return TRUE;
}

bool_t mountproc3_export_3_svc(void *a, exports *r, struct svc_req *rq)
{
	*r = NULL;
	return TRUE;
}

int mount_program_3_freeresult(SVCXPRT *x, xdrproc_t xr, caddr_t res)
{
	return 1;
}

/* ---- the server thread ------------------------------------------------ */

static bool stop_now(void *arg)
{
	return false;
}

static void *serve(void *arg)
{
	if (uiw_ru_serve(stop_efd, stop_now, NULL) < 0)
		perror("fake_nfsd: poll");
	return NULL;
}

bool fake_start(struct fake_ports *p)
{
	struct uiw_rpcrdma_opts ro;
	char err[300];
	sigset_t all, old;
	int rc;

	read_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	stop_efd = eventfd(0, EFD_CLOEXEC);
	if (read_efd < 0 || stop_efd < 0) {
		perror("fake_nfsd: eventfd");
		return false;
	}
	uiw_rpcrdma_opts_init(&ro, true);
	ro.ulb = uiw_rpcrdma_ulb_nfs();
	xp_rdma = uiw_rpcrdma_svc_create("127.0.0.1", "0", &ro);
	if (!xp_rdma) {
		fprintf(stderr, "fake_nfsd: rdma: %s\n", strerror(errno));
		return false;
	}
	xp_tcp = uiw_ru_svc_ip("127.0.0.1", "0", SOCK_STREAM, err,
			       sizeof(err));
	if (!xp_tcp) {
		fprintf(stderr, "fake_nfsd: %s\n", err);
		return false;
	}
	if (!svc_reg(xp_rdma, NFS_PROGRAM, NFS_V3, nfs_program_3, NULL) ||
	    !svc_reg(xp_tcp, NFS_PROGRAM, NFS_V3, nfs_program_3, NULL) ||
	    !svc_reg(xp_tcp, MOUNT_PROGRAM, MOUNT_V3, mount_program_3, NULL)) {
		fprintf(stderr, "fake_nfsd: svc_reg failed\n");
		return false;
	}
	p->rdma = xp_rdma->xp_port;
	p->tcp = uiw_ru_svc_port(xp_tcp);
	/* the test's signals (SIGCHLD) are not this thread's */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	rc = pthread_create(&th, NULL, serve, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc) {
		fprintf(stderr, "fake_nfsd: pthread_create: %s\n",
			strerror(rc));
		return false;
	}
	return true;
}

void fake_stop(void)
{
	uint64_t one = 1;

	if (write(stop_efd, &one, sizeof(one)) < 0)
		perror("fake_nfsd: eventfd");
	pthread_join(th, NULL);
	svc_destroy(xp_rdma);
	svc_destroy(xp_tcp);
}
