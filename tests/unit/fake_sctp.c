/*
 * An SCTP carrier in memory for tests: see fake_sctp.h.
 *
 * Everything below the public functions runs on the carrier's progress
 * thread (the stack's uiw_rt), as sctp.h requires of a backend; the
 * public functions get there with uiw_rt_call.  The configuration, the
 * tap and the idle flag that fake_sctp_settle waits on are shared with
 * the tests' threads under glock.
 */
#include "fake_sctp.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rt/rt.h"

#define QUEUE_MAX_DEF  (64u << 20)
#define WINDOW_MAX     1024
#define PORT_FIRST     40000
#define EPORT_FIRST    50000

struct fstack;
struct fend;

struct fmsg {
	struct fmsg *next;
	uint64_t seq;           /* the sender's count when it was sent */
	uint16_t sid;
	uint32_t ppid;
	size_t len;
	uint8_t *data;          /* malloc'd, exactly len octets (at least
				   one): the upcall's buffer */
};

/* A message held back (a gap in what the peer receives). */
struct fhold {
	struct fhold *next;
	struct fstack *fs;
	struct fmsg *m;
	struct fend *to;
	struct uiw_rt_timer timer;
	bool timed;
};

struct flsn {
	struct uiw_sctp_lsn_base base;     /* first: sctp.c reads it */
	struct flsn *next;
	struct sockaddr_storage addr;
	uint16_t port;
	const struct uiw_sctp_up *up;
	void *ctx;
};

struct fend {
	struct uiw_sctp_assoc_base base;   /* first: sctp.c reads it */
	struct fstack *fs;
	struct fend *peer;                 /* NULL once it is freed */
	struct fend *next;                 /* the stack's list */
	struct flsn *lsn;                  /* passive, before up: whose */
	unsigned assoc;
	bool active;
	bool is_up;                        /* up delivered */
	bool down_set;                     /* down posted or delivered */
	int down_err;
	bool closing;                      /* shutdown: no more sends */
	bool aborted;                      /* no more delivery */
	struct fmsg *qh, *qt;              /* from the peer, undelivered */
	size_t q_bytes;
	unsigned out_pending;              /* sent, not delivered yet */
	uint64_t tx_seq;                   /* messages sent */
	uint64_t rx_seq_max;               /* highest seq delivered, + 1 */
	bool want_writable, want_dry;
	bool blocked;                      /* fake_sctp_block */
	uint64_t rng;
	struct uiw_rt_work w_up, w_deliver, w_writable, w_dry, w_down;
	bool p_up, p_writable, p_dry, p_down;
};

struct fstack {
	struct uiw_sctp_stack_base base;   /* first: sctp.c reads it */
	struct flsn *lsns;
	struct fend *ends;
	unsigned last_assoc;
	uint16_t next_port, next_eport;
	bool quiet;
	struct fake_sctp_pick hold_pick, dup_pick;
	bool hold_armed, dup_armed;
	unsigned hold_ms, hold_seen, dup_seen;
	struct fhold *holds;
	unsigned nheld;
	unsigned busy;                     /* queued messages and pending
					      upcalls (fake_sctp_settle) */
	struct fake_sctp_stats stats;
};

static pthread_mutex_t glock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gcond = PTHREAD_COND_INITIALIZER;
static struct fake_sctp_cfg gcfg;
static struct fstack *gstack;
static bool gidle = true;
static int galive;                  /* associations with an end alive */
static bool tap_on = true;
static struct fake_sctp_rec *tap;
static size_t tap_n, tap_cap;

#define END(a) ((struct fend *)(a))
#define FS(s)  ((struct fstack *)(s))

static struct fake_sctp_cfg cfg_now(void)
{
	struct fake_sctp_cfg c;

	pthread_mutex_lock(&glock);
	c = gcfg;
	pthread_mutex_unlock(&glock);
	return c;
}

