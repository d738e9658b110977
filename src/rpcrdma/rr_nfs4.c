/*
 * RFC 8267 §6: where NFS version 4's DDP-eligible items sit inside a
 * COMPOUND, found by walking its XDR (rr_walk.h).
 *
 * §6.1 names four items: WRITE4args' data, the linkdata of
 * createtype4's NF4LNK arm (CREATE), READ4resok's data and
 * READLINK4resok's link.  An operation's arguments and results carry
 * no length of their own, so reaching the k-th operation means
 * passing over every one before it: the table below has one row per
 * operation of minor versions 0 (RFC 7530 §16), 1 (RFC 5661 §18) and
 * 2 (RFC 7862 §15), saying how to pass over its arguments and its
 * results.  Most results are a union on nfsstat4 whose NFS4_OK arm
 * holds the op's own result ("ok" below) and whose other arms are
 * void; the few exceptions have an "other" function.
 *
 * §6.4.1's "READ operations" (READ, READLINK: a DDP-eligible result)
 * are the slots: the n-th Write chunk goes with the n-th of them in the
 * COMPOUND.  In the arguments each declares its slot with the size its
 * Write chunk must have (READ: the count it asks for; READLINK: see
 * NFS4_LINK_MAX); in the results each begins its slot before its
 * status, so that a READ that failed still takes its chunk (returned
 * unused).
 *
 * An operation the table does not know (a later minor version, a
 * private one, one numbered past the COMPOUND's minor version) ends
 * the walk: STOP, or END when it is the last of the array (nothing
 * follows it).
 */
#include "rr_walk.h"

#include <stdint.h>

/* RFC 7862 §15: the last minor version whose operations are below. */
#define NFS4_MINOR_MAX 2

/* RFC 7530 §2.2, RFC 5661 §3.2: sizes */
#define NFS4_FHSIZE 128
#define NFS4_OPAQUE_LIMIT 1024
#define STATEID 16              /* seqid, other[12] */
#define VERIFIER 8
#define SESSIONID 16
#define DEVICEID 16
#define NFSTIME 12              /* int64 seconds, uint32 nseconds */
#define CHANGE_INFO 20          /* bool, two changeid4 */
#define HYPER 8
#define WORD 4

/* A READLINK's link has no bound in the protocol (linktext4 is
 * opaque<>); a Requester must still size its Write chunk for the
 * largest (RFC 8166 §3.4.6).  POSIX's PATH_MAX on Linux, which is also
 * the page Linux's client reads a link into. */
#define NFS4_LINK_MAX 4096

enum {
	NFS4_OK = 0,
	NFS4ERR_TOOSMALL = 10005,
	NFS4ERR_DENIED = 10010,
	NFS4ERR_CLID_INUSE = 10017,
	NFS4ERR_LAYOUTTRYLATER = 10058,
	NFS4ERR_OFFLOAD_NO_REQS = 10094,
	OP_ILLEGAL = 10044,
	OP_LAST = 71,                   /* CLONE, RFC 7862 */
};

typedef struct uiw_rpcrdma_walk walk_t;
typedef bool (*x4_fn)(walk_t *w);

/* ---- XDR building blocks (RFC 4506) ------------------------------------ */

static bool skip(walk_t *w, size_t n)
{
	return uiw_rpcrdma_walk_skip(w, n);
}

static bool word(walk_t *w, uint32_t *v)
{
	return uiw_rpcrdma_walk_u32(w, v);
}

static bool opq(walk_t *w)
{
	return uiw_rpcrdma_walk_opaque(w, 0);
}

static bool opq_limit(walk_t *w)
{
	return uiw_rpcrdma_walk_opaque(w, NFS4_OPAQUE_LIMIT);
}

static bool item(walk_t *w)
{
	return uiw_rpcrdma_walk_item(w, 0);
}

/* A counted array of n fixed-size elements (at most max; 0: no
 * bound). */
static bool fixed_array(walk_t *w, size_t size, uint32_t max)
{
	uint32_t n;

	if (!word(w, &n) || (max && n > max) || n > SIZE_MAX / size)
		return false;
	return skip(w, (size_t)n * size);
}

