/*
 * MPA startup as a sans-I/O object (mpa_startup.h): the rules of RFC
 * 5044 §7.1.1-§7.1.2 and RFC 6581 §6, §9, §10 for both roles, applied
 * to the octets the caller hands over.  The negotiation of IRD, ORD and
 * peer-to-peer mode is mpa2.c's; the octets are wire/mpa.c's.
 */
#include "mpa_startup.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <uiwarp/cm.h>

/* MPA revisions this implementation speaks: 1 (RFC 5044) and 2 (RFC
 * 6581). */
#define SU_REV_MIN 1
#define SU_REV_MAX 2
#define SU_NO_DEADLINE INT64_MAX

static const char *const state_names[] = {
	[UIW_MPA_SU_SEND_REQ] = "sending request",
	[UIW_MPA_SU_WAIT_REP] = "waiting for reply",
	[UIW_MPA_SU_WAIT_REQ] = "waiting for request",
	[UIW_MPA_SU_REQ_RECEIVED] = "request received",
	[UIW_MPA_SU_SEND_REP] = "sending reply",
	[UIW_MPA_SU_SEND_REJ] = "rejecting",
	[UIW_MPA_SU_FULL_OP] = "full operation",
	[UIW_MPA_SU_REJECTED] = "rejected",
	[UIW_MPA_SU_TERMINATE] = "terminating",
	[UIW_MPA_SU_FAILED] = "failed",
};

const char *uiw_mpa_startup_state_str(enum uiw_mpa_su_state st)
{
	return (unsigned)st < sizeof(state_names) / sizeof(state_names[0]) ?
	       state_names[st] : "?";
}

bool uiw_mpa_startup_over(const struct uiw_mpa_startup *s)
{
	return s->state >= UIW_MPA_SU_FULL_OP;
}

static void su_fail(struct uiw_mpa_startup *s, int status, const char *why)
{
	s->state = UIW_MPA_SU_FAILED;
	s->status = status;
	s->why = why;
	s->deadline_ms = SU_NO_DEADLINE;
	s->wlen = s->woff = 0;
}

static void su_deadline(struct uiw_mpa_startup *s, int64_t now_ms,
			int timeout_ms)
{
	s->deadline_ms = now_ms + (timeout_ms > 0 ? timeout_ms : 0);
}

/* Our flags in a Request or an accepting Reply: RFC 5044 §4.4 C, and M
 * to ask the peer for markers in what it sends us. */
static uint8_t side_flags(const struct uiw_mpa_side *me)
{
	return (me->crc ? UIW_MPA_F_C : 0) | (me->markers ? UIW_MPA_F_M : 0);
}

/* RFC 5044 §7.1.1: CRC when either side set C; markers go towards a
 * side that set M, each direction on its own. */
static void su_framing(struct uiw_mpa_startup *s)
{
	s->fr.crc = (s->flags & UIW_MPA_F_C) || (s->peer_flags & UIW_MPA_F_C);
	s->fr.markers_tx = s->peer_flags & UIW_MPA_F_M;
	s->fr.markers_rx = s->flags & UIW_MPA_F_M;
}

/* Without the IRD/ORD field (revision 1, or revision 2 without the
 * enhanced-setup bit) each side keeps its own values. */
static void su_nego_plain(struct uiw_mpa_startup *s,
			  const struct uiw_mpa2_local *l)
{
	memset(&s->nego, 0, sizeof(s->nego));
	s->nego.ird = l->ird;
	s->nego.ord = l->ord;
}

/* Puts a frame of revision rev in out; with v2 the enhanced-setup bit is
 * set and the private data starts with the IRD/ORD field (RFC 6581 §6,
 * §9).  False when it cannot be encoded (private data too long). */
static bool su_put_frame(struct uiw_mpa_startup *s, bool reply, uint8_t flags,
			 uint8_t rev, const struct uiw_mpa_v2 *v2,
			 const uint8_t *pd, uint16_t pd_len)
{
	uint8_t buf[UIW_MPA_PD_MAX];
	struct uiw_mpa_frame f = {
		.reply = reply, .flags = flags, .rev = rev,
		.pd_len = pd_len, .pd = pd,
	};

	if (v2) {
		if (pd_len > UIW_MPA_PD_MAX - UIW_MPA_V2_LEN)
			return false;
		f.flags |= UIW_MPA_F_ENH;
		uiw_mpa_v2_encode(buf, v2);
		if (pd_len)
			memcpy(buf + UIW_MPA_V2_LEN, pd, pd_len);
		f.pd = buf;
		f.pd_len = (uint16_t)(pd_len + UIW_MPA_V2_LEN);
	}
	s->wlen = (uint32_t)uiw_mpa_frame_encode(s->wbuf, sizeof(s->wbuf), &f);
	s->woff = 0;
	return s->wlen != 0;
}

