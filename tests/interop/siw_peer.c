/*
 * siw_peer: the guest end of the interop data test, over libibverbs and
 * librdmacm (and so over Linux siw).  Built on the host against the
 * rdma-core headers of the guest's own libraries (build-peer.sh) and
 * copied into the guest.  The protocol is in peer_proto.h.
 *
 *   siw_peer -s ADDR -p PORT [-n SIZES] [MODE]   listen on ADDR:PORT
 *   siw_peer -c ADDR -p PORT [-n SIZES] [MODE]   connect to ADDR:PORT
 *
 * Modes (after the HELLO exchange):
 *   (none)         the data script with the message sizes of -n
 *   --expect-fail  wait for the connection to fail (the host breaks a
 *                  rule and siw answers with a Terminate): success when
 *                  the QP fails, failure when a message arrives
 *   --bad-read     RDMA Read from the host's source with a wrong STag:
 *                  success when the Read completes with an error
 * -t SECONDS bounds every wait (default 60); -v puts the time on every
 * message.  Exit status 0 on success,
 * 1 on failure, 2 on a usage error.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "peer_proto.h"

enum { WR_CTL = 100, WR_SEND, WR_WRITE, WR_READ };

struct sp {
	struct rdma_event_channel *ech;
	struct rdma_cm_id *listen_id, *id;
	struct ibv_pd *pd;
	struct ibv_comp_channel *cc;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	uint8_t *recv_buf, *sink, *src, *tx, *rd, ctl[PEER_CTL_SIZE];
	struct ibv_mr *recv_mr, *sink_mr, *src_mr, *tx_mr, *rd_mr, *ctl_mr;
	/* Completed receives in arrival order (slot, length). */
	uint32_t fifo_slot[PEER_NRECV], fifo_len[PEER_NRECV];
	unsigned fifo_head, fifo_n;
	uint32_t cur_slot;
	unsigned long done[4];		/* per WR_CTL.. WR_READ */
	int established, gone;
	int closing;			/* flushes are expected now */
	/* The first failed completion. */
	int failed;
	enum ibv_wc_status fail_status;
	uint64_t fail_wr_id;
	int read_done;			/* the RDMA Read completed: */
	enum ibv_wc_status read_status;
	int timeout_ms;
};

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double t_start;
static int verbose;

/* "siw_peer: ", with -v the seconds since the start too. */
static const char *tag(void)
{
	static char buf[40];

	if (!verbose)
		return "siw_peer: ";
	snprintf(buf, sizeof(buf), "siw_peer [%.3f]: ", now() - t_start);
	return buf;
}

static const char *wr_name(uint64_t wr_id)
{
	switch (wr_id) {
	case WR_CTL:	return "control Send";
	case WR_SEND:	return "Send";
	case WR_WRITE:	return "RDMA Write";
	case WR_READ:	return "RDMA Read";
	}
	return wr_id < PEER_NRECV ? "Receive" : "?";
}

static void cm_event(struct sp *s, struct rdma_cm_event *ev)
{
	switch (ev->event) {
	case RDMA_CM_EVENT_ESTABLISHED:
		s->established = 1;
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
	case RDMA_CM_EVENT_CONNECT_ERROR:
	case RDMA_CM_EVENT_REJECTED:
	case RDMA_CM_EVENT_UNREACHABLE:
		printf("%sevent %s (status %d)\n", tag(),
		       rdma_event_str(ev->event), ev->status);
		s->gone = 1;
		break;
	default:
		break;
	}
}

