/*
 * Engine test helpers: two QPs joined by an in-memory pipe that copies
 * what one side's MPA framing (llp/mpa.h) sends into what the other
 * side's rx_iov names,
 * split as the test asks (one octet at a time, fixed sizes, random), and
 * that records each direction's byte stream.  No sockets.
 */
#ifndef UIW_TESTS_ENGINE_PIPE_H
#define UIW_TESTS_ENGINE_PIPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uiwarp/uiwarp.h>
#include "rnic/rnic.h"
#include "llp/mpa.h"
#include "unit/msg_framing.h"
#include "wire/ddp.h"

struct ep_side {
	struct uiw_device *dev;
	struct uiw_pd *pd;
	struct uiw_cq *cq;          /* send and receive completions */
	struct uiw_qp *qp;
	struct uiw_srq *srq;        /* where qp's receives come from */
	struct uiw_llp_params lp;   /* the engine's side of the attach */
	struct uiw_mpa_params mp;   /* the framing's (crc, markers, hold) */
	struct uiw_mpa mpa;         /* the MPA framing that carries qp */
	struct uiw_msgf msgf;       /* or the message framing (ep_framing) */
	uint8_t rec_hdr[UIW_MSGF_REC_LEN]; /* a record cut by ep_feed */
	uint32_t rec_hgot, rec_left;
	bool attached;
	int kicks;
	int closes;
	bool abortive;
	/* every octet this side transmitted */
	uint8_t *out;
	size_t out_len, out_cap;
	/* octets in flight towards the other side */
	uint8_t *q;
	size_t q_len, q_cap;
	bool rx_stopped;            /* rx_done returned -EPROTO / rx_iov 0 */
};

struct ep_pipe {
	struct ep_side a, b;
	bool own_dev_b;             /* b has its own device */
	size_t split;               /* octets per rx_done: 0 = random */
	int tx_iov_max;             /* iovecs per tx_iov (default 64) */
	int rx_iov_max;             /* iovecs per rx_iov (default 64) */
	bool tx_partial;            /* tx_done takes a random part */
	uint64_t rng;
};

struct ep_cfg {
	bool crc;
	bool markers;               /* both directions */
	uint32_t mulpdu;            /* 0: 65535 */
	uint32_t ird, ord;          /* 0: 8 */
	bool two_devices;
	bool hold_b;                /* b is the MPA responder (tx_held) */
	uint32_t max_wr;            /* 0: 64 */
	uint32_t max_sge;           /* 0: 4 */
	int cqe;                    /* 0: 1024 */
	uint32_t max_inline;
	uint32_t srq_b;             /* b's QP takes its receives from an SRQ
				       of this many buffers (ep_side.srq) */
};

uint64_t ep_rand(uint64_t *s);

/* Which framing carries the QPs: UIW_EP_FRAMING=msg the message framing
 * of msg_framing.h (segments in order), =msg-unordered the same with
 * each message's segments in another order, else MPA.  The crafted-frame
 * helpers below (ep_fpdu, ep_find_term, ep_count_fpdus) follow it. */
enum { EP_FR_MPA = 0, EP_FR_MSG, EP_FR_MSG_UNORDERED };
int ep_framing(void);
/* Runs the group; over the message framing without the tests named in
 * mpa_only (NULL-terminated lists), which are about MPA itself, and
 * with its segments out of order without those in ordered_only (errors
 * of order); it says which. */
struct CMUnitTest;
int ep_run_tests(const char *name, const struct CMUnitTest *tests, size_t n,
		 const char *const *mpa_only, const char *const *ordered_only);

/* The LLP callbacks of a side (ctx: the struct ep_side): they count
 * kicks and closes. */
extern const struct uiw_llp_ops ep_ops;

/* Creates both sides (devices, PDs, CQs, QPs) and attaches them. */
int ep_open(struct ep_pipe *p, const struct ep_cfg *cfg);
/* Creates the objects without attaching (QPs stay Idle). */
int ep_open_idle(struct ep_pipe *p, const struct ep_cfg *cfg);
int ep_attach(struct ep_pipe *p);
/* Attaches one side through its MPA framing (with s->lp). */
int ep_side_attach(struct ep_side *s);
/* Detaches what is attached, destroys everything; -1 if something
 * could not be freed (a region still registered, say). */
int ep_close(struct ep_pipe *p);
void ep_side_detach(struct ep_side *s, uiw_err_t err);

