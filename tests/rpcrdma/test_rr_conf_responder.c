/*
 * The transport's Responder (rr_svc.c) against RFC 8166: a raw
 * Requester (rr_raw.h, verbs and rdma_cm alone) sends crafted transport
 * headers to a Responder served as svc_run would serve it (rr_test.h's
 * test protocol: well-formed calls get a known reply), and checks every
 * answer octet for octet: the RDMA_ERROR header word by word (xid and
 * vers echoed, the credit grant, rdma_err, the version range), the
 * reply and its returned chunk lists, or the absence of any answer.
 *
 * An absence is proven by order: RC delivers in order and the
 * Responder answers each message as it takes it, so a well-formed call
 * sent after the message in question must get the first answer, and
 * does when that message was discarded; it also shows the connection
 * still works.  Refused headers that name memory name an STag nobody
 * registered: a Responder that read before refusing would end the
 * connection instead of answering.  Memory the Responder may reach
 * lies between guard zones under one registration (rr_raw.h): after
 * every case, each guard zone and every octet the Responder was not
 * to write are as they were.
 *
 * What no Responder can answer ends the connection: a Send longer than
 * its receives, more calls than it granted, a chunk that cannot be read
 * or written.  That connection ends alone: the Responder frees all it
 * held, another connection open meanwhile goes on, and new ones, raw
 * or the library's own Requester, are served.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rpcrdma_hdr.h"
#include "rr_raw.h"
#include "rr_test.h"

/* The Responder's settings: a grant and a largest call nobody else
 * uses, so that they show in the answers. */
#define CREDITS   5u
#define MAX_CALL  65536u
/* What the raw Requester asks for (RFC 8166 §4.2.3). */
#define ASK       32u
/* An STag that no one registered. */
#define NO_STAG   0xdeadbeefu

static struct rt_srv srv;
static struct rw_end rq;
static uint8_t rq_pd[8];
static uint32_t next_xid = 0x10000;
static struct rw_msg got;

/* e connected to srv, RFC 8797 private data of 4096 both ways, R as
 * asked. */
static void end_connect(struct rw_end *e, bool remote_inv)
{
	struct rw_opts o = { .pd = rq_pd, .ird = 8, .ord = 1 };

	o.pdlen = rw_pd_8797(rq_pd, remote_inv, 4096, 4096);
	assert_int_equal(rw_connect(e, (struct sockaddr *)&srv.addr, &o), 0);
}

/* The connections the Responder has ended so far. */
static unsigned ended_now(void)
{
	return rt_srv_get(&srv, &srv.ended);
}

/* Closes e, connected to srv, and unless e saw its connection end
 * already (conn_ended waits for the count of that one) waits until the
 * Responder has counted the end: no case's count of ended connections
 * is then raised later by an earlier case's. */
static void end_close(struct rw_end *e)
{
	unsigned ended = ended_now();
	bool live = e->id && !e->dead;

	rw_close(e);
	if (live && !rt_srv_wait(&srv, &srv.ended, ended + 1))
		fail_msg("the Responder did not end a closed connection");
}

static void rq_reconnect(void)
{
	end_close(&rq);
	end_connect(&rq, false);
}

static int group_setup(void **state)
{
	struct uiw_rr_opts o;

	(void)state;
	uiw_rr_opts_init(&o);
	o.credits = CREDITS;
	o.max_call = MAX_CALL;
	rt_srv_start(&srv, &o);
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	rt_srv_stop(&srv);
	return 0;
}

static int setup(void **state)
{
	(void)state;
	end_connect(&rq, false);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	end_close(&rq);
	return 0;
}

/* ---- The test protocol's streams (rr_test.h) ----------------------------- */

struct pcall {
	uint32_t xid, op, fill, n, m;
	bool reduced;           /* the data item travels in a chunk */
};

static size_t pcall_len(const struct pcall *c)
{
	return 24 + (c->reduced ? 0 : uiw_xdr_roundup(c->n)) + uiw_xdr_roundup(c->m);
}

/* The call's Payload stream at p: xid | op | fill | delay 0 | n |
 * data + pad | m | trailer + pad; reduced, without data and pad
 * (RFC 8166 §3.4.5.2).  Its length. */
static size_t put_pcall(uint8_t *p, const struct pcall *c)
{
	size_t off = 20;

	memset(p, 0, pcall_len(c));
	rt_put32(p, c->xid);
	rt_put32(p + 4, c->op);
	rt_put32(p + 8, c->fill);
	rt_put32(p + 16, c->n);
	if (!c->reduced) {
		rt_fill(p + off, c->n, c->xid);
		off += uiw_xdr_roundup(c->n);
	}
	rt_put32(p + off, c->m);
	rt_fill(p + off + 4, c->m, RT_TRAILER_SEED(c->xid));
	return off + 4 + uiw_xdr_roundup(c->m);
}

/* The reply's Payload stream: xid | 0 | n | data + pad | fill |
 * filler + pad; the data left out when it went to a Write chunk. */
static void put_preply(struct rw_words *w, uint32_t xid, uint32_t n,
		       uint32_t fill, bool data_out)
{
	size_t at;

	rw_w32(w, xid);
	rw_w32(w, 0);
	rw_w32(w, n);
	if (!data_out) {
		at = w->n;
		w->n += uiw_xdr_roundup(n);
		memset(w->b + at, 0, uiw_xdr_roundup(n));
		rt_fill(w->b + at, n, xid);
	}
	rw_w32(w, fill);
	at = w->n;
	w->n += uiw_xdr_roundup(fill);
	memset(w->b + at, 0, uiw_xdr_roundup(fill));
	rt_fill(w->b + at, fill, RT_FILLER_SEED(xid));
}

/* The reply the test protocol gives a call it cannot parse (RFC 8166
 * §4.5.2: the ULP's GARBAGE_ARGS, a normal RDMA_MSG reply). */
static void put_garbage_reply(struct rw_words *w, uint32_t xid)
{
	put_preply(w, xid, 0, 0, false);
}

/* ---- Transport headers --------------------------------------------------- */

/* The four fixed words, by hand. */
static void put_fixed(struct rw_words *w, uint32_t xid, uint32_t vers,
		      uint32_t credit, uint32_t proc)
{
	rw_w32(w, xid);
	rw_w32(w, vers);
	rw_w32(w, credit);
	rw_w32(w, proc);
}

