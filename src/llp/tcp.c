/*
 * MPA over TCP in Full Operation.
 *
 * Receive runs on the progress thread: on EPOLLIN it asks the engine
 * where the next octets go (uiw_qp_rx_iov), reads them straight there
 * with readv, and reports them (uiw_qp_rx_done), until the socket is
 * empty or a budget is spent.  Transmit runs in whichever thread gets
 * the tx lock first: an application thread that posted a work request
 * (ops->kick) sends at once without a thread hop, and the progress
 * thread takes over when the socket is full (EPOLLOUT) or after receive.
 * Each batch of FPDUs goes out in one sendmmsg, one FPDU per message, so
 * that TCP segments start at FPDU boundaries (see tx_plan).
 *
 * Closing (RFC 5044 §7.2, RFC 5040 §6): when the engine asks for an
 * orderly close we send what is queued (a Terminate, say), shut our half
 * down and wait for the peer's FIN, bounded by a timer; an abortive
 * close resets at once.  A peer's FIN goes to the engine as
 * uiw_qp_llp_fin; a reset or error detaches the QP with
 * UIW_E_MPA_CLOSED.
 */
#include "tcp.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "../rnic/rnic.h"
#include "../rt/log.h"
#include "../rt/rt.h"
#include "../wire/mpa.h"

#define TCP_IOV_MAX      1024    /* iovecs per batch (UIO_MAXIOV) */
#define TCP_MSG_MAX      64      /* FPDUs (messages) per sendmmsg */
#define TCP_RX_BUDGET    64      /* readv calls per wake-up */
#define TCP_TX_BUDGET    64      /* sendmmsg calls per turn */
#define TCP_LINGER_MS    5000    /* wait for the peer's FIN after ours */
#define TCP_DEFAULT_EMSS 536     /* RFC 879, when TCP_MAXSEG says nothing */
#define TCP_SNDBUF_FPDUS 4       /* send buffer: room for this many FPDUs */
#define TCP_SNDBUF_BULK (4 << 20) /* send buffer for bulk transfer */

enum { CLOSE_NONE = 0, CLOSE_ORDERLY, CLOSE_ABORT };
enum rx_mode {
	RX_ENGINE,   /* octets go to the engine */
	RX_DISCARD,  /* the engine stopped reading: drop them, wait for EOF */
	RX_EOF,      /* the peer's FIN arrived */
};
enum tx_result { TX_IDLE, TX_BLOCKED, TX_MORE, TX_BUSY, TX_ERROR, TX_CLOSED };

struct uiw_tcp {
	struct uiw_rt *rt;
	struct uiw_qp *qp;
	int fd;
	uint32_t qpn;
	uiw_tcp_closed_fn closed_fn;
	void *closed_arg;

	/* Transmit: one sender at a time (tx_lock); a sender that finds
	 * the lock taken leaves tx_pending set for the holder. */
	pthread_mutex_t tx_lock;
	atomic_bool tx_pending;
	/* Under tx_lock: */
	bool fd_closed;
	bool markers_tx;
	bool unaligned;              /* FPDU boundaries lost: plain sends */
	uint64_t tx_pos;             /* octets of Full Operation sent */
	uint64_t fpdu_end;           /* end of the FPDU in progress */
	struct iovec iov[TCP_IOV_MAX];
	struct iovec mv[TCP_IOV_MAX + TCP_MSG_MAX];
	struct mmsghdr mm[TCP_MSG_MAX];
	uint64_t mm_end[TCP_MSG_MAX];     /* stream end of its FPDU */
	uint64_t mm_stop[TCP_MSG_MAX];    /* stream end of the message */
	struct uiw_mpa_piece pieces[UIW_MPA_MAX_PIECES(0xffffu)];

	/* Requests from other threads, read by work on the progress thread. */
	struct uiw_rt_work work;
	atomic_int tx_error;         /* errno of a failed sendmsg */
	atomic_int close_req;        /* CLOSE_* */

	/* Progress thread only. */
	struct uiw_rt_watch *watch;
	struct uiw_rt_timer linger;
	enum rx_mode rx;
	bool want_out;
	bool wr_shut;                /* our FIN is out */
	bool detached;
};

static void tcp_finish(struct uiw_tcp *t, bool abortive, uiw_err_t err);
static void tcp_tx_push(struct uiw_tcp *t);

/* ---- Transmit -------------------------------------------------------- */

