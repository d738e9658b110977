/*
 * uiwarp-faultproxy: the fault-injecting TCP proxy of the tests
 * (tools/lib/faultproxy.h) as a program, for shell tests; with --udp,
 * the fault-injecting UDP relay (tools/lib/udpfault.h).
 *
 *   uiwarp-faultproxy -t ADDR:PORT [-e COMMAND]... [-n COUNT]
 *   uiwarp-faultproxy --udp -t ADDR:PORT [-p PORT] [-s SEED] [-c CLIENTS]
 *                     [-e COMMAND]...
 *
 * It listens on the loopback address of ADDR's family (TCP: port 0; UDP:
 * PORT, default 0), runs the -e commands in order, and then prints one
 * line,
 *
 *   listening <addr> <port>
 *
 * on standard output.  After that it reads commands from standard input,
 * one a line, and answers each with one line, "ok[ ...]" or
 * "error <reason>".  It runs until SIGINT or SIGTERM, the command "quit",
 * or, with -n, until COUNT connections have ended; the end of standard
 * input alone does not stop it.  DIR is c2s (client to target) or s2c.
 *
 * TCP commands:
 *   split DIR N           writes of at most N octets (0: no limit)
 *   delay DIR MS          hold every chunk MS milliseconds
 *   stall DIR OFF         hold at stream offset OFF ...
 *   release DIR           ... until released
 *   reset DIR OFF         abort both legs (RST) at OFF
 *   shut DIR OFF          FIN towards DIR's receiver at OFF
 *   flip DIR OFF BIT      invert bit BIT (0..7) of the octet at OFF
 *   clear DIR             all faults of DIR off
 *   wait DIR OFF [MS]     until the connection has forwarded OFF octets
 *   waitclosed N [MS]     until N connections have ended
 *   stats                 "ok accepted=.. closed=.. active=.. c2s=.. ..."
 *   quit
 *
 * UDP commands (PCT: a percentage, decimals allowed, e.g. 0.5):
 *   drop DIR PCT          drop datagrams with that probability
 *   dup DIR PCT           send datagrams twice with that probability
 *   reorder DIR PCT [AFTER [MS]]
 *                         hold datagrams back with that probability
 *                         until AFTER later ones have passed (default 3),
 *                         or MS milliseconds at most (default 50)
 *   delay DIR MS          hold every datagram MS milliseconds
 *   burst DIR K           drop the next K datagrams
 *   cut [forever]         drop everything both ways ...
 *   uncut                 ... until uncut (not after "cut forever")
 *   seed N                restart the random choices from seed N
 *   clear DIR             all faults of DIR off (the burst too)
 *   waitrecv DIR N [MS]   until N datagrams of DIR have been read
 *   waitdone DIR N [MS]   until N have been forwarded or dropped
 *   stats                 "ok clients=.. refused=.. cut=.. c2s_received=.."
 *   quit
 *
 * Waits give up after MS milliseconds (default 30000) with "error".
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "faultproxy.h"
#include "udpfault.h"
#include "tool_util.h"

#define CMD_MAX		512
#define WAIT_DEFAULT_MS	30000
#define MAX_E		64	/* -e options */

static void usage(FILE *to)
{
	fprintf(to,
		"usage: uiwarp-faultproxy -t ADDR:PORT [-e COMMAND]... "
		"[-n COUNT]\n"
		"       uiwarp-faultproxy --udp -t ADDR:PORT [-p PORT] "
		"[-s SEED] [-c CLIENTS]\n"
		"                         [-e COMMAND]...\n"
		"  -t ADDR:PORT  target (127.0.0.1:7174, [::1]:7174)\n"
		"  -e COMMAND    run a command before listening is announced\n"
		"  -n COUNT      exit after COUNT connections have ended\n"
		"  -u, --udp     relay UDP datagrams instead of TCP streams\n"
		"  -p PORT       (UDP) the port to listen on (default: any)\n"
		"  -s SEED       (UDP) the seed of the random choices "
		"(default 1)\n"
		"  -c CLIENTS    (UDP) clients to track, 1..%u (default 16)\n"
		"TCP commands (stdin or -e): split DIR N | delay DIR MS | "
		"stall DIR OFF |\n"
		"  release DIR | reset DIR OFF | shut DIR OFF | "
		"flip DIR OFF BIT |\n"
		"  clear DIR | wait DIR OFF [MS] | waitclosed N [MS] | stats |"
		" quit\n"
		"UDP commands: drop DIR PCT | dup DIR PCT | "
		"reorder DIR PCT [AFTER [MS]] |\n"
		"  delay DIR MS | burst DIR K | cut [forever] | uncut | "
		"seed N | clear DIR |\n"
		"  waitrecv DIR N [MS] | waitdone DIR N [MS] | stats | quit\n"
		"DIR: c2s (client to target) or s2c\n", UIW_UF_MAX_CLIENTS);
}

