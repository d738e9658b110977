/*
 * Upper-Layer Binding rules (RFC 8166 §6), and RFC 8267's bindings for
 * NFS versions 3 and 4.
 */
#include "rr_ulb.h"

#include "rr_walk.h"

#include <string.h>

/* RFC 8166 §6.2 leaves the largest reply to the binding; a binding
 * that names none gets this. */
#define RR_ULB_REPLY_MAX_DEFAULT (1u << 20)

static bool rule_of(const struct uiw_rpcrdma_ddp_rule *r,
		    const struct uiw_rr_sel *s, enum uiw_rpcrdma_dir dir)
{
	return r->prog == s->prog && r->vers == s->vers &&
	       r->proc == s->proc && r->dir == dir;
}

const struct uiw_rpcrdma_ddp_rule *uiw_rr_ulb_rule(const struct uiw_rr_sel *s,
						   unsigned item)
{
	if (!s || !s->ulb || !s->ulb->rules)
		return NULL;
	for (size_t i = 0; i < s->ulb->nrules; i++) {
		const struct uiw_rpcrdma_ddp_rule *r = &s->ulb->rules[i];

		if (rule_of(r, s, s->dir) && !r->walk &&
		    (r->item == 0 || r->item == item))
			return r;
	}
	return NULL;
}

bool uiw_rr_ulb_any(const struct uiw_rr_sel *s)
{
	if (!s || !s->ulb || !s->ulb->rules)
		return false;
	for (size_t i = 0; i < s->ulb->nrules; i++)
		if (rule_of(&s->ulb->rules[i], s, s->dir))
			return true;
	return false;
}

bool uiw_rr_ulb_wants_args(const struct uiw_rr_sel *s)
{
	if (!s || !s->ulb || !s->ulb->rules)
		return false;
	for (size_t i = 0; i < s->ulb->nrules; i++) {
		const struct uiw_rpcrdma_ddp_rule *r = &s->ulb->rules[i];

		if (rule_of(r, s, UIW_RPCRDMA_RESULTS) && !r->walk &&
		    r->result_len)
			return true;
	}
	return false;
}

static size_t wchunk_len(const struct uiw_rpcrdma_ddp_rule *r,
			 const uint8_t *args, size_t args_len)
{
	size_t n = r->max_len;

	if (r->result_len) {
		XDR x;

		if (!args)
			return 0;
		xdrmem_create(&x, (char *)args, (u_int)args_len, XDR_DECODE);
		n = r->result_len(r, &x);
		XDR_DESTROY(&x);
		if (r->max_len && n > r->max_len)
			n = r->max_len;
	}
	return n;
}

unsigned uiw_rr_ulb_wchunks(const struct uiw_rr_sel *s, const uint8_t *args,
			    size_t args_len, size_t len[UIW_RR_MAX_WCHUNK])
{
	unsigned n = 0;

	if (!s || !s->ulb || !s->ulb->rules)
		return 0;
	/* RFC 8267 §6.4.1: the n-th Write chunk belongs to the n-th
	 * eligible result; so the chunks offered are a leading run of the
	 * rules, ending at the first one left inline. */
	for (size_t i = 0; i < s->ulb->nrules && n < UIW_RR_MAX_WCHUNK; i++) {
		const struct uiw_rpcrdma_ddp_rule *r = &s->ulb->rules[i];
		size_t l;

		if (!rule_of(r, s, UIW_RPCRDMA_RESULTS) || r->walk)
			continue;
		l = wchunk_len(r, args, args_len);
		if (l == 0 || l < r->min_len)
			break;
		len[n++] = l;
	}
	return n;
}

const struct uiw_rpcrdma_ddp_rule *
uiw_rr_ulb_walker(const struct uiw_rr_sel *s, enum uiw_rpcrdma_dir dir)
{
	if (!s || !s->ulb || !s->ulb->rules)
		return NULL;
	for (size_t i = 0; i < s->ulb->nrules; i++) {
		const struct uiw_rpcrdma_ddp_rule *r = &s->ulb->rules[i];

		if (rule_of(r, s, dir) && r->walk)
			return r;
	}
	return NULL;
}

