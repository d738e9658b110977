/*
 * The drop-in libibverbs.so.1: queue pairs, shared receive queues and
 * the posting of work requests.
 *
 * Only reliable connected QPs exist on iWARP (RFC 5040 runs over one
 * reliable stream).  librdmacm.so.1 connects them through uiw_cm; the
 * verbs-visible state follows what it and ibv_modify_qp say.
 */
#include <assert.h>
#include <endian.h>
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>

#include "verbs_priv.h"

/* The engine's SGE, receive work request and verbs' have one layout, so
 * that lists pass through without conversion. */
static_assert(sizeof(struct ibv_sge) == sizeof(struct uiw_sge) &&
	      offsetof(struct ibv_sge, addr) == offsetof(struct uiw_sge, addr) &&
	      offsetof(struct ibv_sge, length) ==
	      offsetof(struct uiw_sge, length) &&
	      offsetof(struct ibv_sge, lkey) == offsetof(struct uiw_sge, lkey),
	      "ibv_sge and uiw_sge differ");
static_assert(sizeof(struct ibv_recv_wr) == sizeof(struct uiw_recv_wr) &&
	      offsetof(struct ibv_recv_wr, wr_id) ==
	      offsetof(struct uiw_recv_wr, wr_id) &&
	      offsetof(struct ibv_recv_wr, next) ==
	      offsetof(struct uiw_recv_wr, next) &&
	      offsetof(struct ibv_recv_wr, sg_list) ==
	      offsetof(struct uiw_recv_wr, sg_list) &&
	      offsetof(struct ibv_recv_wr, num_sge) ==
	      offsetof(struct uiw_recv_wr, num_sge),
	      "ibv_recv_wr and uiw_recv_wr differ");

struct uiw_qp *uiw_compat_qp(struct ibv_qp *qp)
{
	return qp ? ((struct vc_qp *)qp)->uqp : NULL;
}

struct ibv_qp *uiw_compat_qp_of(struct uiw_qp *uqp)
{
	struct vc_qp *q = uqp ? uiw_qp_context(uqp) : NULL;

	return q ? &q->qp : NULL;
}

void uiw_compat_qp_set_state(struct ibv_qp *qp, enum ibv_qp_state state)
{
	pthread_mutex_lock(&qp->mutex);
	qp->state = state;
	pthread_mutex_unlock(&qp->mutex);
	/* The connection ended: the engine's QP may sit in Idle after a
	 * graceful close; verbs wants it in Error, where what is posted
	 * next completes flushed (flush_in_error). */
	if (state == IBV_QPS_ERR)
		uiw_qp_set_error(((struct vc_qp *)qp)->uqp);
}

/* ---- Queue pairs --------------------------------------------------------- */

static struct ibv_qp *vc_qp_create(struct ibv_pd *pd,
				   struct ibv_qp_init_attr *a)
{
	struct uiw_qp_init_attr u = { 0 };
	struct uiw_qp_attr qa;
	struct vc_qp *q;

