/*
 * Conformance: the MPA startup phase (RFC 5044 §7.1) against a raw peer.
 *
 * uiwarp as responder (it listens; the raw peer sends the Request) and as
 * initiator (it connects; the raw peer answers).  Each malformed frame
 * must end the connection as §7.1.1 / §7.1.2 prescribe: closed, no
 * Reply, nothing announced to the application (responder), or a
 * CONNECT_ERROR / REJECTED event (initiator), the QP left Idle.  The
 * negotiation of M and C (§7.1.1) is checked on the wire.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "cf_env.h"

/* ---- helpers ---------------------------------------------------------- */

static const uint8_t key_bad[16] = "MPA ID Req Frxme";

/* uiwarp as responder: opens the listener, connects the raw peer. */
static void responder_env(struct cf_env *e, int startup_ms)
{
	struct cf_opts o;

	cf_opts_init(&o);
	o.startup_timeout_ms = startup_ms;
	CF_OK(cf_setup(e, &o));
	CF_OK(rp_connect(&e->rp, e->port, 0));
	e->rp_open = true;
}

/* The responder must close without a Reply and tell the application
 * nothing (RFC 5044 §7.1.1 Key / Rev / PD_Length, §7.1.2 rules 2, 5, 9:
 * "close the connection and report an error locally"). */
static void expect_silent_close(struct cf_env *e)
{
	size_t extra = 0;
	int how = rp_wait_closed(&e->rp, &extra);

	CF_OK(how);
	if (extra)
		fail_msg("the responder sent %zu octets (a Reply?) before "
			 "closing", extra);
	CF_OK(cf_no_event(e));
	assert_int_equal(cf_qp_state(e, NULL), UIW_QPS_IDLE);
}

/* After a refused startup the listener still serves a good one. */
static void expect_listener_alive(struct cf_env *e)
{
	rp_close(&e->rp);
	e->rp_open = false;
	CF_OK(cf_connect(e));
	CF_OK(cf_prime(e));
}

/* uiwarp as initiator: connects, the raw peer accepts and reads the
 * Request, which must be a valid revision 1 Request (§7.1.1: key, R 0,
 * reserved bits 0, rev 1). */
static void initiator_env(struct cf_env *e, int timeout_ms)
{
	struct uiw_conn_param p = { .timeout_ms = timeout_ms, .mpa_rev = 1 };
	struct sockaddr_in a = { .sin_family = AF_INET };
	struct cf_opts o;

	cf_opts_init(&o);
	o.role = CF_RAW_RESPONDS;
	o.conn_timeout_ms = timeout_ms;
	CF_OK(cf_setup(e, &o));
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	a.sin_port = htons(e->rp_port);
	assert_int_equal(uiw_cm_connect(e->ch, e->qp, (struct sockaddr *)&a,
					sizeof(a), &p, &e->id), 0);
	CF_OK(rp_accept(&e->rp, e->rp_lfd));
	e->rp_open = true;
	CF_OK(rp_mpa_read_frame(&e->rp, false));
	assert_int_equal(e->rp.peer_rev, 1);
	assert_int_equal(e->rp.peer_flags & (UIW_MPA_F_R | UIW_MPA_F_RES), 0);
	/* RFC 5044 §4.4: CRCs by default. */
	assert_true(e->rp.peer_flags & UIW_MPA_F_C);
}

/* The initiator must report the failure and close; the QP stays Idle
 * and none of its work requests completes. */
static void expect_connect_error(struct cf_env *e, int status)
{
	struct uiw_cm_event ev;
	size_t extra = 0;

	CF_OK(cf_wait_event(e, UIW_CM_EVENT_CONNECT_ERROR, e->id, &ev));
	if (status)
		assert_int_equal(ev.status, status);
	else
		assert_true(ev.status < 0);
	CF_OK(rp_wait_closed(&e->rp, &extra));
	assert_int_equal(extra, 0);
	assert_int_equal(cf_qp_state(e, NULL), UIW_QPS_IDLE);
	CF_OK(cf_no_event(e));
	{
		struct uiw_wc wc;

		assert_int_equal(uiw_cq_poll(e->rcq, 1, &wc), 0);
		assert_int_equal(uiw_cq_poll(e->scq, 1, &wc), 0);
	}
}

/* ---- uiwarp as responder ---------------------------------------------- */

