/*
 * The baseline of DDP over SCTP (RFC 5043): what usrsctp alone moves
 * between two processes over 127.0.0.1, with no DDP or RDMAP code, along
 * the path uiwarp's usrsctp backend (src/llp/sctp_usr.c) takes, so that
 * uiwarp's figures over SCTP have one of the same run to be set against
 * (bench/sctp.sh).
 *
 * The path.  usrsctp runs in AF_CONN mode without threads of its own
 * (usrsctp_init_nothreads).  Every SCTP packet it makes is the payload
 * of one UDP datagram (RFC 6951 §5) on a socket of ours: the server's
 * on a known port (9899 by default), the client's on an ephemeral one.
 * One association, made with equal stream counts each way (RFC 5043
 * §8), SCTP_NODELAY on, and the same path MTU at both ends, set through
 * SCTP_PEER_ADDR_PARAMS with path MTU discovery off.  usrsctp counts
 * that MTU without the 12-octet common header of an AF_CONN packet:
 * --mtu 1200 makes packets of up to 1212 octets, in datagrams of 1240
 * with the UDP and IPv4 headers.
 *
 * The threads, as in the backend.  A progress thread makes every
 * usrsctp call: it polls the UDP socket, an eventfd the main thread
 * writes when it has posted work, and the stop eventfd; hands each
 * datagram to usrsctp_conninput; calls usrsctp_handle_timers every
 * 10 ms with the time that really passed; and sends what was posted.
 * usrsctp's callbacks (a message, room in the send buffer, the
 * association's state) only note what happened or count it: the
 * progress thread acts on it after the call that made them returns,
 * never from inside one.  The main thread is the application: it posts
 * messages into a ring and waits for counters the progress thread
 * advances, asleep on an eventfd of its own (--poll: it spins, yielding
 * the CPU after each look, as uiwarp-perf --poll does).
 *
 * The traffic, as a DDP sender makes it.  A message of S octets goes
 * out as segments of at most maxseg - 2 octets of payload (maxseg: what
 * SCTP_MAXSEG reports, the largest user message that travels in one
 * DATA chunk), each behind a 2-octet sequence number, each one
 * unordered user message (RFC 5043 §10) with PPID 16, DDP Segment
 * (§5.2), given to usrsctp_sendv; a message of up to maxseg - 2 octets
 * is one segment.  A message's segments go on one stream; --streams-used
 * N (--qps N) sends message i on stream i mod N.  The receiver places
 * each segment's payload at its offset in a buffer of S octets, as DDP
 * places a tagged segment, and counts the octets.  Octets counted are
 * payload octets, the sequence numbers left out, so that a figure
 * compares with uiwarp moving S octets by RDMA Write.  A full send
 * buffer (EWOULDBLOCK) holds the sending until usrsctp's send callback
 * reports a quarter of the buffer free (the socket's sb_threshold); the
 * 10 ms tick tries again too.  The program's own control messages
 * (begin, ready, end, done) go ordered on stream 0 with PPID 0.
 *
 * Tests, run by the client for each size:
 *   bw   the client keeps --depth messages posted and not yet taken by
 *        usrsctp, for --secs seconds or --iters messages, then tells
 *        the server how many octets it sent; the clock stops when the
 *        server says it has them all.  MB/s: 10^6 payload octets per
 *        second.
 *   lat  ping-pong of one message at a time, each side answering once
 *        the whole message is there; half the round trip in µs, mean,
 *        median, p99 and minimum, after a warm-up of a tenth of the
 *        ping-pongs (at most 100).
 * The server serves one association, every test the client asks for,
 * and ends when the client shuts the association down.
 *
 * Output, one line per figure, key=value:
 *   info role=client mtu=1200 maxseg=... sctp_sndbuf=... ...  (once up)
 *   test=bw size=65536 bw_MBps=... msgs=... bytes=... secs=... ...
 *   test=lat size=8 lat_mean_us=... lat_p50_us=... lat_p99_us=... ...
 *   server test=bw size=65536 recv_bytes=... recv_segs=...
 * and, for a server on --port 0, "listening udp_port=N" first.
 *
 * SIGINT or SIGTERM ends the program within 2 s whatever the peer does:
 * the association is aborted and the status is 128 + the signal.
 *
 * usage: sctpraw -s [options]          server
 *        sctpraw [options] HOST        client
 * (sctpraw -h lists the options; a benchmark: it never fails for being
 * slow)
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <usrsctp.h>

#define PPID_DDP      16u      /* RFC 5043 §5.2: DDP Segment */
#define PPID_CTL      0u       /* this program's control messages */
#define ADAPT_DDP     1u       /* RFC 5043 §5.1: Adaptation Code Point */
#define SEQ_LEN       2        /* sequence number before each segment */
#define TICK_MS       10       /* usrsctp_handle_timers period */
#define UDP_BUDGET    64       /* datagrams per round before sends */
#define SEG_BUDGET    256      /* segments per round before input */
#define POST_RING     1024     /* main -> progress, a power of 2 */
#define CTL_RING      16       /* control messages received */
#define CTL_LEN       32
#define MAX_DGRAM     65536
#define MAX_SIZES     64
#define MAX_SIZE      (64u << 20)
#define STOP_GRACE_S  2
#define UP_TIMEOUT_S  10.0     /* client: association up */
#define REPLY_TIMEOUT_S 30.0   /* a control reply, the last octets */
#define DOWN_TIMEOUT_S 2.0     /* the orderly end */

enum test { T_BW = 1, T_LAT = 2 };
enum op { OP_BEGIN = 1, OP_READY, OP_END, OP_DONE };
enum post_kind { P_DATA = 1, P_CTL, P_TARGET, P_SHUTDOWN };
enum state { S_SETUP, S_UP, S_DOWN };
enum wait_rc { WAIT_OK, WAIT_TIMEOUT, WAIT_DOWN, WAIT_STOP, WAIT_FAIL };

/* ------------------------------------------------------------------ */
/* Options */

static struct {
	bool server, poll, crc;
	const char *host, *bind;
	const char *port;           /* UDP */
	uint16_t sctp_port;
	uint32_t mtu;
	uint16_t streams, streams_used;
	enum test test;
	size_t sizes[MAX_SIZES];
	int nsizes;
	double secs;
	long iters;
	int depth;
	int udp_buf, sctp_buf;
} opt = {
	.bind = "127.0.0.1", .port = "9899", .sctp_port = 5001,
	.mtu = 1200, .streams = 256, .streams_used = 1, .test = T_BW,
	.secs = 2, .depth = 16, .crc = true, .udp_buf = 4 << 20,
};

/* ------------------------------------------------------------------ */
/* What the two threads share */

struct post {
	uint8_t kind;
	uint16_t sid;
	uint32_t len;               /* P_DATA: octets; P_TARGET: size */
	uint32_t segpay;            /* P_TARGET: the peer's segment payload */
	uint8_t *buf;               /* P_DATA: source; P_TARGET: target */
	uint8_t ctl[CTL_LEN];
};

struct info {
	uint32_t maxseg, pathmtu, in_streams, out_streams;
	int sndbuf, rcvbuf, udp_sndbuf, udp_rcvbuf;
	uint16_t udp_port;
};

