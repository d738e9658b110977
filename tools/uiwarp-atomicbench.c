/*
 * uiwarp-atomicbench: RFC 7306 atomics and immediate data over 127.0.0.1.
 *
 * Default mode, a benchmark (it measures, it never fails for being
 * slow): atomic operations per second with 1 and 8 QPs, all doing
 * FetchAdds of 1 on one word of the responder, next to zero-byte RDMA
 * Reads with the same QPs and depth in the same run; then the latency of
 * one FetchAdd next to that of one zero-byte RDMA Read, alternating on
 * one QP.  The requester QPs share one device and the responder QPs
 * another (one RNIC each side), both in this process; one thread per
 * requester QP keeps `depth` work requests outstanding and sleeps on its
 * CQ's notification fd between completions (busy-polling threads would
 * take the CPUs from the progress threads on a small machine).  The word's final value is checked against the number of
 * FetchAdds completed.  Output: a Markdown table.
 *
 * -W: one session for the wire test (tests/wire/test_tshark_atomic.sh):
 * FetchAdd and CmpSwap, plain and masked, in both directions; Immediate
 * Data with and without SE; Write with Immediate of several sizes (some
 * of several FPDUs); Reads and Sends between them; a graceful close; and
 * a second connection that ends in the Terminate for a misaligned atomic.
 * One message at a time, every result verified.  Output, one line each:
 *   port <n>                   once listening (with -w it then waits for
 *                              a line on stdin)
 *   messages <name>=<count> .. RDMAP messages sent per opcode (RFC 5040
 *                              and RFC 7306 numbering), both directions
 *   multi <n>                  messages that needed several FPDUs
 *   ok
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <uiwarp/uiwarp.h>
#include <uiwarp/cm.h>

#include "tool_conn.h"

#define TIMEOUT_MS UIW_TOOL_TIMEOUT_MS
#define ACC_ALL UIW_TOOL_ACC_ALL
#define BUF_LEN (1024 * 1024)
#define MAX_QPS 64

#define die uiw_tool_die
#define check uiw_tool_check
#define check_ptr uiw_tool_check_ptr
#define now_s uiw_tool_now

/* ---- Ends and connections ------------------------------------------------ */

/* An end on dev/pd (shared), with its own CQ, QP and buffer. */
static void end_init(struct uiw_tool_end *e, const char *name,
		     struct uiw_device *dev, struct uiw_pd *pd, int depth)
{
	struct uiw_tool_end_cfg cfg = {
		.dev = dev,
		.pd = pd,
		.cqe = 2 * depth + 64,
		.cap = {
			.max_send_wr = (uint32_t)depth + 16,
			.max_recv_wr = (uint32_t)depth + 16,
			.max_send_sge = 1,
			.max_recv_sge = 1,
		},
		.sq_sig_all = 1,
		.buf_len = BUF_LEN,
		.access = ACC_ALL,
	};

	uiw_tool_end_init(e, name, &cfg);
}

/* ---- Work requests ------------------------------------------------------- */

/* One send WR with at most one SGE (len 0: none). */
static void post(struct uiw_tool_end *e, uint64_t id, enum uiw_wr_opcode op,
		 unsigned flags, size_t off, size_t len, const struct uiw_tool_end *peer,
		 size_t roff, uint64_t ca, uint64_t swap, uint64_t cam,
		 uint64_t sm, uint64_t imm)
{
	struct uiw_sge sge = {
		.addr = (uint64_t)(uintptr_t)(e->buf + off),
		.length = (uint32_t)len,
		.lkey = e->mr->lkey,
	};
	struct uiw_send_wr wr;
	int rc;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = id;
	wr.opcode = op;
	wr.send_flags = flags;
	wr.sg_list = len || op == UIW_WR_RDMA_READ ? &sge : NULL;
	wr.num_sge = len || op == UIW_WR_RDMA_READ ? 1 : 0;
	wr.imm_data = imm;
	if (peer) {
		/* wr.rdma and wr.atomic start alike */
		wr.wr.atomic.remote_addr =
			(uint64_t)(uintptr_t)(peer->buf + roff);
		wr.wr.atomic.rkey = peer->mr->rkey;
	}
	wr.wr.atomic.compare_add = ca;
	wr.wr.atomic.swap = swap;
	wr.wr.atomic.compare_add_mask = cam;
	wr.wr.atomic.swap_mask = sm;
	if (op != UIW_WR_ATOMIC_FETCH_ADD && op != UIW_WR_ATOMIC_CMP_SWP) {
		/* wr.rdma overlaps the atomic operands: set it last */
		uint64_t ra = wr.wr.atomic.remote_addr;
		uint32_t rk = wr.wr.atomic.rkey;

		memset(&wr.wr, 0, sizeof(wr.wr));
		wr.wr.rdma.remote_addr = ra;
		wr.wr.rdma.rkey = rk;
	}
	rc = uiw_post_send(e->qp, &wr, NULL);
	check(rc, "uiw_post_send");
}