	if (!pd || !a) {
		errno = EINVAL;
		return NULL;
	}
	switch (a->qp_type) {
	case IBV_QPT_RC:
		break;
	case IBV_QPT_UD:
		uiw_compat_unsupported("UD QPs");
		return NULL;
	case IBV_QPT_UC:
		uiw_compat_unsupported("UC QPs");
		return NULL;
	case IBV_QPT_RAW_PACKET:
		uiw_compat_unsupported("raw packet QPs");
		return NULL;
	default:
		uiw_compat_unsupported("XRC and driver QPs");
		return NULL;
	}
	if (!a->send_cq || !a->recv_cq) {
		errno = EINVAL;
		return NULL;
	}
	q = calloc(1, sizeof(*q));
	if (!q) {
		errno = ENOMEM;
		return NULL;
	}
	u.send_cq = ((struct vc_cq *)a->send_cq)->ucq;
	u.recv_cq = ((struct vc_cq *)a->recv_cq)->ucq;
	u.cap.max_send_wr = a->cap.max_send_wr;
	u.cap.max_recv_wr = a->cap.max_recv_wr;
	u.cap.max_send_sge = a->cap.max_send_sge;
	u.cap.max_recv_sge = a->cap.max_recv_sge;
	u.cap.max_inline_data = a->cap.max_inline_data;
	/* Verbs allows an empty queue (a QP that only sends, or receives
	 * from an SRQ); the engine's queues hold at least one. */
	if (!u.cap.max_send_wr)
		u.cap.max_send_wr = 1;
	if (!u.cap.max_recv_wr)
		u.cap.max_recv_wr = 1;
	u.sq_sig_all = a->sq_sig_all;
	u.qp_context = q;
	u.srq = a->srq ? ((struct vc_srq *)a->srq)->usrq : NULL;
	/* iWARP: an RDMA Read's sink is written by the peer's Read Response
	 * as a tagged buffer (RFC 5040 §4.4), so it needs remote write
	 * access, as on every iWARP device. */
	u.read_sink_access = UIW_ACCESS_REMOTE_WRITE;
	u.flush_in_error = 1;      /* posts in ERR complete flushed */
	q->uqp = uiw_qp_create(((struct vc_pd *)pd)->upd, &u);
	if (!q->uqp) {
		free(q);
		return vc_err_null(errno, "ibv_create_qp");
	}
	uiw_qp_query(q->uqp, &qa);
	a->cap.max_send_wr = qa.cap.max_send_wr;
	a->cap.max_send_sge = qa.cap.max_send_sge;
	a->cap.max_inline_data = qa.cap.max_inline_data;
	if (!a->srq) {
		a->cap.max_recv_wr = qa.cap.max_recv_wr;
		a->cap.max_recv_sge = qa.cap.max_recv_sge;
	}
	q->max_inline = qa.cap.max_inline_data;
	q->qp.context = pd->context;
	q->qp.qp_context = a->qp_context;
	q->qp.pd = pd;
	q->qp.send_cq = a->send_cq;
	q->qp.recv_cq = a->recv_cq;
	q->qp.srq = a->srq;
	q->qp.handle = qa.qp_num;
	q->qp.qp_num = qa.qp_num;
	q->qp.state = IBV_QPS_RESET;
	q->qp.qp_type = IBV_QPT_RC;
	pthread_mutex_init(&q->qp.mutex, NULL);
	pthread_cond_init(&q->qp.cond, NULL);
	return &q->qp;
}

struct ibv_qp *ibv_create_qp(struct ibv_pd *pd,
			     struct ibv_qp_init_attr *qp_init_attr)
{
	return vc_qp_create(pd, qp_init_attr);
}

struct ibv_qp *vc_create_qp_ex(struct ibv_context *context,
			       struct ibv_qp_init_attr_ex *a)
{
	const uint32_t known = IBV_QP_INIT_ATTR_PD |
			       IBV_QP_INIT_ATTR_CREATE_FLAGS;

	if (a->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) {
		uiw_compat_unsupported("ibv_wr_* work requests "
				       "(IBV_QP_INIT_ATTR_SEND_OPS_FLAGS)");
		return NULL;
	}
	if (a->comp_mask & ~known) {
		uiw_compat_unsupported("XRC, TSO, RSS and source QPN QP "
				       "attributes");
		return NULL;
	}
	if ((a->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) && a->create_flags) {
		uiw_compat_unsupported("QP create flags");
		return NULL;
	}
	if (!(a->comp_mask & IBV_QP_INIT_ATTR_PD) || !a->pd ||
	    a->pd->context != context) {
		errno = EINVAL;
		return NULL;
	}
	/* The fields up to sq_sig_all are an ibv_qp_init_attr (verbs.h's
	 * own ibv_create_qp_ex passes them so). */
	return vc_qp_create(a->pd, (struct ibv_qp_init_attr *)a);
}

