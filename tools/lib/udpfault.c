/*
 * A fault-injecting UDP relay for tests: see udpfault.h for what it does.
 * One thread per relay, non-blocking sockets, one poll(2) loop.  As in
 * faultproxy.c, the thread holds the relay's mutex except while it sleeps
 * in poll(); the API takes the same mutex, changes the state and wakes
 * the thread through an eventfd (relay_util.h).
 *
 * Per direction a datagram that is not sent at once waits in one of two
 * places: the delay line, a FIFO ring ordered by arrival, whose head
 * leaves when its time has come; and the held set, in the order of
 * holding, where reordered datagrams wait for the datagrams that are to
 * overtake them and a filter's holds wait for their release.  Both share
 * the direction's pending limits.  Every random draw happens when a
 * datagram is read, so what becomes of it does not depend on timing.
 */
#include "udpfault.h"
#include "relay_util.h"

#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define UF_BUF_SIZE		65536u	/* more than any UDP payload */
#define UF_READS_PER_ROUND	64	/* per socket: timers get their turn */
#define UF_DEFAULT_CLIENTS	16u
#define UF_DEFAULT_PENDING	1024u
#define UF_DEFAULT_BYTES	(4u * 1024u * 1024u)
#define UF_NO_COUNT		UINT64_MAX	/* a hold released by time only */
#define UF_SOCK_BUF		(4 << 20)	/* socket buffers asked for */
/* Makes the second direction's generator differ from the first's. */
#define UF_SEED_S2C		0xA0761D6478BD642Full

struct uf_dgram {
	uint8_t *data;
	size_t len;
	unsigned int client;	/* index into clients */
	bool hold, dup;		/* decided when it was read */
	bool matched;		/* held by the filter: uiw_uf_release() */
	int64_t due;		/* line: when it leaves; held: latest release */
	uint64_t after;		/* held: released once passed reaches it */
};

struct uf_dir {
	struct uiw_uf_faults f;
	uint64_t rng;
	unsigned int burst_left;
	struct uf_dgram *line;	/* ring of max_pending */
	unsigned int lh, ln;	/* its first entry, its count */
	struct uf_dgram *held;	/* max_pending, in the order of holding */
	unsigned int hn;
	size_t bytes;		/* octets in line and held */
	uint64_t passed;	/* datagrams sent in their turn, not holds */
	uiw_uf_match_fn match;	/* the filter, if any */
	void *match_arg;
	enum uiw_uf_action action;
	unsigned int match_ms;
	struct uiw_uf_dir_stats st;	/* pending and burst_left unused */
};

struct uf_client {
	struct sockaddr_storage addr;
	socklen_t len;
	int fd;			/* bound to loopback, connected upstream */
};

struct uiw_uf {
	struct uiw_rl rl;	/* thread, lock, wake-up, waits */
	int lfd;
	struct sockaddr_storage laddr, uaddr;
	socklen_t llen, ulen;
	unsigned int max_clients, max_pending;
	size_t max_bytes;

	bool cut, cut_forever;
	struct uf_client *clients;
	unsigned int nclients;
	uint64_t refused;
	struct uf_dir d[2];
	uint8_t *buf;		/* the thread's receive buffer */
	struct pollfd *pfd;	/* 2 + max_clients */
};

/* ------------------------------------------------------------------ */
/* Chance                                                              */

/* splitmix64: small state, good enough spread for picking datagrams. */
static uint64_t uf_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9E3779B97F4A7C15ull);

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

/* A draw in [0, UIW_UF_PPM): below ppm with probability ppm / 10^6. */
static uint32_t uf_draw(struct uf_dir *d)
{
	return (uint32_t)(((uf_next(&d->rng) >> 32) * UIW_UF_PPM) >> 32);
}

static void uf_seed_dirs(struct uiw_uf *uf, uint64_t seed)
{
	uf->d[UIW_UF_C2S].rng = seed;
	uf->d[UIW_UF_S2C].rng = seed ^ UF_SEED_S2C;
}

/* ------------------------------------------------------------------ */
/* Clients                                                             */