/* A number the proxy's API cannot take: the API's own answer to one. */
static int einval(void)
{
	errno = EINVAL;
	return -1;
}

static bool parse_u64(const char *s, uint64_t *v)
{
	char *end;

	if (s == NULL || *s < '0' || *s > '9')
		return false;
	errno = 0;
	*v = strtoull(s, &end, 0);
	return errno == 0 && *end == '\0';
}

static bool parse_target(const char *arg, struct sockaddr_storage *ss,
			 socklen_t *len)
{
	char host[INET6_ADDRSTRLEN + 2];
	const char *colon, *h = arg;
	size_t hl;
	uint64_t port;

	colon = strrchr(arg, ':');
	if (colon == NULL || !parse_u64(colon + 1, &port) || port == 0 ||
	    port > 65535)
		return false;
	hl = (size_t)(colon - arg);
	if (hl >= 2 && arg[0] == '[' && arg[hl - 1] == ']') {
		h = arg + 1;
		hl -= 2;
	}
	if (hl == 0 || hl >= sizeof(host))
		return false;
	memcpy(host, h, hl);
	host[hl] = '\0';
	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, host, &((struct sockaddr_in *)ss)->sin_addr)) {
		struct sockaddr_in *a = (struct sockaddr_in *)ss;

		a->sin_family = AF_INET;
		a->sin_port = htons((uint16_t)port);
		*len = sizeof(*a);
		return true;
	}
	if (inet_pton(AF_INET6, host,
		      &((struct sockaddr_in6 *)ss)->sin6_addr)) {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;

		a->sin6_family = AF_INET6;
		a->sin6_port = htons((uint16_t)port);
		*len = sizeof(*a);
		return true;
	}
	return false;
}

enum { CMD_ERROR = -1, CMD_QUIT = 0, CMD_OK = 1 };

/* A command: its name, whether the first argument is a direction, how
 * many numbers follow (at least, at most), whether the first of them is
 * a percentage, and a word that may end the line. */
struct command {
	const char *name;
	bool dir;
	int min, max;
	bool pct;
	const char *word;
};

/* name, dir, min, max, pct, word */
static const struct command tcp_commands[] = {
	{ "split", true, 1, 1, false, NULL },
	{ "delay", true, 1, 1, false, NULL },
	{ "stall", true, 1, 1, false, NULL },
	{ "release", true, 0, 0, false, NULL },
	{ "reset", true, 1, 1, false, NULL },
	{ "shut", true, 1, 1, false, NULL },
	{ "flip", true, 2, 2, false, NULL },
	{ "clear", true, 0, 0, false, NULL },
	{ "wait", true, 1, 2, false, NULL },
	{ "waitclosed", false, 1, 2, false, NULL },
	{ "stats", false, 0, 0, false, NULL },
	{ "quit", false, 0, 0, false, NULL },
	{ NULL, false, 0, 0, false, NULL },
};

static const struct command udp_commands[] = {
	{ "drop", true, 1, 1, true, NULL },
	{ "dup", true, 1, 1, true, NULL },
	{ "reorder", true, 1, 3, true, NULL },
	{ "delay", true, 1, 1, false, NULL },
	{ "burst", true, 1, 1, false, NULL },
	{ "cut", false, 0, 0, false, "forever" },
	{ "uncut", false, 0, 0, false, NULL },
	{ "seed", false, 1, 1, false, NULL },
	{ "clear", true, 0, 0, false, NULL },
	{ "waitrecv", true, 1, 2, false, NULL },
	{ "waitdone", true, 1, 2, false, NULL },
	{ "stats", false, 0, 0, false, NULL },
	{ "quit", false, 0, 0, false, NULL },
	{ NULL, false, 0, 0, false, NULL },
};

