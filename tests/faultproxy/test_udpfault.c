/*
 * Tests of the fault-injecting UDP relay (tools/lib/udpfault.h) with
 * plain UDP sockets on loopback: clients that send numbered datagrams to
 * the relay, and an upstream that records what reaches it and echoes it
 * back to the port it came from.  Every datagram carries its client, its
 * number and the time it was sent, and a pattern that the receiver
 * checks octet by octet.
 *
 * Nothing sleeps: the test waits on the relay's counters (every datagram
 * read has been dealt with) and on poll(2) of its own sockets until what
 * the relay says it forwarded has arrived, each wait with a timeout.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "fp_tool.h"
#include "relay_util.h"
#include "udpfault.h"

#define TMO_MS		20000	/* any single wait; a hang fails, not stalls */
#define NCLI		3
#define HDR		16	/* client, number, time sent */
#define WINDOW		32	/* datagrams sent before the relay catches up */
#define MS		1000000LL

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* ------------------------------------------------------------------ */
/* Datagrams                                                           */

static uint8_t pat(uint32_t client, uint32_t seq, size_t i)
{
	return (uint8_t)(seq * 31u + (uint32_t)i * 7u + client * 101u);
}

/* The usual length of datagram seq: small, so that a window of them
 * fits any socket's receive buffer. */
static size_t len_of(uint32_t seq)
{
	return HDR + (seq * 37u) % 200u;
}

static void make_msg(uint8_t *b, size_t len, uint32_t client, uint32_t seq)
{
	int64_t t = now_ns();

	memcpy(b, &client, 4);
	memcpy(b + 4, &seq, 4);
	memcpy(b + 8, &t, 8);
	for (size_t i = HDR; i < len; i++)
		b[i] = pat(client, seq, i);
}

/* What a peer received: one record a datagram. */
struct rec {
	uint32_t client, seq;
	size_t len;
	uint16_t from;		/* source port */
	int64_t sent, at;	/* CLOCK_MONOTONIC ns */
};

struct peer {
	int fd;
	uint16_t port;
	bool echo;		/* send every datagram back to its source */
	struct rec *rec;
	size_t n, cap;
	uint64_t bad;		/* datagrams whose octets were wrong */
	uint64_t echoed;
};

struct rig {
	struct uiw_uf *uf;
	int family;
	struct peer up, cli[NCLI];
	uint64_t sent[2];	/* datagrams sent towards the relay a way */
};

/* A non-blocking UDP socket on loopback, port 0; its port in *port. */
static int udp_socket(int family, uint16_t *port)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	int fd = uiw_rl_socket(family, SOCK_DGRAM, 0, false, &ss, &len);
	int big = 1 << 20;

	if (fd < 0)
		return -1;
	/* Room for a window of datagrams whatever the defaults. */
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &big, sizeof(big));
	*port = uiw_rl_port(&ss);
	return fd;
}

static void peer_open(struct peer *p, int family, bool echo)
{
	memset(p, 0, sizeof(*p));
	p->fd = udp_socket(family, &p->port);
	assert_true(p->fd >= 0);
	p->echo = echo;
}

static void peer_close(struct peer *p)
{
	if (p->fd >= 0)
		close(p->fd);
	free(p->rec);
	memset(p, 0, sizeof(*p));
	p->fd = -1;
}

/* Reads everything queued at p now. */
static void peer_drain(struct peer *p)
{
	static uint8_t b[65536];

	for (;;) {
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		ssize_t n = recvfrom(p->fd, b, sizeof(b), 0,
				     (struct sockaddr *)&ss, &sl);
		struct rec *r;
		bool ok;

		if (n < 0) {
			assert_true(errno == EAGAIN || errno == EINTR);
			return;
		}
		ok = n >= HDR;
		if (p->n == p->cap) {
			p->cap = p->cap ? 2 * p->cap : 256;
			p->rec = realloc(p->rec, p->cap * sizeof(*p->rec));
			assert_non_null(p->rec);
		}
		r = &p->rec[p->n];
		memset(r, 0, sizeof(*r));
		if (ok) {
			memcpy(&r->client, b, 4);
			memcpy(&r->seq, b + 4, 4);
			memcpy(&r->sent, b + 8, 8);
			for (ssize_t i = HDR; i < n && ok; i++)
				ok = b[i] == pat(r->client, r->seq, (size_t)i);
		}
		if (!ok) {
			p->bad++;
			continue;
		}
		r->len = (size_t)n;
		r->from = uiw_rl_port(&ss);
		r->at = now_ns();
		p->n++;
		if (p->echo) {
			assert_int_equal(sendto(p->fd, b, (size_t)n, 0,
						(struct sockaddr *)&ss, sl), n);
			p->echoed++;
		}
	}
}

static void rig_start(struct rig *r, int family,
		      const struct uiw_uf_config *cfg)
{
	memset(r, 0, sizeof(*r));
	r->family = family;
	peer_open(&r->up, family, true);
	for (int i = 0; i < NCLI; i++)
		peer_open(&r->cli[i], family, false);
	r->uf = uiw_uf_start_to(family == AF_INET ? "127.0.0.1" : "::1",
				r->up.port, cfg);
	assert_non_null(r->uf);
	assert_int_not_equal(uiw_uf_port(r->uf), 0);
	assert_int_not_equal(uiw_uf_port(r->uf), r->up.port);
}

static void rig_stop(struct rig *r)
{
	uiw_uf_stop(r->uf);
	r->uf = NULL;
	peer_close(&r->up);
	for (int i = 0; i < NCLI; i++)
		peer_close(&r->cli[i]);
}

static void send_to_port(int fd, int family, uint16_t port, uint32_t client,
			 uint32_t seq, size_t len)
{
	static uint8_t b[65536];
	struct sockaddr_storage ss;
	socklen_t sl;

	assert_true(len >= HDR && len <= sizeof(b));
	make_msg(b, len, client, seq);
	uiw_rl_loopback(family, port, &ss, &sl);
	assert_int_equal(sendto(fd, b, len, 0, (struct sockaddr *)&ss, sl),
			 (ssize_t)len);
}

/* Client c sends datagram seq of length len to the relay. */
static void cli_send(struct rig *r, int c, uint32_t seq, size_t len)
{
	send_to_port(r->cli[c].fd, r->family, uiw_uf_port(r->uf), (uint32_t)c,
		     seq, len);
	r->sent[UIW_UF_C2S]++;
}

/* The upstream sends datagram seq straight to the relay's port port (a
 * client's socket there), marked as client c's. */
static void up_send(struct rig *r, uint16_t port, int c, uint32_t seq)
{
	send_to_port(r->up.fd, r->family, port, (uint32_t)c, seq,
		     len_of(seq));
	r->sent[UIW_UF_S2C]++;
}

static size_t cli_total(const struct rig *r)
{
	size_t n = 0;

	for (int i = 0; i < NCLI; i++)
		n += r->cli[i].n;
	return n;
}

