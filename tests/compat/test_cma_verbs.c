/*
 * The drop-in librdmacm.so.1 and libibverbs.so.1 together, as rdma_cm
 * programs use them: a client and a server in one process over
 * 127.0.0.1, written with the rdma_cm and verbs APIs alone (and
 * <uiwarp/rdma_option.h>).  The events and their order, private data
 * both ways, ports, the ids' life cycle, then the work requests verbs
 * programs post, RFC 7306 included, and uiwarp's own options.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/socket.h>
#include <unistd.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>
#include <rdma/rsocket.h>
#include <uiwarp/rdma_option.h>

#define WAIT_MS 15000      /* bound for any one event or completion */
#define SHORT_MS 200       /* an event that must not come: its wait */
#define BUF_LEN 4096
#define DEPTH   16

/* ---- Helpers ------------------------------------------------------- */

/* The next event of ch, of the type expected, within WAIT_MS (the
 * channel fd must become readable: programs poll it). */
static struct rdma_cm_event *expect_event(struct rdma_event_channel *ch,
					  enum rdma_cm_event_type type)
{
	struct pollfd pfd = { .fd = ch->fd, .events = POLLIN };
	struct rdma_cm_event *ev = NULL;

	assert_int_equal(poll(&pfd, 1, WAIT_MS), 1);
	assert_int_equal(rdma_get_cm_event(ch, &ev), 0);
	assert_non_null(ev);
	if (ev->event != type)
		fail_msg("event %s (status %d), expected %s",
			 rdma_event_str(ev->event), ev->status,
			 rdma_event_str(type));
	return ev;
}

static void expect_ack(struct rdma_event_channel *ch,
		       enum rdma_cm_event_type type)
{
	assert_int_equal(rdma_ack_cm_event(expect_event(ch, type)), 0);
}

static struct sockaddr_in lo_addr(uint16_t port)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons(port) };

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return a;
}

/* One side of a connection: its channel, id, PD, CQ (with a completion
 * channel) and a registered buffer. */
struct end {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	bool own_pd;               /* not the SRQ's */
	struct ibv_comp_channel *cc;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	uint8_t *buf;
};

struct server {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *listen;
	uint16_t port;
};

static int ctx_tag;        /* the listener's context, by address */

/* A server bound to a port the system picks, not listening yet. */
static void server_bind(struct server *s)
{
	struct sockaddr_in a = lo_addr(0);

	s->ch = rdma_create_event_channel();
	assert_non_null(s->ch);
	assert_int_equal(rdma_create_id(s->ch, &s->listen, &ctx_tag,
					RDMA_PS_TCP), 0);
	assert_int_equal(rdma_bind_addr(s->listen, (struct sockaddr *)&a), 0);
	/* qperf's order: the port is read before rdma_listen */
	s->port = ntohs(rdma_get_src_port(s->listen));
	assert_int_not_equal(s->port, 0);
}

static void server_listen(struct server *s)
{
	assert_int_equal(rdma_listen(s->listen, 8), 0);
	assert_int_equal(ntohs(rdma_get_src_port(s->listen)), s->port);
}

static void server_start(struct server *s)
{
	server_bind(s);
	server_listen(s);
}

static void server_stop(struct server *s)
{
	assert_int_equal(rdma_destroy_id(s->listen), 0);
	rdma_destroy_event_channel(s->ch);
}

/* The verbs objects of an end whose id has a device. */
static void end_verbs(struct end *e, struct ibv_context *verbs,
		      struct ibv_srq *srq, uint32_t inline_len)
{
	struct ibv_qp_init_attr qa = { 0 };

	/* A QP and its SRQ share a PD (verbs: EINVAL otherwise). */
	e->own_pd = !srq;
	e->pd = srq ? srq->pd : ibv_alloc_pd(verbs);
	assert_non_null(e->pd);
	e->cc = ibv_create_comp_channel(verbs);
	assert_non_null(e->cc);
	e->cq = ibv_create_cq(verbs, 4 * DEPTH, e, e->cc, 0);
	assert_non_null(e->cq);
	e->buf = calloc(1, BUF_LEN);
	assert_non_null(e->buf);
	e->mr = ibv_reg_mr(e->pd, e->buf, BUF_LEN, IBV_ACCESS_LOCAL_WRITE |
			   IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			   IBV_ACCESS_REMOTE_ATOMIC);
	assert_non_null(e->mr);
	qa.send_cq = e->cq;
	qa.recv_cq = e->cq;
	qa.srq = srq;
	qa.cap.max_send_wr = DEPTH;
	qa.cap.max_recv_wr = srq ? 0 : DEPTH;
	qa.cap.max_send_sge = 2;
	qa.cap.max_recv_sge = srq ? 0 : 2;
	qa.cap.max_inline_data = inline_len;
	qa.qp_type = IBV_QPT_RC;
	assert_int_equal(rdma_create_qp(e->id, e->pd, &qa), 0);
	assert_non_null(e->id->qp);
	assert_true(qa.cap.max_send_wr >= DEPTH);
	assert_true(qa.cap.max_inline_data >= inline_len);
}

static void end_free(struct end *e)
{
	rdma_destroy_qp(e->id);
	assert_int_equal(ibv_dereg_mr(e->mr), 0);
	assert_int_equal(ibv_destroy_cq(e->cq), 0);
	assert_int_equal(ibv_destroy_comp_channel(e->cc), 0);
	if (e->own_pd)
		assert_int_equal(ibv_dealloc_pd(e->pd), 0);
	assert_int_equal(rdma_destroy_id(e->id), 0);
	if (e->ch)
		rdma_destroy_event_channel(e->ch);
	free(e->buf);
	memset(e, 0, sizeof(*e));
}

/* Client: address and route resolved, verbs made. */
static void client_prepare(struct end *c, uint16_t port, uint32_t inline_len)
{
	struct sockaddr_in a = lo_addr(port);

	c->ch = rdma_create_event_channel();
	assert_non_null(c->ch);
	assert_int_equal(rdma_create_id(c->ch, &c->id, c, RDMA_PS_TCP), 0);
	assert_int_equal(rdma_resolve_addr(c->id, NULL, (struct sockaddr *)&a,
					   2000), 0);
	expect_ack(c->ch, RDMA_CM_EVENT_ADDR_RESOLVED);
	assert_non_null(c->id->verbs);
	assert_int_equal(c->id->port_num, 1);
	assert_int_equal(rdma_resolve_route(c->id, 2000), 0);
	expect_ack(c->ch, RDMA_CM_EVENT_ROUTE_RESOLVED);
	end_verbs(c, c->id->verbs, NULL, inline_len);
}

/* Receive i of n (wr_id 100 + i) lands at RX(e, i). */
#define RX(e, i) ((e)->buf + BUF_LEN / 2 + 64 * (i))

static void post_recvs(struct end *e, int n, uint32_t len)
{
	assert_true(n <= DEPTH && len <= 64);
	for (int i = 0; i < n; i++) {
		struct ibv_sge sge = {
			.addr = (uintptr_t)RX(e, i),
			.length = len, .lkey = e->mr->lkey,
		};
		struct ibv_recv_wr wr = { .wr_id = 100 + i, .sg_list = &sge,
					  .num_sge = 1 }, *bad;

		assert_int_equal(ibv_post_recv(e->id->qp, &wr, &bad), 0);
	}
}

/* The next completion of e's CQ: polled, else waited for on its
 * completion channel (armed, then polled again so that a completion of
 * the moment is not missed), within WAIT_MS. */
static struct ibv_wc poll_one(struct end *e)
{
	struct ibv_wc wc;

	for (;;) {
		struct pollfd pfd = { .fd = e->cc->fd, .events = POLLIN };
		struct ibv_cq *cq;
		void *ctx;
		int n = ibv_poll_cq(e->cq, 1, &wc);

		assert_true(n >= 0);
		if (n == 1)
			return wc;
		assert_int_equal(ibv_req_notify_cq(e->cq, 0), 0);
		n = ibv_poll_cq(e->cq, 1, &wc);
		assert_true(n >= 0);
		if (n == 1)
			return wc;
		if (poll(&pfd, 1, WAIT_MS) != 1)
			fail_msg("no completion within %d ms", WAIT_MS);
		assert_int_equal(ibv_get_cq_event(e->cc, &cq, &ctx), 0);
		assert_ptr_equal(cq, e->cq);
		ibv_ack_cq_events(cq, 1);
	}
}

