/*
 * rpcgen's client stubs over RPC-over-RDMA (uiw_rpcrdma_clnt_create)
 * and over TCP and UDP, against one server process serving all three
 * with one svc_run (tirpc_server.c): inline calls, DDP arguments and
 * results (RDMA Read and Write chunks, RFC 8166 §3.4), Long Call and
 * Long Reply (§3.5.3) at sizes up to 16 MiB, AUTH_NONE and AUTH_SYS
 * credentials as the server received them, and the counts on both
 * sides; and NFSv3 with RFC 8267's binding (uiw_rpcrdma_ulb_nfs).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "tirpc_util.h"

/* the group's server, and the RPC-over-RDMA calls it must count */
#define srv rrt_group_srv
#define rdma_calls rrt_group_calls

static CLIENT *client(enum rrt_kind k)
{
	CLIENT *cl = rrt_client(&srv, k);

	if (!cl)
		clnt_pcreateerror("rrt_client");
	assert_non_null(cl);
	return cl;
}

static void done_with(CLIENT *cl)
{
	if (cl->cl_auth)
		auth_destroy(cl->cl_auth);
	clnt_destroy(cl);
}

/* A stub's result: NULL (the call failed) is told and fails the test. */
static void *ok(CLIENT *cl, void *r, const char *what)
{
	if (!r)
		clnt_perror(cl, what);
	assert_non_null(r);
	return r;
}

/* Data that came back: n octets of the pattern seeded by seed. */
static void assert_data(const char *p, u_int len, size_t n, unsigned seed)
{
	assert_int_equal(len, n);
	assert_true(rrt_check(p, n, seed));
}

static void count(enum rrt_kind k, unsigned n)
{
	if (k == RRT_RDMA || k == RRT_RDMA6)
		rdma_calls += n;
}

static void test_credentials(void **state)
{
	static const enum rrt_kind kinds[] = { RRT_RDMA, RRT_TCP, RRT_UDP,
					       RRT_RDMA6 };
	static const char *netids[] = { "rdma", "tcp", "udp", "rdma6" };

	(void)state;
	for (unsigned i = 0; i < 4; i++) {
		CLIENT *cl = client(kinds[i]);
		gid_t gids[2] = { 5, 6 };
		rrt_who *w;

		assert_non_null(rrtproc_null_1(NULL, cl));
		w = ok(cl, rrtproc_whoami_1(NULL, cl), "whoami");
		assert_int_equal(w->flavor, AUTH_NONE);
		assert_string_equal(w->netid, netids[i]);
		clnt_freeres(cl, (xdrproc_t)xdr_rrt_who, (char *)w);

		auth_destroy(cl->cl_auth);
		cl->cl_auth = authunix_create("rrt-client-host", 4242, 77, 2,
					      gids);
		assert_non_null(cl->cl_auth);
		w = rrtproc_whoami_1(NULL, cl);
		assert_non_null(w);
		assert_int_equal(w->flavor, AUTH_SYS);
		assert_int_equal(w->uid, 4242);
		assert_int_equal(w->gid, 77);
		assert_string_equal(w->machine, "rrt-client-host");
		clnt_freeres(cl, (xdrproc_t)xdr_rrt_who, (char *)w);
		count(kinds[i], 3);
		done_with(cl);
	}
}

static const size_t sizes[] = {
	0, 1, 3, 63, 64, 100, 1021, 1024, 4093, 4096, 4097, 8191, 65536,
	(1u << 20) + 3, 5u << 20, RRT_MAX,
};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

static void echo_sizes(enum rrt_kind k)
{
	CLIENT *cl = client(k);
	uint8_t *buf = malloc(RRT_MAX);
	char tag[] = "echo";
	struct uiw_rpcrdma_stats before, after;

	assert_non_null(buf);
	assert_int_equal(uiw_rpcrdma_clnt_stats(cl, &before), k == RRT_RDMA);
	for (unsigned i = 0; i < NSIZES; i++) {
		rrt_echo_args a = { { 4, tag }, 100 + i,
				    { (u_int)sizes[i], (char *)buf } };
		rrt_echo_res *r;

		rrt_fill(buf, sizes[i], a.seq);
		r = ok(cl, rrtproc_echo_1(&a, cl), "echo");
		assert_int_equal(r->seq, a.seq);
		assert_string_equal(r->note, "data as sent");
		assert_data(r->data.data_val, r->data.data_len, sizes[i], a.seq);
		clnt_freeres(cl, (xdrproc_t)xdr_rrt_echo_res, (char *)r);
	}
	count(k, NSIZES);
	if (k == RRT_RDMA) {
		size_t big = 0;

		for (unsigned i = 0; i < NSIZES; i++)
			big += sizes[i] >= 65536 ? sizes[i] : 0;
		assert_true(uiw_rpcrdma_clnt_stats(cl, &after));
		assert_int_equal(after.calls - before.calls, NSIZES);
		/* the big data went by RDMA Read and Write */
		assert_true(after.read_bytes - before.read_bytes >= big);
		assert_true(after.write_bytes - before.write_bytes >= big);
		assert_true(after.write_chunks - before.write_chunks >= 4);
	}
	free(buf);
	done_with(cl);
}