static uint64_t get64(const struct uiw_tool_end *e, size_t off)
{
	uint64_t v;

	memcpy(&v, e->buf + off, 8);
	return v;
}

static void put64(struct uiw_tool_end *e, size_t off, uint64_t v)
{
	memcpy(e->buf + off, &v, 8);
}

/* ---- The wire session ---------------------------------------------------- */

/* RFC 5040 §4.3 and RFC 7306 §4.1 opcodes */
enum { OP_WRITE, OP_READ_REQ, OP_READ_RESP, OP_SEND, OP_SEND_INV,
       OP_SEND_SE, OP_SEND_SE_INV, OP_TERMINATE, OP_IMM, OP_IMM_SE,
       OP_ATOMIC_REQ, OP_ATOMIC_RESP, NOPS };

static const char *const op_names[NOPS] = {
	"write", "read_req", "read_resp", "send", "send_inv", "send_se",
	"send_se_inv", "terminate", "imm", "imm_se", "atomic_req",
	"atomic_resp",
};

static unsigned counts[NOPS];
static unsigned multi;
static uint64_t next_id = 1;

/* An atomic from a on b's word at off, verified against want. */
static void wire_atomic(struct uiw_tool_end *a, struct uiw_tool_end *b, enum uiw_wr_opcode op,
			bool masked, size_t off, uint64_t orig, uint64_t ca,
			uint64_t swap, uint64_t cam, uint64_t sm, uint64_t want)
{
	uint64_t id = next_id++;

	put64(b, off, orig);
	put64(a, 0, ~orig);
	post(a, id, op, masked ? UIW_SEND_ATOMIC_MASKED : 0, 0, 8, b, off, ca,
	     swap, cam, sm, 0);
	uiw_tool_expect_wc(a, id, op == UIW_WR_ATOMIC_FETCH_ADD ? UIW_WC_FETCH_ADD
						    : UIW_WC_CMP_SWP);
	if (get64(a, 0) != orig || get64(b, off) != want)
		die("atomic %" PRIu64 ": original 0x%" PRIx64 " (expected 0x%"
		    PRIx64 "), word 0x%" PRIx64 " (expected 0x%" PRIx64 ")",
		    id, get64(a, 0), orig, get64(b, off), want);
	counts[OP_ATOMIC_REQ]++;
	counts[OP_ATOMIC_RESP]++;
}

/* Immediate Data from a to b, alone (write false) or after a Write of
 * wlen octets. */
