/*
 * Memory registration and the STag table (see mr.h).
 *
 * RFC 5040 §8.1.1 and RFC 5042 §5 ask an RNIC to keep a stream inside
 * its protection domain, a peer inside the registered range, to revoke
 * access when asked, and to choose STags that are hard to predict.  Every
 * access the engine makes to registered memory, local or remote, goes
 * through uiw_mr_get/uiw_mr_check here.
 */
#include "mr.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "dev.h"
#include "../rt/log.h"

#define STAG_INDEX(s)   ((s) >> 8)
#define STAG_KEY(s)     ((s) & 0xffu)

static uint64_t rng_next(uint64_t *s)
{
	/* xorshift64* */
	uint64_t x = *s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545f4914f6cdd1dull;
}

int uiw_mr_table_init(struct uiw_mr_table *t, uint32_t size)
{
	uint64_t seed = 0;

	memset(t, 0, sizeof(*t));
	t->ent = calloc(size, sizeof(*t->ent));
	if (!t->ent)
		return -ENOMEM;
	t->size = size;
	pthread_mutex_init(&t->lock, NULL);
	pthread_cond_init(&t->idle, NULL);
	/* RFC 5040 §8.1.1 rule 8: STags difficult to predict. */
	if (getrandom(&seed, sizeof(seed), 0) != (ssize_t)sizeof(seed)) {
		struct timespec ts;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		seed ^= (uint64_t)ts.tv_nsec << 32 ^ (uint64_t)ts.tv_sec ^
			(uint64_t)getpid() << 16 ^ (uint64_t)(uintptr_t)t;
	}
	t->rng = seed ? seed : 0x9e3779b97f4a7c15ull;
	return 0;
}

void uiw_mr_table_fini(struct uiw_mr_table *t)
{
	free(t->ent);
	t->ent = NULL;
	pthread_cond_destroy(&t->idle);
	pthread_mutex_destroy(&t->lock);
}

const char *uiw_mr_check_str(enum uiw_mr_check c)
{
	switch (c) {
	case UIW_MRC_OK:
		return "ok";
	case UIW_MRC_INVALID:
		return "invalid STag";
	case UIW_MRC_PD:
		return "STag of another protection domain";
	case UIW_MRC_ACCESS:
		return "access rights missing";
	case UIW_MRC_WRAP:
		return "TO wraps";
	case UIW_MRC_BOUNDS:
		return "outside the region";
	case UIW_MRC_SHARED:
		return "remotely accessible STag shared by several streams";
	}
	return "?";
}

/* Rights, then range, with overflow-safe arithmetic: the valid range is
 * [addr, addr + length) (RFC 5041 §7.1 checks 3-5). */
static inline enum uiw_mr_check range_check(const struct uiw_mr_entry *e,
					    const struct uiw_pd *pd,
					    unsigned access, uint64_t to,
					    uint64_t len)
{
	if (e->pd != pd)
		return UIW_MRC_PD;
	if ((e->access & access) != access)
		return UIW_MRC_ACCESS;
	if (len > UINT64_MAX - to)
		return UIW_MRC_WRAP;
	if (to < e->addr || to - e->addr > e->length ||
	    len > e->length - (to - e->addr))
		return UIW_MRC_BOUNDS;
	return UIW_MRC_OK;
}

/* Takes a hold on the entry of stag if it is valid. */
static inline struct uiw_mr_entry *hold(struct uiw_mr_table *t,
					uint32_t stag)
{
	uint32_t idx = STAG_INDEX(stag);
	struct uiw_mr_entry *e;

	if (idx == 0 || idx >= t->size)
		return NULL;
	e = &t->ent[idx];
	if (atomic_load_explicit(&e->stag, memory_order_acquire) != stag)
		return NULL;
	atomic_fetch_add(&e->inflight, 1);
	if (atomic_load(&e->state) == UIW_MRE_VALID &&
	    atomic_load(&e->stag) == stag)
		return e;
	uiw_mr_put(t, e);
	return NULL;
}

void uiw_mr_put(struct uiw_mr_table *t, struct uiw_mr_entry *e)
{
	if (atomic_fetch_sub(&e->inflight, 1) == 1 &&
	    atomic_load(&e->state) == UIW_MRE_DYING) {
		pthread_mutex_lock(&t->lock);
		pthread_cond_broadcast(&t->idle);
		pthread_mutex_unlock(&t->lock);
	}
}

enum uiw_mr_check uiw_mr_get(struct uiw_mr_table *t, uint32_t stag,
			     const struct uiw_pd *pd, unsigned access,
			     uint64_t to, uint64_t len,
			     struct uiw_mr_entry **out)
{
	struct uiw_mr_entry *e = hold(t, stag);
	enum uiw_mr_check c;

