/*
 * MPA in Full Operation (RFC 5044 §4-§6, with RFC 6581): the framing
 * that carries the engine's DDP segments on a TCP byte stream.  It sees
 * the engine only through rnic/framing.h.
 *
 *   transmit (mpa_tx.c)  each DDP segment the engine hands out becomes an
 *     FPDU: ULPDU_Length, the segment, pad, CRC (§4.1, §4.4) and markers
 *     where the stream position asks for them (§4.3); the FPDUs of a
 *     batch are cut into messages at FPDU boundaries so that TCP
 *     segments start at FPDU boundaries (§5.1, the alignment plan).
 *   receive (mpa_rx.c)   the byte stream is delineated into FPDUs; each
 *     one's DDP header goes to the engine, its payload where the engine
 *     says (direct placement), markers, pad and CRC to scratch; the CRC
 *     and markers are checked before the segment ends (§4.4, §8).
 *   the hold (§7.1.2 rule 4): a responder sends no FPDU before it has
 *     received a valid one.
 *
 * One object per connection, driven by the TCP LLP (tcp.c) or by a test
 * harness; no sockets here.  Calls of one direction are serialised by
 * the caller (one receiver, one transmitter at a time).
 */
#ifndef UIW_LLP_MPA_H
#define UIW_LLP_MPA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>
#include "../rnic/framing.h"
#include "../wire/mpa.h"

struct uiw_mpa_params {
	bool crc;          /* CRC generated and checked (RFC 5044 §4.4) */
	bool markers_tx;   /* the peer asked for markers: we insert them */
	bool markers_rx;   /* we asked for markers: the peer inserts them */
	bool hold;         /* MPA responder (RFC 5044 §7.1.2 rule 4) */
	uint32_t mulpdu;   /* the largest ULPDU we send (from the EMSS) */
};

/* ---- Transmit state (mpa_tx.c) ---------------------------------------- */

#define UIW_MPA_TX_FPDUS 64        /* FPDUs framed ahead of the carrier */

/* One FPDU as framed: where it lies in the stream and its CRC; the
 * segment itself stays the engine's, and so does ULPDU_Length (written
 * in the segment's headroom, right before its header). */
struct uiw_mpa_tx_fpdu {
	const struct uiw_seg_out *seg;
	uint64_t pos;              /* stream position of its first octet */
	uint32_t len;              /* stream octets, markers included */
	uint8_t crc[UIW_MPA_CRC_LEN];
};

struct uiw_mpa_tx {
	struct uiw_mpa_tx_fpdu f[UIW_MPA_TX_FPDUS];
	uint32_t head, count;      /* ring of framed, unsent FPDUs */
	uint32_t sent;             /* octets of f[head] sent */
	uint64_t pos;              /* stream position after the last FPDU */
};

/* ---- Receive state (mpa_rx.c) ------------------------------------------ */

#define UIW_MPA_RX_MARKER_SLOTS 256  /* > markers in one FPDU */
#define UIW_MPA_RX_PIECES_INLINE 4   /* an FPDU without markers */
/* Octets named after ULPDU_Length and the two control octets before
 * the FPDU's length is known.  Every valid FPDU has at least this many
 * more (its header is 14 or 18 octets, then the CRC), so they are its
 * own; and they never reach its payload: 2 + 12 is a whole tagged
 * header (fewer octets of it when a marker lies among them), 2 + 12 of
 * an untagged one leaves 4.  So the header of a tagged segment (RDMA
 * Write, Read Response) arrives with one read, and payload octets are
 * only ever read into their place. */
#define UIW_MPA_RX_SPEC 12

enum { UIW_MPA_RX_PRELUDE, UIW_MPA_RX_BODY };

