/*
 * Faults on the path of DDP over SCTP (RFC 5043) over UDP (RFC 6951):
 * both uiwarp ends in this process (one usrsctp stack), a listener on
 * 127.0.0.1 that receives SCTP on its UDP port U, and the fault-injecting
 * UDP relay (udpfault.h) on a port R of its own forwarding to U.  Clients
 * connect with R as the peer's UDP port, so every packet of their
 * association crosses the relay both ways.
 *
 *  - 1 % loss both ways during RDMA Writes, Sends and Reads of 1 octet
 *    to 1 MiB: everything arrives, octet for octet, each completion
 *    once and in the order of its queue (SCTP retransmits);
 *  - duplication and reordering both ways: the same (SCTP discards a
 *    duplicate TSN, RFC 4960 §6.2; the DDP-SSN puts the unordered chunks
 *    back in order, RFC 5043 §5.2.1);
 *  - a burst of lost datagrams each way in the middle of a transfer:
 *    the same;
 *  - the path cut for good with transfers and receives outstanding:
 *    every work request completes (a success only for data that fully
 *    arrived; a flush, or for the one under way LLP loss), both ends
 *    see DISCONNECTED within a bound, and a connection started over a
 *    path cut beforehand ends with CONNECT_ERROR;
 *  - four QPs on one association, one stream each (RFC 5043 §4): while
 *    the relay holds back the packets of one QP's stream, the other
 *    QPs' messages complete (§10: SCTP delivers unordered chunks
 *    without delay); the held QP's complete, in order, once the relay
 *    lets its packets go; from the wire, the four share one
 *    verification tag and use four streams.
 *
 * Every wait has a bound: lbu_timeout_ms() (30 s), or CUT_WAIT_MS for
 * what SCTP takes to give up a dead path.  The figures (loss counts,
 * times) go to stdout.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uiwarp/cm.h>

#include "lb_util.h"
#include "udpfault.h"

#define ACC_ALL (UIW_ACCESS_LOCAL_WRITE | UIW_ACCESS_REMOTE_WRITE | \
		 UIW_ACCESS_REMOTE_READ)
#define KiB 1024u
#define MiB (1024u * 1024u)
#define PPID_DDP 16u		/* RFC 5043 §5.2 */
#define MAX_RELAYS 8
/* What ends a connection over a dead path, with room for a loaded
 * machine: the association's end (sctp_usr.c: the RTO from 1 s doubling
 * up to 8 s, the sixth timeout aborts, 31 s after the cut on loopback),
 * or sooner the RFC 5043 layer's bound on a gap in DDP-SSN (ddps.c: 10
 * s), when a chunk lost just before the cut left one. */
#define CUT_WAIT_MS 60000

struct fx {
	struct uiw_device *dev;
	struct lbu_listener lst;
	uint16_t udp_port;		/* U: the listener's UDP port */
	/* Relays live until the end: associations that outlive a test
	 * (idle, or shutting down) keep their path. */
	struct uiw_uf *relays[MAX_RELAYS];
	int nrelays;
};

static int group_setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	*state = f;
	if (lbu_llp(&f->udp_port) != UIW_LLP_SCTP_UDP || !f->udp_port) {
		print_error("UIW_LB_LLP is not sctp-udp\n");
		return -1;
	}
	f->dev = uiw_device_open(NULL);
	if (!f->dev) {
		print_error("uiw_device_open: %s\n", uiw_last_error());
		return -1;
	}
	if (lbu_listener_open(&f->lst, f->dev) < 0) {
		print_error("listener: %s\n", lbu_err());
		return -1;
	}
	return 0;
}

static int group_teardown(void **state)
{
	struct fx *f = *state;
	int i, rc, ret = 0;

	if (lbu_listener_close(&f->lst) < 0) {
		print_error("listener close: %s\n", lbu_err());
		ret = -1;
	}
	if (f->dev) {
		rc = uiw_device_close(f->dev);
		if (rc < 0) {
			print_error("uiw_device_close: %d (%s)\n", rc,
				    uiw_last_error());
			ret = -1;
		}
	}
	for (i = 0; i < f->nrelays; i++)
		uiw_uf_stop(f->relays[i]);
	free(f);
	return ret;
}

/* A relay to the listener's UDP port, kept until the group ends. */
static struct uiw_uf *relay_new(struct fx *f, uint64_t seed)
{
	struct uiw_uf_config cfg;
	struct uiw_uf *uf;

	assert_true(f->nrelays < MAX_RELAYS);
	uiw_uf_config_init(&cfg);
	cfg.seed = seed;
	cfg.max_pending = 8192;
	cfg.max_pending_bytes = 32u * MiB;
	uf = uiw_uf_start_to("127.0.0.1", f->udp_port, &cfg);
	if (!uf)
		fail_msg("uiw_uf_start_to(127.0.0.1:%u): %s", f->udp_port,
			 strerror(errno));
	f->relays[f->nrelays++] = uf;
	return uf;
}

static void pair_up(struct fx *f, struct lbu_pair *p, struct uiw_uf *uf,
		    uint32_t depth)
{
	struct lbu_opts o;

	lbu_opts_init(&o);
	o.cli_dev = o.srv_dev = f->dev;
	o.lst = &f->lst;
	o.cli_udp_port = uiw_uf_port(uf);
	o.sq_depth = depth;
	o.rq_depth = depth;
	o.cli_ord = o.srv_ird = 16;
	o.srv_ord = o.cli_ird = 16;
	LBU_OK(lbu_pair_connect(p, &o));
	/* It runs over SCTP, and its packets crossed the relay. */
	assert_int_equal(p->cli.attr.llp, UIW_LLP_SCTP_UDP);
	{
		struct uiw_uf_stats st;

		uiw_uf_get_stats(uf, &st);
		assert_true(st.d[UIW_UF_C2S].forwarded > 0);
		assert_true(st.d[UIW_UF_S2C].forwarded > 0);
	}
}

static void relay_clear(struct uiw_uf *uf)
{
	struct uiw_uf_faults none;

	uiw_uf_faults_init(&none);
	assert_int_equal(uiw_uf_set_faults(uf, UIW_UF_C2S, &none), 0);
	assert_int_equal(uiw_uf_set_faults(uf, UIW_UF_S2C, &none), 0);
}

