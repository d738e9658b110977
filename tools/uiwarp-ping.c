/*
 * uiwarp-ping: an RDMA ping-pong client and server in the manner of
 * librdmacm's rping, speaking rping's protocol over uiwarp so that either
 * side can face a stock rping.
 *
 * One ping, exactly as rping runs it:
 *
 *   client  Send        source advertisement {to, stag, len}
 *   server  RDMA Read   the client's source buffer into its own buffer
 *   server  Send        "go ahead"
 *   client  Send        sink advertisement {to, stag, len}
 *   server  RDMA Write  its buffer (the string and its NUL) into the sink
 *   server  Send        "go ahead"
 *   client  compares sink and source (-V), prints the data (-v)
 *
 * An advertisement is rping's struct rping_rdma_info: a 64-bit buffer
 * address (the tagged offset), a 32-bit STag and a 32-bit length, all
 * big-endian, 16 octets.  The "go ahead" is a 16-octet Send whose
 * contents nobody reads (rping sends zeros).  Every wait is on the
 * completion queue's notification fd and the connection manager's fd.
 */
#include <ctype.h>
#include <endian.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <uiwarp/uiwarp.h>
#include <uiwarp/cm.h>

#include "tool_util.h"

#define PING_DEFAULT_PORT	"7174"		/* rping's port */
#define PING_MSG_FMT		"rdma-ping-%d: "
/* rping's minimum: room for the widest ping number and the format. */
#define PING_MIN_SIZE		(sizeof("2147483647") + sizeof(PING_MSG_FMT))
#define PING_DEFAULT_SIZE	64		/* rping's default */
#define PING_MAX_SIZE		(1u << 30)
#define PING_SQ_DEPTH		16		/* rping's queue sizes */
#define PING_RQ_DEPTH		2
#define PING_MAX_PENDING	8		/* queued connection requests */
#define PING_CLOSE_WAIT_MS	5000

/* rping's struct rping_rdma_info, as it travels (big-endian). */
struct ping_adv {
	uint64_t buf;
	uint32_t rkey;
	uint32_t size;
};
_Static_assert(sizeof(struct ping_adv) == 16, "advertisement is 16 octets");

enum {
	WRID_RECV = 1,
	WRID_SEND,
	WRID_READ,
	WRID_WRITE,
};

struct opts {
	int server;			/* -1 until -s or -c */
	const char *addr;
	const char *port;
	int family;
	long count;			/* 0: forever */
	uint32_t size;
	int verbose;
	int validate;
	int debug;
	int persistent;
	int fixed_ird_ord;		/* -q */
	int quiet;
	bool ird_set, ord_set;
	struct uiw_conn_param cp;
};

struct ping {
	struct opts o;
	const char *role;
	struct uiw_device *dev;
	struct uiw_cm_channel *ch;
	uint32_t max_size;
	struct uiw_cm_id *listen_id;
	struct uiw_cm_event pending[PING_MAX_PENDING];
	int npending;
};

struct conn {
	struct ping *p;
	struct uiw_cm_id *id;
	struct uiw_pd *pd;
	struct uiw_cq *cq;
	struct uiw_qp *qp;

	struct ping_adv recv_buf;	/* one receive, reposted at once */
	struct uiw_mr *recv_mr;
	struct ping_adv send_buf;	/* advertisements, go-aheads */
	struct uiw_mr *send_mr;
	char *rdma_buf;			/* server: Read sink; client: Write sink */
	uint32_t rdma_size;
	struct uiw_mr *rdma_mr;
	char *start_buf;		/* client: Read source */
	struct uiw_mr *start_mr;

	bool established;
	bool peer_gone;			/* DISCONNECTED, or our WRs were flushed */
	bool closing;			/* we disconnected: ignore completions */
	bool have_adv;
	struct ping_adv adv;		/* host order */
	unsigned long sends_posted, sends_done, reads_done, writes_done;

	uint8_t mpa_rev;
	uint8_t p2p, rtr;		/* RFC 6581 outcome */
	char peer[INET6_ADDRSTRLEN + 16];
};

