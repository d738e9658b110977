/*
 * store-server: the store's server (store.x).  The procedures below are
 * called by rpcgen's dispatch function (store_svc.c, rpcgen -M -m, as
 * generated); main() registers that function on three transports and
 * serves them all from one loop:
 *
 *   rdma  uiw_rpcrdma_svc_create (RPC-over-RDMA, RFC 8166), port 20049
 *   tcp   libtirpc's svc_vc on a listening socket, port 20050
 *   udp   libtirpc's svc_dg, port 20050
 *
 * No rpcbind: the programs are registered with svc_reg(..., NULL), and
 * clients are given the ports.
 *
 * The loop is svc_run's (poll on svc_pollfd, then svc_getreq_poll) with
 * one more fd, a pipe written by the thread that takes the signals
 * (tools/lib/rpc_util.c: libtirpc's svc_run can only be left through
 * svc_exit, which takes a lock and cannot wake a poll under way).
 * SIGUSR1 prints what RPC-over-RDMA moved so far; SIGINT and SIGTERM
 * print it and end the server with status 0.  Should the end not come
 * within 2 s (the loop stuck in libtirpc, e.g. reading a record from a
 * client that went silent halfway), the signal thread ends the process
 * with 128 + the signal's number.
 *
 * Objects live in memory, in a sorted array (LIST walks it in strcmp
 * order), at most -m octets in all.
 */
#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "store.h"
#include "store_ulb.h"
#include "rpc_util.h"

#define PROG_NAME "store-server"
#define STOP_GRACE_S 2

/* rpcgen's dispatch function (store_svc.c): store.h has no prototype
 * for it. */
void store_prog_1(struct svc_req *rqstp, SVCXPRT *transp);

/* ---- The objects ----------------------------------------------------- */

struct object {
	char *name;
	char *data;             /* malloc'd by the XDR decoder, or NULL */
	size_t size;
	uint64_t mtime;
};

static struct object *objs;
static size_t nobjs, cap_objs;
static uint64_t used, capacity = (uint64_t)1 << 30;