static uint64_t rng_next(uint64_t *s)
{
	/* splitmix64: a seed gives one sequence, on any platform */
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static void busy_add(struct fstack *fs, int d)
{
	bool was = fs->busy == 0;

	fs->busy = (unsigned)((int)fs->busy + d);
	if (was != (fs->busy == 0)) {
		pthread_mutex_lock(&glock);
		gidle = fs->busy == 0;
		pthread_cond_broadcast(&gcond);
		pthread_mutex_unlock(&glock);
	}
}

/* Posts one of an end's upcalls (flag: whether it is pending). */
static void post_up(struct fend *e, struct uiw_rt_work *w, bool *flag)
{
	if (*flag)
		return;
	*flag = true;
	busy_add(e->fs, 1);
	uiw_rt_post(e->fs->base.rt, w);
}

static void unpost(struct fend *e, struct uiw_rt_work *w, bool *flag)
{
	if (!*flag)
		return;
	*flag = false;
	uiw_rt_work_cancel(e->fs->base.rt, w);
	busy_add(e->fs, -1);
}

static void msg_free(struct fmsg *m)
{
	free(m->data);
	free(m);
}

static void q_push(struct fend *to, struct fmsg *m, bool front)
{
	m->next = NULL;
	if (front) {
		m->next = to->qh;
		to->qh = m;
		if (!to->qt)
			to->qt = m;
	} else {
		if (to->qt)
			to->qt->next = m;
		else
			to->qh = m;
		to->qt = m;
	}
	to->q_bytes += m->len;
	busy_add(to->fs, 1);
	if (to->is_up)
		uiw_rt_post(to->fs->base.rt, &to->w_deliver);
}

static struct fmsg *q_pop(struct fend *e)
{
	struct fmsg *m = e->qh;

	if (!m)
		return NULL;
	e->qh = m->next;
	if (!e->qh)
		e->qt = NULL;
	m->next = NULL;
	e->q_bytes -= m->len;
	if (e->peer && e->peer->out_pending)
		e->peer->out_pending--;
	return m;
}

/* What was in flight towards e is lost. */
static void q_drop(struct fend *e)
{
	struct fmsg *m;

	while ((m = q_pop(e))) {
		msg_free(m);
		busy_add(e->fs, -1);
	}
	uiw_rt_work_cancel(e->fs->base.rt, &e->w_deliver);
}

static void hold_unlink(struct fhold *h)
{
	struct fhold **pp;

	for (pp = &h->fs->holds; *pp; pp = &(*pp)->next) {
		if (*pp == h) {
			*pp = h->next;
			break;
		}
	}
	h->fs->nheld--;
	if (h->timed)
		uiw_rt_timer_stop(h->fs->base.rt, &h->timer);
}

/* A held message goes ahead of its end's queue. */
static void hold_deliver(struct fhold *h)
{
	hold_unlink(h);
	q_push(h->to, h->m, true);
	free(h);
}

static void hold_fire(void *arg)
{
	hold_deliver(arg);
}

/* Held messages towards e (or, e NULL, all) are dropped. */
static void holds_drop(struct fstack *fs, struct fend *e)
{
	struct fhold *h = fs->holds, *nx;

	for (; h; h = nx) {
		nx = h->next;
		if (e && h->to != e)
			continue;
		if (h->to->peer && h->to->peer->out_pending)
			h->to->peer->out_pending--;
		hold_unlink(h);
		msg_free(h->m);
		free(h);
	}
}

static void holds_release_to(struct fstack *fs, struct fend *e)
{
	struct fhold *h = fs->holds, *nx;

	for (; h; h = nx) {
		nx = h->next;
		if (h->to == e)
			hold_deliver(h);
	}
}

static bool holds_for(struct fstack *fs, struct fend *e)
{
	struct fhold *h;

	for (h = fs->holds; h; h = h->next)
		if (h->to == e)
			return true;
	return false;
}

/* ---- Going down ------------------------------------------------------ */

static void end_unlink(struct fend *e)
{
	struct fend **pp;

	for (pp = &e->fs->ends; *pp; pp = &(*pp)->next) {
		if (*pp == e) {
			*pp = e->next;
			break;
		}
	}
}

/* Frees e without upcalls. */
static void end_free(struct fend *e)
{
	struct fstack *fs = e->fs;

	unpost(e, &e->w_up, &e->p_up);
	unpost(e, &e->w_writable, &e->p_writable);
	unpost(e, &e->w_dry, &e->p_dry);
	unpost(e, &e->w_down, &e->p_down);
	q_drop(e);
	holds_drop(fs, e);
	if (e->peer) {
		e->peer->peer = NULL;
	} else {
		/* the association's last end */
		pthread_mutex_lock(&glock);
		galive--;
		pthread_cond_broadcast(&gcond);
		pthread_mutex_unlock(&glock);
	}
	end_unlink(e);
	fs->base.users--;
	free(e);
}

static void down_set(struct fend *e, int err, bool lose)
{
	if (!e || e->down_set)
		return;
	e->down_set = true;
	e->down_err = err;
	e->closing = true;
	if (lose) {
		e->aborted = true;
		q_drop(e);
		holds_drop(e->fs, e);
	}
	post_up(e, &e->w_down, &e->p_down);
}

/* ABORT from e (RFC 4960 §9.1): both ends down, in flight lost. */
static void pair_abort(struct fend *e, int err, int peer_err)
{
	struct fend *p = e->peer;

	down_set(e, err, true);
	down_set(p, peer_err, true);
}

/* Orderly: down 0 for both once nothing is in flight either way. */
static void shutdown_check(struct fend *e)
{
	struct fend *p = e->peer;

	if (!e->closing || e->down_set)
		return;
	if (e->qh || holds_for(e->fs, e))
		return;
	if (p && (p->qh || holds_for(e->fs, p)))
		return;
	down_set(e, 0, false);
	down_set(p, 0, false);
}

/* ---- Upcalls from posted work ---------------------------------------- */

static void up_run(void *arg)
{
	struct fend *e = arg;

	e->p_up = false;
	busy_add(e->fs, -1);
	if (e->fs->quiet || e->down_set)
		return;
	if (!e->active && !e->lsn) {
		/* The listener went before the association came up: the
		 * peer is refused, and nobody hears of this end. */
		struct fend *p = e->peer;

		end_free(e);
		down_set(p, -ECONNREFUSED, true);
		return;
	}
	e->lsn = NULL;
	e->is_up = true;
	if (e->base.up && e->base.up->up)
		e->base.up->up(e->base.ctx, (struct uiw_sctp_assoc *)e,
			       &e->base.info);
	if (e->qh && !e->aborted)
		uiw_rt_post(e->fs->base.rt, &e->w_deliver);
}

static void deliver_run(void *arg)
{
	struct fend *e = arg, *snd;
	struct fstack *fs = e->fs;
	struct fake_sctp_cfg c = cfg_now();
	struct fmsg *b[WINDOW_MAX];
	size_t qmax = c.queue_max ? c.queue_max : QUEUE_MAX_DEF;
	unsigned w = c.window > 1 ? c.window : 1, n = 0, i;

	if (!e->is_up || e->aborted)
		return;
	if (w > WINDOW_MAX)
		w = WINDOW_MAX;
	while (n < w && (b[n] = q_pop(e)))
		n++;
	/* Fisher-Yates: the order unordered chunks may arrive in. */
	for (i = n; i > 1; i--) {
		unsigned j = (unsigned)(rng_next(&e->rng) % i);
		struct fmsg *t = b[i - 1];

		b[i - 1] = b[j];
		b[j] = t;
	}
	for (i = 0; i < n; i++) {
		struct fmsg *m = b[i];

		if (m->seq + 1 < e->rx_seq_max)
			fs->stats.reordered++;
		else
			e->rx_seq_max = m->seq + 1;
		if (!fs->quiet && !e->aborted && e->base.up &&
		    e->base.up->msg) {
			e->base.up->msg(e->base.ctx,
					(struct uiw_sctp_assoc *)e, m->sid,
					m->ppid, m->data, m->len);
			free(m);
		} else {
			msg_free(m);
		}
		busy_add(fs, -1);
	}
	if (e->qh && !e->aborted)
		uiw_rt_post(fs->base.rt, &e->w_deliver);
	snd = e->peer;
	if (snd && !snd->down_set) {
		if (snd->want_writable && e->q_bytes <= qmax) {
			snd->want_writable = false;
			post_up(snd, &snd->w_writable, &snd->p_writable);
		}
		if (snd->want_dry && !snd->out_pending)
			post_up(snd, &snd->w_dry, &snd->p_dry);
	}
	shutdown_check(e);
}

static void writable_run(void *arg)
{
	struct fend *e = arg;

	e->p_writable = false;
	busy_add(e->fs, -1);
	if (e->fs->quiet || e->down_set || !e->is_up)
		return;
	e->fs->stats.writable++;
	if (e->base.up && e->base.up->writable)
		e->base.up->writable(e->base.ctx, (struct uiw_sctp_assoc *)e);
}

static void dry_run(void *arg)
{
	struct fend *e = arg;

	e->p_dry = false;
	busy_add(e->fs, -1);
	if (e->fs->quiet || e->down_set || !e->is_up || !e->want_dry)
		return;
	e->want_dry = false;
	e->fs->stats.dry++;
	if (e->base.up && e->base.up->dry)
		e->base.up->dry(e->base.ctx, (struct uiw_sctp_assoc *)e);
}

static void down_run(void *arg)
{
	struct fend *e = arg;

	e->p_down = false;
	busy_add(e->fs, -1);
	/* A passive end that never came up was never reported: its
	 * upcalls are still the listener's. */
	if (!e->fs->quiet && (e->is_up || e->active) && e->base.up &&
	    e->base.up->down)
		e->base.up->down(e->base.ctx, (struct uiw_sctp_assoc *)e,
				 e->down_err);
	end_free(e);
}

/* ---- The backend's table ----------------------------------------------- */

static int f_create(const struct uiw_sctp_config *cfg,
		    struct uiw_sctp_stack **out)
{
	struct fstack *fs = calloc(1, sizeof(*fs));

	if (!fs)
		return -ENOMEM;
	fs->base.rt = uiw_rt_create("fake-sctp");
	if (!fs->base.rt) {
		free(fs);
		return -ENOMEM;
	}
	fs->next_port = PORT_FIRST;
	fs->next_eport = EPORT_FIRST;
	pthread_mutex_lock(&glock);
	gstack = fs;
	gidle = true;
	galive = 0;
	pthread_mutex_unlock(&glock);
	*out = (struct uiw_sctp_stack *)fs;
	return 0;
}

static int quiet_call(void *arg)
{
	struct fstack *fs = arg;
	struct fend *e;

	if (!fs->quiet)
		uiw_sctp_quiesce_run((struct uiw_sctp_stack *)fs);
	fs->quiet = true;
	holds_drop(fs, NULL);
	for (e = fs->ends; e; e = e->next) {
		q_drop(e);
		unpost(e, &e->w_up, &e->p_up);
		unpost(e, &e->w_writable, &e->p_writable);
		unpost(e, &e->w_dry, &e->p_dry);
		unpost(e, &e->w_down, &e->p_down);
	}
	return 0;
}

static void f_destroy(struct uiw_sctp_stack *s)
{
	struct fstack *fs = FS(s);
	struct flsn *l;
	struct fend *e;

	pthread_mutex_lock(&glock);
	if (gstack == fs)
		gstack = NULL;
	gidle = true;
	galive = 0;
	pthread_cond_broadcast(&gcond);
	pthread_mutex_unlock(&glock);
	/* Work posted before this runs, but makes no upcall. */
	uiw_rt_call(fs->base.rt, quiet_call, fs);
	uiw_rt_destroy(fs->base.rt);
	while (fs->holds) {
		struct fhold *h = fs->holds;

		fs->holds = h->next;
		msg_free(h->m);
		free(h);
	}
	while ((e = fs->ends)) {
		struct fmsg *m;

		fs->ends = e->next;
		while ((m = e->qh)) {
			e->qh = m->next;
			msg_free(m);
		}
		free(e);
	}
	while ((l = fs->lsns)) {
		fs->lsns = l->next;
		free(l);
	}
	free(fs);
}

static uint16_t sa_port(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return ntohs(((const struct sockaddr_in *)sa)->sin_port);
	if (sa->sa_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)sa)->sin6_port);
	return 0;
}

