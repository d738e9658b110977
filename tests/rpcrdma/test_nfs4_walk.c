/*
 * RFC 8267 §6's NFS version 4 binding: the COMPOUND walker of
 * src/rpcrdma/rr_nfs4.c over hand-encoded COMPOUNDs (every offset
 * known in advance), over rpcgen's own encodings of nfs4sub.x, and the
 * splitting encoder and splicing decoder driven by it (rr_xdr.c): which
 * items are reduced, which Write chunks a Requester offers, where the
 * Responder puts each slot's item, and the reply decoded back octet by
 * octet.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "nfs4sub.h"
#include "rr_xdr.h"
#include "xdr_util.h"

#define ARGS UIW_RPCRDMA_ARGS
#define RESULTS UIW_RPCRDMA_RESULTS
#define END UIW_RPCRDMA_WALK_END
#define STOP UIW_RPCRDMA_WALK_STOP

/* NFS version 4's COMPOUND in uiw_rpcrdma_ulb_nfs() */
static struct uiw_rr_sel sel4(enum uiw_rpcrdma_dir dir)
{
	return (struct uiw_rr_sel){ uiw_rpcrdma_ulb_nfs(), NFS4_PROGRAM,
				    NFS_V4, NFSPROC4_COMPOUND, dir };
}

static const struct uiw_rpcrdma_ddp_rule *rule4(enum uiw_rpcrdma_dir dir)
{
	struct uiw_rr_sel s = sel4(dir);
	const struct uiw_rpcrdma_ddp_rule *r = uiw_rr_ulb_walker(&s, dir);

	assert_non_null(r);
	return r;
}

/* ---- hand encoding (RFC 4506) ------------------------------------------ */

struct xb {
	uint8_t p[1 << 16];
	size_t n;
};

static void xb_u32(struct xb *b, uint32_t v)
{
	assert_true(b->n + 4 <= sizeof(b->p));
	b->p[b->n++] = (uint8_t)(v >> 24);
	b->p[b->n++] = (uint8_t)(v >> 16);
	b->p[b->n++] = (uint8_t)(v >> 8);
	b->p[b->n++] = (uint8_t)v;
}

static void xb_u64(struct xb *b, uint64_t v)
{
	xb_u32(b, (uint32_t)(v >> 32));
	xb_u32(b, (uint32_t)v);
}

/* n octets of the pattern seeded by seed, then the pad */
static void xb_fill(struct xb *b, size_t n, unsigned seed)
{
	assert_true(b->n + n + 3 <= sizeof(b->p));
	for (size_t i = 0; i < n; i++)
		b->p[b->n++] = (uint8_t)(i * 11 + seed);
	while (b->n & 3)
		b->p[b->n++] = 0;
}

/* an opaque<> of n pattern octets; the offset of its body */
static size_t xb_opq(struct xb *b, size_t n, unsigned seed)
{
	size_t at;

	xb_u32(b, (uint32_t)n);
	at = b->n;
	xb_fill(b, n, seed);
	return at;
}

static void xb_stateid(struct xb *b)
{
	xb_u32(b, 1);
	xb_fill(b, 12, 0x51);
}

/* status NFS4_OK of a result */
static void xb_ok(struct xb *b, uint32_t op)
{
	xb_u32(b, op);
	xb_u32(b, 0);
}

/* the COMPOUND's head: args: tag, minor version, count; results:
 * status, tag, count */
static void xb_args(struct xb *b, uint32_t minor, uint32_t nops)
{
	b->n = 0;
	xb_opq(b, 3, 't');
	xb_u32(b, minor);
	xb_u32(b, nops);
}

static void xb_res(struct xb *b, uint32_t status, uint32_t nops)
{
	b->n = 0;
	xb_u32(b, status);
	xb_opq(b, 3, 't');
	xb_u32(b, nops);
}

static void xb_putfh(struct xb *b)
{
	xb_u32(b, OP_PUTFH);
	xb_opq(b, 20, 'f');
}

static void xb_sequence(struct xb *b)
{
	xb_u32(b, OP_SEQUENCE);
	xb_fill(b, 16, 's');
	xb_u32(b, 7);
	xb_u32(b, 0);
	xb_u32(b, 0);
	xb_u32(b, 1);
}

static void xb_read(struct xb *b, uint32_t count)
{
	xb_u32(b, OP_READ);
	xb_stateid(b);
	xb_u64(b, 4096);
	xb_u32(b, count);
}

static void xb_getattr(struct xb *b)
{
	xb_u32(b, OP_GETATTR);
	xb_u32(b, 2);
	xb_u32(b, 0x18);
	xb_u32(b, 0x300000);
}

static void xb_fattr(struct xb *b, size_t vals)
{
	xb_u32(b, 2);
	xb_u32(b, 0x18);
	xb_u32(b, 0);
	xb_opq(b, vals, 'a');
}

/* ---- walking ----------------------------------------------------------- */

struct walked {
	struct uiw_rpcrdma_walk w;
	enum uiw_rpcrdma_walk_end end;
};

/* The walk over an exact-size copy (a read past it is a heap overrun
 * the sanitizer builds catch). */
static void walk(struct walked *r, enum uiw_rpcrdma_dir dir, const uint8_t *p,
		 size_t n, const struct uiw_rr_absent *abs, unsigned nabs,
		 uint32_t reduced)
{
	uint8_t *copy = malloc(n ? n : 1);

	assert_non_null(copy);
	memcpy(copy, p, n);
	uiw_rr_walk_init(&r->w, dir, copy, n, abs, nabs);
	uiw_rr_walk_reduced(&r->w, reduced);
	r->end = uiw_rr_walk_run(&r->w, rule4(dir));
	r->w.p = NULL;
	free(copy);
}

