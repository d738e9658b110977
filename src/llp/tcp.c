/*
 * MPA over TCP in Full Operation.
 *
 * The MPA framing is mpa.h's (FPDUs, markers, CRC, the responder's hold
 * and the alignment plan); this file moves octets and turns TCP events
 * into engine and framing calls.
 *
 * Receive runs on the progress thread (or, in poll mode, on the
 * application's thread inside uiw_cq_poll, see tcp_poll): it asks the
 * framing where the next octets go (uiw_mpa_rx_iov), reads them straight
 * there with readv, and reports them (uiw_mpa_rx_done), until the socket
 * is empty or a budget is spent.  Small reads also read ahead into a
 * staging buffer, from which the engine takes the following FPDUs
 * without another system call (see rx_run).  Transmit runs in whichever
 * thread gets the tx lock first: an application thread that posted a
 * work request (ops->kick) sends at once without a thread hop, and the
 * progress thread takes over when the socket is full (EPOLLOUT) or after
 * receive.  Each batch of FPDUs goes out in one system call, cut into
 * messages by the framing's alignment plan (uiw_mpa_plan), so that TCP
 * segments start at FPDU boundaries.
 *
 * Closing (RFC 5044 §7.2, RFC 5040 §6): when the engine asks for an
 * orderly close we send what is queued (a Terminate, say), shut our half
 * down and wait for the peer's FIN, bounded by a timer; an abortive
 * close resets at once.  A peer's FIN goes to the engine as
 * uiw_qp_llp_fin; a reset or error detaches the QP with
 * UIW_E_MPA_CLOSED.
 */
#include "tcp.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "mpa.h"
#include "../rnic/rnic.h"
#include "../rt/log.h"
#include "../rt/rt.h"
#include "../wire/mpa.h"
#include "mpa.h"

#define TCP_IOV_MAX      1024    /* iovecs per batch (UIO_MAXIOV) */
#define TCP_MSG_MAX      64      /* FPDUs (messages) per sendmmsg */
#define TCP_RX_BUDGET    64      /* readv calls per wake-up */
#define TCP_TX_BUDGET    64      /* sendmmsg calls per turn */
#define TCP_LINGER_MS    5000    /* wait for the peer's FIN after ours */
#define TCP_DEFAULT_EMSS 536     /* RFC 879, when TCP_MAXSEG says nothing */
#define TCP_SNDBUF_FPDUS 4       /* send buffer: room for this many FPDUs */
#define TCP_SNDBUF_BULK (4 << 20) /* send buffer for bulk transfer */
#define TCP_SNDBUF_LOCAL (256 << 10) /* at least this on a local path */
#define TCP_SNDBUF_RUNS (512 << 10) /* local, runs of FPDUs per message */
#define TCP_STAGE        65536   /* receive read-ahead per thread */
#define TCP_RA_SMALL     (16384 + 512) /* a read this small may read
				    ahead: up to 16 KiB of payload and its
				    headers, copied once more to save a
				    system call per FPDU (a copy that size
				    costs less than the call: bench/profile.md,
				    "Read-ahead up to 16 KiB") */
#define TCP_TX_GATHER    512     /* a message this small goes by send() */
#define TCP_RA_RUN       8       /* small reads in a row: read ahead */
#define TCP_RX_TAIL      64      /* staged beyond each read: the rest
				    of a header, the next FPDU's prelude */
#define TCP_POLL_BUDGET  4       /* reads per uiw_cq_poll in poll mode */

enum { CLOSE_NONE = 0, CLOSE_ORDERLY, CLOSE_ABORT };
enum rx_mode {
	RX_ENGINE,   /* octets go to the engine */
	RX_DISCARD,  /* the engine stopped reading: drop them, wait for EOF */
	RX_EOF,      /* the peer's FIN arrived */
};
enum tx_result { TX_IDLE, TX_BLOCKED, TX_MORE, TX_BUSY, TX_ERROR, TX_CLOSED };

/*
 * Scratch for one transmit or receive turn.  Each thread that moves
 * octets has one, not each connection: a turn never spans two calls (the
 * engine's iovecs are accounted for by tx_done / rx_done before the
 * turn ends, and staged octets are all handed to the engine), so a
 * thread needs only one, however many connections it serves.  That
 * keeps an idle connection small (see test_manyqp).  It is allocated on
 * the thread's first turn and freed when the thread exits: threads that
 * never move octets (most of an application's) pay nothing, as they
 * would for thread-local storage of this size.
 */
struct tcp_scratch {
	struct iovec iov[TCP_IOV_MAX];
	struct iovec mv[TCP_IOV_MAX + TCP_MSG_MAX];
	struct mmsghdr mm[TCP_MSG_MAX];
	struct uiw_mpa_msg msg[TCP_MSG_MAX];
	struct uiw_mpa_batch batch;
	/* Receive: where the engine's octets go, plus the staging buffer
	 * the octets after them are read ahead into. */
	struct iovec riov[TCP_IOV_MAX + 1];
	uint8_t stage[TCP_STAGE];
	uint8_t gather[TCP_TX_GATHER];    /* a small message, gathered */
};
static __thread struct tcp_scratch *tls_scratch;
static pthread_key_t scratch_key;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;
static bool scratch_key_ok;

static void scratch_key_make(void)
{
	scratch_key_ok = pthread_key_create(&scratch_key, free) == 0;
}

/* This thread's scratch, or NULL (errno ENOMEM) when it cannot be had. */
static struct tcp_scratch *scratch(void)
{
	struct tcp_scratch *s = tls_scratch;

	if (s)
		return s;
	pthread_once(&scratch_once, scratch_key_make);
	if (!scratch_key_ok) {
		errno = ENOMEM;
		return NULL;
	}
	s = malloc(sizeof(*s));
	if (!s) {
		errno = ENOMEM;
		return NULL;
	}
	if (pthread_setspecific(scratch_key, s) != 0) {
		free(s);
		errno = ENOMEM;
		return NULL;
	}
	tls_scratch = s;
	return s;
}

_Atomic uint64_t uiw_tcp_staged_bulk;
_Atomic uint64_t uiw_tcp_tx_bulk_msgs;

struct uiw_tcp {
	struct uiw_rt *rt;
	struct uiw_qp *qp;
	int fd;
	uint32_t qpn;
	uint32_t emss;               /* FPDUs packed into one message up to
					this many octets */
	bool fpdu_fills;             /* a full FPDU is exactly emss octets */
	uiw_tcp_closed_fn closed_fn;
	void *closed_arg;

