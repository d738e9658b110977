/*
 * MPA revision 2 (RFC 6581) over 127.0.0.1: uiwarp with uiwarp (IRD/ORD
 * negotiation seen in the events and in uiw_qp_query, revision 1 with
 * revision 2 both ways, peer-to-peer mode with each RTR type), and raw
 * TCP peers written with plain sockets here that play siw's part octet
 * for octet: every row of SIW-FACTS.md "siw as responder", siw's
 * peer-to-peer Request and RTR, and the Terminates of RFC 6581 §8-9
 * ("insufficient IRD" 2/0/6, "no matching RTR option" 2/0/7) as they
 * cross the wire.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <uiwarp/uiwarp.h>

#include "cm_util.h"

#include "wire/ddp.h"
#include "wire/mpa.h"

#define WAIT_MS      15000
#define BUF_LEN      8192

static const uint8_t key_req[16] = "MPA ID Req Frame";
static const uint8_t key_rep[16] = "MPA ID Rep Frame";

static struct uiw_device *cli_dev, *srv_dev;

/* "10 02 0004 8008 8008" -> octets; spaces ignored. */
static size_t unhex(uint8_t *out, size_t cap, const char *hex)
{
	size_t n = 0;
	unsigned x;

	while (*hex) {
		if (*hex == ' ') {
			hex++;
			continue;
		}
		assert_true(n < cap);
		assert_int_equal(sscanf(hex, "%2x", &x), 1);
		out[n++] = (uint8_t)x;
		hex += 2;
	}
	return n;
}

/* ---- Events and completions --------------------------------------- */

static void expect_wc(struct uiw_cq *cq, uint64_t wr_id, int status,
		      uint32_t byte_len)
{
	struct uiw_wc wc;

	cmu_wait_wc(cq, &wc);
	if (wc.wr_id != wr_id || (int)wc.status != status)
		fail_msg("completion wr_id %llu status %d, expected %llu %d",
			 (unsigned long long)wc.wr_id, wc.status,
			 (unsigned long long)wr_id, status);
	if (status == UIW_WC_SUCCESS && wc.opcode == UIW_WC_RECV)
		assert_int_equal(wc.byte_len, byte_len);
}

static void cq_empty(struct uiw_cq *cq)
{
	struct uiw_wc wc;

	if (uiw_cq_poll(cq, 1, &wc) != 0)
		fail_msg("unexpected completion wr_id %llu status %d",
			 (unsigned long long)wc.wr_id, wc.status);
}

/* ---- Ends and listeners ------------------------------------------- */

struct end {
	struct uiw_pd *pd;
	struct uiw_cq *cq;
	struct uiw_qp *qp;
	struct uiw_cm_channel *ch;
	struct uiw_cm_id *id;
	struct uiw_mr *mr;
	uint8_t *buf;
};

static void end_open(struct end *e, struct uiw_device *dev, bool channel)
{
	struct uiw_qp_init_attr a;

	memset(e, 0, sizeof(*e));
	e->pd = uiw_pd_alloc(dev);
	assert_non_null(e->pd);
	e->cq = uiw_cq_create(dev, 64);
	assert_non_null(e->cq);
	memset(&a, 0, sizeof(a));
	a.send_cq = e->cq;
	a.recv_cq = e->cq;
	a.cap.max_send_wr = 16;
	a.cap.max_recv_wr = 16;
	a.cap.max_send_sge = 1;
	a.cap.max_recv_sge = 1;
	a.sq_sig_all = 1;
	e->qp = uiw_qp_create(e->pd, &a);
	assert_non_null(e->qp);
	e->buf = calloc(1, BUF_LEN);
	assert_non_null(e->buf);
	e->mr = uiw_reg_mr(e->pd, e->buf, BUF_LEN, UIW_ACCESS_LOCAL_WRITE |
			   UIW_ACCESS_REMOTE_READ | UIW_ACCESS_REMOTE_WRITE);
	assert_non_null(e->mr);
	if (channel) {
		e->ch = uiw_cm_channel_create(dev);
		assert_non_null(e->ch);
	}
}

static void end_close(struct end *e)
{
	if (e->id)
		assert_int_equal(uiw_cm_destroy_id(e->id), 0);
	assert_int_equal(uiw_qp_destroy(e->qp), 0);
	assert_int_equal(uiw_dereg_mr(e->mr), 0);
	assert_int_equal(uiw_cq_destroy(e->cq), 0);
	assert_int_equal(uiw_pd_free(e->pd), 0);
	if (e->ch)
		assert_int_equal(uiw_cm_channel_destroy(e->ch), 0);
	free(e->buf);
	memset(e, 0, sizeof(*e));
}

static struct uiw_qp_attr qp_attr(struct uiw_qp *qp)
{
	struct uiw_qp_attr a;

	assert_int_equal(uiw_qp_query(qp, &a), 0);
	return a;
}

static void post_recv(struct end *e, uint64_t id, size_t off, size_t len)
{
	struct uiw_sge sge = { (uintptr_t)(e->buf + off), (uint32_t)len,
			       e->mr->lkey };
	struct uiw_recv_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1 };

	assert_int_equal(uiw_post_recv(e->qp, &wr, NULL), 0);
}

static void post_wr(struct end *e, uint64_t id, enum uiw_wr_opcode op,
		    size_t off, size_t len, uint64_t raddr, uint32_t rkey)
{
	struct uiw_sge sge = { (uintptr_t)(e->buf + off), (uint32_t)len,
			       e->mr->lkey };
	struct uiw_send_wr wr = {
		.wr_id = id, .sg_list = &sge, .num_sge = 1, .opcode = op,
		.send_flags = UIW_SEND_SIGNALED,
	};

	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	assert_int_equal(uiw_post_send(e->qp, &wr, NULL), 0);
}

static void fill(uint8_t *p, size_t n, uint8_t seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)(seed + 3 * i + (i >> 7));
}

struct lst {
	struct uiw_cm_channel *ch;
	struct uiw_cm_id *id;
	struct sockaddr_storage addr;
	socklen_t len;
};

static void lst_open(struct lst *l)
{
	struct sockaddr_storage ss;
	socklen_t len;

	memset(l, 0, sizeof(*l));
	l->ch = uiw_cm_channel_create(srv_dev);
	assert_non_null(l->ch);
	assert_int_equal(uiw_resolve("127.0.0.1", "0", 1, &ss, &len), 0);
	assert_int_equal(uiw_cm_listen(l->ch, (struct sockaddr *)&ss, len, 8,
				       &l->id), 0);
	assert_int_equal(uiw_cm_local_addr(l->id, &l->addr), 0);
	l->len = sizeof(struct sockaddr_in);
}

static void lst_close(struct lst *l)
{
	assert_int_equal(uiw_cm_destroy_id(l->id), 0);
	cmu_expect_no_event(l->ch);
	assert_int_equal(uiw_cm_channel_destroy(l->ch), 0);
}

/* ---- Raw TCP peer --------------------------------------------------- */

static void raw_timeouts(int fd)
{
	struct timeval tv = { .tv_sec = WAIT_MS / 1000 };

	assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv,
				    sizeof(tv)), 0);
}

static int raw_connect(const struct lst *l)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	raw_timeouts(fd);
	assert_int_equal(connect(fd, (const struct sockaddr *)&l->addr,
				 l->len), 0);
	return fd;
}

/* Writes a frame: key, then the hex of flags, rev, PD_Length, pd. */
static void raw_frame(int fd, const uint8_t key[16], const char *hex)
{
	uint8_t b[16 + 600];
	size_t n;

	memcpy(b, key, 16);
	n = unhex(b + 16, sizeof(b) - 16, hex);
	cmu_raw_write(fd, b, 16 + n);
}

/* Reads exactly the frame hex says (after the key) and compares. */
static void raw_expect_frame(int fd, const uint8_t key[16], const char *hex)
{
	uint8_t want[16 + 600], got[16 + 600];
	size_t n;

	memcpy(want, key, 16);
	n = 16 + unhex(want + 16, sizeof(want) - 16, hex);
	cmu_raw_read(fd, got, n);
	if (memcmp(got, want, n)) {
		char s[2 * 40 + 1];
		size_t i;

		for (i = 0; i < n - 16 && i < 40; i++)
			snprintf(s + 2 * i, 3, "%02x", got[16 + i]);
		fail_msg("frame %s, expected %s", s, hex);
	}
}

/* Nothing arrives for a short while (the responder holds its FPDUs). */
static void raw_quiet(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	assert_int_equal(poll(&p, 1, 50), 0);
}

/* A stream of FPDUs from the raw peer's socket. */
struct rstream {
	int fd;
	uint64_t pos;
	bool markers, crc;
	uint8_t b[4096];
	size_t have;
};

static uint16_t rs_fpdu(struct rstream *s, uint8_t *ulpdu, size_t cap)
{
	uint16_t ulen = 0;
	size_t used = 0;

	for (;;) {
		ssize_t r;

		assert_int_equal(uiw_mpa_fpdu_decode(s->b, s->have, s->pos,
						     s->markers, s->crc, ulpdu,
						     cap, &ulen, &used),
				 UIW_OK);
		if (used) {
			memmove(s->b, s->b + used, s->have - used);
			s->have -= used;
			s->pos += used;
			return ulen;
		}
		assert_true(s->have < sizeof(s->b));
		r = recv(s->fd, s->b + s->have, sizeof(s->b) - s->have, 0);
		if (r <= 0)
			fail_msg("raw peer: no FPDU: %s",
				 r == 0 ? "EOF" : strerror(errno));
		s->have += (size_t)r;
	}
}

