/*
 * A libtirpc CLIENT over RPC-over-RDMA version 1 (RFC 8166): rpcgen's
 * stubs call it through clnt_call as they call clnt_vc.  Each call
 * encodes its message with the splitting encoder (rr_xdr.h), offers
 * the Write chunks the Upper-Layer Binding asks for, and decodes the
 * reply with the splicing decoder.  Any number of threads may call at
 * once (the transport allows it): each call has a context of its own,
 * taken from a free list and kept with its buffers for the next.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include "rr_tirpc.h"
#include "rr_ulb.h"
#include "rr_xdr.h"

struct rr_cctx {
	struct rr_cctx *next;
	struct uiw_rr_xenc enc;
	void *wbuf[UIW_RR_MAX_WCHUNK];  /* Write chunk targets, kept */
	size_t wcap[UIW_RR_MAX_WCHUNK];
};

struct rr_clnt {
	struct uiw_rr_clnt *xp;
	const struct uiw_rpcrdma_ulb *ulb;
	pthread_mutex_t mu;             /* what follows */
	rpcprog_t prog;
	rpcvers_t vers;
	uint32_t xid;                   /* the next call's */
	uint32_t last_xid;
	struct timeval wait;            /* CLSET_TIMEOUT */
	bool wait_set;
	struct rpc_err err;             /* the last call's, any thread */
	struct rr_cctx *free;
	struct sockaddr_storage addr;
	struct netbuf nb;
};

/* The last error of this thread's last call, so that clnt_perror
 * after clnt_call says what happened to that call even while other
 * threads call on the same CLIENT. */
static __thread struct {
	CLIENT *cl;
	struct rpc_err err;
} rr_tls_err;

static const struct clnt_ops rr_clnt_ops;

static void set_err(CLIENT *cl, struct rr_clnt *c, const struct rpc_err *e)
{
	pthread_mutex_lock(&c->mu);
	c->err = *e;
	pthread_mutex_unlock(&c->mu);
	rr_tls_err.cl = cl;
	rr_tls_err.err = *e;
}

static struct rr_cctx *cctx_get(struct rr_clnt *c)
{
	struct rr_cctx *x;

	pthread_mutex_lock(&c->mu);
	x = c->free;
	if (x)
		c->free = x->next;
	pthread_mutex_unlock(&c->mu);
	if (!x) {
		x = calloc(1, sizeof(*x));
		if (x)
			uiw_rr_xenc_init(&x->enc);
	}
	return x;
}

static void cctx_put(struct rr_clnt *c, struct rr_cctx *x)
{
	pthread_mutex_lock(&c->mu);
	x->next = c->free;
	c->free = x;
	pthread_mutex_unlock(&c->mu);
}

static void cctx_free(struct rr_cctx *x)
{
	for (unsigned i = 0; i < UIW_RR_MAX_WCHUNK; i++)
		free(x->wbuf[i]);
	uiw_rr_xenc_fini(&x->enc);
	free(x);
}

/* The sizes of the Write chunks for the results (RFC 8166 §3.4.6):
 * from the walk of the arguments, which also reduces their items (the
 * rules of a COMPOUND), or from the rules by ordinal. */
static int wchunk_sizes(struct rr_cctx *x, const struct uiw_rr_sel *args,
			const struct uiw_rpcrdma_ddp_rule *aw,
			const struct uiw_rpcrdma_ddp_rule *rw,
			size_t len[UIW_RR_MAX_WCHUNK], unsigned *n)
{
	struct uiw_rr_sel rs = *args;
	uint8_t *copy = NULL;
	size_t copy_len = 0;

	if (aw || rw)
		return uiw_rr_xenc_walk_call(&x->enc, aw, rw, len, n);
	rs.dir = UIW_RPCRDMA_RESULTS;
	if (uiw_rr_ulb_wants_args(&rs) &&
	    uiw_rr_xenc_body_copy(&x->enc, &copy, &copy_len))
		return -1;
	*n = uiw_rr_ulb_wchunks(&rs, copy, copy_len, len);
	free(copy);
	return 0;
}

