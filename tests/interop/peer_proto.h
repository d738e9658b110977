/*
 * The small protocol of the interop data test, shared by its two ends:
 * uiw_peer.c (uiwarp, on the host) and siw_peer.c (libibverbs and
 * librdmacm over siw, in the guest); over SCTP, uiw_peer --as-guest in
 * the guest.  Plain C, no uiwarp or verbs types.
 *
 * After the connection is up the MPA initiator sends HELLO first (RFC
 * 5044 §7.1.2 rule 4: the responder sends no FPDU before it has received
 * one) and the responder answers with its own HELLO.  A HELLO advertises
 * two buffers of PEER_BUF_SIZE octets: a sink (remote write) and a source
 * (remote read) that holds pattern(PEER_SEED_SRC) from its first octet.
 *
 * Then, for each message size n of the list (the same list at both ends)
 * and each step below, one side acts and the other verifies and answers
 * with RESULT (status 0, or the first octet that differs):
 *
 *   STEP_SEND_H   host Send of n octets         guest checks the message
 *   STEP_SEND_G   guest Send of n octets        host checks the message
 *   STEP_WRITE_H  host RDMA Write of n octets into the guest's sink at
 *                 offset peer_offset(k), then DONE; the guest checks
 *   STEP_WRITE_G  the same from the guest into the host's sink
 *   STEP_READ_H   host RDMA Read of n octets from the guest's source at
 *                 peer_offset(k); the host checks, then sends RESULT
 *   STEP_READ_G   the same from the guest
 *
 * Finally the host sends BYE and both ends disconnect.  (In the error
 * modes of the two programs the guest sends RESULT with the text "ready"
 * after the HELLOs instead, and one end then breaks a rule.)  Control messages
 * are PEER_CTL_SIZE octets, big-endian; every untagged message lands in a
 * receive of PEER_RECV_SIZE octets, so that a receive is always posted and
 * each end knows from the script which message comes next.
 */
#ifndef UIW_INTEROP_PEER_PROTO_H
#define UIW_INTEROP_PEER_PROTO_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define PEER_MAX_MSG	(1u << 20)		/* 1 MiB */
#define PEER_BUF_SIZE	(PEER_MAX_MSG + 64)	/* room for the offsets */
#define PEER_RECV_SIZE	PEER_BUF_SIZE
#define PEER_NRECV	4
#define PEER_CTL_SIZE	64
#define PEER_MAGIC	0x55495750u		/* "UIWP" */
#define PEER_SEED_SRC	0x5eedu
#define PEER_MAX_SIZES	32

enum peer_ctl_type {
	CTL_HELLO = 1,
	CTL_DONE,		/* RDMA Write placed: check it */
	CTL_RESULT,
	CTL_BYE,
};

enum peer_step {
	STEP_SEND_H = 1,
	STEP_SEND_G,
	STEP_WRITE_H,
	STEP_WRITE_G,
	STEP_READ_H,
	STEP_READ_G,
	STEP_LAST = STEP_READ_G,
};

struct peer_ctl {
	uint32_t type;
	uint32_t size_index;
	uint32_t step;
	uint32_t status;	/* RESULT: 0 ok, 1 wrong length, 2 data */
	uint32_t detail;	/* RESULT: length received or octet index */
	uint32_t sink_stag, src_stag, buf_len;
	uint64_t sink_addr, src_addr;
	char text[16];
};

static inline const char *peer_step_name(uint32_t step)
{
	switch (step) {
	case STEP_SEND_H:	return "host Send -> guest";
	case STEP_SEND_G:	return "guest Send -> host";
	case STEP_WRITE_H:	return "host RDMA Write -> guest";
	case STEP_WRITE_G:	return "guest RDMA Write -> host";
	case STEP_READ_H:	return "host RDMA Read <- guest";
	case STEP_READ_G:	return "guest RDMA Read <- host";
	}
	return "?";
}

/* Octet i of the pattern with this seed: changes with every octet and
 * does not repeat with any period that a misplaced segment could hide. */
static inline uint8_t peer_pattern(uint32_t seed, uint32_t i)
{
	return (uint8_t)(((i + seed * 0x10001u) * 0x9e3779b1u) >> 24);
}

static inline void peer_fill(uint8_t *buf, uint32_t len, uint32_t seed,
			     uint32_t start)
{
	uint32_t i;

	for (i = 0; i < len; i++)
		buf[i] = peer_pattern(seed, start + i);
}

/* Index of the first octet that differs, or len when all match. */
static inline uint32_t peer_check(const uint8_t *buf, uint32_t len,
				  uint32_t seed, uint32_t start)
{
	uint32_t i;

	for (i = 0; i < len; i++)
		if (buf[i] != peer_pattern(seed, start + i))
			return i;
	return len;
}

/* The seed of step s for size k: a different pattern every time, so that
 * data left by an earlier step never passes for the expected data. */
static inline uint32_t peer_seed(uint32_t k, uint32_t step)
{
	return k * 16 + step + 1;
}