static void assert_item(const struct uiw_rpcrdma_walk *w, unsigned i,
			size_t off, uint32_t len, int slot)
{
	assert_true(i < w->nitems);
	assert_int_equal(w->items[i].off, off);
	assert_int_equal(w->items[i].len, len);
	assert_int_equal(w->items[i].slot, slot);
}

/* b's stream with the body at off (len octets, pad too) taken out,
 * walked with that body listed absent (abs_len: its octets in the
 * list), or as reduced (reduced set); *n gets the octets left. */
static void walk_without(struct walked *r, enum uiw_rpcrdma_dir dir,
			 const struct xb *b, size_t off, size_t len,
			 size_t abs_len, uint32_t reduced, size_t *n)
{
	static uint8_t out[sizeof(b->p)];
	struct uiw_rr_absent a = { off, abs_len };
	size_t l = (len + 3) & ~(size_t)3;

	memcpy(out, b->p, off);
	memcpy(out + off, b->p + off + l, b->n - off - l);
	*n = b->n - l;
	walk(r, dir, out, *n, abs_len ? &a : NULL, abs_len ? 1 : 0, reduced);
}

/* SEQUENCE, PUTFH, READ, GETATTR: no argument item, one slot sized by
 * READ's count; in the results READ's data is slot 0's item, at its
 * offset whether it is there, listed absent, or reduced. */
static void test_read_compound(void **state)
{
	static struct xb b;
	struct walked r;
	size_t data, n;

	(void)state;
	xb_args(&b, 1, 4);
	xb_sequence(&b);
	xb_putfh(&b);
	xb_read(&b, 70000);
	xb_getattr(&b);
	walk(&r, ARGS, b.p, b.n, NULL, 0, 0);
	assert_int_equal(r.end, END);
	assert_int_equal(r.w.nitems, 0);
	assert_int_equal(r.w.nslots, 1);
	assert_int_equal(r.w.slots[0].len, 70000);
	assert_int_equal(r.w.i, b.n);       /* every octet passed */

	xb_res(&b, 0, 4);
	xb_ok(&b, OP_SEQUENCE);
	xb_fill(&b, 36, 'q');
	xb_ok(&b, OP_PUTFH);
	xb_ok(&b, OP_READ);
	xb_u32(&b, 1);
	data = xb_opq(&b, 5001, 'd');
	xb_ok(&b, OP_GETATTR);
	xb_fattr(&b, 16);
	walk(&r, RESULTS, b.p, b.n, NULL, 0, 0);
	assert_int_equal(r.end, END);
	assert_int_equal(r.w.nslots, 1);
	assert_int_equal(r.w.nitems, 1);
	assert_item(&r.w, 0, data, 5001, 0);
	assert_int_equal(r.w.items[0].in_at, data);
	assert_int_equal(r.w.slots[0].item, 0);
	/* the data listed as a body not there */
	walk_without(&r, RESULTS, &b, data, 5001, 5004, 0, &n);
	assert_int_equal(r.end, END);
	assert_item(&r.w, 0, data, 5001, 0);
	assert_int_equal(r.w.items[0].in_at, SIZE_MAX);
	assert_int_equal(r.w.u, b.n);
	/* a listed body of another length is not this one */
	walk_without(&r, RESULTS, &b, data, 5001, 5008, 0, &n);
	assert_int_equal(r.end, STOP);
	/* a reply whose slot 0 went to Write chunk 0 */
	walk_without(&r, RESULTS, &b, data, 5001, 0, 1, &n);
	assert_int_equal(r.end, END);
	assert_item(&r.w, 0, data, 5001, 0);
	assert_int_equal(r.w.items[0].in_at, SIZE_MAX);
	assert_int_equal(r.w.i, n);
	/* the same stream read as unreduced is garbage after the data */
	walk_without(&r, RESULTS, &b, data, 5001, 0, 0, &n);
	assert_int_equal(r.end, STOP);
}

/* PUTFH, WRITE, GETATTR: WRITE's data is the one item; no slot. */
static void test_write_compound(void **state)
{
	static struct xb b;
	struct walked r;
	size_t data, n;

	(void)state;
	xb_args(&b, 0, 3);
	xb_putfh(&b);
	xb_u32(&b, OP_WRITE);
	xb_stateid(&b);
	xb_u64(&b, 1u << 20);
	xb_u32(&b, 2);
	data = xb_opq(&b, 3001, 'w');
	xb_getattr(&b);
	walk(&r, ARGS, b.p, b.n, NULL, 0, 0);
	assert_int_equal(r.end, END);
	assert_int_equal(r.w.nslots, 0);
	assert_int_equal(r.w.nitems, 1);
	assert_item(&r.w, 0, data, 3001, -1);
	walk_without(&r, ARGS, &b, data, 3001, 3004, 0, &n);
	assert_int_equal(r.end, END);
	assert_item(&r.w, 0, data, 3001, -1);
	assert_int_equal(r.w.items[0].in_at, SIZE_MAX);
	assert_int_equal(r.w.i, n);
	/* WRITE's result has no item and takes no slot */
	xb_res(&b, 0, 3);
	xb_ok(&b, OP_PUTFH);
	xb_ok(&b, OP_WRITE);
	xb_u32(&b, 3001);
	xb_u32(&b, 2);
	xb_fill(&b, 8, 'v');
	xb_ok(&b, OP_GETATTR);
	xb_fattr(&b, 8);
	walk(&r, RESULTS, b.p, b.n, NULL, 0, 0);
	assert_int_equal(r.end, END);
	assert_int_equal(r.w.nslots, 0);
	assert_int_equal(r.w.nitems, 0);
}

