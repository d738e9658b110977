/*
 * The Requester (rr_xprt.h): calls over one RPC-over-RDMA connection
 * from any number of threads.
 *
 * Each call takes a slot: its send buffer (registered once), the
 * memory it offers, and, once its reply has come, the receive buffer
 * holding it.  Slots awaiting a reply are in a table by XID.
 *
 * Completions are processed by the waiting callers themselves: one at
 * a time holds the poller's role, polls the CQ (spinning a little,
 * then blocking on the completion channel, the CM channel and a wake
 * fd), and hands each reply to its caller through that caller's
 * condition variable; when it leaves, it hands the role to another
 * waiter.  No thread of our own, and a NULL call's reply reaches its
 * caller without a context switch when the caller is the poller.
 *
 * Credits (RFC 8166 §3.3.1): a call is sent only while fewer calls hold
 * a credit than the last grant allows (1 before the first reply,
 * §3.3.3; a grant of 0 counts as 1; never more than opts.credits).  A
 * call that times out keeps its credit and its place in the table: the
 * Responder may still hold its receive and answer (§3.3.1 counts it
 * unacknowledged until then); its late reply is dropped, counted, and
 * frees the credit.  Should every credit be held by such calls (a
 * Responder that drops calls), the oldest is forgotten so that the
 * connection keeps going; RR_RECV_SLACK spare receives take the late
 * replies of forgotten calls.
 *
 * Receives (§3.3.1: "A Requester MUST maintain enough receive
 * resources"): before a call is sent, receives are posted up to the
 * calls in the table plus RR_RECV_SLACK.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "rr_conn.h"
#include "rr_plan.h"

#define RR_RECV_SLACK   8
#define RR_SLOT_BATCH   16
#define RR_BUCKETS      256
/* MRs of the caller's memory one call registers: its Read pieces and
 * Write chunks. */
#define RR_SLOT_MR      (RR_CALL_MAX_SEG + UIW_RR_MAX_WCHUNK)
/* How long the poller spins on the CQ before it sleeps (µs). */
#define RR_SPIN_US      60

/* Pollers of all the process's connections spinning at once: at most
 * half the CPUs (one at least), so that the threads a reply needs (the
 * Responder's, the progress threads) still find a CPU when many callers
 * wait at once; a poller that finds the spinners' seats taken sleeps at
 * once. */
static atomic_uint rr_spinners;
static unsigned rr_spin_seats;
static pthread_once_t rr_spin_once = PTHREAD_ONCE_INIT;

static void spin_seats(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	rr_spin_seats = n > 2 ? (unsigned)(n / 2) : 1;
}

static bool spin_take(void)
{
	unsigned n;

	pthread_once(&rr_spin_once, spin_seats);
	n = atomic_load_explicit(&rr_spinners, memory_order_relaxed);
	while (n < rr_spin_seats)
		if (atomic_compare_exchange_weak(&rr_spinners, &n, n + 1))
			return true;
	return false;
}
/* The timeout of one rdma_resolve_addr; attempts repeat until the
 * connection's deadline (resolve_addr). */
#define RR_RESOLVE_TRY_MS 1000

struct rr_waiter {
	pthread_cond_t cv;
	struct rr_waiter *next, *prev;
	bool credit;                /* waits for a credit */
};

enum slot_state { SLOT_FREE, SLOT_LIVE, SLOT_DONE, SLOT_ZOMBIE };

struct rr_slot {
	struct rr_slot *next;       /* free list or zombie queue */
	struct rr_slot *hnext;      /* table chain */
	struct rr_slot *all_next;
	uint32_t xid;
	enum slot_state state;
	bool in_table, credit, caller, send_pending;
	struct rr_waiter *w;
	struct rr_buf *sbuf;
	/* memory offered by this call: the caller's, and ours (the
	 * staging buffer of a Long Call, the Reply chunk; their memory
	 * is kept from call to call) */
	struct ibv_mr *mr[RR_SLOT_MR];
	unsigned nmr;
	struct ibv_mr *stage_mr, *reply_mr;
	uint8_t *stage;
	size_t stage_cap;
	uint8_t *rbuf_mem;
	size_t rbuf_cap;
	struct rr_offer offer;
	/* the reply, as the poller found it */
	struct rr_buf *rbuf;
	uint32_t rlen;
	bool with_inv;
	uint32_t inv_rkey;
	enum uiw_rr_status dead_status;
};

struct uiw_rr_clnt {
	struct rr_conn k;
	pthread_mutex_t mu;
	pthread_cond_t idle;        /* close waits for callers to leave */
	int wakefd;
	bool dead, closing, polling;
	char why[96];
	unsigned active;            /* callers inside uiw_rr_call */
	struct rr_waiter *waiters;
	uint32_t grant;
	unsigned outstanding, live, zombies, table, peak;
	uint64_t over_grant;
	struct rr_slot *zq_head, *zq_tail;
	struct rr_slot *bucket[RR_BUCKETS];
	struct rr_slot *free_slots, *all_slots;
	unsigned max_recv;
	struct rr_reply_space rsp;  /* the poller's */
};

/* ---- Waiters ---------------------------------------------------------- */

static void waiter_link(struct uiw_rr_clnt *c, struct rr_waiter *w)
{
	w->prev = NULL;
	w->next = c->waiters;
	if (c->waiters)
		c->waiters->prev = w;
	c->waiters = w;
}

static void waiter_unlink(struct uiw_rr_clnt *c, struct rr_waiter *w)
{
	if (w->prev)
		w->prev->next = w->next;
	else
		c->waiters = w->next;
	if (w->next)
		w->next->prev = w->prev;
}

static void kick_all(struct uiw_rr_clnt *c, bool credit_only)
{
	struct rr_waiter *w;

	for (w = c->waiters; w; w = w->next)
		if (!credit_only || w->credit)
			pthread_cond_signal(&w->cv);
}

