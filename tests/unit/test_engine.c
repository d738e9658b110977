/*
 * Engine tests without sockets: resources (devices, PDs, MRs and STags,
 * CQs, QPs, posting rules) and every operation through an in-memory pipe
 * (engine_pipe.c), with markers on and off, CRC on and off, small and
 * large MULPDU, and the stream split in many ways; data checked byte for
 * byte.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include "engine_pipe.h"
#include "rnic/dev.h"
#include "rnic/mr.h"
#include "wire/mpa.h"

#define ALL_REMOTE (UIW_ACCESS_LOCAL_WRITE | UIW_ACCESS_REMOTE_WRITE | \
		    UIW_ACCESS_REMOTE_READ)

static void qp_state_is(struct uiw_qp *qp, enum uiw_qp_state s)
{
	struct uiw_qp_attr a;

	assert_int_equal(uiw_qp_query(qp, &a), 0);
	if (a.state != s)
		print_error("qp %u is %s, expected %s (%s)\n", a.qp_num,
			    uiw_qp_state_str(a.state), uiw_qp_state_str(s),
			    a.term_msg);
	assert_int_equal(a.state, s);
}

/* ---- Devices, PDs, MRs --------------------------------------------------- */

static void test_device_pd(void **state)
{
	struct uiw_device *d = uiw_device_open("engtest0");
	struct uiw_device_attr at;
	struct uiw_pd *pd;
	struct uiw_mr *mr;
	char buf[64];

	(void)state;
	assert_non_null(d);
	assert_int_equal(uiw_device_query(d, &at), 0);
	assert_string_equal(at.name, "engtest0");
	assert_true(at.max_ird >= 1 && at.max_ord >= 1);
	assert_true(at.max_mr > 1000);
	assert_non_null(uiw_device_rt(d));
	pd = uiw_pd_alloc(d);
	assert_non_null(pd);
	assert_int_equal(uiw_device_close(d), -EBUSY);
	mr = uiw_reg_mr(pd, buf, sizeof(buf), UIW_ACCESS_LOCAL_WRITE);
	assert_non_null(mr);
	assert_int_equal(uiw_pd_free(pd), -EBUSY);
	assert_int_equal(uiw_dereg_mr(mr), 0);
	assert_int_equal(uiw_pd_free(pd), 0);
	assert_int_equal(uiw_device_close(d), 0);

	/* Unnamed devices get distinct names. */
	{
		struct uiw_device *d1 = uiw_device_open(NULL);
		struct uiw_device *d2 = uiw_device_open(NULL);
		struct uiw_device_attr a1, a2;

		assert_non_null(d1);
		assert_non_null(d2);
		uiw_device_query(d1, &a1);
		uiw_device_query(d2, &a2);
		assert_string_not_equal(a1.name, a2.name);
		assert_int_equal(uiw_device_close(d1), 0);
		assert_int_equal(uiw_device_close(d2), 0);
	}
	assert_null(uiw_device_open(""));
	assert_int_equal(uiw_device_close(NULL), -EINVAL);
}

static void test_mr_stags(void **state)
{
	struct uiw_device *d = uiw_device_open(NULL);
	struct uiw_pd *pd = uiw_pd_alloc(d), *pd2 = uiw_pd_alloc(d);
	static char buf[4096];
	struct uiw_mr *a, *b, *c;
	uint32_t old, idx;
	int i, same_key = 0;

	(void)state;
	a = uiw_reg_mr(pd, buf, sizeof(buf), ALL_REMOTE);
	assert_non_null(a);
	assert_int_equal(a->lkey, a->rkey);
	assert_true((a->lkey >> 8) != 0);         /* index 0 never used */
	assert_ptr_equal(a->addr, buf);
	assert_int_equal(a->length, sizeof(buf));

	/* Argument checks. */
	assert_null(uiw_reg_mr(NULL, buf, 1, 0));
	assert_int_equal(errno, EINVAL);
	assert_null(uiw_reg_mr(pd, buf, 1, UIW_ACCESS_REMOTE_WRITE));
	assert_null(uiw_reg_mr(pd, buf, 1, 0x100));
	assert_null(uiw_reg_mr(pd, NULL, 10, 0));
	assert_null(uiw_reg_mr(pd, (void *)(uintptr_t)(UINTPTR_MAX - 4), 10,
			       0));
	assert_int_equal(uiw_dereg_mr(NULL), -EINVAL);

	/* Access checks (what every placement goes through). */
	assert_int_equal(uiw_mr_check(&d->mrt, a->lkey, pd, ALL_REMOTE,
				      (uintptr_t)buf, sizeof(buf)), UIW_MRC_OK);
	assert_int_equal(uiw_mr_check(&d->mrt, a->lkey, pd2, 0,
				      (uintptr_t)buf, 1), UIW_MRC_PD);
	assert_int_equal(uiw_mr_check(&d->mrt, a->lkey ^ 0x1, pd, 0,
				      (uintptr_t)buf, 1), UIW_MRC_INVALID);
	assert_int_equal(uiw_mr_check(&d->mrt, a->lkey, pd, 0,
				      (uintptr_t)buf - 1, 1), UIW_MRC_BOUNDS);
	assert_int_equal(uiw_mr_check(&d->mrt, a->lkey, pd, 0,
				      (uintptr_t)buf + 1, sizeof(buf)),
			 UIW_MRC_BOUNDS);
	assert_int_equal(uiw_mr_check(&d->mrt, a->lkey, pd, 0,
				      (uintptr_t)buf + sizeof(buf), 0),
			 UIW_MRC_OK);
	assert_int_equal(uiw_mr_check(&d->mrt, a->lkey, pd, 0,
				      UINT64_MAX - 10, 100), UIW_MRC_WRAP);
	b = uiw_reg_mr(pd, buf, sizeof(buf), UIW_ACCESS_REMOTE_READ);
	assert_non_null(b);
	assert_int_not_equal(a->lkey, b->lkey);
	assert_int_equal(uiw_mr_check(&d->mrt, b->lkey, pd,
				      UIW_ACCESS_REMOTE_WRITE, (uintptr_t)buf,
				      1), UIW_MRC_ACCESS);
	assert_int_equal(uiw_mr_check(&d->mrt, b->lkey, pd,
				      UIW_ACCESS_LOCAL_WRITE, (uintptr_t)buf,
				      1), UIW_MRC_ACCESS);
	/* Invalidation honours the PD and is final. */
	assert_int_equal(uiw_mr_invalidate(&d->mrt, b->lkey, pd2),
			 UIW_MRC_PD);
	assert_int_equal(uiw_mr_invalidate(&d->mrt, b->lkey, pd), UIW_MRC_OK);
	assert_int_equal(uiw_mr_invalidate(&d->mrt, b->lkey, pd),
			 UIW_MRC_INVALID);
	assert_int_equal(uiw_mr_check(&d->mrt, b->lkey, pd, 0, (uintptr_t)buf,
				      1), UIW_MRC_INVALID);
	assert_int_equal(uiw_dereg_mr(b), 0);
	old = a->lkey;
	assert_int_equal(uiw_dereg_mr(a), 0);
	assert_int_equal(uiw_mr_check(&d->mrt, old, pd, 0, (uintptr_t)buf, 1),
			 UIW_MRC_INVALID);

	/* A fresh key every time an index is reused: shrink the table to
	 * two usable indices so that reuse is certain. */
	uiw_mr_table_fini(&d->mrt);
	assert_int_equal(uiw_mr_table_init(&d->mrt, 3), 0);
	a = uiw_reg_mr(pd, buf, 10, 0);
	b = uiw_reg_mr(pd, buf, 10, 0);
	assert_non_null(a);
	assert_non_null(b);
	assert_null(uiw_reg_mr(pd, buf, 10, 0));  /* table full */
	assert_int_equal(errno, ENOMEM);
	for (i = 0; i < 200; i++) {
		old = a->lkey;
		idx = old >> 8;
		assert_int_equal(uiw_dereg_mr(a), 0);
		c = uiw_reg_mr(pd, buf, 10, 0);
		assert_non_null(c);
		assert_int_equal(c->lkey >> 8, idx);
		assert_int_not_equal(c->lkey, old);
		assert_int_equal(uiw_mr_check(&d->mrt, old, pd, 0,
					      (uintptr_t)buf, 1),
				 UIW_MRC_INVALID);
		if (i > 0 && (c->lkey & 0xff) == ((old & 0xff) ^ 1))
			same_key++;
		a = c;
	}
	/* Keys are not a counter. */
	assert_true(same_key < 100);
	assert_int_equal(uiw_dereg_mr(a), 0);
	assert_int_equal(uiw_dereg_mr(b), 0);
	assert_int_equal(uiw_pd_free(pd), 0);
	assert_int_equal(uiw_pd_free(pd2), 0);
	assert_int_equal(uiw_device_close(d), 0);
}

