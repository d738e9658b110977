/*
 * The drop-in libibverbs.so.1 on one host, without a connection: the
 * device and what it reports, PD and MR rules, CQs and completion
 * channels (a real event from a flushed QP, O_NONBLOCK, a signal,
 * pthread_cancel), QP caps and posting errors, SRQs, and every
 * unsupported call failing with EOPNOTSUPP.  Built against rdma-core's
 * verbs.h and linked to build/compat/libibverbs.so.1.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>
#include <cmocka.h>
#include <infiniband/verbs.h>

struct fx {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	char buf[8192];
	struct ibv_mr *mr;
};

static struct ibv_context *open_ctx(void)
{
	struct ibv_device **l;
	struct ibv_context *c;
	int n = 0;

	l = ibv_get_device_list(&n);
	assert_non_null(l);
	assert_int_equal(n, 1);
	c = ibv_open_device(l[0]);
	assert_non_null(c);
	ibv_free_device_list(l);
	return c;
}

static struct ibv_qp *make_qp(struct fx *f, struct ibv_srq *srq)
{
	struct ibv_qp_init_attr a = {
		.send_cq = f->cq, .recv_cq = f->cq, .srq = srq,
		.cap = { .max_send_wr = 8, .max_recv_wr = 8,
			 .max_send_sge = 2, .max_recv_sge = 2,
			 .max_inline_data = 64 },
		.qp_type = IBV_QPT_RC,
	};

	return ibv_create_qp(f->pd, &a);
}

static int to_state(struct ibv_qp *qp, enum ibv_qp_state s)
{
	struct ibv_qp_attr a = { .qp_state = s };

	return ibv_modify_qp(qp, &a, IBV_QP_STATE);
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	setenv("UIWARP_ADDR", "127.0.0.1", 1);
	f->ctx = open_ctx();
	f->pd = ibv_alloc_pd(f->ctx);
	assert_non_null(f->pd);
	f->ch = ibv_create_comp_channel(f->ctx);
	assert_non_null(f->ch);
	f->cq = ibv_create_cq(f->ctx, 64, f, f->ch, 0);
	assert_non_null(f->cq);
	f->qp = make_qp(f, NULL);
	assert_non_null(f->qp);
	f->mr = ibv_reg_mr(f->pd, f->buf, sizeof(f->buf),
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			   IBV_ACCESS_REMOTE_READ);
	assert_non_null(f->mr);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	if (f->qp)
		assert_int_equal(ibv_destroy_qp(f->qp), 0);
	assert_int_equal(ibv_dereg_mr(f->mr), 0);
	if (f->cq)
		assert_int_equal(ibv_destroy_cq(f->cq), 0);
	assert_int_equal(ibv_destroy_comp_channel(f->ch), 0);
	assert_int_equal(ibv_dealloc_pd(f->pd), 0);
	assert_int_equal(ibv_close_device(f->ctx), 0);
	free(f);
	return 0;
}

/* ---- Device -------------------------------------------------------------- */

static void test_device(void **state)
{
	struct ibv_device **l = ibv_get_device_list(NULL);
	struct ibv_device_attr_ex ax;
	struct ibv_device_attr a;
	struct ibv_context *c;

	assert_non_null(l);
	assert_non_null(l[0]);
	assert_null(l[1]);
	assert_string_equal(ibv_get_device_name(l[0]), "uiwarp0");
	assert_int_equal(l[0]->node_type, IBV_NODE_RNIC);
	assert_int_equal(l[0]->transport_type, IBV_TRANSPORT_IWARP);
	/* 127.0.0.1 in a locally administered EUI-64. */
	assert_true(ibv_get_device_guid(l[0]) == htobe64(0x020000007f000001ULL));
	assert_int_equal(ibv_get_device_index(l[0]), 0);
	c = ibv_open_device(l[0]);
	assert_non_null(c);
	assert_int_equal(ibv_query_device(c, &a), 0);
	assert_int_equal(strncmp(a.fw_ver, "uiwarp ", 7), 0);
	assert_int_equal(a.vendor_id, 0);
	assert_int_equal(a.vendor_part_id, 0);
	assert_int_equal(a.phys_port_cnt, 1);
	assert_true(a.max_qp_rd_atom >= 1);
	assert_true(a.max_qp_init_rd_atom >= 1);
	assert_int_equal(a.max_sge_rd, 1);
	assert_int_equal(a.atomic_cap, IBV_ATOMIC_HCA);
	assert_true(a.max_qp_wr > 0 && a.max_sge > 0 && a.max_cqe > 0);
	assert_true(a.max_srq > 0 && a.max_srq_wr > 0 && a.max_pd > 0);
	assert_true(a.node_guid == ibv_get_device_guid(l[0]));
	/* verbs.h's inline ibv_query_device_ex goes through the verbs
	 * context's query_device_ex. */
	memset(&ax, 0xa5, sizeof(ax));
	assert_int_equal(ibv_query_device_ex(c, NULL, &ax), 0);
	assert_memory_equal(&ax.orig_attr, &a, sizeof(a));
	assert_int_equal(ax.odp_caps.general_caps, 0);
	assert_int_equal(c->num_comp_vectors, 1);
	assert_true(c->async_fd >= 0);
	assert_int_equal(ibv_close_device(c), 0);
	ibv_free_device_list(l);
}

