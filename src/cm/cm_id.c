/*
 * Connection manager ids: their life cycle, the claim that binds one QP
 * to one id, the checks and defaults of uiw_conn_param, addresses, and
 * the accessors of the public API.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../llp/tcp.h"
#include "../rnic/rnic.h"
#include "../rt/log.h"
#include "cm_internal.h"

static const char *const state_names[] = {
	[S_IDLE] = "idle", [S_LISTENING] = "listening",
	[S_CONNECTING] = "connecting", [S_STARTUP] = "MPA startup",
	[S_START_DELAY] = "start delay", [S_ESTABLISHED] = "established",
	[S_CLOSED] = "closed",
};

const char *cm_state_str(const struct uiw_cm_id *id)
{
	if (id->state == S_STARTUP)
		return uiw_mpa_startup_state_str(id->su.state);
	return (unsigned)id->state < sizeof(state_names) /
				     sizeof(state_names[0]) ?
	       state_names[id->state] : "?";
}

void cm_list_append(struct cm_list *l, struct cm_node *n)
{
	n->next = NULL;
	n->prev = l->tail;
	if (l->tail)
		l->tail->next = n;
	else
		l->head = n;
	l->tail = n;
	l->n++;
}

void cm_list_remove(struct cm_list *l, struct cm_node *n)
{
	if (n->prev)
		n->prev->next = n->next;
	else
		l->head = n->next;
	if (n->next)
		n->next->prev = n->prev;
	else
		l->tail = n->prev;
	n->next = n->prev = NULL;
	l->n--;
}

/* ---- Addresses ------------------------------------------------------ */

socklen_t cm_sa_len(const struct sockaddr_storage *ss)
{
	return ss->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) :
					   sizeof(struct sockaddr_in);
}

const char *cm_sa_str(const struct sockaddr_storage *ss, char *buf,
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

int cm_check_addr(const struct sockaddr *sa, socklen_t len)
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

void cm_sa_copy(struct sockaddr_storage *ss, const struct sockaddr *sa)
{
	memset(ss, 0, sizeof(*ss));
	memcpy(ss, sa, sa->sa_family == AF_INET6 ?
	       sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in));
}

void cm_fill_names(struct uiw_cm_id *id)
{
	socklen_t len = sizeof(id->local);

	if (getsockname(id->fd, (struct sockaddr *)&id->local, &len) == 0)
		id->have_local = true;
	len = sizeof(id->peer);
	if (getpeername(id->fd, (struct sockaddr *)&id->peer, &len) == 0)
		id->have_peer = true;
}

/* ---- Parameters ----------------------------------------------------- */

uint32_t cm_dev_max_ird(struct uiw_device *dev, uint32_t *max_ord)
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
int cm_check_llp(enum uiw_llp_kind llp)
{
	if (llp >= UIW_LLP_TCP && llp <= UIW_LLP_SCTP_KERNEL)
		return 0;
	return uiw_error(EINVAL, "cm: unknown LLP %d (UIW_LLP_TCP, "
			 "UIW_LLP_SCTP, UIW_LLP_SCTP_UDP or "
			 "UIW_LLP_SCTP_KERNEL)", (int)llp);
}

/* Checks a conn_param for connect (initiator) or accept; 0 or -errno
 * with the reason recorded. */
