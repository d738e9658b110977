/*
 * The transport's Requester (rr_clnt.c) against RFC 8166: a raw
 * Responder (rr_raw.h, verbs and rdma_cm alone) takes the calls of a
 * uiw_rr_clnt made from threads, checks their headers word by word,
 * and answers with crafted replies: replies for no call, undecodable
 * ones, RDMA_MSGP and RDMA_DONE (all dropped and counted, the real
 * reply still completing the call); replies whose Write list or Reply
 * chunk is not what was offered (BAD_REPLY); RDMA_ERROR; grants of 0
 * and grants that change; Send With Invalidate of the call's STag and
 * of another; replies after the call timed out; the Responder going
 * away with calls outstanding.
 *
 * Credits are checked by the RNIC itself: the raw Responder posts
 * exactly the receives its last grant allows beyond the calls it
 * holds (RFC 8166 §3.3.1), so that one call too many finds no receive
 * and ends the connection (RFC 5041 §7.1); the Requester's own counts
 * (rr_clnt_credits) must agree.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rpcrdma_hdr.h"
#include "rr_raw.h"
#include "rr_test.h"

/* What the Requester asks for (uiw_rr_opts_init), and the raw
 * Responder's receives at first. */
#define ASK       128u
#define RECVS     16u
#define NO_STAG   0xdeadbeefu
/* Threads and calls each of the credit cases. */
#define THREADS   6
#define PER       6

static struct rw_end rs;
static struct uiw_rr_clnt *clnt;
static uint32_t clnt_ask;       /* the credits it asks for */
static uint8_t rs_pd[8];
static uint32_t next_xid = 0x20000;

/* ---- Connections ------------------------------------------------------- */

struct connector {
	struct sockaddr_storage ss;
	struct uiw_rr_opts o;
	struct uiw_rr_clnt *c;
};

static void *connect_run(void *arg)
{
	struct connector *k = arg;

	k->c = uiw_rr_clnt_connect((struct sockaddr *)&k->ss,
				   sizeof(struct sockaddr_in), &k->o, NULL, 0);
	return NULL;
}

/* A Requester with co (NULL: defaults) connected to a raw Responder
 * accepting with ro (NULL: RFC 8797 both ways, 4096, R set, RECVS
 * receives kept posted). */
static void pair(const struct uiw_rr_opts *co, const struct rw_opts *ro)
{
	struct rw_opts d = { .pd = rs_pd, .nrecv = RECVS };
	struct connector k;
	pthread_t th;

	d.pdlen = rw_pd_8797(rs_pd, true, 4096, 4096);
	if (co)
		k.o = *co;
	else
		uiw_rr_opts_init(&k.o);
	assert_int_equal(rw_listen(&rs, &k.ss), 0);
	assert_int_equal(pthread_create(&th, NULL, connect_run, &k), 0);
	assert_int_equal(rw_accept(&rs, ro ? ro : &d), 0);
	pthread_join(th, NULL);
	assert_non_null(k.c);
	clnt = k.c;
	clnt_ask = k.o.credits;
}

/* Threads of calls still running: a case that fails leaves them
 * blocked in uiw_rr_call; the end of the connection completes their
 * calls, and they are joined before the Requester goes.  Their state
 * lives in static storage, which outlives the case. */
static pthread_t running[THREADS + 4];
static unsigned nrunning;

static void track(pthread_t th)
{
	running[nrunning++] = th;
}

static void join(pthread_t th)
{
	unsigned i;

	pthread_join(th, NULL);
	for (i = 0; i < nrunning; i++)
		if (pthread_equal(running[i], th)) {
			running[i] = running[--nrunning];
			break;
		}
}

static void unpair(void)
{
	rw_close(&rs);
	while (nrunning)
		join(running[0]);
	if (clnt)
		uiw_rr_clnt_close(clnt);
	clnt = NULL;
}

static int setup(void **state)
{
	(void)state;
	pair(NULL, NULL);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	unpair();
	return 0;
}

static struct uiw_rr_stats stats(void)
{
	struct uiw_rr_stats s;

	uiw_rr_clnt_stats(clnt, &s);
	return s;
}

/* ---- Calls from threads ------------------------------------------------ */

/* A call's Payload stream is xid | 3 words; its reply's xid | 0 | ~xid
 * (12 octets) unless a case sends another. */
struct caller {
	pthread_t th;
	uint32_t xid;
	uint8_t head[16];
	struct uiw_rr_iov iov;
	struct uiw_rr_call call;
	/* after the call */
	enum uiw_rr_status st;
	char msg[128];
	uint8_t *reply;
	size_t reply_len;
	uint64_t wlen0;
	uint32_t vers_low, vers_high;
	uint64_t done_ms;
};

static void *caller_run(void *arg)
{
	struct caller *k = arg;

	uiw_rr_call(clnt, &k->call);
	k->st = k->call.status;
	memcpy(k->msg, k->call.msg, sizeof(k->msg));
	k->reply_len = k->call.reply ? k->call.reply_len : 0;
	k->reply = malloc(k->reply_len + 1);
	if (k->reply_len)
		memcpy(k->reply, k->call.reply, k->reply_len);
	k->wlen0 = k->call.wlen[0];
	k->vers_low = k->call.vers_low;
	k->vers_high = k->call.vers_high;
	uiw_rr_call_done(clnt, &k->call);
	k->done_ms = rr_now_ms();
	return NULL;
}

