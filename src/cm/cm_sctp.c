/*
 * The connection manager over SCTP (RFC 5043): each connection a DDP
 * Stream Session (src/llp/ddps.h) on an association.
 *
 *   connect     Initiate (enhanced, RFC 6581 §7, unless mpa_rev is 1:
 *               the IRD/ORD word of §9.1 then leads the private data);
 *               Accept: the QP attaches, ESTABLISHED; Reject: REJECTED
 *               with the peer's private data; Session Terminate or a
 *               failed association: CONNECT_ERROR.
 *   listen      Initiates on the listener's associations become
 *               CONNECT_REQUEST events, at most max_awaiting of them
 *               undecided (RFC 5043 §6.4: more are answered with a
 *               Session Terminate).
 *   accept      Accept, QP attached, ESTABLISHED; reject: Reject.
 *   disconnect  the QP closes (RFC 5040 §6), then our Session
 *               Terminate; DISCONNECTED when the session is over.
 *
 * The ids of SCTP connections live on the SCTP stack's progress thread
 * (id->rt is the stack's): every call of ddps.h happens there.  The
 * RFC 6581 negotiation is mpa2.c's, as over MPA; its results fill the
 * same fields of id->su that the events read.
 */
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../llp/ddps.h"
#include "../rnic/rnic.h"
#include "../rt/log.h"
#include "cm_internal.h"
#include "mpa2.h"

/* The UDP port of RFC 6951 when the caller names none. */
static uint16_t udp_port_of(uint16_t asked)
{
	const char *e;

	if (asked)
		return asked;
	e = getenv("UIW_SCTP_UDP_PORT");
	if (e && *e) {
		long v = strtol(e, NULL, 10);

		if (v > 0 && v < 65536)
			return (uint16_t)v;
	}
	return UIW_SCTP_UDP_PORT;
}

/* Whether this kernel speaks SCTP (a socket of the protocol opens);
 * asked once. */
static bool cm_kernel_sctp(void)
{
	static _Atomic int known;     /* 0 unknown, 1 no, 2 yes */
	int k = known;

	if (!k) {
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC,
				IPPROTO_SCTP);

		k = fd >= 0 ? 2 : 1;
		if (fd >= 0)
			close(fd);
		known = k;
	}
	return k == 2;
}

/* The stack for an LLP kind; the channel keeps a reference until it is
 * destroyed.  RFC 5043's LLP_SCTP picks the kernel's where the kernel
 * has SCTP. */
static int stack_for(struct uiw_cm_channel *ch, enum uiw_llp_kind *llpp,
		     uint16_t udp_port, bool listen, struct uiw_sctp_stack **out)
{
	enum uiw_llp_kind llp = *llpp;
	struct uiw_sctp_config cfg = { .udp_port = udp_port_of(udp_port) };
	enum uiw_sctp_kind kind;
	struct uiw_sctp_stack *st;
	int ret;

	if (llp == UIW_LLP_SCTP)
		llp = cm_kernel_sctp() ? UIW_LLP_SCTP_KERNEL :
					 UIW_LLP_SCTP_UDP;
	kind = llp == UIW_LLP_SCTP_KERNEL ? UIW_SCTP_KERNEL : UIW_SCTP_USER;
	*llpp = llp;
	pthread_mutex_lock(&ch->lock);
	st = ch->sctp[kind];
	pthread_mutex_unlock(&ch->lock);
	if (!st) {
		ret = uiw_sctp_stack_get(kind, &cfg, &st);
		if (ret < 0)
			return ret;
		pthread_mutex_lock(&ch->lock);
		if (ch->sctp[kind]) {
			pthread_mutex_unlock(&ch->lock);
			uiw_sctp_stack_put(st);
			st = ch->sctp[kind];
		} else {
			ch->sctp[kind] = st;
			pthread_mutex_unlock(&ch->lock);
		}
	}
	/* Listeners receive on one UDP port per process (sctp.h): a
	 * caller who names another learns it here rather than by
	 * silence. */
	if (listen && udp_port && kind == UIW_SCTP_USER &&
	    uiw_sctp_stack_config(st)->udp_port != udp_port)
		return uiw_error(EADDRINUSE, "cm: this process's SCTP stack "
				 "already uses UDP port %u (one per process)",
				 uiw_sctp_stack_config(st)->udp_port);
	*out = st;
	return 0;
}