/* The raw peer's own transmit position. */
struct wstream {
	int fd;
	uint64_t pos;
	bool markers, crc;
};

static void ws_send(struct wstream *w, const struct uiw_ddp_hdr *h,
		    const void *payload, size_t plen)
{
	uint8_t u[256], b[512];
	size_t n = uiw_ddp_hdr_encode(u, h), f;

	memcpy(u + n, payload, plen);
	f = uiw_mpa_fpdu_encode(b, sizeof(b), w->pos, u, (uint16_t)(n + plen),
				w->markers, w->crc);
	assert_true(f > 0);
	cmu_raw_write(w->fd, b, f);
	w->pos += f;
}

static void hdr(struct uiw_ddp_hdr *h, bool tagged, uint8_t op)
{
	memset(h, 0, sizeof(*h));
	h->tagged = tagged;
	h->last = true;
	h->ddp_ver = UIW_DDP_VERSION;
	h->rdmap_ver = UIW_RDMAP_VERSION;
	h->opcode = op;
}

static void ws_send_msg(struct wstream *w, uint32_t msn, const void *p,
			size_t n)
{
	struct uiw_ddp_hdr h;

	hdr(&h, false, UIW_OP_SEND);
	h.msn = msn;
	ws_send(w, &h, p, n);
}

/* The Terminate in a ULPDU: its cause. */
static uiw_err_t term_of(const uint8_t *u, uint16_t ulen)
{
	struct uiw_ddp_hdr h;
	struct uiw_term t;
	size_t hl;

	assert_int_equal(uiw_ddp_hdr_decode(u, ulen, &h, &hl), UIW_OK);
	assert_false(h.tagged);
	assert_int_equal(h.qn, UIW_QN_TERMINATE);
	assert_int_equal(h.opcode, UIW_OP_TERMINATE);
	assert_int_equal(uiw_term_decode(u + hl, ulen - hl, &t), UIW_OK);
	assert_false(t.siw_layout);
	return t.err;
}

/* ---- Fixtures ------------------------------------------------------- */

static int group_setup(void **state)
{
	(void)state;
	cli_dev = uiw_device_open("v2cli");
	srv_dev = uiw_device_open("v2srv");
	return cli_dev && srv_dev ? 0 : -1;
}

static int group_teardown(void **state)
{
	(void)state;
	return uiw_device_close(cli_dev) || uiw_device_close(srv_dev) ? -1 : 0;
}

/* ---- uiwarp with uiwarp --------------------------------------------- */

struct conn {
	struct lst l;
	struct end c, s;
	struct uiw_cm_event creq, cest, sest;
};

/* Connects a client with cp to a server accepting with sp; both
 * ESTABLISHED.  The events are kept (without their private data). */
static void conn_up(struct conn *k, const struct uiw_conn_param *cp,
		    const struct uiw_conn_param *sp)
{
	lst_open(&k->l);
	end_open(&k->c, cli_dev, true);
	end_open(&k->s, srv_dev, false);
	assert_int_equal(uiw_cm_connect(k->c.ch, k->c.qp,
					(struct sockaddr *)&k->l.addr,
					k->l.len, cp, &k->c.id), 0);
	cmu_expect_event(k->l.ch, UIW_CM_EVENT_CONNECT_REQUEST, &k->creq);
	k->s.id = k->creq.id;
	if (cp->private_data_len) {
		assert_int_equal(k->creq.private_data_len,
				 cp->private_data_len);
		assert_memory_equal(k->creq.private_data, cp->private_data,
				    cp->private_data_len);
	}
	if (uiw_cm_accept(k->s.id, k->s.qp, sp))
		fail_msg("accept: %s", uiw_last_error());
	cmu_expect_event(k->c.ch, UIW_CM_EVENT_ESTABLISHED, &k->cest);
	if (sp->private_data_len) {
		assert_int_equal(k->cest.private_data_len,
				 sp->private_data_len);
		assert_memory_equal(k->cest.private_data, sp->private_data,
				    sp->private_data_len);
	}
	cmu_expect_event(k->l.ch, UIW_CM_EVENT_ESTABLISHED, &k->sest);
	k->creq.private_data = k->cest.private_data = NULL;
	assert_int_equal(qp_attr(k->c.qp).state, UIW_QPS_RTS);
	assert_int_equal(qp_attr(k->s.qp).state, UIW_QPS_RTS);
}

static void conn_down(struct conn *k)
{
	struct uiw_cm_event ev;

	assert_int_equal(uiw_cm_disconnect(k->c.id), 0);
	cmu_expect_event(k->c.ch, UIW_CM_EVENT_DISCONNECTED, &ev);
	cmu_expect_event(k->l.ch, UIW_CM_EVENT_DISCONNECTED, &ev);
	end_close(&k->c);
	end_close(&k->s);
	lst_close(&k->l);
}

/* Sends, RDMA Write and RDMA Read both ways, data checked; every
 * completion accounted for. */
static void traffic(struct conn *k)
{
	struct end *e[2] = { &k->c, &k->s };
	int i;

	for (i = 0; i < 2; i++) {
		struct end *a = e[i], *b = e[1 - i];

		fill(a->buf, 1000, (uint8_t)(10 + i));
		memset(b->buf + 1000, 0, 3000);
		post_recv(b, 100, 1000, 1000);
		post_wr(a, 200, UIW_WR_SEND, 0, 700, 0, 0);
		expect_wc(a->cq, 200, UIW_WC_SUCCESS, 0);
		expect_wc(b->cq, 100, UIW_WC_SUCCESS, 700);
		assert_memory_equal(b->buf + 1000, a->buf, 700);
		post_wr(a, 201, UIW_WR_RDMA_WRITE, 0, 900,
			(uintptr_t)(b->buf + 2000), b->mr->rkey);
		expect_wc(a->cq, 201, UIW_WC_SUCCESS, 0);
		fill(b->buf + 3000, 500, (uint8_t)(50 + i));
		post_wr(a, 202, UIW_WR_RDMA_READ, 4000, 500,
			(uintptr_t)(b->buf + 3000), b->mr->rkey);
		expect_wc(a->cq, 202, UIW_WC_SUCCESS, 0);
		assert_memory_equal(a->buf + 4000, b->buf + 3000, 500);
		assert_memory_equal(b->buf + 2000, a->buf, 900);
		cq_empty(a->cq);
		cq_empty(b->cq);
	}
}

/* Revision 2 is the default: IRD and ORD cross in the private data, each
 * side adjusts (RFC 6581 §9.1), and both ends report the outcome. */
static void test_v2_default_negotiation(void **state)
{
	static const char cpd[] = "client";
	static const char spd[] = "server";
	struct uiw_conn_param cp = { .private_data = cpd,
				     .private_data_len = sizeof(cpd),
				     .ird = 4, .ord = 2 };
	struct uiw_conn_param sp = { .private_data = spd,
				     .private_data_len = sizeof(spd),
				     .ird = 1, .ord = 8 };
	struct uiw_qp_attr a;
	struct conn k;

	(void)state;
	conn_up(&k, &cp, &sp);
	assert_int_equal(k.creq.mpa.rev, 2);
	assert_int_equal(k.creq.mpa.enhanced, 1);
	assert_int_equal(k.creq.peer_ird, 4);
	assert_int_equal(k.creq.peer_ord, 2);
	assert_int_equal(k.creq.peer_p2p, 0);
	assert_int_equal(k.creq.peer_rtr, 0);
	/* Server: IRD raised to the client's ORD, ORD at most its IRD. */
	assert_int_equal(k.sest.ird, 2);
	assert_int_equal(k.sest.ord, 4);
	assert_int_equal(k.sest.p2p, 0);
	a = qp_attr(k.s.qp);
	assert_int_equal(a.ird, 2);
	assert_int_equal(a.ord, 4);
	/* Client: the server's values as sent, its own as adjusted. */
	assert_int_equal(k.cest.mpa.rev, 2);
	assert_int_equal(k.cest.mpa.enhanced, 1);
	assert_int_equal(k.cest.peer_ird, 2);
	assert_int_equal(k.cest.peer_ord, 4);
	assert_int_equal(k.cest.ird, 4);
	assert_int_equal(k.cest.ord, 2);
	assert_int_equal(k.cest.p2p, 0);
	assert_int_equal(k.cest.rtr, 0);
	a = qp_attr(k.c.qp);
	assert_int_equal(a.ird, 4);
	assert_int_equal(a.ord, 2);
	/* Client-server mode: the client speaks first. */
	traffic(&k);
	conn_down(&k);
}

