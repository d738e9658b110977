/*
 * Completion queues: a ring sized at creation, polled by the consumer,
 * with an eventfd that becomes readable when an armed notification fires
 * (the next completion, or only a solicited one: a receive completion of
 * a message with the SE bit, RFC 5040 §5.3, or any error completion).
 */
#include "cq.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "dev.h"
#include "../rt/log.h"

struct uiw_cq *uiw_cq_create(struct uiw_device *dev, int cqe)
{
	struct uiw_cq *cq;

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
	pthread_mutex_init(&cq->lock, NULL);
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
	close(cq->efd);
	pthread_mutex_destroy(&cq->lock);
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

bool uiw_cq_push(struct uiw_cq *cq, const struct uiw_wc *wc)
{
	bool fire = false, ok;

	pthread_mutex_lock(&cq->lock);
	ok = !cq->overflow && cq->count < cq->size;
	if (ok) {
		cq->ring[(cq->head + cq->count) % cq->size] = *wc;
		cq->count++;
		if (cq->armed == UIW_CQ_ARM_NEXT)
			fire = true;
		else if (cq->armed == UIW_CQ_ARM_SOLICITED)
			fire = (wc->flags & UIW_WC_F_SOLICITED) ||
			       wc->status != UIW_WC_SUCCESS;
	} else {
		/* Overflow is an error the consumer must see: wake it. */
		if (!cq->overflow)
			fire = cq->armed != UIW_CQ_ARM_NONE;
		cq->overflow = true;
	}
	if (fire)
		cq->armed = UIW_CQ_ARM_NONE;
	pthread_mutex_unlock(&cq->lock);
	if (fire)
		cq_signal(cq);
	return ok;
}

int uiw_cq_poll(struct uiw_cq *cq, int n, struct uiw_wc *wc)
{
	int i;

	if (!cq || n < 0 || (n > 0 && !wc))
		return uiw_error(EINVAL, "cq_poll: bad arguments");
	pthread_mutex_lock(&cq->lock);
	if (cq->overflow) {
		pthread_mutex_unlock(&cq->lock);
		return uiw_error(EOVERFLOW, "cq_poll: the CQ overflowed "
				 "(%u entries); the QPs using it were moved "
				 "to Error", cq->size);
	}
	for (i = 0; i < n && cq->count > 0; i++) {
		wc[i] = cq->ring[cq->head];
		cq->head = (cq->head + 1) % cq->size;
		cq->count--;
	}
	pthread_mutex_unlock(&cq->lock);
	return i;
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
	pthread_mutex_lock(&cq->lock);
	/* An armed "next" stays the wider request. */
	if (cq->armed != UIW_CQ_ARM_NEXT)
		cq->armed = solicited_only ? UIW_CQ_ARM_SOLICITED
					   : UIW_CQ_ARM_NEXT;
	pthread_mutex_unlock(&cq->lock);
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
