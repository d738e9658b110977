/*
 * NFS version 4 over RPC-over-RDMA with RFC 8267 §6's binding
 * (uiw_rpcrdma_ulb_nfs()) on both ends: rpcgen's own stubs for
 * nfs4sub.x's COMPOUND against tirpc_server.  WRITE's data and
 * CREATE's link data go by RDMA Read (Read chunks), READ's data and
 * READLINK's link by RDMA Write into the Write chunks the client
 * offers, one per READ or READLINK in the COMPOUND (RFC 8267 §6.4.1),
 * octet for octet, as both ends' counts show; an operation the walker
 * does not know sends what follows it inline; a server that cannot pair
 * a Write chunk offered answers ERR_CHUNK.
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

#define srv rrt_group_srv
#define rdma_calls rrt_group_calls

static char fh[] = "nfs4-file-handle";

/* A COMPOUND being put together. */
struct cpd {
	nfs_argop4 op[8];
	unsigned n;
};

static nfs_argop4 *add(struct cpd *c, nfs_opnum4 op)
{
	nfs_argop4 *a;

	assert_true(c->n < sizeof(c->op) / sizeof(c->op[0]));
	a = &c->op[c->n++];
	memset(a, 0, sizeof(*a));
	a->argop = op;
	return a;
}

static void add_sequence(struct cpd *c)
{
	nfs_argop4 *a = add(c, OP_SEQUENCE);

	memset(a->nfs_argop4_u.opsequence.sa_sessionid, 0x5e, 16);
	a->nfs_argop4_u.opsequence.sa_sequenceid = 7;
}

static void add_putfh(struct cpd *c)
{
	add(c, OP_PUTFH)->nfs_argop4_u.opputfh.object =
		(nfs_fh4){ sizeof(fh) - 1, fh };
}

static void add_read(struct cpd *c, uint64_t offset, u_int count,
		     unsigned seqid)
{
	READ4args *r = &add(c, OP_READ)->nfs_argop4_u.opread;

	r->stateid.seqid = seqid;
	r->offset = offset;
	r->count = count;
}

static void add_write(struct cpd *c, uint64_t offset, void *p, size_t n)
{
	WRITE4args *w = &add(c, OP_WRITE)->nfs_argop4_u.opwrite;

	w->stable = FILE_SYNC4;
	w->offset = offset;
	w->data.data_len = (u_int)n;
	w->data.data_val = p;
}

static void add_private(struct cpd *c, void *p, size_t n)
{
	PRIVATE4args *a = &add(c, OP_PRIVATE)->nfs_argop4_u.opprivate;

	a->blob.blob_len = (u_int)n;
	a->blob.blob_val = p;
	a->n = 1;
}

/* Sends it: the results, which must have come for every operation
 * and be NFS4_OK (or stop at the one that failed with want). */
static COMPOUND4res *compound(CLIENT *cl, struct cpd *c, nfsstat4 want,
			      unsigned nres)
{
	static char tag[] = "rrt";
	COMPOUND4args a = { { 3, tag }, 1, { c->n, c->op } };
	COMPOUND4res *r = nfsproc4_compound_4(&a, cl);

	if (!r)
		clnt_perror(cl, "compound");
	assert_non_null(r);
	rdma_calls++;
	assert_int_equal(r->status, want);
	assert_int_equal(r->resarray.resarray_len, nres);
	assert_int_equal(r->tag.utf8str_cs_len, 3);
	for (unsigned i = 0; i < nres; i++)
		assert_int_equal(r->resarray.resarray_val[i].resop,
				 c->op[i].argop);
	return r;
}

static CLIENT *client4(const struct uiw_rpcrdma_ulb *u, unsigned inline_send)
{
	struct uiw_rpcrdma_opts o;
	CLIENT *cl;

	uiw_rpcrdma_opts_init(&o, false);
	o.ulb = u;
	if (inline_send)
		o.inline_send = inline_send;
	cl = uiw_rpcrdma_clnt_create("127.0.0.1", srv.ready.rdma_port,
				     NFS4_PROGRAM, NFS_V4, &o);
	if (!cl)
		clnt_pcreateerror("client4");
	assert_non_null(cl);
	return cl;
}

static struct uiw_rpcrdma_stats stats(CLIENT *cl)
{
	struct uiw_rpcrdma_stats s;

	assert_true(uiw_rpcrdma_clnt_stats(cl, &s));
	return s;
}

