/*
 * What the libtirpc CLIENT (rr_tirpc_clnt.c) and SVCXPRT
 * (rr_tirpc_svc.c) share: the settings handed to the transport, the
 * counts handed back, and host:port resolution.
 */
#ifndef UIW_RR_TIRPC_H
#define UIW_RR_TIRPC_H

#include <netdb.h>
#include <uiwarp/rpcrdma.h>

#include "rr_xprt.h"

/* RFC 8166 §12 registers these netids for RPC-over-RDMA. */
#define UIW_RR_NETID  "rdma"
#define UIW_RR_NETID6 "rdma6"

void uiw_rr_opts_from(struct uiw_rr_opts *ro,
		      const struct uiw_rpcrdma_opts *o, bool server);
void uiw_rr_stats_add(struct uiw_rpcrdma_stats *s,
		      const struct uiw_rr_stats *a);
/* getaddrinfo for a stream endpoint; port NULL: 20049.  0 or an EAI_
 * code. */
int uiw_rr_resolve(const char *host, const char *port, bool passive,
		   struct addrinfo **res);
const char *uiw_rr_netid(const struct sockaddr *sa);
/* The length of the address of ss's family. */
socklen_t uiw_rr_sa_len(const struct sockaddr_storage *ss);

#endif
