/*
 * What every uiwarp tool shares: see tool_util.h.
 */
#include "tool_util.h"

#include <errno.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>
#include <uiwarp/uiwarp.h>
#include <uiwarp/cm.h>

const char *uiw_tool_name = "uiwarp";

/* "<tool>: <message><tail>" on stderr, after what stdout holds. */
static void vsay(const char *tail, const char *fmt, va_list ap)
{
	fflush(stdout);
	fprintf(stderr, "%s: ", uiw_tool_name);
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "%s\n", tail);
}

void uiw_tool_die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsay("", fmt, ap);
	va_end(ap);
	exit(1);
}

void uiw_tool_check(int rc, const char *what)
{
	if (rc < 0)
		uiw_tool_die("%s: %s (%s)", what, strerror(-rc),
			     uiw_last_error());
}

void *uiw_tool_check_ptr(void *p, const char *what)
{
	if (!p)
		uiw_tool_die("%s: %s (%s)", what, strerror(errno),
			     uiw_last_error());
	return p;
}

double uiw_tool_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void *uiw_tool_alloc(size_t len)
{
	void *p = NULL;

	if (posix_memalign(&p, 4096, len ? len : 1))
		uiw_tool_die("out of memory (%zu octets)", len);
	memset(p, 0, len);
	return p;
}

/* One step of the xorshift32 generator of the pattern. */
static uint8_t pattern_next(uint32_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 17;
	*x ^= *x << 5;
	return (uint8_t)*x;
}

void uiw_tool_fill(uint8_t *p, size_t n, uint32_t seed)
{
	uint32_t x = seed * 2654435761u + 1;
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = pattern_next(&x);
}

size_t uiw_tool_mismatch(const uint8_t *p, size_t n, uint32_t seed)
{
	uint32_t x = seed * 2654435761u + 1;
	size_t i;

	for (i = 0; i < n; i++)
		if (p[i] != pattern_next(&x))
			return i;
	return n;
}

/* ------------------------------------------------------------------ */
/* Results                                                            */

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

void uiw_tool_lat_stats(double *v, size_t n, double out[4])
{
	size_t i;
	double sum = 0;

	if (!n) {
		out[0] = out[1] = out[2] = out[3] = NAN;
		return;
	}
	for (i = 0; i < n; i++)
		sum += v[i];
	qsort(v, n, sizeof(*v), cmp_dbl);
	out[0] = v[0];
	out[1] = sum / (double)n;
	out[2] = v[n / 2];
	out[3] = v[n * 99 / 100 < n ? n * 99 / 100 : n - 1];
}

void uiw_tool_print_csv(const struct uiw_tool_table *t)
{
	char buf[64];
	bool num;
	int i, c;

	for (c = 0; c < t->ncols; c++)
		printf("%s%s", c ? "," : "", t->cols[c]);
	printf("\n");
	for (i = 0; i < t->nrows; i++) {
		for (c = 0; c < t->ncols; c++) {
			t->cell(i, c, buf, sizeof(buf), &num);
			printf("%s%s", c ? "," : "", buf);
		}
		printf("\n");
	}
}

void uiw_tool_print_json_rows(const struct uiw_tool_table *t)
{
	char buf[64];
	bool num;
	int i, c;

	for (i = 0; i < t->nrows; i++) {
		printf("    {");
		for (c = 0; c < t->ncols; c++) {
			t->cell(i, c, buf, sizeof(buf), &num);
			printf("%s\"%s\": ", c ? ", " : "", t->cols[c]);
			if (!buf[0])
				printf("null");
			else if (num)
				printf("%s", buf);
			else
				printf("\"%s\"", buf);
		}
		printf("}%s\n", i + 1 < t->nrows ? "," : "");
	}
}

/* ------------------------------------------------------------------ */
/* Command-line values                                                */

int uiw_tool_parse_long(const char *s, long min, long max, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

int uiw_tool_parse_size(const char *s, size_t min, size_t max, size_t *out)
{
	unsigned long long v, mul = 1;
	char *end;

	/* strtoull takes "-1" as a huge number: refuse signs first. */
	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -1;
	switch (*end) {
	case 'k': case 'K': mul = 1ull << 10; end++; break;
	case 'm': case 'M': mul = 1ull << 20; end++; break;
	case 'g': case 'G': mul = 1ull << 30; end++; break;
	}
	if (*end || v > SIZE_MAX / mul)
		return -1;
	v *= mul;
	if (v < min || v > max)
		return -1;
	*out = (size_t)v;
	return 0;
}

int uiw_tool_parse_secs(const char *s, double max, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !(v > 0 && v <= max))
		return -1;
	*out = v;
	return 0;
}