static void wake_poller(struct uiw_rr_clnt *c)
{
	uint64_t one = 1;
	/* EAGAIN: the counter is full, the poller wakes all the same */
	ssize_t r = write(c->wakefd, &one, sizeof(one));

	(void)r;
}

static uint64_t now_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000u + (uint64_t)t.tv_nsec / 1000u;
}

static void cond_init(pthread_cond_t *cv)
{
	pthread_condattr_t ca;

	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(cv, &ca);
	pthread_condattr_destroy(&ca);
}

/* ---- The table -------------------------------------------------------- */

static struct rr_slot **bucket_of(struct uiw_rr_clnt *c, uint32_t xid)
{
	return &c->bucket[(xid ^ xid >> 8) & (RR_BUCKETS - 1)];
}

static struct rr_slot *lookup(struct uiw_rr_clnt *c, uint32_t xid)
{
	struct rr_slot *s;

	for (s = *bucket_of(c, xid); s; s = s->hnext)
		if (s->xid == xid)
			return s;
	return NULL;
}

static void table_add(struct uiw_rr_clnt *c, struct rr_slot *s)
{
	struct rr_slot **b = bucket_of(c, s->xid);

	s->hnext = *b;
	*b = s;
	s->in_table = true;
	c->table++;
}

static void table_del(struct uiw_rr_clnt *c, struct rr_slot *s)
{
	struct rr_slot **p;

	if (!s->in_table)
		return;
	for (p = bucket_of(c, s->xid); *p; p = &(*p)->hnext)
		if (*p == s) {
			*p = s->hnext;
			break;
		}
	s->in_table = false;
	c->table--;
}

static void credit_put(struct uiw_rr_clnt *c, struct rr_slot *s)
{
	if (!s->credit)
		return;
	s->credit = false;
	c->outstanding--;
	kick_all(c, true);
}

static unsigned limit(const struct uiw_rr_clnt *c)
{
	return c->grant < c->k.o.credits ? c->grant : c->k.o.credits;
}

/* RFC 8166 §4.4.1: the Responder loses access to the caller's memory
 * before the caller has it back. */
static void dereg_caller(struct rr_slot *s)
{
	unsigned i;

	for (i = 0; i < s->nmr; i++)
		ibv_dereg_mr(s->mr[i]);
	s->nmr = 0;
}

static void dereg_own(struct rr_slot *s)
{
	if (s->stage_mr)
		ibv_dereg_mr(s->stage_mr);
	if (s->reply_mr)
		ibv_dereg_mr(s->reply_mr);
	s->stage_mr = s->reply_mr = NULL;
}

static void slot_maybe_free(struct uiw_rr_clnt *c, struct rr_slot *s)
{
	if (s->in_table || s->caller || s->send_pending ||
	    s->state == SLOT_FREE)
		return;
	dereg_caller(s);
	dereg_own(s);
	s->state = SLOT_FREE;
	s->next = c->free_slots;
	c->free_slots = s;
}

static void zombie_unqueue(struct uiw_rr_clnt *c, struct rr_slot *s)
{
	struct rr_slot **p, *prev = NULL;

	for (p = &c->zq_head; *p; prev = *p, p = &(*p)->next)
		if (*p == s) {
			*p = s->next;
			if (c->zq_tail == s)
				c->zq_tail = prev;
			c->zombies--;
			return;
		}
}

/* A timed-out call leaves the table: its late reply arrived, it is
 * forgotten, or the connection ended. */
static void zombie_end(struct uiw_rr_clnt *c, struct rr_slot *s)
{
	zombie_unqueue(c, s);
	table_del(c, s);
	credit_put(c, s);
	dereg_own(s);
	s->state = SLOT_DONE;
	slot_maybe_free(c, s);
}

/* ---- The connection's end ---------------------------------------------- */

static void die(struct uiw_rr_clnt *c, const char *why)
{
	unsigned i;

	if (c->dead)
		return;
	c->dead = true;
	rr_msg(c->why, sizeof(c->why), "%s", why);
	for (i = 0; i < RR_BUCKETS; i++)
		while (c->bucket[i]) {
			struct rr_slot *s = c->bucket[i];

			if (s->state == SLOT_ZOMBIE) {
				zombie_end(c, s);
				continue;
			}
			table_del(c, s);
			credit_put(c, s);
			c->live--;
			s->state = SLOT_DONE;
			s->dead_status = UIW_RR_DISCONNECTED;
		}
	kick_all(c, false);
	wake_poller(c);
}

/* ---- Completions ------------------------------------------------------ */

static void repost(struct uiw_rr_clnt *c, struct rr_buf *b)
{
	if (c->dead || rr_conn_post_recv(&c->k, b) < 0)
		rr_pool_put(&c->k.rpool, b);
}

static void on_reply(struct uiw_rr_clnt *c, struct rr_buf *b,
		     const struct ibv_wc *wc)
{
	struct uiw_rpcrdma_hdr h;
	struct rr_slot *s;
	const char *why;

	if (rr_reply_decode(b->base, wc->byte_len, &c->rsp, &h, &why) ==
	    RR_REPLY_DROP || !(s = lookup(c, h.xid))) {
		/* §4.5: an undecodable reply is discarded; so is one for
		 * no call of ours */
		c->k.st.dropped++;
		repost(c, b);
		return;
	}
	/* §3.3.1: the grant may change with every reply; 0 counts as 1 */
	c->grant = h.credit ? h.credit : 1;
	kick_all(c, true);
	if (s->state == SLOT_ZOMBIE) {
		c->k.st.dropped++;
		rr_pool_put(&c->k.rpool, b);
		zombie_end(c, s);
		return;
	}
	s->rbuf = b;
	s->rlen = wc->byte_len;
	s->with_inv = wc->wc_flags & IBV_WC_WITH_INV;
	s->inv_rkey = wc->invalidated_rkey;
	s->state = SLOT_DONE;
	table_del(c, s);
	credit_put(c, s);
	c->live--;
	if (s->w)
		pthread_cond_signal(&s->w->cv);
}

