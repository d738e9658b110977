/*
 * DDP over SCTP (RFC 5043, RFC 6581 §7): see ddps.h.
 *
 * Objects, all on the stack's progress thread:
 *   struct ddps_as     one SCTP association (sctp.h), its streams, the
 *                      sessions on them by stream id;
 *   uiw_ddps_sess      one DDP Stream Session on one stream: the §6
 *                      state, DDP-SSN each way, chunks that came early,
 *                      and the QP once attached;
 *   uiw_ddps_lsn       a listener.
 *
 * Receive: the carrier hands over whole messages in any order (unordered
 * chunks).  A session takes the chunk whose DDP-SSN is next, then those
 * that waited for it; a chunk ahead waits in a ring indexed by DDP-SSN
 * (the carrier's buffer itself: no copy).  What waits is bounded per
 * association in octets and per session in DDP-SSN distance, and a gap
 * may stay open only so long (uiw_ddps_set_gap_ms): SCTP retransmits a
 * lost chunk well before that, so a gap that lasts is the peer's error.
 *
 * Transmit: the engine's segments go out one per DATA chunk, DDP-SSN in
 * the two octets of headroom before each header (framing.h), in the
 * order the engine hands them out, so DDP-SSN is the submission order.
 */
#include "ddps.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "../rnic/framing.h"
#include "../rt/log.h"
#include "../rt/rt.h"

/* Octets of early chunks an association keeps for all its sessions.  A
 * peer's SCTP sends no more than our receive window beyond a lost chunk,
 * and the carrier hands chunks over as they come, so its window stays
 * open: a few windows is room enough for an honest peer. */
#define DDPS_HELD_BYTES_MAX (16u << 20)
/* The farthest ahead of the next DDP-SSN a chunk may be (RFC 5043 §10:
 * fewer than 32768 in flight). */
#define DDPS_AHEAD_MAX      UIW_DDPS_INFLIGHT_MAX
/* How long a gap in DDP-SSN may stay open.  The chunks that wait are
 * bounded in octets already; this only ends a session whose peer never
 * fills the gap.  It outlasts SCTP's own recovery: a peer retransmits a
 * lost chunk until its association gives up (RFC 4960 §8.2: RTO.Max
 * 60 s and 10 retransmissions by default; our usrsctp settings give up
 * after some 31 s), so a gap an honest peer can still fill never ends
 * the session first, and a path that died ends it as a failed
 * association rather than as the peer's error. */
#define DDPS_GAP_MS_DEF     120000
#define DDPS_IDLE_MS_DEF    30000
/* How long we wait for the peer's Session Terminate after ours. */
#define DDPS_LINGER_MS      5000
/* Segments taken from the engine per call. */
#define DDPS_TX_BATCH       16
/* Pieces of one outgoing chunk: DDP-SSN and header, then payload. */
#define DDPS_TX_IOV         64
/* Chunks sent between two looks at the association's unacknowledged
 * count (RFC 5043 §10). */
#define DDPS_UNACK_CHECK    4096
/* Associations a listener keeps; the oldest without sessions goes to
 * make room. */
#define DDPS_LSN_ASSOCS_MAX 1024

static _Atomic unsigned gap_ms = DDPS_GAP_MS_DEF;
static _Atomic unsigned idle_ms = DDPS_IDLE_MS_DEF;

void uiw_ddps_set_gap_ms(unsigned ms) { atomic_store(&gap_ms, ms); }
void uiw_ddps_set_idle_ms(unsigned ms) { atomic_store(&idle_ms, ms); }

enum sess_state {
	SS_WAIT_ASSOC,    /* active: the association is coming up */
	SS_INIT_SENT,     /* active: Initiate sent, awaiting the answer */
	SS_INIT_RCVD,     /* passive: Initiate received, ULP deciding */
	SS_OPEN,          /* Accept sent or received: segments flow */
	SS_OVER,          /* ended; freed once nothing refers to it */
};

struct ddps_held {
	void *buf;
	uint32_t len;
	uint32_t ppid;
};

struct ddps_as;
struct uiw_ddps_sess;

/* A control message waiting for room in the carrier. */
struct ddps_ctlq {
	struct ddps_ctlq *next;
	struct uiw_ddps_sess *sess;   /* NULL once the session is gone */
	uint16_t sid, len;
	uint8_t b[UIW_DDPS_CTL_MAX];
};

struct uiw_ddps_sess {
	struct ddps_as *as;
	uint16_t sid;
	enum sess_state st;
	bool active;
	const struct uiw_ddps_owner *own;
	void *ctx;

	/* Active: what the Initiate says, kept for a plain retry. */
	bool enhanced;
	bool retried;
	struct uiw_mpa_v2 v2;
	uint16_t pd_len;
	uint8_t pd[UIW_DDPS_PD_MAX];

	uint16_t tx_ssn, rx_next;
	struct ddps_held *held;       /* ring by DDP-SSN, held_cap slots */
	uint32_t held_cap, held_n;
	size_t held_bytes;
	struct uiw_rt_timer gap_timer;

	struct uiw_qp *qp;
	bool attached;
	bool term_sent, term_rcvd;
	bool term_after;              /* sess_end sends our Terminate */
	bool tx_blocked;              /* waiting for writable */
	unsigned ctl_queued;          /* its messages in the ctlq */
	struct uiw_ddps_sess *blk_next;
	/* close requests from the engine (any thread) */
	_Atomic int close_req;        /* 0, 1 orderly, 2 abortive */
	struct uiw_rt_work work;
	struct uiw_rt_timer linger;
	struct uiw_ddps_sess *pend_next;   /* waiting for its association */
};

struct ddps_as {
	struct uiw_sctp_stack *st;
	struct uiw_rt *rt;
	struct uiw_sctp_assoc *sa;    /* NULL once down */
	struct uiw_ddps_lsn *lsn;     /* passive: its listener, if alive */
	bool active, up;
	struct uiw_sctp_info info;
	struct sockaddr_storage peer; /* active: where we connected */
	socklen_t peerlen;
	uint16_t udp_port;            /* and the UDP port asked for */
	uint16_t nstreams, cursor;
	uint32_t mulpdu;
	struct uiw_ddps_sess **by_sid;
	uint8_t *quarantine;          /* per stream: not reusable yet */
	bool quarantined;             /* some stream waits for dry */
	unsigned nsess;
	struct uiw_ddps_sess *pending;
	struct uiw_ddps_sess *blocked;
	struct ddps_ctlq *ctlq, *ctlq_tail;
	size_t held_bytes;
	uint32_t since_check;
	bool dry_wait;                /* sending waits for the acks */
	struct uiw_rt_timer idle;
	int64_t idle_since;
	bool listed;                  /* in as_list */
	struct ddps_as *next, *prev;
};

struct uiw_ddps_lsn {
	struct uiw_sctp_stack *st;
	struct uiw_sctp_lsn *sl;
	uiw_ddps_initiate_fn fn;
	void *ctx;
	unsigned nassocs;             /* associations it accepted */
};

