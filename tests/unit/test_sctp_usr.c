/*
 * The usrsctp carrier (src/llp/sctp_usr.c) through sctp.h, over UDP on
 * loopback, both ends in this process on the one usrsctp stack: the
 * handshake (DDP's adaptation code point seen, equal stream counts,
 * maxseg), whole messages both ways on several streams with their PPIDs,
 * the send limits (-EMSGSIZE, -EINVAL), a burst through -EAGAIN and
 * writable with every message once, unacked and dry, orderly shutdown,
 * abort, a refused connect, two associations at once, a fixed port, the
 * backlog bound, IPv6 and a wildcard listener, junk datagrams, the
 * stack stopped and started again with another path MTU, the path MTU
 * by peer (loopback's) and from UIW_SCTP_MTU, and the UDP sockets'
 * buffers.
 *
 * Every call into the stack runs on its thread (uiw_rt_call); upcalls
 * record what they saw under one lock, and the test thread waits on the
 * condition with a deadline.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "llp/sctp.h"
#include "rt/rt.h"

#define WAIT_MS   10000
#define STREAMS   12        /* not the default, to see it used */
#define DEF_MAXSEG 1424     /* sctp_usr.c's default MTU 1452, less 28 */
#define LO_MAXSEG  65456    /* its MTU to a loopback peer, 65487, less 28,
			       on a 4-octet boundary */
#define MAX_SIDES 8
#define BURST     3000

static struct uiw_sctp_stack *stk;
static struct uiw_sctp_config cfg;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static bool in_api;         /* a test call into sctp.h is running */
static bool upcall_in_api;  /* an upcall came from inside one */

/* ---- What the upcalls saw ------------------------------------------- */

struct rxmsg {
	uint16_t sid;
	uint32_t ppid;
	size_t len;
	void *buf;
};

struct side {
	struct uiw_sctp_assoc *a;
	struct uiw_sctp_info info;
	int ups, downs, down_err, writables, drys;
	size_t rx_at_down;
	struct rxmsg *rx;
	size_t nrx, cap;
};

struct lsn {
	struct uiw_sctp_lsn *l;
	struct sockaddr_storage addr;
	bool bind;                 /* give accepted associations a side */
	int ups;
	struct side *sides[MAX_SIDES];
	struct uiw_sctp_assoc *unbound[MAX_SIDES];
	int nsides, nunbound;
};

static void note(void)
{
	if (in_api)
		upcall_in_api = true;
	pthread_cond_broadcast(&cond);
}

static void side_up(void *ctx, struct uiw_sctp_assoc *a,
		    const struct uiw_sctp_info *info)
{
	struct side *s = ctx;

	pthread_mutex_lock(&lock);
	s->a = a;
	s->info = *info;
	s->ups++;
	note();
	pthread_mutex_unlock(&lock);
}

static void side_msg(void *ctx, struct uiw_sctp_assoc *a, uint16_t sid,
		     uint32_t ppid, void *buf, size_t len)
{
	struct side *s = ctx;

	pthread_mutex_lock(&lock);
	if (s->nrx == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 64;
		s->rx = realloc(s->rx, s->cap * sizeof(*s->rx));
		assert_non_null(s->rx);
	}
	s->rx[s->nrx++] = (struct rxmsg){ sid, ppid, len, buf };
	note();
	pthread_mutex_unlock(&lock);
}

static void side_writable(void *ctx, struct uiw_sctp_assoc *a)
{
	struct side *s = ctx;

	pthread_mutex_lock(&lock);
	s->writables++;
	note();
	pthread_mutex_unlock(&lock);
}

static void side_dry(void *ctx, struct uiw_sctp_assoc *a)
{
	struct side *s = ctx;

	pthread_mutex_lock(&lock);
	s->drys++;
	note();
	pthread_mutex_unlock(&lock);
}

static void side_down(void *ctx, struct uiw_sctp_assoc *a, int err)
{
	struct side *s = ctx;

	pthread_mutex_lock(&lock);
	s->downs++;
	s->down_err = err;
	s->rx_at_down = s->nrx;
	s->a = NULL;
	note();
	pthread_mutex_unlock(&lock);
}

static const struct uiw_sctp_up side_ops = {
	.up = side_up, .msg = side_msg, .writable = side_writable,
	.dry = side_dry, .down = side_down,
};

/* A listener's new association: its own side (bind), or left with the
 * listener. */
static void lsn_up(void *ctx, struct uiw_sctp_assoc *a,
		   const struct uiw_sctp_info *info)
{
	struct lsn *lc = ctx;

	pthread_mutex_lock(&lock);
	lc->ups++;
	if (lc->bind && lc->nsides < MAX_SIDES) {
		struct side *s = calloc(1, sizeof(*s));

		assert_non_null(s);
		s->a = a;
		s->info = *info;
		s->ups = 1;
		lc->sides[lc->nsides++] = s;
		uiw_sctp_assoc_bind(a, &side_ops, s);
	} else if (lc->nunbound < MAX_SIDES) {
		lc->unbound[lc->nunbound++] = a;
	}
	note();
	pthread_mutex_unlock(&lock);
}

static void lsn_msg(void *ctx, struct uiw_sctp_assoc *a, uint16_t sid,
		    uint32_t ppid, void *buf, size_t len)
{
	uiw_sctp_buf_free(stk, buf);
}

static void lsn_down(void *ctx, struct uiw_sctp_assoc *a, int err)
{
	struct lsn *lc = ctx;
	int i;

	pthread_mutex_lock(&lock);
	for (i = 0; i < lc->nunbound; i++)
		if (lc->unbound[i] == a)
			lc->unbound[i] = NULL;
	note();
	pthread_mutex_unlock(&lock);
}