static void test_port(void **state)
{
	struct fx *f = *state;
	struct ibv_port_attr p;

	/* The inline ibv_query_port: verbs_context->query_port. */
	memset(&p, 0xa5, sizeof(p));
	assert_int_equal(ibv_query_port(f->ctx, 1, &p), 0);
	assert_int_equal(p.state, IBV_PORT_ACTIVE);
	assert_int_equal(p.link_layer, IBV_LINK_LAYER_ETHERNET);
	assert_int_equal(p.gid_tbl_len, 1);
	assert_int_equal(p.pkey_tbl_len, 1);
	assert_int_equal(p.max_mtu, IBV_MTU_4096);
	assert_true(p.active_mtu >= IBV_MTU_256 && p.active_mtu <= IBV_MTU_4096);
	assert_int_equal(p.port_cap_flags2, 0);
	assert_int_not_equal(ibv_query_port(f->ctx, 2, &p), 0);

	/* The exported function takes the older, shorter struct: nothing
	 * past it is written. */
	memset(&p, 0xa5, sizeof(p));
	assert_int_equal((ibv_query_port)(f->ctx, 1,
				(struct _compat_ibv_port_attr *)&p), 0);
	assert_int_equal(p.state, IBV_PORT_ACTIVE);
	assert_int_equal(p.link_layer, IBV_LINK_LAYER_ETHERNET);
	assert_int_equal(p.port_cap_flags2, 0xa5a5);
}

static void test_gid(void **state)
{
	struct fx *f = *state;
	static const uint8_t v4[16] = { [10] = 0xff, [11] = 0xff, 127, 0, 0, 2 };
	struct ibv_gid_entry e[2];
	union ibv_gid gid;
	__be16 pkey;

	setenv("UIWARP_ADDR", "127.0.0.2", 1);
	assert_int_equal(ibv_query_gid(f->ctx, 1, 0, &gid), 0);
	assert_memory_equal(gid.raw, v4, 16);
	assert_int_equal(ibv_query_gid(f->ctx, 1, 1, &gid), -1);
	assert_int_equal(ibv_query_gid_ex(f->ctx, 1, 0, &e[0], 0), 0);
	assert_memory_equal(e[0].gid.raw, v4, 16);
	assert_int_equal(e[0].gid_type, IBV_GID_TYPE_IB);
	assert_int_equal(ibv_query_gid_table(f->ctx, e, 2, 0), 1);
	setenv("UIWARP_ADDR", "::1", 1);
	assert_int_equal(ibv_query_gid(f->ctx, 1, 0, &gid), 0);
	assert_int_equal(gid.raw[15], 1);
	assert_int_equal(gid.raw[10], 0);
	setenv("UIWARP_ADDR", "127.0.0.1", 1);
	assert_int_equal(ibv_query_pkey(f->ctx, 1, 0, &pkey), 0);
	assert_int_equal(be16toh(pkey), 0xffff);
	assert_int_equal(ibv_get_pkey_index(f->ctx, 1, htobe16(0xffff)), 0);
	assert_int_equal(ibv_get_pkey_index(f->ctx, 1, htobe16(0x1234)), -1);
}

/* ---- Memory -------------------------------------------------------------- */

