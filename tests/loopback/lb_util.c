/*
 * Loopback test helpers: see lb_util.h.  Linked into every loopback
 * test, so everything non-static here carries the lbu_ prefix and no
 * test framework is used.
 */
#include "lb_util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------------ */
/* Messages and time                                                  */

static _Thread_local char lbu_msg[768];

const char *lbu_err(void)
{
	return lbu_msg[0] ? lbu_msg : "(no message)";
}

int lbu_fail(const char *fmt, ...)
{
	char tmp[sizeof(lbu_msg)];
	va_list ap;

	/* fmt may print the previous message: format into a copy. */
	va_start(ap, fmt);
	vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	memcpy(lbu_msg, tmp, sizeof(lbu_msg));
	return -1;
}

static int lbu_fail_api(const char *call, int rc)
{
	const char *why = uiw_last_error();

	return lbu_fail("%s failed: %s (%s)", call,
			rc ? strerror(rc < 0 ? -rc : rc) : "NULL",
			why ? why : "no message");
}

int lbu_timeout_ms(void)
{
	const char *e = getenv("UIW_TEST_TIMEOUT_MS");
	long v;

	if (e && *e) {
		v = strtol(e, NULL, 10);
		if (v > 0 && v < 3600 * 1000)
			return (int)v;
	}
	return LBU_TIMEOUT_MS_DEFAULT;
}

int64_t lbu_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int lbu_left(int64_t deadline)
{
	int64_t left = deadline - lbu_now_ms();

	return left > 0 ? (int)left : 0;
}

/* ------------------------------------------------------------------ */
/* The CM event pump                                                  */

#define LBU_MAX_SIDES 256
#define LBU_MAX_LISTENERS 16

static pthread_mutex_t lbu_lock = PTHREAD_MUTEX_INITIALIZER;
static struct lbu_side *lbu_sides[LBU_MAX_SIDES];
static struct lbu_listener *lbu_listeners[LBU_MAX_LISTENERS];

static int lbu_register_side(struct lbu_side *s)
{
	int i, rc = -1;

	pthread_mutex_lock(&lbu_lock);
	for (i = 0; i < LBU_MAX_SIDES; i++) {
		if (!lbu_sides[i]) {
			lbu_sides[i] = s;
			rc = 0;
			break;
		}
	}
	pthread_mutex_unlock(&lbu_lock);
	if (rc)
		return lbu_fail("more than %d connection ends", LBU_MAX_SIDES);
	return 0;
}

static void lbu_unregister_side(struct lbu_side *s)
{
	int i;

	pthread_mutex_lock(&lbu_lock);
	for (i = 0; i < LBU_MAX_SIDES; i++)
		if (lbu_sides[i] == s)
			lbu_sides[i] = NULL;
	pthread_mutex_unlock(&lbu_lock);
}

static void lbu_note_event(const struct uiw_cm_event *ev)
{
	struct lbu_listener *l = NULL;
	struct lbu_side *s = NULL;
	int i;

	pthread_mutex_lock(&lbu_lock);
	if (ev->type == UIW_CM_EVENT_CONNECT_REQUEST) {
		int taken = 0;

		for (i = 0; i < LBU_MAX_LISTENERS; i++)
			if (lbu_listeners[i] &&
			    lbu_listeners[i]->id == ev->listen_id)
				l = lbu_listeners[i];
		if (l && l->npending < LBU_MAX_PENDING) {
			l->pending[l->npending++] = ev->id;
			taken = 1;
		}
		pthread_mutex_unlock(&lbu_lock);
		/* Nobody wants it: refuse it rather than leave it hanging. */
		if (!taken && ev->id)
			uiw_cm_reject(ev->id, NULL, 0);
		return;
	}
	for (i = 0; i < LBU_MAX_SIDES; i++)
		if (lbu_sides[i] && lbu_sides[i]->id == ev->id)
			s = lbu_sides[i];
	if (s) {
		switch (ev->type) {
		case UIW_CM_EVENT_ESTABLISHED:
			s->established = 1;
			break;
		case UIW_CM_EVENT_DISCONNECTED:
			s->disconnected = 1;
			break;
		case UIW_CM_EVENT_REJECTED:
		case UIW_CM_EVENT_CONNECT_ERROR:
			s->failed = ev->type == UIW_CM_EVENT_REJECTED ? 2 : 1;
			s->fail_status = ev->status;
			break;
		default:
			break;
		}
	}
	pthread_mutex_unlock(&lbu_lock);
}

/* Takes at most one event from ch within timeout_ms.  Returns 1 if one
 * was processed, 0 on timeout, -1 on error. */
static int lbu_pump(struct uiw_cm_channel *ch, int timeout_ms)
{
	struct uiw_cm_event ev;
	int rc;

	memset(&ev, 0, sizeof(ev));
	rc = uiw_cm_get_event(ch, &ev, timeout_ms);
	if (rc == -ETIMEDOUT || rc == -EAGAIN)
		return 0;
	if (rc < 0)
		return lbu_fail_api("uiw_cm_get_event", rc);
	lbu_note_event(&ev);
	return 1;
}

static int lbu_flag(const int *flag)
{
	int v;

	pthread_mutex_lock(&lbu_lock);
	v = *flag;
	pthread_mutex_unlock(&lbu_lock);
	return v;
}