/* Frees a COMPOUND's results; the client's counts after it. */
static struct uiw_rpcrdma_stats done(CLIENT *cl, COMPOUND4res *r)
{
	clnt_freeres(cl, (xdrproc_t)xdr_COMPOUND4res, (char *)r);
	return stats(cl);
}

/* Write chunks (RDMA Writes) between two counts: chunks, octets. */
static void assert_written(const struct uiw_rpcrdma_stats *a,
			   const struct uiw_rpcrdma_stats *b, uint64_t chunks,
			   uint64_t octets)
{
	assert_int_equal(b->write_chunks - a->write_chunks, chunks);
	assert_int_equal(b->write_bytes - a->write_bytes, octets);
}

/* Read chunks (RDMA Reads of the call) between two counts, no Long
 * Call among them. */
static void assert_pulled(const struct uiw_rpcrdma_stats *a,
			  const struct uiw_rpcrdma_stats *b, uint64_t chunks,
			  uint64_t octets)
{
	assert_int_equal(b->read_chunks - a->read_chunks, chunks);
	assert_int_equal(b->read_bytes - a->read_bytes, octets);
	assert_int_equal(b->long_calls, a->long_calls);
}

static READ4resok *read_ok(COMPOUND4res *r, unsigned i)
{
	nfs_resop4 *res = &r->resarray.resarray_val[i];

	assert_int_equal(res->resop, OP_READ);
	assert_int_equal(res->nfs_resop4_u.opread.status, NFS4_OK);
	return &res->nfs_resop4_u.opread.READ4res_u.resok4;
}

/* SEQUENCE, PUTFH, WRITE, GETATTR: the data by one Read chunk (beyond
 * the inline threshold); SEQUENCE, PUTFH, READ, GETATTR: the data back
 * by one Write chunk sized by READ's count (from 1024 octets, below it
 * inline), octet for octet; GETATTR's size says what was written. */
static void test_write_read(void **state)
{
	static const size_t lens[] = { 100, 1024, 4093, 70001,
				       (1u << 20) + 2, RRT_MAX };
	CLIENT *cl = client4(uiw_rpcrdma_ulb_nfs(), 0);
	uint8_t *buf = malloc(RRT_MAX);

	(void)state;
	assert_non_null(buf);
	for (unsigned i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		struct uiw_rpcrdma_stats s0 = stats(cl), s1, s2;
		struct cpd c = { .n = 0 };
		COMPOUND4res *r;
		READ4resok *ok;
		fattr4 *f;
		uint64_t size = 0;

		rrt_fill(buf, lens[i], i + 70);
		add_sequence(&c);
		add_putfh(&c);
		add_write(&c, 0, buf, lens[i]);
		add(&c, OP_GETATTR);
		r = compound(cl, &c, NFS4_OK, 4);
		assert_int_equal(r->resarray.resarray_val[2].nfs_resop4_u
				 .opwrite.WRITE4res_u.resok4.count, lens[i]);
		f = &r->resarray.resarray_val[3].nfs_resop4_u.opgetattr
			     .GETATTR4res_u.obj_attributes;
		assert_int_equal(f->attr_vals.attrlist4_len, 8);
		for (unsigned k = 0; k < 8; k++)
			size = size << 8 |
			       (uint8_t)f->attr_vals.attrlist4_val[k];
		assert_int_equal(size, lens[i]);
		s1 = done(cl, r);
		/* RFC 8166 §3.5.1: a call that fits goes inline whole */
		/* (the data's XDR pad is in no chunk, §3.4.5.2) */
		if (lens[i] > 4096)
			assert_pulled(&s0, &s1, 1, lens[i]);

		c.n = 0;
		add_sequence(&c);
		add_putfh(&c);
		add_read(&c, 0, (u_int)lens[i], 1);
		add(&c, OP_GETATTR);
		r = compound(cl, &c, NFS4_OK, 4);
		ok = read_ok(r, 2);
		assert_true(ok->eof);
		assert_int_equal(ok->data.data_len, lens[i]);
		assert_true(rrt_check(ok->data.data_val, lens[i], i + 70));
		s2 = done(cl, r);
		assert_written(&s1, &s2, lens[i] >= 1024,
			       lens[i] >= 1024 ? lens[i] : 0);
		assert_int_equal(s2.long_replies, s1.long_replies);
	}
	free(buf);
	clnt_destroy(cl);
}

/* Two READs in one COMPOUND: a Write chunk each, in order; a READ under
 * min_len gets an empty chunk (its data inline) and the next keeps its
 * own. */
