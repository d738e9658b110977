/*
 * uiwarp-run: runs an unmodified verbs or rdma_cm program on uiwarp.
 *
 * It puts the directory of uiwarp's drop-in libibverbs.so.1 and
 * librdmacm.so.1 first in LD_LIBRARY_PATH, so that the dynamic loader
 * takes them in place of rdma-core's, and then replaces itself with the
 * program (execvp): the program is the very process its caller started,
 * so signals reach it directly and its exit status is the caller's.
 *
 * Where the libraries are: a path relative to this program's own file,
 * fixed when it is built (UIW_RUN_LIBDIR): "compat" in the build tree,
 * the path from $bindir to $libdir/uiwarp for the copy that is
 * installed.  Relative, so that a tree installed under DESTDIR or moved
 * as a whole still finds its own libraries.
 *
 * Exit statuses of its own are those of env(1): 125 when uiwarp-run
 * itself fails (a usage error, the libraries missing), 126 when the
 * program was found but could not be run, 127 when it was not found.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef UIW_RUN_LIBDIR
#error "UIW_RUN_LIBDIR: the library directory relative to the program's"
#endif
#ifndef UIW_RUN_VERSION
#error "UIW_RUN_VERSION: the project's version"
#endif

/* env(1)'s statuses, which scripts that wrap commands already know. */
enum { EXIT_OWN = 125, EXIT_CANNOT_RUN = 126, EXIT_NOT_FOUND = 127 };

/* The libraries a program linked against rdma-core 44 loads by these
 * sonames (DT_NEEDED); both must be there. */
static const char *const run_libs[] = { "libibverbs.so.1", "librdmacm.so.1" };

static void usage(FILE *f)
{
	fprintf(f,
"usage: uiwarp-run [options] [--] COMMAND [ARG]...\n"
"Runs COMMAND with uiwarp's libibverbs.so.1 and librdmacm.so.1 in place of\n"
"rdma-core's: RDMA programs then use the software iWARP device uiwarp0.\n"
"Options:\n"
"  -a, --addr ADDR     the device's IP address (UIWARP_ADDR; default: the\n"
"                      first up non-loopback IPv4 interface's, else 127.0.0.1)\n"
"  -d, --debug[=N]     library log on stderr (UIWARP_DEBUG=N, 1 to 3; default 1)\n"
"      --print-libdir  print the directory of the libraries and exit\n"
"  -h, --help          this help\n"
"      --version       the version\n"
"Exit status: COMMAND's; 125 when uiwarp-run fails, 126 when COMMAND cannot\n"
"be run, 127 when it is not found.\n");
}

/* "uiwarp-run: <message><hint>" on stderr and the exit status of
 * uiwarp-run's own failures. */
