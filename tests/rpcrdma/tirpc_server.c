/*
 * The server of the libtirpc tests: rrtest.x's program, through
 * rpcgen's own skeleton (rrt_prog_1), NFSv3's READ, WRITE, SYMLINK
 * and READLINK (nfs3sub.x, nfs_program_3) and NFSv4's COMPOUND with
 * some operations (nfs4sub.x, nfs4_program_4), on RPC-over-RDMA
 * SVCXPRTs (on
 * 127.0.0.1 and ::1) and on TCP and UDP ones, all served by one
 * svc_run.  It tells its ports
 * on descriptor 3 once it serves; SIGTERM or SIGINT make it leave
 * svc_run (svc_exit, called from svc_run's own thread through a pipe
 * the handler writes to), and then it writes its RPC-over-RDMA counts
 * there and exits 0.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netconfig.h>
#include <netinet/in.h>
#include <rpc/rpc.h>
#include <rpc/svc_auth.h>
#include <rpc/svc_mt.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tirpc_util.h"

void rrt_prog_1(struct svc_req *rqstp, SVCXPRT *transp);
void nfs_program_3(struct svc_req *rqstp, SVCXPRT *transp);
void nfs4_program_4(struct svc_req *rqstp, SVCXPRT *transp);

/* ---- the program ------------------------------------------------------- */

void *rrtproc_null_1_svc(void *arg, struct svc_req *rq)
{
	static char none;

	(void)arg;
	(void)rq;
	return &none;
}

/* Checks the data it got (the client's pattern, seeded by seq) and
 * sends it back with a note. */
rrt_echo_res *rrtproc_echo_1_svc(rrt_echo_args *a, struct svc_req *rq)
{
	static rrt_echo_res r;
	static char good[] = "data as sent", bad[] = "data damaged";

	(void)rq;
	r.seq = a->seq;
	r.data.data_len = a->data.data_len;
	r.data.data_val = a->data.data_val;     /* freed with the args */
	r.note = rrt_check(a->data.data_val, a->data.data_len, a->seq) ?
		 good : bad;
	return &r;
}

rrt_read_res *rrtproc_read_1_svc(rrt_read_args *a, struct svc_req *rq)
{
	static rrt_read_res r;

	(void)rq;
	free(r.rrt_read_res_u.ok.data.data_val);
	memset(&r, 0, sizeof(r));
	if (a->count > RRT_MAX) {
		r.status = 27;          /* too big: no data arm */
		return &r;
	}
	r.rrt_read_res_u.ok.data.data_val = malloc(a->count ? a->count : 1);
	if (!r.rrt_read_res_u.ok.data.data_val) {
		r.status = 12;
		return &r;
	}
	r.rrt_read_res_u.ok.data.data_len = a->count;
	rrt_fill(r.rrt_read_res_u.ok.data.data_val, a->count,
		 (unsigned)a->offset);
	r.rrt_read_res_u.ok.eof = TRUE;
	return &r;
}

/* Answers reply_len octets of pattern, seeded by the length of what
 * came, after checking what came (or an empty blob when it was
 * damaged). */
rrt_blob *rrtproc_blob_1_svc(rrt_blob *a, struct svc_req *rq)
{
	static rrt_blob r;

	(void)rq;
	free(r.b.b_val);
	memset(&r, 0, sizeof(r));
	if (!rrt_check(a->b.b_val, a->b.b_len, a->reply_len) ||
	    a->reply_len > RRT_MAX)
		return &r;
	r.reply_len = a->b.b_len;
	r.b.b_val = malloc(a->reply_len ? a->reply_len : 1);
	if (!r.b.b_val)
		return &r;
	r.b.b_len = a->reply_len;
	rrt_fill(r.b.b_val, a->reply_len, a->b.b_len);
	return &r;
}

/* What the server got: the credential (RFC 5531 §14: AUTH_SYS's
 * stamp, machine, uid and gid), as libtirpc's authentication decoded
 * it, and the transport the call came on. */