/* A counted array of variable elements; each takes at least its first
 * word, so a count larger than the stream ends with the stream. */
static bool array(walk_t *w, uint32_t max, x4_fn elem)
{
	uint32_t n, i;

	if (!word(w, &n) || (max && n > max))
		return false;
	for (i = 0; i < n; i++)
		if (!elem(w))
			return false;
	return true;
}

/* An XDR optional (union switch (bool) { TRUE: n octets; FALSE: void }):
 * libtirpc's xdr_bool takes any value but 0 as TRUE. */
static bool opt_fixed(walk_t *w, size_t n)
{
	uint32_t b;

	return word(w, &b) && (!b || skip(w, n));
}

static bool bitmap(walk_t *w)
{
	return fixed_array(w, WORD, 0);
}

static bool fattr(walk_t *w)
{
	return bitmap(w) && opq(w);
}

static bool fh(walk_t *w)
{
	return uiw_rpcrdma_walk_opaque(w, NFS4_FHSIZE);
}

/* state_owner4: clientid4, opaque owner<NFS4_OPAQUE_LIMIT> */
static bool owner(walk_t *w)
{
	return skip(w, HYPER) && opq_limit(w);
}

/* netaddr4: string na_r_netid<>, string na_r_addr<> */
static bool netaddr(walk_t *w)
{
	return opq(w) && opq(w);
}

/* nfsace4: type, flag, access_mask, utf8str_mixed who */
static bool ace(walk_t *w)
{
	return skip(w, 3 * WORD) && opq(w);
}

static bool two_opq(walk_t *w)
{
	return opq(w) && opq(w);
}

static bool two_bitmaps(walk_t *w)
{
	return bitmap(w) && bitmap(w);
}

/* ---- unions and structures of more than one operation ------------------- */

/* LOCK4denied: offset, length, locktype, lock_owner4 */
static bool lock_denied(walk_t *w, uint32_t status)
{
	return status != NFS4ERR_DENIED ||
	       (skip(w, 2 * HYPER + WORD) && owner(w));
}

/* nfs_space_limit4 (no default arm) */
static bool space_limit(walk_t *w)
{
	uint32_t by;

	/* NFS_LIMIT_SIZE: uint64; NFS_LIMIT_BLOCKS: two uint32 */
	return word(w, &by) && (by == 1 || by == 2) && skip(w, HYPER);
}

/* open_delegation4 (RFC 5661 §18.16.1: NONE_EXT's why is new in 4.1) */
static bool delegation(walk_t *w)
{
	uint32_t t, why;

	if (!word(w, &t))
		return false;
	switch (t) {
	case 0:         /* OPEN_DELEGATE_NONE */
		return true;
	case 1:         /* READ: stateid, recall, permissions */
		return skip(w, STATEID + WORD) && ace(w);
	case 2:         /* WRITE: stateid, recall, space_limit, permissions */
		return skip(w, STATEID + WORD) && space_limit(w) && ace(w);
	case 3:         /* NONE_EXT: WND4_CONTENTION, _RESOURCE carry a bool */
		return word(w, &why) && (why != 1 && why != 2 ? true :
					 skip(w, WORD));
	default:
		return false;
	}
}

/* secinfo4: RPCSEC_GSS (6) carries rpcsec_gss_info; the rest void */
static bool secinfo(walk_t *w)
{
	uint32_t flavor;

	return word(w, &flavor) &&
	       (flavor != 6 || (opq(w) && skip(w, 2 * WORD)));
}

static bool secinfo_list(walk_t *w)
{
	return array(w, 0, secinfo);
}

/* callback_sec_parms4 (no default arm) */
static bool cb_sec_parms(walk_t *w)
{
	uint32_t flavor;

	if (!word(w, &flavor))
		return false;
	switch (flavor) {
	case 0:         /* AUTH_NONE */
		return true;
	case 1:         /* AUTH_SYS: RFC 5531 §14's authsys_parms */
		return skip(w, WORD) && uiw_rpcrdma_walk_opaque(w, 255) &&
		       skip(w, 2 * WORD) && fixed_array(w, WORD, 16);
	case 6:         /* RPCSEC_GSS: service, two handles */
		return skip(w, WORD) && two_opq(w);
	default:
		return false;
	}
}