	/* Transmit: one sender at a time (tx_lock); a sender that finds
	 * the lock taken leaves tx_pending set for the holder. */
	pthread_mutex_t tx_lock;
	atomic_bool tx_pending;
	/* Under tx_lock: */
	bool fd_closed;
	bool markers_tx;
	bool unaligned;              /* alignment given up: runs of FPDUs */
	struct uiw_mpa mpa;          /* the framing; transmit half under
					tx_lock */

	/* Receive: one reader at a time (rx_lock), the progress thread or,
	 * in poll mode, the application thread in uiw_cq_poll. */
	pthread_mutex_t rx_lock;
	bool rx_closed;              /* under rx_lock: the fd is closed */
	bool ra;                     /* under rx_lock: read ahead */
	uint64_t rx_octets;          /* under rx_lock: octets read */
	bool rx_tx;                  /* under rx_lock: what was received
					may have queued transmit work */
	uint8_t ra_small;            /* under rx_lock: small reads in a row */
	atomic_bool rx_app;          /* the application reads (poll mode) */
	atomic_bool rx_giveback;     /* the application stopped: the
					progress thread reads again */
	atomic_bool rx_watching;     /* the progress thread watches EPOLLIN */
	atomic_uint app_polls;       /* the application's receive calls */

	/* Requests from other threads, read by work on the progress thread. */
	struct uiw_rt_work work;
	atomic_int tx_error;         /* errno of a failed sendmsg */
	atomic_int rx_error;         /* errno of a failed read (poll mode) */
	atomic_int close_req;        /* CLOSE_* */

	/* Progress thread only. */
	struct uiw_rt_watch *watch;
	struct uiw_rt_timer linger;
	struct uiw_rt_timer lease;   /* the application's hold on receive */
	unsigned lease_polls;        /* app_polls when the lease began */
	enum rx_mode rx;
	bool want_out;
	bool wr_shut;                /* our FIN is out */
	bool detached;
};

static void tcp_finish(struct uiw_tcp *t, bool abortive, uiw_err_t err);
static void tcp_tx_push(struct uiw_tcp *t);

/* ---- Transmit -------------------------------------------------------- */

/* True when a message of this batch may span TCP segments: no markers,
 * full FPDUs as long as the EMSS (not on loopback, where they are
 * shorter), more than a segment to send, and TCP's MSS now is that EMSS
 * (it is not while the window is still small, or with another MTU than
 * the route's). */
static bool tx_multi(struct uiw_tcp *t, size_t total)
{
	socklen_t len = sizeof(int);
	int mss = 0;

	if (!t->fpdu_fills || t->unaligned || total <= t->emss)
		return false;
	if (getsockopt(t->fd, IPPROTO_TCP, TCP_MAXSEG, &mss, &len) < 0)
		return false;
	return (uint32_t)mss == t->emss;
}

/* One message.  A small one (an FPDU of a short Send or Write, a Read
 * Request, an acknowledgement-sized Terminate) is gathered and goes by
 * send(): the kernel takes a single buffer for less than it takes to
 * import a msghdr and its iovecs, and copying at most TCP_TX_GATHER
 * octets costs less than that difference (bench/profile.md measures the
 * round trip of small Writes).  Larger messages go as they are. */
static ssize_t tx_one(struct tcp_scratch *sc, int fd,
		      const struct msghdr *h, int fl)
{
	size_t i, len = 0;

	if (h->msg_iovlen == 1)
		return send(fd, h->msg_iov[0].iov_base, h->msg_iov[0].iov_len,
			    fl);
	for (i = 0; i < h->msg_iovlen; i++) {
		len += h->msg_iov[i].iov_len;
		if (len > TCP_TX_GATHER)
			return sendmsg(fd, h, fl);
	}
	for (i = 0, len = 0; i < h->msg_iovlen; i++) {
		memcpy(sc->gather + len, h->msg_iov[i].iov_base,
		       h->msg_iov[i].iov_len);
		len += h->msg_iov[i].iov_len;
	}
	return send(fd, sc->gather, len, fl);
}

/* Sends what the framing has, with the tx lock held. */
static enum tx_result tx_locked(struct uiw_tcp *t)
{
	struct tcp_scratch *sc;
	int round;

	if (t->fd_closed)
		return TX_CLOSED;
	sc = scratch();
	if (!sc) {
		atomic_store(&t->tx_error, ENOMEM);
		return TX_ERROR;
	}
	for (round = 0; round < TCP_TX_BUDGET; round++) {
		struct uiw_mpa_batch *b = &sc->batch;
		int j, r, n = uiw_mpa_tx_iov(&t->mpa, sc->iov, TCP_IOV_MAX, b);
		struct uiw_mpa_plan_in in;
		size_t sent = 0, planned;
		unsigned k;
		bool more, eor;
		int fl;

		if (n <= 0)
			return TX_IDLE;
		in.emss = t->emss;
		in.multi = tx_multi(t, b->total);
		in.unaligned = t->unaligned;
		in.markers = t->markers_tx;
		k = uiw_mpa_plan(b, &in, sc->mv, sc->msg, TCP_MSG_MAX,
				 &planned, &eor);
		for (j = 0; j < (int)k; j++) {
			struct msghdr *h = &sc->mm[j].msg_hdr;

			memset(h, 0, sizeof(*h));
			h->msg_iov = (struct iovec *)sc->msg[j].iov;
			h->msg_iovlen = sc->msg[j].iovlen;
		}
		/* One system call for the batch.  The kernel takes the flags
		 * of the call, not msg_flags, for every message: MSG_EOR
		 * ends each message's last skb, so the next message starts a
		 * segment of its own. */
		fl = MSG_DONTWAIT | MSG_NOSIGNAL | (eor ? MSG_EOR : 0);
		if (k == 1) {
			ssize_t w = tx_one(sc, t->fd, &sc->mm[0].msg_hdr, fl);

			r = w < 0 ? -1 : 1;
			if (w >= 0)
				sc->mm[0].msg_len = (unsigned)w;
		} else {
			r = sendmmsg(t->fd, sc->mm, k, fl);
		}
		if (r < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return TX_BLOCKED;
			atomic_store(&t->tx_error, errno);
			return TX_ERROR;
		}
		for (j = 0; j < r; j++) {
			sent += sc->mm[j].msg_len;
			if (sc->mm[j].msg_len >= UIW_TCP_BULK_MSG)
				atomic_fetch_add_explicit(
					&uiw_tcp_tx_bulk_msgs, 1,
					memory_order_relaxed);
		}
		more = uiw_mpa_tx_done(&t->mpa, sent);
		/* The kernel stops at a message it could not take whole:
		 * the socket is full. */
		if (sent < planned)
			return TX_BLOCKED;
		/* Nothing left to build: no tx_iov just to hear that. */
		if (!more)
			return TX_IDLE;
	}
	return TX_MORE;
}