static struct post ring[POST_RING];
static atomic_uint post_head, post_tail;   /* progress, main advance */
static uint8_t ctl_in[CTL_RING][CTL_LEN];
static atomic_uint ctl_head, ctl_tail;     /* main, progress advance */
static atomic_uint_fast64_t sent_msgs, recv_bytes, recv_segs;
static atomic_uint_fast64_t stat_rtx, stat_pkt_max;
static atomic_int state, down_err;
static atomic_int prog_sleeping, main_waiting, quit;
static atomic_int listening;  /* server: UDP bound, udp_port known */
static char fail_msg[256];
static atomic_int failed;
static struct info info;      /* written before state becomes S_UP */
static int prog_efd, main_efd, stop_efd;
static atomic_int stop_sig;

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static uint64_t now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

static void efd_kick(int fd)
{
	uint64_t one = 1;

	(void)!write(fd, &one, sizeof(one));
}

static void efd_drain(int fd)
{
	uint64_t v;

	(void)!read(fd, &v, sizeof(v));
}

static void finish(int status) __attribute__((noreturn));

/* "sctpraw: <message><tail>" on stderr. */
static void vsay(const char *fmt, va_list ap, const char *tail)
{
	fputs("sctpraw: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputs(tail, stderr);
}

/* main's end on an error: once the progress thread runs, through
 * finish(), which aborts the association so that the peer ends too. */
static void die(const char *fmt, ...)
	__attribute__((noreturn, format(printf, 1, 2)));
static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsay(fmt, ap, "\n");
	va_end(ap);
	atomic_store(&failed, 1);
	finish(1);
}

/* The progress thread gives up: main says why and ends. */
static void prog_fail(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));
static void prog_fail(const char *fmt, ...)
{
	va_list ap;

	if (atomic_load(&failed))
		return;
	va_start(ap, fmt);
	vsnprintf(fail_msg, sizeof(fail_msg), fmt, ap);
	va_end(ap);
	atomic_store(&failed, 1);
	efd_kick(main_efd);
}

/* ------------------------------------------------------------------ */
/* Control messages: op, test, then three 64-bit values, big-endian. */

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
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

struct ctl {
	uint32_t op, test;
	uint64_t a, b, c;
};

static void ctl_pack(uint8_t *p, const struct ctl *c)
{
	memset(p, 0, CTL_LEN);
	put32(p, c->op);
	put32(p + 4, c->test);
	put64(p + 8, c->a);
	put64(p + 16, c->b);
	put64(p + 24, c->c);
}

static void ctl_unpack(const uint8_t *p, struct ctl *c)
{
	c->op = get32(p);
	c->test = get32(p + 4);
	c->a = get64(p + 8);
	c->b = get64(p + 16);
	c->c = get64(p + 24);
}

/* ------------------------------------------------------------------ */
/* The progress thread: everything usrsctp */

/* The AF_CONN address usrsctp knows the peer by: our UDP socket and,
 * on the server, where the client's datagrams come from. */
static struct conn {
	int fd;
	bool connected;             /* the client's socket is connect()ed */
	struct sockaddr_storage sa;
	socklen_t salen;            /* 0: no datagram from a client yet */
} peer = { .fd = -1 };

static struct {
	struct socket *lsock, *sock;
	bool blocked;               /* sendv said EWOULDBLOCK */
	/* what the callbacks noted, acted on after the call returns */
	bool cb_up, cb_down, cb_writable, news;
	int cb_err;
	uint32_t segpay;            /* our segments' payload */
	uint32_t cur_seg;           /* of the message at post_head */
	uint8_t *stage;             /* a segment being sent */
	uint8_t *tgt;               /* placement of received segments */
	uint32_t tgt_size, tgt_segpay;
	uint64_t pkt_max;
	uint64_t bytes, segs;       /* received, mirrored in the atomics */
} P;

static int conn_output(void *addr, void *buf, size_t len, uint8_t tos,
		       uint8_t set_df)
{
	struct conn *c = addr;

	if (len > P.pkt_max)
		P.pkt_max = len;
	/* A datagram the kernel does not take is a loss, which SCTP
	 * repairs (RFC 9260 §6.3); usrsctp is told nothing of it, as
	 * nothing would tell it of a loss on the path. */
	if (c->connected)
		(void)!send(c->fd, buf, len, MSG_DONTWAIT);
	else if (c->salen)
		(void)!sendto(c->fd, buf, len, MSG_DONTWAIT,
			      (struct sockaddr *)&c->sa, c->salen);
	return 0;
}

static void note_notification(const void *data, size_t len)
{
	const union sctp_notification *n = data;

	if (len < sizeof(n->sn_header) ||
	    n->sn_header.sn_type != SCTP_ASSOC_CHANGE ||
	    len < sizeof(n->sn_assoc_change))
		return;
	switch (n->sn_assoc_change.sac_state) {
	case SCTP_COMM_UP:
		P.cb_up = true;
		break;
	case SCTP_SHUTDOWN_COMP:
		P.cb_down = true;
		break;
	case SCTP_COMM_LOST:
		P.cb_down = true;
		P.cb_err = ECONNRESET;
		break;
	case SCTP_CANT_STR_ASSOC:
		P.cb_down = true;
		P.cb_err = ECONNREFUSED;
		break;
	}
}

/* A segment: placed at its offset in the target (when it fits) and
 * counted. */
static void note_segment(const uint8_t *d, size_t len)
{
	size_t pay = len - SEQ_LEN;
	uint64_t off = (uint64_t)(d[0] << 8 | d[1]) * P.tgt_segpay;

	if (P.tgt && off + pay <= P.tgt_size)
		memcpy(P.tgt + off, d + SEQ_LEN, pay);
	P.bytes += pay;
	P.segs++;
	P.news = true;
}

static void note_ctl(const uint8_t *d)
{
	unsigned t = atomic_load_explicit(&ctl_tail, memory_order_relaxed);

	if (t - atomic_load_explicit(&ctl_head, memory_order_acquire) >=
	    CTL_RING) {
		prog_fail("more control messages than the program asks for");
		return;
	}
	memcpy(ctl_in[t % CTL_RING], d, CTL_LEN);
	atomic_store_explicit(&ctl_tail, t + 1, memory_order_release);
	P.news = true;
}

/* usrsctp's receive callback: a whole message (ours never exceed one
 * chunk), a notification, or NULL when the association is gone.  It
 * runs inside usrsctp_conninput (or _handle_timers); no usrsctp call
 * here. */
static int on_receive(struct socket *so, union sctp_sockstore addr,
		      void *data, size_t len, struct sctp_rcvinfo rcv,
		      int flags, void *ulp)
{
	uint32_t ppid = ntohl(rcv.rcv_ppid);

	if (data == NULL) {
		P.cb_down = true;
		return 1;
	}
	if (flags & MSG_NOTIFICATION)
		note_notification(data, len);
	else if (ppid == PPID_DDP && len >= SEQ_LEN)
		note_segment(data, len);
	else if (ppid == PPID_CTL && len == CTL_LEN)
		note_ctl(data);
	free(data);
	return 1;
}

/* usrsctp's send callback: a quarter of the send buffer is free. */
static int on_send_space(struct socket *so, uint32_t sb_free, void *ulp)
{
	P.cb_writable = true;
	return 1;
}

/* The path MTU, path MTU discovery off, for the socket's future
 * associations and its present one (the address a wildcard: every path,
 * of which there is one). */
