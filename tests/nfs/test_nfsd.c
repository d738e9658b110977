/*
 * uiwarp-nfsd end to end: the server started on a temporary directory
 * with free ports, driven by rpcgen's client stubs of NFS version 3 and
 * MOUNT version 3 over RPC-over-RDMA (RFC 8267's binding) and TCP.
 *
 * The server is this program's child; it says its ports on its first
 * line of stdout, and its SIGUSR1 line on stderr, which the test reads
 * through pipes (each read with a deadline).
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>
#include "mount3.h"
#include "nfs3_prot.h"
#include "nfs_fh.h"
#include "rpc_util.h"

static const char *server_bin;
static char tmp[256], exp_dir[300], key_file[300];
static pid_t srv = -1;
static int srv_out = -1, srv_err = -1;
static char rport[8], tport[8], mport[8];

/* One line from fd within ms, into buf; false on timeout or end. */
static bool read_line(int fd, char *buf, size_t len, int ms)
{
	size_t n = 0;
	struct pollfd p = { .fd = fd, .events = POLLIN };

	while (n + 1 < len) {
		if (poll(&p, 1, ms) <= 0 || read(fd, buf + n, 1) != 1)
			return false;
		if (buf[n] == '\n')
			break;
		n++;
	}
	buf[n] = '\0';
	return true;
}

