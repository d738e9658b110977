/*
 * How far apart the machine's first two CPUs are: the round trip of one
 * cache line between a thread on each, in nanoseconds.
 *
 * On a virtual machine the host places the virtual CPUs where it likes,
 * and moves them.  Two vCPUs that share a last-level cache bounce a line
 * in tens of nanoseconds; on different dies or sockets it takes several
 * times as long, and every loopback ping-pong, whose data and socket
 * state cross between the CPUs, slows down with it.  bench/perf.sh uses
 * this probe to compare runs made at the same placement.
 *
 * usage: cpuprobe [ms]      the best round trip over ms (default 20)
 *        cpuprobe -t secs   one figure per 50 ms window, for secs
 * Exits 2 when the process may not use two CPUs.
 * (a benchmark: it prints figures and never fails for being slow)
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BATCH 200               /* round trips per timed batch */
#define STOP 0xffffffffu

static _Alignas(64) atomic_uint ball;
static int cpu_a, cpu_b;

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int pin(int cpu)
{
	cpu_set_t s;

	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	return pthread_setaffinity_np(pthread_self(), sizeof(s), &s);
}

/* The far side: answers every odd value with the next one (main checked
 * that cpu_b may be used; should pinning fail all the same, it answers
 * from wherever it runs rather than leave main waiting). */
static void *echo(void *arg)
{
	unsigned v;

	(void)pin(cpu_b);
	while ((v = atomic_load_explicit(&ball, memory_order_acquire)) != STOP)
		if (v & 1)
			atomic_store_explicit(&ball, v + 1,
					      memory_order_release);
	return arg;
}

/* The best batch's round trip (ns) within secs; v is the ball's value. */
static double best_within(double secs, unsigned *v)
{
	double t0 = now_s(), best = 1e12;

	do {
		double a = now_s(), d;
		int i;

		for (i = 0; i < BATCH; i++) {
			++*v;
			atomic_store_explicit(&ball, *v, memory_order_release);
			while (atomic_load_explicit(&ball,
					memory_order_acquire) != *v + 1)
				;
			++*v;
		}
		d = (now_s() - a) / BATCH * 1e9;
		if (d < best)
			best = d;
	} while (now_s() - t0 < secs);
	return best;
}

int main(int argc, char **argv)
{
	double ms = 20, trace = 0;
	unsigned v = 0;
	pthread_t t;
	cpu_set_t s;
	int c, n = 0;

	if (argc > 1 && strcmp(argv[1], "-t") == 0)
		trace = argc > 2 ? atof(argv[2]) : 0;
	else if (argc > 1)
		ms = atof(argv[1]);
	if (argc > 1 && strcmp(argv[1], "-t") == 0 ? argc != 3 || trace <= 0
						 : argc > 2 || ms <= 0) {
		fprintf(stderr, "usage: cpuprobe [ms] | cpuprobe -t secs\n");
		return 2;
	}
	if (sched_getaffinity(0, sizeof(s), &s) != 0) {
		perror("cpuprobe: sched_getaffinity");
		return 2;
	}
	for (c = 0; c < CPU_SETSIZE && n < 2; c++)
		if (CPU_ISSET(c, &s))
			*(n++ == 0 ? &cpu_a : &cpu_b) = c;
	if (n < 2) {
		fprintf(stderr, "cpuprobe: fewer than two CPUs to use\n");
		return 2;
	}
	if (pin(cpu_a) != 0 || pthread_create(&t, NULL, echo, NULL) != 0) {
		fprintf(stderr, "cpuprobe: cannot run on CPUs %d and %d\n",
			cpu_a, cpu_b);
		return 2;
	}
	if (trace > 0) {
		double end = now_s() + trace;

		while (now_s() < end)
			printf("%.0f\n", best_within(0.05, &v));
	} else {
		printf("%.0f\n", best_within(ms / 1e3, &v));
	}
	atomic_store_explicit(&ball, STOP, memory_order_release);
	pthread_join(t, NULL);
	return 0;
}
