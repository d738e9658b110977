/*
 * The Responder (rr_xprt.h): a listener and its connections, driven
 * through file descriptors by one thread at a time (libtirpc's
 * svc_run), never blocking on the peer.
 *
 * Receives: opts.credits receive buffers stay posted.  A call that
 * arrives keeps the buffer it landed in (its Payload stream is read in
 * place) and a spare buffer from the pool is posted in its stead, so
 * the credits granted, the receives posted (RFC 8166 §3.3.1), do not
 * shrink while calls are being served; the buffer goes back to the
 * pool when the call is answered or dropped (a call with Read chunks:
 * once its inline octets are copied into place).  A Requester with more
 * calls in the air than granted finds no receive: the RNIC ends the
 * connection (RFC 5041 §7.1, "no buffer"), this end sees its receives
 * flushed, uiw_rr_recv says -ENOTCONN, and closing the connection
 * frees all it held; the listener and the other connections go on.
 * One whose calls being served here reach twice the grant, spares and
 * all, has its connection ended by this end the same way.
 *
 * Read chunks are pulled with RDMA Read (never more in flight than
 * the ORD negotiated) into an assembly buffer of the connection, in
 * place, around the inline octets (rr_plan.c says where); the call is
 * handed out once every Read has completed.  The assembly buffers held
 * at once are bounded (RR_ABUF_BUDGET); a call beyond waits for one.
 *
 * Idle, slow or hostile connections never deny service to the others:
 * what a Requester can make this end hold is bounded, timed out, and
 * shed oldest-first (rr_share.c).  Assembly memory is
 * bounded per connection and per listener; the connections of a
 * listener are bounded, the one idle the longest making room for a
 * new one; a connection with no call for idle_timeout_ms, or whose
 * RDMA Reads make no progress for RR_READ_WAIT_MS, is ended by a timer
 * in its epoll set.
 *
 * Replies: rr_reply_layout decides; Write chunk data is written from
 * the caller's memory (registered for the reply, or our own buffer's
 * registration when it lies in one), the Reply chunk's stream from a
 * staging buffer; the Send follows the Writes on the send queue.  When
 * Writes read the caller's memory, uiw_rr_reply waits for the Send's
 * completion (which follows theirs) before it gives that memory back:
 * a local wait, bounded by RR_REPLY_WAIT_MS, after which the
 * connection is ended.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "rr_conn.h"
#include "rr_plan.h"
#include "rr_share.h"

#define RR_SVC_MAX_ORD    16
#define RR_SVC_IRD        4
#define RR_ABUF_CACHE     4
/* Assembly buffers in use by one connection's calls, in max_calls: a
 * call beyond it waits until another gives its buffer back (a
 * Requester's Read chunks cannot make this end allocate without
 * bound). */
#define RR_ABUF_BUDGET    4
#define RR_ABUF_MIN       (64u << 10)
#define RR_SPARE_BATCH    16
#define RR_REPLY_WAIT_MS  10000
/* RDMA Reads in flight with none completing for this long: a Requester
 * that stopped answering them holds the call's assembly buffer; the
 * connection is ended (RFC 8166 §4.5.3, a chunk that cannot be read). */
#define RR_READ_WAIT_MS   RR_REPLY_WAIT_MS
#define RR_ERR_SENDS      8      /* send buffers beyond one per credit */

struct rr_abuf {
	struct rr_abuf *next;
	uint8_t *mem;
	size_t cap;
	struct ibv_mr *mr;
};

enum req_state { REQ_FREE, REQ_READING, REQ_READY, REQ_OUT };

struct rr_req {
	struct uiw_rr_req pub;
	struct rr_req *next;        /* free list, ready or Read queue */
	struct rr_req *all_next;
	struct uiw_rr_sconn *s;
	struct rr_buf *rbuf;
	struct rr_abuf *abuf;
	enum req_state state;
	unsigned next_read;         /* plan.read[] issued so far */
	uint64_t part;              /* of read[next_read], issued */
	unsigned wrs_posted, wrs_done;
	struct rr_plan plan;
};

struct uiw_rr_sconn {
	struct rr_conn k;
	struct uiw_rr_sconn *next;  /* the listener's lists */
	struct rr_share *sh;        /* the listener's */
	struct rr_member m;
	int tfd;                    /* timerfd */
	uint64_t timer_at;          /* tfd's deadline (ms), 0: disarmed */
	uint64_t read_ms;           /* the last RDMA Read's progress */
	uint64_t born;              /* the connection request (ms) */
	int epfd, evfd;
	bool ev_on;                 /* evfd readable */
	bool dead, established;
	bool in_recv;               /* inside uiw_rr_recv */
	char why[96];
	struct rr_req *req_free, *req_all;
	unsigned held;              /* calls being served */
	struct rr_req *ready_head, *ready_tail;
	struct rr_req *rd_head, *rd_tail;   /* with Reads to issue */
	unsigned reads_inflight;
	unsigned sq_used, sq_max;
	unsigned *send_wrs;         /* by send buffer idx: WRs it retires */
	bool *send_busy;
	struct rr_abuf *abufs;
	unsigned nabuf;
	uint64_t abuf_live;         /* octets of buffers calls hold */
	struct rr_req *mw_head, *mw_tail;   /* calls waiting for one */
	uint8_t *stage;
	size_t stage_cap;
	struct ibv_mr *stage_mr;
	struct rr_reply_layout lay;
	struct sockaddr_storage peer;
};

struct uiw_rr_listener {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	struct uiw_rr_opts o;
	struct rr_share *sh;
	int epfd, evfd;
	bool ev_on;
	struct uiw_rr_sconn *pending;
	struct uiw_rr_sconn *ready_head, *ready_tail;
};

static void evfd_set(int fd, bool *state, bool on)
{
	uint64_t v = 1;
	ssize_t r;

	if (*state == on)
		return;
	*state = on;
	r = on ? write(fd, &v, sizeof(v)) : read(fd, &v, sizeof(v));
	(void)r;        /* EAGAIN: already in that state */
}

/* ---- A connection's end ----------------------------------------------- */

static void sconn_die(struct uiw_rr_sconn *s, const char *why)
{
	if (s->dead)
		return;
	s->dead = true;
	rr_msg(s->why, sizeof(s->why), "%s", why);
	/* readable from now on: the next uiw_rr_recv says -ENOTCONN */
	evfd_set(s->evfd, &s->ev_on, true);
	/* its calls wait no more: the others' line moves on */
	if (s->sh)
		rr_share_unwait(s->sh, &s->m);
	if (s->k.qp) {
		struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };

		ibv_modify_qp(s->k.qp, &a, IBV_QP_STATE);
	}
}

