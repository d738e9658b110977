/*
 * The RPC-over-RDMA version 1 transport on verbs and rdma_cm (RFC 8166,
 * RFC 8797): message level.  A Requester sends a call, given as the
 * pieces of its Payload stream (the RPC call message in XDR), and gets
 * the reply's Payload stream back; a Responder receives calls with
 * their Read chunks already pulled, and replies with pieces.  Which
 * pieces are DDP-eligible is decided above (rr_xdr.c, with the Upper-
 * Layer Binding); how they travel (inline, Read chunk, Write chunk,
 * Long Call, Long Reply, Reply chunk) is decided here.
 *
 * Written against <infiniband/verbs.h> and <rdma/rdma_cma.h> only, so
 * that it runs on uiwarp's drop-in libraries and on any RDMA device.
 *
 * Threads: a Requester connection may be used by any number of threads
 * at once (each call blocks its caller).  A Responder connection is
 * driven by one thread at a time (libtirpc's svc_run), through
 * non-blocking calls and a pollable fd.
 */
#ifndef UIW_RR_XPRT_H
#define UIW_RR_XPRT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/* Connection settings of either role.  uiw_rr_opts_init gives the
 * defaults (Linux's, RFC 8797's): */
struct uiw_rr_opts {
	/* Requester: calls it wants outstanding (128); Responder: the
	 * receives it posts, which bound what it grants (64). */
	uint32_t credits;
	/* The inline sizes advertised in RFC 8797 private data (4096). */
	uint32_t inline_send;
	uint32_t inline_recv;
	/* Send RFC 8797 private data at all (true); without it both ends
	 * fall back to RFC 8166's 1024. */
	bool private_data;
	/* Advertise that remote invalidation is safe towards this end
	 * (Requester), or use Send With Invalidate when the peer allows
	 * it (Responder) (true). */
	bool remote_inv;
	/* Responder: the largest Payload stream it accepts in a call,
	 * Read chunks included (16 MiB + 64 KiB); the largest DDP item. */
	uint64_t max_call;
	/* Connection set-up and, for a Requester, the default time a call
	 * waits for its reply (milliseconds; 0 = forever). */
	unsigned connect_timeout_ms;
	unsigned call_timeout_ms;
	/* Responder, per listener, so that idle, slow or hostile
	 * Requesters never deny service to the others: the assembly
	 * memory (Read chunks pulled) all its connections' calls hold at
	 * once (256 MiB, at least max_call; a connection never takes its
	 * last max_call while it holds some), the connections it keeps
	 * (256; beyond, the one idle the longest is ended, or the request
	 * refused), and how long a connection with no call received and
	 * none in progress lives (300000 ms; 0 = forever). */
	uint64_t listen_budget;
	unsigned max_conns;
	unsigned idle_timeout_ms;
};
void uiw_rr_opts_init(struct uiw_rr_opts *o);

/* What moved, and how (both roles count their own side). */
struct uiw_rr_stats {
	uint64_t calls, replies;
	uint64_t inline_sends, inline_bytes;     /* Payload octets in Sends */
	uint64_t long_calls, long_replies;       /* RDMA_NOMSG both ways */
	uint64_t read_chunks, read_bytes;        /* RDMA Read (pulled) */
	uint64_t write_chunks, write_bytes;      /* RDMA Write (pushed) */
	uint64_t reply_chunks, reply_bytes;
	uint64_t remote_invalidations;           /* Send With Invalidate */
	uint64_t rdma_errors_sent, rdma_errors_received;
	uint64_t credit_waits;                   /* a call waited for a credit */
	/* received messages dropped: undecodable or to be discarded
	 * (RFC 8166 §4.5, §4.6); a reply for no outstanding call, or a
	 * late one; a call beyond twice the credits granted, or whose
	 * RDMA_ERROR found no send buffer */
	uint64_t dropped;
};

/* A piece of a Payload stream.  A ddp piece is a DDP-eligible XDR data
 * item's content (without its XDR pad, RFC 8166 §3.4.5); the length
 * word before it, if the item has one, is in the preceding piece. */
struct uiw_rr_iov {
	const void *base;
	size_t len;
	bool ddp;
};

/* ---- Requester ------------------------------------------------------- */

struct uiw_rr_clnt;

/* Connects (rdma_cm, RFC 8797 private data both ways).  NULL with
 * errno set and a message in err on failure. */
struct uiw_rr_clnt *uiw_rr_clnt_connect(const struct sockaddr *sa,
					socklen_t salen,
					const struct uiw_rr_opts *o,
					char *err, size_t errlen);
/* Completes every outstanding call with UIW_RR_DISCONNECTED, waits for
 * their callers to leave uiw_rr_call, and frees everything. */
void uiw_rr_clnt_close(struct uiw_rr_clnt *c);

enum uiw_rr_status {
	UIW_RR_OK = 0,
	UIW_RR_TIMEDOUT,        /* no reply within the timeout */
	UIW_RR_DISCONNECTED,    /* the connection ended first */
	UIW_RR_ERR_VERS,        /* RDMA_ERROR ERR_VERS (vers_low/high) */
	UIW_RR_ERR_CHUNK,       /* RDMA_ERROR ERR_CHUNK */
	UIW_RR_BAD_REPLY,       /* a reply that breaks RFC 8166 (message) */
	UIW_RR_TOO_BIG,         /* the call cannot be conveyed (message) */
	UIW_RR_NOMEM,
};
const char *uiw_rr_status_name(enum uiw_rr_status s);

#define UIW_RR_MAX_WCHUNK 8

/* A Write chunk offered for the results' DDP items, in order (RFC 8166
 * §3.5.5): the i-th DDP-eligible result lands in wt[i]. */