static bool uf_same_addr(const struct sockaddr_storage *a,
			 const struct sockaddr_storage *b)
{
	if (a->ss_family != b->ss_family)
		return false;
	if (a->ss_family == AF_INET) {
		const struct sockaddr_in *x = (const void *)a;
		const struct sockaddr_in *y = (const void *)b;

		return x->sin_port == y->sin_port &&
		       x->sin_addr.s_addr == y->sin_addr.s_addr;
	}
	{
		const struct sockaddr_in6 *x = (const void *)a;
		const struct sockaddr_in6 *y = (const void *)b;

		return x->sin6_port == y->sin6_port &&
		       x->sin6_scope_id == y->sin6_scope_id &&
		       memcmp(&x->sin6_addr, &y->sin6_addr,
			      sizeof(x->sin6_addr)) == 0;
	}
}

/* Room for bursts in the kernel's buffers of a socket (it grants up to
 * net.core.rmem_max / wmem_max): what the relay loses while its thread
 * waits for a processor is loss nobody asked for.  Best effort. */
static void uf_sock_bufs(int fd)
{
	int v = UF_SOCK_BUF;

	(void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, sizeof(v));
	(void)setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &v, sizeof(v));
}

/* The index of the client at ss, tracked from now on if it is new; -1
 * when there is no room for it or its socket cannot be made. */
static int uf_client(struct uiw_uf *uf, const struct sockaddr_storage *ss,
		     socklen_t len)
{
	struct uf_client *c;
	int fd;

	for (unsigned int i = 0; i < uf->nclients; i++)
		if (uf_same_addr(&uf->clients[i].addr, ss))
			return (int)i;
	if (uf->nclients == uf->max_clients)
		return -1;
	/* Bound to loopback so that the upstream sees the relay there;
	 * connected so that only the upstream's datagrams come in. */
	fd = uiw_rl_socket(uf->uaddr.ss_family, SOCK_DGRAM, 0, false, NULL,
			   NULL);
	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&uf->uaddr, uf->ulen) < 0) {
		close(fd);
		return -1;
	}
	uf_sock_bufs(fd);
	c = &uf->clients[uf->nclients];
	memcpy(&c->addr, ss, sizeof(*ss));
	c->len = len;
	c->fd = fd;
	return (int)uf->nclients++;
}

/* ------------------------------------------------------------------ */
/* Moving datagrams                                                    */

static bool uf_room(const struct uiw_uf *uf, const struct uf_dir *d,
		    size_t len)
{
	return d->ln + d->hn < uf->max_pending &&
	       len <= uf->max_bytes - d->bytes;
}

/* Takes a copy of g's octets for the time it is pending. */
static bool uf_keep(struct uf_dir *d, struct uf_dgram *g)
{
	uint8_t *p = malloc(g->len ? g->len : 1);

	if (p == NULL)
		return false;
	memcpy(p, g->data, g->len);
	g->data = p;
	d->bytes += g->len;
	return true;
}

static void uf_forget(struct uf_dir *d, struct uf_dgram *g)
{
	d->bytes -= g->len;
	free(g->data);
	g->data = NULL;
}

static bool uf_send_one(struct uiw_uf *uf, int dir, const struct uf_dgram *g)
{
	const struct uf_client *c = &uf->clients[g->client];
	ssize_t r;

	do {
		if (dir == UIW_UF_C2S)
			r = send(c->fd, g->data, g->len,
				 MSG_DONTWAIT | MSG_NOSIGNAL);
		else
			r = sendto(uf->lfd, g->data, g->len,
				   MSG_DONTWAIT | MSG_NOSIGNAL,
				   (const struct sockaddr *)&c->addr, c->len);
	} while (r < 0 && errno == EINTR);
	return r == (ssize_t)g->len;
}

/* g leaves the relay: unless the link is cut, once, and once more when
 * it is to be duplicated. */
static void uf_emit(struct uiw_uf *uf, int dir, const struct uf_dgram *g)
{
	struct uf_dir *d = &uf->d[dir];

	if (uf->cut) {
		d->st.dropped++;
		return;
	}
	if (!uf_send_one(uf, dir, g)) {
		d->st.send_errors++;
		return;
	}
	d->st.forwarded++;
	d->st.bytes += g->len;
	if (g->dup && uf_send_one(uf, dir, g)) {
		d->st.duplicated++;
		d->st.bytes += g->len;
	}
}

/* Sends the holds whose overtakers have gone by or whose time is up, in
 * the order they were held. */