/* Where RDMA Writes and Reads of size k start in the peer's buffer: odd
 * offsets, so that tagged offsets are not aligned. */
static inline uint32_t peer_offset(uint32_t k)
{
	return (k * 13 + 3) % 61;
}

static inline void peer_put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static inline uint32_t peer_get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

static inline void peer_ctl_pack(const struct peer_ctl *c, uint8_t *b)
{
	memset(b, 0, PEER_CTL_SIZE);
	peer_put32(b, PEER_MAGIC);
	peer_put32(b + 4, c->type);
	peer_put32(b + 8, c->size_index);
	peer_put32(b + 12, c->step);
	peer_put32(b + 16, c->status);
	peer_put32(b + 20, c->detail);
	peer_put32(b + 24, c->sink_stag);
	peer_put32(b + 28, c->src_stag);
	peer_put32(b + 32, c->buf_len);
	peer_put32(b + 36, (uint32_t)(c->sink_addr >> 32));
	peer_put32(b + 40, (uint32_t)c->sink_addr);
	peer_put32(b + 44, (uint32_t)(c->src_addr >> 32));
	peer_put32(b + 48, (uint32_t)c->src_addr);
	memcpy(b + 48 + 4, c->text, 12);
}

/* Returns 0, or -1 when the message is not a control message. */
static inline int peer_ctl_unpack(const uint8_t *b, uint32_t len,
				  struct peer_ctl *c)
{
	if (len != PEER_CTL_SIZE || peer_get32(b) != PEER_MAGIC)
		return -1;
	memset(c, 0, sizeof(*c));
	c->type = peer_get32(b + 4);
	c->size_index = peer_get32(b + 8);
	c->step = peer_get32(b + 12);
	c->status = peer_get32(b + 16);
	c->detail = peer_get32(b + 20);
	c->sink_stag = peer_get32(b + 24);
	c->src_stag = peer_get32(b + 28);
	c->buf_len = peer_get32(b + 32);
	c->sink_addr = (uint64_t)peer_get32(b + 36) << 32 | peer_get32(b + 40);
	c->src_addr = (uint64_t)peer_get32(b + 44) << 32 | peer_get32(b + 48);
	memcpy(c->text, b + 52, 12);
	c->text[12] = '\0';
	return 0;
}

/* Parses "1,4096,1048576" into sizes (each 1..PEER_MAX_MSG).  Returns the
 * count, or -1. */
static inline int peer_parse_sizes(const char *s, uint32_t *sizes)
{
	int n = 0;

	while (*s) {
		unsigned long v = 0;
		const char *p = s;

		while (*p >= '0' && *p <= '9' && v <= PEER_MAX_MSG)
			v = v * 10 + (unsigned long)(*p++ - '0');
		if (p == s || v == 0 || v > PEER_MAX_MSG || n == PEER_MAX_SIZES)
			return -1;
		sizes[n++] = (uint32_t)v;
		if (*p == ',')
			p++;
		else if (*p)
			return -1;
		s = p;
	}
	return n;
}

/* ------------------------------------------------------------------ */
/* The script, run the same way by both ends over their own verbs.     */

struct peer_end {
	int host;			/* 1: the host's part; 0: the guest's
					   (siw_peer, uiw_peer --as-guest) */
	uint8_t *tx;			/* Send and RDMA Write source */
	uint8_t *sink;			/* advertised: the peer writes here */
	uint8_t *rd;			/* RDMA Read sink */
	struct peer_ctl remote;		/* the peer's HELLO */
	void *ctx;
	/* Each returns 0, or -1 after saying why on stderr.  send, write and
	 * read wait for their own completion. */
	int (*send_ctl)(void *ctx, const struct peer_ctl *c);
	int (*send)(void *ctx, uint32_t len);
	int (*write)(void *ctx, uint32_t len, uint64_t to, uint32_t stag);
	int (*read)(void *ctx, uint32_t len, uint64_t to, uint32_t stag);
	/* The next untagged message; valid until recv_done. */
	int (*recv)(void *ctx, const uint8_t **msg, uint32_t *len);
	int (*recv_done)(void *ctx);
	/* Optional: told of each step that passed (size n), for figures. */
	void (*step_done)(void *ctx, uint32_t n, uint32_t step);
};

static inline int peer_recv_ctl(struct peer_end *e, uint32_t type,
				struct peer_ctl *c, const char *what)
{
	const uint8_t *m;
	uint32_t len;

	if (e->recv(e->ctx, &m, &len))
		return -1;
	if (peer_ctl_unpack(m, len, c) || c->type != type) {
		fprintf(stderr, "peer: expected %s, received a message of %u octets\n",
			what, len);
		e->recv_done(e->ctx);
		return -1;
	}
	return e->recv_done(e->ctx);
}

/* Sends the verdict on a step this end checked; returns 0 only when the
 * step passed and the verdict went out. */