void cm_sctp_channel_fini(struct uiw_cm_channel *ch)
{
	int k;

	for (k = 0; k < 2; k++) {
		if (ch->sctp[k])
			uiw_sctp_stack_put(ch->sctp[k]);
		ch->sctp[k] = NULL;
	}
}

/* What the peer's control message said, where the events read it. */
static void take_peer(struct uiw_cm_id *id, const struct uiw_ddps_ctl *c)
{
	struct uiw_mpa_startup *s = &id->su;

	s->have_frame = true;
	s->peer_rev = 0;
	s->peer_flags = 0;
	s->peer_enh = c->has_v2;
	if (c->has_v2)
		s->peer_v2 = c->v2;
	memcpy(s->rbuf, c->pd, c->pd_len);
	s->peer_pd = s->rbuf;
	s->peer_pd_len = c->pd_len;
}

static void take_names(struct uiw_cm_id *id, const struct uiw_sctp_info *i)
{
	id->local = i->local;
	id->peer = i->peer;
	id->have_local = id->have_peer = true;
}

/* A passive id is no longer undecided (RFC 5043 §6.4's count). */
static void listener_done(struct uiw_cm_id *c)
{
	c->undecided = false;
}

/* The listener's undecided Initiates, counted over its children rather
 * than kept: an id the application destroys leaves the list (and its
 * listener) before cm_sctp_release runs, so a kept count would never
 * come down for it. */
static unsigned undecided_of(const struct uiw_cm_id *l)
{
	const struct cm_node *n;
	unsigned k = 0;

	for (n = l->children.head; n; n = n->next)
		if (CM_ID_OF(n, sib)->undecided)
			k++;
	return k;
}

/* ---- Session events ---------------------------------------------------- */

static void sess_accepted(void *ctx, struct uiw_ddps_sess *s,
			  const struct uiw_ddps_ctl *c,
			  const struct uiw_sctp_info *info);
static void sess_ended(void *ctx, struct uiw_ddps_sess *s, int err,
		       const struct uiw_ddps_ctl *c, const char *why);

static const struct uiw_ddps_owner owner = {
	.accepted = sess_accepted,
	.ended = sess_ended,
};

static void sess_ended(void *ctx, struct uiw_ddps_sess *s, int err,
		       const struct uiw_ddps_ctl *c, const char *why)
{
	struct uiw_cm_id *id = ctx;
	enum cm_state was = id->state;

	id->sess = NULL;
	UIW_DBG(1, "cm: SCTP session over in state %s: %s%s%s",
		cm_state_str(id), err ? strerror(-err) : "orderly",
		why ? ": " : "", why ? why : "");
	if (id->kind == CM_PASSIVE && was == S_STARTUP) {
		listener_done(id);
		if (id->rejecting) {
			cm_id_closed(id, -ECONNREFUSED);
			return;
		}
		/* The peer went away while the application decided. */
		cm_passive_fail(id, err ? err : -ECONNRESET, why);
		return;
	}
	if (was == S_STARTUP) {
		/* Active: the peer's Reject, its Terminate, or a failure. */
		cm_id_closed(id, err ? err : -ECONNREFUSED);
		if (c && (c->fc == UIW_DDPS_REJECT ||
			  c->fc == UIW_DDPS_E_REJECT)) {
			take_peer(id, c);
			cm_ev_raise(id, &id->ev_conn, UIW_CM_EVENT_REJECTED,
				    -ECONNREFUSED, true);
			return;
		}
		cm_ev_raise(id, &id->ev_conn, UIW_CM_EVENT_CONNECT_ERROR,
			    err ? err : -ECONNRESET, false);
		return;
	}
	if (was == S_ESTABLISHED) {
		cm_id_closed(id, err == 0 ? 0 : -ECONNRESET);
		cm_ev_raise(id, &id->ev_disc, UIW_CM_EVENT_DISCONNECTED, 0,
			    false);
		return;
	}
	cm_id_closed(id, err);
}