/* Directions are parsed once, by the TCP proxy's names, for both. */
_Static_assert(UIW_UF_C2S == (int)UIW_FP_C2S && UIW_UF_S2C == (int)UIW_FP_S2C,
	       "the relays number their directions alike");

/* A command line taken apart. */
struct cmd_line {
	const struct command *c;
	int dir;		/* an enum uiw_fp_dir (uiw_uf_dir alike) */
	uint64_t num[4];	/* a percentage in parts per million */
	int nums;
	bool word;		/* the command's word was given */
};

/* "1.5" or "1.5%", 0 to 100, to parts per million. */
static bool parse_pct(const char *s, uint64_t *ppm)
{
	char *end;
	double v;

	if (s == NULL || ((*s < '0' || *s > '9') && *s != '.'))
		return false;
	errno = 0;
	v = strtod(s, &end);
	if (*end == '%')
		end++;
	if (errno || *end != '\0' || !(v >= 0.0 && v <= 100.0))
		return false;
	*ppm = (uint64_t)(v * (UIW_UF_PPM / 100) + 0.5);
	return true;
}

static int wait_ms(const struct cmd_line *l, int at)
{
	if (l->nums <= at)
		return WAIT_DEFAULT_MS;
	return l->num[at] > INT32_MAX ? INT32_MAX : (int)l->num[at];
}

/* Takes line apart into l by the table cmds.  CMD_OK with l->c NULL: an
 * empty line or a comment; CMD_ERROR: answered on out. */
static int parse_line(const struct command *cmds, char *line, FILE *out,
		      struct cmd_line *l)
{
	char *arg[6], *save = NULL, *tok, *name;
	const struct command *c;
	int n = 0, first;

	memset(l, 0, sizeof(*l));
	for (tok = strtok_r(line, " \t\r\n", &save); tok;
	     tok = strtok_r(NULL, " \t\r\n", &save)) {
		if (n == 6) {
			fprintf(out, "error too many arguments\n");
			return CMD_ERROR;
		}
		arg[n++] = tok;
	}
	if (n == 0 || arg[0][0] == '#')
		return CMD_OK;
	name = arg[0];
	for (c = cmds; c->name; c++)
		if (strcmp(name, c->name) == 0)
			break;
	if (c->name == NULL) {
		fprintf(out, "error unknown command %s\n", name);
		return CMD_ERROR;
	}
	if (c->dir) {
		l->dir = n > 1 ? uiw_fp_dir_parse(arg[1]) : -1;
		if (l->dir < 0) {
			fprintf(out, "error %s: direction must be c2s or "
				"s2c\n", name);
			return CMD_ERROR;
		}
	}
	if (c->word && n > 1 && strcmp(arg[n - 1], c->word) == 0) {
		l->word = true;
		n--;
	}
	first = c->dir ? 2 : 1;
	for (int i = first; i < n; i++) {
		bool ok = c->pct && i == first ?
			  parse_pct(arg[i], &l->num[l->nums]) :
			  parse_u64(arg[i], &l->num[l->nums]);

		if (!ok) {
			fprintf(out, "error %s: bad number %s\n", name,
				arg[i]);
			return CMD_ERROR;
		}
		l->nums++;
	}
	if (l->nums < c->min || l->nums > c->max) {
		fprintf(out, "error %s: wrong number of arguments\n", name);
		return CMD_ERROR;
	}
	l->c = c;
	return CMD_OK;
}

static void print_tcp_stats(struct uiw_fp *fp, FILE *out)
{
	struct uiw_fp_stats st;

	uiw_fp_get_stats(fp, &st);
	fprintf(out, "ok accepted=%u closed=%u active=%d", st.accepted,
		st.closed, st.active);
	for (int i = 0; i < 2; i++) {
		const char *d = uiw_fp_dir_name((enum uiw_fp_dir)i);

		fprintf(out, " %s=%" PRIu64 " %s_total=%" PRIu64
			" %s_dropped=%" PRIu64 " %s_writes=%" PRIu64
			" %s_stalled=%d", d, st.offset[i], d, st.total[i],
			d, st.dropped[i], d, st.writes[i], d, st.stalled[i]);
	}
	fprintf(out, " flips=%u resets=%u shuts=%u\n", st.flips, st.resets,
		st.shuts);
}

