/*
 * The connection manager's internal interface: the id and channel
 * structures and what the files of src/cm/ call in one another
 * (cm_event.c: channels and events; cm_id.c: ids, parameters and
 * addresses; cm_listen.c: listeners; cm_ops.c: connect, accept, reject,
 * disconnect, destroy and the sockets of the startup phase;
 * mpa_startup.c: the MPA startup itself).  Tests reach the listener's
 * books here too.  include/uiwarp/cm.h is the public part.
 *
 * Every state change of an id happens on the device's progress thread;
 * the API functions check their arguments, hand the work over with
 * uiw_rt_call and report its result.
 */
#ifndef UIW_CM_INTERNAL_H
#define UIW_CM_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <uiwarp/uiwarp.h>

#include "../rt/rt.h"
#include "../wire/mpa.h"
#include "mpa_startup.h"

#define CM_TIMEOUT_DEFAULT_MS 10000
#define CM_BACKLOG_DEFAULT    128
/* Connections a listener holds while they have not sent their MPA
 * Request, at the least (uiw_cm_set_max_awaiting). */
#define CM_AWAITING_DEFAULT   128
/* MPA revisions this implementation speaks: 1 (RFC 5044) and 2 (RFC
 * 6581), the default. */
#define CM_MPA_REV_MIN        1
#define CM_MPA_REV_MAX        2

enum cm_kind { CM_LISTEN, CM_ACTIVE, CM_PASSIVE };

enum cm_state {
	S_IDLE,
	S_LISTENING,
	S_CONNECTING,     /* active: TCP handshake */
	S_STARTUP,        /* the MPA startup object runs (id->su) */
	S_START_DELAY,    /* active: accepted; start_delay_ms before Full
			     Operation */
	S_ESTABLISHED,    /* the TCP LLP carries the QP */
	S_CLOSED,         /* over */
};

struct cm_ev {
	struct cm_ev *next;
	struct uiw_cm_id *id;
	struct uiw_cm_id *listen;
	enum uiw_cm_event_type type;
	int status;
	bool with_pd;
	bool queued;
	bool delivered;
};

/* An intrusive list of ids, in the order they were appended. */
struct cm_node {
	struct cm_node *next, *prev;
};
struct cm_list {
	struct cm_node *head, *tail;
	unsigned n;
};
void cm_list_append(struct cm_list *l, struct cm_node *n);
void cm_list_remove(struct cm_list *l, struct cm_node *n);
#define CM_ID_OF(node, member) \
	((struct uiw_cm_id *)((char *)(node) - offsetof(struct uiw_cm_id, member)))

struct uiw_sctp_stack;
struct uiw_ddps_lsn;
struct uiw_ddps_sess;

struct uiw_cm_channel {
	struct uiw_device *dev;
	struct uiw_rt *rt;
	int efd;
	pthread_mutex_t lock;        /* queue, nids, efd state */
	struct cm_ev *head, *tail;
	unsigned nids;
	uint8_t cur_pd[UIW_MPA_PD_MAX];
	/* SCTP stacks this channel's ids use (a reference each, kept
	 * until the channel goes; by enum uiw_sctp_kind). */
	struct uiw_sctp_stack *sctp[2];
};

struct uiw_cm_id {
	struct uiw_cm_channel *ch;
	struct uiw_rt *rt;           /* the device's; an SCTP id: the
					SCTP stack's (cm_sctp.c) */
	enum cm_kind kind;
	uint8_t llp;                 /* enum uiw_llp_kind, as asked */
	enum cm_state state;
	void *context;
	int error;                   /* -errno once failed */

	int fd;
	struct uiw_rt_watch *watch;
	struct uiw_rt_timer timer;
	struct uiw_tcp *tcp;
	struct sockaddr_storage local, peer;
	bool have_local, have_peer;

	/* QP bound to this id; claimed so that no other id uses it. */
	struct uiw_qp *qp;
	bool claimed;
	struct uiw_cm_id *claim_next;

	/* Our side of the startup, from uiw_conn_param. */
	enum uiw_opt crc, markers, align;
	uint32_t ird, ord;
	int timeout_ms;
	uint16_t start_delay_ms;     /* initiator: before Full Operation */
	uint16_t pd_len;
	uint8_t pd[UIW_MPA_PD_MAX];
	uint8_t rev;                 /* initiator: the revision it asks for */
	enum uiw_opt p2p;            /* initiator: peer-to-peer mode */
	uint8_t rtr;                 /* UIW_RTR_* we support (nonzero) */
	bool strict;                 /* ird/ord are requirements */

	/* The MPA startup (both roles). */
	struct uiw_mpa_startup su;

	/* Listener: children, the startup bound and timeout.  The
	 * children still awaiting their Request are also in a queue,
	 * oldest first, so that the oldest can be shed. */
	struct cm_list children, awaiting;
	unsigned max_awaiting;
	uint64_t accepted, shed;     /* counts, for uiw_cm_listener_stats */
	int startup_ms;
	uint8_t max_rev;             /* highest revision it answers */
	bool paused;
	/* Passive child: its listener (NULL once the listener is gone). */
	struct uiw_cm_id *listener;
	struct cm_node sib, await;
	bool in_await;
	bool rejecting;              /* passive: the application let go */
	/* uiw_cm_disconnect during the setup: the close starts once the
	 * connection is established (cm_established). */
	bool disc_pending;