/*
 * FPDU alignment (RFC 5044 §5.1): "MPA transmitters SHOULD also use
 * whatever facilities the TCP stack presents to cause the TCP
 * transmitter to start TCP segments at FPDU boundaries."  Each batch
 * from the engine is cut at FPDU boundaries into the messages of one
 * sendmmsg; a message that ends an FPDU carries MSG_EOR, so Linux never
 * appends the next FPDU to its segment.  FPDUs are located with
 * uiw_mpa_layout, the layout the engine framed them with; with TCP_NODELAY
 * and MULPDU from the EMSS, each FPDU then travels in a segment of its
 * own unless TCP itself splits one (window limits, RFC 5044 §5.1).
 */

/* The octet off octets after iovec i, offset ioff; -1 past the batch. */
static int batch_byte(const struct iovec *iov, int n, int i, size_t ioff,
		      size_t off)
{
	off += ioff;
	for (; i < n; i++) {
		if (off < iov[i].iov_len)
			return ((const uint8_t *)iov[i].iov_base)[off];
		off -= iov[i].iov_len;
	}
	return -1;
}

/* Stream end of the FPDU that starts at pos (iovec i, offset ioff);
 * false when its ULPDU_Length is not in the batch. */
static bool fpdu_end_at(struct uiw_tcp *t, int n, uint64_t pos, int i,
			size_t ioff, uint64_t *end)
{
	size_t skip = 0;
	uint32_t flen;
	int hi, lo;

	/* RFC 5044 §4.3: a marker on a 512-octet boundary comes first. */
	if (t->markers_tx && pos % UIW_MPA_MARKER_INTERVAL == 0)
		skip = UIW_MPA_MARKER_LEN;
	hi = batch_byte(t->iov, n, i, ioff, skip);
	lo = batch_byte(t->iov, n, i, ioff, skip + 1);
	if (hi < 0 || lo < 0)
		return false;
	if (!uiw_mpa_layout(pos, (uint32_t)(hi << 8 | lo), t->markers_tx,
			    t->pieces, UIW_MPA_MAX_PIECES(0xffffu), &flen))
		return false;
	*end = pos + flen;
	return true;
}

/* Cuts the batch (n iovecs, total octets) into messages; returns their
 * count. */
static unsigned tx_plan(struct uiw_tcp *t, int n, size_t total)
{
	uint64_t cur_end = t->fpdu_end;
	size_t base = 0, ioff = 0;
	unsigned k = 0, nv = 0;
	int i = 0;

	while (!t->unaligned && base < total && k < TCP_MSG_MAX) {
		uint64_t pos = t->tx_pos + base, end;
		struct msghdr *h = &t->mm[k].msg_hdr;
		size_t len, left;

		if (cur_end > pos)
			end = cur_end;
		else if (!fpdu_end_at(t, n, pos, i, ioff, &end))
			break;
		len = end - pos < total - base ? (size_t)(end - pos) :
						 total - base;
		/* A batch cut short (by the iovec limit) ends inside an FPDU:
		 * send whole ones now, that one whole in the next batch. */
		if (len < end - pos && k > 0)
			break;
		memset(h, 0, sizeof(*h));
		h->msg_iov = &t->mv[nv];
		for (left = len; left > 0; ) {
			size_t take = t->iov[i].iov_len - ioff;

			if (take > left)
				take = left;
			t->mv[nv].iov_base =
				(uint8_t *)t->iov[i].iov_base + ioff;
			t->mv[nv].iov_len = take;
			nv++;
			h->msg_iovlen++;
			ioff += take;
			left -= take;
			if (ioff == t->iov[i].iov_len) {
				i++;
				ioff = 0;
			}
		}
		if (pos + len == end)
			h->msg_flags = MSG_EOR;
		t->mm_end[k] = end;
		t->mm_stop[k] = pos + len;
		cur_end = end;
		base += len;
		k++;
	}
	if (k == 0) {
		/* Not an FPDU boundary we can find (never seen with our
		 * engine): keep the octets flowing, give up alignment. */
		if (!t->unaligned)
			UIW_DBG(2, "tcp qp %u: FPDU alignment lost", t->qpn);
		t->unaligned = true;
		memset(&t->mm[0].msg_hdr, 0, sizeof(t->mm[0].msg_hdr));
		t->mm[0].msg_hdr.msg_iov = t->iov;
		t->mm[0].msg_hdr.msg_iovlen = (size_t)n;
		t->mm_end[0] = t->mm_stop[0] = t->tx_pos + total;
		k = 1;
	}
	return k;
}

/* Sends what the engine has, with the tx lock held. */
static enum tx_result tx_locked(struct uiw_tcp *t)
{
	int round;

