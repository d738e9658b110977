/*
 * The XDR streams of reduced Payload streams (src/rpcrdma/rr_xdr.c)
 * and the Upper-Layer Binding rules (rr_ulb.c), with rpcgen's own XDR
 * routines for RFC 1813's NFSv3 types (nfs3sub.x) and the tests'
 * program (rrtest.x): which bodies are reduced (RFC 8267 §4, RFC 8166
 * §6.1), zero copy, pads left out (§3.4.4.4), results spliced back
 * from Write chunks (§3.4.6.1), counting from the arguments on, and
 * the stream positions.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "nfs3sub.h"
#include "rr_xdr.h"
#include "rrtest.h"
#include "tirpc_util.h"
#include "xdr_util.h"

/* nfs3sub.x's program is NFS's (RFC 1813) */
#define NFS_PROG NFS_PROGRAM
#define P_READLINK NFSPROC3_READLINK
#define P_READ NFSPROC3_READ
#define P_WRITE NFSPROC3_WRITE
#define P_SYMLINK NFSPROC3_SYMLINK

static struct uiw_rr_sel sel_of(const struct uiw_rpcrdma_ulb *u,
				rpcprog_t prog, rpcvers_t vers,
				rpcproc_t proc, enum uiw_rpcrdma_dir dir)
{
	return (struct uiw_rr_sel){ u, prog, vers, proc, dir };
}

/* Encodes obj as a message body with the splitting encoder. */
static const struct uiw_rr_iov *split(struct uiw_rr_xenc *e,
				      const struct uiw_rr_sel *sel,
				      unsigned max_ddp, xdrproc_t proc,
				      void *obj, unsigned *niov)
{
	XDR *x = uiw_rr_xenc_begin(e, sel, max_ddp);
	struct uiw_rr_body b = { proc, obj };

	assert_true(uiw_rr_xdr_body(x, &b));
	return uiw_rr_xenc_finish(e, niov);
}

/* RFC 8267 §4: WRITE3args' data (the second body, after the file
 * handle) goes as a Read chunk from the caller's memory, without its
 * pad; at every length modulo four, and inline below min_len. */
static void test_nfs3_write_args(void **state)
{
	static const size_t lens[] = { 0, 3, 1023, 1024, 1025, 1026, 1027,
				       70001, 1u << 20 };
	const struct uiw_rpcrdma_ulb *nfs = uiw_rpcrdma_ulb_nfs();
	struct uiw_rr_sel sel = sel_of(nfs, NFS_PROG, NFS_V3, P_WRITE,
				       UIW_RPCRDMA_ARGS);
	struct uiw_rr_xenc e;
	char fh[32];

	(void)state;
	memset(fh, 0xab, sizeof(fh));
	uiw_rr_xenc_init(&e);
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		uint8_t *data = xu_pattern(lens[i], (unsigned)i);
		WRITE3args a = {
			.file = { .data = { sizeof(fh), fh } },
			.offset = 1ull << 40, .count = (count3)lens[i],
			.stable = FILE_SYNC,
			.data = { (u_int)lens[i], (char *)data },
		};
		size_t cap = lens[i] + 256;
		uint8_t *ref = malloc(cap);
		size_t ref_len = xu_encode((xdrproc_t)xdr_WRITE3args, &a,
					   ref, cap);
		const struct uiw_rr_iov *iov;
		unsigned n;

		iov = split(&e, &sel, UINT_MAX, (xdrproc_t)xdr_WRITE3args,
			    &a, &n);
		assert_non_null(iov);
		xu_assert_unreduced(iov, n, ref, ref_len, true);
		assert_int_equal(XDR_GETPOS(&e.xdr), ref_len);
		if (lens[i] >= 1024) {
			/* header words, then the data itself, pad gone */
			assert_int_equal(n, 2);
			assert_true(iov[1].ddp);
			assert_ptr_equal(iov[1].base, data);
			assert_int_equal(iov[1].len, lens[i]);
			assert_int_equal(iov[0].len, 4 + 32 + 8 + 4 + 4 + 4);
		} else {
			assert_int_equal(xu_count_ddp(iov, n), 0);
		}
		free(ref);
		free(data);
	}
	uiw_rr_xenc_fini(&e);
}

