/*
 * Connection manager over 127.0.0.1 and ::1: connect, accept, reject and
 * disconnect with private data; the MPA negotiation of CRC and markers
 * (RFC 5044 §7.1); and a raw TCP peer, written with plain sockets here,
 * that sends malformed or ill-timed startup frames to check that the CM
 * refuses them, reports them and closes the socket.  MPA revision 2
 * (RFC 6581) is the default; the raw-peer cases here speak revision 1
 * and pin it (test_mpa_v2.c has revision 2, peer-to-peer and RTR).
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <uiwarp/uiwarp.h>

#include "cm/cm_internal.h"
#include "cm_util.h"

#include "wire/mpa.h"

#define WAIT_MS      15000     /* generous bound for any single event */
#define SHORT_MS     200       /* startup timeouts under test */
#define BUF_LEN      CMU_BUF_LEN

static const uint8_t key_req[16] = "MPA ID Req Frame";
static const uint8_t key_rep[16] = "MPA ID Rep Frame";

/* Two devices (two progress threads), shared by every test. */
static struct uiw_device *cli_dev, *srv_dev;

/* ---- Events ------------------------------------------------------- */

/* ---- One end of a connection -------------------------------------- */

static int qp_state(struct uiw_qp *qp)
{
	struct uiw_qp_attr a;

	assert_int_equal(uiw_qp_query(qp, &a), 0);
	return (int)a.state;
}

static void post_recv(struct cmu_end *e, uint64_t wr_id, size_t off, size_t len)
{
	struct uiw_sge sge = {
		.addr = (uintptr_t)(e->buf + off),
		.length = (uint32_t)len,
		.lkey = e->mr->lkey,
	};
	struct uiw_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge,
				  .num_sge = 1 };

	assert_int_equal(uiw_post_recv(e->qp, &wr, NULL), 0);
}

static void post_send(struct cmu_end *e, uint64_t wr_id, size_t off, size_t len)
{
	struct uiw_sge sge = {
		.addr = (uintptr_t)(e->buf + off),
		.length = (uint32_t)len,
		.lkey = e->mr->lkey,
	};
	struct uiw_send_wr wr = {
		.wr_id = wr_id, .sg_list = &sge, .num_sge = 1,
		.opcode = UIW_WR_SEND, .send_flags = UIW_SEND_SIGNALED,
	};

	assert_int_equal(uiw_post_send(e->qp, &wr, NULL), 0);
}

/* A Send of len octets from a to b, checked octet by octet. */
static void send_across(struct cmu_end *a, struct cmu_end *b, size_t len,
			uint8_t seed)
{
	struct uiw_wc wc;
	size_t i;

	for (i = 0; i < len; i++)
		a->buf[i] = (uint8_t)(seed + i * 7 + (i >> 8));
	memset(b->buf, 0, len + 1);
	post_recv(b, 100 + seed, 0, len);
	post_send(a, 200 + seed, 0, len);
	cmu_wait_wc(a->cq, &wc);
	assert_int_equal(wc.status, UIW_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 200 + seed);
	cmu_wait_wc(b->cq, &wc);
	assert_int_equal(wc.status, UIW_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 100 + seed);
	assert_int_equal(wc.opcode, UIW_WC_RECV);
	assert_int_equal(wc.byte_len, len);
	assert_memory_equal(a->buf, b->buf, len);
}

/* ---- Listener ------------------------------------------------------ */

struct lst {
	struct uiw_cm_channel *ch;
	struct uiw_cm_id *id;
	struct sockaddr_storage addr;   /* where it listens */
	socklen_t len;
};

static void lst_open(struct lst *l, int family, int backlog)
{
	struct sockaddr_storage ss;
	socklen_t len;

	memset(l, 0, sizeof(*l));
	l->ch = uiw_cm_channel_create(srv_dev);
	assert_non_null(l->ch);
	assert_int_equal(uiw_resolve(family == AF_INET6 ? "::1" : "127.0.0.1",
				     "0", 1, &ss, &len), 0);
	assert_int_equal(ss.ss_family, family);
	if (uiw_cm_listen(l->ch, (struct sockaddr *)&ss, len, backlog,
			  &l->id) != 0)
		fail_msg("listen: %s", uiw_last_error());
	assert_int_equal(uiw_cm_local_addr(l->id, &l->addr), 0);
	assert_int_equal(l->addr.ss_family, family);
	l->len = family == AF_INET6 ? sizeof(struct sockaddr_in6) :
				      sizeof(struct sockaddr_in);
	/* Port 0 was replaced by the one the system chose. */
	assert_int_not_equal(family == AF_INET6 ?
			     ((struct sockaddr_in6 *)&l->addr)->sin6_port :
			     ((struct sockaddr_in *)&l->addr)->sin_port, 0);
}

static void lst_close(struct lst *l)
{
	assert_int_equal(uiw_cm_destroy_id(l->id), 0);
	cmu_expect_no_event(l->ch);
	assert_int_equal(uiw_cm_channel_destroy(l->ch), 0);
}

static uint16_t sa_port(const struct sockaddr_storage *ss)
{
	return ntohs(ss->ss_family == AF_INET6 ?
		     ((const struct sockaddr_in6 *)ss)->sin6_port :
		     ((const struct sockaddr_in *)ss)->sin_port);
}

/* ---- Raw TCP peer -------------------------------------------------- */

static void raw_timeouts(int fd)
{
	struct timeval tv = { .tv_sec = WAIT_MS / 1000 };

	assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv,
				    sizeof(tv)), 0);
	assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv,
				    sizeof(tv)), 0);
}

static int raw_connect(const struct sockaddr_storage *ss, socklen_t len)
{
	int fd = socket(ss->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	raw_timeouts(fd);
	assert_int_equal(connect(fd, (const struct sockaddr *)ss, len), 0);
	return fd;
}

/* A plain listening socket on the loopback address of family. */
static int raw_listen(int family, struct sockaddr_storage *ss,
		      socklen_t *len)
{
	int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	assert_int_equal(uiw_resolve(family == AF_INET6 ? "::1" : "127.0.0.1",
				     "0", 1, ss, len), 0);
	assert_int_equal(bind(fd, (struct sockaddr *)ss, *len), 0);
	assert_int_equal(listen(fd, 4), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)ss, len), 0);
	return fd;
}

static int raw_accept(int lfd)
{
	int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);

	assert_true(fd >= 0);
	raw_timeouts(fd);
	return fd;
}

/* Builds a frame; pd_len_field may lie about pd_bytes. */
static size_t frame(uint8_t *out, const uint8_t key[16], uint8_t flags,
		    uint8_t rev, uint16_t pd_len_field, const void *pd,
		    size_t pd_bytes)
{
	memcpy(out, key, 16);
	out[16] = flags;
	out[17] = rev;
	out[18] = (uint8_t)(pd_len_field >> 8);
	out[19] = (uint8_t)pd_len_field;
	if (pd_bytes)
		memcpy(out + 20, pd, pd_bytes);
	return 20 + pd_bytes;
}

/* Reads one MPA frame: returns its flags, rev and private data. */
static void raw_read_frame(int fd, const uint8_t key[16], uint8_t *flags,
			   uint8_t *rev, uint8_t *pd, uint16_t *pd_len)
{
	uint8_t h[20];

	cmu_raw_read(fd, h, sizeof(h));
	assert_memory_equal(h, key, 16);
	*flags = h[16];
	*rev = h[17];
	*pd_len = (uint16_t)(h[18] << 8 | h[19]);
	assert_true(*pd_len <= 512);
	cmu_raw_read(fd, pd, *pd_len);
}

/* ---- Fixtures ------------------------------------------------------ */

static int group_setup(void **state)
{
	cli_dev = uiw_device_open("cmcli");
	srv_dev = uiw_device_open("cmsrv");
	if (!cli_dev || !srv_dev) {
		fprintf(stderr, "uiw_device_open: %s\n", uiw_last_error());
		return -1;
	}
	return 0;
}