/* Active side: the peer accepted.  RFC 6581 §9.1 as over MPA: the
 * Accept's word against what our Initiate said. */
static void sess_accepted(void *ctx, struct uiw_ddps_sess *s,
			  const struct uiw_ddps_ctl *c,
			  const struct uiw_sctp_info *info)
{
	struct uiw_cm_id *id = ctx;
	struct uiw_mpa_startup *su = &id->su;
	struct uiw_llp_params lp = { 0 };
	struct uiw_mpa_side me;
	int ret;

	uiw_rt_timer_stop(id->rt, &id->timer);
	take_peer(id, c);
	take_names(id, info);
	cm_side(id, &me);
	if (c->has_v2) {
		uiw_mpa2_reply(&me.l, &su->sent_v2, &c->v2, &su->nego);
		if (su->nego.err != UIW_OK) {
			ret = su->nego.err == UIW_E_MPA_INSUFFICIENT_IRD ?
			      -ENOBUFS : su->nego.err ==
			      UIW_E_MPA_NO_MATCHING_RTR ? -ENOPROTOOPT :
			      -EPROTO;
			UIW_DBG(1, "cm: SCTP Accept refused: %s",
				su->nego.why);
			uiw_ddps_own(s, NULL, NULL);
			uiw_ddps_close(s, true);
			id->sess = NULL;
			cm_id_closed(id, ret);
			cm_ev_raise(id, &id->ev_conn,
				    UIW_CM_EVENT_CONNECT_ERROR, ret, false);
			return;
		}
	} else {
		/* A plain session: each side keeps its own values. */
		memset(&su->nego, 0, sizeof(su->nego));
		su->nego.ird = me.l.ird;
		su->nego.ord = me.l.ord;
	}
	lp.ird = su->nego.ird;
	lp.ord = su->nego.ord;
	if (su->nego.p2p)
		lp.rtr_send = su->nego.rtr;
	ret = uiw_ddps_attach(s, id->qp, &lp);
	if (ret < 0) {
		uiw_ddps_own(s, NULL, NULL);
		uiw_ddps_close(s, true);
		id->sess = NULL;
		cm_id_closed(id, ret);
		cm_ev_raise(id, &id->ev_conn, UIW_CM_EVENT_CONNECT_ERROR, ret,
			    false);
		return;
	}
	id->state = S_ESTABLISHED;
	cm_established(id, true);
}

/* ---- Connect ------------------------------------------------------------- */

static void connect_timeout(void *arg)
{
	struct uiw_cm_id *id = arg;
	struct uiw_ddps_sess *s = id->sess;

	if (id->state != S_STARTUP || !s)
		return;
	/* RFC 5043 §6.2: the session the peer never answered ends with
	 * our Terminate. */
	id->sess = NULL;
	uiw_ddps_own(s, NULL, NULL);
	uiw_ddps_close(s, true);
	cm_id_closed(id, -ETIMEDOUT);
	cm_ev_raise(id, &id->ev_conn, UIW_CM_EVENT_CONNECT_ERROR, -ETIMEDOUT,
		    false);
}

static int sctp_connect_op(void *arg)
{
	struct cm_op *op = arg;
	struct uiw_cm_id *id = op->id;
	struct uiw_mpa_side me;
	struct uiw_ddps_hello h = { 0 };
	int ret;

	cm_side(id, &me);
	/* Peer-to-peer mode is not offered: over SCTP either side may
	 * send first (RFC 6581 §7). */
	me.l.p2p = false;
	h.enhanced = id->rev != 1;
	if (h.enhanced) {
		uiw_mpa2_request(&me.l, &h.v2);
		id->su.sent_enh = true;
		id->su.sent_v2 = h.v2;
	}
	h.pd = id->pd;
	h.pd_len = id->pd_len;
	uiw_rt_timer_init(&id->timer, connect_timeout, id);
	ret = uiw_ddps_connect(id->sctp, (const struct sockaddr *)&id->peer,
			       cm_sa_len(&id->peer), NULL, 0, id->udp_port,
			       &h, &owner, id, &id->sess);
	if (ret < 0) {
		/* The reason was recorded on this (the stack's) thread:
		 * carry it to the caller's. */
		snprintf(op->buf, sizeof(op->buf), "%s", uiw_last_error());
		op->why = op->buf;
		return ret;
	}
	id->state = S_STARTUP;
	uiw_rt_timer_start(id->rt, &id->timer, (unsigned)id->timeout_ms);
	return 0;
}

