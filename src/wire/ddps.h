/*
 * DDP over SCTP on the wire (RFC 5043 §5.2, with RFC 6581 §7): the
 * 2-octet DDP-SSN that begins every DATA chunk's payload, and the DDP
 * Stream Session Control message (PPID 17).  Pure functions, no state.
 *
 *   DDP Segment Chunk (PPID 16):  DDP-SSN | DDP segment (RFC 5041)
 *   Session Control   (PPID 17):  DDP-SSN | Function Code | private data
 *
 * The enhanced codes of RFC 6581 §7 carry RFC 6581 §9.1's IRD/ORD word
 * as the first 4 octets of private data, before the ULP's.
 */
#ifndef UIW_WIRE_DDPS_H
#define UIW_WIRE_DDPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mpa.h"      /* struct uiw_mpa_v2: the IRD/ORD word */

#define UIW_DDPS_SSN_LEN   2
#define UIW_DDPS_FC_LEN    2
#define UIW_DDPS_CTL_HDR   (UIW_DDPS_SSN_LEN + UIW_DDPS_FC_LEN)
/* RFC 5043 §5.2.3: private data never exceeds 512 octets, the IRD/ORD
 * word included (RFC 6581 §7). */
#define UIW_DDPS_PD_MAX    512
#define UIW_DDPS_CTL_MAX   (UIW_DDPS_CTL_HDR + UIW_DDPS_PD_MAX)
/* RFC 5043 §9: the smallest MULPDU, room for a control message with 512
 * octets of private data. */
#define UIW_DDPS_MULPDU_MIN 516
/* RFC 5043 §10: DDP-SSN order holds while fewer than 32768 chunks of a
 * stream are in flight; a sender keeps at most this many unacknowledged. */
#define UIW_DDPS_INFLIGHT_MAX 32767

enum uiw_ddps_fc {
	UIW_DDPS_INITIATE   = 0x001,
	UIW_DDPS_ACCEPT     = 0x002,
	UIW_DDPS_REJECT     = 0x003,
	UIW_DDPS_TERMINATE  = 0x004,
	UIW_DDPS_E_INITIATE = 0x005,   /* RFC 6581 §7 */
	UIW_DDPS_E_ACCEPT   = 0x006,
	UIW_DDPS_E_REJECT   = 0x007,
};

/* A session control message as decoded. */
struct uiw_ddps_ctl {
	uint16_t ssn;
	uint16_t fc;                /* enum uiw_ddps_fc */
	bool enhanced;              /* an RFC 6581 §7 code */
	bool has_v2;                /* v2 holds the IRD/ORD word */
	struct uiw_mpa_v2 v2;
	const uint8_t *pd;          /* the ULP's private data (after the
				       word), into the decoded buffer */
	uint16_t pd_len;
};

static inline uint16_t uiw_ddps_ssn(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}
static inline void uiw_ddps_put_ssn(uint8_t *p, uint16_t ssn)
{
	p[0] = (uint8_t)(ssn >> 8);
	p[1] = (uint8_t)ssn;
}
/* How far ssn is ahead of next in the 16-bit sequence space (RFC 5043
 * §10): 0 is next, 1..32767 ahead; 32768..65535 behind (a replay). */
static inline uint16_t uiw_ddps_ssn_ahead(uint16_t ssn, uint16_t next)
{
	return (uint16_t)(ssn - next);
}
static inline bool uiw_ddps_ssn_behind(uint16_t ssn, uint16_t next)
{
	return uiw_ddps_ssn_ahead(ssn, next) >= 0x8000;
}

/* The name of a function code ("Initiate", ...; "unknown"). */
const char *uiw_ddps_fc_name(uint16_t fc);
/* True for the codes that carry the IRD/ORD word first: Enhanced
 * Initiate and Enhanced Accept (RFC 6581 §7), and Enhanced Reject, which
 * says what the responder would take (as an MPA v2 Reply with Reject
 * set does, RFC 6581 §9.1). */
bool uiw_ddps_fc_has_v2(uint16_t fc);

/* Decodes a PPID 17 payload (buf[0..len), DDP-SSN included).  Returns
 * 0, or -EPROTO with *why set: shorter than its header, an unknown
 * function code, private data in a Terminate (§5.2.3), more than 512
 * octets of it, or an enhanced code too short for its word. */
int uiw_ddps_ctl_decode(const uint8_t *buf, size_t len,
			struct uiw_ddps_ctl *c, const char **why);
/* Encodes a control message into out (at least UIW_DDPS_CTL_MAX
 * octets): the word from v2 when uiw_ddps_fc_has_v2(fc) (v2 may then
 * not be NULL), then pd.  Returns its length, or -EMSGSIZE when the
 * private data does not fit in 512 octets with the word, -EINVAL for a
 * Terminate with private data or an unknown code. */
int uiw_ddps_ctl_encode(uint8_t *out, uint16_t ssn, uint16_t fc,
			const struct uiw_mpa_v2 *v2, const void *pd,
			uint16_t pd_len);

#endif