static void test_mr(void **state)
{
	struct fx *f = *state;
	volatile unsigned opt = IBV_ACCESS_RELAXED_ORDERING;
	struct ibv_mr *mr;

	/* Optional bits are masked, never refused, whichever entry point
	 * verbs.h's macro picks. */
	mr = ibv_reg_mr(f->pd, f->buf, 100, IBV_ACCESS_LOCAL_WRITE |
			IBV_ACCESS_RELAXED_ORDERING);
	assert_non_null(mr);
	assert_ptr_equal(mr->addr, f->buf);
	assert_int_equal(mr->length, 100);
	assert_ptr_equal(mr->pd, f->pd);
	assert_int_equal(ibv_dereg_mr(mr), 0);
	mr = ibv_reg_mr(f->pd, f->buf, 100, IBV_ACCESS_LOCAL_WRITE | opt);
	assert_non_null(mr);
	assert_int_equal(ibv_dereg_mr(mr), 0);
	mr = ibv_reg_mr_iova(f->pd, f->buf, 100, (uintptr_t)f->buf,
			     IBV_ACCESS_REMOTE_READ);
	assert_non_null(mr);
	assert_int_equal(ibv_dereg_mr(mr), 0);

	errno = 0;
	assert_null(ibv_reg_mr(f->pd, f->buf, 100, IBV_ACCESS_REMOTE_WRITE));
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_null(ibv_reg_mr(f->pd, f->buf, 100, IBV_ACCESS_REMOTE_ATOMIC));
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_null(ibv_reg_mr(f->pd, f->buf, 100, IBV_ACCESS_LOCAL_WRITE |
			       IBV_ACCESS_ON_DEMAND));
	assert_int_equal(errno, EOPNOTSUPP);
	errno = 0;
	assert_null(ibv_reg_mr_iova(f->pd, f->buf, 100, 0x1000,
				    IBV_ACCESS_LOCAL_WRITE));
	assert_int_equal(errno, EOPNOTSUPP);
	/* A PD with an MR is busy. */
	assert_int_equal(ibv_dealloc_pd(f->pd), EBUSY);
}

/* ---- CQs and completion channels ------------------------------------------ */

/* Waits (bounded) until the channel's fd is readable. */
static void wait_channel(struct ibv_comp_channel *ch)
{
	struct pollfd p = { .fd = ch->fd, .events = POLLIN };

	assert_int_equal(poll(&p, 1, 5000), 1);
}

static void post_recvs(struct fx *f, int n)
{
	struct ibv_sge sge = { (uintptr_t)f->buf, 64, f->mr->lkey };
	struct ibv_recv_wr wr = { .sg_list = &sge, .num_sge = 1 }, *bad;
	int i;

	for (i = 0; i < n; i++) {
		wr.wr_id = 100 + i;
		bad = NULL;
		assert_int_equal(ibv_post_recv(f->qp, &wr, &bad), 0);
		assert_null(bad);
	}
}

static void test_flush_event(void **state)
{
	struct fx *f = *state;
	struct ibv_qp_init_attr ia;
	struct ibv_qp_attr qa;
	struct ibv_wc wc[8];
	struct ibv_cq *ecq;
	void *ectx;
	int n, i;

	assert_int_equal(to_state(f->qp, IBV_QPS_INIT), 0);
	post_recvs(f, 4);
	assert_int_equal(ibv_req_notify_cq(f->cq, 0), 0);
	assert_int_equal(ibv_poll_cq(f->cq, 8, wc), 0);
	assert_int_equal(to_state(f->qp, IBV_QPS_ERR), 0);
	wait_channel(f->ch);
	assert_int_equal(ibv_get_cq_event(f->ch, &ecq, &ectx), 0);
	assert_ptr_equal(ecq, f->cq);
	assert_ptr_equal(ectx, f);
	n = 0;
	while (n < 4) {
		i = ibv_poll_cq(f->cq, 8 - n, wc + n);
		assert_true(i >= 0);
		if (i == 0) {
			assert_int_equal(ibv_req_notify_cq(f->cq, 0), 0);
			i = ibv_poll_cq(f->cq, 8 - n, wc + n);
			if (i == 0) {
				wait_channel(f->ch);
				assert_int_equal(ibv_get_cq_event(f->ch, &ecq,
								  &ectx), 0);
				ibv_ack_cq_events(ecq, 1);
				continue;
			}
		}
		n += i;
	}
	for (i = 0; i < 4; i++) {
		assert_int_equal(wc[i].status, IBV_WC_WR_FLUSH_ERR);
		assert_int_equal(wc[i].wr_id, 100 + i);
		assert_int_equal(wc[i].qp_num, f->qp->qp_num);
	}
	assert_int_equal(ibv_poll_cq(f->cq, 8, wc), 0);
	ibv_ack_cq_events(f->cq, 1);
	assert_int_equal(ibv_query_qp(f->qp, &qa, IBV_QP_STATE, &ia), 0);
	assert_int_equal(qa.qp_state, IBV_QPS_ERR);
	/* In ERR a post succeeds and completes flushed (as siw and every
	 * verbs device do). */
	post_recvs(f, 2);
	assert_int_equal(ibv_poll_cq(f->cq, 8, wc), 2);
	for (i = 0; i < 2; i++) {
		assert_int_equal(wc[i].status, IBV_WC_WR_FLUSH_ERR);
		assert_int_equal(wc[i].wr_id, 100 + i);
		assert_int_equal(wc[i].opcode, IBV_WC_RECV);
	}
}

