/*
 * uiwarp's RPC-over-RDMA version 1 transport for libtirpc (RFC 8166,
 * RFC 8797, RFC 8267): a CLIENT and a SVCXPRT that rpcgen-generated
 * programs use unchanged, on any verbs device (uiwarp's drop-in
 * libraries, siw, an RDMA NIC).  Link with -luiwarp-rpcrdma -ltirpc.
 * See uiwarp-rpcrdma(3).
 */
#ifndef UIWARP_RPCRDMA_H
#define UIWARP_RPCRDMA_H

#include <rpc/rpc.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The port NFS/RDMA listens on (RFC 8166 §9.1, IANA "nfsrdma"). */
#define UIW_RPCRDMA_NFS_PORT "20049"

/* ---- Upper-Layer Bindings (RFC 8166 §6) ------------------------------ */

enum uiw_rpcrdma_dir {
	UIW_RPCRDMA_ARGS = 0,       /* in the call: moved by RDMA Read */
	UIW_RPCRDMA_RESULTS = 1,    /* in the reply: moved by RDMA Write */
};

/*
 * One DDP-eligible data item of one procedure.  Items are counted as
 * the opaque bodies (xdr_opaque, xdr_bytes, xdr_string: the octets, not
 * the length word) of the procedure's arguments or results in XDR
 * order, from 1.  libtirpc's xdr_opaque emits nothing for an empty
 * body, so an empty one is not counted: the items after it count one
 * lower (harmless when, as in NFS, the eligible item is the last body).
 *
 * ARGS: a body of at least min_len octets is reduced (an RDMA Read
 * chunk).  RESULTS: the Requester offers a Write chunk for it (RFC 8166
 * §3.4.6) when the size it expects is at least min_len; Write chunks go
 * to the results' eligible items in XDR order (RFC 8267 §6.4.1), so
 * a Requester offers them for a leading run of its RESULTS rules (in
 * table order) and stops at the first it leaves inline.
 */
struct uiw_rpcrdma_ddp_rule {
	rpcprog_t prog;
	rpcvers_t vers;
	rpcproc_t proc;
	enum uiw_rpcrdma_dir dir;
	unsigned item;      /* 1 = the first opaque body; 0 = each of them */
	size_t min_len;     /* shorter ones travel inline */
	size_t max_len;     /* RESULTS: the Write chunk offered for it */
	/* RESULTS, optional: the size of the Write chunk to offer, read
	 * from the call's arguments (args decodes them from the first;
	 * e.g. NFSv3 READ's count).  0: none.  max_len, when not 0,
	 * bounds it.  NULL: max_len. */
	size_t (*result_len)(const struct uiw_rpcrdma_ddp_rule *r, XDR *args);
};

struct uiw_rpcrdma_ulb {
	const struct uiw_rpcrdma_ddp_rule *rules;
	size_t nrules;
	/* The largest reply (Write chunk data not counted) of a procedure
	 * no rule or reply_max row speaks of: above the inline threshold
	 * a Reply chunk this large is offered (0: 1 MiB). */
	size_t reply_max;
};

/* RFC 8267 §4's binding for NFS version 3: READ and WRITE data,
 * READLINK and SYMLINK paths (READ's Write chunk sized by the count it
 * asks for).  NFS version 4's (§6: READ, WRITE, READLINK, CREATE of
 * NF4LNK inside COMPOUND) is not in it: its items have no fixed
 * ordinal, and finding them means walking every operation's XDR (see
 * uiwarp-rpcrdma(3)). */
const struct uiw_rpcrdma_ulb *uiw_rpcrdma_ulb_nfs(void);

/* ---- Settings -------------------------------------------------------- */

struct uiw_rpcrdma_opts {
	unsigned credits;           /* client 128, server 64 */
	unsigned inline_send;       /* 4096 */
	unsigned inline_recv;       /* 4096 */
	bool no_private_data;       /* false: RFC 8797 private data sent */
	bool no_remote_inv;         /* false: Send With Invalidate allowed */
	unsigned connect_timeout_ms;/* 10000 */
	const struct uiw_rpcrdma_ulb *ulb;   /* NULL: no DDP-eligible item */
};
void uiw_rpcrdma_opts_init(struct uiw_rpcrdma_opts *o, bool server);

/* ---- Create functions ------------------------------------------------ */

/*
 * A CLIENT for prog/vers at host:port (port NULL: 20049) over
 * RPC-over-RDMA.  AUTH_NONE by default; set cl_auth to an
 * authunix_create_default() for AUTH_SYS.  Timeouts, clnt_perror,
 * clnt_control (CLSET_TIMEOUT, CLGET_TIMEOUT, CLGET_XID, CLSET_XID,
 * CLGET_SERVER_ADDR, CLGET_SVC_ADDR, CLGET_VERS, CLSET_VERS,
 * CLGET_PROG, CLSET_PROG) and clnt_destroy work as for clnt_vc;
 * CLGET_FD fails (the connection has no socket).  Any number of
 * threads may call at once.  NULL on failure, with rpc_createerr set
 * (clnt_pcreateerror).  opts NULL: defaults.
 */
CLIENT *uiw_rpcrdma_clnt_create(const char *host, const char *port,
				rpcprog_t prog, rpcvers_t vers,
				const struct uiw_rpcrdma_opts *opts);

/*
 * A listening SVCXPRT at host:port (host NULL: any; port NULL: 20049;
 * "0": any).  Register programs on it with svc_reg(xprt, prog, vers,
 * dispatch, NULL); svc_run serves it beside TCP and UDP transports.
 * Each connection becomes its own SVCXPRT, registered with
 * xprt_register, and destroyed when it ends.  NULL with errno set on
 * failure.
 */
SVCXPRT *uiw_rpcrdma_svc_create(const char *host, const char *port,
				const struct uiw_rpcrdma_opts *opts);

/* ---- What moved ------------------------------------------------------ */

struct uiw_rpcrdma_stats {
	uint64_t calls, replies;
	uint64_t inline_sends, inline_bytes;
	uint64_t long_calls, long_replies;
	uint64_t read_chunks, read_bytes;
	uint64_t write_chunks, write_bytes;
	uint64_t reply_chunks, reply_bytes;
	uint64_t remote_invalidations;
	uint64_t rdma_errors_sent, rdma_errors_received;
	uint64_t credit_waits;
};
/* A client's counts; false when cl is not an RPC-over-RDMA CLIENT. */
bool uiw_rpcrdma_clnt_stats(CLIENT *cl, struct uiw_rpcrdma_stats *s);
/* A listening SVCXPRT's counts, summed over all its connections, past
 * and present. */
bool uiw_rpcrdma_svc_stats(SVCXPRT *xprt, struct uiw_rpcrdma_stats *s);

#ifdef __cplusplus
}
#endif
#endif