static void on_wc(struct uiw_rr_clnt *c, const struct ibv_wc *wc)
{
	void *p = rr_wr_ptr(wc->wr_id);

	switch (rr_wr_kind(wc->wr_id)) {
	case RR_WR_RECV:
		c->k.posted--;
		if (wc->status != IBV_WC_SUCCESS) {
			rr_pool_put(&c->k.rpool, p);
			break;
		}
		on_reply(c, p, wc);
		return;
	case RR_WR_SEND: {
		struct rr_slot *s = p;

		s->send_pending = false;
		slot_maybe_free(c, s);
		break;
	}
	default:
		break;
	}
	if (wc->status != IBV_WC_SUCCESS)
		die(c, wc->status == IBV_WC_WR_FLUSH_ERR ?
		    "the connection ended (work requests flushed)" :
		    ibv_wc_status_str(wc->status));
}

static void on_cm(struct uiw_rr_clnt *c)
{
	struct rdma_cm_event *ev;

	while (rdma_get_cm_event(c->k.ch, &ev) == 0) {
		enum rdma_cm_event_type t = ev->event;

		rdma_ack_cm_event(ev);
		if (t == RDMA_CM_EVENT_DISCONNECTED ||
		    t == RDMA_CM_EVENT_DEVICE_REMOVAL ||
		    t == RDMA_CM_EVENT_TIMEWAIT_EXIT) {
			pthread_mutex_lock(&c->mu);
			die(c, "the Responder disconnected");
			pthread_mutex_unlock(&c->mu);
		}
	}
}

/* The poller's turn, without c->mu: until some completion has been
 * processed, an event came, or the deadline. */
static void poll_turn(struct uiw_rr_clnt *c, uint64_t deadline)
{
	struct ibv_wc wc[16];
	struct pollfd pfd[3] = {
		{ .fd = c->k.cc->fd, .events = POLLIN },
		{ .fd = c->k.ch->fd, .events = POLLIN },
		{ .fd = c->wakefd, .events = POLLIN },
	};
	uint64_t spin_end = 0, t;
	unsigned spins = 0;
	bool seat = false;
	int n, i, wait = -1;

	for (;;) {
		n = ibv_poll_cq(c->k.cq, 16, wc);
		if (n)
			break;
		if (!seat && !(seat = spin_take()))
			break;
		if (++spins % 32)
			continue;
		t = now_us();
		if (!spin_end)
			spin_end = t + RR_SPIN_US;
		else if (t >= spin_end)
			break;
	}
	if (seat)
		atomic_fetch_sub(&rr_spinners, 1);
	if (!n) {
		/* sleep: arm the CQ, then look once more (a completion that
		 * came before the arming raises no event) */
		rr_conn_cq_events(&c->k);
		n = ibv_poll_cq(c->k.cq, 16, wc);
	}
	if (!n) {
		if (deadline) {
			uint64_t now = rr_now_ms();

			wait = now >= deadline ? 0 : (int)(deadline - now);
		}
		if (poll(pfd, 3, wait) > 0) {
			/* awake: the CQ is armed again only before the next
			 * sleep, so that the polls until then may receive
			 * themselves (the drop-in's poll mode) */
			if (pfd[0].revents)
				rr_conn_cq_take(&c->k);
			if (pfd[1].revents)
				on_cm(c);
			if (pfd[2].revents) {
				uint64_t v;

				if (read(c->wakefd, &v, sizeof(v)) < 0)
					v = 0;
			}
		}
		n = ibv_poll_cq(c->k.cq, 16, wc);
	}
	if (n == 0)
		return;
	pthread_mutex_lock(&c->mu);
	if (n < 0)
		die(c, "polling the completion queue failed");
	for (i = 0; i < n; i++)
		on_wc(c, &wc[i]);
	pthread_mutex_unlock(&c->mu);
}

/*
 * Waits, with c->mu held, until done(c, arg), the deadline (0: none) or
 * the connection's end; polls the CQ itself while no other thread does.
 * True when done.
 */
static bool wait_for(struct uiw_rr_clnt *c, struct rr_waiter *w,
		     bool (*done)(struct uiw_rr_clnt *, void *), void *arg,
		     uint64_t deadline)
{
	bool ok;

	waiter_link(c, w);
	for (;;) {
		if ((ok = done(c, arg)) || c->dead)
			break;
		if (deadline && rr_now_ms() >= deadline)
			break;
		if (!c->polling) {
			c->polling = true;
			pthread_mutex_unlock(&c->mu);
			poll_turn(c, deadline);
			pthread_mutex_lock(&c->mu);
			c->polling = false;
			continue;
		}
		if (deadline) {
			struct timespec ts = {
				.tv_sec = (time_t)(deadline / 1000),
				.tv_nsec = (long)(deadline % 1000) * 1000000L };

			pthread_cond_timedwait(&w->cv, &c->mu, &ts);
		} else {
			pthread_cond_wait(&w->cv, &c->mu);
		}
	}
	waiter_unlink(c, w);
	/* the poller's role to someone still waiting */
	if (!c->polling && c->waiters)
		pthread_cond_signal(&c->waiters->cv);
	return ok;
}

/* Forgets the oldest timed-out call when such calls hold every credit
 * and nothing else could free one. */
static void forget_zombie(struct uiw_rr_clnt *c)
{
	if (c->outstanding >= limit(c) && c->live == 0 && c->zq_head)
		zombie_end(c, c->zq_head);
}