/* channel_attrs4: six count4, ca_rdma_ird<1> */
static bool channel_attrs(walk_t *w)
{
	return skip(w, 6 * WORD) && fixed_array(w, WORD, 1);
}

/* nfs_impl_id4: domain, name, date */
static bool impl_id(walk_t *w)
{
	return two_opq(w) && skip(w, NFSTIME);
}

/* layout4: offset, length, iomode, layout_content4 (type, body) */
static bool layout(walk_t *w)
{
	return skip(w, 2 * HYPER + 2 * WORD) && opq(w);
}

/* netloc4 (no default arm) */
static bool netloc(walk_t *w)
{
	uint32_t t;

	if (!word(w, &t))
		return false;
	if (t == 1 || t == 2)           /* NL4_NAME, NL4_URL */
		return opq(w);
	return t == 3 && netaddr(w);    /* NL4_NETADDR */
}

/* write_response4: wr_callback_id<1>, count, committed, verifier */
static bool write_response(walk_t *w)
{
	return fixed_array(w, STATEID, 1) && skip(w, HYPER + WORD + VERIFIER);
}

/* ---- arguments and results, by operation ------------------------------- */

/* CREATE4args: createtype4 objtype, component4 objname, fattr4 */
static bool create_args(walk_t *w)
{
	uint32_t type;

	if (!word(w, &type))
		return false;
	if (type == 5) {                /* NF4LNK: RFC 8267 §6.1 */
		if (!item(w))
			return false;
	} else if (type == 3 || type == 4) {    /* NF4BLK, NF4CHR */
		if (!skip(w, 2 * WORD))
			return false;
	}
	return opq(w) && fattr(w);
}

static bool create_ok(walk_t *w)
{
	return bitmap(w);
}

/* locker4 */
static bool lock_args(walk_t *w)
{
	uint32_t new_owner;

	if (!word(w, &new_owner))
		return false;
	if (new_owner)  /* open_seqid, open_stateid, lock_seqid, owner */
		return skip(w, WORD + STATEID + WORD) && owner(w);
	return skip(w, STATEID + WORD);
}

/* OPEN4args after seqid, share_access, share_deny */
static bool open_args(walk_t *w)
{
	uint32_t t, mode, claim;

	if (!owner(w) || !word(w, &t))
		return false;
	if (t == 1) {   /* OPEN4_CREATE: createhow4 (no default arm) */
		if (!word(w, &mode))
			return false;
		if (mode == 0 || mode == 1) {   /* UNCHECKED4, GUARDED4 */
			if (!fattr(w))
				return false;
		} else if (mode == 2) {         /* EXCLUSIVE4 */
			if (!skip(w, VERIFIER))
				return false;
		} else if (mode != 3 || !skip(w, VERIFIER) || !fattr(w)) {
			return false;           /* EXCLUSIVE4_1 */
		}
	}
	/* open_claim4 (no default arm) */
	if (!word(w, &claim))
		return false;
	switch (claim) {
	case 0:         /* CLAIM_NULL: file */
	case 3:         /* CLAIM_DELEGATE_PREV: file */
		return opq(w);
	case 1:         /* CLAIM_PREVIOUS: delegate_type */
		return skip(w, WORD);
	case 2:         /* CLAIM_DELEGATE_CUR: stateid, file */
		return skip(w, STATEID) && opq(w);
	case 4:         /* CLAIM_FH */
	case 6:         /* CLAIM_DELEG_PREV_FH */
		return true;
	case 5:         /* CLAIM_DELEG_CUR_FH: stateid */
		return skip(w, STATEID);
	default:
		return false;
	}
}

/* OPEN4resok after stateid, cinfo, rflags */
static bool open_ok(walk_t *w)
{
	return bitmap(w) && delegation(w);
}

/* READ4args after stateid and offset: the count asks for a Write
 * chunk that large (RFC 8267 §6.4.1, RFC 8166 §3.4.6) */
