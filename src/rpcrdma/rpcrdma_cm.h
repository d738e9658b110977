/*
 * RPC-over-RDMA version 1 CM Private Data (RFC 8797 §4): the 8-octet
 * message each peer puts in its connection private data.  Pure
 * functions over a buffer and its length.
 *
 *    0                   1                   2                   3
 *   |                       Format Identifier                       |
 *   |    Version    |  Reserved   |R|   Send Size   | Receive Size  |
 *
 * Format Identifier 0xf6ab0e18, Version 1; R: remote invalidation is
 * safe towards the sender (§4.1); a Size field s stands for (s + 1) *
 * 1024 octets (§4.2).
 *
 * Where it is found: rdma_cm hands the upper layer the ULP's private
 * data only.  Over iWARP with MPA revision 2 the provider sends the RFC
 * 6581 §9.1 IRD/ORD word first and takes it off again on receipt (siw
 * does, and so do uiwarp's drop-in librdmacm and its CM), so
 * uiw_rpcrdma_cm_decode takes the ULP's private data as is;
 * uiw_rpcrdma_cm_skip_mpa_v2 is for raw MPA private data known to begin
 * with that word (a capture, an MPA frame read off the wire).
 */
#ifndef UIW_RPCRDMA_CM_H
#define UIW_RPCRDMA_CM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define UIW_RPCRDMA_CM_MAGIC     0xf6ab0e18u
#define UIW_RPCRDMA_CM_VERSION   1
#define UIW_RPCRDMA_CM_LEN       8
/* RFC 8166 §3.3.3: the inline threshold when nothing else is known */
#define UIW_RPCRDMA_INLINE_DEFAULT 1024u
/* RFC 8797 §4.2: 1024 to 262144 octets can be advertised */
#define UIW_RPCRDMA_INLINE_MAX   262144u
/* the length of the RFC 6581 §9.1 word before the ULP's private data */
#define UIW_RPCRDMA_MPA_V2_WORD  4

/* What a peer advertised, or the defaults in its place. */
struct uiw_rpcrdma_cm {
	bool present;          /* an RFC 8797 version 1 message was found */
	bool remote_inv;       /* R */
	uint32_t send_size;    /* octets */
	uint32_t recv_size;
	size_t offset;         /* where its Format Identifier began */
};

/*
 * Looks for the message in pd[0..len) (RFC 8797 §5.2: the Format
 * Identifier at any offset, followed by a Version this codec knows and
 * 8 octets in all inside the buffer).  Never fails: without one (no
 * private data, another protocol's, a Version other than 1), *cm holds
 * the RFC 8166 defaults, as §5.1 requires: R clear, both sizes 1024.
 * An identifier followed by an unknown Version does not stop the
 * search: other private data may contain those four octets by chance.
 */
void uiw_rpcrdma_cm_decode(const void *pd, size_t len,
			   struct uiw_rpcrdma_cm *cm);

/* Writes the 8 octets for these settings (Reserved bits zero, §4).
 * Sizes are encoded as §4.2 says, rounded down to a multiple of 1024
 * and capped at 262144 (advertising less than one has is safe).
 * Returns 8, or -1 for a size under 1024, which RFC 8166 §3.3.3 makes
 * every receiver support. */
int uiw_rpcrdma_cm_encode(uint8_t out[UIW_RPCRDMA_CM_LEN], bool remote_inv,
			  uint32_t send_size, uint32_t recv_size);

/* §4.2: size to Size field (size >= 1024) and back. */
uint8_t uiw_rpcrdma_cm_size_encode(uint32_t size);
uint32_t uiw_rpcrdma_cm_size_decode(uint8_t field);

/* The ULP's part of raw MPA revision 2 private data that begins with
 * the RFC 6581 §9.1 IRD/ORD word: pd + 4, with *ulp_len set; NULL when
 * pd is too short to hold the word. */
const uint8_t *uiw_rpcrdma_cm_skip_mpa_v2(const void *pd, size_t len,
					  size_t *ulp_len);

/*
 * §4.2 and §4.1: the inline thresholds of a connection seen from one
 * end, given what it advertised (local) and what the peer did (peer,
 * as decoded): send = min(own send size, peer's receive size), recv =
 * min(peer's send size, own receive size); remote invalidation only
 * when both set R.
 */
void uiw_rpcrdma_cm_thresholds(const struct uiw_rpcrdma_cm *local,
			       const struct uiw_rpcrdma_cm *peer,
			       uint32_t *send_thresh, uint32_t *recv_thresh,
			       bool *remote_inv);

#endif