static void test_two_reads(void **state)
{
	CLIENT *cl = client4(uiw_rpcrdma_ulb_nfs(), 0);
	uint8_t *buf = malloc(80000);
	struct uiw_rpcrdma_stats s0, s1;
	struct cpd c = { .n = 0 };
	COMPOUND4res *r;

	(void)state;
	assert_non_null(buf);
	rrt_fill(buf, 80000, 9);
	add_putfh(&c);
	add_write(&c, 0, buf, 80000);
	s0 = done(cl, compound(cl, &c, NFS4_OK, 2));
	c.n = 0;
	add_putfh(&c);
	add_read(&c, 0, 5000, 1);
	add_read(&c, 5000, 70000, 1);
	add(&c, OP_GETATTR);
	r = compound(cl, &c, NFS4_OK, 4);
	assert_int_equal(read_ok(r, 1)->data.data_len, 5000);
	assert_memory_equal(read_ok(r, 1)->data.data_val, buf, 5000);
	assert_int_equal(read_ok(r, 2)->data.data_len, 70000);
	assert_memory_equal(read_ok(r, 2)->data.data_val, buf + 5000, 70000);
	s1 = done(cl, r);
	assert_written(&s0, &s1, 2, 75000);

	c.n = 0;
	add_putfh(&c);
	add_read(&c, 100, 100, 1);
	add_read(&c, 200, 9000, 1);
	r = compound(cl, &c, NFS4_OK, 3);
	assert_memory_equal(read_ok(r, 1)->data.data_val, buf + 100, 100);
	assert_memory_equal(read_ok(r, 2)->data.data_val, buf + 200, 9000);
	s0 = done(cl, r);
	assert_written(&s1, &s0, 1, 9000);
	free(buf);
	clnt_destroy(cl);
}

/* CREATE of a symbolic link: its 3000-octet link data by a Read chunk
 * (the client's inline threshold lowered to 1024 so that the call
 * exceeds it); READLINK: the link back in a 4096-octet Write chunk. */
static void test_symlink(void **state)
{
	CLIENT *cl = client4(uiw_rpcrdma_ulb_nfs(), 1024);
	uint8_t *link = malloc(3000);
	struct uiw_rpcrdma_stats s0 = stats(cl), s1, s2;
	struct cpd c = { .n = 0 };
	CREATE4args *ca;
	COMPOUND4res *r;
	linktext4 *l;
	char name[] = "lnk";

	(void)state;
	assert_non_null(link);
	rrt_fill(link, 3000, 33);
	add_putfh(&c);
	ca = &add(&c, OP_CREATE)->nfs_argop4_u.opcreate;
	ca->objtype.type = NF4LNK;
	ca->objtype.createtype4_u.linkdata = (linktext4){ 3000, (char *)link };
	ca->objname = (component4){ 3, name };
	add(&c, OP_GETFH);
	r = compound(cl, &c, NFS4_OK, 3);
	assert_int_equal(r->resarray.resarray_val[2].nfs_resop4_u.opgetfh
			 .GETFH4res_u.object.nfs_fh4_len, sizeof(fh) - 1);
	s1 = done(cl, r);
	assert_pulled(&s0, &s1, 1, 3000);

	c.n = 0;
	add_putfh(&c);
	add(&c, OP_READLINK);
	r = compound(cl, &c, NFS4_OK, 2);
	l = &r->resarray.resarray_val[1].nfs_resop4_u.opreadlink
		     .READLINK4res_u.link;
	assert_int_equal(l->linktext4_len, 3000);
	assert_memory_equal(l->linktext4_val, link, 3000);
	s2 = done(cl, r);
	assert_written(&s1, &s2, 1, 3000);
	free(link);
	clnt_destroy(cl);
}

/* A READ that fails returns its Write chunk unused; a COMPOUND that
 * stops before its READ too (RFC 8166 §4.3.2.2). */
static void test_failed_read(void **state)
{
	CLIENT *cl = client4(uiw_rpcrdma_ulb_nfs(), 0);
	struct uiw_rpcrdma_stats s0 = stats(cl), s1;
	struct cpd c = { .n = 0 };
	COMPOUND4res *r;
	static char bad[] = "bad-handle";

	(void)state;
	add_putfh(&c);
	add_read(&c, 0, 9000, 0xbad);
	r = compound(cl, &c, NFS4ERR_BAD_STATEID, 2);
	assert_int_equal(r->resarray.resarray_val[1].nfs_resop4_u.opread.status,
			 NFS4ERR_BAD_STATEID);
	clnt_freeres(cl, (xdrproc_t)xdr_COMPOUND4res, (char *)r);
	c.n = 0;
	add(&c, OP_PUTFH)->nfs_argop4_u.opputfh.object =
		(nfs_fh4){ sizeof(bad) - 1, bad };
	add_read(&c, 0, 9000, 1);
	add(&c, OP_READLINK);
	s1 = done(cl, compound(cl, &c, NFS4ERR_BADHANDLE, 1));
	assert_int_equal(s1.calls - s0.calls, 2);
	assert_written(&s0, &s1, 0, 0);
	clnt_destroy(cl);
}