static bool credit_free(struct uiw_rr_clnt *c, void *arg)
{
	(void)arg;
	forget_zombie(c);
	return c->outstanding < limit(c);
}

static bool slot_done(struct uiw_rr_clnt *c, void *arg)
{
	(void)c;
	return ((struct rr_slot *)arg)->state != SLOT_LIVE;
}

/* ---- Slots ------------------------------------------------------------ */

static struct rr_slot *slot_get(struct uiw_rr_clnt *c)
{
	struct rr_slot *s;
	unsigned i;

	if (!c->free_slots) {
		for (i = 0; i < RR_SLOT_BATCH; i++) {
			s = calloc(1, sizeof(*s));
			if (!s || !(s->sbuf = rr_pool_get(&c->k.spool,
							  RR_SLOT_BATCH))) {
				free(s);
				break;
			}
			s->all_next = c->all_slots;
			c->all_slots = s;
			s->next = c->free_slots;
			c->free_slots = s;
		}
		if (!c->free_slots)
			return NULL;
	}
	s = c->free_slots;
	c->free_slots = s->next;
	s->next = NULL;
	s->nmr = 0;
	s->rbuf = NULL;
	s->with_inv = false;
	s->dead_status = UIW_RR_OK;
	return s;
}

/* Receives up to the calls in the table plus the slack (mu held). */
static int top_up(struct uiw_rr_clnt *c)
{
	unsigned want = c->table + RR_RECV_SLACK;

	if (want > c->max_recv)
		want = c->max_recv;
	while (c->k.posted < want) {
		struct rr_buf *b = rr_pool_get(&c->k.rpool, RR_SLOT_BATCH);

		if (!b || rr_conn_post_recv(&c->k, b) < 0) {
			if (b)
				rr_pool_put(&c->k.rpool, b);
			return -1;
		}
	}
	return 0;
}

/* ---- Connecting ------------------------------------------------------- */

/* The next CM event, which must be want, by deadline (0: none). */
static int expect(struct uiw_rr_clnt *c, enum rdma_cm_event_type want,
		  uint64_t deadline, char *err, size_t errlen)
{
	struct rdma_cm_event *ev;
	uint64_t now = rr_now_ms();
	int left = !deadline ? -1 : deadline > now ? (int)(deadline - now) : 1;

	if (rr_cm_event(c->k.ch, left, &ev) < 0) {
		rr_msg(err, errlen, "waiting for %s: %s", rdma_event_str(want),
		       strerror(errno));
		return -1;
	}
	if (ev->event != want) {
		/* (the event is freed by its ack: read it first) */
		int e = ev->event == RDMA_CM_EVENT_REJECTED ? ECONNREFUSED :
			ev->event == RDMA_CM_EVENT_UNREACHABLE ? EHOSTUNREACH :
			ev->event == RDMA_CM_EVENT_ADDR_ERROR &&
			ev->status < 0 ? -ev->status : ECONNABORTED;

		rr_msg(err, errlen, "%s (status %d) instead of %s",
		       rdma_event_str(ev->event), ev->status,
		       rdma_event_str(want));
		rdma_ack_cm_event(ev);
		errno = e;
		return -1;
	}
	if (want == RDMA_CM_EVENT_ESTABLISHED) {
		/* RFC 8797 §5: the Responder's private data, or none */
		rr_conn_peer(&c->k, ev->param.conn.private_data,
			     ev->param.conn.private_data_len);
	}
	rdma_ack_cm_event(ev);
	return 0;
}

/* The address resolved, in attempts of RR_RESOLVE_TRY_MS until the
 * deadline (never 0 here).  Linux 6.1's rdma_cm
 * (drivers/infiniband/core/addr.c) answers for a neighbour not yet in
 * the ARP cache when the ARP reply's netevent wakes the request, or
 * else when the timeout given expires; in a QEMU guest on virtio_net with siw the wake-up did not
 * come, so a first connection there resolved only at that timeout
 * (and with the whole connection's time as the timeout, failed).
 * Short attempts keep that wait short; an attempt that timed out is
 * made again (rdma_cm allows a new rdma_resolve_addr after
 * RDMA_CM_EVENT_ADDR_ERROR). */
static int resolve_addr(struct uiw_rr_clnt *c, const struct sockaddr *sa,
			uint64_t deadline, char *err, size_t errlen)
{
	for (;;) {
		uint64_t now = rr_now_ms();
		uint64_t left = deadline > now ? deadline - now : 0;

		if (!left) {
			rr_msg(err, errlen, "resolving the address: %s",
			       strerror(ETIMEDOUT));
			errno = ETIMEDOUT;
			return -1;
		}
		if (rdma_resolve_addr(c->k.id, NULL, (struct sockaddr *)sa,
				      left < RR_RESOLVE_TRY_MS ? (int)left :
				      RR_RESOLVE_TRY_MS))
			return -1;
		if (!expect(c, RDMA_CM_EVENT_ADDR_RESOLVED, deadline, err,
			    errlen))
			return 0;
		if (errno != ETIMEDOUT)
			return -1;
	}
}