static int poll_cq(struct sp *s)
{
	struct ibv_wc wc[8];
	int n, i;

	n = ibv_poll_cq(s->cq, 8, wc);
	if (n < 0) {
		fprintf(stderr, "%sibv_poll_cq failed\n", tag());
		return -1;
	}
	for (i = 0; i < n; i++) {
		if (wc[i].wr_id == WR_READ) {
			s->read_done = 1;
			s->read_status = wc[i].status;
		}
		if (wc[i].status != IBV_WC_SUCCESS) {
			if (!s->failed && !s->closing) {
				s->failed = 1;
				s->fail_status = wc[i].status;
				s->fail_wr_id = wc[i].wr_id;
				printf("%s%s completed with status %d (%s)\n", tag(),
				       wr_name(wc[i].wr_id), wc[i].status,
				       ibv_wc_status_str(wc[i].status));
			}
			continue;
		}
		if (wc[i].wr_id < PEER_NRECV) {
			unsigned t = (s->fifo_head + s->fifo_n) % PEER_NRECV;

			s->fifo_slot[t] = (uint32_t)wc[i].wr_id;
			s->fifo_len[t] = wc[i].byte_len;
			s->fifo_n++;
		} else if (wc[i].wr_id >= WR_CTL && wc[i].wr_id <= WR_READ) {
			s->done[wc[i].wr_id - WR_CTL]++;
		}
	}
	return n;
}

/* Handles what is ready, or waits for it up to ms.  Returns -1 on error
 * or timeout (deadline passed), 0 otherwise. */
static int progress(struct sp *s, double deadline, const char *what)
{
	struct pollfd pfd[2];
	struct ibv_cq *ev_cq;
	void *ev_ctx;
	int n, ms;

	if (s->cq) {
		n = poll_cq(s);
		if (n)
			return n < 0 ? -1 : 0;
		if (ibv_req_notify_cq(s->cq, 0)) {
			fprintf(stderr, "%sibv_req_notify_cq failed\n", tag());
			return -1;
		}
		n = poll_cq(s);
		if (n)
			return n < 0 ? -1 : 0;
	}
	ms = (int)((deadline - now()) * 1000);
	if (ms <= 0) {
		fprintf(stderr, "%stimed out %s\n", tag(), what);
		return -1;
	}
	pfd[0] = (struct pollfd){ .fd = s->ech->fd, .events = POLLIN };
	pfd[1] = (struct pollfd){ .fd = s->cc ? s->cc->fd : -1,
				  .events = POLLIN };
	n = poll(pfd, 2, ms);
	if (n < 0 && errno != EINTR) {
		perror("siw_peer: poll");
		return -1;
	}
	if (n > 0 && (pfd[0].revents & POLLIN)) {
		struct rdma_cm_event *ev;

		if (rdma_get_cm_event(s->ech, &ev) == 0) {
			struct rdma_cm_event copy = *ev;

			rdma_ack_cm_event(ev);
			if (copy.event == RDMA_CM_EVENT_CONNECT_REQUEST &&
			    !s->id) {
				s->id = copy.id;
			} else {
				cm_event(s, &copy);
			}
		}
	}
	if (n > 0 && s->cc && (pfd[1].revents & POLLIN) &&
	    ibv_get_cq_event(s->cc, &ev_cq, &ev_ctx) == 0)
		ibv_ack_cq_events(ev_cq, 1);
	return 0;
}

static double deadline(struct sp *s)
{
	return now() + s->timeout_ms / 1000.0;
}

/* Waits until done[kind] reaches want.  Fails on a failed completion. */
static int wait_done(struct sp *s, int kind, unsigned long want)
{
	double end = deadline(s);

	while (s->done[kind - WR_CTL] < want) {
		/* A completion may be in the CQ still when the connection
		 * has just ended. */
		if ((s->failed || s->gone) && poll_cq(s) > 0)
			continue;
		if (s->failed) {
			fprintf(stderr, "%sthe QP failed while waiting for a %s\n", tag(),
				wr_name(kind));
			return -1;
		}
		if (s->gone) {
			fprintf(stderr, "%sthe connection ended while waiting for a %s\n", tag(),
				wr_name(kind));
			return -1;
		}
		if (progress(s, end, "waiting for a completion"))
			return -1;
	}
	return 0;
}