/* ---- CQs ----------------------------------------------------------------- */

static void test_cq_basic(void **state)
{
	struct uiw_device *d = uiw_device_open(NULL);
	struct uiw_cq *cq;
	struct uiw_wc wc[4];

	(void)state;
	assert_null(uiw_cq_create(d, 0));
	assert_null(uiw_cq_create(NULL, 4));
	cq = uiw_cq_create(d, 4);
	assert_non_null(cq);
	assert_int_equal(uiw_cq_poll(cq, 4, wc), 0);
	assert_true(uiw_cq_fd(cq) >= 0);
	assert_int_equal(uiw_cq_wait(cq, 0), 0);
	assert_int_equal(uiw_cq_ack_events(cq), 0);
	assert_int_equal(uiw_cq_req_notify(cq, 0), 0);
	assert_int_equal(uiw_device_close(d), -EBUSY);
	assert_int_equal(uiw_cq_destroy(cq), 0);
	assert_int_equal(uiw_device_close(d), 0);
}

/* Notification: next completion, solicited only, errors. */
static void test_cq_notify(void **state)
{
	struct ep_cfg cfg = { .crc = true };
	struct ep_pipe p;
	struct ep_buf sa, rb;
	struct uiw_wc wc[8];

	(void)state;
	assert_int_equal(ep_open(&p, &cfg), 0);
	assert_int_equal(ep_buf_reg(&sa, p.a.pd, 64, 0), 0);
	assert_int_equal(ep_buf_reg(&rb, p.b.pd, 320, ALL_REMOTE), 0);
	for (int i = 0; i < 5; i++)
		assert_int_equal(ep_post_recv(p.b.qp, 10 + i, &rb, 64 * i, 64),
				 0);

	/* Solicited only: a plain Send does not wake, one with SE does. */
	assert_int_equal(uiw_cq_req_notify(p.b.cq, 1), 0);
	assert_int_equal(ep_post_send(p.a.qp, 1, UIW_WR_SEND, 0, &sa, 0, 8,
				      0, 0, 0), 0);
	ep_pump(&p);
	assert_int_equal(uiw_cq_wait(p.b.cq, 0), 0);
	assert_int_equal(ep_poll(p.b.cq, wc, 8), 1);
	assert_int_equal(wc[0].flags & UIW_WC_F_SOLICITED, 0);
	assert_int_equal(ep_post_send(p.a.qp, 2, UIW_WR_SEND,
				      UIW_SEND_SOLICITED, &sa, 0, 8, 0, 0, 0),
			 0);
	ep_pump(&p);
	assert_int_equal(uiw_cq_wait(p.b.cq, 0), 1);
	assert_int_equal(uiw_cq_ack_events(p.b.cq), 1);
	assert_int_equal(uiw_cq_wait(p.b.cq, 0), 0);
	assert_int_equal(ep_poll(p.b.cq, wc, 8), 1);
	assert_int_equal(wc[0].opcode, UIW_WC_RECV);
	assert_true(wc[0].flags & UIW_WC_F_SOLICITED);

	/* Next completion: the sender's own CQ fires once, then is
	 * disarmed. */
	ep_poll(p.a.cq, wc, 8);
	assert_int_equal(uiw_cq_req_notify(p.a.cq, 0), 0);
	assert_int_equal(ep_post_send(p.a.qp, 3, UIW_WR_SEND, 0, &sa, 0, 8,
				      0, 0, 0), 0);
	assert_int_equal(ep_post_send(p.a.qp, 4, UIW_WR_SEND, 0, &sa, 0, 8,
				      0, 0, 0), 0);
	ep_pump(&p);
	assert_int_equal(uiw_cq_wait(p.a.cq, 0), 1);
	assert_int_equal(uiw_cq_ack_events(p.a.cq), 1);
	assert_int_equal(ep_poll(p.a.cq, wc, 8), 2);

	/* Solicited only also fires for an error completion. */
	assert_int_equal(ep_poll(p.b.cq, wc, 8), 2);
	assert_int_equal(uiw_cq_wait(p.b.cq, 0), 0);
	assert_int_equal(uiw_cq_req_notify(p.b.cq, 1), 0);
	ep_side_detach(&p.b, UIW_E_MPA_CLOSED);
	assert_int_equal(uiw_cq_wait(p.b.cq, 0), 1);
	assert_int_equal(ep_poll(p.b.cq, wc, 8), 1);   /* the last recv */
	assert_int_equal(wc[0].status, UIW_WC_WR_FLUSH_ERR);
	assert_int_equal(wc[0].term.origin, UIW_TERM_LLP);

	ep_buf_free(&sa);
	ep_buf_free(&rb);
	assert_int_equal(ep_close(&p), 0);
}

/* ---- Posting rules ------------------------------------------------------- */

static void dummy_kick(void *ctx)
{
	(void)ctx;
}

static void dummy_close(void *ctx, bool abortive)
{
	(void)ctx;
	(void)abortive;
}

