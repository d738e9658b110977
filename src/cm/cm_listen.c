/*
 * Connection manager listeners: the listening socket, the connections
 * it accepts until they have sent their MPA Request (the bound on them
 * and the shedding of the oldest), and the listener's settings.  What a
 * passive connection does once accepted is cm_ops.c's.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../rt/log.h"
#include "cm_internal.h"

#define CM_ACCEPT_BUDGET      32       /* accept calls per wake-up */
#define CM_ACCEPT_RETRY_MS    100      /* after EMFILE and friends */

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

void cm_await_done(struct uiw_cm_id *c)
{
	struct uiw_cm_id *l = c->listener;

	if (!l || !c->in_await)
		return;
	cm_list_remove(&l->awaiting, &c->await);
	c->in_await = false;
	listener_resume(l);
}

void cm_child_unlink(struct uiw_cm_id *c)
{
	struct uiw_cm_id *l = c->listener;

	if (!l)
		return;
	cm_await_done(c);
	cm_list_remove(&l->children, &c->sib);
	c->listener = NULL;
}

/* Closes the oldest connection that still awaits its Request, unless
 * its Request has arrived meanwhile (then it is announced instead, or
 * refused by the usual rules).  Either way one connection less awaits.
 * False when none awaits. */
static bool listener_shed_oldest(struct uiw_cm_id *l)
{
	struct uiw_cm_id *c;
	unsigned before = l->awaiting.n;

	if (!l->awaiting.head)
		return false;
	c = CM_ID_OF(l->awaiting.head, await);
	cm_passive_progress(c);
	if (l->awaiting.n < before)
		return true;
	l->shed++;
	cm_passive_fail(c, -ETIMEDOUT, "shed: the oldest connection still "
			"awaiting its MPA Request, to make room for a new "
			"one");
	return true;
}

static void listener_accept_one(struct uiw_cm_id *l, int fd)
{
	struct uiw_cm_id *c = cm_id_new(l->ch, CM_PASSIVE);

	if (!c) {
		close(fd);
		return;
	}
	c->fd = fd;
	c->timeout_ms = l->startup_ms;
	c->rev = l->max_rev;
	cm_fill_names(c);
	if (cm_passive_start(c) < 0) {
		cm_id_free(c);
		return;
	}
	c->listener = l;
	cm_list_append(&l->children, &c->sib);
	cm_list_append(&l->awaiting, &c->await);
	c->in_await = true;
	l->accepted++;
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
		while (l->awaiting.n >= l->max_awaiting &&
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

/* The caller's socket of uiw_listen_param.adopt, if it is a bound TCP
 * socket over IPv4 or IPv6: 0, or -errno and why. */
static int adopt_socket(struct uiw_cm_id *l, int fd, const char **why)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss), tl = sizeof(int), pl = sizeof(int);
	int type = 0, proto = 0, fl;

	*why = "not a TCP socket over IPv4 or IPv6";
	if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tl) < 0) {
		*why = strerror(errno);
		return -errno;
	}
	if (getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &proto, &pl) < 0 ||
	    getsockname(fd, (struct sockaddr *)&ss, &len) < 0 ||
	    type != SOCK_STREAM || proto != IPPROTO_TCP ||
	    (ss.ss_family != AF_INET && ss.ss_family != AF_INET6))
		return -EINVAL;
	/* sin_port and sin6_port lie at the same offset */
	if (((struct sockaddr_in *)&ss)->sin_port == 0) {
		*why = "not bound";
		return -EINVAL;
	}
	fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0) {
		*why = strerror(errno);
		return -errno;
	}
	memcpy(&l->local, &ss, sizeof(ss));
	return 0;
}

/* A socket of the listener's own, bound to addr: 0 or -errno. */
static int listener_socket(struct uiw_cm_id *l, const struct sockaddr *addr)
{
	int one = 1;

	cm_sa_copy(&l->local, addr);
	l->fd = socket(addr->sa_family, SOCK_STREAM | SOCK_NONBLOCK |
		       SOCK_CLOEXEC, 0);
	if (l->fd < 0)
		return -errno;
	setsockopt(l->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(l->fd, (const struct sockaddr *)&l->local,
		 cm_sa_len(&l->local)) < 0)
		return -errno;
	return 0;
}