/* Ended by this end's own decision (idle, shed, stalled): the
 * Requester hears it from the CM at once. */
static void sconn_end(struct uiw_rr_sconn *s, const char *why)
{
	if (s->dead)
		return;
	sconn_die(s, why);
	rdma_disconnect(s->k.id);
}

/* ---- A connection's timer: idle, or Reads that do not progress ---------- */

static void timer_arm(struct uiw_rr_sconn *s, uint64_t at)
{
	struct itimerspec its = {
		.it_value = { .tv_sec = (time_t)(at / 1000),
			      .tv_nsec = (long)(at % 1000) * 1000000L },
	};

	if (timerfd_settime(s->tfd, TFD_TIMER_ABSTIME, &its, NULL) == 0)
		s->timer_at = at;
}

/* The timer goes off at at or earlier (it is re-armed when it does). */
static void timer_need(struct uiw_rr_sconn *s, uint64_t at)
{
	if (!s->timer_at || at < s->timer_at)
		timer_arm(s, at);
}

static void timer_fire(struct uiw_rr_sconn *s, uint64_t now)
{
	uint64_t idle = __atomic_load_n(&s->m.idle_since, __ATOMIC_RELAXED);
	uint64_t limit = s->k.o.idle_timeout_ms, next = 0, v;
	ssize_t r = read(s->tfd, &v, sizeof(v));

	(void)r;
	s->timer_at = 0;
	if (s->reads_inflight && now - s->read_ms >= RR_READ_WAIT_MS) {
		sconn_end(s, "RDMA Reads of a Read chunk make no progress");
		return;
	}
	if (limit && idle && now - idle >= limit) {
		sconn_end(s, "idle for idle_timeout_ms");
		return;
	}
	if (s->reads_inflight)
		next = s->read_ms + RR_READ_WAIT_MS;
	if (limit) {
		/* busy: look again a whole period later */
		v = (idle ? idle : now) + limit;
		next = next && next < v ? next : v;
	}
	if (next)
		timer_arm(s, next);
}

/* ---- Buffers ------------------------------------------------------------ */

static void cache_free(struct uiw_rr_sconn *s);

/* Every registration of a connection goes through these two, which
 * keep the listener's count of them (uiw_rpcrdma_svc_usage: a test can
 * see that a connection gone left none behind). */
static struct ibv_mr *svc_reg_mr(struct uiw_rr_sconn *s, void *addr,
				 size_t len, int access)
{
	struct ibv_mr *mr = ibv_reg_mr(s->k.pd, addr, len, access);

	if (mr && s->sh)
		__atomic_add_fetch(rr_share_mr_tally(s->sh), 1,
				   __ATOMIC_RELAXED);
	return mr;
}

static void svc_dereg_mr(struct uiw_rr_sconn *s, struct ibv_mr *mr)
{
	ibv_dereg_mr(mr);
	if (s->sh)
		__atomic_sub_fetch(rr_share_mr_tally(s->sh), 1,
				   __ATOMIC_RELAXED);
}

/* An assembly buffer of need octets; NULL with *wait set when the
 * connection's budget is spent (another call will give one back), or
 * without when memory or registration failed.  The listener's budget
 * counts the buffers a connection holds and those it keeps. */
static struct rr_abuf *abuf_get(struct uiw_rr_sconn *s, uint64_t need,
				bool *wait)
{
	struct rr_abuf **p, **best = NULL, *a;
	size_t cap = need < RR_ABUF_MIN ? RR_ABUF_MIN : (size_t)need;
	bool ok, drop;

	*wait = s->abuf_live && s->abuf_live + cap >
		RR_ABUF_BUDGET * s->k.o.max_call;
	if (*wait) {
		/* not the listener's memory it waits for: out of its line */
		rr_share_unwait(s->sh, &s->m);
		return NULL;
	}
	for (p = &s->abufs; *p; p = &(*p)->next)
		if ((*p)->cap >= need && (!best || (*p)->cap < (*best)->cap))
			best = p;
	if (best) {
		a = *best;
		*best = a->next;
		s->nabuf--;
		rr_share_reuse(s->sh, &s->m, a->cap);
		s->abuf_live += a->cap;
		return a;
	}
	if (need > SIZE_MAX / 2)
		return NULL;
	ok = rr_share_take(s->sh, &s->m, cap, s->abuf_live != 0, &drop);
	if (drop)       /* its kept buffers, counted back to make room */
		cache_free(s);
	if (!ok) {
		*wait = true;
		return NULL;
	}
	if (!(a = calloc(1, sizeof(*a))) ||
	    posix_memalign((void **)&a->mem, 4096, cap)) {
		free(a);
		rr_share_give(s->sh, cap);
		return NULL;
	}
	a->cap = cap;
	/* RDMA Read's sink: REMOTE_WRITE on iWARP (RFC 5040 §4.4 tags
	 * the Read Response with it) */
	a->mr = svc_reg_mr(s, a->mem, a->cap, IBV_ACCESS_LOCAL_WRITE |
			   IBV_ACCESS_REMOTE_WRITE);
	if (!a->mr) {
		free(a->mem);
		free(a);
		rr_share_give(s->sh, cap);
		return NULL;
	}
	s->abuf_live += a->cap;
	return a;
}

static void abuf_free(struct uiw_rr_sconn *s, struct rr_abuf *a)
{
	svc_dereg_mr(s, a->mr);
	free(a->mem);
	free(a);
}

/* The kept buffers freed (counted back already). */
static void cache_free(struct uiw_rr_sconn *s)
{
	struct rr_abuf *a, *n;

	for (a = s->abufs; a; a = n) {
		n = a->next;
		abuf_free(s, a);
	}
	s->abufs = NULL;
	s->nabuf = 0;
}

static void abuf_put(struct uiw_rr_sconn *s, struct rr_abuf *a)
{
	s->abuf_live -= a->cap;
	/* kept for the next call, unless others wait for memory */
	if (!rr_share_keep(s->sh, &s->m, a->cap, s->nabuf < RR_ABUF_CACHE)) {
		abuf_free(s, a);
		return;
	}
	a->next = s->abufs;
	s->abufs = a;
	s->nabuf++;
}

/* A request for a call being served: from the free list, or a new one
 * (allocated once, kept until the connection goes). */
static struct rr_req *req_get(struct uiw_rr_sconn *s)
{
	struct rr_req *r = s->req_free;

	if (r) {
		s->req_free = r->next;
	} else {
		r = calloc(1, sizeof(*r));
		if (!r)
			return NULL;
		r->s = s;
		r->all_next = s->req_all;
		s->req_all = r;
	}
	r->next = NULL;
	r->rbuf = NULL;
	r->abuf = NULL;
	if (!s->held++)
		rr_share_idle(&s->m, 0);
	return r;
}

