/*
 * uiw_peer: the host end of the interop data test, over uiwarp.  Its
 * guest counterpart is siw_peer.c; the protocol is in peer_proto.h.
 *
 *   uiw_peer -s ADDR -p PORT [options] [MODE]   listen on ADDR:PORT
 *   uiw_peer -c ADDR -p PORT [options] [MODE]   connect to ADDR:PORT
 *
 * Connection options: --mpa-rev=1|2, --crc=on|off, --p2p=send|write|read
 * (initiator: peer-to-peer mode with that RTR); --llp tcp|sctp|sctp-udp|
 * sctp-kernel (default tcp) and --udp-port N: over SCTP in UDP (RFC
 * 6951), the peer's UDP port when connecting, ours when listening.
 *
 * The data script has a host part and a guest part (peer_proto.h): this
 * program plays the host's, or with --as-guest the guest's, so that two
 * of them can face each other (uiwarp on the kernel's SCTP in the guest
 * against uiwarp on usrsctp on the host); the guest's part knows only
 * the data mode.
 *
 * Modes (after the HELLO exchange):
 *   data         (default) the data script, message sizes from -n
 *   overrun      RDMA Write of 64 octets that ends 32 octets past the
 *                guest's sink: the guest must answer with a Terminate
 *   fetch-add    RFC 7306 FetchAdd (Add Data 0) on the guest's sink
 *   cmp-swap     RFC 7306 CmpSwap on the guest's sink
 *   immediate    RFC 7306 Immediate Data
 *   write-imm    RFC 7306 RDMA Write with Immediate Data
 *   victim       wait: the guest breaks a rule, we send the Terminate
 * and --expect=remote|local[:LAYER/ETYPE/ECODE] says which Terminate must
 * end the connection (who sent it and its cause, RFC 5040 §4.8; without
 * the cause, any); the program then exits 0 only when that Terminate was
 * seen, and prints the completion status and cause in every case.
 * -t SECONDS bounds every wait (default 60).  Exit status 0 on success,
 * 1 on failure, 2 on a usage error.
 */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <uiwarp/uiwarp.h>
#include <uiwarp/cm.h>

#include "peer_proto.h"
#include "tool_util.h"

enum { WR_CTL = 100, WR_SEND, WR_WRITE, WR_READ, WR_PROBE };

enum mode {
	MODE_DATA, MODE_OVERRUN, MODE_FETCH_ADD, MODE_CMP_SWAP,
	MODE_IMMEDIATE, MODE_WRITE_IMM, MODE_VICTIM,
};

static const char *const mode_names[] = {
	"data", "overrun", "fetch-add", "cmp-swap", "immediate", "write-imm",
	"victim",
};

struct up {
	struct uiw_device *dev;
	struct uiw_cm_channel *ch;
	struct uiw_cm_id *listen_id, *id;
	struct uiw_pd *pd;
	struct uiw_cq *cq;
	struct uiw_qp *qp;
	uint8_t *recv_buf, *sink, *src, *tx, *rd, ctl[PEER_CTL_SIZE];
	uint64_t atomic_res;
	struct uiw_mr *recv_mr, *sink_mr, *src_mr, *tx_mr, *rd_mr, *ctl_mr,
		      *res_mr;
	uint32_t fifo_slot[PEER_NRECV], fifo_len[PEER_NRECV];
	unsigned fifo_head, fifo_n;
	uint32_t cur_slot;
	unsigned long done[5];		/* per WR_CTL .. WR_PROBE */
	int established, gone;
	int closing;			/* flushes are expected now */
	int failed;			/* the first failed completion: */
	struct uiw_wc fail_wc;
	int timeout_ms;
	double t_step;			/* when the current step began */
};

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static const char *wr_name(uint64_t wr_id)
{
	switch (wr_id) {
	case WR_CTL:	return "control Send";
	case WR_SEND:	return "Send";
	case WR_WRITE:	return "RDMA Write";
	case WR_READ:	return "RDMA Read";
	case WR_PROBE:	return "probe";
	}
	return wr_id < PEER_NRECV ? "Receive" : "?";
}

