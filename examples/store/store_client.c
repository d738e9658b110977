/*
 * store-client: the store's client (store.x), through rpcgen's stubs
 * (store_clnt.c, rpcgen -M -l, as generated).  Only the creation of the
 * CLIENT depends on the transport:
 *
 *   rdma  uiw_rpcrdma_clnt_create, with the store's Upper-Layer Binding
 *   tcp   clnt_tli_create on a "tcp" netconfig (libtirpc's clnt_vc)
 *   udp   the same on "udp" (clnt_dg; small objects only)
 *
 * Given the server's port, neither asks rpcbind (clnt_create would).
 *
 * SIGINT and SIGTERM end the client at once, whatever call is under
 * way: a thread of its own takes them, removes the half-written file of
 * a get and calls _exit(128 + the signal's number).  No call has to
 * finish for that, so a server that went silent cannot hold the client
 * (the call timeout, -T, ends the wait without a signal).
 */
#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "store.h"
#include "store_ulb.h"
#include "rpc_util.h"

#define PROG_NAME "store-client"

enum transport { T_RDMA, T_TCP, T_UDP };
static const char *const transport_names[] = { "rdma", "tcp", "udp" };
static const char *const default_ports[] = { "20049", "20050", "20050" };

static struct {
	enum transport transport;
	const char *host, *port;
	unsigned timeout_s;
	unsigned repeat;        /* calls of put, get, null */
	bool stats;
	bool no_private_data;   /* rdma: no RFC 8797 private data */
} o = { .transport = T_RDMA, .host = "127.0.0.1", .timeout_s = 25,
	.repeat = 1 };


/* ---- Errors and signals ---------------------------------------------- */

/* The temporary file a get writes, removed when a signal ends the
 * client; partial_mu keeps the signal thread from reading a name half
 * made or renamed. */
static char partial[PATH_MAX];
static pthread_mutex_t partial_mu = PTHREAD_MUTEX_INITIALIZER;

/* libtirpc blocks every signal during a call (clnt_vc_call,
 * clnt_dg_call), so no handler could run then: SIGINT and SIGTERM are
 * blocked in every thread and taken by this one, which ends the
 * process whatever the others do. */
static void *signal_main(void *arg)
{
	const sigset_t *set = arg;
	int signo = 0;

	while (sigwait(set, &signo))
		;
	pthread_mutex_lock(&partial_mu);
	if (partial[0])
		unlink(partial);
	fprintf(stderr, PROG_NAME ": interrupted by %s\n",
		signo == SIGINT ? "SIGINT" : "SIGTERM");
	_exit(128 + signo);
}

/* Before the CLIENT's threads start, which inherit the mask. */
static void signals_init(void)
{
	static sigset_t set;
	pthread_t th;

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	if (pthread_create(&th, NULL, signal_main, &set))
		errx(1, "cannot start the signal thread");
	pthread_detach(th);
	/* a server that goes away is an RPC error to report */
	signal(SIGPIPE, SIG_IGN);
}

/* ---- The CLIENT ------------------------------------------------------ */