static int post(struct sp *s, uint64_t wr_id, enum ibv_wr_opcode op,
		void *addr, uint32_t len, uint32_t lkey, uint64_t to,
		uint32_t stag)
{
	struct ibv_sge sge = { .addr = (uintptr_t)addr, .length = len,
			       .lkey = lkey };
	struct ibv_send_wr wr = { .wr_id = wr_id, .sg_list = &sge,
				  .num_sge = 1, .opcode = op,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	unsigned long want = s->done[wr_id - WR_CTL] + 1;

	wr.wr.rdma.remote_addr = to;
	wr.wr.rdma.rkey = stag;
	if (ibv_post_send(s->qp, &wr, &bad)) {
		fprintf(stderr, "%sposting a %s failed\n", tag(),
			wr_name(wr_id));
		return -1;
	}
	return wait_done(s, (int)wr_id, want);
}

static int post_recv(struct sp *s, uint32_t slot)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)(s->recv_buf + (size_t)slot * PEER_RECV_SIZE),
		.length = PEER_RECV_SIZE, .lkey = s->recv_mr->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = slot, .sg_list = &sge,
				  .num_sge = 1 }, *bad;

	if (ibv_post_recv(s->qp, &wr, &bad)) {
		fprintf(stderr, "%sposting a Receive failed\n", tag());
		return -1;
	}
	return 0;
}

/* peer_end operations */
static int op_send_ctl(void *ctx, const struct peer_ctl *c)
{
	struct sp *s = ctx;

	peer_ctl_pack(c, s->ctl);
	return post(s, WR_CTL, IBV_WR_SEND, s->ctl, PEER_CTL_SIZE,
		    s->ctl_mr->lkey, 0, 0);
}

static int op_send(void *ctx, uint32_t len)
{
	struct sp *s = ctx;

	return post(s, WR_SEND, IBV_WR_SEND, s->tx, len, s->tx_mr->lkey, 0, 0);
}

static int op_write(void *ctx, uint32_t len, uint64_t to, uint32_t stag)
{
	struct sp *s = ctx;

	return post(s, WR_WRITE, IBV_WR_RDMA_WRITE, s->tx, len,
		    s->tx_mr->lkey, to, stag);
}

static int op_read(void *ctx, uint32_t len, uint64_t to, uint32_t stag)
{
	struct sp *s = ctx;

	return post(s, WR_READ, IBV_WR_RDMA_READ, s->rd, len, s->rd_mr->lkey,
		    to, stag);
}

static int op_recv(void *ctx, const uint8_t **msg, uint32_t *len)
{
	struct sp *s = ctx;
	double end = deadline(s);

	while (!s->fifo_n) {
		/* A message may be in the CQ still when the connection has
		 * just ended. */
		if (s->failed || s->gone) {
			if (poll_cq(s) > 0)
				continue;
			fprintf(stderr, "%sthe connection failed while waiting for a message\n", tag());
			return -1;
		}
		if (progress(s, end, "waiting for a message"))
			return -1;
	}
	s->cur_slot = s->fifo_slot[s->fifo_head];
	*len = s->fifo_len[s->fifo_head];
	*msg = s->recv_buf + (size_t)s->cur_slot * PEER_RECV_SIZE;
	s->fifo_head = (s->fifo_head + 1) % PEER_NRECV;
	s->fifo_n--;
	return 0;
}

static int op_recv_done(void *ctx)
{
	struct sp *s = ctx;

	return post_recv(s, s->cur_slot);
}

static struct ibv_mr *reg(struct sp *s, void *buf, size_t len, int access,
			  const char *what)
{
	struct ibv_mr *mr = ibv_reg_mr(s->pd, buf, len, access);

	if (!mr)
		fprintf(stderr, "%sregistering the %s: %s\n", tag(), what,
			strerror(errno));
	return mr;
}

static void *alloc(size_t len)
{
	void *p = NULL;

	if (posix_memalign(&p, 4096, len))
		return NULL;
	memset(p, 0, len);
	return p;
}