static const char *origin_name(uint8_t origin)
{
	switch (origin) {
	case UIW_TERM_LOCAL:	return "local";
	case UIW_TERM_REMOTE:	return "remote";
	case UIW_TERM_LLP:	return "llp";
	}
	return "none";
}

static int poll_cq(struct up *u)
{
	struct uiw_wc wc[8];
	int n, i;

	n = uiw_cq_poll(u->cq, 8, wc);
	if (n < 0) {
		fprintf(stderr, "uiw_peer: polling the CQ: %s\n",
			uiw_last_error());
		return -1;
	}
	for (i = 0; i < n; i++) {
		if (wc[i].status != UIW_WC_SUCCESS) {
			if (!u->failed && !u->closing) {
				u->failed = 1;
				u->fail_wc = wc[i];
				printf("uiw_peer: %s completed with %s; Terminate: %s, %u/%u/%u: %s\n",
				       wr_name(wc[i].wr_id),
				       uiw_wc_status_str(wc[i].status),
				       origin_name(wc[i].term.origin),
				       wc[i].term.layer, wc[i].term.etype,
				       wc[i].term.ecode,
				       uiw_term_cause_str(&wc[i].term));
			}
			continue;
		}
		if (wc[i].wr_id < PEER_NRECV) {
			unsigned t = (u->fifo_head + u->fifo_n) % PEER_NRECV;

			u->fifo_slot[t] = (uint32_t)wc[i].wr_id;
			u->fifo_len[t] = wc[i].byte_len;
			u->fifo_n++;
		} else if (wc[i].wr_id >= WR_CTL && wc[i].wr_id <= WR_PROBE) {
			u->done[wc[i].wr_id - WR_CTL]++;
		}
	}
	return n;
}

static void cm_event(struct up *u, const struct uiw_cm_event *ev)
{
	switch (ev->type) {
	case UIW_CM_EVENT_CONNECT_REQUEST:
		if (!u->id) {
			u->id = ev->id;
			if (ev->llp != UIW_LLP_TCP)
				printf("uiw_peer: connection request over SCTP: %s Initiate, IRD %u, ORD %u\n",
				       ev->peer_ird ? "enhanced" : "plain",
				       ev->peer_ird, ev->peer_ord);
			else
			printf("uiw_peer: connection request: MPA revision %u, CRC %s, peer-to-peer %s, RTR 0x%x, IRD %u, ORD %u\n",
			       ev->mpa.rev, ev->mpa.peer_crc ? "on" : "off",
			       ev->peer_p2p ? "on" : "off", ev->peer_rtr,
			       ev->peer_ird, ev->peer_ord);
		} else {
			uiw_cm_reject(ev->id, NULL, 0);
			uiw_cm_destroy_id(ev->id);
		}
		break;
	case UIW_CM_EVENT_ESTABLISHED:
		u->established = 1;
		if (ev->llp != UIW_LLP_TCP)
			printf("uiw_peer: established over SCTP: IRD %u, ORD %u\n",
			       ev->ird, ev->ord);
		else
		printf("uiw_peer: established: MPA revision %u, peer-to-peer %s, RTR 0x%x, IRD %u, ORD %u\n",
		       ev->mpa.rev, ev->p2p ? "on" : "off", ev->rtr, ev->ird,
		       ev->ord);
		break;
	case UIW_CM_EVENT_REJECTED:
	case UIW_CM_EVENT_CONNECT_ERROR:
	case UIW_CM_EVENT_DISCONNECTED:
		printf("uiw_peer: event %s (status %d)\n",
		       uiw_cm_event_str(ev->type), ev->status);
		u->gone = 1;
		break;
	default:
		break;
	}
}

/* Handles what is ready or waits for it until deadline.  Returns 0, or
 * -1 on an error or when the deadline has passed. */