/* The fixed words and three empty lists. */
static void put_nochunks(struct rw_words *w, uint32_t xid, uint32_t credit)
{
	put_fixed(w, xid, 1, credit, UIW_RDMA_MSG);
	rw_w32(w, 0);
	rw_w32(w, 0);
	rw_w32(w, 0);
}

/* A call's header with no chunks, and the payload of c after it. */
static void put_msg_call(struct rw_words *w, const struct pcall *c)
{
	put_nochunks(w, c->xid, ASK);
	w->n += put_pcall(w->b + w->n, c);
}

/* ---- Answers ------------------------------------------------------------- */

static void send_w_on(struct rw_end *e, const struct rw_words *w)
{
	assert_int_equal(rw_send(e, w->b, w->n, 0), 0);
}

static void send_w(const struct rw_words *w)
{
	send_w_on(&rq, w);
}

/* b's header followed, unless c is NULL, by c's Payload stream. */
static void call_words(struct rw_words *w, const struct rw_hdr *b,
		       const struct pcall *c)
{
	w->n = 0;
	assert_int_equal(rw_hdr_put(w, b), UIW_RPCRDMA_OK);
	if (c)
		w->n += put_pcall(w->b + w->n, c);
}

static void send_call(const struct rw_hdr *b, const struct pcall *c)
{
	struct rw_words w;

	call_words(&w, b, c);
	send_w(&w);
}

/* The next message the Responder sends on e is want, octet for
 * octet. */
static void expect_w_on(struct rw_end *e, const struct rw_words *want,
			const char *what)
{
	int n = rw_recv(e, &got, RT_WAIT_MS);
	char why[160];

	if (n < 0)
		fail_msg("%s: no answer (%s)", what, n == -1 ? "none came" :
			 ibv_wc_status_str(e->fail));
	if (!rw_words_same(got.data, got.len, want, why, sizeof(why)))
		fail_msg("%s: %s", what, why);
}

static void expect_w(const struct rw_words *want, const char *what)
{
	expect_w_on(&rq, want, what);
}

/* RFC 8166 §4.5, §4.5.1: xid and vers echoed, the grant, RDMA_ERROR,
 * ERR_VERS, versions 1 to 1. */
static void expect_err_vers(uint32_t xid, uint32_t vers, const char *what)
{
	struct rw_words w = { .n = 0 };

	put_fixed(&w, xid, vers, CREDITS, UIW_RDMA_ERROR);
	rw_w32(&w, UIW_RPCRDMA_ERR_VERS);
	rw_w32(&w, 1);
	rw_w32(&w, 1);
	expect_w(&w, what);
}

/* §4.5, §4.5.2: ERR_CHUNK, 20 octets. */
static void expect_err_chunk(uint32_t xid, const char *what)
{
	struct rw_words w = { .n = 0 };

	put_fixed(&w, xid, 1, CREDITS, UIW_RDMA_ERROR);
	rw_w32(&w, UIW_RPCRDMA_ERR_CHUNK);
	expect_w(&w, what);
}

/* An RDMA_MSG reply with no chunks and c's reply after it, on e. */
static void expect_plain_reply_on(struct rw_end *e, const struct pcall *c,
				  const char *what)
{
	struct rw_words w = { .n = 0 };

	put_nochunks(&w, c->xid, CREDITS);
	put_preply(&w, c->xid, c->n, c->fill, false);
	expect_w_on(e, &w, what);
	/* §4.3.1: a reply's Read list is empty; §3.3.1: the grant */
	assert_false(got.with_inv);
}

static void expect_plain_reply(const struct pcall *c, const char *what)
{
	expect_plain_reply_on(&rq, c, what);
}

/* A well-formed inline call on e and its exact reply: the connection
 * works and nothing before it was answered. */
static void good_call_on(struct rw_end *e)
{
	struct pcall c = { next_xid++, RT_ECHO, 7, 13, 5, false };
	struct rw_words w = { .n = 0 };

	put_msg_call(&w, &c);
	send_w_on(e, &w);
	expect_plain_reply_on(e, &c, "the well-formed call after it");
}

static void good_call(void)
{
	good_call_on(&rq);
}

/* Sends w, expects ERR_CHUNK for xid, then a good call. */
static void refused(const struct rw_words *w, uint32_t xid, const char *what)
{
	send_w(w);
	expect_err_chunk(xid, what);
	good_call();
}

/* The library's own Requester, connected to s after a connection
 * ended, makes a call of n octets (rr_test.h's rt_call checks every
 * octet of its reply). */
static void served_by_library(struct rt_srv *s, size_t n, const char *what)
{
	struct rt_spec sp = { .op = RT_ECHO, .n = n };
	unsigned ended = rt_srv_get(s, &s->ended);
	struct uiw_rr_clnt *c = rt_connect(s, NULL);
	char why[256];

	if (!c)
		fail_msg("%s: a Requester could not connect", what);
	if (rt_call(c, next_xid++, &sp, why, sizeof(why)) != UIW_RR_OK)
		fail_msg("%s: a call after the end: %s", what, why);
	uiw_rr_clnt_close(c);
	/* its end counted before the case goes on (end_close) */
	if (!rt_srv_wait(s, &s->ended, ended + 1))
		fail_msg("%s: the Responder did not end a closed connection",
			 what);
}

/* Waits until the Responder has ended one more connection than ended0,
 * freed all it held, and serves a new one, raw and the library's. */
static void conn_ended(unsigned ended0, const char *what)
{
	if (!rt_srv_wait(&srv, &srv.ended, ended0 + 1))
		fail_msg("%s: the Responder did not end the connection", what);
	assert_int_equal(rt_srv_get(&srv, &srv.held_now), 0);
	assert_true(rw_wait_dead(&rq, RT_WAIT_MS));
	rq_reconnect();
	good_call();
	served_by_library(&srv, 33, what);
}


/* ---- Inline calls, versions, procedures ---------------------------------- */

static void inline_call_exact(void **state)
{
	struct pcall c = { next_xid++, RT_ECHO, 3000, 1001, 17, false };
	struct rw_words w = { .n = 0 };

	(void)state;
	put_msg_call(&w, &c);
	send_w(&w);
	expect_plain_reply(&c, "an inline call");
	good_call();
}

/* RFC 8797 §4: the Responder's private data, as a Requester gets it
 * with the connection: present, its receive size the Responder's
 * (inline_recv, 4096 by default). */