rrt_who *rrtproc_whoami_1_svc(void *arg, struct svc_req *rq)
{
	static rrt_who r;
	static char none[] = "";

	(void)arg;
	memset(&r, 0, sizeof(r));
	r.flavor = (int)rq->rq_cred.oa_flavor;
	r.machine = none;
	r.netid = rq->rq_xprt->xp_netid ? rq->rq_xprt->xp_netid : none;
	if (rq->rq_cred.oa_flavor == AUTH_SYS) {
		struct authunix_parms *p = (void *)rq->rq_clntcred;

		r.uid = p->aup_uid;
		r.gid = p->aup_gid;
		r.machine = p->aup_machname;
	}
	/* svc_getrpccaller must name the peer, on every transport */
	if (!svc_getrpccaller(rq->rq_xprt)->len)
		r.flavor = -1;
	return &r;
}

/* ---- NFSv3's READ, WRITE, SYMLINK, READLINK, on one file in memory ---- */

enum { NFS3ERR_FBIG = 27, NFS3ERR_INVAL = 22 };

static uint8_t *nfs_file;
static size_t nfs_size;
static char *nfs_link;

void *nfsproc3_null_3_svc(void *arg, struct svc_req *rq)
{
	return rrtproc_null_1_svc(arg, rq);
}

WRITE3res *nfsproc3_write_3_svc(WRITE3args *a, struct svc_req *rq)
{
	static WRITE3res r;

	(void)rq;
	memset(&r, 0, sizeof(r));
	if (!nfs_file)
		nfs_file = malloc(RRT_MAX);
	if (!nfs_file || a->offset > RRT_MAX ||
	    a->data.data_len > RRT_MAX - a->offset ||
	    a->count != a->data.data_len) {
		r.status = NFS3ERR_FBIG;
		return &r;
	}
	memcpy(nfs_file + a->offset, a->data.data_val, a->data.data_len);
	if (a->offset + a->data.data_len > nfs_size)
		nfs_size = a->offset + a->data.data_len;
	r.WRITE3res_u.resok.count = a->data.data_len;
	r.WRITE3res_u.resok.committed = FILE_SYNC;
	memcpy(r.WRITE3res_u.resok.verf, "uiwarp!!", 8);
	return &r;
}

READ3res *nfsproc3_read_3_svc(READ3args *a, struct svc_req *rq)
{
	static READ3res r;
	READ3resok *ok = &r.READ3res_u.resok;

	(void)rq;
	memset(&r, 0, sizeof(r));
	if (a->offset > nfs_size) {
		r.status = NFS3ERR_INVAL;
		return &r;
	}
	ok->count = (count3)(nfs_size - a->offset < a->count ?
			     nfs_size - a->offset : a->count);
	ok->eof = a->offset + ok->count == nfs_size;
	ok->data.data_len = ok->count;
	ok->data.data_val = (char *)nfs_file + a->offset;
	return &r;
}

SYMLINK3res *nfsproc3_symlink_3_svc(SYMLINK3args *a, struct svc_req *rq)
{
	static SYMLINK3res r;

	(void)rq;
	memset(&r, 0, sizeof(r));
	free(nfs_link);
	nfs_link = strdup(a->symlink.symlink_data);
	if (!nfs_link)
		r.status = NFS3ERR_INVAL;
	return &r;
}

READLINK3res *nfsproc3_readlink_3_svc(READLINK3args *a, struct svc_req *rq)
{
	static READLINK3res r;
	static char none[] = "";

	(void)a;
	(void)rq;
	memset(&r, 0, sizeof(r));
	r.READLINK3res_u.resok.data = nfs_link ? nfs_link : none;
	return &r;
}

/* ---- NFSv4's COMPOUND (RFC 7530 §16.2, RFC 5661 §16.2) on the same file:
 * the operations in order until one fails ---------------------------- */

#define NFS4_MAX_OPS 32

static uint8_t *nfs4_link;
static u_int nfs4_link_len;
static char nfs4_fh[NFS4_FHSIZE];
static u_int nfs4_fh_len;

void *nfsproc4_null_4_svc(void *arg, struct svc_req *rq)
{
	return rrtproc_null_1_svc(arg, rq);
}

static nfsstat4 op4_sequence(nfs_argop4 *a, nfs_resop4 *r)
{
	SEQUENCE4args *s = &a->nfs_argop4_u.opsequence;
	SEQUENCE4resok *k = &r->nfs_resop4_u.opsequence.SEQUENCE4res_u
				     .sr_resok4;

	memcpy(k->sr_sessionid, s->sa_sessionid, sizeof(k->sr_sessionid));
	k->sr_sequenceid = s->sa_sequenceid;
	k->sr_slotid = s->sa_slotid;
	k->sr_highest_slotid = s->sa_slotid;
	k->sr_target_highest_slotid = 63;
	return NFS4_OK;
}

