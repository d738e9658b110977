/*
 * Connection manager: TCP connection setup and the MPA startup phase
 * (RFC 5044 §7.1), then hand-over of the socket to the TCP LLP.
 *
 * Every state change of an id happens on the device's progress thread;
 * the API functions check their arguments, hand the work over with
 * uiw_rt_call and report its result.  Events are queued on a channel
 * whose eventfd is readable while the queue is not empty.
 *
 * Initiator: non-blocking connect, MPA Request, wait for the Reply (all
 * under one startup timer), then Full Operation.  Responder: the
 * listener accepts TCP, reads the Request under a startup timer (with a
 * bound on connections in that phase), announces CONNECT_REQUEST, and
 * the application accepts (Reply, then Full Operation with hold_tx) or
 * rejects (Reply with R, then close).  Frames are read octet-exactly so
 * that nothing of the stream that follows them is consumed here.
 *
 * MPA revision 2 (RFC 6581): the initiator asks for revision 2 with the
 * enhanced-setup bit by default; the responder answers in the revision
 * and format of the Request (§10).  The IRD/ORD field and the
 * peer-to-peer decisions are mpa2.c's; the RTR itself is the engine's
 * (rnic/rtr.c), told by the LLP parameters.  An initiator whose
 * negotiation fails after an accepting Reply writes the Terminate that
 * RFC 6581 prescribes (2/0/6 or 2/0/7) as its only FPDU and closes;
 * its QP stays Idle.
 */
#include <uiwarp/uiwarp.h>

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "../llp/tcp.h"
#include "../rnic/rnic.h"
#include "../rt/log.h"
#include "../rt/rt.h"
#include "../wire/mpa.h"
#include "cm_internal.h"
#include "mpa2.h"

#define CM_TIMEOUT_DEFAULT_MS 10000
#define CM_BACKLOG_DEFAULT    128
/* Connections a listener holds while they have not sent their MPA
 * Request, at the least (uiw_cm_set_max_awaiting). */
#define CM_AWAITING_DEFAULT   128
#define CM_ACCEPT_BUDGET      32       /* accept calls per wake-up */
#define CM_ACCEPT_RETRY_MS    100      /* after EMFILE and friends */
/* MPA revisions this implementation speaks: 1 (RFC 5044) and 2 (RFC
 * 6581), the default. */
#define CM_MPA_REV_MIN        1
#define CM_MPA_REV_MAX        2

enum cm_kind { CM_LISTEN, CM_ACTIVE, CM_PASSIVE };

enum cm_state {
	S_IDLE,
	S_LISTENING,
	S_CONNECTING,     /* active: TCP handshake */
	S_SEND_REQ,       /* active: MPA Request going out */
	S_WAIT_REP,       /* active: reading the MPA Reply */
	S_START_DELAY,    /* active: accepted; start_delay_ms before Full
			     Operation */
	S_WAIT_REQ,       /* passive: reading the MPA Request (unannounced) */
	S_REQ_RECEIVED,   /* passive: CONNECT_REQUEST raised */
	S_SEND_REP,       /* passive: accepting Reply going out */
	S_SEND_REJ,       /* passive: rejecting Reply going out */
	S_ESTABLISHED,    /* the TCP LLP carries the QP */
	S_CLOSED,         /* over */
};

struct cm_ev {
	struct cm_ev *next;
	struct uiw_cm_id *id;
	struct uiw_cm_id *listen;
	enum uiw_cm_event_type type;
	int status;
	bool with_pd;
	bool queued;
	bool delivered;
};

struct uiw_cm_channel {
	struct uiw_device *dev;
	struct uiw_rt *rt;
	int efd;
	pthread_mutex_t lock;        /* queue, nids, efd state */
	struct cm_ev *head, *tail;
	unsigned nids;
	uint8_t cur_pd[UIW_MPA_PD_MAX];
};

struct uiw_cm_id {
	struct uiw_cm_channel *ch;
	struct uiw_rt *rt;
	enum cm_kind kind;
	enum cm_state state;
	void *context;
	int error;                   /* -errno once failed */

	int fd;
	struct uiw_rt_watch *watch;
	struct uiw_rt_timer timer;
	struct uiw_tcp *tcp;
	struct sockaddr_storage local, peer;
	bool have_local, have_peer;

	/* QP bound to this id; claimed so that no other id uses it. */
	struct uiw_qp *qp;
	bool claimed;
	struct uiw_cm_id *claim_next;

	/* Our side of the startup. */
	enum uiw_opt crc, markers, align;
	uint32_t ird, ord;
	int timeout_ms;
	uint16_t start_delay_ms;     /* initiator: before Full Operation */
	uint16_t pd_len;
	uint8_t pd[UIW_MPA_PD_MAX];
	uint8_t rev;                 /* initiator: the revision it asks for */
	enum uiw_opt p2p;            /* initiator: peer-to-peer mode */
	uint8_t rtr;                 /* UIW_RTR_* we support (nonzero) */
	bool strict;                 /* ird/ord are requirements */

	/* Frame being read (octet-exact) and frame being written. */
	uint8_t rbuf[UIW_MPA_FRAME_MAX];
	size_t rlen, rneed;
	uint8_t wbuf[UIW_MPA_FRAME_MAX];
	size_t wlen, woff;

	/* The peer's frame, once valid. */
	bool have_frame;
	uint8_t peer_flags, peer_rev;
	uint16_t peer_pd_len;
	uint8_t peer_pd[UIW_MPA_PD_MAX];
	/* RFC 6581: the peer's frame began with the IRD/ORD field. */
	bool peer_enh;
	struct uiw_mpa_v2 peer_v2;
	/* Initiator: the field of our Request (when it had one). */
	bool sent_enh;
	struct uiw_mpa_v2 sent_v2;
	/* The outcome: this side's IRD/ORD, peer-to-peer mode, RTR. */
	struct uiw_mpa2_out nego;

	/* Listener: children, the startup bound and timeout.  The
	 * children still awaiting their Request are also in a queue,
	 * oldest first, so that the oldest can be shed. */
	struct uiw_cm_id *children;
	struct uiw_cm_id *await_head, *await_tail;
	unsigned awaiting, max_awaiting;
	uint64_t accepted, shed;     /* counts, for uiw_cm_listener_stats */
	int startup_ms;
	uint8_t max_rev;             /* highest revision it answers */
	bool paused;
	/* Passive child: its listener (NULL once the listener is gone). */
	struct uiw_cm_id *listener;
	struct uiw_cm_id *sib_next, *sib_prev;
	struct uiw_cm_id *await_next, *await_prev;

	/* Each event of an id is raised at most once. */
	struct cm_ev ev_req, ev_conn, ev_disc;
};

/* ---- Helpers ------------------------------------------------------- */

static const char *state_str(enum cm_state s)
{
	static const char *const names[] = {
		"idle", "listening", "connecting", "sending request",
		"waiting for reply", "start delay", "waiting for request",
		"request received", "sending reply", "rejecting",
		"established", "closed",
	};

	return (unsigned)s < sizeof(names) / sizeof(names[0]) ? names[s] : "?";
}

const char *uiw_cm_event_str(enum uiw_cm_event_type type)
{
	switch (type) {
	case UIW_CM_EVENT_CONNECT_REQUEST: return "CONNECT_REQUEST";
	case UIW_CM_EVENT_ESTABLISHED:     return "ESTABLISHED";
	case UIW_CM_EVENT_REJECTED:        return "REJECTED";
	case UIW_CM_EVENT_CONNECT_ERROR:   return "CONNECT_ERROR";
	case UIW_CM_EVENT_DISCONNECTED:    return "DISCONNECTED";
	case UIW_CM_EVENT_TIMEWAIT_EXIT:   return "TIMEWAIT_EXIT";
	}
	return "UNKNOWN";
}

static socklen_t sa_len(const struct sockaddr_storage *ss)
{
	return ss->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) :
					   sizeof(struct sockaddr_in);
}

static const char *sa_str(const struct sockaddr_storage *ss, char *buf,
			  size_t cap)
{
	char host[INET6_ADDRSTRLEN] = "?";
	unsigned port = 0;

	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *a = (const void *)ss;

		inet_ntop(AF_INET, &a->sin_addr, host, sizeof(host));
		port = ntohs(a->sin_port);
		snprintf(buf, cap, "%s:%u", host, port);
	} else if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *a = (const void *)ss;

		inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof(host));
		port = ntohs(a->sin6_port);
		snprintf(buf, cap, "[%s]:%u", host, port);
	} else {
		snprintf(buf, cap, "?");
	}
	return buf;
}

static int check_addr(const struct sockaddr *sa, socklen_t len)
{
	if (!sa)
		return uiw_error(EINVAL, "cm: no address");
	if (sa->sa_family == AF_INET && len >= sizeof(struct sockaddr_in))
		return 0;
	if (sa->sa_family == AF_INET6 && len >= sizeof(struct sockaddr_in6))
		return 0;
	return uiw_error(EINVAL, "cm: address family %d / length %u not "
			 "supported (IPv4 or IPv6)", sa->sa_family,
			 (unsigned)len);
}

static void sa_copy(struct sockaddr_storage *ss, const struct sockaddr *sa)
{
	memset(ss, 0, sizeof(*ss));
	memcpy(ss, sa, sa->sa_family == AF_INET6 ?
	       sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in));
}

static void fill_names(struct uiw_cm_id *id)
{
	socklen_t len = sizeof(id->local);

	if (getsockname(id->fd, (struct sockaddr *)&id->local, &len) == 0)
		id->have_local = true;
	len = sizeof(id->peer);
	if (getpeername(id->fd, (struct sockaddr *)&id->peer, &len) == 0)
		id->have_peer = true;
}

