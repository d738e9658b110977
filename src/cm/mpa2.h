/*
 * RFC 6581 enhanced connection establishment (MPA revision 2): the
 * decisions of both sides as pure functions of the frames and the local
 * parameters.  No I/O and no allocation: the connection manager moves
 * the octets, these say what they mean, and unit tests can walk every
 * rule.
 */
#ifndef UIW_CM_MPA2_H
#define UIW_CM_MPA2_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "../wire/err.h"
#include "../wire/mpa.h"

/* This side of the negotiation. */
struct uiw_mpa2_local {
	uint32_t ird, ord;      /* initial local values, 1..max_ird/max_ord */
	bool ird_manual;        /* initiator: send 0x3FFF for IRD ... */
	bool ord_manual;        /* ... for ORD (RFC 6581 §9.1, all ones) */
	uint32_t max_ird;       /* how far IRD may be raised */
	bool strict;            /* ird/ord are requirements */
	bool p2p;               /* initiator: ask for peer-to-peer mode */
	uint8_t rtr;            /* UIW_RTR_* this side supports (nonzero) */
};

/* What a side does after the exchange. */
struct uiw_mpa2_out {
	uiw_err_t err;          /* UIW_OK; otherwise see the functions */
	const char *why;        /* a sentence for the log when err is set */
	uint32_t ird, ord;      /* the values this side's QP uses */
	bool p2p;               /* peer-to-peer mode */
	/* Initiator: the one RTR type it sends (UIW_RTR_*), 0 without p2p.
	 * Responder: the types it accepts (the flags of its Reply). */
	uint8_t rtr;
	struct uiw_mpa_v2 field;   /* responder: the field of its Reply */
};

/* UIW_RTR_* flags of a field (B, C, D), 0 when A is clear. */
uint8_t uiw_mpa2_rtr_flags(const struct uiw_mpa_v2 *v);

/* Initiator: the field of its Request. */
void uiw_mpa2_request(const struct uiw_mpa2_local *l, struct uiw_mpa_v2 *req);

/* Responder: the Reply's field and its own values for a Request field
 * (RFC 6581 §9.1 and §9.2).  out->err is UIW_E_MPA_INSUFFICIENT_IRD when
 * a strict responder needs a larger ORD than the initiator's IRD: it
 * then rejects, with the ORD it needs in out->field. */
void uiw_mpa2_respond(const struct uiw_mpa2_local *l,
		      const struct uiw_mpa_v2 *req, struct uiw_mpa2_out *out);

/* Initiator: what the accepting Reply's field rep means, given the field
 * req it sent.  out->err:
 *   UIW_E_MPA_INVALID_FRAME: the Reply breaks RFC 6581 §9.2 (A not
 *     echoed): close, as for any improperly formatted Reply;
 *   UIW_E_MPA_INSUFFICIENT_IRD: the responder's ORD needs more IRD than
 *     this side has: send the Terminate 2/0/6 (§9.1);
 *   UIW_E_MPA_NO_MATCHING_RTR: peer-to-peer, and none of the RTR types
 *     the responder accepts is one this side supports: send the
 *     Terminate 2/0/7 (§9.2). */
void uiw_mpa2_reply(const struct uiw_mpa2_local *l,
		    const struct uiw_mpa_v2 *req, const struct uiw_mpa_v2 *rep,
		    struct uiw_mpa2_out *out);

/* The first and only FPDU of a stream that ends at once: a Terminate
 * (RFC 5040 §4.8; queue 2, MSN 1) with err in its control field and no
 * copied headers, framed at stream position 0 as negotiated (RFC 5044
 * §7.1.2 rule 7: with markers a marker comes first).  Returns its
 * length, or 0 when cap is too small. */
size_t uiw_mpa2_term_fpdu(uint8_t *buf, size_t cap, uiw_err_t err,
			  bool markers, bool crc);

#endif
