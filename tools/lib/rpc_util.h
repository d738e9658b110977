/*
 * What uiwarp-rpcping and the store example (examples/store/) share
 * around libtirpc: its TCP and UDP transports reached by port, without
 * rpcbind; svc_run's loop, with one more fd that can end it; and the
 * printing of RPC-over-RDMA's counts (include/uiwarp/rpcrdma.h).
 */
#ifndef UIW_TOOLS_RPC_UTIL_H
#define UIW_TOOLS_RPC_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <uiwarp/rpcrdma.h>

/* The record buffers of TCP transports: libtirpc's largest
 * (__rpc_get_t_size: 256 KiB), so that a large call or reply is
 * written in as few pieces as libtirpc allows. */
#define UIW_RU_TCP_BUFSZ (256 * 1024)

/* A CLIENT for prog/vers at host:port over TCP (type SOCK_STREAM:
 * libtirpc's clnt_vc) or UDP (SOCK_DGRAM: clnt_dg), where clnt_create
 * would ask rpcbind for the port.  NULL on failure, with rpc_createerr
 * set (clnt_spcreateerror tells it). */
CLIENT *uiw_ru_clnt_ip(const char *host, const char *port, int type,
		       rpcprog_t prog, rpcvers_t vers);

/* A listening svc_vc (SOCK_STREAM) or an svc_dg (SOCK_DGRAM) on
 * addr:port (port "0": any free one), with SO_REUSEADDR.  NULL on
 * failure, with the reason in err. */
SVCXPRT *uiw_ru_svc_ip(const char *addr, const char *port, int type,
		       char *err, size_t errlen);

/* The port xprt listens on (its local address; xp_port failing that). */
unsigned uiw_ru_svc_port(const SVCXPRT *xprt);

/*
 * svc_run's loop (poll on svc_pollfd, svc_getreq_poll) with fd among
 * the descriptors: when fd is readable, on_fd(arg) runs, and the loop
 * ends when it returns false.  libtirpc's own svc_run can only be left
 * through svc_exit, which takes a lock and so cannot be called from a
 * signal handler, nor wake a poll that is under way.  Returns 0, or -1
 * with errno when poll fails.
 */
int uiw_ru_serve(int fd, bool (*on_fd)(void *arg), void *arg);

/* Two lines on f, each starting with "<who>: rdma: ": what moved by
 * RDMA Read, RDMA Write, Reply chunks and inline Send, in words; then
 * every count of s as key=value (the struct's field names). */
void uiw_ru_print_stats(FILE *f, const char *who,
			const struct uiw_rpcrdma_stats *s);

#endif
