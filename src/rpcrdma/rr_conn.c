/*
 * What a Requester's and a Responder's connection share (rr_conn.h):
 * options, RFC 8797 private data, verbs objects, registered buffer
 * pools, CM events.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rr_conn.h"

void uiw_rr_opts_init(struct uiw_rr_opts *o)
{
	*o = (struct uiw_rr_opts){
		/* Linux's xprtrdma asks for 128 credits and svcrdma grants
		 * 64; both use 4096-octet inline buffers (RFC 8797 §4.2) */
		.credits = 128,
		.inline_send = 4096,
		.inline_recv = 4096,
		.private_data = true,
		.remote_inv = true,
		.max_call = (16u << 20) + (64u << 10),
		.connect_timeout_ms = 10000,
		.call_timeout_ms = 0,
		/* Linux's knfsd ends a connection idle for 6 minutes
		 * (svc_age_temp_xprts); a little less here */
		.listen_budget = 256u << 20,
		.max_conns = 256,
		.idle_timeout_ms = 300000,
	};
}

const char *uiw_rr_status_name(enum uiw_rr_status s)
{
	static const char *const names[] = {
		[UIW_RR_OK] = "OK",
		[UIW_RR_TIMEDOUT] = "TIMEDOUT",
		[UIW_RR_DISCONNECTED] = "DISCONNECTED",
		[UIW_RR_ERR_VERS] = "ERR_VERS",
		[UIW_RR_ERR_CHUNK] = "ERR_CHUNK",
		[UIW_RR_BAD_REPLY] = "BAD_REPLY",
		[UIW_RR_TOO_BIG] = "TOO_BIG",
		[UIW_RR_NOMEM] = "NOMEM",
	};

	return (unsigned)s < sizeof(names) / sizeof(names[0]) && names[s] ?
		names[s] : "?";
}

void rr_msg(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (!buf || !len)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, len, fmt, ap);
	va_end(ap);
}

uint64_t rr_now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000u + (uint64_t)t.tv_nsec / 1000000u;
}

int rr_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	return fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0 ? -1 : 0;
}

/* ---- Registered buffers ---------------------------------------------- */

struct rr_pool_chunk {
	struct rr_pool_chunk *next;
	struct ibv_mr *mr;
	void *mem;
	struct rr_buf *bufs;
};

void rr_pool_init(struct rr_pool *p, struct ibv_pd *pd, size_t size,
		  int access)
{
	memset(p, 0, sizeof(*p));
	p->pd = pd;
	p->size = size;
	p->access = access;
}

int rr_pool_grow(struct rr_pool *p, unsigned n)
{
	struct rr_pool_chunk *c;
	struct rr_buf **all;
	unsigned i;

	if (!n)
		return 0;
	c = calloc(1, sizeof(*c));
	all = realloc(p->all, (p->count + n) * sizeof(*all));
	if (!c || !all)
		goto nomem;
	p->all = all;
	c->bufs = calloc(n, sizeof(*c->bufs));
	if (!c->bufs || posix_memalign(&c->mem, 4096, p->size * n))
		goto nomem;
	c->mr = ibv_reg_mr(p->pd, c->mem, p->size * n, p->access);
	if (!c->mr) {
		int e = errno;

		free(c->mem);
		free(c->bufs);
		free(c);
		errno = e ? e : ENOMEM;
		return -1;
	}
	for (i = 0; i < n; i++) {
		struct rr_buf *b = &c->bufs[i];

		b->base = (uint8_t *)c->mem + (size_t)i * p->size;
		b->lkey = c->mr->lkey;
		b->idx = p->count + i;
		p->all[b->idx] = b;
		b->next = p->free;
		p->free = b;
	}
	p->count += n;
	p->nfree += n;
	p->nmr++;
	if (p->mr_tally)
		__atomic_add_fetch(p->mr_tally, 1, __ATOMIC_RELAXED);
	c->next = p->chunks;
	p->chunks = c;
	return 0;
nomem:
	if (c)
		free(c->bufs);
	free(c);
	errno = ENOMEM;
	return -1;
}