	if (!e)
		return UIW_MRC_INVALID;
	c = range_check(e, pd, access, to, len);
	if (c != UIW_MRC_OK) {
		uiw_mr_put(t, e);
		return c;
	}
	*out = e;
	return UIW_MRC_OK;
}

enum uiw_mr_check uiw_mr_check(struct uiw_mr_table *t, uint32_t stag,
			       const struct uiw_pd *pd, unsigned access,
			       uint64_t to, uint64_t len)
{
	struct uiw_mr_entry *e;
	enum uiw_mr_check c = uiw_mr_get(t, stag, pd, access, to, len, &e);

	if (c == UIW_MRC_OK)
		uiw_mr_put(t, e);
	return c;
}

static enum uiw_mr_check invalidate(struct uiw_mr_table *t, uint32_t stag,
				     const struct uiw_pd *pd, bool remote)
{
	const unsigned remote_rights = UIW_ACCESS_REMOTE_WRITE |
				       UIW_ACCESS_REMOTE_READ |
				       UIW_ACCESS_REMOTE_ATOMIC;
	struct uiw_mr_entry *e = hold(t, stag);
	uint32_t valid = UIW_MRE_VALID;
	enum uiw_mr_check c = UIW_MRC_OK;

	if (!e)
		return UIW_MRC_INVALID;
	if (e->pd != pd)
		c = UIW_MRC_PD;
	else if (remote && (e->access & remote_rights) &&
		 atomic_load(&pd->qps) > 1)
		c = UIW_MRC_SHARED;
	else if (!atomic_compare_exchange_strong(&e->state, &valid,
						 UIW_MRE_INVALID))
		c = UIW_MRC_INVALID;
	uiw_mr_put(t, e);
	return c;
}

enum uiw_mr_check uiw_mr_invalidate(struct uiw_mr_table *t, uint32_t stag,
				    const struct uiw_pd *pd)
{
	return invalidate(t, stag, pd, false);
}

enum uiw_mr_check uiw_mr_invalidate_remote(struct uiw_mr_table *t,
					   uint32_t stag,
					   const struct uiw_pd *pd)
{
	return invalidate(t, stag, pd, true);
}

/* ---- Registration -------------------------------------------------------- */

struct uiw_mr *uiw_reg_mr(struct uiw_pd *pd, void *addr, size_t length,
			  unsigned access)
{
	const unsigned known = UIW_ACCESS_LOCAL_WRITE |
			       UIW_ACCESS_REMOTE_WRITE |
			       UIW_ACCESS_REMOTE_READ |
			       UIW_ACCESS_REMOTE_ATOMIC;
	struct uiw_device *dev;
	struct uiw_mr_table *t;
	struct uiw_mr_obj *obj;
	struct uiw_mr_entry *e = NULL;
	uint32_t idx = 0, i, key;

	if (!pd)
		return uiw_error_null(EINVAL, "reg_mr: no protection domain");
	if (access & ~known)
		return uiw_error_null(EINVAL, "reg_mr: unknown access flags "
				      "0x%x", access & ~known);
	/* As in verbs: remote write and atomics need local write too. */
	if ((access & (UIW_ACCESS_REMOTE_WRITE | UIW_ACCESS_REMOTE_ATOMIC)) &&
	    !(access & UIW_ACCESS_LOCAL_WRITE))
		return uiw_error_null(EINVAL, "reg_mr: remote write or atomic "
				      "access needs UIW_ACCESS_LOCAL_WRITE");
	if (!addr && length)
		return uiw_error_null(EINVAL, "reg_mr: NULL address");
	if ((uint64_t)length > UINT64_MAX - (uint64_t)(uintptr_t)addr)
		return uiw_error_null(EINVAL, "reg_mr: region wraps around "
				      "the address space");
	dev = pd->dev;
	t = &dev->mrt;
	obj = calloc(1, sizeof(*obj));
	if (!obj)
		return uiw_error_null(ENOMEM, "reg_mr: out of memory");

	pthread_mutex_lock(&t->lock);
	if (t->used + 1 >= t->size) {
		pthread_mutex_unlock(&t->lock);
		free(obj);
		return uiw_error_null(ENOMEM, "reg_mr: all %u STags in use",
				      t->size - 1);
	}
	/* A random free index, then a fresh random key for it. */
	i = 1 + (uint32_t)(rng_next(&t->rng) % (t->size - 1));
	for (;;) {
		if (atomic_load(&t->ent[i].state) == UIW_MRE_FREE) {
			idx = i;
			break;
		}
		if (++i >= t->size)
			i = 1;
	}
	e = &t->ent[idx];
	do
		key = (uint32_t)(rng_next(&t->rng) >> 56);
	while (key == e->last_key);
	e->last_key = (uint8_t)key;
	e->pd = pd;
	e->addr = (uint64_t)(uintptr_t)addr;
	e->length = length;
	e->access = access;
	e->obj = obj;
	t->used++;
	obj->dev = dev;
	obj->idx = idx;
	obj->mr.pd = pd;
	obj->mr.addr = addr;
	obj->mr.length = length;
	obj->mr.lkey = obj->mr.rkey = idx << 8 | key;
	obj->mr.access = access;
	atomic_store(&e->stag, obj->mr.lkey);
	atomic_store(&e->state, UIW_MRE_VALID);
	pthread_mutex_unlock(&t->lock);

	atomic_fetch_add(&pd->users, 1);
	pthread_mutex_lock(&dev->lock);
	dev->n_mr++;
	pthread_mutex_unlock(&dev->lock);
	UIW_DBG(3, "reg_mr %p+%zu access 0x%x stag 0x%08x", addr, length,
		access, obj->mr.lkey);
	return &obj->mr;
}