static void wire_imm(struct uiw_tool_end *a, struct uiw_tool_end *b, bool se, bool write,
		     size_t wlen)
{
	uint64_t id = next_id++, imm = 0x1122334400000000ull + id;
	struct uiw_wc wc;
	size_t i;

	if (!write)
		wlen = 0;
	for (i = 0; i < wlen; i++)
		a->buf[4096 + i] = (uint8_t)(id + i * 7);
	memset(b->buf + 65536, 0, wlen + 1);
	uiw_tool_post_recv(b, id, 0, 0);
	post(a, id, write ? UIW_WR_RDMA_WRITE_WITH_IMM : UIW_WR_IMMEDIATE,
	     se ? UIW_SEND_SOLICITED : 0, 4096, wlen, write ? b : NULL, 65536,
	     0, 0, 0, 0, imm);
	uiw_tool_expect_wc(a, id, write ? UIW_WC_RDMA_WRITE : UIW_WC_SEND);
	wc = uiw_tool_expect_wc(b, id, UIW_WC_RECV_RDMA_WITH_IMM);
	if (wc.imm_data != imm || !(wc.flags & UIW_WC_F_WITH_IMM) ||
	    !!(wc.flags & UIW_WC_F_SOLICITED) != se)
		die("Immediate Data %" PRIu64 ": imm 0x%" PRIx64 " flags %#x",
		    id, wc.imm_data, wc.flags);
	if (write) {
		if (memcmp(b->buf + 65536, a->buf + 4096, wlen) ||
		    b->buf[65536 + wlen])
			die("Write with Immediate %" PRIu64 ": data differs",
			    id);
		counts[OP_WRITE]++;
		/* RFC 5041 §5: segments of at most MULPDU octets with
		 * the 14-octet tagged header */
		if (wlen + 14 > a->attr.mulpdu)
			multi++;
	}
	counts[se ? OP_IMM_SE : OP_IMM]++;
}

static void wire_read(struct uiw_tool_end *a, struct uiw_tool_end *b, size_t len)
{
	uint64_t id = next_id++;

	memset(b->buf + 131072, (int)(id & 0xff), len);
	memset(a->buf + 131072, 0, len);
	post(a, id, UIW_WR_RDMA_READ, 0, 131072, len, b, 131072, 0, 0, 0, 0,
	     0);
	uiw_tool_expect_wc(a, id, UIW_WC_RDMA_READ);
	if (memcmp(a->buf + 131072, b->buf + 131072, len))
		die("Read %" PRIu64 ": data differs", id);
	counts[OP_READ_REQ]++;
	counts[OP_READ_RESP]++;
}

static void wire_send(struct uiw_tool_end *a, struct uiw_tool_end *b, size_t len)
{
	uint64_t id = next_id++;
	struct uiw_wc wc;

	uiw_tool_post_recv(b, id, 8192, 4096);
	post(a, id, UIW_WR_SEND, 0, 8192, len, NULL, 0, 0, 0, 0, 0, 0);
	uiw_tool_expect_wc(a, id, UIW_WC_SEND);
	wc = uiw_tool_expect_wc(b, id, UIW_WC_RECV);
	if (wc.byte_len != len)
		die("Send of %zu octets received as %u", len, wc.byte_len);
	counts[OP_SEND]++;
}

static void wire_session(struct uiw_tool_end *c, struct uiw_tool_end *s)
{
	static const size_t wlens[] = { 0, 1, 100, 4096, 70000 };
	size_t i;

	/* client to server: FetchAdd and CmpSwap, plain and masked */
	wire_atomic(c, s, UIW_WR_ATOMIC_FETCH_ADD, false, 0, 41, 1, 0, 0, 0,
		    42);
	wire_atomic(c, s, UIW_WR_ATOMIC_FETCH_ADD, false, 8, UINT64_MAX, 2, 0,
		    0, 0, 1);
	wire_atomic(c, s, UIW_WR_ATOMIC_FETCH_ADD, true, 16,
		    0x00ff00ff00ff00ffull, 0x0001000100010001ull, 0,
		    0x8080808080808080ull, 0, 0);
	wire_atomic(c, s, UIW_WR_ATOMIC_CMP_SWP, false, 24, 5, 5, 6, 0, 0, 6);
	wire_atomic(c, s, UIW_WR_ATOMIC_CMP_SWP, false, 24, 5, 4, 6, 0, 0, 5);
	wire_atomic(c, s, UIW_WR_ATOMIC_CMP_SWP, true, 32,
		    0xaaaa0000bbbb0000ull, 0xbbbb0000ull, 0x1234ull,
		    0xffff0000ull, 0xffffull, 0xaaaa0000bbbb1234ull);
	/* Immediate Data, alone and after Writes of several sizes */
	wire_imm(c, s, false, false, 0);
	wire_imm(c, s, true, false, 0);
	for (i = 0; i < sizeof(wlens) / sizeof(wlens[0]); i++)
		wire_imm(c, s, i & 1, true, wlens[i]);
	/* Reads and Sends among them */
	wire_read(c, s, 0);
	wire_atomic(c, s, UIW_WR_ATOMIC_FETCH_ADD, false, 40, 1, 1, 0, 0, 0,
		    2);
	wire_read(c, s, 64);
	wire_send(c, s, 10);
	/* server to client */
	wire_atomic(s, c, UIW_WR_ATOMIC_CMP_SWP, false, 0, 0, 0, 99, 0, 0, 99);
	wire_atomic(s, c, UIW_WR_ATOMIC_FETCH_ADD, false, 8, 100, 23, 0, 0, 0,
		    123);
	wire_imm(s, c, true, true, 300);
	wire_send(s, c, 3);
}