/* a handle that begins with "bad" is stale */
static nfsstat4 op4_putfh(nfs_argop4 *a, nfs_resop4 *r)
{
	nfs_fh4 *fh = &a->nfs_argop4_u.opputfh.object;

	(void)r;
	if (fh->nfs_fh4_len >= 3 && !memcmp(fh->nfs_fh4_val, "bad", 3))
		return NFS4ERR_BADHANDLE;
	nfs4_fh_len = fh->nfs_fh4_len;
	memcpy(nfs4_fh, fh->nfs_fh4_val, fh->nfs_fh4_len);
	return NFS4_OK;
}

static nfsstat4 op4_getfh(nfs_argop4 *a, nfs_resop4 *r)
{
	(void)a;
	r->nfs_resop4_u.opgetfh.GETFH4res_u.object =
		(nfs_fh4){ nfs4_fh_len, nfs4_fh };
	return NFS4_OK;
}

/* the file's size (FATTR4_SIZE, attribute 4), whatever is asked */
static nfsstat4 op4_getattr(nfs_argop4 *a, nfs_resop4 *r)
{
	static u_int mask[2] = { 1u << 4, 0 };
	static uint8_t size[8];
	fattr4 *f = &r->nfs_resop4_u.opgetattr.GETATTR4res_u.obj_attributes;

	(void)a;
	for (unsigned i = 0; i < 8; i++)
		size[i] = (uint8_t)((uint64_t)nfs_size >> (56 - 8 * i));
	f->attrmask = (bitmap4){ 2, mask };
	f->attr_vals = (attrlist4){ 8, (char *)size };
	return NFS4_OK;
}

/* a stateid of seqid 0xbad is not one */
static nfsstat4 op4_read(nfs_argop4 *a, nfs_resop4 *r)
{
	READ4args *ra = &a->nfs_argop4_u.opread;
	READ4resok *ok = &r->nfs_resop4_u.opread.READ4res_u.resok4;
	size_t n;

	if (ra->stateid.seqid == 0xbad)
		return NFS4ERR_BAD_STATEID;
	if (ra->offset > nfs_size)
		return NFS4ERR_INVAL;
	n = nfs_size - ra->offset < ra->count ? nfs_size - ra->offset :
						ra->count;
	ok->eof = ra->offset + n == nfs_size;
	ok->data.data_len = (u_int)n;
	ok->data.data_val = (char *)nfs_file + ra->offset;
	return NFS4_OK;
}

static nfsstat4 op4_write(nfs_argop4 *a, nfs_resop4 *r)
{
	WRITE4args *w = &a->nfs_argop4_u.opwrite;
	WRITE4resok *ok = &r->nfs_resop4_u.opwrite.WRITE4res_u.resok4;

	if (!nfs_file)
		nfs_file = malloc(RRT_MAX);
	if (!nfs_file || w->offset > RRT_MAX ||
	    w->data.data_len > RRT_MAX - w->offset)
		return NFS4ERR_INVAL;
	memcpy(nfs_file + w->offset, w->data.data_val, w->data.data_len);
	if (w->offset + w->data.data_len > nfs_size)
		nfs_size = w->offset + w->data.data_len;
	ok->count = w->data.data_len;
	ok->committed = FILE_SYNC4;
	memcpy(ok->writeverf, "uiwarp!!", 8);
	return NFS4_OK;
}

/* NF4LNK alone: the link, any octets */
static nfsstat4 op4_create(nfs_argop4 *a, nfs_resop4 *r)
{
	createtype4 *t = &a->nfs_argop4_u.opcreate.objtype;
	linktext4 *l = &t->createtype4_u.linkdata;

	(void)r;
	if (t->type != NF4LNK)
		return NFS4ERR_NOTSUPP;
	free(nfs4_link);
	nfs4_link = malloc(l->linktext4_len ? l->linktext4_len : 1);
	if (!nfs4_link)
		return NFS4ERR_IO;
	memcpy(nfs4_link, l->linktext4_val, l->linktext4_len);
	nfs4_link_len = l->linktext4_len;
	return NFS4_OK;
}