static void uf_release(struct uiw_uf *uf, int dir, int64_t now)
{
	struct uf_dir *d = &uf->d[dir];
	unsigned int keep = 0;

	for (unsigned int i = 0; i < d->hn; i++) {
		struct uf_dgram *g = &d->held[i];

		if (d->passed >= g->after || g->due <= now) {
			uf_emit(uf, dir, g);
			uf_forget(d, g);
		} else {
			d->held[keep++] = *g;
		}
	}
	d->hn = keep;
}

/* g leaves the delay line (or passes it by, when it is empty and there
 * is no delay): it is held back to be overtaken, or sent.  owned: g's
 * octets are a pending copy already. */
static void uf_depart(struct uiw_uf *uf, int dir, struct uf_dgram *g,
		      bool owned, int64_t now)
{
	struct uf_dir *d = &uf->d[dir];

	if (g->hold) {
		/* A datagram from the line frees the room it takes here. */
		if (!owned && (!uf_room(uf, d, g->len) || !uf_keep(d, g))) {
			d->st.overflow++;
			return;
		}
		g->after = d->f.reorder_after ?
			   d->passed + d->f.reorder_after : UF_NO_COUNT;
		g->due = now + (int64_t)d->f.reorder_ms * UIW_RL_NS_PER_MS;
		d->held[d->hn++] = *g;
		d->st.reordered++;
		return;
	}
	uf_emit(uf, dir, g);
	if (owned)
		uf_forget(d, g);
	d->passed++;
	if (d->hn)
		uf_release(uf, dir, now);
}

/* A datagram the filter holds: in the held set, in its turn, until it is
 * released or its time is up; neither delayed nor overtaken. */
static void uf_hold_matched(struct uiw_uf *uf, struct uf_dir *d,
			    struct uf_dgram *g, int64_t now)
{
	if (!uf_room(uf, d, g->len) || !uf_keep(d, g)) {
		d->st.overflow++;
		return;
	}
	g->matched = true;
	g->after = UF_NO_COUNT;
	g->due = now + (int64_t)d->match_ms * UIW_RL_NS_PER_MS;
	d->held[d->hn++] = *g;
}

/* A datagram read from dir's source, of client. */
static void uf_ingress(struct uiw_uf *uf, int dir, unsigned int client,
		       uint8_t *data, size_t len)
{
	struct uf_dir *d = &uf->d[dir];
	uint32_t r_drop = uf_draw(d);
	uint32_t r_reorder = uf_draw(d);
	uint32_t r_dup = uf_draw(d);
	struct uf_dgram g = {
		.data = data, .len = len, .client = client,
		.hold = r_reorder < d->f.reorder_ppm,
		.dup = r_dup < d->f.dup_ppm,
	};
	int64_t now = uiw_rl_now();

	d->st.received++;
	if (uf->cut) {
		d->st.dropped++;
		return;
	}
	if (d->burst_left > 0) {
		d->burst_left--;
		d->st.dropped++;
		return;
	}
	if (r_drop < d->f.drop_ppm) {
		d->st.dropped++;
		return;
	}
	if (d->match && d->match(d->match_arg, data, len)) {
		d->st.matched++;
		if (d->action == UIW_UF_DROP) {
			d->st.dropped++;
			return;
		}
		if (d->action == UIW_UF_HOLD) {
			uf_hold_matched(uf, d, &g, now);
			return;
		}
	}
	/* Nothing ahead of it and no delay: straight on. */
	if (d->ln == 0 && d->f.delay_ms == 0) {
		uf_depart(uf, dir, &g, false, now);
		return;
	}
	if (!uf_room(uf, d, len) || !uf_keep(d, &g)) {
		d->st.overflow++;
		return;
	}
	g.due = now + (int64_t)d->f.delay_ms * UIW_RL_NS_PER_MS;
	d->line[(d->lh + d->ln) % uf->max_pending] = g;
	d->ln++;
	d->st.delayed++;
}

/* The delay line's heads whose time has come, then the holds whose time
 * is up; the earliest time still to come lowers *dl. */