/* SYMLINK3args: the path is the third body; a long name (the second)
 * stays inline however long. */
static void test_nfs3_symlink_args(void **state)
{
	const struct uiw_rpcrdma_ulb *nfs = uiw_rpcrdma_ulb_nfs();
	struct uiw_rr_sel sel = sel_of(nfs, NFS_PROG, NFS_V3, P_SYMLINK,
				       UIW_RPCRDMA_ARGS);
	struct uiw_rr_xenc e;
	char fh[28], name[2001], path[3003];
	SYMLINK3args a;
	uint8_t ref[8192];
	size_t ref_len;
	const struct uiw_rr_iov *iov;
	unsigned n;

	(void)state;
	memset(fh, 1, sizeof(fh));
	memset(name, 'n', sizeof(name) - 1);
	name[sizeof(name) - 1] = 0;
	memset(path, 'p', sizeof(path) - 1);
	path[sizeof(path) - 1] = 0;
	memset(&a, 0, sizeof(a));
	a.where.dir.data.data_len = sizeof(fh);
	a.where.dir.data.data_val = fh;
	a.where.name = name;
	a.symlink.symlink_attributes.mode.set_it = TRUE;
	a.symlink.symlink_attributes.mode.set_mode3_u.mode = 0777;
	a.symlink.symlink_data = path;
	ref_len = xu_encode((xdrproc_t)xdr_SYMLINK3args, &a, ref,
			    sizeof(ref));
	uiw_rr_xenc_init(&e);
	iov = split(&e, &sel, UINT_MAX, (xdrproc_t)xdr_SYMLINK3args, &a, &n);
	assert_non_null(iov);
	xu_assert_unreduced(iov, n, ref, ref_len, true);
	assert_int_equal(xu_count_ddp(iov, n), 1);
	assert_int_equal(n, 2);
	assert_ptr_equal(iov[1].base, path);
	assert_int_equal(iov[1].len, sizeof(path) - 1);
	uiw_rr_xenc_fini(&e);
}

/* Bodies of the RPC header and the credential are not counted: a
 * whole call with an AUTH_SYS credential (its machine name an opaque
 * body) reduces WRITE3args' data and nothing else. */
static void test_count_from_args(void **state)
{
	const struct uiw_rpcrdma_ulb *nfs = uiw_rpcrdma_ulb_nfs();
	struct uiw_rr_sel sel = sel_of(nfs, NFS_PROG, NFS_V3, P_WRITE,
				       UIW_RPCRDMA_ARGS);
	struct uiw_rr_xenc e;
	gid_t gids[3] = { 1, 2, 3 };
	AUTH *au = authunix_create("a-machine-name-of-odd-length", 1000,
				   100, 3, gids);
	struct rpc_msg m = { .rm_xid = 0x1234, .rm_direction = CALL };
	char fh[8] = "handle!";
	uint8_t *data = xu_pattern(5000, 9);
	WRITE3args a = { .file = { .data = { 8, fh } }, .count = 5000,
			 .data = { 5000, (char *)data } };
	struct uiw_rr_body b = { (xdrproc_t)xdr_WRITE3args, &a };
	rpcproc_t proc = P_WRITE;
	const struct uiw_rr_iov *iov;
	unsigned n;
	XDR *x;

	(void)state;
	assert_non_null(au);
	m.rm_call.cb_rpcvers = RPC_MSG_VERSION;
	m.rm_call.cb_prog = NFS_PROG;
	m.rm_call.cb_vers = NFS_V3;
	uiw_rr_xenc_init(&e);
	x = uiw_rr_xenc_begin(&e, &sel, UINT_MAX);
	assert_true(xdr_callhdr(x, &m));
	assert_true(xdr_u_int32_t(x, &proc));
	assert_true(AUTH_MARSHALL(au, x));
	assert_true(AUTH_WRAP(au, x, UIW_RR_XDR_BODY, (caddr_t)&b));
	iov = uiw_rr_xenc_finish(&e, &n);
	assert_non_null(iov);
	assert_int_equal(n, 2);
	assert_true(iov[1].ddp);
	assert_ptr_equal(iov[1].base, data);
	/* the body's unreduced copy is WRITE3args' plain encoding */
	{
		uint8_t ref[6000], *copy;
		size_t ref_len = xu_encode((xdrproc_t)xdr_WRITE3args, &a,
					   ref, sizeof(ref));
		size_t len;

		assert_int_equal(uiw_rr_xenc_body_copy(&e, &copy, &len), 0);
		assert_int_equal(len, ref_len);
		assert_memory_equal(copy, ref, len);
		free(copy);
	}
	uiw_rr_xenc_fini(&e);
	AUTH_DESTROY(au);
	free(data);
}