static void responder_private_data(void **state)
{
	struct uiw_rpcrdma_cm cm;

	(void)state;
	uiw_rpcrdma_cm_decode(rq.peer_pd, rq.peer_pd_len, &cm);
	assert_true(cm.present);
	assert_int_equal(cm.recv_size, 4096);
	good_call();
}

/*
 * Headers written word by word, each with the answer RFC 8166 asks of
 * a Responder: the words after rdma_xid (each case gets an xid of its
 * own), sent whole or cut to len octets, followed with pay by the
 * Payload stream of a call whose 100-octet data item is reduced.  S is
 * an STag nobody registered: a Responder that read a chunk of a
 * refused header would end the connection instead of answering.
 */
enum answer { DISCARD, ERR_VERS, ERR_CHUNK };

#define S NO_STAG
#define FULL UINT_MAX
#define WORDS(...) sizeof((uint32_t[]){ __VA_ARGS__ }) / 4, { __VA_ARGS__ }

static const struct by_hand {
	const char *what;
	enum answer ans;
	unsigned len;           /* octets sent, rdma_xid included */
	bool pay;
	unsigned nw;
	uint32_t w[24];
} by_hand[] = {
	/* §4.5.1: another version, the shape of an RDMA_MSG or longer:
	 * ERR_VERS with that rdma_vers and the range 1..1 */
	{ "version 0", ERR_VERS, FULL, false, WORDS(0, ASK, 0, 0, 0, 0) },
	{ "version 2", ERR_VERS, FULL, false, WORDS(2, ASK, 0, 0, 0, 0) },
	{ "version 7, longer", ERR_VERS, FULL, false,
	  WORDS(7, ASK, 0, 0, 0, 0, 9, 9, 9) },
	{ "version 0x80000000", ERR_VERS, FULL, false,
	  WORDS(0x80000000u, ASK, 0, 0, 0, 0) },
	{ "version 0xffffffff", ERR_VERS, FULL, true,
	  WORDS(0xffffffffu, ASK, 0, 0, 0, 0) },
	/* §4.5: under 28 octets, discarded unread */
	{ "version 2 cut to 27 octets", DISCARD, 27, false,
	  WORDS(2, ASK, 0, 0, 0, 0) },
	{ "0 octets", DISCARD, 0, false, WORDS(1, ASK, 0, 0, 0, 0) },
	{ "1 octet", DISCARD, 1, true, WORDS(1, ASK, 0, 0, 0, 0) },
	{ "4 octets", DISCARD, 4, true, WORDS(1, ASK, 0, 0, 0, 0) },
	{ "15 octets", DISCARD, 15, true, WORDS(1, ASK, 0, 0, 0, 0) },
	{ "16 octets", DISCARD, 16, true, WORDS(1, ASK, 0, 0, 0, 0) },
	{ "20 octets", DISCARD, 20, true, WORDS(1, ASK, 0, 0, 0, 0) },
	{ "27 octets", DISCARD, 27, true, WORDS(1, ASK, 0, 0, 0, 0) },
	/* §4.5.2: an invalid rdma_proc */
	{ "procedure 5", ERR_CHUNK, FULL, false, WORDS(1, ASK, 5, 0, 0, 0) },
	{ "procedure 6", ERR_CHUNK, FULL, true, WORDS(1, ASK, 6, 0, 0, 0) },
	{ "procedure 0x7fffffff", ERR_CHUNK, FULL, false,
	  WORDS(1, ASK, 0x7fffffffu, 0, 0, 0) },
	{ "procedure 0xffffffff", ERR_CHUNK, FULL, false,
	  WORDS(1, ASK, 0xffffffffu, 0, 0, 0) },
	{ "procedure 5 in 24 octets", DISCARD, FULL, false,
	  WORDS(1, ASK, 5, 0, 0) },
	/* §4.6.1: RDMA_MSGP (RFC 5666's align, threshold, lists) gets
	 * ERR_CHUNK; §4.6.2: RDMA_DONE is discarded */
	{ "RDMA_MSGP", ERR_CHUNK, FULL, false,
	  WORDS(1, ASK, 2, 4096, 1024, 0, 0, 0) },
	{ "RDMA_MSGP of 28 octets", ERR_CHUNK, 28, false,
	  WORDS(1, ASK, 2, 4096, 1024, 0, 0, 0) },
	{ "RDMA_MSGP of 24 octets", DISCARD, 24, false,
	  WORDS(1, ASK, 2, 4096, 1024, 0, 0, 0) },
	{ "RDMA_DONE", DISCARD, FULL, false, WORDS(1, ASK, 3) },
	{ "RDMA_DONE of 28 octets", DISCARD, FULL, false,
	  WORDS(1, ASK, 3, 0, 0, 0) },
	/* §4.2.4: a Responder discards RDMA_ERROR, decodable or not, of
	 * any version */
	{ "RDMA_ERROR ERR_CHUNK", DISCARD, FULL, false, WORDS(1, ASK, 4, 2) },
	{ "RDMA_ERROR ERR_VERS", DISCARD, FULL, false,
	  WORDS(1, ASK, 4, 1, 1, 1) },
	{ "RDMA_ERROR of no rdma_err", DISCARD, FULL, false,
	  WORDS(1, ASK, 4, 3, 0, 0) },
	{ "RDMA_ERROR of version 2", DISCARD, FULL, false,
	  WORDS(2, ASK, 4, 2, 0, 0) },
	/* §4.5.2: the Read list cut short, not ended, its discriminator
	 * not a boolean (RFC 4506 §4.19) */
	{ "a Read list cut inside a segment", ERR_CHUNK, FULL, false,
	  WORDS(1, ASK, 0, 1, 20, S, 100) },
	{ "a Read list with no end", ERR_CHUNK, FULL, false,
	  WORDS(1, ASK, 0, 1, 20, S, 100, 0, 0x1000) },
	{ "a Read list discriminator of 2", ERR_CHUNK, FULL, true,
	  WORDS(1, ASK, 0, 2, 20, S, 100, 0, 0x1000, 0, 0, 0) },
	/* §3.4.5: Positions are multiples of 4, in the stream, not
	 * inside another chunk; one chunk's segments together */
	{ "Position 21", ERR_CHUNK, FULL, true,
	  WORDS(1, ASK, 0, 1, 21, S, 100, 0, 0x1000, 0, 0, 0) },
	{ "Position 22", ERR_CHUNK, FULL, true,
	  WORDS(1, ASK, 0, 1, 22, S, 100, 0, 0x1000, 0, 0, 0) },
	{ "Position 23", ERR_CHUNK, FULL, true,
	  WORDS(1, ASK, 0, 1, 23, S, 100, 0, 0x1000, 0, 0, 0) },
	{ "a Position past the stream's 24 inline octets", ERR_CHUNK, FULL,
	  true, WORDS(1, ASK, 0, 1, 28, S, 100, 0, 0x1000, 0, 0, 0) },
	{ "Position 0xfffffffc", ERR_CHUNK, FULL, true,
	  WORDS(1, ASK, 0, 1, 0xfffffffcu, S, 100, 0, 0x1000, 0, 0, 0) },
	{ "a chunk inside another", ERR_CHUNK, FULL, true,
	  WORDS(1, ASK, 0, 1, 20, S, 100, 0, 0x1000, 1, 40, S, 8, 0, 0x2000,
		0, 0, 0) },
	{ "a chunk's segments apart", ERR_CHUNK, FULL, true,
	  WORDS(1, ASK, 0, 1, 20, S, 50, 0, 0x1000, 1, 24, S, 0, 0, 0,
		1, 20, S, 50, 0, 0x3000, 0, 0, 0) },
	/* §3.5.3: RDMA_MSG's stream is inline from Position zero */
	{ "Position zero in RDMA_MSG", ERR_CHUNK, FULL, true,
	  WORDS(1, ASK, 0, 1, 0, S, 100, 0, 0x1000, 0, 0, 0) },
	/* §3.4.4: chunks larger than this Responder takes (max_call) */
	{ "a Read chunk over max_call", ERR_CHUNK, FULL, true,
	  WORDS(1, ASK, 0, 1, 20, S, MAX_CALL + 1, 0, 0x1000, 0, 0, 0) },
	{ "a Read chunk of two 0xffffffff segments", ERR_CHUNK, FULL, true,
	  WORDS(1, ASK, 0, 1, 20, S, 0xffffffffu, 0, 0x1000,
		1, 20, S, 0xffffffffu, 1, 0x1000, 0, 0, 0) },
	/* §4.5.2: the Write list and Reply chunk cut short, counts
	 * larger than the message (RFC 4506 §4.13), discriminators */
	{ "a Write list cut before a count", ERR_CHUNK, FULL, false,
	  WORDS(1, ASK, 0, 0, 1, 1, S, 100, 0, 0x1000, 1) },
	{ "a Write chunk count of 3 with 2 segments", ERR_CHUNK, FULL, false,
	  WORDS(1, ASK, 0, 0, 1, 3, S, 100, 0, 0x1000, S, 100, 0, 0x2000,
		0, 0) },
	{ "a Write chunk count of 0xffffffff", ERR_CHUNK, FULL, false,
	  WORDS(1, ASK, 0, 0, 1, 0xffffffffu, S, 100, 0, 0x1000, 0, 0) },
	{ "a Write list discriminator of 7", ERR_CHUNK, FULL, true,
	  WORDS(1, ASK, 0, 0, 7, 0, 0) },
	{ "a Reply chunk discriminator of 0x100", ERR_CHUNK, FULL, true,
	  WORDS(1, ASK, 0, 0, 0, 0x100, 0) },
	{ "a Reply chunk count of 0x10000000", ERR_CHUNK, FULL, false,
	  WORDS(1, ASK, 0, 0, 0, 1, 0x10000000u, S, 100, 0, 0x1000) },
	/* §4.5.2, §3.5.3: RDMA_NOMSG with nothing to hold a call's
	 * stream (a Long Reply's header, a Reply chunk alone, is no
	 * call); a Long Call over max_call, refused unread */
	{ "RDMA_NOMSG with no chunk", ERR_CHUNK, FULL, false,
	  WORDS(1, ASK, 1, 0, 0, 0) },
	{ "RDMA_NOMSG with a Reply chunk alone", ERR_CHUNK, FULL, false,
	  WORDS(1, ASK, 1, 0, 0, 1, 1, S, 4096, 0, 0x1000) },
	{ "RDMA_NOMSG with no Position-Zero chunk", ERR_CHUNK, FULL, false,
	  WORDS(1, ASK, 1, 1, 20, S, 100, 0, 0x1000, 0, 0, 1, 1, S, 100, 0,
		0x1000) },
	{ "a Long Call over max_call", ERR_CHUNK, FULL, false,
	  WORDS(1, ASK, 1, 1, 0, S, MAX_CALL + 4, 0, 0x1000, 0, 0, 0) },
	{ "a Long Call over max_call in two segments", ERR_CHUNK, FULL, false,
	  WORDS(1, ASK, 1, 1, 0, S, MAX_CALL, 0, 0x1000, 1, 0, S, 4, 0,
		0x1000, 0, 0, 0) },
};