/* Starts a call: a reply of up to reply_max octets, a Write chunk of
 * (wbuf, wlen) when wbuf, a timeout (0: none). */
static void call_start(struct caller *k, size_t reply_max, void *wbuf,
		       size_t wlen, unsigned timeout_ms)
{
	memset(k, 0, sizeof(*k));
	k->xid = next_xid++;
	rt_put32(k->head, k->xid);
	rt_put32(k->head + 4, 0x11111111u);
	rt_put32(k->head + 8, 0x22222222u);
	rt_put32(k->head + 12, 0x33333333u);
	k->iov = (struct uiw_rr_iov){ k->head, sizeof(k->head), false };
	k->call.iov = &k->iov;
	k->call.niov = 1;
	k->call.reply_max = reply_max;
	k->call.timeout_ms = timeout_ms;
	if (wbuf) {
		k->call.wt[0] = (struct uiw_rr_wtarget){ wbuf, wlen };
		k->call.nwt = 1;
	}
	assert_int_equal(pthread_create(&k->th, NULL, caller_run, k), 0);
	track(k->th);
}

static void call_join(struct caller *k)
{
	join(k->th);
}

static void call_free(struct caller *k)
{
	free(k->reply);
	k->reply = NULL;
}

/* Joins k and checks it ended with st (and, OK, the plain reply). */
static void call_end(struct caller *k, enum uiw_rr_status st,
		     const char *what)
{
	call_join(k);
	if (k->st != st)
		fail_msg("%s: the call ended %s (%s), expected %s", what,
			 uiw_rr_status_name(k->st), k->msg,
			 uiw_rr_status_name(st));
	if (st == UIW_RR_OK && k->reply_len == 12) {
		assert_int_equal(rt_get32(k->reply), k->xid);
		assert_int_equal(rt_get32(k->reply + 4), 0);
		assert_int_equal(rt_get32(k->reply + 8), ~k->xid);
	}
	call_free(k);
}

/* ---- The raw Responder's side ------------------------------------------- */

static struct rw_msg m;

/* The next call: decoded into d, its fixed words checked (§4.2.2,
 * §4.2.3: version 1, the credits the Requester asks, RDMA_MSG). */
static void take_call(struct rw_hdr *d, const char *what)
{
	int n = rw_recv(&rs, &m, RT_WAIT_MS);

	if (n < 0)
		fail_msg("%s: no call came (%s)", what, n == -1 ? "timeout" :
			 ibv_wc_status_str(rs.fail));
	assert_int_equal(rw_hdr_decode(d, m.data, m.len), UIW_RPCRDMA_OK);
	assert_int_equal(d->h.vers, 1);
	assert_int_equal(d->h.credit, clnt_ask);
	assert_int_equal(d->h.proc, UIW_RDMA_MSG);
	assert_false(m.with_inv);
}

/* The plain reply's Payload stream. */
static void put_payload(struct rw_words *w, uint32_t xid)
{
	rw_w32(w, xid);
	rw_w32(w, 0);
	rw_w32(w, ~xid);
}

/* Sends b, its payload after it unless b is RDMA_NOMSG or
 * RDMA_ERROR; Send With Invalidate of inv unless 0.  Waits for the
 * Send's completion unless the case ends the connection (post). */
static void reply_send(const struct rw_hdr *b, uint32_t inv, bool post)
{
	struct rw_words w = { .n = 0 };

	assert_int_equal(rw_hdr_put(&w, b), UIW_RPCRDMA_OK);
	if (b->h.proc == UIW_RDMA_MSG)
		put_payload(&w, b->h.xid);
	if (post)
		assert_int_equal(rw_post(&rs, w.b, w.n, inv), 0);
	else if (rw_send(&rs, w.b, w.n, inv))
		fail_msg("the reply to %08x could not be sent: the connection "
			 "ended (%s)", b->h.xid, ibv_wc_status_str(rs.fail));
}

static void reply_hdr(const struct rw_hdr *b, uint32_t inv)
{
	reply_send(b, inv, false);
}

/* The plain reply to xid, granting credit. */
static void reply_plain(uint32_t xid, uint32_t credit)
{
	struct rw_hdr b;

	rw_hdr_init(&b, xid, credit, UIW_RDMA_MSG);
	reply_hdr(&b, 0);
}

/* ---- Call headers ------------------------------------------------------- */

/* The Requester's calls word by word: version 1, the credits it asks
 * (§4.2.3), empty lists for a short call and reply; a Write chunk of
 * the caller's memory (§3.4.6); a Reply chunk when the reply may
 * exceed the reply inline threshold (§4.3.3); one call before the
 * first reply (§3.3.3: the raw Responder posts one receive). */