/* §7.1.1 Key, §7.1.2 rule 5: a wrong key closes the connection. */
static void test_req_bad_key(void **state)
{
	struct cf_env *e = *state;

	responder_env(e, 0);
	CF_OK(rp_mpa_send_frame_raw(&e->rp, key_bad, UIW_MPA_F_C, 1, 0,
				    NULL, 0));
	expect_silent_close(e);
	expect_listener_alive(e);
}

/* §7.1.2 rule 8: the Reply key sent to a responder (a
 * Responder/Responder or Initiator/Initiator mix-up) is refused. */
static void test_req_reply_key(void **state)
{
	struct cf_env *e = *state;

	responder_env(e, 0);
	CF_OK(rp_mpa_send_frame_raw(&e->rp, uiw_mpa_key_rep, UIW_MPA_F_C, 1,
				    0, NULL, 0));
	expect_silent_close(e);
	expect_listener_alive(e);
}

/* §7.1.1 Rev: a revision the receiver cannot interoperate with closes
 * the connection (3: no MPA revision; 0: the pre-IETF protocol, which
 * revision 1 RDMAP cannot speak, RFC 5040 §4.1). */
static void test_req_unknown_rev(void **state)
{
	struct cf_env *e = *state;
	static const uint8_t revs[] = { 3, 0, 0xff };
	size_t i;

	responder_env(e, 0);
	for (i = 0; i < sizeof(revs); i++) {
		if (i) {
			rp_close(&e->rp);
			CF_OK(rp_connect(&e->rp, e->port, 0));
		}
		CF_OK(rp_mpa_send_frame_raw(&e->rp, uiw_mpa_key_req,
					    UIW_MPA_F_C, revs[i], 0, NULL,
					    0));
		expect_silent_close(e);
	}
	expect_listener_alive(e);
}

/* §7.1.1 PD_Length, §7.1.2 rule 9: more than 512 octets of private data
 * closes the connection. */
static void test_req_pd_too_long(void **state)
{
	struct cf_env *e = *state;
	static uint8_t pd[600];

	responder_env(e, 0);
	memset(pd, 'x', sizeof(pd));
	CF_OK(rp_mpa_send_frame_raw(&e->rp, uiw_mpa_key_req, UIW_MPA_F_C, 1,
				    513, pd, 513));
	expect_silent_close(e);
	rp_close(&e->rp);
	CF_OK(rp_connect(&e->rp, e->port, 0));
	CF_OK(rp_mpa_send_frame_raw(&e->rp, uiw_mpa_key_req, UIW_MPA_F_C, 1,
				    0xffff, pd, sizeof(pd)));
	expect_silent_close(e);
	expect_listener_alive(e);
}

/* §7.1.1 PD_Length: fewer octets of private data than PD_Length says,
 * then the initiator's FIN: closed without a Reply. */
static void test_req_pd_short(void **state)
{
	struct cf_env *e = *state;
	uint8_t pd[40];

	responder_env(e, 0);
	memset(pd, 'p', sizeof(pd));
	CF_OK(rp_mpa_send_frame_raw(&e->rp, uiw_mpa_key_req, UIW_MPA_F_C, 1,
				    100, pd, sizeof(pd)));
	CF_OK(rp_shutdown_wr(&e->rp));
	expect_silent_close(e);
	expect_listener_alive(e);
}

/* §7.1.2 rules 2 and 4: the initiator sends nothing after its Request
 * before the Reply; octets that come with the Request are refused. */
static void test_req_extra_octets(void **state)
{
	struct cf_env *e = *state;
	uint8_t b[UIW_MPA_HDR_LEN + 8];
	struct uiw_mpa_frame f = { .reply = false, .flags = UIW_MPA_F_C,
				   .rev = 1 };

	responder_env(e, 0);
	assert_int_equal(uiw_mpa_frame_encode(b, sizeof(b), &f),
			 UIW_MPA_HDR_LEN);
	memset(b + UIW_MPA_HDR_LEN, 0, 8);    /* looks like an FPDU start */
	b[UIW_MPA_HDR_LEN + 1] = 2;
	CF_OK(rp_write_raw(&e->rp, b, sizeof(b)));
	expect_silent_close(e);
	expect_listener_alive(e);
}

/* The same after the application has seen the request: it learns of
 * the failure (CONNECT_ERROR), no Reply goes out, accept fails. */
