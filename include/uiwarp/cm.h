/*
 * uiwarp connection manager: listen, connect, accept, reject and
 * disconnect, modelled on librdmacm.  The lower layer (LLP) is named per
 * connection and per listener: TCP (IPv4 and IPv6) with MPA startup
 * (RFC 5044 §7), or SCTP (RFC 5043) with DDP Stream Sessions: each
 * connection a session on a stream of an SCTP association, Initiate /
 * Accept / Reject / Terminate carrying the private data and, enhanced
 * (RFC 6581 §7), the IRD/ORD word; connections to one peer share an
 * association.  Over SCTP the MPA fields of uiw_conn_param (revision 1
 * asks for plain session codes; CRC, markers, alignment, start delay)
 * have no meaning, and peer-to-peer mode is not offered: either side
 * may send first (RFC 6581 §7).  Everything is
 * asynchronous; events are read from a channel whose fd becomes
 * readable when one is pending.
 */
#ifndef UIWARP_CM_H
#define UIWARP_CM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <uiwarp/uiwarp.h>   /* enum uiw_llp_kind */

#ifdef __cplusplus
extern "C" {
#endif

struct uiw_device;
struct uiw_qp;
struct uiw_cm_channel;
struct uiw_cm_id;

#define UIW_MPA_PRIVATE_DATA_MAX 512
/* RFC 6581 §9: with MPA revision 2 the first 4 octets of the private data
 * carry IRD, ORD and the peer-to-peer flags, and PD_Length counts them:
 * the application's private data is at most 508 octets. */
#define UIW_MPA_V2_PRIVATE_DATA_MAX 508

enum uiw_opt { UIW_OPT_DEFAULT = 0, UIW_OPT_OFF = 1, UIW_OPT_ON = 2 };

/* Ready-to-Receive indications of RFC 6581 §9.2 (peer-to-peer mode). */
enum {
	UIW_RTR_SEND  = 1u << 0,  /* zero-length Send (flag B) */
	UIW_RTR_WRITE = 1u << 1,  /* zero-length RDMA Write, STag 1 (flag C) */
	UIW_RTR_READ  = 1u << 2,  /* zero-length RDMA Read (flag D) */
	UIW_RTR_ALL   = 0x7u,
};
/* ird/ord value asking for no automatic negotiation (RFC 6581 §9.1, all
 * ones): the Request carries 0x3FFF and the local value stays the QP's
 * default.  Initiator only. */
#define UIW_IRD_ORD_MANUAL 0x3fffu

/*
 * How the connection runs.  A zeroed struct gives the defaults.
 *
 * MPA revision 2 (RFC 6581) is the default: the Request sets the
 * enhanced-setup bit and carries IRD and ORD; the responder answers in
 * the revision and format of the Request (RFC 6581 §10), so a revision 1
 * Request gets a revision 1 Reply; on accept, mpa_rev is not used.
 *
 * IRD/ORD negotiation (RFC 6581 §9.1): ird and ord are this side's
 * initial values.  The responder lowers its ORD to the initiator's IRD
 * and raises its IRD to the initiator's ORD (up to the device's
 * max_ird); the initiator lowers its ORD to the responder's IRD and
 * raises its IRD to the responder's ORD (up to max_ird; beyond it, it
 * sends the Terminate "insufficient IRD", 2/0/6).  With rd_strict the
 * values are requirements instead: a responder whose ord exceeds the
 * initiator's IRD rejects (uiw_cm_accept sends a Reply with R set that
 * names the ORD it needs, with the accept's private data, and returns
 * -ENOBUFS; the id is then the application's to destroy), and its IRD
 * is never raised; an initiator whose ird is below the responder's ORD
 * sends the Terminate 2/0/6.  The negotiated values are in the
 * ESTABLISHED event and in uiw_qp_query; without the IRD/ORD field
 * (revision 1) each side keeps its own.
 *
 * Peer-to-peer mode (RFC 6581 §9.2): an initiator with p2p ON offers the
 * RTR types in rtr (0: all three) and, after the Reply, sends one of
 * those the responder accepted (preferring Write, then Read, then Send)
 * as its first FPDU; if the responder accepted none of them it sends the
 * Terminate "no matching RTR option" (2/0/7) instead.  A responder
 * follows the initiator's choice of mode (p2p is not used on accept) and
 * accepts the offered types that are also in its rtr (0: all three);
 * when none of them is, its Reply names the types it does support.  The
 * RTR never reaches the application: no receive is consumed, no
 * completion is made, and a responder sends nothing before it.
 */
struct uiw_conn_param {
	enum uiw_llp_kind llp;      /* 0: TCP; UIW_LLP_SCTP*: RFC 5043.
				       Accept: the listener's LLP */
	/* SCTP over UDP, connect: the peer's UDP port (RFC 6951); 0: the
	 * environment's UIW_SCTP_UDP_PORT, else 9899. */
	uint16_t udp_port;
	const void *private_data;
	uint16_t private_data_len;  /* at most UIW_MPA_PRIVATE_DATA_MAX, or
				       UIW_MPA_V2_PRIVATE_DATA_MAX when the
				       frame is of revision 2 */
	uint8_t mpa_rev;            /* initiator: 0 or 2: revision 2; 1 */
	enum uiw_opt crc;           /* default ON (RFC 5044 §4.4) */
	enum uiw_opt markers;       /* markers we ask the peer to send: default OFF */
	uint32_t ird;               /* 0: the QP's/device default; at most
				       the device's max_ird, or
				       UIW_IRD_ORD_MANUAL (initiator) */
	uint32_t ord;
	int timeout_ms;             /* MPA startup timeout; 0: 10000 */
	enum uiw_opt p2p;           /* initiator: peer-to-peer, default OFF */
	uint8_t rtr;                /* UIW_RTR_* this side supports; 0: all */
	uint8_t rd_strict;          /* ird/ord are requirements (see above) */
	/* Initiator: after an accepting Reply, wait this many milliseconds
	 * (at most UIW_START_DELAY_MAX_MS) before Full Operation, that is
	 * before our first FPDU (the RTR in peer-to-peer mode) and the
	 * ESTABLISHED event; work requests posted meanwhile wait.  0: none.
	 * For responders that are not ready to read FPDUs when they send
	 * their Reply (Linux siw 6.1 sometimes leaves an FPDU that arrives
	 * at once unread): the delay lets them get ready before our first
	 * FPDU, which RFC 5044 §7.1.2 rule 4 lets them wait for.  How often
	 * siw does it and the delay the tests use: README, Interoperability. */
	uint16_t start_delay_ms;
	/* FPDU alignment with TCP segments (RFC 5044 §5.1, a SHOULD: it
	 * lets a receiver place each segment as it comes).  ON: kept
	 * (where a full FPDU fills a segment, as on Ethernet, runs of FPDUs
	 * still go in one message; on loopback, where a full FPDU of at
	 * most 64776 octets is shorter than a segment of 65483, each FPDU
	 * is a message of its own).  OFF: not sought: runs of FPDUs go in
	 * one message and TCP cuts them anywhere (the peer reassembles, as
	 * it must; capture decoders that look for FPDUs at segment starts
	 * lose most of them).  DEFAULT: ON, except to this host (loopback,
	 * or our own address) without markers where a full FPDU is shorter
	 * than a segment: OFF.  There alignment costs a message (and the
	 * kernel's work for it) per FPDU and buys nothing, since nothing
	 * crosses a network that could use it; the figures are in
	 * bench/profile.md.  Captures on lo that must decode every FPDU ask for
	 * ON (uiwarp-wiretest does). */
	enum uiw_opt align;
};
#define UIW_START_DELAY_MAX_MS 10000

enum uiw_cm_event_type {
	UIW_CM_EVENT_CONNECT_REQUEST = 0, /* on a listener: ev.id is new */
	UIW_CM_EVENT_ESTABLISHED,
	UIW_CM_EVENT_REJECTED,        /* peer rejected; private data in ev */
	UIW_CM_EVENT_CONNECT_ERROR,   /* ev.status: -ETIMEDOUT, -ECONNREFUSED, -EPROTO ...
				       * After a Terminate of RFC 6581 that we
				       * sent: -ENOBUFS (2/0/6, insufficient
				       * IRD), -ENOPROTOOPT (2/0/7, no matching
				       * RTR option). */
	UIW_CM_EVENT_DISCONNECTED,    /* the connection ended (either side) */
	UIW_CM_EVENT_TIMEWAIT_EXIT,
};
const char *uiw_cm_event_str(enum uiw_cm_event_type type);

/* What the peer's MPA startup frame said (llp UIW_LLP_TCP), as
 * received; all zero before a frame arrived. */
struct uiw_cm_mpa_info {
	uint8_t rev;                  /* its revision */
	uint8_t peer_crc;             /* peer asked for CRC (C) */
	uint8_t peer_markers;         /* peer asked for markers (M) */
	/* RFC 6581: the frame had the enhanced-setup bit; its first 4
	 * octets (IRD, ORD, peer-to-peer flags) are not part of the
	 * event's private_data but its peer_* fields. */
	uint8_t enhanced;
};

struct uiw_cm_event {
	enum uiw_cm_event_type type;
	struct uiw_cm_id *id;         /* the id the event is about */
	struct uiw_cm_id *listen_id;  /* CONNECT_REQUEST: the listener */
	int status;                   /* 0 or -errno */
	uint8_t llp;                  /* enum uiw_llp_kind of the connection */
	/* The peer's private data (CONNECT_REQUEST, ESTABLISHED, REJECTED);
	 * valid until the next uiw_cm_get_event on the channel. */
	const void *private_data;
	uint16_t private_data_len;
	/* The peer's IRD and ORD, 0 when the peer did not say (with TCP:
	 * an MPA frame without the RFC 6581 field).  As sent: 0x3FFF means
	 * the peer leaves them to the ULP. */
	uint32_t peer_ird, peer_ord;
	uint8_t peer_p2p;             /* the peer set A (peer-to-peer) */
	uint8_t peer_rtr;             /* UIW_RTR_* flags the peer set */
	/* ESTABLISHED: the outcome on this side.  p2p: peer-to-peer mode;
	 * rtr: the initiator's RTR type (one UIW_RTR_*), or the types a
	 * responder accepts (the flags of its Reply); ird/ord: the values
	 * the QP uses. */
	uint8_t p2p;
	uint8_t rtr;
	uint32_t ird, ord;
	/* The lower layer's own part: for TCP, the peer's MPA frame. */
	struct uiw_cm_mpa_info mpa;
};

struct uiw_cm_channel *uiw_cm_channel_create(struct uiw_device *dev);
int uiw_cm_channel_destroy(struct uiw_cm_channel *ch); /* -EBUSY with ids left */
int uiw_cm_channel_fd(struct uiw_cm_channel *ch);
/* Takes the next event.  timeout_ms: 0 non-blocking (-EAGAIN when none),
 * -1 blocks.  Returns 0 or -errno (-ETIMEDOUT). */
int uiw_cm_get_event(struct uiw_cm_channel *ch, struct uiw_cm_event *ev,
		     int timeout_ms);

/* How a listener runs.  A zeroed struct gives the defaults. */
struct uiw_listen_param {
	enum uiw_llp_kind llp;      /* 0: TCP; UIW_LLP_SCTP*: RFC 5043, addr's
				       port is the SCTP port */
	int backlog;                /* TCP: the kernel's accept queue; SCTP:
				       associations being set up; <= 0: 128 */
	/* SCTP over UDP: the UDP port we receive on (RFC 6951); 0: the
	 * environment's UIW_SCTP_UDP_PORT, else 9899.  One per process:
	 * the first listener or connection fixes it. */
	uint16_t udp_port;
	/* TCP: with adopt set, the listener takes over adopt_fd, a TCP
	 * socket of the caller's that is bound (and may already listen)
	 * instead of making its own: the port is the caller's from the
	 * moment it bound it, and connections the kernel queued on it
	 * before the call are served too.  addr may then be NULL (the
	 * socket's address is the listener's; uiw_cm_local_addr).  On
	 * success the socket is the listener's (made non-blocking, closed
	 * when the listener goes); on failure it stays the caller's.
	 * Without adopt (a zeroed struct) adopt_fd is not used. */
	uint8_t adopt;
	int adopt_fd;
};
/* Listens on addr (port 0 picks one; see uiw_cm_local_addr), or on the
 * socket param adopts, with the LLP and backlog of param (NULL: the
 * defaults). */
int uiw_cm_listen_ex(struct uiw_cm_channel *ch, const struct sockaddr *addr,
		     socklen_t addrlen, const struct uiw_listen_param *param,
		     struct uiw_cm_id **listen_id);
/* uiw_cm_listen_ex over TCP with this backlog. */
int uiw_cm_listen(struct uiw_cm_channel *ch, const struct sockaddr *addr,
		  socklen_t addrlen, int backlog, struct uiw_cm_id **listen_id);
/* How long a listener waits for a new connection's MPA Request before it
 * closes it (ms; 0: the default, 10000; RFC 5044 §7.1.2 rules 8 and 10). */
int uiw_cm_set_startup_timeout(struct uiw_cm_id *listen_id, int timeout_ms);
/* The bound on a listener's connections that have not sent their MPA
 * Request yet (0: the default, the larger of the backlog and 128).  The
 * listener never stops accepting: at the bound, the oldest such
 * connection is closed (after a last look for its Request) to make room,
 * so that idle connections cannot keep out clients that send their
 * Request at once, and the listener holds at most this many of them
 * however many are opened.  Lowering the bound sheds the excess at once. */
int uiw_cm_set_max_awaiting(struct uiw_cm_id *listen_id, unsigned max);
/* The highest MPA revision a listener speaks: 2 (the default) or 1.
 * Limited to 1 it is a responder of RFC 5044 alone: a Request of
 * revision 2 is closed without a Reply (RFC 5044 §7.1.1 Rev; the
 * "enhanced MPA initiator only" case of RFC 6581 §10), after which the
 * initiator may try again with revision 1. */
int uiw_cm_set_max_mpa_rev(struct uiw_cm_id *listen_id, uint8_t rev);
/* Connects qp to dst; events go to ch. */
int uiw_cm_connect(struct uiw_cm_channel *ch, struct uiw_qp *qp,
		   const struct sockaddr *dst, socklen_t dstlen,
		   const struct uiw_conn_param *param, struct uiw_cm_id **id);
/* Accepts a CONNECT_REQUEST id on qp.  ESTABLISHED follows. */
int uiw_cm_accept(struct uiw_cm_id *id, struct uiw_qp *qp,
		  const struct uiw_conn_param *param);
/* Rejects a CONNECT_REQUEST id with an MPA Reply that has R set.  The
 * Reply to a revision 2 Request with the enhanced-setup bit carries the
 * IRD/ORD field too (the device defaults), so private data is at most
 * UIW_MPA_V2_PRIVATE_DATA_MAX octets then. */
int uiw_cm_reject(struct uiw_cm_id *id, const void *private_data,
		  uint16_t private_data_len);
/* Graceful close: the QP goes to Closing, then Idle/Error with flushed WRs.
 * During the setup (a connect under way, or an accept whose Reply is not
 * through yet) the close is deferred: it starts right after ESTABLISHED,
 * and if the setup fails instead there is nothing to close (0 either
 * way).  Once an established connection ended: 0; an id never
 * connected (or whose setup failed before the call): -ENOTCONN. */
int uiw_cm_disconnect(struct uiw_cm_id *id);
/* Frees an id (and stops a listener).  The QP stays with its owner. */
int uiw_cm_destroy_id(struct uiw_cm_id *id);

struct uiw_qp *uiw_cm_id_qp(struct uiw_cm_id *id);
void *uiw_cm_id_context(struct uiw_cm_id *id);
void uiw_cm_id_set_context(struct uiw_cm_id *id, void *ctx);
int uiw_cm_local_addr(struct uiw_cm_id *id, struct sockaddr_storage *ss);
int uiw_cm_peer_addr(struct uiw_cm_id *id, struct sockaddr_storage *ss);

/* Resolves "host" + "port" (numeric or names, IPv4/IPv6) to a sockaddr. */
int uiw_resolve(const char *host, const char *port, int passive,
		struct sockaddr_storage *ss, socklen_t *len);

#ifdef __cplusplus
}
#endif

#endif
