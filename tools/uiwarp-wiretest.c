/*
 * uiwarp-wiretest: one loopback session that uses every RDMA operation,
 * made to be captured and decoded by tshark (tests/wire/test_tshark.sh).
 *
 * A server end and a client end in one process, on two devices,
 * connected over 127.0.0.1 through the connection manager with CRC and
 * markers in both directions (by default).  The session carries Send,
 * Send with SE, Send with Invalidate, Send with SE and Invalidate, RDMA
 * Write, RDMA Read, zero-length messages, messages of several FPDUs, in
 * both directions, and ends with a graceful close.  With -t a second
 * connection follows that ends in a Terminate (a Write to an invalid
 * STag).  Every transfer is verified.
 *
 * Output on stdout, one line each:
 *   port <n>                      once listening (then, with -w, it
 *                                 waits for a line on stdin)
 *   mulpdu <n>                    the client's MULPDU
 *   messages <opcode>=<count> ... RDMAP messages sent, per opcode
 *                                 (RFC 5040 numbering), both directions
 *   multi <n>                     messages that needed several FPDUs
 *   ok
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uiwarp/uiwarp.h>
#include <uiwarp/cm.h>

#define TIMEOUT_MS 30000
#define ACC_ALL (UIW_ACCESS_LOCAL_WRITE | UIW_ACCESS_REMOTE_WRITE | \
		 UIW_ACCESS_REMOTE_READ)
#define BUF_LEN (1024 * 1024)

/* RFC 5040 §4.3 opcodes */
enum {
	RDMAP_WRITE = 0,
	RDMAP_READ_REQ = 1,
	RDMAP_READ_RESP = 2,
	RDMAP_SEND = 3,
	RDMAP_SEND_INV = 4,
	RDMAP_SEND_SE = 5,
	RDMAP_SEND_SE_INV = 6,
	RDMAP_TERMINATE = 7,
	RDMAP_NOPS = 8,
};

static const char *const rdmap_names[RDMAP_NOPS] = {
	"write", "read_req", "read_resp", "send", "send_inv", "send_se",
	"send_se_inv", "terminate",
};

struct end {
	const char *name;
	struct uiw_device *dev;
	struct uiw_pd *pd;
	struct uiw_cq *cq;
	struct uiw_qp *qp;
	struct uiw_cm_channel *ch;
	struct uiw_cm_id *id;
	struct uiw_mr *mr;
	uint8_t *buf;
	struct uiw_qp_attr attr;
	int own_dev;
};

static unsigned counts[RDMAP_NOPS];
static unsigned multi_fpdu;
static uint64_t next_id = 1;

static void die(const char *fmt, ...)
	__attribute__((noreturn, format(printf, 1, 2)));
static void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "uiwarp-wiretest: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	exit(1);
}

static void check(int rc, const char *what)
{
	if (rc < 0)
		die("%s: %s (%s)", what, strerror(-rc), uiw_last_error());
}

static void *check_ptr(void *p, const char *what)
{
	if (!p)
		die("%s: %s (%s)", what, strerror(errno), uiw_last_error());
	return p;
}

static void fill(uint8_t *p, size_t n, unsigned seed)
{
	uint32_t x = seed * 2654435761u + 1;
	size_t i;

	for (i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		p[i] = (uint8_t)x;
	}
}

static void verify(const uint8_t *p, size_t n, unsigned seed,
		   const char *what)
{
	uint32_t x = seed * 2654435761u + 1;
	size_t i;

	for (i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		if (p[i] != (uint8_t)x)
			die("%s: data differs at offset %zu", what, i);
	}
}

/* dev: the device to use, or NULL for a new one of its own. */
static void end_init(struct end *e, const char *name, struct uiw_device *dev)
{
	struct uiw_qp_init_attr ia;
	void *mem = NULL;

	memset(e, 0, sizeof(*e));
	e->name = name;
	e->dev = dev;
	if (!dev) {
		e->dev = check_ptr(uiw_device_open(NULL), "uiw_device_open");
		e->own_dev = 1;
	}
	e->pd = check_ptr(uiw_pd_alloc(e->dev), "uiw_pd_alloc");
	e->cq = check_ptr(uiw_cq_create(e->dev, 256), "uiw_cq_create");
	memset(&ia, 0, sizeof(ia));
	ia.send_cq = e->cq;
	ia.recv_cq = e->cq;
	ia.cap.max_send_wr = 64;
	ia.cap.max_recv_wr = 64;
	ia.cap.max_send_sge = 2;
	ia.cap.max_recv_sge = 2;
	e->qp = check_ptr(uiw_qp_create(e->pd, &ia), "uiw_qp_create");
	if (posix_memalign(&mem, 4096, BUF_LEN))
		die("out of memory");
	e->buf = mem;
	memset(e->buf, 0, BUF_LEN);
	e->mr = check_ptr(uiw_reg_mr(e->pd, e->buf, BUF_LEN, ACC_ALL),
			  "uiw_reg_mr");
}