/* Reads at every peer until the upstream has up datagrams and the
 * clients cli between them, or ms pass.  True when they have. */
static bool pump(struct rig *r, size_t up, size_t cli, int ms)
{
	int64_t end = now_ns() + (int64_t)ms * MS;

	for (;;) {
		struct pollfd p[1 + NCLI];
		int64_t left;

		peer_drain(&r->up);
		for (int i = 0; i < NCLI; i++)
			peer_drain(&r->cli[i]);
		if (r->up.n >= up && cli_total(r) >= cli)
			return true;
		left = end - now_ns();
		if (left <= 0)
			return false;
		p[0] = (struct pollfd){ .fd = r->up.fd, .events = POLLIN };
		for (int i = 0; i < NCLI; i++)
			p[1 + i] = (struct pollfd){ .fd = r->cli[i].fd,
						    .events = POLLIN };
		poll(p, 1 + NCLI, (int)(left / MS) + 1);
	}
}

static void check_balance(const struct uiw_uf_stats *st)
{
	for (int i = 0; i < 2; i++) {
		const struct uiw_uf_dir_stats *d = &st->d[i];

		assert_int_equal(d->received,
				 d->forwarded + d->dropped + d->overflow +
				 d->send_errors + d->pending);
	}
}

/* Waits until the relay has dealt with everything sent so far, both
 * ways, and every datagram it forwarded has reached its peer (the
 * upstream's echoes included). */
static void settle(struct rig *r)
{
	struct uiw_uf_stats st;
	uint64_t up, cli;

	assert_int_equal(uiw_uf_wait_done(r->uf, UIW_UF_C2S,
					  r->sent[UIW_UF_C2S], TMO_MS), 0);
	uiw_uf_get_stats(r->uf, &st);
	up = st.d[UIW_UF_C2S].forwarded + st.d[UIW_UF_C2S].duplicated;
	assert_true(pump(r, up, 0, TMO_MS));
	assert_int_equal(uiw_uf_wait_done(r->uf, UIW_UF_S2C,
					  r->sent[UIW_UF_S2C] + r->up.echoed,
					  TMO_MS), 0);
	uiw_uf_get_stats(r->uf, &st);
	cli = st.d[UIW_UF_S2C].forwarded + st.d[UIW_UF_S2C].duplicated;
	assert_true(pump(r, up, cli, TMO_MS));
	/* Nothing more than the relay said it sent. */
	assert_int_equal(r->up.n, up);
	assert_int_equal(cli_total(r), cli);
	assert_int_equal(r->up.bad, 0);
	for (int i = 0; i < NCLI; i++)
		assert_int_equal(r->cli[i].bad, 0);
	check_balance(&st);
}

/* Client c sends datagrams [from, to) of the usual lengths, a window at
 * a time, each window settled. */
static void cli_stream(struct rig *r, int c, uint32_t from, uint32_t to)
{
	for (uint32_t s = from; s < to; s++) {
		cli_send(r, c, s, len_of(s));
		if ((s - from + 1) % WINDOW == 0 || s + 1 == to)
			settle(r);
	}
}

static struct uiw_uf_config *config(struct uiw_uf_config *c, uint64_t seed)
{
	uiw_uf_config_init(c);
	c->seed = seed;
	return c;
}

/* The relay's port towards the upstream for client c: where the
 * upstream saw c's datagrams come from.  c must have been heard. */
static uint16_t relay_port_of(const struct rig *r, int c)
{
	for (size_t i = 0; i < r->up.n; i++)
		if (r->up.rec[i].client == (uint32_t)c)
			return r->up.rec[i].from;
	fail_msg("client %d has not reached the upstream", c);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Tests                                                               */

static void pass_through(int family)
{
	struct rig r;
	struct uiw_uf_stats st;
	uint64_t bytes = 0;
	const uint32_t n = 300;

	rig_start(&r, family, NULL);
	for (uint32_t s = 0; s < n; s++) {
		/* Sizes from the header alone to 1.5 KB, and one large. */
		size_t len = s == 150 ? 60000 : HDR + (s * 53u) % 1500u;

		cli_send(&r, 0, s, len);
		bytes += len;
		if (s % WINDOW == WINDOW - 1 || s == 149 || s == 150 ||
		    s + 1 == n)
			settle(&r);
	}
	/* Everything, once, in order, both ways. */
	assert_int_equal(r.up.n, n);
	assert_int_equal(r.cli[0].n, n);
	for (uint32_t s = 0; s < n; s++) {
		assert_int_equal(r.up.rec[s].seq, s);
		assert_int_equal(r.up.rec[s].client, 0);
		assert_int_equal(r.cli[0].rec[s].seq, s);
		/* The echo comes back from the relay's own port. */
		assert_int_equal(r.cli[0].rec[s].from, uiw_uf_port(r.uf));
		/* One source port towards the upstream, the relay's. */
		assert_int_equal(r.up.rec[s].from, r.up.rec[0].from);
	}
	assert_int_not_equal(r.up.rec[0].from, r.cli[0].port);
	assert_int_not_equal(r.up.rec[0].from, uiw_uf_port(r.uf));
	uiw_uf_get_stats(r.uf, &st);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(st.d[i].received, n);
		assert_int_equal(st.d[i].forwarded, n);
		assert_int_equal(st.d[i].bytes, bytes);
		assert_int_equal(st.d[i].dropped + st.d[i].duplicated +
				 st.d[i].reordered + st.d[i].delayed +
				 st.d[i].overflow + st.d[i].send_errors, 0);
	}
	assert_int_equal(st.clients, 1);
	assert_int_equal(st.refused, 0);
	rig_stop(&r);
}

static void test_pass_through(void **state)
{
	pass_through(AF_INET);
}

static void test_pass_through_ipv6(void **state)
{
	pass_through(AF_INET6);
}

static void test_drop_all(void **state)
{
	struct uiw_uf_config cfg;
	struct uiw_uf_stats st;
	struct rig r;
	uint16_t rp;

	config(&cfg, 1);
	cfg.faults[UIW_UF_C2S].drop_ppm = UIW_UF_PPM;
	rig_start(&r, AF_INET, &cfg);
	cli_stream(&r, 0, 0, 100);
	assert_int_equal(r.up.n, 0);
	assert_int_equal(r.cli[0].n, 0);
	uiw_uf_get_stats(r.uf, &st);
	assert_int_equal(st.d[UIW_UF_C2S].received, 100);
	assert_int_equal(st.d[UIW_UF_C2S].dropped, 100);
	assert_int_equal(st.d[UIW_UF_C2S].forwarded, 0);

	/* Let one through: it is the first the upstream ever sees. */
	assert_int_equal(uiw_uf_drop(r.uf, UIW_UF_C2S, 0), 0);
	cli_stream(&r, 0, 1000, 1001);
	assert_int_equal(r.up.n, 1);
	assert_int_equal(r.up.rec[0].seq, 1000);

	/* The other way. */
	rp = relay_port_of(&r, 0);
	assert_int_equal(uiw_uf_drop(r.uf, UIW_UF_S2C, UIW_UF_PPM), 0);
	for (uint32_t s = 0; s < 50; s++)
		up_send(&r, rp, 0, 2000 + s);
	settle(&r);
	assert_int_equal(r.cli[0].n, 1);	/* the echo of 1000 */
	assert_int_equal(uiw_uf_drop(r.uf, UIW_UF_S2C, 0), 0);
	up_send(&r, rp, 0, 3000);
	settle(&r);
	assert_int_equal(r.cli[0].n, 2);
	assert_int_equal(r.cli[0].rec[1].seq, 3000);
	uiw_uf_get_stats(r.uf, &st);
	assert_int_equal(st.d[UIW_UF_S2C].dropped, 50);
	assert_int_equal(st.d[UIW_UF_S2C].forwarded, 2);
	rig_stop(&r);
}