static int lbu_wait_flag(struct lbu_side *s, const int *flag,
			 const char *what)
{
	int64_t deadline = lbu_now_ms() + lbu_timeout_ms();
	int left;

	for (;;) {
		if (lbu_flag(flag))
			return 0;
		if (flag == &s->established && lbu_flag(&s->failed))
			return lbu_fail("%s: %s instead of ESTABLISHED "
					"(status %d: %s)", s->name,
					s->failed == 2 ? "REJECTED" :
					"CONNECT_ERROR", s->fail_status,
					strerror(-s->fail_status));
		left = lbu_left(deadline);
		if (left <= 0)
			return lbu_fail("%s: no %s event within %d ms", s->name,
					what, lbu_timeout_ms());
		if (lbu_pump(s->ch, left) < 0)
			return -1;
	}
}

int lbu_wait_disconnected(struct lbu_side *s)
{
	return lbu_wait_flag(s, &s->disconnected, "DISCONNECTED");
}

/* ------------------------------------------------------------------ */
/* Listener                                                           */

int lbu_listener_open(struct lbu_listener *l, struct uiw_device *dev)
{
	return lbu_listener_open_backlog(l, dev, 16);
}

enum uiw_llp_kind lbu_llp(uint16_t *udp_port)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	static uint16_t port;
	const char *e = getenv("UIW_LB_LLP");
	enum uiw_llp_kind k = UIW_LLP_TCP;

	*udp_port = 0;
	if (!e || !*e || !strcmp(e, "tcp"))
		return k;
	if (!strcmp(e, "sctp-udp"))
		k = UIW_LLP_SCTP_UDP;
	else if (!strcmp(e, "sctp"))
		k = UIW_LLP_SCTP;
	else if (!strcmp(e, "sctp-kernel"))
		k = UIW_LLP_SCTP_KERNEL;
	else
		return (enum uiw_llp_kind)-1;   /* the CM says what is wrong */
	/* One UDP port for the process's SCTP stack (RFC 6951), free now:
	 * tests run side by side, so not the well-known 9899. */
	pthread_mutex_lock(&lock);
	if (!port) {
		struct sockaddr_in a = { .sin_family = AF_INET };
		socklen_t alen = sizeof(a);
		int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

		a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
		    getsockname(fd, (struct sockaddr *)&a, &alen) == 0)
			port = ntohs(a.sin_port);
		if (fd >= 0)
			close(fd);
	}
	*udp_port = port;
	pthread_mutex_unlock(&lock);
	return k;
}

int lbu_listener_open_backlog(struct lbu_listener *l, struct uiw_device *dev,
			      int backlog)
{
	struct uiw_listen_param lp = { 0 };
	struct sockaddr_storage ss;
	struct sockaddr_in sin;
	int i, rc;

	memset(l, 0, sizeof(*l));
	l->dev = dev;
	l->ch = uiw_cm_channel_create(dev);
	if (!l->ch)
		return lbu_fail_api("uiw_cm_channel_create", errno);
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sin.sin_port = 0;
	lp.llp = lbu_llp(&lp.udp_port);
	lp.backlog = backlog;
	rc = uiw_cm_listen_ex(l->ch, (struct sockaddr *)&sin, sizeof(sin), &lp,
			      &l->id);
	if (rc < 0) {
		lbu_fail_api("uiw_cm_listen(127.0.0.1:0)", rc);
		goto fail;
	}
	memset(&ss, 0, sizeof(ss));
	rc = uiw_cm_local_addr(l->id, &ss);
	if (rc < 0) {
		lbu_fail_api("uiw_cm_local_addr(listener)", rc);
		goto fail;
	}
	if (ss.ss_family != AF_INET) {
		lbu_fail("listener's local address has family %d, not AF_INET",
			 ss.ss_family);
		goto fail;
	}
	l->port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
	if (l->port == 0) {
		lbu_fail("listener reports port 0 after listening on port 0");
		goto fail;
	}
	pthread_mutex_lock(&lbu_lock);
	for (i = 0; i < LBU_MAX_LISTENERS; i++) {
		if (!lbu_listeners[i]) {
			lbu_listeners[i] = l;
			break;
		}
	}
	pthread_mutex_unlock(&lbu_lock);
	if (i == LBU_MAX_LISTENERS) {
		lbu_fail("more than %d listeners", LBU_MAX_LISTENERS);
		goto fail;
	}
	return 0;
fail:
	if (l->id)
		uiw_cm_destroy_id(l->id);
	if (l->ch)
		uiw_cm_channel_destroy(l->ch);
	memset(l, 0, sizeof(*l));
	return -1;
}

int lbu_listener_close(struct lbu_listener *l)
{
	int i, rc, ret = 0;

	if (!l->ch)
		return 0;
	pthread_mutex_lock(&lbu_lock);
	for (i = 0; i < LBU_MAX_LISTENERS; i++)
		if (lbu_listeners[i] == l)
			lbu_listeners[i] = NULL;
	pthread_mutex_unlock(&lbu_lock);
	for (i = 0; i < l->npending; i++)
		uiw_cm_destroy_id(l->pending[i]);
	l->npending = 0;
	if (l->id) {
		rc = uiw_cm_destroy_id(l->id);
		if (rc < 0 && !ret)
			ret = lbu_fail_api("uiw_cm_destroy_id(listener)", rc);
	}
	rc = uiw_cm_channel_destroy(l->ch);
	if (rc < 0 && !ret)
		ret = lbu_fail_api("uiw_cm_channel_destroy(listener)", rc);
	memset(l, 0, sizeof(*l));
	return ret;
}

