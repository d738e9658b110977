/*
 * uiwarp-rpcping: the latency and rate of NULL RPCs (procedure 0, RFC
 * 5531 §12.1: no arguments, no results) over RPC-over-RDMA (RFC 8166,
 * libuiwarp-rpcrdma) or libtirpc's TCP or UDP.
 *
 * Roles.  `-s` serves NULL of its own program (RPCPING_PROG) on all
 * three transports at once, in one svc_run loop, until SIGINT or
 * SIGTERM; `-c HOST` calls NULL of any program (-P, -V: the store
 * example's, an NFS server's) and reports.
 *
 * A run: `-o N` threads call at once, either each on a CLIENT of its
 * own or all on one CLIENT they share (--clients each|shared; libtirpc's
 * clnt_vc and clnt_dg are MT-safe but hold a CLIENT's connection for a
 * whole call, so threads sharing one wait for each other there;
 * RPC-over-RDMA lets them have their calls outstanding together, as the
 * credits allow).  The CLIENTs connect and each thread makes its
 * warm-up calls before the clock starts; then the threads make -n calls
 * in all, each timed alone: the latency is a call's round trip, the
 * rate the calls over the run's time.  Every combination of the lists
 * given to --transport, -o and --clients is one run, in that order.
 *
 * The end on a signal: tool_util.h's.  A thread checks between calls;
 * a call the server never answers ends by the call timeout (-T) or by
 * the 2 s deadline after the signal.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uiwarp/rpcrdma.h>
#include "rpc_util.h"
#include "tool_util.h"

#define die uiw_tool_die
#define bad uiw_tool_bad_usage

#define RPCPING_PROG 0x20756978u
#define RPCPING_VERS 1u
#define MAX_CALLS 10000000L     /* a run's latencies are kept: 80 MB */
#define MAX_OUTSTANDING 256
#define MAX_LIST 8

enum transport { T_RDMA, T_TCP, T_UDP, NTRANSPORTS };
static const char *const transport_names[NTRANSPORTS] = {
	"rdma", "tcp", "udp",
};
enum share { S_EACH, S_SHARED, NSHARES };
static const char *const share_names[NSHARES] = { "each", "shared" };

static struct {
	bool server;
	const char *host;
	const char *addr;
	const char *ports[NTRANSPORTS];
	bool serve[NTRANSPORTS];
	int transports[MAX_LIST], ntransports;
	long outstanding[MAX_LIST];
	int noutstanding;
	int shares[NSHARES], nshares;
	long calls, warmup;
	rpcprog_t prog;
	rpcvers_t vers;
	long timeout_s;
	int out;                /* 't' table, 'c' csv, 'j' json */
} o = {
	.addr = "0.0.0.0",
	.ports = { "20049", "20050", "20050" },
	.serve = { true, true, true },
	.calls = 10000, .warmup = 100,
	.prog = RPCPING_PROG, .vers = RPCPING_VERS,
	.timeout_s = 10, .out = 't',
};

/* ------------------------------------------------------------------ */
/* Server                                                             */

static void null_dispatch(struct svc_req *rq, SVCXPRT *xprt)
{
	if (rq->rq_proc != NULLPROC) {
		svcerr_noproc(xprt);
		return;
	}
	/* void results: nothing to encode (xdr_void takes no arguments,
	 * hence the cast through a function type without parameters) */
	if (!svc_sendreply(xprt, (xdrproc_t)(void (*)(void))xdr_void, NULL))
		svcerr_systemerr(xprt);
}

static bool stop_serving(void *arg)
{
	return false;
}