static int group_teardown(void **state)
{
	int a = uiw_device_close(cli_dev), b = uiw_device_close(srv_dev);

	if (a || b)
		fprintf(stderr, "uiw_device_close: %s\n", uiw_last_error());
	return a || b ? -1 : 0;
}

/* ---- Connect / accept ---------------------------------------------- */

struct conn {
	struct lst l;
	struct cmu_end c, s;
	struct uiw_cm_event creq;     /* the server's CONNECT_REQUEST */
	struct uiw_cm_event cest;     /* the client's ESTABLISHED */
	uint8_t req_pd[512], rep_pd[512];
	uint16_t req_pd_len, rep_pd_len;
};

/* Connects c to s through a new listener of family; checks the events
 * and the private data both ways. */
static void conn_up(struct conn *k, int family,
		    const struct uiw_conn_param *cp,
		    const struct uiw_conn_param *sp)
{
	struct uiw_cm_event ev;
	int rev = cp->mpa_rev == 1 ? 1 : 2;

	lst_open(&k->l, family, 8);
	cmu_end_open(&k->c, cli_dev, true);
	cmu_end_open(&k->s, srv_dev, false);
	assert_int_equal(uiw_cm_connect(k->c.ch, k->c.qp,
					(struct sockaddr *)&k->l.addr,
					k->l.len, cp, &k->c.id), 0);
	assert_ptr_equal(uiw_cm_id_qp(k->c.id), k->c.qp);

	cmu_expect_event(k->l.ch, UIW_CM_EVENT_CONNECT_REQUEST, &k->creq);
	assert_ptr_equal(k->creq.listen_id, k->l.id);
	assert_non_null(k->creq.id);
	assert_ptr_not_equal(k->creq.id, k->l.id);
	assert_int_equal(k->creq.llp, UIW_LLP_TCP);
	/* Revision 2 (RFC 6581) unless revision 1 was asked for; only
	 * revision 2 carries IRD and ORD. */
	assert_int_equal(k->creq.mpa.rev, rev);
	assert_int_equal(k->creq.mpa.enhanced, rev == 2);
	if (rev == 1) {
		assert_int_equal(k->creq.peer_ird, 0);
		assert_int_equal(k->creq.peer_ord, 0);
	} else {
		assert_true(k->creq.peer_ird > 0);
		assert_true(k->creq.peer_ord > 0);
	}
	assert_int_equal(k->creq.private_data_len, cp->private_data_len);
	if (cp->private_data_len)
		assert_memory_equal(k->creq.private_data, cp->private_data,
				    cp->private_data_len);
	k->s.id = k->creq.id;
	/* The responder's QP stays Idle until it accepts. */
	assert_int_equal(qp_state(k->s.qp), UIW_QPS_IDLE);
	assert_int_equal(uiw_cm_accept(k->s.id, k->s.qp, sp), 0);
	assert_ptr_equal(uiw_cm_id_qp(k->s.id), k->s.qp);

	cmu_expect_event(k->c.ch, UIW_CM_EVENT_ESTABLISHED, &k->cest);
	assert_ptr_equal(k->cest.id, k->c.id);
	assert_int_equal(k->cest.status, 0);
	assert_int_equal(k->cest.llp, UIW_LLP_TCP);
	assert_int_equal(k->cest.mpa.rev, rev);
	assert_int_equal(k->cest.mpa.enhanced, rev == 2);
	assert_int_equal(k->cest.private_data_len, sp->private_data_len);
	if (sp->private_data_len)
		assert_memory_equal(k->cest.private_data, sp->private_data,
				    sp->private_data_len);
	cmu_expect_event(k->l.ch, UIW_CM_EVENT_ESTABLISHED, &ev);
	assert_ptr_equal(ev.id, k->s.id);
	assert_int_equal(qp_state(k->c.qp), UIW_QPS_RTS);
	assert_int_equal(qp_state(k->s.qp), UIW_QPS_RTS);
}

static void conn_down(struct conn *k)
{
	cmu_end_close(&k->c);
	cmu_end_close(&k->s);
	lst_close(&k->l);
}

/* Graceful disconnect from one side: DISCONNECTED on both, QPs out of
 * RTS, and receives still posted are flushed. */
static void disconnect_from(struct conn *k, bool client)
{
	struct cmu_end *a = client ? &k->c : &k->s, *b = client ? &k->s : &k->c;
	struct uiw_cm_channel *ach = client ? k->c.ch : k->l.ch;
	struct uiw_cm_channel *bch = client ? k->l.ch : k->c.ch;
	struct uiw_cm_event ev;
	struct uiw_wc wc;

	post_recv(a, 900, 0, 64);
	post_recv(b, 901, 0, 64);
	assert_int_equal(uiw_cm_disconnect(a->id), 0);
	cmu_expect_event(ach, UIW_CM_EVENT_DISCONNECTED, &ev);
	assert_ptr_equal(ev.id, a->id);
	cmu_expect_event(bch, UIW_CM_EVENT_DISCONNECTED, &ev);
	assert_ptr_equal(ev.id, b->id);
	assert_int_not_equal(qp_state(a->qp), UIW_QPS_RTS);
	assert_int_not_equal(qp_state(b->qp), UIW_QPS_RTS);
	cmu_wait_wc(a->cq, &wc);
	assert_int_equal(wc.wr_id, 900);
	assert_int_equal(wc.status, UIW_WC_WR_FLUSH_ERR);
	cmu_wait_wc(b->cq, &wc);
	assert_int_equal(wc.wr_id, 901);
	assert_int_equal(wc.status, UIW_WC_WR_FLUSH_ERR);
	/* A second disconnect is harmless; nothing more is raised. */
	assert_int_equal(uiw_cm_disconnect(a->id), 0);
	cmu_expect_no_event(ach);
	cmu_expect_no_event(bch);
}

static void connect_accept(int family)
{
	static const char cpd[] = "client's private data";
	static const char spd[] = "the server's answer";
	struct uiw_conn_param cp = { .private_data = cpd,
				     .private_data_len = sizeof(cpd) };
	struct uiw_conn_param sp = { .private_data = spd,
				     .private_data_len = sizeof(spd) };
	struct sockaddr_storage a, b;
	struct conn k;

	conn_up(&k, family, &cp, &sp);
	/* Defaults: CRC asked by both, no markers. */
	assert_int_equal(k.creq.mpa.peer_crc, 1);
	assert_int_equal(k.creq.mpa.peer_markers, 0);
	assert_int_equal(k.cest.mpa.peer_crc, 1);
	assert_int_equal(k.cest.mpa.peer_markers, 0);
	/* Each end's peer is the other's local address. */
	assert_int_equal(uiw_cm_local_addr(k.c.id, &a), 0);
	assert_int_equal(uiw_cm_peer_addr(k.s.id, &b), 0);
	assert_int_equal(a.ss_family, family);
	assert_int_equal(sa_port(&a), sa_port(&b));
	assert_int_equal(uiw_cm_peer_addr(k.c.id, &a), 0);
	assert_int_equal(sa_port(&a), sa_port(&k.l.addr));
	uiw_cm_id_set_context(k.s.id, &k);
	assert_ptr_equal(uiw_cm_id_context(k.s.id), &k);

	send_across(&k.c, &k.s, 4096, 1);
	send_across(&k.s, &k.c, 100000 % BUF_LEN, 2);
	disconnect_from(&k, true);
	conn_down(&k);
}

static void test_connect_accept_ipv4(void **state)
{
	connect_accept(AF_INET);
}

static void test_connect_accept_ipv6(void **state)
{
	connect_accept(AF_INET6);
}

/* The largest private data, both ways, and a disconnect started by the
 * responder.  512 octets is revision 1's limit (RFC 5044 §7.1.1). */