static void print_relay(const char *what, struct uiw_uf *uf)
{
	struct uiw_uf_stats st;
	static const char *dn[2] = { "c2s", "s2c" };
	int i;

	uiw_uf_get_stats(uf, &st);
	for (i = 0; i < 2; i++) {
		const struct uiw_uf_dir_stats *d = &st.d[i];

		printf("[ %s ] relay %s: %" PRIu64 " datagrams, %" PRIu64
		       " forwarded, %" PRIu64 " dropped, %" PRIu64
		       " duplicated, %" PRIu64 " reordered, %" PRIu64
		       " matched by the filter, %" PRIu64 " overflow, %" PRIu64
		       " send errors\n", what, dn[i], d->received,
		       d->forwarded, d->dropped, d->duplicated, d->reordered,
		       d->matched, d->overflow, d->send_errors);
	}
	fflush(stdout);
}

/* ------------------------------------------------------------------ */
/* Completion accounting                                              */

#define MAXWR 1024

/* What one work request of a queue is to give. */
struct want {
	int op;			/* enum uiw_wc_opcode */
	uint32_t len;
	const uint8_t *mem;	/* data to check at completion, or NULL */
	uint32_t seed;
};

/* One CQ of one queue; wr_id is the index of the work request. */
struct acct {
	const char *name;
	struct uiw_cq *cq;
	bool strict;		/* every completion a success */
	struct want w[MAXWR];
	uint8_t seen[MAXWR];
	uint8_t ok[MAXWR];
	uint8_t status[MAXWR];	/* enum uiw_wc_status */
	int posted, done, good, bad;
	int flushed;		/* UIW_WC_WR_FLUSH_ERR among bad */
	int64_t last_ms;	/* when the last completion came */
};

static void acct_init(struct acct *a, const char *name, struct uiw_cq *cq,
		      bool strict)
{
	memset(a, 0, sizeof(*a));
	a->name = name;
	a->cq = cq;
	a->strict = strict;
}

static uint64_t acct_add(struct acct *a, int op, uint32_t len,
			 const uint8_t *mem, uint32_t seed)
{
	int i = a->posted++;

	assert_true(i < MAXWR);
	a->w[i] = (struct want){ .op = op, .len = len, .mem = mem,
				 .seed = seed };
	return (uint64_t)i;
}

static void acct_one(struct acct *a, const struct uiw_wc *wc)
{
	char d[200];
	uint64_t i = wc->wr_id;
	const struct want *w;

	if (i >= (uint64_t)a->posted)
		fail_msg("%s: completion of a WR never posted: %s", a->name,
			 lbu_wc_str(wc, d, sizeof(d)));
	if (a->seen[i]++)
		fail_msg("%s: WR %" PRIu64 " completed twice: %s", a->name, i,
			 lbu_wc_str(wc, d, sizeof(d)));
	/* A work queue completes in the order it was posted. */
	if (i != (uint64_t)a->done)
		fail_msg("%s: WR %" PRIu64 " completed where WR %d was due: "
			 "%s", a->name, i, a->done,
			 lbu_wc_str(wc, d, sizeof(d)));
	a->done++;
	a->last_ms = lbu_now_ms();
	w = &a->w[i];
	a->status[i] = (uint8_t)wc->status;
	if (wc->status != UIW_WC_SUCCESS) {
		if (a->strict)
			fail_msg("%s: WR %" PRIu64 " failed: %s", a->name, i,
				 lbu_wc_str(wc, d, sizeof(d)));
		a->bad++;
		if (wc->status == UIW_WC_WR_FLUSH_ERR)
			a->flushed++;
		return;
	}
	if ((int)wc->opcode != w->op)
		fail_msg("%s: WR %" PRIu64 " opcode %d, expected %d: %s",
			 a->name, i, (int)wc->opcode, w->op,
			 lbu_wc_str(wc, d, sizeof(d)));
	if (w->op != UIW_WC_SEND && wc->byte_len != w->len)
		fail_msg("%s: WR %" PRIu64 " success with %u of %u octets",
			 a->name, i, wc->byte_len, w->len);
	/* A success only for a message that fully arrived. */
	if (w->mem)
		LBU_OK(lbu_verify(w->mem, w->len, w->seed,
				  "data of a successful completion"));
	a->good++;
	a->ok[i] = 1;
}

static int acct_poll(struct acct *a)
{
	struct uiw_wc wc[32];
	int n, k, got = 0;

	for (;;) {
		n = uiw_cq_poll(a->cq, 32, wc);
		if (n < 0)
			fail_msg("uiw_cq_poll(%s): %d (%s)", a->name, n,
				 uiw_last_error());
		for (k = 0; k < n; k++)
			acct_one(a, &wc[k]);
		got += n;
		if (n < 32)
			return got;
	}
}

static bool accts_done(struct acct **v, int n)
{
	int i;

	for (i = 0; i < n; i++)
		if (v[i]->done < v[i]->posted)
			return false;
	return true;
}

/* Takes completions from the n accounts until each has all it posted,
 * at most ms; between polls poll(2) on the CQs' fds after arming them.
 * False when time ran out (fail: fail_msg then). */
static bool collect_ms(struct acct **v, int n, int ms, bool fail)
{
	int64_t end = lbu_now_ms() + ms;
	struct pollfd pfd[16];
	int i;

	assert_true(n <= 16);
	for (;;) {
		for (i = 0; i < n; i++)
			acct_poll(v[i]);
		if (accts_done(v, n))
			return true;
		if (lbu_now_ms() > end)
			break;
		for (i = 0; i < n; i++) {
			assert_int_equal(uiw_cq_req_notify(v[i]->cq, 0), 0);
			pfd[i].fd = uiw_cq_fd(v[i]->cq);
			pfd[i].events = POLLIN;
		}
		/* What came before arming notifies nobody. */
		for (i = 0; i < n; i++)
			acct_poll(v[i]);
		if (accts_done(v, n))
			return true;
		poll(pfd, (nfds_t)n, 50);
		for (i = 0; i < n; i++)
			uiw_cq_ack_events(v[i]->cq);
	}
	if (fail) {
		char m[512];
		size_t o = 0;

		for (i = 0; i < n; i++)
			o += (size_t)snprintf(m + o, sizeof(m) - o,
					      " %s %d of %d;", v[i]->name,
					      v[i]->done, v[i]->posted);
		fail_msg("completions after %d ms:%s", ms, m);
	}
	return false;
}

static void collect(struct acct **v, int n)
{
	collect_ms(v, n, lbu_timeout_ms(), true);
}

/* ------------------------------------------------------------------ */
/* Traffic: Writes, Sends and Reads of one size                       */

