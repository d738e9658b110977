/*
 * uiwarp-nfs against the tests' server (fake_nfsd.c), over RPC-over-RDMA
 * or TCP (argv[1]: rdma or tcp): each command, its output, the data
 * both ways compared octet for octet, what --stats says moved by RDMA
 * Write (READ) and RDMA Read (WRITE), the errors and their exit
 * statuses, a server that goes silent in the middle of a get, and
 * SIGTERM during one.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <rpc/rpc.h>
#include "fake_nfsd.h"
#include "tool_util.h"

#define BIG (1024 * 1024 + 123)   /* 17 READs of 64 KiB, the last short */

static const char *proto;
static struct fake_ports ports;
static char dir[64];

struct run {
	int status;             /* exit status, or 128 + signal */
	double secs;
	char *out, *err;
	size_t outlen;
};

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *p;
	long n;

	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	p = malloc((size_t)n + 1);
	assert_non_null(p);
	assert_int_equal(fread(p, 1, (size_t)n, f), (size_t)n);
	p[n] = 0;
	fclose(f);
	if (len)
		*len = (size_t)n;
	return p;
}

/* uiwarp-nfs with the ports and proto, opts, the export, then the
 * command's words (NULL-terminated lists). */
static pid_t spawn(const char *const *opts, const char *const *cmd)
{
	char tport[8], mport[8], op[300], ep[300];
	const char *argv[48];
	int n = 0, i;
	pid_t pid;

	snprintf(tport, sizeof(tport), "%u",
		 !strcmp(proto, "rdma") ? ports.rdma : ports.tcp);
	snprintf(mport, sizeof(mport), "%u", ports.tcp);
	snprintf(op, sizeof(op), "%s/out", dir);
	snprintf(ep, sizeof(ep), "%s/err", dir);
	argv[n++] = UIWARP_NFS;
	argv[n++] = "-x";
	argv[n++] = proto;
	argv[n++] = "-p";
	argv[n++] = tport;
	argv[n++] = "-m";
	argv[n++] = mport;
	for (i = 0; opts && opts[i]; i++)
		argv[n++] = opts[i];
	argv[n++] = "127.0.0.1:/export";
	for (i = 0; cmd[i]; i++)
		argv[n++] = cmd[i];
	argv[n] = NULL;
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int in = open("/dev/null", O_RDONLY);
		int out = open(op, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int err = open(ep, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		dup2(in, 0);
		dup2(out, 1);
		dup2(err, 2);
		execv(UIWARP_NFS, (char **)argv);
		_exit(127);
	}
	return pid;
}

/* Waits for pid at most limit seconds (a pidfd, polled). */
static void reap(pid_t pid, double limit, struct run *r, double t0)
{
	int pfd = (int)syscall(SYS_pidfd_open, pid, 0), st;
	struct pollfd p = { .fd = pfd, .events = POLLIN };
	char path[300];

	assert_true(pfd >= 0);
	if (poll(&p, 1, (int)(limit * 1000)) != 1) {
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
		close(pfd);
		fail_msg("uiwarp-nfs did not end within %.0f s", limit);
	}
	close(pfd);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	r->secs = now() - t0;
	r->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	snprintf(path, sizeof(path), "%s/out", dir);
	r->out = slurp(path, &r->outlen);
	snprintf(path, sizeof(path), "%s/err", dir);
	r->err = slurp(path, NULL);
}

static void run_opts(struct run *r, const char *const *opts,
		     const char *const *cmd)
{
	double t0 = now();

	reap(spawn(opts, cmd), 30, r, t0);
}

#define RUN(r, ...) run_opts(r, NULL, (const char *const[]){ __VA_ARGS__, NULL })
#define RUN_O(r, o, ...) run_opts(r, (const char *const[]){ o, NULL }, \
	(const char *const[]){ __VA_ARGS__, NULL })

static void done(struct run *r)
{
	free(r->out);
	free(r->err);
}

static void expect_ok(struct run *r)
{
	if (r->status != 0)
		fail_msg("exit %d, stderr: %s", r->status, r->err);
}

/* key=value of --stats' second line. */
static uint64_t stat_of(const char *err, const char *key)
{
	char pat[64];
	const char *p;

	snprintf(pat, sizeof(pat), " %s=", key);
	p = strstr(err, pat);
	if (!p)
		fail_msg("no %s in: %s", key, err);
	return strtoull(p + strlen(pat), NULL, 10);
}

static int setup(void **state)
{
	fake_reset(BIG);
	return 0;
}

/* ---- reading ------------------------------------------------------------ */