struct rr_buf *rr_pool_get(struct rr_pool *p, unsigned grow)
{
	struct rr_buf *b;

	if (!p->free && rr_pool_grow(p, grow ? grow : 1) < 0)
		return NULL;
	b = p->free;
	p->free = b->next;
	p->nfree--;
	b->next = NULL;
	return b;
}

void rr_pool_put(struct rr_pool *p, struct rr_buf *b)
{
	b->next = p->free;
	p->free = b;
	p->nfree++;
}

void rr_pool_destroy(struct rr_pool *p)
{
	struct rr_pool_chunk *c, *n;

	for (c = p->chunks; c; c = n) {
		n = c->next;
		ibv_dereg_mr(c->mr);
		if (p->mr_tally)
			__atomic_sub_fetch(p->mr_tally, 1, __ATOMIC_RELAXED);
		free(c->mem);
		free(c->bufs);
		free(c);
	}
	free(p->all);
	p->chunks = NULL;
	p->all = NULL;
	p->nmr = 0;
	p->free = NULL;
	p->count = p->nfree = 0;
}

/* ---- Work requests ------------------------------------------------------ */

void rr_wr_init(struct rr_wr *w, enum ibv_wr_opcode op, uint64_t wr_id,
		const void *addr, uint32_t len, uint32_t lkey, uint64_t raddr,
		uint32_t rkey, bool signaled)
{
	memset(w, 0, sizeof(*w));
	w->sge = (struct ibv_sge){ (uintptr_t)addr, len, lkey };
	w->wr.wr_id = wr_id;
	w->wr.sg_list = &w->sge;
	w->wr.num_sge = 1;
	w->wr.opcode = op;
	w->wr.send_flags = signaled ? IBV_SEND_SIGNALED : 0;
	w->wr.wr.rdma.remote_addr = raddr;
	w->wr.wr.rdma.rkey = rkey;
}

int rr_post(struct ibv_qp *qp, struct ibv_send_wr *first)
{
	struct ibv_send_wr *bad;
	int ret;

	rr_trace_post(qp, first);
	ret = ibv_post_send(qp, first, &bad);

	if (ret)
		errno = ret;
	return ret ? -1 : 0;
}

/* ---- Options and private data ----------------------------------------- */

int rr_conn_opts(struct rr_conn *k, const struct uiw_rr_opts *o, char *err,
		 size_t errlen)
{
	struct uiw_rr_opts d;

	if (!o) {
		uiw_rr_opts_init(&d);
		o = &d;
	}
	/* RFC 8166 §3.3.3: every receiver takes 1024 octets; RFC 8797
	 * §4.2 cannot advertise more than 262144 */
	if (o->inline_send < UIW_RPCRDMA_INLINE_DEFAULT ||
	    o->inline_recv < UIW_RPCRDMA_INLINE_DEFAULT ||
	    o->inline_send > UIW_RPCRDMA_INLINE_MAX ||
	    o->inline_recv > UIW_RPCRDMA_INLINE_MAX) {
		rr_msg(err, errlen, "inline sizes %u/%u outside 1024..262144 "
		       "(RFC 8166 §3.3.3, RFC 8797 §4.2)", o->inline_send,
		       o->inline_recv);
		errno = EINVAL;
		return -1;
	}
	/* §3.3.1: a grant of zero deadlocks */
	if (o->credits < 1 || o->credits > 4096) {
		rr_msg(err, errlen, "credits %u outside 1..4096 (RFC 8166 "
		       "§3.3.1)", o->credits);
		errno = EINVAL;
		return -1;
	}
	if (o->max_call < UIW_RPCRDMA_INLINE_DEFAULT) {
		rr_msg(err, errlen, "max_call %llu is under 1024",
		       (unsigned long long)o->max_call);
		errno = EINVAL;
		return -1;
	}
	k->o = *o;
	rr_conn_local(k, o->remote_inv);
	return 0;
}

