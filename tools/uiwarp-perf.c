/*
 * uiwarp-perf: bandwidth, message rate and latency of uiwarp, perftest
 * style, next to raw TCP measured in the same invocation.
 *
 * Roles.  `-s` serves one client and exits; `-c HOST` is the client, which
 * drives every measurement; `--loopback` runs both in this process (the
 * server on a thread), each on its own device, over 127.0.0.1 (or ::1
 * with -6).  The two meet on a TCP control connection (port -p, 18515 by
 * default, as perftest's); the server then listens for the uiwarp QPs and
 * for raw TCP data connections on ephemeral ports of the address the
 * client reached, and tells the client which.
 *
 * Control records (fixed 128 octets, integers big-endian):
 *   HELLO   c->s  the parameters, the client's buffer (address, STag)
 *   WELCOME s->c  ports (over SCTP over UDP also the UDP port its
 *                 listener receives on), the server's buffer; or ERROR
 *                 with a message
 *   RUN     c->s  one measurement: uiwarp test (or raw TCP) and size
 *   CREDIT  s->c  receives the server has posted on a QP, in all (a Send
 *                 or Write with Immediate without a posted receive ends
 *                 the stream, RFC 5040 §5.3 and RFC 7306 §6.3: the client
 *                 never has more in flight than the server has posted)
 *   READY   s->c  the server is set up for the RUN
 *   DONE    c->s  the client has finished; how many operations
 *   RESULT  s->c  what the server saw (verification, octets)
 *   BYE     c->s, s->c  the end
 *
 * Buffers.  Each side registers one region: per QP, a target area that
 * the peer writes into (and local receives land in) and a source area
 * that the peer reads from (and local Sends/Writes take data from), each
 * `nslots` slots of `stride` octets.  Work request j uses slot j % nslots.
 *
 * Measurements.
 *   --bw, --rate  `depth` operations outstanding per QP (Reads and
 *           atomics: at most the negotiated ORD), for -D seconds or -n
 *           operations per QP.  Write: timed until a 1-octet Read that
 *           follows the Writes completes (RFC 5040 §5.5: its Response
 *           comes after them); Send and Write with Immediate: until the
 *           server reports that every message arrived (before it checks
 *           the data); Read and atomics:
 *           until the last completion.  Data verified at the end (--bw
 *           and --rate; --no-verify skips): every slot the run used holds
 *           the pattern of the run; every atomic returns the value that
 *           its place in the sequence implies.
 *   --lat   ping-pong, one operation at a time on one QP.  Write: as
 *           perftest's ib_write_lat, each side polls the last octet of
 *           its target slot for the peer's Write, then answers; Send and
 *           Write with Immediate: the receive completion; Read and
 *           atomics: the client's completion (the server is passive).
 *           Reported: half the round trip, min/avg/median/p99 in µs.
 * Raw TCP (--tcp), in the same run as each uiwarp measurement at the
 * same size: bw and rate stream messages of the size (one write() each)
 * from the client's source slots of the uiwarp run, in turn, into the
 * server's target slots (so both touch the same memory; under 64 KiB
 * into one buffer, 64 KiB per read), and with -D of at least 0.2 s the
 * two take turns (up to four each);
 * lat ping-pongs messages of the size, and with a count of ping-pongs
 * (-n) of at least eight warm-ups the two take turns (up to ten each,
 * every turn's warm-up left out).  Each raw TCP turn is a fresh
 * connection.  A slow stretch of the machine then falls on both.
 *
 * Completion (--poll / --event): --poll puts the CQ in the library's
 * poll mode, where uiw_cq_poll receives on the calling thread (for bw
 * and rate the client also defers its posts to the next poll, which
 * sends them together: UIW_CQ_POLL_DEFER_SEND), and spins
 * on uiw_cq_poll (yielding the CPU to other runnable threads after each
 * empty poll: on a machine with few CPUs the progress threads must run);
 * before sleeping on the control connection it arms the CQ, which hands
 * receiving back to the progress thread.  --event arms the CQ and sleeps
 * on its fd.  The Write ping-pong always polls memory, as perftest does.
 * For raw TCP, --poll makes the ping-pong spin on non-blocking recv().
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/utsname.h>
#include <unistd.h>
#include "tool_conn.h"

#define die uiw_tool_die
#define check uiw_tool_check
#define check_ptr uiw_tool_check_ptr
#define now_s uiw_tool_now
#define bad uiw_tool_bad_usage
#define parse_int uiw_tool_arg_long

#define DEFAULT_PORT 18515
#define MAX_SIZE (16u * 1024 * 1024)
#define MAX_SIZES 32
#define MAX_QPS 64
#define MAX_REPEAT 15
#define MAX_DEPTH 1024
#define BUF_CAP ((size_t)256 * 1024 * 1024)  /* per side */
#define MAGIC 0x75697066u                     /* "uipf" */
#define VERSION 2
#define REC_LEN 128
#define TIMEOUT_S 30.0
#define LAT_STOP 0xff                         /* last octet: final ping */
#define LAT_TURNS 10          /* --lat --tcp: turns of each per run */
#define BW_TURNS 4            /* bw, rate with --tcp: turns of each */
#define BW_TURN_MIN 0.1       /* seconds, at least, per turn */

enum test { T_WRITE, T_READ, T_SEND, T_WRITE_IMM, T_FETCH_ADD, T_CMP_SWAP,
	    NTESTS };
static const char *const test_names[NTESTS] = {
	"write", "read", "send", "write_imm", "fetch_add", "cmp_swap",
};
enum mode { M_BW, M_LAT, M_RATE };
static const char *const mode_names[] = { "bw", "lat", "rate" };

enum rec_type { R_HELLO = 1, R_WELCOME, R_ERROR, R_RUN, R_READY, R_CREDIT,
		R_DONE, R_RESULT, R_BYE, R_ARRIVED };
#define RUN_TCP 0xffu                         /* RUN: raw TCP, not a test */

static bool is_atomic(int t)
{
	return t == T_FETCH_ADD || t == T_CMP_SWAP;
}

/* Tests whose messages consume a receive at the peer. */
static bool uses_recv(int t)
{
	return t == T_SEND || t == T_WRITE_IMM;
}

/* ------------------------------------------------------------------ */
/* Options                                                            */

struct opts {
	int role;                 /* 's', 'c', 'l' */
	const char *host;
	const char *bind;
	unsigned port;
	int family;               /* loopback: AF_INET or AF_INET6 */
	unsigned tests;           /* 1 << enum test */
	int mode;
	size_t sizes[MAX_SIZES];
	int nsizes;
	int nqp, depth;
	int crc, markers, align;  /* enum uiw_opt */
	int llp;                  /* enum uiw_llp_kind */
	unsigned udp_port;        /* SCTP over UDP (RFC 6951): the client's
				   * peer, the server's own; 0: default */
	int event;
	double duration;          /* 0: iterations */
	uint64_t iters;
	uint64_t warmup;          /* lat: first samples left out */
	int repeat;               /* runs per figure, the median kept */
	int tcp, verify;
	int out;                  /* 't' table, 'c' csv, 'j' json */
};

static struct opts o = {
	.port = DEFAULT_PORT, .family = AF_INET, .mode = M_BW, .nqp = 1,
	.crc = UIW_OPT_DEFAULT, .markers = UIW_OPT_DEFAULT, .event = 1,
	.verify = 1, .out = 't', .warmup = 100, .repeat = 1,
};

/* ------------------------------------------------------------------ */
/* Control connection                                                 */

struct rec {
	uint32_t type;
	uint32_t a;
	uint64_t v[6];
	char text[72];
};

struct ctl {
	int fd;
	uint8_t in[REC_LEN * 16];
	size_t have;
	const char *peer;         /* "server" or "client", for messages */
};

static void put32(uint8_t *p, uint32_t v)
{
	v = htonl(v);
	memcpy(p, &v, 4);
}

static uint32_t get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return ntohl(v);
}

static void put64(uint8_t *p, uint64_t v)
{
	put32(p, (uint32_t)(v >> 32));
	put32(p + 4, (uint32_t)v);
}

static uint64_t get64(const uint8_t *p)
{
	return (uint64_t)get32(p) << 32 | get32(p + 4);
}

static void write_all(int fd, const void *buf, size_t len, const char *what)
{
	const uint8_t *p = buf;
	ssize_t n;

	while (len) {
		n = send(fd, p, len, MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			die("%s: send: %s", what, strerror(errno));
		}
		p += n;
		len -= (size_t)n;
	}
}

static void ctl_send(struct ctl *c, uint32_t type, uint32_t a,
		     const uint64_t *v, int nv, const char *text)
{
	uint8_t b[REC_LEN];
	int i;

	memset(b, 0, sizeof(b));
	put32(b, type);
	put32(b + 4, a);
	for (i = 0; i < nv && i < 6; i++)
		put64(b + 8 + 8 * i, v[i]);
	if (text)
		snprintf((char *)b + 56, 72, "%s", text);
	write_all(c->fd, b, sizeof(b), "control connection");
}

static void ctl_send1(struct ctl *c, uint32_t type, uint32_t a, uint64_t v0)
{
	ctl_send(c, type, a, &v0, 1, NULL);
}

/* Takes the next record: 1, or 0 when !block and none is complete. */
static int ctl_recv(struct ctl *c, struct rec *r, bool block)
{
	ssize_t n;
	int i;

	while (c->have < REC_LEN) {
		n = recv(c->fd, c->in + c->have, sizeof(c->in) - c->have,
			 block ? 0 : MSG_DONTWAIT);
		if (n == 0)
			die("the %s closed the control connection", c->peer);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (!block && (errno == EAGAIN || errno == EWOULDBLOCK))
				return 0;
			die("control connection: %s", strerror(errno));
		}
		c->have += (size_t)n;
	}
	r->type = get32(c->in);
	r->a = get32(c->in + 4);
	for (i = 0; i < 6; i++)
		r->v[i] = get64(c->in + 8 + 8 * i);
	memcpy(r->text, c->in + 56, 72);
	r->text[71] = 0;
	c->have -= REC_LEN;
	memmove(c->in, c->in + REC_LEN, c->have);
	if (r->type == R_ERROR)
		die("the %s reports: %s", c->peer, r->text);
	return 1;
}

static void set_nodelay(int fd)
{
	int one = 1;

	if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)))
		die("TCP_NODELAY: %s", strerror(errno));
}

/* A TCP socket listening on ss (port as given; 0: any). */
static int tcp_listen(struct sockaddr_storage *ss, socklen_t len, int backlog)
{
	int fd = socket(ss->ss_family, SOCK_STREAM, 0), one = 1;

	if (fd < 0)
		die("socket: %s", strerror(errno));
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)ss, len) < 0) {
		char host[NI_MAXHOST] = "?", serv[NI_MAXSERV] = "?";

		getnameinfo((struct sockaddr *)ss, len, host, sizeof(host),
			    serv, sizeof(serv), NI_NUMERICHOST | NI_NUMERICSERV);
		die("cannot listen on %s port %s: %s", host, serv,
		    strerror(errno));
	}
	if (listen(fd, backlog) < 0)
		die("listen: %s", strerror(errno));
	return fd;
}

