/*
 * The SCTP carrier checks (src/llp/sctp.h), run against one backend:
 * a server (listener) and a client (connector) that follow one script,
 * in one process or in two (two hosts, a QEMU guest and its host).
 * Used by sctp_backend_check.c and tests/unit/test_sctp_kern.c.
 *
 * The script, each step checked on both sides:
 *   1. The client connects.  Both sides: up with the DDP Adaptation
 *      Layer Indication (RFC 5043 §5.1), as many streams in as out and
 *      as many as asked (§8), maxseg above 516 (§9; at most the path MTU
 *      given less 28 with --mtu), the UDP port (RFC 6951) as expected;
 *      send says -EINVAL on a stream out of range and -EMSGSIZE above
 *      maxseg.  Each side sends a set of messages (20 octets to maxseg,
 *      on four streams, PPIDs 16 and 17), then messages until a send
 *      says -EAGAIN, and after the writable upcall a few more, then END
 *      with the counts; each message arrives whole, on its stream with
 *      its PPID, once.  When everything it sent is acknowledged (dry;
 *      then unacked is 0) and everything announced arrived, a side sends
 *      DONE.  The client, with both DONEs, shuts down: down(0) on both
 *      sides, the server having received the client's DONE first.
 *   2. The client connects to the server's port + 1, where nothing
 *      listens: down(-ECONNREFUSED), and no up.
 *   3. The client connects again; the server sends HELLO, the client
 *      aborts on it: down(-ECONNABORTED) at the client (after which
 *      send says -ENOTCONN), down(-ECONNRESET) at the server.  Each
 *      side is done then: in two processes, neither outlives the
 *      other's need of it.
 */
#ifndef UIW_TESTS_SCTP_CHECK_H
#define UIW_TESTS_SCTP_CHECK_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>

#include "llp/sctp.h"

struct sctp_check_opts {
	enum uiw_sctp_kind kind;
	bool server, client;
	/* server: where to listen (port 0: any); client: where to connect
	 * (with server too and no address given, the server's own). */
	struct sockaddr_storage listen_addr, connect_addr;
	bool connect_given;
	struct uiw_sctp_config cfg;   /* udp_port, streams, mtu */
	int timeout_s;                /* the whole script */
	FILE *out;                    /* ok / FAIL lines */
};

/* Exit statuses of the check program. */
#define SCTP_CHECK_PASS    0
#define SCTP_CHECK_FAIL    1
#define SCTP_CHECK_NOSTACK 3      /* uiw_sctp_stack_get said
				     -EPROTONOSUPPORT */

/* Runs the script; returns one of the statuses above. */
int sctp_check_run(const struct sctp_check_opts *o);

/* "ADDR:PORT", "[ADDR6]:PORT" or "PORT" (any IPv4 address) -> ss. */
int sctp_check_parse_addr(const char *s, struct sockaddr_storage *ss);

#endif