struct uiw_rr_clnt *uiw_rr_clnt_connect(const struct sockaddr *sa,
					socklen_t salen,
					const struct uiw_rr_opts *o,
					char *err, size_t errlen)
{
	struct uiw_rr_clnt *c = calloc(1, sizeof(*c));
	struct rdma_conn_param cp;
	pthread_condattr_t ca;
	uint64_t deadline;
	unsigned tmo;
	int e;

	if (!c) {
		rr_msg(err, errlen, "out of memory");
		errno = ENOMEM;
		return NULL;
	}
	c->wakefd = -1;
	if (!sa || salen < sizeof(sa->sa_family) ||
	    rr_conn_opts(&c->k, o, err, errlen) < 0) {
		if (!sa || salen < sizeof(sa->sa_family)) {
			rr_msg(err, errlen, "no address to connect to");
			errno = EINVAL;
		}
		goto fail_early;
	}
	/* 0: no limit; address and route resolution still take rdma_cm's
	 * finite timeouts (they fail, not hang, on an unknown address) */
	tmo = c->k.o.connect_timeout_ms ? c->k.o.connect_timeout_ms : 60000;
	deadline = c->k.o.connect_timeout_ms ? rr_now_ms() + tmo : 0;
	pthread_mutex_init(&c->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&c->idle, &ca);
	pthread_condattr_destroy(&ca);
	c->grant = 1;           /* §3.3.3 */
	c->wakefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	c->k.ch = rdma_create_event_channel();
	if (c->wakefd < 0 || !c->k.ch || rr_nonblock(c->k.ch->fd) < 0) {
		rr_msg(err, errlen, "event channel: %s", strerror(errno));
		goto fail;
	}
	if (rdma_create_id(c->k.ch, &c->k.id, c, RDMA_PS_TCP)) {
		rr_msg(err, errlen, "rdma_create_id: %s", strerror(errno));
		goto fail;
	}
	if (resolve_addr(c, sa, deadline ? deadline : rr_now_ms() + tmo, err,
			 errlen) ||
	    rdma_resolve_route(c->k.id, (int)tmo) ||
	    expect(c, RDMA_CM_EVENT_ROUTE_RESOLVED, deadline, err, errlen)) {
		if (!err || !err[0])
			rr_msg(err, errlen, "resolving the address: %s",
			       strerror(errno));
		goto fail;
	}
	/* RFC 8797 §4.1: R only where remote invalidation works for the
	 * regions this end registers (ibv_reg_mr): an iWARP RNIC
	 * invalidates an STag associated with the stream (RFC 5040 §5.3;
	 * siw and uiwarp, for any region of the QP's PD), InfiniBand and
	 * RoCE devices only fast-registered ones. */
	if (c->k.o.remote_inv && c->k.id->verbs &&
	    c->k.id->verbs->device->transport_type != IBV_TRANSPORT_IWARP)
		rr_conn_local(&c->k, false);
	/* The Responder reads our Read chunks: answer as many Reads as
	 * the device allows (IRD); we read nothing of the Responder's. */
	c->k.ird = 32;
	c->k.ord = 1;
	c->max_recv = c->k.o.credits + RR_RECV_SLACK;
	if (rr_conn_verbs(&c->k, c->max_recv, 2 * c->k.o.credits + RR_RECV_SLACK,
			  RR_RECV_SLACK, RR_SLOT_BATCH, err, errlen) < 0)
		goto fail;
	rr_conn_param(&c->k, &cp);
	if (rdma_connect(c->k.id, &cp)) {
		rr_msg(err, errlen, "rdma_connect: %s", strerror(errno));
		goto fail;
	}
	if (expect(c, RDMA_CM_EVENT_ESTABLISHED, deadline, err, errlen) < 0)
		goto fail;
	return c;
fail:
	e = errno;
	rr_conn_destroy(&c->k);
	pthread_mutex_destroy(&c->mu);
	pthread_cond_destroy(&c->idle);
	errno = e;
fail_early:
	e = errno;
	if (c->wakefd >= 0)
		close(c->wakefd);
	free(c);
	errno = e ? e : EIO;
	return NULL;
}

void uiw_rr_clnt_close(struct uiw_rr_clnt *c)
{
	struct rr_slot *s, *n;

	if (!c)
		return;
	pthread_mutex_lock(&c->mu);
	c->closing = true;
	die(c, "the connection was closed");
	while (c->active)
		pthread_cond_wait(&c->idle, &c->mu);
	pthread_mutex_unlock(&c->mu);
	rdma_disconnect(c->k.id);
	rdma_destroy_qp(c->k.id);
	c->k.qp = NULL;
	for (s = c->all_slots; s; s = n) {
		n = s->all_next;
		dereg_caller(s);
		dereg_own(s);
		free(s->stage);
		free(s->rbuf_mem);
		free(s);
	}
	rr_conn_destroy(&c->k);
	close(c->wakefd);
	pthread_mutex_destroy(&c->mu);
	pthread_cond_destroy(&c->idle);
	free(c);
}

/* ---- A call ----------------------------------------------------------- */

/* One call being put together. */
struct build {
	struct rr_call_layout l;
	struct uiw_rpcrdma_read_seg rseg[RR_CALL_MAX_SEG];
	struct uiw_rpcrdma_seg wseg[RR_MAX_WSEG];
	struct uiw_rpcrdma_chunk wchunk[UIW_RR_MAX_WCHUNK];
	struct uiw_rpcrdma_seg pseg[RR_MAX_PSEG];
	struct uiw_rpcrdma_hdr h;
	uint64_t reply_chunk;       /* octets offered, 0: none */
};

static void fail_call(struct uiw_rr_call *call, enum uiw_rr_status st,
		      const char *why)
{
	call->status = st;
	rr_msg(call->msg, sizeof(call->msg), "%s", why);
}

/* Segments of len octets at addr under one handle. */
static unsigned put_segs(struct uiw_rpcrdma_seg *seg, uint32_t handle,
			 uint64_t addr, uint64_t len)
{
	unsigned n = 0;

	while (len) {
		uint32_t m = len > RR_SEG_MAX ? RR_SEG_MAX : (uint32_t)len;

		seg[n++] = (struct uiw_rpcrdma_seg){ handle, m, addr };
		addr += m;
		len -= m;
	}
	return n;
}

/* The header without its Read list (Write list, Reply chunk with
 * placeholder handles), to size the layout. */
static int shape(struct uiw_rr_clnt *c, const struct uiw_rr_call *call,
		 struct build *b)
{
	struct uiw_rpcrdma_hdr *h = &b->h;
	unsigned i, n = 0;
	size_t rhdr;