static nfsstat4 op4_readlink(nfs_argop4 *a, nfs_resop4 *r)
{
	(void)a;
	r->nfs_resop4_u.opreadlink.READLINK4res_u.link =
		(linktext4){ nfs4_link_len, (char *)nfs4_link };
	return NFS4_OK;
}

/* no minor version's: its blob back */
static nfsstat4 op4_private(nfs_argop4 *a, nfs_resop4 *r)
{
	r->nfs_resop4_u.opprivate.blob.blob_len =
		a->nfs_argop4_u.opprivate.blob.blob_len;
	r->nfs_resop4_u.opprivate.blob.blob_val =
		a->nfs_argop4_u.opprivate.blob.blob_val;
	return NFS4_OK;
}

/* One row per operation this server carries out; the status each
 * result begins with is where its union keeps it. */
static const struct {
	nfs_opnum4 op;
	nfsstat4 (*run)(nfs_argop4 *a, nfs_resop4 *r);
} nfs4_ops[] = {
	{ OP_SEQUENCE, op4_sequence },
	{ OP_PUTFH, op4_putfh },
	{ OP_GETFH, op4_getfh },
	{ OP_GETATTR, op4_getattr },
	{ OP_READ, op4_read },
	{ OP_WRITE, op4_write },
	{ OP_CREATE, op4_create },
	{ OP_READLINK, op4_readlink },
	{ OP_PRIVATE, op4_private },
};

COMPOUND4res *nfsproc4_compound_4_svc(COMPOUND4args *a, struct svc_req *rq)
{
	static nfs_resop4 res[NFS4_MAX_OPS];
	static COMPOUND4res cr;
	u_int n = a->argarray.argarray_len;

	(void)rq;
	memset(&cr, 0, sizeof(cr));
	memset(res, 0, sizeof(res));
	cr.tag = a->tag;
	cr.resarray.resarray_val = res;
	if (n > NFS4_MAX_OPS) {
		cr.status = NFS4ERR_INVAL;
		return &cr;
	}
	for (u_int i = 0; i < n; i++) {
		nfs_argop4 *op = &a->argarray.argarray_val[i];
		nfsstat4 st = NFS4ERR_NOTSUPP;

		for (size_t k = 0; k < sizeof(nfs4_ops) / sizeof(nfs4_ops[0]);
		     k++)
			if (nfs4_ops[k].op == op->argop)
				st = nfs4_ops[k].run(op, &res[i]);
		res[i].resop = op->argop;
		/* every result of nfs4sub.x begins with its status */
		*(nfsstat4 *)&res[i].nfs_resop4_u = st;
		cr.resarray.resarray_len = i + 1;
		if (st != NFS4_OK) {
			cr.status = st;
			break;
		}
	}
	return &cr;
}

/* No result, so rpcgen's skeleton sends no reply. */
void *rrtproc_drop_1_svc(void *arg, struct svc_req *rq)
{
	(void)arg;
	(void)rq;
	return NULL;
}

/* ---- leaving svc_run on a signal --------------------------------------- */

static int exit_pipe[2];

static void on_signal(int sig)
{
	char c = (char)sig;
	int e = errno;

	(void)!write(exit_pipe[1], &c, 1);
	errno = e;
}

static bool_t exit_recv(SVCXPRT *x, struct rpc_msg *m)
{
	char c;

	(void)m;
	(void)!read(x->xp_fd, &c, 1);
	svc_exit();
	return FALSE;
}

static enum xprt_stat exit_stat(SVCXPRT *x)
{
	(void)x;
	return XPRT_IDLE;
}

static bool_t exit_none(SVCXPRT *x, xdrproc_t p, void *w)
{
	(void)x;
	(void)p;
	(void)w;
	return FALSE;
}

static bool_t exit_reply(SVCXPRT *x, struct rpc_msg *m)
{
	(void)x;
	(void)m;
	return FALSE;
}

static void exit_destroy(SVCXPRT *x)
{
	xprt_unregister(x);
}