static void uf_timers(struct uiw_uf *uf, int dir, int64_t now, int64_t *dl)
{
	struct uf_dir *d = &uf->d[dir];

	while (d->ln > 0 && d->line[d->lh].due <= now) {
		struct uf_dgram g = d->line[d->lh];

		d->lh = (d->lh + 1) % uf->max_pending;
		d->ln--;
		uf_depart(uf, dir, &g, true, now);
	}
	if (d->hn)
		uf_release(uf, dir, now);
	if (d->ln > 0)
		uiw_rl_deadline(dl, d->line[d->lh].due);
	for (unsigned int i = 0; i < d->hn; i++)
		uiw_rl_deadline(dl, d->held[i].due);
}

/* Datagrams from clients, at the relay's port. */
static void uf_read_clients(struct uiw_uf *uf)
{
	for (int i = 0; i < UF_READS_PER_ROUND; i++) {
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		ssize_t n;
		int c;

		n = recvfrom(uf->lfd, uf->buf, UF_BUF_SIZE, MSG_DONTWAIT,
			     (struct sockaddr *)&ss, &sl);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return;		/* EAGAIN, or an error now consumed */
		c = uf_client(uf, &ss, sl);
		if (c < 0) {
			uf->refused++;
			continue;
		}
		uf_ingress(uf, UIW_UF_C2S, (unsigned int)c, uf->buf,
			   (size_t)n);
	}
}

/* Datagrams from the upstream to client c's socket. */
static void uf_read_upstream(struct uiw_uf *uf, unsigned int c)
{
	for (int i = 0; i < UF_READS_PER_ROUND; i++) {
		ssize_t n = recv(uf->clients[c].fd, uf->buf, UF_BUF_SIZE,
				 MSG_DONTWAIT);

		/* ECONNREFUSED: an ICMP error for an earlier send (nobody
		 * at the upstream's port); reading consumed it. */
		if (n < 0 && (errno == EINTR || errno == ECONNREFUSED))
			continue;
		if (n < 0)
			return;
		uf_ingress(uf, UIW_UF_S2C, c, uf->buf, (size_t)n);
	}
}

/* ------------------------------------------------------------------ */
/* The thread                                                          */

static void *uf_main(void *arg)
{
	struct uiw_uf *uf = arg;

	pthread_mutex_lock(&uf->rl.mu);
	while (!uf->rl.stop) {
		int64_t now = uiw_rl_now(), dl = 0;
		unsigned int nc = uf->nclients;
		int timeout;

		for (int i = 0; i < 2; i++)
			uf_timers(uf, i, now, &dl);
		pthread_cond_broadcast(&uf->rl.cv);

		uf->pfd[0] = (struct pollfd){ .fd = uf->rl.efd,
					      .events = POLLIN };
		uf->pfd[1] = (struct pollfd){ .fd = uf->lfd, .events = POLLIN };
		for (unsigned int i = 0; i < nc; i++)
			uf->pfd[2 + i] = (struct pollfd){
				.fd = uf->clients[i].fd, .events = POLLIN };
		timeout = uiw_rl_poll_timeout(dl);

		pthread_mutex_unlock(&uf->rl.mu);
		poll(uf->pfd, 2 + nc, timeout);
		pthread_mutex_lock(&uf->rl.mu);

		if (uf->pfd[0].revents & POLLIN)
			uiw_rl_drain(&uf->rl);
		if (uf->rl.stop)
			break;
		/* POLLERR too: reading consumes the pending error. */
		if (uf->pfd[1].revents)
			uf_read_clients(uf);
		for (unsigned int i = 0; i < nc; i++)
			if (uf->pfd[2 + i].revents)
				uf_read_upstream(uf, i);
	}
	pthread_cond_broadcast(&uf->rl.cv);
	pthread_mutex_unlock(&uf->rl.mu);
	return NULL;
}

/* ------------------------------------------------------------------ */
/* API                                                                 */

void uiw_uf_faults_init(struct uiw_uf_faults *f)
{
	*f = (struct uiw_uf_faults){
		.drop_ppm = 0, .dup_ppm = 0, .reorder_ppm = 0,
		.reorder_after = 3, .reorder_ms = 50, .delay_ms = 0,
	};
}

