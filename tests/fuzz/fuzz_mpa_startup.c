/*
 * The MPA startup object (src/cm/mpa_startup.c) driven directly: no
 * socket, no thread, no clock.  As a responder it is fed arbitrary
 * octets, in one or two pieces, perhaps followed by the end of the
 * stream and the startup deadline.  What must happen is decided by a
 * reference reading of RFC 5044 §7.1.1-§7.1.2 and RFC 6581 §6, §9:
 *  - a valid Request (key "MPA ID Req Frame", PD_Length <= 512, exactly
 *    20 + PD_Length octets and nothing after them, revision 1 or 2, and
 *    with the enhanced-setup bit of revision 2 at least 4 octets of
 *    private data): REQ_RECEIVED, with the Request's revision, C and M
 *    flags, IRD/ORD field and private data (without the 4 octets of the
 *    field); then the ULP rejects (a Reply with R, then REJECTED) or
 *    accepts (a Reply without R in the Request's revision, with the
 *    field exactly when the Request had it, then Full Operation from
 *    the octet after the Request);
 *  - anything else: FAILED without a Reply, at once, at the end of the
 *    stream, or at the deadline (a prefix of a valid Request).
 * The reader never asks for an octet past the end of the Request.
 * The same octets are also fed to an initiator as the Reply to its
 * Request: it never takes an octet past the Reply, enters Full
 * Operation only on a Reply key without R whose frame ends exactly
 * where it stopped, and is rejected only on R.
 *
 * Input: mode(1), then the octets the peer sends (at most 600).
 *   mode 0x01: accept a valid Request (else reject; the initiator asks
 *   for revision 2, else 1); 0x02: end of stream after the octets;
 *   0x04: write in two parts at the octet (mode >> 3) * 8
 */
#include "fuzz.h"
#include <errno.h>
#include <uiwarp/cm.h>
#include "cm/mpa_startup.h"
#include "wire/mpa.h"

#define T0 1000
#define STARTUP_MS 20

/* RFC 5044 §7.1.1, RFC 6581 §6: 1 valid, 0 a prefix of what may still
 * become valid, -1 invalid. */
static int ref_request(const uint8_t *b, size_t n)
{
	static const char key[] = "MPA ID Req Frame";
	size_t k = n < 16 ? n : 16, pd;

	if (memcmp(b, key, k))
		return -1;
	if (n < 20)
		return 0;
	pd = ref_be16(b + 18);
	if (pd > 512)
		return -1;
	/* Rev: this responder speaks 1 and 2 */
	if (b[17] < 1 || b[17] > 2)
		return -1;
	if (n < 20 + pd)
		return 0;
	/* §7.1.2 rule 2: the initiator waits for the Reply */
	if (n > 20 + pd)
		return -1;
	if (b[17] >= 2 && (b[16] & 0x10) && pd < 4)
		return -1;
	return 1;
}

static void check_reply(const uint8_t *rq, const uint8_t *b, size_t n,
			bool reject)
{
	bool enh = rq[17] >= 2 && (rq[16] & 0x10);

	FZ_CHECK(n >= 20 && !memcmp(b, "MPA ID Rep Frame", 16),
		 "Reply of %zu octets without the Reply key", n);
	FZ_CHECK(!!(b[16] & 0x20) == reject, "Reply R bit %d, %s",
		 !!(b[16] & 0x20), reject ? "rejected" : "accepted");
	/* RFC 6581 §10: in the revision and format of the Request */
	FZ_CHECK(b[17] == rq[17], "Reply revision %u to a Request of %u",
		 b[17], rq[17]);
	FZ_CHECK(!!(b[16] & 0x10) == enh && n == 20u + ref_be16(b + 18) &&
		 (!enh || ref_be16(b + 18) >= 4),
		 "Reply format: enhanced bit %d (Request %d), PD_Length %u, "
		 "%zu octets", !!(b[16] & 0x10), enh, ref_be16(b + 18), n);
	/* B, C, D only with A (RFC 6581 §9.2) */
	FZ_CHECK(!enh || (b[20] & 0x80) || ((b[20] & 0x40) == 0 &&
					    (b[22] & 0xc0) == 0),
		 "Reply sets B/C/D without A");
	if (enh && !reject)
		FZ_CHECK(!!(b[20] & 0x80) == !!(rq[20] & 0x80),
			 "Reply A %d to Request A %d", !!(b[20] & 0x80),
			 !!(rq[20] & 0x80));
}


