/*
 * Event channels and their events.
 *
 * A channel's fd (struct rdma_event_channel.fd, which programs poll) is
 * an epoll fd over two sources: the eventfd of our own queue, readable
 * while it holds an event, and the fd of the uiw_cm_channel its ids'
 * connections report on (plus, for ids migrated here, the uiw channels
 * they were made on).  rdma_get_cm_event first moves every uiw_cm event
 * into the queue of the channel its id is on, mapped as the kernel's
 * iWARP connection manager maps its events; events made here (address
 * and route resolution) go into the queue directly.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "cma.h"

pthread_mutex_t cma_lock = PTHREAD_MUTEX_INITIALIZER;

struct cma_event {
	struct rdma_cm_event ev;      /* what the application sees */
	struct cma_event *next;
	struct cma_id *id;            /* ev.id's */
	struct cma_id *listen;        /* ev.listen_id's */
	/* Delivered by rdma_get_cm_event, to taker, and not acknowledged
	 * yet: on the list of delivered events. */
	bool taken;
	pthread_t taker;
	struct cma_event *tnext;
	uint8_t pd[UIW_MPA_PRIVATE_DATA_MAX];
};

/* Events delivered and not acknowledged, and a signal at each
 * acknowledgement (cma_events_wait_taken). */
static struct cma_event *delivered;
static pthread_cond_t taken_cond = PTHREAD_COND_INITIALIZER;

int cma_err(int e)
{
	errno = e;
	return -1;
}

int cma_uiw_err(int ret, const char *what)
{
	uiw_compat_log("%s: %s", what, uiw_last_error());
	return cma_err(-ret);
}

/* ---- Channels ------------------------------------------------------ */

static struct cma_channel *channels;
/* Channels that went, kept for the next ones: a channel's memory is
 * never handed back to the allocator, so that a thread that calls
 * rdma_get_cm_event on a channel destroyed under it (rping's CM thread
 * as its main thread ends) finds it shut, never freed memory.  As an fd
 * number is, a channel's address may be used again by a later one. */
static struct cma_channel *spare;

static int epoll_watch(int epfd, int fd)
{
	struct epoll_event ev = { .events = EPOLLIN };

	return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev);
}

struct cma_channel *cma_channel_new(void)
{
	struct uiw_device *dev = uiw_compat_device();
	struct cma_channel *c;
	int e;

	if (!dev)
		return NULL;
	c = spare;
	if (c)
		spare = c->next;
	else
		c = malloc(sizeof(*c));
	if (!c) {
		errno = ENOMEM;
		return NULL;
	}
	memset(c, 0, sizeof(*c));
	c->ch.fd = epoll_create1(EPOLL_CLOEXEC);
	c->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	c->uch = uiw_cm_channel_create(dev);
	if (c->ch.fd < 0 || c->efd < 0 || !c->uch ||
	    epoll_watch(c->ch.fd, c->efd) < 0 ||
	    epoll_watch(c->ch.fd, uiw_cm_channel_fd(c->uch)) < 0) {
		e = errno ? errno : ENOMEM;
		uiw_compat_log("rdma_create_event_channel: %s%s%s",
			       strerror(e), c->uch ? "" : ": ",
			       c->uch ? "" : uiw_last_error());
		if (c->uch)
			uiw_cm_channel_destroy(c->uch);
		if (c->efd >= 0)
			close(c->efd);
		if (c->ch.fd >= 0)
			close(c->ch.fd);
		c->next = spare;
		spare = c;
		errno = e;
		return NULL;
	}
	c->next = channels;
	channels = c;
	return c;
}

/* What the channel holds goes; the channel stays shut among the
 * spares. */