/* The Write chunks, in buffers the context keeps (an empty one has
 * none); their registration is the transport's. */
static bool offer_wchunks(struct rr_cctx *x, const size_t *len,
			  struct uiw_rr_call *call)
{
	for (unsigned i = 0; i < call->nwt; i++) {
		if (len[i] > x->wcap[i]) {
			void *nb = malloc(len[i]);

			if (!nb)
				return false;
			free(x->wbuf[i]);
			x->wbuf[i] = nb;
			x->wcap[i] = len[i];
		}
		call->wt[i] = (struct uiw_rr_wtarget){ x->wbuf[i], len[i] };
	}
	return true;
}

/* The transport's outcome as libtirpc's, for clnt_perror. */
static const struct {
	enum clnt_stat stat;
	int err;
} rr_status_map[] = {
	[UIW_RR_OK] = { RPC_SUCCESS, 0 },
	[UIW_RR_TIMEDOUT] = { RPC_TIMEDOUT, 0 },
	/* the call may or may not have gone out: as clnt_vc when its
	 * connection breaks while it waits */
	[UIW_RR_DISCONNECTED] = { RPC_CANTRECV, ECONNRESET },
	/* RDMA_ERROR ERR_VERS (RFC 8166 §4.5): the versions of the
	 * transport, not of RPC; re_vers says which it speaks */
	[UIW_RR_ERR_VERS] = { RPC_VERSMISMATCH, 0 },
	/* RDMA_ERROR ERR_CHUNK: the Responder could not convey the call
	 * or its reply in the chunks offered */
	[UIW_RR_ERR_CHUNK] = { RPC_CANTSEND, EMSGSIZE },
	[UIW_RR_BAD_REPLY] = { RPC_CANTRECV, EPROTO },
	[UIW_RR_TOO_BIG] = { RPC_CANTSEND, EMSGSIZE },
	[UIW_RR_NOMEM] = { RPC_SYSTEMERROR, ENOMEM },
};

static void map_status(const struct uiw_rr_call *call, struct rpc_err *e)
{
	unsigned s = call->status;

	memset(e, 0, sizeof(*e));
	if (s >= sizeof(rr_status_map) / sizeof(rr_status_map[0])) {
		e->re_status = RPC_FAILED;
		return;
	}
	e->re_status = rr_status_map[s].stat;
	e->re_errno = rr_status_map[s].err;
	if (s == UIW_RR_ERR_VERS) {
		e->re_vers.low = call->vers_low;
		e->re_vers.high = call->vers_high;
	}
}

static unsigned timeout_ms(struct timeval tv)
{
	uint64_t ms;

	if (tv.tv_sec < 0 || tv.tv_usec < 0)
		return 1;
	ms = (uint64_t)tv.tv_sec * 1000 + (uint64_t)tv.tv_usec / 1000;
	/* 0 would be the connection's default: a zero timeout asks for
	 * no wait at all (clnt_vc sends and gives RPC_TIMEDOUT) */
	if (ms == 0)
		return 1;
	return ms > UINT_MAX ? UINT_MAX : (unsigned)ms;
}

static bool encode_call(CLIENT *cl, XDR *x, uint32_t xid, rpcprog_t prog,
			rpcvers_t vers, rpcproc_t proc, struct uiw_rr_body *b)
{
	struct rpc_msg m = {
		.rm_xid = xid,
		.rm_direction = CALL,
	};

	m.rm_call.cb_rpcvers = RPC_MSG_VERSION;
	m.rm_call.cb_prog = prog;
	m.rm_call.cb_vers = vers;
	/* RFC 5531 §9: the call header, the procedure, the credential and
	 * verifier, then the arguments, as clnt_vc writes them */
	return xdr_callhdr(x, &m) && xdr_u_int32_t(x, &proc) &&
	       AUTH_MARSHALL(cl->cl_auth, x) &&
	       AUTH_WRAP(cl->cl_auth, x, UIW_RR_XDR_BODY, (caddr_t)b);
}

/* Decodes the reply; true when the credential was refreshed after an
 * AUTH error and the call may go again (RFC 5531 §9, as clnt_vc does,
 * *refreshes times at most). */
