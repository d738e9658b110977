/* RPC-over-RDMA version 1 CM Private Data (RFC 8797): rpcrdma_cm.h. */
#include "rpcrdma_cm.h"

/* Octet 5 holds Reserved (7 bits) and R, bit 15 of the second word. */
#define CM_R_BIT 0x01

uint8_t uiw_rpcrdma_cm_size_encode(uint32_t size)
{
	/* §4.2: "dividing its actual buffer size, in octets, by 1024 and
	 * subtracting one from the result" */
	if (size >= UIW_RPCRDMA_INLINE_MAX)
		return 255;
	if (size < UIW_RPCRDMA_INLINE_DEFAULT)
		return 0;
	return (uint8_t)(size / 1024 - 1);
}

uint32_t uiw_rpcrdma_cm_size_decode(uint8_t field)
{
	/* §4.2: "adds one to the encoded value and then multiplies that
	 * result by 1024" */
	return ((uint32_t)field + 1) * 1024;
}

static void cm_defaults(struct uiw_rpcrdma_cm *cm)
{
	/* RFC 8797 §5.1: as if R were clear and both Size fields zero */
	cm->present = false;
	cm->remote_inv = false;
	cm->send_size = uiw_rpcrdma_cm_size_decode(0);
	cm->recv_size = uiw_rpcrdma_cm_size_decode(0);
	cm->offset = 0;
}

void uiw_rpcrdma_cm_decode(const void *pd, size_t len,
			   struct uiw_rpcrdma_cm *cm)
{
	const uint8_t *p = pd;
	size_t off;

	cm_defaults(cm);
	if (len < UIW_RPCRDMA_CM_LEN)
		return;
	/* §5.2: "The offset of the Format Identifier is not restricted to
	 * any alignment"; the message must not overrun the buffer */
	for (off = 0; off <= len - UIW_RPCRDMA_CM_LEN; off++) {
		const uint8_t *m = p + off;
		uint32_t id = (uint32_t)m[0] << 24 | (uint32_t)m[1] << 16 |
			      (uint32_t)m[2] << 8 | m[3];

		if (id != UIW_RPCRDMA_CM_MAGIC ||
		    m[4] != UIW_RPCRDMA_CM_VERSION)
			continue;
		cm->present = true;
		/* §4: receivers ignore the Reserved bits */
		cm->remote_inv = m[5] & CM_R_BIT;
		cm->send_size = uiw_rpcrdma_cm_size_decode(m[6]);
		cm->recv_size = uiw_rpcrdma_cm_size_decode(m[7]);
		cm->offset = off;
		return;
	}
}

int uiw_rpcrdma_cm_encode(uint8_t out[UIW_RPCRDMA_CM_LEN], bool remote_inv,
			  uint32_t send_size, uint32_t recv_size)
{
	if (send_size < UIW_RPCRDMA_INLINE_DEFAULT ||
	    recv_size < UIW_RPCRDMA_INLINE_DEFAULT)
		return -1;
	out[0] = (uint8_t)(UIW_RPCRDMA_CM_MAGIC >> 24);
	out[1] = (uint8_t)(UIW_RPCRDMA_CM_MAGIC >> 16);
	out[2] = (uint8_t)(UIW_RPCRDMA_CM_MAGIC >> 8);
	out[3] = (uint8_t)UIW_RPCRDMA_CM_MAGIC;
	out[4] = UIW_RPCRDMA_CM_VERSION;
	out[5] = remote_inv ? CM_R_BIT : 0;   /* §4: Reserved sent as zero */
	out[6] = uiw_rpcrdma_cm_size_encode(send_size);
	out[7] = uiw_rpcrdma_cm_size_encode(recv_size);
	return UIW_RPCRDMA_CM_LEN;
}

const uint8_t *uiw_rpcrdma_cm_skip_mpa_v2(const void *pd, size_t len,
					  size_t *ulp_len)
{
	/* RFC 6581 §9.1: the IRD/ORD word opens the private data of an
	 * MPA revision 2 Request or Reply that negotiates them */
	if (len < UIW_RPCRDMA_MPA_V2_WORD)
		return NULL;
	*ulp_len = len - UIW_RPCRDMA_MPA_V2_WORD;
	return (const uint8_t *)pd + UIW_RPCRDMA_MPA_V2_WORD;
}

static uint32_t min32(uint32_t a, uint32_t b)
{
	return a < b ? a : b;
}

void uiw_rpcrdma_cm_thresholds(const struct uiw_rpcrdma_cm *local,
			       const struct uiw_rpcrdma_cm *peer,
			       uint32_t *send_thresh, uint32_t *recv_thresh,
			       bool *remote_inv)
{
	*send_thresh = min32(local->send_size, peer->recv_size);
	*recv_thresh = min32(peer->send_size, local->recv_size);
	/* §4.1: "When either peer on a connection clears this flag, the
	 * responder MUST use only RDMA Send" */
	*remote_inv = local->remote_inv && peer->remote_inv;
}