struct uiw_mpa_rx {
	uint64_t pos;              /* stream position of the next octet */
	uint64_t fpdu_pos;         /* the FPDU's first octet */
	uint8_t stage;
	uint8_t mk_lead;           /* 4 when a marker leads the FPDU */
	uint8_t start_got;
	bool stopped;              /* the engine reads no more */
	bool valid_seen;           /* an FPDU passed MPA's checks */
	uint8_t start[UIW_MPA_MARKER_LEN + UIW_MPA_LEN_FIELD + 2 +
		      UIW_MPA_RX_SPEC];
	uint16_t ulen;
	uint32_t crc;              /* running CRC32c state */
	bool crc_whole;            /* crc covers the whole FPDU already */
	struct uiw_mpa_piece *pieces;
	unsigned pieces_max;
	struct uiw_mpa_piece pieces_inline[UIW_MPA_RX_PIECES_INLINE];
	struct uiw_mpa_piece *pieces_big;  /* with markers */
	unsigned npieces, pi;
	uint32_t poff;             /* octets consumed of pieces[pi] */
	uint32_t u;                /* ULPDU octets consumed */
	uint8_t htarget;           /* header octets expected, 0: unknown */
	bool hdr_done;             /* the engine has the header */
	uint8_t hdr[UIW_SEG_HDR_MAX];
	uiw_err_t mk_err;          /* a marker disagreed */
	char why[96];
	bool tx;                   /* the last rx_done: the engine may have
				      segments to send */
	size_t handed;             /* octets named by the last rx_iov */
	const struct iovec *iov;   /* its iovecs (the caller keeps them as
				      they are until rx_done) */
	int niov, iov_i;
	size_t iov_off;
	/* inside uiw_mpa_rx_feed */
	bool feeding;
	size_t fed_run, fed_payload;
	/* scratch for what the engine does not see */
	uint8_t mk[UIW_MPA_RX_MARKER_SLOTS][UIW_MPA_MARKER_LEN];
	uint8_t lenf[UIW_MPA_LEN_FIELD];
	uint8_t pad[4];
	uint8_t crcf[UIW_MPA_CRC_LEN];
};

struct uiw_mpa {
	struct uiw_qp *qp;
	struct uiw_mpa_params p;
	struct uiw_mpa_tx tx;
	struct uiw_mpa_rx rx;
};

/* Initialises m for qp and attaches it: uiw_qp_llp_attach with lp (its
 * IRD, ORD, RTR and setup_term), to which m adds MULPDU (p->mulpdu),
 * in-order delivery, the responder's hold (p->hold, released by the
 * receive side after the first valid FPDU) and what uiw_qp_query
 * reports; ops and ctx are the carrier's.  Returns 0 or -errno;
 * uiw_mpa_fini in any case. */
int uiw_mpa_attach(struct uiw_mpa *m, struct uiw_qp *qp,
		   const struct uiw_mpa_params *p,
		   const struct uiw_llp_params *lp,
		   const struct uiw_llp_ops *ops, void *ctx);
/* Frees what m holds (after uiw_qp_llp_detach). */
void uiw_mpa_fini(struct uiw_mpa *m);
/* For uiw_llp_ops.query: the LLP (TCP) and how MPA runs (CRC, markers
 * each way). */
void uiw_mpa_query(const struct uiw_mpa *m, struct uiw_qp_attr *attr);

/* ---- Receive ------------------------------------------------------------ */

/* The receive state for m->p (from uiw_mpa_attach); 0 or -ENOMEM. */
int uiw_mpa_rx_init(struct uiw_mpa *m);
void uiw_mpa_rx_fini(struct uiw_mpa *m);
/* True inside an FPDU (its first octets have arrived, not its last):
 * the peer's FIN there is an error (uiw_qp_llp_fin). */
bool uiw_mpa_rx_mid(const struct uiw_mpa *m);

/* Fills at most max iovecs with where the next octets of the stream go
 * (direct placement: registered memory, posted receive buffers, or
 * scratch for headers, markers, pad and CRC).  Returns the count (>= 1
 * while the QP accepts input), 0 when the QP no longer reads (Terminate
 * sent or received; stop reading).  *ahead (may be NULL) gets how many
 * octets after those named are worth reading along with them: when the
 * iovecs end an FPDU that is not its message's last, and the next FPDU
 * is expected to end a message as long as the one before it
 * (uiw_qp_rx_guess), the rest of that FPDU; 0 otherwise, and always
 * with markers.  A guess: octets read ahead go in with uiw_mpa_rx_feed
 * like any others.  The iovecs must stay as they are until rx_done (it
 * reads the octets where they were named, for the CRC). */
#define UIW_MPA_RX_AHEAD_MAX 16384
int uiw_mpa_rx_iov(struct uiw_mpa *m, struct iovec *iov, int max,
		   size_t *ahead);
/* n octets (n <= the sum of the last rx_iov) arrived.  Returns 0, or
 * -EPROTO when they ended the stream (a Terminate is then queued for
 * transmit and ops->close follows once it is sent; or a Terminate
 * arrived).  While iovecs that name registered memory are with the
 * caller, the region cannot finish deregistering; rx_done (n may be 0,
 * after a read that returned EAGAIN) or the next rx_iov gives them
 * back.  Received octets may queue transmit work (Read Responses, a
 * Terminate, a responder's first FPDU): transmit after rx_done when
 * m->rx.tx says the engine may have segments to send. */
