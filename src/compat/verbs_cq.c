/*
 * The drop-in libibverbs.so.1: completion channels, completion queues,
 * polling and completion events.
 *
 * A completion channel is an epoll set over the eventfds of its CQs
 * (uiw_cq_fd): one descriptor the program can poll, shared by several
 * CQs, as the kernel's channel file is.
 */
#include <endian.h>
#include <errno.h>
#include <sched.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "verbs_priv.h"

struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *context)
{
	struct ibv_comp_channel *ch = calloc(1, sizeof(*ch));

	if (!ch) {
		errno = ENOMEM;
		return NULL;
	}
	ch->fd = epoll_create1(EPOLL_CLOEXEC);
	if (ch->fd < 0) {
		free(ch);
		return NULL;
	}
	ch->context = context;
	return ch;
}

int ibv_destroy_comp_channel(struct ibv_comp_channel *channel)
{
	struct ibv_context *context = channel->context;

	/* rdma-core 44 behaviour: EBUSY while a CQ uses the channel. */
	pthread_mutex_lock(&context->mutex);
	if (channel->refcnt) {
		pthread_mutex_unlock(&context->mutex);
		return EBUSY;
	}
	pthread_mutex_unlock(&context->mutex);
	close(channel->fd);
	free(channel);
	return 0;
}

static int vc_channel_add(struct vc_cq *w)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = w };

	return epoll_ctl(w->cq.channel->fd, EPOLL_CTL_ADD, uiw_cq_fd(w->ucq),
			 &ev);
}

struct ibv_cq *ibv_create_cq(struct ibv_context *context, int cqe,
			     void *cq_context, struct ibv_comp_channel *channel,
			     int comp_vector)
{
	struct vc_context *c = vc_ctx(context);
	struct vc_cq *w;

	if (cqe < 1 || comp_vector < 0 ||
	    comp_vector >= context->num_comp_vectors ||
	    (channel && channel->context != context)) {
		errno = EINVAL;
		return NULL;
	}
	w = calloc(1, sizeof(*w));
	if (!w) {
		errno = ENOMEM;
		return NULL;
	}
	w->ucq = uiw_cq_create(c->dev, cqe);
	if (!w->ucq) {
		free(w);
		return vc_err_null(errno, "ibv_create_cq");
	}
	w->cq.context = context;
	w->cq.channel = channel;
	w->cq.cq_context = cq_context;
	w->cq.cqe = cqe;
	pthread_mutex_init(&w->cq.mutex, NULL);
	pthread_cond_init(&w->cq.cond, NULL);
	if (channel && vc_channel_add(w) < 0) {
		int err = errno;

		uiw_cq_destroy(w->ucq);
		free(w);
		errno = err;
		return NULL;
	}
	pthread_mutex_lock(&context->mutex);
	if (channel)
		channel->refcnt++;
	w->next = c->cqs;
	c->cqs = w;
	pthread_mutex_unlock(&context->mutex);
	return &w->cq;
}

struct ibv_cq_ex *vc_create_cq_ex(struct ibv_context *context,
				  struct ibv_cq_init_attr_ex *attr)
{
	uiw_compat_unsupported("ibv_create_cq_ex");
	return NULL;
}

int ibv_resize_cq(struct ibv_cq *cq, int cqe)
{
	return uiw_compat_unsupported("ibv_resize_cq");
}

int ibv_destroy_cq(struct ibv_cq *cq)
{
	struct vc_cq *w = (struct vc_cq *)cq, **pp;
	struct ibv_context *context = cq->context;
	struct vc_context *c = vc_ctx(context);
	int ret;

	vc_wait_acked(&cq->mutex, &cq->cond, &cq->comp_events_completed,
		      &w->comp_reported);
	vc_wait_acked(&cq->mutex, &cq->cond, &cq->async_events_completed,
		      &w->async_reported);

	if (cq->channel)
		epoll_ctl(cq->channel->fd, EPOLL_CTL_DEL, uiw_cq_fd(w->ucq),
			  NULL);
	ret = uiw_cq_destroy(w->ucq);
	if (ret < 0) {
		if (cq->channel)
			vc_channel_add(w);
		return vc_err(ret, "ibv_destroy_cq");
	}
	pthread_mutex_lock(&context->mutex);
	if (cq->channel)
		cq->channel->refcnt--;
	for (pp = &c->cqs; *pp; pp = &(*pp)->next) {
		if (*pp == w) {
			*pp = w->next;
			break;
		}
	}
	pthread_mutex_unlock(&context->mutex);
	pthread_mutex_destroy(&cq->mutex);
	pthread_cond_destroy(&cq->cond);
	free(w);
	return 0;
}