static struct ibv_wc expect_wc(struct end *e, enum ibv_wc_opcode op)
{
	struct ibv_wc wc = poll_one(e);

	if (wc.status != IBV_WC_SUCCESS)
		fail_msg("wr %llu: %s", (unsigned long long)wc.wr_id,
			 ibv_wc_status_str(wc.status));
	assert_int_equal(wc.opcode, op);
	return wc;
}

/* A connected pair; the server's child inherits the listener's context
 * and answers on its channel.  conn / acc: the parameters of
 * rdma_connect and rdma_accept (acc NULL: accept without). */
static void connect_pair(struct server *s, struct end *c, struct end *sv,
			 struct rdma_conn_param *conn,
			 struct rdma_conn_param *acc, struct ibv_srq *srq)
{
	struct rdma_cm_event *ev;

	assert_int_equal(rdma_connect(c->id, conn), 0);
	ev = expect_event(s->ch, RDMA_CM_EVENT_CONNECT_REQUEST);
	assert_ptr_equal(ev->listen_id, s->listen);
	assert_ptr_equal(ev->id->context, &ctx_tag);
	assert_ptr_equal(ev->id->channel, s->ch);
	assert_non_null(ev->id->verbs);
	memset(sv, 0, sizeof(*sv));
	sv->id = ev->id;
	end_verbs(sv, sv->id->verbs, srq, 0);
	if (!srq)
		post_recvs(sv, 4, 64);
	assert_int_equal(rdma_accept(sv->id, acc), 0);
	assert_int_equal(rdma_ack_cm_event(ev), 0);
	expect_ack(s->ch, RDMA_CM_EVENT_ESTABLISHED);
	expect_ack(c->ch, RDMA_CM_EVENT_ESTABLISHED);
}

static void disconnect_pair(struct server *s, struct end *c, struct end *sv)
{
	assert_int_equal(rdma_disconnect(c->id), 0);
	expect_ack(c->ch, RDMA_CM_EVENT_DISCONNECTED);
	expect_ack(s->ch, RDMA_CM_EVENT_DISCONNECTED);
}

static void send_wr(struct end *e, enum ibv_wr_opcode op, uint64_t id,
		    void *addr, uint32_t len, uint32_t lkey, unsigned flags)
{
	struct ibv_sge sge = { .addr = (uintptr_t)addr, .length = len,
			       .lkey = lkey };
	struct ibv_send_wr wr = { .wr_id = id, .sg_list = &sge,
				  .num_sge = len ? 1 : 0, .opcode = op,
				  .send_flags = flags }, *bad;

	assert_int_equal(ibv_post_send(e->id->qp, &wr, &bad), 0);
}

static enum ibv_qp_state qp_state(struct ibv_qp *qp)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	assert_int_equal(ibv_query_qp(qp, &a, IBV_QP_STATE, &ia), 0);
	return a.qp_state;
}

/* ---- Connection management ----------------------------------------- */

/* The whole sequence: resolution, request, accept, established both
 * ways, disconnect, with private data, IRD/ORD, ports and QP states. */
static void test_event_sequence(void **state)
{
	static const char req[] = "hello from the initiator";
	static const char rep[] = "and from the responder";
	struct rdma_conn_param cp = { .private_data = req,
				      .private_data_len = sizeof(req),
				      .responder_resources = 3,
				      .initiator_depth = 2 };
	struct rdma_conn_param ap = { .private_data = rep,
				      .private_data_len = sizeof(rep),
				      .responder_resources = 2,
				      .initiator_depth = 3 };
	struct server s;
	struct end c, sv;
	struct rdma_cm_event *ev;
	struct sockaddr_in *sin;

	server_start(&s);
	client_prepare(&c, s.port, 0);
	post_recvs(&c, 2, 64);     /* receives before the connection */
	assert_int_equal(rdma_connect(c.id, &cp), 0);

	ev = expect_event(s.ch, RDMA_CM_EVENT_CONNECT_REQUEST);
	assert_int_equal(ev->status, 0);
	assert_ptr_equal(ev->listen_id, s.listen);
	assert_ptr_not_equal(ev->id, s.listen);
	assert_ptr_equal(ev->id->context, &ctx_tag);
	assert_non_null(ev->id->verbs);
	assert_int_equal(ev->param.conn.private_data_len, sizeof(req));
	assert_memory_equal(ev->param.conn.private_data, req, sizeof(req));
	/* the peer's ORD is what we answer, its IRD what we may ask */
	assert_int_equal(ev->param.conn.responder_resources, 2);
	assert_int_equal(ev->param.conn.initiator_depth, 3);
	assert_int_equal(ntohs(rdma_get_src_port(ev->id)), s.port);
	sin = (struct sockaddr_in *)rdma_get_peer_addr(ev->id);
	assert_int_equal(sin->sin_addr.s_addr, htonl(INADDR_LOOPBACK));
	memset(&sv, 0, sizeof(sv));
	sv.id = ev->id;
	end_verbs(&sv, sv.id->verbs, NULL, 0);
	assert_int_equal(rdma_accept(sv.id, &ap), 0);
	assert_int_equal(rdma_ack_cm_event(ev), 0);
	expect_ack(s.ch, RDMA_CM_EVENT_ESTABLISHED);
	assert_int_equal(qp_state(sv.id->qp), IBV_QPS_RTS);

	ev = expect_event(c.ch, RDMA_CM_EVENT_ESTABLISHED);
	assert_int_equal(ev->status, 0);
	assert_ptr_equal(ev->id, c.id);
	assert_ptr_equal(ev->id->context, &c);
	assert_int_equal(ev->param.conn.private_data_len, sizeof(rep));
	assert_memory_equal(ev->param.conn.private_data, rep, sizeof(rep));
	assert_int_equal(rdma_ack_cm_event(ev), 0);
	assert_int_equal(qp_state(c.id->qp), IBV_QPS_RTS);
	assert_int_equal(ntohs(rdma_get_dst_port(c.id)), s.port);
	assert_int_equal(rdma_get_dst_port(sv.id), rdma_get_src_port(c.id));
	assert_int_not_equal(rdma_get_src_port(c.id), 0);
	sin = (struct sockaddr_in *)rdma_get_local_addr(c.id);
	assert_int_equal(sin->sin_addr.s_addr, htonl(INADDR_LOOPBACK));

	disconnect_pair(&s, &c, &sv);
	assert_int_equal(qp_state(c.id->qp), IBV_QPS_ERR);
	assert_int_equal(qp_state(sv.id->qp), IBV_QPS_ERR);
	end_free(&c);
	end_free(&sv);
	server_stop(&s);
}

/* A rejection reaches the initiator as REJECTED with -ECONNREFUSED and
 * the responder's private data. */
static void test_reject_private_data(void **state)
{
	static const char why[] = "not today";
	struct rdma_conn_param cp = { 0 };
	struct rdma_cm_event *ev;
	struct server s;
	struct end c;

	server_start(&s);
	client_prepare(&c, s.port, 0);
	assert_int_equal(rdma_connect(c.id, &cp), 0);
	ev = expect_event(s.ch, RDMA_CM_EVENT_CONNECT_REQUEST);
	assert_int_equal(rdma_reject(ev->id, why, sizeof(why)), 0);
	assert_int_equal(rdma_destroy_id(ev->id), 0);
	assert_int_equal(rdma_ack_cm_event(ev), 0);

	ev = expect_event(c.ch, RDMA_CM_EVENT_REJECTED);
	assert_int_equal(ev->status, -ECONNREFUSED);
	assert_int_equal(ev->param.conn.private_data_len, sizeof(why));
	assert_memory_equal(ev->param.conn.private_data, why, sizeof(why));
	assert_int_equal(rdma_ack_cm_event(ev), 0);
	assert_int_equal(qp_state(c.id->qp), IBV_QPS_ERR);
	end_free(&c);
	server_stop(&s);
}

/* Nobody listens: the TCP connection is refused, which the kernel's
 * iWARP CM reports as REJECTED with -ECONNREFUSED. */