	if (t->fd_closed)
		return TX_CLOSED;
	for (round = 0; round < TCP_TX_BUDGET; round++) {
		int j, r, n = uiw_qp_tx_iov(t->qp, t->iov, TCP_IOV_MAX);
		size_t total = 0, sent = 0, planned = 0;
		unsigned k;

		if (n <= 0)
			return TX_IDLE;
		for (j = 0; j < n; j++)
			total += t->iov[j].iov_len;
		k = tx_plan(t, n, total);
		/* One system call for the batch. */
		r = sendmmsg(t->fd, t->mm, k, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return TX_BLOCKED;
			atomic_store(&t->tx_error, errno);
			return TX_ERROR;
		}
		for (j = 0; j < r; j++)
			sent += t->mm[j].msg_len;
		planned = (size_t)(t->mm_stop[k - 1] - t->tx_pos);
		uiw_qp_tx_done(t->qp, sent);
		t->tx_pos += sent;
		for (j = 0; j < (int)k; j++) {
			if (t->mm_stop[j] >= t->tx_pos) {
				t->fpdu_end = t->mm_end[j];
				break;
			}
		}
		/* The kernel stops at a message it could not take whole:
		 * the socket is full. */
		if (sent < planned)
			return TX_BLOCKED;
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
	int r;

	if (t->rx != RX_EOF)
		ev |= EPOLLIN | EPOLLRDHUP;
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
	set_interest(t);
	UIW_DBG(1, "tcp qp %u: peer sent FIN", t->qpn);
	if (t->wr_shut) {
		/* Both halves closed in order: our close is complete. */
		tcp_finish(t, false, UIW_OK);
		return;
	}
	s = uiw_qp_state(t->qp);
	if (s == UIW_QPS_RTS || s == UIW_QPS_CLOSING)
		uiw_qp_llp_fin(t->qp);
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
	if (!t->linger.armed)
		uiw_rt_timer_start(t->rt, &t->linger, TCP_LINGER_MS);
}

static void tcp_rx(struct uiw_tcp *t)
{
	struct iovec iov[TCP_IOV_MAX];
	char scratch[4096];
	int i;

	for (i = 0; i < TCP_RX_BUDGET && t->rx != RX_EOF; i++) {
		ssize_t r;

		if (t->rx == RX_ENGINE) {
			size_t total = 0;
			int k, n = uiw_qp_rx_iov(t->qp, iov, TCP_IOV_MAX);

			for (k = 0; k < n; k++)
				total += iov[k].iov_len;
			if (n <= 0 || total == 0) {
				rx_stop(t);
				continue;
			}
			r = readv(t->fd, iov, n);
		} else {
			r = read(t->fd, scratch, sizeof(scratch));
		}
		if (r > 0) {
			if (t->rx == RX_ENGINE &&
			    uiw_qp_rx_done(t->qp, (size_t)r) < 0)
				rx_stop(t);
			continue;
		}
		if (r == 0) {
			rx_eof(t);
			return;
		}
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return;
		UIW_DBG(1, "tcp qp %u: receive: %s", t->qpn, strerror(errno));
		tcp_finish(t, true, UIW_E_MPA_CLOSED);
		return;
	}
}

static int sock_error(int fd)
{
	int e = 0;
	socklen_t len = sizeof(e);

	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &len) < 0)
		return errno;
	return e;
}

static void tcp_event(void *arg, uint32_t events)
{
	struct uiw_tcp *t = arg;

	if (events & EPOLLERR) {
		int e = sock_error(t->fd);

		if (e) {
			UIW_DBG(1, "tcp qp %u: %s", t->qpn, strerror(e));
			tcp_finish(t, true, UIW_E_MPA_CLOSED);
			return;
		}
	}
	if (t->rx != RX_EOF && (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP)))
		tcp_rx(t);
	if (t->detached)
		return;
	if ((events & EPOLLHUP) && t->rx == RX_EOF) {
		/* Both directions are shut: after our FIN, the orderly end;
		 * without it, the connection was reset. */
		tcp_finish(t, !t->wr_shut,
			   t->wr_shut ? UIW_OK : UIW_E_MPA_CLOSED);
		return;
	}
	/* Received octets may have queued transmit work (Read Responses,
	 * a Terminate, the first FPDU of a responder). */
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
	if (atomic_load(&t->close_req) == CLOSE_ABORT) {
		tcp_finish(t, true, UIW_OK);
		return;
	}
	tcp_tx_push(t);
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

static const struct uiw_llp_ops tcp_ops = {
	.kick = tcp_kick,
	.close = tcp_close,
};