static void xb_create(struct xb *b, uint32_t type, size_t *item)
{
	xb_u32(b, 6);                   /* CREATE */
	xb_u32(b, type);
	if (type == NF4LNK)
		*item = xb_opq(b, 2000, 'l');
	if (type == NF4BLK || type == NF4CHR) {
		xb_u32(b, 8);
		xb_u32(b, 1);
	}
	xb_opq(b, 5, 'n');              /* objname */
	xb_fattr(b, 4);
}

/* CREATE: NF4LNK's linkdata is an item; NF4DIR, NF4BLK arms have none
 * and are passed over all the same. */
static void test_create(void **state)
{
	static struct xb b;
	static const uint32_t types[] = { NF4LNK, NF4DIR, NF4BLK, NF4CHR,
					  NF4SOCK, 77 };
	struct walked r;

	(void)state;
	for (unsigned t = 0; t < sizeof(types) / sizeof(types[0]); t++) {
		size_t item = 0;

		xb_args(&b, 0, 3);
		xb_putfh(&b);
		xb_create(&b, types[t], &item);
		xb_u32(&b, OP_GETFH);
		walk(&r, ARGS, b.p, b.n, NULL, 0, 0);
		assert_int_equal(r.end, END);
		assert_int_equal(r.w.i, b.n);
		if (types[t] == NF4LNK) {
			assert_int_equal(r.w.nitems, 1);
			assert_item(&r.w, 0, item, 2000, -1);
		} else {
			assert_int_equal(r.w.nitems, 0);
		}
	}
	/* CREATE's result: cinfo, attrset */
	xb_res(&b, 0, 2);
	xb_ok(&b, OP_PUTFH);
	xb_ok(&b, 6);
	xb_fill(&b, 20, 'c');
	xb_u32(&b, 1);
	xb_u32(&b, 2);
	walk(&r, RESULTS, b.p, b.n, NULL, 0, 0);
	assert_int_equal(r.end, END);
	assert_int_equal(r.w.i, b.n);
	assert_int_equal(r.w.nitems, 0);
}

/* READLINK: a slot of 4096 octets (no bound in the protocol); its
 * link is the slot's item. */
static void test_readlink(void **state)
{
	static struct xb b;
	struct walked r;
	size_t link;

	(void)state;
	xb_args(&b, 0, 2);
	xb_putfh(&b);
	xb_u32(&b, OP_READLINK);
	walk(&r, ARGS, b.p, b.n, NULL, 0, 0);
	assert_int_equal(r.end, END);
	assert_int_equal(r.w.nslots, 1);
	assert_int_equal(r.w.slots[0].len, 4096);
	xb_res(&b, 0, 2);
	xb_ok(&b, OP_PUTFH);
	xb_ok(&b, OP_READLINK);
	link = xb_opq(&b, 37, 'p');
	walk(&r, RESULTS, b.p, b.n, NULL, 0, 0);
	assert_int_equal(r.end, END);
	assert_item(&r.w, 0, link, 37, 0);
}

/* Two READs: two slots, in order (RFC 8267 §6.4.1); the Write chunks
 * offered (an empty one for a READ under min_len, none trailing); a
 * first READ that failed keeps its slot and has no item. */
static void test_two_reads(void **state)
{
	static struct xb b;
	const struct uiw_rpcrdma_ddp_rule *rr = rule4(RESULTS);
	size_t len[UIW_RR_MAX_WCHUNK], data;
	struct walked r;

	(void)state;
	xb_args(&b, 1, 5);
	xb_sequence(&b);
	xb_putfh(&b);
	xb_read(&b, 100);
	xb_putfh(&b);
	xb_read(&b, 9000);
	walk(&r, ARGS, b.p, b.n, NULL, 0, 0);
	assert_int_equal(r.end, END);
	assert_int_equal(r.w.nslots, 2);
	assert_int_equal(uiw_rr_ulb_walk_wchunks(rr, r.w.slots, r.w.nslots,
						 len), 2);
	assert_int_equal(len[0], 0);
	assert_int_equal(len[1], 9000);
	/* the other way round: the trailing empty chunk is not offered */
	r.w.slots[0].len = 9000;
	r.w.slots[1].len = 100;
	assert_int_equal(uiw_rr_ulb_walk_wchunks(rr, r.w.slots, r.w.nslots,
						 len), 1);
	/* bounded by the rule's max_len (64 MiB) */
	r.w.slots[0].len = 0xffffffff;
	assert_int_equal(uiw_rr_ulb_walk_wchunks(rr, r.w.slots, 1, len), 1);
	assert_int_equal(len[0], 64u << 20);

	xb_res(&b, 0, 5);
	xb_ok(&b, OP_SEQUENCE);
	xb_fill(&b, 36, 'q');
	xb_ok(&b, OP_PUTFH);
	xb_u32(&b, OP_READ);
	xb_u32(&b, NFS4ERR_IO);         /* no data */
	xb_ok(&b, OP_PUTFH);
	xb_ok(&b, OP_READ);
	xb_u32(&b, 0);
	data = xb_opq(&b, 8999, 'e');
	walk(&r, RESULTS, b.p, b.n, NULL, 0, 0);
	assert_int_equal(r.end, END);
	assert_int_equal(r.w.nslots, 2);
	assert_int_equal(r.w.slots[0].item, -1);
	assert_int_equal(r.w.slots[1].item, 0);
	assert_item(&r.w, 0, data, 8999, 1);
}

/* An operation the walker does not know ends the walk: STOP in the
 * middle (what follows unseen), END as the last; the arguments' minor
 * version gates the operations. */