static void lsn_nothing(void *ctx, struct uiw_sctp_assoc *a)
{
}

static const struct uiw_sctp_up lsn_ops = {
	.up = lsn_up, .msg = lsn_msg, .writable = lsn_nothing,
	.dry = lsn_nothing, .down = lsn_down,
};


/* For another association: what it received is freed. */
static void side_reset(struct side *s)
{
	size_t i;

	for (i = 0; i < s->nrx; i++)
		uiw_sctp_buf_free(stk, s->rx[i].buf);
	free(s->rx);
	memset(s, 0, sizeof(*s));
}

static void side_free(struct side *s)
{
	side_reset(s);
	free(s);
}

static void lsn_free_sides(struct lsn *lc)
{
	int i;

	for (i = 0; i < lc->nsides; i++)
		side_free(lc->sides[i]);
	lc->nsides = 0;
}

/* ---- Waiting --------------------------------------------------------- */

static void deadline_in(struct timespec *ts, int ms)
{
	clock_gettime(CLOCK_REALTIME, ts);
	ts->tv_sec += ms / 1000;
	ts->tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

/* Waits, under lock, until expr holds; fails the test after WAIT_MS. */
#define WAIT_UNTIL(expr) do {						\
	struct timespec dl_;						\
	bool ok_;							\
	deadline_in(&dl_, WAIT_MS);					\
	pthread_mutex_lock(&lock);					\
	while (!(ok_ = (expr)) &&					\
	       pthread_cond_timedwait(&cond, &lock, &dl_) != ETIMEDOUT)	\
		;							\
	ok_ = ok_ || (expr);						\
	pthread_mutex_unlock(&lock);					\
	if (!ok_)							\
		fail_msg("timed out waiting for %s", #expr);		\
} while (0)

static int locked_int(const int *p)
{
	int v;

	pthread_mutex_lock(&lock);
	v = *p;
	pthread_mutex_unlock(&lock);
	return v;
}

/* ---- Calls on the stack's thread ------------------------------------ */

struct call {
	struct lsn *lc;
	struct side *s;
	const char *ip;
	uint16_t port;
	int backlog;
	uint16_t sid;
	uint32_t ppid;
	const void *buf;
	size_t len;
	int iovcnt;
	int count, sent, eagain, unacked;
	struct uiw_sctp_assoc *a;
	const struct sockaddr_storage *to;
	int op;
};

static int run(int (*fn)(void *), struct call *c)
{
	return uiw_rt_call(uiw_sctp_stack_rt(stk), fn, c);
}

static void make_addr(const char *ip, uint16_t port,
		      struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (strchr(ip, ':')) {
		struct sockaddr_in6 *s6 = (void *)ss;

		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(port);
		assert_int_equal(inet_pton(AF_INET6, ip, &s6->sin6_addr), 1);
	} else {
		struct sockaddr_in *s4 = (void *)ss;

		s4->sin_family = AF_INET;
		s4->sin_port = htons(port);
		assert_int_equal(inet_pton(AF_INET, ip, &s4->sin_addr), 1);
	}
}

static uint16_t port_of(const struct sockaddr_storage *ss)
{
	return ntohs(ss->ss_family == AF_INET6 ?
		     ((const struct sockaddr_in6 *)ss)->sin6_port :
		     ((const struct sockaddr_in *)ss)->sin_port);
}

static uint32_t ip4_of(const struct sockaddr_storage *ss)
{
	assert_int_equal(ss->ss_family, AF_INET);
	return ntohl(((const struct sockaddr_in *)ss)->sin_addr.s_addr);
}

static socklen_t len_of(const struct sockaddr_storage *ss)
{
	return ss->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) :
	       sizeof(struct sockaddr_in);
}

static int do_listen(void *p)
{
	struct call *c = p;
	struct sockaddr_storage ss;
	int ret;

	make_addr(c->ip, c->port, &ss);
	in_api = true;
	ret = uiw_sctp_listen(stk, (struct sockaddr *)&ss, len_of(&ss),
			      c->backlog, &lsn_ops, c->lc, &c->lc->l);
	in_api = false;
	if (ret == 0)
		uiw_sctp_lsn_addr(c->lc->l, &c->lc->addr);
	return ret;
}

static int listen_on(struct lsn *lc, const char *ip, uint16_t port,
		     int backlog)
{
	struct call c = { .lc = lc, .ip = ip, .port = port,
			  .backlog = backlog };

	lc->bind = true;
	return run(do_listen, &c);
}

static int do_unlisten(void *p)
{
	struct call *c = p;

	uiw_sctp_unlisten(c->lc->l);
	c->lc->l = NULL;
	return 0;
}

static void unlisten(struct lsn *lc)
{
	struct call c = { .lc = lc };

	run(do_unlisten, &c);
	lsn_free_sides(lc);
}

static int do_connect(void *p)
{
	struct call *c = p;
	int ret;

	in_api = true;
	ret = uiw_sctp_connect(stk, (const struct sockaddr *)c->to,
			       len_of(c->to), NULL, 0, 0, &side_ops, c->s,
			       &c->s->a);
	in_api = false;
	return ret;
}

static int connect_to(const struct sockaddr_storage *to, struct side *s)
{
	struct call c = { .s = s, .to = to };

	return run(do_connect, &c);
}

/* Connects to the listener and waits for both ends: the listener's new
 * side is returned. */
static struct side *pair(struct lsn *lc, struct side *cs)
{
	int n = locked_int(&lc->nsides);

	assert_int_equal(connect_to(&lc->addr, cs), 0);
	WAIT_UNTIL(cs->ups == 1 && lc->nsides == n + 1);
	return lc->sides[n];
}