static uint16_t sock_port(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	if (getsockname(fd, (struct sockaddr *)&ss, &len))
		die("getsockname: %s", strerror(errno));
	return ntohs(ss.ss_family == AF_INET6 ?
		     ((struct sockaddr_in6 *)&ss)->sin6_port :
		     ((struct sockaddr_in *)&ss)->sin_port);
}

static void set_port(struct sockaddr_storage *ss, unsigned port)
{
	if (ss->ss_family == AF_INET6)
		((struct sockaddr_in6 *)ss)->sin6_port = htons((uint16_t)port);
	else
		((struct sockaddr_in *)ss)->sin_port = htons((uint16_t)port);
}

static socklen_t ss_len(const struct sockaddr_storage *ss)
{
	return ss->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6)
					 : sizeof(struct sockaddr_in);
}

static int tcp_connect(struct sockaddr_storage *ss, const char *what)
{
	int fd = socket(ss->ss_family, SOCK_STREAM, 0);

	if (fd < 0)
		die("socket: %s", strerror(errno));
	if (connect(fd, (struct sockaddr *)ss, ss_len(ss)) < 0) {
		char host[NI_MAXHOST] = "?", serv[NI_MAXSERV] = "?";

		getnameinfo((struct sockaddr *)ss, ss_len(ss), host,
			    sizeof(host), serv, sizeof(serv),
			    NI_NUMERICHOST | NI_NUMERICSERV);
		die("cannot connect to %s port %s (%s): %s%s", host, serv, what,
		    strerror(errno), errno == ECONNREFUSED ?
		    " (is `uiwarp-perf -s` running there?)" : "");
	}
	set_nodelay(fd);
	return fd;
}

/* ------------------------------------------------------------------ */
/* A side: device, CQ, QPs, one registered buffer                     */

struct qp_state {
	struct uiw_tool_end e;
	uint64_t rq_posted;       /* receives posted, in all */
	uint64_t rq_done;         /* receives completed, in all */
	uint64_t peer_posted;     /* client: the server's receives (CREDIT) */
	uint64_t sent;            /* client: messages that use a receive */
	int ord;
};

struct side {
	const char *name;
	struct uiw_device *dev;
	struct uiw_pd *pd;
	struct uiw_cq *cq;
	uint8_t *buf;
	size_t buf_len;
	struct uiw_mr *mr;
	struct qp_state qp[MAX_QPS];
	int nqp, depth, nslots, event;
	bool recv_slot0;          /* lat: every receive in slot 0 */
	size_t stride;
	/* the peer's region */
	uint64_t raddr;
	uint32_t rkey;
	struct ctl ctl;
};

static size_t region_len(const struct side *s)
{
	return 2 * (size_t)s->nslots * s->stride;
}

static uint8_t *target(struct side *s, int q, uint64_t slot)
{
	return s->buf + (size_t)q * region_len(s) +
	       (size_t)(slot % (uint64_t)s->nslots) * s->stride;
}

static uint8_t *source(struct side *s, int q, uint64_t slot)
{
	return target(s, q, slot) + (size_t)s->nslots * s->stride;
}

static uint64_t rtarget(const struct side *s, int q, uint64_t slot)
{
	return s->raddr + (uint64_t)q * region_len(s) +
	       (slot % (uint64_t)s->nslots) * s->stride;
}

static uint64_t rsource(const struct side *s, int q, uint64_t slot)
{
	return rtarget(s, q, slot) + (uint64_t)s->nslots * s->stride;
}

/* The layout both sides compute from the options. */
static void layout(int nqp, int depth, size_t max_size, size_t *stride,
		   int *nslots)
{
	size_t st = max_size < 4096 ? (max_size + 63) / 64 * 64
				    : (max_size + 4095) / 4096 * 4096;
	size_t cap = BUF_CAP / (2 * (size_t)nqp * st);

	if (st < 64)
		st = 64;
	*stride = st;
	*nslots = (size_t)depth < cap ? depth : cap ? (int)cap : 1;
}

static void side_init(struct side *s, const char *name, int nqp, int depth,
		      size_t stride, int nslots, int event, int defer)
{
	struct uiw_tool_end_cfg cfg;
	int q;

	s->name = name;
	s->nqp = nqp;
	s->depth = depth;
	s->stride = stride;
	s->nslots = nslots;
	s->event = event;
	s->dev = check_ptr(uiw_device_open(NULL), "uiw_device_open");
	s->pd = check_ptr(uiw_pd_alloc(s->dev), "uiw_pd_alloc");
	s->cq = check_ptr(uiw_cq_create(s->dev, nqp * (4 * depth + 32) + 64),
			  "uiw_cq_create");
	if (!event)
		check(uiw_cq_set_poll_mode(s->cq, UIW_CQ_POLL |
					   (defer ? UIW_CQ_POLL_DEFER_SEND : 0)),
		      "uiw_cq_set_poll_mode");
	s->buf_len = (size_t)nqp * region_len(s);
	s->buf = uiw_tool_alloc(s->buf_len);
	s->mr = check_ptr(uiw_reg_mr(s->pd, s->buf, s->buf_len,
				     UIW_TOOL_ACC_ALL), "uiw_reg_mr");
	memset(&cfg, 0, sizeof(cfg));
	cfg.dev = s->dev;
	cfg.pd = s->pd;
	cfg.cq = s->cq;
	cfg.cap.max_send_wr = (uint32_t)depth + 8;
	cfg.cap.max_recv_wr = 2 * (uint32_t)depth + 8;
	cfg.cap.max_send_sge = 1;
	cfg.cap.max_recv_sge = 1;
	for (q = 0; q < nqp; q++)
		uiw_tool_end_init(&s->qp[q].e, name, &cfg);
}

static void side_free(struct side *s)
{
	int q;

	for (q = 0; q < s->nqp; q++)
		uiw_tool_end_free(&s->qp[q].e);
	check(uiw_dereg_mr(s->mr), "uiw_dereg_mr");
	check(uiw_cq_destroy(s->cq), "uiw_cq_destroy");
	check(uiw_pd_free(s->pd), "uiw_pd_free");
	check(uiw_device_close(s->dev), "uiw_device_close");
	free(s->buf);
}

/* wr_id: QP index in the top 16 bits, sequence number below. */
static uint64_t wrid(int q, uint64_t seq)
{
	return (uint64_t)q << 48 | (seq & ((1ull << 48) - 1));
}

static int wrid_qp(uint64_t id)
{
	return (int)(id >> 48);
}

static uint64_t wrid_seq(uint64_t id)
{
	return id & ((1ull << 48) - 1);
}

static void post_op(struct side *s, int q, int t, uint64_t seq, size_t size,
		    uint64_t imm)
{
	struct uiw_sge sge = { .lkey = s->mr->lkey };
	struct uiw_send_wr wr;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wrid(q, seq);
	wr.send_flags = UIW_SEND_SIGNALED;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	sge.length = (uint32_t)size;
	switch (t) {
	case T_WRITE:
	case T_WRITE_IMM:
		wr.opcode = t == T_WRITE ? UIW_WR_RDMA_WRITE
					 : UIW_WR_RDMA_WRITE_WITH_IMM;
		wr.imm_data = imm;
		sge.addr = (uintptr_t)source(s, q, seq);
		wr.wr.rdma.remote_addr = rtarget(s, q, seq);
		wr.wr.rdma.rkey = s->rkey;
		break;
	case T_READ:
		wr.opcode = UIW_WR_RDMA_READ;
		sge.addr = (uintptr_t)target(s, q, seq);
		wr.wr.rdma.remote_addr = rsource(s, q, seq);
		wr.wr.rdma.rkey = s->rkey;
		break;
	case T_SEND:
		wr.opcode = UIW_WR_SEND;
		sge.addr = (uintptr_t)source(s, q, seq);
		break;
	default:
		/* RFC 7306: the QP's own word at the start of the peer's
		 * target area; the original value lands in a local result
		 * word of the outstanding operation. */
		wr.opcode = t == T_FETCH_ADD ? UIW_WR_ATOMIC_FETCH_ADD
					     : UIW_WR_ATOMIC_CMP_SWP;
		sge.addr = (uintptr_t)(s->buf + (size_t)q * region_len(s) +
				       (seq % (uint64_t)s->depth) * 8);
		sge.length = 8;
		wr.wr.atomic.remote_addr = rtarget(s, q, 0);
		wr.wr.atomic.rkey = s->rkey;
		wr.wr.atomic.compare_add = t == T_FETCH_ADD ? 1 : seq;
		wr.wr.atomic.swap = seq + 1;
		break;
	}
	if (!size && !is_atomic(t) && t != T_READ) {
		wr.sg_list = NULL;
		wr.num_sge = 0;
	}
	check(uiw_post_send(s->qp[q].e.qp, &wr, NULL), "uiw_post_send");
}

/* Posts receives on QP q until `want` are outstanding; each of the
 * largest size, in the target area (slot: the receive's number).  A
 * ping-pong has one message in flight: its receives all take slot 0, as
 * raw TCP's echo and perftest's latency tests read into one buffer (a
 * ring of slots would move each message into memory the caches no
 * longer hold). */
static void top_up_recv(struct side *s, int q, uint64_t want)
{
	struct qp_state *st = &s->qp[q];

	while (st->rq_posted - st->rq_done < want) {
		struct uiw_sge sge = {
			.addr = (uintptr_t)target(s, q, s->recv_slot0 ? 0 :
						  st->rq_posted),
			.length = (uint32_t)s->stride,
			.lkey = s->mr->lkey,
		};
		struct uiw_recv_wr wr = {
			.wr_id = wrid(q, st->rq_posted),
			.sg_list = &sge,
			.num_sge = 1,
		};

		check(uiw_post_recv(st->e.qp, &wr, NULL), "uiw_post_recv");
		st->rq_posted++;
	}
}

/* Completions: --event sleeps on the CQ fd (and on extra_fd, >= 0: 0 is
 * returned when that becomes readable); --poll spins on uiw_cq_poll,
 * returning 0 now and then when extra_fd >= 0 so that the caller can
 * look at it. */
static int get_wcs(struct side *s, struct uiw_wc *wc, int n, int extra_fd)
{
	return (s->event ? uiw_tool_get_wcs : uiw_tool_spin_wcs)(s->cq, wc, n,
								 extra_fd,
								 s->name);
}

static void check_wc(struct side *s, const struct uiw_wc *wc)
{
	if (wc->status != UIW_WC_SUCCESS) {
		struct uiw_qp_attr a;
		int q = wrid_qp(wc->wr_id);

		memset(&a, 0, sizeof(a));
		if (q < s->nqp)
			uiw_qp_query(s->qp[q].e.qp, &a);
		die("%s: work request on QP %d failed: %s%s%s", s->name, q,
		    uiw_wc_status_str(wc->status), a.term_msg[0] ? ": " : "",
		    a.term_msg);
	}
}

/* Before this side sleeps on the control connection: in the CQ's poll
 * mode a connection receives only while uiw_cq_poll is called, unless the
 * CQ is armed, which hands receiving back to the progress thread (Read
 * Requests must be answered, Writes placed, while the server waits). */