/* Feeds b[0..n) to s as a reader would: at most want() octets at a
 * time, split at cut.  Returns the octets taken. */
static size_t feed(struct uiw_mpa_startup *s, const uint8_t *b, size_t n,
		   size_t cut, size_t frame_end)
{
	size_t off = 0;

	while (off < n) {
		size_t w = uiw_mpa_startup_want(s), k = n - off, used;

		if (!w)
			break;
		if (s->state == UIW_MPA_SU_WAIT_REQ ||
		    s->state == UIW_MPA_SU_WAIT_REP)
			FZ_CHECK(frame_end == 0 || off + w <= frame_end,
				 "want %zu at %zu reaches past the frame's end "
				 "%zu", w, off, frame_end);
		if (k > w)
			k = w;
		if (off < cut && off + k > cut)
			k = cut - off;
		used = uiw_mpa_startup_input(s, b + off, k);
		FZ_CHECK(used <= k, "used %zu of %zu", used, k);
		off += used;
		if (used < k)
			break;
	}
	return off;
}

/* The responder's side of a valid Request; the ULP answers. */
static void valid(struct uiw_mpa_startup *r, const uint8_t *rq, size_t n,
		  bool acc)
{
	bool enh = rq[17] >= 2 && (rq[16] & 0x10);
	size_t pd = ref_be16(rq + 18), skip = enh ? 4 : 0, len;
	struct uiw_mpa_side me = {
		.crc = true,
		.l = { .ird = 4, .ord = 4, .max_ird = 16, .rtr = UIW_RTR_ALL },
		.pd = (const uint8_t *)"answer", .pd_len = 6,
	};
	const uint8_t *out;

	FZ_CHECK(r->state == UIW_MPA_SU_REQ_RECEIVED,
		 "state %s for a valid Request",
		 uiw_mpa_startup_state_str(r->state));
	FZ_CHECK(r->rx_startup == n, "Full Operation would start at %u, the "
		 "Request has %zu octets", r->rx_startup, n);
	FZ_CHECK(r->peer_rev == rq[17] &&
		 !!(r->peer_flags & UIW_MPA_F_C) == !!(rq[16] & 0x40) &&
		 !!(r->peer_flags & UIW_MPA_F_M) == !!(rq[16] & 0x80) &&
		 r->peer_enh == enh,
		 "Request taken as rev %u flags %#x enhanced %d for flags %#x "
		 "rev %u", r->peer_rev, r->peer_flags, r->peer_enh, rq[16],
		 rq[17]);
	FZ_CHECK(r->peer_pd_len == pd - skip &&
		 (!r->peer_pd_len ||
		  !memcmp(r->peer_pd, rq + 20 + skip, r->peer_pd_len)),
		 "private data of %u octets, the Request has %zu",
		 r->peer_pd_len, pd - skip);
	if (enh)
		FZ_CHECK(r->peer_v2.ird == (ref_be16(rq + 20) & 0x3fff) &&
			 r->peer_v2.ord == (ref_be16(rq + 22) & 0x3fff) &&
			 r->peer_v2.p2p == !!(rq[20] & 0x80),
			 "peer IRD %u ORD %u A %d from %02x%02x %02x%02x",
			 r->peer_v2.ird, r->peer_v2.ord, r->peer_v2.p2p,
			 rq[20], rq[21], rq[22], rq[23]);
	/* No deadline while the ULP decides. */
	uiw_mpa_startup_tick(r, T0 + 1000 * STARTUP_MS);
	FZ_CHECK(r->state == UIW_MPA_SU_REQ_RECEIVED, "timed out while the "
		 "ULP decides");
	if (acc)
		FZ_CHECK(uiw_mpa_startup_accept(r, &me, T0, STARTUP_MS) == 0,
			 "accept: %s", r->why);
	else
		FZ_CHECK(uiw_mpa_startup_reject(r, &me.l, me.pd, me.pd_len, T0,
						STARTUP_MS) == 0,
			 "reject: %s", r->why);
	out = uiw_mpa_startup_out(r, &len);
	check_reply(rq, out, len, !acc);
	uiw_mpa_startup_sent(r, len);
	FZ_CHECK(r->state == (acc ? UIW_MPA_SU_FULL_OP : UIW_MPA_SU_REJECTED),
		 "state %s once the Reply is out",
		 uiw_mpa_startup_state_str(r->state));
	FZ_CHECK(r->tx_startup == len, "Full Operation would start at %u "
		 "after a Reply of %zu", r->tx_startup, len);
	FZ_CHECK(uiw_mpa_startup_want(r) == 0, "reads after the Reply");
}

