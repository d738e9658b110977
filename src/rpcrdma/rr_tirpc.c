/*
 * Settings and counts of the libtirpc binding (see rr_tirpc.h).
 */
#include "rr_tirpc.h"

#include <netinet/in.h>
#include <string.h>

void uiw_rpcrdma_opts_init(struct uiw_rpcrdma_opts *o, bool server)
{
	struct uiw_rr_opts d;

	/* the transport's defaults are Linux's and RFC 8797's; a server
	 * posts fewer receives than a client wants outstanding */
	uiw_rr_opts_init(&d);
	memset(o, 0, sizeof(*o));
	o->credits = server ? 64 : 128;
	o->inline_send = d.inline_send;
	o->inline_recv = d.inline_recv;
	o->no_private_data = !d.private_data;
	o->no_remote_inv = !d.remote_inv;
	o->connect_timeout_ms = d.connect_timeout_ms;
	o->ulb = NULL;
	o->assembly_budget = d.listen_budget;
	o->max_conns = d.max_conns;
	o->idle_timeout_ms = d.idle_timeout_ms;
}

void uiw_rr_opts_from(struct uiw_rr_opts *ro,
		      const struct uiw_rpcrdma_opts *o, bool server)
{
	struct uiw_rpcrdma_opts def;

	if (!o) {
		uiw_rpcrdma_opts_init(&def, server);
		o = &def;
	}
	uiw_rr_opts_init(ro);
	ro->credits = o->credits;
	ro->inline_send = o->inline_send;
	ro->inline_recv = o->inline_recv;
	ro->private_data = !o->no_private_data;
	ro->remote_inv = !o->no_remote_inv;
	ro->connect_timeout_ms = o->connect_timeout_ms;
	ro->listen_budget = o->assembly_budget;
	ro->max_conns = o->max_conns;
	ro->idle_timeout_ms = o->idle_timeout_ms;
}

/* One row per count: the two structures name them alike. */
#define RR_STATS_FIELDS(X)                                             \
	X(calls) X(replies) X(inline_sends) X(inline_bytes)            \
	X(long_calls) X(long_replies) X(read_chunks) X(read_bytes)     \
	X(write_chunks) X(write_bytes) X(reply_chunks) X(reply_bytes)  \
	X(remote_invalidations) X(rdma_errors_sent)                    \
	X(rdma_errors_received) X(credit_waits)

void uiw_rr_stats_add(struct uiw_rpcrdma_stats *s,
		      const struct uiw_rr_stats *a)
{
#define RR_ADD(f) s->f += a->f;
	RR_STATS_FIELDS(RR_ADD)
#undef RR_ADD
}

int uiw_rr_resolve(const char *host, const char *port, bool passive,
		   struct addrinfo **res)
{
	struct addrinfo hints = {
		.ai_family = AF_UNSPEC,
		.ai_socktype = SOCK_STREAM,
		.ai_flags = passive ? AI_PASSIVE : 0,
	};

	return getaddrinfo(host, port ? port : UIW_RPCRDMA_NFS_PORT, &hints,
			   res);
}

const char *uiw_rr_netid(const struct sockaddr *sa)
{
	return sa->sa_family == AF_INET6 ? UIW_RR_NETID6 : UIW_RR_NETID;
}

socklen_t uiw_rr_sa_len(const struct sockaddr_storage *ss)
{
	return ss->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6)
					 : sizeof(struct sockaddr_in);
}