static void test_nonblock(void **state)
{
	struct fx *f = *state;
	struct ibv_cq *ecq;
	void *ectx;
	int fl = fcntl(f->ch->fd, F_GETFL);

	assert_int_equal(fcntl(f->ch->fd, F_SETFL, fl | O_NONBLOCK), 0);
	assert_int_equal(ibv_req_notify_cq(f->cq, 0), 0);
	errno = 0;
	assert_int_equal(ibv_get_cq_event(f->ch, &ecq, &ectx), -1);
	assert_int_equal(errno, EAGAIN);
	assert_int_equal(fcntl(f->ch->fd, F_SETFL, fl), 0);
}

static volatile sig_atomic_t alarms;

static void on_alarm(int sig)
{
	alarms++;
}

/* qperf ends a test with SIGALRM, installed without SA_RESTART, while
 * it waits in ibv_get_cq_event: the wait must end with EINTR. */
static void test_eintr(void **state)
{
	struct fx *f = *state;
	struct sigaction sa = { .sa_handler = on_alarm }, old;
	struct itimerval it = { .it_value = { 0, 50000 } };
	struct ibv_cq *ecq;
	void *ectx;

	sigemptyset(&sa.sa_mask);
	assert_int_equal(sigaction(SIGALRM, &sa, &old), 0);
	alarms = 0;
	assert_int_equal(setitimer(ITIMER_REAL, &it, NULL), 0);
	errno = 0;
	assert_int_equal(ibv_get_cq_event(f->ch, &ecq, &ectx), -1);
	assert_int_equal(errno, EINTR);
	assert_int_equal(alarms, 1);
	sigaction(SIGALRM, &old, NULL);
}

struct waiter {
	struct ibv_comp_channel *ch;
	sem_t started;
};

static void *wait_thread(void *arg)
{
	struct waiter *w = arg;
	struct ibv_cq *ecq;
	void *ectx;

	sem_post(&w->started);
	ibv_get_cq_event(w->ch, &ecq, &ectx);
	return NULL;
}

/* rping cancels its CQ thread while it waits in ibv_get_cq_event, then
 * destroys the CQ and the channel. */
static void test_cancel(void **state)
{
	struct fx *f = *state;
	struct waiter w = { .ch = f->ch };
	pthread_t t;
	void *ret;

	sem_init(&w.started, 0, 0);
	assert_int_equal(ibv_req_notify_cq(f->cq, 0), 0);
	assert_int_equal(pthread_create(&t, NULL, wait_thread, &w), 0);
	assert_int_equal(sem_wait(&w.started), 0);
	/* Deferred cancellation acts at the wait's cancellation point,
	 * whether the thread reached it yet or not. */
	assert_int_equal(pthread_cancel(t), 0);
	assert_int_equal(pthread_join(t, &ret), 0);
	assert_ptr_equal(ret, PTHREAD_CANCELED);
	sem_destroy(&w.started);
	/* The channel is busy while a CQ uses it; then everything goes. */
	assert_int_equal(ibv_destroy_comp_channel(f->ch), EBUSY);
	assert_int_equal(ibv_destroy_qp(f->qp), 0);
	f->qp = NULL;
	assert_int_equal(ibv_destroy_cq(f->cq), 0);
	f->cq = NULL;
}