static void test_no_listener(void **state)
{
	struct sockaddr_in a = lo_addr(0);
	socklen_t len = sizeof(a);
	struct rdma_cm_event *ev;
	struct end c;
	int fd;

	/* a port that was free a moment ago, and nobody listens on */
	fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	client_prepare(&c, ntohs(a.sin_port), 0);
	assert_int_equal(rdma_connect(c.id, NULL), 0);
	ev = expect_event(c.ch, RDMA_CM_EVENT_REJECTED);
	assert_int_equal(ev->status, -ECONNREFUSED);
	assert_int_equal(rdma_ack_cm_event(ev), 0);
	close(fd);
	end_free(&c);
}

/* rdma_create_qp with no PD and no CQs: the id's PD, CQs with
 * completion channels made for it, the caps written back. */
static void test_create_qp_defaults(void **state)
{
	struct ibv_qp_init_attr qa = { .qp_type = IBV_QPT_RC,
				       .cap = { .max_send_wr = 5,
						.max_recv_wr = 7,
						.max_send_sge = 1,
						.max_recv_sge = 1 } };
	struct sockaddr_in a = lo_addr(1);
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *id;

	assert_non_null(ch);
	assert_int_equal(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP), 0);
	/* no device before the address is resolved */
	assert_int_equal(rdma_create_qp(id, NULL, &qa), -1);
	assert_int_equal(rdma_resolve_addr(id, NULL, (struct sockaddr *)&a,
					   2000), 0);
	expect_ack(ch, RDMA_CM_EVENT_ADDR_RESOLVED);
	assert_int_equal(rdma_create_qp(id, NULL, &qa), 0);
	assert_non_null(id->qp);
	assert_non_null(id->pd);
	assert_ptr_equal(id->qp->pd, id->pd);
	assert_non_null(id->send_cq);
	assert_non_null(id->recv_cq);
	assert_non_null(id->send_cq_channel);
	assert_non_null(id->recv_cq_channel);
	assert_ptr_equal(qa.send_cq, id->send_cq);
	assert_ptr_equal(qa.recv_cq, id->recv_cq);
	assert_true(qa.cap.max_send_wr >= 5);
	assert_true(qa.cap.max_recv_wr >= 7);
	/* one QP per id */
	assert_int_equal(rdma_create_qp(id, NULL, &qa), -1);
	assert_int_equal(errno, EINVAL);
	rdma_destroy_qp(id);
	assert_null(id->qp);
	assert_null(id->send_cq);
	assert_int_equal(rdma_destroy_id(id), 0);
	rdma_destroy_event_channel(ch);
}

/* rdma_destroy_id while the caller holds an event of the id returns at
 * once; the id stays readable until the event is acknowledged.  The
 * request, its accept refused first (no QP on the id), dies with it:
 * the initiator sees the reset as REJECTED with -ECONNRESET, as Linux's
 * iWARP CM reports it (a rejection proper is -ECONNREFUSED). */
static void test_destroy_with_unacked_event(void **state)
{
	struct rdma_cm_event *ev;
	struct server s;
	struct end c;

	server_start(&s);
	client_prepare(&c, s.port, 0);
	assert_int_equal(rdma_connect(c.id, NULL), 0);
	ev = expect_event(s.ch, RDMA_CM_EVENT_CONNECT_REQUEST);
	assert_int_equal(rdma_accept(ev->id, NULL), -1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(rdma_destroy_id(ev->id), 0);
	/* and the listener's, whose request it is too */
	assert_int_equal(rdma_destroy_id(s.listen), 0);
	assert_ptr_equal(ev->id->context, &ctx_tag);
	assert_ptr_equal(ev->listen_id->context, &ctx_tag);
	assert_int_equal(rdma_ack_cm_event(ev), 0);
	rdma_destroy_event_channel(s.ch);
	/* the request died with its id: the initiator is told */
	ev = expect_event(c.ch, RDMA_CM_EVENT_REJECTED);
	assert_int_equal(ev->status, -ECONNRESET);
	assert_int_equal(rdma_ack_cm_event(ev), 0);
	end_free(&c);
}

/* A channel fd made non-blocking: EAGAIN with no event. */
static void test_nonblocking_channel(void **state)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_event *ev;
	int fl;

	assert_non_null(ch);
	fl = fcntl(ch->fd, F_GETFL);
	assert_int_equal(fcntl(ch->fd, F_SETFL, fl | O_NONBLOCK), 0);
	assert_int_equal(rdma_get_cm_event(ch, &ev), -1);
	assert_int_equal(errno, EAGAIN);
	rdma_destroy_event_channel(ch);
}

/* Port 18515 bound again while a connection accepted on it lives
 * (perftest -R's second rdma_server_connect). */
static void test_rebind_while_connected(void **state)
{
	struct server s, s2;
	struct end c, sv;
	struct sockaddr_in a;

	server_start(&s);
	client_prepare(&c, s.port, 0);
	connect_pair(&s, &c, &sv, NULL, NULL, NULL);
	assert_int_equal(rdma_destroy_id(s.listen), 0);
	s.listen = NULL;

	s2.ch = rdma_create_event_channel();
	assert_non_null(s2.ch);
	assert_int_equal(rdma_create_id(s2.ch, &s2.listen, &ctx_tag,
					RDMA_PS_TCP), 0);
	a = lo_addr(s.port);
	assert_int_equal(rdma_bind_addr(s2.listen, (struct sockaddr *)&a), 0);
	assert_int_equal(rdma_listen(s2.listen, 1), 0);
	assert_int_equal(ntohs(rdma_get_src_port(s2.listen)), s.port);

	disconnect_pair(&s, &c, &sv);
	end_free(&c);
	end_free(&sv);
	rdma_destroy_event_channel(s.ch);
	server_stop(&s2);
}

/* ---- Work requests through verbs ----------------------------------- */

/* Sends: lists, bad_wr, inline data, and selective signalling: more
 * unsignalled sends than the SQ holds, each run retired by a signalled
 * one, never fill it. */
static void test_sends(void **state)
{
	struct server s;
	struct end c, sv;
	struct ibv_sge sge[3];
	struct ibv_send_wr wr[3], *bad = NULL;
	char text[] = "inline, from the stack";
	struct ibv_wc wc;

	server_start(&s);
	client_prepare(&c, s.port, 64);
	connect_pair(&s, &c, &sv, NULL, NULL, NULL);

	/* a list of three, one call */
	for (int i = 0; i < 3; i++) {
		memset(c.buf + 64 * i, 'a' + i, 64);
		sge[i] = (struct ibv_sge){ (uintptr_t)c.buf + 64 * i, 64,
					   c.mr->lkey };
		wr[i] = (struct ibv_send_wr){ .wr_id = i, .sg_list = &sge[i],
					      .num_sge = 1,
					      .opcode = IBV_WR_SEND,
					      .send_flags = IBV_SEND_SIGNALED,
					      .next = i < 2 ? &wr[i + 1] :
							      NULL };
	}
	assert_int_equal(ibv_post_send(c.id->qp, wr, &bad), 0);
	for (int i = 0; i < 3; i++) {
		wc = expect_wc(&c, IBV_WC_SEND);
		assert_int_equal(wc.wr_id, i);
		wc = expect_wc(&sv, IBV_WC_RECV);
		assert_int_equal(wc.wr_id, 100 + i);
		assert_int_equal(wc.byte_len, 64);
		assert_int_equal(*RX(&sv, i), 'a' + i);
	}

	/* the second of a list is bad (more SGEs than the QP has): the
	 * first is posted, bad_wr names the second */
	wr[1].sg_list = sge;
	wr[1].num_sge = 3;
	wr[0].next = &wr[1];
	wr[1].next = NULL;
	bad = NULL;
	assert_int_not_equal(ibv_post_send(c.id->qp, wr, &bad), 0);
	assert_ptr_equal(bad, &wr[1]);
	wc = expect_wc(&c, IBV_WC_SEND);
	assert_int_equal(wc.wr_id, 0);
	expect_wc(&sv, IBV_WC_RECV);

	/* inline: the buffer is not registered and may change at once */
	post_recvs(&sv, 1, 64);
	send_wr(&c, IBV_WR_SEND, 7, text, sizeof(text), 0,
		IBV_SEND_INLINE | IBV_SEND_SIGNALED);
	memset(text, 0, sizeof(text));
	expect_wc(&c, IBV_WC_SEND);
	wc = expect_wc(&sv, IBV_WC_RECV);
	assert_int_equal(wc.byte_len, sizeof(text));
	assert_string_equal((char *)RX(&sv, 0), "inline, from the stack");

	/* 4 * DEPTH sends, one in four signalled */
	for (int i = 0; i < 4 * DEPTH; i++) {
		if (i % DEPTH == 0)
			post_recvs(&sv, DEPTH, 64);
		send_wr(&c, IBV_WR_SEND, 1000 + i, c.buf, 8, c.mr->lkey,
			i % 4 == 3 ? IBV_SEND_SIGNALED : 0);
		if (i % 4 == 3) {
			wc = expect_wc(&c, IBV_WC_SEND);
			assert_int_equal(wc.wr_id, 1000 + i);
		}
		if (i % DEPTH == DEPTH - 1)
			for (int j = 0; j < DEPTH; j++)
				expect_wc(&sv, IBV_WC_RECV);
	}
	disconnect_pair(&s, &c, &sv);
	end_free(&c);
	end_free(&sv);
	server_stop(&s);
}

