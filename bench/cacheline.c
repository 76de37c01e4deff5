/* SPDX-License-Identifier: MIT */
/*
 * cacheline — the reference of the loopback goal: the half round trip of one
 * 64-byte cache line between two cores. Two threads, pinned to CPUs A and B,
 * take turns writing a counter in one cache-line-aligned line: the line
 * travels to the other core and back once per round trip. Prints the median
 * over batches of 10000 round trips, in ns (half round trip).
 *
 *   cacheline [--cpus A,B] [--batches N]
 * Exit 77 if the two CPUs cannot be used (one CPU only).
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ROUNDS 10000u
#define MAX_BATCHES 1000u

static struct {
	_Alignas(64) _Atomic uint64_t turn;
	char pad[56];
} line;

static int pin(int cpu)
{
	cpu_set_t s;

	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	return pthread_setaffinity_np(pthread_self(), sizeof(s), &s);
}

static uint64_t total_rounds;

static void *echo(void *arg)
{
	if (pin(*(int *)arg))
		return (void *)1;
	for (uint64_t i = 0; i < total_rounds; i++) {
		while (atomic_load_explicit(&line.turn, memory_order_acquire) != 2 * i + 1)
			;
		atomic_store_explicit(&line.turn, 2 * i + 2, memory_order_release);
	}
	return NULL;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	int cpus[2] = { 0, 1 };
	unsigned batches = 50, b;
	double v[MAX_BATCHES];
	pthread_t t;
	uint64_t i = 0;

	for (int k = 1; k + 1 < argc; k += 2) {
		if (!strcmp(argv[k], "--cpus") &&
		    sscanf(argv[k + 1], "%d,%d", &cpus[0], &cpus[1]) == 2)
			continue;
		if (!strcmp(argv[k], "--batches")) {
			batches = (unsigned)strtoul(argv[k + 1], NULL, 0);
			if (batches && batches <= MAX_BATCHES)
				continue;
		}
		fprintf(stderr, "usage: cacheline [--cpus A,B] [--batches 1..%u]\n", MAX_BATCHES);
		return 2;
	}
	total_rounds = (uint64_t)batches * ROUNDS;
	if (pin(cpus[0]) || pthread_create(&t, NULL, echo, &cpus[1])) {
		fprintf(stderr, "cacheline: cannot use CPUs %d and %d\n", cpus[0], cpus[1]);
		return 77;
	}
	for (b = 0; b < batches; b++) {
		uint64_t t0 = now_ns();

		for (unsigned r = 0; r < ROUNDS; r++, i++) {
			atomic_store_explicit(&line.turn, 2 * i + 1, memory_order_release);
			while (atomic_load_explicit(&line.turn, memory_order_acquire) != 2 * i + 2)
				;
		}
		v[b] = (double)(now_ns() - t0) / ROUNDS / 2;
	}
	void *rc;
	pthread_join(t, &rc);
	if (rc) {
		fprintf(stderr, "cacheline: cannot pin to CPU %d\n", cpus[1]);
		return 77;
	}
	qsort(v, batches, sizeof(v[0]), cmp);
	printf("%.1f\n", batches % 2 ? v[batches / 2] : (v[batches / 2 - 1] + v[batches / 2]) / 2);
	return 0;
}