static void test_private_data_max_and_server_disconnect(void **state)
{
	static uint8_t cpd[512], spd[512];
	struct uiw_conn_param cp = { .private_data = cpd,
				     .private_data_len = 512, .mpa_rev = 1 };
	struct uiw_conn_param sp = { .private_data = spd,
				     .private_data_len = 512 };
	struct conn k;
	int i;

	for (i = 0; i < 512; i++) {
		cpd[i] = (uint8_t)i;
		spd[i] = (uint8_t)(255 - i);
	}
	conn_up(&k, AF_INET, &cp, &sp);
	send_across(&k.c, &k.s, 1, 3);
	disconnect_from(&k, false);
	conn_down(&k);
}

static void test_reject(void **state)
{
	static const char why[] = "not today";
	struct uiw_conn_param cp = { 0 };
	struct uiw_cm_event ev;
	struct lst l;
	struct cmu_end c;

	lst_open(&l, AF_INET, 4);
	cmu_end_open(&c, cli_dev, true);
	assert_int_equal(uiw_cm_connect(c.ch, c.qp, (struct sockaddr *)&l.addr,
					l.len, &cp, &c.id), 0);
	cmu_expect_event(l.ch, UIW_CM_EVENT_CONNECT_REQUEST, &ev);
	assert_int_equal(uiw_cm_reject(ev.id, why, sizeof(why)), 0);
	/* Rejected twice, or accepted after: the request is gone. */
	assert_int_not_equal(uiw_cm_reject(ev.id, NULL, 0), 0);
	assert_int_equal(uiw_cm_destroy_id(ev.id), 0);

	cmu_expect_event(c.ch, UIW_CM_EVENT_REJECTED, &ev);
	assert_ptr_equal(ev.id, c.id);
	assert_int_equal(ev.status, -ECONNREFUSED);
	assert_int_equal(ev.private_data_len, sizeof(why));
	assert_memory_equal(ev.private_data, why, sizeof(why));
	assert_int_equal(qp_state(c.qp), UIW_QPS_IDLE);
	cmu_expect_no_event(c.ch);
	cmu_expect_no_event(l.ch);
	cmu_end_close(&c);
	lst_close(&l);
}

/* ---- Negotiation (RFC 5044 §7.1.1) -------------------------------- */

static void check_attr(struct uiw_qp *qp, int crc, int mtx, int mrx)
{
	struct uiw_qp_attr a;

	assert_int_equal(uiw_qp_query(qp, &a), 0);
	assert_int_equal(a.state, UIW_QPS_RTS);
	assert_int_equal(!!a.crc, crc);
	assert_int_equal(a.llp, UIW_LLP_TCP);
	assert_int_equal(!!a.markers_tx, mtx);
	assert_int_equal(!!a.markers_rx, mrx);
	assert_true(a.mulpdu >= 128);
}

static void negotiate(enum uiw_opt ccrc, enum uiw_opt scrc,
		      enum uiw_opt cmk, enum uiw_opt smk)
{
	struct uiw_conn_param cp = { .crc = ccrc, .markers = cmk };
	struct uiw_conn_param sp = { .crc = scrc, .markers = smk };
	int c_c = ccrc != UIW_OPT_OFF, s_c = scrc != UIW_OPT_OFF;
	int c_m = cmk == UIW_OPT_ON, s_m = smk == UIW_OPT_ON;
	struct conn k;

	print_message("crc %d/%d markers %d/%d\n", ccrc, scrc, cmk, smk);
	conn_up(&k, AF_INET, &cp, &sp);
	/* What each side saw of the other's frame. */
	assert_int_equal(k.creq.mpa.peer_crc, c_c);
	assert_int_equal(k.creq.mpa.peer_markers, c_m);
	assert_int_equal(k.cest.mpa.peer_crc, s_c);
	assert_int_equal(k.cest.mpa.peer_markers, s_m);
	/* CRC when either asks; markers towards the side that asked. */
	check_attr(k.c.qp, c_c || s_c, s_m, c_m);
	check_attr(k.s.qp, c_c || s_c, c_m, s_m);
	/* The two ends agree on the framing: data crosses both ways,
	 * long enough to carry several markers. */
	send_across(&k.c, &k.s, 3000, 4);
	send_across(&k.s, &k.c, 1500, 5);
	disconnect_from(&k, true);
	conn_down(&k);
}

static void test_negotiate_crc(void **state)
{
	static const enum uiw_opt v[] = { UIW_OPT_DEFAULT, UIW_OPT_OFF,
					  UIW_OPT_ON };
	int i, j;

	for (i = 0; i < 3; i++)
		for (j = 0; j < 3; j++)
			negotiate(v[i], v[j], UIW_OPT_DEFAULT,
				  UIW_OPT_DEFAULT);
}

static void test_negotiate_markers(void **state)
{
	static const enum uiw_opt v[] = { UIW_OPT_OFF, UIW_OPT_ON };
	int i, j;

	for (i = 0; i < 2; i++)
		for (j = 0; j < 2; j++)
			negotiate(UIW_OPT_DEFAULT, UIW_OPT_DEFAULT, v[i], v[j]);
	/* Markers without CRC, one way each. */
	negotiate(UIW_OPT_OFF, UIW_OPT_OFF, UIW_OPT_ON, UIW_OPT_OFF);
	negotiate(UIW_OPT_OFF, UIW_OPT_OFF, UIW_OPT_OFF, UIW_OPT_ON);
}

/* ---- A raw initiator against our listener -------------------------- */

/* The raw peer's bytes are refused: the socket is closed and no
 * CONNECT_REQUEST is raised. */
static void raw_request_refused(int family, const void *bytes, size_t n)
{
	struct lst l;
	int fd;

	lst_open(&l, family, 4);
	fd = raw_connect(&l.addr, l.len);
	cmu_raw_write(fd, bytes, n);
	cmu_raw_expect_closed(fd);
	close(fd);
	cmu_expect_no_event(l.ch);
	lst_close(&l);
}

static void test_raw_request_bad_key(void **state)
{
	uint8_t b[64];
	uint8_t bad[16];

	memcpy(bad, key_req, 16);
	bad[15] ^= 1;
	raw_request_refused(AF_INET, b, frame(b, bad, 0x40, 1, 0, NULL, 0));
	/* A Reply key where a Request belongs (RFC 5044 §7.1.2 rule 8). */
	raw_request_refused(AF_INET6, b, frame(b, key_rep, 0x40, 1, 0, NULL,
					       0));
}

static void test_raw_request_pd_too_long(void **state)
{
	static uint8_t b[20 + 600];
	static const uint8_t pd[600];

	raw_request_refused(AF_INET, b, frame(b, key_req, 0x40, 1, 600, pd,
					      600));
	/* The length alone is enough to refuse it. */
	raw_request_refused(AF_INET, b, frame(b, key_req, 0x40, 1, 513, pd,
					      0));
}

static void test_raw_request_bad_revision(void **state)
{
	uint8_t b[64];

	raw_request_refused(AF_INET, b, frame(b, key_req, 0x40, 3, 0, NULL, 0));
	raw_request_refused(AF_INET, b, frame(b, key_req, 0x40, 0, 0, NULL, 0));
	raw_request_refused(AF_INET, b, frame(b, key_req, 0x40, 255, 0, NULL,
					      0));
}

static void test_raw_request_then_bytes(void **state)
{
	uint8_t b[64];
	size_t n = frame(b, key_req, 0x40, 1, 4, "abcd", 4);

	/* An FPDU's first octets right behind the Request, in the same
	 * segment: the initiator did not wait for our Reply. */
	memcpy(b + n, "\x00\x10\x41\x43", 4);
	raw_request_refused(AF_INET, b, n + 4);
}

