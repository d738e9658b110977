/*
 * The one table of protocol errors: each RFC 5040 §4.8 Terminate triple
 * with its name and the completion status a work request gets for it,
 * plus the name tables of the public enums (uiwarp.h).
 */
#include "err.h"

#include <stdio.h>
#include <uiwarp/uiwarp.h>

struct err_row {
	uiw_err_t err;
	const char *name;
	uint8_t loc;    /* enum uiw_wc_status when detected here */
	uint8_t rem;    /* enum uiw_wc_status when the peer reported it */
};

/*
 * Status rules:
 *  - protection errors (RDMAP etype 1, DDP tagged buffer errors): a
 *    local access check failed (LOC_PROT_ERR), or the peer refused our
 *    access (REM_ACCESS_ERR);
 *  - a message too long for the receive buffer, or an MO outside it:
 *    LOC_LEN_ERR here, REM_INV_REQ_ERR when the peer says so (as
 *    verbs report a responder's length error);
 *  - the peer sent what this RNIC cannot parse (versions, opcode):
 *    BAD_RESP_ERR here; an invalid request reported by the peer:
 *    REM_INV_REQ_ERR;
 *  - catastrophic and unspecified errors: LOC_QP_OP_ERR / REM_OP_ERR;
 *  - every LLP error ends the connection itself: FATAL_ERR.
 */
#define L_PROT  UIW_WC_LOC_PROT_ERR
#define L_LEN   UIW_WC_LOC_LEN_ERR
#define L_QP    UIW_WC_LOC_QP_OP_ERR
#define L_BAD   UIW_WC_BAD_RESP_ERR
#define R_ACC   UIW_WC_REM_ACCESS_ERR
#define R_INV   UIW_WC_REM_INV_REQ_ERR
#define R_OP    UIW_WC_REM_OP_ERR
#define FATAL   UIW_WC_FATAL_ERR

#define RP "RDMAP remote protection error: "
#define RO "RDMAP remote operation error: "
#define DT "DDP tagged buffer error: "
#define DU "DDP untagged buffer error: "
#define MP "MPA error: "

static const struct err_row err_table[] = {
	/* RFC 5040 §4.8 Figure 9 */
	{ UIW_E_RDMAP_LOCAL_CATA, "RDMAP local catastrophic error",
	  L_QP, R_OP },
	{ UIW_E_RDMAP_INVALID_STAG, RP "invalid STag", L_PROT, R_ACC },
	{ UIW_E_RDMAP_BASE_BOUNDS, RP "base or bounds violation",
	  L_PROT, R_ACC },
	{ UIW_E_RDMAP_ACCESS, RP "access rights violation", L_PROT, R_ACC },
	{ UIW_E_RDMAP_STAG_NOT_ASSOC,
	  RP "STag not associated with RDMAP stream", L_PROT, R_ACC },
	{ UIW_E_RDMAP_TO_WRAP, RP "TO wrap", L_PROT, R_ACC },
	{ UIW_E_RDMAP_PROT_CANT_INV, RP "STag cannot be invalidated",
	  L_PROT, R_ACC },
	{ UIW_E_RDMAP_PROT_UNSPEC, RP "unspecified error", L_PROT, R_ACC },
	{ UIW_E_RDMAP_INVALID_VERSION, RO "invalid RDMAP version",
	  L_BAD, R_INV },
	{ UIW_E_RDMAP_UNEXPECTED_OPCODE, RO "unexpected opcode", L_BAD, R_INV },
	{ UIW_E_RDMAP_CATA_STREAM,
	  RO "catastrophic error, localized to RDMAP stream", L_QP, R_OP },
	{ UIW_E_RDMAP_CATA_GLOBAL, RO "catastrophic error, global",
	  L_QP, R_OP },
	{ UIW_E_RDMAP_OP_CANT_INV, RO "STag cannot be invalidated",
	  L_QP, R_OP },
	{ UIW_E_RDMAP_OP_UNSPEC, RO "unspecified error", L_QP, R_OP },
	/* RFC 5041 §7.2 */
	{ UIW_E_DDP_LOCAL_CATA, "DDP local catastrophic error", L_QP, R_OP },
	{ UIW_E_DDP_T_INVALID_STAG, DT "invalid STag", L_PROT, R_ACC },
	{ UIW_E_DDP_T_BASE_BOUNDS, DT "base or bounds violation",
	  L_PROT, R_ACC },
	{ UIW_E_DDP_T_STAG_NOT_ASSOC, DT "STag not associated with DDP stream",
	  L_PROT, R_ACC },
	{ UIW_E_DDP_T_TO_WRAP, DT "TO wrap", L_PROT, R_ACC },
	{ UIW_E_DDP_T_INVALID_VERSION, DT "invalid DDP version",
	  L_BAD, R_INV },
	{ UIW_E_DDP_U_INVALID_QN, DU "invalid QN", L_QP, R_INV },
	{ UIW_E_DDP_U_MSN_NO_BUF, DU "invalid MSN, no buffer available",
	  L_QP, R_OP },
	{ UIW_E_DDP_U_MSN_RANGE, DU "invalid MSN, MSN range is not valid",
	  L_QP, R_INV },
	{ UIW_E_DDP_U_INVALID_MO, DU "invalid MO", L_LEN, R_INV },
	{ UIW_E_DDP_U_TOO_LONG,
	  DU "DDP message too long for available buffer", L_LEN, R_INV },
	{ UIW_E_DDP_U_INVALID_VERSION, DU "invalid DDP version",
	  L_BAD, R_INV },
	/* RFC 5044 §8, RFC 6581 §8 */
	{ UIW_E_MPA_CLOSED, MP "TCP connection closed, terminated or lost",
	  FATAL, FATAL },
	{ UIW_E_MPA_CRC, MP "CRC mismatch", FATAL, FATAL },
	{ UIW_E_MPA_MARKER, MP "marker and ULPDU length disagree",
	  FATAL, FATAL },
	{ UIW_E_MPA_INVALID_FRAME, MP "invalid MPA request or reply frame",
	  FATAL, FATAL },
	{ UIW_E_MPA_LOCAL_CATA, MP "local catastrophic error", FATAL, FATAL },
	{ UIW_E_MPA_INSUFFICIENT_IRD, MP "insufficient IRD resources",
	  FATAL, FATAL },
	{ UIW_E_MPA_NO_MATCHING_RTR, MP "no matching RTR option",
	  FATAL, FATAL },
};

