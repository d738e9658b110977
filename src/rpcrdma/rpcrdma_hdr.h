/*
 * The RPC-over-RDMA version 1 transport header (RFC 8166 §4.1.2, §4.2,
 * §4.3, §4.5, §4.6): a pure, total codec.  It takes a buffer and its
 * length, never reads or writes past it, never allocates: the chunk
 * lists decode into arrays the caller provides (struct
 * uiw_rpcrdma_space), each with its bound, and a header that needs more
 * is an error the Responder answers with ERR_CHUNK.
 *
 * On the wire (XDR, RFC 4506: big-endian 32-bit words):
 *
 *   rdma_xid | rdma_vers | rdma_credit | rdma_proc | body
 *
 *   RDMA_MSG, RDMA_NOMSG:  Read list | Write list | Reply chunk
 *                          (RDMA_MSG: the Payload stream follows)
 *   RDMA_ERROR:            rdma_err [ | rdma_vers_low | rdma_vers_high ]
 *   RDMA_MSGP, RDMA_DONE:  no longer supported (§4.6): decoded only as
 *                          far as a receiver needs to refuse them
 *
 *   Read list:    { 1 | position | handle | length | offset } ... 0
 *   Write list:   { 1 | count | { handle | length | offset } x count } ... 0
 *   Reply chunk:  0  |  1 | count | { handle | length | offset } x count
 *
 * This folder depends on nothing of uiwarp: it is built into its own
 * library (uiw_rpcrdma_codec).
 */
#ifndef UIW_RPCRDMA_HDR_H
#define UIW_RPCRDMA_HDR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define UIW_RPCRDMA_VERSION     1
/* §4.2: the four fixed words */
#define UIW_RPCRDMA_FIXED_LEN   16
/* §4.5: the minimal header, RDMA_MSG with three empty lists */
#define UIW_RPCRDMA_MIN_LEN     28
/* On the wire: a plain segment (HLOO), a Read list entry with its
 * discriminator (1 PHLOO), §4.7 */
#define UIW_RPCRDMA_SEG_LEN     16
#define UIW_RPCRDMA_READ_LEN    24
/* RDMA_ERROR: ERR_CHUNK and ERR_VERS replies (§4.5) */
#define UIW_RPCRDMA_ERR_CHUNK_LEN 20
#define UIW_RPCRDMA_ERR_VERS_LEN  28

/* rdma_proc, §4.2.4 */
enum uiw_rpcrdma_proc {
	UIW_RDMA_MSG   = 0,
	UIW_RDMA_NOMSG = 1,
	UIW_RDMA_MSGP  = 2,   /* §4.6.1: not to be used */
	UIW_RDMA_DONE  = 3,   /* §4.6.2: not to be used */
	UIW_RDMA_ERROR = 4,
};

/* rpc_rdma_errcode, §4.1.2 */
enum uiw_rpcrdma_errcode {
	UIW_RPCRDMA_ERR_VERS  = 1,
	UIW_RPCRDMA_ERR_CHUNK = 2,
};

/*
 * What went wrong, one value per rule; uiw_rpcrdma_strerror() names it
 * with its RFC section and uiw_rpcrdma_action() says what the receiver
 * does about it.  The decoder and the encoder share the vocabulary
 * (the encoder refuses what the decoder would refuse).
 */