struct io {
	struct lbu_pair *p;
	/* client: Write and Send sources, Read sink; server: Write
	 * target, receive buffers, Read source */
	struct lbu_buf *wsrc, *ssrc, *rdst, *wdst, *sdst, *rsrc;
	size_t cap;
	/* The server's Sends into the client's receives (back_init) */
	struct lbu_buf *bsrc, *bdst;
	size_t blen;
	uint32_t bseed;
	struct acct csq, crq, ssq, srq;
};

static void io_init(struct io *io, struct lbu_pair *p, size_t cap,
		    bool strict)
{
	struct lbu_side *c = &p->cli, *s = &p->srv;

	memset(io, 0, sizeof(*io));
	io->p = p;
	io->cap = cap;
	LBU_NN(io->wsrc = lbu_buf_alloc(c, cap, ACC_ALL));
	LBU_NN(io->ssrc = lbu_buf_alloc(c, cap, ACC_ALL));
	LBU_NN(io->rdst = lbu_buf_alloc(c, cap, ACC_ALL));
	LBU_NN(io->wdst = lbu_buf_alloc(s, cap, ACC_ALL));
	LBU_NN(io->sdst = lbu_buf_alloc(s, cap, ACC_ALL));
	LBU_NN(io->rsrc = lbu_buf_alloc(s, cap, ACC_ALL));
	acct_init(&io->csq, "client send queue", c->scq, strict);
	acct_init(&io->crq, "client receive queue", c->rcq, strict);
	acct_init(&io->ssq, "server send queue", s->scq, strict);
	acct_init(&io->srq, "server receive queue", s->rcq, strict);
}

/* Sends of len octets from the server: n receives posted at the client,
 * the sources of n Sends filled at the server (pattern seed + i). */
static void back_init(struct io *io, uint32_t n, size_t len, uint32_t seed)
{
	struct lbu_side *c = &io->p->cli, *s = &io->p->srv;
	uint32_t i;

	io->blen = len;
	io->bseed = seed;
	LBU_NN(io->bsrc = lbu_buf_alloc(s, n * len, ACC_ALL));
	LBU_NN(io->bdst = lbu_buf_alloc(c, n * len, ACC_ALL));
	for (i = 0; i < n; i++) {
		size_t off = (size_t)i * len;
		uint64_t id = acct_add(&io->crq, UIW_WC_RECV, (uint32_t)len,
				       io->bdst->mem + off, seed + i);

		LBU_OK(lbu_post_recv(c, id, io->bdst, off, len));
		lbu_fill(io->bsrc->mem + off, len, seed + i);
	}
}

/* The server's Send i of back_init's. */
static void back_send(struct io *io, uint32_t i)
{
	uint64_t id = acct_add(&io->ssq, UIW_WC_SEND, (uint32_t)io->blen,
			       NULL, 0);

	LBU_OK(lbu_post_send(&io->p->srv, id, UIW_WR_SEND, UIW_SEND_SIGNALED,
			     io->bsrc, (size_t)i * io->blen, io->blen, 0, 0,
			     0));
}

static uint32_t seed_of(uint32_t round, int op, uint32_t i)
{
	return round << 16 | (uint32_t)op << 12 | i;
}

/* Posts n Writes, Sends and Reads of len octets each, interleaved, then
 * a zero-length Send that orders after the Writes (RFC 5040 §5.5: it
 * lands after them), with the server's receives first.  Message i of
 * each kind has its own pattern and place. */
static void io_post(struct io *io, uint32_t round, size_t len, uint32_t n)
{
	struct lbu_side *c = &io->p->cli, *s = &io->p->srv;
	uint32_t i;
	uint64_t id;

	assert_true(len * n <= io->cap);
	memset(io->wdst->mem, 0, io->cap);
	memset(io->sdst->mem, 0, io->cap);
	memset(io->rdst->mem, 0, io->cap);
	for (i = 0; i < n; i++) {
		size_t off = (size_t)i * len;

		lbu_fill(io->wsrc->mem + off, len, seed_of(round, 1, i));
		lbu_fill(io->ssrc->mem + off, len, seed_of(round, 2, i));
		lbu_fill(io->rsrc->mem + off, len, seed_of(round, 3, i));
		id = acct_add(&io->srq, UIW_WC_RECV, (uint32_t)len,
			      io->sdst->mem + off, seed_of(round, 2, i));
		LBU_OK(lbu_post_recv(s, id, io->sdst, off, len));
	}
	id = acct_add(&io->srq, UIW_WC_RECV, 0, NULL, 0);
	LBU_OK(lbu_post_recv(s, id, NULL, 0, 0));
	for (i = 0; i < n; i++) {
		size_t off = (size_t)i * len;

		id = acct_add(&io->csq, UIW_WC_RDMA_WRITE, (uint32_t)len,
			      NULL, 0);
		LBU_OK(lbu_post_send(c, id, UIW_WR_RDMA_WRITE,
				     UIW_SEND_SIGNALED, io->wsrc, off, len,
				     lbu_to(io->wdst, off),
				     io->wdst->mr->rkey, 0));
		id = acct_add(&io->csq, UIW_WC_SEND, (uint32_t)len, NULL, 0);
		LBU_OK(lbu_post_send(c, id, UIW_WR_SEND, UIW_SEND_SIGNALED,
				     io->ssrc, off, len, 0, 0, 0));
		id = acct_add(&io->csq, UIW_WC_RDMA_READ, (uint32_t)len,
			      io->rdst->mem + off, seed_of(round, 3, i));
		LBU_OK(lbu_post_send(c, id, UIW_WR_RDMA_READ,
				     UIW_SEND_SIGNALED, io->rdst, off, len,
				     lbu_to(io->rsrc, off),
				     io->rsrc->mr->rkey, 0));
	}
	id = acct_add(&io->csq, UIW_WC_SEND, 0, NULL, 0);
	LBU_OK(lbu_post_send(c, id, UIW_WR_SEND, UIW_SEND_SIGNALED, NULL, 0,
			     0, 0, 0, 0));
}

/* After io_post's completions: the Writes' data at the server, and
 * nothing beyond what was sent anywhere. */
static void io_check(struct io *io, uint32_t round, size_t len, uint32_t n)
{
	uint32_t i;
	size_t end = len * n;

	for (i = 0; i < n; i++)
		LBU_OK(lbu_verify(io->wdst->mem + (size_t)i * len, len,
				  seed_of(round, 1, i), "written data"));
	LBU_OK(lbu_verify_byte(io->wdst->mem + end, io->cap - end, 0,
			       "after the written data"));
	LBU_OK(lbu_verify_byte(io->sdst->mem + end, io->cap - end, 0,
			       "after the received data"));
	LBU_OK(lbu_verify_byte(io->rdst->mem + end, io->cap - end, 0,
			       "after the read data"));
}

