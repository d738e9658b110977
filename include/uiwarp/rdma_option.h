/*
 * uiwarp's own connection options for rdma_cm programs that run on the
 * drop-in librdmacm.so.1 (uiwarp-rdma(7)).
 *
 * rdma_set_option(id, UIW_RDMA_OPTION_LEVEL, UIW_RDMA_OPT_..., &v, sizeof(v))
 * sets one on an id before rdma_connect, rdma_listen or rdma_accept.
 * An option not set is taken from the environment variable named
 * beside it, read when the connection or listener starts; neither set:
 * the default.  A value out of range fails with EINVAL, from
 * rdma_set_option, or from rdma_connect / rdma_listen / rdma_accept for
 * the environment.
 *
 * Only definitions: nothing here needs linking against uiwarp.
 */
#ifndef UIWARP_RDMA_OPTION_H
#define UIWARP_RDMA_OPTION_H

#include <uiwarp/uiwarp.h>   /* enum uiw_llp_kind, UIW_RTR_* (cm.h) */

/* The level of rdma_set_option for the options below ("UI"). */
#define UIW_RDMA_OPTION_LEVEL 0x5549

enum {
	/* uint8_t, 1 or 2; $UIWARP_MPA_REV.  Initiator: the revision of
	 * the MPA Request (default 2, RFC 6581).  Listener: the highest
	 * revision it answers (uiw_cm_set_max_mpa_rev). */
	UIW_RDMA_OPT_MPA_REV = 1,
	/* int, 0 or 1; $UIWARP_CRC: ask for the MPA CRC (default 1,
	 * RFC 5044 §4.4). */
	UIW_RDMA_OPT_CRC = 2,
	/* int, 0 or 1; $UIWARP_MARKERS: ask the peer for markers (default
	 * 0). */
	UIW_RDMA_OPT_MARKERS = 3,
	/* int, 0 or 1; $UIWARP_P2P: initiator: peer-to-peer mode, RFC 6581
	 * §9.2 (default 1: either side may send first, as programs written
	 * for iWARP NICs whose CM runs peer-to-peer expect). */
	UIW_RDMA_OPT_P2P = 4,
	/* uint8_t, UIW_RTR_* flags; $UIWARP_RTR, a comma list of send,
	 * write, read: the RTR types this side supports (default all). */
	UIW_RDMA_OPT_RTR = 5,
	/* uint16_t, 0 to UIW_START_DELAY_MAX_MS; $UIWARP_START_DELAY_MS:
	 * initiator: the wait between an accepting MPA Reply and Full
	 * Operation (default UIW_RDMA_DEFAULT_START_DELAY_MS). */
	UIW_RDMA_OPT_START_DELAY_MS = 6,
	/* int, enum uiw_llp_kind; $UIWARP_LLP, one of tcp, sctp, sctp-udp,
	 * sctp-kernel: what carries DDP (default tcp). */
	UIW_RDMA_OPT_LLP = 7,
	/* uint16_t, 1 to 65535; $UIWARP_UDP_PORT: DDP over SCTP over UDP,
	 * the UDP port (RFC 6951; default $UIW_SCTP_UDP_PORT, else 9899). */
	UIW_RDMA_OPT_UDP_PORT = 8,
};

/* The initiator's default start delay (UIW_RDMA_OPT_START_DELAY_MS):
 * Linux siw 6.1 as a responder may leave an FPDU that arrives right
 * after its MPA Reply unread, which stalls the connection; waiting
 * before the first FPDU avoids it (RFC 5044 §7.1.2 rule 4 lets a
 * responder wait for it).  uiwarp-rdma(7) says how to turn it off. */
#define UIW_RDMA_DEFAULT_START_DELAY_MS 100

#endif
