/* What the tests of the RPC-over-RDMA transport share: rr_test.h. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "rr_test.h"
#include "rpcrdma_hdr.h"

/* ---- The test protocol ----------------------------------------------- */

void rt_fill(uint8_t *p, size_t n, uint32_t seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = rt_pat(seed, i);
}

size_t rt_check(const uint8_t *p, size_t n, uint32_t seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (p[i] != rt_pat(seed, i))
			return i;
	return n;
}

static bool zeros(const uint8_t *p, size_t n)
{
	while (n--)
		if (*p++)
			return false;
	return true;
}


enum uiw_rr_status rt_call(struct uiw_rr_clnt *c, uint32_t xid,
			   const struct rt_spec *sp, char *why, size_t whylen)
{
	static const uint8_t pad[4];
	uint8_t head[20];
	uint8_t *data = malloc(sp->n ? sp->n : 1);
	uint8_t *trailer = malloc(4 + uiw_xdr_roundup(sp->trailer));
	uint8_t *wbuf = NULL;
	struct uiw_rr_iov iov[4];
	struct uiw_rr_call call;
	enum uiw_rr_status st;
	bool data_inline;
	size_t exp, off, k = 0;
	unsigned niov = 0;

	why[0] = 0;
	if (!data || !trailer) {
		snprintf(why, whylen, "out of memory");
		free(data);
		free(trailer);
		return UIW_RR_NOMEM;
	}
	rt_put32(head, xid);
	rt_put32(head + 4, sp->op);
	rt_put32(head + 8, (uint32_t)sp->fill);
	rt_put32(head + 12, sp->delay_ms);
	rt_put32(head + 16, (uint32_t)sp->n);
	rt_fill(data, sp->n, xid);
	rt_put32(trailer, (uint32_t)sp->trailer);
	rt_fill(trailer + 4, sp->trailer, RT_TRAILER_SEED(xid));
	memset(trailer + 4 + sp->trailer, 0, uiw_xdr_roundup(sp->trailer) - sp->trailer);
	iov[niov++] = (struct uiw_rr_iov){ head, sizeof(head), false };
	iov[niov++] = (struct uiw_rr_iov){ data, sp->n, sp->data_ddp };
	if (!sp->data_ddp && uiw_xdr_roundup(sp->n) != sp->n)
		iov[niov++] = (struct uiw_rr_iov){ pad, uiw_xdr_roundup(sp->n) - sp->n,
						   false };
	iov[niov++] = (struct uiw_rr_iov){ trailer, 4 + uiw_xdr_roundup(sp->trailer),
					   false };
	memset(&call, 0, sizeof(call));
	call.iov = iov;
	call.niov = niov;
	if (sp->wchunk) {
		wbuf = malloc(sp->wlen ? sp->wlen : 1);
		if (wbuf)
			memset(wbuf, 0xee, sp->wlen);
		call.wt[0] = (struct uiw_rr_wtarget){ wbuf, sp->wlen };
		call.nwt = 1;
	}
	/* the data comes back inline unless a Write chunk takes it */
	data_inline = !(sp->op & RT_F_DDP) || !sp->wchunk || !sp->wlen;
	exp = 12 + (data_inline ? uiw_xdr_roundup(sp->n) : 0) + 4 + uiw_xdr_roundup(sp->fill);
	call.reply_max = sp->reply_max ? sp->reply_max : exp;
	call.timeout_ms = sp->timeout_ms;

	st = uiw_rr_call(c, &call) == 0 ? UIW_RR_OK : call.status;
	if (st != UIW_RR_OK) {
		snprintf(why, whylen, "%s: %s", uiw_rr_status_name(st),
			 call.msg);
		goto out;
	}
	st = UIW_RR_BAD_REPLY;
	if (call.reply_len != exp) {
		snprintf(why, whylen, "reply of %zu octets, expected %zu",
			 call.reply_len, exp);
		goto out;
	}
	if (rt_get32(call.reply) != xid || rt_get32(call.reply + 4) != 0 ||
	    rt_get32(call.reply + 8) != sp->n) {
		snprintf(why, whylen, "reply header: xid %08x status %u n %u",
			 rt_get32(call.reply), rt_get32(call.reply + 4),
			 rt_get32(call.reply + 8));
		goto out;
	}
	off = 12;
	if (data_inline) {
		if ((k = rt_check(call.reply + off, sp->n, xid)) != sp->n ||
		    !zeros(call.reply + off + sp->n, uiw_xdr_roundup(sp->n) - sp->n)) {
			snprintf(why, whylen, "inline data differs at %zu of %zu",
				 k, sp->n);
			goto out;
		}
		off += uiw_xdr_roundup(sp->n);
		if (sp->wchunk && call.wlen[0]) {
			snprintf(why, whylen, "unused Write chunk came back with "
				 "%llu octets", (unsigned long long)call.wlen[0]);
			goto out;
		}
	} else if (call.wlen[0] != sp->n ||
		   (k = rt_check(wbuf, sp->n, xid)) != sp->n) {
		snprintf(why, whylen, "Write chunk: %llu octets, differs at %zu "
			 "of %zu", (unsigned long long)call.wlen[0],
			 call.wlen[0] == sp->n ? k : 0, sp->n);
		goto out;
	}
	if (rt_get32(call.reply + off) != sp->fill ||
	    (k = rt_check(call.reply + off + 4, sp->fill, RT_FILLER_SEED(xid))) !=
	    sp->fill || !zeros(call.reply + off + 4 + sp->fill,
			       uiw_xdr_roundup(sp->fill) - sp->fill)) {
		snprintf(why, whylen, "filler differs");
		goto out;
	}
	st = UIW_RR_OK;
out:
	uiw_rr_call_done(c, &call);
	free(data);
	free(trailer);
	free(wbuf);
	return st;
}