static void side_idle(struct side *s)
{
	if (!s->event)
		check(uiw_cq_req_notify(s->cq, 0), "uiw_cq_req_notify");
}

/* ------------------------------------------------------------------ */
/* Raw TCP                                                            */

/* Reads exactly len octets; spin: non-blocking recv in a loop. */
static void read_full(int fd, uint8_t *p, size_t len, bool spin)
{
	ssize_t n;

	while (len) {
		n = recv(fd, p, len, spin ? MSG_DONTWAIT : 0);
		if (n > 0) {
			p += n;
			len -= (size_t)n;
			continue;
		}
		if (n == 0)
			die("raw TCP: the peer closed the connection");
		if (errno == EINTR)
			continue;
		if (spin && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			sched_yield();
			continue;
		}
		die("raw TCP: recv: %s", strerror(errno));
	}
}

/* Streams messages of size octets until EOF; returns the octets.  With
 * own, into that buffer of 64 KiB (small messages: read 64 KiB at a
 * time); else message by message into QP 0's target slots of side s,
 * in turn, where uiwarp's run puts them. */
static uint64_t tcp_sink(int fd, struct side *s, size_t size, uint8_t *own)
{
	uint64_t got = 0, slot = 0;
	size_t off = 0;
	ssize_t n;

	for (;;) {
		if (own)
			n = recv(fd, own, 65536, 0);
		else
			n = recv(fd, target(s, 0, slot) + off, size - off, 0);
		if (n == 0)
			break;
		if (n < 0) {
			if (errno == EINTR)
				continue;
			die("raw TCP: recv: %s", strerror(errno));
		}
		got += (uint64_t)n;
		off += (size_t)n;
		if (off == size) {
			off = 0;
			slot++;
		}
	}
	return got;
}

/* Server side of a ping-pong: echoes until the final ping. */
static void tcp_echo(int fd, size_t size, bool spin)
{
	uint8_t *b = uiw_tool_alloc(size);

	for (;;) {
		read_full(fd, b, size, spin);
		write_all(fd, b, size, "raw TCP");
		if (b[size - 1] == LAT_STOP)
			break;
	}
	free(b);
}

static double *lat_push(double *v, size_t *n, size_t *cap, double x)
{
	if (*n == *cap) {
		*cap = *cap ? 2 * *cap : 4096;
		v = realloc(v, *cap * sizeof(*v));
		if (!v)
			die("out of memory");
	}
	v[(*n)++] = x;
	return v;
}

/* ------------------------------------------------------------------ */
/* Server                                                             */

struct server {
	struct side s;
	struct ctl *ctl;
	int tcp_lfd;
	struct uiw_tool_listener l;
	int mode, tests;
};

static void srv_fail(struct server *sv, const char *fmt, ...)
	__attribute__((noreturn, format(printf, 2, 3)));
static void srv_fail(struct server *sv, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	ctl_send(sv->ctl, R_ERROR, 0, NULL, 0, msg);
	die("server: %s", msg);
}

/* Checks the slots a run used on QP q against the run's pattern. */
static bool check_slots(struct side *s, int q, uint64_t used, size_t size,
			uint32_t seed, bool src, char *msg, size_t mlen,
			const char *where)
{
	uint64_t i, n = used < (uint64_t)s->nslots ? used
						    : (uint64_t)s->nslots;
	size_t at;

	for (i = 0; i < n; i++) {
		uint8_t *p = src ? source(s, q, i) : target(s, q, i);

		at = uiw_tool_mismatch(p, size, seed);
		if (at < size) {
			snprintf(msg, mlen, "data mismatch at the %s: QP %d "
				 "slot %" PRIu64 " offset %zu", where, q, i,
				 at);
			return false;
		}
	}
	return true;
}

static uint32_t seed_of(int t, size_t size)
{
	return (uint32_t)size * 31u + (uint32_t)t;
}

/* A Send / Write with Immediate stream: repost every receive as it
 * completes and tell the client, until DONE says how many came. */
static void srv_recv_stream(struct server *sv, int t, size_t size,
			    uint64_t *got, char *msg, size_t mlen)
{
	struct side *s = &sv->s;
	struct uiw_wc wc[64];
	uint64_t total = UINT64_MAX, count = 0, want = 2 * (uint64_t)s->depth;
	bool touched[MAX_QPS];
	struct rec r;
	int i, n, q;

	for (q = 0; q < s->nqp; q++) {
		top_up_recv(s, q, want);
		ctl_send1(sv->ctl, R_CREDIT, (uint32_t)q, s->qp[q].rq_posted);
	}
	ctl_send1(sv->ctl, R_READY, 0, 0);
	while (count != total) {
		n = get_wcs(s, wc, 64, sv->ctl->fd);
		if (n == 0 || sv->ctl->have >= REC_LEN) {
			while (ctl_recv(sv->ctl, &r, false)) {
				if (r.type != R_DONE)
					srv_fail(sv, "unexpected record %u "
						 "during a run", r.type);
				total = r.v[0];
			}
			if (n == 0)
				continue;
		}
		memset(touched, 0, sizeof(touched));
		for (i = 0; i < n; i++) {
			q = wrid_qp(wc[i].wr_id);
			if (wc[i].status != UIW_WC_SUCCESS || q >= s->nqp)
				srv_fail(sv, "receive on QP %d: %s", q,
					 uiw_wc_status_str(wc[i].status));
			if (t == T_SEND ? wc[i].byte_len != size
					: wc[i].opcode !=
					  UIW_WC_RECV_RDMA_WITH_IMM)
				srv_fail(sv, "receive on QP %d: %u octets, "
					 "opcode %d (expected %zu octets)", q,
					 wc[i].byte_len, (int)wc[i].opcode,
					 size);
			s->qp[q].rq_done++;
			touched[q] = true;
			count++;
		}
		for (q = 0; q < s->nqp; q++) {
			if (!touched[q])
				continue;
			top_up_recv(s, q, want);
			ctl_send1(sv->ctl, R_CREDIT, (uint32_t)q,
				  s->qp[q].rq_posted);
		}
	}
	*got = count;
	(void)msg;
	(void)mlen;
}

/* Ping-pong on QP 0 as the server: answer each ping. */
static void srv_pingpong(struct server *sv, int t, size_t size)
{
	struct side *s = &sv->s;
	volatile uint8_t *last = target(s, 0, 0) + size - 1;
	uint8_t prev = 0, v;
	struct uiw_wc wc[16];
	uint64_t sq_out = 0;
	int i, n;

	if (t == T_WRITE) {
		*last = 0;
		ctl_send1(sv->ctl, R_READY, 0, 0);
		for (;;) {
			unsigned spins = 0;
			double t0 = 0;

			while ((v = __atomic_load_n(last, __ATOMIC_ACQUIRE)) ==
			       prev) {
				n = uiw_cq_poll(s->cq, 16, wc);
				check(n, "uiw_cq_poll");
				for (i = 0; i < n; i++)
					check_wc(s, &wc[i]);
				sq_out -= (uint64_t)(n > 0 ? n : 0);
				/* Yield only when nothing happened: the poll
				 * may have just placed the Write. */
				if (n == 0 && __atomic_load_n(last,
						__ATOMIC_ACQUIRE) == prev)
					sched_yield();
				if ((++spins & 4095) == 0) {
					if (t0 == 0)
						t0 = now_s();
					else if (now_s() - t0 > TIMEOUT_S)
						srv_fail(sv, "write ping-pong: "
							 "no Write within %.0f s",
							 TIMEOUT_S);
				}
			}
			prev = v;
			source(s, 0, 0)[size - 1] = v;
			while (sq_out >= (uint64_t)s->depth) {
				n = get_wcs(s, wc, 16, -1);
				for (i = 0; i < n; i++)
					check_wc(s, &wc[i]);
				sq_out -= (uint64_t)n;
			}
			post_op(s, 0, T_WRITE, 0, size, 0);
			sq_out++;
			if (v == LAT_STOP)
				break;
		}
		while (sq_out) {
			n = get_wcs(s, wc, 16, -1);
			for (i = 0; i < n; i++)
				check_wc(s, &wc[i]);
			sq_out -= (uint64_t)n;
		}
		return;
	}
	/* Send or Write with Immediate: a receive completion is a ping */
	top_up_recv(s, 0, 4);
	ctl_send1(sv->ctl, R_CREDIT, 0, s->qp[0].rq_posted);
	ctl_send1(sv->ctl, R_READY, 0, 0);
	for (;;) {
		bool stop = false, got = false;

		n = get_wcs(s, wc, 16, -1);
		for (i = 0; i < n; i++) {
			check_wc(s, &wc[i]);
			if (wc[i].opcode == UIW_WC_SEND ||
			    wc[i].opcode == UIW_WC_RDMA_WRITE) {
				sq_out--;
				continue;
			}
			got = true;
			s->qp[0].rq_done++;
			if (t == T_SEND)
				stop = target(s, 0, 0)[size - 1] == LAT_STOP;
			else
				stop = wc[i].imm_data == LAT_STOP;
		}
		if (!got)
			continue;
		top_up_recv(s, 0, 4);
		source(s, 0, 0)[size - 1] = stop ? LAT_STOP : 1;
		post_op(s, 0, t, 0, size, stop ? LAT_STOP : 1);
		sq_out++;
		if (stop)
			break;
	}
	while (sq_out) {
		n = get_wcs(s, wc, 16, -1);
		for (i = 0; i < n; i++) {
			check_wc(s, &wc[i]);
			if (wc[i].opcode == UIW_WC_SEND ||
			    wc[i].opcode == UIW_WC_RDMA_WRITE)
				sq_out--;
		}
	}
}

