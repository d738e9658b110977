/*
 * The raw RDMA end of the transport's tests, the one they all use
 * (test_rr_conf_*.c): verbs and rdma_cm alone, no uiw_rr_* code, so
 * that it sends what the transport under test would never send and
 * sees every octet that transport sends.  Either role: it connects as
 * a Requester would, or listens and accepts as a Responder would, with
 * whatever CM private data, receive buffers and IRD/ORD a case asks
 * for.  Each received message is copied out with how it came (Send or
 * Send With Invalidate, and the STag it invalidated).
 *
 * Memory the peer may reach is handed out as guarded regions: the
 * octets a chunk advertises with guard zones before and after it, all
 * under one registration, so that a peer going past what it was
 * offered lands in a guard zone (and the test sees it) instead of being
 * stopped by the RNIC.
 */
#ifndef UIW_RR_RAW_H
#define UIW_RR_RAW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "rpcrdma_hdr.h"

/* Octets of one Send this end can post. */
#define RW_SEND_MAX   8192u
#define RW_MAX_RECV   64u
/* Messages received and not yet taken. */
#define RW_STASH      RW_MAX_RECV

struct rw_opts {
	const void *pd;         /* CM private data (NULL: none) */
	size_t pdlen;
	unsigned nrecv;         /* receives posted at first (0: 16) */
	uint32_t rsize;         /* octets each (0: 4096) */
	/* a receive taken by rw_recv is posted again only by rw_repost
	 * (the grant of a Responder that counts its receives exactly) */
	bool hold;
	uint8_t ird, ord;       /* responder_resources, initiator_depth
				   (0: 8) */
};

struct rw_msg {
	uint32_t len;
	bool with_inv;          /* Send With Invalidate */
	uint32_t inv_rkey;
	uint8_t data[RW_SEND_MAX];
};

struct rw_end {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *lid;         /* listening */
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_comp_channel *cc;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	uint8_t *buf;                   /* send slots, then receives */
	size_t buflen;
	struct rw_opts o;
	unsigned next_slot;
	unsigned posted;                /* receives on the RQ */
	unsigned held[RW_MAX_RECV];     /* receive slots not posted */
	unsigned nheld;
	uint64_t sends_done;            /* completions of rw_post's Sends */
	/* received, not yet taken: receive index and completion */
	struct {
		unsigned idx;
		uint32_t len;
		bool with_inv;
		uint32_t inv_rkey;
	} stash[RW_STASH];
	unsigned nstash;
	bool dead;                      /* a failed completion or a CM end */
	enum ibv_wc_status fail;        /* the first failed completion's */
	uint8_t peer_pd[64];
	size_t peer_pd_len;
	uint8_t peer_ird, peer_ord;     /* as the CM event gave them */
};

/* ---- Connections ------------------------------------------------------ */

/* Connects to sa (a Requester's end); 0, or -1 with a message on
 * stderr. */
int rw_connect(struct rw_end *e, const struct sockaddr *sa,
	       const struct rw_opts *o);
/* Listens on 127.0.0.1, port 0; *ss gets the bound address. */
int rw_listen(struct rw_end *e, struct sockaddr_storage *ss);
/* Waits for a connection request, accepts it with o, and waits until
 * it is established (a Responder's end). */
int rw_accept(struct rw_end *e, const struct rw_opts *o);
/* Disconnects (when connected) and frees everything. */
void rw_close(struct rw_end *e);

/* The RFC 8797 private data of an end: R, send and receive sizes. */
size_t rw_pd_8797(uint8_t out[8], bool remote_inv, uint32_t send,
		  uint32_t recv);

/* ---- Messages ---------------------------------------------------------- */

/* Posts a Send (inv_rkey != 0: Send With Invalidate of it) of len
 * octets and returns at once. */