static CLIENT *store_connect(void)
{
	struct uiw_rpcrdma_opts ro;
	struct timeval tv = { .tv_sec = o.timeout_s };
	char where[512];
	CLIENT *cl;

	if (o.transport == T_RDMA) {
		uiw_rpcrdma_opts_init(&ro, false);
		ro.ulb = &store_ulb;
		ro.no_private_data = o.no_private_data;
		cl = uiw_rpcrdma_clnt_create(o.host, o.port, STORE_PROG,
					     STORE_V1, &ro);
	} else {
		cl = uiw_ru_clnt_ip(o.host, o.port, o.transport == T_TCP ?
				    SOCK_STREAM : SOCK_DGRAM, STORE_PROG,
				    STORE_V1);
	}
	if (!cl) {
		snprintf(where, sizeof(where), PROG_NAME ": cannot reach the "
			 "store at %s port %s over %s", o.host, o.port,
			 transport_names[o.transport]);
		fprintf(stderr, "%s\n", clnt_spcreateerror(where));
		exit(1);
	}
	/* The stubs' own 25 s timeout gives way to this one. */
	clnt_control(cl, CLSET_TIMEOUT, (char *)&tv);
	return cl;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Ends the program when a call failed: "store-client: <what>: RPC: ...". */
static void check_call(CLIENT *cl, enum clnt_stat st, const char *what)
{
	if (st != RPC_SUCCESS) {
		char where[300];

		snprintf(where, sizeof(where), PROG_NAME ": %s", what);
		fprintf(stderr, "%s\n", clnt_sperror(cl, where));
		exit(1);
	}
}

static const char *status_str(store_status s)
{
	switch (s) {
	case STORE_OK: return "done";
	case STORE_NOENT: return "no such object";
	case STORE_INVAL: return "invalid name";
	case STORE_NOSPC: return "the store is full";
	}
	return "unknown status";
}

/* A server's answer other than STORE_OK ends the program. */
static void check_status(store_status s, const char *name)
{
	if (s != STORE_OK)
		errx(1, "%s: %s", name, status_str(s));
}

/* ---- Files ----------------------------------------------------------- */

/* All of path ("-": standard input), at most STORE_DATA_MAX octets. */
static char *read_all(const char *path, size_t *len)
{
	int fd = strcmp(path, "-") ? open(path, O_RDONLY | O_CLOEXEC) : 0;
	size_t have = 0, cap = 1 << 16;
	char *buf = malloc(cap);
	ssize_t n;

	if (fd < 0)
		err(1, "%s", path);
	if (!buf)
		errx(1, "out of memory");
	for (;;) {
		if (have == cap) {
			cap *= 2;
			buf = realloc(buf, cap);
			if (!buf)
				errx(1, "out of memory");
		}
		n = read(fd, buf + have, cap - have);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			err(1, "%s", path);
		if (n == 0)
			break;
		have += (size_t)n;
		if (have > STORE_DATA_MAX)
			errx(1, "%s: larger than %u octets, the largest "
			     "object", path, STORE_DATA_MAX);
	}
	if (fd)
		close(fd);
	*len = have;
	return buf;
}

/* 0, or -1 with errno. */
static int write_fd(int fd, const char *p, size_t len)
{
	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* path ("-": standard output) holds p and nothing else, or is left as it
 * was: written to a temporary file beside it, then renamed. */
static void write_all(const char *path, const char *p, size_t len)
{
	int fd, rc;

	if (!strcmp(path, "-")) {
		if (write_fd(1, p, len) < 0)
			err(1, "standard output");
		return;
	}
	pthread_mutex_lock(&partial_mu);
	if ((size_t)snprintf(partial, sizeof(partial), "%s.XXXXXX", path) >=
	    sizeof(partial))
		errx(1, "%s: name too long", path);
	fd = mkstemp(partial);
	if (fd < 0)
		err(1, "%s", path);
	pthread_mutex_unlock(&partial_mu);
	fchmod(fd, 0644 & ~umask(umask(0)));
	rc = write_fd(fd, p, len);
	pthread_mutex_lock(&partial_mu);
	if (rc < 0 || close(fd) < 0 || rename(partial, path) < 0) {
		int e = errno;

		unlink(partial);
		errno = e;
		err(1, "%s", path);
	}
	partial[0] = 0;
	pthread_mutex_unlock(&partial_mu);
}

static void print_attr(const char *name, const store_attr *a)
{
	time_t t = (time_t)(a->mtime / 1000000000u);
	struct tm tm;
	char when[32];

	gmtime_r(&t, &tm);
	strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm);
	printf("%12" PRIu64 "  %s.%03u UTC  %s\n", (uint64_t)a->size, when,
	       (unsigned)(a->mtime % 1000000000u / 1000000u), name);
}

/* ---- Commands -------------------------------------------------------- */

/* The calls that move the data (PUT, GET, or NULL) are made o.repeat
 * times and timed together, for --stats. */
static double call_secs;
static size_t moved;            /* object octets, all calls */

static void cmd_put(CLIENT *cl, char **av)
{
	store_put_args a = { .name = av[1] };
	store_status res;
	size_t len;

	a.data.store_data_val = read_all(av[0], &len);
	a.data.store_data_len = (u_int)len;
	for (unsigned k = 0; k < o.repeat; k++) {
		double t0 = now();

		check_call(cl, store_put_1(&a, &res, cl), "put");
		call_secs += now() - t0;
		check_status(res, av[1]);
		moved += len;
	}
	free(a.data.store_data_val);
}

/* The size of object name (STAT). */
static uint64_t stat_size(CLIENT *cl, char *name)
{
	store_stat_res res;

	check_call(cl, store_stat_1(&name, &res, cl), "stat");
	check_status(res.status, name);
	return res.store_stat_res_u.attr.size;
}

/* STAT for the size, then GET for that many octets, so that over
 * RPC-over-RDMA the Write chunk fits the object (store_ulb.c); again
 * should the object have changed size in between. */
static void cmd_get(CLIENT *cl, char **av)
{
	store_get_args a = { .name = av[0] };
	store_get_res res;
	store_get_ok *ok = &res.store_get_res_u.ok;
	uint64_t size = stat_size(cl, av[0]);

	memset(&res, 0, sizeof(res));
	for (unsigned k = 0; k < o.repeat; k++) {
		for (unsigned tries = 1;; tries++) {
			double t0 = now();

			xdr_free((xdrproc_t)xdr_store_get_res, (char *)&res);
			memset(&res, 0, sizeof(res));
			a.count = (u_int)size;
			check_call(cl, store_get_1(&a, &res, cl), "get");
			call_secs += now() - t0;
			check_status(res.status, av[0]);
			if (ok->size == ok->data.store_data_len)
				break;
			if (tries == 3)
				errx(1, "%s: its size changes as it is "
				     "read", av[0]);
			size = ok->size;
		}
		moved += ok->data.store_data_len;
	}
	write_all(av[1], ok->data.store_data_val, ok->data.store_data_len);
	xdr_free((xdrproc_t)xdr_store_get_res, (char *)&res);
}

static void cmd_rm(CLIENT *cl, char **av)
{
	store_status res;

	check_call(cl, store_delete_1(&av[0], &res, cl), "rm");
	check_status(res, av[0]);
}

static void cmd_stat(CLIENT *cl, char **av)
{
	store_stat_res res;

	check_call(cl, store_stat_1(&av[0], &res, cl), "stat");
	check_status(res.status, av[0]);
	print_attr(av[0], &res.store_stat_res_u.attr);
}

/* LIST from the first name, each reply's last name the next start. */
static void cmd_ls(CLIENT *cl, char **av)
{
	char after[STORE_NAME_MAX + 1] = "";
	char *arg = after;
	store_list_res res;
	store_list_ok *l = &res.store_list_res_u.list;
	bool eof = false;

	while (!eof) {
		memset(&res, 0, sizeof(res));
		check_call(cl, store_list_1(&arg, &res, cl), "ls");
		check_status(res.status, "ls");
		for (u_int i = 0; i < l->entries.entries_len; i++)
			print_attr(l->entries.entries_val[i].name,
				   &l->entries.entries_val[i].attr);
		eof = l->eof || !l->entries.entries_len;
		if (!eof)
			snprintf(after, sizeof(after), "%s",
				 l->entries.entries_val[l->entries.entries_len - 1].name);
		xdr_free((xdrproc_t)xdr_store_list_res, (char *)&res);
	}
}

static void cmd_null(CLIENT *cl, char **av)
{
	for (unsigned k = 0; k < o.repeat; k++) {
		double t0 = now();

		check_call(cl, store_null_1(NULL, NULL, cl), "null");
		call_secs += now() - t0;
	}
	printf(PROG_NAME ": NULL answered in %.1f µs\n",
	       call_secs / o.repeat * 1e6);
}

/* One row per command: its name, its operands, what it does. */
static const struct command {
	const char *name;
	int nargs;
	const char *args;
	void (*run)(CLIENT *cl, char **av);
	bool timed;             /* -r repeats its calls; --stats times them */
	const char *help;
} commands[] = {
	{ "put", 2, "FILE NAME", cmd_put, true,
	  "store FILE (-: stdin) as NAME" },
	{ "get", 2, "NAME FILE", cmd_get, true,
	  "write object NAME to FILE (-: stdout)" },
	{ "ls", 0, "", cmd_ls, false,
	  "list the objects: size, time of the put, name" },
	{ "rm", 1, "NAME", cmd_rm, false, "delete object NAME" },
	{ "stat", 1, "NAME", cmd_stat, false, "size and time of object NAME" },
	{ "null", 0, "", cmd_null, true, "call the NULL procedure" },
};
#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

/* ---- main ------------------------------------------------------------ */

static void usage(FILE *f, int rc) __attribute__((noreturn));
static void usage(FILE *f, int rc)
{
	size_t i;

	fprintf(f,
"usage: " PROG_NAME " [options] COMMAND [OPERANDS]\n"
"Commands:\n");
	for (i = 0; i < NCOMMANDS; i++)
		fprintf(f, "  %-4s %-10s %s\n", commands[i].name,
			commands[i].args, commands[i].help);
	fprintf(f,
"Options:\n"
"  -x, --transport rdma|tcp|udp  how to reach the server (default rdma)\n"
"  -s, --server HOST     the server (default 127.0.0.1)\n"
"  -p, --port PORT       its port (default: rdma 20049, tcp and udp 20050)\n"
"  -T, --timeout SECS    how long a call waits for its reply (default 25)\n"
"  -r, --repeat N        put, get, null: make the call N times (default 1)\n"
"      --stats           print the time of the put, get or null calls\n"
"                        (not get's STAT before them) and, over rdma,\n"
"                        what moved by RDMA Read, RDMA Write, inline Send\n"
"      --no-private-data rdma: connect without RFC 8797's private data\n"
"                        (both ends then keep to 1024-octet inline\n"
"                        messages, RFC 8797 §5.1)\n"
"SIGINT and SIGTERM end the client at once (status 130, 143).\n");
	exit(rc);
}

static void bad_usage(const char *fmt, const char *arg)
{
	fprintf(stderr, PROG_NAME ": ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, " (" PROG_NAME " -h for help)\n");
	exit(2);
}

/* s as a number in [min, max], or a usage error. */
static long num_arg(const char *s, long min, long max, const char *what)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || !*s || *end || v < min || v > max) {
		fprintf(stderr, PROG_NAME ": not a %s (%ld to %ld): %s ("
			PROG_NAME " -h for help)\n", what, min, max, s);
		exit(2);
	}
	return v;
}