/* The Terminate of RFC 6581 §9 as the first and only FPDU (stream
 * position 0 of Full Operation), then close. */
static void su_terminate(struct uiw_mpa_startup *s, uiw_err_t err,
			 int status, const char *why)
{
	s->state = UIW_MPA_SU_TERMINATE;
	s->status = status;
	s->why = why;
	s->deadline_ms = SU_NO_DEADLINE;
	s->wlen = (uint32_t)uiw_mpa2_term_fpdu(s->wbuf, sizeof(s->wbuf), err,
					       s->fr.markers_tx, s->fr.crc);
	s->woff = 0;
}

static void su_init(struct uiw_mpa_startup *s, bool initiator, uint8_t rev,
		    int64_t now_ms, int timeout_ms)
{
	memset(s, 0, sizeof(*s));
	s->initiator = initiator;
	s->rev = rev;
	s->rneed = UIW_MPA_HDR_LEN;
	su_deadline(s, now_ms, timeout_ms);
}

void uiw_mpa_startup_initiator(struct uiw_mpa_startup *s, uint8_t rev,
			       const struct uiw_mpa_side *me, int64_t now_ms,
			       int timeout_ms)
{
	su_init(s, true, rev, now_ms, timeout_ms);
	s->state = UIW_MPA_SU_SEND_REQ;
	s->flags = side_flags(me);
	s->local = me->l;
	/* RFC 6581 §6: revision 2 with the IRD/ORD field; RFC 6581 §10: a
	 * revision 1 Request is a plain RFC 5044 one. */
	s->sent_enh = rev >= 2;
	if (s->sent_enh)
		uiw_mpa2_request(&me->l, &s->sent_v2);
	if (rev < SU_REV_MIN || rev > SU_REV_MAX)
		su_fail(s, -EINVAL, "MPA revision to ask for is not 1 or 2");
	else if (!su_put_frame(s, false, s->flags, rev,
			       s->sent_enh ? &s->sent_v2 : NULL, me->pd,
			       me->pd_len))
		su_fail(s, -EINVAL, "private data too long for the MPA "
			"Request (RFC 5044 §7.1.1, RFC 6581 §9)");
}

void uiw_mpa_startup_responder(struct uiw_mpa_startup *s, uint8_t max_rev,
			       int64_t now_ms, int timeout_ms)
{
	su_init(s, false, max_rev, now_ms, timeout_ms);
	s->state = UIW_MPA_SU_WAIT_REQ;
}

const uint8_t *uiw_mpa_startup_out(const struct uiw_mpa_startup *s,
				   size_t *len)
{
	*len = s->wlen - s->woff;
	return s->wbuf + s->woff;
}

void uiw_mpa_startup_sent(struct uiw_mpa_startup *s, size_t n)
{
	if (n > s->wlen - s->woff)
		n = s->wlen - s->woff;
	s->woff += (uint32_t)n;
	if (s->woff < s->wlen)
		return;
	switch (s->state) {
	case UIW_MPA_SU_SEND_REQ:
		s->tx_startup = s->wlen;
		s->state = UIW_MPA_SU_WAIT_REP;
		break;
	case UIW_MPA_SU_SEND_REP:
		/* RFC 5044 §7.1.2 rule 2: the Responder enters Full
		 * Operation once its Reply is out. */
		s->tx_startup = s->wlen;
		s->state = UIW_MPA_SU_FULL_OP;
		s->deadline_ms = SU_NO_DEADLINE;
		break;
	case UIW_MPA_SU_SEND_REJ:
		/* RFC 5044 §7.1.2 rule 2: the Reply with R ends MPA. */
		s->tx_startup = s->wlen;
		s->state = UIW_MPA_SU_REJECTED;
		s->status = -ECONNREFUSED;
		s->deadline_ms = SU_NO_DEADLINE;
		break;
	default:
		break;
	}
}