static void headers_by_hand(void **state)
{
	struct rw_words w;
	unsigned i, k;

	(void)state;
	for (i = 0; i < sizeof(by_hand) / sizeof(by_hand[0]); i++) {
		const struct by_hand *c = &by_hand[i];
		uint32_t xid = next_xid++;

		w.n = 0;
		rw_w32(&w, xid);
		for (k = 0; k < c->nw; k++)
			rw_w32(&w, c->w[k]);
		if (c->pay)
			w.n += put_pcall(w.b + w.n, &(struct pcall){
				xid, RT_ECHO, 0, 100, 0, true });
		if (c->len != FULL)
			w.n = c->len;
		send_w(&w);
		if (c->ans == ERR_VERS)
			expect_err_vers(xid, c->w[0], c->what);
		else if (c->ans == ERR_CHUNK)
			expect_err_chunk(xid, c->what);
		good_call();
	}
}

#undef S
#undef FULL

/* Headers beyond the Responder's bounds (rr_plan.h: RR_MAX_RSEG 64
 * Read segments, RR_MAX_RCHUNK 16 Read chunks, UIW_RR_MAX_WCHUNK 8
 * Write chunks, RR_MAX_WSEG 32 Write segments, RR_MAX_PSEG 32 Reply
 * segments), one more than each: ERR_CHUNK (§4.5.2). */