/* Octets that come after CONNECT_REQUEST but before our Reply. */
static void test_raw_bytes_before_reply(void **state)
{
	struct uiw_cm_event ev;
	struct lst l;
	struct cmu_end s;
	uint8_t b[64];
	int fd;

	lst_open(&l, AF_INET, 4);
	cmu_end_open(&s, srv_dev, false);
	fd = raw_connect(&l.addr, l.len);
	cmu_raw_write(fd, b, frame(b, key_req, 0x40, 1, 0, NULL, 0));
	cmu_expect_event(l.ch, UIW_CM_EVENT_CONNECT_REQUEST, &ev);
	s.id = ev.id;
	cmu_raw_write(fd, "\x00\x10", 2);
	cmu_expect_event(l.ch, UIW_CM_EVENT_CONNECT_ERROR, &ev);
	assert_ptr_equal(ev.id, s.id);
	assert_int_equal(ev.status, -EPROTO);
	cmu_raw_expect_closed(fd);
	close(fd);
	/* Too late to accept it; the QP is untouched. */
	assert_int_not_equal(uiw_cm_accept(s.id, s.qp, NULL), 0);
	assert_int_equal(qp_state(s.qp), UIW_QPS_IDLE);
	cmu_end_close(&s);
	lst_close(&l);
}

/* The peer goes away while the application thinks about its request. */
static void test_raw_close_before_reply(void **state)
{
	struct uiw_cm_event ev;
	struct lst l;
	uint8_t b[64];
	int fd;

	lst_open(&l, AF_INET, 4);
	fd = raw_connect(&l.addr, l.len);
	cmu_raw_write(fd, b, frame(b, key_req, 0x00, 1, 0, NULL, 0));
	cmu_expect_event(l.ch, UIW_CM_EVENT_CONNECT_REQUEST, &ev);
	close(fd);
	cmu_expect_event(l.ch, UIW_CM_EVENT_CONNECT_ERROR, &ev);
	assert_int_equal(ev.status, -ECONNRESET);
	assert_int_equal(uiw_cm_destroy_id(ev.id), 0);
	lst_close(&l);
}

static void test_raw_never_sends_request(void **state)
{
	struct lst l;
	int64_t t0;
	int fd;

	lst_open(&l, AF_INET, 4);
	assert_int_equal(uiw_cm_set_startup_timeout(l.id, SHORT_MS), 0);
	t0 = cmu_now_ms();
	fd = raw_connect(&l.addr, l.len);
	/* A partial Request is no better than none. */
	cmu_raw_write(fd, key_req, 10);
	cmu_raw_expect_closed(fd);
	assert_true(cmu_now_ms() - t0 >= SHORT_MS - 10);
	close(fd);
	cmu_expect_no_event(l.ch);
	lst_close(&l);
}

/* Waits until the listener has accepted n connections in all. */
static void wait_accepted(struct uiw_cm_id *lid, uint64_t n)
{
	struct uiw_cm_listener_stats st;
	int64_t end = cmu_now_ms() + WAIT_MS;

	for (;;) {
		assert_int_equal(uiw_cm_listener_stats(lid, &st), 0);
		if (st.accepted >= n)
			return;
		if (cmu_now_ms() > end)
			fail_msg("the listener accepted %llu of %llu",
				 (unsigned long long)st.accepted,
				 (unsigned long long)n);
		poll(NULL, 0, 2);
	}
}

/* At the bound on connections awaiting their Request (3 here), the
 * listener goes on accepting and closes the oldest silent one, so a
 * client that sends its Request is served at once: the startup timeout
 * of RFC 5044 §7.1.2 rule 10 alone would keep it out until a silent one
 * timed out (no timer runs out in this test).  Lowering the bound sheds
 * the excess at once, oldest first. */
static void test_startup_bound(void **state)
{
	struct pollfd p = { .events = POLLIN };
	struct uiw_cm_event ev;
	struct lst l;
	uint8_t b[64];
	int s1, s2, s3, good;

	lst_open(&l, AF_INET, 2);
	assert_int_equal(uiw_cm_set_max_awaiting(l.id, 3), 0);
	assert_int_equal(uiw_cm_set_startup_timeout(l.id, 4 * WAIT_MS), 0);
	s1 = raw_connect(&l.addr, l.len);
	s2 = raw_connect(&l.addr, l.len);
	s3 = raw_connect(&l.addr, l.len);
	wait_accepted(l.id, 3);
	good = raw_connect(&l.addr, l.len);
	cmu_raw_write(good, b, frame(b, key_req, 0x40, 1, 0, NULL, 0));
	cmu_expect_event(l.ch, UIW_CM_EVENT_CONNECT_REQUEST, &ev);
	cmu_raw_expect_closed(s1);
	p.fd = s2;
	assert_int_equal(poll(&p, 1, 0), 0);
	p.fd = s3;
	assert_int_equal(poll(&p, 1, 0), 0);
	assert_int_equal(uiw_cm_set_max_awaiting(l.id, 1), 0);
	cmu_raw_expect_closed(s2);
	assert_int_equal(poll(&p, 1, 0), 0);
	assert_int_equal(uiw_cm_reject(ev.id, NULL, 0), 0);
	assert_int_equal(uiw_cm_destroy_id(ev.id), 0);
	cmu_raw_expect_closed(good);
	/* The listener's end goes with the listener. */
	lst_close(&l);
	cmu_raw_expect_closed(s3);
	close(s1);
	close(s2);
	close(s3);
	close(good);
}

/* The ULPDU of an untagged Send (RFC 5041 §4.3-4.4, RFC 5040 §4.2):
 * DDP control (L set, version 1), RDMAP control (version 1, Send),
 * RsvdULP, QN 0, MSN, MO 0, then the payload. */
static size_t send_ulpdu(uint8_t *u, uint32_t msn, const void *data,
			 size_t len)
{
	memset(u, 0, 18);
	u[0] = 0x41;
	u[1] = 0x43;
	u[10] = (uint8_t)(msn >> 24);
	u[11] = (uint8_t)(msn >> 16);
	u[12] = (uint8_t)(msn >> 8);
	u[13] = (uint8_t)msn;
	memcpy(u + 18, data, len);
	return 18 + len;
}

/* Reads one FPDU at stream position pos and returns its ULPDU. */
static uint16_t raw_read_fpdu(int fd, uint64_t pos, bool markers, bool crc,
			      uint8_t *ulpdu, size_t cap)
{
	uint8_t b[2048];
	size_t have = 0, used = 0;
	uint16_t ulen = 0;

	for (;;) {
		ssize_t r;

		assert_int_equal(uiw_mpa_fpdu_decode(b, have, pos, markers,
						     crc, ulpdu, cap, &ulen,
						     &used), UIW_OK);
		if (used)
			return ulen;
		assert_true(have < sizeof(b));
		r = recv(fd, b + have, sizeof(b) - have, 0);
		if (r <= 0)
			fail_msg("raw peer: no FPDU: %s",
				 r == 0 ? "EOF" : strerror(errno));
		have += (size_t)r;
	}
}

/* R means nothing in a Request: RFC 5044 §7.1.1 says it is not checked
 * on reception.  Our Reply to a raw initiator, accepted and rejected.
 * Accepted, the responder holds its first FPDU until the initiator's
 * first FPDU arrived (§7.1.2 rule 4); both are framed as negotiated. */