unsigned uiw_rr_ulb_walk_wchunks(const struct uiw_rpcrdma_ddp_rule *r,
				 const struct uiw_rr_wslot *slots,
				 unsigned nslots, size_t len[UIW_RR_MAX_WCHUNK])
{
	unsigned n = 0;

	/* RFC 8267 §6.4.1: chunk k is slot k's; a slot left inline gets
	 * an empty Write chunk, so that the slots after it keep theirs,
	 * and empty chunks at the end are not offered at all */
	for (unsigned k = 0; k < nslots && k < UIW_RR_MAX_WCHUNK; k++) {
		size_t l = slots[k].len;

		if (r->max_len && l > r->max_len)
			l = r->max_len;
		len[k] = l < r->min_len ? 0 : l;
		if (len[k])
			n = k + 1;
	}
	return n;
}

size_t uiw_rr_ulb_reply_max(const struct uiw_rr_sel *s)
{
	const struct uiw_rpcrdma_ulb *u = s ? s->ulb : NULL;

	if (!u)
		return RR_ULB_REPLY_MAX_DEFAULT;
	for (size_t i = 0; u->replies && i < u->nreplies; i++) {
		const struct uiw_rpcrdma_reply_row *r = &u->replies[i];

		if (r->prog == s->prog && r->vers == s->vers &&
		    (r->proc == UIW_RPCRDMA_ANY_PROC || r->proc == s->proc))
			return r->max ? r->max : u->reply_max ? u->reply_max :
			       RR_ULB_REPLY_MAX_DEFAULT;
	}
	return u->reply_max ? u->reply_max : RR_ULB_REPLY_MAX_DEFAULT;
}

/* ---- RFC 8267 §4: NFS version 3 --------------------------------------- */

/* RFC 1813 §2.2, §3.3: the program, and the procedures with eligible
 * items. */
enum {
	NFS3_PROGRAM = 100003,
	NFS3_VERSION = 3,
	NFS3_READLINK = 5,
	NFS3_READ = 6,
	NFS3_WRITE = 7,
	NFS3_SYMLINK = 10,
	NFS3_FHSIZE = 64,               /* RFC 1813 §2.4 */
};

/* Below this, data and paths travel inline (a Write chunk or a Read
 * chunk costs a registration and an RDMA operation; RFC 8797's default
 * inline threshold is 4096). */
#define NFS3_DDP_MIN 1024
/* RFC 8267 §3: a READ's Write chunk must hold the whole result, which
 * is at most the count asked for; this bounds it all the same. */
#define NFS3_READ_MAX (64u << 20)
/* A READLINK path: POSIX's PATH_MAX on Linux. */
#define NFS3_PATH_MAX 4096

/* READ3args (RFC 1813 §3.3.6): file (nfs_fh3), offset, count. */
static size_t nfs3_read_count(const struct uiw_rpcrdma_ddp_rule *r, XDR *args)
{
	char fh[NFS3_FHSIZE];
	char *fhp = fh;
	u_int fhlen;
	uint64_t offset;
	uint32_t count;

	(void)r;
	if (!xdr_bytes(args, &fhp, &fhlen, NFS3_FHSIZE) ||
	    !xdr_uint64_t(args, &offset) || !xdr_uint32_t(args, &count))
		return 0;
	return count;
}

/*
 * The ordinals, from RFC 1813's XDR:
 *   READ3res:     READ3resok { post_op_attr; count3; bool; opaque data<> }
 *                 -> data is the first body (fattr3 has no opaque)
 *   WRITE3args:   nfs_fh3 file (1); offset; count; stable; opaque data<> (2)
 *   READLINK3res: READLINK3resok { post_op_attr; nfspath3 data } -> 1
 *   SYMLINK3args: diropargs3 { nfs_fh3 dir (1); filename3 name (2) };
 *                 symlinkdata3 { sattr3; nfspath3 symlink_data (3) }
 *
 * RFC 8267 §6, NFS version 4: COMPOUND is its one procedure with items
 * (RFC 7530 §16.2, RFC 5661 §16.2; NULL has none); they have no
 * ordinal, a walker over every operation finds them (rr_nfs4.c).
 * Sizes as version 3's: small items inline, a READ's Write chunk its
 * count, bounded.
 */