struct ibv_qp_ex *ibv_qp_to_qp_ex(struct ibv_qp *qp)
{
	uiw_compat_unsupported("ibv_wr_* work requests (ibv_qp_to_qp_ex)");
	return NULL;
}

/* The verbs state transitions that a QP may take here: the IB ones of a
 * reliable connected QP, without SQD (no send queue drain on iWARP). */
static const uint8_t vc_qp_moves[IBV_QPS_ERR + 1] = {
	[IBV_QPS_RESET] = 1u << IBV_QPS_RESET | 1u << IBV_QPS_INIT |
			  1u << IBV_QPS_ERR,
	[IBV_QPS_INIT] = 1u << IBV_QPS_RESET | 1u << IBV_QPS_INIT |
			 1u << IBV_QPS_RTR | 1u << IBV_QPS_ERR,
	[IBV_QPS_RTR] = 1u << IBV_QPS_RESET | 1u << IBV_QPS_RTS |
			1u << IBV_QPS_ERR,
	[IBV_QPS_RTS] = 1u << IBV_QPS_RESET | 1u << IBV_QPS_RTS |
			1u << IBV_QPS_ERR,
	[IBV_QPS_SQD] = 1u << IBV_QPS_RESET | 1u << IBV_QPS_ERR,
	[IBV_QPS_SQE] = 1u << IBV_QPS_RESET | 1u << IBV_QPS_ERR,
	[IBV_QPS_ERR] = 1u << IBV_QPS_RESET | 1u << IBV_QPS_ERR,
};

/*
 * The connection itself is made by librdmacm (uiw_cm); here a move is
 * recorded, and the moves that act on the engine act: to ERR flushes the
 * QP (uiw_qp_set_error).  The IB addressing attributes (path, PSNs,
 * timeouts, P_Key index, port) mean nothing on iWARP and are accepted
 * and ignored, as iWARP providers do.
 */
int ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask)
{
	struct vc_qp *q = (struct vc_qp *)qp;
	enum ibv_qp_state cur, to;
	struct uiw_qp_attr qa;
	int ret;

	if (!attr)
		return EINVAL;
	pthread_mutex_lock(&qp->mutex);
	cur = qp->state;
	pthread_mutex_unlock(&qp->mutex);
	if ((attr_mask & IBV_QP_CUR_STATE) && attr->cur_qp_state != cur)
		return EINVAL;
	to = (attr_mask & IBV_QP_STATE) ? attr->qp_state : cur;
	if ((unsigned)cur > IBV_QPS_ERR || (unsigned)to > IBV_QPS_ERR ||
	    !(vc_qp_moves[cur] & (1u << to))) {
		uiw_compat_log("ibv_modify_qp: QP %u cannot move from state "
			       "%d to %d", qp->qp_num, cur, to);
		return EINVAL;
	}
	if (to == IBV_QPS_ERR && cur != IBV_QPS_ERR) {
		ret = uiw_qp_set_error(q->uqp);
		if (ret < 0)
			return vc_err(ret, "ibv_modify_qp to ERR");
	}
	if (to == IBV_QPS_RESET && cur != IBV_QPS_RESET) {
		/* Only a QP the engine still holds in Idle comes back. */
		uiw_qp_query(q->uqp, &qa);
		if (qa.state != UIW_QPS_IDLE)
			return uiw_compat_unsupported("moving a connected or "
						      "failed QP to RESET");
	}
	pthread_mutex_lock(&qp->mutex);
	if (attr_mask & IBV_QP_ACCESS_FLAGS)
		q->access = attr->qp_access_flags;
	if (attr_mask & IBV_QP_MAX_QP_RD_ATOMIC)
		q->max_rd_atomic = attr->max_rd_atomic;
	if (attr_mask & IBV_QP_MAX_DEST_RD_ATOMIC)
		q->max_dest_rd_atomic = attr->max_dest_rd_atomic;
	qp->state = to;
	pthread_mutex_unlock(&qp->mutex);
	return 0;
}

