/*
 * The MPA startup object (cm/mpa_startup.c) without sockets: the frames
 * it builds for both roles and revisions (RFC 5044 §7.1.1, RFC 6581 §6),
 * what it decides on the frames it is fed, octet by octet or in one
 * piece, the exact octet where Full Operation starts, octets after a
 * Request (RFC 5044 §7.1.2 rule 2), rejects (strict ones too, RFC 6581
 * §9.1), the Terminates of RFC 6581 §9, and the startup deadline with
 * the time as an input (RFC 5044 §7.1.2 rule 10).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include <errno.h>
#include <uiwarp/cm.h>

#include "cm/mpa_startup.h"
#include "wire/mpa.h"

#define T0 1000
#define TIMEOUT 500

static const uint8_t key_req[16] = "MPA ID Req Frame";
static const uint8_t key_rep[16] = "MPA ID Rep Frame";

static struct uiw_mpa_side side(uint32_t ird, uint32_t ord, bool p2p,
				uint8_t rtr, bool strict, const char *pd)
{
	struct uiw_mpa_side me = {
		.crc = true,
		.l = { .ird = ird, .ord = ord, .max_ird = 16, .p2p = p2p,
		       .rtr = rtr ? rtr : UIW_RTR_ALL, .strict = strict },
		.pd = (const uint8_t *)pd,
		.pd_len = pd ? (uint16_t)strlen(pd) : 0,
	};

	return me;
}

/* A frame by hand: key, flags, rev, then the field (when v2) and pd. */
static size_t frame(uint8_t *b, const uint8_t key[16], uint8_t flags,
		    uint8_t rev, const char *v2hex, const char *pd)
{
	size_t n = 20, pl = pd ? strlen(pd) : 0;
	unsigned i, x;

	memcpy(b, key, 16);
	b[16] = flags;
	b[17] = rev;
	if (v2hex) {
		for (i = 0; i < 4; i++) {
			assert_int_equal(sscanf(v2hex + 2 * i, "%2x", &x), 1);
			b[n++] = (uint8_t)x;
		}
	}
	if (pl)
		memcpy(b + n, pd, pl);
	n += pl;
	b[18] = (uint8_t)((n - 20) >> 8);
	b[19] = (uint8_t)(n - 20);
	return n;
}

/* Takes everything s has to send into out; returns its length. */
static size_t drain(struct uiw_mpa_startup *s, uint8_t *out)
{
	size_t len;
	const uint8_t *p = uiw_mpa_startup_out(s, &len);

	memcpy(out, p, len);
	uiw_mpa_startup_sent(s, len);
	return len;
}

/* Feeds b octet by octet, as a reader that obeys want() would; returns
 * the octets used.  want() never reaches past the frame. */
static size_t feed_octets(struct uiw_mpa_startup *s, const uint8_t *b,
			  size_t n, size_t frame_len)
{
	size_t i = 0;

	while (i < n && uiw_mpa_startup_want(s) > 0) {
		if (s->state == UIW_MPA_SU_WAIT_REQ ||
		    s->state == UIW_MPA_SU_WAIT_REP)
			assert_true(uiw_mpa_startup_want(s) <= frame_len - i);
		assert_int_equal(uiw_mpa_startup_input(s, b + i, 1), 1);
		i++;
	}
	return i;
}

