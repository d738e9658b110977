/*
 * A second framing for the engine, for tests: each DDP segment travels
 * as one discrete message of an in-memory lower layer, behind a 2-octet
 * DDP-SSN as in RFC 5043 §5.2.1 (the Stream Sequence Number, zero for
 * the first segment of the session, one more for each after), with no
 * length field, marker, pad or CRC: a message's end is the segment's.
 * It is written against rnic/framing.h alone, as the SCTP framing is to
 * be, and proves that the engine needs nothing of MPA.
 *
 * The receiver takes a message in pieces (as SCTP's partial delivery
 * hands a large message over): the first piece brings the DDP-SSN and
 * the header, later ones payload, the last one says that the message
 * ends.  When the whole message is in the first piece the engine learns
 * the segment's length at its header; otherwise only at its end (the
 * engine then bounds placement as it goes, framing.h).
 *
 * Messages between the two sides are kept in a byte buffer as records:
 * a 4-octet length (of this harness, not of any wire), then the message.
 */
#ifndef UIW_TESTS_MSG_FRAMING_H
#define UIW_TESTS_MSG_FRAMING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "rnic/framing.h"

#define UIW_MSGF_SSN_LEN 2
#define UIW_MSGF_REC_LEN 4     /* the harness's record length field */

struct uiw_msgf {
	struct uiw_qp *qp;
	/* transmit */
	uint16_t tx_ssn;            /* the next segment's DDP-SSN */
	/* receive: the message in progress */
	bool in_msg;
	uint32_t got;               /* its octets so far, DDP-SSN included */
	uint8_t ssn[UIW_MSGF_SSN_LEN];
	uint8_t hdr[UIW_SEG_HDR_MAX];
	uint32_t hlen;              /* header octets the engine needs */
	bool begun;                 /* the engine has the header */
	uint16_t rx_ssn_last;       /* DDP-SSN of the last message */
	uint32_t rx_msgs;           /* messages received */
	bool stopped;               /* the engine reads no more */
};

/* Attaches qp over m: lp as given, with unordered as asked (an
 * unordered framing lets the harness reorder a message's segments). */
int uiw_msgf_attach(struct uiw_msgf *m, struct uiw_qp *qp,
		    const struct uiw_llp_params *lp, bool unordered,
		    const struct uiw_llp_ops *ops, void *ctx);

/* For uiw_llp_ops.query: the LLP it stands in for (SCTP), nothing else
 * (no CRC, no markers). */
void uiw_msgf_query(const struct uiw_msgf *m, struct uiw_qp_attr *attr);

/* Transmit: the segments the engine has now become messages, appended
 * as records to *buf (grown with realloc; *len, *cap).  At most max
 * segments per engine call.  Returns the octets appended. */
size_t uiw_msgf_tx(struct uiw_msgf *m, uint8_t **buf, size_t *len,
		   size_t *cap, int max);

/* Grows *buf (realloc, doubling from 64 KiB) to hold need octets;
 * aborts when memory runs out (a test harness's buffer). */
void uiw_msgf_grow(uint8_t **buf, size_t *cap, size_t need);

/* Receive: n octets of the current message (the first piece begins it);
 * eor: they end it.  Returns 0, or -EPROTO once the engine reads no more
 * (the octets are then dropped). */
int uiw_msgf_rx(struct uiw_msgf *m, const uint8_t *p, size_t n, bool eor);

#endif
