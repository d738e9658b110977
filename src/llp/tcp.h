/*
 * MPA over TCP in Full Operation (RFC 5044): the LLP that carries a QP
 * once the connection manager has finished the MPA startup.  It moves
 * octets between the socket and the engine (readv straight into the
 * places the engine names, one sendmsg per batch of FPDUs) and turns TCP
 * events into engine calls.
 */
#ifndef UIW_LLP_TCP_H
#define UIW_LLP_TCP_H

#include <stdbool.h>
#include <stdint.h>
#include "../wire/err.h"

struct uiw_rt;
struct uiw_qp;
struct uiw_tcp;

/* FPDU alignment with TCP segments (RFC 5044 §5.1; struct
 * uiw_conn_param in cm.h says when each is chosen). */
enum {
	UIW_TCP_ALIGN_KEEP = 0,    /* a message per FPDU where TCP would not
				      keep it by itself */
	UIW_TCP_ALIGN_NEVER,       /* runs of FPDUs in one message */
	UIW_TCP_ALIGN_AUTO,        /* KEEP, except to this host where a full
				      FPDU is shorter than a segment: NEVER */
};

/* The outcome of the MPA negotiation (RFC 5044 §7.1). */
struct uiw_tcp_params {
	bool crc;          /* CRC generated and checked */
	bool markers_tx;   /* the peer asked for markers: we insert them */
	bool markers_rx;   /* we asked for markers: the peer inserts them */
	bool hold_tx;      /* MPA responder (RFC 5044 §7.1.2 rule 4) */
	uint8_t align;     /* UIW_TCP_ALIGN_*: FPDU alignment (cm.h) */
	uint32_t ird, ord;
	uint8_t rtr_send;  /* RFC 6581 initiator: its RTR (UIW_RTR_*), or 0 */
	uint8_t rtr_recv;  /* RFC 6581 responder: RTR types accepted, or 0 */
	bool setup_term;   /* RFC 6581 responder of an enhanced connection */
};

/* Called once on the progress thread after the QP was detached: the
 * connection is over.  err is UIW_OK after an orderly close (ours or
 * the peer's) and UIW_E_MPA_CLOSED when it was lost (reset, error). */
typedef void (*uiw_tcp_closed_fn)(void *arg, uiw_err_t err);

/* Progress thread.  Takes the connected non-blocking socket fd whose MPA
 * startup ended exactly at the current stream position, sets
 * TCP_NODELAY, computes MULPDU from the current EMSS, attaches qp
 * (Idle -> RTS) and starts moving octets.  Returns 0, or -errno with fd
 * left to the caller (nothing else changed). */
int uiw_tcp_start(struct uiw_rt *rt, int fd, struct uiw_qp *qp,
		  const struct uiw_tcp_params *p, uiw_tcp_closed_fn closed,
		  void *arg, struct uiw_tcp **out);
/* Progress thread.  Resets the connection now if it is still up: the QP
 * is detached with UIW_E_MPA_CLOSED and closed() is called. */
void uiw_tcp_abort(struct uiw_tcp *t);
/* Progress thread.  True once the QP is detached and the socket closed. */
bool uiw_tcp_done(const struct uiw_tcp *t);
/* Progress thread.  Frees t; a connection still up is reset first
 * (the QP detached with UIW_E_MPA_CLOSED) without calling closed(). */
void uiw_tcp_free(struct uiw_tcp *t);

/* The SO_SNDBUF value for a new connection, or 0 to keep the kernel's
 * send buffer: cur is the buffer's size now (as getsockopt reports it),
 * emss the EMSS, local true when the peer is this host, runs true when
 * runs of FPDUs go as one message (alignment not kept), wmem_max and
 * tcp_wmem_max the sysctls net.core.wmem_max and the last of
 * net.ipv4.tcp_wmem (-1: unknown).  Pure; tcp.c explains the choice. */
int uiw_tcp_sndbuf_want(int cur, int emss, bool local, bool runs,
			long wmem_max, long tcp_wmem_max);
/* True when the peer of the connected socket fd is this host (a
 * loopback address, or our own address). */
bool uiw_tcp_peer_local(int fd);
/* Any thread, any number of times: reads those sysctls once for the
 * process (uiw_tcp_start does it too if nobody did before). */
void uiw_tcp_prepare(void);

/* Payload octets that passed through the receive staging buffer in
 * hand-overs with a large payload run (16896 octets or more) in them, all
 * connections: read ahead after small FPDUs, then copied to their
 * place.  A steady stream of large FPDUs adds nothing
 * (tests/loopback/test_noalloc.c checks it). */
extern _Atomic uint64_t uiw_tcp_staged_bulk;
/* Messages of at least UIW_TCP_BULK_MSG octets (a sendmsg, or one
 * message of a sendmmsg) the LLP has handed to the kernel, on every
 * connection: tests count them.  Small ones are not counted, so that a
 * ping-pong's threads do not share the counter's cache line. */
#define UIW_TCP_BULK_MSG 4096
extern _Atomic uint64_t uiw_tcp_tx_bulk_msgs;

#endif
