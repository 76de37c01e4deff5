/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for common/dnp_yield.h: the threshold of a fast yield follows
 * the machine's system call cost, and two pollers that share one CPU never
 * believe they are alone on it (whatever the threshold: the switch count is
 * the exact test), so neither stops yielding to the other; a yield that ran
 * the other stamps the moment we got the CPU back, which opens the short
 * window of dnp_yield_held. The hand-off yields even inside the window of
 * polling alone, and the event count (dnp_evc_notify / dnp_evc_sleep) loses
 * no wake-up in a ping-pong of blocking waiters, on two CPUs and on one.
 * Beside a busy thread the idle steps turn to blocking (dnp_yield_blocking),
 * and the blocking windows grow while the busy process stays.
 */
#include <errno.h>
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

/* The hand-off yields even while the last measurement said "alone", and ends that window. */
static void test_yield_handoff_ends_alone(void **state)
{
	struct dnp_yield y = { 0 };
	uint64_t now = dnp_yield_now();

	(void)state;
	y.spin_until = now + 1000000000ull;
	y.streak = DNP_YIELD_STREAK;
	assert_true(dnp_yield_alone(&y, now));
	assert_false(dnp_yield_step(&y, now)); /* the idle step keeps polling */
	dnp_yield_handoff(&y, now);
	assert_int_equal(y.yields, 1);
	assert_false(dnp_yield_alone(&y, dnp_yield_now()));
	assert_true(y.streak <= 1);
}

/*
 * The blocking rule's bookkeeping (dnp_yield_slow), on synthetic times: a
 * slow yield or two do not block, DNP_YIELD_BUSY_RUN within
 * DNP_YIELD_BUSY_WINDOW_NS do; a run spread wider restarts the count; while blocking the idle step and the
 * hand-off make no yield; one slow yield soon after a window ends starts a
 * window twice as long (up to the cap), one later needs a new run.
 */
static void test_yield_busy_windows(void **state)
{
	struct dnp_yield y = { 0 };
	uint64_t t = 1000000000ull, w;

	(void)state;
	for (unsigned i = 1; i < DNP_YIELD_BUSY_RUN; i++) {
		dnp_yield_slow(&y, t += 5000000ull);
		assert_false(dnp_yield_blocking(&y, t));
	}
	t += DNP_YIELD_BUSY_WINDOW_NS; /* the next one is too late for this run */
	for (unsigned i = 1; i < DNP_YIELD_BUSY_RUN; i++)
		dnp_yield_slow(&y, t += 5000000ull);
	assert_false(dnp_yield_blocking(&y, t));
	dnp_yield_slow(&y, t += 5000000ull);
	assert_true(dnp_yield_blocking(&y, t));
	assert_int_equal(y.busy, 1);
	assert_int_equal(y.block_until, t + DNP_YIELD_BLOCK_NS);
	assert_false(dnp_yield_step(&y, t + 1));
	dnp_yield_handoff(&y, t + 1);
	assert_int_equal(y.yields, 0);
	dnp_yield_reset(&y); /* a sleep keeps the window */
	assert_true(dnp_yield_blocking(&y, t + 1));
	/* the window ends; the busy process is still there: twice as long */
	w = DNP_YIELD_BLOCK_NS;
	for (unsigned i = 0; i < 8; i++) {
		t = y.block_until + 1000000ull;
		assert_false(dnp_yield_blocking(&y, t));
		dnp_yield_slow(&y, t);
		w = w * 2 > DNP_YIELD_BLOCK_MAX_NS ? DNP_YIELD_BLOCK_MAX_NS : w * 2;
		assert_int_equal(y.block_until, t + w);
	}
	assert_int_equal(w, DNP_YIELD_BLOCK_MAX_NS);
	/* long after the window: one slow yield is not enough again */
	t = y.block_until + DNP_YIELD_PROBE_NS + 1;
	dnp_yield_slow(&y, t);
	assert_false(dnp_yield_blocking(&y, t));
	/* a caller that cannot block never starts a window */
	struct dnp_yield nb = { .no_block = true };
	for (unsigned i = 0; i < 2 * DNP_YIELD_BUSY_RUN; i++)
		dnp_yield_slow(&nb, t += 5000000ull);
	assert_false(dnp_yield_blocking(&nb, t));
	assert_int_equal(nb.busy, 0);
}

struct spinner {
	cpu_set_t cpu;
	_Atomic bool stop;
	int err;
};

static void *spin_busy(void *arg)
{
	struct spinner *sp = arg;

	sp->err = pthread_setaffinity_np(pthread_self(), sizeof(sp->cpu), &sp->cpu);
	while (!atomic_load_explicit(&sp->stop, memory_order_relaxed))
		;
	return NULL;
}