/* Every association, per stack kind (only that stack's thread touches
 * its list), newest first: those we started are reused (RFC 5043 §4:
 * one association, many DDP streams); a listener's oldest idle one makes
 * room for a new one. */
static struct ddps_as *as_list[2];

static void as_list_add(struct ddps_as **head, struct ddps_as *a)
{
	a->prev = NULL;
	a->next = *head;
	if (*head)
		(*head)->prev = a;
	*head = a;
}

static void as_list_del(struct ddps_as **head, struct ddps_as *a)
{
	if (a->prev)
		a->prev->next = a->next;
	else if (*head == a)
		*head = a->next;
	if (a->next)
		a->next->prev = a->prev;
	a->next = a->prev = NULL;
}

static struct ddps_as **as_home(struct ddps_as *a)
{
	return &as_list[uiw_sctp_stack_kind(a->st)];
}

/* ---- Helpers ------------------------------------------------------------ */

static void sess_end(struct uiw_ddps_sess *s, int err,
		     const struct uiw_ddps_ctl *c, const char *why);
static void sess_end_term(struct uiw_ddps_sess *s, int err, const char *why);
static void sess_tx(struct uiw_ddps_sess *s);
static void as_check_idle(struct ddps_as *a);

/* Sends what waits in the association's control queue, in order; false
 * when the carrier has no room (writable follows). */
static bool ctlq_flush(struct ddps_as *a)
{
	struct ddps_ctlq *q;

	while ((q = a->ctlq)) {
		struct iovec iov = { q->b, q->len };
		int ret = a->sa ? uiw_sctp_send(a->sa, q->sid,
						UIW_SCTP_PPID_CTL, &iov, 1) :
				  -ENOTCONN;

		if (ret == -EAGAIN)
			return false;
		a->ctlq = q->next;
		if (!a->ctlq)
			a->ctlq_tail = NULL;
		if (q->sess)
			q->sess->ctl_queued--;
		free(q);
	}
	return true;
}

static int send_ctl(struct uiw_ddps_sess *s, uint16_t fc,
		    const struct uiw_mpa_v2 *v2, const void *pd,
		    uint16_t pd_len)
{
	uint8_t b[UIW_DDPS_CTL_MAX];
	struct ddps_as *a = s->as;
	struct ddps_ctlq *q;
	struct iovec iov;
	int n, ret = -EAGAIN;

	if (!a->sa)
		return -ENOTCONN;
	n = uiw_ddps_ctl_encode(b, s->tx_ssn, fc, v2, pd, pd_len);
	if (n < 0)
		return n;
	iov.iov_base = b;
	iov.iov_len = (size_t)n;
	/* A control message the carrier has no room for now (a full send
	 * buffer, which the peer's acks empty) waits in the association's
	 * queue and goes first when there is room, before the session's
	 * segments; it is sent all the same if the session ends meanwhile
	 * (a Reject, a Terminate).  At most a few per stream. */
	if (ctlq_flush(a))
		ret = uiw_sctp_send(a->sa, s->sid, UIW_SCTP_PPID_CTL, &iov, 1);
	if (ret == -EAGAIN) {
		q = malloc(sizeof(*q));
		if (!q)
			return -ENOMEM;
		q->next = NULL;
		q->sess = s;
		q->sid = s->sid;
		q->len = (uint16_t)n;
		memcpy(q->b, b, (size_t)n);
		if (a->ctlq_tail)
			a->ctlq_tail->next = q;
		else
			a->ctlq = q;
		a->ctlq_tail = q;
		s->ctl_queued++;
		ret = 0;
	}
	if (ret < 0) {
		UIW_DBG(1, "ddps stream %u: cannot send %s: %s", s->sid,
			uiw_ddps_fc_name(fc), strerror(-ret));
		return ret;
	}
	UIW_DBG(1, "ddps stream %u: sent %s (DDP-SSN %u, %u octets of "
		"private data)", s->sid, uiw_ddps_fc_name(fc), s->tx_ssn,
		pd_len);
	s->tx_ssn++;
	if (fc == UIW_DDPS_TERMINATE)
		s->term_sent = true;
	return 0;
}

static void held_free(struct uiw_ddps_sess *s)
{
	uint32_t i;

	for (i = 0; s->held && i < s->held_cap; i++) {
		if (s->held[i].buf) {
			uiw_sctp_buf_free(s->as->st, s->held[i].buf);
			s->held[i].buf = NULL;
		}
	}
	s->as->held_bytes -= s->held_bytes;
	s->held_bytes = 0;
	s->held_n = 0;
	free(s->held);
	s->held = NULL;
	s->held_cap = 0;
}

/* ---- The engine's side of the seam (rnic/framing.h) -------------------- */

static void eng_kick(void *ctx)
{
	struct uiw_ddps_sess *s = ctx;

	uiw_rt_post(s->as->rt, &s->work);
}

static void eng_close(void *ctx, bool abortive)
{
	struct uiw_ddps_sess *s = ctx;
	int none = 0;

	if (abortive)
		atomic_store(&s->close_req, 2);
	else
		atomic_compare_exchange_strong(&s->close_req, &none, 1);
	/* Never wait here (see tcp.c): the engine counts this call as
	 * active until it returns. */
	uiw_rt_post(s->as->rt, &s->work);
}

static void eng_query(void *ctx, struct uiw_qp_attr *attr)
{
	struct uiw_ddps_sess *s = ctx;

	attr->llp = uiw_sctp_stack_kind(s->as->st) == UIW_SCTP_KERNEL ?
		    UIW_LLP_SCTP_KERNEL : UIW_LLP_SCTP_UDP;
	attr->crc = 0;          /* SCTP's own CRC32c covers the packet */
	attr->markers_tx = 0;
	attr->markers_rx = 0;
}

static const struct uiw_llp_ops eng_ops = {
	.kick = eng_kick,
	.close = eng_close,
	.query = eng_query,
};

/* The QP leaves the session (once): err as uiw_qp_llp_detach takes it. */
static void sess_detach(struct uiw_ddps_sess *s, uiw_err_t err)
{
	if (!s->attached)
		return;
	s->attached = false;
	uiw_qp_llp_detach(s->qp, err);
}

/* Work posted by the engine (kick, close) and by ourselves. */
static void sess_work(void *arg)
{
	struct uiw_ddps_sess *s = arg;
	int req;

	if (s->st != SS_OPEN || !s->attached)
		return;
	req = atomic_load(&s->close_req);
	if (req == 2) {
		/* Abortive: discard what is queued; the session ends with
		 * our Terminate (RFC 5043 §6.2: at least one side sends
		 * it). */
		if (!s->term_sent)
			send_ctl(s, UIW_DDPS_TERMINATE, NULL, NULL, 0);
		sess_end(s, -ECONNABORTED, NULL, "closed abortively");
		return;
	}
	sess_tx(s);
}

