/*
 * Shared receive queues: one SRQ on the server device feeds the server
 * QPs of up to three connections.  Sends (one and several segments,
 * scattered over two SGEs) and RFC 7306 Immediate Data take the oldest
 * buffer, whichever QP they arrive on; data verified.  Also: the QP's
 * own RQ refuses posts, a full SRQ, the argument checks, the limit event
 * (once, at the right count, re-armed), a QP moved to Error leaves the
 * SRQ's buffers to the others and says so (last WQE reached), and
 * destroy while QPs use it.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lb_util.h"

#define NPAIRS 3
#define SRQ_WR 16
#define BUF_LEN 140000u         /* one receive buffer */
#define SGE0 1000u              /* octets of its first SGE */
#define SEED(k) (500u + (uint32_t)(k))

/* One server device with a PD, an SRQ and a listener; up to NPAIRS
 * connections whose server QPs take receives from the SRQ. */
struct env {
	struct uiw_device *dev;
	struct uiw_pd *pd;
	struct uiw_srq *srq;
	struct lbu_listener lst;
	struct lbu_side hold;           /* owns the SRQ's buffers */
	struct lbu_buf *rbuf;           /* SRQ_WR buffers of BUF_LEN */
	struct lbu_pair p[NPAIRS];
	struct lbu_buf *src[NPAIRS];    /* each client's Send source */
	int npairs;
};

static void env_open(struct env *e, int npairs)
{
	struct uiw_srq_attr sa = { .max_wr = SRQ_WR, .max_sge = 2 };
	struct lbu_opts o;
	int i;

	memset(e, 0, sizeof(*e));
	e->dev = uiw_device_open(NULL);
	assert_non_null(e->dev);
	e->pd = uiw_pd_alloc(e->dev);
	assert_non_null(e->pd);
	e->srq = uiw_srq_create(e->pd, &sa, e);
	if (!e->srq)
		fail_msg("uiw_srq_create: %s", uiw_last_error());
	assert_int_equal(sa.max_wr, SRQ_WR);
	assert_int_equal(sa.max_sge, 2);
	assert_ptr_equal(uiw_srq_context(e->srq), e);
	LBU_OK(lbu_listener_open(&e->lst, e->dev));
	e->hold.name = "srq";
	e->hold.dev = e->dev;
	e->hold.pd = e->pd;
	e->rbuf = lbu_buf_alloc(&e->hold, (size_t)SRQ_WR * BUF_LEN,
				UIW_ACCESS_LOCAL_WRITE);
	LBU_NN(e->rbuf);
	for (i = 0; i < npairs; i++) {
		lbu_opts_init(&o);
		o.srv_dev = e->dev;
		o.lst = &e->lst;
		o.srv_pd = e->pd;
		o.srv_srq = e->srq;
		LBU_OK(lbu_pair_connect(&e->p[i], &o));
		e->npairs++;
		e->src[i] = lbu_buf_alloc(&e->p[i].cli, BUF_LEN,
					  UIW_ACCESS_LOCAL_WRITE);
		LBU_NN(e->src[i]);
	}
}

static void env_close(struct env *e)
{
	int i;

	for (i = 0; i < e->npairs; i++)
		LBU_OK(lbu_pair_destroy(&e->p[i]));
	LBU_OK(lbu_buf_free(&e->hold, e->rbuf));
	assert_int_equal(uiw_srq_destroy(e->srq), 0);
	LBU_OK(lbu_listener_close(&e->lst));
	assert_int_equal(uiw_pd_free(e->pd), 0);
	assert_int_equal(uiw_device_close(e->dev), 0);
}

/* Posts buffer k of the SRQ (wr_id 1000 + k), in two SGEs. */
static void post_buf(struct env *e, int k)
{
	uint8_t *b = e->rbuf->mem + (size_t)(k % SRQ_WR) * BUF_LEN;
	struct uiw_sge sge[2] = {
		{ (uint64_t)(uintptr_t)b, SGE0, e->rbuf->mr->lkey },
		{ (uint64_t)(uintptr_t)(b + SGE0), BUF_LEN - SGE0,
		  e->rbuf->mr->lkey },
	};
	struct uiw_recv_wr wr = {
		.wr_id = 1000 + (uint64_t)k, .sg_list = sge, .num_sge = 2,
	};
	struct uiw_recv_wr *bad = NULL;

	memset(b, 0, BUF_LEN);
	if (uiw_post_srq_recv(e->srq, &wr, &bad) != 0)
		fail_msg("uiw_post_srq_recv: %s", uiw_last_error());
	assert_null(bad);
}