static void set_pmtu(struct socket *s)
{
	struct sctp_paddrparams pp = {
		.spp_assoc_id = SCTP_FUTURE_ASSOC,
		.spp_pathmtu = opt.mtu,
		.spp_flags = SPP_PMTUD_DISABLE,
	};
	struct sockaddr_conn any = { .sconn_family = AF_CONN };

	memcpy(&pp.spp_address, &any, sizeof(any));
	if (usrsctp_setsockopt(s, IPPROTO_SCTP, SCTP_PEER_ADDR_PARAMS, &pp,
			       sizeof(pp)) < 0)
		prog_fail("setsockopt SCTP_PEER_ADDR_PARAMS: %s",
			  strerror(errno));
}

static void sopt(struct socket *s, int level, int name, const void *v,
		 socklen_t len, const char *what)
{
	if (usrsctp_setsockopt(s, level, name, v, len) < 0)
		prog_fail("setsockopt %s: %s", what, strerror(errno));
}

/* What every socket of ours is set to before it has an association
 * (an accepted one inherits it from the listener). */
static void sock_setup(struct socket *s)
{
	const int on = 1;
	struct sctp_initmsg init = {
		/* equal stream counts each way (RFC 5043 §8) */
		.sinit_num_ostreams = opt.streams,
		.sinit_max_instreams = opt.streams,
	};
	struct sctp_setadaptation ad = { .ssb_adaptation_ind = ADAPT_DDP };
	static const uint16_t ev[] = { SCTP_ASSOC_CHANGE };
	size_t i;

	if (usrsctp_set_non_blocking(s, 1) < 0)
		prog_fail("usrsctp_set_non_blocking: %s", strerror(errno));
	sopt(s, IPPROTO_SCTP, SCTP_NODELAY, &on, sizeof(on), "SCTP_NODELAY");
	sopt(s, IPPROTO_SCTP, SCTP_INITMSG, &init, sizeof(init),
	     "SCTP_INITMSG");
	/* the DDP code point in INIT and INIT ACK (RFC 5043 §5.1), so
	 * that the handshake is the one uiwarp makes */
	sopt(s, IPPROTO_SCTP, SCTP_ADAPTATION_LAYER, &ad, sizeof(ad),
	     "SCTP_ADAPTATION_LAYER");
	set_pmtu(s);
	for (i = 0; i < sizeof(ev) / sizeof(ev[0]); i++) {
		struct sctp_event e = {
			.se_assoc_id = SCTP_FUTURE_ASSOC,
			.se_type = ev[i],
			.se_on = 1,
		};

		sopt(s, IPPROTO_SCTP, SCTP_EVENT, &e, sizeof(e), "SCTP_EVENT");
	}
	if (opt.sctp_buf) {
		sopt(s, SOL_SOCKET, SO_SNDBUF, &opt.sctp_buf,
		     sizeof(opt.sctp_buf), "SO_SNDBUF");
		sopt(s, SOL_SOCKET, SO_RCVBUF, &opt.sctp_buf,
		     sizeof(opt.sctp_buf), "SO_RCVBUF");
	}
}

static struct socket *sock_new(void)
{
	uint32_t buf = opt.sctp_buf ? (uint32_t)opt.sctp_buf : 256u << 10;
	struct socket *s = usrsctp_socket(AF_CONN, SOCK_STREAM, IPPROTO_SCTP,
					  on_receive, on_send_space, buf / 4,
					  NULL);

	if (s == NULL)
		prog_fail("usrsctp_socket: %s", strerror(errno));
	else
		sock_setup(s);
	return s;
}

/* The association is up: the path MTU once more on the association
 * itself (whatever it inherited), then what it became. */
static void assoc_up(void)
{
	struct sctp_status st;
	struct sctp_assoc_value av = { 0 };
	socklen_t len;
	int v;

	set_pmtu(P.sock);
	len = sizeof(av);
	if (usrsctp_getsockopt(P.sock, IPPROTO_SCTP, SCTP_MAXSEG, &av,
			       &len) < 0 || av.assoc_value <= SEQ_LEN) {
		prog_fail("SCTP_MAXSEG: %s", strerror(errno));
		return;
	}
	info.maxseg = av.assoc_value;
	memset(&st, 0, sizeof(st));
	len = sizeof(st);
	if (usrsctp_getsockopt(P.sock, IPPROTO_SCTP, SCTP_STATUS, &st,
			       &len) == 0) {
		info.in_streams = st.sstat_instrms;
		info.out_streams = st.sstat_outstrms;
		info.pathmtu = st.sstat_primary.spinfo_mtu;
	}
	len = sizeof(v);
	if (usrsctp_getsockopt(P.sock, SOL_SOCKET, SO_SNDBUF, &v, &len) == 0)
		info.sndbuf = v;
	len = sizeof(v);
	if (usrsctp_getsockopt(P.sock, SOL_SOCKET, SO_RCVBUF, &v, &len) == 0)
		info.rcvbuf = v;
	if (opt.streams_used > info.out_streams) {
		prog_fail("%u streams asked to be used, the association has %u",
			  opt.streams_used, info.out_streams);
		return;
	}
	P.segpay = info.maxseg - SEQ_LEN;
	P.stage = malloc(info.maxseg);
	if (P.stage == NULL) {
		prog_fail("out of memory");
		return;
	}
	atomic_store(&state, S_UP);
	P.news = true;
}

/* One user message; 0, or -EAGAIN when the send buffer is full. */
static int send_msg(uint16_t sid, uint32_t ppid, bool unordered,
		    const void *buf, size_t len)
{
	struct sctp_sndinfo si = {
		.snd_sid = sid,
		.snd_flags = unordered ? SCTP_UNORDERED : 0,
		.snd_ppid = htonl(ppid),
	};

	if (usrsctp_sendv(P.sock, buf, len, NULL, 0, &si, sizeof(si),
			  SCTP_SENDV_SNDINFO, 0) >= 0)
		return 0;
	if (errno == EWOULDBLOCK || errno == EAGAIN || errno == ENOBUFS)
		return -EAGAIN;
	prog_fail("usrsctp_sendv: %s", strerror(errno));
	return -errno;
}

/* Sends what main posted, segment by segment, until the ring is empty,
 * the send buffer is full or the round's budget is spent.  Returns
 * true when there is more it could send now. */
static bool pump(void)
{
	unsigned head = atomic_load_explicit(&post_head, memory_order_relaxed);
	unsigned tail = atomic_load_explicit(&post_tail, memory_order_acquire);
	int budget = SEG_BUDGET;

	while (head != tail && !P.blocked && budget > 0 &&
	       !atomic_load_explicit(&failed, memory_order_relaxed)) {
		struct post *p = &ring[head % POST_RING];
		int rc = 0;

		switch (p->kind) {
		case P_TARGET:
			P.tgt = p->buf;
			P.tgt_size = p->len;
			P.tgt_segpay = p->segpay;
			break;
		case P_CTL:
			rc = send_msg(0, PPID_CTL, false, p->ctl, CTL_LEN);
			budget--;
			break;
		case P_SHUTDOWN:
			/* SHUTDOWN once what was sent is acknowledged;
			 * SHUTDOWN_COMP ends the association */
			if (usrsctp_shutdown(P.sock, SHUT_WR) < 0)
				P.cb_down = true;
			break;
		case P_DATA:
			while (budget > 0) {
				uint64_t off = (uint64_t)P.cur_seg * P.segpay;
				uint32_t n = p->len - off < P.segpay ?
					(uint32_t)(p->len - off) : P.segpay;

				P.stage[0] = (uint8_t)(P.cur_seg >> 8);
				P.stage[1] = (uint8_t)P.cur_seg;
				memcpy(P.stage + SEQ_LEN, p->buf + off, n);
				rc = send_msg(p->sid, PPID_DDP, true, P.stage,
					      SEQ_LEN + n);
				if (rc < 0)
					break;
				budget--;
				P.cur_seg++;
				if (off + n >= p->len)
					break;
			}
			if (rc == 0 &&
			    (uint64_t)P.cur_seg * P.segpay < p->len)
				return true;  /* budget spent mid-message */
			if (rc == 0) {
				P.cur_seg = 0;
				atomic_fetch_add_explicit(&sent_msgs, 1,
							  memory_order_release);
				P.news = true;
			}
			break;
		}
		if (rc == -EAGAIN) {
			P.blocked = true;
			break;
		}
		if (rc < 0)
			break;
		head++;
		atomic_store_explicit(&post_head, head, memory_order_release);
	}
	return head != tail && !P.blocked && budget == 0;
}

