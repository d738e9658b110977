/*
 * The SCTP carrier checks: see sctp_check.h for the script.
 *
 * Everything but the start and the final wait runs on the stack's
 * progress thread, in upcalls and in calls made there with uiw_rt_call.
 * Every message carries a header that says what it should be (type,
 * stream, PPID, sequence number, length), and its payload is a pattern
 * of the sequence number, so that the receiver can tell a message that
 * arrived whole and in the right place from anything else.
 */
#include "sctp_check.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <uiwarp/uiwarp.h>

#include "rt/rt.h"

#define MAGIC        0x55495753u  /* "UIWS" */
#define HDR_LEN      20
#define N_SIDS       4
#define N_REPEAT     3            /* each size this many times */
#define MAX_DATA     64
#define FLOOD_LEN    8192         /* or maxseg, if smaller */
#define FLOOD_MAX    8192         /* messages before -EAGAIN must come */
#define FLOOD_AFTER  4            /* sent after the writable upcall */
#define FLOOD_SEEN   (FLOOD_MAX + FLOOD_AFTER)

enum msg_type { T_DATA = 1, T_FLOOD, T_END, T_DONE, T_HELLO };
/* The client's associations, in this order; the server sees the first
 * and the last.  The abort comes last so that neither side outlives
 * the other's need of it (the refused step needs the peer's stack). */
enum step { ST_DATA = 1, ST_REFUSED, ST_ABORT, ST_END };

static const uint32_t sizes[] = {
	20, 21, 64, 100, 515, 516, 517, 1000, 1400, 1452, 2048, 4096, 8192,
	16384, 32768, 65000, UINT32_MAX - 1, UINT32_MAX, /* maxseg-1, maxseg */
};
#define N_SIZES (sizeof(sizes) / sizeof(sizes[0]))

struct check;

/* One association's part of the script, on one side. */
struct peer {
	struct check *ck;
	const char *who;              /* "client 1", "server 2", ... */
	enum step step;
	bool server;
	struct uiw_sctp_assoc *a;
	struct uiw_sctp_info info;
	bool up, down, shut, aborted;

	/* transmit */
	uint16_t sids[N_SIDS];
	uint32_t n_data, sent_data, flood_len, flood_sent, flood_after;
	bool blocked, eagain_seen, end_sent, dry_asked, dry_seen, done_sent;
	bool never_blocked;           /* two stacks: the path kept up */
	unsigned writable_seen;
	/* receive */
	uint8_t data_seen[MAX_DATA];
	uint8_t *flood_seen;          /* FLOOD_SEEN */
	uint32_t data_rx, flood_rx, peer_n_data, peer_n_flood;
	bool end_rx, done_rx, hello_rx, bad_rx;
};

struct check {
	const struct sctp_check_opts *o;
	struct uiw_sctp_stack *stack;
	struct uiw_rt *rt;
	struct uiw_sctp_lsn *lsn;
	struct sockaddr_storage lsn_addr, peer_addr;
	int server_assocs;
	struct peer *srv[2], *cli[3];
	int cli_step;                 /* the step under way */

	pthread_mutex_t lock;         /* the rest */
	pthread_cond_t cond;
	bool server_done, client_done;
	int checks, failures;
};

/* ---- Reporting --------------------------------------------------------- */

static void report(struct check *ck, bool ok, const char *who,
		   const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static void report(struct check *ck, bool ok, const char *who,
		   const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&ck->lock);
	ck->checks++;
	if (!ok)
		ck->failures++;
	fprintf(ck->o->out, "%s %s: ", ok ? "ok  " : "FAIL", who);
	va_start(ap, fmt);
	vfprintf(ck->o->out, fmt, ap);
	va_end(ap);
	fputc('\n', ck->o->out);
	fflush(ck->o->out);
	pthread_mutex_unlock(&ck->lock);
}

#define OK(p, ...)   report((p)->ck, true, (p)->who, __VA_ARGS__)
#define BAD(p, ...)  report((p)->ck, false, (p)->who, __VA_ARGS__)
#define CHECK(p, cond, ...) \
	report((p)->ck, (cond), (p)->who, __VA_ARGS__)