static uint32_t dev_max_ird(struct uiw_device *dev, uint32_t *max_ord)
{
	struct uiw_device_attr a;

	if (uiw_device_query(dev, &a) < 0)
		a.max_ird = a.max_ord = 1;
	if (max_ord)
		*max_ord = a.max_ord;
	return a.max_ird;
}

/* The LLP named by a conn_param or listen_param: 0 for TCP, the one this
 * connection manager runs. */
static int check_llp(enum uiw_llp_kind llp)
{
	if (llp == UIW_LLP_TCP)
		return 0;
	if (llp == UIW_LLP_SCTP)
		return uiw_error(EPROTONOSUPPORT, "cm: DDP over SCTP "
				 "(RFC 5043, UIW_LLP_SCTP) is not supported "
				 "yet; use UIW_LLP_TCP");
	return uiw_error(EINVAL, "cm: unknown LLP %d (UIW_LLP_TCP or "
			 "UIW_LLP_SCTP)", (int)llp);
}

/* Checks a conn_param for connect (initiator) or accept; 0 or -errno
 * with the reason recorded. */
static int check_param(const struct uiw_conn_param *p, struct uiw_device *dev,
		       bool initiator)
{
	uint32_t max_ird, max_ord;
	bool manual_ok;
	int ret;

	if (!p)
		return 0;
	ret = check_llp(p->llp);
	if (ret)
		return ret;
	if (p->private_data_len > UIW_MPA_PRIVATE_DATA_MAX)
		return uiw_error(EINVAL, "cm: private data of %u octets "
				 "(at most %u, RFC 5044 §7.1.1)",
				 p->private_data_len, UIW_MPA_PRIVATE_DATA_MAX);
	if (p->private_data_len && !p->private_data)
		return uiw_error(EINVAL, "cm: private_data is NULL");
	if (p->mpa_rev > CM_MPA_REV_MAX)
		return uiw_error(EINVAL, "cm: unknown MPA revision %u (1 or "
				 "2; 0 is the default, 2)", p->mpa_rev);
	/* RFC 6581 §9: the IRD/ORD field counts in the 512 octets. */
	if (initiator && p->mpa_rev != 1 &&
	    p->private_data_len > UIW_MPA_V2_PRIVATE_DATA_MAX)
		return uiw_error(EINVAL, "cm: private data of %u octets; MPA "
				 "revision 2 takes at most %u besides its "
				 "IRD/ORD field (RFC 6581 §9), revision 1 %u",
				 p->private_data_len,
				 UIW_MPA_V2_PRIVATE_DATA_MAX,
				 UIW_MPA_PRIVATE_DATA_MAX);
	if ((unsigned)p->crc > UIW_OPT_ON ||
	    (unsigned)p->markers > UIW_OPT_ON ||
	    (unsigned)p->p2p > UIW_OPT_ON ||
	    (unsigned)p->align > UIW_OPT_ON)
		return uiw_error(EINVAL, "cm: crc/markers/p2p/align must be "
				 "UIW_OPT_DEFAULT, _OFF or _ON");
	if (initiator && p->p2p == UIW_OPT_ON && p->mpa_rev == 1)
		return uiw_error(EINVAL, "cm: peer-to-peer mode needs MPA "
				 "revision 2 (RFC 6581 §9.2)");
	if (p->rtr & ~UIW_RTR_ALL)
		return uiw_error(EINVAL, "cm: rtr 0x%x: only UIW_RTR_SEND, "
				 "_WRITE and _READ", p->rtr);
	/* UIW_IRD_ORD_MANUAL is the all-ones value of a Request. */
	manual_ok = initiator && p->mpa_rev != 1;
	max_ird = dev_max_ird(dev, &max_ord);
	if ((p->ird > max_ird &&
	     !(manual_ok && p->ird == UIW_IRD_ORD_MANUAL)) ||
	    (p->ord > max_ord &&
	     !(manual_ok && p->ord == UIW_IRD_ORD_MANUAL)))
		return uiw_error(EINVAL, "cm: IRD %u / ORD %u above the "
				 "device's %u / %u (UIW_IRD_ORD_MANUAL is "
				 "for an initiator of MPA revision 2)",
				 p->ird, p->ord, max_ird, max_ord);
	if (p->timeout_ms < 0)
		return uiw_error(EINVAL, "cm: negative timeout_ms %d",
				 p->timeout_ms);
	if (p->start_delay_ms > UIW_START_DELAY_MAX_MS)
		return uiw_error(EINVAL, "cm: start_delay_ms %u above %u",
				 p->start_delay_ms, UIW_START_DELAY_MAX_MS);
	if (p->start_delay_ms && !initiator)
		return uiw_error(EINVAL, "cm: start_delay_ms is for the "
				 "initiator (a responder sends nothing before "
				 "the initiator's first FPDU)");
	return 0;
}

static void take_param(struct uiw_cm_id *id, const struct uiw_conn_param *p)
{
	static const struct uiw_conn_param none;

	if (!p)
		p = &none;
	id->crc = p->crc;
	id->markers = p->markers;
	id->align = p->align;
	id->ird = p->ird;
	id->ord = p->ord;
	id->timeout_ms = p->timeout_ms ? p->timeout_ms : CM_TIMEOUT_DEFAULT_MS;
	id->start_delay_ms = p->start_delay_ms;
	id->pd_len = p->private_data_len;
	if (id->pd_len)
		memcpy(id->pd, p->private_data, id->pd_len);
	id->rev = p->mpa_rev ? p->mpa_rev : CM_MPA_REV_MAX;
	id->p2p = p->p2p;
	id->rtr = p->rtr ? p->rtr : UIW_RTR_ALL;
	id->strict = p->rd_strict;
}

/* This side's part of the RFC 6581 negotiation. */
static void cm_local(const struct uiw_cm_id *id, struct uiw_mpa2_local *l)
{
	uint32_t ird, ord;

	memset(l, 0, sizeof(*l));
	uiw_qp_default_ird_ord(id->qp, &ird, &ord);
	l->ird_manual = id->ird == UIW_IRD_ORD_MANUAL;
	l->ord_manual = id->ord == UIW_IRD_ORD_MANUAL;
	l->ird = id->ird && !l->ird_manual ? id->ird : ird;
	l->ord = id->ord && !l->ord_manual ? id->ord : ord;
	l->max_ird = dev_max_ird(id->ch->dev, NULL);
	l->strict = id->strict;
	l->p2p = id->p2p == UIW_OPT_ON;
	l->rtr = id->rtr;
}

/* Without the IRD/ORD field (revision 1, or revision 2 without the
 * enhanced-setup bit) each side keeps its own values. */
static void cm_nego_plain(struct uiw_cm_id *id)
{
	struct uiw_mpa2_local l;

	cm_local(id, &l);
	memset(&id->nego, 0, sizeof(id->nego));
	id->nego.ird = l.ird;
	id->nego.ord = l.ord;
}

/* Our flags in a Request or an accepting Reply. */
static uint8_t our_flags(const struct uiw_cm_id *id)
{
	uint8_t f = 0;

	/* RFC 5044 §4.4: CRC on unless the user turned it off. */
	if (id->crc != UIW_OPT_OFF)
		f |= UIW_MPA_F_C;
	/* M asks the peer to put markers in what it sends us. */
	if (id->markers == UIW_OPT_ON)
		f |= UIW_MPA_F_M;
	return f;
}

/* RFC 5044 §7.1.1: CRC when either side set C; markers go towards a
 * side that set M, each direction on its own.  IRD, ORD and the RTR as
 * negotiated (RFC 6581 §9). */
static void cm_nego(const struct uiw_cm_id *id, struct uiw_tcp_params *p)
{
	uint8_t mine = our_flags(id);

	memset(p, 0, sizeof(*p));
	p->crc = (mine & UIW_MPA_F_C) || (id->peer_flags & UIW_MPA_F_C);
	p->markers_tx = id->peer_flags & UIW_MPA_F_M;
	p->markers_rx = mine & UIW_MPA_F_M;
	p->hold_tx = id->kind == CM_PASSIVE;
	p->align = id->align == UIW_OPT_OFF  ? UIW_TCP_ALIGN_NEVER :
		   id->align == UIW_OPT_ON   ? UIW_TCP_ALIGN_KEEP :
					       UIW_TCP_ALIGN_AUTO;
	p->ird = id->nego.ird;
	p->ord = id->nego.ord;
	/* RFC 6581 §9: only an initiator of an enhanced connection sends
	 * the setup Terminates (insufficient IRD, no matching RTR). */
	p->setup_term = id->kind == CM_PASSIVE && id->peer_rev >= 2 &&
			(id->peer_flags & UIW_MPA_F_ENH);
	if (id->nego.p2p) {
		if (id->kind == CM_PASSIVE)
			p->rtr_recv = id->nego.rtr;
		else
			p->rtr_send = id->nego.rtr;
	}
}

/* ---- QP claims: one id per QP --------------------------------------- */

static pthread_mutex_t claims_lock = PTHREAD_MUTEX_INITIALIZER;
static struct uiw_cm_id *claims;

static bool claim_qp(struct uiw_cm_id *id, struct uiw_qp *qp)
{
	struct uiw_cm_id *c;
	bool ok = true;

	pthread_mutex_lock(&claims_lock);
	for (c = claims; c; c = c->claim_next)
		if (c->qp == qp)
			ok = false;
	if (ok) {
		id->qp = qp;
		id->claimed = true;
		id->claim_next = claims;
		claims = id;
	}
	pthread_mutex_unlock(&claims_lock);
	return ok;
}

