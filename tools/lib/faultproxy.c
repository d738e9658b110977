/*
 * A fault-injecting TCP proxy for tests and uiwarp-faultproxy: see
 * faultproxy.h for what it does.  One thread per proxy, non-blocking
 * sockets, one poll(2) loop.
 * The thread holds the proxy's mutex except while it sleeps in poll();
 * the API takes the same mutex, changes the state and wakes the thread
 * through an eventfd (relay_util.h), so every change takes effect at the
 * next round.
 *
 * Per direction the proxy keeps the octets it has read and not yet
 * forwarded in a buffer, [tx_off, rx_off) of the stream, and a queue of
 * chunk records (end offset, time the chunk may leave) for the delay
 * fault.  Faults act at forwarding time: a write never crosses an armed
 * trigger offset, so a trigger sees the stream exactly at its offset.
 */
#include "faultproxy.h"
#include "relay_util.h"

#include <errno.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#define FP_BUF_SIZE		(256u * 1024u)	/* held octets per direction */
#define FP_NREC			4096u		/* delay records per direction */
#define FP_READS_PER_ROUND	16
#define FP_WRITES_PER_ROUND	1024
#define FP_BYTES_PER_ROUND	(1u << 20)
#define FP_MAX_DELAY_MS		3600000u
/* Before a reset the octets up to the reset offset must have reached
 * the receiver (our send queue towards it empty), else the RST would
 * discard them: look again every ms, give up waiting after a second. */
#define FP_DRAIN_CHECK_NS	1000000LL
#define FP_DRAIN_LIMIT_NS	1000000000LL
#define NS_PER_MS		UIW_RL_NS_PER_MS
#define FP_ACCEPT_BACKOFF_NS	(10 * NS_PER_MS)
#define FP_HIST			64		/* ended connections remembered */

struct fp_rec {
	uint64_t end;		/* stream offset just past the chunk */
	int64_t due;		/* CLOCK_MONOTONIC ns it may be forwarded */
};

struct fp_dir {
	struct uiw_fp_faults f;	/* faults; triggers are disarmed on firing */
	uint8_t *buf;
	size_t head, tail;	/* buf[head..tail) = stream [tx_off, rx_off) */
	uint64_t rx_off, tx_off;
	struct fp_rec rec[FP_NREC];
	unsigned int rh, rn;	/* ring of records: first, count */
	bool src_eof;		/* the source sent FIN */
	int64_t eof_due;	/* when the FIN may be passed on */
	bool fin_sent;		/* shutdown(SHUT_WR) done towards the sink */
	bool discard;		/* shut fault fired: drop what is read */
	bool stalled;
	int64_t drain_since;	/* reset pending since (0: not pending) */
	uint64_t total, dropped, writes;
};

struct uiw_fp {
	struct uiw_rl rl;	/* thread, lock, wake-up, waits */
	int lfd;
	struct sockaddr_storage laddr, taddr;
	socklen_t llen, tlen;

	bool active, connecting;
	int cfd, sfd;		/* client leg, target leg */
	struct fp_dir d[2];
	int64_t accept_after;	/* backing off after accept failed */
	unsigned int accepted, closed, flips, resets, shuts;
	uint64_t ended_off[FP_HIST][2];	/* final offsets, by number */
};

/* What one direction wants from the next poll round. */
struct fp_want {
	short src_ev, dst_ev;
	int64_t deadline;	/* 0: none */
};

enum { FP_GO = 0, FP_ABORT = -1, FP_RESET = -2 };

static int fp_src(const struct uiw_fp *fp, int dir)
{
	return dir == UIW_FP_C2S ? fp->cfd : fp->sfd;
}

static int fp_dst(const struct uiw_fp *fp, int dir)
{
	return dir == UIW_FP_C2S ? fp->sfd : fp->cfd;
}

static void fp_nodelay(int fd)
{
	int on = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on));
}

/* Closes a leg so that the peer gets a RST. */
static void fp_abort_fd(int fd)
{
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };

	if (fd < 0)
		return;
	setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	close(fd);
}

/* ------------------------------------------------------------------ */
/* Connection life                                                     */