static void test_unknown_op(void **state)
{
	static struct xb b;
	struct walked r;

	(void)state;
	xb_args(&b, 1, 3);
	xb_putfh(&b);
	xb_u32(&b, OP_PRIVATE);
	xb_opq(&b, 9, 'x');
	xb_u32(&b, 4);
	xb_read(&b, 9000);
	walk(&r, ARGS, b.p, b.n, NULL, 0, 0);
	assert_int_equal(r.end, STOP);
	assert_int_equal(r.w.nslots, 0);

	xb_args(&b, 1, 3);
	xb_putfh(&b);
	xb_read(&b, 9000);
	xb_u32(&b, OP_PRIVATE);
	xb_opq(&b, 9, 'x');
	xb_u32(&b, 4);
	walk(&r, ARGS, b.p, b.n, NULL, 0, 0);
	assert_int_equal(r.end, END);
	assert_int_equal(r.w.nslots, 1);

	/* results: in the middle, at the end; OP_ILLEGAL is known */
	xb_res(&b, 0, 3);
	xb_ok(&b, OP_PUTFH);
	xb_ok(&b, OP_PRIVATE);
	xb_opq(&b, 9, 'x');
	xb_ok(&b, OP_READLINK);
	xb_opq(&b, 10, 'p');
	walk(&r, RESULTS, b.p, b.n, NULL, 0, 0);
	assert_int_equal(r.end, STOP);
	assert_int_equal(r.w.nslots, 0);
	xb_res(&b, NFS4ERR_OP_ILLEGAL, 3);
	xb_ok(&b, OP_PUTFH);
	xb_ok(&b, OP_READLINK);
	xb_opq(&b, 10, 'p');
	xb_u32(&b, OP_ILLEGAL);
	xb_u32(&b, NFS4ERR_OP_ILLEGAL);
	walk(&r, RESULTS, b.p, b.n, NULL, 0, 0);
	assert_int_equal(r.end, END);
	assert_int_equal(r.w.nslots, 1);
	assert_int_equal(r.w.i, b.n);

	/* SEQUENCE is minor version 1's: in a version 0 COMPOUND it is
	 * unknown (the server answers OP_ILLEGAL) */
	xb_args(&b, 0, 2);
	xb_sequence(&b);
	xb_read(&b, 9000);
	walk(&r, ARGS, b.p, b.n, NULL, 0, 0);
	assert_int_equal(r.end, STOP);
	/* a minor version past 2: nothing is known */
	xb_args(&b, 3, 1);
	xb_read(&b, 9000);
	walk(&r, ARGS, b.p, b.n, NULL, 0, 0);
	assert_int_equal(r.end, STOP);
	assert_int_equal(r.w.nslots, 0);
	/* operation 0, 1, 2 and past CLONE are none */
	for (uint32_t op = 0; op < 3; op++) {
		xb_args(&b, 2, 2);
		xb_u32(&b, op);
		xb_read(&b, 9000);
		walk(&r, ARGS, b.p, b.n, NULL, 0, 0);
		assert_int_equal(r.end, STOP);
	}
}

/* Every prefix of a COMPOUND stops (nothing read past it); the whole
 * ends. */
static void test_prefixes(void **state)
{
	static struct xb b;
	struct walked r;
	size_t full;

	(void)state;
	xb_res(&b, 0, 6);
	xb_ok(&b, OP_SEQUENCE);
	xb_fill(&b, 36, 'q');
	xb_ok(&b, OP_PUTFH);
	xb_ok(&b, OP_READ);
	xb_u32(&b, 1);
	xb_opq(&b, 501, 'd');
	xb_ok(&b, OP_GETATTR);
	xb_fattr(&b, 16);
	xb_ok(&b, 6);
	xb_fill(&b, 20, 'c');
	xb_u32(&b, 0);
	xb_ok(&b, OP_READLINK);
	xb_opq(&b, 3, 'p');
	full = b.n;
	for (size_t n = 0; n <= full; n++) {
		walk(&r, RESULTS, b.p, n, NULL, 0, 0);
		assert_int_equal(r.end, n == full ? END : STOP);
		assert_true(r.w.i <= n);
	}
}

/* Misuse of the walk functions: a NULL walk, an item outside a slot,
 * two items in one slot, a bound broken. */
static void test_walk_misuse(void **state)
{
	static const uint8_t four[8] = { 0, 0, 0, 2, 'a', 'b', 0, 0 };
	struct uiw_rpcrdma_walk w;

	(void)state;
	assert_false(uiw_rpcrdma_walk_u32(NULL, NULL));
	assert_false(uiw_rpcrdma_walk_skip(NULL, 4));
	assert_false(uiw_rpcrdma_walk_opaque(NULL, 0));
	assert_false(uiw_rpcrdma_walk_item(NULL, 0));
	assert_false(uiw_rpcrdma_walk_slot(NULL, 0));
	uiw_rr_walk_init(&w, RESULTS, four, sizeof(four), NULL, 0);
	assert_false(uiw_rpcrdma_walk_item(&w, 0));
	assert_true(w.broken);
	uiw_rr_walk_init(&w, RESULTS, four, sizeof(four), NULL, 0);
	assert_true(uiw_rpcrdma_walk_slot(&w, 0));
	assert_false(uiw_rpcrdma_walk_item(&w, 1));     /* 2 > 1 */
	uiw_rr_walk_init(&w, RESULTS, four, sizeof(four), NULL, 0);
	assert_true(uiw_rpcrdma_walk_slot(&w, 0));
	assert_true(uiw_rpcrdma_walk_item(&w, 2));
	assert_false(uiw_rpcrdma_walk_item(&w, 0));
	/* once broken, every call fails */
	assert_false(uiw_rpcrdma_walk_slot(&w, 0));
	uiw_rr_walk_init(&w, ARGS, four, sizeof(four), NULL, 0);
	assert_false(uiw_rpcrdma_walk_skip(&w, SIZE_MAX));
	uiw_rr_walk_init(&w, ARGS, four, sizeof(four), NULL, 0);
	assert_true(uiw_rpcrdma_walk_skip(&w, 5));      /* rounded to 8 */
	assert_false(uiw_rpcrdma_walk_u32(&w, NULL));
	assert_int_equal(uiw_rpcrdma_walk_dir(&w), ARGS);
}