static bool decode_reply(CLIENT *cl, struct uiw_rr_call *call,
			 const struct uiw_rr_sel *sel, uint32_t xid,
			 struct uiw_rr_body *res, struct rpc_err *e,
			 int *refreshes)
{
	bool again = false;
	struct uiw_rr_sel rs = *sel;
	struct rpc_msg reply;
	struct uiw_rr_xdec d;
	XDR *x;

	rs.dir = UIW_RPCRDMA_RESULTS;
	x = uiw_rr_xdec_init(&d, call->reply, call->reply_len, &rs, call->wt,
			     call->wlen, call->nwt);
	memset(&reply, 0, sizeof(reply));
	reply.acpted_rply.ar_verf = _null_auth;
	reply.acpted_rply.ar_results.where = NULL;
	reply.acpted_rply.ar_results.proc = UIW_RR_XDR_NONE;
	memset(e, 0, sizeof(*e));
	if (!xdr_replymsg(x, &reply) || reply.rm_xid != xid) {
		e->re_status = RPC_CANTDECODERES;
		return false;
	}
	_seterr_reply(&reply, e);
	if (e->re_status == RPC_SUCCESS) {
		if (!AUTH_VALIDATE(cl->cl_auth, &reply.acpted_rply.ar_verf)) {
			e->re_status = RPC_AUTHERROR;
			e->re_why = AUTH_INVALIDRESP;
		} else if (!AUTH_UNWRAP(cl->cl_auth, x, UIW_RR_XDR_BODY,
					(caddr_t)res) ||
			   !uiw_rr_xdec_done(&d)) {
			e->re_status = RPC_CANTDECODERES;
		}
	} else if (e->re_status == RPC_AUTHERROR && *refreshes > 0) {
		--*refreshes;
		again = AUTH_REFRESH(cl->cl_auth, &reply);
	}
	if (reply.acpted_rply.ar_verf.oa_base) {
		XDR fx = { .x_op = XDR_FREE };

		xdr_opaque_auth(&fx, &reply.acpted_rply.ar_verf);
	}
	return again;
}

static enum clnt_stat rr_call(CLIENT *cl, rpcproc_t proc, xdrproc_t xargs,
			      void *argsp, xdrproc_t xres, void *resp,
			      struct timeval timeout)
{
	struct rr_clnt *c = cl->cl_private;
	struct uiw_rr_body args = { xargs, argsp }, res = { xres, resp };
	struct rpc_err e = { .re_status = RPC_SUCCESS };
	int refreshes = 2;      /* clnt_vc's */
	struct rr_cctx *x;
	struct uiw_rr_sel sel;
	const struct uiw_rpcrdma_ddp_rule *aw, *rw;
	uint32_t xid;

	x = cctx_get(c);
	if (!x) {
		e.re_status = RPC_SYSTEMERROR;
		e.re_errno = ENOMEM;
		goto out;
	}
	pthread_mutex_lock(&c->mu);
	sel = (struct uiw_rr_sel){ c->ulb, c->prog, c->vers, proc,
				   UIW_RPCRDMA_ARGS };
	if (c->wait_set)
		timeout = c->wait;
	pthread_mutex_unlock(&c->mu);
	/* a procedure whose items a walk finds (RFC 8267 §6: COMPOUND) */
	aw = uiw_rr_ulb_walker(&sel, UIW_RPCRDMA_ARGS);
	rw = uiw_rr_ulb_walker(&sel, UIW_RPCRDMA_RESULTS);
again:
	pthread_mutex_lock(&c->mu);
	xid = c->xid++;
	c->last_xid = xid;
	pthread_mutex_unlock(&c->mu);
	{
		struct uiw_rr_call call = { 0 };
		size_t wlen[UIW_RR_MAX_WCHUNK];
		XDR *xs = aw || rw ? uiw_rr_xenc_begin_walk(&x->enc, &sel) :
			  uiw_rr_xenc_begin(&x->enc, &sel, UINT_MAX);
		bool refresh;

		if (!encode_call(cl, xs, xid, sel.prog, sel.vers, proc,
				 &args)) {
			e.re_status = RPC_CANTENCODEARGS;
			goto out;
		}
		if (wchunk_sizes(x, &sel, aw, rw, wlen, &call.nwt))
			call.iov = NULL;
		else
			call.iov = uiw_rr_xenc_finish(&x->enc, &call.niov);
		if (!call.iov || !offer_wchunks(x, wlen, &call)) {
			e.re_status = RPC_SYSTEMERROR;
			e.re_errno = ENOMEM;
			goto out;
		}
		call.reply_max = uiw_rr_ulb_reply_max(&sel);
		call.timeout_ms = timeout_ms(timeout);
		if (uiw_rr_call(c->xp, &call)) {
			map_status(&call, &e);
			uiw_rr_call_done(c->xp, &call);
			goto out;
		}
		refresh = decode_reply(cl, &call, &sel, xid, &res, &e,
				       &refreshes);
		uiw_rr_call_done(c->xp, &call);
		if (refresh)
			goto again;
	}
out:
	if (x)
		cctx_put(c, x);
	set_err(cl, c, &e);
	return e.re_status;
}