static void __attribute__((noreturn, format(printf, 2, 3)))
quit(const char *hint, const char *fmt, ...)
{
	va_list ap;

	fputs("uiwarp-run: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "%s\n", hint);
	exit(EXIT_OWN);
}
#define fail(...) quit("", __VA_ARGS__)
#define bad_usage(...) quit(" (uiwarp-run --help for help)", __VA_ARGS__)

/* The library directory: UIW_RUN_LIBDIR beside this program's file,
 * symbolic links resolved (a link to the program elsewhere still finds
 * the libraries of the tree it belongs to). */
static void lib_dir(char *out, size_t len)
{
	char exe[PATH_MAX], dir[PATH_MAX];
	char *slash;
	int n;

	if (!realpath("/proc/self/exe", exe))
		fail("cannot find its own file (/proc/self/exe): %s",
		     strerror(errno));
	slash = strrchr(exe, '/');
	*slash = '\0';
	n = snprintf(dir, sizeof(dir), "%s/%s", exe[0] ? exe : "/",
		     UIW_RUN_LIBDIR);
	if (n < 0 || (size_t)n >= sizeof(dir))
		fail("library directory path too long");
	/* Without "..": the directory as the loader and messages show it. */
	if (!realpath(dir, out)) {
		if ((size_t)n >= len)
			fail("library directory path too long");
		memcpy(out, dir, (size_t)n + 1);
	}
}

/* Both libraries are in dir, or uiwarp-run says which is not and ends. */
static void check_libs(const char *dir)
{
	char path[PATH_MAX + 32];
	size_t i;
	int n;

	for (i = 0; i < sizeof(run_libs) / sizeof(run_libs[0]); i++) {
		n = snprintf(path, sizeof(path), "%s/%s", dir, run_libs[i]);
		if (n < 0 || (size_t)n >= sizeof(path))
			fail("library directory path too long");
		if (access(path, R_OK) != 0)
			fail("the drop-in libraries are not in %s (%s: %s); "
			     "build uiwarp's src/compat or install uiwarp",
			     dir, run_libs[i], strerror(errno));
	}
}

/* LD_LIBRARY_PATH with dir first (once: a uiwarp-run inside another
 * adds nothing). */
static void prepend_path(const char *dir)
{
	const char *old = getenv("LD_LIBRARY_PATH");
	size_t dl = strlen(dir);
	char *v;

	if (old && *old && strncmp(old, dir, dl) == 0 &&
	    (old[dl] == ':' || old[dl] == '\0'))
		return;
	if (old && *old) {
		v = malloc(dl + 1 + strlen(old) + 1);
		if (!v)
			fail("out of memory");
		sprintf(v, "%s:%s", dir, old);
	} else {
		v = strdup(dir);
		if (!v)
			fail("out of memory");
	}
	if (setenv("LD_LIBRARY_PATH", v, 1) != 0)
		fail("setenv LD_LIBRARY_PATH: %s", strerror(errno));
	free(v);
}

/* The address the libraries read (UIWARP_ADDR): numeric, as they take
 * it, so that a mistake shows here and not as a device that is absent. */
static void set_addr(const char *a)
{
	unsigned char buf[sizeof(struct in6_addr)];

	if (inet_pton(AF_INET, a, buf) != 1 &&
	    inet_pton(AF_INET6, a, buf) != 1)
		bad_usage("--addr: '%s' is not a numeric IPv4 or IPv6 address",
			  a);
	if (setenv("UIWARP_ADDR", a, 1) != 0)
		fail("setenv UIWARP_ADDR: %s", strerror(errno));
}

enum { O_VERSION = 256, O_PRINT_LIBDIR };

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "addr", required_argument, NULL, 'a' },
		{ "debug", optional_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, O_VERSION },
		{ "print-libdir", no_argument, NULL, O_PRINT_LIBDIR },
		{ NULL, 0, NULL, 0 },
	};
	char dir[PATH_MAX];
	const char *addr = NULL, *debug = NULL;
	int c, print_dir = 0;

	/* "+": options end at the command, whose own options are its own
	 * (uiwarp-run rping -s -a 127.0.0.1). */
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:a:d::h", lo, NULL)) != -1) {
		switch (c) {
		case 'a':
			addr = optarg;
			break;
		case 'd':
			debug = optarg ? optarg : "1";
			if (strlen(debug) != 1 || debug[0] < '1' ||
			    debug[0] > '3')
				bad_usage("--debug: the level is 1, 2 or 3, not "
					  "'%s'", debug);
			break;
		case 'h':
			usage(stdout);
			return 0;
		case O_VERSION:
			printf("uiwarp-run (uiwarp) %s\n", UIW_RUN_VERSION);
			return 0;
		case O_PRINT_LIBDIR:
			print_dir = 1;
			break;
		case ':':
			bad_usage("option %s needs a value", argv[optind - 1]);
		default:
			if (optopt && optopt < 256)
				bad_usage("unknown option -%c", optopt);
			bad_usage("unknown option %s", argv[optind - 1]);
		}
	}
	lib_dir(dir, sizeof(dir));
	if (print_dir) {
		printf("%s\n", dir);
		return 0;
	}
	if (optind >= argc)
		bad_usage("no command to run");
	if (addr)
		set_addr(addr);
	if (debug && setenv("UIWARP_DEBUG", debug, 1) != 0)
		fail("setenv UIWARP_DEBUG: %s", strerror(errno));
	check_libs(dir);
	prepend_path(dir);

	execvp(argv[optind], argv + optind);
	c = errno;
	fprintf(stderr, "uiwarp-run: %s: %s\n", argv[optind], strerror(c));
	return c == ENOENT ? EXIT_NOT_FOUND : EXIT_CANNOT_RUN;
}