int cm_sctp_connect(struct uiw_cm_channel *ch, struct uiw_qp *qp,
		    const struct sockaddr *dst,
		    const struct uiw_conn_param *param, struct uiw_cm_id **idp)
{
	struct cm_op op = { 0 };
	struct uiw_sctp_stack *st;
	struct uiw_cm_id *id;
	int ret;

	enum uiw_llp_kind llp = param->llp;

	ret = stack_for(ch, &llp, param->udp_port, false, &st);
	if (ret < 0)
		return ret;
	id = cm_id_new(ch, CM_ACTIVE);
	if (!id)
		return uiw_error(ENOMEM, "cm: out of memory");
	id->llp = (uint8_t)llp;
	id->sctp = st;
	id->rt = uiw_sctp_stack_rt(st);
	if (!cm_claim_qp(id, qp)) {
		cm_id_free(id);
		return uiw_error(EBUSY, "cm: qp %u already has a connection "
				 "id", uiw_qp_num(qp));
	}
	cm_take_param(id, param);
	id->udp_port = udp_port_of(param->udp_port);
	cm_sa_copy(&id->peer, dst);
	id->have_peer = true;
	op.id = id;
	ret = uiw_rt_call(id->rt, sctp_connect_op, &op);
	if (ret < 0) {
		uiw_rt_call(id->rt, cm_free_op, id);
		return cm_op_error(&op, ret, "connect");
	}
	*idp = id;
	return 0;
}

/* ---- Listen -------------------------------------------------------------- */

/* A new Initiate on one of the listener's associations. */
static bool on_initiate(void *ctx, struct uiw_ddps_sess *s,
			const struct uiw_ddps_ctl *c,
			const struct uiw_sctp_info *info)
{
	struct uiw_cm_id *l = ctx, *id;
	unsigned pending;

	/* A listener held to revision 1 (uiw_cm_set_max_mpa_rev) speaks
	 * RFC 5043's codes alone: an enhanced one ends the session, as a
	 * peer that does not know them must (§6.1), and the initiator
	 * comes back plain (RFC 6581 §7). */
	if (c->enhanced && l->max_rev < 2) {
		UIW_DBG(1, "cm: enhanced SCTP Initiate refused: this "
			"listener takes plain ones");
		return false;
	}
	pending = undecided_of(l);
	if (l->state != S_LISTENING || pending >= l->max_awaiting) {
		UIW_DBG(1, "cm: SCTP Initiate refused: %u undecided "
			"(bound %u)", pending, l->max_awaiting);
		l->shed++;
		return false;
	}
	id = cm_id_new(l->ch, CM_PASSIVE);
	if (!id)
		return false;
	id->llp = l->llp;
	id->sctp = l->sctp;
	id->rt = l->rt;
	id->sess = s;
	id->state = S_STARTUP;
	id->listener = l;
	id->undecided = true;
	l->accepted++;
	cm_list_append(&l->children, &id->sib);
	take_peer(id, c);
	take_names(id, info);
	uiw_ddps_own(s, &owner, id);
	cm_ev_raise(id, &id->ev_req, UIW_CM_EVENT_CONNECT_REQUEST, 0, true);
	return true;
}