static void raw_initiator(bool accept_it, enum uiw_opt crc, enum uiw_opt mk,
			  uint8_t req_flags)
{
	static const char pd[] = "raw";
	struct uiw_conn_param sp = { .crc = crc, .markers = mk,
				     .private_data = pd,
				     .private_data_len = sizeof(pd) };
	struct uiw_cm_event ev;
	uint8_t b[600], flags, rev, rpd[512], u[64];
	uint16_t rpd_len;
	struct uiw_wc wc;
	struct lst l;
	struct cmu_end s;
	int fd;

	lst_open(&l, AF_INET6, 4);
	cmu_end_open(&s, srv_dev, false);
	fd = raw_connect(&l.addr, l.len);
	cmu_raw_write(fd, b, frame(b, key_req, req_flags, 1, 3, "xyz", 3));
	cmu_expect_event(l.ch, UIW_CM_EVENT_CONNECT_REQUEST, &ev);
	s.id = ev.id;
	assert_int_equal(ev.mpa.peer_crc, !!(req_flags & 0x40));
	assert_int_equal(ev.mpa.peer_markers, !!(req_flags & 0x80));
	assert_int_equal(ev.private_data_len, 3);
	assert_memory_equal(ev.private_data, "xyz", 3);
	if (accept_it) {
		bool c = crc != UIW_OPT_OFF || (req_flags & 0x40);
		bool to_peer = req_flags & 0x80, to_us = mk == UIW_OPT_ON;
		struct pollfd p = { .fd = fd, .events = POLLIN };
		size_t n;

		assert_int_equal(uiw_cm_accept(s.id, s.qp, &sp), 0);
		raw_read_frame(fd, key_rep, &flags, &rev, rpd, &rpd_len);
		assert_int_equal(rev, 1);
		assert_int_equal(flags, (crc != UIW_OPT_OFF ? 0x40 : 0) |
				 (mk == UIW_OPT_ON ? 0x80 : 0));
		assert_int_equal(rpd_len, sizeof(pd));
		assert_memory_equal(rpd, pd, sizeof(pd));
		cmu_expect_event(l.ch, UIW_CM_EVENT_ESTABLISHED, &ev);
		check_attr(s.qp, c, to_peer, to_us);
		post_recv(&s, 5, 0, 64);
		memcpy(s.buf + 100, "responder's first FPDU", 22);
		post_send(&s, 6, 100, 22);
		assert_int_equal(poll(&p, 1, 100), 0);
		/* The initiator's first FPDU releases it. */
		n = send_ulpdu(u, 1, "initiator", 9);
		n = uiw_mpa_fpdu_encode(b, sizeof(b), 0, u, (uint16_t)n,
					to_us, c);
		assert_true(n > 0);
		cmu_raw_write(fd, b, n);
		cmu_wait_wc(s.cq, &wc);
		assert_int_equal(wc.wr_id, 5);
		assert_int_equal(wc.status, UIW_WC_SUCCESS);
		assert_int_equal(wc.byte_len, 9);
		assert_memory_equal(s.buf, "initiator", 9);
		assert_int_equal(raw_read_fpdu(fd, 0, to_peer, c, u, sizeof(u)),
				 18 + 22);
		assert_int_equal(u[1] & 0x0f, 0x3);           /* Send */
		assert_memory_equal(u + 18, "responder's first FPDU", 22);
		cmu_wait_wc(s.cq, &wc);
		assert_int_equal(wc.wr_id, 6);
		assert_int_equal(wc.status, UIW_WC_SUCCESS);
		/* The initiator closes: DISCONNECTED, out of RTS. */
		close(fd);
		cmu_expect_event(l.ch, UIW_CM_EVENT_DISCONNECTED, &ev);
		assert_int_not_equal(qp_state(s.qp), UIW_QPS_RTS);
	} else {
		assert_int_equal(uiw_cm_reject(s.id, "no", 2), 0);
		raw_read_frame(fd, key_rep, &flags, &rev, rpd, &rpd_len);
		assert_int_equal(flags, 0x20);
		assert_int_equal(rev, 1);
		assert_int_equal(rpd_len, 2);
		assert_memory_equal(rpd, "no", 2);
		cmu_raw_expect_closed(fd);
		close(fd);
	}
	cmu_expect_no_event(l.ch);
	cmu_end_close(&s);
	lst_close(&l);
}

static void test_raw_initiator_reply(void **state)
{
	raw_initiator(true, UIW_OPT_DEFAULT, UIW_OPT_DEFAULT, 0x00);
	raw_initiator(true, UIW_OPT_OFF, UIW_OPT_ON, 0xc0);
	raw_initiator(true, UIW_OPT_OFF, UIW_OPT_OFF, 0x80);
	raw_initiator(true, UIW_OPT_ON, UIW_OPT_OFF, 0x20);   /* R ignored */
	raw_initiator(false, UIW_OPT_DEFAULT, UIW_OPT_DEFAULT, 0x40);
}

/* ---- A raw responder against our connect --------------------------- */

struct rawsrv {
	int lfd, fd;
	struct sockaddr_storage addr;
	socklen_t len;
	struct cmu_end c;
};

/* Connects our client to a raw listener; reads and checks its Request. */
static void rawsrv_start(struct rawsrv *r, int family,
			 const struct uiw_conn_param *cp, uint8_t want_flags)
{
	uint8_t flags, rev, pd[512];
	uint16_t pd_len;

	r->lfd = raw_listen(family, &r->addr, &r->len);
	cmu_end_open(&r->c, cli_dev, true);
	assert_int_equal(uiw_cm_connect(r->c.ch, r->c.qp,
					(struct sockaddr *)&r->addr, r->len,
					cp, &r->c.id), 0);
	r->fd = raw_accept(r->lfd);
	raw_read_frame(r->fd, key_req, &flags, &rev, pd, &pd_len);
	assert_int_equal(flags, want_flags);
	assert_int_equal(rev, 1);
	assert_int_equal(pd_len, cp->private_data_len);
	if (pd_len)
		assert_memory_equal(pd, cp->private_data, pd_len);
}

static void rawsrv_stop(struct rawsrv *r)
{
	close(r->fd);
	close(r->lfd);
	cmu_expect_no_event(r->c.ch);
	cmu_end_close(&r->c);
}

/* Our client gets bytes back (then, with hangup, a FIN) and fails with
 * status. */
static void raw_reply_fails(const void *bytes, size_t n, bool hangup,
			    int status)
{
	struct uiw_conn_param cp = { .private_data = "hi",
				     .private_data_len = 2, .mpa_rev = 1 };
	struct uiw_cm_event ev;
	struct rawsrv r;

	rawsrv_start(&r, AF_INET, &cp, 0x40);
	cmu_raw_write(r.fd, bytes, n);
	if (hangup)
		shutdown(r.fd, SHUT_WR);
	cmu_expect_event(r.c.ch, UIW_CM_EVENT_CONNECT_ERROR, &ev);
	assert_ptr_equal(ev.id, r.c.id);
	assert_int_equal(ev.status, status);
	cmu_raw_expect_closed(r.fd);
	assert_int_equal(qp_state(r.c.qp), UIW_QPS_IDLE);
	rawsrv_stop(&r);
}

static void test_raw_reply_invalid(void **state)
{
	static uint8_t b[20 + 600];
	static const uint8_t pd[600];
	uint8_t bad[16];

	memcpy(bad, key_rep, 16);
	bad[0] ^= 0x20;
	raw_reply_fails(b, frame(b, bad, 0x40, 1, 0, NULL, 0), false, -EPROTO);
	/* Initiator/initiator: a Request comes back (rule 8). */
	raw_reply_fails(b, frame(b, key_req, 0x40, 1, 0, NULL, 0), false,
			-EPROTO);
	raw_reply_fails(b, frame(b, key_rep, 0x40, 1, 600, pd, 600), false,
			-EPROTO);
	/* A revision other than the one we asked for. */
	raw_reply_fails(b, frame(b, key_rep, 0x40, 2, 0, NULL, 0), false,
			-EPROTO);
	raw_reply_fails(b, frame(b, key_rep, 0x40, 0, 0, NULL, 0), false,
			-EPROTO);
	/* Part of a Reply, then the peer closes. */
	raw_reply_fails(b, frame(b, key_rep, 0x40, 1, 8, "12", 2), true,
			-ECONNRESET);
	raw_reply_fails(key_rep, 7, true, -ECONNRESET);
}

static void test_raw_reply_close(void **state)
{
	struct uiw_conn_param cp = { .mpa_rev = 1 };
	struct uiw_cm_event ev;
	struct rawsrv r;

	rawsrv_start(&r, AF_INET6, &cp, 0x40);
	close(r.fd);
	r.fd = -1;
	cmu_expect_event(r.c.ch, UIW_CM_EVENT_CONNECT_ERROR, &ev);
	assert_int_equal(ev.status, -ECONNRESET);
	rawsrv_stop(&r);
}

