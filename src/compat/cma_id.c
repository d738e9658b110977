/*
 * rdma_cm ids: creation and destruction, addresses and ports, listeners,
 * address and route resolution, options, migration between channels.
 *
 * An id made with a NULL channel is synchronous (rdma-core 44
 * behaviour): it gets a channel of its own, and each call that would
 * raise an event waits for it (cma_complete).
 *
 * rdma_destroy_id waits for the id's events that other threads took to
 * be acknowledged, as rdma-core does, but not for those the caller took
 * (rdma-core would wait for ever): the id is freed at their last
 * acknowledgement instead.
 */
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cma.h"

static struct cma_channel *sync_channel(void)
{
	struct cma_channel *ch = cma_channel_new();

	if (ch)
		ch->closed = true;   /* goes with its id */
	return ch;
}

/* cma_lock held; ch NULL: a synchronous id. */
static struct cma_id *id_new(struct cma_channel *ch, void *context,
			     enum rdma_port_space ps, enum ibv_qp_type qpt)
{
	struct cma_id *c = calloc(1, sizeof(*c));

	if (!c) {
		errno = ENOMEM;
		return NULL;
	}
	if (!ch) {
		ch = sync_channel();
		if (!ch) {
			free(c);
			return NULL;
		}
		c->sync = true;
	}
	c->id.channel = &ch->ch;
	c->id.context = context;
	c->id.ps = ps;
	c->id.qp_type = qpt;
	c->resv_fd = -1;
	ch->users++;
	return c;
}

struct cma_id *cma_id_new(struct cma_channel *ch, void *context,
			  enum rdma_port_space ps, enum ibv_qp_type qpt)
{
	struct cma_id *c;

	pthread_mutex_lock(&cma_lock);
	c = id_new(ch, context, ps, qpt);
	pthread_mutex_unlock(&cma_lock);
	return c;
}

int rdma_create_id(struct rdma_event_channel *channel,
		   struct rdma_cm_id **id, void *context,
		   enum rdma_port_space ps)
{
	struct cma_id *c;

	if (!id)
		return cma_err(EINVAL);
	/* iWARP connects reliable connections only: no UD (RDMA_PS_UDP,
	 * RDMA_PS_IPOIB); RDMA_PS_IB runs as RDMA_PS_TCP. */
	if (ps != RDMA_PS_TCP && ps != RDMA_PS_IB) {
		uiw_compat_unsupported("rdma_create_id: a port space other "
				       "than RDMA_PS_TCP (unreliable "
				       "datagrams)");
		return -1;
	}
	c = cma_id_new(channel ? cma_ch_of(channel) : NULL, context, ps,
		       IBV_QPT_RC);
	if (!c)
		return -1;
	*id = &c->id;
	return 0;
}

void cma_id_free(struct cma_id *c)
{
	struct cma_channel *ch = cma_ch_of(c->id.channel);

	if (c->home) {
		cma_feed_del(ch, c->home);
		cma_channel_put(c->home);
	}
	cma_channel_put(ch);
	free(c->ep_qp_attr);
	free(c);
}

void cma_id_release(struct cma_id *c)
{
	c->destroyed = true;
	if (!c->events_out)
		cma_id_free(c);
}

int rdma_destroy_id(struct rdma_cm_id *id)
{
	struct cma_id *c;

	if (!id)
		return cma_err(EINVAL);
	c = cma_id_of(id);
	pthread_mutex_lock(&cma_lock);
	if (c->destroyed) {
		pthread_mutex_unlock(&cma_lock);
		return cma_err(EINVAL);
	}
	/* from here on no uiw_cm event of it exists */
	if (c->uid)
		uiw_cm_destroy_id(c->uid);
	c->uid = NULL;
	if (c->resv_fd >= 0)
		close(c->resv_fd);
	c->resv_fd = -1;
	cma_events_drop(c);
	/* rdma-core 44 behaviour: the events another thread took are
	 * waited for (rping's CM thread acknowledges the last one as its
	 * main thread destroys the id, then reads the channel again); the
	 * caller's own are not, as rdma-core would wait for ever */
	cma_events_wait_taken(c);
	/* rdma-core 44 behaviour: a synchronous id's last event is
	 * acknowledged with it */
	if (c->sync && id->event)
		cma_event_done(id->event);
	id->event = NULL;
	cma_id_release(c);
	pthread_mutex_unlock(&cma_lock);
	return 0;
}

