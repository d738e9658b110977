/*
 * Every RDMA operation end to end over 127.0.0.1, through the public API
 * only: Send, Send with SE, Send with Invalidate, Send with SE and
 * Invalidate, RDMA Write and RDMA Read, each with markers on and off and
 * CRC on and off, at message sizes 0, 1, 4095, 4096, 65537 and 16 MiB,
 * data verified octet for octet.  Then scatter/gather lists, unsignalled
 * work requests, Reads up to and beyond ORD, local invalidate, the error
 * paths a user sees (Terminate, flushed work requests, the cause),
 * completion notification and poll mode's deferred sending.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lb_util.h"

#define MIB (1024u * 1024u)
#define BIG (16u * MIB)
#define SLACK 64                /* canary octets after every message */
#define CANARY 0xa5

#define ACC_ALL (UIW_ACCESS_LOCAL_WRITE | UIW_ACCESS_REMOTE_WRITE | \
		 UIW_ACCESS_REMOTE_READ)

static const size_t sizes[] = { 0, 1, 4095, 4096, 65537 };
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

enum op {
	OP_SEND,
	OP_SEND_SE,
	OP_SEND_INV,
	OP_SEND_SE_INV,
	OP_WRITE,
	OP_READ,
};

struct op_case {
	enum op op;
	int crc;
	int markers;
	int big;                /* also move one 16 MiB message */
};

struct ctx {
	const struct op_case *c;
	struct lbu_pair p;
	int connected;
};

static int setup(void **state)
{
	struct ctx *x = calloc(1, sizeof(*x));

	if (!x)
		return -1;
	x->c = *state;
	*state = x;
	return 0;
}

static int teardown(void **state)
{
	struct ctx *x = *state;
	int rc = 0;

	if (x->connected && lbu_pair_destroy(&x->p) < 0) {
		print_error("teardown: %s\n", lbu_err());
		rc = -1;
	}
	free(x);
	return rc;
}

static void connect_opts(struct ctx *x, const struct lbu_opts *o)
{
	LBU_OK(lbu_pair_connect(&x->p, o));
	x->connected = 1;
}

static void connect_default(struct ctx *x)
{
	struct lbu_opts o;

	lbu_opts_init(&o);
	connect_opts(x, &o);
}

static void wc_fail(const char *what, const struct uiw_wc *wc)
{
	char d[256];

	fail_msg("%s: %s", what, lbu_wc_str(wc, d, sizeof(d)));
}

/* ------------------------------------------------------------------ */
/* The error path: a Write that the sink must refuse                  */

/* Terminate causes that name a refused STag.  RFC 5041 §7.2 (DDP tagged
 * buffer error: invalid STag) and RFC 5040 §4.8 (RDMAP remote protection
 * error: invalid STag or access rights violation) are both faithful
 * readings for a Write to an STag that is invalid or lacks rights. */
static int cause_refused_stag(const struct uiw_term_cause *t)
{
	if (t->layer == UIW_TERM_LAYER_DDP && t->etype == 1 && t->ecode == 0)
		return 1;
	if (t->layer == UIW_TERM_LAYER_RDMAP && t->etype == 1 &&
	    (t->ecode == 0 || t->ecode == 2))
		return 1;
	return 0;
}

/* RFC 5041 §7.2: untagged buffer error, message too long. */
static int cause_too_long(const struct uiw_term_cause *t)
{
	return t->layer == UIW_TERM_LAYER_DDP && t->etype == 2 &&
	       t->ecode == 5;
}

static void check_cause(const char *who, const struct uiw_term_cause *t,
			int origin, int (*ok)(const struct uiw_term_cause *))
{
	const char *s = uiw_term_cause_str(t);

	if (t->origin != origin || !ok(t))
		fail_msg("%s: Terminate cause %u/%u/%#x origin %u (%s), "
			 "expected origin %d and the right cause", who,
			 t->layer, t->etype, t->ecode, t->origin,
			 s ? s : "?", origin);
	assert_non_null(s);
	assert_true(strlen(s) > 0);
}

static int flushed_recv(const struct uiw_wc *wc, uint64_t wr_id)
{
	return wc->status == UIW_WC_WR_FLUSH_ERR &&
	       wc->opcode == UIW_WC_RECV && wc->wr_id == wr_id;
}

/*
 * The peer of `w` must end the stream: both QPs leave RTS, the writer's
 * later work requests do not succeed, the nrecv receives posted on each
 * side are flushed in order with WR_FLUSH_ERR, both ends see DISCONNECTED,
 * and both can read the cause (ours: sent it, theirs: received it).
 * Completions are expected for wr_ids first..first+nsend-1 on w's send CQ;
 * those before `must_fail` may have succeeded (a Write or Send completes
 * locally once sent, RFC 5040 §5.5), the others must not.
 */
static void check_stream_ended(struct lbu_side *w, struct lbu_side *sink,
			       uint64_t first, int nsend, int must_fail,
			       int nrecv,
			       int (*cause)(const struct uiw_term_cause *))
{
	struct uiw_wc wc[8];
	struct uiw_qp_attr wa, sa;
	int i, errors = 0;

	assert_true(nsend <= 8 && nrecv <= 8);
	LBU_OK(lbu_wait_wc(w->scq, wc, nsend));
	for (i = 0; i < nsend; i++) {
		char d[256];

		print_message("  %s: %s\n", w->name,
			      lbu_wc_str(&wc[i], d, sizeof(d)));
		if (wc[i].wr_id != first + (uint64_t)i)
			wc_fail("writer's completions out of order", &wc[i]);
		if (wc[i].status == UIW_WC_SUCCESS) {
			if (i >= must_fail)
				wc_fail("work request after the refused one "
					"succeeded", &wc[i]);
			continue;
		}
		errors++;
		if (wc[i].term.origin != UIW_TERM_REMOTE || !cause(&wc[i].term))
			wc_fail("writer's error completion does not carry the "
				"peer's Terminate cause", &wc[i]);
	}
	assert_true(errors > 0);
	/* Posted receives on both sides are flushed, in order. */
	LBU_OK(lbu_wait_wc(w->rcq, wc, nrecv));
	for (i = 0; i < nrecv; i++)
		if (!flushed_recv(&wc[i], 900 + (uint64_t)i))
			wc_fail("writer's receive not flushed in order", &wc[i]);
	LBU_OK(lbu_wait_wc(sink->rcq, wc, nrecv));
	for (i = 0; i < nrecv; i++)
		if (!flushed_recv(&wc[i], 900 + (uint64_t)i))
			wc_fail("sink's receive not flushed in order", &wc[i]);
	LBU_OK(lbu_wait_disconnected(w));
	LBU_OK(lbu_wait_disconnected(sink));
	LBU_OK(lbu_qp_state(w, &wa));
	LBU_OK(lbu_qp_state(sink, &sa));
	if (wa.state == UIW_QPS_RTS || sa.state == UIW_QPS_RTS)
		fail_msg("QPs still in RTS after a Terminate (%s / %s)",
			 uiw_qp_state_str(wa.state), uiw_qp_state_str(sa.state));
	assert_int_equal(wa.state, UIW_QPS_ERROR);
	assert_int_equal(sa.state, UIW_QPS_ERROR);
	check_cause("sink (sent the Terminate)", &sa.term, UIW_TERM_LOCAL,
		    cause);
	check_cause("writer (received the Terminate)", &wa.term,
		    UIW_TERM_REMOTE, cause);
	assert_int_equal(wa.term.layer, sa.term.layer);
	assert_int_equal(wa.term.etype, sa.term.etype);
	assert_int_equal(wa.term.ecode, sa.term.ecode);
	assert_true(strlen(sa.term_msg) > 0);
	assert_true(strlen(wa.term_msg) > 0);
	/* Nothing else completes afterwards. */
	LBU_OK(lbu_cq_empty(w->scq, "writer's send CQ"));
	LBU_OK(lbu_cq_empty(w->rcq, "writer's receive CQ"));
	LBU_OK(lbu_cq_empty(sink->rcq, "sink's receive CQ"));
	/* A dead QP takes no more work. */
	{
		struct lbu_buf *b = w->bufs;

		assert_non_null(b);
		assert_true(lbu_post_send(w, 999, UIW_WR_SEND,
					  UIW_SEND_SIGNALED, b, 0, 4, 0, 0,
					  0) < 0 ||
			    lbu_expect_wc(w->scq, 999, UIW_WC_WR_FLUSH_ERR, -1,
					  NULL) == 0);
	}
}