static void test_echo_rdma(void **state)
{
	(void)state;
	echo_sizes(RRT_RDMA);
}

static void test_echo_tcp(void **state)
{
	(void)state;
	echo_sizes(RRT_TCP);
}

/* READ: the Write chunk is sized from the count the call asks for. */
static void test_read_rdma(void **state)
{
	CLIENT *cl = client(RRT_RDMA);
	char fh[] = "a file handle";

	(void)state;
	for (unsigned i = 0; i < NSIZES; i++) {
		rrt_read_args a = { { sizeof(fh), fh }, 7 * i,
				    (u_int)sizes[i] };
		rrt_read_res *r = ok(cl, rrtproc_read_1(&a, cl), "read");

		assert_int_equal(r->status, 0);
		assert_data(r->rrt_read_res_u.ok.data.data_val,
			    r->rrt_read_res_u.ok.data.data_len, sizes[i], 7 * i);
		clnt_freeres(cl, (xdrproc_t)xdr_rrt_read_res, (char *)r);
	}
	count(RRT_RDMA, NSIZES);
	done_with(cl);
}

/* BLOB has nothing DDP-eligible: a big one is a Long Call (its
 * Payload stream pulled by a Position-Zero Read chunk) and its big
 * reply a Long Reply (in the Reply chunk). */
static void blob_sizes(enum rrt_kind k)
{
	CLIENT *cl = client(k);
	uint8_t *buf = malloc(RRT_MAX);
	struct uiw_rpcrdma_stats before, after;

	assert_non_null(buf);
	uiw_rpcrdma_clnt_stats(cl, &before);
	for (unsigned i = 0; i < NSIZES; i++) {
		/* the call's size and the reply's in opposite orders */
		size_t in = sizes[i], out = sizes[NSIZES - 1 - i];
		rrt_blob a = { (u_int)out, { (u_int)in, (char *)buf } };
		rrt_blob *r;

		rrt_fill(buf, in, (unsigned)out);
		r = ok(cl, rrtproc_blob_1(&a, cl), "blob");
		assert_int_equal(r->reply_len, in);
		assert_data(r->b.b_val, r->b.b_len, out, (unsigned)in);
		clnt_freeres(cl, (xdrproc_t)xdr_rrt_blob, (char *)r);
	}
	count(k, NSIZES);
	if (k == RRT_RDMA) {
		assert_true(uiw_rpcrdma_clnt_stats(cl, &after));
		assert_true(after.long_calls - before.long_calls >= 4);
		assert_true(after.long_replies - before.long_replies >= 4);
	}
	free(buf);
	done_with(cl);
}

static void test_blob_rdma(void **state)
{
	(void)state;
	blob_sizes(RRT_RDMA);
}

static void test_blob_tcp(void **state)
{
	(void)state;
	blob_sizes(RRT_TCP);
}

/* NFSv3 with RFC 8267's binding on both ends (the server's combined
 * with its other program's): WRITE's data by Read chunk, READ's data
 * by a Write chunk sized by its count, SYMLINK's and READLINK's paths
 * likewise; what was written reads back. */