int uiw_cm_listen_ex(struct uiw_cm_channel *ch, const struct sockaddr *addr,
		     socklen_t addrlen, const struct uiw_listen_param *param,
		     struct uiw_cm_id **listen_id)
{
	static const struct uiw_listen_param none;
	struct cm_op op = { 0 };
	struct uiw_cm_id *l;
	const char *why = NULL;
	socklen_t len;
	int ret, backlog;
	char a[64];

	if (!ch || !listen_id)
		return uiw_error(EINVAL, "cm: listen needs a channel and an "
				 "id pointer");
	if (!param)
		param = &none;
	ret = cm_check_llp(param->llp);
	if (ret)
		return ret;
	if (param->adopt && param->llp != UIW_LLP_TCP)
		return uiw_error(EINVAL, "cm: listen: only a TCP listener "
				 "adopts a socket");
	if (!param->adopt && (ret = cm_check_addr(addr, addrlen)))
		return ret;
	if (param->llp != UIW_LLP_TCP)
		return cm_sctp_listen(ch, addr, param, listen_id);
	backlog = param->backlog > 0 ? param->backlog : CM_BACKLOG_DEFAULT;
	l = cm_id_new(ch, CM_LISTEN);
	if (!l)
		return uiw_error(ENOMEM, "cm: out of memory");
	l->max_awaiting = backlog > CM_AWAITING_DEFAULT ? (unsigned)backlog :
			  CM_AWAITING_DEFAULT;
	l->max_rev = CM_MPA_REV_MAX;
	l->startup_ms = CM_TIMEOUT_DEFAULT_MS;
	if (param->adopt) {
		ret = adopt_socket(l, param->adopt_fd, &why);
		if (!ret)
			l->fd = param->adopt_fd;
	} else {
		ret = listener_socket(l, addr);
	}
	/* listen() on a socket that listens already sets its backlog */
	if (!ret && listen(l->fd, backlog) < 0)
		ret = -errno;
	if (ret) {
		if (param->adopt)
			l->fd = -1;     /* it stays the caller's */
		if (param->adopt && why)
			snprintf(a, sizeof(a), "adopt_fd %d", param->adopt_fd);
		else
			cm_sa_str(&l->local, a, sizeof(a));
		cm_id_free(l);
		return uiw_error(-ret, "cm: listen on %s: %s", a,
				 why ? why : strerror(-ret));
	}
	len = sizeof(l->local);
	getsockname(l->fd, (struct sockaddr *)&l->local, &len);
	l->have_local = true;
	op.id = l;
	ret = uiw_rt_call(ch->rt, listen_op, &op);
	if (ret < 0) {
		if (param->adopt)
			l->fd = -1;
		uiw_rt_call(ch->rt, cm_free_op, l);
		return cm_op_error(&op, ret, "listen");
	}
	UIW_DBG(1, "cm: listening on %s%s", cm_sa_str(&l->local, a, sizeof(a)),
		param->adopt ? " (an adopted socket)" : "");
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
void cm_listener_stop(struct uiw_cm_id *l)
{
	struct cm_node *n, *next;

	uiw_rt_timer_stop(l->rt, &l->timer);
	cm_close_fd(l);
	if (l->llp != UIW_LLP_TCP)
		cm_sctp_release(l);
	for (n = l->children.head; n; n = next) {
		struct uiw_cm_id *c = CM_ID_OF(n, sib);
		bool unseen = c->in_await || cm_ev_unqueue(c->ch, &c->ev_req);

		next = n->next;
		cm_child_unlink(c);
		if (unseen)
			cm_id_free(c);
	}
	l->state = S_CLOSED;
}

/* ---- Settings ------------------------------------------------------- */

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
	while (l->awaiting.n > l->max_awaiting && listener_shed_oldest(l))
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

static int stats_op(void *arg)
{
	struct cm_op *op = arg;
	struct uiw_cm_id *l = op->id;
	struct uiw_cm_listener_stats *st = op->stats;

	st->awaiting = l->awaiting.n;
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