static void srv_run(struct server *sv, struct rec *run)
{
	struct side *s = &sv->s;
	int t = (int)run->v[0];
	size_t size = (size_t)run->v[1];
	char msg[72] = "";
	uint64_t got = 0, v[2];
	bool ok = true;
	struct rec r;
	int q;

	if (run->a == RUN_TCP) {
		int fd = accept(sv->tcp_lfd, NULL, NULL);

		uint8_t *own = NULL;

		if (fd < 0)
			srv_fail(sv, "raw TCP accept: %s", strerror(errno));
		set_nodelay(fd);
		/* The stream lands in QP 0's target slots of the uiwarp run,
		 * so that raw TCP touches the memory uiwarp does (or the
		 * cache would favour one of them); messages under 64 KiB in
		 * a buffer of their own, read 64 KiB at a time. */
		if (sv->mode != M_LAT && size < 65536)
			own = uiw_tool_alloc(65536);
		ctl_send1(sv->ctl, R_READY, 0, 0);
		if (sv->mode == M_LAT)
			tcp_echo(fd, size, !s->event);
		else
			got = tcp_sink(fd, s, size, own);
		free(own);
		close(fd);
		v[0] = got;
		v[1] = 1;
		ctl_send(sv->ctl, R_RESULT, 0, v, 2, "");
		return;
	}
	if (t < 0 || t >= NTESTS || size > s->stride || (size == 0 &&
							  !is_atomic(t)))
		srv_fail(sv, "bad RUN record (test %d, %zu octets)", t, size);
	/* the run's pattern, and targets cleared */
	for (q = 0; q < s->nqp; q++) {
		int i;

		for (i = 0; i < s->nslots; i++) {
			memset(target(s, q, (uint64_t)i), 0, size);
			if (t == T_READ)
				uiw_tool_fill(source(s, q, (uint64_t)i), size,
					      seed_of(t, size));
		}
	}
	if (sv->mode == M_LAT) {
		if (t == T_WRITE || uses_recv(t)) {
			srv_pingpong(sv, t, size);
		} else {
			side_idle(s);
			ctl_send1(sv->ctl, R_READY, 0, 0);
		}
		side_idle(s);
		ctl_recv(sv->ctl, &r, true);
		if (r.type != R_DONE)
			srv_fail(sv, "expected DONE, got record %u", r.type);
	} else if (uses_recv(t)) {
		srv_recv_stream(sv, t, size, &got, msg, sizeof(msg));
		/* the end of the client's time: before the check below */
		ctl_send1(sv->ctl, R_ARRIVED, 0, got);
	} else {
		side_idle(s);
		ctl_send1(sv->ctl, R_READY, 0, 0);
		ctl_recv(sv->ctl, &r, true);
		if (r.type != R_DONE)
			srv_fail(sv, "expected DONE, got record %u", r.type);
		got = r.v[0];
	}
	/* verification (bw and rate; --no-verify: the client said so) */
	if (sv->mode != M_LAT && run->v[2]) {
		if (t == T_WRITE || t == T_WRITE_IMM || t == T_SEND) {
			uint64_t per = got / (uint64_t)s->nqp;

			/* every QP ran at least `per`: all used >= 1 slot */
			for (q = 0; ok && q < s->nqp; q++)
				ok = check_slots(s, q, per ? per : 1, size,
						 seed_of(t, size), false, msg,
						 sizeof(msg), "server");
		} else if (is_atomic(t)) {
			uint64_t sum = 0, w;

			for (q = 0; q < s->nqp; q++) {
				memcpy(&w, target(s, q, 0), 8);
				sum += w;
			}
			if (sum != got) {
				ok = false;
				snprintf(msg, sizeof(msg), "the server's words "
					 "sum to %" PRIu64 " after %" PRIu64
					 " %s", sum, got, test_names[t]);
			}
		}
	}
	v[0] = got;
	v[1] = ok;
	ctl_send(sv->ctl, R_RESULT, 0, v, 2, msg);
}

/* One client session on the accepted control connection. */
static void serve(struct ctl *ctl, bool quiet)
{
	struct server sv;
	struct rec r;
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	struct uiw_conn_param p;
	struct uiw_listen_param lp = { 0 };
	struct uiw_cm_event ev;
	struct uiw_wc wc;
	uint64_t v[6];
	int q, nqp, depth, nslots, family, rc;
	size_t stride;

	memset(&sv, 0, sizeof(sv));
	sv.ctl = ctl;
	ctl_recv(ctl, &r, true);
	if (r.type != R_HELLO || r.v[0] != ((uint64_t)MAGIC << 32 | VERSION))
		srv_fail(&sv, "not a uiwarp-perf client of version %d",
			 VERSION);
	sv.tests = (int)(r.v[1] & 0xff);
	sv.mode = (int)(r.v[1] >> 8 & 0xf);
	nqp = (int)(r.v[2] >> 32);
	depth = (int)(uint32_t)r.v[2];
	stride = (size_t)r.v[3];
	nslots = (int)(uint32_t)r.v[4];
	if (nqp < 1 || nqp > MAX_QPS || depth < 1 || depth > MAX_DEPTH ||
	    stride < 64 || stride > MAX_SIZE || nslots < 1 ||
	    nslots > depth || (size_t)nqp * 2 * stride * (size_t)nslots >
	    BUF_CAP + 2 * (size_t)nqp * stride)
		srv_fail(&sv, "parameters out of range (%d QPs, depth %d, "
			 "stride %zu, %d slots)", nqp, depth, stride, nslots);
	side_init(&sv.s, "server", nqp, depth, stride, nslots,
		  (int)(r.v[1] >> 20 & 1), 0);
	sv.s.recv_slot0 = sv.mode == M_LAT;
	sv.s.raddr = r.v[5];
	sv.s.rkey = r.a;
	sv.s.ctl.peer = "client";

	/* the uiwarp and raw TCP listeners, where the client reached us */
	if (getsockname(ctl->fd, (struct sockaddr *)&ss, &len))
		die("getsockname: %s", strerror(errno));
	family = ss.ss_family;
	set_port(&ss, 0);
	sv.l.family = family;
	sv.l.ch = check_ptr(uiw_cm_channel_create(sv.s.dev),
			    "uiw_cm_channel_create");
	lp.llp = (enum uiw_llp_kind)(r.v[1] >> 28 & 0xf);
	lp.backlog = nqp;
	/* Over SCTP over UDP, the UDP port given to the server, else the
	 * one the client names (a client that reaches the server through
	 * a relay names the relay's). */
	lp.udp_port = o.udp_port ? (uint16_t)o.udp_port :
		      (uint16_t)(r.v[4] >> 32);
	rc = uiw_cm_listen_ex(sv.l.ch, (struct sockaddr *)&ss, ss_len(&ss),
			      &lp, &sv.l.id);
	if (rc) {
		fprintf(stderr, "uiwarp-perf: server: uiw_cm_listen_ex: %s\n",
			uiw_last_error());
		srv_fail(&sv, "cannot listen over %s: %s",
			 uiw_tool_llp_name(lp.llp), strerror(-rc));
	}
	check(uiw_cm_local_addr(sv.l.id, &ss), "uiw_cm_local_addr");
	sv.l.port = ntohs(family == AF_INET6 ?
			  ((struct sockaddr_in6 *)&ss)->sin6_port :
			  ((struct sockaddr_in *)&ss)->sin_port);
	set_port(&ss, 0);
	sv.tcp_lfd = tcp_listen(&ss, ss_len(&ss), 4);
	for (q = 0; q < nqp; q++)
		uiw_tool_post_recv(&sv.s.qp[q].e, wrid(q, 0), 0, 0);
	v[0] = sv.l.port;
	v[1] = sock_port(sv.tcp_lfd);
	v[2] = (uintptr_t)sv.s.buf;
	v[3] = lp.llp == UIW_LLP_TCP ? 0 : lp.udp_port;
	ctl_send(ctl, R_WELCOME, sv.s.mr->rkey, v, 4, NULL);

	/* the QPs, in the order the client connects them */
	memset(&p, 0, sizeof(p));
	p.crc = (enum uiw_opt)(r.v[1] >> 12 & 0xf);
	p.markers = (enum uiw_opt)(r.v[1] >> 16 & 0xf);
	p.align = (enum uiw_opt)(r.v[1] >> 24 & 0xf);
	p.llp = (enum uiw_llp_kind)(r.v[1] >> 28 & 0xf);
	for (q = 0; q < nqp; q++) {
		uiw_tool_wait_event(sv.l.ch, UIW_CM_EVENT_CONNECT_REQUEST, &ev);
		sv.s.qp[q].e.id = ev.id;
		check(uiw_cm_accept(ev.id, sv.s.qp[q].e.qp, &p),
		      "uiw_cm_accept");
		uiw_tool_wait_event(sv.l.ch, UIW_CM_EVENT_ESTABLISHED, NULL);
		/* the client's first FPDU, a zero-length Send */
		uiw_tool_get_wcs(sv.s.cq, &wc, 1, -1, "server");
		check_wc(&sv.s, &wc);
		sv.s.qp[q].rq_posted = sv.s.qp[q].rq_done = 1;
	}
	if (!quiet) {
		/* The LLP in use (sctp resolves to a stack), as the QP
		 * reports it. */
		struct uiw_qp_attr qa;
		enum uiw_llp_kind used = p.llp;

		if (uiw_qp_query(sv.s.qp[0].e.qp, &qa) == 0)
			used = (enum uiw_llp_kind)qa.llp;
		fprintf(stderr, "uiwarp-perf: server: %d QP%s connected%s%s%s\n",
			nqp, nqp > 1 ? "s" : "",
			used != UIW_LLP_TCP ? " over SCTP (" : "",
			used != UIW_LLP_TCP ? uiw_tool_llp_name(used) : "",
			used != UIW_LLP_TCP ? ")" : "");
	}

	for (;;) {
		side_idle(&sv.s);
		ctl_recv(ctl, &r, true);
		if (r.type == R_BYE)
			break;
		if (r.type != R_RUN)
			srv_fail(&sv, "unexpected record %u", r.type);
		srv_run(&sv, &r);
	}
	ctl_send1(ctl, R_BYE, 0, 0);
	for (q = 0; q < nqp; q++)
		uiw_tool_wait_event(sv.l.ch, UIW_CM_EVENT_DISCONNECTED, NULL);
	close(sv.tcp_lfd);
	for (q = 0; q < nqp; q++) {
		uiw_tool_end_free(&sv.s.qp[q].e);
	}
	sv.s.nqp = 0;
	uiw_tool_listen_close(&sv.l);
	side_free(&sv.s);
}

/* ------------------------------------------------------------------ */
/* Client                                                             */

struct result {
	int test;
	size_t size;
	int depth;
	uint64_t ops;
	double secs, mbps, mops;
	double lat[4];            /* min, avg, median, p99 (µs) */
	int have_tcp;
	uint64_t tcp_ops;
	double tcp_secs, tcp_mbps, tcp_mops, tcp_lat[4];
	double vs_tcp;
	int turns;                /* with raw TCP: turns of each */
};

static struct side cl;
static struct uiw_qp_attr conn_attr;
static struct sockaddr_storage srv_addr;
static unsigned srv_tcp_port;

/* min, avg, median, p99 of n samples in the order taken (sorted in
 * place), leaving out the first skip: the first round trips also fault
 * pages in and warm caches. */
static void lat_stats_skip(double *v, size_t n, size_t skip, double out[4])
{
	uiw_tool_lat_stats(v + skip, n - skip, out);
}

/* ... leaving out o.warmup, at most half of them. */
static void lat_stats(double *v, size_t n, double out[4])
{
	lat_stats_skip(v, n, o.warmup < n / 2 ? (size_t)o.warmup : n / 2,
		       out);
}

/* Latency with --tcp: uiwarp and raw TCP take turns (in_turns), and
 * the samples of every turn, less its warm-up, are pooled.  A
 * slow stretch of the machine, seconds long, then falls on both. */
static struct lat_pool {
	bool on;
	size_t skip;              /* of the current turn */
	double *v[2];             /* [0] uiwarp, [1] raw TCP */
	size_t n[2], cap[2];
} pool;

/* The samples of one turn: pooled (true), or left to the caller. */
static bool lat_pool_add(int tcp, const double *v, size_t n)
{
	size_t i, skip = pool.skip < n / 2 ? pool.skip : n / 2;

	if (!pool.on)
		return false;
	for (i = skip; i < n; i++)
		pool.v[tcp] = lat_push(pool.v[tcp], &pool.n[tcp],
				       &pool.cap[tcp], v[i]);
	return true;
}