	/* SCTP (cm_sctp.c): the stack, the listener's or the session. */
	struct uiw_sctp_stack *sctp;
	struct uiw_ddps_lsn *dlsn;
	struct uiw_ddps_sess *sess;
	uint16_t udp_port;           /* active: the peer's (RFC 6951) */
	bool undecided;              /* passive: no accept or reject yet
					(RFC 5043 §6.4's bound) */

	/* Each event of an id is raised at most once. */
	struct cm_ev ev_req, ev_conn, ev_disc;
};

/* Arguments and results of an operation run on the progress thread. */
struct cm_op {
	struct uiw_cm_id *id;
	struct uiw_qp *qp;
	const struct uiw_conn_param *param;
	const void *pd;
	uint16_t pd_len;
	int ival;
	struct sockaddr_storage *ss;
	struct uiw_cm_listener_stats *stats;
	const char *why;
	char buf[160];
};

/* ---- cm_event.c ------------------------------------------------------ */
int64_t cm_now_ms(void);
/* Queues one of id's events (each at most once).  Progress thread. */
void cm_ev_raise(struct uiw_cm_id *id, struct cm_ev *e,
		 enum uiw_cm_event_type type, int status, bool with_pd);
/* Removes e from the queue if it is there; true if it was. */
bool cm_ev_unqueue(struct uiw_cm_channel *ch, struct cm_ev *e);
void cm_ev_unqueue_all(struct uiw_cm_id *id);

/* ---- cm_id.c --------------------------------------------------------- */
const char *cm_state_str(const struct uiw_cm_id *id);
const char *cm_sa_str(const struct sockaddr_storage *ss, char *buf,
		      size_t cap);
socklen_t cm_sa_len(const struct sockaddr_storage *ss);
void cm_sa_copy(struct sockaddr_storage *ss, const struct sockaddr *sa);
int cm_check_addr(const struct sockaddr *sa, socklen_t len);
int cm_check_llp(enum uiw_llp_kind llp);
int cm_check_param(const struct uiw_conn_param *p, struct uiw_device *dev,
		   bool initiator);
int cm_check_qp(struct uiw_qp *qp, struct uiw_device *dev);
void cm_take_param(struct uiw_cm_id *id, const struct uiw_conn_param *p);
void cm_fill_names(struct uiw_cm_id *id);
uint32_t cm_dev_max_ird(struct uiw_device *dev, uint32_t *max_ord);
/* This side of the startup as the MPA startup object takes it. */
void cm_side(const struct uiw_cm_id *id, struct uiw_mpa_side *me);
bool cm_claim_qp(struct uiw_cm_id *id, struct uiw_qp *qp);
void cm_release_qp(struct uiw_cm_id *id);
struct uiw_cm_id *cm_id_new(struct uiw_cm_channel *ch, enum cm_kind k);
void cm_close_fd(struct uiw_cm_id *id);
void cm_id_free(struct uiw_cm_id *id);
/* The id's connection attempt or connection is over. */
void cm_id_closed(struct uiw_cm_id *id, int err);
int cm_op_error(const struct cm_op *op, int ret, const char *what);
int cm_free_op(void *arg);

/* ---- cm_listen.c ----------------------------------------------------- */
/* Takes a passive child off its listener's books. */
void cm_child_unlink(struct uiw_cm_id *c);
/* c no longer awaits its Request (announced, or gone). */
void cm_await_done(struct uiw_cm_id *c);
void cm_listener_stop(struct uiw_cm_id *l);

/* ---- cm_ops.c -------------------------------------------------------- */
/* A new passive connection on fd, awaiting its Request. */
int cm_passive_start(struct uiw_cm_id *c);
/* Moves the startup of a passive id on after an event or a shed. */
void cm_passive_progress(struct uiw_cm_id *c);
/* A passive connection failed (quietly before its CONNECT_REQUEST). */
void cm_passive_fail(struct uiw_cm_id *id, int err, const char *why);
/* Raises ESTABLISHED; a disconnect asked for during the setup starts. */
void cm_established(struct uiw_cm_id *id, bool with_pd);

/* ---- cm_sctp.c --------------------------------------------------------- */
struct uiw_listen_param;
int cm_sctp_connect(struct uiw_cm_channel *ch, struct uiw_qp *qp,
		    const struct sockaddr *dst,
		    const struct uiw_conn_param *param, struct uiw_cm_id **idp);
int cm_sctp_listen(struct uiw_cm_channel *ch, const struct sockaddr *addr,
		   const struct uiw_listen_param *param,
		   struct uiw_cm_id **listen_id);
int cm_sctp_accept(struct uiw_cm_id *id, struct cm_op *op);
int cm_sctp_reject(struct uiw_cm_id *id, struct cm_op *op);
int cm_sctp_disconnect(struct uiw_cm_id *id, struct cm_op *op);
/* Before an SCTP id is freed (progress thread). */
void cm_sctp_release(struct uiw_cm_id *id);
/* The channel's stack references go (uiw_cm_channel_destroy). */
void cm_sctp_channel_fini(struct uiw_cm_channel *ch);

/* A listener's books, read on its progress thread (for tests). */
struct uiw_cm_listener_stats {
	unsigned awaiting;       /* connections awaiting their MPA Request */
	unsigned max_awaiting;   /* the bound on them */
	uint64_t accepted;       /* TCP connections accepted so far */
	uint64_t shed;           /* of them, closed to make room */
	unsigned channel_ids;    /* ids alive on the listener's channel */
};
int uiw_cm_listener_stats(struct uiw_cm_id *listen_id,
			  struct uiw_cm_listener_stats *st);

#endif