static void parse(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "transport", required_argument, NULL, 'x' },
		{ "server", required_argument, NULL, 's' },
		{ "port", required_argument, NULL, 'p' },
		{ "timeout", required_argument, NULL, 'T' },
		{ "repeat", required_argument, NULL, 'r' },
		{ "stats", no_argument, NULL, 'S' },
		{ "no-private-data", no_argument, NULL, 'D' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int opt, t;

	while ((opt = getopt_long(argc, argv, "+x:s:p:T:r:h", lo, NULL)) != -1) {
		switch (opt) {
		case 'x':
			for (t = 0; t < 3; t++)
				if (!strcmp(optarg, transport_names[t]))
					break;
			if (t == 3)
				bad_usage("unknown transport '%s': rdma, tcp "
					  "or udp", optarg);
			o.transport = (enum transport)t;
			break;
		case 's':
			o.host = optarg;
			break;
		case 'p':
			num_arg(optarg, 1, 65535, "port");
			o.port = optarg;
			break;
		case 'T':
			o.timeout_s = (unsigned)num_arg(optarg, 1, 86400,
							"timeout in seconds");
			break;
		case 'r':
			o.repeat = (unsigned)num_arg(optarg, 1, 1000000,
						     "repeat count");
			break;
		case 'S':
			o.stats = true;
			break;
		case 'D':
			o.no_private_data = true;
			break;
		case 'h':
			usage(stdout, 0);
		default:
			usage(stderr, 2);
		}
	}
	if (!o.port)
		o.port = default_ports[o.transport];
}