static int do_send(void *p)
{
	struct call *c = p;
	struct iovec iov[3];
	int ret;

	iov[0].iov_base = (void *)c->buf;
	iov[0].iov_len = c->len;
	if (c->iovcnt == 3) {
		/* the same octets gathered from three pieces */
		size_t a = c->len / 3, b = c->len / 3;

		iov[0].iov_len = a;
		iov[1].iov_base = (char *)c->buf + a;
		iov[1].iov_len = b;
		iov[2].iov_base = (char *)c->buf + a + b;
		iov[2].iov_len = c->len - a - b;
	}
	in_api = true;
	ret = uiw_sctp_send(c->s->a, c->sid, c->ppid, iov,
			    c->iovcnt ? c->iovcnt : 1);
	in_api = false;
	return ret;
}

static int send_msg(struct side *s, uint16_t sid, uint32_t ppid,
		    const void *buf, size_t len, int iovcnt)
{
	struct call c = { .s = s, .sid = sid, .ppid = ppid, .buf = buf,
			  .len = len, .iovcnt = iovcnt };

	return run(do_send, &c);
}

/* One call on an association (c->a), flagged as a call into sctp.h. */
enum op { OP_SHUTDOWN, OP_ABORT, OP_WATCH_DRY };

static int do_op(void *p)
{
	struct call *c = p;

	in_api = true;
	switch (c->op) {
	case OP_SHUTDOWN:
		uiw_sctp_shutdown(c->a);
		break;
	case OP_ABORT:
		uiw_sctp_abort(c->a);
		break;
	case OP_WATCH_DRY:
		uiw_sctp_watch_dry(c->a);
		break;
	}
	in_api = false;
	return 0;
}

static void op(struct uiw_sctp_assoc *a, enum op what)
{
	struct call c = { .a = a, .op = what };

	assert_int_equal(uiw_rt_call(uiw_sctp_stack_rt(stk), do_op, &c), 0);
}

static int do_bind(void *p)
{
	struct call *c = p;

	uiw_sctp_assoc_bind(c->a, &side_ops, c->s);
	return 0;
}

static void shutdown_pair(struct side *cs, struct side *ss)
{
	op(cs->a, OP_SHUTDOWN);
	WAIT_UNTIL(cs->downs == 1 && ss->downs == 1);
	assert_int_equal(cs->down_err, 0);
	assert_int_equal(ss->down_err, 0);
}

/* A listener on 127.0.0.1 and one association to it: the client's side
 * (*cs) and the listener's (returned). */
static struct side *start_pair(struct lsn *lc, struct side **cs)
{
	*cs = calloc(1, sizeof(**cs));
	assert_non_null(*cs);
	assert_int_equal(listen_on(lc, "127.0.0.1", 0, 4), 0);
	return pair(lc, *cs);
}

/* Shuts the association down in order, and the listener. */
static void end_pair(struct lsn *lc, struct side *cs, struct side *ss)
{
	shutdown_pair(cs, ss);
	assert_false(upcall_in_api);
	unlisten(lc);
	side_free(cs);
}

static void fill(uint8_t *p, size_t len, unsigned seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = (uint8_t)(i * 7 + seed * 13 + (i >> 8));
}

static bool check_fill(const uint8_t *p, size_t len, unsigned seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i] != (uint8_t)(i * 7 + seed * 13 + (i >> 8)))
			return false;
	return true;
}

