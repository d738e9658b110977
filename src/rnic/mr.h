/*
 * Memory regions and the device's STag table (RFC 5040 §2.1, RFC 5042
 * §5).  An STag is a 24-bit index into the table and an 8-bit key
 * (index << 8 | key); lkey and rkey are the same STag.  Index 0 is never
 * used.  Keys come from a getrandom-seeded generator and change every
 * time an index is reused (RFC 5040 §8.1.1 rule 8: STags hard to
 * predict).
 *
 * Lookups on the data path take no lock: a lookup raises the entry's
 * in-flight count, then checks that the entry still holds the STag and is
 * valid.  Deregistration first marks the entry dying (no new holds) and
 * then waits until the in-flight count drops to zero, so that no octet is
 * placed into, or sent from, a region after uiw_dereg_mr returns.
 * Entries live as long as the device, so a stale pointer to one is never
 * a dangling pointer.
 */
#ifndef UIW_RNIC_MR_H
#define UIW_RNIC_MR_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include "../wire/err.h"
#include <uiwarp/uiwarp.h>

enum uiw_mre_state {
	UIW_MRE_FREE = 0,
	UIW_MRE_VALID,
	UIW_MRE_INVALID,    /* invalidated (local or remote invalidate) */
	UIW_MRE_DYING,      /* being deregistered */
};

struct uiw_mr_obj;

struct uiw_mr_entry {
	_Atomic uint32_t stag;      /* index << 8 | key; 0 when free */
	_Atomic uint32_t state;     /* enum uiw_mre_state */
	_Atomic uint32_t inflight;  /* holds (and lookups in progress) */
	/* Written while the entry is free, read-only while it is not. */
	struct uiw_pd *pd;
	uint64_t addr;              /* TO of the first octet (its address) */
	uint64_t length;
	unsigned access;            /* UIW_ACCESS_* */
	struct uiw_mr_obj *obj;
	uint8_t last_key;
};

struct uiw_mr_table {
	struct uiw_mr_entry *ent;
	uint32_t size;              /* entries, index 0 unused */
	uint32_t used;
	pthread_mutex_t lock;       /* registration and deregistration */
	pthread_cond_t idle;        /* some dying entry lost its last hold */
	uint64_t rng;               /* key and index generator state */
};

/* The registered region behind a struct uiw_mr. */
struct uiw_mr_obj {
	struct uiw_mr mr;           /* what the user sees */
	struct uiw_device *dev;
	uint32_t idx;
};

/* Why an access was refused. */
enum uiw_mr_check {
	UIW_MRC_OK = 0,
	UIW_MRC_INVALID,    /* no such STag, or invalidated */
	UIW_MRC_PD,         /* the region is in another protection domain */
	UIW_MRC_ACCESS,     /* the rights asked for are missing */
	UIW_MRC_WRAP,       /* to + len wraps around 2^64 */
	UIW_MRC_BOUNDS,     /* [to, to + len) is not inside the region */
	UIW_MRC_SHARED,     /* remotely accessible and shared by streams */
};

int uiw_mr_table_init(struct uiw_mr_table *t, uint32_t size);
void uiw_mr_table_fini(struct uiw_mr_table *t);

/* Looks stag up and checks it against pd, the rights in access (all of
 * them needed) and the range [to, to + len).  On UIW_MRC_OK a hold is
 * taken and *out set: the region stays registered (its memory usable)
 * until uiw_mr_put.  On anything else no hold is taken. */
enum uiw_mr_check uiw_mr_get(struct uiw_mr_table *t, uint32_t stag,
			     const struct uiw_pd *pd, unsigned access,
			     uint64_t to, uint64_t len,
			     struct uiw_mr_entry **out);
void uiw_mr_put(struct uiw_mr_table *t, struct uiw_mr_entry *e);
/* The same check without keeping a hold. */
enum uiw_mr_check uiw_mr_check(struct uiw_mr_table *t, uint32_t stag,
			       const struct uiw_pd *pd, unsigned access,
			       uint64_t to, uint64_t len);
/* Invalidates stag if it is a valid STag of pd (RFC 5040 §5.3, local
 * invalidate).  UIW_MRC_INVALID: unknown or already invalid;
 * UIW_MRC_PD: it belongs to another protection domain. */
/* Remote invalidation (Send with Invalidate, RFC 5040 §5.3): as
 * uiw_mr_invalidate, and also UIW_MRC_SHARED for an STag enabled for
 * remote access while its PD serves more than one stream (RFC 5040
 * §8.1.1 rule 7: a remote peer must not be able to invalidate it). */
enum uiw_mr_check uiw_mr_invalidate_remote(struct uiw_mr_table *t,
					   uint32_t stag,
					   const struct uiw_pd *pd);
enum uiw_mr_check uiw_mr_invalidate(struct uiw_mr_table *t, uint32_t stag,
				    const struct uiw_pd *pd);
/* The error a refused access is reported with (RFC 5040 §7.2, RFC 5041
 * §7.2), by who asked: */
enum uiw_mre_ctx {
	UIW_MRE_DDP,        /* placement of a tagged segment (DDP has no code
			       for missing rights: RDMAP's says it) */
	UIW_MRE_RDMAP,      /* the source of a Read, the target of an atomic */
	UIW_MRE_INVALIDATE, /* a Send with Invalidate's STag */
};
uiw_err_t uiw_mr_check_err(enum uiw_mr_check c, enum uiw_mre_ctx ctx);
/* Short name of a check result, for messages. */
const char *uiw_mr_check_str(enum uiw_mr_check c);

#endif