enum uiw_rpcrdma_err {
	UIW_RPCRDMA_OK = 0,
	UIW_RPCRDMA_E_SHORT,        /* under 28 octets (§4.5) */
	UIW_RPCRDMA_E_VERS,         /* rdma_vers not 1 (§4.2.2, §4.5.1) */
	UIW_RPCRDMA_E_PROC,         /* unknown rdma_proc (§4.5.2) */
	UIW_RPCRDMA_E_MSGP,         /* RDMA_MSGP (§4.6.1) */
	UIW_RPCRDMA_E_DONE,         /* RDMA_DONE (§4.6.2) */
	UIW_RPCRDMA_E_TRUNC,        /* the header ends inside a field */
	UIW_RPCRDMA_E_DISCRIM,      /* optional-data word neither 0 nor 1 */
	UIW_RPCRDMA_E_SEG_COUNT,    /* more segments than octets left */
	UIW_RPCRDMA_E_POSITION,     /* Position not a multiple of 4 */
	UIW_RPCRDMA_E_READ_SPLIT,   /* one Read chunk's segments apart */
	UIW_RPCRDMA_E_POS0_MSG,     /* Position-Zero Read chunk, RDMA_MSG */
	UIW_RPCRDMA_E_NOMSG_EMPTY,  /* RDMA_NOMSG, no chunk for the Payload */
	UIW_RPCRDMA_E_READ_SEGS,    /* caller's bounds exceeded: */
	UIW_RPCRDMA_E_READ_CHUNKS,
	UIW_RPCRDMA_E_WRITE_SEGS,
	UIW_RPCRDMA_E_WRITE_CHUNKS,
	UIW_RPCRDMA_E_REPLY_SEGS,
	UIW_RPCRDMA_E_ERRCODE,      /* RDMA_ERROR, unknown rdma_err */
	UIW_RPCRDMA_E_CHUNK_RANGE,  /* encode: a Write chunk's segments
				       outside write_seg[] */
	UIW_RPCRDMA_E_NOSPACE,      /* encode: output buffer too small */
	UIW_RPCRDMA_E_COUNT_
};

/* xdr_rdma_segment, §3.4.3 */
struct uiw_rpcrdma_seg {
	uint32_t handle;
	uint32_t length;
	uint64_t offset;
};

/* xdr_read_chunk: an RDMA read segment, §3.4.5 */
struct uiw_rpcrdma_read_seg {
	uint32_t position;
	struct uiw_rpcrdma_seg target;
};

/* A chunk: a run of segments (Read chunk: read_seg[first..first+nseg),
 * all at position; Write chunk or Reply chunk: plain segments). */
struct uiw_rpcrdma_chunk {
	uint32_t position;          /* Read chunks only */
	uint32_t first;
	uint32_t nseg;
};

/* The caller's storage for a decoded header's lists and its bounds. */
struct uiw_rpcrdma_space {
	struct uiw_rpcrdma_read_seg *read_seg;
	uint32_t max_read_seg;
	struct uiw_rpcrdma_chunk *read_chunk;
	uint32_t max_read_chunk;
	struct uiw_rpcrdma_seg *write_seg;      /* every Write chunk's */
	uint32_t max_write_seg;
	struct uiw_rpcrdma_chunk *write_chunk;
	uint32_t max_write_chunk;
	struct uiw_rpcrdma_seg *reply_seg;
	uint32_t max_reply_seg;
};

/*
 * A transport header.  Decoding fills it (the lists point into the
 * caller's space); encoding reads it: the Read list is read_seg[0..
 * nread_seg) in order (read_chunk is not read), Write chunk i is
 * write_seg[write_chunk[i].first ..+ write_chunk[i].nseg), and the Reply
 * chunk reply_seg[0..nreply_seg) when reply_present.
 */
struct uiw_rpcrdma_hdr {
	uint32_t xid;
	uint32_t vers;
	uint32_t credit;
	uint32_t proc;              /* enum uiw_rpcrdma_proc */

	/* RDMA_MSG, RDMA_NOMSG */
	const struct uiw_rpcrdma_read_seg *read_seg;
	uint32_t nread_seg;
	const struct uiw_rpcrdma_chunk *read_chunk;   /* decoded grouping */
	uint32_t nread_chunk;
	const struct uiw_rpcrdma_seg *write_seg;
	uint32_t nwrite_seg;
	const struct uiw_rpcrdma_chunk *write_chunk;
	uint32_t nwrite_chunk;
	bool reply_present;
	const struct uiw_rpcrdma_seg *reply_seg;
	uint32_t nreply_seg;

	/* RDMA_ERROR */
	uint32_t err;               /* enum uiw_rpcrdma_errcode */
	uint32_t vers_low, vers_high;

	/* Octets of the transport header: for RDMA_MSG, where the Payload
	 * stream (the RPC message) begins. */
	size_t hdr_len;
	/* On a decode error: offset of the word at fault (the length of
	 * the buffer when it ended too soon). */
	size_t bad_off;
};

/*
 * Decodes buf[0..len).  Returns UIW_RPCRDMA_OK or the rule broken, with
 * h->bad_off set.  Whenever len >= 16, h->xid, vers, credit and proc
 * hold the fixed words (for the RDMA_ERROR reply, §4.5) whatever else
 * is wrong.  Octets after a complete RDMA_NOMSG, RDMA_ERROR header are
 * not looked at (h->hdr_len says where it ended).
 */
