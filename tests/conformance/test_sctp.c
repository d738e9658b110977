/*
 * Conformance: DDP over SCTP (RFC 5043, with the enhanced session codes
 * of RFC 6581 §7), from a raw SCTP peer (sctppeer.h: its own usrsctp in
 * a child process) that writes chunks and session control messages
 * octet by octet and reads what uiwarp puts on the wire.
 *
 *   association   the DDP Adaptation Layer Indication: missing or
 *                 foreign, uiwarp aborts (§5.1, §11.1), as listener and
 *                 as connector; uiwarp's own in INIT and INIT ACK with
 *                 equal stream counts (§8).
 *   data          every chunk unordered (§10), PPIDs 16 and 17 (§5.2),
 *                 DDP-SSN from 0 without gaps per stream (§5.2.1,
 *                 §6.1), no SCTP fragmentation and segments no longer
 *                 than the MULPDU (§9); chunks put back in DDP-SSN
 *                 order, a gap that stays open, a DDP-SSN twice or out
 *                 of any window, a wrong PPID, a segment over the
 *                 MULPDU: Session Terminate.
 *   sessions      Initiate / Accept / Reject / Terminate both ways
 *                 (§6.2, §6.3), the ULP's private data (512 octets, 508
 *                 with the IRD/ORD word), the limit on pending Initiates
 *                 (§6.4), every sequence that is not legal ended with a
 *                 Session Terminate (§6.1), the enhanced codes and the
 *                 plain retry (RFC 6581 §7).
 *   streams       several sessions on one association, each on its own
 *                 stream (§4, §8), a gap or an error on one holding up
 *                 or ending no other.
 *
 * Every error case ends as the RFC says on the wire (the raw peer reads
 * uiwarp's Session Terminate: DDP-SSN in sequence, no private data) and
 * at the API (CM events, the QP out of RTS with every work request
 * flushed, memory untouched: cf_expect_closed_llp).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cf_env.h"
#include "llp/ddps.h"
#include "rnic/framing.h"

/* ddps.c's bound on an open gap (DDPS_GAP_MS_DEF), put back after a
 * case that lowers it. */
#define GAP_MS_DEFAULT 10000
#define GAP_MS_TEST    300

static uint8_t ubuf[70000];
static uint8_t pd[UIW_DDPS_PD_MAX + 8];

/* What a case makes besides the environment, freed before it. */
static struct {
	struct uiw_cm_id *id[4];
	struct uiw_qp *qp[2];
	struct uiw_cq *cq[2];
} X;

static int setup(void **state)
{
	size_t i;

	memset(&X, 0, sizeof(X));
	for (i = 0; i < sizeof(pd); i++)
		pd[i] = (uint8_t)(i * 7 + 1);
	return cf_state_new(state);
}

static int teardown(void **state)
{
	int i, rc = 0;

	uiw_ddps_set_gap_ms(GAP_MS_DEFAULT);
	for (i = 0; i < 4; i++)
		if (X.id[i] && uiw_cm_destroy_id(X.id[i]))
			rc = -1;
	for (i = 0; i < 2; i++) {
		if (X.qp[i] && uiw_qp_destroy(X.qp[i]))
			rc = -1;
		if (X.cq[i] && uiw_cq_destroy(X.cq[i]))
			rc = -1;
	}
	memset(&X, 0, sizeof(X));
	if (cf_state_free(state))
		rc = -1;
	return rc;
}

static void sctp_opts(struct cf_opts *o)
{
	cf_opts_init(o);
	o->llp = CF_LLP_SCTP;
}

/* A session opened by the raw peer (plain Initiate, Accept), the first
 * Send in, and (outstanding) a Read of uiwarp's outstanding with a Send
 * fenced behind it: what every error case of an open session ends. */
static void open_session(struct cf_env *e, bool outstanding)
{
	struct cf_opts o;

	sctp_opts(&o);
	CF_OK(cf_open(e, &o, outstanding));
}

static void reopen_session(struct cf_env *e)
{
	assert_int_equal(cf_close(e), 0);
	memset(e, 0, sizeof(*e));
	open_session(e, true);
}

/* A QP of its own (k: 0 or 1), on one CQ. */
static struct uiw_qp *extra_qp(struct cf_env *e, int k)
{
	struct uiw_qp_init_attr qa = { 0 };

	X.cq[k] = uiw_cq_create(e->dev, 64);
	assert_non_null(X.cq[k]);
	qa.send_cq = qa.recv_cq = X.cq[k];
	qa.cap.max_send_wr = 16;
	qa.cap.max_recv_wr = 16;
	qa.cap.max_send_sge = 2;
	qa.cap.max_recv_sge = 2;
	X.qp[k] = uiw_qp_create(e->pd, &qa);
	assert_non_null(X.qp[k]);
	return X.qp[k];
}

static void sctp_param(const struct cf_env *e, struct uiw_conn_param *p,
		       uint8_t rev, const void *data, uint16_t len)
{
	memset(p, 0, sizeof(*p));
	p->llp = UIW_LLP_SCTP_UDP;
	p->udp_port = e->rp_udp_port;
	p->mpa_rev = rev;
	p->private_data = data;
	p->private_data_len = len;
}

/* The raw peer's association to uiwarp's listener, up. */
static int raw_assoc(struct cf_env *e, const struct sp_opts *so)
{
	struct sp_state st;
	int id = -1;

	CF_OK(sp_connect(so, e->port, cf_udp_port(), &id));
	CF_OK(sp_state(id, &st));
	if (!st.up || st.down)
		fail_msg("the association to uiwarp is not up");
	return id;
}

/* uiwarp listens over SCTP; e->rp is stream sid of a new association of
 * the raw peer (no session yet). */
static void listen_and_assoc(struct cf_env *e, uint16_t sid)
{
	struct cf_opts o;
	int id;

	sctp_opts(&o);
	CF_OK(cf_setup(e, &o));
	id = raw_assoc(e, &o.sp);
	rp_sctp_init(&e->rp, id, sid);
	e->rp_open = true;
}

/* uiwarp connects to the raw listener (revision rev, private data);
 * e->rp is the association it made (no stream yet). */
static void connect_to_raw(struct cf_env *e, uint8_t rev, const void *data,
			   uint16_t len)
{
	struct uiw_conn_param p;
	struct sockaddr_in a = { .sin_family = AF_INET };
	int id;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	a.sin_port = htons(e->rp_port);
	sctp_param(e, &p, rev, data, len);
	assert_int_equal(uiw_cm_connect(e->ch, e->qp, (struct sockaddr *)&a,
					sizeof(a), &p, &e->id), 0);
	CF_OK(sp_accept(e->sp_lid, &id, 0));
	rp_sctp_init(&e->rp, id, 0);
	e->rp_open = true;
}

static void raw_listen(struct cf_env *e, struct cf_opts *o)
{
	o->role = CF_RAW_RESPONDS;
	CF_OK(cf_setup(e, o));
}

/* A one-segment Send (next MSN of queue 0) as a ULPDU in u. */
static size_t send_ulpdu(struct cf_env *e, uint8_t *u, const char *text)
{
	size_t hl = rp_hdr_untagged(u, UIW_OP_SEND, true, UIW_QN_SEND,
				    e->rp.msn[0]++, 0, 0);

	memcpy(u + hl, text, strlen(text));
	return hl + strlen(text);
}

/* One chunk with DDP-SSN ssn on e->rp's stream: body as given. */
static void send_at(struct cf_env *e, uint16_t ssn, uint32_t ppid,
		    const void *body, size_t len)
{
	uiw_ddps_put_ssn(ubuf, ssn);
	memcpy(ubuf + UIW_DDPS_SSN_LEN, body, len);
	CF_OK(rp_sctp_send_raw(&e->rp, e->rp.sid, ppid, true, ubuf,
			       len + UIW_DDPS_SSN_LEN));
}

/* The next control message on c must be fc (with no private data for a
 * Terminate, RFC 5043 §5.2.3: the decoder refuses one that has). */
static void expect_ctl(struct rp_conn *c, uint16_t fc)
{
	int got = rp_ddps_recv_ctl(c);

	if (got < 0)
		fail_msg("expected a %s on stream %u: %s", uiw_ddps_fc_name(fc),
			 c->sid, rp_err());
	if (got != fc)
		fail_msg("a %s on stream %u, expected a %s",
			 uiw_ddps_fc_name((uint16_t)got), c->sid,
			 uiw_ddps_fc_name(fc));
}

/* Nothing on any stream of c's association for ms: a bounded look for
 * silence where nothing may come. */
static void expect_silence(struct rp_conn *c, int ms)
{
	struct sp_msg m;
	int rc = sp_recv(c->sp, -1, &m, ms);

	if (rc == 0) {
		char hx[80];

		fail_msg("a chunk on stream %u (PPID %u) where nothing may "
			 "come: %s", m.sid, m.ppid,
			 rp_hex(m.data, m.len, hx, sizeof(hx)));
	}
	assert_int_equal(rc, -ETIMEDOUT);
}

/* No completion on cq for ms (a bounded look). */
static void expect_no_wc(struct uiw_cq *cq, int ms)
{
	int64_t until = rp_now_ms() + ms;
	struct uiw_wc wc;

	while (rp_now_ms() < until) {
		int n = uiw_cq_poll(cq, 1, &wc);

		if (n != 0)
			fail_msg("a completion (wr_id 0x%llx, %s) where none "
				 "may come", (unsigned long long)wc.wr_id,
				 uiw_wc_status_str(wc.status));
		sched_yield();
	}
}

