/*
 * uiwarp-faultproxy: the fault-injecting TCP proxy of the tests
 * (tools/lib/faultproxy.h) as a program, for shell tests.
 *
 *   uiwarp-faultproxy -t ADDR:PORT [-e COMMAND]... [-n COUNT]
 *
 * It listens on the loopback address of ADDR's family, port 0, runs the
 * -e commands in order, and then prints one line,
 *
 *   listening <addr> <port>
 *
 * on standard output.  After that it reads commands from standard input,
 * one a line, and answers each with one line, "ok[ ...]" or
 * "error <reason>".  It runs until SIGINT or SIGTERM, the command "quit",
 * or, with -n, until COUNT connections have ended; the end of standard
 * input alone does not stop it.  DIR is c2s (client to target) or s2c.
 *
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
#include "tool_util.h"

#define CMD_MAX		512
#define WAIT_DEFAULT_MS	30000
#define MAX_E		64	/* -e options */

static void usage(FILE *to)
{
	fprintf(to,
		"usage: uiwarp-faultproxy -t ADDR:PORT [-e COMMAND]... "
		"[-n COUNT]\n"
		"  -t ADDR:PORT  target (127.0.0.1:7174, [::1]:7174)\n"
		"  -e COMMAND    run a command before listening is announced\n"
		"  -n COUNT      exit after COUNT connections have ended\n"
		"commands (stdin or -e): split DIR N | delay DIR MS | "
		"stall DIR OFF |\n"
		"  release DIR | reset DIR OFF | shut DIR OFF | "
		"flip DIR OFF BIT |\n"
		"  clear DIR | wait DIR OFF [MS] | waitclosed N [MS] | stats |"
		" quit\n"
		"DIR: c2s (client to target) or s2c\n");
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

/* The commands: name, whether the first argument is a direction, and
 * how many numbers follow (at least, at most). */
static const struct {
	const char *name;
	bool dir;
	int min, max;
} commands[] = {
	{ "split", true, 1, 1 },	{ "delay", true, 1, 1 },
	{ "stall", true, 1, 1 },	{ "release", true, 0, 0 },
	{ "reset", true, 1, 1 },	{ "shut", true, 1, 1 },
	{ "flip", true, 2, 2 },		{ "clear", true, 0, 0 },
	{ "wait", true, 1, 2 },		{ "waitclosed", false, 1, 2 },
	{ "stats", false, 0, 0 },	{ "quit", false, 0, 0 },
};

static int wait_ms(int nums, const uint64_t *num, int at)
{
	if (nums <= at)
		return WAIT_DEFAULT_MS;
	return num[at] > INT32_MAX ? INT32_MAX : (int)num[at];
}

static void print_stats(struct uiw_fp *fp, FILE *out)
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

/* Runs one command line; writes the answer to out (a plain "ok" only if
 * say_ok).  Returns CMD_OK, CMD_ERROR (answered "error ...") or
 * CMD_QUIT. */
static int run_command(struct uiw_fp *fp, char *line, FILE *out,
		       bool say_ok)
{
	char *arg[6], *save = NULL, *tok, *name;
	uint64_t num[4];
	int n = 0, nums = 0, c, rc = 0;
	enum uiw_fp_dir dir = UIW_FP_C2S;

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
	for (c = 0; c < (int)(sizeof(commands) / sizeof(commands[0])); c++)
		if (strcmp(name, commands[c].name) == 0)
			break;
	if (c == (int)(sizeof(commands) / sizeof(commands[0]))) {
		fprintf(out, "error unknown command %s\n", name);
		return CMD_ERROR;
	}
	if (commands[c].dir) {
		int d = n > 1 ? uiw_fp_dir_parse(arg[1]) : -1;

		if (d < 0) {
			fprintf(out, "error %s: direction must be c2s or "
				"s2c\n", name);
			return CMD_ERROR;
		}
		dir = (enum uiw_fp_dir)d;
	}
	for (int i = commands[c].dir ? 2 : 1; i < n; i++) {
		if (!parse_u64(arg[i], &num[nums])) {
			fprintf(out, "error %s: bad number %s\n", name,
				arg[i]);
			return CMD_ERROR;
		}
		nums++;
	}
	if (nums < commands[c].min || nums > commands[c].max) {
		fprintf(out, "error %s: wrong number of arguments\n", name);
		return CMD_ERROR;
	}

	if (strcmp(name, "quit") == 0) {
		if (say_ok)
			fprintf(out, "ok\n");
		return CMD_QUIT;
	} else if (strcmp(name, "stats") == 0) {
		print_stats(fp, out);
		return CMD_OK;
	} else if (strcmp(name, "split") == 0) {
		rc = num[0] > SIZE_MAX ? einval() :
		     uiw_fp_split(fp, dir, (size_t)num[0]);
	} else if (strcmp(name, "delay") == 0) {
		rc = num[0] > UINT32_MAX ? einval() :
		     uiw_fp_delay(fp, dir, (unsigned int)num[0]);
	} else if (strcmp(name, "stall") == 0) {
		rc = uiw_fp_stall(fp, dir, num[0]);
	} else if (strcmp(name, "release") == 0) {
		rc = uiw_fp_release(fp, dir);
	} else if (strcmp(name, "reset") == 0) {
		rc = uiw_fp_reset(fp, dir, num[0]);
	} else if (strcmp(name, "shut") == 0) {
		rc = uiw_fp_shut(fp, dir, num[0]);
	} else if (strcmp(name, "flip") == 0) {
		rc = num[1] > 7 ? einval() :
		     uiw_fp_flip(fp, dir, num[0], (unsigned int)num[1]);
	} else if (strcmp(name, "clear") == 0) {
		struct uiw_fp_faults f;

		uiw_fp_faults_init(&f);
		rc = uiw_fp_set_faults(fp, dir, &f);
	} else if (strcmp(name, "wait") == 0) {
		rc = uiw_fp_wait_offset(fp, dir, num[0],
					wait_ms(nums, num, 1));
	} else if (strcmp(name, "waitclosed") == 0) {
		rc = num[0] > UINT32_MAX ? einval() :
		     uiw_fp_wait_closed(fp, (unsigned int)num[0],
					wait_ms(nums, num, 1));
	}
	if (rc == 0) {
		if (say_ok)
			fprintf(out, "ok\n");
		return CMD_OK;
	}
	fprintf(out, "error %s: %s\n", name, strerror(errno));
	return CMD_ERROR;
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
	struct sockaddr_storage target, la;
	socklen_t tlen = 0, llen;
	const char *cmds[MAX_E];
	char host[INET6_ADDRSTRLEN];
	int ncmds = 0, opt, rc, status = 0;
	uint64_t count = 0;
	struct closer closer;
	pthread_t closer_thread;
	struct uiw_fp *fp;
	bool have_target = false, stdin_open = true, run = true;
	char buf[CMD_MAX];
	size_t have = 0;

	while ((opt = getopt(argc, argv, "t:e:n:h")) != -1) {
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

	/* Before the proxy's thread starts: it inherits the mask.  The
	 * orderly end (halting the proxy) has the deadline of tool_util.h. */
	uiw_tool_name = "uiwarp-faultproxy";
	uiw_tool_signals_init(NULL);

	fp = uiw_fp_start((struct sockaddr *)&target, tlen, NULL);
	if (fp == NULL) {
		perror("uiwarp-faultproxy: start");
		return 1;
	}
	for (int i = 0; i < ncmds; i++) {
		char line[CMD_MAX];

		snprintf(line, sizeof(line), "%s", cmds[i]);
		rc = run_command(fp, line, stderr, false);
		if (rc != CMD_OK) {
			if (rc == CMD_ERROR)
				fprintf(stderr, "uiwarp-faultproxy: -e '%s' "
					"failed\n", cmds[i]);
			uiw_fp_stop(fp);
			return rc == CMD_ERROR ? 2 : 0;
		}
	}

	uiw_fp_addr(fp, &la, &llen);
	if (la.ss_family == AF_INET)
		inet_ntop(AF_INET, &((struct sockaddr_in *)&la)->sin_addr,
			  host, sizeof(host));
	else
		inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&la)->sin6_addr,
			  host, sizeof(host));
	printf("listening %s %u\n", host, uiw_fp_port(fp));
	fflush(stdout);

	if (count) {
		closer.fp = fp;
		closer.count = (unsigned int)count;
		if (pthread_create(&closer_thread, NULL, closer_main,
				   &closer) != 0) {
			perror("uiwarp-faultproxy: thread");
			uiw_fp_stop(fp);
			return 1;
		}
	}

	while (run) {
		struct pollfd p[2] = {
			{ .fd = uiw_tool_stop_fd(), .events = POLLIN },
			{ .fd = stdin_open ? 0 : -1, .events = POLLIN },
		};
		ssize_t r;
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
		r = read(0, buf + have, sizeof(buf) - 1 - have);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			stdin_open = false;
			continue;
		}
		have += (size_t)r;
		buf[have] = '\0';
		while (run && (nl = strchr(buf, '\n')) != NULL) {
			*nl = '\0';
			run = run_command(fp, buf, stdout, true) != CMD_QUIT;
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
	uiw_fp_halt(fp);	/* the closer's wait, if any, returns */
	if (count)
		pthread_join(closer_thread, NULL);
	uiw_fp_stop(fp);
	return status;
}
