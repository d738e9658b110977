/*
 * What the shape of MPA traffic costs a ping-pong over 127.0.0.1, with no
 * uiwarp code in the way: raw TCP against FPDU-framed messages, sent and
 * received the ways an MPA implementation can choose between.
 *
 * Two processes (a fork) play ping-pong with messages of one size.  The
 * patterns take turns in blocks of a few ping-pongs on the same
 * connection, so that a slow stretch of the machine (they last from
 * milliseconds to seconds on a virtual machine) falls on all of them
 * alike.  Patterns:
 *
 *   raw          send() and recv() of the whole message
 *   eor+fpdu     uiwarp's with align ON: one sendmsg per FPDU (sendmmsg,
 *                MSG_EOR, so that every FPDU starts a TCP segment, RFC
 *                5044 §5.1); one readv per FPDU (its payload, its pad
 *                and CRC, and the next FPDU's header)
 *   eor+bulk     the same sending; the receiver takes the stream in
 *                reads as large as the message
 *   one+fpdu     one sendmsg for all the FPDUs (TCP then cuts segments
 *                where it likes); one readv per FPDU
 *   one+bulk     one sendmsg; bulk reads
 *   first+fpdu   uiwarp's default to this host: the first FPDU as a
 *                message of its own, the others as one (one sendmmsg,
 *                MSG_EOR); one readv per FPDU
 *   mm+fpdu      one message per FPDU as eor+fpdu, but without MSG_EOR
 *                (the kernel may fill segments across FPDUs): tells the
 *                cost of a message per FPDU from that of the flag
 *
 * The framing is that of an untagged DDP segment by default: a 20-octet
 * header (ULPDU_Length and the DDP header), payload, pad, CRC.
 *
 * usage: wirepattern [size [header [payload-per-FPDU [rounds]]]]
 * (a benchmark: it prints medians and never fails for being slow)
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { RAW, EOR_FPDU, EOR_BULK, ONE_FPDU, ONE_BULK, MM_FPDU, FIRST_FPDU,
       NPAT };
static const char *const names[NPAT] = {
	"raw", "eor+fpdu", "eor+bulk", "one+fpdu", "one+bulk", "mm+fpdu",
	"first+fpdu",
};

#define BLOCK 10                /* ping-pongs per turn */
#define MAX_FPDUS 1024

static size_t msg_size, hlen = 20, plen = 64690;
static uint8_t hdr[64], trail[8], stage[64], *bulk;

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static double now_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static size_t pad_of(size_t p)
{
	return (4 - p % 4) % 4;
}

/* Stream octets of a message: its FPDUs, or the bare payload. */
static size_t stream_len(int pat)
{
	size_t off, n = 0;

	if (pat == RAW)
		return msg_size;
	for (off = 0; off < msg_size; off += plen) {
		size_t p = msg_size - off < plen ? msg_size - off : plen;

		n += hlen + p + pad_of(p) + 4;
	}
	return n;
}

/* Reads until the iovecs are full: non-blocking reads and a yield when
 * nothing is there, as a polling RNIC does. */
static void read_iov(int fd, struct iovec *v, int n)
{
	while (n > 0) {
		struct msghdr h = { .msg_iov = v, .msg_iovlen = (size_t)n };
		ssize_t r = recvmsg(fd, &h, MSG_DONTWAIT);

		if (r < 0 && (errno == EAGAIN || errno == EINTR)) {
			sched_yield();
			continue;
		}
		if (r <= 0)
			die("recvmsg");
		while (n > 0 && (size_t)r >= v->iov_len) {
			r -= (ssize_t)v->iov_len;
			v++;
			n--;
		}
		if (n > 0) {
			v->iov_base = (uint8_t *)v->iov_base + r;
			v->iov_len -= (size_t)r;
		}
	}
}

static void receive(int fd, int pat, uint8_t *buf)
{
	struct iovec v[4];
	size_t off;
	int k;

	if (pat == RAW || pat == EOR_BULK || pat == ONE_BULK) {
		v[0].iov_base = pat == RAW ? buf : bulk;
		v[0].iov_len = stream_len(pat);
		read_iov(fd, v, 1);
		return;
	}
	for (off = 0; off < msg_size; off += plen) {
		size_t p = msg_size - off < plen ? msg_size - off : plen;

		k = 0;
		if (off == 0) {         /* later headers came with the FPDU before */
			v[k].iov_base = hdr;
			v[k++].iov_len = hlen;
		}
		v[k].iov_base = buf + off;
		v[k++].iov_len = p;
		v[k].iov_base = trail;
		v[k++].iov_len = pad_of(p) + 4;
		if (off + p < msg_size) {
			v[k].iov_base = stage;
			v[k++].iov_len = hlen;
		}
		read_iov(fd, v, k);
	}
}