/* PD, CQ, QP and buffers on the id's device; receives posted. */
static int resources(struct sp *s)
{
	struct ibv_qp_init_attr qa;
	uint32_t i;

	s->pd = ibv_alloc_pd(s->id->verbs);
	s->cc = s->pd ? ibv_create_comp_channel(s->id->verbs) : NULL;
	s->cq = s->cc ? ibv_create_cq(s->id->verbs, 32, NULL, s->cc, 0) : NULL;
	if (!s->cq) {
		fprintf(stderr, "%sPD, channel or CQ: %s\n", tag(),
			strerror(errno));
		return -1;
	}
	memset(&qa, 0, sizeof(qa));
	qa.send_cq = s->cq;
	qa.recv_cq = s->cq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = 8;
	qa.cap.max_recv_wr = PEER_NRECV;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	if (rdma_create_qp(s->id, s->pd, &qa)) {
		perror("siw_peer: rdma_create_qp");
		return -1;
	}
	s->qp = s->id->qp;
	s->recv_buf = alloc((size_t)PEER_NRECV * PEER_RECV_SIZE);
	s->sink = alloc(PEER_BUF_SIZE);
	s->src = alloc(PEER_BUF_SIZE);
	s->tx = alloc(PEER_BUF_SIZE);
	s->rd = alloc(PEER_BUF_SIZE);
	if (!s->recv_buf || !s->sink || !s->src || !s->tx || !s->rd) {
		fprintf(stderr, "%sout of memory\n", tag());
		return -1;
	}
	peer_fill(s->src, PEER_BUF_SIZE, PEER_SEED_SRC, 0);
	s->recv_mr = reg(s, s->recv_buf, (size_t)PEER_NRECV * PEER_RECV_SIZE,
			 IBV_ACCESS_LOCAL_WRITE, "receive buffers");
	s->sink_mr = reg(s, s->sink, PEER_BUF_SIZE, IBV_ACCESS_LOCAL_WRITE |
			 IBV_ACCESS_REMOTE_WRITE, "sink");
	s->src_mr = reg(s, s->src, PEER_BUF_SIZE, IBV_ACCESS_REMOTE_READ,
			"source");
	s->tx_mr = reg(s, s->tx, PEER_BUF_SIZE, 0, "send buffer");
	s->rd_mr = reg(s, s->rd, PEER_BUF_SIZE, IBV_ACCESS_LOCAL_WRITE,
		       "read sink");
	s->ctl_mr = reg(s, s->ctl, sizeof(s->ctl), 0, "control buffer");
	if (!s->recv_mr || !s->sink_mr || !s->src_mr || !s->tx_mr ||
	    !s->rd_mr || !s->ctl_mr)
		return -1;
	for (i = 0; i < PEER_NRECV; i++)
		if (post_recv(s, i))
			return -1;
	return 0;
}

static int wait_cm(struct sp *s, int *flag, const char *what)
{
	double end = deadline(s);

	while (!*flag) {
		if (s->gone) {
			fprintf(stderr, "%sconnection failed %s\n", tag(), what);
			return -1;
		}
		if (progress(s, end, what))
			return -1;
	}
	return 0;
}

/* A CM event of one type on the client's id (address and route). */
static int wait_cm_event(struct sp *s, enum rdma_cm_event_type type)
{
	struct rdma_cm_event *ev;
	int ok;

	if (rdma_get_cm_event(s->ech, &ev)) {
		perror("siw_peer: rdma_get_cm_event");
		return -1;
	}
	ok = ev->event == type;
	if (!ok)
		fprintf(stderr, "%sevent %s, expected %s (status %d)\n", tag(),
			rdma_event_str(ev->event), rdma_event_str(type),
			ev->status);
	rdma_ack_cm_event(ev);
	return ok ? 0 : -1;
}