static enum tx_result tx_run(struct uiw_tcp *t)
{
	enum tx_result res = TX_IDLE;

	atomic_store(&t->tx_pending, true);
	while (atomic_load(&t->tx_pending)) {
		if (pthread_mutex_trylock(&t->tx_lock) != 0)
			return TX_BUSY;   /* the holder sees tx_pending */
		atomic_store(&t->tx_pending, false);
		res = tx_locked(t);
		pthread_mutex_unlock(&t->tx_lock);
		if (res != TX_IDLE)
			break;
	}
	return res;
}

static void set_interest(struct uiw_tcp *t)
{
	uint32_t ev = 0;
	bool in = t->rx != RX_EOF && !atomic_load(&t->rx_app);
	int r;

	/* In poll mode the application reads: stay out of its way, while
	 * it keeps coming (tcp_lease_check).  rx_watching is cleared
	 * before rx_app is looked at again (both seq_cst): an application
	 * letting go (tcp_poll's RELEASE) is either seen here, or sees
	 * that nobody watches and wakes this thread. */
	if (!in && t->rx != RX_EOF) {
		atomic_store(&t->rx_watching, false);
		in = !atomic_load(&t->rx_app);
		if (!in && !t->lease.armed) {
			t->lease_polls = atomic_load(&t->app_polls);
			uiw_rt_timer_start(t->rt, &t->lease,
					   UIW_LLP_POLL_LEASE_MS);
		}
	}
	if (in) {
		ev |= EPOLLIN | EPOLLRDHUP;
		atomic_store(&t->rx_watching, true);
	}
	if (t->want_out)
		ev |= EPOLLOUT;
	r = uiw_rt_watch_set(t->watch, ev);
	if (r < 0)
		UIW_DBG(2, "tcp qp %u: epoll interest: %s", t->qpn,
			strerror(-r));
}

/* Progress thread: send, and close our half once everything is out
 * after an orderly close was asked for. */
static void tcp_tx_push(struct uiw_tcp *t)
{
	enum tx_result r;

	if (t->detached)
		return;
	r = tx_run(t);
	switch (r) {
	case TX_IDLE:
		t->want_out = false;
		break;
	case TX_BLOCKED:
		t->want_out = true;
		break;
	case TX_MORE:
		/* Yield to other connections, continue in the next round. */
		uiw_rt_post(t->rt, &t->work);
		return;
	case TX_BUSY:
		/* Another thread sends; it hands back what it cannot finish. */
		return;
	case TX_ERROR:
		tcp_finish(t, true, UIW_E_MPA_CLOSED);
		return;
	case TX_CLOSED:
		return;
	}
	set_interest(t);
	if (r == TX_IDLE && !t->wr_shut &&
	    atomic_load(&t->close_req) == CLOSE_ORDERLY) {
		pthread_mutex_lock(&t->tx_lock);
		if (shutdown(t->fd, SHUT_WR) < 0)
			UIW_DBG(2, "tcp qp %u: shutdown: %s", t->qpn,
				strerror(errno));
		pthread_mutex_unlock(&t->tx_lock);
		t->wr_shut = true;
		UIW_DBG(1, "tcp qp %u: sent FIN", t->qpn);
		if (t->rx == RX_EOF) {
			tcp_finish(t, false, UIW_OK);
			return;
		}
		uiw_rt_timer_start(t->rt, &t->linger, TCP_LINGER_MS);
	}
}

/* ---- Receive --------------------------------------------------------- */

static void rx_eof(struct uiw_tcp *t)
{
	enum uiw_qp_state s;

	t->rx = RX_EOF;
	/* the end is the progress thread's: a poll reads no more */
	atomic_store(&t->rx_giveback, true);
	set_interest(t);
	UIW_DBG(1, "tcp qp %u: peer sent FIN", t->qpn);
	if (t->wr_shut) {
		/* Both halves closed in order: our close is complete. */
		tcp_finish(t, false, UIW_OK);
		return;
	}
	s = uiw_qp_state(t->qp);
	if (s == UIW_QPS_RTS || s == UIW_QPS_CLOSING)
		uiw_qp_llp_fin(t->qp, uiw_mpa_rx_mid(&t->mpa));
	/* The engine now closes our half (ops->close); should it not, the
	 * timer ends the half-open connection. */
	if (!t->detached && atomic_load(&t->close_req) == CLOSE_NONE)
		uiw_rt_timer_start(t->rt, &t->linger, TCP_LINGER_MS);
}

static void rx_stop(struct uiw_tcp *t)
{
	/* The engine reads no more (a Terminate went out or came in).
	 * Keep draining the socket, so that the peer's FIN is seen and our
	 * close does not turn into a reset; the engine closes soon, and the
	 * timer bounds a peer that keeps sending. */
	t->rx = RX_DISCARD;
	/* ours to drain, whoever polls */
	atomic_store(&t->rx_giveback, true);
	atomic_store(&t->rx_app, false);
	if (!t->linger.armed)
		uiw_rt_timer_start(t->rt, &t->linger, TCP_LINGER_MS);
}

/*
 * Receive (RFC 5044 §4 framing is the engine's; this moves octets).
 *
 * Each turn asks the engine where the next octets go and reads them
 * there.  While the reads are small (headers, small payloads, the
 * prelude of the next FPDU), read-ahead turns on: one recv fills the
 * staging buffer of the thread, so that one system call takes all the
 * FPDUs that have arrived; the engine then gets them from the staging
 * buffer with no further system call, through the same rx_iov / rx_done
 * calls (so they are parsed and checked exactly like octets read from
 * the socket).  Otherwise a payload is read with readv straight into its
 * registered memory.
 * When staged octets would have to be copied into a large payload (a
 * bulk FPDU after small ones), read-ahead stops until small reads are
 * seen again: bulk data then goes to its place with one copy, the
 * kernel's.  A message of several FPDUs ends with a short one unless its
 * length is a multiple of the segment; when the engine expects that one
 * next (uiw_mpa_rx_iov's ahead: messages as long as the one before of their
 * kind), it comes with the read of the large one before it, staged and
 * copied (at most 16 KiB of payload), which saves a read per message.
 */
enum rx_res {
	RX_AGAIN,     /* the socket is empty (or the budget spent) */
	RX_STOPPED,   /* the engine reads no more */
	RX_GOT_EOF,   /* the peer's FIN */
	RX_FAILED,    /* a read error; errno */
	RX_MORE,      /* (rx_staged) the socket may hold more */
};

