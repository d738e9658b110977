/*
 * libtirpc SVCXPRTs over RPC-over-RDMA version 1 (RFC 8166): a
 * listening one, whose descriptor is the transport listener's, and one
 * per connection, each registered with xprt_register so that svc_run
 * polls them beside TCP and UDP transports.  A connection receives
 * calls whole from the transport (Read chunks already pulled), decodes
 * them with xdrmem, and replies through the splitting encoder, whose
 * reduced results go into the Write chunks the call offered.
 *
 * libtirpc keeps its per-transport authentication state behind xp_p3
 * (SVCXPRT_EXT, <rpc/svc_mt.h>) and writes it in _authenticate: each
 * SVCXPRT here has one of its own, zeroed.
 */
#include <errno.h>
#include <limits.h>
#include <netconfig.h>
#include <pthread.h>
#include <rpc/rpc.h>
#include <rpc/svc_auth.h>
#include <rpc/svc_mt.h>
#include <stdlib.h>
#include <string.h>

#include "rr_conn.h"
#include "rr_share.h"
#include "rr_tirpc.h"
#include "rr_ulb.h"
#include "rr_xdr.h"

struct rr_sconn;

/* What a listener and its connections share: the binding, and the
 * counts of connections gone (uiw_rpcrdma_svc_stats). */
struct rr_hub {
	pthread_mutex_t mu;
	unsigned refs;
	const struct uiw_rpcrdma_ulb *ulb;
	struct uiw_rpcrdma_stats past;
	struct rr_sconn *live;
};

/* What both kinds of SVCXPRT carry. */
struct rr_xprt {
	SVCXPRT xprt;
	SVCXPRT_EXT ext;
	struct rr_hub *hub;
	struct sockaddr_storage la, ra;
};

struct rr_listener {
	struct rr_xprt x;
	struct uiw_rr_listener *l;
};

struct rr_sconn {
	struct rr_xprt x;
	struct uiw_rr_sconn *s;
	struct rr_sconn *next, **pprev;     /* the hub's live list */
	struct uiw_rr_req *cur;     /* received, not answered yet */
	struct uiw_rr_req *ahead;   /* received by xp_stat, next for xp_recv */
	bool ended;
	XDR args;                   /* cur's call, after its header */
	struct uiw_rr_sel sel;      /* cur's procedure */
	struct uiw_rr_xenc enc;
};

static void hub_put(struct rr_hub *h)
{
	bool last;

	pthread_mutex_lock(&h->mu);
	last = --h->refs == 0;
	pthread_mutex_unlock(&h->mu);
	if (last) {
		pthread_mutex_destroy(&h->mu);
		free(h);
	}
}

/* The SVCXPRT's fields as svc_vc fills them: the descriptor poll
 * watches, the netid svc_reg files the programs under (so that it
 * asks no rpcbind through the descriptor), the addresses
 * svc_getrpccaller and svc_getcaller give. */
static void xprt_fill(struct rr_xprt *x, int fd, const struct xp_ops *ops,
		      const struct xp_ops2 *ops2, void *priv)
{
	SVCXPRT *xp = &x->xprt;

	xp->xp_fd = fd;
	xp->xp_ops = (struct xp_ops *)ops;
	xp->xp_ops2 = (struct xp_ops2 *)ops2;
	xp->xp_p1 = priv;
	xp->xp_p3 = &x->ext;
	xp->xp_netid = (char *)uiw_rr_netid((struct sockaddr *)&x->la);
	xp->xp_type = NC_TPI_COTS_ORD;
	xp->xp_ltaddr = (struct netbuf){ uiw_rr_sa_len(&x->la), uiw_rr_sa_len(&x->la),
					 &x->la };
	if (x->ra.ss_family) {
		xp->xp_rtaddr = (struct netbuf){ uiw_rr_sa_len(&x->ra),
						 uiw_rr_sa_len(&x->ra), &x->ra };
		xp->xp_addrlen = (int)uiw_rr_sa_len(&x->ra);
		memcpy(&xp->xp_raddr, &x->ra, uiw_rr_sa_len(&x->ra));
	}
}

static bool_t rr_control(SVCXPRT *xprt, const u_int rq, void *in)
{
	SVCXPRT_EXT *ext = xprt->xp_p3;

	switch (rq) {
	case SVCGET_VERSQUIET:
		*(int *)in = ext->flags & SVC_VERSQUIET;
		return TRUE;
	case SVCSET_VERSQUIET:
		if (*(int *)in)
			ext->flags |= SVC_VERSQUIET;
		else
			ext->flags &= ~SVC_VERSQUIET;
		return TRUE;
	default:
		return FALSE;
	}
}