/* Posts two signalled 16-octet work requests as one chain. */
static void post_pair(struct lbu_side *s, uint64_t id1,
		      enum uiw_wr_opcode op1, struct lbu_buf *b1, size_t off1,
		      uint64_t to1, uint32_t rkey1, uint64_t id2,
		      enum uiw_wr_opcode op2, struct lbu_buf *b2, size_t off2,
		      uint64_t to2, uint32_t rkey2)
{
	struct uiw_send_wr wr[2], *bad = NULL;
	struct uiw_sge sge[2];

	memset(wr, 0, sizeof(wr));
	sge[0].addr = (uint64_t)(uintptr_t)(b1->mem + off1);
	sge[0].length = 16;
	sge[0].lkey = b1->mr->lkey;
	sge[1].addr = (uint64_t)(uintptr_t)(b2->mem + off2);
	sge[1].length = 16;
	sge[1].lkey = b2->mr->lkey;
	wr[0].wr_id = id1;
	wr[0].opcode = op1;
	wr[0].wr.rdma.remote_addr = to1;
	wr[0].wr.rdma.rkey = rkey1;
	wr[0].next = &wr[1];
	wr[1].wr_id = id2;
	wr[1].opcode = op2;
	wr[1].wr.rdma.remote_addr = to2;
	wr[1].wr.rdma.rkey = rkey2;
	wr[0].sg_list = &sge[0];
	wr[1].sg_list = &sge[1];
	wr[0].num_sge = wr[1].num_sge = 1;
	wr[0].send_flags = wr[1].send_flags = UIW_SEND_SIGNALED;
	LBU_OK(uiw_post_send(s->qp, wr, &bad));
}

/*
 * w writes 16 octets to (to, rkey) on sink, which must refuse it, then
 * reads 16 valid octets (which cannot succeed: the sink processes in
 * order and stops at the Write).  `readable` is a sink buffer with remote
 * read access.
 */
static void check_write_refused(struct lbu_side *w, struct lbu_side *sink,
				uint64_t to, uint32_t rkey,
				struct lbu_buf *readable,
				int (*cause)(const struct uiw_term_cause *))
{
	struct lbu_buf *wb, *sb;
	int i;

	wb = lbu_buf_alloc(w, 4096, UIW_ACCESS_LOCAL_WRITE);
	LBU_NN(wb);
	sb = lbu_buf_alloc(sink, 4096, UIW_ACCESS_LOCAL_WRITE);
	LBU_NN(sb);
	for (i = 0; i < 3; i++) {
		LBU_OK(lbu_post_recv(w, 900 + i, wb, 64 * i, 64));
		LBU_OK(lbu_post_recv(sink, 900 + i, sb, 64 * i, 64));
	}
	lbu_fill(wb->mem + 1024, 16, 77);
	/* One chain, so that the Read is posted before the Terminate
	 * can arrive. */
	post_pair(w, 950, UIW_WR_RDMA_WRITE, wb, 1024, to, rkey,
		  951, UIW_WR_RDMA_READ, wb, 2048, lbu_to(readable, 0),
		  readable->mr->rkey);
	check_stream_ended(w, sink, 950, 2, 1, 3, cause);
}

/* ------------------------------------------------------------------ */
/* Every operation x markers x CRC x size                             */

static int is_send(enum op op)
{
	return op == OP_SEND || op == OP_SEND_SE || op == OP_SEND_INV ||
	       op == OP_SEND_SE_INV;
}

static void one_transfer(struct ctx *x, struct lbu_buf *cb,
			 struct lbu_buf *sb, size_t len, unsigned iter)
{
	struct lbu_pair *p = &x->p;
	enum op op = x->c->op;
	size_t coff = iter % 8, soff = (iter * 3) % 8;
	uint32_t seed = 1000 + iter;
	uint32_t inv = 0;
	struct lbu_buf *victim = NULL;
	struct uiw_wc wc;
	char what[96];
	unsigned flags = UIW_SEND_SIGNALED;
	enum uiw_wr_opcode wop = UIW_WR_SEND;

	snprintf(what, sizeof(what), "%zu-octet message %u", len, iter);
	if (op == OP_SEND_SE || op == OP_SEND_SE_INV)
		flags |= UIW_SEND_SOLICITED;
	if (op == OP_SEND_INV || op == OP_SEND_SE_INV) {
		wop = UIW_WR_SEND_WITH_INV;
		victim = lbu_buf_alloc(&p->srv, 4096, ACC_ALL);
		LBU_NN(victim);
		inv = victim->mr->rkey;
	}

	if (is_send(op)) {
		memset(sb->mem, CANARY, soff + len + SLACK);
		LBU_OK(lbu_post_recv(&p->srv, 100 + iter, sb, soff,
				     len + SLACK));
		lbu_fill(cb->mem + coff, len, seed);
		LBU_OK(lbu_post_send(&p->cli, 200 + iter, wop, flags, cb, coff,
				     len, 0, 0, inv));
		LBU_OK(lbu_expect_wc(p->cli.scq, 200 + iter, UIW_WC_SUCCESS,
				     UIW_WC_SEND, NULL));
		LBU_OK(lbu_expect_wc(p->srv.rcq, 100 + iter, UIW_WC_SUCCESS,
				     UIW_WC_RECV, &wc));
		if (wc.byte_len != len)
			wc_fail(what, &wc);
		if (!!(wc.flags & UIW_WC_F_SOLICITED) !=
		    !!(flags & UIW_SEND_SOLICITED))
			wc_fail("solicited flag wrong", &wc);
		if (!!(wc.flags & UIW_WC_F_WITH_INV) != !!inv ||
		    (inv && wc.invalidated_stag != inv))
			wc_fail("invalidate flag or STag wrong", &wc);
		if (wc.qp != p->srv.qp || wc.qp_num != p->srv.attr.qp_num)
			wc_fail("completion names the wrong QP", &wc);
		LBU_OK(lbu_verify_byte(sb->mem, soff, CANARY, what));
		LBU_OK(lbu_verify(sb->mem + soff, len, seed, what));
		LBU_OK(lbu_verify_byte(sb->mem + soff + len, SLACK, CANARY,
				       what));
		if (victim) {
			/* The invalidated STag can be deregistered. */
			LBU_OK(lbu_buf_free(&p->srv, victim));
		}
	} else if (op == OP_WRITE) {
		memset(sb->mem, CANARY, soff + len + SLACK);
		lbu_fill(cb->mem + coff, len, seed);
		LBU_OK(lbu_post_recv(&p->srv, 100 + iter, sb, BIG + SLACK, 16));
		LBU_OK(lbu_post_send(&p->cli, 200 + iter, UIW_WR_RDMA_WRITE,
				     UIW_SEND_SIGNALED, cb, coff, len,
				     lbu_to(sb, soff), sb->mr->rkey, 0));
		/* RFC 5040 §5.5: the Send's delivery means the Write before
		 * it has been placed. */
		LBU_OK(lbu_post_send(&p->cli, 300 + iter, UIW_WR_SEND,
				     UIW_SEND_SIGNALED, NULL, 0, 0, 0, 0, 0));
		LBU_OK(lbu_expect_wc(p->cli.scq, 200 + iter, UIW_WC_SUCCESS,
				     UIW_WC_RDMA_WRITE, &wc));
		if (wc.byte_len != len && wc.byte_len != 0)
			wc_fail("Write byte_len", &wc);
		LBU_OK(lbu_expect_wc(p->cli.scq, 300 + iter, UIW_WC_SUCCESS,
				     UIW_WC_SEND, NULL));
		LBU_OK(lbu_expect_wc(p->srv.rcq, 100 + iter, UIW_WC_SUCCESS,
				     UIW_WC_RECV, &wc));
		if (wc.byte_len != 0)
			wc_fail("fence Send length", &wc);
		LBU_OK(lbu_verify_byte(sb->mem, soff, CANARY, what));
		LBU_OK(lbu_verify(sb->mem + soff, len, seed, what));
		LBU_OK(lbu_verify_byte(sb->mem + soff + len, SLACK, CANARY,
				       what));
	} else {
		memset(cb->mem, CANARY, coff + len + SLACK);
		lbu_fill(sb->mem + soff, len, seed);
		LBU_OK(lbu_post_send(&p->cli, 200 + iter, UIW_WR_RDMA_READ,
				     UIW_SEND_SIGNALED, cb, coff, len,
				     lbu_to(sb, soff), sb->mr->rkey, 0));
		LBU_OK(lbu_expect_wc(p->cli.scq, 200 + iter, UIW_WC_SUCCESS,
				     UIW_WC_RDMA_READ, &wc));
		if (wc.byte_len != len)
			wc_fail("Read byte_len", &wc);
		LBU_OK(lbu_verify_byte(cb->mem, coff, CANARY, what));
		LBU_OK(lbu_verify(cb->mem + coff, len, seed, what));
		LBU_OK(lbu_verify_byte(cb->mem + coff + len, SLACK, CANARY,
				       what));
	}
}