/* The event of type for id (any id when NULL). */
static void expect_event(struct cf_env *e, enum uiw_cm_event_type type,
			 struct uiw_cm_id *id, struct uiw_cm_event *ev)
{
	CF_OK(cf_wait_event(e, type, id, ev));
}

/* The end of a case that broke the session (RFC 5043 §6.1): uiwarp's
 * Session Terminate is the next chunk (no RDMAP Terminate: RFC 5043 has
 * no error codes of its own, RFC 6581 §8), the QP leaves RTS for "LLP
 * connection lost" and every work request completes in error (which
 * error is not the RFCs' to say: the Read under way at the raw peer
 * gets one, the rest are flushed), nothing placed. */
static void expect_session_broken(struct cf_env *e)
{
	cf_expect_status(e, CF_WR_READ, CF_WC_ANY_ERROR);
	cf_expect_status(e, CF_WR_FENCED_SEND, CF_WC_ANY_ERROR);
	CF_OK(cf_expect_closed_llp(e, UIW_E_MPA_CLOSED));
}

/* ---- What uiwarp put on the wire -------------------------------------- */

#define WIRE_STREAMS 16
#define WIRE_SSNS    4096

/* Every chunk uiwarp sent on the association st (towards the raw peer):
 * its INIT (init_type 1) or INIT ACK (2) with the DDP Adaptation Layer
 * Indication (RFC 5043 §5.1) and equal stream counts (§8); every DATA
 * chunk unordered (§10), whole (B and E: no SCTP fragmentation, §9),
 * PPID 16 or 17 in network order (§5.2); per stream, DDP-SSNs from 0
 * without a gap or a repeat (§5.2.1, §6.1); every Session Terminate
 * without private data (§5.2.3).  Returns the DATA chunks (one per TSN)
 * and the streams used. */
static size_t check_wire(const struct sp_state *st, uint8_t init_type,
			 unsigned *nstreams)
{
	static uint8_t seen[WIRE_STREAMS][WIRE_SSNS];
	static uint32_t tsns[WIRE_STREAMS * WIRE_SSNS];
	struct sp_wire *w;
	size_t n, i, k, ntsn = 0, ndata = 0;
	unsigned sid, used = 0;
	bool of, init = false;

	CF_OK(sp_wire_get(&w, &n, &of));
	assert_false(of);
	memset(seen, 0, sizeof(seen));
	for (i = 0; i < n; i++) {
		const struct sp_wire *c = &w[i];
		uint16_t ssn;
		bool dup = false;

		if (c->sport != st->pport || c->dport != st->lport)
			continue;
		if (c->type == init_type) {
			init = true;
			/* An INIT ACK's outbound count is at most the INIT's
			 * inbound (RFC 4960 §5.1.1): equal counts there are
			 * the association's, checked below. */
			if (init_type == 1 && c->os != c->mis)
				fail_msg("uiwarp's %s: %u outbound, %u inbound "
					 "streams (RFC 5043 §8: equal)",
					 sp_chunk_name(c->type), c->os,
					 c->mis);
			if (!c->adapt_seen || c->adapt != SP_ADAPT_DDP)
				fail_msg("uiwarp's %s without the DDP "
					 "Adaptation Layer Indication (RFC "
					 "5043 §5.1)", sp_chunk_name(c->type));
		}
		if (c->type != 0)
			continue;
		for (k = 0; k < ntsn && !dup; k++)
			dup = tsns[k] == c->tsn;
		if (dup)
			continue;       /* a retransmission */
		assert_true(ntsn < sizeof(tsns) / sizeof(tsns[0]));
		tsns[ntsn++] = c->tsn;
		ndata++;
		if (!(c->flags & SP_DATA_U))
			fail_msg("DATA chunk TSN %u on stream %u without the U "
				 "flag (RFC 5043 §10)", c->tsn, c->sid);
		if ((c->flags & (SP_DATA_B | SP_DATA_E)) !=
		    (SP_DATA_B | SP_DATA_E))
			fail_msg("DATA chunk TSN %u is a fragment (flags 0x%x; "
				 "RFC 5043 §9)", c->tsn, c->flags);
		if (c->ppid[0] || c->ppid[1] || c->ppid[2] ||
		    (c->ppid[3] != SP_PPID_DDP && c->ppid[3] != SP_PPID_CTL))
			fail_msg("DATA chunk TSN %u with PPID octets %02x %02x "
				 "%02x %02x (RFC 5043 §5.2: 16 or 17)", c->tsn,
				 c->ppid[0], c->ppid[1], c->ppid[2],
				 c->ppid[3]);
		if (c->ppid[3] == SP_PPID_CTL &&
		    (c->head[2] << 8 | c->head[3]) == UIW_DDPS_TERMINATE &&
		    c->len != 16 + UIW_DDPS_CTL_HDR)
			fail_msg("a Session Terminate of %u octets (RFC 5043 "
				 "§5.2.3: no private data)", c->len - 16);
		assert_true(c->sid < WIRE_STREAMS);
		ssn = (uint16_t)(c->head[0] << 8 | c->head[1]);
		assert_true(ssn < WIRE_SSNS);
		if (seen[c->sid][ssn])
			fail_msg("DDP-SSN %u twice on stream %u", ssn, c->sid);
		seen[c->sid][ssn] = 1;
	}
	free(w);
	if (!init)
		fail_msg("no %s from uiwarp in the log",
			 sp_chunk_name(init_type));
	if (st->in_streams != st->out_streams || !st->in_streams)
		fail_msg("the association has %u inbound and %u outbound "
			 "streams (RFC 5043 §8: equal)", st->in_streams,
			 st->out_streams);
	for (sid = 0; sid < WIRE_STREAMS; sid++) {
		unsigned s, last = 0, any = 0;

		for (s = 0; s < WIRE_SSNS; s++)
			if (seen[sid][s]) {
				any++;
				last = s;
			}
		if (!any)
			continue;
		used++;
		if (any != last + 1)
			fail_msg("stream %u: %u DDP-SSNs up to %u: a gap "
				 "(RFC 5043 §6: from 0, no gaps)", sid, any,
				 last);
	}
	if (nstreams)
		*nstreams = used;
	return ndata;
}

/* ---- The association (RFC 5043 §5.1, §11.1) ---------------------------- */

/* The raw peer's INIT carries no Adaptation Layer Indication (or a
 * foreign one): "RDMA and DDP procedures MUST NOT be performed upon this
 * association" (§11.1), and uiwarp SHOULD terminate it (§7.1): it aborts
 * it at once, the application hears nothing, its INIT ACK said DDP all
 * the same, and the listener goes on with the next, proper one. */
static void adapt_to_listener(struct cf_env *e, enum sp_adapt adapt,
			      uint32_t value)
{
	struct sp_opts so = { .adapt = adapt, .adapt_value = value };
	struct sp_state st;
	struct cf_opts o;
	int id = -1;

	sctp_opts(&o);
	CF_OK(cf_setup(e, &o));
	(void)sp_connect(&so, e->port, cf_udp_port(), &id);
	assert_true(id >= 0);
	CF_OK(sp_wait_down(id, 0, &st));
	assert_true(st.abort_rcvd);
	assert_int_equal(st.down_err, ECONNRESET);
	assert_true(st.peer_init_seen);
	assert_true(st.peer_adapt_seen);
	assert_int_equal(st.peer_adapt, SP_ADAPT_DDP);
	CF_OK(sp_close(id));
	CF_OK(cf_no_event(e));
	/* The next association says DDP: a session. */
	CF_OK(cf_connect(e));
	CF_OK(cf_prime(e));
}

static void test_adapt_none_to_listener(void **state)
{
	adapt_to_listener(*state, SP_ADAPT_SEND_NONE, 0);
}

static void test_adapt_foreign_to_listener(void **state)
{
	adapt_to_listener(*state, SP_ADAPT_SEND_VALUE, 0x00000002u);
}

/* The same with uiwarp connecting: its INIT says DDP, the raw peer's
 * INIT ACK does not; uiwarp aborts the association without a single
 * DATA chunk and the connection fails with -EPROTO; the QP stays Idle. */
static void adapt_to_connector(struct cf_env *e, enum sp_adapt adapt,
			       uint32_t value)
{
	struct uiw_conn_param p;
	struct sockaddr_in a = { .sin_family = AF_INET };
	struct uiw_cm_event ev;
	struct cf_opts o;
	int64_t until;
	bool init = false, abort = false;

	sctp_opts(&o);
	o.sp.adapt = adapt;
	o.sp.adapt_value = value;
	raw_listen(e, &o);
	CF_OK(sp_wire_clear());
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	a.sin_port = htons(e->rp_port);
	sctp_param(e, &p, 0, "x", 1);
	assert_int_equal(uiw_cm_connect(e->ch, e->qp, (struct sockaddr *)&a,
					sizeof(a), &p, &e->id), 0);
	expect_event(e, UIW_CM_EVENT_CONNECT_ERROR, e->id, &ev);
	assert_int_equal(ev.status, -EPROTO);
	assert_int_equal(cf_qp_state(e, NULL), UIW_QPS_IDLE);
	/* On the wire: uiwarp's INIT with DDP's indication, its ABORT, and
	 * no DATA chunk. */
	until = rp_now_ms() + rp_timeout_ms();
	while (!abort && rp_now_ms() < until) {
		struct sp_wire *w;
		size_t n, i;
		bool of;

		CF_OK(sp_wire_get(&w, &n, &of));
		for (i = 0; i < n; i++) {
			if (w[i].dport != e->rp_port)
				continue;
			if (w[i].type == 1) {
				init = true;
				assert_true(w[i].adapt_seen);
				assert_int_equal(w[i].adapt, SP_ADAPT_DDP);
				assert_int_equal(w[i].os, w[i].mis);
			}
			if (w[i].type == 6)
				abort = true;
			if (w[i].type == 0)
				fail_msg("uiwarp sent a DATA chunk on an "
					 "association without DDP");
		}
		free(w);
	}
	assert_true(init);
	assert_true(abort);
	CF_OK(cf_no_event(e));
}

