/*
 * The store's Upper-Layer Binding for RPC-over-RDMA (RFC 8166 §6): which
 * of its XDR data items are DDP-eligible (store_ulb.c).
 */
#ifndef STORE_ULB_H
#define STORE_ULB_H

#include <uiwarp/rpcrdma.h>

/* Objects shorter than this travel inline in the Send of the call or
 * the reply.  From it on a GET's data moves by RDMA Write (the client
 * offers a Write chunk), and a PUT's by RDMA Read when its call does not
 * fit the inline threshold (libuiwarp-rpcrdma sends a call that fits
 * inline whole: RFC 8166 §3.4.3 leaves reducing to the sender). */
#define STORE_DDP_MIN 1024

extern const struct uiw_rpcrdma_ulb store_ulb;

#endif