static void release_qp(struct uiw_cm_id *id)
{
	struct uiw_cm_id **pp;

	if (!id->claimed)
		return;
	pthread_mutex_lock(&claims_lock);
	for (pp = &claims; *pp; pp = &(*pp)->claim_next) {
		if (*pp == id) {
			*pp = id->claim_next;
			break;
		}
	}
	id->claimed = false;
	pthread_mutex_unlock(&claims_lock);
}

/* ---- Channels and events -------------------------------------------- */

static void efd_set(struct uiw_cm_channel *ch)
{
	uint64_t one = 1;

	while (write(ch->efd, &one, sizeof(one)) < 0 && errno == EINTR)
		;
}

static void efd_clear(struct uiw_cm_channel *ch)
{
	uint64_t v;

	while (read(ch->efd, &v, sizeof(v)) < 0 && errno == EINTR)
		;
}

/* Progress thread: queues one of id's events (each at most once). */
static void ev_raise(struct uiw_cm_id *id, struct cm_ev *e,
		     enum uiw_cm_event_type type, int status, bool with_pd)
{
	struct uiw_cm_channel *ch = id->ch;
	char a[64];

	pthread_mutex_lock(&ch->lock);
	if (e->queued || e->delivered) {
		pthread_mutex_unlock(&ch->lock);
		return;
	}
	e->id = id;
	e->listen = id->listener;
	e->type = type;
	e->status = status;
	e->with_pd = with_pd;
	e->queued = true;
	e->next = NULL;
	if (ch->tail)
		ch->tail->next = e;
	else
		ch->head = e;
	ch->tail = e;
	if (ch->head == e)
		efd_set(ch);
	pthread_mutex_unlock(&ch->lock);
	UIW_DBG(1, "cm %s: %s (%d)", id->have_peer ?
		sa_str(&id->peer, a, sizeof(a)) : "-",
		uiw_cm_event_str(type), status);
}

/* Removes e from the queue if it is there; ch->lock held. */
static bool ev_unqueue_locked(struct uiw_cm_channel *ch, struct cm_ev *e)
{
	struct cm_ev **pp, *prev = NULL;

	if (!e->queued)
		return false;
	for (pp = &ch->head; *pp; prev = *pp, pp = &(*pp)->next) {
		if (*pp == e) {
			*pp = e->next;
			if (ch->tail == e)
				ch->tail = prev;
			break;
		}
	}
	e->queued = false;
	e->next = NULL;
	if (!ch->head)
		efd_clear(ch);
	return true;
}

static void ev_unqueue_all(struct uiw_cm_id *id)
{
	pthread_mutex_lock(&id->ch->lock);
	ev_unqueue_locked(id->ch, &id->ev_req);
	ev_unqueue_locked(id->ch, &id->ev_conn);
	ev_unqueue_locked(id->ch, &id->ev_disc);
	pthread_mutex_unlock(&id->ch->lock);
}

struct uiw_cm_channel *uiw_cm_channel_create(struct uiw_device *dev)
{
	struct uiw_cm_channel *ch;
	struct uiw_rt *rt;

	if (!dev)
		return uiw_error_null(EINVAL, "cm: no device");
	rt = uiw_device_rt(dev);
	if (!rt)
		return uiw_error_null(EINVAL, "cm: device has no runtime");
	/* here, on the caller's thread, rather than in the middle of a
	 * connection on the progress thread */
	uiw_tcp_prepare();
	ch = calloc(1, sizeof(*ch));
	if (!ch)
		return uiw_error_null(ENOMEM, "cm: out of memory");
	ch->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (ch->efd < 0) {
		int e = errno;

		free(ch);
		return uiw_error_null(e, "cm: eventfd: %s", strerror(e));
	}
	ch->dev = dev;
	ch->rt = rt;
	pthread_mutex_init(&ch->lock, NULL);
	uiw_rt_hold(rt);
	return ch;
}

int uiw_cm_channel_destroy(struct uiw_cm_channel *ch)
{
	if (!ch)
		return uiw_error(EINVAL, "cm: no channel");
	pthread_mutex_lock(&ch->lock);
	if (ch->nids) {
		unsigned n = ch->nids;

		pthread_mutex_unlock(&ch->lock);
		return uiw_error(EBUSY, "cm: channel still has %u ids", n);
	}
	pthread_mutex_unlock(&ch->lock);
	uiw_rt_release(ch->rt);
	close(ch->efd);
	pthread_mutex_destroy(&ch->lock);
	free(ch);
	return 0;
}

int uiw_cm_channel_fd(struct uiw_cm_channel *ch)
{
	if (!ch)
		return uiw_error(EINVAL, "cm: no channel");
	return ch->efd;
}

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int uiw_cm_get_event(struct uiw_cm_channel *ch, struct uiw_cm_event *ev,
		     int timeout_ms)
{
	int64_t deadline = timeout_ms > 0 ? mono_ms() + timeout_ms : 0;

	if (!ch || !ev)
		return uiw_error(EINVAL, "cm: get_event without %s",
				 ch ? "event" : "channel");
	for (;;) {
		struct pollfd pfd = { .fd = ch->efd, .events = POLLIN };
		struct cm_ev *e;
		int wait, r;

		pthread_mutex_lock(&ch->lock);
		e = ch->head;
		if (e) {
			struct uiw_cm_id *id = e->id;

			ev_unqueue_locked(ch, e);
			e->delivered = true;
			memset(ev, 0, sizeof(*ev));
			ev->type = e->type;
			ev->id = id;
			if (e->type == UIW_CM_EVENT_CONNECT_REQUEST)
				ev->listen_id = e->listen;
			ev->status = e->status;
			if (e->with_pd && id->have_frame) {
				/* Valid until the next get_event; without the
				 * RFC 6581 field. */
				uint16_t off = id->peer_enh ? UIW_MPA_V2_LEN
							    : 0;

				memcpy(ch->cur_pd, id->peer_pd + off,
				       id->peer_pd_len - off);
				ev->private_data = ch->cur_pd;
				ev->private_data_len =
					(uint16_t)(id->peer_pd_len - off);
			}
			ev->llp = UIW_LLP_TCP;
			if (id->have_frame) {
				ev->mpa.rev = id->peer_rev;
				ev->mpa.peer_crc =
					!!(id->peer_flags & UIW_MPA_F_C);
				ev->mpa.peer_markers =
					!!(id->peer_flags & UIW_MPA_F_M);
			}
			if (id->have_frame && id->peer_enh) {
				/* RFC 6581 §9.1: "MUST pass the peer's
				 * provided IRD and ORD values to the ULP". */
				ev->mpa.enhanced = 1;
				ev->peer_ird = id->peer_v2.ird;
				ev->peer_ord = id->peer_v2.ord;
				ev->peer_p2p = id->peer_v2.p2p;
				ev->peer_rtr = uiw_mpa2_rtr_flags(&id->peer_v2);
			}
			if (e->type == UIW_CM_EVENT_ESTABLISHED) {
				ev->p2p = id->nego.p2p;
				ev->rtr = id->nego.rtr;
				ev->ird = id->nego.ird;
				ev->ord = id->nego.ord;
			}
			pthread_mutex_unlock(&ch->lock);
			return 0;
		}
		pthread_mutex_unlock(&ch->lock);
		if (timeout_ms == 0)
			return -EAGAIN;
		if (timeout_ms < 0) {
			wait = -1;
		} else {
			int64_t left = deadline - mono_ms();

			if (left <= 0)
				return -ETIMEDOUT;
			wait = left > 3600000 ? 3600000 : (int)left;
		}
		r = poll(&pfd, 1, wait);
		if (r < 0 && errno != EINTR)
			return uiw_error(errno, "cm: poll: %s",
					 strerror(errno));
	}
}

/* ---- Id life cycle (progress thread) -------------------------------- */

static struct uiw_cm_id *id_new(struct uiw_cm_channel *ch, enum cm_kind k)
{
	struct uiw_cm_id *id = calloc(1, sizeof(*id));

	if (!id)
		return NULL;
	id->ch = ch;
	id->rt = ch->rt;
	id->kind = k;
	id->fd = -1;
	id->rneed = UIW_MPA_HDR_LEN;
	pthread_mutex_lock(&ch->lock);
	ch->nids++;
	pthread_mutex_unlock(&ch->lock);
	return id;
}

static void close_fd(struct uiw_cm_id *id)
{
	uiw_rt_watch_del(id->watch);
	id->watch = NULL;
	if (id->fd >= 0)
		close(id->fd);
	id->fd = -1;
}

/* Frees id; its events leave the queue.  Progress thread. */
static void id_free(struct uiw_cm_id *id)
{
	struct uiw_cm_channel *ch = id->ch;

	uiw_rt_timer_stop(id->rt, &id->timer);
	if (id->tcp) {
		uiw_tcp_free(id->tcp);
		id->tcp = NULL;
	}
	close_fd(id);
	release_qp(id);
	ev_unqueue_all(id);
	pthread_mutex_lock(&ch->lock);
	ch->nids--;
	pthread_mutex_unlock(&ch->lock);
	free(id);
}

static void listener_resume(struct uiw_cm_id *l);