static void test_raw_reply_rejected(void **state)
{
	static uint8_t why[300];
	struct uiw_conn_param cp = { .markers = UIW_OPT_ON, .mpa_rev = 1 };
	struct uiw_cm_event ev;
	struct rawsrv r;
	uint8_t b[400];

	memset(why, 'r', sizeof(why));
	rawsrv_start(&r, AF_INET, &cp, 0xc0);
	/* siw's answer to markers: R set (SIW-FACTS.md). */
	cmu_raw_write(r.fd, b, frame(b, key_rep, 0x20, 1, sizeof(why), why,
				 sizeof(why)));
	cmu_expect_event(r.c.ch, UIW_CM_EVENT_REJECTED, &ev);
	assert_int_equal(ev.status, -ECONNREFUSED);
	assert_int_equal(ev.private_data_len, sizeof(why));
	assert_memory_equal(ev.private_data, why, sizeof(why));
	assert_int_equal(ev.mpa.peer_markers, 0);
	cmu_raw_expect_closed(r.fd);
	assert_int_equal(qp_state(r.c.qp), UIW_QPS_IDLE);
	rawsrv_stop(&r);
}

static void test_raw_reply_timeout(void **state)
{
	struct uiw_conn_param cp = { .crc = UIW_OPT_OFF,
				     .timeout_ms = SHORT_MS, .mpa_rev = 1 };
	struct uiw_cm_event ev;
	struct rawsrv r;
	int64_t t0 = cmu_now_ms();

	rawsrv_start(&r, AF_INET, &cp, 0x00);
	cmu_expect_event(r.c.ch, UIW_CM_EVENT_CONNECT_ERROR, &ev);
	assert_int_equal(ev.status, -ETIMEDOUT);
	assert_true(cmu_now_ms() - t0 >= SHORT_MS - 10);
	cmu_raw_expect_closed(r.fd);
	rawsrv_stop(&r);
}

/* A raw responder that accepts with C and M: CRC on, and we insert
 * markers towards it while expecting none. */
static void test_raw_reply_accepted(void **state)
{
	struct uiw_conn_param cp = { .crc = UIW_OPT_OFF, .mpa_rev = 1 };
	struct uiw_cm_event ev;
	struct rawsrv r;
	uint8_t b[64];

	rawsrv_start(&r, AF_INET, &cp, 0x00);
	cmu_raw_write(r.fd, b, frame(b, key_rep, 0xc0, 1, 5, "hello", 5));
	cmu_expect_event(r.c.ch, UIW_CM_EVENT_ESTABLISHED, &ev);
	assert_int_equal(ev.mpa.peer_crc, 1);
	assert_int_equal(ev.mpa.peer_markers, 1);
	assert_int_equal(ev.private_data_len, 5);
	assert_memory_equal(ev.private_data, "hello", 5);
	check_attr(r.c.qp, 1, 1, 0);
	/* The peer resets: DISCONNECTED, the QP leaves RTS. */
	{
		struct linger lg = { .l_onoff = 1, .l_linger = 0 };

		setsockopt(r.fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	}
	close(r.fd);
	r.fd = -1;
	cmu_expect_event(r.c.ch, UIW_CM_EVENT_DISCONNECTED, &ev);
	assert_int_not_equal(qp_state(r.c.qp), UIW_QPS_RTS);
	rawsrv_stop(&r);
}

/* A socket of type bound to 127.0.0.1 and a port the system picks,
 * its address in ss. */
static int bound_socket(int type, struct sockaddr_storage *ss,
			socklen_t *len)
{
	int fd = socket(AF_INET, type | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	assert_int_equal(uiw_resolve("127.0.0.1", "0", 1, ss, len), 0);
	assert_int_equal(bind(fd, (struct sockaddr *)ss, *len), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)ss, len), 0);
	return fd;
}

static void test_connect_refused(void **state)
{
	struct sockaddr_storage ss;
	socklen_t len;
	struct uiw_cm_event ev;
	struct cmu_end c;
	int fd;

	/* A bound socket that does not listen: its port refuses. */
	fd = bound_socket(SOCK_STREAM, &ss, &len);
	cmu_end_open(&c, cli_dev, true);
	assert_int_equal(uiw_cm_connect(c.ch, c.qp, (struct sockaddr *)&ss,
					len, NULL, &c.id), 0);
	cmu_expect_event(c.ch, UIW_CM_EVENT_CONNECT_ERROR, &ev);
	assert_ptr_equal(ev.id, c.id);
	assert_int_equal(ev.status, -ECONNREFUSED);
	assert_int_equal(qp_state(c.qp), UIW_QPS_IDLE);
	/* The QP is free again: a second attempt may use it. */
	assert_int_equal(uiw_cm_destroy_id(c.id), 0);
	assert_int_equal(uiw_cm_connect(c.ch, c.qp, (struct sockaddr *)&ss,
					len, NULL, &c.id), 0);
	cmu_expect_event(c.ch, UIW_CM_EVENT_CONNECT_ERROR, &ev);
	assert_int_equal(ev.status, -ECONNREFUSED);
	cmu_expect_no_event(c.ch);
	cmu_end_close(&c);
	close(fd);
}

/* ---- Teardown at awkward moments ----------------------------------- */

/* destroy_id while the Reply is awaited; and a listener destroyed with
 * a connection that has not sent its Request yet. */
static void test_destroy_during_startup(void **state)
{
	struct uiw_conn_param cp = { .mpa_rev = 1 };
	struct rawsrv r;
	struct lst l;
	int fd;

	rawsrv_start(&r, AF_INET, &cp, 0x40);
	assert_int_equal(uiw_cm_destroy_id(r.c.id), 0);
	r.c.id = NULL;
	cmu_raw_expect_closed(r.fd);
	rawsrv_stop(&r);

	lst_open(&l, AF_INET, 4);
	fd = raw_connect(&l.addr, l.len);
	cmu_raw_write(fd, key_req, 4);
	assert_int_equal(uiw_cm_destroy_id(l.id), 0);
	cmu_raw_expect_closed(fd);
	close(fd);
	cmu_expect_no_event(l.ch);
	assert_int_equal(uiw_cm_channel_destroy(l.ch), 0);
}

/* A CONNECT_REQUEST not yet taken goes away with its listener. */
static void test_destroy_listener_with_request(void **state)
{
	struct lst l;
	uint8_t b[64];
	int fd;
	struct pollfd p = { .events = POLLIN };

	lst_open(&l, AF_INET, 4);
	fd = raw_connect(&l.addr, l.len);
	cmu_raw_write(fd, b, frame(b, key_req, 0x40, 1, 0, NULL, 0));
	/* The channel fd becomes readable with the event pending. */
	p.fd = uiw_cm_channel_fd(l.ch);
	assert_int_equal(poll(&p, 1, WAIT_MS), 1);
	assert_int_equal(uiw_cm_destroy_id(l.id), 0);
	assert_int_equal(poll(&p, 1, 0), 0);
	cmu_expect_no_event(l.ch);
	cmu_raw_expect_closed(fd);
	close(fd);
	assert_int_equal(uiw_cm_channel_destroy(l.ch), 0);
}

/* Destroying a connected id resets the connection: the peer sees
 * DISCONNECTED, both QPs leave RTS. */
static void test_destroy_connected(void **state)
{
	struct uiw_conn_param p = { 0 };
	struct uiw_cm_event ev;
	struct uiw_wc wc;
	struct conn k;

	conn_up(&k, AF_INET, &p, &p);
	post_recv(&k.s, 77, 0, 64);
	assert_int_equal(uiw_cm_destroy_id(k.c.id), 0);
	k.c.id = NULL;
	assert_int_not_equal(qp_state(k.c.qp), UIW_QPS_RTS);
	cmu_expect_event(k.l.ch, UIW_CM_EVENT_DISCONNECTED, &ev);
	assert_ptr_equal(ev.id, k.s.id);
	assert_int_not_equal(qp_state(k.s.qp), UIW_QPS_RTS);
	cmu_wait_wc(k.s.cq, &wc);
	assert_int_equal(wc.wr_id, 77);
	assert_int_equal(wc.status, UIW_WC_WR_FLUSH_ERR);
	cmu_expect_no_event(k.c.ch);
	conn_down(&k);
}