/* A free TCP port for NFS over TCP (its 0 means none). */
static void free_port(char *buf, size_t len)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof(a);
	int s = socket(AF_INET, SOCK_STREAM, 0);

	assert_true(s >= 0);
	assert_int_equal(bind(s, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(getsockname(s, (struct sockaddr *)&a, &al), 0);
	snprintf(buf, len, "%u", ntohs(a.sin_port));
	close(s);
}

static void server_start(bool squash)
{
	int out[2], errp[2];
	char line[512];

	if (!tport[0])
		free_port(tport, sizeof(tport));

	assert_int_equal(pipe(out), 0);
	assert_int_equal(pipe(errp), 0);
	srv = fork();
	assert_true(srv >= 0);
	if (srv == 0) {
		/* the server ends with the test, even one that crashed */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(out[1], 1);
		dup2(errp[1], 2);
		execl(server_bin, server_bin, "--port", "0", "--tcp-port",
		      tport, "--mount-port", "0", "--key-file",
		      key_file, squash ? "--read-only" : "--no-root-squash",
		      "--stats", exp_dir, (char *)NULL);
		_exit(127);
	}
	close(out[1]);
	close(errp[1]);
	srv_out = out[0];
	srv_err = errp[0];
	assert_true(read_line(srv_out, line, sizeof(line), 10000));
	assert_int_equal(sscanf(strstr(line, "rdma port"),
				"rdma port %7[0-9], tcp port %7[0-9], mount port %7[0-9]",
				rport, tport, mport), 3);
}

static void server_stop(void)
{
	int st;

	kill(srv, SIGTERM);
	assert_int_equal(waitpid(srv, &st, 0), srv);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	close(srv_out);
	close(srv_err);
	srv = -1;
}

/* The SIGUSR1 line's counts. */
static void server_usage(unsigned long *rc, unsigned long *mrs,
			 unsigned long *held, unsigned long *tc)
{
	char line[512];

	kill(srv, SIGUSR1);
	assert_true(read_line(srv_err, line, sizeof(line), 5000));
	assert_int_equal(sscanf(line, "uiwarp-nfsd: usage: rdma_conns=%lu "
				"mrs=%lu held=%lu tcp_conns=%lu", rc, mrs, held,
				tc), 4);
}

static CLIENT *nfs_rdma(void)
{
	struct uiw_rpcrdma_opts o;
	CLIENT *cl;

	uiw_rpcrdma_opts_init(&o, false);
	o.ulb = uiw_rpcrdma_ulb_nfs();
	cl = uiw_rpcrdma_clnt_create("127.0.0.1", rport, NFS_PROGRAM, NFS_V3, &o);
	assert_non_null(cl);
	cl->cl_auth = authunix_create_default();
	return cl;
}

static CLIENT *nfs_tcp(void)
{
	CLIENT *cl = uiw_ru_clnt_ip("127.0.0.1", tport, SOCK_STREAM,
				    NFS_PROGRAM, NFS_V3);

	assert_non_null(cl);
	cl->cl_auth = authunix_create_default();
	return cl;
}

/* libtirpc's clnt_destroy leaves cl_auth to its owner (clnt_vc as
 * ours), so the AUTH_SYS handle goes first. */
static void cl_done(CLIENT *cl)
{
	if (cl->cl_auth)
		auth_destroy(cl->cl_auth);
	clnt_destroy(cl);
}

static nfs_fh3 root_fh;
static char root_buf[NFS3_FHSIZE];

static void do_mount(void)
{
	CLIENT *cl = uiw_ru_clnt_ip("127.0.0.1", mport, SOCK_STREAM,
				    MOUNT_PROGRAM, MOUNT_V3);
	mountres3 r = { 0 };
	dirpath p = exp_dir;
	mountlist ml = NULL;

	assert_non_null(cl);
	assert_int_equal(mountproc3_mnt_3(&p, &r, cl), RPC_SUCCESS);
	assert_int_equal(r.fhs_status, MNT3_OK);
	assert_int_equal(r.mountres3_u.mountinfo.auth_flavors.auth_flavors_len, 2);
	assert_int_equal(r.mountres3_u.mountinfo.auth_flavors.auth_flavors_val[0],
			 AUTH_SYS);
	memcpy(root_buf, r.mountres3_u.mountinfo.fhandle.fhandle3_val,
	       r.mountres3_u.mountinfo.fhandle.fhandle3_len);
	root_fh.data.data_len = r.mountres3_u.mountinfo.fhandle.fhandle3_len;
	root_fh.data.data_val = root_buf;
	clnt_freeres(cl, (xdrproc_t)xdr_mountres3, (char *)&r);
	assert_int_equal(mountproc3_dump_3(NULL, &ml, cl), RPC_SUCCESS);
	assert_non_null(ml);
	assert_string_equal(ml->ml_directory, exp_dir);
	clnt_freeres(cl, (xdrproc_t)xdr_mountlist, (char *)&ml);
	p = "/nonexistent";
	memset(&r, 0, sizeof(r));
	assert_int_equal(mountproc3_mnt_3(&p, &r, cl), RPC_SUCCESS);
	assert_int_equal(r.fhs_status, MNT3ERR_NOENT);
	cl_done(cl);
}

/* A handle kept beyond its reply. */
struct fh {
	char b[NFS3_FHSIZE];
	nfs_fh3 h;
};

static void fh_keep(struct fh *f, const nfs_fh3 *h)
{
	memcpy(f->b, h->data.data_val, h->data.data_len);
	f->h.data.data_len = h->data.data_len;
	f->h.data.data_val = f->b;
}

static nfsstat3 lookup(CLIENT *cl, const nfs_fh3 *dir, const char *nm,
		       struct fh *out)
{
	LOOKUP3args a = { { *dir, (char *)nm } };
	LOOKUP3res r = { 0 };
	nfsstat3 s;

	assert_int_equal(nfsproc3_lookup_3(&a, &r, cl), RPC_SUCCESS);
	s = r.status;
	if (!s && out)
		fh_keep(out, &r.LOOKUP3res_u.resok.object);
	clnt_freeres(cl, (xdrproc_t)xdr_LOOKUP3res, (char *)&r);
	return s;
}

static nfsstat3 create(CLIENT *cl, const nfs_fh3 *dir, const char *nm,
		       createmode3 how, uint32_t mode, struct fh *out)
{
	CREATE3args a = { .where = { *dir, (char *)nm } };
	CREATE3res r = { 0 };
	nfsstat3 s;

	a.how.mode = how;
	a.how.createhow3_u.obj_attributes.mode.set_it = TRUE;
	a.how.createhow3_u.obj_attributes.mode.set_mode3_u.mode = mode;
	assert_int_equal(nfsproc3_create_3(&a, &r, cl), RPC_SUCCESS);
	s = r.status;
	if (!s) {
		assert_true(r.CREATE3res_u.resok.obj.handle_follows);
		assert_true(r.CREATE3res_u.resok.dir_wcc.after.attributes_follow);
		if (out)
			fh_keep(out, &r.CREATE3res_u.resok.obj.post_op_fh3_u.handle);
	}
	clnt_freeres(cl, (xdrproc_t)xdr_CREATE3res, (char *)&r);
	return s;
}

/* A directory made in the root, and its handle. */
static void mkdir_ok(CLIENT *cl, const char *nm, struct fh *out)
{
	MKDIR3args a = { .where = { root_fh, (char *)nm } };
	MKDIR3res r = { 0 };

	assert_int_equal(nfsproc3_mkdir_3(&a, &r, cl), RPC_SUCCESS);
	assert_int_equal(r.status, NFS3_OK);
	fh_keep(out, &r.MKDIR3res_u.resok.obj.post_op_fh3_u.handle);
	clnt_freeres(cl, (xdrproc_t)xdr_MKDIR3res, (char *)&r);
}

static nfsstat3 getattr(CLIENT *cl, const nfs_fh3 *fh, fattr3 *out)
{
	GETATTR3args a = { *fh };
	GETATTR3res r = { 0 };

	assert_int_equal(nfsproc3_getattr_3(&a, &r, cl), RPC_SUCCESS);
	if (!r.status && out)
		*out = r.GETATTR3res_u.resok.obj_attributes;
	return r.status;
}

static uint64_t fnv(const uint8_t *p, size_t n)
{
	uint64_t h = 1469598103934665603ULL;

	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 1099511628211ULL;
	return h;
}

/* size octets written in pieces of at most 1 MiB and read back. */
static void write_read(CLIENT *cl, const char *nm, size_t size)
{
	struct fh f;
	uint8_t *data = malloc(size ? size : 1), *back = malloc(size ? size : 1);
	size_t off;
	fattr3 at;

	for (size_t i = 0; i < size; i++)
		data[i] = (uint8_t)(i * 2654435761u >> 13);
	assert_int_equal(create(cl, &root_fh, nm, UNCHECKED, 0644, &f), NFS3_OK);
	for (off = 0; off < size;) {
		size_t n = size - off < 1048576 ? size - off : 1048576;
		WRITE3args a = { f.h, off, (count3)n, UNSTABLE,
				 { (u_int)n, (char *)data + off } };
		WRITE3res r = { 0 };

		assert_int_equal(nfsproc3_write_3(&a, &r, cl), RPC_SUCCESS);
		assert_int_equal(r.status, NFS3_OK);
		assert_int_equal(r.WRITE3res_u.resok.count, n);
		off += n;
	}
	{
		COMMIT3args a = { f.h, 0, 0 };
		COMMIT3res r = { 0 };

		assert_int_equal(nfsproc3_commit_3(&a, &r, cl), RPC_SUCCESS);
		assert_int_equal(r.status, NFS3_OK);
	}
	assert_int_equal(getattr(cl, &f.h, &at), NFS3_OK);
	assert_int_equal(at.size, size);
	for (off = 0;;) {
		READ3args a = { f.h, off, 1048576 };
		READ3res r = { 0 };
		u_int got;

		r.READ3res_u.resok.data.data_val = (char *)back + off;
		assert_int_equal(nfsproc3_read_3(&a, &r, cl), RPC_SUCCESS);
		assert_int_equal(r.status, NFS3_OK);
		got = r.READ3res_u.resok.count;
		assert_true(off + got <= size);
		if (r.READ3res_u.resok.data.data_val != (char *)back + off)
			memcpy(back + off, r.READ3res_u.resok.data.data_val, got);
		else
			r.READ3res_u.resok.data.data_val = NULL;
		off += got;
		if (r.READ3res_u.resok.eof) {
			clnt_freeres(cl, (xdrproc_t)xdr_READ3res, (char *)&r);
			break;
		}
		clnt_freeres(cl, (xdrproc_t)xdr_READ3res, (char *)&r);
		assert_true(got > 0);
	}
	assert_int_equal(off, size);
	assert_true(fnv(back, size) == fnv(data, size));
	free(data);
	free(back);
}

static void test_io(CLIENT *cl, const char *tag)
{
	static const size_t sizes[] = { 1, 4096, 100000, 1048576, 4194304 + 7 };
	char nm[64];

	for (size_t i = 0; i < sizeof(sizes) / sizeof(*sizes); i++) {
		snprintf(nm, sizeof(nm), "%s-%zu", tag, sizes[i]);
		write_read(cl, nm, sizes[i]);
	}
}

static void test_rdma_io(void **state)
{
	CLIENT *cl = nfs_rdma();
	struct uiw_rpcrdma_stats s;

	test_io(cl, "rdma");
	/* READ's data came by RDMA Write, WRITE's by RDMA Read */
	assert_true(uiw_rpcrdma_clnt_stats(cl, &s));
	assert_true(s.write_chunks > 0 && s.write_bytes >= 4194304);
	assert_true(s.read_chunks > 0 && s.read_bytes >= 4194304);
	cl_done(cl);
}

static void test_tcp_io(void **state)
{
	CLIENT *cl = nfs_tcp();

	test_io(cl, "tcp");
	cl_done(cl);
}

/* Several clients at once: each its own connection (three over RDMA,
 * one over TCP) in its own thread, writing a file of its own with
 * UNSTABLE WRITEs and a COMMIT and reading it back, while the others
 * do the same; the one server loop serves them all.  The threads check
 * without cmocka (whose asserts belong to the test's thread) and say
 * what went wrong. */
#define PEERS 4
#define PEER_SIZE (3u << 20)
#define PEER_CHUNK (256u << 10)

struct peer {
	int i;
	pthread_t t;
	char err[160];
};

static void *peer_run(void *arg)
{
	struct peer *p = arg;
	struct uiw_rpcrdma_opts o;
	char nm[16];
	uint8_t *out = malloc(PEER_SIZE), *in = malloc(PEER_SIZE);
	CLIENT *cl;
	CREATE3args ca = { .where = { root_fh, nm } };
	CREATE3res cr = { 0 };
	struct fh f;
	uint32_t off;

	snprintf(nm, sizeof(nm), "peer%d", p->i);
	uiw_rpcrdma_opts_init(&o, false);
	o.ulb = uiw_rpcrdma_ulb_nfs();
	cl = p->i == PEERS - 1 ?
	     uiw_ru_clnt_ip("127.0.0.1", tport, SOCK_STREAM, NFS_PROGRAM, NFS_V3) :
	     uiw_rpcrdma_clnt_create("127.0.0.1", rport, NFS_PROGRAM, NFS_V3, &o);
	if (!cl || !out || !in) {
		snprintf(p->err, sizeof(p->err), "no client or memory");
		goto out;
	}
	cl->cl_auth = authunix_create_default();
	for (off = 0; off < PEER_SIZE; off++)
		out[off] = (uint8_t)(off * 7 + (uint32_t)p->i * 131);
	ca.how.mode = UNCHECKED;
	if (nfsproc3_create_3(&ca, &cr, cl) != RPC_SUCCESS || cr.status ||
	    !cr.CREATE3res_u.resok.obj.handle_follows) {
		snprintf(p->err, sizeof(p->err), "CREATE %s", nm);
		goto out;
	}
	fh_keep(&f, &cr.CREATE3res_u.resok.obj.post_op_fh3_u.handle);
	clnt_freeres(cl, (xdrproc_t)xdr_CREATE3res, (char *)&cr);
	for (off = 0; off < PEER_SIZE; off += PEER_CHUNK) {
		WRITE3args a = { f.h, off, PEER_CHUNK, UNSTABLE,
				 { PEER_CHUNK, (char *)out + off } };
		WRITE3res r = { 0 };

		if (nfsproc3_write_3(&a, &r, cl) != RPC_SUCCESS || r.status ||
		    r.WRITE3res_u.resok.count != PEER_CHUNK) {
			snprintf(p->err, sizeof(p->err), "WRITE at %u", off);
			goto out;
		}
		clnt_freeres(cl, (xdrproc_t)xdr_WRITE3res, (char *)&r);
	}
	{
		COMMIT3args a = { f.h, 0, 0 };
		COMMIT3res r = { 0 };

		if (nfsproc3_commit_3(&a, &r, cl) != RPC_SUCCESS || r.status) {
			snprintf(p->err, sizeof(p->err), "COMMIT");
			goto out;
		}
		clnt_freeres(cl, (xdrproc_t)xdr_COMMIT3res, (char *)&r);
	}
	for (off = 0; off < PEER_SIZE; off += PEER_CHUNK) {
		READ3args a = { f.h, off, PEER_CHUNK };
		READ3res r = { 0 };

		if (nfsproc3_read_3(&a, &r, cl) != RPC_SUCCESS || r.status ||
		    r.READ3res_u.resok.data.data_len != PEER_CHUNK) {
			snprintf(p->err, sizeof(p->err), "READ at %u", off);
			goto out;
		}
		memcpy(in + off, r.READ3res_u.resok.data.data_val, PEER_CHUNK);
		clnt_freeres(cl, (xdrproc_t)xdr_READ3res, (char *)&r);
	}
	if (memcmp(in, out, PEER_SIZE))
		snprintf(p->err, sizeof(p->err), "%s read back differs", nm);
out:
	if (cl)
		cl_done(cl);
	free(in);
	free(out);
	return NULL;
}

static void test_several_clients(void **state)
{
	struct peer p[PEERS];
	int i;

	for (i = 0; i < PEERS; i++) {
		p[i] = (struct peer){ .i = i };
		assert_int_equal(pthread_create(&p[i].t, NULL, peer_run, &p[i]), 0);
	}
	for (i = 0; i < PEERS; i++) {
		assert_int_equal(pthread_join(p[i].t, NULL), 0);
		if (p[i].err[0])
			fail_msg("client %d (%s): %s", i,
				 i == PEERS - 1 ? "tcp" : "rdma", p[i].err);
	}
	/* each file as its client wrote it, on the server's disk */
	for (i = 0; i < PEERS; i++) {
		char path[600];
		struct stat st;

		snprintf(path, sizeof(path), "%s/peer%d", exp_dir, i);
		assert_int_equal(stat(path, &st), 0);
		assert_int_equal(st.st_size, PEER_SIZE);
	}
}

static void test_namespace(void **state)
{
	CLIENT *cl = nfs_rdma();
	struct fh d, f, l;
	fattr3 at;

	assert_int_equal(getattr(cl, &root_fh, &at), NFS3_OK);
	assert_int_equal(at.type, NF3DIR);
	{
		MKDIR3args a = { .where = { root_fh, "dir" } };
		MKDIR3res r = { 0 };

		a.attributes.mode.set_it = TRUE;
		a.attributes.mode.set_mode3_u.mode = 0750;
		assert_int_equal(nfsproc3_mkdir_3(&a, &r, cl), RPC_SUCCESS);
		assert_int_equal(r.status, NFS3_OK);
		fh_keep(&d, &r.MKDIR3res_u.resok.obj.post_op_fh3_u.handle);
		assert_int_equal(r.MKDIR3res_u.resok.obj_attributes.post_op_attr_u
				 .attributes.mode, 0750);
		clnt_freeres(cl, (xdrproc_t)xdr_MKDIR3res, (char *)&r);
		memset(&r, 0, sizeof(r));
		assert_int_equal(nfsproc3_mkdir_3(&a, &r, cl), RPC_SUCCESS);
		assert_int_equal(r.status, NFS3ERR_EXIST);
		clnt_freeres(cl, (xdrproc_t)xdr_MKDIR3res, (char *)&r);
	}
	assert_int_equal(create(cl, &d.h, "f", GUARDED, 0600, &f), NFS3_OK);
	assert_int_equal(create(cl, &d.h, "f", GUARDED, 0600, NULL), NFS3ERR_EXIST);
	assert_int_equal(lookup(cl, &d.h, "nope", NULL), NFS3ERR_NOENT);
	assert_int_equal(lookup(cl, &d.h, "f", &l), NFS3_OK);
	{
		SETATTR3args a = { .object = f.h };
		SETATTR3res r = { 0 };

		a.new_attributes.size.set_it = TRUE;
		a.new_attributes.size.set_size3_u.size = 12345;
		a.new_attributes.mode.set_it = TRUE;
		a.new_attributes.mode.set_mode3_u.mode = 0640;
		assert_int_equal(nfsproc3_setattr_3(&a, &r, cl), RPC_SUCCESS);
		assert_int_equal(r.status, NFS3_OK);
		assert_true(r.SETATTR3res_u.resok.obj_wcc.before.attributes_follow);
		assert_int_equal(r.SETATTR3res_u.resok.obj_wcc.after.post_op_attr_u
				 .attributes.size, 12345);
		assert_int_equal(getattr(cl, &l.h, &at), NFS3_OK);
		assert_int_equal(at.mode, 0640);
	}
	{
		SYMLINK3args a = { .where = { d.h, "ln" } };
		SYMLINK3res r = { 0 };
		READLINK3res rl = { 0 };
		struct fh s;

		a.symlink.symlink_data = "../../../etc/passwd";
		assert_int_equal(nfsproc3_symlink_3(&a, &r, cl), RPC_SUCCESS);
		assert_int_equal(r.status, NFS3_OK);
		fh_keep(&s, &r.SYMLINK3res_u.resok.obj.post_op_fh3_u.handle);
		clnt_freeres(cl, (xdrproc_t)xdr_SYMLINK3res, (char *)&r);
		READLINK3args ra = { s.h };
		assert_int_equal(nfsproc3_readlink_3(&ra, &rl, cl), RPC_SUCCESS);
		assert_int_equal(rl.status, NFS3_OK);
		assert_string_equal(rl.READLINK3res_u.resok.data,
				    "../../../etc/passwd");
		clnt_freeres(cl, (xdrproc_t)xdr_READLINK3res, (char *)&rl);
	}
	{
		RENAME3args a = { { d.h, "f" }, { root_fh, "g" } };
		RENAME3res r = { 0 };

		assert_int_equal(nfsproc3_rename_3(&a, &r, cl), RPC_SUCCESS);
		assert_int_equal(r.status, NFS3_OK);
		assert_true(r.RENAME3res_u.resok.todir_wcc.after.attributes_follow);
		/* the old handle follows the file */
		assert_int_equal(getattr(cl, &f.h, &at), NFS3_OK);
		assert_int_equal(at.size, 12345);
	}
	{
		RMDIR3args a = { { root_fh, "dir" } };
		RMDIR3res r = { 0 };
		REMOVE3args ra = { { d.h, "ln" } };
		REMOVE3res rr = { 0 };

		assert_int_equal(nfsproc3_rmdir_3(&a, &r, cl), RPC_SUCCESS);
		assert_int_equal(r.status, NFS3ERR_NOTEMPTY);
		memset(&r, 0, sizeof(r));
		assert_int_equal(nfsproc3_remove_3(&ra, &rr, cl), RPC_SUCCESS);
		assert_int_equal(rr.status, NFS3_OK);
		memset(&rr, 0, sizeof(rr));
		assert_int_equal(nfsproc3_remove_3(&ra, &rr, cl), RPC_SUCCESS);
		assert_int_equal(rr.status, NFS3ERR_NOENT);
		assert_int_equal(nfsproc3_rmdir_3(&a, &r, cl), RPC_SUCCESS);
		assert_int_equal(r.status, NFS3_OK);
		/* the directory's handle is stale now */
		assert_int_equal(getattr(cl, &d.h, NULL), NFS3ERR_STALE);
	}
	{
		FSINFO3args a = { root_fh };
		FSINFO3res r = { 0 };

		assert_int_equal(nfsproc3_fsinfo_3(&a, &r, cl), RPC_SUCCESS);
		assert_int_equal(r.status, NFS3_OK);
		assert_int_equal(r.FSINFO3res_u.resok.rtmax, 1048576);
		assert_int_equal(r.FSINFO3res_u.resok.wtmax, 1048576);
		assert_int_equal(r.FSINFO3res_u.resok.dtpref, 65536);
	}
	cl_done(cl);
}

/* 2000 entries, READDIR and READDIRPLUS with 64 KiB replies (Reply
 * chunks over RDMA), each name once. */
/* A READDIRPLUS asking for 4 GiB of a directory of 9000 entries with
 * names of 250 octets (over 3 MiB encoded): each reply stays within the
 * server's bound, and so within the Reply chunk of 1 MiB offered over
 * RDMA; the cookies lead through every entry once. */
#define HUGE_N 9000

static void test_readdir_huge_count(void **state)
{
	CLIENT *cl = nfs_rdma();
	static unsigned char seen[HUGE_N];
	char path[700];
	struct fh d;
	cookie3 ck = 0;
	bool eof = false;
	unsigned total = 0, replies = 0;

	snprintf(path, sizeof(path), "%s/huge", exp_dir);
	assert_int_equal(mkdir(path, 0755), 0);
	for (int i = 0; i < HUGE_N; i++) {
		int fd;

		/* names of 250 octets: the longest entries a reply of
		 * 1 MiB holds fewer of than the server keeps per call */
		snprintf(path, sizeof(path), "%s/huge/entry-%05d-%0238d",
			 exp_dir, i, 0);
		fd = open(path, O_CREAT | O_WRONLY, 0644);
		assert_true(fd >= 0);
		close(fd);
	}
	assert_int_equal(lookup(cl, &root_fh, "huge", &d), NFS3_OK);
	while (!eof) {
		READDIRPLUS3args a = { d.h, ck, { 0 }, UINT32_MAX, UINT32_MAX };
		READDIRPLUS3res r = { 0 };

		assert_int_equal(nfsproc3_readdirplus_3(&a, &r, cl), RPC_SUCCESS);
		assert_int_equal(r.status, NFS3_OK);
		for (entryplus3 *e = r.READDIRPLUS3res_u.resok.reply.entries; e;
		     e = e->nextentry) {
			int k;

			ck = e->cookie;
			if (sscanf(e->name, "entry-%d-", &k) == 1) {
				assert_true(k >= 0 && k < HUGE_N);
				assert_int_equal(seen[k], 0);
				seen[k] = 1;
				total++;
			}
		}
		eof = r.READDIRPLUS3res_u.resok.reply.eof;
		clnt_freeres(cl, (xdrproc_t)xdr_READDIRPLUS3res, (char *)&r);
		replies++;
	}
	assert_int_equal(total, HUGE_N);
	assert_true(replies >= 3);
	cl_done(cl);
}

static void test_readdir(void **state)
{
	CLIENT *cl = nfs_rdma();
	struct fh d;
	static unsigned char seen[2000];
	char nm[32];
	unsigned total = 0;

	mkdir_ok(cl, "big", &d);
	for (int i = 0; i < 2000; i++) {
		snprintf(nm, sizeof(nm), "entry-%04d", i);
		assert_int_equal(create(cl, &d.h, nm, UNCHECKED, 0644, NULL), NFS3_OK);
	}
	for (int plus = 0; plus < 2; plus++) {
		cookie3 ck = 0;
		bool eof = false;

		memset(seen, 0, sizeof(seen));
		total = 0;
		while (!eof) {
			if (plus) {
				READDIRPLUS3args a = { d.h, ck, { 0 }, 8192, 65536 };
				READDIRPLUS3res r = { 0 };

				assert_int_equal(nfsproc3_readdirplus_3(&a, &r, cl),
						 RPC_SUCCESS);
				assert_int_equal(r.status, NFS3_OK);
				for (entryplus3 *e = r.READDIRPLUS3res_u.resok.reply
				     .entries; e; e = e->nextentry) {
					int k;

					ck = e->cookie;
					if (sscanf(e->name, "entry-%d", &k) == 1) {
						assert_int_equal(seen[k], 0);
						seen[k] = 1;
						total++;
						assert_true(e->name_handle.handle_follows);
						assert_true(e->name_attributes
							    .attributes_follow);
					}
				}
				eof = r.READDIRPLUS3res_u.resok.reply.eof;
				clnt_freeres(cl, (xdrproc_t)xdr_READDIRPLUS3res,
					     (char *)&r);
			} else {
				READDIR3args a = { d.h, ck, { 0 }, 65536 };
				READDIR3res r = { 0 };

				assert_int_equal(nfsproc3_readdir_3(&a, &r, cl),
						 RPC_SUCCESS);
				assert_int_equal(r.status, NFS3_OK);
				for (entry3 *e = r.READDIR3res_u.resok.reply.entries;
				     e; e = e->nextentry) {
					int k;

					ck = e->cookie;
					if (sscanf(e->name, "entry-%d", &k) == 1) {
						assert_int_equal(seen[k], 0);
						seen[k] = 1;
						total++;
					}
				}
				eof = r.READDIR3res_u.resok.reply.eof;
				clnt_freeres(cl, (xdrproc_t)xdr_READDIR3res,
					     (char *)&r);
			}
		}
		assert_int_equal(total, 2000);
	}
	{
		/* not even one entry fits */
		READDIR3args a = { d.h, 0, { 0 }, 10 };
		READDIR3res r = { 0 };

		assert_int_equal(nfsproc3_readdir_3(&a, &r, cl), RPC_SUCCESS);
		assert_int_equal(r.status, NFS3ERR_TOOSMALL);
	}
	cl_done(cl);
}

static uint8_t key[NFS_FH_KEYLEN];

static void test_security(void **state)
{
	CLIENT *cl = nfs_tcp();
	struct fh f, x;
	struct nfs_fh h;
	uint8_t forged[NFS_FH_LEN];
	nfs_fh3 bad = { { NFS_FH_LEN, (char *)forged } };
	struct stat st;
	int fd;

	fd = open(key_file, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(read(fd, key, sizeof(key)), sizeof(key));
	close(fd);
	/* random, bit-flipped MAC, truncated */
	for (size_t i = 0; i < sizeof(forged); i++)
		forged[i] = (uint8_t)rand();
	assert_int_equal(getattr(cl, &bad, NULL), NFS3ERR_BADHANDLE);
	memcpy(forged, root_fh.data.data_val, NFS_FH_LEN);
	forged[NFS_FH_LEN - 1] ^= 1;
	assert_int_equal(getattr(cl, &bad, NULL), NFS3ERR_BADHANDLE);
	memcpy(forged, root_fh.data.data_val, NFS_FH_LEN);
	bad.data.data_len = NFS_FH_LEN - 1;
	assert_int_equal(getattr(cl, &bad, NULL), NFS3ERR_BADHANDLE);
	bad.data.data_len = NFS_FH_LEN;
	/* the right key, another export's id */
	assert_true(nfs_fh_decode(key, 0, forged, NFS_FH_LEN, &h) == false);
	{
		uint32_t id = (uint32_t)(uint8_t)forged[4] << 24 |
			      (uint32_t)(uint8_t)forged[5] << 16 |
			      (uint32_t)(uint8_t)forged[6] << 8 |
			      (uint8_t)forged[7];

		assert_true(nfs_fh_decode(key, id, forged, NFS_FH_LEN, &h));
		h.export_id = id + 1;
		nfs_fh_encode(key, &h, forged);
		assert_int_equal(getattr(cl, &bad, NULL), NFS3ERR_BADHANDLE);
		/* the right key and id, an inode outside the export */
		assert_int_equal(stat("/etc/passwd", &st), 0);
		h.export_id = id;
		h.ino = st.st_ino;
		h.gen = 0;
		nfs_fh_encode(key, &h, forged);
		assert_int_equal(getattr(cl, &bad, NULL), NFS3ERR_STALE);
	}
	/* ".." of the root is the root; names with "/" */
	assert_int_equal(lookup(cl, &root_fh, "..", &x), NFS3_OK);
	assert_memory_equal(x.b, root_fh.data.data_val, NFS_FH_LEN);
	assert_int_equal(lookup(cl, &root_fh, "../etc", NULL), NFS3ERR_INVAL);
	assert_int_equal(create(cl, &root_fh, "a/b", UNCHECKED, 0644, NULL),
			 NFS3ERR_INVAL);
	/* a symbolic link out of the export is never followed */
	{
		SYMLINK3args a = { .where = { root_fh, "out" } };
		SYMLINK3res r = { 0 };
		struct stat before, after;

		a.symlink.symlink_data = "/etc/passwd";
		assert_int_equal(nfsproc3_symlink_3(&a, &r, cl), RPC_SUCCESS);
		assert_int_equal(r.status, NFS3_OK);
		fh_keep(&f, &r.SYMLINK3res_u.resok.obj.post_op_fh3_u.handle);
		clnt_freeres(cl, (xdrproc_t)xdr_SYMLINK3res, (char *)&r);
		assert_int_equal(stat("/etc/passwd", &before), 0);
		assert_int_equal(create(cl, &root_fh, "out", UNCHECKED, 0644, NULL),
				 NFS3ERR_INVAL);
		READ3args ra = { f.h, 0, 100 };
		READ3res rr = { 0 };

		assert_int_equal(nfsproc3_read_3(&ra, &rr, cl), RPC_SUCCESS);
		assert_int_equal(rr.status, NFS3ERR_INVAL);
		WRITE3args wa = { f.h, 0, 1, FILE_SYNC, { 1, "x" } };
		WRITE3res wr = { 0 };

		assert_int_equal(nfsproc3_write_3(&wa, &wr, cl), RPC_SUCCESS);
		assert_int_equal(wr.status, NFS3ERR_INVAL);
		assert_int_equal(stat("/etc/passwd", &after), 0);
		assert_true(before.st_mtim.tv_sec == after.st_mtim.tv_sec &&
			    before.st_mtim.tv_nsec == after.st_mtim.tv_nsec &&
			    before.st_size == after.st_size);
	}
	/* ACCES: another uid on a 0600 file of root's */
	if (geteuid() == 0) {
		struct fh p;
		AUTH *root_auth = cl->cl_auth;
		gid_t g = 1000;

		assert_int_equal(create(cl, &root_fh, "private", GUARDED, 0600, &p),
				 NFS3_OK);
		cl->cl_auth = authunix_create("test", 1000, 1000, 1, &g);
		READ3args ra = { p.h, 0, 10 };
		READ3res rr = { 0 };

		assert_int_equal(nfsproc3_read_3(&ra, &rr, cl), RPC_SUCCESS);
		assert_int_equal(rr.status, NFS3ERR_ACCES);
		assert_int_equal(create(cl, &root_fh, "x", GUARDED, 0600, NULL),
				 NFS3ERR_ACCES);
		{
			ACCESS3args aa = { p.h, ACCESS3_READ | ACCESS3_MODIFY };
			ACCESS3res ar = { 0 };

			assert_int_equal(nfsproc3_access_3(&aa, &ar, cl), RPC_SUCCESS);
			assert_int_equal(ar.status, NFS3_OK);
			assert_int_equal(ar.ACCESS3res_u.resok.access, 0);
		}
		auth_destroy(cl->cl_auth);
		cl->cl_auth = root_auth;
	}
	cl_done(cl);
}

/* A handle from before a restart with the same key still works. */
static void test_restart(void **state)
{
	CLIENT *cl = nfs_tcp();
	struct fh f, sub;
	fattr3 at;

	mkdir_ok(cl, "keep", &sub);
	assert_int_equal(create(cl, &sub.h, "kept", UNCHECKED, 0644, &f), NFS3_OK);
	cl_done(cl);
	server_stop();
	server_start(false);
	cl = nfs_tcp();
	assert_int_equal(getattr(cl, &f.h, &at), NFS3_OK);
	assert_int_equal(at.type, NF3REG);
	assert_int_equal(getattr(cl, &root_fh, NULL), NFS3_OK);
	cl_done(cl);
}

/* A client killed in the middle of a WRITE stream: its connection and
 * everything it held go. */
static void test_killed_client(void **state)
{
	unsigned long rc, mrs, held, tc, mrs0;
	int go[2], i;
	pid_t child;
	char c;

	/* the connections of the tests before gone first: the server
	 * hears of a disconnection a little after the client's end */
	for (i = 0; i < 1000; i++) {
		server_usage(&rc, &mrs0, &held, &tc);
		if (!rc && !held)
			break;
		poll(NULL, 0, 10);
	}
	assert_int_equal(rc, 0);
	assert_int_equal(pipe(go), 0);
	child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		/* a fresh process: the RDMA library's threads do not
		 * survive fork */
		char fd[16];
		int in[2];

		close(go[0]);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (pipe(in) || write(in[1], root_fh.data.data_val, NFS_FH_LEN) !=
		    NFS_FH_LEN)
			_exit(127);
		close(in[1]);
		dup2(in[0], 0);
		snprintf(fd, sizeof(fd), "%d", go[1]);
		execl("/proc/self/exe", "writer", "--writer", rport, fd,
		      (char *)NULL);
		_exit(127);
	}
	close(go[1]);
	{
		struct pollfd p = { .fd = go[0], .events = POLLIN };

		assert_int_equal(poll(&p, 1, 20000), 1);
		assert_int_equal(read(go[0], &c, 1), 1);
	}
	server_usage(&rc, &mrs, &held, &tc);
	assert_int_equal(rc, 1);
	assert_true(mrs > mrs0);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	close(go[0]);
	/* the server sees the connection end when the peer's socket
	 * closes; poll its usage line until everything is back, within
	 * 10 s */
	for (i = 0; i < 1000; i++) {
		server_usage(&rc, &mrs, &held, &tc);
		if (!rc && mrs == mrs0 && !held)
			break;
		poll(NULL, 0, 10);
	}
	assert_int_equal(rc, 0);
	assert_int_equal(mrs, mrs0);
	assert_int_equal(held, 0);
}

/* The killed client: WRITEs of 1 MiB without end over RDMA to the
 * file "stream", a line on fd after the fourth. */
static int writer(const char *port, int fd)
{
	CLIENT *cl;
	struct fh f;
	static char buf[1048576];

	snprintf(rport, sizeof(rport), "%s", port);
	cl = nfs_rdma();
	if (lookup(cl, &root_fh, "stream", &f) &&
	    create(cl, &root_fh, "stream", UNCHECKED, 0644, &f))
		return 1;
	for (uint64_t off = 0;; off += sizeof(buf)) {
		WRITE3args a = { f.h, off % (64 << 20), sizeof(buf), UNSTABLE,
				 { sizeof(buf), buf } };
		WRITE3res r = { 0 };

		if (nfsproc3_write_3(&a, &r, cl) != RPC_SUCCESS)
			return 1;
		if (off == 4 * sizeof(buf) && write(fd, "g", 1) != 1)
			return 1;
	}
}

static int setup(void **state)
{
	snprintf(tmp, sizeof(tmp), "/tmp/uiwarp-nfsd-test.XXXXXX");
	assert_non_null(mkdtemp(tmp));
	snprintf(exp_dir, sizeof(exp_dir), "%s/export", tmp);
	snprintf(key_file, sizeof(key_file), "%s/key", tmp);
	assert_int_equal(mkdir(exp_dir, 0755), 0);
	signal(SIGPIPE, SIG_IGN);
	server_start(false);
	do_mount();
	return 0;
}

static int teardown(void **state)
{
	char cmd[400];

	if (srv > 0)
		server_stop();
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
	return system(cmd);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_namespace),
		cmocka_unit_test(test_rdma_io),
		cmocka_unit_test(test_tcp_io),
		cmocka_unit_test(test_several_clients),
		cmocka_unit_test(test_readdir_huge_count),
		cmocka_unit_test(test_readdir),
		cmocka_unit_test(test_security),
		cmocka_unit_test(test_killed_client),
		cmocka_unit_test(test_restart),
	};

	if (argc < 2) {
		fprintf(stderr, "usage: %s path/to/uiwarp-nfsd\n", argv[0]);
		return 2;
	}
	if (argc == 4 && !strcmp(argv[1], "--writer")) {
		/* the root handle comes on stdin */
		root_fh.data.data_val = root_buf;
		if (read(0, root_buf, NFS_FH_LEN) != NFS_FH_LEN)
			return 1;
		root_fh.data.data_len = NFS_FH_LEN;
		return writer(argv[2], atoi(argv[3]));
	}
	server_bin = argv[1];
	return cmocka_run_group_tests(tests, setup, teardown);
}