/* ---- rpcgen's encodings (nfs4sub.x) ------------------------------------ */

/* Item i of the walk is the body p[0..n) of buf: its octets there,
 * its length word before them. */
static void assert_body(const struct uiw_rpcrdma_walk *w, unsigned i,
			const uint8_t *buf, size_t len, const void *p, size_t n,
			int slot)
{
	const struct uiw_rr_witem *it = &w->items[i];
	const uint8_t *lw;

	assert_true(i < w->nitems);
	assert_true(it->off >= 4 && it->off + n <= len);
	assert_int_equal(it->len, n);
	assert_int_equal(it->slot, slot);
	lw = buf + it->off - 4;
	assert_int_equal((uint32_t)lw[0] << 24 | (uint32_t)lw[1] << 16 |
			 (uint32_t)lw[2] << 8 | lw[3], n);
	assert_memory_equal(buf + it->off, p, n);
}

static unsigned seq;

static void fill_stateid(stateid4 *s)
{
	s->seqid = ++seq;
	memset(s->other, (int)seq, sizeof(s->other));
}

static fattr4 attrs(u_int *mask, u_int nmask, char *vals, u_int nvals)
{
	return (fattr4){ { nmask, mask }, { nvals, vals } };
}

/* A COMPOUND's operations, with every union arm of nfs4sub.x that
 * takes octets and the items of §6.1 among them. */
struct big {
	nfs_argop4 a[16];
	nfs_resop4 r[16];
	unsigned na, nr;
	uint8_t *wdata, *rdata, *link, *link2;
	size_t wlen, rlen, llen;
	entry4 ent[3];
	u_int mask[3];
	char vals[40], name[3][9], owner[33], who[21];
};

static void big_init(struct big *g)
{
	nfs_argop4 *a = g->a;
	nfs_resop4 *r = g->r;

	memset(g, 0, sizeof(*g));
	g->wlen = 70001;
	g->rlen = 65537;
	g->llen = 3000;
	g->wdata = xu_pattern(g->wlen, 1);
	g->rdata = xu_pattern(g->rlen, 2);
	g->link = xu_pattern(g->llen, 3);
	g->link2 = xu_pattern(g->llen + 1, 4);
	g->mask[0] = 0x18;
	g->mask[1] = 0x300000;
	memset(g->vals, 'v', sizeof(g->vals));
	memset(g->owner, 'o', sizeof(g->owner));
	memset(g->who, 'w', sizeof(g->who));
	for (unsigned i = 0; i < 3; i++) {
		memset(g->name[i], 'a' + (int)i, 8);
		g->ent[i].cookie = i + 1;
		g->ent[i].name.utf8str_cs_len = 5 + i;
		g->ent[i].name.utf8str_cs_val = g->name[i];
		g->ent[i].attrs = attrs(g->mask, 2, g->vals, 8 * i);
		g->ent[i].nextentry = i < 2 ? &g->ent[i + 1] : NULL;
	}

	/* SEQUENCE */
	a->argop = OP_SEQUENCE;
	memset(a->nfs_argop4_u.opsequence.sa_sessionid, 's', 16);
	a->nfs_argop4_u.opsequence.sa_cachethis = TRUE;
	r->resop = OP_SEQUENCE;
	memset(r->nfs_resop4_u.opsequence.SEQUENCE4res_u.sr_resok4
		       .sr_sessionid, 's', 16);
	a++, r++;
	/* PUTFH */
	a->argop = OP_PUTFH;
	a->nfs_argop4_u.opputfh.object.nfs_fh4_len = 28;
	a->nfs_argop4_u.opputfh.object.nfs_fh4_val = g->vals;
	r->resop = OP_PUTFH;
	a++, r++;
	/* OPEN: GUARDED create, CLAIM_DELEGATE_CUR; a WRITE delegation
	 * with a space limit by blocks */
	a->argop = OP_OPEN;
	{
		OPEN4args *o = &a->nfs_argop4_u.opopen;
		OPEN4resok *k = &r->nfs_resop4_u.opopen.OPEN4res_u.resok4;
		open_write_delegation4 *d;

		o->owner.owner.owner_len = 33;
		o->owner.owner.owner_val = g->owner;
		o->openhow.opentype = OPEN4_CREATE;
		o->openhow.openflag4_u.how.mode = GUARDED4;
		o->openhow.openflag4_u.how.createhow4_u.createattrs =
			attrs(g->mask, 2, g->vals, 13);
		o->claim.claim = CLAIM_DELEGATE_CUR;
		fill_stateid(&o->claim.open_claim4_u.delegate_cur_info
				       .delegate_stateid);
		o->claim.open_claim4_u.delegate_cur_info.file =
			(component4){ 7, g->name[0] };
		fill_stateid(&k->stateid);
		k->attrset = (bitmap4){ 1, g->mask };
		k->delegation.delegation_type = OPEN_DELEGATE_WRITE;
		d = &k->delegation.open_delegation4_u.write;
		d->space_limit.limitby = NFS_LIMIT_BLOCKS;
		d->permissions.who = (utf8str_cs){ 21, g->who };
	}
	r->resop = OP_OPEN;
	a++, r++;
	/* LOCK with a new lock owner; the result: DENIED */
	a->argop = OP_LOCK;
	{
		LOCK4args *l = &a->nfs_argop4_u.oplock;
		LOCK4denied *dn = &r->nfs_resop4_u.oplock.LOCK4res_u.denied;

		l->locker.new_lock_owner = TRUE;
		l->locker.locker4_u.open_owner.lock_owner.owner.owner_len = 30;
		l->locker.locker4_u.open_owner.lock_owner.owner.owner_val =
			g->owner;
		r->nfs_resop4_u.oplock.status = NFS4ERR_DENIED;
		dn->owner.owner.owner_len = 31;
		dn->owner.owner.owner_val = g->owner;
	}
	r->resop = OP_LOCK;
	a++, r++;
	/* SETATTR: attrsset on failure too */
	a->argop = OP_SETATTR;
	a->nfs_argop4_u.opsetattr.obj_attributes = attrs(g->mask, 2, g->vals,
							 21);
	r->resop = OP_SETATTR;
	r->nfs_resop4_u.opsetattr.attrsset = (bitmap4){ 2, g->mask };
	a++, r++;
	/* WRITE */
	a->argop = OP_WRITE;
	a->nfs_argop4_u.opwrite.stable = FILE_SYNC4;
	a->nfs_argop4_u.opwrite.data.data_len = (u_int)g->wlen;
	a->nfs_argop4_u.opwrite.data.data_val = (char *)g->wdata;
	r->resop = OP_WRITE;
	r->nfs_resop4_u.opwrite.WRITE4res_u.resok4.count = (u_int)g->wlen;
	a++, r++;
	/* READDIR: three entries */
	a->argop = OP_READDIR;
	a->nfs_argop4_u.opreaddir.attr_request = (bitmap4){ 3, g->mask };
	r->resop = OP_READDIR;
	r->nfs_resop4_u.opreaddir.READDIR4res_u.resok4.reply.entries =
		&g->ent[0];
	a++, r++;
	/* READ */
	a->argop = OP_READ;
	fill_stateid(&a->nfs_argop4_u.opread.stateid);
	a->nfs_argop4_u.opread.count = (u_int)g->rlen;
	r->resop = OP_READ;
	r->nfs_resop4_u.opread.READ4res_u.resok4.data.data_len =
		(u_int)g->rlen;
	r->nfs_resop4_u.opread.READ4res_u.resok4.data.data_val =
		(char *)g->rdata;
	a++, r++;
	/* CREATE NF4LNK */
	a->argop = OP_CREATE;
	a->nfs_argop4_u.opcreate.objtype.type = NF4LNK;
	a->nfs_argop4_u.opcreate.objtype.createtype4_u.linkdata =
		(linktext4){ (u_int)g->llen, (char *)g->link };
	a->nfs_argop4_u.opcreate.objname = (component4){ 4, g->name[1] };
	r->resop = OP_CREATE;
	a++, r++;
	/* READLINK */
	a->argop = OP_READLINK;
	r->resop = OP_READLINK;
	r->nfs_resop4_u.opreadlink.READLINK4res_u.link =
		(linktext4){ (u_int)g->llen + 1, (char *)g->link2 };
	a++, r++;
	/* GETATTR */
	a->argop = OP_GETATTR;
	a->nfs_argop4_u.opgetattr.attr_request = (bitmap4){ 2, g->mask };
	r->resop = OP_GETATTR;
	r->nfs_resop4_u.opgetattr.GETATTR4res_u.obj_attributes =
		attrs(g->mask, 2, g->vals, 40);
	a++, r++;
	g->na = (unsigned)(a - g->a);
	g->nr = (unsigned)(r - g->r);
}

