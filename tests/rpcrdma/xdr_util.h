/*
 * What the pure XDR-stream tests share (test_tirpc_xdr.c,
 * test_nfs4_walk.c): data patterns, plain encodings to compare with,
 * and a reply's pieces landed as the transport lands them.
 */
#ifndef XDR_UTIL_H
#define XDR_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rr_xdr.h"

/* n octets of a pattern seeded by seed (malloc'ed). */
uint8_t *xu_pattern(size_t n, unsigned seed);
/* obj's plain encoding (xdrmem) into buf; its length. */
size_t xu_encode(xdrproc_t proc, void *obj, uint8_t *buf, size_t cap);
/* The pieces put back together as a receiver does (ddp ones at their
 * place, XDR-padded with zeros) must be ref.  aligned: every piece
 * that is not ddp is a multiple of four octets long. */
void xu_assert_unreduced(const struct uiw_rr_iov *iov, unsigned n,
			 const uint8_t *ref, size_t ref_len, bool aligned);
unsigned xu_count_ddp(const struct uiw_rr_iov *iov, unsigned n);

/* A reply's pieces as the transport lands them: ddp ones into the
 * Write chunks offered (chunk_len[]), one each in order, where an empty
 * chunk (or none left) puts its piece inline, XDR-padded (RFC 8166
 * §4.3.2.3); the rest inline. */
struct xu_landed {
	uint8_t *stream;
	size_t len;
	struct uiw_rr_wtarget wt[UIW_RR_MAX_WCHUNK];
	uint64_t wlen[UIW_RR_MAX_WCHUNK];
	unsigned nddp;          /* pieces that went into chunks */
};

void xu_land(const struct uiw_rr_iov *iov, unsigned n, const size_t *chunk_len,
	     unsigned nwt, struct xu_landed *l);
void xu_unland(struct xu_landed *l, unsigned nwt);

#endif