/* Datagrams in, each to usrsctp_conninput; returns how many. */
static int drain_udp(void)
{
	static uint8_t buf[MAX_DGRAM];
	int n;

	for (n = 0; n < UDP_BUDGET; n++) {
		struct sockaddr_storage from;
		socklen_t flen = sizeof(from);
		ssize_t r = recvfrom(peer.fd, buf, sizeof(buf), MSG_DONTWAIT,
				     (struct sockaddr *)&from, &flen);

		if (r < 0)
			break;
		if (!peer.connected) {
			/* the server answers where the first client's
			 * datagrams come from (RFC 6951 §5), and ignores
			 * any other sender */
			if (peer.salen == 0) {
				memcpy(&peer.sa, &from, flen);
				peer.salen = flen;
			} else if (flen != peer.salen ||
				   memcmp(&from, &peer.sa, flen) != 0) {
				continue;
			}
		}
		usrsctp_conninput(&peer, buf, (size_t)r, 0);
	}
	return n;
}

/* After input, timers or sends: act on what the callbacks noted. */
static void after_calls(void)
{
	if (P.sock == NULL && P.lsock != NULL) {
		P.sock = usrsctp_accept(P.lsock, NULL, NULL);
		if (P.sock != NULL) {
			P.cb_up = true;
			/* what the listener had, set on the association's
			 * socket too */
			sock_setup(P.sock);
		}
	}
	if (P.cb_up && P.sock != NULL && atomic_load(&state) == S_SETUP)
		assoc_up();
	P.cb_up = false;
	if (P.cb_writable) {
		P.cb_writable = false;
		P.blocked = false;
	}
	if (P.cb_down && atomic_load(&state) != S_DOWN) {
		atomic_store(&down_err, P.cb_err);
		atomic_store(&state, S_DOWN);
		P.news = true;
	}
	if (P.news) {
		P.news = false;
		atomic_store_explicit(&stat_pkt_max, P.pkt_max,
				      memory_order_relaxed);
		atomic_store_explicit(&recv_segs, P.segs, memory_order_relaxed);
		atomic_store_explicit(&recv_bytes, P.bytes,
				      memory_order_release);
		/* the counters before the look at main_waiting, as main
		 * sets main_waiting before it looks at the counters */
		atomic_thread_fence(memory_order_seq_cst);
		if (atomic_exchange(&main_waiting, 0))
			efd_kick(main_efd);
	}
}

static int udp_socket(const struct addrinfo *ai, bool server)
{
	int fd = socket(ai->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	if (fd < 0) {
		prog_fail("socket: %s", strerror(errno));
		return -1;
	}
	/* room for a window of small datagrams: a receive buffer that
	 * overflows is loss, and SCTP's congestion control backs off */
	(void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &opt.udp_buf,
			 sizeof(opt.udp_buf));
	(void)setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &opt.udp_buf,
			 sizeof(opt.udp_buf));
	if (server) {
		if (bind(fd, ai->ai_addr, ai->ai_addrlen) < 0) {
			prog_fail("bind UDP %s port %s: %s", opt.bind, opt.port,
				  strerror(errno));
			close(fd);
			return -1;
		}
	} else if (connect(fd, ai->ai_addr, ai->ai_addrlen) < 0) {
		prog_fail("connect UDP %s port %s: %s", opt.host, opt.port,
			  strerror(errno));
		close(fd);
		return -1;
	}
	if (getsockname(fd, (struct sockaddr *)&ss, &len) == 0)
		info.udp_port = ntohs(ss.ss_family == AF_INET6 ?
				      ((struct sockaddr_in6 *)&ss)->sin6_port :
				      ((struct sockaddr_in *)&ss)->sin_port);
	len = sizeof(info.udp_rcvbuf);
	(void)getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &info.udp_rcvbuf, &len);
	len = sizeof(info.udp_sndbuf);
	(void)getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &info.udp_sndbuf, &len);
	return fd;
}

static bool stack_start(void)
{
	struct addrinfo hints = {
		.ai_socktype = SOCK_DGRAM,
		.ai_flags = opt.server ? AI_PASSIVE | AI_NUMERICSERV :
					 AI_NUMERICSERV,
	};
	struct addrinfo *ai;
	struct sockaddr_conn sc = { .sconn_family = AF_CONN };
	int rc;

	rc = getaddrinfo(opt.server ? opt.bind : opt.host, opt.port, &hints,
			 &ai);
	if (rc != 0) {
		prog_fail("%s: %s", opt.server ? opt.bind : opt.host,
			  gai_strerror(rc));
		return false;
	}
	peer.fd = udp_socket(ai, opt.server);
	peer.connected = !opt.server;
	freeaddrinfo(ai);
	if (peer.fd < 0)
		return false;
	if (opt.server) {
		atomic_store(&listening, 1);
		efd_kick(main_efd);
	}

	usrsctp_init_nothreads(0, conn_output, NULL);
	/* --crc off: neither end computes nor checks the CRC32c (RFC
	 * 9260 §6.8), as with a checksum left to hardware */
	if (!opt.crc)
		usrsctp_enable_crc32c_offload();
	usrsctp_register_address(&peer);

	if (opt.server) {
		P.lsock = sock_new();
		if (P.lsock == NULL)
			return false;
		sc.sconn_port = htons(opt.sctp_port);
		sc.sconn_addr = &peer;
		if (usrsctp_bind(P.lsock, (struct sockaddr *)&sc,
				 sizeof(sc)) < 0 ||
		    usrsctp_listen(P.lsock, 1) < 0) {
			prog_fail("listen on SCTP port %u: %s", opt.sctp_port,
				  strerror(errno));
			return false;
		}
	} else {
		P.sock = sock_new();
		if (P.sock == NULL)
			return false;
		sc.sconn_port = 0;
		sc.sconn_addr = &peer;
		if (usrsctp_bind(P.sock, (struct sockaddr *)&sc,
				 sizeof(sc)) < 0) {
			prog_fail("usrsctp_bind: %s", strerror(errno));
			return false;
		}
		sc.sconn_port = htons(opt.sctp_port);
		if (usrsctp_connect(P.sock, (struct sockaddr *)&sc,
				    sizeof(sc)) < 0 &&
		    errno != EINPROGRESS && errno != EWOULDBLOCK) {
			prog_fail("usrsctp_connect: %s", strerror(errno));
			return false;
		}
	}
	return !atomic_load(&failed);
}

/* The end: an abort when a signal (or a failure) cut things short, so
 * that the peer learns at once; else the association is over already
 * or was never made. */
