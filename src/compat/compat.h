/*
 * The drop-in libibverbs.so.1 and librdmacm.so.1 share this: what
 * librdmacm needs of libibverbs beyond the verbs API.  libibverbs.so.1
 * defines these and exports them under its version node
 * UIWARP_COMPAT_PRIVATE (libibverbs.map); nothing else may use them.
 */
#ifndef UIW_COMPAT_H
#define UIW_COMPAT_H

#include <sys/socket.h>
#include <infiniband/verbs.h>
#include <uiwarp/uiwarp.h>

/* The process's one device, uiwarp0, opened on first use; every verbs
 * context and every rdma_cm channel shares it.  NULL (errno set, a
 * message logged under UIWARP_DEBUG) if it cannot be opened. */
struct uiw_device *uiw_compat_device(void);

/* The verbs context rdma_cm gives its ids (id->verbs), opened on first
 * use and shared by every id of the process. */
struct ibv_context *uiw_compat_context(void);

/* The uiw_ objects behind verbs objects of this library. */
struct uiw_pd *uiw_compat_pd(struct ibv_pd *pd);
struct uiw_qp *uiw_compat_qp(struct ibv_qp *qp);
/* The verbs QP of a uiw_ QP made by ibv_create_qp (its qp_context). */
struct ibv_qp *uiw_compat_qp_of(struct uiw_qp *qp);

/* The verbs-visible state of a QP as the connection manager moves it:
 * IBV_QPS_RTS on ESTABLISHED, IBV_QPS_ERR once the connection ended. */
void uiw_compat_qp_set_state(struct ibv_qp *qp, enum ibv_qp_state state);

/* The device's IP address: $UIWARP_ADDR (a numeric IPv4 or IPv6
 * address) if set, else the first up, non-loopback IPv4 interface's,
 * else 127.0.0.1.  The GID and node GUID derive from it. */
int uiw_compat_dev_addr(struct sockaddr_storage *ss, socklen_t *len);

/* One line on stderr, "uiwarp: ...", when UIWARP_DEBUG is set. */
void uiw_compat_log(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));
/* What is not supported: logs "uiwarp: WHAT is not supported" under
 * UIWARP_DEBUG, sets errno to EOPNOTSUPP and returns EOPNOTSUPP. */
int uiw_compat_unsupported(const char *what);

#endif