static int run_server(void)
{
	SVCXPRT *xprt[NTRANSPORTS] = { NULL };
	struct uiw_rpcrdma_stats s;
	struct uiw_rpcrdma_opts ro;
	const char *sep = "";
	char err[300];
	int t;

	if (o.serve[T_RDMA]) {
		uiw_rpcrdma_opts_init(&ro, true);
		xprt[T_RDMA] = uiw_rpcrdma_svc_create(o.addr, o.ports[T_RDMA],
						      &ro);
		if (!xprt[T_RDMA])
			die("cannot listen for RPC-over-RDMA on %s port %s: %s",
			    o.addr, o.ports[T_RDMA], strerror(errno));
	}
	for (t = T_TCP; t <= T_UDP; t++) {
		if (!o.serve[t])
			continue;
		xprt[t] = uiw_ru_svc_ip(o.addr, o.ports[t], t == T_TCP ?
					SOCK_STREAM : SOCK_DGRAM, err,
					sizeof(err));
		if (!xprt[t])
			die("%s", err);
	}
	printf("uiwarp-rpcping: serving NULL of program %#x version %u on "
	       "%s:", RPCPING_PROG, RPCPING_VERS, o.addr);
	for (t = 0; t < NTRANSPORTS; t++) {
		if (!xprt[t])
			continue;
		/* no netconfig: nothing is told to rpcbind */
		if (!svc_reg(xprt[t], RPCPING_PROG, RPCPING_VERS,
			     null_dispatch, NULL))
			die("svc_reg on %s failed", transport_names[t]);
		printf("%s %s port %u", sep, transport_names[t],
		       uiw_ru_svc_port(xprt[t]));
		sep = ",";
	}
	printf("\n");
	fflush(stdout);
	if (uiw_ru_serve(uiw_tool_stop_fd(), stop_serving, NULL) < 0)
		die("poll: %s", strerror(errno));
	if (xprt[T_RDMA] && uiw_rpcrdma_svc_stats(xprt[T_RDMA], &s))
		uiw_ru_print_stats(stdout, "uiwarp-rpcping", &s);
	for (t = 0; t < NTRANSPORTS; t++)
		if (xprt[t])
			svc_destroy(xprt[t]);
	uiw_tool_exit_if_stopped();
	return 0;
}

/* ------------------------------------------------------------------ */
/* Client                                                             */

struct run;

struct worker {
	pthread_t th;
	struct run *run;
	CLIENT *cl;
	long calls, done;
	double *lat;            /* seconds, one per call made */
};

struct run {
	pthread_barrier_t start;
	atomic_bool failed;
	pthread_mutex_t mu;
	char err[400];          /* the first failure */
	struct timeval timeout;
};

struct result {
	int transport, share;
	long outstanding, clients, calls, warmup;
	double secs, rate;
	double lat[4];          /* min, avg, median, p99: µs */
	bool have_tcalls;
	uint64_t tcalls;        /* calls the RDMA transport counted */
};

static struct result *results;
static int nresults;

static CLIENT *connect_client(int t)
{
	struct uiw_rpcrdma_opts ro;
	CLIENT *cl;
	char where[300];

	if (t == T_RDMA) {
		uiw_rpcrdma_opts_init(&ro, false);
		cl = uiw_rpcrdma_clnt_create(o.host, o.ports[t], o.prog,
					     o.vers, &ro);
	} else {
		cl = uiw_ru_clnt_ip(o.host, o.ports[t], t == T_TCP ?
				    SOCK_STREAM : SOCK_DGRAM, o.prog, o.vers);
	}
	if (!cl) {
		snprintf(where, sizeof(where), "uiwarp-rpcping: cannot reach "
			 "%s port %s over %s", o.host, o.ports[t],
			 transport_names[t]);
		fflush(stdout);
		fprintf(stderr, "%s\n", clnt_spcreateerror(where));
		exit(1);
	}
	return cl;
}

/* One NULL call; on failure notes why (the first one) and returns
 * false. */
static bool null_call(struct worker *w)
{
	struct run *r = w->run;
	enum clnt_stat st;

	st = clnt_call(w->cl, NULLPROC, (xdrproc_t)(void (*)(void))xdr_void,
		       NULL, (xdrproc_t)(void (*)(void))xdr_void, NULL,
		       r->timeout);
	if (st == RPC_SUCCESS)
		return true;
	pthread_mutex_lock(&r->mu);
	if (!atomic_load(&r->failed))
		snprintf(r->err, sizeof(r->err), "%s",
			 clnt_sperror(w->cl, "NULL call"));
	atomic_store(&r->failed, true);
	pthread_mutex_unlock(&r->mu);
	return false;
}