static void say(struct ping *p, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void dbg(struct ping *p, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void err(struct ping *p, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void vout(FILE *f, struct ping *p, const char *fmt, va_list ap)
{
	fprintf(f, "%s: ", p->role);
	vfprintf(f, fmt, ap);
	fputc('\n', f);
}

/* Normal output (summaries), unless --quiet. */
static void say(struct ping *p, const char *fmt, ...)
{
	va_list ap;

	if (p->o.quiet)
		return;
	va_start(ap, fmt);
	vout(stdout, p, fmt, ap);
	va_end(ap);
}

/* Step by step trace (-d). */
static void dbg(struct ping *p, const char *fmt, ...)
{
	va_list ap;

	if (!p->o.debug)
		return;
	va_start(ap, fmt);
	vout(stdout, p, fmt, ap);
	va_end(ap);
}

static void err(struct ping *p, const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	va_start(ap, fmt);
	vout(stderr, p, fmt, ap);
	va_end(ap);
}

static const char *wrid_str(uint64_t wr_id)
{
	switch (wr_id) {
	case WRID_RECV:		return "Receive";
	case WRID_SEND:		return "Send";
	case WRID_READ:		return "RDMA Read";
	case WRID_WRITE:	return "RDMA Write";
	}
	return "unknown work request";
}

static const char *origin_str(uint8_t origin)
{
	switch (origin) {
	case UIW_TERM_LOCAL:	return "we sent a Terminate";
	case UIW_TERM_REMOTE:	return "the peer sent a Terminate";
	case UIW_TERM_LLP:	return "the connection failed";
	}
	return "no Terminate";
}

static const char *onoff(int v)
{
	return v ? "on" : "off";
}

static void addr_str(const struct sockaddr_storage *ss, char *buf, size_t len)
{
	char host[INET6_ADDRSTRLEN], serv[8];
	socklen_t sl = ss->ss_family == AF_INET6 ?
		sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);

	if (getnameinfo((const struct sockaddr *)ss, sl, host, sizeof(host),
			serv, sizeof(serv), NI_NUMERICHOST | NI_NUMERICSERV)) {
		snprintf(buf, len, "(unknown address)");
		return;
	}
	snprintf(buf, len, "%s port %s", host, serv);
}

/* Tells the QP's state and why it left RTS (the cause, unless the
 * completion already told it, and the engine's account of it). */
static void report_qp(struct conn *c, bool cause_told)
{
	struct uiw_qp_attr a;

	if (!c->qp || uiw_qp_query(c->qp, &a))
		return;
	if (!cause_told && a.term.origin != UIW_TERM_NONE)
		err(c->p, "cause: %s: %s", origin_str(a.term.origin),
		    uiw_term_cause_str(&a.term));
	err(c->p, "QP %u is %s%s%s", a.qp_num, uiw_qp_state_str(a.state),
	    a.term_msg[0] ? ": " : "", a.term_msg);
}

/* Whether the QP ended through a Terminate (not a plain close). */
static bool qp_terminated(struct conn *c)
{
	struct uiw_qp_attr a;

	if (!c->qp || uiw_qp_query(c->qp, &a))
		return false;
	return a.term.origin == UIW_TERM_LOCAL ||
	       a.term.origin == UIW_TERM_REMOTE;
}

static int conn_lost(struct conn *c, const char *what)
{
	err(c->p, "connection with %s ended while %s", c->peer, what);
	report_qp(c, false);
	return -1;
}

/*
 * Signals (tool_util.h): the first SIGINT or SIGTERM asks for an orderly
 * end.  The client finishes the ping under way; the server stops at the
 * next ping.  If the peer does not answer, the deadline of the shared
 * signal thread ends the program.
 */
static bool stopping(void)
{
	return uiw_tool_stop_signal() != 0;
}

/* The stop fd, for poll, until the request has been seen: it stays
 * readable, and polling it after that would spin. */
static int stop_fd(void)
{
	return stopping() ? -1 : uiw_tool_stop_fd();
}

/* ------------------------------------------------------------------ */
/* Connection manager events.                                         */

static void reject_request(struct ping *p, struct uiw_cm_id *id,
			   const char *why)
{
	dbg(p, "rejecting a connection request: %s", why);
	if (uiw_cm_reject(id, why, (uint16_t)strlen(why)))
		err(p, "reject: %s", uiw_last_error());
	uiw_cm_destroy_id(id);
}

static void print_private_data(struct ping *p, const struct uiw_cm_event *ev)
{
	char txt[UIW_MPA_PRIVATE_DATA_MAX + 1];
	const unsigned char *d = ev->private_data;
	uint16_t i, n = ev->private_data_len;

	if (!d || !n)
		return;
	if (n > UIW_MPA_PRIVATE_DATA_MAX)
		n = UIW_MPA_PRIVATE_DATA_MAX;
	for (i = 0; i < n; i++)
		txt[i] = isprint(d[i]) ? (char)d[i] : '.';
	txt[n] = '\0';
	err(p, "the peer's private data (%u octets): \"%s\"",
	    ev->private_data_len, txt);
}

/* Handles one event.  Returns -1 when it ends connection c in failure. */
static int cm_event(struct ping *p, struct conn *c, struct uiw_cm_event *ev)
{
	if (ev->type == UIW_CM_EVENT_CONNECT_REQUEST) {
		if (!p->listen_id || ev->listen_id != p->listen_id) {
			reject_request(p, ev->id, "unexpected request");
			return 0;
		}
		if (!p->o.persistent && c) {
			reject_request(p, ev->id, "uiwarp-ping: server busy");
			return 0;
		}
		if (p->npending == PING_MAX_PENDING) {
			reject_request(p, ev->id,
				       "uiwarp-ping: too many waiting clients");
			return 0;
		}
		/* Served once the current connection ends. */
		if (c) {
			struct sockaddr_storage ss;
			char who[INET6_ADDRSTRLEN + 16] = "a client";

			if (!uiw_cm_peer_addr(ev->id, &ss))
				addr_str(&ss, who, sizeof(who));
			say(p, "%s waits for its turn", who);
		}
		p->pending[p->npending] = *ev;
		p->pending[p->npending].private_data = NULL;
		p->pending[p->npending].private_data_len = 0;
		p->npending++;
		return 0;
	}
	if (!c || ev->id != c->id) {
		dbg(p, "ignoring %s of an earlier connection",
		    uiw_cm_event_str(ev->type));
		return 0;
	}
	dbg(p, "event %s", uiw_cm_event_str(ev->type));
	switch (ev->type) {
	case UIW_CM_EVENT_ESTABLISHED:
		c->established = true;
		c->mpa_rev = ev->mpa.rev;
		c->p2p = ev->p2p;
		c->rtr = ev->rtr;
		return 0;
	case UIW_CM_EVENT_REJECTED:
		err(p, "connection to %s rejected", c->peer);
		print_private_data(p, ev);
		return -1;
	case UIW_CM_EVENT_CONNECT_ERROR:
		err(p, "connection with %s failed: %s", c->peer,
		    ev->status ? strerror(-ev->status) : "error");
		return -1;
	case UIW_CM_EVENT_DISCONNECTED:
		c->peer_gone = true;
		return 0;
	default:
		return 0;
	}
}

/* Takes every pending event.  Returns the number taken, or -1. */
static int cm_drain(struct ping *p, struct conn *c)
{
	struct uiw_cm_event ev;
	int n = 0, rc;

	for (;;) {
		rc = uiw_cm_get_event(p->ch, &ev, 0);
		if (rc == -EAGAIN)
			return n;
		if (rc) {
			err(p, "reading connection events: %s",
			    uiw_last_error());
			return -1;
		}
		n++;
		if (cm_event(p, c, &ev))
			return -1;
	}
}

/* ------------------------------------------------------------------ */
/* Completions.                                                       */

/* A post refused: when the QP has left RTS the connection is ending (the
 * peer's FIN or Terminate got there first), and that is what to say. */
static int post_failed(struct conn *c, const char *what)
{
	struct uiw_qp_attr a;
	char msg[160];

	snprintf(msg, sizeof(msg), "%s", uiw_last_error());
	if (c->qp && !uiw_qp_query(c->qp, &a) && a.state != UIW_QPS_RTS) {
		char w[64];

		snprintf(w, sizeof(w), "posting %s", what);
		dbg(c->p, "posting %s: %s", what, msg);
		return conn_lost(c, w);
	}
	err(c->p, "posting %s: %s", what, msg);
	return -1;
}

static int post_recv(struct conn *c)
{
	struct uiw_sge sge = {
		.addr = (uintptr_t)&c->recv_buf,
		.length = sizeof(c->recv_buf),
		.lkey = c->recv_mr->lkey,
	};
	struct uiw_recv_wr wr = {
		.wr_id = WRID_RECV, .sg_list = &sge, .num_sge = 1,
	};

	if (uiw_post_recv(c->qp, &wr, NULL))
		return post_failed(c, "a Receive");
	return 0;
}

static void report_wc(struct conn *c, const struct uiw_wc *wc)
{
	err(c->p, "%s failed: %s", wrid_str(wc->wr_id),
	    uiw_wc_status_str(wc->status));
	if (wc->term.origin != UIW_TERM_NONE)
		err(c->p, "cause: %s: %s", origin_str(wc->term.origin),
		    uiw_term_cause_str(&wc->term));
	report_qp(c, wc->term.origin != UIW_TERM_NONE);
}

static int handle_wc(struct conn *c, const struct uiw_wc *wc)
{
	/* Once we have disconnected nothing more is exchanged: what still
	 * completes is a flush, or a message of the peer's that crossed
	 * our disconnect (its next advertisement, when a signal stopped
	 * the server just as it came).  Such a Receive is not reposted:
	 * the QP, in Closing, refuses the post (a uiwarp QP does unless
	 * flush_in_error is on), and that refusal is no loss of the
	 * connection to report; the wait for the peer's end goes on. */
	if (c->closing) {
		if (wc->status == UIW_WC_SUCCESS && wc->wr_id == WRID_RECV)
			dbg(c->p, "a message of the peer's crossed our disconnect; left unread");
		return 0;
	}
	if (wc->status != UIW_WC_SUCCESS) {
		if (wc->status == UIW_WC_WR_FLUSH_ERR &&
		    wc->term.origin != UIW_TERM_LOCAL &&
		    wc->term.origin != UIW_TERM_REMOTE) {
			/* The connection went away; whether that is an
			 * error depends on what we were waiting for. */
			dbg(c->p, "the connection has ended: %s flushed",
			    wrid_str(wc->wr_id));
			c->peer_gone = true;
			return 0;
		}
		report_wc(c, wc);
		return -1;
	}
	switch (wc->wr_id) {
	case WRID_RECV:
		if (wc->byte_len != sizeof(struct ping_adv)) {
			err(c->p, "received a message of %u octets, expected %zu (is the peer rping?)",
			    wc->byte_len, sizeof(struct ping_adv));
			return -1;
		}
		if (c->have_adv) {
			err(c->p, "received a message out of turn");
			return -1;
		}
		c->adv.buf = be64toh(c->recv_buf.buf);
		c->adv.rkey = be32toh(c->recv_buf.rkey);
		c->adv.size = be32toh(c->recv_buf.size);
		c->have_adv = true;
		return post_recv(c);
	case WRID_SEND:
		c->sends_done++;
		return 0;
	case WRID_READ:
		c->reads_done++;
		return 0;
	case WRID_WRITE:
		c->writes_done++;
		return 0;
	}
	err(c->p, "unexpected completion (wr_id %" PRIu64 ")", wc->wr_id);
	return -1;
}

/* Polls the CQ once.  Returns completions handled, or -1. */
static int cq_drain(struct conn *c)
{
	struct uiw_wc wc[8];
	int i, n;

	n = uiw_cq_poll(c->cq, 8, wc);
	if (n < 0) {
		err(c->p, "polling the completion queue: %s",
		    uiw_last_error());
		return -1;
	}
	for (i = 0; i < n; i++)
		if (handle_wc(c, &wc[i]))
			return -1;
	return n;
}

/*
 * Handles whatever is ready (completions, connection events, signals),
 * or sleeps until something is or timeout_ms passes.  Returns 0 after
 * progress, 1 on timeout, -1 when the connection failed.
 */
static int conn_progress(struct conn *c, int timeout_ms)
{
	struct ping *p = c->p;
	struct pollfd pfd[3];
	int n;

	n = cq_drain(c);
	if (n)
		return n < 0 ? -1 : 0;
	n = cm_drain(p, c);
	if (n)
		return n < 0 ? -1 : 0;
	if (uiw_cq_req_notify(c->cq, 0)) {
		err(p, "arming the completion queue: %s", uiw_last_error());
		return -1;
	}
	/* A completion that came before the arming raised no event. */
	n = cq_drain(c);
	if (n)
		return n < 0 ? -1 : 0;

	pfd[0] = (struct pollfd){ .fd = uiw_cq_fd(c->cq), .events = POLLIN };
	pfd[1] = (struct pollfd){ .fd = uiw_cm_channel_fd(p->ch),
				  .events = POLLIN };
	pfd[2] = (struct pollfd){ .fd = stop_fd(), .events = POLLIN };
	n = poll(pfd, 3, timeout_ms);
	if (n < 0 && errno != EINTR) {
		err(p, "poll: %s", strerror(errno));
		return -1;
	}
	if (n == 0)
		return 1;
	if (n > 0 && (pfd[0].revents & POLLIN))
		uiw_cq_ack_events(c->cq);
	return 0;
}

static int wait_established(struct conn *c)
{
	while (!c->established) {
		if (c->peer_gone)
			return conn_lost(c, "connecting");
		if (stopping()) {
			err(c->p, "interrupted while connecting");
			return -1;
		}
		if (conn_progress(c, -1) < 0)
			return -1;
	}
	return 0;
}

/* Waits for the peer's next message.  With end_ok, an orderly end of
 * the connection (or a signal) here is no error: returns 1. */
static int wait_adv(struct conn *c, const char *what, bool end_ok)
{
	while (!c->have_adv) {
		if (c->peer_gone) {
			if (end_ok && !qp_terminated(c))
				return 1;
			return conn_lost(c, what);
		}
		if (end_ok && stopping())
			return 1;
		if (conn_progress(c, -1) < 0)
			return -1;
	}
	c->have_adv = false;
	return 0;
}

static int wait_count(struct conn *c, unsigned long *done,
		      unsigned long want, const char *what)
{
	while (*done < want) {
		if (c->peer_gone)
			return conn_lost(c, what);
		if (conn_progress(c, -1) < 0)
			return -1;
	}
	return 0;
}

static int post_send(struct conn *c, uint64_t wr_id, enum uiw_wr_opcode op,
		     void *addr, uint32_t len, uint32_t lkey,
		     uint64_t remote_addr, uint32_t rkey)
{
	struct uiw_sge sge = {
		.addr = (uintptr_t)addr, .length = len, .lkey = lkey,
	};
	struct uiw_send_wr wr = {
		.wr_id = wr_id,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = op,
		.send_flags = UIW_SEND_SIGNALED,
	};

	wr.wr.rdma.remote_addr = remote_addr;
	wr.wr.rdma.rkey = rkey;
	if (uiw_post_send(c->qp, &wr, NULL))
		return post_failed(c, wrid_str(wr_id));
	if (wr_id == WRID_SEND)
		c->sends_posted++;
	return 0;
}

/* Sends the 16-octet send_buf once the previous Send is done with it. */
static int send_msg(struct conn *c)
{
	if (wait_count(c, &c->sends_done, c->sends_posted,
		       "waiting for a Send to complete"))
		return -1;
	return post_send(c, WRID_SEND, UIW_WR_SEND, &c->send_buf,
			 sizeof(c->send_buf), c->send_mr->lkey, 0, 0);
}

/* ------------------------------------------------------------------ */
/* Resources of one connection.                                       */

static void conn_free(struct conn *c)
{
	if (c->id && uiw_cm_destroy_id(c->id))
		dbg(c->p, "destroying the connection id: %s", uiw_last_error());
	if (c->qp && uiw_qp_destroy(c->qp))
		err(c->p, "destroying the QP: %s", uiw_last_error());
	if (c->start_mr)
		uiw_dereg_mr(c->start_mr);
	if (c->rdma_mr)
		uiw_dereg_mr(c->rdma_mr);
	if (c->send_mr)
		uiw_dereg_mr(c->send_mr);
	if (c->recv_mr)
		uiw_dereg_mr(c->recv_mr);
	if (c->cq && uiw_cq_destroy(c->cq))
		err(c->p, "destroying the CQ: %s", uiw_last_error());
	if (c->pd && uiw_pd_free(c->pd))
		err(c->p, "freeing the PD: %s", uiw_last_error());
	free(c->start_buf);
	free(c->rdma_buf);
	free(c);
}

static struct uiw_mr *reg(struct conn *c, void *addr, size_t len,
			  unsigned access, const char *what)
{
	struct uiw_mr *mr = uiw_reg_mr(c->pd, addr, len, access);

	if (!mr)
		err(c->p, "registering the %s: %s", what, uiw_last_error());
	return mr;
}

/* (Re)allocates and registers the RDMA buffer for size octets.  Each
 * buffer gets only the rights its role needs: the server's is the sink
 * of its own RDMA Read and the source of its RDMA Write (local write);
 * the client's is the sink of the server's RDMA Write. */
static int rdma_buf_resize(struct conn *c, uint32_t size, bool client)
{
	unsigned access = UIW_ACCESS_LOCAL_WRITE;

	if (client)
		access |= UIW_ACCESS_REMOTE_WRITE;
	if (c->rdma_mr) {
		uiw_dereg_mr(c->rdma_mr);
		c->rdma_mr = NULL;
	}
	free(c->rdma_buf);
	c->rdma_size = 0;
	c->rdma_buf = calloc(1, size);
	if (!c->rdma_buf) {
		err(c->p, "no memory for a %u-octet buffer", size);
		return -1;
	}
	c->rdma_mr = reg(c, c->rdma_buf, size, access,
			 client ? "sink buffer" : "RDMA buffer");
	if (!c->rdma_mr)
		return -1;
	c->rdma_size = size;
	return 0;
}

static struct conn *conn_new(struct ping *p, bool client)
{
	struct conn *c = calloc(1, sizeof(*c));
	struct uiw_qp_init_attr qa = { 0 };

	if (!c) {
		err(p, "out of memory");
		return NULL;
	}
	c->p = p;
	snprintf(c->peer, sizeof(c->peer), "the peer");
	c->pd = uiw_pd_alloc(p->dev);
	if (!c->pd) {
		err(p, "allocating a PD: %s", uiw_last_error());
		goto fail;
	}
	c->cq = uiw_cq_create(p->dev, PING_SQ_DEPTH * 2);
	if (!c->cq) {
		err(p, "creating a CQ: %s", uiw_last_error());
		goto fail;
	}
	qa.send_cq = c->cq;
	qa.recv_cq = c->cq;
	qa.cap.max_send_wr = PING_SQ_DEPTH;
	qa.cap.max_recv_wr = PING_RQ_DEPTH;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	qa.qp_context = c;
	c->qp = uiw_qp_create(c->pd, &qa);
	if (!c->qp) {
		err(p, "creating a QP: %s", uiw_last_error());
		goto fail;
	}
	c->recv_mr = reg(c, &c->recv_buf, sizeof(c->recv_buf),
			 UIW_ACCESS_LOCAL_WRITE, "receive buffer");
	c->send_mr = c->recv_mr ? reg(c, &c->send_buf, sizeof(c->send_buf),
				      0, "send buffer") : NULL;
	if (!c->send_mr || rdma_buf_resize(c, p->o.size, client))
		goto fail;
	if (client) {
		c->start_buf = calloc(1, p->o.size);
		if (!c->start_buf) {
			err(p, "no memory for a %u-octet buffer", p->o.size);
			goto fail;
		}
		/* The source of the server's RDMA Read. */
		c->start_mr = reg(c, c->start_buf, p->o.size,
				  UIW_ACCESS_REMOTE_READ, "source buffer");
		if (!c->start_mr)
			goto fail;
	}
	/* Posted before connecting, as rping does: the peer may Send as
	 * soon as the connection is up. */
	if (post_recv(c))
		goto fail;
	return c;
fail:
	conn_free(c);
	return NULL;
}

/* "write", "read,send", "none": RTR types. */
static const char *rtr_str(uint8_t m, char *buf, size_t cap)
{
	static const char *const names[] = { "send", "write", "read" };
	size_t n = 0;
	int i;

	buf[0] = 0;
	for (i = 0; i < 3; i++)
		if (m & (1u << i))
			n += (size_t)snprintf(buf + n, n < cap ? cap - n : 0,
					      "%s%s", n ? "," : "", names[i]);
	return buf[0] ? buf : "none";
}

static void print_connected(struct conn *c)
{
	struct uiw_qp_attr a;
	char r[32];

	if (uiw_qp_query(c->qp, &a)) {
		err(c->p, "querying the QP: %s", uiw_last_error());
		return;
	}
	if (a.llp != UIW_LLP_TCP) {
		/* RFC 5043: no MPA; SCTP's own CRC32c covers each packet. */
		dbg(c->p, "connected with %s over SCTP (%s): QP %u, IRD %u, ORD %u, MULPDU %u",
		    c->peer, uiw_tool_llp_name((enum uiw_llp_kind)a.llp),
		    a.qp_num, a.ird, a.ord, a.mulpdu);
		return;
	}
	dbg(c->p, "connected with %s: QP %u, MPA revision %u, CRC %s, markers sent %s, received %s, IRD %u, ORD %u, MULPDU %u, peer-to-peer %s, RTR %s",
	    c->peer, a.qp_num, c->mpa_rev, onoff(a.crc), onoff(a.markers_tx),
	    onoff(a.markers_rx), a.ird, a.ord, a.mulpdu, onoff(c->p2p),
	    rtr_str(c->rtr, r, sizeof(r)));
}

/* Ends the connection in order: our FIN goes out, then the id goes.
 * Returns -1 when the wait for the peer's end failed (said on stderr);
 * a peer whose end does not come within PING_CLOSE_WAIT_MS is left
 * behind without error. */
static int conn_close(struct conn *c)
{
	double deadline = uiw_tool_now() + PING_CLOSE_WAIT_MS / 1000.0;
	int left, rc;

	c->closing = true;
	if (c->peer_gone || !c->established)
		return 0;
	if (uiw_cm_disconnect(c->id)) {
		dbg(c->p, "disconnect: %s", uiw_last_error());
		return 0;
	}
	while (!c->peer_gone) {
		left = (int)((deadline - uiw_tool_now()) * 1000);
		if (left <= 0)
			break;
		rc = conn_progress(c, left);
		if (rc < 0)
			return -1;
		if (rc > 0)
			break;
	}
	return 0;
}

/* Closes and frees c after a run that ended with rc: an end that went
 * wrong is no success, even after a run that went well or was stopped
 * by a signal in order. */
static int conn_end(struct conn *c, int rc)
{
	if (conn_close(c))
		rc = -1;
	conn_free(c);
	return rc;
}

static void print_rate(struct ping *p, const char *who, long pings,
		       unsigned long long bytes, double secs, const char *tail)
{
	if (secs > 0)
		say(p, "%s%ld pings, %llu bytes moved by RDMA Read and RDMA Write in %.3f s: %.2f MB/s%s",
		    who, pings, bytes, secs, bytes / secs / 1e6, tail);
	else
		say(p, "%s%ld pings, %llu bytes moved by RDMA Read and RDMA Write%s",
		    who, pings, bytes, tail);
}

/* ------------------------------------------------------------------ */
/* Client.                                                            */

/* rping's data: "rdma-ping-N: " and then letters 'A'..'z' in a run that
 * starts one letter later on every ping; the last octet is NUL. */
static void fill_pattern(char *buf, uint32_t size, int ping, int start)
{
	unsigned char ch = (unsigned char)start;
	uint32_t i;
	int cc;

	cc = snprintf(buf, size, PING_MSG_FMT, ping);
	for (i = (uint32_t)cc; i < size; i++) {
		buf[i] = (char)ch;
		if (++ch > 122)
			ch = 65;
	}
	buf[size - 1] = '\0';
}

static void format_adv(struct conn *c, void *buf, struct uiw_mr *mr,
		       uint32_t size)
{
	c->send_buf.buf = htobe64((uintptr_t)buf);
	c->send_buf.rkey = htobe32(mr->rkey);
	c->send_buf.size = htobe32(size);
}

static int client_pings(struct conn *c, long *done)
{
	struct ping *p = c->p;
	uint32_t size = p->o.size, i;
	int ping = 0, start = 65;
	long n;

	for (n = 0; !p->o.count || n < p->o.count; n++) {
		if (stopping())
			break;
		fill_pattern(c->start_buf, size, ping, start);
		if (++start > 122)
			start = 65;

		/* The previous Send must be done with send_buf. */
		if (wait_count(c, &c->sends_done, c->sends_posted,
			       "waiting for a Send to complete"))
			return -1;
		format_adv(c, c->start_buf, c->start_mr, size);
		dbg(p, "ping %d: Send source advertisement: to 0x%" PRIxPTR ", stag 0x%08x, %u bytes",
		    ping, (uintptr_t)c->start_buf, c->start_mr->rkey, size);
		if (send_msg(c))
			return -1;
		if (wait_adv(c, "waiting for the server to RDMA Read the source", false))
			return -1;
		dbg(p, "ping %d: go-ahead received: the server has read the source by RDMA Read",
		    ping);

		if (wait_count(c, &c->sends_done, c->sends_posted,
			       "waiting for a Send to complete"))
			return -1;
		format_adv(c, c->rdma_buf, c->rdma_mr, size);
		dbg(p, "ping %d: Send sink advertisement: to 0x%" PRIxPTR ", stag 0x%08x, %u bytes",
		    ping, (uintptr_t)c->rdma_buf, c->rdma_mr->rkey, size);
		if (send_msg(c))
			return -1;
		if (wait_adv(c, "waiting for the server to RDMA Write the sink", false))
			return -1;
		dbg(p, "ping %d: go-ahead received: the server has written the sink by RDMA Write",
		    ping);

		if (p->o.validate) {
			if (memcmp(c->start_buf, c->rdma_buf, size)) {
				for (i = 0; i < size; i++)
					if (c->start_buf[i] != c->rdma_buf[i])
						break;
				err(p, "ping %d: data mismatch at byte %u of %u: sent 0x%02x, got back 0x%02x",
				    ping, i, size,
				    (unsigned char)c->start_buf[i],
				    (unsigned char)c->rdma_buf[i]);
				return -1;
			}
			dbg(p, "ping %d: verified %u bytes", ping, size);
		}
		if (p->o.verbose)
			printf("ping data: %.*s\n", (int)size, c->rdma_buf);
		(*done)++;
		ping = ping == INT_MAX ? 0 : ping + 1;
	}
	return 0;
}

static int run_client(struct ping *p)
{
	struct sockaddr_storage ss;
	socklen_t len;
	struct conn *c;
	double t0, t1;
	long done = 0;
	int rc;

	if (uiw_tool_resolve(p->o.addr, p->o.port, p->o.family, false, &ss,
			     &len))
		return -1;
	c = conn_new(p, true);
	if (!c)
		return -1;
	addr_str(&ss, c->peer, sizeof(c->peer));
	dbg(p, "connecting to %s", c->peer);
	if (uiw_cm_connect(p->ch, c->qp, (struct sockaddr *)&ss, len,
			   &p->o.cp, &c->id)) {
		err(p, "connecting to %s: %s", c->peer, uiw_last_error());
		conn_free(c);
		return -1;
	}
	rc = wait_established(c);
	if (!rc) {
		print_connected(c);
		t0 = uiw_tool_now();
		rc = client_pings(c, &done);
		t1 = uiw_tool_now();
		if (!rc)
			print_rate(p, "", done,
				   2ull * (unsigned long long)done * p->o.size,
				   t1 - t0, p->o.validate ?
				   ", data verified" : "");
	}
	return conn_end(c, rc);
}

/* ------------------------------------------------------------------ */
/* Server.                                                            */

static int server_pings(struct conn *c, long *pings,
			unsigned long long *bytes)
{
	struct ping *p = c->p;
	struct ping_adv src, sink;
	uint32_t len, wlen;
	int rc;

	for (;;) {
		rc = wait_adv(c, "waiting for the client's source advertisement",
			      true);
		if (rc)
			return rc < 0 ? -1 : 0;
		src = c->adv;
		dbg(p, "ping %ld: received source advertisement: to 0x%" PRIx64 ", stag 0x%08x, %u bytes",
		    *pings, src.buf, src.rkey, src.size);
		/* Nothing the peer sends is trusted. */
		if (src.size == 0 || src.size > p->max_size) {
			err(p, "the client advertised a %u-byte buffer; this server takes 1 to %u",
			    src.size, p->max_size);
			return -1;
		}
		len = src.size;
		if (len > c->rdma_size && rdma_buf_resize(c, len, false))
			return -1;

		if (post_send(c, WRID_READ, UIW_WR_RDMA_READ, c->rdma_buf, len,
			      c->rdma_mr->lkey, src.buf, src.rkey))
			return -1;
		if (wait_count(c, &c->reads_done, c->reads_done + 1,
			       "waiting for the RDMA Read to complete"))
			return -1;
		dbg(p, "ping %ld: RDMA Read of %u bytes complete", *pings, len);
		if (p->o.verbose)
			printf("server ping data: %.*s\n",
			       (int)strnlen(c->rdma_buf, len), c->rdma_buf);

		dbg(p, "ping %ld: Send go-ahead", *pings);
		if (send_msg(c))
			return -1;

		if (wait_adv(c, "waiting for the client's sink advertisement",
			     false))
			return -1;
		sink = c->adv;
		dbg(p, "ping %ld: received sink advertisement: to 0x%" PRIx64 ", stag 0x%08x, %u bytes",
		    *pings, sink.buf, sink.rkey, sink.size);

		/* rping writes back the string and its NUL. */
		wlen = (uint32_t)strnlen(c->rdma_buf, len);
		if (wlen < len)
			wlen++;
		if (wlen > sink.size)
			wlen = sink.size;
		if (post_send(c, WRID_WRITE, UIW_WR_RDMA_WRITE, c->rdma_buf,
			      wlen, c->rdma_mr->lkey, sink.buf, sink.rkey))
			return -1;
		if (wait_count(c, &c->writes_done, c->writes_done + 1,
			       "waiting for the RDMA Write to complete"))
			return -1;
		dbg(p, "ping %ld: RDMA Write of %u bytes complete", *pings,
		    wlen);

		dbg(p, "ping %ld: Send go-ahead", *pings);
		if (send_msg(c))
			return -1;
		(*pings)++;
		*bytes += (unsigned long long)len + wlen;
	}
}

static int serve(struct ping *p, struct uiw_cm_event *req)
{
	struct uiw_conn_param cp = p->o.cp;
	struct sockaddr_storage ss;
	unsigned long long bytes = 0;
	struct conn *c;
	long pings = 0;
	double t0, t1;
	char who[sizeof(c->peer) + 4];
	int rc;

	c = conn_new(p, false);
	if (!c) {
		reject_request(p, req->id, "uiwarp-ping: server out of resources");
		return -1;
	}
	c->id = req->id;
	if (!uiw_cm_peer_addr(c->id, &ss))
		addr_str(&ss, c->peer, sizeof(c->peer));
	{
		char r[32];

		if (req->llp != UIW_LLP_TCP)
			dbg(p, "connection request from %s over SCTP: %s Initiate, IRD %u, ORD %u",
			    c->peer, req->peer_ird ? "enhanced" : "plain",
			    req->peer_ird, req->peer_ord);
		else
		dbg(p, "connection request from %s: MPA revision %u, CRC %s, markers %s, IRD %u, ORD %u, peer-to-peer %s, RTR %s",
		    c->peer, req->mpa.rev, onoff(req->mpa.peer_crc),
		    onoff(req->mpa.peer_markers), req->peer_ird, req->peer_ord,
		    onoff(req->peer_p2p), rtr_str(req->peer_rtr, r,
						  sizeof(r)));
	}

	/* rping -q accepts with responder resources and initiator depth
	 * of 1; otherwise the CM's defaults apply. */
	if (p->o.fixed_ird_ord) {
		if (!p->o.ird_set)
			cp.ird = 1;
		if (!p->o.ord_set)
			cp.ord = 1;
	}
	if (uiw_cm_accept(c->id, c->qp, &cp)) {
		err(p, "accepting %s: %s", c->peer, uiw_last_error());
		conn_free(c);
		return -1;
	}
	rc = wait_established(c);
	if (!rc) {
		print_connected(c);
		t0 = uiw_tool_now();
		rc = server_pings(c, &pings, &bytes);
		t1 = uiw_tool_now();
		if (!rc) {
			snprintf(who, sizeof(who), "%s: ", c->peer);
			print_rate(p, who, pings, bytes, t1 - t0, "");
		}
	}
	return conn_end(c, rc);
}

/* Waits for the next connection request.  Returns 0, or 1 on a signal,
 * or -1. */
static int next_request(struct ping *p, struct uiw_cm_event *ev)
{
	struct pollfd pfd[2];

	for (;;) {
		if (stopping())
			return 1;
		if (p->npending) {
			*ev = p->pending[0];
			memmove(&p->pending[0], &p->pending[1],
				--p->npending * sizeof(p->pending[0]));
			return 0;
		}
		if (cm_drain(p, NULL) < 0)
			return -1;
		if (p->npending)
			continue;
		pfd[0] = (struct pollfd){ .fd = uiw_cm_channel_fd(p->ch),
					  .events = POLLIN };
		pfd[1] = (struct pollfd){ .fd = stop_fd(), .events = POLLIN };
		if (poll(pfd, 2, -1) < 0 && errno != EINTR) {
			err(p, "poll: %s", strerror(errno));
			return -1;
		}
	}
}

static int run_server(struct ping *p)
{
	struct sockaddr_storage ss;
	struct uiw_listen_param lp = { 0 };
	struct uiw_cm_event req;
	const char *host = p->o.addr;
	char where[INET6_ADDRSTRLEN + 16];
	socklen_t len;
	int rc, failures = 0, served = 0;

	if (!host)
		host = p->o.family == AF_INET6 ? "::" : "0.0.0.0";
	if (uiw_tool_resolve(host, p->o.port, p->o.family, true, &ss, &len))
		return -1;
	lp.llp = p->o.cp.llp;
	lp.backlog = 3;
	lp.udp_port = p->o.cp.udp_port;
	if (uiw_cm_listen_ex(p->ch, (struct sockaddr *)&ss, len, &lp,
			     &p->listen_id)) {
		err(p, "listening on %s port %s: %s", host, p->o.port,
		    uiw_last_error());
		return -1;
	}
	/* --mpa-rev=1: a responder of RFC 5044 alone. */
	if (p->o.cp.mpa_rev &&
	    uiw_cm_set_max_mpa_rev(p->listen_id, p->o.cp.mpa_rev)) {
		err(p, "%s", uiw_last_error());
		return -1;
	}
	if (!uiw_cm_local_addr(p->listen_id, &ss))
		addr_str(&ss, where, sizeof(where));
	else
		snprintf(where, sizeof(where), "%s port %s", host, p->o.port);
	say(p, "listening on %s", where);
	fflush(stdout);

	for (;;) {
		rc = next_request(p, &req);
		if (rc)
			break;
		if (serve(p, &req))
			failures++;
		served++;
		if (!p->o.persistent)
			break;
	}
	while (p->npending)
		reject_request(p, p->pending[--p->npending].id,
			       "uiwarp-ping: server is stopping");
	uiw_cm_destroy_id(p->listen_id);
	p->listen_id = NULL;
	if (rc < 0)
		return -1;
	if (!served)
		dbg(p, "stopped before any client came");
	return failures ? -1 : 0;
}

/* ------------------------------------------------------------------ */
/* Options.                                                           */

static void usage(FILE *f)
{
	fprintf(f,
"usage: uiwarp-ping -s [-vVdPq] [-S size] [-a addr] [-p port] [MPA options]\n"
"       uiwarp-ping -c [-vVd] [-S size] [-C count] -a addr [-p port] [MPA options]\n"
"  -s            server\n"
"  -c            client\n"
"  -a addr       address to listen on (server; default 0.0.0.0, or :: with -6)\n"
"                or to connect to (client)\n"
"  -p port       port (default " PING_DEFAULT_PORT "; server: 0 picks a free one)\n"
"  -6            IPv6 only\n"
"  -C count      number of pings (client; default 0: until interrupted)\n"
"  -S size       ping data size, %zu to %u bytes (default %d)\n"
"  -v            print the ping data\n"
"  -V            verify the ping data\n"
"  -d            trace every step\n"
"  -P            persistent server: serve one client after another\n"
"  -q            server: accept with IRD and ORD of 1, as rping -q does\n"
"  --llp=NAME          lower layer: tcp (default, MPA over TCP), sctp (DDP over\n"
"                      SCTP, RFC 5043: the kernel's SCTP where it has one,\n"
"                      else usrsctp over UDP), sctp-udp, sctp-kernel; with\n"
"                      SCTP, -p is the SCTP port\n"
"  --udp-port=N        SCTP over UDP: the UDP port (RFC 6951) the server\n"
"                      receives on and the client sends to (default 9899)\n"
"MPA options:\n"
"  --crc=on|off        ask for MPA CRC (default on)\n"
"  --markers=on|off    ask the peer to send MPA markers (default off)\n"
"  -I, --ird=N         inbound RDMA Read depth (client default 1)\n"
"  -O, --ord=N         outbound RDMA Read depth (client default 1)\n"
"  --mpa-rev=1|2       MPA revision (default 2, RFC 6581; a server with 1\n"
"                      closes on revision 2 Requests)\n"
"  --p2p               client: peer-to-peer mode, an RTR opens the connection\n"
"  --rtr=TYPES         RTR types offered (client) or accepted (server): a\n"
"                      comma list of send, write, read (default all)\n"
"  --start-delay=MS    client: wait MS milliseconds after the MPA Reply\n"
"                      before the first FPDU (against Linux siw 6.1, which\n"
"                      may not read an FPDU that follows its Reply at once)\n"
"  --quiet             no summary lines\n"
"  -h, --help          this help\n",
		PING_MIN_SIZE, PING_MAX_SIZE, PING_DEFAULT_SIZE);
}

enum { OPT_CRC = 256, OPT_MARKERS, OPT_MPA_REV, OPT_QUIET, OPT_P2P, OPT_RTR,
       OPT_START_DELAY, OPT_LLP, OPT_UDP_PORT };

/* "write,read" -> UIW_RTR_* mask; -1 when invalid. */
static int parse_rtr(const char *s)
{
	static const struct { const char *name; int bit; } t[] = {
		{ "send", UIW_RTR_SEND }, { "write", UIW_RTR_WRITE },
		{ "read", UIW_RTR_READ },
	};
	int m = 0;

	while (*s) {
		size_t len = strcspn(s, ","), i;

		for (i = 0; i < 3; i++)
			if (len == strlen(t[i].name) &&
			    !strncmp(s, t[i].name, len))
				break;
		if (i == 3)
			return -1;
		m |= t[i].bit;
		s += len;
		if (*s == ',')
			s++;
	}
	return m ? m : -1;
}

static int parse_args(struct ping *p, int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "crc", required_argument, NULL, OPT_CRC },
		{ "markers", required_argument, NULL, OPT_MARKERS },
		{ "ird", required_argument, NULL, 'I' },
		{ "ord", required_argument, NULL, 'O' },
		{ "mpa-rev", required_argument, NULL, OPT_MPA_REV },
		{ "p2p", no_argument, NULL, OPT_P2P },
		{ "rtr", required_argument, NULL, OPT_RTR },
		{ "start-delay", required_argument, NULL, OPT_START_DELAY },
		{ "quiet", no_argument, NULL, OPT_QUIET },
		{ "llp", required_argument, NULL, OPT_LLP },
		{ "udp-port", required_argument, NULL, OPT_UDP_PORT },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct opts *o = &p->o;
	long v;
	int op;

	o->server = -1;
	o->port = PING_DEFAULT_PORT;
	o->family = AF_UNSPEC;
	o->size = PING_DEFAULT_SIZE;
	while ((op = getopt_long(argc, argv, "a:p:C:S:scvVdPqI:O:6h", lopts,
				 NULL)) != -1) {
		switch (op) {
		case 's':
			o->server = 1;
			break;
		case 'c':
			o->server = 0;
			break;
		case 'a':
			o->addr = optarg;
			break;
		case 'p':
			if (uiw_tool_parse_long(optarg, 0, 65535, &v)) {
				fprintf(stderr, "uiwarp-ping: invalid port %s\n",
					optarg);
				return -1;
			}
			o->port = optarg;
			break;
		case '6':
			o->family = AF_INET6;
			break;
		case 'C':
			if (uiw_tool_parse_long(optarg, 0, LONG_MAX, &v)) {
				fprintf(stderr, "uiwarp-ping: invalid count %s\n",
					optarg);
				return -1;
			}
			o->count = v;
			break;
		case 'S':
			if (uiw_tool_parse_long(optarg, (long)PING_MIN_SIZE,
				       PING_MAX_SIZE, &v)) {
				fprintf(stderr, "uiwarp-ping: invalid size %s (valid range is %zu to %u)\n",
					optarg, PING_MIN_SIZE, PING_MAX_SIZE);
				return -1;
			}
			o->size = (uint32_t)v;
			break;
		case 'v':
			o->verbose++;
			break;
		case 'V':
			o->validate++;
			break;
		case 'd':
			o->debug++;
			break;
		case 'P':
			o->persistent = 1;
			break;
		case 'q':
			o->fixed_ird_ord = 1;
			break;
		case 'I':
		case 'O':
			if (uiw_tool_parse_long(optarg, 0, 65535, &v)) {
				fprintf(stderr, "uiwarp-ping: invalid %s %s\n",
					op == 'I' ? "IRD" : "ORD", optarg);
				return -1;
			}
			if (op == 'I') {
				o->cp.ird = (uint32_t)v;
				o->ird_set = true;
			} else {
				o->cp.ord = (uint32_t)v;
				o->ord_set = true;
			}
			break;
		case OPT_CRC:
		case OPT_MARKERS:
		{
			int on = uiw_tool_onoff(optarg);

			if (on < 0) {
				fprintf(stderr, "uiwarp-ping: --%s takes on or off\n",
					op == OPT_CRC ? "crc" : "markers");
				return -1;
			}
			*(op == OPT_CRC ? &o->cp.crc : &o->cp.markers) =
				(enum uiw_opt)on;
			break;
		}
		case OPT_MPA_REV:
			if (uiw_tool_parse_long(optarg, 1, 2, &v)) {
				fprintf(stderr, "uiwarp-ping: invalid MPA revision %s\n",
					optarg);
				return -1;
			}
			o->cp.mpa_rev = (uint8_t)v;
			break;
		case OPT_P2P:
			o->cp.p2p = UIW_OPT_ON;
			break;
		case OPT_RTR: {
			int m = parse_rtr(optarg);

			if (m < 0) {
				fprintf(stderr, "uiwarp-ping: --rtr takes send, write and read, comma separated, not %s\n",
					optarg);
				return -1;
			}
			o->cp.rtr = (uint8_t)m;
			break;
		}
		case OPT_START_DELAY:
			if (uiw_tool_parse_long(optarg, 0, UIW_START_DELAY_MAX_MS, &v)) {
				fprintf(stderr, "uiwarp-ping: --start-delay takes 0 to %d milliseconds, not %s\n",
					UIW_START_DELAY_MAX_MS, optarg);
				return -1;
			}
			o->cp.start_delay_ms = (uint16_t)v;
			break;
		case OPT_QUIET:
			o->quiet = 1;
			break;
		case OPT_LLP:
			if (uiw_tool_parse_llp(optarg, &o->cp.llp)) {
				fprintf(stderr, "uiwarp-ping: --llp takes tcp, sctp, sctp-udp or sctp-kernel, not %s\n",
					optarg);
				return -1;
			}
			break;
		case OPT_UDP_PORT:
			if (uiw_tool_parse_long(optarg, 1, 65535, &v)) {
				fprintf(stderr, "uiwarp-ping: invalid UDP port %s\n",
					optarg);
				return -1;
			}
			o->cp.udp_port = (uint16_t)v;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			return -1;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "uiwarp-ping: unexpected argument %s\n",
			argv[optind]);
		return -1;
	}
	if (o->server < 0) {
		fprintf(stderr, "uiwarp-ping: choose -s (server) or -c (client)\n");
		usage(stderr);
		return -1;
	}
	if (!o->server && !o->addr) {
		fprintf(stderr, "uiwarp-ping: the client needs -a addr\n");
		return -1;
	}
	if (o->cp.p2p == UIW_OPT_ON && o->cp.mpa_rev == 1) {
		fprintf(stderr, "uiwarp-ping: --p2p needs MPA revision 2\n");
		return -1;
	}
	if (o->server && o->cp.start_delay_ms) {
		fprintf(stderr, "uiwarp-ping: --start-delay is for the client; a server sends nothing before the client's first FPDU\n");
		return -1;
	}
	if (o->server && o->cp.p2p == UIW_OPT_ON) {
		fprintf(stderr, "uiwarp-ping: --p2p is the client's choice; the server follows it\n");
		return -1;
	}
	if (!o->server && !strcmp(o->port, "0")) {
		fprintf(stderr, "uiwarp-ping: the client needs a port other than 0\n");
		return -1;
	}
	/* rping's client always asks for responder resources and initiator
	 * depth of 1. */
	if (!o->server) {
		if (!o->ird_set)
			o->cp.ird = 1;
		if (!o->ord_set)
			o->cp.ord = 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct uiw_device_attr attr;
	struct ping p = { 0 };
	int rc;

	uiw_tool_name = "uiwarp-ping";
	if (parse_args(&p, argc, argv))
		return 2;
	p.role = p.o.server ? "server" : "client";
	setvbuf(stdout, NULL, _IOLBF, 0);
	/* Before the device starts its threads, so that they inherit the
	 * signal mask. */
	uiw_tool_signals_init("peer did not answer");
	p.dev = uiw_device_open(NULL);
	if (!p.dev) {
		err(&p, "opening a device: %s", uiw_last_error());
		return 1;
	}
	p.max_size = PING_MAX_SIZE;
	if (!uiw_device_query(p.dev, &attr) && attr.max_msg_size &&
	    attr.max_msg_size < p.max_size)
		p.max_size = attr.max_msg_size;
	if (p.o.size > p.max_size) {
		err(&p, "size %u is more than the device's largest message (%u)",
		    p.o.size, p.max_size);
		uiw_device_close(p.dev);
		return 1;
	}
	p.ch = uiw_cm_channel_create(p.dev);
	if (!p.ch) {
		err(&p, "creating a CM channel: %s", uiw_last_error());
		uiw_device_close(p.dev);
		return 1;
	}

	rc = p.o.server ? run_server(&p) : run_client(&p);

	if (uiw_cm_channel_destroy(p.ch))
		err(&p, "destroying the CM channel: %s", uiw_last_error());
	if (uiw_device_close(p.dev))
		err(&p, "closing the device: %s", uiw_last_error());
	return rc ? 1 : 0;
}