/* Client i sends message k: Immediate Data when imm, else a Send of len
 * octets (with SE when se); it must take buffer `buf` of the SRQ. */
static void send_msg(struct env *e, int i, int k, int buf, int imm,
		     size_t len, int se)
{
	struct lbu_pair *p = &e->p[i];
	uint8_t *b = e->rbuf->mem + (size_t)(buf % SRQ_WR) * BUF_LEN;
	struct uiw_wc wc;
	char d[256];

	if (imm) {
		struct uiw_send_wr wr = {
			.wr_id = 1, .opcode = UIW_WR_IMMEDIATE,
			.send_flags = UIW_SEND_SIGNALED |
				      (se ? UIW_SEND_SOLICITED : 0),
			.imm_data = 0xfeed0000u + (uint64_t)k,
		}, *bad;

		if (uiw_post_send(p->cli.qp, &wr, &bad) != 0)
			fail_msg("post Immediate Data: %s", uiw_last_error());
	} else {
		lbu_fill(e->src[i]->mem, len, SEED(k));
		LBU_OK(lbu_post_send(&p->cli, 1, UIW_WR_SEND,
				     UIW_SEND_SIGNALED |
				     (se ? UIW_SEND_SOLICITED : 0),
				     e->src[i], 0, len, 0, 0, 0));
	}
	LBU_OK(lbu_expect_wc(p->cli.scq, 1, UIW_WC_SUCCESS, UIW_WC_SEND, NULL));
	LBU_OK(lbu_wait_wc(p->srv.rcq, &wc, 1));
	if (wc.wr_id != 1000 + (uint64_t)buf || wc.status != UIW_WC_SUCCESS ||
	    wc.qp != p->srv.qp)
		fail_msg("message %d on connection %d: %s, expected buffer "
			 "%d", k, i, lbu_wc_str(&wc, d, sizeof(d)), 1000 + buf);
	assert_int_equal(wc.qp_num, e->p[i].srv.attr.qp_num);
	assert_int_equal(!!(wc.flags & UIW_WC_F_SOLICITED), !!se);
	if (imm) {
		assert_int_equal(wc.opcode, UIW_WC_RECV_RDMA_WITH_IMM);
		assert_true(wc.flags & UIW_WC_F_WITH_IMM);
		assert_int_equal(wc.imm_data, 0xfeed0000u + (uint64_t)k);
		assert_int_equal(wc.byte_len, 0);
		LBU_OK(lbu_verify_byte(b, BUF_LEN, 0, "Immediate Data's "
				       "buffer"));
	} else {
		assert_int_equal(wc.opcode, UIW_WC_RECV);
		assert_int_equal(wc.byte_len, len);
		LBU_OK(lbu_verify(b, len, SEED(k), "received Send"));
		LBU_OK(lbu_verify_byte(b + len, BUF_LEN - len, 0,
				       "after the Send"));
	}
}

/* Three connections share the SRQ; each message takes the oldest
 * buffer, whichever connection it arrives on. */
