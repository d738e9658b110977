/*
 * Connection setup on rdma_cm ids: rdma_connect, rdma_accept,
 * rdma_reject and rdma_disconnect over uiw_cm_connect, _accept, _reject
 * and _disconnect, with the IRD and ORD of rdma_conn_param and
 * uiwarp's own options.  Their outcome comes as events (cma_event.c).
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "cma.h"

/* The device's IRD and ORD bounds. */
static void dev_depths(uint32_t *max_ird, uint32_t *max_ord)
{
	struct uiw_device_attr a;

	if (uiw_device_query(uiw_compat_device(), &a) < 0) {
		*max_ird = *max_ord = 0;
		return;
	}
	*max_ird = a.max_ird;
	*max_ord = a.max_ord;
}

/* rdma-core 44 behaviour (ucma_valid_param, rdma_accept): 0xFF asks for
 * as much as the device gives (bounded by dflt when dflt is not 0xFF),
 * a value above the device's maximum is refused.  0: the QP's
 * default. */
static int depth_of(uint8_t v, uint8_t dflt, uint32_t max, uint32_t *out)
{
	if (v == RDMA_MAX_RESP_RES) {
		*out = dflt != RDMA_MAX_RESP_RES && dflt < max ? dflt : max;
		return 0;
	}
	if (v > max) {
		uiw_compat_log("responder_resources / initiator_depth %u above "
			       "the device's %u", v, max);
		return -EINVAL;
	}
	*out = v;
	return 0;
}

/* The uiw_conn_param of a connect or accept; 0 or -errno (logged). */
static int conn_param(struct cma_id *c, const struct rdma_conn_param *cp,
		      bool initiator, struct uiw_conn_param *p)
{
	struct cma_opts eff;
	uint32_t max_ird, max_ord;
	/* accept without parameters: what the Request asked */
	uint8_t ird = initiator ? RDMA_MAX_RESP_RES : c->peer_ord;
	uint8_t ord = initiator ? RDMA_MAX_INIT_DEPTH : c->peer_ird;
	int ret;

	memset(p, 0, sizeof(*p));
	ret = cma_opt_resolve(&c->opts, &eff);
	if (ret)
		return ret;
	cma_opt_conn_param(&eff, initiator, p);
	dev_depths(&max_ird, &max_ord);
	if (cp) {
		ret = depth_of(cp->responder_resources, ird, max_ird, &p->ird);
		if (!ret)
			ret = depth_of(cp->initiator_depth, ord, max_ord,
				       &p->ord);
		if (ret)
			return ret;
		p->private_data = cp->private_data;
		p->private_data_len = cp->private_data ? cp->private_data_len :
							 0;
	} else {
		p->ird = ird < max_ird ? ird : max_ird;
		p->ord = ord < max_ord ? ord : max_ord;
	}
	return 0;
}

/* The QP of the id: rdma_connect and rdma_accept need one made on it
 * (rdma_create_qp), or by ibv_create_qp and set as id->qp. */
static struct uiw_qp *id_qp(struct cma_id *c, const char *what)
{
	struct uiw_qp *qp = c->id.qp ? uiw_compat_qp(c->id.qp) : NULL;

	if (!qp) {
		uiw_compat_log("%s: the id has no QP (a QP named only by "
			       "conn_param.qp_num is not supported)", what);
		errno = EINVAL;
	}
	return qp;
}

int rdma_connect(struct rdma_cm_id *id, struct rdma_conn_param *conn)
{
	struct uiw_conn_param p;
	struct cma_channel *ch;
	struct uiw_cm_id *uid;
	struct uiw_qp *qp;
	struct cma_id *c;
	int ret;

	c = cma_id_lock(id, CMA_S(CMA_ROUTE_RESOLVED), "rdma_connect");
	if (!c)
		return -1;
	qp = id_qp(c, "rdma_connect");
	ret = qp ? conn_param(c, conn, true, &p) : -errno;
	if (ret) {
		pthread_mutex_unlock(&cma_lock);
		return cma_err(-ret);
	}
	if (c->resv_fd >= 0)
		close(c->resv_fd);
	c->resv_fd = -1;
	ch = cma_ch_of(id->channel);
	ret = uiw_cm_connect(ch->uch, qp, &id->route.addr.dst_addr,
			     cma_sa_len(&id->route.addr.dst_addr), &p, &uid);
	if (ret) {
		pthread_mutex_unlock(&cma_lock);
		return cma_uiw_err(ret, "rdma_connect");
	}
	cma_id_set_home(c, ch, uid);
	c->state = CMA_CONNECT;
	pthread_mutex_unlock(&cma_lock);
	return cma_complete(c);
}