static void call_headers(void **state)
{
	struct rw_opts one = { .pd = rs_pd, .nrecv = 1, .hold = true };
	uint8_t *wbuf = malloc(3000), *big = malloc(9000);
	static struct caller k;
	struct rw_words want;
	struct rw_hdr d, b;
	unsigned i;
	char why[160];

	(void)state;
	unpair();
	one.pdlen = rw_pd_8797(rs_pd, true, 4096, 4096);
	pair(NULL, &one);
	call_start(&k, 64, NULL, 0, 0);
	take_call(&d, "a short call");
	want.n = 0;
	rw_w32(&want, k.xid);
	rw_w32(&want, 1);
	rw_w32(&want, ASK);
	rw_w32(&want, UIW_RDMA_MSG);
	rw_w32(&want, 0);
	rw_w32(&want, 0);
	rw_w32(&want, 0);
	rw_wbytes(&want, k.head, sizeof(k.head));
	if (!rw_words_same(m.data, m.len, &want, why, sizeof(why)))
		fail_msg("a short call: %s", why);
	assert_int_equal(rw_repost(&rs, 1), 0);
	reply_plain(k.xid, 1);
	call_end(&k, UIW_RR_OK, "a short call");

	/* a Write chunk: the result written, returned with its length */
	memset(wbuf, 0xee, 3000);
	call_start(&k, 64, wbuf, 3000, 0);
	take_call(&d, "a call with a Write chunk");
	assert_int_equal(d.h.nwrite_chunk, 1);
	assert_int_equal(d.h.nwrite_seg, 1);
	assert_int_equal(d.h.write_seg[0].length, 3000);
	assert_int_equal(d.h.write_seg[0].offset, (uintptr_t)wbuf);
	assert_false(d.h.reply_present);
	assert_int_equal(d.h.nread_seg, 0);
	for (i = 0; i < 1234; i++)
		big[i] = (uint8_t)(i * 7);
	assert_int_equal(rw_write(&rs, big, 1234, d.h.write_seg[0].handle,
				  d.h.write_seg[0].offset), 0);
	assert_int_equal(rw_repost(&rs, 1), 0);
	rw_hdr_init(&b, k.xid, 1, UIW_RDMA_MSG);
	rw_hdr_wchunk(&b);
	rw_hdr_wseg(&b, d.h.write_seg[0].handle, 1234,
		    d.h.write_seg[0].offset);
	reply_hdr(&b, 0);
	call_join(&k);
	assert_int_equal(k.st, UIW_RR_OK);
	assert_int_equal(k.wlen0, 1234);
	assert_memory_equal(wbuf, big, 1234);
	for (i = 1234; i < 3000; i++)
		assert_int_equal(wbuf[i], 0xee);
	call_free(&k);

	/* a reply of up to 9000 octets: a Reply chunk of 9000 */
	call_start(&k, 9000, NULL, 0, 0);
	take_call(&d, "a call with a Reply chunk");
	assert_true(d.h.reply_present);
	assert_int_equal(d.h.nreply_seg, 1);
	assert_int_equal(d.h.reply_seg[0].length, 9000);
	assert_int_equal(d.h.nwrite_chunk, 0);
	for (i = 0; i < 9000; i++)
		big[i] = (uint8_t)(i * 13 + 1);
	assert_int_equal(rw_write(&rs, big, 9000, d.h.reply_seg[0].handle,
				  d.h.reply_seg[0].offset), 0);
	assert_int_equal(rw_repost(&rs, 1), 0);
	rw_hdr_init(&b, k.xid, 1, UIW_RDMA_NOMSG);
	rw_hdr_pseg(&b, d.h.reply_seg[0].handle, 9000,
		    d.h.reply_seg[0].offset);
	reply_hdr(&b, 0);
	call_join(&k);
	assert_int_equal(k.st, UIW_RR_OK);
	assert_int_equal(k.reply_len, 9000);
	assert_memory_equal(k.reply, big, 9000);
	call_free(&k);
	free(wbuf);
	free(big);
}

/* ---- Replies dropped ----------------------------------------------------- */

/* Waits until the Requester has dropped n replies in all. */
static void wait_dropped(uint64_t n, const char *what)
{
	uint64_t end = rr_now_ms() + RT_WAIT_MS;

	while (stats().dropped < n && rr_now_ms() < end)
		sched_yield();
	if (stats().dropped != n)
		fail_msg("%s: %llu replies dropped, expected %llu", what,
			 (unsigned long long)stats().dropped,
			 (unsigned long long)n);
}

/*
 * §4.5: a reply whose header cannot be decoded is discarded, so is a
 * reply for no call (there is nothing to complete), RDMA_MSGP (§4.6.1:
 * "Requesters MUST silently discard") and RDMA_DONE (§4.6.2).  Words
 * after rdma_xid (X: the call's xid, Y: another), cut to len octets.
 */
#define FULL 0xffffu