static bool keep_going(struct run *r)
{
	return !atomic_load(&r->failed) && !uiw_tool_stop_signal();
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	long i;

	for (i = 0; i < o.warmup && keep_going(w->run); i++)
		if (!null_call(w))
			break;
	pthread_barrier_wait(&w->run->start);
	for (i = 0; i < w->calls && keep_going(w->run); i++) {
		double t0 = uiw_tool_now();

		if (!null_call(w))
			break;
		w->lat[i] = uiw_tool_now() - t0;
		w->done++;
	}
	return NULL;
}

static void run_one(int t, long nout, int share)
{
	long nclients = share == S_SHARED ? 1 : nout, i;
	struct worker *w = calloc((size_t)nout, sizeof(*w));
	CLIENT **cl = calloc((size_t)nclients, sizeof(*cl));
	double *lat = malloc((size_t)o.calls * sizeof(*lat)), t0;
	struct result *res;
	struct run r = {
		.timeout = { .tv_sec = o.timeout_s },
	};
	struct uiw_rpcrdma_stats s;
	long done = 0, n;
	int rc;

	if (!w || !cl || !lat)
		die("out of memory");
	for (i = 0; i < nclients; i++) {
		cl[i] = connect_client(t);
		clnt_control(cl[i], CLSET_TIMEOUT, (char *)&r.timeout);
		uiw_tool_exit_if_stopped();
	}
	pthread_mutex_init(&r.mu, NULL);
	pthread_barrier_init(&r.start, NULL, (unsigned)nout + 1);
	/* the -n calls shared out, the first threads one more */
	for (i = 0, n = 0; i < nout; i++) {
		w[i].run = &r;
		w[i].cl = cl[i % nclients];
		w[i].calls = o.calls / nout + (i < o.calls % nout);
		w[i].lat = lat + n;
		n += w[i].calls;
		rc = pthread_create(&w[i].th, NULL, worker_main, &w[i]);
		if (rc)
			die("pthread_create: %s", strerror(rc));
	}
	pthread_barrier_wait(&r.start);
	t0 = uiw_tool_now();
	for (i = 0; i < nout; i++)
		pthread_join(w[i].th, NULL);
	t0 = uiw_tool_now() - t0;
	uiw_tool_exit_if_stopped();
	if (atomic_load(&r.failed))
		die("%s over %s: %s", o.host, transport_names[t], r.err);

	/* the threads' latencies, packed */
	for (i = 0; i < nout; i++) {
		memmove(lat + done, w[i].lat, (size_t)w[i].done * sizeof(*lat));
		done += w[i].done;
	}
	results = realloc(results, (size_t)(nresults + 1) * sizeof(*results));
	if (!results)
		die("out of memory");
	res = &results[nresults++];
	*res = (struct result){
		.transport = t, .share = share, .outstanding = nout,
		.clients = nclients, .calls = done, .warmup = o.warmup * nout,
		.secs = t0, .rate = t0 > 0 ? (double)done / t0 : NAN,
	};
	uiw_tool_lat_stats(lat, (size_t)done, res->lat);
	for (i = 0; i < 4; i++)
		res->lat[i] *= 1e6;
	for (i = 0; i < nclients; i++) {
		if (uiw_rpcrdma_clnt_stats(cl[i], &s)) {
			res->have_tcalls = true;
			res->tcalls += s.calls;
		}
		clnt_destroy(cl[i]);
	}
	pthread_barrier_destroy(&r.start);
	pthread_mutex_destroy(&r.mu);
	free(lat);
	free(cl);
	free(w);
}

/* ------------------------------------------------------------------ */
/* Output                                                             */

static const char *const columns[] = {
	"transport", "outstanding", "clients", "calls", "warmup", "seconds",
	"calls_per_s", "lat_min_us", "lat_avg_us", "lat_median_us",
	"lat_p99_us", "transport_calls",
};
#define NCOLS (int)(sizeof(columns) / sizeof(columns[0]))

/* Column c of row as text (empty where it does not apply); *num: a
 * number (for JSON). */
