/*
 * SCTP carriers: what the RFC 5043 layer (ddps.c and the CM) needs of an
 * SCTP stack, and what each backend gives it.
 *
 *   sctp_usr.c   usrsctp in AF_CONN mode, its packets carried in UDP
 *                (RFC 6951) on sockets of ours; runs wherever uiwarp
 *                runs, without privileges.
 *   sctp_kern.c  the kernel's SCTP (one-to-one sockets), where the
 *                kernel has it; UDP encapsulation when the kernel's
 *                net.sctp.udp_port is set.
 *
 * A stack is one per backend and process (usrsctp is a process-wide
 * library).  It runs on a progress thread of its own
 * (uiw_sctp_stack_rt): every function below except stack_get/put and
 * every upcall runs there.  A backend never makes an upcall from inside
 * its SCTP implementation's own callbacks: it queues what those
 * callbacks report and delivers it after, so that an upcall may call
 * any function here.
 *
 * Every association a stack makes or accepts is set up for DDP only:
 * the Adaptation Layer Indication with the DDP code point goes in INIT
 * and INIT-ACK (RFC 5043 §5.1, RFC 5061 §4.2.6), inbound and outbound
 * stream counts are equal (§8), one local address (§7.2), SCTP_NODELAY
 * on, every message sent as one unordered DATA chunk (§10).  What the
 * peer said of itself is in struct uiw_sctp_info; judging it is the
 * caller's job (uiw_sctp_abort when it carries no DDP).
 */
#ifndef UIW_LLP_SCTP_H
#define UIW_LLP_SCTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/uio.h>

struct uiw_rt;
struct uiw_sctp_stack;
struct uiw_sctp_assoc;
struct uiw_sctp_lsn;

enum uiw_sctp_kind {
	UIW_SCTP_USER,     /* usrsctp over UDP */
	UIW_SCTP_KERNEL,   /* the kernel's SCTP */
};

#define UIW_SCTP_UDP_PORT    9899   /* RFC 6951 §5.1's registered port */
#define UIW_SCTP_ADAPT_DDP   0x00000001u  /* RFC 5043 §5.1 */
#define UIW_SCTP_PPID_DDP    16u    /* RFC 5043 §5.2: DDP Segment */
#define UIW_SCTP_PPID_CTL    17u    /* DDP Stream Session Control */
#define UIW_SCTP_STREAMS_DEF 256    /* streams asked for, each way */

struct uiw_sctp_config {
	/* UDP encapsulation (RFC 6951; usrsctp, and the kernel when its
	 * net.sctp.udp_port is set).  udp_port: the local port listeners
	 * receive on, and the remote one connects send to; 0: 9899.  An
	 * active association's local UDP port is ephemeral: the peer
	 * answers to the port it saw (§5.4). */
	uint16_t udp_port;
	uint16_t streams;      /* each way; 0: UIW_SCTP_STREAMS_DEF */
	/* Path MTU the association uses (SCTP headers, chunk headers and
	 * user data; not the UDP/IP headers); 0: the backend's default
	 * (usrsctp: $UIW_SCTP_MTU if set, else by peer: 65487 to a
	 * loopback address, 1452 to others). */
	uint32_t mtu;
};

/* Takes a reference on the process's stack of this kind, creating it
 * (and its progress thread) on first use with cfg (NULL: defaults;
 * later callers share the first one's).  Any thread.  Returns 0,
 * -EPROTONOSUPPORT with a logged reason when the backend cannot run here
 * (the kernel has no SCTP; usrsctp missing), or -errno. */
int uiw_sctp_stack_get(enum uiw_sctp_kind kind,
		       const struct uiw_sctp_config *cfg,
		       struct uiw_sctp_stack **out);
/* Drops a reference; the last one stops and frees the stack.  Whoever
 * keeps a listener or an association keeps a reference for it, and
 * drops it after unlisten or the down upcall.  Any thread except the
 * stack's own. */
void uiw_sctp_stack_put(struct uiw_sctp_stack *s);
struct uiw_rt *uiw_sctp_stack_rt(struct uiw_sctp_stack *s);
/* The layer above (ddps.c) lets go of what it keeps on a stack whose
 * last reference goes: fn runs on the stack's thread before the backend
 * stops, and the backend then frees its associations and listeners
 * without upcalls.  One hook per process; any thread. */
void uiw_sctp_set_quiesce(void (*fn)(struct uiw_sctp_stack *s));
enum uiw_sctp_kind uiw_sctp_stack_kind(const struct uiw_sctp_stack *s);
/* What the stack runs with (the first user's, defaults filled). */
const struct uiw_sctp_config *uiw_sctp_stack_config(
	const struct uiw_sctp_stack *s);

/* What an association is, once up. */
struct uiw_sctp_info {
	struct sockaddr_storage local, peer;  /* IP addresses, SCTP ports */
	uint16_t peer_udp_port;  /* the peer's UDP port (0: none) */
	uint16_t streams;        /* usable each way: min(inbound, outbound) */
	uint16_t in_streams, out_streams;  /* as negotiated */
	uint32_t maxseg;         /* largest user message sent as one DATA
				    chunk without fragmentation (what
				    SCTP_MAXSEG reports) */
	bool peer_adapt_seen;    /* the peer sent an Adaptation Layer
				    Indication */
	uint32_t peer_adapt;     /* its value */
	bool active;             /* we sent the INIT */
};