/* The engine's RFC 5040 §6 states as verbs states, as siw maps them. */
static const enum ibv_qp_state vc_state_rows[] = {
	[UIW_QPS_IDLE] = IBV_QPS_INIT,
	[UIW_QPS_RTS] = IBV_QPS_RTS,
	[UIW_QPS_CLOSING] = IBV_QPS_SQD,
	[UIW_QPS_TERMINATE] = IBV_QPS_SQE,
	[UIW_QPS_ERROR] = IBV_QPS_ERR,
};

int ibv_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask,
		 struct ibv_qp_init_attr *init_attr)
{
	struct vc_qp *q = (struct vc_qp *)qp;
	struct uiw_qp_attr qa;
	int ret;

	if (!attr || !init_attr)
		return EINVAL;
	ret = uiw_qp_query(q->uqp, &qa);
	if (ret < 0)
		return vc_err(ret, "ibv_query_qp");
	memset(attr, 0, sizeof(*attr));
	pthread_mutex_lock(&qp->mutex);
	attr->qp_state = qp->state;
	/* Once the engine holds the QP (a connection attached it), its
	 * state is the truth, as a kernel provider's is: RTS from the
	 * moment the connection is established, whether or not the
	 * program has read its ESTABLISHED yet, and a stream that ended
	 * is seen without a modify_qp. */
	if (qa.state != UIW_QPS_IDLE &&
	    (unsigned)qa.state < sizeof(vc_state_rows) / sizeof(vc_state_rows[0]))
		attr->qp_state = vc_state_rows[qa.state];
	attr->qp_access_flags = (int)q->access;
	pthread_mutex_unlock(&qp->mutex);
	attr->cur_qp_state = attr->qp_state;
	attr->path_mtu = IBV_MTU_4096;
	attr->cap.max_send_wr = qa.cap.max_send_wr;
	attr->cap.max_send_sge = qa.cap.max_send_sge;
	attr->cap.max_inline_data = qa.cap.max_inline_data;
	if (!qp->srq) {
		attr->cap.max_recv_wr = qa.cap.max_recv_wr;
		attr->cap.max_recv_sge = qa.cap.max_recv_sge;
	}
	/* ORD and IRD as negotiated (RFC 6581) or to be proposed. */
	attr->max_rd_atomic = (uint8_t)(qa.ord > 255 ? 255 : qa.ord);
	attr->max_dest_rd_atomic = (uint8_t)(qa.ird > 255 ? 255 : qa.ird);
	attr->port_num = 1;
	attr->pkey_index = 0;
	memset(init_attr, 0, sizeof(*init_attr));
	init_attr->qp_context = qp->qp_context;
	init_attr->send_cq = qp->send_cq;
	init_attr->recv_cq = qp->recv_cq;
	init_attr->srq = qp->srq;
	init_attr->cap = attr->cap;
	init_attr->qp_type = qp->qp_type;
	return 0;
}

int ibv_destroy_qp(struct ibv_qp *qp)
{
	struct vc_qp *q = (struct vc_qp *)qp;
	int ret;

	vc_wait_acked(&qp->mutex, &qp->cond, &qp->events_completed,
		      &q->events_reported);
	ret = uiw_qp_destroy(q->uqp);
	if (ret < 0)
		return vc_err(ret, "ibv_destroy_qp");
	pthread_mutex_destroy(&qp->mutex);
	pthread_cond_destroy(&qp->cond);
	free(q);
	return 0;
}

/* ---- Shared receive queues ----------------------------------------------- */

struct ibv_srq *ibv_create_srq(struct ibv_pd *pd,
			       struct ibv_srq_init_attr *srq_init_attr)
{
	struct uiw_srq_attr ua = { 0 };
	struct vc_srq *s;