static void test_initiator_requests(void **state)
{
	struct uiw_mpa_side me = side(4, 2, false, 0, false, "hi");
	struct uiw_mpa_startup s;
	uint8_t b[600], want[64];
	size_t n;

	(void)state;
	/* Revision 2: C and S set, the IRD/ORD field, then "hi". */
	uiw_mpa_startup_initiator(&s, 2, &me, T0, TIMEOUT);
	assert_int_equal(s.state, UIW_MPA_SU_SEND_REQ);
	assert_int_equal(uiw_mpa_startup_want(&s), 0);
	n = drain(&s, b);
	assert_int_equal(n, frame(want, key_req, 0x50, 2, "00040002", "hi"));
	assert_memory_equal(b, want, n);
	assert_int_equal(s.state, UIW_MPA_SU_WAIT_REP);
	assert_int_equal(s.tx_startup, n);
	assert_int_equal(uiw_mpa_startup_want(&s), 20);

	/* Revision 1: a plain RFC 5044 Request; markers asked for. */
	me.markers = true;
	uiw_mpa_startup_initiator(&s, 1, &me, T0, TIMEOUT);
	n = drain(&s, b);
	assert_int_equal(n, frame(want, key_req, 0xc0, 1, NULL, "hi"));
	assert_memory_equal(b, want, n);

	/* Peer-to-peer: A and the RTR types offered (Write, Read). */
	me = side(4, 2, true, UIW_RTR_WRITE | UIW_RTR_READ, false, NULL);
	uiw_mpa_startup_initiator(&s, 2, &me, T0, TIMEOUT);
	n = drain(&s, b);
	assert_int_equal(n, frame(want, key_req, 0x50, 2, "8004c002", NULL));
	assert_memory_equal(b, want, n);

	/* A Request that cannot be built fails at once. */
	me.pd = b;
	me.pd_len = 509;
	uiw_mpa_startup_initiator(&s, 2, &me, T0, TIMEOUT);
	assert_int_equal(s.state, UIW_MPA_SU_FAILED);
	assert_int_equal(s.status, -EINVAL);
}

/* An accepting Reply followed by the responder's first octets of Full
 * Operation: the object takes the Reply and nothing more, in one piece
 * or octet by octet. */
static void test_reply_accepted_exact_end(void **state)
{
	struct uiw_mpa_side me = side(4, 2, false, 0, false, NULL);
	struct uiw_mpa_startup s;
	uint8_t b[600], out[600];
	size_t n, used;
	int split;

	(void)state;
	n = frame(b, key_rep, 0x10, 2, "00020001", "ok");
	memcpy(b + n, "\x00\x0e\xc1\x40", 4);
	for (split = 0; split < 2; split++) {
		uiw_mpa_startup_initiator(&s, 2, &me, T0, TIMEOUT);
		drain(&s, out);
		used = split ? feed_octets(&s, b, n + 4, n) :
			       uiw_mpa_startup_input(&s, b, n + 4);
		assert_int_equal(used, n);
		assert_int_equal(s.state, UIW_MPA_SU_FULL_OP);
		assert_int_equal(uiw_mpa_startup_want(&s), 0);
		assert_int_equal(s.rx_startup, n);
		/* C: ours; M: nobody's. */
		assert_true(s.fr.crc);
		assert_false(s.fr.markers_tx);
		assert_false(s.fr.markers_rx);
		assert_true(s.peer_enh);
		assert_int_equal(s.peer_pd_len, 2);
		assert_memory_equal(s.peer_pd, "ok", 2);
		/* RFC 6581 §9.1: ORD at most the responder's IRD 2, IRD at
		 * least its ORD 1. */
		assert_int_equal(s.nego.ord, 2);
		assert_int_equal(s.nego.ird, 4);
		assert_int_equal(s.deadline_ms, INT64_MAX);
	}
}

static void expect_reply_fails(uint8_t rev, const uint8_t *b, size_t n,
			       int status)
{
	struct uiw_mpa_side me = side(4, 2, false, 0, false, NULL);
	struct uiw_mpa_startup s;
	uint8_t out[600];

	uiw_mpa_startup_initiator(&s, rev, &me, T0, TIMEOUT);
	drain(&s, out);
	uiw_mpa_startup_input(&s, b, n);
	assert_int_equal(s.state, UIW_MPA_SU_FAILED);
	assert_int_equal(s.status, status);
	assert_non_null(s.why);
	assert_int_equal(uiw_mpa_startup_want(&s), 0);
	out[0] = 0;
	assert_int_equal((uiw_mpa_startup_out(&s, &n), n), 0);
}