int uiw_tool_onoff(const char *s)
{
	if (!strcmp(s, "on") || !strcmp(s, "1") || !strcmp(s, "yes"))
		return UIW_OPT_ON;
	if (!strcmp(s, "off") || !strcmp(s, "0") || !strcmp(s, "no"))
		return UIW_OPT_OFF;
	return -1;
}

static const char *const llp_names[] = {
	[UIW_LLP_TCP] = "tcp", [UIW_LLP_SCTP] = "sctp",
	[UIW_LLP_SCTP_UDP] = "sctp-udp", [UIW_LLP_SCTP_KERNEL] = "sctp-kernel",
};

int uiw_tool_parse_llp(const char *s, enum uiw_llp_kind *out)
{
	unsigned i;

	for (i = 0; i < sizeof(llp_names) / sizeof(llp_names[0]); i++) {
		if (!strcmp(s, llp_names[i])) {
			*out = (enum uiw_llp_kind)i;
			return 0;
		}
	}
	return -1;
}

const char *uiw_tool_llp_name(enum uiw_llp_kind llp)
{
	return (unsigned)llp < sizeof(llp_names) / sizeof(llp_names[0]) ?
	       llp_names[llp] : "?";
}

void uiw_tool_bad_usage(const char *fmt, ...)
{
	char tail[64];
	va_list ap;

	snprintf(tail, sizeof(tail), " (%s -h for help)", uiw_tool_name);
	va_start(ap, fmt);
	vsay(tail, fmt, ap);
	va_end(ap);
	exit(2);
}

long uiw_tool_arg_long(const char *s, long min, long max, const char *what)
{
	long v;

	if (uiw_tool_parse_long(s, min, max, &v))
		uiw_tool_bad_usage("bad %s '%s': give %ld to %ld", what, s, min,
				   max);
	return v;
}

size_t uiw_tool_arg_size(const char *s, size_t min, size_t max,
			 const char *what)
{
	size_t v;

	if (uiw_tool_parse_size(s, min, max, &v))
		uiw_tool_bad_usage("bad %s '%s': a number of octets from %zu "
				   "to %zu (suffixes k, m, g)", what, s, min,
				   max);
	return v;
}

double uiw_tool_arg_secs(const char *s, double max, const char *what)
{
	double v;

	if (uiw_tool_parse_secs(s, max, &v))
		uiw_tool_bad_usage("bad %s '%s': seconds, more than 0 and at "
				   "most %g", what, s, max);
	return v;
}

int uiw_tool_arg_onoff(const char *s, const char *what)
{
	int v = uiw_tool_onoff(s);

	if (v < 0)
		uiw_tool_bad_usage("%s takes on or off, not '%s'", what, s);
	return v;
}