static const struct dropped {
	const char *what;
	bool other_xid;
	unsigned len;
	unsigned nw;
	uint32_t w[18];
} dropped_replies[] = {
	{ "a reply for no call", true, FULL, 6, { 1, 8, 0, 0, 0, 0 } },
	{ "27 octets", false, 27, 6, { 1, 8, 0, 0, 0, 0 } },
	{ "16 octets", false, 16, 3, { 1, 8, 0 } },
	{ "version 2", false, FULL, 6, { 2, 8, 0, 0, 0, 0 } },
	{ "procedure 7", false, FULL, 6, { 1, 8, 7, 0, 0, 0 } },
	{ "RDMA_MSGP", false, FULL, 8, { 1, 8, 2, 4096, 1024, 0, 0, 0 } },
	{ "RDMA_DONE", false, FULL, 3, { 1, 8, 3 } },
	{ "RDMA_ERROR of rdma_err 9", false, FULL, 6, { 1, 8, 4, 9, 1, 1 } },
	{ "ERR_VERS cut to 24 octets", false, 24, 6, { 1, 8, 4, 1, 1, 1 } },
	{ "a Write list discriminator of 2", false, FULL, 6,
	  { 1, 8, 0, 0, 2, 0 } },
	{ "a Write chunk count past the end", false, FULL, 7,
	  { 1, 8, 0, 0, 1, 9, 0 } },
	{ "a Reply chunk cut short", false, 36, 8,
	  { 1, 8, 1, 0, 0, 1, 1, 0 } },
	{ "a Read list of two segments", false, FULL, 18,
	  { 1, 8, 0, 1, 4, 1, 4, 0, 0, 1, 4, 1, 4, 0, 0, 0, 0, 0 } },
};

static void replies_dropped(void **state)
{
	const unsigned n = sizeof(dropped_replies) / sizeof(dropped_replies[0]);
	struct uiw_rr_stats before = stats(), after;
	struct rr_clnt_credits cr;
	static struct caller k;
	struct rw_hdr d;
	struct rw_words w;
	unsigned i, j;

	(void)state;
	call_start(&k, 64, NULL, 0, 0);
	take_call(&d, "a call");
	for (i = 0; i < n; i++) {
		const struct dropped *r = &dropped_replies[i];

		w.n = 0;
		rw_w32(&w, r->other_xid ? k.xid + 1000 : k.xid);
		for (j = 0; j < r->nw; j++)
			rw_w32(&w, r->w[j]);
		put_payload(&w, k.xid);
		if (r->len != FULL)
			w.n = r->len;
		assert_int_equal(rw_send(&rs, w.b, w.n, 0), 0);
		/* one at a time: the Requester keeps a few receives
		 * beyond its calls (§3.3.1), not one per message a
		 * Responder may send */
		wait_dropped(before.dropped + i + 1, r->what);
	}
	/* the real reply comes after them all and completes the call:
	 * every one before it was processed, none completed it */
	reply_plain(k.xid, 8);
	call_end(&k, UIW_RR_OK, "the real reply after the dropped ones");
	after = stats();
	assert_int_equal(after.dropped - before.dropped, n);
	assert_int_equal(after.replies - before.replies, 1);
	rr_clnt_credits(clnt, &cr);
	assert_int_equal(cr.outstanding, 0);
	/* a reply to an answered call: dropped too */
	reply_plain(k.xid, 8);
	call_start(&k, 64, NULL, 0, 0);
	take_call(&d, "the next call");
	reply_plain(k.xid, 8);
	call_end(&k, UIW_RR_OK, "the next call");
	assert_int_equal(stats().dropped - before.dropped, n + 1);
}

#undef FULL

/* ---- Replies that break the offer ----------------------------------------- */

/* What a case does to the returned Write list or Reply chunk. */
enum bend {
	B_LONGER,       /* a segment's length one more than offered */
	B_SEGS,         /* one segment more */
	B_CHUNKS,       /* one chunk more */
	B_HANDLE,       /* another handle */
	B_OFFSET,       /* another offset */
	B_NONE,         /* not returned */
	B_EXACT,        /* as offered, with the octets written */
	B_READ,         /* with a Read list */
	B_MSG,          /* RDMA_MSG, the Reply chunk with octets */
};

/* Adds the chunk of d (Write chunk 0, or the Reply chunk) to b,
 * returned with len octets and bent. */
static void bent_chunk(struct rw_hdr *b, const struct rw_hdr *d, bool reply,
		       uint32_t len, enum bend how)
{
	const struct uiw_rpcrdma_seg *g = reply ? &d->h.reply_seg[0] :
		&d->h.write_seg[0];
	uint32_t handle = g->handle + (how == B_HANDLE);
	uint64_t off = g->offset + (how == B_OFFSET) * 4;
	unsigned i, nchunk = how == B_CHUNKS ? 2 : how == B_NONE ? 0 : 1;

	if (how == B_READ)
		rw_hdr_read(b, 4, NO_STAG, 4, 0x1000);
	for (i = 0; i < nchunk; i++) {
		uint32_t l = how == B_LONGER ? g->length + 1 : len;

		if (reply) {
			rw_hdr_pseg(b, handle, l, off);
			if (how == B_SEGS)
				rw_hdr_pseg(b, handle, 0, off);
			continue;
		}
		rw_hdr_wchunk(b);
		rw_hdr_wseg(b, handle, l, off);
		if (how == B_SEGS)
			rw_hdr_wseg(b, handle, 0, off);
	}
}