static void beyond_bounds(void **state)
{
	static const struct {
		const char *what;
		unsigned rseg, rchunk, wchunk, wseg, pseg;
	} over[] = {
		{ "65 Read segments", 65, 1, 0, 0, 0 },
		{ "17 Read chunks", 17, 17, 0, 0, 0 },
		{ "9 Write chunks", 0, 0, 9, 9, 0 },
		{ "33 Write segments", 0, 0, 1, 33, 0 },
		{ "33 Reply segments", 0, 0, 0, 0, 33 },
	};
	struct rw_words w;
	struct rw_hdr b;
	unsigned i, k;

	(void)state;
	for (i = 0; i < sizeof(over) / sizeof(over[0]); i++) {
		uint32_t xid = next_xid++;

		rw_hdr_init(&b, xid, ASK, UIW_RDMA_MSG);
		/* segment k in chunk k * rchunk / rseg, at Positions in
		 * the 68-octet trailer */
		for (k = 0; k < over[i].rseg; k++)
			rw_hdr_read(&b, 28 + 4 * (k * over[i].rchunk /
					      over[i].rseg), NO_STAG, 16,
				0x1000 + 16 * k);
		for (k = 0; k < over[i].wseg; k++) {
			if (k < over[i].wchunk)
				rw_hdr_wchunk(&b);
			rw_hdr_wseg(&b, NO_STAG, 64, 0x1000 + 64 * k);
		}
		for (k = 0; k < over[i].pseg; k++)
			rw_hdr_pseg(&b, NO_STAG, 64, 0x1000 + 64 * k);
		call_words(&w, &b, &(struct pcall){ xid, RT_ECHO, 0, 0, 68,
						    false });
		refused(&w, xid, over[i].what);
	}
	/* §4.5.2: rdma_xid and the RPC message's XID differ */
	{
		uint32_t xid = next_xid++;

		w.n = 0;
		put_msg_call(&w, &(struct pcall){ xid + 1, RT_ECHO, 0, 4, 0,
						  false });
		rt_put32(w.b, xid);
		refused(&w, xid, "rdma_xid not the RPC XID");
	}
}

/* A guarded region holding the test pattern of xid over len octets. */
static void pattern_region(struct rw_region *r, size_t len, uint32_t xid)
{
	assert_int_equal(rw_region_new(&rq, r, len, 0), 0);
	rt_fill(r->data, len, xid);
}

/* Octets from on of a region the Responder may write (filled with
 * 0xee) and both guard zones are as they were; then it goes. */
static void region_done(struct rw_region *r, size_t from, const char *what)
{
	long bad = rw_region_guard(r);
	size_t j;

	for (j = from; j < r->len; j++)
		if (r->data[j] != 0xee)
			fail_msg("%s: octet %zu of %zu written", what, j,
				 r->len);
	if (bad >= 0)
		fail_msg("%s: guard octet %ld written", what, bad);
	rw_region_free(r);
}

/* Read chunks the Responder takes: at its bounds, exactly, every octet
 * from where the segments say (echoed back), no XDR pad read. */
static void read_chunks(void **state)
{
	struct rw_region r;
	struct rw_words w;
	struct rw_hdr b;
	struct pcall c;
	unsigned i;

	(void)state;
	/* 64 segments (the bound) of 16 octets, in the reverse order of
	 * their addresses: §3.4.5 concatenates them in list order */
	c = (struct pcall){ next_xid++, RT_ECHO, 1, 64 * 16, 8, true };
	assert_int_equal(rw_region_new(&rq, &r, 64 * 16, 0), 0);
	{
		/* segment i holds octets [16 i, 16 i + 16) of the item */
		uint8_t item[64 * 16];

		rt_fill(item, sizeof(item), c.xid);
		for (i = 0; i < 64; i++)
			memcpy(r.data + (63 - i) * 16, item + 16 * i, 16);
	}
	rw_hdr_init(&b, c.xid, ASK, UIW_RDMA_MSG);
	for (i = 0; i < 64; i++)
		rw_hdr_read(&b, 20, r.rkey, 16, r.addr + (63 - i) * 16);
	send_call(&b, &c);
	expect_plain_reply(&c, "a Read chunk of 64 segments");
	region_done(&r, r.len, "64 segments");

	/* 16 chunks (the bound): the item's at 20, 15 empty ones inside
	 * the trailer (Positions of the unreduced stream, §3.4.5) */
	c = (struct pcall){ next_xid++, RT_ECHO, 0, 333, 60, true };
	pattern_region(&r, 333, c.xid);
	rw_hdr_init(&b, c.xid, ASK, UIW_RDMA_MSG);
	rw_hdr_read(&b, 20, r.rkey, 333, r.addr);
	for (i = 0; i < 15; i++)
		rw_hdr_read(&b, 20 + 336 + 4 + 4 * i, NO_STAG, 0, 0);
	send_call(&b, &c);
	expect_plain_reply(&c, "16 Read chunks");
	region_done(&r, r.len, "16 chunks");

	/* the chunk with its XDR pad (§3.4.5.2: its length is then the
	 * item's and the pad's) */
	c = (struct pcall){ next_xid++, RT_ECHO, 0, 101, 0, true };
	pattern_region(&r, 104, c.xid);
	memset(r.data + 101, 0, 3);
	rw_hdr_init(&b, c.xid, ASK, UIW_RDMA_MSG);
	rw_hdr_read(&b, 20, r.rkey, 104, r.addr);
	send_call(&b, &c);
	expect_plain_reply(&c, "a Read chunk with its pad");
	rw_region_free(&r);

	/* a chunk at the very end of the stream: Position = its length */
	c = (struct pcall){ next_xid++, RT_ECHO, 0, 6, 0, false };
	rw_hdr_init(&b, c.xid, ASK, UIW_RDMA_MSG);
	rw_hdr_read(&b, (uint32_t)pcall_len(&c), NO_STAG, 0, 0);
	send_call(&b, &c);
	expect_plain_reply(&c, "an empty chunk at the end");

	/* a chunk shorter than its item: the Payload stream it makes
	 * cannot be parsed; the ULP answers (GARBAGE_ARGS, §4.5.2) */
	c = (struct pcall){ next_xid++, RT_ECHO, 0, 100, 0, true };
	pattern_region(&r, 100, c.xid);
	rw_hdr_init(&b, c.xid, ASK, UIW_RDMA_MSG);
	rw_hdr_read(&b, 20, r.rkey, 60, r.addr);
	send_call(&b, &c);
	w.n = 0;
	put_nochunks(&w, c.xid, CREDITS);
	put_garbage_reply(&w, c.xid);
	expect_w(&w, "a Read chunk shorter than its item");
	rw_region_free(&r);
	good_call();
}

/* §4.5.3: a Read chunk the Responder cannot read (an STag nobody
 * registered; a range past the region) ends the connection, that one
 * alone: another connection, open all along, goes on; the Responder
 * frees it and serves new ones. */