static void cell(int row, int c, char *buf, size_t len, bool *num)
{
	const struct result *r = &results[row];

	*num = c > 0;
	switch (c) {
	case 0: snprintf(buf, len, "%s", transport_names[r->transport]); break;
	case 1: snprintf(buf, len, "%ld", r->outstanding); break;
	case 2: snprintf(buf, len, "%ld", r->clients); break;
	case 3: snprintf(buf, len, "%ld", r->calls); break;
	case 4: snprintf(buf, len, "%ld", r->warmup); break;
	case 5: snprintf(buf, len, "%.4f", r->secs); break;
	case 6: snprintf(buf, len, "%.0f", r->rate); break;
	case 7: case 8: case 9: case 10:
		snprintf(buf, len, "%.1f", r->lat[c - 7]);
		break;
	case 11:
		if (r->have_tcalls)
			snprintf(buf, len, "%" PRIu64, r->tcalls);
		else
			buf[0] = 0;
		break;
	}
}

static void print_json(const struct uiw_tool_table *t)
{
	printf("{\n  \"tool\": \"uiwarp-rpcping\",\n  \"server\": \"%s\",\n"
	       "  \"program\": %u,\n  \"version\": %u,\n  \"results\": [\n",
	       o.host, (unsigned)o.prog, (unsigned)o.vers);
	uiw_tool_print_json_rows(t);
	printf("  ]\n}\n");
}

static void print_table(void)
{
	char b[NCOLS][64];
	bool num;
	int i, c;

	printf("uiwarp-rpcping: server %s, NULL of program %#x version %u, "
	       "%ld calls per run, %ld warm-up calls per thread\n\n", o.host,
	       (unsigned)o.prog, (unsigned)o.vers, o.calls, o.warmup);
	printf("| transport | outstanding | clients | calls | seconds | "
	       "calls/s | min µs | avg µs | median µs | p99 µs |\n");
	printf("|-----------|------------:|--------:|------:|--------:|"
	       "--------:|-------:|-------:|----------:|-------:|\n");
	for (i = 0; i < nresults; i++) {
		for (c = 0; c < NCOLS; c++)
			cell(i, c, b[c], sizeof(b[c]), &num);
		printf("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
		       b[0], b[1], b[2], b[3], b[5], b[6], b[7], b[8], b[9],
		       b[10]);
	}
	printf("\nLatency: the round trip of one call; calls/s: the calls "
	       "over the run's time; outstanding: threads calling at once, "
	       "on one CLIENT each or on one they share (clients 1).\n");
}

/* ------------------------------------------------------------------ */
/* Options                                                            */

static void usage(FILE *f, int rc) __attribute__((noreturn));
static void usage(FILE *f, int rc)
{
	fprintf(f,
"usage: uiwarp-rpcping -s [-a ADDR] [-p PORT] [-t PORT] [-u PORT]\n"
"                      [--no-rdma] [--no-tcp] [--no-udp]\n"
"       uiwarp-rpcping -c HOST [options]\n"
"Roles:\n"
"  -s, --server          serve NULL of program %#x version %u over\n"
"                        rdma, tcp and udp at once, until SIGINT/SIGTERM\n"
"  -c, --client HOST     call NULL on a server\n"
"Ports (server: where to listen, 0: any; client: where to call):\n"
"  -p, --rdma-port PORT  RPC-over-RDMA (default 20049)\n"
"  -t, --tcp-port PORT   TCP (default 20050)\n"
"  -u, --udp-port PORT   UDP (default 20050)\n"
"Server:\n"
"  -a, --address ADDR    listen on ADDR (default 0.0.0.0; :: for IPv6)\n"
"      --no-rdma, --no-tcp, --no-udp   leave that transport out\n"
"Client:\n"
"  -x, --transport LIST  rdma, tcp, udp, comma-separated (default rdma)\n"
"  -n, --count N         calls per run, all threads together (default\n"
"                        10000, at most %ld)\n"
"  -o, --outstanding LIST  threads calling at once (default 1; 1..%d)\n"
"      --clients LIST    each (a CLIENT per thread, the default) or\n"
"                        shared (one CLIENT for all threads)\n"
"  -w, --warmup N        calls per thread before the clock (default 100)\n"
"  -P, --program N       the program to call (default %#x)\n"
"  -V, --version N       its version (default %u)\n"
"  -T, --timeout S       a call's timeout in seconds (default 10)\n"
"      --csv, --json     instead of the table\n",
		RPCPING_PROG, RPCPING_VERS, MAX_CALLS, MAX_OUTSTANDING,
		RPCPING_PROG, RPCPING_VERS);
	exit(rc);
}