static void test_post_rules(void **state)
{
	struct ep_cfg cfg = { .crc = true, .max_wr = 4, .max_sge = 2,
			      .max_inline = 16 };
	struct ep_pipe p;
	struct ep_buf a, ro, other;
	struct uiw_pd *pd2;
	struct uiw_sge sge[3];
	struct uiw_send_wr wr, wr2, wr3, *bad;
	struct uiw_recv_wr rwr, *rbad;
	struct uiw_qp_init_attr qa;
	int i;

	(void)state;
	assert_int_equal(ep_open_idle(&p, &cfg), 0);
	assert_int_equal(ep_buf_reg(&a, p.a.pd, 4096, UIW_ACCESS_LOCAL_WRITE),
			 0);
	assert_int_equal(ep_buf_reg(&ro, p.a.pd, 4096, 0), 0);
	pd2 = uiw_pd_alloc(p.a.dev);
	assert_int_equal(ep_buf_reg(&other, pd2, 4096, ALL_REMOTE), 0);

	/* QP creation checks. */
	memset(&qa, 0, sizeof(qa));
	assert_null(uiw_qp_create(p.a.pd, &qa));
	qa.send_cq = qa.recv_cq = p.a.cq;
	assert_null(uiw_qp_create(p.a.pd, &qa));     /* no WRs */
	qa.cap.max_send_wr = qa.cap.max_recv_wr = 1;
	qa.cap.max_send_sge = 1000;
	assert_null(uiw_qp_create(p.a.pd, &qa));
	assert_int_equal(errno, EINVAL);

	memset(&wr, 0, sizeof(wr));
	wr.sg_list = sge;
	wr.opcode = UIW_WR_SEND;

	/* Bad lkeys, PDs, ranges. */
	sge[0] = (struct uiw_sge){ (uintptr_t)a.p, 16, a.mr->lkey ^ 0xff };
	wr.num_sge = 1;
	assert_int_equal(uiw_post_send(p.a.qp, &wr, &bad), -EINVAL);
	assert_ptr_equal(bad, &wr);
	sge[0] = (struct uiw_sge){ (uintptr_t)other.p, 16, other.mr->lkey };
	assert_int_equal(uiw_post_send(p.a.qp, &wr, NULL), -EINVAL);
	sge[0] = (struct uiw_sge){ (uintptr_t)a.p + 4090, 16, a.mr->lkey };
	assert_int_equal(uiw_post_send(p.a.qp, &wr, NULL), -EINVAL);
	/* Too many SGEs; a Read with two; a Read sink without local
	 * write; a read-only region is fine as a send source. */
	sge[0] = (struct uiw_sge){ (uintptr_t)a.p, 16, a.mr->lkey };
	sge[1] = sge[2] = sge[0];
	wr.num_sge = 3;
	assert_int_equal(uiw_post_send(p.a.qp, &wr, NULL), -EINVAL);
	wr.num_sge = 2;
	wr.opcode = UIW_WR_RDMA_READ;
	assert_int_equal(uiw_post_send(p.a.qp, &wr, NULL), -EINVAL);
	wr.num_sge = 1;
	sge[0] = (struct uiw_sge){ (uintptr_t)ro.p, 16, ro.mr->lkey };
	assert_int_equal(uiw_post_send(p.a.qp, &wr, NULL), -EINVAL);
	wr.opcode = UIW_WR_SEND;
	assert_int_equal(uiw_post_send(p.a.qp, &wr, NULL), 0);
	/* RFC 7306 opcodes with the wrong operands: an atomic's one SGE is
	 * 8 writable octets, Immediate Data has no SGE (the rest is in
	 * test_engine_atomic.c). */
	wr.opcode = UIW_WR_ATOMIC_FETCH_ADD;
	assert_int_equal(uiw_post_send(p.a.qp, &wr, NULL), -EINVAL);
	wr.opcode = UIW_WR_IMMEDIATE;
	assert_int_equal(uiw_post_send(p.a.qp, &wr, NULL), -EINVAL);
	wr.opcode = (enum uiw_wr_opcode)99;
	assert_int_equal(uiw_post_send(p.a.qp, &wr, NULL), -EINVAL);
	wr.opcode = UIW_WR_SEND;
	wr.send_flags = 0x80;
	assert_int_equal(uiw_post_send(p.a.qp, &wr, NULL), -EINVAL);
	/* Inline: at most max_inline_data, any lkey. */
	wr.send_flags = UIW_SEND_INLINE;
	sge[0] = (struct uiw_sge){ (uintptr_t)a.p, 17, 0 };
	assert_int_equal(uiw_post_send(p.a.qp, &wr, NULL), -EINVAL);
	sge[0].length = 16;
	assert_int_equal(uiw_post_send(p.a.qp, &wr, NULL), 0);
	wr.send_flags = 0;

	/* A chain stops at the first bad WR; the SQ holds 4 (2 used). */
	sge[0] = (struct uiw_sge){ (uintptr_t)a.p, 16, a.mr->lkey };
	wr3 = wr;
	wr2 = wr;
	wr2.next = &wr3;
	wr.next = &wr2;
	assert_int_equal(uiw_post_send(p.a.qp, &wr, &bad), -ENOMEM);
	assert_ptr_equal(bad, &wr3);
	wr.next = NULL;
	assert_int_equal(uiw_post_send(p.a.qp, &wr, &bad), -ENOMEM);
	assert_ptr_equal(bad, &wr);
	assert_non_null(strstr(uiw_last_error(), "full"));

	/* Receives: local write needed, limits, queue full. */
	memset(&rwr, 0, sizeof(rwr));
	rwr.sg_list = sge;
	rwr.num_sge = 1;
	sge[0] = (struct uiw_sge){ (uintptr_t)ro.p, 16, ro.mr->lkey };
	assert_int_equal(uiw_post_recv(p.a.qp, &rwr, &rbad), -EINVAL);
	assert_ptr_equal(rbad, &rwr);
	sge[0] = (struct uiw_sge){ (uintptr_t)a.p, 16, a.mr->lkey };
	rwr.num_sge = 3;
	assert_int_equal(uiw_post_recv(p.a.qp, &rwr, NULL), -EINVAL);
	rwr.num_sge = 1;
	for (i = 0; i < 4; i++)
		assert_int_equal(uiw_post_recv(p.a.qp, &rwr, NULL), 0);
	assert_int_equal(uiw_post_recv(p.a.qp, &rwr, NULL), -ENOMEM);

	/* Attach checks; then the state rules. */
	{
		struct uiw_llp_params lp = p.a.lp;
		static const struct uiw_llp_ops none;
		const struct uiw_llp_ops ops = { .kick = dummy_kick,
						 .close = dummy_close };

		assert_int_equal(uiw_qp_llp_attach(p.a.qp, &lp, &none, NULL),
				 -EINVAL);
		lp.mulpdu = 100;
		assert_int_equal(uiw_qp_llp_attach(p.a.qp, &lp, &ops, NULL),
				 -EINVAL);
		lp = p.a.lp;
		lp.ird = 100000;
		assert_int_equal(uiw_qp_llp_attach(p.a.qp, &lp, &ops, NULL),
				 -EINVAL);
		qp_state_is(p.a.qp, UIW_QPS_IDLE);
	}
	assert_int_equal(uiw_qp_disconnect(p.a.qp), -EINVAL);  /* Idle */
	assert_int_equal(ep_attach(&p), 0);
	qp_state_is(p.a.qp, UIW_QPS_RTS);
	assert_int_equal(uiw_qp_llp_attach(p.a.qp, &p.a.lp, NULL, NULL),
			 -EINVAL);
	ep_side_detach(&p.a, UIW_E_MPA_CLOSED);
	qp_state_is(p.a.qp, UIW_QPS_ERROR);
	assert_int_equal(uiw_post_send(p.a.qp, &wr, NULL), -EINVAL);
	assert_non_null(strstr(uiw_last_error(), "Error"));
	assert_int_equal(uiw_post_recv(p.a.qp, &rwr, NULL), -EINVAL);
	assert_int_equal(uiw_qp_llp_attach(p.a.qp, &p.a.lp, NULL, NULL),
			 -EINVAL);

	ep_buf_free(&a);
	ep_buf_free(&ro);
	ep_buf_free(&other);
	uiw_pd_free(pd2);
	assert_int_equal(ep_close(&p), 0);
}

/* ---- Operations through the pipe ----------------------------------------- */

struct ops_case {
	bool crc, markers;
	uint32_t mulpdu;
	size_t split;         /* 0 random */
	int iov;              /* iovecs per call */
	bool partial;         /* partial sends */
};

/* Send, Write and Read of len octets from a to b; everything checked. */
static void ops_once(struct ep_pipe *p, size_t len, uint32_t seed)
{
	struct ep_buf src, dst, rd, tgt;
	struct uiw_wc wc[8];
	size_t g = 64;        /* guard octets around every target */
	int n;

	assert_int_equal(ep_buf_reg(&src, p->a.pd, len + 1, 0), 0);
	assert_int_equal(ep_buf_reg(&rd, p->a.pd, len + 2 * g,
				    UIW_ACCESS_LOCAL_WRITE), 0);
	assert_int_equal(ep_buf_reg(&dst, p->b.pd, len + 2 * g,
				    UIW_ACCESS_LOCAL_WRITE), 0);
	assert_int_equal(ep_buf_reg(&tgt, p->b.pd, len + 2 * g, ALL_REMOTE),
			 0);
	ep_fill(src.p, len + 1, seed);
	ep_fill(tgt.p, len + 2 * g, seed + 1);
	memset(dst.p, 0xee, dst.len);
	memset(rd.p, 0xdd, rd.len);

	assert_int_equal(ep_post_recv(p->b.qp, 100, &dst, g,
				      (uint32_t)len), 0);
	assert_int_equal(ep_post_send(p->a.qp, 1, UIW_WR_SEND, 0, &src, 0,
				      (uint32_t)len, 0, 0, 0), 0);
	assert_int_equal(ep_post_send(p->a.qp, 2, UIW_WR_RDMA_WRITE, 0, &src,
				      0, (uint32_t)len, tgt.mr->rkey,
				      (uintptr_t)tgt.p + g, 0), 0);
	/* Read back what the Write put there (RFC 5040 §5.5 rule 12). */
	assert_int_equal(ep_post_send(p->a.qp, 3, UIW_WR_RDMA_READ, 0, &rd, g,
				      (uint32_t)len, tgt.mr->rkey,
				      (uintptr_t)tgt.p + g, 0), 0);
	ep_pump(p);

	n = ep_poll(p->a.cq, wc, 8);
	assert_int_equal(n, 3);
	assert_int_equal(wc[0].wr_id, 1);
	assert_int_equal(wc[0].status, UIW_WC_SUCCESS);
	assert_int_equal(wc[0].opcode, UIW_WC_SEND);
	assert_int_equal(wc[1].wr_id, 2);
	assert_int_equal(wc[1].status, UIW_WC_SUCCESS);
	assert_int_equal(wc[1].opcode, UIW_WC_RDMA_WRITE);
	assert_int_equal(wc[2].wr_id, 3);
	assert_int_equal(wc[2].status, UIW_WC_SUCCESS);
	assert_int_equal(wc[2].opcode, UIW_WC_RDMA_READ);
	assert_int_equal(wc[2].byte_len, len);
	n = ep_poll(p->b.cq, wc, 8);
	assert_int_equal(n, 1);
	assert_int_equal(wc[0].wr_id, 100);
	assert_int_equal(wc[0].status, UIW_WC_SUCCESS);
	assert_int_equal(wc[0].opcode, UIW_WC_RECV);
	assert_int_equal(wc[0].byte_len, len);
	assert_int_equal(wc[0].flags, 0);
	assert_int_equal(wc[0].qp_num, uiw_qp_num(p->b.qp));

	/* Byte for byte, and nothing outside the targets. */
	assert_memory_equal(dst.p + g, src.p, len);
	assert_memory_equal(tgt.p + g, src.p, len);
	assert_memory_equal(rd.p + g, src.p, len);
	for (size_t i = 0; i < g; i++) {
		assert_int_equal(dst.p[i], 0xee);
		assert_int_equal(dst.p[g + len + i], 0xee);
		assert_int_equal(rd.p[i], 0xdd);
		assert_int_equal(rd.p[g + len + i], 0xdd);
	}
	{
		struct ep_buf ref;

		assert_int_equal(ep_buf_reg(&ref, p->b.pd, tgt.len, 0), 0);
		ep_fill(ref.p, ref.len, seed + 1);
		assert_memory_equal(tgt.p, ref.p, g);
		assert_memory_equal(tgt.p + g + len, ref.p + g + len, g);
		ep_buf_free(&ref);
	}
	qp_state_is(p->a.qp, UIW_QPS_RTS);
	qp_state_is(p->b.qp, UIW_QPS_RTS);
	ep_buf_free(&src);
	ep_buf_free(&dst);
	ep_buf_free(&rd);
	ep_buf_free(&tgt);
}