/* Several CQs share one channel: the event names the one that fired. */
static void test_shared_channel(void **state)
{
	struct fx *f = *state;
	struct ibv_cq *cq2, *ecq;
	void *ectx;

	cq2 = ibv_create_cq(f->ctx, 16, &cq2, f->ch, 0);
	assert_non_null(cq2);
	assert_int_equal(f->ch->refcnt, 2);
	assert_int_equal(ibv_req_notify_cq(cq2, 0), 0);
	assert_int_equal(ibv_destroy_cq(cq2), 0);
	assert_int_equal(f->ch->refcnt, 1);
	errno = 0;
	assert_null(ibv_create_cq(f->ctx, 0, NULL, NULL, 0));
	assert_int_equal(errno, EINVAL);
	(void)ecq;
	(void)ectx;
}

/* ---- QPs and posting ----------------------------------------------------- */

static void test_qp_caps(void **state)
{
	struct fx *f = *state;
	struct ibv_qp_init_attr a = {
		.send_cq = f->cq, .recv_cq = f->cq,
		.cap = { .max_send_wr = 10, .max_recv_wr = 0,
			 .max_send_sge = 3, .max_recv_sge = 1,
			 .max_inline_data = 100 },
		.qp_type = IBV_QPT_RC, .sq_sig_all = 1,
	}, ia;
	struct ibv_qp_attr qa = { 0 };
	struct ibv_qp *qp;

	qp = ibv_create_qp(f->pd, &a);
	assert_non_null(qp);
	assert_true(a.cap.max_send_wr >= 10);
	assert_true(a.cap.max_recv_wr >= 1);
	assert_true(a.cap.max_send_sge >= 3);
	assert_true(a.cap.max_inline_data >= 100);
	assert_int_equal(qp->state, IBV_QPS_RESET);
	assert_int_equal(qp->qp_type, IBV_QPT_RC);
	assert_int_equal(ibv_query_qp(qp, &qa, IBV_QP_STATE | IBV_QP_CAP, &ia), 0);
	assert_int_equal(qa.qp_state, IBV_QPS_RESET);
	assert_int_equal(qa.cap.max_inline_data, a.cap.max_inline_data);
	assert_true(qa.max_rd_atomic >= 1 && qa.max_dest_rd_atomic >= 1);
	assert_ptr_equal(ia.send_cq, f->cq);
	/* RESET -> RTS skips INIT and RTR. */
	assert_int_equal(to_state(qp, IBV_QPS_RTS), EINVAL);
	assert_int_equal(to_state(qp, IBV_QPS_INIT), 0);
	qa.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
	assert_int_equal(ibv_modify_qp(qp, &qa, IBV_QP_ACCESS_FLAGS), 0);
	assert_int_equal(ibv_query_qp(qp, &qa, IBV_QP_STATE, &ia), 0);
	assert_int_equal(qa.qp_state, IBV_QPS_INIT);
	assert_int_equal(qa.qp_access_flags, IBV_ACCESS_REMOTE_WRITE);
	assert_int_equal(ibv_destroy_qp(qp), 0);

	/* Over the device's inline limit: refused at creation. */
	a.cap.max_inline_data = 1u << 20;
	errno = 0;
	assert_null(ibv_create_qp(f->pd, &a));
	assert_int_equal(errno, EINVAL);
}

