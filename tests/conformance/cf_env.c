/*
 * The uiwarp side of a conformance case (see cf_env.h).
 */
#include "cf_env.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

const char *cf_err(void)
{
	return rp_err();
}

static int api_fail(const char *call, long rc)
{
	const char *why = uiw_last_error();

	return rp_fail("%s failed (%ld): %s", call, rc,
		       why ? why : "no message");
}

void cf_opts_init(struct cf_opts *o)
{
	int llp = cf_llp();

	memset(o, 0, sizeof(*o));
	o->role = CF_RAW_INITIATES;
	o->raw_flags = UIW_MPA_F_C;
	o->llp = llp < 0 ? CF_LLP_TCP : (enum cf_llp)llp;
}

int cf_llp(void)
{
	const char *v = getenv("UIW_CF_LLP");

	if (!v || !*v || !strcmp(v, "tcp"))
		return CF_LLP_TCP;
	if (!strcmp(v, "sctp"))
		return CF_LLP_SCTP;
	return -1;
}

uint16_t cf_udp_port(void)
{
	static uint16_t port;
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t alen = sizeof(a);
	int fd;

	if (port)
		return port;
	/* Tests run side by side: a free port, not RFC 6951's 9899. */
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&a, &alen) == 0)
		port = ntohs(a.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

/* Whether uiwarp's SCTP stack may have been started in this process: the
 * raw SCTP peer must be forked before. */
static bool uiw_sctp_started;

static int sctp_boot(void)
{
	if (sp_booted())
		return 0;
	if (uiw_sctp_started)
		return rp_fail("the raw SCTP peer must be started before "
			       "uiwarp's usrsctp (cf_run_tests does)");
	return sp_boot() < 0 ? -1 : 0;
}

static void say_left_out(const struct cf_mpa_only *l, size_t n)
{
	size_t k = 0;

	while (l && l[k].name)
		k++;
	printf("[  INFO    ] DDP over SCTP (RFC 5043): %zu of %zu cases are "
	       "about MPA and run over TCP only%s\n", k, n, k ? ":" : "");
	for (; l && l->name; l++)
		printf("[  INFO    ]   %s: %s\n", l->name, l->why);
	fflush(stdout);
}

int cf_run_tests(const char *name, const struct CMUnitTest *tests, size_t n,
		 const struct cf_mpa_only *mpa_only)
{
	const struct cf_mpa_only *m;
	struct CMUnitTest *run;
	size_t i, k = 0;
	int llp = cf_llp(), ret;

	if (llp < 0) {
		fprintf(stderr, "UIW_CF_LLP=%s: not an LLP (tcp, sctp)\n",
			getenv("UIW_CF_LLP"));
		return 1;
	}
	if (llp == CF_LLP_TCP)
		return _cmocka_run_group_tests(name, tests, n, NULL, NULL);
	/* First thing: nothing has initialised usrsctp in this process. */
	if (sctp_boot() < 0) {
		fprintf(stderr, "%s: %s\n", name, rp_err());
		return 1;
	}
	run = calloc(n, sizeof(*run));
	if (!run)
		return 1;
	for (i = 0; i < n; i++) {
		for (m = mpa_only; m && m->name; m++)
			if (!strcmp(m->name, tests[i].name))
				break;
		if (!m || !m->name)
			run[k++] = tests[i];
	}
	say_left_out(mpa_only, n);
	ret = _cmocka_run_group_tests(name, run, k, NULL, NULL);
	free(run);
	return ret;
}

/* The pattern every octet of the allocation starts with. */
static uint8_t pattern(size_t i)
{
	return (uint8_t)(i * 151u + 77u + (i >> 8));
}

uint64_t cf_to(const struct cf_env *e, enum cf_reg k, size_t off)
{
	return (uint64_t)(uintptr_t)(e->r[k].p + off);
}

uint32_t cf_stag(const struct cf_env *e, enum cf_reg k)
{
	return e->r[k].mr ? e->r[k].mr->rkey : 0;
}

/* ---- Memory ------------------------------------------------------------ */

static bool in_arena(const struct cf_env *e, const void *at, size_t len)
{
	const uint8_t *p = at;

	return p >= e->arena && len <= e->arena_len &&
	       (size_t)(p - e->arena) <= e->arena_len - len;
}

void cf_mem_placed(struct cf_env *e, const void *at, const void *data,
		   size_t len)
{
	if (in_arena(e, at, len))
		memcpy(e->shadow + ((const uint8_t *)at - e->arena), data,
		       len);
}

void cf_mem_loose(struct cf_env *e, const void *at, size_t len)
{
	if (in_arena(e, at, len))
		memset(e->loose + ((const uint8_t *)at - e->arena), 1, len);
}

static const char *where(const struct cf_env *e, size_t off, char *buf,
			 size_t cap)
{
	int k;

	for (k = 0; k < CF_NREG; k++) {
		const struct cf_region *r = &e->r[k];
		size_t s;

		if (!r->p)
			continue;
		s = (size_t)(r->p - e->arena);
		if (off >= s && off < s + r->len) {
			snprintf(buf, cap, "region %s octet %zu", r->name,
				 off - s);
			return buf;
		}
		if (off < s && off + CF_GUARD_LEN >= s) {
			snprintf(buf, cap, "guard %zu octets before region %s",
				 s - off, r->name);
			return buf;
		}
		if (off >= s + r->len && off < s + r->len + CF_GUARD_LEN) {
			snprintf(buf, cap, "guard %zu octets after region %s",
				 off - (s + r->len) + 1, r->name);
			return buf;
		}
	}
	snprintf(buf, cap, "arena octet %zu", off);
	return buf;
}

int cf_check_mem(struct cf_env *e)
{
	size_t i, bad = 0, first = 0;
	char w[96];

	for (i = 0; i < e->arena_len; i++) {
		if (e->loose[i] || e->arena[i] == e->shadow[i])
			continue;
		if (!bad++)
			first = i;
	}
	if (bad)
		return rp_fail("%zu octets changed that must not have; the "
			       "first at %s (0x%02x, expected 0x%02x)", bad,
			       where(e, first, w, sizeof(w)), e->arena[first],
			       e->shadow[first]);
	return 0;
}

/* ---- Completions ------------------------------------------------------- */

static struct cf_wr *wr_find(struct cf_env *e, uint64_t id)
{
	int i;

	for (i = 0; i < e->nwr; i++)
		if (e->wr[i].id == id)
			return &e->wr[i];
	return NULL;
}

static int wr_track(struct cf_env *e, uint64_t id, bool recv)
{
	struct cf_wr *w;

	if (wr_find(e, id))
		return rp_fail("work request id 0x%llx posted twice",
			       (unsigned long long)id);
	if (e->nwr == (int)(sizeof(e->wr) / sizeof(e->wr[0])))
		return rp_fail("too many work requests");
	w = &e->wr[e->nwr++];
	w->id = id;
	w->recv = recv;
	w->expect = -1;
	w->done = false;
	return 0;
}

void cf_expect_status(struct cf_env *e, uint64_t id, int status)
{
	struct cf_wr *w = wr_find(e, id);

	if (w)
		w->expect = status;
}

int cf_post_recv(struct cf_env *e, uint64_t id, size_t off, uint32_t len)
{
	struct uiw_sge sge = {
		.addr = cf_to(e, CF_RECV, off),
		.length = len,
		.lkey = e->r[CF_RECV].mr->lkey,
	};
	struct uiw_recv_wr wr = {
		.wr_id = id, .sg_list = &sge, .num_sge = len ? 1 : 0,
	};
	int rc;

	if (off + len > e->r[CF_RECV].len)
		return rp_fail("receive buffer outside its region");
	rc = uiw_post_recv(e->qp, &wr, NULL);
	if (rc)
		return api_fail("uiw_post_recv", rc);
	return wr_track(e, id, true);
}

int cf_post_send(struct cf_env *e, uint64_t id, enum uiw_wr_opcode op,
		 unsigned flags, enum cf_reg k, size_t off, uint32_t len,
		 uint64_t raddr, uint32_t rkey)
{
	struct uiw_sge sge = {
		.addr = cf_to(e, k, off),
		.length = len,
		.lkey = e->r[k].mr ? e->r[k].mr->lkey : 0,
	};
	struct uiw_send_wr wr = {
		.wr_id = id, .sg_list = &sge, .num_sge = len ? 1 : 0,
		.opcode = op, .send_flags = flags | UIW_SEND_SIGNALED,
	};
	int rc;

	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	rc = uiw_post_send(e->qp, &wr, NULL);
	if (rc)
		return api_fail("uiw_post_send", rc);
	return wr_track(e, id, false);
}

int cf_post_send_wr(struct cf_env *e, struct uiw_send_wr *wr)
{
	int rc;

	wr->send_flags |= UIW_SEND_SIGNALED;
	wr->next = NULL;
	rc = uiw_post_send(e->qp, wr, NULL);
	if (rc)
		return api_fail("uiw_post_send", rc);
	return wr_track(e, wr->wr_id, false);
}

static int poll_one(struct uiw_cq *cq, struct uiw_wc *wc, int64_t deadline)
{
	for (;;) {
		int n = uiw_cq_poll(cq, 1, wc);
		int64_t left;

		if (n < 0)
			return api_fail("uiw_cq_poll", n);
		if (n == 1)
			return 0;
		uiw_cq_req_notify(cq, 0);
		n = uiw_cq_poll(cq, 1, wc);
		if (n < 0)
			return api_fail("uiw_cq_poll", n);
		if (n == 1)
			return 0;
		left = deadline - rp_now_ms();
		if (left <= 0)
			return rp_fail("no completion within %d ms",
				       rp_timeout_ms());
		n = uiw_cq_wait(cq, (int)left);
		if (n < 0)
			return api_fail("uiw_cq_wait", n);
		uiw_cq_ack_events(cq);
	}
}

static const char *wc_str(const struct uiw_wc *wc, char *b, size_t cap)
{
	snprintf(b, cap, "wr_id 0x%llx %s (opcode %d, %u octets)",
		 (unsigned long long)wc->wr_id, uiw_wc_status_str(wc->status),
		 wc->opcode, wc->byte_len);
	return b;
}

int cf_wait_wc(struct cf_env *e, struct uiw_cq *cq, uint64_t id,
	       int status, struct uiw_wc *out)
{
	struct uiw_wc wc;
	struct cf_wr *w;
	char b[128];

	if (poll_one(cq, &wc, rp_now_ms() + rp_timeout_ms()) < 0)
		return rp_fail("waiting for wr_id 0x%llx: %s",
			       (unsigned long long)id, rp_err());
	if (wc.wr_id != id || (int)wc.status != status)
		return rp_fail("expected wr_id 0x%llx %s, got %s",
			       (unsigned long long)id,
			       uiw_wc_status_str(status),
			       wc_str(&wc, b, sizeof(b)));
	w = wr_find(e, id);
	if (w) {
		if (w->done)
			return rp_fail("wr_id 0x%llx completed twice",
				       (unsigned long long)id);
		w->done = true;
	}
	if (out)
		*out = wc;
	return 0;
}

static int drain_cq(struct cf_env *e, struct uiw_cq *cq, bool recv)
{
	struct uiw_wc wc;
	char b[128];
	int n;

	while ((n = uiw_cq_poll(cq, 1, &wc)) == 1) {
		struct cf_wr *w = wr_find(e, wc.wr_id);
		int want;

		if (!w || w->recv != recv)
			return rp_fail("unexpected completion %s",
				       wc_str(&wc, b, sizeof(b)));
		if (w->done)
			return rp_fail("completed twice: %s",
				       wc_str(&wc, b, sizeof(b)));
		w->done = true;
		want = w->expect == -1 ? UIW_WC_WR_FLUSH_ERR : w->expect;
		if (want == CF_WC_SUCCESS_OR_FLUSH &&
		    (wc.status == UIW_WC_SUCCESS ||
		     wc.status == UIW_WC_WR_FLUSH_ERR))
			want = (int)wc.status;
		if (want == CF_WC_ANY_ERROR && wc.status != UIW_WC_SUCCESS)
			want = (int)wc.status;
		if ((int)wc.status != want)
			return rp_fail("%s, expected %s",
				       wc_str(&wc, b, sizeof(b)),
				       uiw_wc_status_str(want));
		if (recv && wc.opcode != UIW_WC_RECV)
			return rp_fail("receive completion with opcode %d",
				       wc.opcode);
		if (wc.qp != e->qp)
			return rp_fail("completion of another QP: %s",
				       wc_str(&wc, b, sizeof(b)));
	}
	if (n < 0)
		return api_fail("uiw_cq_poll", n);
	return 0;
}

int cf_finish_wcs(struct cf_env *e)
{
	int i;

	if (drain_cq(e, e->scq, false) < 0 ||
	    (e->rcq != e->scq && drain_cq(e, e->rcq, true) < 0))
		return -1;
	for (i = 0; i < e->nwr; i++)
		if (!e->wr[i].done)
			return rp_fail("wr_id 0x%llx never completed",
				       (unsigned long long)e->wr[i].id);
	return 0;
}

int cf_wait_not_rts(struct cf_env *e)
{
	int64_t deadline = rp_now_ms() + rp_timeout_ms();
	int st;

	while ((st = cf_qp_state(e, NULL)) == UIW_QPS_RTS) {
		if (rp_now_ms() > deadline)
			return rp_fail("the QP still in RTS after %d ms",
				       rp_timeout_ms());
		sched_yield();
	}
	return st < 0 ? -1 : 0;
}

/* ---- CM events --------------------------------------------------------- */

int cf_wait_event(struct cf_env *e, enum uiw_cm_event_type type,
		  struct uiw_cm_id *id, struct uiw_cm_event *ev)
{
	struct uiw_cm_event tmp;
	int rc;

	if (!ev)
		ev = &tmp;
	memset(ev, 0, sizeof(*ev));
	rc = uiw_cm_get_event(e->ch, ev, rp_timeout_ms());
	if (rc == -ETIMEDOUT)
		return rp_fail("no CM event (waiting for %s) within %d ms",
			       uiw_cm_event_str(type), rp_timeout_ms());
	if (rc < 0)
		return api_fail("uiw_cm_get_event", rc);
	if (ev->type != type || (id && ev->id != id))
		return rp_fail("expected CM event %s, got %s (status %d)%s",
			       uiw_cm_event_str(type),
			       uiw_cm_event_str(ev->type), ev->status,
			       id && ev->id != id ? " for another id" : "");
	return 0;
}

int cf_no_event(struct cf_env *e)
{
	struct uiw_cm_event ev;
	int rc = uiw_cm_get_event(e->ch, &ev, 0);

	if (rc == -EAGAIN)
		return 0;
	if (rc < 0)
		return api_fail("uiw_cm_get_event", rc);
	return rp_fail("unexpected CM event %s (status %d)",
		       uiw_cm_event_str(ev.type), ev.status);
}

int cf_qp_state(struct cf_env *e, struct uiw_qp_attr *a)
{
	struct uiw_qp_attr tmp;
	int rc;

	if (!a)
		a = &tmp;
	rc = uiw_qp_query(e->qp, a);
	if (rc)
		return api_fail("uiw_qp_query", rc);
	return (int)a->state;
}

/* ---- Set-up ------------------------------------------------------------ */

static const char *const reg_name[CF_NREG] = {
	"WRITE", "READ", "LOCAL", "OTHER_PD", "RECV", "SINK", "SRC",
	"ATOMIC", "BIG",
};

static const unsigned reg_access[CF_NREG] = {
	[CF_WRITE] = UIW_ACCESS_LOCAL_WRITE | UIW_ACCESS_REMOTE_WRITE,
	[CF_READ] = UIW_ACCESS_REMOTE_READ,
	[CF_LOCAL] = UIW_ACCESS_LOCAL_WRITE,
	[CF_OTHER_PD] = UIW_ACCESS_LOCAL_WRITE | UIW_ACCESS_REMOTE_WRITE |
			UIW_ACCESS_REMOTE_READ | UIW_ACCESS_REMOTE_ATOMIC,
	[CF_RECV] = UIW_ACCESS_LOCAL_WRITE,
	[CF_SINK] = UIW_ACCESS_LOCAL_WRITE,
	[CF_SRC] = UIW_ACCESS_LOCAL_WRITE,
	[CF_ATOMIC] = UIW_ACCESS_LOCAL_WRITE | UIW_ACCESS_REMOTE_ATOMIC,
	[CF_BIG] = UIW_ACCESS_REMOTE_READ,
};

static int setup_regions(struct cf_env *e)
{
	size_t at = CF_GUARD_LEN, i;
	int k;

	e->arena_len = CF_GUARD_LEN;
	for (k = 0; k < CF_NREG; k++) {
		size_t len = k == CF_BIG ? e->o.big_len : CF_REG_LEN;

		/* page multiples keep every region page aligned */
		len = (len + 4095) & ~(size_t)4095;
		e->arena_len += len + CF_GUARD_LEN;
	}
	if (posix_memalign((void **)&e->arena, 4096, e->arena_len))
		return rp_fail("out of memory for %zu octets", e->arena_len);
	e->shadow = malloc(e->arena_len);
	e->loose = calloc(1, e->arena_len);
	if (!e->shadow || !e->loose)
		return rp_fail("out of memory");
	for (i = 0; i < e->arena_len; i++)
		e->arena[i] = e->shadow[i] = pattern(i);
	for (k = 0; k < CF_NREG; k++) {
		struct cf_region *r = &e->r[k];
		size_t len = k == CF_BIG ? e->o.big_len : CF_REG_LEN;
		size_t span = (len + 4095) & ~(size_t)4095;

		r->name = reg_name[k];
		r->access = reg_access[k];
		if (len == 0) {
			at += span + CF_GUARD_LEN;
			continue;
		}
		r->p = e->arena + at;
		r->len = len;
		r->mr = uiw_reg_mr(k == CF_OTHER_PD ? e->pd2 : e->pd, r->p,
				   len, r->access);
		if (!r->mr)
			return api_fail("uiw_reg_mr", -errno);
		at += span + CF_GUARD_LEN;
	}
	return 0;
}

/* The raw peer's request reaches the application, which accepts it on
 * the QP: CONNECT_REQUEST, uiw_cm_accept, ESTABLISHED. */
static int accept_request(struct cf_env *e, const struct uiw_conn_param *p)
{
	struct uiw_cm_event ev;
	int rc;

	if (cf_wait_event(e, UIW_CM_EVENT_CONNECT_REQUEST, NULL, &ev) < 0)
		return -1;
	e->id = ev.id;
	rc = uiw_cm_accept(e->id, e->qp, p);
	if (rc)
		return api_fail("uiw_cm_accept", rc);
	return cf_wait_event(e, UIW_CM_EVENT_ESTABLISHED, e->id, NULL);
}

/* The raw peer's association: as the case says, with its receive
 * buffer. */
static struct sp_opts raw_sp_opts(const struct cf_opts *o)
{
	struct sp_opts so = o->sp;

	if (!so.rcvbuf)
		so.rcvbuf = o->raw_rcvbuf;
	return so;
}

int cf_setup(struct cf_env *e, const struct cf_opts *o)
{
	struct uiw_qp_init_attr qa = { 0 };
	int i, nrecv;

	memset(e, 0, sizeof(*e));
	e->inited = true;
	e->o = *o;
	e->rp_lfd = -1;
	e->sp_lid = -1;
	e->rp.fd = -1;
	e->rp.sp = -1;
	if (o->llp == CF_LLP_SCTP && sctp_boot() < 0)
		return -1;
	if (!e->o.recv_len)
		e->o.recv_len = 256;
	nrecv = e->o.nrecv == 0 ? 4 : e->o.nrecv < 0 ? 0 : e->o.nrecv;
	if ((size_t)nrecv * e->o.recv_len > CF_REG_LEN)
		return rp_fail("receive buffers do not fit their region");
	if (o->dev) {
		e->dev = o->dev;
	} else {
		e->dev = uiw_device_open(NULL);
		if (!e->dev)
			return api_fail("uiw_device_open", -errno);
		e->own_dev = true;
	}
	e->pd = uiw_pd_alloc(e->dev);
	e->pd2 = uiw_pd_alloc(e->dev);
	if (!e->pd || !e->pd2)
		return api_fail("uiw_pd_alloc", -errno);
	e->scq = uiw_cq_create(e->dev, o->cqe ? o->cqe : 256);
	e->rcq = uiw_cq_create(e->dev, o->cqe ? o->cqe : 256);
	if (!e->scq || !e->rcq)
		return api_fail("uiw_cq_create", -errno);
	qa.send_cq = e->scq;
	qa.recv_cq = e->rcq;
	qa.cap.max_send_wr = 16;
	qa.cap.max_recv_wr = 16;
	qa.cap.max_send_sge = 2;
	qa.cap.max_recv_sge = 2;
	e->qp = uiw_qp_create(e->pd, &qa);
	if (!e->qp)
		return api_fail("uiw_qp_create", -errno);
	if (setup_regions(e) < 0)
		return -1;
	for (i = 0; i < nrecv; i++)
		if (cf_post_recv(e, CF_WR_RECV(i), (size_t)i * e->o.recv_len,
				 e->o.recv_len) < 0)
			return -1;
	e->ch = uiw_cm_channel_create(e->dev);
	if (!e->ch)
		return api_fail("uiw_cm_channel_create", -errno);
	if (o->llp == CF_LLP_SCTP && o->role == CF_RAW_RESPONDS) {
		struct sp_opts so = raw_sp_opts(o);

		return sp_listen(&so, &e->sp_lid, &e->rp_port,
				 &e->rp_udp_port) < 0 ? -1 : 0;
	}
	if (o->role == CF_RAW_INITIATES) {
		struct sockaddr_in a = { .sin_family = AF_INET };
		struct uiw_listen_param lp = { .backlog = 8 };
		struct sockaddr_storage ss;
		int rc;

		a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		if (o->llp == CF_LLP_SCTP) {
			lp.llp = UIW_LLP_SCTP_UDP;
			lp.udp_port = cf_udp_port();
			uiw_sctp_started = true;
		}
		rc = uiw_cm_listen_ex(e->ch, (struct sockaddr *)&a, sizeof(a),
				      &lp, &e->lid);
		if (rc)
			return api_fail("uiw_cm_listen", rc);
		rc = uiw_cm_local_addr(e->lid, &ss);
		if (rc)
			return api_fail("uiw_cm_local_addr", rc);
		e->port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
		if (o->startup_timeout_ms) {
			rc = uiw_cm_set_startup_timeout(e->lid,
							o->startup_timeout_ms);
			if (rc)
				return api_fail("uiw_cm_set_startup_timeout",
						rc);
		}
	} else {
		e->rp_lfd = rp_listen(&e->rp_port);
		if (e->rp_lfd < 0)
			return -1;
	}
	return 0;
}

static void conn_param(const struct cf_env *e, struct uiw_conn_param *p)
{
	memset(p, 0, sizeof(*p));
	/* RFC 5044 startup (revision 1); RFC 6581 has its own cases. */
	p->mpa_rev = 1;
	p->crc = e->o.crc;
	p->markers = e->o.markers;
	p->ird = e->o.ird;
	p->ord = e->o.ord;
	p->timeout_ms = e->o.conn_timeout_ms;
	if (e->o.llp == CF_LLP_SCTP) {
		/* RFC 5043 over UDP (RFC 6951); revision 1 asks for the
		 * plain session codes. */
		p->llp = UIW_LLP_SCTP_UDP;
		p->udp_port = e->rp_udp_port;
	}
}

/* The DDP Stream Session (RFC 5043 §6.2) where TCP has its MPA startup:
 * plain Initiate and Accept without private data. */
static int sctp_connect(struct cf_env *e, const struct uiw_conn_param *p)
{
	struct sp_state st;
	int rc, id = -1;

	if (e->o.role == CF_RAW_INITIATES) {
		struct sp_opts so = raw_sp_opts(&e->o);

		rc = sp_connect(&so, e->port, cf_udp_port(), &id);
		if (id >= 0) {
			rp_sctp_init(&e->rp, id, e->o.sctp_sid);
			e->rp_open = true;
		}
		if (rc < 0)
			return -1;
		if (sp_state(id, &st) < 0)
			return -1;
		if (!st.up || st.down)
			return rp_fail("the association to uiwarp is not up "
				       "(%s)", st.down ?
				       strerror(st.down_err) : "not yet");
		if (rp_ddps_send_ctl(&e->rp, UIW_DDPS_INITIATE, NULL, NULL,
				     0) < 0 || accept_request(e, p) < 0)
			return -1;
		rc = rp_ddps_recv_ctl(&e->rp);
		if (rc < 0)
			return -1;
		/* RFC 5043 §6.2: the Accept, DDP-SSN 0 of uiwarp's side,
		 * with the (empty) private data of the ULP. */
		if (rc != UIW_DDPS_ACCEPT || e->rp.ctl.ssn != 0 ||
		    e->rp.ctl.pd_len != 0)
			return rp_fail("uiwarp answered the Initiate with a %s "
				       "(DDP-SSN %u, %u octets of private "
				       "data)", uiw_ddps_fc_name((uint16_t)rc),
				       e->rp.ctl.ssn, e->rp.ctl.pd_len);
		return 0;
	}
	uiw_sctp_started = true;
	{
		struct sockaddr_in a = { .sin_family = AF_INET };

		a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		a.sin_port = htons(e->rp_port);
		rc = uiw_cm_connect(e->ch, e->qp, (struct sockaddr *)&a,
				    sizeof(a), p, &e->id);
		if (rc)
			return api_fail("uiw_cm_connect", rc);
	}
	if (sp_accept(e->sp_lid, &id, 0) < 0)
		return -1;
	rp_sctp_init(&e->rp, id, 0);
	e->rp_open = true;
	if (rp_ddps_respond(&e->rp, NULL, NULL, 0) < 0)
		return -1;
	if (e->rp.ctl.fc != UIW_DDPS_INITIATE || e->rp.ctl.ssn != 0 ||
	    e->rp.ctl.pd_len != 0)
		return rp_fail("uiwarp's first control message is a %s "
			       "(DDP-SSN %u, %u octets of private data), not "
			       "a plain Initiate", uiw_ddps_fc_name(e->rp.ctl.fc),
			       e->rp.ctl.ssn, e->rp.ctl.pd_len);
	return cf_wait_event(e, UIW_CM_EVENT_ESTABLISHED, e->id, NULL);
}

int cf_connect(struct cf_env *e)
{
	struct uiw_conn_param p;
	int rc;

	conn_param(e, &p);
	if (e->o.llp == CF_LLP_SCTP) {
		if (sctp_connect(e, &p) < 0)
			return -1;
	} else if (e->o.role == CF_RAW_INITIATES) {
		if (rp_connect(&e->rp, e->port, e->o.raw_rcvbuf) < 0)
			return -1;
		e->rp_open = true;
		if (rp_mpa_send_frame(&e->rp, false, e->o.raw_flags, 1, NULL,
				      0) < 0 || accept_request(e, &p) < 0)
			return -1;
		if (rp_mpa_read_frame(&e->rp, true) < 0)
			return -1;
		/* RFC 5044 §7.1.1: an accepting Reply has R clear, Res
		 * zero, revision 1. */
		if (e->rp.peer_flags & (UIW_MPA_F_R | UIW_MPA_F_RES) ||
		    e->rp.peer_rev != 1)
			return rp_fail("uiwarp's Reply has flags 0x%02x, "
				       "revision %u", e->rp.peer_flags,
				       e->rp.peer_rev);
		rp_full_operation(&e->rp, e->o.raw_flags);
	} else {
		struct sockaddr_in a = { .sin_family = AF_INET };

		a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		a.sin_port = htons(e->rp_port);
		rc = uiw_cm_connect(e->ch, e->qp, (struct sockaddr *)&a,
				    sizeof(a), &p, &e->id);
		if (rc)
			return api_fail("uiw_cm_connect", rc);
		if (rp_accept(&e->rp, e->rp_lfd) < 0)
			return -1;
		e->rp_open = true;
		if (rp_mpa_respond(&e->rp, e->o.raw_flags, NULL, 0) < 0)
			return -1;
		if (e->rp.peer_flags & (UIW_MPA_F_R | UIW_MPA_F_RES))
			return rp_fail("uiwarp's Request has flags 0x%02x",
				       e->rp.peer_flags);
		if (cf_wait_event(e, UIW_CM_EVENT_ESTABLISHED, e->id, NULL) <
		    0)
			return -1;
	}
	if (cf_qp_state(e, NULL) != UIW_QPS_RTS)
		return rp_fail("QP not in RTS after ESTABLISHED");
	return 0;
}

static const char prime_msg[] = "conformance: first FPDU";

int cf_prime(struct cf_env *e)
{
	struct uiw_wc wc;

	if (e->o.role == CF_RAW_INITIATES) {
		size_t n = sizeof(prime_msg) - 1;

		if (rp_send_send(&e->rp, UIW_OP_SEND, 0, prime_msg, n) < 0)
			return -1;
		if (cf_wait_wc(e, e->rcq, CF_WR_RECV(0), UIW_WC_SUCCESS,
			       &wc) < 0)
			return -1;
		if (wc.byte_len != n)
			return rp_fail("first Send: %u octets received, %zu "
				       "sent", wc.byte_len, n);
		cf_mem_placed(e, e->r[CF_RECV].p, prime_msg, n);
		return 0;
	}
	memcpy(e->r[CF_SRC].p, "uiwarp says hi!!", 16);
	cf_mem_placed(e, e->r[CF_SRC].p, "uiwarp says hi!!", 16);
	if (cf_post_send(e, CF_WR_PRIME_SEND, UIW_WR_SEND, 0, CF_SRC, 0, 16,
			 0, 0) < 0)
		return -1;
	if (rp_recv_seg(&e->rp, &e->seg) < 0)
		return -1;
	if (e->seg.h.tagged || e->seg.h.qn != 0 || e->seg.h.msn != 1 ||
	    e->seg.h.opcode != UIW_OP_SEND || e->seg.plen != 16 ||
	    memcmp(e->seg.pl, "uiwarp says hi!!", 16))
		return rp_fail("uiwarp's first Send arrived wrong");
	return cf_wait_wc(e, e->scq, CF_WR_PRIME_SEND, UIW_WC_SUCCESS, NULL);
}

int cf_outstanding(struct cf_env *e)
{
	struct rp_seg *s = &e->seg;

	if (cf_post_send(e, CF_WR_READ, UIW_WR_RDMA_READ, 0, CF_SINK, 0,
			 CF_READ_LEN, CF_READ_SRC_TO, CF_READ_SRC_STAG) < 0 ||
	    cf_post_send(e, CF_WR_FENCED_SEND, UIW_WR_SEND, UIW_SEND_FENCE,
			 CF_SRC, 0, 0, 0, 0) < 0)
		return -1;
	if (rp_recv_seg(&e->rp, s) < 0)
		return -1;
	/* RFC 5040 §4.4, §5.2.1: queue 1, MSN 1, one segment. */
	if (s->h.tagged || s->h.opcode != UIW_OP_READ_REQ || s->h.qn != 1 ||
	    s->h.msn != 1 || s->h.mo != 0 || !s->h.last ||
	    s->h.rsvd_ulp != 0 || s->plen != UIW_READ_REQ_LEN)
		return rp_fail("uiwarp's RDMA Read Request arrived wrong");
	uiw_read_req_decode(s->pl, &e->out_rr);
	if (e->out_rr.sink_stag != cf_stag(e, CF_SINK) ||
	    e->out_rr.sink_to != cf_to(e, CF_SINK, 0) ||
	    e->out_rr.size != CF_READ_LEN ||
	    e->out_rr.src_stag != CF_READ_SRC_STAG ||
	    e->out_rr.src_to != CF_READ_SRC_TO)
		return rp_fail("uiwarp's RDMA Read Request has wrong fields");
	/* The fenced Send must wait for the Read (nothing else arrives). */
	return 0;
}

int cf_open(struct cf_env *e, const struct cf_opts *o, bool outstanding)
{
	if (cf_setup(e, o) < 0 || cf_connect(e) < 0 || cf_prime(e) < 0)
		return -1;
	if (outstanding && cf_outstanding(e) < 0)
		return -1;
	return 0;
}

int cf_close(struct cf_env *e)
{
	int k, rc, bad = 0;

	if (!e->inited)
		return 0;
	e->inited = false;
	if (e->rp_open)
		rp_abort(&e->rp);
	e->rp_open = false;
	if (e->rp_lfd >= 0)
		close(e->rp_lfd);
	e->rp_lfd = -1;
	if (e->sp_lid >= 0)
		sp_close(e->sp_lid);
	e->sp_lid = -1;
	if (e->id && uiw_cm_destroy_id(e->id))
		bad++;
	e->id = NULL;
	if (e->lid && uiw_cm_destroy_id(e->lid))
		bad++;
	e->lid = NULL;
	if (e->qp && uiw_qp_destroy(e->qp))
		bad++;
	e->qp = NULL;
	for (k = 0; k < CF_NREG; k++) {
		if (e->r[k].mr && uiw_dereg_mr(e->r[k].mr))
			bad++;
		e->r[k].mr = NULL;
	}
	if (e->ch && uiw_cm_channel_destroy(e->ch))
		bad++;
	e->ch = NULL;
	if (e->scq && uiw_cq_destroy(e->scq))
		bad++;
	if (e->rcq && uiw_cq_destroy(e->rcq))
		bad++;
	e->scq = e->rcq = NULL;
	if (e->pd && uiw_pd_free(e->pd))
		bad++;
	if (e->pd2 && uiw_pd_free(e->pd2))
		bad++;
	e->pd = e->pd2 = NULL;
	if (e->dev && e->own_dev) {
		rc = uiw_device_close(e->dev);
		if (rc) {
			fprintf(stderr, "uiw_device_close: %s\n",
				uiw_last_error());
			bad++;
		}
	}
	e->dev = NULL;
	free(e->arena);
	free(e->shadow);
	free(e->loose);
	e->arena = e->shadow = e->loose = NULL;
	return bad ? -1 : 0;
}

/* ---- The end of a case ------------------------------------------------- */

static int check_term(struct cf_env *e, const struct cf_term_expect *x,
		      const struct rp_seg *s, const struct uiw_term *t)
{
	size_t want_len = UIW_TERM_HDR_LEN, sent, i;
	char a[200], b[200];

	if (t->err != x->err)
		return rp_fail("Terminate says \"%s\" (layer %u etype %u code "
			       "0x%02x), expected \"%s\"", uiw_err_str(t->err),
			       UIW_ERR_LAYER(t->err), UIW_ERR_ETYPE(t->err),
			       UIW_ERR_ECODE(t->err), uiw_err_str(x->err));
	if (t->m != x->m || t->d != x->d || t->r != x->r)
		return rp_fail("Terminate for \"%s\" has M %d D %d R %d, "
			       "expected M %d D %d R %d", uiw_err_str(x->err),
			       t->m, t->d, t->r, x->m, x->d, x->r);
	if (x->m || x->d)
		want_len += UIW_TERM_SEGLEN_LEN;
	if (x->m && t->ddp_seg_len != x->seg_len)
		return rp_fail("Terminate DDP Segment Length %u, expected %u",
			       t->ddp_seg_len, x->seg_len);
	if (x->d) {
		sent = x->ddp_hdr_sent ? x->ddp_hdr_sent : x->ddp_hdr_len;
		want_len += x->ddp_hdr_len;
		if (t->ddp_hdr_len != x->ddp_hdr_len ||
		    memcmp(t->ddp_hdr, x->ddp_hdr, sent))
			return rp_fail("Terminated DDP Header %s, expected %s",
				       rp_hex(t->ddp_hdr, t->ddp_hdr_len, a,
					      sizeof(a)),
				       rp_hex(x->ddp_hdr, sent, b,
					      sizeof(b)));
		for (i = sent; i < x->ddp_hdr_len; i++)
			if (t->ddp_hdr[i])
				return rp_fail("Terminated DDP Header %s: "
					       "octets not received must be "
					       "zero", rp_hex(t->ddp_hdr,
					       t->ddp_hdr_len, a, sizeof(a)));
	}
	if (x->r) {
		want_len += UIW_READ_REQ_LEN;
		if (t->rdmap_hdr_len != UIW_READ_REQ_LEN ||
		    memcmp(t->rdmap_hdr, x->rdmap_hdr, UIW_READ_REQ_LEN))
			return rp_fail("Terminated RDMA Header %s, expected "
				       "%s", rp_hex(t->rdmap_hdr,
				       t->rdmap_hdr_len, a, sizeof(a)),
				       rp_hex(x->rdmap_hdr, UIW_READ_REQ_LEN,
					      b, sizeof(b)));
	}
	if (s->plen != want_len)
		return rp_fail("Terminate payload of %zu octets, expected %zu: "
			       "%s", s->plen, want_len,
			       rp_hex(s->pl, s->plen, a, sizeof(a)));
	return 0;
}

static int check_cause(struct cf_env *e, uiw_err_t err, int origin,
		       bool after)
{
	struct uiw_qp_attr a;
	int st = cf_qp_state(e, &a);

	if (st < 0)
		return -1;
	if (after ? st != UIW_QPS_ERROR :
		    st != UIW_QPS_TERMINATE && st != UIW_QPS_ERROR)
		return rp_fail("QP in state %s%s", uiw_qp_state_str(st),
			       after ? ", expected Error once closed" :
				       " after its Terminate");
	if (UIW_ERR(a.term.layer, a.term.etype, a.term.ecode) != err ||
	    a.term.origin != origin)
		return rp_fail("QP term cause \"%s\" origin %u (%s), expected "
			       "\"%s\" origin %d",
			       uiw_term_cause_str(&a.term), a.term.origin,
			       a.term_msg, uiw_err_str(err), origin);
	return 0;
}

static int end_of_case(struct cf_env *e, uiw_err_t err, int origin)
{
	struct uiw_recv_wr rwr = { .wr_id = 0xdead };
	int rc;

	/* We close too; uiwarp then ends the connection. */
	rp_close(&e->rp);
	e->rp_open = false;
	if (cf_wait_event(e, UIW_CM_EVENT_DISCONNECTED, e->id, NULL) < 0)
		return -1;
	if (check_cause(e, err, origin, true) < 0)
		return -1;
	if (cf_finish_wcs(e) < 0)
		return -1;
	/* RFC 5041 §6.2.1, RFC 5040 §5.4: no more work on this stream. */
	rc = uiw_post_recv(e->qp, &rwr, NULL);
	if (rc != -EINVAL)
		return rp_fail("posting a receive on the failed QP returned "
			       "%d, expected -EINVAL", rc);
	if (cf_check_mem(e) < 0)
		return -1;
	return cf_no_event(e);
}

int cf_expect_term(struct cf_env *e, const struct cf_term_expect *x)
{
	struct uiw_term t;
	size_t extra = 0;
	int how;

	if (e->seg_pending) {
		struct rp_seg *s = &e->seg;

		e->seg_pending = false;
		if (s->h.tagged || s->h.opcode != UIW_OP_TERMINATE ||
		    s->h.qn != UIW_QN_TERMINATE || !s->h.last ||
		    s->h.mo != 0 || s->h.msn != 1 || s->plen < 4 ||
		    uiw_term_decode(s->pl, s->plen, &t) != UIW_OK ||
		    t.siw_layout)
			return rp_fail("expected a Terminate, got opcode %u "
				       "on %s queue %u", s->h.opcode,
				       s->h.tagged ? "tagged" : "untagged",
				       s->h.qn);
	} else if (rp_recv_term(&e->rp, &e->seg, &t) < 0) {
		return -1;
	}
	if (check_term(e, x, &e->seg, &t) < 0)
		return -1;
	if (check_cause(e, x->err, UIW_TERM_LOCAL, false) < 0)
		return -1;
	/* RFC 5040 §5.4: nothing after the Terminate; RFC 5040 §6.2.1:
	 * then a graceful teardown so that the Terminate arrives. */
	how = rp_wait_closed(&e->rp, &extra);
	if (how < 0)
		return -1;
	if (extra) {
		char hx[200];

		return rp_fail("%zu octets followed the Terminate: %s", extra,
			       rp_hex(e->rp.dropped, e->rp.ndropped, hx,
				      sizeof(hx)));
	}
	if (how != RP_CLOSED_FIN)
		return rp_fail("the connection was reset after the Terminate "
			       "instead of closed");
	return end_of_case(e, x->err, UIW_TERM_LOCAL);
}

static int expect_closed(struct cf_env *e, uiw_err_t err, int origin)
{
	size_t extra = 0;
	int how = rp_wait_closed(&e->rp, &extra);

	if (how < 0)
		return -1;
	if (extra) {
		char hx[200];

		return rp_fail("uiwarp sent %zu octets before closing: %s",
			       extra, rp_hex(e->rp.dropped, e->rp.ndropped,
					     hx, sizeof(hx)));
	}
	/* Over SCTP the Session Terminate goes out as the session ends
	 * (ddps.c), and may be read here before uiwarp's progress thread
	 * has taken the QP out of RTS. */
	if (e->rp.sctp && cf_wait_not_rts(e) < 0)
		return -1;
	if (check_cause(e, err, origin, false) < 0)
		return -1;
	return end_of_case(e, err, origin);
}

int cf_expect_closed(struct cf_env *e, uiw_err_t err)
{
	return expect_closed(e, err, UIW_TERM_LOCAL);
}

int cf_expect_closed_remote(struct cf_env *e, uiw_err_t err)
{
	return expect_closed(e, err, UIW_TERM_REMOTE);
}

int cf_expect_closed_llp(struct cf_env *e, uiw_err_t err)
{
	return expect_closed(e, err, UIW_TERM_LLP);
}

int cf_read_resp(struct cf_env *e, uint32_t sink_stag, uint64_t sink_to,
		 const uint8_t *src, size_t len, size_t *got)
{
	struct rp_seg *s = &e->seg;

	*got = 0;
	for (;;) {
		if (rp_recv_seg(&e->rp, s) < 0)
			return -1;
		if (!s->h.tagged || s->h.opcode != UIW_OP_READ_RESP) {
			e->seg_pending = true;
			return 1;
		}
		/* RFC 5040 §5.2.2: to the sink the Request named, TO
		 * advancing. */
		if (s->h.stag != sink_stag || s->h.to != sink_to + *got ||
		    *got + s->plen > len ||
		    memcmp(s->pl, src + *got, s->plen))
			return rp_fail("Read Response segment STag 0x%08x TO "
				       "0x%llx with %zu octets after %zu "
				       "does not match", s->h.stag,
				       (unsigned long long)s->h.to, s->plen,
				       *got);
		*got += s->plen;
		if (s->h.last) {
			if (*got != len)
				return rp_fail("Read Response ended after %zu "
					       "of %zu octets", *got, len);
			return 0;
		}
	}
}

int cf_state_new(void **state)
{
	*state = calloc(1, sizeof(struct cf_env));
	return *state ? 0 : -1;
}

int cf_state_free(void **state)
{
	struct cf_env *e = *state;
	int rc = cf_close(e);

	free(e);
	return rc;
}