enum uiw_rpcrdma_err uiw_rpcrdma_decode(const void *buf, size_t len,
					const struct uiw_rpcrdma_space *sp,
					struct uiw_rpcrdma_hdr *h);

/* The length h encodes to, or an error for a header that may not be
 * sent (as the decoder would refuse it, plus E_CHUNK_RANGE). */
enum uiw_rpcrdma_err uiw_rpcrdma_encoded_len(const struct uiw_rpcrdma_hdr *h,
					     size_t *len);

/* Encodes h into out[0..cap), writing nothing on error; *len gets its
 * length.  RDMA_MSGP and RDMA_DONE are refused (§4.6: senders MUST NOT
 * send them). */
enum uiw_rpcrdma_err uiw_rpcrdma_encode(const struct uiw_rpcrdma_hdr *h,
					void *out, size_t cap, size_t *len);

/* ---- What a receiver does (§4.2.4, §4.5, §4.6) -------------------- */

enum uiw_rpcrdma_role {
	UIW_RPCRDMA_REQUESTER,
	UIW_RPCRDMA_RESPONDER,
};

enum uiw_rpcrdma_act {
	UIW_RPCRDMA_ACT_PROCESS,    /* hand it on (RDMA_ERROR to a
				       Requester: completes the XID) */
	UIW_RPCRDMA_ACT_DISCARD,    /* drop it silently */
	UIW_RPCRDMA_ACT_ERR_VERS,   /* answer RDMA_ERROR / ERR_VERS */
	UIW_RPCRDMA_ACT_ERR_CHUNK,  /* answer RDMA_ERROR / ERR_CHUNK */
};

/* What a receiver in role does with a message that decoded to rc into
 * h (h as uiw_rpcrdma_decode left it). */
enum uiw_rpcrdma_act uiw_rpcrdma_action(enum uiw_rpcrdma_role role,
					enum uiw_rpcrdma_err rc,
					const struct uiw_rpcrdma_hdr *h);

/*
 * Encodes the RDMA_ERROR a Responder sends for act (ERR_VERS or
 * ERR_CHUNK) about the failing message whose fixed words are in failed
 * (§4.5: its rdma_xid and rdma_vers; ERR_VERS gives the range this
 * codec speaks, 1 to 1) with the given credit value.  Returns the
 * length (20 or 28), 0 when act asks for no reply, or -1 when out is
 * smaller than the reply.
 */
int uiw_rpcrdma_encode_err_reply(const struct uiw_rpcrdma_hdr *failed,
				 enum uiw_rpcrdma_act act, uint32_t credit,
				 void *out, size_t cap);

/* ---- Helpers --------------------------------------------------------- */

/* RFC 4506 §3: XDR data occupies a multiple of 4 octets. */
static inline uint64_t uiw_xdr_roundup(uint64_t n)
{
	return (n + 3) & ~(uint64_t)3;
}
static inline uint32_t uiw_xdr_pad(uint64_t n)
{
	return (uint32_t)(uiw_xdr_roundup(n) - n);
}

/* §3.4.4: the length of a chunk is the sum of its segments' lengths
 * (a uint64_t: 2^32 segments of 2^32 - 1 octets cannot overflow it). */
uint64_t uiw_rpcrdma_segs_len(const struct uiw_rpcrdma_seg *seg,
			      uint32_t n);
uint64_t uiw_rpcrdma_read_chunk_len(const struct uiw_rpcrdma_hdr *h,
				    uint32_t chunk);
uint64_t uiw_rpcrdma_write_chunk_len(const struct uiw_rpcrdma_hdr *h,
				     uint32_t chunk);

/* True when the Read list holds a Position-Zero Read chunk (§3.5.3:
 * the Payload stream of a Long Call). */
bool uiw_rpcrdma_has_pos0(const struct uiw_rpcrdma_hdr *h);

const char *uiw_rpcrdma_proc_name(uint32_t proc);
const char *uiw_rpcrdma_err_name(enum uiw_rpcrdma_err e);
/* The rule, in words, with its RFC section. */
const char *uiw_rpcrdma_strerror(enum uiw_rpcrdma_err e);
const char *uiw_rpcrdma_act_name(enum uiw_rpcrdma_act a);

#endif