/* c, a child of l, no longer awaits its Request. */
static void await_remove(struct uiw_cm_id *l, struct uiw_cm_id *c)
{
	if (c->await_prev)
		c->await_prev->await_next = c->await_next;
	else
		l->await_head = c->await_next;
	if (c->await_next)
		c->await_next->await_prev = c->await_prev;
	else
		l->await_tail = c->await_prev;
	c->await_next = c->await_prev = NULL;
	l->awaiting--;
	listener_resume(l);
}

/* Takes a passive child off its listener's books. */
static void child_unlink(struct uiw_cm_id *c)
{
	struct uiw_cm_id *l = c->listener;

	if (!l)
		return;
	if (c->state == S_WAIT_REQ)
		await_remove(l, c);
	if (c->sib_prev)
		c->sib_prev->sib_next = c->sib_next;
	else
		l->children = c->sib_next;
	if (c->sib_next)
		c->sib_next->sib_prev = c->sib_prev;
	c->sib_next = c->sib_prev = NULL;
	c->listener = NULL;
}

/* The id's connection attempt or connection is over. */
static void id_closed(struct uiw_cm_id *id, int err)
{
	uiw_rt_timer_stop(id->rt, &id->timer);
	close_fd(id);
	id->state = S_CLOSED;
	if (err && !id->error)
		id->error = err;
	release_qp(id);
}

/* An active attempt failed: CONNECT_ERROR. */
static void active_fail(struct uiw_cm_id *id, int err, const char *why)
{
	UIW_DBG(1, "cm: connect failed in state %s: %s (%s)",
		state_str(id->state), why, strerror(-err));
	id_closed(id, err);
	ev_raise(id, &id->ev_conn, UIW_CM_EVENT_CONNECT_ERROR, err, false);
}

/* A passive connection failed.  Before the application has seen its
 * CONNECT_REQUEST the id disappears quietly (RFC 5044 §7.1.2: close and
 * report locally, here in the log); afterwards CONNECT_ERROR tells the
 * application, which owns the id. */
static void passive_fail(struct uiw_cm_id *id, int err, const char *why)
{
	bool withdrawn;
	char a[64];

	UIW_DBG(1, "cm: incoming connection from %s failed in state %s: %s",
		sa_str(&id->peer, a, sizeof(a)), state_str(id->state), why);
	if (id->state == S_WAIT_REQ) {
		child_unlink(id);
		id_free(id);
		return;
	}
	pthread_mutex_lock(&id->ch->lock);
	withdrawn = ev_unqueue_locked(id->ch, &id->ev_req);
	pthread_mutex_unlock(&id->ch->lock);
	if (withdrawn) {
		child_unlink(id);
		id_free(id);
		return;
	}
	if (id->state == S_SEND_REJ) {
		/* The application already let go of it. */
		id_closed(id, err);
		return;
	}
	id_closed(id, err);
	ev_raise(id, &id->ev_conn, UIW_CM_EVENT_CONNECT_ERROR, err, false);
}

/* The TCP LLP ended: DISCONNECTED. */
static void tcp_closed(void *arg, uiw_err_t err)
{
	struct uiw_cm_id *id = arg;

	id_closed(id, err == UIW_OK ? 0 : -ECONNRESET);
	ev_raise(id, &id->ev_disc, UIW_CM_EVENT_DISCONNECTED, 0, false);
}

/* ---- Frames --------------------------------------------------------- */

/* A frame of revision rev; with v2, the enhanced-setup bit is set and
 * the private data starts with the IRD/ORD field (RFC 6581 §6, §9), so
 * pd_len is at most UIW_MPA_V2_PRIVATE_DATA_MAX then (checked before). */
static void frame_prepare(struct uiw_cm_id *id, bool reply, uint8_t flags,
			  uint8_t rev, const struct uiw_mpa_v2 *v2,
			  const uint8_t *pd, uint16_t pd_len)
{
	uint8_t buf[UIW_MPA_PD_MAX];
	struct uiw_mpa_frame f = {
		.reply = reply,
		.flags = flags,
		.rev = rev,
		.pd_len = pd_len,
		.pd = pd,
	};

	if (v2) {
		f.flags |= UIW_MPA_F_ENH;
		uiw_mpa_v2_encode(buf, v2);
		if (pd_len)
			memcpy(buf + UIW_MPA_V2_LEN, pd, pd_len);
		f.pd = buf;
		f.pd_len = (uint16_t)(pd_len + UIW_MPA_V2_LEN);
	}
	id->wlen = uiw_mpa_frame_encode(id->wbuf, sizeof(id->wbuf), &f);
	id->woff = 0;
}

/* The peer's frame has the RFC 6581 field: take it.  False when the
 * enhanced-setup bit is set without room for it (an improperly
 * formatted frame). */
static bool frame_take_v2(struct uiw_cm_id *id)
{
	id->peer_enh = false;
	/* RFC 6581 §6: S is a bit of revision 2 and higher; in revision 1
	 * it is reserved, "MUST NOT be checked on reception". */
	if (id->peer_rev < 2 || !(id->peer_flags & UIW_MPA_F_ENH))
		return true;
	if (id->peer_pd_len < UIW_MPA_V2_LEN)
		return false;
	uiw_mpa_v2_decode(id->peer_pd, &id->peer_v2);
	id->peer_enh = true;
	return true;
}

/* 1 when the frame is out, 0 when the socket is full, -errno. */
static int frame_write(struct uiw_cm_id *id)
{
	while (id->woff < id->wlen) {
		/* MSG_EOR: the first FPDU never shares the frame's segment
		 * (RFC 5044 §5.1 FPDU alignment). */
		ssize_t r = send(id->fd, id->wbuf + id->woff,
				 id->wlen - id->woff,
				 MSG_DONTWAIT | MSG_NOSIGNAL | MSG_EOR);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return 0;
			return -errno;
		}
		id->woff += (size_t)r;
	}
	return 1;
}

/* Reads the peer's frame, never past its end.  1 with the frame taken
 * into peer_*, 0 when more octets are needed, -EPROTO for a malformed
 * frame (*why says how), -ECONNRESET at EOF, -errno. */
static int frame_read(struct uiw_cm_id *id, bool reply, const char **why)
{
	struct uiw_mpa_frame f;
	size_t used;

	while (id->rlen < id->rneed) {
		ssize_t r = recv(id->fd, id->rbuf + id->rlen,
				 id->rneed - id->rlen, MSG_DONTWAIT);

		if (r == 0) {
			*why = "connection closed during MPA startup";
			return -ECONNRESET;
		}
		if (r < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return 0;
			*why = strerror(errno);
			return -errno;
		}
		id->rlen += (size_t)r;
		/* RFC 5044 §7.1.1: a wrong key is refused at once. */
		if (uiw_mpa_frame_decode(id->rbuf, id->rlen, reply, &f,
					 &used) != UIW_OK) {
			*why = id->rlen <= UIW_MPA_KEY_LEN ?
			       (reply ? "not an MPA Reply key" :
					"not an MPA Request key") :
			       "private data longer than 512 octets";
			return -EPROTO;
		}
		if (id->rlen == UIW_MPA_HDR_LEN &&
		    id->rneed == UIW_MPA_HDR_LEN) {
			uint16_t pd_len = (uint16_t)(id->rbuf[18] << 8 |
						     id->rbuf[19]);

			/* RFC 5044 §7.1.2 rule 9: validate PD_Length. */
			if (pd_len > UIW_MPA_PD_MAX) {
				*why = "private data longer than 512 octets";
				return -EPROTO;
			}
			id->rneed = UIW_MPA_HDR_LEN + pd_len;
		}
	}
	if (uiw_mpa_frame_decode(id->rbuf, id->rlen, reply, &f, &used) !=
	    UIW_OK || used != id->rlen) {
		*why = "malformed MPA frame";
		return -EPROTO;
	}
	id->peer_flags = f.flags;
	id->peer_rev = f.rev;
	id->peer_pd_len = f.pd_len;
	if (f.pd_len)
		memcpy(id->peer_pd, f.pd, f.pd_len);
	id->have_frame = true;
	return 1;
}

/* Hands the socket to the TCP LLP: Full Operation. */
static int go_full_operation(struct uiw_cm_id *id)
{
	struct uiw_tcp_params p;
	int ret;

	cm_nego(id, &p);
	uiw_rt_timer_stop(id->rt, &id->timer);
	uiw_rt_watch_del(id->watch);
	id->watch = NULL;
	ret = uiw_tcp_start(id->rt, id->fd, id->qp, &p, tcp_closed, id,
			    &id->tcp);
	if (ret < 0)
		return ret;
	id->fd = -1;    /* the LLP owns it now */
	id->state = S_ESTABLISHED;
	return 0;
}

/* ---- Initiator ------------------------------------------------------ */

static void active_terminate(struct uiw_cm_id *id, uiw_err_t err,
			     int status, const char *why);

