/*
 * What the drop-in librdmacm does not offer, each with rdma-core 44's
 * symbol so that programs load, failing clearly (errno, and a line
 * under UIWARP_DEBUG) when called:
 *  - rsockets: EOPNOTSUPP.  rpoll and rselect, with no rsocket in
 *    existence, are poll(2) and select(2) (qperf calls rpoll on plain
 *    sockets);
 *  - multicast: iWARP has none; ENOSYS, as the kernel's rdma_cm answers
 *    for an iWARP device;
 *  - rdma_establish (the IB CM's Ready To Use) and the ECE options of
 *    RDMACM_1.3 (IB and RoCE): EOPNOTSUPP.  rdma_reject_ece is
 *    rdma_reject: the MPA Reject carries no reason (RFC 5044 §7.1).
 */
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <sys/select.h>
#include <rdma/rsocket.h>

#include "cma.h"

static int no_rsockets(const char *what)
{
	uiw_compat_log("%s: rsockets are not supported", what);
	errno = EOPNOTSUPP;
	return -1;
}

int rsocket(int domain, int type, int protocol)
{
	return no_rsockets("rsocket");
}

int rbind(int socket, const struct sockaddr *addr, socklen_t addrlen)
{
	return no_rsockets("rbind");
}

int rlisten(int socket, int backlog)
{
	return no_rsockets("rlisten");
}

int raccept(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
	return no_rsockets("raccept");
}

int rconnect(int socket, const struct sockaddr *addr, socklen_t addrlen)
{
	return no_rsockets("rconnect");
}

int rshutdown(int socket, int how)
{
	return no_rsockets("rshutdown");
}

int rclose(int socket)
{
	return no_rsockets("rclose");
}

ssize_t rrecv(int socket, void *buf, size_t len, int flags)
{
	return no_rsockets("rrecv");
}

ssize_t rrecvfrom(int socket, void *buf, size_t len, int flags,
		  struct sockaddr *src_addr, socklen_t *addrlen)
{
	return no_rsockets("rrecvfrom");
}

ssize_t rrecvmsg(int socket, struct msghdr *msg, int flags)
{
	return no_rsockets("rrecvmsg");
}

ssize_t rsend(int socket, const void *buf, size_t len, int flags)
{
	return no_rsockets("rsend");
}

ssize_t rsendto(int socket, const void *buf, size_t len, int flags,
		const struct sockaddr *dest_addr, socklen_t addrlen)
{
	return no_rsockets("rsendto");
}

ssize_t rsendmsg(int socket, const struct msghdr *msg, int flags)
{
	return no_rsockets("rsendmsg");
}

ssize_t rread(int socket, void *buf, size_t count)
{
	return no_rsockets("rread");
}

ssize_t rreadv(int socket, const struct iovec *iov, int iovcnt)
{
	return no_rsockets("rreadv");
}

ssize_t rwrite(int socket, const void *buf, size_t count)
{
	return no_rsockets("rwrite");
}

ssize_t rwritev(int socket, const struct iovec *iov, int iovcnt)
{
	return no_rsockets("rwritev");
}

int rgetpeername(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
	return no_rsockets("rgetpeername");
}

int rgetsockname(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
	return no_rsockets("rgetsockname");
}

int rsetsockopt(int socket, int level, int optname,
		const void *optval, socklen_t optlen)
{
	return no_rsockets("rsetsockopt");
}

int rgetsockopt(int socket, int level, int optname,
		void *optval, socklen_t *optlen)
{
	return no_rsockets("rgetsockopt");
}

int rfcntl(int socket, int cmd, ...)
{
	return no_rsockets("rfcntl");
}

off_t riomap(int socket, void *buf, size_t len, int prot, int flags,
	     off_t offset)
{
	return no_rsockets("riomap");
}

int riounmap(int socket, void *buf, size_t len)
{
	return no_rsockets("riounmap");
}

size_t riowrite(int socket, const void *buf, size_t count, off_t offset,
		int flags)
{
	no_rsockets("riowrite");
	return (size_t)-1;
}

/* With no rsocket, every fd is a plain one. */
int rpoll(struct pollfd *fds, nfds_t nfds, int timeout)
{
	return poll(fds, nfds, timeout);
}

int rselect(int nfds, fd_set *readfds, fd_set *writefds, fd_set *exceptfds,
	    struct timeval *timeout)
{
	return select(nfds, readfds, writefds, exceptfds, timeout);
}

/* ---- rdma_cm calls for other transports ----------------------------- */

static int no_multicast(const char *what)
{
	uiw_compat_log("%s: iWARP has no multicast", what);
	errno = ENOSYS;
	return -1;
}

int rdma_join_multicast(struct rdma_cm_id *id, struct sockaddr *addr,
			void *context)
{
	return no_multicast("rdma_join_multicast");
}

int rdma_join_multicast_ex(struct rdma_cm_id *id,
			   struct rdma_cm_join_mc_attr_ex *mc_join_attr,
			   void *context)
{
	return no_multicast("rdma_join_multicast_ex");
}

int rdma_leave_multicast(struct rdma_cm_id *id, struct sockaddr *addr)
{
	return no_multicast("rdma_leave_multicast");
}

int rdma_establish(struct rdma_cm_id *id)
{
	uiw_compat_unsupported("rdma_establish (InfiniBand connections)");
	return -1;
}

int rdma_set_local_ece(struct rdma_cm_id *id, struct ibv_ece *ece)
{
	uiw_compat_unsupported("rdma_set_local_ece (ECE, InfiniBand and "
			       "RoCE)");
	return -1;
}

int rdma_get_remote_ece(struct rdma_cm_id *id, struct ibv_ece *ece)
{
	uiw_compat_unsupported("rdma_get_remote_ece (ECE, InfiniBand and "
			       "RoCE)");
	return -1;
}

int rdma_reject_ece(struct rdma_cm_id *id, const void *private_data,
		    uint8_t private_data_len)
{
	return rdma_reject(id, private_data, private_data_len);
}