/* ---- A Responder ------------------------------------------------------- */

struct rt_conn {
	struct rt_conn *next;
	struct uiw_rr_sconn *s;
	unsigned held;
	struct ibv_mr *poke_mr;
	uint8_t poke_buf[8];
	bool gone;
};

struct rt_deferred {
	struct rt_deferred *next;
	struct rt_conn *cn;
	struct uiw_rr_req *req;
	uint64_t due;               /* 0: held until released */
	unsigned hold_idx;
	uint32_t op, fill, n;
};

static void srv_signal(struct rt_srv *srv)
{
	pthread_cond_broadcast(&srv->cv);
}

static void srv_reply(struct rt_srv *srv, struct rt_conn *cn,
		      struct uiw_rr_req *req, uint32_t op, uint32_t fill,
		      uint32_t n)
{
	static const uint8_t pad[4];
	uint8_t head[12], *filler = malloc(4 + uiw_xdr_roundup(fill)), *copy = NULL;
	const uint8_t *data = req->call + 20;
	struct uiw_rr_iov iov[4];
	unsigned niov = 0;
	int ret;

	if (op & RT_F_COPY) {
		copy = malloc(n ? n : 1);
		memcpy(copy, data, n);
		data = copy;
	}
	rt_put32(head, req->xid);
	rt_put32(head + 4, 0);
	rt_put32(head + 8, n);
	rt_put32(filler, fill);
	rt_fill(filler + 4, fill, RT_FILLER_SEED(req->xid));
	memset(filler + 4 + fill, 0, uiw_xdr_roundup(fill) - fill);
	iov[niov++] = (struct uiw_rr_iov){ head, 12, false };
	iov[niov++] = (struct uiw_rr_iov){ data, n, (op & RT_F_DDP) != 0 };
	if (!(op & RT_F_DDP) && uiw_xdr_roundup(n) != n)
		iov[niov++] = (struct uiw_rr_iov){ pad, uiw_xdr_roundup(n) - n, false };
	iov[niov++] = (struct uiw_rr_iov){ filler, 4 + uiw_xdr_roundup(fill), false };
	ret = uiw_rr_reply(cn->s, req, iov, niov);
	free(filler);
	free(copy);
	pthread_mutex_lock(&srv->mu);
	if (ret)
		srv->reply_errors++;
	else
		srv->replies++;
	cn->held--;
	srv->held_now--;
	srv_signal(srv);
	pthread_mutex_unlock(&srv->mu);
}

static void srv_handle(struct rt_srv *srv, struct rt_conn *cn,
		       struct uiw_rr_req *req)
{
	const uint8_t *p = req->call;
	uint32_t op, fill, delay, n, m;
	struct rt_deferred *d;
	bool ok;