static int wire_main(enum uiw_opt crc, enum uiw_opt markers, int wait_stdin,
		     unsigned port)
{
	struct uiw_device *sdev, *cdev;
	struct uiw_pd *spd, *cpd;
	struct uiw_tool_listener l;
	struct uiw_tool_end c, s;
	int i;

	sdev = check_ptr(uiw_device_open(NULL), "uiw_device_open");
	cdev = check_ptr(uiw_device_open(NULL), "uiw_device_open");
	spd = check_ptr(uiw_pd_alloc(sdev), "uiw_pd_alloc");
	cpd = check_ptr(uiw_pd_alloc(cdev), "uiw_pd_alloc");
	uiw_tool_listen(&l, sdev, AF_INET, port, MAX_QPS);
	printf("port %u\n", l.port);
	fflush(stdout);
	if (wait_stdin)
		uiw_tool_wait_line();

	end_init(&s, "server", sdev, spd, 16);
	end_init(&c, "client", cdev, cpd, 16);
	uiw_tool_connect_opts(&c, &s, &l, crc, markers);
	wire_session(&c, &s);
	uiw_tool_disconnect_pair(&c, &l);
	uiw_tool_end_free(&c);
	uiw_tool_end_free(&s);

	/* A second connection: a misaligned CmpSwap gets the Terminate
	 * "catastrophic error, localized to RDMAP stream" (RFC 7306
	 * §8.2), and the word stays as it was. */
	{
		struct uiw_wc wc;

		end_init(&s, "server", sdev, spd, 16);
		end_init(&c, "client", cdev, cpd, 16);
		uiw_tool_connect_opts(&c, &s, &l, crc, markers);
		put64(&s, 0, 7);
		post(&c, 1, UIW_WR_ATOMIC_CMP_SWP, 0, 0, 8, &s, 4, 0, 1, 0, 0,
		     0);
		counts[OP_ATOMIC_REQ]++;
		counts[OP_TERMINATE]++;
		wc = uiw_tool_wait_wc(&c);
		if (wc.status != UIW_WC_REM_OP_ERR ||
		    wc.term.origin != UIW_TERM_REMOTE ||
		    wc.term.layer != 0 || wc.term.etype != 2 ||
		    wc.term.ecode != 0x07)
			die("misaligned atomic: %s, cause %u/%u/%#x",
			    uiw_wc_status_str(wc.status), wc.term.layer,
			    wc.term.etype, wc.term.ecode);
		if (get64(&s, 0) != 7)
			die("misaligned atomic changed memory");
		uiw_tool_wait_event(c.ch, UIW_CM_EVENT_DISCONNECTED, NULL);
		uiw_tool_wait_event(l.ch, UIW_CM_EVENT_DISCONNECTED, NULL);
		uiw_tool_end_free(&c);
		uiw_tool_end_free(&s);
	}
	uiw_tool_listen_close(&l);
	check(uiw_pd_free(spd), "uiw_pd_free");
	check(uiw_pd_free(cpd), "uiw_pd_free");
	check(uiw_device_close(cdev), "uiw_device_close");
	check(uiw_device_close(sdev), "uiw_device_close");
	/* The session is short and runs to its end; a signal meanwhile
	 * still ends the program with its status, not with "ok". */
	uiw_tool_exit_if_stopped();
	printf("messages");
	for (i = 0; i < NOPS; i++)
		printf(" %s=%u", op_names[i], counts[i]);
	printf("\nmulti %u\nok\n", multi);
	return 0;
}