void uiw_uf_config_init(struct uiw_uf_config *c)
{
	memset(c, 0, sizeof(*c));
	c->port = 0;
	c->max_clients = UF_DEFAULT_CLIENTS;
	c->max_pending = UF_DEFAULT_PENDING;
	c->max_pending_bytes = UF_DEFAULT_BYTES;
	c->seed = 1;
	for (int i = 0; i < 2; i++)
		uiw_uf_faults_init(&c->faults[i]);
}

static int uf_einval(void)
{
	errno = EINVAL;
	return -1;
}

static bool uf_dir_ok(int dir)
{
	return dir == UIW_UF_C2S || dir == UIW_UF_S2C;
}

static bool uf_faults_ok(const struct uiw_uf_faults *f)
{
	return f->drop_ppm <= UIW_UF_PPM && f->dup_ppm <= UIW_UF_PPM &&
	       f->reorder_ppm <= UIW_UF_PPM && f->reorder_ms >= 1 &&
	       f->reorder_ms <= UIW_UF_MAX_MS &&
	       f->delay_ms <= UIW_UF_MAX_MS;
}

static bool uf_config_ok(const struct uiw_uf_config *c)
{
	return c->max_clients >= 1 && c->max_clients <= UIW_UF_MAX_CLIENTS &&
	       c->max_pending >= 1 && c->max_pending <= UIW_UF_MAX_PENDING &&
	       c->max_pending_bytes >= 1 && uf_faults_ok(&c->faults[0]) &&
	       uf_faults_ok(&c->faults[1]);
}

static void uf_free(struct uiw_uf *uf)
{
	for (int i = 0; i < 2; i++) {
		struct uf_dir *d = &uf->d[i];

		for (unsigned int k = 0; d->line && k < d->ln; k++)
			free(d->line[(d->lh + k) % uf->max_pending].data);
		for (unsigned int k = 0; d->held && k < d->hn; k++)
			free(d->held[k].data);
		free(d->line);
		free(d->held);
	}
	for (unsigned int i = 0; i < uf->nclients; i++)
		close(uf->clients[i].fd);
	if (uf->lfd >= 0)
		close(uf->lfd);
	free(uf->clients);
	free(uf->pfd);
	free(uf->buf);
	uiw_rl_destroy(&uf->rl);
	free(uf);
}

struct uiw_uf *uiw_uf_start(const struct sockaddr *upstream, socklen_t len,
			    const struct uiw_uf_config *cfg)
{
	struct uiw_uf_config defaults;
	struct uiw_uf *uf;
	int err;

	if (cfg == NULL) {
		uiw_uf_config_init(&defaults);
		cfg = &defaults;
	}
	if (!uiw_rl_addr_ok(upstream, len) || !uf_config_ok(cfg)) {
		errno = EINVAL;
		return NULL;
	}
	uf = calloc(1, sizeof(*uf));
	if (uf == NULL)
		return NULL;
	uf->lfd = -1;
	if (uiw_rl_init(&uf->rl) < 0)
		goto fail;
	memcpy(&uf->uaddr, upstream, len);
	uf->ulen = len;
	uf->max_clients = cfg->max_clients;
	uf->max_pending = cfg->max_pending;
	uf->max_bytes = cfg->max_pending_bytes;
	uf_seed_dirs(uf, cfg->seed);
	for (int i = 0; i < 2; i++) {
		struct uf_dir *d = &uf->d[i];

		d->f = cfg->faults[i];
		d->line = calloc(uf->max_pending, sizeof(*d->line));
		d->held = calloc(uf->max_pending, sizeof(*d->held));
		if (d->line == NULL || d->held == NULL)
			goto fail;
	}
	uf->clients = calloc(uf->max_clients, sizeof(*uf->clients));
	uf->pfd = calloc(2 + uf->max_clients, sizeof(*uf->pfd));
	uf->buf = malloc(UF_BUF_SIZE);
	if (uf->clients == NULL || uf->pfd == NULL || uf->buf == NULL)
		goto fail;

	uf->llen = sizeof(uf->laddr);
	uf->lfd = uiw_rl_socket(upstream->sa_family, SOCK_DGRAM, cfg->port,
				false, &uf->laddr, &uf->llen);
	if (uf->lfd < 0)
		goto fail;
	uf_sock_bufs(uf->lfd);
	if (uiw_rl_start(&uf->rl, uf_main, uf) < 0)
		goto fail;
	return uf;
fail:
	err = errno;
	uf_free(uf);
	errno = err;
	return NULL;
}

