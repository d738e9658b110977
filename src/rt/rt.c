/*
 * Runtime: the progress thread of a device.  It sleeps in epoll_wait
 * until an fd is ready, a timer is due, or another thread hands it work
 * through an eventfd; it never spins and never blocks elsewhere.
 */
#include "rt.h"
#include "log.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#define RT_MAX_EVENTS 64

struct uiw_rt_watch {
	struct uiw_rt *rt;
	int fd;
	uint32_t events;
	bool dead;
	uiw_rt_fd_fn fn;
	void *arg;
	struct uiw_rt_watch *next_zombie;
};

struct uiw_rt {
	int epfd;
	int wakefd;
	pthread_t thread;
	char name[16];

	/* Work queue and uiw_rt_call completions. */
	pthread_mutex_t lock;
	pthread_cond_t done;
	struct uiw_rt_work *head, *tail;
	/* The items queued, changed under lock and read without it: the
	 * loop looks at the queue every round, and finds it empty in most. */
	atomic_uint nwork;
	atomic_bool stop;

	/* Progress thread only. */
	struct uiw_rt_timer timers;       /* sorted ring, list head */
	struct uiw_rt_watch *zombies;     /* removed, freed after a round */

	atomic_int holds;
	atomic_int watches;
	atomic_int armed;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

bool uiw_rt_on_thread(const struct uiw_rt *rt)
{
	return pthread_equal(pthread_self(), rt->thread);
}

void uiw_rt_hold(struct uiw_rt *rt)
{
	atomic_fetch_add(&rt->holds, 1);
}

void uiw_rt_release(struct uiw_rt *rt)
{
	atomic_fetch_sub(&rt->holds, 1);
}

bool uiw_rt_busy(struct uiw_rt *rt)
{
	return atomic_load(&rt->holds) > 0 || atomic_load(&rt->watches) > 0 ||
	       atomic_load(&rt->armed) > 0;
}

/* ---- Watches --------------------------------------------------------- */

struct uiw_rt_watch *uiw_rt_watch_add(struct uiw_rt *rt, int fd,
				      uint32_t events, uiw_rt_fd_fn fn,
				      void *arg)
{
	struct uiw_rt_watch *w = calloc(1, sizeof(*w));
	struct epoll_event ev = { .events = events };

	if (!w)
		return NULL;
	w->rt = rt;
	w->fd = fd;
	w->events = events;
	w->fn = fn;
	w->arg = arg;
	ev.data.ptr = w;
	if (epoll_ctl(rt->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
		int e = errno;

		free(w);
		errno = e;
		return NULL;
	}
	atomic_fetch_add(&rt->watches, 1);
	return w;
}

int uiw_rt_watch_set(struct uiw_rt_watch *w, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.ptr = w };

	if (w->dead)
		return -EINVAL;
	if (events == w->events)
		return 0;
	if (epoll_ctl(w->rt->epfd, EPOLL_CTL_MOD, w->fd, &ev) < 0)
		return -errno;
	w->events = events;
	return 0;
}

uint32_t uiw_rt_watch_events(const struct uiw_rt_watch *w)
{
	return w->events;
}

void uiw_rt_watch_del(struct uiw_rt_watch *w)
{
	struct uiw_rt *rt;

	if (!w || w->dead)
		return;
	rt = w->rt;
	epoll_ctl(rt->epfd, EPOLL_CTL_DEL, w->fd, NULL);
	w->dead = true;
	/* Events of this round may still name w: free it after the round. */
	w->next_zombie = rt->zombies;
	rt->zombies = w;
	atomic_fetch_sub(&rt->watches, 1);
}

static void free_zombies(struct uiw_rt *rt)
{
	while (rt->zombies) {
		struct uiw_rt_watch *w = rt->zombies;

		rt->zombies = w->next_zombie;
		free(w);
	}
}

/* ---- Work ------------------------------------------------------------ */

void uiw_rt_work_init(struct uiw_rt_work *w, void (*fn)(void *arg), void *arg)
{
	w->next = NULL;
	w->fn = fn;
	w->arg = arg;
	w->queued = false;
}

void uiw_rt_post(struct uiw_rt *rt, struct uiw_rt_work *w)
{
	bool was_empty = false;

	pthread_mutex_lock(&rt->lock);
	if (!w->queued) {
		w->queued = true;
		w->next = NULL;
		was_empty = !rt->head;
		if (rt->tail)
			rt->tail->next = w;
		else
			rt->head = w;
		rt->tail = w;
		atomic_fetch_add(&rt->nwork, 1);
	}
	pthread_mutex_unlock(&rt->lock);
	/* The progress thread checks the queue before it sleeps again. */
	if (was_empty && !uiw_rt_on_thread(rt)) {
		uint64_t one = 1;

		while (write(rt->wakefd, &one, sizeof(one)) < 0 &&
		       errno == EINTR)
			;
	}
}

bool uiw_rt_work_cancel(struct uiw_rt *rt, struct uiw_rt_work *w)
{
	struct uiw_rt_work **pp, *prev = NULL;
	bool found = false;

	pthread_mutex_lock(&rt->lock);
	for (pp = &rt->head; *pp; prev = *pp, pp = &(*pp)->next) {
		if (*pp == w) {
			*pp = w->next;
			if (rt->tail == w)
				rt->tail = prev;
			w->queued = false;
			w->next = NULL;
			atomic_fetch_sub(&rt->nwork, 1);
			found = true;
			break;
		}
	}
	pthread_mutex_unlock(&rt->lock);
	return found;
}

/* Runs as many items as were queued when it started; later posts wait
 * for the next round (which then does not sleep), so work that posts
 * itself again cannot starve the fds.  Items are taken one at a time so
 * that uiw_rt_work_cancel still finds the ones not yet run. */
static void run_work(struct uiw_rt *rt)
{
	struct uiw_rt_work *w;
	unsigned count = atomic_load(&rt->nwork);

	while (count--) {
		pthread_mutex_lock(&rt->lock);
		w = rt->head;
		if (w) {
			rt->head = w->next;
			if (!rt->head)
				rt->tail = NULL;
			w->next = NULL;
			w->queued = false;
			atomic_fetch_sub(&rt->nwork, 1);
		}
		pthread_mutex_unlock(&rt->lock);
		if (!w)
			return;
		w->fn(w->arg);
	}
}

struct rt_call {
	struct uiw_rt_work work;
	struct uiw_rt *rt;
	int (*fn)(void *arg);
	void *arg;
	int ret;
	bool finished;
};

static void call_run(void *p)
{
	struct rt_call *c = p;
	int ret = c->fn(c->arg);

	pthread_mutex_lock(&c->rt->lock);
	c->ret = ret;
	c->finished = true;
	pthread_cond_broadcast(&c->rt->done);
	pthread_mutex_unlock(&c->rt->lock);
}

int uiw_rt_call(struct uiw_rt *rt, int (*fn)(void *arg), void *arg)
{
	struct rt_call c = { .rt = rt, .fn = fn, .arg = arg };
	int ret;

	if (uiw_rt_on_thread(rt))
		return fn(arg);
	uiw_rt_work_init(&c.work, call_run, &c);
	uiw_rt_post(rt, &c.work);
	pthread_mutex_lock(&rt->lock);
	while (!c.finished)
		pthread_cond_wait(&rt->done, &rt->lock);
	ret = c.ret;
	pthread_mutex_unlock(&rt->lock);
	return ret;
}

/* ---- Timers ---------------------------------------------------------- */

void uiw_rt_timer_init(struct uiw_rt_timer *t, void (*fn)(void *arg), void *arg)
{
	memset(t, 0, sizeof(*t));
	t->fn = fn;
	t->arg = arg;
}

void uiw_rt_timer_stop(struct uiw_rt *rt, struct uiw_rt_timer *t)
{
	if (!t->armed)
		return;
	t->prev->next = t->next;
	t->next->prev = t->prev;
	t->next = t->prev = NULL;
	t->armed = false;
	atomic_fetch_sub(&rt->armed, 1);
}

void uiw_rt_timer_start(struct uiw_rt *rt, struct uiw_rt_timer *t,
			unsigned ms)
{
	struct uiw_rt_timer *pos;

	uiw_rt_timer_stop(rt, t);
	t->deadline_ns = now_ns() + (uint64_t)ms * 1000000u;
	/* Keep the ring sorted by deadline; equal deadlines fire in order. */
	for (pos = rt->timers.next; pos != &rt->timers; pos = pos->next)
		if (pos->deadline_ns > t->deadline_ns)
			break;
	t->next = pos;
	t->prev = pos->prev;
	pos->prev->next = t;
	pos->prev = t;
	t->armed = true;
	atomic_fetch_add(&rt->armed, 1);
}

static void run_timers(struct uiw_rt *rt)
{
	uint64_t now = now_ns();

	while (rt->timers.next != &rt->timers &&
	       rt->timers.next->deadline_ns <= now) {
		struct uiw_rt_timer *t = rt->timers.next;

		uiw_rt_timer_stop(rt, t);
		t->fn(t->arg);
	}
}

/* epoll_wait timeout in ms: -1 with nothing due, 0 with work queued. */
static int next_timeout(struct uiw_rt *rt)
{
	uint64_t now, left;

	if (atomic_load(&rt->nwork) > 0 || atomic_load(&rt->stop))
		return 0;
	if (rt->timers.next == &rt->timers)
		return -1;
	now = now_ns();
	if (rt->timers.next->deadline_ns <= now)
		return 0;
	left = rt->timers.next->deadline_ns - now;
	/* Round up so that the timer is due when epoll_wait returns. */
	left = (left + 999999u) / 1000000u;
	return left > 3600000u ? 3600000 : (int)left;
}

/* ---- The thread ------------------------------------------------------ */

static void *rt_main(void *p)
{
	struct uiw_rt *rt = p;
	struct epoll_event evs[RT_MAX_EVENTS];

	for (;;) {
		int i, n;

		n = epoll_wait(rt->epfd, evs, RT_MAX_EVENTS, next_timeout(rt));
		if (n < 0) {
			if (errno != EINTR)
				UIW_DBG(2, "rt %s: epoll_wait: %s", rt->name,
					strerror(errno));
			n = 0;
		}
		for (i = 0; i < n; i++) {
			struct uiw_rt_watch *w = evs[i].data.ptr;

			if (!w) {
				uint64_t v;

				while (read(rt->wakefd, &v, sizeof(v)) < 0 &&
				       errno == EINTR)
					;
				continue;
			}
			if (!w->dead)
				w->fn(w->arg, evs[i].events);
		}
		run_timers(rt);
		run_work(rt);
		free_zombies(rt);
		if (atomic_load(&rt->stop))
			break;
	}
	return NULL;
}

struct uiw_rt *uiw_rt_create(const char *name)
{
	struct uiw_rt *rt = calloc(1, sizeof(*rt));
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL };
	sigset_t all, old;
	int e;