static const char *addr_str(const struct sockaddr_storage *ss, char *buf,
			    size_t len)
{
	char ip[INET6_ADDRSTRLEN] = "?";
	unsigned port = 0;

	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *s4 = (const void *)ss;

		inet_ntop(AF_INET, &s4->sin_addr, ip, sizeof(ip));
		port = ntohs(s4->sin_port);
		snprintf(buf, len, "%s:%u", ip, port);
	} else if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const void *)ss;

		inet_ntop(AF_INET6, &s6->sin6_addr, ip, sizeof(ip));
		port = ntohs(s6->sin6_port);
		snprintf(buf, len, "[%s]:%u", ip, port);
	} else {
		snprintf(buf, len, "(family %d)", ss->ss_family);
	}
	return buf;
}

static uint16_t addr_port(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		return ntohs(((const struct sockaddr_in *)ss)->sin_port);
	if (ss->ss_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)ss)->sin6_port);
	return 0;
}

static void addr_set_port(struct sockaddr_storage *ss, uint16_t port)
{
	if (ss->ss_family == AF_INET)
		((struct sockaddr_in *)ss)->sin_port = htons(port);
	else if (ss->ss_family == AF_INET6)
		((struct sockaddr_in6 *)ss)->sin6_port = htons(port);
}

static socklen_t addr_len(const struct sockaddr_storage *ss)
{
	return ss->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6)
					 : sizeof(struct sockaddr_in);
}

int sctp_check_parse_addr(const char *s, struct sockaddr_storage *ss)
{
	char host[INET6_ADDRSTRLEN + 2];
	const char *colon = strrchr(s, ':');
	const char *ps = colon ? colon + 1 : s;
	char *end;
	unsigned long port = strtoul(ps, &end, 10);
	size_t hl;

	memset(ss, 0, sizeof(*ss));
	if (!*ps || *end || port > 65535)
		return -EINVAL;
	hl = colon ? (size_t)(colon - s) : 0;
	if (hl >= sizeof(host))
		return -EINVAL;
	memcpy(host, s, hl);
	host[hl] = 0;
	if (hl >= 2 && host[0] == '[' && host[hl - 1] == ']') {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;

		host[hl - 1] = 0;
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(port);
		return inet_pton(AF_INET6, host + 1, &s6->sin6_addr) == 1
			? 0 : -EINVAL;
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)ss;

		s4->sin_family = AF_INET;
		s4->sin_port = htons(port);
		if (!hl)
			return 0;
		return inet_pton(AF_INET, host, &s4->sin_addr) == 1
			? 0 : -EINVAL;
	}
}

/* ---- Messages ---------------------------------------------------------- */

/* n 32-bit words in network order at m, and back. */
static void words_put(uint8_t *m, const uint32_t *w, int n)
{
	while (n--) {
		uint32_t v = htonl(*w++);

		memcpy(m, &v, 4);
		m += 4;
	}
}

static void words_get(const uint8_t *m, uint32_t *w, int n)
{
	for (; n--; m += 4) {
		memcpy(w, m, 4);
		*w = ntohl(*w);
		w++;
	}
}

static uint8_t pattern(uint32_t type, uint32_t seq, size_t i)
{
	return (uint8_t)(seq * 131u + i * 7u + type * 29u + (i >> 8));
}

/* Header: magic, type << 16 | sid, seq, length, ppid. */
static void msg_fill(uint8_t *m, size_t len, enum msg_type t, uint16_t sid,
		     uint32_t ppid, uint32_t seq)
{
	size_t i;

	const uint32_t h[5] = { MAGIC, (uint32_t)t << 16 | sid, seq,
				(uint32_t)len, ppid };

	words_put(m, h, 5);
	for (i = HDR_LEN; i < len; i++)
		m[i] = pattern(t, seq, i);
}

static bool check_done(struct peer *p);

static void finish_role(struct check *ck, bool server)
{
	pthread_mutex_lock(&ck->lock);
	if (server)
		ck->server_done = true;
	else
		ck->client_done = true;
	pthread_cond_broadcast(&ck->cond);
	pthread_mutex_unlock(&ck->lock);
}

