/*
 * The NFS version 4 COMPOUND walker of src/rpcrdma/rr_nfs4.c through
 * the walk cursor of rr_walk.c (RFC 8267 §6), on arbitrary COMPOUND4args
 * or COMPOUND4res: it never reads outside the stream (an exact-size
 * copy), every item it reports is a body of the stream (its length
 * word before it, its octets and pad inside, items in increasing order
 * and apart), results' items each in a slot of their own; and the same
 * stream with some items' bodies taken out, walked with those bodies
 * listed absent (as the splitting encoder leaves them) or, for results,
 * reduced into their slots' Write chunks (as a reply arrives), reports
 * the same items at the same offsets, the same slots, and ends at the
 * same place in the same way.
 *
 * Input: c0 (bit 0: results, else arguments), c1 c2 (which items to
 * take out: for results, bit k of c1 takes slot k's; for arguments,
 * bit i of c2:c1 takes item i), then the stream.
 */
#include "fuzz.h"
#include "rr_ulb.h"
#include "rr_walk.h"

#define MAX_ITEMS UIW_RR_WALK_MAX_ITEMS

struct run {
	struct uiw_rpcrdma_walk w;
	enum uiw_rpcrdma_walk_end end;
};

static const struct uiw_rpcrdma_ddp_rule *rule(enum uiw_rpcrdma_dir dir)
{
	struct uiw_rr_sel s = { uiw_rpcrdma_ulb_nfs(), 100003, 4, 1, dir };
	const struct uiw_rpcrdma_ddp_rule *r = uiw_rr_ulb_walker(&s, dir);

	FZ_CHECK(r, "no NFSv4 COMPOUND rule with a walk");
	return r;
}

static void walk(struct run *r, enum uiw_rpcrdma_dir dir, const uint8_t *p,
		 size_t n, const struct uiw_rr_absent *abs, unsigned nabs,
		 uint32_t reduced)
{
	uint8_t *copy = fz_dup(p, n);

	uiw_rr_walk_init(&r->w, dir, copy, n, abs, nabs);
	uiw_rr_walk_reduced(&r->w, reduced);
	r->end = uiw_rr_walk_run(&r->w, rule(dir));
	r->w.p = NULL;
	free(copy);
}

static size_t roundup4(size_t n)
{
	return (n + 3) & ~(size_t)3;
}

/* What a walk over the whole stream must say. */
static void check_plain(const struct run *r, enum uiw_rpcrdma_dir dir,
			const uint8_t *p, size_t n)
{
	const struct uiw_rpcrdma_walk *w = &r->w;
	size_t after = 0;

	FZ_CHECK(w->i <= n && w->u == w->i, "read to %zu (%zu) of %zu",
		 w->i, w->u, n);
	FZ_CHECK(w->nitems <= MAX_ITEMS, "%u items", w->nitems);
	for (unsigned k = 0; k < w->nitems; k++) {
		const struct uiw_rr_witem *it = &w->items[k];

		FZ_CHECK(it->in_at == it->off, "item %u at %zu, read at %zu",
			 k, it->off, it->in_at);
		FZ_CHECK(it->off >= after + 4, "item %u at %zu overlaps %zu",
			 k, it->off, after);
		FZ_CHECK(it->off + roundup4(it->len) <= w->i,
			 "item %u (%u octets at %zu) past what was read (%zu)",
			 k, it->len, it->off, w->i);
		FZ_CHECK(ref_be32(p + it->off - 4) == it->len,
			 "item %u: length word %u, reported %u", k,
			 ref_be32(p + it->off - 4), it->len);
		if (dir == UIW_RPCRDMA_RESULTS) {
			FZ_CHECK(it->slot >= 0 && (unsigned)it->slot <
				 w->nslots, "item %u in slot %d of %u", k,
				 it->slot, w->nslots);
			FZ_CHECK(k == 0 || it->slot > w->items[k - 1].slot,
				 "two items in slot %d", it->slot);
			if (it->slot < UIW_RR_WALK_MAX_SLOTS)
				FZ_CHECK(w->slots[it->slot].item == (int)k,
					 "slot %d names item %d, not %u",
					 it->slot, w->slots[it->slot].item, k);
		} else {
			FZ_CHECK(it->slot == -1, "argument item in slot %d",
				 it->slot);
		}
		after = it->off + roundup4(it->len);
	}
	for (unsigned k = 0; k < w->nslots && k < UIW_RR_WALK_MAX_SLOTS; k++)
		FZ_CHECK(w->slots[k].off <= w->u, "slot %u at %zu", k,
			 w->slots[k].off);
}