static void assemble(struct uiw_rr_sconn *s, struct rr_req *r);

/* Calls that waited for an assembly buffer on their way, while there
 * is one. */
static void mw_retry(struct uiw_rr_sconn *s)
{
	while (s->mw_head && !s->dead) {
		struct rr_req *w = s->mw_head;

		s->mw_head = w->next;
		if (!s->mw_head)
			s->mw_tail = NULL;
		assemble(s, w);
		if (s->mw_tail == w)    /* it waits again */
			break;
	}
}

/* Done with a call: its buffers back, the request to the free list,
 * and calls that waited for an assembly buffer on their way. */
static void req_release(struct uiw_rr_sconn *s, struct rr_req *r)
{
	bool had = r->abuf != NULL;

	if (r->abuf)
		abuf_put(s, r->abuf);
	r->abuf = NULL;
	if (r->rbuf)
		rr_pool_put(&s->k.rpool, r->rbuf);
	r->rbuf = NULL;
	r->state = REQ_FREE;
	r->next = s->req_free;
	s->req_free = r;
	if (!--s->held)
		rr_share_idle(&s->m, rr_now_ms());
	if (had)
		mw_retry(s);
}

static void repost(struct uiw_rr_sconn *s, struct rr_buf *b)
{
	if (s->dead || rr_conn_post_recv(&s->k, b) < 0)
		rr_pool_put(&s->k.rpool, b);
}

/* §3.3.1: the grant is the receives posted, never 0. */
static uint32_t grant(const struct uiw_rr_sconn *s)
{
	return s->k.posted ? s->k.posted : 1;
}

/* ---- Sending ------------------------------------------------------------ */

static struct rr_buf *sbuf_get(struct uiw_rr_sconn *s)
{
	return s->k.spool.free ? rr_pool_get(&s->k.spool, 0) : NULL;
}

static int post_send(struct uiw_rr_sconn *s, struct rr_buf *sb, size_t len,
		     unsigned wrs, bool inv, uint32_t rkey,
		     struct ibv_send_wr *first)
{
	struct ibv_send_wr *w;
	struct rr_wr send;

	/* The verbs API puts the STag to invalidate in invalidate_rkey;
	 * rdma-core 44 behaviour: the siw provider (libsiw's
	 * push_send_wqe) takes it from wr.rdma.rkey for every opcode and
	 * would send Send With Invalidate of STag 0, which the Requester
	 * must refuse with a Terminate (RFC 5040 §7.2).  Both fields
	 * carry it; other providers read wr.rdma only for RDMA and
	 * atomic operations. */
	rr_wr_init(&send, inv ? IBV_WR_SEND_WITH_INV : IBV_WR_SEND,
		   rr_wr_id(sb, RR_WR_SEND), sb->base, (uint32_t)len, sb->lkey,
		   0, inv ? rkey : 0, true);
	send.wr.invalidate_rkey = inv ? rkey : 0;
	if (first) {
		for (w = first; w->next; w = w->next)
			;
		w->next = &send.wr;
	}
	if (rr_post(s->k.qp, first ? first : &send.wr) < 0)
		return -1;
	s->send_wrs[sb->idx] = wrs + 1;
	s->send_busy[sb->idx] = true;
	s->sq_used += wrs + 1;
	return 0;
}

/* RDMA_ERROR (§4.5) about the call whose fixed words are in h. */
static void send_error(struct uiw_rr_sconn *s, const struct uiw_rpcrdma_hdr *h,
		       enum uiw_rpcrdma_act act)
{
	struct rr_buf *sb;
	int n;

	if (s->dead)
		return;
	if (s->sq_used >= s->sq_max || !(sb = sbuf_get(s))) {
		/* more errors at once than send buffers: this one goes
		 * unsaid (the Requester's call times out) */
		s->k.st.dropped++;
		return;
	}
	n = uiw_rpcrdma_encode_err_reply(h, act, grant(s), sb->base,
					 s->k.spool.size);
	if (n <= 0 || post_send(s, sb, (size_t)n, 0, false, 0, NULL) < 0) {
		rr_pool_put(&s->k.spool, sb);
		return;
	}
	s->k.st.rdma_errors_sent++;
}

/* ---- Receiving ---------------------------------------------------------- */

static void ready(struct uiw_rr_sconn *s, struct rr_req *r)
{
	r->state = REQ_READY;
	r->next = NULL;
	if (s->ready_tail) {
		s->ready_tail->next = r;
	} else {
		s->ready_head = r;
		/* a call that came while uiw_rr_reply waited on the CQ:
		 * the completion channel's event is gone, the fd must
		 * still say there is work (uiw_rr_recv sees to it
		 * itself) */
		if (!s->in_recv)
			evfd_set(s->evfd, &s->ev_on, true);
	}
	s->ready_tail = r;
}