/*
 * §3.4.6, §4.3.2: the Write list comes back as offered, each length
 * the octets written, at most the offered; §4.3.3: the Reply chunk
 * likewise; RDMA_MSG carries no octets in a Reply chunk (§4.2.4), a
 * reply has no Read list (§4.3.1).  Anything else is a reply the
 * Requester cannot trust: the call completes BAD_REPLY naming the rule
 * (and the connection goes on).  Fewer Write chunks than offered are
 * taken as unused (RFC 5666's Responders returned only those they
 * used).
 */
static const struct bent_case {
	bool reply;             /* the Reply chunk, or Write chunk 0 */
	enum bend how;
	const char *rule;       /* in BAD_REPLY's message; NULL: OK */
} bent_cases[] = {
	{ false, B_LONGER, "§3.4.6" },
	{ false, B_SEGS, "§3.4.6" },
	{ false, B_CHUNKS, "§3.4.6" },
	{ false, B_HANDLE, "§3.4.6" },
	{ false, B_OFFSET, "§3.4.6" },
	{ false, B_READ, "§4.3.1" },
	{ false, B_NONE, NULL },
	{ false, B_EXACT, NULL },
	{ true, B_LONGER, "§4.3.3" },
	{ true, B_SEGS, "§4.3.3" },
	{ true, B_HANDLE, "§4.3.3" },
	{ true, B_OFFSET, "§4.3.3" },
	{ true, B_MSG, "§4.2.4" },
	{ true, B_READ, "§4.3.1" },
	{ true, B_EXACT, NULL },
};

static void bent_chunks(void **state)
{
	static uint8_t wbuf[4096], data[5000];
	static struct caller k;
	struct rw_hdr d, b;
	unsigned i;

	(void)state;
	rt_fill(data, sizeof(data), 9);
	for (i = 0; i < sizeof(bent_cases) / sizeof(bent_cases[0]); i++) {
		const struct bent_case *c = &bent_cases[i];
		const struct uiw_rpcrdma_seg *g;
		uint32_t len = c->reply ? 5000 : c->how == B_EXACT ? 100 : 0;

		memset(wbuf, 0xee, sizeof(wbuf));
		call_start(&k, c->reply ? 9000 : 64, c->reply ? NULL : wbuf,
			   sizeof(wbuf), 0);
		take_call(&d, "a call with a chunk");
		g = c->reply ? &d.h.reply_seg[0] : &d.h.write_seg[0];
		if (len)
			assert_int_equal(rw_write(&rs, data, len, g->handle,
						  g->offset), 0);
		rw_hdr_init(&b, k.xid, RECVS, c->reply && c->how != B_MSG ?
			    UIW_RDMA_NOMSG : UIW_RDMA_MSG);
		bent_chunk(&b, &d, c->reply, len, c->how);
		reply_hdr(&b, 0);
		call_join(&k);
		if (k.st != (c->rule ? UIW_RR_BAD_REPLY : UIW_RR_OK))
			fail_msg("case %u: %s (%s)", i,
				 uiw_rr_status_name(k.st), k.msg);
		if (c->rule && !strstr(k.msg, c->rule))
			fail_msg("case %u: %s, not %s", i, k.msg, c->rule);
		if (!c->rule && c->reply) {
			assert_int_equal(k.reply_len, 5000);
			assert_memory_equal(k.reply, data, 5000);
		}
		assert_int_equal(k.wlen0, c->reply ? 0 : len);
		assert_memory_equal(wbuf, data, c->reply ? 0 : len);
		call_free(&k);
	}
	/* a Reply chunk returned to a call that offered none */
	call_start(&k, 64, NULL, 0, 0);
	take_call(&d, "a call without a Reply chunk");
	rw_hdr_init(&b, k.xid, RECVS, UIW_RDMA_NOMSG);
	rw_hdr_pseg(&b, 0x1234, 12, 0x1000);
	reply_hdr(&b, 0);
	call_end(&k, UIW_RR_BAD_REPLY, "a Reply chunk nobody offered");
	/* an unused Reply chunk with an inline reply: harmless */
	call_start(&k, 9000, NULL, 0, 0);
	take_call(&d, "a call with a Reply chunk");
	rw_hdr_init(&b, k.xid, RECVS, UIW_RDMA_MSG);
	bent_chunk(&b, &d, true, 0, B_EXACT);
	reply_hdr(&b, 0);
	call_end(&k, UIW_RR_OK, "an inline reply, the Reply chunk unused");
}

/* §4.5: RDMA_ERROR completes the call of its XID: ERR_VERS with the
 * versions the Responder speaks, ERR_CHUNK. */