/* Upcalls, on the stack's thread.  A listener's go to the listener's
 * ctx until uiw_sctp_assoc_bind gives an accepted association its own;
 * a connect's go to the ctx given to uiw_sctp_connect. */
struct uiw_sctp_up {
	/* The association is up (the handshake is over: for a listener, a
	 * new association).  info is valid during the call. */
	void (*up)(void *ctx, struct uiw_sctp_assoc *a,
		   const struct uiw_sctp_info *info);
	/* One whole user message (never a part), as received, in the
	 * order the stack delivers them (unordered chunks: any order).
	 * buf[0..len) is the callee's: free it with uiw_sctp_buf_free.
	 * ppid in host order. */
	void (*msg)(void *ctx, struct uiw_sctp_assoc *a, uint16_t sid,
		    uint32_t ppid, void *buf, size_t len);
	/* Room to send again after uiw_sctp_send said -EAGAIN. */
	void (*writable)(void *ctx, struct uiw_sctp_assoc *a);
	/* Everything sent so far is acknowledged (SCTP_SENDER_DRY_EVENT).
	 * Reported after uiw_sctp_watch_dry asked for it, once. */
	void (*dry)(void *ctx, struct uiw_sctp_assoc *a);
	/* The association is over (or never came up): err 0 after an
	 * orderly SHUTDOWN (ours or the peer's), -ECONNREFUSED (the peer
	 * refused or aborted the setup), -ETIMEDOUT (setup or path gave
	 * up), -ECONNRESET (the peer aborted), -ECONNABORTED (we
	 * aborted: uiw_sctp_abort), -EPROTO (the backend aborted it
	 * because the peer broke one of its bounds: usrsctp's, a message
	 * over 68 KiB).  Messages received before are delivered first.
	 * a is freed when the call returns. */
	void (*down)(void *ctx, struct uiw_sctp_assoc *a, int err);
};

/* Listens on sa (IP address and SCTP port; port 0: any free one, see
 * uiw_sctp_lsn_addr).  backlog: associations being set up at once.
 * Returns 0 or -errno (-EADDRINUSE, ...). */
int uiw_sctp_listen(struct uiw_sctp_stack *s, const struct sockaddr *sa,
		    socklen_t salen, int backlog,
		    const struct uiw_sctp_up *up, void *ctx,
		    struct uiw_sctp_lsn **out);
/* The listener's address (with the port chosen). */
void uiw_sctp_lsn_addr(const struct uiw_sctp_lsn *l,
		       struct sockaddr_storage *ss);
/* Stops listening; associations it accepted live on. */
void uiw_sctp_unlisten(struct uiw_sctp_lsn *l);

/* Starts an association to peer (IP address, SCTP port); local (may be
 * NULL) picks the local IP address; udp_port: the peer's UDP port for
 * encapsulation (RFC 6951), 0: cfg.udp_port.  Returns 0 with *out set
 * (up or down follows), or -errno. */
int uiw_sctp_connect(struct uiw_sctp_stack *s, const struct sockaddr *peer,
		     socklen_t peerlen, const struct sockaddr *local,
		     socklen_t locallen, uint16_t udp_port,
		     const struct uiw_sctp_up *up, void *ctx,
		     struct uiw_sctp_assoc **out);
/* Gives the association its own upcalls (after a listener's up). */
void uiw_sctp_assoc_bind(struct uiw_sctp_assoc *a,
			 const struct uiw_sctp_up *up, void *ctx);
const struct uiw_sctp_info *uiw_sctp_assoc_info(
	const struct uiw_sctp_assoc *a);

/* Sends iov as one unordered user message (U flag, RFC 5043 §10) on
 * stream sid with ppid (host order; sent in network order).  The
 * message is copied.  Returns 0, -EAGAIN (no room now: writable
 * follows), -EMSGSIZE (longer than info.maxseg), -EINVAL (sid out of
 * range, or no octets), -ENOTCONN (not up yet, or going down). */
int uiw_sctp_send(struct uiw_sctp_assoc *a, uint16_t sid, uint32_t ppid,
		  const struct iovec *iov, int iovcnt);
/* DATA chunks sent and not yet acknowledged (SCTP_STATUS
 * sstat_unackdata), or -errno. */
int uiw_sctp_unacked(struct uiw_sctp_assoc *a);
/* Asks for one dry upcall when everything sent is acknowledged (at
 * once, from the next round, if it is already). */
void uiw_sctp_watch_dry(struct uiw_sctp_assoc *a);
/* Orderly SHUTDOWN after what was sent (down follows with 0). */
void uiw_sctp_shutdown(struct uiw_sctp_assoc *a);
/* ABORT now; down follows with -ECONNABORTED from the next round. */
void uiw_sctp_abort(struct uiw_sctp_assoc *a);

void uiw_sctp_buf_free(struct uiw_sctp_stack *s, void *buf);

#endif