static void test_reply_refused(void **state)
{
	struct uiw_mpa_side me = side(4, 2, false, 0, false, NULL);
	struct uiw_mpa_startup s;
	uint8_t b[600], out[600];
	size_t n;
	int i;

	(void)state;
	/* RFC 5044 §7.1.2 rule 5: a Request key where a Reply's belongs,
	 * refused at the first octet that differs ('q' of "Req"). */
	n = frame(b, key_req, 0x40, 1, NULL, NULL);
	uiw_mpa_startup_initiator(&s, 1, &me, T0, TIMEOUT);
	drain(&s, out);
	for (i = 0; s.state == UIW_MPA_SU_WAIT_REP; i++)
		uiw_mpa_startup_input(&s, b + i, 1);
	assert_int_equal(i, 10);
	assert_int_equal(s.status, -EPROTO);
	/* A revision above the one asked for (RFC 5044 §7.1.1 Rev). */
	n = frame(b, key_rep, 0x40, 2, NULL, NULL);
	expect_reply_fails(1, b, n, -EPROTO);
	n = frame(b, key_rep, 0x40, 3, NULL, NULL);
	expect_reply_fails(2, b, n, -EPROTO);
	/* RFC 6581 §10: an enhanced Request gets an enhanced Reply. */
	n = frame(b, key_rep, 0x40, 2, NULL, NULL);
	expect_reply_fails(2, b, n, -EPROTO);
	/* RFC 6581 §6: S without room for the field. */
	n = frame(b, key_rep, 0x50, 2, NULL, "ab");
	expect_reply_fails(2, b, n, -EPROTO);
	/* RFC 5044 §7.1.2 rule 9: PD_Length above 512. */
	n = frame(b, key_rep, 0x40, 1, NULL, NULL);
	b[18] = 0x02;
	b[19] = 0x01;
	expect_reply_fails(1, b, n, -EPROTO);
	/* The peer closes before the Reply is whole. */
	uiw_mpa_startup_initiator(&s, 2, &me, T0, TIMEOUT);
	drain(&s, out);
	uiw_mpa_startup_input(&s, b, 10);
	uiw_mpa_startup_eof(&s);
	assert_int_equal(s.state, UIW_MPA_SU_FAILED);
	assert_int_equal(s.status, -ECONNRESET);
}

static void test_reply_rejected(void **state)
{
	struct uiw_mpa_side me = side(4, 2, false, 0, false, NULL);
	struct uiw_mpa_startup s;
	uint8_t b[600], out[600];
	size_t n;

	(void)state;
	n = frame(b, key_rep, 0x30, 2, "00080008", "no");
	uiw_mpa_startup_initiator(&s, 2, &me, T0, TIMEOUT);
	drain(&s, out);
	assert_int_equal(uiw_mpa_startup_input(&s, b, n), n);
	assert_int_equal(s.state, UIW_MPA_SU_REJECTED);
	assert_int_equal(s.status, -ECONNREFUSED);
	/* RFC 6581 §9.1: the responder's values reach the ULP. */
	assert_int_equal(s.peer_v2.ird, 8);
	assert_int_equal(s.peer_pd_len, 2);
}

/* RFC 6581 §9.1 and §9.2: negotiations that fail after an accepting
 * Reply end in the initiator's Terminate, framed as negotiated. */