/*
 * Beside a busy thread on the same CPU the idle steps turn to blocking
 * within a bounded number of yields (each one gives that thread a time
 * slice), and then make no more yields.
 */
static void test_yield_busy_detected(void **state)
{
	struct spinner sp = { 0 };
	struct dnp_yield y = { 0 };
	pthread_t th;
	uint64_t end;
	int cpu = sched_getcpu();

	(void)state;
	assert_true(cpu >= 0);
	CPU_ZERO(&sp.cpu);
	CPU_SET(cpu, &sp.cpu);
	assert_int_equal(pthread_setaffinity_np(pthread_self(), sizeof(sp.cpu), &sp.cpu), 0);
	assert_int_equal(pthread_create(&th, NULL, spin_busy, &sp), 0);
	/*
	 * Up to 10 s, on a loaded machine too (other tests beside this one: a
	 * third process may take the spinner's place for a while). Measured
	 * alone: blocking within 6-9 yields, 10-12 ms. Every check after the loop uses the time the loop ended, so that a
	 * slow join (the spinner waiting for the CPU) cannot close the window
	 * before it is looked at.
	 */
	end = dnp_yield_now() + 10000000000ull;
	uint64_t t0 = dnp_yield_now();
	while (!dnp_yield_blocking(&y, t0) && t0 < end) {
		dnp_yield_step(&y, t0);
		t0 = dnp_yield_now();
	}
	atomic_store(&sp.stop, true);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(sp.err, 0);
	assert_true(dnp_yield_blocking(&y, t0));
	assert_int_equal(y.busy, 1);
	uint64_t yields = y.yields;
	assert_false(dnp_yield_step(&y, t0));
	assert_int_equal(y.yields, yields);
}

/* One direction of the ping-pong: a value and its event count. */
struct evc_side {
	_Atomic uint32_t seq, waiters;
	_Atomic uint64_t val;
};

struct evc_pp {
	struct evc_side side[2]; /* side[k]: what thread k waits for */
	unsigned rounds;
	int cpu;                         /* both threads on this CPU, or -1: anywhere */
	_Atomic unsigned long wakes[2];  /* notifies that woke the other (made the call) */
	_Atomic unsigned long sleeps[2]; /* waits that slept (seq had not moved) */
};

struct evc_arg {
	struct evc_pp *pp;
	unsigned k;
};

/*
 * The waiter half, as libdnp's wait: a few looks (a random number, so that
 * the other side's notify often lands while we move from looking to
 * sleeping: the window a wrong order would open), then take seq, look, sleep
 * with no time limit.
 */
static void evc_wait(struct evc_pp *pp, unsigned k, uint64_t want, uint32_t *rnd)
{
	struct evc_side *s = &pp->side[k];

	*rnd ^= *rnd << 13;
	*rnd ^= *rnd >> 17;
	*rnd ^= *rnd << 5;
	for (uint32_t j = *rnd % 4096u; j; j--)
		if (atomic_load_explicit(&s->val, memory_order_acquire) >= want)
			return;
	for (;;) {
		uint32_t seen = atomic_load_explicit(&s->seq, memory_order_acquire);

		if (atomic_load_explicit(&s->val, memory_order_acquire) >= want)
			return;
		/* NULL: a lost wake-up hangs here, and the join below times out */
		(void)dnp_evc_sleep(&s->seq, &s->waiters, seen, NULL);
		if (atomic_load_explicit(&s->seq, memory_order_relaxed) == seen)
			continue; /* spurious */
		atomic_fetch_add(&pp->sleeps[k], 1);
	}
}

static void *evc_thread(void *arg)
{
	struct evc_arg *a = arg;
	struct evc_pp *pp = a->pp;
	unsigned k = a->k, o = 1 - k;
	uint32_t rnd = 2463534242u + k;

	if (pp->cpu >= 0) {
		cpu_set_t cs;

		CPU_ZERO(&cs);
		CPU_SET(pp->cpu, &cs);
		(void)pthread_setaffinity_np(pthread_self(), sizeof(cs), &cs);
	}
	for (uint64_t i = 1; i <= pp->rounds; i++) {
		if (k == 1)
			evc_wait(pp, k, i, &rnd);
		atomic_store_explicit(&pp->side[o].val, i, memory_order_release);
		if (dnp_evc_notify(&pp->side[o].seq, &pp->side[o].waiters))
			atomic_fetch_add(&pp->wakes[k], 1);
		if (k == 0)
			evc_wait(pp, k, i, &rnd);
	}
	return NULL;
}

