/*
 * The Upper-Layer Binding of the tests' program (rrtest.x) and their
 * data patterns: see tirpc_util.h.
 */
#include <string.h>

#include "tirpc_util.h"

static size_t rrt_read_count(const struct uiw_rpcrdma_ddp_rule *r, XDR *x)
{
	rrt_read_args a;
	size_t n;

	(void)r;
	memset(&a, 0, sizeof(a));
	if (!xdr_rrt_read_args(x, &a))
		return 0;
	n = a.count;
	xdr_free((xdrproc_t)xdr_rrt_read_args, (char *)&a);
	return n;
}

static const struct uiw_rpcrdma_ddp_rule rrt_rules[] = {
	/* ECHO's tag (body 1) never, its data (body 2) from 64 octets */
	{ RRT_PROG, RRT_V1, RRTPROC_ECHO, UIW_RPCRDMA_ARGS, 2, 64, 0, NULL,
	  NULL },
	{ RRT_PROG, RRT_V1, RRTPROC_ECHO, UIW_RPCRDMA_RESULTS, 1, 64,
	  RRT_MAX, NULL, NULL },
	{ RRT_PROG, RRT_V1, RRTPROC_READ, UIW_RPCRDMA_RESULTS, 1, 64,
	  RRT_MAX, rrt_read_count, NULL },
};

const struct uiw_rpcrdma_ulb rrt_ulb = {
	.rules = rrt_rules,
	.nrules = sizeof(rrt_rules) / sizeof(rrt_rules[0]),
	.reply_max = RRT_MAX + 4096,    /* BLOB's Long Reply */
};

void rrt_fill(void *p, size_t n, unsigned seed)
{
	uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		b[i] = (uint8_t)((i >> 8) * 31 + i + seed);
}

bool rrt_check(const void *p, size_t n, unsigned seed)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		if (b[i] != (uint8_t)((i >> 8) * 31 + i + seed))
			return false;
	return true;
}


/* rrt_ulb's rules and uiw_rpcrdma_ulb_nfs()'s in one binding, as a
 * server of both programs on one listener needs. */
const struct uiw_rpcrdma_ulb *rrt_ulb_with_nfs(void)
{
	static struct uiw_rpcrdma_ddp_rule rules[16];
	static struct uiw_rpcrdma_ulb u;
	const struct uiw_rpcrdma_ulb *nfs = uiw_rpcrdma_ulb_nfs();
	size_t n = rrt_ulb.nrules;

	if (u.rules)
		return &u;
	if (n + nfs->nrules > sizeof(rules) / sizeof(rules[0]))
		return NULL;
	memcpy(rules, rrt_ulb.rules, n * sizeof(rules[0]));
	memcpy(rules + n, nfs->rules, nfs->nrules * sizeof(rules[0]));
	u.nrules = n + nfs->nrules;
	u.reply_max = rrt_ulb.reply_max;
	u.rules = rules;
	return &u;
}