static void sa_set_port(struct sockaddr_storage *ss, uint16_t port)
{
	if (ss->ss_family == AF_INET)
		((struct sockaddr_in *)ss)->sin_port = htons(port);
	else if (ss->ss_family == AF_INET6)
		((struct sockaddr_in6 *)ss)->sin6_port = htons(port);
}

static struct flsn *lsn_find(struct fstack *fs, uint16_t port)
{
	struct flsn *l;

	for (l = fs->lsns; l; l = l->next)
		if (l->port == port)
			return l;
	return NULL;
}

static int f_listen(struct uiw_sctp_stack *s, const struct sockaddr *sa,
		    socklen_t salen, int backlog,
		    const struct uiw_sctp_up *up, void *ctx,
		    struct uiw_sctp_lsn **out)
{
	struct fstack *fs = FS(s);
	uint16_t port = sa_port(sa);
	struct flsn *l;

	if ((sa->sa_family != AF_INET && sa->sa_family != AF_INET6) ||
	    salen > sizeof(l->addr))
		return -EAFNOSUPPORT;
	if (port && lsn_find(fs, port))
		return -EADDRINUSE;
	while (!port) {
		port = fs->next_port++;
		if (fs->next_port == EPORT_FIRST)
			fs->next_port = PORT_FIRST;
		if (lsn_find(fs, port))
			port = 0;
	}
	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->base.stack = s;
	memcpy(&l->addr, sa, salen);
	sa_set_port(&l->addr, port);
	l->port = port;
	l->up = up;
	l->ctx = ctx;
	l->next = fs->lsns;
	fs->lsns = l;
	fs->base.users++;
	*out = (struct uiw_sctp_lsn *)l;
	return 0;
}