struct uiw_uf *uiw_uf_start_to(const char *host, uint16_t port,
			       const struct uiw_uf_config *cfg)
{
	struct sockaddr_storage ss;
	socklen_t len;

	if (uiw_rl_numeric(host, port, &ss, &len) < 0)
		return NULL;
	return uiw_uf_start((struct sockaddr *)&ss, len, cfg);
}

void uiw_uf_halt(struct uiw_uf *uf)
{
	if (uf)
		uiw_rl_halt(&uf->rl);
}

void uiw_uf_stop(struct uiw_uf *uf)
{
	if (uf == NULL)
		return;
	uiw_uf_halt(uf);
	/* Waiters in other threads leave (ECANCELED) before we free. */
	uiw_rl_await_waiters(&uf->rl);
	uf_free(uf);
}

uint16_t uiw_uf_port(const struct uiw_uf *uf)
{
	return uiw_rl_port(&uf->laddr);
}

void uiw_uf_addr(const struct uiw_uf *uf, struct sockaddr_storage *ss,
		 socklen_t *len)
{
	memcpy(ss, &uf->laddr, sizeof(*ss));
	*len = uf->llen;
}

/* Changes one field (or all) of one direction's faults under the lock,
 * taking it from v; the faults change only if the result is valid. */
enum uf_field { UF_ALL, UF_DROP, UF_DUP, UF_REORDER, UF_DELAY };

static int uf_change(struct uiw_uf *uf, int dir, enum uf_field which,
		     const struct uiw_uf_faults *v)
{
	struct uiw_uf_faults f;

	if (uf == NULL || v == NULL || !uf_dir_ok(dir))
		return uf_einval();
	pthread_mutex_lock(&uf->rl.mu);
	f = uf->d[dir].f;
	switch (which) {
	case UF_ALL: f = *v; break;
	case UF_DROP: f.drop_ppm = v->drop_ppm; break;
	case UF_DUP: f.dup_ppm = v->dup_ppm; break;
	case UF_DELAY: f.delay_ms = v->delay_ms; break;
	case UF_REORDER:
		f.reorder_ppm = v->reorder_ppm;
		f.reorder_after = v->reorder_after;
		f.reorder_ms = v->reorder_ms;
		break;
	}
	if (!uf_faults_ok(&f)) {
		pthread_mutex_unlock(&uf->rl.mu);
		return uf_einval();
	}
	uf->d[dir].f = f;
	pthread_mutex_unlock(&uf->rl.mu);
	uiw_rl_wake(&uf->rl);
	return 0;
}

int uiw_uf_set_faults(struct uiw_uf *uf, enum uiw_uf_dir dir,
		      const struct uiw_uf_faults *f)
{
	return uf_change(uf, dir, UF_ALL, f);
}

int uiw_uf_get_faults(struct uiw_uf *uf, enum uiw_uf_dir dir,
		      struct uiw_uf_faults *f)
{
	if (uf == NULL || f == NULL || !uf_dir_ok(dir))
		return uf_einval();
	pthread_mutex_lock(&uf->rl.mu);
	*f = uf->d[dir].f;
	pthread_mutex_unlock(&uf->rl.mu);
	return 0;
}

int uiw_uf_drop(struct uiw_uf *uf, enum uiw_uf_dir dir, uint32_t ppm)
{
	return uf_change(uf, dir, UF_DROP,
			 &(struct uiw_uf_faults){ .drop_ppm = ppm });
}

int uiw_uf_dup(struct uiw_uf *uf, enum uiw_uf_dir dir, uint32_t ppm)
{
	return uf_change(uf, dir, UF_DUP,
			 &(struct uiw_uf_faults){ .dup_ppm = ppm });
}

int uiw_uf_reorder(struct uiw_uf *uf, enum uiw_uf_dir dir, uint32_t ppm,
		   unsigned int after, unsigned int max_ms)
{
	return uf_change(uf, dir, UF_REORDER,
			 &(struct uiw_uf_faults){ .reorder_ppm = ppm,
						  .reorder_after = after,
						  .reorder_ms = max_ms });
}

int uiw_uf_delay(struct uiw_uf *uf, enum uiw_uf_dir dir, unsigned int ms)
{
	return uf_change(uf, dir, UF_DELAY,
			 &(struct uiw_uf_faults){ .delay_ms = ms });
}