static void print_udp_stats(struct uiw_uf *uf, FILE *out)
{
	struct uiw_uf_stats st;

	uiw_uf_get_stats(uf, &st);
	fprintf(out, "ok clients=%u refused=%" PRIu64 " cut=%d forever=%d",
		st.clients, st.refused, st.cut, st.cut_forever);
	for (int i = 0; i < 2; i++) {
		const struct uiw_uf_dir_stats *s = &st.d[i];
		const char *d = uiw_fp_dir_name((enum uiw_fp_dir)i);

		fprintf(out, " %s_received=%" PRIu64 " %s_forwarded=%" PRIu64
			" %s_bytes=%" PRIu64 " %s_dropped=%" PRIu64
			" %s_duplicated=%" PRIu64 " %s_delayed=%" PRIu64
			" %s_reordered=%" PRIu64 " %s_overflow=%" PRIu64
			" %s_send_errors=%" PRIu64 " %s_pending=%u"
			" %s_burst_left=%u",
			d, s->received, d, s->forwarded, d, s->bytes,
			d, s->dropped, d, s->duplicated, d, s->delayed,
			d, s->reordered, d, s->overflow, d, s->send_errors,
			d, s->pending, d, s->burst_left);
	}
	fprintf(out, "\n");
}

/* Runs a TCP command: 0, or -1 with errno set. */
static int run_tcp(struct uiw_fp *fp, const struct cmd_line *l)
{
	const char *name = l->c->name;
	enum uiw_fp_dir dir = (enum uiw_fp_dir)l->dir;
	const uint64_t *num = l->num;

	if (strcmp(name, "split") == 0)
		return num[0] > SIZE_MAX ? einval() :
		       uiw_fp_split(fp, dir, (size_t)num[0]);
	if (strcmp(name, "delay") == 0)
		return num[0] > UINT32_MAX ? einval() :
		       uiw_fp_delay(fp, dir, (unsigned int)num[0]);
	if (strcmp(name, "stall") == 0)
		return uiw_fp_stall(fp, dir, num[0]);
	if (strcmp(name, "release") == 0)
		return uiw_fp_release(fp, dir);
	if (strcmp(name, "reset") == 0)
		return uiw_fp_reset(fp, dir, num[0]);
	if (strcmp(name, "shut") == 0)
		return uiw_fp_shut(fp, dir, num[0]);
	if (strcmp(name, "flip") == 0)
		return num[1] > 7 ? einval() :
		       uiw_fp_flip(fp, dir, num[0], (unsigned int)num[1]);
	if (strcmp(name, "clear") == 0) {
		struct uiw_fp_faults f;

		uiw_fp_faults_init(&f);
		return uiw_fp_set_faults(fp, dir, &f);
	}
	if (strcmp(name, "wait") == 0)
		return uiw_fp_wait_offset(fp, dir, num[0], wait_ms(l, 1));
	/* waitclosed */
	return num[0] > UINT32_MAX ? einval() :
	       uiw_fp_wait_closed(fp, (unsigned int)num[0], wait_ms(l, 1));
}

/* Runs a UDP command: 0, or -1 with errno set. */
static int run_udp(struct uiw_uf *uf, const struct cmd_line *l)
{
	const char *name = l->c->name;
	enum uiw_uf_dir dir = (enum uiw_uf_dir)l->dir;
	const uint64_t *num = l->num;
	struct uiw_uf_faults f;

	uiw_uf_faults_init(&f);
	if (strcmp(name, "drop") == 0)
		return uiw_uf_drop(uf, dir, (uint32_t)num[0]);
	if (strcmp(name, "dup") == 0)
		return uiw_uf_dup(uf, dir, (uint32_t)num[0]);
	if (strcmp(name, "reorder") == 0) {
		uint64_t after = l->nums > 1 ? num[1] : f.reorder_after;
		uint64_t ms = l->nums > 2 ? num[2] : f.reorder_ms;

		return after > UINT32_MAX || ms > UINT32_MAX ? einval() :
		       uiw_uf_reorder(uf, dir, (uint32_t)num[0],
				      (unsigned int)after, (unsigned int)ms);
	}
	if (strcmp(name, "delay") == 0)
		return num[0] > UINT32_MAX ? einval() :
		       uiw_uf_delay(uf, dir, (unsigned int)num[0]);
	if (strcmp(name, "burst") == 0)
		return num[0] > UINT32_MAX ? einval() :
		       uiw_uf_burst(uf, dir, (unsigned int)num[0]);
	if (strcmp(name, "cut") == 0)
		return uiw_uf_cut(uf, l->word);
	if (strcmp(name, "uncut") == 0)
		return uiw_uf_uncut(uf);
	if (strcmp(name, "seed") == 0)
		return uiw_uf_seed(uf, num[0]);
	if (strcmp(name, "clear") == 0)
		return uiw_uf_set_faults(uf, dir, &f) ? -1 :
		       uiw_uf_burst(uf, dir, 0);
	if (strcmp(name, "waitrecv") == 0)
		return uiw_uf_wait_received(uf, dir, num[0], wait_ms(l, 1));
	/* waitdone */
	return uiw_uf_wait_done(uf, dir, num[0], wait_ms(l, 1));
}