static void test_srq_shared(void **state)
{
	struct env e;
	struct uiw_recv_wr wr = { .wr_id = 9 }, *bad = NULL;
	struct uiw_srq_attr sa;
	int k;

	(void)state;
	env_open(&e, NPAIRS);
	/* The QP's own RQ is not used: posting there is an error. */
	assert_int_equal(uiw_post_recv(e.p[0].srv.qp, &wr, &bad), -EINVAL);
	assert_ptr_equal(bad, &wr);
	if (!strstr(uiw_last_error(), "uiw_post_srq_recv"))
		fail_msg("message: %s", uiw_last_error());
	/* The longest Sends are several segments. */
	assert_true(1 + 11 * 11111 > e.p[0].srv.attr.mulpdu);
	for (k = 0; k < 12; k++)
		post_buf(&e, k);
	for (k = 0; k < 12; k++) {
		/* Connection k % 3; every third message Immediate Data;
		 * Sends of one to several segments (MULPDU is below). */
		int i = (k * 2) % NPAIRS, imm = k % 3 == 1;
		size_t len = imm ? 0 : 1 + (size_t)k * 11111;

		send_msg(&e, i, k, k, imm, len, k % 4 == 2);
	}
	assert_int_equal(uiw_srq_query(e.srq, &sa), 0);
	assert_int_equal(sa.max_wr, SRQ_WR);
	assert_int_equal(sa.max_sge, 2);
	assert_int_equal(sa.srq_limit, 0);
	/* Refilled, round again, crossing the ring's end. */
	for (k = 12; k < 28; k++)
		post_buf(&e, k);
	for (k = 12; k < 28; k++)
		send_msg(&e, k % NPAIRS, k, k, k % 2, k % 2 ? 0 : 4096, 0);
	LBU_OK(lbu_no_async_event(e.dev, "after the traffic"));
	/* Destroy waits for the QPs. */
	assert_int_equal(uiw_srq_destroy(e.srq), -EBUSY);
	env_close(&e);
}