	if (!pd || !srq_init_attr) {
		errno = EINVAL;
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		errno = ENOMEM;
		return NULL;
	}
	ua.max_wr = srq_init_attr->attr.max_wr;
	ua.max_sge = srq_init_attr->attr.max_sge;
	s->usrq = uiw_srq_create(((struct vc_pd *)pd)->upd, &ua, s);
	if (!s->usrq) {
		free(s);
		return vc_err_null(errno, "ibv_create_srq");
	}
	srq_init_attr->attr.max_wr = ua.max_wr;
	srq_init_attr->attr.max_sge = ua.max_sge;
	s->srq.context = pd->context;
	s->srq.srq_context = srq_init_attr->srq_context;
	s->srq.pd = pd;
	pthread_mutex_init(&s->srq.mutex, NULL);
	pthread_cond_init(&s->srq.cond, NULL);
	return &s->srq;
}

struct ibv_srq *vc_create_srq_ex(struct ibv_context *context,
				 struct ibv_srq_init_attr_ex *a)
{
	/* verbs.h's ibv_create_srq_ex takes the basic case itself; what
	 * comes here asks for XRC, tag matching or a CQ. */
	if ((a->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) &&
	    a->srq_type != IBV_SRQT_BASIC) {
		uiw_compat_unsupported("XRC and tag-matching SRQs");
		return NULL;
	}
	if (a->comp_mask & ~(uint32_t)(IBV_SRQ_INIT_ATTR_TYPE |
				       IBV_SRQ_INIT_ATTR_PD)) {
		uiw_compat_unsupported("SRQ attributes beyond PD and type");
		return NULL;
	}
	if (!(a->comp_mask & IBV_SRQ_INIT_ATTR_PD) || !a->pd) {
		errno = EINVAL;
		return NULL;
	}
	return ibv_create_srq(a->pd, (struct ibv_srq_init_attr *)a);
}

int ibv_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr,
		   int srq_attr_mask)
{
	int ret;

	if (srq_attr_mask & ~(IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT))
		return EINVAL;
	if (srq_attr_mask & IBV_SRQ_MAX_WR)
		return uiw_compat_unsupported("resizing an SRQ "
					      "(IBV_SRQ_MAX_WR)");
	if (srq_attr_mask & IBV_SRQ_LIMIT) {
		ret = uiw_srq_arm(((struct vc_srq *)srq)->usrq,
				  srq_attr->srq_limit);
		if (ret < 0)
			return vc_err(ret, "ibv_modify_srq");
	}
	return 0;
}

int ibv_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr)
{
	struct uiw_srq_attr ua;
	int ret;

	ret = uiw_srq_query(((struct vc_srq *)srq)->usrq, &ua);
	if (ret < 0)
		return vc_err(ret, "ibv_query_srq");
	srq_attr->max_wr = ua.max_wr;
	srq_attr->max_sge = ua.max_sge;
	srq_attr->srq_limit = ua.srq_limit;
	return 0;
}

int ibv_destroy_srq(struct ibv_srq *srq)
{
	struct vc_srq *s = (struct vc_srq *)srq;
	int ret;

	vc_wait_acked(&srq->mutex, &srq->cond, &srq->events_completed,
		      &s->events_reported);
	ret = uiw_srq_destroy(s->usrq);
	if (ret < 0)
		return vc_err(ret, "ibv_destroy_srq");
	pthread_mutex_destroy(&srq->mutex);
	pthread_cond_destroy(&srq->cond);
	free(s);
	return 0;
}

/* ---- Posting ------------------------------------------------------------- */

/* What an opcode adds to the common fields; 0 or an errno value. */
typedef int (*vc_fill_fn)(struct uiw_send_wr *u, const struct ibv_send_wr *w);

static int vc_fill_none(struct uiw_send_wr *u, const struct ibv_send_wr *w)
{
	return 0;
}

static int vc_fill_rdma(struct uiw_send_wr *u, const struct ibv_send_wr *w)
{
	u->wr.rdma.remote_addr = w->wr.rdma.remote_addr;
	u->wr.rdma.rkey = w->wr.rdma.rkey;
	return 0;
}