/* One send; 0, or the error (-EAGAIN marks the side blocked). */
static int send_msg(struct peer *p, enum msg_type t, uint16_t sid,
		    uint32_t ppid, uint32_t seq, size_t len,
		    const uint32_t *body, int nbody)
{
	static uint8_t buf[70000];
	struct iovec iov[2];
	int r;

	msg_fill(buf, len, t, sid, ppid, seq);
	words_put(buf + HDR_LEN, body, nbody);
	/* Two pieces: the backend gathers them into one message. */
	iov[0].iov_base = buf;
	iov[0].iov_len = len < HDR_LEN ? len : HDR_LEN;
	iov[1].iov_base = buf + iov[0].iov_len;
	iov[1].iov_len = len - iov[0].iov_len;
	r = uiw_sctp_send(p->a, sid, ppid, iov, 2);
	if (r == -EAGAIN) {
		if (!p->eagain_seen) {
			int un = uiw_sctp_unacked(p->a);

			OK(p, "a send said -EAGAIN after %u messages and %u "
			   "flood messages (unacked %d)", p->sent_data,
			   p->flood_sent, un);
			if (un < 0)
				BAD(p, "unacked said %d", un);
		}
		p->eagain_seen = true;
		p->blocked = true;
	} else if (r != 0) {
		BAD(p, "send of a %zu-octet message (type %d, stream %u, "
		    "PPID %u) said %d (%s): abort", len, t, sid, ppid, r,
		    strerror(-r));
		p->aborted = true;
		uiw_sctp_abort(p->a);
	}
	return r;
}

/* Sends what the script has next, until it is blocked or waiting. */
static void tx_pump(struct peer *p)
{
	bool flooding;
	int r;

	while (!p->blocked && !p->shut && !p->aborted && !p->down) {
		if (p->sent_data < p->n_data) {
			uint32_t i = p->sent_data;
			uint32_t size = sizes[(i / N_REPEAT) % N_SIZES];
			uint16_t sid = p->sids[i % N_SIDS];
			uint32_t ppid = ((i + i / N_SIDS) & 1)
				? UIW_SCTP_PPID_CTL : UIW_SCTP_PPID_DDP;

			if (size == UINT32_MAX)
				size = p->info.maxseg;
			else if (size == UINT32_MAX - 1)
				size = p->info.maxseg - 1;
			if (size > p->info.maxseg)
				size = p->info.maxseg;
			r = send_msg(p, T_DATA, sid, ppid, i, size, NULL, 0);
			if (r)
				return;
			p->sent_data++;
			continue;
		}
		/* Messages until one says -EAGAIN, then FLOOD_AFTER
		 * more after the writable upcall. */
		flooding = !p->eagain_seen && p->flood_sent < FLOOD_MAX;
		if (!flooding && !p->eagain_seen) {
			/* Across two stacks (QEMU's network between them, the
			 * guest under emulation) the path may take a burst as
			 * fast as it is sent, so that the send buffer never
			 * fills; -EAGAIN and writable are required where both
			 * ends share a stack, and said here. */
			if (p->ck->o->server && p->ck->o->client)
				BAD(p, "%u messages of %u octets sent and no "
				    "-EAGAIN", p->flood_sent, p->flood_len);
			else
				CHECK(p, true, "%u messages of %u octets sent "
				      "without -EAGAIN: the path kept up "
				      "(required within one stack)",
				      p->flood_sent, p->flood_len);
			p->eagain_seen = true;
			p->never_blocked = true;
		}
		if (flooding || p->flood_after < FLOOD_AFTER) {
			r = send_msg(p, T_FLOOD, p->sids[p->flood_sent % N_SIDS],
				     UIW_SCTP_PPID_DDP, p->flood_sent,
				     p->flood_len, NULL, 0);
			if (r)
				return;
			p->flood_sent++;
			p->flood_after += !flooding;
			continue;
		}
		if (!p->end_sent) {
			uint32_t body[2] = { p->n_data, p->flood_sent };

			r = send_msg(p, T_END, 0, UIW_SCTP_PPID_CTL, 0,
				     HDR_LEN + 8, body, 2);
			if (r)
				return;
			p->end_sent = true;
			OK(p, "sent %u messages, %u flood messages of %u "
			   "octets, END", p->n_data, p->flood_sent,
			   p->flood_len);
			p->dry_asked = true;
			uiw_sctp_watch_dry(p->a);
			continue;
		}
		if (p->dry_seen && p->end_rx &&
		    p->data_rx == p->peer_n_data &&
		    p->flood_rx == p->peer_n_flood && !p->done_sent) {
			r = send_msg(p, T_DONE, 1, UIW_SCTP_PPID_CTL, 0, HDR_LEN,
				     NULL, 0);
			if (r)
				return;
			p->done_sent = true;
			OK(p, "received %u messages and %u flood messages, "
			   "each whole and once; DONE sent", p->data_rx,
			   p->flood_rx);
			check_done(p);
		}
		return;
	}
}