	memset(h, 0, sizeof(*h));
	h->vers = UIW_RPCRDMA_VERSION;
	h->credit = c->k.o.credits;    /* §4.2.3: the credits requested */
	h->proc = UIW_RDMA_MSG;
	h->read_seg = b->rseg;
	h->write_seg = b->wseg;
	h->write_chunk = b->wchunk;
	h->reply_seg = b->pseg;
	for (i = 0; i < call->nwt; i++) {
		size_t len = call->wt[i].base ? call->wt[i].len : 0;
		unsigned k = (unsigned)((len + RR_SEG_MAX - 1) / RR_SEG_MAX);

		if (n + k > RR_MAX_WSEG)
			return -1;
		b->wchunk[i] = (struct uiw_rpcrdma_chunk){ 0, n, k };
		n += put_segs(b->wseg + n, 0, 0, len);
	}
	h->nwrite_chunk = call->nwt;
	h->nwrite_seg = n;
	/* §4.3.3: a Reply chunk whenever the largest reply, with its
	 * transport header (the Write list echoed), could exceed the
	 * reply inline threshold */
	if (uiw_rpcrdma_encoded_len(h, &rhdr))
		return -1;
	b->reply_chunk = 0;
	if (call->reply_max + rhdr > c->k.recv_thresh) {
		if ((call->reply_max + RR_SEG_MAX - 1) / RR_SEG_MAX > RR_MAX_PSEG)
			return -1;
		b->reply_chunk = call->reply_max;
		h->reply_present = true;
		h->nreply_seg = put_segs(b->pseg, 0, 0, call->reply_max);
	}
	return 0;
}

/* Registers what the call offers and fills the header's handles.
 * -1 with errno: what was registered is in s->mr[] for dereg. */
static int offer(struct uiw_rr_clnt *c, struct rr_slot *s,
		 const struct uiw_rr_call *call, struct build *b)
{
	struct ibv_pd *pd = c->k.pd;
	struct rr_call_layout *l = &b->l;
	struct uiw_rpcrdma_hdr *h = &b->h;
	int32_t last = -1;
	struct ibv_mr *mr = NULL;
	unsigned i;

	/* Read chunks (or the Position-Zero chunk's own pieces) */
	for (i = 0; i < l->nseg; i++) {
		const struct rr_call_seg *g = &l->seg[i];
		uint64_t addr;

		if (g->iov >= 0) {
			const struct uiw_rr_iov *v = &call->iov[g->iov];

			if (g->iov != last) {
				mr = ibv_reg_mr(pd, (void *)v->base, v->len,
						IBV_ACCESS_REMOTE_READ);
				if (!mr)
					return -1;
				s->mr[s->nmr++] = mr;
				last = g->iov;
			}
			addr = (uintptr_t)v->base + g->off;
			b->rseg[i] = (struct uiw_rpcrdma_read_seg){
				g->position, { mr->rkey, g->len, addr } };
		} else {
			if (!s->stage_mr) {
				if (s->stage_cap < l->kept_len) {
					free(s->stage);
					s->stage_cap = 0;
					s->stage = malloc(l->kept_len);
					if (!s->stage)
						return -1;
					s->stage_cap = l->kept_len;
				}
				rr_stream_copy(call->iov, call->niov, &l->ext,
					       s->stage);
				s->stage_mr = ibv_reg_mr(pd, s->stage,
							 l->kept_len,
							 IBV_ACCESS_REMOTE_READ);
				if (!s->stage_mr)
					return -1;
			}
			b->rseg[i] = (struct uiw_rpcrdma_read_seg){
				0, { s->stage_mr->rkey, g->len,
				     (uintptr_t)s->stage + g->off } };
		}
	}
	h->nread_seg = l->nseg;
	/* Write chunks (§3.4.6): the caller's memory, REMOTE_WRITE */
	for (i = 0; i < call->nwt; i++) {
		const struct uiw_rpcrdma_chunk *wc = &b->wchunk[i];

		if (!wc->nseg)
			continue;
		mr = ibv_reg_mr(pd, call->wt[i].base, call->wt[i].len,
				IBV_ACCESS_LOCAL_WRITE |
				IBV_ACCESS_REMOTE_WRITE);
		if (!mr)
			return -1;
		s->mr[s->nmr++] = mr;
		put_segs(b->wseg + wc->first, mr->rkey,
			 (uintptr_t)call->wt[i].base, call->wt[i].len);
	}
	if (b->reply_chunk) {
		if (s->rbuf_cap < b->reply_chunk) {
			free(s->rbuf_mem);
			s->rbuf_cap = 0;
			s->rbuf_mem = malloc(b->reply_chunk);
			if (!s->rbuf_mem)
				return -1;
			s->rbuf_cap = b->reply_chunk;
		}
		s->reply_mr = ibv_reg_mr(pd, s->rbuf_mem, b->reply_chunk,
					 IBV_ACCESS_LOCAL_WRITE |
					 IBV_ACCESS_REMOTE_WRITE);
		if (!s->reply_mr)
			return -1;
		put_segs(b->pseg, s->reply_mr->rkey, (uintptr_t)s->rbuf_mem,
			 b->reply_chunk);
	}
	/* what the reply is judged against */
	s->offer.nwchunk = call->nwt;
	for (i = 0; i < call->nwt; i++)
		s->offer.wnseg[i] = b->wchunk[i].nseg;
	memcpy(s->offer.wseg, b->wseg, h->nwrite_seg * sizeof(b->wseg[0]));
	s->offer.reply_present = h->reply_present;
	s->offer.npseg = h->nreply_seg;
	memcpy(s->offer.pseg, b->pseg, h->nreply_seg * sizeof(b->pseg[0]));
	return 0;
}