/* A call whose Payload stream is assembled. */
static void assembled(struct uiw_rr_sconn *s, struct rr_req *r)
{
	const uint8_t *p = r->pub.call;

	/* §4.5.2: rdma_xid must be the RPC message's XID */
	if (r->plan.check_xid &&
	    ((uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	     (uint32_t)p[2] << 8 | p[3]) != r->plan.hdr.xid) {
		send_error(s, &r->plan.hdr, UIW_RPCRDMA_ACT_ERR_CHUNK);
		req_release(s, r);
		return;
	}
	ready(s, r);
}

static void issue_reads(struct uiw_rr_sconn *s)
{
	bool idle = !s->reads_inflight;

	while (s->rd_head && s->reads_inflight < s->k.ord &&
	       s->sq_used < s->sq_max && !s->dead) {
		struct rr_req *r = s->rd_head;
		const struct rr_read *rd = &r->plan.read[r->next_read];
		uint64_t n = rd->len - r->part;
		struct rr_wr w;

		if (n > s->k.max_msg)
			n = s->k.max_msg;
		rr_wr_init(&w, IBV_WR_RDMA_READ, rr_wr_id(r, RR_WR_READ),
			   r->abuf->mem + rd->dst + r->part, (uint32_t)n,
			   r->abuf->mr->lkey, rd->offset + r->part, rd->handle,
			   true);
		if (rr_post(s->k.qp, &w.wr) < 0) {
			sconn_die(s, "posting an RDMA Read failed");
			return;
		}
		s->reads_inflight++;
		s->sq_used++;
		r->wrs_posted++;
		r->part += n;
		if (r->part == rd->len) {
			r->part = 0;
			if (++r->next_read == r->plan.nread) {
				s->rd_head = r->next;
				if (!s->rd_head)
					s->rd_tail = NULL;
			}
		}
	}
	/* the first Reads in flight: the timer watches their progress */
	if (idle && s->reads_inflight) {
		s->read_ms = rr_now_ms();
		timer_need(s, s->read_ms + RR_READ_WAIT_MS);
	}
}

static void on_read(struct uiw_rr_sconn *s, struct rr_req *r,
		    const struct ibv_wc *wc)
{
	s->reads_inflight--;
	s->sq_used--;
	if (wc->status != IBV_WC_SUCCESS) {
		/* §4.5.3: a chunk we cannot read ends the connection */
		sconn_die(s, wc->status == IBV_WC_WR_FLUSH_ERR ?
			  "the connection ended" :
			  "an RDMA Read of a Read chunk failed");
		return;
	}
	s->read_ms = rr_now_ms();
	if (++r->wrs_done == r->wrs_posted && r->next_read == r->plan.nread)
		assembled(s, r);
	issue_reads(s);
}

static void on_call(struct uiw_rr_sconn *s, struct rr_buf *b,
		    const struct ibv_wc *wc)
{
	struct uiw_rr_stats *st = &s->k.st;
	struct rr_req *r;
	struct rr_plan *p;
	struct rr_buf *spare = NULL;
	unsigned i;

	/* more calls being served than twice the grant: a Requester
	 * beyond its credits.  Left unanswered, the call would leave the
	 * Requester waiting: the connection ends instead, so that it
	 * knows (RFC 8166 §4.5.4) */
	if (s->held >= 2 * s->k.o.credits || !(r = req_get(s))) {
		sconn_die(s, s->held >= 2 * s->k.o.credits ?
			  "the Requester holds more calls than granted "
			  "(RFC 8166 §3.3.1)" : "no memory for a call");
		repost(s, b);
		return;
	}
	p = &r->plan;
	rr_plan_call(b->base, wc->byte_len, s->k.o.max_call, p);
	if (p->act == UIW_RPCRDMA_ACT_PROCESS && p->nread && !s->k.ord) {
		p->act = UIW_RPCRDMA_ACT_ERR_CHUNK;
		p->why = "the connection allows no RDMA Read (ORD 0)";
	}
	if (p->act == UIW_RPCRDMA_ACT_PROCESS) {
		/* a spare takes the buffer's place on the RQ; without one
		 * the call would go unanswered (§4.5.4, as above) */
		spare = rr_pool_get(&s->k.rpool, RR_SPARE_BATCH);
		if (!spare) {
			sconn_die(s, "no memory for a receive buffer");
			repost(s, b);
			req_release(s, r);
			return;
		}
		repost(s, spare);
		r->rbuf = b;
		r->state = REQ_READING;
	} else {
		repost(s, b);
		if (p->act == UIW_RPCRDMA_ACT_DISCARD)
			st->dropped++;
		else
			send_error(s, &p->hdr, p->act);
		req_release(s, r);
		return;
	}
	st->calls++;
	st->long_calls += p->long_call;
	st->read_chunks += p->read_chunks;
	st->read_bytes += p->read_bytes;
	r->pub.xid = p->hdr.xid;
	r->pub.call_len = (size_t)p->call_len;
	r->pub.nwchunk = p->nwchunk;
	for (i = 0; i < p->nwchunk; i++)
		r->pub.wchunk_len[i] = p->wchunk[i].len;
	r->pub.reply_chunk_len = p->reply_present ? p->reply_len : 0;
	r->pub.priv_ = r;
	r->next_read = r->wrs_posted = r->wrs_done = 0;
	r->part = 0;
	if (p->in_place) {
		r->pub.call = b->base + p->payload_off;
		ready(s, r);
		return;
	}
	assemble(s, r);
}

/* The call's Payload stream put together in an assembly buffer: the
 * inline octets copied, the pads zeroed, the Reads queued. */
static void assemble(struct uiw_rr_sconn *s, struct rr_req *r)
{
	const struct rr_plan *p = &r->plan;
	struct rr_buf *b = r->rbuf;
	bool wait;
	unsigned i;

	if (!(r->abuf = abuf_get(s, p->call_len, &wait))) {
		if (wait) {
			r->next = NULL;
			if (s->mw_tail)
				s->mw_tail->next = r;
			else
				s->mw_head = r;
			s->mw_tail = r;
			return;
		}
		send_error(s, &p->hdr, UIW_RPCRDMA_ACT_ERR_CHUNK);
		req_release(s, r);
		return;
	}
	r->pub.call = r->abuf->mem;
	for (i = 0; i < p->ncopy; i++)
		memcpy(r->abuf->mem + p->copy[i].dst, b->base + p->copy[i].src,
		       p->copy[i].len);
	for (i = 0; i < p->nzero; i++)
		memset(r->abuf->mem + p->zero[i].dst, 0, p->zero[i].len);
	/* the received octets are in place: their buffer goes back */
	rr_pool_put(&s->k.rpool, b);
	r->rbuf = NULL;
	if (!p->nread) {
		assembled(s, r);
		return;
	}
	r->next = NULL;
	if (s->rd_tail)
		s->rd_tail->next = r;
	else
		s->rd_head = r;
	s->rd_tail = r;
	issue_reads(s);
}

static void on_send(struct uiw_rr_sconn *s, struct rr_buf *sb,
		    const struct ibv_wc *wc)
{
	s->sq_used -= s->send_wrs[sb->idx];
	s->send_wrs[sb->idx] = 0;
	s->send_busy[sb->idx] = false;
	rr_pool_put(&s->k.spool, sb);
	if (wc->status != IBV_WC_SUCCESS)
		sconn_die(s, wc->status == IBV_WC_WR_FLUSH_ERR ?
			  "the connection ended" : "a Send or RDMA Write failed");
}

static void on_wc(struct uiw_rr_sconn *s, const struct ibv_wc *wc)
{
	void *p = rr_wr_ptr(wc->wr_id);

	switch (rr_wr_kind(wc->wr_id)) {
	case RR_WR_RECV:
		s->k.posted--;
		if (wc->status != IBV_WC_SUCCESS) {
			rr_pool_put(&s->k.rpool, p);
			sconn_die(s, wc->status == IBV_WC_WR_FLUSH_ERR ?
				  "the connection ended" :
				  ibv_wc_status_str(wc->status));
			return;
		}
		if (s->dead) {
			rr_pool_put(&s->k.rpool, p);
			return;
		}
		on_call(s, p, wc);
		return;
	case RR_WR_READ:
		on_read(s, p, wc);
		return;
	case RR_WR_SEND:
		on_send(s, p, wc);
		return;
	default:
		if (wc->status != IBV_WC_SUCCESS)
			sconn_die(s, "an RDMA Write failed");
		return;
	}
}

static void on_cm(struct uiw_rr_sconn *s)
{
	struct rdma_cm_event *ev;

	while (rdma_get_cm_event(s->k.ch, &ev) == 0) {
		enum rdma_cm_event_type t = ev->event;

		if (t == RDMA_CM_EVENT_ESTABLISHED) {
			/* the ORD as established, when the CM says it */
			uint32_t ord = ev->param.conn.initiator_depth;

			if (ord && ord < s->k.ord)
				s->k.ord = ord;
			s->established = true;
			/* idle from here: no call could come before */
			if (!s->held)
				rr_share_idle(&s->m, rr_now_ms());
		}
		rdma_ack_cm_event(ev);
		if (t == RDMA_CM_EVENT_DISCONNECTED ||
		    t == RDMA_CM_EVENT_DEVICE_REMOVAL ||
		    t == RDMA_CM_EVENT_TIMEWAIT_EXIT ||
		    t == RDMA_CM_EVENT_CONNECT_ERROR ||
		    t == RDMA_CM_EVENT_REJECTED ||
		    t == RDMA_CM_EVENT_UNREACHABLE)
			sconn_die(s, rdma_event_str(t));
	}
}

/* Processes what the CQ holds; the number of completions. */
static int poll_cq(struct uiw_rr_sconn *s)
{
	struct ibv_wc wc[16];
	int n, i, total = 0;

	/* Until a poll returns fewer than asked: the CQ was empty then (a
	 * poll more would find it empty, and on the drop-in cost a read
	 * of the socket); every caller polls again before it sleeps. */
	do {
		n = ibv_poll_cq(s->k.cq, 16, wc);
		for (i = 0; i < n; i++)
			on_wc(s, &wc[i]);
		total += n > 0 ? n : 0;
	} while (n == 16);
	if (n < 0)
		sconn_die(s, "polling the completion queue failed");
	return total;
}

/* What other connections and the listener asked of this one. */
static void take_pokes(struct uiw_rr_sconn *s)
{
	unsigned what = rr_share_pokes(s->sh, &s->m);

	if (what & RR_POKE_SHED)
		sconn_end(s, "idle the longest when a new connection came "
			  "beyond max_conns");
	if (what & RR_POKE_TRIM) {
		rr_share_trim(s->sh, &s->m);
		cache_free(s);
	}
	if (what & RR_POKE_BUDGET)
		mw_retry(s);
}

int uiw_rr_recv(struct uiw_rr_sconn *s, struct uiw_rr_req **req)
{
	struct rr_req *r;

	*req = NULL;
	s->in_recv = true;
	take_pokes(s);
	if (!s->dead) {
		poll_cq(s);
		if (!s->ready_head) {
			/* arm, then look again: a completion before the arming
			 * raises no event */
			rr_conn_cq_events(&s->k);
			poll_cq(s);
			/* the CM's events when there is nothing else to do: an
			 * ended connection shows on the CQ too (its receives
			 * are flushed), so a call never waits for this */
			if (!s->ready_head)
				on_cm(s);
		}
	}
	/* after the CQ: a call that came is no idleness */
	if (s->timer_at && !s->dead) {
		uint64_t now = rr_now_ms();

		if (now >= s->timer_at)
			timer_fire(s, now);
	}
	s->in_recv = false;
	if (s->dead)
		return -ENOTCONN;
	if (!(r = s->ready_head)) {
		evfd_set(s->evfd, &s->ev_on, false);
		return -EAGAIN;
	}
	s->ready_head = r->next;
	if (!s->ready_head)
		s->ready_tail = NULL;
	r->state = REQ_OUT;
	*req = &r->pub;
	/* more waiting: keep the fd readable for the next round */
	evfd_set(s->evfd, &s->ev_on, s->ready_head != NULL);
	return 0;
}

static struct rr_req *req_check(struct uiw_rr_sconn *s, struct uiw_rr_req *req)
{
	struct rr_req *r = req ? req->priv_ : NULL;

	return r && r->s == s && r->state == REQ_OUT ? r : NULL;
}

void uiw_rr_drop(struct uiw_rr_sconn *s, struct uiw_rr_req *req)
{
	struct rr_req *r = req_check(s, req);

	if (r)
		req_release(s, r);
}

/* ---- Replying ----------------------------------------------------------- */

/*
 * Processes completions until done(s, arg): local completions of our
 * own Sends and Writes, which come soon.  Past RR_REPLY_WAIT_MS the
 * connection is ended, which flushes what is left; then done() holds
 * once the flushed completions are in.
 */
static void cq_wait(struct uiw_rr_sconn *s,
		    bool (*done)(struct uiw_rr_sconn *, const void *),
		    const void *arg)
{
	uint64_t end = rr_now_ms() + RR_REPLY_WAIT_MS;
	unsigned spins = 0;

	while (!done(s, arg)) {
		struct pollfd pfd = { .fd = s->k.cc->fd, .events = POLLIN };
		uint64_t now;

		if (poll_cq(s) || ++spins < 256)
			continue;
		rr_conn_cq_events(&s->k);
		if (poll_cq(s))
			continue;
		now = rr_now_ms();
		if (now >= end) {
			if (s->dead)
				return;
			sconn_die(s, "our Sends and RDMA Writes do not "
				  "complete");
			end = now + RR_REPLY_WAIT_MS;
		}
		if (poll(&pfd, 1, (int)(end - now)) < 0 && errno != EINTR)
			return;
	}
}

static bool send_done(struct uiw_rr_sconn *s, const void *sb)
{
	return !s->send_busy[((const struct rr_buf *)sb)->idx];
}

/* A send buffer free and room for *nwr more WRs on the send queue. */
static bool room(struct uiw_rr_sconn *s, const void *nwr)
{
	return s->dead || (s->k.spool.free &&
			   s->sq_used + *(const unsigned *)nwr <= s->sq_max);
}

/* Where piece v's octets can be read from by an RDMA Write: a buffer
 * of ours that holds them, or a registration made for this reply. */
static bool piece_lkey(struct uiw_rr_sconn *s, struct rr_req *r,
		       const struct uiw_rr_iov *v, uint32_t *lkey,
		       struct ibv_mr **mr)
{
	uintptr_t a = (uintptr_t)v->base;

	*mr = NULL;
	*lkey = 0;
	if (!v->len)
		return true;
	if (r->rbuf && a >= (uintptr_t)r->rbuf->base &&
	    a + v->len <= (uintptr_t)r->rbuf->base + s->k.rpool.size) {
		*lkey = r->rbuf->lkey;
		return true;
	}
	if (r->abuf && a >= (uintptr_t)r->abuf->mem &&
	    a + v->len <= (uintptr_t)r->abuf->mem + r->abuf->cap) {
		*lkey = r->abuf->mr->lkey;
		return true;
	}
	*mr = svc_reg_mr(s, (void *)v->base, v->len, 0);
	if (*mr)
		*lkey = (*mr)->lkey;
	return *mr != NULL;
}

static int stage_fit(struct uiw_rr_sconn *s, uint64_t need)
{
	if (s->stage_cap >= need)
		return 0;
	if (s->stage_mr)
		svc_dereg_mr(s, s->stage_mr);
	free(s->stage);
	s->stage_mr = NULL;
	s->stage_cap = 0;
	if (need > SIZE_MAX / 2 ||
	    posix_memalign((void **)&s->stage, 4096, (size_t)need)) {
		s->stage = NULL;
		return -1;
	}
	s->stage_mr = svc_reg_mr(s, s->stage, (size_t)need, 0);
	if (!s->stage_mr)
		return -1;
	s->stage_cap = (size_t)need;
	return 0;
}

static int reply_error(struct uiw_rr_sconn *s, struct rr_req *r, int err)
{
	send_error(s, &r->plan.hdr, UIW_RPCRDMA_ACT_ERR_CHUNK);
	req_release(s, r);
	errno = err;
	return -1;
}

int uiw_rr_reply_err_chunk(struct uiw_rr_sconn *s, struct uiw_rr_req *req)
{
	struct rr_req *r = req_check(s, req);

	if (!r) {
		errno = EINVAL;
		return -1;
	}
	reply_error(s, r, 0);
	return 0;
}

int uiw_rr_reply(struct uiw_rr_sconn *s, struct uiw_rr_req *req,
		 const struct uiw_rr_iov *iov, unsigned niov)
{
	struct rr_req *r = req_check(s, req);
	struct rr_reply_layout *l = &s->lay;
	struct uiw_rr_stats *st = &s->k.st;
	struct rr_wr wr[RR_MAX_WRITE];
	struct ibv_mr *mr[UIW_RR_MAX_WCHUNK] = { NULL };
	uint32_t lkey[UIW_RR_MAX_WCHUNK] = { 0 };
	struct rr_buf *sb;
	size_t hlen, len;
	unsigned i, k, nwr;
	bool inv;
	int ret = 0;

	if (!r) {
		errno = EINVAL;
		return -1;
	}
	if (s->dead) {
		req_release(s, r);
		errno = ENOTCONN;
		return -1;
	}
	if (!iov && niov)
		return reply_error(s, r, EINVAL);
	rr_reply_layout(&r->plan, iov, niov, s->k.send_thresh, grant(s), l);
	for (i = 0; i < l->nwrite; i++)
		if (l->write[i].len > s->k.max_msg)
			l->mode = RR_RMODE_ERR_CHUNK;
	if (l->mode == RR_RMODE_ERR_CHUNK)
		return reply_error(s, r, EMSGSIZE);
	/* a send buffer and room on the send queue: earlier replies'
	 * Sends complete locally, soon */
	nwr = l->nwrite + 1;
	cq_wait(s, room, &nwr);
	if (s->dead) {
		req_release(s, r);
		errno = ENOTCONN;
		return -1;
	}
	sb = sbuf_get(s);
	for (k = 0; k < UIW_RR_MAX_WCHUNK; k++)
		if (l->piece[k] >= 0 &&
		    !piece_lkey(s, r, &iov[l->piece[k]], &lkey[k], &mr[k]))
			ret = -1;
	if (!ret && l->mode == RR_RMODE_REPLY_CHUNK &&
	    (ret = stage_fit(s, l->stream_len)) == 0)
		rr_stream_copy(iov, niov, &l->ext, s->stage);
	if (ret) {
		rr_pool_put(&s->k.spool, sb);
		for (k = 0; k < UIW_RR_MAX_WCHUNK; k++)
			if (mr[k])
				svc_dereg_mr(s, mr[k]);
		return reply_error(s, r, ENOMEM);
	}
	/* the Writes: Write chunk data, then the Reply chunk's stream */
	for (i = 0; i < l->nwrite; i++) {
		const struct rr_write *w = &l->write[i];

		const uint8_t *src = s->stage + w->off;
		uint32_t key = s->stage_mr ? s->stage_mr->lkey : 0;

		if (w->iov >= 0) {
			for (k = 0; l->piece[k] != w->iov; k++)
				;
			src = (const uint8_t *)iov[w->iov].base + w->off;
			key = lkey[k];
		}
		rr_wr_init(&wr[i], IBV_WR_RDMA_WRITE,
			   rr_wr_id(NULL, RR_WR_WRITE), src, w->len, key,
			   w->offset, w->handle, false);
		wr[i].wr.next = i + 1 < l->nwrite ? &wr[i + 1].wr : NULL;
	}
	uiw_rpcrdma_encode(&l->hdr, sb->base, s->k.spool.size, &hlen);
	len = hlen;
	if (l->mode == RR_RMODE_INLINE) {
		rr_stream_copy(iov, niov, &l->ext, sb->base + hlen);
		len += l->stream_len;
	}
	/* RFC 8797 §4.1: Send With Invalidate of one of this XID's STags
	 * when both ends set R */
	inv = s->k.remote_inv && r->plan.has_rkey;
	if (post_send(s, sb, len, l->nwrite, inv, r->plan.rkey,
		      l->nwrite ? &wr[0].wr : NULL) < 0) {
		rr_pool_put(&s->k.spool, sb);
		sconn_die(s, "posting the reply failed");
		ret = -1;
	} else {
		st->replies++;
		st->remote_invalidations += inv;
		st->write_chunks += l->wchunks_used;
		st->write_bytes += l->wbytes;
		if (l->mode == RR_RMODE_INLINE) {
			st->inline_sends++;
			st->inline_bytes += l->stream_len;
		} else {
			st->long_replies++;
			st->reply_chunks++;
			st->reply_bytes += l->stream_len;
		}
		/* the Writes read the caller's memory (or the call's
		 * buffers): wait for them before giving it back */
		if (l->nwrite)
			cq_wait(s, send_done, sb);
		/* §4.5.4: a reply that did not get out ends the
		 * connection; the caller hears of it */
		if (s->dead)
			ret = -1;
	}
	for (k = 0; k < UIW_RR_MAX_WCHUNK; k++)
		if (mr[k])
			svc_dereg_mr(s, mr[k]);
	req_release(s, r);
	if (ret)
		errno = ENOTCONN;
	return ret;
}

/* ---- A connection ------------------------------------------------------- */

static void sconn_free(struct uiw_rr_sconn *s)
{
	struct rr_abuf *a, *n;
	struct rr_req *r, *rn;

	if (s->k.id && !s->dead)
		rdma_disconnect(s->k.id);
	if (s->k.qp)
		rdma_destroy_qp(s->k.id);
	s->k.qp = NULL;
	for (r = s->req_all; r; r = rn) {
		rn = r->all_next;
		if (r->abuf)
			abuf_free(s, r->abuf);
		free(r);
	}
	for (a = s->abufs; a; a = n) {
		n = a->next;
		abuf_free(s, a);
	}
	if (s->stage_mr)
		svc_dereg_mr(s, s->stage_mr);
	free(s->stage);
	if (s->sh) {
		/* the pools' registrations go with rr_conn_destroy below,
		 * after the share may be gone: counted out here */
		__atomic_sub_fetch(rr_share_mr_tally(s->sh),
				   s->k.rpool.nmr + s->k.spool.nmr,
				   __ATOMIC_RELAXED);
		s->k.rpool.mr_tally = s->k.spool.mr_tally = NULL;
		rr_share_leave(s->sh, &s->m, s->abuf_live + s->m.kept);
	}
	free(s->send_wrs);
	free(s->send_busy);
	rr_conn_destroy(&s->k);
	if (s->epfd >= 0)
		close(s->epfd);
	if (s->evfd >= 0)
		close(s->evfd);
	if (s->m.wakefd >= 0)
		close(s->m.wakefd);
	if (s->tfd >= 0)
		close(s->tfd);
	free(s);
}

static int ep_add(int epfd, int fd, void *ptr)
{
	struct epoll_event e = { .events = EPOLLIN, .data.ptr = ptr };

	return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &e);
}