/* Argument checks, a full SRQ, destroy while used. */
static void test_srq_checks(void **state)
{
	struct uiw_device *dev = uiw_device_open(NULL);
	struct uiw_device_attr da;
	struct uiw_srq_attr sa;
	struct uiw_pd *pd, *pd2;
	struct uiw_cq *cq;
	struct uiw_srq *srq;
	struct uiw_qp *qp;
	struct uiw_qp_init_attr ia;
	struct uiw_qp_attr qa;
	struct uiw_mr *mr, *mr2, *ro;
	struct uiw_recv_wr wr[5], *bad;
	struct uiw_sge sge[3];
	static uint8_t mem[3][4096];
	int i;

	(void)state;
	assert_non_null(dev);
	assert_int_equal(uiw_device_query(dev, &da), 0);
	assert_true(da.max_srq >= 1);
	assert_true(da.max_srq_wr >= 4);
	assert_true(da.max_srq_sge >= 2);
	pd = uiw_pd_alloc(dev);
	pd2 = uiw_pd_alloc(dev);
	cq = uiw_cq_create(dev, 16);
	assert_non_null(pd);
	assert_non_null(pd2);
	assert_non_null(cq);
	mr = uiw_reg_mr(pd, mem[0], 4096, UIW_ACCESS_LOCAL_WRITE);
	mr2 = uiw_reg_mr(pd2, mem[1], 4096, UIW_ACCESS_LOCAL_WRITE);
	ro = uiw_reg_mr(pd, mem[2], 4096, UIW_ACCESS_REMOTE_READ);
	assert_non_null(mr);
	assert_non_null(mr2);
	assert_non_null(ro);

	/* Sizes beyond the device's, or none. */
	sa = (struct uiw_srq_attr){ .max_wr = 0, .max_sge = 1 };
	assert_null(uiw_srq_create(pd, &sa, NULL));
	assert_int_equal(errno, EINVAL);
	sa = (struct uiw_srq_attr){ .max_wr = da.max_srq_wr + 1 };
	assert_null(uiw_srq_create(pd, &sa, NULL));
	assert_int_equal(errno, EINVAL);
	sa = (struct uiw_srq_attr){ .max_wr = 4,
				    .max_sge = da.max_srq_sge + 1 };
	assert_null(uiw_srq_create(pd, &sa, NULL));
	assert_int_equal(errno, EINVAL);
	assert_null(uiw_srq_create(NULL, &sa, NULL));
	sa = (struct uiw_srq_attr){ .max_wr = 4, .max_sge = 2,
				    .srq_limit = 3 };
	srq = uiw_srq_create(pd, &sa, NULL);
	assert_non_null(srq);
	/* rdma-core 44 behaviour: create does not arm the limit. */
	assert_int_equal(sa.srq_limit, 0);
	assert_int_equal(uiw_srq_arm(srq, 5), -EINVAL);

	/* A QP of another PD may not use it. */
	memset(&ia, 0, sizeof(ia));
	ia.send_cq = ia.recv_cq = cq;
	ia.cap.max_send_wr = 4;
	ia.srq = srq;
	assert_null(uiw_qp_create(pd2, &ia));
	assert_int_equal(errno, EINVAL);
	if (!strstr(uiw_last_error(), "protection domain"))
		fail_msg("message: %s", uiw_last_error());
	/* Same PD: the receive capabilities are not looked at. */
	qp = uiw_qp_create(pd, &ia);
	if (!qp)
		fail_msg("uiw_qp_create: %s", uiw_last_error());
	assert_int_equal(uiw_qp_query(qp, &qa), 0);
	assert_int_equal(qa.cap.max_recv_wr, 0);
	assert_int_equal(uiw_srq_destroy(srq), -EBUSY);
	assert_int_equal(uiw_pd_free(pd), -EBUSY);

	/* The checks of uiw_post_recv. */
	memset(wr, 0, sizeof(wr));
	sge[0] = (struct uiw_sge){ (uint64_t)(uintptr_t)mem[0], 64, mr->lkey };
	sge[1] = (struct uiw_sge){ (uint64_t)(uintptr_t)mem[0] + 64, 64,
				   mr->lkey };
	sge[2] = (struct uiw_sge){ (uint64_t)(uintptr_t)mem[0] + 128, 64,
				   mr->lkey };
	wr[0].sg_list = sge;
	wr[0].num_sge = 3;              /* more than max_sge */
	assert_int_equal(uiw_post_srq_recv(srq, &wr[0], &bad), -EINVAL);
	assert_ptr_equal(bad, &wr[0]);
	wr[0].num_sge = 1;
	sge[0].lkey = mr2->lkey;        /* another PD's */
	assert_int_equal(uiw_post_srq_recv(srq, &wr[0], &bad), -EINVAL);
	sge[0] = (struct uiw_sge){ (uint64_t)(uintptr_t)mem[2], 64,
				   ro->lkey };  /* no local write */
	assert_int_equal(uiw_post_srq_recv(srq, &wr[0], &bad), -EINVAL);
	sge[0] = (struct uiw_sge){ (uint64_t)(uintptr_t)mem[0], 8192,
				   mr->lkey };  /* beyond the region */
	assert_int_equal(uiw_post_srq_recv(srq, &wr[0], &bad), -EINVAL);
	sge[0].length = 64;

	/* Five in one list into four places: the fifth is refused. */
	for (i = 0; i < 5; i++) {
		wr[i].wr_id = (uint64_t)i;
		wr[i].sg_list = sge;
		wr[i].num_sge = 1;
		wr[i].next = i < 4 ? &wr[i + 1] : NULL;
	}
	assert_int_equal(uiw_post_srq_recv(srq, &wr[0], &bad), -ENOMEM);
	assert_ptr_equal(bad, &wr[4]);
	wr[4].next = NULL;
	assert_int_equal(uiw_post_srq_recv(srq, &wr[4], &bad), -ENOMEM);
	assert_ptr_equal(bad, &wr[4]);

	/* The QP Idle in Error: the SRQ's buffers stay (the QP took none),
	 * and it says that no more of its receives complete. */
	assert_int_equal(uiw_qp_set_error(qp), 0);
	LBU_OK(lbu_expect_async_event(dev, 0, UIW_EVENT_QP_LAST_WQE_REACHED,
				      qp, NULL, NULL));
	LBU_OK(lbu_cq_empty(cq, "after uiw_qp_set_error"));
	assert_int_equal(uiw_qp_destroy(qp), 0);
	LBU_OK(lbu_no_async_event(dev, "after destroy"));
	assert_int_equal(uiw_post_srq_recv(srq, &wr[4], &bad), -ENOMEM);
	assert_int_equal(uiw_srq_destroy(srq), 0);
	assert_int_equal(uiw_dereg_mr(mr), 0);
	assert_int_equal(uiw_dereg_mr(mr2), 0);
	assert_int_equal(uiw_dereg_mr(ro), 0);
	assert_int_equal(uiw_cq_destroy(cq), 0);
	assert_int_equal(uiw_pd_free(pd), 0);
	assert_int_equal(uiw_pd_free(pd2), 0);
	assert_int_equal(uiw_device_close(dev), 0);
}

