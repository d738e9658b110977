/*
 * Connection manager operations: connect, accept, reject, disconnect
 * and destroy, and the sockets of the MPA startup phase.  The startup
 * itself is the sans-I/O object of mpa_startup.c; this file moves its
 * octets between it and the socket, arms its timer, and acts on what it
 * decides: events, Full Operation (the socket handed to the TCP LLP with
 * uiw_tcp_start), or a close.
 *
 * Initiator: non-blocking connect, MPA Request, the Reply (all under one
 * startup timer), then Full Operation.  Responder: the listener accepts
 * TCP (cm_listen.c); the Request is read under a startup timer,
 * CONNECT_REQUEST is raised, and the application accepts (Reply, then
 * Full Operation with hold_tx) or rejects (Reply with R, then close).
 * Octets are read no further than the startup wants, so that nothing of
 * the stream after a frame is consumed here.
 *
 * The RTR of peer-to-peer mode is the engine's (rnic/rtr.c), told by
 * the LLP parameters.  An initiator whose RFC 6581 negotiation fails
 * after an accepting Reply writes the Terminate the RFC prescribes
 * (2/0/6 or 2/0/7) as its only FPDU and closes; its QP stays Idle.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../llp/tcp.h"
#include "../rnic/rnic.h"
#include "../rt/log.h"
#include "cm_internal.h"

static void tcp_closed_cb(void *arg, uiw_err_t err);

/* ---- The startup's octets and timer --------------------------------- */

/* Sends what the startup has to send and reads what it wants, never past
 * the peer's frame; a socket error ends the startup. */
static void su_pump(struct uiw_cm_id *id)
{
	struct uiw_mpa_startup *s = &id->su;
	uint8_t b[UIW_MPA_FRAME_MAX];
	const uint8_t *p;
	size_t len, want;
	ssize_t r;

	/* A Terminate is sent once, by the initiator's close path. */
	while (s->state != UIW_MPA_SU_TERMINATE &&
	       (p = uiw_mpa_startup_out(s, &len), len)) {
		/* MSG_EOR: the first FPDU never shares the frame's segment
		 * (RFC 5044 §5.1 FPDU alignment). */
		r = send(id->fd, p, len, MSG_DONTWAIT | MSG_NOSIGNAL | MSG_EOR);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				uiw_mpa_startup_fail(s, -errno, "cannot send "
						     "the MPA frame");
			break;
		}
		uiw_mpa_startup_sent(s, (size_t)r);
	}
	while ((want = uiw_mpa_startup_want(s)) > 0) {
		r = recv(id->fd, b, want < sizeof(b) ? want : sizeof(b),
			 MSG_DONTWAIT);
		if (r == 0) {
			uiw_mpa_startup_eof(s);
			break;
		}
		if (r < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				uiw_mpa_startup_fail(s, -errno,
						     strerror(errno));
			break;
		}
		uiw_mpa_startup_input(s, b, (size_t)r);
	}
}

/* Watches for what the startup waits on. */
static void su_watch(struct uiw_cm_id *id)
{
	size_t len;

	uiw_mpa_startup_out(&id->su, &len);
	uiw_rt_watch_set(id->watch,
			 (uiw_mpa_startup_want(&id->su) ? EPOLLIN : 0) |
			 (len ? EPOLLOUT : 0));
}

/* Arms the timer for the startup's deadline. */
static void su_timer_arm(struct uiw_cm_id *id)
{
	int64_t left;

	if (id->su.deadline_ms == INT64_MAX) {
		uiw_rt_timer_stop(id->rt, &id->timer);
		return;
	}
	left = id->su.deadline_ms - cm_now_ms();
	uiw_rt_timer_start(id->rt, &id->timer,
			   left <= 0 ? 0 : left > UINT32_MAX ? UINT32_MAX :
							       (unsigned)left);
}

/* Hands the socket to the TCP LLP: Full Operation.  RFC 5044 §7.1.1:
 * CRC and markers as the startup negotiated; IRD, ORD and the RTR as
 * RFC 6581 §9 did. */