static void fp_dir_reset_stream(struct fp_dir *d)
{
	d->head = d->tail = 0;
	d->rx_off = d->tx_off = 0;
	d->rh = d->rn = 0;
	d->src_eof = false;
	d->eof_due = 0;
	d->fin_sent = false;
	d->discard = false;
	d->stalled = false;
	d->drain_since = 0;
}

static void fp_conn_end(struct uiw_fp *fp, bool abort)
{
	for (int i = 0; i < 2; i++) {
		struct fp_dir *d = &fp->d[i];

		d->dropped += d->rx_off - d->tx_off;
		d->head = d->tail = 0;
		d->rx_off = d->tx_off;
		d->rn = 0;
		d->stalled = false;
		d->drain_since = 0;
		fp->ended_off[(fp->accepted - 1) % FP_HIST][i] = d->tx_off;
	}
	if (abort) {
		fp_abort_fd(fp->cfd);
		fp_abort_fd(fp->sfd);
	} else {
		if (fp->cfd >= 0)
			close(fp->cfd);
		if (fp->sfd >= 0)
			close(fp->sfd);
	}
	fp->cfd = fp->sfd = -1;
	fp->active = false;
	fp->connecting = false;
	fp->closed++;
}

static void fp_accept(struct uiw_fp *fp)
{
	int cfd, sfd;

	cfd = accept4(fp->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (cfd < 0) {
		/* Out of descriptors or memory: the client stays in the
		 * backlog; try again in a while instead of spinning. */
		if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
		    errno == ENOMEM)
			fp->accept_after = uiw_rl_now() + FP_ACCEPT_BACKOFF_NS;
		return;		/* EAGAIN, ECONNABORTED, ...: poll again */
	}
	fp_nodelay(cfd);
	for (int i = 0; i < 2; i++)
		fp_dir_reset_stream(&fp->d[i]);
	fp->accepted++;
	fp->active = true;
	fp->cfd = cfd;
	fp->sfd = -1;

	sfd = socket(fp->taddr.ss_family,
		     SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (sfd < 0) {
		fp_conn_end(fp, true);
		return;
	}
	fp->sfd = sfd;
	fp_nodelay(sfd);
	if (connect(sfd, (struct sockaddr *)&fp->taddr, fp->tlen) == 0)
		return;
	if (errno == EINPROGRESS) {
		fp->connecting = true;
		return;
	}
	fp_conn_end(fp, true);
}

static int fp_sock_error(int fd)
{
	int err = 0;
	socklen_t l = sizeof(err);

	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &l) < 0)
		return errno;
	return err;
}

/* ------------------------------------------------------------------ */
/* Moving octets                                                       */

/* Whether a chunk read now, to leave at due, can share the last record:
 * octets leave in order, so a later chunk never leaves before an earlier
 * one, and the merged record takes the later time.  That holds the
 * earlier octets at most a millisecond longer, or not at all when there
 * is no delay (due is then already past when they are written). */
static bool fp_rec_merges(const struct fp_dir *d, int64_t due)
{
	const struct fp_rec *last;

	if (d->rn == 0)
		return false;
	last = &d->rec[(d->rh + d->rn - 1) % FP_NREC];
	return d->f.delay_ms == 0 || last->due + NS_PER_MS >= due;
}

static bool fp_rec_room(const struct fp_dir *d, int64_t due)
{
	return d->rn < FP_NREC || fp_rec_merges(d, due);
}

static void fp_rec_add(struct fp_dir *d, int64_t due)
{
	/* A full ring (the chunk came later than fp_rec_room() was told)
	 * merges too: with the later time, so nothing leaves early. */
	if (d->rn == FP_NREC || fp_rec_merges(d, due)) {
		struct fp_rec *last = &d->rec[(d->rh + d->rn - 1) % FP_NREC];

		last->end = d->rx_off;
		if (due > last->due)
			last->due = due;
		return;
	}
	d->rec[(d->rh + d->rn) % FP_NREC] = (struct fp_rec){ d->rx_off, due };
	d->rn++;
}