static void read_chunk_unreadable(void **state)
{
	struct rw_end other;
	struct rw_region r;
	struct rw_words w;
	struct rw_hdr b;
	unsigned k;

	(void)state;
	end_connect(&other, false);
	good_call_on(&other);
	for (k = 0; k < 2; k++) {
		struct pcall c = { next_xid++, RT_ECHO, 0, 100, 0, true };
		unsigned ended = ended_now();

		pattern_region(&r, 100, c.xid);
		rw_hdr_init(&b, c.xid, ASK, UIW_RDMA_MSG);
		if (k == 0)
			rw_hdr_read(&b, 20, NO_STAG, 100, r.addr);
		else
			rw_hdr_read(&b, 20, r.rkey, 100,
				    r.addr + 100 + RW_GUARD);
		/* the Send may complete flushed: the connection ends */
		call_words(&w, &b, &c);
		assert_int_equal(rw_post(&rq, w.b, w.n, 0), 0);
		assert_int_equal(rw_recv(&rq, &got, RT_WAIT_MS), -2);
		rw_region_free(&r);
		conn_ended(ended, "an unreadable Read chunk");
		good_call_on(&other);
	}
	end_close(&other);
}

/* The same of a Write chunk (§3.4.6): the Responder's RDMA Write to
 * an STag that is not the Requester's, or past its region, is refused
 * by the Requester's RNIC, which ends the connection (RFC 5040 §7.2);
 * nothing lands in the region, and the Responder frees the connection
 * and serves new ones. */
static void write_chunk_unwritable(void **state)
{
	struct rw_region r;
	struct rw_words w;
	struct rw_hdr b;
	unsigned k;

	(void)state;
	for (k = 0; k < 2; k++) {
		/* the call's 8 octets of data come back DDP-eligible */
		struct pcall c = { next_xid++, RT_ECHO | RT_F_DDP, 0, 8, 0,
				   false };
		unsigned ended = ended_now();

		assert_int_equal(rw_region_new(&rq, &r, 64, 0xee), 0);
		rw_hdr_init(&b, c.xid, ASK, UIW_RDMA_MSG);
		rw_hdr_wchunk(&b);
		if (k == 0)
			rw_hdr_wseg(&b, r.rkey ^ 0x33cc00, 64, r.addr);
		else
			rw_hdr_wseg(&b, r.rkey, 64, r.addr + 64 + RW_GUARD);
		/* the Send may complete flushed: the connection ends */
		call_words(&w, &b, &c);
		assert_int_equal(rw_post(&rq, w.b, w.n, 0), 0);
		assert_int_equal(rw_recv(&rq, &got, RT_WAIT_MS), -2);
		region_done(&r, 0, "an unwritable Write chunk");
		conn_ended(ended, "an unwritable Write chunk");
	}
}

/*
 * Write chunks (§3.4.6, §4.3.2): the result in the segments in order,
 * each returned segment with its handle and offset and the octets
 * written, not one octet outside them; an unused chunk comes back with
 * its count and empty segments (§4.3.2.2), an empty one empty with
 * the result inline (§4.3.2.3); a result larger than its chunk cannot
 * be conveyed: ERR_CHUNK, nothing written.
 */
#define ITEM 2999

static void write_chunks(void **state)
{
	static const uint32_t seglen[3] = { 1000, 1000, 1500 };
	struct rw_region r[3];
	struct rw_words want;
	struct rw_hdr b, e;
	struct pcall c;
	unsigned i, k;
	uint8_t item[ITEM];

	(void)state;
	for (k = 0; k < 4; k++) {
		/* k 0: the result in three segments, the last in part
		 * and with no XDR pad (§3.4.6.2); 1: not DDP-eligible, the
		 * chunk unused; 2: an empty chunk first, the result inline,
		 * the second chunk unused; 3: one octet short */
		c = (struct pcall){ next_xid++, k == 1 ? RT_ECHO :
				    RT_ECHO | RT_F_DDP, 5, ITEM, 0, false };
		for (i = 0; i < 3; i++)
			assert_int_equal(rw_region_new(&rq, &r[i], seglen[i],
						       0xee), 0);
		rw_hdr_init(&b, c.xid, ASK, UIW_RDMA_MSG);
		rw_hdr_init(&e, c.xid, CREDITS, UIW_RDMA_MSG);
		if (k == 2) {
			rw_hdr_wchunk(&b);
			rw_hdr_wchunk(&e);
		}
		rw_hdr_wchunk(&b);
		rw_hdr_wchunk(&e);
		for (i = 0; i < 3; i++) {
			uint32_t len = k == 3 && i == 2 ? ITEM - 2001 :
				seglen[i];
			uint32_t wr = 0;

			if (k == 0)
				wr = i < 2 ? seglen[i] : ITEM - 2000;
			rw_hdr_wseg(&b, r[i].rkey, len, r[i].addr);
			rw_hdr_wseg(&e, r[i].rkey, wr, r[i].addr);
		}
		send_call(&b, &c);
		if (k == 3) {
			expect_err_chunk(c.xid, "a result larger than its "
					 "Write chunk");
		} else {
			want.n = 0;
			assert_int_equal(rw_hdr_put(&want, &e), UIW_RPCRDMA_OK);
			put_preply(&want, c.xid, ITEM, 5, k == 0);
			expect_w(&want, "a reply with a Write list");
		}
		rt_fill(item, sizeof(item), c.xid);
		for (i = 0; i < 3; i++) {
			size_t off = (size_t)i * 1000, n = 0;

			if (k == 0)
				n = i < 2 ? 1000 : ITEM - 2000;
			assert_memory_equal(r[i].data, item + off, n);
			region_done(&r[i], n, "a Write segment");
		}
		good_call();
	}
}

#undef ITEM

/*
 * The Reply chunk (§3.5.3, §4.3.3): a reply too long for a Send goes
 * there, the chunk returned with the octets written in each segment,
 * nothing outside; too small, or none, and the reply cannot be
 * conveyed: ERR_CHUNK, nothing written.  A short reply travels inline.
 */
