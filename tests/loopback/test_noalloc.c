/*
 * The data path in steady state allocates nothing and copies no bulk
 * payload through an intermediate buffer (DESIGN.md principle 5, issue
 * #5).
 *
 * malloc, calloc, realloc, free (and the aligned forms) are interposed in
 * this test binary: every call from the library, on any thread (the
 * application's, the progress threads), is counted while counting is on.
 * After a warm-up, thousands of RDMA Writes (8 octets and 64 KiB), RDMA
 * Reads, Sends, FetchAdds and CmpSwaps run in event mode (arm, poll(2) on
 * the CQ's fd) and in poll mode (uiw_cq_set_poll_mode: the test's thread
 * receives itself), every result checked; the count must be zero.  A
 * stream of 64 KiB Writes must also pass no payload octet through the
 * LLP's receive staging buffer (uiw_tcp_staged_bulk).
 *
 * Under AddressSanitizer, ThreadSanitizer or valgrind the allocator
 * belongs to the tool: the same loops run and are checked, without
 * counting.
 */
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <setjmp.h>
#include <cmocka.h>

#include "lb_util.h"
#include "../../src/llp/tcp.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define NOALLOC_COUNT 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
	__has_feature(memory_sanitizer)
#define NOALLOC_COUNT 0
#endif
#endif
#ifndef NOALLOC_COUNT
#define NOALLOC_COUNT 1
#endif


/* Under valgrind (its preload library) the allocator and the memory
 * figures are valgrind's: the checks then only report. */
static int under_valgrind(void)
{
	const char *p = getenv("LD_PRELOAD");

	return p && strstr(p, "vgpreload") != NULL;
}

static atomic_bool counting;
static atomic_ulong n_alloc, n_free;

#if NOALLOC_COUNT
/* glibc's own entry points, under the names it exports for this. */
extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t n, size_t m);
extern void *__libc_realloc(void *p, size_t n);
extern void *__libc_memalign(size_t a, size_t n);
extern void __libc_free(void *p);

static void count_alloc(void)
{
	if (atomic_load_explicit(&counting, memory_order_relaxed))
		atomic_fetch_add(&n_alloc, 1);
}

void *malloc(size_t n)
{
	count_alloc();
	return __libc_malloc(n);
}

void *calloc(size_t n, size_t m)
{
	count_alloc();
	return __libc_calloc(n, m);
}

void *realloc(void *p, size_t n)
{
	count_alloc();
	return __libc_realloc(p, n);
}

void free(void *p)
{
	if (p && atomic_load_explicit(&counting, memory_order_relaxed))
		atomic_fetch_add(&n_free, 1);
	__libc_free(p);
}

int posix_memalign(void **out, size_t a, size_t n)
{
	void *p;

	count_alloc();
	p = __libc_memalign(a, n);
	if (!p)
		return ENOMEM;
	*out = p;
	return 0;
}

void *aligned_alloc(size_t a, size_t n)
{
	count_alloc();
	return __libc_memalign(a, n);
}

void *memalign(size_t a, size_t n);
void *memalign(size_t a, size_t n)
{
	count_alloc();
	return __libc_memalign(a, n);
}
#endif

#define BIG      65536u
#define ITERS    1500
#define WARMUP   200

struct fixture {
	struct lbu_pair p;
	struct lbu_buf *cb, *sb;    /* client and server regions */
	int poll_mode;
	uint64_t expect_add;        /* the FetchAdd target's value */
	/* Poll mode: a completion found on the other side's CQ while
	 * waiting on this one, kept for its own wait */
	struct uiw_cq *held_cq;
	struct uiw_wc held;
};

static int fail_wc(const struct uiw_wc *wc, const char *what)
{
	char b[160];

	return lbu_fail("%s: %s", what, lbu_wc_str(wc, b, sizeof(b)));
}

/* One completion from cq.  Event mode: arm, poll, sleep on the fd.
 * Poll mode: uiw_cq_poll receives itself; the other side's CQ is polled
 * too, for the other side's receive (nobody else receives for it until
 * the engine's lease gives receiving back to its progress thread).  A
 * completion found there is kept for that side's own wait: one at most,
 * since each side has one operation outstanding. */
static int get_wc(struct fixture *f, struct uiw_cq *cq, struct uiw_cq *other,
		  struct uiw_wc *wc)
{
	int64_t deadline = lbu_now_ms() + lbu_timeout_ms();
	int r;