static bool read_args(walk_t *w)
{
	uint32_t count;

	return word(w, &count) && uiw_rpcrdma_walk_slot(w, count);
}

static bool readlink_args(walk_t *w)
{
	return uiw_rpcrdma_walk_slot(w, NFS4_LINK_MAX);
}

/* READDIR4resok: cookieverf, dirlist4 (entry4 list, eof) */
static bool readdir_ok(walk_t *w)
{
	uint32_t more;

	if (!skip(w, VERIFIER))
		return false;
	/* entry4's nextentry is an XDR optional: walked as a loop */
	for (;;) {
		if (!word(w, &more))
			return false;
		if (!more)
			break;
		if (!skip(w, HYPER) || !opq(w) || !fattr(w))
			return false;
	}
	return skip(w, WORD);
}

static bool rename_args(walk_t *w)
{
	return two_opq(w);
}

static bool setattr_other(walk_t *w, uint32_t status)
{
	(void)status;
	return bitmap(w);   /* SETATTR4res: attrsset whatever the status */
}

/* SETCLIENTID4args: nfs_client_id4, cb_client4, callback_ident */
static bool setclientid_args(walk_t *w)
{
	return skip(w, VERIFIER) && opq_limit(w) && skip(w, WORD) &&
	       netaddr(w) && skip(w, WORD);
}

static bool setclientid_other(walk_t *w, uint32_t status)
{
	return status != NFS4ERR_CLID_INUSE || netaddr(w);
}

static bool backchannel_args(walk_t *w)
{
	return array(w, 0, cb_sec_parms);
}

/* state_protect4_a (no default arm) */
static bool exchange_id_args(walk_t *w)
{
	uint32_t how;

	if (!skip(w, VERIFIER) || !opq_limit(w) || !skip(w, WORD) ||
	    !word(w, &how))
		return false;
	if (how == 1) {         /* SP4_MACH_CRED */
		if (!two_bitmaps(w))
			return false;
	} else if (how == 2) {  /* SP4_SSV: ssv_sp_parms4 */
		if (!two_bitmaps(w) || !array(w, 0, opq) ||
		    !array(w, 0, opq) || !skip(w, 2 * WORD))
			return false;
	} else if (how != 0) {
		return false;
	}
	return array(w, 1, impl_id);
}

/* EXCHANGE_ID4resok after clientid, sequenceid, flags:
 * state_protect4_r (no default arm), server_owner4, scope, impl_id */
static bool exchange_id_ok(walk_t *w)
{
	uint32_t how;

	if (!word(w, &how))
		return false;
	if (how == 1) {
		if (!two_bitmaps(w))
			return false;
	} else if (how == 2) {  /* ssv_prot_info4 */
		if (!two_bitmaps(w) || !skip(w, 4 * WORD) || !array(w, 0, opq))
			return false;
	} else if (how != 0) {
		return false;
	}
	return skip(w, HYPER) && opq_limit(w) && opq_limit(w) &&
	       array(w, 1, impl_id);
}

/* CREATE_SESSION4args after clientid, sequence, flags */
static bool create_session_args(walk_t *w)
{
	return channel_attrs(w) && channel_attrs(w) && skip(w, WORD) &&
	       array(w, 0, cb_sec_parms);
}

static bool two_channel_attrs(walk_t *w)
{
	return channel_attrs(w) && channel_attrs(w);
}

/* GET_DIR_DELEGATION4args after gdda_signal_deleg_avail */
static bool get_dir_deleg_args(walk_t *w)
{
	return bitmap(w) && skip(w, 2 * NFSTIME) && two_bitmaps(w);
}

/* GET_DIR_DELEGATION4res_non_fatal (no default arm) */
static bool get_dir_deleg_ok(walk_t *w)
{
	uint32_t s;

	if (!word(w, &s))
		return false;
	if (s == 0)     /* GDD4_OK: cookieverf, stateid, three bitmaps */
		return skip(w, VERIFIER + STATEID) && two_bitmaps(w) &&
		       bitmap(w);
	return s == 1 && skip(w, WORD);     /* GDD4_UNAVAIL: a bool */
}