static void test_req_extra_after_announce(void **state)
{
	struct cf_env *e = *state;
	struct uiw_cm_event ev;
	uint8_t junk[4] = { 0, 2, 0x41, 0x43 };
	size_t extra = 0;

	responder_env(e, 0);
	CF_OK(rp_mpa_send_frame(&e->rp, false, UIW_MPA_F_C, 1, "pd", 2));
	CF_OK(cf_wait_event(e, UIW_CM_EVENT_CONNECT_REQUEST, NULL, &ev));
	assert_int_equal(ev.private_data_len, 2);
	assert_memory_equal(ev.private_data, "pd", 2);
	e->id = ev.id;
	CF_OK(rp_write_raw(&e->rp, junk, sizeof(junk)));
	CF_OK(cf_wait_event(e, UIW_CM_EVENT_CONNECT_ERROR, e->id, &ev));
	assert_int_equal(ev.status, -EPROTO);
	CF_OK(rp_wait_closed(&e->rp, &extra));
	assert_int_equal(extra, 0);
	assert_true(uiw_cm_accept(e->id, e->qp, NULL) < 0);
	assert_int_equal(cf_qp_state(e, NULL), UIW_QPS_IDLE);
	assert_int_equal(uiw_cm_destroy_id(e->id), 0);
	e->id = NULL;
	expect_listener_alive(e);
}

/* §7.1.2 rules 8 and 10: a responder times out waiting for the Request
 * (a Responder/Responder start-up, or a peer holding resources). */
static void test_req_never_sent(void **state)
{
	struct cf_env *e = *state;
	int64_t t0;
	int64_t took;

	responder_env(e, 300);
	t0 = rp_now_ms();
	expect_silent_close(e);
	took = rp_now_ms() - t0;
	if (took < 250)
		fail_msg("closed after %lld ms, before the 300 ms startup "
			 "timeout", (long long)took);
	expect_listener_alive(e);
}

/* The same with a Request cut short (only part of the key). */
static void test_req_partial(void **state)
{
	struct cf_env *e = *state;
	int64_t t0, took;

	responder_env(e, 300);
	t0 = rp_now_ms();
	CF_OK(rp_write_raw(&e->rp, uiw_mpa_key_req, 10));
	expect_silent_close(e);
	took = rp_now_ms() - t0;
	if (took < 250)
		fail_msg("closed after %lld ms, before the 300 ms startup "
			 "timeout", (long long)took);
	expect_listener_alive(e);
}

/* §7.1.1: Res "MUST be set to zero when sending, and not checked on
 * reception"; R "is set to zero, and not checked on reception in the MPA
 * Request Frame": a Request with both set is accepted as any other. */
static void test_req_res_bits_ignored(void **state)
{
	struct cf_env *e = *state;
	struct uiw_cm_event ev;
	struct uiw_conn_param p = { .mpa_rev = 1 };

	responder_env(e, 0);
	CF_OK(rp_mpa_send_frame(&e->rp, false, UIW_MPA_F_C | UIW_MPA_F_R |
				0x0f, 1, NULL, 0));
	CF_OK(cf_wait_event(e, UIW_CM_EVENT_CONNECT_REQUEST, NULL, &ev));
	e->id = ev.id;
	assert_int_equal(uiw_cm_accept(e->id, e->qp, &p), 0);
	CF_OK(cf_wait_event(e, UIW_CM_EVENT_ESTABLISHED, e->id, NULL));
	CF_OK(rp_mpa_read_frame(&e->rp, true));
	assert_int_equal(e->rp.peer_flags & (UIW_MPA_F_R | UIW_MPA_F_RES), 0);
	rp_full_operation(&e->rp, UIW_MPA_F_C);
	CF_OK(cf_prime(e));
	CF_OK(cf_check_mem(e));
}

/* §7.1.2 rules 2 and 6: a rejection is a Reply with R set, with the
 * ULP's private data, and nothing else (no FPDU). */