static const struct xp_ops2 rr_ops2 = { .xp_control = rr_control };

/* ---- a connection ------------------------------------------------------ */

static void drop_cur(struct rr_sconn *c)
{
	/* no reply (a dispatch that gave none): its credit goes back */
	if (c->cur) {
		uiw_rr_drop(c->s, c->cur);
		c->cur = NULL;
	}
}

static int next_req(struct rr_sconn *c, struct uiw_rr_req **req)
{
	int rc;

	if (c->ahead) {
		*req = c->ahead;
		c->ahead = NULL;
		return 0;
	}
	if (c->ended)
		return -ENOTCONN;
	rc = uiw_rr_recv(c->s, req);
	if (rc == -ENOTCONN)
		c->ended = true;
	return rc;
}

static bool_t sc_recv(SVCXPRT *xprt, struct rpc_msg *msg)
{
	struct rr_sconn *c = xprt->xp_p1;
	struct uiw_rr_req *req;

	drop_cur(c);
	while (next_req(c, &req) == 0) {
		xdrmem_create(&c->args, (char *)(uintptr_t)req->call,
			      (u_int)req->call_len, XDR_DECODE);
		/* a call that is no RPC call gets no reply (RFC 5531 §9
		 * has none for it), as svc_vc drops it */
		if (!xdr_callmsg(&c->args, msg) ||
		    msg->rm_direction != CALL) {
			uiw_rr_drop(c->s, req);
			continue;
		}
		c->cur = req;
		c->sel = (struct uiw_rr_sel){ c->x.hub->ulb,
					      msg->rm_call.cb_prog,
					      msg->rm_call.cb_vers,
					      msg->rm_call.cb_proc,
					      UIW_RPCRDMA_RESULTS };
		return TRUE;
	}
	return FALSE;
}

static enum xprt_stat sc_stat(SVCXPRT *xprt)
{
	struct rr_sconn *c = xprt->xp_p1;
	int rc;

	drop_cur(c);
	if (c->ahead)
		return XPRT_MOREREQS;
	if (c->ended)
		return XPRT_DIED;
	rc = uiw_rr_recv(c->s, &c->ahead);
	if (rc == 0)
		return XPRT_MOREREQS;
	if (rc == -ENOTCONN) {
		c->ended = true;
		return XPRT_DIED;
	}
	return XPRT_IDLE;
}

/* SVCAUTH_WRAP/UNWRAP as svc_vc does them (the identity for AUTH_NONE
 * and AUTH_SYS); before _authenticate has chosen, the proc itself. */
static bool_t svcauth_apply(SVCXPRT *xprt, XDR *x, xdrproc_t proc, void *where,
			bool unwrap)
{
	SVCAUTH *a = &SVC_XP_AUTH(xprt);

	if (!a->svc_ah_ops)
		return proc(x, where);
	if (unwrap)
		return SVCAUTH_UNWRAP(a, x, proc, where);
	return SVCAUTH_WRAP(a, x, proc, where);
}

static bool_t sc_getargs(SVCXPRT *xprt, xdrproc_t proc, void *where)
{
	struct rr_sconn *c = xprt->xp_p1;

	if (!c->cur)
		return FALSE;
	return svcauth_apply(xprt, &c->args, proc, where, true);
}

static bool_t sc_freeargs(SVCXPRT *xprt, xdrproc_t proc, void *where)
{
	XDR x = { .x_op = XDR_FREE };

	(void)xprt;
	return proc(&x, where);
}

