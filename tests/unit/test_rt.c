/*
 * The runtime's progress thread: calls, posted work (coalesced,
 * cancellable), one-shot timers in deadline order, fd watches (a watch
 * removed during a round is not called), and the busy count.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include "rt/rt.h"

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* State shared with the progress thread, guarded by lock. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static struct uiw_rt *rt;
static int order[8], norder;
static int runs;

static void record(int v)
{
	pthread_mutex_lock(&lock);
	if (norder < 8)
		order[norder++] = v;
	pthread_cond_broadcast(&cond);
	pthread_mutex_unlock(&lock);
}

static void wait_records(int n)
{
	int64_t deadline = now_ms() + 10000;

	pthread_mutex_lock(&lock);
	while (norder < n && now_ms() < deadline) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 10 * 1000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&cond, &lock, &ts);
	}
	pthread_mutex_unlock(&lock);
	assert_true(norder >= n);
}

static int setup(void **state)
{
	norder = 0;
	runs = 0;
	rt = uiw_rt_create("test-rt");
	return rt ? 0 : -1;
}

static int teardown(void **state)
{
	assert_false(uiw_rt_busy(rt));
	uiw_rt_destroy(rt);
	return 0;
}

/* ---- Calls ---------------------------------------------------------- */

static int inner(void *arg)
{
	return uiw_rt_on_thread(rt) ? *(int *)arg + 1 : -1;
}

static int outer(void *arg)
{
	/* A call from the progress thread runs at once. */
	return uiw_rt_on_thread(rt) ? uiw_rt_call(rt, inner, arg) * 10 : -1;
}

static void test_call(void **state)
{
	int v = 4;

	assert_false(uiw_rt_on_thread(rt));
	assert_int_equal(uiw_rt_call(rt, inner, &v), 5);
	assert_int_equal(uiw_rt_call(rt, outer, &v), 50);
}

/* ---- Posted work ---------------------------------------------------- */

static struct uiw_rt_work w1, w2;

static void count_run(void *arg)
{
	pthread_mutex_lock(&lock);
	runs++;
	pthread_mutex_unlock(&lock);
}

static int post_twice_cancel_one(void *arg)
{
	uiw_rt_post(rt, &w1);
	uiw_rt_post(rt, &w1);           /* coalesced */
	uiw_rt_post(rt, &w2);
	/* (No cmocka asserts on the progress thread: report instead.) */
	if (!uiw_rt_work_cancel(rt, &w2))
		return -1;
	if (uiw_rt_work_cancel(rt, &w2))
		return -2;
	return 0;
}

static int nothing(void *arg)
{
	return 0;
}

static void test_post(void **state)
{
	uiw_rt_work_init(&w1, count_run, NULL);
	uiw_rt_work_init(&w2, count_run, NULL);
	assert_int_equal(uiw_rt_call(rt, post_twice_cancel_one, NULL), 0);
	/* Work runs in order: once this call returns, w1 ran. */
	assert_int_equal(uiw_rt_call(rt, nothing, NULL), 0);
	assert_int_equal(runs, 1);
	/* From another thread too, and again after it ran. */
	uiw_rt_post(rt, &w1);
	assert_int_equal(uiw_rt_call(rt, nothing, NULL), 0);
	assert_int_equal(runs, 2);
}

/* ---- Timers --------------------------------------------------------- */

static struct uiw_rt_timer t1, t2, t3;

static void fire(void *arg)
{
	record((int)(intptr_t)arg);
}

static int arm(void *arg)
{
	uiw_rt_timer_init(&t1, fire, (void *)1);
	uiw_rt_timer_init(&t2, fire, (void *)2);
	uiw_rt_timer_init(&t3, fire, (void *)3);
	uiw_rt_timer_start(rt, &t1, 60);
	uiw_rt_timer_start(rt, &t2, 20);
	uiw_rt_timer_start(rt, &t3, 40);
	uiw_rt_timer_stop(rt, &t3);
	uiw_rt_timer_stop(rt, &t3);     /* harmless */
	/* Re-arming moves it: t1 now fires after t2's 20 ms, before 60. */
	uiw_rt_timer_start(rt, &t1, 30);
	return 0;
}

static void test_timers(void **state)
{
	int64_t t0 = now_ms();

	assert_int_equal(uiw_rt_call(rt, arm, NULL), 0);
	assert_true(uiw_rt_busy(rt));
	wait_records(2);
	assert_true(now_ms() - t0 >= 30);
	assert_int_equal(order[0], 2);
	assert_int_equal(order[1], 1);
	assert_false(uiw_rt_busy(rt));
	assert_int_equal(norder, 2);
}

/* ---- Watches -------------------------------------------------------- */

static int pa[2], pb[2];
static struct uiw_rt_watch *wa, *wb;

/* Whichever of the two runs first removes the other: in the round where
 * both are ready, the second must not be called. */
static void on_a(void *arg, uint32_t ev)
{
	char c;

	uiw_rt_watch_del(wb);
	uiw_rt_watch_del(wa);
	record(read(pa[0], &c, 1) == 1 ? 10 : -1);
}

static void on_b(void *arg, uint32_t ev)
{
	char c;

	uiw_rt_watch_del(wa);
	uiw_rt_watch_del(wb);
	record(read(pb[0], &c, 1) == 1 ? 20 : -1);
}

static int add_watches(void *arg)
{
	wa = uiw_rt_watch_add(rt, pa[0], EPOLLIN, on_a, NULL);
	wb = uiw_rt_watch_add(rt, pb[0], EPOLLIN, on_b, NULL);
	if (!wa || !wb)
		return -errno;
	/* Both become ready before the thread looks again. */
	if (write(pa[1], "a", 1) != 1 || write(pb[1], "b", 1) != 1)
		return -EIO;
	if (uiw_rt_watch_set(wa, EPOLLIN | EPOLLRDHUP) != 0 ||
	    uiw_rt_watch_events(wa) != (EPOLLIN | EPOLLRDHUP))
		return -EINVAL;
	return 0;
}

static void test_watch(void **state)
{
	assert_int_equal(pipe(pa), 0);
	assert_int_equal(pipe(pb), 0);
	assert_int_equal(uiw_rt_call(rt, add_watches, NULL), 0);
	wait_records(1);
	/* One more round: the other callback did not run. */
	assert_int_equal(uiw_rt_call(rt, nothing, NULL), 0);
	assert_int_equal(norder, 1);
	assert_true(order[0] == 10 || order[0] == 20);
	assert_false(uiw_rt_busy(rt));
	close(pa[0]);
	close(pa[1]);
	close(pb[0]);
	close(pb[1]);
}

static void test_hold(void **state)
{
	assert_false(uiw_rt_busy(rt));
	uiw_rt_hold(rt);
	assert_true(uiw_rt_busy(rt));
	uiw_rt_release(rt);
	assert_false(uiw_rt_busy(rt));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_call, setup, teardown),
		cmocka_unit_test_setup_teardown(test_post, setup, teardown),
		cmocka_unit_test_setup_teardown(test_timers, setup, teardown),
		cmocka_unit_test_setup_teardown(test_watch, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hold, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
