/*
 * Addresses: rdma_getaddrinfo over getaddrinfo(3), the local address
 * the host routes towards a peer, and the device list (uiwarp's one
 * device).
 */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cma.h"

socklen_t cma_sa_len(const struct sockaddr *sa)
{
	return sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) :
					   sizeof(struct sockaddr_in);
}

/* A UDP socket connected to dst has the source address the routing
 * table gives (the kernel's rdma_resolve_addr does the same lookup). */
int cma_route_src(const struct sockaddr *dst, struct sockaddr_storage *src)
{
	socklen_t len = sizeof(*src);
	int fd, ret = 0;

	fd = socket(dst->sa_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	memset(src, 0, sizeof(*src));
	if (connect(fd, dst, cma_sa_len(dst)) < 0 ||
	    getsockname(fd, (struct sockaddr *)src, &len) < 0)
		ret = -errno;
	close(fd);
	if (ret)
		return ret;
	if (src->ss_family == AF_INET)
		((struct sockaddr_in *)src)->sin_port = 0;
	else
		((struct sockaddr_in6 *)src)->sin6_port = 0;
	return 0;
}

/* ---- rdma_getaddrinfo ---------------------------------------------- */

void rdma_freeaddrinfo(struct rdma_addrinfo *res)
{
	while (res) {
		struct rdma_addrinfo *next = res->ai_next;

		free(res->ai_src_addr);
		free(res->ai_dst_addr);
		free(res->ai_src_canonname);
		free(res->ai_dst_canonname);
		free(res->ai_route);
		free(res->ai_connect);
		free(res);
		res = next;
	}
}

static struct sockaddr *sa_dup(const struct sockaddr *sa, socklen_t len)
{
	struct sockaddr *d = malloc(len);

	if (d)
		memcpy(d, sa, len);
	return d;
}

/* rdma-core 44 behaviour: node and service as getaddrinfo(3) takes
 * them (RAI_PASSIVE and RAI_NUMERICHOST as AI_PASSIVE and
 * AI_NUMERICHOST); the first address found is the destination, or
 * with RAI_PASSIVE the source; a source in the hints is kept; errors
 * are getaddrinfo's EAI_ codes. */
int rdma_getaddrinfo(const char *node, const char *service,
		     const struct rdma_addrinfo *hints,
		     struct rdma_addrinfo **res)
{
	struct addrinfo ah = { .ai_socktype = SOCK_STREAM }, *ai;
	struct rdma_addrinfo *r;
	int ret;

	if (!res || (!node && !service))
		return EAI_NONAME;
	if (hints) {
		if (hints->ai_family && hints->ai_family != AF_INET &&
		    hints->ai_family != AF_INET6)
			return EAI_FAMILY;
		if (hints->ai_qp_type && hints->ai_qp_type != IBV_QPT_RC)
			return EAI_SOCKTYPE;
		ah.ai_family = hints->ai_family;
		if (hints->ai_flags & RAI_PASSIVE)
			ah.ai_flags |= AI_PASSIVE;
		if (hints->ai_flags & RAI_NUMERICHOST)
			ah.ai_flags |= AI_NUMERICHOST;
	}
	ret = getaddrinfo(node, service, &ah, &ai);
	if (ret)
		return ret;
	r = calloc(1, sizeof(*r));
	if (!r) {
		freeaddrinfo(ai);
		return EAI_MEMORY;
	}
	r->ai_flags = hints ? hints->ai_flags : 0;
	r->ai_family = ai->ai_family;
	r->ai_qp_type = IBV_QPT_RC;
	r->ai_port_space = RDMA_PS_TCP;
	if (r->ai_flags & RAI_PASSIVE) {
		r->ai_src_addr = sa_dup(ai->ai_addr, ai->ai_addrlen);
		r->ai_src_len = ai->ai_addrlen;
	} else {
		r->ai_dst_addr = sa_dup(ai->ai_addr, ai->ai_addrlen);
		r->ai_dst_len = ai->ai_addrlen;
		if (hints && hints->ai_src_addr && hints->ai_src_len) {
			r->ai_src_addr = sa_dup(hints->ai_src_addr,
						hints->ai_src_len);
			r->ai_src_len = hints->ai_src_len;
		}
	}
	if (node && !(r->ai_flags & RAI_PASSIVE))
		r->ai_dst_canonname = strdup(node);
	freeaddrinfo(ai);
	if ((!r->ai_src_addr && r->ai_src_len) ||
	    (!r->ai_dst_addr && r->ai_dst_len) ||
	    (node && !(r->ai_flags & RAI_PASSIVE) && !r->ai_dst_canonname)) {
		rdma_freeaddrinfo(r);
		return EAI_MEMORY;
	}
	*res = r;
	return 0;
}

/* ---- Devices ------------------------------------------------------- */

struct ibv_context **rdma_get_devices(int *num_devices)
{
	struct ibv_context **list = calloc(2, sizeof(*list));

	if (!list) {
		errno = ENOMEM;
		return NULL;
	}
	list[0] = uiw_compat_context();
	if (num_devices)
		*num_devices = list[0] ? 1 : 0;
	return list;
}

void rdma_free_devices(struct ibv_context **list)
{
	free(list);
}