static int sctp_listen_op(void *arg)
{
	struct cm_op *op = arg;
	struct uiw_cm_id *l = op->id;
	int ret;

	ret = uiw_ddps_listen(l->sctp, (const struct sockaddr *)&l->local,
			      cm_sa_len(&l->local), op->ival, on_initiate, l,
			      &l->dlsn);
	if (ret < 0) {
		snprintf(op->buf, sizeof(op->buf), "%s", uiw_last_error());
		op->why = op->buf;
		return ret;
	}
	uiw_ddps_lsn_addr(l->dlsn, &l->local);
	l->have_local = true;
	l->state = S_LISTENING;
	return 0;
}

int cm_sctp_listen(struct uiw_cm_channel *ch, const struct sockaddr *addr,
		   const struct uiw_listen_param *param,
		   struct uiw_cm_id **listen_id)
{
	struct cm_op op = { 0 };
	struct uiw_sctp_stack *st;
	struct uiw_cm_id *l;
	int ret, backlog;
	char a[64];

	enum uiw_llp_kind llp = param->llp;

	ret = stack_for(ch, &llp, param->udp_port, true, &st);
	if (ret < 0)
		return ret;
	backlog = param->backlog > 0 ? param->backlog : CM_BACKLOG_DEFAULT;
	l = cm_id_new(ch, CM_LISTEN);
	if (!l)
		return uiw_error(ENOMEM, "cm: out of memory");
	l->llp = (uint8_t)llp;
	l->sctp = st;
	l->rt = uiw_sctp_stack_rt(st);
	l->max_awaiting = backlog > CM_AWAITING_DEFAULT ? (unsigned)backlog :
			  CM_AWAITING_DEFAULT;
	l->max_rev = CM_MPA_REV_MAX;
	cm_sa_copy(&l->local, addr);
	op.id = l;
	op.ival = backlog;
	ret = uiw_rt_call(l->rt, sctp_listen_op, &op);
	if (ret < 0) {
		cm_sa_str(&l->local, a, sizeof(a));
		uiw_rt_call(l->rt, cm_free_op, l);
		/* Over UDP the port taken may be the UDP one (RFC 6951),
		 * which the address does not show. */
		if (llp == UIW_LLP_SCTP_UDP)
			return uiw_error(-ret, "cm: listen on %s over SCTP "
					 "over UDP port %u: %s", a,
					 uiw_sctp_stack_config(st)->udp_port,
					 strerror(-ret));
		return uiw_error(-ret, "cm: listen on %s over SCTP: %s", a,
				 op.why ? op.why : strerror(-ret));
	}
	UIW_DBG(1, "cm: listening on %s over SCTP",
		cm_sa_str(&l->local, a, sizeof(a)));
	*listen_id = l;
	return 0;
}

/* ---- Accept, reject, disconnect, free -------------------------------------- */