/* The relay the program runs: one of the two. */
struct relay {
	struct uiw_fp *fp;
	struct uiw_uf *uf;
};

/* Runs one command line; writes the answer to out (a plain "ok" only if
 * say_ok).  Returns CMD_OK, CMD_ERROR (answered "error ...") or
 * CMD_QUIT. */
static int run_command(const struct relay *r, char *line, FILE *out,
		       bool say_ok)
{
	struct cmd_line l;
	int rc;

	if (parse_line(r->fp ? tcp_commands : udp_commands, line, out,
		       &l) != CMD_OK)
		return CMD_ERROR;
	if (l.c == NULL)
		return CMD_OK;
	if (strcmp(l.c->name, "quit") == 0) {
		if (say_ok)
			fprintf(out, "ok\n");
		return CMD_QUIT;
	}
	if (strcmp(l.c->name, "stats") == 0) {
		if (r->fp)
			print_tcp_stats(r->fp, out);
		else
			print_udp_stats(r->uf, out);
		return CMD_OK;
	}
	rc = r->fp ? run_tcp(r->fp, &l) : run_udp(r->uf, &l);
	if (rc == 0) {
		if (say_ok)
			fprintf(out, "ok\n");
		return CMD_OK;
	}
	fprintf(out, "error %s: %s\n", l.c->name, strerror(errno));
	return CMD_ERROR;
}

static void relay_stop(struct relay *r)
{
	uiw_fp_stop(r->fp);
	uiw_uf_stop(r->uf);
}

struct closer {
	struct uiw_fp *fp;
	unsigned int count;
};

/* With -n: waits for the connections to end, then ends the program the
 * way a signal would. */