static void test_op(void **state)
{
	struct ctx *x = *state;
	const struct op_case *c = x->c;
	struct lbu_opts o;
	struct lbu_buf *cb, *sb;
	struct uiw_device_attr da;
	size_t max = c->big ? BIG : 65537;
	unsigned i, iter = 0;

	lbu_opts_init(&o);
	o.crc = c->crc ? UIW_OPT_ON : UIW_OPT_OFF;
	o.cli_markers = c->markers ? UIW_OPT_ON : UIW_OPT_OFF;
	o.srv_markers = o.cli_markers;
	connect_opts(x, &o);
	if (c->big) {
		LBU_OK(uiw_device_query(x->p.cli.dev, &da));
		assert_true(da.max_msg_size >= BIG);
	}
	cb = lbu_buf_alloc(&x->p.cli, max + 8 + SLACK, ACC_ALL);
	LBU_NN(cb);
	sb = lbu_buf_alloc(&x->p.srv, BIG + SLACK + 16, ACC_ALL);
	LBU_NN(sb);
	for (i = 0; i < NSIZES; i++)
		one_transfer(x, cb, sb, sizes[i], iter++);
	if (c->big)
		one_transfer(x, cb, sb, BIG, iter++);
	/* Messages of every size back to back on the same stream. */
	for (i = 0; i < NSIZES; i++)
		one_transfer(x, cb, sb, sizes[NSIZES - 1 - i], iter++);

	if (c->op == OP_SEND_INV || c->op == OP_SEND_SE_INV) {
		/* RFC 5040 §5.3: after a Send with Invalidate the STag is
		 * invalid, so a Write to it must be refused. */
		struct lbu_buf *victim, *rd;
		uint32_t stag;

		victim = lbu_buf_alloc(&x->p.srv, 4096, ACC_ALL);
		LBU_NN(victim);
		memset(victim->mem, CANARY, 4096);
		stag = victim->mr->rkey;
		LBU_OK(lbu_post_recv(&x->p.srv, 700, sb, 0, 64));
		LBU_OK(lbu_post_send(&x->p.cli, 701, UIW_WR_SEND_WITH_INV,
				     UIW_SEND_SIGNALED, cb, 0, 8, 0, 0, stag));
		LBU_OK(lbu_expect_wc(x->p.cli.scq, 701, UIW_WC_SUCCESS,
				     UIW_WC_SEND, NULL));
		LBU_OK(lbu_expect_wc(x->p.srv.rcq, 700, UIW_WC_SUCCESS,
				     UIW_WC_RECV, NULL));
		rd = lbu_buf_alloc(&x->p.srv, 4096, ACC_ALL);
		LBU_NN(rd);
		check_write_refused(&x->p.cli, &x->p.srv, lbu_to(victim, 0),
				    stag, rd, cause_refused_stag);
		LBU_OK(lbu_verify_byte(victim->mem, 4096, CANARY,
				       "invalidated region"));
	}
}

#define OPCASES(op, big)						\
	{ op, 0, 0, big }, { op, 0, 1, big }, { op, 1, 0, big },	\
	{ op, 1, 1, 1 }

static const struct op_case op_cases[] = {
	OPCASES(OP_SEND, 0),
	OPCASES(OP_SEND_SE, 0),
	OPCASES(OP_SEND_INV, 0),
	OPCASES(OP_SEND_SE_INV, 0),
	OPCASES(OP_WRITE, 1),
	OPCASES(OP_READ, 1),
};
#define NOPCASES (sizeof(op_cases) / sizeof(op_cases[0]))

static const char *const op_names[] = {
	"send", "send_se", "send_inv", "send_se_inv", "rdma_write",
	"rdma_read",
};

/* ------------------------------------------------------------------ */
/* Markers in one direction only                                      */

static void markers_one_way(struct ctx *x, int cli_asks)
{
	struct lbu_opts o;
	struct lbu_pair *p = &x->p;
	struct lbu_buf *cb, *sb;
	const size_t len = 200000;  /* several FPDUs, many marker slots */

	lbu_opts_init(&o);
	o.crc = UIW_OPT_ON;
	o.cli_markers = cli_asks ? UIW_OPT_ON : UIW_OPT_OFF;
	o.srv_markers = cli_asks ? UIW_OPT_OFF : UIW_OPT_ON;
	connect_opts(x, &o);
	cb = lbu_buf_alloc(&p->cli, 2 * len, ACC_ALL);
	LBU_NN(cb);
	sb = lbu_buf_alloc(&p->srv, 2 * len, ACC_ALL);
	LBU_NN(sb);

	/* client -> server Send */
	lbu_fill(cb->mem, len, 1);
	LBU_OK(lbu_post_recv(&p->srv, 1, sb, 0, len));
	LBU_OK(lbu_post_send(&p->cli, 2, UIW_WR_SEND, UIW_SEND_SIGNALED, cb,
			     0, len, 0, 0, 0));
	LBU_OK(lbu_expect_wc(p->cli.scq, 2, UIW_WC_SUCCESS, UIW_WC_SEND,
			     NULL));
	LBU_OK(lbu_expect_wc(p->srv.rcq, 1, UIW_WC_SUCCESS, UIW_WC_RECV,
			     NULL));
	LBU_OK(lbu_verify(sb->mem, len, 1, "client to server Send"));
	/* server -> client Send */
	lbu_fill(sb->mem + len, len - 3, 2);
	LBU_OK(lbu_post_recv(&p->cli, 3, cb, len, len));
	LBU_OK(lbu_post_send(&p->srv, 4, UIW_WR_SEND, UIW_SEND_SIGNALED, sb,
			     len, len - 3, 0, 0, 0));
	LBU_OK(lbu_expect_wc(p->srv.scq, 4, UIW_WC_SUCCESS, UIW_WC_SEND,
			     NULL));
	LBU_OK(lbu_expect_wc(p->cli.rcq, 3, UIW_WC_SUCCESS, UIW_WC_RECV,
			     NULL));
	LBU_OK(lbu_verify(cb->mem + len, len - 3, 2, "server to client Send"));
	/* client reads from the server: Read Responses flow server ->
	 * client, the Request client -> server. */
	memset(cb->mem, 0, len);
	lbu_fill(sb->mem, len, 3);
	LBU_OK(lbu_post_send(&p->cli, 5, UIW_WR_RDMA_READ, UIW_SEND_SIGNALED,
			     cb, 0, len, lbu_to(sb, 0), sb->mr->rkey, 0));
	LBU_OK(lbu_expect_wc(p->cli.scq, 5, UIW_WC_SUCCESS, UIW_WC_RDMA_READ,
			     NULL));
	LBU_OK(lbu_verify(cb->mem, len, 3, "Read"));
	/* server writes to the client, then a Send */
	lbu_fill(sb->mem, len, 4);
	LBU_OK(lbu_post_recv(&p->cli, 6, cb, len, 16));
	LBU_OK(lbu_post_send(&p->srv, 7, UIW_WR_RDMA_WRITE, UIW_SEND_SIGNALED,
			     sb, 0, len, lbu_to(cb, 0), cb->mr->rkey, 0));
	LBU_OK(lbu_post_send(&p->srv, 8, UIW_WR_SEND, UIW_SEND_SIGNALED, sb,
			     0, 16, 0, 0, 0));
	LBU_OK(lbu_expect_wc(p->srv.scq, 7, UIW_WC_SUCCESS, UIW_WC_RDMA_WRITE,
			     NULL));
	LBU_OK(lbu_expect_wc(p->srv.scq, 8, UIW_WC_SUCCESS, UIW_WC_SEND,
			     NULL));
	LBU_OK(lbu_expect_wc(p->cli.rcq, 6, UIW_WC_SUCCESS, UIW_WC_RECV,
			     NULL));
	LBU_OK(lbu_verify(cb->mem, len, 4, "Write"));
}

static void test_markers_client_only(void **state)
{
	markers_one_way(*state, 1);
}

static void test_markers_server_only(void **state)
{
	markers_one_way(*state, 0);
}

/* ------------------------------------------------------------------ */
/* RFC 5044 §7.1.2: the responder's first FPDU waits for the initiator's */

static void test_responder_sends_first(void **state)
{
	struct ctx *x = *state;
	struct lbu_pair *p = &x->p;
	struct lbu_opts o;
	struct lbu_buf *cb, *sb;

	lbu_opts_init(&o);
	o.skip_first_send = 1;
	connect_opts(x, &o);
	cb = lbu_buf_alloc(&p->cli, 4096, ACC_ALL);
	LBU_NN(cb);
	sb = lbu_buf_alloc(&p->srv, 4096, ACC_ALL);
	LBU_NN(sb);
	LBU_OK(lbu_post_recv(&p->srv, 1, sb, 2048, 1024));
	LBU_OK(lbu_post_recv(&p->cli, 2, cb, 2048, 1024));
	/* The server posts first; its Send (and an RDMA Write) must go out
	 * once the client's first FPDU has arrived, not be lost. */
	lbu_fill(sb->mem, 100, 31);
	LBU_OK(lbu_post_send(&p->srv, 3, UIW_WR_RDMA_WRITE, UIW_SEND_SIGNALED,
			     sb, 0, 100, lbu_to(cb, 0), cb->mr->rkey, 0));
	LBU_OK(lbu_post_send(&p->srv, 4, UIW_WR_SEND, UIW_SEND_SIGNALED, sb, 0,
			     100, 0, 0, 0));
	lbu_fill(cb->mem + 1024, 50, 32);
	LBU_OK(lbu_post_send(&p->cli, 5, UIW_WR_SEND, UIW_SEND_SIGNALED, cb,
			     1024, 50, 0, 0, 0));
	LBU_OK(lbu_expect_wc(p->srv.rcq, 1, UIW_WC_SUCCESS, UIW_WC_RECV, NULL));
	LBU_OK(lbu_verify(sb->mem + 2048, 50, 32, "client's first Send"));
	LBU_OK(lbu_expect_wc(p->cli.rcq, 2, UIW_WC_SUCCESS, UIW_WC_RECV, NULL));
	LBU_OK(lbu_verify(cb->mem + 2048, 100, 31, "server's Send"));
	LBU_OK(lbu_verify(cb->mem, 100, 31, "server's Write"));
	LBU_OK(lbu_expect_wc(p->srv.scq, 3, UIW_WC_SUCCESS, UIW_WC_RDMA_WRITE,
			     NULL));
	LBU_OK(lbu_expect_wc(p->srv.scq, 4, UIW_WC_SUCCESS, UIW_WC_SEND, NULL));
	LBU_OK(lbu_expect_wc(p->cli.scq, 5, UIW_WC_SUCCESS, UIW_WC_SEND, NULL));
}