void vc_wait_acked(pthread_mutex_t *m, pthread_cond_t *cv,
		   const uint32_t *done, const uint32_t *reported)
{
	pthread_mutex_lock(m);
	while (*done != *reported)
		pthread_cond_wait(cv, m);
	pthread_mutex_unlock(m);
}

struct ibv_cq *vc_cq_of(struct vc_context *c, struct uiw_cq *ucq)
{
	struct vc_cq *w;

	pthread_mutex_lock(&c->vctx.context.mutex);
	for (w = c->cqs; w && w->ucq != ucq; w = w->next)
		;
	if (w) {
		pthread_mutex_lock(&w->cq.mutex);
		w->async_reported++;
		pthread_mutex_unlock(&w->cq.mutex);
	}
	pthread_mutex_unlock(&c->vctx.context.mutex);
	return w ? &w->cq : NULL;
}

/* ---- Polling ------------------------------------------------------------- */

static const enum ibv_wc_status vc_status_rows[] = {
	[UIW_WC_SUCCESS] = IBV_WC_SUCCESS,
	[UIW_WC_LOC_LEN_ERR] = IBV_WC_LOC_LEN_ERR,
	[UIW_WC_LOC_QP_OP_ERR] = IBV_WC_LOC_QP_OP_ERR,
	[UIW_WC_LOC_PROT_ERR] = IBV_WC_LOC_PROT_ERR,
	[UIW_WC_WR_FLUSH_ERR] = IBV_WC_WR_FLUSH_ERR,
	[UIW_WC_BAD_RESP_ERR] = IBV_WC_BAD_RESP_ERR,
	[UIW_WC_LOC_ACCESS_ERR] = IBV_WC_LOC_ACCESS_ERR,
	[UIW_WC_REM_INV_REQ_ERR] = IBV_WC_REM_INV_REQ_ERR,
	[UIW_WC_REM_ACCESS_ERR] = IBV_WC_REM_ACCESS_ERR,
	[UIW_WC_REM_OP_ERR] = IBV_WC_REM_OP_ERR,
	[UIW_WC_FATAL_ERR] = IBV_WC_FATAL_ERR,
	[UIW_WC_GENERAL_ERR] = IBV_WC_GENERAL_ERR,
};

static const enum ibv_wc_opcode vc_opcode_rows[] = {
	[UIW_WC_SEND] = IBV_WC_SEND,
	[UIW_WC_RDMA_WRITE] = IBV_WC_RDMA_WRITE,
	[UIW_WC_RDMA_READ] = IBV_WC_RDMA_READ,
	[UIW_WC_LOCAL_INV] = IBV_WC_LOCAL_INV,
	[UIW_WC_FETCH_ADD] = IBV_WC_FETCH_ADD,
	[UIW_WC_CMP_SWP] = IBV_WC_COMP_SWAP,
	[UIW_WC_RECV] = IBV_WC_RECV,
	[UIW_WC_RECV_RDMA_WITH_IMM] = IBV_WC_RECV_RDMA_WITH_IMM,
};

#define VC_ROWS(t) (sizeof(t) / sizeof((t)[0]))

static void vc_wc(struct ibv_wc *d, const struct uiw_wc *s)
{
	d->wr_id = s->wr_id;
	d->status = (unsigned)s->status < VC_ROWS(vc_status_rows) ?
		    vc_status_rows[s->status] : IBV_WC_GENERAL_ERR;
	d->opcode = (unsigned)s->opcode < VC_ROWS(vc_opcode_rows) ?
		    vc_opcode_rows[s->opcode] : IBV_WC_SEND;
	/* The Terminate that ended the stream, as the RFC 5040 §4.8 control
	 * fields: layer, error type, error code. */
	d->vendor_err = s->status == UIW_WC_SUCCESS ? 0 :
			((uint32_t)s->term.layer << 16) |
			((uint32_t)s->term.etype << 8) | s->term.ecode;
	d->byte_len = s->byte_len;
	d->wc_flags = 0;
	d->imm_data = 0;
	/* RFC 7306 carries 8 octets of immediate data; verbs has 32 bits,
	 * sent as the low 32 (verbs_qp.c), in network order in imm_data. */
	if (s->flags & UIW_WC_F_WITH_IMM) {
		d->wc_flags |= IBV_WC_WITH_IMM;
		d->imm_data = htobe32((uint32_t)s->imm_data);
	} else if (s->flags & UIW_WC_F_WITH_INV) {
		d->wc_flags |= IBV_WC_WITH_INV;
		d->invalidated_rkey = s->invalidated_stag;
	}
	d->qp_num = s->qp_num;
	/* iWARP names no remote QP on the wire: src_qp (UD's) is 0. */
	d->src_qp = 0;
	d->pkey_index = 0;
	d->slid = 0;
	d->sl = 0;
	d->dlid_path_bits = 0;
}