static void channel_release(struct cma_channel *c)
{
	struct cma_channel **pp;
	struct cma_event *e, *next;

	for (pp = &channels; *pp; pp = &(*pp)->next) {
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	}
	for (e = c->head; e; e = next) {
		next = e->next;
		free(e);
	}
	uiw_cm_channel_destroy(c->uch);
	close(c->efd);
	close(c->ch.fd);
	free(c->feeds);
	c->uch = NULL;
	c->efd = c->ch.fd = -1;
	c->head = c->tail = NULL;
	c->feeds = NULL;
	c->nfeeds = 0;
	c->released = true;
	c->next = spare;
	spare = c;
}

/* The channel serves no more calls (rdma-core 44 behaviour: its fd is
 * closed, a read then fails with EBADF).  A caller already waiting in
 * rdma_get_cm_event is not woken, as a read(2) waiting on an fd closed
 * under it is not; what it waits on stays until it leaves (a signal or
 * a cancellation), as what the ids on the channel need stays until the
 * last of them is destroyed.  cma_lock held. */
static void channel_shut(struct cma_channel *c)
{
	c->shut = true;
	/* once: a late caller (EBADF) leaves a released channel too */
	if (!c->users && !c->waiters && !c->released)
		channel_release(c);
}

/* cma_lock held. */
void cma_channel_put(struct cma_channel *c)
{
	if (--c->users == 0 && c->closed)
		channel_shut(c);
}

struct rdma_event_channel *rdma_create_event_channel(void)
{
	struct cma_channel *c;

	pthread_mutex_lock(&cma_lock);
	c = cma_channel_new();
	pthread_mutex_unlock(&cma_lock);
	return c ? &c->ch : NULL;
}

/* rdma-core 44 behaviour: the channel is closed whatever still uses it
 * (channel_shut). */
void rdma_destroy_event_channel(struct rdma_event_channel *channel)
{
	struct cma_channel *c;

	if (!channel)
		return;
	c = cma_ch_of(channel);
	pthread_mutex_lock(&cma_lock);
	c->closed = true;
	if (c->users)
		uiw_compat_log("rdma_destroy_event_channel: %u ids still use "
			       "the channel; it goes with the last of them",
			       c->users);
	channel_shut(c);
	pthread_mutex_unlock(&cma_lock);
}

int cma_feed_add(struct cma_channel *to, struct cma_channel *src)
{
	struct cma_feed *f;

	if (to == src)
		return 0;
	for (unsigned i = 0; i < to->nfeeds; i++) {
		if (to->feeds[i].src == src) {
			to->feeds[i].refs++;
			return 0;
		}
	}
	f = realloc(to->feeds, (to->nfeeds + 1) * sizeof(*f));
	if (!f)
		return -ENOMEM;
	to->feeds = f;
	if (epoll_watch(to->ch.fd, uiw_cm_channel_fd(src->uch)) < 0)
		return -errno;
	f[to->nfeeds].src = src;
	f[to->nfeeds].refs = 1;
	to->nfeeds++;
	src->users++;
	return 0;
}

void cma_feed_del(struct cma_channel *to, struct cma_channel *src)
{
	for (unsigned i = 0; i < to->nfeeds; i++) {
		if (to->feeds[i].src != src || --to->feeds[i].refs)
			continue;
		epoll_ctl(to->ch.fd, EPOLL_CTL_DEL,
			  uiw_cm_channel_fd(src->uch), NULL);
		to->feeds[i] = to->feeds[--to->nfeeds];
		cma_channel_put(src);
		return;
	}
}

/* ---- The queue ----------------------------------------------------- */

static void efd_set(int fd, bool on)
{
	uint64_t v = 1;
	ssize_t r;

	do {
		r = on ? write(fd, &v, sizeof(v)) : read(fd, &v, sizeof(v));
	} while (r < 0 && errno == EINTR);
}

struct cma_event *cma_event_new(struct cma_id *c,
				enum rdma_cm_event_type type, int status)
{
	struct cma_event *e = calloc(1, sizeof(*e));

	if (!e)
		return NULL;
	e->ev.id = &c->id;
	e->ev.event = type;
	e->ev.status = status;
	e->id = c;
	c->events_out++;
	return e;
}