/* Hands staged octets to the engine; returns false when it stopped. */
static bool rx_unstage(struct uiw_tcp *t, struct tcp_scratch *sc,
		       size_t *off, size_t len)
{
	struct uiw_mpa_fed fed;
	int r;

	if (*off >= len)
		return true;
	r = uiw_mpa_rx_feed(&t->mpa, sc->stage + *off, len - *off, &fed);
	*off += fed.used;
	t->rx_tx = t->rx_tx || fed.tx;
	/* Bulk payload copied a second time: the stream has turned to
	 * large FPDUs, stop reading ahead. */
	if (fed.max_run >= TCP_RA_SMALL) {
		t->ra = false;
		t->ra_small = 0;
		atomic_fetch_add_explicit(&uiw_tcp_staged_bulk, fed.payload,
					  memory_order_relaxed);
	}
	return r == 0;
}

/*
 * Read-ahead on: one recv into the staging buffer, then the octets go to
 * the engine from there.  A plain recv costs the kernel less than a
 * readv of the engine's iovecs plus the staging buffer (no iovec array
 * to import), and when the socket is empty (a busy poll finds nothing
 * most of the time) the engine is not asked where octets would go at
 * all.  The engine's requests are small while read-ahead is on, so the
 * extra copy is of headers and small payloads; a large payload found in
 * the staging buffer turns read-ahead off (rx_unstage).
 */
static enum rx_res rx_staged(struct uiw_tcp *t, struct tcp_scratch *sc)
{
	size_t off = 0;
	ssize_t r;

	do
		r = recv(t->fd, sc->stage, TCP_STAGE, MSG_DONTWAIT);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK ? RX_AGAIN
							       : RX_FAILED;
	if (r == 0)
		return RX_GOT_EOF;
	t->rx_octets += (uint64_t)r;
	if (!rx_unstage(t, sc, &off, (size_t)r))
		return RX_STOPPED;
	/* Less than the buffer holds: the socket is empty now. */
	return (size_t)r < TCP_STAGE ? RX_AGAIN : RX_MORE;
}

/* Reads and hands octets to the engine, at most budget reads; the
 * caller holds rx_lock and the engine is reading. */
static enum rx_res rx_run(struct uiw_tcp *t, int budget)
{
	struct tcp_scratch *sc = scratch();
	int i;

	if (!sc)
		return RX_FAILED;          /* errno ENOMEM */
	for (i = 0; i < budget; i++) {
		struct iovec *iov = sc->riov;
		size_t total = 0, tail, ahead;
		ssize_t r;
		int k, n;

		if (t->ra) {
			enum rx_res res = rx_staged(t, sc);

			if (res != RX_MORE)
				return res;
			continue;
		}
		n = uiw_mpa_rx_iov(&t->mpa, iov, TCP_IOV_MAX, &ahead);
		for (k = 0; k < n; k++)
			total += iov[k].iov_len;
		if (n <= 0 || total == 0)
			return RX_STOPPED;
		/* Every read also takes up to TCP_RX_TAIL octets beyond the
		 * request into the staging buffer, when they are already
		 * there: after a payload, the prelude of the next FPDU (one
		 * readv per large FPDU instead of two); after the first
		 * octets of a header, the rest of it and the start of what
		 * follows (the engine asks for a header in two steps, the
		 * part common to all DDP headers and then the rest).  Too
		 * short to stage payload in bulk. */
		tail = TCP_RX_TAIL;
		/* The short FPDU that ends a message, when the engine
		 * expects one next (uiw_mpa_rx_iov's ahead): read with this
		 * one and copied, instead of a read of its own.  The usual
		 * tail stays beyond it, so that a read short of the whole
		 * still tells that the socket is empty. */
		if (ahead <= TCP_STAGE - TCP_RX_TAIL)
			tail += ahead;
		iov[n].iov_base = sc->stage;
		iov[n].iov_len = tail;
		r = readv(t->fd, iov, n + 1);
		if (r < 0) {
			uiw_mpa_rx_done(&t->mpa, 0);
			if (errno == EINTR) {
				i--;
				continue;
			}
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return RX_AGAIN;
			return RX_FAILED;
		}
		if (r == 0) {
			uiw_mpa_rx_done(&t->mpa, 0);
			return RX_GOT_EOF;
		}
		t->rx_octets += (uint64_t)r;
		if ((size_t)r <= total) {
			if (uiw_mpa_rx_done(&t->mpa, (size_t)r) < 0)
				return RX_STOPPED;
			t->rx_tx = t->rx_tx || t->mpa.rx.tx;
		} else {
			size_t off = 0;

			if (uiw_mpa_rx_done(&t->mpa, total) < 0)
				return RX_STOPPED;
			t->rx_tx = t->rx_tx || t->mpa.rx.tx;
			if (!rx_unstage(t, sc, &off, (size_t)r - total))
				return RX_STOPPED;
		}
		/* Read-ahead pays off when small FPDUs follow each other
		 * closely: many small requests in a row, each met in full
		 * at once (a short read means the socket was empty, where
		 * reading ahead finds nothing).  A large request resets the
		 * count: a stream of large FPDUs, whose tails and preludes
		 * make a few small requests between the large ones, never
		 * turns read-ahead on. */
		if (total >= TCP_RA_SMALL)
			t->ra_small = 0;
		else if ((size_t)r >= total && !t->ra &&
			 ++t->ra_small >= TCP_RA_RUN)
			t->ra = true;
		/* Less than asked for: the socket is empty now (level-
		 * triggered epoll says so if more arrives). */
		if ((size_t)r < total + tail)
			return RX_AGAIN;
	}
	return RX_AGAIN;
}

/* Progress thread.  Returns true when what was received may have queued
 * transmit work (Read Responses, a Terminate, the first FPDU of a
 * responder), or the stream ended: the caller transmits. */
static bool tcp_rx(struct uiw_tcp *t)
{
	char discard[4096];
	int i;

	if (t->rx == RX_ENGINE) {
		enum rx_res res;
		bool tx;

		pthread_mutex_lock(&t->rx_lock);
		res = t->rx_closed ? RX_AGAIN : rx_run(t, TCP_RX_BUDGET);
		tx = t->rx_tx;
		t->rx_tx = false;
		pthread_mutex_unlock(&t->rx_lock);
		switch (res) {
		case RX_AGAIN:
		case RX_MORE:      /* not from rx_run */
			return tx;
		case RX_STOPPED:
			rx_stop(t);
			break;             /* drain below */
		case RX_GOT_EOF:
			rx_eof(t);
			return true;
		case RX_FAILED:
			UIW_DBG(1, "tcp qp %u: receive: %s", t->qpn,
				strerror(errno));
			tcp_finish(t, true, UIW_E_MPA_CLOSED);
			return true;
		}
	}
	for (i = 0; i < TCP_RX_BUDGET && t->rx == RX_DISCARD; i++) {
		ssize_t r = read(t->fd, discard, sizeof(discard));

		if (r > 0)
			continue;
		if (r == 0) {
			rx_eof(t);
			return true;
		}
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return true;
		UIW_DBG(1, "tcp qp %u: receive: %s", t->qpn, strerror(errno));
		tcp_finish(t, true, UIW_E_MPA_CLOSED);
		return true;
	}
	return true;
}