/* ------------------------------------------------------------------ */
/* Scatter/gather lists                                               */

static void test_sgl(void **state)
{
	struct ctx *x = *state;
	struct lbu_pair *p = &x->p;
	struct lbu_buf *g[3], *r[2], *sink;
	static const uint32_t glen[3] = { 1000, 3000, 5000 };
	static const uint32_t rlen[2] = { 4096, 8192 };
	struct uiw_sge gs[3], rs[2];
	struct uiw_send_wr swr, *sbad = NULL;
	struct uiw_recv_wr rwr, *rbad = NULL;
	struct uiw_wc wc;
	uint32_t total = 0;
	int i;

	connect_default(x);
	for (i = 0; i < 3; i++) {
		g[i] = lbu_buf_alloc(&p->cli, glen[i] + 8, ACC_ALL);
		LBU_NN(g[i]);
		/* odd offsets so that the pieces are not word aligned */
		lbu_fill_at(g[i]->mem + i + 1, glen[i], 42, total);
		gs[i].addr = (uint64_t)(uintptr_t)(g[i]->mem + i + 1);
		gs[i].length = glen[i];
		gs[i].lkey = g[i]->mr->lkey;
		total += glen[i];
	}
	for (i = 0; i < 2; i++) {
		r[i] = lbu_buf_alloc(&p->srv, rlen[i] + SLACK, ACC_ALL);
		LBU_NN(r[i]);
		memset(r[i]->mem, CANARY, rlen[i] + SLACK);
		rs[i].addr = (uint64_t)(uintptr_t)r[i]->mem;
		rs[i].length = rlen[i];
		rs[i].lkey = r[i]->mr->lkey;
	}

	/* A Send gathered from 3 SGEs into a receive of 2 SGEs. */
	memset(&rwr, 0, sizeof(rwr));
	rwr.wr_id = 1;
	rwr.sg_list = rs;
	rwr.num_sge = 2;
	LBU_OK(uiw_post_recv(p->srv.qp, &rwr, &rbad));
	memset(&swr, 0, sizeof(swr));
	swr.wr_id = 2;
	swr.opcode = UIW_WR_SEND;
	swr.send_flags = UIW_SEND_SIGNALED;
	swr.sg_list = gs;
	swr.num_sge = 3;
	LBU_OK(uiw_post_send(p->cli.qp, &swr, &sbad));
	LBU_OK(lbu_expect_wc(p->cli.scq, 2, UIW_WC_SUCCESS, UIW_WC_SEND, NULL));
	LBU_OK(lbu_expect_wc(p->srv.rcq, 1, UIW_WC_SUCCESS, UIW_WC_RECV, &wc));
	assert_int_equal(wc.byte_len, total);
	LBU_OK(lbu_verify_at(r[0]->mem, rlen[0], 42, 0, "first receive SGE"));
	LBU_OK(lbu_verify_at(r[1]->mem, total - rlen[0], 42, rlen[0],
			     "second receive SGE"));
	LBU_OK(lbu_verify_byte(r[1]->mem + (total - rlen[0]),
			       rlen[1] + SLACK - (total - rlen[0]), CANARY,
			       "after the message"));
	LBU_OK(lbu_verify_byte(r[0]->mem + rlen[0], SLACK, CANARY,
			       "between the receive SGEs"));

	/* An RDMA Write gathered from the same 3 SGEs. */
	sink = lbu_buf_alloc(&p->srv, total + SLACK, ACC_ALL);
	LBU_NN(sink);
	memset(sink->mem, CANARY, total + SLACK);
	memset(&swr, 0, sizeof(swr));
	swr.wr_id = 3;
	swr.opcode = UIW_WR_RDMA_WRITE;
	swr.send_flags = UIW_SEND_SIGNALED;
	swr.sg_list = gs;
	swr.num_sge = 3;
	swr.wr.rdma.remote_addr = lbu_to(sink, 0);
	swr.wr.rdma.rkey = sink->mr->rkey;
	LBU_OK(uiw_post_send(p->cli.qp, &swr, &sbad));
	LBU_OK(lbu_post_recv(&p->srv, 4, r[0], 0, 64));
	LBU_OK(lbu_post_send(&p->cli, 5, UIW_WR_SEND, UIW_SEND_SIGNALED, NULL,
			     0, 0, 0, 0, 0));
	LBU_OK(lbu_expect_wc(p->cli.scq, 3, UIW_WC_SUCCESS, UIW_WC_RDMA_WRITE,
			     NULL));
	LBU_OK(lbu_expect_wc(p->cli.scq, 5, UIW_WC_SUCCESS, UIW_WC_SEND, NULL));
	LBU_OK(lbu_expect_wc(p->srv.rcq, 4, UIW_WC_SUCCESS, UIW_WC_RECV, NULL));
	LBU_OK(lbu_verify(sink->mem, total, 42, "gathered Write"));
	LBU_OK(lbu_verify_byte(sink->mem + total, SLACK, CANARY,
			       "after the Write"));

	/* The client reads it back, scattered over its 3 SGEs.  A device
	 * may refuse a Read sink of several SGEs (siw does), but then at
	 * post time with EINVAL and a reason; if it takes it, the data
	 * must land right. */
	for (i = 0; i < 3; i++)
		memset(g[i]->mem, 0, glen[i] + 8);
	memset(&swr, 0, sizeof(swr));
	swr.wr_id = 6;
	swr.opcode = UIW_WR_RDMA_READ;
	swr.send_flags = UIW_SEND_SIGNALED;
	swr.sg_list = gs;
	swr.num_sge = 3;
	swr.wr.rdma.remote_addr = lbu_to(sink, 0);
	swr.wr.rdma.rkey = sink->mr->rkey;
	sbad = NULL;
	i = uiw_post_send(p->cli.qp, &swr, &sbad);
	if (i < 0) {
		const char *why = uiw_last_error();

		assert_int_equal(i, -EINVAL);
		assert_ptr_equal(sbad, &swr);
		assert_non_null(why);
		assert_true(strlen(why) > 0);
		print_message("multi-SGE Read sink refused: %s\n", why);
	} else {
		uint32_t base = 0;

		LBU_OK(lbu_expect_wc(p->cli.scq, 6, UIW_WC_SUCCESS,
				     UIW_WC_RDMA_READ, &wc));
		assert_int_equal(wc.byte_len, total);
		for (i = 0; i < 3; i++) {
			LBU_OK(lbu_verify_at(g[i]->mem + i + 1, glen[i], 42,
					     base, "scattered Read"));
			LBU_OK(lbu_verify_byte(g[i]->mem, i + 1, 0,
					       "before a Read SGE"));
			base += glen[i];
		}
	}
	/* The stream is still healthy. */
	LBU_OK(lbu_post_recv(&p->srv, 7, r[0], 0, 64));
	LBU_OK(lbu_post_send(&p->cli, 8, UIW_WR_SEND, UIW_SEND_SIGNALED,
			     g[0], 0, 8, 0, 0, 0));
	LBU_OK(lbu_expect_wc(p->cli.scq, 8, UIW_WC_SUCCESS, UIW_WC_SEND, NULL));
	LBU_OK(lbu_expect_wc(p->srv.rcq, 7, UIW_WC_SUCCESS, UIW_WC_RECV, NULL));
}

/* ------------------------------------------------------------------ */
/* Unsignalled work requests                                          */

static void test_unsignalled(void **state)
{
	struct ctx *x = *state;
	struct lbu_pair *p = &x->p;
	struct lbu_opts o;
	struct lbu_buf *cb, *sb;
	struct uiw_send_wr wr[8], *bad = NULL;
	struct uiw_sge sge[8];
	struct uiw_wc wc[8];
	int round, i;

	lbu_opts_init(&o);
	o.sq_depth = 8;
	o.rq_depth = 8;
	connect_opts(x, &o);
	cb = lbu_buf_alloc(&p->cli, 8 * 64, ACC_ALL);
	LBU_NN(cb);
	sb = lbu_buf_alloc(&p->srv, 8 * 64, ACC_ALL);
	LBU_NN(sb);

	/* 8 rounds of a full send queue where only the last WR is
	 * signalled: the send queue must be reclaimed through it. */
	for (round = 0; round < 8; round++) {
		for (i = 0; i < 8; i++) {
			LBU_OK(lbu_post_recv(&p->srv, 100 * round + i, sb,
					     64 * i, 64));
			lbu_fill(cb->mem + 64 * i, 64, 100 * round + i);
			sge[i].addr = (uint64_t)(uintptr_t)(cb->mem + 64 * i);
			sge[i].length = 64;
			sge[i].lkey = cb->mr->lkey;
			memset(&wr[i], 0, sizeof(wr[i]));
			wr[i].wr_id = 100 * round + i;
			wr[i].opcode = UIW_WR_SEND;
			wr[i].sg_list = &sge[i];
			wr[i].num_sge = 1;
			wr[i].send_flags = i == 7 ? UIW_SEND_SIGNALED : 0;
			wr[i].next = i < 7 ? &wr[i + 1] : NULL;
		}
		LBU_OK(uiw_post_send(p->cli.qp, wr, &bad));
		LBU_OK(lbu_expect_wc(p->cli.scq, 100 * round + 7,
				     UIW_WC_SUCCESS, UIW_WC_SEND, NULL));
		LBU_OK(lbu_wait_wc(p->srv.rcq, wc, 8));
		for (i = 0; i < 8; i++) {
			char what[64];

			if (wc[i].wr_id != (uint64_t)(100 * round + i) ||
			    wc[i].status != UIW_WC_SUCCESS ||
			    wc[i].byte_len != 64)
				wc_fail("receive out of order or failed",
					&wc[i]);
			snprintf(what, sizeof(what), "round %d message %d",
				 round, i);
			LBU_OK(lbu_verify(sb->mem + 64 * i, 64,
					  100 * round + i, what));
		}
		/* Unsignalled WRs produce nothing, even later. */
		LBU_OK(lbu_cq_empty(p->cli.scq, "sender after a round"));
	}
}

