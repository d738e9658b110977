/*
 * The drop-in librdmacm.so.1 (cma*.c): rdma_cm ids and event channels
 * over the uiw_ connection manager of <uiwarp/cm.h>, with the event
 * semantics of the kernel's iWARP connection manager.
 *
 * cma_event.c: channels, their event queues, rdma_get_cm_event and the
 * mapping of uiw_cm events; cma_id.c: ids, addresses, listeners,
 * options; cma_conn.c: connect, accept, reject, disconnect; cma_qp.c:
 * QPs, SRQs and the rdma_verbs.h endpoints; cma_opt.c: uiwarp's own
 * options (<uiwarp/rdma_option.h>) and their environment variables;
 * cma_addr.c: rdma_getaddrinfo, devices, the local address towards a
 * peer; cma_unsupported.c: what iWARP or uiwarp does not offer.
 *
 * Locking: one process-wide mutex (cma_lock) guards every id, channel
 * and queue; nothing blocks while holding it except calls into the uiw_
 * connection manager and verbs, which never call back here.
 */
#ifndef UIW_CMA_H
#define UIW_CMA_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <rdma/rdma_cma.h>
#include <uiwarp/uiwarp.h>
#include <uiwarp/rdma_option.h>

#include "compat.h"

/* ---- uiwarp's options (cma_opt.c) ---------------------------------- */

#define CMA_OPT_MAX UIW_RDMA_OPT_UDP_PORT

struct cma_opts {
	unsigned set;                    /* bit n: option n set */
	unsigned val[CMA_OPT_MAX + 1];
};

/* rdma_set_option at UIW_RDMA_OPTION_LEVEL.  0 or -errno (logged). */
int cma_opt_set(struct cma_opts *o, int name, const void *val, size_t len);
/* The options in force: those set, the environment's for the others,
 * else the defaults.  0 or -EINVAL (logged) for a bad environment value. */
int cma_opt_resolve(const struct cma_opts *o, struct cma_opts *out);
/* Fills the uiw_conn_param fields the options decide. */
void cma_opt_conn_param(const struct cma_opts *eff, bool initiator,
			struct uiw_conn_param *p);

/* ---- Channels, ids and events -------------------------------------- */

struct cma_id;
struct cma_event;

/* Another channel's uiw_cm_channel that feeds ids living on this one
 * (a migrated id keeps its uiw_cm_id on the channel it was made on). */
struct cma_feed {
	struct cma_channel *src;
	unsigned refs;
};

struct cma_channel {
	struct rdma_event_channel ch;  /* ch.fd: an epoll fd over efd, the
					  uiw channel's fd and the feeds' */
	struct uiw_cm_channel *uch;
	int efd;                       /* readable while head != NULL */
	struct cma_event *head, *tail;
	unsigned users;                /* ids on it or with their uiw id
					  on uch */
	unsigned waiters;              /* callers inside rdma_get_cm_event */
	bool closed;                   /* the application's no more
					  (destroyed, or an id's own):
					  shut once no id uses it */
	bool shut;                     /* calls fail with EBADF; released
					  (kept as a spare) once unused */
	bool released;                 /* among the spares */
	struct cma_feed *feeds;
	unsigned nfeeds;
	struct cma_channel *next;      /* all channels */
};

enum cma_state {
	CMA_IDLE,
	CMA_BOUND,
	CMA_ADDR_RESOLVED,
	CMA_ROUTE_RESOLVED,
	CMA_LISTEN,
	CMA_REQUEST,         /* a CONNECT_REQUEST child not yet answered */
	CMA_CONNECT,         /* connect or accept under way */
	CMA_CONNECTED,
	CMA_DISCONNECTED,    /* ended (disconnect, rejection or error) */
};