	pthread_mutex_lock(&srv->mu);
	srv->calls++;
	cn->held++;
	srv->held_now++;
	if (cn->held > srv->max_held)
		srv->max_held = cn->held;
	if (srv->held_now > srv->max_held_all)
		srv->max_held_all = srv->held_now;
	srv_signal(srv);
	pthread_mutex_unlock(&srv->mu);
	/* the call as the Requester built it, every octet */
	ok = req->call_len >= 24 && rt_get32(p) == req->xid;
	if (ok) {
		op = rt_get32(p + 4);
		fill = rt_get32(p + 8);
		delay = rt_get32(p + 12);
		n = rt_get32(p + 16);
		ok = n <= req->call_len - 24 &&
		     20 + uiw_xdr_roundup(n) + 4 <= req->call_len &&
		     rt_check(p + 20, n, req->xid) == n &&
		     zeros(p + 20 + n, uiw_xdr_roundup(n) - n);
	}
	if (ok) {
		m = rt_get32(p + 20 + uiw_xdr_roundup(n));
		ok = m <= req->call_len && 24 + uiw_xdr_roundup(n) + uiw_xdr_roundup(m) ==
		     req->call_len &&
		     rt_check(p + 24 + uiw_xdr_roundup(n), m, RT_TRAILER_SEED(req->xid)) == m &&
		     zeros(p + 24 + uiw_xdr_roundup(n) + m, uiw_xdr_roundup(m) - m);
	}
	if (!ok) {
		pthread_mutex_lock(&srv->mu);
		srv->bad_calls++;
		pthread_mutex_unlock(&srv->mu);
		op = RT_ECHO;
		fill = 0;
		n = 0;
	}
	if (op & RT_F_KEEP) {
		const struct rr_plan *pl = rr_req_plan(req);

		if (pl->nwchunk && pl->wchunk[0].nseg) {
			pthread_mutex_lock(&srv->mu);
			srv->kept = true;
			srv->kept_rkey = pl->wseg[pl->wchunk[0].first].handle;
			srv->kept_addr = pl->wseg[pl->wchunk[0].first].offset;
			srv->kept_conn = cn->s;
			srv_signal(srv);
			pthread_mutex_unlock(&srv->mu);
		}
	}
	switch (op & RT_OP_MASK) {
	case RT_DROP:
		uiw_rr_drop(cn->s, req);
		pthread_mutex_lock(&srv->mu);
		srv->drops++;
		cn->held--;
		srv->held_now--;
		srv_signal(srv);
		pthread_mutex_unlock(&srv->mu);
		return;
	case RT_DEFER:
	case RT_HOLD:
		d = calloc(1, sizeof(*d));
		*d = (struct rt_deferred){ srv->deferred, cn, req,
			(op & RT_OP_MASK) == RT_DEFER ? rr_now_ms() + delay : 0,
			0, op, fill, n };
		pthread_mutex_lock(&srv->mu);
		d->hold_idx = srv->deferred_done;
		pthread_mutex_unlock(&srv->mu);
		srv->deferred = d;
		return;
	default:
		break;
	}
	srv_reply(srv, cn, req, op, fill, n);
}

static void srv_end(struct rt_srv *srv, struct rt_conn *cn)
{
	struct rt_deferred **p = &srv->deferred, *d;
	struct uiw_rr_stats st;
	uint64_t *a = (uint64_t *)&srv->total, *b = (uint64_t *)&st;
	size_t i;

	while ((d = *p)) {
		if (d->cn == cn) {
			*p = d->next;
			free(d);
			continue;
		}
		p = &d->next;
	}
	uiw_rr_sconn_stats(cn->s, &st);
	pthread_mutex_lock(&srv->mu);
	for (i = 0; i < sizeof(st) / sizeof(uint64_t); i++)
		a[i] += b[i];
	snprintf(srv->last_end_why, sizeof(srv->last_end_why), "%s",
		 rr_sconn_why(cn->s));
	srv->held_now -= cn->held;
	if (srv->kept_conn == cn->s)
		srv->kept_conn = NULL;
	pthread_mutex_unlock(&srv->mu);
	if (cn->poke_mr)
		ibv_dereg_mr(cn->poke_mr);
	uiw_rr_sconn_close(cn->s);
	cn->gone = true;
	pthread_mutex_lock(&srv->mu);
	srv->ended++;
	srv_signal(srv);
	pthread_mutex_unlock(&srv->mu);
}