/* The client, with both DONEs: the orderly end. */
static bool check_done(struct peer *p)
{
	int r;

	if (p->server || p->step != ST_DATA || !p->done_sent || !p->done_rx ||
	    p->shut)
		return false;
	p->shut = true;
	uiw_sctp_shutdown(p->a);
	r = uiw_sctp_send(p->a, 0, UIW_SCTP_PPID_DDP,
			  &(struct iovec){ .iov_base = (void *)"x",
					   .iov_len = 1 }, 1);
	CHECK(p, r == -ENOTCONN, "send after shutdown said %d (%s), "
	      "-ENOTCONN expected", r, strerror(-r));
	return true;
}

static void local_errors(struct peer *p)
{
	static uint8_t big[70000];
	struct iovec iov = { .iov_base = big, .iov_len = 64 };
	int r;

	msg_fill(big, sizeof(big), T_DATA, 0, 0, 0);
	r = uiw_sctp_send(p->a, p->info.streams, UIW_SCTP_PPID_DDP, &iov, 1);
	CHECK(p, r == -EINVAL, "send on stream %u (of %u) said %d, -EINVAL "
	      "expected", p->info.streams, p->info.streams, r);
	iov.iov_len = p->info.maxseg + 1;
	if (iov.iov_len <= sizeof(big)) {
		r = uiw_sctp_send(p->a, 0, UIW_SCTP_PPID_DDP, &iov, 1);
		CHECK(p, r == -EMSGSIZE, "send of maxseg + 1 = %zu octets "
		      "said %d, -EMSGSIZE expected", iov.iov_len, r);
	}
}

/* ---- Upcalls ----------------------------------------------------------- */

static void client_next(struct check *ck);
static void server_up(void *ctx, struct uiw_sctp_assoc *a,
		      const struct uiw_sctp_info *info);

static void check_info(struct peer *p, const struct uiw_sctp_info *in)
{
	const struct sctp_check_opts *o = p->ck->o;
	char l[64], r[64];
	uint16_t want_streams = o->cfg.streams ? o->cfg.streams
					       : UIW_SCTP_STREAMS_DEF;
	bool udp = o->kind == UIW_SCTP_USER;

	if (o->kind == UIW_SCTP_KERNEL) {
		FILE *f = fopen("/proc/sys/net/sctp/udp_port", "r");
		unsigned v = 0;

		if (f) {
			if (fscanf(f, "%u", &v) != 1)
				v = 0;
			fclose(f);
		}
		udp = v != 0;
	}
	p->info = *in;
	OK(p, "up: %s, local %s, peer %s, streams %u/%u, maxseg %u, "
	   "adaptation %s %#x, peer UDP port %u",
	   in->active ? "active" : "passive",
	   addr_str(&in->local, l, sizeof(l)),
	   addr_str(&in->peer, r, sizeof(r)), in->in_streams,
	   in->out_streams, in->maxseg, in->peer_adapt_seen ? "seen" : "none",
	   in->peer_adapt, in->peer_udp_port);
	CHECK(p, in->active == !p->server, "info.active is %d",
	      in->active);
	CHECK(p, in->peer_adapt_seen && in->peer_adapt == UIW_SCTP_ADAPT_DDP,
	      "the peer's Adaptation Layer Indication is DDP (RFC 5043 §5.1)");
	CHECK(p, in->in_streams == in->out_streams &&
	      in->streams == in->in_streams && in->streams == want_streams,
	      "streams: %u in, %u out, %u usable; %u asked each way "
	      "(RFC 5043 §8)", in->in_streams, in->out_streams, in->streams,
	      want_streams);
	CHECK(p, in->maxseg > 516 && in->maxseg <= 65535,
	      "maxseg %u is above 516 (RFC 5043 §9)", in->maxseg);
	if (o->cfg.mtu)
		CHECK(p, in->maxseg <= o->cfg.mtu - 28 &&
		      in->maxseg + 4 > o->cfg.mtu - 28,
		      "maxseg %u fits a path MTU of %u (less 12 octets of "
		      "common header and 16 of DATA chunk header)", in->maxseg,
		      o->cfg.mtu);
	CHECK(p, (in->local.ss_family == AF_INET ||
		  in->local.ss_family == AF_INET6) &&
	      addr_port(&in->local) != 0 &&
	      in->peer.ss_family == in->local.ss_family &&
	      addr_port(&in->peer) != 0,
	      "local and peer addresses with ports");
	if (!p->server)
		CHECK(p, addr_port(&in->peer) == addr_port(&p->ck->peer_addr),
		      "the peer's SCTP port is the one connected to");
	if (!udp)
		CHECK(p, in->peer_udp_port == 0,
		      "no UDP encapsulation: peer UDP port %u",
		      in->peer_udp_port);
	else if (!p->server)
		CHECK(p, in->peer_udp_port ==
		      (o->cfg.udp_port ? o->cfg.udp_port : UIW_SCTP_UDP_PORT),
		      "UDP encapsulation (RFC 6951) to the configured port: "
		      "peer UDP port %u", in->peer_udp_port);
	else
		CHECK(p, in->peer_udp_port != 0,
		      "UDP encapsulation (RFC 6951): the peer's UDP port %u "
		      "learnt from its packets (§5.4)", in->peer_udp_port);
}