static void stack_stop(bool abort_it)
{
	if (P.sock != NULL) {
		if (abort_it && atomic_load(&state) != S_DOWN) {
			struct linger l = { .l_onoff = 1, .l_linger = 0 };

			(void)usrsctp_setsockopt(P.sock, SOL_SOCKET, SO_LINGER,
						 &l, sizeof(l));
		}
		usrsctp_close(P.sock);
		P.sock = NULL;
	}
	if (P.lsock != NULL) {
		usrsctp_close(P.lsock);
		P.lsock = NULL;
	}
	usrsctp_deregister_address(&peer);
	/* usrsctp_finish fails while an association still winds down;
	 * the process ends in a moment, so that is left to the exit */
	(void)usrsctp_finish();
	if (peer.fd >= 0)
		close(peer.fd);
	free(P.stage);
}

static void *progress(void *arg)
{
	uint64_t last = now_ms();
	struct sctpstat st;

	if (!stack_start()) {
		stack_stop(true);
		return NULL;
	}
	while (!atomic_load(&quit) && !atomic_load(&stop_sig) &&
	       !atomic_load(&failed)) {
		uint64_t t = now_ms();
		struct pollfd fds[3] = {
			{ .fd = peer.fd, .events = POLLIN },
			{ .fd = prog_efd, .events = POLLIN },
			{ .fd = stop_efd, .events = POLLIN },
		};
		bool more;
		int n, wait;

		if (t - last >= TICK_MS) {
			usrsctp_handle_timers((uint32_t)(t - last));
			last = t;
			/* a retry each tick besides the send callback */
			P.blocked = false;
			usrsctp_get_stat(&st);
			atomic_store(&stat_rtx, (uint64_t)st.sctps_sendretransdata +
					       st.sctps_sendfastretrans);
		}
		n = drain_udp();
		after_calls();
		if (atomic_load(&state) == S_UP) {
			more = pump();
			after_calls();
		} else {
			more = false;
		}
		if (n == UDP_BUDGET || more)
			continue;
		/* Sleep unless main posted meanwhile (it looks at
		 * prog_sleeping after it advances post_tail). */
		atomic_store(&prog_sleeping, 1);
		if (atomic_load(&post_tail) != atomic_load(&post_head) &&
		    !P.blocked && atomic_load(&state) == S_UP) {
			atomic_store(&prog_sleeping, 0);
			continue;
		}
		t = now_ms();
		wait = t - last >= TICK_MS ? 0 : (int)(TICK_MS - (t - last));
		if (poll(fds, 3, wait) > 0 && (fds[1].revents & POLLIN))
			efd_drain(prog_efd);
		atomic_store(&prog_sleeping, 0);
	}
	stack_stop(atomic_load(&stop_sig) || atomic_load(&failed));
	return NULL;
}

/* ------------------------------------------------------------------ */
/* The main thread: the application */

static void wake_progress(void)
{
	if (atomic_load(&prog_sleeping))
		efd_kick(prog_efd);
}

static void post(const struct post *p)
{
	unsigned t = atomic_load_explicit(&post_tail, memory_order_relaxed);

	ring[t % POST_RING] = *p;
	atomic_store(&post_tail, t + 1);
	wake_progress();
}

static bool ring_room(const void *arg)
{
	return atomic_load(&post_tail) - atomic_load(&post_head) <
	       POST_RING;
}

/* Waits until ready(arg) holds; with a timeout (<= 0: none). */
static enum wait_rc wait_for(bool (*ready)(const void *), const void *arg,
			     double timeout)
{
	double end = timeout > 0 ? now_s() + timeout : 0;

	for (;;) {
		struct pollfd fds[2] = {
			{ .fd = main_efd, .events = POLLIN },
			{ .fd = stop_efd, .events = POLLIN },
		};
		int ms = -1;

		if (ready(arg))
			return WAIT_OK;
		if (atomic_load(&stop_sig))
			return WAIT_STOP;
		if (atomic_load(&failed))
			return WAIT_FAIL;
		if (atomic_load(&state) == S_DOWN)
			return WAIT_DOWN;
		if (end > 0) {
			double left = end - now_s();

			if (left <= 0)
				return WAIT_TIMEOUT;
			ms = (int)(left * 1000) + 1;
		}
		if (opt.poll) {
			sched_yield();
			continue;
		}
		atomic_store(&main_waiting, 1);
		atomic_thread_fence(memory_order_seq_cst);
		if (ready(arg)) {
			atomic_store(&main_waiting, 0);
			return WAIT_OK;
		}
		if (ms < 0 || ms > 100)
			ms = 100;   /* a look at the clock now and then */
		if (poll(fds, 2, ms) > 0 && (fds[0].revents & POLLIN))
			efd_drain(main_efd);
		atomic_store(&main_waiting, 0);
	}
}

/* Ends the program after the wait did not end as it should. */
static void wait_failed(enum wait_rc rc, const char *what)
	__attribute__((noreturn));

static pthread_t prog_thread;
static bool prog_started;

static void finish(int status)
{
	if (prog_started) {
		atomic_store(&quit, 1);
		efd_kick(prog_efd);
		pthread_join(prog_thread, NULL);
	}
	if (atomic_load(&stop_sig)) {
		int sig = atomic_load(&stop_sig);

		fprintf(stderr, "sctpraw: stopped by %s\n",
			sig == SIGINT ? "SIGINT" : "SIGTERM");
		exit(128 + sig);
	}
	exit(status);
}

static void wait_failed(enum wait_rc rc, const char *what)
{
	switch (rc) {
	case WAIT_STOP:
		finish(1);
	case WAIT_FAIL:
		fprintf(stderr, "sctpraw: %s\n", fail_msg);
		break;
	case WAIT_DOWN:
		fprintf(stderr, "sctpraw: the association ended (%s) while "
			"waiting for %s\n",
			atomic_load(&down_err) ?
			strerror(atomic_load(&down_err)) : "shutdown", what);
		break;
	case WAIT_TIMEOUT:
		fprintf(stderr, "sctpraw: no %s in time\n", what);
		break;
	case WAIT_OK:
		break;
	}
	finish(1);
}

static bool is_up(const void *arg)
{
	return atomic_load(&state) == S_UP;
}

static bool is_listening(const void *arg)
{
	return atomic_load(&listening);
}

static bool ctl_ready(const void *arg)
{
	return atomic_load(&ctl_tail) != atomic_load(&ctl_head);
}

static bool is_down(const void *arg)
{
	return atomic_load(&state) == S_DOWN;
}

static void ctl_send(const struct ctl *c)
{
	struct post p = { .kind = P_CTL };
	enum wait_rc rc = wait_for(ring_room, NULL, REPLY_TIMEOUT_S);

	if (rc != WAIT_OK)
		wait_failed(rc, "room to post");
	ctl_pack(p.ctl, c);
	post(&p);
}

/* The next control message; op 0 when the association ended first (an
 * orderly end, for the server). */
static void ctl_recv(struct ctl *c, double timeout, const char *what)
{
	enum wait_rc rc = wait_for(ctl_ready, NULL, timeout);
	unsigned h;

	if (rc == WAIT_DOWN && opt.server && atomic_load(&down_err) == 0) {
		c->op = 0;
		return;
	}
	if (rc != WAIT_OK)
		wait_failed(rc, what);
	h = atomic_load(&ctl_head);
	ctl_unpack(ctl_in[h % CTL_RING], c);
	atomic_store(&ctl_head, h + 1);
}

