/*
 * uiwarp-bw: throughput of RDMA Write and Send over uiwarp next to raw
 * TCP, measured in the same run on the same machine, over 127.0.0.1.
 *
 * Both ends live in this process, each on its own device (so each has
 * its own progress thread); the requester keeps `depth` work requests
 * outstanding for a fixed time.  The Send receiver is a thread that
 * reposts every receive as soon as it completes; the requester never
 * sends more messages than the receiver has buffers for.  The raw TCP
 * baseline is a writer thread and a reader thread on a connected pair of
 * sockets, writing and reading messages of the same size.
 *
 * Throughput is payload octets per second, in MB/s (10^6 octets), from
 * the first post to the moment the data is known to be at the sink: a
 * Read issued after the last Write completes (RFC 5040 §5.5: its
 * Response follows the Writes), the last receive completion, or EOF on
 * the TCP reader.  The data is checked at the end.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <uiwarp/uiwarp.h>
#include <uiwarp/cm.h>

#include "tool_conn.h"

#define MAX_SIZES 8

#define die uiw_tool_die
#define check uiw_tool_check
#define check_ptr uiw_tool_check_ptr
#define now_s uiw_tool_now
#define alloc_buf uiw_tool_alloc
#define fill uiw_tool_fill

/* ------------------------------------------------------------------ */
/* Options                                                            */

static double duration = 2.0;
static size_t sizes[MAX_SIZES] = { 65536, 1048576 };
static int nsizes = 2;
static int depth = 16;
static int do_tcp = 1, do_write = 1, do_send = 1;
static int verbose;
static enum uiw_opt opt_crc = UIW_OPT_DEFAULT;
static enum uiw_opt opt_markers = UIW_OPT_DEFAULT;

/* ------------------------------------------------------------------ */
/* Raw TCP                                                            */

struct tcp_writer {
	int fd;
	size_t size;
	double end;
	uint8_t *buf;
	uint64_t bytes;
};

static void *tcp_writer_main(void *arg)
{
	struct tcp_writer *w = arg;
	size_t off;
	ssize_t n;

	while (now_s() < w->end && !uiw_tool_stop_signal()) {
		for (off = 0; off < w->size; off += (size_t)n) {
			n = write(w->fd, w->buf + off, w->size - off);
			if (n < 0) {
				if (errno == EINTR) {
					n = 0;
					continue;
				}
				die("tcp write: %s", strerror(errno));
			}
		}
		w->bytes += w->size;
	}
	shutdown(w->fd, SHUT_WR);
	return NULL;
}

static double run_tcp(size_t size)
{
	struct sockaddr_in sin;
	socklen_t slen = sizeof(sin);
	struct tcp_writer w;
	pthread_t th;
	int lfd, cfd, sfd;
	uint8_t *rbuf;
	uint64_t got = 0;
	double start, stop;
	ssize_t n;

	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	lfd = socket(AF_INET, SOCK_STREAM, 0);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sin, sizeof(sin)) ||
	    listen(lfd, 1) ||
	    getsockname(lfd, (struct sockaddr *)&sin, &slen))
		die("tcp listen: %s", strerror(errno));
	cfd = socket(AF_INET, SOCK_STREAM, 0);
	if (cfd < 0 || connect(cfd, (struct sockaddr *)&sin, sizeof(sin)))
		die("tcp connect: %s", strerror(errno));
	sfd = accept(lfd, NULL, NULL);
	if (sfd < 0)
		die("tcp accept: %s", strerror(errno));
	close(lfd);

	memset(&w, 0, sizeof(w));
	w.fd = cfd;
	w.size = size;
	w.buf = alloc_buf(size);
	fill(w.buf, size, 7);
	rbuf = alloc_buf(size);
	start = now_s();
	w.end = start + duration;
	if (pthread_create(&th, NULL, tcp_writer_main, &w))
		die("pthread_create");
	for (;;) {
		n = read(sfd, rbuf, size);
		if (n == 0)
			break;
		if (n < 0) {
			if (errno == EINTR)
				continue;
			die("tcp read: %s", strerror(errno));
		}
		got += (uint64_t)n;
	}
	stop = now_s();
	pthread_join(th, NULL);
	if (got != w.bytes)
		die("tcp: read %" PRIu64 " octets, wrote %" PRIu64, got,
		    w.bytes);
	close(cfd);
	close(sfd);
	free(w.buf);
	free(rbuf);
	return (double)got / (stop - start) / 1e6;
}