static void srv_serve(struct rt_srv *srv, struct rt_conn *cn)
{
	struct uiw_rr_req *req;
	int ret;

	while ((ret = uiw_rr_recv(cn->s, &req)) == 0)
		srv_handle(srv, cn, req);
	if (ret == -ENOTCONN)
		srv_end(srv, cn);
}

/* The RDMA Write the test asked for, to the kept segment. */
static void srv_poke(struct rt_srv *srv)
{
	struct rt_conn *cn;
	struct rr_wr w;

	for (cn = srv->conns; cn; cn = cn->next)
		if (!cn->gone && cn->s == srv->kept_conn)
			break;
	if (!cn)
		return;
	memset(cn->poke_buf, RT_POKE, sizeof(cn->poke_buf));
	if (!cn->poke_mr)
		cn->poke_mr = ibv_reg_mr(rr_sconn_conn(cn->s)->pd, cn->poke_buf,
					 sizeof(cn->poke_buf), 0);
	if (!cn->poke_mr)
		return;
	rr_wr_init(&w, IBV_WR_RDMA_WRITE, rr_wr_id(NULL, RR_WR_WRITE),
		   cn->poke_buf, 8, cn->poke_mr->lkey, srv->kept_addr,
		   srv->kept_rkey, true);
	if (rr_post(rr_sconn_conn(cn->s)->qp, &w.wr) == 0) {
		pthread_mutex_lock(&srv->mu);
		srv->poked = true;
		srv_signal(srv);
		pthread_mutex_unlock(&srv->mu);
	}
}

static void srv_deferred(struct rt_srv *srv, uint64_t now, int *timeout)
{
	struct rt_deferred **p = &srv->deferred, *d;
	unsigned release;

	pthread_mutex_lock(&srv->mu);
	release = srv->release;
	pthread_mutex_unlock(&srv->mu);
	while ((d = *p)) {
		bool due = d->due ? d->due <= now : d->hold_idx < release;

		if (!due) {
			if (d->due && (*timeout < 0 ||
				       (int)(d->due - now) < *timeout))
				*timeout = (int)(d->due - now);
			p = &d->next;
			continue;
		}
		*p = d->next;
		srv_reply(srv, d->cn, d->req, d->op, d->fill, d->n);
		pthread_mutex_lock(&srv->mu);
		srv->deferred_done++;
		srv_signal(srv);
		pthread_mutex_unlock(&srv->mu);
		free(d);
	}
}

static void *srv_main(void *arg)
{
	struct rt_srv *srv = arg;
	struct pollfd pfd[66];
	struct rt_conn *cn, *map[64], **pp;
	unsigned n, i;

	for (;;) {
		int timeout = -1;
		uint64_t v;

		pthread_mutex_lock(&srv->mu);
		while (srv->gated && !srv->stop) {
			srv->parked = true;
			srv_signal(srv);
			pthread_cond_wait(&srv->cv, &srv->mu);
		}
		srv->parked = false;
		if (srv->stop) {
			pthread_mutex_unlock(&srv->mu);
			break;
		}
		if (srv->poke && !srv->poked) {
			pthread_mutex_unlock(&srv->mu);
			srv_poke(srv);
			pthread_mutex_lock(&srv->mu);
		}
		pthread_mutex_unlock(&srv->mu);
		srv_deferred(srv, rr_now_ms(), &timeout);
		/* forget the connections that ended */
		for (pp = &srv->conns; (cn = *pp);) {
			if (cn->gone) {
				*pp = cn->next;
				free(cn);
				continue;
			}
			pp = &cn->next;
		}
		pfd[0] = (struct pollfd){ .fd = srv->cmdfd, .events = POLLIN };
		pfd[1] = (struct pollfd){ .fd = uiw_rr_listener_fd(srv->l),
					  .events = POLLIN };
		n = 2;
		for (cn = srv->conns; cn && n < 66; cn = cn->next) {
			map[n - 2] = cn;
			pfd[n++] = (struct pollfd){ .fd = uiw_rr_sconn_fd(cn->s),
						    .events = POLLIN };
		}
		if (poll(pfd, n, timeout) < 0 && errno != EINTR)
			break;
		if (pfd[0].revents && read(srv->cmdfd, &v, sizeof(v)) < 0)
			v = 0;
		if (pfd[1].revents) {
			struct uiw_rr_sconn *s;

			while ((s = uiw_rr_accept(srv->l))) {
				cn = calloc(1, sizeof(*cn));
				cn->s = s;
				cn->next = srv->conns;
				srv->conns = cn;
				pthread_mutex_lock(&srv->mu);
				srv->accepted++;
				srv_signal(srv);
				pthread_mutex_unlock(&srv->mu);
				/* a call may be there already */
				srv_serve(srv, cn);
			}
		}
		for (i = 2; i < n; i++)
			if (pfd[i].revents && !map[i - 2]->gone)
				srv_serve(srv, map[i - 2]);
	}
	while ((cn = srv->conns)) {
		srv->conns = cn->next;
		if (!cn->gone)
			srv_end(srv, cn);
		free(cn);
	}
	return NULL;
}