static void test_reject_sends_r(void **state)
{
	struct cf_env *e = *state;
	struct uiw_cm_event ev;
	size_t extra = 0;

	responder_env(e, 0);
	CF_OK(rp_mpa_send_frame(&e->rp, false, UIW_MPA_F_C, 1, "hello?", 6));
	CF_OK(cf_wait_event(e, UIW_CM_EVENT_CONNECT_REQUEST, NULL, &ev));
	assert_int_equal(ev.private_data_len, 6);
	assert_memory_equal(ev.private_data, "hello?", 6);
	assert_int_equal(ev.mpa.rev, 1);
	assert_true(ev.mpa.peer_crc);
	assert_false(ev.mpa.peer_markers);
	assert_int_equal(uiw_cm_reject(ev.id, "no", 2), 0);
	CF_OK(rp_mpa_read_frame(&e->rp, true));
	assert_true(e->rp.peer_flags & UIW_MPA_F_R);
	assert_int_equal(e->rp.peer_flags & UIW_MPA_F_RES, 0);
	assert_int_equal(e->rp.peer_rev, 1);
	assert_int_equal(e->rp.peer_pd_len, 2);
	assert_memory_equal(e->rp.peer_pd, "no", 2);
	CF_OK(rp_wait_closed(&e->rp, &extra));
	assert_int_equal(extra, 0);
	assert_int_equal(uiw_cm_destroy_id(ev.id), 0);
	CF_OK(cf_no_event(e));
	expect_listener_alive(e);
}

/* §7.1.1 M and C as the responder sees them: the initiator asks for
 * markers and no CRC; uiwarp (defaults: CRC on, no markers) answers C
 * set, M clear.  Then CRCs go both ways and only uiwarp inserts
 * markers; the received FPDUs are checked with exactly that framing. */
static void test_negotiate_responder(void **state)
{
	struct cf_env *e = *state;
	struct uiw_qp_attr a;
	struct cf_opts o;
	uint8_t big[700];
	size_t i;

	cf_opts_init(&o);
	o.raw_flags = UIW_MPA_F_M;
	CF_OK(cf_setup(e, &o));
	CF_OK(cf_connect(e));
	assert_true(e->rp.peer_flags & UIW_MPA_F_C);
	assert_false(e->rp.peer_flags & UIW_MPA_F_M);
	assert_true(e->rp.crc && e->rp.markers_rx && !e->rp.markers_tx);
	CF_OK(cf_prime(e));
	cf_qp_state(e, &a);
	assert_true(a.crc);
	assert_true(a.markers_tx);
	assert_false(a.markers_rx);
	/* A Send long enough to cross a marker position on the way back:
	 * rp_recv_seg checks every marker and the CRC. */
	for (i = 0; i < sizeof(big); i++)
		big[i] = (uint8_t)(i * 7);
	memcpy(e->r[CF_SRC].p, big, sizeof(big));
	cf_mem_placed(e, e->r[CF_SRC].p, big, sizeof(big));
	CF_OK(cf_post_send(e, 0x900, UIW_WR_SEND, 0, CF_SRC, 0, sizeof(big),
			   0, 0));
	CF_OK(rp_recv_seg(&e->rp, &e->seg));
	assert_int_equal(e->seg.plen, sizeof(big));
	assert_memory_equal(e->seg.pl, big, sizeof(big));
	CF_OK(cf_wait_wc(e, e->scq, 0x900, UIW_WC_SUCCESS, NULL));
	CF_OK(cf_check_mem(e));
}

/* §7.1.1 C: when neither side sets C the CRC field "MUST NOT be
 * checked" and "MUST be considered valid regardless of its contents". */
static void test_negotiate_crc_off(void **state)
{
	struct cf_env *e = *state;
	struct uiw_qp_attr a;
	struct cf_opts o;
	uint8_t u[UIW_DDP_UNTAGGED_HDR_LEN + 8], f[64];
	size_t n, hl;
	struct uiw_wc wc;

	cf_opts_init(&o);
	o.raw_flags = 0;
	o.crc = UIW_OPT_OFF;
	CF_OK(cf_setup(e, &o));
	CF_OK(cf_connect(e));
	assert_false(e->rp.peer_flags & UIW_MPA_F_C);
	assert_false(e->rp.crc);
	cf_qp_state(e, &a);
	assert_false(a.crc);
	CF_OK(cf_prime(e));
	hl = rp_hdr_untagged(u, UIW_OP_SEND, true, 0, e->rp.msn[0]++, 0, 0);
	memcpy(u + hl, "no crc!!", 8);
	n = rp_fpdu_build(&e->rp, f, sizeof(f), u, sizeof(u));
	assert_true(n > 0);
	f[n - 4] = 0xde;
	f[n - 3] = 0xad;
	f[n - 2] = 0xbe;
	f[n - 1] = 0xef;
	CF_OK(rp_send_stream(&e->rp, f, n));
	CF_OK(cf_wait_wc(e, e->rcq, CF_WR_RECV(1), UIW_WC_SUCCESS, &wc));
	assert_int_equal(wc.byte_len, 8);
	cf_mem_placed(e, e->r[CF_RECV].p + e->o.recv_len, "no crc!!", 8);
	CF_OK(cf_check_mem(e));
}