static void post_target(uint8_t *buf, size_t size, uint32_t segpay)
{
	struct post p = { .kind = P_TARGET, .buf = buf,
			  .len = (uint32_t)size, .segpay = segpay };
	enum wait_rc rc = wait_for(ring_room, NULL, REPLY_TIMEOUT_S);

	if (rc != WAIT_OK)
		wait_failed(rc, "room to post");
	post(&p);
}

static uint8_t *alloc_fill(size_t n, uint32_t seed)
{
	uint8_t *p = malloc(n ? n : 1);
	size_t i;

	if (p == NULL)
		die("out of memory (%zu octets)", n);
	for (i = 0; i < n; i++) {
		seed ^= seed << 13;
		seed ^= seed >> 17;
		seed ^= seed << 5;
		p[i] = (uint8_t)seed;
	}
	return p;
}

static uint32_t segs_of(size_t size, uint32_t segpay)
{
	return size ? (uint32_t)((size + segpay - 1) / segpay) : 1;
}

/* Waits for recv_bytes to reach the value at arg. */
static bool bytes_reached(const void *arg)
{
	return atomic_load_explicit(&recv_bytes, memory_order_acquire) >=
	       *(const uint64_t *)arg;
}

struct send_room {
	uint64_t posted, base;
};

/* Room for one more message: fewer than depth posted and not yet
 * taken by usrsctp, and a free slot in the ring. */
static bool send_room(const void *arg)
{
	const struct send_room *r = arg;

	return r->posted - (atomic_load_explicit(&sent_msgs,
						 memory_order_acquire) -
			    r->base) < (uint64_t)opt.depth &&
	       ring_room(NULL);
}

