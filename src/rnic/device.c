/* Devices (software RNIC instances) and protection domains. */
#include "dev.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rnic.h"
#include "../rt/log.h"
#include "../rt/rt.h"

static atomic_uint dev_counter;

struct uiw_device *uiw_device_open(const char *name)
{
	struct uiw_device *dev;
	int ret;

	if (name && (!*name || strlen(name) >= sizeof(dev->name)))
		return uiw_error_null(EINVAL, "device_open: name must have "
				      "1 to %zu characters",
				      sizeof(dev->name) - 1);
	dev = calloc(1, sizeof(*dev));
	if (!dev)
		return uiw_error_null(ENOMEM, "device_open: out of memory");
	if (name)
		snprintf(dev->name, sizeof(dev->name), "%s", name);
	else
		snprintf(dev->name, sizeof(dev->name), "uiw%u",
			 atomic_fetch_add(&dev_counter, 1));
	ret = uiw_mr_table_init(&dev->mrt, UIW_MAX_MR);
	if (ret < 0) {
		free(dev);
		return uiw_error_null(ENOMEM, "device_open: out of memory");
	}
	ret = uiw_async_init(&dev->aq);
	if (ret < 0) {
		uiw_mr_table_fini(&dev->mrt);
		free(dev);
		return uiw_error_null(-ret, "device_open: async event queue: "
				      "%s", strerror(-ret));
	}
	pthread_mutex_init(&dev->lock, NULL);
	dev->next_qpn = 1;
	dev->next_srqn = 1;
	dev->rt = uiw_rt_create(dev->name);
	if (!dev->rt) {
		int e = errno ? errno : ENOMEM;

		uiw_async_fini(&dev->aq);
		uiw_mr_table_fini(&dev->mrt);
		pthread_mutex_destroy(&dev->lock);
		free(dev);
		return uiw_error_null(e, "device_open: cannot start the "
				      "runtime: %s", strerror(e));
	}
	UIW_DBG(1, "device %s opened", dev->name);
	return dev;
}

int uiw_device_close(struct uiw_device *dev)
{
	if (!dev)
		return uiw_error(EINVAL, "device_close: no device");
	pthread_mutex_lock(&dev->lock);
	if (dev->n_pd || dev->n_cq || dev->n_qp || dev->n_mr || dev->n_srq) {
		int ret = uiw_error(EBUSY, "device_close: %s still has %u PDs, "
				    "%u CQs, %u QPs, %u SRQs, %u MRs",
				    dev->name, dev->n_pd, dev->n_cq, dev->n_qp,
				    dev->n_srq, dev->n_mr);

		pthread_mutex_unlock(&dev->lock);
		return ret;
	}
	pthread_mutex_unlock(&dev->lock);
	if (uiw_rt_busy(dev->rt))
		return uiw_error(EBUSY, "device_close: %s: connection manager "
				 "objects remain", dev->name);
	uiw_rt_destroy(dev->rt);
	uiw_async_fini(&dev->aq);
	uiw_mr_table_fini(&dev->mrt);
	pthread_mutex_destroy(&dev->lock);
	UIW_DBG(1, "device %s closed", dev->name);
	free(dev);
	return 0;
}

int uiw_device_query(struct uiw_device *dev, struct uiw_device_attr *attr)
{
	if (!dev || !attr)
		return uiw_error(EINVAL, "device_query: NULL argument");
	memset(attr, 0, sizeof(*attr));
	snprintf(attr->name, sizeof(attr->name), "%s", dev->name);
	attr->max_qp = UIW_MAX_QP;
	attr->max_cq = UIW_MAX_CQ;
	attr->max_mr = UIW_MAX_MR - 1;
	attr->max_qp_wr = UIW_MAX_QP_WR;
	attr->max_sge = UIW_MAX_SGE;
	attr->max_cqe = UIW_MAX_CQE;
	attr->max_ird = UIW_MAX_IRD;
	attr->max_ord = UIW_MAX_ORD;
	attr->max_msg_size = UIW_MAX_MSG_SIZE;
	attr->max_private_data = 512;
	/* RFC 7306: atomics and immediate data (atomic.c) */
	attr->cap_flags = UIW_DEV_CAP_ATOMIC | UIW_DEV_CAP_IMM_DATA;
	attr->max_srq = UIW_MAX_SRQ;
	attr->max_srq_wr = UIW_MAX_SRQ_WR;
	attr->max_srq_sge = UIW_MAX_SGE;
	return 0;
}

struct uiw_rt *uiw_device_rt(struct uiw_device *dev)
{
	return dev ? dev->rt : NULL;
}

struct uiw_pd *uiw_pd_alloc(struct uiw_device *dev)
{
	struct uiw_pd *pd;

	if (!dev)
		return uiw_error_null(EINVAL, "pd_alloc: no device");
	pd = calloc(1, sizeof(*pd));
	if (!pd)
		return uiw_error_null(ENOMEM, "pd_alloc: out of memory");
	pd->dev = dev;
	pthread_mutex_lock(&dev->lock);
	dev->n_pd++;
	pthread_mutex_unlock(&dev->lock);
	return pd;
}

int uiw_pd_free(struct uiw_pd *pd)
{
	struct uiw_device *dev;
	unsigned users;

	if (!pd)
		return uiw_error(EINVAL, "pd_free: no protection domain");
	users = atomic_load(&pd->users);
	if (users)
		return uiw_error(EBUSY, "pd_free: %u MRs or QPs still use it",
				 users);
	dev = pd->dev;
	pthread_mutex_lock(&dev->lock);
	dev->n_pd--;
	pthread_mutex_unlock(&dev->lock);
	free(pd);
	return 0;
}
