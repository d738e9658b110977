/*
 * Completion queues: a ring sized at creation, polled by the consumer,
 * with an eventfd that becomes readable when an armed notification fires
 * (the next completion, or only a solicited one: a receive completion of
 * a message with the SE bit, RFC 5040 §5.3, or any error completion).
 */
#include "cq.h"

#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "dev.h"
#include "event.h"
#include "rnic.h"
#include "../rt/log.h"

struct uiw_cq *uiw_cq_create(struct uiw_device *dev, int cqe)
{
	struct uiw_cq *cq;
	uint32_t i;

	if (!dev)
		return uiw_error_null(EINVAL, "cq_create: no device");
	if (cqe < 1 || cqe > UIW_MAX_CQE)
		return uiw_error_null(EINVAL, "cq_create: cqe %d not in "
				      "1..%d", cqe, UIW_MAX_CQE);
	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return uiw_error_null(ENOMEM, "cq_create: out of memory");
	cq->ring = calloc((size_t)cqe, sizeof(*cq->ring));
	if (!cq->ring) {
		free(cq);
		return uiw_error_null(ENOMEM, "cq_create: out of memory");
	}
	cq->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (cq->efd < 0) {
		int e = errno;

		free(cq->ring);
		free(cq);
		return uiw_error_null(e, "cq_create: eventfd: %s", strerror(e));
	}
	cq->dev = dev;
	cq->size = (uint32_t)cqe;
	for (i = 0; i < cq->size; i++)
		atomic_init(&cq->ring[i].seq, i);
	pthread_mutex_init(&cq->poll_lock, NULL);
	cq->pollers.next = cq->pollers.prev = &cq->pollers;
	cq->pm_epfd = cq->pm_wakefd = -1;
	pthread_mutex_lock(&dev->lock);
	dev->n_cq++;
	pthread_mutex_unlock(&dev->lock);
	return cq;
}

int uiw_cq_destroy(struct uiw_cq *cq)
{
	struct uiw_device *dev;
	unsigned users;

	if (!cq)
		return uiw_error(EINVAL, "cq_destroy: no CQ");
	users = atomic_load(&cq->users);
	if (users)
		return uiw_error(EBUSY, "cq_destroy: %u QPs still use it",
				 users);
	dev = cq->dev;
	/* No QP uses it: no event names it after this. */
	uiw_async_forget(dev, cq);
	close(cq->efd);
	if (cq->pm_epfd >= 0) {
		close(cq->pm_epfd);
		close(cq->pm_wakefd);
	}
	pthread_mutex_destroy(&cq->poll_lock);
	free(cq->ring);
	free(cq);
	pthread_mutex_lock(&dev->lock);
	dev->n_cq--;
	pthread_mutex_unlock(&dev->lock);
	return 0;
}

static void cq_signal(struct uiw_cq *cq)
{
	uint64_t one = 1;
	ssize_t r;

	do
		r = write(cq->efd, &one, sizeof(one));
	while (r < 0 && errno == EINTR);
}

/*
 * The ring (a bounded queue of cells with sequence numbers, after
 * Dmitry Vyukov's): cell i takes positions i, i + size, i + 2 size ...
 * Its seq is the position it waits to be filled at (free), or that
 * position + 1 once filled; taking it sets seq to the position + size,
 * the next one it serves.  A producer claims position tail when its
 * cell is free for it, a consumer position head when its cell is
 * filled, each with a compare-and-swap; so producers and consumers never
 * wait for each other's lock, and the entries of one QP (pushed one
 * after the other under its lock) come out in the order pushed.  The
 * ring is full when the cell of tail still holds the entry of tail -
 * size: size entries are outstanding.
 */
static inline struct uiw_cq_cell *cq_cell(struct uiw_cq *cq, uint64_t pos)
{
	return &cq->ring[pos % cq->size];
}