enum {
	NFS4_VERSION = 4,
	NFSPROC4_COMPOUND = 1,
};

static const struct uiw_rpcrdma_ddp_rule nfs_rules[] = {
	{ NFS3_PROGRAM, NFS3_VERSION, NFS3_READ, UIW_RPCRDMA_RESULTS, 1,
	  NFS3_DDP_MIN, NFS3_READ_MAX, nfs3_read_count, NULL },
	{ NFS3_PROGRAM, NFS3_VERSION, NFS3_WRITE, UIW_RPCRDMA_ARGS, 2,
	  NFS3_DDP_MIN, 0, NULL, NULL },
	{ NFS3_PROGRAM, NFS3_VERSION, NFS3_READLINK, UIW_RPCRDMA_RESULTS, 1,
	  NFS3_DDP_MIN, NFS3_PATH_MAX, NULL, NULL },
	{ NFS3_PROGRAM, NFS3_VERSION, NFS3_SYMLINK, UIW_RPCRDMA_ARGS, 3,
	  NFS3_DDP_MIN, 0, NULL, NULL },
	{ NFS3_PROGRAM, NFS4_VERSION, NFSPROC4_COMPOUND, UIW_RPCRDMA_ARGS, 0,
	  NFS3_DDP_MIN, 0, NULL, uiw_rr_nfs4_walk },
	{ NFS3_PROGRAM, NFS4_VERSION, NFSPROC4_COMPOUND, UIW_RPCRDMA_RESULTS,
	  0, NFS3_DDP_MIN, NFS3_READ_MAX, NULL, uiw_rr_nfs4_walk },
};

/*
 * RFC 8267 §3 leaves the Reply chunk to the client's estimate of the
 * reply.  NFS version 3's replies are bounded by their XDR (RFC 1813
 * §3.3) but READDIR's and READDIRPLUS's (as large as the count asked
 * for) and READLINK's (a path: by Write chunk, or inline): the largest
 * of the others, RENAME's two wcc_data or CREATE's handle and
 * attributes with the directory's wcc_data, is under 400 octets, and
 * READ's and WRITE's bulk is in chunks.  So those three keep the
 * default (a Reply chunk of 1 MiB above the inline threshold: a row of
 * max 0) and the rest get none: a Reply chunk offered with a READ
 * would also let a Responder send the data there besides the Write
 * chunk.
 */
enum { NFS3_READDIR = 16, NFS3_READDIRPLUS = 17 };
#define NFS3_SMALL_REPLY 1024

static const struct uiw_rpcrdma_reply_row nfs_replies[] = {
	{ NFS3_PROGRAM, NFS3_VERSION, NFS3_READLINK, 0 },
	{ NFS3_PROGRAM, NFS3_VERSION, NFS3_READDIR, 0 },
	{ NFS3_PROGRAM, NFS3_VERSION, NFS3_READDIRPLUS, 0 },
	{ NFS3_PROGRAM, NFS3_VERSION, UIW_RPCRDMA_ANY_PROC, NFS3_SMALL_REPLY },
};

static const struct uiw_rpcrdma_ulb nfs_ulb = {
	.rules = nfs_rules,
	.nrules = sizeof(nfs_rules) / sizeof(nfs_rules[0]),
	.reply_max = 0,
	.replies = nfs_replies,
	.nreplies = sizeof(nfs_replies) / sizeof(nfs_replies[0]),
};

const struct uiw_rpcrdma_ulb *uiw_rpcrdma_ulb_nfs(void)
{
	return &nfs_ulb;
}
