/*
 * Many connections at once: 8 connections whose 16 QPs live on one
 * device, driven from one thread through a shared CQ and from four
 * threads at once; and 3 devices in one process, each with a client and
 * a server end, with traffic in both directions.  Data verified.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lb_util.h"

#define ACC_ALL (UIW_ACCESS_LOCAL_WRITE | UIW_ACCESS_REMOTE_WRITE | \
		 UIW_ACCESS_REMOTE_READ)

#define NPAIRS 8
#define NDEVS 3
#define NTHREADS 4
#define ROUNDS 3

/* Per round and connection: NW Writes (only the last signalled), NS
 * Sends and NR Reads, all posted as one chain. */
#define W_LEN (256u * 1024u)
#define S_LEN (64u * 1024u + 3u)
#define R_LEN (256u * 1024u + 1u)
#define NW 4
#define NS 4
#define NR 2
#define NSIG (1 + NS + NR)
#define NWR (NW + NS + NR)

struct traffic {
	struct lbu_side *from, *to;     /* requester and responder */
	struct lbu_buf *src;            /* from: Write/Send source */
	struct lbu_buf *rsink;          /* from: Read sink */
	struct lbu_buf *dst;            /* to: Write/Send sink */
	struct lbu_buf *rsrc;           /* to: Read source */
	uint32_t seed;
};

static size_t w_off(int i) { return (size_t)i * W_LEN; }
static size_t s_off(int i) { return NW * (size_t)W_LEN + (size_t)i * S_LEN; }
static size_t r_off(int i) { return (size_t)i * R_LEN; }
#define SRC_LEN (NW * (size_t)W_LEN + NS * (size_t)S_LEN)
#define RD_LEN (NR * (size_t)R_LEN)

static uint32_t seed_of(const struct traffic *t, int round, int idx)
{
	return t->seed * 1000 + (uint32_t)round * 16 + (uint32_t)idx;
}

static uint64_t id_of(int round, int idx)
{
	return (uint64_t)round * 100 + (uint64_t)idx;
}

static int traffic_init(struct traffic *t, struct lbu_side *from,
			struct lbu_side *to, uint32_t seed)
{
	memset(t, 0, sizeof(*t));
	t->from = from;
	t->to = to;
	t->seed = seed;
	if (!(t->src = lbu_buf_alloc(from, SRC_LEN, ACC_ALL)) ||
	    !(t->rsink = lbu_buf_alloc(from, RD_LEN, ACC_ALL)) ||
	    !(t->dst = lbu_buf_alloc(to, SRC_LEN, ACC_ALL)) ||
	    !(t->rsrc = lbu_buf_alloc(to, RD_LEN, ACC_ALL)))
		return -1;
	return 0;
}

/* Posts one round; returns -1 with a message on failure (thread safe). */
static int traffic_post(struct traffic *t, int round)
{
	struct uiw_send_wr wr[NWR], *bad = NULL;
	struct uiw_sge sge[NWR];
	int i, k = 0, rc;

	for (i = 0; i < NS; i++)
		if (lbu_post_recv(t->to, id_of(round, NW + i), t->dst,
				  s_off(i), S_LEN) < 0)
			return -1;
	memset(wr, 0, sizeof(wr));
	for (i = 0; i < NW; i++, k++) {
		lbu_fill(t->src->mem + w_off(i), W_LEN, seed_of(t, round, k));
		sge[k].addr = (uint64_t)(uintptr_t)(t->src->mem + w_off(i));
		sge[k].length = W_LEN;
		sge[k].lkey = t->src->mr->lkey;
		wr[k].opcode = UIW_WR_RDMA_WRITE;
		wr[k].send_flags = i == NW - 1 ? UIW_SEND_SIGNALED : 0;
		wr[k].wr.rdma.remote_addr = lbu_to(t->dst, w_off(i));
		wr[k].wr.rdma.rkey = t->dst->mr->rkey;
	}
	for (i = 0; i < NS; i++, k++) {
		lbu_fill(t->src->mem + s_off(i), S_LEN, seed_of(t, round, k));
		sge[k].addr = (uint64_t)(uintptr_t)(t->src->mem + s_off(i));
		sge[k].length = S_LEN;
		sge[k].lkey = t->src->mr->lkey;
		wr[k].opcode = UIW_WR_SEND;
		wr[k].send_flags = UIW_SEND_SIGNALED |
				   (i == NS - 1 ? UIW_SEND_SOLICITED : 0);
	}
	for (i = 0; i < NR; i++, k++) {
		lbu_fill(t->rsrc->mem + r_off(i), R_LEN, seed_of(t, round, k));
		memset(t->rsink->mem + r_off(i), 0, R_LEN);
		sge[k].addr = (uint64_t)(uintptr_t)(t->rsink->mem + r_off(i));
		sge[k].length = R_LEN;
		sge[k].lkey = t->rsink->mr->lkey;
		wr[k].opcode = UIW_WR_RDMA_READ;
		wr[k].send_flags = UIW_SEND_SIGNALED;
		wr[k].wr.rdma.remote_addr = lbu_to(t->rsrc, r_off(i));
		wr[k].wr.rdma.rkey = t->rsrc->mr->rkey;
	}
	for (k = 0; k < NWR; k++) {
		wr[k].wr_id = id_of(round, k);
		wr[k].sg_list = &sge[k];
		wr[k].num_sge = 1;
		wr[k].next = k + 1 < NWR ? &wr[k + 1] : NULL;
	}
	rc = uiw_post_send(t->from->qp, wr, &bad);
	if (rc < 0)
		return lbu_fail("%s: uiw_post_send of %d WRs: %s (%s)",
				t->from->name, NWR, strerror(-rc),
				uiw_last_error());
	return 0;
}