/* ---- uiwarp as initiator ----------------------------------------------- */

/* §7.1.2 rule 3: a Reply with R set ends MPA; uiwarp reports REJECTED
 * with the responder's private data and sends no FPDU.  The QP stays
 * Idle and can be connected again. */
static void test_rep_r_set(void **state)
{
	struct cf_env *e = *state;
	struct uiw_conn_param p = { .mpa_rev = 1 };
	struct sockaddr_in a = { .sin_family = AF_INET };
	struct uiw_cm_event ev;
	size_t extra = 0;

	initiator_env(e, 0);
	CF_OK(rp_mpa_send_frame(&e->rp, true, UIW_MPA_F_R | UIW_MPA_F_C, 1,
				"go away", 7));
	CF_OK(cf_wait_event(e, UIW_CM_EVENT_REJECTED, e->id, &ev));
	assert_int_equal(ev.private_data_len, 7);
	assert_memory_equal(ev.private_data, "go away", 7);
	CF_OK(rp_wait_closed(&e->rp, &extra));
	assert_int_equal(extra, 0);
	assert_int_equal(cf_qp_state(e, NULL), UIW_QPS_IDLE);
	CF_OK(cf_no_event(e));
	/* Connect again with the same QP; this time accepted. */
	assert_int_equal(uiw_cm_destroy_id(e->id), 0);
	e->id = NULL;
	rp_close(&e->rp);
	e->rp_open = false;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	a.sin_port = htons(e->rp_port);
	assert_int_equal(uiw_cm_connect(e->ch, e->qp, (struct sockaddr *)&a,
					sizeof(a), &p, &e->id), 0);
	CF_OK(rp_accept(&e->rp, e->rp_lfd));
	e->rp_open = true;
	CF_OK(rp_mpa_respond(&e->rp, UIW_MPA_F_C, NULL, 0));
	CF_OK(cf_wait_event(e, UIW_CM_EVENT_ESTABLISHED, e->id, NULL));
	CF_OK(cf_prime(e));
}

/* §7.1.1 Key, §7.1.2 rule 5. */
static void test_rep_bad_key(void **state)
{
	struct cf_env *e = *state;

	initiator_env(e, 0);
	CF_OK(rp_mpa_send_frame_raw(&e->rp, key_bad, UIW_MPA_F_C, 1, 0,
				    NULL, 0));
	expect_connect_error(e, -EPROTO);
}

/* §7.1.2 rule 8: Initiator/Initiator: the other end sent a Request. */
static void test_rep_request_key(void **state)
{
	struct cf_env *e = *state;

	initiator_env(e, 0);
	CF_OK(rp_mpa_send_frame(&e->rp, false, UIW_MPA_F_C, 1, NULL, 0));
	expect_connect_error(e, -EPROTO);
}

/* §7.1.1 Rev. */
static void test_rep_unknown_rev(void **state)
{
	struct cf_env *e = *state;

	initiator_env(e, 0);
	CF_OK(rp_mpa_send_frame_raw(&e->rp, uiw_mpa_key_rep, UIW_MPA_F_C, 3,
				    0, NULL, 0));
	expect_connect_error(e, -EPROTO);
}

/* §7.1.1 PD_Length above 512. */
static void test_rep_pd_too_long(void **state)
{
	struct cf_env *e = *state;
	static uint8_t pd[600];

	initiator_env(e, 0);
	CF_OK(rp_mpa_send_frame_raw(&e->rp, uiw_mpa_key_rep, UIW_MPA_F_C, 1,
				    600, pd, sizeof(pd)));
	expect_connect_error(e, -EPROTO);
}

/* §7.1.2 rule 10: a timeout while waiting for the Reply. */
static void test_rep_never_sent(void **state)
{
	struct cf_env *e = *state;
	int64_t t0 = rp_now_ms(), took;

	initiator_env(e, 300);
	expect_connect_error(e, -ETIMEDOUT);
	took = rp_now_ms() - t0;
	if (took < 250)
		fail_msg("gave up after %lld ms, before its 300 ms timeout",
			 (long long)took);
}