static int progress(struct up *u, double deadline, const char *what)
{
	struct pollfd pfd[2];
	struct uiw_cm_event ev;
	int n, ms;

	if (u->cq) {
		n = poll_cq(u);
		if (n)
			return n < 0 ? -1 : 0;
		if (uiw_cq_req_notify(u->cq, 0)) {
			fprintf(stderr, "uiw_peer: arming the CQ: %s\n",
				uiw_last_error());
			return -1;
		}
		n = poll_cq(u);
		if (n)
			return n < 0 ? -1 : 0;
	}
	n = uiw_cm_get_event(u->ch, &ev, 0);
	if (n == 0) {
		cm_event(u, &ev);
		return 0;
	}
	if (n != -EAGAIN) {
		fprintf(stderr, "uiw_peer: reading CM events: %s\n",
			uiw_last_error());
		return -1;
	}
	ms = (int)((deadline - now()) * 1000);
	if (ms <= 0) {
		fprintf(stderr, "uiw_peer: timed out %s\n", what);
		return -1;
	}
	pfd[0] = (struct pollfd){ .fd = uiw_cm_channel_fd(u->ch),
				  .events = POLLIN };
	pfd[1] = (struct pollfd){ .fd = u->cq ? uiw_cq_fd(u->cq) : -1,
				  .events = POLLIN };
	n = poll(pfd, 2, ms);
	if (n < 0 && errno != EINTR) {
		perror("uiw_peer: poll");
		return -1;
	}
	if (n > 0 && u->cq && (pfd[1].revents & POLLIN))
		uiw_cq_ack_events(u->cq);
	return 0;
}

static double deadline(struct up *u)
{
	return now() + u->timeout_ms / 1000.0;
}

static int wait_done(struct up *u, uint64_t kind, unsigned long want)
{
	double end = deadline(u);

	while (u->done[kind - WR_CTL] < want) {
		/* A completion may be in the CQ still when the connection
		 * has just ended. */
		if (u->failed || u->gone) {
			if (poll_cq(u) > 0)
				continue;
			fprintf(stderr, "uiw_peer: the connection failed while waiting for a %s\n",
				wr_name(kind));
			return -1;
		}
		if (progress(u, end, "waiting for a completion"))
			return -1;
	}
	return 0;
}

static int post_wr(struct up *u, struct uiw_send_wr *wr)
{
	if (uiw_post_send(u->qp, wr, NULL)) {
		fprintf(stderr, "uiw_peer: posting a %s: %s\n",
			wr_name(wr->wr_id), uiw_last_error());
		return -1;
	}
	return 0;
}

static int post(struct up *u, uint64_t wr_id, enum uiw_wr_opcode op,
		void *addr, uint32_t len, uint32_t lkey, uint64_t to,
		uint32_t stag)
{
	struct uiw_sge sge = { .addr = (uintptr_t)addr, .length = len,
			       .lkey = lkey };
	struct uiw_send_wr wr = { .wr_id = wr_id, .sg_list = &sge,
				  .num_sge = 1, .opcode = op,
				  .send_flags = UIW_SEND_SIGNALED };
	unsigned long want = u->done[wr_id - WR_CTL] + 1;

	wr.wr.rdma.remote_addr = to;
	wr.wr.rdma.rkey = stag;
	if (post_wr(u, &wr))
		return -1;
	return wait_done(u, wr_id, want);
}

static int post_recv(struct up *u, uint32_t slot)
{
	struct uiw_sge sge = {
		.addr = (uintptr_t)(u->recv_buf + (size_t)slot * PEER_RECV_SIZE),
		.length = PEER_RECV_SIZE, .lkey = u->recv_mr->lkey,
	};
	struct uiw_recv_wr wr = { .wr_id = slot, .sg_list = &sge,
				  .num_sge = 1 };

	if (uiw_post_recv(u->qp, &wr, NULL)) {
		fprintf(stderr, "uiw_peer: posting a Receive: %s\n",
			uiw_last_error());
		return -1;
	}
	return 0;
}