/* Destroying the QP of a connected id (abortive close by the engine). */
static void test_qp_destroy_connected(void **state)
{
	struct uiw_conn_param p = { 0 };
	struct uiw_cm_event ev;
	struct conn k;

	conn_up(&k, AF_INET, &p, &p);
	assert_int_equal(uiw_qp_destroy(k.s.qp), 0);
	k.s.qp = NULL;
	cmu_expect_event(k.l.ch, UIW_CM_EVENT_DISCONNECTED, &ev);
	assert_ptr_equal(ev.id, k.s.id);
	cmu_expect_event(k.c.ch, UIW_CM_EVENT_DISCONNECTED, &ev);
	assert_ptr_equal(ev.id, k.c.id);
	assert_int_not_equal(qp_state(k.c.qp), UIW_QPS_RTS);
	conn_down(&k);
}

/* ---- API checks ---------------------------------------------------- */

static void test_api_misuse(void **state)
{
	static uint8_t big[513];
	struct uiw_conn_param cp = { 0 };
	struct sockaddr_storage ss;
	socklen_t len;
	struct uiw_cm_event ev;
	struct uiw_cm_id *id2;
	struct rawsrv r;
	struct lst l;
	int64_t t0;

	lst_open(&l, AF_INET, 4);
	cmu_end_open(&r.c, cli_dev, true);
	cp.private_data = big;
	cp.private_data_len = sizeof(big);
	assert_int_equal(uiw_cm_connect(r.c.ch, r.c.qp,
					(struct sockaddr *)&l.addr, l.len,
					&cp, &id2), -EINVAL);
	assert_non_null(strstr(uiw_last_error(), "512"));
	memset(&cp, 0, sizeof(cp));
	cp.mpa_rev = 3;
	assert_int_equal(uiw_cm_connect(r.c.ch, r.c.qp,
					(struct sockaddr *)&l.addr, l.len,
					&cp, &id2), -EINVAL);
	cp.mpa_rev = 7;
	assert_int_equal(uiw_cm_connect(r.c.ch, r.c.qp,
					(struct sockaddr *)&l.addr, l.len,
					&cp, &id2), -EINVAL);
	cp.mpa_rev = 1;
	cp.timeout_ms = -1;
	assert_int_equal(uiw_cm_connect(r.c.ch, r.c.qp,
					(struct sockaddr *)&l.addr, l.len,
					&cp, &id2), -EINVAL);
	assert_int_equal(uiw_cm_connect(r.c.ch, r.c.qp,
					(struct sockaddr *)&l.addr, 4,
					NULL, &id2), -EINVAL);
	/* A QP serves one connection id at a time. */
	assert_int_equal(uiw_cm_connect(r.c.ch, r.c.qp,
					(struct sockaddr *)&l.addr, l.len,
					NULL, &r.c.id), 0);
	assert_int_equal(uiw_cm_connect(r.c.ch, r.c.qp,
					(struct sockaddr *)&l.addr, l.len,
					NULL, &id2), -EBUSY);
	/* Accept, reject, disconnect on ids that cannot take them. */
	assert_int_equal(uiw_cm_accept(l.id, r.c.qp, NULL), -EINVAL);
	assert_int_equal(uiw_cm_accept(r.c.id, r.c.qp, NULL), -EINVAL);
	assert_int_equal(uiw_cm_reject(r.c.id, NULL, 0), -EINVAL);
	assert_int_equal(uiw_cm_disconnect(l.id), -EINVAL);
	assert_int_equal(uiw_cm_set_startup_timeout(r.c.id, 5), -EINVAL);
	/* Ids left: the channels stay. */
	assert_int_equal(uiw_cm_channel_destroy(l.ch), -EBUSY);
	assert_int_equal(uiw_cm_channel_destroy(r.c.ch), -EBUSY);
	cmu_expect_event(l.ch, UIW_CM_EVENT_CONNECT_REQUEST, &ev);
	assert_int_equal(uiw_cm_reject(ev.id, NULL, 0), 0);
	assert_int_equal(uiw_cm_destroy_id(ev.id), 0);
	cmu_expect_event(r.c.ch, UIW_CM_EVENT_REJECTED, &ev);
	assert_int_equal(ev.private_data_len, 0);
	assert_int_equal(uiw_cm_disconnect(r.c.id), -ENOTCONN);

	/* get_event: non-blocking and bounded waits. */
	assert_int_equal(uiw_cm_get_event(r.c.ch, &ev, 0), -EAGAIN);
	t0 = cmu_now_ms();
	assert_int_equal(uiw_cm_get_event(r.c.ch, &ev, 50), -ETIMEDOUT);
	assert_true(cmu_now_ms() - t0 >= 49);

	/* Names and addresses. */
	assert_int_equal(uiw_resolve("::1", "4791", 0, &ss, &len), 0);
	assert_int_equal(ss.ss_family, AF_INET6);
	assert_int_equal(len, sizeof(struct sockaddr_in6));
	assert_int_equal(sa_port(&ss), 4791);
	assert_int_equal(uiw_resolve("localhost", "80", 0, &ss, &len), 0);
	assert_int_equal(sa_port(&ss), 80);
	assert_int_equal(uiw_resolve(NULL, "7", 1, &ss, &len), 0);
	assert_true(uiw_resolve(NULL, "1", 0, &ss, &len) < 0);
	assert_string_equal(uiw_cm_event_str(UIW_CM_EVENT_ESTABLISHED),
			    "ESTABLISHED");

	cmu_end_close(&r.c);
	lst_close(&l);
}

/* The LLP is named in the API: an unknown one is refused with -EINVAL on
 * connect and on listen, and a refused call changes nothing; a request
 * that came over TCP cannot be accepted as SCTP (-EINVAL, the request
 * stays pending for an accept over TCP).  Connections over SCTP have
 * their own tests (the *_sctp variants, tests/unit/test_ddps.c). */
static void test_llp_kinds(void **state)
{
	struct uiw_listen_param lp = { .llp = (enum uiw_llp_kind)7,
				       .backlog = 4 };
	struct uiw_conn_param cp = { .llp = (enum uiw_llp_kind)7 };
	struct uiw_conn_param sp = { .llp = UIW_LLP_SCTP_UDP };
	struct sockaddr_storage ss;
	struct uiw_cm_event ev;
	struct uiw_cm_id *id = NULL;
	struct cmu_end c, s;
	struct lst l;
	socklen_t len;

	lst_open(&l, AF_INET, 4);
	cmu_end_open(&c, cli_dev, true);
	cmu_end_open(&s, srv_dev, false);

	assert_int_equal(uiw_resolve("127.0.0.1", "0", 1, &ss, &len), 0);
	assert_int_equal(uiw_cm_listen_ex(l.ch, (struct sockaddr *)&ss, len,
					  &lp, &id), -EINVAL);
	assert_non_null(strstr(uiw_last_error(), "LLP"));
	assert_null(id);
	assert_int_equal(uiw_cm_connect(c.ch, c.qp, (struct sockaddr *)&l.addr,
					l.len, &cp, &id), -EINVAL);
	assert_non_null(strstr(uiw_last_error(), "LLP"));
	assert_null(id);

	cp.llp = UIW_LLP_TCP;
	assert_int_equal(uiw_cm_connect(c.ch, c.qp, (struct sockaddr *)&l.addr,
					l.len, &cp, &c.id), 0);
	cmu_expect_event(l.ch, UIW_CM_EVENT_CONNECT_REQUEST, &ev);
	assert_int_equal(ev.llp, UIW_LLP_TCP);
	s.id = ev.id;
	assert_int_equal(uiw_cm_accept(s.id, s.qp, &sp), -EINVAL);
	assert_non_null(strstr(uiw_last_error(), "TCP"));
	assert_int_equal(qp_state(s.qp), UIW_QPS_IDLE);
	sp.llp = UIW_LLP_TCP;
	assert_int_equal(uiw_cm_accept(s.id, s.qp, &sp), 0);
	cmu_expect_event(c.ch, UIW_CM_EVENT_ESTABLISHED, &ev);
	assert_int_equal(ev.llp, UIW_LLP_TCP);
	cmu_expect_event(l.ch, UIW_CM_EVENT_ESTABLISHED, &ev);
	assert_int_equal(qp_state(s.qp), UIW_QPS_RTS);
	cmu_end_close(&c);
	cmu_expect_event(l.ch, UIW_CM_EVENT_DISCONNECTED, &ev);
	cmu_end_close(&s);
	lst_close(&l);
}