/* CREDIT records update the client's view of the server's receives;
 * anything else is returned. */
static int cl_recv(struct rec *r, bool block)
{
	for (;;) {
		if (!ctl_recv(&cl.ctl, r, block))
			return 0;
		if (r->type != R_CREDIT)
			return 1;
		if (r->a >= (uint32_t)cl.nqp)
			die("the server sent a credit for QP %u", r->a);
		if (r->v[0] > cl.qp[r->a].peer_posted)
			cl.qp[r->a].peer_posted = r->v[0];
	}
}

static void cl_expect(struct rec *r, uint32_t type, const char *what)
{
	side_idle(&cl);
	cl_recv(r, true);
	if (r->type != type)
		die("expected %s from the server, got record %u", what,
		    r->type);
}

/* Takes every credit already sent, without blocking. */
static void cl_drain(void)
{
	struct rec r;

	while (cl_recv(&r, false))
		die("unexpected record %u from the server during a run",
		    r.type);
}

/* Whether the loop goes on: for o.duration from start, or o.iters; a
 * signal (tool_util.h) ends it early, in order: the server still gets
 * its DONE, the last ping-pong, and the BYE. */
static bool go_on(double end, uint64_t n)
{
	if (uiw_tool_stop_signal())
		return false;
	return o.duration > 0 ? now_s() < end : n < o.iters;
}

/* Raw TCP at size, in the pattern of the mode. */
static void client_tcp(int t, size_t size, struct result *res)
{
	struct sockaddr_storage ss = srv_addr;
	double start, stop, end, *lat = NULL;
	size_t nlat = 0, cap = 0;
	uint64_t sent = 0, v[2] = { RUN_TCP, size };
	uint8_t *b;
	struct rec r;
	int fd, i;

	ctl_send(&cl.ctl, R_RUN, RUN_TCP, v, 2, NULL);
	set_port(&ss, srv_tcp_port);
	fd = tcp_connect(&ss, "raw TCP");
	cl_expect(&r, R_READY, "READY");
	b = uiw_tool_alloc(size);
	uiw_tool_fill(b, size, seed_of(t, size));
	/* bw, rate: from the source slots of the uiwarp run, in turn, so
	 * that raw TCP touches as much memory as uiwarp does */
	for (i = 0; o.mode != M_LAT && i < cl.nslots; i++)
		uiw_tool_fill(source(&cl, 0, (uint64_t)i), size,
			      seed_of(t, size));
	start = now_s();
	end = start + o.duration;
	if (o.mode == M_LAT) {
		for (;;) {
			bool last = !go_on(end, sent + 1);
			double t0 = now_s();

			b[size - 1] = last ? LAT_STOP : 0;
			write_all(fd, b, size, "raw TCP");
			read_full(fd, b, size, !o.event);
			lat = lat_push(lat, &nlat, &cap,
				       (now_s() - t0) * 1e6 / 2);
			sent++;
			if (last)
				break;
		}
		cl_expect(&r, R_RESULT, "RESULT");
		stop = now_s();
	} else {
		while (go_on(end, sent)) {
			write_all(fd, source(&cl, 0, sent), size, "raw TCP");
			sent++;
		}
		shutdown(fd, SHUT_WR);
		cl_expect(&r, R_RESULT, "RESULT");
		stop = now_s();
		if (r.v[0] != sent * size)
			die("raw TCP: the server read %" PRIu64 " octets of %"
			    PRIu64, r.v[0], sent * size);
	}
	close(fd);
	free(b);
	res->have_tcp = 1;
	res->tcp_ops = sent;
	res->tcp_secs = stop - start;
	res->tcp_mbps = (double)sent * (double)size / (stop - start) / 1e6;
	res->tcp_mops = (double)sent / (stop - start) / 1e6;
	if (!lat_pool_add(1, lat, nlat))
		lat_stats(lat, nlat, res->tcp_lat);
	free(lat);
}

/* Checks an atomic's original value: the QP's word starts at 0 and the
 * operations on one QP are executed in order (RFC 7306 §7), so
 * operation seq of the run finds seq there. */
static void check_atomic(int t, int q, uint64_t seq)
{
	uint64_t got;

	memcpy(&got, cl.buf + (size_t)q * region_len(&cl) +
	       (seq % (uint64_t)cl.depth) * 8, 8);
	if (got != seq)
		die("%s on QP %d: operation %" PRIu64 " found %" PRIu64
		    " in the word, expected %" PRIu64, test_names[t], q, seq,
		    got, seq);
}

static void client_bw(int t, size_t size, struct result *res, int depth)
{
	uint64_t posted[MAX_QPS] = { 0 }, done[MAX_QPS] = { 0 }, total = 0;
	struct uiw_wc wc[64];
	double start, stop, end;
	bool credit = uses_recv(t);
	int i, n, q;

	start = now_s();
	end = start + o.duration;
	for (;;) {
		uint64_t out = 0;
		bool more = false;

		for (q = 0; q < cl.nqp; q++) {
			struct qp_state *st = &cl.qp[q];

			while (posted[q] - done[q] < (uint64_t)depth &&
			       go_on(end, posted[q])) {
				if (credit && st->sent >= st->peer_posted)
					break;
				post_op(&cl, q, t, posted[q], size, posted[q]);
				posted[q]++;
				if (credit)
					st->sent++;
			}
			out += posted[q] - done[q];
			if (go_on(end, posted[q]))
				more = true;
		}
		if (!out && !more)
			break;
		n = get_wcs(&cl, wc, 64, credit ? cl.ctl.fd : -1);
		if (credit)
			cl_drain();
		for (i = 0; i < n; i++) {
			check_wc(&cl, &wc[i]);
			q = wrid_qp(wc[i].wr_id);
			if (q >= cl.nqp)
				die("completion for QP %d", q);
			if (is_atomic(t) && o.verify)
				check_atomic(t, q, wrid_seq(wc[i].wr_id));
			done[q]++;
		}
	}
	for (q = 0; q < cl.nqp; q++)
		total += done[q];
	if (t == T_WRITE) {
		/* RFC 5040 §5.5: on each QP a Read Response follows the
		 * Writes before it, so they have all been placed. */
		for (q = 0; q < cl.nqp; q++)
			post_op(&cl, q, T_READ, 0, 1, 0);
		for (i = 0; i < cl.nqp; i += n) {
			n = get_wcs(&cl, wc, 64, -1);
			for (q = 0; q < n; q++)
				check_wc(&cl, &wc[q]);
		}
	}
	stop = now_s();
	ctl_send1(&cl.ctl, R_DONE, 0, total);
	{
		struct rec r;

		/* Sends: timed until the server has them all, not until it
		 * has checked them too */
		if (credit) {
			cl_expect(&r, R_ARRIVED, "ARRIVED");
			stop = now_s();
		}
		cl_expect(&r, R_RESULT, "RESULT");
		if (!r.v[1])
			die("%s %zu octets: verification failed: %s",
			    test_names[t], size, r.text);
	}
	if (t == T_READ && o.verify) {
		char msg[128];

		for (q = 0; q < cl.nqp; q++)
			if (!check_slots(&cl, q, done[q], size,
					 seed_of(t, size), false, msg,
					 sizeof(msg), "client"))
				die("read %zu octets: verification failed: %s",
				    size, msg);
	}
	res->ops = total;
	res->secs = stop - start;
	res->mbps = (double)total * (double)(is_atomic(t) ? 8 : size) /
		    res->secs / 1e6;
	res->mops = (double)total / res->secs / 1e6;
}

/* Waits for the receive completion of a pong on QP 0. */
static void wait_pong(uint64_t *sq_out)
{
	struct uiw_wc wc[16];
	bool got = false;
	int i, n;

	while (!got) {
		n = get_wcs(&cl, wc, 16, -1);
		for (i = 0; i < n; i++) {
			check_wc(&cl, &wc[i]);
			if (wc[i].opcode == UIW_WC_RECV ||
			    wc[i].opcode == UIW_WC_RECV_RDMA_WITH_IMM) {
				cl.qp[0].rq_done++;
				got = true;
			} else {
				(*sq_out)--;
			}
		}
	}
}

static void client_lat(int t, size_t size, struct result *res)
{
	volatile uint8_t *last = target(&cl, 0, 0) + size - 1;
	double *lat = NULL, start, end, t0;
	size_t nlat = 0, cap = 0;
	uint64_t i = 0, sq_out = 0;
	struct uiw_wc wc[16];
	int k, n;

	start = now_s();
	end = start + o.duration;
	for (;;) {
		bool fin = !go_on(end, i + 1);
		uint8_t v = fin ? LAT_STOP : (uint8_t)(i % 254 + 1);

		if (t == T_WRITE || uses_recv(t))
			source(&cl, 0, 0)[size - 1] = v;
		while (sq_out >= (uint64_t)cl.depth) {
			n = get_wcs(&cl, wc, 16, -1);
			for (k = 0; k < n; k++)
				check_wc(&cl, &wc[k]);
			sq_out -= (uint64_t)n;
		}
		if (uses_recv(t))
			top_up_recv(&cl, 0, 4);
		t0 = now_s();
		/* the data moves through slot 0; atomics number theirs */
		post_op(&cl, 0, t, is_atomic(t) ? i : 0, size, v);
		sq_out++;
		if (t == T_WRITE) {
			unsigned spins = 0;

			while (__atomic_load_n(last, __ATOMIC_ACQUIRE) != v) {
				n = uiw_cq_poll(cl.cq, 16, wc);
				check(n, "uiw_cq_poll");
				for (k = 0; k < n; k++)
					check_wc(&cl, &wc[k]);
				sq_out -= (uint64_t)(n > 0 ? n : 0);
				if (n == 0 && __atomic_load_n(last,
						__ATOMIC_ACQUIRE) != v)
					sched_yield();
				if ((++spins & 4095) == 0 &&
				    now_s() - t0 > TIMEOUT_S)
					die("write ping-pong: no answer "
					    "within %.0f s", TIMEOUT_S);
			}
		} else if (uses_recv(t)) {
			wait_pong(&sq_out);
		} else {
			n = get_wcs(&cl, wc, 1, -1);
			check_wc(&cl, &wc[0]);
			sq_out--;
			if (is_atomic(t) && o.verify)
				check_atomic(t, 0, i);
		}
		lat = lat_push(lat, &nlat, &cap, (now_s() - t0) * 1e6 / 2);
		i++;
		if (fin)
			break;
	}
	res->secs = now_s() - start;
	while (sq_out) {
		n = get_wcs(&cl, wc, 16, -1);
		for (k = 0; k < n; k++)
			check_wc(&cl, &wc[k]);
		sq_out -= (uint64_t)n;
	}
	ctl_send1(&cl.ctl, R_DONE, 0, i);
	{
		struct rec r;

		cl_expect(&r, R_RESULT, "RESULT");
	}
	res->ops = i;
	res->mops = (double)i / res->secs / 1e6;
	res->mbps = res->mops * (double)size;
	if (!lat_pool_add(0, lat, nlat))
		lat_stats(lat, nlat, res->lat);
	free(lat);
}