int main(int argc, char **argv)
{
	const struct command *c = NULL;
	struct uiw_rpcrdma_stats s;
	CLIENT *cl;
	size_t i;

	parse(argc, argv);
	if (optind >= argc)
		bad_usage("%s", "no command given");
	for (i = 0; i < NCOMMANDS; i++)
		if (!strcmp(argv[optind], commands[i].name))
			c = &commands[i];
	if (!c)
		bad_usage("unknown command '%s'", argv[optind]);
	if (o.repeat > 1 && !c->timed)
		bad_usage("-r is for put, get and null, not %s", c->name);
	if (argc - optind - 1 != c->nargs) {
		fprintf(stderr, PROG_NAME ": usage: %s %s\n", c->name, c->args);
		exit(2);
	}
	signals_init();
	cl = store_connect();
	c->run(cl, argv + optind + 1);
	if (o.stats) {
		/* beside the object when get writes it to stdout */
		FILE *f = c->run == cmd_get && !strcmp(argv[optind + 2], "-") ?
			  stderr : stdout;

		if (c->timed) {
			fprintf(f, PROG_NAME ": %s over %s: %u call%s, %zu "
				"octets in %.6f s", c->name,
				transport_names[o.transport], o.repeat,
				o.repeat == 1 ? "" : "s", moved, call_secs);
			if (moved && call_secs > 0)
				fprintf(f, " (%.1f MB/s)",
					moved / call_secs / 1e6);
			fprintf(f, "\n");
		}
		if (uiw_rpcrdma_clnt_stats(cl, &s))
			uiw_ru_print_stats(f, PROG_NAME, &s);
	}
	clnt_destroy(cl);
	return 0;
}