/* Waits for the next CONNECT_REQUEST on l. */
static int lbu_listener_take(struct lbu_listener *l, struct uiw_cm_id **id)
{
	int64_t deadline = lbu_now_ms() + lbu_timeout_ms();
	int i, left;

	for (;;) {
		pthread_mutex_lock(&lbu_lock);
		if (l->npending > 0) {
			*id = l->pending[0];
			for (i = 1; i < l->npending; i++)
				l->pending[i - 1] = l->pending[i];
			l->npending--;
			pthread_mutex_unlock(&lbu_lock);
			return 0;
		}
		pthread_mutex_unlock(&lbu_lock);
		left = lbu_left(deadline);
		if (left <= 0)
			return lbu_fail("listener on port %u: no CONNECT_REQUEST "
					"within %d ms", l->port,
					lbu_timeout_ms());
		if (lbu_pump(l->ch, left) < 0)
			return -1;
	}
}

/* ------------------------------------------------------------------ */
/* Sides and pairs                                                    */

void lbu_opts_init(struct lbu_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->crc = UIW_OPT_DEFAULT;
	o->cli_markers = UIW_OPT_DEFAULT;
	o->srv_markers = UIW_OPT_DEFAULT;
}

static int lbu_side_init(struct lbu_side *s, const char *name,
			 struct uiw_device *dev, struct uiw_pd *pd,
			 struct uiw_cq *scq, struct uiw_cq *rcq,
			 struct uiw_srq *srq, const struct lbu_opts *o)
{
	struct uiw_qp_init_attr ia;
	uint32_t sq = o->sq_depth ? o->sq_depth : 64;
	uint32_t rq = o->rq_depth ? o->rq_depth : 64;
	uint32_t sge = o->max_sge ? o->max_sge : 4;
	int cqe = o->cq_depth ? o->cq_depth : (int)(sq + rq + 16);

	s->name = name;
	if (dev) {
		s->dev = dev;
	} else {
		s->dev = uiw_device_open(NULL);
		if (!s->dev)
			return lbu_fail_api("uiw_device_open", errno);
		s->own |= LBU_OWN_DEV;
	}
	if (pd) {
		s->pd = pd;
	} else {
		s->pd = uiw_pd_alloc(s->dev);
		if (!s->pd)
			return lbu_fail_api("uiw_pd_alloc", errno);
		s->own |= LBU_OWN_PD;
	}
	if (scq) {
		s->scq = scq;
	} else {
		s->scq = uiw_cq_create(s->dev, cqe);
		if (!s->scq)
			return lbu_fail_api("uiw_cq_create", errno);
		s->own |= LBU_OWN_SCQ;
	}
	if (rcq) {
		s->rcq = rcq;
	} else {
		s->rcq = uiw_cq_create(s->dev, cqe);
		if (!s->rcq)
			return lbu_fail_api("uiw_cq_create", errno);
		s->own |= LBU_OWN_RCQ;
	}
	memset(&ia, 0, sizeof(ia));
	ia.send_cq = s->scq;
	ia.recv_cq = s->rcq;
	ia.cap.max_send_wr = sq;
	ia.cap.max_recv_wr = rq;
	ia.cap.max_send_sge = sge;
	ia.cap.max_recv_sge = sge;
	ia.sq_sig_all = o->sq_sig_all;
	ia.qp_context = s;
	ia.srq = srq;
	ia.read_sink_access = o->read_sink_access;
	s->srq = srq;
	s->qp = uiw_qp_create(s->pd, &ia);
	if (!s->qp)
		return lbu_fail_api("uiw_qp_create", errno);
	if (uiw_qp_context(s->qp) != s)
		return lbu_fail("uiw_qp_context does not return the "
				"qp_context given to uiw_qp_create");
	return 0;
}

/* Frees what the side created, except its device. */
static int lbu_side_free(struct lbu_side *s)
{
	struct lbu_buf *b;
	int rc, ret = 0;

	if (s->id) {
		lbu_unregister_side(s);
		rc = uiw_cm_destroy_id(s->id);
		if (rc < 0 && !ret)
			ret = lbu_fail_api("uiw_cm_destroy_id", rc);
		s->id = NULL;
	}
	if (s->qp) {
		rc = uiw_qp_destroy(s->qp);
		if (rc < 0 && !ret)
			ret = lbu_fail_api("uiw_qp_destroy", rc);
		s->qp = NULL;
	}
	s->srq = NULL;
	while ((b = s->bufs) != NULL) {
		rc = lbu_buf_free(s, b);
		if (rc < 0 && !ret)
			ret = rc;
	}
	if ((s->own & LBU_OWN_SCQ) && s->scq) {
		rc = uiw_cq_destroy(s->scq);
		if (rc < 0 && !ret)
			ret = lbu_fail_api("uiw_cq_destroy", rc);
	}
	if ((s->own & LBU_OWN_RCQ) && s->rcq && s->rcq != s->scq) {
		rc = uiw_cq_destroy(s->rcq);
		if (rc < 0 && !ret)
			ret = lbu_fail_api("uiw_cq_destroy", rc);
	}
	s->scq = s->rcq = NULL;
	if ((s->own & LBU_OWN_PD) && s->pd) {
		rc = uiw_pd_free(s->pd);
		if (rc < 0 && !ret)
			ret = lbu_fail_api("uiw_pd_free", rc);
	}
	s->pd = NULL;
	if ((s->own & LBU_OWN_CH) && s->ch) {
		rc = uiw_cm_channel_destroy(s->ch);
		if (rc < 0 && !ret)
			ret = lbu_fail_api("uiw_cm_channel_destroy", rc);
	}
	s->ch = NULL;
	s->own &= LBU_OWN_DEV;
	return ret;
}