/* A completion channel across a real exchange: armed, it fires for the
 * receive, and ibv_get_cq_event names the CQ. */
static void test_completion_channel(void **state)
{
	struct server s;
	struct end c, sv;
	struct pollfd pfd;
	struct ibv_cq *cq;
	void *cq_ctx;

	server_start(&s);
	client_prepare(&c, s.port, 0);
	connect_pair(&s, &c, &sv, NULL, NULL, NULL);
	assert_int_equal(ibv_req_notify_cq(sv.cq, 0), 0);
	send_wr(&c, IBV_WR_SEND, 1, c.buf, 16, c.mr->lkey, IBV_SEND_SIGNALED);
	pfd = (struct pollfd){ .fd = sv.cc->fd, .events = POLLIN };
	assert_int_equal(poll(&pfd, 1, WAIT_MS), 1);
	assert_int_equal(ibv_get_cq_event(sv.cc, &cq, &cq_ctx), 0);
	assert_ptr_equal(cq, sv.cq);
	assert_ptr_equal(cq_ctx, &sv);
	ibv_ack_cq_events(cq, 1);
	expect_wc(&sv, IBV_WC_RECV);
	expect_wc(&c, IBV_WC_SEND);
	disconnect_pair(&s, &c, &sv);
	end_free(&c);
	end_free(&sv);
	server_stop(&s);
}

/* The receives still posted when the connection ends complete flushed. */
static void test_flush_on_disconnect(void **state)
{
	struct server s;
	struct end c, sv;
	struct ibv_wc wc;

	server_start(&s);
	client_prepare(&c, s.port, 0);
	connect_pair(&s, &c, &sv, NULL, NULL, NULL);   /* 4 receives */
	disconnect_pair(&s, &c, &sv);
	for (int i = 0; i < 4; i++) {
		wc = poll_one(&sv);
		assert_int_equal(wc.status, IBV_WC_WR_FLUSH_ERR);
		assert_int_equal(wc.wr_id, 100 + i);
	}
	assert_int_equal(ibv_poll_cq(sv.cq, 1, &wc), 0);
	end_free(&c);
	end_free(&sv);
	server_stop(&s);
}

/* perftest's server ends by destroying its QP while connected (a
 * reset), as its client posts a last receive: the post is taken and
 * completes flushed, as the verbs have it for a QP in Error. */
static void test_post_after_peer_reset(void **state)
{
	struct server s;
	struct end c, sv;
	struct ibv_wc wc;

	server_start(&s);
	client_prepare(&c, s.port, 0);
	connect_pair(&s, &c, &sv, NULL, NULL, NULL);
	rdma_destroy_qp(sv.id);
	expect_ack(c.ch, RDMA_CM_EVENT_DISCONNECTED);
	assert_int_equal(qp_state(c.id->qp), IBV_QPS_ERR);
	post_recvs(&c, 1, 64);
	send_wr(&c, IBV_WR_SEND, 7, c.buf, 8, c.mr->lkey, IBV_SEND_SIGNALED);
	for (int i = 0; i < 2; i++) {
		wc = poll_one(&c);
		assert_int_equal(wc.status, IBV_WC_WR_FLUSH_ERR);
		assert_true(wc.wr_id == 100 || wc.wr_id == 7);
	}
	assert_int_equal(ibv_poll_cq(c.cq, 1, &wc), 0);
	expect_ack(s.ch, RDMA_CM_EVENT_DISCONNECTED);
	end_free(&c);
	end_free(&sv);
	server_stop(&s);
}

/* RDMA Write and Read, the data checked; a Read into a region without
 * REMOTE_WRITE is refused (the sink is a tagged buffer the peer's Read
 * Response writes, RFC 5040 §4.4). */
static void test_write_read(void **state)
{
	struct server s;
	struct end c, sv;
	struct ibv_send_wr wr, *bad;
	struct ibv_sge sge;
	struct ibv_mr *local_only;
	uint8_t *sink;
	struct ibv_wc wc;
	int ret;

	server_start(&s);
	client_prepare(&c, s.port, 0);
	connect_pair(&s, &c, &sv, NULL, NULL, NULL);

	for (int i = 0; i < 1024; i++)
		c.buf[i] = (uint8_t)(i * 7);
	sge = (struct ibv_sge){ (uintptr_t)c.buf, 1024, c.mr->lkey };
	wr = (struct ibv_send_wr){ .wr_id = 1, .sg_list = &sge, .num_sge = 1,
				   .opcode = IBV_WR_RDMA_WRITE,
				   .send_flags = IBV_SEND_SIGNALED };
	wr.wr.rdma.remote_addr = (uintptr_t)sv.buf;
	wr.wr.rdma.rkey = sv.mr->rkey;
	assert_int_equal(ibv_post_send(c.id->qp, &wr, &bad), 0);
	/* a Send after the Write: the Write is placed when it arrives */
	send_wr(&c, IBV_WR_SEND, 2, c.buf, 4, c.mr->lkey, IBV_SEND_SIGNALED);
	expect_wc(&c, IBV_WC_RDMA_WRITE);
	expect_wc(&c, IBV_WC_SEND);
	expect_wc(&sv, IBV_WC_RECV);
	assert_memory_equal(sv.buf, c.buf, 1024);

	for (int i = 0; i < 512; i++)
		sv.buf[1024 + i] = (uint8_t)(255 - i);
	sge = (struct ibv_sge){ (uintptr_t)c.buf + 2048, 512, c.mr->lkey };
	wr = (struct ibv_send_wr){ .wr_id = 3, .sg_list = &sge, .num_sge = 1,
				   .opcode = IBV_WR_RDMA_READ,
				   .send_flags = IBV_SEND_SIGNALED };
	wr.wr.rdma.remote_addr = (uintptr_t)sv.buf + 1024;
	wr.wr.rdma.rkey = sv.mr->rkey;
	assert_int_equal(ibv_post_send(c.id->qp, &wr, &bad), 0);
	expect_wc(&c, IBV_WC_RDMA_READ);
	assert_memory_equal(c.buf + 2048, sv.buf + 1024, 512);

	/* the sink without REMOTE_WRITE */
	sink = calloc(1, 512);
	assert_non_null(sink);
	local_only = ibv_reg_mr(c.pd, sink, 512, IBV_ACCESS_LOCAL_WRITE);
	assert_non_null(local_only);
	sge = (struct ibv_sge){ (uintptr_t)sink, 512, local_only->lkey };
	wr.wr_id = 4;
	ret = ibv_post_send(c.id->qp, &wr, &bad);
	if (ret == 0) {
		wc = poll_one(&c);
		assert_int_equal(wc.wr_id, 4);
		assert_int_not_equal(wc.status, IBV_WC_SUCCESS);
	}
	for (int i = 0; i < 512; i++)
		assert_int_equal(sink[i], 0);
	assert_int_equal(rdma_disconnect(c.id), 0);
	expect_ack(c.ch, RDMA_CM_EVENT_DISCONNECTED);
	expect_ack(s.ch, RDMA_CM_EVENT_DISCONNECTED);
	assert_int_equal(ibv_dereg_mr(local_only), 0);
	free(sink);
	end_free(&c);
	end_free(&sv);
	server_stop(&s);
}