static void test_get_stdout(void **state)
{
	struct run r;
	size_t len;
	int type;
	uint8_t *want = fake_data("big.bin", &len, &type);

	run_opts(&r, (const char *const[]){ "--stats", NULL },
		 (const char *const[]){ "get", "/big.bin", NULL });
	expect_ok(&r);
	assert_int_equal(r.outlen, BIG);
	assert_memory_equal(r.out, want, BIG);
	assert_int_equal(uiw_tool_mismatch((uint8_t *)r.out, BIG, 7), BIG);
	if (!strcmp(proto, "rdma")) {
		/* RFC 8267 §4.1: READ data by RDMA Write, every octet of
		 * the 16 full READs; the last asks for the 123 octets left
		 * (the size GETATTR gave), under the 1024 from which the
		 * binding offers a Write chunk: inline */
		assert_int_equal(stat_of(r.err, "write_bytes"), BIG - 123);
		assert_int_equal(stat_of(r.err, "write_chunks"), 16);
		assert_int_equal(stat_of(r.err, "read_bytes"), 0);
	} else {
		assert_non_null(strstr(r.err, "rdma: none"));
	}
	free(want);
	done(&r);
}

static void test_get_file_small_rsize(void **state)
{
	struct run r;
	char local[300];
	size_t n;
	char *got;
	struct fake_counts c;

	snprintf(local, sizeof(local), "%s/local", dir);
	run_opts(&r, (const char *const[]){ "--rsize", "10000", "-d", "8",
		 "--progress", NULL },
		 (const char *const[]){ "get", "big.bin", local, NULL });
	expect_ok(&r);
	got = slurp(local, &n);
	assert_int_equal(n, BIG);
	assert_int_equal(uiw_tool_mismatch((uint8_t *)got, n, 7), n);
	fake_counts(&c);
	/* 10000-octet READs: ceil(BIG / 10000) of them */
	assert_int_equal(c.reads, (BIG + 9999) / 10000);
	/* progress, not on a terminal: lines with bytes and MB/s */
	assert_non_null(strstr(r.err, "get big.bin: 1048699 / 1048699 bytes "
			       "(100%), "));
	assert_non_null(strstr(r.err, " MB/s"));
	free(got);
	done(&r);

	/* -q: none */
	RUN_O(&r, "-q", "get", "hello.txt");
	expect_ok(&r);
	assert_string_equal(r.out, "hello, world\n");
	assert_string_equal(r.err, "");
	done(&r);
}

/* ---- writing ------------------------------------------------------------ */

static void put_check(const char *const *opts, size_t size, bool sync)
{
	struct run r;
	char local[300];
	uint8_t *data = malloc(size), *got;
	struct fake_counts c;
	size_t n;
	int type, fd;

	uiw_tool_fill(data, size, 11);
	snprintf(local, sizeof(local), "%s/up", dir);
	fd = open(local, O_WRONLY | O_CREAT | O_TRUNC, 0640);
	assert_int_equal(write(fd, data, size), (ssize_t)size);
	close(fd);
	run_opts(&r, opts, (const char *const[]){ "put", local, "dir/up.bin",
		 NULL });
	expect_ok(&r);
	got = fake_data("dir/up.bin", &n, &type);
	assert_non_null(got);
	assert_int_equal(type, 1);     /* NF3REG */
	assert_int_equal(n, size);
	assert_memory_equal(got, data, size);
	fake_counts(&c);
	if (sync) {
		assert_int_equal(c.unstable_writes, 0);
		assert_int_equal(c.commits, 0);
	} else {
		assert_true(c.unstable_writes > 0);
		assert_true(c.commits >= 1);
	}
	if (!strcmp(proto, "rdma") && opts && !strcmp(opts[0], "--stats")) {
		/* RFC 8267 §4.1: WRITE data by RDMA Read, every octet */
		assert_int_equal(stat_of(r.err, "read_bytes"), size);
		assert_true(stat_of(r.err, "read_chunks") >= 1);
		assert_int_equal(stat_of(r.err, "write_bytes"), 0);
	}
	free(got);
	free(data);
	done(&r);
}

static void test_put(void **state)
{
	put_check((const char *const[]){ "--stats", NULL }, 300000, false);
}

static void test_put_sync(void **state)
{
	put_check((const char *const[]){ "--sync", "-w", "32k", NULL }, 100000,
		  true);
}

static void test_put_verifier_change(void **state)
{
	struct fake_counts c;

	/* RFC 1813 §3.3.7: a new verifier, the data sent again */
	fake_change_verf_after(2);
	put_check((const char *const[]){ "-d", "1", NULL }, 200000, false);
	fake_counts(&c);
	/* 4 WRITEs a pass of 64 KiB, two passes */
	assert_int_equal(c.writes, 8);
}