/* READ3res: the data is reduced into the Write chunk whatever its
 * size when a chunk was offered (RFC 8267 §6.4.1 by analogy: the
 * chunk must be used), inline when none was; decoded back the same. */
static void test_nfs3_read_results(void **state)
{
	static const size_t lens[] = { 1, 2, 3, 4, 5, 1000, 4097, 65538,
				       (1u << 20) + 1 };
	const struct uiw_rpcrdma_ulb *nfs = uiw_rpcrdma_ulb_nfs();
	struct uiw_rr_sel sel = sel_of(nfs, NFS_PROG, NFS_V3, P_READ,
				       UIW_RPCRDMA_RESULTS);
	struct uiw_rr_xenc e;

	(void)state;
	uiw_rr_xenc_init(&e);
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		for (unsigned nwt = 0; nwt <= 1; nwt++) {
			uint8_t *data = xu_pattern(lens[i], (unsigned)i + 3);
			READ3res r = { .status = 0 };
			READ3res back;
			size_t clen = lens[i] + 8, ref_len;
			size_t cap = lens[i] + 512;
			uint8_t *ref = malloc(cap);
			const struct uiw_rr_iov *iov;
			struct uiw_rr_xdec d;
			struct xu_landed l;
			unsigned n;
			XDR *x;
			struct uiw_rr_body b;

			r.READ3res_u.resok.file_attributes.attributes_follow =
				TRUE;
			r.READ3res_u.resok.count = (count3)lens[i];
			r.READ3res_u.resok.eof = TRUE;
			r.READ3res_u.resok.data.data_len = (u_int)lens[i];
			r.READ3res_u.resok.data.data_val = (char *)data;
			ref_len = xu_encode((xdrproc_t)xdr_READ3res, &r,
					    ref, cap);
			iov = split(&e, &sel, nwt, (xdrproc_t)xdr_READ3res, &r,
				    &n);
			assert_non_null(iov);
			assert_int_equal(xu_count_ddp(iov, n), nwt);
			if (nwt)
				assert_ptr_equal(iov[1].base, data);
			xu_land(iov, n, &clen, nwt, &l);
			assert_int_equal(l.len + (nwt ? lens[i] +
					 ((4 - (lens[i] & 3)) & 3) : 0),
					 ref_len);
			memset(&back, 0, sizeof(back));
			x = uiw_rr_xdec_init(&d, l.stream, l.len, &sel, l.wt,
					     l.wlen, nwt);
			b = (struct uiw_rr_body){ (xdrproc_t)xdr_READ3res,
						  &back };
			assert_true(uiw_rr_xdr_body(x, &b));
			assert_true(uiw_rr_xdec_done(&d));
			assert_int_equal(XDR_GETPOS(x), ref_len);
			assert_int_equal(back.READ3res_u.resok.data.data_len,
					 lens[i]);
			assert_memory_equal(back.READ3res_u.resok.data.data_val,
					    data, lens[i]);
			assert_int_equal(back.READ3res_u.resok.count, lens[i]);
			xdr_free((xdrproc_t)xdr_READ3res, (char *)&back);
			xu_unland(&l, nwt);
			free(ref);
			free(data);
		}
	}
	uiw_rr_xenc_fini(&e);
}

/* A READ that failed has no data: the Write chunk stays unused, and
 * the decoder is content with that. */