static void rr_abort(CLIENT *cl)
{
	(void)cl;
}

static void rr_geterr(CLIENT *cl, struct rpc_err *e)
{
	struct rr_clnt *c = cl->cl_private;

	if (rr_tls_err.cl == cl) {
		*e = rr_tls_err.err;
		return;
	}
	pthread_mutex_lock(&c->mu);
	*e = c->err;
	pthread_mutex_unlock(&c->mu);
}

static bool_t rr_freeres(CLIENT *cl, xdrproc_t xres, void *resp)
{
	XDR x = { .x_op = XDR_FREE };

	(void)cl;
	return xres(&x, resp);
}

static void rr_destroy(CLIENT *cl)
{
	struct rr_clnt *c = cl->cl_private;

	uiw_rr_clnt_close(c->xp);
	while (c->free) {
		struct rr_cctx *x = c->free;

		c->free = x->next;
		cctx_free(x);
	}
	if (rr_tls_err.cl == cl)
		rr_tls_err.cl = NULL;
	pthread_mutex_destroy(&c->mu);
	free(cl->cl_netid);
	free(c);
	free(cl);
}

static bool tv_ok(const struct timeval *tv)
{
	return tv->tv_sec >= 0 && tv->tv_usec >= 0 && tv->tv_usec < 1000000;
}

/* The requests clnt_vc answers, where they mean something here. */
static bool_t rr_control(CLIENT *cl, u_int req, void *info)
{
	struct rr_clnt *c = cl->cl_private;
	bool_t ok = TRUE;

	if (!info && req != CLSET_FD_CLOSE && req != CLSET_FD_NCLOSE)
		return FALSE;
	pthread_mutex_lock(&c->mu);
	switch (req) {
	case CLSET_FD_CLOSE:
	case CLSET_FD_NCLOSE:
		break;          /* no descriptor of the caller's */
	case CLSET_TIMEOUT:
		if (!tv_ok(info)) {
			ok = FALSE;
			break;
		}
		c->wait = *(struct timeval *)info;
		c->wait_set = true;
		break;
	case CLGET_TIMEOUT:
		*(struct timeval *)info = c->wait;
		break;
	case CLGET_SERVER_ADDR:
		memcpy(info, c->nb.buf, c->nb.len);
		break;
	case CLGET_SVC_ADDR:
		*(struct netbuf *)info = c->nb;
		break;
	case CLGET_XID:
		*(uint32_t *)info = c->last_xid;
		break;
	case CLSET_XID:
		c->xid = *(uint32_t *)info;
		break;
	case CLGET_VERS:
		*(uint32_t *)info = (uint32_t)c->vers;
		break;
	case CLSET_VERS:
		c->vers = *(uint32_t *)info;
		break;
	case CLGET_PROG:
		*(uint32_t *)info = (uint32_t)c->prog;
		break;
	case CLSET_PROG:
		c->prog = *(uint32_t *)info;
		break;
	default:
		/* CLGET_FD among them: the connection has no socket */
		ok = FALSE;
		break;
	}
	pthread_mutex_unlock(&c->mu);
	return ok;
}