/* Over 10000 datagrams, 1 % dropped: expected 100, standard deviation
 * about 10; the bounds are four of those away. */
static void test_drop_rate(void **state)
{
	struct uiw_uf_config cfg;
	struct uiw_uf_stats st;
	struct rig r;
	const uint32_t n = 10000;
	uint64_t dropped;

	config(&cfg, 42);
	cfg.faults[UIW_UF_C2S].drop_ppm = 10000;
	rig_start(&r, AF_INET, &cfg);
	cli_stream(&r, 0, 0, n);
	dropped = n - r.up.n;
	assert_in_range(dropped, 60, 140);
	uiw_uf_get_stats(r.uf, &st);
	assert_int_equal(st.d[UIW_UF_C2S].received, n);
	assert_int_equal(st.d[UIW_UF_C2S].dropped, dropped);
	assert_int_equal(st.d[UIW_UF_C2S].forwarded, r.up.n);
	/* What arrived arrived once and in order; the echoes all came. */
	for (size_t i = 1; i < r.up.n; i++)
		assert_true(r.up.rec[i].seq > r.up.rec[i - 1].seq);
	assert_int_equal(st.d[UIW_UF_S2C].forwarded, r.up.n);
	assert_int_equal(r.cli[0].n, r.up.n);
	rig_stop(&r);
}

/* Which of n datagrams a relay with this seed drops at 5 %. */
static void dropped_set(uint64_t seed, uint32_t n, bool *lost)
{
	struct uiw_uf_config cfg;
	struct rig r;

	config(&cfg, seed);
	cfg.faults[UIW_UF_C2S].drop_ppm = 50000;
	rig_start(&r, AF_INET, &cfg);
	r.up.echo = false;
	cli_stream(&r, 0, 0, n);
	for (uint32_t s = 0; s < n; s++)
		lost[s] = true;
	for (size_t i = 0; i < r.up.n; i++)
		lost[r.up.rec[i].seq] = false;
	rig_stop(&r);
}

static void test_drop_reproducible(void **state)
{
	enum { N = 2000 };
	static bool a[N], b[N], c[N];
	unsigned int na = 0, differ = 0;

	dropped_set(7, N, a);
	dropped_set(7, N, b);
	dropped_set(8, N, c);
	for (int i = 0; i < N; i++) {
		assert_int_equal(a[i], b[i]);
		na += a[i];
		differ += a[i] != c[i];
	}
	assert_in_range(na, 50, 150);	/* 100 expected */
	assert_true(differ > 0);
}

static void test_burst(void **state)
{
	struct uiw_uf_stats st;
	struct rig r;

	rig_start(&r, AF_INET, NULL);
	assert_int_equal(uiw_uf_burst(r.uf, UIW_UF_C2S, 5), 0);
	uiw_uf_get_stats(r.uf, &st);
	assert_int_equal(st.d[UIW_UF_C2S].burst_left, 5);
	cli_stream(&r, 0, 0, 20);
	assert_int_equal(r.up.n, 15);
	for (uint32_t i = 0; i < 15; i++)
		assert_int_equal(r.up.rec[i].seq, 5 + i);
	uiw_uf_get_stats(r.uf, &st);
	assert_int_equal(st.d[UIW_UF_C2S].dropped, 5);
	assert_int_equal(st.d[UIW_UF_C2S].burst_left, 0);
	assert_int_equal(st.d[UIW_UF_S2C].dropped, 0);
	rig_stop(&r);
}

static void test_duplicate(void **state)
{
	struct uiw_uf_config cfg;
	struct uiw_uf_stats st;
	struct rig r;
	uint64_t bytes = 0, twice = 0;
	size_t i;

	config(&cfg, 3);
	cfg.faults[UIW_UF_C2S].dup_ppm = UIW_UF_PPM;
	rig_start(&r, AF_INET, &cfg);
	cli_stream(&r, 0, 0, 100);
	/* Each twice in a row; the upstream echoes both copies. */
	assert_int_equal(r.up.n, 200);
	for (uint32_t s = 0; s < 100; s++) {
		assert_int_equal(r.up.rec[2 * s].seq, s);
		assert_int_equal(r.up.rec[2 * s + 1].seq, s);
		bytes += 2 * len_of(s);
	}
	assert_int_equal(r.cli[0].n, 200);
	uiw_uf_get_stats(r.uf, &st);
	assert_int_equal(st.d[UIW_UF_C2S].forwarded, 100);
	assert_int_equal(st.d[UIW_UF_C2S].duplicated, 100);
	assert_int_equal(st.d[UIW_UF_C2S].bytes, bytes);
	assert_int_equal(st.d[UIW_UF_S2C].duplicated, 0);

	/* Some of the time: the counter tells how many came twice. */
	assert_int_equal(uiw_uf_dup(r.uf, UIW_UF_C2S, 300000), 0);
	cli_stream(&r, 0, 100, 400);
	for (i = 200; i + 1 < r.up.n; i++)
		twice += r.up.rec[i].seq == r.up.rec[i + 1].seq;
	uiw_uf_get_stats(r.uf, &st);
	assert_int_equal(st.d[UIW_UF_C2S].duplicated - 100, twice);
	assert_in_range(twice, 50, 130);	/* 90 expected */
	assert_int_equal(r.up.n, 200 + 300 + twice);
	rig_stop(&r);
}