/* Defaults on both sides; the largest private data revision 2 allows. */
static void test_v2_defaults_pd_max(void **state)
{
	static uint8_t cpd[UIW_MPA_V2_PRIVATE_DATA_MAX];
	static uint8_t spd[UIW_MPA_V2_PRIVATE_DATA_MAX];
	struct uiw_conn_param cp = { .private_data = cpd,
				     .private_data_len = sizeof(cpd) };
	struct uiw_conn_param sp = { .private_data = spd,
				     .private_data_len = sizeof(spd) };
	struct uiw_device_attr da;
	struct conn k;

	(void)state;
	fill(cpd, sizeof(cpd), 1);
	fill(spd, sizeof(spd), 2);
	conn_up(&k, &cp, &sp);
	assert_int_equal(uiw_device_query(cli_dev, &da), 0);
	assert_int_equal(k.creq.peer_ird, k.sest.ird);
	assert_int_equal(k.cest.ird, k.sest.ord);
	assert_int_equal(k.cest.ord, k.sest.ird);
	assert_true(k.cest.ird >= 1 && k.cest.ird <= da.max_ird);
	assert_int_equal(qp_attr(k.c.qp).ord, k.cest.ord);
	assert_int_equal(qp_attr(k.s.qp).ird, k.sest.ird);
	traffic(&k);
	conn_down(&k);
}

/* A revision 1 client and a revision 2 listener: the Reply is of
 * revision 1; IRD and ORD stay each side's own. */
static void test_rev1_client_rev2_listener(void **state)
{
	struct uiw_conn_param cp = { .mpa_rev = 1, .ird = 4, .ord = 2,
				     .private_data = "v1",
				     .private_data_len = 2 };
	struct uiw_conn_param sp = { .ird = 1, .ord = 8 };
	struct conn k;

	(void)state;
	conn_up(&k, &cp, &sp);
	assert_int_equal(k.creq.mpa.rev, 1);
	assert_int_equal(k.creq.mpa.enhanced, 0);
	assert_int_equal(k.creq.peer_ird, 0);
	assert_int_equal(k.cest.mpa.rev, 1);
	assert_int_equal(k.cest.mpa.enhanced, 0);
	assert_int_equal(qp_attr(k.c.qp).ird, 4);
	assert_int_equal(qp_attr(k.c.qp).ord, 2);
	assert_int_equal(qp_attr(k.s.qp).ird, 1);
	assert_int_equal(qp_attr(k.s.qp).ord, 8);
	assert_int_equal(k.sest.ird, 1);
	assert_int_equal(k.sest.ord, 8);
	traffic(&k);
	conn_down(&k);
}

/* A revision 2 client and a listener limited to revision 1: the
 * listener closes (RFC 6581 §10, "enhanced MPA initiator only"); the
 * client may then try revision 1. */
static void test_rev2_client_rev1_listener(void **state)
{
	struct uiw_conn_param cp = { 0 }, sp = { 0 };
	struct uiw_cm_event ev;
	struct conn k;

	(void)state;
	lst_open(&k.l);
	assert_int_equal(uiw_cm_set_max_mpa_rev(k.l.id, 1), 0);
	assert_int_equal(uiw_cm_set_max_mpa_rev(k.l.id, 3), -EINVAL);
	assert_int_equal(uiw_cm_set_max_mpa_rev(k.l.id, 0), -EINVAL);
	end_open(&k.c, cli_dev, true);
	end_open(&k.s, srv_dev, false);
	assert_int_equal(uiw_cm_set_max_mpa_rev(NULL, 1), -EINVAL);
	assert_int_equal(uiw_cm_connect(k.c.ch, k.c.qp,
					(struct sockaddr *)&k.l.addr, k.l.len,
					&cp, &k.c.id), 0);
	cmu_expect_event(k.c.ch, UIW_CM_EVENT_CONNECT_ERROR, &ev);
	assert_int_equal(ev.status, -ECONNRESET);
	cmu_expect_no_event(k.l.ch);
	assert_int_equal(qp_attr(k.c.qp).state, UIW_QPS_IDLE);
	assert_int_equal(uiw_cm_destroy_id(k.c.id), 0);
	/* Again in revision 1. */
	cp.mpa_rev = 1;
	assert_int_equal(uiw_cm_connect(k.c.ch, k.c.qp,
					(struct sockaddr *)&k.l.addr, k.l.len,
					&cp, &k.c.id), 0);
	cmu_expect_event(k.l.ch, UIW_CM_EVENT_CONNECT_REQUEST, &k.creq);
	assert_int_equal(k.creq.mpa.rev, 1);
	k.s.id = k.creq.id;
	assert_int_equal(uiw_cm_accept(k.s.id, k.s.qp, &sp), 0);
	cmu_expect_event(k.c.ch, UIW_CM_EVENT_ESTABLISHED, &k.cest);
	assert_int_equal(k.cest.mpa.rev, 1);
	cmu_expect_event(k.l.ch, UIW_CM_EVENT_ESTABLISHED, &k.sest);
	traffic(&k);
	conn_down(&k);
}

/* RFC 6581 §9.1: 0x3FFF leaves IRD/ORD to the ULP on both sides. */
static void test_v2_manual_ird_ord(void **state)
{
	struct uiw_conn_param cp = { .ird = UIW_IRD_ORD_MANUAL, .ord = 3 };
	struct uiw_conn_param sp = { .ird = 5, .ord = 6 };
	struct conn k;

	(void)state;
	conn_up(&k, &cp, &sp);
	assert_int_equal(k.creq.peer_ird, 0x3fff);
	assert_int_equal(k.creq.peer_ord, 3);
	/* The server keeps its ORD and answers 0x3FFF for it. */
	assert_int_equal(k.sest.ord, 6);
	assert_int_equal(k.sest.ird, 5);
	assert_int_equal(k.cest.peer_ord, 0x3fff);
	assert_int_equal(k.cest.peer_ird, 5);
	/* The client keeps its own (default) IRD. */
	assert_int_equal(k.cest.ord, 3);
	assert_true(k.cest.ird >= 1 && k.cest.ird < 0x3fff);
	assert_int_equal(qp_attr(k.c.qp).ird, k.cest.ird);
	traffic(&k);
	conn_down(&k);
}

/* ---- Peer-to-peer ----------------------------------------------------- */

/* The server speaks first: its Send goes as soon as the RTR arrived,
 * without the client's ULP sending anything.  The RTR itself is
 * invisible: the server's receive takes the client's first real Send. */
static void p2p_run(uint8_t offer, uint8_t accept, uint8_t want,
		    enum uiw_opt crc)
{
	struct uiw_conn_param cp = { .p2p = UIW_OPT_ON, .rtr = offer,
				     .crc = crc, .ord = 1 };
	struct uiw_conn_param sp = { .rtr = accept, .crc = crc, .ird = 1,
				     .rd_strict = 1 };
	struct conn k;
	int i;

	print_message("offer %x accept %x -> %x, crc %d\n", offer, accept,
		      want, crc);
	lst_open(&k.l);
	end_open(&k.c, cli_dev, true);
	end_open(&k.s, srv_dev, false);
	post_recv(&k.c, 1, 0, 100);
	post_recv(&k.s, 2, 0, 100);
	assert_int_equal(uiw_cm_connect(k.c.ch, k.c.qp,
					(struct sockaddr *)&k.l.addr, k.l.len,
					&cp, &k.c.id), 0);
	cmu_expect_event(k.l.ch, UIW_CM_EVENT_CONNECT_REQUEST, &k.creq);
	assert_int_equal(k.creq.peer_p2p, 1);
	assert_int_equal(k.creq.peer_rtr, offer ? offer : UIW_RTR_ALL);
	k.s.id = k.creq.id;
	assert_int_equal(uiw_cm_accept(k.s.id, k.s.qp, &sp), 0);
	cmu_expect_event(k.l.ch, UIW_CM_EVENT_ESTABLISHED, &k.sest);
	assert_int_equal(k.sest.p2p, 1);
	assert_true(k.sest.rtr & want);
	/* The server sends first. */
	fill(k.s.buf + 1000, 64, 7);
	post_wr(&k.s, 20, UIW_WR_SEND, 1000, 64, 0, 0);
	cmu_expect_event(k.c.ch, UIW_CM_EVENT_ESTABLISHED, &k.cest);
	assert_int_equal(k.cest.p2p, 1);
	assert_int_equal(k.cest.rtr, want);
	assert_int_equal(k.cest.peer_p2p, 1);
	assert_int_equal(k.cest.peer_rtr, k.sest.rtr);
	expect_wc(k.s.cq, 20, UIW_WC_SUCCESS, 0);
	expect_wc(k.c.cq, 1, UIW_WC_SUCCESS, 64);
	assert_memory_equal(k.c.buf, k.s.buf + 1000, 64);
	/* Reads right away: ORD 1, server IRD 1 (strict): a Read RTR is
	 * the first Read and the others wait for its Response. */
	fill(k.s.buf + 2000, 300, 9);
	for (i = 0; i < 3; i++)
		post_wr(&k.c, 30 + i, UIW_WR_RDMA_READ, 2000 + 100 * i, 100,
			(uintptr_t)(k.s.buf + 2000 + 100 * i), k.s.mr->rkey);
	for (i = 0; i < 3; i++)
		expect_wc(k.c.cq, 30 + i, UIW_WC_SUCCESS, 0);
	assert_memory_equal(k.c.buf + 2000, k.s.buf + 2000, 300);
	/* The client's first Send lands in the server's first receive. */
	fill(k.c.buf + 500, 10, 3);
	post_wr(&k.c, 10, UIW_WR_SEND, 500, 10, 0, 0);
	expect_wc(k.c.cq, 10, UIW_WC_SUCCESS, 0);
	expect_wc(k.s.cq, 2, UIW_WC_SUCCESS, 10);
	assert_memory_equal(k.s.buf, k.c.buf + 500, 10);
	cq_empty(k.c.cq);
	cq_empty(k.s.cq);
	assert_int_equal(qp_attr(k.c.qp).ord, 1);
	assert_int_equal(qp_attr(k.s.qp).ird, 1);
	conn_down(&k);
}

