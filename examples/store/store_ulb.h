/*
 * The store's Upper-Layer Binding for RPC-over-RDMA (RFC 8166 §6): which
 * of its XDR data items are DDP-eligible (store_ulb.c).
 */
#ifndef STORE_ULB_H
#define STORE_ULB_H

#include <uiwarp/rpcrdma.h>

/* Objects shorter than this travel inline in the Send of the call or
 * the reply; from it on, by RDMA Read (PUT) or RDMA Write (GET). */
#define STORE_DDP_MIN 1024

extern const struct uiw_rpcrdma_ulb store_ulb;

#endif