/* A connection request: the verbs objects, the receives, the accept. */
static struct uiw_rr_sconn *sconn_new(struct uiw_rr_listener *l,
				      struct rdma_cm_event *ev)
{
	struct uiw_rr_sconn *s = calloc(1, sizeof(*s));
	struct rdma_cm_id *id = ev->id;
	struct rdma_conn_param cp;
	uint8_t pd[256];
	size_t pdlen = ev->param.conn.private_data ?
		ev->param.conn.private_data_len : 0;
	uint32_t peer_ird = ev->param.conn.initiator_depth;
	uint32_t peer_ord = ev->param.conn.responder_resources;
	unsigned nsend;
	char err[128];

	if (pdlen)
		memcpy(pd, ev->param.conn.private_data, pdlen);
	rdma_ack_cm_event(ev);
	if (!s) {
		rdma_reject(id, NULL, 0);
		rdma_destroy_id(id);
		return NULL;
	}
	s->epfd = s->evfd = s->m.wakefd = s->tfd = -1;
	s->born = rr_now_ms();
	s->k.id = id;
	id->context = s;
	if (rr_conn_opts(&s->k, &l->o, err, sizeof(err)) < 0)
		goto fail;
	/* RFC 8797 §5: the Requester's private data, or the defaults */
	rr_conn_peer(&s->k, pdlen ? pd : NULL, pdlen);
	/* Reads we may issue: what the Requester answers (its IRD).  Both
	 * 0 is a peer that said nothing (MPA revision 1 has no RFC 6581
	 * word: RFC 5044 leaves IRD and ORD to the ULPs), not one that
	 * refuses RDMA Reads (a Requester always answers them: its Read
	 * chunks are there to be read, RFC 8166 §3.4.5); take our own. */
	if (!peer_ird && !peer_ord) {
		peer_ird = RR_SVC_MAX_ORD;
		peer_ord = RR_SVC_IRD;
	}
	s->k.ord = peer_ird < RR_SVC_MAX_ORD ? peer_ird : RR_SVC_MAX_ORD;
	s->k.ird = peer_ord < RR_SVC_IRD ? peer_ord : RR_SVC_IRD;
	s->k.ch = rdma_create_event_channel();
	if (!s->k.ch || rr_nonblock(s->k.ch->fd) < 0 ||
	    rdma_migrate_id(id, s->k.ch))
		goto fail;
	nsend = s->k.o.credits + RR_ERR_SENDS;
	s->sq_max = nsend + RR_SVC_MAX_ORD + RR_MAX_WRITE;
	if (rr_conn_verbs(&s->k, s->k.o.credits, s->sq_max, s->k.o.credits,
			  nsend, err, sizeof(err)) < 0)
		goto fail;
	s->send_wrs = calloc(s->k.spool.count, sizeof(*s->send_wrs));
	s->send_busy = calloc(s->k.spool.count, sizeof(*s->send_busy));
	s->epfd = epoll_create1(EPOLL_CLOEXEC);
	s->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	s->m.wakefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	s->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (!s->send_wrs || !s->send_busy || s->epfd < 0 || s->evfd < 0 ||
	    s->m.wakefd < 0 || s->tfd < 0 ||
	    ep_add(s->epfd, s->k.cc->fd, NULL) || ep_add(s->epfd, s->k.ch->fd,
							 NULL) ||
	    ep_add(s->epfd, s->evfd, NULL) || ep_add(s->epfd, s->m.wakefd, NULL) ||
	    ep_add(s->epfd, s->tfd, NULL))
		goto fail;
	s->sh = l->sh;
	rr_share_join(s->sh, &s->m);
	s->k.rpool.mr_tally = s->k.spool.mr_tally = rr_share_mr_tally(s->sh);
	__atomic_add_fetch(s->k.rpool.mr_tally,
			   s->k.rpool.nmr + s->k.spool.nmr, __ATOMIC_RELAXED);
	rr_share_idle(&s->m, s->born);
	if (s->k.o.idle_timeout_ms)
		timer_arm(s, s->born + s->k.o.idle_timeout_ms);
	/* the address union of rdma_cm holds a sockaddr_storage */
	memcpy(&s->peer, rdma_get_peer_addr(id), sizeof(s->peer));
	rr_conn_param(&s->k, &cp);
	if (rdma_accept(id, &cp))
		goto fail;
	return s;
fail:
	rdma_reject(id, NULL, 0);
	s->dead = true;
	sconn_free(s);
	return NULL;
}