static void test_reorder(void **state)
{
	struct uiw_uf_config cfg;
	struct uiw_uf_stats st;
	struct rig r;
	const uint32_t n = 300;
	static bool seen[300];
	uint32_t top = 0;
	unsigned int late = 0;

	config(&cfg, 11);
	cfg.faults[UIW_UF_C2S].reorder_ppm = 200000;
	cfg.faults[UIW_UF_C2S].reorder_after = 3;
	cfg.faults[UIW_UF_C2S].reorder_ms = 50;
	rig_start(&r, AF_INET, &cfg);
	cli_stream(&r, 0, 0, n);
	/* All arrive, once each, and not all in order. */
	assert_int_equal(r.up.n, n);
	for (size_t i = 0; i < r.up.n; i++) {
		uint32_t s = r.up.rec[i].seq;

		assert_true(s < n);
		assert_false(seen[s]);
		seen[s] = true;
		if (i > 0 && s < top)
			late++;		/* a later one overtook it */
		if (s > top)
			top = s;
	}
	uiw_uf_get_stats(r.uf, &st);
	assert_true(late > 0);
	/* Only a held datagram can be overtaken. */
	assert_true(late <= st.d[UIW_UF_C2S].reordered);
	assert_int_equal(st.d[UIW_UF_C2S].forwarded, n);
	assert_int_equal(st.d[UIW_UF_S2C].reordered, 0);
	rig_stop(&r);
}

/* A held datagram goes right after the M-th datagram that overtakes
 * it, not at its (here: an hour away) latest time. */
static void test_reorder_after_count(void **state)
{
	struct uiw_uf_stats st;
	struct rig r;

	rig_start(&r, AF_INET, NULL);
	assert_int_equal(uiw_uf_reorder(r.uf, UIW_UF_C2S, UIW_UF_PPM, 2,
					UIW_UF_MAX_MS), 0);
	cli_send(&r, 0, 0, len_of(0));
	assert_int_equal(uiw_uf_wait_received(r.uf, UIW_UF_C2S, 1, TMO_MS),
			 0);
	assert_int_equal(uiw_uf_reorder(r.uf, UIW_UF_C2S, 0, 2,
					UIW_UF_MAX_MS), 0);
	cli_send(&r, 0, 1, len_of(1));
	assert_int_equal(uiw_uf_wait_done(r.uf, UIW_UF_C2S, 1, TMO_MS), 0);
	assert_true(pump(&r, 1, 1, TMO_MS));
	uiw_uf_get_stats(r.uf, &st);
	assert_int_equal(st.d[UIW_UF_C2S].pending, 1);
	cli_stream(&r, 0, 2, 3);
	assert_int_equal(r.up.n, 3);
	assert_int_equal(r.up.rec[0].seq, 1);
	assert_int_equal(r.up.rec[1].seq, 2);
	assert_int_equal(r.up.rec[2].seq, 0);
	uiw_uf_get_stats(r.uf, &st);
	assert_int_equal(st.d[UIW_UF_C2S].reordered, 1);
	assert_int_equal(st.d[UIW_UF_C2S].pending, 0);
	rig_stop(&r);
}

/* A hold that no later datagram ends is released after its time. */
static void test_reorder_released_by_time(void **state)
{
	struct rig r;

	rig_start(&r, AF_INET, NULL);
	assert_int_equal(uiw_uf_reorder(r.uf, UIW_UF_C2S, UIW_UF_PPM, 0, 60),
			 0);
	cli_stream(&r, 0, 0, 3);
	assert_int_equal(r.up.n, 3);
	for (uint32_t s = 0; s < 3; s++) {
		assert_int_equal(r.up.rec[s].seq, s);
		assert_true(r.up.rec[s].at - r.up.rec[s].sent >= 60 * MS);
	}
	rig_stop(&r);
}

static void test_delay(void **state)
{
	struct uiw_uf_config cfg;
	struct uiw_uf_stats st;
	struct rig r;

	config(&cfg, 1);
	cfg.faults[UIW_UF_C2S].delay_ms = 80;
	rig_start(&r, AF_INET, &cfg);
	for (uint32_t s = 0; s < 10; s++)
		cli_send(&r, 0, s, len_of(s));
	assert_int_equal(uiw_uf_wait_received(r.uf, UIW_UF_C2S, 10, TMO_MS),
			 0);
	uiw_uf_get_stats(r.uf, &st);
	assert_int_equal(st.d[UIW_UF_C2S].pending +
			 st.d[UIW_UF_C2S].forwarded, 10);
	settle(&r);
	assert_int_equal(r.up.n, 10);
	for (uint32_t s = 0; s < 10; s++) {
		const struct rec *c = &r.up.rec[s];

		assert_int_equal(c->seq, s);		/* in order */
		assert_true(c->at - c->sent >= 80 * MS);
		assert_true(c->at - c->sent < 80 * MS + (int64_t)TMO_MS * MS);
		assert_int_equal(r.cli[0].rec[s].seq, s);
	}
	uiw_uf_get_stats(r.uf, &st);
	assert_int_equal(st.d[UIW_UF_C2S].delayed, 10);
	assert_int_equal(st.d[UIW_UF_S2C].delayed, 0);
	assert_int_equal(st.d[UIW_UF_C2S].pending, 0);
	rig_stop(&r);
}

static void test_cut(void **state)
{
	struct uiw_uf_stats st;
	struct rig r;
	uint16_t rp;

	rig_start(&r, AF_INET, NULL);
	cli_stream(&r, 0, 0, 1);
	rp = relay_port_of(&r, 0);

	assert_int_equal(uiw_uf_cut(r.uf, false), 0);
	for (uint32_t s = 0; s < 10; s++) {
		cli_send(&r, 0, 100 + s, len_of(s));
		up_send(&r, rp, 0, 200 + s);
	}
	settle(&r);
	assert_int_equal(r.up.n, 1);
	assert_int_equal(r.cli[0].n, 1);
	uiw_uf_get_stats(r.uf, &st);
	assert_true(st.cut);
	assert_int_equal(st.d[UIW_UF_C2S].dropped, 10);
	assert_int_equal(st.d[UIW_UF_S2C].dropped, 10);

	/* Uncut: the next datagram each way is the first to pass. */
	assert_int_equal(uiw_uf_uncut(r.uf), 0);
	cli_stream(&r, 0, 300, 301);
	assert_int_equal(r.up.n, 2);
	assert_int_equal(r.up.rec[1].seq, 300);
	assert_int_equal(r.cli[0].n, 2);
	assert_int_equal(r.cli[0].rec[1].seq, 300);

	/* Datagrams held when the cut comes are lost too. */
	assert_int_equal(uiw_uf_delay(r.uf, UIW_UF_C2S, 100), 0);
	for (uint32_t s = 0; s < 5; s++)
		cli_send(&r, 0, 400 + s, len_of(s));
	assert_int_equal(uiw_uf_wait_received(r.uf, UIW_UF_C2S,
					      r.sent[UIW_UF_C2S], TMO_MS), 0);
	assert_int_equal(uiw_uf_cut(r.uf, true), 0);
	settle(&r);
	assert_int_equal(r.up.n, 2);
	uiw_uf_get_stats(r.uf, &st);
	assert_int_equal(st.d[UIW_UF_C2S].delayed, 5);
	assert_int_equal(st.d[UIW_UF_C2S].dropped, 15);

	/* For good. */
	assert_int_equal(uiw_uf_uncut(r.uf), -1);
	assert_int_equal(errno, EPERM);
	assert_int_equal(uiw_uf_delay(r.uf, UIW_UF_C2S, 0), 0);
	cli_stream(&r, 0, 500, 510);
	assert_int_equal(r.up.n, 2);
	uiw_uf_get_stats(r.uf, &st);
	assert_true(st.cut && st.cut_forever);
	rig_stop(&r);
}