struct cma_id {
	struct rdma_cm_id id;          /* what the application sees */
	enum cma_state state;
	struct cma_channel *home;      /* whose uch holds uid */
	struct uiw_cm_id *uid;
	bool sync;                     /* made with a NULL channel: owns
					  id.channel, calls block */
	bool destroyed;                /* freed at the last ack */
	unsigned events_out;           /* delivered, not acknowledged, or
					  queued */
	int resv_fd;                   /* holds the bound port until listen */
	struct cma_opts opts;
	/* The peer's IRD and ORD from its Request (child ids). */
	uint8_t peer_ird, peer_ord;
	struct ibv_qp_init_attr *ep_qp_attr; /* rdma_create_ep, passive */
};

extern pthread_mutex_t cma_lock;

static inline struct cma_id *cma_id_of(struct rdma_cm_id *id)
{
	return (struct cma_id *)id;
}
static inline struct cma_channel *cma_ch_of(struct rdma_event_channel *ch)
{
	return (struct cma_channel *)ch;
}

/* The id, with cma_lock taken, if it is in one of the states (a mask of
 * CMA_S()); else NULL, errno EINVAL, a debug line naming what. */
#define CMA_S(state) (1u << (state))
struct cma_id *cma_id_lock(struct rdma_cm_id *id, unsigned states,
			   const char *what);

/* Sets errno to e and returns -1, as librdmacm's calls do. */
int cma_err(int e);
/* As cma_err for a uiw_ result (-errno), with its message logged. */
int cma_uiw_err(int ret, const char *what);

/* cma_event.c */
struct cma_channel *cma_channel_new(void);      /* cma_lock held */
void cma_channel_put(struct cma_channel *c);    /* a user less; cma_lock */
struct cma_event *cma_event_new(struct cma_id *c,
				enum rdma_cm_event_type type, int status);
void cma_event_push(struct cma_channel *ch, struct cma_event *e);
/* Queues a locally made event on the id's channel; cma_lock held. */
int cma_event_local(struct cma_id *c, enum rdma_cm_event_type type,
		    int status);
/* An event acknowledged; cma_lock held. */
void cma_event_done(struct rdma_cm_event *ev);
/* rdma-core 44 behaviour (rdma_destroy_id): waits until the events of c
 * that other threads took are acknowledged; cma_lock held (released
 * while waiting). */
void cma_events_wait_taken(struct cma_id *c);
/* The id's queued events move from one channel's queue to another's. */
void cma_events_move(struct cma_id *c, struct cma_channel *from,
		     struct cma_channel *to);
/* Drops the id's queued events (not yet delivered); cma_lock held. */
void cma_events_drop(struct cma_id *c);
/* For an id made with a NULL channel, waits for its next event as
 * librdmacm does (the previous one acknowledged first): 0 or -1 with
 * errno.  cma_lock not held. */
int cma_complete(struct cma_id *c);
int cma_feed_add(struct cma_channel *to, struct cma_channel *src);
void cma_feed_del(struct cma_channel *to, struct cma_channel *src);

/* cma_id.c */
struct cma_id *cma_id_new(struct cma_channel *ch, void *context,
			  enum rdma_port_space ps, enum ibv_qp_type qpt);
/* Frees now or, with events out, at the last ack; cma_lock held. */
void cma_id_release(struct cma_id *c);
void cma_id_free(struct cma_id *c);
/* id->verbs, port_num and pd: the process's device; 0 or -errno. */
int cma_id_attach(struct cma_id *c);
/* The uiw id of c, made on home's uiw channel: home stays while it
 * does; cma_lock held. */
void cma_id_set_home(struct cma_id *c, struct cma_channel *home,
		     struct uiw_cm_id *uid);
/* route.addr from the uiw id's own and peer addresses. */
void cma_id_addrs(struct cma_id *c);
/* A child id for a CONNECT_REQUEST on listener l; cma_lock held. */
struct cma_id *cma_child_new(struct cma_id *l, struct uiw_cm_id *uid);

/* cma_addr.c */
/* The local address the kernel would use towards dst (port 0). */
int cma_route_src(const struct sockaddr *dst, struct sockaddr_storage *src);
socklen_t cma_sa_len(const struct sockaddr *sa);

/* cma_qp.c */
void cma_qp_state(struct cma_id *c, enum ibv_qp_state s);

#endif