static const struct clnt_ops rr_clnt_ops = {
	.cl_call = rr_call,
	.cl_abort = rr_abort,
	.cl_geterr = rr_geterr,
	.cl_freeres = rr_freeres,
	.cl_destroy = rr_destroy,
	.cl_control = rr_control,
};

static void create_err(enum clnt_stat stat, int err)
{
	rpc_createerr.cf_stat = stat;
	rpc_createerr.cf_error.re_errno = err;
}

static struct uiw_rr_clnt *connect_any(const char *host, const char *port,
				       const struct uiw_rpcrdma_opts *opts,
				       struct sockaddr_storage *ss)
{
	struct uiw_rr_opts ro;
	struct addrinfo *ai, *a;
	struct uiw_rr_clnt *xp = NULL;
	char why[128];
	int err = ECONNREFUSED;

	if (!host) {
		create_err(RPC_UNKNOWNHOST, EINVAL);
		return NULL;
	}
	if (uiw_rr_resolve(host, port, false, &ai)) {
		create_err(RPC_UNKNOWNHOST, 0);
		return NULL;
	}
	uiw_rr_opts_from(&ro, opts, false);
	for (a = ai; a && !xp; a = a->ai_next) {
		xp = uiw_rr_clnt_connect(a->ai_addr, a->ai_addrlen, &ro, why,
					 sizeof(why));
		if (xp)
			memcpy(ss, a->ai_addr, a->ai_addrlen);
		else
			err = errno;
	}
	freeaddrinfo(ai);
	/* as clnt_create after a refused connect: "Remote system error"
	 * with the errno */
	if (!xp)
		create_err(RPC_SYSTEMERROR, err);
	return xp;
}

CLIENT *uiw_rpcrdma_clnt_create(const char *host, const char *port,
				rpcprog_t prog, rpcvers_t vers,
				const struct uiw_rpcrdma_opts *opts)
{
	CLIENT *cl = calloc(1, sizeof(*cl));
	struct rr_clnt *c = calloc(1, sizeof(*c));
	struct timeval now;

	if (!cl || !c) {
		create_err(RPC_SYSTEMERROR, ENOMEM);
		goto fail;
	}
	c->xp = connect_any(host, port, opts, &c->addr);
	if (!c->xp)
		goto fail;
	cl->cl_netid = strdup(uiw_rr_netid((struct sockaddr *)&c->addr));
	cl->cl_auth = authnone_create();
	if (!cl->cl_netid || !cl->cl_auth) {
		uiw_rr_clnt_close(c->xp);
		create_err(RPC_SYSTEMERROR, ENOMEM);
		goto fail;
	}
	pthread_mutex_init(&c->mu, NULL);
	c->ulb = opts ? opts->ulb : NULL;
	c->prog = prog;
	c->vers = vers;
	/* clnt_vc's first xid: time and pid, so that a restarted client
	 * does not reuse its predecessor's */
	gettimeofday(&now, NULL);
	c->xid = (uint32_t)getpid() ^ (uint32_t)now.tv_sec ^
		 (uint32_t)now.tv_usec;
	c->nb.buf = &c->addr;
	c->nb.len = c->nb.maxlen = uiw_rr_sa_len(&c->addr);
	cl->cl_ops = (struct clnt_ops *)&rr_clnt_ops;
	cl->cl_private = c;
	return cl;
fail:
	if (cl)
		free(cl->cl_netid);
	free(c);
	free(cl);
	return NULL;
}

bool uiw_rpcrdma_clnt_stats(CLIENT *cl, struct uiw_rpcrdma_stats *s)
{
	struct rr_clnt *c;
	struct uiw_rr_stats st;

	if (!cl || !s || cl->cl_ops != &rr_clnt_ops)
		return false;
	c = cl->cl_private;
	uiw_rr_clnt_stats(c->xp, &st);
	memset(s, 0, sizeof(*s));
	uiw_rr_stats_add(s, &st);
	return true;
}