static int fp_read(struct uiw_fp *fp, int dir)
{
	struct fp_dir *d = &fp->d[dir];
	int fd = fp_src(fp, dir);
	int64_t delay = (int64_t)d->f.delay_ms * NS_PER_MS;

	if (d->src_eof || fd < 0)
		return FP_GO;
	if (dir == UIW_FP_S2C && fp->connecting)
		return FP_GO;
	for (int i = 0; i < FP_READS_PER_ROUND; i++) {
		size_t room;
		ssize_t n;

		if (d->discard) {
			d->head = d->tail = 0;
		} else {
			if (d->tail == FP_BUF_SIZE && d->head > 0) {
				memmove(d->buf, d->buf + d->head,
					d->tail - d->head);
				d->tail -= d->head;
				d->head = 0;
			}
			if (!fp_rec_room(d, uiw_rl_now() + delay))
				return FP_GO;	/* the writer will free one */
		}
		room = FP_BUF_SIZE - d->tail;
		if (room == 0)
			return FP_GO;
		n = recv(fd, d->buf + d->tail, room, MSG_DONTWAIT);
		if (n > 0) {
			if (d->discard) {
				d->dropped += (uint64_t)n;
				continue;
			}
			d->tail += (size_t)n;
			d->rx_off += (uint64_t)n;
			fp_rec_add(d, uiw_rl_now() + delay);
			continue;
		}
		if (n == 0) {
			d->src_eof = true;
			d->eof_due = uiw_rl_now() + delay;
			return FP_GO;
		}
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return FP_GO;
		return FP_ABORT;
	}
	return FP_GO;
}

/* Whether to poll the source for more: whenever there is room for it.
 * Without room the writer makes some (on POLLOUT, a deadline or a
 * release), and every round reads again. */
static bool fp_want_read(const struct uiw_fp *fp, int dir)
{
	const struct fp_dir *d = &fp->d[dir];

	if (d->src_eof || fp_src(fp, dir) < 0)
		return false;
	if (dir == UIW_FP_S2C && fp->connecting)
		return false;
	if (d->discard)
		return true;
	return d->tail - d->head < FP_BUF_SIZE &&
	       fp_rec_room(d, uiw_rl_now() +
			      (int64_t)d->f.delay_ms * NS_PER_MS);
}

static bool fp_armed_at(uint64_t at, uint64_t off)
{
	return at != UIW_FP_OFF && off >= at;
}

/* Limits a write of n octets at offset off so it stops at trigger at. */
static size_t fp_clip(size_t n, uint64_t off, uint64_t at)
{
	if (at != UIW_FP_OFF && at > off && at - off < n)
		return (size_t)(at - off);
	return n;
}

static int fp_write(struct uiw_fp *fp, int dir, struct fp_want *w)
{
	struct fp_dir *d = &fp->d[dir];
	int fd = fp_dst(fp, dir);
	size_t bytes = 0;
	bool progress = false;
	int writes = 0;

	if (fp->connecting || d->fin_sent || fd < 0)
		return FP_GO;

	/* The flip: once its octet is held here, before it leaves. */
	if (d->f.flip_at != UIW_FP_OFF && d->f.flip_at >= d->tx_off &&
	    d->f.flip_at < d->rx_off) {
		d->buf[d->head + (size_t)(d->f.flip_at - d->tx_off)] ^=
			(uint8_t)(1u << d->f.flip_bit);
		d->f.flip_at = UIW_FP_OFF;
		fp->flips++;
	}

	d->stalled = false;
	for (;;) {
		int64_t now = uiw_rl_now();
		size_t n;
		ssize_t r;

		if (fp_armed_at(d->f.reset_at, d->tx_off)) {
			int q = 0;

			if (d->drain_since == 0)
				d->drain_since = now;
			if (ioctl(fd, SIOCOUTQ, &q) == 0 && q > 0 &&
			    now - d->drain_since < FP_DRAIN_LIMIT_NS) {
				uiw_rl_deadline(&w->deadline,
					    now + FP_DRAIN_CHECK_NS);
				break;
			}
			d->f.reset_at = UIW_FP_OFF;
			fp->resets++;
			return FP_RESET;
		}
		if (fp_armed_at(d->f.shut_at, d->tx_off)) {
			d->f.shut_at = UIW_FP_OFF;
			fp->shuts++;
			shutdown(fd, SHUT_WR);
			d->fin_sent = true;
			d->discard = true;
			d->dropped += d->rx_off - d->tx_off;
			d->rx_off = d->tx_off;
			d->head = d->tail = 0;
			d->rn = 0;
			break;
		}
		if (fp_armed_at(d->f.stall_at, d->tx_off)) {
			d->stalled = true;
			break;
		}
		if (d->tx_off == d->rx_off) {
			if (!d->src_eof)
				break;
			if (now < d->eof_due) {
				uiw_rl_deadline(&w->deadline, d->eof_due);
				break;
			}
			shutdown(fd, SHUT_WR);
			d->fin_sent = true;
			break;
		}
		if (d->rec[d->rh].due > now) {
			uiw_rl_deadline(&w->deadline, d->rec[d->rh].due);
			break;
		}
		if (writes >= FP_WRITES_PER_ROUND ||
		    bytes >= FP_BYTES_PER_ROUND) {
			w->dst_ev |= POLLOUT;	/* yield to the rest */
			break;
		}

		n = (size_t)(d->rec[d->rh].end - d->tx_off);
		if (d->f.split > 0 && n > d->f.split)
			n = d->f.split;
		n = fp_clip(n, d->tx_off, d->f.reset_at);
		n = fp_clip(n, d->tx_off, d->f.shut_at);
		n = fp_clip(n, d->tx_off, d->f.stall_at);
		r = send(fd, d->buf + d->head, n, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (r > 0) {
			d->head += (size_t)r;
			d->tx_off += (uint64_t)r;
			d->total += (uint64_t)r;
			d->writes++;
			bytes += (size_t)r;
			writes++;
			progress = true;
			if (d->tx_off == d->rec[d->rh].end) {
				d->rh = (d->rh + 1) % FP_NREC;
				d->rn--;
			}
			if (d->head == d->tail)
				d->head = d->tail = 0;
			continue;
		}
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			w->dst_ev |= POLLOUT;
			break;
		}
		return FP_ABORT;
	}
	if (progress)
		pthread_cond_broadcast(&fp->rl.cv);
	return FP_GO;
}