struct cma_id *cma_id_lock(struct rdma_cm_id *id, unsigned states,
			   const char *what)
{
	static const char *const names[] = {
		[CMA_IDLE] = "idle", [CMA_BOUND] = "bound",
		[CMA_ADDR_RESOLVED] = "address resolved",
		[CMA_ROUTE_RESOLVED] = "route resolved",
		[CMA_LISTEN] = "listening",
		[CMA_REQUEST] = "a connection request",
		[CMA_CONNECT] = "connecting", [CMA_CONNECTED] = "connected",
		[CMA_DISCONNECTED] = "disconnected",
	};
	struct cma_id *c;

	if (!id) {
		errno = EINVAL;
		return NULL;
	}
	c = cma_id_of(id);
	pthread_mutex_lock(&cma_lock);
	if (c->destroyed || !(states & CMA_S(c->state))) {
		uiw_compat_log("%s: the id is %s", what, c->destroyed ?
			       "destroyed" : names[c->state]);
		pthread_mutex_unlock(&cma_lock);
		errno = EINVAL;
		return NULL;
	}
	return c;
}

/* ---- The device ---------------------------------------------------- */

static struct ibv_pd *default_pd;

int cma_id_attach(struct cma_id *c)
{
	struct ibv_context *ctx = uiw_compat_context();

	if (!ctx)
		return -ENODEV;
	/* rdma-core 44 behaviour: one PD per device serves the ids
	 * (rdma_create_qp with a NULL pd) */
	if (!default_pd)
		default_pd = ibv_alloc_pd(ctx);
	if (!default_pd)
		return errno ? -errno : -ENOMEM;
	c->id.verbs = ctx;
	c->id.port_num = 1;
	if (!c->id.pd)
		c->id.pd = default_pd;
	return 0;
}

void cma_id_addrs(struct cma_id *c)
{
	struct sockaddr_storage ss;

	if (!c->uid)
		return;
	if (uiw_cm_local_addr(c->uid, &ss) == 0)
		memcpy(&c->id.route.addr.src_storage, &ss, sizeof(ss));
	if (c->state != CMA_LISTEN && uiw_cm_peer_addr(c->uid, &ss) == 0)
		memcpy(&c->id.route.addr.dst_storage, &ss, sizeof(ss));
}

void cma_id_set_home(struct cma_id *c, struct cma_channel *home,
		     struct uiw_cm_id *uid)
{
	c->home = home;
	home->users++;
	c->uid = uid;
	uiw_cm_id_set_context(uid, c);
}

struct cma_id *cma_child_new(struct cma_id *l, struct uiw_cm_id *uid)
{
	struct cma_id *c;
	int ret;

	/* rdma-core 44 behaviour: the child of a synchronous listener is
	 * synchronous too, on a channel of its own */
	c = id_new(l->sync ? NULL : cma_ch_of(l->id.channel), l->id.context,
		   l->id.ps, l->id.qp_type);
	if (!c)
		return NULL;
	c->opts = l->opts;
	cma_id_set_home(c, l->home, uid);
	ret = cma_feed_add(cma_ch_of(c->id.channel), l->home);
	if (!ret)
		ret = cma_id_attach(c);
	if (ret) {
		uiw_cm_id_set_context(uid, NULL);
		c->uid = NULL;
		cma_id_release(c);
		errno = -ret;
		return NULL;
	}
	c->state = CMA_REQUEST;
	return c;
}

/* ---- Addresses ----------------------------------------------------- */

