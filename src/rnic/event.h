/*
 * Asynchronous events (uiwarp.h: uiw_device_get_async_event): a bounded
 * queue per device of events about objects rather than work requests,
 * and an eventfd readable while one is queued.
 *
 * Locking: the queue's mutex is the innermost lock of the engine.  It is
 * taken under a QP's, an SRQ's or the device's lock, and nothing is
 * called while it is held, so that no caller waits on it in the wrong
 * order.
 */
#ifndef UIW_RNIC_EVENT_H
#define UIW_RNIC_EVENT_H

#include <pthread.h>
#include <stdint.h>
#include <uiwarp/uiwarp.h>

struct uiw_async_q {
	pthread_mutex_t lock;
	struct uiw_async_event *ev;  /* UIW_ASYNC_EVENTS_MAX, a ring */
	uint32_t head, count;
	uint32_t dropped;            /* dropped since the last one taken */
	int efd;                     /* readable while count > 0 */
};

int uiw_async_init(struct uiw_async_q *q);
void uiw_async_fini(struct uiw_async_q *q);
/* Queues an event naming one object (the others NULL); when the queue
 * is full the oldest goes. */
void uiw_async_push(struct uiw_device *dev, enum uiw_async_event_type type,
		    struct uiw_qp *qp, struct uiw_srq *srq, struct uiw_cq *cq);
/* Drops the queued events that name obj (it is being destroyed: no
 * event may hand out a pointer to it afterwards). */
void uiw_async_forget(struct uiw_device *dev, const void *obj);

#endif