/* ---- The benchmark ------------------------------------------------------- */

struct worker {
	struct uiw_tool_end *e;
	struct uiw_tool_end *peer;
	enum uiw_wr_opcode op;      /* FetchAdd or a zero-byte Read */
	int depth;
	double secs;
	pthread_barrier_t *start;
	uint64_t done;
	double elapsed;
};

/* Keeps depth operations outstanding for secs. */
static void *run_worker(void *arg)
{
	struct worker *w = arg;
	struct uiw_wc wc[32];
	uint64_t posted = 0;
	double t0, end;
	int i, n;

	pthread_barrier_wait(w->start);
	t0 = now_s();
	end = t0 + w->secs;
	for (;;) {
		bool more = now_s() < end && !uiw_tool_stop_signal();

		while (more && posted - w->done < (uint64_t)w->depth) {
			post(w->e, posted, w->op, 0, 8 * (posted % 64),
			     w->op == UIW_WR_RDMA_READ ? 0 : 8, w->peer, 0,
			     1, 0, 0, 0, 0);
			posted++;
		}
		if (!more && posted == w->done)
			break;
		/* Sleeping on the CQ's fd: busy-polling threads would
		 * take the CPUs from the progress threads. */
		n = uiw_tool_get_wcs(w->e->cq, wc, 32, -1, w->e->name);
		for (i = 0; i < n; i++)
			if (wc[i].status != UIW_WC_SUCCESS)
				die("%s: %s", w->e->name,
				    uiw_wc_status_str(wc[i].status));
		w->done += (uint64_t)n;
	}
	w->elapsed = now_s() - t0;
	return NULL;
}

struct bench {
	struct uiw_device *sdev, *cdev;
	struct uiw_pd *spd, *cpd;
	struct uiw_tool_listener l;
	struct uiw_tool_end c[MAX_QPS], s[MAX_QPS];
	int nqp;
	enum uiw_opt crc;
	int depth;
	double secs;
};

/* Operations per second of nqp QPs, each on its own thread. */
static double measure(struct bench *b, int nqp, enum uiw_wr_opcode op,
		      uint64_t *total)
{
	struct worker w[MAX_QPS];
	pthread_t th[MAX_QPS];
	pthread_barrier_t start;
	double ops = 0;
	int i;

	pthread_barrier_init(&start, NULL, (unsigned)nqp);
	for (i = 0; i < nqp; i++) {
		memset(&w[i], 0, sizeof(w[i]));
		w[i].e = &b->c[i];
		/* every QP on the one word of the first server end */
		w[i].peer = &b->s[0];
		w[i].op = op;
		w[i].depth = b->depth < (int)b->c[i].attr.ord ||
			     b->c[i].attr.ord == 0 ? b->depth
						   : (int)b->c[i].attr.ord;
		w[i].secs = b->secs;
		w[i].start = &start;
		if (pthread_create(&th[i], NULL, run_worker, &w[i]))
			die("pthread_create");
	}
	for (i = 0; i < nqp; i++) {
		pthread_join(th[i], NULL);
		ops += (double)w[i].done / w[i].elapsed;
		*total += w[i].done;
	}
	pthread_barrier_destroy(&start);
	return ops;
}

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Round-trip time of one operation at a time. */
static void latency(struct uiw_tool_end *c, struct uiw_tool_end *s, int iters, double *fa,
		    double *rd)
{
	struct uiw_wc wc;
	int i;

	for (i = 0; i < 2 * iters; i++) {
		enum uiw_wr_opcode op = i & 1 ? UIW_WR_RDMA_READ
					      : UIW_WR_ATOMIC_FETCH_ADD;
		double t0 = now_s();

		post(c, (uint64_t)i, op, 0, 0,
		     op == UIW_WR_RDMA_READ ? 0 : 8, s, 0, 1, 0, 0, 0, 0);
		uiw_tool_get_wcs(c->cq, &wc, 1, -1, c->name);
		if (uiw_tool_stop_signal())
			break;
		if (wc.status != UIW_WC_SUCCESS || wc.wr_id != (uint64_t)i)
			die("latency: %s", uiw_wc_status_str(wc.status));
		(i & 1 ? rd : fa)[i / 2] = (now_s() - t0) * 1e6;
	}
}