/* ------------------------------------------------------------------ */
/* uiwarp connection                                                  */

static struct uiw_tool_end cli, srv;
static struct uiw_tool_listener listener;
static size_t max_size;
static struct uiw_qp_attr conn_attr;   /* of the last connection */

static void check_wc(const struct uiw_wc *wc);
static void post(struct uiw_tool_end *e, uint64_t id, enum uiw_wr_opcode op,
		 size_t off, size_t len, uint64_t raddr, uint32_t rkey);

static void end_init(struct uiw_tool_end *e, const char *name, size_t len)
{
	struct uiw_tool_end_cfg cfg = {
		.dev = uiw_tool_check_ptr(uiw_device_open(NULL),
					  "uiw_device_open"),
		.cqe = 8 * depth + 16,
		.cap = {
			.max_send_wr = (uint32_t)depth + 2,
			.max_recv_wr = 2 * (uint32_t)depth + 2,
			.max_send_sge = 1,
			.max_recv_sge = 1,
		},
		.buf_len = len,
		.access = UIW_TOOL_ACC_RW,
		.channel = 1,
	};

	uiw_tool_end_init(e, name, &cfg);
}

static void rdma_setup(void)
{
	struct uiw_conn_param p;
	struct uiw_wc wc;

	/* requester: depth source slots; responder: 2 * depth slots */
	end_init(&cli, "client", (size_t)depth * max_size);
	end_init(&srv, "server", 2 * (size_t)depth * max_size);
	uiw_tool_listen(&listener, srv.dev, AF_INET, 0, 1);
	memset(&p, 0, sizeof(p));
	p.crc = opt_crc;
	p.markers = opt_markers;
	uiw_tool_connect_pair(&cli, &srv, &listener, &p);
	conn_attr = cli.attr;
	/* RFC 5044 §7.1.2: the responder sends nothing before the
	 * initiator's first FPDU; send one so both sides may start. */
	uiw_tool_post_recv(&srv, 1u << 31, 0, 0);
	post(&cli, 1u << 31, UIW_WR_SEND, 0, 0, 0, 0);
	uiw_tool_get_wcs(cli.cq, &wc, 1, -1, "client");
	check_wc(&wc);
	uiw_tool_get_wcs(srv.cq, &wc, 1, -1, "server");
	check_wc(&wc);
}

static void rdma_teardown(void)
{
	struct uiw_device *cdev = cli.dev, *sdev = srv.dev;

	uiw_tool_disconnect_pair(&cli, &listener);
	uiw_tool_end_free(&cli);
	uiw_tool_end_free(&srv);
	uiw_tool_listen_close(&listener);
	check(uiw_device_close(cdev), "uiw_device_close");
	check(uiw_device_close(sdev), "uiw_device_close");
}

static void check_wc(const struct uiw_wc *wc)
{
	if (wc->status != UIW_WC_SUCCESS)
		die("work request %" PRIu64 " failed: %s", wc->wr_id,
		    uiw_wc_status_str(wc->status));
}

static void post(struct uiw_tool_end *e, uint64_t id, enum uiw_wr_opcode op,
		 size_t off, size_t len, uint64_t raddr, uint32_t rkey)
{
	struct uiw_sge sge = {
		.addr = (uint64_t)(uintptr_t)(e->buf + off),
		.length = (uint32_t)len,
		.lkey = e->mr->lkey,
	};
	struct uiw_send_wr wr;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = id;
	wr.opcode = op;
	wr.send_flags = UIW_SEND_SIGNALED;
	wr.sg_list = len ? &sge : NULL;
	wr.num_sge = len ? 1 : 0;
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	check(uiw_post_send(e->qp, &wr, NULL), "uiw_post_send");
}