/* GETDEVICEINFO4resok after da_layout_type: da_addr_body, notification */
static bool getdeviceinfo_ok(walk_t *w)
{
	return opq(w) && bitmap(w);
}

static bool getdeviceinfo_other(walk_t *w, uint32_t status)
{
	return status != NFS4ERR_TOOSMALL || skip(w, WORD);
}

static bool getdevicelist_ok(walk_t *w)
{
	return fixed_array(w, DEVICEID, 0) && skip(w, WORD);
}

/* layoutupdate4: type, body (the end of LAYOUTSTATS4args too) */
static bool layoutupdate(walk_t *w)
{
	return skip(w, WORD) && opq(w);
}

/* LAYOUTCOMMIT4args after offset, length, reclaim, stateid:
 * newoffset4, newtime4, layoutupdate4 */
static bool layoutcommit_args(walk_t *w)
{
	return opt_fixed(w, HYPER) && opt_fixed(w, NFSTIME) &&
	       layoutupdate(w);
}

static bool layoutcommit_ok(walk_t *w)
{
	return opt_fixed(w, HYPER);         /* newsize4 */
}

static bool layoutget_ok(walk_t *w)
{
	return array(w, 0, layout);
}

static bool layoutget_other(walk_t *w, uint32_t status)
{
	return status != NFS4ERR_LAYOUTTRYLATER || skip(w, WORD);
}

/* layoutreturn4: LAYOUTRETURN4_FILE carries layoutreturn_file4 */
static bool layoutreturn_args(walk_t *w)
{
	uint32_t t;

	return word(w, &t) &&
	       (t != 1 || (skip(w, 2 * HYPER + STATEID) && opq(w)));
}

static bool layoutreturn_ok(walk_t *w)
{
	return opt_fixed(w, STATEID);       /* layoutreturn_stateid */
}

static bool test_stateid_args(walk_t *w)
{
	return fixed_array(w, STATEID, 0);
}

/* deleg_claim4 (no default arm) */
static bool want_delegation_args(walk_t *w)
{
	uint32_t claim;

	if (!word(w, &claim))
		return false;
	if (claim == 4 || claim == 6)   /* CLAIM_FH, CLAIM_DELEG_PREV_FH */
		return true;
	return claim == 1 && skip(w, WORD);     /* CLAIM_PREVIOUS */
}

static bool netloc_list(walk_t *w)
{
	return array(w, 0, netloc);
}

static bool copy_ok(walk_t *w)
{
	return write_response(w) && skip(w, 2 * WORD);
}

static bool copy_other(walk_t *w, uint32_t status)
{
	/* copy_requirements4: two bools */
	return status != NFS4ERR_OFFLOAD_NO_REQS || skip(w, 2 * WORD);
}

static bool layouterror_args(walk_t *w)
{
	return fixed_array(w, DEVICEID + 2 * WORD, 0);  /* device_error4 */
}

static bool offload_status_ok(walk_t *w)
{
	return fixed_array(w, WORD, 1);
}

/* read_plus_content: DATA carries data4 (offset, opaque d_data<>, not
 * DDP-eligible: RFC 8267 §6.1 names READ's alone), HOLE data_info4 */
static bool read_plus_content(walk_t *w)
{
	uint32_t c;

	if (!word(w, &c))
		return false;
	if (c == 0)
		return skip(w, HYPER) && opq(w);
	return c != 1 || skip(w, 2 * HYPER);
}

static bool read_plus_ok(walk_t *w)
{
	return array(w, 0, read_plus_content);
}

/* ---- the operations ---------------------------------------------------- */

/*
 * One row per operation.  Arguments: args_len octets, then args().
 * Results: the status; NFS4_OK is followed by ok_len octets, then
 * ok(); another status by other(status).  NULL: nothing.  slot: a
 * "READ operation" of RFC 8267 §6.4.1 (its arguments declare the slot
 * themselves, with the size of its Write chunk).
 */