static void test_put_guarded(void **state)
{
	struct run r;

	RUN(&r, "put", "-n", "/dev/null", "hello.txt");
	assert_int_equal(r.status, 1);
	assert_non_null(strstr(r.err, "uiwarp-nfs: hello.txt: NFS3ERR_EXIST "
			       "(File exists)"));
	done(&r);
}

/* ---- the namespace -------------------------------------------------------- */

static void test_ls(void **state)
{
	struct fake_counts c;
	struct run r;

	RUN(&r, "ls", "dir");
	expect_ok(&r);
	assert_string_equal(r.out, "a\nb\nc\nd\ne\nsub\n");
	fake_counts(&c);
	/* three entries a reply: the cookies were followed */
	assert_int_equal(c.readdirplus, 2);
	done(&r);

	RUN(&r, "ls", "-l");
	expect_ok(&r);
	assert_non_null(strstr(r.out, "-rw-------   1     0     0    1048699 "
			       "2023-11-14 22:13 big.bin\n"));
	assert_non_null(strstr(r.out, "drwxr-xr-x   2 "));
	assert_non_null(strstr(r.out, " link -> hello.txt\n"));
	done(&r);

	RUN(&r, "ls", "empty");
	expect_ok(&r);
	assert_string_equal(r.out, "");
	done(&r);
}

static void test_stat(void **state)
{
	struct run r;

	RUN(&r, "stat", "/hello.txt");
	expect_ok(&r);
	assert_non_null(strstr(r.out, "path=/hello.txt\ntype=regular\n"
			       "mode=0644\nnlink=1\n"));
	assert_non_null(strstr(r.out, "\nsize=13\n"));
	done(&r);

	RUN(&r, "stat", "dir/sub/../sub/x");
	expect_ok(&r);
	assert_non_null(strstr(r.out, "type=regular"));
	done(&r);

	/* the handle stat prints names the object as a path's start */
	{
		char h[2 * 64 + 16], path[sizeof(h) + 8];
		const char *p;

		RUN(&r, "stat", "dir");
		expect_ok(&r);
		p = strstr(r.out, "\nhandle=@");
		assert_non_null(p);
		assert_int_equal(sscanf(p, "\nhandle=%143s", h), 1);
		assert_true(strlen(h) > 1 && strlen(h) % 2 == 1);
		done(&r);
		snprintf(path, sizeof(path), "%s/sub/x", h);
		RUN(&r, "stat", path);
		expect_ok(&r);
		assert_non_null(strstr(r.out, "type=regular"));
		done(&r);
	}
	/* not hex, or an odd number of digits: exit 1, said why */
	RUN(&r, "stat", "@zz");
	assert_int_equal(r.status, 1);
	assert_non_null(strstr(r.err, "a file handle is 1 to 64 octets in hex"));
	done(&r);
	RUN(&r, "stat", "@abc");
	assert_int_equal(r.status, 1);
	done(&r);
}

static void test_changes(void **state)
{
	struct run r;
	size_t n;
	int type;
	uint8_t *p;
	char *t;

	RUN(&r, "mkdir", "dir/new");
	expect_ok(&r);
	done(&r);
	p = fake_data("dir/new", &n, &type);
	assert_non_null(p);
	assert_int_equal(type, 2);
	free(p);

	RUN(&r, "touch", "dir/new/f");
	expect_ok(&r);
	done(&r);
	p = fake_data("dir/new/f", &n, &type);
	assert_non_null(p);
	assert_int_equal(n, 0);
	free(p);

	RUN(&r, "mv", "dir/new/f", "dir/g");
	expect_ok(&r);
	done(&r);
	assert_null(fake_data("dir/new/f", &n, &type));
	p = fake_data("dir/g", &n, &type);
	assert_non_null(p);
	free(p);

	RUN(&r, "rmdir", "dir");
	assert_int_equal(r.status, 1);
	assert_non_null(strstr(r.err, "uiwarp-nfs: dir: NFS3ERR_NOTEMPTY "
			       "(Directory not empty)\n"));
	done(&r);

	RUN(&r, "rmdir", "dir/new");
	expect_ok(&r);
	done(&r);
	assert_null(fake_data("dir/new", &n, &type));

	RUN(&r, "rm", "dir/g");
	expect_ok(&r);
	done(&r);
	assert_null(fake_data("dir/g", &n, &type));

	RUN(&r, "ln", "-s", "../hello.txt", "dir/l");
	expect_ok(&r);
	done(&r);
	t = fake_target("dir/l");
	assert_non_null(t);
	assert_string_equal(t, "../hello.txt");
	free(t);

	RUN(&r, "readlink", "dir/l");
	expect_ok(&r);
	assert_string_equal(r.out, "../hello.txt\n");
	done(&r);
}