/* Verbs' 32-bit immediate data (network order in the work request) is
 * the low 32 bits of RFC 7306's 8 octets; the receiver takes them back
 * so (verbs_cq.c). */
static int vc_fill_rdma_imm(struct uiw_send_wr *u, const struct ibv_send_wr *w)
{
	u->imm_data = be32toh(w->imm_data);
	return vc_fill_rdma(u, w);
}

/* RFC 7306 §4 has Immediate Data without payload and no Send that
 * carries both: a Send with immediate data and a zero-length payload is
 * an Immediate Data message; with a payload it cannot be sent. */
static int vc_fill_send_imm(struct uiw_send_wr *u, const struct ibv_send_wr *w)
{
	int i;

	for (i = 0; i < w->num_sge; i++) {
		if (w->sg_list[i].length) {
			uiw_compat_log("IBV_WR_SEND_WITH_IMM with a payload is "
				       "not supported (RFC 7306 Immediate Data "
				       "carries no payload; send it as a Send "
				       "followed by a zero-length one)");
			return EOPNOTSUPP;
		}
	}
	u->num_sge = 0;
	u->sg_list = NULL;
	u->imm_data = be32toh(w->imm_data);
	return 0;
}

static int vc_fill_atomic(struct uiw_send_wr *u, const struct ibv_send_wr *w)
{
	u->wr.atomic.remote_addr = w->wr.atomic.remote_addr;
	u->wr.atomic.rkey = w->wr.atomic.rkey;
	u->wr.atomic.compare_add = w->wr.atomic.compare_add;
	u->wr.atomic.swap = w->wr.atomic.swap;
	return 0;
}

static int vc_fill_inv(struct uiw_send_wr *u, const struct ibv_send_wr *w)
{
	u->invalidate_stag = w->invalidate_rkey;
	return 0;
}

/* One row per verbs send opcode; fill NULL: not supported, what says
 * what. */
static const struct {
	enum uiw_wr_opcode op;
	vc_fill_fn fill;
	const char *what;
} vc_send_rows[] = {
	[IBV_WR_RDMA_WRITE] = { UIW_WR_RDMA_WRITE, vc_fill_rdma, NULL },
	[IBV_WR_RDMA_WRITE_WITH_IMM] = { UIW_WR_RDMA_WRITE_WITH_IMM,
					 vc_fill_rdma_imm, NULL },
	[IBV_WR_SEND] = { UIW_WR_SEND, vc_fill_none, NULL },
	[IBV_WR_SEND_WITH_IMM] = { UIW_WR_IMMEDIATE, vc_fill_send_imm, NULL },
	[IBV_WR_RDMA_READ] = { UIW_WR_RDMA_READ, vc_fill_rdma, NULL },
	[IBV_WR_ATOMIC_CMP_AND_SWP] = { UIW_WR_ATOMIC_CMP_SWP, vc_fill_atomic,
					NULL },
	[IBV_WR_ATOMIC_FETCH_AND_ADD] = { UIW_WR_ATOMIC_FETCH_ADD,
					  vc_fill_atomic, NULL },
	[IBV_WR_LOCAL_INV] = { UIW_WR_LOCAL_INV, vc_fill_inv, NULL },
	[IBV_WR_BIND_MW] = { 0, NULL, "memory window binds (IBV_WR_BIND_MW)" },
	[IBV_WR_SEND_WITH_INV] = { UIW_WR_SEND_WITH_INV, vc_fill_inv, NULL },
	[IBV_WR_TSO] = { 0, NULL, "TSO sends (IBV_WR_TSO)" },
	[IBV_WR_DRIVER1] = { 0, NULL, "driver opcodes (IBV_WR_DRIVER1)" },
	[IBV_WR_ATOMIC_WRITE] = { 0, NULL,
				  "atomic writes (IBV_WR_ATOMIC_WRITE)" },
};