/* ---- Adopting a socket; disconnect during the setup ------------------ */

/* A TCP listener takes over a socket of the caller's that listens
 * already: the connection the kernel queued on it before the listener
 * existed is served; the listener's address is the socket's, and the
 * listener closes it when it goes. */
static void test_listen_adopt(void **state)
{
	struct uiw_listen_param lp = { .llp = UIW_LLP_TCP, .adopt = 1 };
	struct sockaddr_storage ss, la;
	socklen_t len = sizeof(ss);
	struct uiw_cm_event ev;
	struct lst l = { 0 };
	struct cmu_end c, s;
	int fd;

	fd = bound_socket(SOCK_STREAM, &ss, &len);
	assert_int_equal(listen(fd, 4), 0);
	cmu_end_open(&c, cli_dev, true);
	cmu_end_open(&s, srv_dev, false);
	/* Before any listener: the kernel queues the connection, and the
	 * client hears nothing (no refusal) meanwhile. */
	assert_int_equal(uiw_cm_connect(c.ch, c.qp, (struct sockaddr *)&ss,
					len, NULL, &c.id), 0);
	{
		struct pollfd p = { .fd = uiw_cm_channel_fd(c.ch),
				    .events = POLLIN };

		assert_int_equal(poll(&p, 1, SHORT_MS), 0);
	}
	l.ch = uiw_cm_channel_create(srv_dev);
	assert_non_null(l.ch);
	lp.adopt_fd = fd;
	if (uiw_cm_listen_ex(l.ch, NULL, 0, &lp, &l.id) != 0)
		fail_msg("listen: %s", uiw_last_error());
	assert_int_equal(uiw_cm_local_addr(l.id, &la), 0);
	assert_int_equal(sa_port(&la), sa_port(&ss));
	cmu_expect_event(l.ch, UIW_CM_EVENT_CONNECT_REQUEST, &ev);
	s.id = ev.id;
	assert_int_equal(uiw_cm_accept(s.id, s.qp, NULL), 0);
	cmu_expect_event(c.ch, UIW_CM_EVENT_ESTABLISHED, NULL);
	cmu_expect_event(l.ch, UIW_CM_EVENT_ESTABLISHED, NULL);
	send_across(&c, &s, 4096, 3);
	cmu_end_close(&c);
	cmu_end_close(&s);
	lst_close(&l);
	/* the listener closed the socket it took */
	assert_int_equal(fcntl(fd, F_GETFD), -1);
	assert_int_equal(errno, EBADF);
}

/* What cannot be adopted is refused, and the socket stays the
 * caller's. */
static void test_listen_adopt_refused(void **state)
{
	struct uiw_listen_param lp = { .llp = UIW_LLP_TCP, .adopt = 1 };
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	struct uiw_cm_channel *ch = uiw_cm_channel_create(srv_dev);
	struct uiw_cm_id *id = NULL;
	int udp, tcp;

	assert_non_null(ch);
	udp = bound_socket(SOCK_DGRAM, &ss, &len);
	tcp = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(tcp >= 0);
	lp.adopt_fd = udp;          /* not TCP */
	assert_int_equal(uiw_cm_listen_ex(ch, NULL, 0, &lp, &id), -EINVAL);
	lp.adopt_fd = tcp;          /* not bound */
	assert_int_equal(uiw_cm_listen_ex(ch, NULL, 0, &lp, &id), -EINVAL);
	lp.adopt_fd = -1;           /* not a descriptor */
	assert_int_equal(uiw_cm_listen_ex(ch, NULL, 0, &lp, &id), -EBADF);
	lp.adopt_fd = tcp;          /* SCTP listeners adopt nothing */
	lp.llp = UIW_LLP_SCTP;
	assert_int_equal(uiw_cm_listen_ex(ch, NULL, 0, &lp, &id), -EINVAL);
	assert_null(id);
	/* both still open, still the caller's */
	assert_true(fcntl(udp, F_GETFD) >= 0);
	assert_true(fcntl(tcp, F_GETFD) >= 0);
	close(udp);
	close(tcp);
	assert_int_equal(uiw_cm_channel_destroy(ch), 0);
}

/* uiw_cm_disconnect while the connect is under way: 0, and the close
 * starts once the connection is established (ESTABLISHED, then
 * DISCONNECTED, on both sides). */
static void test_disconnect_during_setup(void **state)
{
	struct uiw_cm_event ev;
	struct lst l;
	struct cmu_end c, s;

	lst_open(&l, AF_INET, 8);
	cmu_end_open(&c, cli_dev, true);
	cmu_end_open(&s, srv_dev, false);
	assert_int_equal(uiw_cm_connect(c.ch, c.qp, (struct sockaddr *)&l.addr,
					l.len, NULL, &c.id), 0);
	assert_int_equal(uiw_cm_disconnect(c.id), 0);
	cmu_expect_event(l.ch, UIW_CM_EVENT_CONNECT_REQUEST, &ev);
	s.id = ev.id;
	assert_int_equal(uiw_cm_accept(s.id, s.qp, NULL), 0);
	cmu_expect_event(c.ch, UIW_CM_EVENT_ESTABLISHED, NULL);
	cmu_expect_event(c.ch, UIW_CM_EVENT_DISCONNECTED, NULL);
	cmu_expect_event(l.ch, UIW_CM_EVENT_ESTABLISHED, NULL);
	cmu_expect_event(l.ch, UIW_CM_EVENT_DISCONNECTED, NULL);
	/* once over, a disconnect is harmless */
	assert_int_equal(uiw_cm_disconnect(c.id), 0);
	cmu_end_close(&c);
	cmu_end_close(&s);
	lst_close(&l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_connect_accept_ipv4),
		cmocka_unit_test(test_connect_accept_ipv6),
		cmocka_unit_test(test_private_data_max_and_server_disconnect),
		cmocka_unit_test(test_reject),
		cmocka_unit_test(test_negotiate_crc),
		cmocka_unit_test(test_negotiate_markers),
		cmocka_unit_test(test_raw_request_bad_key),
		cmocka_unit_test(test_raw_request_pd_too_long),
		cmocka_unit_test(test_raw_request_bad_revision),
		cmocka_unit_test(test_raw_request_then_bytes),
		cmocka_unit_test(test_raw_bytes_before_reply),
		cmocka_unit_test(test_raw_close_before_reply),
		cmocka_unit_test(test_raw_never_sends_request),
		cmocka_unit_test(test_startup_bound),
		cmocka_unit_test(test_raw_initiator_reply),
		cmocka_unit_test(test_raw_reply_invalid),
		cmocka_unit_test(test_raw_reply_close),
		cmocka_unit_test(test_raw_reply_rejected),
		cmocka_unit_test(test_raw_reply_timeout),
		cmocka_unit_test(test_raw_reply_accepted),
		cmocka_unit_test(test_connect_refused),
		cmocka_unit_test(test_destroy_during_startup),
		cmocka_unit_test(test_destroy_listener_with_request),
		cmocka_unit_test(test_destroy_connected),
		cmocka_unit_test(test_qp_destroy_connected),
		cmocka_unit_test(test_api_misuse),
		cmocka_unit_test(test_llp_kinds),
		cmocka_unit_test(test_listen_adopt),
		cmocka_unit_test(test_listen_adopt_refused),
		cmocka_unit_test(test_disconnect_during_setup),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