struct size_class {
	size_t len;
	uint32_t n;
};

/* Every class in turn, all completions checked; returns octets moved. */
static uint64_t io_run(struct io *io, const struct size_class *cl, int ncl,
		       uint32_t round0)
{
	struct acct *v[2] = { &io->csq, &io->srq };
	uint64_t bytes = 0;
	int k;

	for (k = 0; k < ncl; k++) {
		uint32_t round = round0 + (uint32_t)k;

		io_post(io, round, cl[k].len, cl[k].n);
		collect(v, 2);
		io_check(io, round, cl[k].len, cl[k].n);
		bytes += 3 * (uint64_t)cl[k].len * cl[k].n;
	}
	LBU_OK(lbu_cq_empty(io->p->cli.rcq, "client receive CQ"));
	LBU_OK(lbu_cq_empty(io->p->srv.scq, "server send CQ"));
	assert_int_equal(lbu_qp_state(&io->p->cli, NULL), UIW_QPS_RTS);
	assert_int_equal(lbu_qp_state(&io->p->srv, NULL), UIW_QPS_RTS);
	return bytes;
}

/* 1 octet, a little more than one DDP segment (MULPDU about 1420 at the
 * backend's path MTU of 1452), 64 KiB and 1 MiB. */
static const struct size_class classes[] = {
	{ 1, 64 }, { 1500, 64 }, { 64 * KiB, 64 }, { MiB, 8 },
};
#define NCLASSES ((int)(sizeof(classes) / sizeof(classes[0])))
#define IO_CAP (8u * MiB)

/* ------------------------------------------------------------------ */
/* Loss, duplication, reordering, bursts                              */

/* A pair through a new relay: the faults that set_faults gives the
 * relay, then every size class, then the faults cleared; the relay's
 * counters in *st. */
static void run_faulty(struct fx *f, uint64_t seed, const char *what,
		       void (*set_faults)(struct uiw_uf *), uint32_t round,
		       struct uiw_uf_stats *st)
{
	struct uiw_uf *uf = relay_new(f, seed);
	struct lbu_pair p;
	struct io io;
	int64_t t0;
	uint64_t bytes;

	pair_up(f, &p, uf, 256);
	io_init(&io, &p, IO_CAP, true);
	/* From now on: the handshake went through clean (a lost INIT
	 * costs a 3 s timer, not the point here). */
	set_faults(uf);
	t0 = lbu_now_ms();
	bytes = io_run(&io, classes, NCLASSES, round);
	printf("[ %s ] %" PRIu64 " octets in Writes, Sends and Reads in %"
	       PRId64 " ms\n", what, bytes, lbu_now_ms() - t0);
	relay_clear(uf);
	print_relay(what, uf);
	uiw_uf_get_stats(uf, st);
	LBU_OK(lbu_pair_destroy(&p));
}

/* 1 % of the datagrams each way. */
static void loss_faults(struct uiw_uf *uf)
{
	assert_int_equal(uiw_uf_drop(uf, UIW_UF_C2S, 10000), 0);
	assert_int_equal(uiw_uf_drop(uf, UIW_UF_S2C, 10000), 0);
}

/* 2 % sent twice; 3 % held until 4 more have passed (or 30 ms), several
 * at a time. */
static void dup_reorder_faults(struct uiw_uf *uf)
{
	int d;

	for (d = 0; d < 2; d++) {
		assert_int_equal(uiw_uf_dup(uf, d, 20000), 0);
		assert_int_equal(uiw_uf_reorder(uf, d, 30000, 4, 30), 0);
	}
}

static void test_loss(void **state)
{
	struct uiw_uf_stats st;
	int d;

	run_faulty(*state, 0x10551, "loss", loss_faults, 100, &st);
	/* Loss happened, both ways, about as often as asked. */
	for (d = 0; d < 2; d++) {
		assert_true(st.d[d].dropped * 200 > st.d[d].received);
		assert_true(st.d[d].dropped * 50 < st.d[d].received);
	}
}

static void test_dup_reorder(void **state)
{
	struct uiw_uf_stats st;
	int d;

	run_faulty(*state, 0xd0b, "dup+reorder", dup_reorder_faults, 200,
		   &st);
	for (d = 0; d < 2; d++) {
		assert_true(st.d[d].duplicated > 0);
		assert_true(st.d[d].reordered > 0);
		assert_int_equal(st.d[d].dropped + st.d[d].overflow, 0);
	}
}

/* A burst of loss as SCTP meets it on a path: the relay's filter drops
 * `left` packets of new data in a row, after letting `skip` of them by.
 * New data: the packet's first DATA chunk has a TSN beyond every TSN
 * seen so far (serial arithmetic, RFC 4960 §1.6).  Retransmissions and
 * packets without DATA pass: a blind run of K lost datagrams would, when
 * the sender's window is smaller than K, also take the retransmissions
 * its timer sends one at a time, a second apart and more (§6.3.3), and
 * be a dead path (sctp_usr.c ends the association at the sixth). */
struct data_burst {
	unsigned int skip, left;
	bool seen;
	uint32_t top;
};

static bool data_burst_fn(void *arg, const uint8_t *data, size_t len)
{
	struct data_burst *b = arg;
	struct uiw_uf_sctp_data d;

	if (!uiw_uf_sctp_first_data(data, len, &d))
		return false;
	if (!b->seen) {
		/* What came before is unknown: only a reference. */
		b->seen = true;
		b->top = d.tsn;
		return false;
	}
	if ((int32_t)(d.tsn - b->top) <= 0)
		return false;
	b->top = d.tsn;
	if (b->skip) {
		b->skip--;
		return false;
	}
	if (!b->left)
		return false;
	b->left--;
	return true;
}

/* K packets of data lost in a row, each way, while 1 MiB messages flow
 * both ways. */