/* rounds of the ping-pong; fails (instead of hanging) if a wake-up was lost */
static void evc_run(struct evc_pp *pp)
{
	struct evc_arg a[2] = { { pp, 0 }, { pp, 1 } };
	pthread_t t[2];
	struct timespec dl;

	for (unsigned k = 0; k < 2; k++)
		assert_int_equal(pthread_create(&t[k], NULL, evc_thread, &a[k]), 0);
	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += 20;
	for (unsigned k = 0; k < 2; k++) {
		int r = pthread_timedjoin_np(t[k], NULL, &dl);

		if (r == ETIMEDOUT)
			fail_msg("ping-pong stuck after %llu/%llu of %u rounds: a lost wake-up",
				 (unsigned long long)atomic_load(&pp->side[0].val),
				 (unsigned long long)atomic_load(&pp->side[1].val), pp->rounds);
		assert_int_equal(r, 0);
	}
}

/*
 * Two threads on two CPUs (true parallelism: every interleaving of the
 * waiter's "waiters++, load seq" with the notifier's "seq++, load waiters"
 * happens), then both on one CPU (the two-host hand-off: each blocks at once
 * and is woken by the other). Waits have no time limit: with the notifier's
 * two steps swapped (the planted fault of docs/performance.md) the first case
 * hangs within a few thousand rounds, and the join's 20 s bound fails it.
 */
static void test_evc_pingpong(void **state)
{
	static struct evc_pp two = { .rounds = 50000, .cpu = -1 };
	static struct evc_pp one = { .rounds = 20000 };
	cpu_set_t mine;

	(void)state;
	evc_run(&two);
	assert_int_equal(atomic_load(&two.side[0].val), two.rounds);
	assert_int_equal(atomic_load(&two.side[1].val), two.rounds);
	if (sched_getaffinity(0, sizeof(mine), &mine) != 0 || CPU_COUNT(&mine) < 1)
		return;
	while (!CPU_ISSET(one.cpu, &mine))
		one.cpu++;
	evc_run(&one);
	/* on one CPU the waiter always finds nothing and sleeps: the blocking path ran */
	assert_true(atomic_load(&one.sleeps[0]) + atomic_load(&one.sleeps[1]) > 0);
	assert_true(atomic_load(&one.wakes[0]) + atomic_load(&one.wakes[1]) > 0);
}

struct evc_sleeper {
	struct evc_side *s;
	uint32_t seen;
	int r;
};

static void *evc_sleeper(void *arg)
{
	struct evc_sleeper *z = arg;
	struct timespec ts = { 20, 0 };

	z->r = dnp_evc_sleep(&z->s->seq, &z->s->waiters, z->seen, &ts);
	return NULL;
}

/*
 * The two orders of a wait against a notify, each forced: (1) the notify
 * lands after the waiter's look but before it sleeps: the sleep must return
 * at once, because seq moved since 'seen' (a waiter that took seq again
 * inside the sleep would sleep through it: 2 s here, for ever in libdnp but
 * for its slices); (2) the waiter sleeps first: the notify must see it and
 * wake it (it returns true), well before the sleeper's 20 s limit.
 */
static void test_evc_orders(void **state)
{
	struct evc_side s = { 0 };
	struct timespec ts = { 2, 0 };
	struct evc_sleeper z = { .s = &s };
	pthread_t t;
	uint32_t seen;

	(void)state;
	/* (1) take seq, look (nothing), then the producer publishes and notifies */
	seen = atomic_load_explicit(&s.seq, memory_order_acquire);
	assert_int_equal(atomic_load(&s.val), 0);
	atomic_store_explicit(&s.val, 1, memory_order_release);
	assert_false(dnp_evc_notify(&s.seq, &s.waiters)); /* nobody asleep: no system call */
	assert_int_not_equal(dnp_evc_sleep(&s.seq, &s.waiters, seen, &ts), -ETIMEDOUT);
	assert_int_equal(atomic_load(&s.waiters), 0);

	/* (2) the waiter is asleep when the producer notifies */
	z.seen = atomic_load_explicit(&s.seq, memory_order_acquire);
	assert_int_equal(pthread_create(&t, NULL, evc_sleeper, &z), 0);
	while (atomic_load(&s.waiters) == 0)
		sched_yield();
	usleep(10000); /* most likely inside FUTEX_WAIT by now; if not, its re-check sees seq */
	atomic_store_explicit(&s.val, 2, memory_order_release);
	assert_true(dnp_evc_notify(&s.seq, &s.waiters));
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(z.r, 0);
	assert_int_equal(atomic_load(&s.waiters), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_yield_fast_threshold),
		cmocka_unit_test(test_yield_shared_cpu_never_alone),
		cmocka_unit_test(test_yield_held_window),
		cmocka_unit_test(test_yield_handoff_ends_alone),
		cmocka_unit_test(test_yield_busy_windows),
		cmocka_unit_test(test_yield_busy_detected),
		cmocka_unit_test(test_evc_orders),
		cmocka_unit_test(test_evc_pingpong),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