/* The signalled requester completions of a round, in order. */
static int traffic_check_sent(const struct traffic *t, int round,
			      const struct uiw_wc *wc)
{
	static const int idx[NSIG] = { NW - 1, NW, NW + 1, NW + 2, NW + 3,
				       NW + NS, NW + NS + 1 };
	char d[256];
	int i;

	for (i = 0; i < NSIG; i++) {
		int op = idx[i] < NW ? UIW_WC_RDMA_WRITE :
			 idx[i] < NW + NS ? UIW_WC_SEND : UIW_WC_RDMA_READ;

		if (wc[i].wr_id != id_of(round, idx[i]) ||
		    wc[i].status != UIW_WC_SUCCESS || (int)wc[i].opcode != op ||
		    wc[i].qp != t->from->qp ||
		    wc[i].qp_num != t->from->attr.qp_num)
			return lbu_fail("%s round %d: completion %d is %s, "
					"expected wr_id %" PRIu64 " opcode %d",
					t->from->name, round, i,
					lbu_wc_str(&wc[i], d, sizeof(d)),
					id_of(round, idx[i]), op);
		if (op == UIW_WC_RDMA_READ && wc[i].byte_len != R_LEN)
			return lbu_fail("Read byte_len %u", wc[i].byte_len);
	}
	return 0;
}

/* Waits for the responder's receives, then checks all data. */
static int traffic_finish(struct traffic *t, int round)
{
	struct uiw_wc wc[NS];
	char d[256], what[96];
	int i, k;

	if (lbu_wait_wc(t->to->rcq, wc, NS) < 0)
		return -1;
	for (i = 0; i < NS; i++) {
		if (wc[i].wr_id != id_of(round, NW + i) ||
		    wc[i].status != UIW_WC_SUCCESS ||
		    wc[i].opcode != UIW_WC_RECV || wc[i].byte_len != S_LEN ||
		    wc[i].qp != t->to->qp ||
		    !!(wc[i].flags & UIW_WC_F_SOLICITED) != (i == NS - 1))
			return lbu_fail("%s round %d: receive %d is %s",
					t->to->name, round, i,
					lbu_wc_str(&wc[i], d, sizeof(d)));
	}
	/* The last Send has been delivered, so the Writes before it have
	 * been placed (RFC 5040 §5.5). */
	for (k = 0; k < NWR; k++) {
		const uint8_t *p;
		size_t len;

		snprintf(what, sizeof(what), "%s->%s seed %u round %d WR %d",
			 t->from->name, t->to->name, t->seed, round, k);
		if (k < NW) {
			p = t->dst->mem + w_off(k);
			len = W_LEN;
		} else if (k < NW + NS) {
			p = t->dst->mem + s_off(k - NW);
			len = S_LEN;
		} else {
			p = t->rsink->mem + r_off(k - NW - NS);
			len = R_LEN;
		}
		if (lbu_verify(p, len, seed_of(t, round, k), what) < 0)
			return -1;
	}
	return 0;
}

/* ------------------------------------------------------------------ */

struct multi {
	struct lbu_pair pairs[NPAIRS];
	struct traffic tr[2 * NPAIRS];
	int npairs;
	struct uiw_device *devs[NDEVS];
	int ndevs;
	struct lbu_listener lst[NDEVS];
	struct uiw_cq *shared;
};

static int setup(void **state)
{
	struct multi *m = calloc(1, sizeof(*m));

	if (!m)
		return -1;
	*state = m;
	return 0;
}