static void reply_chunk(void **state)
{
	/* the reply: xid | 0 | n | data (1000) | fill | filler (4000) */
	const uint32_t total = 12 + 1000 + 4 + 4000;
	const uint32_t len0[5] = { 3000, 3000, 3000, 0, 1000 };
	const uint32_t len1[5] = { total - 3000, 8000, total - 3001, 0,
				   1000 };
	struct rw_region r[2];
	struct rw_words want;
	struct rw_hdr b, e;
	struct pcall c;
	unsigned i, k;

	(void)state;
	for (k = 0; k < 5; k++) {
		/* k 0: exactly; 1: room to spare; 2: one octet short; 3:
		 * none offered; 4: offered to a short reply */
		c = (struct pcall){ next_xid++, RT_ECHO, k == 4 ? 8 : 4000,
				    1000, 0, false };
		for (i = 0; i < 2; i++)
			assert_int_equal(rw_region_new(&rq, &r[i], 8000, 0xee),
					 0);
		rw_hdr_init(&b, c.xid, ASK, UIW_RDMA_MSG);
		rw_hdr_init(&e, c.xid, CREDITS, UIW_RDMA_NOMSG);
		if (k != 3) {
			rw_hdr_pseg(&b, r[0].rkey, len0[k], r[0].addr);
			rw_hdr_pseg(&b, r[1].rkey, len1[k], r[1].addr);
			rw_hdr_pseg(&e, r[0].rkey, 3000, r[0].addr);
			rw_hdr_pseg(&e, r[1].rkey, total - 3000, r[1].addr);
		}
		send_call(&b, &c);
		if (k == 2 || k == 3) {
			expect_err_chunk(c.xid, "a reply longer than its Reply "
					 "chunk");
		} else if (k == 4) {
			expect_plain_reply(&c, "a short reply, a Reply chunk "
					   "offered");
		} else {
			want.n = 0;
			assert_int_equal(rw_hdr_put(&want, &e), UIW_RPCRDMA_OK);
			expect_w(&want, "a Long Reply");
			want.n = 0;
			put_preply(&want, c.xid, 1000, 4000, false);
			assert_memory_equal(r[0].data, want.b, 3000);
			assert_memory_equal(r[1].data, want.b + 3000,
					    total - 3000);
		}
		for (i = 0; i < 2; i++)
			region_done(&r[i], k >= 2 ? 0 : i ? total - 3000 :
				    3000, "a Reply segment");
		good_call();
	}
}

/* ---- Long Calls ---------------------------------------------------------- */

/* A Long Call (§3.5.3): RDMA_NOMSG, the whole Payload stream in a
 * Position-Zero Read chunk, here in three segments of three regions;
 * at max_call it is served, 4 octets more ERR_CHUNK before any Read;
 * its stream's XID must be rdma_xid (§4.5.2). */
static void long_call(void **state)
{
	struct rw_region r[3];
	struct rw_hdr b;
	struct pcall c;
	uint8_t *stream;
	size_t len, cut[4];
	unsigned i, k;

	(void)state;
	stream = malloc(MAX_CALL + 4);
	assert_non_null(stream);
	for (k = 0; k < 3; k++) {
		/* k 0: 5000 octets; 1: max_call exactly; 2: the XID of
		 * the stream not rdma_xid */
		c = (struct pcall){ next_xid++, RT_ECHO, 9, k == 1 ? 0 : 1000,
				    k == 1 ? MAX_CALL - 24 : 3976, false };
		len = put_pcall(stream, &c);
		assert_int_equal(len, k == 1 ? MAX_CALL : 5000);
		if (k == 2)
			rt_put32(stream, c.xid ^ 1);
		cut[0] = 0;
		cut[1] = len / 3 + 1;       /* cuts that are not aligned */
		cut[2] = 2 * len / 3 + 2;
		cut[3] = len;
		rw_hdr_init(&b, c.xid, ASK, UIW_RDMA_NOMSG);
		for (i = 0; i < 3; i++) {
			assert_int_equal(rw_region_new(&rq, &r[i],
						       cut[i + 1] - cut[i], 0),
					 0);
			memcpy(r[i].data, stream + cut[i], cut[i + 1] - cut[i]);
			rw_hdr_read(&b, 0, r[i].rkey,
				(uint32_t)(cut[i + 1] - cut[i]), r[i].addr);
		}
		send_call(&b, NULL);
		if (k == 2)
			expect_err_chunk(c.xid, "a Long Call whose XID is not "
					 "rdma_xid");
		else
			expect_plain_reply(&c, "a Long Call");
		for (i = 0; i < 3; i++) {
			region_done(&r[i], r[i].len, "a Position-Zero segment");
		}
		good_call();
	}
	free(stream);
}

/* ---- Receive resources --------------------------------------------------- */

/* A Send longer than the Responder's receive buffers (inline_recv,
 * 4096 by default): its receive completes in error and the connection
 * ends (RFC 5041 §7.2, RFC 8166 §3.3); the Responder frees it and
 * serves the next.  On a Responder of 1024 (which says so, RFC 8797
 * §4), to a Requester that sends no private data, 2000 octets are too
 * long already. */
static void inline_too_long(void **state)
{
	struct pcall c = { next_xid++, RT_ECHO, 0, 4100, 0, false };
	struct rw_words w = { .n = 0 };
	unsigned ended = ended_now();
	struct uiw_rpcrdma_cm cm;
	struct uiw_rr_opts o;
	struct rt_srv small;
	struct rw_end e;

	(void)state;
	put_msg_call(&w, &c);
	assert_true(w.n > 4096);
	rw_post(&rq, w.b, w.n, 0);
	conn_ended(ended, "a Send over the receive size");

	uiw_rr_opts_init(&o);
	o.inline_recv = 1024;
	rt_srv_start(&small, &o);
	assert_int_equal(rw_connect(&e, (struct sockaddr *)&small.addr,
				    &(struct rw_opts){ 0 }), 0);
	uiw_rpcrdma_cm_decode(e.peer_pd, e.peer_pd_len, &cm);
	assert_true(cm.present);
	assert_int_equal(cm.recv_size, 1024);
	c = (struct pcall){ next_xid++, RT_ECHO, 0, 1948, 0, false };
	w.n = 0;
	put_msg_call(&w, &c);
	assert_int_equal(w.n, 2000);
	assert_int_equal(rw_post(&e, w.b, w.n, 0), 0);
	assert_true(rw_wait_dead(&e, RT_WAIT_MS));
	assert_true(rt_srv_wait(&small, &small.ended, 1));
	rw_close(&e);
	/* a call longer than 1024 octets, in a Read chunk */
	served_by_library(&small, 3000, "a Send over 1024 octets");
	rt_srv_stop(&small);
}