static void test_post_errors(void **state)
{
	struct fx *f = *state;
	struct ibv_sge big = { (uintptr_t)f->buf, 65, f->mr->lkey };
	struct ibv_sge good = { (uintptr_t)f->buf, 8, f->mr->lkey };
	struct ibv_sge badk = { (uintptr_t)f->buf, 8, f->mr->lkey ^ 0x55 };
	struct ibv_send_wr w[3], *bad;
	struct ibv_recv_wr rw = { .wr_id = 1, .sg_list = &good, .num_sge = 1 },
			   *rbad;
	int i;

	assert_int_equal(to_state(f->qp, IBV_QPS_INIT), 0);
	/* Receives before the connection. */
	assert_int_equal(ibv_post_recv(f->qp, &rw, &rbad), 0);

	/* Inline above the QP's max_inline_data (64). */
	memset(w, 0, sizeof(w));
	w[0].opcode = IBV_WR_SEND;
	w[0].sg_list = &big;
	w[0].num_sge = 1;
	w[0].send_flags = IBV_SEND_INLINE | IBV_SEND_SIGNALED;
	bad = NULL;
	assert_int_not_equal(ibv_post_send(f->qp, &w[0], &bad), 0);
	assert_ptr_equal(bad, &w[0]);

	/* An invalid lkey in the middle of a list: bad_wr is that one. */
	for (i = 0; i < 3; i++) {
		w[i].wr_id = i;
		w[i].opcode = IBV_WR_SEND;
		w[i].sg_list = i == 1 ? &badk : &good;
		w[i].num_sge = 1;
		w[i].send_flags = IBV_SEND_SIGNALED;
		w[i].next = i < 2 ? &w[i + 1] : NULL;
	}
	bad = NULL;
	assert_int_equal(ibv_post_send(f->qp, &w[0], &bad), EINVAL);
	assert_ptr_equal(bad, &w[1]);
}

/* iWARP: an RDMA Read's sink is written by the peer's Read Response as a
 * tagged buffer (RFC 5040 §4.4), so it needs remote write access. */
static void test_read_sink(void **state)
{
	struct fx *f = *state;
	struct ibv_mr *lw = ibv_reg_mr(f->pd, f->buf + 4096, 64,
				       IBV_ACCESS_LOCAL_WRITE);
	struct ibv_sge s = { (uintptr_t)(f->buf + 4096), 64, 0 };
	struct ibv_send_wr r = { .opcode = IBV_WR_RDMA_READ,
				 .sg_list = &s, .num_sge = 1 }, *bad = NULL;
	int ret;

	assert_non_null(lw);
	s.lkey = lw->lkey;
	r.wr.rdma.remote_addr = 0x1000;
	r.wr.rdma.rkey = 0x1234;
	assert_int_equal(to_state(f->qp, IBV_QPS_INIT), 0);
	ret = ibv_post_send(f->qp, &r, &bad);
	assert_int_equal(ibv_dereg_mr(lw), 0);
	assert_int_not_equal(ret, 0);
	assert_ptr_equal(bad, &r);
	/* With remote write it is accepted (sent once connected). */
	s.lkey = f->mr->lkey;
	s.addr = (uintptr_t)f->buf;
	assert_int_equal(ibv_post_send(f->qp, &r, &bad), 0);
}

/* ---- SRQ ----------------------------------------------------------------- */

static void test_srq(void **state)
{
	struct fx *f = *state;
	struct ibv_srq_init_attr a = { .srq_context = f,
				       .attr = { .max_wr = 16, .max_sge = 1 } };
	struct ibv_sge sge = { (uintptr_t)f->buf, 64, f->mr->lkey };
	struct ibv_recv_wr rw = { .wr_id = 7, .sg_list = &sge, .num_sge = 1 },
			   *bad;
	struct ibv_srq_attr sa;
	struct ibv_srq *srq;
	struct ibv_qp *qp;

	srq = ibv_create_srq(f->pd, &a);
	assert_non_null(srq);
	assert_true(a.attr.max_wr >= 16);
	assert_int_equal(ibv_post_srq_recv(srq, &rw, &bad), 0);
	sa.srq_limit = 4;
	assert_int_equal(ibv_modify_srq(srq, &sa, IBV_SRQ_LIMIT), 0);
	assert_int_equal(ibv_query_srq(srq, &sa), 0);
	assert_int_equal(sa.srq_limit, 4);
	sa.max_wr = 64;
	assert_int_equal(ibv_modify_srq(srq, &sa, IBV_SRQ_MAX_WR), EOPNOTSUPP);
	qp = make_qp(f, srq);
	assert_non_null(qp);
	assert_ptr_equal(qp->srq, srq);
	assert_int_equal(ibv_destroy_srq(srq), EBUSY);
	assert_int_equal(ibv_destroy_qp(qp), 0);
	assert_int_equal(ibv_destroy_srq(srq), 0);
}

/* ---- Not supported ------------------------------------------------------- */

#define ASSERT_UNSUP_NULL(call) do {			\
		errno = 0;				\
		assert_null(call);			\
		assert_int_equal(errno, EOPNOTSUPP);	\
	} while (0)