static void bench_connect(struct bench *b, int nqp)
{
	char name[32];
	int i;

	for (i = b->nqp; i < nqp; i++) {
		snprintf(name, sizeof(name), "client %d", i);
		end_init(&b->s[i], "server", b->sdev, b->spd, b->depth);
		end_init(&b->c[i], strdup(name), b->cdev, b->cpd, b->depth);
		uiw_tool_connect_opts(&b->c[i], &b->s[i], &b->l, b->crc, UIW_OPT_OFF);
		b->nqp = i + 1;
	}
}

static void row(const char *test, int nqp, int depth, double ops,
		double base)
{
	printf("| %s | %d | %d | %.0f | %.2f |\n", test, nqp, depth, ops,
	       ops / base);
}

static int bench_main(enum uiw_opt crc, double secs, int depth,
		      const int *qps, int nq, int iters)
{
	struct bench *b = calloc(1, sizeof(*b));
	uint64_t fadds = 0, reads = 0;
	double *fa, *rd, fsum = 0, rsum = 0;
	int i;

	if (!b)
		die("out of memory");
	b->crc = crc;
	b->secs = secs;
	b->depth = depth;
	b->sdev = check_ptr(uiw_device_open(NULL), "uiw_device_open");
	b->cdev = check_ptr(uiw_device_open(NULL), "uiw_device_open");
	b->spd = check_ptr(uiw_pd_alloc(b->sdev), "uiw_pd_alloc");
	b->cpd = check_ptr(uiw_pd_alloc(b->cdev), "uiw_pd_alloc");
	uiw_tool_listen(&b->l, b->sdev, AF_INET, 0, MAX_QPS);
	bench_connect(b, 1);

	printf("uiwarp-atomicbench: 127.0.0.1, %.1f s per test, depth %d "
	       "per QP (at most ORD %u), CRC %s, one responder word\n\n",
	       secs, depth, b->c[0].attr.ord, crc == UIW_OPT_OFF ? "off"
								: "on");
	printf("| test | QPs | depth | ops/s | vs 0-byte Read |\n");
	printf("|------|----:|------:|------:|---------------:|\n");
	for (i = 0; i < nq; i++) {
		double r, f;

		if (qps[i] > MAX_QPS)
			die("at most %d QPs", MAX_QPS);
		bench_connect(b, qps[i]);
		r = measure(b, qps[i], UIW_WR_RDMA_READ, &reads);
		f = measure(b, qps[i], UIW_WR_ATOMIC_FETCH_ADD, &fadds);
		row("read_0", qps[i], depth, r, r);
		row("fetch_add", qps[i], depth, f, r);
		fflush(stdout);
		uiw_tool_exit_if_stopped();
	}
	if (get64(&b->s[0], 0) != fadds)
		die("the word holds %" PRIu64 " after %" PRIu64 " FetchAdds "
		    "of 1", get64(&b->s[0], 0), fadds);

	fa = calloc((size_t)iters, sizeof(double));
	rd = calloc((size_t)iters, sizeof(double));
	if (!fa || !rd)
		die("out of memory");
	put64(&b->s[0], 0, 0);
	latency(&b->c[0], &b->s[0], iters, fa, rd);
	uiw_tool_exit_if_stopped();
	for (i = 0; i < iters; i++) {
		fsum += fa[i];
		rsum += rd[i];
	}
	qsort(fa, (size_t)iters, sizeof(double), cmp_dbl);
	qsort(rd, (size_t)iters, sizeof(double), cmp_dbl);
	printf("\nLatency of one operation at a time on one QP, %d of each, "
	       "alternating (microseconds):\n\n", iters);
	printf("| operation | median | mean | p99 | min |\n");
	printf("|-----------|-------:|-----:|----:|----:|\n");
	printf("| fetch_add | %.1f | %.1f | %.1f | %.1f |\n",
	       fa[iters / 2], fsum / iters, fa[iters * 99 / 100], fa[0]);
	printf("| read_0 | %.1f | %.1f | %.1f | %.1f |\n",
	       rd[iters / 2], rsum / iters, rd[iters * 99 / 100], rd[0]);
	printf("\nchecked: the word ended at %" PRIu64 ", the number of "
	       "FetchAdds of 1 completed in the throughput runs\n", fadds);
	free(fa);
	free(rd);

	for (i = 0; i < b->nqp; i++) {
		uiw_tool_disconnect_pair(&b->c[i], &b->l);
		free((char *)b->c[i].name);
		uiw_tool_end_free(&b->c[i]);
		uiw_tool_end_free(&b->s[i]);
	}
	uiw_tool_listen_close(&b->l);
	check(uiw_pd_free(b->spd), "uiw_pd_free");
	check(uiw_pd_free(b->cpd), "uiw_pd_free");
	check(uiw_device_close(b->cdev), "uiw_device_close");
	check(uiw_device_close(b->sdev), "uiw_device_close");
	free(b);
	return 0;
}