static void fill_slots(struct uiw_tool_end *e, size_t size, int n, uint32_t seed)
{
	int i;

	for (i = 0; i < n; i++)
		fill(e->buf + (size_t)i * size, size, seed);
}

static void check_slots(const struct uiw_tool_end *e, size_t size, int n,
			const struct uiw_tool_end *ref, const char *what)
{
	int i;

	for (i = 0; i < n; i++)
		if (memcmp(e->buf + (size_t)i * size, ref->buf, size))
			die("%s: data at the sink differs (slot %d)", what, i);
}

static double run_write(size_t size)
{
	struct uiw_wc wc[64];
	uint64_t done = 0;
	double start, stop, end;
	int outstanding = 0, i, n;

	rdma_setup();
	fill_slots(&cli, size, depth, 11);
	start = now_s();
	end = start + duration;
	for (i = 0; i < depth; i++, outstanding++)
		post(&cli, (uint64_t)i, UIW_WR_RDMA_WRITE, (size_t)i * size,
		     size, (uint64_t)(uintptr_t)(srv.buf + (size_t)i * size),
		     srv.mr->rkey);
	while (outstanding > 0) {
		n = uiw_tool_get_wcs(cli.cq, wc, 64, -1, "client");
		for (i = 0; i < n; i++) {
			check_wc(&wc[i]);
			outstanding--;
			done++;
			if (now_s() < end && !uiw_tool_stop_signal()) {
				size_t slot = (size_t)wc[i].wr_id * size;

				post(&cli, wc[i].wr_id, UIW_WR_RDMA_WRITE, slot,
				     size, (uint64_t)(uintptr_t)(srv.buf + slot),
				     srv.mr->rkey);
				outstanding++;
			}
		}
	}
	/* A Read after the Writes: its Response means they were placed. */
	post(&cli, 1u << 30, UIW_WR_RDMA_READ, 0, 4,
	     (uint64_t)(uintptr_t)srv.buf, srv.mr->rkey);
	n = uiw_tool_get_wcs(cli.cq, wc, 1, -1, "client");
	check_wc(&wc[0]);
	stop = now_s();
	check_slots(&srv, size, depth, &cli, "RDMA Write");
	rdma_teardown();
	return (double)done * (double)size / (stop - start) / 1e6;
}

/* The Send receiver thread. */
struct receiver {
	size_t size;
	int nbuf;
	atomic_uint_fast64_t reposted;  /* receives posted again */
	atomic_int waiting;             /* requester waits for credit */
	atomic_int stop;                /* requester is done ... */
	atomic_uint_fast64_t total;     /* ... after this many messages */
	uint64_t received;
	double last;
	int credit_fd;                  /* receiver -> requester */
	int stop_fd;                    /* requester -> receiver */
};

static void *receiver_main(void *arg)
{
	struct receiver *r = arg;
	struct uiw_wc wc[64];
	uint64_t one = 1;
	int i, n;

	for (;;) {
		if (atomic_load(&r->stop) &&
		    r->received == atomic_load(&r->total))
			break;
		n = uiw_tool_get_wcs(srv.cq, wc, 64, r->stop_fd, "server");
		if (n == 0) {
			/* woken by the requester: it has finished */
			uint64_t v;

			if (read(r->stop_fd, &v, sizeof(v)) < 0 &&
			    errno != EAGAIN)
				die("eventfd read: %s", strerror(errno));
			continue;
		}
		for (i = 0; i < n; i++) {
			check_wc(&wc[i]);
			if (wc[i].byte_len != r->size)
				die("received %u octets, expected %zu",
				    wc[i].byte_len, r->size);
			r->received++;
		}
		r->last = now_s();
		for (i = 0; i < n; i++)
			uiw_tool_post_recv(&srv, wc[i].wr_id,
				  (size_t)wc[i].wr_id * r->size, r->size);
		atomic_fetch_add(&r->reposted, (uint64_t)n);
		if (atomic_load(&r->waiting) &&
		    write(r->credit_fd, &one, sizeof(one)) < 0)
			die("eventfd write: %s", strerror(errno));
	}
	return NULL;
}

