/*
 * What the uiwarp tools share: see tool_conn.h.
 */
#include "tool_conn.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <unistd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void uiw_tool_wait_event(struct uiw_cm_channel *ch, enum uiw_cm_event_type t,
			 struct uiw_cm_event *out)
{
	struct uiw_cm_event ev;
	int rc;

	for (;;) {
		rc = uiw_cm_get_event(ch, &ev, UIW_TOOL_TIMEOUT_MS);
		if (rc == -ETIMEDOUT)
			uiw_tool_die("no %s event within %d ms",
				     uiw_cm_event_str(t), UIW_TOOL_TIMEOUT_MS);
		uiw_tool_check(rc, "uiw_cm_get_event");
		if (ev.type == t)
			break;
		if (ev.type == UIW_CM_EVENT_TIMEWAIT_EXIT)
			continue;
		uiw_tool_die("expected %s, got %s (status %d)",
			     uiw_cm_event_str(t), uiw_cm_event_str(ev.type),
			     ev.status);
	}
	if (out)
		*out = ev;
}

void uiw_tool_end_init(struct uiw_tool_end *e, const char *name,
		       const struct uiw_tool_end_cfg *cfg)
{
	struct uiw_qp_init_attr ia;

	memset(e, 0, sizeof(*e));
	e->name = name;
	e->dev = cfg->dev;
	if (!e->dev) {
		e->dev = uiw_tool_check_ptr(uiw_device_open(NULL),
					    "uiw_device_open");
		e->own_dev = 1;
	}
	e->pd = cfg->pd;
	if (!e->pd) {
		e->pd = uiw_tool_check_ptr(uiw_pd_alloc(e->dev),
					   "uiw_pd_alloc");
		e->own_pd = 1;
	}
	e->cq = cfg->cq;
	if (!e->cq) {
		e->cq = uiw_tool_check_ptr(uiw_cq_create(e->dev, cfg->cqe),
					   "uiw_cq_create");
		e->own_cq = 1;
	}
	memset(&ia, 0, sizeof(ia));
	ia.send_cq = e->cq;
	ia.recv_cq = e->cq;
	ia.cap = cfg->cap;
	ia.sq_sig_all = cfg->sq_sig_all;
	e->qp = uiw_tool_check_ptr(uiw_qp_create(e->pd, &ia),
				   "uiw_qp_create");
	if (cfg->buf_len) {
		e->len = cfg->buf_len;
		e->buf = uiw_tool_alloc(e->len);
		e->mr = uiw_tool_check_ptr(uiw_reg_mr(e->pd, e->buf, e->len,
						      cfg->access),
					   "uiw_reg_mr");
	}
	if (cfg->channel)
		e->ch = uiw_tool_check_ptr(uiw_cm_channel_create(e->dev),
					   "uiw_cm_channel_create");
}

void uiw_tool_end_free(struct uiw_tool_end *e)
{
	if (e->id)
		uiw_tool_check(uiw_cm_destroy_id(e->id), "uiw_cm_destroy_id");
	uiw_tool_check(uiw_qp_destroy(e->qp), "uiw_qp_destroy");
	if (e->mr)
		uiw_tool_check(uiw_dereg_mr(e->mr), "uiw_dereg_mr");
	if (e->own_cq)
		uiw_tool_check(uiw_cq_destroy(e->cq), "uiw_cq_destroy");
	if (e->own_pd)
		uiw_tool_check(uiw_pd_free(e->pd), "uiw_pd_free");
	if (e->ch)
		uiw_tool_check(uiw_cm_channel_destroy(e->ch),
			       "uiw_cm_channel_destroy");
	if (e->own_dev)
		uiw_tool_check(uiw_device_close(e->dev), "uiw_device_close");
	free(e->buf);
	memset(e, 0, sizeof(*e));
}

/* The loopback address of family at port. */
static socklen_t loopback_addr(struct sockaddr_storage *ss, int family,
			       unsigned port)
{
	memset(ss, 0, sizeof(*ss));
	if (family == AF_INET6) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;

		s6->sin6_family = AF_INET6;
		s6->sin6_addr = in6addr_loopback;
		s6->sin6_port = htons((uint16_t)port);
		return sizeof(*s6);
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)ss;

		s4->sin_family = AF_INET;
		s4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		s4->sin_port = htons((uint16_t)port);
		return sizeof(*s4);
	}
}

void uiw_tool_listen(struct uiw_tool_listener *l, struct uiw_device *dev,
		     int family, unsigned port, int backlog)
{
	uiw_tool_listen_llp(l, dev, family, port, backlog, UIW_LLP_TCP, 0);
}