static void test_two_clients(void **state)
{
	struct uiw_uf_config cfg;
	struct uiw_uf_stats st;
	struct rig r;
	uint16_t p0, p1;

	config(&cfg, 1);
	cfg.max_clients = 2;
	rig_start(&r, AF_INET, &cfg);
	for (uint32_t s = 0; s < 40; s++)
		cli_send(&r, (int)(s % 2), s, len_of(s));
	settle(&r);
	assert_int_equal(r.up.n, 40);
	p0 = relay_port_of(&r, 0);
	p1 = relay_port_of(&r, 1);
	/* Distinct source ports, one per client, none of them a client's
	 * own or the relay's listening port. */
	assert_int_not_equal(p0, p1);
	for (int c = 0; c < NCLI; c++) {
		assert_int_not_equal(p0, r.cli[c].port);
		assert_int_not_equal(p1, r.cli[c].port);
	}
	assert_int_not_equal(p0, uiw_uf_port(r.uf));
	assert_int_not_equal(p1, uiw_uf_port(r.uf));
	for (size_t i = 0; i < r.up.n; i++)
		assert_int_equal(r.up.rec[i].from,
				 r.up.rec[i].client == 0 ? p0 : p1);
	/* Each echo went back to the client it came from. */
	for (int c = 0; c < 2; c++) {
		assert_int_equal(r.cli[c].n, 20);
		for (size_t i = 0; i < r.cli[c].n; i++)
			assert_int_equal(r.cli[c].rec[i].client, c);
	}
	/* The upstream writes to one client's port: only that one hears. */
	up_send(&r, p1, 1, 999);
	settle(&r);
	assert_int_equal(r.cli[0].n, 20);
	assert_int_equal(r.cli[1].n, 21);
	assert_int_equal(r.cli[1].rec[20].seq, 999);

	/* A third client is beyond the limit: refused, never forwarded. */
	send_to_port(r.cli[2].fd, AF_INET, uiw_uf_port(r.uf), 2, 77,
		     len_of(77));
	cli_stream(&r, 0, 78, 79);
	assert_int_equal(r.up.n, 41);
	assert_int_equal(r.up.rec[40].seq, 78);
	uiw_uf_get_stats(r.uf, &st);
	assert_int_equal(st.refused, 1);
	assert_int_equal(st.clients, 2);
	assert_int_equal(r.cli[2].n, 0);
	rig_stop(&r);
}

static void test_pending_limits(void **state)
{
	struct uiw_uf_config cfg;
	struct uiw_uf_stats st;
	struct rig r;

	config(&cfg, 1);
	cfg.max_pending = 10;
	cfg.faults[UIW_UF_C2S].delay_ms = UIW_UF_MAX_MS;
	rig_start(&r, AF_INET, &cfg);
	for (uint32_t s = 0; s < 30; s++)
		cli_send(&r, 0, s, len_of(s));
	assert_int_equal(uiw_uf_wait_done(r.uf, UIW_UF_C2S, 20, TMO_MS), 0);
	uiw_uf_get_stats(r.uf, &st);
	assert_int_equal(st.d[UIW_UF_C2S].received, 30);
	assert_int_equal(st.d[UIW_UF_C2S].pending, 10);
	assert_int_equal(st.d[UIW_UF_C2S].overflow, 20);
	check_balance(&st);
	rig_stop(&r);

	/* The octet limit: three datagrams of 300 in 1000 octets. */
	config(&cfg, 1);
	cfg.max_pending_bytes = 1000;
	cfg.faults[UIW_UF_C2S].delay_ms = UIW_UF_MAX_MS;
	rig_start(&r, AF_INET, &cfg);
	for (uint32_t s = 0; s < 5; s++)
		cli_send(&r, 0, s, 300);
	assert_int_equal(uiw_uf_wait_done(r.uf, UIW_UF_C2S, 2, TMO_MS), 0);
	uiw_uf_get_stats(r.uf, &st);
	assert_int_equal(st.d[UIW_UF_C2S].pending, 3);
	assert_int_equal(st.d[UIW_UF_C2S].overflow, 2);
	rig_stop(&r);
}

struct waiter {
	struct uiw_uf *uf;
	int rc, err;
};

static void *waiter_main(void *arg)
{
	struct waiter *w = arg;

	w->rc = uiw_uf_wait_done(w->uf, UIW_UF_C2S, 1000, -1);
	w->err = errno;
	return NULL;
}

static void test_stop_with_pending(void **state)
{
	struct uiw_uf_config cfg;
	struct uiw_uf_stats st;
	struct waiter w = { 0 };
	struct rig r;
	pthread_t t;
	int64_t t0, took;

	config(&cfg, 1);
	cfg.faults[UIW_UF_C2S].delay_ms = 10000;
	cfg.faults[UIW_UF_S2C].reorder_ppm = UIW_UF_PPM;
	cfg.faults[UIW_UF_S2C].reorder_ms = 10000;
	rig_start(&r, AF_INET, &cfg);
	for (uint32_t s = 0; s < 100; s++)
		cli_send(&r, 0, s, len_of(s));
	assert_int_equal(uiw_uf_wait_received(r.uf, UIW_UF_C2S, 100, TMO_MS),
			 0);
	uiw_uf_get_stats(r.uf, &st);
	assert_int_equal(st.d[UIW_UF_C2S].pending, 100);

	w.uf = r.uf;
	assert_int_equal(pthread_create(&t, NULL, waiter_main, &w), 0);
	t0 = now_ns();
	uiw_uf_halt(r.uf);
	/* Whether the waiter was already waiting or not, it returns. */
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(w.rc, -1);
	assert_int_equal(w.err, ECANCELED);
	uiw_uf_stop(r.uf);
	took = now_ns() - t0;
	assert_true(took < 1000 * MS);
	r.uf = NULL;
	/* Nothing held was let go. */
	peer_drain(&r.up);
	assert_int_equal(r.up.n, 0);
	rig_stop(&r);
}

/* ------------------------------------------------------------------ */
/* Filters                                                             */

/* Picks the test datagrams whose number is a multiple of *arg. */
static bool every_nth(void *arg, const uint8_t *data, size_t len)
{
	uint32_t seq;

	if (len < HDR)
		return false;
	memcpy(&seq, data + 4, 4);
	return seq % *(const uint32_t *)arg == 0;
}

/* Held datagrams wait while the others pass; released, they go in the
 * order they came. */