/* Claims the next position to fill; false when the ring is full. */
static bool cq_claim_tail(struct uiw_cq *cq, uint64_t *pos)
{
	uint64_t p = atomic_load_explicit(&cq->tail, memory_order_relaxed);

	for (;;) {
		uint64_t seq = atomic_load_explicit(&cq_cell(cq, p)->seq,
						    memory_order_acquire);
		int64_t dif = (int64_t)(seq - p);

		if (dif == 0) {
			if (atomic_compare_exchange_weak_explicit(
				    &cq->tail, &p, p + 1,
				    memory_order_relaxed,
				    memory_order_relaxed)) {
				*pos = p;
				return true;
			}
		} else if (dif < 0) {
			return false;
		} else {
			p = atomic_load_explicit(&cq->tail,
						 memory_order_relaxed);
		}
	}
}

/* Takes the oldest entry into *wc; false when there is none (or the
 * oldest is claimed and not yet filled: it is there at the next look). */
static bool cq_pop(struct uiw_cq *cq, struct uiw_wc *wc)
{
	uint64_t p = atomic_load_explicit(&cq->head, memory_order_relaxed);
	struct uiw_cq_cell *c;

	for (;;) {
		uint64_t seq;
		int64_t dif;

		c = cq_cell(cq, p);
		seq = atomic_load_explicit(&c->seq, memory_order_acquire);
		dif = (int64_t)(seq - (p + 1));
		if (dif == 0) {
			if (atomic_compare_exchange_weak_explicit(
				    &cq->head, &p, p + 1,
				    memory_order_relaxed,
				    memory_order_relaxed))
				break;
		} else if (dif < 0) {
			return false;
		} else {
			p = atomic_load_explicit(&cq->head,
						 memory_order_relaxed);
		}
	}
	*wc = c->wc;
	atomic_store_explicit(&c->seq, p + cq->size, memory_order_release);
	return true;
}

/* An entry waits (the oldest is filled). */
static bool cq_ready(struct uiw_cq *cq)
{
	uint64_t p = atomic_load(&cq->head);

	return atomic_load(&cq_cell(cq, p)->seq) == p + 1;
}

/* The notification armed as mask allows, disarmed by whoever fires it:
 * true when this caller fires. */
static bool cq_fire(struct uiw_cq *cq, bool solicited)
{
	int a = atomic_load(&cq->armed);

	while (a != UIW_CQ_ARM_NONE) {
		if (a == UIW_CQ_ARM_SOLICITED && !solicited)
			return false;
		if (atomic_compare_exchange_weak(&cq->armed, &a,
						 UIW_CQ_ARM_NONE))
			return true;
	}
	return false;
}

bool uiw_cq_push(struct uiw_cq *cq, const struct uiw_wc *wc, bool *wake)
{
	bool fire = false, ok;
	uint64_t pos;

	ok = !atomic_load_explicit(&cq->overflow, memory_order_relaxed) &&
	     cq_claim_tail(cq, &pos);
	if (ok) {
		struct uiw_cq_cell *c = cq_cell(cq, pos);

		c->wc = *wc;
		/* seq_cst, and so are the arming and the look at it after:
		 * a consumer that arms and then polls again either finds
		 * this entry or is seen armed here (no wake-up is lost). */
		atomic_store(&c->seq, pos + 1);
		fire = cq_fire(cq, (wc->flags & UIW_WC_F_SOLICITED) ||
				   wc->status != UIW_WC_SUCCESS);
	} else if (!atomic_exchange(&cq->overflow, true)) {
		/* Overflow is an error the consumer must see: wake it, and
		 * say it once as the verbs' CQ error event. */
		fire = cq_fire(cq, true);
		uiw_async_push(cq->dev, UIW_EVENT_CQ_ERR, NULL, NULL, cq);
	}
	if (fire)
		atomic_store(&cq->fired, true);
	/* seq_cst after the entry: a poll-mode waiter that counted itself
	 * before looking at the ring is seen here */
	*wake = fire || atomic_load(&cq->pm_waiters) > 0;
	return ok;
}