int uiw_tool_resolve(const char *host, const char *port, int family,
		     bool passive, struct sockaddr_storage *ss, socklen_t *len)
{
	if (uiw_resolve(host, port, passive, ss, len)) {
		fflush(stdout);
		fprintf(stderr, "%s: %s\n", uiw_tool_name, uiw_last_error());
		return -1;
	}
	/* uiw_resolve takes the first address of any family; a tool told
	 * to use one family (-6) must not quietly use the other. */
	if (family != AF_UNSPEC && ss->ss_family != family) {
		fflush(stdout);
		fprintf(stderr, "%s: %s is not an %s address\n", uiw_tool_name,
			host ? host : "(any)",
			family == AF_INET6 ? "IPv6" : "IPv4");
		return -1;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* The end on a signal                                                */

static struct {
	sigset_t set;              /* SIGINT, SIGTERM */
	int efd;                   /* readable once a signal came */
	atomic_int signo;          /* the first signal; 0: none yet */
	const char *reason;
} sig = { .efd = -1 };

const char *uiw_tool_signal_name(int signo)
{
	static _Thread_local char buf[24];

	if (signo == SIGINT)
		return "SIGINT";
	if (signo == SIGTERM)
		return "SIGTERM";
	snprintf(buf, sizeof(buf), "signal %d", signo);
	return buf;
}

/* The last words before _exit, from the signal thread.  A plain write(2):
 * the thread the program is stuck in may hold stderr's lock.  What stdout
 * holds is flushed only if nobody holds its lock, for the same reason. */
static void sig_exit(int status, const char *fmt, ...)
	__attribute__((noreturn, format(printf, 2, 3)));
static void sig_exit(int status, const char *fmt, ...)
{
	char msg[256];
	va_list ap;
	int n;

	if (ftrylockfile(stdout) == 0) {
		fflush(stdout);
		funlockfile(stdout);
	}
	n = snprintf(msg, sizeof(msg), "%s: ", uiw_tool_name);
	va_start(ap, fmt);
	if (n >= 0 && (size_t)n < sizeof(msg))
		n += vsnprintf(msg + n, sizeof(msg) - (size_t)n, fmt, ap);
	va_end(ap);
	if (n < 0)
		n = 0;
	if ((size_t)n >= sizeof(msg) - 1)
		n = (int)sizeof(msg) - 2;
	msg[n++] = '\n';
	if (write(STDERR_FILENO, msg, (size_t)n) < 0) {
		/* Nothing left to tell it with. */
	}
	_exit(status);
}

static void *signal_main(void *arg)
{
	struct timespec left;
	siginfo_t si;
	double t0 = 0, rest;
	uint64_t one = 1;
	int s, first = 0;

	(void)arg;
	for (;;) {
		if (!first) {
			s = sigwaitinfo(&sig.set, &si);
		} else {
			rest = t0 + UIW_TOOL_STOP_GRACE_MS / 1000.0 -
			       uiw_tool_now();
			if (rest <= 0)
				break;
			left.tv_sec = (time_t)rest;
			left.tv_nsec = (long)((rest - (double)left.tv_sec) * 1e9);
			s = sigtimedwait(&sig.set, &si, &left);
		}
		if (s < 0)
			continue;       /* EINTR, or EAGAIN: time is checked */
		if (!first) {
			first = s;
			t0 = uiw_tool_now();
			atomic_store(&sig.signo, s);
			if (write(sig.efd, &one, sizeof(one)) < 0)
				sig_exit(128 + s, "%s: cannot wake the program "
					 "(%s); exiting",
					 uiw_tool_signal_name(s),
					 strerror(errno));
			continue;
		}
		if (uiw_tool_now() - t0 >= 1.0)
			sig_exit(128 + s, "%s again: stopping at once",
				 uiw_tool_signal_name(s));
	}
	sig_exit(128 + first, "%s within %d s of %s; exiting",
		 sig.reason ? sig.reason : "did not end",
		 UIW_TOOL_STOP_GRACE_MS / 1000, uiw_tool_signal_name(first));
}

void uiw_tool_signals_init(const char *reason)
{
	pthread_attr_t attr;
	pthread_t th;
	int rc;

	signal(SIGPIPE, SIG_IGN);
	sig.reason = reason;
	sigemptyset(&sig.set);
	sigaddset(&sig.set, SIGINT);
	sigaddset(&sig.set, SIGTERM);
	/* Blocked signals are never discarded, even where the shell that
	 * started us ignores SIGINT (a background job): they wait for
	 * sigwaitinfo. */
	rc = pthread_sigmask(SIG_BLOCK, &sig.set, NULL);
	if (rc)
		uiw_tool_die("blocking signals: %s", strerror(rc));
	sig.efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (sig.efd < 0)
		uiw_tool_die("eventfd: %s", strerror(errno));
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	rc = pthread_create(&th, &attr, signal_main, NULL);
	pthread_attr_destroy(&attr);
	if (rc)
		uiw_tool_die("starting the signal thread: %s", strerror(rc));
}

int uiw_tool_stop_signal(void)
{
	return atomic_load(&sig.signo);
}

int uiw_tool_stop_fd(void)
{
	return sig.efd;
}

void uiw_tool_exit_if_stopped(void)
{
	int s = uiw_tool_stop_signal();

	if (!s)
		return;
	fflush(stdout);
	fprintf(stderr, "%s: stopped by %s\n", uiw_tool_name,
		uiw_tool_signal_name(s));
	exit(128 + s);
}

void uiw_tool_wait_line(void)
{
	struct pollfd pfd[2] = {
		{ .fd = STDIN_FILENO, .events = POLLIN },
		{ .fd = sig.efd, .events = POLLIN },
	};
	char line[64];

	/* Called before anything else reads stdin, so stdio's buffer is
	 * empty and the fd alone tells when the line comes. */
	for (;;) {
		if (poll(pfd, sig.efd >= 0 ? 2 : 1, -1) < 0 && errno != EINTR)
			uiw_tool_die("poll: %s", strerror(errno));
		uiw_tool_exit_if_stopped();
		if (pfd[0].revents)
			break;
	}
	if (!fgets(line, sizeof(line), stdin))
		uiw_tool_die("stdin closed before the go-ahead");
}
