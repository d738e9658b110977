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

struct uiw_rpcrdma_walk;
struct uiw_rpcrdma_ddp_rule;

/* How a walk (below) ended. */
enum uiw_rpcrdma_walk_end {
	UIW_RPCRDMA_WALK_END = 0,   /* at the end: nothing eligible follows */
	UIW_RPCRDMA_WALK_STOP = 1,  /* before it: an operation it does not
				       know, XDR it cannot read */
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
	/* Optional, in place of item: the items have no fixed ordinal
	 * (RFC 8267 §6: NFS version 4's COMPOUND), and walk finds them
	 * in the encoded arguments or results through the
	 * uiw_rpcrdma_walk_* functions below.  With walk, RESULTS pairs
	 * Write chunks with result slots (the walk's uiw_rpcrdma_walk_slot
	 * calls, in order: RFC 8267 §6.4.1), not with eligible items; a
	 * slot whose size is under min_len gets an empty Write chunk (its
	 * result inline).  NULL: item counts. */
	enum uiw_rpcrdma_walk_end (*walk)(const struct uiw_rpcrdma_ddp_rule *r,
					  struct uiw_rpcrdma_walk *w);
};

struct uiw_rpcrdma_ulb {
	const struct uiw_rpcrdma_ddp_rule *rules;
	size_t nrules;
	/* The largest reply (Write chunk data not counted) of a procedure
	 * no rule or reply_max row speaks of: above the inline threshold
	 * a Reply chunk this large is offered (0: 1 MiB). */
	size_t reply_max;
};

/*
 * What a walk calls, in XDR order from the first octet of the
 * arguments or results.  Each returns false when the XDR ends first
 * (or breaks a bound, or cuts across a body taken out of the stream);
 * the walk should then return UIW_RPCRDMA_WALK_STOP.
 *   walk_u32     reads one XDR word (v may be NULL);
 *   walk_skip    passes over a fixed-size item of octets octets (XDR
 *                pad included: rounded up to four);
 *   walk_opaque  passes over a variable-length opaque or string
 *                (length word, body, pad) of at most max octets (0:
 *                no bound);
 *   walk_item    the same for a DDP-eligible one (ARGS: an argument;
 *                RESULTS: the result of the slot last begun, at most
 *                one per slot);
 *   walk_slot    ARGS: a result that may come back DDP-eligible, in
 *                order, and the octets its Write chunk must hold (the
 *                rule's non-zero max_len bounds it); RESULTS: that
 *                result begins (len unused).
 * A body the stream no longer holds (reduced into a chunk) is passed
 * over all the same.
 */
enum uiw_rpcrdma_dir uiw_rpcrdma_walk_dir(const struct uiw_rpcrdma_walk *w);
bool uiw_rpcrdma_walk_u32(struct uiw_rpcrdma_walk *w, uint32_t *v);
bool uiw_rpcrdma_walk_skip(struct uiw_rpcrdma_walk *w, size_t octets);
bool uiw_rpcrdma_walk_opaque(struct uiw_rpcrdma_walk *w, uint32_t max);
bool uiw_rpcrdma_walk_item(struct uiw_rpcrdma_walk *w, uint32_t max);
bool uiw_rpcrdma_walk_slot(struct uiw_rpcrdma_walk *w, size_t len);

/*
 * RFC 8267's bindings for NFS: §4's for version 3 (READ and WRITE
 * data, READLINK and SYMLINK paths, by ordinal; READ's Write chunk
 * sized by the count it asks for) and §6's for version 4 (WRITE data,
 * CREATE's NF4LNK link data, READ data, READLINK link data inside
 * COMPOUND, found by a walker over every operation of minor versions
 * 0, 1 and 2; one Write chunk per READ or READLINK, READ's sized by
 * its count).  See uiwarp-rpcrdma(3).
 */
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
	/* Server, per listening SVCXPRT: the memory its connections'
	 * calls with Read chunks hold at once (256 MiB, at least 16 MiB +
	 * 64 KiB), the connections it keeps (256: beyond, the one idle
	 * the longest is ended, or the new one refused), and how long a
	 * connection with no call lives (300000 ms; 0: forever). */
	uint64_t assembly_budget;
	unsigned max_conns;
	unsigned idle_timeout_ms;
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

/* What a listening SVCXPRT's connections hold now: a server's resource
 * counts, all back to 0 once every client has gone. */
struct uiw_rpcrdma_usage {
	uint64_t conns;         /* connections open or being set up */
	uint64_t mrs;           /* memory registrations held */
	uint64_t held;          /* octets counted against assembly_budget
				   (Read chunk sinks, in use or kept) */
	uint64_t held_peak;     /* the most held at once so far */
};
/* false when xprt is not a listening RPC-over-RDMA SVCXPRT. */
bool uiw_rpcrdma_svc_usage(SVCXPRT *xprt, struct uiw_rpcrdma_usage *u);

#ifdef __cplusplus
}
#endif
#endif
