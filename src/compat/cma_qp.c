/*
 * Verbs objects on rdma_cm ids: rdma_create_qp (with the CQs and
 * completion channels rdma-core makes when none are given), SRQs, and
 * the endpoints of <rdma/rdma_verbs.h> programs (rdma_create_ep,
 * rdma_get_request, rdma_destroy_ep).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/rdma_verbs.h>

#include "cma.h"

void cma_qp_state(struct cma_id *c, enum ibv_qp_state s)
{
	if (c->id.qp)
		uiw_compat_qp_set_state(c->id.qp, s);
}

static void destroy_cqs(struct rdma_cm_id *id)
{
	if (id->recv_cq)
		ibv_destroy_cq(id->recv_cq);
	if (id->send_cq && id->send_cq != id->recv_cq)
		ibv_destroy_cq(id->send_cq);
	if (id->recv_cq_channel)
		ibv_destroy_comp_channel(id->recv_cq_channel);
	if (id->send_cq_channel && id->send_cq_channel != id->recv_cq_channel)
		ibv_destroy_comp_channel(id->send_cq_channel);
	id->recv_cq = id->send_cq = NULL;
	id->recv_cq_channel = id->send_cq_channel = NULL;
}

/* rdma-core 44 behaviour (ucma_create_cqs): a CQ of the queue's depth,
 * with a completion channel of its own, for each queue given none. */
static int make_cq(struct rdma_cm_id *id, int depth,
		   struct ibv_comp_channel **chp, struct ibv_cq **cqp)
{
	*chp = ibv_create_comp_channel(id->verbs);
	if (!*chp)
		return -1;
	*cqp = ibv_create_cq(id->verbs, depth > 0 ? depth : 1, id, *chp, 0);
	return *cqp ? 0 : -1;
}

int rdma_create_qp_ex(struct rdma_cm_id *id, struct ibv_qp_init_attr_ex *attr)
{
	struct ibv_qp *qp;
	bool made = false;

	if (!id || !attr)
		return cma_err(EINVAL);
	if (id->qp || !id->verbs) {
		uiw_compat_log("rdma_create_qp: %s", id->qp ? "the id has a "
			       "QP already" : "the id has no device yet "
			       "(resolve the address, or take a connection "
			       "request, first)");
		return cma_err(EINVAL);
	}
	if (attr->qp_type != IBV_QPT_RC) {
		uiw_compat_unsupported("rdma_create_qp: a QP type other than "
				       "IBV_QPT_RC");
		return -1;
	}
	if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || !attr->pd) {
		attr->comp_mask |= IBV_QP_INIT_ATTR_PD;
		attr->pd = id->pd;
	} else if (attr->pd->context != id->verbs) {
		return cma_err(EINVAL);
	}
	if ((id->recv_cq && attr->recv_cq && id->recv_cq != attr->recv_cq) ||
	    (id->send_cq && attr->send_cq && id->send_cq != attr->send_cq))
		return cma_err(EINVAL);
	if (!attr->send_cq && !id->send_cq && attr->cap.max_send_wr) {
		if (make_cq(id, (int)attr->cap.max_send_wr, &id->send_cq_channel,
			    &id->send_cq))
			goto err;
		made = true;
	}
	if (!attr->recv_cq && !id->recv_cq && attr->cap.max_recv_wr) {
		if (make_cq(id, (int)attr->cap.max_recv_wr, &id->recv_cq_channel,
			    &id->recv_cq))
			goto err;
		made = true;
	}
	if (!attr->send_cq)
		attr->send_cq = id->send_cq;
	if (!attr->recv_cq)
		attr->recv_cq = id->recv_cq;
	/* a QP taking its receives from an SRQ still completes them on a
	 * receive CQ */
	if (!attr->recv_cq)
		attr->recv_cq = attr->send_cq;
	if (!attr->srq)
		attr->srq = id->srq;
	/* struct ibv_qp_init_attr is the head of the _ex one */
	if (attr->comp_mask == IBV_QP_INIT_ATTR_PD)
		qp = ibv_create_qp(attr->pd, (struct ibv_qp_init_attr *)attr);
	else
		qp = ibv_create_qp_ex(id->verbs, attr);
	if (!qp)
		goto err;
	id->pd = qp->pd;
	id->qp = qp;
	/* rdma-core 44 behaviour: the QP leaves rdma_create_qp in Init */
	uiw_compat_qp_set_state(qp, IBV_QPS_INIT);
	return 0;
err:
	if (made) {
		int e = errno;

		destroy_cqs(id);
		errno = e;
	}
	return -1;
}

int rdma_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd,
		   struct ibv_qp_init_attr *qp_init_attr)
{
	struct ibv_qp_init_attr_ex ax;

	if (!id || !qp_init_attr)
		return cma_err(EINVAL);
	memset(&ax, 0, sizeof(ax));
	memcpy(&ax, qp_init_attr, sizeof(*qp_init_attr));
	ax.comp_mask = IBV_QP_INIT_ATTR_PD;
	ax.pd = pd ? pd : id->pd;
	if (rdma_create_qp_ex(id, &ax))
		return -1;
	/* the caps the QP got, and the CQs, written back */
	memcpy(qp_init_attr, &ax, sizeof(*qp_init_attr));
	return 0;
}

