/*
 * The connection manager over DDP over SCTP (RFC 5043) between two
 * uiwarp ends on 127.0.0.1, on the user-space stack (usrsctp over UDP):
 * private data in both directions on connect, accept and reject (RFC
 * 5043 §5.2.3: up to 512 octets, the RFC 6581 §7 IRD/ORD word counted
 * in them), the IRD/ORD negotiation of the enhanced codes and the plain
 * codes, a rejected session followed by an accepted one, and a
 * disconnect from either side, with the connections sharing one
 * association.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <uiwarp/uiwarp.h>
#include <uiwarp/cm.h>

#include "cm_util.h"
#include "lb_util.h"

static struct uiw_device *dev;
static struct uiw_cm_channel *lch;
static struct uiw_cm_id *lid;
static struct sockaddr_in laddr;
static uint16_t udp_port;

static int setup(void **state)
{
	struct uiw_listen_param lp = { .llp = UIW_LLP_SCTP_UDP, .backlog = 8 };
	struct sockaddr_storage ss;

	setenv("UIW_LB_LLP", "sctp-udp", 1);
	lbu_llp(&udp_port);
	lp.udp_port = udp_port;
	dev = uiw_device_open(NULL);
	assert_non_null(dev);
	lch = uiw_cm_channel_create(dev);
	assert_non_null(lch);
	memset(&laddr, 0, sizeof(laddr));
	laddr.sin_family = AF_INET;
	laddr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(uiw_cm_listen_ex(lch, (struct sockaddr *)&laddr,
					  sizeof(laddr), &lp, &lid), 0);
	assert_int_equal(uiw_cm_local_addr(lid, &ss), 0);
	laddr.sin_port = ((struct sockaddr_in *)&ss)->sin_port;
	assert_int_not_equal(laddr.sin_port, 0);
	return 0;
}

static int teardown(void **state)
{
	assert_int_equal(uiw_cm_destroy_id(lid), 0);
	assert_int_equal(uiw_cm_channel_destroy(lch), 0);
	assert_int_equal(uiw_device_close(dev), 0);
	return 0;
}

static void fill(uint8_t *p, size_t n, unsigned seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)(seed * 31 + i * 7);
}

static void connect_to(struct cmu_end *c, const void *pd, uint16_t pd_len,
		       uint8_t rev)
{
	struct uiw_conn_param cp = {
		.llp = UIW_LLP_SCTP_UDP, .udp_port = udp_port,
		.private_data = pd, .private_data_len = pd_len,
		.mpa_rev = rev, .ird = 4, .ord = 2,
	};

	assert_int_equal(uiw_cm_connect(c->ch, c->qp,
					(struct sockaddr *)&laddr,
					sizeof(laddr), &cp, &c->id), 0);
}

static void expect_pd(const struct uiw_cm_event *ev, const uint8_t *pd,
		      uint16_t len)
{
	assert_int_equal(ev->private_data_len, len);
	if (len)
		assert_memory_equal(ev->private_data, pd, len);
}

/* Reject with private data, then the same client connects again and is
 * accepted: REJECTED carries the responder's private data, the accepted
 * session carries both sides' (RFC 5043 §5.2.3). */
static void test_reject_then_accept(void **state)
{
	uint8_t cpd[508], spd[512], rpd[40];
	struct uiw_conn_param sp = { .llp = UIW_LLP_SCTP_UDP };
	struct uiw_cm_event ev;
	struct uiw_qp_attr a;
	struct cmu_end c, s;

	fill(cpd, sizeof(cpd), 1);
	fill(spd, sizeof(spd), 2);
	fill(rpd, sizeof(rpd), 3);
	cmu_end_open(&c, dev, true);
	cmu_end_open(&s, dev, true);

	/* 508 octets: the most an enhanced Initiate carries with its
	 * word (RFC 6581 §7). */
	connect_to(&c, cpd, sizeof(cpd), 0);
	cmu_expect_event(lch, UIW_CM_EVENT_CONNECT_REQUEST, &ev);
	assert_int_equal(ev.llp, UIW_LLP_SCTP_UDP);
	expect_pd(&ev, cpd, sizeof(cpd));
	assert_int_equal(ev.peer_ird, 4);
	assert_int_equal(ev.peer_ord, 2);
	assert_int_equal(uiw_cm_reject(ev.id, rpd, sizeof(rpd)), 0);
	assert_int_equal(uiw_cm_destroy_id(ev.id), 0);
	cmu_expect_event(c.ch, UIW_CM_EVENT_REJECTED, &ev);
	assert_int_equal(ev.status, -ECONNREFUSED);
	expect_pd(&ev, rpd, sizeof(rpd));
	assert_int_equal(uiw_cm_destroy_id(c.id), 0);
	c.id = NULL;

	/* Again, accepted; a plain Accept cannot carry more than 512
	 * octets, the enhanced one 508: the responder's 512 are refused
	 * by the API before anything is sent. */
	connect_to(&c, cpd, 100, 0);
	cmu_expect_event(lch, UIW_CM_EVENT_CONNECT_REQUEST, &ev);
	expect_pd(&ev, cpd, 100);
	s.id = ev.id;
	sp.private_data = spd;
	sp.private_data_len = sizeof(spd);
	assert_true(uiw_cm_accept(s.id, s.qp, &sp) < 0);
	sp.private_data_len = 508;
	sp.ird = 8;
	sp.ord = 1;
	assert_int_equal(uiw_cm_accept(s.id, s.qp, &sp), 0);
	cmu_expect_event(lch, UIW_CM_EVENT_ESTABLISHED, &ev);
	cmu_expect_event(c.ch, UIW_CM_EVENT_ESTABLISHED, &ev);
	assert_int_equal(ev.llp, UIW_LLP_SCTP_UDP);
	expect_pd(&ev, spd, 508);
	/* RFC 6581 §9.1 as over MPA: the initiator's ORD 2 against the
	 * responder's IRD 8, the responder's ORD 1 against IRD 4. */
	assert_int_equal(uiw_qp_query(c.qp, &a), 0);
	assert_int_equal(a.state, UIW_QPS_RTS);
	assert_int_equal(a.llp, UIW_LLP_SCTP_UDP);
	assert_int_equal(a.ord, 2);
	assert_true(a.mulpdu >= 516);

	/* Disconnect from the responder: both sides hear of it. */
	assert_int_equal(uiw_cm_disconnect(s.id), 0);
	cmu_expect_event(lch, UIW_CM_EVENT_DISCONNECTED, &ev);
	cmu_expect_event(c.ch, UIW_CM_EVENT_DISCONNECTED, &ev);
	cmu_end_close(&c);
	cmu_end_close(&s);
}