void cma_event_push(struct cma_channel *ch, struct cma_event *e)
{
	e->next = NULL;
	if (ch->tail)
		ch->tail->next = e;
	else
		ch->head = e;
	ch->tail = e;
	if (ch->head == e)
		efd_set(ch->efd, true);
}

static struct cma_event *event_pop(struct cma_channel *ch)
{
	struct cma_event *e = ch->head;

	if (!e)
		return NULL;
	ch->head = e->next;
	if (!ch->head) {
		ch->tail = NULL;
		efd_set(ch->efd, false);
	}
	return e;
}

int cma_event_local(struct cma_id *c, enum rdma_cm_event_type type,
		    int status)
{
	struct cma_event *e = cma_event_new(c, type, status);

	if (!e)
		return -ENOMEM;
	cma_event_push(cma_ch_of(c->id.channel), e);
	return 0;
}

/* An event is done with (acknowledged, or dropped before delivery). */
static void event_done(struct cma_event *e)
{
	struct cma_id *ids[2] = { e->id, e->listen };

	if (e->taken) {
		struct cma_event **pp;

		for (pp = &delivered; *pp != e; pp = &(*pp)->tnext)
			;
		*pp = e->tnext;
		pthread_cond_broadcast(&taken_cond);
	}

	/* rdma_get_request hands the request to the child (id->event): it
	 * must not be acknowledged twice */
	if (e->id->id.event == &e->ev)
		e->id->id.event = NULL;
	if (e->listen && e->listen->id.event == &e->ev)
		e->listen->id.event = NULL;

	for (int i = 0; i < 2; i++) {
		if (ids[i] && --ids[i]->events_out == 0 && ids[i]->destroyed)
			cma_id_free(ids[i]);
	}
	free(e);
}

void cma_event_done(struct rdma_cm_event *ev)
{
	event_done((struct cma_event *)ev);
}

void cma_events_wait_taken(struct cma_id *c)
{
	pthread_t self = pthread_self();
	struct cma_event *e;

	do {
		for (e = delivered; e; e = e->tnext)
			if ((e->id == c || e->listen == c) &&
			    !pthread_equal(e->taker, self))
				break;
		if (e)
			pthread_cond_wait(&taken_cond, &cma_lock);
	} while (e);
}

/* Takes the events of c (and, all: those naming c as listener) out of
 * ch's queue, in order. */
static struct cma_event *events_take(struct cma_channel *ch,
				     struct cma_id *c, bool all)
{
	struct cma_event **pp = &ch->head, *e, *taken = NULL, **tail = &taken;

	ch->tail = NULL;
	while ((e = *pp)) {
		if (e->id != c && (!all || e->listen != c)) {
			ch->tail = e;
			pp = &e->next;
			continue;
		}
		*pp = e->next;
		e->next = NULL;
		*tail = e;
		tail = &e->next;
	}
	if (!ch->head)
		efd_set(ch->efd, false);
	return taken;
}

void cma_events_move(struct cma_id *c, struct cma_channel *from,
		     struct cma_channel *to)
{
	struct cma_event *e = events_take(from, c, false), *next;

	for (; e; e = next) {
		next = e->next;
		cma_event_push(to, e);
	}
}

void cma_events_drop(struct cma_id *c)
{
	for (struct cma_channel *ch = channels; ch; ch = ch->next) {
		struct cma_event *e = events_take(ch, c, true), *next;

		for (; e; e = next) {
			next = e->next;
			/* A request nobody will see: its child goes too
			 * (the kernel destroys it with the listener). */
			if (e->listen == c && e->id != c) {
				e->id->destroyed = true;
				if (e->id->uid)
					uiw_cm_destroy_id(e->id->uid);
				e->id->uid = NULL;
			}
			event_done(e);
		}
	}
}

/* ---- uiw_cm events ------------------------------------------------- */