static void test_p2p_each_rtr(void **state)
{
	(void)state;
	p2p_run(UIW_RTR_SEND, 0, UIW_RTR_SEND, UIW_OPT_ON);
	p2p_run(UIW_RTR_WRITE, 0, UIW_RTR_WRITE, UIW_OPT_ON);
	p2p_run(UIW_RTR_READ, 0, UIW_RTR_READ, UIW_OPT_ON);
	p2p_run(UIW_RTR_SEND, 0, UIW_RTR_SEND, UIW_OPT_OFF);
	p2p_run(UIW_RTR_WRITE, 0, UIW_RTR_WRITE, UIW_OPT_OFF);
	p2p_run(UIW_RTR_READ, 0, UIW_RTR_READ, UIW_OPT_OFF);
	/* All offered: Write preferred; the server narrows the choice. */
	p2p_run(0, 0, UIW_RTR_WRITE, UIW_OPT_DEFAULT);
	p2p_run(0, UIW_RTR_READ | UIW_RTR_SEND, UIW_RTR_READ,
		UIW_OPT_DEFAULT);
	p2p_run(UIW_RTR_SEND | UIW_RTR_READ, UIW_RTR_SEND, UIW_RTR_SEND,
		UIW_OPT_DEFAULT);
}

/* No RTR type in common: the client sends the Terminate 2/0/7 and
 * reports CONNECT_ERROR; the server, already ESTABLISHED, sees it. */
static void test_p2p_no_matching_rtr(void **state)
{
	struct uiw_conn_param cp = { .p2p = UIW_OPT_ON, .rtr = UIW_RTR_SEND };
	struct uiw_conn_param sp = { .rtr = UIW_RTR_WRITE | UIW_RTR_READ };
	struct uiw_cm_event ev;
	struct uiw_qp_attr a;
	struct conn k;

	(void)state;
	lst_open(&k.l);
	end_open(&k.c, cli_dev, true);
	end_open(&k.s, srv_dev, false);
	post_recv(&k.s, 2, 0, 100);
	assert_int_equal(uiw_cm_connect(k.c.ch, k.c.qp,
					(struct sockaddr *)&k.l.addr, k.l.len,
					&cp, &k.c.id), 0);
	cmu_expect_event(k.l.ch, UIW_CM_EVENT_CONNECT_REQUEST, &k.creq);
	k.s.id = k.creq.id;
	assert_int_equal(uiw_cm_accept(k.s.id, k.s.qp, &sp), 0);
	cmu_expect_event(k.l.ch, UIW_CM_EVENT_ESTABLISHED, &k.sest);
	/* The server names the types it supports. */
	assert_int_equal(k.sest.rtr, UIW_RTR_WRITE | UIW_RTR_READ);
	cmu_expect_event(k.c.ch, UIW_CM_EVENT_CONNECT_ERROR, &ev);
	assert_int_equal(ev.status, -ENOPROTOOPT);
	assert_int_equal(ev.peer_rtr, UIW_RTR_WRITE | UIW_RTR_READ);
	assert_int_equal(qp_attr(k.c.qp).state, UIW_QPS_IDLE);
	cmu_expect_event(k.l.ch, UIW_CM_EVENT_DISCONNECTED, &ev);
	a = qp_attr(k.s.qp);
	assert_int_not_equal(a.state, UIW_QPS_RTS);
	assert_int_equal(a.term.origin, UIW_TERM_REMOTE);
	assert_int_equal(a.term.layer, 2);
	assert_int_equal(a.term.etype, 0);
	assert_int_equal(a.term.ecode, 7);
	expect_wc(k.s.cq, 2, UIW_WC_WR_FLUSH_ERR, 0);
	end_close(&k.c);
	end_close(&k.s);
	lst_close(&k.l);
}

/* A strict server needs more ORD than the client's IRD: it rejects with
 * the ORD it needs (RFC 6581 §9.1); the client learns it. */
static void test_strict_responder_rejects(void **state)
{
	struct uiw_conn_param cp = { .ird = 2, .ord = 1 };
	struct uiw_conn_param sp = { .ord = 8, .rd_strict = 1,
				     .private_data = "need 8",
				     .private_data_len = 6 };
	struct uiw_cm_event ev;
	struct conn k;

	(void)state;
	lst_open(&k.l);
	end_open(&k.c, cli_dev, true);
	end_open(&k.s, srv_dev, false);
	assert_int_equal(uiw_cm_connect(k.c.ch, k.c.qp,
					(struct sockaddr *)&k.l.addr, k.l.len,
					&cp, &k.c.id), 0);
	cmu_expect_event(k.l.ch, UIW_CM_EVENT_CONNECT_REQUEST, &k.creq);
	k.s.id = k.creq.id;
	assert_int_equal(uiw_cm_accept(k.s.id, k.s.qp, &sp), -ENOBUFS);
	assert_non_null(strstr(uiw_last_error(), "ORD 8"));
	assert_null(uiw_cm_id_qp(k.s.id));
	cmu_expect_event(k.c.ch, UIW_CM_EVENT_REJECTED, &ev);
	assert_int_equal(ev.status, -ECONNREFUSED);
	assert_int_equal(ev.mpa.enhanced, 1);
	assert_int_equal(ev.peer_ord, 8);
	assert_int_equal(ev.private_data_len, 6);
	assert_memory_equal(ev.private_data, "need 8", 6);
	assert_int_equal(qp_attr(k.c.qp).state, UIW_QPS_IDLE);
	assert_int_equal(qp_attr(k.s.qp).state, UIW_QPS_IDLE);
	cmu_expect_no_event(k.l.ch);
	end_close(&k.c);
	end_close(&k.s);
	lst_close(&k.l);
}

static void test_api(void **state)
{
	static uint8_t pd[512];
	struct uiw_conn_param cp = { 0 };
	struct uiw_cm_event ev;
	struct uiw_cm_id *id;
	struct conn k;

	(void)state;
	lst_open(&k.l);
	end_open(&k.c, cli_dev, true);
	end_open(&k.s, srv_dev, false);
#define CONNECT(p) uiw_cm_connect(k.c.ch, k.c.qp, \
				  (struct sockaddr *)&k.l.addr, k.l.len, \
				  (p), &id)
	cp.private_data = pd;
	cp.private_data_len = UIW_MPA_V2_PRIVATE_DATA_MAX + 1;
	assert_int_equal(CONNECT(&cp), -EINVAL);
	assert_non_null(strstr(uiw_last_error(), "RFC 6581"));
	cp.private_data_len = 0;
	cp.p2p = UIW_OPT_ON;
	cp.mpa_rev = 1;
	assert_int_equal(CONNECT(&cp), -EINVAL);
	cp.mpa_rev = 0;
	cp.p2p = 3;
	assert_int_equal(CONNECT(&cp), -EINVAL);
	cp.p2p = UIW_OPT_ON;
	cp.rtr = 0x8;
	assert_int_equal(CONNECT(&cp), -EINVAL);
	cp.rtr = 0;
	cp.ird = 129;
	assert_int_equal(CONNECT(&cp), -EINVAL);
	cp.ird = UIW_IRD_ORD_MANUAL;
	cp.mpa_rev = 1;
	cp.p2p = UIW_OPT_DEFAULT;
	assert_int_equal(CONNECT(&cp), -EINVAL);
	/* 512 octets: revision 1. */
	cp.ird = 0;
	cp.private_data_len = 512;
	assert_int_equal(CONNECT(&cp), 0);
	k.c.id = id;
	cmu_expect_event(k.l.ch, UIW_CM_EVENT_CONNECT_REQUEST, &ev);
	assert_int_equal(ev.private_data_len, 512);
	assert_int_equal(uiw_cm_reject(ev.id, pd, 512), 0);
	assert_int_equal(uiw_cm_destroy_id(ev.id), 0);
	cmu_expect_event(k.c.ch, UIW_CM_EVENT_REJECTED, &ev);
	assert_int_equal(ev.private_data_len, 512);
	assert_int_equal(ev.mpa.enhanced, 0);
	assert_int_equal(uiw_cm_destroy_id(k.c.id), 0);
	/* Revision 2: replies take at most 508 octets; UIW_IRD_ORD_MANUAL
	 * is the initiator's. */
	memset(&cp, 0, sizeof(cp));
	assert_int_equal(CONNECT(&cp), 0);
	k.c.id = id;
	cmu_expect_event(k.l.ch, UIW_CM_EVENT_CONNECT_REQUEST, &ev);
	k.s.id = ev.id;
	cp.private_data = pd;
	cp.private_data_len = UIW_MPA_V2_PRIVATE_DATA_MAX + 1;
	assert_int_equal(uiw_cm_accept(k.s.id, k.s.qp, &cp), -EINVAL);
	assert_int_equal(uiw_cm_reject(k.s.id, pd, 509), -EINVAL);
	cp.private_data_len = 0;
	cp.ird = UIW_IRD_ORD_MANUAL;
	assert_int_equal(uiw_cm_accept(k.s.id, k.s.qp, &cp), -EINVAL);
	assert_int_equal(uiw_cm_reject(k.s.id, pd, 508), 0);
	cmu_expect_event(k.c.ch, UIW_CM_EVENT_REJECTED, &ev);
	assert_int_equal(ev.mpa.enhanced, 1);
	assert_int_equal(ev.private_data_len, 508);
	assert_true(ev.peer_ird >= 1);
	assert_int_equal(uiw_cm_destroy_id(k.c.id), 0);
	k.c.id = NULL;