static void end_free(struct end *e)
{
	if (e->id)
		check(uiw_cm_destroy_id(e->id), "uiw_cm_destroy_id");
	check(uiw_qp_destroy(e->qp), "uiw_qp_destroy");
	check(uiw_dereg_mr(e->mr), "uiw_dereg_mr");
	check(uiw_cq_destroy(e->cq), "uiw_cq_destroy");
	check(uiw_pd_free(e->pd), "uiw_pd_free");
	if (e->ch)
		check(uiw_cm_channel_destroy(e->ch), "uiw_cm_channel_destroy");
	if (e->own_dev)
		check(uiw_device_close(e->dev), "uiw_device_close");
	free(e->buf);
}

static void wait_event(struct uiw_cm_channel *ch, enum uiw_cm_event_type t,
		       struct uiw_cm_event *out)
{
	struct uiw_cm_event ev;
	int rc;

	for (;;) {
		rc = uiw_cm_get_event(ch, &ev, TIMEOUT_MS);
		if (rc == -ETIMEDOUT)
			die("no %s event within %d ms", uiw_cm_event_str(t),
			    TIMEOUT_MS);
		check(rc, "uiw_cm_get_event");
		if (ev.type == t)
			break;
		if (ev.type == UIW_CM_EVENT_TIMEWAIT_EXIT)
			continue;
		die("expected %s, got %s (status %d)", uiw_cm_event_str(t),
		    uiw_cm_event_str(ev.type), ev.status);
	}
	if (out)
		*out = ev;
}

static struct uiw_wc wait_wc(struct end *e)
{
	struct uiw_wc wc;
	int rc, fd = uiw_cq_fd(e->cq);
	struct pollfd pfd = { .fd = fd, .events = POLLIN };

	for (;;) {
		rc = uiw_cq_poll(e->cq, 1, &wc);
		check(rc, "uiw_cq_poll");
		if (rc == 1)
			return wc;
		check(uiw_cq_req_notify(e->cq, 0), "uiw_cq_req_notify");
		rc = uiw_cq_poll(e->cq, 1, &wc);
		check(rc, "uiw_cq_poll");
		if (rc == 1)
			return wc;
		rc = poll(&pfd, 1, TIMEOUT_MS);
		if (rc == 0)
			die("%s: no completion within %d ms", e->name,
			    TIMEOUT_MS);
		if (rc < 0 && errno != EINTR)
			die("poll: %s", strerror(errno));
		if (rc > 0)
			uiw_cq_ack_events(e->cq);
	}
}

static struct uiw_wc expect(struct end *e, uint64_t id,
			    enum uiw_wc_opcode op)
{
	struct uiw_wc wc = wait_wc(e);

	if (wc.wr_id != id || wc.status != UIW_WC_SUCCESS || wc.opcode != op)
		die("%s: expected wr_id %" PRIu64 " opcode %d, got wr_id %"
		    PRIu64 " opcode %d status %s", e->name, id, (int)op,
		    wc.wr_id, (int)wc.opcode, uiw_wc_status_str(wc.status));
	return wc;
}

static void post_recv(struct end *e, uint64_t id, size_t off, size_t len)
{
	struct uiw_sge sge = {
		.addr = (uint64_t)(uintptr_t)(e->buf + off),
		.length = (uint32_t)len,
		.lkey = e->mr->lkey,
	};
	struct uiw_recv_wr wr = {
		.wr_id = id, .sg_list = &sge, .num_sge = 1,
	};

	check(uiw_post_recv(e->qp, &wr, NULL), "uiw_post_recv");
}