/* One round of work on the open connection; fills in what to poll. */
static void fp_pump(struct uiw_fp *fp, struct fp_want w[2])
{
	int rc = FP_GO;

	for (int i = 0; i < 2 && rc == FP_GO; i++) {
		rc = fp_read(fp, i);
		if (rc == FP_GO)
			rc = fp_write(fp, i, &w[i]);
		if (rc == FP_GO && fp_want_read(fp, i))
			w[i].src_ev |= POLLIN;
	}
	if (rc != FP_GO) {
		fp_conn_end(fp, true);
		return;
	}
	if (fp->d[0].fin_sent && fp->d[0].src_eof &&
	    fp->d[1].fin_sent && fp->d[1].src_eof)
		fp_conn_end(fp, false);
}

/* ------------------------------------------------------------------ */
/* The thread                                                          */

static void *fp_main(void *arg)
{
	struct uiw_fp *fp = arg;

	pthread_mutex_lock(&fp->rl.mu);
	while (!fp->rl.stop) {
		struct fp_want w[2] = { { 0, 0, 0 }, { 0, 0, 0 } };
		struct pollfd pfd[4];
		int64_t dl = 0;
		int timeout;
		short cev = 0, sev = 0;
		bool accepting = false;

		if (fp->active)
			fp_pump(fp, w);
		pthread_cond_broadcast(&fp->rl.cv);

		if (!fp->active) {
			if (fp->accept_after > uiw_rl_now())
				uiw_rl_deadline(&dl, fp->accept_after);
			else
				accepting = true;
		}
		pfd[0] = (struct pollfd){ .fd = fp->rl.efd,
					  .events = POLLIN };
		pfd[1] = (struct pollfd){ .fd = accepting ? fp->lfd : -1,
					  .events = POLLIN };
		if (fp->active) {
			cev = w[UIW_FP_C2S].src_ev | w[UIW_FP_S2C].dst_ev;
			sev = w[UIW_FP_S2C].src_ev | w[UIW_FP_C2S].dst_ev;
			if (fp->connecting)
				sev = POLLOUT;
			for (int i = 0; i < 2; i++)
				if (w[i].deadline)
					uiw_rl_deadline(&dl, w[i].deadline);
		}
		/* An fd with nothing to wait for is left out: its POLLHUP
		 * would otherwise wake us again and again. */
		pfd[2] = (struct pollfd){ .fd = cev ? fp->cfd : -1,
					  .events = cev };
		pfd[3] = (struct pollfd){ .fd = sev ? fp->sfd : -1,
					  .events = sev };
		timeout = uiw_rl_poll_timeout(dl);

		pthread_mutex_unlock(&fp->rl.mu);
		poll(pfd, 4, timeout);
		pthread_mutex_lock(&fp->rl.mu);

		if (pfd[0].revents & POLLIN)
			uiw_rl_drain(&fp->rl);
		if (fp->rl.stop)
			break;
		if (!fp->active && (pfd[1].revents & POLLIN)) {
			fp_accept(fp);
			continue;
		}
		if (!fp->active)
			continue;
		if (fp->connecting) {
			if (pfd[3].revents) {
				if (fp_sock_error(fp->sfd) != 0) {
					fp_conn_end(fp, true);
					continue;
				}
				fp->connecting = false;
			}
			continue;
		}
		/* A leg that failed (RST, ...) ends the connection; a hang-up
		 * on a leg we only write to does as well. */
		for (int i = 2; i < 4 && fp->active; i++) {
			short re = pfd[i].revents;

			if (((re & POLLERR) && fp_sock_error(pfd[i].fd) != 0) ||
			    ((re & POLLHUP) && !(pfd[i].events & POLLIN)))
				fp_conn_end(fp, true);
		}
	}
	pthread_cond_broadcast(&fp->rl.cv);
	pthread_mutex_unlock(&fp->rl.mu);
	return NULL;
}

