/*
 * The drop-in libibverbs.so.1 inside: each verbs object is a wrapper
 * whose first member is the verbs struct the application sees, with the
 * uiw_ object behind it.  Only verbs*.c include this.
 */
#ifndef UIW_COMPAT_VERBS_PRIV_H
#define UIW_COMPAT_VERBS_PRIV_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include "compat.h"

/* Work requests and completions converted at once on the stack
 * (verbs_qp.c, verbs_cq.c): enough that a usual post or poll is one
 * uiw_ call, few enough to keep the stack frame small. */
#define VC_BATCH 16

struct vc_cq;

struct vc_context {
	struct verbs_context vctx;      /* ibv_context last inside */
	struct uiw_device *dev;
	int own_async_fd;               /* ours to close, or -1 */
	/* The CQs of this context, for the async events that name a
	 * uiw_cq (verbs_device.c); under vctx.context.mutex. */
	struct vc_cq *cqs;
};

struct vc_pd {
	struct ibv_pd pd;
	struct uiw_pd *upd;
};

struct vc_mr {
	struct ibv_mr mr;
	struct uiw_mr *umr;
};

struct vc_cq {
	struct ibv_cq cq;
	struct uiw_cq *ucq;
	atomic_bool armed_once;         /* poll mode from the first arming */
	struct vc_cq *next;             /* vc_context.cqs */
	/* rdma-core 44 behaviour: ibv_destroy_cq waits until every
	 * completion and async event handed out was acknowledged; these
	 * count what was handed out (under cq.mutex). */
	uint32_t comp_reported;
	uint32_t async_reported;
};

struct vc_qp {
	struct ibv_qp qp;
	struct uiw_qp *uqp;
	uint32_t max_inline;
	uint32_t events_reported;      /* under qp.mutex, as for CQs */
	/* What modify_qp recorded of the IB-style attributes. */
	unsigned access;
	uint8_t max_rd_atomic, max_dest_rd_atomic;
};

struct vc_srq {
	struct ibv_srq srq;
	struct uiw_srq *usrq;
	uint32_t events_reported;      /* under srq.mutex */
};

static inline struct vc_context *vc_ctx(struct ibv_context *c)
{
	return (struct vc_context *)verbs_get_ctx(c);
}

static inline struct uiw_device *vc_dev(struct ibv_context *c)
{
	return vc_ctx(c)->dev;
}

/* A negative uiw_ result as the positive errno that verbs returns, with
 * uiw_last_error() logged under UIWARP_DEBUG. */
int vc_err(int uiw_ret, const char *what);
/* The same for calls that return NULL or -1 and set errno. */
void *vc_err_null(int err, const char *what);

/* The ops of every context (verbs_cq.c, verbs_qp.c, verbs_mem.c). */
int vc_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc);
int vc_req_notify_cq(struct ibv_cq *cq, int solicited_only);
int vc_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
		 struct ibv_send_wr **bad_wr);
int vc_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr,
		 struct ibv_recv_wr **bad_wr);
int vc_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr,
		     struct ibv_recv_wr **bad_wr);
struct ibv_qp *vc_create_qp_ex(struct ibv_context *context,
			       struct ibv_qp_init_attr_ex *attr);
struct ibv_srq *vc_create_srq_ex(struct ibv_context *context,
				 struct ibv_srq_init_attr_ex *attr);
struct ibv_cq_ex *vc_create_cq_ex(struct ibv_context *context,
				  struct ibv_cq_init_attr_ex *attr);
/* Installs the ops that say "not supported" (verbs_unsup.c). */
void vc_set_unsupported_ops(struct verbs_context *v);

/* rdma-core 44 behaviour: destroying a CQ, QP or SRQ waits until every
 * event handed out about it was acknowledged (*done reaches reported;
 * the ack functions signal cv under m). */
void vc_wait_acked(pthread_mutex_t *m, pthread_cond_t *cv,
		   const uint32_t *done, const uint32_t *reported);

/* The verbs CQ of a uiw_ CQ of this context, or NULL (verbs_cq.c). */
struct ibv_cq *vc_cq_of(struct vc_context *ctx, struct uiw_cq *ucq);

#endif