static void test_adapt_none_to_connector(void **state)
{
	adapt_to_connector(*state, SP_ADAPT_SEND_NONE, 0);
}

static void test_adapt_foreign_to_connector(void **state)
{
	adapt_to_connector(*state, SP_ADAPT_SEND_VALUE, 0x00000002u);
}

/* ---- uiwarp's chunks (RFC 5043 §5.2, §6.1, §8, §9, §10) ---------------- */

/* What uiwarp sends in a session, read chunk by chunk (rawpeer.c checks
 * the U flag and the DDP-SSN order of each) and in the log of the wire:
 * the Accept or Initiate at DDP-SSN 0, a Send over several segments, an
 * RDMA Write, an RDMA Read Request, then at the disconnect its Session
 * Terminate (no private data) as the last chunk. */
static void traffic_and_disconnect(struct cf_env *e)
{
	struct rp_seg *s = &e->seg;
	struct uiw_read_req rr;
	struct uiw_qp_attr a;
	size_t got = 0, extra = 1;
	uint8_t data[CF_READ_LEN];

	CF_OK(cf_qp_state(e, &a));
	assert_true(a.llp == UIW_LLP_SCTP_UDP);
	assert_int_equal(a.crc, 0);
	/* RFC 5043 §9: at least 516, and a full segment with its DDP-SSN
	 * fits one DATA chunk of one packet. */
	assert_true(a.mulpdu >= UIW_DDPS_MULPDU_MIN);
	assert_true(a.mulpdu + UIW_DDPS_SSN_LEN + 16 + 12 <= SP_MTU);
	CF_OK(cf_post_send(e, 0x51, UIW_WR_SEND, 0, CF_SRC, 100, 3000, 0, 0));
	while (got < 3000) {
		CF_OK(rp_recv_seg(&e->rp, s));
		assert_false(s->h.tagged);
		assert_true(s->len <= a.mulpdu);
		assert_int_equal(s->h.mo, got);
		assert_memory_equal(s->pl, e->r[CF_SRC].p + 100 + got,
				    s->plen);
		got += s->plen;
		assert_int_equal(s->h.last, got == 3000);
	}
	CF_OK(cf_post_send(e, 0x52, UIW_WR_RDMA_WRITE, 0, CF_SRC, 0, 64,
			   0x1000, 0x77));
	CF_OK(rp_recv_seg(&e->rp, s));
	assert_true(s->h.tagged);
	assert_int_equal(s->h.stag, 0x77);
	CF_OK(cf_post_send(e, 0x53, UIW_WR_RDMA_READ, 0, CF_SINK, 0,
			   CF_READ_LEN, 0x2000, 0x88));
	CF_OK(rp_recv_seg(&e->rp, s));
	assert_int_equal(s->h.opcode, UIW_OP_READ_REQ);
	uiw_read_req_decode(s->pl, &rr);
	memset(data, 0x3c, sizeof(data));
	CF_OK(rp_send_read_resp(&e->rp, rr.sink_stag, rr.sink_to, true, data,
				sizeof(data)));
	cf_mem_placed(e, e->r[CF_SINK].p, data, sizeof(data));
	CF_OK(cf_wait_wc(e, e->scq, 0x51, UIW_WC_SUCCESS, NULL));
	CF_OK(cf_wait_wc(e, e->scq, 0x52, UIW_WC_SUCCESS, NULL));
	CF_OK(cf_wait_wc(e, e->scq, 0x53, UIW_WC_SUCCESS, NULL));
	/* RFC 5043 §6.2: at the end a Session Terminate, the last chunk. */
	assert_int_equal(uiw_cm_disconnect(e->id), 0);
	assert_int_equal(rp_wait_closed(&e->rp, &extra), RP_CLOSED_FIN);
	assert_int_equal(extra, 0);
	assert_int_equal(e->rp.ctl.pd_len, 0);
}

static void end_disconnect(struct cf_env *e, struct sp_state *st)
{
	CF_OK(sp_state(e->rp.sp, st));
	rp_close(&e->rp);
	e->rp_open = false;
	expect_event(e, UIW_CM_EVENT_DISCONNECTED, e->id, NULL);
	CF_OK(cf_finish_wcs(e));
	CF_OK(cf_check_mem(e));
}

/* uiwarp as responder: its INIT ACK, its Accept and what follows. */
static void test_responder_wire(void **state)
{
	struct cf_env *e = *state;
	struct sp_state st;
	unsigned streams;
	struct cf_opts o;

	sctp_opts(&o);
	o.sctp_sid = 5;
	CF_OK(cf_setup(e, &o));
	CF_OK(sp_wire_clear());
	CF_OK(cf_connect(e));
	CF_OK(cf_prime(e));
	traffic_and_disconnect(e);
	end_disconnect(e, &st);
	/* Accept, 3 Send segments at least, Write, Read Request, Session
	 * Terminate, all on stream 5. */
	assert_true(check_wire(&st, 2, &streams) >= 7);
	assert_int_equal(streams, 1);
}

/* uiwarp as initiator (enhanced by default, RFC 6581 §7): its INIT, the
 * Enhanced Initiate with the IRD/ORD word and the ULP's private data,
 * the Enhanced Accept's word and private data passed to the ULP, what
 * follows. */
static void test_initiator_wire(void **state)
{
	struct cf_env *e = *state;
	struct uiw_cm_event ev;
	struct uiw_mpa_v2 v2;
	struct sp_state st;
	unsigned streams;
	struct cf_opts o;

	sctp_opts(&o);
	raw_listen(e, &o);
	CF_OK(sp_wire_clear());
	connect_to_raw(e, 0, "hello", 5);
	assert_int_equal(rp_ddps_await(&e->rp, 0), UIW_DDPS_E_INITIATE);
	assert_int_equal(e->rp.ctl.ssn, 0);
	assert_true(e->rp.ctl.has_v2);
	assert_false(e->rp.ctl.v2.p2p);
	assert_true(e->rp.ctl.v2.ird > 0 && e->rp.ctl.v2.ord > 0);
	assert_int_equal(e->rp.ctl.pd_len, 5);
	assert_memory_equal(e->rp.ctl.pd, "hello", 5);
	/* RFC 6581 §9.1: our ORD within its IRD, our IRD its ORD. */
	memset(&v2, 0, sizeof(v2));
	v2.ird = e->rp.ctl.v2.ord;
	v2.ord = 1;
	CF_OK(rp_ddps_send_ctl(&e->rp, UIW_DDPS_E_ACCEPT, &v2, "welcome", 7));
	expect_event(e, UIW_CM_EVENT_ESTABLISHED, e->id, &ev);
	assert_int_equal(ev.private_data_len, 7);
	assert_memory_equal(ev.private_data, "welcome", 7);
	assert_int_equal(ev.peer_ird, v2.ird);
	assert_int_equal(ev.peer_ord, 1);
	CF_OK(cf_prime(e));
	traffic_and_disconnect(e);
	end_disconnect(e, &st);
	assert_true(check_wire(&st, 1, &streams) >= 8);
	assert_int_equal(streams, 1);
}

/* ---- Chunks in DDP-SSN order (RFC 5043 §5.2.1, §6.1, §10) -------------- */

/* A Send whose DDP-SSN is one ahead waits: nothing is placed or
 * completed until the one before it comes; then both, in DDP-SSN (and
 * MSN) order, and the stream goes on. */
static void test_ssn_gap_filled(void **state)
{
	struct cf_env *e = *state;
	uint8_t a[64], b[64];
	size_t la, lb;
	uint16_t ssn;
	struct uiw_wc wc;

	open_session(e, false);
	la = send_ulpdu(e, a, "first");
	lb = send_ulpdu(e, b, "second");
	ssn = e->rp.tx_ssn;
	e->rp.tx_ssn += 2;
	send_at(e, (uint16_t)(ssn + 1), SP_PPID_DDP, b, lb);
	expect_no_wc(e->rcq, 300);
	assert_int_equal(cf_qp_state(e, NULL), UIW_QPS_RTS);
	CF_OK(cf_check_mem(e));
	send_at(e, ssn, SP_PPID_DDP, a, la);
	CF_OK(cf_wait_wc(e, e->rcq, CF_WR_RECV(1), UIW_WC_SUCCESS, &wc));
	assert_int_equal(wc.byte_len, 5);
	CF_OK(cf_wait_wc(e, e->rcq, CF_WR_RECV(2), UIW_WC_SUCCESS, &wc));
	assert_int_equal(wc.byte_len, 6);
	cf_mem_placed(e, e->r[CF_RECV].p + e->o.recv_len, "first", 5);
	cf_mem_placed(e, e->r[CF_RECV].p + 2 * e->o.recv_len, "second", 6);
	CF_OK(rp_send_send(&e->rp, UIW_OP_SEND, 0, "third", 5));
	CF_OK(cf_wait_wc(e, e->rcq, CF_WR_RECV(3), UIW_WC_SUCCESS, &wc));
	cf_mem_placed(e, e->r[CF_RECV].p + 3 * e->o.recv_len, "third", 5);
	CF_OK(cf_check_mem(e));
	assert_int_equal(cf_qp_state(e, NULL), UIW_QPS_RTS);
}