/* Moves octets both ways until nothing moves. Returns octets moved. */
size_t ep_pump(struct ep_pipe *p);
/* Takes what s transmits now into its capture (and its queue). */
size_t ep_drain_tx(struct ep_pipe *p, struct ep_side *s);
/* The MPA framing that carries qp (attached by ep_attach), or NULL. */
struct uiw_mpa *ep_mpa(struct uiw_qp *qp);
/* The framing's receive calls for the side of qp (tests that drive the
 * stream by hand). */
int ep_rx_iov(struct uiw_qp *qp, struct iovec *iov, int max);
int ep_rx_iov_ahead(struct uiw_qp *qp, struct iovec *iov, int max,
		    size_t *ahead);
int ep_rx_done(struct uiw_qp *qp, size_t n);
int ep_rx_feed(struct uiw_qp *qp, const void *buf, size_t len,
	       struct uiw_mpa_fed *fed);
/* The peer's FIN on the side of qp, inside an FPDU or not. */
void ep_llp_fin(struct uiw_qp *qp);
/* Attaches s through its framing (s->mp, s->lp); 0 or -1. */
int ep_side_attach(struct ep_side *s);

/* Feeds len octets into qp, split by split (0: random) using rng.
 * Returns octets accepted before the QP stopped reading. */
size_t ep_feed(struct uiw_qp *qp, const uint8_t *buf, size_t len,
	       size_t split, uint64_t *rng, int iov_max);

/* Memory registered in one go.  The allocation has EP_GUARD octets of
 * 0xEE before and after the registered len octets (ep_buf_guards_ok). */
#define EP_GUARD 256
struct ep_buf {
	uint8_t *p;
	size_t len;
	struct uiw_mr *mr;
	uint8_t *base;
};
int ep_buf_reg(struct ep_buf *b, struct uiw_pd *pd, size_t len,
	       unsigned access);
bool ep_buf_guards_ok(const struct ep_buf *b);
/* Deregisters and frees; aborts if a guard octet changed. */
void ep_buf_free(struct ep_buf *b);
void ep_fill(uint8_t *p, size_t len, uint32_t seed);

/* Posting shorthands (one SGE each; len 0 means no SGE for sends). */
int ep_post_recv(struct uiw_qp *qp, uint64_t id, struct ep_buf *b,
		 size_t off, uint32_t len);
int ep_post_send(struct uiw_qp *qp, uint64_t id, enum uiw_wr_opcode op,
		 unsigned flags, struct ep_buf *b, size_t off, uint32_t len,
		 uint32_t rkey, uint64_t raddr, uint32_t inv);

/* Polls up to max completions. */
int ep_poll(struct uiw_cq *cq, struct uiw_wc *wc, int max);

/* ---- Crafted frames ------------------------------------------------------ */

/* A ULPDU builder: header then payload. */
struct ep_ulpdu {
	uint8_t b[70000];
	size_t len;
};
void ep_ulpdu_hdr(struct ep_ulpdu *u, const struct uiw_ddp_hdr *h);
void ep_ulpdu_put(struct ep_ulpdu *u, const void *p, size_t len);
/* Frames u at stream position pos into out (cap); returns FPDU length. */
size_t ep_fpdu(uint8_t *out, size_t cap, uint64_t pos,
	       const struct ep_ulpdu *u, bool markers, bool crc);
/* Standard headers. */
void ep_hdr_send(struct uiw_ddp_hdr *h, uint8_t op, uint32_t msn,
		 uint32_t mo, bool last, uint32_t inv);
void ep_hdr_write(struct uiw_ddp_hdr *h, uint8_t op, uint32_t stag,
		  uint64_t to, bool last);
void ep_hdr_untagged(struct uiw_ddp_hdr *h, uint8_t op, uint32_t qn,
		     uint32_t msn, uint32_t mo, bool last);

/* Decodes the stream s transmitted from octet 0 (markers/crc as given)
 * and finds the Terminate in it.  Returns 0 and fills t and its DDP
 * header, or -1. */
int ep_find_term(const uint8_t *stream, size_t len, bool markers, bool crc,
		 struct uiw_ddp_hdr *th, struct uiw_term *t);
/* Walks a stream (markers/crc as given; or the message framing's
 * records) unit by unit, calling fn with each DDP segment until it
 * returns non-zero; returns the units seen, -1 if the stream is bad. */
int ep_walk(const uint8_t *s, size_t len, bool markers, bool crc,
	    int (*fn)(void *arg, const uint8_t *u, uint16_t ulen), void *arg);
/* Counts FPDUs in a stream and how many are of each RDMAP opcode. */
int ep_count_fpdus(const uint8_t *stream, size_t len, bool markers,
		   bool crc, unsigned per_opcode[16]);

#endif
