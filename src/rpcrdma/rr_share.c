/*
 * What a Responder's listener and its connections share (rr_share.h).
 *
 * Assembly memory: used counts the buffers every member holds and
 * keeps for later calls.  A member that finds too little waits in
 * line; memory coming back wakes everyone in line (the first may want
 * more than there is, a later one less).  A member that holds some
 * never takes the last max_call, which stays for one that holds none,
 * and takes its turn behind those in line before it: no connection
 * takes it all while others wait, and a new one is never held up by
 * those that hold much.  While anyone waits, members keep no buffers.
 *
 * Connections: members count from their connection request to their
 * end, shed ones excepted (they are ending).
 */
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "rr_share.h"

struct rr_share {
	pthread_mutex_t mu;
	unsigned refs;
	uint64_t cap, used, peak, reserve;
	unsigned conns, max_conns;
	uint64_t mrs;           /* MRs its members hold (atomic) */
	struct rr_member *members;
	struct rr_member *w_head, *w_tail;
};

struct rr_share *rr_share_new(const struct uiw_rr_opts *o, uint64_t min_buf)
{
	struct rr_share *sh = calloc(1, sizeof(*sh));

	if (!sh)
		return NULL;
	pthread_mutex_init(&sh->mu, NULL);
	sh->refs = 1;
	/* a largest call always fits once the others are done */
	sh->reserve = o->max_call < min_buf ? min_buf : o->max_call;
	sh->cap = o->listen_budget < sh->reserve ? sh->reserve :
		o->listen_budget;
	sh->max_conns = o->max_conns;
	return sh;
}

void rr_share_put(struct rr_share *sh)
{
	bool last;

	pthread_mutex_lock(&sh->mu);
	last = --sh->refs == 0;
	pthread_mutex_unlock(&sh->mu);
	if (last) {
		pthread_mutex_destroy(&sh->mu);
		free(sh);
	}
}

/* Under mu: asks m's owner to look at what; its wake fd stays readable
 * until it does (rr_share_pokes, under mu too, so none is lost). */
static void poke(struct rr_member *m, unsigned what)
{
	uint64_t one = 1;
	ssize_t r;

	if (!__atomic_fetch_or(&m->pokes, what, __ATOMIC_RELAXED)) {
		r = write(m->wakefd, &one, sizeof(one));
		(void)r;        /* a counter far from its maximum */
	}
}

static void wake_line(struct rr_share *sh)
{
	struct rr_member *w;

	for (w = sh->w_head; w; w = w->w_next)
		poke(w, RR_POKE_BUDGET);
}

static void unwait(struct rr_share *sh, struct rr_member *m)
{
	struct rr_member *prev = NULL, *w;

	if (!m->waiting)
		return;
	for (w = sh->w_head; w != m; w = w->w_next)
		prev = w;
	if (prev)
		prev->w_next = m->w_next;
	else
		sh->w_head = m->w_next;
	if (sh->w_tail == m)
		sh->w_tail = prev;
	m->w_next = NULL;
	m->waiting = false;
}

/* Under mu: n octets back. */
static void give(struct rr_share *sh, uint64_t n)
{
	sh->used -= n;
	if (n)
		wake_line(sh);
}

bool rr_share_admit(struct rr_share *sh)
{
	struct rr_member *m, *old = NULL;
	uint64_t t, oldest = 0;
	bool ok = true;

	pthread_mutex_lock(&sh->mu);
	if (sh->conns >= sh->max_conns) {
		/* newest first: on a tie the later one found is older */
		for (m = sh->members; m; m = m->m_next) {
			t = __atomic_load_n(&m->idle_since, __ATOMIC_RELAXED);
			if (m->handed && !m->shed && t &&
			    (!old || t <= oldest)) {
				old = m;
				oldest = t;
			}
		}
		ok = old != NULL;
		if (ok) {
			old->shed = true;
			sh->conns--;
			poke(old, RR_POKE_SHED);
		}
	}
	pthread_mutex_unlock(&sh->mu);
	return ok;
}

void rr_share_join(struct rr_share *sh, struct rr_member *m)
{
	pthread_mutex_lock(&sh->mu);
	sh->refs++;
	sh->conns++;
	m->m_next = sh->members;
	if (sh->members)
		sh->members->m_pprev = &m->m_next;
	m->m_pprev = &sh->members;
	sh->members = m;
	pthread_mutex_unlock(&sh->mu);
}

void rr_share_handed(struct rr_share *sh, struct rr_member *m)
{
	pthread_mutex_lock(&sh->mu);
	m->handed = true;
	pthread_mutex_unlock(&sh->mu);
}