static void test_sig_all(void **state)
{
	struct ctx *x = *state;
	struct lbu_pair *p = &x->p;
	struct lbu_opts o;
	struct lbu_buf *cb, *sb;
	int i;

	lbu_opts_init(&o);
	o.sq_sig_all = 1;
	connect_opts(x, &o);
	cb = lbu_buf_alloc(&p->cli, 4096, ACC_ALL);
	LBU_NN(cb);
	sb = lbu_buf_alloc(&p->srv, 4096, ACC_ALL);
	LBU_NN(sb);
	for (i = 0; i < 4; i++)
		LBU_OK(lbu_post_recv(&p->srv, i, sb, 64 * i, 64));
	/* No SIGNALED flag: sq_sig_all signals them anyway. */
	for (i = 0; i < 4; i++)
		LBU_OK(lbu_post_send(&p->cli, 10 + i, UIW_WR_SEND, 0, cb, 0, 8,
				     0, 0, 0));
	for (i = 0; i < 4; i++)
		LBU_OK(lbu_expect_wc(p->cli.scq, 10 + i, UIW_WC_SUCCESS,
				     UIW_WC_SEND, NULL));
	for (i = 0; i < 4; i++)
		LBU_OK(lbu_expect_wc(p->srv.rcq, i, UIW_WC_SUCCESS,
				     UIW_WC_RECV, NULL));
}

/* Mixed operations, some signalled: completions only for the signalled
 * ones, in the order posted (RFC 5040 §5.5). */
static void test_mixed_order(void **state)
{
	struct ctx *x = *state;
	struct lbu_pair *p = &x->p;
	struct lbu_buf *cb, *sb;
	static const struct {
		enum uiw_wr_opcode op;
		int sig;
		int wc_op;
	} seq[] = {
		{ UIW_WR_RDMA_WRITE, 0, UIW_WC_RDMA_WRITE },
		{ UIW_WR_SEND, 1, UIW_WC_SEND },
		{ UIW_WR_RDMA_READ, 0, UIW_WC_RDMA_READ },
		{ UIW_WR_RDMA_WRITE, 1, UIW_WC_RDMA_WRITE },
		{ UIW_WR_SEND, 0, UIW_WC_SEND },
		{ UIW_WR_RDMA_READ, 1, UIW_WC_RDMA_READ },
		{ UIW_WR_RDMA_READ, 0, UIW_WC_RDMA_READ },
		{ UIW_WR_SEND, 1, UIW_WC_SEND },
	};
	const size_t len = 20000;
	unsigned i, nsend = 0;

	connect_default(x);
	cb = lbu_buf_alloc(&p->cli, 8 * len, ACC_ALL);
	LBU_NN(cb);
	sb = lbu_buf_alloc(&p->srv, 8 * len, ACC_ALL);
	LBU_NN(sb);
	for (i = 0; i < 8; i++) {
		if (seq[i].op == UIW_WR_RDMA_READ)
			lbu_fill(sb->mem + i * len, len, 50 + i);
		else
			lbu_fill(cb->mem + i * len, len, 50 + i);
	}
	for (i = 0; i < 8; i++) {
		if (seq[i].op == UIW_WR_SEND)
			LBU_OK(lbu_post_recv(&p->srv, i, sb, i * len, len));
		LBU_OK(lbu_post_send(&p->cli, i, seq[i].op,
				     seq[i].sig ? UIW_SEND_SIGNALED : 0, cb,
				     i * len, len, lbu_to(sb, i * len),
				     sb->mr->rkey, 0));
	}
	for (i = 0; i < 8; i++) {
		if (!seq[i].sig)
			continue;
		LBU_OK(lbu_expect_wc(p->cli.scq, i, UIW_WC_SUCCESS,
				     seq[i].wc_op, NULL));
	}
	LBU_OK(lbu_cq_empty(p->cli.scq, "after the signalled WRs"));
	for (i = 0; i < 8; i++)
		if (seq[i].op == UIW_WR_SEND) {
			LBU_OK(lbu_expect_wc(p->srv.rcq, i, UIW_WC_SUCCESS,
					     UIW_WC_RECV, NULL));
			nsend++;
		}
	assert_int_equal(nsend, 3);
	/* The last Send was delivered, so every Write before it was
	 * placed; the last Read completed, so every Read before it too. */
	for (i = 0; i < 8; i++) {
		char what[48];

		snprintf(what, sizeof(what), "WR %u", i);
		if (seq[i].op == UIW_WR_RDMA_READ)
			LBU_OK(lbu_verify(cb->mem + i * len, len, 50 + i, what));
		else
			LBU_OK(lbu_verify(sb->mem + i * len, len, 50 + i, what));
	}
}

/* ------------------------------------------------------------------ */
/* RDMA Reads and ORD                                                 */

static void post_reads(struct lbu_pair *p, struct lbu_buf *cb,
		       struct lbu_buf *sb, unsigned first, unsigned n,
		       size_t slot)
{
	struct uiw_send_wr *wr = calloc(n, sizeof(*wr));
	struct uiw_sge *sge = calloc(n, sizeof(*sge));
	struct uiw_send_wr *bad = NULL;
	unsigned i;

	assert_non_null(wr);
	assert_non_null(sge);
	for (i = 0; i < n; i++) {
		unsigned k = first + i;
		size_t len = slot - (k % 7) * 1000;

		if (k % 5 == 3)
			len = k % 2;    /* zero- and one-octet Reads too */
		lbu_fill(sb->mem + i * slot, len, 3000 + k);
		memset(cb->mem + i * slot, 0, slot);
		sge[i].addr = (uint64_t)(uintptr_t)(cb->mem + i * slot);
		sge[i].length = (uint32_t)len;
		sge[i].lkey = cb->mr->lkey;
		wr[i].wr_id = k;
		wr[i].opcode = UIW_WR_RDMA_READ;
		wr[i].send_flags = UIW_SEND_SIGNALED;
		wr[i].sg_list = len ? &sge[i] : NULL;
		wr[i].num_sge = len ? 1 : 0;
		wr[i].wr.rdma.remote_addr = lbu_to(sb, i * slot);
		wr[i].wr.rdma.rkey = sb->mr->rkey;
		wr[i].next = i + 1 < n ? &wr[i + 1] : NULL;
	}
	LBU_OK(uiw_post_send(p->cli.qp, wr, &bad));
	for (i = 0; i < n; i++) {
		unsigned k = first + i;
		size_t len = slot - (k % 7) * 1000;
		struct uiw_wc wc;
		char what[48];

		if (k % 5 == 3)
			len = k % 2;
		LBU_OK(lbu_expect_wc(p->cli.scq, k, UIW_WC_SUCCESS,
				     UIW_WC_RDMA_READ, &wc));
		if (wc.byte_len != len)
			wc_fail("Read byte_len", &wc);
		snprintf(what, sizeof(what), "Read %u", k);
		LBU_OK(lbu_verify(cb->mem + i * slot, len, 3000 + k, what));
		LBU_OK(lbu_verify_byte(cb->mem + i * slot + len, slot - len, 0,
				       what));
	}
	free(wr);
	free(sge);
}

