/*
 * Shared receive queues and asynchronous events (uiwarp.h).
 * Placeholder entry points: each fails with -EOPNOTSUPP until the engine
 * grows SRQs and the async event queue.
 */
#include <errno.h>
#include <uiwarp/uiwarp.h>
#include "../rt/log.h"

struct uiw_srq *uiw_srq_create(struct uiw_pd *pd, struct uiw_srq_attr *attr,
			       void *srq_context)
{
	return uiw_error_null(EOPNOTSUPP, "shared receive queues are not "
			      "implemented");
}

int uiw_srq_destroy(struct uiw_srq *srq)
{
	return uiw_error(EOPNOTSUPP, "shared receive queues are not implemented");
}

int uiw_srq_query(struct uiw_srq *srq, struct uiw_srq_attr *attr)
{
	return uiw_error(EOPNOTSUPP, "shared receive queues are not implemented");
}

int uiw_srq_arm(struct uiw_srq *srq, uint32_t srq_limit)
{
	return uiw_error(EOPNOTSUPP, "shared receive queues are not implemented");
}

void *uiw_srq_context(struct uiw_srq *srq)
{
	return NULL;
}

int uiw_post_srq_recv(struct uiw_srq *srq, struct uiw_recv_wr *wr,
		      struct uiw_recv_wr **bad_wr)
{
	if (bad_wr)
		*bad_wr = wr;
	return uiw_error(EOPNOTSUPP, "shared receive queues are not implemented");
}

int uiw_qp_set_error(struct uiw_qp *qp)
{
	return uiw_error(EOPNOTSUPP, "uiw_qp_set_error is not implemented");
}

int uiw_device_async_fd(struct uiw_device *dev)
{
	return uiw_error(EOPNOTSUPP, "async events are not implemented");
}

int uiw_device_get_async_event(struct uiw_device *dev,
			       struct uiw_async_event *ev, int timeout_ms)
{
	return uiw_error(EOPNOTSUPP, "async events are not implemented");
}

const char *uiw_async_event_str(enum uiw_async_event_type type)
{
	return "unknown";
}