int uiw_uf_burst(struct uiw_uf *uf, enum uiw_uf_dir dir, unsigned int k)
{
	if (uf == NULL || !uf_dir_ok(dir))
		return uf_einval();
	pthread_mutex_lock(&uf->rl.mu);
	uf->d[dir].burst_left = k;
	pthread_mutex_unlock(&uf->rl.mu);
	return 0;
}

int uiw_uf_cut(struct uiw_uf *uf, bool forever)
{
	if (uf == NULL)
		return uf_einval();
	pthread_mutex_lock(&uf->rl.mu);
	uf->cut = true;
	uf->cut_forever = uf->cut_forever || forever;
	pthread_mutex_unlock(&uf->rl.mu);
	return 0;
}

int uiw_uf_uncut(struct uiw_uf *uf)
{
	int rc = 0;

	if (uf == NULL)
		return uf_einval();
	pthread_mutex_lock(&uf->rl.mu);
	if (uf->cut_forever) {
		errno = EPERM;
		rc = -1;
	} else {
		uf->cut = false;
	}
	pthread_mutex_unlock(&uf->rl.mu);
	return rc;
}

int uiw_uf_seed(struct uiw_uf *uf, uint64_t seed)
{
	if (uf == NULL)
		return uf_einval();
	pthread_mutex_lock(&uf->rl.mu);
	uf_seed_dirs(uf, seed);
	pthread_mutex_unlock(&uf->rl.mu);
	return 0;
}

void uiw_uf_get_stats(struct uiw_uf *uf, struct uiw_uf_stats *st)
{
	memset(st, 0, sizeof(*st));
	pthread_mutex_lock(&uf->rl.mu);
	for (int i = 0; i < 2; i++) {
		const struct uf_dir *d = &uf->d[i];

		st->d[i] = d->st;
		st->d[i].pending = d->ln + d->hn;
		st->d[i].burst_left = d->burst_left;
	}
	st->clients = uf->nclients;
	st->refused = uf->refused;
	st->cut = uf->cut;
	st->cut_forever = uf->cut_forever;
	pthread_mutex_unlock(&uf->rl.mu);
}

/* What a wait counts. */
enum uf_count { UF_RECEIVED, UF_DONE, UF_MATCHED };

static uint64_t uf_count(const struct uf_dir *d, enum uf_count what)
{
	switch (what) {
	case UF_RECEIVED:
		return d->st.received;
	case UF_MATCHED:
		return d->st.matched;
	default:
		return d->st.forwarded + d->st.dropped + d->st.overflow +
		       d->st.send_errors;
	}
}

static int uf_wait(struct uiw_uf *uf, int dir, uint64_t n,
		   enum uf_count what, int timeout_ms)
{
	struct timespec ts, *until = uiw_rl_until(&ts, timeout_ms);
	int rc = 0;

	if (uf == NULL || !uf_dir_ok(dir))
		return uf_einval();
	uiw_rl_enter(&uf->rl);
	while (uf_count(&uf->d[dir], what) < n) {
		rc = uiw_rl_wait_once(&uf->rl, until);
		if (rc)
			break;
	}
	uiw_rl_leave(&uf->rl);
	return rc;
}

int uiw_uf_wait_received(struct uiw_uf *uf, enum uiw_uf_dir dir,
			 uint64_t n, int timeout_ms)
{
	return uf_wait(uf, dir, n, UF_RECEIVED, timeout_ms);
}

int uiw_uf_wait_done(struct uiw_uf *uf, enum uiw_uf_dir dir, uint64_t n,
		     int timeout_ms)
{
	return uf_wait(uf, dir, n, UF_DONE, timeout_ms);
}

int uiw_uf_wait_matched(struct uiw_uf *uf, enum uiw_uf_dir dir, uint64_t n,
			int timeout_ms)
{
	return uf_wait(uf, dir, n, UF_MATCHED, timeout_ms);
}

/* ------------------------------------------------------------------ */
/* Filters                                                             */