static void test_reads_ord(void **state)
{
	struct ctx *x = *state;
	struct lbu_pair *p = &x->p;
	struct uiw_device *dev;
	struct uiw_device_attr da;
	struct lbu_opts o;
	struct lbu_buf *cb, *sb;
	const size_t slot = 65536;
	uint32_t ord;

	dev = uiw_device_open(NULL);
	LBU_NN(dev);
	LBU_OK(uiw_device_query(dev, &da));
	LBU_OK(uiw_device_close(dev));
	assert_true(da.max_ord >= 1 && da.max_ird >= 1);
	ord = da.max_ord < 8 ? da.max_ord : 8;
	if (da.max_ird < ord)
		ord = da.max_ird;

	lbu_opts_init(&o);
	o.cli_ord = o.srv_ird = ord;
	o.cli_ird = o.srv_ord = ord;
	o.sq_depth = 4 * ord + 8;
	connect_opts(x, &o);
	assert_int_equal(p->cli.attr.ord, ord);
	assert_int_equal(p->srv.attr.ird, ord);
	cb = lbu_buf_alloc(&p->cli, (3 * ord + 1) * slot, ACC_ALL);
	LBU_NN(cb);
	sb = lbu_buf_alloc(&p->srv, (3 * ord + 1) * slot, ACC_ALL);
	LBU_NN(sb);
	/* Exactly ORD outstanding at once. */
	post_reads(p, cb, sb, 0, ord, slot);
	/* More than ORD at once: the rest wait their turn. */
	post_reads(p, cb, sb, 100, 3 * ord + 1, slot);
	/* And the connection still works both ways. */
	post_reads(p, cb, sb, 200, 1, slot);
}

/* ------------------------------------------------------------------ */
/* Local invalidate                                                   */

static void test_local_inv(void **state)
{
	struct ctx *x = *state;
	struct lbu_pair *p = &x->p;
	struct lbu_buf *target, *sb, *rd;
	struct uiw_wc wc;

	connect_default(x);
	target = lbu_buf_alloc(&p->cli, 4096, ACC_ALL);
	LBU_NN(target);
	sb = lbu_buf_alloc(&p->srv, 8192, ACC_ALL);
	LBU_NN(sb);
	rd = lbu_buf_alloc(&p->cli, 4096, ACC_ALL);
	LBU_NN(rd);
	/* The server may write to the region... */
	lbu_fill(sb->mem, 4096, 9);
	LBU_OK(lbu_post_recv(&p->cli, 1, rd, 0, 64));
	LBU_OK(lbu_post_send(&p->srv, 2, UIW_WR_RDMA_WRITE, UIW_SEND_SIGNALED,
			     sb, 0, 4096, lbu_to(target, 0),
			     target->mr->rkey, 0));
	LBU_OK(lbu_post_send(&p->srv, 3, UIW_WR_SEND, UIW_SEND_SIGNALED, sb, 0,
			     4, 0, 0, 0));
	LBU_OK(lbu_expect_wc(p->srv.scq, 2, UIW_WC_SUCCESS, UIW_WC_RDMA_WRITE,
			     NULL));
	LBU_OK(lbu_expect_wc(p->srv.scq, 3, UIW_WC_SUCCESS, UIW_WC_SEND, NULL));
	LBU_OK(lbu_expect_wc(p->cli.rcq, 1, UIW_WC_SUCCESS, UIW_WC_RECV, NULL));
	LBU_OK(lbu_verify(target->mem, 4096, 9, "before invalidation"));
	/* ...until the client invalidates it locally. */
	LBU_OK(lbu_post_send(&p->cli, 4, UIW_WR_LOCAL_INV, UIW_SEND_SIGNALED,
			     NULL, 0, 0, 0, 0, target->mr->lkey));
	LBU_OK(lbu_expect_wc(p->cli.scq, 4, UIW_WC_SUCCESS, UIW_WC_LOCAL_INV,
			     &wc));
	memset(target->mem, CANARY, 4096);
	check_write_refused(&p->srv, &p->cli, lbu_to(target, 0),
			    target->mr->rkey, rd, cause_refused_stag);
	LBU_OK(lbu_verify_byte(target->mem, 4096, CANARY,
			       "invalidated region"));
}

/* ------------------------------------------------------------------ */
/* Errors seen through the API                                        */

static void test_write_no_access(void **state)
{
	struct ctx *x = *state;
	struct lbu_pair *p = &x->p;
	struct lbu_buf *ro, *rd;

	connect_default(x);
	/* Remote read, but no remote write. */
	ro = lbu_buf_alloc(&p->srv, 4096,
			   UIW_ACCESS_LOCAL_WRITE | UIW_ACCESS_REMOTE_READ);
	LBU_NN(ro);
	memset(ro->mem, CANARY, 4096);
	rd = lbu_buf_alloc(&p->srv, 4096, ACC_ALL);
	LBU_NN(rd);
	check_write_refused(&p->cli, &p->srv, lbu_to(ro, 0), ro->mr->rkey, rd,
			    cause_refused_stag);
	LBU_OK(lbu_verify_byte(ro->mem, 4096, CANARY, "read-only region"));
}

static void test_write_bad_stag(void **state)
{
	struct ctx *x = *state;
	struct lbu_pair *p = &x->p;
	struct lbu_buf *t, *rd;

	connect_default(x);
	t = lbu_buf_alloc(&p->srv, 4096, ACC_ALL);
	LBU_NN(t);
	memset(t->mem, CANARY, 4096);
	rd = lbu_buf_alloc(&p->srv, 4096, ACC_ALL);
	LBU_NN(rd);
	/* The right index with a wrong key (RFC 5040 §2.1). */
	check_write_refused(&p->cli, &p->srv, lbu_to(t, 0),
			    t->mr->rkey ^ 0x5a, rd, cause_refused_stag);
	LBU_OK(lbu_verify_byte(t->mem, 4096, CANARY, "target region"));
}

/* ------------------------------------------------------------------ */
/* The Read sink's access (uiw_qp_init_attr.read_sink_access)         */

/* A Read of n octets into sink: the completion, and the data. */
static void read_into(struct lbu_pair *p, struct lbu_buf *src,
		      struct lbu_buf *sink, uint64_t id, size_t n)
{
	memset(sink->mem, 0, n);
	LBU_OK(lbu_post_send(&p->cli, id, UIW_WR_RDMA_READ, UIW_SEND_SIGNALED,
			     sink, 0, n, lbu_to(src, 0), src->mr->rkey, 0));
	LBU_OK(lbu_expect_wc(p->cli.scq, id, UIW_WC_SUCCESS, UIW_WC_RDMA_READ,
			     NULL));
	LBU_OK(lbu_verify(sink->mem, n, 77, "Read sink"));
}

static void test_read_sink_access(void **state)
{
	struct ctx *x = *state;
	struct lbu_pair *p = &x->p;
	struct lbu_buf *src, *lw, *rw, *word;
	struct lbu_opts o;
	struct uiw_wc wc;
	const size_t n = 10000;
	int rc;

	lbu_opts_init(&o);
	o.read_sink_access = UIW_ACCESS_REMOTE_WRITE;
	connect_opts(x, &o);
	src = lbu_buf_alloc(&p->srv, n, ACC_ALL | UIW_ACCESS_REMOTE_ATOMIC);
	lw = lbu_buf_alloc(&p->cli, n, UIW_ACCESS_LOCAL_WRITE);
	rw = lbu_buf_alloc(&p->cli, n, UIW_ACCESS_LOCAL_WRITE |
			   UIW_ACCESS_REMOTE_WRITE);
	word = lbu_buf_alloc(&p->cli, 8, UIW_ACCESS_LOCAL_WRITE);
	LBU_NN(src);
	LBU_NN(lw);
	LBU_NN(rw);
	LBU_NN(word);
	lbu_fill(src->mem, n, 77);

	/* The QP asks for remote write: a sink with local write only is
	 * refused when posted, with a message that says why. */
	rc = lbu_post_send(&p->cli, 1, UIW_WR_RDMA_READ, UIW_SEND_SIGNALED,
			   lw, 0, n, lbu_to(src, 0), src->mr->rkey, 0);
	assert_int_equal(rc, -1);
	if (!strstr(uiw_last_error(), "lacks remote write access"))
		fail_msg("message: %s", uiw_last_error());
	LBU_OK(lbu_cq_empty(p->cli.scq, "after the refused Read"));
	read_into(p, src, rw, 2, n);
	/* An atomic's result buffer is not a Read's sink. */
	LBU_OK(lbu_post_send(&p->cli, 3, UIW_WR_ATOMIC_FETCH_ADD,
			     UIW_SEND_SIGNALED, word, 0, 8, lbu_to(src, 0),
			     src->mr->rkey, 0));
	LBU_OK(lbu_expect_wc(p->cli.scq, 3, UIW_WC_SUCCESS, UIW_WC_FETCH_ADD,
			     &wc));
	LBU_OK(lbu_pair_destroy(p));
	x->connected = 0;

	/* Without the flag the same sink takes the Read. */
	lbu_opts_init(&o);
	connect_opts(x, &o);
	src = lbu_buf_alloc(&p->srv, n, ACC_ALL);
	lw = lbu_buf_alloc(&p->cli, n, UIW_ACCESS_LOCAL_WRITE);
	LBU_NN(src);
	LBU_NN(lw);
	lbu_fill(src->mem, n, 77);
	read_into(p, src, lw, 4, n);
}