/* The reply judged (mu held): the status and where its stream is. */
static void judge(struct uiw_rr_clnt *c, struct rr_slot *s,
		  struct uiw_rr_call *call)
{
	struct rr_reply_space sp;
	struct uiw_rpcrdma_hdr h;
	struct rr_reply_info r;
	struct uiw_rr_stats *st = &c->k.st;
	const char *why;
	unsigned i;

	rr_reply_decode(s->rbuf->base, s->rlen, &sp, &h, &why);
	rr_plan_reply(&h, s->rlen, &s->offer, &r);
	if (s->with_inv) {
		/* RFC 8797 §4.1: only when this end set R, and only an STag
		 * of this XID */
		bool ours = false;

		for (i = 0; i < s->nmr; i++)
			ours |= s->mr[i]->rkey == s->inv_rkey;
		ours |= s->stage_mr && s->stage_mr->rkey == s->inv_rkey;
		ours |= s->reply_mr && s->reply_mr->rkey == s->inv_rkey;
		if (!c->k.local.remote_inv || !ours) {
			r.status = UIW_RR_BAD_REPLY;
			rr_msg(r.msg, sizeof(r.msg), "Send With Invalidate of "
			       "STag 0x%08x, %s (RFC 8797 §4.1)", s->inv_rkey,
			       c->k.local.remote_inv ? "not one of this call's" :
			       "which this end did not allow");
		} else {
			st->remote_invalidations++;
		}
	}
	call->status = r.status;
	rr_msg(call->msg, sizeof(call->msg), "%s", r.msg);
	call->vers_low = r.vers_low;
	call->vers_high = r.vers_high;
	if (r.status == UIW_RR_ERR_VERS || r.status == UIW_RR_ERR_CHUNK)
		st->rdma_errors_received++;
	if (r.status != UIW_RR_OK)
		return;
	st->replies++;
	for (i = 0; i < s->offer.nwchunk; i++) {
		call->wlen[i] = r.wlen[i];
		if (r.wlen[i]) {
			st->write_chunks++;
			st->write_bytes += r.wlen[i];
		}
	}
	if (r.long_reply) {
		st->long_replies++;
		st->reply_chunks++;
		st->reply_bytes += r.reply_len;
		call->reply = s->rbuf_mem;
		call->reply_len = r.reply_len;
	} else {
		call->reply = s->rbuf->base + r.inline_off;
		call->reply_len = r.inline_len;
	}
}

/* Sends the call of slot s (in the table, its credit taken). */
static int send_call(struct uiw_rr_clnt *c, struct rr_slot *s,
		     const struct uiw_rr_call *call, struct build *b)
{
	struct rr_wr w;
	size_t hlen, len;

	b->h.xid = s->xid;
	b->h.proc = b->l.kind == RR_CALL_LONG ? UIW_RDMA_NOMSG : UIW_RDMA_MSG;
	if (uiw_rpcrdma_encode(&b->h, s->sbuf->base, c->k.spool.size, &hlen)) {
		errno = EMSGSIZE;
		return -1;
	}
	len = hlen;
	if (b->l.kind != RR_CALL_LONG) {
		rr_stream_copy(call->iov, call->niov, &b->l.ext,
			       s->sbuf->base + hlen);
		len += b->l.kept_len;
	}
	rr_wr_init(&w, IBV_WR_SEND, rr_wr_id(s, RR_WR_SEND), s->sbuf->base,
		   (uint32_t)len, s->sbuf->lkey, 0, 0, true);
	return rr_post(c->k.qp, &w.wr);
}