static int sock_error(int fd)
{
	int e = 0;
	socklen_t len = sizeof(e);

	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &len) < 0)
		return errno;
	return e;
}

/* Octets wait in the socket for the engine. */
static bool rx_pending(struct uiw_tcp *t)
{
	int n = 0;

	return t->rx == RX_ENGINE && ioctl(t->fd, SIOCINQ, &n) == 0 && n > 0;
}

static void tcp_event(void *arg, uint32_t events)
{
	struct uiw_tcp *t = arg;
	bool tx;

	/* An error (a reset, say) while the engine reads: the octets that
	 * came before it are read first, as an RNIC would have placed them
	 * on arrival, and the read reports the error (tcp_rx).  Unread
	 * they are, in poll mode, when the application did not poll. */
	if ((events & EPOLLERR) && t->rx != RX_ENGINE) {
		int e = sock_error(t->fd);

		if (e) {
			UIW_DBG(1, "tcp qp %u: %s", t->qpn, strerror(e));
			tcp_finish(t, true, UIW_E_MPA_CLOSED);
			return;
		}
	}
	if (atomic_load(&t->rx_app)) {
		if (events & (EPOLLERR | EPOLLHUP)) {
			/* The end of the connection is the progress
			 * thread's to handle: take receiving back. */
			atomic_store(&t->rx_giveback, true);
			atomic_store(&t->rx_app, false);
		} else {
			/* The application reads (poll mode). */
			events &= ~(uint32_t)(EPOLLIN | EPOLLRDHUP);
			set_interest(t);
		}
	}
	tx = (events & EPOLLOUT) || t->want_out;
	if (t->rx != RX_EOF &&
	    (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)))
		tx = tcp_rx(t) || tx;
	else
		tx = true;
	if (t->detached)
		return;
	/* The error, once the octets before it are read (a receive
	 * budget may have left some: the error waits for the next round) */
	if ((events & EPOLLERR) && !rx_pending(t)) {
		int e = sock_error(t->fd);

		if (e) {
			UIW_DBG(1, "tcp qp %u: %s", t->qpn, strerror(e));
			tcp_finish(t, true, UIW_E_MPA_CLOSED);
			return;
		}
	}
	if ((events & EPOLLHUP) && t->rx == RX_EOF) {
		/* Both directions are shut: after our FIN, the orderly end;
		 * without it, the connection was reset. */
		tcp_finish(t, !t->wr_shut,
			   t->wr_shut ? UIW_OK : UIW_E_MPA_CLOSED);
		return;
	}
	/* Received octets may have queued transmit work (Read Responses,
	 * a Terminate, the first FPDU of a responder): transmit when the
	 * engine says so (a receive turn's tx), or the socket has room for
	 * what waits.  Work posted meanwhile kicks the framing itself. */
	if (tx)
		tcp_tx_push(t);
}

/* ---- Progress-thread work and timers --------------------------------- */

static void tcp_work(void *arg)
{
	struct uiw_tcp *t = arg;
	int e;

	if (t->detached)
		return;
	e = atomic_exchange(&t->tx_error, 0);
	if (e) {
		UIW_DBG(1, "tcp qp %u: send: %s", t->qpn, strerror(e));
		tcp_finish(t, true, UIW_E_MPA_CLOSED);
		return;
	}
	e = atomic_exchange(&t->rx_error, 0);
	if (e) {
		UIW_DBG(1, "tcp qp %u: receive: %s", t->qpn, strerror(e));
		tcp_finish(t, true, UIW_E_MPA_CLOSED);
		return;
	}
	/* The application may have taken receiving over or given it back
	 * (poll mode): watch the socket accordingly. */
	set_interest(t);
	if (atomic_load(&t->close_req) == CLOSE_ABORT) {
		tcp_finish(t, true, UIW_OK);
		return;
	}
	tcp_tx_push(t);
}

/* Poll mode: an application that has not received for the connection
 * during a whole lease (it polled, then went elsewhere without arming
 * the CQ) no longer holds receive: the progress thread takes it back
 * (level-triggered, so what waits is read at once) until the
 * application's next poll.  RDMA Writes are placed and Read Requests
 * answered whatever the application does, at most a lease late. */
static void tcp_lease_check(void *arg)
{
	struct uiw_tcp *t = arg;
	unsigned polls = atomic_load(&t->app_polls);

	if (t->detached)
		return;
	if (atomic_load(&t->rx_app) && polls != t->lease_polls) {
		t->lease_polls = polls;
		uiw_rt_timer_start(t->rt, &t->lease, UIW_LLP_POLL_LEASE_MS);
		return;
	}
	if (atomic_exchange(&t->rx_app, false))
		UIW_DBG(2, "tcp qp %u: no poll for %u ms: the progress "
			"thread receives", t->qpn, UIW_LLP_POLL_LEASE_MS);
	set_interest(t);
}

static void tcp_linger_expired(void *arg)
{
	struct uiw_tcp *t = arg;

	UIW_DBG(1, "tcp qp %u: close timed out, resetting", t->qpn);
	tcp_finish(t, true, atomic_load(&t->close_req) != CLOSE_NONE ?
			    UIW_OK : UIW_E_MPA_CLOSED);
}

/* ---- Engine callbacks ------------------------------------------------ */

static void tcp_kick(void *ctx)
{
	struct uiw_tcp *t = ctx;
	enum tx_result r;

	if (uiw_rt_on_thread(t->rt)) {
		uiw_rt_post(t->rt, &t->work);
		return;
	}
	/* Fast path: send from the posting thread. */
	r = tx_run(t);
	if (r == TX_BLOCKED || r == TX_MORE || r == TX_ERROR ||
	    (r == TX_IDLE && atomic_load(&t->close_req) != CLOSE_NONE))
		uiw_rt_post(t->rt, &t->work);
}