static int teardown(void **state)
{
	struct multi *m = *state;
	int i, rc, ret = 0;

	for (i = 0; i < m->npairs; i++) {
		if (lbu_pair_destroy(&m->pairs[i]) < 0) {
			print_error("teardown pair %d: %s\n", i, lbu_err());
			ret = -1;
		}
	}
	for (i = 0; i < NDEVS; i++) {
		if (lbu_listener_close(&m->lst[i]) < 0) {
			print_error("teardown listener: %s\n", lbu_err());
			ret = -1;
		}
	}
	if (m->shared) {
		rc = uiw_cq_destroy(m->shared);
		if (rc < 0) {
			print_error("uiw_cq_destroy: %d (%s)\n", rc,
				    uiw_last_error());
			ret = -1;
		}
	}
	for (i = 0; i < m->ndevs; i++) {
		rc = uiw_device_close(m->devs[i]);
		if (rc < 0) {
			print_error("uiw_device_close: %d (%s)\n", rc,
				    uiw_last_error());
			ret = -1;
		}
	}
	free(m);
	return ret;
}

static struct uiw_device *open_dev(struct multi *m)
{
	struct uiw_device *d = uiw_device_open(NULL);

	if (!d)
		fail_msg("uiw_device_open: %s", uiw_last_error());
	m->devs[m->ndevs++] = d;
	return d;
}

static void connect_on(struct multi *m, struct uiw_device *cdev,
		       struct uiw_device *sdev, struct lbu_listener *l,
		       struct uiw_cq *cli_cq)
{
	struct lbu_opts o;

	lbu_opts_init(&o);
	o.cli_dev = cdev;
	o.srv_dev = sdev;
	o.lst = l;
	o.cli_scq = o.cli_rcq = cli_cq;
	o.sq_depth = 2 * NWR;
	o.rq_depth = 2 * NS;
	/* Alternate the framing options between connections. */
	o.crc = m->npairs % 2 ? UIW_OPT_OFF : UIW_OPT_ON;
	o.cli_markers = m->npairs % 3 == 1 ? UIW_OPT_ON : UIW_OPT_OFF;
	o.srv_markers = m->npairs % 3 == 2 ? UIW_OPT_ON : UIW_OPT_OFF;
	LBU_OK(lbu_pair_connect(&m->pairs[m->npairs], &o));
	m->npairs++;
}

/* 8 connections, 16 QPs, one device; the clients share one CQ; all
 * traffic posted before any of it is awaited. */
static void test_qps_one_device(void **state)
{
	struct multi *m = *state;
	struct uiw_device *dev = open_dev(m);
	struct uiw_wc wc[NPAIRS * NSIG];
	struct uiw_wc per[NPAIRS][NSIG];
	int nper[NPAIRS];
	int i, j, round;

	LBU_OK(lbu_listener_open(&m->lst[0], dev));
	m->shared = uiw_cq_create(dev, NPAIRS * (NSIG + NS) + 16);
	LBU_NN(m->shared);
	for (i = 0; i < NPAIRS; i++)
		connect_on(m, dev, dev, &m->lst[0], m->shared);
	/* 16 distinct QP numbers. */
	for (i = 0; i < 2 * NPAIRS; i++)
		for (j = i + 1; j < 2 * NPAIRS; j++) {
			struct lbu_side *a = i % 2 ? &m->pairs[i / 2].srv :
						     &m->pairs[i / 2].cli;
			struct lbu_side *b = j % 2 ? &m->pairs[j / 2].srv :
						     &m->pairs[j / 2].cli;

			assert_int_not_equal(a->attr.qp_num, b->attr.qp_num);
		}
	for (i = 0; i < NPAIRS; i++)
		LBU_OK(traffic_init(&m->tr[i], &m->pairs[i].cli,
				    &m->pairs[i].srv, i + 1));

	for (round = 0; round < ROUNDS; round++) {
		for (i = 0; i < NPAIRS; i++)
			LBU_OK(traffic_post(&m->tr[i], round));
		/* Sort the shared CQ's completions by QP. */
		LBU_OK(lbu_wait_wc(m->shared, wc, NPAIRS * NSIG));
		memset(nper, 0, sizeof(nper));
		for (j = 0; j < NPAIRS * NSIG; j++) {
			struct lbu_side *s = uiw_qp_context(wc[j].qp);

			for (i = 0; i < NPAIRS; i++)
				if (s == &m->pairs[i].cli)
					break;
			if (i == NPAIRS) {
				char d[256];

				fail_msg("completion for an unknown QP: %s",
					 lbu_wc_str(&wc[j], d, sizeof(d)));
			}
			if (nper[i] == NSIG)
				fail_msg("too many completions for pair %d", i);
			per[i][nper[i]++] = wc[j];
		}
		for (i = 0; i < NPAIRS; i++) {
			LBU_OK(traffic_check_sent(&m->tr[i], round, per[i]));
			LBU_OK(traffic_finish(&m->tr[i], round));
		}
		LBU_OK(lbu_cq_empty(m->shared, "shared CQ"));
	}
}

/* ------------------------------------------------------------------ */

