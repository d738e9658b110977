/*
 * An SCTP carrier in memory (a struct uiw_sctp_ops of
 * src/llp/sctp_backend.h), for tests of the RFC 5043 layer: put in
 * place of a backend with fake_sctp_install, it carries whole user
 * messages between two ends of an association inside the process, on a
 * progress thread of its own, as sctp.h says a backend does.
 *
 *   listen      registers an SCTP port (port 0: the next free one);
 *   connect     to a registered port makes two linked associations, the
 *               active one and the listener's passive one, and gives
 *               each its up upcall from posted work (passive first, as
 *               the COOKIE ECHO comes before the COOKIE ACK); to a port
 *               nobody listens on, down with -ECONNREFUSED;
 *   send        copies the message into the peer's queue: -EMSGSIZE
 *               above maxseg, -EINVAL for a stream at or above
 *               info.streams, -EAGAIN while the peer's queue holds more
 *               than queue_max octets (writable follows once it holds
 *               no more) or while a test blocks the end, -ENOTCONN
 *               once going down;
 *   delivery    from posted work, one window of queued messages at a
 *               time in an order a seeded PRNG picks (unordered DATA
 *               chunks, RFC 5043 §10: the DDP-SSN must put them back);
 *               one chosen message may be held back (a gap) or
 *               delivered twice;
 *   dry         once nothing this end sent waits in the peer's queue or
 *               is held back;
 *   shutdown    down 0 to both ends after both queues are delivered;
 *   abort       down -ECONNABORTED to the aborting end, -ECONNRESET to
 *               its peer, from the next round; what was in flight is
 *               lost;
 *   destroy     frees everything without upcalls.
 *
 * Associations are numbered 1, 2, ... in the order they are made; both
 * ends share the number.  Every message sent goes to a tap (when
 * enabled) that tests read to assert what went on the wire, and tests
 * may deliver any raw message to an end as if its peer had sent it.
 *
 * Given the seed and the same sequence of sends, every decision
 * (order, holds, duplicates) is the same.
 *
 * The functions below are called from the tests' threads, never from
 * the carrier's own (except fake_sctp_tap_*, which take a lock).
 */
#ifndef UIW_TESTS_FAKE_SCTP_H
#define UIW_TESTS_FAKE_SCTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "llp/sctp_backend.h"

#define FAKE_SCTP_MAXSEG_DEF 1400

/* What an end's info says of its peer's Adaptation Layer Indication. */
enum fake_sctp_adapt {
	FAKE_ADAPT_DDP = 0,     /* seen, UIW_SCTP_ADAPT_DDP */
	FAKE_ADAPT_NONE,        /* not seen */
	FAKE_ADAPT_OTHER,       /* seen, adapt_other */
};

/* How the carrier runs; a zeroed struct gives the defaults.  Applies to
 * associations made after it is set, except where it says otherwise. */
struct fake_sctp_cfg {
	uint32_t seed;
	uint32_t maxseg;            /* 0: FAKE_SCTP_MAXSEG_DEF */
	/* The active end's inbound and outbound stream counts (the
	 * passive end's are the other way round); 0: the stack's
	 * configured count.  info.streams is the smaller. */
	uint16_t in_streams, out_streams;
	enum fake_sctp_adapt active_sees, passive_sees;
	uint32_t adapt_other;
	/* The rest applies at once. */
	size_t queue_max;           /* octets; 0: 64 MiB */
	unsigned window;            /* messages shuffled together; 0, 1:
				       delivered in the order sent */
	int unacked;                /* what uiw_sctp_unacked returns */
};

/* Which message a hold or a duplicate picks: the (skip + 1)-th message
 * sent from now on that matches every field (0 or -1: any). */
struct fake_sctp_pick {
	unsigned assoc;             /* 0: any association */
	int from_active;            /* -1 any, 0 the passive end, 1 active */
	int sid;                    /* -1: any */
	int64_t ppid;               /* -1: any */
	unsigned skip;
};

/* One message sent (the tap), or one to inject. */
struct fake_sctp_rec {
	unsigned assoc;
	bool from_active;
	uint16_t sid;
	uint32_t ppid;
	size_t len;
	const uint8_t *data;        /* the tap's copy: valid until
				       fake_sctp_tap_clear */
};

