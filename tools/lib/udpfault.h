/*
 * A fault-injecting UDP relay for tests of DDP over SCTP over UDP
 * (RFC 6951): part of the static library uiw_faultproxy, beside the TCP
 * proxy of faultproxy.h, and the --udp mode of uiwarp-faultproxy.
 *
 * uiw_uf_start() binds a UDP socket on the loopback address of the
 * upstream's family (127.0.0.1 or ::1) at the port asked for (0: one the
 * kernel picks; uiw_uf_port() tells it) and runs one thread that relays
 * datagrams between clients and one fixed upstream address:
 *
 *   - a datagram from a client (any source address that sends to the
 *     relay's port) goes to the upstream from a socket of the relay that
 *     belongs to that client alone: each client has its own source port
 *     towards the upstream, since an SCTP over UDP peer answers each
 *     association at the UDP source port it saw (RFC 6951);
 *   - a datagram the upstream sends to a client's socket goes back to
 *     that client, from the relay's port.
 *
 * Up to max_clients clients are tracked, each until the relay stops;
 * datagrams from further source addresses are dropped (counted as
 * refused).  Nothing but the loopback address is bound.
 *
 * Faults, per direction, act on whole datagrams in this order when one
 * is read:
 *
 *   cut      (both directions) while cut, every datagram is dropped,
 *            including those already held when they would leave;
 *   burst    drop the next K datagrams;
 *   drop     drop each with a probability;
 *   match    a filter (uiw_uf_match(), below) counts, drops or holds
 *            the datagrams its predicate picks;
 *   delay    hold each for D ms (the delay line keeps them in order: a
 *            change of D applies to datagrams read after it);
 *   reorder  with a probability, hold a datagram as it leaves the delay
 *            line until M later datagrams of its direction have gone out
 *            before it, or for at most T ms when they do not come
 *            (several may be held at once: bursts of reordering);
 *   dup      with a probability, send a datagram twice in a row.
 *
 * Probabilities are in parts per million (UIW_UF_PPM is certainty).  Each
 * direction draws from its own pseudo-random generator, three numbers per
 * datagram read (drop, reorder, dup) whatever the faults, so the fate of
 * the n-th datagram of a direction depends only on the seed and on the
 * faults in force: runs with the same seed and traffic are reproducible.
 *
 * Memory is bounded: per direction at most max_pending datagrams and
 * max_pending_bytes octets are held (delayed or reordered); a datagram
 * that would exceed either is dropped and counted as overflow.  A send
 * that fails (a full socket buffer, a refused port) drops the datagram,
 * counted as a send error, as a network would.  The relay's sockets ask
 * for 4 MiB buffers each way, so that the kernel drops as little as it
 * can beyond the faults asked for (what it drops before the relay reads
 * is counted nowhere).
 *
 * Timers are deadlines of the relay's poll loop (CLOCK_MONOTONIC);
 * nothing sleeps.  Every function is thread-safe and may be called while
 * the relay runs; a change takes effect with the next datagram.
 * Functions returning int give 0 on success and -1 with errno set
 * (EINVAL for a bad argument) on failure.
 */
#ifndef UIW_TOOLS_UDPFAULT_H
#define UIW_TOOLS_UDPFAULT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#define UIW_UF_PPM		1000000u	/* probability 1 */
#define UIW_UF_MAX_MS		3600000u	/* longest delay or hold */
#define UIW_UF_MAX_CLIENTS	256u
#define UIW_UF_MAX_PENDING	65536u

/* The same numbers as enum uiw_fp_dir: the far end is the upstream. */
enum uiw_uf_dir {
	UIW_UF_C2S = 0,		/* client -> upstream */
	UIW_UF_S2C = 1,		/* upstream -> client */
};

/* The faults of one direction. */
struct uiw_uf_faults {
	uint32_t drop_ppm;
	uint32_t dup_ppm;
	uint32_t reorder_ppm;
	unsigned int reorder_after;	/* M: later datagrams to let by; 0:
					 * release by time only */
	unsigned int reorder_ms;	/* T: longest hold, 1..UIW_UF_MAX_MS */
	unsigned int delay_ms;		/* 0..UIW_UF_MAX_MS */
};

struct uiw_uf_config {
	uint16_t port;			/* to bind (host order); 0: any */
	unsigned int max_clients;	/* 1..UIW_UF_MAX_CLIENTS */
	unsigned int max_pending;	/* held datagrams a direction,
					 * 1..UIW_UF_MAX_PENDING */
	size_t max_pending_bytes;	/* held octets a direction, >= 1 */
	uint64_t seed;
	struct uiw_uf_faults faults[2];	/* by enum uiw_uf_dir */
};