static int go_full_operation(struct uiw_cm_id *id)
{
	const struct uiw_mpa_startup *s = &id->su;
	struct uiw_tcp_params p;
	int ret;

	memset(&p, 0, sizeof(p));
	p.crc = s->fr.crc;
	p.markers_tx = s->fr.markers_tx;
	p.markers_rx = s->fr.markers_rx;
	p.hold_tx = id->kind == CM_PASSIVE;
	p.align = id->align == UIW_OPT_OFF ? UIW_TCP_ALIGN_NEVER :
		  id->align == UIW_OPT_ON  ? UIW_TCP_ALIGN_KEEP :
					     UIW_TCP_ALIGN_AUTO;
	p.ird = s->nego.ird;
	p.ord = s->nego.ord;
	/* RFC 6581 §9: only an initiator of an enhanced connection sends
	 * the setup Terminates (insufficient IRD, no matching RTR). */
	p.setup_term = id->kind == CM_PASSIVE && s->peer_enh;
	if (s->nego.p2p) {
		if (id->kind == CM_PASSIVE)
			p.rtr_recv = s->nego.rtr;
		else
			p.rtr_send = s->nego.rtr;
	}
	uiw_rt_timer_stop(id->rt, &id->timer);
	uiw_rt_watch_del(id->watch);
	id->watch = NULL;
	ret = uiw_tcp_start(id->rt, id->fd, id->qp, &p, tcp_closed_cb, id,
			    &id->tcp);
	if (ret < 0)
		return ret;
	id->fd = -1;    /* the LLP owns it now */
	id->state = S_ESTABLISHED;
	return 0;
}

/* The connection cannot have been attached: the peer believes it is
 * connected, so reset rather than close in order. */
static void reset_on_close(struct uiw_cm_id *id)
{
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };

	setsockopt(id->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
}

/* ---- Initiator ------------------------------------------------------ */

/* An active attempt failed: CONNECT_ERROR. */
static void active_fail(struct uiw_cm_id *id, int err, const char *why)
{
	UIW_DBG(1, "cm: connect failed in state %s: %s (%s)",
		cm_state_str(id), why ? why : "-", strerror(-err));
	cm_id_closed(id, err);
	cm_ev_raise(id, &id->ev_conn, UIW_CM_EVENT_CONNECT_ERROR, err, false);
}

/* The Terminate of RFC 6581 §9.1 / §9.2 / §9.3 is our first and only
 * FPDU, then we close in order (the responder is in Full Operation; the
 * QP was never attached). */
static void active_terminate(struct uiw_cm_id *id)
{
	struct uiw_mpa_startup *s = &id->su;
	const uint8_t *b;
	size_t n;
	ssize_t r;

	b = uiw_mpa_startup_out(s, &n);
	do {
		r = n ? send(id->fd, b, n, MSG_DONTWAIT | MSG_NOSIGNAL) : -1;
	} while (r < 0 && errno == EINTR);
	UIW_DBG(1, "cm: sent a Terminate: %s (%zd of %zu octets)", s->why,
		r, n);
	active_fail(id, s->status, s->why);
}

