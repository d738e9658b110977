/*
 * Shared receive queues (srq.h; uiwarp.h).  Semantics as verbs users
 * know them (rdma-core 44 behaviour of ibv_create_srq,
 * ibv_post_srq_recv, ibv_modify_srq with IBV_SRQ_LIMIT): buffers are
 * taken oldest first; the limit event fires once, the first time the
 * count falls below the armed limit, and disarms.
 */
#include "srq.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dev.h"
#include "event.h"
#include "qp.h"
#include "../rt/log.h"

uint32_t uiw_srq_qp_ring(const struct uiw_srq *srq, bool unordered)
{
	return unordered ? srq->ring.size : 1;
}

bool uiw_srq_take(struct uiw_qp *qp, uint32_t n)
{
	struct uiw_srq *srq = qp->srq;
	struct uiw_rq_ring *r = &srq->ring;
	bool limit = false;
	uint32_t i;

	if (n > qp->rq.size - (qp->rq.tail - qp->rq.head))
		return false;
	pthread_mutex_lock(&srq->lock);
	if (r->tail - r->head < n) {
		pthread_mutex_unlock(&srq->lock);
		return false;
	}
	for (i = 0; i < n; i++) {
		const struct uiw_rq_slot *s = &r->slot[r->head++ % r->size];

		uiw_rq_slot_set(uiw_rq_at(qp, qp->rq.tail++), s->wr_id, s->sge,
				s->num_sge, s->length);
	}
	/* The count fell below the armed limit: one event, disarmed. */
	if (srq->limit && r->tail - r->head < srq->limit) {
		srq->limit = 0;
		limit = true;
	}
	pthread_mutex_unlock(&srq->lock);
	if (limit)
		uiw_async_push(srq->dev, UIW_EVENT_SRQ_LIMIT_REACHED, NULL, srq,
			       NULL);
	return true;
}

static void srq_free(struct uiw_srq *srq)
{
	uiw_rq_ring_free(&srq->ring);
	free(srq);
}

struct uiw_srq *uiw_srq_create(struct uiw_pd *pd, struct uiw_srq_attr *attr,
			       void *srq_context)
{
	struct uiw_device *dev;
	struct uiw_srq *srq;

	if (!pd || !attr)
		return uiw_error_null(EINVAL, "srq_create: NULL argument");
	dev = pd->dev;
	if (attr->max_wr < 1 || attr->max_wr > UIW_MAX_SRQ_WR)
		return uiw_error_null(EINVAL, "srq_create: max_wr %u not in "
				      "1..%u", attr->max_wr, UIW_MAX_SRQ_WR);
	if (attr->max_sge > UIW_MAX_SGE)
		return uiw_error_null(EINVAL, "srq_create: max_sge %u above "
				      "%u", attr->max_sge, UIW_MAX_SGE);
	srq = calloc(1, sizeof(*srq));
	if (!srq)
		return uiw_error_null(ENOMEM, "srq_create: out of memory");
	srq->max_sge = attr->max_sge;
	if (uiw_rq_ring_alloc(&srq->ring, attr->max_wr, attr->max_sge) < 0) {
		srq_free(srq);
		return uiw_error_null(ENOMEM, "srq_create: out of memory");
	}
	srq->dev = dev;
	srq->pd = pd;
	srq->context = srq_context;
	pthread_mutex_init(&srq->lock, NULL);
	pthread_mutex_lock(&dev->lock);
	if (dev->n_srq >= UIW_MAX_SRQ) {
		pthread_mutex_unlock(&dev->lock);
		pthread_mutex_destroy(&srq->lock);
		srq_free(srq);
		return uiw_error_null(ENOMEM, "srq_create: %u SRQs exist",
				      UIW_MAX_SRQ);
	}
	dev->n_srq++;
	srq->srqn = dev->next_srqn++;
	pthread_mutex_unlock(&dev->lock);
	atomic_fetch_add(&pd->users, 1);
	/* rdma-core 44 behaviour: srq_limit is not looked at by
	 * ibv_create_srq; the limit is armed with uiw_srq_arm. */
	attr->srq_limit = 0;
	UIW_DBG(3, "srq %u created, %u buffers of %u SGEs", srq->srqn,
		srq->ring.size, srq->max_sge);
	return srq;
}

int uiw_srq_destroy(struct uiw_srq *srq)
{
	struct uiw_device *dev;
	unsigned users;

	if (!srq)
		return uiw_error(EINVAL, "srq_destroy: no SRQ");
	users = atomic_load(&srq->users);
	if (users)
		return uiw_error(EBUSY, "srq_destroy: srq %u: %u QPs still use "
				 "it", srq->srqn, users);
	dev = srq->dev;
	/* No QP takes from it any more: no event names it after this. */
	uiw_async_forget(dev, srq);
	atomic_fetch_sub(&srq->pd->users, 1);
	pthread_mutex_lock(&dev->lock);
	dev->n_srq--;
	pthread_mutex_unlock(&dev->lock);
	UIW_DBG(3, "srq %u destroyed", srq->srqn);
	pthread_mutex_destroy(&srq->lock);
	srq_free(srq);
	return 0;
}

int uiw_srq_query(struct uiw_srq *srq, struct uiw_srq_attr *attr)
{
	if (!srq || !attr)
		return uiw_error(EINVAL, "srq_query: NULL argument");
	pthread_mutex_lock(&srq->lock);
	attr->max_wr = srq->ring.size;
	attr->max_sge = srq->max_sge;
	attr->srq_limit = srq->limit;
	pthread_mutex_unlock(&srq->lock);
	return 0;
}

int uiw_srq_arm(struct uiw_srq *srq, uint32_t srq_limit)
{
	if (!srq)
		return uiw_error(EINVAL, "srq_arm: no SRQ");
	if (srq_limit > srq->ring.size)
		return uiw_error(EINVAL, "srq_arm: srq %u: limit %u above its "
				 "%u buffers", srq->srqn, srq_limit,
				 srq->ring.size);
	pthread_mutex_lock(&srq->lock);
	srq->limit = srq_limit;
	pthread_mutex_unlock(&srq->lock);
	return 0;
}

void *uiw_srq_context(struct uiw_srq *srq)
{
	return srq ? srq->context : NULL;
}

int uiw_post_srq_recv(struct uiw_srq *srq, struct uiw_recv_wr *wr,
		      struct uiw_recv_wr **bad_wr)
{
	int ret;

	if (bad_wr)
		*bad_wr = NULL;
	if (!srq)
		return uiw_error(EINVAL, "post_srq_recv: no SRQ");
	pthread_mutex_lock(&srq->lock);
	ret = uiw_rq_post(&srq->ring, srq->dev, srq->pd, srq->max_sge, "srq",
			  srq->srqn, wr, bad_wr);
	pthread_mutex_unlock(&srq->lock);
	return ret;
}