/* A UDP port free on both loopbacks, for the stack's listeners. */
static uint16_t free_udp_port(void)
{
	int tries;

	for (tries = 0; tries < 64; tries++) {
		struct sockaddr_in s4 = { .sin_family = AF_INET,
			.sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
		struct sockaddr_in6 s6 = { .sin6_family = AF_INET6,
			.sin6_addr = IN6ADDR_LOOPBACK_INIT };
		socklen_t len = sizeof(s4);
		int f4 = socket(AF_INET, SOCK_DGRAM, 0);
		int f6 = socket(AF_INET6, SOCK_DGRAM, 0), ok;
		uint16_t port;

		assert_true(f4 >= 0 && f6 >= 0);
		assert_int_equal(bind(f4, (struct sockaddr *)&s4, len), 0);
		assert_int_equal(getsockname(f4, (struct sockaddr *)&s4, &len),
				 0);
		port = ntohs(s4.sin_port);
		s6.sin6_port = s4.sin_port;
		ok = bind(f6, (struct sockaddr *)&s6, sizeof(s6)) == 0;
		close(f4);
		close(f6);
		if (ok)
			return port;
	}
	fail_msg("no UDP port free on 127.0.0.1 and ::1");
	return 0;
}

static int stack_start(uint32_t mtu)
{
	memset(&cfg, 0, sizeof(cfg));
	cfg.udp_port = free_udp_port();
	cfg.streams = STREAMS;
	cfg.mtu = mtu;
	return uiw_sctp_stack_get(UIW_SCTP_USER, &cfg, &stk);
}

static int group_setup(void **state)
{
	int ret = stack_start(0);

	if (ret)
		fprintf(stderr, "usrsctp stack: %s\n", strerror(-ret));
	return ret ? -1 : 0;
}

static int group_teardown(void **state)
{
	if (stk)
		uiw_sctp_stack_put(stk);
	stk = NULL;
	return 0;
}

/* ---- The tests ------------------------------------------------------- */

static void check_info_pair(const struct side *cs, const struct side *ss,
			    const struct lsn *lc)
{
	const struct uiw_sctp_info *ci = &cs->info, *si = &ss->info;

	/* RFC 5043 §5.1: each side saw the other's DDP code point */
	assert_true(ci->peer_adapt_seen);
	assert_int_equal(ci->peer_adapt, UIW_SCTP_ADAPT_DDP);
	assert_true(si->peer_adapt_seen);
	assert_int_equal(si->peer_adapt, UIW_SCTP_ADAPT_DDP);
	/* §8: as many streams each way, as configured */
	assert_int_equal(ci->streams, STREAMS);
	assert_int_equal(ci->in_streams, ci->out_streams);
	assert_int_equal(si->streams, STREAMS);
	assert_int_equal(si->in_streams, si->out_streams);
	assert_true(ci->maxseg > 516);
	assert_int_equal(ci->maxseg, si->maxseg);
	assert_true(ci->active);
	assert_false(si->active);
	/* the client reached the listener's SCTP port; the listener saw
	 * the client's ports, SCTP and UDP */
	assert_int_equal(port_of(&ci->peer), port_of(&lc->addr));
	assert_int_equal(port_of(&si->local), port_of(&lc->addr));
	assert_int_equal(port_of(&si->peer), port_of(&ci->local));
	assert_int_equal(ci->peer_udp_port, cfg.udp_port);
	assert_true(si->peer_udp_port != 0);
	assert_true(si->peer_udp_port != cfg.udp_port);
	assert_int_equal(ci->peer.ss_family, lc->addr.ss_family);
	assert_int_equal(si->peer.ss_family, lc->addr.ss_family);
}

static void test_handshake(void **state)
{
	struct lsn lc = { 0 };
	struct side *cs, *ss;
	struct sockaddr_in *la = (struct sockaddr_in *)&lc.addr;

	assert_int_equal(uiw_sctp_stack_kind(stk), UIW_SCTP_USER);
	ss = start_pair(&lc, &cs);
	/* port 0: one was chosen */
	assert_int_equal(la->sin_family, AF_INET);
	assert_int_equal(ntohl(la->sin_addr.s_addr), INADDR_LOOPBACK);
	assert_true(port_of(&lc.addr) != 0);
	check_info_pair(cs, ss, &lc);
	/* both ends on loopback: the loopback interface's MTU */
	assert_int_equal(cs->info.maxseg, LO_MAXSEG);
	assert_int_equal(ip4_of(&ss->info.local), INADDR_LOOPBACK);
	end_pair(&lc, cs, ss);
}

/* Messages of 2 octets up to maxseg both ways, on several streams, with
 * DDP's PPIDs and another, arrive whole with their stream and PPID. */
static void test_messages(void **state)
{
	static const size_t sizes[] = { 2, 3, 17, 100, 512, 1000 };
	struct lsn lc = { 0 };
	struct side *cs, *ss, *end[2];
	uint8_t *buf;
	uint32_t maxseg;
	size_t n = sizeof(sizes) / sizeof(sizes[0]) + 1, i, k;
	int dir;

	ss = start_pair(&lc, &cs);
	maxseg = cs->info.maxseg;
	buf = malloc(maxseg + 1);
	assert_non_null(buf);
	end[0] = cs;
	end[1] = ss;
	for (dir = 0; dir < 2; dir++) {
		struct side *from = end[dir], *to = end[!dir];

		for (i = 0; i < n; i++) {
			size_t len = i < n - 1 ? sizes[i] : maxseg;
			uint16_t sid = (uint16_t)((i * 5 + dir) % STREAMS);
			uint32_t ppid = i % 3 == 2 ? 99 :
					i % 2 ? UIW_SCTP_PPID_CTL :
					UIW_SCTP_PPID_DDP;

			fill(buf, len, (unsigned)(i + 10 * dir));
			assert_int_equal(send_msg(from, sid, ppid, buf, len,
						  len >= 3 && i % 2 ? 3 : 1),
					 0);
		}
		WAIT_UNTIL(to->nrx == n);
		/* unordered: any order; each one is found by its length */
		for (i = 0; i < n; i++) {
			size_t len = i < n - 1 ? sizes[i] : maxseg;
			bool found = false;

			for (k = 0; k < to->nrx; k++) {
				struct rxmsg *m = &to->rx[k];

				if (m->len != len)
					continue;
				found = true;
				assert_int_equal(m->sid,
						 (i * 5 + dir) % STREAMS);
				assert_int_equal(m->ppid, i % 3 == 2 ? 99 :
						 i % 2 ? UIW_SCTP_PPID_CTL :
						 UIW_SCTP_PPID_DDP);
				assert_true(check_fill(m->buf, len, (unsigned)
						       (i + 10 * dir)));
			}
			assert_true(found);
		}
	}
	/* the limits */
	fill(buf, maxseg + 1, 1);
	assert_int_equal(send_msg(cs, 0, UIW_SCTP_PPID_DDP, buf, maxseg + 1, 1),
			 -EMSGSIZE);
	assert_int_equal(send_msg(cs, 0, UIW_SCTP_PPID_DDP, buf, maxseg + 1, 3),
			 -EMSGSIZE);
	assert_int_equal(send_msg(cs, STREAMS, UIW_SCTP_PPID_DDP, buf, 10, 1),
			 -EINVAL);
	assert_int_equal(send_msg(ss, 0xffff, UIW_SCTP_PPID_DDP, buf, 10, 1),
			 -EINVAL);
	shutdown_pair(cs, ss);
	/* nothing more came after the limits were refused */
	assert_int_equal(ss->nrx, n);
	assert_int_equal(cs->nrx, n);
	assert_false(upcall_in_api);
	free(buf);
	unlisten(&lc);
	side_free(cs);
}

/* Sends as much of the burst as fits, on the stack's thread. */
static int do_burst(void *p)
{
	struct call *c = p;
	uint8_t msg[1000];
	struct iovec iov = { msg, sizeof(msg) };
	int ret = 0;

	in_api = true;
	while (c->sent < c->count) {
		uint32_t seq = (uint32_t)c->sent;

		fill(msg, sizeof(msg), (unsigned)seq);
		memcpy(msg, &seq, sizeof(seq));
		ret = uiw_sctp_send(c->s->a, (uint16_t)(seq % STREAMS),
				    UIW_SCTP_PPID_DDP, &iov, 1);
		if (ret == -EAGAIN) {
			c->eagain++;
			break;
		}
		if (ret)
			break;
		c->sent++;
	}
	in_api = false;
	return ret == -EAGAIN ? 0 : ret;
}

/* A burst larger than the send buffer: -EAGAIN, then writable, and at
 * the end every message arrived exactly once. */
static void test_burst(void **state)
{
	struct lsn lc = { 0 };
	struct side *cs, *ss;
	struct call c = { .count = BURST };
	uint8_t *seen = calloc(BURST, 1), expect[1000];
	size_t i;

	assert_non_null(seen);
	ss = start_pair(&lc, &cs);
	c.s = cs;
	while (c.sent < c.count) {
		int w = locked_int(&cs->writables);
		int e = c.eagain;

		assert_int_equal(run(do_burst, &c), 0);
		if (c.eagain > e)
			WAIT_UNTIL(cs->writables > w);
	}
	assert_true(c.eagain >= 1);
	WAIT_UNTIL(ss->nrx == BURST);
	for (i = 0; i < ss->nrx; i++) {
		struct rxmsg *m = &ss->rx[i];
		uint32_t seq;

		assert_int_equal(m->len, 1000);
		memcpy(&seq, m->buf, sizeof(seq));
		assert_true(seq < BURST);
		assert_int_equal(m->sid, seq % STREAMS);
		assert_false(seen[seq]);
		seen[seq] = 1;
		/* after the sequence number, the message's own octets */
		fill(expect, sizeof(expect), seq);
		assert_memory_equal((uint8_t *)m->buf + 4, expect + 4,
				    sizeof(expect) - 4);
	}
	assert_int_equal(locked_int(&cs->writables), c.eagain);
	shutdown_pair(cs, ss);
	assert_false(upcall_in_api);
	free(seen);
	unlisten(&lc);
	side_free(cs);
}

static int do_send_unacked(void *p)
{
	struct call *c = p;
	uint8_t msg[200];
	struct iovec iov = { msg, sizeof(msg) };
	int i, ret;

	memset(msg, 0x5a, sizeof(msg));
	for (i = 0; i < c->count; i++) {
		ret = uiw_sctp_send(c->s->a, 1, UIW_SCTP_PPID_DDP, &iov, 1);
		if (ret)
			return ret;
	}
	/* No SACK can have come back: the thread has not read a packet. */
	c->unacked = uiw_sctp_unacked(c->s->a);
	in_api = true;
	uiw_sctp_watch_dry(c->s->a);
	in_api = false;
	return 0;
}

static int do_unacked(void *p)
{
	struct call *c = p;

	c->unacked = uiw_sctp_unacked(c->s->a);
	return 0;
}

/* Sent and unacknowledged data, then one dry when all is acknowledged;
 * with nothing outstanding dry comes at once (from the next round). */
static void test_unacked_dry(void **state)
{
	struct lsn lc = { 0 };
	struct side *cs, *ss;
	struct call c = { .count = 5 };

	ss = start_pair(&lc, &cs);
	c.s = cs;
	assert_int_equal(run(do_send_unacked, &c), 0);
	assert_true(c.unacked >= 1);
	assert_true(c.unacked <= 5);
	WAIT_UNTIL(cs->drys == 1 && ss->nrx == 5);
	assert_int_equal(run(do_unacked, &c), 0);
	assert_int_equal(c.unacked, 0);
	/* idle: at once, and once */
	op(c.s->a, OP_WATCH_DRY);
	WAIT_UNTIL(cs->drys == 2);
	/* the server's side, which sent nothing */
	c.s = ss;
	op(c.s->a, OP_WATCH_DRY);
	WAIT_UNTIL(ss->drys == 1);
	shutdown_pair(cs, ss);
	assert_int_equal(cs->drys, 2);
	assert_int_equal(ss->drys, 1);
	assert_false(upcall_in_api);
	unlisten(&lc);
	side_free(cs);
}

static int do_send_then_shutdown(void *p)
{
	struct call *c = p;
	uint8_t msg[300];
	struct iovec iov = { msg, sizeof(msg) };
	int i, ret;

	for (i = 0; i < c->count; i++) {
		fill(msg, sizeof(msg), (unsigned)i);
		ret = uiw_sctp_send(c->s->a, (uint16_t)i, UIW_SCTP_PPID_DDP,
				    &iov, 1);
		if (ret)
			return ret;
	}
	in_api = true;
	uiw_sctp_shutdown(c->s->a);
	/* going down: nothing more is sent */
	c->sent = uiw_sctp_send(c->s->a, 0, UIW_SCTP_PPID_DDP, &iov, 1);
	in_api = false;
	return 0;
}

/* An orderly SHUTDOWN delivers what was sent first; both ends see
 * down(0), the peer's after its messages. */
static void test_shutdown(void **state)
{
	struct lsn lc = { 0 };
	struct side *cs, *ss;
	struct call c = { .count = 7 };

	ss = start_pair(&lc, &cs);
	c.s = cs;
	assert_int_equal(run(do_send_then_shutdown, &c), 0);
	assert_int_equal(c.sent, -ENOTCONN);
	WAIT_UNTIL(cs->downs == 1 && ss->downs == 1);
	assert_int_equal(cs->down_err, 0);
	assert_int_equal(ss->down_err, 0);
	assert_int_equal(ss->rx_at_down, 7);
	assert_false(upcall_in_api);
	/* the listener's side shuts down too */
	side_reset(cs);
	ss = pair(&lc, cs);
	shutdown_pair(ss, cs);
	unlisten(&lc);
	side_free(cs);
}

/* Our ABORT: -ECONNABORTED here after the call returned, -ECONNRESET at
 * the peer. */
static void test_abort(void **state)
{
	struct lsn lc = { 0 };
	struct side *cs, *ss;

	ss = start_pair(&lc, &cs);
	op(cs->a, OP_ABORT);
	WAIT_UNTIL(cs->downs == 1 && ss->downs == 1);
	assert_int_equal(cs->down_err, -ECONNABORTED);
	assert_int_equal(ss->down_err, -ECONNRESET);
	/* and from the listener's side */
	side_reset(cs);
	ss = pair(&lc, cs);
	op(ss->a, OP_ABORT);
	WAIT_UNTIL(cs->downs == 1 && ss->downs == 1);
	assert_int_equal(ss->down_err, -ECONNABORTED);
	assert_int_equal(cs->down_err, -ECONNRESET);
	assert_int_equal(cs->ups, 1);
	assert_false(upcall_in_api);
	unlisten(&lc);
	side_free(cs);
}

/* INIT to an SCTP port nobody listens on (on the stack's UDP port): the
 * peer's ABORT, -ECONNREFUSED, without an up. */
static void test_refused(void **state)
{
	struct lsn lc = { 0 };
	struct side *cs = calloc(1, sizeof(*cs));
	struct sockaddr_storage to;

	assert_int_equal(listen_on(&lc, "127.0.0.1", 0, 4), 0);
	to = lc.addr;
	((struct sockaddr_in *)&to)->sin_port =
		htons(port_of(&lc.addr) == 65535 ? 65534 :
		      port_of(&lc.addr) + 1);
	assert_int_equal(connect_to(&to, cs), 0);
	WAIT_UNTIL(cs->downs == 1);
	assert_int_equal(cs->down_err, -ECONNREFUSED);
	assert_int_equal(cs->ups, 0);
	assert_int_equal(locked_int(&lc.ups), 0);
	assert_false(upcall_in_api);
	unlisten(&lc);
	side_free(cs);
}

/* Two associations to one listener at once, each with its own
 * messages. */
static void test_two(void **state)
{
	struct lsn lc = { 0 };
	struct side *c1 = calloc(1, sizeof(*c1)), *c2 = calloc(1, sizeof(*c2));
	struct side *s1, *s2;
	uint8_t buf[64];
	int i;

	assert_int_equal(listen_on(&lc, "127.0.0.1", 0, 4), 0);
	assert_int_equal(connect_to(&lc.addr, c1), 0);
	assert_int_equal(connect_to(&lc.addr, c2), 0);
	WAIT_UNTIL(c1->ups == 1 && c2->ups == 1 && lc.nsides == 2);
	/* which listener side is which: by the client's SCTP port */
	s1 = lc.sides[0];
	s2 = lc.sides[1];
	if (port_of(&s1->info.peer) != port_of(&c1->info.local)) {
		s1 = lc.sides[1];
		s2 = lc.sides[0];
	}
	assert_int_equal(port_of(&s1->info.peer), port_of(&c1->info.local));
	assert_int_equal(port_of(&s2->info.peer), port_of(&c2->info.local));
	assert_true(port_of(&c1->info.local) != port_of(&c2->info.local));
	check_info_pair(c1, s1, &lc);
	check_info_pair(c2, s2, &lc);
	for (i = 0; i < 4; i++) {
		fill(buf, sizeof(buf), 1);
		assert_int_equal(send_msg(c1, 1, UIW_SCTP_PPID_DDP, buf, 11,
					  1), 0);
		fill(buf, sizeof(buf), 2);
		assert_int_equal(send_msg(c2, 2, UIW_SCTP_PPID_CTL, buf, 22,
					  1), 0);
		assert_int_equal(send_msg(s1, 3, UIW_SCTP_PPID_DDP, buf, 33,
					  1), 0);
	}
	WAIT_UNTIL(s1->nrx == 4 && s2->nrx == 4 && c1->nrx == 4);
	for (i = 0; i < 4; i++) {
		assert_int_equal(s1->rx[i].len, 11);
		assert_int_equal(s1->rx[i].sid, 1);
		assert_true(check_fill(s1->rx[i].buf, 11, 1));
		assert_int_equal(s2->rx[i].len, 22);
		assert_int_equal(s2->rx[i].ppid, UIW_SCTP_PPID_CTL);
		assert_true(check_fill(s2->rx[i].buf, 22, 2));
		assert_int_equal(c1->rx[i].len, 33);
	}
	assert_int_equal(c2->nrx, 0);
	shutdown_pair(c1, s1);
	assert_int_equal(locked_int(&c2->downs), 0);
	assert_int_equal(send_msg(c2, 0, UIW_SCTP_PPID_DDP, buf, 5, 1), 0);
	WAIT_UNTIL(s2->nrx == 5);
	shutdown_pair(c2, s2);
	unlisten(&lc);
	side_free(c1);
	side_free(c2);
}

/* A listener on a fixed SCTP port: the port is its, a second one on it
 * is refused, and associations reach it. */
static void test_fixed_port(void **state)
{
	struct lsn lc = { 0 }, lc2 = { 0 };
	struct side *cs = calloc(1, sizeof(*cs)), *ss;

	assert_int_equal(listen_on(&lc, "127.0.0.1", 5999, 4), 0);
	assert_int_equal(port_of(&lc.addr), 5999);
	assert_int_equal(listen_on(&lc2, "127.0.0.1", 5999, 4), -EADDRINUSE);
	ss = pair(&lc, cs);
	assert_int_equal(port_of(&cs->info.peer), 5999);
	assert_int_equal(port_of(&ss->info.local), 5999);
	shutdown_pair(cs, ss);
	unlisten(&lc);
	/* free again */
	assert_int_equal(listen_on(&lc, "127.0.0.1", 5999, 4), 0);
	unlisten(&lc);
	side_free(cs);
}

/* The receive buffer of the UDP socket on port, found among this
 * process's file descriptors; -1 when there is none. */
static int udp_rcvbuf_of(uint16_t port)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int found = -1;

	assert_non_null(d);
	while (found < 0 && (e = readdir(d))) {
		struct sockaddr_storage ss;
		socklen_t len = sizeof(ss);
		int fd = atoi(e->d_name), type = 0, v = 0;
		socklen_t tl = sizeof(type), vl = sizeof(v);

		if (fd <= 2 || fd == dirfd(d) ||
		    getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tl) < 0 ||
		    type != SOCK_DGRAM ||
		    getsockname(fd, (struct sockaddr *)&ss, &len) < 0 ||
		    port_of(&ss) != port)
			continue;
		if (getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, &vl) == 0)
			found = v;
	}
	closedir(d);
	return found;
}

