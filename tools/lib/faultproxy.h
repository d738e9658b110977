/*
 * A fault-injecting TCP proxy for tests: a static library (uiw_faultproxy)
 * that the C tests under tests/faultproxy link, and the program
 * uiwarp-faultproxy wraps for shell tests.
 *
 * uiw_fp_start() listens on the loopback address of the target's family
 * (127.0.0.1 or ::1), port 0, and runs one thread that relays every
 * accepted connection to the target.  A test connects to the proxy's
 * port instead of the target's and tells the proxy, for each direction
 * of the stream, what to do to the octets it forwards:
 *
 *   split   forward in writes of at most N octets (N = 1: one write, and
 *           with TCP_NODELAY one TCP segment, per octet);
 *   delay   hold every chunk read for D ms before forwarding it (and the
 *           FIN too); a timer in the proxy's poll loop, nothing sleeps;
 *   stall   forward up to stream offset X and then nothing more until
 *           uiw_fp_release() (or ever);
 *   reset   once X octets have been delivered, abort both legs (close
 *           with SO_LINGER 0, so both peers get a RST); "delivered":
 *           the proxy waits until its send queue towards the receiver
 *           is empty (acknowledged), at most one second, because a RST
 *           discards what is still queued;
 *   shut    once X octets have been delivered, shutdown(SHUT_WR) towards
 *           the receiver of that direction (it reads EOF at X); later
 *           octets of that direction are read and discarded, the other
 *           direction keeps flowing;
 *   flip    invert bit b (0 = least significant) of the octet at stream
 *           offset X.
 *
 * Stream offsets count the octets of one connection in one direction
 * from 0.  Split and delay stay in force until changed.  Stall, reset,
 * shut and flip are triggers: each is armed once and fires once (a stall
 * is disarmed by uiw_fp_release()); a trigger that has not fired when a
 * connection ends stays armed for the next one, counted from that one's
 * start.  A stall, reset or shut armed at an offset the current
 * connection has already passed fires at once; a flip of an octet that
 * has already been forwarded is refused (EALREADY).  Triggers at the
 * same offset act in the order reset, shut, stall.
 *
 * Connections: one at a time.  While one is open the proxy does not
 * accept; further clients wait in the listen backlog and are served, in
 * order, after it has closed (their connect() has already succeeded:
 * the kernel completes the handshake).  The target leg is connected
 * only after a client is accepted; octets from the client are held
 * meanwhile.  Both legs have TCP_NODELAY.  A connection
 * ends when both directions have seen EOF and passed it on (FIN for FIN),
 * when a reset fault fires, or when either leg fails (ECONNRESET, EPIPE,
 * refused connect to the target): then both legs are aborted with a RST
 * and octets still held in the proxy are dropped.
 *
 * Every function is thread-safe and may be called while the proxy runs.
 * Functions returning int give 0 on success and -1 with errno set
 * (EINVAL for a bad argument) on failure.
 */
#ifndef UIW_TOOLS_FAULTPROXY_H
#define UIW_TOOLS_FAULTPROXY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/* A trigger offset that is not armed. */
#define UIW_FP_OFF UINT64_MAX

enum uiw_fp_dir {
	UIW_FP_C2S = 0,		/* client (connected to the proxy) -> target */
	UIW_FP_S2C = 1,		/* target -> client */
};

/* The faults of one direction. */
struct uiw_fp_faults {
	size_t split;		/* 0: no limit; N: at most N octets a write */
	unsigned int delay_ms;	/* 0: none */
	uint64_t stall_at;	/* UIW_FP_OFF or the offset to hold at */
	uint64_t reset_at;	/* UIW_FP_OFF or the offset to abort at */
	uint64_t shut_at;	/* UIW_FP_OFF or the offset to send FIN at */
	uint64_t flip_at;	/* UIW_FP_OFF or the octet to corrupt */
	unsigned int flip_bit;	/* 0..7 */
};