/* A UDP port of this host that is free now. */
static uint16_t free_udp_port(int family)
{
	struct sockaddr_storage ss;
	socklen_t len = loopback_addr(&ss, family, 0);
	int fd = socket(family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	uint16_t port = 0;

	if (fd >= 0 && bind(fd, (struct sockaddr *)&ss, len) == 0 &&
	    getsockname(fd, (struct sockaddr *)&ss, &len) == 0)
		port = ntohs(family == AF_INET6 ?
			     ((struct sockaddr_in6 *)&ss)->sin6_port :
			     ((struct sockaddr_in *)&ss)->sin_port);
	if (fd >= 0)
		close(fd);
	if (!port)
		uiw_tool_die("no free UDP port: %s", strerror(errno));
	return port;
}

void uiw_tool_listen_llp(struct uiw_tool_listener *l, struct uiw_device *dev,
			 int family, unsigned port, int backlog,
			 enum uiw_llp_kind llp, uint16_t udp_port)
{
	struct sockaddr_storage ss;
	socklen_t len = loopback_addr(&ss, family, port);
	struct uiw_listen_param lp = { .llp = llp, .backlog = backlog };

	memset(l, 0, sizeof(*l));
	l->family = family;
	l->llp = llp;
	if (llp != UIW_LLP_TCP)
		l->udp_port = udp_port ? udp_port : free_udp_port(family);
	lp.udp_port = l->udp_port;
	l->ch = uiw_tool_check_ptr(uiw_cm_channel_create(dev),
				   "uiw_cm_channel_create");
	uiw_tool_check(uiw_cm_listen_ex(l->ch, (struct sockaddr *)&ss, len,
					&lp, &l->id), "uiw_cm_listen_ex");
	uiw_tool_check(uiw_cm_local_addr(l->id, &ss), "uiw_cm_local_addr");
	l->port = ntohs(family == AF_INET6 ?
			((struct sockaddr_in6 *)&ss)->sin6_port :
			((struct sockaddr_in *)&ss)->sin_port);
}

void uiw_tool_listen_close(struct uiw_tool_listener *l)
{
	uiw_tool_check(uiw_cm_destroy_id(l->id), "uiw_cm_destroy_id");
	uiw_tool_check(uiw_cm_channel_destroy(l->ch),
		       "uiw_cm_channel_destroy");
	memset(l, 0, sizeof(*l));
}

void uiw_tool_connect_pair(struct uiw_tool_end *c, struct uiw_tool_end *s,
			   struct uiw_tool_listener *l,
			   const struct uiw_conn_param *p)
{
	struct uiw_conn_param def;
	struct sockaddr_storage ss;
	socklen_t len = loopback_addr(&ss, l->family, l->port);
	struct uiw_cm_event ev;

	if (!p) {
		memset(&def, 0, sizeof(def));
		p = &def;
	}
	if (p->llp == UIW_LLP_TCP && l->llp != UIW_LLP_TCP) {
		/* Over the listener's LLP. */
		if (p != &def)
			def = *p;
		def.llp = l->llp;
		def.udp_port = l->udp_port;
		p = &def;
	}
	if (!c->ch)
		c->ch = uiw_tool_check_ptr(uiw_cm_channel_create(c->dev),
					   "uiw_cm_channel_create");
	uiw_tool_check(uiw_cm_connect(c->ch, c->qp, (struct sockaddr *)&ss,
				      len, p, &c->id), "uiw_cm_connect");
	uiw_tool_wait_event(l->ch, UIW_CM_EVENT_CONNECT_REQUEST, &ev);
	s->id = ev.id;
	uiw_tool_check(uiw_cm_accept(s->id, s->qp, p), "uiw_cm_accept");
	uiw_tool_wait_event(c->ch, UIW_CM_EVENT_ESTABLISHED, NULL);
	uiw_tool_wait_event(l->ch, UIW_CM_EVENT_ESTABLISHED, NULL);
	uiw_tool_check(uiw_qp_query(c->qp, &c->attr), "uiw_qp_query");
	uiw_tool_check(uiw_qp_query(s->qp, &s->attr), "uiw_qp_query");
	if (c->attr.state != UIW_QPS_RTS || s->attr.state != UIW_QPS_RTS)
		uiw_tool_die("QPs not in RTS after ESTABLISHED");
}

void uiw_tool_disconnect_pair(struct uiw_tool_end *c,
			      struct uiw_tool_listener *l)
{
	uiw_tool_check(uiw_cm_disconnect(c->id), "uiw_cm_disconnect");
	uiw_tool_wait_event(c->ch, UIW_CM_EVENT_DISCONNECTED, NULL);
	uiw_tool_wait_event(l->ch, UIW_CM_EVENT_DISCONNECTED, NULL);
}

int uiw_tool_get_wcs(struct uiw_cq *cq, struct uiw_wc *wc, int n,
		     int extra_fd, const char *who)
{
	struct pollfd pfd[2];
	int rc, nfd = 1;

	for (;;) {
		rc = uiw_cq_poll(cq, n, wc);
		uiw_tool_check(rc, "uiw_cq_poll");
		if (rc > 0)
			return rc;
		uiw_tool_check(uiw_cq_req_notify(cq, 0), "uiw_cq_req_notify");
		/* A completion may have come before the CQ was armed. */
		rc = uiw_cq_poll(cq, n, wc);
		uiw_tool_check(rc, "uiw_cq_poll");
		if (rc > 0)
			return rc;
		pfd[0].fd = uiw_cq_fd(cq);
		pfd[0].events = POLLIN;
		pfd[0].revents = 0;
		if (extra_fd >= 0) {
			pfd[1].fd = extra_fd;
			pfd[1].events = POLLIN;
			pfd[1].revents = 0;
			nfd = 2;
		}
		rc = poll(pfd, (nfds_t)nfd, UIW_TOOL_TIMEOUT_MS);
		if (rc == 0)
			uiw_tool_die("%s: no completion within %d ms",
				     who ? who : "CQ", UIW_TOOL_TIMEOUT_MS);
		if (rc < 0 && errno != EINTR)
			uiw_tool_die("poll: %s", strerror(errno));
		if (rc > 0 && (pfd[0].revents & POLLIN))
			uiw_cq_ack_events(cq);
		if (nfd == 2 && (pfd[1].revents & POLLIN))
			return 0;
	}
}

int uiw_tool_spin_wcs(struct uiw_cq *cq, struct uiw_wc *wc, int n,
		      int extra_fd, const char *who)
{
	double t0 = 0;
	unsigned spins = 0;
	int rc;

	for (;;) {
		rc = uiw_cq_poll(cq, n, wc);
		uiw_tool_check(rc, "uiw_cq_poll");
		if (rc > 0)
			return rc;
		if (extra_fd >= 0 && (++spins & 63) == 0)
			return 0;
		sched_yield();
		/* The clock is read seldom: it costs more than a poll. */
		if ((spins & 4095) == 4095) {
			if (t0 == 0)
				t0 = uiw_tool_now();
			else if (uiw_tool_now() - t0 >
				 UIW_TOOL_TIMEOUT_MS / 1000.0)
				uiw_tool_die("%s: no completion within %d ms",
					     who ? who : "CQ",
					     UIW_TOOL_TIMEOUT_MS);
		}
		if (extra_fd < 0)
			spins++;
	}
}

struct uiw_wc uiw_tool_wait_wc(struct uiw_tool_end *e)
{
	struct uiw_wc wc;

	uiw_tool_get_wcs(e->cq, &wc, 1, -1, e->name);
	return wc;
}

struct uiw_wc uiw_tool_expect_wc(struct uiw_tool_end *e, uint64_t id,
				 enum uiw_wc_opcode op)
{
	struct uiw_wc wc = uiw_tool_wait_wc(e);

	if (wc.wr_id != id || wc.status != UIW_WC_SUCCESS || wc.opcode != op)
		uiw_tool_die("%s: expected wr_id %" PRIu64 " opcode %d, got "
			     "wr_id %" PRIu64 " opcode %d status %s", e->name,
			     id, (int)op, wc.wr_id, (int)wc.opcode,
			     uiw_wc_status_str(wc.status));
	return wc;
}

void uiw_tool_connect_opts(struct uiw_tool_end *c, struct uiw_tool_end *s,
			   struct uiw_tool_listener *l, enum uiw_opt crc,
			   enum uiw_opt markers)
{
	struct uiw_conn_param p;

	memset(&p, 0, sizeof(p));
	p.crc = crc;
	p.markers = markers;
	uiw_tool_connect_pair(c, s, l, &p);
}

void uiw_tool_post_recv(struct uiw_tool_end *e, uint64_t id, size_t off,
			size_t len)
{
	struct uiw_sge sge = {
		.addr = (uint64_t)(uintptr_t)(e->buf + off),
		.length = (uint32_t)len,
		.lkey = e->mr ? e->mr->lkey : 0,
	};
	struct uiw_recv_wr wr = {
		.wr_id = id, .sg_list = len ? &sge : NULL,
		.num_sge = len ? 1 : 0,
	};

	uiw_tool_check(uiw_post_recv(e->qp, &wr, NULL), "uiw_post_recv");
}