/* RFC 7306 through verbs: the atomics (original value returned, target
 * changed), Write with Immediate and a zero-length Send with Immediate
 * (the receiver sees IBV_WC_WITH_IMM and the value). */
static void test_rfc7306(void **state)
{
	struct server s;
	struct end c, sv;
	struct ibv_send_wr wr, *bad;
	struct ibv_sge sge;
	uint64_t *target, *result;
	struct ibv_wc wc;

	server_start(&s);
	client_prepare(&c, s.port, 0);
	connect_pair(&s, &c, &sv, NULL, NULL, NULL);
	target = (uint64_t *)(sv.buf + 256);
	result = (uint64_t *)(c.buf + 256);
	*target = 1000;

	sge = (struct ibv_sge){ (uintptr_t)result, 8, c.mr->lkey };
	wr = (struct ibv_send_wr){ .wr_id = 1, .sg_list = &sge, .num_sge = 1,
				   .opcode = IBV_WR_ATOMIC_FETCH_AND_ADD,
				   .send_flags = IBV_SEND_SIGNALED };
	wr.wr.atomic.remote_addr = (uintptr_t)target;
	wr.wr.atomic.rkey = sv.mr->rkey;
	wr.wr.atomic.compare_add = 42;
	assert_int_equal(ibv_post_send(c.id->qp, &wr, &bad), 0);
	expect_wc(&c, IBV_WC_FETCH_ADD);
	assert_int_equal(*result, 1000);
	assert_int_equal(*target, 1042);

	wr.wr_id = 2;
	wr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
	wr.wr.atomic.compare_add = 1042;
	wr.wr.atomic.swap = 7;
	assert_int_equal(ibv_post_send(c.id->qp, &wr, &bad), 0);
	expect_wc(&c, IBV_WC_COMP_SWAP);
	assert_int_equal(*result, 1042);
	assert_int_equal(*target, 7);
	wr.wr_id = 3;        /* no match: unchanged */
	assert_int_equal(ibv_post_send(c.id->qp, &wr, &bad), 0);
	expect_wc(&c, IBV_WC_COMP_SWAP);
	assert_int_equal(*result, 7);
	assert_int_equal(*target, 7);

	memset(c.buf, 0x5a, 300);
	sge = (struct ibv_sge){ (uintptr_t)c.buf, 300, c.mr->lkey };
	wr = (struct ibv_send_wr){ .wr_id = 4, .sg_list = &sge, .num_sge = 1,
				   .opcode = IBV_WR_RDMA_WRITE_WITH_IMM,
				   .send_flags = IBV_SEND_SIGNALED,
				   .imm_data = htonl(0x01020304) };
	wr.wr.rdma.remote_addr = (uintptr_t)sv.buf + 1024;
	wr.wr.rdma.rkey = sv.mr->rkey;
	assert_int_equal(ibv_post_send(c.id->qp, &wr, &bad), 0);
	expect_wc(&c, IBV_WC_RDMA_WRITE);
	wc = poll_one(&sv);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_true(wc.wc_flags & IBV_WC_WITH_IMM);
	assert_int_equal(wc.imm_data, htonl(0x01020304));
	assert_memory_equal(sv.buf + 1024, c.buf, 300);

	wr = (struct ibv_send_wr){ .wr_id = 5, .num_sge = 0,
				   .opcode = IBV_WR_SEND_WITH_IMM,
				   .send_flags = IBV_SEND_SIGNALED,
				   .imm_data = htonl(0xcafe) };
	assert_int_equal(ibv_post_send(c.id->qp, &wr, &bad), 0);
	expect_wc(&c, IBV_WC_SEND);
	wc = poll_one(&sv);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_true(wc.wc_flags & IBV_WC_WITH_IMM);
	assert_int_equal(wc.imm_data, htonl(0xcafe));
	assert_int_equal(wc.byte_len, 0);

	disconnect_pair(&s, &c, &sv);
	end_free(&c);
	end_free(&sv);
	server_stop(&s);
}

/* One SRQ feeds the receives of two connected QPs. */
static void test_srq_two_qps(void **state)
{
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 8, .max_sge = 1 } };
	struct ibv_srq_attr limit = { 0 };
	struct ibv_async_event ae;
	struct ibv_context *ctx;
	struct pollfd pfd;
	int fl;
	struct server s;
	struct end c[2], sv[2];
	struct ibv_context **devs;
	struct ibv_pd *pd;
	struct ibv_srq *srq;
	struct ibv_mr *mr;
	uint8_t *buf;
	uint32_t qpn[2];

	server_start(&s);
	devs = rdma_get_devices(NULL);
	assert_non_null(devs);
	pd = ibv_alloc_pd(devs[0]);
	rdma_free_devices(devs);
	assert_non_null(pd);
	srq = ibv_create_srq(pd, &sa);
	assert_non_null(srq);
	buf = calloc(8, 64);
	mr = ibv_reg_mr(pd, buf, 8 * 64, IBV_ACCESS_LOCAL_WRITE);
	assert_non_null(mr);
	for (int i = 0; i < 8; i++) {
		struct ibv_sge sge = { (uintptr_t)buf + 64 * i, 64, mr->lkey };
		struct ibv_recv_wr wr = { .wr_id = i, .sg_list = &sge,
					  .num_sge = 1 }, *bad;

		assert_int_equal(ibv_post_srq_recv(srq, &wr, &bad), 0);
	}
	for (int i = 0; i < 2; i++) {
		client_prepare(&c[i], s.port, 0);
		connect_pair(&s, &c[i], &sv[i], NULL, NULL, srq);
		qpn[i] = sv[i].id->qp->qp_num;
	}
	/* The limit event (IBV_SRQ_LIMIT): 8 posted, armed at 7; the
	 * second message leaves 6, below it.  Earlier cases' events are
	 * drained first (the async queue is the device's). */
	ctx = pd->context;
	fl = fcntl(ctx->async_fd, F_GETFL);
	assert_int_equal(fcntl(ctx->async_fd, F_SETFL, fl | O_NONBLOCK), 0);
	while (ibv_get_async_event(ctx, &ae) == 0)
		ibv_ack_async_event(&ae);
	assert_int_equal(errno, EAGAIN);
	assert_int_equal(fcntl(ctx->async_fd, F_SETFL, fl), 0);
	limit.srq_limit = 7;
	assert_int_equal(ibv_modify_srq(srq, &limit, IBV_SRQ_LIMIT), 0);
	for (int i = 0; i < 2; i++) {
		struct ibv_wc wc;

		c[i].buf[0] = (uint8_t)('x' + i);
		send_wr(&c[i], IBV_WR_SEND, 1, c[i].buf, 1, c[i].mr->lkey,
			IBV_SEND_SIGNALED);
		expect_wc(&c[i], IBV_WC_SEND);
		wc = expect_wc(&sv[i], IBV_WC_RECV);
		assert_int_equal(wc.qp_num, qpn[i]);
		assert_int_equal(buf[64 * wc.wr_id], 'x' + i);
	}
	pfd.fd = ctx->async_fd;
	pfd.events = POLLIN;
	assert_int_equal(poll(&pfd, 1, 10000), 1);
	assert_int_equal(ibv_get_async_event(ctx, &ae), 0);
	assert_int_equal(ae.event_type, IBV_EVENT_SRQ_LIMIT_REACHED);
	assert_ptr_equal(ae.element.srq, srq);
	ibv_ack_async_event(&ae);
	/* It fired, so it is disarmed (the verbs' rule). */
	assert_int_equal(ibv_query_srq(srq, &limit), 0);
	assert_int_equal(limit.srq_limit, 0);
	for (int i = 0; i < 2; i++) {
		disconnect_pair(&s, &c[i], &sv[i]);
		end_free(&c[i]);
		end_free(&sv[i]);
	}
	assert_int_equal(ibv_destroy_srq(srq), 0);
	assert_int_equal(ibv_dereg_mr(mr), 0);
	assert_int_equal(ibv_dealloc_pd(pd), 0);
	free(buf);
	server_stop(&s);
}

/* ---- uiwarp's options ----------------------------------------------- */