static void test_send_too_long(void **state)
{
	struct ctx *x = *state;
	struct lbu_pair *p = &x->p;
	struct lbu_buf *cb, *sb, *rd;
	struct uiw_wc wc[3];
	int i;

	connect_default(x);
	cb = lbu_buf_alloc(&p->cli, 4096, ACC_ALL);
	LBU_NN(cb);
	sb = lbu_buf_alloc(&p->srv, 4096, ACC_ALL);
	LBU_NN(sb);
	rd = lbu_buf_alloc(&p->srv, 4096, ACC_ALL);
	LBU_NN(rd);
	memset(sb->mem, CANARY, 4096);
	/* server: a 100-octet receive first, then two more */
	LBU_OK(lbu_post_recv(&p->srv, 1, sb, 0, 100));
	LBU_OK(lbu_post_recv(&p->srv, 2, sb, 1024, 1024));
	LBU_OK(lbu_post_recv(&p->srv, 3, sb, 2048, 1024));
	for (i = 0; i < 3; i++)
		LBU_OK(lbu_post_recv(&p->cli, 900 + i, cb, 2048 + 64 * i, 64));
	lbu_fill(cb->mem, 200, 5);
	{
		/* One chain: the Read is posted before the Terminate can
		 * arrive. */
		struct uiw_send_wr wr[2], *bad = NULL;
		struct uiw_sge sge[2] = {
			{ (uint64_t)(uintptr_t)cb->mem, 200, cb->mr->lkey },
			{ (uint64_t)(uintptr_t)(cb->mem + 1024), 16,
			  cb->mr->lkey },
		};

		memset(wr, 0, sizeof(wr));
		wr[0].wr_id = 950;
		wr[0].opcode = UIW_WR_SEND;
		wr[0].next = &wr[1];
		wr[1].wr_id = 951;
		wr[1].opcode = UIW_WR_RDMA_READ;
		wr[1].wr.rdma.remote_addr = lbu_to(rd, 0);
		wr[1].wr.rdma.rkey = rd->mr->rkey;
		wr[0].sg_list = &sge[0];
		wr[1].sg_list = &sge[1];
		wr[0].num_sge = wr[1].num_sge = 1;
		wr[0].send_flags = wr[1].send_flags = UIW_SEND_SIGNALED;
		LBU_OK(uiw_post_send(p->cli.qp, wr, &bad));
	}
	/* The receiver: the too-small receive fails with a length error,
	 * the others are flushed. */
	LBU_OK(lbu_wait_wc(p->srv.rcq, wc, 3));
	if (wc[0].wr_id != 1 || wc[0].status != UIW_WC_LOC_LEN_ERR)
		wc_fail("too-small receive", &wc[0]);
	for (i = 1; i < 3; i++)
		if (wc[i].wr_id != (uint64_t)i + 1 ||
		    wc[i].status != UIW_WC_WR_FLUSH_ERR)
			wc_fail("later receive", &wc[i]);
	/* Nothing beyond the 100 octets was written. */
	LBU_OK(lbu_verify_byte(sb->mem + 100, 4096 - 100, CANARY,
			       "beyond the receive buffer"));
	/* The sender: a Terminate, flushed receives, an error. */
	{
		struct lbu_side *w = &p->cli, *sink = &p->srv;
		struct uiw_wc s[2], r[3];
		struct uiw_qp_attr wa, sa;
		int errors = 0;

		LBU_OK(lbu_wait_wc(w->scq, s, 2));
		for (i = 0; i < 2; i++) {
			if (s[i].wr_id != 950 + (uint64_t)i)
				wc_fail("sender's completions out of order",
					&s[i]);
			if (s[i].status == UIW_WC_SUCCESS) {
				if (i == 1)
					wc_fail("Read after the bad Send "
						"succeeded", &s[i]);
				continue;
			}
			errors++;
			if (s[i].term.origin != UIW_TERM_REMOTE ||
			    !cause_too_long(&s[i].term))
				wc_fail("sender's error completion lacks the "
					"cause", &s[i]);
		}
		assert_true(errors > 0);
		LBU_OK(lbu_wait_wc(w->rcq, r, 3));
		for (i = 0; i < 3; i++)
			if (r[i].status != UIW_WC_WR_FLUSH_ERR ||
			    r[i].wr_id != 900 + (uint64_t)i)
				wc_fail("sender's receive", &r[i]);
		LBU_OK(lbu_wait_disconnected(w));
		LBU_OK(lbu_wait_disconnected(sink));
		LBU_OK(lbu_qp_state(w, &wa));
		LBU_OK(lbu_qp_state(sink, &sa));
		assert_int_equal(wa.state, UIW_QPS_ERROR);
		assert_int_equal(sa.state, UIW_QPS_ERROR);
		check_cause("receiver", &sa.term, UIW_TERM_LOCAL,
			    cause_too_long);
		check_cause("sender", &wa.term, UIW_TERM_REMOTE,
			    cause_too_long);
		if (wc[0].term.origin != UIW_TERM_LOCAL ||
		    !cause_too_long(&wc[0].term))
			wc_fail("receiver's length error lacks the cause",
				&wc[0]);
	}
}

/* ------------------------------------------------------------------ */
/* Completion notification                                            */

static void send_one(struct lbu_pair *p, struct lbu_buf *cb, uint64_t id,
		     unsigned flags)
{
	LBU_OK(lbu_post_send(&p->cli, id, UIW_WR_SEND,
			     UIW_SEND_SIGNALED | flags, cb, 0, 32, 0, 0, 0));
	LBU_OK(lbu_expect_wc(p->cli.scq, id, UIW_WC_SUCCESS, UIW_WC_SEND,
			     NULL));
}

static void recv_one(struct lbu_pair *p, uint64_t id, int solicited)
{
	struct uiw_wc wc;

	/* Spin: this test must not arm the CQ behind its own back. */
	LBU_OK(lbu_spin_wc(p->srv.rcq, &wc, 1));
	if (wc.wr_id != id || wc.status != UIW_WC_SUCCESS ||
	    !!(wc.flags & UIW_WC_F_SOLICITED) != solicited)
		wc_fail("notification test receive", &wc);
}

static void test_cq_notify(void **state)
{
	struct ctx *x = *state;
	struct lbu_pair *p = &x->p;
	struct lbu_buf *cb, *sb;
	int fd, i;

	connect_default(x);
	cb = lbu_buf_alloc(&p->cli, 4096, ACC_ALL);
	LBU_NN(cb);
	sb = lbu_buf_alloc(&p->srv, 4096, ACC_ALL);
	LBU_NN(sb);
	fd = uiw_cq_fd(p->srv.rcq);
	assert_true(fd >= 0);
	assert_int_equal(lbu_fd_readable(fd, 0), 0);
	for (i = 0; i < 8; i++)
		LBU_OK(lbu_post_recv(&p->srv, i, sb, 64 * i, 64));

	/* Not armed: a completion does not make the fd readable. */
	send_one(p, cb, 100, 0);
	recv_one(p, 0, 0);
	assert_int_equal(lbu_fd_readable(fd, 0), 0);

	/* Armed: the next completion does. */
	LBU_OK(uiw_cq_req_notify(p->srv.rcq, 0));
	assert_int_equal(lbu_fd_readable(fd, 0), 0);
	send_one(p, cb, 101, 0);
	assert_int_equal(lbu_fd_readable(fd, lbu_timeout_ms()), 1);
	assert_true(uiw_cq_ack_events(p->srv.rcq) >= 1);
	assert_int_equal(lbu_fd_readable(fd, 0), 0);
	recv_one(p, 1, 0);

	/* One arm, one notification: a second completion stays quiet. */
	send_one(p, cb, 102, 0);
	recv_one(p, 2, 0);
	assert_int_equal(lbu_fd_readable(fd, 0), 0);

	/* uiw_cq_wait sees the same event. */
	LBU_OK(uiw_cq_req_notify(p->srv.rcq, 0));
	send_one(p, cb, 103, UIW_SEND_SOLICITED);
	assert_int_equal(uiw_cq_wait(p->srv.rcq, lbu_timeout_ms()), 1);
	assert_true(uiw_cq_ack_events(p->srv.rcq) >= 1);
	recv_one(p, 3, 1);
	assert_int_equal(uiw_cq_wait(p->srv.rcq, 0), 0);
}