static bool_t sc_reply(SVCXPRT *xprt, struct rpc_msg *msg)
{
	struct rr_sconn *c = xprt->xp_p1;
	struct uiw_rr_req *req = c->cur;
	struct uiw_rr_body res = { msg->acpted_rply.ar_results.proc,
				   msg->acpted_rply.ar_results.where };
	bool results = msg->rm_reply.rp_stat == MSG_ACCEPTED &&
		       msg->acpted_rply.ar_stat == SUCCESS;
	const struct uiw_rpcrdma_ddp_rule *rw = NULL;
	const struct uiw_rr_iov *iov = NULL;
	unsigned niov;
	bool_t ok;
	XDR *x;

	if (!req)
		return FALSE;
	c->cur = NULL;
	msg->rm_xid = req->xid;
	/* the results go through the wrapper, which starts counting
	 * their bodies; RFC 8267 §6.4.1: one reduced result per Write
	 * chunk offered, in order (a COMPOUND's: one per slot its walk
	 * finds) */
	if (results && req->nwchunk)
		rw = uiw_rr_ulb_walker(&c->sel, UIW_RPCRDMA_RESULTS);
	x = rw ? uiw_rr_xenc_begin_walk(&c->enc, &c->sel) :
		 uiw_rr_xenc_begin(&c->enc, &c->sel, req->nwchunk);
	if (results) {
		msg->acpted_rply.ar_results.proc = UIW_RR_XDR_NONE;
		msg->acpted_rply.ar_results.where = NULL;
	}
	ok = xdr_replymsg(x, msg) &&
	     (!results || svcauth_apply(xprt, x, UIW_RR_XDR_BODY, &res, false));
	if (results) {
		msg->acpted_rply.ar_results.proc = res.proc;
		msg->acpted_rply.ar_results.where = res.where;
	}
	if (ok && rw) {
		int rc = uiw_rr_xenc_walk_reply(&c->enc, rw, req->nwchunk);

		/* RFC 8166 §4.5.3: no reply can use the chunks offered */
		if (rc > 0) {
			uiw_rr_reply_err_chunk(c->s, req);
			return FALSE;
		}
		ok = rc == 0;
	}
	if (ok)
		iov = uiw_rr_xenc_finish(&c->enc, &niov);
	if (!iov) {
		uiw_rr_drop(c->s, req);
		return FALSE;
	}
	return uiw_rr_reply(c->s, req, iov, niov) == 0;
}

static void sc_destroy(SVCXPRT *xprt)
{
	struct rr_sconn *c = xprt->xp_p1;
	struct rr_hub *h = c->x.hub;
	struct uiw_rr_stats st;

	xprt_unregister(xprt);
	drop_cur(c);
	if (c->ahead)
		uiw_rr_drop(c->s, c->ahead);
	pthread_mutex_lock(&h->mu);
	uiw_rr_sconn_stats(c->s, &st);
	uiw_rr_stats_add(&h->past, &st);
	*c->pprev = c->next;
	if (c->next)
		c->next->pprev = c->pprev;
	pthread_mutex_unlock(&h->mu);
	uiw_rr_sconn_close(c->s);
	uiw_rr_xenc_fini(&c->enc);
	hub_put(h);
	free(c);
}

static const struct xp_ops sc_ops = {
	.xp_recv = sc_recv,
	.xp_stat = sc_stat,
	.xp_getargs = sc_getargs,
	.xp_reply = sc_reply,
	.xp_freeargs = sc_freeargs,
	.xp_destroy = sc_destroy,
};

/* ---- the listener ------------------------------------------------------ */

static void conn_new(struct rr_listener *ls, struct uiw_rr_sconn *s)
{
	struct rr_sconn *c = calloc(1, sizeof(*c));
	struct rr_hub *h = ls->x.hub;

	if (!c) {
		uiw_rr_sconn_close(s);
		return;
	}
	c->s = s;
	c->x.hub = h;
	c->x.la = ls->x.la;
	if (uiw_rr_sconn_peer(s, &c->x.ra))
		memset(&c->x.ra, 0, sizeof(c->x.ra));
	uiw_rr_xenc_init(&c->enc);
	xprt_fill(&c->x, uiw_rr_sconn_fd(s), &sc_ops, &rr_ops2, c);
	/* as svc_vc's connections: no port of their own */
	c->x.xprt.xp_port = (u_short)-1;
	pthread_mutex_lock(&h->mu);
	h->refs++;
	c->next = h->live;
	if (h->live)
		h->live->pprev = &c->next;
	c->pprev = &h->live;
	h->live = c;
	pthread_mutex_unlock(&h->mu);
	xprt_register(&c->x.xprt);
}

/* Takes the connections that came up; never a call of its own. */
static bool_t ls_recv(SVCXPRT *xprt, struct rpc_msg *msg)
{
	struct rr_listener *ls = xprt->xp_p1;
	struct uiw_rr_sconn *s;

	(void)msg;
	while ((s = uiw_rr_accept(ls->l)))
		conn_new(ls, s);
	return FALSE;
}

static enum xprt_stat ls_stat(SVCXPRT *xprt)
{
	(void)xprt;
	return XPRT_IDLE;
}