static void big_fini(struct big *g)
{
	free(g->wdata);
	free(g->rdata);
	free(g->link);
	free(g->link2);
}

static COMPOUND4args big_args(struct big *g, unsigned minor)
{
	static char tag[] = "big";

	return (COMPOUND4args){ { 3, tag }, minor, { g->na, g->a } };
}

static COMPOUND4res big_res(struct big *g)
{
	static char tag[] = "big";

	return (COMPOUND4res){ NFS4_OK, { 3, tag }, { g->nr, g->r } };
}

/* The walker against rpcgen's encoding: every operation passed over
 * exactly (the items at the offsets where the encoding has them, the
 * whole stream read). */
static void test_rpcgen_offsets(void **state)
{
	static uint8_t buf[1 << 18];
	struct big g;
	COMPOUND4args ca;
	COMPOUND4res cr;
	struct walked r;
	size_t n;

	(void)state;
	big_init(&g);
	ca = big_args(&g, 1);
	n = xu_encode((xdrproc_t)xdr_COMPOUND4args, &ca, buf, sizeof(buf));
	walk(&r, ARGS, buf, n, NULL, 0, 0);
	assert_int_equal(r.end, END);
	assert_int_equal(r.w.i, n);
	assert_int_equal(r.w.nitems, 2);
	assert_body(&r.w, 0, buf, n, g.wdata, g.wlen, -1);
	assert_body(&r.w, 1, buf, n, g.link, g.llen, -1);
	assert_int_equal(r.w.nslots, 2);
	assert_int_equal(r.w.slots[0].len, g.rlen);
	assert_int_equal(r.w.slots[1].len, 4096);

	cr = big_res(&g);
	n = xu_encode((xdrproc_t)xdr_COMPOUND4res, &cr, buf, sizeof(buf));
	walk(&r, RESULTS, buf, n, NULL, 0, 0);
	assert_int_equal(r.end, END);
	assert_int_equal(r.w.i, n);
	assert_int_equal(r.w.nslots, 2);
	assert_int_equal(r.w.nitems, 2);
	assert_body(&r.w, 0, buf, n, g.rdata, g.rlen, 0);
	assert_body(&r.w, 1, buf, n, g.link2, g.llen + 1, 1);
	big_fini(&g);
}