static void test_nfs3_read_failed(void **state)
{
	const struct uiw_rpcrdma_ulb *nfs = uiw_rpcrdma_ulb_nfs();
	struct uiw_rr_sel sel = sel_of(nfs, NFS_PROG, NFS_V3, P_READ,
				       UIW_RPCRDMA_RESULTS);
	struct uiw_rr_xenc e;
	READ3res r = { .status = 70 }, back;
	size_t clen = 4096;
	const struct uiw_rr_iov *iov;
	struct uiw_rr_xdec d;
	struct xu_landed l;
	struct uiw_rr_body b = { (xdrproc_t)xdr_READ3res, &back };
	unsigned n;

	(void)state;
	uiw_rr_xenc_init(&e);
	iov = split(&e, &sel, 1, (xdrproc_t)xdr_READ3res, &r, &n);
	assert_int_equal(xu_count_ddp(iov, n), 0);
	xu_land(iov, n, &clen, 1, &l);
	memset(&back, 0, sizeof(back));
	uiw_rr_xdec_init(&d, l.stream, l.len, &sel, l.wt, l.wlen, 1);
	assert_true(uiw_rr_xdr_body(&d.xdr, &b));
	assert_true(uiw_rr_xdec_done(&d));
	assert_int_equal(back.status, 70);
	/* but octets in a chunk that no eligible result took are an error
	 * (RFC 8166 §6.1) */
	l.wlen[0] = 16;
	uiw_rr_xdec_init(&d, l.stream, l.len, &sel, l.wt, l.wlen, 1);
	assert_true(uiw_rr_xdr_body(&d.xdr, &b));
	assert_false(uiw_rr_xdec_done(&d));
	assert_non_null(strstr(d.why, "Write chunk 1"));
	xu_unland(&l, 1);
	uiw_rr_xenc_fini(&e);
}

/* The inline length word must agree with what the Write chunk holds. */
static void test_splice_length_mismatch(void **state)
{
	const struct uiw_rpcrdma_ulb *nfs = uiw_rpcrdma_ulb_nfs();
	struct uiw_rr_sel sel = sel_of(nfs, NFS_PROG, NFS_V3, P_READLINK,
				       UIW_RPCRDMA_RESULTS);
	struct uiw_rr_xenc e;
	char path[] = "/a/path/of/some/length";
	READLINK3res r = { .status = 0 }, back;
	size_t clen = 4096;
	const struct uiw_rr_iov *iov;
	struct uiw_rr_xdec d;
	struct xu_landed l;
	struct uiw_rr_body b = { (xdrproc_t)xdr_READLINK3res, &back };
	unsigned n;

	(void)state;
	r.READLINK3res_u.resok.data = path;
	uiw_rr_xenc_init(&e);
	iov = split(&e, &sel, 1, (xdrproc_t)xdr_READLINK3res, &r, &n);
	assert_int_equal(xu_count_ddp(iov, n), 1);
	xu_land(iov, n, &clen, 1, &l);
	memset(&back, 0, sizeof(back));
	uiw_rr_xdec_init(&d, l.stream, l.len, &sel, l.wt, l.wlen, 1);
	assert_true(uiw_rr_xdr_body(&d.xdr, &b));
	assert_string_equal(back.READLINK3res_u.resok.data, path);
	xdr_free((xdrproc_t)xdr_READLINK3res, (char *)&back);
	l.wlen[0]--;
	memset(&back, 0, sizeof(back));
	uiw_rr_xdec_init(&d, l.stream, l.len, &sel, l.wt, l.wlen, 1);
	assert_false(uiw_rr_xdr_body(&d.xdr, &b));
	assert_non_null(strstr(d.why, "Write chunk holds"));
	xdr_free((xdrproc_t)xdr_READLINK3res, (char *)&back);
	xu_unland(&l, 1);
	uiw_rr_xenc_fini(&e);
}