/* The kernel's iWARP connection manager (drivers/infiniband/core/cma.c,
 * cma_iw_handler, as in Linux 6.1): a connect that ends with
 * -ECONNRESET or -ECONNREFUSED is REJECTED, with -ETIMEDOUT
 * UNREACHABLE, with anything else CONNECT_ERROR; event.status is the
 * negative errno.  A host or network we have no route to is reported as
 * UNREACHABLE too. */
static const struct {
	enum uiw_cm_event_type uiw;
	int status;                   /* 0: any */
	enum rdma_cm_event_type rdma;
} event_map[] = {
	{ UIW_CM_EVENT_CONNECT_REQUEST, 0, RDMA_CM_EVENT_CONNECT_REQUEST },
	{ UIW_CM_EVENT_ESTABLISHED, 0, RDMA_CM_EVENT_ESTABLISHED },
	{ UIW_CM_EVENT_REJECTED, 0, RDMA_CM_EVENT_REJECTED },
	{ UIW_CM_EVENT_CONNECT_ERROR, -ECONNREFUSED, RDMA_CM_EVENT_REJECTED },
	{ UIW_CM_EVENT_CONNECT_ERROR, -ECONNRESET, RDMA_CM_EVENT_REJECTED },
	{ UIW_CM_EVENT_CONNECT_ERROR, -ETIMEDOUT, RDMA_CM_EVENT_UNREACHABLE },
	{ UIW_CM_EVENT_CONNECT_ERROR, -EHOSTUNREACH,
	  RDMA_CM_EVENT_UNREACHABLE },
	{ UIW_CM_EVENT_CONNECT_ERROR, -ENETUNREACH,
	  RDMA_CM_EVENT_UNREACHABLE },
	{ UIW_CM_EVENT_CONNECT_ERROR, 0, RDMA_CM_EVENT_CONNECT_ERROR },
	{ UIW_CM_EVENT_DISCONNECTED, 0, RDMA_CM_EVENT_DISCONNECTED },
	{ UIW_CM_EVENT_TIMEWAIT_EXIT, 0, RDMA_CM_EVENT_TIMEWAIT_EXIT },
};

static enum rdma_cm_event_type map_event(const struct uiw_cm_event *u)
{
	for (size_t i = 0; i < sizeof(event_map) / sizeof(event_map[0]); i++)
		if (event_map[i].uiw == u->type &&
		    (!event_map[i].status || event_map[i].status == u->status))
			return event_map[i].rdma;
	return RDMA_CM_EVENT_CONNECT_ERROR;
}

static uint8_t depth(uint32_t v)
{
	/* RFC 6581 §9.1: 0x3FFF leaves the value to the ULP; the verbs
	 * field is one octet */
	return v == UIW_IRD_ORD_MANUAL ? 0 : v > 0xff ? 0xff : (uint8_t)v;
}