static bool_t ls_getargs(SVCXPRT *xprt, xdrproc_t proc, void *where)
{
	(void)xprt;
	(void)proc;
	(void)where;
	return FALSE;
}

static bool_t ls_reply(SVCXPRT *xprt, struct rpc_msg *msg)
{
	(void)xprt;
	(void)msg;
	return FALSE;
}

static void ls_destroy(SVCXPRT *xprt)
{
	struct rr_listener *ls = xprt->xp_p1;

	xprt_unregister(xprt);
	uiw_rr_listener_close(ls->l);
	hub_put(ls->x.hub);
	free(ls);
}

static const struct xp_ops ls_ops = {
	.xp_recv = ls_recv,
	.xp_stat = ls_stat,
	.xp_getargs = ls_getargs,
	.xp_reply = ls_reply,
	.xp_freeargs = ls_getargs,
	.xp_destroy = ls_destroy,
};

static struct uiw_rr_listener *listen_any(const char *host, const char *port,
					  const struct uiw_rpcrdma_opts *o)
{
	struct uiw_rr_opts ro;
	struct addrinfo *ai, *a;
	struct uiw_rr_listener *l = NULL;
	char why[128];
	int err = EADDRNOTAVAIL;

	if (uiw_rr_resolve(host, port, true, &ai)) {
		errno = EADDRNOTAVAIL;
		return NULL;
	}
	uiw_rr_opts_from(&ro, o, true);
	for (a = ai; a && !l; a = a->ai_next) {
		l = uiw_rr_listen(a->ai_addr, a->ai_addrlen, &ro, why,
				  sizeof(why));
		if (!l)
			err = errno;
	}
	freeaddrinfo(ai);
	if (!l)
		errno = err;
	return l;
}

SVCXPRT *uiw_rpcrdma_svc_create(const char *host, const char *port,
				const struct uiw_rpcrdma_opts *opts)
{
	struct rr_listener *ls = calloc(1, sizeof(*ls));
	struct rr_hub *h = calloc(1, sizeof(*h));
	int err;

	if (!ls || !h) {
		errno = ENOMEM;
		goto fail;
	}
	ls->l = listen_any(host, port ? port : UIW_RPCRDMA_NFS_PORT, opts);
	if (!ls->l)
		goto fail;
	if (uiw_rr_listener_addr(ls->l, &ls->x.la)) {
		err = errno;
		uiw_rr_listener_close(ls->l);
		errno = err;
		goto fail;
	}
	pthread_mutex_init(&h->mu, NULL);
	h->refs = 1;
	h->ulb = opts ? opts->ulb : NULL;
	ls->x.hub = h;
	xprt_fill(&ls->x, uiw_rr_listener_fd(ls->l), &ls_ops, &rr_ops2, ls);
	ls->x.xprt.xp_port = ntohs(ls->x.la.ss_family == AF_INET6 ?
		((struct sockaddr_in6 *)&ls->x.la)->sin6_port :
		((struct sockaddr_in *)&ls->x.la)->sin_port);
	xprt_register(&ls->x.xprt);
	return &ls->x.xprt;
fail:
	free(h);
	free(ls);
	return NULL;
}

bool uiw_rpcrdma_svc_stats(SVCXPRT *xprt, struct uiw_rpcrdma_stats *s)
{
	struct rr_hub *h;
	struct uiw_rr_stats st;

	if (!xprt || !s || xprt->xp_ops != &ls_ops)
		return false;
	h = ((struct rr_listener *)xprt->xp_p1)->x.hub;
	pthread_mutex_lock(&h->mu);
	*s = h->past;
	for (struct rr_sconn *c = h->live; c; c = c->next) {
		uiw_rr_sconn_stats(c->s, &st);
		uiw_rr_stats_add(s, &st);
	}
	pthread_mutex_unlock(&h->mu);
	return true;
}

bool uiw_rpcrdma_svc_usage(SVCXPRT *xprt, struct uiw_rpcrdma_usage *u)
{
	struct rr_share *sh;
	uint64_t cap;
	unsigned conns;

	if (!xprt || !u || xprt->xp_ops != &ls_ops)
		return false;
	sh = rr_listener_share(((struct rr_listener *)xprt->xp_p1)->l);
	rr_share_stat(sh, &u->held, &u->held_peak, &cap, &conns);
	u->conns = conns;
	u->mrs = rr_share_mrs(sh);
	return true;
}