#undef CONNECT
	end_close(&k.c);
	end_close(&k.s);
	lst_close(&k.l);
}

/* ---- A raw initiator: the rows of "siw as responder" ------------------ */

/* The raw initiator hangs up: our side sees DISCONNECTED; both ends and
 * the listener go. */
static void raw_hang_up(int fd, struct lst *l, struct end *s)
{
	struct uiw_cm_event ev;

	close(fd);
	cmu_expect_event(l->ch, UIW_CM_EVENT_DISCONNECTED, &ev);
	end_close(s);
	lst_close(l);
}


struct row {
	const char *what;
	const char *req;            /* flags rev PD_Length pd (hex) */
	struct uiw_conn_param sp;   /* how we accept */
	const char *rep;            /* our Reply, or NULL: closed */
	/* The CONNECT_REQUEST */
	int rev, enh;
	uint32_t pird, pord;
	int p2p, rtr;
	const char *pd;             /* application private data (hex) */
};

/* Our answer as siw gives it where the RFC fixes it or our choices can
 * match (ird 1 / ord 128 and, for RTRs, Write only, CRC off); where we
 * differ on purpose the note says so and the test pins ours. */
static const struct row rows[] = {
	{ "rev 1 accepted", "00 01 0000",
	  { .crc = UIW_OPT_OFF }, "00 01 0000", 1, 0, 0, 0, 0, 0, "" },
	{ "rev 1, our CRC preference (siw: 00)", "00 01 0000",
	  { 0 }, "40 01 0000", 1, 0, 0, 0, 0, 0, "" },
	{ "CRC used when asked", "40 01 0000",
	  { 0 }, "40 01 0000", 1, 0, 0, 0, 0, 0, "" },
	{ "private data accepted", "00 01 0005 68656c6c6f",
	  { .crc = UIW_OPT_OFF }, "00 01 0000", 1, 0, 0, 0, 0, 0,
	  "68656c6c6f" },
	{ "P2P echoed, Write RTR", "10 02 0004 8008 8008",
	  { .crc = UIW_OPT_OFF, .ird = 1, .ord = 128, .rtr = UIW_RTR_WRITE },
	  "10 02 0004 8008 8008", 2, 1, 8, 8, 1, UIW_RTR_WRITE, "" },
	{ "P2P, our IRD default 32 (siw: 8008 8008)", "10 02 0004 8008 8008",
	  { .crc = UIW_OPT_OFF }, "10 02 0004 8020 8008", 2, 1, 8, 8, 1,
	  UIW_RTR_WRITE, "" },
	{ "rev 2, no P2P", "10 02 0004 0001 0001",
	  { .crc = UIW_OPT_OFF, .ird = 1, .ord = 128 },
	  "10 02 0004 0001 0001", 2, 1, 1, 1, 0, 0, "" },
	{ "IRD/ORD to the responder's view, Read RTR", "10 02 0004 8004 4002",
	  { .crc = UIW_OPT_OFF, .ird = 1, .ord = 128 },
	  "10 02 0004 8002 4004", 2, 1, 4, 2, 1, UIW_RTR_READ, "" },
	{ "no RTR offered, Write proposed (siw: IRD 0)",
	  "10 02 0004 8000 0000",
	  { .crc = UIW_OPT_OFF, .ird = 1, .ord = 128, .rtr = UIW_RTR_WRITE },
	  "10 02 0004 8001 8000", 2, 1, 0, 0, 1, 0, "" },
	{ "no RTR offered, all we support named (siw: 8000 8000)",
	  "10 02 0004 8000 0000", { .crc = UIW_OPT_OFF },
	  "10 02 0004 c020 c000", 2, 1, 0, 0, 1, 0, "" },
	{ "capped at 128, Write kept", "50 02 0004 80c8 c0c8",
	  { .ird = 1, .ord = 128, .rtr = UIW_RTR_WRITE },
	  "50 02 0004 8080 8080", 2, 1, 200, 200, 1,
	  UIW_RTR_WRITE | UIW_RTR_READ, "" },
	{ "capped, both offered types kept (siw: 8080 8080)",
	  "50 02 0004 80c8 c0c8", { .ird = 1, .ord = 128 },
	  "50 02 0004 8080 c080", 2, 1, 200, 200, 1,
	  UIW_RTR_WRITE | UIW_RTR_READ, "" },
	{ "without 0x10 the data is not IRD/ORD", "00 02 0004 8008 4008",
	  { .crc = UIW_OPT_OFF }, "00 02 0000", 2, 0, 0, 0, 0, 0,
	  "80084008" },
	{ "markers asked: we insert them (siw rejects, 20 01 0000)",
	  "80 01 0000", { .crc = UIW_OPT_OFF }, "00 01 0000", 1, 0, 0, 0, 0,
	  0, "" },
	/* Improperly formatted or of a revision we do not speak: closed
	 * without a Reply (RFC 5044 §7.1.2 rule 2, §7.1.1 Rev). */
	{ "S without room for IRD/ORD (siw: 30 02 0000)", "10 02 0000",
	  { 0 }, NULL, 0, 0, 0, 0, 0, 0, "" },
	{ "revision 3", "00 03 0000", { 0 }, NULL, 0, 0, 0, 0, 0, 0, "" },
	{ "PD_Length 600", "00 01 0258", { 0 }, NULL, 0, 0, 0, 0, 0, 0, "" },
	{ "revision 0 (siw: 00 00 0000)", "00 00 0000", { 0 }, NULL,
	  0, 0, 0, 0, 0, 0, "" },
};

static void run_row(const struct row *r)
{
	struct uiw_cm_event ev;
	uint8_t pd[64];
	struct lst l;
	struct end s;
	size_t n;
	int fd;

	print_message("%s: %s -> %s\n", r->what, r->req,
		      r->rep ? r->rep : "closed");
	lst_open(&l);
	fd = raw_connect(&l);
	raw_frame(fd, key_req, r->req);
	if (!r->rep) {
		cmu_raw_expect_closed(fd);
		close(fd);
		cmu_expect_no_event(l.ch);
		lst_close(&l);
		return;
	}
	end_open(&s, srv_dev, false);
	cmu_expect_event(l.ch, UIW_CM_EVENT_CONNECT_REQUEST, &ev);
	s.id = ev.id;
	assert_int_equal(ev.mpa.rev, r->rev);
	assert_int_equal(ev.mpa.enhanced, r->enh);
	assert_int_equal(ev.peer_ird, r->pird);
	assert_int_equal(ev.peer_ord, r->pord);
	assert_int_equal(ev.peer_p2p, r->p2p);
	assert_int_equal(ev.peer_rtr, r->rtr);
	n = unhex(pd, sizeof(pd), r->pd);
	assert_int_equal(ev.private_data_len, n);
	if (n)
		assert_memory_equal(ev.private_data, pd, n);
	if (uiw_cm_accept(s.id, s.qp, &r->sp))
		fail_msg("accept: %s", uiw_last_error());
	raw_expect_frame(fd, key_rep, r->rep);
	cmu_expect_event(l.ch, UIW_CM_EVENT_ESTABLISHED, &ev);
	/* RFC 5044 §7.1.2 rule 4: nothing before our first FPDU. */
	raw_quiet(fd);
	raw_hang_up(fd, &l, &s);
}

static void test_raw_siw_rows(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		run_row(&rows[i]);
}

/* siw as initiator with peer-to-peer on: its exact Request, then its
 * exact RTR (a zero-length Write to STag 1), with and without CRC.  We
 * accept it without a trace: our own first FPDU follows, the receive
 * posted before takes the initiator's first Send, no other completion. */