/* A comma-separated list of names[0..n) into out; the count. */
static int parse_names(char *s, const char *const *names, int n, int *out,
		       const char *what)
{
	char *tok, *save;
	int k = 0, i;

	for (tok = strtok_r(s, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		for (i = 0; i < n; i++)
			if (!strcmp(tok, names[i]))
				break;
		if (i == n)
			bad("unknown %s '%s'", what, tok);
		if (k == MAX_LIST)
			bad("at most %d items in the %s list", MAX_LIST, what);
		out[k++] = i;
	}
	if (!k)
		bad("no %s given", what);
	return k;
}

/* An unsigned 32-bit number, decimal or 0x-prefixed hexadecimal (as
 * program numbers are written). */
static uint32_t u32_arg(const char *s, const char *what)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s || *end || *s == '-' || v > UINT32_MAX)
		bad("bad %s '%s': give 0 to 4294967295, or in hexadecimal "
		    "0x0 to 0xffffffff", what, s);
	return (uint32_t)v;
}

static const char *port_arg(const char *s, bool server)
{
	uiw_tool_arg_long(s, server ? 0 : 1, 65535, "port");
	return s;
}

enum { O_NO_RDMA = 256, O_NO_TCP, O_NO_UDP, O_CLIENTS, O_CSV, O_JSON };

/* The options of one role only (0 ends a list). */
static const int client_opts[] = {
	'x', 'n', 'o', O_CLIENTS, 'w', 'P', 'V', 'T', O_CSV, O_JSON, 0,
};
static const int server_opts[] = { 'a', O_NO_RDMA, O_NO_TCP, O_NO_UDP, 0 };

static bool is_one_of(int opt, const int *list)
{
	for (; *list; list++)
		if (*list == opt)
			return true;
	return false;
}