/* The CQs in the id are those rdma_create_qp made: they go too. */
void rdma_destroy_qp(struct rdma_cm_id *id)
{
	if (!id || !id->qp)
		return;
	ibv_destroy_qp(id->qp);
	id->qp = NULL;
	destroy_cqs(id);
}

int rdma_create_srq_ex(struct rdma_cm_id *id, struct ibv_srq_init_attr_ex *attr)
{
	struct ibv_pd *pd;
	struct ibv_srq *srq;

	if (!id || !attr || !(attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE))
		return cma_err(EINVAL);
	if (attr->srq_type != IBV_SRQT_BASIC) {
		uiw_compat_unsupported("rdma_create_srq_ex: an SRQ other than "
				       "IBV_SRQT_BASIC");
		return -1;
	}
	pd = (attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) && attr->pd ? attr->pd :
	     id->pd;
	if (!pd)
		return cma_err(EINVAL);
	/* struct ibv_srq_init_attr is the head of the _ex one */
	srq = ibv_create_srq(pd, (struct ibv_srq_init_attr *)attr);
	if (!srq)
		return -1;
	if (!id->pd)
		id->pd = pd;
	id->srq = srq;
	return 0;
}

int rdma_create_srq(struct rdma_cm_id *id, struct ibv_pd *pd,
		    struct ibv_srq_init_attr *attr)
{
	struct ibv_srq_init_attr_ex ax;

	if (!id || !attr)
		return cma_err(EINVAL);
	memset(&ax, 0, sizeof(ax));
	memcpy(&ax, attr, sizeof(*attr));
	ax.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD;
	ax.srq_type = IBV_SRQT_BASIC;
	ax.pd = pd;
	if (rdma_create_srq_ex(id, &ax))
		return -1;
	memcpy(attr, &ax, sizeof(*attr));
	return 0;
}

void rdma_destroy_srq(struct rdma_cm_id *id)
{
	if (!id || !id->srq)
		return;
	ibv_destroy_srq(id->srq);
	id->srq = NULL;
}

/* ---- Endpoints (rdma_verbs.h) -------------------------------------- */

int rdma_create_ep(struct rdma_cm_id **idp, struct rdma_addrinfo *res,
		   struct ibv_pd *pd, struct ibv_qp_init_attr *qp_init_attr)
{
	struct rdma_cm_id *id;
	struct cma_id *c;
	int ret;

	if (!idp || !res)
		return cma_err(EINVAL);
	if (rdma_create_id(NULL, &id, NULL,
			   res->ai_port_space ? res->ai_port_space :
						RDMA_PS_TCP))
		return -1;
	c = cma_id_of(id);
	if (res->ai_flags & RAI_PASSIVE) {
		ret = rdma_bind_addr(id, res->ai_src_addr);
		if (ret)
			goto err;
		if (qp_init_attr) {
			c->ep_qp_attr = malloc(sizeof(*qp_init_attr));
			if (!c->ep_qp_attr) {
				errno = ENOMEM;
				goto err;
			}
			*c->ep_qp_attr = *qp_init_attr;
		}
		if (pd)
			id->pd = pd;
	} else {
		ret = rdma_resolve_addr(id, res->ai_src_addr, res->ai_dst_addr,
					2000);
		if (!ret)
			ret = rdma_resolve_route(id, 2000);
		if (!ret && qp_init_attr)
			ret = rdma_create_qp(id, pd, qp_init_attr);
		if (ret)
			goto err;
	}
	*idp = id;
	return 0;
err:
	ret = errno;
	rdma_destroy_ep(id);
	errno = ret;
	return -1;
}

void rdma_destroy_ep(struct rdma_cm_id *id)
{
	if (!id)
		return;
	rdma_destroy_qp(id);
	rdma_destroy_srq(id);
	rdma_destroy_id(id);
}

/* rdma-core 44 behaviour: the next connection request of a synchronous
 * listener, with the QP of rdma_create_ep's attributes made on it. */
int rdma_get_request(struct rdma_cm_id *listen, struct rdma_cm_id **idp)
{
	struct rdma_cm_event *ev;
	struct cma_id *l;

	if (!listen || !idp)
		return cma_err(EINVAL);
	l = cma_id_of(listen);
	if (!l->sync)
		return cma_err(EINVAL);
	if (listen->event) {
		rdma_ack_cm_event(listen->event);
		listen->event = NULL;
	}
	if (rdma_get_cm_event(listen->channel, &ev))
		return -1;
	if (ev->event == RDMA_CM_EVENT_REJECTED) {
		errno = ECONNREFUSED;
		goto err;
	}
	if (ev->status) {
		errno = ev->status < 0 ? -ev->status : ev->status;
		goto err;
	}
	if (ev->event != RDMA_CM_EVENT_CONNECT_REQUEST) {
		errno = EINVAL;
		goto err;
	}
	if (l->ep_qp_attr) {
		struct ibv_qp_init_attr a = *l->ep_qp_attr;

		if (rdma_create_qp(ev->id, listen->pd, &a))
			goto err;
	}
	*idp = ev->id;
	ev->id->event = ev;
	return 0;
err:
	listen->event = ev;
	return -1;
}
