/*
 * What every uiwarp tool shares, uiwarp connections aside (those are in
 * tool_conn.h): error exits, clocks, test patterns, the parsing of
 * numbers, sizes and addresses given on the command line, and the end of
 * the program on SIGINT and SIGTERM.
 *
 * The functions that can fail either succeed or end the program with a
 * message that names the tool, what failed and why: the tools are short
 * programs whose only answer to a failure is to say what it was.  Set
 * uiw_tool_name before the first call.
 */
#ifndef UIWARP_TOOL_UTIL_H
#define UIWARP_TOOL_UTIL_H

#include <stdbool.h>
#include <uiwarp/uiwarp.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/* The program's name, the prefix of every message. */
extern const char *uiw_tool_name;

void uiw_tool_die(const char *fmt, ...)
	__attribute__((noreturn, format(printf, 1, 2)));
/* rc < 0: dies with "what: strerror(-rc) (uiw_last_error())". */
void uiw_tool_check(int rc, const char *what);
/* p == NULL: dies with "what: strerror(errno) (uiw_last_error())". */
void *uiw_tool_check_ptr(void *p, const char *what);

/* CLOCK_MONOTONIC in seconds. */
double uiw_tool_now(void);
/* len octets, page aligned, zeroed; dies when out of memory. */
void *uiw_tool_alloc(size_t len);

/* A pseudo-random pattern (xorshift32) determined by seed. */
void uiw_tool_fill(uint8_t *p, size_t n, uint32_t seed);
/* Offset of the first octet that differs from uiw_tool_fill's pattern
 * for seed, or n when all of them match. */
size_t uiw_tool_mismatch(const uint8_t *p, size_t n, uint32_t seed);

/* Command-line values.  Each returns 0, or -1 (and leaves *out alone)
 * when s is not wholly a value in [min, max]; the caller says what was
 * wrong in its own words. */
/* A decimal integer. */
int uiw_tool_parse_long(const char *s, long min, long max, long *out);
/* A number of octets with an optional suffix k, m or g (KiB, MiB, GiB,
 * either case). */
int uiw_tool_parse_size(const char *s, size_t min, size_t max,
			size_t *out);
/* Seconds, a decimal fraction, more than 0 and at most max. */
int uiw_tool_parse_secs(const char *s, double max, double *out);
/* "on" (or "1", "yes") / "off" ("0", "no") to UIW_OPT_ON / UIW_OPT_OFF;
 * anything else: -1. */
int uiw_tool_onoff(const char *s);
/* An LLP by name: tcp (MPA over TCP), sctp (DDP over SCTP: the
 * kernel's where it has SCTP, else usrsctp over UDP), sctp-udp,
 * sctp-kernel; anything else: -1. */
int uiw_tool_parse_llp(const char *s, enum uiw_llp_kind *out);
const char *uiw_tool_llp_name(enum uiw_llp_kind llp);

/* A usage error: "<tool>: <message> (<tool> -h for help)" on stderr,
 * exit status 2. */
void uiw_tool_bad_usage(const char *fmt, ...)
	__attribute__((noreturn, format(printf, 1, 2)));
/* The same values for options, ending the program with a usage error
 * that names what (e.g. "depth", "-c") and the range when s is not one. */
long uiw_tool_arg_long(const char *s, long min, long max, const char *what);
size_t uiw_tool_arg_size(const char *s, size_t min, size_t max,
			 const char *what);
double uiw_tool_arg_secs(const char *s, double max, const char *what);
/* An enum uiw_opt. */
int uiw_tool_arg_onoff(const char *s, const char *what);

/* host and port (a number) to an address through uiw_resolve (family
 * AF_UNSPEC: any; passive: for listening).  On failure says why on
 * stderr and returns -1. */
int uiw_tool_resolve(const char *host, const char *port, int family,
		     bool passive, struct sockaddr_storage *ss,
		     socklen_t *len);

/* Latency samples: min, avg, median and p99 (the sample at 99 % of the
 * sorted order) of v[0..n), which is sorted in place; NAN when n is 0. */
void uiw_tool_lat_stats(double *v, size_t n, double out[4]);

/*
 * Results as CSV or JSON.  A table of nrows rows and ncols columns named
 * in cols; cell(row, col) writes one cell into buf (empty where it does
 * not apply) and sets *num when it is a number (unquoted in JSON).
 */
struct uiw_tool_table {
	const char *const *cols;
	int ncols, nrows;
	void (*cell)(int row, int col, char *buf, size_t len, bool *num);
};
/* A header line of the column names, then a line per row. */
void uiw_tool_print_csv(const struct uiw_tool_table *t);
/* The rows as the elements of a JSON array, an object a line, each
 * indented by four spaces (the caller prints what is around them);
 * empty cells are null. */
void uiw_tool_print_json_rows(const struct uiw_tool_table *t);

/*
 * The end on a signal.  uiw_tool_signals_init() blocks SIGINT and SIGTERM
 * in every thread and takes them in a thread of its own; call it before
 * any other thread starts (before uiw_device_open), so that those inherit
 * the mask.  It also ignores SIGPIPE (a peer that goes away is an error
 * to report, not a reason to die without a word).
 *
 * The first SIGINT or SIGTERM asks for an orderly end: the tool finds
 * uiw_tool_stop_signal() non-zero and uiw_tool_stop_fd() readable, and
 * finishes what is under way.  That may need the peer; if the peer never
 * answers, the orderly end never comes.  So it has a deadline:
 * UIW_TOOL_STOP_GRACE_MS after the signal the program ends, whatever it
 * is doing, with
 *   "<tool>: <reason> within 2 s of SIGTERM; exiting"
 * on stderr and the status 128 + the signal's number.  A second signal
 * a second or more after the first ends it at once, the same way.
 * (Nearer ones are the same request delivered twice, as timeout(1) does
 * to its child and its process group.)
 */
#define UIW_TOOL_STOP_GRACE_MS 2000

/* reason: what the message says went wrong (a string that lives as long
 * as the program), e.g. "peer did not answer"; NULL: "did not end". */
void uiw_tool_signals_init(const char *reason);
/* The signal that asked for the end, 0 while none has. */
int uiw_tool_stop_signal(void);
/* Readable from the first signal on (and it stays so), for poll(2). */
int uiw_tool_stop_fd(void);
/* "SIGINT", "SIGTERM" or "signal N". */
const char *uiw_tool_signal_name(int signo);
/* Waits for a line on stdin (the go-ahead of a test that drives the
 * tool); for the first read of stdin only.  Dies when stdin ends first;
 * a signal meanwhile ends the program as uiw_tool_exit_if_stopped()
 * does. */
void uiw_tool_wait_line(void);
/* When a signal has asked for the end: "<tool>: stopped by SIGTERM" on
 * stderr and exit(128 + its number).  Else nothing. */
void uiw_tool_exit_if_stopped(void);

#endif