struct nfs4_op {
	uint32_t op;
	uint8_t minor;
	bool slot;
	uint16_t args_len;
	x4_fn args;
	uint16_t ok_len;
	x4_fn ok;
	bool (*other)(walk_t *w, uint32_t status);
};

#define OP(num, mv, alen, afn, olen, ofn) \
	[num] = { num, mv, false, alen, afn, olen, ofn, NULL }
#define OPX(num, mv, alen, afn, olen, ofn, other) \
	[num] = { num, mv, false, alen, afn, olen, ofn, other }

static const struct nfs4_op nfs4_ops[OP_LAST + 1] = {
	/* RFC 7530 §16: minor version 0 */
	OP(3, 0, WORD, NULL, 2 * WORD, NULL),                   /* ACCESS */
	OP(4, 0, WORD + STATEID, NULL, STATEID, NULL),          /* CLOSE */
	OP(5, 0, HYPER + WORD, NULL, VERIFIER, NULL),           /* COMMIT */
	OP(6, 0, 0, create_args, CHANGE_INFO, create_ok),       /* CREATE */
	OP(7, 0, HYPER, NULL, 0, NULL),                         /* DELEGPURGE */
	OP(8, 0, STATEID, NULL, 0, NULL),                       /* DELEGRETURN */
	OP(9, 0, 0, bitmap, 0, fattr),                          /* GETATTR */
	OP(10, 0, 0, NULL, 0, fh),                              /* GETFH */
	OP(11, 0, 0, opq, CHANGE_INFO, NULL),                   /* LINK */
	OPX(12, 0, 2 * WORD + 2 * HYPER, lock_args, STATEID, NULL,
	    lock_denied),                                       /* LOCK */
	OPX(13, 0, WORD + 2 * HYPER, owner, 0, NULL,
	    lock_denied),                                       /* LOCKT */
	OP(14, 0, 2 * WORD + STATEID + 2 * HYPER, NULL, STATEID,
	   NULL),                                               /* LOCKU */
	OP(15, 0, 0, opq, 0, NULL),                             /* LOOKUP */
	OP(16, 0, 0, NULL, 0, NULL),                            /* LOOKUPP */
	OP(17, 0, 0, fattr, 0, NULL),                           /* NVERIFY */
	OP(18, 0, 3 * WORD, open_args, STATEID + CHANGE_INFO + WORD,
	   open_ok),                                            /* OPEN */
	OP(19, 0, WORD, NULL, 0, NULL),                         /* OPENATTR */
	OP(20, 0, STATEID + WORD, NULL, STATEID, NULL),         /* OPEN_CONFIRM */
	OP(21, 0, STATEID + 3 * WORD, NULL, STATEID, NULL),     /* OPEN_DOWNGRADE */
	OP(22, 0, 0, fh, 0, NULL),                              /* PUTFH */
	OP(23, 0, 0, NULL, 0, NULL),                            /* PUTPUBFH */
	OP(24, 0, 0, NULL, 0, NULL),                            /* PUTROOTFH */
	[25] = { 25, 0, true, STATEID + HYPER, read_args, WORD, item,
		 NULL },                                        /* READ */
	OP(26, 0, 2 * HYPER + 2 * WORD, bitmap, 0, readdir_ok), /* READDIR */
	[27] = { 27, 0, true, 0, readlink_args, 0, item, NULL },/* READLINK */
	OP(28, 0, 0, opq, CHANGE_INFO, NULL),                   /* REMOVE */
	OP(29, 0, 0, rename_args, 2 * CHANGE_INFO, NULL),       /* RENAME */
	OP(30, 0, HYPER, NULL, 0, NULL),                        /* RENEW */
	OP(31, 0, 0, NULL, 0, NULL),                            /* RESTOREFH */
	OP(32, 0, 0, NULL, 0, NULL),                            /* SAVEFH */
	OP(33, 0, 0, opq, 0, secinfo_list),                     /* SECINFO */
	OPX(34, 0, STATEID, fattr, 0, bitmap, setattr_other),   /* SETATTR */
	OPX(35, 0, 0, setclientid_args, HYPER + VERIFIER, NULL,
	    setclientid_other),                                 /* SETCLIENTID */
	OP(36, 0, HYPER + VERIFIER, NULL, 0, NULL),             /* SETCLIENTID_CONFIRM */
	OP(37, 0, 0, fattr, 0, NULL),                           /* VERIFY */
	OP(38, 0, STATEID + HYPER + WORD, item, 2 * WORD + VERIFIER,
	   NULL),                                               /* WRITE */
	OP(39, 0, 0, owner, 0, NULL),                           /* RELEASE_LOCKOWNER */
	/* RFC 5661 §18: minor version 1 */
	OP(40, 1, WORD, backchannel_args, 0, NULL),             /* BACKCHANNEL_CTL */
	OP(41, 1, SESSIONID + 2 * WORD, NULL, SESSIONID + 2 * WORD,
	   NULL),                                               /* BIND_CONN_TO_SESSION */
	OP(42, 1, 0, exchange_id_args, HYPER + 2 * WORD,
	   exchange_id_ok),                                     /* EXCHANGE_ID */
	OP(43, 1, HYPER + 2 * WORD, create_session_args,
	   SESSIONID + 2 * WORD, two_channel_attrs),            /* CREATE_SESSION */
	OP(44, 1, SESSIONID, NULL, 0, NULL),                    /* DESTROY_SESSION */
	OP(45, 1, STATEID, NULL, 0, NULL),                      /* FREE_STATEID */
	OP(46, 1, WORD, get_dir_deleg_args, 0, get_dir_deleg_ok), /* GET_DIR_DELEGATION */
	OPX(47, 1, DEVICEID + 2 * WORD, bitmap, WORD, getdeviceinfo_ok,
	    getdeviceinfo_other),                               /* GETDEVICEINFO */
	OP(48, 1, 2 * WORD + HYPER + VERIFIER, NULL, HYPER + VERIFIER,
	   getdevicelist_ok),                                   /* GETDEVICELIST */
	OP(49, 1, 2 * HYPER + WORD + STATEID, layoutcommit_args, 0,
	   layoutcommit_ok),                                    /* LAYOUTCOMMIT */
	OPX(50, 1, WORD * 3 + 3 * HYPER + STATEID + WORD, NULL,
	    WORD + STATEID, layoutget_ok, layoutget_other),     /* LAYOUTGET */
	OP(51, 1, 3 * WORD, layoutreturn_args, 0, layoutreturn_ok), /* LAYOUTRETURN */
	OP(52, 1, WORD, NULL, 0, secinfo_list),                 /* SECINFO_NO_NAME */
	OP(53, 1, SESSIONID + 3 * WORD + WORD, NULL,
	   SESSIONID + 5 * WORD, NULL),                         /* SEQUENCE */
	OP(54, 1, 0, two_opq, 0, opq),                          /* SET_SSV */
	/* TEST_STATEID4resok: nfsstat4<>, laid out as a bitmap4 */
	OP(55, 1, 0, test_stateid_args, 0, bitmap),             /* TEST_STATEID */
	OP(56, 1, WORD, want_delegation_args, 0, delegation),   /* WANT_DELEGATION */
	OP(57, 1, HYPER, NULL, 0, NULL),                        /* DESTROY_CLIENTID */
	OP(58, 1, WORD, NULL, 0, NULL),                         /* RECLAIM_COMPLETE */
	/* RFC 7862 §15: minor version 2 */
	OP(59, 2, STATEID + 2 * HYPER, NULL, 0, NULL),          /* ALLOCATE */
	OPX(60, 2, 2 * STATEID + 3 * HYPER + 2 * WORD, netloc_list, 0,
	    copy_ok, copy_other),                               /* COPY */
	OP(61, 2, STATEID, netloc, NFSTIME + STATEID,
	   netloc_list),                                     /* COPY_NOTIFY */
	OP(62, 2, STATEID + 2 * HYPER, NULL, 0, NULL),          /* DEALLOCATE */
	OP(63, 2, STATEID + 2 * HYPER, bitmap, 0, bitmap),      /* IO_ADVISE */
	OP(64, 2, 2 * HYPER + STATEID, layouterror_args, 0,
	   NULL),                                               /* LAYOUTERROR */
	OP(65, 2, 2 * HYPER + STATEID + 4 * HYPER + DEVICEID,
	   layoutupdate, 0, NULL),                              /* LAYOUTSTATS */
	OP(66, 2, STATEID, NULL, 0, NULL),                      /* OFFLOAD_CANCEL */
	OP(67, 2, STATEID, NULL, HYPER, offload_status_ok),     /* OFFLOAD_STATUS */
	OP(68, 2, STATEID + HYPER + WORD, NULL, WORD,
	   read_plus_ok),                                       /* READ_PLUS */
	OP(69, 2, STATEID + HYPER + WORD, NULL, WORD + HYPER,
	   NULL),                                               /* SEEK */
	OP(70, 2, STATEID + WORD + 5 * HYPER + WORD, opq, 0,
	   write_response),                                     /* WRITE_SAME */
	OP(71, 2, 2 * STATEID + 3 * HYPER, NULL, 0, NULL),      /* CLONE */
};