static int op_send_ctl(void *ctx, const struct peer_ctl *c)
{
	struct up *u = ctx;

	peer_ctl_pack(c, u->ctl);
	return post(u, WR_CTL, UIW_WR_SEND, u->ctl, PEER_CTL_SIZE,
		    u->ctl_mr->lkey, 0, 0);
}

static int op_send(void *ctx, uint32_t len)
{
	struct up *u = ctx;

	return post(u, WR_SEND, UIW_WR_SEND, u->tx, len, u->tx_mr->lkey, 0, 0);
}

static int op_write(void *ctx, uint32_t len, uint64_t to, uint32_t stag)
{
	struct up *u = ctx;

	return post(u, WR_WRITE, UIW_WR_RDMA_WRITE, u->tx, len,
		    u->tx_mr->lkey, to, stag);
}

static int op_read(void *ctx, uint32_t len, uint64_t to, uint32_t stag)
{
	struct up *u = ctx;

	return post(u, WR_READ, UIW_WR_RDMA_READ, u->rd, len, u->rd_mr->lkey,
		    to, stag);
}

static int op_recv(void *ctx, const uint8_t **msg, uint32_t *len)
{
	struct up *u = ctx;
	double end = deadline(u);

	while (!u->fifo_n) {
		/* A message may be in the CQ still when the connection has
		 * just ended. */
		if (u->failed || u->gone) {
			if (poll_cq(u) > 0)
				continue;
			fprintf(stderr, "uiw_peer: the connection failed while waiting for a message\n");
			return -1;
		}
		if (progress(u, end, "waiting for a message"))
			return -1;
	}
	u->cur_slot = u->fifo_slot[u->fifo_head];
	*len = u->fifo_len[u->fifo_head];
	*msg = u->recv_buf + (size_t)u->cur_slot * PEER_RECV_SIZE;
	u->fifo_head = (u->fifo_head + 1) % PEER_NRECV;
	u->fifo_n--;
	return 0;
}

static int op_recv_done(void *ctx)
{
	struct up *u = ctx;

	return post_recv(u, u->cur_slot);
}

/* The figures: each step's time from the end of the one before, which
 * covers the acting end's filling, the transfer, the checking end's check
 * and its RESULT. */
static void op_step_done(void *ctx, uint32_t n, uint32_t step)
{
	struct up *u = ctx;
	double t = now(), dt = t - u->t_step;

	u->t_step = t;
	printf("uiw_peer: %u octets: %s: %.1f ms, %.2f MB/s\n", n,
	       peer_step_name(step), dt * 1e3, dt > 0 ? n / dt / 1e6 : 0.0);
}

static void *alloc(size_t len)
{
	void *p = NULL;

	if (posix_memalign(&p, 4096, len))
		return NULL;
	memset(p, 0, len);
	return p;
}

static struct uiw_mr *reg(struct up *u, void *buf, size_t len,
			  unsigned access, const char *what)
{
	struct uiw_mr *mr = uiw_reg_mr(u->pd, buf, len, access);

	if (!mr)
		fprintf(stderr, "uiw_peer: registering the %s: %s\n", what,
			uiw_last_error());
	return mr;
}