/* ---- Life cycle ------------------------------------------------------ */

static void tcp_finish(struct uiw_tcp *t, bool abortive, uiw_err_t err)
{
	uiw_tcp_closed_fn fn;

	if (t->detached)
		return;
	t->detached = true;
	uiw_rt_timer_stop(t->rt, &t->linger);
	uiw_rt_watch_del(t->watch);
	t->watch = NULL;
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
	fn = t->closed_fn;
	t->closed_fn = NULL;
	if (fn)
		fn(t->closed_arg, err);
}

/*
 * An FPDU keeps its own segment only if the kernel can queue it whole:
 * with Linux's initial 16 KiB send buffer a 32 KiB FPDU is always cut.
 * Setting SO_SNDBUF turns off the kernel's send-buffer autotuning, so the
 * size set must also keep a bulk stream's pipe full: the larger of a few
 * FPDUs and TCP_SNDBUF_BULK (the kernel caps it at net.core.wmem_max).
 * The kernel only commits that memory while data is queued.  A larger
 * buffer is left alone.
 */
static void tcp_size_sndbuf(struct uiw_tcp *t, int emss)
{
	int want = TCP_SNDBUF_FPDUS * emss, cur = 0;

	if (want < TCP_SNDBUF_BULK)
		want = TCP_SNDBUF_BULK;
	socklen_t len = sizeof(cur);

	if (getsockopt(t->fd, SOL_SOCKET, SO_SNDBUF, &cur, &len) == 0 &&
	    cur >= 2 * want)     /* the kernel reports twice what was set */
		return;
	if (setsockopt(t->fd, SOL_SOCKET, SO_SNDBUF, &want, sizeof(want)) < 0)
		UIW_DBG(2, "tcp qp %u: SO_SNDBUF: %s", t->qpn, strerror(errno));
}

int uiw_tcp_start(struct uiw_rt *rt, int fd, struct uiw_qp *qp,
		  const struct uiw_tcp_params *p, uiw_tcp_closed_fn closed,
		  void *arg, struct uiw_tcp **out)
{
	struct uiw_llp_params lp = {
		.crc = p->crc,
		.markers_tx = p->markers_tx,
		.markers_rx = p->markers_rx,
		.hold_tx = p->hold_tx,
		.ird = p->ird,
		.ord = p->ord,
		.rtr_send = p->rtr_send,
		.rtr_recv = p->rtr_recv,
		.setup_term = p->setup_term,
	};
	struct uiw_tcp *t;
	int one = 1, emss = 0, ret;
	socklen_t len = sizeof(emss);

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
	uiw_rt_work_init(&t->work, tcp_work, t);
	uiw_rt_timer_init(&t->linger, tcp_linger_expired, t);
	t->rx = RX_ENGINE;
	t->markers_tx = p->markers_tx;

	/* FPDUs are whole messages: do not hold them back (siw does the
	 * same). */
	if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) < 0)
		UIW_DBG(2, "tcp qp %u: TCP_NODELAY: %s", t->qpn,
			strerror(errno));
	/* RFC 5044 §4.5 / §8: MULPDU from the current EMSS. */
	if (getsockopt(fd, IPPROTO_TCP, TCP_MAXSEG, &emss, &len) < 0 ||
	    emss <= 0)
		emss = TCP_DEFAULT_EMSS;
	lp.mulpdu = uiw_mpa_mulpdu((uint32_t)emss, p->markers_tx);
	tcp_size_sndbuf(t, emss);

	t->watch = uiw_rt_watch_add(rt, fd, EPOLLIN | EPOLLRDHUP, tcp_event,
				    t);
	if (!t->watch) {
		ret = -errno;
		goto fail;
	}
	ret = uiw_qp_llp_attach(qp, &lp, &tcp_ops, t);
	if (ret < 0) {
		uiw_rt_watch_del(t->watch);
		goto fail;
	}
	UIW_DBG(1, "tcp qp %u: full operation, emss %d mulpdu %u crc %d "
		"markers tx %d rx %d ird %u ord %u%s%s", t->qpn, emss,
		lp.mulpdu, lp.crc, lp.markers_tx, lp.markers_rx, lp.ird,
		lp.ord, lp.hold_tx ? " (responder)" : "",
		lp.rtr_send || lp.rtr_recv ? " peer-to-peer" : "");
	*out = t;
	/* Octets may already be waiting (the initiator's first FPDU); the
	 * level-triggered watch reports them on the next round. */
	return 0;
fail:
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
	free(t);
}
