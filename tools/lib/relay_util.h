/*
 * What the fault-injecting relays of tools/lib share: the TCP proxy
 * (faultproxy.c) and the UDP relay (udpfault.c).  Each runs one thread
 * around a poll(2) loop whose timeout is the earliest deadline it has,
 * woken through an eventfd when its API changes something, and offers
 * waits on a condition variable that end when the relay stops.  Not part
 * of the relays' interfaces (tests may use its address helpers).
 */
#ifndef UIW_TOOLS_RELAY_UTIL_H
#define UIW_TOOLS_RELAY_UTIL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <time.h>

#define UIW_RL_NS_PER_MS	1000000LL

/* CLOCK_MONOTONIC in ns. */
int64_t uiw_rl_now(void);
/* Lowers the deadline *dl (0: none yet) to t. */
void uiw_rl_deadline(int64_t *dl, int64_t t);
/* The poll(2) timeout that ends at deadline dl (0: none, -1), rounded
 * up so that the loop does not wake just before it and spin. */
int uiw_rl_poll_timeout(int64_t dl);

/*
 * What a relay's thread and its API share.  The thread holds mu except
 * while it sleeps in poll(2) (with efd among its descriptors); the API
 * takes mu, changes the relay's state and wakes the thread.  cv is
 * broadcast on progress, for the waits of the API, which end with
 * ECANCELED once stop is set.
 */
struct uiw_rl {
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;	/* on CLOCK_MONOTONIC, for uiw_rl_until() */
	int efd;		/* an eventfd: wakes the thread */
	bool stop;		/* the thread is to end, or has */
	unsigned int waiters;	/* threads inside a wait of the API */
};

/* The mutex, the condition variable and the eventfd: 0, or -1 with
 * errno set (uiw_rl_destroy() is then still to be called). */
int uiw_rl_init(struct uiw_rl *rl);
void uiw_rl_destroy(struct uiw_rl *rl);
/* Starts the thread with every signal blocked: signals stay with the
 * application's own threads.  0, or -1 with errno set. */
int uiw_rl_start(struct uiw_rl *rl, void *(*fn)(void *), void *arg);
/* Sets stop, wakes the thread and joins it.  False when the relay was
 * halted already (by another call, which may still be joining). */
bool uiw_rl_halt(struct uiw_rl *rl);
/* After a halt: waits until no thread is inside a wait of the API, so
 * that the relay can be freed. */
void uiw_rl_await_waiters(struct uiw_rl *rl);

/* Wakes the thread, and consumes that wake-up (the thread). */
void uiw_rl_wake(struct uiw_rl *rl);
void uiw_rl_drain(struct uiw_rl *rl);

/* A wait of the API: uiw_rl_enter() locks mu and counts the waiter in;
 * each uiw_rl_wait_once() (mu held) returns -1 with errno ECANCELED when
 * the relay has stopped, ETIMEDOUT when until (NULL: never) has passed,
 * or 0 after a wake-up (the caller looks again); uiw_rl_leave() counts
 * it out and unlocks. */
void uiw_rl_enter(struct uiw_rl *rl);
int uiw_rl_wait_once(struct uiw_rl *rl, const struct timespec *until);
void uiw_rl_leave(struct uiw_rl *rl);
/* The absolute time timeout_ms from now in *ts; NULL for timeout_ms < 0
 * (no limit). */
struct timespec *uiw_rl_until(struct timespec *ts, int timeout_ms);

/* Whether sa is a whole AF_INET or AF_INET6 address of len octets. */
bool uiw_rl_addr_ok(const struct sockaddr *sa, socklen_t len);
/* The loopback address of family (AF_INET or AF_INET6) with port (host
 * order). */
void uiw_rl_loopback(int family, uint16_t port, struct sockaddr_storage *ss,
		     socklen_t *len);
/* A non-blocking socket of type (SOCK_STREAM, SOCK_DGRAM) bound to the
 * loopback address of family at port (0: any), with SO_REUSEADDR if
 * reuse; the address it got in *ss and *len unless ss is NULL.  The
 * descriptor, or -1 with errno set. */
int uiw_rl_socket(int family, int type, uint16_t port, bool reuse,
		  struct sockaddr_storage *ss, socklen_t *len);
/* A numeric IPv4 or IPv6 host and a port to an address; -1 with errno
 * EINVAL when host is neither. */
int uiw_rl_numeric(const char *host, uint16_t port,
		   struct sockaddr_storage *ss, socklen_t *len);
/* The port (host order) of an AF_INET or AF_INET6 address. */
uint16_t uiw_rl_port(const struct sockaddr_storage *ss);

#endif
