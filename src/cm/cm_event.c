/*
 * Connection manager events: channels, the queue of events on each, and
 * uiw_cm_get_event.  A channel's eventfd is readable while its queue is
 * not empty.  Each event of an id lives in the id (raised at most once),
 * so raising one never allocates.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "../llp/tcp.h"
#include "../rnic/rnic.h"
#include "../rt/log.h"
#include "cm_internal.h"

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

int64_t cm_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

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

void cm_ev_raise(struct uiw_cm_id *id, struct cm_ev *e,
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
		cm_sa_str(&id->peer, a, sizeof(a)) : "-",
		uiw_cm_event_str(type), status);
}

/* ch->lock held. */
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

bool cm_ev_unqueue(struct uiw_cm_channel *ch, struct cm_ev *e)
{
	bool was;

	pthread_mutex_lock(&ch->lock);
	was = ev_unqueue_locked(ch, e);
	pthread_mutex_unlock(&ch->lock);
	return was;
}

void cm_ev_unqueue_all(struct uiw_cm_id *id)
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
	cm_sctp_channel_fini(ch);
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

/* Fills ev from e; ch->lock held.  What the id's startup says was set
 * before the event was raised and does not change after. */
static void ev_fill(struct uiw_cm_channel *ch, struct cm_ev *e,
		    struct uiw_cm_event *ev)
{
	struct uiw_cm_id *id = e->id;
	const struct uiw_mpa_startup *s = &id->su;

	memset(ev, 0, sizeof(*ev));
	ev->type = e->type;
	ev->id = id;
	if (e->type == UIW_CM_EVENT_CONNECT_REQUEST)
		ev->listen_id = e->listen;
	ev->status = e->status;
	ev->llp = id->llp;
	if (!s->have_frame)
		return;
	if (e->with_pd) {
		/* Valid until the next get_event; without the RFC 6581
		 * field. */
		memcpy(ch->cur_pd, s->peer_pd, s->peer_pd_len);
		ev->private_data = ch->cur_pd;
		ev->private_data_len = s->peer_pd_len;
	}
	if (id->llp == UIW_LLP_TCP) {
		ev->mpa.rev = s->peer_rev;
		ev->mpa.peer_crc = !!(s->peer_flags & UIW_MPA_F_C);
		ev->mpa.peer_markers = !!(s->peer_flags & UIW_MPA_F_M);
		ev->mpa.enhanced = s->peer_enh;
	}
	if (s->peer_enh) {
		/* RFC 6581 §9.1: "MUST pass the peer's provided IRD and ORD
		 * values to the ULP" (§7: the same over SCTP). */
		ev->peer_ird = s->peer_v2.ird;
		ev->peer_ord = s->peer_v2.ord;
		ev->peer_p2p = s->peer_v2.p2p;
		ev->peer_rtr = uiw_mpa2_rtr_flags(&s->peer_v2);
	}
	if (e->type == UIW_CM_EVENT_ESTABLISHED) {
		ev->p2p = s->nego.p2p;
		ev->rtr = s->nego.rtr;
		ev->ird = s->nego.ird;
		ev->ord = s->nego.ord;
	}
}

int uiw_cm_get_event(struct uiw_cm_channel *ch, struct uiw_cm_event *ev,
		     int timeout_ms)
{
	int64_t deadline = timeout_ms > 0 ? cm_now_ms() + timeout_ms : 0;

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
			ev_unqueue_locked(ch, e);
			e->delivered = true;
			ev_fill(ch, e, ev);
			pthread_mutex_unlock(&ch->lock);
			return 0;
		}
		pthread_mutex_unlock(&ch->lock);
		if (timeout_ms == 0)
			return -EAGAIN;
		if (timeout_ms < 0) {
			wait = -1;
		} else {
			int64_t left = deadline - cm_now_ms();

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