static void *closer_main(void *arg)
{
	struct closer *c = arg;

	if (uiw_fp_wait_closed(c->fp, c->count, -1) == 0)
		kill(getpid(), SIGTERM);
	return NULL;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "udp", no_argument, NULL, 'u' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct sockaddr_storage target, la;
	socklen_t tlen = 0, llen;
	const char *cmds[MAX_E];
	char host[INET6_ADDRSTRLEN];
	int ncmds = 0, opt, rc, status = 0;
	uint64_t count = 0, port = 0, clients = 0;
	struct uiw_uf_config cfg;
	struct closer closer;
	pthread_t closer_thread;
	struct relay r = { NULL, NULL };
	bool have_target = false, udp = false, udp_opts = false;
	bool stdin_open = true, run = true;
	char buf[CMD_MAX];
	size_t have = 0;

	uiw_tool_name = "uiwarp-faultproxy";
	uiw_uf_config_init(&cfg);
	while ((opt = getopt_long(argc, argv, "t:e:n:up:s:c:h", longopts,
				  NULL)) != -1) {
		switch (opt) {
		case 't':
			have_target = parse_target(optarg, &target, &tlen);
			if (!have_target) {
				fprintf(stderr, "uiwarp-faultproxy: bad target "
					"%s (want ADDR:PORT)\n", optarg);
				return 2;
			}
			break;
		case 'e':
			if (ncmds == MAX_E) {
				fprintf(stderr, "uiwarp-faultproxy: more than "
					"%d -e\n", MAX_E);
				return 2;
			}
			cmds[ncmds++] = optarg;
			break;
		case 'n':
			if (!parse_u64(optarg, &count) || count == 0 ||
			    count > UINT32_MAX) {
				fprintf(stderr, "uiwarp-faultproxy: bad count "
					"%s\n", optarg);
				return 2;
			}
			break;
		case 'u':
			udp = true;
			break;
		case 'p':
			udp_opts = true;
			if (!parse_u64(optarg, &port) || port > 65535)
				uiw_tool_bad_usage("bad port %s", optarg);
			cfg.port = (uint16_t)port;
			break;
		case 's':
			udp_opts = true;
			if (!parse_u64(optarg, &cfg.seed))
				uiw_tool_bad_usage("bad seed %s", optarg);
			break;
		case 'c':
			udp_opts = true;
			if (!parse_u64(optarg, &clients) || clients == 0 ||
			    clients > UIW_UF_MAX_CLIENTS)
				uiw_tool_bad_usage("bad client count %s (1..%u)",
						   optarg, UIW_UF_MAX_CLIENTS);
			cfg.max_clients = (unsigned int)clients;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (!have_target || optind != argc) {
		usage(stderr);
		return 2;
	}
	if (udp && count)
		uiw_tool_bad_usage("-n counts connections: not with --udp");
	if (!udp && udp_opts)
		uiw_tool_bad_usage("-p, -s and -c are for --udp only");

	/* Before the relay's thread starts: it inherits the mask.  The
	 * orderly end (halting the relay) has the deadline of tool_util.h. */
	uiw_tool_signals_init(NULL);

	if (udp)
		r.uf = uiw_uf_start((struct sockaddr *)&target, tlen, &cfg);
	else
		r.fp = uiw_fp_start((struct sockaddr *)&target, tlen, NULL);
	if (r.fp == NULL && r.uf == NULL) {
		perror("uiwarp-faultproxy: start");
		return 1;
	}
	for (int i = 0; i < ncmds; i++) {
		char line[CMD_MAX];

		snprintf(line, sizeof(line), "%s", cmds[i]);
		rc = run_command(&r, line, stderr, false);
		if (rc != CMD_OK) {
			if (rc == CMD_ERROR)
				fprintf(stderr, "uiwarp-faultproxy: -e '%s' "
					"failed\n", cmds[i]);
			relay_stop(&r);
			return rc == CMD_ERROR ? 2 : 0;
		}
	}

	if (r.fp)
		uiw_fp_addr(r.fp, &la, &llen);
	else
		uiw_uf_addr(r.uf, &la, &llen);
	if (la.ss_family == AF_INET)
		inet_ntop(AF_INET, &((struct sockaddr_in *)&la)->sin_addr,
			  host, sizeof(host));
	else
		inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&la)->sin6_addr,
			  host, sizeof(host));
	printf("listening %s %u\n", host,
	       r.fp ? uiw_fp_port(r.fp) : uiw_uf_port(r.uf));
	fflush(stdout);

	if (count) {
		closer.fp = r.fp;
		closer.count = (unsigned int)count;
		if (pthread_create(&closer_thread, NULL, closer_main,
				   &closer) != 0) {
			perror("uiwarp-faultproxy: thread");
			relay_stop(&r);
			return 1;
		}
	}

	while (run) {
		struct pollfd p[2] = {
			{ .fd = uiw_tool_stop_fd(), .events = POLLIN },
			{ .fd = stdin_open ? 0 : -1, .events = POLLIN },
		};
		ssize_t n;
		char *nl;

		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			perror("uiwarp-faultproxy: poll");
			status = 1;
			break;
		}
		if (p[0].revents & POLLIN)
			break;		/* SIGINT, SIGTERM or the -n count */
		if (!(p[1].revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		n = read(0, buf + have, sizeof(buf) - 1 - have);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			stdin_open = false;
			continue;
		}
		have += (size_t)n;
		buf[have] = '\0';
		while (run && (nl = strchr(buf, '\n')) != NULL) {
			*nl = '\0';
			run = run_command(&r, buf, stdout, true) != CMD_QUIT;
			fflush(stdout);
			have -= (size_t)(nl + 1 - buf);
			memmove(buf, nl + 1, have + 1);
		}
		if (have == sizeof(buf) - 1) {
			printf("error line too long\n");
			fflush(stdout);
			have = 0;
		}
	}
	uiw_fp_halt(r.fp);	/* the closer's wait, if any, returns */
	if (count)
		pthread_join(closer_thread, NULL);
	relay_stop(&r);
	return status;
}