static void test_reply_terminates(void **state)
{
	struct uiw_mpa_side me = side(1, 1, false, 0, true, NULL);
	struct uiw_mpa_startup s;
	uint8_t b[600], out[600], term[64];
	size_t n, tn;

	(void)state;
	/* Strict IRD 1 against the responder's ORD 4: 2/0/6. */
	n = frame(b, key_rep, 0xd0, 2, "00010004", NULL);
	uiw_mpa_startup_initiator(&s, 2, &me, T0, TIMEOUT);
	drain(&s, out);
	uiw_mpa_startup_input(&s, b, n);
	assert_int_equal(s.state, UIW_MPA_SU_TERMINATE);
	assert_int_equal(s.status, -ENOBUFS);
	assert_true(s.fr.markers_tx);
	tn = uiw_mpa2_term_fpdu(term, sizeof(term),
				UIW_E_MPA_INSUFFICIENT_IRD, true, true);
	assert_int_equal(drain(&s, out), tn);
	assert_memory_equal(out, term, tn);

	/* Peer-to-peer with Send only, the responder accepts Read only:
	 * 2/0/7. */
	me = side(4, 4, true, UIW_RTR_SEND, false, NULL);
	n = frame(b, key_rep, 0x10, 2, "80040004", NULL);
	b[22] |= 0x40;          /* D: Read */
	uiw_mpa_startup_initiator(&s, 2, &me, T0, TIMEOUT);
	drain(&s, out);
	uiw_mpa_startup_input(&s, b, n);
	assert_int_equal(s.state, UIW_MPA_SU_TERMINATE);
	assert_int_equal(s.status, -ENOPROTOOPT);
	/* CRC: the initiator asked for it. */
	tn = uiw_mpa2_term_fpdu(term, sizeof(term), UIW_E_MPA_NO_MATCHING_RTR,
				false, true);
	assert_int_equal(drain(&s, out), tn);
	assert_memory_equal(out, term, tn);

	/* RFC 6581 §9.3: a local error after an accepting enhanced Reply;
	 * an unenhanced one just fails. */
	me = side(4, 4, false, 0, false, NULL);
	n = frame(b, key_rep, 0x50, 2, "00040004", NULL);
	uiw_mpa_startup_initiator(&s, 2, &me, T0, TIMEOUT);
	drain(&s, out);
	uiw_mpa_startup_input(&s, b, n);
	uiw_mpa_startup_abort(&s, UIW_E_MPA_LOCAL_CATA, -ENOMEM, "test");
	assert_int_equal(s.state, UIW_MPA_SU_TERMINATE);
	assert_int_equal(s.status, -ENOMEM);
	n = frame(b, key_rep, 0x40, 1, NULL, NULL);
	uiw_mpa_startup_initiator(&s, 1, &me, T0, TIMEOUT);
	drain(&s, out);
	uiw_mpa_startup_input(&s, b, n);
	uiw_mpa_startup_abort(&s, UIW_E_MPA_LOCAL_CATA, -ENOMEM, "test");
	assert_int_equal(s.state, UIW_MPA_SU_FAILED);
}

/* Both roles against each other, through their own octets only. */
static void pair(uint8_t rev, struct uiw_mpa_side *ci,
		 struct uiw_mpa_side *re, struct uiw_mpa_startup *c,
		 struct uiw_mpa_startup *r)
{
	uint8_t b[600];
	size_t n;

	uiw_mpa_startup_initiator(c, rev, ci, T0, TIMEOUT);
	uiw_mpa_startup_responder(r, 2, T0, TIMEOUT);
	n = drain(c, b);
	assert_int_equal(feed_octets(r, b, n, n), n);
	assert_int_equal(r->state, UIW_MPA_SU_REQ_RECEIVED);
	assert_int_equal(r->rx_startup, n);
	assert_int_equal(uiw_mpa_startup_accept(r, re, T0 + 10, TIMEOUT), 0);
	assert_int_equal(r->state, UIW_MPA_SU_SEND_REP);
	n = drain(r, b);
	assert_int_equal(r->state, UIW_MPA_SU_FULL_OP);
	assert_int_equal(r->tx_startup, n);
	assert_int_equal(uiw_mpa_startup_input(c, b, n), n);
	assert_int_equal(c->state, UIW_MPA_SU_FULL_OP);
	assert_int_equal(c->rx_startup, r->tx_startup);
	assert_int_equal(c->tx_startup, r->rx_startup);
}

static void test_pair(void **state)
{
	struct uiw_mpa_side ci = side(2, 8, true, UIW_RTR_WRITE, false, "c");
	struct uiw_mpa_side re = side(16, 4, false, 0, false, "r");
	struct uiw_mpa_startup c, r;

	(void)state;
	re.markers = true;
	pair(2, &ci, &re, &c, &r);
	/* RFC 6581 §9.1: the responder's ORD at most the initiator's IRD,
	 * its IRD at least the initiator's ORD; §9.2: Write. */
	assert_int_equal(r.nego.ord, 2);
	assert_int_equal(r.nego.ird, 16);
	assert_true(r.nego.p2p && c.nego.p2p);
	assert_int_equal(c.nego.rtr, UIW_RTR_WRITE);
	assert_true(r.nego.rtr & UIW_RTR_WRITE);
	/* RFC 5044 §7.1.1: markers towards the side that set M. */
	assert_true(r.fr.markers_rx && c.fr.markers_tx);
	assert_false(r.fr.markers_tx || c.fr.markers_rx);
	assert_memory_equal(r.peer_pd, "c", 1);
	assert_memory_equal(c.peer_pd, "r", 1);

	/* Revision 1: no field, each side keeps its values; the Reply
	 * speaks revision 1 (RFC 6581 §10). */
	ci = side(2, 8, false, 0, false, NULL);
	pair(1, &ci, &re, &c, &r);
	assert_false(r.peer_enh || c.peer_enh);
	assert_int_equal(c.peer_rev, 1);
	assert_int_equal(r.nego.ird, 16);
	assert_int_equal(c.nego.ord, 8);
}