static void data_start(struct peer *p)
{
	int i;

	p->sids[0] = 0;
	p->sids[1] = p->info.streams > 1 ? 1 : 0;
	p->sids[2] = p->info.streams / 2;
	p->sids[3] = p->info.streams ? p->info.streams - 1 : 0;
	p->n_data = N_SIZES * N_REPEAT;
	p->flood_len = p->info.maxseg < FLOOD_LEN ? p->info.maxseg : FLOOD_LEN;
	p->flood_seen = calloc(FLOOD_SEEN, 1);
	for (i = 0; i < N_SIDS; i++)
		if (p->sids[i] >= p->info.streams)
			p->sids[i] = 0;
	local_errors(p);
	tx_pump(p);
}

static void peer_free(struct peer *p)
{
	free(p->flood_seen);
	free(p);
}

/* Message seq of a numbered kind arrived: once, and in range. */
static void seen(struct peer *p, uint8_t *map, uint32_t n, uint32_t seq,
		 uint32_t *count, const char *what)
{
	if (seq >= n || map[seq]) {
		BAD(p, "%s message %u again or out of range", what, seq);
		return;
	}
	map[seq] = 1;
	(*count)++;
}

static void on_msg(void *ctx, struct uiw_sctp_assoc *a, uint16_t sid,
		   uint32_t ppid, void *vbuf, size_t len)
{
	struct peer *p = ctx;
	const uint8_t *m = vbuf;
	uint32_t h[5], t, seq, hsid, hlen, hppid, body[2];
	size_t i;
	bool whole = true;

	if (!p->up)
		BAD(p, "a message before up");
	if (len >= HDR_LEN)
		words_get(m, h, 5);
	if (len < HDR_LEN || h[0] != MAGIC) {
		BAD(p, "a message of %zu octets without our header", len);
		goto out;
	}
	t = h[1] >> 16;
	hsid = h[1] & 0xffff;
	seq = h[2];
	hlen = h[3];
	hppid = h[4];
	for (i = HDR_LEN; i < len && whole; i++)
		whole = t == T_END || m[i] == pattern(t, seq, i);
	if (hlen != len || hsid != sid || hppid != ppid || !whole) {
		if (!p->bad_rx)
			BAD(p, "message type %u seq %u: %zu octets (%u sent), "
			    "stream %u (%u sent), PPID %u (%u sent), payload "
			    "%s", t, seq, len, hlen, sid, hsid, ppid, hppid,
			    whole ? "intact" : "damaged");
		p->bad_rx = true;
		goto out;
	}
	switch (t) {
	case T_DATA:
		seen(p, p->data_seen, MAX_DATA, seq, &p->data_rx, "data");
		break;
	case T_FLOOD:
		seen(p, p->flood_seen, p->flood_seen ? FLOOD_SEEN : 0, seq,
		     &p->flood_rx, "flood");
		break;
	case T_END:
		if (len < HDR_LEN + 8) {
			BAD(p, "END without its counts");
			break;
		}
		words_get(m + HDR_LEN, body, 2);
		p->end_rx = true;
		p->peer_n_data = body[0];
		p->peer_n_flood = body[1];
		break;
	case T_DONE:
		p->done_rx = true;
		if (check_done(p))
			goto out;
		break;
	case T_HELLO:
		p->hello_rx = true;
		if (!p->server && p->step == ST_ABORT) {
			int r;

			p->aborted = true;
			uiw_sctp_abort(a);
			r = uiw_sctp_send(a, 0, UIW_SCTP_PPID_DDP,
					  &(struct iovec){
						  .iov_base = (void *)"x",
						  .iov_len = 1 }, 1);
			CHECK(p, r == -ENOTCONN, "HELLO received, aborted; "
			      "send after the abort said %d, -ENOTCONN "
			      "expected", r);
			goto out;
		}
		BAD(p, "an unexpected HELLO");
		break;
	default:
		BAD(p, "message type %u", t);
	}
	if (p->step == ST_DATA)
		tx_pump(p);
out:
	uiw_sctp_buf_free(p->ck->stack, vbuf);
}