static void post_send(struct end *e, uint64_t id, enum uiw_wr_opcode op,
		      unsigned flags, size_t off, size_t len,
		      const struct end *peer, size_t roff, uint32_t rkey,
		      uint32_t inv)
{
	struct uiw_sge sge = {
		.addr = (uint64_t)(uintptr_t)(e->buf + off),
		.length = (uint32_t)len,
		.lkey = e->mr->lkey,
	};
	struct uiw_send_wr wr;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = id;
	wr.opcode = op;
	wr.send_flags = flags | UIW_SEND_SIGNALED;
	wr.sg_list = len ? &sge : NULL;
	wr.num_sge = len ? 1 : 0;
	wr.invalidate_stag = inv;
	if (peer) {
		wr.wr.rdma.remote_addr =
			(uint64_t)(uintptr_t)(peer->buf + roff);
		wr.wr.rdma.rkey = rkey;
	}
	check(uiw_post_send(e->qp, &wr, NULL), "uiw_post_send");
}

static void count_msg(int op, size_t len, uint32_t mulpdu, size_t hdr)
{
	counts[op]++;
	/* RFC 5041 §5: a message is cut into segments of at most
	 * MULPDU octets including the DDP/RDMAP header. */
	if (len + hdr > mulpdu)
		multi_fpdu++;
}

#define UNTAGGED_HDR 18     /* RFC 5041 §4.3 untagged DDP header */
#define TAGGED_HDR 14       /* RFC 5041 §4.2 tagged DDP header */

/* A Send variant from a to b, received and verified. */
static void do_send(struct end *a, struct end *b, int op, size_t len)
{
	uint64_t id = next_id++;
	unsigned flags = 0;
	uint32_t inv = 0;
	struct uiw_mr *victim = NULL;
	enum uiw_wr_opcode wop = UIW_WR_SEND;
	struct uiw_wc wc;

	if (op == RDMAP_SEND_SE || op == RDMAP_SEND_SE_INV)
		flags |= UIW_SEND_SOLICITED;
	if (op == RDMAP_SEND_INV || op == RDMAP_SEND_SE_INV) {
		/* An STag on b for a to invalidate: a second registration
		 * of the upper half of b's buffer. */
		victim = check_ptr(uiw_reg_mr(b->pd, b->buf + BUF_LEN / 2,
					      4096, ACC_ALL), "uiw_reg_mr");
		inv = victim->rkey;
		wop = UIW_WR_SEND_WITH_INV;
	}
	fill(a->buf, len, (unsigned)id);
	memset(b->buf + 4096, 0, len);
	post_recv(b, id, 4096, len + 16);
	post_send(a, id, wop, flags, 0, len, NULL, 0, 0, inv);
	expect(a, id, UIW_WC_SEND);
	wc = expect(b, id, UIW_WC_RECV);
	if (wc.byte_len != len)
		die("received %u octets, sent %zu", wc.byte_len, len);
	if (inv && (!(wc.flags & UIW_WC_F_WITH_INV) ||
		    wc.invalidated_stag != inv))
		die("Send with Invalidate: no invalidation reported");
	verify(b->buf + 4096, len, (unsigned)id, "Send");
	if (victim)
		check(uiw_dereg_mr(victim), "uiw_dereg_mr");
	count_msg(op, len, a->attr.mulpdu, UNTAGGED_HDR);
}

/* An RDMA Write from a into b, then a Send so that b knows. */
static void do_write(struct end *a, struct end *b, size_t len)
{
	uint64_t id = next_id++;

	fill(a->buf, len, (unsigned)id);
	memset(b->buf + 8192, 0, len);
	post_recv(b, id + 1000000, 0, 16);
	/* One message at a time, so that each FPDU can start a TCP
	 * segment of its own (RFC 5044 §5.1) and tshark, which looks for
	 * markers only in such FPDUs, can follow the stream. */
	post_send(a, id, UIW_WR_RDMA_WRITE, 0, 0, len, b, 8192, b->mr->rkey,
		  0);
	expect(a, id, UIW_WC_RDMA_WRITE);
	post_send(a, id + 1000000, UIW_WR_SEND, 0, 0, 0, NULL, 0, 0, 0);
	expect(a, id + 1000000, UIW_WC_SEND);
	expect(b, id + 1000000, UIW_WC_RECV);
	verify(b->buf + 8192, len, (unsigned)id, "Write");
	count_msg(RDMAP_WRITE, len, a->attr.mulpdu, TAGGED_HDR);
	count_msg(RDMAP_SEND, 0, a->attr.mulpdu, UNTAGGED_HDR);
}