void uiw_cq_wake(struct uiw_cq *cq)
{
	if (atomic_exchange(&cq->fired, false))
		cq_signal(cq);
	if (atomic_load(&cq->pm_waiters) > 0) {
		uint64_t one = 1;

		if (write(cq->pm_wakefd, &one, sizeof(one)) < 0 &&
		    errno != EAGAIN)
			UIW_DBG(2, "cq: wakefd: %s", strerror(errno));
	}
}

/* ---- Poll mode ---------------------------------------------------------- */

/* Adds a poller's fd to the CQ's epoll set (poll_lock held).  A closed
 * fd leaves the set by itself. */
static void cq_pm_watch(struct uiw_cq *cq, struct uiw_cq_poller *p)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP };
	int fd;

	if (cq->pm_epfd < 0)
		return;
	fd = p->poll(p->ctx, UIW_LLP_POLL_FD);
	if (fd < 0)
		return;
	ev.data.fd = fd;
	if (epoll_ctl(cq->pm_epfd, EPOLL_CTL_ADD, fd, &ev) < 0 &&
	    errno != EEXIST)
		UIW_DBG(2, "cq: poll mode: epoll_ctl: %s", strerror(errno));
}

/*
 * The poller list is read by every uiw_cq_poll that drives it and
 * changed only by attach and detach.  A driver counts itself in drivers
 * and walks the list without the list lock unless a writer is at work
 * (pl_writer); a writer takes the list lock, says so, and waits until
 * the drivers that came before it have left, so that no driver is
 * inside a poller that is being removed (its QP detaching).  Drivers
 * that see the writer walk the list under the lock, after it.  drivers
 * and pl_writer are seq_cst: a driver that missed the writer's flag is
 * seen in its count.
 */
static void cq_pl_write_begin(struct uiw_cq *cq)
{
	pthread_mutex_lock(&cq->poll_lock);
	atomic_store(&cq->pl_writer, true);
	while (atomic_load(&cq->drivers) > 0)
		sched_yield();
}

static void cq_pl_write_end(struct uiw_cq *cq)
{
	atomic_store(&cq->pl_writer, false);
	pthread_mutex_unlock(&cq->poll_lock);
}

void uiw_cq_poller_add(struct uiw_cq *cq, struct uiw_cq_poller *p)
{
	cq_pl_write_begin(cq);
	p->next = &cq->pollers;
	p->prev = cq->pollers.prev;
	cq->pollers.prev->next = p;
	cq->pollers.prev = p;
	cq_pm_watch(cq, p);
	cq_pl_write_end(cq);
}

void uiw_cq_poller_del(struct uiw_cq *cq, struct uiw_cq_poller *p)
{
	cq_pl_write_begin(cq);
	if (p->next) {
		p->prev->next = p->next;
		p->next->prev = p->prev;
		p->next = p->prev = NULL;
	}
	cq_pl_write_end(cq);
}

static int cq_drive_list(struct uiw_cq *cq, int how)
{
	struct uiw_cq_poller *p;
	int got = 0;

	for (p = cq->pollers.next; p != &cq->pollers; p = p->next)
		got += p->poll(p->ctx, how);
	return got;
}

/* Calls every poller; returns the sum of what they returned.  Each
 * poller's QP stays attached during its call (the list's writers wait
 * for the drivers).  A poller that finds another thread receiving
 * returns at once, so two threads polling one CQ do not wait for each
 * other. */
static int cq_drive(struct uiw_cq *cq, int how)
{
	int got;

	atomic_fetch_add(&cq->drivers, 1);
	if (atomic_load(&cq->pl_writer)) {
		atomic_fetch_sub(&cq->drivers, 1);
		pthread_mutex_lock(&cq->poll_lock);
		got = cq_drive_list(cq, how);
		pthread_mutex_unlock(&cq->poll_lock);
		return got;
	}
	got = cq_drive_list(cq, how);
	atomic_fetch_sub(&cq->drivers, 1);
	return got;
}