static void f_lsn_addr(const struct uiw_sctp_lsn *sl,
		       struct sockaddr_storage *ss)
{
	*ss = ((const struct flsn *)sl)->addr;
}

static void f_unlisten(struct uiw_sctp_lsn *sl)
{
	struct flsn *l = (struct flsn *)sl, **pp;
	struct fstack *fs = FS(l->base.stack);
	struct fend *e;

	for (pp = &fs->lsns; *pp; pp = &(*pp)->next) {
		if (*pp == l) {
			*pp = l->next;
			break;
		}
	}
	for (e = fs->ends; e; e = e->next)
		if (e->lsn == l)
			e->lsn = NULL;
	fs->base.users--;
	free(l);
}

static struct fend *end_new(struct fstack *fs, unsigned assoc, bool active,
			    const struct uiw_sctp_up *up, void *ctx)
{
	struct fend *e = calloc(1, sizeof(*e));
	struct fake_sctp_cfg c = cfg_now();

	if (!e)
		return NULL;
	e->base.stack = (struct uiw_sctp_stack *)fs;
	e->base.up = up;
	e->base.ctx = ctx;
	e->fs = fs;
	e->assoc = assoc;
	e->active = active;
	e->rng = (uint64_t)c.seed << 32 ^ (uint64_t)assoc << 1 ^ active;
	uiw_rt_work_init(&e->w_up, up_run, e);
	uiw_rt_work_init(&e->w_deliver, deliver_run, e);
	uiw_rt_work_init(&e->w_writable, writable_run, e);
	uiw_rt_work_init(&e->w_dry, dry_run, e);
	uiw_rt_work_init(&e->w_down, down_run, e);
	e->next = fs->ends;
	fs->ends = e;
	fs->base.users++;
	return e;
}