int uiw_rr_call(struct uiw_rr_clnt *c, struct uiw_rr_call *call)
{
	struct rr_waiter w = { .credit = true };
	struct uiw_rr_stats *st = &c->k.st;
	struct rr_slot *s = NULL;
	struct build b;
	uint64_t deadline = 0;
	unsigned tmo;
	uint32_t xid;
	size_t other;

	call->status = UIW_RR_OK;
	call->msg[0] = 0;
	call->reply = NULL;
	call->reply_len = 0;
	call->vers_low = call->vers_high = 0;
	call->slot_ = NULL;
	memset(call->wlen, 0, sizeof(call->wlen));
	if ((!call->iov && call->niov) || call->nwt > UIW_RR_MAX_WCHUNK) {
		fail_call(call, UIW_RR_TOO_BIG, "bad call: no pieces, or more "
			  "Write chunks than UIW_RR_MAX_WCHUNK");
		return -1;
	}
	/* §3.2: the Payload stream begins with the XID */
	if (!rr_stream_xid(call->iov, call->niov, &xid)) {
		fail_call(call, UIW_RR_TOO_BIG, "the Payload stream is shorter "
			  "than its XID (RFC 8166 §3.2)");
		return -1;
	}
	if (shape(c, call, &b) < 0 || uiw_rpcrdma_encoded_len(&b.h, &other)) {
		fail_call(call, UIW_RR_TOO_BIG, "the Write chunks or Reply "
			  "chunk need more segments than a header carries");
		return -1;
	}
	rr_call_layout(call->iov, call->niov, other, c->k.send_thresh, &b.l);
	if (b.l.kind == RR_CALL_TOO_BIG) {
		fail_call(call, UIW_RR_TOO_BIG, "the call's Read list does not "
			  "fit the inline threshold (RFC 8166 §3.3.2)");
		return -1;
	}
	tmo = call->timeout_ms ? call->timeout_ms : c->k.o.call_timeout_ms;
	if (tmo)
		deadline = rr_now_ms() + tmo;
	cond_init(&w.cv);

	pthread_mutex_lock(&c->mu);
	c->active++;
	if ((s = lookup(c, xid))) {
		if (s->state != SLOT_ZOMBIE) {
			s = NULL;
			fail_call(call, UIW_RR_TOO_BIG, "a call with this XID is "
				  "outstanding");
			goto out;
		}
		/* a retransmission: the first attempt's reply answers it
		 * too, so the timed-out one is forgotten */
		zombie_end(c, s);
		s = NULL;
	}
	if (!credit_free(c, NULL)) {
		st->credit_waits++;
		if (!wait_for(c, &w, credit_free, NULL, deadline)) {
			fail_call(call, c->dead ? UIW_RR_DISCONNECTED :
				  UIW_RR_TIMEDOUT, c->dead ? c->why :
				  "no credit came free in time");
			goto out;
		}
	}
	if (c->dead) {
		fail_call(call, UIW_RR_DISCONNECTED, c->why);
		goto out;
	}
	if (!(s = slot_get(c))) {
		fail_call(call, UIW_RR_NOMEM, "no memory for the call");
		goto out;
	}
	s->xid = xid;
	s->state = SLOT_LIVE;
	s->caller = true;
	s->credit = true;
	s->w = &w;
	w.credit = false;
	if (c->outstanding >= limit(c))
		c->over_grant++;
	c->outstanding++;
	c->live++;
	if (c->outstanding > c->peak)
		c->peak = c->outstanding;
	table_add(c, s);
	if (top_up(c) < 0) {
		fail_call(call, UIW_RR_NOMEM, "cannot post receives");
		goto undo;
	}
	s->send_pending = true;
	pthread_mutex_unlock(&c->mu);

	if (offer(c, s, call, &b) < 0 || send_call(c, s, call, &b) < 0) {
		fail_call(call, UIW_RR_NOMEM, strerror(errno));
		pthread_mutex_lock(&c->mu);
		s->send_pending = false;
		goto undo;
	}
	pthread_mutex_lock(&c->mu);
	st->calls++;
	if (b.l.kind == RR_CALL_LONG) {
		st->long_calls++;
	} else {
		st->inline_sends++;
		st->inline_bytes += b.l.kept_len;
	}
	st->read_chunks += b.l.nchunks;
	/* what the Responder is to pull: the segments offered (a DDP
	 * piece's XDR pad is in none of them, RFC 8166 §3.4.5.2) */
	if (b.l.kind != RR_CALL_INLINE)
		for (unsigned i = 0; i < b.l.nseg; i++)
			st->read_bytes += b.l.seg[i].len;
	wait_for(c, &w, slot_done, s, deadline);
	s->w = NULL;
	if (s->state == SLOT_DONE) {
		if (s->dead_status)
			fail_call(call, s->dead_status, c->why);
		else
			judge(c, s, call);
	} else {
		/* timed out: it keeps its credit and table place until its
		 * reply comes (see the top of this file) */
		s->state = SLOT_ZOMBIE;
		c->live--;
		c->zombies++;
		s->next = NULL;
		if (c->zq_tail)
			c->zq_tail->next = s;
		else
			c->zq_head = s;
		c->zq_tail = s;
		fail_call(call, UIW_RR_TIMEDOUT, "no reply within the timeout");
	}
	goto out;
undo:
	/* (die() may have completed it meanwhile) */
	if (s->state == SLOT_LIVE)
		c->live--;
	table_del(c, s);
	credit_put(c, s);
	s->state = SLOT_DONE;
	s->w = NULL;
out:
	if (s && (s->nmr || s->stage_mr || s->reply_mr)) {
		/* the caller's memory now; ours too unless a late reply
		 * may still write into it (then when that reply comes, or
		 * the call is forgotten: zombie_end, which leaves mr[]
		 * alone while the caller owns the slot).  Still counted
		 * in active: close waits. */
		bool zombie = s->state == SLOT_ZOMBIE;

		pthread_mutex_unlock(&c->mu);
		dereg_caller(s);
		if (!zombie)
			dereg_own(s);
		pthread_mutex_lock(&c->mu);
	}
	if (s)
		call->slot_ = s;
	c->active--;
	if (c->closing && !c->active)
		pthread_cond_signal(&c->idle);
	pthread_mutex_unlock(&c->mu);
	pthread_cond_destroy(&w.cv);
	return call->status == UIW_RR_OK ? 0 : -1;
}

void uiw_rr_call_done(struct uiw_rr_clnt *c, struct uiw_rr_call *call)
{
	struct rr_slot *s = call->slot_;

	if (!s)
		return;
	call->slot_ = NULL;
	call->reply = NULL;
	pthread_mutex_lock(&c->mu);
	if (s->rbuf) {
		rr_pool_put(&c->k.rpool, s->rbuf);
		s->rbuf = NULL;
	}
	s->caller = false;
	slot_maybe_free(c, s);
	pthread_mutex_unlock(&c->mu);
}

void uiw_rr_clnt_stats(struct uiw_rr_clnt *c, struct uiw_rr_stats *s)
{
	pthread_mutex_lock(&c->mu);
	*s = c->k.st;
	pthread_mutex_unlock(&c->mu);
}

void uiw_rr_clnt_params(struct uiw_rr_clnt *c, uint32_t *send_thresh,
			uint32_t *recv_thresh, bool *remote_inv)
{
	if (send_thresh)
		*send_thresh = c->k.send_thresh;
	if (recv_thresh)
		*recv_thresh = c->k.recv_thresh;
	if (remote_inv)
		*remote_inv = c->k.remote_inv;
}

void rr_clnt_credits(struct uiw_rr_clnt *c, struct rr_clnt_credits *cr)
{
	pthread_mutex_lock(&c->mu);
	cr->grant = c->grant;
	cr->outstanding = c->outstanding;
	cr->peak = c->peak;
	cr->over_grant = c->over_grant;
	cr->zombies = c->zombies;
	cr->posted = c->k.posted;
	pthread_mutex_unlock(&c->mu);
}

struct rr_conn *rr_clnt_conn(struct uiw_rr_clnt *c)
{
	return &c->k;
}