/* The UDP sockets have room for a burst of a receive window's small
 * datagrams: 4 MiB, or as much as net.core.rmem_max allows (a datagram
 * without room is lost until SCTP's retransmission timeout). */
static void test_udp_buffers(void **state)
{
	struct lsn lc = { 0 };
	FILE *f = fopen("/proc/sys/net/core/rmem_max", "r");
	long max = 0;
	int want;

	assert_non_null(f);
	assert_int_equal(fscanf(f, "%ld", &max), 1);
	fclose(f);
	want = max < (4 << 20) ? (int)max : 4 << 20;
	assert_int_equal(listen_on(&lc, "127.0.0.1", 0, 4), 0);
	/* the kernel reports twice what it was given */
	assert_true(udp_rcvbuf_of(cfg.udp_port) >= want);
	unlisten(&lc);
}

/* Backlog 1: a second association while the first is still the
 * listener's is refused (the client sees it reset); once the first is
 * bound, a third one comes. */
static void test_backlog(void **state)
{
	struct lsn lc = { 0 };
	struct side *c1 = calloc(1, sizeof(*c1)), *c2 = calloc(1, sizeof(*c2));
	struct side *c3 = calloc(1, sizeof(*c3)), *s1 = calloc(1, sizeof(*s1));
	struct call c = { 0 };

	assert_int_equal(listen_on(&lc, "127.0.0.1", 0, 1), 0);
	lc.bind = false;
	assert_int_equal(connect_to(&lc.addr, c1), 0);
	WAIT_UNTIL(c1->ups == 1 && lc.ups == 1);
	assert_int_equal(connect_to(&lc.addr, c2), 0);
	WAIT_UNTIL(c2->downs == 1);
	assert_int_equal(c2->down_err, -ECONNRESET);
	assert_int_equal(locked_int(&lc.ups), 1);
	/* bind the first: the listener has room again */
	c.a = lc.unbound[0];
	c.s = s1;
	assert_non_null(c.a);
	s1->a = c.a;
	assert_int_equal(run(do_bind, &c), 0);
	assert_int_equal(connect_to(&lc.addr, c3), 0);
	WAIT_UNTIL(c3->ups == 1 && lc.ups == 2);
	/* the first, bound to s1, works */
	assert_int_equal(send_msg(c1, 0, UIW_SCTP_PPID_DDP, "abc", 3, 1), 0);
	WAIT_UNTIL(s1->nrx == 1);
	shutdown_pair(c1, s1);
	/* the third is still the listener's: unlisten leaves it alive */
	unlisten(&lc);
	assert_int_equal(send_msg(c3, 0, UIW_SCTP_PPID_DDP, "abc", 3, 1), 0);
	op(c3->a, OP_ABORT);
	WAIT_UNTIL(c3->downs == 1);
	assert_int_equal(c3->down_err, -ECONNABORTED);
	WAIT_UNTIL(lc.unbound[1] == NULL);
	side_free(c1);
	side_free(c2);
	side_free(c3);
	side_free(s1);
}