size_t uiw_mpa_startup_want(const struct uiw_mpa_startup *s)
{
	switch (s->state) {
	case UIW_MPA_SU_WAIT_REQ:
	case UIW_MPA_SU_WAIT_REP:
		return s->rneed - s->rlen;
	case UIW_MPA_SU_REQ_RECEIVED:
	case UIW_MPA_SU_SEND_REP:
	case UIW_MPA_SU_SEND_REJ:
		return 1;
	default:
		return 0;
	}
}

/* The peer's frame has the RFC 6581 field: take it.  False when the
 * enhanced-setup bit is set without room for it (an improperly
 * formatted frame). */
static bool su_take_v2(struct uiw_mpa_startup *s)
{
	s->peer_enh = false;
	/* RFC 6581 §6: S is a bit of revision 2 and higher; in revision 1
	 * it is reserved, "MUST NOT be checked on reception". */
	if (s->peer_rev < 2 || !(s->peer_flags & UIW_MPA_F_ENH))
		return true;
	if (s->peer_pd_len < UIW_MPA_V2_LEN)
		return false;
	uiw_mpa_v2_decode(s->peer_pd, &s->peer_v2);
	s->peer_enh = true;
	s->peer_pd += UIW_MPA_V2_LEN;
	s->peer_pd_len -= UIW_MPA_V2_LEN;
	return true;
}

/* The revision and the RFC 6581 field of the peer's frame, either role;
 * false when the startup failed on them. */
static bool su_frame_ok(struct uiw_mpa_startup *s)
{
	/* RFC 5044 §7.1.1 Rev: close if we cannot interoperate.  A
	 * responder answers revisions up to its highest (RFC 6581 §6: "A
	 * host accepting MPA connections MUST continue to accept MPA
	 * Requests with version one"; one limited to revision 1 closes on
	 * revision 2, RFC 6581 §10).  A Reply speaks the revision we asked
	 * for or a lower one: a revision 1 responder may answer a revision
	 * 2 Request in revision 1 (RFC 6581 §10: the ULP then deals with
	 * IRD, ORD and peer-to-peer itself). */
	if (s->peer_rev < SU_REV_MIN || s->peer_rev > s->rev) {
		su_fail(s, -EPROTO, s->initiator ?
			"MPA Reply of a revision we did not ask for" :
			"MPA Request of a revision we do not speak");
		return false;
	}
	if (!su_take_v2(s)) {
		su_fail(s, -EPROTO, s->initiator ?
			"MPA Reply with the enhanced-setup bit and less than "
			"4 octets of private data (RFC 6581 §6)" :
			"MPA Request with the enhanced-setup bit and less "
			"than 4 octets of private data (RFC 6581 §6)");
		return false;
	}
	return true;
}

/* A whole Request is in: the ULP decides next, and takes its time: no
 * startup deadline meanwhile. */
static void su_request(struct uiw_mpa_startup *s)
{
	if (!su_frame_ok(s))
		return;
	s->state = UIW_MPA_SU_REQ_RECEIVED;
	s->deadline_ms = SU_NO_DEADLINE;
}

/* A whole Reply is in: what it means for the initiator. */
static void su_reply(struct uiw_mpa_startup *s)
{
	if (!su_frame_ok(s))
		return;
	/* RFC 5044 §7.1.2 rule 3: R set: exit MPA; the ULP closes TCP.
	 * RFC 6581 §9.1: the responder's IRD and ORD reach the ULP with a
	 * rejection too. */
	if (s->peer_flags & UIW_MPA_F_R) {
		s->state = UIW_MPA_SU_REJECTED;
		s->status = -ECONNREFUSED;
		s->why = "the responder rejected the connection";
		s->deadline_ms = SU_NO_DEADLINE;
		return;
	}
	if (s->peer_enh != s->sent_enh && s->peer_rev >= 2) {
		/* RFC 6581 §10: an enhanced Request gets an enhanced Reply,
		 * an unenhanced one an unenhanced Reply. */
		su_fail(s, -EPROTO, s->sent_enh ?
			"revision 2 Reply without the enhanced-setup bit to an "
			"enhanced Request (RFC 6581 §10)" :
			"enhanced Reply to an unenhanced Request (RFC 6581 "
			"§10)");
		return;
	}
	su_framing(s);
	if (!s->peer_enh) {
		su_nego_plain(s, &s->local);
	} else {
		uiw_mpa2_reply(&s->local, &s->sent_v2, &s->peer_v2, &s->nego);
		if (s->nego.err == UIW_E_MPA_INVALID_FRAME) {
			su_fail(s, -EPROTO, s->nego.why);
			return;
		}
		if (s->nego.err != UIW_OK) {
			su_terminate(s, s->nego.err,
				     s->nego.err == UIW_E_MPA_INSUFFICIENT_IRD ?
				     -ENOBUFS : -ENOPROTOOPT, s->nego.why);
			return;
		}
	}
	/* RFC 5044 §7.1.2 rule 3: Full Operation; what follows the Reply
	 * in the stream is its first octet. */
	s->state = UIW_MPA_SU_FULL_OP;
	s->deadline_ms = SU_NO_DEADLINE;
}