/* The index of name, or where it would go (*found false). */
static size_t find(const char *name, bool *found)
{
	size_t lo = 0, hi = nobjs;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(objs[mid].name, name);

		if (c == 0) {
			*found = true;
			return mid;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = false;
	return lo;
}

/* The object of that name, or NULL. */
static struct object *lookup(const char *name)
{
	bool found;
	size_t i = find(name, &found);

	return found ? &objs[i] : NULL;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void attr_of(const struct object *o, store_attr *a)
{
	a->size = o->size;
	a->mtime = o->mtime;
}

/*
 * What a reply lends the dispatcher must stay until it has been sent:
 * GET's data and LIST's names point into the objects (no copy of up to
 * 16 MiB), and LIST's entry array is freed by the freeresult routine,
 * which rpcgen's dispatcher calls after svc_sendreply.
 */
static void *reply_scratch;

int store_prog_1_freeresult(SVCXPRT *transp, xdrproc_t xdr_result,
			    caddr_t result)
{
	free(reply_scratch);
	reply_scratch = NULL;
	return 1;
}

/* ---- The procedures (called by store_prog_1) ------------------------- */

bool_t store_null_1_svc(void *argp, void *result, struct svc_req *rqstp)
{
	return TRUE;
}

bool_t store_put_1_svc(store_put_args *a, store_status *res,
		       struct svc_req *rqstp)
{
	size_t size = a->data.store_data_len, i;
	struct object *o;
	bool found;

	if (!a->name[0]) {
		*res = STORE_INVAL;
		return TRUE;
	}
	i = find(a->name, &found);
	if (used - (found ? objs[i].size : 0) + size > capacity) {
		*res = STORE_NOSPC;
		return TRUE;
	}
	if (!found) {
		if (nobjs == cap_objs) {
			size_t n = cap_objs ? 2 * cap_objs : 64;
			struct object *p = realloc(objs, n * sizeof(*p));

			if (!p) {
				*res = STORE_NOSPC;
				return TRUE;
			}
			objs = p;
			cap_objs = n;
		}
		memmove(&objs[i + 1], &objs[i], (nobjs - i) * sizeof(*objs));
		nobjs++;
		o = &objs[i];
		/* The decoder's strings and buffers are the store's now:
		 * svc_freeargs frees what is left in the arguments. */
		o->name = a->name;
		a->name = NULL;
	} else {
		o = &objs[i];
		used -= o->size;
		free(o->data);
	}
	o->data = a->data.store_data_val;
	o->size = size;
	o->mtime = now_ns();
	a->data.store_data_val = NULL;
	a->data.store_data_len = 0;
	used += size;
	*res = STORE_OK;
	return TRUE;
}

bool_t store_get_1_svc(store_get_args *a, store_get_res *res,
		       struct svc_req *rqstp)
{
	store_get_ok *ok = &res->store_get_res_u.ok;
	struct object *o = lookup(a->name);
	size_t off, n;

	res->status = o ? STORE_OK : STORE_NOENT;
	if (!o)
		return TRUE;
	off = a->offset < o->size ? (size_t)a->offset : o->size;
	n = o->size - off < a->count ? o->size - off : a->count;
	ok->data.store_data_len = (u_int)n;
	ok->data.store_data_val = n ? o->data + off : NULL;
	ok->size = o->size;
	return TRUE;
}

bool_t store_delete_1_svc(store_name *name, store_status *res,
			  struct svc_req *rqstp)
{
	bool found;
	size_t i = find(*name, &found);

	if (!found) {
		*res = STORE_NOENT;
		return TRUE;
	}
	used -= objs[i].size;
	free(objs[i].name);
	free(objs[i].data);
	memmove(&objs[i], &objs[i + 1], (nobjs - i - 1) * sizeof(*objs));
	nobjs--;
	*res = STORE_OK;
	return TRUE;
}

bool_t store_list_1_svc(store_name *after, store_list_res *res,
			struct svc_req *rqstp)
{
	store_list_ok *l = &res->store_list_res_u.list;
	bool found;
	size_t i = find(*after, &found), n;

	if (found)
		i++;
	n = nobjs - i < STORE_LIST_MAX ? nobjs - i : STORE_LIST_MAX;
	l->entries.entries_len = (u_int)n;
	l->entries.entries_val = reply_scratch =
		calloc(n ? n : 1, sizeof(store_entry));
	if (!l->entries.entries_val)
		return FALSE;   /* no reply: the client's call times out */
	for (size_t k = 0; k < n; k++) {
		l->entries.entries_val[k].name = objs[i + k].name;
		attr_of(&objs[i + k], &l->entries.entries_val[k].attr);
	}
	l->eof = i + n == nobjs;
	res->status = STORE_OK;
	return TRUE;
}

bool_t store_stat_1_svc(store_name *name, store_stat_res *res,
			struct svc_req *rqstp)
{
	struct object *o = lookup(*name);

	res->status = o ? STORE_OK : STORE_NOENT;
	if (o)
		attr_of(o, &res->store_stat_res_u.attr);
	return TRUE;
}

/* ---- Transports ------------------------------------------------------ */

/* ---- Signals and the loop -------------------------------------------- */

/* The signal thread tells the loop through this pipe. */
static int sig_pipe[2] = { -1, -1 };

static void tell_loop(int signo)
{
	unsigned char c = (unsigned char)signo;

	if (write(sig_pipe[1], &c, 1) < 0) {
		/* a full pipe holds enough signals already */
	}
}

/* SIGINT, SIGTERM and SIGUSR1 are blocked in every thread and taken by
 * this one (libtirpc blocks all signals in parts of its work, where no
 * handler would run).  It hands them to the loop; after SIGINT or
 * SIGTERM the loop has STOP_GRACE_S seconds to end the server, and a
 * second signal a second or more later ends it at once. */
static double since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)(t.tv_sec - t0->tv_sec) +
	       (double)(t.tv_nsec - t0->tv_nsec) / 1e9;
}