static inline int peer_verdict(struct peer_end *e, uint32_t k, uint32_t step,
			       uint32_t n, uint32_t status, uint32_t detail)
{
	struct peer_ctl r = { .type = CTL_RESULT, .size_index = k,
			      .step = step, .status = status,
			      .detail = detail };

	if (status == 1)
		fprintf(stderr, "peer: %u octets: %s: received %u octets\n",
			n, peer_step_name(step), detail);
	else if (status == 2)
		fprintf(stderr, "peer: %u octets: %s: octet %u differs\n",
			n, peer_step_name(step), detail);
	else
		printf("%u octets: %s: verified\n", n, peer_step_name(step));
	if (e->send_ctl(e->ctx, &r))
		return -1;
	return status ? -1 : 0;
}

static inline int peer_await_verdict(struct peer_end *e, uint32_t k,
				     uint32_t step, uint32_t n)
{
	struct peer_ctl r;

	if (peer_recv_ctl(e, CTL_RESULT, &r, "a RESULT"))
		return -1;
	if (r.size_index != k || r.step != step) {
		fprintf(stderr, "peer: out of step: RESULT for size %u step %u, expected size %u step %u\n",
			r.size_index, r.step, k, step);
		return -1;
	}
	if (r.status) {
		fprintf(stderr, "peer: %u octets: %s: the peer found %s (%u)\n",
			n, peer_step_name(step), r.status == 1 ?
			"a wrong length" : "wrong data", r.detail);
		return -1;
	}
	return 0;
}

/* HELLO both ways, the MPA initiator first. */
static inline int peer_hello(struct peer_end *e, int initiator,
			     const struct peer_ctl *mine)
{
	if (initiator && e->send_ctl(e->ctx, mine))
		return -1;
	if (peer_recv_ctl(e, CTL_HELLO, &e->remote, "HELLO"))
		return -1;
	if (e->remote.buf_len < PEER_BUF_SIZE) {
		fprintf(stderr, "peer: the peer's buffers are %u octets, not %u\n",
			e->remote.buf_len, PEER_BUF_SIZE);
		return -1;
	}
	if (!initiator && e->send_ctl(e->ctx, mine))
		return -1;
	return 0;
}

static inline int peer_step(struct peer_end *e, uint32_t k, uint32_t n,
			    uint32_t step)
{
	/* Who acts: the host in the _H steps. */
	int act = (step == STEP_SEND_H || step == STEP_WRITE_H ||
		   step == STEP_READ_H) == !!e->host;
	uint32_t seed = peer_seed(k, step), off = peer_offset(k), i;
	const uint8_t *m;
	uint32_t len;
	struct peer_ctl c;

	switch (step) {
	case STEP_SEND_H:
	case STEP_SEND_G:
		if (act) {
			peer_fill(e->tx, n, seed, 0);
			if (e->send(e->ctx, n))
				return -1;
			return peer_await_verdict(e, k, step, n);
		}
		if (e->recv(e->ctx, &m, &len))
			return -1;
		i = len == n ? peer_check(m, n, seed, 0) : 0;
		if (e->recv_done(e->ctx))
			return -1;
		return peer_verdict(e, k, step, n, len != n ? 1 : i != n ? 2 : 0,
				    len != n ? len : i);
	case STEP_WRITE_H:
	case STEP_WRITE_G:
		if (act) {
			struct peer_ctl d = { .type = CTL_DONE,
					      .size_index = k, .step = step };

			peer_fill(e->tx, n, seed, 0);
			if (e->write(e->ctx, n, e->remote.sink_addr + off,
				     e->remote.sink_stag) ||
			    e->send_ctl(e->ctx, &d))
				return -1;
			return peer_await_verdict(e, k, step, n);
		}
		if (peer_recv_ctl(e, CTL_DONE, &c, "DONE"))
			return -1;
		if (c.size_index != k || c.step != step) {
			fprintf(stderr, "peer: out of step: DONE for size %u step %u\n",
				c.size_index, c.step);
			return -1;
		}
		i = peer_check(e->sink + off, n, seed, 0);
		return peer_verdict(e, k, step, n, i != n ? 2 : 0, i);
	case STEP_READ_H:
	case STEP_READ_G:
		if (!act)
			return peer_await_verdict(e, k, step, n);
		memset(e->rd, 0, n);
		if (e->read(e->ctx, n, e->remote.src_addr + off,
			    e->remote.src_stag))
			return -1;
		i = peer_check(e->rd, n, PEER_SEED_SRC, off);
		return peer_verdict(e, k, step, n, i != n ? 2 : 0, i);
	}
	return -1;
}

static inline int peer_run_script(struct peer_end *e, const uint32_t *sizes,
				  int nsizes)
{
	struct peer_ctl bye = { .type = CTL_BYE };
	uint32_t step;
	int k;

	for (k = 0; k < nsizes; k++)
		for (step = STEP_SEND_H; step <= STEP_LAST; step++) {
			if (peer_step(e, (uint32_t)k, sizes[k], step))
				return -1;
			if (e->step_done)
				e->step_done(e->ctx, sizes[k], step);
		}
	if (e->host)
		return e->send_ctl(e->ctx, &bye);
	return peer_recv_ctl(e, CTL_BYE, &bye, "BYE");
}

#endif