/* The limit event: once, the first time the count falls below the
 * limit; disarmed after; armed again it fires again. */
static void test_srq_limit(void **state)
{
	struct uiw_srq_attr sa;
	struct env e;
	int k, n = 0;

	(void)state;
	env_open(&e, 1);
	for (k = 0; k < 8; k++)
		post_buf(&e, k);
	assert_int_equal(uiw_srq_arm(e.srq, 5), 0);
	assert_int_equal(uiw_srq_query(e.srq, &sa), 0);
	assert_int_equal(sa.srq_limit, 5);
	/* 8 -> 7, 6, 5: not below 5. */
	for (; n < 3; n++)
		send_msg(&e, 0, n, n, 0, 100, 0);
	LBU_OK(lbu_no_async_event(e.dev, "at 5 buffers, limit 5"));
	/* 4 < 5 */
	send_msg(&e, 0, n, n, 0, 100, 0);
	n++;
	LBU_OK(lbu_expect_async_event(e.dev, 0, UIW_EVENT_SRQ_LIMIT_REACHED,
				      NULL, e.srq, NULL));
	assert_int_equal(uiw_srq_query(e.srq, &sa), 0);
	assert_int_equal(sa.srq_limit, 0);
	send_msg(&e, 0, n, n, 1, 0, 0);
	n++;
	LBU_OK(lbu_no_async_event(e.dev, "disarmed"));

	/* 3 left; 5 more make 8; armed at 7 it fires at 6. */
	for (k = 8; k < 13; k++)
		post_buf(&e, k);
	assert_int_equal(uiw_srq_arm(e.srq, 7), 0);
	send_msg(&e, 0, n, n, 0, 1, 0);
	n++;
	LBU_OK(lbu_no_async_event(e.dev, "at 7 buffers, limit 7"));
	send_msg(&e, 0, n, n, 0, 1, 0);
	n++;
	LBU_OK(lbu_expect_async_event(e.dev, 0, UIW_EVENT_SRQ_LIMIT_REACHED,
				      NULL, e.srq, NULL));
	/* Disarming: nothing more. */
	assert_int_equal(uiw_srq_arm(e.srq, 6), 0);
	assert_int_equal(uiw_srq_arm(e.srq, 0), 0);
	send_msg(&e, 0, n, n, 0, 1, 0);
	LBU_OK(lbu_no_async_event(e.dev, "after disarming"));
	env_close(&e);
}

/* A connection moved to Error: its QP says it is done with the SRQ,
 * flushes nothing it did not take, and the buffers serve the other
 * connection in order. */
static void test_srq_qp_error(void **state)
{
	struct env e;
	int k;

	(void)state;
	env_open(&e, 2);
	for (k = 0; k < 4; k++)
		post_buf(&e, k);
	send_msg(&e, 0, 0, 0, 0, 3000, 0);
	assert_int_equal(uiw_qp_set_error(e.p[0].srv.qp), 0);
	LBU_OK(lbu_expect_async_event(e.dev, 0, UIW_EVENT_QP_LAST_WQE_REACHED,
				      e.p[0].srv.qp, NULL, NULL));
	LBU_OK(lbu_wait_disconnected(&e.p[0].cli));
	LBU_OK(lbu_cq_empty(e.p[0].srv.rcq, "the QP in Error"));
	for (k = 1; k < 4; k++)
		send_msg(&e, 1, k, k, k == 2, k == 2 ? 0 : 5000, 0);
	LBU_OK(lbu_cq_empty(e.p[0].srv.rcq, "the QP in Error"));
	LBU_OK(lbu_no_async_event(e.dev, "after the traffic"));
	env_close(&e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_srq_shared),
		cmocka_unit_test(test_srq_checks),
		cmocka_unit_test(test_srq_limit),
		cmocka_unit_test(test_srq_qp_error),
	};

	return cmocka_run_group_tests_name("loopback_srq", tests, NULL, NULL);
}