/* ------------------------------------------------------------------ */
/* API                                                                 */

void uiw_fp_faults_init(struct uiw_fp_faults *f)
{
	*f = (struct uiw_fp_faults){
		.split = 0, .delay_ms = 0,
		.stall_at = UIW_FP_OFF, .reset_at = UIW_FP_OFF,
		.shut_at = UIW_FP_OFF, .flip_at = UIW_FP_OFF, .flip_bit = 0,
	};
}

static int fp_einval(void)
{
	errno = EINVAL;
	return -1;
}

static bool fp_dir_ok(int dir)
{
	return dir == UIW_FP_C2S || dir == UIW_FP_S2C;
}

static bool fp_faults_ok(const struct uiw_fp_faults *f)
{
	return f->delay_ms <= FP_MAX_DELAY_MS && f->flip_bit <= 7;
}

static void fp_free(struct uiw_fp *fp)
{
	if (fp->lfd >= 0)
		close(fp->lfd);
	for (int i = 0; i < 2; i++)
		free(fp->d[i].buf);
	uiw_rl_destroy(&fp->rl);
	free(fp);
}

struct uiw_fp *uiw_fp_start(const struct sockaddr *target, socklen_t len,
			    const struct uiw_fp_faults *faults)
{
	struct uiw_fp *fp;
	int err;

	if (!uiw_rl_addr_ok(target, len)) {
		errno = EINVAL;
		return NULL;
	}
	if (faults && (!fp_faults_ok(&faults[0]) ||
		       !fp_faults_ok(&faults[1]))) {
		errno = EINVAL;
		return NULL;
	}
	fp = calloc(1, sizeof(*fp));
	if (fp == NULL)
		return NULL;
	fp->lfd = fp->cfd = fp->sfd = -1;
	if (uiw_rl_init(&fp->rl) < 0)
		goto fail;
	memcpy(&fp->taddr, target, len);
	fp->tlen = len;
	for (int i = 0; i < 2; i++) {
		fp->d[i].buf = malloc(FP_BUF_SIZE);
		if (fp->d[i].buf == NULL)
			goto fail;
		if (faults)
			fp->d[i].f = faults[i];
		else
			uiw_fp_faults_init(&fp->d[i].f);
	}

	/* Listen on the loopback address of the target's family. */
	fp->llen = sizeof(fp->laddr);
	fp->lfd = uiw_rl_socket(target->sa_family, SOCK_STREAM, 0, true,
				&fp->laddr, &fp->llen);
	if (fp->lfd < 0 || listen(fp->lfd, 64) < 0)
		goto fail;
	if (uiw_rl_start(&fp->rl, fp_main, fp) < 0)
		goto fail;
	return fp;
fail:
	err = errno;
	fp_free(fp);
	errno = err;
	return NULL;
}