/* An RDMA Read by a from b. */
static void do_read(struct end *a, struct end *b, size_t len)
{
	uint64_t id = next_id++;
	struct uiw_wc wc;

	fill(b->buf + 8192, len, (unsigned)id);
	memset(a->buf + 4096, 0, len);
	post_send(a, id, UIW_WR_RDMA_READ, 0, 4096, len, b, 8192,
		  b->mr->rkey, 0);
	wc = expect(a, id, UIW_WC_RDMA_READ);
	if (wc.byte_len != len)
		die("Read returned %u octets, asked %zu", wc.byte_len, len);
	verify(a->buf + 4096, len, (unsigned)id, "Read");
	count_msg(RDMAP_READ_REQ, 0, a->attr.mulpdu, UNTAGGED_HDR + 28);
	/* the Read Response is sent by b */
	count_msg(RDMAP_READ_RESP, len, b->attr.mulpdu, TAGGED_HDR);
}

static void connect_ends(struct end *c, struct end *s,
			 struct uiw_cm_channel *lch, uint16_t port,
			 enum uiw_opt crc, enum uiw_opt markers)
{
	struct uiw_conn_param p;
	struct sockaddr_in sin;
	struct uiw_cm_event ev;

	memset(&p, 0, sizeof(p));
	p.crc = crc;
	p.markers = markers;
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sin.sin_port = htons(port);
	if (!c->ch)
		c->ch = check_ptr(uiw_cm_channel_create(c->dev),
				  "uiw_cm_channel_create");
	check(uiw_cm_connect(c->ch, c->qp, (struct sockaddr *)&sin,
			     sizeof(sin), &p, &c->id), "uiw_cm_connect");
	wait_event(lch, UIW_CM_EVENT_CONNECT_REQUEST, &ev);
	s->id = ev.id;
	check(uiw_cm_accept(s->id, s->qp, &p), "uiw_cm_accept");
	wait_event(c->ch, UIW_CM_EVENT_ESTABLISHED, NULL);
	wait_event(lch, UIW_CM_EVENT_ESTABLISHED, NULL);
	check(uiw_qp_query(c->qp, &c->attr), "uiw_qp_query");
	check(uiw_qp_query(s->qp, &s->attr), "uiw_qp_query");
	if (c->attr.state != UIW_QPS_RTS || s->attr.state != UIW_QPS_RTS)
		die("QPs not in RTS after ESTABLISHED");
	if (c->attr.crc != (crc != UIW_OPT_OFF) ||
	    c->attr.markers_tx != (markers == UIW_OPT_ON) ||
	    c->attr.markers_rx != (markers == UIW_OPT_ON))
		die("negotiated CRC %d markers %d/%d, not what was asked",
		    c->attr.crc, c->attr.markers_tx, c->attr.markers_rx);
}

static void usage(void) __attribute__((noreturn));
static void usage(void)
{
	fprintf(stderr,
		"usage: uiwarp-wiretest [-p port] [-c on|off] [-m on|off] "
		"[-w] [-t]\n"
		"  -p  listen on this port of 127.0.0.1 (default: any)\n"
		"  -c  MPA CRC (default on)\n"
		"  -m  markers in both directions (default on)\n"
		"  -w  after printing the port, wait for a line on stdin\n"
		"  -t  then a second connection that ends in a Terminate\n");
	exit(2);
}

static enum uiw_opt onoff(const char *s)
{
	if (!strcmp(s, "on"))
		return UIW_OPT_ON;
	if (!strcmp(s, "off"))
		return UIW_OPT_OFF;
	usage();
}