/* Octets of the peer's frame: at most what it still lacks. */
static size_t su_frame_input(struct uiw_mpa_startup *s, const uint8_t *p,
			     size_t n)
{
	bool reply = s->initiator;
	const uint8_t *key = reply ? uiw_mpa_key_rep : uiw_mpa_key_req;
	struct uiw_mpa_frame f;
	size_t used, k;

	k = s->rneed - s->rlen;
	if (k > n)
		k = n;
	memcpy(s->rbuf + s->rlen, p, k);
	s->rlen += (uint32_t)k;
	/* RFC 5044 §7.1.1, §7.1.2 rule 5: a wrong key is refused as soon as
	 * it is seen; rule 9: so is a PD_Length above 512. */
	if (uiw_mpa_frame_decode(s->rbuf, s->rlen, reply, &f, &used) !=
	    UIW_OK) {
		size_t kl = s->rlen < UIW_MPA_KEY_LEN ? s->rlen :
							UIW_MPA_KEY_LEN;

		su_fail(s, -EPROTO, memcmp(s->rbuf, key, kl) ?
			(reply ? "not an MPA Reply key" :
				 "not an MPA Request key") :
			"private data longer than 512 octets");
		return k;
	}
	if (s->rlen == UIW_MPA_HDR_LEN && s->rneed == UIW_MPA_HDR_LEN)
		s->rneed = UIW_MPA_HDR_LEN + f.pd_len;
	if (s->rlen < s->rneed)
		return k;
	if (uiw_mpa_frame_decode(s->rbuf, s->rlen, reply, &f, &used) !=
	    UIW_OK || used != s->rlen) {
		su_fail(s, -EPROTO, "malformed MPA frame");
		return k;
	}
	s->have_frame = true;
	s->peer_flags = f.flags;
	s->peer_rev = f.rev;
	s->peer_pd = s->rbuf + UIW_MPA_HDR_LEN;
	s->peer_pd_len = f.pd_len;
	s->rx_startup = s->rlen;
	if (reply)
		su_reply(s);
	else
		su_request(s);
	return k;
}

size_t uiw_mpa_startup_input(struct uiw_mpa_startup *s, const uint8_t *p,
			     size_t n)
{
	size_t used = 0;

	while (used < n && (s->state == UIW_MPA_SU_WAIT_REQ ||
			    s->state == UIW_MPA_SU_WAIT_REP))
		used += su_frame_input(s, p + used, n - used);
	if (used < n && !s->initiator &&
	    (s->state == UIW_MPA_SU_REQ_RECEIVED ||
	     s->state == UIW_MPA_SU_SEND_REP ||
	     s->state == UIW_MPA_SU_SEND_REJ)) {
		/* RFC 5044 §7.1.2 rule 2: the initiator waits for our
		 * Reply; an octet before its end is a protocol error. */
		su_fail(s, -EPROTO, s->state == UIW_MPA_SU_REQ_RECEIVED ?
			"octets after the MPA Request" :
			"octets before our MPA Reply");
		used = n;
	}
	return used;
}

void uiw_mpa_startup_eof(struct uiw_mpa_startup *s)
{
	switch (s->state) {
	case UIW_MPA_SU_SEND_REQ:
	case UIW_MPA_SU_WAIT_REP:
	case UIW_MPA_SU_WAIT_REQ:
		su_fail(s, -ECONNRESET, "connection closed during MPA "
			"startup");
		break;
	case UIW_MPA_SU_REQ_RECEIVED:
		su_fail(s, -ECONNRESET, "connection closed after the MPA "
			"Request");
		break;
	case UIW_MPA_SU_SEND_REP:
	case UIW_MPA_SU_SEND_REJ:
		su_fail(s, -ECONNRESET, "connection closed before our MPA "
			"Reply");
		break;
	default:
		break;
	}
}