static void ops_matrix(const size_t *sizes, int nsizes,
		       const struct ops_case *c)
{
	struct ep_cfg cfg = { .crc = c->crc, .markers = c->markers,
			      .mulpdu = c->mulpdu, .two_devices = true };
	struct ep_pipe p;
	int i;

	assert_int_equal(ep_open(&p, &cfg), 0);
	p.split = c->split;
	p.tx_iov_max = c->iov;
	p.rx_iov_max = c->iov;
	p.tx_partial = c->partial;
	for (i = 0; i < nsizes; i++)
		ops_once(&p, sizes[i], (uint32_t)i * 7 + 3);
	assert_int_equal(ep_close(&p), 0);
}

static const size_t small_sizes[] = { 0, 1, 2, 3, 4, 5, 17, 511, 512, 513 };
static const size_t std_sizes[] = { 0, 1, 4095, 4096, 65537 };

/* Every size the issue names, markers x CRC, random splits. */
static void test_ops_sizes(void **state)
{
	int crc, mk;

	(void)state;
	for (crc = 0; crc < 2; crc++) {
		for (mk = 0; mk < 2; mk++) {
			struct ops_case c = { crc, mk, 0, 0, 64, true };

			ops_matrix(std_sizes, 5, &c);
			c.mulpdu = 128;      /* many segments */
			ops_matrix(std_sizes, 5, &c);
		}
	}
}

/* One octet at a time, and small iovec arrays. */
static void test_ops_octets(void **state)
{
	int crc, mk;

	(void)state;
	for (crc = 0; crc < 2; crc++) {
		for (mk = 0; mk < 2; mk++) {
			struct ops_case c = { crc, mk, 128, 1, 64, false };

			ops_matrix(small_sizes, 10, &c);
			c.iov = 1;
			ops_matrix(small_sizes, 10, &c);
			c.iov = 3;
			c.split = 7;
			c.partial = true;
			ops_matrix(std_sizes, 4, &c);
		}
	}
}

/* Several MiB, small MULPDU to force thousands of segments. */
static void test_ops_large(void **state)
{
	static const size_t big[] = { 3u << 20 };
	struct ops_case c = { true, true, 1024, 0, 64, true };

	(void)state;
	ops_matrix(big, 1, &c);
	c.markers = false;
	c.crc = false;
	c.mulpdu = 65535;
	ops_matrix(big, 1, &c);
}

/* 16 MiB (the largest size of the loopback and bench matrices), in full
 * segments. */
static void test_ops_16m(void **state)
{
	static const size_t huge[] = { 16u << 20 };
	struct ops_case c = { true, false, 65535, 0, 64, false };

	(void)state;
	ops_matrix(huge, 1, &c);
}

/* ---- Variants ------------------------------------------------------------ */

static void test_send_variants(void **state)
{
	struct ep_cfg cfg = { .crc = true, .markers = true, .mulpdu = 200 };
	struct ep_pipe p;
	struct ep_buf src, dst, inv1, inv2;
	struct uiw_wc wc[8];
	struct uiw_device *d;
	uint32_t s1, s2;

	(void)state;
	assert_int_equal(ep_open(&p, &cfg), 0);
	d = p.b.dev;
	assert_int_equal(ep_buf_reg(&src, p.a.pd, 1000, 0), 0);
	assert_int_equal(ep_buf_reg(&dst, p.b.pd, 4000,
				    UIW_ACCESS_LOCAL_WRITE), 0);
	assert_int_equal(ep_buf_reg(&inv1, p.b.pd, 100, ALL_REMOTE), 0);
	assert_int_equal(ep_buf_reg(&inv2, p.b.pd, 100, ALL_REMOTE), 0);
	s1 = inv1.mr->rkey;
	s2 = inv2.mr->rkey;
	ep_fill(src.p, 1000, 5);
	for (int i = 0; i < 4; i++)
		assert_int_equal(ep_post_recv(p.b.qp, 10 + i, &dst, 1000 * i,
					      1000), 0);
	assert_int_equal(ep_post_send(p.a.qp, 1, UIW_WR_SEND,
				      UIW_SEND_SOLICITED, &src, 0, 300, 0, 0,
				      0), 0);
	assert_int_equal(ep_post_send(p.a.qp, 2, UIW_WR_SEND_WITH_INV, 0,
				      &src, 0, 400, 0, 0, s1), 0);
	assert_int_equal(ep_post_send(p.a.qp, 3, UIW_WR_SEND_WITH_INV,
				      UIW_SEND_SOLICITED, &src, 0, 0, 0, 0,
				      s2), 0);
	assert_int_equal(ep_post_send(p.a.qp, 4, UIW_WR_SEND, 0, &src, 0,
				      1000, 0, 0, 0), 0);
	ep_pump(&p);
	assert_int_equal(ep_poll(p.a.cq, wc, 8), 4);
	for (int i = 0; i < 4; i++) {
		assert_int_equal(wc[i].wr_id, i + 1);
		assert_int_equal(wc[i].status, UIW_WC_SUCCESS);
		assert_int_equal(wc[i].opcode, UIW_WC_SEND);
	}
	assert_int_equal(ep_poll(p.b.cq, wc, 8), 4);
	assert_int_equal(wc[0].byte_len, 300);
	assert_int_equal(wc[0].flags, UIW_WC_F_SOLICITED);
	assert_int_equal(wc[1].byte_len, 400);
	assert_int_equal(wc[1].flags, UIW_WC_F_WITH_INV);
	assert_int_equal(wc[1].invalidated_stag, s1);
	assert_int_equal(wc[2].byte_len, 0);
	assert_int_equal(wc[2].flags, UIW_WC_F_WITH_INV | UIW_WC_F_SOLICITED);
	assert_int_equal(wc[2].invalidated_stag, s2);
	assert_int_equal(wc[3].byte_len, 1000);
	assert_memory_equal(dst.p, src.p, 300);
	assert_memory_equal(dst.p + 1000, src.p, 400);
	assert_memory_equal(dst.p + 3000, src.p, 1000);
	/* The STags are invalid now; the other ones are not. */
	assert_int_equal(uiw_mr_check(&d->mrt, s1, p.b.pd, 0,
				      (uintptr_t)inv1.p, 1), UIW_MRC_INVALID);
	assert_int_equal(uiw_mr_check(&d->mrt, s2, p.b.pd, 0,
				      (uintptr_t)inv2.p, 1), UIW_MRC_INVALID);
	assert_int_equal(uiw_mr_check(&d->mrt, dst.mr->lkey, p.b.pd, 0,
				      (uintptr_t)dst.p, 1), UIW_MRC_OK);
	ep_buf_free(&src);
	ep_buf_free(&dst);
	ep_buf_free(&inv1);
	ep_buf_free(&inv2);
	assert_int_equal(ep_close(&p), 0);
}