/* An operation the walker does not know stops it: the READ after it
 * gets no Write chunk (its data inline, here a Long Reply) and the
 * WRITE after it no Read chunk (a Long Call), which RFC 8166 lets a
 * Requester do; a READ before it keeps its chunk. */
static void test_unknown_op(void **state)
{
	CLIENT *cl = client4(uiw_rpcrdma_ulb_nfs(), 0);
	uint8_t *buf = malloc(20000), blob[16];
	struct uiw_rpcrdma_stats s0, s1, s2;
	struct cpd c = { .n = 0 };
	COMPOUND4res *r;
	PRIVATE4res *p;

	(void)state;
	assert_non_null(buf);
	memset(blob, 0xb1, sizeof(blob));
	rrt_fill(buf, 20000, 61);
	s0 = stats(cl);
	add_putfh(&c);
	add_private(&c, blob, sizeof(blob));
	add_write(&c, 0, buf, 20000);
	add_read(&c, 1000, 9000, 1);
	r = compound(cl, &c, NFS4_OK, 4);
	p = &r->resarray.resarray_val[1].nfs_resop4_u.opprivate;
	assert_int_equal(p->blob.blob_len, sizeof(blob));
	assert_memory_equal(p->blob.blob_val, blob, sizeof(blob));
	assert_int_equal(read_ok(r, 3)->data.data_len, 9000);
	assert_memory_equal(read_ok(r, 3)->data.data_val, buf + 1000, 9000);
	s1 = done(cl, r);
	assert_int_equal(s1.long_calls - s0.long_calls, 1);
	assert_int_equal(s1.long_replies - s0.long_replies, 1);
	assert_written(&s0, &s1, 0, 0);

	c.n = 0;
	add_putfh(&c);
	add_read(&c, 0, 9000, 1);
	add_private(&c, blob, sizeof(blob));
	r = compound(cl, &c, NFS4_OK, 3);
	assert_memory_equal(read_ok(r, 1)->data.data_val, buf, 9000);
	s2 = done(cl, r);
	assert_written(&s1, &s2, 1, 9000);
	assert_int_equal(s2.long_replies, s1.long_replies);
	free(buf);
	clnt_destroy(cl);
}

/*
 * A binding of the client's own that knows OP_PRIVATE (as a client of
 * a later minor version would), written with the public walk
 * functions: PUTFH, PRIVATE and READ, the rest unknown.
 */
static enum uiw_rpcrdma_walk_end
private_walk(const struct uiw_rpcrdma_ddp_rule *rule, struct uiw_rpcrdma_walk *w)
{
	bool res = uiw_rpcrdma_walk_dir(w) == UIW_RPCRDMA_RESULTS;
	uint32_t n, op, v;
	bool ok = true;

	(void)rule;
	if ((res && !uiw_rpcrdma_walk_u32(w, NULL)) ||
	    !uiw_rpcrdma_walk_opaque(w, 0) ||
	    (!res && !uiw_rpcrdma_walk_u32(w, NULL)) ||
	    !uiw_rpcrdma_walk_u32(w, &n))
		return UIW_RPCRDMA_WALK_STOP;
	for (uint32_t i = 0; ok && i < n; i++) {
		if (!uiw_rpcrdma_walk_u32(w, &op))
			return UIW_RPCRDMA_WALK_STOP;
		if (op == OP_READ && res)
			ok = uiw_rpcrdma_walk_slot(w, 0) &&
			     uiw_rpcrdma_walk_u32(w, &v) &&
			     (v || (uiw_rpcrdma_walk_skip(w, 4) &&
				    uiw_rpcrdma_walk_item(w, 0)));
		else if (op == OP_READ)
			ok = uiw_rpcrdma_walk_skip(w, 24) &&
			     uiw_rpcrdma_walk_u32(w, &v) &&
			     uiw_rpcrdma_walk_slot(w, v);
		else if (op == OP_PUTFH)
			ok = res ? uiw_rpcrdma_walk_u32(w, NULL) :
				   uiw_rpcrdma_walk_opaque(w, 128);
		else if (op == OP_PRIVATE && res)   /* status, blob */
			ok = uiw_rpcrdma_walk_u32(w, NULL) &&
			     uiw_rpcrdma_walk_opaque(w, 0);
		else if (op == OP_PRIVATE)          /* blob, n */
			ok = uiw_rpcrdma_walk_opaque(w, 0) &&
			     uiw_rpcrdma_walk_u32(w, NULL);
		else
			return UIW_RPCRDMA_WALK_STOP;
	}
	return ok ? UIW_RPCRDMA_WALK_END : UIW_RPCRDMA_WALK_STOP;
}