static void on_writable(void *ctx, struct uiw_sctp_assoc *a)
{
	struct peer *p = ctx;

	if (!p->blocked)
		BAD(p, "writable without a send that said -EAGAIN");
	if (!p->writable_seen)
		OK(p, "writable after -EAGAIN");
	p->writable_seen++;
	p->blocked = false;
	tx_pump(p);
}

static void on_dry(void *ctx, struct uiw_sctp_assoc *a)
{
	struct peer *p = ctx;
	int un = uiw_sctp_unacked(a);

	CHECK(p, p->dry_asked && !p->dry_seen, "dry once, after it was "
	      "asked for");
	CHECK(p, un == 0, "dry: everything sent is acknowledged (unacked "
	      "%d)", un);
	p->dry_seen = true;
	tx_pump(p);
}

static void on_up(void *ctx, struct uiw_sctp_assoc *a,
		  const struct uiw_sctp_info *info)
{
	struct peer *p = ctx;

	if (p->up) {
		BAD(p, "up twice");
		return;
	}
	p->up = true;
	p->a = a;
	check_info(p, info);
	if (p->step == ST_REFUSED) {
		BAD(p, "up on a port where nothing listens");
		uiw_sctp_abort(a);
		return;
	}
	if (p->step == ST_DATA) {
		data_start(p);
	} else if (p->server) {
		int r = send_msg(p, T_HELLO, 0, UIW_SCTP_PPID_CTL, 0, HDR_LEN,
				 NULL, 0);

		CHECK(p, r == 0, "HELLO sent (%d)", r);
	}
}

static void on_down(void *ctx, struct uiw_sctp_assoc *a, int err)
{
	struct peer *p = ctx;
	struct check *ck = p->ck;
	int want;

	p->down = true;
	if (p->step == ST_DATA)
		want = 0;
	else if (p->step == ST_ABORT)
		want = p->server ? -ECONNRESET : -ECONNABORTED;
	else
		want = -ECONNREFUSED;
	CHECK(p, err == want, "down(%d: %s), %d (%s) expected", err,
	      err ? strerror(-err) : "orderly", want,
	      want ? strerror(-want) : "orderly");
	if (p->step == ST_DATA) {
		CHECK(p, p->done_sent && p->done_rx &&
		      (p->writable_seen || p->never_blocked),
		      "before down: everything sent and received, DONE both "
		      "ways, writable seen (or never needed)");
		if (p->server)
			CHECK(p, !p->shut, "the client shut down");
	}
	if (p->step == ST_ABORT && !p->server)
		CHECK(p, p->up && p->hello_rx && p->aborted,
		      "up, HELLO, then our abort");
	if (p->step == ST_ABORT && p->server)
		CHECK(p, p->up, "up before the peer's abort");
	if (p->step == ST_REFUSED)
		CHECK(p, !p->up, "never up");
	if (p->server) {
		if (ck->srv[0] && ck->srv[0]->down && ck->srv[1] &&
		    ck->srv[1]->down)
			finish_role(ck, true);
	} else {
		client_next(ck);
	}
}