/* A gap that is never filled (SCTP would have retransmitted the chunk
 * long before): the session ends after uiw_ddps_set_gap_ms with uiwarp's
 * Session Terminate; the held chunk is never placed, every work request
 * is flushed. */
static void test_ssn_gap_never_filled(void **state)
{
	struct cf_env *e = *state;
	uint8_t b[64];
	size_t lb;
	int64_t t0, took;

	uiw_ddps_set_gap_ms(GAP_MS_TEST);
	open_session(e, true);
	(void)send_ulpdu(e, b, "lost");
	lb = send_ulpdu(e, b, "held");
	t0 = rp_now_ms();
	send_at(e, (uint16_t)(e->rp.tx_ssn + 1), SP_PPID_DDP, b, lb);
	e->rp.tx_ssn += 2;
	expect_session_broken(e);
	took = rp_now_ms() - t0;
	if (took < GAP_MS_TEST - 20)
		fail_msg("the session ended %lld ms after the gap opened, "
			 "before its bound of %d ms", (long long)took,
			 GAP_MS_TEST);
}

/* A DDP-SSN already received (a replay, §6: "each Data Chunk
 * unambiguously belongs to exactly one session"), and one farther ahead
 * than chunks in flight can be (§10: fewer than 32768): Session
 * Terminate, QP flushed, nothing of the chunk placed. */
static void test_ssn_replay(void **state)
{
	struct cf_env *e = *state;
	uint8_t u[64];
	size_t ul;
	uint16_t ssn;

	open_session(e, true);
	ssn = e->rp.tx_ssn;
	CF_OK(rp_send_send(&e->rp, UIW_OP_SEND, 0, "once", 4));
	CF_OK(cf_wait_wc(e, e->rcq, CF_WR_RECV(1), UIW_WC_SUCCESS, NULL));
	cf_mem_placed(e, e->r[CF_RECV].p + e->o.recv_len, "once", 4);
	ul = send_ulpdu(e, u, "twice");
	send_at(e, ssn, SP_PPID_DDP, u, ul);
	expect_session_broken(e);
}

static void test_ssn_out_of_window(void **state)
{
	struct cf_env *e = *state;
	uint8_t u[64];
	size_t ul;

	open_session(e, true);
	ul = send_ulpdu(e, u, "far");
	send_at(e, (uint16_t)(e->rp.tx_ssn + 40000), SP_PPID_DDP, u, ul);
	expect_session_broken(e);
}

/* ---- Chunks that are not DDP's (RFC 5043 §5.2, §9) ---------------------- */

/* In an open session a chunk whose PPID is neither 16 nor 17 (among
 * them 16 in the wrong byte order): Session Terminate, QP flushed. */
static void test_wrong_ppid(void **state)
{
	static const uint32_t ppids[] = { 0, 18, 0x10000000u, 0x11000000u,
					  0xffffffffu };
	struct cf_env *e = *state;
	uint8_t u[64];
	size_t i, ul;

	for (i = 0; i < sizeof(ppids) / sizeof(ppids[0]); i++) {
		if (i)
			reopen_session(e);
		else
			open_session(e, true);
		ul = send_ulpdu(e, u, "wrong ppid");
		CF_OK(rp_sctp_send(&e->rp, ppids[i], u, ul));
		expect_session_broken(e);
	}
}

/* §9: "The SCTP adaptation layer MUST reject DDP Segments that are
 * larger than the maximum size specified".  That maximum is not our
 * MULPDU, which bounds what we send from our own path: RFC 5043
 * announces neither side's, and a peer on a wider path sends longer
 * segments (a kernel on a 1500-octet MTU 1442, usrsctp's 1452-octet MTU
 * gives 1422).  RDMA Writes of exactly our MULPDU and of more are placed;
 * a segment longer than any MULPDU (UIW_MULPDU_MAX) ends the session,
 * nothing of it placed. */
static void test_oversize_segment(void **state)
{
	struct cf_env *e = *state;
	struct uiw_qp_attr a;
	size_t hl, len;

	open_session(e, true);
	CF_OK(cf_qp_state(e, &a));
	hl = rp_hdr_tagged(ubuf, UIW_OP_WRITE, true, cf_stag(e, CF_WRITE),
			   cf_to(e, CF_WRITE, 0));
	len = a.mulpdu - hl;
	memset(ubuf + hl, 0x5a, len);
	CF_OK(rp_send_fpdu(&e->rp, ubuf, hl + len));
	cf_mem_placed(e, e->r[CF_WRITE].p, ubuf + hl, len);
	assert_true(hl + CF_REG_LEN > a.mulpdu);
	memset(ubuf + hl, 0x3c, CF_REG_LEN);
	CF_OK(rp_send_fpdu(&e->rp, ubuf, hl + CF_REG_LEN));
	cf_mem_placed(e, e->r[CF_WRITE].p, ubuf + hl, CF_REG_LEN);
	CF_OK(rp_send_send(&e->rp, UIW_OP_SEND, 0, "after", 5));
	CF_OK(cf_wait_wc(e, e->rcq, CF_WR_RECV(1), UIW_WC_SUCCESS, NULL));
	cf_mem_placed(e, e->r[CF_RECV].p + e->o.recv_len, "after", 5);
	CF_OK(cf_check_mem(e));
	/* Past the Write target's end as well: the adaptation layer
	 * judges the length before DDP sees the segment, so the QP ends
	 * for the session (LLP lost), not for DDP's base or bounds. */
	len = UIW_MULPDU_MAX + 1 - hl;
	assert_true(hl + len <= sizeof(ubuf));
	memset(ubuf + hl, 0xa5, len);
	CF_OK(rp_send_fpdu(&e->rp, ubuf, hl + len));
	expect_session_broken(e);
}

/* ---- Session control in an open session (RFC 5043 §5.2.3, §6) ---------- */

/* "Private Data MUST NOT be included in the DDP Stream Session Terminate
 * message": a Terminate with four octets of it is no legal message:
 * uiwarp's own Session Terminate, QP flushed. */
static void test_session_terminate_with_pd(void **state)
{
	static const uint8_t term_pd[] = { 0x00, 0x04, 0xde, 0xad, 0xbe, 0xef };
	struct cf_env *e = *state;

	open_session(e, true);
	CF_OK(rp_sctp_send(&e->rp, SP_PPID_CTL, term_pd, sizeof(term_pd)));
	expect_session_broken(e);
}

/* The raw peer (the initiator) ends the session with a Session
 * Terminate: uiwarp ends too (RFC 5043 §6.2: its own Session Terminate,
 * the last chunk), DISCONNECTED, the QP closed gracefully (RFC 5040 §6:
 * Idle) with its receives flushed. */
static void test_session_terminate_by_peer(void **state)
{
	struct cf_env *e = *state;
	size_t extra = 1;

	open_session(e, false);
	CF_OK(rp_shutdown_wr(&e->rp));
	assert_int_equal(rp_wait_closed(&e->rp, &extra), RP_CLOSED_FIN);
	assert_int_equal(extra, 0);
	rp_close(&e->rp);
	e->rp_open = false;
	expect_event(e, UIW_CM_EVENT_DISCONNECTED, e->id, NULL);
	assert_int_equal(cf_qp_state(e, NULL), UIW_QPS_IDLE);
	CF_OK(cf_finish_wcs(e));
	CF_OK(cf_check_mem(e));
	CF_OK(cf_no_event(e));
}

/* No legal sequence (§6.2 to §6.4, RFC 6581 §7) has the initiator send
 * any control message but a Terminate once the session is open: a
 * second Initiate, an Accept, a Reject, and their enhanced codes, each
 * answered with a Session Terminate, the QP flushed. */
static void test_control_out_of_sequence(void **state)
{
	static const uint16_t fcs[] = {
		UIW_DDPS_INITIATE, UIW_DDPS_ACCEPT, UIW_DDPS_REJECT,
		UIW_DDPS_E_INITIATE, UIW_DDPS_E_ACCEPT, UIW_DDPS_E_REJECT,
	};
	struct cf_env *e = *state;
	struct uiw_mpa_v2 v2 = { .ird = 1, .ord = 1 };
	size_t i;

	for (i = 0; i < sizeof(fcs) / sizeof(fcs[0]); i++) {
		if (i)
			reopen_session(e);
		else
			open_session(e, true);
		CF_OK(rp_ddps_send_ctl(&e->rp, fcs[i], &v2, "again", 5));
		expect_session_broken(e);
	}
}

/* ---- Before the session is open (RFC 5043 §6.2, §6.6) ------------------- */

/* §6.6: "An active side ... MUST NOT send a DDP Segment that might be
 * received before the DDP Stream Session Initiate" -- nor may one come
 * before the Accept.  A segment right behind the Initiate, before the
 * application has decided: uiwarp answers with a Session Terminate and
 * the request is gone before the application saw it.  The same after
 * the application saw it: CONNECT_ERROR, and it can no longer be
 * accepted.  An Accept from the initiator there: the same. */