static void tcp_close(void *ctx, bool abortive)
{
	struct uiw_tcp *t = ctx;

	if (abortive) {
		atomic_store(&t->close_req, CLOSE_ABORT);
	} else {
		int none = CLOSE_NONE;

		atomic_compare_exchange_strong(&t->close_req, &none,
					       CLOSE_ORDERLY);
	}
	/* Never wait here: the engine calls us with a callback counted as
	 * active, and uiw_qp_llp_detach waits for those to return (an
	 * abortive uiw_qp_destroy then waits for the detach itself). */
	uiw_rt_post(t->rt, &t->work);
}

/*
 * Poll mode (uiw_cq_set_poll_mode): uiw_cq_poll on the application's
 * thread receives for the connection itself, so that a completion needs
 * no hand-over from the progress thread.  One reader at a time: rx_lock,
 * taken with trylock here (a reader already at work delivers the same
 * completions).  Ownership: rx_app set means the application reads and
 * the progress thread does not watch EPOLLIN (it drops that interest
 * the next time it sees the socket, see tcp_event); before sleeping on
 * the CQ's notification the application arms it, and uiw_cq_req_notify
 * calls us with UIW_LLP_POLL_RELEASE: rx_app is cleared and the progress thread
 * watches EPOLLIN again (level-triggered, so octets already waiting are
 * seen: no wake-up is lost).  An application that neither polls nor
 * arms loses receive after a lease (tcp_lease_check).  The end of the
 * stream (FIN, a read error, the engine stopping) is handed back to the
 * progress thread for good.
 */
static int tcp_poll(void *ctx, int how)
{
	struct uiw_tcp *t = ctx;
	enum tx_result tr;
	enum rx_res res;
	uint64_t before;
	bool want_tx;

	if (how == UIW_LLP_POLL_FD) {
		int fd;

		/* rx_closed is set before the fd is closed. */
		pthread_mutex_lock(&t->rx_lock);
		fd = t->rx_closed ? -1 : t->fd;
		pthread_mutex_unlock(&t->rx_lock);
		return fd;
	}
	if (how == UIW_LLP_POLL_RELEASE || how == UIW_LLP_POLL_RELEASE_RECV) {
		/* The progress thread receives again, and sends what posts
		 * left for the next poll.  Receive alone, and it never
		 * stopped watching the socket (no octets came while the
		 * application held it): nothing to tell it. */
		atomic_store(&t->rx_app, false);
		if (how == UIW_LLP_POLL_RELEASE ||
		    !atomic_load(&t->rx_watching))
			uiw_rt_post(t->rt, &t->work);
		return 0;
	}
	/* Posted work requests wait for this call (deferred sends). */
	if (how == UIW_LLP_POLL_SEND_RECV) {
		tr = tx_run(t);
		if (tr == TX_BLOCKED || tr == TX_MORE || tr == TX_ERROR)
			uiw_rt_post(t->rt, &t->work);
	}
	if (atomic_load(&t->rx_giveback))
		return 0;
	atomic_fetch_add_explicit(&t->app_polls, 1, memory_order_relaxed);
	if (!atomic_load(&t->rx_app))
		atomic_store(&t->rx_app, true);
	if (pthread_mutex_trylock(&t->rx_lock) != 0)
		return 0;
	if (t->rx_closed) {
		pthread_mutex_unlock(&t->rx_lock);
		return 0;
	}
	before = t->rx_octets;
	res = rx_run(t, TCP_POLL_BUDGET);
	if (res == RX_FAILED)
		atomic_store(&t->rx_error, errno ? errno : EIO);
	before = t->rx_octets - before;
	want_tx = t->rx_tx;
	t->rx_tx = false;
	pthread_mutex_unlock(&t->rx_lock);
	if (res != RX_AGAIN) {
		atomic_store(&t->rx_giveback, true);
		atomic_store(&t->rx_app, false);
		uiw_rt_post(t->rt, &t->work);
	}
	if (!before)
		return 0;
	/* Received octets may have queued transmit work (Read Responses,
	 * a Terminate): send it from here, as tcp_kick does.  Staged
	 * octets tell whether they did (a busy poll of Writes and Sends
	 * then skips the transmit path). */
	if (!want_tx)
		return 1;
	tr = tx_run(t);
	if (tr == TX_BLOCKED || tr == TX_MORE || tr == TX_ERROR)
		uiw_rt_post(t->rt, &t->work);
	return 1;
}

static void tcp_query(void *ctx, struct uiw_qp_attr *attr)
{
	struct uiw_tcp *t = ctx;

	uiw_mpa_query(&t->mpa, attr);
}

static const struct uiw_llp_ops tcp_ops = {
	.kick = tcp_kick,
	.close = tcp_close,
	.poll = tcp_poll,
	.query = tcp_query,
};

/* ---- Life cycle ------------------------------------------------------ */