static void raw_siw_initiator(bool crc)
{
	static const uint8_t rtr_crc[20] = {
		0x00, 0x0e, 0xc1, 0x40, 0x00, 0x00, 0x00, 0x01,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0xeb, 0xd3, 0x4c, 0x5f,
	};
	struct uiw_conn_param sp = { .crc = crc ? UIW_OPT_DEFAULT
						: UIW_OPT_OFF };
	struct uiw_cm_event ev;
	struct rstream rs = { .crc = crc };
	struct wstream ws = { .crc = crc };
	uint8_t rtr[20], u[256];
	uint16_t ulen;
	struct lst l;
	struct end s;
	int fd;

	lst_open(&l);
	end_open(&s, srv_dev, false);
	fd = raw_connect(&l);
	rs.fd = ws.fd = fd;
	raw_frame(fd, key_req, crc ? "50 02 0004 8001 c001" :
				     "10 02 0004 8001 c001");
	cmu_expect_event(l.ch, UIW_CM_EVENT_CONNECT_REQUEST, &ev);
	s.id = ev.id;
	assert_int_equal(ev.peer_p2p, 1);
	assert_int_equal(ev.peer_rtr, UIW_RTR_WRITE | UIW_RTR_READ);
	assert_int_equal(ev.peer_ird, 1);
	assert_int_equal(ev.peer_ord, 1);
	post_recv(&s, 5, 0, 64);
	fill(s.buf + 100, 40, 4);
	post_wr(&s, 6, UIW_WR_SEND, 100, 40, 0, 0);
	assert_int_equal(uiw_cm_accept(s.id, s.qp, &sp), 0);
	/* IRD 32 (ours), ORD 1 (its IRD); both offered types accepted. */
	raw_expect_frame(fd, key_rep, crc ? "50 02 0004 8020 c001" :
					    "10 02 0004 8020 c001");
	cmu_expect_event(l.ch, UIW_CM_EVENT_ESTABLISHED, &ev);
	assert_int_equal(ev.p2p, 1);
	assert_int_equal(ev.rtr, UIW_RTR_WRITE | UIW_RTR_READ);
	raw_quiet(fd);
	memcpy(rtr, rtr_crc, sizeof(rtr));
	if (!crc)
		memset(rtr + 16, 0, 4);     /* siw sends zeroes, CRC off */
	cmu_raw_write(fd, rtr, sizeof(rtr));
	ws.pos = sizeof(rtr);
	/* Our Send comes, and only it. */
	ulen = rs_fpdu(&rs, u, sizeof(u));
	assert_int_equal(ulen, 18 + 40);
	assert_int_equal(u[1] & 0xf, UIW_OP_SEND);
	assert_memory_equal(u + 18, s.buf + 100, 40);
	expect_wc(s.cq, 6, UIW_WC_SUCCESS, 0);
	cq_empty(s.cq);
	/* Its first Send: MSN 1, into our receive. */
	ws_send_msg(&ws, 1, "after the RTR", 13);
	expect_wc(s.cq, 5, UIW_WC_SUCCESS, 13);
	assert_memory_equal(s.buf, "after the RTR", 13);
	cq_empty(s.cq);
	assert_int_equal(qp_attr(s.qp).state, UIW_QPS_RTS);
	assert_int_equal(qp_attr(s.qp).ord, 1);
	raw_hang_up(fd, &l, &s);
}

static void test_raw_siw_initiator_rtr(void **state)
{
	(void)state;
	raw_siw_initiator(true);
	raw_siw_initiator(false);
}

/* A raw initiator with a Read RTR and a Send RTR: the zero-length Read
 * Response comes back first; the Send RTR takes MSN 1. */
static void raw_initiator_rtr(uint8_t t)
{
	struct uiw_conn_param sp = { 0 };
	struct uiw_cm_event ev;
	struct rstream rs = { .crc = true };
	struct wstream ws = { .crc = true };
	struct uiw_ddp_hdr h;
	uint8_t u[256];
	uint16_t ulen;
	struct lst l;
	struct end s;
	int fd;

	lst_open(&l);
	end_open(&s, srv_dev, false);
	fd = raw_connect(&l);
	rs.fd = ws.fd = fd;
	raw_frame(fd, key_req, t == UIW_RTR_READ ? "50 02 0004 8004 4004" :
						   "50 02 0004 c004 0004");
	cmu_expect_event(l.ch, UIW_CM_EVENT_CONNECT_REQUEST, &ev);
	s.id = ev.id;
	post_recv(&s, 5, 0, 64);
	post_wr(&s, 6, UIW_WR_SEND, 100, 8, 0, 0);
	assert_int_equal(uiw_cm_accept(s.id, s.qp, &sp), 0);
	raw_expect_frame(fd, key_rep, t == UIW_RTR_READ ?
			 "50 02 0004 8020 4004" : "50 02 0004 c020 0004");
	cmu_expect_event(l.ch, UIW_CM_EVENT_ESTABLISHED, &ev);
	raw_quiet(fd);
	if (t == UIW_RTR_READ) {
		uint8_t rr[28] = { 0, 0, 0, 7 };   /* sink STag 7, size 0 */

		hdr(&h, false, UIW_OP_READ_REQ);
		h.qn = UIW_QN_READ_REQ;
		h.msn = 1;
		ws_send(&ws, &h, rr, sizeof(rr));
		/* The zero-length Response to sink STag 7 first. */
		ulen = rs_fpdu(&rs, u, sizeof(u));
		assert_int_equal(ulen, 14);
		assert_memory_equal(u, "\xc1\x42\0\0\0\x07\0\0\0\0\0\0\0\0",
				    14);
	} else {
		ws_send_msg(&ws, 1, "", 0);
	}
	ulen = rs_fpdu(&rs, u, sizeof(u));
	assert_int_equal(ulen, 18 + 8);
	assert_int_equal(u[1] & 0xf, UIW_OP_SEND);
	expect_wc(s.cq, 6, UIW_WC_SUCCESS, 0);
	cq_empty(s.cq);
	/* After a Send RTR the next Send is MSN 2. */
	ws_send_msg(&ws, t == UIW_RTR_SEND ? 2 : 1, "data", 4);
	expect_wc(s.cq, 5, UIW_WC_SUCCESS, 4);
	cq_empty(s.cq);
	raw_hang_up(fd, &l, &s);
}

static void test_raw_initiator_read_send_rtr(void **state)
{
	(void)state;
	raw_initiator_rtr(UIW_RTR_READ);
	raw_initiator_rtr(UIW_RTR_SEND);
}

/* The raw initiator's first FPDU is its data, not the RTR agreed on:
 * our Terminate 2/0/7 comes back, the receive is flushed. */
static void test_raw_initiator_wrong_first_fpdu(void **state)
{
	struct uiw_conn_param sp = { .rtr = UIW_RTR_WRITE };
	struct uiw_cm_event ev;
	struct rstream rs = { .crc = true };
	struct wstream ws = { .crc = true };
	struct uiw_qp_attr a;
	uint8_t u[256];
	uint16_t ulen;
	struct lst l;
	struct end s;
	int fd;

	(void)state;
	lst_open(&l);
	end_open(&s, srv_dev, false);
	fd = raw_connect(&l);
	rs.fd = ws.fd = fd;
	raw_frame(fd, key_req, "50 02 0004 8004 c004");
	cmu_expect_event(l.ch, UIW_CM_EVENT_CONNECT_REQUEST, &ev);
	s.id = ev.id;
	post_recv(&s, 5, 0, 64);
	post_wr(&s, 6, UIW_WR_SEND, 100, 8, 0, 0);
	assert_int_equal(uiw_cm_accept(s.id, s.qp, &sp), 0);
	raw_expect_frame(fd, key_rep, "50 02 0004 8020 8004");
	cmu_expect_event(l.ch, UIW_CM_EVENT_ESTABLISHED, &ev);
	ws_send_msg(&ws, 1, "too soon", 8);
	ulen = rs_fpdu(&rs, u, sizeof(u));
	assert_int_equal(term_of(u, ulen), UIW_E_MPA_NO_MATCHING_RTR);
	cmu_raw_expect_closed(fd);
	close(fd);
	cmu_expect_event(l.ch, UIW_CM_EVENT_DISCONNECTED, &ev);
	a = qp_attr(s.qp);
	assert_int_equal(a.term.origin, UIW_TERM_LOCAL);
	assert_int_equal(a.term.ecode, 7);
	/* Nothing was placed; both work requests flushed. */
	expect_wc(s.cq, 6, UIW_WC_WR_FLUSH_ERR, 0);
	expect_wc(s.cq, 5, UIW_WC_WR_FLUSH_ERR, 0);
	assert_int_not_equal(memcmp(s.buf, "too soon", 8), 0);
	end_close(&s);
	lst_close(&l);
}

/* ---- A raw responder ---------------------------------------------------- */

struct rawsrv {
	int lfd, fd;
	struct sockaddr_storage addr;
	socklen_t len;
	struct end c;
};

/* Our client connects with cp; the raw listener takes the Request,
 * which must be exactly req (hex after the key). */
static void rawsrv_start(struct rawsrv *r, const struct uiw_conn_param *cp,
			 const char *req)
{
	r->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(r->lfd >= 0);
	assert_int_equal(uiw_resolve("127.0.0.1", "0", 1, &r->addr, &r->len),
			 0);
	assert_int_equal(bind(r->lfd, (struct sockaddr *)&r->addr, r->len),
			 0);
	assert_int_equal(listen(r->lfd, 2), 0);
	assert_int_equal(getsockname(r->lfd, (struct sockaddr *)&r->addr,
				     &r->len), 0);
	end_open(&r->c, cli_dev, true);
	assert_int_equal(uiw_cm_connect(r->c.ch, r->c.qp,
					(struct sockaddr *)&r->addr, r->len,
					cp, &r->c.id), 0);
	r->fd = accept4(r->lfd, NULL, NULL, SOCK_CLOEXEC);
	assert_true(r->fd >= 0);
	raw_timeouts(r->fd);
	raw_expect_frame(r->fd, key_req, req);
}

/* Our client gives up first (no event follows). */
static void rawsrv_abort(struct rawsrv *r)
{
	assert_int_equal(uiw_cm_destroy_id(r->c.id), 0);
	r->c.id = NULL;
	cmu_raw_expect_closed(r->fd);
}

static void rawsrv_stop(struct rawsrv *r)
{
	close(r->fd);
	close(r->lfd);
	cmu_expect_no_event(r->c.ch);
	end_close(&r->c);
}