static void *signal_main(void *arg)
{
	const sigset_t *set = arg;
	struct timespec t0, rest;
	double left;
	int signo = 0, again;

	while (sigwait(set, &signo) || signo == SIGUSR1)
		if (signo == SIGUSR1)
			tell_loop(signo);
	tell_loop(signo);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while ((left = STOP_GRACE_S - since(&t0)) > 0) {
		rest.tv_sec = (time_t)left;
		rest.tv_nsec = (long)((left - (double)rest.tv_sec) * 1e9);
		again = sigtimedwait(set, NULL, &rest);
		if (again > 0 && again != SIGUSR1 && since(&t0) >= 1) {
			fprintf(stderr, PROG_NAME ": signal again: stopping "
				"at once\n");
			_exit(128 + again);
		}
	}
	fprintf(stderr, PROG_NAME ": did not end within %d s of %s; "
		"exiting\n", STOP_GRACE_S,
		signo == SIGINT ? "SIGINT" : "SIGTERM");
	_exit(128 + signo);
}

/* Before the transports start threads, which inherit the mask. */
static void signals_init(void)
{
	static sigset_t set;
	pthread_t th;

	if (pipe2(sig_pipe, O_CLOEXEC | O_NONBLOCK) < 0)
		err(1, "pipe");
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	if (pthread_create(&th, NULL, signal_main, &set))
		errx(1, "cannot start the signal thread");
	pthread_detach(th);
	/* a client that goes away mid-reply is that transport's error */
	signal(SIGPIPE, SIG_IGN);
}

/* The RPC-over-RDMA listener, whose counts SIGUSR1 prints. */
static SVCXPRT *rdma;

static void print_stats(void)
{
	struct uiw_rpcrdma_stats s;

	printf(PROG_NAME ": %zu objects, %" PRIu64 " octets\n", nobjs, used);
	if (rdma && uiw_rpcrdma_svc_stats(rdma, &s))
		uiw_ru_print_stats(stdout, PROG_NAME, &s);
	fflush(stdout);
}

/* The signal pipe is readable: SIGUSR1 prints the counts and serving
 * goes on; SIGINT or SIGTERM ends it (*arg: the signal). */
static bool on_signal_pipe(void *arg)
{
	int *signo = arg;
	unsigned char c;

	while (read(sig_pipe[0], &c, 1) == 1) {
		if (c != SIGUSR1) {
			*signo = c;
			return false;
		}
		print_stats();
	}
	return true;
}

/* ---- main ------------------------------------------------------------ */

static void usage(FILE *f, int rc) __attribute__((noreturn));
static void usage(FILE *f, int rc)
{
	fprintf(f,
"usage: " PROG_NAME " [-a ADDR] [-p PORT] [-t PORT] [-u PORT] [-m SIZE]\n"
"                    [--no-rdma] [--no-tcp] [--no-udp] [--no-private-data]\n"
"Serves the store (store.x) over RPC-over-RDMA, TCP and UDP at once.\n"
"  -a, --address ADDR    listen on ADDR (default 0.0.0.0; :: for IPv6)\n"
"  -p, --rdma-port PORT  RPC-over-RDMA port (default 20049; 0: any)\n"
"  -t, --tcp-port PORT   TCP port (default 20050; 0: any)\n"
"  -u, --udp-port PORT   UDP port (default 20050; 0: any)\n"
"  -m, --capacity SIZE   octets of all objects together, with suffix\n"
"                        k, m or g (default 1g)\n"
"      --no-rdma, --no-tcp, --no-udp   leave that transport out\n"
"      --no-private-data  answer RPC-over-RDMA connections without RFC\n"
"                        8797's private data (both ends then keep to\n"
"                        1024-octet inline messages, RFC 8797 §5.1)\n"
"The first line names the ports.  SIGUSR1 prints what RPC-over-RDMA\n"
"moved; SIGINT and SIGTERM print it and end the server.\n");
	exit(rc);
}

static void bad_usage(const char *what, const char *arg)
{
	fprintf(stderr, PROG_NAME ": %s: %s (" PROG_NAME " -h for help)\n",
		what, arg);
	exit(2);
}

static const char *port_arg(const char *s)
{
	char *end;
	long v = strtol(s, &end, 10);

	if (!*s || *end || v < 0 || v > 65535)
		bad_usage("not a port", s);
	return s;
}

