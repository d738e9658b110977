/*
 * Send work requests as data: one row per opcode of enum uiw_wr_opcode
 * (uiwarp.h) says which RDMA messages it sends (RFC 5040 §4, RFC 7306
 * §4), how it is checked and recorded when posted, what starting it
 * takes, how its segments are built and how it completes.  qp.c
 * (posting, completions) and tx.c (starting, building) read the table;
 * adding an opcode touches the table (wr.c) and its handlers only.
 *
 * The handlers of RFC 5040's opcodes are in wr.c, those of RFC 7306
 * (atomics, Immediate Data) in atomic.c.  All run under the QP lock.
 */
#ifndef UIW_RNIC_WR_H
#define UIW_RNIC_WR_H

#include <stdbool.h>
#include <stdint.h>
#include <uiwarp/uiwarp.h>

struct uiw_qp;
struct uiw_qp_act;
struct uiw_sq_slot;

/* What a work request's SGEs are. */
enum uiw_wr_sgl {
	UIW_WR_SGL_NONE,     /* nothing: sg_list is ignored */
	UIW_WR_SGL_SOURCE,   /* the payload sent (may be inline) */
	UIW_WR_SGL_SINK,     /* written when the Response arrives: local
				write access, never inline */
};

/* What starting a work request came to. */
enum uiw_wr_start {
	UIW_WR_STALL,        /* it may not go yet (ORD, a fence) */
	UIW_WR_STARTED,      /* its segments follow (build) */
	UIW_WR_NOSEG,        /* done, or failed, without a segment */
};

#define UIW_WR_NO_OP 0xff   /* no RDMAP message */
#define UIW_WR_NO_QN 0xff   /* no untagged queue */

struct uiw_wr_row;

/* Builds the next segment of the current message (qp->msg, of slot s). */
typedef void uiw_wr_build_fn(struct uiw_qp *qp, const struct uiw_wr_row *w,
			     struct uiw_sq_slot *s);

struct uiw_wr_row {
	const char *name;
	/* RDMAP opcode of each message, without and with SE (the
	 * solicited flag): [0] the first, [1] one that follows in the
	 * same work request (Write with Immediate: its Immediate Data). */
	uint8_t op[2][2];
	bool tagged;         /* the first message is tagged */
	/* The untagged queue whose MSN the slot records (s->msn: a
	 * Terminate that copies the header of one of its messages names
	 * it), or UIW_WR_NO_QN. */
	uint8_t msn_qn;
	/* Counts against ORD (RFC 5040 §6.1, RFC 7306 §5.2) and completes
	 * once its Response is placed (RFC 5040 §5.5 rule 19, RFC 7306
	 * §5.4 rule 7). */
	bool ord;
	bool masked_ok;      /* UIW_SEND_ATOMIC_MASKED applies */
	/* Its sink is an RDMA Read's: the tagged buffer the peer's Read
	 * Response writes (RFC 5040 §4.4), which needs the QP's
	 * read_sink_access too (an atomic's result buffer does not). */
	bool read_sink;
	uint8_t sgl;         /* enum uiw_wr_sgl */
	uint8_t wc_opcode;   /* enum uiw_wc_opcode of its completion */
	/* Checks of this opcode beyond the common ones (state, flags, SGE
	 * count and registrations, sizes): 0 or uiw_error().  May be
	 * NULL. */
	int (*post_check)(struct uiw_qp *qp, const struct uiw_send_wr *wr);
	/* Records what else the opcode needs in the slot.  May be NULL. */
	void (*post_fill)(struct uiw_sq_slot *s, const struct uiw_send_wr *wr);
	/* Starts the WR at SQ counter ctr (after the common fence check):
	 * enum uiw_wr_start. */
	int (*start)(struct uiw_qp *qp, uint32_t ctr, struct uiw_qp_act *act);
	uiw_wr_build_fn *build;
};

/* The row of a send work request opcode, NULL for an unknown one. */
const struct uiw_wr_row *uiw_wr_row(int opcode);

/* The opcode of message k (0, 1) of the slot's row, with its SE. */
uint8_t uiw_wr_op(const struct uiw_wr_row *w, unsigned k,
		  const struct uiw_sq_slot *s);

/* ---- For the handlers ---------------------------------------------------- */

/* tx.c: an error while creating a message (RFC 5040 §7.1 case 1): the
 * WR at ctr fails with status and a Terminate goes instead. */
int uiw_wr_fail(struct uiw_qp *qp, uint32_t ctr, int status,
		const char *detail, struct uiw_qp_act *act);
/* wr.c: one segment of an RDMA Write (RFC 5040 §5.1): tagged, TO
 * advancing.  True when it was the Write's last. */
bool uiw_wr_write_seg(struct uiw_qp *qp, const struct uiw_wr_row *w,
		      struct uiw_sq_slot *s);
/* wr.c: the WR's last segment is built. */
void uiw_wr_built(struct uiw_qp *qp, struct uiw_sq_slot *s);
/* wr.c: starts an ORD operation (RFC 5040 §6.1; RFC 7306 §5.2: Atomic
 * Requests share ORD with Reads). */
int uiw_wr_start_ord(struct uiw_qp *qp, uint32_t ctr,
		     struct uiw_qp_act *act);
/* wr.c: starts a WR that sends from its SGEs: holds the source
 * regions (they stay registered while we send). */
int uiw_wr_start_source(struct uiw_qp *qp, uint32_t ctr,
			struct uiw_qp_act *act);

/* atomic.c (RFC 7306) */
int uiw_wr_atomic_check(struct uiw_qp *qp, const struct uiw_send_wr *wr);
void uiw_wr_atomic_fill(struct uiw_sq_slot *s, const struct uiw_send_wr *wr);
uiw_wr_build_fn uiw_wr_atomic_build;
int uiw_wr_imm_check(struct uiw_qp *qp, const struct uiw_send_wr *wr);
uiw_wr_build_fn uiw_wr_imm_build;
uiw_wr_build_fn uiw_wr_write_imm_build;

#endif