int rw_post(struct rw_end *e, const void *msg, size_t len, uint32_t inv_rkey);
/* The same, then waits for its completion: 0 when it succeeded. */
int rw_send(struct rw_end *e, const void *msg, size_t len, uint32_t inv_rkey);
/* An RDMA Write of len octets of src to (rkey, addr), waited for. */
int rw_write(struct rw_end *e, const void *src, size_t len, uint32_t rkey,
	     uint64_t addr);
/* Posts n more receives (of those taken or never posted); 0 or -1. */
int rw_repost(struct rw_end *e, unsigned n);
/* The next received message: its length, -1 when none came within
 * timeout_ms, -2 once the connection has failed. */
int rw_recv(struct rw_end *e, struct rw_msg *m, int timeout_ms);
/* True when the connection ends within timeout_ms. */
bool rw_wait_dead(struct rw_end *e, int timeout_ms);

/* ---- Guarded memory ---------------------------------------------------- */

#define RW_GUARD      256u
#define RW_GUARD_BYTE 0x5c

struct rw_region {
	uint8_t *mem;           /* guard | data | guard */
	size_t len;             /* of data */
	struct ibv_mr *mr;
	uint32_t rkey;
	uint8_t *data;
	uint64_t addr;          /* data's address, as a segment's offset */
};

/* len octets (filled with fill) between two guard zones, registered
 * for remote read and write on e's PD; 0 or -1. */
int rw_region_new(struct rw_end *e, struct rw_region *r, size_t len,
		  uint8_t fill);
/* The offset from mem of the first guard octet that changed, or -1
 * when both guard zones are intact. */
long rw_region_guard(const struct rw_region *r);
void rw_region_free(struct rw_region *r);

/* ---- Words ------------------------------------------------------------- */

/* A message written word by word (XDR, big-endian). */
struct rw_words {
	uint8_t b[RW_SEND_MAX];
	size_t n;
};

void rw_w32(struct rw_words *w, uint32_t v);
void rw_w64(struct rw_words *w, uint64_t v);
/* A plain segment: handle, length, offset (§4.1.2's xdr_rdma_segment). */
void rw_wseg(struct rw_words *w, uint32_t handle, uint32_t len, uint64_t off);
void rw_wbytes(struct rw_words *w, const void *p, size_t n);
/* False, with the first word that differs in why, unless got[0..len)
 * is want's octets exactly. */
bool rw_words_same(const uint8_t *got, size_t len, const struct rw_words *want,
		   char *why, size_t whylen);

/* ---- Headers through the codec (rpcrdma_hdr.h) ----------------------- */

/* A transport header with room for its lists, to encode (built with
 * rw_hdr_*) or to decode into. */
struct rw_hdr {
	struct uiw_rpcrdma_hdr h;
	struct uiw_rpcrdma_read_seg rseg[80];
	struct uiw_rpcrdma_chunk rchunk[80];
	struct uiw_rpcrdma_seg wseg[40];
	struct uiw_rpcrdma_chunk wchunk[12];
	struct uiw_rpcrdma_seg pseg[40];
};

void rw_hdr_init(struct rw_hdr *b, uint32_t xid, uint32_t credit,
		 uint32_t proc);
void rw_hdr_read(struct rw_hdr *b, uint32_t pos, uint32_t handle,
		 uint32_t len, uint64_t off);
/* A new Write chunk; rw_hdr_wseg adds segments to the last one. */
void rw_hdr_wchunk(struct rw_hdr *b);
void rw_hdr_wseg(struct rw_hdr *b, uint32_t handle, uint32_t len,
		 uint64_t off);
void rw_hdr_pseg(struct rw_hdr *b, uint32_t handle, uint32_t len,
		 uint64_t off);
/* Appends b encoded to w: the codec's verdict. */
enum uiw_rpcrdma_err rw_hdr_put(struct rw_words *w, const struct rw_hdr *b);
/* Decodes msg into b (its arrays as the space): the codec's verdict. */
enum uiw_rpcrdma_err rw_hdr_decode(struct rw_hdr *b, const void *msg,
				   size_t len);

#endif