/* Another walk of the same COMPOUND must say the same. */
static void check_same(const struct run *a, const struct run *b,
		       const char *how)
{
	FZ_CHECK(a->end == b->end, "%s: ended %d, not %d", how, b->end,
		 a->end);
	FZ_CHECK(a->w.u == b->w.u, "%s: stopped at %zu, not %zu", how,
		 b->w.u, a->w.u);
	FZ_CHECK(a->w.nitems == b->w.nitems && a->w.nslots == b->w.nslots,
		 "%s: %u items %u slots, not %u %u", how, b->w.nitems,
		 b->w.nslots, a->w.nitems, a->w.nslots);
	for (unsigned k = 0; k < a->w.nitems; k++)
		FZ_CHECK(a->w.items[k].off == b->w.items[k].off &&
			 a->w.items[k].len == b->w.items[k].len &&
			 a->w.items[k].slot == b->w.items[k].slot,
			 "%s: item %u differs", how, k);
	for (unsigned k = 0; k < a->w.nslots && k < UIW_RR_WALK_MAX_SLOTS;
	     k++)
		FZ_CHECK(a->w.slots[k].off == b->w.slots[k].off &&
			 a->w.slots[k].len == b->w.slots[k].len &&
			 a->w.slots[k].item == b->w.slots[k].item,
			 "%s: slot %u differs", how, k);
}

/* Which items to take out: results, those of the slots in c1;
 * arguments, those in c2:c1.  Never an empty body (the encoder leaves
 * none out). */
static bool taken(const struct uiw_rr_witem *it, enum uiw_rpcrdma_dir dir,
		  unsigned k, uint16_t mask)
{
	if (!it->len)
		return false;
	if (dir == UIW_RPCRDMA_RESULTS)
		return it->slot < 8 && (mask >> it->slot & 1);
	return mask >> k & 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz f = { data, size };
	uint8_t c0 = fz_u8(&f);
	uint16_t mask = fz_u8(&f);
	enum uiw_rpcrdma_dir dir = (c0 & 1) ? UIW_RPCRDMA_RESULTS :
					      UIW_RPCRDMA_ARGS;
	struct uiw_rr_absent abs[MAX_ITEMS];
	struct run plain, listed, reduced;
	uint32_t slots = 0;
	unsigned nabs = 0;
	uint8_t *out;
	size_t o = 0, from = 0, gone = 0;

	mask |= (uint16_t)(fz_u8(&f) << 8);
	walk(&plain, dir, f.p, f.n, NULL, 0, 0);
	check_plain(&plain, dir, f.p, f.n);

	/* the stream without the bodies taken out */
	out = fz_alloc(f.n);
	for (unsigned k = 0; k < plain.w.nitems; k++) {
		const struct uiw_rr_witem *it = &plain.w.items[k];
		size_t l = roundup4(it->len);

		if (!taken(it, dir, k, mask))
			continue;
		memcpy(out + o, f.p + from, it->off - from);
		o += it->off - from;
		from = it->off + l;
		abs[nabs++] = (struct uiw_rr_absent){ it->off, l };
		gone += l;
		if (it->slot >= 0)
			slots |= 1u << it->slot;
	}
	memcpy(out + o, f.p + from, f.n - from);
	o += f.n - from;

	walk(&listed, dir, out, o, abs, nabs, 0);
	check_same(&plain, &listed, "bodies listed absent");
	FZ_CHECK(listed.w.i + gone == plain.w.i, "read %zu + %zu, not %zu",
		 listed.w.i, gone, plain.w.i);
	for (unsigned k = 0, a = 0; k < listed.w.nitems; k++) {
		bool out_k = a < nabs && abs[a].off == listed.w.items[k].off;

		FZ_CHECK((listed.w.items[k].in_at == SIZE_MAX) == out_k,
			 "item %u read at %zu", k, listed.w.items[k].in_at);
		a += out_k;
	}
	if (dir == UIW_RPCRDMA_RESULTS) {
		walk(&reduced, dir, out, o, NULL, 0, slots);
		check_same(&plain, &reduced, "reduced into Write chunks");
		FZ_CHECK(reduced.w.i == listed.w.i, "read %zu, not %zu",
			 reduced.w.i, listed.w.i);
	}
	free(out);
	return 0;
}