/* Empty polls in a row after which ibv_poll_cq yields the CPU once. */
#define VC_SPIN_YIELD 64

int vc_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
	struct uiw_cq *ucq = ((struct vc_cq *)cq)->ucq;
	struct uiw_wc buf[VC_BATCH];
	int done = 0, k, i;

	while (done < n) {
		int want = n - done < VC_BATCH ? n - done : VC_BATCH;

		k = uiw_cq_poll(ucq, want, buf);
		if (k < 0) {
			if (done)
				break;
			vc_err(k, "ibv_poll_cq");
			return -1;
		}
		for (i = 0; i < k; i++)
			vc_wc(&wc[done + i], &buf[i]);
		done += k;
		if (k < want)
			break;
	}
	/* Verbs programs spin on an empty CQ while uiwarp's progress
	 * thread does the work that fills it: a spinner that has found
	 * nothing many times in a row lets it run on this CPU. */
	if (done == 0) {
		static __thread unsigned empty;

		if (++empty % VC_SPIN_YIELD == 0)
			sched_yield();
	}
	return done;
}

/*
 * Receiving on the program's thread.  A program that arms a CQ sleeps
 * on its notification when it stops polling: from its first
 * ibv_req_notify_cq the CQ is in the engine's poll mode, where an
 * ibv_poll_cq that finds it empty (and not armed) receives what its
 * connections hold on the calling thread, with no hand-over from the
 * progress thread, and arming hands receiving back to the progress
 * thread for the sleep.  A program that never arms (it spins on
 * ibv_poll_cq, and may stop to spin on memory an RDMA Write fills)
 * leaves receiving to the progress thread, which places octets as
 * they come.  UIWARP_CQ_POLL=0 keeps every CQ out of poll mode.
 */
static void vc_poll_mode(struct vc_cq *w)
{
	const char *e;

	if (atomic_exchange(&w->armed_once, true))
		return;
	e = getenv("UIWARP_CQ_POLL");
	if (e && strcmp(e, "0") == 0)
		return;
	if (uiw_cq_set_poll_mode(w->ucq, UIW_CQ_POLL) < 0)
		uiw_compat_log("ibv_req_notify_cq: no poll mode: %s",
			       uiw_last_error());
}

int vc_req_notify_cq(struct ibv_cq *cq, int solicited_only)
{
	struct vc_cq *w = (struct vc_cq *)cq;
	int ret;

	vc_poll_mode(w);
	ret = uiw_cq_req_notify(w->ucq, solicited_only);
	return ret < 0 ? vc_err(ret, "ibv_req_notify_cq") : 0;
}

/* ---- Completion events --------------------------------------------------- */

int ibv_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq,
		     void **cq_context)
{
	struct epoll_event ev;
	struct vc_cq *w;
	int nonblock = -1, n, k, cs;

	for (;;) {
		/* No lock is held while waiting: a thread cancelled here
		 * (epoll_wait is a cancellation point) leaves nothing
		 * behind.  A signal ends the wait with EINTR, whatever its
		 * SA_RESTART, as epoll_wait does.  The first look does not
		 * wait, so that the flags below are read only when nothing
		 * is ready (most calls come after poll(2) said something
		 * is). */
		n = epoll_wait(channel->fd, &ev, 1, nonblock == 0 ? -1 : 0);
		if (n < 0)
			return -1;
		if (n == 0) {
			/* rdma-core 44 behaviour: a read of the channel fd,
			 * so O_NONBLOCK on it gives EAGAIN instead of
			 * waiting */
			if (nonblock < 0) {
				n = fcntl(channel->fd, F_GETFL);
				nonblock = n >= 0 && (n & O_NONBLOCK);
				if (!nonblock)
					continue;
			}
			errno = EAGAIN;
			return -1;
		}
		pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cs);
		w = ev.data.ptr;
		/* Notifications that fired before this read are one event:
		 * the program polls the CQ empty after it anyway. */
		k = uiw_cq_ack_events(w->ucq);
		if (k > 0) {
			pthread_mutex_lock(&w->cq.mutex);
			w->comp_reported++;
			pthread_mutex_unlock(&w->cq.mutex);
			*cq = &w->cq;
			*cq_context = w->cq.cq_context;
		}
		pthread_setcancelstate(cs, NULL);
		if (k > 0)
			return 0;
		/* Another thread took this one: wait again. */
	}
}

void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents)
{
	pthread_mutex_lock(&cq->mutex);
	cq->comp_events_completed += nevents;
	pthread_cond_broadcast(&cq->cond);
	pthread_mutex_unlock(&cq->mutex);
}