static void test_burst(void **state)
{
	static const struct size_class big = { MiB, 4 };
	struct fx *f = *state;
	struct uiw_uf *uf = relay_new(f, 0xb0257);
	struct acct *v[4];
	struct uiw_uf_stats st;
	struct lbu_pair p;
	struct io io;
	const unsigned int k = 32;
	/* Each filter: only the relay's thread touches it, under its
	 * lock, until it is removed. */
	struct data_burst bc = { .skip = 300, .left = k };
	struct data_burst bs = { .skip = 300, .left = k };
	int64_t t0;
	uint32_t i;

	pair_up(f, &p, uf, 64);
	io_init(&io, &p, IO_CAP, true);
	back_init(&io, big.n, big.len, 350);
	v[0] = &io.csq;
	v[1] = &io.srq;
	v[2] = &io.ssq;
	v[3] = &io.crq;
	/* The bursts hit after 300 packets of data each way: 12 MiB of
	 * Writes, Sends and Reads from the client (some 9000 packets
	 * towards the server, 3000 of Read Responses back) and 4 MiB of
	 * Sends from the server. */
	assert_int_equal(uiw_uf_match(uf, UIW_UF_C2S, data_burst_fn, &bc,
				      UIW_UF_DROP, 0), 0);
	assert_int_equal(uiw_uf_match(uf, UIW_UF_S2C, data_burst_fn, &bs,
				      UIW_UF_DROP, 0), 0);
	t0 = lbu_now_ms();
	io_post(&io, 300, big.len, big.n);
	for (i = 0; i < big.n; i++)
		back_send(&io, i);
	collect(v, 4);
	io_check(&io, 300, big.len, big.n);
	assert_int_equal(uiw_uf_match(uf, UIW_UF_C2S, NULL, NULL,
				      UIW_UF_COUNT, 0), 0);
	assert_int_equal(uiw_uf_match(uf, UIW_UF_S2C, NULL, NULL,
				      UIW_UF_COUNT, 0), 0);
	printf("[ burst ] %u packets of data lost in a row each way "
	       "mid-transfer; %" PRIu64 " octets in %" PRId64 " ms\n", k,
	       4 * (uint64_t)big.len * big.n, lbu_now_ms() - t0);
	print_relay("burst", uf);
	/* Each burst took its whole toll inside the transfer, and nothing
	 * else was lost at the relay. */
	assert_int_equal(bc.left + bs.left, 0);
	uiw_uf_get_stats(uf, &st);
	assert_int_equal(st.d[UIW_UF_C2S].dropped, k);
	assert_int_equal(st.d[UIW_UF_S2C].dropped, k);
	assert_int_equal(st.d[UIW_UF_C2S].matched, k);
	assert_int_equal(st.d[UIW_UF_S2C].matched, k);
	LBU_OK(lbu_pair_destroy(&p));
}

/* ------------------------------------------------------------------ */
/* A cut path                                                         */

static void test_cut(void **state)
{
	struct fx *f = *state;
	struct uiw_uf *uf = relay_new(f, 0xc07);
	struct uiw_uf *uf2 = relay_new(f, 0xc08);
	struct lbu_side *c, *s;
	struct acct *v[4];
	struct uiw_uf_stats st;
	struct lbu_pair p;
	struct io io;
	const uint32_t nback = 16;
	int64_t t_cut, t_cli, t_srv, t_end, t_disc, t_err = 0;
	uint64_t c0;
	uint32_t i;
	int qs;

	/* A second connection, over a path cut before it starts. */
	struct uiw_cm_channel *ch2;
	struct uiw_cm_id *id2 = NULL;
	struct uiw_pd *pd2;
	struct uiw_cq *cq2;
	struct uiw_qp *qp2;
	struct uiw_qp_init_attr ia;
	struct uiw_conn_param cp;
	struct sockaddr_in sin;
	int type = 0, status = 0;

	pair_up(f, &p, uf, 256);
	c = &p.cli;
	s = &p.srv;
	io_init(&io, &p, IO_CAP, false);
	v[0] = &io.csq;
	v[1] = &io.srq;
	v[2] = &io.ssq;
	v[3] = &io.crq;

	/* Writes, Sends and Reads of 1 MiB from the client, Sends of 64
	 * KiB from the server, receives posted on both sides. */
	back_init(&io, nback, 64 * KiB, 900);
	uiw_uf_get_stats(uf, &st);
	c0 = st.d[UIW_UF_C2S].received;
	io_post(&io, 400, MiB, 4);
	for (i = 0; i < nback / 2; i++)
		back_send(&io, i);
	/* Cut in the middle of it, for good. */
	assert_int_equal(uiw_uf_wait_received(uf, UIW_UF_C2S, c0 + 500,
					      lbu_timeout_ms()), 0);
	assert_int_equal(uiw_uf_cut(uf, true), 0);
	t_cut = lbu_now_ms();
	/* More from the server after the cut: both ends have data that
	 * can never be acknowledged, so both ends' retransmission timers
	 * find the path dead (RFC 4960 §8.1, §8.2). */
	for (; i < nback; i++)
		back_send(&io, i);

	/* Meanwhile a connection over a path cut before it starts. */
	assert_int_equal(uiw_uf_cut(uf2, true), 0);
	LBU_NN(ch2 = uiw_cm_channel_create(f->dev));
	LBU_NN(pd2 = uiw_pd_alloc(f->dev));
	LBU_NN(cq2 = uiw_cq_create(f->dev, 16));
	memset(&ia, 0, sizeof(ia));
	ia.send_cq = ia.recv_cq = cq2;
	ia.cap.max_send_wr = ia.cap.max_recv_wr = 4;
	ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
	LBU_NN(qp2 = uiw_qp_create(pd2, &ia));
	memset(&cp, 0, sizeof(cp));
	cp.llp = UIW_LLP_SCTP_UDP;
	cp.udp_port = uiw_uf_port(uf2);
	/* cp.timeout_ms 0: the CM's default, 10 s */
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sin.sin_port = htons(f->lst.port);
	assert_int_equal(uiw_cm_connect(ch2, qp2, (struct sockaddr *)&sin,
					sizeof(sin), &cp, &id2), 0);

	/* Every work request of both ends completes, within the bound:
	 * the association's death flushes what is left.  The second
	 * connection's CM events are taken meanwhile. */
	for (;;) {
		bool all = collect_ms(v, 4, 50, false);

		if (!type) {
			struct uiw_cm_event ev;

			/* Once every completion is in, the wait is here. */
			memset(&ev, 0, sizeof(ev));
			if (uiw_cm_get_event(ch2, &ev, all ? 50 : 0) == 0 &&
			    ev.id == id2) {
				type = (int)ev.type;
				status = ev.status;
				t_err = lbu_now_ms();
			}
		}
		if (all && type)
			break;
		if (lbu_now_ms() - t_cut > CUT_WAIT_MS)
			fail_msg("%d ms after the cut: client sends %d of %d, "
				 "server receives %d of %d, server sends %d "
				 "of %d, client receives %d of %d; CM event of "
				 "the second connection: %d", CUT_WAIT_MS,
				 io.csq.done, io.csq.posted, io.srq.done,
				 io.srq.posted, io.ssq.done, io.ssq.posted,
				 io.crq.done, io.crq.posted, type);
	}
	t_end = lbu_now_ms();
	t_cli = io.csq.last_ms > io.crq.last_ms ? io.csq.last_ms :
		io.crq.last_ms;
	t_srv = io.ssq.last_ms > io.srq.last_ms ? io.ssq.last_ms :
		io.srq.last_ms;
	/* And the CM says so on both ends (the events came with the
	 * flush: these waits find them queued). */
	LBU_OK(lbu_wait_disconnected(c));
	LBU_OK(lbu_wait_disconnected(s));
	t_disc = lbu_now_ms();
	assert_true(t_disc - t_end < 2000);

	/* The connection over the dead path never came up. */
	assert_int_equal(type, UIW_CM_EVENT_CONNECT_ERROR);
	assert_true(status < 0);

	printf("[ cut ] last completion %" PRId64 " ms (client) and %" PRId64
	       " ms (server) after the cut; DISCONNECTED on both by %" PRId64
	       " ms; CONNECT_ERROR (status %d) %" PRId64 " ms after "
	       "connecting over a cut path\n", t_cli - t_cut, t_srv - t_cut,
	       t_disc - t_cut, status, t_err - t_cut);
	printf("[ cut ] client sends %d ok %d flushed %d other; server "
	       "receives %d ok %d flushed; server sends %d ok %d flushed; "
	       "client receives %d ok %d flushed\n", io.csq.good,
	       io.csq.flushed, io.csq.bad - io.csq.flushed, io.srq.good,
	       io.srq.flushed, io.ssq.good, io.ssq.flushed, io.crq.good,
	       io.crq.flushed);
	print_relay("cut", uf);

	/* Nothing more comes.  In each queue the successes come first;
	 * of the failures, the first may be the work request the lost
	 * connection cut short, FATAL_ERR (the engine reports an LLP loss
	 * on the oldest started request, as over TCP), and every other is
	 * a flush. */
	for (i = 0; i < 4; i++) {
		int w, first = -1;

		assert_int_equal(acct_poll(v[i]), 0);
		assert_int_equal(v[i]->done, v[i]->posted);
		for (w = 0; w < v[i]->posted; w++) {
			if (v[i]->ok[w]) {
				if (first >= 0)
					fail_msg("%s: WR %d succeeded after WR "
						 "%d failed", v[i]->name, w,
						 first);
				continue;
			}
			if (v[i]->status[w] == UIW_WC_WR_FLUSH_ERR) {
				if (first < 0)
					first = w;
				continue;
			}
			printf("[ cut ] %s: WR %d (opcode %d) %s\n",
			       v[i]->name, w, v[i]->w[w].op,
			       uiw_wc_status_str(v[i]->status[w]));
			if (first >= 0 ||
			    v[i]->status[w] != UIW_WC_FATAL_ERR)
				fail_msg("%s: WR %d completed with %s",
					 v[i]->name, w, uiw_wc_status_str(
						 v[i]->status[w]));
			first = w;
		}
		assert_true(v[i]->bad - v[i]->flushed <= 1);
	}
	/* What was posted after the cut failed: the server's last Send,
	 * and so the client's last receive; and the client's messages
	 * were cut short. */
	assert_int_equal(io.ssq.ok[nback - 1], 0);
	assert_int_equal(io.crq.ok[nback - 1], 0);
	assert_true(io.srq.bad > 0);
	qs = lbu_qp_state(c, NULL);
	assert_true(qs >= 0 && qs != UIW_QPS_RTS);
	qs = lbu_qp_state(s, NULL);
	assert_true(qs >= 0 && qs != UIW_QPS_RTS);
	LBU_OK(lbu_pair_destroy(&p));

	assert_int_equal(uiw_cm_destroy_id(id2), 0);
	assert_int_equal(uiw_qp_destroy(qp2), 0);
	assert_int_equal(uiw_cq_destroy(cq2), 0);
	assert_int_equal(uiw_pd_free(pd2), 0);
	assert_int_equal(uiw_cm_channel_destroy(ch2), 0);
}