static const struct uiw_sctp_up peer_up = {
	.up = on_up,
	.msg = on_msg,
	.writable = on_writable,
	.dry = on_dry,
	.down = on_down,
};

static const struct uiw_sctp_up lsn_up = {
	.up = server_up,
	.msg = on_msg,      /* never: bound in server_up */
	.writable = on_writable,
	.dry = on_dry,
	.down = on_down,
};

static struct peer *peer_new(struct check *ck, bool server, enum step st)
{
	static const char *const names[2][ST_END] = {
		{ "", "client 1 (data)", "client 2 (refused)",
		  "client 3 (abort)" },
		{ "", "server 1 (data)", "", "server 2 (abort)" },
	};
	struct peer *p = calloc(1, sizeof(*p));

	if (!p)
		abort();
	p->ck = ck;
	p->server = server;
	p->step = st;
	p->who = names[server][st];
	return p;
}

static void server_up(void *ctx, struct uiw_sctp_assoc *a,
		      const struct uiw_sctp_info *info)
{
	struct check *ck = ctx;
	struct peer *p;
	int n = ++ck->server_assocs;

	if (n > 2) {
		report(ck, false, "server", "association %d: the script has "
		       "two", n);
		uiw_sctp_abort(a);
		return;
	}
	p = peer_new(ck, true, n == 1 ? ST_DATA : ST_ABORT);
	ck->srv[n - 1] = p;
	uiw_sctp_assoc_bind(a, &peer_up, p);
	on_up(p, a, info);
}

static void client_next(struct check *ck)
{
	struct sockaddr_storage to = ck->peer_addr;
	struct uiw_sctp_assoc *a;
	struct peer *p;
	int r;

	if (ck->cli_step + 1 == ST_END) {
		finish_role(ck, false);
		return;
	}
	p = peer_new(ck, false, ++ck->cli_step);
	ck->cli[ck->cli_step - 1] = p;
	if (p->step == ST_REFUSED)
		addr_set_port(&to, addr_port(&to) + 1);
	r = uiw_sctp_connect(ck->stack, (struct sockaddr *)&to, addr_len(&to),
			     NULL, 0, 0, &peer_up, p, &a);
	if (r) {
		BAD(p, "connect said %d (%s)", r, strerror(-r));
		finish_role(ck, false);
		return;
	}
	p->a = a;
}

/* ---- Running ----------------------------------------------------------- */

static int start_server(void *arg)
{
	struct check *ck = arg;
	const struct sockaddr_storage *sa = &ck->o->listen_addr;
	int r;

	r = uiw_sctp_listen(ck->stack, (const struct sockaddr *)sa,
			    addr_len(sa), 4, &lsn_up, ck, &ck->lsn);
	if (r) {
		report(ck, false, "server", "listen said %d (%s): %s", r,
		       strerror(-r), uiw_last_error());
		return r;
	}
	uiw_sctp_lsn_addr(ck->lsn, &ck->lsn_addr);
	return 0;
}

static int start_client(void *arg)
{
	client_next(arg);
	return 0;
}

static int stop_server(void *arg)
{
	struct check *ck = arg;

	if (ck->lsn)
		uiw_sctp_unlisten(ck->lsn);
	ck->lsn = NULL;
	return 0;
}

/* The peers still alive when the script timed out: abort them. */
static int stop_peers(void *arg)
{
	struct check *ck = arg;
	int i;

	for (i = 0; i < 3; i++) {
		struct peer *p = i < 2 ? ck->srv[i] : NULL;

		if (p && p->a && !p->down && !p->aborted) {
			p->aborted = true;
			uiw_sctp_abort(p->a);
		}
		p = ck->cli[i];
		if (p && p->a && !p->down && !p->aborted) {
			p->aborted = true;
			uiw_sctp_abort(p->a);
		}
	}
	return 0;
}