void uiw_rr_sconn_close(struct uiw_rr_sconn *s)
{
	if (s)
		sconn_free(s);
}

int uiw_rr_sconn_fd(struct uiw_rr_sconn *s)
{
	return s->epfd;
}

void uiw_rr_sconn_stats(struct uiw_rr_sconn *s, struct uiw_rr_stats *st)
{
	*st = s->k.st;
}

int uiw_rr_sconn_peer(struct uiw_rr_sconn *s, struct sockaddr_storage *ss)
{
	*ss = s->peer;
	return 0;
}

struct rr_conn *rr_sconn_conn(struct uiw_rr_sconn *s)
{
	return &s->k;
}

struct rr_share *rr_listener_share(struct uiw_rr_listener *l)
{
	return l->sh;
}

const char *rr_sconn_why(struct uiw_rr_sconn *s)
{
	return s->why;
}

const struct rr_plan *rr_req_plan(const struct uiw_rr_req *req)
{
	return &((const struct rr_req *)req->priv_)->plan;
}

/* ---- The listener ------------------------------------------------------- */

struct uiw_rr_listener *uiw_rr_listen(const struct sockaddr *sa,
				      socklen_t salen,
				      const struct uiw_rr_opts *o,
				      char *err, size_t errlen)
{
	struct uiw_rr_listener *l = calloc(1, sizeof(*l));
	struct rr_conn probe;
	int e;

	if (!l) {
		rr_msg(err, errlen, "out of memory");
		errno = ENOMEM;
		return NULL;
	}
	l->epfd = l->evfd = -1;
	memset(&probe, 0, sizeof(probe));
	if (rr_conn_opts(&probe, o, err, errlen) < 0) {
		free(l);
		return NULL;
	}
	l->o = probe.o;
	/* the Responder's own: a call of max_call must fit */
	if (l->o.listen_budget < l->o.max_call || !l->o.max_conns) {
		rr_msg(err, errlen, "listen_budget %llu under max_call %llu, "
		       "or max_conns 0", (unsigned long long)l->o.listen_budget,
		       (unsigned long long)l->o.max_call);
		errno = EINVAL;
		goto fail;
	}
	if (!(l->sh = rr_share_new(&l->o, RR_ABUF_MIN))) {
		rr_msg(err, errlen, "out of memory");
		errno = ENOMEM;
		goto fail;
	}
	if (!sa || salen < sizeof(sa->sa_family)) {
		rr_msg(err, errlen, "no address to listen on");
		errno = EINVAL;
		goto fail;
	}
	l->ch = rdma_create_event_channel();
	if (!l->ch || rr_nonblock(l->ch->fd) < 0 ||
	    rdma_create_id(l->ch, &l->id, l, RDMA_PS_TCP)) {
		rr_msg(err, errlen, "rdma_cm: %s", strerror(errno));
		goto fail;
	}
	if (rdma_bind_addr(l->id, (struct sockaddr *)sa) ||
	    rdma_listen(l->id, 64)) {
		rr_msg(err, errlen, "listening: %s", strerror(errno));
		goto fail;
	}
	l->epfd = epoll_create1(EPOLL_CLOEXEC);
	l->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (l->epfd < 0 || l->evfd < 0 || ep_add(l->epfd, l->ch->fd, NULL) ||
	    ep_add(l->epfd, l->evfd, NULL)) {
		rr_msg(err, errlen, "epoll: %s", strerror(errno));
		goto fail;
	}
	return l;
fail:
	e = errno;
	uiw_rr_listener_close(l);
	errno = e;
	return NULL;
}

