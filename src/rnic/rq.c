/*
 * Rings of receive buffers (qp.h): a QP's receive queue and a shared
 * receive queue's (srq.c) are posted to, checked and laid out alike.
 */
#include "qp.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dev.h"
#include "../rt/log.h"

void uiw_rq_ring_free(struct uiw_rq_ring *r)
{
	/* The slots' SGE arrays are slices of one allocation. */
	if (r->slot)
		free(r->slot[0].sge);
	free(r->slot);
	r->slot = NULL;
}

int uiw_rq_ring_alloc(struct uiw_rq_ring *r, uint32_t size, uint32_t nsge)
{
	struct uiw_rq_slot *slot;
	struct uiw_sge *sge;
	uint32_t i;

	if (nsge == 0)
		nsge = 1;
	slot = calloc(size, sizeof(*slot));
	sge = slot ? calloc((size_t)size * nsge, sizeof(*sge)) : NULL;
	if (!sge) {
		free(slot);
		return -ENOMEM;
	}
	for (i = 0; i < size; i++)
		slot[i].sge = sge + (size_t)i * nsge;
	uiw_rq_ring_free(r);
	r->slot = slot;
	r->size = size;
	r->nsge = nsge;
	r->head = r->tail = 0;
	return 0;
}

void uiw_rq_slot_set(struct uiw_rq_slot *r, uint64_t wr_id,
		     const struct uiw_sge *sge, uint32_t num_sge,
		     uint32_t length)
{
	r->wr_id = wr_id;
	r->num_sge = num_sge;
	r->length = length;
	r->got = r->total = 0;
	r->last = false;
	r->cls = r->op = 0;
	r->inv_stag = 0;
	if (num_sge)
		memcpy(r->sge, sge, (size_t)num_sge * sizeof(*r->sge));
}

/* The checks of one receive work request; *total: its octets. */
static int rq_check(struct uiw_device *dev, struct uiw_pd *pd,
		    const struct uiw_recv_wr *wr, uint32_t max_sge,
		    const char *who, uint32_t num, uint32_t *total)
{
	uint64_t t = 0;
	int i;

	if (wr->num_sge < 0 || (uint32_t)wr->num_sge > max_sge)
		return uiw_error(EINVAL, "%s %u: %d SGEs, it takes at most %u",
				 who, num, wr->num_sge, max_sge);
	if (wr->num_sge > 0 && !wr->sg_list)
		return uiw_error(EINVAL, "%s %u: num_sge %d without sg_list",
				 who, num, wr->num_sge);
	for (i = 0; i < wr->num_sge; i++) {
		const struct uiw_sge *g = &wr->sg_list[i];
		enum uiw_mr_check c;

		t += g->length;
		if (g->length == 0)
			continue;
		/* A receive buffer is written: local write access. */
		c = uiw_mr_check(&dev->mrt, g->lkey, pd,
				 UIW_ACCESS_LOCAL_WRITE, g->addr, g->length);
		if (c != UIW_MRC_OK)
			return uiw_error(EINVAL, "%s %u: receive SGE %d (lkey "
					 "0x%08x, 0x%llx+%u): %s", who, num, i,
					 g->lkey, (unsigned long long)g->addr,
					 g->length, uiw_mr_check_str(c));
	}
	if (t > UIW_MAX_MSG_SIZE)
		return uiw_error(EINVAL, "%s %u: receive buffer of %llu "
				 "octets, at most %u", who, num,
				 (unsigned long long)t, UIW_MAX_MSG_SIZE);
	*total = (uint32_t)t;
	return 0;
}

int uiw_rq_post(struct uiw_rq_ring *r, struct uiw_device *dev,
		struct uiw_pd *pd, uint32_t max_sge, const char *who,
		uint32_t num, struct uiw_recv_wr *wr,
		struct uiw_recv_wr **bad_wr)
{
	uint32_t total = 0;
	int ret = 0;

	for (; wr; wr = wr->next) {
		ret = rq_check(dev, pd, wr, max_sge, who, num, &total);
		if (ret)
			break;
		if (r->tail - r->head >= r->size) {
			ret = uiw_error(ENOMEM, "%s %u: receive queue full (%u "
					"WRs)", who, num, r->size);
			break;
		}
		uiw_rq_slot_set(&r->slot[r->tail % r->size], wr->wr_id,
				wr->sg_list, (uint32_t)wr->num_sge, total);
		r->tail++;
	}
	if (ret && bad_wr)
		*bad_wr = wr;
	return ret;
}