void rr_conn_local(struct rr_conn *k, bool remote_inv)
{
	const struct uiw_rr_opts *o = &k->o;

	memset(&k->local, 0, sizeof(k->local));
	k->pd_out_len = 0;
	if (o->private_data) {
		k->pd_out_len = (uint8_t)uiw_rpcrdma_cm_encode(k->pd_out,
			remote_inv, o->inline_send, o->inline_recv);
		/* what the peer will read: sizes rounded down (§4.2) */
		uiw_rpcrdma_cm_decode(k->pd_out, k->pd_out_len, &k->local);
	} else {
		/* RFC 8797 §5.1: without it, the peer assumes the defaults */
		uiw_rpcrdma_cm_decode(NULL, 0, &k->local);
	}
}

void rr_conn_peer(struct rr_conn *k, const void *pd, size_t len)
{
	uiw_rpcrdma_cm_decode(pd, pd ? len : 0, &k->peer);
	uiw_rpcrdma_cm_thresholds(&k->local, &k->peer, &k->send_thresh,
				  &k->recv_thresh, &k->remote_inv);
}

void rr_conn_param(struct rr_conn *k, struct rdma_conn_param *cp)
{
	memset(cp, 0, sizeof(*cp));
	cp->private_data = k->pd_out_len ? k->pd_out : NULL;
	cp->private_data_len = k->pd_out_len;
	cp->responder_resources = (uint8_t)(k->ird > 255 ? 255 : k->ird);
	cp->initiator_depth = (uint8_t)(k->ord > 255 ? 255 : k->ord);
	/* InfiniBand only: transport retries, and no RNR retry, as iWARP
	 * has none (a Send without a posted receive ends the connection,
	 * RFC 5041 §7.1): RFC 8166 §3.3.1's credits promise a receive,
	 * and one missing is an error, not something to wait for */
	cp->retry_count = 6;
	cp->rnr_retry_count = 0;
}

/* ---- Verbs objects ---------------------------------------------------- */

int rr_conn_verbs(struct rr_conn *k, unsigned max_recv, unsigned max_send,
		  unsigned nrecv, unsigned nsend, char *err, size_t errlen)
{
	struct ibv_context *ctx = k->id->verbs;
	struct ibv_qp_init_attr qa;
	struct ibv_device_attr da;
	struct ibv_port_attr pa;
	unsigned i;

	if (!ctx) {
		rr_msg(err, errlen, "the rdma_cm id has no device");
		errno = ENODEV;
		return -1;
	}
	if (ibv_query_device(ctx, &da) == 0) {
		if ((int)k->ird > da.max_qp_rd_atom)
			k->ird = da.max_qp_rd_atom > 0 ? (uint32_t)da.max_qp_rd_atom : 0;
		if ((int)k->ord > da.max_qp_init_rd_atom)
			k->ord = da.max_qp_init_rd_atom > 0 ?
				(uint32_t)da.max_qp_init_rd_atom : 0;
	}
	k->max_msg = ibv_query_port(ctx, k->id->port_num ? k->id->port_num : 1,
				    &pa) == 0 && pa.max_msg_sz ?
		pa.max_msg_sz : 1u << 30;
	k->pd = ibv_alloc_pd(ctx);
	if (!k->pd) {
		rr_msg(err, errlen, "ibv_alloc_pd: %s", strerror(errno));
		return -1;
	}
	k->cc = ibv_create_comp_channel(ctx);
	if (!k->cc || rr_nonblock(k->cc->fd) < 0) {
		rr_msg(err, errlen, "ibv_create_comp_channel: %s",
		       strerror(errno));
		return -1;
	}
	k->cq = ibv_create_cq(ctx, (int)(max_recv + max_send + 8), k, k->cc,
			      0);
	if (!k->cq || ibv_req_notify_cq(k->cq, 0)) {
		rr_msg(err, errlen, "ibv_create_cq: %s", strerror(errno));
		return -1;
	}
	memset(&qa, 0, sizeof(qa));
	qa.qp_type = IBV_QPT_RC;
	qa.send_cq = qa.recv_cq = k->cq;
	qa.cap.max_send_wr = max_send;
	qa.cap.max_recv_wr = max_recv;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	qa.sq_sig_all = 0;
	if (rdma_create_qp(k->id, k->pd, &qa)) {
		rr_msg(err, errlen, "rdma_create_qp: %s", strerror(errno));
		return -1;
	}
	k->qp = k->id->qp;
	rr_pool_init(&k->rpool, k->pd, k->o.inline_recv,
		     IBV_ACCESS_LOCAL_WRITE);
	rr_pool_init(&k->spool, k->pd, k->o.inline_send, 0);
	if (rr_pool_grow(&k->rpool, nrecv) < 0 ||
	    rr_pool_grow(&k->spool, nsend) < 0) {
		rr_msg(err, errlen, "registering buffers: %s", strerror(errno));
		return -1;
	}
	for (i = 0; i < nrecv; i++)
		if (rr_conn_post_recv(k, rr_pool_get(&k->rpool, 0)) < 0) {
			rr_msg(err, errlen, "ibv_post_recv: %s",
			       strerror(errno));
			return -1;
		}
	return 0;
}