#define N_ERRS (sizeof(err_table) / sizeof(err_table[0]))

/* RFC 5040 Figure 9 and RFC 5041 §7.2: a local catastrophic error has no
 * error code ("any value in this field is acceptable"). */
static uiw_err_t err_normalise(uiw_err_t e)
{
	if (UIW_ERR_LAYER(e) <= 1 && UIW_ERR_ETYPE(e) == 0)
		return UIW_ERR(UIW_ERR_LAYER(e), 0, 0);
	return e;
}

static const struct err_row *err_find(uiw_err_t e)
{
	size_t i;

	if (!(e & 0x10000u) || (e & ~0x1ffffu))
		return NULL;
	e = err_normalise(e);
	for (i = 0; i < N_ERRS; i++)
		if (err_table[i].err == e)
			return &err_table[i];
	return NULL;
}

bool uiw_err_known(uiw_err_t e)
{
	return err_find(e) != NULL;
}

const char *uiw_err_str(uiw_err_t e)
{
	static _Thread_local char buf[48];
	const struct err_row *r;

	if (e == UIW_OK)
		return "no error";
	r = err_find(e);
	if (r)
		return r->name;
	snprintf(buf, sizeof(buf), "layer %u etype %u code 0x%02x",
		 (unsigned)UIW_ERR_LAYER(e), (unsigned)UIW_ERR_ETYPE(e),
		 (unsigned)UIW_ERR_ECODE(e));
	return buf;
}

int uiw_err_wc_status(uiw_err_t e, int remote)
{
	const struct err_row *r;

	if (e == UIW_OK)
		return UIW_WC_SUCCESS;
	r = err_find(e);
	if (r)
		return remote ? r->rem : r->loc;
	/* Codes no RFC defines: judge by layer and error type. */
	switch (UIW_ERR_LAYER(e)) {
	case 0:
	case 1:
		if (UIW_ERR_ETYPE(e) == 1)   /* protection / tagged buffer */
			return remote ? UIW_WC_REM_ACCESS_ERR
				      : UIW_WC_LOC_PROT_ERR;
		return remote ? UIW_WC_REM_OP_ERR : UIW_WC_GENERAL_ERR;
	case 2:
		return UIW_WC_FATAL_ERR;
	default:
		return remote ? UIW_WC_REM_OP_ERR : UIW_WC_GENERAL_ERR;
	}
}

const char *uiw_term_cause_str(const struct uiw_term_cause *cause)
{
	if (!cause || cause->origin == UIW_TERM_NONE)
		return "no error";
	return uiw_err_str(UIW_ERR(cause->layer & 0xfu, cause->etype & 0xfu,
				   cause->ecode));
}

/* The names of a public enum's values (a table indexed by value). */
#define NAME_OF(names, v, unknown)					\
	((unsigned)(v) < sizeof(names) / sizeof((names)[0]) &&		\
	 (names)[(unsigned)(v)] ? (names)[(unsigned)(v)] : (unknown))

const char *uiw_wc_status_str(enum uiw_wc_status status)
{
	static const char *const names[] = {
		[UIW_WC_SUCCESS] = "success",
		[UIW_WC_LOC_LEN_ERR] = "local length error",
		[UIW_WC_LOC_QP_OP_ERR] = "local QP operation error",
		[UIW_WC_LOC_PROT_ERR] = "local protection error",
		[UIW_WC_WR_FLUSH_ERR] = "work request flushed error",
		[UIW_WC_BAD_RESP_ERR] = "bad response error",
		[UIW_WC_LOC_ACCESS_ERR] = "local access error",
		[UIW_WC_REM_INV_REQ_ERR] = "remote invalid request error",
		[UIW_WC_REM_ACCESS_ERR] = "remote access error",
		[UIW_WC_REM_OP_ERR] = "remote operation error",
		[UIW_WC_FATAL_ERR] = "fatal error",
		[UIW_WC_GENERAL_ERR] = "general error",
	};

	return NAME_OF(names, status, "unknown status");
}

const char *uiw_qp_state_str(enum uiw_qp_state state)
{
	static const char *const names[] = {
		/* RFC 5040 §6 spelling */
		[UIW_QPS_IDLE] = "Idle",
		[UIW_QPS_RTS] = "RTS",
		[UIW_QPS_CLOSING] = "Closing",
		[UIW_QPS_TERMINATE] = "Terminate",
		[UIW_QPS_ERROR] = "Error",
	};

	return NAME_OF(names, state, "unknown state");
}

const char *uiw_async_event_str(enum uiw_async_event_type type)
{
	static const char *const names[] = {
		[UIW_EVENT_QP_FATAL] = "QP fatal error",
		[UIW_EVENT_QP_ACCESS_ERR] = "QP access error",
		[UIW_EVENT_QP_LAST_WQE_REACHED] = "QP last WQE reached",
		[UIW_EVENT_SRQ_LIMIT_REACHED] = "SRQ limit reached",
		[UIW_EVENT_CQ_ERR] = "CQ error",
	};

	return NAME_OF(names, type, "unknown event");
}
