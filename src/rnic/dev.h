/* The device (one software RNIC) and its protection domains. */
#ifndef UIW_RNIC_DEV_H
#define UIW_RNIC_DEV_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <uiwarp/uiwarp.h>
#include "mr.h"
#include "event.h"

/* Limits reported by uiw_device_query. */
#define UIW_MAX_QP        4096
#define UIW_MAX_CQ        4096
#define UIW_MAX_MR        65536      /* STag table entries (index 0 unused) */
#define UIW_MAX_QP_WR     16384
#define UIW_MAX_SGE       32
#define UIW_MAX_CQE       (1 << 20)
#define UIW_MAX_IRD       128
#define UIW_MAX_ORD       128
#define UIW_DEFAULT_IRD   32
#define UIW_DEFAULT_ORD   32
#define UIW_MAX_INLINE    1024
#define UIW_MAX_MSG_SIZE  0x80000000u
#define UIW_MAX_SRQ       4096
#define UIW_MAX_SRQ_WR    UIW_MAX_QP_WR

struct uiw_qp;

struct uiw_device {
	char name[32];
	struct uiw_rt *rt;
	pthread_mutex_t lock;       /* counts and the QP list */
	unsigned n_pd, n_cq, n_qp, n_mr, n_srq;
	uint32_t next_qpn, next_srqn;
	struct uiw_qp *qps;         /* linked by qp->dev_next */
	struct uiw_mr_table mrt;
	struct uiw_async_q aq;      /* async events (event.h) */
};

struct uiw_pd {
	struct uiw_device *dev;
	atomic_uint users;          /* MRs and QPs */
	atomic_uint qps;            /* QPs: streams that may use its STags */
};

#endif