static void adapt_of(enum fake_sctp_adapt a, uint32_t other,
		     struct uiw_sctp_info *i)
{
	i->peer_adapt_seen = a != FAKE_ADAPT_NONE;
	i->peer_adapt = a == FAKE_ADAPT_DDP ? UIW_SCTP_ADAPT_DDP :
			a == FAKE_ADAPT_OTHER ? other : 0;
}

static int f_connect(struct uiw_sctp_stack *s, const struct sockaddr *peer,
		     socklen_t peerlen, const struct sockaddr *local,
		     socklen_t locallen, uint16_t udp_port,
		     const struct uiw_sctp_up *up, void *ctx,
		     struct uiw_sctp_assoc **out)
{
	struct fstack *fs = FS(s);
	struct fake_sctp_cfg c = cfg_now();
	uint16_t streams = fs->base.cfg.streams, eport;
	struct uiw_sctp_info *ai, *pi;
	struct fend *a, *p;
	struct flsn *l;
	unsigned n;

	if ((peer->sa_family != AF_INET && peer->sa_family != AF_INET6) ||
	    peerlen > sizeof(ai->peer))
		return -EAFNOSUPPORT;
	n = ++fs->last_assoc;
	a = end_new(fs, n, true, up, ctx);
	if (!a)
		return -ENOMEM;
	pthread_mutex_lock(&glock);
	galive++;
	pthread_mutex_unlock(&glock);
	ai = &a->base.info;
	memcpy(&ai->peer, peer, peerlen);
	if (local && locallen <= sizeof(ai->local))
		memcpy(&ai->local, local, locallen);
	else
		memcpy(&ai->local, peer, peerlen);
	eport = fs->next_eport++;
	if (fs->next_eport < EPORT_FIRST)
		fs->next_eport = EPORT_FIRST;
	sa_set_port(&ai->local, eport);
	ai->peer_udp_port = fs->base.cfg.udp_port;
	ai->in_streams = c.in_streams ? c.in_streams : streams;
	ai->out_streams = c.out_streams ? c.out_streams : streams;
	ai->streams = ai->in_streams < ai->out_streams ? ai->in_streams :
		      ai->out_streams;
	ai->maxseg = c.maxseg ? c.maxseg : FAKE_SCTP_MAXSEG_DEF;
	adapt_of(c.active_sees, c.adapt_other, ai);
	ai->active = true;
	*out = (struct uiw_sctp_assoc *)a;

	l = lsn_find(fs, sa_port(peer));
	if (!l) {
		/* RFC 4960 §8.4: an INIT to a port nobody listens on is
		 * answered with an ABORT. */
		down_set(a, -ECONNREFUSED, true);
		return 0;
	}
	p = end_new(fs, n, false, l->up, l->ctx);
	if (!p) {
		down_set(a, -ECONNREFUSED, true);
		return 0;
	}
	p->lsn = l;
	a->peer = p;
	p->peer = a;
	pi = &p->base.info;
	pi->local = l->addr;
	pi->peer = ai->local;
	pi->peer_udp_port = eport;
	pi->in_streams = ai->out_streams;
	pi->out_streams = ai->in_streams;
	pi->streams = ai->streams;
	pi->maxseg = ai->maxseg;
	adapt_of(c.passive_sees, c.adapt_other, pi);
	pi->active = false;
	if (fs->quiet)
		return 0;
	/* The listener's side is up when the COOKIE ECHO arrives, ours
	 * when the COOKIE ACK does (RFC 4960 §5.1). */
	post_up(p, &p->w_up, &p->p_up);
	post_up(a, &a->w_up, &a->p_up);
	return 0;
}

static bool pick_match(const struct fake_sctp_pick *k, const struct fend *e,
		       uint16_t sid, uint32_t ppid)
{
	return (!k->assoc || k->assoc == e->assoc) &&
	       (k->from_active < 0 || (k->from_active != 0) == e->active) &&
	       (k->sid < 0 || (uint16_t)k->sid == sid) &&
	       (k->ppid < 0 || (uint32_t)k->ppid == ppid);
}