/* The epoll set and wake-up fd of poll mode, made once. */
static int cq_pm_setup(struct uiw_cq *cq)
{
	struct epoll_event ev = { .events = EPOLLIN };
	struct uiw_cq_poller *p;
	int e = 0;

	pthread_mutex_lock(&cq->poll_lock);
	if (cq->pm_epfd >= 0)
		goto out;
	cq->pm_wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	cq->pm_epfd = epoll_create1(EPOLL_CLOEXEC);
	ev.data.fd = cq->pm_wakefd;
	if (cq->pm_wakefd < 0 || cq->pm_epfd < 0 ||
	    epoll_ctl(cq->pm_epfd, EPOLL_CTL_ADD, cq->pm_wakefd, &ev) < 0) {
		e = errno;
		if (cq->pm_wakefd >= 0)
			close(cq->pm_wakefd);
		if (cq->pm_epfd >= 0)
			close(cq->pm_epfd);
		cq->pm_wakefd = cq->pm_epfd = -1;
		goto out;
	}
	for (p = cq->pollers.next; p != &cq->pollers; p = p->next)
		cq_pm_watch(cq, p);
out:
	pthread_mutex_unlock(&cq->poll_lock);
	return e;
}

bool uiw_cq_defers_tx(struct uiw_cq *cq)
{
	if (!atomic_load_explicit(&cq->defer_send, memory_order_relaxed))
		return false;
	return atomic_load(&cq->armed) == UIW_CQ_ARM_NONE;
}

int uiw_cq_set_poll_mode(struct uiw_cq *cq, int mode)
{
	bool on = mode != 0;
	int e;

	if (!cq)
		return uiw_error(EINVAL, "cq_set_poll_mode: no CQ");
	if (mode & ~(UIW_CQ_POLL | UIW_CQ_POLL_DEFER_SEND))
		return uiw_error(EINVAL, "cq_set_poll_mode: unknown mode "
				 "0x%x", (unsigned)mode);
	if (on) {
		e = cq_pm_setup(cq);
		if (e)
			return uiw_error(e, "cq_set_poll_mode: %s",
					 strerror(e));
	}
	atomic_store(&cq->defer_send, (mode & UIW_CQ_POLL_DEFER_SEND) != 0);
	if (atomic_exchange(&cq->poll_mode, on) == on)
		return 0;
	/* Leaving poll mode: the progress thread receives (and sends what
	 * was deferred) again. */
	if (!on)
		cq_drive(cq, UIW_LLP_POLL_RELEASE);
	return 0;
}

/* The error paths of uiw_cq_poll, out of its way. */
static __attribute__((noinline, cold)) int cq_poll_bad(void)
{
	return uiw_error(EINVAL, "cq_poll: bad arguments");
}

static __attribute__((noinline, cold)) int cq_overflowed(struct uiw_cq *cq)
{
	return uiw_error(EOVERFLOW, "cq_poll: the CQ overflowed (%u "
			 "entries); the QPs using it were moved to Error",
			 cq->size);
}

/* Up to n completions into wc, or -EOVERFLOW. */
static inline int cq_take(struct uiw_cq *cq, int n, struct uiw_wc *wc)
{
	int i;

	if (atomic_load_explicit(&cq->overflow, memory_order_relaxed))
		return cq_overflowed(cq);
	for (i = 0; i < n && cq_pop(cq, &wc[i]); i++)
		;
	return i;
}

static int cq_recv_how(struct uiw_cq *cq)
{
	return atomic_load_explicit(&cq->defer_send, memory_order_relaxed) ?
	       UIW_LLP_POLL_SEND_RECV : UIW_LLP_POLL_RECV;
}

int uiw_cq_poll(struct uiw_cq *cq, int n, struct uiw_wc *wc)
{
	int got;

	if (!cq || n < 0 || (n > 0 && !wc))
		return cq_poll_bad();
	got = cq_take(cq, n, wc);
	/* Poll mode: nothing completed yet and nobody will sleep on the
	 * notification: send what was posted and receive on this thread,
	 * then look again. */
	if (got == 0 && n > 0 && atomic_load(&cq->poll_mode) &&
	    atomic_load(&cq->armed) == UIW_CQ_ARM_NONE) {
		cq_drive(cq, cq_recv_how(cq));
		got = cq_take(cq, n, wc);
	}
	return got;
}