/* ---- Transmit ------------------------------------------------------------ */

/* The association says how many chunks are unacknowledged: at most
 * 32767 of a stream may be (RFC 5043 §10).  The count covers every
 * stream, so keeping it under the bound keeps each stream under it. */
static bool tx_window_open(struct ddps_as *a)
{
	int un;

	if (a->dry_wait)
		return false;
	if (++a->since_check < DDPS_UNACK_CHECK)
		return true;
	a->since_check = 0;
	un = uiw_sctp_unacked(a->sa);
	if (un >= 0 && un + DDPS_UNACK_CHECK < DDPS_AHEAD_MAX)
		return true;
	a->dry_wait = true;
	uiw_sctp_watch_dry(a->sa);
	return false;
}

static void tx_block(struct uiw_ddps_sess *s)
{
	if (s->tx_blocked)
		return;
	s->tx_blocked = true;
	s->blk_next = s->as->blocked;
	s->as->blocked = s;
}

/* One engine segment as one chunk: DDP-SSN in the headroom before the
 * header, then the payload pieces. */
static int tx_one(struct uiw_ddps_sess *s, const struct uiw_seg_out *g)
{
	struct iovec iov[DDPS_TX_IOV];
	uint32_t left = g->len - g->hlen, i = g->src_i, off = g->src_off;
	int n = 1;

	uiw_ddps_put_ssn(g->hdr - UIW_DDPS_SSN_LEN, s->tx_ssn);
	iov[0].iov_base = g->hdr - UIW_DDPS_SSN_LEN;
	iov[0].iov_len = UIW_DDPS_SSN_LEN + g->hlen;
	while (left) {
		size_t take = g->src[i].iov_len - off;

		if (take > left)
			take = left;
		if (take) {
			if (n == DDPS_TX_IOV)
				return -EMSGSIZE;
			iov[n].iov_base = (uint8_t *)g->src[i].iov_base + off;
			iov[n].iov_len = take;
			n++;
		}
		left -= (uint32_t)take;
		i++;
		off = 0;
	}
	return uiw_sctp_send(s->as->sa, s->sid, UIW_SCTP_PPID_DDP, iov, n);
}

static void sess_tx(struct uiw_ddps_sess *s)
{
	const struct uiw_seg_out *segs[DDPS_TX_BATCH];
	bool more;
	int n, i, ret;

	if (s->tx_blocked || !s->attached || !s->as->sa)
		return;
	if (s->ctl_queued && !ctlq_flush(s->as)) {
		tx_block(s);
		return;
	}
	if (s->term_sent)
		return;
	for (more = true; more;) {
		n = uiw_qp_tx_segs(s->qp, 0, segs, DDPS_TX_BATCH);
		if (n <= 0)
			break;
		ret = 0;
		for (i = 0; i < n; i++) {
			if (!tx_window_open(s->as)) {
				ret = -EAGAIN;
				break;
			}
			ret = tx_one(s, segs[i]);
			if (ret < 0)
				break;
			s->tx_ssn++;
		}
		if (i > 0)
			more = uiw_qp_tx_sent(s->qp, (uint32_t)i);
		if (i < n) {
			if (ret == -EAGAIN) {
				tx_block(s);
				return;
			}
			sess_end(s, -ECONNRESET, NULL,
				 "the association refused a segment");
			return;
		}
	}
	/* The engine asked for the end and everything it queued is out:
	 * our Session Terminate is the last chunk (RFC 5043 §6.2). */
	if (atomic_load(&s->close_req) == 1 && !s->term_sent &&
	    s->attached) {
		/* No room now: it waits in the association's queue and
		 * goes on writable (send_ctl). */
		ret = send_ctl(s, UIW_DDPS_TERMINATE, NULL, NULL, 0);
		if (ret < 0) {
			sess_end(s, -ECONNRESET, NULL, "cannot send the "
				 "Session Terminate");
			return;
		}
		if (s->term_rcvd)
			sess_end(s, 0, NULL, NULL);
		else
			uiw_rt_timer_start(s->as->rt, &s->linger,
					   DDPS_LINGER_MS);
	}
}

/* Room to send again: the blocked sessions go on in turn until the
 * association is full again; those after the one it stopped keep
 * waiting, ahead of it. */
static void as_writable(struct ddps_as *a)
{
	struct uiw_ddps_sess *s, *nx, *t;

	if (!ctlq_flush(a))
		return;
	s = a->blocked;
	a->blocked = NULL;
	for (; s; s = nx) {
		nx = s->blk_next;
		s->tx_blocked = false;
		if (s->st == SS_OPEN)
			sess_work(s);
		/* s may be gone; blocked again, it is on a->blocked */
		if (a->blocked && nx) {
			for (t = nx; t->blk_next; t = t->blk_next)
				;
			t->blk_next = a->blocked;
			a->blocked = nx;
			return;
		}
	}
}

/* ---- Receive ------------------------------------------------------------- */

/* A protocol error of the adaptation layer (RFC 5043 §6.1): the session
 * ends with our Session Terminate. */
static void sess_violation(struct uiw_ddps_sess *s, const char *why)
{
	UIW_DBG(1, "ddps stream %u: %s: the session ends", s->sid, why);
	sess_end_term(s, -ECONNRESET, why);
}

/* A DDP segment, in DDP-SSN order, to the engine. */
static void rx_segment(struct uiw_ddps_sess *s, const uint8_t *seg,
		       uint32_t len)
{
	uint32_t hl;
	bool tx = false;
	int r;

	if (len > UIW_MULPDU_MAX) {
		/* RFC 5043 §9: segments over the maximum are rejected.  Not
		 * our MULPDU: it bounds what we send, from our path, and
		 * the peer's comes from its own (a kernel on a 1500-octet
		 * path sends 1442 where usrsctp's 1452-octet MTU gives
		 * 1422) and is never announced.  The bound here is the
		 * largest segment DDP takes at all. */
		sess_violation(s, "DDP segment longer than any MULPDU");
		return;
	}
	if (!uiw_qp_rx_enter(s->qp))
		return;         /* the QP reads no more (Terminate) */
	hl = len ? uiw_seg_hdr_len(seg[0]) : 0;
	if (hl > len)
		hl = len;
	if (uiw_qp_rx_begin(s->qp, seg, hl, len)) {
		uiw_qp_rx_put(s->qp, 0, seg + hl, len - hl);
		uiw_qp_rx_end(s->qp, len, UIW_OK, NULL);
	}
	r = uiw_qp_rx_leave(s->qp, false, &tx);
	(void)r;        /* a Terminate: ops->close follows */
	if (tx)
		sess_tx(s);
}

static int sess_send_initiate(struct uiw_ddps_sess *s);
static void sess_release_stream(struct uiw_ddps_sess *s);

/* RFC 6581 §7: the peer refused the enhanced session (it knows only RFC
 * 5043's codes and ended the session, or said with an Enhanced Reject
 * that it would take a plain one): the same session again, plain, on
 * another stream; the old one rests as any stream after a session. */