static void client_run(int t, size_t size, struct result *res)
{
	uint64_t v[3] = { (uint64_t)t, size, (uint64_t)o.verify };
	int depth = cl.depth, q, i;
	struct rec r;

	if (t == T_READ || is_atomic(t))
		for (q = 0; q < cl.nqp; q++)
			if (cl.qp[q].ord && (int)cl.qp[q].ord < depth)
				depth = cl.qp[q].ord;
	res->depth = o.mode == M_LAT ? 1 : depth;
	for (q = 0; q < cl.nqp; q++)
		for (i = 0; i < cl.nslots; i++) {
			if (t == T_READ)
				memset(target(&cl, q, (uint64_t)i), 0, size);
			else
				uiw_tool_fill(source(&cl, q, (uint64_t)i), size,
					      seed_of(t, size));
		}
	if (o.mode == M_LAT)
		memset(target(&cl, 0, 0), 0, size);
	ctl_send(&cl.ctl, R_RUN, 0, v, 3, NULL);
	cl_expect(&r, R_READY, "READY");
	if (o.mode == M_LAT)
		client_lat(t, size, res);
	else
		client_bw(t, size, res, depth);
}

/* A run's figure: throughput, or the median latency; uiwarp's or TCP's. */
static double key_fig(const struct result *r, bool tcp)
{
	if (o.mode == M_LAT)
		return tcp ? r->tcp_lat[2] : r->lat[2];
	return tcp ? r->tcp_mbps : r->mbps;
}

/* uiwarp's figure over raw TCP's in one run (latency: lower is better). */
static double vs_tcp_of(const struct result *r)
{
	return key_fig(r, false) / key_fig(r, true);
}

/* The figure a run is ranked by: with --tcp the ratio of its pair, else
 * the throughput or the median latency. */
static double key_of(const struct result *r)
{
	return o.tcp ? vs_tcp_of(r) : key_fig(r, false);
}

/* Index of the run with the median key among n (the lower middle of
 * an even count): an insertion sort of the run indices by key. */
static int median_run(const struct result *runs, int n)
{
	int idx[MAX_REPEAT], i, j;

	for (i = 0; i < n; i++) {
		for (j = i; j > 0 && key_of(&runs[idx[j - 1]]) >
				     key_of(&runs[i]); j--)
			idx[j] = idx[j - 1];
		idx[j] = i;
	}
	return idx[(n - 1) / 2];
}

/* With --tcp, the number of turns raw TCP and uiwarp take in one run
 * (0: one of each): latency with a count of ping-pongs large enough to
 * cut into turns of at least four warm-ups, or bw and rate with a
 * duration long enough for turns of BW_TURN_MIN. */
static int turns(void)
{
	uint64_t per = 4 * (o.warmup > 10 ? o.warmup : 10), n;

	if (!o.tcp)
		return 0;
	if (o.mode != M_LAT) {
		n = o.duration > 0 ? (uint64_t)(o.duration / BW_TURN_MIN) : 0;
		n = n < BW_TURNS ? n : BW_TURNS;
	} else {
		if (o.duration > 0)
			return 0;
		n = o.iters / per;
		n = n < LAT_TURNS ? n : LAT_TURNS;
	}
	return n >= 2 ? (int)n : 0;
}

/* One run of a figure in turns of raw TCP, then uiwarp: the machine's
 * slow stretches, seconds long, then fall on both alike.  Throughput
 * and rate split o.duration among the turns and pool octets and time.
 * Latency splits o.iters (each turn at least four warm-ups long) and
 * pools the samples, every turn leaving out its first o.warmup
 * ping-pongs: raw TCP's connection is a new one each time, and
 * uiwarp's poll mode takes receiving back from the progress thread. */
static void in_turns(int t, struct result *res)
{
	uint64_t iters = o.iters, ops = 0, tops = 0;
	double dur = o.duration, secs = 0, tsecs = 0;
	int turn, n = turns();
	bool lat = o.mode == M_LAT;
	size_t unit = is_atomic(t) ? 8 : res->size;

	pool.on = lat;
	pool.n[0] = pool.n[1] = 0;
	for (turn = 0; turn < n; turn++) {
		if (lat)
			o.iters = iters / (uint64_t)n +
				  ((uint64_t)turn < iters % (uint64_t)n);
		else
			o.duration = dur / n;
		pool.skip = (size_t)o.warmup;
		client_tcp(t, res->size, res);
		tops += res->tcp_ops;
		tsecs += res->tcp_secs;
		client_run(t, res->size, res);
		ops += res->ops;
		secs += res->secs;
	}
	o.iters = iters;
	o.duration = dur;
	pool.on = false;
	res->ops = ops;
	res->secs = secs;
	res->mops = (double)ops / secs / 1e6;
	res->mbps = res->mops * (double)unit;
	res->tcp_ops = tops;
	res->tcp_secs = tsecs;
	res->tcp_mops = (double)tops / tsecs / 1e6;
	res->tcp_mbps = res->tcp_mops * (double)res->size;
	res->turns = n;
	if (lat) {
		lat_stats_skip(pool.v[0], pool.n[0], 0, res->lat);
		lat_stats_skip(pool.v[1], pool.n[1], 0, res->tcp_lat);
	}
}

/* One figure: o.repeat runs, each with --tcp in turns with raw TCP
 * (in_turns) or, too short for turns, just after it.  The run kept is
 * the one with the median figure or, with --tcp, the pair with the
 * median ratio: a pair is measured in the same seconds, so a disturbed
 * stretch of the machine (see bench/profile.md) tends to slow both of
 * its halves, where the medians of the two series taken apart could
 * come from different stretches. */
static void measure(int t, struct result *res)
{
	struct result runs[MAX_REPEAT];
	int k;

	for (k = 0; k < o.repeat; k++) {
		runs[k] = *res;
		if (turns()) {
			in_turns(t, &runs[k]);
		} else {
			if (o.tcp)
				client_tcp(t, res->size, &runs[k]);
			client_run(t, res->size, &runs[k]);
		}
		/* the spread behind the figure kept */
		if (o.repeat > 1 && o.tcp)
			fprintf(stderr, "  %s %zu run %d: %.6g, raw TCP %.6g, "
				"ratio %.6g\n", test_names[t], res->size, k + 1,
				key_fig(&runs[k], false), key_fig(&runs[k], true),
				vs_tcp_of(&runs[k]));
		else if (o.repeat > 1)
			fprintf(stderr, "  %s %zu run %d: %.6g\n",
				test_names[t], res->size, k + 1,
				key_fig(&runs[k], false));
	}
	*res = runs[median_run(runs, o.repeat)];
	if (res->have_tcp)
		res->vs_tcp = vs_tcp_of(res);
}

/* ------------------------------------------------------------------ */
/* Output                                                             */

static struct result *results;
static int nresults;

static const char *const columns[] = {
	"test", "mode", "size", "qps", "depth", "crc", "markers",
	"completion", "ops", "seconds", "mbps", "mmsgs", "lat_min_us",
	"lat_avg_us", "lat_median_us", "lat_p99_us", "tcp_mbps", "tcp_mmsgs",
	"tcp_lat_min_us", "tcp_lat_avg_us", "tcp_lat_median_us",
	"tcp_lat_p99_us", "vs_tcp", "turns",
};
#define NCOLS ((int)(sizeof(columns) / sizeof(columns[0])))

/* Column c of row r as text ("" when it does not apply); *num: a
 * number (JSON writes it bare). */
static void cell(const struct result *r, int c, char *buf, size_t len,
		 bool *num)
{
	bool lat = o.mode == M_LAT;
	double x = NAN;

	*num = true;
	buf[0] = 0;
	switch (c) {
	case 0:
		snprintf(buf, len, "%s", test_names[r->test]);
		*num = false;
		return;
	case 1:
		snprintf(buf, len, "%s", mode_names[o.mode]);
		*num = false;
		return;
	case 2:
		snprintf(buf, len, "%zu", r->size);
		return;
	case 3:
		snprintf(buf, len, "%d", o.mode == M_LAT ? 1 : o.nqp);
		return;
	case 4:
		snprintf(buf, len, "%d", r->depth);
		return;
	case 5:
		snprintf(buf, len, "%s", conn_attr.crc ? "on" : "off");
		*num = false;
		return;
	case 6:
		snprintf(buf, len, "%s", conn_attr.markers_tx ? "on" : "off");
		*num = false;
		return;
	case 7:
		snprintf(buf, len, "%s", o.event ? "event" : "poll");
		*num = false;
		return;
	case 8:
		snprintf(buf, len, "%" PRIu64, r->ops);
		return;
	case 9: x = r->secs; break;
	case 10: x = lat ? NAN : r->mbps; break;
	case 11: x = lat ? NAN : r->mops; break;
	case 12: case 13: case 14: case 15:
		x = lat ? r->lat[c - 12] : NAN;
		break;
	case 16: x = r->have_tcp && !lat ? r->tcp_mbps : NAN; break;
	case 17: x = r->have_tcp && !lat ? r->tcp_mops : NAN; break;
	case 18: case 19: case 20: case 21:
		x = r->have_tcp && lat ? r->tcp_lat[c - 18] : NAN;
		break;
	case 22: x = r->have_tcp ? r->vs_tcp : NAN; break;
	case 23:
		if (r->have_tcp)
			snprintf(buf, len, "%d", r->turns ? r->turns : 1);
		return;
	}
	if (!isnan(x))
		snprintf(buf, len, "%.*f", c == 11 || c == 17 || c == 22 ? 4
					   : c == 9 ? 3 : 2, x);
}

static void result_cell(int row, int col, char *buf, size_t len, bool *num)
{
	cell(&results[row], col, buf, len, num);
}

static const struct uiw_tool_table results_table = {
	.cols = columns, .ncols = NCOLS, .cell = result_cell,
};

static void print_csv(void)
{
	struct uiw_tool_table t = results_table;

	t.nrows = nresults;
	uiw_tool_print_csv(&t);
}

static void print_json(const char *where)
{
	struct uiw_tool_table t = results_table;

	t.nrows = nresults;
	printf("{\n  \"tool\": \"uiwarp-perf\",\n  \"peer\": \"%s\",\n"
	       "  \"mulpdu\": %u,\n  \"results\": [\n", where,
	       conn_attr.mulpdu);
	uiw_tool_print_json_rows(&t);
	printf("  ]\n}\n");
}