/* One uiw_cm event into the queue of its id's channel; cma_lock held. */
static void translate(struct uiw_cm_event *u)
{
	struct cma_id *c = uiw_cm_id_context(u->id), *l = NULL;
	struct cma_event *e;
	enum rdma_cm_event_type type = map_event(u);

	if (u->type == UIW_CM_EVENT_CONNECT_REQUEST) {
		l = uiw_cm_id_context(u->listen_id);
		c = l && !l->destroyed ? cma_child_new(l, u->id) : NULL;
		if (!c) {
			uiw_compat_log("connection request dropped: %s",
				       l ? strerror(errno) : "no listener");
			uiw_cm_destroy_id(u->id);
			return;
		}
		c->peer_ird = depth(u->peer_ird);
		c->peer_ord = depth(u->peer_ord);
	}
	if (!c || c->destroyed)
		return;
	e = cma_event_new(c, type, type == RDMA_CM_EVENT_ESTABLISHED ||
			  type == RDMA_CM_EVENT_CONNECT_REQUEST ||
			  type == RDMA_CM_EVENT_DISCONNECTED ? 0 : u->status);
	if (!e) {
		uiw_compat_log("%s lost: out of memory",
			       rdma_event_str(type));
		return;
	}
	if (u->private_data_len) {
		memcpy(e->pd, u->private_data, u->private_data_len);
		e->ev.param.conn.private_data = e->pd;
		e->ev.param.conn.private_data_len =
			(uint8_t)(u->private_data_len > 0xff ? 0xff :
				  u->private_data_len);
	}
	cma_id_addrs(c);
	switch (type) {
	case RDMA_CM_EVENT_CONNECT_REQUEST:
		/* As for IB: what the peer will ask of us (its ORD) is
		 * what we must answer, what it can answer (its IRD) what
		 * we may ask; an accept that echoes them fits. */
		e->ev.param.conn.responder_resources = c->peer_ord;
		e->ev.param.conn.initiator_depth = c->peer_ird;
		e->ev.listen_id = &l->id;
		e->listen = l;
		l->events_out++;
		c->state = CMA_REQUEST;
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		e->ev.param.conn.responder_resources = depth(u->ird);
		e->ev.param.conn.initiator_depth = depth(u->ord);
		c->state = CMA_CONNECTED;
		cma_qp_state(c, IBV_QPS_RTS);
		break;
	default:
		c->state = CMA_DISCONNECTED;
		cma_qp_state(c, IBV_QPS_ERR);
		break;
	}
	cma_event_push(cma_ch_of(l ? l->id.channel : c->id.channel), e);
}

static void drain(struct cma_channel *src)
{
	struct uiw_cm_event u;

	while (uiw_cm_get_event(src->uch, &u, 0) == 0)
		translate(&u);
}

/* Every uiw channel that can hold events of ids on ch; cma_lock held. */
static void pump(struct cma_channel *ch)
{
	drain(ch);
	for (unsigned i = 0; i < ch->nfeeds; i++)
		drain(ch->feeds[i].src);
}

/* A caller leaves rdma_get_cm_event; cma_lock held. */
static void waiter_leave(struct cma_channel *ch)
{
	if (--ch->waiters == 0 && ch->shut)
		channel_shut(ch);
}

/* A caller cancelled in its poll (a cancellation point) leaves too. */
static void waiter_cancelled(void *arg)
{
	pthread_mutex_lock(&cma_lock);
	waiter_leave(arg);
	pthread_mutex_unlock(&cma_lock);
}

/* Waits for fd to become readable; poll's result. */
static int waiter_poll(struct cma_channel *ch, int fd)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	int n;

	pthread_cleanup_push(waiter_cancelled, ch);
	n = poll(&pfd, 1, -1);
	pthread_cleanup_pop(0);
	return n;
}

/* rdma-core 44 behaviour: a read of the channel fd; once the channel is
 * destroyed (channel_shut), -1 with EBADF. */
int rdma_get_cm_event(struct rdma_event_channel *channel,
		      struct rdma_cm_event **event)
{
	struct cma_channel *ch;
	struct cma_event *e = NULL;
	int err = 0;

	if (!channel || !event)
		return cma_err(EINVAL);
	ch = cma_ch_of(channel);
	pthread_mutex_lock(&cma_lock);
	ch->waiters++;
	for (;;) {
		int fd = ch->ch.fd, fl;

		if (ch->shut) {
			err = EBADF;
			break;
		}
		pump(ch);
		e = event_pop(ch);
		if (e)
			break;
		pthread_mutex_unlock(&cma_lock);
		/* rdma-core 44 behaviour: a channel fd made non-blocking
		 * (fcntl) gives EAGAIN instead of waiting */
		fl = fcntl(fd, F_GETFL);
		if (fl >= 0 && (fl & O_NONBLOCK))
			err = EAGAIN;
		else if (waiter_poll(ch, fd) < 0)
			err = errno;   /* EINTR on a signal, as read(2) */
		pthread_mutex_lock(&cma_lock);
		if (err)
			break;
	}
	if (e) {
		e->taken = true;
		e->taker = pthread_self();
		e->tnext = delivered;
		delivered = e;
	}
	waiter_leave(ch);
	pthread_mutex_unlock(&cma_lock);
	if (!e)
		return cma_err(err);
	*event = &e->ev;
	return 0;
}