static int check_family(const struct sockaddr *sa)
{
	if (!sa)
		return -EINVAL;
	if (sa->sa_family != AF_INET && sa->sa_family != AF_INET6) {
		uiw_compat_log("address family %d: iWARP runs over IPv4 and "
			       "IPv6 only", sa->sa_family);
		return -EAFNOSUPPORT;
	}
	return 0;
}

static bool sa_is_any(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return ((const struct sockaddr_in *)sa)->sin_addr.s_addr ==
		       htonl(INADDR_ANY);
	return IN6_IS_ADDR_UNSPECIFIED(
		&((const struct sockaddr_in6 *)sa)->sin6_addr);
}

static __be16 sa_port(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return ((const struct sockaddr_in *)sa)->sin_port;
	if (sa->sa_family == AF_INET6)
		return ((const struct sockaddr_in6 *)sa)->sin6_port;
	return 0;
}

__be16 rdma_get_src_port(struct rdma_cm_id *id)
{
	return id ? sa_port(&id->route.addr.src_addr) : 0;
}

__be16 rdma_get_dst_port(struct rdma_cm_id *id)
{
	return id ? sa_port(&id->route.addr.dst_addr) : 0;
}

/* The kernel binds at rdma_bind_addr, so that the port (an ephemeral
 * one for port 0) is known at once: a socket holds it until the
 * listener takes over.  qperf reads the port and sends it to its
 * client before rdma_listen, so over TCP the socket listens at once:
 * the kernel queues connections that come before rdma_listen, and
 * rdma_listen hands the same socket to the uiw listener (adopt), which
 * serves them; an id destroyed before listening closes it, and they
 * are reset (REJECTED).  SO_REUSEADDR as on uiw listeners: a connection
 * accepted earlier on the port does not keep a new listener off it. */
static int reserve_port(struct cma_id *c, const struct sockaddr *sa)
{
	struct sockaddr_storage ss;
	struct cma_opts eff;
	socklen_t len = sizeof(ss);
	int one = 1, fd;

	fd = socket(sa->sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, sa, cma_sa_len(sa)) < 0 ||
	    getsockname(fd, (struct sockaddr *)&ss, &len) < 0 ||
	    (cma_opt_resolve(&c->opts, &eff) == 0 &&
	     eff.val[UIW_RDMA_OPT_LLP] == UIW_LLP_TCP &&
	     listen(fd, SOMAXCONN) < 0)) {
		int e = errno;

		close(fd);
		return -e;
	}
	c->resv_fd = fd;
	memset(&c->id.route.addr.src_storage, 0, sizeof(ss));
	memcpy(&c->id.route.addr.src_storage, &ss, len);
	return 0;
}

int rdma_bind_addr(struct rdma_cm_id *id, struct sockaddr *addr)
{
	struct cma_id *c;
	int ret = check_family(addr);

	if (ret)
		return cma_err(-ret);
	c = cma_id_lock(id, CMA_S(CMA_IDLE), "rdma_bind_addr");
	if (!c)
		return -1;
	ret = reserve_port(c, addr);
	/* a specific address names the device (the kernel's
	 * rdma_translate_ip); the wildcard none yet */
	if (!ret && !sa_is_any(addr))
		ret = cma_id_attach(c);
	if (!ret)
		c->state = CMA_BOUND;
	pthread_mutex_unlock(&cma_lock);
	if (ret) {
		uiw_compat_log("rdma_bind_addr: %s", strerror(-ret));
		return cma_err(-ret);
	}
	return 0;
}