/* Counters of one direction.  Each datagram read ends as exactly one of
 * forwarded, dropped, overflow or send_errors, or is pending still. */
struct uiw_uf_dir_stats {
	uint64_t received;	/* datagrams read from the source */
	uint64_t forwarded;	/* sent on (a duplicate's copy not counted) */
	uint64_t bytes;		/* octets sent, duplicates' copies too */
	uint64_t dropped;	/* by cut, burst or drop */
	uint64_t duplicated;	/* second copies sent (one that fails to
				 * go is not counted anywhere) */
	uint64_t delayed;	/* put on the delay line */
	uint64_t reordered;	/* held back to be overtaken */
	uint64_t overflow;	/* dropped: the pending limit was reached */
	uint64_t send_errors;	/* dropped: the send failed */
	uint64_t matched;	/* picked by the filter (counted, dropped
				 * or held) */
	unsigned int pending;	/* held now (delayed or reordered) */
	unsigned int burst_left;	/* datagrams the burst still drops */
};

struct uiw_uf_stats {
	struct uiw_uf_dir_stats d[2];	/* by enum uiw_uf_dir */
	unsigned int clients;	/* tracked now */
	uint64_t refused;	/* datagrams from clients beyond the limit */
	bool cut, cut_forever;
};

struct uiw_uf;

/* No faults; reorder_after 3 and reorder_ms 50, so that a reorder
 * probability alone makes sense. */
void uiw_uf_faults_init(struct uiw_uf_faults *f);
/* Port 0, 16 clients, 1024 datagrams and 4 MiB pending a direction, seed
 * 1, no faults. */
void uiw_uf_config_init(struct uiw_uf_config *c);

/* Starts a relay to upstream; cfg NULL: uiw_uf_config_init()'s.  Returns
 * NULL with errno set on failure (EADDRINUSE for a port taken). */
struct uiw_uf *uiw_uf_start(const struct sockaddr *upstream, socklen_t len,
			    const struct uiw_uf_config *cfg);
/* Same, with the upstream given as a numeric address and port. */
struct uiw_uf *uiw_uf_start_to(const char *host, uint16_t port,
			       const struct uiw_uf_config *cfg);
/* Stops the thread promptly, whatever is pending (held datagrams are
 * discarded, nothing more is sent); from then on every wait, in any
 * thread, returns at once with ECANCELED.  The rest of the API stays
 * usable until uiw_uf_stop(). */
void uiw_uf_halt(struct uiw_uf *uf);
/* Halts (if not yet done), waits for the waits in other threads to
 * return, and frees everything.  Call it once, with no call of the API
 * made after it has begun.  NULL is accepted. */
void uiw_uf_stop(struct uiw_uf *uf);

/* The port the relay is bound to (host order). */
uint16_t uiw_uf_port(const struct uiw_uf *uf);
/* The address clients send to. */
void uiw_uf_addr(const struct uiw_uf *uf, struct sockaddr_storage *ss,
		 socklen_t *len);

/* Replaces all faults of one direction (not the burst). */
int uiw_uf_set_faults(struct uiw_uf *uf, enum uiw_uf_dir dir,
		      const struct uiw_uf_faults *f);
int uiw_uf_get_faults(struct uiw_uf *uf, enum uiw_uf_dir dir,
		      struct uiw_uf_faults *f);
int uiw_uf_drop(struct uiw_uf *uf, enum uiw_uf_dir dir, uint32_t ppm);
int uiw_uf_dup(struct uiw_uf *uf, enum uiw_uf_dir dir, uint32_t ppm);
int uiw_uf_reorder(struct uiw_uf *uf, enum uiw_uf_dir dir, uint32_t ppm,
		   unsigned int after, unsigned int max_ms);
int uiw_uf_delay(struct uiw_uf *uf, enum uiw_uf_dir dir, unsigned int ms);
/* Drops the next k datagrams of dir read (replacing a burst under way;
 * 0 ends it). */
int uiw_uf_burst(struct uiw_uf *uf, enum uiw_uf_dir dir, unsigned int k);
/* Cuts both directions until uiw_uf_uncut(); forever: for good, and
 * uiw_uf_uncut() then fails with EPERM. */
int uiw_uf_cut(struct uiw_uf *uf, bool forever);
int uiw_uf_uncut(struct uiw_uf *uf);
/* Restarts both directions' generators from seed. */
int uiw_uf_seed(struct uiw_uf *uf, uint64_t seed);