static int lbu_side_close_dev(struct lbu_side *s)
{
	int rc = 0;

	if ((s->own & LBU_OWN_DEV) && s->dev) {
		rc = uiw_device_close(s->dev);
		if (rc < 0)
			rc = lbu_fail_api("uiw_device_close", rc);
	}
	s->dev = NULL;
	s->own = 0;
	return rc;
}

static int lbu_check_attr(const struct lbu_side *s, int crc, int mtx,
			  int mrx)
{
	const struct uiw_qp_attr *a = &s->attr;

	uint16_t udp;
	enum uiw_llp_kind llp = lbu_llp(&udp);

	if (a->state != UIW_QPS_RTS)
		return lbu_fail("%s: QP is %s after ESTABLISHED, not RTS",
				s->name, uiw_qp_state_str(a->state));
	if (llp != UIW_LLP_TCP) {
		/* RFC 5043: no MPA (SCTP's CRC32c covers every packet);
		 * the QP reports the stack it runs on. */
		if (a->llp != UIW_LLP_SCTP_UDP && a->llp != UIW_LLP_SCTP_KERNEL)
			return lbu_fail("%s: QP reports LLP %u, not SCTP",
					s->name, a->llp);
		if (a->crc || a->markers_tx || a->markers_rx)
			return lbu_fail("%s: MPA CRC or markers over SCTP",
					s->name);
		if (a->mulpdu < 516)
			return lbu_fail("%s: MULPDU %u below RFC 5043 §9's "
					"516", s->name, a->mulpdu);
		return 0;
	}
	if (!!a->crc != crc)
		return lbu_fail("%s: CRC %s, expected %s", s->name,
				a->crc ? "on" : "off", crc ? "on" : "off");
	if (!!a->markers_tx != mtx)
		return lbu_fail("%s: sends markers: %d, expected %d", s->name,
				a->markers_tx, mtx);
	if (!!a->markers_rx != mrx)
		return lbu_fail("%s: expects markers: %d, expected %d",
				s->name, a->markers_rx, mrx);
	if (a->mulpdu == 0)
		return lbu_fail("%s: MULPDU is 0", s->name);
	return 0;
}

#define LBU_FIRST_ID 0x1f1257ULL

/* The client's first FPDU (see lbu_opts.skip_first_send).  Spins rather
 * than arming the CQs, so that tests of notification start clean. */
static int lbu_first_send(struct lbu_pair *p)
{
	struct uiw_wc wc;
	char d[256];

	if (lbu_post_recv(&p->srv, LBU_FIRST_ID, NULL, 0, 0) < 0 ||
	    lbu_post_send(&p->cli, LBU_FIRST_ID, UIW_WR_SEND,
			  UIW_SEND_SIGNALED, NULL, 0, 0, 0, 0, 0) < 0)
		return -1;
	if (lbu_spin_wc(p->cli.scq, &wc, 1) < 0)
		return lbu_fail("first Send: %s", lbu_err());
	if (wc.wr_id != LBU_FIRST_ID || wc.status != UIW_WC_SUCCESS ||
	    wc.opcode != UIW_WC_SEND)
		return lbu_fail("first Send completed as %s",
				lbu_wc_str(&wc, d, sizeof(d)));
	if (lbu_spin_wc(p->srv.rcq, &wc, 1) < 0)
		return lbu_fail("first receive: %s", lbu_err());
	if (wc.wr_id != LBU_FIRST_ID || wc.status != UIW_WC_SUCCESS ||
	    wc.opcode != UIW_WC_RECV || wc.byte_len != 0)
		return lbu_fail("first receive completed as %s",
				lbu_wc_str(&wc, d, sizeof(d)));
	return 0;
}