static void active_established(struct uiw_cm_id *id)
{
	int ret = go_full_operation(id);

	if (ret < 0 && id->peer_enh) {
		/* RFC 6581 §9.3: a local error with no code of its own ends
		 * an enhanced connection with the Terminate 2/0/5. */
		active_terminate(id, UIW_E_MPA_LOCAL_CATA, ret,
				 "cannot attach the QP");
		return;
	}
	if (ret < 0) {
		/* The responder believes we are connected: reset. */
		struct linger lg = { .l_onoff = 1, .l_linger = 0 };

		setsockopt(id->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
		active_fail(id, ret, "cannot attach the QP");
		return;
	}
	ev_raise(id, &id->ev_conn, UIW_CM_EVENT_ESTABLISHED, 0, true);
}

static void active_delay_done(void *arg)
{
	active_established(arg);
}

/* The Reply accepted: Full Operation, at once or after start_delay_ms
 * (the socket is not read meanwhile: the responder sends nothing before
 * our first FPDU, RFC 5044 §7.1.2 rule 4, and what a peer sends anyway
 * waits in the socket for the LLP). */
static void active_accepted(struct uiw_cm_id *id)
{
	if (!id->start_delay_ms) {
		active_established(id);
		return;
	}
	id->state = S_START_DELAY;
	uiw_rt_watch_set(id->watch, 0);
	uiw_rt_timer_stop(id->rt, &id->timer);
	uiw_rt_timer_init(&id->timer, active_delay_done, id);
	uiw_rt_timer_start(id->rt, &id->timer, id->start_delay_ms);
}

/* The connection cannot go on after an accepting Reply of RFC 6581:
 * the Terminate of §9.1 / §9.2 / §9.3 is our first and only FPDU, then
 * we close in order (the responder is in Full Operation; the QP was
 * never attached).  status: the CONNECT_ERROR. */
static void active_terminate(struct uiw_cm_id *id, uiw_err_t err,
			     int status, const char *why)
{
	struct uiw_tcp_params p;
	uint8_t b[64];
	size_t n;
	ssize_t r;

	cm_nego(id, &p);
	n = uiw_mpa2_term_fpdu(b, sizeof(b), err, p.markers_tx, p.crc);
	do {
		r = n ? send(id->fd, b, n, MSG_DONTWAIT | MSG_NOSIGNAL) : -1;
	} while (r < 0 && errno == EINTR);
	UIW_DBG(1, "cm: sent Terminate %s: %s (%zd of %zu octets)",
		uiw_err_str(err), why, r, n);
	active_fail(id, status, why);
}

static void active_reply(struct uiw_cm_id *id)
{
	struct uiw_mpa2_local l;
	const char *why = NULL;
	int r = frame_read(id, true, &why);

	if (r == 0)
		return;
	if (r < 0) {
		active_fail(id, r, why);
		return;
	}
	/* RFC 5044 §7.1.1 Rev: a Reply must speak the revision we asked
	 * for, or a lower one: a revision 1 responder may answer our
	 * revision 2 Request in revision 1 (RFC 6581 §10: the ULP then
	 * deals with IRD, ORD and peer-to-peer itself). */
	if (id->peer_rev < CM_MPA_REV_MIN || id->peer_rev > id->rev) {
		active_fail(id, -EPROTO, "MPA Reply of a revision we did not "
			    "ask for");
		return;
	}
	if (!frame_take_v2(id)) {
		active_fail(id, -EPROTO, "MPA Reply with the enhanced-setup "
			    "bit and less than 4 octets of private data "
			    "(RFC 6581 §6)");
		return;
	}
	/* RFC 5044 §7.1.2 rule 3: R set: exit MPA; the ULP closes TCP.
	 * RFC 6581 §9.1: the responder's IRD and ORD reach the ULP with a
	 * rejection too (in the event). */
	if (id->peer_flags & UIW_MPA_F_R) {
		id_closed(id, -ECONNREFUSED);
		ev_raise(id, &id->ev_conn, UIW_CM_EVENT_REJECTED,
			 -ECONNREFUSED, true);
		return;
	}
	if (id->peer_enh != id->sent_enh && id->peer_rev >= 2) {
		/* RFC 6581 §10: an enhanced Request gets an enhanced Reply,
		 * an unenhanced one an unenhanced Reply. */
		active_fail(id, -EPROTO, id->sent_enh ?
			    "revision 2 Reply without the enhanced-setup bit "
			    "to an enhanced Request (RFC 6581 §10)" :
			    "enhanced Reply to an unenhanced Request "
			    "(RFC 6581 §10)");
		return;
	}
	if (!id->peer_enh) {
		cm_nego_plain(id);
		active_accepted(id);
		return;
	}
	cm_local(id, &l);
	uiw_mpa2_reply(&l, &id->sent_v2, &id->peer_v2, &id->nego);
	if (id->nego.err == UIW_E_MPA_INVALID_FRAME) {
		active_fail(id, -EPROTO, id->nego.why);
		return;
	}
	if (id->nego.err != UIW_OK) {
		active_terminate(id, id->nego.err,
				 id->nego.err == UIW_E_MPA_INSUFFICIENT_IRD ?
				 -ENOBUFS : -ENOPROTOOPT, id->nego.why);
		return;
	}
	active_accepted(id);
}

static void active_send_request(struct uiw_cm_id *id)
{
	int r;

	if (id->state != S_SEND_REQ) {
		struct uiw_mpa2_local l;

		fill_names(id);
		/* RFC 6581 §6: revision 2 with the IRD/ORD field. */
		id->sent_enh = id->rev >= 2;
		if (id->sent_enh) {
			cm_local(id, &l);
			uiw_mpa2_request(&l, &id->sent_v2);
		}
		frame_prepare(id, false, our_flags(id), id->rev,
			      id->sent_enh ? &id->sent_v2 : NULL, id->pd,
			      id->pd_len);
		id->state = S_SEND_REQ;
	}
	r = frame_write(id);
	if (r < 0) {
		active_fail(id, r, "cannot send the MPA Request");
		return;
	}
	if (r == 0) {
		uiw_rt_watch_set(id->watch, EPOLLOUT);
		return;
	}
	id->state = S_WAIT_REP;
	uiw_rt_watch_set(id->watch, EPOLLIN);
}

static void active_event(void *arg, uint32_t events)
{
	struct uiw_cm_id *id = arg;
	int e = 0;
	socklen_t len = sizeof(e);

	switch (id->state) {
	case S_CONNECTING:
		if (getsockopt(id->fd, SOL_SOCKET, SO_ERROR, &e, &len) < 0)
			e = errno;
		if (!e && (events & (EPOLLERR | EPOLLHUP)))
			e = ECONNRESET;    /* never leave a hung-up fd armed */
		if (e) {
			active_fail(id, -e, "TCP connect failed");
			return;
		}
		if (!(events & EPOLLOUT))
			return;
		active_send_request(id);
		return;
	case S_SEND_REQ:
		if (events & (EPOLLERR | EPOLLHUP)) {
			if (getsockopt(id->fd, SOL_SOCKET, SO_ERROR, &e,
				       &len) < 0 || !e)
				e = ECONNRESET;
			active_fail(id, -e, "connection lost");
			return;
		}
		active_send_request(id);
		return;
	case S_WAIT_REP:
		active_reply(id);
		return;
	default:
		return;
	}
}

static void active_timeout(void *arg)
{
	struct uiw_cm_id *id = arg;

	/* RFC 5044 §7.1.2 rule 10: a timeout on the startup frames. */
	active_fail(id, -ETIMEDOUT, "MPA startup timed out");
}

struct cm_op {
	struct uiw_cm_id *id;
	struct uiw_qp *qp;
	const struct uiw_conn_param *param;
	const struct sockaddr *sa;
	socklen_t salen;
	const void *pd;
	uint16_t pd_len;
	int ival;
	struct sockaddr_storage *ss;
	struct uiw_cm_listener_stats *stats;
	const char *why;
	char buf[160];
};

/* Returns a failed op's result with its reason for uiw_last_error. */
static int op_error(const struct cm_op *op, int ret, const char *what)
{
	return uiw_error(-ret, "cm: %s: %s", what,
			 op->why ? op->why : strerror(-ret));
}

static int free_op(void *arg)
{
	id_free(arg);
	return 0;
}

static int connect_op(void *arg)
{
	struct cm_op *op = arg;
	struct uiw_cm_id *id = op->id;

	uiw_rt_timer_init(&id->timer, active_timeout, id);
	id->watch = uiw_rt_watch_add(id->rt, id->fd, EPOLLOUT, active_event,
				     id);
	if (!id->watch) {
		op->why = "cannot watch the socket";
		return -errno;
	}
	id->state = S_CONNECTING;
	uiw_rt_timer_start(id->rt, &id->timer, (unsigned)id->timeout_ms);
	if (connect(id->fd, (const struct sockaddr *)&id->peer,
		    sa_len(&id->peer)) == 0) {
		active_send_request(id);
	} else if (errno != EINPROGRESS && errno != EINTR) {
		/* Refused at once (loopback): reported as an event, like a
		 * refusal that comes later. */
		active_fail(id, -errno, "TCP connect failed");
	}
	return 0;
}

int uiw_cm_connect(struct uiw_cm_channel *ch, struct uiw_qp *qp,
		   const struct sockaddr *dst, socklen_t dstlen,
		   const struct uiw_conn_param *param, struct uiw_cm_id **idp)
{
	struct cm_op op = { 0 };
	struct uiw_cm_id *id;
	int ret;

	if (!ch || !qp || !idp)
		return uiw_error(EINVAL, "cm: connect needs a channel, a QP "
				 "and an id pointer");
	ret = check_addr(dst, dstlen);
	if (ret)
		return ret;
	ret = check_param(param, ch->dev, true);
	if (ret)
		return ret;
	if (uiw_qp_device(qp) != ch->dev)
		return uiw_error(EINVAL, "cm: qp %u is not on the channel's "
				 "device", uiw_qp_num(qp));
	if (uiw_qp_state(qp) != UIW_QPS_IDLE)
		return uiw_error(EINVAL, "cm: qp %u is %s, not Idle",
				 uiw_qp_num(qp),
				 uiw_qp_state_str(uiw_qp_state(qp)));
	id = id_new(ch, CM_ACTIVE);
	if (!id)
		return uiw_error(ENOMEM, "cm: out of memory");
	if (!claim_qp(id, qp)) {
		id_free(id);
		return uiw_error(EBUSY, "cm: qp %u already has a connection "
				 "id", uiw_qp_num(qp));
	}
	take_param(id, param);
	sa_copy(&id->peer, dst);
	id->have_peer = true;
	id->fd = socket(dst->sa_family, SOCK_STREAM | SOCK_NONBLOCK |
			SOCK_CLOEXEC, 0);
	if (id->fd < 0) {
		ret = -errno;
		id_free(id);
		return uiw_error(-ret, "cm: socket: %s", strerror(-ret));
	}
	op.id = id;
	ret = uiw_rt_call(ch->rt, connect_op, &op);
	if (ret < 0) {
		uiw_rt_call(ch->rt, free_op, id);
		return op_error(&op, ret, "connect");
	}
	*idp = id;
	return 0;
}

/* ---- Responder ------------------------------------------------------ */

static void passive_event(void *arg, uint32_t events);

/* A complete Request is in: check it and announce it. */
static void passive_request(struct uiw_cm_id *id)
{
	struct uiw_cm_id *l = id->listener;
	const char *why = NULL;
	char c;
	ssize_t r = frame_read(id, false, &why);

	if (r == 0)
		return;
	if (r < 0) {
		passive_fail(id, (int)r, why);
		return;
	}
	/* RFC 5044 §7.1.1 Rev: close if we cannot interoperate.  RFC 6581
	 * §6: "A host accepting MPA connections MUST continue to accept MPA
	 * Requests with version one"; a listener limited to revision 1
	 * closes on revision 2 (RFC 6581 §10, an unenhanced responder). */
	if (id->peer_rev < CM_MPA_REV_MIN || id->peer_rev > l->max_rev) {
		passive_fail(id, -EPROTO, "MPA Request of a revision we do "
			     "not speak");
		return;
	}
	if (!frame_take_v2(id)) {
		passive_fail(id, -EPROTO, "MPA Request with the enhanced-setup"
			     " bit and less than 4 octets of private data "
			     "(RFC 6581 §6)");
		return;
	}
	/* RFC 5044 §7.1.2 rule 2: the initiator waits for our Reply; an
	 * octet after its Request is a protocol error. */
	r = recv(id->fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
	if (r > 0) {
		passive_fail(id, -EPROTO, "octets after the MPA Request");
		return;
	}
	if (r == 0) {
		passive_fail(id, -ECONNRESET, "connection closed after the "
			     "MPA Request");
		return;
	}
	/* Announced: no longer counts against the listener's bound. */
	uiw_rt_timer_stop(id->rt, &id->timer);
	await_remove(l, id);
	id->state = S_REQ_RECEIVED;
	ev_raise(id, &id->ev_req, UIW_CM_EVENT_CONNECT_REQUEST, 0, true);
}

/* After the Reply of an accept is out: Full Operation, ESTABLISHED.
 * Returns 0 or -errno (the connection is then reset). */
static int passive_established(struct uiw_cm_id *id)
{
	int ret = go_full_operation(id);

	if (ret < 0) {
		struct linger lg = { .l_onoff = 1, .l_linger = 0 };

		setsockopt(id->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
		id_closed(id, ret);
		return ret;
	}
	ev_raise(id, &id->ev_conn, UIW_CM_EVENT_ESTABLISHED, 0, false);
	return 0;
}

/* Sends the pending Reply; 0 (done or waiting for EPOLLOUT) or -errno. */
static int passive_send_reply(struct uiw_cm_id *id)
{
	int r = frame_write(id);

	if (r < 0)
		return r;
	if (r == 0) {
		uiw_rt_watch_set(id->watch, EPOLLIN | EPOLLOUT);
		return 0;
	}
	if (id->state == S_SEND_REJ) {
		/* RFC 5044 §7.1.2 rule 2: the Reply with R ends MPA; we
		 * close TCP (close() still delivers the queued Reply). */
		id_closed(id, -ECONNREFUSED);
		return 0;
	}
	return passive_established(id);
}

static void passive_event(void *arg, uint32_t events)
{
	struct uiw_cm_id *id = arg;
	int r;

	switch (id->state) {
	case S_WAIT_REQ:
		passive_request(id);
		return;
	case S_REQ_RECEIVED:
	case S_SEND_REP:
	case S_SEND_REJ:
		if (events & (EPOLLIN | EPOLLERR | EPOLLHUP)) {
			char c;
			ssize_t n = recv(id->fd, &c, 1,
					 MSG_PEEK | MSG_DONTWAIT);

			if (n > 0) {
				passive_fail(id, -EPROTO, "octets before "
					     "our MPA Reply");
				return;
			}
			if (n == 0) {
				passive_fail(id, -ECONNRESET, "connection "
					     "closed before our MPA Reply");
				return;
			}
			if (errno != EAGAIN && errno != EWOULDBLOCK &&
			    errno != EINTR) {
				passive_fail(id, -errno, strerror(errno));
				return;
			}
		}
		if ((events & EPOLLOUT) &&
		    (id->state == S_SEND_REP || id->state == S_SEND_REJ)) {
			r = passive_send_reply(id);
			if (r < 0 && id->state != S_CLOSED)
				passive_fail(id, r,
					     "cannot send the MPA Reply");
			else if (r < 0)
				ev_raise(id, &id->ev_conn,
					 UIW_CM_EVENT_CONNECT_ERROR, r, false);
		}
		return;
	default:
		return;
	}
}

static void passive_timeout(void *arg)
{
	struct uiw_cm_id *id = arg;

	/* RFC 5044 §7.1.2 rules 8 and 10: a responder times out waiting
	 * for the Request (or for its Reply to leave). */
	passive_fail(id, -ETIMEDOUT, "MPA startup timed out");
}

/* ---- Listener ------------------------------------------------------- */

static void listener_event(void *arg, uint32_t events);

static void listener_resume(struct uiw_cm_id *l)
{
	if (l->paused && !l->timer.armed) {
		l->paused = false;
		uiw_rt_watch_set(l->watch, EPOLLIN);
	}
}

static void listener_pause(struct uiw_cm_id *l)
{
	l->paused = true;
	uiw_rt_watch_set(l->watch, 0);
}

static void listener_retry(void *arg)
{
	listener_resume(arg);
}

static void listener_accept_one(struct uiw_cm_id *l, int fd)
{
	struct uiw_cm_id *c = id_new(l->ch, CM_PASSIVE);

	if (!c) {
		close(fd);
		return;
	}
	c->fd = fd;
	c->state = S_WAIT_REQ;
	fill_names(c);
	uiw_rt_timer_init(&c->timer, passive_timeout, c);
	c->watch = uiw_rt_watch_add(c->rt, fd, EPOLLIN, passive_event, c);
	if (!c->watch) {
		id_free(c);
		return;
	}
	c->listener = l;
	c->sib_next = l->children;
	if (l->children)
		l->children->sib_prev = c;
	l->children = c;
	c->await_prev = l->await_tail;
	if (l->await_tail)
		l->await_tail->await_next = c;
	else
		l->await_head = c;
	l->await_tail = c;
	l->awaiting++;
	l->accepted++;
	/* RFC 5044 §7.1.2 rule 10: bounded wait for the Request. */
	uiw_rt_timer_start(c->rt, &c->timer, (unsigned)l->startup_ms);
}

/* Closes the oldest connection that still awaits its Request, unless
 * its Request has arrived meanwhile (then it is announced instead, or
 * refused by the usual rules).  Either way one connection less awaits.
 * False when none awaits. */
static bool listener_shed_oldest(struct uiw_cm_id *l)
{
	struct uiw_cm_id *c = l->await_head;
	unsigned before = l->awaiting;

	if (!c)
		return false;
	passive_request(c);
	if (l->awaiting < before)
		return true;
	l->shed++;
	passive_fail(c, -ETIMEDOUT, "shed: the oldest connection still "
		     "awaiting its MPA Request, to make room for a new one");
	return true;
}

/* RFC 5044 §7.1.2 rules 8 and 10 ask for a timeout on the startup
 * frames against denial of service; a timeout alone lets peers that
 * open connections faster than it expires fill every slot.  So the
 * listener never stops accepting (the kernel's queue never fills and a
 * client that sends its Request at once is always served): at the
 * bound, the oldest connection still awaiting its Request makes room. */
static void listener_event(void *arg, uint32_t events)
{
	struct uiw_cm_id *l = arg;
	int i;

	for (i = 0; i < CM_ACCEPT_BUDGET; i++) {
		int fd;

		fd = accept4(l->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED ||
			    errno == EPROTO)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return;
			/* Out of fds: an idle connection gives its fd to a
			 * new one. */
			if ((errno == EMFILE || errno == ENFILE) &&
			    listener_shed_oldest(l))
				continue;
			/* Out of fds or memory with nothing to shed: retry a
			 * little later rather than spin on a level-triggered
			 * listener. */
			UIW_DBG(1, "cm: accept: %s", strerror(errno));
			listener_pause(l);
			uiw_rt_timer_start(l->rt, &l->timer,
					   CM_ACCEPT_RETRY_MS);
			return;
		}
		/* Room for it: only now that there is a new connection. */
		while (l->awaiting >= l->max_awaiting &&
		       listener_shed_oldest(l))
			;
		listener_accept_one(l, fd);
	}
}

static int listen_op(void *arg)
{
	struct cm_op *op = arg;
	struct uiw_cm_id *l = op->id;

	uiw_rt_timer_init(&l->timer, listener_retry, l);
	l->watch = uiw_rt_watch_add(l->rt, l->fd, EPOLLIN, listener_event, l);
	if (!l->watch) {
		op->why = "cannot watch the socket";
		return -errno;
	}
	l->state = S_LISTENING;
	return 0;
}

int uiw_cm_listen_ex(struct uiw_cm_channel *ch, const struct sockaddr *addr,
		     socklen_t addrlen, const struct uiw_listen_param *param,
		     struct uiw_cm_id **listen_id)
{
	static const struct uiw_listen_param none;
	struct cm_op op = { 0 };
	struct uiw_cm_id *l;
	socklen_t len;
	int one = 1, ret, backlog;
	char a[64];

	if (!ch || !listen_id)
		return uiw_error(EINVAL, "cm: listen needs a channel and an "
				 "id pointer");
	if (!param)
		param = &none;
	ret = check_llp(param->llp);
	if (ret)
		return ret;
	ret = check_addr(addr, addrlen);
	if (ret)
		return ret;
	backlog = param->backlog;
	l = id_new(ch, CM_LISTEN);
	if (!l)
		return uiw_error(ENOMEM, "cm: out of memory");
	l->max_awaiting = backlog > CM_AWAITING_DEFAULT ? (unsigned)backlog :
			  CM_AWAITING_DEFAULT;
	l->max_rev = CM_MPA_REV_MAX;
	l->startup_ms = CM_TIMEOUT_DEFAULT_MS;
	sa_copy(&l->local, addr);
	l->fd = socket(addr->sa_family, SOCK_STREAM | SOCK_NONBLOCK |
		       SOCK_CLOEXEC, 0);
	if (l->fd < 0) {
		ret = -errno;
		id_free(l);
		return uiw_error(-ret, "cm: socket: %s", strerror(-ret));
	}
	setsockopt(l->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(l->fd, (const struct sockaddr *)&l->local,
		 sa_len(&l->local)) < 0 ||
	    listen(l->fd, backlog > 0 ? backlog : CM_BACKLOG_DEFAULT) < 0) {
		ret = -errno;
		sa_str(&l->local, a, sizeof(a));
		id_free(l);
		return uiw_error(-ret, "cm: listen on %s: %s", a,
				 strerror(-ret));
	}
	len = sizeof(l->local);
	getsockname(l->fd, (struct sockaddr *)&l->local, &len);
	l->have_local = true;
	op.id = l;
	ret = uiw_rt_call(ch->rt, listen_op, &op);
	if (ret < 0) {
		uiw_rt_call(ch->rt, free_op, l);
		return op_error(&op, ret, "listen");
	}
	UIW_DBG(1, "cm: listening on %s", sa_str(&l->local, a, sizeof(a)));
	*listen_id = l;
	return 0;
}

int uiw_cm_listen(struct uiw_cm_channel *ch, const struct sockaddr *addr,
		  socklen_t addrlen, int backlog, struct uiw_cm_id **listen_id)
{
	struct uiw_listen_param p = { .llp = UIW_LLP_TCP, .backlog = backlog };

	return uiw_cm_listen_ex(ch, addr, addrlen, &p, listen_id);
}

/* Stops a listener.  Children the application has not seen go with it;
 * the others stay with the application. */
static void listener_stop(struct uiw_cm_id *l)
{
	struct uiw_cm_id *c, *next;

	uiw_rt_timer_stop(l->rt, &l->timer);
	close_fd(l);
	for (c = l->children; c; c = next) {
		bool unseen;

		next = c->sib_next;
		pthread_mutex_lock(&c->ch->lock);
		unseen = c->state == S_WAIT_REQ ||
			 ev_unqueue_locked(c->ch, &c->ev_req);
		pthread_mutex_unlock(&c->ch->lock);
		child_unlink(c);
		if (unseen)
			id_free(c);
	}
	l->state = S_CLOSED;
}

static int set_timeout_op(void *arg)
{
	struct cm_op *op = arg;

	op->id->startup_ms = op->ival ? op->ival : CM_TIMEOUT_DEFAULT_MS;
	return 0;
}

int uiw_cm_set_startup_timeout(struct uiw_cm_id *id, int timeout_ms)
{
	struct cm_op op = { .id = id, .ival = timeout_ms };

	if (!id || id->kind != CM_LISTEN)
		return uiw_error(EINVAL, "cm: the startup timeout is set on "
				 "a listener (connect and accept take it in "
				 "uiw_conn_param)");
	if (timeout_ms < 0)
		return uiw_error(EINVAL, "cm: negative timeout %d",
				 timeout_ms);
	return uiw_rt_call(id->rt, set_timeout_op, &op);
}

static int set_awaiting_op(void *arg)
{
	struct cm_op *op = arg;
	struct uiw_cm_id *l = op->id;

	l->max_awaiting = (unsigned)op->ival;
	/* Lowered below what awaits now: the oldest go at once. */
	while (l->awaiting > l->max_awaiting && listener_shed_oldest(l))
		;
	return 0;
}

int uiw_cm_set_max_awaiting(struct uiw_cm_id *id, unsigned max)
{
	struct cm_op op = { .id = id };

	if (!id || id->kind != CM_LISTEN)
		return uiw_error(EINVAL, "cm: the bound on connections "
				 "awaiting their MPA Request is set on a "
				 "listener");
	if (max > INT_MAX)
		return uiw_error(EINVAL, "cm: bound %u too large", max);
	op.ival = max ? (int)max : CM_AWAITING_DEFAULT;
	return uiw_rt_call(id->rt, set_awaiting_op, &op);
}

static int stats_op(void *arg)
{
	struct cm_op *op = arg;
	struct uiw_cm_id *l = op->id;
	struct uiw_cm_listener_stats *st = op->stats;

	st->awaiting = l->awaiting;
	st->max_awaiting = l->max_awaiting;
	st->accepted = l->accepted;
	st->shed = l->shed;
	pthread_mutex_lock(&l->ch->lock);
	st->channel_ids = l->ch->nids;
	pthread_mutex_unlock(&l->ch->lock);
	return 0;
}

int uiw_cm_listener_stats(struct uiw_cm_id *id,
			  struct uiw_cm_listener_stats *st)
{
	struct cm_op op = { .id = id, .stats = st };

	if (!id || id->kind != CM_LISTEN || !st)
		return uiw_error(EINVAL, "cm: listener stats need a listener "
				 "and a place for them");
	return uiw_rt_call(id->rt, stats_op, &op);
}

static int set_rev_op(void *arg)
{
	struct cm_op *op = arg;

	op->id->max_rev = (uint8_t)op->ival;
	return 0;
}

int uiw_cm_set_max_mpa_rev(struct uiw_cm_id *id, uint8_t rev)
{
	struct cm_op op = { .id = id, .ival = rev };

	if (!id || id->kind != CM_LISTEN)
		return uiw_error(EINVAL, "cm: the highest MPA revision is set "
				 "on a listener");
	if (rev < CM_MPA_REV_MIN || rev > CM_MPA_REV_MAX)
		return uiw_error(EINVAL, "cm: MPA revision %u (1 or 2)", rev);
	return uiw_rt_call(id->rt, set_rev_op, &op);
}

/* ---- Accept and reject ---------------------------------------------- */

static int accept_op(void *arg)
{
	struct cm_op *op = arg;
	struct uiw_cm_id *id = op->id;
	int ret;

	if (id->state != S_REQ_RECEIVED) {
		op->why = id->error ? strerror(-id->error) :
			  "not a pending connection request";
		return id->error ? id->error : -EINVAL;
	}
	/* RFC 6581 §9: the IRD/ORD field counts in the 512 octets. */
	if (id->peer_enh && op->param &&
	    op->param->private_data_len > UIW_MPA_V2_PRIVATE_DATA_MAX) {
		op->why = "the Reply to an enhanced Request (MPA revision 2) "
			  "takes at most 508 octets of private data besides "
			  "its IRD/ORD field (RFC 6581 §9)";
		return -EINVAL;
	}
	if (!claim_qp(id, op->qp)) {
		op->why = "the QP already has a connection id";
		return -EBUSY;
	}
	take_param(id, op->param);
	if (id->peer_enh) {
		struct uiw_mpa2_local l;

		cm_local(id, &l);
		uiw_mpa2_respond(&l, &id->peer_v2, &id->nego);
	} else {
		cm_nego_plain(id);
	}
	if (id->nego.err != UIW_OK) {
		/* RFC 6581 §9.1: a strict responder rejects, "and specify
		 * the required ORD in the MPA Reject Frame responder ORD". */
		snprintf(op->buf, sizeof(op->buf), "the initiator's IRD %u is "
			 "below the ORD %u this side requires (RFC 6581 "
			 "§9.1): rejected", id->peer_v2.ird,
			 id->nego.field.ord);
		op->why = op->buf;
		release_qp(id);
		id->qp = NULL;
		frame_prepare(id, true, UIW_MPA_F_R, id->peer_rev,
			      &id->nego.field, id->pd, id->pd_len);
		id->state = S_SEND_REJ;
		uiw_rt_timer_init(&id->timer, passive_timeout, id);
		uiw_rt_timer_start(id->rt, &id->timer, CM_TIMEOUT_DEFAULT_MS);
		ret = passive_send_reply(id);
		if (ret < 0 && id->state != S_CLOSED)
			id_closed(id, ret);
		return -ENOBUFS;
	}
	/* RFC 5044 §7.1.2 rule 2: accept with R clear; RFC 6581 §10: in the
	 * Request's revision and format. */
	frame_prepare(id, true, our_flags(id), id->peer_rev,
		      id->peer_enh ? &id->nego.field : NULL, id->pd,
		      id->pd_len);
	id->state = S_SEND_REP;
	uiw_rt_timer_init(&id->timer, passive_timeout, id);
	uiw_rt_timer_start(id->rt, &id->timer, (unsigned)id->timeout_ms);
	ret = passive_send_reply(id);
	if (ret < 0) {
		op->why = id->state == S_CLOSED ? "cannot attach the QP" :
			  "cannot send the MPA Reply";
		if (id->state != S_CLOSED)
			id_closed(id, ret);
	}
	return ret;
}

int uiw_cm_accept(struct uiw_cm_id *id, struct uiw_qp *qp,
		  const struct uiw_conn_param *param)
{
	struct cm_op op = { .id = id, .qp = qp, .param = param };
	int ret;

	if (!id || !qp)
		return uiw_error(EINVAL, "cm: accept needs an id and a QP");
	if (id->kind != CM_PASSIVE)
		return uiw_error(EINVAL, "cm: accept on an id that is not a "
				 "connection request");
	ret = check_param(param, id->ch->dev, false);
	if (ret)
		return ret;
	if (uiw_qp_device(qp) != id->ch->dev)
		return uiw_error(EINVAL, "cm: qp %u is not on the channel's "
				 "device", uiw_qp_num(qp));
	if (uiw_qp_state(qp) != UIW_QPS_IDLE)
		return uiw_error(EINVAL, "cm: qp %u is %s, not Idle",
				 uiw_qp_num(qp),
				 uiw_qp_state_str(uiw_qp_state(qp)));
	ret = uiw_rt_call(id->rt, accept_op, &op);
	if (ret < 0)
		return op_error(&op, ret, "accept");
	return 0;
}

static int reject_op(void *arg)
{
	struct cm_op *op = arg;
	struct uiw_cm_id *id = op->id;
	int ret;

	if (id->state != S_REQ_RECEIVED) {
		op->why = id->error ? strerror(-id->error) :
			  "not a pending connection request";
		return id->error ? id->error : -EINVAL;
	}
	/* RFC 5044 §7.1.2 rule 2: a Reply with R set, with the ULP's
	 * private data; then MPA is over and we close TCP.  RFC 6581 §10:
	 * an enhanced Request gets an enhanced Reply, here with what this
	 * device could give (its maximum IRD and ORD). */
	if (id->peer_enh) {
		uint32_t max_ord, max_ird = dev_max_ird(id->ch->dev, &max_ord);
		struct uiw_mpa2_local l = {
			.ird = max_ird, .ord = max_ord, .max_ird = max_ird,
			.rtr = UIW_RTR_ALL,
		};

		if (op->pd_len > UIW_MPA_V2_PRIVATE_DATA_MAX) {
			op->why = "the Reply to an enhanced Request (MPA "
				  "revision 2) takes at most 508 octets of "
				  "private data besides its IRD/ORD field "
				  "(RFC 6581 §9)";
			return -EINVAL;
		}
		uiw_mpa2_respond(&l, &id->peer_v2, &id->nego);
	}
	frame_prepare(id, true, UIW_MPA_F_R, id->peer_rev,
		      id->peer_enh ? &id->nego.field : NULL, op->pd,
		      op->pd_len);
	id->state = S_SEND_REJ;
	uiw_rt_timer_init(&id->timer, passive_timeout, id);
	uiw_rt_timer_start(id->rt, &id->timer, CM_TIMEOUT_DEFAULT_MS);
	ret = passive_send_reply(id);
	if (ret < 0) {
		op->why = "cannot send the MPA Reply";
		id_closed(id, ret);
	}
	return ret;
}

int uiw_cm_reject(struct uiw_cm_id *id, const void *private_data,
		  uint16_t private_data_len)
{
	struct cm_op op = { .id = id, .pd = private_data,
			    .pd_len = private_data_len };
	int ret;

	if (!id || id->kind != CM_PASSIVE)
		return uiw_error(EINVAL, "cm: reject on an id that is not a "
				 "connection request");
	if (private_data_len > UIW_MPA_PRIVATE_DATA_MAX)
		return uiw_error(EINVAL, "cm: private data of %u octets "
				 "(at most %u)", private_data_len,
				 UIW_MPA_PRIVATE_DATA_MAX);
	if (private_data_len && !private_data)
		return uiw_error(EINVAL, "cm: private_data is NULL");
	ret = uiw_rt_call(id->rt, reject_op, &op);
	if (ret < 0)
		return op_error(&op, ret, "reject");
	return 0;
}

/* ---- Disconnect and destroy ----------------------------------------- */

static int disconnect_op(void *arg)
{
	struct cm_op *op = arg;
	struct uiw_cm_id *id = op->id;
	enum uiw_qp_state s;

	if (id->state == S_CLOSED && id->tcp)
		return 0;       /* already disconnected */
	if (id->state != S_ESTABLISHED) {
		op->why = "not connected";
		return -ENOTCONN;
	}
	/* RFC 5040 §6: RTS -> Closing; the engine lets queued work go
	 * out and asks the LLP for an orderly close. */
	if (uiw_qp_disconnect(id->qp) == 0)
		return 0;
	s = uiw_qp_state(id->qp);
	if (s != UIW_QPS_CLOSING && s != UIW_QPS_TERMINATE &&
	    !uiw_tcp_done(id->tcp))
		uiw_tcp_abort(id->tcp);     /* raises DISCONNECTED */
	return 0;
}

int uiw_cm_disconnect(struct uiw_cm_id *id)
{
	struct cm_op op = { .id = id };
	int ret;

	if (!id || id->kind == CM_LISTEN)
		return uiw_error(EINVAL, "cm: disconnect needs a connection "
				 "id");
	ret = uiw_rt_call(id->rt, disconnect_op, &op);
	if (ret < 0)
		return op_error(&op, ret, "disconnect");
	return 0;
}

static int destroy_op(void *arg)
{
	struct uiw_cm_id *id = arg;

	if (id->kind == CM_LISTEN)
		listener_stop(id);
	else
		child_unlink(id);
	/* A connection still up is reset (uiw_tcp_free detaches the QP). */
	id_free(id);
	return 0;
}

int uiw_cm_destroy_id(struct uiw_cm_id *id)
{
	if (!id)
		return uiw_error(EINVAL, "cm: no id");
	return uiw_rt_call(id->rt, destroy_op, id);
}

/* ---- Accessors ------------------------------------------------------ */

struct uiw_qp *uiw_cm_id_qp(struct uiw_cm_id *id)
{
	return id ? id->qp : NULL;
}

void *uiw_cm_id_context(struct uiw_cm_id *id)
{
	return id ? id->context : NULL;
}

void uiw_cm_id_set_context(struct uiw_cm_id *id, void *ctx)
{
	if (id)
		id->context = ctx;
}

static int addr_op(void *arg)
{
	struct cm_op *op = arg;
	struct uiw_cm_id *id = op->id;
	bool local = op->ival;

	if (local ? !id->have_local : !id->have_peer)
		return -ENOTCONN;
	memset(op->ss, 0, sizeof(*op->ss));
	memcpy(op->ss, local ? &id->local : &id->peer,
	       sizeof(struct sockaddr_storage));
	return 0;
}

static int get_addr(struct uiw_cm_id *id, struct sockaddr_storage *ss,
		    bool local)
{
	struct cm_op op = { .id = id, .ss = ss, .ival = local };
	int ret;

	if (!id || !ss)
		return uiw_error(EINVAL, "cm: address of %s",
				 id ? "nothing (ss is NULL)" : "no id");
	ret = uiw_rt_call(id->rt, addr_op, &op);
	if (ret < 0)
		return uiw_error(-ret, "cm: the id has no %s address yet",
				 local ? "local" : "peer");
	return 0;
}

int uiw_cm_local_addr(struct uiw_cm_id *id, struct sockaddr_storage *ss)
{
	return get_addr(id, ss, true);
}

int uiw_cm_peer_addr(struct uiw_cm_id *id, struct sockaddr_storage *ss)
{
	return get_addr(id, ss, false);
}

int uiw_resolve(const char *host, const char *port, int passive,
		struct sockaddr_storage *ss, socklen_t *len)
{
	struct addrinfo hints = { 0 }, *res = NULL;
	int r;

	if (!ss || !len || (!host && !passive))
		return uiw_error(EINVAL, "cm: resolve needs a host (or "
				 "passive), ss and len");
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_protocol = IPPROTO_TCP;
	if (passive)
		hints.ai_flags |= AI_PASSIVE;
	r = getaddrinfo(host, port, &hints, &res);
	if (r != 0) {
		int e;

		switch (r) {
		case EAI_SYSTEM: e = errno ? errno : EIO; break;
		case EAI_MEMORY: e = ENOMEM; break;
		case EAI_AGAIN:  e = EAGAIN; break;
		case EAI_NONAME:
#ifdef EAI_NODATA
		case EAI_NODATA:
#endif
			e = ENOENT; break;
		default:         e = EINVAL; break;
		}
		return uiw_error(e, "cm: cannot resolve %s port %s: %s",
				 host ? host : "(any)", port ? port : "0",
				 gai_strerror(r));
	}
	if (res->ai_addrlen > sizeof(*ss)) {
		freeaddrinfo(res);
		return uiw_error(EINVAL, "cm: address too long");
	}
	memset(ss, 0, sizeof(*ss));
	memcpy(ss, res->ai_addr, res->ai_addrlen);
	*len = res->ai_addrlen;
	freeaddrinfo(res);
	return 0;
}