	if (f->held_cq == cq) {
		*wc = f->held;
		f->held_cq = NULL;
		return 0;
	}
	for (;;) {
		r = uiw_cq_poll(cq, 1, wc);
		if (r != 0)
			return r < 0 ? lbu_fail("uiw_cq_poll: %d", r) : 0;
		if (lbu_now_ms() > deadline)
			return lbu_fail("no completion in time");
		if (f->poll_mode) {
			if (f->held_cq)
				continue;
			r = uiw_cq_poll(other, 1, &f->held);
			if (r < 0)
				return lbu_fail("uiw_cq_poll: %d", r);
			if (r > 0)
				f->held_cq = other;
			continue;
		}
		if (uiw_cq_req_notify(cq, 0) < 0)
			return lbu_fail("req_notify");
		r = uiw_cq_poll(cq, 1, wc);
		if (r != 0)
			return r < 0 ? lbu_fail("uiw_cq_poll: %d", r) : 0;
		if (lbu_fd_readable(uiw_cq_fd(cq), 1000) < 0)
			return lbu_fail("poll on the CQ fd");
		uiw_cq_ack_events(cq);
	}
}

static int expect(struct fixture *f, struct uiw_cq *cq, struct uiw_cq *other,
		  uint64_t id, int opcode, uint32_t len)
{
	struct uiw_wc wc;

	if (get_wc(f, cq, other, &wc) < 0)
		return -1;
	if (wc.status != UIW_WC_SUCCESS || wc.wr_id != id ||
	    (int)wc.opcode != opcode || wc.byte_len != len)
		return fail_wc(&wc, "unexpected completion");
	return 0;
}

static int post(struct uiw_qp *qp, struct uiw_send_wr *wr)
{
	struct uiw_send_wr *bad = NULL;
	int r = uiw_post_send(qp, wr, &bad);

	return r < 0 ? lbu_fail("uiw_post_send: %d (%s)", r, lbu_err()) : 0;
}

/* One round of every operation; i varies the data. */
static int round_trip(struct fixture *f, unsigned i)
{
	struct lbu_side *c = &f->p.cli, *s = &f->p.srv;
	uint8_t *cm = f->cb->mem, *sm = f->sb->mem;
	struct uiw_sge sge = { .lkey = f->cb->mr->lkey };
	struct uiw_sge rsge = { .lkey = f->sb->mr->lkey };
	struct uiw_recv_wr rwr = { .sg_list = &rsge, .num_sge = 1 };
	struct uiw_recv_wr *rbad = NULL;
	struct uiw_send_wr wr;
	uint64_t v;

	/* 64 KiB RDMA Write, then an 8-octet one */
	memset(cm, (int)(i & 0xff), BIG);
	memset(&wr, 0, sizeof(wr));
	sge.addr = (uint64_t)(uintptr_t)cm;
	sge.length = BIG;
	wr.wr_id = 1;
	wr.opcode = UIW_WR_RDMA_WRITE;
	wr.send_flags = UIW_SEND_SIGNALED;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.wr.rdma.remote_addr = lbu_to(f->sb, 0);
	wr.wr.rdma.rkey = f->sb->mr->rkey;
	if (post(c->qp, &wr) < 0 ||
	    expect(f, c->scq, s->rcq, 1, UIW_WC_RDMA_WRITE, BIG) < 0)
		return -1;
	memcpy(cm + BIG, &i, sizeof(i));
	sge.addr = (uint64_t)(uintptr_t)(cm + BIG);
	sge.length = 8;
	wr.wr_id = 2;
	wr.wr.rdma.remote_addr = lbu_to(f->sb, BIG);
	if (post(c->qp, &wr) < 0 ||
	    expect(f, c->scq, s->rcq, 2, UIW_WC_RDMA_WRITE, 8) < 0)
		return -1;
	/* RDMA Read of 4 KiB of what was written (RFC 5040 §5.5: the Read
	 * Response follows the Writes, so it sees them) */
	memset(cm + 2 * BIG, 0, 4096);
	sge.addr = (uint64_t)(uintptr_t)(cm + 2 * BIG);
	sge.length = 4096;
	wr.wr_id = 3;
	wr.opcode = UIW_WR_RDMA_READ;
	wr.wr.rdma.remote_addr = lbu_to(f->sb, 4096);
	if (post(c->qp, &wr) < 0 ||
	    expect(f, c->scq, s->rcq, 3, UIW_WC_RDMA_READ, 4096) < 0)
		return -1;
	if (lbu_verify_byte(cm + 2 * BIG, 4096, (uint8_t)(i & 0xff),
			    "Read") < 0 ||
	    memcmp(sm + BIG, &i, sizeof(i)) != 0)
		return lbu_fail("round %u: data at the sink is wrong", i);
	/* Send of 1 KiB into a posted receive */
	rsge.addr = (uint64_t)(uintptr_t)(sm + 2 * BIG);
	rsge.length = 1024;
	rwr.wr_id = 4;
	if (uiw_post_recv(s->qp, &rwr, &rbad) < 0)
		return lbu_fail("uiw_post_recv: %s", lbu_err());
	memset(cm + 3 * BIG, (int)((i + 1) & 0xff), 1024);
	sge.addr = (uint64_t)(uintptr_t)(cm + 3 * BIG);
	sge.length = 1024;
	wr.wr_id = 5;
	wr.opcode = UIW_WR_SEND;
	if (post(c->qp, &wr) < 0 ||
	    expect(f, c->scq, s->rcq, 5, UIW_WC_SEND, 1024) < 0 ||
	    expect(f, s->rcq, c->scq, 4, UIW_WC_RECV, 1024) < 0 ||
	    lbu_verify_byte(sm + 2 * BIG, 1024, (uint8_t)((i + 1) & 0xff),
			    "Send") < 0)
		return -1;
	/* FetchAdd and CmpSwap on an aligned word (RFC 7306 §5.1) */
	memset(&wr, 0, sizeof(wr));
	sge.addr = (uint64_t)(uintptr_t)(cm + 4 * BIG);
	sge.length = 8;
	wr.wr_id = 6;
	wr.opcode = UIW_WR_ATOMIC_FETCH_ADD;
	wr.send_flags = UIW_SEND_SIGNALED;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.wr.atomic.remote_addr = lbu_to(f->sb, 3 * BIG);
	wr.wr.atomic.rkey = f->sb->mr->rkey;
	wr.wr.atomic.compare_add = 3;
	if (post(c->qp, &wr) < 0 ||
	    expect(f, c->scq, s->rcq, 6, UIW_WC_FETCH_ADD, 8) < 0)
		return -1;
	memcpy(&v, cm + 4 * BIG, 8);
	if (v != f->expect_add)
		return lbu_fail("FetchAdd returned %llu, expected %llu",
				(unsigned long long)v,
				(unsigned long long)f->expect_add);
	f->expect_add += 3;
	wr.wr_id = 7;
	wr.opcode = UIW_WR_ATOMIC_CMP_SWP;
	wr.wr.atomic.compare_add = f->expect_add;
	wr.wr.atomic.swap = f->expect_add + 1;
	if (post(c->qp, &wr) < 0 ||
	    expect(f, c->scq, s->rcq, 7, UIW_WC_CMP_SWP, 8) < 0)
		return -1;
	memcpy(&v, cm + 4 * BIG, 8);
	if (v != f->expect_add)
		return lbu_fail("CmpSwap returned %llu, expected %llu",
				(unsigned long long)v,
				(unsigned long long)f->expect_add);
	f->expect_add += 1;
	if (f->held_cq)
		return fail_wc(&f->held, "unexpected completion on the other side");
	return 0;
}