int uiw_rr_listener_fd(struct uiw_rr_listener *l)
{
	return l->epfd;
}

int uiw_rr_listener_addr(struct uiw_rr_listener *l,
			 struct sockaddr_storage *ss)
{
	struct sockaddr *a = rdma_get_local_addr(l->id);

	memset(ss, 0, sizeof(*ss));
	memcpy(ss, a, a->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) :
	       sizeof(struct sockaddr_in));
	return 0;
}

static void pending_del(struct uiw_rr_listener *l, struct uiw_rr_sconn *s)
{
	struct uiw_rr_sconn **p;

	for (p = &l->pending; *p; p = &(*p)->next)
		if (*p == s) {
			*p = s->next;
			break;
		}
	s->next = NULL;
	epoll_ctl(l->epfd, EPOLL_CTL_DEL, s->k.ch->fd, NULL);
}

struct uiw_rr_sconn *uiw_rr_accept(struct uiw_rr_listener *l)
{
	struct uiw_rr_sconn *s, *n;
	struct rdma_cm_event *ev;
	uint64_t now;

	while (rdma_get_cm_event(l->ch, &ev) == 0) {
		if (ev->event != RDMA_CM_EVENT_CONNECT_REQUEST) {
			rdma_ack_cm_event(ev);
			continue;
		}
		if (!rr_share_admit(l->sh)) {
			/* max_conns, all busy: the Requester is refused */
			struct rdma_cm_id *id = ev->id;

			rdma_ack_cm_event(ev);
			rdma_reject(id, NULL, 0);
			rdma_destroy_id(id);
			continue;
		}
		s = sconn_new(l, ev);     /* acknowledges ev */
		if (!s)
			continue;
		s->next = l->pending;
		l->pending = s;
		ep_add(l->epfd, s->k.ch->fd, s);
	}
	/* connections being set up: established, or gone (a Requester
	 * that never completes the set-up holds one of max_conns: it has
	 * connect_timeout_ms, looked at whenever a request comes) */
	now = rr_now_ms();
	for (s = l->pending; s; s = n) {
		n = s->next;
		on_cm(s);
		if (!s->established && l->o.connect_timeout_ms &&
		    now - s->born >= l->o.connect_timeout_ms)
			sconn_end(s, "not established within "
				  "connect_timeout_ms");
		if (!s->established && !s->dead)
			continue;
		pending_del(l, s);
		if (s->dead) {
			sconn_free(s);
			continue;
		}
		if (l->ready_tail)
			l->ready_tail->next = s;
		else
			l->ready_head = s;
		l->ready_tail = s;
	}
	if (!(s = l->ready_head)) {
		evfd_set(l->evfd, &l->ev_on, false);
		errno = EAGAIN;
		return NULL;
	}
	l->ready_head = s->next;
	if (!l->ready_head)
		l->ready_tail = NULL;
	s->next = NULL;
	rr_share_handed(l->sh, &s->m);     /* from now on, it may be shed */
	evfd_set(l->evfd, &l->ev_on, l->ready_head != NULL);
	return s;
}

void uiw_rr_listener_close(struct uiw_rr_listener *l)
{
	struct uiw_rr_sconn *s;

	if (!l)
		return;
	while ((s = l->pending)) {
		pending_del(l, s);
		sconn_free(s);
	}
	while ((s = l->ready_head)) {
		l->ready_head = s->next;
		sconn_free(s);
	}
	if (l->id)
		rdma_destroy_id(l->id);
	if (l->ch)
		rdma_destroy_event_channel(l->ch);
	if (l->epfd >= 0)
		close(l->epfd);
	if (l->evfd >= 0)
		close(l->evfd);
	/* the connections handed out keep it */
	if (l->sh)
		rr_share_put(l->sh);
	free(l);
}