static void test_rrt_echo_both_ways(void **state)
{
	struct uiw_rr_sel as = sel_of(&rrt_ulb, RRT_PROG, RRT_V1,
				      RRTPROC_ECHO, UIW_RPCRDMA_ARGS);
	struct uiw_rr_sel rs = as;
	struct uiw_rr_xenc e;
	uint8_t tag[16], *data = xu_pattern(777, 1);
	rrt_echo_args a = { { 16, (char *)tag }, 5, { 777, (char *)data } };
	char note[] = "a note that is long enough to pass any min_len of this "
		      "binding, but is not eligible";
	rrt_echo_res r = { 6, { 777, (char *)data }, note }, back;
	const struct uiw_rr_iov *iov;
	size_t clen = RRT_MAX;
	struct uiw_rr_xdec d;
	struct xu_landed l;
	struct uiw_rr_body b = { (xdrproc_t)xdr_rrt_echo_res, &back };
	unsigned n;

	(void)state;
	memset(tag, 't', sizeof(tag));
	uiw_rr_xenc_init(&e);
	iov = split(&e, &as, UINT_MAX, (xdrproc_t)xdr_rrt_echo_args, &a, &n);
	assert_int_equal(xu_count_ddp(iov, n), 1);
	assert_ptr_equal(iov[1].base, data);
	rs.dir = UIW_RPCRDMA_RESULTS;
	iov = split(&e, &rs, 1, (xdrproc_t)xdr_rrt_echo_res, &r, &n);
	assert_int_equal(n, 3);         /* seq+len | data | note */
	assert_int_equal(xu_count_ddp(iov, n), 1);
	assert_ptr_equal(iov[1].base, data);
	xu_land(iov, n, &clen, 1, &l);
	memset(&back, 0, sizeof(back));
	uiw_rr_xdec_init(&d, l.stream, l.len, &rs, l.wt, l.wlen, 1);
	/* no pointer into the inline stream while a result may be due */
	d.counting = true;
	assert_null(XDR_INLINE(&d.xdr, 4));
	d.counting = false;
	assert_true(uiw_rr_xdr_body(&d.xdr, &b));
	assert_true(uiw_rr_xdec_done(&d));
	assert_int_equal(back.seq, 6);
	assert_memory_equal(back.data.data_val, data, 777);
	assert_string_equal(back.note, note);
	/* every chunk used: the stream hands out pointers again */
	assert_true(XDR_SETPOS(&d.xdr, XDR_GETPOS(&d.xdr) - 4));
	assert_non_null(XDR_INLINE(&d.xdr, 4));
	xdr_free((xdrproc_t)xdr_rrt_echo_res, (char *)&back);
	xu_unland(&l, 1);
	uiw_rr_xenc_fini(&e);
	free(data);
}

/* Write chunks a Requester offers: from the arguments (READ's count,
 * below min_len none), a fixed size, or none. */