static const struct uiw_rpcrdma_ddp_rule private_rules[] = {
	{ NFS4_PROGRAM, NFS_V4, NFSPROC4_COMPOUND, UIW_RPCRDMA_RESULTS, 0,
	  1024, RRT_MAX, NULL, private_walk },
};
static const struct uiw_rpcrdma_ulb private_ulb = {
	.rules = private_rules, .nrules = 1,
};

/* That client offers a Write chunk for a READ after OP_PRIVATE; the
 * server's walk stops at OP_PRIVATE's result before it finds READ's
 * slot, and no valid reply can leave that chunk out (RFC 8166 §6.1):
 * RDMA_ERROR ERR_CHUNK (§4.5.3), which the client reports as
 * RPC_CANTSEND with EMSGSIZE.  With READ before OP_PRIVATE both agree. */
static void test_err_chunk(void **state)
{
	struct rrt_server own = { 0 };
	struct uiw_rpcrdma_opts o;
	struct rrt_done d;
	struct cpd c = { .n = 0 };
	static char tag[] = "rrt";
	COMPOUND4args a = { { 3, tag }, 1, { 0, c.op } };
	uint8_t blob[8] = "private";
	uint8_t *buf = malloc(9000);
	COMPOUND4res *r;
	struct rpc_err e;
	CLIENT *cl;

	(void)state;
	assert_non_null(buf);
	rrt_fill(buf, 9000, 5);
	assert_int_equal(rrt_server_start(&own), 0);
	uiw_rpcrdma_opts_init(&o, false);
	o.ulb = &private_ulb;
	cl = uiw_rpcrdma_clnt_create("127.0.0.1", own.ready.rdma_port,
				     NFS4_PROGRAM, NFS_V4, &o);
	assert_non_null(cl);
	add_putfh(&c);
	add_write(&c, 0, buf, 9000);
	a.argarray.argarray_len = c.n;
	r = nfsproc4_compound_4(&a, cl);
	assert_non_null(r);
	assert_int_equal(r->status, NFS4_OK);
	clnt_freeres(cl, (xdrproc_t)xdr_COMPOUND4res, (char *)r);

	c.n = 0;
	add_putfh(&c);
	add_private(&c, blob, sizeof(blob));
	add_read(&c, 0, 9000, 1);
	a.argarray.argarray_len = c.n;
	assert_null(nfsproc4_compound_4(&a, cl));
	clnt_geterr(cl, &e);
	fprintf(stderr, "chunk the server cannot pair: %s\n",
		clnt_sperror(cl, "compound"));
	assert_int_equal(e.re_status, RPC_CANTSEND);
	assert_int_equal(e.re_errno, EMSGSIZE);

	c.n = 0;
	add_putfh(&c);
	add_read(&c, 0, 9000, 1);
	add_private(&c, blob, sizeof(blob));
	a.argarray.argarray_len = c.n;
	r = nfsproc4_compound_4(&a, cl);
	assert_non_null(r);
	assert_int_equal(read_ok(r, 1)->data.data_len, 9000);
	assert_memory_equal(read_ok(r, 1)->data.data_val, buf, 9000);
	clnt_freeres(cl, (xdrproc_t)xdr_COMPOUND4res, (char *)r);
	clnt_destroy(cl);
	free(buf);
	assert_int_equal(rrt_server_stop(&own, 5000, &d), 0);
	assert_true(d.stats_ok);
	assert_int_equal(d.stats.calls, 3);
	assert_int_equal(d.stats.replies, 2);
	assert_int_equal(d.stats.rdma_errors_sent, 1);
	assert_int_equal(d.stats.write_chunks, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_write_read),
		cmocka_unit_test(test_two_reads),
		cmocka_unit_test(test_symlink),
		cmocka_unit_test(test_failed_read),
		cmocka_unit_test(test_unknown_op),
		cmocka_unit_test(test_err_chunk),
	};

	return cmocka_run_group_tests(tests, rrt_group_setup,
				      rrt_group_teardown);
}