/* MPA revision 1 carries no IRD/ORD: the request says 0 for both. */
static void connect_rev1(struct server *s, struct end *c)
{
	struct rdma_conn_param cp = { .responder_resources = 3,
				      .initiator_depth = 2 };
	struct rdma_cm_event *ev;
	struct end sv;

	assert_int_equal(rdma_connect(c->id, &cp), 0);
	ev = expect_event(s->ch, RDMA_CM_EVENT_CONNECT_REQUEST);
	assert_int_equal(ev->param.conn.responder_resources, 0);
	assert_int_equal(ev->param.conn.initiator_depth, 0);
	memset(&sv, 0, sizeof(sv));
	sv.id = ev->id;
	end_verbs(&sv, sv.id->verbs, NULL, 0);
	post_recvs(&sv, 1, 64);
	assert_int_equal(rdma_accept(sv.id, NULL), 0);
	assert_int_equal(rdma_ack_cm_event(ev), 0);
	expect_ack(s->ch, RDMA_CM_EVENT_ESTABLISHED);
	expect_ack(c->ch, RDMA_CM_EVENT_ESTABLISHED);
	send_wr(c, IBV_WR_SEND, 1, c->buf, 32, c->mr->lkey, IBV_SEND_SIGNALED);
	expect_wc(c, IBV_WC_SEND);
	expect_wc(&sv, IBV_WC_RECV);
	disconnect_pair(s, c, &sv);
	end_free(c);
	end_free(&sv);
}

