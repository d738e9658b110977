/*
 * What faultproxy.c and udpfault.c share: see relay_util.h.
 */
#include "relay_util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

int64_t uiw_rl_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

void uiw_rl_deadline(int64_t *dl, int64_t t)
{
	if (*dl == 0 || t < *dl)
		*dl = t;
}

int uiw_rl_poll_timeout(int64_t dl)
{
	int64_t left;

	if (dl == 0)
		return -1;
	left = dl - uiw_rl_now();
	if (left <= 0)
		return 0;
	if (left / UIW_RL_NS_PER_MS >= INT32_MAX)
		return INT32_MAX;
	return (int)((left + UIW_RL_NS_PER_MS - 1) / UIW_RL_NS_PER_MS);
}

int uiw_rl_init(struct uiw_rl *rl)
{
	pthread_condattr_t ca;

	pthread_mutex_init(&rl->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&rl->cv, &ca);
	pthread_condattr_destroy(&ca);
	rl->stop = false;
	rl->waiters = 0;
	rl->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	return rl->efd < 0 ? -1 : 0;
}

void uiw_rl_destroy(struct uiw_rl *rl)
{
	if (rl->efd >= 0)
		close(rl->efd);
	rl->efd = -1;
	pthread_cond_destroy(&rl->cv);
	pthread_mutex_destroy(&rl->mu);
}

int uiw_rl_start(struct uiw_rl *rl, void *(*fn)(void *), void *arg)
{
	sigset_t all, old;
	int err;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = pthread_create(&rl->thread, NULL, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err) {
		errno = err;
		return -1;
	}
	return 0;
}

bool uiw_rl_halt(struct uiw_rl *rl)
{
	bool first;

	pthread_mutex_lock(&rl->mu);
	first = !rl->stop;
	rl->stop = true;
	pthread_cond_broadcast(&rl->cv);
	pthread_mutex_unlock(&rl->mu);
	if (!first)
		return false;
	uiw_rl_wake(rl);
	pthread_join(rl->thread, NULL);
	return true;
}

void uiw_rl_await_waiters(struct uiw_rl *rl)
{
	pthread_mutex_lock(&rl->mu);
	while (rl->waiters > 0)
		pthread_cond_wait(&rl->cv, &rl->mu);
	pthread_mutex_unlock(&rl->mu);
}

void uiw_rl_wake(struct uiw_rl *rl)
{
	uint64_t one = 1;
	ssize_t r;

	do
		r = write(rl->efd, &one, sizeof(one));
	while (r < 0 && errno == EINTR);
	/* EAGAIN: the counter is already non-zero, the thread will wake. */
}

void uiw_rl_drain(struct uiw_rl *rl)
{
	uint64_t v;

	while (read(rl->efd, &v, sizeof(v)) < 0 && errno == EINTR)
		;
}

void uiw_rl_enter(struct uiw_rl *rl)
{
	pthread_mutex_lock(&rl->mu);
	rl->waiters++;
}

int uiw_rl_wait_once(struct uiw_rl *rl, const struct timespec *until)
{
	if (rl->stop) {
		errno = ECANCELED;
		return -1;
	}
	if (until == NULL) {
		pthread_cond_wait(&rl->cv, &rl->mu);
		return 0;
	}
	if (pthread_cond_timedwait(&rl->cv, &rl->mu, until) == ETIMEDOUT) {
		errno = ETIMEDOUT;
		return -1;
	}
	return 0;
}

void uiw_rl_leave(struct uiw_rl *rl)
{
	int err = errno;

	rl->waiters--;
	/* A halted relay's stop may be waiting for the last waiter. */
	if (rl->stop)
		pthread_cond_broadcast(&rl->cv);
	pthread_mutex_unlock(&rl->mu);
	errno = err;
}

struct timespec *uiw_rl_until(struct timespec *ts, int timeout_ms)
{
	if (timeout_ms < 0)
		return NULL;
	clock_gettime(CLOCK_MONOTONIC, ts);
	ts->tv_sec += timeout_ms / 1000;
	ts->tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
	return ts;
}

bool uiw_rl_addr_ok(const struct sockaddr *sa, socklen_t len)
{
	if (sa == NULL || len > sizeof(struct sockaddr_storage))
		return false;
	if (sa->sa_family == AF_INET)
		return len >= sizeof(struct sockaddr_in);
	if (sa->sa_family == AF_INET6)
		return len >= sizeof(struct sockaddr_in6);
	return false;
}

void uiw_rl_loopback(int family, uint16_t port, struct sockaddr_storage *ss,
		     socklen_t *len)
{
	memset(ss, 0, sizeof(*ss));
	if (family == AF_INET) {
		struct sockaddr_in *a = (struct sockaddr_in *)ss;

		a->sin_family = AF_INET;
		a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		a->sin_port = htons(port);
		*len = sizeof(*a);
	} else {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;

		a->sin6_family = AF_INET6;
		a->sin6_addr = in6addr_loopback;
		a->sin6_port = htons(port);
		*len = sizeof(*a);
	}
}

int uiw_rl_socket(int family, int type, uint16_t port, bool reuse,
		  struct sockaddr_storage *ss, socklen_t *len)
{
	struct sockaddr_storage a;
	socklen_t al;
	int fd, one = 1, err;

	fd = socket(family, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (reuse)
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	uiw_rl_loopback(family, port, &a, &al);
	if (bind(fd, (struct sockaddr *)&a, al) < 0 ||
	    (ss && getsockname(fd, (struct sockaddr *)ss, len) < 0)) {
		err = errno;
		close(fd);
		errno = err;
		return -1;
	}
	return fd;
}

int uiw_rl_numeric(const char *host, uint16_t port,
		   struct sockaddr_storage *ss, socklen_t *len)
{
	struct sockaddr_in *a4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)ss;

	memset(ss, 0, sizeof(*ss));
	if (host && inet_pton(AF_INET, host, &a4->sin_addr) == 1) {
		a4->sin_family = AF_INET;
		a4->sin_port = htons(port);
		*len = sizeof(*a4);
		return 0;
	}
	if (host && inet_pton(AF_INET6, host, &a6->sin6_addr) == 1) {
		a6->sin6_family = AF_INET6;
		a6->sin6_port = htons(port);
		*len = sizeof(*a6);
		return 0;
	}
	errno = EINVAL;
	return -1;
}

uint16_t uiw_rl_port(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		return ntohs(((const struct sockaddr_in *)ss)->sin_port);
	return ntohs(((const struct sockaddr_in6 *)ss)->sin6_port);
}