#define VC_SEND_FLAGS (IBV_SEND_FENCE | IBV_SEND_SIGNALED | \
		       IBV_SEND_SOLICITED | IBV_SEND_INLINE)

/* One verbs send work request as the engine's; 0 or an errno value. */
static int vc_send_conv(struct uiw_send_wr *u, const struct ibv_send_wr *w)
{
	unsigned f = w->send_flags;

	if ((unsigned)w->opcode >= sizeof(vc_send_rows) / sizeof(vc_send_rows[0]) ||
	    (!vc_send_rows[w->opcode].fill && !vc_send_rows[w->opcode].what)) {
		uiw_compat_log("ibv_post_send: unknown opcode %d", w->opcode);
		return EINVAL;
	}
	if (!vc_send_rows[w->opcode].fill)
		return uiw_compat_unsupported(vc_send_rows[w->opcode].what);
	if (f & ~(unsigned)VC_SEND_FLAGS) {
		if (f & IBV_SEND_IP_CSUM)
			return uiw_compat_unsupported("IBV_SEND_IP_CSUM");
		uiw_compat_log("ibv_post_send: unknown send flags 0x%x",
			       f & ~(unsigned)VC_SEND_FLAGS);
		return EINVAL;
	}
	u->wr_id = w->wr_id;
	u->sg_list = (struct uiw_sge *)w->sg_list;
	u->num_sge = w->num_sge;
	u->opcode = vc_send_rows[w->opcode].op;
	u->send_flags = ((f & IBV_SEND_FENCE) ? UIW_SEND_FENCE : 0) |
			((f & IBV_SEND_SIGNALED) ? UIW_SEND_SIGNALED : 0) |
			((f & IBV_SEND_SOLICITED) ? UIW_SEND_SOLICITED : 0) |
			((f & IBV_SEND_INLINE) ? UIW_SEND_INLINE : 0);
	return vc_send_rows[w->opcode].fill(u, w);
}

/*
 * Work requests go to the engine in batches converted on the stack: no
 * allocation and no lock of ours.  *bad_wr is the first request not
 * posted, whether the conversion or the engine refused it.
 */
int vc_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
		 struct ibv_send_wr **bad_wr)
{
	struct uiw_qp *uqp = ((struct vc_qp *)qp)->uqp;
	struct uiw_send_wr b[VC_BATCH], *ubad;
	struct ibv_send_wr *first, *w;
	int n, i, err, ret;

	while (wr) {
		first = wr;
		err = 0;
		for (w = wr, n = 0; w && n < VC_BATCH; w = w->next, n++) {
			err = vc_send_conv(&b[n], w);
			if (err)
				break;
			b[n].next = &b[n + 1];
		}
		if (n) {
			b[n - 1].next = NULL;
			ret = uiw_post_send(uqp, b, &ubad);
			if (ret < 0) {
				for (w = first, i = 0; ubad && &b[i] != ubad;
				     i++)
					w = w->next;
				*bad_wr = w;
				return vc_err(ret, "ibv_post_send");
			}
		}
		if (err) {
			*bad_wr = w;
			return err;
		}
		wr = w;
	}
	return 0;
}

/* Receive work request lists pass through (same layout, asserted at
 * the top), and so does *bad_wr. */
int vc_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr,
		 struct ibv_recv_wr **bad_wr)
{
	int ret = uiw_post_recv(((struct vc_qp *)qp)->uqp,
				(struct uiw_recv_wr *)wr,
				(struct uiw_recv_wr **)bad_wr);

	return ret < 0 ? vc_err(ret, "ibv_post_recv") : 0;
}

int vc_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr,
		     struct ibv_recv_wr **bad_wr)
{
	int ret = uiw_post_srq_recv(((struct vc_srq *)srq)->usrq,
				    (struct uiw_recv_wr *)wr,
				    (struct uiw_recv_wr **)bad_wr);

	return ret < 0 ? vc_err(ret, "ibv_post_srq_recv") : 0;
}