int rr_conn_post_recv(struct rr_conn *k, struct rr_buf *b)
{
	struct ibv_sge sge = { (uintptr_t)b->base, (uint32_t)k->rpool.size,
			       b->lkey };
	struct ibv_recv_wr wr = { .wr_id = rr_wr_id(b, RR_WR_RECV),
				  .sg_list = &sge, .num_sge = 1 }, *bad;
	int ret = ibv_post_recv(k->qp, &wr, &bad);

	if (ret) {
		errno = ret;
		return -1;
	}
	k->posted++;
	return 0;
}

unsigned rr_conn_cq_take(struct rr_conn *k)
{
	struct ibv_cq *cq;
	void *ctx;

	/* One look: the channel serves this CQ alone, and an armed CQ
	 * raises one event, after which it is armed again only by
	 * rr_conn_cq_events (a second look would cost system calls to
	 * find nothing). */
	if (ibv_get_cq_event(k->cc, &cq, &ctx) != 0)
		return 0;
	ibv_ack_cq_events(k->cq, 1);
	return 1;
}

unsigned rr_conn_cq_events(struct rr_conn *k)
{
	unsigned n = rr_conn_cq_take(k);

	ibv_req_notify_cq(k->cq, 0);
	return n;
}

void rr_conn_destroy(struct rr_conn *k)
{
	if (k->qp)
		rdma_destroy_qp(k->id);
	k->qp = NULL;
	if (k->cq)
		ibv_destroy_cq(k->cq);
	k->cq = NULL;
	if (k->cc)
		ibv_destroy_comp_channel(k->cc);
	k->cc = NULL;
	rr_pool_destroy(&k->rpool);
	rr_pool_destroy(&k->spool);
	if (k->pd)
		ibv_dealloc_pd(k->pd);
	k->pd = NULL;
	if (k->id)
		rdma_destroy_id(k->id);
	k->id = NULL;
	if (k->ch)
		rdma_destroy_event_channel(k->ch);
	k->ch = NULL;
}

/* ---- CM events -------------------------------------------------------- */

int rr_cm_event(struct rdma_event_channel *ch, int timeout_ms,
		struct rdma_cm_event **ev)
{
	uint64_t end = timeout_ms < 0 ? 0 : rr_now_ms() + (uint64_t)timeout_ms;

	for (;;) {
		struct pollfd pfd = { .fd = ch->fd, .events = POLLIN };
		int wait = -1, n;

		if (rdma_get_cm_event(ch, ev) == 0)
			return 0;
		if (errno != EAGAIN && errno != EINTR)
			return -1;
		if (timeout_ms >= 0) {
			uint64_t now = rr_now_ms();

			if (now >= end) {
				errno = timeout_ms ? ETIMEDOUT : EAGAIN;
				return -1;
			}
			wait = (int)(end - now);
		}
		n = poll(&pfd, 1, wait);
		if (n < 0 && errno != EINTR)
			return -1;
	}
}