int cm_sctp_accept(struct uiw_cm_id *id, struct cm_op *op)
{
	struct uiw_mpa_startup *su = &id->su;
	struct uiw_llp_params lp = { 0 };
	struct uiw_ddps_hello h = { 0 };
	struct uiw_mpa_side me;
	struct uiw_ddps_sess *s = id->sess;
	int ret;

	if (id->state != S_STARTUP || !s) {
		op->why = id->error ? strerror(-id->error) :
			  "not a pending connection request";
		return id->error ? id->error : -EINVAL;
	}
	/* RFC 6581 §7: the IRD/ORD word counts in the 512 octets of an
	 * Enhanced Accept.  Refused here, the request still pending, as
	 * over MPA (the encoder would refuse it after the QP is taken). */
	if (su->peer_enh && op->param && op->param->private_data_len >
	    UIW_DDPS_PD_MAX - UIW_MPA_V2_LEN) {
		op->why = "the Accept of an Enhanced Initiate takes at most "
			  "508 octets of private data besides its IRD/ORD "
			  "word (RFC 6581 §7)";
		return -EINVAL;
	}
	if (!cm_claim_qp(id, op->qp)) {
		op->why = "the QP already has a connection id";
		return -EBUSY;
	}
	cm_take_param(id, op->param);
	cm_side(id, &me);
	if (su->peer_enh) {
		uiw_mpa2_respond(&me.l, &su->peer_v2, &su->nego);
		if (su->nego.err == UIW_E_MPA_INSUFFICIENT_IRD) {
			/* RFC 6581 §7 and §9.1: an Enhanced Reject naming
			 * the ORD this side needs. */
			snprintf(op->buf, sizeof(op->buf), "the initiator's "
				 "IRD %u is below the ORD %u this side "
				 "requires (RFC 6581 §9.1): rejected",
				 su->peer_v2.ird, su->nego.field.ord);
			op->why = op->buf;
			cm_release_qp(id);
			id->qp = NULL;
			id->rejecting = true;
			uiw_ddps_reject(s, true, &su->nego.field, id->pd,
					id->pd_len);
			return -ENOBUFS;
		}
		h.enhanced = true;
		h.v2 = su->nego.field;
		if (su->nego.p2p)
			lp.rtr_recv = su->nego.rtr;
		lp.setup_term = true;
	} else {
		memset(&su->nego, 0, sizeof(su->nego));
		su->nego.ird = me.l.ird;
		su->nego.ord = me.l.ord;
	}
	h.pd = id->pd;
	h.pd_len = id->pd_len;
	lp.ird = su->nego.ird;
	lp.ord = su->nego.ord;
	listener_done(id);
	/* A failure is this call's to report, not an event's: the session's
	 * end (ended, inside uiw_ddps_accept) closes the id quietly. */
	id->rejecting = true;
	ret = uiw_ddps_accept(s, &h, id->qp, &lp);
	id->rejecting = false;
	if (ret == 0)
		id->state = S_ESTABLISHED;
	if (ret < 0) {
		op->why = "cannot send the Accept or attach the QP";
		return ret;
	}
	cm_established(id, false);
	return 0;
}

int cm_sctp_reject(struct uiw_cm_id *id, struct cm_op *op)
{
	struct uiw_ddps_sess *s = id->sess;
	uint32_t max_ord, max_ird = cm_dev_max_ird(id->ch->dev, &max_ord);
	struct uiw_mpa_v2 v2 = {
		.ird = max_ird > UIW_MPA_V2_IRD_MAX ? UIW_MPA_V2_IRD_MAX :
						      (uint16_t)max_ird,
		.ord = max_ord > UIW_MPA_V2_IRD_MAX ? UIW_MPA_V2_IRD_MAX :
						      (uint16_t)max_ord,
	};

	if (id->state != S_STARTUP || !s) {
		op->why = id->error ? strerror(-id->error) :
			  "not a pending connection request";
		return id->error ? id->error : -EINVAL;
	}
	id->rejecting = true;
	/* RFC 5043 §6.3: at the ULP's direction, a Reject (enhanced for an
	 * enhanced Initiate would say the plain session would be taken,
	 * RFC 6581 §7, which the ULP did not say: a plain Reject). */
	return uiw_ddps_reject(s, false, &v2, op->pd, op->pd_len);
}

int cm_sctp_disconnect(struct uiw_cm_id *id, struct cm_op *op)
{
	if (id->state == S_CLOSED)
		return 0;
	if (id->state != S_ESTABLISHED || !id->sess) {
		op->why = "not connected";
		return -ENOTCONN;
	}
	/* RFC 5040 §6: RTS -> Closing; the engine lets queued work go
	 * out and closes the session (our Session Terminate). */
	if (uiw_qp_disconnect(id->qp) == 0)
		return 0;
	uiw_ddps_close(id->sess, false);
	return 0;
}

/* The id goes: its session ends abortively (nobody hears of it), its
 * listener stops. */
void cm_sctp_release(struct uiw_cm_id *id)
{
	struct uiw_ddps_sess *s = id->sess;

	if (s) {
		id->sess = NULL;
		uiw_ddps_own(s, NULL, NULL);
		uiw_ddps_close(s, true);
	}
	if (id->dlsn) {
		uiw_ddps_unlisten(id->dlsn);
		id->dlsn = NULL;
	}
	listener_done(id);
}