static void active_established(struct uiw_cm_id *id)
{
	int ret = go_full_operation(id);

	if (ret < 0) {
		/* RFC 6581 §9.3: a local error with no code of its own ends
		 * an enhanced connection with the Terminate 2/0/5. */
		uiw_mpa_startup_abort(&id->su, UIW_E_MPA_LOCAL_CATA, ret,
				      "cannot attach the QP");
		if (id->su.state == UIW_MPA_SU_TERMINATE) {
			active_terminate(id);
			return;
		}
		reset_on_close(id);
		active_fail(id, ret, id->su.why);
		return;
	}
	cm_established(id, true);
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

/* Acts on the initiator's startup. */
static void active_step(struct uiw_cm_id *id)
{
	struct uiw_mpa_startup *s = &id->su;

	switch (s->state) {
	case UIW_MPA_SU_FULL_OP:
		active_accepted(id);
		return;
	case UIW_MPA_SU_REJECTED:
		/* RFC 5044 §7.1.2 rule 3: R set: exit MPA; the ULP closes
		 * TCP.  RFC 6581 §9.1: the responder's IRD and ORD reach the
		 * ULP with the rejection too (in the event). */
		cm_id_closed(id, -ECONNREFUSED);
		cm_ev_raise(id, &id->ev_conn, UIW_CM_EVENT_REJECTED,
			    -ECONNREFUSED, true);
		return;
	case UIW_MPA_SU_TERMINATE:
		active_terminate(id);
		return;
	case UIW_MPA_SU_FAILED:
		active_fail(id, s->status, s->why);
		return;
	default:
		su_watch(id);
		return;
	}
}

static void active_event(void *arg, uint32_t events)
{
	struct uiw_cm_id *id = arg;
	int e = 0;
	socklen_t len = sizeof(e);

	if (id->state == S_CONNECTING) {
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
		id->state = S_STARTUP;
		cm_fill_names(id);
	}
	if (id->state != S_STARTUP)
		return;
	su_pump(id);
	active_step(id);
}

/* The startup's deadline (RFC 5044 §7.1.2 rules 8 and 10), either
 * role. */
static void su_timeout(void *arg)
{
	struct uiw_cm_id *id = arg;

	uiw_mpa_startup_tick(&id->su, cm_now_ms());
	if (!uiw_mpa_startup_over(&id->su)) {
		su_timer_arm(id);
		return;
	}
	if (id->kind == CM_ACTIVE)
		active_step(id);
	else
		cm_passive_progress(id);
}

static int connect_op(void *arg)
{
	struct cm_op *op = arg;
	struct uiw_cm_id *id = op->id;
	struct uiw_mpa_side me;

	cm_side(id, &me);
	uiw_mpa_startup_initiator(&id->su, id->rev, &me, cm_now_ms(),
				  id->timeout_ms);
	if (id->su.state == UIW_MPA_SU_FAILED) {
		op->why = id->su.why;
		return id->su.status;
	}
	uiw_rt_timer_init(&id->timer, su_timeout, id);
	id->watch = uiw_rt_watch_add(id->rt, id->fd, EPOLLOUT, active_event,
				     id);
	if (!id->watch) {
		op->why = "cannot watch the socket";
		return -errno;
	}
	id->state = S_CONNECTING;
	su_timer_arm(id);
	if (connect(id->fd, (const struct sockaddr *)&id->peer,
		    cm_sa_len(&id->peer)) == 0) {
		id->state = S_STARTUP;
		cm_fill_names(id);
		su_pump(id);
		active_step(id);
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
	ret = cm_check_addr(dst, dstlen);
	if (ret)
		return ret;
	ret = cm_check_param(param, ch->dev, true);
	if (ret)
		return ret;
	ret = cm_check_qp(qp, ch->dev);
	if (ret)
		return ret;
	if (param && param->llp != UIW_LLP_TCP)
		return cm_sctp_connect(ch, qp, dst, param, idp);
	id = cm_id_new(ch, CM_ACTIVE);
	if (!id)
		return uiw_error(ENOMEM, "cm: out of memory");
	if (!cm_claim_qp(id, qp)) {
		cm_id_free(id);
		return uiw_error(EBUSY, "cm: qp %u already has a connection "
				 "id", uiw_qp_num(qp));
	}
	cm_take_param(id, param);
	cm_sa_copy(&id->peer, dst);
	id->have_peer = true;
	id->fd = socket(dst->sa_family, SOCK_STREAM | SOCK_NONBLOCK |
			SOCK_CLOEXEC, 0);
	if (id->fd < 0) {
		ret = -errno;
		cm_id_free(id);
		return uiw_error(-ret, "cm: socket: %s", strerror(-ret));
	}
	op.id = id;
	ret = uiw_rt_call(ch->rt, connect_op, &op);
	if (ret < 0) {
		uiw_rt_call(ch->rt, cm_free_op, id);
		return cm_op_error(&op, ret, "connect");
	}
	*idp = id;
	return 0;
}

/* ---- Responder ------------------------------------------------------ */

void cm_passive_fail(struct uiw_cm_id *id, int err, const char *why)
{
	char a[64];

	UIW_DBG(1, "cm: incoming connection from %s failed in state %s: %s",
		cm_sa_str(&id->peer, a, sizeof(a)), cm_state_str(id),
		why ? why : "-");
	/* Before the application has seen its CONNECT_REQUEST the id
	 * disappears quietly (RFC 5044 §7.1.2: close and report locally,
	 * here in the log); afterwards CONNECT_ERROR tells the
	 * application, which owns the id, unless it let go already. */
	if (id->in_await || cm_ev_unqueue(id->ch, &id->ev_req)) {
		cm_child_unlink(id);
		cm_id_free(id);
		return;
	}
	cm_id_closed(id, err);
	if (!id->rejecting)
		cm_ev_raise(id, &id->ev_conn, UIW_CM_EVENT_CONNECT_ERROR, err,
			    false);
}

/* After the Reply of an accept is out: Full Operation, ESTABLISHED.
 * Returns 0 or -errno (the connection is then reset). */
static int passive_established(struct uiw_cm_id *id)
{
	int ret = go_full_operation(id);

	if (ret < 0) {
		reset_on_close(id);
		cm_id_closed(id, ret);
		return ret;
	}
	cm_established(id, false);
	return 0;
}

/* Acts on the responder's startup.  sync: called from accept or reject,
 * which report a failure themselves (returned as -errno) instead of an
 * event. */
static int passive_step(struct uiw_cm_id *id, bool sync)
{
	struct uiw_mpa_startup *s = &id->su;
	int ret;

	switch (s->state) {
	case UIW_MPA_SU_REQ_RECEIVED:
		/* Announced: no longer counts against the listener's
		 * bound; no startup timer while the application decides. */
		cm_await_done(id);
		uiw_rt_timer_stop(id->rt, &id->timer);
		cm_ev_raise(id, &id->ev_req, UIW_CM_EVENT_CONNECT_REQUEST, 0,
			    true);
		su_watch(id);
		return 0;
	case UIW_MPA_SU_FULL_OP:
		ret = passive_established(id);
		if (ret < 0 && !sync)
			cm_ev_raise(id, &id->ev_conn,
				    UIW_CM_EVENT_CONNECT_ERROR, ret, false);
		return ret;
	case UIW_MPA_SU_REJECTED:
		/* RFC 5044 §7.1.2 rule 2: the Reply with R ends MPA; we
		 * close TCP (close() still delivers the queued Reply). */
		cm_id_closed(id, -ECONNREFUSED);
		return 0;
	case UIW_MPA_SU_FAILED:
		ret = s->status;
		if (sync) {
			cm_id_closed(id, ret);
			return ret;
		}
		/* May free id. */
		cm_passive_fail(id, ret, s->why);
		return ret;
	default:
		su_watch(id);
		return 0;
	}
}

void cm_passive_progress(struct uiw_cm_id *c)
{
	if (c->state != S_STARTUP)
		return;
	su_pump(c);
	passive_step(c, false);
}

static void passive_event(void *arg, uint32_t events)
{
	cm_passive_progress(arg);
}

int cm_passive_start(struct uiw_cm_id *c)
{
	c->state = S_STARTUP;
	uiw_mpa_startup_responder(&c->su, c->rev, cm_now_ms(), c->timeout_ms);
	uiw_rt_timer_init(&c->timer, su_timeout, c);
	c->watch = uiw_rt_watch_add(c->rt, c->fd, EPOLLIN, passive_event, c);
	if (!c->watch)
		return -1;
	/* RFC 5044 §7.1.2 rule 10: bounded wait for the Request. */
	su_timer_arm(c);
	return 0;
}

/* id is a CONNECT_REQUEST the application may still answer. */
static int pending_request(struct uiw_cm_id *id, struct cm_op *op)
{
	if (id->state == S_STARTUP &&
	    id->su.state == UIW_MPA_SU_REQ_RECEIVED)
		return 0;
	op->why = id->error ? strerror(-id->error) :
		  "not a pending connection request";
	return id->error ? id->error : -EINVAL;
}

/* Sends the Reply the startup holds and acts on the outcome. */
static int passive_reply(struct uiw_cm_id *id, struct cm_op *op)
{
	int ret;

	su_timer_arm(id);
	su_pump(id);
	ret = passive_step(id, true);
	if (ret < 0)
		op->why = id->state == S_CLOSED && id->su.state ==
			  UIW_MPA_SU_FULL_OP ? "cannot attach the QP" :
			  "cannot send the MPA Reply";
	return ret;
}

static int accept_op(void *arg)
{
	struct cm_op *op = arg;
	struct uiw_cm_id *id = op->id;
	struct uiw_mpa_side me;
	int ret;

	if (id->llp != UIW_LLP_TCP)
		return cm_sctp_accept(id, op);
	ret = pending_request(id, op);
	if (ret)
		return ret;
	if (!cm_claim_qp(id, op->qp)) {
		op->why = "the QP already has a connection id";
		return -EBUSY;
	}
	cm_take_param(id, op->param);
	cm_side(id, &me);
	ret = uiw_mpa_startup_accept(&id->su, &me, cm_now_ms(),
				     id->timeout_ms);
	if (ret == -EINVAL) {
		op->why = id->su.why;
		cm_release_qp(id);
		id->qp = NULL;
		return ret;
	}
	if (ret == -ENOBUFS) {
		/* RFC 6581 §9.1: a strict responder rejects, naming the ORD
		 * it needs; the id is the application's to destroy. */
		snprintf(op->buf, sizeof(op->buf), "the initiator's IRD %u is "
			 "below the ORD %u this side requires (RFC 6581 "
			 "§9.1): rejected", id->su.peer_v2.ird,
			 id->su.nego.field.ord);
		op->why = op->buf;
		cm_release_qp(id);
		id->qp = NULL;
		id->rejecting = true;
		passive_reply(id, op);
		op->why = op->buf;
		return -ENOBUFS;
	}
	return passive_reply(id, op);
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
	ret = cm_check_param(param, id->ch->dev, false);
	if (ret)
		return ret;
	/* Accept answers over the request's LLP: 0 (TCP, a zeroed param)
	 * means "the listener's"; another value must agree. */
	if (param && param->llp != UIW_LLP_TCP &&
	    (id->llp == UIW_LLP_TCP) != (param->llp == UIW_LLP_TCP))
		return uiw_error(EINVAL, "cm: accept over %s of a request "
				 "that came over %s", param->llp ==
				 UIW_LLP_TCP ? "TCP" : "SCTP", id->llp ==
				 UIW_LLP_TCP ? "TCP" : "SCTP");
	ret = cm_check_qp(qp, id->ch->dev);
	if (ret)
		return ret;
	ret = uiw_rt_call(id->rt, accept_op, &op);
	if (ret < 0)
		return cm_op_error(&op, ret, "accept");
	return 0;
}

static int reject_op(void *arg)
{
	struct cm_op *op = arg;
	struct uiw_cm_id *id = op->id;
	uint32_t max_ord, max_ird = cm_dev_max_ird(id->ch->dev, &max_ord);
	/* RFC 6581 §10: an enhanced Request gets an enhanced Reply, here
	 * with what this device could give (its maximum IRD and ORD). */
	struct uiw_mpa2_local l = {
		.ird = max_ird, .ord = max_ord, .max_ird = max_ird,
		.rtr = UIW_RTR_ALL,
	};
	int ret;

	if (id->llp != UIW_LLP_TCP)
		return cm_sctp_reject(id, op);
	ret = pending_request(id, op);
	if (ret)
		return ret;
	ret = uiw_mpa_startup_reject(&id->su, &l, op->pd, op->pd_len,
				     cm_now_ms(), CM_TIMEOUT_DEFAULT_MS);
	if (ret) {
		op->why = id->su.why;
		return ret;
	}
	id->rejecting = true;
	return passive_reply(id, op);
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
		return cm_op_error(&op, ret, "reject");
	return 0;
}

/* ---- Disconnect and destroy ----------------------------------------- */

/* The TCP LLP ended: DISCONNECTED. */
static void tcp_closed_cb(void *arg, uiw_err_t err)
{
	struct uiw_cm_id *id = arg;

	cm_id_closed(id, err == UIW_OK ? 0 : -ECONNRESET);
	cm_ev_raise(id, &id->ev_disc, UIW_CM_EVENT_DISCONNECTED, 0, false);
}

/* The connection is being set up: an initiator's connect under way, or
 * a responder that accepted and whose Reply (or SCTP Accept) is not yet
 * through. */
static bool setting_up(const struct uiw_cm_id *id)
{
	if (id->kind == CM_ACTIVE)
		return id->state == S_CONNECTING || id->state == S_STARTUP ||
		       id->state == S_START_DELAY;
	return id->kind == CM_PASSIVE && id->state == S_STARTUP &&
	       id->claimed && !id->rejecting;
}

static int disconnect_op(void *arg)
{
	struct cm_op *op = arg;
	struct uiw_cm_id *id = op->id;
	enum uiw_qp_state s;

	/* Linux's iWARP CM (iw_cm_disconnect) waits for a connect or
	 * accept under way to end, then closes what got established; here
	 * the close is deferred instead of waited for. */
	if (setting_up(id)) {
		id->disc_pending = true;
		return 0;
	}
	if (id->llp != UIW_LLP_TCP)
		return cm_sctp_disconnect(id, op);
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

void cm_established(struct uiw_cm_id *id, bool with_pd)
{
	struct cm_op op = { .id = id };

	cm_ev_raise(id, &id->ev_conn, UIW_CM_EVENT_ESTABLISHED, 0, with_pd);
	if (id->disc_pending) {
		id->disc_pending = false;
		disconnect_op(&op);
	}
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
		return cm_op_error(&op, ret, "disconnect");
	return 0;
}

static int destroy_op(void *arg)
{
	struct uiw_cm_id *id = arg;

	if (id->kind == CM_LISTEN)
		cm_listener_stop(id);
	else
		cm_child_unlink(id);
	/* A connection still up is reset (uiw_tcp_free detaches the QP). */
	cm_id_free(id);
	return 0;
}

int uiw_cm_destroy_id(struct uiw_cm_id *id)
{
	if (!id)
		return uiw_error(EINVAL, "cm: no id");
	return uiw_rt_call(id->rt, destroy_op, id);
}
