/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for common/dnp_yield.h: the threshold of a fast yield follows
 * the machine's system call cost, and two pollers that share one CPU never
 * believe they are alone on it (whatever the threshold: the switch count is
 * the exact test), so neither stops yielding to the other; a yield that ran
 * the other stamps the moment we got the CPU back, which opens the short
 * window of dnp_yield_held.
 */
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

#include <cmocka.h>

#include "dnp_yield.h"

static void test_yield_fast_threshold(void **state)
{
	struct dnp_yield y = { 0 };

	(void)state;
	assert_true(dnp_yield_fast_ns() >= DNP_YIELD_ALONE_NS);
	/* measured once, at the first step, and kept */
	(void)dnp_yield_step(&y, dnp_yield_now());
	assert_true(y.fast_ns >= DNP_YIELD_ALONE_NS);
	assert_int_equal(y.yields, 1);
}

struct poller {
	cpu_set_t cpu;
	pthread_barrier_t *start; /* both pinned before either polls */
	unsigned alone_seen;      /* steps after which the poller believed it was alone */
	unsigned stamps;          /* slow yields that stamped 'back' inside the step */
	unsigned bad_stamps;      /* stamps outside the step */
	int err;
	atomic_bool *done; /* set by the first to finish: the other is then alone */
};

static void *poll_shared(void *arg)
{
	struct poller *p = arg;
	struct dnp_yield y = { 0 };

	p->err = pthread_setaffinity_np(pthread_self(), sizeof(p->cpu), &p->cpu);
	pthread_barrier_wait(p->start);
	if (p->err)
		return NULL;
	/* 50 ms of polling each, or until the other stops */
	for (uint64_t end = dnp_yield_now() + 50000000ull; !atomic_load(p->done);) {
		uint64_t now = dnp_yield_now();

		if (now >= end)
			break;
		uint64_t before = y.back;
		(void)dnp_yield_step(&y, now);
		uint64_t after = dnp_yield_now();

		if (y.back != before) {
			if (y.back < now || y.back > after || !dnp_yield_held(&y, y.back, 1))
				p->bad_stamps++;
			else
				p->stamps++;
		}
		if (dnp_yield_alone(&y, dnp_yield_now()) && !atomic_load(p->done))
			p->alone_seen++;
	}
	atomic_store(p->done, true);
	return NULL;
}

/*
 * Two threads pinned to one CPU, both polling with dnp_yield_step: every
 * yield hands the CPU to the other, so neither may ever enter the window of
 * polling without yields (it would keep the CPU from the other for 20 us at
 * a time). With the threshold alone (no switch count) a machine whose
 * switches are fast would let them.
 */
static void test_yield_shared_cpu_never_alone(void **state)
{
	atomic_bool done = false;
	pthread_barrier_t start;
	struct poller p[2] = { { .start = &start, .done = &done },
			       { .start = &start, .done = &done } };
	pthread_t t[2];
	cpu_set_t mine;

	(void)state;
	if (sched_getaffinity(0, sizeof(mine), &mine) != 0 || CPU_COUNT(&mine) < 1)
		skip();
	int cpu = 0;
	while (!CPU_ISSET(cpu, &mine))
		cpu++;
	for (unsigned i = 0; i < 2; i++) {
		CPU_ZERO(&p[i].cpu);
		CPU_SET(cpu, &p[i].cpu);
	}
	assert_int_equal(pthread_barrier_init(&start, NULL, 2), 0);
	for (unsigned i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&t[i], NULL, poll_shared, &p[i]), 0);
	for (unsigned i = 0; i < 2; i++)
		assert_int_equal(pthread_join(t[i], NULL), 0);
	pthread_barrier_destroy(&start);
	for (unsigned i = 0; i < 2; i++) {
		if (p[i].err)
			skip(); /* no affinity here: the test cannot share a CPU */
		assert_int_equal(p[i].alone_seen, 0);
		assert_int_equal(p[i].bad_stamps, 0);
	}
	/* sharing one CPU, the two hand it to each other: slow yields happen */
	assert_true(p[0].stamps + p[1].stamps > 0);
}

/* The window of dnp_yield_held: [back, back + ns), none before any stamp or after a reset. */
static void test_yield_held_window(void **state)
{
	struct dnp_yield y = { 0 };

	(void)state;
	assert_false(dnp_yield_held(&y, 5000, 3000));
	y.back = 1000000;
	assert_true(dnp_yield_held(&y, 1000000, 3000));
	assert_true(dnp_yield_held(&y, 1002999, 3000));
	assert_false(dnp_yield_held(&y, 1003000, 3000));
	assert_false(dnp_yield_held(&y, 2000000, 3000));
	assert_false(dnp_yield_held(&y, 1000000, 0));
	dnp_yield_reset(&y);
	assert_int_equal(y.back, 0);
	assert_false(dnp_yield_held(&y, 1000000, 3000));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_yield_fast_threshold),
		cmocka_unit_test(test_yield_shared_cpu_never_alone),
		cmocka_unit_test(test_yield_held_window),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