static double run_send(size_t size)
{
	struct receiver r;
	struct uiw_wc wc[64];
	pthread_t th;
	uint64_t sent = 0, one = 1;
	double start, end;
	int outstanding = 0, i, n, slot = 0;

	memset(&r, 0, sizeof(r));
	r.size = size;
	r.nbuf = 2 * depth;
	r.credit_fd = eventfd(0, EFD_NONBLOCK);
	r.stop_fd = eventfd(0, EFD_NONBLOCK);
	if (r.credit_fd < 0 || r.stop_fd < 0)
		die("eventfd: %s", strerror(errno));
	rdma_setup();
	fill_slots(&cli, size, depth, 13);
	for (i = 0; i < r.nbuf; i++)
		uiw_tool_post_recv(&srv, (uint64_t)i, (size_t)i * size, size);
	if (pthread_create(&th, NULL, receiver_main, &r))
		die("pthread_create");
	start = now_s();
	end = start + duration;
	for (;;) {
		int more = now_s() < end && !uiw_tool_stop_signal();

		/* RFC 5040 §5.3: a Send without a posted receive ends the
		 * stream, so never have more in flight than buffers. */
		while (more && outstanding < depth &&
		       sent < (uint64_t)r.nbuf + atomic_load(&r.reposted)) {
			post(&cli, (uint64_t)slot, UIW_WR_SEND,
			     (size_t)slot * size, size, 0, 0);
			slot = (slot + 1) % depth;
			outstanding++;
			sent++;
		}
		if (!more && outstanding == 0)
			break;
		atomic_store(&r.waiting, 1);
		/* Credits may have arrived while the flag was clear. */
		if (more && outstanding < depth &&
		    sent < (uint64_t)r.nbuf + atomic_load(&r.reposted)) {
			atomic_store(&r.waiting, 0);
			continue;
		}
		n = uiw_tool_get_wcs(cli.cq, wc, 64,
				     outstanding ? -1 : r.credit_fd, "client");
		atomic_store(&r.waiting, 0);
		if (n == 0) {
			uint64_t v;

			if (read(r.credit_fd, &v, sizeof(v)) < 0 &&
			    errno != EAGAIN)
				die("eventfd read: %s", strerror(errno));
		}
		for (i = 0; i < n; i++) {
			check_wc(&wc[i]);
			outstanding--;
		}
	}
	atomic_store(&r.total, sent);
	atomic_store(&r.stop, 1);
	if (write(r.stop_fd, &one, sizeof(one)) < 0)
		die("eventfd write: %s", strerror(errno));
	pthread_join(th, NULL);
	close(r.credit_fd);
	close(r.stop_fd);
	check_slots(&srv, size, (int)(sent < (uint64_t)r.nbuf ? sent :
				       (uint64_t)r.nbuf), &cli, "Send");
	rdma_teardown();
	return (double)sent * (double)size / (r.last - start) / 1e6;
}

/* ------------------------------------------------------------------ */

static void usage(void) __attribute__((noreturn));
static void usage(void)
{
	fprintf(stderr,
		"usage: uiwarp-bw [-t seconds] [-s size,...] [-d depth] "
		"[-o tcp,write,send] [-c on|off] [-m on|off] [-v]\n"
		"  -t  seconds per measurement (default 2)\n"
		"  -s  message sizes, suffixes k and m (default 64k,1m)\n"
		"  -d  work requests outstanding (default 16)\n"
		"  -o  what to measure (default tcp,write,send)\n"
		"  -c  MPA CRC (default: the library's, on)\n"
		"  -m  MPA markers in both directions (default off)\n"
		"  -v  say on stderr what is being measured\n"
		"A signal (SIGINT, SIGTERM) ends the measurement under way "
		"early and\nthe program without figures.\n");
	exit(2);
}

