/* The MPA alignment plan (uiw_mpa_plan, RFC 5044 §5.1): a batch of FPDUs
 * cut into messages at FPDU boundaries, small whole FPDUs sharing a
 * message while they fit the EMSS, the rest of a partly sent FPDU
 * alone, a batch cut inside an FPDU sending its whole ones first, and
 * runs of FPDUs when alignment is given up. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "llp/mpa.h"

#define EMSS 1448

static uint8_t buf[1 << 20];

struct plan {
	struct uiw_mpa_batch b;
	struct iovec iov[64];
	struct iovec mv[64 + 16];
	struct uiw_mpa_msg msg[16];
	unsigned k;
	size_t planned;
	bool eor;
};

/* A batch at stream position pos: FPDUs of the lengths in len[] (0
 * ends the list), the last cut to cut octets when cut is not 0, each
 * FPDU in two iovecs (header, the rest) so that messages split them. */
static void batch(struct plan *p, uint64_t pos, bool mid, const size_t *len,
		  size_t cut)
{
	size_t off = 0, i;

	memset(p, 0, sizeof(*p));
	p->b.iov = p->iov;
	p->b.pos = pos;
	p->b.mid = mid;
	for (i = 0; len[i]; i++) {
		size_t l = len[i + 1] == 0 && cut ? cut : len[i];
		size_t h = l < 20 ? l : 20;

		p->iov[p->b.n].iov_base = buf + off;
		p->iov[p->b.n++].iov_len = h;
		if (l > h) {
			p->iov[p->b.n].iov_base = buf + off + h;
			p->iov[p->b.n++].iov_len = l - h;
		}
		off += l;
		if (!(len[i + 1] == 0 && cut))
			p->b.ends[p->b.nends++] = pos + off;
	}
	p->b.total = off;
}

static void plan(struct plan *p, bool unaligned, bool multi, bool markers)
{
	struct uiw_mpa_plan_in in = {
		.emss = EMSS, .multi = multi, .unaligned = unaligned,
		.markers = markers,
	};

	p->k = uiw_mpa_plan(&p->b, &in, p->mv, p->msg, 16, &p->planned,
			    &p->eor);
}

static size_t msg_len(const struct plan *p, unsigned j)
{
	size_t i, n = 0;

	for (i = 0; i < p->msg[j].iovlen; i++)
		n += p->msg[j].iov[i].iov_len;
	return n;
}

/* The messages follow each other over the batch's octets, in order. */
static void contiguous(const struct plan *p)
{
	const uint8_t *at = buf;
	unsigned j;
	size_t i;

	for (j = 0; j < p->k; j++)
		for (i = 0; i < p->msg[j].iovlen; i++) {
			assert_ptr_equal(p->msg[j].iov[i].iov_base, at);
			at += p->msg[j].iov[i].iov_len;
		}
	assert_int_equal(at - buf, p->planned);
}

static void test_small_batch_one_message(void **state)
{
	static const size_t len[] = { 40, 60, 100, 0 };
	struct plan p;

	(void)state;
	batch(&p, 0, false, len, 0);
	plan(&p, false, false, false);
	assert_int_equal(p.k, 1);
	assert_int_equal(p.planned, 200);
	assert_true(p.eor);
	contiguous(&p);
	/* without alignment too, but nothing keeps the message's end */
	plan(&p, true, false, false);
	assert_int_equal(p.k, 1);
	assert_false(p.eor);
}

static void test_fpdus_share_while_they_fit(void **state)
{
	static const size_t len[] = { 100, 1448, 100, 100, 1300, 0 };
	struct plan p;

	(void)state;
	batch(&p, 4096, false, len, 0);
	plan(&p, false, false, false);
	/* 100 | 1448 (no room with 100) | 100 + 100 | 1300 (no room) */
	assert_int_equal(p.k, 4);
	assert_int_equal(msg_len(&p, 0), 100);
	assert_int_equal(msg_len(&p, 1), 1448);
	assert_int_equal(msg_len(&p, 2), 200);
	assert_int_equal(msg_len(&p, 3), 1300);
	assert_int_equal(p.planned, p.b.total);
	assert_true(p.eor);
	contiguous(&p);
}

static void test_markers_a_message_per_fpdu(void **state)
{
	static const size_t len[] = { 100, 200, 100, 200, 100, 200, 0 };
	struct plan p;

	(void)state;
	batch(&p, 0, false, len, 0);
	plan(&p, false, false, true);
	assert_int_equal(p.k, 6);
	contiguous(&p);
}

/* Where a message may span segments, the fill is that of its last
 * segment: FPDUs as long as the EMSS and a small one still share. */
static void test_multi_segment_messages(void **state)
{
	static const size_t len[] = { 1448, 1448, 200, 1448, 0 };
	struct plan p;

	(void)state;
	batch(&p, 0, false, len, 0);
	plan(&p, false, true, false);
	assert_int_equal(p.k, 2);
	assert_int_equal(msg_len(&p, 0), 1448 * 2 + 200);
	assert_int_equal(msg_len(&p, 1), 1448);
	contiguous(&p);
}

/* The rest of a partly sent FPDU goes alone. */
static void test_rest_alone(void **state)
{
	static const size_t len[] = { 60, 0 };
	struct plan p;

	(void)state;
	batch(&p, 1000, true, len, 0);
	plan(&p, false, false, false);
	assert_int_equal(p.k, 1);
	assert_int_equal(p.planned, 60);
	plan(&p, true, false, false);
	assert_int_equal(p.k, 1);
	assert_false(p.eor);
}

/* A batch cut inside an FPDU (the carrier's iovec limit): the whole
 * ones now, that one whole in the next batch; cut inside its first, it
 * goes as the batch's single message. */
static void test_cut_batch(void **state)
{
	static const size_t len[] = { 600, 1000, 1400, 0 };
	static const size_t one[] = { 1400, 0 };
	struct plan p;

	(void)state;
	batch(&p, 0, false, len, 500);
	plan(&p, false, false, false);
	assert_int_equal(p.k, 2);
	assert_int_equal(p.planned, 1600);
	contiguous(&p);
	batch(&p, 0, false, one, 500);
	plan(&p, false, false, false);
	assert_int_equal(p.k, 1);
	assert_int_equal(p.planned, 500);
}

/* Alignment given up: the first whole FPDU alone when more follows,
 * the rest as one message. */
static void test_runs(void **state)
{
	static const size_t len[] = { 64776, 64776, 2000, 0 };
	static const size_t one[] = { 64776, 0 };
	struct plan p;

	(void)state;
	batch(&p, 0, false, len, 0);
	plan(&p, true, false, false);
	assert_int_equal(p.k, 2);
	assert_int_equal(msg_len(&p, 0), 64776);
	assert_int_equal(msg_len(&p, 1), 64776 + 2000);
	assert_true(p.eor);
	contiguous(&p);
	/* a single FPDU, or a rest first: one message */
	batch(&p, 0, false, one, 0);
	plan(&p, true, false, false);
	assert_int_equal(p.k, 1);
	assert_false(p.eor);
	batch(&p, 8, true, len, 0);
	plan(&p, true, false, false);
	assert_int_equal(p.k, 1);
	assert_int_equal(p.planned, p.b.total);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_small_batch_one_message),
		cmocka_unit_test(test_fpdus_share_while_they_fit),
		cmocka_unit_test(test_markers_a_message_per_fpdu),
		cmocka_unit_test(test_multi_segment_messages),
		cmocka_unit_test(test_rest_alone),
		cmocka_unit_test(test_cut_batch),
		cmocka_unit_test(test_runs),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
