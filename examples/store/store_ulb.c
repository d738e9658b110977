/*
 * The store's Upper-Layer Binding (RFC 8166 §6.1): an object's octets,
 * and nothing else, are DDP-eligible.  Items are counted as
 * include/uiwarp/rpcrdma.h says: the opaque bodies (a string's octets
 * are one) of the arguments or results in XDR order, from 1.
 */
#include "store.h"
#include "store_ulb.h"

/* GET's Write chunk is as large as the count its arguments ask for,
 * as RFC 8267 §4.2 sizes NFS READ's: the client knows the object's size
 * (STAT) and asks for no more. */
static size_t get_count(const struct uiw_rpcrdma_ddp_rule *r, XDR *args)
{
	char name[STORE_NAME_MAX + 1], *p = name;
	u_quad_t offset;
	u_int count;

	if (!xdr_string(args, &p, STORE_NAME_MAX) ||
	    !xdr_u_quad_t(args, &offset) || !xdr_u_int(args, &count))
		return 0;
	return count;
}

static const struct uiw_rpcrdma_ddp_rule store_ddp_rules[] = {
	/* PUT's arguments: every body of STORE_DDP_MIN octets or more,
	 * which only the data can be (a name has at most 255), may move
	 * by RDMA Read from a Read chunk (it does when the call is too
	 * long for a Send).  (Item 2, the data after the name, would be
	 * item 1 after an empty name, which XDR leaves without a body.) */
	{ STORE_PROG, STORE_V1, STORE_PUT, UIW_RPCRDMA_ARGS, 0,
	  STORE_DDP_MIN, STORE_DATA_MAX, NULL, NULL },
	/* GET's results: the data (item 1) moves by RDMA Write into the
	 * Write chunk the client offers when it asks for STORE_DDP_MIN
	 * octets or more. */
	{ STORE_PROG, STORE_V1, STORE_GET, UIW_RPCRDMA_RESULTS, 1,
	  STORE_DDP_MIN, STORE_DATA_MAX, get_count, NULL },
};

/* The largest reply of the other procedures is a full LIST: status,
 * entry count and eof, and per entry a name (length word and up to 256
 * octets with its pad) and two hypers; then room for the RPC reply
 * header (RFC 5531 §9: a verifier of up to 400 octets). */
#define STORE_LIST_REPLY_MAX \
	(12 + STORE_LIST_MAX * (4 + 256 + 16) + 512)

const struct uiw_rpcrdma_ulb store_ulb = {
	.rules = store_ddp_rules,
	.nrules = sizeof(store_ddp_rules) / sizeof(store_ddp_rules[0]),
	.reply_max = STORE_LIST_REPLY_MAX,
};