int lbu_pair_connect(struct lbu_pair *p, const struct lbu_opts *o)
{
	struct uiw_conn_param cp, sp;
	struct sockaddr_in sin;
	struct uiw_cm_id *req = NULL;
	char saved[sizeof(lbu_msg)];
	int rc, crc, cm, sm;

	memset(p, 0, sizeof(*p));
	if (lbu_side_init(&p->srv, "server", o->srv_dev, o->srv_pd,
			  o->srv_scq, o->srv_rcq, o->srv_srq, o) < 0)
		goto fail;
	if (lbu_side_init(&p->cli, "client", o->cli_dev, NULL, o->cli_scq,
			  o->cli_rcq, NULL, o) < 0)
		goto fail;
	if (o->lst) {
		p->lst = o->lst;
	} else {
		p->lst = calloc(1, sizeof(*p->lst));
		if (!p->lst) {
			lbu_fail("out of memory");
			goto fail;
		}
		p->own_lst = 1;
		if (lbu_listener_open(p->lst, p->srv.dev) < 0)
			goto fail;
	}
	p->srv.ch = p->lst->ch;
	p->cli.ch = uiw_cm_channel_create(p->cli.dev);
	if (!p->cli.ch) {
		lbu_fail_api("uiw_cm_channel_create", errno);
		goto fail;
	}
	p->cli.own |= LBU_OWN_CH;

	memset(&cp, 0, sizeof(cp));
	cp.crc = o->crc;
	cp.markers = o->cli_markers;
	cp.align = o->align;
	cp.ird = o->cli_ird;
	cp.ord = o->cli_ord;
	cp.private_data = o->cli_pdata;
	cp.private_data_len = o->cli_pdata_len;
	memset(&sp, 0, sizeof(sp));
	sp.crc = o->crc;
	sp.markers = o->srv_markers;
	sp.align = o->align;
	sp.ird = o->srv_ird;
	sp.ord = o->srv_ord;

	cp.llp = sp.llp = lbu_llp(&cp.udp_port);
	if (o->cli_udp_port)
		cp.udp_port = o->cli_udp_port;
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sin.sin_port = htons(p->lst->port);
	rc = uiw_cm_connect(p->cli.ch, p->cli.qp, (struct sockaddr *)&sin,
			    sizeof(sin), &cp, &p->cli.id);
	if (rc < 0) {
		lbu_fail_api("uiw_cm_connect", rc);
		goto fail;
	}
	if (lbu_register_side(&p->cli) < 0)
		goto fail;
	if (lbu_listener_take(p->lst, &req) < 0)
		goto fail;
	p->srv.id = req;
	if (lbu_register_side(&p->srv) < 0)
		goto fail;
	rc = uiw_cm_accept(req, p->srv.qp, &sp);
	if (rc < 0) {
		lbu_fail_api("uiw_cm_accept", rc);
		goto fail;
	}
	if (lbu_wait_flag(&p->cli, &p->cli.established, "ESTABLISHED") < 0)
		goto fail;
	if (lbu_wait_flag(&p->srv, &p->srv.established, "ESTABLISHED") < 0)
		goto fail;
	if (uiw_cm_id_qp(p->cli.id) != p->cli.qp ||
	    uiw_cm_id_qp(p->srv.id) != p->srv.qp) {
		lbu_fail("uiw_cm_id_qp does not return the connected QP");
		goto fail;
	}
	rc = uiw_qp_query(p->cli.qp, &p->cli.attr);
	if (rc < 0) {
		lbu_fail_api("uiw_qp_query(client)", rc);
		goto fail;
	}
	rc = uiw_qp_query(p->srv.qp, &p->srv.attr);
	if (rc < 0) {
		lbu_fail_api("uiw_qp_query(server)", rc);
		goto fail;
	}
	/* RFC 5044 §7.1: CRC is used when either side asks (both ask the
	 * same here); markers flow towards the side that asked. */
	crc = o->crc != UIW_OPT_OFF;
	cm = o->cli_markers == UIW_OPT_ON;
	sm = o->srv_markers == UIW_OPT_ON;
	if (lbu_check_attr(&p->cli, crc, sm, cm) < 0 ||
	    lbu_check_attr(&p->srv, crc, cm, sm) < 0)
		goto fail;
	if (o->cli_ord && o->cli_ord == o->srv_ird &&
	    (p->cli.attr.ord != o->cli_ord || p->srv.attr.ird != o->srv_ird)) {
		lbu_fail("client ORD %u / server IRD %u after asking for %u",
			 p->cli.attr.ord, p->srv.attr.ird, o->cli_ord);
		goto fail;
	}
	if (!o->skip_first_send && lbu_first_send(p) < 0)
		goto fail;
	return 0;
fail:
	memcpy(saved, lbu_msg, sizeof(saved));
	if (req && !p->srv.id)
		uiw_cm_destroy_id(req);
	lbu_pair_destroy(p);
	memcpy(lbu_msg, saved, sizeof(lbu_msg));
	return -1;
}

int lbu_qp_state(struct lbu_side *s, struct uiw_qp_attr *attr)
{
	struct uiw_qp_attr a;
	int rc;

	if (!attr)
		attr = &a;
	rc = uiw_qp_query(s->qp, attr);
	if (rc < 0)
		return lbu_fail_api("uiw_qp_query", rc);
	return (int)attr->state;
}

int lbu_pair_disconnect(struct lbu_pair *p)
{
	int rc, st;

	if (!p->cli.id || !p->srv.id)
		return lbu_fail("pair is not connected");
	if (!lbu_flag(&p->cli.disconnected) &&
	    !lbu_flag(&p->srv.disconnected)) {
		st = lbu_qp_state(&p->cli, NULL);
		if (st < 0)
			return -1;
		if (st == UIW_QPS_RTS) {
			rc = uiw_cm_disconnect(p->cli.id);
			if (rc < 0)
				return lbu_fail_api("uiw_cm_disconnect", rc);
		}
	}
	if (lbu_wait_disconnected(&p->cli) < 0)
		return -1;
	if (lbu_wait_disconnected(&p->srv) < 0)
		return -1;
	return 0;
}