static void test_filter_hold(void **state)
{
	static const uint32_t passed[] = { 1, 2, 4, 5, 7, 8 };
	uint32_t three = 3;
	struct uiw_uf_stats st;
	struct rig r;

	rig_start(&r, AF_INET, NULL);
	r.up.echo = false;
	assert_int_equal(uiw_uf_match(r.uf, UIW_UF_C2S, every_nth, &three,
				      UIW_UF_HOLD, UIW_UF_MAX_MS), 0);
	for (uint32_t s = 0; s < 9; s++)
		cli_send(&r, 0, s, len_of(s));
	assert_int_equal(uiw_uf_wait_matched(r.uf, UIW_UF_C2S, 3, TMO_MS), 0);
	assert_int_equal(uiw_uf_wait_done(r.uf, UIW_UF_C2S, 6, TMO_MS), 0);
	assert_true(pump(&r, 6, 0, TMO_MS));
	uiw_uf_get_stats(r.uf, &st);
	assert_int_equal(st.d[UIW_UF_C2S].matched, 3);
	assert_int_equal(st.d[UIW_UF_C2S].pending, 3);
	assert_int_equal(st.d[UIW_UF_C2S].forwarded, 6);
	assert_int_equal(st.d[UIW_UF_C2S].reordered + st.d[UIW_UF_C2S].delayed,
			 0);
	assert_int_equal(r.up.n, 6);
	for (size_t i = 0; i < 6; i++)
		assert_int_equal(r.up.rec[i].seq, passed[i]);
	check_balance(&st);

	/* Without the filter the next goes straight on; the held stay. */
	assert_int_equal(uiw_uf_match(r.uf, UIW_UF_C2S, NULL, NULL,
				      UIW_UF_COUNT, 0), 0);
	cli_send(&r, 0, 9, len_of(9));
	assert_int_equal(uiw_uf_wait_done(r.uf, UIW_UF_C2S, 7, TMO_MS), 0);
	assert_true(pump(&r, 7, 0, TMO_MS));
	assert_int_equal(r.up.rec[6].seq, 9);
	assert_int_equal(uiw_uf_release(r.uf, UIW_UF_C2S), 0);
	settle(&r);
	assert_int_equal(r.up.n, 10);
	assert_int_equal(r.up.rec[7].seq, 0);
	assert_int_equal(r.up.rec[8].seq, 3);
	assert_int_equal(r.up.rec[9].seq, 6);
	uiw_uf_get_stats(r.uf, &st);
	assert_int_equal(st.d[UIW_UF_C2S].pending, 0);
	assert_int_equal(st.d[UIW_UF_C2S].forwarded, 10);
	assert_int_equal(st.d[UIW_UF_C2S].matched, 3);
	assert_int_equal(st.d[UIW_UF_S2C].matched, 0);
	rig_stop(&r);
}

/* A hold nobody releases ends after its time; one held when the path
 * is cut is lost. */
static void test_filter_hold_time_and_cut(void **state)
{
	uint32_t one = 1;
	struct uiw_uf_stats st;
	struct rig r;

	rig_start(&r, AF_INET, NULL);
	assert_int_equal(uiw_uf_match(r.uf, UIW_UF_C2S, every_nth, &one,
				      UIW_UF_HOLD, 60), 0);
	cli_stream(&r, 0, 0, 3);
	assert_int_equal(r.up.n, 3);
	for (uint32_t s = 0; s < 3; s++) {
		assert_int_equal(r.up.rec[s].seq, s);
		assert_true(r.up.rec[s].at - r.up.rec[s].sent >= 60 * MS);
	}
	assert_int_equal(uiw_uf_match(r.uf, UIW_UF_C2S, every_nth, &one,
				      UIW_UF_HOLD, UIW_UF_MAX_MS), 0);
	cli_send(&r, 0, 3, len_of(3));
	assert_int_equal(uiw_uf_wait_matched(r.uf, UIW_UF_C2S, 4, TMO_MS), 0);
	assert_int_equal(uiw_uf_cut(r.uf, false), 0);
	assert_int_equal(uiw_uf_release(r.uf, UIW_UF_C2S), 0);
	settle(&r);
	assert_int_equal(r.up.n, 3);
	uiw_uf_get_stats(r.uf, &st);
	assert_int_equal(st.d[UIW_UF_C2S].dropped, 1);
	assert_int_equal(st.d[UIW_UF_C2S].pending, 0);
	rig_stop(&r);
}

/* Counting changes nothing; dropping drops; the other direction and
 * the random draws are untouched. */