static void before_accept(struct cf_env *e, struct rp_conn *c, bool seen,
			  bool segment)
{
	struct uiw_conn_param p;
	struct uiw_cm_event ev;
	uint8_t u[64];
	size_t ul;

	CF_OK(rp_ddps_send_ctl(c, UIW_DDPS_INITIATE, NULL, "req", 3));
	if (seen) {
		expect_event(e, UIW_CM_EVENT_CONNECT_REQUEST, NULL, &ev);
		X.id[0] = ev.id;
	}
	if (segment) {
		ul = send_ulpdu(e, u, "too early");
		CF_OK(rp_sctp_send(c, SP_PPID_DDP, u, ul));
	} else {
		CF_OK(rp_ddps_send_ctl(c, UIW_DDPS_ACCEPT, NULL, NULL, 0));
	}
	expect_ctl(c, UIW_DDPS_TERMINATE);
	assert_int_equal(c->ctl.ssn, 0);
	if (!seen) {
		struct rp_conn probe;

		/* uiwarp withdraws the request as it ends the session; an
		 * Initiate on another stream after it finds the channel
		 * without it. */
		rp_sctp_init(&probe, c->sp, 15);
		CF_OK(rp_ddps_send_ctl(&probe, UIW_DDPS_INITIATE, NULL,
				       "probe", 5));
		expect_event(e, UIW_CM_EVENT_CONNECT_REQUEST, NULL, &ev);
		X.id[3] = ev.id;
		assert_int_equal(ev.private_data_len, 5);
		assert_memory_equal(ev.private_data, "probe", 5);
		CF_OK(cf_no_event(e));
		return;
	}
	expect_event(e, UIW_CM_EVENT_CONNECT_ERROR, X.id[0], &ev);
	assert_true(ev.status < 0);
	sctp_param(e, &p, 1, NULL, 0);
	assert_true(uiw_cm_accept(X.id[0], e->qp, &p) < 0);
	assert_int_equal(cf_qp_state(e, NULL), UIW_QPS_IDLE);
	CF_OK(cf_no_event(e));
}

/* Both: before and after the application saw the request. */
static void before_accept_cases(struct cf_env *e, bool segment)
{
	struct rp_conn c2;

	listen_and_assoc(e, 1);
	before_accept(e, &e->rp, false, segment);
	rp_sctp_init(&c2, e->rp.sp, 2);
	before_accept(e, &c2, true, segment);
}

static void test_segment_before_accept(void **state)
{
	before_accept_cases(*state, true);
}

static void test_accept_from_initiator(void **state)
{
	before_accept_cases(*state, false);
}

/* An Initiate on a new stream whose private data is longer than 512
 * octets (§5.2.3), and an Enhanced Initiate too short for its IRD/ORD
 * word (RFC 6581 §7): no legal message, so no session (§6.1): a Session
 * Terminate answers, the application hears nothing. */
static void test_initiate_malformed(void **state)
{
	struct cf_env *e = *state;
	struct rp_conn c2;

	listen_and_assoc(e, 1);
	ubuf[0] = 0;
	ubuf[1] = UIW_DDPS_INITIATE;
	memcpy(ubuf + 2, pd, UIW_DDPS_PD_MAX + 1);
	CF_OK(rp_sctp_send(&e->rp, SP_PPID_CTL, ubuf, UIW_DDPS_PD_MAX + 3));
	expect_ctl(&e->rp, UIW_DDPS_TERMINATE);
	rp_sctp_init(&c2, e->rp.sp, 2);
	ubuf[1] = UIW_DDPS_E_INITIATE;
	CF_OK(rp_sctp_send(&c2, SP_PPID_CTL, ubuf, 2 + 3));
	expect_ctl(&c2, UIW_DDPS_TERMINATE);
	CF_OK(cf_no_event(e));
}

/* ---- The passive side (RFC 5043 §5.2.3, §6.3, §6.4; RFC 6581 §7) -------- */

/* §6.4: "There MUST be a finite limit on the number of such requests
 * that are pending a ULP decision.  When more session requests are
 * received, the passive side MUST respond to the Initiate message with a
 * DDP Stream Terminate Message."  With the listener's bound at 2: two
 * Initiates reach the application, the third is answered with a Session
 * Terminate; once the application rejected one (§6.3: a Reject with its
 * private data, the passive side's last message) another is taken. */
static void test_pending_limit(void **state)
{
	struct cf_env *e = *state;
	struct uiw_conn_param p;
	struct uiw_cm_event ev;
	struct rp_conn c[4];
	int i;

	listen_and_assoc(e, 1);
	CF_OK(uiw_cm_set_max_awaiting(e->lid, 2));
	for (i = 0; i < 4; i++)
		rp_sctp_init(&c[i], e->rp.sp, (uint16_t)(2 + i));
	for (i = 0; i < 2; i++) {
		CF_OK(rp_ddps_send_ctl(&c[i], UIW_DDPS_INITIATE, NULL, "n", 1));
		expect_event(e, UIW_CM_EVENT_CONNECT_REQUEST, NULL, &ev);
		X.id[i] = ev.id;
	}
	CF_OK(rp_ddps_send_ctl(&c[2], UIW_DDPS_INITIATE, NULL, "n", 1));
	expect_ctl(&c[2], UIW_DDPS_TERMINATE);
	assert_int_equal(c[2].ctl.ssn, 0);
	CF_OK(cf_no_event(e));
	/* The ULP rejects the first: a plain Reject with its private
	 * data, nothing after it. */
	assert_int_equal(uiw_cm_reject(X.id[0], "busy", 4), 0);
	expect_ctl(&c[0], UIW_DDPS_REJECT);
	assert_int_equal(c[0].ctl.pd_len, 4);
	assert_memory_equal(c[0].ctl.pd, "busy", 4);
	/* Room for one more. */
	CF_OK(rp_ddps_send_ctl(&c[3], UIW_DDPS_INITIATE, NULL, "m", 1));
	expect_event(e, UIW_CM_EVENT_CONNECT_REQUEST, NULL, &ev);
	X.id[2] = ev.id;
	assert_int_equal(ev.private_data_len, 1);
	/* The second is accepted. */
	sctp_param(e, &p, 1, NULL, 0);
	e->id = X.id[1];
	X.id[1] = NULL;
	assert_int_equal(uiw_cm_accept(e->id, e->qp, &p), 0);
	expect_event(e, UIW_CM_EVENT_ESTABLISHED, e->id, NULL);
	expect_ctl(&c[1], UIW_DDPS_ACCEPT);
	expect_silence(&e->rp, 200);
	CF_OK(cf_no_event(e));
}

/* RFC 6581 §7 with a listener held to RFC 5043's codes
 * (uiw_cm_set_max_mpa_rev 1): an Enhanced Initiate is answered with a
 * Session Terminate, as a peer that does not know the code must (§6.1),
 * and the application hears nothing; a plain Initiate on another stream
 * is a session. */
static void test_enhanced_to_plain_listener(void **state)
{
	struct cf_env *e = *state;
	struct uiw_mpa_v2 v2 = { .ird = 4, .ord = 4 };
	struct uiw_conn_param p;
	struct uiw_cm_event ev;
	struct rp_conn c;

	listen_and_assoc(e, 1);
	CF_OK(uiw_cm_set_max_mpa_rev(e->lid, 1));
	rp_sctp_init(&c, e->rp.sp, 3);
	CF_OK(rp_ddps_send_ctl(&c, UIW_DDPS_E_INITIATE, &v2, "e", 1));
	expect_ctl(&c, UIW_DDPS_TERMINATE);
	CF_OK(cf_no_event(e));
	CF_OK(rp_ddps_send_ctl(&e->rp, UIW_DDPS_INITIATE, NULL, "p", 1));
	expect_event(e, UIW_CM_EVENT_CONNECT_REQUEST, NULL, &ev);
	e->id = ev.id;
	assert_int_equal(ev.peer_ird, 0);
	sctp_param(e, &p, 1, NULL, 0);
	assert_int_equal(uiw_cm_accept(e->id, e->qp, &p), 0);
	expect_event(e, UIW_CM_EVENT_ESTABLISHED, e->id, NULL);
	expect_ctl(&e->rp, UIW_DDPS_ACCEPT);
	CF_OK(cf_prime(e));
}

/* §5.2.3 and RFC 6581 §7: private data of 512 octets in an Initiate and
 * an Accept, 508 besides the IRD/ORD word in the enhanced ones, given to
 * the application whole; a longer Accept refused by the API, the request
 * still pending. */