static void test_option_mpa_rev(void **state)
{
	uint8_t rev = 1, bad_rev = 3;
	uint16_t delay = 0;
	int wrong_size = 1;
	struct server s;
	struct end c;

	server_start(&s);
	client_prepare(&c, s.port, 0);
	assert_int_equal(rdma_set_option(c.id, UIW_RDMA_OPTION_LEVEL,
					 UIW_RDMA_OPT_MPA_REV, &bad_rev,
					 sizeof(bad_rev)), -1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(rdma_set_option(c.id, UIW_RDMA_OPTION_LEVEL,
					 UIW_RDMA_OPT_MPA_REV, &wrong_size,
					 sizeof(wrong_size)), -1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(rdma_set_option(c.id, UIW_RDMA_OPTION_LEVEL,
					 UIW_RDMA_OPT_MPA_REV, &rev,
					 sizeof(rev)), 0);
	assert_int_equal(rdma_set_option(c.id, UIW_RDMA_OPTION_LEVEL,
					 UIW_RDMA_OPT_START_DELAY_MS, &delay,
					 sizeof(delay)), 0);
	connect_rev1(&s, &c);
	server_stop(&s);
}

static void test_env_mpa_rev(void **state)
{
	struct server s;
	struct end c;

	server_start(&s);
	setenv("UIWARP_MPA_REV", "1", 1);
	client_prepare(&c, s.port, 0);
	connect_rev1(&s, &c);

	setenv("UIWARP_MPA_REV", "7", 1);
	client_prepare(&c, s.port, 0);
	assert_int_equal(rdma_connect(c.id, NULL), -1);
	assert_int_equal(errno, EINVAL);
	/* Peer-to-peer mode (on by default, given way to under revision
	 * 1) asked for with revision 1: refused, RFC 6581 §9.2. */
	setenv("UIWARP_MPA_REV", "1", 1);
	setenv("UIWARP_P2P", "1", 1);
	assert_int_equal(rdma_connect(c.id, NULL), -1);
	assert_int_equal(errno, EINVAL);
	unsetenv("UIWARP_P2P");
	setenv("UIWARP_MPA_REV", "2", 1);
	setenv("UIWARP_RTR", "write,bogus", 1);
	assert_int_equal(rdma_connect(c.id, NULL), -1);
	assert_int_equal(errno, EINVAL);
	unsetenv("UIWARP_RTR");
	unsetenv("UIWARP_MPA_REV");
	end_free(&c);
	server_stop(&s);
}

/* Options of other levels: the IB path is refused, the ID options rdma
 * programs set (perftest: ACK_TIMEOUT, TOS) are taken. */
static void test_other_options(void **state)
{
	struct rdma_cm_id *id;
	uint8_t u8 = 14;
	int one = 1;

	assert_int_equal(rdma_create_id(NULL, &id, NULL, RDMA_PS_TCP), 0);
	assert_int_equal(rdma_set_option(id, RDMA_OPTION_ID,
					 RDMA_OPTION_ID_ACK_TIMEOUT, &u8, 1), 0);
	assert_int_equal(rdma_set_option(id, RDMA_OPTION_ID,
					 RDMA_OPTION_ID_TOS, &u8, 1), 0);
	assert_int_equal(rdma_set_option(id, RDMA_OPTION_ID,
					 RDMA_OPTION_ID_REUSEADDR, &one,
					 sizeof(one)), 0);
	assert_int_equal(rdma_set_option(id, RDMA_OPTION_IB,
					 RDMA_OPTION_IB_PATH, &u8, 1), -1);
	assert_int_equal(errno, EOPNOTSUPP);
	assert_int_equal(rdma_destroy_id(id), 0);
	/* no unreliable datagrams on iWARP */
	assert_int_equal(rdma_create_id(NULL, &id, NULL, RDMA_PS_UDP), -1);
	assert_int_equal(errno, EOPNOTSUPP);
}

/* ---- rdma_verbs.h endpoints (synchronous ids) ----------------------- */

struct ep_client {
	uint16_t port;
	int result;
	char reply[32];
};

static void *ep_client_run(void *arg)
{
	struct ep_client *e = arg;
	struct rdma_addrinfo hints = { .ai_port_space = RDMA_PS_TCP }, *res;
	struct ibv_qp_init_attr qa = { .qp_type = IBV_QPT_RC, .sq_sig_all = 1,
				       .cap = { .max_send_wr = 2,
						.max_recv_wr = 2,
						.max_send_sge = 1,
						.max_recv_sge = 1 } };
	struct rdma_cm_id *id;
	struct ibv_mr *mr;
	struct ibv_wc wc;
	char port[8];

	e->result = -1;
	snprintf(port, sizeof(port), "%u", e->port);
	if (rdma_getaddrinfo("127.0.0.1", port, &hints, &res))
		return NULL;
	if (rdma_create_ep(&id, res, NULL, &qa)) {
		rdma_freeaddrinfo(res);
		return NULL;
	}
	rdma_freeaddrinfo(res);
	mr = rdma_reg_msgs(id, e->reply, sizeof(e->reply));
	if (mr && !rdma_post_recv(id, NULL, e->reply, sizeof(e->reply), mr) &&
	    !rdma_connect(id, NULL) && rdma_get_recv_comp(id, &wc) == 1 &&
	    wc.status == IBV_WC_SUCCESS)
		e->result = 0;
	if (mr)
		rdma_dereg_mr(mr);
	rdma_disconnect(id);
	rdma_destroy_ep(id);
	return NULL;
}

static void test_endpoints(void **state)
{
	struct rdma_addrinfo hints = { .ai_flags = RAI_PASSIVE,
				       .ai_port_space = RDMA_PS_TCP }, *res;
	struct ibv_qp_init_attr qa = { .qp_type = IBV_QPT_RC, .sq_sig_all = 1,
				       .cap = { .max_send_wr = 2,
						.max_recv_wr = 2,
						.max_send_sge = 1,
						.max_recv_sge = 1 } };
	struct ep_client cl = { 0 };
	struct rdma_cm_id *listen, *id;
	char msg[] = "welcome";
	struct ibv_mr *mr;
	struct ibv_wc wc;
	pthread_t t;

	assert_int_equal(rdma_getaddrinfo("127.0.0.1", "0", &hints, &res), 0);
	assert_non_null(res->ai_src_addr);
	assert_int_equal(rdma_create_ep(&listen, res, NULL, &qa), 0);
	rdma_freeaddrinfo(res);
	assert_int_equal(rdma_listen(listen, 1), 0);
	cl.port = ntohs(rdma_get_src_port(listen));
	assert_int_not_equal(cl.port, 0);
	/* the responder sends first: the initiator must send its RTR
	 * (RFC 6581 §9.2), a responder sends nothing before the
	 * initiator's first FPDU otherwise (RFC 5044 §7.1.2 rule 4) */
	setenv("UIWARP_P2P", "1", 1);
	assert_int_equal(pthread_create(&t, NULL, ep_client_run, &cl), 0);
	assert_int_equal(rdma_get_request(listen, &id), 0);
	assert_non_null(id->qp);
	assert_int_equal(rdma_accept(id, NULL), 0);
	mr = rdma_reg_msgs(id, msg, sizeof(msg));
	assert_non_null(mr);
	assert_int_equal(rdma_post_send(id, NULL, msg, sizeof(msg), mr, 0), 0);
	assert_int_equal(rdma_get_send_comp(id, &wc), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(pthread_join(t, NULL), 0);
	unsetenv("UIWARP_P2P");
	assert_int_equal(cl.result, 0);
	assert_string_equal(cl.reply, "welcome");
	rdma_dereg_mr(mr);
	rdma_disconnect(id);
	rdma_destroy_ep(id);
	rdma_destroy_ep(listen);
}

/* ---- Addresses, devices, what is not offered ------------------------ */

static void test_getaddrinfo(void **state)
{
	struct rdma_addrinfo hints = { .ai_flags = RAI_NUMERICHOST }, *res;
	struct sockaddr_in *sin;

	assert_int_equal(rdma_getaddrinfo("127.0.0.1", "7471", &hints, &res),
			 0);
	sin = (struct sockaddr_in *)res->ai_dst_addr;
	assert_non_null(sin);
	assert_int_equal(sin->sin_family, AF_INET);
	assert_int_equal(ntohs(sin->sin_port), 7471);
	assert_int_equal(res->ai_port_space, RDMA_PS_TCP);
	rdma_freeaddrinfo(res);
	assert_int_not_equal(rdma_getaddrinfo("localhost", "1", &hints, &res),
			     0);
	hints.ai_flags = 0;
	assert_int_equal(rdma_getaddrinfo("localhost", "1", &hints, &res), 0);
	assert_non_null(res->ai_dst_addr);
	rdma_freeaddrinfo(res);
	hints.ai_flags = RAI_PASSIVE;
	assert_int_equal(rdma_getaddrinfo(NULL, "7471", &hints, &res), 0);
	assert_non_null(res->ai_src_addr);
	assert_null(res->ai_dst_addr);
	rdma_freeaddrinfo(res);
}

static void test_devices_and_unsupported(void **state)
{
	struct ibv_context **list;
	struct pollfd pfd;
	int n = -1, p[2];

	list = rdma_get_devices(&n);
	assert_non_null(list);
	assert_int_equal(n, 1);
	assert_non_null(list[0]);
	assert_null(list[1]);
	rdma_free_devices(list);

	assert_int_equal(rsocket(AF_INET, SOCK_STREAM, 0), -1);
	assert_int_equal(errno, EOPNOTSUPP);
	assert_int_equal(pipe(p), 0);
	assert_int_equal(write(p[1], "x", 1), 1);
	pfd = (struct pollfd){ .fd = p[0], .events = POLLIN };
	assert_int_equal(rpoll(&pfd, 1, 0), 1);
	assert_true(pfd.revents & POLLIN);
	close(p[0]);
	close(p[1]);
}

/* ---- The id's state is the connection's ---------------------------- */

/* The next CONNECT_REQUEST on s, accepted without parameters on sv's
 * own verbs objects (the request acknowledged). */
static void accept_next(struct server *s, struct end *sv)
{
	struct rdma_cm_event *ev = expect_event(s->ch,
					       RDMA_CM_EVENT_CONNECT_REQUEST);

	memset(sv, 0, sizeof(*sv));
	sv->id = ev->id;
	end_verbs(sv, sv->id->verbs, NULL, 0);
	assert_int_equal(rdma_accept(sv->id, NULL), 0);
	assert_int_equal(rdma_ack_cm_event(ev), 0);
}

/* Each side's ESTABLISHED, then DISCONNECTED, all freed after. */
static void expect_up_down(struct server *s, struct end *c, struct end *sv)
{
	expect_ack(c->ch, RDMA_CM_EVENT_ESTABLISHED);
	expect_ack(c->ch, RDMA_CM_EVENT_DISCONNECTED);
	expect_ack(s->ch, RDMA_CM_EVENT_ESTABLISHED);
	expect_ack(s->ch, RDMA_CM_EVENT_DISCONNECTED);
	end_free(c);
	end_free(sv);
	server_stop(s);
}

/* perftest's server accepts and never reads its ESTABLISHED: the QP is
 * in RTS all the same, and rdma_disconnect closes gracefully (a Send
 * posted just before it still arrives), both sides seeing ESTABLISHED
 * then DISCONNECTED. */
static void test_disconnect_unread_established(void **state)
{
	struct server s;
	struct end c, sv;
	struct ibv_wc wc;

	server_start(&s);
	client_prepare(&c, s.port, 0);
	post_recvs(&c, 2, 64);
	assert_int_equal(rdma_connect(c.id, NULL), 0);
	accept_next(&s, &sv);
	/* the connection is up: the client's ESTABLISHED is proof */
	expect_ack(c.ch, RDMA_CM_EVENT_ESTABLISHED);
	assert_int_equal(qp_state(sv.id->qp), IBV_QPS_RTS);
	memcpy(sv.buf, "last words", 11);
	send_wr(&sv, IBV_WR_SEND, 1, sv.buf, 11, sv.mr->lkey,
		IBV_SEND_SIGNALED);
	assert_int_equal(rdma_disconnect(sv.id), 0);
	wc = expect_wc(&c, IBV_WC_RECV);
	assert_int_equal(wc.byte_len, 11);
	assert_string_equal((char *)RX(&c, 0), "last words");
	expect_ack(c.ch, RDMA_CM_EVENT_DISCONNECTED);
	expect_ack(s.ch, RDMA_CM_EVENT_ESTABLISHED);
	expect_ack(s.ch, RDMA_CM_EVENT_DISCONNECTED);
	end_free(&c);
	end_free(&sv);
	server_stop(&s);
}

/* The initiator disconnects while its connect is under way (before the
 * server even answers): the close follows the establishment. */
static void test_disconnect_while_connecting(void **state)
{
	struct server s;
	struct end c, sv;

	server_start(&s);
	client_prepare(&c, s.port, 0);
	assert_int_equal(rdma_connect(c.id, NULL), 0);
	assert_int_equal(rdma_disconnect(c.id), 0);
	accept_next(&s, &sv);
	expect_up_down(&s, &c, &sv);
}

/* ---- Connections before rdma_listen -------------------------------- */

/* No event on ch within SHORT_MS. */
static void expect_quiet(struct rdma_event_channel *ch)
{
	struct pollfd pfd = { .fd = ch->fd, .events = POLLIN };

	assert_int_equal(poll(&pfd, 1, SHORT_MS), 0);
}

/* qperf's order: the port, read after rdma_bind_addr, reaches a client
 * that connects before rdma_listen: its connection waits, and is
 * served once the server listens. */
static void test_connect_before_listen(void **state)
{
	struct server s;
	struct end c, sv;

	server_bind(&s);
	client_prepare(&c, s.port, 0);
	assert_int_equal(rdma_connect(c.id, NULL), 0);
	expect_quiet(c.ch);          /* not refused: waiting */
	server_listen(&s);
	accept_next(&s, &sv);
	assert_int_equal(rdma_disconnect(c.id), 0);
	expect_up_down(&s, &c, &sv);
}

/* A bound id destroyed without listening lets go of its port: the
 * connection that waited is reset (REJECTED). */
static void test_bound_destroyed_before_listen(void **state)
{
	struct rdma_cm_event *ev;
	struct server s;
	struct end c;

	server_bind(&s);
	client_prepare(&c, s.port, 0);
	assert_int_equal(rdma_connect(c.id, NULL), 0);
	expect_quiet(c.ch);
	server_stop(&s);
	ev = expect_event(c.ch, RDMA_CM_EVENT_REJECTED);
	assert_int_equal(ev->status, -ECONNRESET);
	assert_int_equal(rdma_ack_cm_event(ev), 0);
	end_free(&c);
}

/* ---- A channel destroyed under a waiter ---------------------------- */

/* The drop-in's waits, seen from here: this poll(2) takes precedence
 * over libc's for the libraries too.  A poll on watch_fd posts
 * entered, so that a test knows a thread waits inside
 * rdma_get_cm_event. */
static int watch_fd = -1;
static sem_t entered;

int poll(struct pollfd *fds, nfds_t n, int timeout)
{
	static int (*real)(struct pollfd *, nfds_t, int);

	if (!real)
		real = (int (*)(struct pollfd *, nfds_t, int))
		       dlsym(RTLD_NEXT, "poll");
	if (n == 1 && fds[0].fd >= 0 &&
	    fds[0].fd == __atomic_load_n(&watch_fd, __ATOMIC_ACQUIRE))
		sem_post(&entered);
	return real(fds, n, timeout);
}

static void *waiter_run(void *arg)
{
	struct rdma_cm_event *ev = NULL;
	int r = rdma_get_cm_event(arg, &ev);

	return (void *)(intptr_t)(r == 0 ? 0 : errno);
}

static struct timespec in_ms(long ms)
{
	struct timespec t;

	clock_gettime(CLOCK_REALTIME, &t);
	t.tv_sec += ms / 1000;
	t.tv_nsec += (ms % 1000) * 1000000L;
	if (t.tv_nsec >= 1000000000L) {
		t.tv_sec++;
		t.tv_nsec -= 1000000000L;
	}
	return t;
}

/* rping's exit (rdma-core 44): its CM thread acknowledges the last
 * event of an id the main thread has destroyed, with the channel, and
 * calls rdma_get_cm_event again: -1 with EBADF (rdma-core closed the
 * fd), never a look at freed memory. */
static void test_get_event_after_destroy(void **state)
{
	struct rdma_event_channel *ch = rdma_create_event_channel(), *ch2;
	struct sockaddr_in a = lo_addr(9);
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;

	assert_non_null(ch);
	assert_int_equal(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP), 0);
	assert_int_equal(rdma_resolve_addr(id, NULL, (struct sockaddr *)&a,
					   2000), 0);
	ev = expect_event(ch, RDMA_CM_EVENT_ADDR_RESOLVED);
	assert_int_equal(rdma_destroy_id(id), 0);
	rdma_destroy_event_channel(ch);
	/* the last acknowledgement lets the channel go */
	assert_int_equal(rdma_ack_cm_event(ev), 0);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(rdma_get_cm_event(ch, &ev), -1);
		assert_int_equal(errno, EBADF);
	}
	/* what went is used again once, not twice */
	ch = rdma_create_event_channel();
	ch2 = rdma_create_event_channel();
	assert_non_null(ch);
	assert_non_null(ch2);
	assert_ptr_not_equal(ch, ch2);
	rdma_destroy_event_channel(ch);
	rdma_destroy_event_channel(ch2);
}

/* rdma_destroy_id waits for the id's events another thread took to be
 * acknowledged (rdma-core 44 behaviour; rping's CM thread then reads
 * the channel again before its main thread destroys that). */
struct taker {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	sem_t got, go;
	int acked;               /* atomic */
};

static void *taker_run(void *arg)
{
	struct taker *t = arg;
	struct rdma_cm_event *ev;
	struct timespec ts;

	if (rdma_get_cm_event(t->ch, &ev))
		return (void *)1;
	sem_post(&t->got);
	ts = in_ms(WAIT_MS);
	if (sem_timedwait(&t->go, &ts))
		return (void *)2;
	__atomic_store_n(&t->acked, 1, __ATOMIC_RELEASE);
	return (void *)(intptr_t)rdma_ack_cm_event(ev);
}

static void *destroyer_run(void *arg)
{
	struct taker *t = arg;

	if (rdma_destroy_id(t->id))
		return (void *)1;
	/* the event was acknowledged first */
	return (void *)(intptr_t)(__atomic_load_n(&t->acked,
						  __ATOMIC_ACQUIRE) ? 0 : 2);
}

static void test_destroy_waits_for_other_thread(void **state)
{
	struct sockaddr_in a = lo_addr(9);
	struct taker t = { 0 };
	struct timespec ts;
	pthread_t th, td;
	void *ret;

	t.ch = rdma_create_event_channel();
	assert_non_null(t.ch);
	assert_int_equal(sem_init(&t.got, 0, 0), 0);
	assert_int_equal(sem_init(&t.go, 0, 0), 0);
	assert_int_equal(rdma_create_id(t.ch, &t.id, NULL, RDMA_PS_TCP), 0);
	assert_int_equal(pthread_create(&th, NULL, taker_run, &t), 0);
	assert_int_equal(rdma_resolve_addr(t.id, NULL, (struct sockaddr *)&a,
					   2000), 0);
	ts = in_ms(WAIT_MS);
	assert_int_equal(sem_timedwait(&t.got, &ts), 0);
	assert_int_equal(pthread_create(&td, NULL, destroyer_run, &t), 0);
	ts = in_ms(SHORT_MS);
	assert_int_equal(pthread_timedjoin_np(td, &ret, &ts), ETIMEDOUT);
	sem_post(&t.go);
	ts = in_ms(WAIT_MS);
	assert_int_equal(pthread_timedjoin_np(th, &ret, &ts), 0);
	assert_null(ret);
	ts = in_ms(WAIT_MS);
	assert_int_equal(pthread_timedjoin_np(td, &ret, &ts), 0);
	assert_null(ret);
	rdma_destroy_event_channel(t.ch);
	sem_destroy(&t.got);
	sem_destroy(&t.go);
}

/* A thread waiting in rdma_get_cm_event when the channel is destroyed
 * waits on (a read(2) on an fd closed under it does; rdma-core 44's
 * rping counts on it, its CM thread exiting on an error), with what it
 * waits on kept; a call after the destroy fails with EBADF; the waiter
 * cancelled, what it held goes. */
static void test_destroy_channel_under_waiter(void **state)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_event *ev;
	struct timespec t;
	pthread_t th;
	void *ret;

	assert_non_null(ch);
	assert_int_equal(sem_init(&entered, 0, 0), 0);
	__atomic_store_n(&watch_fd, ch->fd, __ATOMIC_RELEASE);
	assert_int_equal(pthread_create(&th, NULL, waiter_run, ch), 0);
	t = in_ms(WAIT_MS);
	assert_int_equal(sem_timedwait(&entered, &t), 0);
	__atomic_store_n(&watch_fd, -1, __ATOMIC_RELEASE);
	rdma_destroy_event_channel(ch);
	t = in_ms(SHORT_MS);
	assert_int_equal(pthread_timedjoin_np(th, &ret, &t), ETIMEDOUT);
	assert_int_equal(rdma_get_cm_event(ch, &ev), -1);
	assert_int_equal(errno, EBADF);
	assert_int_equal(pthread_cancel(th), 0);
	t = in_ms(WAIT_MS);
	assert_int_equal(pthread_timedjoin_np(th, &ret, &t), 0);
	assert_ptr_equal(ret, PTHREAD_CANCELED);
	sem_destroy(&entered);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_event_sequence),
		cmocka_unit_test(test_reject_private_data),
		cmocka_unit_test(test_no_listener),
		cmocka_unit_test(test_create_qp_defaults),
		cmocka_unit_test(test_destroy_with_unacked_event),
		cmocka_unit_test(test_nonblocking_channel),
		cmocka_unit_test(test_rebind_while_connected),
		cmocka_unit_test(test_sends),
		cmocka_unit_test(test_completion_channel),
		cmocka_unit_test(test_flush_on_disconnect),
		cmocka_unit_test(test_post_after_peer_reset),
		cmocka_unit_test(test_write_read),
		cmocka_unit_test(test_rfc7306),
		cmocka_unit_test(test_srq_two_qps),
		cmocka_unit_test(test_option_mpa_rev),
		cmocka_unit_test(test_env_mpa_rev),
		cmocka_unit_test(test_other_options),
		cmocka_unit_test(test_endpoints),
		cmocka_unit_test(test_getaddrinfo),
		cmocka_unit_test(test_devices_and_unsupported),
		cmocka_unit_test(test_disconnect_unread_established),
		cmocka_unit_test(test_disconnect_while_connecting),
		cmocka_unit_test(test_connect_before_listen),
		cmocka_unit_test(test_bound_destroyed_before_listen),
		cmocka_unit_test(test_get_event_after_destroy),
		cmocka_unit_test(test_destroy_channel_under_waiter),
		cmocka_unit_test(test_destroy_waits_for_other_thread),
	};

	/* the default start delay is for siw; between two uiwarp ends it
	 * only slows the tests (test_option_mpa_rev sets it per id) */
	setenv("UIWARP_START_DELAY_MS", "0", 0);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