static void test_unsupported(void **state)
{
	struct fx *f = *state;
	struct ibv_qp_init_attr ud = { .send_cq = f->cq, .recv_cq = f->cq,
				       .cap = { 1, 1, 1, 1, 0 },
				       .qp_type = IBV_QPT_UD };
	struct ibv_qp_init_attr_ex qx = { .send_cq = f->cq, .recv_cq = f->cq,
					  .cap = { 1, 1, 1, 1, 0 },
					  .qp_type = IBV_QPT_RC,
					  .comp_mask = IBV_QP_INIT_ATTR_PD |
						IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
					  .pd = f->pd,
					  .send_ops_flags = IBV_QP_EX_WITH_SEND };
	struct ibv_cq_init_attr_ex cx = { .cqe = 4,
					  .wc_flags = IBV_WC_EX_WITH_BYTE_LEN };
	struct ibv_ah_attr aha = { .port_num = 1 };
	struct ibv_alloc_dm_attr dma = { .length = 64 };
	struct ibv_flow_attr fa = { .size = sizeof(fa), .port = 1 };
	struct ibv_wq_init_attr wqa = { .wq_type = IBV_WQT_RQ, .cq = f->cq,
					.pd = f->pd, .max_wr = 1, .max_sge = 1 };
	struct ibv_rwq_ind_table_init_attr rwa = { 0 };
	struct ibv_counters_init_attr ca = { 0 };
	struct ibv_xrcd_init_attr xa = { 0 };
	struct ibv_ece ece = { 0 };
	struct ibv_sge sge = { (uintptr_t)f->buf, 8, f->mr->lkey };
	struct ibv_send_wr w = { .opcode = IBV_WR_SEND_WITH_IMM,
				 .sg_list = &sge, .num_sge = 1 }, *bad;
	union ibv_gid gid = { 0 };

	ASSERT_UNSUP_NULL(ibv_create_qp(f->pd, &ud));
	ud.qp_type = IBV_QPT_UC;
	ASSERT_UNSUP_NULL(ibv_create_qp(f->pd, &ud));
	ud.qp_type = IBV_QPT_RAW_PACKET;
	ASSERT_UNSUP_NULL(ibv_create_qp(f->pd, &ud));
	ud.qp_type = IBV_QPT_XRC_SEND;
	ASSERT_UNSUP_NULL(ibv_create_qp(f->pd, &ud));
	ASSERT_UNSUP_NULL(ibv_create_qp_ex(f->ctx, &qx));
	ASSERT_UNSUP_NULL(ibv_qp_to_qp_ex(f->qp));
	ASSERT_UNSUP_NULL(ibv_create_ah(f->pd, &aha));
	assert_int_equal(ibv_attach_mcast(f->qp, &gid, 0), EOPNOTSUPP);
	assert_int_equal(ibv_detach_mcast(f->qp, &gid, 0), EOPNOTSUPP);
	ASSERT_UNSUP_NULL(ibv_alloc_mw(f->pd, IBV_MW_TYPE_1));
	ASSERT_UNSUP_NULL(ibv_reg_dmabuf_mr(f->pd, 0, 64, 0, 0,
					    IBV_ACCESS_LOCAL_WRITE));
	ASSERT_UNSUP_NULL(ibv_alloc_dm(f->ctx, &dma));
	ASSERT_UNSUP_NULL(ibv_create_flow(f->qp, &fa));
	ASSERT_UNSUP_NULL(ibv_create_wq(f->ctx, &wqa));
	ASSERT_UNSUP_NULL(ibv_create_rwq_ind_table(f->ctx, &rwa));
	ASSERT_UNSUP_NULL(ibv_create_counters(f->ctx, &ca));
	ASSERT_UNSUP_NULL(ibv_open_xrcd(f->ctx, &xa));
	ASSERT_UNSUP_NULL(ibv_import_pd(f->ctx, 1));
	ASSERT_UNSUP_NULL(ibv_import_mr(f->pd, 1));
	ASSERT_UNSUP_NULL(ibv_import_device(0));
	ASSERT_UNSUP_NULL(ibv_create_cq_ex(f->ctx, &cx));
	assert_int_equal(ibv_advise_mr(f->pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 0,
				       &sge, 1), EOPNOTSUPP);
	assert_int_equal(ibv_query_ece(f->qp, &ece), EOPNOTSUPP);
	assert_int_equal(ibv_set_ece(f->qp, &ece), EOPNOTSUPP);
	assert_int_equal(ibv_resize_cq(f->cq, 128), EOPNOTSUPP);
	assert_int_equal(ibv_rereg_mr(f->mr, IBV_REREG_MR_CHANGE_ACCESS, NULL,
				      NULL, 0, IBV_ACCESS_LOCAL_WRITE),
			 EOPNOTSUPP);

	/* RFC 7306 has no Send carrying both payload and immediate data. */
	bad = NULL;
	assert_int_equal(ibv_post_send(f->qp, &w, &bad), EOPNOTSUPP);
	assert_ptr_equal(bad, &w);
	w.opcode = IBV_WR_BIND_MW;
	bad = NULL;
	assert_int_equal(ibv_post_send(f->qp, &w, &bad), EOPNOTSUPP);
	assert_ptr_equal(bad, &w);
	/* Without payload it is Immediate Data, posted (sent once the QP
	 * is connected). */
	w.opcode = IBV_WR_SEND_WITH_IMM;
	w.num_sge = 0;
	w.imm_data = htobe32(0x01020304);
	assert_int_equal(ibv_post_send(f->qp, &w, &bad), 0);
}