int lbu_pair_destroy(struct lbu_pair *p)
{
	char first[sizeof(lbu_msg)] = "";
	int ret = 0;

#define LBU_KEEP(expr)							\
	do {								\
		if ((expr) < 0 && !ret) {				\
			ret = -1;					\
			memcpy(first, lbu_msg, sizeof(first));		\
		}							\
	} while (0)

	if (p->cli.id && p->srv.id && p->cli.established &&
	    p->srv.established)
		LBU_KEEP(lbu_pair_disconnect(p));
	LBU_KEEP(lbu_side_free(&p->cli));
	LBU_KEEP(lbu_side_free(&p->srv));
	if (p->own_lst && p->lst) {
		LBU_KEEP(lbu_listener_close(p->lst));
		free(p->lst);
	}
	p->lst = NULL;
	p->own_lst = 0;
	LBU_KEEP(lbu_side_close_dev(&p->cli));
	LBU_KEEP(lbu_side_close_dev(&p->srv));
#undef LBU_KEEP
	if (ret)
		memcpy(lbu_msg, first, sizeof(lbu_msg));
	return ret;
}

/* ------------------------------------------------------------------ */
/* Buffers                                                            */

struct lbu_buf *lbu_buf_alloc(struct lbu_side *s, size_t len,
			      unsigned access)
{
	struct lbu_buf *b;
	size_t alloc = (len + 4095) & ~(size_t)4095;
	void *mem = NULL;

	if (alloc == 0)
		alloc = 4096;
	b = calloc(1, sizeof(*b));
	if (!b || posix_memalign(&mem, 4096, alloc) != 0) {
		free(b);
		lbu_fail("out of memory allocating %zu octets", alloc);
		return NULL;
	}
	memset(mem, 0, alloc);
	b->mem = mem;
	b->len = len;
	b->mr = uiw_reg_mr(s->pd, mem, len ? len : 1, access);
	if (!b->mr) {
		lbu_fail_api("uiw_reg_mr", errno);
		free(mem);
		free(b);
		return NULL;
	}
	if (b->mr->lkey != b->mr->rkey || b->mr->addr != mem ||
	    b->mr->length != (len ? len : 1) || b->mr->pd != s->pd) {
		lbu_fail("uiw_reg_mr returned an MR that does not describe "
			 "the registration (lkey %#x rkey %#x)",
			 b->mr->lkey, b->mr->rkey);
		uiw_dereg_mr(b->mr);
		free(mem);
		free(b);
		return NULL;
	}
	b->next = s->bufs;
	s->bufs = b;
	return b;
}

int lbu_buf_free(struct lbu_side *s, struct lbu_buf *b)
{
	struct lbu_buf **pp;
	int rc = 0;

	for (pp = &s->bufs; *pp; pp = &(*pp)->next) {
		if (*pp == b) {
			*pp = b->next;
			break;
		}
	}
	if (b->mr) {
		rc = uiw_dereg_mr(b->mr);
		if (rc < 0)
			rc = lbu_fail_api("uiw_dereg_mr", rc);
	}
	free(b->mem);
	free(b);
	return rc;
}

uint64_t lbu_to(const struct lbu_buf *b, size_t off)
{
	/* The tagged offset of a registered region is its virtual
	 * address, as with siw and rping. */
	return (uint64_t)(uintptr_t)(b->mem + off);
}

/* ------------------------------------------------------------------ */
/* Work requests and completions                                      */

int lbu_post_recv(struct lbu_side *s, uint64_t wr_id, struct lbu_buf *b,
		  size_t off, size_t len)
{
	struct uiw_recv_wr wr, *bad = NULL;
	struct uiw_sge sge;
	int rc;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	if (len) {
		sge.addr = (uint64_t)(uintptr_t)(b->mem + off);
		sge.length = (uint32_t)len;
		sge.lkey = b->mr->lkey;
		wr.sg_list = &sge;
		wr.num_sge = 1;
	}
	rc = s->srq ? uiw_post_srq_recv(s->srq, &wr, &bad) :
		      uiw_post_recv(s->qp, &wr, &bad);
	if (rc < 0)
		return lbu_fail("%s: %s(wr_id %" PRIu64 ", %zu octets): %s "
				"(%s)", s->name, s->srq ? "uiw_post_srq_recv" :
				"uiw_post_recv", wr_id, len, strerror(-rc),
				uiw_last_error());
	return 0;
}