static void test_responder_private_data(void **state)
{
	struct cf_env *e = *state;
	struct uiw_mpa_v2 v2 = { .ird = 2, .ord = 3 };
	struct uiw_conn_param p;
	struct uiw_cm_event ev;
	struct rp_conn c;

	listen_and_assoc(e, 1);
	CF_OK(rp_ddps_send_ctl(&e->rp, UIW_DDPS_INITIATE, NULL, pd,
			       UIW_DDPS_PD_MAX));
	expect_event(e, UIW_CM_EVENT_CONNECT_REQUEST, NULL, &ev);
	e->id = ev.id;
	assert_int_equal(ev.private_data_len, UIW_DDPS_PD_MAX);
	assert_memory_equal(ev.private_data, pd, UIW_DDPS_PD_MAX);
	sctp_param(e, &p, 1, pd + 1, UIW_DDPS_PD_MAX);
	assert_int_equal(uiw_cm_accept(e->id, e->qp, &p), 0);
	expect_event(e, UIW_CM_EVENT_ESTABLISHED, e->id, NULL);
	expect_ctl(&e->rp, UIW_DDPS_ACCEPT);
	assert_int_equal(e->rp.ctl.pd_len, UIW_DDPS_PD_MAX);
	assert_memory_equal(e->rp.ctl.pd, pd + 1, UIW_DDPS_PD_MAX);

	/* Enhanced, on another stream and another QP. */
	rp_sctp_init(&c, e->rp.sp, 2);
	CF_OK(rp_ddps_send_ctl(&c, UIW_DDPS_E_INITIATE, &v2, pd + 2,
			       UIW_DDPS_PD_MAX - UIW_MPA_V2_LEN));
	expect_event(e, UIW_CM_EVENT_CONNECT_REQUEST, NULL, &ev);
	X.id[0] = ev.id;
	assert_int_equal(ev.private_data_len, UIW_DDPS_PD_MAX -
			 UIW_MPA_V2_LEN);
	assert_memory_equal(ev.private_data, pd + 2,
			    UIW_DDPS_PD_MAX - UIW_MPA_V2_LEN);
	assert_int_equal(ev.peer_ird, 2);
	assert_int_equal(ev.peer_ord, 3);
	sctp_param(e, &p, 1, pd + 3, UIW_DDPS_PD_MAX - UIW_MPA_V2_LEN + 1);
	assert_int_equal(uiw_cm_accept(X.id[0], extra_qp(e, 0), &p), -EINVAL);
	expect_silence(&c, 100);
	p.private_data_len = UIW_DDPS_PD_MAX - UIW_MPA_V2_LEN;
	assert_int_equal(uiw_cm_accept(X.id[0], X.qp[0], &p), 0);
	expect_event(e, UIW_CM_EVENT_ESTABLISHED, X.id[0], &ev);
	expect_ctl(&c, UIW_DDPS_E_ACCEPT);
	assert_true(c.ctl.has_v2);
	/* RFC 6581 §9.1: its ORD at most our IRD (2), its IRD at least
	 * our ORD (3). */
	assert_true(c.ctl.v2.ord <= 2);
	assert_true(c.ctl.v2.ird >= 3);
	assert_int_equal(c.ctl.pd_len, UIW_DDPS_PD_MAX - UIW_MPA_V2_LEN);
	assert_memory_equal(c.ctl.pd, pd + 3, UIW_DDPS_PD_MAX -
			    UIW_MPA_V2_LEN);
}

/* RFC 6581 §7: "The Enhanced Reject function code MUST be used to
 * indicate rejection of enhanced DDP stream session for a configuration
 * that would have been accepted for unenhanced": an accept whose ORD the
 * initiator's IRD cannot serve (rd_strict) is an Enhanced Reject naming
 * the ORD this side needs. */
static void test_responder_enhanced_reject(void **state)
{
	struct cf_env *e = *state;
	struct uiw_mpa_v2 v2 = { .ird = 1, .ord = 1 };
	struct uiw_conn_param p;
	struct uiw_cm_event ev;

	listen_and_assoc(e, 1);
	CF_OK(rp_ddps_send_ctl(&e->rp, UIW_DDPS_E_INITIATE, &v2, NULL, 0));
	expect_event(e, UIW_CM_EVENT_CONNECT_REQUEST, NULL, &ev);
	X.id[0] = ev.id;
	sctp_param(e, &p, 1, "sorry", 5);
	p.ord = 4;
	p.rd_strict = 1;
	assert_int_equal(uiw_cm_accept(X.id[0], e->qp, &p), -ENOBUFS);
	expect_ctl(&e->rp, UIW_DDPS_E_REJECT);
	assert_true(e->rp.ctl.has_v2);
	assert_int_equal(e->rp.ctl.v2.ord, 4);
	assert_int_equal(e->rp.ctl.pd_len, 5);
	assert_memory_equal(e->rp.ctl.pd, "sorry", 5);
	expect_silence(&e->rp, 200);
	assert_int_equal(cf_qp_state(e, NULL), UIW_QPS_IDLE);
}

/* ---- The active side (RFC 5043 §6.2, §6.3; RFC 6581 §7) ----------------- */

/* The peer knows only RFC 5043's codes and ends the session on the
 * Enhanced Initiate (a Session Terminate), or says with an Enhanced
 * Reject that it would take the plain one: uiwarp sends the same
 * session again as a plain Initiate, with the same private data, on
 * another stream, DDP-SSN 0 (§6.1, §6.6); accepted, it is established
 * and carries data. */
static void retry_plain(struct cf_env *e, uint16_t answer)
{
	struct uiw_mpa_v2 v2 = { .ird = 8, .ord = 8 };
	struct uiw_cm_event ev;
	struct rp_conn c2;
	struct cf_opts o;
	uint16_t s1;

	sctp_opts(&o);
	raw_listen(e, &o);
	connect_to_raw(e, 0, "hello", 5);
	assert_int_equal(rp_ddps_await(&e->rp, 0), UIW_DDPS_E_INITIATE);
	s1 = e->rp.sid;
	if (answer == UIW_DDPS_TERMINATE)
		CF_OK(rp_ddps_send_ctl(&e->rp, answer, NULL, NULL, 0));
	else
		CF_OK(rp_ddps_send_ctl(&e->rp, answer, &v2, "plain?", 6));
	rp_sctp_init(&c2, e->rp.sp, 0);
	assert_int_equal(rp_ddps_await(&c2, 0), UIW_DDPS_INITIATE);
	assert_true(c2.sid != s1);
	assert_int_equal(c2.ctl.ssn, 0);
	assert_false(c2.ctl.has_v2);
	assert_int_equal(c2.ctl.pd_len, 5);
	assert_memory_equal(c2.ctl.pd, "hello", 5);
	CF_OK(rp_ddps_send_ctl(&c2, UIW_DDPS_ACCEPT, NULL, "welcome", 7));
	expect_event(e, UIW_CM_EVENT_ESTABLISHED, e->id, &ev);
	assert_int_equal(ev.private_data_len, 7);
	assert_memory_equal(ev.private_data, "welcome", 7);
	assert_int_equal(ev.peer_ird, 0);
	/* Nothing more on the first stream. */
	assert_false(sp_pending(e->rp.sp, s1));
	e->rp = c2;
	CF_OK(cf_prime(e));
	CF_OK(rp_send_send(&e->rp, UIW_OP_SEND, 0, "back", 4));
	CF_OK(cf_wait_wc(e, e->rcq, CF_WR_RECV(0), UIW_WC_SUCCESS, NULL));
	cf_mem_placed(e, e->r[CF_RECV].p, "back", 4);
	CF_OK(cf_check_mem(e));
}

static void test_initiator_retry_after_terminate(void **state)
{
	retry_plain(*state, UIW_DDPS_TERMINATE);
}

static void test_initiator_retry_after_enhanced_reject(void **state)
{
	retry_plain(*state, UIW_DDPS_E_REJECT);
}

/* §6.3: a Reject ends the attempt: REJECTED with the peer's private
 * data, for an enhanced and a plain Initiate alike, no other Initiate,
 * the QP still Idle. */
static void test_initiator_rejected(void **state)
{
	struct cf_env *e = *state;
	struct uiw_cm_event ev;
	struct cf_opts o;
	int rev;

	for (rev = 0; rev <= 1; rev++) {
		if (rev) {
			assert_int_equal(cf_close(e), 0);
			memset(e, 0, sizeof(*e));
		}
		sctp_opts(&o);
		raw_listen(e, &o);
		connect_to_raw(e, (uint8_t)rev, "knock", 5);
		assert_int_equal(rp_ddps_await(&e->rp, 0),
				 rev ? UIW_DDPS_INITIATE :
				       UIW_DDPS_E_INITIATE);
		CF_OK(rp_ddps_send_ctl(&e->rp, UIW_DDPS_REJECT, NULL,
				       "no thanks", 9));
		expect_event(e, UIW_CM_EVENT_REJECTED, e->id, &ev);
		assert_int_equal(ev.status, -ECONNREFUSED);
		assert_int_equal(ev.private_data_len, 9);
		assert_memory_equal(ev.private_data, "no thanks", 9);
		expect_silence(&e->rp, 300);
		assert_int_equal(cf_qp_state(e, NULL), UIW_QPS_IDLE);
		CF_OK(cf_no_event(e));
	}
}

/* The answer to the Initiate is no legal one (§6.2, §6.3): a plain
 * Accept to an Enhanced Initiate, an Initiate, a DDP segment.  uiwarp
 * ends the session with a Session Terminate; CONNECT_ERROR. */
static void test_initiator_unexpected_answer(void **state)
{
	struct cf_env *e = *state;
	struct uiw_cm_event ev;
	struct cf_opts o;
	uint8_t u[64];
	size_t ul;
	int k;

	for (k = 0; k < 3; k++) {
		if (k) {
			assert_int_equal(cf_close(e), 0);
			memset(e, 0, sizeof(*e));
		}
		sctp_opts(&o);
		raw_listen(e, &o);
		connect_to_raw(e, 0, NULL, 0);
		assert_int_equal(rp_ddps_await(&e->rp, 0),
				 UIW_DDPS_E_INITIATE);
		if (k == 0) {
			CF_OK(rp_ddps_send_ctl(&e->rp, UIW_DDPS_ACCEPT, NULL,
					       NULL, 0));
		} else if (k == 1) {
			CF_OK(rp_ddps_send_ctl(&e->rp, UIW_DDPS_INITIATE, NULL,
					       NULL, 0));
		} else {
			ul = send_ulpdu(e, u, "data first");
			CF_OK(rp_sctp_send(&e->rp, SP_PPID_DDP, u, ul));
		}
		expect_ctl(&e->rp, UIW_DDPS_TERMINATE);
		expect_event(e, UIW_CM_EVENT_CONNECT_ERROR, e->id, &ev);
		assert_true(ev.status < 0);
		assert_int_equal(cf_qp_state(e, NULL), UIW_QPS_IDLE);
	}
}