static void sess_retry_plain(struct uiw_ddps_sess *s)
{
	int ret;

	UIW_DBG(1, "ddps stream %u: enhanced Initiate refused: again "
		"without the IRD/ORD word", s->sid);
	sess_release_stream(s);
	s->enhanced = false;
	s->retried = true;
	s->term_sent = false;
	ret = sess_send_initiate(s);
	if (ret < 0)
		sess_end(s, -ECONNREFUSED, NULL, "the peer refused the "
			 "enhanced Initiate and no stream is free for a "
			 "plain one");
}

static void rx_ctl(struct uiw_ddps_sess *s, const uint8_t *buf,
		   uint32_t len)
{
	struct uiw_ddps_ctl c;
	const char *why = NULL;

	if (uiw_ddps_ctl_decode(buf, len, &c, &why) < 0) {
		sess_violation(s, why);
		return;
	}
	UIW_DBG(1, "ddps stream %u: received %s (DDP-SSN %u)", s->sid,
		uiw_ddps_fc_name(c.fc), c.ssn);
	switch (s->st) {
	case SS_INIT_SENT:
		if ((c.fc == UIW_DDPS_ACCEPT && !s->enhanced) ||
		    (c.fc == UIW_DDPS_E_ACCEPT && s->enhanced)) {
			s->st = SS_OPEN;
			s->own->accepted(s->ctx, s, &c, &s->as->info);
			return;
		}
		if ((c.fc == UIW_DDPS_REJECT) ||
		    (c.fc == UIW_DDPS_E_REJECT && s->enhanced)) {
			/* RFC 6581 §7: an Enhanced Reject says the plain
			 * session would have been taken. */
			if (c.fc == UIW_DDPS_E_REJECT && !s->retried) {
				sess_retry_plain(s);
				return;
			}
			sess_end(s, -ECONNREFUSED, &c, NULL);
			return;
		}
		if (c.fc == UIW_DDPS_TERMINATE) {
			/* A peer that knows only RFC 5043's codes ends
			 * the session on an enhanced one (§6.1). */
			if (s->enhanced && !s->retried) {
				sess_retry_plain(s);
				return;
			}
			s->term_rcvd = true;
			sess_end(s, -ECONNREFUSED, NULL, "the peer answered "
				 "the Initiate with a Session Terminate");
			return;
		}
		break;
	case SS_OPEN:
		if (c.fc == UIW_DDPS_TERMINATE) {
			s->term_rcvd = true;
			if (s->term_sent) {
				/* Both sides are done: orderly. */
				sess_end(s, 0, NULL, NULL);
				return;
			}
			if (!s->attached) {
				sess_end(s, -ECONNRESET, NULL, "the peer "
					 "ended the session");
				return;
			}
			/* The peer's end, as a FIN over TCP: the engine
			 * finishes and asks us to close (RFC 5041 §6.2.1);
			 * should it not, the timer ends the session. */
			uiw_qp_llp_fin(s->qp, false);
			uiw_rt_timer_start(s->as->rt, &s->linger,
					   DDPS_LINGER_MS);
			return;
		}
		break;
	default:
		break;
	}
	/* RFC 5043 §6.1: no legal sequence has this message here. */
	sess_violation(s, s->st == SS_INIT_RCVD ?
		       "a session control message before the Accept" :
		       "a session control message out of sequence");
}

static void rx_in_order(struct uiw_ddps_sess *s, uint32_t ppid,
			const uint8_t *buf, uint32_t len)
{
	s->rx_next++;
	if (ppid == UIW_SCTP_PPID_CTL) {
		rx_ctl(s, buf, len);
		return;
	}
	/* ppid is DDP's (checked when it arrived). */
	if (s->st != SS_OPEN || !s->attached) {
		/* RFC 5043 §6.6: no segment before the session is open
		 * (the passive side's QP attaches as it sends the
		 * Accept). */
		sess_violation(s, s->st == SS_INIT_RCVD ?
			       "a DDP segment before the Accept" :
			       "a DDP segment outside an open session");
		return;
	}
	if (s->term_rcvd) {
		sess_violation(s, "a DDP segment after the peer's Session "
			       "Terminate");
		return;
	}
	rx_segment(s, buf + UIW_DDPS_SSN_LEN, len - UIW_DDPS_SSN_LEN);
}

static void gap_fire(void *arg)
{
	struct uiw_ddps_sess *s = arg;

	if (s->held_n && s->st != SS_OVER)
		sess_violation(s, "a gap in DDP-SSN stayed open");
}

/* Keeps a chunk that came before its turn. */
static bool hold(struct uiw_ddps_sess *s, uint16_t ahead, uint32_t ppid,
		 void *buf, uint32_t len)
{
	struct ddps_held *slot;
	uint16_t ssn = (uint16_t)(s->rx_next + ahead);

	if (s->as->held_bytes + len > DDPS_HELD_BYTES_MAX) {
		sess_violation(s, "too many octets waiting for a gap in "
			       "DDP-SSN");
		return false;
	}
	if (ahead >= s->held_cap) {
		uint32_t cap = s->held_cap ? s->held_cap : 64, i;
		struct ddps_held *nh;

		while (cap <= ahead)
			cap *= 2;
		nh = calloc(cap, sizeof(*nh));
		if (!nh) {
			sess_violation(s, "no memory for chunks that came "
				       "early");
			return false;
		}
		for (i = 0; i < s->held_cap; i++) {
			struct ddps_held *o = &s->held[i];

			if (o->buf) {
				uint16_t os = uiw_ddps_ssn(o->buf);

				nh[os & (cap - 1)] = *o;
			}
		}
		free(s->held);
		s->held = nh;
		s->held_cap = cap;
	}
	slot = &s->held[ssn & (s->held_cap - 1)];
	if (slot->buf) {
		sess_violation(s, "a DDP-SSN received twice");
		return false;
	}
	slot->buf = buf;
	slot->len = len;
	slot->ppid = ppid;
	s->held_n++;
	s->held_bytes += len;
	s->as->held_bytes += len;
	if (s->held_n == 1)
		uiw_rt_timer_start(s->as->rt, &s->gap_timer,
				   atomic_load(&gap_ms));
	return true;
}

/* One chunk for the session; buf is ours to free.  A session ended by
 * what it brought may be freed by the time this returns: the caller
 * looks it up again. */