int rdma_accept(struct rdma_cm_id *id, struct rdma_conn_param *conn)
{
	struct uiw_conn_param p;
	struct uiw_qp *qp;
	struct cma_id *c;
	int ret;

	c = cma_id_lock(id, CMA_S(CMA_REQUEST), "rdma_accept");
	if (!c)
		return -1;
	qp = id_qp(c, "rdma_accept");
	ret = qp ? conn_param(c, conn, false, &p) : -errno;
	if (ret) {
		/* id_qp and conn_param logged why */
		pthread_mutex_unlock(&cma_lock);
		cma_qp_state(c, IBV_QPS_ERR);
		return cma_err(-ret);
	}
	ret = uiw_cm_accept(c->uid, qp, &p);
	if (ret) {
		pthread_mutex_unlock(&cma_lock);
		/* rdma-core 44 behaviour: the QP goes to the error state */
		cma_qp_state(c, IBV_QPS_ERR);
		return cma_uiw_err(ret, "rdma_accept");
	}
	c->state = CMA_CONNECT;
	pthread_mutex_unlock(&cma_lock);
	return cma_complete(c);
}

int rdma_reject(struct rdma_cm_id *id, const void *private_data,
		uint8_t private_data_len)
{
	struct cma_id *c;
	int ret;

	c = cma_id_lock(id, CMA_S(CMA_REQUEST), "rdma_reject");
	if (!c)
		return -1;
	ret = uiw_cm_reject(c->uid, private_data,
			    private_data ? private_data_len : 0);
	if (!ret)
		c->state = CMA_DISCONNECTED;
	pthread_mutex_unlock(&cma_lock);
	return ret ? cma_uiw_err(ret, "rdma_reject") : 0;
}

/* The id's state says what the application has read; the connection's
 * is uiw_cm's.  So an id that connected or accepted disconnects whether
 * or not its ESTABLISHED was read (perftest's server never reads it):
 * uiw_cm closes the connection at once, or as soon as its setup ends
 * (Linux's iw_cm_disconnect waits for that end, then closes). */
int rdma_disconnect(struct rdma_cm_id *id)
{
	struct cma_id *c;
	bool up;
	int ret;

	c = cma_id_lock(id, CMA_S(CMA_CONNECT) | CMA_S(CMA_CONNECTED) |
			CMA_S(CMA_DISCONNECTED), "rdma_disconnect");
	if (!c)
		return -1;
	/* a synchronous id waits for its DISCONNECTED when it has read
	 * its ESTABLISHED and no DISCONNECTED yet */
	up = c->state == CMA_CONNECTED;
	ret = uiw_cm_disconnect(c->uid);
	pthread_mutex_unlock(&cma_lock);
	/* Linux: a connection that ended, or whose setup failed, has
	 * nothing left to close */
	if (ret == -ENOTCONN && !up)
		return 0;
	if (ret)
		return cma_uiw_err(ret, "rdma_disconnect");
	return up ? cma_complete(c) : 0;
}

/* Linux: iWARP connections need no notification of the first
 * completion (the IB CM's communication established); rdma_notify is
 * a no-op for them. */
int rdma_notify(struct rdma_cm_id *id, enum ibv_event_type event)
{
	return id ? 0 : cma_err(EINVAL);
}

/* The attributes the kernel's iWARP CM gives (iw_cm_init_qp_attr):
 * Init and RTR: the access rights of a connected QP; RTS: the state
 * alone. */
int rdma_init_qp_attr(struct rdma_cm_id *id, struct ibv_qp_attr *qp_attr,
		      int *qp_attr_mask)
{
	if (!id || !qp_attr || !qp_attr_mask)
		return cma_err(EINVAL);
	switch (qp_attr->qp_state) {
	case IBV_QPS_INIT:
	case IBV_QPS_RTR:
		qp_attr->qp_access_flags = IBV_ACCESS_LOCAL_WRITE |
					   IBV_ACCESS_REMOTE_WRITE |
					   IBV_ACCESS_REMOTE_READ;
		*qp_attr_mask = IBV_QP_STATE | IBV_QP_ACCESS_FLAGS;
		break;
	case IBV_QPS_RTS:
		*qp_attr_mask = IBV_QP_STATE;
		break;
	default:
		return cma_err(EINVAL);
	}
	qp_attr->port_num = id->port_num ? id->port_num : 1;
	*qp_attr_mask |= IBV_QP_PORT;
	return 0;
}
