/* A raw RDMA end for the transport's conformance tests: rr_raw.h. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rr_raw.h"

/* The longest any one step of a connection may take. */
#define RW_CM_WAIT_MS  20000
#define RW_SLOTS       16u
#define RW_SCRATCH     (256u << 10)
#define RW_SEND_OFF    0u
#define RW_SCRATCH_OFF (RW_SLOTS * RW_SEND_MAX)
#define RW_RECV_OFF    (RW_SCRATCH_OFF + RW_SCRATCH)
/* wr_id: a receive slot below RW_ID_SEND, a Send slot above, a Write */
#define RW_ID_SEND     1000u
#define RW_ID_WRITE    2000u

static uint64_t now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000u + (uint64_t)t.tv_nsec / 1000000u;
}

static int nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	return fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0 ? -1 : 0;
}

__attribute__((format(printf, 1, 2)))
static int fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("rr_raw: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	return -1;
}

size_t rw_pd_8797(uint8_t out[8], bool remote_inv, uint32_t send,
		  uint32_t recv)
{
	/* RFC 8797 §4: Format Identifier, Version 1, R in the flags
	 * octet's lowest bit, the sizes in 1 KiB units less one */
	out[0] = 0xf6;
	out[1] = 0xab;
	out[2] = 0x0e;
	out[3] = 0x18;
	out[4] = 1;
	out[5] = remote_inv ? 1 : 0;
	out[6] = (uint8_t)(send / 1024 - 1);
	out[7] = (uint8_t)(recv / 1024 - 1);
	return 8;
}

/* ---- Completions --------------------------------------------------------- */

static uint8_t *recv_buf(struct rw_end *e, unsigned i)
{
	return e->buf + RW_RECV_OFF + (size_t)i * e->o.rsize;
}

static int post_recv(struct rw_end *e, unsigned i)
{
	struct ibv_sge sge = { (uintptr_t)recv_buf(e, i), e->o.rsize,
			       e->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = i, .sg_list = &sge, .num_sge = 1 },
		*bad;

	if (ibv_post_recv(e->id->qp, &wr, &bad))
		return -1;
	e->posted++;
	return 0;
}

int rw_repost(struct rw_end *e, unsigned n)
{
	while (n--) {
		if (!e->nheld || post_recv(e, e->held[e->nheld - 1]))
			return -1;
		e->nheld--;
	}
	return 0;
}

static void set_dead(struct rw_end *e, enum ibv_wc_status st)
{
	if (!e->dead)
		e->fail = st;
	e->dead = true;
}

/* CM events of the connection: its end. */
static void cm_events(struct rw_end *e)
{
	struct rdma_cm_event *ev;

	while (rdma_get_cm_event(e->ch, &ev) == 0) {
		if (ev->id == e->id &&
		    (ev->event == RDMA_CM_EVENT_DISCONNECTED ||
		     ev->event == RDMA_CM_EVENT_TIMEWAIT_EXIT ||
		     ev->event == RDMA_CM_EVENT_DEVICE_REMOVAL))
			set_dead(e, IBV_WC_SUCCESS);
		rdma_ack_cm_event(ev);
	}
}

/* One completion processed; *wr_id gets its id, *st its status.  1:
 * one came, 0: none by end, -1: the CQ failed. */
static int one_wc(struct rw_end *e, uint64_t end, uint64_t *wr_id,
		  enum ibv_wc_status *st)
{
	struct ibv_wc wc;
	int n;

	for (;;) {
		struct pollfd pfd[2] = {
			{ .fd = e->cc->fd, .events = POLLIN },
			{ .fd = e->ch->fd, .events = POLLIN },
		};
		uint64_t now;

		n = ibv_poll_cq(e->cq, 1, &wc);
		if (n == 0) {
			/* arm, then look again: a completion before the
			 * arming raises no event */
			ibv_req_notify_cq(e->cq, 0);
			n = ibv_poll_cq(e->cq, 1, &wc);
		}
		if (n < 0)
			return -1;
		if (n == 1)
			break;
		now = now_ms();
		if (now >= end)
			return 0;
		if (poll(pfd, 2, (int)(end - now)) < 0 && errno != EINTR)
			return -1;
		if (pfd[0].revents) {
			struct ibv_cq *cq;
			void *ctx;

			while (ibv_get_cq_event(e->cc, &cq, &ctx) == 0)
				ibv_ack_cq_events(cq, 1);
		}
		if (pfd[1].revents)
			cm_events(e);
	}
	*wr_id = wc.wr_id;
	*st = wc.status;
	if (wc.status != IBV_WC_SUCCESS) {
		set_dead(e, wc.status);
		if (wc.wr_id < RW_ID_SEND)
			e->posted--;
		return 1;
	}
	if (wc.wr_id < RW_ID_SEND) {
		e->posted--;
		if (e->nstash < RW_STASH) {
			e->stash[e->nstash].idx = (unsigned)wc.wr_id;
			e->stash[e->nstash].len = wc.byte_len;
			e->stash[e->nstash].with_inv =
				(wc.wc_flags & IBV_WC_WITH_INV) != 0;
			e->stash[e->nstash].inv_rkey = wc.invalidated_rkey;
			e->nstash++;
		}
	} else if (wc.wr_id < RW_ID_WRITE) {
		e->sends_done++;
	}
	return 1;
}