static void print_info(const char *role)
{
	printf("info role=%s mtu=%u pathmtu=%u maxseg=%u segpay=%u "
	       "streams_in=%u streams_out=%u streams_used=%u sctp_sndbuf=%d "
	       "sctp_rcvbuf=%d udp_sndbuf=%d udp_rcvbuf=%d crc=%s mode=%s\n",
	       role, opt.mtu, info.pathmtu, info.maxseg, info.maxseg - SEQ_LEN,
	       info.in_streams, info.out_streams, opt.streams_used, info.sndbuf,
	       info.rcvbuf, info.udp_sndbuf, info.udp_rcvbuf,
	       opt.crc ? "on" : "off", opt.poll ? "poll" : "event");
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static uint8_t *client_tgt;

/* A point of the client: the test at one size. */
static void client_point(size_t size)
{
	uint32_t segpay = info.maxseg - SEQ_LEN, peer_segpay;
	int slots = opt.test == T_BW ? opt.depth : 1;
	uint8_t *src, *tgt;
	struct ctl c = { .op = OP_BEGIN, .test = opt.test, .a = size,
			 .b = segpay };
	uint64_t base_bytes, rtx0, posted = 0;
	double t0, t1;
	enum wait_rc rc;

	if (segs_of(size, segpay) > 65536)
		die("%zu octets take more than 65536 segments of %u", size,
		    segpay);
	/* as much source memory as the messages in flight (at most 64 MiB),
	 * as uiwarp-perf's slots */
	while (slots > 1 && (uint64_t)slots * size > (64u << 20))
		slots /= 2;
	src = alloc_fill((size_t)slots * size, 0x5c7a0001u + (uint32_t)size);
	tgt = alloc_fill(size, 1);
	base_bytes = atomic_load(&recv_bytes);
	rtx0 = atomic_load(&stat_rtx);

	ctl_send(&c);
	ctl_recv(&c, REPLY_TIMEOUT_S, "READY from the server");
	if (c.op != OP_READY)
		die("the server answered op %u to BEGIN", c.op);
	peer_segpay = (uint32_t)c.b;
	post_target(tgt, size, peer_segpay);

	if (opt.test == T_BW) {
		struct send_room room = { .base = atomic_load(&sent_msgs) };

		t0 = now_s();
		for (;;) {
			struct post p = { .kind = P_DATA, .len = (uint32_t)size };

			if (opt.iters > 0 ? room.posted >= (uint64_t)opt.iters :
			    now_s() - t0 >= opt.secs)
				break;
			rc = wait_for(send_room, &room, REPLY_TIMEOUT_S);
			if (rc != WAIT_OK)
				wait_failed(rc, "room in the send buffer");
			p.sid = (uint16_t)(room.posted % opt.streams_used);
			p.buf = src + (room.posted % (uint64_t)slots) * size;
			post(&p);
			room.posted++;
		}
		posted = room.posted;
		c = (struct ctl){ .op = OP_END, .test = opt.test,
				  .a = posted * size, .b = posted };
		ctl_send(&c);
		ctl_recv(&c, REPLY_TIMEOUT_S, "DONE from the server");
		t1 = now_s();
		if (c.op != OP_DONE)
			die("the server answered op %u to END", c.op);
		printf("test=bw size=%zu bw_MBps=%.1f msgs=%" PRIu64
		       " bytes=%" PRIu64 " secs=%.3f peer_bytes=%" PRIu64
		       " peer_segs=%" PRIu64 " depth=%d streams_used=%u mtu=%u"
		       " maxseg=%u rtx=%" PRIu64 " pkt_max=%" PRIu64 "\n",
		       size, (double)(posted * size) / (t1 - t0) / 1e6, posted,
		       posted * size, t1 - t0, c.a, c.b, opt.depth,
		       opt.streams_used, opt.mtu, info.maxseg,
		       (uint64_t)(atomic_load(&stat_rtx) - rtx0),
		       (uint64_t)atomic_load(&stat_pkt_max));
	} else {
		/* -D: as many ping-pongs as the time allows, up to 10^6 */
		long iters = opt.iters > 0 ? opt.iters : 1000000;
		long warm = iters / 10 < 100 ? iters / 10 : 100;
		double *lat = malloc(sizeof(*lat) * (size_t)iters);
		double sum = 0, tend = opt.iters > 0 ? 0 : now_s() + opt.secs;
		long i, n = 0;

		if (lat == NULL)
			die("out of memory");
		for (i = 0; i < warm + iters; i++) {
			struct post p = { .kind = P_DATA, .len = (uint32_t)size,
					  .buf = src,
					  .sid = (uint16_t)(i % opt.streams_used) };
			uint64_t want = base_bytes + (uint64_t)(i + 1) * size;

			t0 = now_s();
			post(&p);
			rc = wait_for(bytes_reached, &want, REPLY_TIMEOUT_S);
			if (rc != WAIT_OK)
				wait_failed(rc, "the answer of a ping");
			t1 = now_s();
			if (i >= warm) {
				lat[n] = (t1 - t0) * 1e6 / 2;
				sum += lat[n++];
			}
			if (tend > 0 && i >= warm && t1 >= tend)
				break;
		}
		posted = (uint64_t)i + (i < warm + iters ? 1 : 0);
		c = (struct ctl){ .op = OP_END, .test = opt.test,
				  .a = posted * size, .b = posted };
		ctl_send(&c);
		ctl_recv(&c, REPLY_TIMEOUT_S, "DONE from the server");
		if (c.op != OP_DONE)
			die("the server answered op %u to END", c.op);
		qsort(lat, (size_t)n, sizeof(*lat), cmp_double);
		printf("test=lat size=%zu iters=%ld lat_mean_us=%.2f "
		       "lat_p50_us=%.2f lat_p99_us=%.2f lat_min_us=%.2f "
		       "bytes=%" PRIu64 " peer_bytes=%" PRIu64
		       " recv_bytes=%" PRIu64 " mtu=%u maxseg=%u rtx=%" PRIu64
		       "\n", size, n, sum / (double)n, lat[(n - 1) / 2],
		       lat[(size_t)((double)(n - 1) * 0.99)], lat[0],
		       posted * size, c.a,
		       (uint64_t)(atomic_load(&recv_bytes) - base_bytes),
		       opt.mtu, info.maxseg,
		       (uint64_t)(atomic_load(&stat_rtx) - rtx0));
		free(lat);
	}
	fflush(stdout);
	/* the progress thread places into the target until it is given
	 * the next point's: it is freed then */
	free(src);
	free(client_tgt);
	client_tgt = tgt;
}

static void run_client(void)
{
	enum wait_rc rc = wait_for(is_up, NULL, UP_TIMEOUT_S);
	struct post p = { .kind = P_SHUTDOWN };
	int i;

	if (rc != WAIT_OK)
		wait_failed(rc, "association with the server");
	print_info("client");
	for (i = 0; i < opt.nsizes; i++)
		client_point(opt.sizes[i]);
	rc = wait_for(ring_room, NULL, REPLY_TIMEOUT_S);
	if (rc != WAIT_OK)
		wait_failed(rc, "room to post");
	post(&p);
	rc = wait_for(is_down, NULL, DOWN_TIMEOUT_S);
	if (rc == WAIT_TIMEOUT)
		fprintf(stderr, "sctpraw: the shutdown did not complete in "
			"%g s\n", DOWN_TIMEOUT_S);
	else if (rc == WAIT_STOP)
		finish(1);
	finish(0);
}

/* Server, ping-pong: the whole ping is there, or a control message. */
static bool ping_or_ctl(const void *arg)
{
	return bytes_reached(arg) || ctl_ready(NULL);
}

static void run_server(void)
{
	enum wait_rc rc = wait_for(is_listening, NULL, 0);
	uint8_t *tgt = NULL, *old_tgt, *src = NULL;

	if (rc != WAIT_OK)
		wait_failed(rc, "a UDP socket");
	if (strcmp(opt.port, "0") == 0) {
		printf("listening udp_port=%u sctp_port=%u\n", info.udp_port,
		       opt.sctp_port);
		fflush(stdout);
	}
	rc = wait_for(is_up, NULL, 0);
	if (rc != WAIT_OK)
		wait_failed(rc, "a client");
	print_info("server");
	fflush(stdout);
	for (;;) {
		struct ctl c;
		uint64_t base, base_segs, want, k = 0;
		size_t size;

		ctl_recv(&c, 0, "a request from the client");
		if (c.op == 0)
			break;          /* the client shut down */
		if (c.op != OP_BEGIN || c.a > MAX_SIZE || c.b == 0)
			die("unexpected request op %u size %" PRIu64, c.op, c.a);
		size = (size_t)c.a;
		/* the new target first: the progress thread lets go of the
		 * old one when it takes the new one, before any segment of
		 * this test can come (the client waits for READY) */
		old_tgt = tgt;
		tgt = alloc_fill(size, 2);
		post_target(tgt, size, (uint32_t)c.b);
		free(old_tgt);
		free(src);
		src = alloc_fill(size, 3);
		base = atomic_load(&recv_bytes);
		base_segs = atomic_load(&recv_segs);
		c = (struct ctl){ .op = OP_READY, .test = c.test,
				  .b = info.maxseg - SEQ_LEN };
		ctl_send(&c);
		if (c.test == T_LAT) {
			/* answer each whole ping until the END comes */
			for (;;) {
				struct post p = { .kind = P_DATA, .buf = src,
						  .len = (uint32_t)size };

				want = base + (k + 1) * size;
				rc = wait_for(ping_or_ctl, &want, 0);
				if (rc != WAIT_OK)
					wait_failed(rc, "a ping");
				if (!bytes_reached(&want))
					break;
				k++;
				rc = wait_for(ring_room, NULL, REPLY_TIMEOUT_S);
				if (rc != WAIT_OK)
					wait_failed(rc, "room to post");
				post(&p);
			}
		}
		ctl_recv(&c, 0, "the END of a test");
		if (c.op != OP_END)
			die("unexpected request op %u in a test", c.op);
		want = base + c.a;
		rc = wait_for(bytes_reached, &want, REPLY_TIMEOUT_S);
		if (rc == WAIT_TIMEOUT)
			fprintf(stderr, "sctpraw: %" PRIu64 " octets sent, %"
				PRIu64 " came\n", c.a,
				(uint64_t)(atomic_load(&recv_bytes) - base));
		else if (rc != WAIT_OK)
			wait_failed(rc, "the last octets");
		c = (struct ctl){ .op = OP_DONE, .test = c.test,
				  .a = atomic_load(&recv_bytes) - base,
				  .b = atomic_load(&recv_segs) - base_segs };
		printf("server test=%s size=%zu recv_bytes=%" PRIu64
		       " recv_segs=%" PRIu64 " answers=%" PRIu64 "\n",
		       c.test == T_LAT ? "lat" : "bw", size, c.a, c.b, k);
		fflush(stdout);
		ctl_send(&c);
	}
	/* The progress thread keeps the target until it ends. */
	finish(0);
}

/* ------------------------------------------------------------------ */
/* Signals: the first SIGINT or SIGTERM asks for the end, which the
 * threads see on stop_efd; SIGALRM 2 s later ends the process if they
 * did not. */

static void on_signal(int sig)
{
	int saved = errno;
	int zero = 0;

	if (atomic_compare_exchange_strong(&stop_sig, &zero, sig)) {
		efd_kick(stop_efd);
		alarm(STOP_GRACE_S);
	}
	errno = saved;
}

static void on_alarm(int sig)
{
	static const char m[] =
		"sctpraw: did not end within 2 s of the signal; exiting\n";

	(void)!write(STDERR_FILENO, m, sizeof(m) - 1);
	_exit(128 + atomic_load(&stop_sig));
}

static void signals_init(void)
{
	struct sigaction sa = { .sa_flags = SA_RESTART };

	sigemptyset(&sa.sa_mask);
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sa.sa_handler = on_alarm;
	sigaction(SIGALRM, &sa, NULL);
}

/* ------------------------------------------------------------------ */
/* Command line */

static void usage(FILE *f)
{
	fprintf(f,
"usage: sctpraw -s [options]        server (one association)\n"
"       sctpraw [options] HOST      client\n"
"  -p, --port N        the server's UDP port (default 9899; server: 0 =\n"
"                      any, printed as \"listening udp_port=N\")\n"
"      --bind ADDR     server: the address to listen on (127.0.0.1)\n"
"      --sctp-port N   the server's SCTP port (default 5001)\n"
"      --mtu N         path MTU given to SCTP_PEER_ADDR_PARAMS, PMTUD off\n"
"                      (default 1200; 512..65536)\n"
"      --streams N     streams asked for each way (default 256)\n"
"  -q, --qps N, --streams-used N\n"
"                      send message i on stream i mod N (default 1)\n"
"  -t, --test bw|lat   client: the test (default bw)\n"
"  -S, --size N, --sizes LIST\n"
"                      message sizes: N[k|m], a list a,b,c or a range\n"
"                      FROM:TO of powers of two (default 65536)\n"
"  -D, --secs T        seconds per size (default 2; lat: with -n unset)\n"
"  -n, --iters N       messages (bw) or ping-pongs (lat) per size\n"
"  -d, --depth N       bw: messages posted ahead (default 16)\n"
"      --crc on|off    CRC32c computed and checked (default on)\n"
"      --udp-buf N     SO_SNDBUF/SO_RCVBUF of the UDP socket (4m)\n"
"      --sctp-buf N    SO_SNDBUF/SO_RCVBUF of the SCTP socket\n"
"                      (default: usrsctp's, 256 KiB)\n"
"      --poll          the main thread spins instead of sleeping\n"
"  -h, --help\n");
}

static void bad_usage(const char *fmt, ...)
	__attribute__((noreturn, format(printf, 1, 2)));
static void bad_usage(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsay(fmt, ap, " (sctpraw -h for help)\n");
	va_end(ap);
	exit(2);
}

static long arg_long(const char *s, long min, long max, const char *what)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max)
		bad_usage("%s: '%s' is not a number in %ld..%ld", what, s, min,
			  max);
	return v;
}