static int connect_or_accept(struct sp *s, int server, const char *addr,
			     int port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET,
				   .sin_port = htons((uint16_t)port) };
	struct rdma_conn_param cp = { .responder_resources = 1,
				      .initiator_depth = 1,
				      .retry_count = 7 };
	int rc;

	if (inet_pton(AF_INET, addr, &sin.sin_addr) != 1) {
		fprintf(stderr, "%sbad address %s\n", tag(), addr);
		return -1;
	}
	s->ech = rdma_create_event_channel();
	if (!s->ech) {
		perror("siw_peer: rdma_create_event_channel");
		return -1;
	}
	if (server) {
		if (rdma_create_id(s->ech, &s->listen_id, NULL, RDMA_PS_TCP) ||
		    rdma_bind_addr(s->listen_id, (struct sockaddr *)&sin) ||
		    rdma_listen(s->listen_id, 1)) {
			perror("siw_peer: listen");
			return -1;
		}
		printf("%slistening on %s port %d\n", tag(), addr, port);
		fflush(stdout);
		while (!s->id) {
			double end = deadline(s);

			if (progress(s, end, "waiting for a connection"))
				return -1;
		}
		if (resources(s))
			return -1;
		if (rdma_accept(s->id, &cp)) {
			perror("siw_peer: rdma_accept");
			return -1;
		}
	} else {
		if (rdma_create_id(s->ech, &s->id, NULL, RDMA_PS_TCP) ||
		    rdma_resolve_addr(s->id, NULL, (struct sockaddr *)&sin,
				      5000) ||
		    wait_cm_event(s, RDMA_CM_EVENT_ADDR_RESOLVED) ||
		    rdma_resolve_route(s->id, 5000) ||
		    wait_cm_event(s, RDMA_CM_EVENT_ROUTE_RESOLVED)) {
			perror("siw_peer: resolving the address");
			return -1;
		}
		if (resources(s))
			return -1;
		if (rdma_connect(s->id, &cp)) {
			perror("siw_peer: rdma_connect");
			return -1;
		}
	}
	rc = wait_cm(s, &s->established, "connecting");
	if (!rc)
		printf("%sconnected\n", tag());
	return rc;
}

static void disconnect(struct sp *s)
{
	double end = now() + 10;

	s->closing = 1;
	if (!s->gone && s->id)
		rdma_disconnect(s->id);
	while (!s->gone && now() < end)
		if (progress(s, end, "waiting for the disconnection"))
			break;
}

/* After the HELLO exchange of the error modes: tells the host that this
 * end waits for nothing any more, so that the rule the host breaks next
 * cannot catch one of our own work requests (the Send of READY itself
 * may fail then: it is not waited for). */