/* Processes completions until the one of wr_id: 0, or -1 when it
 * failed or did not come. */
static int wait_for(struct rw_end *e, uint64_t wr_id)
{
	uint64_t end = now_ms() + RW_CM_WAIT_MS, id;
	enum ibv_wc_status st;

	for (;;) {
		if (one_wc(e, end, &id, &st) <= 0)
			return -1;
		if (id == wr_id)
			return st == IBV_WC_SUCCESS ? 0 : -1;
	}
}

int rw_post(struct rw_end *e, const void *msg, size_t len, uint32_t inv_rkey)
{
	unsigned slot = e->next_slot++ % RW_SLOTS;
	uint8_t *p = e->buf + RW_SEND_OFF + (size_t)slot * RW_SEND_MAX;
	struct ibv_sge sge = { (uintptr_t)p, (uint32_t)len, e->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = RW_ID_SEND + slot,
				  .sg_list = &sge, .num_sge = 1,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;

	if (len > RW_SEND_MAX)
		return fail("a Send of %zu octets", len);
	memcpy(p, msg, len);
	wr.opcode = inv_rkey ? IBV_WR_SEND_WITH_INV : IBV_WR_SEND;
	wr.invalidate_rkey = inv_rkey;
	return ibv_post_send(e->id->qp, &wr, &bad) ? -1 : 0;
}

int rw_send(struct rw_end *e, const void *msg, size_t len, uint32_t inv_rkey)
{
	unsigned slot = e->next_slot % RW_SLOTS;

	if (rw_post(e, msg, len, inv_rkey))
		return -1;
	return wait_for(e, RW_ID_SEND + slot);
}

int rw_write(struct rw_end *e, const void *src, size_t len, uint32_t rkey,
	     uint64_t addr)
{
	uint8_t *p = e->buf + RW_SCRATCH_OFF;
	struct ibv_sge sge = { (uintptr_t)p, (uint32_t)len, e->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = RW_ID_WRITE, .sg_list = &sge,
				  .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;

	if (len > RW_SCRATCH)
		return fail("an RDMA Write of %zu octets", len);
	memcpy(p, src, len);
	wr.wr.rdma.remote_addr = addr;
	wr.wr.rdma.rkey = rkey;
	if (ibv_post_send(e->id->qp, &wr, &bad))
		return -1;
	return wait_for(e, RW_ID_WRITE);
}

int rw_recv(struct rw_end *e, struct rw_msg *m, int timeout_ms)
{
	uint64_t end = now_ms() + (uint64_t)timeout_ms, id;
	enum ibv_wc_status st;
	unsigned idx;

	while (!e->nstash) {
		if (e->dead)
			return -2;
		if (one_wc(e, end, &id, &st) <= 0)
			return e->dead ? -2 : -1;
	}
	idx = e->stash[0].idx;
	m->len = e->stash[0].len;
	m->with_inv = e->stash[0].with_inv;
	m->inv_rkey = e->stash[0].inv_rkey;
	memmove(e->stash, e->stash + 1, --e->nstash * sizeof(e->stash[0]));
	memcpy(m->data, recv_buf(e, idx),
	       m->len < sizeof(m->data) ? m->len : sizeof(m->data));
	if (e->o.hold || e->dead || post_recv(e, idx))
		e->held[e->nheld++] = idx;
	return (int)m->len;
}

bool rw_wait_dead(struct rw_end *e, int timeout_ms)
{
	uint64_t end = now_ms() + (uint64_t)timeout_ms, id;
	enum ibv_wc_status st;

	while (!e->dead) {
		cm_events(e);
		/* none by the deadline, or a CQ that cannot be read (it
		 * would fail again at once) */
		if (e->dead || one_wc(e, end, &id, &st) <= 0)
			break;
	}
	return e->dead;
}

/* ---- Connections --------------------------------------------------------- */

/* The next CM event, which must be want; the event is acknowledged
 * unless keep (then *out holds it). */
static int expect(struct rw_end *e, enum rdma_cm_event_type want,
		  struct rdma_cm_event **out)
{
	uint64_t end = now_ms() + RW_CM_WAIT_MS;
	struct rdma_cm_event *ev;

	while (rdma_get_cm_event(e->ch, &ev)) {
		struct pollfd pfd = { .fd = e->ch->fd, .events = POLLIN };
		uint64_t now = now_ms();

		if ((errno != EAGAIN && errno != EINTR) || now >= end)
			return fail("waiting for %s: %s", rdma_event_str(want),
				    strerror(errno));
		poll(&pfd, 1, (int)(end - now));
	}
	if (ev->event != want) {
		fail("%s (status %d) instead of %s", rdma_event_str(ev->event),
		     ev->status, rdma_event_str(want));
		rdma_ack_cm_event(ev);
		return -1;
	}
	if (want == RDMA_CM_EVENT_ESTABLISHED ||
	    want == RDMA_CM_EVENT_CONNECT_REQUEST) {
		const struct rdma_conn_param *c = &ev->param.conn;

		e->peer_pd_len = c->private_data ? c->private_data_len : 0;
		if (e->peer_pd_len > sizeof(e->peer_pd))
			e->peer_pd_len = sizeof(e->peer_pd);
		if (e->peer_pd_len)
			memcpy(e->peer_pd, c->private_data, e->peer_pd_len);
		e->peer_ird = c->responder_resources;
		e->peer_ord = c->initiator_depth;
	}
	if (out)
		*out = ev;
	else
		rdma_ack_cm_event(ev);
	return 0;
}

static void opts_fix(struct rw_end *e, const struct rw_opts *o)
{
	e->o = *o;
	if (!e->o.nrecv)
		e->o.nrecv = 16;
	if (e->o.nrecv > RW_MAX_RECV)
		e->o.nrecv = RW_MAX_RECV;
	if (!e->o.rsize)
		e->o.rsize = 4096;
	if (e->o.rsize > RW_SEND_MAX)
		e->o.rsize = RW_SEND_MAX;
	if (!e->o.ird)
		e->o.ird = 8;
	if (!e->o.ord)
		e->o.ord = 8;
}

/* The verbs objects on e->id and the first receives. */
static int verbs(struct rw_end *e)
{
	struct ibv_qp_init_attr qa = { 0 };
	unsigned i;

	e->buflen = RW_RECV_OFF + (size_t)RW_MAX_RECV * e->o.rsize;
	e->pd = ibv_alloc_pd(e->id->verbs);
	e->cc = ibv_create_comp_channel(e->id->verbs);
	if (!e->pd || !e->cc || nonblock(e->cc->fd))
		return fail("PD or completion channel: %s", strerror(errno));
	e->cq = ibv_create_cq(e->id->verbs, 256, NULL, e->cc, 0);
	if (!e->cq || posix_memalign((void **)&e->buf, 4096, e->buflen))
		return fail("CQ or memory: %s", strerror(errno));
	memset(e->buf, 0, e->buflen);
	e->mr = ibv_reg_mr(e->pd, e->buf, e->buflen, IBV_ACCESS_LOCAL_WRITE);
	qa.qp_type = IBV_QPT_RC;
	qa.send_cq = qa.recv_cq = e->cq;
	qa.cap.max_send_wr = 64;
	qa.cap.max_recv_wr = RW_MAX_RECV;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
	if (!e->mr || rdma_create_qp(e->id, e->pd, &qa))
		return fail("MR or QP: %s", strerror(errno));
	for (i = RW_MAX_RECV; i-- > e->o.nrecv;)
		e->held[e->nheld++] = i;
	for (i = 0; i < e->o.nrecv; i++)
		if (post_recv(e, i))
			return fail("ibv_post_recv: %s", strerror(errno));
	return 0;
}

static void conn_param(struct rw_end *e, struct rdma_conn_param *cp)
{
	memset(cp, 0, sizeof(*cp));
	cp->private_data = e->o.pd;
	cp->private_data_len = (uint8_t)e->o.pdlen;
	cp->responder_resources = e->o.ird;
	cp->initiator_depth = e->o.ord;
}

int rw_connect(struct rw_end *e, const struct sockaddr *sa,
	       const struct rw_opts *o)
{
	struct rdma_conn_param cp;

	memset(e, 0, sizeof(*e));
	opts_fix(e, o);
	e->ch = rdma_create_event_channel();
	if (!e->ch || nonblock(e->ch->fd) ||
	    rdma_create_id(e->ch, &e->id, e, RDMA_PS_TCP))
		return fail("rdma_create_id: %s", strerror(errno));
	if (rdma_resolve_addr(e->id, NULL, (struct sockaddr *)sa,
			      RW_CM_WAIT_MS) ||
	    expect(e, RDMA_CM_EVENT_ADDR_RESOLVED, NULL) ||
	    rdma_resolve_route(e->id, RW_CM_WAIT_MS) ||
	    expect(e, RDMA_CM_EVENT_ROUTE_RESOLVED, NULL) || verbs(e))
		return -1;
	conn_param(e, &cp);
	if (rdma_connect(e->id, &cp))
		return fail("rdma_connect: %s", strerror(errno));
	return expect(e, RDMA_CM_EVENT_ESTABLISHED, NULL);
}

int rw_listen(struct rw_end *e, struct sockaddr_storage *ss)
{
	struct sockaddr_in a = { .sin_family = AF_INET };

	memset(e, 0, sizeof(*e));
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	e->ch = rdma_create_event_channel();
	if (!e->ch || nonblock(e->ch->fd) ||
	    rdma_create_id(e->ch, &e->lid, e, RDMA_PS_TCP) ||
	    rdma_bind_addr(e->lid, (struct sockaddr *)&a) ||
	    rdma_listen(e->lid, 4))
		return fail("listening: %s", strerror(errno));
	memset(ss, 0, sizeof(*ss));
	memcpy(ss, rdma_get_local_addr(e->lid), sizeof(struct sockaddr_in));
	return 0;
}

int rw_accept(struct rw_end *e, const struct rw_opts *o)
{
	struct rdma_cm_event *ev;
	struct rdma_conn_param cp;

	opts_fix(e, o);
	if (expect(e, RDMA_CM_EVENT_CONNECT_REQUEST, &ev))
		return -1;
	e->id = ev->id;
	rdma_ack_cm_event(ev);
	if (verbs(e))
		return -1;
	conn_param(e, &cp);
	if (rdma_accept(e->id, &cp))
		return fail("rdma_accept: %s", strerror(errno));
	return expect(e, RDMA_CM_EVENT_ESTABLISHED, NULL);
}

void rw_close(struct rw_end *e)
{
	if (e->id && e->id->qp) {
		rdma_disconnect(e->id);
		rdma_destroy_qp(e->id);
	}
	if (e->mr)
		ibv_dereg_mr(e->mr);
	if (e->cq)
		ibv_destroy_cq(e->cq);
	if (e->cc)
		ibv_destroy_comp_channel(e->cc);
	if (e->pd)
		ibv_dealloc_pd(e->pd);
	if (e->id)
		rdma_destroy_id(e->id);
	if (e->lid)
		rdma_destroy_id(e->lid);
	if (e->ch)
		rdma_destroy_event_channel(e->ch);
	free(e->buf);
	memset(e, 0, sizeof(*e));
}

/* ---- Guarded memory ------------------------------------------------------ */

int rw_region_new(struct rw_end *e, struct rw_region *r, size_t len,
		  uint8_t fill)
{
	memset(r, 0, sizeof(*r));
	r->len = len;
	if (posix_memalign((void **)&r->mem, 64, len + 2 * RW_GUARD))
		return -1;
	memset(r->mem, RW_GUARD_BYTE, len + 2 * RW_GUARD);
	r->data = r->mem + RW_GUARD;
	memset(r->data, fill, len);
	r->mr = ibv_reg_mr(e->pd, r->mem, len + 2 * RW_GUARD,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
			   IBV_ACCESS_REMOTE_WRITE);
	if (!r->mr) {
		free(r->mem);
		r->mem = NULL;
		return -1;
	}
	r->rkey = r->mr->rkey;
	r->addr = (uintptr_t)r->data;
	return 0;
}

long rw_region_guard(const struct rw_region *r)
{
	size_t i;

	for (i = 0; i < RW_GUARD; i++) {
		if (r->mem[i] != RW_GUARD_BYTE)
			return (long)i;
		if (r->data[r->len + i] != RW_GUARD_BYTE)
			return (long)(RW_GUARD + r->len + i);
	}
	return -1;
}

void rw_region_free(struct rw_region *r)
{
	if (r->mr)
		ibv_dereg_mr(r->mr);
	free(r->mem);
	memset(r, 0, sizeof(*r));
}

/* ---- Words --------------------------------------------------------------- */

void rw_w32(struct rw_words *w, uint32_t v)
{
	uint8_t *p = w->b + w->n;

	if (w->n + 4 > sizeof(w->b))
		return;
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
	w->n += 4;
}

void rw_w64(struct rw_words *w, uint64_t v)
{
	rw_w32(w, (uint32_t)(v >> 32));
	rw_w32(w, (uint32_t)v);
}

void rw_wseg(struct rw_words *w, uint32_t handle, uint32_t len, uint64_t off)
{
	rw_w32(w, handle);
	rw_w32(w, len);
	rw_w64(w, off);
}

void rw_wbytes(struct rw_words *w, const void *p, size_t n)
{
	if (w->n + n > sizeof(w->b))
		n = sizeof(w->b) - w->n;
	memcpy(w->b + w->n, p, n);
	w->n += n;
}

bool rw_words_same(const uint8_t *got, size_t len, const struct rw_words *want,
		   char *why, size_t whylen)
{
	uint8_t g[4], w[4];
	size_t i;

	for (i = 0; i < want->n || i < len; i += 4) {
		memset(g, 0, 4);
		memset(w, 0, 4);
		memcpy(g, got + i, i < len ? (len - i < 4 ? len - i : 4) : 0);
		memcpy(w, want->b + i, i < want->n ?
		       (want->n - i < 4 ? want->n - i : 4) : 0);
		if (memcmp(g, w, 4) || (i < len) != (i < want->n)) {
			snprintf(why, whylen, "word %zu is 0x%02x%02x%02x%02x, "
				 "expected 0x%02x%02x%02x%02x (%zu octets, "
				 "expected %zu)", i / 4, g[0], g[1], g[2], g[3],
				 w[0], w[1], w[2], w[3], len, want->n);
			return false;
		}
	}
	if (len != want->n) {
		snprintf(why, whylen, "%zu octets, expected %zu", len, want->n);
		return false;
	}
	return true;
}

/* ---- Headers through the codec -------------------------------------- */

void rw_hdr_init(struct rw_hdr *b, uint32_t xid, uint32_t credit,
		 uint32_t proc)
{
	memset(&b->h, 0, sizeof(b->h));
	b->h.xid = xid;
	b->h.vers = UIW_RPCRDMA_VERSION;
	b->h.credit = credit;
	b->h.proc = proc;
	b->h.read_seg = b->rseg;
	b->h.write_seg = b->wseg;
	b->h.write_chunk = b->wchunk;
	b->h.reply_seg = b->pseg;
}

void rw_hdr_read(struct rw_hdr *b, uint32_t pos, uint32_t handle,
		 uint32_t len, uint64_t off)
{
	b->rseg[b->h.nread_seg++] = (struct uiw_rpcrdma_read_seg){
		pos, { handle, len, off } };
}

void rw_hdr_wchunk(struct rw_hdr *b)
{
	b->wchunk[b->h.nwrite_chunk++] = (struct uiw_rpcrdma_chunk){
		0, b->h.nwrite_seg, 0 };
}

void rw_hdr_wseg(struct rw_hdr *b, uint32_t handle, uint32_t len,
		 uint64_t off)
{
	b->wseg[b->h.nwrite_seg++] = (struct uiw_rpcrdma_seg){
		handle, len, off };
	b->wchunk[b->h.nwrite_chunk - 1].nseg++;
}

void rw_hdr_pseg(struct rw_hdr *b, uint32_t handle, uint32_t len,
		 uint64_t off)
{
	b->h.reply_present = true;
	b->pseg[b->h.nreply_seg++] = (struct uiw_rpcrdma_seg){
		handle, len, off };
}

enum uiw_rpcrdma_err rw_hdr_put(struct rw_words *w, const struct rw_hdr *b)
{
	enum uiw_rpcrdma_err e;
	size_t n;

	e = uiw_rpcrdma_encode(&b->h, w->b + w->n, sizeof(w->b) - w->n, &n);
	if (!e)
		w->n += n;
	return e;
}

enum uiw_rpcrdma_err rw_hdr_decode(struct rw_hdr *b, const void *msg,
				   size_t len)
{
	const struct uiw_rpcrdma_space sp = {
		b->rseg, 80, b->rchunk, 80, b->wseg, 40, b->wchunk, 12,
		b->pseg, 40 };

	return uiw_rpcrdma_decode(msg, len, &sp, &b->h);
}