/* Poll mode, not armed: sleeps until a connection has octets to read,
 * a completion arrives, or the timeout passes.  The waiter count makes
 * uiw_cq_push write wakefd, so a completion made by another thread (a
 * send finished by the progress thread) is not slept through. */
static int cq_pm_wait(struct uiw_cq *cq, int timeout_ms)
{
	struct epoll_event ev[8];
	int r, i, ready;

	atomic_fetch_add(&cq->pm_waiters, 1);
	/* Send what was posted and take what is there: octets that
	 * arrived (a placed RDMA Write has no completion) end the wait. */
	ready = cq_drive(cq, cq_recv_how(cq)) > 0;
	ready = ready || cq_ready(cq) || atomic_load(&cq->overflow);
	r = ready ? 1 : 0;
	while (!ready) {
		r = epoll_wait(cq->pm_epfd, ev, 8, timeout_ms);
		if (r < 0 && errno == EINTR)
			continue;
		break;
	}
	atomic_fetch_sub(&cq->pm_waiters, 1);
	if (r < 0)
		return uiw_error(errno, "cq_wait: %s", strerror(errno));
	for (i = 0; i < r && !ready; i++) {
		if (ev[i].data.fd == cq->pm_wakefd) {
			uint64_t v;

			if (read(cq->pm_wakefd, &v, sizeof(v)) < 0 &&
			    errno != EAGAIN)
				UIW_DBG(2, "cq: wakefd: %s", strerror(errno));
		}
	}
	return r > 0 ? 1 : 0;
}

int uiw_cq_fd(struct uiw_cq *cq)
{
	if (!cq)
		return uiw_error(EINVAL, "cq_fd: no CQ");
	return cq->efd;
}

int uiw_cq_req_notify(struct uiw_cq *cq, int solicited_only)
{
	if (!cq)
		return uiw_error(EINVAL, "cq_req_notify: no CQ");
	/* An armed "next" stays the wider request. */
	if (solicited_only) {
		int none = UIW_CQ_ARM_NONE;

		atomic_compare_exchange_strong(&cq->armed, &none,
					       UIW_CQ_ARM_SOLICITED);
	} else {
		atomic_store(&cq->armed, UIW_CQ_ARM_NEXT);
	}
	/* Poll mode: the application may now sleep on the fd; the progress
	 * thread must receive (and fire the notification) meanwhile.
	 * uiw_cq_poll leaves the socket alone while the CQ is armed. */
	if (atomic_load(&cq->poll_mode))
		cq_drive(cq, atomic_load(&cq->defer_send) ?
			 UIW_LLP_POLL_RELEASE : UIW_LLP_POLL_RELEASE_RECV);
	return 0;
}

int uiw_cq_ack_events(struct uiw_cq *cq)
{
	uint64_t v = 0;
	ssize_t r;

	if (!cq)
		return uiw_error(EINVAL, "cq_ack_events: no CQ");
	do
		r = read(cq->efd, &v, sizeof(v));
	while (r < 0 && errno == EINTR);
	if (r < 0) {
		if (errno == EAGAIN)
			return 0;
		return uiw_error(errno, "cq_ack_events: %s", strerror(errno));
	}
	return v > (uint64_t)INT32_MAX ? INT32_MAX : (int)v;
}

int uiw_cq_wait(struct uiw_cq *cq, int timeout_ms)
{
	struct pollfd p;
	int r;

	if (!cq)
		return uiw_error(EINVAL, "cq_wait: no CQ");
	if (atomic_load(&cq->poll_mode)) {
		if (atomic_load(&cq->armed) == UIW_CQ_ARM_NONE)
			return cq_pm_wait(cq, timeout_ms);
	}
	p.fd = cq->efd;
	p.events = POLLIN;
	p.revents = 0;
	do
		r = poll(&p, 1, timeout_ms);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		return uiw_error(errno, "cq_wait: %s", strerror(errno));
	return r > 0 ? 1 : 0;
}