static const struct xp_ops exit_ops = {
	.xp_recv = exit_recv,
	.xp_stat = exit_stat,
	.xp_getargs = exit_none,
	.xp_reply = exit_reply,
	.xp_freeargs = exit_none,
	.xp_destroy = exit_destroy,
};

/* ---- the transports ---------------------------------------------------- */

/* A TCP or UDP SVCXPRT on 127.0.0.1, any port; svc_reg without a
 * netconfig, so that no rpcbind is asked (svc_tp_create would). */
static SVCXPRT *ip_xprt(const char *netid, unsigned short *port)
{
	struct netconfig *nc = getnetconfigent(netid);
	struct sockaddr_in sin = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sin);
	struct t_bind tb = { .addr = { sizeof(sin), sizeof(sin), &sin } };
	SVCXPRT *x;

	if (!nc)
		return NULL;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	x = svc_tli_create(RPC_ANYFD, nc, &tb, 0, 0);
	freenetconfigent(nc);
	if (!x || !svc_reg(x, RRT_PROG, RRT_V1, rrt_prog_1, NULL) ||
	    getsockname(x->xp_fd, (struct sockaddr *)&sin, &sl))
		return NULL;
	*port = ntohs(sin.sin_port);
	return x;
}

/* An RPC-over-RDMA SVCXPRT on addr, any port, with the program. */
static SVCXPRT *rdma_xprt(const char *addr, const struct uiw_rpcrdma_opts *o,
			  const char *netid, char port[8])
{
	SVCXPRT *x = uiw_rpcrdma_svc_create(addr, "0", o);

	if (!x) {
		fprintf(stderr, "tirpc_server: uiw_rpcrdma_svc_create(%s): %s\n",
			addr, strerror(errno));
		return NULL;
	}
	if (!svc_reg(x, RRT_PROG, RRT_V1, rrt_prog_1, NULL) ||
	    !svc_reg(x, NFS_PROGRAM, NFS_V3, nfs_program_3, NULL) ||
	    !svc_reg(x, NFS4_PROGRAM, NFS_V4, nfs4_program_4, NULL) ||
	    strcmp(x->xp_netid, netid) || !x->xp_ltaddr.len) {
		fprintf(stderr, "tirpc_server: %s: svc_reg failed or netid "
			"%s\n", addr, x->xp_netid);
		return NULL;
	}
	snprintf(port, 8, "%u", x->xp_port);
	return x;
}

int main(void)
{
	static SVCXPRT_EXT exit_ext;
	static SVCXPRT exit_x;
	struct uiw_rpcrdma_opts o;
	struct sigaction sa = { .sa_handler = on_signal };
	struct rrt_ready ready;
	struct rrt_done done;
	SVCXPRT *rdma, *rdma6, *tcp, *udp;

	memset(&ready, 0, sizeof(ready));
	memset(&done, 0, sizeof(done));
	if (pipe(exit_pipe))
		return 2;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	exit_x.xp_fd = exit_pipe[0];
	exit_x.xp_ops = (struct xp_ops *)&exit_ops;
	exit_x.xp_p3 = &exit_ext;
	xprt_register(&exit_x);

	uiw_rpcrdma_opts_init(&o, true);
	o.ulb = rrt_ulb_with_nfs();
	rdma = rdma_xprt("127.0.0.1", &o, "rdma", ready.rdma_port);
	rdma6 = rdma_xprt("::1", &o, "rdma6", ready.rdma6_port);
	if (!rdma || !rdma6)
		return 2;
	tcp = ip_xprt("tcp", &ready.tcp_port);
	udp = ip_xprt("udp", &ready.udp_port);
	if (!tcp || !udp) {
		fprintf(stderr, "tirpc_server: no TCP or UDP transport\n");
		return 2;
	}
	if (write(3, &ready, sizeof(ready)) != sizeof(ready))
		return 2;
	svc_run();
	/* the counts of both listeners */
	done.stats_ok = uiw_rpcrdma_svc_stats(rdma, &done.stats);
	if (done.stats_ok) {
		struct uiw_rpcrdma_stats s6;

		done.stats_ok = uiw_rpcrdma_svc_stats(rdma6, &s6);
		done.stats.calls += s6.calls;
		done.stats.replies += s6.replies;
	}
	if (write(3, &done, sizeof(done)) != sizeof(done))
		return 2;
	return 0;
}