struct uiw_rr_wtarget {
	void *base;
	size_t len;
};

struct uiw_rr_call {
	/* in: the call's Payload stream; its first word is the xid */
	const struct uiw_rr_iov *iov;
	unsigned niov;
	struct uiw_rr_wtarget wt[UIW_RR_MAX_WCHUNK];
	unsigned nwt;
	/* in: the largest reply Payload stream (Write chunk data not
	 * counted) the caller can expect; above the receive inline
	 * threshold, a Reply chunk that large is offered (§3.5.4). */
	size_t reply_max;
	/* in: milliseconds; 0 = the connection's call_timeout_ms */
	unsigned timeout_ms;

	/* out */
	enum uiw_rr_status status;
	char msg[128];                  /* why, when not OK */
	const uint8_t *reply;           /* the reply's Payload stream */
	size_t reply_len;
	uint64_t wlen[UIW_RR_MAX_WCHUNK];  /* octets the Responder wrote */
	uint32_t vers_low, vers_high;      /* ERR_VERS */

	void *slot_;                    /* the transport's */
};

/* Sends the call and waits for its reply.  Blocks while no credit is
 * free (never more calls outstanding than the Responder granted, and
 * a grant of 0 counts as 1).  Every memory registration of the call is
 * released (or found remotely invalidated) before it returns; of a call
 * that timed out, the transport's own staging buffer and Reply chunk
 * (never the caller's memory) stay registered until its late reply
 * comes, so that a late Long Reply does not end the connection.  The
 * timed-out call keeps its credit until then (RFC 8166 §3.3.1).
 * Returns 0 (c->status OK) or -1 (c->status and c->msg say why). */
int uiw_rr_call(struct uiw_rr_clnt *clnt, struct uiw_rr_call *c);
/* Gives back the buffer c->reply points into; after every uiw_rr_call,
 * whatever it returned. */
void uiw_rr_call_done(struct uiw_rr_clnt *clnt, struct uiw_rr_call *c);

void uiw_rr_clnt_stats(struct uiw_rr_clnt *c, struct uiw_rr_stats *s);
/* The negotiated inline thresholds and remote invalidation. */
void uiw_rr_clnt_params(struct uiw_rr_clnt *c, uint32_t *send_thresh,
			uint32_t *recv_thresh, bool *remote_inv);

/* ---- Responder ------------------------------------------------------- */

struct uiw_rr_listener;
struct uiw_rr_sconn;

struct uiw_rr_listener *uiw_rr_listen(const struct sockaddr *sa,
				      socklen_t salen,
				      const struct uiw_rr_opts *o,
				      char *err, size_t errlen);
/* Readable when a connection request (or another CM event) waits. */
int uiw_rr_listener_fd(struct uiw_rr_listener *l);
/* The bound address (port 0 resolved). */
int uiw_rr_listener_addr(struct uiw_rr_listener *l,
			 struct sockaddr_storage *ss);
/* Non-blocking: handles pending CM events; returns a newly established
 * connection, or NULL (errno EAGAIN when nothing is ready). */
struct uiw_rr_sconn *uiw_rr_accept(struct uiw_rr_listener *l);
void uiw_rr_listener_close(struct uiw_rr_listener *l);

/* Readable when uiw_rr_recv may have progress to make. */
int uiw_rr_sconn_fd(struct uiw_rr_sconn *s);

/* A received call, its Read chunks pulled and put in place: call is
 * the whole Payload stream, contiguous (a Position-Zero Read chunk's
 * content, or the inline part with each Read chunk inserted at its
 * Position and XDR-padded). */
struct uiw_rr_req {
	uint32_t xid;
	const uint8_t *call;
	size_t call_len;
	unsigned nwchunk;                      /* Write chunks offered */
	uint64_t wchunk_len[UIW_RR_MAX_WCHUNK];
	uint64_t reply_chunk_len;              /* 0: none offered */
	void *priv_;
};

/* Non-blocking.  Returns 0 with *req set, -EAGAIN when no call is
 * ready, -ENOTCONN once the connection has ended (then close it).
 * Malformed messages are answered (ERR_VERS, ERR_CHUNK) or dropped as
 * RFC 8166 says, never returned. */
int uiw_rr_recv(struct uiw_rr_sconn *s, struct uiw_rr_req **req);
/* Replies: ddp pieces go into the offered Write chunks in order (or
 * inline when none is left), the rest inline or, when too long, into
 * the Reply chunk (RDMA_NOMSG).  A reply that cannot be conveyed gets
 * RDMA_ERROR ERR_CHUNK (§3.5.4, returns -1 with errno EMSGSIZE).
 * Frees req in every case. */
int uiw_rr_reply(struct uiw_rr_sconn *s, struct uiw_rr_req *req,
		 const struct uiw_rr_iov *iov, unsigned niov);
/* Answers the call with RDMA_ERROR ERR_CHUNK in place of a reply
 * (RFC 8166 §4.5.3: no RPC reply can be sent with the chunks it
 * offered).  Frees req; 0, or -1 with errno. */
int uiw_rr_reply_err_chunk(struct uiw_rr_sconn *s, struct uiw_rr_req *req);
/* No reply to this call; frees req and gives its credit back. */
void uiw_rr_drop(struct uiw_rr_sconn *s, struct uiw_rr_req *req);
void uiw_rr_sconn_close(struct uiw_rr_sconn *s);
void uiw_rr_sconn_stats(struct uiw_rr_sconn *s, struct uiw_rr_stats *st);
int uiw_rr_sconn_peer(struct uiw_rr_sconn *s, struct sockaddr_storage *ss);

#endif