/* Gather from several regions, scatter into several. */
static void test_sgl(void **state)
{
	struct ep_cfg cfg = { .crc = true, .mulpdu = 128, .max_sge = 4 };
	struct ep_pipe p;
	struct ep_buf s[3], r[3], rd;
	struct uiw_sge ss[3], rs[3];
	struct uiw_send_wr wr;
	struct uiw_recv_wr rwr;
	struct uiw_wc wc[4];
	static const uint32_t slen[3] = { 100, 1, 777 };
	static const uint32_t rlen[3] = { 3, 500, 400 };
	uint8_t all[878];
	int i;

	(void)state;
	assert_int_equal(ep_open(&p, &cfg), 0);
	p.split = 0;
	for (i = 0; i < 3; i++) {
		assert_int_equal(ep_buf_reg(&s[i], p.a.pd, slen[i], 0), 0);
		ep_fill(s[i].p, slen[i], 40 + i);
		ss[i] = (struct uiw_sge){ (uintptr_t)s[i].p, slen[i],
					  s[i].mr->lkey };
		assert_int_equal(ep_buf_reg(&r[i], p.b.pd, rlen[i] + 8,
					    ALL_REMOTE), 0);
		memset(r[i].p, 0x5a, rlen[i] + 8);
		rs[i] = (struct uiw_sge){ (uintptr_t)r[i].p + 4, rlen[i],
					  r[i].mr->lkey };
	}
	memcpy(all, s[0].p, 100);
	memcpy(all + 100, s[1].p, 1);
	memcpy(all + 101, s[2].p, 777);
	memset(&rwr, 0, sizeof(rwr));
	rwr.wr_id = 9;
	rwr.sg_list = rs;
	rwr.num_sge = 3;
	assert_int_equal(uiw_post_recv(p.b.qp, &rwr, NULL), 0);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 1;
	wr.opcode = UIW_WR_SEND;
	wr.sg_list = ss;
	wr.num_sge = 3;
	assert_int_equal(uiw_post_send(p.a.qp, &wr, NULL), 0);
	/* A Write gathered the same way into one region. */
	wr.wr_id = 2;
	wr.opcode = UIW_WR_RDMA_WRITE;
	wr.wr.rdma.rkey = r[1].mr->rkey;
	wr.wr.rdma.remote_addr = (uintptr_t)r[1].p + 4;
	wr.num_sge = 2;
	assert_int_equal(uiw_post_send(p.a.qp, &wr, NULL), 0);
	ep_pump(&p);
	assert_int_equal(ep_poll(p.a.cq, wc, 4), 2);
	assert_int_equal(wc[1].status, UIW_WC_SUCCESS);
	assert_int_equal(ep_poll(p.b.cq, wc, 4), 1);
	assert_int_equal(wc[0].byte_len, 878);
	assert_memory_equal(r[0].p + 4, all, 3);
	assert_memory_equal(r[1].p + 4, all, 101);   /* the Write */
	assert_memory_equal(r[1].p + 4 + 101, all + 3 + 101, 500 - 101);
	assert_memory_equal(r[2].p + 4, all + 503, 375);
	for (i = 0; i < 3; i++) {
		assert_int_equal(r[i].p[0], 0x5a);
		assert_int_equal(r[i].p[rlen[i] + 4], 0x5a);
	}
	assert_int_equal(r[2].p[4 + 375], 0x5a);   /* beyond the message */
	(void)rd;
	for (i = 0; i < 3; i++) {
		ep_buf_free(&s[i]);
		ep_buf_free(&r[i]);
	}
	assert_int_equal(ep_close(&p), 0);
}

static void test_inline_unsignaled(void **state)
{
	struct ep_cfg cfg = { .crc = true, .max_inline = 64 };
	struct ep_pipe p;
	struct ep_buf src, dst;
	struct uiw_wc wc[8];
	struct uiw_qp_init_attr qa;
	struct uiw_qp *q2;

	(void)state;
	assert_int_equal(ep_open_idle(&p, &cfg), 0);
	/* Replace a's QP by one that signals only on request. */
	assert_int_equal(uiw_qp_destroy(p.a.qp), 0);
	memset(&qa, 0, sizeof(qa));
	qa.send_cq = qa.recv_cq = p.a.cq;
	qa.cap.max_send_wr = qa.cap.max_recv_wr = 8;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
	qa.cap.max_inline_data = 64;
	qa.qp_context = &cfg;
	q2 = uiw_qp_create(p.a.pd, &qa);
	assert_non_null(q2);
	assert_ptr_equal(uiw_qp_context(q2), &cfg);
	p.a.qp = q2;
	assert_int_equal(ep_attach(&p), 0);
	assert_int_equal(ep_buf_reg(&src, p.a.pd, 64, 0), 0);
	assert_int_equal(ep_buf_reg(&dst, p.b.pd, 256, ALL_REMOTE), 0);
	ep_fill(src.p, 64, 1);
	for (int i = 0; i < 3; i++)
		assert_int_equal(ep_post_recv(p.b.qp, 10 + i, &dst, 64 * i,
					      64), 0);
	assert_int_equal(ep_post_send(p.a.qp, 1, UIW_WR_SEND, UIW_SEND_INLINE,
				      &src, 0, 64, 0, 0, 0), 0);
	/* Inline data is copied at post time. */
	memset(src.p, 0, 64);
	assert_int_equal(ep_post_send(p.a.qp, 2, UIW_WR_SEND, 0, &src, 0, 10,
				      0, 0, 0), 0);
	assert_int_equal(ep_post_send(p.a.qp, 3, UIW_WR_SEND,
				      UIW_SEND_SIGNALED, &src, 0, 10, 0, 0, 0),
			 0);
	ep_pump(&p);
	/* Only the signalled WR reports (after the others completed). */
	assert_int_equal(ep_poll(p.a.cq, wc, 8), 1);
	assert_int_equal(wc[0].wr_id, 3);
	assert_int_equal(wc[0].status, UIW_WC_SUCCESS);
	assert_int_equal(ep_poll(p.b.cq, wc, 8), 3);
	{
		uint8_t ref[64];

		ep_fill(ref, 64, 1);
		assert_memory_equal(dst.p, ref, 64);
	}
	ep_buf_free(&src);
	ep_buf_free(&dst);
	assert_int_equal(ep_close(&p), 0);
}

/* ---- Reads: ORD, fences, completion order -------------------------------- */

static void test_reads_ord(void **state)
{
	struct ep_cfg cfg = { .crc = true, .markers = true, .mulpdu = 256,
			      .ord = 4, .ird = 4, .max_wr = 32 };
	struct ep_pipe p;
	struct ep_buf sink, srcb;
	struct uiw_wc wc[32];
	unsigned per[16];
	int i, n;

	(void)state;
	assert_int_equal(ep_open(&p, &cfg), 0);
	assert_int_equal(ep_buf_reg(&sink, p.a.pd, 12 * 1000,
				    UIW_ACCESS_LOCAL_WRITE), 0);
	assert_int_equal(ep_buf_reg(&srcb, p.b.pd, 12 * 1000,
				    UIW_ACCESS_REMOTE_READ), 0);
	ep_fill(srcb.p, srcb.len, 77);
	for (i = 0; i < 12; i++)
		assert_int_equal(ep_post_send(p.a.qp, 1 + i, UIW_WR_RDMA_READ,
					      0, &sink, 1000 * i,
					      i == 5 ? 0 : 1000,
					      srcb.mr->rkey,
					      (uintptr_t)srcb.p + 1000 * i, 0),
				 0);
	/* Only ORD Requests go out; the rest wait (not failed). */
	ep_drain_tx(&p, &p.a);
	n = ep_count_fpdus(p.a.out, p.a.out_len, true, true, per);
	assert_int_equal(n, 4);
	assert_int_equal(per[UIW_OP_READ_REQ], 4);
	assert_int_equal(ep_poll(p.a.cq, wc, 32), 0);
	/* The peer answers; the window moves until all are done. */
	ep_pump(&p);
	n = ep_count_fpdus(p.a.out, p.a.out_len, true, true, per);
	assert_int_equal(per[UIW_OP_READ_REQ], 12);
	assert_int_equal(ep_poll(p.a.cq, wc, 32), 12);
	for (i = 0; i < 12; i++) {
		assert_int_equal(wc[i].wr_id, 1 + i);
		assert_int_equal(wc[i].status, UIW_WC_SUCCESS);
		assert_int_equal(wc[i].byte_len, i == 5 ? 0 : 1000);
	}
	for (i = 0; i < 12; i++)
		if (i != 5)
			assert_memory_equal(sink.p + 1000 * i,
					    srcb.p + 1000 * i, 1000);
	for (i = 0; i < 1000; i++)
		assert_int_equal(sink.p[5000 + i], 0);
	ep_buf_free(&sink);
	ep_buf_free(&srcb);
	assert_int_equal(ep_close(&p), 0);
}