static uint64_t size_arg(const char *s)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 10);
	int shift = 0;

	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	}
	if (!*s || *s == '-' || *end || v > (UINT64_MAX >> shift))
		bad_usage("not a size", s);
	return (uint64_t)v << shift;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "address", required_argument, NULL, 'a' },
		{ "rdma-port", required_argument, NULL, 'p' },
		{ "tcp-port", required_argument, NULL, 't' },
		{ "udp-port", required_argument, NULL, 'u' },
		{ "capacity", required_argument, NULL, 'm' },
		{ "no-rdma", no_argument, NULL, 'R' },
		{ "no-tcp", no_argument, NULL, 'T' },
		{ "no-udp", no_argument, NULL, 'U' },
		{ "no-private-data", no_argument, NULL, 'D' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *addr = "0.0.0.0", *rdma_port = "20049";
	const char *tcp_port = "20050", *udp_port = "20050";
	bool use_rdma = true, use_tcp = true, use_udp = true;
	bool no_private_data = false;
	SVCXPRT *tcp = NULL, *udp = NULL;
	char why[300];
	struct uiw_rpcrdma_opts ro;
	int opt, signo = 0;

	while ((opt = getopt_long(argc, argv, "a:p:t:u:m:h", lo, NULL)) != -1) {
		switch (opt) {
		case 'a': addr = optarg; break;
		case 'p': rdma_port = port_arg(optarg); break;
		case 't': tcp_port = port_arg(optarg); break;
		case 'u': udp_port = port_arg(optarg); break;
		case 'm': capacity = size_arg(optarg); break;
		case 'R': use_rdma = false; break;
		case 'T': use_tcp = false; break;
		case 'U': use_udp = false; break;
		case 'D': no_private_data = true; break;
		case 'h': usage(stdout, 0);
		default: usage(stderr, 2);
		}
	}
	if (optind < argc)
		bad_usage("unexpected argument", argv[optind]);
	if (!use_rdma && !use_tcp && !use_udp)
		bad_usage("no transport left", "--no-rdma --no-tcp --no-udp");

	/* Before the transports start threads: they inherit the mask. */
	signals_init();
	if (use_rdma) {
		uiw_rpcrdma_opts_init(&ro, true);
		ro.ulb = &store_ulb;
		ro.no_private_data = no_private_data;
		rdma = uiw_rpcrdma_svc_create(addr, rdma_port, &ro);
		if (!rdma)
			err(1, "cannot listen for RPC-over-RDMA on %s port %s",
			    addr, rdma_port);
	}
	if (use_tcp &&
	    !(tcp = uiw_ru_svc_ip(addr, tcp_port, SOCK_STREAM, why, sizeof(why))))
		errx(1, "%s", why);
	if (use_udp &&
	    !(udp = uiw_ru_svc_ip(addr, udp_port, SOCK_DGRAM, why, sizeof(why))))
		errx(1, "%s", why);
	/* svc_reg with no netconfig: nothing is told to rpcbind */
	if ((rdma && !svc_reg(rdma, STORE_PROG, STORE_V1, store_prog_1, NULL)) ||
	    (tcp && !svc_reg(tcp, STORE_PROG, STORE_V1, store_prog_1, NULL)) ||
	    (udp && !svc_reg(udp, STORE_PROG, STORE_V1, store_prog_1, NULL)))
		errx(1, "svc_reg failed");
	printf(PROG_NAME ": serving program %#x version %u on %s:", STORE_PROG,
	       STORE_V1, addr);
	if (rdma)
		printf(" rdma port %u", uiw_ru_svc_port(rdma));
	if (tcp)
		printf("%s tcp port %u", rdma ? "," : "", uiw_ru_svc_port(tcp));
	if (udp)
		printf("%s udp port %u", rdma || tcp ? "," : "", uiw_ru_svc_port(udp));
	printf("\n");
	fflush(stdout);

	if (uiw_ru_serve(sig_pipe[0], on_signal_pipe, &signo) < 0)
		err(1, "poll");
	print_stats();
	if (rdma)
		svc_destroy(rdma);
	if (tcp)
		svc_destroy(tcp);
	if (udp)
		svc_destroy(udp);
	fprintf(stderr, PROG_NAME ": ended by %s\n",
		signo == SIGINT ? "SIGINT" : "SIGTERM");
	return 0;
}
