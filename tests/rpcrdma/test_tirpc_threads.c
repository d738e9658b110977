/*
 * Several threads calling clnt_call at once on one RPC-over-RDMA
 * CLIENT (each with its own results, as rpcgen -M's stubs would), and
 * several CLIENTs at once on one server; the server's counts summed
 * over its connections gone.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "tirpc_util.h"

#define NTHREADS 4
#define NCALLS 40

/* the group's server, and the RPC-over-RDMA calls it must count */
#define srv rrt_group_srv
#define rdma_calls rrt_group_calls

struct worker {
	pthread_t t;
	CLIENT *cl;             /* shared, or the worker's own */
	bool own;
	unsigned id, ok;
	char why[256];
};

static void *work(void *arg)
{
	struct worker *w = arg;
	static const size_t sizes[] = { 0, 17, 4000, 5000, 70000, 300001 };
	uint8_t *buf = malloc(300001);
	struct timeval tmo = { 20, 0 };
	char tag[] = "thr";

	if (w->own)
		w->cl = rrt_client(&srv, RRT_RDMA);
	for (unsigned i = 0; buf && w->cl && i < NCALLS; i++) {
		size_t n = sizes[(i + w->id) % 6];
		rrt_echo_args a = { { 3, tag }, w->id * 1000 + i,
				    { (u_int)n, (char *)buf } };
		rrt_echo_res r;
		enum clnt_stat st;

		rrt_fill(buf, n, a.seq);
		memset(&r, 0, sizeof(r));
		st = clnt_call(w->cl, RRTPROC_ECHO,
			       (xdrproc_t)xdr_rrt_echo_args, (caddr_t)&a,
			       (xdrproc_t)xdr_rrt_echo_res, (caddr_t)&r, tmo);
		if (st != RPC_SUCCESS) {
			snprintf(w->why, sizeof(w->why), "%s",
				 clnt_sperror(w->cl, "echo"));
			break;
		}
		if (r.seq == a.seq && r.data.data_len == n &&
		    rrt_check(r.data.data_val, n, a.seq) &&
		    !strcmp(r.note, "data as sent"))
			w->ok++;
		clnt_freeres(w->cl, (xdrproc_t)xdr_rrt_echo_res, (caddr_t)&r);
	}
	if (w->own && w->cl)
		clnt_destroy(w->cl);
	free(buf);
	return NULL;
}

static void run(struct worker *w, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		assert_int_equal(pthread_create(&w[i].t, NULL, work, &w[i]), 0);
	for (unsigned i = 0; i < n; i++) {
		pthread_join(w[i].t, NULL);
		if (w[i].why[0])
			fprintf(stderr, "worker %u: %s\n", i, w[i].why);
		assert_int_equal(w[i].ok, NCALLS);
	}
	rdma_calls += n * NCALLS;
}

static void test_one_client_many_threads(void **state)
{
	struct worker w[NTHREADS];
	CLIENT *cl = rrt_client(&srv, RRT_RDMA);

	(void)state;
	assert_non_null(cl);
	memset(w, 0, sizeof(w));
	for (unsigned i = 0; i < NTHREADS; i++) {
		w[i].cl = cl;
		w[i].id = i + 1;
	}
	run(w, NTHREADS);
	clnt_destroy(cl);
}

static void test_many_clients(void **state)
{
	struct worker w[NTHREADS];

	(void)state;
	memset(w, 0, sizeof(w));
	for (unsigned i = 0; i < NTHREADS; i++) {
		w[i].own = true;
		w[i].id = i + 11;
	}
	run(w, NTHREADS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_one_client_many_threads),
		cmocka_unit_test(test_many_clients),
	};

	return cmocka_run_group_tests(tests, rrt_group_setup,
				      rrt_group_teardown);
}