static void test_fs(void **state)
{
	struct run r;

	RUN(&r, "df");
	expect_ok(&r);
	assert_non_null(strstr(r.out, "tbytes=1073741824\nfbytes=536870912\n"
			       "abytes=268435456\n"));
	done(&r);

	RUN_O(&r, "--rsize=8m", "fsinfo");
	expect_ok(&r);
	assert_non_null(strstr(r.out, "rtmax=1048576\nrtpref=65536\n"));
	assert_non_null(strstr(r.out, "properties=0x1a (symlink,homogeneous,"
			       "cansettime)\n"));
	/* a size given is capped by the server's maximum */
	assert_non_null(strstr(r.out, "rsize=1048576\nwsize=65536\n"));
	done(&r);
}

static void test_auth(void **state)
{
	struct fake_counts c;
	struct run r;

	run_opts(&r, (const char *const[]){ "--uid", "1234", "--gid", "567",
		 NULL }, (const char *const[]){ "stat", "hello.txt", NULL });
	expect_ok(&r);
	done(&r);
	fake_counts(&c);
	assert_int_equal(c.last_flavor, AUTH_SYS);
	assert_int_equal(c.last_uid, 1234);
	assert_int_equal(c.last_gid, 567);
	assert_int_equal(c.mounts, 1);
	assert_int_equal(c.umounts, 1);

	RUN_O(&r, "--auth=none", "stat", "hello.txt");
	expect_ok(&r);
	done(&r);
	fake_counts(&c);
	assert_int_equal(c.last_flavor, AUTH_NONE);
}

/* ---- errors ------------------------------------------------------------ */

static void test_errors(void **state)
{
	struct run r;
	pid_t pid;

	RUN(&r, "stat", "nothere");
	assert_int_equal(r.status, 1);
	assert_string_equal(r.err, "uiwarp-nfs: nothere: NFS3ERR_NOENT "
			    "(No such file or directory)\n");
	done(&r);

	RUN(&r, "get", "dir");
	assert_int_equal(r.status, 1);
	assert_non_null(strstr(r.err, "NFS3ERR_ISDIR (Is a directory)"));
	done(&r);

	RUN(&r, "ls", "hello.txt/x");
	assert_int_equal(r.status, 1);
	assert_non_null(strstr(r.err, "NFS3ERR_NOTDIR (Not a directory)"));
	done(&r);

	/* RFC 1813 §2.6: NFS3ERR_JUKEBOX is waited out and the call sent
	 * again (here 3 times: 100 + 200 + 400 ms); one that lasts beyond
	 * the timeout stands */
	{
		struct fake_counts c0, c1;

		fake_counts(&c0);
		fake_jukebox_reads(3);
		RUN(&r, "get", "hello.txt");
		expect_ok(&r);
		assert_int_equal(r.outlen, 13);
		assert_memory_equal(r.out, "hello, world\n", 13);
		assert_true(r.secs >= 0.6);
		fake_counts(&c1);
		assert_int_equal(c1.reads - c0.reads, 4);
		done(&r);

		fake_jukebox_reads(1000);
		run_opts(&r, (const char *const[]){ "-T", "1", NULL },
			 (const char *const[]){ "get", "hello.txt", NULL });
		assert_int_equal(r.status, 1);
		assert_non_null(strstr(r.err, "NFS3ERR_JUKEBOX"));
		assert_true(r.secs < 5);
		done(&r);
		fake_jukebox_reads(0);
	}

	RUN(&r, "frobnicate");
	assert_int_equal(r.status, 2);
	done(&r);

	RUN(&r, "mv", "a");
	assert_int_equal(r.status, 2);
	done(&r);

	/* an export the server does not have */
	{
		const char *argv[] = { UIWARP_NFS, "-x", proto, "-p", "1",
				       "-m", NULL, "127.0.0.1:/nope", "ls",
				       NULL };
		char mport[8], ep[300];
		int st, fd;
		char *e;

		snprintf(mport, sizeof(mport), "%u", ports.tcp);
		argv[6] = mport;
		snprintf(ep, sizeof(ep), "%s/err", dir);
		pid = fork();
		if (pid == 0) {
			fd = open(ep, O_WRONLY | O_CREAT | O_TRUNC, 0644);
			dup2(fd, 2);
			execv(UIWARP_NFS, (char **)argv);
			_exit(127);
		}
		assert_int_equal(waitpid(pid, &st, 0), pid);
		assert_true(WIFEXITED(st));
		assert_int_equal(WEXITSTATUS(st), 1);
		e = slurp(ep, NULL);
		assert_string_equal(e, "uiwarp-nfs: 127.0.0.1:/nope: "
				    "MNT3ERR_NOENT (No such file or "
				    "directory)\n");
		free(e);
	}
}