void rt_srv_start(struct rt_srv *srv, const struct uiw_rr_opts *o)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	char err[128] = "";

	memset(srv, 0, sizeof(*srv));
	pthread_mutex_init(&srv->mu, NULL);
	{
		pthread_condattr_t ca;

		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&srv->cv, &ca);
		pthread_condattr_destroy(&ca);
	}
	if (o)
		srv->o = *o;
	else
		uiw_rr_opts_init(&srv->o);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	srv->l = uiw_rr_listen((struct sockaddr *)&a, sizeof(a), &srv->o, err,
			       sizeof(err));
	if (!srv->l) {
		fprintf(stderr, "uiw_rr_listen: %s\n", err);
		abort();
	}
	uiw_rr_listener_addr(srv->l, &srv->addr);
	srv->cmdfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (srv->cmdfd < 0 || pthread_create(&srv->th, NULL, srv_main, srv))
		abort();
}

void rt_srv_kick(struct rt_srv *srv)
{
	uint64_t one = 1;

	pthread_mutex_lock(&srv->mu);
	srv_signal(srv);
	pthread_mutex_unlock(&srv->mu);
	if (write(srv->cmdfd, &one, sizeof(one)) < 0)
		return;
}

void rt_srv_stop(struct rt_srv *srv)
{
	pthread_mutex_lock(&srv->mu);
	srv->stop = true;
	pthread_mutex_unlock(&srv->mu);
	rt_srv_kick(srv);
	pthread_join(srv->th, NULL);
	uiw_rr_listener_close(srv->l);
	close(srv->cmdfd);
	pthread_mutex_destroy(&srv->mu);
	pthread_cond_destroy(&srv->cv);
}

void rt_srv_gate(struct rt_srv *srv)
{
	pthread_mutex_lock(&srv->mu);
	srv->gated = true;
	pthread_mutex_unlock(&srv->mu);
	rt_srv_kick(srv);
	/* until the thread waits at the gate */
	pthread_mutex_lock(&srv->mu);
	while (!srv->parked)
		pthread_cond_wait(&srv->cv, &srv->mu);
	pthread_mutex_unlock(&srv->mu);
}

void rt_srv_ungate(struct rt_srv *srv)
{
	pthread_mutex_lock(&srv->mu);
	srv->gated = false;
	srv_signal(srv);
	pthread_mutex_unlock(&srv->mu);
}

bool rt_srv_wait(struct rt_srv *srv, const unsigned *field, unsigned want)
{
	uint64_t end = rr_now_ms() + RT_WAIT_MS;
	struct timespec ts = { .tv_sec = (time_t)(end / 1000),
			       .tv_nsec = (long)(end % 1000) * 1000000L };
	bool ok;

	pthread_mutex_lock(&srv->mu);
	while (*field < want &&
	       pthread_cond_timedwait(&srv->cv, &srv->mu, &ts) != ETIMEDOUT)
		;
	ok = *field >= want;
	pthread_mutex_unlock(&srv->mu);
	return ok;
}

unsigned rt_srv_get(struct rt_srv *srv, const unsigned *field)
{
	unsigned v;

	pthread_mutex_lock(&srv->mu);
	v = *field;
	pthread_mutex_unlock(&srv->mu);
	return v;
}

struct uiw_rr_clnt *rt_connect(struct rt_srv *srv, const struct uiw_rr_opts *o)
{
	char err[128] = "";
	struct uiw_rr_clnt *c = uiw_rr_clnt_connect(
		(struct sockaddr *)&srv->addr, sizeof(struct sockaddr_in), o,
		err, sizeof(err));

	if (!c)
		fprintf(stderr, "uiw_rr_clnt_connect: %s\n", err);
	return c;
}