/* Under UIWARP_DEBUG each refusal says what is not supported. */
static void test_unsupported_log(void **state)
{
	struct fx *f = *state;
	struct ibv_ah_attr aha = { .port_num = 1 };
	char out[256] = "";
	int p[2], saved;
	ssize_t n;

	assert_int_equal(pipe(p), 0);
	saved = dup(2);
	assert_true(saved >= 0);
	fflush(stderr);
	assert_int_equal(dup2(p[1], 2), 2);
	setenv("UIWARP_DEBUG", "1", 1);
	assert_null(ibv_create_ah(f->pd, &aha));
	unsetenv("UIWARP_DEBUG");
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	close(p[1]);
	n = read(p[0], out, sizeof(out) - 1);
	close(p[0]);
	assert_true(n > 0);
	out[n] = '\0';
	assert_string_equal(out, "uiwarp: address handles is not supported\n");
}

/* ---- The rest ------------------------------------------------------------ */

static void test_misc(void **state)
{
	assert_int_equal(ibv_fork_init(), 0);
	assert_int_equal(ibv_is_fork_initialized(), IBV_FORK_UNNEEDED);
	assert_string_equal(ibv_wc_status_str(IBV_WC_SUCCESS), "success");
	assert_string_equal(ibv_wc_status_str(IBV_WC_WR_FLUSH_ERR),
			    "work request flushed error");
	assert_string_equal(ibv_port_state_str(IBV_PORT_ACTIVE), "PORT_ACTIVE");
	assert_string_equal(ibv_node_type_str(IBV_NODE_RNIC), "iWARP NIC");
	assert_string_equal(ibv_event_type_str(IBV_EVENT_SRQ_LIMIT_REACHED),
			    "SRQ limit reached");
	assert_int_equal(ibv_rate_to_mult(IBV_RATE_10_GBPS), 4);
	assert_int_equal(mult_to_ibv_rate(4), IBV_RATE_10_GBPS);
	assert_int_equal(ibv_rate_to_mult(IBV_RATE_14_GBPS), -1);
	assert_int_equal(ibv_rate_to_mbps(IBV_RATE_25_GBPS), 25781);
	assert_int_equal(mbps_to_ibv_rate(25781), IBV_RATE_25_GBPS);
	assert_int_equal(mbps_to_ibv_rate(12345), IBV_RATE_MAX);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_device),
		cmocka_unit_test(test_misc),
		cmocka_unit_test_setup_teardown(test_port, setup, teardown),
		cmocka_unit_test_setup_teardown(test_gid, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mr, setup, teardown),
		cmocka_unit_test_setup_teardown(test_nonblock, setup, teardown),
		cmocka_unit_test_setup_teardown(test_eintr, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cancel, setup, teardown),
		cmocka_unit_test_setup_teardown(test_shared_channel, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_qp_caps, setup, teardown),
		cmocka_unit_test_setup_teardown(test_post_errors, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_unsupported, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_unsupported_log, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_read_sink, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_flush_event, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_srq, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