static int resources(struct up *u)
{
	struct uiw_qp_init_attr qa = { 0 };
	uint32_t i;

	u->dev = uiw_device_open(NULL);
	u->ch = u->dev ? uiw_cm_channel_create(u->dev) : NULL;
	u->pd = u->ch ? uiw_pd_alloc(u->dev) : NULL;
	u->cq = u->pd ? uiw_cq_create(u->dev, 32) : NULL;
	if (!u->cq) {
		fprintf(stderr, "uiw_peer: device, channel, PD or CQ: %s\n",
			uiw_last_error());
		return -1;
	}
	qa.send_cq = u->cq;
	qa.recv_cq = u->cq;
	qa.cap.max_send_wr = 8;
	qa.cap.max_recv_wr = PEER_NRECV;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	u->qp = uiw_qp_create(u->pd, &qa);
	if (!u->qp) {
		fprintf(stderr, "uiw_peer: creating the QP: %s\n",
			uiw_last_error());
		return -1;
	}
	u->recv_buf = alloc((size_t)PEER_NRECV * PEER_RECV_SIZE);
	u->sink = alloc(PEER_BUF_SIZE);
	u->src = alloc(PEER_BUF_SIZE);
	u->tx = alloc(PEER_BUF_SIZE);
	u->rd = alloc(PEER_BUF_SIZE);
	if (!u->recv_buf || !u->sink || !u->src || !u->tx || !u->rd) {
		fprintf(stderr, "uiw_peer: out of memory\n");
		return -1;
	}
	peer_fill(u->src, PEER_BUF_SIZE, PEER_SEED_SRC, 0);
	u->recv_mr = reg(u, u->recv_buf, (size_t)PEER_NRECV * PEER_RECV_SIZE,
			 UIW_ACCESS_LOCAL_WRITE, "receive buffers");
	u->sink_mr = reg(u, u->sink, PEER_BUF_SIZE, UIW_ACCESS_LOCAL_WRITE |
			 UIW_ACCESS_REMOTE_WRITE, "sink");
	u->src_mr = reg(u, u->src, PEER_BUF_SIZE, UIW_ACCESS_REMOTE_READ,
			"source");
	u->tx_mr = reg(u, u->tx, PEER_BUF_SIZE, 0, "send buffer");
	u->rd_mr = reg(u, u->rd, PEER_BUF_SIZE, UIW_ACCESS_LOCAL_WRITE,
		       "read sink");
	u->ctl_mr = reg(u, u->ctl, sizeof(u->ctl), 0, "control buffer");
	u->res_mr = reg(u, &u->atomic_res, sizeof(u->atomic_res),
			UIW_ACCESS_LOCAL_WRITE, "atomic result");
	if (!u->recv_mr || !u->sink_mr || !u->src_mr || !u->tx_mr ||
	    !u->rd_mr || !u->ctl_mr || !u->res_mr)
		return -1;
	for (i = 0; i < PEER_NRECV; i++)
		if (post_recv(u, i))
			return -1;
	return 0;
}

static int wait_established(struct up *u)
{
	double end = deadline(u);

	while (!u->established) {
		if (u->gone) {
			fprintf(stderr, "uiw_peer: the connection failed\n");
			return -1;
		}
		if (progress(u, end, "connecting"))
			return -1;
	}
	return 0;
}

static int connect_or_accept(struct up *u, int server, const char *addr,
			     const char *port, struct uiw_conn_param *cp)
{
	/* Over SCTP in UDP, the local encapsulation port of a listener:
	 * RFC 6951 §5.1 has APIs take ports other than 9899, and the
	 * tests pick a free one. */
	struct uiw_listen_param lp = { .llp = cp->llp, .backlog = 1,
				       .udp_port = cp->udp_port };
	struct sockaddr_storage ss;
	socklen_t len;
	double end;

	if (uiw_resolve(addr, port, server, &ss, &len)) {
		fprintf(stderr, "uiw_peer: %s port %s: %s\n", addr, port,
			uiw_last_error());
		return -1;
	}
	if (server) {
		if (uiw_cm_listen_ex(u->ch, (struct sockaddr *)&ss, len, &lp,
				     &u->listen_id)) {
			fprintf(stderr, "uiw_peer: listening: %s\n",
				uiw_last_error());
			return -1;
		}
		printf("uiw_peer: listening on %s port %s over %s\n", addr,
		       port, uiw_tool_llp_name(cp->llp));
		fflush(stdout);
		end = deadline(u);
		while (!u->id)
			if (progress(u, end, "waiting for a connection"))
				return -1;
		if (uiw_cm_accept(u->id, u->qp, cp)) {
			fprintf(stderr, "uiw_peer: accepting: %s\n",
				uiw_last_error());
			return -1;
		}
	} else if (uiw_cm_connect(u->ch, u->qp, (struct sockaddr *)&ss, len,
				  cp, &u->id)) {
		fprintf(stderr, "uiw_peer: connecting: %s\n", uiw_last_error());
		return -1;
	}
	if (wait_established(u))
		return -1;
	{
		struct uiw_qp_attr a;

		if (!uiw_qp_query(u->qp, &a))
			printf("uiw_peer: QP: LLP %s, CRC %s, IRD %u, ORD %u, MULPDU %u\n",
			       uiw_tool_llp_name((enum uiw_llp_kind)a.llp),
			       a.crc ? "on" : "off", a.ird, a.ord, a.mulpdu);
	}
	return 0;
}