static void tcp_finish(struct uiw_tcp *t, bool abortive, uiw_err_t err)
{
	uiw_tcp_closed_fn fn;

	if (t->detached)
		return;
	t->detached = true;
	uiw_rt_timer_stop(t->rt, &t->linger);
	uiw_rt_timer_stop(t->rt, &t->lease);
	uiw_rt_watch_del(t->watch);
	t->watch = NULL;
	/* A reader in poll mode finds rx_closed and leaves the fd alone. */
	pthread_mutex_lock(&t->rx_lock);
	t->rx_closed = true;
	pthread_mutex_unlock(&t->rx_lock);
	pthread_mutex_lock(&t->tx_lock);
	if (abortive) {
		/* RFC 793 abort: SO_LINGER 0 makes close send a reset. */
		struct linger lg = { .l_onoff = 1, .l_linger = 0 };

		setsockopt(t->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	}
	close(t->fd);
	t->fd_closed = true;
	pthread_mutex_unlock(&t->tx_lock);
	UIW_DBG(1, "tcp qp %u: closed (%s%s)", t->qpn,
		abortive ? "reset, " : "", uiw_err_str(err));
	uiw_qp_llp_detach(t->qp, err);
	/* Neither sender nor reader touches the framing any more: the fd
	 * is closed under both locks' flags. */
	uiw_mpa_fini(&t->mpa);
	fn = t->closed_fn;
	t->closed_fn = NULL;
	if (fn)
		fn(t->closed_arg, err);
}

/*
 * The send buffer.  An FPDU keeps its own segment only if the kernel can
 * queue it whole, so the buffer must hold TCP_SNDBUF_FPDUS of them.
 * Linux sizes it when the connection is established (twice the initial
 * congestion window of segments, at least tcp_wmem[1]) and grows it
 * with the window up to tcp_wmem[2] (autotuning).  Setting SO_SNDBUF
 * ends that autotuning for good, and the kernel grants twice the value
 * set, capped at twice net.core.wmem_max.
 *
 * To another host, SO_SNDBUF is set only where it loses nothing: when
 * the buffer is too small for the FPDUs, or when the grant reaches
 * tcp_wmem[2] anyway (with wmem_max raised to 4 MiB, bulk streams then
 * get 8 MiB at once instead of growing to it).  On a stock system
 * (wmem_max 212992) the grant would be 416 KiB, below the 4 MiB that
 * autotuning reaches on long paths, and the kernel keeps its sizing.
 *
 * To this host (loopback) the round trip is a few microseconds and the
 * pipe is memory: a deep buffer only lets the queue grow beyond the
 * caches whenever the receiver falls behind: a smaller buffer moves bulk
 * data as fast on an idle machine and faster beside another busy
 * process (bench/profile.md, "The send buffer").  So the buffer holds
 * the FPDUs and at least TCP_SNDBUF_LOCAL.
 *
 * Where runs of FPDUs go as one message (alignment not kept, the
 * default to this host), a message the socket cannot take whole is cut
 * by the kernel, and its rest waits until the peer has read half the
 * queue, so the buffer must take a large message whole
 * (bench/profile.md compares the grants with a 512 KiB ping-pong).
 * Such connections ask for TCP_SNDBUF_RUNS (a 1 MiB grant), or, where
 * wmem_max does not allow that much, leave the kernel's autotuning
 * alone (it grows to tcp_wmem[2]).
 */
int uiw_tcp_sndbuf_want(int cur, int emss, bool local, bool runs,
			long wmem_max, long tcp_wmem_max)
{
	long fpdus = (long)TCP_SNDBUF_FPDUS * (emss > 0 ? emss : 0);
	long want, grant;

	if (local && runs) {
		want = fpdus > TCP_SNDBUF_RUNS ? fpdus : TCP_SNDBUF_RUNS;
		if (wmem_max > 0 && want > wmem_max)
			return 0;
	} else if (local)
		want = fpdus > TCP_SNDBUF_LOCAL ? fpdus : TCP_SNDBUF_LOCAL;
	else
		want = fpdus > TCP_SNDBUF_BULK ? fpdus : TCP_SNDBUF_BULK;
	if (wmem_max > 0 && want > wmem_max)
		want = wmem_max > fpdus ? wmem_max : fpdus;
	grant = wmem_max > 0 && want > wmem_max ? 2 * wmem_max : 2 * want;
	if (local)
		return (long)cur == grant ? 0 : (int)want;
	if ((long)cur < 2 * fpdus)        /* too small for whole FPDUs */
		return (int)want;
	if (grant > cur && tcp_wmem_max > 0 && grant >= tcp_wmem_max)
		return (int)want;
	return 0;
}

/* True when the peer is this host: a loopback address, or the peer's
 * address is our own (the kernel routes both over lo). */
bool uiw_tcp_peer_local(int fd)
{
	struct sockaddr_storage a, b;
	socklen_t al = sizeof(a), bl = sizeof(b);

	if (getsockname(fd, (struct sockaddr *)&a, &al) < 0 ||
	    getpeername(fd, (struct sockaddr *)&b, &bl) < 0 ||
	    a.ss_family != b.ss_family)
		return false;
	if (b.ss_family == AF_INET) {
		const struct sockaddr_in *x = (const void *)&a,
					 *y = (const void *)&b;

		return (ntohl(y->sin_addr.s_addr) >> 24) == 127 ||
		       x->sin_addr.s_addr == y->sin_addr.s_addr;
	}
	if (b.ss_family == AF_INET6) {
		const struct sockaddr_in6 *x = (const void *)&a,
					  *y = (const void *)&b;

		if (IN6_IS_ADDR_LOOPBACK(&y->sin6_addr) ||
		    (IN6_IS_ADDR_V4MAPPED(&y->sin6_addr) &&
		     y->sin6_addr.s6_addr[12] == 127))
			return true;
		return memcmp(&x->sin6_addr, &y->sin6_addr,
			      sizeof(x->sin6_addr)) == 0;
	}
	return false;
}

static long sysctl_wmem_max = -1, sysctl_tcp_wmem_max = -1;
static pthread_once_t sysctl_once = PTHREAD_ONCE_INIT;

/* The last number of a /proc/sys file, or -1. */
static long sysctl_last(const char *path)
{
	char buf[128], *p, *end;
	long v = -1, x;
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	for (p = buf; *p; p = end) {
		x = strtol(p, &end, 10);
		if (end == p)
			break;
		v = x;
	}
	return v;
}

static void sysctl_read(void)
{
	sysctl_wmem_max = sysctl_last("/proc/sys/net/core/wmem_max");
	sysctl_tcp_wmem_max = sysctl_last("/proc/sys/net/ipv4/tcp_wmem");
}

void uiw_tcp_prepare(void)
{
	pthread_once(&sysctl_once, sysctl_read);
}

static void tcp_size_sndbuf(struct uiw_tcp *t, int emss, bool local)
{
	socklen_t len = sizeof(int);
	int cur = 0, want;

	uiw_tcp_prepare();
	if (getsockopt(t->fd, SOL_SOCKET, SO_SNDBUF, &cur, &len) < 0)
		cur = 0;
	want = uiw_tcp_sndbuf_want(cur, emss, local, t->unaligned,
				   sysctl_wmem_max, sysctl_tcp_wmem_max);
	UIW_DBG(2, "tcp qp %u: send buffer %d (%s peer%s), wmem_max %ld, "
		"tcp_wmem max %ld: %s %d", t->qpn, cur,
		local ? "local" : "remote",
		t->unaligned ? ", runs of FPDUs" : "", sysctl_wmem_max,
		sysctl_tcp_wmem_max, want ? "SO_SNDBUF" : "autotuned, not",
		want);
	if (want &&
	    setsockopt(t->fd, SOL_SOCKET, SO_SNDBUF, &want, sizeof(want)) < 0)
		UIW_DBG(2, "tcp qp %u: SO_SNDBUF: %s", t->qpn, strerror(errno));
}

/*
 * The EMSS (RFC 5044 §4.5).  Right after the handshake TCP_MAXSEG can
 * be well below the segments the connection sends once its window has
 * opened: Linux bounds the MSS by half the largest window the peer has
 * shown so far (on loopback it reads 32768, later segments carry 65483
 * octets).  The path MTU less the IP and TCP headers and a timestamp
 * option is what TCP settles on; FPDUs that large halve the per-FPDU
 * work of a bulk transfer.  Early in the connection, while the window is
 * small, TCP may then cut an FPDU (RFC 5044 §5.1 allows it; the receiver
 * takes any cut).  With markers we keep to what TCP_MAXSEG says: a
 * decoder that finds markers only in FPDUs that fill their segment
 * alone (Wireshark does so) can then follow every FPDU from the start.
 */
static int tcp_emss(int fd, bool markers)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(int), sl = sizeof(ss);
	int emss = 0, mtu = 0, ovh;

	if (getsockopt(fd, IPPROTO_TCP, TCP_MAXSEG, &emss, &len) < 0 ||
	    emss <= 0)
		emss = TCP_DEFAULT_EMSS;
	if (markers || getsockname(fd, (struct sockaddr *)&ss, &sl) < 0)
		return emss;
	len = sizeof(mtu);
	if (ss.ss_family == AF_INET6) {
		if (getsockopt(fd, IPPROTO_IPV6, IPV6_MTU, &mtu, &len) < 0)
			return emss;
		ovh = 40 + 20 + 12;
	} else {
		if (getsockopt(fd, IPPROTO_IP, IP_MTU, &mtu, &len) < 0)
			return emss;
		ovh = 20 + 20 + 12;
	}
	return mtu - ovh > emss ? mtu - ovh : emss;
}