int uiw_uf_match(struct uiw_uf *uf, enum uiw_uf_dir dir, uiw_uf_match_fn fn,
		 void *arg, enum uiw_uf_action action, unsigned int max_ms)
{
	struct uf_dir *d;

	if (uf == NULL || !uf_dir_ok(dir) ||
	    (fn != NULL && action != UIW_UF_COUNT && action != UIW_UF_DROP &&
	     action != UIW_UF_HOLD) ||
	    (fn != NULL && action == UIW_UF_HOLD &&
	     (max_ms < 1 || max_ms > UIW_UF_MAX_MS)))
		return uf_einval();
	pthread_mutex_lock(&uf->rl.mu);
	d = &uf->d[dir];
	d->match = fn;
	d->match_arg = fn ? arg : NULL;
	d->action = fn ? action : UIW_UF_COUNT;
	d->match_ms = fn ? max_ms : 0;
	pthread_mutex_unlock(&uf->rl.mu);
	return 0;
}

int uiw_uf_release(struct uiw_uf *uf, enum uiw_uf_dir dir)
{
	struct uf_dir *d;
	int64_t now = uiw_rl_now();

	if (uf == NULL || !uf_dir_ok(dir))
		return uf_einval();
	pthread_mutex_lock(&uf->rl.mu);
	d = &uf->d[dir];
	/* Their time is up: the thread sends them in the order held. */
	for (unsigned int i = 0; i < d->hn; i++)
		if (d->held[i].matched && d->held[i].due > now)
			d->held[i].due = now;
	pthread_mutex_unlock(&uf->rl.mu);
	uiw_rl_wake(&uf->rl);
	return 0;
}

/* The chunk at *off of an SCTP packet (RFC 4960 §3.2): its type and
 * length; *off moves past it and its padding.  False at the end of the
 * packet, or at a chunk whose length does not fit. */
static bool uf_sctp_chunk(const uint8_t *p, size_t len, size_t *off,
			  uint8_t *type, uint16_t *clen)
{
	size_t o = *off;

	if (o > len || len - o < 4)
		return false;
	*type = p[o];
	*clen = (uint16_t)(p[o + 2] << 8 | p[o + 3]);
	if (*clen < 4 || *clen > len - o)
		return false;
	*off = o + (((size_t)*clen + 3) & ~(size_t)3);
	return true;
}

static uint32_t uf_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

#define UF_SCTP_COMMON	12	/* RFC 4960 §3.1 */
#define UF_SCTP_DATA	0	/* §3.3.1 */
#define UF_SCTP_DATA_HDR 16	/* chunk header, TSN, SID, SSN, PPID */

bool uiw_uf_sctp_first_data(const uint8_t *data, size_t len,
			    struct uiw_uf_sctp_data *d)
{
	size_t off = UF_SCTP_COMMON, at;
	unsigned int index = 0;
	uint16_t clen;
	uint8_t type;

	if (data == NULL || len < UF_SCTP_COMMON)
		return false;
	for (;; index++) {
		at = off;
		if (!uf_sctp_chunk(data, len, &off, &type, &clen))
			return false;
		if (type != UF_SCTP_DATA)
			continue;
		if (clen < UF_SCTP_DATA_HDR)
			return false;
		if (d != NULL) {
			const uint8_t *c = data + at;

			d->vtag = uf_be32(data + 4);
			d->flags = c[1];
			d->tsn = uf_be32(c + 4);
			d->sid = (uint16_t)(c[8] << 8 | c[9]);
			d->ssn = (uint16_t)(c[10] << 8 | c[11]);
			d->ppid = uf_be32(c + 12);
			d->data_len = (uint16_t)(clen - UF_SCTP_DATA_HDR);
			d->index = index;
		}
		return true;
	}
}

bool uiw_uf_sctp_has_chunk(const uint8_t *data, size_t len, uint8_t type)
{
	size_t off = UF_SCTP_COMMON;
	uint16_t clen;
	uint8_t t;

	if (data == NULL || len < UF_SCTP_COMMON)
		return false;
	while (uf_sctp_chunk(data, len, &off, &t, &clen))
		if (t == type)
			return true;
	return false;
}

bool uiw_uf_match_sctp_sid(void *arg, const uint8_t *data, size_t len)
{
	struct uiw_uf_sctp_data d;

	return arg != NULL && uiw_uf_sctp_first_data(data, len, &d) &&
	       d.sid == *(const uint16_t *)arg;
}