/*
 * §3.3.1: the grant is the receives the Responder has posted, never
 * zero.  With the Responder not polling, exactly CREDITS calls find a
 * receive each (all are then answered, each answer granting CREDITS);
 * one more finds none and the connection ends (RFC 5041 §7.1), as the
 * README of the Responder says; it frees all and serves the next.
 */
static void credits_exact(void **state)
{
	struct pcall c[CREDITS + 1];
	struct rw_words w;
	unsigned i, ended;

	(void)state;
	for (i = 0; i <= CREDITS; i++)
		c[i] = (struct pcall){ next_xid++, RT_ECHO, 0, i, 0, false };
	rt_srv_gate(&srv);
	for (i = 0; i < CREDITS; i++) {
		w.n = 0;
		put_msg_call(&w, &c[i]);
		send_w(&w);
	}
	rt_srv_ungate(&srv);
	for (i = 0; i < CREDITS; i++)
		expect_plain_reply(&c[i], "calls within the grant");
	good_call();

	ended = ended_now();
	rt_srv_gate(&srv);
	for (i = 0; i <= CREDITS; i++) {
		c[i].xid = next_xid++;
		w.n = 0;
		put_msg_call(&w, &c[i]);
		rw_post(&rq, w.b, w.n, 0);
	}
	assert_true(rw_wait_dead(&rq, RT_WAIT_MS));
	rt_srv_ungate(&srv);
	conn_ended(ended, "a call beyond the receives posted");
}

/* Calls beyond the grant while the Responder holds the earlier ones:
 * it posts a spare receive for each held call, so a Requester beyond
 * its credits is served until twice the grant is held; past that, the
 * call would go unanswered, so the connection ends (§3.3.1: "the RDMA
 * layer may signal an error, possibly terminating the connection";
 * §4.5.4: a Responder that cannot answer closes the connection). */
static void credits_overrun_held(void **state)
{
	struct pcall c = { 0, RT_HOLD, 0, 0, 0, false };
	struct rw_words w;
	unsigned i, ended = ended_now(), calls = rt_srv_get(&srv, &srv.calls);
	bool said;

	(void)state;
	for (i = 0; i < 2 * CREDITS; i++) {
		c.xid = next_xid++;
		w.n = 0;
		put_msg_call(&w, &c);
		send_w(&w);
		assert_true(rt_srv_wait(&srv, &srv.calls, calls + i + 1));
	}
	c.xid = next_xid++;
	w.n = 0;
	put_msg_call(&w, &c);
	assert_int_equal(rw_post(&rq, w.b, w.n, 0), 0);
	if (!rt_srv_wait(&srv, &srv.ended, ended + 1))
		fail_msg("the Responder did not end the connection");
	pthread_mutex_lock(&srv.mu);
	said = strstr(srv.last_end_why, "more calls than granted") != NULL;
	pthread_mutex_unlock(&srv.mu);
	assert_true(said);
	conn_ended(ended, "a call beyond twice the grant");
}

/* The grant never 0: uiw_rr_listen refuses 0 credits; a Responder of
 * one credit grants 1. */
static void grant_never_zero(void **state)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	struct uiw_rr_opts o;
	struct rt_srv one;
	struct rw_end save = rq;
	struct rw_words w;
	struct pcall c = { next_xid++, RT_ECHO, 0, 1, 0, false };
	char err[128];

	(void)state;
	uiw_rr_opts_init(&o);
	o.credits = 0;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	errno = 0;
	assert_null(uiw_rr_listen((struct sockaddr *)&a, sizeof(a), &o, err,
				  sizeof(err)));
	assert_int_equal(errno, EINVAL);
	assert_non_null(strstr(err, "§3.3.1"));
	o.credits = 1;
	rt_srv_start(&one, &o);
	assert_int_equal(rw_connect(&rq, (struct sockaddr *)&one.addr,
				    &(struct rw_opts){ 0 }), 0);
	w.n = 0;
	put_msg_call(&w, &c);
	send_w(&w);
	w.n = 0;
	put_nochunks(&w, c.xid, 1);
	put_preply(&w, c.xid, 1, 0, false);
	expect_w(&w, "a reply of a Responder of one credit");
	rw_close(&rq);
	rt_srv_stop(&one);
	rq = save;
	good_call();
}

/* ---- Remote invalidation (RFC 8797 §4.1) ------------------------------- */

/* With R set by the Requester, the reply comes by Send With Invalidate
 * of an STag of that call (its Write chunk's); without, by Send. */
static void send_with_invalidate(void **state)
{
	struct rw_region r;
	struct rw_words want;
	struct rw_hdr b, e;
	unsigned k;

	(void)state;
	for (k = 0; k < 2; k++) {
		struct pcall c = { next_xid++, RT_ECHO | RT_F_DDP, 0, 64, 0,
				   false };

		end_close(&rq);
		end_connect(&rq, k == 0);
		assert_int_equal(rw_region_new(&rq, &r, 64, 0xee), 0);
		rw_hdr_init(&b, c.xid, ASK, UIW_RDMA_MSG);
		rw_hdr_init(&e, c.xid, CREDITS, UIW_RDMA_MSG);
		rw_hdr_wchunk(&b);
		rw_hdr_wchunk(&e);
		rw_hdr_wseg(&b, r.rkey, 64, r.addr);
		rw_hdr_wseg(&e, r.rkey, 64, r.addr);
		send_call(&b, &c);
		want.n = 0;
		assert_int_equal(rw_hdr_put(&want, &e), UIW_RPCRDMA_OK);
		put_preply(&want, c.xid, 64, 0, true);
		expect_w(&want, "a reply with a Write chunk");
		assert_int_equal(got.with_inv, k == 0);
		if (k == 0)
			assert_int_equal(got.inv_rkey, r.rkey);
		assert_int_equal(rt_check(r.data, 64, c.xid), 64);
		region_done(&r, r.len, "the Write chunk");
	}
	rq_reconnect();
	good_call();
}

/* Each case on a connection of its own. */
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		T(inline_call_exact),
		T(responder_private_data),
		T(headers_by_hand),
		T(beyond_bounds),
		T(read_chunks),
		T(read_chunk_unreadable),
		T(write_chunks),
		T(write_chunk_unwritable),
		T(reply_chunk),
		T(long_call),
		T(inline_too_long),
		T(credits_exact),
		T(credits_overrun_held),
		T(grant_never_zero),
		T(send_with_invalidate),
	};

	if (argc > 1)
		cmocka_set_test_filter(argv[1]);
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