/* The server stops answering READs: the tool ends with a transport
 * error within its --timeout (2 s), never hangs. */
static void test_silent_server(void **state)
{
	struct run r;

	fake_silent_reads_after(3);
	run_opts(&r, (const char *const[]){ "-T", "2", "-d", "1", NULL },
		 (const char *const[]){ "get", "big.bin", NULL });
	assert_int_equal(r.status, 3);
	assert_non_null(strstr(r.err, "uiwarp-nfs: big.bin: READ: "));
	if (!strstr(r.err, "RPC: Timed out"))
		fail_msg("stderr: %s", r.err);
	/* 2 s of calls, and the tool's own start and end */
	assert_true(r.secs < 6);
	done(&r);
}

/* SIGTERM while the server answers: the tool stops after the call in
 * flight, with 143 and no more data. */
static void test_sigterm_answering(void **state)
{
	struct run r;
	double t0 = now();
	pid_t pid;

	pid = spawn((const char *const[]){ "--rsize", "4096", "-d", "1",
		    NULL }, (const char *const[]){ "get", "big.bin", NULL });
	fake_signal_at_read(5, pid, SIGTERM);
	reap(pid, 20, &r, t0);
	assert_int_equal(r.status, 143);
	assert_true(r.outlen < BIG);
	assert_non_null(strstr(r.err, "SIGTERM"));
	done(&r);
}

/* SIGTERM while a READ goes unanswered: the end within the tool's 2 s
 * grace, all the same. */
static void test_sigterm_silent(void **state)
{
	struct pollfd p = { .fd = fake_read_fd(), .events = POLLIN };
	struct fake_counts c;
	struct run r;
	uint64_t v;
	double t0 = now(), tk;
	pid_t pid;

	while (read(p.fd, &v, sizeof(v)) > 0)
		;
	fake_silent_reads_after(1);
	pid = spawn((const char *const[]){ "-T", "30", "-d", "1", NULL },
		    (const char *const[]){ "get", "big.bin", NULL });
	/* the second READ (the unanswered one) has arrived */
	for (;;) {
		assert_int_equal(poll(&p, 1, 20000), 1);
		assert_true(read(p.fd, &v, sizeof(v)) > 0);
		fake_counts(&c);
		if (c.reads >= 2)
			break;
	}
	tk = now();
	kill(pid, SIGTERM);
	reap(pid, 20, &r, t0);
	assert_int_equal(r.status, 143);
	assert_true(now() - tk < 4);
	done(&r);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_get_stdout, setup),
		cmocka_unit_test_setup(test_get_file_small_rsize, setup),
		cmocka_unit_test_setup(test_put, setup),
		cmocka_unit_test_setup(test_put_sync, setup),
		cmocka_unit_test_setup(test_put_verifier_change, setup),
		cmocka_unit_test_setup(test_put_guarded, setup),
		cmocka_unit_test_setup(test_ls, setup),
		cmocka_unit_test_setup(test_stat, setup),
		cmocka_unit_test_setup(test_changes, setup),
		cmocka_unit_test_setup(test_fs, setup),
		cmocka_unit_test_setup(test_auth, setup),
		cmocka_unit_test_setup(test_errors, setup),
		cmocka_unit_test_setup(test_silent_server, setup),
		cmocka_unit_test_setup(test_sigterm_answering, setup),
		cmocka_unit_test_setup(test_sigterm_silent, setup),
	};
	int rc;

	proto = argc > 1 ? argv[1] : "rdma";
	if (strcmp(proto, "rdma") && strcmp(proto, "tcp")) {
		fprintf(stderr, "usage: %s rdma|tcp\n", argv[0]);
		return 2;
	}
	snprintf(dir, sizeof(dir), "/tmp/uiw-nfs-XXXXXX");
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	signal(SIGPIPE, SIG_IGN);
	if (!fake_start(&ports))
		return 1;
	rc = cmocka_run_group_tests_name(proto, tests, NULL, NULL);
	fake_stop();
	{
		char cmd[128];

		snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
		if (system(cmd) != 0)
			fprintf(stderr, "could not remove %s\n", dir);
	}
	return rc;
}