static void test_wchunks(void **state)
{
	struct uiw_rr_sel s = sel_of(&rrt_ulb, RRT_PROG, RRT_V1,
				     RRTPROC_READ, UIW_RPCRDMA_RESULTS);
	const struct uiw_rpcrdma_ulb *nfs = uiw_rpcrdma_ulb_nfs();
	char fh[12] = "0123456789a";
	rrt_read_args ra = { { 12, fh }, 99, 70000 };
	READ3args na = { { { 12, fh } }, 1, 300000 };
	uint8_t buf[256];
	size_t len[UIW_RR_MAX_WCHUNK], n;

	(void)state;
	assert_true(uiw_rr_ulb_wants_args(&s));
	n = xu_encode((xdrproc_t)xdr_rrt_read_args, &ra, buf, sizeof(buf));
	assert_int_equal(uiw_rr_ulb_wchunks(&s, buf, n, len), 1);
	assert_int_equal(len[0], 70000);
	ra.count = 63;
	n = xu_encode((xdrproc_t)xdr_rrt_read_args, &ra, buf, sizeof(buf));
	assert_int_equal(uiw_rr_ulb_wchunks(&s, buf, n, len), 0);
	/* a truncated argument stream offers nothing */
	assert_int_equal(uiw_rr_ulb_wchunks(&s, buf, 8, len), 0);

	s.proc = RRTPROC_ECHO;
	assert_false(uiw_rr_ulb_wants_args(&s));
	assert_int_equal(uiw_rr_ulb_wchunks(&s, NULL, 0, len), 1);
	assert_int_equal(len[0], RRT_MAX);
	s.proc = RRTPROC_BLOB;
	assert_int_equal(uiw_rr_ulb_wchunks(&s, NULL, 0, len), 0);

	s = sel_of(nfs, NFS_PROG, NFS_V3, P_READ, UIW_RPCRDMA_RESULTS);
	n = xu_encode((xdrproc_t)xdr_READ3args, &na, buf, sizeof(buf));
	assert_int_equal(uiw_rr_ulb_wchunks(&s, buf, n, len), 1);
	assert_int_equal(len[0], 300000);
	s.proc = P_READLINK;
	assert_int_equal(uiw_rr_ulb_wchunks(&s, NULL, 0, len), 1);
	assert_int_equal(len[0], 4096);
	s.proc = P_WRITE;
	assert_int_equal(uiw_rr_ulb_wchunks(&s, NULL, 0, len), 0);
	s.vers = 2;
	s.proc = P_READ;
	assert_int_equal(uiw_rr_ulb_wchunks(&s, buf, n, len), 0);
	/* reply rows: READDIR, READDIRPLUS and READLINK a Reply chunk of
	 * the default size, the other procedures of version 3 none above
	 * 1024 octets; another version the default */
	s.vers = 3;
	s.proc = P_READ;
	assert_int_equal(uiw_rr_ulb_reply_max(&s), 1024);
	s.proc = 1; /* GETATTR */
	assert_int_equal(uiw_rr_ulb_reply_max(&s), 1024);
	s.proc = P_READLINK;
	assert_int_equal(uiw_rr_ulb_reply_max(&s), 1u << 20);
	s.proc = 17; /* READDIRPLUS */
	assert_int_equal(uiw_rr_ulb_reply_max(&s), 1u << 20);
	s.vers = 4;
	s.proc = 1; /* COMPOUND */
	assert_int_equal(uiw_rr_ulb_reply_max(&s), 1u << 20);
}

/* Positions: setpostn goes back within what follows the last reduced
 * body, not into it; x_inline hands out room in the buffer. */
static void test_enc_positions(void **state)
{
	struct uiw_rr_sel sel = sel_of(&rrt_ulb, RRT_PROG, RRT_V1,
				       RRTPROC_ECHO, UIW_RPCRDMA_ARGS);
	struct uiw_rr_xenc e;
	uint8_t tag[3] = "ab", *data = xu_pattern(101, 2);
	rrt_echo_args a = { { 3, (char *)tag }, 7, { 101, (char *)data } };
	struct uiw_rr_body b = { (xdrproc_t)xdr_rrt_echo_args, &a };
	u_int end, after;
	uint32_t w = 0xdeadbeef;
	int32_t *p;
	XDR *x;

	(void)state;
	uiw_rr_xenc_init(&e);
	x = uiw_rr_xenc_begin(&e, &sel, UINT_MAX);
	assert_true(uiw_rr_xdr_body(x, &b));
	end = XDR_GETPOS(x);
	assert_int_equal(end, 4 + 4 + 4 + 4 + 104);
	assert_true(xdr_u_int32_t(x, &w));
	after = XDR_GETPOS(x);
	assert_int_equal(after, end + 4);
	assert_true(XDR_SETPOS(x, end));
	assert_int_equal(XDR_GETPOS(x), end);
	assert_false(XDR_SETPOS(x, end - 8));   /* inside the data */
	assert_false(XDR_SETPOS(x, after));     /* past the end */
	p = XDR_INLINE(x, 8);
	assert_non_null(p);
	assert_int_equal(XDR_GETPOS(x), end + 8);
	uiw_rr_xenc_fini(&e);
	free(data);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nfs3_write_args),
		cmocka_unit_test(test_nfs3_symlink_args),
		cmocka_unit_test(test_count_from_args),
		cmocka_unit_test(test_nfs3_read_results),
		cmocka_unit_test(test_nfs3_read_failed),
		cmocka_unit_test(test_splice_length_mismatch),
		cmocka_unit_test(test_rrt_echo_both_ways),
		cmocka_unit_test(test_wchunks),
		cmocka_unit_test(test_enc_positions),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