/* RFC 5661 §18.38 (RFC 7530 §16.37): the result of an operation number
 * the server does not know; it has no arguments. */
static const struct nfs4_op nfs4_illegal = { OP_ILLEGAL, 0, false, 0, NULL,
					     0, NULL, NULL };

static const struct nfs4_op *op_row(uint32_t op, uint32_t minor)
{
	const struct nfs4_op *o;

	if (op == OP_ILLEGAL)
		return &nfs4_illegal;
	if (op == 0 || op > OP_LAST || nfs4_ops[op].op != op)
		return NULL;
	o = &nfs4_ops[op];
	return o->minor <= minor ? o : NULL;
}

static bool walk_args(walk_t *w, const struct nfs4_op *o)
{
	return skip(w, o->args_len) && (!o->args || o->args(w));
}

static bool walk_res(walk_t *w, const struct nfs4_op *o)
{
	uint32_t status;

	if (o->slot && !uiw_rpcrdma_walk_slot(w, 0))
		return false;
	if (!word(w, &status))
		return false;
	if (status != NFS4_OK)
		return !o->other || o->other(w, status);
	return skip(w, o->ok_len) && (!o->ok || o->ok(w));
}

/*
 * COMPOUND4args: tag, minorversion, argarray<>; COMPOUND4res: status,
 * tag, resarray<>.  A result names its operation as an argument does,
 * and comes in the arguments' order (RFC 5661 §16.2.3), so the n-th
 * READ or READLINK result is the n-th of the arguments.  The results
 * say no minor version: they are walked with every row.
 */