static size_t arg_size(const char *s, const char *what)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *s == '-')
		bad_usage("%s: '%s' is not a size", what, s);
	if (*end == 'k' || *end == 'K') {
		v <<= 10;
		end++;
	} else if (*end == 'm' || *end == 'M') {
		v <<= 20;
		end++;
	}
	if (*end || v == 0 || v > MAX_SIZE)
		bad_usage("%s: '%s' is not a size of 1 to 64m octets", what, s);
	return (size_t)v;
}

static void parse_sizes(const char *s)
{
	char buf[1024], *tok, *save = NULL, *colon;

	if (strlen(s) >= sizeof(buf))
		bad_usage("--sizes: too long");
	strcpy(buf, s);
	opt.nsizes = 0;
	colon = strchr(buf, ':');
	if (colon != NULL) {
		size_t from, to, v;

		*colon = '\0';
		from = arg_size(buf, "--sizes");
		to = arg_size(colon + 1, "--sizes");
		for (v = from; v <= to && opt.nsizes < MAX_SIZES; v *= 2)
			opt.sizes[opt.nsizes++] = v;
		return;
	}
	for (tok = strtok_r(buf, ",", &save); tok != NULL;
	     tok = strtok_r(NULL, ",", &save)) {
		if (opt.nsizes == MAX_SIZES)
			bad_usage("--sizes: more than %d sizes", MAX_SIZES);
		opt.sizes[opt.nsizes++] = arg_size(tok, "--sizes");
	}
	if (opt.nsizes == 0)
		bad_usage("--sizes: no size");
}

static void parse_args(int argc, char **argv)
{
	enum { O_BIND = 256, O_SCTP_PORT, O_MTU, O_STREAMS, O_CRC, O_UDP_BUF,
	       O_SCTP_BUF, O_POLL };
	static const struct option lo[] = {
		{ "server", no_argument, NULL, 's' },
		{ "port", required_argument, NULL, 'p' },
		{ "bind", required_argument, NULL, O_BIND },
		{ "sctp-port", required_argument, NULL, O_SCTP_PORT },
		{ "mtu", required_argument, NULL, O_MTU },
		{ "streams", required_argument, NULL, O_STREAMS },
		{ "qps", required_argument, NULL, 'q' },
		{ "streams-used", required_argument, NULL, 'q' },
		{ "test", required_argument, NULL, 't' },
		{ "size", required_argument, NULL, 'S' },
		{ "sizes", required_argument, NULL, 'S' },
		{ "secs", required_argument, NULL, 'D' },
		{ "iters", required_argument, NULL, 'n' },
		{ "depth", required_argument, NULL, 'd' },
		{ "crc", required_argument, NULL, O_CRC },
		{ "udp-buf", required_argument, NULL, O_UDP_BUF },
		{ "sctp-buf", required_argument, NULL, O_SCTP_BUF },
		{ "poll", no_argument, NULL, O_POLL },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	bool secs_given = false;
	int c;

	opt.sizes[0] = 65536;
	opt.nsizes = 1;
	while ((c = getopt_long(argc, argv, "sp:q:t:S:D:n:d:h", lo, NULL)) !=
	       -1) {
		switch (c) {
		case 's':
			opt.server = true;
			break;
		case 'p':
			arg_long(optarg, 0, 65535, "--port");
			opt.port = optarg;
			break;
		case O_BIND:
			opt.bind = optarg;
			break;
		case O_SCTP_PORT:
			opt.sctp_port = (uint16_t)arg_long(optarg, 1, 65535,
							   "--sctp-port");
			break;
		case O_MTU:
			opt.mtu = (uint32_t)arg_long(optarg, 512, 65536, "--mtu");
			break;
		case O_STREAMS:
			opt.streams = (uint16_t)arg_long(optarg, 1, 65535,
							 "--streams");
			break;
		case 'q':
			opt.streams_used = (uint16_t)arg_long(optarg, 1, 65535,
							      "--streams-used");
			break;
		case 't':
			if (strcmp(optarg, "bw") == 0)
				opt.test = T_BW;
			else if (strcmp(optarg, "lat") == 0)
				opt.test = T_LAT;
			else
				bad_usage("--test: bw or lat, not '%s'", optarg);
			break;
		case 'S':
			parse_sizes(optarg);
			break;
		case 'D': {
			char *end;

			opt.secs = strtod(optarg, &end);
			if (end == optarg || *end || !(opt.secs > 0) ||
			    opt.secs > 3600)
				bad_usage("--secs: '%s' is not 0..3600 seconds",
					  optarg);
			secs_given = true;
			break;
		}
		case 'n':
			opt.iters = arg_long(optarg, 1, LONG_MAX / 2, "--iters");
			break;
		case 'd':
			opt.depth = (int)arg_long(optarg, 1, POST_RING / 2,
						  "--depth");
			break;
		case O_CRC:
			if (strcmp(optarg, "on") == 0)
				opt.crc = true;
			else if (strcmp(optarg, "off") == 0)
				opt.crc = false;
			else
				bad_usage("--crc: on or off, not '%s'", optarg);
			break;
		case O_UDP_BUF:
			opt.udp_buf = (int)arg_size(optarg, "--udp-buf");
			break;
		case O_SCTP_BUF:
			opt.sctp_buf = (int)arg_size(optarg, "--sctp-buf");
			break;
		case O_POLL:
			opt.poll = true;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			exit(2);
		}
	}
	if (opt.server) {
		if (optind != argc)
			bad_usage("a server takes no host");
	} else {
		if (optind != argc - 1)
			bad_usage("a client takes one host");
		opt.host = argv[optind];
		if (strcmp(opt.port, "0") == 0)
			bad_usage("a client needs the server's port");
	}
	if (opt.streams_used > opt.streams)
		bad_usage("--streams-used %u is more than --streams %u",
			  opt.streams_used, opt.streams);
	/* lat without -n runs 10000 ping-pongs unless -D says otherwise */
	if (opt.test == T_LAT && !secs_given && opt.iters == 0)
		opt.iters = 10000;
}

int main(int argc, char **argv)
{
	sigset_t block, old;

	parse_args(argc, argv);
	setvbuf(stdout, NULL, _IOLBF, 0);
	prog_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	main_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	stop_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (prog_efd < 0 || main_efd < 0 || stop_efd < 0)
		die("eventfd: %s", strerror(errno));
	signals_init();
	/* The signals go to main: the progress thread starts with them
	 * blocked and learns of them through stop_efd. */
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGALRM);
	pthread_sigmask(SIG_BLOCK, &block, &old);
	if (pthread_create(&prog_thread, NULL, progress, NULL) != 0)
		die("pthread_create failed");
	prog_started = true;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (opt.server)
		run_server();
	else
		run_client();
	return 0;
}