/* The same octets as the Reply to an initiator's Request. */
static void as_reply(const uint8_t *b, size_t n, size_t cut, bool rev2)
{
	static const uint8_t key[] = "MPA ID Rep Frame";
	struct uiw_mpa_side me = {
		.crc = true,
		.l = { .ird = 4, .ord = 4, .max_ird = 16, .rtr = UIW_RTR_ALL },
	};
	struct uiw_mpa_startup s;
	size_t len, used, end;

	uiw_mpa_startup_initiator(&s, rev2 ? 2 : 1, &me, T0, STARTUP_MS);
	uiw_mpa_startup_out(&s, &len);
	uiw_mpa_startup_sent(&s, len);
	end = n >= 20 ? 20 + (size_t)ref_be16(b + 18) : 0;
	used = feed(&s, b, n, cut, end > 532 ? 0 : end);
	switch (s.state) {
	case UIW_MPA_SU_FULL_OP:
	case UIW_MPA_SU_REJECTED:
	case UIW_MPA_SU_TERMINATE:
		FZ_CHECK(n >= 20 && !memcmp(b, key, 16) && used == end &&
			 s.rx_startup == end,
			 "%s after %zu octets of %zu (frame end %zu)",
			 uiw_mpa_startup_state_str(s.state), used, n, end);
		FZ_CHECK(b[17] >= 1 && b[17] <= (rev2 ? 2 : 1),
			 "Reply of revision %u taken", b[17]);
		FZ_CHECK((s.state == UIW_MPA_SU_REJECTED) == !!(b[16] & 0x20),
			 "%s for flags %#x", uiw_mpa_startup_state_str(s.state),
			 b[16]);
		break;
	case UIW_MPA_SU_WAIT_REP:
		FZ_CHECK(used == n, "waits with %zu octets unread", n - used);
		uiw_mpa_startup_tick(&s, T0 + STARTUP_MS);
		FZ_CHECK(s.state == UIW_MPA_SU_FAILED &&
			 s.status == -ETIMEDOUT, "no timeout");
		break;
	case UIW_MPA_SU_FAILED:
		FZ_CHECK(s.status == -EPROTO, "status %d", s.status);
		break;
	default:
		FZ_CHECK(0, "initiator in state %s",
			 uiw_mpa_startup_state_str(s.state));
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct uiw_mpa_startup r;
	uint8_t mode, b[600];
	size_t n, cut, used, len;
	int want;

	if (!size)
		return 0;
	mode = data[0];
	n = size - 1 < sizeof(b) ? size - 1 : sizeof(b);
	memcpy(b, data + 1, n);
	want = ref_request(b, n);
	cut = (mode & 0x04) ? (size_t)(mode >> 3) * 8 : 0;

	as_reply(b, n, cut, mode & 0x01);

	uiw_mpa_startup_responder(&r, 2, T0, STARTUP_MS);
	used = feed(&r, b, n, cut,
		    n >= 20 && ref_be16(b + 18) <= 512 ?
		    20 + (size_t)ref_be16(b + 18) : 0);
	if (want == 1) {
		FZ_CHECK(used == n, "%zu of %zu octets of a valid Request "
			 "taken", used, n);
		valid(&r, b, n, mode & 0x01);
		return 0;
	}
	if (mode & 0x02)
		uiw_mpa_startup_eof(&r);
	/* closed without a Reply: by rule, at the end of the stream, or at
	 * the deadline */
	uiw_mpa_startup_tick(&r, T0 + STARTUP_MS);
	FZ_CHECK(r.state == UIW_MPA_SU_FAILED, "state %s for a Request that "
		 "is not valid (reference: %s)",
		 uiw_mpa_startup_state_str(r.state),
		 want ? "invalid" : "incomplete");
	uiw_mpa_startup_out(&r, &len);
	FZ_CHECK(len == 0, "%zu octets would answer a Request that is not "
		 "valid", len);
	FZ_CHECK(r.status < 0 && r.why, "status %d without a reason",
		 r.status);
	return 0;
}
