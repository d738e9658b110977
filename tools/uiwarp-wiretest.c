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

#include "tool_conn.h"

#define ACC_ALL UIW_TOOL_ACC_RW
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

static unsigned counts[RDMAP_NOPS];
static unsigned multi_fpdu;
static uint64_t next_id = 1;

#define die uiw_tool_die
#define check uiw_tool_check
#define check_ptr uiw_tool_check_ptr
#define fill uiw_tool_fill

static void verify(const uint8_t *p, size_t n, unsigned seed,
		   const char *what)
{
	size_t at = uiw_tool_mismatch(p, n, seed);

	if (at < n)
		die("%s: data differs at offset %zu", what, at);
}

/* dev: the device to use, or NULL for a new one of its own. */
static void end_init(struct uiw_tool_end *e, const char *name,
		     struct uiw_device *dev)
{
	struct uiw_tool_end_cfg cfg = {
		.dev = dev,
		.cqe = 256,
		.cap = {
			.max_send_wr = 64,
			.max_recv_wr = 64,
			.max_send_sge = 2,
			.max_recv_sge = 2,
		},
		.buf_len = BUF_LEN,
		.access = ACC_ALL,
	};

	uiw_tool_end_init(e, name, &cfg);
}

static void post_send(struct uiw_tool_end *e, uint64_t id, enum uiw_wr_opcode op,
		      unsigned flags, size_t off, size_t len,
		      const struct uiw_tool_end *peer, size_t roff, uint32_t rkey,
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
static void do_send(struct uiw_tool_end *a, struct uiw_tool_end *b, int op, size_t len)
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
	uiw_tool_post_recv(b, id, 4096, len + 16);
	post_send(a, id, wop, flags, 0, len, NULL, 0, 0, inv);
	uiw_tool_expect_wc(a, id, UIW_WC_SEND);
	wc = uiw_tool_expect_wc(b, id, UIW_WC_RECV);
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
static void do_write(struct uiw_tool_end *a, struct uiw_tool_end *b, size_t len)
{
	uint64_t id = next_id++;

	fill(a->buf, len, (unsigned)id);
	memset(b->buf + 8192, 0, len);
	uiw_tool_post_recv(b, id + 1000000, 0, 16);
	/* One message at a time, so that each FPDU can start a TCP
	 * segment of its own (RFC 5044 §5.1) and tshark, which looks for
	 * markers only in such FPDUs, can follow the stream. */
	post_send(a, id, UIW_WR_RDMA_WRITE, 0, 0, len, b, 8192, b->mr->rkey,
		  0);
	uiw_tool_expect_wc(a, id, UIW_WC_RDMA_WRITE);
	post_send(a, id + 1000000, UIW_WR_SEND, 0, 0, 0, NULL, 0, 0, 0);
	uiw_tool_expect_wc(a, id + 1000000, UIW_WC_SEND);
	uiw_tool_expect_wc(b, id + 1000000, UIW_WC_RECV);
	verify(b->buf + 8192, len, (unsigned)id, "Write");
	count_msg(RDMAP_WRITE, len, a->attr.mulpdu, TAGGED_HDR);
	count_msg(RDMAP_SEND, 0, a->attr.mulpdu, UNTAGGED_HDR);
}

/* An RDMA Read by a from b. */
static void do_read(struct uiw_tool_end *a, struct uiw_tool_end *b, size_t len)
{
	uint64_t id = next_id++;
	struct uiw_wc wc;

	fill(b->buf + 8192, len, (unsigned)id);
	memset(a->buf + 4096, 0, len);
	post_send(a, id, UIW_WR_RDMA_READ, 0, 4096, len, b, 8192,
		  b->mr->rkey, 0);
	wc = uiw_tool_expect_wc(a, id, UIW_WC_RDMA_READ);
	if (wc.byte_len != len)
		die("Read returned %u octets, asked %zu", wc.byte_len, len);
	verify(a->buf + 4096, len, (unsigned)id, "Read");
	count_msg(RDMAP_READ_REQ, 0, a->attr.mulpdu, UNTAGGED_HDR + 28);
	/* the Read Response is sent by b */
	count_msg(RDMAP_READ_RESP, len, b->attr.mulpdu, TAGGED_HDR);
}

static void usage(void) __attribute__((noreturn));
static void usage(void)
{
	fprintf(stderr,
		"usage: uiwarp-wiretest [-p port] [-c on|off] [-m on|off] "
		"[-w] [-t] [--llp NAME] [--udp-port N]\n"
		"  -p  listen on this port of 127.0.0.1 (default: any)\n"
		"  --llp  tcp (default), sctp, sctp-udp or sctp-kernel (DDP\n"
		"      over SCTP, RFC 5043; -p is then the SCTP port, and\n"
		"      the UDP port is printed after it: udp N)\n"
		"  --udp-port  SCTP over UDP: the UDP port (default: any free)\n"
		"  -c  MPA CRC (default on)\n"
		"  -m  markers in both directions (default on)\n"
		"  -w  after printing the port, wait for a line on stdin\n"
		"  -t  then a second connection that ends in a Terminate\n");
	exit(2);
}

int main(int argc, char **argv)
{
	enum uiw_opt crc = UIW_OPT_ON, markers = UIW_OPT_ON;
	int wait_stdin = 0, terminate = 0, opt, i;
	enum uiw_llp_kind llp = UIW_LLP_TCP;
	uint16_t udp_port = 0;
	unsigned port = 0;
	struct uiw_tool_listener l;
	struct uiw_tool_end c, s;
	struct uiw_device *sdev;
	static const size_t sizes[] = { 0, 1, 5, 100, 1000, 4096, 16000,
					65537, 100000 };

	uiw_tool_name = "uiwarp-wiretest";
	static const struct option lo[] = {
		{ "llp", required_argument, NULL, 'L' },
		{ "udp-port", required_argument, NULL, 'U' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};

	while ((opt = getopt_long(argc, argv, "p:c:m:wth", lo, NULL)) != -1) {
		switch (opt) {
		case 'L':
			if (uiw_tool_parse_llp(optarg, &llp))
				uiw_tool_bad_usage("--llp takes tcp, sctp, "
						   "sctp-udp or sctp-kernel, "
						   "not %s", optarg);
			break;
		case 'U':
			udp_port = (uint16_t)uiw_tool_arg_long(optarg, 1, 65535,
							       "--udp-port");
			break;
		case 'p':
			port = (unsigned)uiw_tool_arg_long(optarg, 0, 65535,
							   "port");
			break;
		case 'c':
			crc = uiw_tool_arg_onoff(optarg, "-c");
			break;
		case 'm':
			markers = uiw_tool_arg_onoff(optarg, "-m");
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

	/* Before the devices start their threads: they inherit the mask. */
	uiw_tool_signals_init(NULL);
	/* The server device holds the listener for both connections. */
	sdev = check_ptr(uiw_device_open(NULL), "uiw_device_open");
	end_init(&s, "server", sdev);
	end_init(&c, "client", NULL);
	uiw_tool_listen_llp(&l, sdev, AF_INET, port, 4, llp, udp_port);
	printf("port %u\n", l.port);
	if (llp != UIW_LLP_TCP)
		printf("udp %u\n", l.udp_port);
	fflush(stdout);
	if (wait_stdin)
		uiw_tool_wait_line();

	uiw_tool_connect_opts(&c, &s, &l, crc, markers);
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
	uiw_tool_disconnect_pair(&c, &l);
	uiw_tool_end_free(&c);
	uiw_tool_end_free(&s);

	if (terminate) {
		struct uiw_qp_attr a;
		struct uiw_wc wc;

		end_init(&s, "server", sdev);
		end_init(&c, "client", NULL);
		uiw_tool_connect_opts(&c, &s, &l, crc, markers);
		/* A Write to an STag that does not exist: the server
		 * answers with a Terminate (RFC 5040 §4.8). */
		uiw_tool_post_recv(&c, 1, 0, 64);
		post_send(&c, 2, UIW_WR_RDMA_WRITE, 0, 0, 16, &s, 0,
			  s.mr->rkey ^ 0xff, 0);
		count_msg(RDMAP_WRITE, 16, c.attr.mulpdu, TAGGED_HDR);
		count_msg(RDMAP_TERMINATE, 0, s.attr.mulpdu, UNTAGGED_HDR);
		uiw_tool_wait_event(c.ch, UIW_CM_EVENT_DISCONNECTED, NULL);
		uiw_tool_wait_event(l.ch, UIW_CM_EVENT_DISCONNECTED, NULL);
		check(uiw_qp_query(c.qp, &a), "uiw_qp_query");
		if (a.term.origin != UIW_TERM_REMOTE)
			die("client: no Terminate received (origin %u)",
			    a.term.origin);
		/* the Write and the receive complete (flushed or not) */
		uiw_tool_wait_wc(&c);
		wc = uiw_tool_wait_wc(&c);
		(void)wc;
		uiw_tool_end_free(&c);
		uiw_tool_end_free(&s);
	}
	uiw_tool_listen_close(&l);
	check(uiw_device_close(sdev), "uiw_device_close");

	/* The session is short and runs to its end; a signal meanwhile
	 * still ends the program with its status, not with "ok". */
	uiw_tool_exit_if_stopped();
	printf("messages");
	for (i = 0; i < RDMAP_NOPS; i++)
		printf(" %s=%u", rdmap_names[i], counts[i]);
	printf("\nmulti %u\nok\n", multi_fpdu);
	return 0;
}