/* Completions in order (RFC 5040 §5.5 rule 15), and a fence. */
static void test_order_fence(void **state)
{
	struct ep_cfg cfg = { .crc = true, .ord = 8 };
	struct ep_pipe p;
	struct ep_buf sink, srcb, sb, rb;
	struct uiw_wc wc[8];
	unsigned per[16];

	(void)state;
	assert_int_equal(ep_open(&p, &cfg), 0);
	assert_int_equal(ep_buf_reg(&sink, p.a.pd, 100,
				    UIW_ACCESS_LOCAL_WRITE), 0);
	assert_int_equal(ep_buf_reg(&sb, p.a.pd, 100, 0), 0);
	assert_int_equal(ep_buf_reg(&srcb, p.b.pd, 100, ALL_REMOTE), 0);
	assert_int_equal(ep_buf_reg(&rb, p.b.pd, 100, ALL_REMOTE), 0);
	ep_fill(srcb.p, 100, 3);
	ep_fill(sb.p, 100, 4);
	assert_int_equal(ep_post_recv(p.b.qp, 50, &rb, 0, 100), 0);
	assert_int_equal(ep_post_recv(p.b.qp, 51, &rb, 0, 100), 0);

	/* Read then Send: the Send goes out at once but completes after
	 * the Read. */
	assert_int_equal(ep_post_send(p.a.qp, 1, UIW_WR_RDMA_READ, 0, &sink,
				      0, 100, srcb.mr->rkey,
				      (uintptr_t)srcb.p, 0), 0);
	assert_int_equal(ep_post_send(p.a.qp, 2, UIW_WR_SEND, 0, &sb, 0, 10,
				      0, 0, 0), 0);
	ep_drain_tx(&p, &p.a);
	ep_count_fpdus(p.a.out, p.a.out_len, false, true, per);
	assert_int_equal(per[UIW_OP_READ_REQ], 1);
	assert_int_equal(per[UIW_OP_SEND], 1);
	assert_int_equal(ep_poll(p.a.cq, wc, 8), 0);
	ep_pump(&p);
	assert_int_equal(ep_poll(p.a.cq, wc, 8), 2);
	assert_int_equal(wc[0].wr_id, 1);
	assert_int_equal(wc[1].wr_id, 2);
	assert_int_equal(ep_poll(p.b.cq, wc, 8), 1);

	/* Read, then a fenced Send: the Send waits for the Response. */
	p.a.out_len = 0;
	assert_int_equal(ep_post_send(p.a.qp, 3, UIW_WR_RDMA_READ, 0, &sink,
				      0, 100, srcb.mr->rkey,
				      (uintptr_t)srcb.p, 0), 0);
	assert_int_equal(ep_post_send(p.a.qp, 4, UIW_WR_SEND, UIW_SEND_FENCE,
				      &sb, 0, 10, 0, 0, 0), 0);
	ep_drain_tx(&p, &p.a);
	ep_count_fpdus(p.a.out, p.a.out_len, false, true, per);
	assert_int_equal(per[UIW_OP_READ_REQ], 1);
	assert_int_equal(per[UIW_OP_SEND], 0);
	ep_pump(&p);
	assert_int_equal(ep_poll(p.a.cq, wc, 8), 2);
	assert_int_equal(wc[0].wr_id, 3);
	assert_int_equal(wc[1].wr_id, 4);
	assert_int_equal(ep_poll(p.b.cq, wc, 8), 1);
	assert_memory_equal(sink.p, srcb.p, 100);

	ep_buf_free(&sink);
	ep_buf_free(&sb);
	ep_buf_free(&srcb);
	ep_buf_free(&rb);
	assert_int_equal(ep_close(&p), 0);
}

/* Sends queued in Idle go out once RTS; a responder holds its first
 * FPDU until it has received one (RFC 5044 §7.1.2 rule 4). */
static void test_idle_and_hold(void **state)
{
	struct ep_cfg cfg = { .crc = true, .hold_b = true };
	struct ep_pipe p;
	struct ep_buf sa, sb, ra, rb;
	struct uiw_wc wc[4];

	(void)state;
	assert_int_equal(ep_open_idle(&p, &cfg), 0);
	assert_int_equal(ep_buf_reg(&sa, p.a.pd, 100, 0), 0);
	assert_int_equal(ep_buf_reg(&sb, p.b.pd, 100, 0), 0);
	assert_int_equal(ep_buf_reg(&ra, p.a.pd, 100, ALL_REMOTE), 0);
	assert_int_equal(ep_buf_reg(&rb, p.b.pd, 100, ALL_REMOTE), 0);
	ep_fill(sa.p, 100, 1);
	ep_fill(sb.p, 100, 2);
	assert_int_equal(ep_post_recv(p.a.qp, 10, &ra, 0, 100), 0);
	assert_int_equal(ep_post_recv(p.b.qp, 20, &rb, 0, 100), 0);
	assert_int_equal(ep_post_send(p.b.qp, 2, UIW_WR_SEND, 0, &sb, 0, 50,
				      0, 0, 0), 0);
	assert_int_equal(ep_post_send(p.a.qp, 1, UIW_WR_SEND, 0, &sa, 0, 60,
				      0, 0, 0), 0);
	qp_state_is(p.b.qp, UIW_QPS_IDLE);
	assert_int_equal(p.a.kicks, 0);
	assert_int_equal(ep_attach(&p), 0);
	/* a is asked to send what waits; b holds: nothing. */
	assert_int_equal(p.a.kicks, 1);
	assert_int_equal(p.b.kicks, 0);
	assert_int_equal(ep_drain_tx(&p, &p.b), 0);
	assert_int_equal(ep_post_send(p.a.qp, 3, UIW_WR_SEND, 0, &sa, 0, 1,
				      0, 0, 0), 0);
	assert_int_equal(p.a.kicks, 2);
	assert_int_equal(ep_post_recv(p.b.qp, 21, &rb, 60, 40), 0);
	ep_pump(&p);
	assert_int_equal(ep_poll(p.a.cq, wc, 4), 3);
	assert_int_equal(ep_poll(p.b.cq, wc, 4), 3);
	assert_memory_equal(ra.p, sb.p, 50);
	assert_memory_equal(rb.p, sa.p, 60);
	ep_buf_free(&sa);
	ep_buf_free(&sb);
	ep_buf_free(&ra);
	ep_buf_free(&rb);
	assert_int_equal(ep_close(&p), 0);
}

/* RFC 5040 §6: RTS -> Closing -> (orderly close) -> Idle. */
static void test_graceful_close(void **state)
{
	struct ep_cfg cfg = { .crc = true };
	struct ep_pipe p;
	struct ep_buf sa, rb;
	struct uiw_wc wc[4];

	(void)state;
	assert_int_equal(ep_open(&p, &cfg), 0);
	assert_int_equal(ep_buf_reg(&sa, p.a.pd, 100, 0), 0);
	assert_int_equal(ep_buf_reg(&rb, p.b.pd, 200, ALL_REMOTE), 0);
	assert_int_equal(ep_post_recv(p.b.qp, 20, &rb, 0, 100), 0);
	assert_int_equal(ep_post_recv(p.b.qp, 21, &rb, 100, 100), 0);
	assert_int_equal(ep_post_send(p.a.qp, 1, UIW_WR_SEND, 0, &sa, 0, 100,
				      0, 0, 0), 0);
	assert_int_equal(uiw_qp_disconnect(p.a.qp), 0);
	qp_state_is(p.a.qp, UIW_QPS_CLOSING);
	assert_int_equal(uiw_post_send(p.a.qp, NULL, NULL), 0);
	assert_int_equal(ep_post_send(p.a.qp, 2, UIW_WR_SEND, 0, &sa, 0, 1,
				      0, 0, 0), -EINVAL);
	assert_int_equal(p.a.closes, 0);      /* the Send is queued */
	ep_pump(&p);
	assert_int_equal(p.a.closes, 1);
	assert_false(p.a.abortive);
	/* The LLP closes: a sees the end, b sees the peer's FIN. */
	ep_llp_fin(p.b.qp);
	qp_state_is(p.b.qp, UIW_QPS_CLOSING);
	assert_int_equal(p.b.closes, 1);
	ep_side_detach(&p.a, UIW_OK);
	ep_side_detach(&p.b, UIW_OK);
	qp_state_is(p.a.qp, UIW_QPS_IDLE);
	qp_state_is(p.b.qp, UIW_QPS_IDLE);
	assert_int_equal(ep_poll(p.a.cq, wc, 4), 1);
	assert_int_equal(wc[0].status, UIW_WC_SUCCESS);
	assert_int_equal(ep_poll(p.b.cq, wc, 4), 2);
	assert_int_equal(wc[0].status, UIW_WC_SUCCESS);
	assert_int_equal(wc[1].wr_id, 21);
	assert_int_equal(wc[1].status, UIW_WC_WR_FLUSH_ERR);
	assert_int_equal(wc[1].term.origin, UIW_TERM_NONE);
	/* An Idle QP can be connected again. */
	assert_int_equal(ep_post_recv(p.b.qp, 22, &rb, 0, 100), 0);
	assert_int_equal(ep_attach(&p), 0);
	assert_int_equal(ep_post_send(p.a.qp, 3, UIW_WR_SEND, 0, &sa, 0, 7,
				      0, 0, 0), 0);
	ep_pump(&p);
	assert_int_equal(ep_poll(p.b.cq, wc, 4), 1);
	assert_int_equal(wc[0].wr_id, 22);
	assert_int_equal(wc[0].byte_len, 7);
	ep_buf_free(&sa);
	ep_buf_free(&rb);
	assert_int_equal(ep_close(&p), 0);
}

/* Direct placement: the octets of a Write and of a Send are named by
 * rx_iov exactly once each, at their final address in the target region
 * or receive buffer; nothing else is named there. */