/* Posts the operation a peer without RFC 7306 (or a sink without room)
 * must refuse. */
static int probe(struct up *u, enum mode mode, const struct peer_ctl *r)
{
	struct uiw_sge sge = { 0 };
	struct uiw_send_wr wr = { .wr_id = WR_PROBE, .sg_list = &sge,
				  .num_sge = 1,
				  .send_flags = UIW_SEND_SIGNALED };

	switch (mode) {
	case MODE_OVERRUN:
		/* 64 octets from 32 before the end of the advertised sink:
		 * RFC 5041 §7.2 base or bounds violation at the guest. */
		peer_fill(u->tx, 64, 0, 0);
		sge = (struct uiw_sge){ (uintptr_t)u->tx, 64, u->tx_mr->lkey };
		wr.opcode = UIW_WR_RDMA_WRITE;
		wr.wr.rdma.remote_addr = r->sink_addr + r->buf_len - 32;
		wr.wr.rdma.rkey = r->sink_stag;
		break;
	case MODE_FETCH_ADD:
	case MODE_CMP_SWAP:
		/* RFC 7306 §1.1: a FetchAdd with Add Data 0 probes safely. */
		sge = (struct uiw_sge){ (uintptr_t)&u->atomic_res, 8,
					u->res_mr->lkey };
		wr.opcode = mode == MODE_FETCH_ADD ? UIW_WR_ATOMIC_FETCH_ADD :
			    UIW_WR_ATOMIC_CMP_SWP;
		wr.wr.atomic.remote_addr = r->sink_addr;
		wr.wr.atomic.rkey = r->sink_stag;
		wr.wr.atomic.compare_add = 0;
		wr.wr.atomic.swap = 0;
		break;
	case MODE_IMMEDIATE:
		wr.opcode = UIW_WR_IMMEDIATE;
		wr.num_sge = 0;
		wr.sg_list = NULL;
		wr.imm_data = 0x1122334455667788ull;
		break;
	case MODE_WRITE_IMM:
		peer_fill(u->tx, 16, 0, 0);
		sge = (struct uiw_sge){ (uintptr_t)u->tx, 16, u->tx_mr->lkey };
		wr.opcode = UIW_WR_RDMA_WRITE_WITH_IMM;
		wr.wr.rdma.remote_addr = r->sink_addr;
		wr.wr.rdma.rkey = r->sink_stag;
		wr.imm_data = 0x1122334455667788ull;
		break;
	default:
		return -1;
	}
	printf("uiw_peer: posting %s\n", mode_names[mode]);
	return post_wr(u, &wr);
}

/* Waits until the QP has left RTS through a Terminate (a failed
 * completion, or a disconnection) and compares its cause. */