/* ------------------------------------------------------------------ */
/* Streams of one association                                         */

#define NQP 4

/* What the relay's tap (a counting filter) learns of the packets that
 * lead with a DATA chunk of DDP (RFC 5043 §5.2: PPID 16). */
struct tap {
	_Atomic uint32_t n;
	_Atomic int sid;		/* the stream of the first; -1 */
	_Atomic bool mixed;		/* another stream came too */
	_Atomic uint32_t vtag;
};

static bool tap_fn(void *arg, const uint8_t *data, size_t len)
{
	struct tap *t = arg;
	struct uiw_uf_sctp_data d;
	int none = -1;

	if (!uiw_uf_sctp_first_data(data, len, &d) || d.ppid != PPID_DDP)
		return false;
	if (!atomic_compare_exchange_strong(&t->sid, &none, (int)d.sid) &&
	    none != (int)d.sid)
		atomic_store(&t->mixed, true);
	atomic_store(&t->vtag, d.vtag);
	atomic_fetch_add(&t->n, 1);
	return true;
}

/* The SCTP stream that p's client sends on and the association's
 * verification tag, as the relay sees them: one Send of p alone. */
static void learn_stream(struct uiw_uf *uf, struct lbu_pair *p,
			 struct lbu_buf *src, struct lbu_buf *dst,
			 uint16_t *sid, uint32_t *vtag)
{
	struct tap t = { .sid = -1 };
	struct uiw_wc wc;

	assert_int_equal(uiw_uf_match(uf, UIW_UF_C2S, tap_fn, &t,
				      UIW_UF_COUNT, 0), 0);
	lbu_fill(src->mem, 64, 77);
	LBU_OK(lbu_post_recv(&p->srv, 1, dst, 0, 64));
	LBU_OK(lbu_post_send(&p->cli, 1, UIW_WR_SEND, UIW_SEND_SIGNALED, src,
			     0, 64, 0, 0, 0));
	/* The receive completes after the relay passed the packet on. */
	LBU_OK(lbu_expect_wc(p->srv.rcq, 1, UIW_WC_SUCCESS, UIW_WC_RECV,
			     &wc));
	LBU_OK(lbu_expect_wc(p->cli.scq, 1, UIW_WC_SUCCESS, UIW_WC_SEND,
			     NULL));
	assert_int_equal(uiw_uf_match(uf, UIW_UF_C2S, NULL, NULL,
				      UIW_UF_COUNT, 0), 0);
	assert_true(atomic_load(&t.n) >= 1);
	assert_false(atomic_load(&t.mixed));
	*sid = (uint16_t)atomic_load(&t.sid);
	*vtag = atomic_load(&t.vtag);
}