/* RFC 6581 §9.1 over SCTP (§7): the Enhanced Accept asks for an ORD
 * above the IRD this side can give (the device's 128): the initiator
 * cannot take the session; it ends it with a Session Terminate, the
 * application hears CONNECT_ERROR -ENOBUFS, the QP stays Idle. */
static void test_initiator_accept_insufficient_ird(void **state)
{
	struct cf_env *e = *state;
	struct uiw_mpa_v2 v2 = { .ird = 4, .ord = 1000 };
	struct uiw_cm_event ev;
	struct cf_opts o;

	sctp_opts(&o);
	raw_listen(e, &o);
	connect_to_raw(e, 0, NULL, 0);
	assert_int_equal(rp_ddps_await(&e->rp, 0), UIW_DDPS_E_INITIATE);
	CF_OK(rp_ddps_send_ctl(&e->rp, UIW_DDPS_E_ACCEPT, &v2, NULL, 0));
	expect_event(e, UIW_CM_EVENT_CONNECT_ERROR, e->id, &ev);
	assert_int_equal(ev.status, -ENOBUFS);
	expect_ctl(&e->rp, UIW_DDPS_TERMINATE);
	expect_silence(&e->rp, 200);
	assert_int_equal(cf_qp_state(e, NULL), UIW_QPS_IDLE);
	CF_OK(cf_no_event(e));
}

/* §5.2.3 and RFC 6581 §7 on the active side: 513 octets (plain) and 509
 * (enhanced, besides the word) refused by the API; 512 and 508 sent
 * whole, the latter after the word.  Both go on the association uiwarp
 * opened for the first (§4: one association, many DDP streams). */
static void test_initiator_private_data(void **state)
{
	struct cf_env *e = *state;
	struct uiw_conn_param p;
	struct sockaddr_in a = { .sin_family = AF_INET };
	struct uiw_cm_event ev;
	struct uiw_mpa_v2 v2 = { .ird = 1, .ord = 1 };
	struct rp_conn c2;
	struct cf_opts o;
	int id;

	sctp_opts(&o);
	raw_listen(e, &o);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	a.sin_port = htons(e->rp_port);
	sctp_param(e, &p, 1, pd, UIW_DDPS_PD_MAX + 1);
	assert_int_equal(uiw_cm_connect(e->ch, e->qp, (struct sockaddr *)&a,
					sizeof(a), &p, &e->id), -EINVAL);
	sctp_param(e, &p, 0, pd, UIW_DDPS_PD_MAX - UIW_MPA_V2_LEN + 1);
	assert_int_equal(uiw_cm_connect(e->ch, e->qp, (struct sockaddr *)&a,
					sizeof(a), &p, &e->id), -EINVAL);
	e->id = NULL;
	/* 512, plain: rejected with 512 of the raw peer's. */
	connect_to_raw(e, 1, pd, UIW_DDPS_PD_MAX);
	assert_int_equal(rp_ddps_await(&e->rp, 0), UIW_DDPS_INITIATE);
	assert_int_equal(e->rp.ctl.pd_len, UIW_DDPS_PD_MAX);
	assert_memory_equal(e->rp.ctl.pd, pd, UIW_DDPS_PD_MAX);
	CF_OK(rp_ddps_send_ctl(&e->rp, UIW_DDPS_REJECT, NULL, pd + 1,
			       UIW_DDPS_PD_MAX));
	expect_event(e, UIW_CM_EVENT_REJECTED, e->id, &ev);
	assert_int_equal(ev.private_data_len, UIW_DDPS_PD_MAX);
	assert_memory_equal(ev.private_data, pd + 1, UIW_DDPS_PD_MAX);
	assert_int_equal(uiw_cm_destroy_id(e->id), 0);
	e->id = NULL;
	/* 508, enhanced, on the same association. */
	sctp_param(e, &p, 0, pd + 2, UIW_DDPS_PD_MAX - UIW_MPA_V2_LEN);
	assert_int_equal(uiw_cm_connect(e->ch, e->qp, (struct sockaddr *)&a,
					sizeof(a), &p, &e->id), 0);
	rp_sctp_init(&c2, e->rp.sp, 0);
	assert_int_equal(rp_ddps_await(&c2, 0), UIW_DDPS_E_INITIATE);
	assert_int_equal(c2.ctl.pd_len, UIW_DDPS_PD_MAX - UIW_MPA_V2_LEN);
	assert_memory_equal(c2.ctl.pd, pd + 2,
			    UIW_DDPS_PD_MAX - UIW_MPA_V2_LEN);
	v2.ird = c2.ctl.v2.ord;
	CF_OK(rp_ddps_send_ctl(&c2, UIW_DDPS_E_ACCEPT, &v2, pd + 3,
			       UIW_DDPS_PD_MAX - UIW_MPA_V2_LEN));
	expect_event(e, UIW_CM_EVENT_ESTABLISHED, e->id, &ev);
	assert_int_equal(ev.private_data_len, UIW_DDPS_PD_MAX -
			 UIW_MPA_V2_LEN);
	assert_memory_equal(ev.private_data, pd + 3,
			    UIW_DDPS_PD_MAX - UIW_MPA_V2_LEN);
	/* No second association was opened. */
	assert_int_equal(sp_accept(e->sp_lid, &id, 200), -ETIMEDOUT);
	e->rp = c2;
	CF_OK(cf_prime(e));
}

/* §6.6: "An active side of a DDP Stream Session MUST NOT send a DDP
 * Segment that might be received before the DDP Stream Session
 * Initiate": a Send posted before the connection goes out only after the
 * peer's Accept (uiwarp waits for the answer), DDP-SSN 1. */
static void test_initiator_holds_data(void **state)
{
	struct cf_env *e = *state;
	struct rp_seg *s = &e->seg;
	struct cf_opts o;

	sctp_opts(&o);
	raw_listen(e, &o);
	memcpy(e->r[CF_SRC].p, "early", 5);
	cf_mem_placed(e, e->r[CF_SRC].p, "early", 5);
	CF_OK(cf_post_send(e, 0x61, UIW_WR_SEND, 0, CF_SRC, 0, 5, 0, 0));
	connect_to_raw(e, 1, NULL, 0);
	assert_int_equal(rp_ddps_await(&e->rp, 0), UIW_DDPS_INITIATE);
	expect_silence(&e->rp, 300);
	assert_int_equal(uiw_cq_poll(e->scq, 1, &(struct uiw_wc){ 0 }), 0);
	CF_OK(rp_ddps_send_ctl(&e->rp, UIW_DDPS_ACCEPT, NULL, NULL, 0));
	expect_event(e, UIW_CM_EVENT_ESTABLISHED, e->id, NULL);
	CF_OK(rp_recv_seg(&e->rp, s));
	assert_int_equal(s->h.opcode, UIW_OP_SEND);
	assert_int_equal(s->h.msn, 1);
	assert_int_equal(s->plen, 5);
	assert_memory_equal(s->pl, "early", 5);
	assert_int_equal(e->rp.rx_ssn, 2);
	CF_OK(cf_wait_wc(e, e->scq, 0x61, UIW_WC_SUCCESS, NULL));
	CF_OK(cf_check_mem(e));
}

/* ---- Several DDP streams on one association (RFC 5043 §4, §8) ----------- */

/* Two sessions on streams 1 and 3 of one association, on two QPs: a gap
 * on stream 1 holds up stream 1 only; an error on stream 3 ends stream 3
 * only. */