/* ---- Options ------------------------------------------------------------- */

static void usage(void) __attribute__((noreturn));
static void usage(void)
{
	fprintf(stderr,
		"usage: uiwarp-atomicbench [-t secs] [-q n,n..] [-d depth] "
		"[-n iters] [-c on|off]\n"
		"       uiwarp-atomicbench -W [-w] [-p port] [-c on|off] "
		"[-m on|off]\n"
		"  -t  seconds per throughput measurement (default 2)\n"
		"  -q  QP counts (default 1,8)\n"
		"  -d  operations outstanding per QP (default 16, at most "
		"ORD)\n"
		"  -n  latency samples of each operation (default 20000)\n"
		"  -c  MPA CRC (default on)\n"
		"  -W  the wire test session instead (see the source)\n"
		"  -w  with -W: after printing the port, wait for a line on "
		"stdin\n"
		"  -p  with -W: listen on this port (default: any)\n"
		"  -m  with -W: markers in both directions (default off)\n");
	exit(2);
}

int main(int argc, char **argv)
{
	enum uiw_opt crc = UIW_OPT_ON, markers = UIW_OPT_OFF;
	int wire = 0, wait_stdin = 0, depth = 16, iters = 20000, opt, nq = 0;
	int qps[16] = { 1, 8 };
	unsigned port = 0;
	double secs = 2;
	char *tok, *save;

	uiw_tool_name = "uiwarp-atomicbench";
	while ((opt = getopt(argc, argv, "t:q:d:n:c:m:p:Wwh")) != -1) {
		switch (opt) {
		case 't':
			secs = uiw_tool_arg_secs(optarg, 3600, "-t");
			break;
		case 'q':
			for (tok = strtok_r(optarg, ",", &save); tok && nq < 16;
			     tok = strtok_r(NULL, ",", &save)) {
				qps[nq++] = (int)uiw_tool_arg_long(tok, 1, MAX_QPS,
								   "QP count");
			}
			break;
		case 'd':
			depth = (int)uiw_tool_arg_long(optarg, 1, 128, "depth");
			break;
		case 'n':
			iters = (int)uiw_tool_arg_long(optarg, 1, 100000000,
						       "sample count");
			break;
		case 'c':
			crc = uiw_tool_arg_onoff(optarg, "-c");
			break;
		case 'm':
			markers = uiw_tool_arg_onoff(optarg, "-m");
			break;
		case 'p':
			port = (unsigned)uiw_tool_arg_long(optarg, 0, 65535,
							   "port");
			break;
		case 'W':
			wire = 1;
			break;
		case 'w':
			wait_stdin = 1;
			break;
		default:
			usage();
		}
	}
	/* Before the devices start their threads: they inherit the mask.
	 * A signal ends a measurement early, and the program without
	 * figures. */
	uiw_tool_signals_init(NULL);
	if (wire)
		return wire_main(crc, markers, wait_stdin, port);
	return bench_main(crc, secs, depth, qps, nq ? nq : 2, iters);
}