static int setup(void **state)
{
	static const unsigned acc = UIW_ACCESS_LOCAL_WRITE |
		UIW_ACCESS_REMOTE_WRITE | UIW_ACCESS_REMOTE_READ |
		UIW_ACCESS_REMOTE_ATOMIC;
	struct fixture *f = calloc(1, sizeof(*f));
	struct lbu_opts o;

	assert_non_null(f);
	lbu_opts_init(&o);
	o.crc = UIW_OPT_ON;
	if (lbu_pair_connect(&f->p, &o) < 0)
		fail_msg("connect: %s", lbu_err());
	f->cb = lbu_buf_alloc(&f->p.cli, 5 * BIG, acc);
	f->sb = lbu_buf_alloc(&f->p.srv, 5 * BIG, acc);
	assert_non_null(f->cb);
	assert_non_null(f->sb);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	lbu_pair_destroy(&f->p);
	free(f);
	return 0;
}

static void run_mode(struct fixture *f, int poll_mode)
{
	unsigned long a, fr;
	unsigned i;

	f->poll_mode = poll_mode;
	assert_int_equal(uiw_cq_set_poll_mode(f->p.cli.scq, poll_mode), 0);
	assert_int_equal(uiw_cq_set_poll_mode(f->p.srv.rcq, poll_mode), 0);
	if (f->p.cli.rcq != f->p.cli.scq)
		assert_int_equal(uiw_cq_set_poll_mode(f->p.cli.rcq,
						      poll_mode), 0);
	if (f->p.srv.scq != f->p.srv.rcq)
		assert_int_equal(uiw_cq_set_poll_mode(f->p.srv.scq,
						      poll_mode), 0);
	for (i = 0; i < WARMUP; i++)
		if (round_trip(f, i) < 0)
			fail_msg("warm-up round %u: %s", i, lbu_err());
	if (NOALLOC_COUNT && !under_valgrind()) {
		/* The counter sees the library's allocations (a CQ is made
		 * with calloc): the zero below means something. */
		struct uiw_cq *cq;

		atomic_store(&n_alloc, 0);
		atomic_store(&counting, true);
		cq = uiw_cq_create(f->p.cli.dev, 4);
		atomic_store(&counting, false);
		assert_non_null(cq);
		assert_int_equal(uiw_cq_destroy(cq), 0);
		assert_true(atomic_load(&n_alloc) > 0);
	}
	atomic_store(&n_alloc, 0);
	atomic_store(&n_free, 0);
	atomic_store(&counting, true);
	for (i = 0; i < ITERS; i++)
		if (round_trip(f, WARMUP + i) < 0) {
			atomic_store(&counting, false);
			fail_msg("round %u: %s", i, lbu_err());
		}
	atomic_store(&counting, false);
	a = atomic_load(&n_alloc);
	fr = atomic_load(&n_free);
	printf("%s mode: %u rounds of 7 operations, %lu allocations, "
	       "%lu frees%s\n", poll_mode ? "poll" : "event", ITERS, a, fr,
	       NOALLOC_COUNT && !under_valgrind() ? "" :
	       " (not counted under a sanitizer or valgrind)");
	assert_int_equal(a, 0);
	assert_int_equal(fr, 0);
}