	if (!rt)
		return uiw_error_null(ENOMEM, "runtime: out of memory");
	snprintf(rt->name, sizeof(rt->name), "%s", name ? name : "uiw");
	rt->epfd = rt->wakefd = -1;
	rt->timers.next = rt->timers.prev = &rt->timers;
	rt->epfd = epoll_create1(EPOLL_CLOEXEC);
	rt->wakefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (rt->epfd < 0 || rt->wakefd < 0 ||
	    epoll_ctl(rt->epfd, EPOLL_CTL_ADD, rt->wakefd, &ev) < 0) {
		e = errno;
		goto fail;
	}
	pthread_mutex_init(&rt->lock, NULL);
	pthread_cond_init(&rt->done, NULL);
	/* Signals belong to the application's threads. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	e = pthread_create(&rt->thread, NULL, rt_main, rt);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (e) {
		pthread_cond_destroy(&rt->done);
		pthread_mutex_destroy(&rt->lock);
		goto fail;
	}
	pthread_setname_np(rt->thread, rt->name);
	return rt;
fail:
	if (rt->epfd >= 0)
		close(rt->epfd);
	if (rt->wakefd >= 0)
		close(rt->wakefd);
	free(rt);
	return uiw_error_null(e, "runtime %s: cannot start: %s",
			      name ? name : "uiw", strerror(e));
}

static void rt_stop(void *p)
{
	struct uiw_rt *rt = p;

	atomic_store(&rt->stop, true);
}

void uiw_rt_destroy(struct uiw_rt *rt)
{
	struct uiw_rt_work stop;

	if (!rt)
		return;
	if (uiw_rt_busy(rt))
		UIW_DBG(1, "rt %s: destroyed while in use", rt->name);
	uiw_rt_work_init(&stop, rt_stop, rt);
	uiw_rt_post(rt, &stop);
	pthread_join(rt->thread, NULL);
	free_zombies(rt);
	close(rt->wakefd);
	close(rt->epfd);
	pthread_cond_destroy(&rt->done);
	pthread_mutex_destroy(&rt->lock);
	free(rt);
}