static void rdma_error(void **state)
{
	struct uiw_rr_stats before = stats();
	static struct caller k;
	struct rw_hdr d, b;

	(void)state;
	call_start(&k, 64, NULL, 0, 0);
	take_call(&d, "a call");
	rw_hdr_init(&b, k.xid, RECVS, UIW_RDMA_ERROR);
	b.h.err = UIW_RPCRDMA_ERR_VERS;
	b.h.vers_low = 2;
	b.h.vers_high = 3;
	reply_hdr(&b, 0);
	call_join(&k);
	assert_int_equal(k.st, UIW_RR_ERR_VERS);
	assert_int_equal(k.vers_low, 2);
	assert_int_equal(k.vers_high, 3);
	assert_non_null(strstr(k.msg, "§4.5.1"));
	call_free(&k);
	call_start(&k, 64, NULL, 0, 0);
	take_call(&d, "a call");
	rw_hdr_init(&b, k.xid, RECVS, UIW_RDMA_ERROR);
	b.h.err = UIW_RPCRDMA_ERR_CHUNK;
	reply_hdr(&b, 0);
	call_end(&k, UIW_RR_ERR_CHUNK, "ERR_CHUNK");
	assert_int_equal(stats().rdma_errors_received -
			 before.rdma_errors_received, 2);
	call_start(&k, 64, NULL, 0, 0);
	take_call(&d, "a call after them");
	reply_plain(k.xid, RECVS);
	call_end(&k, UIW_RR_OK, "a call after them");
}

/* ---- Credits ------------------------------------------------------------ */

struct worker {
	pthread_t th;
	unsigned id, ok;
	char why[160];
};

static void *work(void *arg)
{
	struct worker *w = arg;
	unsigned i;

	for (i = 0; i < PER; i++) {
		uint8_t head[8];
		struct uiw_rr_iov iov = { head, sizeof(head), false };
		struct uiw_rr_call c = { .iov = &iov, .niov = 1,
					 .reply_max = 64 };
		uint32_t xid = (w->id + 1) << 16 | i;

		rt_put32(head, xid);
		rt_put32(head + 4, w->id);
		if (uiw_rr_call(clnt, &c) || c.reply_len != 12 ||
		    rt_get32(c.reply) != xid) {
			snprintf(w->why, sizeof(w->why), "call %u: %s %s", i,
				 uiw_rr_status_name(c.status), c.msg);
			uiw_rr_call_done(clnt, &c);
			return NULL;
		}
		uiw_rr_call_done(clnt, &c);
		w->ok++;
	}
	return NULL;
}

/*
 * THREADS threads make PER calls each; the raw Responder answers with
 * the grants of seq in turn (0 counts as 1).  It holds the receives
 * exactly: before each reply granting g it posts what g allows beyond
 * the calls it still holds (§3.3.1: "an increase in receive resources
 * is effected before the next RPC Reply message is sent"), one at
 * first (§3.3.3), and a call beyond the grant finds no receive (RFC
 * 5041 §7.1: the connection ends).  Before each reply it waits for as
 * many calls as the grant and the Requester's own limit allow (the
 * Requester never deadlocks), and the Requester's counts say it never
 * had more outstanding than granted.
 */
static void credits(const uint32_t *seq, unsigned nseq, uint32_t ask)
{
	struct uiw_rr_opts co;
	struct rw_opts ro = { .pd = rs_pd, .nrecv = 1, .hold = true };
	static struct worker w[THREADS];
	unsigned answered[THREADS] = { 0 }, held = 0, done = 0, i, live;
	uint32_t queue[THREADS], g = 1, peak_grant = 1;
	struct rr_clnt_credits cr;
	struct rw_hdr d;

	unpair();
	uiw_rr_opts_init(&co);
	co.credits = ask;
	ro.pdlen = rw_pd_8797(rs_pd, true, 4096, 4096);
	pair(&co, &ro);
	for (i = 0; i < THREADS; i++) {
		w[i] = (struct worker){ .id = i };
		assert_int_equal(pthread_create(&w[i].th, NULL, work, &w[i]),
				 0);
		track(w[i].th);
	}
	while (done < THREADS * PER) {
		unsigned want, gi = g ? g : 1, tid;
		uint32_t xid, next = seq[done % nseq];

		/* calls the Requester can have out now: the lower of the
		 * grant and what it asks, and one per thread with calls
		 * left */
		for (live = 0, i = 0; i < THREADS; i++)
			live += answered[i] < PER;
		want = gi < ask ? gi : ask;
		if (want > live)
			want = live;
		while (held < want) {
			take_call(&d, "a call within the grant");
			queue[held++] = d.h.xid;
		}
		xid = queue[0];
		memmove(queue, queue + 1, --held * sizeof(queue[0]));
		tid = (xid >> 16) - 1;
		assert_true(tid < THREADS);
		answered[tid]++;
		/* receives for what the new grant allows beyond the held
		 * calls (those already posted stay) */
		gi = next ? next : 1;
		if (gi > held + rs.posted)
			assert_int_equal(rw_repost(&rs, gi - held - rs.posted),
					 0);
		reply_plain(xid, next);
		g = next;
		if (gi > peak_grant)
			peak_grant = gi;
		done++;
	}
	for (i = 0; i < THREADS; i++) {
		join(w[i].th);
		if (w[i].ok != PER)
			fail_msg("thread %u: %u of %u calls: %s", i, w[i].ok,
				 PER, w[i].why);
	}
	rr_clnt_credits(clnt, &cr);
	assert_int_equal(cr.over_grant, 0);
	assert_true(cr.peak <= peak_grant);
	assert_true(cr.peak <= ask);
	assert_int_equal(cr.grant, g ? g : 1);
	assert_int_equal(cr.outstanding, 0);
	assert_false(rs.dead);
}