static void test_nfs3(void **state)
{
	static const size_t lens[] = { 100, 1024, 70001, (1u << 20) + 2,
				       RRT_MAX };
	struct uiw_rpcrdma_opts o;
	struct uiw_rpcrdma_stats before, after;
	char fh[] = "nfs3-file-handle", name[] = "link";
	char *path = malloc(3001);
	uint8_t *buf = malloc(RRT_MAX);
	unsigned calls = 0, ddp_w = 0, ddp_r = 0;
	CLIENT *cl;

	(void)state;
	assert_non_null(path);
	assert_non_null(buf);
	uiw_rpcrdma_opts_init(&o, false);
	o.ulb = uiw_rpcrdma_ulb_nfs();
	cl = uiw_rpcrdma_clnt_create("127.0.0.1", srv.ready.rdma_port,
				     NFS_PROGRAM, NFS_V3, &o);
	assert_non_null(cl);
	assert_true(uiw_rpcrdma_clnt_stats(cl, &before));
	for (unsigned i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		WRITE3args w = { .file = { { sizeof(fh), fh } },
				 .offset = 0, .count = (count3)lens[i],
				 .stable = FILE_SYNC,
				 .data = { (u_int)lens[i], (char *)buf } };
		READ3args ra = { { { sizeof(fh), fh } }, 0, (count3)lens[i] };
		WRITE3res *wr;
		READ3res *rr;

		rrt_fill(buf, lens[i], i + 40);
		wr = ok(cl, nfsproc3_write_3(&w, cl), "write");
		assert_int_equal(wr->status, 0);
		assert_int_equal(wr->WRITE3res_u.resok.count, lens[i]);
		assert_memory_equal(wr->WRITE3res_u.resok.verf, "uiwarp!!", 8);
		clnt_freeres(cl, (xdrproc_t)xdr_WRITE3res, (char *)wr);
		rr = ok(cl, nfsproc3_read_3(&ra, cl), "read");
		assert_int_equal(rr->status, 0);
		assert_data(rr->READ3res_u.resok.data.data_val,
			    rr->READ3res_u.resok.data.data_len, lens[i], i + 40);
		clnt_freeres(cl, (xdrproc_t)xdr_READ3res, (char *)rr);
		calls += 2;
		/* the transport may send a reduced item inline when the
		 * whole call fits (RFC 8166 §3.5.1): only those beyond the
		 * inline threshold must go by Read chunk */
		ddp_w += lens[i] > 4096;
		ddp_r += lens[i] >= 1024;
	}
	memset(path, 'p', 3000);
	path[3000] = 0;
	{
		SYMLINK3args sa;
		READLINK3args la = { { { sizeof(fh), fh } } };
		SYMLINK3res *sr;
		READLINK3res *lr;

		memset(&sa, 0, sizeof(sa));
		sa.where.dir.data.data_len = sizeof(fh);
		sa.where.dir.data.data_val = fh;
		sa.where.name = name;
		sa.symlink.symlink_data = path;
		sr = nfsproc3_symlink_3(&sa, cl);
		assert_non_null(sr);
		assert_int_equal(sr->status, 0);
		clnt_freeres(cl, (xdrproc_t)xdr_SYMLINK3res, (char *)sr);
		lr = nfsproc3_readlink_3(&la, cl);
		assert_non_null(lr);
		assert_int_equal(lr->status, 0);
		assert_string_equal(lr->READLINK3res_u.resok.data, path);
		clnt_freeres(cl, (xdrproc_t)xdr_READLINK3res, (char *)lr);
		calls += 2;
		ddp_r++;        /* READLINK's Write chunk */
	}
	assert_true(uiw_rpcrdma_clnt_stats(cl, &after));
	assert_int_equal(after.calls - before.calls, calls);
	assert_true(after.read_chunks - before.read_chunks >= ddp_w);
	assert_int_equal(after.write_chunks - before.write_chunks, ddp_r);
	count(RRT_RDMA, calls);
	clnt_destroy(cl);
	free(path);
	free(buf);
}

/* clnt_control's requests, as clnt_vc answers them. */
static void test_control(void **state)
{
	CLIENT *cl = client(RRT_RDMA);
	struct timeval tv = { 7, 0 }, got;
	uint32_t xid = 0x10203040, v;
	struct netbuf nb;
	int fd;

	(void)state;
	assert_true(clnt_control(cl, CLSET_TIMEOUT, (char *)&tv));
	assert_true(clnt_control(cl, CLGET_TIMEOUT, (char *)&got));
	assert_int_equal(got.tv_sec, 7);
	tv.tv_usec = -1;
	assert_false(clnt_control(cl, CLSET_TIMEOUT, (char *)&tv));
	assert_true(clnt_control(cl, CLSET_XID, (char *)&xid));
	assert_non_null(rrtproc_null_1(NULL, cl));
	assert_true(clnt_control(cl, CLGET_XID, (char *)&v));
	assert_int_equal(v, xid);
	assert_true(clnt_control(cl, CLGET_VERS, (char *)&v));
	assert_int_equal(v, RRT_V1);
	assert_true(clnt_control(cl, CLGET_PROG, (char *)&v));
	assert_int_equal(v, RRT_PROG);
	assert_true(clnt_control(cl, CLGET_SVC_ADDR, (char *)&nb));
	assert_int_equal(nb.len, sizeof(struct sockaddr_in));
	assert_false(clnt_control(cl, CLGET_FD, (char *)&fd));
	/* a version the server does not serve */
	v = 9;
	assert_true(clnt_control(cl, CLSET_VERS, (char *)&v));
	assert_null(rrtproc_null_1(NULL, cl));
	{
		struct rpc_err e;

		clnt_geterr(cl, &e);
		assert_int_equal(e.re_status, RPC_PROGVERSMISMATCH);
		assert_int_equal(e.re_vers.low, RRT_V1);
	}
	count(RRT_RDMA, 2);
	done_with(cl);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_credentials),
		cmocka_unit_test(test_echo_rdma),
		cmocka_unit_test(test_echo_tcp),
		cmocka_unit_test(test_read_rdma),
		cmocka_unit_test(test_blob_rdma),
		cmocka_unit_test(test_blob_tcp),
		cmocka_unit_test(test_nfs3),
		cmocka_unit_test(test_control),
	};

	return cmocka_run_group_tests(tests, rrt_group_setup,
				      rrt_group_teardown);
}