static struct uiw_mpa_startup *request_in(struct uiw_mpa_startup *r,
					  uint8_t max_rev, const uint8_t *b,
					  size_t n)
{
	uiw_mpa_startup_responder(r, max_rev, T0, TIMEOUT);
	uiw_mpa_startup_input(r, b, n);
	return r;
}

static void test_responder_refuses(void **state)
{
	struct uiw_mpa_startup r;
	uint8_t b[600];
	size_t n;

	(void)state;
	/* RFC 5044 §7.1.2 rule 2: an octet after the Request, in the same
	 * piece or later, before the Reply is out. */
	n = frame(b, key_req, 0x40, 1, NULL, NULL);
	b[n] = 0;
	assert_int_equal(uiw_mpa_startup_input(
		(uiw_mpa_startup_responder(&r, 2, T0, TIMEOUT), &r), b, n + 1),
		n + 1);
	assert_int_equal(r.state, UIW_MPA_SU_FAILED);
	assert_int_equal(r.status, -EPROTO);
	request_in(&r, 2, b, n);
	assert_int_equal(r.state, UIW_MPA_SU_REQ_RECEIVED);
	assert_int_equal(uiw_mpa_startup_want(&r), 1);
	uiw_mpa_startup_input(&r, b, 1);
	assert_int_equal(r.state, UIW_MPA_SU_FAILED);
	/* A Reply key, a revision above the listener's, S without room. */
	n = frame(b, key_rep, 0x40, 1, NULL, NULL);
	assert_int_equal(request_in(&r, 2, b, n)->state, UIW_MPA_SU_FAILED);
	n = frame(b, key_req, 0x50, 2, "00010001", NULL);
	assert_int_equal(request_in(&r, 1, b, n)->state, UIW_MPA_SU_FAILED);
	n = frame(b, key_req, 0x50, 2, NULL, "abc");
	assert_int_equal(request_in(&r, 2, b, n)->state, UIW_MPA_SU_FAILED);
	/* RFC 6581 §6: S is not checked in revision 1. */
	n = frame(b, key_req, 0x50, 1, NULL, "abc");
	assert_int_equal(request_in(&r, 2, b, n)->state,
			 UIW_MPA_SU_REQ_RECEIVED);
	assert_false(r.peer_enh);
	assert_int_equal(r.peer_pd_len, 3);
	/* The peer closes after its Request. */
	uiw_mpa_startup_eof(&r);
	assert_int_equal(r.state, UIW_MPA_SU_FAILED);
	assert_int_equal(r.status, -ECONNRESET);
}