void uiw_uf_get_stats(struct uiw_uf *uf, struct uiw_uf_stats *st);

/* Wait until at least n datagrams of dir have been read (received), or
 * have been dealt with (done: forwarded, dropped, overflow or send
 * error).  timeout_ms < 0 waits without limit.  Fail with ETIMEDOUT, or
 * ECANCELED once the relay is halted. */
int uiw_uf_wait_received(struct uiw_uf *uf, enum uiw_uf_dir dir,
			 uint64_t n, int timeout_ms);
int uiw_uf_wait_done(struct uiw_uf *uf, enum uiw_uf_dir dir, uint64_t n,
		     int timeout_ms);

/*
 * Filters: faults aimed at particular datagrams.  A direction has at
 * most one filter: a predicate on a datagram's octets and what to do
 * with the datagrams it picks, among those that the cut, the burst and
 * the drop let through:
 *
 *   UIW_UF_COUNT  only count them (a tap: the predicate sees them all);
 *   UIW_UF_DROP   drop them;
 *   UIW_UF_HOLD   hold them, in the order they came and without delay
 *                 or reordering, until uiw_uf_release() or for at most
 *                 max_ms each (1..UIW_UF_MAX_MS), whichever comes first;
 *                 datagrams not picked go on meanwhile.
 *
 * Each datagram picked counts in matched.  Held datagrams share the
 * direction's pending limits (one beyond them is dropped as overflow)
 * and are lost if the path is cut before they leave; a duplication
 * drawn for one applies when it leaves.  The predicate runs on the
 * relay's thread with the relay's lock held, once per datagram read:
 * it must be quick and must not call this API; arg is its own.  The
 * draws of the random faults do not depend on filters.
 */
typedef bool (*uiw_uf_match_fn)(void *arg, const uint8_t *data, size_t len);

enum uiw_uf_action {
	UIW_UF_COUNT = 0,
	UIW_UF_DROP = 1,
	UIW_UF_HOLD = 2,
};

/* Sets dir's filter (replacing one there); fn NULL removes it.  Datagrams
 * held already stay held until released or their time is up. */
int uiw_uf_match(struct uiw_uf *uf, enum uiw_uf_dir dir, uiw_uf_match_fn fn,
		 void *arg, enum uiw_uf_action action, unsigned int max_ms);
/* Sends every datagram of dir that a filter holds, now, in the order
 * they came. */
int uiw_uf_release(struct uiw_uf *uf, enum uiw_uf_dir dir);
/* Waits until at least n datagrams of dir have been picked by filters
 * (matched), as the other waits. */
int uiw_uf_wait_matched(struct uiw_uf *uf, enum uiw_uf_dir dir, uint64_t n,
			int timeout_ms);

/*
 * Predicates for SCTP over UDP (RFC 6951 §4: a datagram's payload is
 * one SCTP packet).  A packet is the 12-octet common header (RFC 4960
 * §3.1: source and destination port, verification tag, checksum) and
 * chunks, each a 4-octet header (type, flags, length) and its value,
 * padded to a multiple of 4 octets (§3.2).  A DATA chunk (type 0,
 * §3.3.1) carries TSN, stream identifier, stream sequence number and
 * payload protocol identifier before its user data.  The checksum is
 * not checked.
 */
struct uiw_uf_sctp_data {
	uint32_t vtag;		/* the common header's verification tag */
	uint8_t flags;		/* of the DATA chunk: U, B, E bits */
	uint32_t tsn;
	uint16_t sid, ssn;
	uint32_t ppid;
	uint16_t data_len;	/* octets of user data */
	unsigned int index;	/* the chunk's position in the packet */
};

/* The first DATA chunk of the packet in data[0..len), in host order:
 * true with *d filled, false when the packet has none before its end or
 * before a chunk whose length does not fit. */
bool uiw_uf_sctp_first_data(const uint8_t *data, size_t len,
			    struct uiw_uf_sctp_data *d);
/* Whether the packet has a chunk of the type (RFC 4960 §3.2) before its
 * end or before a chunk whose length does not fit. */
bool uiw_uf_sctp_has_chunk(const uint8_t *data, size_t len, uint8_t type);
/* A predicate for uiw_uf_match(): arg points at a uint16_t stream
 * identifier; picks the packets whose first DATA chunk is on that
 * stream (a packet that leads with a chunk of the stream, as a
 * retransmission of it does). */
bool uiw_uf_match_sctp_sid(void *arg, const uint8_t *data, size_t len);

#endif
