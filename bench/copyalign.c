/*
 * Copy rate against the distance between destination and source, modulo
 * 4096: the one property of a copy that MPA framing changes.
 *
 * The kernel copies socket payload with copy_user, which on x86 CPUs
 * with FSRM is a single "rep movsb".  Raw TCP with page-aligned buffers
 * copies at distance 0; an FPDU puts a 16- or 20-octet header (and a
 * CRC after each payload) into the stream, so the payload's copies run
 * at other distances, different for every FPDU.  This program shows what
 * that costs on this CPU: it times rep movsb (and, for comparison, the C
 * library's memcpy) for 64 KiB copies between page-aligned buffers at a
 * range of distances.
 *
 * usage: copyalign [size]     (a benchmark: it never fails for being slow)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void copy_rep(void *d, const void *s, size_t n)
{
#if defined(__x86_64__)
	__asm__ volatile("rep movsb" : "+D"(d), "+S"(s), "+c"(n) : : "memory");
#else
	memcpy(d, s, n);
#endif
}

/* Best of five rounds, in GB/s (10^9 octets per second). */
static double rate(void (*fn)(void *, const void *, size_t), uint8_t *d,
		   const uint8_t *s, size_t n)
{
	double best = 0;
	int round, i, reps = (int)((256u << 20) / n);

	for (round = 0; round < 5; round++) {
		double t0 = now_s(), t;

		for (i = 0; i < reps; i++)
			fn(d, s, n);
		t = now_s() - t0;
		if ((double)n * reps / t / 1e9 > best)
			best = (double)n * reps / t / 1e9;
	}
	return best;
}

static void copy_libc(void *d, const void *s, size_t n)
{
	memcpy(d, s, n);
	__asm__ volatile("" : : "r"(d) : "memory");
}

int main(int argc, char **argv)
{
	static const unsigned dist[] = {
		0, 4, 8, 12, 16, 20, 24, 32, 48, 64, 68, 128, 256, 1024,
		2048, 4032, 4076, 4092,
	};
	size_t n = argc > 1 ? strtoul(argv[1], NULL, 0) : 65536;
	uint8_t *src, *dst;
	unsigned i;

	if (n == 0 || n > (64u << 20)) {
		fprintf(stderr, "copyalign: size from 1 to 64 MiB\n");
		return 2;
	}
	src = aligned_alloc(4096, n + 4096);
	dst = aligned_alloc(4096, n + 8192);
	if (!src || !dst) {
		fprintf(stderr, "copyalign: out of memory\n");
		return 1;
	}
	memset(src, 1, n + 4096);
	memset(dst, 2, n + 8192);
	printf("| (dst - src) mod 4096 | rep movsb GB/s | memcpy GB/s |\n");
	printf("|---------------------:|---------------:|------------:|\n");
	for (i = 0; i < sizeof(dist) / sizeof(dist[0]); i++)
		printf("| %u | %.1f | %.1f |\n", dist[i],
		       rate(copy_rep, dst + dist[i], src, n),
		       rate(copy_libc, dst + dist[i], src, n));
	free(src);
	free(dst);
	return 0;
}