struct worker {
	pthread_t th;
	struct traffic *tr[NPAIRS];
	int n;
	int rc;
	char msg[768];
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct uiw_wc wc[NSIG];
	int round, i;

	for (round = 0; round < ROUNDS; round++) {
		for (i = 0; i < w->n; i++)
			if (traffic_post(w->tr[i], round) < 0)
				goto fail;
		for (i = 0; i < w->n; i++) {
			if (lbu_wait_wc(w->tr[i]->from->scq, wc, NSIG) < 0 ||
			    traffic_check_sent(w->tr[i], round, wc) < 0 ||
			    traffic_finish(w->tr[i], round) < 0)
				goto fail;
		}
	}
	return NULL;
fail:
	w->rc = -1;
	snprintf(w->msg, sizeof(w->msg), "%s", lbu_err());
	return NULL;
}

/* 8 connections on one device, driven by 4 threads at once, with
 * traffic in both directions on every connection. */
static void test_qps_threads(void **state)
{
	struct multi *m = *state;
	struct uiw_device *dev = open_dev(m);
	struct worker w[NTHREADS];
	int i;

	LBU_OK(lbu_listener_open(&m->lst[0], dev));
	for (i = 0; i < NPAIRS; i++)
		connect_on(m, dev, dev, &m->lst[0], NULL);
	memset(w, 0, sizeof(w));
	for (i = 0; i < NPAIRS; i++) {
		struct worker *wk = &w[i % NTHREADS];

		/* pair i: client -> server and server -> client, each
		 * direction from its own thread */
		LBU_OK(traffic_init(&m->tr[2 * i], &m->pairs[i].cli,
				    &m->pairs[i].srv, 10 + i));
		LBU_OK(traffic_init(&m->tr[2 * i + 1], &m->pairs[i].srv,
				    &m->pairs[i].cli, 50 + i));
		wk->tr[wk->n++] = &m->tr[2 * i];
		w[(i + 1) % NTHREADS].tr[w[(i + 1) % NTHREADS].n++] =
			&m->tr[2 * i + 1];
	}
	for (i = 0; i < NTHREADS; i++)
		assert_int_equal(pthread_create(&w[i].th, NULL, worker_main,
						&w[i]), 0);
	for (i = 0; i < NTHREADS; i++)
		assert_int_equal(pthread_join(w[i].th, NULL), 0);
	for (i = 0; i < NTHREADS; i++)
		if (w[i].rc)
			fail_msg("thread %d: %s", i, w[i].msg);
}

/* ------------------------------------------------------------------ */

/* 3 devices; device i's client connects to device i+1's server, so
 * every device has a client and a server end; traffic both ways. */
static void test_devices(void **state)
{
	struct multi *m = *state;
	struct uiw_device_attr a[NDEVS];
	struct worker w[NDEVS];
	int i, j;

	for (i = 0; i < NDEVS; i++) {
		open_dev(m);
		LBU_OK(uiw_device_query(m->devs[i], &a[i]));
		assert_true(strlen(a[i].name) > 0);
		for (j = 0; j < i; j++)
			assert_string_not_equal(a[i].name, a[j].name);
		LBU_OK(lbu_listener_open(&m->lst[i], m->devs[i]));
	}
	for (i = 0; i < NDEVS; i++)
		connect_on(m, m->devs[i], m->devs[(i + 1) % NDEVS],
			   &m->lst[(i + 1) % NDEVS], NULL);
	/* A device with objects on it cannot close. */
	assert_int_equal(uiw_device_close(m->devs[0]), -EBUSY);

	memset(w, 0, sizeof(w));
	for (i = 0; i < NDEVS; i++) {
		LBU_OK(traffic_init(&m->tr[2 * i], &m->pairs[i].cli,
				    &m->pairs[i].srv, 100 + i));
		LBU_OK(traffic_init(&m->tr[2 * i + 1], &m->pairs[i].srv,
				    &m->pairs[i].cli, 200 + i));
		/* thread i drives everything device i requests */
		w[i].tr[w[i].n++] = &m->tr[2 * i];
		w[(i + 1) % NDEVS].tr[w[(i + 1) % NDEVS].n++] =
			&m->tr[2 * i + 1];
	}
	for (i = 0; i < NDEVS; i++)
		assert_int_equal(pthread_create(&w[i].th, NULL, worker_main,
						&w[i]), 0);
	for (i = 0; i < NDEVS; i++)
		assert_int_equal(pthread_join(w[i].th, NULL), 0);
	for (i = 0; i < NDEVS; i++)
		if (w[i].rc)
			fail_msg("device %d thread: %s", i, w[i].msg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_qps_one_device, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_qps_threads, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_devices, setup, teardown),
	};

	return cmocka_run_group_tests_name("loopback_multi", tests, NULL,
					   NULL);
}