static void sess_rx(struct uiw_ddps_sess *s, uint32_t ppid, void *buf,
		    uint32_t len)
{
	struct uiw_sctp_stack *st = s->as->st;
	struct ddps_as *a = s->as;
	uint16_t sid = s->sid;
	uint16_t ahead;

	if (ppid != UIW_SCTP_PPID_DDP && ppid != UIW_SCTP_PPID_CTL) {
		uiw_sctp_buf_free(st, buf);
		sess_violation(s, "a chunk whose PPID is not DDP's (RFC "
			       "5043 §5.2)");
		return;
	}
	ahead = uiw_ddps_ssn_ahead(uiw_ddps_ssn(buf), s->rx_next);
	if (ahead >= 0x8000) {
		uiw_sctp_buf_free(st, buf);
		sess_violation(s, "a DDP-SSN already received (replay)");
		return;
	}
	if (ahead > 0) {
		if (ahead >= DDPS_AHEAD_MAX ||
		    !hold(s, ahead, ppid, buf, len)) {
			if (ahead >= DDPS_AHEAD_MAX)
				sess_violation(s, "a DDP-SSN farther ahead "
					       "than chunks in flight can "
					       "be (RFC 5043 §10)");
			uiw_sctp_buf_free(st, buf);
		}
		return;
	}
	rx_in_order(s, ppid, buf, len);
	uiw_sctp_buf_free(st, buf);
	/* Then whatever waited for it. */
	while ((s = a->by_sid[sid]) && s->st != SS_OVER && s->held_n) {
		struct ddps_held *slot =
			&s->held[s->rx_next & (s->held_cap - 1)];
		struct ddps_held h = *slot;

		if (!h.buf)
			break;
		slot->buf = NULL;
		s->held_n--;
		s->held_bytes -= h.len;
		a->held_bytes -= h.len;
		if (!s->held_n)
			uiw_rt_timer_stop(a->rt, &s->gap_timer);
		else
			uiw_rt_timer_start(a->rt, &s->gap_timer,
					   atomic_load(&gap_ms));
		rx_in_order(s, h.ppid, h.buf, h.len);
		uiw_sctp_buf_free(st, h.buf);
	}
}

/* ---- Sessions ------------------------------------------------------------ */

static void linger_fire(void *arg)
{
	struct uiw_ddps_sess *s = arg;

	if (s->st == SS_OVER)
		return;
	/* The peer never sent its Terminate, or the engine never closed
	 * after the peer's: the session is over all the same. */
	sess_end_term(s, s->term_rcvd ? 0 : -ETIMEDOUT,
		      "no orderly end in time");
}

static struct uiw_ddps_sess *sess_new(struct ddps_as *a)
{
	struct uiw_ddps_sess *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->as = a;
	uiw_rt_work_init(&s->work, sess_work, s);
	uiw_rt_timer_init(&s->gap_timer, gap_fire, s);
	uiw_rt_timer_init(&s->linger, linger_fire, s);
	return s;
}

static void sess_unblock(struct uiw_ddps_sess *s)
{
	struct uiw_ddps_sess **pp;

	if (!s->tx_blocked)
		return;
	for (pp = &s->as->blocked; *pp; pp = &(*pp)->blk_next) {
		if (*pp == s) {
			*pp = s->blk_next;
			break;
		}
	}
	s->tx_blocked = false;
}

/* The session no longer has its stream. */
static void sess_release_stream(struct uiw_ddps_sess *s)
{
	struct ddps_as *a = s->as;

	held_free(s);
	if (a->by_sid && s->sid < a->nstreams && a->by_sid[s->sid] == s) {
		a->by_sid[s->sid] = NULL;
		if (a->sa) {
			a->quarantine[s->sid] = 1;
			a->quarantined = true;
			uiw_sctp_watch_dry(a->sa);
		}
	}
}

/* Takes s off its association and frees it.  The stream it used waits
 * before another session may have it (RFC 5043 §6.6) until everything
 * we sent on the association is acknowledged: the peer then has all of
 * this session's chunks, and has sent us its last (it answered, or the
 * session ended by its message). */
static void sess_free(struct uiw_ddps_sess *s)
{
	struct ddps_as *a = s->as;

	uiw_rt_work_cancel(a->rt, &s->work);
	uiw_rt_timer_stop(a->rt, &s->gap_timer);
	uiw_rt_timer_stop(a->rt, &s->linger);
	sess_unblock(s);
	if (s->ctl_queued) {
		struct ddps_ctlq *q;

		for (q = a->ctlq; q; q = q->next)
			if (q->sess == s)
				q->sess = NULL;
	}
	sess_release_stream(s);
	if (a->nsess)
		a->nsess--;
	free(s);
	as_check_idle(a);
}

/* As sess_end, and our Session Terminate goes out once the QP is flushed
 * and the owner told: whoever sees it on the wire finds the end already
 * reported here. */
static void sess_end_term(struct uiw_ddps_sess *s, int err, const char *why)
{
	s->term_after = true;
	sess_end(s, err, NULL, why);
}

static void sess_end(struct uiw_ddps_sess *s, int err,
		     const struct uiw_ddps_ctl *c, const char *why)
{
	const struct uiw_ddps_owner *own = s->own;

	if (s->st == SS_OVER)
		return;
	s->st = SS_OVER;
	uiw_rt_timer_stop(s->as->rt, &s->linger);
	uiw_rt_timer_stop(s->as->rt, &s->gap_timer);
	if (s->attached)
		sess_detach(s, err == 0 ? UIW_OK : UIW_E_MPA_CLOSED);
	UIW_DBG(1, "ddps stream %u: session over (%s%s%s)", s->sid,
		err ? strerror(-err) : "orderly", why ? ": " : "",
		why ? why : "");
	if (own && own->ended)
		own->ended(s->ctx, s, err, c, why);
	if (s->term_after && !s->term_sent && s->as->sa)
		send_ctl(s, UIW_DDPS_TERMINATE, NULL, NULL, 0);
	sess_free(s);
}

/* A free stream of the association, round robin so that a stream just
 * freed is the last to be taken again; -1 when none is. */
static int as_pick_stream(struct ddps_as *a)
{
	uint16_t i;

	for (i = 0; i < a->nstreams; i++) {
		uint16_t sid = (uint16_t)((a->cursor + i) % a->nstreams);

		if (!a->by_sid[sid] && !a->quarantine[sid]) {
			a->cursor = (uint16_t)(sid + 1);
			return sid;
		}
	}
	return -1;
}

/* Whether as_pick_stream would find a stream, without moving the
 * cursor. */
static bool as_has_stream(const struct ddps_as *a)
{
	uint16_t i;

	for (i = 0; i < a->nstreams; i++)
		if (!a->by_sid[i] && !a->quarantine[i])
			return true;
	return false;
}

static int sess_send_initiate(struct uiw_ddps_sess *s)
{
	int sid = as_pick_stream(s->as);
	int ret;

	if (sid < 0)
		return -EBUSY;
	s->sid = (uint16_t)sid;
	s->as->by_sid[sid] = s;
	s->tx_ssn = 0;
	s->rx_next = 0;
	ret = send_ctl(s, s->enhanced ? UIW_DDPS_E_INITIATE :
		       UIW_DDPS_INITIATE, &s->v2, s->pd, s->pd_len);
	if (ret < 0) {
		s->as->by_sid[sid] = NULL;
		return ret;
	}
	s->st = SS_INIT_SENT;
	return 0;
}