int lbu_post_send(struct lbu_side *s, uint64_t wr_id,
		  enum uiw_wr_opcode op, unsigned flags, struct lbu_buf *b,
		  size_t off, size_t len, uint64_t raddr, uint32_t rkey,
		  uint32_t inv)
{
	struct uiw_send_wr wr, *bad = NULL;
	struct uiw_sge sge;
	int rc;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.opcode = op;
	wr.send_flags = flags;
	wr.invalidate_stag = inv;
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	if (len) {
		sge.addr = (uint64_t)(uintptr_t)(b->mem + off);
		sge.length = (uint32_t)len;
		sge.lkey = b->mr->lkey;
		wr.sg_list = &sge;
		wr.num_sge = 1;
	}
	rc = uiw_post_send(s->qp, &wr, &bad);
	if (rc < 0)
		return lbu_fail("%s: uiw_post_send(wr_id %" PRIu64 ", opcode "
				"%d, %zu octets): %s (%s)", s->name, wr_id,
				(int)op, len, strerror(-rc),
				uiw_last_error());
	return 0;
}

int lbu_fd_readable(int fd, int timeout_ms)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	int rc;

	for (;;) {
		rc = poll(&pfd, 1, timeout_ms);
		if (rc >= 0)
			break;
		if (errno != EINTR)
			return lbu_fail("poll(fd %d): %s", fd, strerror(errno));
	}
	if (rc == 1 && (pfd.revents & (POLLERR | POLLNVAL)))
		return lbu_fail("poll(fd %d): revents %#x", fd, pfd.revents);
	return rc == 1 && (pfd.revents & POLLIN) ? 1 : 0;
}

static int lbu_poll_some(struct uiw_cq *cq, struct uiw_wc *wc, int n)
{
	int r = uiw_cq_poll(cq, n, wc);

	if (r < 0)
		return lbu_fail("uiw_cq_poll: %s (%s)", strerror(-r),
				uiw_last_error());
	if (r > n)
		return lbu_fail("uiw_cq_poll returned %d for %d entries", r, n);
	return r;
}

int lbu_wait_wc(struct uiw_cq *cq, struct uiw_wc *wc, int n)
{
	int64_t deadline = lbu_now_ms() + lbu_timeout_ms();
	int fd = uiw_cq_fd(cq);
	int got = 0, r, left;

	if (fd < 0)
		return lbu_fail_api("uiw_cq_fd", fd);
	while (got < n) {
		r = lbu_poll_some(cq, wc + got, n - got);
		if (r < 0)
			return -1;
		got += r;
		if (got == n || r > 0)
			continue;
		r = uiw_cq_req_notify(cq, 0);
		if (r < 0)
			return lbu_fail_api("uiw_cq_req_notify", r);
		/* A completion that arrived before the CQ was armed does
		 * not notify: look again before waiting. */
		r = lbu_poll_some(cq, wc + got, n - got);
		if (r < 0)
			return -1;
		got += r;
		if (r > 0)
			continue;
		left = lbu_left(deadline);
		if (left <= 0)
			return lbu_fail("timed out after %d ms waiting for "
					"completions: %d of %d arrived",
					lbu_timeout_ms(), got, n);
		r = lbu_fd_readable(fd, left);
		if (r < 0)
			return -1;
		if (r > 0) {
			r = uiw_cq_ack_events(cq);
			if (r < 0)
				return lbu_fail_api("uiw_cq_ack_events", r);
		}
	}
	return 0;
}

int lbu_spin_wc(struct uiw_cq *cq, struct uiw_wc *wc, int n)
{
	int64_t deadline = lbu_now_ms() + lbu_timeout_ms();
	int got = 0, r;

	while (got < n) {
		r = lbu_poll_some(cq, wc + got, n - got);
		if (r < 0)
			return -1;
		got += r;
		if (got == n)
			break;
		if (r == 0) {
			if (lbu_now_ms() > deadline)
				return lbu_fail("timed out after %d ms polling "
						"for completions: %d of %d "
						"arrived", lbu_timeout_ms(),
						got, n);
			sched_yield();
		}
	}
	return 0;
}

const char *lbu_wc_str(const struct uiw_wc *wc, char *buf, size_t len)
{
	const char *st = uiw_wc_status_str(wc->status);

	snprintf(buf, len,
		 "wr_id=%" PRIu64 " status=%s(%d) opcode=%d byte_len=%u "
		 "flags=%#x inv_stag=%#x qp_num=%u term=%u/%u/%#x origin=%u",
		 wc->wr_id, st ? st : "?", (int)wc->status, (int)wc->opcode,
		 wc->byte_len, wc->flags, wc->invalidated_stag, wc->qp_num,
		 wc->term.layer, wc->term.etype, wc->term.ecode,
		 wc->term.origin);
	return buf;
}

int lbu_expect_wc(struct uiw_cq *cq, uint64_t wr_id,
		  enum uiw_wc_status status, int opcode, struct uiw_wc *out)
{
	struct uiw_wc wc;
	char d[256];

	memset(&wc, 0, sizeof(wc));
	if (lbu_wait_wc(cq, &wc, 1) < 0)
		return lbu_fail("waiting for wr_id %" PRIu64 ": %s", wr_id,
				lbu_err());
	if (out)
		*out = wc;
	if (wc.wr_id != wr_id || wc.status != status ||
	    (opcode >= 0 && (int)wc.opcode != opcode))
		return lbu_fail("expected wr_id=%" PRIu64 " status=%s "
				"opcode=%d, got %s", wr_id,
				uiw_wc_status_str(status), opcode,
				lbu_wc_str(&wc, d, sizeof(d)));
	return 0;
}