static int expect_term(struct up *u, int origin, int layer, int etype,
		       int ecode)
{
	struct uiw_qp_attr a;
	double end = deadline(u);
	int ok;

	while (!u->failed && !u->gone && !u->fifo_n)
		if (progress(u, end, "waiting for the Terminate"))
			return -1;
	if (u->fifo_n) {
		fprintf(stderr, "uiw_peer: a message of %u octets arrived; expected a Terminate\n",
			u->fifo_len[u->fifo_head]);
		return -1;
	}
	if (uiw_qp_query(u->qp, &a)) {
		fprintf(stderr, "uiw_peer: querying the QP: %s\n",
			uiw_last_error());
		return -1;
	}
	printf("uiw_peer: QP %s; Terminate: %s, %u/%u/%u: %s\n",
	       uiw_qp_state_str(a.state), origin_name(a.term.origin),
	       a.term.layer, a.term.etype, a.term.ecode,
	       uiw_term_cause_str(&a.term));
	if (a.term_msg[0])
		printf("uiw_peer: %s\n", a.term_msg);
	ok = a.term.origin == origin &&
	     (layer < 0 || (a.term.layer == layer && a.term.etype == etype &&
			    a.term.ecode == ecode));
	if (u->failed && u->fail_wc.term.origin != UIW_TERM_NONE &&
	    (u->fail_wc.term.origin != a.term.origin ||
	     u->fail_wc.term.layer != a.term.layer ||
	     u->fail_wc.term.etype != a.term.etype ||
	     u->fail_wc.term.ecode != a.term.ecode)) {
		fprintf(stderr, "uiw_peer: the completion and the QP disagree on the cause\n");
		ok = 0;
	}
	if (!ok && layer < 0)
		fprintf(stderr, "uiw_peer: expected a %s Terminate\n",
			origin_name((uint8_t)origin));
	else if (!ok)
		fprintf(stderr, "uiw_peer: expected a %s Terminate %d/%d/%d\n",
			origin_name((uint8_t)origin), layer, etype, ecode);
	return ok ? 0 : -1;
}

static void disconnect(struct up *u)
{
	double end = now() + 10;

	u->closing = 1;
	if (!u->gone && u->id && uiw_cm_disconnect(u->id) == 0)
		while (!u->gone && now() < end)
			if (progress(u, end, "waiting for the disconnection"))
				break;
}

/* After our BYE the guest hangs up first: siw 6.1 may still be reaping
 * the completion of its last Send (whose octets we already have), and a
 * connection we end at that moment fails that Send there with a local
 * QP operation error.  Bounded: then we hang up ourselves. */