static void print_table(const char *where)
{
	char b[NCOLS][64];
	bool num;
	int i, c;

	printf("uiwarp-perf: %s, %s, %d QP%s, ", where, mode_names[o.mode],
	       o.mode == M_LAT ? 1 : o.nqp,
	       o.mode != M_LAT && o.nqp > 1 ? "s" : "");
	/* RFC 5043: no MPA over SCTP, hence no CRC or markers to tell. */
	if (conn_attr.llp != UIW_LLP_TCP)
		printf("DDP over SCTP (%s), ",
		       uiw_tool_llp_name((enum uiw_llp_kind)conn_attr.llp));
	else
		printf("CRC %s, markers %s, ", conn_attr.crc ? "on" : "off",
		       conn_attr.markers_tx ? "on" : "off");
	printf("MULPDU %u, %s completions, ", conn_attr.mulpdu,
	       o.event ? "event" : o.mode != M_LAT ?
	       "poll (CQ poll mode, sends deferred to the poll)" :
	       "poll (CQ poll mode)");
	if (o.duration > 0)
		printf("%.1f s per test\n\n", o.duration);
	else
		printf("%" PRIu64 " iterations per test\n\n", o.iters);
	if (o.mode == M_LAT) {
		printf("| test | size | min µs | avg µs | median µs | p99 µs | "
		       "TCP median µs | TCP p99 µs | vs TCP |\n");
		printf("|------|-----:|-------:|-------:|----------:|-------:|"
		       "--------------:|-----------:|-------:|\n");
	} else {
		printf("| test | size | QPs | depth | MB/s | Mmsg/s | "
		       "TCP MB/s | TCP Mmsg/s | vs TCP |\n");
		printf("|------|-----:|----:|------:|-----:|-------:|"
		       "---------:|-----------:|-------:|\n");
	}
	for (i = 0; i < nresults; i++) {
		for (c = 0; c < NCOLS; c++) {
			cell(&results[i], c, b[c], sizeof(b[c]), &num);
			if (!b[c][0])
				snprintf(b[c], sizeof(b[c]), "-");
		}
		if (o.mode == M_LAT)
			printf("| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
			       b[0], b[2], b[12], b[13], b[14], b[15], b[20],
			       b[21], b[22]);
		else
			printf("| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
			       b[0], b[2], b[3], b[4], b[10], b[11], b[16],
			       b[17], b[22]);
	}
	if (o.mode == M_LAT)
		printf("\nHalf round trip in µs; \"vs TCP\": median over raw "
		       "TCP's median (lower is better).\n");
	else
		printf("\nMB/s: 10^6 payload octets per second; \"vs TCP\": "
		       "over raw TCP at the same size, measured in turns with it.\n");
}

/* ------------------------------------------------------------------ */
/* Client main                                                        */

static void resolve(const char *host, unsigned port,
		    struct sockaddr_storage *ss)
{
	char serv[16];
	socklen_t len;

	snprintf(serv, sizeof(serv), "%u", port);
	if (uiw_tool_resolve(host, serv, AF_UNSPEC, false, ss, &len))
		exit(1);
}