static void parse(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "server", no_argument, NULL, 's' },
		{ "client", required_argument, NULL, 'c' },
		{ "address", required_argument, NULL, 'a' },
		{ "rdma-port", required_argument, NULL, 'p' },
		{ "tcp-port", required_argument, NULL, 't' },
		{ "udp-port", required_argument, NULL, 'u' },
		{ "no-rdma", no_argument, NULL, O_NO_RDMA },
		{ "no-tcp", no_argument, NULL, O_NO_TCP },
		{ "no-udp", no_argument, NULL, O_NO_UDP },
		{ "transport", required_argument, NULL, 'x' },
		{ "count", required_argument, NULL, 'n' },
		{ "outstanding", required_argument, NULL, 'o' },
		{ "clients", required_argument, NULL, O_CLIENTS },
		{ "warmup", required_argument, NULL, 'w' },
		{ "program", required_argument, NULL, 'P' },
		{ "version", required_argument, NULL, 'V' },
		{ "timeout", required_argument, NULL, 'T' },
		{ "csv", no_argument, NULL, O_CSV },
		{ "json", no_argument, NULL, O_JSON },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *ports[NTRANSPORTS] = { NULL };
	bool client_opt = false, server_opt = false;
	char *tok, *save;
	int opt, t;

	while ((opt = getopt_long(argc, argv, "sc:a:p:t:u:x:n:o:w:P:V:T:h",
				  lo, NULL)) != -1) {
		client_opt |= is_one_of(opt, client_opts);
		server_opt |= is_one_of(opt, server_opts);
		switch (opt) {
		case 's':
			o.server = true;
			break;
		case 'c':
			o.host = optarg;
			break;
		case 'a':
			o.addr = optarg;
			break;
		case 'p':
			ports[T_RDMA] = optarg;
			break;
		case 't':
			ports[T_TCP] = optarg;
			break;
		case 'u':
			ports[T_UDP] = optarg;
			break;
		case O_NO_RDMA:
		case O_NO_TCP:
		case O_NO_UDP:
			o.serve[opt - O_NO_RDMA] = false;
			break;
		case 'x':
			o.ntransports = parse_names(optarg, transport_names,
						    NTRANSPORTS, o.transports,
						    "transport");
			break;
		case 'n':
			o.calls = uiw_tool_arg_long(optarg, 1, MAX_CALLS,
						    "count");
			break;
		case 'o':
			o.noutstanding = 0;
			for (tok = strtok_r(optarg, ",", &save); tok;
			     tok = strtok_r(NULL, ",", &save)) {
				if (o.noutstanding == MAX_LIST)
					bad("at most %d outstanding counts",
					    MAX_LIST);
				o.outstanding[o.noutstanding++] =
					uiw_tool_arg_long(tok, 1,
							  MAX_OUTSTANDING,
							  "outstanding");
			}
			if (!o.noutstanding)
				bad("no outstanding count given");
			break;
		case O_CLIENTS:
			o.nshares = parse_names(optarg, share_names, NSHARES,
						o.shares, "clients mode");
			break;
		case 'w':
			o.warmup = uiw_tool_arg_long(optarg, 0, MAX_CALLS,
						     "warm-up count");
			break;
		case 'P':
			o.prog = (rpcprog_t)u32_arg(optarg, "program");
			break;
		case 'V':
			o.vers = (rpcvers_t)u32_arg(optarg, "version");
			break;
		case 'T':
			o.timeout_s = uiw_tool_arg_long(optarg, 1, 3600,
							"timeout");
			break;
		case O_CSV:
			o.out = 'c';
			break;
		case O_JSON:
			o.out = 'j';
			break;
		case 'h':
			usage(stdout, 0);
		default:
			bad("bad option");
		}
	}
	if (optind < argc)
		bad("unexpected argument '%s'", argv[optind]);
	if (o.server == !!o.host)
		bad("give one of -s (server), -c HOST (client)");
	if (o.server && client_opt)
		bad("-x, -n, -o, --clients, -w, -P, -V, -T, --csv and --json "
		    "are the client's options");
	if (!o.server && server_opt)
		bad("-a and --no-* are the server's options");
	if (o.server && !o.serve[T_RDMA] && !o.serve[T_TCP] && !o.serve[T_UDP])
		bad("no transport left to serve");
	for (t = 0; t < NTRANSPORTS; t++)
		if (ports[t])
			o.ports[t] = port_arg(ports[t], o.server);
	if (!o.ntransports)
		o.transports[o.ntransports++] = T_RDMA;
	if (!o.noutstanding)
		o.outstanding[o.noutstanding++] = 1;
	if (!o.nshares)
		o.shares[o.nshares++] = S_EACH;
	for (t = 0; t < o.noutstanding; t++)
		if (o.outstanding[t] > o.calls)
			bad("more threads (-o %ld) than calls (-n %ld)",
			    o.outstanding[t], o.calls);
}

int main(int argc, char **argv)
{
	struct uiw_tool_table table;
	int t, k, s;

	uiw_tool_name = "uiwarp-rpcping";
	parse(argc, argv);
	/* Before any thread starts: they inherit the signal mask. */
	uiw_tool_signals_init(o.server ? "did not end" :
			      "server did not answer");
	if (o.server)
		return run_server();
	for (t = 0; t < o.ntransports; t++)
		for (k = 0; k < o.noutstanding; k++)
			for (s = 0; s < o.nshares; s++) {
				/* one thread: shared is each */
				if (o.outstanding[k] == 1 && s > 0 &&
				    o.nshares > 1)
					continue;
				run_one(o.transports[t], o.outstanding[k],
					o.shares[s]);
			}
	table = (struct uiw_tool_table){
		.cols = columns, .ncols = NCOLS, .nrows = nresults,
		.cell = cell,
	};
	if (o.out == 'c')
		uiw_tool_print_csv(&table);
	else if (o.out == 'j')
		print_json(&table);
	else
		print_table();
	return 0;
}