static void test_solicited_notify(void **state)
{
	struct ctx *x = *state;
	struct lbu_pair *p = &x->p;
	struct lbu_buf *cb, *sb, *t;
	struct uiw_wc wc[4];
	int fd, i;

	connect_default(x);
	cb = lbu_buf_alloc(&p->cli, 4096, ACC_ALL);
	LBU_NN(cb);
	sb = lbu_buf_alloc(&p->srv, 4096, ACC_ALL);
	LBU_NN(sb);
	fd = uiw_cq_fd(p->srv.rcq);
	assert_true(fd >= 0);
	for (i = 0; i < 8; i++)
		LBU_OK(lbu_post_recv(&p->srv, i, sb, 64 * i, 64));

	LBU_OK(uiw_cq_req_notify(p->srv.rcq, 1));
	/* A plain Send completes without notifying... */
	send_one(p, cb, 100, 0);
	recv_one(p, 0, 0);
	assert_int_equal(lbu_fd_readable(fd, 0), 0);
	/* ...a Send with SE notifies. */
	send_one(p, cb, 101, UIW_SEND_SOLICITED);
	assert_int_equal(lbu_fd_readable(fd, lbu_timeout_ms()), 1);
	assert_true(uiw_cq_ack_events(p->srv.rcq) >= 1);
	recv_one(p, 1, 1);
	assert_int_equal(lbu_fd_readable(fd, 0), 0);

	/* Send with SE and Invalidate is solicited too. */
	t = lbu_buf_alloc(&p->srv, 4096, ACC_ALL);
	LBU_NN(t);
	LBU_OK(uiw_cq_req_notify(p->srv.rcq, 1));
	send_one(p, cb, 102, 0);
	recv_one(p, 2, 0);
	assert_int_equal(lbu_fd_readable(fd, 0), 0);
	LBU_OK(lbu_post_send(&p->cli, 103, UIW_WR_SEND_WITH_INV,
			     UIW_SEND_SIGNALED | UIW_SEND_SOLICITED, cb, 0, 32,
			     0, 0, t->mr->rkey));
	LBU_OK(lbu_expect_wc(p->cli.scq, 103, UIW_WC_SUCCESS, UIW_WC_SEND,
			     NULL));
	assert_int_equal(lbu_fd_readable(fd, lbu_timeout_ms()), 1);
	assert_true(uiw_cq_ack_events(p->srv.rcq) >= 1);
	recv_one(p, 3, 1);

	/* An error completion notifies a solicited-only arm as well:
	 * a Write with a bad STag ends the stream and flushes the
	 * server's receives. */
	LBU_OK(uiw_cq_req_notify(p->srv.rcq, 1));
	LBU_OK(lbu_post_send(&p->cli, 104, UIW_WR_RDMA_WRITE, 0, cb, 0, 16,
			     lbu_to(sb, 0), sb->mr->rkey ^ 0x33, 0));
	assert_int_equal(lbu_fd_readable(fd, lbu_timeout_ms()), 1);
	assert_true(uiw_cq_ack_events(p->srv.rcq) >= 1);
	LBU_OK(lbu_spin_wc(p->srv.rcq, wc, 4));
	for (i = 0; i < 4; i++)
		if (wc[i].status != UIW_WC_WR_FLUSH_ERR)
			wc_fail("flushed receive", &wc[i]);
	LBU_OK(lbu_wait_disconnected(&p->srv));
	LBU_OK(lbu_wait_disconnected(&p->cli));
}

/* Connected, with a buffer of len octets on each side. */
static void connect_bufs(struct ctx *x, size_t len, struct lbu_buf **cb,
			 struct lbu_buf **sb)
{
	connect_default(x);
	*cb = lbu_buf_alloc(&x->p.cli, len, ACC_ALL);
	LBU_NN(*cb);
	*sb = lbu_buf_alloc(&x->p.srv, len, ACC_ALL);
	LBU_NN(*sb);
}

/* Poll mode with deferred sending (uiw_cq_set_poll_mode): the Sends
 * posted while the send CQ is polled and not armed leave by the next
 * polls, over any LLP; one whose framing has no poll hook of its own
 * (SCTP) is kicked at the post as outside poll mode. */
static void test_cq_poll_defer_send(void **state)
{
	struct ctx *x = *state;
	struct lbu_pair *p = &x->p;
	struct lbu_buf *cb, *sb;
	struct uiw_wc wc[4];
	int i;

	connect_bufs(x, 4096, &cb, &sb);
	for (i = 0; i < 4; i++)
		LBU_OK(lbu_post_recv(&p->srv, i, sb, 64 * i, 64));
	LBU_OK(uiw_cq_set_poll_mode(p->cli.scq, UIW_CQ_POLL |
				    UIW_CQ_POLL_DEFER_SEND));
	for (i = 0; i < 4; i++)
		LBU_OK(lbu_post_send(&p->cli, 100 + (uint64_t)i, UIW_WR_SEND,
				     UIW_SEND_SIGNALED, cb, 0, 32, 0, 0, 0));
	/* Spinning: an armed CQ would send without deferring. */
	LBU_OK(lbu_spin_wc(p->cli.scq, wc, 4));
	for (i = 0; i < 4; i++)
		if (wc[i].wr_id != 100 + (uint64_t)i ||
		    wc[i].status != UIW_WC_SUCCESS)
			wc_fail("deferred send", &wc[i]);
	LBU_OK(lbu_spin_wc(p->srv.rcq, wc, 4));
	for (i = 0; i < 4; i++)
		if (wc[i].wr_id != (uint64_t)i ||
		    wc[i].status != UIW_WC_SUCCESS || wc[i].byte_len != 32)
			wc_fail("receive of a deferred send", &wc[i]);
	LBU_OK(uiw_cq_set_poll_mode(p->cli.scq, 0));
}

/* Poll mode's lease: a server that polled its CQ once (receive is the
 * application's from then on) and neither polls nor arms again still
 * answers the client's RDMA Read: its progress thread takes receiving
 * back when the lease runs out (UIW_LLP_POLL_LEASE_MS).  The client
 * waits for its completion with the usual timeout. */
static void test_cq_poll_lease(void **state)
{
	struct ctx *x = *state;
	struct lbu_pair *p = &x->p;
	struct lbu_buf *src, *sink;
	struct uiw_wc wc;

	connect_bufs(x, 4096, &sink, &src);
	lbu_fill(src->mem, 4096, 77);
	LBU_OK(uiw_cq_set_poll_mode(p->srv.scq, UIW_CQ_POLL));
	LBU_OK(uiw_cq_set_poll_mode(p->srv.rcq, UIW_CQ_POLL));
	/* the one poll: nothing to return, receive taken */
	assert_int_equal(uiw_cq_poll(p->srv.rcq, 1, &wc), 0);
	read_into(p, src, sink, 7, 4096);
	LBU_OK(uiw_cq_set_poll_mode(p->srv.scq, 0));
	LBU_OK(uiw_cq_set_poll_mode(p->srv.rcq, 0));
}

/* Poll mode and a reset: octets that came before the peer reset the
 * connection are received, as an RNIC would have placed them on
 * arrival, although the application, holding receive, did not poll in
 * between: the Send completes, the other receive is flushed. */
static void test_cq_poll_reset(void **state)
{
	struct ctx *x = *state;
	struct lbu_pair *p = &x->p;
	struct lbu_buf *cb, *sb;
	struct uiw_wc wc[2];

	connect_bufs(x, 4096, &cb, &sb);
	lbu_fill(cb->mem, 32, 5);
	LBU_OK(lbu_post_recv(&p->srv, 1, sb, 0, 64));
	LBU_OK(lbu_post_recv(&p->srv, 2, sb, 64, 64));
	LBU_OK(uiw_cq_set_poll_mode(p->srv.scq, UIW_CQ_POLL));
	LBU_OK(uiw_cq_set_poll_mode(p->srv.rcq, UIW_CQ_POLL));
	assert_int_equal(uiw_cq_poll(p->srv.rcq, 1, wc), 0);
	send_one(p, cb, 3, 0);
	/* abortive: the client's socket is reset at once */
	LBU_OK(uiw_qp_destroy(p->cli.qp));
	p->cli.qp = NULL;
	LBU_OK(lbu_wait_disconnected(&p->srv));
	LBU_OK(lbu_spin_wc(p->srv.rcq, wc, 2));
	if (wc[0].wr_id != 1 || wc[0].status != UIW_WC_SUCCESS ||
	    wc[0].byte_len != 32)
		wc_fail("the Send that came before the reset", &wc[0]);
	LBU_OK(lbu_verify(sb->mem, 32, 5, "the Send before the reset"));
	if (!flushed_recv(&wc[1], 2))
		wc_fail("the receive after the reset", &wc[1]);
	LBU_OK(lbu_wait_disconnected(&p->cli));
	LBU_OK(uiw_cq_set_poll_mode(p->srv.scq, 0));
	LBU_OK(uiw_cq_set_poll_mode(p->srv.rcq, 0));
}

/* ------------------------------------------------------------------ */

int main(void)
{
	struct CMUnitTest tests[NOPCASES + 20];
	static char names[NOPCASES][64];
	size_t i, n = 0;

	for (i = 0; i < NOPCASES; i++) {
		const struct op_case *c = &op_cases[i];

		snprintf(names[i], sizeof(names[i]), "%s/crc_%s/markers_%s%s",
			 op_names[c->op], c->crc ? "on" : "off",
			 c->markers ? "on" : "off", c->big ? "/16MiB" : "");
		tests[n].name = names[i];
		tests[n].test_func = test_op;
		tests[n].setup_func = setup;
		tests[n].teardown_func = teardown;
		tests[n].initial_state = (void *)c;
		n++;
	}
#define T(f)								\
	do {								\
		tests[n].name = #f;					\
		tests[n].test_func = f;					\
		tests[n].setup_func = setup;				\
		tests[n].teardown_func = teardown;			\
		tests[n].initial_state = NULL;				\
		n++;							\
	} while (0)
	T(test_markers_client_only);
	T(test_markers_server_only);
	T(test_responder_sends_first);
	T(test_sgl);
	T(test_unsignalled);
	T(test_sig_all);
	T(test_mixed_order);
	T(test_reads_ord);
	T(test_local_inv);
	T(test_write_no_access);
	T(test_write_bad_stag);
	T(test_send_too_long);
	T(test_read_sink_access);
	T(test_cq_notify);
	T(test_solicited_notify);
	T(test_cq_poll_defer_send);
	T(test_cq_poll_lease);
	T(test_cq_poll_reset);
#undef T
	return _cmocka_run_group_tests("loopback_ops", tests, n, NULL, NULL);
}