/* The plain codes of RFC 5043 (mpa_rev 1): no IRD/ORD word, the full 512
 * octets of private data each way, each side keeps its own IRD and
 * ORD; the initiator disconnects. */
static void test_plain_session(void **state)
{
	uint8_t cpd[512], spd[512];
	struct uiw_conn_param sp = { .llp = UIW_LLP_SCTP_UDP,
				     .private_data = spd,
				     .private_data_len = sizeof(spd) };
	struct uiw_cm_event ev;
	struct cmu_end c, s;

	fill(cpd, sizeof(cpd), 4);
	fill(spd, sizeof(spd), 5);
	cmu_end_open(&c, dev, true);
	cmu_end_open(&s, dev, true);
	connect_to(&c, cpd, sizeof(cpd), 1);
	cmu_expect_event(lch, UIW_CM_EVENT_CONNECT_REQUEST, &ev);
	expect_pd(&ev, cpd, sizeof(cpd));
	assert_int_equal(ev.peer_ird, 0);     /* the peer did not say */
	s.id = ev.id;
	assert_int_equal(uiw_cm_accept(s.id, s.qp, &sp), 0);
	cmu_expect_event(lch, UIW_CM_EVENT_ESTABLISHED, &ev);
	cmu_expect_event(c.ch, UIW_CM_EVENT_ESTABLISHED, &ev);
	expect_pd(&ev, spd, sizeof(spd));
	assert_int_equal(uiw_cm_disconnect(c.id), 0);
	cmu_expect_event(c.ch, UIW_CM_EVENT_DISCONNECTED, &ev);
	cmu_expect_event(lch, UIW_CM_EVENT_DISCONNECTED, &ev);
	cmu_end_close(&c);
	cmu_end_close(&s);
}

/* Connections to one peer share one association (RFC 5043 §4), each on
 * a stream of its own: their local addresses are the same SCTP
 * endpoint, and each completes a Send. */
static void test_shared_association(void **state)
{
	enum { N = 4 };
	struct uiw_conn_param sp = { .llp = UIW_LLP_SCTP_UDP };
	struct sockaddr_storage first, ss;
	struct uiw_cm_event ev;
	struct cmu_end c[N], s[N];
	int i;

	for (i = 0; i < N; i++) {
		cmu_end_open(&c[i], dev, true);
		cmu_end_open(&s[i], dev, true);
		connect_to(&c[i], NULL, 0, 0);
		cmu_expect_event(lch, UIW_CM_EVENT_CONNECT_REQUEST, &ev);
		s[i].id = ev.id;
		assert_int_equal(uiw_cm_accept(s[i].id, s[i].qp, &sp), 0);
		cmu_expect_event(lch, UIW_CM_EVENT_ESTABLISHED, &ev);
		cmu_expect_event(c[i].ch, UIW_CM_EVENT_ESTABLISHED, &ev);
		assert_int_equal(uiw_cm_local_addr(c[i].id, &ss), 0);
		if (i == 0)
			first = ss;
		else
			assert_memory_equal(&ss, &first,
					    sizeof(struct sockaddr_in));
	}
	for (i = 0; i < N; i++) {
		struct uiw_send_wr wr = { .wr_id = (uint64_t)i,
					  .opcode = UIW_WR_SEND,
					  .send_flags = UIW_SEND_SIGNALED };
		struct uiw_recv_wr rr = { .wr_id = 100u + (unsigned)i };
		struct uiw_wc wc;

		assert_int_equal(uiw_post_recv(s[i].qp, &rr, NULL), 0);
		assert_int_equal(uiw_post_send(c[i].qp, &wr, NULL), 0);
		cmu_wait_wc(c[i].cq, &wc);
		assert_int_equal(wc.status, UIW_WC_SUCCESS);
		cmu_wait_wc(s[i].cq, &wc);
		assert_int_equal(wc.status, UIW_WC_SUCCESS);
		assert_int_equal(wc.wr_id, 100u + (unsigned)i);
	}
	for (i = 0; i < N; i++) {
		assert_int_equal(uiw_cm_disconnect(c[i].id), 0);
		cmu_expect_event(c[i].ch, UIW_CM_EVENT_DISCONNECTED, &ev);
		cmu_expect_event(lch, UIW_CM_EVENT_DISCONNECTED, &ev);
		cmu_end_close(&c[i]);
		cmu_end_close(&s[i]);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reject_then_accept),
		cmocka_unit_test(test_plain_session),
		cmocka_unit_test(test_shared_association),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