int cm_check_param(const struct uiw_conn_param *p, struct uiw_device *dev,
		   bool initiator)
{
	uint32_t max_ird, max_ord;
	bool manual_ok;
	int ret;

	if (!p)
		return 0;
	ret = cm_check_llp(p->llp);
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
	max_ird = cm_dev_max_ird(dev, &max_ord);
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

/* A QP that connect or accept may take: on the device, and Idle. */
int cm_check_qp(struct uiw_qp *qp, struct uiw_device *dev)
{
	if (uiw_qp_device(qp) != dev)
		return uiw_error(EINVAL, "cm: qp %u is not on the channel's "
				 "device", uiw_qp_num(qp));
	if (uiw_qp_state(qp) != UIW_QPS_IDLE)
		return uiw_error(EINVAL, "cm: qp %u is %s, not Idle",
				 uiw_qp_num(qp),
				 uiw_qp_state_str(uiw_qp_state(qp)));
	return 0;
}

void cm_take_param(struct uiw_cm_id *id, const struct uiw_conn_param *p)
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

void cm_side(const struct uiw_cm_id *id, struct uiw_mpa_side *me)
{
	struct uiw_mpa2_local *l = &me->l;
	uint32_t ird, ord;

	memset(me, 0, sizeof(*me));
	/* RFC 5044 §4.4: CRC on unless the user turned it off; M asks the
	 * peer to put markers in what it sends us. */
	me->crc = id->crc != UIW_OPT_OFF;
	me->markers = id->markers == UIW_OPT_ON;
	me->pd = id->pd;
	me->pd_len = id->pd_len;
	uiw_qp_default_ird_ord(id->qp, &ird, &ord);
	l->ird_manual = id->ird == UIW_IRD_ORD_MANUAL;
	l->ord_manual = id->ord == UIW_IRD_ORD_MANUAL;
	l->ird = id->ird && !l->ird_manual ? id->ird : ird;
	l->ord = id->ord && !l->ord_manual ? id->ord : ord;
	l->max_ird = cm_dev_max_ird(id->ch->dev, NULL);
	l->strict = id->strict;
	l->p2p = id->p2p == UIW_OPT_ON;
	l->rtr = id->rtr;
}

/* ---- QP claims: one id per QP --------------------------------------- */

static pthread_mutex_t claims_lock = PTHREAD_MUTEX_INITIALIZER;
static struct uiw_cm_id *claims;

bool cm_claim_qp(struct uiw_cm_id *id, struct uiw_qp *qp)
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

void cm_release_qp(struct uiw_cm_id *id)
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

/* ---- Life cycle (progress thread) ----------------------------------- */

struct uiw_cm_id *cm_id_new(struct uiw_cm_channel *ch, enum cm_kind k)
{
	struct uiw_cm_id *id = calloc(1, sizeof(*id));

	if (!id)
		return NULL;
	id->ch = ch;
	id->rt = ch->rt;
	id->kind = k;
	id->fd = -1;
	pthread_mutex_lock(&ch->lock);
	ch->nids++;
	pthread_mutex_unlock(&ch->lock);
	return id;
}

void cm_close_fd(struct uiw_cm_id *id)
{
	uiw_rt_watch_del(id->watch);
	id->watch = NULL;
	if (id->fd >= 0)
		close(id->fd);
	id->fd = -1;
}

/* Frees id; its events leave the queue. */
void cm_id_free(struct uiw_cm_id *id)
{
	struct uiw_cm_channel *ch = id->ch;

	uiw_rt_timer_stop(id->rt, &id->timer);
	if (id->tcp) {
		uiw_tcp_free(id->tcp);
		id->tcp = NULL;
	}
	if (id->llp != UIW_LLP_TCP)
		cm_sctp_release(id);
	cm_close_fd(id);
	cm_release_qp(id);
	cm_ev_unqueue_all(id);
	pthread_mutex_lock(&ch->lock);
	ch->nids--;
	pthread_mutex_unlock(&ch->lock);
	free(id);
}

void cm_id_closed(struct uiw_cm_id *id, int err)
{
	uiw_rt_timer_stop(id->rt, &id->timer);
	cm_close_fd(id);
	id->state = S_CLOSED;
	if (err && !id->error)
		id->error = err;
	cm_release_qp(id);
}

/* Returns a failed op's result with its reason for uiw_last_error. */
int cm_op_error(const struct cm_op *op, int ret, const char *what)
{
	return uiw_error(-ret, "cm: %s: %s", what,
			 op->why ? op->why : strerror(-ret));
}

int cm_free_op(void *arg)
{
	cm_id_free(arg);
	return 0;
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
