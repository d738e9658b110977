/*
 * What the libtirpc tests share: see tirpc_util.h.
 */
#include "tirpc_util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netconfig.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/* Reads exactly n octets within ms; -1 on timeout, error or EOF. */
static int read_full(int fd, void *buf, size_t n, unsigned ms)
{
	struct timespec t0, t;
	size_t got = 0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (got < n) {
		struct pollfd p = { fd, POLLIN, 0 };
		long spent;
		ssize_t r;

		clock_gettime(CLOCK_MONOTONIC, &t);
		spent = (t.tv_sec - t0.tv_sec) * 1000 +
			(t.tv_nsec - t0.tv_nsec) / 1000000;
		if (spent >= (long)ms)
			return -1;
		r = poll(&p, 1, (int)(ms - spent));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		r = read(fd, (char *)buf + got, n - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		got += (size_t)r;
	}
	return 0;
}

int rrt_server_start(struct rrt_server *s)
{
	char *argv[] = { (char *)RRT_SERVER, NULL };
	posix_spawn_file_actions_t fa;
	int p[2];

	memset(s, 0, sizeof(*s));
	s->pid = -1;
	if (pipe2(p, O_CLOEXEC))
		return -1;
	/* the server writes to its descriptor 3 */
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, p[1], 3);
	if (posix_spawn(&s->pid, RRT_SERVER, &fa, NULL, argv, environ)) {
		posix_spawn_file_actions_destroy(&fa);
		close(p[0]);
		close(p[1]);
		s->pid = -1;
		return -1;
	}
	posix_spawn_file_actions_destroy(&fa);
	close(p[1]);
	s->fd = p[0];
	if (read_full(s->fd, &s->ready, sizeof(s->ready), 20000)) {
		fprintf(stderr, "tirpc_server did not come up\n");
		rrt_server_kill(s);
		return -1;
	}
	return 0;
}

void rrt_server_kill(struct rrt_server *s)
{
	if (s->pid > 0) {
		kill(s->pid, SIGKILL);
		waitpid(s->pid, NULL, 0);
		s->pid = -1;
	}
	if (s->fd > 0)
		close(s->fd);
	s->fd = -1;
}

int rrt_server_stop(struct rrt_server *s, unsigned ms, struct rrt_done *d)
{
	int st;

	if (s->pid <= 0)
		return -1;
	kill(s->pid, SIGTERM);
	if (read_full(s->fd, d, sizeof(*d), ms)) {
		fprintf(stderr, "tirpc_server did not leave svc_run within "
			"%u ms of SIGTERM\n", ms);
		rrt_server_kill(s);
		return -1;
	}
	if (waitpid(s->pid, &st, 0) != s->pid || !WIFEXITED(st) ||
	    WEXITSTATUS(st) != 0) {
		s->pid = -1;
		return -1;
	}
	s->pid = -1;
	close(s->fd);
	s->fd = -1;
	return 0;
}

int rrt_server_stop_count(struct rrt_server *s, unsigned calls)
{
	struct rrt_done d;

	if (rrt_server_stop(s, 5000, &d))
		return -1;
	if (!d.stats_ok || d.stats.calls != calls ||
	    d.stats.replies != calls) {
		fprintf(stderr, "server counted %llu calls, %llu replies; "
			"%u made\n", (unsigned long long)d.stats.calls,
			(unsigned long long)d.stats.replies, calls);
		return -1;
	}
	return 0;
}

struct rrt_server rrt_group_srv;
unsigned rrt_group_calls;

int rrt_group_setup(void **state)
{
	(void)state;
	return rrt_server_start(&rrt_group_srv);
}

int rrt_group_teardown(void **state)
{
	(void)state;
	/* svc_run leaves on SIGTERM, and the listener's counts hold every
	 * call of every connection gone */
	return rrt_server_stop_count(&rrt_group_srv, rrt_group_calls);
}

CLIENT *rrt_client(const struct rrt_server *s, enum rrt_kind k)
{
	struct uiw_rpcrdma_opts o;
	struct sockaddr_in sin = { .sin_family = AF_INET };
	struct netbuf nb = { sizeof(sin), sizeof(sin), &sin };
	struct netconfig *nc;
	CLIENT *cl;

	if (k == RRT_RDMA || k == RRT_RDMA6) {
		uiw_rpcrdma_opts_init(&o, false);
		o.ulb = &rrt_ulb;
		return uiw_rpcrdma_clnt_create(k == RRT_RDMA ? "127.0.0.1"
							    : "::1",
					       k == RRT_RDMA ? s->ready.rdma_port
							     : s->ready.rdma6_port,
					       RRT_PROG, RRT_V1, &o);
	}
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sin.sin_port = htons(k == RRT_TCP ? s->ready.tcp_port
					  : s->ready.udp_port);
	nc = getnetconfigent(k == RRT_TCP ? "tcp" : "udp");
	if (!nc)
		return NULL;
	cl = clnt_tli_create(RPC_ANYFD, nc, &nb, RRT_PROG, RRT_V1, 0, 0);
	freenetconfigent(nc);
	return cl;
}

void rrt_free_port(char *port, size_t len)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sin);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sin, sizeof(sin)) ||
	    getsockname(fd, (struct sockaddr *)&sin, &sl)) {
		snprintf(port, len, "1");
	} else {
		snprintf(port, len, "%u", ntohs(sin.sin_port));
	}
	if (fd >= 0)
		close(fd);
}