extern const struct uiw_sctp_ops fake_sctp_ops;

/* Puts the carrier in place of the user-space backend (UIW_SCTP_USER:
 * what UIW_LLP_SCTP_UDP uses), or restores it.  Only while no stack of
 * that kind exists. */
void fake_sctp_install(void);
void fake_sctp_uninstall(void);

/* Sets the configuration (any time; see struct fake_sctp_cfg). */
void fake_sctp_configure(const struct fake_sctp_cfg *cfg);

/* The carrier makes no more upcalls: what is queued or held is dropped,
 * timers stop.  sctp.c runs the layer's quiesce on the stack's thread
 * and then calls destroy from another, so work the carrier posted
 * before could run in between with the layer's state gone: tests call
 * this before they let the last reference to the stack go (destroying
 * the last CM channel).  New associations and sends after it still
 * work, without upcalls.  Returns 0, or -ENODEV without a stack. */
int fake_sctp_quiet(void);

/* Holds back the message p picks: delivered ms milliseconds after it was
 * sent, or (ms 0) at fake_sctp_release.  One pick armed at a time; any
 * number of messages held.  -ENODEV without a stack. */
int fake_sctp_hold(const struct fake_sctp_pick *p, unsigned ms);
/* Delivers every held message now (each ahead of its end's queue).
 * Returns how many, or -ENODEV. */
int fake_sctp_release(void);
/* Messages held now, or -ENODEV. */
int fake_sctp_held(void);
/* Delivers the message p picks twice (the copy queued right after it).
 * One pick armed at a time. */
int fake_sctp_dup(const struct fake_sctp_pick *p);

/* Hands one raw message to the end of association assoc (the active end
 * when to_active) as if its peer had sent it, on the carrier's thread;
 * returns once the msg upcall has returned.  0, -ENOENT (no such end, or
 * not up yet), -ENODEV. */
int fake_sctp_inject(unsigned assoc, bool to_active, uint16_t sid,
		     uint32_t ppid, const void *p, size_t len);
/* Aborts association assoc from one end, as uiw_sctp_abort does. */
int fake_sctp_abort(unsigned assoc, bool from_active);

/* While on, every send from that end says -EAGAIN (the peer's window
 * closed); off: writable follows if a send was refused. */
int fake_sctp_block(unsigned assoc, bool from_active, bool on);

/* Associations with an end alive (not yet down, or its down upcall
 * not yet returned), and the number of the newest ever made (0: none). */
int fake_sctp_assocs(void);
unsigned fake_sctp_last_assoc(void);
/* Waits (up to ms) until exactly n associations are alive: 0 or
 * -ETIMEDOUT. */
int fake_sctp_wait_assocs(int n, int ms);
/* What the carrier did since its stack was made. */
struct fake_sctp_stats {
	unsigned long reordered;    /* messages delivered after one their
				       sender sent later */
	unsigned long eagain;       /* sends refused for room */
	unsigned long writable, dry;    /* those upcalls made */
};
/* 0, or -ENODEV without a stack. */
int fake_sctp_stats(struct fake_sctp_stats *st);
/* The stack's configured stream count, or -ENODEV. */
int fake_sctp_streams(void);

/* Waits (up to ms) until no message is queued or in delivery and no up,
 * down, writable or dry upcall is pending; held messages do not count.
 * Says nothing of work the layer above may post afterwards.  0 or
 * -ETIMEDOUT. */
int fake_sctp_settle(int ms);

/* ---- The tap ------------------------------------------------------- */

void fake_sctp_tap_enable(bool on);     /* on at install */
size_t fake_sctp_tap_count(void);
/* Record i (0 the oldest); false when there is none. */
bool fake_sctp_tap_get(size_t i, struct fake_sctp_rec *r);
/* Waits (up to ms) for the tap to hold more than n records: 0 or
 * -ETIMEDOUT. */
int fake_sctp_tap_wait(size_t n, int ms);
void fake_sctp_tap_clear(void);

#endif