/* ---- Associations ------------------------------------------------------- */

static void as_free(struct ddps_as *a)
{
	struct ddps_as **home = as_home(a);

	if (a->listed)
		as_list_del(home, a);
	if (a->lsn)
		a->lsn->nassocs--;
	uiw_rt_timer_stop(a->rt, &a->idle);
	while (a->ctlq) {
		struct ddps_ctlq *q = a->ctlq;

		a->ctlq = q->next;
		free(q);
	}
	free(a->by_sid);
	free(a->quarantine);
	free(a);
}

static void idle_fire(void *arg)
{
	struct ddps_as *a = arg;

	if (a->nsess || !a->sa || a->pending)
		return;
	UIW_DBG(1, "ddps: association idle: shutting it down");
	uiw_sctp_shutdown(a->sa);
}

/* An association without sessions ends after a while (a peer's idle
 * associations hold resources); one we started stays that while for
 * reuse.  The side that started it, which alone opens sessions on it,
 * lets it go first: the other waits twice as long, so that it does not
 * shut an association down under an Initiate on its way. */
static void as_check_idle(struct ddps_as *a)
{
	unsigned ms = atomic_load(&idle_ms);

	if (a->nsess || a->pending || !a->sa || !a->up)
		return;
	uiw_rt_timer_start(a->rt, &a->idle, a->active ? ms : 2 * ms);
}

static void up_down(void *ctx, struct uiw_sctp_assoc *sa, int err);

/* Every session of the association ends with err. */
static void as_fail_all(struct ddps_as *a, int err, const char *why)
{
	struct uiw_ddps_sess *s;
	uint16_t i;

	while ((s = a->pending)) {
		a->pending = s->pend_next;
		s->pend_next = NULL;
		sess_end(s, err, NULL, why);
	}
	for (i = 0; a->by_sid && i < a->nstreams; i++) {
		s = a->by_sid[i];
		if (s)
			sess_end(s, err, NULL, why);
	}
}

static void up_msg(void *ctx, struct uiw_sctp_assoc *sa, uint16_t sid,
		   uint32_t ppid, void *buf, size_t len);

static void up_writable(void *ctx, struct uiw_sctp_assoc *sa)
{
	as_writable(ctx);
}

static void up_dry(void *ctx, struct uiw_sctp_assoc *sa)
{
	struct ddps_as *a = ctx;

	if (a->quarantined) {
		memset(a->quarantine, 0, a->nstreams);
		a->quarantined = false;
	}
	if (a->dry_wait) {
		a->dry_wait = false;
		a->since_check = 0;
		as_writable(a);
	}
}

/* RFC 5043 §5.1, §7.1: an association carries DDP only when the peer's
 * INIT or INIT-ACK said so. */
static bool as_setup(struct ddps_as *a, const struct uiw_sctp_info *i,
		     const char **why)
{
	a->info = *i;
	if (!i->peer_adapt_seen) {
		*why = "the peer sent no Adaptation Layer Indication (RFC "
		       "5043 §5.1)";
		return false;
	}
	if (i->peer_adapt != UIW_SCTP_ADAPT_DDP) {
		*why = "the peer's Adaptation Layer Indication is not DDP's "
		       "(RFC 5043 §5.1)";
		return false;
	}
	if (!i->streams) {
		*why = "the association has no streams";
		return false;
	}
	a->nstreams = i->streams;
	/* RFC 5043 §9: the largest segment SCTP carries unfragmented, less
	 * the DDP-SSN, and at least 516 octets. */
	a->mulpdu = i->maxseg > UIW_DDPS_SSN_LEN ?
		    i->maxseg - UIW_DDPS_SSN_LEN : 0;
	if (a->mulpdu < UIW_DDPS_MULPDU_MIN)
		a->mulpdu = UIW_DDPS_MULPDU_MIN;
	if (a->mulpdu > UIW_MULPDU_MAX)
		a->mulpdu = UIW_MULPDU_MAX;
	a->by_sid = calloc(a->nstreams, sizeof(*a->by_sid));
	a->quarantine = calloc(a->nstreams, 1);
	if (!a->by_sid || !a->quarantine) {
		*why = "no memory";
		return false;
	}
	a->up = true;
	return true;
}

static void up_up(void *ctx, struct uiw_sctp_assoc *sa,
		  const struct uiw_sctp_info *info);

static const struct uiw_sctp_up as_up = {
	.up = up_up,
	.msg = up_msg,
	.writable = up_writable,
	.dry = up_dry,
	.down = up_down,
};

/* Active association up: the sessions that waited send their
 * Initiates. */
static void up_up(void *ctx, struct uiw_sctp_assoc *sa,
		  const struct uiw_sctp_info *info)
{
	struct ddps_as *a = ctx;
	struct uiw_ddps_sess *s;
	const char *why = NULL;

	if (!as_setup(a, info, &why)) {
		UIW_DBG(1, "ddps: association aborted: %s", why);
		as_fail_all(a, -EPROTO, why);
		uiw_sctp_abort(sa);
		return;
	}
	while ((s = a->pending)) {
		int ret;

		a->pending = s->pend_next;
		s->pend_next = NULL;
		ret = sess_send_initiate(s);
		if (ret < 0)
			sess_end(s, ret, NULL, "cannot send the Initiate");
	}
	as_check_idle(a);
}

static void up_down(void *ctx, struct uiw_sctp_assoc *sa, int err)
{
	struct ddps_as *a = ctx;

	UIW_DBG(1, "ddps: association down (%s)",
		err ? strerror(-err) : "orderly");
	a->sa = NULL;
	/* RFC 5043 has no stream left to send a Terminate on: every QP
	 * is flushed, every owner told. */
	as_fail_all(a, err ? err : -ECONNRESET,
		    err == -ETIMEDOUT ? "the association timed out" :
		    err == -ECONNREFUSED ? "the peer refused the association" :
		    "the association went down");
	as_free(a);
}

/* The first chunk of a stream without a session: an Initiate opens
 * one (§6.2); anything else is a late chunk of a session that is over
 * (§6: never carried over) or the peer's error, dropped.  An Initiate
 * that does not decode (private data over 512 octets, an enhanced one
 * without room for its word) opens a session that conforms to no legal
 * sequence: it is terminated (§6.1). */