void uiw_mpa_startup_tick(struct uiw_mpa_startup *s, int64_t now_ms)
{
	/* RFC 5044 §7.1.2 rules 8 and 10: a timeout on the startup
	 * frames, for either role. */
	if (!uiw_mpa_startup_over(s) && now_ms >= s->deadline_ms)
		su_fail(s, -ETIMEDOUT, "MPA startup timed out");
}

/* A Reply can be built now with pd_len octets of private data; if not,
 * why says so. */
static bool su_reply_pd_ok(struct uiw_mpa_startup *s, uint16_t pd_len)
{
	if (s->initiator || s->state != UIW_MPA_SU_REQ_RECEIVED) {
		s->why = "not a pending connection request";
		return false;
	}
	/* RFC 6581 §9: the IRD/ORD field counts in the 512 octets. */
	if (s->peer_enh && pd_len > UIW_MPA_PD_MAX - UIW_MPA_V2_LEN) {
		s->why = "the Reply to an enhanced Request (MPA revision 2) "
			 "takes at most 508 octets of private data besides "
			 "its IRD/ORD field (RFC 6581 §9)";
		return false;
	}
	if (pd_len > UIW_MPA_PD_MAX) {
		s->why = "private data longer than 512 octets (RFC 5044 "
			 "§7.1.1)";
		return false;
	}
	return true;
}

int uiw_mpa_startup_accept(struct uiw_mpa_startup *s,
			   const struct uiw_mpa_side *me, int64_t now_ms,
			   int timeout_ms)
{
	if (!su_reply_pd_ok(s, me->pd_len))
		return -EINVAL;
	s->flags = side_flags(me);
	s->local = me->l;
	if (s->peer_enh)
		uiw_mpa2_respond(&me->l, &s->peer_v2, &s->nego);
	else
		su_nego_plain(s, &me->l);
	su_deadline(s, now_ms, timeout_ms);
	if (s->nego.err != UIW_OK) {
		/* RFC 6581 §9.1: a strict responder rejects, "and specify
		 * the required ORD in the MPA Reject Frame responder ORD". */
		su_put_frame(s, true, UIW_MPA_F_R, s->peer_rev, &s->nego.field,
			     me->pd, me->pd_len);
		s->state = UIW_MPA_SU_SEND_REJ;
		s->why = "the initiator's IRD is below the ORD this side "
			 "requires (RFC 6581 §9.1): rejected";
		return -ENOBUFS;
	}
	su_framing(s);
	/* RFC 5044 §7.1.2 rule 2: accept with R clear; RFC 6581 §10: in the
	 * Request's revision and format. */
	su_put_frame(s, true, s->flags, s->peer_rev,
		     s->peer_enh ? &s->nego.field : NULL, me->pd, me->pd_len);
	s->state = UIW_MPA_SU_SEND_REP;
	return 0;
}

int uiw_mpa_startup_reject(struct uiw_mpa_startup *s,
			   const struct uiw_mpa2_local *l, const uint8_t *pd,
			   uint16_t pd_len, int64_t now_ms, int timeout_ms)
{
	if (!su_reply_pd_ok(s, pd_len))
		return -EINVAL;
	/* RFC 5044 §7.1.2 rule 2: a Reply with R set, with the ULP's
	 * private data; RFC 6581 §10: an enhanced Request gets an enhanced
	 * Reply. */
	if (s->peer_enh)
		uiw_mpa2_respond(l, &s->peer_v2, &s->nego);
	su_put_frame(s, true, UIW_MPA_F_R, s->peer_rev,
		     s->peer_enh ? &s->nego.field : NULL, pd, pd_len);
	s->state = UIW_MPA_SU_SEND_REJ;
	su_deadline(s, now_ms, timeout_ms);
	return 0;
}

void uiw_mpa_startup_abort(struct uiw_mpa_startup *s, uiw_err_t err,
			   int status, const char *why)
{
	if (s->initiator && s->state == UIW_MPA_SU_FULL_OP && s->peer_enh)
		su_terminate(s, err, status, why);
	else
		su_fail(s, status, why);
}

void uiw_mpa_startup_fail(struct uiw_mpa_startup *s, int status,
			  const char *why)
{
	su_fail(s, status, why);
}