/* A grant of 0 is taken as 1 (§3.3.1: 0 "would result in deadlock"):
 * the calls go one at a time and all complete. */
static void grant_zero(void **state)
{
	static const uint32_t zero[] = { 0 };

	(void)state;
	credits(zero, 1, ASK);
}

/* Grants up and down: never more outstanding than the latest. */
static void grant_changes(void **state)
{
	static const uint32_t seq[] = { 3, 1, 4, 0, 2, 6, 1, 5, 2, 3 };

	(void)state;
	credits(seq, sizeof(seq) / sizeof(seq[0]), ASK);
}

/* §3.3.1: "the lower of the current requested and granted credit
 * values": a Requester asking for 2 keeps to 2 when granted 6. */
static void grant_above_ask(void **state)
{
	static const uint32_t six[] = { 6 };

	(void)state;
	credits(six, 1, 2);
}

/* ---- Remote invalidation (RFC 8797 §4.1) --------------------------------- */

/* A reply by Send With Invalidate of inv to the call k with a Write
 * chunk of 64 octets, len of them written, after d. */
static void reply_inv(const struct caller *k, const struct rw_hdr *d,
		      uint32_t inv, uint32_t len)
{
	struct rw_hdr b;

	rw_hdr_init(&b, k->xid, RECVS, UIW_RDMA_MSG);
	rw_hdr_wchunk(&b);
	rw_hdr_wseg(&b, d->h.write_seg[0].handle, len,
		    d->h.write_seg[0].offset);
	/* an STag the Requester never had ends the connection */
	reply_send(&b, inv, inv == NO_STAG);
}

/* Send With Invalidate of an STag of the call: accepted and counted,
 * with the octets written before it returned to the caller; of another
 * call's STag: BAD_REPLY (the other call goes on); of an
 * STag the Requester never registered: its RNIC refuses it and ends
 * the connection (RFC 5040 §7.2); of the call's STag when the
 * Requester did not allow it (R clear): BAD_REPLY. */
static void send_with_invalidate(void **state)
{
	static uint8_t b1[64], b2[64];
	uint8_t five[5];
	struct uiw_rr_opts co;
	static struct caller k, k2;
	struct rw_hdr d, d2;

	(void)state;
	rt_fill(five, sizeof(five), 5);
	call_start(&k, 64, b1, 64, 0);
	take_call(&d, "a call with a Write chunk");
	assert_int_equal(rw_write(&rs, five, sizeof(five),
				  d.h.write_seg[0].handle,
				  d.h.write_seg[0].offset), 0);
	reply_inv(&k, &d, d.h.write_seg[0].handle, sizeof(five));
	call_end(&k, UIW_RR_OK, "Send With Invalidate of its STag");
	assert_int_equal(k.wlen0, sizeof(five));
	assert_memory_equal(b1, five, sizeof(five));
	assert_int_equal(stats().remote_invalidations, 1);

	call_start(&k, 64, b1, 64, 0);
	take_call(&d, "call A");
	call_start(&k2, 64, b2, 64, 0);
	take_call(&d2, "call B");
	reply_inv(&k, &d, d2.h.write_seg[0].handle, 0);
	call_end(&k, UIW_RR_BAD_REPLY, "Send With Invalidate of B's STag");
	assert_non_null(strstr(k.msg, "§4.1"));
	reply_inv(&k2, &d2, 0, 0);
	call_end(&k2, UIW_RR_OK, "B, its STag invalidated by A's reply");
	assert_int_equal(stats().remote_invalidations, 1);

	call_start(&k, 64, b1, 64, 0);
	take_call(&d, "a call");
	reply_inv(&k, &d, NO_STAG, 0);
	call_end(&k, UIW_RR_DISCONNECTED, "Send With Invalidate of no STag");

	unpair();
	uiw_rr_opts_init(&co);
	co.remote_inv = false;
	pair(&co, NULL);
	call_start(&k, 64, b1, 64, 0);
	take_call(&d, "a call, R clear");
	reply_inv(&k, &d, d.h.write_seg[0].handle, 0);
	call_end(&k, UIW_RR_BAD_REPLY, "Send With Invalidate, R clear");
	assert_non_null(strstr(k.msg, "did not allow"));
}

/* ---- Late replies and the end of the connection --------------------------- */

/*
 * A reply after its call timed out: dropped and counted; the Reply
 * chunk the call offered stays the Requester's until then (a late Long
 * Reply may be written into it), and its STag dies with the late
 * reply: an RDMA Write to it afterwards is refused by the Requester's
 * RNIC, which ends the connection; the caller's Write chunk is
 * deregistered when the call returns, so a late RDMA Write to it is
 * refused the same way and the caller's memory is left as it was.
 */