static void tap_add(const struct fend *e, const struct fmsg *m)
{
	uint8_t *copy;

	pthread_mutex_lock(&glock);
	if (!tap_on) {
		pthread_mutex_unlock(&glock);
		return;
	}
	if (tap_n == tap_cap) {
		size_t cap = tap_cap ? tap_cap * 2 : 256;
		struct fake_sctp_rec *t = realloc(tap, cap * sizeof(*t));

		if (!t)
			abort();
		tap = t;
		tap_cap = cap;
	}
	copy = malloc(m->len ? m->len : 1);
	if (!copy)
		abort();
	memcpy(copy, m->data, m->len);
	tap[tap_n].assoc = e->assoc;
	tap[tap_n].from_active = e->active;
	tap[tap_n].sid = m->sid;
	tap[tap_n].ppid = m->ppid;
	tap[tap_n].len = m->len;
	tap[tap_n].data = copy;
	tap_n++;
	pthread_cond_broadcast(&gcond);
	pthread_mutex_unlock(&glock);
}

static struct fmsg *msg_new(uint16_t sid, uint32_t ppid, size_t len)
{
	struct fmsg *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	m->data = malloc(len ? len : 1);
	if (!m->data) {
		free(m);
		return NULL;
	}
	m->sid = sid;
	m->ppid = ppid;
	m->len = len;
	return m;
}

static int f_send(struct uiw_sctp_assoc *sa, uint16_t sid, uint32_t ppid,
		  const struct iovec *iov, int iovcnt)
{
	struct fend *e = END(sa), *p = e->peer;
	struct fstack *fs = e->fs;
	struct fake_sctp_cfg c = cfg_now();
	size_t qmax = c.queue_max ? c.queue_max : QUEUE_MAX_DEF, len = 0, o;
	struct fmsg *m;
	int i;

	if (e->down_set || e->closing || !e->is_up)
		return -ENOTCONN;
	for (i = 0; i < iovcnt; i++)
		len += iov[i].iov_len;
	if (len > e->base.info.maxseg)
		return -EMSGSIZE;
	if (sid >= e->base.info.streams)
		return -EINVAL;
	if (e->blocked || (p && p->q_bytes > qmax)) {
		fs->stats.eagain++;
		e->want_writable = true;
		return -EAGAIN;
	}
	m = msg_new(sid, ppid, len);
	if (!m)
		return -ENOMEM;
	for (i = 0, o = 0; i < iovcnt; i++) {
		if (iov[i].iov_len)
			memcpy(m->data + o, iov[i].iov_base, iov[i].iov_len);
		o += iov[i].iov_len;
	}
	m->seq = e->tx_seq++;
	tap_add(e, m);
	if (!p || fs->quiet || p->aborted) {
		/* Sent into an association whose peer is gone: lost. */
		msg_free(m);
		return 0;
	}
	e->out_pending++;
	if (fs->hold_armed && pick_match(&fs->hold_pick, e, sid, ppid) &&
	    fs->hold_seen++ == fs->hold_pick.skip) {
		struct fhold *h = calloc(1, sizeof(*h));

		if (!h)
			abort();
		fs->hold_armed = false;
		h->fs = fs;
		h->m = m;
		h->to = p;
		h->timed = fs->hold_ms > 0;
		h->next = fs->holds;
		fs->holds = h;
		fs->nheld++;
		if (h->timed) {
			uiw_rt_timer_init(&h->timer, hold_fire, h);
			uiw_rt_timer_start(fs->base.rt, &h->timer,
					   fs->hold_ms);
		}
		return 0;
	}
	q_push(p, m, false);
	if (fs->dup_armed && pick_match(&fs->dup_pick, e, sid, ppid) &&
	    fs->dup_seen++ == fs->dup_pick.skip) {
		struct fmsg *d = msg_new(sid, ppid, len);

		if (!d)
			abort();
		fs->dup_armed = false;
		memcpy(d->data, m->data, len);
		d->seq = m->seq;
		e->out_pending++;
		q_push(p, d, false);
	}
	return 0;
}

static int f_unacked(struct uiw_sctp_assoc *sa)
{
	return cfg_now().unacked;
}

static void f_watch_dry(struct uiw_sctp_assoc *sa)
{
	struct fend *e = END(sa);

	if (e->down_set)
		return;
	e->want_dry = true;
	if (!e->out_pending)
		post_up(e, &e->w_dry, &e->p_dry);
}

static void f_shutdown(struct uiw_sctp_assoc *sa)
{
	struct fend *e = END(sa), *p = e->peer;

	if (e->down_set || e->closing)
		return;
	e->closing = true;
	if (p)
		p->closing = true;
	/* SCTP retransmits until everything arrives: gaps close. */
	holds_release_to(e->fs, e);
	if (p)
		holds_release_to(e->fs, p);
	shutdown_check(e);
}

static void f_abort(struct uiw_sctp_assoc *sa)
{
	pair_abort(END(sa), -ECONNABORTED, -ECONNRESET);
}

static void f_buf_free(struct uiw_sctp_stack *s, void *buf)
{
	free(buf);
}