/* Our Request, byte for byte: revision 2, S, IRD/ORD, our data. */
static void test_raw_responder_request_bytes(void **state)
{
	struct uiw_conn_param cp = { .ird = 1, .ord = 1,
				     .private_data = "hi",
				     .private_data_len = 2 };
	struct rawsrv r;

	(void)state;
	rawsrv_start(&r, &cp, "50 02 0006 0001 0001 6869");
	rawsrv_abort(&r);
	rawsrv_stop(&r);
	/* siw's peer-to-peer Request, made by us. */
	memset(&cp, 0, sizeof(cp));
	cp.ird = cp.ord = 1;
	cp.crc = UIW_OPT_OFF;
	cp.p2p = UIW_OPT_ON;
	cp.rtr = UIW_RTR_WRITE | UIW_RTR_READ;
	rawsrv_start(&r, &cp, "10 02 0004 8001 c001");
	rawsrv_abort(&r);
	rawsrv_stop(&r);
	cp.rtr = 0;
	cp.ird = 4;
	cp.ord = UIW_IRD_ORD_MANUAL;
	rawsrv_start(&r, &cp, "10 02 0004 c004 ffff");
	rawsrv_abort(&r);
	rawsrv_stop(&r);
	cp.mpa_rev = 1;
	cp.p2p = UIW_OPT_DEFAULT;
	cp.ord = 2;
	rawsrv_start(&r, &cp, "00 01 0000");
	rawsrv_abort(&r);
	rawsrv_stop(&r);
}

/* Replies our client refuses (closes, CONNECT_ERROR -EPROTO). */
static void test_raw_responder_bad_replies(void **state)
{
	static const struct {
		const char *rep;
		bool p2p;
	} v[] = {
		{ "10 03 0004 0001 0001", false },  /* higher revision */
		{ "00 02 0000", false },            /* rev 2 without S */
		{ "10 02 0002 0001", false },       /* S, no room */
		{ "10 02 0004 8001 8001", false },  /* A not asked for */
		{ "10 02 0004 0001 0001", true },   /* A not echoed */
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		struct uiw_conn_param cp = { .ird = 1, .ord = 1,
					     .crc = UIW_OPT_OFF };
		struct uiw_cm_event ev;
		struct rawsrv r;

		print_message("reply %s\n", v[i].rep);
		if (v[i].p2p)
			cp.p2p = UIW_OPT_ON;
		rawsrv_start(&r, &cp, v[i].p2p ? "10 02 0004 c001 c001" :
						  "10 02 0004 0001 0001");
		raw_frame(r.fd, key_rep, v[i].rep);
		cmu_expect_event(r.c.ch, UIW_CM_EVENT_CONNECT_ERROR, &ev);
		assert_int_equal(ev.status, -EPROTO);
		cmu_raw_expect_closed(r.fd);
		assert_int_equal(qp_attr(r.c.qp).state, UIW_QPS_IDLE);
		rawsrv_stop(&r);
	}
}

/* A revision 1 Reply to our revision 2 Request: accepted, unenhanced
 * (RFC 6581 §10: the ULP deals with IRD/ORD and peer-to-peer). */
static void test_raw_responder_rev1_reply(void **state)
{
	struct uiw_conn_param cp = { .ird = 3, .ord = 2, .crc = UIW_OPT_OFF,
				     .p2p = UIW_OPT_ON };
	struct uiw_cm_event ev;
	struct rawsrv r;

	(void)state;
	rawsrv_start(&r, &cp, "10 02 0004 c003 c002");
	raw_frame(r.fd, key_rep, "00 01 0002 6f6b");
	cmu_expect_event(r.c.ch, UIW_CM_EVENT_ESTABLISHED, &ev);
	assert_int_equal(ev.mpa.rev, 1);
	assert_int_equal(ev.mpa.enhanced, 0);
	assert_int_equal(ev.p2p, 0);
	assert_int_equal(ev.rtr, 0);
	assert_int_equal(ev.private_data_len, 2);
	assert_memory_equal(ev.private_data, "ok", 2);
	assert_int_equal(ev.ird, 3);
	assert_int_equal(ev.ord, 2);
	assert_int_equal(qp_attr(r.c.qp).ird, 3);
	/* No RTR: nothing is sent before the ULP sends. */
	raw_quiet(r.fd);
	close(r.fd);
	r.fd = -1;
	cmu_expect_event(r.c.ch, UIW_CM_EVENT_DISCONNECTED, &ev);
	rawsrv_stop(&r);
}

/* The raw responder's Reply leaves our client unable to go on: the
 * Terminate of RFC 6581 is our only FPDU, then we close. */
static void raw_reply_terminates(const struct uiw_conn_param *cp,
				 const char *req, const char *rep,
				 bool markers, bool crc, uiw_err_t want,
				 int status)
{
	struct uiw_cm_event ev;
	struct rstream rs = { .markers = markers, .crc = crc };
	uint8_t u[128];
	uint16_t ulen;
	struct rawsrv r;

	print_message("%s -> %s\n", req, rep);
	rawsrv_start(&r, cp, req);
	rs.fd = r.fd;
	raw_frame(r.fd, key_rep, rep);
	ulen = rs_fpdu(&rs, u, sizeof(u));
	assert_int_equal(ulen, 18 + 4);
	assert_int_equal(term_of(u, ulen), want);
	cmu_raw_expect_closed(r.fd);
	cmu_expect_event(r.c.ch, UIW_CM_EVENT_CONNECT_ERROR, &ev);
	assert_int_equal(ev.status, status);
	assert_int_equal(ev.mpa.enhanced, 1);
	assert_int_equal(qp_attr(r.c.qp).state, UIW_QPS_IDLE);
	rawsrv_stop(&r);
}

static void test_raw_responder_terminates(void **state)
{
	struct uiw_conn_param cp = { .ird = 4, .ord = 4 };

	(void)state;
	/* The responder's ORD beyond any IRD we can give: 2/0/6. */
	raw_reply_terminates(&cp, "50 02 0004 0004 0004",
			     "50 02 0004 0004 0200", false, true,
			     UIW_E_MPA_INSUFFICIENT_IRD, -ENOBUFS);
	/* Strict: beyond our IRD of 4; markers towards the peer, no CRC. */
	cp.rd_strict = 1;
	cp.crc = UIW_OPT_OFF;
	raw_reply_terminates(&cp, "10 02 0004 0004 0004",
			     "90 02 0004 0004 0005", true, false,
			     UIW_E_MPA_INSUFFICIENT_IRD, -ENOBUFS);
	/* We offer a Send RTR only; the responder names Write: 2/0/7.
	 * (The Terminate that crashes siw 6.1, SIW-FACTS.md.) */
	memset(&cp, 0, sizeof(cp));
	cp.ird = cp.ord = 1;
	cp.p2p = UIW_OPT_ON;
	cp.rtr = UIW_RTR_SEND;
	raw_reply_terminates(&cp, "50 02 0004 c001 0001",
			     "50 02 0004 8001 8001", false, true,
			     UIW_E_MPA_NO_MATCHING_RTR, -ENOPROTOOPT);
	/* A Read RTR with a responder IRD of 0 is impossible too. */
	cp.rtr = UIW_RTR_READ;
	raw_reply_terminates(&cp, "50 02 0004 8001 4001",
			     "10 02 0004 8000 4001", false, true,
			     UIW_E_MPA_NO_MATCHING_RTR, -ENOPROTOOPT);
}

/* siw writes "RDMAP, remote operation error, unexpected opcode" (its
 * answer to an RFC 7306 message) as "20 06 00 00", which the RFC layout
 * reads as 2/0/6, insufficient IRD.  Only the initiator of an enhanced
 * connection sends 2/0/6, as its first FPDU (RFC 6581 §9.1), so anywhere
 * else the siw reading is the plausible one. */
static void expect_remote_term(struct uiw_cq *cq, uint64_t wr_id,
			       uint8_t layer, uint8_t etype, uint8_t ecode)
{
	struct uiw_wc wc;

	cmu_wait_wc(cq, &wc);
	assert_int_equal(wc.wr_id, wr_id);
	assert_int_not_equal(wc.status, UIW_WC_SUCCESS);
	assert_int_equal(wc.term.origin, UIW_TERM_REMOTE);
	assert_int_equal(wc.term.layer, layer);
	assert_int_equal(wc.term.etype, etype);
	assert_int_equal(wc.term.ecode, ecode);
}

static void ws_term(struct wstream *w, const char *ctrl4)
{
	struct uiw_ddp_hdr h;

	hdr(&h, false, UIW_OP_TERMINATE);
	h.qn = UIW_QN_TERMINATE;
	h.msn = 1;
	ws_send(w, &h, ctrl4, 4);
}

/* A raw initiator: its enhanced Request, then (after our Reply) what
 * it sends first; the cause our receive reports. */