static void test_two_sessions_one_association(void **state)
{
	struct cf_env *e = *state;
	struct uiw_conn_param p;
	struct uiw_cm_event ev;
	struct uiw_qp *qp2;
	struct rp_conn c3;
	struct uiw_sge sge;
	struct uiw_recv_wr rwr = { .wr_id = 0x900, .sg_list = &sge,
				   .num_sge = 1 };
	struct uiw_qp_attr qa;
	struct uiw_wc wc;
	uint8_t a[64], b[64];
	size_t la, lb, extra = 1;
	int64_t until;
	uint16_t ssn;

	listen_and_assoc(e, 1);
	sctp_param(e, &p, 1, NULL, 0);
	CF_OK(rp_ddps_send_ctl(&e->rp, UIW_DDPS_INITIATE, NULL, NULL, 0));
	expect_event(e, UIW_CM_EVENT_CONNECT_REQUEST, NULL, &ev);
	e->id = ev.id;
	assert_int_equal(uiw_cm_accept(e->id, e->qp, &p), 0);
	expect_event(e, UIW_CM_EVENT_ESTABLISHED, e->id, NULL);
	expect_ctl(&e->rp, UIW_DDPS_ACCEPT);
	CF_OK(cf_prime(e));

	qp2 = extra_qp(e, 0);
	sge.addr = cf_to(e, CF_RECV, 3072);
	sge.length = 256;
	sge.lkey = e->r[CF_RECV].mr->lkey;
	assert_int_equal(uiw_post_recv(qp2, &rwr, NULL), 0);
	rp_sctp_init(&c3, e->rp.sp, 3);
	CF_OK(rp_ddps_send_ctl(&c3, UIW_DDPS_INITIATE, NULL, NULL, 0));
	expect_event(e, UIW_CM_EVENT_CONNECT_REQUEST, NULL, &ev);
	X.id[0] = ev.id;
	assert_int_equal(uiw_cm_accept(X.id[0], qp2, &p), 0);
	expect_event(e, UIW_CM_EVENT_ESTABLISHED, X.id[0], NULL);
	expect_ctl(&c3, UIW_DDPS_ACCEPT);

	/* Stream 1: DDP-SSN n+1 before n. */
	la = send_ulpdu(e, a, "gap");
	lb = send_ulpdu(e, b, "held");
	ssn = e->rp.tx_ssn;
	e->rp.tx_ssn += 2;
	send_at(e, (uint16_t)(ssn + 1), SP_PPID_DDP, b, lb);
	/* Stream 3 goes on meanwhile. */
	CF_OK(rp_send_send(&c3, UIW_OP_SEND, 0, "stream 3", 8));
	until = rp_now_ms() + rp_timeout_ms();
	while (uiw_cq_poll(X.cq[0], 1, &wc) == 0) {
		if (rp_now_ms() > until)
			fail_msg("stream 3's Send not completed within %d ms",
				 rp_timeout_ms());
		sched_yield();
	}
	assert_int_equal(wc.wr_id, 0x900);
	assert_int_equal(wc.status, UIW_WC_SUCCESS);
	assert_int_equal(wc.byte_len, 8);
	cf_mem_placed(e, e->r[CF_RECV].p + 3072, "stream 3", 8);
	expect_no_wc(e->rcq, 100);
	/* Filled: stream 1 delivers both. */
	send_at(e, ssn, SP_PPID_DDP, a, la);
	CF_OK(cf_wait_wc(e, e->rcq, CF_WR_RECV(1), UIW_WC_SUCCESS, &wc));
	CF_OK(cf_wait_wc(e, e->rcq, CF_WR_RECV(2), UIW_WC_SUCCESS, &wc));
	cf_mem_placed(e, e->r[CF_RECV].p + e->o.recv_len, "gap", 3);
	cf_mem_placed(e, e->r[CF_RECV].p + 2 * e->o.recv_len, "held", 4);
	/* An error on stream 3 (a wrong PPID) ends stream 3 only. */
	CF_OK(rp_sctp_send(&c3, 0, "x", 1));
	assert_int_equal(rp_wait_closed(&c3, &extra), RP_CLOSED_FIN);
	assert_int_equal(extra, 0);
	expect_event(e, UIW_CM_EVENT_DISCONNECTED, X.id[0], NULL);
	assert_int_equal(uiw_qp_query(qp2, &qa), 0);
	assert_true(qa.state == UIW_QPS_ERROR ||
		    qa.state == UIW_QPS_TERMINATE);
	CF_OK(rp_send_send(&e->rp, UIW_OP_SEND, 0, "still", 5));
	CF_OK(cf_wait_wc(e, e->rcq, CF_WR_RECV(3), UIW_WC_SUCCESS, &wc));
	cf_mem_placed(e, e->r[CF_RECV].p + 3 * e->o.recv_len, "still", 5);
	assert_int_equal(cf_qp_state(e, NULL), UIW_QPS_RTS);
	CF_OK(cf_check_mem(e));
}

/* §11.3: the association ends under two sessions (the raw peer's
 * ABORT): "Termination of an SCTP Association due to errors should be
 * handled at the SCTP layer" -- no RDMAP Terminate on each stream -- and
 * "the local interface SHOULD notify all consumers of DDP streams": both
 * connections DISCONNECTED, both QPs out of RTS for the LLP's loss,
 * every work request completed in error, nothing placed. */
static void test_association_aborted(void **state)
{
	struct cf_env *e = *state;
	struct uiw_conn_param p;
	struct uiw_cm_event ev, ev2;
	struct uiw_qp_attr qa;
	struct uiw_wc wc;
	struct rp_conn c3;
	struct uiw_qp *qp2;

	open_session(e, true);
	qp2 = extra_qp(e, 0);
	rp_sctp_init(&c3, e->rp.sp, 3);
	CF_OK(rp_ddps_send_ctl(&c3, UIW_DDPS_INITIATE, NULL, NULL, 0));
	expect_event(e, UIW_CM_EVENT_CONNECT_REQUEST, NULL, &ev);
	X.id[0] = ev.id;
	sctp_param(e, &p, 1, NULL, 0);
	assert_int_equal(uiw_cm_accept(X.id[0], qp2, &p), 0);
	expect_event(e, UIW_CM_EVENT_ESTABLISHED, X.id[0], NULL);
	expect_ctl(&c3, UIW_DDPS_ACCEPT);
	rp_abort(&e->rp);
	e->rp_open = false;
	expect_event(e, UIW_CM_EVENT_DISCONNECTED, NULL, &ev);
	expect_event(e, UIW_CM_EVENT_DISCONNECTED, NULL, &ev2);
	assert_true((ev.id == e->id && ev2.id == X.id[0]) ||
		    (ev.id == X.id[0] && ev2.id == e->id));
	CF_OK(cf_qp_state(e, &qa));
	assert_int_equal(qa.state, UIW_QPS_ERROR);
	assert_int_equal(qa.term.origin, UIW_TERM_LLP);
	assert_int_equal(uiw_qp_query(qp2, &qa), 0);
	assert_int_equal(qa.state, UIW_QPS_ERROR);
	assert_int_equal(qa.term.origin, UIW_TERM_LLP);
	assert_int_equal(uiw_cq_poll(X.cq[0], 1, &wc), 0);
	cf_expect_status(e, CF_WR_READ, CF_WC_ANY_ERROR);
	cf_expect_status(e, CF_WR_FENCED_SEND, CF_WC_ANY_ERROR);
	CF_OK(cf_finish_wcs(e));
	CF_OK(cf_check_mem(e));
	CF_OK(cf_no_event(e));
}

/* uiwarp as initiator of two connections to one peer: one association
 * (§4), the sessions on two streams. */
static void test_initiator_two_sessions(void **state)
{
	struct cf_env *e = *state;
	struct uiw_conn_param p;
	struct sockaddr_in a = { .sin_family = AF_INET };
	struct rp_conn c2;
	struct cf_opts o;
	int id;

	sctp_opts(&o);
	raw_listen(e, &o);
	connect_to_raw(e, 1, "one", 3);
	assert_int_equal(rp_ddps_await(&e->rp, 0), UIW_DDPS_INITIATE);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	a.sin_port = htons(e->rp_port);
	sctp_param(e, &p, 1, "two", 3);
	assert_int_equal(uiw_cm_connect(e->ch, extra_qp(e, 0),
					(struct sockaddr *)&a, sizeof(a), &p,
					&X.id[0]), 0);
	rp_sctp_init(&c2, e->rp.sp, 0);
	assert_int_equal(rp_ddps_await(&c2, 0), UIW_DDPS_INITIATE);
	assert_true(c2.sid != e->rp.sid);
	assert_memory_equal(c2.ctl.pd, "two", 3);
	assert_int_equal(sp_accept(e->sp_lid, &id, 200), -ETIMEDOUT);
	CF_OK(rp_ddps_send_ctl(&e->rp, UIW_DDPS_ACCEPT, NULL, NULL, 0));
	CF_OK(rp_ddps_send_ctl(&c2, UIW_DDPS_ACCEPT, NULL, NULL, 0));
	expect_event(e, UIW_CM_EVENT_ESTABLISHED, NULL, NULL);
	expect_event(e, UIW_CM_EVENT_ESTABLISHED, NULL, NULL);
	CF_OK(cf_prime(e));
}

#define T(name) cmocka_unit_test_setup_teardown(test_##name, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(adapt_none_to_listener),
		T(adapt_foreign_to_listener),
		T(adapt_none_to_connector),
		T(adapt_foreign_to_connector),
		T(responder_wire),
		T(initiator_wire),
		T(ssn_gap_filled),
		T(ssn_gap_never_filled),
		T(ssn_replay),
		T(ssn_out_of_window),
		T(wrong_ppid),
		T(oversize_segment),
		T(session_terminate_with_pd),
		T(session_terminate_by_peer),
		T(control_out_of_sequence),
		T(segment_before_accept),
		T(accept_from_initiator),
		T(initiate_malformed),
		T(pending_limit),
		T(enhanced_to_plain_listener),
		T(responder_private_data),
		T(responder_enhanced_reject),
		T(initiator_retry_after_terminate),
		T(initiator_retry_after_enhanced_reject),
		T(initiator_rejected),
		T(initiator_unexpected_answer),
		T(initiator_accept_insufficient_ird),
		T(initiator_private_data),
		T(initiator_holds_data),
		T(two_sessions_one_association),
		T(association_aborted),
		T(initiator_two_sessions),
	};

	/* The raw SCTP peer first: nothing in this process has initialised
	 * usrsctp yet. */
	if (sp_boot() < 0) {
		fprintf(stderr, "test_sctp: %s\n", rp_err());
		return 1;
	}
	return cmocka_run_group_tests_name("conformance: DDP over SCTP", tests,
					   NULL, NULL);
}