/* IPv6 on ::1, and a wildcard IPv4 listener answering from the address
 * the client sent to. */
static void test_ipv6_and_wildcard(void **state)
{
	struct lsn lc = { 0 };
	struct side *cs = calloc(1, sizeof(*cs)), *ss;
	struct sockaddr_storage to;

	assert_int_equal(listen_on(&lc, "::1", 0, 4), 0);
	assert_int_equal(lc.addr.ss_family, AF_INET6);
	ss = pair(&lc, cs);
	check_info_pair(cs, ss, &lc);
	assert_true(IN6_IS_ADDR_LOOPBACK(
		&((struct sockaddr_in6 *)&ss->info.local)->sin6_addr));
	assert_int_equal(send_msg(ss, 2, UIW_SCTP_PPID_CTL, "v6", 2, 1), 0);
	WAIT_UNTIL(cs->nrx == 1);
	assert_int_equal(cs->rx[0].len, 2);
	assert_memory_equal(cs->rx[0].buf, "v6", 2);
	shutdown_pair(cs, ss);
	unlisten(&lc);

	side_reset(cs);
	assert_int_equal(listen_on(&lc, "0.0.0.0", 0, 4), 0);
	make_addr("127.0.0.1", port_of(&lc.addr), &to);
	lc.addr = to;
	ss = pair(&lc, cs);
	check_info_pair(cs, ss, &lc);
	assert_int_equal(ip4_of(&ss->info.local), INADDR_LOOPBACK);
	assert_int_equal(send_msg(ss, 0, UIW_SCTP_PPID_DDP, "any", 3, 1), 0);
	WAIT_UNTIL(cs->nrx == 1);
	shutdown_pair(cs, ss);
	unlisten(&lc);
	side_free(cs);
}