void rr_share_leave(struct rr_share *sh, struct rr_member *m,
		    uint64_t octets)
{
	pthread_mutex_lock(&sh->mu);
	*m->m_pprev = m->m_next;
	if (m->m_next)
		m->m_next->m_pprev = m->m_pprev;
	unwait(sh, m);
	if (!m->shed)
		sh->conns--;
	give(sh, octets);
	pthread_mutex_unlock(&sh->mu);
	rr_share_put(sh);
}

void rr_share_idle(struct rr_member *m, uint64_t since)
{
	__atomic_store_n(&m->idle_since, since, __ATOMIC_RELAXED);
}

bool rr_share_take(struct rr_share *sh, struct rr_member *m, uint64_t cap,
		   bool holds, bool *drop)
{
	/* one that holds some leaves the last max_call to one that holds
	 * none, and waits its turn */
	uint64_t room = holds ? cap + sh->reserve : cap;
	struct rr_member *o;
	bool ok;

	pthread_mutex_lock(&sh->mu);
	*drop = sh->used + room > sh->cap && m->kept;
	if (*drop) {
		sh->used -= m->kept;
		m->kept = 0;
	}
	ok = sh->used + room <= sh->cap &&
	     (!holds || !sh->w_head || sh->w_head == m);
	if (ok) {
		sh->used += cap;
		if (sh->used > sh->peak)
			sh->peak = sh->used;
		/* waiting again, it goes to the back of the line */
		unwait(sh, m);
		if (sh->used < sh->cap)
			wake_line(sh);
	} else if (!m->waiting) {
		m->waiting = true;
		if (sh->w_tail)
			sh->w_tail->w_next = m;
		else
			sh->w_head = m;
		sh->w_tail = m;
		for (o = sh->members; o; o = o->m_next)
			if (o != m && o->kept)
				poke(o, RR_POKE_TRIM);
	}
	pthread_mutex_unlock(&sh->mu);
	return ok;
}

void rr_share_give(struct rr_share *sh, uint64_t n)
{
	pthread_mutex_lock(&sh->mu);
	give(sh, n);
	pthread_mutex_unlock(&sh->mu);
}

bool rr_share_keep(struct rr_share *sh, struct rr_member *m, uint64_t n,
		   bool room)
{
	bool keep;

	pthread_mutex_lock(&sh->mu);
	keep = room && !sh->w_head;
	if (keep)
		m->kept += n;
	else
		give(sh, n);
	pthread_mutex_unlock(&sh->mu);
	return keep;
}

void rr_share_reuse(struct rr_share *sh, struct rr_member *m, uint64_t n)
{
	pthread_mutex_lock(&sh->mu);
	m->kept -= n;
	pthread_mutex_unlock(&sh->mu);
}

void rr_share_trim(struct rr_share *sh, struct rr_member *m)
{
	pthread_mutex_lock(&sh->mu);
	give(sh, m->kept);
	m->kept = 0;
	pthread_mutex_unlock(&sh->mu);
}

void rr_share_unwait(struct rr_share *sh, struct rr_member *m)
{
	/* only the owner puts m in line: no lock to find it is not */
	if (!m->waiting)
		return;
	pthread_mutex_lock(&sh->mu);
	unwait(sh, m);
	wake_line(sh);
	pthread_mutex_unlock(&sh->mu);
}

unsigned rr_share_pokes(struct rr_share *sh, struct rr_member *m)
{
	unsigned what;
	uint64_t v;
	ssize_t r;

	if (!__atomic_load_n(&m->pokes, __ATOMIC_RELAXED))
		return 0;
	pthread_mutex_lock(&sh->mu);
	what = __atomic_exchange_n(&m->pokes, 0, __ATOMIC_RELAXED);
	r = read(m->wakefd, &v, sizeof(v));
	pthread_mutex_unlock(&sh->mu);
	(void)r;
	return what;
}

void rr_share_stat(struct rr_share *sh, uint64_t *used, uint64_t *peak,
		   uint64_t *cap, unsigned *conns)
{
	pthread_mutex_lock(&sh->mu);
	*used = sh->used;
	*peak = sh->peak;
	*cap = sh->cap;
	*conns = sh->conns;
	pthread_mutex_unlock(&sh->mu);
}

uint64_t *rr_share_mr_tally(struct rr_share *sh)
{
	return &sh->mrs;
}

uint64_t rr_share_mrs(struct rr_share *sh)
{
	return __atomic_load_n(&sh->mrs, __ATOMIC_RELAXED);
}