static void as_new_stream(struct ddps_as *a, uint16_t sid, uint32_t ppid,
			  void *buf, size_t len)
{
	struct uiw_ddps_sess *s;
	struct uiw_ddps_ctl c;
	const char *why = NULL;
	uint16_t fc = len >= UIW_DDPS_CTL_HDR ?
		      uiw_ddps_ssn((const uint8_t *)buf + UIW_DDPS_SSN_LEN) : 0;
	bool take, bad;

	if (ppid != UIW_SCTP_PPID_CTL || len < UIW_DDPS_CTL_HDR ||
	    uiw_ddps_ssn(buf) != 0 ||
	    (fc != UIW_DDPS_INITIATE && fc != UIW_DDPS_E_INITIATE)) {
		UIW_DBG(1, "ddps stream %u: chunk without a session dropped "
			"(PPID %u, %zu octets)", sid, ppid, len);
		uiw_sctp_buf_free(a->st, buf);
		return;
	}
	bad = uiw_ddps_ctl_decode(buf, len, &c, &why) < 0;
	s = sess_new(a);
	if (!s) {
		uiw_sctp_buf_free(a->st, buf);
		return;
	}
	s->sid = sid;
	s->rx_next = 1;
	s->enhanced = !bad && c.enhanced;
	s->st = SS_INIT_RCVD;
	a->by_sid[sid] = s;
	a->nsess++;
	uiw_rt_timer_stop(a->rt, &a->idle);
	/* Only a listener's associations take Initiates: on one we
	 * started, nobody listens (RFC 5043 §6.4: Terminate). */
	take = !bad && !a->active && a->lsn &&
	       a->lsn->fn(a->lsn->ctx, s, &c, &a->info);
	uiw_sctp_buf_free(a->st, buf);
	if (!take) {
		UIW_DBG(1, "ddps stream %u: Initiate not taken%s%s: Session "
			"Terminate", sid, why ? ": " : "", why ? why : "");
		send_ctl(s, UIW_DDPS_TERMINATE, NULL, NULL, 0);
		sess_end(s, -ECONNREFUSED, NULL, "refused");
	}
}

static void up_msg(void *ctx, struct uiw_sctp_assoc *sa, uint16_t sid,
		   uint32_t ppid, void *buf, size_t len)
{
	struct ddps_as *a = ctx;
	struct uiw_ddps_sess *s;

	if (!a->up || sid >= a->nstreams || len > UINT32_MAX) {
		uiw_sctp_buf_free(a->st, buf);
		return;
	}
	s = a->by_sid[sid];
	if (!s) {
		as_new_stream(a, sid, ppid, buf, len);
		return;
	}
	if (len < UIW_DDPS_SSN_LEN) {
		uiw_sctp_buf_free(a->st, buf);
		sess_violation(s, "a chunk shorter than its DDP-SSN");
		return;
	}
	sess_rx(s, ppid, buf, (uint32_t)len);
}

static struct ddps_as *as_new(struct uiw_sctp_stack *st)
{
	struct ddps_as *a = calloc(1, sizeof(*a));

	if (!a)
		return NULL;
	a->st = st;
	a->rt = uiw_sctp_stack_rt(st);
	uiw_rt_timer_init(&a->idle, idle_fire, a);
	return a;
}

/* An association being aborted: nothing more of it matters. */
static void ign_msg(void *ctx, struct uiw_sctp_assoc *sa, uint16_t sid,
		    uint32_t ppid, void *buf, size_t len)
{
	uiw_sctp_buf_free(ctx, buf);
}

static void ign_down(void *ctx, struct uiw_sctp_assoc *sa, int err)
{
}

static const struct uiw_sctp_up ign_ups = {
	.msg = ign_msg,
	.down = ign_down,
};

/* The stack's last reference goes (sctp.h): every session ends, every
 * association is let go; the backend frees its own without upcalls.
 * Until it does, the stack's thread still runs (a datagram, a timer),
 * so an association's upcalls go where nothing is freed, and aborting
 * it leaves only its down to come. */
static void ddps_quiesce(struct uiw_sctp_stack *st)
{
	struct ddps_as *a;

	while ((a = as_list[uiw_sctp_stack_kind(st)])) {
		struct uiw_sctp_assoc *sa = a->sa;

		a->sa = NULL;
		as_fail_all(a, -ECONNABORTED, "the SCTP stack stops");
		if (sa) {
			uiw_sctp_assoc_bind(sa, &ign_ups, st);
			uiw_sctp_abort(sa);
		}
		as_free(a);
	}
}

/* ---- Listening ------------------------------------------------------------ */

/* A listener's new association: DDP's, or aborted.  A listener keeps a
 * bounded number; the oldest without sessions makes room. */
static void lsn_up(void *ctx, struct uiw_sctp_assoc *sa,
		   const struct uiw_sctp_info *info)
{
	struct uiw_ddps_lsn *l = ctx;
	struct ddps_as *a = as_new(l->st), *o, *victim = NULL;
	const char *why = "no memory";

	if (!a || !as_setup(a, info, &why)) {
		UIW_DBG(1, "ddps: association refused: %s", why);
		if (a)
			as_free(a);
		uiw_sctp_abort(sa);
		uiw_sctp_assoc_bind(sa, &ign_ups, l->st);
		return;
	}
	if (l->nassocs >= DDPS_LSN_ASSOCS_MAX) {
		for (o = *as_home(a); o; o = o->next)
			if (o->lsn == l && !o->nsess && o->sa)
				victim = o;    /* the last is the oldest */
		if (!victim) {
			as_free(a);
			uiw_sctp_abort(sa);
			uiw_sctp_assoc_bind(sa, &ign_ups, l->st);
			return;
		}
		uiw_sctp_abort(victim->sa);
	}
	a->sa = sa;
	a->lsn = l;
	as_list_add(as_home(a), a);
	a->listed = true;
	l->nassocs++;
	uiw_sctp_assoc_bind(sa, &as_up, a);
	as_check_idle(a);
}

static const struct uiw_sctp_up lsn_ups = {
	.up = lsn_up,
};

struct lsn_call {
	struct uiw_sctp_stack *st;
	const struct sockaddr *sa;
	socklen_t salen;
	int backlog;
	struct uiw_ddps_lsn *l;
};

static int lsn_open(void *arg)
{
	struct lsn_call *c = arg;

	return uiw_sctp_listen(c->st, c->sa, c->salen, c->backlog, &lsn_ups,
			       c->l, &c->l->sl);
}

int uiw_ddps_listen(struct uiw_sctp_stack *st, const struct sockaddr *sa,
		    socklen_t salen, int backlog, uiw_ddps_initiate_fn fn,
		    void *ctx, struct uiw_ddps_lsn **out)
{
	struct uiw_ddps_lsn *l = calloc(1, sizeof(*l));
	struct lsn_call c = { st, sa, salen, backlog, l };
	int ret;

	if (!l)
		return -ENOMEM;
	uiw_sctp_set_quiesce(ddps_quiesce);
	l->st = st;
	l->fn = fn;
	l->ctx = ctx;
	ret = uiw_rt_call(uiw_sctp_stack_rt(st), lsn_open, &c);
	if (ret < 0) {
		free(l);
		return ret;
	}
	*out = l;
	return 0;
}

void uiw_ddps_lsn_addr(const struct uiw_ddps_lsn *l,
		       struct sockaddr_storage *ss)
{
	uiw_sctp_lsn_addr(l->sl, ss);
}

