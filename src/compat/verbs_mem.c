/*
 * The drop-in libibverbs.so.1: protection domains and memory regions.
 */
#include <errno.h>
#include <stdlib.h>

#include "verbs_priv.h"

/* Function names that verbs.h also defines as macros. */
#undef ibv_reg_mr
#undef ibv_reg_mr_iova

struct uiw_pd *uiw_compat_pd(struct ibv_pd *pd)
{
	return pd ? ((struct vc_pd *)pd)->upd : NULL;
}

struct ibv_pd *ibv_alloc_pd(struct ibv_context *context)
{
	struct vc_pd *p = calloc(1, sizeof(*p));

	if (!p) {
		errno = ENOMEM;
		return NULL;
	}
	p->upd = uiw_pd_alloc(vc_dev(context));
	if (!p->upd) {
		free(p);
		return vc_err_null(errno, "ibv_alloc_pd");
	}
	p->pd.context = context;
	return &p->pd;
}

int ibv_dealloc_pd(struct ibv_pd *pd)
{
	struct vc_pd *p = (struct vc_pd *)pd;
	int ret = uiw_pd_free(p->upd);

	if (ret < 0)
		return vc_err(ret, "ibv_dealloc_pd");
	free(p);
	return 0;
}

/*
 * Access flags: one row per verbs flag, what it becomes.  The optional
 * range (IBV_ACCESS_OPTIONAL_RANGE: relaxed ordering and later hints) is
 * masked before, as rdma-core 44 does where the device lacks them; the
 * hint IBV_ACCESS_HUGETLB means nothing here.
 */
static const struct {
	unsigned ibv;
	unsigned uiw;
	const char *unsupported;      /* non-NULL: refused */
} vc_access_rows[] = {
	{ IBV_ACCESS_LOCAL_WRITE, UIW_ACCESS_LOCAL_WRITE, NULL },
	{ IBV_ACCESS_REMOTE_WRITE, UIW_ACCESS_REMOTE_WRITE, NULL },
	{ IBV_ACCESS_REMOTE_READ, UIW_ACCESS_REMOTE_READ, NULL },
	{ IBV_ACCESS_REMOTE_ATOMIC, UIW_ACCESS_REMOTE_ATOMIC, NULL },
	{ IBV_ACCESS_MW_BIND, 0, "memory windows (IBV_ACCESS_MW_BIND)" },
	{ IBV_ACCESS_ZERO_BASED, 0, "zero-based MRs (IBV_ACCESS_ZERO_BASED)" },
	{ IBV_ACCESS_ON_DEMAND, 0, "on-demand paging (IBV_ACCESS_ON_DEMAND)" },
	{ IBV_ACCESS_HUGETLB, 0, NULL },
};

/* The uiw_ access of verbs access flags, or -1 with errno set. */
static int vc_access(unsigned access, unsigned *out)
{
	unsigned left = access & ~(unsigned)IBV_ACCESS_OPTIONAL_RANGE;
	size_t i;

	*out = 0;
	for (i = 0; i < sizeof(vc_access_rows) / sizeof(vc_access_rows[0]);
	     i++) {
		if (!(left & vc_access_rows[i].ibv))
			continue;
		if (vc_access_rows[i].unsupported) {
			uiw_compat_unsupported(vc_access_rows[i].unsupported);
			return -1;
		}
		*out |= vc_access_rows[i].uiw;
		left &= ~vc_access_rows[i].ibv;
	}
	if (left) {
		uiw_compat_log("ibv_reg_mr: unknown access flags 0x%x", left);
		errno = EINVAL;
		return -1;
	}
	/* The verbs rule (and the engine's): a region the peer writes is
	 * one we write too. */
	if ((*out & (UIW_ACCESS_REMOTE_WRITE | UIW_ACCESS_REMOTE_ATOMIC)) &&
	    !(*out & UIW_ACCESS_LOCAL_WRITE)) {
		uiw_compat_log("ibv_reg_mr: remote write or atomic access "
			       "needs IBV_ACCESS_LOCAL_WRITE");
		errno = EINVAL;
		return -1;
	}
	return 0;
}

struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t length,
				uint64_t iova, unsigned int access)
{
	struct vc_mr *m;
	unsigned ua;

	if (!pd) {
		errno = EINVAL;
		return NULL;
	}
	/* An STag's tagged offsets are the virtual addresses here (RFC 5040
	 * §2.1 leaves the choice to the RNIC): no other I/O virtual
	 * address. */
	if (iova != (uint64_t)(uintptr_t)addr) {
		uiw_compat_unsupported("an MR iova other than its address");
		return NULL;
	}
	if (vc_access(access, &ua) < 0)
		return NULL;
	m = calloc(1, sizeof(*m));
	if (!m) {
		errno = ENOMEM;
		return NULL;
	}
	m->umr = uiw_reg_mr(((struct vc_pd *)pd)->upd, addr, length, ua);
	if (!m->umr) {
		free(m);
		return vc_err_null(errno, "ibv_reg_mr");
	}
	m->mr.context = pd->context;
	m->mr.pd = pd;
	m->mr.addr = addr;
	m->mr.length = length;
	m->mr.handle = m->umr->lkey;
	m->mr.lkey = m->umr->lkey;
	m->mr.rkey = m->umr->rkey;
	return &m->mr;
}

struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t length,
			  int access)
{
	return ibv_reg_mr_iova2(pd, addr, length, (uint64_t)(uintptr_t)addr,
				(unsigned)access);
}

struct ibv_mr *ibv_reg_mr_iova(struct ibv_pd *pd, void *addr, size_t length,
			       uint64_t iova, int access)
{
	return ibv_reg_mr_iova2(pd, addr, length, iova, (unsigned)access);
}

int ibv_dereg_mr(struct ibv_mr *mr)
{
	struct vc_mr *m = (struct vc_mr *)mr;
	int ret = uiw_dereg_mr(m->umr);

	if (ret < 0)
		return vc_err(ret, "ibv_dereg_mr");
	free(m);
	return 0;
}
