/* SPDX-License-Identifier: MIT */
/*
 * presto_bench — Presto ping-pong between ranks 0 and 1 (half round trip),
 * each size timed with the eager protocol and with the rendez-vous protocol
 * in alternating rounds, and the switch-over: the largest size up to which
 * eager is faster. Run with a slot large enough for the sizes tried, e.g.
 *   PRESTO_SLOT_SIZE=65600 dnp-run --torus 2x1x1 -- presto_bench
 * Output (rank 0): bytes, eager median us, rendez-vous median us; --csv for CSV.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "presto.h"

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* iters ping-pongs of len bytes; returns the median half round trip (rank 0). */
static double pingpong(struct presto *p, uint8_t *buf, size_t len, unsigned iters, double *t)
{
	int me = presto_rank(p);
	unsigned i;

	for (i = 0; i < iters; i++) {
		double t0 = now_us();

		if (me == 0) {
			presto_send(p, buf, len, 1, 1);
			presto_recv(p, buf, len, 1, 1, NULL);
		} else if (me == 1) {
			presto_recv(p, buf, len, 0, 1, NULL);
			presto_send(p, buf, len, 0, 1);
		}
		t[i] = (now_us() - t0) / 2;
	}
	qsort(t, iters, sizeof(*t), cmp);
	return t[iters / 2];
}

int main(int argc, char **argv)
{
	static const size_t sizes[] = { 8,    64,   256,   512,   1024,  2048,   3072,
					4032, 8192, 16384, 32768, 65536, 131072, 262144 };
	unsigned nsz = sizeof(sizes) / sizeof(sizes[0]), k, round, iters = 200, rounds = 3;
	int csv = argc > 1 && !strcmp(argv[1], "--csv");
	struct presto *p;
	size_t cap, switch_at = 0, orig;
	double t_e[3], t_r[3], *t;
	uint8_t *buf;
	int r;

	r = presto_init(NULL, &p);
	if (r < 0) {
		fprintf(stderr, "presto_bench: presto_init: %s\n", strerror(-r));
		return 1;
	}
	orig = presto_eager_max(p);
	if (presto_size(p) < 2 || presto_rank(p) > 1) {
		presto_finalize(p);
		return 0;
	}
	cap = sizes[nsz - 1];
	buf = calloc(1, cap);
	t = calloc(iters, sizeof(*t));
	presto_set_eager_max(p, (size_t)-1 >> 1); /* -EINVAL: keep the slot's maximum */
	for (k = 0; k < nsz; k++) {
		/* the largest eager message the slots allow */
		if (presto_set_eager_max(p, sizes[k]) < 0)
			break;
	}
	nsz = k;
	if (presto_rank(p) == 0) {
		printf("# Presto ping-pong, half round trip, median of %u rounds x %u iterations\n",
		       rounds, iters);
		printf("# default eager limit of this build: %zu bytes\n", orig);
		printf(csv ? "bytes,eager_us,rendezvous_us\n" : "%10s %12s %16s\n", "bytes",
		       "eager[us]", "rendezvous[us]");
	}
	for (k = 0; k < nsz; k++) {
		for (round = 0; round < rounds; round++) {
			presto_set_eager_max(p, sizes[k]);
			pingpong(p, buf, sizes[k], 20, t);
			t_e[round] = pingpong(p, buf, sizes[k], iters, t);
			presto_set_eager_max(p, 0);
			pingpong(p, buf, sizes[k], 20, t);
			t_r[round] = pingpong(p, buf, sizes[k], iters, t);
		}
		qsort(t_e, rounds, sizeof(double), cmp);
		qsort(t_r, rounds, sizeof(double), cmp);
		/* switch-over: the first size from which rendez-vous stays faster */
		if (t_e[rounds / 2] <= t_r[rounds / 2])
			switch_at = 0;
		else if (!switch_at)
			switch_at = sizes[k];
		if (presto_rank(p) == 0)
			printf(csv ? "%zu,%.2f,%.2f\n" : "%10zu %12.2f %16.2f\n", sizes[k],
			       t_e[rounds / 2], t_r[rounds / 2]);
	}
	if (presto_rank(p) == 0 && switch_at)
		printf("# switch-over: rendez-vous is faster from %zu bytes on\n", switch_at);
	else if (presto_rank(p) == 0)
		printf("# switch-over: none; eager is faster at the largest size tried (%zu)\n",
		       nsz ? sizes[nsz - 1] : 0);
	free(buf);
	free(t);
	presto_finalize(p);
	return 0;
}