int uiw_dereg_mr(struct uiw_mr *mr)
{
	struct uiw_mr_obj *obj;
	struct uiw_device *dev;
	struct uiw_mr_table *t;
	struct uiw_mr_entry *e;

	if (!mr)
		return uiw_error(EINVAL, "dereg_mr: no region");
	obj = (struct uiw_mr_obj *)((char *)mr - offsetof(struct uiw_mr_obj,
							  mr));
	dev = obj->dev;
	t = &dev->mrt;
	e = &t->ent[obj->idx];
	if (e->obj != obj)
		return uiw_error(EINVAL, "dereg_mr: not a registered region");

	/* Revoke at once (RFC 5040 §8.1.1 rule 6), then wait until no
	 * octet is being placed into or sent from the region. */
	atomic_store(&e->state, UIW_MRE_DYING);
	pthread_mutex_lock(&t->lock);
	while (atomic_load(&e->inflight) != 0)
		pthread_cond_wait(&t->idle, &t->lock);
	atomic_store(&e->stag, 0);
	e->obj = NULL;
	e->pd = NULL;
	atomic_store(&e->state, UIW_MRE_FREE);
	t->used--;
	pthread_mutex_unlock(&t->lock);

	atomic_fetch_sub(&mr->pd->users, 1);
	pthread_mutex_lock(&dev->lock);
	dev->n_mr--;
	pthread_mutex_unlock(&dev->lock);
	free(obj);
	return 0;
}

/* One row per check result, one column per context (enum uiw_mre_ctx). */
static const uiw_err_t mr_errs[][3] = {
	[UIW_MRC_INVALID] = { UIW_E_DDP_T_INVALID_STAG,
			      UIW_E_RDMAP_INVALID_STAG,
			      UIW_E_RDMAP_INVALID_STAG },
	[UIW_MRC_PD]      = { UIW_E_DDP_T_STAG_NOT_ASSOC,
			      UIW_E_RDMAP_STAG_NOT_ASSOC,
			      UIW_E_RDMAP_PROT_CANT_INV },
	[UIW_MRC_ACCESS]  = { UIW_E_RDMAP_ACCESS, UIW_E_RDMAP_ACCESS,
			      UIW_E_RDMAP_INVALID_STAG },
	[UIW_MRC_WRAP]    = { UIW_E_DDP_T_TO_WRAP, UIW_E_RDMAP_TO_WRAP,
			      UIW_E_RDMAP_INVALID_STAG },
	[UIW_MRC_BOUNDS]  = { UIW_E_DDP_T_BASE_BOUNDS,
			      UIW_E_RDMAP_BASE_BOUNDS,
			      UIW_E_RDMAP_INVALID_STAG },
	[UIW_MRC_SHARED]  = { UIW_E_DDP_T_INVALID_STAG,
			      UIW_E_RDMAP_INVALID_STAG,
			      UIW_E_RDMAP_PROT_CANT_INV },
};

uiw_err_t uiw_mr_check_err(enum uiw_mr_check c, enum uiw_mre_ctx ctx)
{
	if ((unsigned)c >= sizeof(mr_errs) / sizeof(mr_errs[0]) ||
	    c == UIW_MRC_OK || (unsigned)ctx > UIW_MRE_INVALIDATE)
		c = UIW_MRC_INVALID;
	return mr_errs[c][ctx];
}