static void test_noalloc_event(void **state)
{
	run_mode(*state, 0);
}

static void test_noalloc_poll(void **state)
{
	run_mode(*state, 1);
	/* Back to event mode: the progress thread receives again. */
	run_mode(*state, 0);
}

/* A steady stream of 64 KiB Writes goes from the socket straight into
 * the region: nothing passes through the staging buffer. */
static void test_bulk_not_staged(void **state)
{
	struct fixture *f = *state;
	struct uiw_sge sge = { .lkey = f->cb->mr->lkey, .length = BIG };
	struct uiw_send_wr wr, *bad;
	struct uiw_wc wc;
	uint64_t before;
	unsigned i, k;

	f->poll_mode = 0;
	memset(&wr, 0, sizeof(wr));
	wr.opcode = UIW_WR_RDMA_WRITE;
	wr.send_flags = UIW_SEND_SIGNALED;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.wr.rdma.rkey = f->sb->mr->rkey;
	for (k = 0; k < 2; k++) {
		/* k 0: warm-up (the switch from small FPDUs may stage
		 * once); k 1: measured */
		before = atomic_load(&uiw_tcp_staged_bulk);
		for (i = 0; i < 400; i++) {
			sge.addr = (uint64_t)(uintptr_t)(f->cb->mem +
							 (i % 4) * BIG);
			wr.wr_id = i;
			wr.wr.rdma.remote_addr = lbu_to(f->sb, (i % 4) * BIG);
			assert_int_equal(uiw_post_send(f->p.cli.qp, &wr, &bad),
					 0);
			if (i >= 8) {
				assert_int_equal(get_wc(f, f->p.cli.scq,
							f->p.srv.rcq, &wc), 0);
				assert_int_equal(wc.status, UIW_WC_SUCCESS);
			}
		}
		for (i = 0; i < 8; i++) {
			assert_int_equal(get_wc(f, f->p.cli.scq, f->p.srv.rcq,
						&wc), 0);
			assert_int_equal(wc.status, UIW_WC_SUCCESS);
		}
	}
	/* The last Write is placed once a Read after it returns. */
	sge.addr = (uint64_t)(uintptr_t)(f->cb->mem + 4 * BIG);
	sge.length = 8;
	wr.opcode = UIW_WR_RDMA_READ;
	wr.wr.rdma.remote_addr = lbu_to(f->sb, 0);
	wr.wr_id = 99;
	assert_int_equal(uiw_post_send(f->p.cli.qp, &wr, &bad), 0);
	assert_int_equal(get_wc(f, f->p.cli.scq, f->p.srv.rcq, &wc), 0);
	assert_int_equal(wc.status, UIW_WC_SUCCESS);
	printf("64 KiB Writes: %llu payload octets through staging\n",
	       (unsigned long long)(atomic_load(&uiw_tcp_staged_bulk) -
				    before));
	/* Instrumented runs are slow enough to change how the stream is
	 * cut into reads: report only. */
	if (NOALLOC_COUNT && !under_valgrind())
		assert_int_equal(atomic_load(&uiw_tcp_staged_bulk) - before,
				 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_noalloc_event, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_noalloc_poll, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_bulk_not_staged, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