static void await_hang_up(struct up *u, double secs)
{
	double end = now() + secs;

	u->closing = 1;
	while (!u->gone && now() < end)
		if (progress(u, end, "waiting for the peer to hang up"))
			break;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: uiw_peer -s|-c ADDR -p PORT [-n SIZES] [-t SECONDS] [--mpa-rev=1|2]\n"
		"                [--crc=on|off] [--p2p=send|write|read] [--start-delay=MS]\n"
		"                [--llp=tcp|sctp|sctp-udp|sctp-kernel] [--udp-port=N]\n"
		"                [--mode=data|overrun|fetch-add|cmp-swap|immediate|write-imm|victim]\n"
		"                [--expect=remote|local[:LAYER/ETYPE/ECODE]] [--as-guest]\n");
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "mpa-rev", required_argument, NULL, 'R' },
		{ "crc", required_argument, NULL, 'C' },
		{ "p2p", required_argument, NULL, 'P' },
		{ "mode", required_argument, NULL, 'M' },
		{ "expect", required_argument, NULL, 'E' },
		{ "start-delay", required_argument, NULL, 'D' },
		{ "llp", required_argument, NULL, 'L' },
		{ "udp-port", required_argument, NULL, 'U' },
		{ "as-guest", no_argument, NULL, 'G' },
		{ NULL, 0, NULL, 0 },
	};
	struct up u = { .timeout_ms = 60000 };
	struct peer_end e = {
		.host = 1, .ctx = &u, .send_ctl = op_send_ctl,
		.send = op_send, .write = op_write, .read = op_read,
		.recv = op_recv, .recv_done = op_recv_done,
		.step_done = op_step_done,
	};
	struct peer_ctl hello = { .type = CTL_HELLO, .buf_len = PEER_BUF_SIZE };
	struct uiw_conn_param cp = { .ird = 1, .ord = 1 };
	uint32_t sizes[PEER_MAX_SIZES];
	const char *addr = NULL, *port = NULL;
	int server = -1, nsizes = 0, op, rc, i;
	int exp_origin = -1, exp_l = -1, exp_t = 0, exp_c = 0;
	enum mode mode = MODE_DATA;
	char who[8];

	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((op = getopt_long(argc, argv, "s:c:p:n:t:", lo, NULL)) != -1) {
		switch (op) {
		case 's':
		case 'c':
			server = op == 's';
			addr = optarg;
			break;
		case 'p':
			port = optarg;
			break;
		case 'n':
			nsizes = peer_parse_sizes(optarg, sizes);
			if (nsizes < 0) {
				fprintf(stderr, "uiw_peer: bad sizes %s\n", optarg);
				return 2;
			}
			break;
		case 't':
			u.timeout_ms = atoi(optarg) * 1000;
			break;
		case 'R':
			cp.mpa_rev = (uint8_t)atoi(optarg);
			break;
		case 'C':
			cp.crc = !strcmp(optarg, "on") ? UIW_OPT_ON : UIW_OPT_OFF;
			break;
		case 'P':
			cp.p2p = UIW_OPT_ON;
			cp.rtr = !strcmp(optarg, "send") ? UIW_RTR_SEND :
				 !strcmp(optarg, "read") ? UIW_RTR_READ :
				 UIW_RTR_WRITE;
			break;
		case 'M':
			for (i = 0; i <= MODE_VICTIM; i++)
				if (!strcmp(optarg, mode_names[i]))
					break;
			if (i > MODE_VICTIM) {
				usage();
				return 2;
			}
			mode = (enum mode)i;
			break;
		case 'D':
			cp.start_delay_ms = (uint16_t)atoi(optarg);
			break;
		case 'L':
			if (uiw_tool_parse_llp(optarg, &cp.llp)) {
				usage();
				return 2;
			}
			break;
		case 'U':
			i = atoi(optarg);
			if (i <= 0 || i > 65535) {
				usage();
				return 2;
			}
			cp.udp_port = (uint16_t)i;
			break;
		case 'G':
			e.host = 0;
			break;
		case 'E':
			i = sscanf(optarg, "%7[a-z]:%d/%d/%d", who, &exp_l,
				   &exp_t, &exp_c);
			if ((i != 1 && i != 4) || (i == 1 && strchr(optarg, ':')) ||
			    (i == 4 && (exp_l < 0 || exp_t < 0 || exp_c < 0)) ||
			    (strcmp(who, "remote") && strcmp(who, "local"))) {
				usage();
				return 2;
			}
			exp_origin = !strcmp(who, "remote") ? UIW_TERM_REMOTE :
				     UIW_TERM_LOCAL;
			break;
		default:
			usage();
			return 2;
		}
	}
	/* The error modes have siw_peer at the other end. */
	if (server < 0 || !port || u.timeout_ms <= 0 ||
	    (mode != MODE_DATA) != (exp_origin >= 0) ||
	    (!e.host && mode != MODE_DATA)) {
		usage();
		return 2;
	}
	if (resources(&u) ||
	    connect_or_accept(&u, server, addr, port, &cp))
		return 1;
	e.tx = u.tx;
	e.sink = u.sink;
	e.rd = u.rd;
	hello.sink_addr = (uintptr_t)u.sink;
	hello.sink_stag = u.sink_mr->rkey;
	hello.src_addr = (uintptr_t)u.src;
	hello.src_stag = u.src_mr->rkey;
	if (peer_hello(&e, !server, &hello))
		return 1;
	if (mode == MODE_DATA) {
		u.t_step = now();
		rc = peer_run_script(&e, sizes, nsizes);
		if (!rc) {
			printf("uiw_peer: %d sizes x %d steps done\n", nsizes,
			       STEP_LAST);
			/* The guest's part hangs up after BYE, as siw_peer
			 * does. */
			if (e.host)
				await_hang_up(&u, 10);
		}
	} else {
		struct peer_ctl r;

		/* The guest waits for nothing once it has said READY. */
		rc = peer_recv_ctl(&e, CTL_RESULT, &r, "READY") ||
		     (mode != MODE_VICTIM && probe(&u, mode, &e.remote));
		if (!rc)
			rc = expect_term(&u, exp_origin, exp_l, exp_t, exp_c);
	}
	disconnect(&u);
	/* Resources go with the process. */
	return rc ? 1 : 0;
}
