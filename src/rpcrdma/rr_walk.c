/*
 * The cursor of a walk over encoded arguments or results: see
 * rr_walk.h.  Two positions move together: i, among the octets there
 * are, and u, in the unreduced stream; they differ by the bodies not
 * there, which are passed over by their length word alone.
 */
#include "rr_walk.h"
#include "rpcrdma_hdr.h"

#include <limits.h>
#include <stdint.h>
#include <string.h>

void uiw_rr_walk_init(struct uiw_rpcrdma_walk *w, enum uiw_rpcrdma_dir dir,
		      const uint8_t *p, size_t len,
		      const struct uiw_rr_absent *absent, unsigned nabs)
{
	memset(w, 0, sizeof(*w));
	w->dir = dir;
	w->p = p;
	w->len = p ? len : 0;
	w->abs = absent;
	w->nabs = absent ? nabs : 0;
}

void uiw_rr_walk_reduced(struct uiw_rpcrdma_walk *w, uint32_t reduced)
{
	w->reduced = reduced;
}

enum uiw_rpcrdma_walk_end uiw_rr_walk_run(struct uiw_rpcrdma_walk *w,
					  const struct uiw_rpcrdma_ddp_rule *r)
{
	enum uiw_rpcrdma_walk_end end;

	if (!r || !r->walk)
		return UIW_RPCRDMA_WALK_STOP;
	end = r->walk(r, w);
	return w->broken ? UIW_RPCRDMA_WALK_STOP : end;
}

static bool fail(struct uiw_rpcrdma_walk *w)
{
	w->broken = true;
	return false;
}

/* The listed body that begins at u, if any; those behind are passed. */
static const struct uiw_rr_absent *absent_here(struct uiw_rpcrdma_walk *w)
{
	while (w->next_abs < w->nabs && w->abs[w->next_abs].off < w->u)
		w->next_abs++;
	if (w->next_abs < w->nabs && w->abs[w->next_abs].off == w->u)
		return &w->abs[w->next_abs];
	return NULL;
}

/* Where the next listed body begins (SIZE_MAX: none). */
static size_t next_absent(struct uiw_rpcrdma_walk *w)
{
	absent_here(w);
	return w->next_abs < w->nabs ? w->abs[w->next_abs].off : SIZE_MAX;
}

/* n octets that must all be there. */
static bool take(struct uiw_rpcrdma_walk *w, size_t n)
{
	if (w->len - w->i < n || next_absent(w) - w->u < n)
		return fail(w);
	w->i += n;
	w->u += n;
	return true;
}

enum uiw_rpcrdma_dir uiw_rpcrdma_walk_dir(const struct uiw_rpcrdma_walk *w)
{
	return w ? w->dir : UIW_RPCRDMA_ARGS;
}

bool uiw_rpcrdma_walk_u32(struct uiw_rpcrdma_walk *w, uint32_t *v)
{
	const uint8_t *q;

	if (!w || w->broken || !take(w, 4))
		return w ? fail(w) : false;
	q = w->p + w->i - 4;
	if (v)
		*v = (uint32_t)q[0] << 24 | (uint32_t)q[1] << 16 |
		     (uint32_t)q[2] << 8 | q[3];
	return true;
}

/* A fixed-size item may span listed bodies (a fixed opaque the
 * encoder left in place) as long as it holds them whole. */
bool uiw_rpcrdma_walk_skip(struct uiw_rpcrdma_walk *w, size_t octets)
{
	size_t n;

	if (!w || w->broken)
		return w ? fail(w) : false;
	if (octets > SIZE_MAX - 3)
		return fail(w);
	n = uiw_xdr_roundup(octets);
	while (n) {
		const struct uiw_rr_absent *a = absent_here(w);
		size_t step;

		if (a) {
			if (a->len > n)
				return fail(w);
			w->u += a->len;
			n -= a->len;
			w->next_abs++;
			continue;
		}
		step = next_absent(w) - w->u;
		if (step > n)
			step = n;
		if (!take(w, step))
			return false;
		n -= step;
	}
	return true;
}

/*
 * A body of len octets at u: listed (it must be exactly that long),
 * reduced (reduced set), or there.  Its offsets go to *off and
 * *in_at.
 */
static bool body(struct uiw_rpcrdma_walk *w, uint32_t len, bool reduced,
		 size_t *off, size_t *in_at)
{
	const struct uiw_rr_absent *a = absent_here(w);
	size_t n = uiw_xdr_roundup(len);

	*off = w->u;
	*in_at = SIZE_MAX;
	if (a) {
		if (a->len != n)
			return fail(w);
		w->u += n;
		w->next_abs++;
		return true;
	}
	if (reduced) {
		/* RFC 8166 §3.4.6.2: nor is its pad there */
		if (SIZE_MAX - w->u < n)
			return fail(w);
		w->u += n;
		return true;
	}
	*in_at = w->i;
	return take(w, n);
}

static bool opaque(struct uiw_rpcrdma_walk *w, uint32_t max, bool reduced,
		   size_t *off, size_t *in_at, uint32_t *len)
{
	if (!uiw_rpcrdma_walk_u32(w, len))
		return false;
	if (max && *len > max)
		return fail(w);
	return body(w, *len, reduced, off, in_at);
}

bool uiw_rpcrdma_walk_opaque(struct uiw_rpcrdma_walk *w, uint32_t max)
{
	size_t off, in_at;
	uint32_t len;

	return opaque(w, max, false, &off, &in_at, &len);
}

bool uiw_rpcrdma_walk_item(struct uiw_rpcrdma_walk *w, uint32_t max)
{
	bool res = w && w->dir == UIW_RPCRDMA_RESULTS;
	int slot = res ? (int)w->nslots - 1 : -1;
	bool reduced = false;
	struct uiw_rr_witem it;

	if (!w || w->broken)
		return w ? fail(w) : false;
	if (res) {
		/* a result's item belongs to the slot begun last, one
		 * each (RFC 8267 §6.4.1) */
		if (!w->slot_open)
			return fail(w);
		w->slot_open = false;
		reduced = slot < 32 && (w->reduced >> slot & 1);
	}
	if (!opaque(w, max, reduced, &it.off, &it.in_at, &it.len))
		return false;
	it.slot = slot;
	if (w->nitems < UIW_RR_WALK_MAX_ITEMS) {
		if (res && slot < UIW_RR_WALK_MAX_SLOTS)
			w->slots[slot].item = (int)w->nitems;
		w->items[w->nitems++] = it;
	}
	return true;
}

bool uiw_rpcrdma_walk_slot(struct uiw_rpcrdma_walk *w, size_t len)
{
	if (!w || w->broken)
		return w ? fail(w) : false;
	if (w->nslots < UIW_RR_WALK_MAX_SLOTS)
		w->slots[w->nslots] = (struct uiw_rr_wslot){
			w->u, w->i, w->dir == UIW_RPCRDMA_ARGS ? len : 0, -1 };
	if (w->nslots < INT_MAX)
		w->nslots++;
	w->slot_open = w->dir == UIW_RPCRDMA_RESULTS;
	return true;
}
