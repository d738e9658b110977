/*
 * What an rpcgen program sees when things go wrong over RPC-over-RDMA:
 * clnt_pcreateerror's text for a refused connection and an unknown
 * host, clnt_perror's for a server that died under a CLIENT, for a
 * call never answered and for a reply too long for its chunk, SIGTERM
 * ending the server's svc_run promptly, and misuse of the counts.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "tirpc_util.h"

static void test_refused(void **state)
{
	char port[16];
	CLIENT *cl;
	const char *msg;

	(void)state;
	rrt_free_port(port, sizeof(port));
	cl = uiw_rpcrdma_clnt_create("127.0.0.1", port, RRT_PROG, RRT_V1,
				     NULL);
	assert_null(cl);
	msg = clnt_spcreateerror("rrt");
	fprintf(stderr, "refused: %s\n", msg);
	assert_int_equal(rpc_createerr.cf_stat, RPC_SYSTEMERROR);
	assert_non_null(strstr(msg, "rrt: RPC: Remote system error"));
	assert_int_not_equal(rpc_createerr.cf_error.re_errno, 0);

	cl = uiw_rpcrdma_clnt_create("no-such-host.invalid", port, RRT_PROG,
				     RRT_V1, NULL);
	assert_null(cl);
	assert_int_equal(rpc_createerr.cf_stat, RPC_UNKNOWNHOST);
	assert_non_null(strstr(clnt_spcreateerror("rrt"), "Unknown host"));
}

static void test_server_died(void **state)
{
	struct rrt_server srv;
	struct timeval tmo = { 10, 0 };
	struct rpc_err e;
	CLIENT *cl;
	const char *msg;

	(void)state;
	assert_int_equal(rrt_server_start(&srv), 0);
	cl = rrt_client(&srv, RRT_RDMA);
	assert_non_null(cl);
	assert_true(clnt_control(cl, CLSET_TIMEOUT, (char *)&tmo));
	assert_non_null(rrtproc_null_1(NULL, cl));
	rrt_server_kill(&srv);
	assert_null(rrtproc_null_1(NULL, cl));
	clnt_geterr(cl, &e);
	msg = clnt_sperror(cl, "rrt");
	fprintf(stderr, "server died: %s\n", msg);
	/* the connection's end, not a timeout */
	assert_int_equal(e.re_status, RPC_CANTRECV);
	assert_non_null(strstr(msg, "rrt: RPC: Unable to receive"));
	clnt_destroy(cl);
}

/* SIGTERM with connections open, RDMA and TCP: svc_run returns and the
 * server exits at once. */
static void test_sigterm(void **state)
{
	struct rrt_server srv;
	struct rrt_done d;
	CLIENT *r, *t;

	(void)state;
	assert_int_equal(rrt_server_start(&srv), 0);
	r = rrt_client(&srv, RRT_RDMA);
	t = rrt_client(&srv, RRT_TCP);
	assert_non_null(r);
	assert_non_null(t);
	assert_non_null(rrtproc_null_1(NULL, r));
	assert_non_null(rrtproc_null_1(NULL, t));
	assert_int_equal(rrt_server_stop(&srv, 3000, &d), 0);
	assert_true(d.stats_ok);
	assert_int_equal(d.stats.calls, 1);
	clnt_destroy(r);
	clnt_destroy(t);
}

/* A call the server never answers times out (and gives its credit
 * back: the calls after it go through); a reply larger than the Reply
 * chunk the client offered gets RDMA_ERROR ERR_CHUNK (RFC 8166 §3.5.4),
 * which clnt_perror tells as a failure to send. */
static void test_timeout_and_err_chunk(void **state)
{
	static const struct uiw_rpcrdma_ulb small = { .reply_max = 65536 };
	struct uiw_rpcrdma_opts o;
	struct rrt_server srv;
	struct timeval tmo = { 1, 0 };
	struct rpc_err e;
	rrt_blob a = { 1u << 20, { 0, NULL } }, *r;
	CLIENT *cl;

	(void)state;
	assert_int_equal(rrt_server_start(&srv), 0);
	cl = rrt_client(&srv, RRT_RDMA);
	assert_non_null(cl);
	assert_true(clnt_control(cl, CLSET_TIMEOUT, (char *)&tmo));
	for (unsigned i = 0; i < 3; i++) {
		assert_null(rrtproc_drop_1(NULL, cl));
		clnt_geterr(cl, &e);
		assert_int_equal(e.re_status, RPC_TIMEDOUT);
		if (i == 0)
			fprintf(stderr, "no reply: %s\n",
				clnt_sperror(cl, "rrt"));
		assert_non_null(rrtproc_null_1(NULL, cl));
	}
	clnt_destroy(cl);

	uiw_rpcrdma_opts_init(&o, false);
	o.ulb = &small;
	cl = uiw_rpcrdma_clnt_create("127.0.0.1", srv.ready.rdma_port,
				     RRT_PROG, RRT_V1, &o);
	assert_non_null(cl);
	r = rrtproc_blob_1(&a, cl);
	assert_null(r);
	clnt_geterr(cl, &e);
	fprintf(stderr, "reply too long: %s\n", clnt_sperror(cl, "rrt"));
	assert_int_equal(e.re_status, RPC_CANTSEND);
	assert_int_equal(e.re_errno, EMSGSIZE);
	/* the connection and the server carry on */
	a.reply_len = 1000;
	r = rrtproc_blob_1(&a, cl);
	assert_non_null(r);
	assert_int_equal(r->b.b_len, 1000);
	clnt_freeres(cl, (xdrproc_t)xdr_rrt_blob, (char *)r);
	clnt_destroy(cl);
	rrt_server_kill(&srv);
}

static void test_stats_misuse(void **state)
{
	struct rrt_server srv;
	struct uiw_rpcrdma_stats s;
	CLIENT *t;

	(void)state;
	assert_false(uiw_rpcrdma_clnt_stats(NULL, &s));
	assert_false(uiw_rpcrdma_svc_stats(NULL, &s));
	assert_int_equal(rrt_server_start(&srv), 0);
	t = rrt_client(&srv, RRT_TCP);
	assert_non_null(t);
	assert_false(uiw_rpcrdma_clnt_stats(t, &s));
	clnt_destroy(t);
	rrt_server_kill(&srv);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_server_died),
		cmocka_unit_test(test_sigterm),
		cmocka_unit_test(test_timeout_and_err_chunk),
		cmocka_unit_test(test_stats_misuse),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