int main(int argc, char **argv)
{
	enum uiw_opt crc = UIW_OPT_ON, markers = UIW_OPT_ON;
	int wait_stdin = 0, terminate = 0, opt, i;
	unsigned port = 0;
	struct uiw_cm_channel *lch;
	struct uiw_cm_id *lid;
	struct sockaddr_storage ss;
	struct sockaddr_in sin;
	struct end c, s;
	struct uiw_device *sdev;
	char line[64];
	static const size_t sizes[] = { 0, 1, 5, 100, 1000, 4096, 16000,
					65537, 100000 };

	while ((opt = getopt(argc, argv, "p:c:m:wth")) != -1) {
		switch (opt) {
		case 'p':
			port = (unsigned)strtoul(optarg, NULL, 10);
			if (port > 65535)
				usage();
			break;
		case 'c':
			crc = onoff(optarg);
			break;
		case 'm':
			markers = onoff(optarg);
			break;
		case 'w':
			wait_stdin = 1;
			break;
		case 't':
			terminate = 1;
			break;
		default:
			usage();
		}
	}

	/* The server device holds the listener for both connections. */
	sdev = check_ptr(uiw_device_open(NULL), "uiw_device_open");
	end_init(&s, "server", sdev);
	end_init(&c, "client", NULL);
	lch = check_ptr(uiw_cm_channel_create(sdev), "uiw_cm_channel_create");
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sin.sin_port = htons((uint16_t)port);
	check(uiw_cm_listen(lch, (struct sockaddr *)&sin, sizeof(sin), 4,
			    &lid), "uiw_cm_listen");
	check(uiw_cm_local_addr(lid, &ss), "uiw_cm_local_addr");
	port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
	printf("port %u\n", port);
	fflush(stdout);
	if (wait_stdin && !fgets(line, sizeof(line), stdin))
		die("stdin closed before the go-ahead");

	connect_ends(&c, &s, lch, (uint16_t)port, crc, markers);
	printf("mulpdu %u\n", c.attr.mulpdu);

	/* Every Send variant at several sizes, both directions. */
	for (i = 0; i < (int)(sizeof(sizes) / sizeof(sizes[0])); i++) {
		do_send(&c, &s, RDMAP_SEND, sizes[i]);
		do_send(&c, &s, RDMAP_SEND_SE, sizes[i]);
		do_send(&c, &s, RDMAP_SEND_INV, sizes[i]);
		do_send(&c, &s, RDMAP_SEND_SE_INV, sizes[i]);
		do_write(&c, &s, sizes[i]);
		do_read(&c, &s, sizes[i]);
	}
	do_send(&s, &c, RDMAP_SEND, 777);
	do_send(&s, &c, RDMAP_SEND_SE_INV, 3);
	do_write(&s, &c, 70001);
	do_read(&s, &c, 70003);

	/* Graceful close from the client. */
	check(uiw_cm_disconnect(c.id), "uiw_cm_disconnect");
	wait_event(c.ch, UIW_CM_EVENT_DISCONNECTED, NULL);
	wait_event(lch, UIW_CM_EVENT_DISCONNECTED, NULL);
	end_free(&c);
	end_free(&s);

	if (terminate) {
		struct uiw_qp_attr a;
		struct uiw_wc wc;

		end_init(&s, "server", sdev);
		end_init(&c, "client", NULL);
		connect_ends(&c, &s, lch, (uint16_t)port, crc, markers);
		/* A Write to an STag that does not exist: the server
		 * answers with a Terminate (RFC 5040 §4.8). */
		post_recv(&c, 1, 0, 64);
		post_send(&c, 2, UIW_WR_RDMA_WRITE, 0, 0, 16, &s, 0,
			  s.mr->rkey ^ 0xff, 0);
		count_msg(RDMAP_WRITE, 16, c.attr.mulpdu, TAGGED_HDR);
		count_msg(RDMAP_TERMINATE, 0, s.attr.mulpdu, UNTAGGED_HDR);
		wait_event(c.ch, UIW_CM_EVENT_DISCONNECTED, NULL);
		wait_event(lch, UIW_CM_EVENT_DISCONNECTED, NULL);
		check(uiw_qp_query(c.qp, &a), "uiw_qp_query");
		if (a.term.origin != UIW_TERM_REMOTE)
			die("client: no Terminate received (origin %u)",
			    a.term.origin);
		/* the Write and the receive complete (flushed or not) */
		wait_wc(&c);
		wc = wait_wc(&c);
		(void)wc;
		end_free(&c);
		end_free(&s);
	}
	check(uiw_cm_destroy_id(lid), "uiw_cm_destroy_id");
	check(uiw_cm_channel_destroy(lch), "uiw_cm_channel_destroy");
	check(uiw_device_close(sdev), "uiw_device_close");

	printf("messages");
	for (i = 0; i < RDMAP_NOPS; i++)
		printf(" %s=%u", rdmap_names[i], counts[i]);
	printf("\nmulti %u\nok\n", multi_fpdu);
	return 0;
}