static const char *peer_state(const struct peer *p, char *buf, size_t len)
{
	if (!p)
		return "not started";
	snprintf(buf, len, "up %d, sent %u/%u data and %u flood, EAGAIN %d, "
		 "writable %u, END %d, dry %d, DONE sent %d; received %u/%u "
		 "data, %u/%u flood, END %d, DONE %d, HELLO %d; down %d",
		 p->up, p->sent_data, p->n_data, p->flood_sent, p->eagain_seen,
		 p->writable_seen, p->end_sent, p->dry_seen, p->done_sent,
		 p->data_rx, p->peer_n_data, p->flood_rx, p->peer_n_flood,
		 p->end_rx, p->done_rx, p->hello_rx, p->down);
	return buf;
}

int sctp_check_run(const struct sctp_check_opts *o)
{
	/* On the heap: after a time-out the progress thread may still run
	 * upcalls on it, so it is left behind then. */
	struct check *ck = calloc(1, sizeof(*ck));
	struct timespec dl;
	char buf[512];
	int r, i, ret, secs = o->timeout_s > 0 ? o->timeout_s : 120;
	bool timed_out = false;

	if (!ck)
		return SCTP_CHECK_FAIL;
	ck->o = o;
	pthread_mutex_init(&ck->lock, NULL);
	pthread_cond_init(&ck->cond, NULL);
	r = uiw_sctp_stack_get(o->kind, &o->cfg, &ck->stack);
	if (r) {
		fprintf(o->out, "# no %s SCTP stack here: %d (%s): %s\n",
			o->kind == UIW_SCTP_KERNEL ? "kernel" : "user-space",
			r, strerror(-r), uiw_last_error());
		free(ck);
		return r == -EPROTONOSUPPORT ? SCTP_CHECK_NOSTACK
					     : SCTP_CHECK_FAIL;
	}
	ck->rt = uiw_sctp_stack_rt(ck->stack);
	ck->server_done = !o->server;
	ck->client_done = !o->client;
	if (o->server && uiw_rt_call(ck->rt, start_server, ck)) {
		fprintf(o->out, "%d checks, %d failed\n", ck->checks,
			ck->failures);
		uiw_sctp_stack_put(ck->stack);
		free(ck);
		return SCTP_CHECK_FAIL;
	}
	if (o->server)
		fprintf(o->out, "# listening on %s\n",
			addr_str(&ck->lsn_addr, buf, sizeof(buf)));
	if (o->client) {
		ck->peer_addr = o->connect_given ? o->connect_addr
						 : ck->lsn_addr;
		fprintf(o->out, "# connecting to %s\n",
			addr_str(&ck->peer_addr, buf, sizeof(buf)));
		uiw_rt_call(ck->rt, start_client, ck);
	}
	fflush(o->out);

	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += secs;
	pthread_mutex_lock(&ck->lock);
	while (!(ck->server_done && ck->client_done) && !timed_out)
		timed_out = pthread_cond_timedwait(&ck->cond, &ck->lock,
						   &dl) == ETIMEDOUT;
	pthread_mutex_unlock(&ck->lock);

	if (timed_out) {
		report(ck, false, o->server && !ck->server_done ? "server"
								: "client",
		       "the script did not end within %d s", secs);
		for (i = 0; i < 2 && o->server; i++)
			fprintf(o->out, "#   server %d: %s\n", i + 1,
				peer_state(ck->srv[i], buf, sizeof(buf)));
		for (i = 0; i < 3 && o->client; i++)
			fprintf(o->out, "#   client %d: %s\n", i + 1,
				peer_state(ck->cli[i], buf, sizeof(buf)));
		uiw_rt_call(ck->rt, stop_peers, ck);
	}
	uiw_rt_call(ck->rt, stop_server, ck);
	fprintf(o->out, "%d checks, %d failed\n", ck->checks, ck->failures);
	fflush(o->out);
	ret = ck->failures ? SCTP_CHECK_FAIL : SCTP_CHECK_PASS;
	if (timed_out)
		return ret;
	/* Every association is down: the last down ended the script. */
	uiw_sctp_stack_put(ck->stack);
	for (i = 0; i < 3; i++) {
		if (i < 2 && ck->srv[i])
			peer_free(ck->srv[i]);
		if (ck->cli[i])
			peer_free(ck->cli[i]);
	}
	pthread_mutex_destroy(&ck->lock);
	pthread_cond_destroy(&ck->cond);
	free(ck);
	return ret;
}