int lbu_cq_empty(struct uiw_cq *cq, const char *what)
{
	struct uiw_wc wc;
	char d[256];
	int r;

	r = lbu_poll_some(cq, &wc, 1);
	if (r < 0)
		return -1;
	if (r > 0)
		return lbu_fail("%s: unexpected completion %s", what,
				lbu_wc_str(&wc, d, sizeof(d)));
	return 0;
}

int lbu_no_async_event(struct uiw_device *dev, const char *when)
{
	struct uiw_async_event ev;
	int rc = uiw_device_get_async_event(dev, &ev, 0);

	if (rc == 0)
		return lbu_fail("%s: async event %s, expected none", when,
				uiw_async_event_str(ev.type));
	if (rc != -EAGAIN)
		return lbu_fail("%s: uiw_device_get_async_event: %s (%s)",
				when, strerror(-rc), uiw_last_error());
	if (lbu_fd_readable(uiw_device_async_fd(dev), 0) != 0)
		return lbu_fail("%s: the async event fd is readable with no "
				"event queued", when);
	return 0;
}

int lbu_expect_async_event(struct uiw_device *dev, int timeout_ms,
			   enum uiw_async_event_type type, struct uiw_qp *qp,
			   struct uiw_srq *srq, struct uiw_cq *cq)
{
	struct uiw_async_event ev;
	int rc;

	if (lbu_fd_readable(uiw_device_async_fd(dev), timeout_ms) != 1)
		return lbu_fail("no async event (%s) within %d ms: the fd is "
				"not readable", uiw_async_event_str(type),
				timeout_ms);
	rc = uiw_device_get_async_event(dev, &ev, 0);
	if (rc != 0)
		return lbu_fail("the async event fd is readable, but "
				"uiw_device_get_async_event: %s (%s)",
				strerror(-rc), uiw_last_error());
	if (ev.type != type || ev.qp != qp || ev.srq != srq || ev.cq != cq ||
	    ev.lost)
		return lbu_fail("async event %s (qp %p srq %p cq %p lost %u), "
				"expected %s (qp %p srq %p cq %p)",
				uiw_async_event_str(ev.type), (void *)ev.qp,
				(void *)ev.srq, (void *)ev.cq, ev.lost,
				uiw_async_event_str(type), (void *)qp,
				(void *)srq, (void *)cq);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Data patterns                                                      */

static inline uint64_t lbu_word(uint32_t seed, uint64_t w)
{
	/* splitmix64 of (seed, word index) */
	uint64_t z = ((uint64_t)seed << 40) ^ w;

	z += 0x9e3779b97f4a7c15ULL;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static inline uint8_t lbu_byte(uint32_t seed, uint64_t i)
{
	return (uint8_t)(lbu_word(seed, i >> 3) >> (8 * (i & 7)));
}

void lbu_fill_at(void *p, size_t n, uint32_t seed, uint64_t base)
{
	uint8_t *d = p;
	size_t i = 0;
	uint64_t w;
	int k;

	while (i < n && ((base + i) & 7))
		d[i] = lbu_byte(seed, base + i), i++;
	while (n - i >= 8) {
		w = lbu_word(seed, (base + i) >> 3);
		for (k = 0; k < 8; k++)
			d[i + k] = (uint8_t)(w >> (8 * k));
		i += 8;
	}
	while (i < n)
		d[i] = lbu_byte(seed, base + i), i++;
}

void lbu_fill(void *p, size_t n, uint32_t seed)
{
	lbu_fill_at(p, n, seed, 0);
}

int lbu_verify_at(const void *p, size_t n, uint32_t seed, uint64_t base,
		  const char *what)
{
	const uint8_t *d = p;
	size_t i, bad = 0, first = 0;
	uint8_t want;

	for (i = 0; i < n; i++) {
		want = lbu_byte(seed, base + i);
		if (d[i] != want) {
			if (!bad++)
				first = i;
		}
		/* Whole words at a time once aligned and still clean. */
		if (!bad && ((base + i + 1) & 7) == 0) {
			while (n - (i + 1) >= 8) {
				uint64_t w = lbu_word(seed, (base + i + 1) >> 3);
				int k, ok = 1;

				for (k = 0; k < 8; k++)
					if (d[i + 1 + k] !=
					    (uint8_t)(w >> (8 * k)))
						ok = 0;
				if (!ok)
					break;
				i += 8;
			}
		}
	}
	if (bad)
		return lbu_fail("%s: %zu of %zu octets differ, first at offset "
				"%zu (got %#04x, expected %#04x)", what, bad,
				n, first, d[first],
				lbu_byte(seed, base + first));
	return 0;
}

int lbu_verify(const void *p, size_t n, uint32_t seed, const char *what)
{
	return lbu_verify_at(p, n, seed, 0, what);
}

int lbu_verify_byte(const void *p, size_t n, uint8_t c, const char *what)
{
	const uint8_t *d = p;
	size_t i, bad = 0, first = 0;

	for (i = 0; i < n; i++) {
		if (d[i] != c && !bad++)
			first = i;
	}
	if (bad)
		return lbu_fail("%s: %zu of %zu octets changed, first at offset "
				"%zu (%#04x, expected %#04x)", what, bad, n,
				first, d[first], c);
	return 0;
}