static int run_client(struct sockaddr_storage *ctl_addr, const char *where)
{
	struct uiw_cm_channel *ch;
	struct uiw_wc wc;
	struct rec r;
	size_t max_size = 8, stride;
	uint64_t v[6];
	int nslots, q, i, t, family = ctl_addr->ss_family;
	unsigned flags;

	for (i = 0; i < o.nsizes; i++)
		if (o.sizes[i] > max_size)
			max_size = o.sizes[i];
	layout(o.nqp, o.depth, max_size, &stride, &nslots);
	srv_addr = *ctl_addr;
	memset(&cl, 0, sizeof(cl));
	cl.ctl.fd = tcp_connect(ctl_addr, "control connection");
	cl.ctl.peer = "server";
	/* bw and rate poll after every post: the posts of a turn go out
	 * together in the next poll (UIW_CQ_POLL_DEFER_SEND). */
	side_init(&cl, "client", o.nqp, o.depth, stride, nslots, o.event,
		  o.mode != M_LAT);
	cl.recv_slot0 = o.mode == M_LAT;

	flags = o.tests | (unsigned)o.mode << 8 | (unsigned)o.crc << 12 |
		(unsigned)o.markers << 16 | (unsigned)o.event << 20 |
		(unsigned)o.align << 24 | (unsigned)o.llp << 28;
	v[0] = (uint64_t)MAGIC << 32 | VERSION;
	v[1] = flags;
	v[2] = (uint64_t)o.nqp << 32 | (uint32_t)o.depth;
	v[3] = stride;
	v[4] = (uint64_t)nslots | (uint64_t)o.udp_port << 32;
	v[5] = (uintptr_t)cl.buf;
	ctl_send(&cl.ctl, R_HELLO, cl.mr->rkey, v, 6, NULL);
	cl_expect(&r, R_WELCOME, "WELCOME");
	srv_tcp_port = (unsigned)r.v[1];
	cl.raddr = r.v[2];
	cl.rkey = r.a;

	/* the QPs */
	ch = check_ptr(uiw_cm_channel_create(cl.dev), "uiw_cm_channel_create");
	for (q = 0; q < o.nqp; q++) {
		struct sockaddr_storage ss = *ctl_addr;
		struct uiw_conn_param p;
		struct qp_state *st = &cl.qp[q];

		memset(&p, 0, sizeof(p));
		p.crc = (enum uiw_opt)o.crc;
		p.markers = (enum uiw_opt)o.markers;
		p.align = (enum uiw_opt)o.align;
		p.llp = (enum uiw_llp_kind)o.llp;
		/* The UDP port asked for, else the one the server's
		 * listener has. */
		p.udp_port = o.udp_port ? (uint16_t)o.udp_port :
			     (uint16_t)r.v[3];
		set_port(&ss, (unsigned)r.v[0]);
		check(uiw_cm_connect(ch, st->e.qp, (struct sockaddr *)&ss,
				     ss_len(&ss), &p, &st->e.id),
		      "uiw_cm_connect");
		uiw_tool_wait_event(ch, UIW_CM_EVENT_ESTABLISHED, NULL);
		check(uiw_qp_query(st->e.qp, &st->e.attr), "uiw_qp_query");
		st->ord = (int)st->e.attr.ord;
		/* RFC 5044 §7.1.2: the initiator's FPDU comes first */
		post_op(&cl, q, T_SEND, 0, 0, 0);
		uiw_tool_get_wcs(cl.cq, &wc, 1, -1, "client");
		check_wc(&cl, &wc);
		st->sent = 1;
		st->peer_posted = 1;
	}
	conn_attr = cl.qp[0].e.attr;
	(void)family;

	results = calloc((size_t)(o.nsizes + 1) * NTESTS, sizeof(*results));
	if (!results)
		die("out of memory");
	for (i = 0; i < o.nsizes && !uiw_tool_stop_signal(); i++) {
		for (t = 0; t < NTESTS; t++) {
			struct result *res = &results[nresults];

			if (!(o.tests & (1u << t)))
				continue;
			/* atomics move 8 octets: once, with the first size */
			if (is_atomic(t) && i > 0)
				continue;
			res->test = t;
			res->size = is_atomic(t) ? 8 : o.sizes[i];
			measure(t, res);
			nresults++;
			if (uiw_tool_stop_signal())
				break;
			if (o.out == 't' && isatty(2))
				fprintf(stderr, "  %s %zu done\n",
					test_names[t], res->size);
		}
	}

	ctl_send1(&cl.ctl, R_BYE, 0, 0);
	cl_expect(&r, R_BYE, "BYE");
	for (q = 0; q < o.nqp; q++) {
		check(uiw_cm_disconnect(cl.qp[q].e.id), "uiw_cm_disconnect");
		uiw_tool_wait_event(ch, UIW_CM_EVENT_DISCONNECTED, NULL);
	}
	close(cl.ctl.fd);
	for (q = 0; q < o.nqp; q++)
		uiw_tool_end_free(&cl.qp[q].e);
	cl.nqp = 0;
	check(uiw_cm_channel_destroy(ch), "uiw_cm_channel_destroy");
	side_free(&cl);
	/* Figures cut short are no figures. */
	uiw_tool_exit_if_stopped();

	if (o.out == 'c')
		print_csv();
	else if (o.out == 'j')
		print_json(where);
	else
		print_table(where);
	free(results);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Roles                                                              */

static void *server_thread(void *arg)
{
	int lfd = (int)(intptr_t)arg;
	struct ctl *c = calloc(1, sizeof(*c));

	if (!c)
		die("out of memory");
	c->fd = accept(lfd, NULL, NULL);
	if (c->fd < 0)
		die("server: accept: %s", strerror(errno));
	set_nodelay(c->fd);
	c->peer = "client";
	close(lfd);
	serve(c, true);
	close(c->fd);
	free(c);
	return NULL;
}

static int run_loopback(void)
{
	struct sockaddr_storage ss;
	pthread_t th;
	char where[64];
	int lfd, rc;

	memset(&ss, 0, sizeof(ss));
	if (o.family == AF_INET6) {
		ss.ss_family = AF_INET6;
		((struct sockaddr_in6 *)&ss)->sin6_addr = in6addr_loopback;
	} else {
		ss.ss_family = AF_INET;
		((struct sockaddr_in *)&ss)->sin_addr.s_addr =
			htonl(INADDR_LOOPBACK);
	}
	set_port(&ss, o.port);
	lfd = tcp_listen(&ss, ss_len(&ss), 1);
	set_port(&ss, sock_port(lfd));
	if (pthread_create(&th, NULL, server_thread, (void *)(intptr_t)lfd))
		die("pthread_create");
	snprintf(where, sizeof(where), "loopback %s",
		 o.family == AF_INET6 ? "::1" : "127.0.0.1");
	rc = run_client(&ss, where);
	pthread_join(th, NULL);
	return rc;
}

static int run_server(void)
{
	struct sockaddr_storage ss;
	struct ctl c;
	int lfd;

	memset(&ss, 0, sizeof(ss));
	if (o.bind) {
		resolve(o.bind, o.port, &ss);
	} else {
		ss.ss_family = AF_INET6;      /* both families */
		((struct sockaddr_in6 *)&ss)->sin6_addr = in6addr_any;
		set_port(&ss, o.port);
	}
	lfd = tcp_listen(&ss, ss_len(&ss), 1);
	printf("uiwarp-perf: server listening on port %u\n", sock_port(lfd));
	fflush(stdout);
	/* Until a client comes a signal ends the server at once; once one
	 * has, the session runs to its end (the client decides when), under
	 * the deadline of tool_util.h.  A client has come once its
	 * connection waits on the listener, accepted or not: when this
	 * thread wakes to both, the connection is served.  Which of the
	 * two it sees first says only how late it ran (on a busy machine,
	 * long after the client had connected and sent its HELLO). */
	for (;;) {
		struct pollfd pfd[2] = {
			{ .fd = lfd, .events = POLLIN },
			{ .fd = uiw_tool_stop_fd(), .events = POLLIN },
		};

		if (poll(pfd, 2, -1) < 0 && errno != EINTR)
			die("poll: %s", strerror(errno));
		if (pfd[0].revents)
			break;
		uiw_tool_exit_if_stopped();
	}
	memset(&c, 0, sizeof(c));
	c.fd = accept(lfd, NULL, NULL);
	if (c.fd < 0)
		die("accept: %s", strerror(errno));
	close(lfd);
	set_nodelay(c.fd);
	c.peer = "client";
	serve(&c, false);
	close(c.fd);
	/* A session that a signal came during, and that still ended in
	 * order before the deadline, is no success: the program was
	 * stopped, and says so as a stopped client does (run_client). */
	uiw_tool_exit_if_stopped();
	printf("uiwarp-perf: server done\n");
	return 0;
}

/* ------------------------------------------------------------------ */
/* Options                                                            */

static void usage(FILE *f, int rc) __attribute__((noreturn));
static void usage(FILE *f, int rc)
{
	fprintf(f,
"usage: uiwarp-perf -s [-p port] [--bind addr] [--udp-port N]\n"
"       uiwarp-perf -c host [options]\n"
"       uiwarp-perf --loopback [-6] [options]\n"
"Roles:\n"
"  -s, --server        serve one client, then exit (-p 0: any free port)\n"
"  -c, --client HOST   run the measurements against a server\n"
"  -l, --loopback      both ends in this process, over 127.0.0.1\n"
"  -6, --ipv6          loopback over ::1\n"
"  -p, --port N        control port (default %d; loopback: any)\n"
"      --bind ADDR     server: listen on this address only\n"
"Measurements:\n"
"  -t, --test LIST     write,read,send,write_imm,fetch_add,cmp_swap, or all\n"
"                      (default write)\n"
"      --bw            streaming bandwidth (default)\n"
"      --lat           ping-pong latency, half round trip\n"
"      --rate          message rate (default size 8, depth 64)\n"
"  -S, --size N        message size in octets (suffixes k, m; 1..16m;\n"
"                      default 65536, rate and lat: 8)\n"
"      --sweep A:B     powers of two from A to B\n"
"  -q, --qps N         QPs (1..%d; bw and rate)\n"
"  -d, --depth N       operations outstanding per QP (1..%d; default 16,\n"
"                      rate: 64; Reads and atomics: at most ORD)\n"
"  -D, --duration S    seconds per measurement (default: 2 for bw, rate)\n"
"  -n, --iters N       operations per QP instead (default for lat: 10000)\n"
"      --repeat N      run each figure N times (1..%d, with --tcp\n"
"                      alternating with raw TCP); report the median run\n"
"                      (with --tcp: the pair with the median ratio)\n"
"      --warmup N      lat: leave the first N ping-pongs out of the\n"
"                      statistics (default 100, at most half)\n"
"      --llp NAME      lower layer: tcp (default), sctp (DDP over SCTP, RFC\n"
"                      5043: the kernel's where it has SCTP, else usrsctp\n"
"                      over UDP), sctp-udp, sctp-kernel\n"
"      --udp-port N    SCTP over UDP: the server's UDP port (default: the\n"
"                      one the server was given, else 9899); -s: the UDP\n"
"                      port to receive on (default: the client's)\n"
"      --crc on|off    MPA CRC (default on)\n"
"      --markers on|off  MPA markers (default off)\n"
"      --align on|off  FPDU alignment with TCP segments (default: off to\n"
"                      this host without markers, else on)\n"
"      --poll          busy-poll the CQ\n"
"      --event         sleep on the CQ's fd (default)\n"
"      --tcp           raw TCP with the same sizes and pattern, interleaved\n"
"      --no-verify     skip the data check of bw and rate\n"
"Output:\n"
"      --csv, --json   instead of the table\n",
		DEFAULT_PORT, MAX_QPS, MAX_DEPTH, MAX_REPEAT);
	exit(rc);
}

enum { O_BW = 256, O_LAT, O_RATE, O_SWEEP, O_CRC, O_LLP, O_UDP_PORT, O_MARKERS, O_ALIGN, O_POLL,
       O_EVENT, O_TCP, O_NOVERIFY, O_CSV, O_JSON, O_BIND, O_WARMUP,
       O_REPEAT };

static void parse(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "server", no_argument, NULL, 's' },
		{ "client", required_argument, NULL, 'c' },
		{ "loopback", no_argument, NULL, 'l' },
		{ "ipv6", no_argument, NULL, '6' },
		{ "port", required_argument, NULL, 'p' },
		{ "bind", required_argument, NULL, O_BIND },
		{ "test", required_argument, NULL, 't' },
		{ "bw", no_argument, NULL, O_BW },
		{ "lat", no_argument, NULL, O_LAT },
		{ "rate", no_argument, NULL, O_RATE },
		{ "size", required_argument, NULL, 'S' },
		{ "sweep", required_argument, NULL, O_SWEEP },
		{ "qps", required_argument, NULL, 'q' },
		{ "depth", required_argument, NULL, 'd' },
		{ "duration", required_argument, NULL, 'D' },
		{ "iters", required_argument, NULL, 'n' },
		{ "warmup", required_argument, NULL, O_WARMUP },
		{ "repeat", required_argument, NULL, O_REPEAT },
		{ "crc", required_argument, NULL, O_CRC },
		{ "llp", required_argument, NULL, O_LLP },
		{ "udp-port", required_argument, NULL, O_UDP_PORT },
		{ "markers", required_argument, NULL, O_MARKERS },
		{ "align", required_argument, NULL, O_ALIGN },
		{ "poll", no_argument, NULL, O_POLL },
		{ "event", no_argument, NULL, O_EVENT },
		{ "tcp", no_argument, NULL, O_TCP },
		{ "no-verify", no_argument, NULL, O_NOVERIFY },
		{ "csv", no_argument, NULL, O_CSV },
		{ "json", no_argument, NULL, O_JSON },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	bool port_set = false, depth_set = false, size_set = false;
	bool llp_set = false;
	char *tok, *save;
	int opt, t, v;

	while ((opt = getopt_long(argc, argv, "sc:l6p:t:S:q:d:D:n:h", lo,
				  NULL)) != -1) {
		switch (opt) {
		case 's':
		case 'l':
			if (o.role && o.role != opt)
				bad("give one of -s, -c HOST, --loopback");
			o.role = opt;
			break;
		case 'c':
			if (o.role && o.role != 'c')
				bad("give one of -s, -c HOST, --loopback");
			o.role = 'c';
			o.host = optarg;
			break;
		case '6':
			o.family = AF_INET6;
			break;
		case 'p':
			o.port = (unsigned)parse_int(optarg, 0, 65535, "port");
			port_set = true;
			break;
		case O_BIND:
			o.bind = optarg;
			break;
		case 't':
			o.tests = 0;
			for (tok = strtok_r(optarg, ",", &save); tok;
			     tok = strtok_r(NULL, ",", &save)) {
				if (!strcmp(tok, "all")) {
					o.tests = (1u << NTESTS) - 1;
					continue;
				}
				for (t = 0; t < NTESTS; t++)
					if (!strcmp(tok, test_names[t]))
						break;
				if (t == NTESTS)
					bad("unknown test '%s': write, read, "
					    "send, write_imm, fetch_add, "
					    "cmp_swap or all", tok);
				o.tests |= 1u << t;
			}
			if (!o.tests)
				bad("no test given to -t");
			break;
		case O_BW:
			o.mode = M_BW;
			break;
		case O_LAT:
			o.mode = M_LAT;
			break;
		case O_RATE:
			o.mode = M_RATE;
			break;
		case 'S':
			o.sizes[0] = uiw_tool_arg_size(optarg, 1, MAX_SIZE,
						       "size");
			o.nsizes = 1;
			size_set = true;
			break;
		case O_SWEEP: {
			char *colon = strchr(optarg, ':');
			size_t a, b;

			if (!colon)
				bad("bad sweep '%s': give FROM:TO, e.g. "
				    "8:16m", optarg);
			*colon = 0;
			if (uiw_tool_parse_size(optarg, 1, MAX_SIZE, &a) ||
			    uiw_tool_parse_size(colon + 1, 1, MAX_SIZE, &b) ||
			    a > b || (a & (a - 1)))
				bad("bad sweep '%s:%s': FROM and TO from 1 to "
				    "16m, FROM a power of two, FROM <= TO",
				    optarg, colon + 1);
			o.nsizes = 0;
			for (; a <= b; a *= 2)
				o.sizes[o.nsizes++] = a;
			size_set = true;
			break;
		}
		case 'q':
			o.nqp = (int)parse_int(optarg, 1, MAX_QPS,
					       "number of QPs");
			break;
		case 'd':
			o.depth = (int)parse_int(optarg, 1, MAX_DEPTH, "depth");
			depth_set = true;
			break;
		case 'D':
			o.duration = uiw_tool_arg_secs(optarg, 3600,
						       "duration");
			break;
		case 'n':
			o.iters = (uint64_t)parse_int(optarg, 1, 1000000000L,
						      "iteration count");
			break;
		case O_REPEAT:
			o.repeat = (int)parse_int(optarg, 1, MAX_REPEAT,
						  "repeat count");
			break;
		case O_WARMUP:
			o.warmup = (uint64_t)parse_int(optarg, 0, 1000000000L,
						       "warm-up count");
			break;
		case O_LLP: {
			enum uiw_llp_kind k;

			if (uiw_tool_parse_llp(optarg, &k))
				bad("--llp takes tcp, sctp, sctp-udp or "
				    "sctp-kernel, not %s", optarg);
			o.llp = (int)k;
			llp_set = true;
			break;
		}
		case O_UDP_PORT:
			o.udp_port = (unsigned)uiw_tool_arg_long(optarg, 1, 65535,
							       "--udp-port");
			break;
		case O_CRC:
		case O_MARKERS:
		case O_ALIGN:
			v = uiw_tool_arg_onoff(optarg, opt == O_CRC ? "--crc" :
					       opt == O_MARKERS ? "--markers" :
					       "--align");
			if (opt == O_CRC)
				o.crc = v;
			else if (opt == O_MARKERS)
				o.markers = v;
			else
				o.align = v;
			break;
		case O_POLL:
			o.event = 0;
			break;
		case O_EVENT:
			o.event = 1;
			break;
		case O_TCP:
			o.tcp = 1;
			break;
		case O_NOVERIFY:
			o.verify = 0;
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
	if (!o.role)
		bad("give one of -s (server), -c HOST (client), --loopback");
	if (o.role == 's' && llp_set)
		bad("--llp is the client's choice: the server listens on the "
		    "lower layer the client asks for");
	if (o.role == 's')
		return;
	if (!o.tests)
		o.tests = 1u << T_WRITE;
	if (!size_set) {
		o.sizes[0] = o.mode == M_BW ? 65536 : 8;
		o.nsizes = 1;
	}
	if (!depth_set)
		o.depth = o.mode == M_RATE ? 64 : 16;
	if (o.duration > 0 && o.iters)
		bad("give -D or -n, not both");
	if (!o.duration && !o.iters) {
		if (o.mode == M_LAT)
			o.iters = 10000;
		else
			o.duration = 2;
	}
	if (o.mode == M_LAT && o.nqp > 1)
		bad("latency tests use one QP: -q 1");
	if (o.role == 'c' && !o.port)
		bad("the client needs the server's port: -p N");
	if (o.role == 'l' && !port_set)
		o.port = 0;
}

int main(int argc, char **argv)
{
	struct sockaddr_storage ss;
	char where[300];

	uiw_tool_name = "uiwarp-perf";
	parse(argc, argv);
	/* Before any thread starts: they inherit the signal mask. */
	uiw_tool_signals_init("peer did not answer");
	if (o.role == 's')
		return run_server();
	if (o.role == 'l')
		return run_loopback();
	resolve(o.host, o.port, &ss);
	snprintf(where, sizeof(where), "server %s", o.host);
	return run_client(&ss, where);
}
