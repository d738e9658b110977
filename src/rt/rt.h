/*
 * Runtime: one progress thread per device with an epoll set, and timers.
 *
 * The progress thread owns every socket of the device: it waits in
 * epoll_wait, calls the callbacks of ready fds, fires due timers and runs
 * work handed to it by other threads.  It never blocks anywhere else.
 *
 * Thread rules:
 *  - uiw_rt_post, uiw_rt_work_cancel, uiw_rt_call, uiw_rt_on_thread and
 *    hold/release/busy may be called from any thread.
 *  - Watches and timers are created, changed and removed on the progress
 *    thread only (from a callback, a timer, or work run by post/call).
 */
#ifndef UIW_RT_RT_H
#define UIW_RT_RT_H

#include <stdbool.h>
#include <stdint.h>

struct uiw_rt;

/* Created by uiw_device_open, destroyed by uiw_device_close.  name names
 * the progress thread (truncated to 15 characters). */
struct uiw_rt *uiw_rt_create(const char *name);
/* Stops and joins the progress thread.  Call it from another thread, once
 * every watch and timer is gone (see uiw_rt_busy). */
void uiw_rt_destroy(struct uiw_rt *rt);

/* True when called on rt's progress thread. */
bool uiw_rt_on_thread(const struct uiw_rt *rt);

/* Users that keep state on the runtime (a CM channel, for instance) hold
 * it; uiw_rt_busy is true while a hold, a watch or an armed timer
 * remains, so that uiw_device_close can answer -EBUSY. */
void uiw_rt_hold(struct uiw_rt *rt);
void uiw_rt_release(struct uiw_rt *rt);
bool uiw_rt_busy(struct uiw_rt *rt);

/* ---- File descriptors ---------------------------------------------- */

/* events: the EPOLL* flags that are ready (EPOLLERR and EPOLLHUP always
 * reported).  Level triggered: a callback that leaves an fd readable is
 * called again on the next round, so it may stop after a budget. */
typedef void (*uiw_rt_fd_fn)(void *arg, uint32_t events);
struct uiw_rt_watch;

/* Watches fd for events (EPOLLIN, EPOLLOUT, EPOLLRDHUP; 0 for errors
 * only).  Returns NULL with errno set on failure. */
struct uiw_rt_watch *uiw_rt_watch_add(struct uiw_rt *rt, int fd,
				      uint32_t events, uiw_rt_fd_fn fn,
				      void *arg);
/* Changes the interest set; returns 0 or -errno. */
int uiw_rt_watch_set(struct uiw_rt_watch *w, uint32_t events);
uint32_t uiw_rt_watch_events(const struct uiw_rt_watch *w);
/* Stops watching (before the fd is closed).  fn is not called after this
 * returns, even for events already collected in the current round. */
void uiw_rt_watch_del(struct uiw_rt_watch *w);

/* ---- Work handed to the progress thread ---------------------------- */

/* A work item lives in its owner's structure; posting it again while it
 * is queued does nothing (the run that follows sees all reasons). */
struct uiw_rt_work {
	struct uiw_rt_work *next;
	void (*fn)(void *arg);
	void *arg;
	bool queued;
};
void uiw_rt_work_init(struct uiw_rt_work *w, void (*fn)(void *arg),
		      void *arg);
/* Queues w to run on the progress thread soon; never fails, never
 * blocks beyond a short lock.  From the progress thread itself, w runs
 * after the current callback returns. */
void uiw_rt_post(struct uiw_rt *rt, struct uiw_rt_work *w);
/* Removes w from the queue if it is there; true if it was. */
bool uiw_rt_work_cancel(struct uiw_rt *rt, struct uiw_rt_work *w);
/* Runs fn(arg) on the progress thread and waits for it; returns what fn
 * returned.  Called on the progress thread, runs fn at once. */
int uiw_rt_call(struct uiw_rt *rt, int (*fn)(void *arg), void *arg);

/* ---- One-shot timers ----------------------------------------------- */

struct uiw_rt_timer {
	struct uiw_rt_timer *next, *prev;
	uint64_t deadline_ns;         /* CLOCK_MONOTONIC */
	bool armed;
	void (*fn)(void *arg);
	void *arg;
};
void uiw_rt_timer_init(struct uiw_rt_timer *t, void (*fn)(void *arg),
		       void *arg);
/* Arms (or re-arms) t to fire once, ms milliseconds from now. */
void uiw_rt_timer_start(struct uiw_rt *rt, struct uiw_rt_timer *t,
			unsigned ms);
/* Disarms t; harmless when it is not armed. */
void uiw_rt_timer_stop(struct uiw_rt *rt, struct uiw_rt_timer *t);

#endif