struct uiw_fp_stats {
	/* Per direction, indexed by enum uiw_fp_dir. */
	uint64_t offset[2];	/* octets forwarded in the current (or, until
				 * the next accept, the last) connection */
	uint64_t total[2];	/* octets forwarded over all connections */
	uint64_t dropped[2];	/* octets read but never forwarded */
	uint64_t writes[2];	/* send calls that forwarded data */
	bool stalled[2];	/* holding at a stall point now */
	unsigned int flips, resets, shuts;	/* triggers fired */
	unsigned int accepted;	/* connections accepted */
	unsigned int closed;	/* connections ended */
	bool active;		/* a connection is open now */
};

struct uiw_fp;

/* All faults off. */
void uiw_fp_faults_init(struct uiw_fp_faults *f);

/* Starts a proxy to target.  faults is NULL (none) or an array of two,
 * indexed by enum uiw_fp_dir.  Returns NULL with errno set on failure. */
struct uiw_fp *uiw_fp_start(const struct sockaddr *target, socklen_t len,
			    const struct uiw_fp_faults *faults);
/* Same, with the target given as a numeric address and port. */
struct uiw_fp *uiw_fp_start_to(const char *host, uint16_t port,
			       const struct uiw_fp_faults *faults);
/* Stops the thread and closes any open connection (normal close); from
 * then on every wait, in any thread, that would block returns at once
 * with ECANCELED.
 * The rest of the API stays usable until uiw_fp_stop(). */
void uiw_fp_halt(struct uiw_fp *fp);
/* Halts (if not yet done), waits for the waits in other threads to
 * return, and frees everything.  Call it once, with no call of the API
 * made after it has begun.  NULL is accepted. */
void uiw_fp_stop(struct uiw_fp *fp);

/* The port the proxy listens on (host order). */
uint16_t uiw_fp_port(const struct uiw_fp *fp);
/* The address the proxy listens on, for connect(2). */
void uiw_fp_addr(const struct uiw_fp *fp, struct sockaddr_storage *ss,
		 socklen_t *len);

/* Replaces all faults of one direction (the trigger states with them). */
int uiw_fp_set_faults(struct uiw_fp *fp, enum uiw_fp_dir dir,
		      const struct uiw_fp_faults *f);
int uiw_fp_split(struct uiw_fp *fp, enum uiw_fp_dir dir, size_t n);
int uiw_fp_delay(struct uiw_fp *fp, enum uiw_fp_dir dir, unsigned int ms);
/* Arms a trigger; off = UIW_FP_OFF disarms it. */
int uiw_fp_stall(struct uiw_fp *fp, enum uiw_fp_dir dir, uint64_t off);
int uiw_fp_reset(struct uiw_fp *fp, enum uiw_fp_dir dir, uint64_t off);
int uiw_fp_shut(struct uiw_fp *fp, enum uiw_fp_dir dir, uint64_t off);
int uiw_fp_flip(struct uiw_fp *fp, enum uiw_fp_dir dir, uint64_t off,
		unsigned int bit);
/* Disarms the stall of one direction; forwarding resumes. */
int uiw_fp_release(struct uiw_fp *fp, enum uiw_fp_dir dir);

void uiw_fp_get_stats(struct uiw_fp *fp, struct uiw_fp_stats *st);

/* Waits until the connection open now (or, if none is, the next one to
 * be accepted) has forwarded at least off octets in direction dir.
 * timeout_ms < 0 waits without limit.  Fails with ETIMEDOUT, with
 * ENOTCONN when that connection ended short of off, or with ECANCELED
 * when the proxy is stopped. */
int uiw_fp_wait_offset(struct uiw_fp *fp, enum uiw_fp_dir dir, uint64_t off,
		       int timeout_ms);
/* Same for connection number conn (1 for the first accepted; the number
 * of the open one is uiw_fp_stats.accepted).  The final offsets of the
 * last 64 connections are kept; an older one gives ENOTCONN. */
int uiw_fp_wait_offset_of(struct uiw_fp *fp, unsigned int conn,
			  enum uiw_fp_dir dir, uint64_t off, int timeout_ms);
/* Waits until at least n connections have ended (ETIMEDOUT, ECANCELED
 * otherwise). */
int uiw_fp_wait_closed(struct uiw_fp *fp, unsigned int n, int timeout_ms);

/* "c2s" / "s2c" and back; -1 for an unknown name. */
const char *uiw_fp_dir_name(enum uiw_fp_dir dir);
int uiw_fp_dir_parse(const char *s);

#endif