static int lsn_close(void *arg)
{
	struct uiw_ddps_lsn *l = arg;
	struct ddps_as *a;

	uiw_sctp_unlisten(l->sl);
	/* Its associations live on without it: Initiates on them are
	 * answered with Terminates from now on. */
	for (a = as_list[uiw_sctp_stack_kind(l->st)]; a; a = a->next)
		if (a->lsn == l)
			a->lsn = NULL;
	free(l);
	return 0;
}

void uiw_ddps_unlisten(struct uiw_ddps_lsn *l)
{
	if (l)
		uiw_rt_call(uiw_sctp_stack_rt(l->st), lsn_close, l);
}

/* ---- Active side ----------------------------------------------------------- */

static bool same_peer(const struct sockaddr_storage *a, socklen_t alen,
		      const struct sockaddr *b, socklen_t blen)
{
	return alen == blen && !memcmp(a, b, blen);
}

int uiw_ddps_connect(struct uiw_sctp_stack *st, const struct sockaddr *peer,
		     socklen_t peerlen, const struct sockaddr *local,
		     socklen_t locallen, uint16_t udp_port,
		     const struct uiw_ddps_hello *h,
		     const struct uiw_ddps_owner *own, void *ctx,
		     struct uiw_ddps_sess **out)
{
	struct ddps_as *a;
	struct uiw_ddps_sess *s;
	int ret;

	uiw_sctp_set_quiesce(ddps_quiesce);
	if (h->pd_len + (h->enhanced ? UIW_MPA_V2_LEN : 0) >
	    UIW_DDPS_PD_MAX || peerlen > sizeof(a->peer))
		return -EINVAL;
	/* An association to the peer we started, up or coming up, with a
	 * stream free. */
	for (a = as_list[uiw_sctp_stack_kind(st)]; a; a = a->next) {
		if (!a->active || !a->sa || a->udp_port != udp_port ||
		    !same_peer(&a->peer, a->peerlen, peer, peerlen))
			continue;
		if (!a->up || as_has_stream(a))
			break;
	}
	s = sess_new(NULL);
	if (!s)
		return -ENOMEM;
	s->active = true;
	s->own = own;
	s->ctx = ctx;
	s->enhanced = h->enhanced;
	s->v2 = h->v2;
	s->pd_len = h->pd_len;
	if (h->pd_len)
		memcpy(s->pd, h->pd, h->pd_len);
	if (!a) {
		a = as_new(st);
		if (!a) {
			free(s);
			return -ENOMEM;
		}
		a->active = true;
		memcpy(&a->peer, peer, peerlen);
		a->peerlen = peerlen;
		a->udp_port = udp_port;
		ret = uiw_sctp_connect(st, peer, peerlen, local, locallen,
				       udp_port, &as_up, a, &a->sa);
		if (ret < 0) {
			as_free(a);
			free(s);
			return ret;
		}
		as_list_add(as_home(a), a);
		a->listed = true;
	}
	s->as = a;
	a->nsess++;
	uiw_rt_timer_stop(a->rt, &a->idle);
	if (!a->up) {
		s->st = SS_WAIT_ASSOC;
		s->pend_next = a->pending;
		a->pending = s;
	} else {
		ret = sess_send_initiate(s);
		if (ret < 0) {
			a->nsess--;
			free(s);
			as_check_idle(a);
			return ret;
		}
	}
	*out = s;
	return 0;
}

/* ---- Passive side, both ------------------------------------------------------ */

void uiw_ddps_own(struct uiw_ddps_sess *s, const struct uiw_ddps_owner *own,
		  void *ctx)
{
	s->own = own;
	s->ctx = ctx;
}

int uiw_ddps_attach(struct uiw_ddps_sess *s, struct uiw_qp *qp,
		    const struct uiw_llp_params *lp)
{
	struct uiw_llp_params p = *lp;
	int ret;

	if (s->st != SS_OPEN || s->attached)
		return -EINVAL;
	p.mulpdu = s->as->mulpdu;
	p.tx_held = false;
	/* In DDP-SSN order: the engine checks MSN and MO as on a stream
	 * (RFC 5041 §7.1). */
	p.unordered = false;
	s->qp = qp;
	ret = uiw_qp_llp_attach(qp, &p, &eng_ops, s);
	if (ret < 0)
		return ret;
	s->attached = true;
	/* Work requests posted while Idle went out with the attach's
	 * kick. */
	return 0;
}

int uiw_ddps_accept(struct uiw_ddps_sess *s, const struct uiw_ddps_hello *h,
		    struct uiw_qp *qp, const struct uiw_llp_params *lp)
{
	int ret;

	if (s->st != SS_INIT_RCVD)
		return -EINVAL;
	ret = send_ctl(s, s->enhanced ? UIW_DDPS_E_ACCEPT : UIW_DDPS_ACCEPT,
		       &h->v2, h->pd, h->pd_len);
	if (ret < 0) {
		sess_end(s, ret, NULL, "cannot send the Accept");
		return ret;
	}
	s->st = SS_OPEN;
	ret = uiw_ddps_attach(s, qp, lp);
	if (ret < 0) {
		sess_violation(s, "the QP cannot be attached");
		return ret;
	}
	return 0;
}

int uiw_ddps_reject(struct uiw_ddps_sess *s, bool enhanced,
		    const struct uiw_mpa_v2 *v2, const void *pd,
		    uint16_t pd_len)
{
	int ret;

	if (s->st != SS_INIT_RCVD)
		return -EINVAL;
	/* RFC 5043 §6.3: the Reject is the passive side's last message. */
	ret = send_ctl(s, enhanced && s->enhanced ? UIW_DDPS_E_REJECT :
		       UIW_DDPS_REJECT, v2, pd, pd_len);
	sess_end(s, ret < 0 ? ret : 0, NULL, "rejected");
	return ret < 0 ? ret : 0;
}

void uiw_ddps_close(struct uiw_ddps_sess *s, bool abortive)
{
	if (s->st == SS_OVER)
		return;
	if (s->st == SS_OPEN && s->attached && !abortive) {
		/* After what the engine queued, as its own close does. */
		eng_close(s, false);
		return;
	}
	if (!s->term_sent && s->as && s->as->sa && s->st != SS_WAIT_ASSOC)
		send_ctl(s, UIW_DDPS_TERMINATE, NULL, NULL, 0);
	if (s->st == SS_WAIT_ASSOC) {
		struct uiw_ddps_sess **pp;

		for (pp = &s->as->pending; *pp; pp = &(*pp)->pend_next) {
			if (*pp == s) {
				*pp = s->pend_next;
				break;
			}
		}
	}
	sess_end(s, -ECONNABORTED, NULL, "closed");
}

uint16_t uiw_ddps_sid(const struct uiw_ddps_sess *s)
{
	return s->sid;
}

const struct uiw_sctp_info *uiw_ddps_info(const struct uiw_ddps_sess *s)
{
	return &s->as->info;
}