static void test_filter_count_drop(void **state)
{
	uint32_t two = 2, one = 1;
	struct uiw_uf_stats st;
	struct rig r;

	rig_start(&r, AF_INET, NULL);
	assert_int_equal(uiw_uf_match(r.uf, UIW_UF_S2C, every_nth, &one,
				      UIW_UF_COUNT, 0), 0);
	cli_stream(&r, 0, 0, 10);
	assert_int_equal(r.up.n, 10);
	assert_int_equal(r.cli[0].n, 10);
	uiw_uf_get_stats(r.uf, &st);
	assert_int_equal(st.d[UIW_UF_S2C].matched, 10);
	assert_int_equal(st.d[UIW_UF_S2C].forwarded, 10);
	assert_int_equal(st.d[UIW_UF_C2S].matched, 0);

	assert_int_equal(uiw_uf_match(r.uf, UIW_UF_C2S, every_nth, &two,
				      UIW_UF_DROP, 0), 0);
	cli_stream(&r, 0, 10, 20);
	assert_int_equal(r.up.n, 15);
	for (size_t i = 10; i < 15; i++)
		assert_int_equal(r.up.rec[i].seq % 2, 1);
	uiw_uf_get_stats(r.uf, &st);
	assert_int_equal(st.d[UIW_UF_C2S].matched, 5);
	assert_int_equal(st.d[UIW_UF_C2S].dropped, 5);
	assert_int_equal(st.d[UIW_UF_S2C].matched, 15);
	check_balance(&st);

	/* A datagram the drop fault takes is not the filter's. */
	assert_int_equal(uiw_uf_drop(r.uf, UIW_UF_C2S, UIW_UF_PPM), 0);
	cli_stream(&r, 0, 20, 22);
	uiw_uf_get_stats(r.uf, &st);
	assert_int_equal(st.d[UIW_UF_C2S].matched, 5);
	assert_int_equal(st.d[UIW_UF_C2S].dropped, 7);

	assert_int_equal(uiw_uf_match(r.uf, UIW_UF_C2S, every_nth, &two, 3, 0),
			 -1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(uiw_uf_match(r.uf, UIW_UF_C2S, every_nth, &two,
				      UIW_UF_HOLD, 0), -1);
	assert_int_equal(uiw_uf_match(r.uf, UIW_UF_C2S, every_nth, &two,
				      UIW_UF_HOLD, UIW_UF_MAX_MS + 1), -1);
	assert_int_equal(uiw_uf_match(r.uf, 2, NULL, NULL, UIW_UF_COUNT, 0),
			 -1);
	assert_int_equal(uiw_uf_release(r.uf, 2), -1);
	assert_int_equal(uiw_uf_wait_matched(r.uf, UIW_UF_C2S, 6, 10), -1);
	assert_int_equal(errno, ETIMEDOUT);
	rig_stop(&r);
}

/* An SCTP packet: the common header, then chunks given as (type,
 * length, value octet) with padding; returns its length. */
static size_t sctp_packet(uint8_t *b, uint32_t vtag, const uint8_t *types,
			  const uint16_t *lens, int n)
{
	size_t off = 12;

	memset(b, 0, 12);
	b[0] = 0x13, b[1] = 0x88, b[2] = 0x13, b[3] = 0x89;
	b[4] = (uint8_t)(vtag >> 24), b[5] = (uint8_t)(vtag >> 16);
	b[6] = (uint8_t)(vtag >> 8), b[7] = (uint8_t)vtag;
	for (int i = 0; i < n; i++) {
		uint8_t *c = b + off;

		memset(c, 0xa5, lens[i]);
		c[0] = types[i];
		c[1] = 0x03;
		c[2] = (uint8_t)(lens[i] >> 8);
		c[3] = (uint8_t)lens[i];
		if (types[i] == 0 && lens[i] >= 16) {
			/* TSN 0x01020304 + i, stream 7 + i, SSN 0x0102,
			 * PPID 16 */
			c[4] = 1, c[5] = 2, c[6] = 3, c[7] = (uint8_t)(4 + i);
			c[8] = 0, c[9] = (uint8_t)(7 + i);
			c[10] = 1, c[11] = 2;
			c[12] = 0, c[13] = 0, c[14] = 0, c[15] = 16;
		}
		off += ((size_t)lens[i] + 3) & ~(size_t)3;
	}
	return off;
}

/* RFC 4960 §3: the first DATA chunk behind a SACK, chunk lengths that
 * do not fit, packets too short. */
static void test_sctp_parse(void **state)
{
	static const uint8_t t1[] = { 3, 0, 0 };
	static const uint16_t l1[] = { 16, 21, 20 };
	static const uint8_t t2[] = { 14 };
	static const uint16_t l2[] = { 4 };
	uint8_t b[256];
	struct uiw_uf_sctp_data d;
	uint16_t sid;
	size_t n;

	n = sctp_packet(b, 0xdeadbeef, t1, l1, 3);
	assert_int_equal(n, 12 + 16 + 24 + 20);
	memset(&d, 0, sizeof(d));
	assert_true(uiw_uf_sctp_first_data(b, n, &d));
	assert_int_equal(d.vtag, 0xdeadbeef);
	assert_int_equal(d.flags, 3);
	assert_int_equal(d.tsn, 0x01020305);
	assert_int_equal(d.sid, 8);
	assert_int_equal(d.ssn, 0x0102);
	assert_int_equal(d.ppid, 16);
	assert_int_equal(d.data_len, 5);
	assert_int_equal(d.index, 1);
	assert_true(uiw_uf_sctp_has_chunk(b, n, 3));
	assert_true(uiw_uf_sctp_has_chunk(b, n, 0));
	assert_false(uiw_uf_sctp_has_chunk(b, n, 14));
	sid = 8;
	assert_true(uiw_uf_match_sctp_sid(&sid, b, n));
	sid = 9;		/* the second DATA chunk's: not the first */
	assert_false(uiw_uf_match_sctp_sid(&sid, b, n));
	assert_false(uiw_uf_match_sctp_sid(NULL, b, n));

	/* Cut inside the DATA chunk: it does not fit, so no DATA. */
	assert_false(uiw_uf_sctp_first_data(b, 12 + 16 + 20, &d));
	assert_true(uiw_uf_sctp_has_chunk(b, 12 + 16 + 20, 3));
	/* Without padding after the last chunk it still fits. */
	assert_true(uiw_uf_sctp_first_data(b, 12 + 16 + 21, NULL));
	/* A chunk length below 4 ends the walk. */
	b[12 + 3] = 2;
	assert_false(uiw_uf_sctp_first_data(b, n, &d));
	assert_false(uiw_uf_sctp_has_chunk(b, n, 3));
	/* A DATA chunk too short for its header. */
	n = sctp_packet(b, 1, t1 + 1, (const uint16_t[]){ 12 }, 1);
	assert_false(uiw_uf_sctp_first_data(b, n, &d));
	/* A packet with no DATA; one shorter than a common header. */
	n = sctp_packet(b, 1, t2, l2, 1);
	assert_false(uiw_uf_sctp_first_data(b, n, &d));
	assert_true(uiw_uf_sctp_has_chunk(b, n, 14));
	assert_false(uiw_uf_sctp_has_chunk(b, 11, 14));
	assert_false(uiw_uf_sctp_first_data(b, 12, &d));
	assert_false(uiw_uf_sctp_first_data(NULL, 0, &d));
}

static void test_misuse(void **state)
{
	struct uiw_uf_config cfg;
	struct uiw_uf_faults f;
	struct sockaddr_storage ss;
	socklen_t len;
	struct uiw_uf *uf;
	uint16_t port;
	int fd;

	assert_null(uiw_uf_start(NULL, 0, NULL));
	assert_int_equal(errno, EINVAL);
	assert_null(uiw_uf_start_to("localhost", 9, NULL));
	assert_int_equal(errno, EINVAL);
	config(&cfg, 1);
	cfg.max_clients = 0;
	assert_null(uiw_uf_start_to("127.0.0.1", 9, &cfg));
	assert_int_equal(errno, EINVAL);
	config(&cfg, 1);
	cfg.faults[UIW_UF_S2C].drop_ppm = UIW_UF_PPM + 1;
	assert_null(uiw_uf_start_to("127.0.0.1", 9, &cfg));
	assert_int_equal(errno, EINVAL);

	/* A port in use; then the same port once it is free. */
	fd = udp_socket(AF_INET, &port);
	assert_true(fd >= 0);
	config(&cfg, 1);
	cfg.port = port;
	assert_null(uiw_uf_start_to("127.0.0.1", 9, &cfg));
	assert_int_equal(errno, EADDRINUSE);
	close(fd);
	uf = uiw_uf_start_to("127.0.0.1", 9, &cfg);
	assert_non_null(uf);
	assert_int_equal(uiw_uf_port(uf), port);
	uiw_uf_addr(uf, &ss, &len);
	assert_int_equal(ss.ss_family, AF_INET);
	assert_int_equal(len, sizeof(struct sockaddr_in));

	assert_int_equal(uiw_uf_drop(uf, 2, 0), -1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(uiw_uf_dup(uf, UIW_UF_C2S, UIW_UF_PPM + 1), -1);
	assert_int_equal(uiw_uf_reorder(uf, UIW_UF_C2S, 1, 3, 0), -1);
	assert_int_equal(uiw_uf_delay(uf, UIW_UF_S2C, UIW_UF_MAX_MS + 1), -1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(uiw_uf_set_faults(uf, UIW_UF_C2S, NULL), -1);
	assert_int_equal(uiw_uf_wait_done(uf, UIW_UF_C2S, 1, 10), -1);
	assert_int_equal(errno, ETIMEDOUT);
	/* A refused change leaves the faults as they were. */
	assert_int_equal(uiw_uf_reorder(uf, UIW_UF_C2S, 5, 2, 7), 0);
	assert_int_equal(uiw_uf_reorder(uf, UIW_UF_C2S, 9, 9, 0), -1);
	assert_int_equal(uiw_uf_get_faults(uf, UIW_UF_C2S, &f), 0);
	assert_int_equal(f.reorder_ppm, 5);
	assert_int_equal(f.reorder_after, 2);
	assert_int_equal(f.reorder_ms, 7);
	uiw_uf_stop(uf);
	uiw_uf_stop(NULL);
}

/* ------------------------------------------------------------------ */
/* The command-line front end, --udp                                   */

static bool has(const char *reply, const char *what)
{
	if (strstr(reply, what))
		return true;
	print_error("\"%s\" not in \"%s\"\n", what, reply);
	return false;
}

/* Reads at the upstream (which echoes) and the client until the client
 * has n datagrams. */
static void await_echoes(struct peer *up, struct peer *cli, size_t n)
{
	int64_t end = now_ns() + (int64_t)TMO_MS * MS;

	for (;;) {
		struct pollfd p[2] = { { .fd = up->fd, .events = POLLIN },
				       { .fd = cli->fd, .events = POLLIN } };

		peer_drain(up);
		peer_drain(cli);
		if (cli->n >= n)
			break;
		assert_true(now_ns() < end);
		poll(p, 2, 100);
	}
	assert_int_equal(cli->n, n);
	assert_int_equal(cli->bad + up->bad, 0);
}

static void test_tool_udp(void **state)
{
	struct tool *t = &the_tool;
	char target[64], reply[2048];
	struct peer up, cli;
	uint16_t port;

	peer_open(&up, AF_INET, true);
	peer_open(&cli, AF_INET, false);
	snprintf(target, sizeof(target), "127.0.0.1:%u", up.port);
	port = tool_start(t, (const char *[]){ "--udp", "-t", target,
		"-s", "5", "-c", "4", "-e", "drop c2s 100", NULL });

	for (uint32_t s = 0; s < 3; s++)
		send_to_port(cli.fd, AF_INET, port, 0, s, len_of(s));
	tool_ok(t, "waitdone c2s 3");
	tool_cmd(t, "stats", reply, sizeof(reply));
	assert_true(has(reply, "clients=1 "));
	assert_true(has(reply, " c2s_received=3 "));
	assert_true(has(reply, " c2s_dropped=3 "));
	assert_true(has(reply, " c2s_forwarded=0 "));

	/* Now each datagram twice: two echoes come back. */
	tool_ok(t, "clear c2s");
	tool_ok(t, "dup c2s 100%");
	send_to_port(cli.fd, AF_INET, port, 0, 10, len_of(10));
	await_echoes(&up, &cli, 2);
	assert_int_equal(up.n, 2);
	assert_int_equal(cli.rec[1].seq, 10);
	tool_ok(t, "waitdone s2c 2");
	tool_cmd(t, "stats", reply, sizeof(reply));
	assert_true(has(reply, " c2s_duplicated=1 "));
	assert_true(has(reply, " s2c_forwarded=2 "));

	tool_ok(t, "clear c2s");
	tool_ok(t, "reorder c2s 10 2 30");
	tool_ok(t, "delay s2c 40");
	send_to_port(cli.fd, AF_INET, port, 0, 11, len_of(11));
	await_echoes(&up, &cli, 3);
	assert_true(cli.rec[2].at - cli.rec[2].sent >= 40 * MS);
	tool_cmd(t, "stats", reply, sizeof(reply));
	assert_true(has(reply, " s2c_delayed=1 "));
	tool_ok(t, "burst s2c 4");
	tool_ok(t, "seed 9");
	tool_ok(t, "cut");
	tool_ok(t, "uncut");
	tool_ok(t, "cut forever");
	tool_cmd(t, "stats", reply, sizeof(reply));
	assert_true(has(reply, " cut=1 forever=1 "));
	assert_true(has(reply, " s2c_burst_left=4"));
	tool_refused(t, "uncut");
	tool_refused(t, "drop c2s 100.5");
	tool_refused(t, "split c2s 1");	/* TCP's */
	tool_refused(t, "waitrecv c2s 100 50");
	tool_ok(t, "quit");
	assert_int_equal(tool_exit(t, TOOL_TMO_MS), 0);
	peer_close(&up);
	peer_close(&cli);
}

static void test_tool_udp_signal_and_bad_args(void **state)
{
	struct tool *t = &the_tool;

	tool_start(t, (const char *[]){ "--udp", "-t", "127.0.0.1:9", NULL });
	assert_int_equal(kill(t->pid, SIGTERM), 0);
	assert_int_equal(tool_exit(t, TOOL_TMO_MS), 0);

	tool_spawn(t, (const char *[]){ "--udp", "-t", "127.0.0.1:9", "-n",
					 "1", NULL });
	assert_int_equal(tool_exit(t, TOOL_TMO_MS), 2);
	tool_spawn(t, (const char *[]){ "-t", "127.0.0.1:9", "-s", "1",
					 NULL });
	assert_int_equal(tool_exit(t, TOOL_TMO_MS), 2);
	tool_spawn(t, (const char *[]){ "--udp", "-t", "127.0.0.1:9", "-c",
					 "0", NULL });
	assert_int_equal(tool_exit(t, TOOL_TMO_MS), 2);
	tool_spawn(t, (const char *[]){ "--udp", "-t", "127.0.0.1:9", "-e",
					 "dup s2c x", NULL });
	assert_int_equal(tool_exit(t, TOOL_TMO_MS), 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pass_through),
		cmocka_unit_test(test_pass_through_ipv6),
		cmocka_unit_test(test_drop_all),
		cmocka_unit_test(test_drop_rate),
		cmocka_unit_test(test_drop_reproducible),
		cmocka_unit_test(test_burst),
		cmocka_unit_test(test_duplicate),
		cmocka_unit_test(test_reorder),
		cmocka_unit_test(test_reorder_after_count),
		cmocka_unit_test(test_reorder_released_by_time),
		cmocka_unit_test(test_delay),
		cmocka_unit_test(test_cut),
		cmocka_unit_test(test_two_clients),
		cmocka_unit_test(test_pending_limits),
		cmocka_unit_test(test_stop_with_pending),
		cmocka_unit_test(test_filter_hold),
		cmocka_unit_test(test_filter_hold_time_and_cut),
		cmocka_unit_test(test_filter_count_drop),
		cmocka_unit_test(test_sctp_parse),
		cmocka_unit_test(test_misuse),
		cmocka_unit_test_teardown(test_tool_udp, tool_teardown),
		cmocka_unit_test_teardown(test_tool_udp_signal_and_bad_args,
					  tool_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