struct uiw_fp *uiw_fp_start_to(const char *host, uint16_t port,
			       const struct uiw_fp_faults *faults)
{
	struct sockaddr_storage ss;
	socklen_t len;

	if (uiw_rl_numeric(host, port, &ss, &len) < 0)
		return NULL;
	return uiw_fp_start((struct sockaddr *)&ss, len, faults);
}

void uiw_fp_halt(struct uiw_fp *fp)
{
	if (fp == NULL || !uiw_rl_halt(&fp->rl))
		return;
	pthread_mutex_lock(&fp->rl.mu);
	if (fp->active)
		fp_conn_end(fp, false);
	pthread_cond_broadcast(&fp->rl.cv);
	pthread_mutex_unlock(&fp->rl.mu);
}

void uiw_fp_stop(struct uiw_fp *fp)
{
	if (fp == NULL)
		return;
	uiw_fp_halt(fp);
	/* Waiters in other threads leave (ECANCELED) before we free. */
	uiw_rl_await_waiters(&fp->rl);
	fp_free(fp);
}

uint16_t uiw_fp_port(const struct uiw_fp *fp)
{
	return uiw_rl_port(&fp->laddr);
}

void uiw_fp_addr(const struct uiw_fp *fp, struct sockaddr_storage *ss,
		 socklen_t *len)
{
	memcpy(ss, &fp->laddr, sizeof(*ss));
	*len = fp->llen;
}

/* A flip of an octet the open connection has already forwarded cannot
 * be done any more. */
static bool fp_flip_passed(const struct uiw_fp *fp, int dir, uint64_t off)
{
	return fp->active && off != UIW_FP_OFF && off < fp->d[dir].tx_off;
}

int uiw_fp_set_faults(struct uiw_fp *fp, enum uiw_fp_dir dir,
		      const struct uiw_fp_faults *f)
{
	if (fp == NULL || f == NULL || !fp_dir_ok(dir) || !fp_faults_ok(f))
		return fp_einval();
	pthread_mutex_lock(&fp->rl.mu);
	if (fp_flip_passed(fp, dir, f->flip_at)) {
		pthread_mutex_unlock(&fp->rl.mu);
		errno = EALREADY;
		return -1;
	}
	fp->d[dir].f = *f;
	pthread_mutex_unlock(&fp->rl.mu);
	uiw_rl_wake(&fp->rl);
	return 0;
}

/* Changes one field of one direction's faults under the lock. */
enum fp_field { F_SPLIT, F_DELAY, F_STALL, F_RESET, F_SHUT };

static int fp_set_field(struct uiw_fp *fp, int dir, enum fp_field which,
			uint64_t v)
{
	struct uiw_fp_faults *f;

	if (fp == NULL || !fp_dir_ok(dir))
		return fp_einval();
	if (which == F_DELAY && v > FP_MAX_DELAY_MS)
		return fp_einval();
	pthread_mutex_lock(&fp->rl.mu);
	f = &fp->d[dir].f;
	switch (which) {
	case F_SPLIT: f->split = (size_t)v; break;
	case F_DELAY: f->delay_ms = (unsigned int)v; break;
	case F_STALL: f->stall_at = v; break;
	case F_RESET: f->reset_at = v; break;
	case F_SHUT: f->shut_at = v; break;
	}
	pthread_mutex_unlock(&fp->rl.mu);
	uiw_rl_wake(&fp->rl);
	return 0;
}

int uiw_fp_split(struct uiw_fp *fp, enum uiw_fp_dir dir, size_t n)
{
	return fp_set_field(fp, dir, F_SPLIT, n);
}

int uiw_fp_delay(struct uiw_fp *fp, enum uiw_fp_dir dir, unsigned int ms)
{
	return fp_set_field(fp, dir, F_DELAY, ms);
}

int uiw_fp_stall(struct uiw_fp *fp, enum uiw_fp_dir dir, uint64_t off)
{
	return fp_set_field(fp, dir, F_STALL, off);
}

int uiw_fp_release(struct uiw_fp *fp, enum uiw_fp_dir dir)
{
	return fp_set_field(fp, dir, F_STALL, UIW_FP_OFF);
}

int uiw_fp_reset(struct uiw_fp *fp, enum uiw_fp_dir dir, uint64_t off)
{
	return fp_set_field(fp, dir, F_RESET, off);
}