static void late_reply(void **state)
{
	static uint8_t wbuf[256], data[5000];
	struct uiw_rr_stats before = stats();
	struct rr_clnt_credits cr;
	static struct caller k;
	struct rw_hdr d, d2, b;
	unsigned i;

	(void)state;
	rt_fill(data, sizeof(data), 3);
	/* a grant of RECVS first: with every credit held by timed-out
	 * calls the Requester would forget the oldest, and its Reply
	 * chunk with it (rr_clnt.c) */
	call_start(&k, 64, NULL, 0, 0);
	take_call(&d, "a first call");
	reply_plain(k.xid, RECVS);
	call_end(&k, UIW_RR_OK, "a first call");
	call_start(&k, 9000, NULL, 0, 200);
	take_call(&d, "a call that times out");
	call_end(&k, UIW_RR_TIMEDOUT, "a call with no reply");
	assert_int_equal(rw_write(&rs, data, 5000, d.h.reply_seg[0].handle,
				  d.h.reply_seg[0].offset), 0);
	rw_hdr_init(&b, d.h.xid, RECVS, UIW_RDMA_NOMSG);
	rw_hdr_pseg(&b, d.h.reply_seg[0].handle, 5000,
		    d.h.reply_seg[0].offset);
	reply_hdr(&b, 0);
	/* the connection goes on; the late reply was dropped first */
	call_start(&k, 64, NULL, 0, 0);
	take_call(&d2, "the next call");
	reply_plain(k.xid, RECVS);
	call_end(&k, UIW_RR_OK, "the call after a late reply");
	assert_int_equal(stats().dropped - before.dropped, 1);
	rr_clnt_credits(clnt, &cr);
	assert_int_equal(cr.zombies, 0);
	assert_int_equal(cr.outstanding, 0);
	/* the late Reply chunk's STag is dead (an RDMA Write completes
	 * at its sender before the Data Sink has checked it: the
	 * refusal is the connection's end, RFC 5040 §7.2) */
	rw_write(&rs, data, 8, d.h.reply_seg[0].handle,
		 d.h.reply_seg[0].offset);
	assert_true(rw_wait_dead(&rs, RT_WAIT_MS));
	call_start(&k, 64, NULL, 0, 0);
	call_end(&k, UIW_RR_DISCONNECTED, "a call after the refused Write");

	/* a Write chunk after its call has returned */
	unpair();
	pair(NULL, NULL);
	memset(wbuf, 0xee, sizeof(wbuf));
	call_start(&k, 64, wbuf, sizeof(wbuf), 200);
	take_call(&d, "a call that times out");
	call_end(&k, UIW_RR_TIMEDOUT, "a call with no reply");
	rw_write(&rs, data, sizeof(wbuf), d.h.write_seg[0].handle,
		 d.h.write_seg[0].offset);
	assert_true(rw_wait_dead(&rs, RT_WAIT_MS));
	for (i = 0; i < sizeof(wbuf); i++)
		assert_int_equal(wbuf[i], 0xee);
	call_start(&k, 64, NULL, 0, 0);
	call_end(&k, UIW_RR_DISCONNECTED, "a call after the refused Write");
}

/* The Responder goes away with calls outstanding: every one completes
 * DISCONNECTED at once. */
static void responder_gone(void **state)
{
	static struct caller k[3];
	struct rw_hdr d;
	uint64_t t0;
	unsigned i;

	(void)state;
	call_start(&k[0], 64, NULL, 0, 0);
	take_call(&d, "the first call");
	reply_plain(k[0].xid, RECVS);
	call_end(&k[0], UIW_RR_OK, "the first call");
	for (i = 0; i < 3; i++) {
		call_start(&k[i], 64, NULL, 0, 0);
		take_call(&d, "an outstanding call");
	}
	t0 = rr_now_ms();
	rw_close(&rs);
	for (i = 0; i < 3; i++) {
		call_end(&k[i], UIW_RR_DISCONNECTED, "an outstanding call");
		assert_true(k[i].done_ms - t0 < 2000);
	}
}

/* A reply longer than the Requester's receive buffers (4096): its
 * receive fails, the connection ends, the call completes DISCONNECTED
 * (RFC 8166 §3.3, §4.5.3). */
static void reply_too_long(void **state)
{
	struct rw_words w = { .n = 0 };
	static struct caller k;
	struct rw_hdr d, b;

	(void)state;
	call_start(&k, 64, NULL, 0, 0);
	take_call(&d, "a call");
	rw_hdr_init(&b, k.xid, RECVS, UIW_RDMA_MSG);
	assert_int_equal(rw_hdr_put(&w, &b), UIW_RPCRDMA_OK);
	put_payload(&w, k.xid);
	w.n = 4100;
	rw_post(&rs, w.b, w.n, 0);
	call_end(&k, UIW_RR_DISCONNECTED, "a reply over the receive size");
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		T(call_headers),
		T(replies_dropped),
		T(bent_chunks),
		T(rdma_error),
		T(grant_zero),
		T(grant_changes),
		T(grant_above_ask),
		T(send_with_invalidate),
		T(late_reply),
		T(responder_gone),
		T(reply_too_long),
	};

	if (argc > 1)
		cmocka_set_test_filter(argv[1]);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