static void test_direct_placement(void **state)
{
	int mk, crc;

	(void)state;
	for (mk = 0; mk < 2; mk++) {
		for (crc = 0; crc < 2; crc++) {
			struct ep_cfg cfg = { .crc = crc, .markers = mk,
					      .mulpdu = 300 };
			struct ep_pipe p;
			struct ep_buf src, tgt, rcv;
			struct iovec iov[64];
			size_t off = 0, in_tgt = 0, in_rcv = 0;
			uint64_t rng = 9;
			struct uiw_wc wc[4];

			assert_int_equal(ep_open(&p, &cfg), 0);
			assert_int_equal(ep_buf_reg(&src, p.a.pd, 5000, 0), 0);
			assert_int_equal(ep_buf_reg(&tgt, p.b.pd, 5000,
						    ALL_REMOTE), 0);
			assert_int_equal(ep_buf_reg(&rcv, p.b.pd, 5000,
						    UIW_ACCESS_LOCAL_WRITE), 0);
			ep_fill(src.p, 5000, 3);
			assert_int_equal(ep_post_recv(p.b.qp, 7, &rcv, 0, 5000),
					 0);
			assert_int_equal(ep_post_send(p.a.qp, 1,
						      UIW_WR_RDMA_WRITE, 0,
						      &src, 0, 3000,
						      tgt.mr->rkey,
						      (uintptr_t)tgt.p + 1000,
						      0), 0);
			assert_int_equal(ep_post_send(p.a.qp, 2, UIW_WR_SEND,
						      0, &src, 100, 2500, 0,
						      0, 0), 0);
			ep_drain_tx(&p, &p.a);
			while (off < p.a.q_len) {
				int n = ep_rx_iov(p.b.qp, iov, 64), i;
				size_t take, k, room = 0;

				assert_true(n > 0);
				for (i = 0; i < n; i++)
					room += iov[i].iov_len;
				take = 1 + ep_rand(&rng) % 700;
				if (take > room)
					take = room;
				if (take > p.a.q_len - off)
					take = p.a.q_len - off;
				for (i = 0, k = 0; k < take; i++) {
					uint8_t *b = iov[i].iov_base;
					size_t o = iov[i].iov_len < take - k ?
						   iov[i].iov_len : take - k;

					if (b >= tgt.p && b < tgt.p + 5000) {
						assert_true(b + o <=
							    tgt.p + 5000);
						in_tgt += o;
					}
					if (b >= rcv.p && b < rcv.p + 5000) {
						assert_true(b + o <=
							    rcv.p + 5000);
						in_rcv += o;
					}
					memcpy(b, p.a.q + off + k, o);
					k += o;
				}
				off += take;
				assert_int_equal(ep_rx_done(p.b.qp, take),
						 0);
			}
			assert_int_equal(in_tgt, 3000);
			assert_int_equal(in_rcv, 2500);
			assert_memory_equal(tgt.p + 1000, src.p, 3000);
			assert_memory_equal(rcv.p, src.p + 100, 2500);
			assert_int_equal(ep_poll(p.b.cq, wc, 4), 1);
			assert_int_equal(wc[0].byte_len, 2500);
			ep_buf_free(&src);
			ep_buf_free(&tgt);
			ep_buf_free(&rcv);
			assert_int_equal(ep_close(&p), 0);
		}
	}
}

/* uiw_mpa_rx_iov's ahead: once a message of a kind (untagged, tagged) has
 * been seen, the read that ends the second-to-last FPDU of one as long of
 * that kind also names the rest of its short last FPDU; those octets go
 * in with uiw_mpa_rx_feed, as the TCP LLP does, and land where they
 * belong.  Sends and Writes alternate, and a Write with Immediate Data
 * (whose Immediate Data message is untagged and short) comes before the
 * last Write: each kind keeps its own length.  Nothing is guessed for
 * the first message of a kind, for an FPDU followed by a full one, or
 * with markers. */
static void test_rx_ahead(void **state)
{
	const uint32_t len = 10000, mulpdu = 4096;
	int mk, crc;

	(void)state;
	for (mk = 0; mk < 2; mk++) {
		for (crc = 0; crc < 2; crc++) {
			struct ep_cfg cfg = { .crc = crc, .markers = mk,
					      .mulpdu = mulpdu };
			uint32_t u_last = len - 2 * (mulpdu - 18);
			uint32_t t_last = len - 2 * (mulpdu - 14);
			struct ep_pipe p;
			struct ep_buf src, rcv, tgt;
			struct uiw_send_wr imm;
			struct uiw_sge sge;
			struct iovec iov[64];
			size_t off = 0, got[8];
			struct uiw_wc wc[8];
			int na = 0, i;

			assert_int_equal(ep_open(&p, &cfg), 0);
			assert_int_equal(ep_buf_reg(&src, p.a.pd, 5 * len, 0),
					 0);
			assert_int_equal(ep_buf_reg(&rcv, p.b.pd, 2 * len,
						    UIW_ACCESS_LOCAL_WRITE), 0);
			assert_int_equal(ep_buf_reg(&tgt, p.b.pd, 3 * len,
						    ALL_REMOTE), 0);
			ep_fill(src.p, 5 * len, 11);
			assert_int_equal(ep_post_recv(p.b.qp, 1, &rcv, 0, len),
					 0);
			assert_int_equal(ep_post_recv(p.b.qp, 2, &rcv, len,
						      len), 0);
			assert_int_equal(ep_post_recv(p.b.qp, 3, &rcv, 0, 0),
					 0);
			/* Send, Write, Send, Write with Immediate, Write */
			assert_int_equal(ep_post_send(p.a.qp, 10, UIW_WR_SEND,
					0, &src, 0, len, 0, 0, 0), 0);
			assert_int_equal(ep_post_send(p.a.qp, 11,
					UIW_WR_RDMA_WRITE, 0, &src, len, len,
					tgt.mr->rkey, (uintptr_t)tgt.p, 0), 0);
			assert_int_equal(ep_post_send(p.a.qp, 12, UIW_WR_SEND,
					0, &src, 2 * len, len, 0, 0, 0), 0);
			memset(&imm, 0, sizeof(imm));
			sge.addr = (uintptr_t)(src.p + 3 * len);
			sge.length = len;
			sge.lkey = src.mr->lkey;
			imm.wr_id = 13;
			imm.opcode = UIW_WR_RDMA_WRITE_WITH_IMM;
			imm.imm_data = 0x1122334455667788ull;
			imm.sg_list = &sge;
			imm.num_sge = 1;
			imm.wr.rdma.rkey = tgt.mr->rkey;
			imm.wr.rdma.remote_addr = (uintptr_t)(tgt.p + len);
			assert_int_equal(uiw_post_send(p.a.qp, &imm, NULL), 0);
			assert_int_equal(ep_post_send(p.a.qp, 14,
					UIW_WR_RDMA_WRITE, 0, &src, 4 * len,
					len, tgt.mr->rkey,
					(uintptr_t)(tgt.p + 2 * len), 0), 0);
			ep_drain_tx(&p, &p.a);
			while (off < p.a.q_len) {
				struct uiw_mpa_fed fed;
				size_t ahead = 1, room = 0, take, k;
				int n = ep_rx_iov_ahead(p.b.qp, iov, 64,
							    &ahead);

				assert_true(n > 0);
				for (i = 0; i < n; i++)
					room += iov[i].iov_len;
				take = room < p.a.q_len - off ?
				       room : p.a.q_len - off;
				for (i = 0, k = 0; k < take; i++) {
					size_t o = iov[i].iov_len < take - k ?
						   iov[i].iov_len : take - k;

					memcpy(iov[i].iov_base,
					       p.a.q + off + k, o);
					k += o;
				}
				off += take;
				assert_int_equal(ep_rx_done(p.b.qp, take),
						 0);
				if (!ahead)
					continue;
				assert_true(na < 8);
				got[na++] = ahead;
				assert_true(ahead <= p.a.q_len - off);
				assert_int_equal(ep_rx_feed(p.b.qp,
						p.a.q + off, ahead, &fed), 0);
				assert_int_equal(fed.used, ahead);
				off += ahead;
			}
			if (mk) {
				assert_int_equal(na, 0);
			} else {
				/* the second Send, the Write with Immediate
				 * Data, the last Write; the 16 octets after
				 * LEN's are named already */
				assert_int_equal(na, 3);
				assert_int_equal(got[0],
					uiw_mpa_plain_len(18 + u_last) - 16);
				assert_int_equal(got[1],
					uiw_mpa_plain_len(14 + t_last) - 16);
				assert_int_equal(got[2], got[1]);
			}
			assert_memory_equal(rcv.p, src.p, len);
			assert_memory_equal(rcv.p + len, src.p + 2 * len, len);
			assert_memory_equal(tgt.p, src.p + len, len);
			assert_memory_equal(tgt.p + len, src.p + 3 * len,
					    2 * len);
			assert_int_equal(ep_poll(p.b.cq, wc, 8), 3);
			for (i = 0; i < 3; i++) {
				assert_int_equal(wc[i].status, UIW_WC_SUCCESS);
				assert_int_equal(wc[i].wr_id, (uint64_t)i + 1);
			}
			assert_int_equal(wc[0].byte_len, len);
			assert_int_equal(wc[1].byte_len, len);
			assert_int_equal(wc[2].opcode,
					 UIW_WC_RECV_RDMA_WITH_IMM);
			assert_int_equal(wc[2].imm_data, imm.imm_data);
			ep_buf_free(&src);
			ep_buf_free(&rcv);
			ep_buf_free(&tgt);
			assert_int_equal(ep_close(&p), 0);
		}
	}
}

