/*
 * libtirpc helpers of uiwarp-rpcping and the store example: see
 * rpc_util.h.
 */
#include "rpc_util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

CLIENT *uiw_ru_clnt_ip(const char *host, const char *port, int type,
		       rpcprog_t prog, rpcvers_t vers)
{
	struct addrinfo hints = {
		.ai_flags = AI_NUMERICSERV,
		.ai_socktype = type,
	}, *ai;
	bool tcp = type == SOCK_STREAM;
	u_int bufsz = tcp ? UIW_RU_TCP_BUFSZ : 0;
	struct netconfig *nconf;
	struct netbuf nb;
	CLIENT *cl;

	if (getaddrinfo(host, port, &hints, &ai)) {
		rpc_createerr.cf_stat = RPC_UNKNOWNHOST;
		return NULL;
	}
	nconf = getnetconfigent(ai->ai_family == AF_INET6 ?
				(tcp ? "tcp6" : "udp6") : (tcp ? "tcp" : "udp"));
	if (!nconf) {
		freeaddrinfo(ai);
		rpc_createerr.cf_stat = RPC_UNKNOWNPROTO;
		return NULL;
	}
	nb.buf = ai->ai_addr;
	nb.len = nb.maxlen = ai->ai_addrlen;
	/* RPC_ANYFD: libtirpc makes the socket, connects it and closes it
	 * in clnt_destroy. */
	cl = clnt_tli_create(RPC_ANYFD, nconf, &nb, prog, vers, bufsz, bufsz);
	freenetconfigent(nconf);
	freeaddrinfo(ai);
	return cl;
}

SVCXPRT *uiw_ru_svc_ip(const char *addr, const char *port, int type,
		       char *err, size_t errlen)
{
	struct addrinfo hints = {
		.ai_flags = AI_PASSIVE | AI_NUMERICSERV,
		.ai_socktype = type,
	}, *ai;
	const char *what = type == SOCK_STREAM ? "tcp" : "udp";
	SVCXPRT *xprt;
	int fd, one = 1, rc;

	rc = getaddrinfo(addr, port, &hints, &ai);
	if (rc) {
		snprintf(err, errlen, "%s address %s port %s: %s", what, addr,
			 port, gai_strerror(rc));
		return NULL;
	}
	fd = socket(ai->ai_family, type | SOCK_CLOEXEC, 0);
	/* a restarted server takes its port back at once */
	if (fd < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 ||
	    (type == SOCK_STREAM && listen(fd, SOMAXCONN) < 0)) {
		snprintf(err, errlen, "%s port %s on %s: %s", what, port, addr,
			 strerror(errno));
		if (fd >= 0)
			close(fd);
		freeaddrinfo(ai);
		return NULL;
	}
	freeaddrinfo(ai);
	xprt = type == SOCK_STREAM ?
	       svc_vc_create(fd, UIW_RU_TCP_BUFSZ, UIW_RU_TCP_BUFSZ) :
	       svc_dg_create(fd, 0, 0);
	if (!xprt) {
		snprintf(err, errlen, "libtirpc refused the %s socket", what);
		close(fd);
	}
	return xprt;
}

unsigned uiw_ru_svc_port(const SVCXPRT *xprt)
{
	const struct sockaddr *sa = (const struct sockaddr *)xprt->xp_ltaddr.buf;
	size_t len = xprt->xp_ltaddr.len;

	if (sa && len >= sizeof(struct sockaddr_in) && sa->sa_family == AF_INET)
		return ntohs(((const struct sockaddr_in *)sa)->sin_port);
	if (sa && len >= sizeof(struct sockaddr_in6) &&
	    sa->sa_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)sa)->sin6_port);
	return xprt->xp_port;
}

int uiw_ru_serve(int fd, bool (*on_fd)(void *arg), void *arg)
{
	struct pollfd *pfd = NULL;
	int room = 0, rc = 0;

	for (;;) {
		/* svc_pollfd changes as connections come and go */
		int n = svc_max_pollfd, r;

		if (n + 1 > room) {
			struct pollfd *p = realloc(pfd, (n + 1) * sizeof(*p));

			if (!p) {
				rc = -1;
				break;
			}
			pfd = p;
			room = n + 1;
		}
		memcpy(pfd, svc_pollfd, n * sizeof(*pfd));
		pfd[n] = (struct pollfd){ .fd = fd, .events = POLLIN };
		r = poll(pfd, n + 1, -1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			rc = -1;
			break;
		}
		if (pfd[n].revents) {
			if (!on_fd(arg))
				break;
			r--;
		}
		/* svc_getreq_poll stops after r entries with events, so the
		 * extra one (last) is never handed to it. */
		if (r > 0)
			svc_getreq_poll(pfd, r);
	}
	free(pfd);
	return rc;
}

/* Every count of struct uiw_rpcrdma_stats, in the struct's order. */
#define FIELD(f) { #f, offsetof(struct uiw_rpcrdma_stats, f) }
static const struct {
	const char *key;
	size_t off;
} stats_fields[] = {
	FIELD(calls), FIELD(replies),
	FIELD(inline_sends), FIELD(inline_bytes),
	FIELD(long_calls), FIELD(long_replies),
	FIELD(read_chunks), FIELD(read_bytes),
	FIELD(write_chunks), FIELD(write_bytes),
	FIELD(reply_chunks), FIELD(reply_bytes),
	FIELD(remote_invalidations),
	FIELD(rdma_errors_sent), FIELD(rdma_errors_received),
	FIELD(credit_waits),
};

static const char *plural(uint64_t n, const char *one, const char *many)
{
	return n == 1 ? one : many;
}

void uiw_ru_print_stats(FILE *f, const char *who,
			const struct uiw_rpcrdma_stats *s)
{
	size_t i;

	fprintf(f, "%s: rdma: RDMA Read %" PRIu64 " octets (%" PRIu64
		" %s), RDMA Write %" PRIu64 " octets (%" PRIu64 " %s), "
		"Reply chunks %" PRIu64 " octets (%" PRIu64 "), "
		"inline Send %" PRIu64 " octets (%" PRIu64 " %s)\n", who,
		s->read_bytes, s->read_chunks,
		plural(s->read_chunks, "chunk", "chunks"),
		s->write_bytes, s->write_chunks,
		plural(s->write_chunks, "chunk", "chunks"),
		s->reply_bytes, s->reply_chunks,
		s->inline_bytes, s->inline_sends,
		plural(s->inline_sends, "message", "messages"));
	fprintf(f, "%s: rdma:", who);
	for (i = 0; i < sizeof(stats_fields) / sizeof(stats_fields[0]); i++)
		fprintf(f, " %s=%" PRIu64, stats_fields[i].key,
			*(const uint64_t *)((const char *)s +
					    stats_fields[i].off));
	fprintf(f, "\n");
}