/* Octets of an FPDU that carries a ULPDU of MULPDU octets (the engine
 * never posts more than UIW_MPA_ULPDU_MAX), without markers:
 * ULPDU_Length, ULPDU, pad, CRC (RFC 5044 §4.1). */
static uint32_t tcp_full_fpdu(uint32_t mulpdu)
{
	uint32_t u = mulpdu < UIW_MPA_ULPDU_MAX ? mulpdu : UIW_MPA_ULPDU_MAX;

	return uiw_mpa_plain_len(u);
}

int uiw_tcp_start(struct uiw_rt *rt, int fd, struct uiw_qp *qp,
		  const struct uiw_tcp_params *p, uiw_tcp_closed_fn closed,
		  void *arg, struct uiw_tcp **out)
{
	struct uiw_mpa_params mp = {
		.crc = p->crc,
		.markers_tx = p->markers_tx,
		.markers_rx = p->markers_rx,
		.hold = p->hold_tx,
	};
	struct uiw_llp_params lp = {
		.ird = p->ird,
		.ord = p->ord,
		.rtr_send = p->rtr_send,
		.rtr_recv = p->rtr_recv,
		.setup_term = p->setup_term,
	};
	struct uiw_tcp *t;
	int one = 1, emss = 0, ret;
	bool local;

	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->rt = rt;
	t->qp = qp;
	t->fd = fd;
	t->qpn = uiw_qp_num(qp);
	t->closed_fn = closed;
	t->closed_arg = arg;
	pthread_mutex_init(&t->tx_lock, NULL);
	pthread_mutex_init(&t->rx_lock, NULL);
	uiw_rt_work_init(&t->work, tcp_work, t);
	uiw_rt_timer_init(&t->linger, tcp_linger_expired, t);
	uiw_rt_timer_init(&t->lease, tcp_lease_check, t);
	t->rx = RX_ENGINE;
	t->markers_tx = p->markers_tx;

	/* FPDUs are whole messages: do not hold them back (siw does the
	 * same). */
	if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) < 0)
		UIW_DBG(2, "tcp qp %u: TCP_NODELAY: %s", t->qpn,
			strerror(errno));
	/* RFC 5044 §4.5 / §8: MULPDU from the current EMSS. */
	emss = tcp_emss(fd, p->markers_tx);
	mp.mulpdu = uiw_mpa_mulpdu((uint32_t)emss, p->markers_tx);
	t->emss = (uint32_t)emss;
	t->fpdu_fills = !p->markers_tx &&
			tcp_full_fpdu(mp.mulpdu) == (uint32_t)emss;
	/* uiw_conn_param's align (cm.h): OFF gives alignment up, and so
	 * does the default to this host, where a full FPDU is shorter than
	 * a segment and alignment would cost a message per FPDU, each with
	 * the kernel's per-message work (bench/profile.md, the message per
	 * FPDU at 256 KiB-1 MiB).  With markers it is kept: decoders find
	 * them in FPDUs that start segments. */
	local = uiw_tcp_peer_local(fd);
	t->unaligned = p->align == UIW_TCP_ALIGN_NEVER ||
		       (p->align == UIW_TCP_ALIGN_AUTO && local &&
			!t->fpdu_fills && !p->markers_tx);
	tcp_size_sndbuf(t, emss, local);

	atomic_store(&t->rx_watching, true);
	t->watch = uiw_rt_watch_add(rt, fd, EPOLLIN | EPOLLRDHUP, tcp_event,
				    t);
	if (!t->watch) {
		ret = -errno;
		goto fail;
	}
	ret = uiw_mpa_attach(&t->mpa, qp, &mp, &lp, &tcp_ops, t);
	if (ret < 0) {
		uiw_mpa_fini(&t->mpa);
		uiw_rt_watch_del(t->watch);
		goto fail;
	}
	UIW_DBG(1, "tcp qp %u: full operation, emss %d mulpdu %u crc %d "
		"markers tx %d rx %d ird %u ord %u%s%s%s", t->qpn, emss,
		mp.mulpdu, mp.crc, mp.markers_tx, mp.markers_rx, lp.ird,
		lp.ord, mp.hold ? " (responder)" : "",
		lp.rtr_send || lp.rtr_recv ? " peer-to-peer" : "",
		t->fpdu_fills ? ", full FPDUs fill segments" : "");
	*out = t;
	/* Octets may already be waiting (the initiator's first FPDU); the
	 * level-triggered watch reports them on the next round. */
	return 0;
fail:
	uiw_mpa_fini(&t->mpa);
	pthread_mutex_destroy(&t->rx_lock);
	pthread_mutex_destroy(&t->tx_lock);
	free(t);
	return ret;
}

void uiw_tcp_abort(struct uiw_tcp *t)
{
	tcp_finish(t, true, UIW_E_MPA_CLOSED);
}

bool uiw_tcp_done(const struct uiw_tcp *t)
{
	return t->detached;
}

void uiw_tcp_free(struct uiw_tcp *t)
{
	if (!t)
		return;
	t->closed_fn = NULL;
	tcp_finish(t, true, UIW_E_MPA_CLOSED);
	uiw_rt_work_cancel(t->rt, &t->work);
	/* A sender that still holds the lock finds fd_closed and leaves. */
	pthread_mutex_lock(&t->tx_lock);
	pthread_mutex_unlock(&t->tx_lock);
	pthread_mutex_destroy(&t->tx_lock);
	pthread_mutex_destroy(&t->rx_lock);
	uiw_mpa_fini(&t->mpa);
	free(t);
}