/* Both sides at once: Reads answered while each side's own Sends,
 * Writes and Reads go out (Responses and send WRs take turns). */
static void test_bidirectional(void **state)
{
	struct ep_cfg cfg = { .crc = true, .markers = true, .mulpdu = 256,
			      .ird = 4, .ord = 4, .max_wr = 64 };
	struct ep_pipe p;
	struct ep_side *side[2];
	struct ep_buf src[2], tgt[2], sink[2], rcv[2];
	struct uiw_wc wc[64];
	int s, i, n;

	(void)state;
	assert_int_equal(ep_open(&p, &cfg), 0);
	side[0] = &p.a;
	side[1] = &p.b;
	p.split = 0;
	for (s = 0; s < 2; s++) {
		assert_int_equal(ep_buf_reg(&src[s], side[s]->pd, 20000, 0), 0);
		assert_int_equal(ep_buf_reg(&tgt[s], side[s]->pd, 20000,
					    ALL_REMOTE), 0);
		assert_int_equal(ep_buf_reg(&sink[s], side[s]->pd, 20000,
					    UIW_ACCESS_LOCAL_WRITE), 0);
		assert_int_equal(ep_buf_reg(&rcv[s], side[s]->pd, 20000,
					    UIW_ACCESS_LOCAL_WRITE), 0);
		ep_fill(src[s].p, 20000, 10 + s);
		ep_fill(tgt[s].p, 20000, 20 + s);
		for (i = 0; i < 10; i++)
			assert_int_equal(ep_post_recv(side[s]->qp, 100 + i,
						      &rcv[s], 2000 * i, 2000),
					 0);
	}
	/* Each side: 10 rounds of Read (of the peer's target), Send,
	 * Write (into the peer's target, above what is read). */
	for (i = 0; i < 10; i++) {
		for (s = 0; s < 2; s++) {
			struct ep_buf *pt = &tgt[1 - s];

			assert_int_equal(ep_post_send(side[s]->qp, 3 * i,
						      UIW_WR_RDMA_READ, 0,
						      &sink[s], 1000 * i, 1000,
						      pt->mr->rkey,
						      (uintptr_t)pt->p +
						      1000 * i, 0), 0);
			assert_int_equal(ep_post_send(side[s]->qp, 3 * i + 1,
						      UIW_WR_SEND, 0, &src[s],
						      100 * i, 1500 + i, 0, 0,
						      0), 0);
			assert_int_equal(ep_post_send(side[s]->qp, 3 * i + 2,
						      UIW_WR_RDMA_WRITE, 0,
						      &src[s], 0, 900,
						      pt->mr->rkey,
						      (uintptr_t)pt->p + 10000 +
						      900 * i, 0), 0);
		}
		if (i % 3 == 0)
			ep_pump(&p);
	}
	ep_pump(&p);
	for (s = 0; s < 2; s++) {
		uint8_t ref[20000];

		n = ep_poll(side[s]->cq, wc, 64);
		assert_int_equal(n, 40);
		/* Send WRs in order, receives in order. */
		{
			int sq = 0, rq = 0;

			for (i = 0; i < n; i++) {
				assert_int_equal(wc[i].status, UIW_WC_SUCCESS);
				if (wc[i].opcode == UIW_WC_RECV) {
					assert_int_equal(wc[i].wr_id, 100 + rq);
					assert_int_equal(wc[i].byte_len,
							 1500 + rq);
					rq++;
				} else {
					assert_int_equal(wc[i].wr_id, sq);
					sq++;
				}
			}
			assert_int_equal(sq, 30);
			assert_int_equal(rq, 10);
		}
		ep_fill(ref, 20000, 20 + (1 - s));
		assert_memory_equal(sink[s].p, ref, 10000);
		for (i = 0; i < 10; i++) {
			assert_memory_equal(rcv[s].p + 2000 * i,
					    src[1 - s].p + 100 * i, 1500 + i);
			assert_memory_equal(tgt[1 - s].p + 10000 + 900 * i,
					    src[s].p, 900);
		}
	}
	for (s = 0; s < 2; s++) {
		ep_buf_free(&src[s]);
		ep_buf_free(&tgt[s]);
		ep_buf_free(&sink[s]);
		ep_buf_free(&rcv[s]);
	}
	assert_int_equal(ep_close(&p), 0);
}

/* Destroying a connected QP disconnects it abortively first: the LLP is
 * told to reset, and the QP goes once it is detached. */
static void test_destroy_connected(void **state)
{
	struct ep_cfg cfg = { .crc = true };
	struct ep_pipe p;
	struct ep_buf sa;

	(void)state;
	assert_int_equal(ep_open(&p, &cfg), 0);
	assert_int_equal(ep_buf_reg(&sa, p.a.pd, 100, 0), 0);
	assert_int_equal(ep_post_send(p.a.qp, 1, UIW_WR_SEND, 0, &sa, 0, 100,
				      0, 0, 0), 0);
	ep_drain_tx(&p, &p.a);
	assert_int_equal(uiw_qp_destroy(p.a.qp), 0);
	p.a.qp = NULL;
	assert_int_equal(p.a.closes, 1);
	assert_true(p.a.abortive);
	assert_false(p.a.attached);
	/* The region is not held by anything any more. */
	ep_buf_free(&sa);
	assert_int_equal(ep_close(&p), 0);
}

/* Many QPs on one device, several devices: independent streams. */
static void test_many_qps(void **state)
{
	struct ep_cfg cfg = { .crc = true, .mulpdu = 300 };
	struct ep_pipe p[4];
	struct ep_buf s[4], r[4];
	struct uiw_wc wc[4];
	int i;

	(void)state;
	for (i = 0; i < 4; i++) {
		cfg.two_devices = i & 1;
		cfg.markers = i & 2;
		assert_int_equal(ep_open(&p[i], &cfg), 0);
		assert_int_equal(ep_buf_reg(&s[i], p[i].a.pd, 3000, 0), 0);
		assert_int_equal(ep_buf_reg(&r[i], p[i].b.pd, 3000,
					    ALL_REMOTE), 0);
		ep_fill(s[i].p, 3000, 100 + i);
		assert_int_equal(ep_post_recv(p[i].b.qp, i, &r[i], 0, 3000),
				 0);
		assert_int_equal(ep_post_send(p[i].a.qp, i, UIW_WR_SEND, 0,
					      &s[i], 0, 3000, 0, 0, 0), 0);
	}
	for (i = 3; i >= 0; i--)
		ep_pump(&p[i]);
	for (i = 0; i < 4; i++) {
		assert_int_equal(ep_poll(p[i].b.cq, wc, 4), 1);
		assert_int_equal(wc[0].byte_len, 3000);
		assert_memory_equal(r[i].p, s[i].p, 3000);
		ep_buf_free(&s[i]);
		ep_buf_free(&r[i]);
		assert_int_equal(ep_close(&p[i]), 0);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_device_pd),
		cmocka_unit_test(test_mr_stags),
		cmocka_unit_test(test_cq_basic),
		cmocka_unit_test(test_cq_notify),
		cmocka_unit_test(test_post_rules),
		cmocka_unit_test(test_ops_sizes),
		cmocka_unit_test(test_ops_octets),
		cmocka_unit_test(test_ops_large),
		cmocka_unit_test(test_ops_16m),
		cmocka_unit_test(test_send_variants),
		cmocka_unit_test(test_sgl),
		cmocka_unit_test(test_inline_unsignaled),
		cmocka_unit_test(test_reads_ord),
		cmocka_unit_test(test_order_fence),
		cmocka_unit_test(test_idle_and_hold),
		cmocka_unit_test(test_graceful_close),
		cmocka_unit_test(test_destroy_connected),
		cmocka_unit_test(test_direct_placement),
		cmocka_unit_test(test_rx_ahead),
		cmocka_unit_test(test_bidirectional),
		cmocka_unit_test(test_many_qps),
	};
	static const char *const mpa_only[] = {
		"test_idle_and_hold", "test_direct_placement",
		"test_rx_ahead", NULL,
	};

	return ep_run_tests("engine", tests, sizeof(tests) / sizeof(tests[0]),
			    mpa_only, NULL);
}