int rdma_listen(struct rdma_cm_id *id, int backlog)
{
	struct uiw_listen_param lp = { 0 };
	struct cma_channel *ch;
	struct uiw_cm_id *uid;
	struct cma_opts eff;
	struct cma_id *c;
	int ret;

	c = cma_id_lock(id, CMA_S(CMA_IDLE) | CMA_S(CMA_BOUND),
			"rdma_listen");
	if (!c)
		return -1;
	if (c->state == CMA_IDLE) {
		/* rdma-core 44 behaviour: an unbound id listens on the
		 * wildcard address and an ephemeral port */
		struct sockaddr_in any = { .sin_family = AF_INET };

		ret = reserve_port(c, (struct sockaddr *)&any);
		if (ret)
			goto out;
		c->state = CMA_BOUND;
	}
	ret = cma_opt_resolve(&c->opts, &eff);
	if (ret)
		goto out;
	lp.llp = (enum uiw_llp_kind)eff.val[UIW_RDMA_OPT_LLP];
	lp.udp_port = (uint16_t)eff.val[UIW_RDMA_OPT_UDP_PORT];
	lp.backlog = backlog;
	if (lp.llp == UIW_LLP_TCP) {
		/* the connections queued since rdma_bind_addr come along */
		lp.adopt = 1;
		lp.adopt_fd = c->resv_fd;
	} else {
		/* SCTP ports are another space: the TCP one goes */
		close(c->resv_fd);
		c->resv_fd = -1;
	}
	ch = cma_ch_of(id->channel);
	ret = uiw_cm_listen_ex(ch->uch, &id->route.addr.src_addr,
			       cma_sa_len(&id->route.addr.src_addr), &lp, &uid);
	if (ret) {
		uiw_compat_log("rdma_listen: %s", uiw_last_error());
		/* an adopted socket stays ours, the id bound; else the
		 * port is free again: bound no more */
		if (!lp.adopt)
			c->state = CMA_IDLE;
		goto out;
	}
	if (lp.adopt)
		c->resv_fd = -1;        /* the listener's now */
	if (eff.val[UIW_RDMA_OPT_MPA_REV] == 1 && lp.llp == UIW_LLP_TCP &&
	    (ret = uiw_cm_set_max_mpa_rev(uid, 1)) < 0) {
		uiw_compat_log("rdma_listen: %s", uiw_last_error());
		uiw_cm_destroy_id(uid);
		c->state = CMA_IDLE;
		goto out;
	}
	cma_id_set_home(c, ch, uid);
	c->state = CMA_LISTEN;
	cma_id_addrs(c);
out:
	pthread_mutex_unlock(&cma_lock);
	return ret ? cma_err(-ret) : 0;
}

/* The event of a step that needs no network (iWARP resolves nothing
 * beyond the IP route), then, for a synchronous id, its wait. */
static int local_step(struct cma_id *c, enum rdma_cm_event_type type,
		      int status)
{
	int ret = cma_event_local(c, type, status);

	pthread_mutex_unlock(&cma_lock);
	if (ret)
		return cma_err(-ret);
	return cma_complete(c);
}

int rdma_resolve_addr(struct rdma_cm_id *id, struct sockaddr *src_addr,
		      struct sockaddr *dst_addr, int timeout_ms)
{
	struct sockaddr_storage src;
	struct cma_id *c;
	int ret = check_family(dst_addr);

	if (!ret && src_addr)
		ret = check_family(src_addr);
	if (ret)
		return cma_err(-ret);
	c = cma_id_lock(id, CMA_S(CMA_IDLE) | CMA_S(CMA_BOUND) |
			CMA_S(CMA_ADDR_RESOLVED), "rdma_resolve_addr");
	if (!c)
		return -1;
	memset(&id->route.addr.dst_storage, 0, sizeof(struct sockaddr_storage));
	memcpy(&id->route.addr.dst_storage, dst_addr, cma_sa_len(dst_addr));
	if (c->state == CMA_IDLE) {
		if (src_addr) {
			memset(&src, 0, sizeof(src));
			memcpy(&src, src_addr, cma_sa_len(src_addr));
		} else {
			ret = cma_route_src(dst_addr, &src);
		}
		if (ret) {
			/* the kernel reports an address it cannot route to
			 * as ADDR_ERROR */
			uiw_compat_log("rdma_resolve_addr: no route: %s",
				       strerror(-ret));
			return local_step(c, RDMA_CM_EVENT_ADDR_ERROR, ret);
		}
		memcpy(&id->route.addr.src_storage, &src, sizeof(src));
	}
	ret = cma_id_attach(c);
	if (ret)
		return local_step(c, RDMA_CM_EVENT_ADDR_ERROR, ret);
	c->state = CMA_ADDR_RESOLVED;
	return local_step(c, RDMA_CM_EVENT_ADDR_RESOLVED, 0);
}