static void same_addr(const struct sockaddr_storage *a,
		      const struct sockaddr_storage *b, const char *what)
{
	const struct sockaddr_in *x = (const void *)a, *y = (const void *)b;

	assert_int_equal(a->ss_family, AF_INET);
	assert_int_equal(b->ss_family, AF_INET);
	if (x->sin_addr.s_addr != y->sin_addr.s_addr ||
	    x->sin_port != y->sin_port)
		fail_msg("%s differ: port %u and %u", what,
			 ntohs(x->sin_port), ntohs(y->sin_port));
}

/* Each of the other QPs' traffic while the first is held. */
#define OTHER_SENDS 16
#define OTHER_LEN 1000u
#define OTHER_READS 2
#define OTHER_RLEN (4 * KiB)
#define HELD_SENDS 3
#define HELD_LEN 8u
#define HOLD_MAX_MS 10000

/* A round of the QPs other than the first: Sends of OTHER_LEN into
 * receives and Reads of OTHER_RLEN, each QP's to its own place; all
 * complete, each once and in order, within HOLD_MAX_MS / 2. */
static void others_round(struct lbu_pair *p, struct lbu_buf **src,
			 struct lbu_buf **dst, struct lbu_buf **rsrc,
			 struct lbu_buf **rdst, struct acct *csq,
			 struct acct *srq, uint32_t round)
{
	const size_t sbase = (size_t)round * OTHER_SENDS * OTHER_LEN;
	const size_t rbase = (size_t)round * OTHER_READS * OTHER_RLEN;
	struct acct *v[2 * (NQP - 1)];
	int k, i;

	for (k = 1; k < NQP; k++) {
		uint32_t sseed = 1000 * (round + 1) + 100 * (uint32_t)k;
		uint32_t rseed = sseed + 50;

		for (i = 0; i < OTHER_SENDS; i++) {
			size_t off = sbase + (size_t)i * OTHER_LEN;
			uint64_t id;

			lbu_fill(src[k]->mem + off, OTHER_LEN,
				 sseed + (uint32_t)i);
			id = acct_add(&srq[k], UIW_WC_RECV, OTHER_LEN,
				      dst[k]->mem + off, sseed + (uint32_t)i);
			LBU_OK(lbu_post_recv(&p[k].srv, id, dst[k], off,
					     OTHER_LEN));
		}
		for (i = 0; i < OTHER_READS; i++)
			lbu_fill(rsrc[k]->mem + rbase +
				 (size_t)i * OTHER_RLEN, OTHER_RLEN,
				 rseed + (uint32_t)i);
		for (i = 0; i < OTHER_SENDS; i++) {
			size_t off = sbase + (size_t)i * OTHER_LEN;
			uint64_t id = acct_add(&csq[k], UIW_WC_SEND, OTHER_LEN,
					       NULL, 0);
			int r;

			LBU_OK(lbu_post_send(&p[k].cli, id, UIW_WR_SEND,
					     UIW_SEND_SIGNALED, src[k], off,
					     OTHER_LEN, 0, 0, 0));
			if (i % (OTHER_SENDS / OTHER_READS))
				continue;
			r = i / (OTHER_SENDS / OTHER_READS);
			off = rbase + (size_t)r * OTHER_RLEN;
			id = acct_add(&csq[k], UIW_WC_RDMA_READ, OTHER_RLEN,
				      rdst[k]->mem + off, rseed + (uint32_t)r);
			LBU_OK(lbu_post_send(&p[k].cli, id, UIW_WR_RDMA_READ,
					     UIW_SEND_SIGNALED, rdst[k], off,
					     OTHER_RLEN, lbu_to(rsrc[k], off),
					     rsrc[k]->mr->rkey, 0));
		}
		v[2 * (k - 1)] = &csq[k];
		v[2 * (k - 1) + 1] = &srq[k];
	}
	collect_ms(v, 2 * (NQP - 1), HOLD_MAX_MS / 2, true);
}

/* Nothing of the first QP's messages has reached its receiver: the
 * relay holds them still.  *held: the packets held so far. */
static void still_held(struct uiw_uf *uf, struct acct *srq0,
		       uint64_t *held)
{
	struct uiw_uf_stats st;

	acct_poll(srq0);
	assert_int_equal(srq0->done, 0);
	uiw_uf_get_stats(uf, &st);
	assert_true(st.d[UIW_UF_C2S].pending >= 1);
	*held = st.d[UIW_UF_C2S].matched;
}