int uiw_fp_shut(struct uiw_fp *fp, enum uiw_fp_dir dir, uint64_t off)
{
	return fp_set_field(fp, dir, F_SHUT, off);
}

int uiw_fp_flip(struct uiw_fp *fp, enum uiw_fp_dir dir, uint64_t off,
		unsigned int bit)
{
	if (fp == NULL || !fp_dir_ok(dir) || bit > 7)
		return fp_einval();
	pthread_mutex_lock(&fp->rl.mu);
	if (fp_flip_passed(fp, dir, off)) {
		pthread_mutex_unlock(&fp->rl.mu);
		errno = EALREADY;
		return -1;
	}
	fp->d[dir].f.flip_at = off;
	fp->d[dir].f.flip_bit = bit;
	pthread_mutex_unlock(&fp->rl.mu);
	uiw_rl_wake(&fp->rl);
	return 0;
}

void uiw_fp_get_stats(struct uiw_fp *fp, struct uiw_fp_stats *st)
{
	memset(st, 0, sizeof(*st));
	pthread_mutex_lock(&fp->rl.mu);
	for (int i = 0; i < 2; i++) {
		const struct fp_dir *d = &fp->d[i];

		st->offset[i] = d->tx_off;
		st->total[i] = d->total;
		st->dropped[i] = d->dropped;
		st->writes[i] = d->writes;
		st->stalled[i] = d->stalled;
	}
	st->flips = fp->flips;
	st->resets = fp->resets;
	st->shuts = fp->shuts;
	st->accepted = fp->accepted;
	st->closed = fp->closed;
	st->active = fp->active;
	pthread_mutex_unlock(&fp->rl.mu);
}

int uiw_fp_wait_offset_of(struct uiw_fp *fp, unsigned int conn,
			  enum uiw_fp_dir dir, uint64_t off, int timeout_ms)
{
	struct timespec ts, *until = uiw_rl_until(&ts, timeout_ms);
	int rc = 0;

	if (fp == NULL || conn == 0 || !fp_dir_ok(dir))
		return fp_einval();
	uiw_rl_enter(&fp->rl);
	for (;;) {
		/* One at a time: the open one is number accepted. */
		if (fp->active && fp->accepted == conn) {
			if (fp->d[dir].tx_off >= off)
				break;
		} else if (fp->closed >= conn) {
			if (fp->closed - conn >= FP_HIST ||
			    fp->ended_off[(conn - 1) % FP_HIST][dir] < off) {
				errno = ENOTCONN;
				rc = -1;
			}
			break;
		}
		if (uiw_rl_wait_once(&fp->rl, until)) {
			rc = -1;
			break;
		}
	}
	uiw_rl_leave(&fp->rl);
	return rc;
}

int uiw_fp_wait_offset(struct uiw_fp *fp, enum uiw_fp_dir dir, uint64_t off,
		       int timeout_ms)
{
	unsigned int conn;

	if (fp == NULL)
		return fp_einval();
	pthread_mutex_lock(&fp->rl.mu);
	conn = fp->active ? fp->accepted : fp->accepted + 1;
	pthread_mutex_unlock(&fp->rl.mu);
	return uiw_fp_wait_offset_of(fp, conn, dir, off, timeout_ms);
}

int uiw_fp_wait_closed(struct uiw_fp *fp, unsigned int n, int timeout_ms)
{
	struct timespec ts, *until = uiw_rl_until(&ts, timeout_ms);
	int rc = 0;

	if (fp == NULL)
		return fp_einval();
	uiw_rl_enter(&fp->rl);
	while (fp->closed < n) {
		if (uiw_rl_wait_once(&fp->rl, until)) {
			rc = -1;
			break;
		}
	}
	uiw_rl_leave(&fp->rl);
	return rc;
}

const char *uiw_fp_dir_name(enum uiw_fp_dir dir)
{
	return dir == UIW_FP_C2S ? "c2s" : dir == UIW_FP_S2C ? "s2c" : "?";
}

int uiw_fp_dir_parse(const char *s)
{
	if (s && strcmp(s, "c2s") == 0)
		return UIW_FP_C2S;
	if (s && strcmp(s, "s2c") == 0)
		return UIW_FP_S2C;
	return -1;
}