int rdma_resolve_route(struct rdma_cm_id *id, int timeout_ms)
{
	struct cma_id *c = cma_id_lock(id, CMA_S(CMA_ADDR_RESOLVED) |
				       CMA_S(CMA_ROUTE_RESOLVED),
				       "rdma_resolve_route");

	if (!c)
		return -1;
	c->state = CMA_ROUTE_RESOLVED;
	return local_step(c, RDMA_CM_EVENT_ROUTE_RESOLVED, 0);
}

/* ---- Options ------------------------------------------------------- */

/* rdma-core 44 / Linux: RDMA_OPTION_ID options.  TOS, REUSEADDR and
 * AFONLY are taken (uiw listeners reuse addresses anyway; TOS and
 * AFONLY change nothing on loopback or the host's routes);
 * ACK_TIMEOUT is the IB transport's, and TCP retransmits on its own:
 * taken and ignored, as the kernel does for an iWARP device. */
static const struct {
	int name;
	size_t len;
} id_options[] = {
	{ RDMA_OPTION_ID_TOS, sizeof(uint8_t) },
	{ RDMA_OPTION_ID_REUSEADDR, sizeof(int) },
	{ RDMA_OPTION_ID_AFONLY, sizeof(int) },
	{ RDMA_OPTION_ID_ACK_TIMEOUT, sizeof(uint8_t) },
};

int rdma_set_option(struct rdma_cm_id *id, int level, int optname,
		    void *optval, size_t optlen)
{
	int ret;

	if (!id || !optval)
		return cma_err(EINVAL);
	switch (level) {
	case RDMA_OPTION_ID:
		for (size_t i = 0; i < sizeof(id_options) /
				       sizeof(id_options[0]); i++) {
			if (id_options[i].name != optname)
				continue;
			if (optlen != id_options[i].len)
				return cma_err(EINVAL);
			return 0;
		}
		return cma_err(ENOSYS);
	case RDMA_OPTION_IB:
		uiw_compat_unsupported("rdma_set_option: RDMA_OPTION_IB "
				       "(InfiniBand paths)");
		return -1;
	case UIW_RDMA_OPTION_LEVEL:
		pthread_mutex_lock(&cma_lock);
		ret = cma_opt_set(&cma_id_of(id)->opts, optname, optval,
				  optlen);
		pthread_mutex_unlock(&cma_lock);
		return ret ? cma_err(-ret) : 0;
	default:
		return cma_err(ENOSYS);
	}
}

/* ---- Migration ----------------------------------------------------- */

int rdma_migrate_id(struct rdma_cm_id *id, struct rdma_event_channel *channel)
{
	struct cma_channel *from, *to;
	struct cma_id *c;
	int ret = 0;

	if (!id)
		return cma_err(EINVAL);
	c = cma_id_of(id);
	pthread_mutex_lock(&cma_lock);
	from = cma_ch_of(id->channel);
	to = channel ? cma_ch_of(channel) : sync_channel();
	if (!to || to == from) {
		ret = to ? 0 : -errno;
		goto out;
	}
	if (c->home && (ret = cma_feed_add(to, c->home)) < 0) {
		to->users++;
		cma_channel_put(to);    /* a channel made here goes */
		goto out;
	}
	cma_events_move(c, from, to);
	if (c->home)
		cma_feed_del(from, c->home);
	to->users++;
	id->channel = &to->ch;
	c->sync = !channel;
	cma_channel_put(from);
out:
	pthread_mutex_unlock(&cma_lock);
	return ret ? cma_err(-ret) : 0;
}