static void test_streams(void **state)
{
	struct fx *f = *state;
	struct uiw_uf *uf = relay_new(f, 0x5717);
	struct lbu_pair p[NQP];
	struct lbu_buf *src[NQP], *dst[NQP], *rsrc[NQP], *rdst[NQP];
	struct acct csq[NQP], srq[NQP];
	struct acct *v[2 * NQP];
	struct sockaddr_storage la[NQP], pa[NQP];
	uint16_t sid[NQP];
	uint32_t vtag[NQP];
	struct uiw_uf_stats st;
	uint16_t held_sid;
	int64_t t_hold, t_others, t_t3, t_others2, t_rel;
	uint64_t held1, held2;
	int k, i, j;

	for (k = 0; k < NQP; k++) {
		pair_up(f, &p[k], uf, 64);
		LBU_NN(src[k] = lbu_buf_alloc(&p[k].cli, 64 * KiB, ACC_ALL));
		LBU_NN(rdst[k] = lbu_buf_alloc(&p[k].cli, 64 * KiB, ACC_ALL));
		LBU_NN(dst[k] = lbu_buf_alloc(&p[k].srv, 64 * KiB, ACC_ALL));
		LBU_NN(rsrc[k] = lbu_buf_alloc(&p[k].srv, 64 * KiB, ACC_ALL));
		LBU_OK(uiw_cm_local_addr(p[k].cli.id, &la[k]));
		LBU_OK(uiw_cm_peer_addr(p[k].cli.id, &pa[k]));
	}
	/* One association (RFC 5043 §4): the clients' ends share their
	 * SCTP address and port, and so do the peers'; the relay saw one
	 * client; every QP has a stream of its own, under one
	 * verification tag. */
	for (k = 1; k < NQP; k++) {
		same_addr(&la[0], &la[k], "the clients' local addresses");
		same_addr(&pa[0], &pa[k], "the clients' peer addresses");
	}
	uiw_uf_get_stats(uf, &st);
	assert_int_equal(st.clients, 1);
	for (k = 0; k < NQP; k++) {
		learn_stream(uf, &p[k], src[k], dst[k], &sid[k], &vtag[k]);
		for (j = 0; j < k; j++)
			assert_int_not_equal(sid[j], sid[k]);
		assert_int_equal(vtag[k], vtag[0]);
	}
	printf("[ streams ] %d QPs on one association (verification tag "
	       "%#x, local port %u) on streams", NQP, vtag[0],
	       ntohs(((struct sockaddr_in *)&la[0])->sin_port));
	for (k = 0; k < NQP; k++)
		printf(" %u", sid[k]);
	printf("\n");

	for (k = 0; k < NQP; k++) {
		acct_init(&csq[k], "client send queue", p[k].cli.scq, true);
		acct_init(&srq[k], "server receive queue", p[k].srv.rcq,
			  true);
	}
	/* The relay holds every packet that leads with a chunk of QP 0's
	 * stream: its messages and their retransmissions. */
	held_sid = sid[0];
	assert_int_equal(uiw_uf_match(uf, UIW_UF_C2S, uiw_uf_match_sctp_sid,
				      &held_sid, UIW_UF_HOLD, HOLD_MAX_MS),
			 0);
	for (i = 0; i < HELD_SENDS; i++) {
		uint64_t id;
		size_t off = (size_t)i * HELD_LEN;

		lbu_fill(src[0]->mem + off, HELD_LEN, 500 + (uint32_t)i);
		id = acct_add(&srq[0], UIW_WC_RECV, HELD_LEN,
			      dst[0]->mem + off, 500 + (uint32_t)i);
		LBU_OK(lbu_post_recv(&p[0].srv, id, dst[0], off, HELD_LEN));
		id = acct_add(&csq[0], UIW_WC_SEND, HELD_LEN, NULL, 0);
		LBU_OK(lbu_post_send(&p[0].cli, id, UIW_WR_SEND,
				     UIW_SEND_SIGNALED, src[0], off,
				     HELD_LEN, 0, 0, 0));
	}
	assert_int_equal(uiw_uf_wait_matched(uf, UIW_UF_C2S, 1,
					     lbu_timeout_ms()), 0);
	t_hold = lbu_now_ms();

	/* The other QPs' Sends and Reads all complete while QP 0's
	 * packets wait in the relay; SCTP retransmits those at once (the
	 * others' acknowledgements report them missing: RFC 4960 §7.2.4),
	 * and again when its timer expires (§6.3.3), which also shrinks
	 * the congestion window to one packet (§7.2.3); the others go on
	 * after that too.  QP 0's messages are small: a chunk that stays
	 * unacknowledged keeps its place in the association's congestion
	 * window, one for all streams, so held messages as large as the
	 * window would stop every stream (a real path does not lose one
	 * stream's packets for good while it carries the others'). */
	others_round(p, src, dst, rsrc, rdst, csq, srq, 0);
	t_others = lbu_now_ms();
	still_held(uf, &srq[0], &held1);
	assert_int_equal(uiw_uf_wait_matched(uf, UIW_UF_C2S, held1 + 1,
					     HOLD_MAX_MS / 2), 0);
	t_t3 = lbu_now_ms();
	others_round(p, src, dst, rsrc, rdst, csq, srq, 1);
	t_others2 = lbu_now_ms();
	still_held(uf, &srq[0], &held2);
	acct_poll(&csq[0]);
	printf("[ streams ] QPs 1-%d: %d Sends and %d Reads each completed "
	       "in %" PRId64 " ms while QP 0's stream was held (%" PRIu64
	       " of its packets, fast retransmissions included), and again "
	       "in %" PRId64 " ms after SCTP's retransmission timer fired "
	       "(%" PRId64 " ms in; %" PRIu64 " packets held); %d of QP "
	       "0's %d Sends completed at the sender, none at the "
	       "receiver\n", NQP - 1, OTHER_SENDS, OTHER_READS,
	       t_others - t_hold, held1, t_others2 - t_t3, t_t3 - t_hold,
	       held2, csq[0].done, HELD_SENDS);

	/* Let them go: QP 0's messages complete, in order. */
	assert_int_equal(uiw_uf_match(uf, UIW_UF_C2S, NULL, NULL,
				      UIW_UF_COUNT, 0), 0);
	t_rel = lbu_now_ms();
	assert_int_equal(uiw_uf_release(uf, UIW_UF_C2S), 0);
	v[0] = &csq[0];
	v[1] = &srq[0];
	collect(v, 2);
	printf("[ streams ] QP 0 held %" PRId64 " ms, complete %" PRId64
	       " ms after the release\n", t_rel - t_hold,
	       srq[0].last_ms - t_rel);
	print_relay("streams", uf);
	assert_true(srq[0].last_ms >= t_rel);

	/* All four go on as before. */
	for (k = 0; k < NQP; k++) {
		for (i = 0; i < 4; i++) {
			size_t off = (size_t)(2 * OTHER_SENDS + i) *
				     OTHER_LEN;
			uint32_t seed = 800 + 10 * (uint32_t)k + (uint32_t)i;
			uint64_t id;

			lbu_fill(src[k]->mem + off, OTHER_LEN, seed);
			id = acct_add(&srq[k], UIW_WC_RECV, OTHER_LEN,
				      dst[k]->mem + off, seed);
			LBU_OK(lbu_post_recv(&p[k].srv, id, dst[k], off,
					     OTHER_LEN));
			id = acct_add(&csq[k], UIW_WC_SEND, OTHER_LEN, NULL,
				      0);
			LBU_OK(lbu_post_send(&p[k].cli, id, UIW_WR_SEND,
					     UIW_SEND_SIGNALED, src[k], off,
					     OTHER_LEN, 0, 0, 0));
		}
		v[2 * k] = &csq[k];
		v[2 * k + 1] = &srq[k];
	}
	collect(v, 2 * NQP);
	for (k = 0; k < NQP; k++) {
		LBU_OK(lbu_cq_empty(p[k].cli.rcq, "client receive CQ"));
		LBU_OK(lbu_cq_empty(p[k].srv.scq, "server send CQ"));
		assert_int_equal(lbu_qp_state(&p[k].cli, NULL), UIW_QPS_RTS);
		LBU_OK(lbu_pair_destroy(&p[k]));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_loss),
		cmocka_unit_test(test_dup_reorder),
		cmocka_unit_test(test_burst),
		cmocka_unit_test(test_streams),
		cmocka_unit_test(test_cut),
	};

	/* Everything here is DDP over SCTP over UDP; the listener's UDP
	 * port is a free one (lb_util.c). */
	setenv("UIW_LB_LLP", "sctp-udp", 1);
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