const struct uiw_sctp_ops fake_sctp_ops = {
	.name = "fake",
	.create = f_create,
	.destroy = f_destroy,
	.listen = f_listen,
	.lsn_addr = f_lsn_addr,
	.unlisten = f_unlisten,
	.connect = f_connect,
	.send = f_send,
	.unacked = f_unacked,
	.watch_dry = f_watch_dry,
	.shutdown = f_shutdown,
	.abort = f_abort,
	.buf_free = f_buf_free,
};

/* ---- For the tests ----------------------------------------------------- */

static pthread_once_t cond_once = PTHREAD_ONCE_INIT;

static void cond_init(void)
{
	pthread_condattr_t a;

	/* Deadlines on CLOCK_MONOTONIC: a wall clock step changes no
	 * test's bound. */
	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	pthread_cond_destroy(&gcond);
	pthread_cond_init(&gcond, &a);
	pthread_condattr_destroy(&a);
}


void fake_sctp_install(void)
{
	pthread_once(&cond_once, cond_init);
	pthread_mutex_lock(&glock);
	tap_on = true;
	pthread_mutex_unlock(&glock);
	uiw_sctp_set_backend(UIW_SCTP_USER, &fake_sctp_ops);
}

void fake_sctp_uninstall(void)
{
	uiw_sctp_set_backend(UIW_SCTP_USER, NULL);
}

void fake_sctp_configure(const struct fake_sctp_cfg *c)
{
	pthread_mutex_lock(&glock);
	gcfg = *c;
	pthread_mutex_unlock(&glock);
}

/* Runs fn on the stack's thread; -ENODEV without a stack.  The stack
 * stays while a test calls this: only the test lets it go. */
static int on_stack(int (*fn)(void *arg), void *arg)
{
	struct fstack *fs;

	pthread_mutex_lock(&glock);
	fs = gstack;
	pthread_mutex_unlock(&glock);
	if (!fs)
		return -ENODEV;
	return uiw_rt_call(fs->base.rt, fn, arg);
}

static int quiet_op(void *arg)
{
	struct fstack *fs;

	pthread_mutex_lock(&glock);
	fs = gstack;
	pthread_mutex_unlock(&glock);
	return quiet_call(fs);
}

int fake_sctp_quiet(void)
{
	return on_stack(quiet_op, NULL);
}

static struct fstack *stack_here(void)
{
	struct fstack *fs;

	pthread_mutex_lock(&glock);
	fs = gstack;
	pthread_mutex_unlock(&glock);
	return fs;
}

struct pick_op {
	const struct fake_sctp_pick *p;
	unsigned ms;
};

static int hold_op(void *arg)
{
	struct pick_op *o = arg;
	struct fstack *fs = stack_here();

	fs->hold_pick = *o->p;
	fs->hold_ms = o->ms;
	fs->hold_seen = 0;
	fs->hold_armed = true;
	return 0;
}

int fake_sctp_hold(const struct fake_sctp_pick *p, unsigned ms)
{
	struct pick_op o = { p, ms };

	return on_stack(hold_op, &o);
}

static int dup_op(void *arg)
{
	struct pick_op *o = arg;
	struct fstack *fs = stack_here();

	fs->dup_pick = *o->p;
	fs->dup_seen = 0;
	fs->dup_armed = true;
	return 0;
}

int fake_sctp_dup(const struct fake_sctp_pick *p)
{
	struct pick_op o = { p, 0 };

	return on_stack(dup_op, &o);
}

static int release_op(void *arg)
{
	struct fstack *fs = stack_here();
	int n = 0;

	while (fs->holds) {
		hold_deliver(fs->holds);
		n++;
	}
	return n;
}

int fake_sctp_release(void)
{
	return on_stack(release_op, NULL);
}

static int held_op(void *arg)
{
	return (int)stack_here()->nheld;
}

int fake_sctp_held(void)
{
	return on_stack(held_op, NULL);
}

static struct fend *end_find(struct fstack *fs, unsigned assoc, bool active)
{
	struct fend *e;

	for (e = fs->ends; e; e = e->next)
		if (e->assoc == assoc && e->active == active)
			return e;
	return NULL;
}

struct inject_op {
	unsigned assoc;
	bool to_active;
	uint16_t sid;
	uint32_t ppid;
	const void *p;
	size_t len;
};

static int inject_op(void *arg)
{
	struct inject_op *o = arg;
	struct fstack *fs = stack_here();
	struct fend *e = end_find(fs, o->assoc, o->to_active);
	struct fmsg *m;

	if (!e || !e->is_up || e->down_set || fs->quiet)
		return -ENOENT;
	m = msg_new(o->sid, o->ppid, o->len);
	if (!m)
		return -ENOMEM;
	if (o->len)
		memcpy(m->data, o->p, o->len);
	if (e->base.up && e->base.up->msg) {
		e->base.up->msg(e->base.ctx, (struct uiw_sctp_assoc *)e,
				m->sid, m->ppid, m->data, m->len);
		free(m);
	} else {
		msg_free(m);
	}
	return 0;
}