static void raw_initiator_term(bool send_first, const char *ctrl4,
			       uint8_t layer, uint8_t etype, uint8_t ecode)
{
	struct uiw_conn_param sp = { 0 };
	struct uiw_cm_event ev;
	struct wstream ws = { .crc = true };
	struct lst l;
	struct end s;
	int fd;

	lst_open(&l);
	end_open(&s, srv_dev, false);
	fd = raw_connect(&l);
	ws.fd = fd;
	raw_frame(fd, key_req, "50 02 0004 0004 0004");
	cmu_expect_event(l.ch, UIW_CM_EVENT_CONNECT_REQUEST, &ev);
	s.id = ev.id;
	post_recv(&s, 5, 0, 64);
	post_recv(&s, 6, 64, 64);
	assert_int_equal(uiw_cm_accept(s.id, s.qp, &sp), 0);
	raw_expect_frame(fd, key_rep, "50 02 0004 0020 0004");
	cmu_expect_event(l.ch, UIW_CM_EVENT_ESTABLISHED, &ev);
	if (send_first) {
		ws_send_msg(&ws, 1, "first", 5);
		expect_wc(s.cq, 5, UIW_WC_SUCCESS, 5);
	}
	ws_term(&ws, ctrl4);
	expect_remote_term(s.cq, send_first ? 6 : 5, layer, etype, ecode);
	cmu_raw_expect_closed(fd);
	raw_hang_up(fd, &l, &s);
}

static void test_siw_layout_setup_codes(void **state)
{
	struct uiw_conn_param cp = { .ird = 4, .ord = 4 };
	struct uiw_cm_event ev;
	struct wstream ws = { .crc = true };
	struct rawsrv r;

	(void)state;
	/* We are the initiator: "20 06" from the responder is siw's. */
	rawsrv_start(&r, &cp, "50 02 0004 0004 0004");
	ws.fd = r.fd;
	raw_frame(r.fd, key_rep, "50 02 0004 0004 0004");
	cmu_expect_event(r.c.ch, UIW_CM_EVENT_ESTABLISHED, &ev);
	post_recv(&r.c, 7, 0, 64);
	ws_term(&ws, "\x20\x06\0\0");
	expect_remote_term(r.c.cq, 7, 0, 2, 0x06);
	cmu_raw_expect_closed(r.fd);
	cmu_expect_event(r.c.ch, UIW_CM_EVENT_DISCONNECTED, &ev);
	rawsrv_stop(&r);
	/* We are the responder: as the initiator's first FPDU it is the
	 * RFC's 2/0/6 (and 2/0/7); after a message, siw's reading. */
	raw_initiator_term(false, "\x20\x06\0\0", 2, 0, 0x06);
	raw_initiator_term(false, "\x20\x07\0\0", 2, 0, 0x07);
	raw_initiator_term(true, "\x20\x06\0\0", 0, 2, 0x06);
	raw_initiator_term(true, "\x20\x07\0\0", 0, 2, 0x07);
}

static double mono_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* start_delay_ms: after the accepting Reply our first FPDU (a posted
 * Send, or the RTR in peer-to-peer mode) and ESTABLISHED wait that long;
 * the data then flows as usual. */
static void start_delay(bool p2p)
{
	struct uiw_conn_param cp = { .ird = 1, .ord = 1, .start_delay_ms = 150,
				     .p2p = p2p ? UIW_OPT_ON : UIW_OPT_DEFAULT,
				     .rtr = p2p ? UIW_RTR_WRITE : 0 };
	struct uiw_cm_event ev;
	struct rstream rs = { .crc = true };
	uint8_t u[128];
	uint16_t ulen;
	struct rawsrv r;
	double t0, t1;

	rawsrv_start(&r, &cp, p2p ? "50 02 0004 8001 8001" :
				     "50 02 0004 0001 0001");
	rs.fd = r.fd;
	fill(r.c.buf + 100, 8, 3);
	post_wr(&r.c, 9, UIW_WR_SEND, 100, 8, 0, 0);
	t0 = mono_ms();
	raw_frame(r.fd, key_rep, p2p ? "50 02 0004 8001 8001" :
				       "50 02 0004 0001 0001");
	if (p2p) {
		/* The Write RTR (STag 1, as siw) first. */
		ulen = rs_fpdu(&rs, u, sizeof(u));
		t1 = mono_ms();
		assert_int_equal(ulen, 14);
		assert_int_equal(u[1] & 0xf, UIW_OP_WRITE);
	}
	ulen = rs_fpdu(&rs, u, sizeof(u));
	if (!p2p)
		t1 = mono_ms();
	assert_int_equal(ulen, 18 + 8);
	assert_int_equal(u[1] & 0xf, UIW_OP_SEND);
	assert_memory_equal(u + 18, r.c.buf + 100, 8);
	if (t1 - t0 < 150)
		fail_msg("first FPDU %.1f ms after the Reply, expected >= 150",
			 t1 - t0);
	cmu_expect_event(r.c.ch, UIW_CM_EVENT_ESTABLISHED, &ev);
	expect_wc(r.c.cq, 9, UIW_WC_SUCCESS, 0);
	close(r.fd);
	r.fd = -1;
	cmu_expect_event(r.c.ch, UIW_CM_EVENT_DISCONNECTED, &ev);
	rawsrv_stop(&r);
}

static void test_start_delay(void **state)
{
	struct uiw_conn_param cp = { .start_delay_ms = UIW_START_DELAY_MAX_MS + 1 };
	struct uiw_cm_event ev;
	struct uiw_cm_id *id;
	struct lst l;
	struct end c, s;

	(void)state;
	start_delay(false);
	start_delay(true);
	/* Beyond the maximum; and on a responder, where it means nothing. */
	lst_open(&l);
	end_open(&c, cli_dev, true);
	end_open(&s, srv_dev, false);
	assert_int_equal(uiw_cm_connect(c.ch, c.qp, (struct sockaddr *)&l.addr,
					l.len, &cp, &id), -EINVAL);
	assert_non_null(strstr(uiw_last_error(), "start_delay_ms"));
	cp.start_delay_ms = 100;
	assert_int_equal(uiw_cm_connect(c.ch, c.qp, (struct sockaddr *)&l.addr,
					l.len, NULL, &c.id), 0);
	cmu_expect_event(l.ch, UIW_CM_EVENT_CONNECT_REQUEST, &ev);
	s.id = ev.id;
	assert_int_equal(uiw_cm_accept(s.id, s.qp, &cp), -EINVAL);
	assert_non_null(strstr(uiw_last_error(), "initiator"));
	cp.start_delay_ms = 0;
	assert_int_equal(uiw_cm_accept(s.id, s.qp, &cp), 0);
	cmu_expect_event(c.ch, UIW_CM_EVENT_ESTABLISHED, &ev);
	cmu_expect_event(l.ch, UIW_CM_EVENT_ESTABLISHED, &ev);
	end_close(&c);
	end_close(&s);
	lst_close(&l);
}

/* Our Write RTR through a raw responder: after the Reply the first FPDU
 * is siw's RTR octet for octet, then our Send. */
static void test_raw_responder_sees_rtr(void **state)
{
	struct uiw_conn_param cp = { .ird = 1, .ord = 1, .p2p = UIW_OPT_ON };
	struct uiw_cm_event ev;
	uint8_t b[20], u[128];
	struct rstream rs = { .crc = true, .pos = 20 };
	struct rawsrv r;

	(void)state;
	rawsrv_start(&r, &cp, "50 02 0004 c001 c001");
	rs.fd = r.fd;
	fill(r.c.buf, 16, 1);
	post_wr(&r.c, 1, UIW_WR_SEND, 0, 16, 0, 0);
	raw_frame(r.fd, key_rep, "50 02 0004 8001 c001");
	cmu_expect_event(r.c.ch, UIW_CM_EVENT_ESTABLISHED, &ev);
	assert_int_equal(ev.rtr, UIW_RTR_WRITE);
	cmu_raw_read(r.fd, b, sizeof(b));
	assert_memory_equal(b, "\x00\x0e\xc1\x40\0\0\0\x01\0\0\0\0\0\0\0\0"
			    "\xeb\xd3\x4c\x5f", 20);
	assert_int_equal(rs_fpdu(&rs, u, sizeof(u)), 18 + 16);
	/* MSN 1: the Write RTR took no MSN. */
	assert_memory_equal(u + 10, "\0\0\0\x01", 4);
	assert_memory_equal(u + 18, r.c.buf, 16);
	expect_wc(r.c.cq, 1, UIW_WC_SUCCESS, 0);
	close(r.fd);
	r.fd = -1;
	cmu_expect_event(r.c.ch, UIW_CM_EVENT_DISCONNECTED, &ev);
	rawsrv_stop(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_v2_default_negotiation),
		cmocka_unit_test(test_v2_defaults_pd_max),
		cmocka_unit_test(test_rev1_client_rev2_listener),
		cmocka_unit_test(test_rev2_client_rev1_listener),
		cmocka_unit_test(test_v2_manual_ird_ord),
		cmocka_unit_test(test_p2p_each_rtr),
		cmocka_unit_test(test_p2p_no_matching_rtr),
		cmocka_unit_test(test_strict_responder_rejects),
		cmocka_unit_test(test_api),
		cmocka_unit_test(test_raw_siw_rows),
		cmocka_unit_test(test_raw_siw_initiator_rtr),
		cmocka_unit_test(test_raw_initiator_read_send_rtr),
		cmocka_unit_test(test_raw_initiator_wrong_first_fpdu),
		cmocka_unit_test(test_raw_responder_request_bytes),
		cmocka_unit_test(test_raw_responder_bad_replies),
		cmocka_unit_test(test_raw_responder_rev1_reply),
		cmocka_unit_test(test_raw_responder_terminates),
		cmocka_unit_test(test_raw_responder_sees_rtr),
		cmocka_unit_test(test_siw_layout_setup_codes),
		cmocka_unit_test(test_start_delay),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
