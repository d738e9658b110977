/*
 * Shared receive queues (uiwarp.h: uiw_srq_create): receive buffers
 * that the QPs created with the SRQ take, oldest first, as untagged
 * messages arrive on them.
 *
 * A QP with an SRQ keeps its own RQ ring (qp.h) for the buffers it has
 * taken and not yet completed: rx.c asks uiw_srq_take for one just in
 * time, when a queue 0 segment needs a buffer the ring does not hold,
 * so placement, completion and flushing are the RQ's as for any QP.
 * With an ordered framing a message completes before the next one
 * starts, so the ring holds one buffer; with an unordered one a message
 * may start before those with lower MSNs (RFC 5041 §5.3), each of which
 * then takes its buffer first (the oldest buffer goes to the lowest
 * MSN), so the ring is as large as the SRQ.  The buffers a QP took
 * complete there, flushed if it leaves RTS first; the others stay in the
 * SRQ for the other QPs.
 *
 * Locking: the QP's lock, then the SRQ's (posting takes the SRQ's
 * alone).  The ring is fixed at creation: the data path never
 * allocates.
 */
#ifndef UIW_RNIC_SRQ_H
#define UIW_RNIC_SRQ_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <uiwarp/uiwarp.h>
#include "qp.h"

struct uiw_srq {
	struct uiw_device *dev;
	struct uiw_pd *pd;
	void *context;
	uint32_t srqn;
	pthread_mutex_t lock;
	struct uiw_rq_ring ring;     /* buffers posted and not taken */
	uint32_t max_sge;
	uint32_t limit;             /* armed limit, 0: not armed */
	atomic_uint users;          /* QPs created with it */
};

/* Under qp->lock: moves the n oldest buffers of qp->srq to the end of
 * the QP's RQ ring.  False, with nothing moved, when the SRQ holds fewer
 * or the ring has no room for them. */
bool uiw_srq_take(struct uiw_qp *qp, uint32_t n);
/* Slots the RQ ring of a QP with srq needs on a framing (see above). */
uint32_t uiw_srq_qp_ring(const struct uiw_srq *srq, bool unordered);

#endif