static void transmit(int fd, int pat, uint8_t *buf)
{
	static struct iovec v[3 * MAX_FPDUS];
	static struct mmsghdr mm[MAX_FPDUS];
	size_t off, done;
	int m = 0;

	if (pat == RAW) {
		for (done = 0; done < msg_size; ) {
			ssize_t r = send(fd, buf + done, msg_size - done, 0);

			if (r <= 0)
				die("send");
			done += (size_t)r;
		}
		return;
	}
	for (off = 0; off < msg_size; off += plen, m++) {
		size_t p = msg_size - off < plen ? msg_size - off : plen;

		memset(&mm[m], 0, sizeof(mm[m]));
		v[3 * m].iov_base = hdr;
		v[3 * m].iov_len = hlen;
		v[3 * m + 1].iov_base = buf + off;
		v[3 * m + 1].iov_len = p;
		v[3 * m + 2].iov_base = trail;
		v[3 * m + 2].iov_len = pad_of(p) + 4;
		mm[m].msg_hdr.msg_iov = &v[3 * m];
		mm[m].msg_hdr.msg_iovlen = 3;
	}
	if (pat == ONE_FPDU || pat == ONE_BULK) {
		struct msghdr h = { .msg_iov = v, .msg_iovlen = (size_t)(3 * m) };

		/* blocking socket: the kernel takes it all */
		if (sendmsg(fd, &h, 0) != (ssize_t)stream_len(pat))
			die("sendmsg");
		return;
	}
	if (pat == FIRST_FPDU && m > 1) {
		/* the first FPDU, then the others as one message */
		mm[1].msg_hdr.msg_iov = &v[3];
		mm[1].msg_hdr.msg_iovlen = (size_t)(3 * (m - 1));
		m = 2;
	}
	for (done = 0; done < (size_t)m; ) {
		int r = sendmmsg(fd, mm + done, (unsigned)(m - (int)done),
				 pat == MM_FPDU ? 0 : MSG_EOR);

		if (r <= 0)
			die("sendmmsg");
		done += (size_t)r;
	}
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t al = sizeof(a);
	int rounds, one = 1, l, fd, pat, r, i, status;
	double *lat[NPAT];
	uint8_t *buf;
	pid_t pid;

	msg_size = argc > 1 ? strtoul(argv[1], NULL, 0) : 524288;
	hlen = argc > 2 ? strtoul(argv[2], NULL, 0) : 20;
	plen = argc > 3 ? strtoul(argv[3], NULL, 0) : 64690;
	rounds = argc > 4 ? atoi(argv[4]) : 100;
	if (msg_size == 0 || msg_size > (64u << 20) || hlen < 2 ||
	    hlen > sizeof(hdr) || plen == 0 || plen > 65535 ||
	    (msg_size + plen - 1) / plen > MAX_FPDUS || rounds < 1) {
		fprintf(stderr, "usage: wirepattern [size [header [payload "
			"[rounds]]]]: size 1..64 MiB in at most %d FPDUs, "
			"header 2..%zu\n", MAX_FPDUS, sizeof(hdr));
		return 2;
	}
	buf = aligned_alloc(4096, (msg_size + 4095) / 4096 * 4096);
	bulk = aligned_alloc(4096, (stream_len(EOR_FPDU) + 4095) / 4096 * 4096);
	if (!buf || !bulk)
		die("aligned_alloc");
	memset(buf, 0x5a, msg_size);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	l = socket(AF_INET, SOCK_STREAM, 0);
	if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    listen(l, 1) < 0 || getsockname(l, (struct sockaddr *)&a, &al) < 0)
		die("listen");
	pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {                 /* the echo side */
		fd = accept(l, NULL, NULL);
		if (fd < 0)
			die("accept");
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		for (r = 0; r < rounds; r++)
			for (pat = 0; pat < NPAT; pat++)
				for (i = 0; i < BLOCK; i++) {
					receive(fd, pat, buf);
					transmit(fd, pat, buf);
				}
		_exit(0);
	}
	close(l);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0)
		die("connect");
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	for (pat = 0; pat < NPAT; pat++) {
		lat[pat] = calloc((size_t)rounds * BLOCK, sizeof(double));
		if (!lat[pat])
			die("calloc");
	}
	for (r = 0; r < rounds; r++)
		for (pat = 0; pat < NPAT; pat++)
			for (i = 0; i < BLOCK; i++) {
				double t0 = now_us();

				transmit(fd, pat, buf);
				receive(fd, pat, buf);
				lat[pat][r * BLOCK + i] = (now_us() - t0) / 2;
			}
	if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) ||
	    WEXITSTATUS(status) != 0) {
		fprintf(stderr, "wirepattern: the echo side failed\n");
		return 1;
	}
	printf("%zu octets a message, %zu-octet headers, FPDU payload %zu, "
	       "%d turns of %d ping-pongs\n\n", msg_size, hlen, plen, rounds,
	       BLOCK);
	printf("| pattern | median µs | p10 µs | vs raw |\n");
	printf("|---------|----------:|-------:|-------:|\n");
	for (pat = 0; pat < NPAT; pat++) {
		size_t n = (size_t)rounds * BLOCK;

		qsort(lat[pat], n, sizeof(double), cmp);
		printf("| %s | %.2f | %.2f | %.2f |\n", names[pat],
		       lat[pat][n / 2], lat[pat][n / 10],
		       lat[pat][n / 2] / lat[RAW][n / 2]);
	}
	return 0;
}