static void test_responder_reject(void **state)
{
	struct uiw_mpa_side re = side(4, 8, false, 0, true, "need more");
	struct uiw_mpa2_local dev = { .ird = 16, .ord = 16, .max_ird = 16,
				      .rtr = UIW_RTR_ALL };
	struct uiw_mpa_startup r;
	uint8_t b[600], want[64], big[600] = { 0 };
	size_t n;

	(void)state;
	/* The ULP rejects an enhanced Request: R and S, the device's
	 * values, its private data; then MPA is over. */
	n = frame(b, key_req, 0x50, 2, "00020002", NULL);
	request_in(&r, 2, b, n);
	assert_int_equal(uiw_mpa_startup_reject(&r, &dev, big, 509, T0,
						TIMEOUT), -EINVAL);
	assert_int_equal(r.state, UIW_MPA_SU_REQ_RECEIVED);
	assert_int_equal(uiw_mpa_startup_reject(&r, &dev,
						(const uint8_t *)"no", 2, T0,
						TIMEOUT), 0);
	n = drain(&r, b);
	assert_int_equal(n, frame(want, key_rep, 0x30, 2, "00100002", "no"));
	assert_memory_equal(b, want, n);
	assert_int_equal(r.state, UIW_MPA_SU_REJECTED);

	/* A strict responder whose ORD 8 exceeds the initiator's IRD 2
	 * rejects, naming the ORD it needs (RFC 6581 §9.1). */
	n = frame(b, key_req, 0x50, 2, "00020002", NULL);
	request_in(&r, 2, b, n);
	assert_int_equal(uiw_mpa_startup_accept(&r, &re, T0, TIMEOUT),
			 -ENOBUFS);
	assert_int_equal(r.state, UIW_MPA_SU_SEND_REJ);
	n = drain(&r, b);
	assert_int_equal(b[16] & 0x20, 0x20);
	assert_int_equal(b[22] << 8 | b[23], 8);
	assert_memory_equal(b + 24, "need more", 9);
	assert_int_equal(r.state, UIW_MPA_SU_REJECTED);

	/* Accept checks its private data against the Request's format. */
	n = frame(b, key_req, 0x50, 2, "00100010", NULL);
	request_in(&r, 2, b, n);
	re = side(4, 4, false, 0, false, NULL);
	re.pd = big;
	re.pd_len = 509;
	assert_int_equal(uiw_mpa_startup_accept(&r, &re, T0, TIMEOUT),
			 -EINVAL);
	assert_int_equal(r.state, UIW_MPA_SU_REQ_RECEIVED);
}

/* RFC 5044 §7.1.2 rules 8 and 10: the deadline, from the time given. */
static void test_deadline(void **state)
{
	struct uiw_mpa_side me = side(4, 4, false, 0, false, NULL);
	struct uiw_mpa_startup r;
	uint8_t b[600];
	size_t n;

	(void)state;
	uiw_mpa_startup_responder(&r, 2, T0, TIMEOUT);
	assert_int_equal(r.deadline_ms, T0 + TIMEOUT);
	uiw_mpa_startup_input(&r, key_req, 10);
	uiw_mpa_startup_tick(&r, T0 + TIMEOUT - 1);
	assert_int_equal(r.state, UIW_MPA_SU_WAIT_REQ);
	uiw_mpa_startup_tick(&r, T0 + TIMEOUT);
	assert_int_equal(r.state, UIW_MPA_SU_FAILED);
	assert_int_equal(r.status, -ETIMEDOUT);

	/* No deadline while the ULP decides; the Reply has its own. */
	n = frame(b, key_req, 0x40, 1, NULL, NULL);
	request_in(&r, 2, b, n);
	uiw_mpa_startup_tick(&r, T0 + 100 * TIMEOUT);
	assert_int_equal(r.state, UIW_MPA_SU_REQ_RECEIVED);
	assert_int_equal(uiw_mpa_startup_accept(&r, &me, T0 + 5000, 20), 0);
	uiw_mpa_startup_sent(&r, 5);
	uiw_mpa_startup_tick(&r, T0 + 5019);
	assert_int_equal(r.state, UIW_MPA_SU_SEND_REP);
	uiw_mpa_startup_tick(&r, T0 + 5020);
	assert_int_equal(r.state, UIW_MPA_SU_FAILED);
	/* Over is over: later time changes nothing. */
	uiw_mpa_startup_tick(&r, T0 + 9999);
	assert_int_equal(r.status, -ETIMEDOUT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_initiator_requests),
		cmocka_unit_test(test_reply_accepted_exact_end),
		cmocka_unit_test(test_reply_refused),
		cmocka_unit_test(test_reply_rejected),
		cmocka_unit_test(test_reply_terminates),
		cmocka_unit_test(test_pair),
		cmocka_unit_test(test_responder_refuses),
		cmocka_unit_test(test_responder_reject),
		cmocka_unit_test(test_deadline),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