/* §7.1.1 M and C as the initiator sees them: uiwarp asks for markers
 * (M) with CRC off; the responder sets C: CRC both ways, markers only
 * from the raw peer to uiwarp. */
static void test_negotiate_initiator(void **state)
{
	struct cf_env *e = *state;
	struct uiw_qp_attr a;
	struct cf_opts o;
	uint8_t big[1200];
	struct uiw_wc wc;
	size_t i;

	cf_opts_init(&o);
	o.role = CF_RAW_RESPONDS;
	o.raw_flags = UIW_MPA_F_C;
	o.crc = UIW_OPT_OFF;
	o.markers = UIW_OPT_ON;
	o.recv_len = 1200;
	o.nrecv = 2;
	CF_OK(cf_setup(e, &o));
	CF_OK(cf_connect(e));
	assert_true(e->rp.peer_flags & UIW_MPA_F_M);
	assert_false(e->rp.peer_flags & UIW_MPA_F_C);
	assert_true(e->rp.crc && e->rp.markers_tx && !e->rp.markers_rx);
	cf_qp_state(e, &a);
	assert_true(a.crc);
	assert_false(a.markers_tx);
	assert_true(a.markers_rx);
	CF_OK(cf_prime(e));
	/* A Send across two marker positions, with markers and CRC. */
	for (i = 0; i < sizeof(big); i++)
		big[i] = (uint8_t)(i * 13 + 1);
	CF_OK(rp_send_send(&e->rp, UIW_OP_SEND, 0, big, sizeof(big)));
	CF_OK(cf_wait_wc(e, e->rcq, CF_WR_RECV(0), UIW_WC_SUCCESS, &wc));
	assert_int_equal(wc.byte_len, sizeof(big));
	assert_memory_equal(e->r[CF_RECV].p, big, sizeof(big));
	cf_mem_placed(e, e->r[CF_RECV].p, big, sizeof(big));
	CF_OK(cf_check_mem(e));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_req_bad_key, cf_state_new,
						cf_state_free),
		cmocka_unit_test_setup_teardown(test_req_reply_key, cf_state_new,
						cf_state_free),
		cmocka_unit_test_setup_teardown(test_req_unknown_rev, cf_state_new,
						cf_state_free),
		cmocka_unit_test_setup_teardown(test_req_pd_too_long, cf_state_new,
						cf_state_free),
		cmocka_unit_test_setup_teardown(test_req_pd_short, cf_state_new,
						cf_state_free),
		cmocka_unit_test_setup_teardown(test_req_extra_octets, cf_state_new,
						cf_state_free),
		cmocka_unit_test_setup_teardown(test_req_extra_after_announce,
						cf_state_new, cf_state_free),
		cmocka_unit_test_setup_teardown(test_req_never_sent, cf_state_new,
						cf_state_free),
		cmocka_unit_test_setup_teardown(test_req_partial, cf_state_new,
						cf_state_free),
		cmocka_unit_test_setup_teardown(test_req_res_bits_ignored,
						cf_state_new, cf_state_free),
		cmocka_unit_test_setup_teardown(test_reject_sends_r, cf_state_new,
						cf_state_free),
		cmocka_unit_test_setup_teardown(test_negotiate_responder,
						cf_state_new, cf_state_free),
		cmocka_unit_test_setup_teardown(test_negotiate_crc_off, cf_state_new,
						cf_state_free),
		cmocka_unit_test_setup_teardown(test_rep_r_set, cf_state_new,
						cf_state_free),
		cmocka_unit_test_setup_teardown(test_rep_bad_key, cf_state_new,
						cf_state_free),
		cmocka_unit_test_setup_teardown(test_rep_request_key, cf_state_new,
						cf_state_free),
		cmocka_unit_test_setup_teardown(test_rep_unknown_rev, cf_state_new,
						cf_state_free),
		cmocka_unit_test_setup_teardown(test_rep_pd_too_long, cf_state_new,
						cf_state_free),
		cmocka_unit_test_setup_teardown(test_rep_never_sent, cf_state_new,
						cf_state_free),
		cmocka_unit_test_setup_teardown(test_negotiate_initiator,
						cf_state_new, cf_state_free),
	};

	return cmocka_run_group_tests_name("conformance: MPA startup", tests,
					   NULL, NULL);
}