/* The call encoded in e, walked: no Write chunk, no item reduced, the
 * pieces together the plain encoding ref. */
static void assert_call_inline(struct uiw_rr_xenc *e,
			       const struct uiw_rpcrdma_ddp_rule *rw,
			       const uint8_t *ref, size_t ref_len)
{
	size_t len[UIW_RR_MAX_WCHUNK];
	const struct uiw_rr_iov *iov;
	unsigned n, nwt;

	assert_int_equal(uiw_rr_xenc_walk_call(e, rule4(ARGS), rw, len, &nwt),
			 0);
	assert_int_equal(nwt, 0);
	iov = uiw_rr_xenc_finish(e, &n);
	assert_non_null(iov);
	xu_assert_unreduced(iov, n, ref, ref_len, false);
	assert_int_equal(xu_count_ddp(iov, n), 0);
}

/* A Requester's call: WRITE's data and CREATE's link data reduced
 * from the caller's memory (no copy), the other long bodies back
 * inline from it, Write chunks for READ (its count) and READLINK. */
static void test_split_call(void **state)
{
	static uint8_t ref[1 << 18];
	struct uiw_rr_sel as = sel4(ARGS);
	struct big g;
	COMPOUND4args ca;
	struct uiw_rr_xenc e;
	struct uiw_rr_body b = { (xdrproc_t)xdr_COMPOUND4args, &ca };
	size_t len[UIW_RR_MAX_WCHUNK], ref_len;
	const struct uiw_rr_iov *iov;
	unsigned n, nwt, nddp = 0;

	(void)state;
	big_init(&g);
	ca = big_args(&g, 1);
	ref_len = xu_encode((xdrproc_t)xdr_COMPOUND4args, &ca, ref,
			    sizeof(ref));
	uiw_rr_xenc_init(&e);
	assert_true(uiw_rr_xdr_body(uiw_rr_xenc_begin_walk(&e, &as), &b));
	assert_int_equal(XDR_GETPOS(&e.xdr), ref_len);
	/* only the short bodies were copied */
	assert_true(e.len < 2048);
	assert_int_equal(uiw_rr_xenc_walk_call(&e, rule4(ARGS), rule4(RESULTS),
					       len, &nwt), 0);
	assert_int_equal(nwt, 2);
	assert_int_equal(len[0], g.rlen);
	assert_int_equal(len[1], 4096);
	iov = uiw_rr_xenc_finish(&e, &n);
	assert_non_null(iov);
	xu_assert_unreduced(iov, n, ref, ref_len, false);
	for (unsigned i = 0; i < n; i++) {
		if (!iov[i].ddp)
			continue;
		assert_ptr_equal(iov[i].base, nddp ? g.link : g.wdata);
		nddp++;
	}
	assert_int_equal(nddp, 2);

	/* under min_len an item stays inline */
	g.a[5].nfs_argop4_u.opwrite.data.data_len = 1023;
	g.a[8].nfs_argop4_u.opcreate.objtype.createtype4_u.linkdata
		.linktext4_len = 5;
	ref_len = xu_encode((xdrproc_t)xdr_COMPOUND4args, &ca, ref,
			    sizeof(ref));
	assert_true(uiw_rr_xdr_body(uiw_rr_xenc_begin_walk(&e, &as), &b));
	assert_call_inline(&e, NULL, ref, ref_len);

	/* arguments not encoded through uiw_rr_xdr_body on this stream
	 * (as an RPCSEC_GSS wrap encodes them): nothing walked */
	assert_true(xdr_COMPOUND4args(uiw_rr_xenc_begin_walk(&e, &as), &ca));
	assert_call_inline(&e, rule4(RESULTS), ref, ref_len);

	/* in a minor version 0 COMPOUND, SEQUENCE stops the walk:
	 * everything inline, no Write chunk */
	g.a[5].nfs_argop4_u.opwrite.data.data_len = (u_int)g.wlen;
	ca = big_args(&g, 0);
	ref_len = xu_encode((xdrproc_t)xdr_COMPOUND4args, &ca, ref,
			    sizeof(ref));
	assert_true(uiw_rr_xdr_body(uiw_rr_xenc_begin_walk(&e, &as), &b));
	assert_call_inline(&e, rule4(RESULTS), ref, ref_len);
	uiw_rr_xenc_fini(&e);
	big_fini(&g);
}

/* Encodes the results as a Responder with the chunks clen[] offered,
 * lands them, decodes them with the splicing decoder and compares with
 * the plain encoding; the pieces' ddp count is returned. */