/* -v: a line before each measurement (a test waits for it). */
static void say_measuring(const char *test, size_t size)
{
	if (verbose)
		fprintf(stderr, "uiwarp-bw: measuring %s at %zu octets for "
			"%.1f s\n", test, size, duration);
}

int main(int argc, char **argv)
{
	double tcp[MAX_SIZES] = { 0 }, wr[MAX_SIZES], sd[MAX_SIZES];
	char *tok, *save = NULL;
	int opt, i;

	uiw_tool_name = "uiwarp-bw";
	while ((opt = getopt(argc, argv, "t:s:d:o:c:m:vh")) != -1) {
		switch (opt) {
		case 't':
			duration = uiw_tool_arg_secs(optarg, 3600, "-t");
			break;
		case 's':
			nsizes = 0;
			for (tok = strtok_r(optarg, ",", &save); tok;
			     tok = strtok_r(NULL, ",", &save)) {
				if (nsizes == MAX_SIZES)
					usage();
				sizes[nsizes++] = uiw_tool_arg_size(tok, 1,
							64u << 20, "size");
			}
			if (!nsizes)
				usage();
			break;
		case 'd':
			depth = (int)uiw_tool_arg_long(optarg, 1, 1024, "depth");
			break;
		case 'o':
			do_tcp = do_write = do_send = 0;
			for (tok = strtok_r(optarg, ",", &save); tok;
			     tok = strtok_r(NULL, ",", &save)) {
				if (!strcmp(tok, "tcp"))
					do_tcp = 1;
				else if (!strcmp(tok, "write"))
					do_write = 1;
				else if (!strcmp(tok, "send"))
					do_send = 1;
				else
					usage();
			}
			break;
		case 'c':
			opt_crc = uiw_tool_arg_onoff(optarg, "-c");
			break;
		case 'm':
			opt_markers = uiw_tool_arg_onoff(optarg, "-m");
			break;
		case 'v':
			verbose = 1;
			break;
		default:
			usage();
		}
	}
	max_size = 0;
	for (i = 0; i < nsizes; i++)
		if (sizes[i] > max_size)
			max_size = sizes[i];

	/* Before the devices start their threads: they inherit the mask. */
	uiw_tool_signals_init(NULL);
	for (i = 0; i < nsizes; i++) {
		if (do_tcp) {
			say_measuring("tcp", sizes[i]);
			tcp[i] = run_tcp(sizes[i]);
			uiw_tool_exit_if_stopped();
		}
		if (do_write) {
			say_measuring("rdma_write", sizes[i]);
			wr[i] = run_write(sizes[i]);
			uiw_tool_exit_if_stopped();
		}
		if (do_send) {
			say_measuring("send", sizes[i]);
			sd[i] = run_send(sizes[i]);
			uiw_tool_exit_if_stopped();
		}
	}

	printf("uiwarp-bw: 127.0.0.1, %.1f s per test, depth %d", duration,
	       depth);
	if (do_write || do_send)
		printf(", CRC %s, markers %s, MULPDU %u", conn_attr.crc ?
		       "on" : "off", conn_attr.markers_tx ? "on" : "off",
		       conn_attr.mulpdu);
	printf("\n\n| test | message size | depth | MB/s | vs TCP |\n");
	printf("|------|-------------:|------:|-----:|-------:|\n");
	for (i = 0; i < nsizes; i++) {
		if (do_tcp)
			printf("| tcp | %zu | - | %.1f | 1.00 |\n", sizes[i],
			       tcp[i]);
		if (do_write) {
			printf("| rdma_write | %zu | %d | %.1f | ", sizes[i],
			       depth, wr[i]);
			if (do_tcp)
				printf("%.2f |\n", wr[i] / tcp[i]);
			else
				printf("- |\n");
		}
		if (do_send) {
			printf("| send | %zu | %d | %.1f | ", sizes[i], depth,
			       sd[i]);
			if (do_tcp)
				printf("%.2f |\n", sd[i] / tcp[i]);
			else
				printf("- |\n");
		}
	}
	return 0;
}