int fake_sctp_inject(unsigned assoc, bool to_active, uint16_t sid,
		     uint32_t ppid, const void *p, size_t len)
{
	struct inject_op o = { assoc, to_active, sid, ppid, p, len };

	return on_stack(inject_op, &o);
}

struct abort_op {
	unsigned assoc;
	bool from_active;
};

static int abort_op(void *arg)
{
	struct abort_op *o = arg;
	struct fend *e = end_find(stack_here(), o->assoc, o->from_active);

	if (!e || e->down_set)
		return -ENOENT;
	pair_abort(e, -ECONNABORTED, -ECONNRESET);
	return 0;
}

int fake_sctp_abort(unsigned assoc, bool from_active)
{
	struct abort_op o = { assoc, from_active };

	return on_stack(abort_op, &o);
}

struct block_op {
	unsigned assoc;
	bool from_active, on;
};

static int block_op(void *arg)
{
	struct block_op *o = arg;
	struct fend *e = end_find(stack_here(), o->assoc, o->from_active);

	if (!e || e->down_set)
		return -ENOENT;
	e->blocked = o->on;
	if (!o->on && e->want_writable) {
		e->want_writable = false;
		post_up(e, &e->w_writable, &e->p_writable);
	}
	return 0;
}

int fake_sctp_block(unsigned assoc, bool from_active, bool on)
{
	struct block_op o = { assoc, from_active, on };

	return on_stack(block_op, &o);
}

int fake_sctp_assocs(void)
{
	int n;

	pthread_mutex_lock(&glock);
	n = galive;
	pthread_mutex_unlock(&glock);
	return n;
}

static int last_op(void *arg)
{
	return (int)stack_here()->last_assoc;
}

unsigned fake_sctp_last_assoc(void)
{
	int n = on_stack(last_op, NULL);

	return n > 0 ? (unsigned)n : 0;
}

static int stats_op(void *arg)
{
	*(struct fake_sctp_stats *)arg = stack_here()->stats;
	return 0;
}

int fake_sctp_stats(struct fake_sctp_stats *st)
{
	return on_stack(stats_op, st);
}

static int streams_op(void *arg)
{
	return stack_here()->base.cfg.streams;
}

int fake_sctp_streams(void)
{
	return on_stack(streams_op, NULL);
}

static void deadline_of(struct timespec *ts, int ms)
{
	clock_gettime(CLOCK_MONOTONIC, ts);
	ts->tv_sec += ms / 1000;
	ts->tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

/* Waits on gcond (glock held) until the deadline; false once past. */
static bool gwait(const struct timespec *dl)
{
	return pthread_cond_timedwait(&gcond, &glock, dl) != ETIMEDOUT;
}

/* Waits (glock and gcond) until done(arg) holds or ms pass: 0 or
 * -ETIMEDOUT. */
static int wait_until(bool (*done)(const void *arg), const void *arg, int ms)
{
	struct timespec dl;
	int ret = 0;

	pthread_once(&cond_once, cond_init);
	deadline_of(&dl, ms);
	pthread_mutex_lock(&glock);
	while (!done(arg) && ret == 0)
		if (!gwait(&dl) && !done(arg))
			ret = -ETIMEDOUT;
	pthread_mutex_unlock(&glock);
	return ret;
}

static bool is_idle(const void *arg)
{
	return gidle;
}

int fake_sctp_settle(int ms)
{
	return wait_until(is_idle, NULL, ms);
}

static bool assocs_are(const void *arg)
{
	return galive == *(const int *)arg;
}

int fake_sctp_wait_assocs(int n, int ms)
{
	return wait_until(assocs_are, &n, ms);
}

void fake_sctp_tap_enable(bool on)
{
	pthread_mutex_lock(&glock);
	tap_on = on;
	pthread_mutex_unlock(&glock);
}

size_t fake_sctp_tap_count(void)
{
	size_t n;

	pthread_mutex_lock(&glock);
	n = tap_n;
	pthread_mutex_unlock(&glock);
	return n;
}

bool fake_sctp_tap_get(size_t i, struct fake_sctp_rec *r)
{
	bool ok;

	pthread_mutex_lock(&glock);
	ok = i < tap_n;
	if (ok)
		*r = tap[i];
	pthread_mutex_unlock(&glock);
	return ok;
}

static bool tap_beyond(const void *arg)
{
	return tap_n > *(const size_t *)arg;
}

int fake_sctp_tap_wait(size_t n, int ms)
{
	return wait_until(tap_beyond, &n, ms);
}

void fake_sctp_tap_clear(void)
{
	size_t i;

	pthread_mutex_lock(&glock);
	for (i = 0; i < tap_n; i++)
		free((void *)tap[i].data);
	free(tap);
	tap = NULL;
	tap_n = tap_cap = 0;
	pthread_mutex_unlock(&glock);
}