static int post_ready(struct sp *s)
{
	struct peer_ctl r = { .type = CTL_RESULT, .text = "ready" };
	struct ibv_sge sge = { .addr = (uintptr_t)s->ctl,
			       .length = PEER_CTL_SIZE,
			       .lkey = s->ctl_mr->lkey };
	struct ibv_send_wr wr = { .wr_id = WR_CTL, .sg_list = &sge,
				  .num_sge = 1, .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;

	peer_ctl_pack(&r, s->ctl);
	if (ibv_post_send(s->qp, &wr, &bad)) {
		fprintf(stderr, "%sposting READY failed\n", tag());
		return -1;
	}
	return 0;
}

static int expect_fail(struct sp *s)
{
	double end = deadline(s);

	/* The host breaks a rule; siw sends a Terminate and the QP fails:
	 * the posted receives are flushed. */
	while (!s->failed && !s->gone && !s->fifo_n)
		if (progress(s, end, "waiting for the connection to fail"))
			return -1;
	if (s->fifo_n) {
		fprintf(stderr, "%sa message of %u octets arrived; expected the connection to fail\n", tag(),
			s->fifo_len[s->fifo_head]);
		return -1;
	}
	printf("%sthe connection failed as expected\n", tag());
	return 0;
}

static int bad_read(struct sp *s, struct peer_end *e)
{
	struct ibv_sge sge = { .addr = (uintptr_t)s->rd, .length = 64,
			       .lkey = s->rd_mr->lkey };
	struct ibv_send_wr wr = { .wr_id = WR_READ, .sg_list = &sge,
				  .num_sge = 1, .opcode = IBV_WR_RDMA_READ,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	double end = deadline(s);

	/* The host's source STag with its 8-bit key changed: no such STag
	 * (RFC 5040 §2.1). */
	wr.wr.rdma.remote_addr = e->remote.src_addr;
	wr.wr.rdma.rkey = e->remote.src_stag ^ 0x5a;
	printf("%sRDMA Read from STag 0x%08x (the host's is 0x%08x)\n", tag(),
	       wr.wr.rdma.rkey, e->remote.src_stag);
	if (ibv_post_send(s->qp, &wr, &bad)) {
		fprintf(stderr, "%sposting the RDMA Read failed\n", tag());
		return -1;
	}
	/* Its completion comes, in error, even when the connection is gone
	 * by then (flushed). */
	while (!s->read_done)
		if (progress(s, end, "waiting for the RDMA Read"))
			return -1;
	if (s->read_status == IBV_WC_SUCCESS) {
		fprintf(stderr, "%sthe RDMA Read with a wrong STag succeeded\n", tag());
		return -1;
	}
	printf("%sthe RDMA Read failed as expected: %s\n", tag(),
	       ibv_wc_status_str(s->read_status));
	return 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: siw_peer -s|-c ADDR -p PORT [-n SIZES] [-t SECONDS] [-v] [--expect-fail|--bad-read]\n");
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "expect-fail", no_argument, NULL, 'F' },
		{ "bad-read", no_argument, NULL, 'B' },
		{ NULL, 0, NULL, 0 },
	};
	struct sp s = { .timeout_ms = 60000 };
	struct peer_end e = {
		.host = 0, .ctx = &s, .send_ctl = op_send_ctl,
		.send = op_send, .write = op_write, .read = op_read,
		.recv = op_recv, .recv_done = op_recv_done,
	};
	struct peer_ctl hello = { .type = CTL_HELLO, .buf_len = PEER_BUF_SIZE };
	uint32_t sizes[PEER_MAX_SIZES];
	const char *addr = NULL;
	int server = -1, port = 0, nsizes = 0, mode = 0, op, rc;

	setvbuf(stdout, NULL, _IOLBF, 0);
	t_start = now();
	while ((op = getopt_long(argc, argv, "s:c:p:n:t:v", lo, NULL)) != -1) {
		switch (op) {
		case 'v':
			verbose = 1;
			break;
		case 's':
		case 'c':
			server = op == 's';
			addr = optarg;
			break;
		case 'p':
			port = atoi(optarg);
			break;
		case 'n':
			nsizes = peer_parse_sizes(optarg, sizes);
			if (nsizes < 0) {
				fprintf(stderr, "%sbad sizes %s\n", tag(), optarg);
				return 2;
			}
			break;
		case 't':
			s.timeout_ms = atoi(optarg) * 1000;
			break;
		case 'F':
		case 'B':
			mode = op;
			break;
		default:
			usage();
			return 2;
		}
	}
	if (server < 0 || port <= 0 || port > 65535 || s.timeout_ms <= 0) {
		usage();
		return 2;
	}
	if (connect_or_accept(&s, server, addr, port))
		return 1;
	e.tx = s.tx;
	e.sink = s.sink;
	e.rd = s.rd;
	hello.sink_addr = (uintptr_t)s.sink;
	hello.sink_stag = s.sink_mr->rkey;
	hello.src_addr = (uintptr_t)s.src;
	hello.src_stag = s.src_mr->rkey;
	if (peer_hello(&e, !server, &hello))
		return 1;
	if (mode == 'F')
		rc = post_ready(&s) || expect_fail(&s);
	else if (mode == 'B')
		rc = post_ready(&s) || bad_read(&s, &e);
	else {
		rc = peer_run_script(&e, sizes, nsizes);
		if (!rc)
			printf("%s%d sizes x %d steps done\n", tag(), nsizes,
			       STEP_LAST);
	}
	disconnect(&s);
	/* Resources go with the process. */
	return rc ? 1 : 0;
}
