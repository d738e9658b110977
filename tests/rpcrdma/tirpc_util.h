/*
 * What the libtirpc tests over RPC-over-RDMA share (test_tirpc_*.c):
 * the Upper-Layer Binding of their program (rrtest.x) and data
 * patterns (rrt_ulb.c), and the server (tirpc_server.c), run as a
 * process of its own and followed through a pipe (tirpc_util.c).
 */
#ifndef TIRPC_UTIL_H
#define TIRPC_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <uiwarp/rpcrdma.h>

#include "nfs3sub.h"
#include "nfs4sub.h"
#include "rrtest.h"

#define RRT_MAX (16u << 20)

/* ECHO's data both ways, READ's data (its Write chunk sized by the
 * count asked), nothing of BLOB: so ECHO and READ move by RDMA Read
 * and Write, BLOB as Long Call and Long Reply. */
extern const struct uiw_rpcrdma_ulb rrt_ulb;
/* rrt_ulb and RFC 8267's NFSv3 binding together (the server's). */
const struct uiw_rpcrdma_ulb *rrt_ulb_with_nfs(void);

void rrt_fill(void *p, size_t n, unsigned seed);
bool rrt_check(const void *p, size_t n, unsigned seed);

/* What the server sends when it is up, and when it leaves svc_run. */
struct rrt_ready {
	char rdma_port[8];              /* on 127.0.0.1 */
	char rdma6_port[8];             /* on ::1 */
	unsigned short tcp_port, udp_port;
};

struct rrt_done {
	struct uiw_rpcrdma_stats stats;
	bool stats_ok;
};

struct rrt_server {
	pid_t pid;
	int fd;                 /* the server's pipe (ready, then done) */
	struct rrt_ready ready;
};

/* Starts tirpc_server and waits (at most 20 s) until it serves. */
int rrt_server_start(struct rrt_server *s);
/* SIGTERM, then waits at most ms for it to leave svc_run and exit 0:
 * 0 with its counts, -1 otherwise (it is killed then). */
int rrt_server_stop(struct rrt_server *s, unsigned ms, struct rrt_done *d);
void rrt_server_kill(struct rrt_server *s);
/* rrt_server_stop, and the server must have counted exactly calls
 * calls and as many replies over RPC-over-RDMA, over all its
 * connections, gone or not. */
int rrt_server_stop_count(struct rrt_server *s, unsigned calls);

/* cmocka group fixtures: a server for the group, stopped by SIGTERM
 * at its end, that must have counted rrt_group_calls calls. */
extern struct rrt_server rrt_group_srv;
extern unsigned rrt_group_calls;
int rrt_group_setup(void **state);
int rrt_group_teardown(void **state);

enum rrt_kind { RRT_RDMA, RRT_TCP, RRT_UDP, RRT_RDMA6 };
/* A CLIENT of the server's program over one of its transports: only
 * the create call differs. */
CLIENT *rrt_client(const struct rrt_server *s, enum rrt_kind k);

/* A port nothing listens on (bound, then closed). */
void rrt_free_port(char *port, size_t len);

#endif
