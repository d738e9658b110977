/* Completion queues: a fixed ring, an eventfd for notification. */
#ifndef UIW_RNIC_CQ_H
#define UIW_RNIC_CQ_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <uiwarp/uiwarp.h>

enum { UIW_CQ_ARM_NONE = 0, UIW_CQ_ARM_NEXT, UIW_CQ_ARM_SOLICITED };

struct uiw_cq {
	struct uiw_device *dev;
	pthread_mutex_t lock;       /* taken after a QP's lock, never before */
	struct uiw_wc *ring;
	uint32_t size, head, count;
	bool overflow;              /* a completion found the ring full */
	uint8_t armed;              /* UIW_CQ_ARM_* */
	int efd;                    /* eventfd */
	atomic_uint users;          /* QPs */
};

/* Adds a completion.  Returns false when it did not fit: the CQ is then
 * in the overflowed state for good (RFC 5040 §8.1.1 rule 10: only the
 * streams using it are affected; the caller moves them to Error). */
bool uiw_cq_push(struct uiw_cq *cq, const struct uiw_wc *wc);

#endif