static unsigned reply_roundtrip(COMPOUND4res *cr, const size_t *clen,
				unsigned nwt, int expect_rc)
{
	static uint8_t ref[1 << 18], back_enc[1 << 18];
	struct uiw_rr_sel rs = sel4(RESULTS);
	struct uiw_rr_xenc e;
	struct uiw_rr_body b = { (xdrproc_t)xdr_COMPOUND4res, cr };
	COMPOUND4res back;
	struct uiw_rr_body bb = { (xdrproc_t)xdr_COMPOUND4res, &back };
	const struct uiw_rr_iov *iov;
	struct uiw_rr_xdec d;
	struct xu_landed l;
	size_t ref_len;
	unsigned n, nddp = 0;

	ref_len = xu_encode((xdrproc_t)xdr_COMPOUND4res, cr, ref,
			    sizeof(ref));
	uiw_rr_xenc_init(&e);
	assert_true(uiw_rr_xdr_body(uiw_rr_xenc_begin_walk(&e, &rs), &b));
	assert_int_equal(uiw_rr_xenc_walk_reply(&e, rule4(RESULTS), nwt),
			 expect_rc);
	if (expect_rc) {
		uiw_rr_xenc_fini(&e);
		return 0;
	}
	iov = uiw_rr_xenc_finish(&e, &n);
	assert_non_null(iov);
	xu_assert_unreduced(iov, n, ref, ref_len, false);
	for (unsigned i = 0; i < n; i++)
		nddp += iov[i].ddp;
	xu_land(iov, n, clen, nwt, &l);
	memset(&back, 0, sizeof(back));
	uiw_rr_xdec_init(&d, l.stream, l.len, &rs, l.wt, l.wlen, nwt);
	assert_true(uiw_rr_xdr_body(&d.xdr, &bb));
	assert_true(uiw_rr_xdec_done(&d));
	assert_int_equal(XDR_GETPOS(&d.xdr), ref_len);
	assert_int_equal(d.pos, l.len);
	assert_int_equal(xu_encode((xdrproc_t)xdr_COMPOUND4res, &back,
				   back_enc, sizeof(back_enc)), ref_len);
	assert_memory_equal(back_enc, ref, ref_len);
	xdr_free((xdrproc_t)xdr_COMPOUND4res, (char *)&back);
	xu_unland(&l, nwt);
	uiw_rr_xenc_fini(&e);
	return nddp;
}

/* A Responder's reply: READ's data and READLINK's link into the Write
 * chunks of their slots, from the caller's memory; an empty chunk
 * leaves its item inline; a READ that failed returns its chunk unused
 * and the next READ still takes its own; the reply decodes back the
 * same. */
static void test_split_splice_reply(void **state)
{
	struct big g;
	COMPOUND4res cr;
	size_t clen[2];
	READ4res *rd;

	(void)state;
	big_init(&g);
	cr = big_res(&g);
	rd = &g.r[7].nfs_resop4_u.opread;
	clen[0] = g.rlen;
	clen[1] = 4096;
	assert_int_equal(reply_roundtrip(&cr, clen, 2, 0), 2);
	assert_int_equal(reply_roundtrip(&cr, clen, 1, 0), 1);
	assert_int_equal(reply_roundtrip(&cr, clen, 0, 0), 0);
	/* an empty chunk for READ: its data inline, READLINK's in chunk 1 */
	clen[0] = 0;
	assert_int_equal(reply_roundtrip(&cr, clen, 2, 0), 2);
	/* a failed READ: a piece of no octets for its chunk */
	clen[0] = g.rlen;
	rd->status = NFS4ERR_BAD_STATEID;
	assert_int_equal(reply_roundtrip(&cr, clen, 2, 0), 2);
	/* short data: into its chunk all the same (RFC 8267 §6.4.1) */
	rd->status = NFS4_OK;
	rd->READ4res_u.resok4.data.data_len = 5;
	assert_int_equal(reply_roundtrip(&cr, clen, 2, 0), 2);
	/* empty data */
	rd->READ4res_u.resok4.data.data_len = 0;
	assert_int_equal(reply_roundtrip(&cr, clen, 2, 0), 2);
	/* the COMPOUND stopped before READLINK: chunk 1 unused */
	rd->READ4res_u.resok4.data.data_len = (u_int)g.rlen;
	cr.resarray.resarray_len = 8;
	assert_int_equal(reply_roundtrip(&cr, clen, 2, 0), 1);
	big_fini(&g);
}

/* A Responder whose walk stops (an operation it does not know) before
 * a chunk offered has its slot cannot form the reply (1); when the
 * unknown operation is the last result, the chunks left go back
 * unused. */
static void test_reply_cannot_pair(void **state)
{
	struct big g;
	COMPOUND4res cr;
	nfs_resop4 r[4];
	size_t clen[2] = { 70000, 4096 };
	static char blob[] = "private";

	(void)state;
	big_init(&g);
	r[0] = g.r[1];                  /* PUTFH */
	memset(&r[1], 0, sizeof(r[1]));
	r[1].resop = OP_PRIVATE;
	r[1].nfs_resop4_u.opprivate.blob.blob_len = 7;
	r[1].nfs_resop4_u.opprivate.blob.blob_val = blob;
	r[2] = g.r[7];                  /* READ */
	r[3] = g.r[9];                  /* READLINK */
	cr = big_res(&g);
	cr.resarray.resarray_len = 4;
	cr.resarray.resarray_val = r;
	reply_roundtrip(&cr, clen, 1, 1);
	/* no chunk: nothing to pair, the reply is formed */
	assert_int_equal(reply_roundtrip(&cr, clen, 0, 0), 0);
	/* READ first: its chunk paired, READLINK's after the stop not */
	r[1] = g.r[7];
	r[2].resop = OP_PRIVATE;
	r[2].nfs_resop4_u.opprivate = (PRIVATE4res){ NFS4_OK, { 7, blob } };
	assert_int_equal(reply_roundtrip(&cr, clen, 1, 0), 1);
	reply_roundtrip(&cr, clen, 2, 1);
	/* the unknown one last: chunk 1 goes back unused */
	cr.resarray.resarray_len = 3;
	assert_int_equal(reply_roundtrip(&cr, clen, 2, 0), 1);
	big_fini(&g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_read_compound),
		cmocka_unit_test(test_write_compound),
		cmocka_unit_test(test_create),
		cmocka_unit_test(test_readlink),
		cmocka_unit_test(test_two_reads),
		cmocka_unit_test(test_unknown_op),
		cmocka_unit_test(test_prefixes),
		cmocka_unit_test(test_walk_misuse),
		cmocka_unit_test(test_rpcgen_offsets),
		cmocka_unit_test(test_split_call),
		cmocka_unit_test(test_split_splice_reply),
		cmocka_unit_test(test_reply_cannot_pair),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
