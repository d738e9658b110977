/* Completion queues: a fixed ring, an eventfd for notification. */
#ifndef UIW_RNIC_CQ_H
#define UIW_RNIC_CQ_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <uiwarp/uiwarp.h>

enum { UIW_CQ_ARM_NONE = 0, UIW_CQ_ARM_NEXT, UIW_CQ_ARM_SOLICITED };

/* A QP attached to an LLP that can receive on the caller's thread
 * (poll mode); kept in the list of each CQ the QP uses. */
struct uiw_cq_poller {
	struct uiw_cq_poller *next, *prev;
	int (*poll)(void *ctx, int how);   /* uiw_llp_ops.poll */
	void *ctx;
};

/* One entry of the ring: seq says whose turn it is (cq.c). */
struct uiw_cq_cell {
	atomic_uint_fast64_t seq;
	struct uiw_wc wc;
};

/*
 * The ring takes completions from any thread (each QP's under its own
 * lock, several QPs at once) and gives them to any thread that polls,
 * without a lock: a bounded queue whose cells carry a sequence number
 * (cq.c).  The notification is armed and fired with atomics too.
 */
struct uiw_cq {
	struct uiw_device *dev;
	struct uiw_cq_cell *ring;
	uint32_t size;
	atomic_uint_fast64_t tail;  /* next position to fill */
	atomic_uint_fast64_t head;  /* next position to take */
	atomic_bool overflow;       /* a completion found the ring full */
	atomic_int armed;           /* UIW_CQ_ARM_* */
	atomic_bool fired;          /* the notification fired: efd is to be
				       written (uiw_cq_wake) */
	int efd;                    /* eventfd */
	atomic_uint users;          /* QPs */
	/* Poll mode: uiw_cq_poll drives the pollers' receive itself. */
	atomic_bool poll_mode;
	atomic_bool defer_send;     /* UIW_CQ_POLL_DEFER_SEND */
	pthread_mutex_t poll_lock;  /* the list's writers (cq.c) */
	atomic_uint drivers;        /* uiw_cq_poll calls walking the list */
	atomic_bool pl_writer;      /* a writer waits for them */
	struct uiw_cq_poller pollers; /* list head */
	/* Poll mode, made on the first uiw_cq_set_poll_mode: an epoll set
	 * of the pollers' fds and of wakefd, for uiw_cq_wait; wakefd is
	 * written on each completion while a poll-mode waiter sleeps. */
	int pm_epfd, pm_wakefd;
	atomic_int pm_waiters;
};

/* Adds / removes a poller (uiw_qp_llp_attach / _detach).  Removal waits
 * for a poll of the list in progress; call it without the QP's lock. */
void uiw_cq_poller_add(struct uiw_cq *cq, struct uiw_cq_poller *p);
void uiw_cq_poller_del(struct uiw_cq *cq, struct uiw_cq_poller *p);
/* True when posted send work may wait for the application's next
 * uiw_cq_poll / uiw_cq_wait of cq (poll mode with
 * UIW_CQ_POLL_DEFER_SEND, no notification armed) instead of kicking the
 * LLP at once. */
bool uiw_cq_defers_tx(struct uiw_cq *cq);

/* Adds a completion.  Returns false when it did not fit: the CQ is then
 * in the overflowed state for good (RFC 5040 §8.1.1 rule 10: only the
 * streams using it are affected; the caller moves them to Error).
 * Wakes nobody: *wake is set when a thread may wait for this completion
 * (the notification fired, or a poll-mode waiter sleeps), and the
 * caller then calls uiw_cq_wake once it holds no lock, so that the
 * thread it wakes does not find the QP's lock taken. */
bool uiw_cq_push(struct uiw_cq *cq, const struct uiw_wc *wc, bool *wake);
/* Writes the notification's eventfd if a push fired it since, and the
 * poll-mode wake-up fd if a waiter sleeps there. */
void uiw_cq_wake(struct uiw_cq *cq);

#endif