enum uiw_rpcrdma_walk_end uiw_rr_nfs4_walk(const struct uiw_rpcrdma_ddp_rule *r,
					   struct uiw_rpcrdma_walk *w)
{
	bool res = uiw_rpcrdma_walk_dir(w) == UIW_RPCRDMA_RESULTS;
	uint32_t minor = NFS4_MINOR_MAX, n, i, op;

	(void)r;
	if (res && !word(w, NULL))
		return UIW_RPCRDMA_WALK_STOP;
	if (!opq(w))
		return UIW_RPCRDMA_WALK_STOP;
	/* a minor version past ours: NFS4ERR_MINOR_VERS_MISMATCH, no
	 * results (RFC 5661 §16.2.3) */
	if (!res && (!word(w, &minor) || minor > NFS4_MINOR_MAX))
		return UIW_RPCRDMA_WALK_STOP;
	if (!word(w, &n))
		return UIW_RPCRDMA_WALK_STOP;
	for (i = 0; i < n; i++) {
		const struct nfs4_op *o;

		if (!word(w, &op))
			return UIW_RPCRDMA_WALK_STOP;
		o = op_row(op, minor);
		if (!o)
			return i + 1 == n ? UIW_RPCRDMA_WALK_END :
					    UIW_RPCRDMA_WALK_STOP;
		if (!(res ? walk_res(w, o) : walk_args(w, o)))
			return UIW_RPCRDMA_WALK_STOP;
	}
	return UIW_RPCRDMA_WALK_END;
}
