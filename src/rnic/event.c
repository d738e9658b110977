/*
 * Asynchronous events: the device's bounded queue (event.h), its
 * eventfd, and the API that takes events from it (uiwarp.h).
 */
#include "event.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "dev.h"
#include "../rt/log.h"

int uiw_async_init(struct uiw_async_q *q)
{
	memset(q, 0, sizeof(*q));
	q->ev = calloc(UIW_ASYNC_EVENTS_MAX, sizeof(*q->ev));
	if (!q->ev)
		return -ENOMEM;
	q->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (q->efd < 0) {
		int e = errno;

		free(q->ev);
		return -e;
	}
	pthread_mutex_init(&q->lock, NULL);
	return 0;
}

void uiw_async_fini(struct uiw_async_q *q)
{
	pthread_mutex_destroy(&q->lock);
	close(q->efd);
	free(q->ev);
}

/* The fd follows the count (under q->lock): readable while events are
 * queued, drained when the last goes. */
static void async_fd_set(struct uiw_async_q *q)
{
	uint64_t one = 1;

	if (write(q->efd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		UIW_DBG(2, "async events: eventfd: %s", strerror(errno));
}

static void async_fd_clear(struct uiw_async_q *q)
{
	uint64_t v;

	if (read(q->efd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		UIW_DBG(2, "async events: eventfd: %s", strerror(errno));
}

static struct uiw_async_event *async_at(struct uiw_async_q *q, uint32_t i)
{
	return &q->ev[(q->head + i) % UIW_ASYNC_EVENTS_MAX];
}

void uiw_async_push(struct uiw_device *dev, enum uiw_async_event_type type,
		    struct uiw_qp *qp, struct uiw_srq *srq, struct uiw_cq *cq)
{
	struct uiw_async_q *q = &dev->aq;
	struct uiw_async_event *e;

	pthread_mutex_lock(&q->lock);
	if (q->count == UIW_ASYNC_EVENTS_MAX) {
		/* Full: the oldest goes, and the next taken says so. */
		q->head = (q->head + 1) % UIW_ASYNC_EVENTS_MAX;
		q->count--;
		q->dropped++;
	}
	e = async_at(q, q->count);
	memset(e, 0, sizeof(*e));
	e->type = type;
	e->qp = qp;
	e->srq = srq;
	e->cq = cq;
	if (q->count++ == 0)
		async_fd_set(q);
	pthread_mutex_unlock(&q->lock);
	UIW_DBG(1, "%s: async event %s", dev->name, uiw_async_event_str(type));
}

void uiw_async_forget(struct uiw_device *dev, const void *obj)
{
	struct uiw_async_q *q = &dev->aq;
	uint32_t i, kept = 0;

	pthread_mutex_lock(&q->lock);
	/* Compacts the ring in place, oldest first. */
	for (i = 0; i < q->count; i++) {
		struct uiw_async_event *e = async_at(q, i);

		if ((const void *)e->qp == obj || (const void *)e->srq == obj ||
		    (const void *)e->cq == obj)
			continue;
		if (kept != i)
			*async_at(q, kept) = *e;
		kept++;
	}
	if (q->count && !kept)
		async_fd_clear(q);
	q->count = kept;
	pthread_mutex_unlock(&q->lock);
}

/* Takes the oldest event; false when none is queued. */
static bool async_take(struct uiw_async_q *q, struct uiw_async_event *ev)
{
	bool got = false;

	pthread_mutex_lock(&q->lock);
	if (q->count) {
		*ev = *async_at(q, 0);
		ev->lost = q->dropped;
		q->dropped = 0;
		q->head = (q->head + 1) % UIW_ASYNC_EVENTS_MAX;
		if (--q->count == 0)
			async_fd_clear(q);
		got = true;
	}
	pthread_mutex_unlock(&q->lock);
	return got;
}

int uiw_device_async_fd(struct uiw_device *dev)
{
	if (!dev)
		return uiw_error(EINVAL, "device_async_fd: no device");
	return dev->aq.efd;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int uiw_device_get_async_event(struct uiw_device *dev,
			       struct uiw_async_event *ev, int timeout_ms)
{
	int64_t end;

	if (!dev || !ev)
		return uiw_error(EINVAL, "device_get_async_event: NULL "
				 "argument");
	if (timeout_ms < -1)
		return uiw_error(EINVAL, "device_get_async_event: timeout %d "
				 "ms (-1: forever)", timeout_ms);
	end = timeout_ms > 0 ? now_ms() + timeout_ms : 0;
	for (;;) {
		struct pollfd p = { .fd = dev->aq.efd, .events = POLLIN };
		int left = timeout_ms;

		if (async_take(&dev->aq, ev))
			return 0;
		if (timeout_ms > 0) {
			int64_t l = end - now_ms();

			left = l > 0 ? (int)l : 0;
		}
		if (left == 0)
			return uiw_error(EAGAIN, "device_get_async_event: no "
					 "event on %s", dev->name);
		/* Another thread may take the event the fd announced: then
		 * the loop waits again, for what is left of the time. */
		if (poll(&p, 1, left) < 0) {
			int e = errno;

			return uiw_error(e, "device_get_async_event: %s",
					 e == EINTR ? "interrupted by a signal"
						    : strerror(e));
		}
	}
}