/* Datagrams that are no SCTP packet, or ones usrsctp 0.9.5.0 must not
 * see (an INIT bundled with another chunk), change nothing. */
static void test_junk(void **state)
{
	struct lsn lc = { 0 };
	struct side *cs = calloc(1, sizeof(*cs)), *ss;
	struct sockaddr_in to = { .sin_family = AF_INET,
				  .sin_port = htons(cfg.udp_port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	uint8_t pkt[64];
	int fd, i;

	assert_int_equal(listen_on(&lc, "127.0.0.1", 0, 4), 0);
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	assert_true(fd >= 0);
	for (i = 0; i < 200; i++) {
		size_t len = (size_t)(i % 64);

		fill(pkt, sizeof(pkt), (unsigned)i);
		if (i % 2) {
			/* ports, a vtag of 0, an INIT then a DATA chunk */
			pkt[2] = (uint8_t)(port_of(&lc.addr) >> 8);
			pkt[3] = (uint8_t)port_of(&lc.addr);
			memset(pkt + 4, 0, 8);
			pkt[12] = 1;
			pkt[14] = 0;
			pkt[15] = 20;
			pkt[32] = 0;
			pkt[34] = 0;
			pkt[35] = 16;
			len = 48;
		}
		assert_int_equal(sendto(fd, pkt, len, 0,
					(struct sockaddr *)&to, sizeof(to)),
				 (ssize_t)len);
	}
	close(fd);
	ss = pair(&lc, cs);
	check_info_pair(cs, ss, &lc);
	assert_int_equal(locked_int(&lc.ups), 1);
	shutdown_pair(cs, ss);
	unlisten(&lc);
	side_free(cs);
}

/* The stack stops (usrsctp_finish) and starts again in this process,
 * here with a path MTU of 600: maxseg 600 - 12 - 16. */
static void test_restart_stack(void **state)
{
	struct lsn lc = { 0 };
	struct side *cs, *ss;
	uint8_t buf[600];

	uiw_sctp_stack_put(stk);
	stk = NULL;
	assert_int_equal(stack_start(600), 0);
	ss = start_pair(&lc, &cs);
	check_info_pair(cs, ss, &lc);
	assert_int_equal(cs->info.maxseg, 572);
	fill(buf, sizeof(buf), 3);
	assert_int_equal(send_msg(cs, 0, UIW_SCTP_PPID_DDP, buf, 573, 1),
			 -EMSGSIZE);
	assert_int_equal(send_msg(cs, 0, UIW_SCTP_PPID_DDP, buf, 572, 1), 0);
	WAIT_UNTIL(ss->nrx == 1);
	assert_int_equal(ss->rx[0].len, 572);
	assert_true(check_fill(ss->rx[0].buf, 572, 3));
	end_pair(&lc, cs, ss);
	/* a bad MTU is refused when the stack is made */
	uiw_sctp_stack_put(stk);
	stk = NULL;
	memset(&cfg, 0, sizeof(cfg));
	cfg.mtu = 100;
	assert_int_equal(uiw_sctp_stack_get(UIW_SCTP_USER, &cfg, &stk),
			 -EINVAL);
	stk = NULL;
}

/* UIW_SCTP_MTU gives a stack made without an MTU its path MTU, whatever
 * the peer; a value out of range refuses the stack. */
static void test_env_mtu(void **state)
{
	struct lsn lc = { 0 };
	struct side *cs, *ss;

	if (stk)
		uiw_sctp_stack_put(stk);
	stk = NULL;
	assert_int_equal(setenv("UIW_SCTP_MTU", "1452", 1), 0);
	assert_int_equal(stack_start(0), 0);
	ss = start_pair(&lc, &cs);
	check_info_pair(cs, ss, &lc);
	assert_int_equal(cs->info.maxseg, DEF_MAXSEG);
	end_pair(&lc, cs, ss);
	uiw_sctp_stack_put(stk);
	stk = NULL;
	assert_int_equal(setenv("UIW_SCTP_MTU", "65488", 1), 0);
	assert_int_equal(stack_start(0), -EINVAL);
	stk = NULL;
	assert_int_equal(setenv("UIW_SCTP_MTU", "9000x", 1), 0);
	assert_int_equal(stack_start(0), -EINVAL);
	stk = NULL;
	assert_int_equal(unsetenv("UIW_SCTP_MTU"), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_handshake),
		cmocka_unit_test(test_messages),
		cmocka_unit_test(test_burst),
		cmocka_unit_test(test_unacked_dry),
		cmocka_unit_test(test_shutdown),
		cmocka_unit_test(test_abort),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_two),
		cmocka_unit_test(test_fixed_port),
		cmocka_unit_test(test_udp_buffers),
		cmocka_unit_test(test_backlog),
		cmocka_unit_test(test_ipv6_and_wildcard),
		cmocka_unit_test(test_junk),
		cmocka_unit_test(test_restart_stack),
		cmocka_unit_test(test_env_mtu),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