int uiw_mpa_rx_done(struct uiw_mpa *m, size_t n);

/* What uiw_mpa_rx_feed did with a buffer. */
struct uiw_mpa_fed {
	size_t used;                /* octets of the buffer consumed */
	size_t payload;             /* of them, DDP payload octets */
	size_t max_run;             /* longest run of payload copied at once */
	bool tx;                    /* the engine may have segments to send */
};
/* Receive path for octets the caller already holds (read ahead into its
 * own buffer): up to len octets of the stream from buf, each copied
 * where it belongs, in one receive turn of the engine.  The same checks
 * apply.  Must not be called while iovecs of an rx_iov are outstanding
 * (they are given back first).  Returns 0 (fed->used == len) or -EPROTO
 * when the stream ended (fed->used tells where), -EINVAL for bad
 * arguments. */
int uiw_mpa_rx_feed(struct uiw_mpa *m, const void *buf, size_t len,
		    struct uiw_mpa_fed *fed);

/* ---- Transmit (mpa_tx.c) ------------------------------------------------ */

/* A batch of octets to send, as uiw_mpa_tx_iov handed it out. */
struct uiw_mpa_batch {
	const struct iovec *iov;
	int n;
	size_t total;              /* octets */
	uint64_t pos;              /* stream position of the first octet */
	bool mid;                  /* it starts inside an FPDU (the rest of
				      one partly sent) */
	uint64_t ends[UIW_MPA_TX_FPDUS];  /* stream ends of the FPDUs that
					     end in it, in order */
	unsigned nends;
};

/* Fills at most max iovecs with the next octets to send (FPDUs: length
 * field and header, payload slices of registered memory, pad, markers
 * and CRC); returns the count, 0 when there is nothing to send now.  b
 * (may be NULL) describes the batch for uiw_mpa_plan.  The rest of a
 * partly sent FPDU comes alone, so that the next message starts with a
 * whole FPDU (RFC 5044 §5.1).  The iovecs stay valid until tx_done
 * accounts for them. */
int uiw_mpa_tx_iov(struct uiw_mpa *m, struct iovec *iov, int max,
		   struct uiw_mpa_batch *b);
/* n octets of the last tx_iov were sent.  Returns false when there is
 * nothing more to send now, true when there may be. */
bool uiw_mpa_tx_done(struct uiw_mpa *m, size_t n);
/* Stream position of the next octet to send. */
uint64_t uiw_mpa_tx_pos(const struct uiw_mpa *m);

/* ---- The alignment plan (mpa_tx.c) -------------------------------------- */

/* What the carrier knows of its transport. */
struct uiw_mpa_plan_in {
	uint32_t emss;             /* FPDUs share a message up to this many
				      octets (RFC 5044 §4.5 EMSS) */
	bool multi;                /* a message may span segments: TCP cuts
				      it at every EMSS from its start, and
				      full FPDUs fill segments exactly */
	bool unaligned;            /* alignment given up: runs of FPDUs */
	bool markers;              /* markers are inserted */
};
/* One message of a batch. */
struct uiw_mpa_msg {
	const struct iovec *iov;
	size_t iovlen;
};
/* A batch no longer than this goes as one message when it starts and
 * ends at FPDU boundaries (no markers): the usual batch of a ping-pong,
 * whose FPDUs would share a segment anyway. */
#define UIW_MPA_PLAN_SMALL 512
/* Cuts the batch b into messages at FPDU boundaries (RFC 5044 §5.1),
 * at most msg_max (mv: room for b->n + msg_max iovecs, the pieces of
 * cut iovecs).  Returns the count (>= 1 for a non-empty batch);
 * *planned gets the octets they hold (the batch, or its whole FPDUs
 * when it ends in a cut one), *eor whether each message must end its
 * transport segment (false: the transport may append the next message
 * to its last segment).  Pure: no I/O, no state. */
unsigned uiw_mpa_plan(const struct uiw_mpa_batch *b,
		      const struct uiw_mpa_plan_in *in, struct iovec *mv,
		      struct uiw_mpa_msg *msg, unsigned msg_max,
		      size_t *planned, bool *eor);

#endif