int rdma_ack_cm_event(struct rdma_cm_event *event)
{
	if (!event)
		return cma_err(EINVAL);
	pthread_mutex_lock(&cma_lock);
	event_done((struct cma_event *)event);
	pthread_mutex_unlock(&cma_lock);
	return 0;
}

/* rdma-core 44 behaviour (ucma_complete): the previous event of a
 * synchronous id is acknowledged, the next one taken; a REJECTED event
 * fails with ECONNREFUSED, another with a status with that errno. */
int cma_complete(struct cma_id *c)
{
	struct rdma_cm_event *ev;

	if (!c->sync)
		return 0;
	if (c->id.event) {
		rdma_ack_cm_event(c->id.event);
		c->id.event = NULL;
	}
	if (rdma_get_cm_event(c->id.channel, &c->id.event))
		return -1;
	ev = c->id.event;
	if (!ev->status)
		return 0;
	if (ev->event == RDMA_CM_EVENT_REJECTED)
		return cma_err(ECONNREFUSED);
	return cma_err(ev->status < 0 ? -ev->status : ev->status);
}

static const char *const event_names[] = {
	[RDMA_CM_EVENT_ADDR_RESOLVED] = "RDMA_CM_EVENT_ADDR_RESOLVED",
	[RDMA_CM_EVENT_ADDR_ERROR] = "RDMA_CM_EVENT_ADDR_ERROR",
	[RDMA_CM_EVENT_ROUTE_RESOLVED] = "RDMA_CM_EVENT_ROUTE_RESOLVED",
	[RDMA_CM_EVENT_ROUTE_ERROR] = "RDMA_CM_EVENT_ROUTE_ERROR",
	[RDMA_CM_EVENT_CONNECT_REQUEST] = "RDMA_CM_EVENT_CONNECT_REQUEST",
	[RDMA_CM_EVENT_CONNECT_RESPONSE] = "RDMA_CM_EVENT_CONNECT_RESPONSE",
	[RDMA_CM_EVENT_CONNECT_ERROR] = "RDMA_CM_EVENT_CONNECT_ERROR",
	[RDMA_CM_EVENT_UNREACHABLE] = "RDMA_CM_EVENT_UNREACHABLE",
	[RDMA_CM_EVENT_REJECTED] = "RDMA_CM_EVENT_REJECTED",
	[RDMA_CM_EVENT_ESTABLISHED] = "RDMA_CM_EVENT_ESTABLISHED",
	[RDMA_CM_EVENT_DISCONNECTED] = "RDMA_CM_EVENT_DISCONNECTED",
	[RDMA_CM_EVENT_DEVICE_REMOVAL] = "RDMA_CM_EVENT_DEVICE_REMOVAL",
	[RDMA_CM_EVENT_MULTICAST_JOIN] = "RDMA_CM_EVENT_MULTICAST_JOIN",
	[RDMA_CM_EVENT_MULTICAST_ERROR] = "RDMA_CM_EVENT_MULTICAST_ERROR",
	[RDMA_CM_EVENT_ADDR_CHANGE] = "RDMA_CM_EVENT_ADDR_CHANGE",
	[RDMA_CM_EVENT_TIMEWAIT_EXIT] = "RDMA_CM_EVENT_TIMEWAIT_EXIT",
};

const char *rdma_event_str(enum rdma_cm_event_type event)
{
	if ((unsigned)event < sizeof(event_names) / sizeof(event_names[0]) &&
	    event_names[event])
		return event_names[event];
	return "UNKNOWN EVENT";
}
