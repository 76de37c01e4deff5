/* SPDX-License-Identifier: MIT */
/*
 * dnp_yield.h — a polling loop's "let others run" step that costs nothing
 * when nobody else wants the CPU.
 *
 * The daemon and libdnp poll shared memory. When they find nothing they call
 * sched_yield() so that a process sharing their core (on a two-core machine:
 * another daemon, an application) gets it. But sched_yield() is a system
 * call: about 0.54 us here even when it returns at once because the run queue
 * holds nobody else, against 3.2 us per yield when a second poller shares the
 * CPU (two context switches). A poller alone on its CPU thus spends most of an
 * idle pass in the kernel, and work that arrives meanwhile waits for it.
 *
 * dnp_yield_step() times each sched_yield(). One that came back faster than
 * DNP_YIELD_ALONE_NS most likely ran nobody else, but not surely: the
 * scheduler may keep the yielder on the CPU when the other task is not yet
 * eligible to run. So the caller believes it is alone only after
 * DNP_YIELD_STREAK fast yields in a row during which its count of
 * involuntary context switches (getrusage) did not move: nobody took the CPU
 * from it. Then it polls without yielding for DNP_YIELD_SPIN_NS, and at the
 * end of that window yields once more and checks the count again, so a task
 * that turned up on the CPU meanwhile (and preempted us, or waited for the
 * window's end) ends the spinning. One slow yield or one switch ends it too.
 *
 * Measured side by side (bench/side-by-side.sh, docs/performance.md): the
 * loopback PUT 1.18 -> 0.68 us; four pollers on two cores unchanged.
 *
 * A yield that ran somebody else (it took fast_ns or more) stamps 'back',
 * the moment we got the CPU again. dnp_yield_held() tells a poller that it
 * came back less than a given time ago: the one who handed us the CPU most
 * likely did so because it just gave us work (it sent a frame, or posted a
 * command, that our side answers), so we look for it a little before
 * handing the CPU straight back. Without that, two pollers on one CPU trade
 * it at every empty look and work that lands on the other side of the trade
 * waits a whole context switch (docs/performance.md, "Holding the CPU after a yield").
 *
 * Header-only, no state but the caller's struct; one per polling thread.
 */
#ifndef DNP_YIELD_H
#define DNP_YIELD_H

#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "dnp_futex.h"

/*
 * A yield shorter than this ran nobody else (alone: ~0.54 us; shared: ~3.2 us
 * on the machine it was measured on), or three null system calls of this
 * machine if that is more: on a machine where any system call costs 1 us a
 * lone yield takes 1.5-1.6 us and a shared one 11 us, and a fixed 1.5 us
 * made the daemon believe itself alone only now and then (the loopback PUT
 * then flipped between 0.85 and 2.6 us). The switch count stays the exact test.
 */
#define DNP_YIELD_ALONE_NS 1500u
/* Alone: poll without yielding this long, then measure again. */
#define DNP_YIELD_SPIN_NS 20000u
/* Fast yields in a row before the caller believes it is alone. */
#define DNP_YIELD_STREAK 16u
/*
 * Pinned hand-off (docs/performance.md, "Pinned hand-off"): a poller that
 * expects work from the other CPU polls this long without yielding, after
 * its last work or after the hand-off yield that gave its CPU to the other
 * node's process. 2 us was too short for udp (a frame takes longer), 20 us
 * cost an 8-byte stream 60% of its message rate.
 */
#define DNP_YIELD_PIN_NS 5000u
/*
 * Beside busy processes (docs/performance.md, "Hand-off beside busy
 * processes"): a yield that took DNP_YIELD_BUSY_NS or more gave a whole time
 * slice to a process outside the run (a yield that runs a peer of the run,
 * daemon or program, takes 3-11 us here; a busy loop's slice 0.7-4 ms).
 * DNP_YIELD_BUSY_RUN of them within DNP_YIELD_BUSY_WINDOW_NS (a busy
 * process that keeps coming back, not one passing by) and the poller blocks (futex)
 * instead of yielding for a window: a task woken from a futex has slept, so
 * the scheduler runs it before the busy one, while a yielder waits behind
 * it. When the window ends the poller yields again; one slow yield within
 * DNP_YIELD_PROBE_NS of the window's end starts the next window, twice as
 * long (DNP_YIELD_BLOCK_NS up to DNP_YIELD_BLOCK_MAX_NS): the slice lost to
 * notice that the busy process is still there is paid once per window.
 */
#define DNP_YIELD_BUSY_NS 400000u
#define DNP_YIELD_BUSY_RUN 3u
/*
 * The run's span. Shorter yields between slow ones do not end it: beside one
 * busy thread on its CPU a yielder here (Linux 6.1, CFS) gets a slice of the
 * CPU back, then yields twice at once, in under 1.5 us, because the scheduler
 * picks it again, and only its third yield runs the busy thread. Three slow
 * yields in a row then hardly ever came (test_yield's spinner went unseen
 * for 10 s in 3 runs of 12); three within 20 ms come after 10-12 ms.
 */
#define DNP_YIELD_BUSY_WINDOW_NS 20000000u
#define DNP_YIELD_BLOCK_NS 50000000u
#define DNP_YIELD_BLOCK_MAX_NS 800000000u
#define DNP_YIELD_PROBE_NS 20000000u

struct dnp_yield {
	uint64_t spin_until;  /* CLOCK_MONOTONIC ns; before it: alone, do not yield */
	uint64_t yields;      /* sched_yield() calls made */
	uint64_t alone;       /* of them, found nobody else to run */
	unsigned streak;      /* fast yields in a row */
	long csw;             /* involuntary context switches when the streak began */
	uint64_t fast_ns;     /* a yield under this is fast (0: not measured yet) */
	uint64_t back;        /* when the last yield that ran somebody else returned (0: none) */
	uint64_t block_until; /* CLOCK_MONOTONIC ns; before it: contended, block, do not yield */
	uint64_t block_ns;    /* length of the last blocking window */
	unsigned slow;        /* slow yields (DNP_YIELD_BUSY_NS) since slow_first */
	uint64_t slow_first;  /* when the first of them returned */
	uint64_t busy;        /* blocking windows started */
	bool no_block;        /* the caller cannot block (dnpd --idle busy): never a window */
};

/* Involuntary context switches of the calling thread so far (-1: unknown). */
static inline long dnp_yield_csw(void)
{
	struct rusage ru;

	return getrusage(RUSAGE_THREAD, &ru) == 0 ? ru.ru_nivcsw : -1;
}

static inline uint64_t dnp_yield_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* DNP_YIELD_ALONE_NS, or three of this machine's null system calls (the fastest of 8). */
static inline uint64_t dnp_yield_fast_ns(void)
{
	uint64_t best = UINT64_MAX;

	for (unsigned i = 0; i < 8; i++) {
		uint64_t t0 = dnp_yield_now();

		(void)syscall(SYS_getppid);
		uint64_t t = dnp_yield_now() - t0;
		if (t < best)
			best = t;
	}
	return best * 3 > DNP_YIELD_ALONE_NS ? best * 3 : DNP_YIELD_ALONE_NS;
}

/* True while the last measured yield found the CPU to ourselves. */
static inline bool dnp_yield_alone(const struct dnp_yield *y, uint64_t now)
{
	return now < y->spin_until;
}

/*
 * True inside a blocking window: recent yields gave time slices to a process
 * outside the run (DNP_YIELD_BUSY_NS); the caller blocks instead of yielding.
 */
static inline bool dnp_yield_blocking(const struct dnp_yield *y, uint64_t now)
{
	return now < y->block_until;
}

/* A yield that gave away a time slice returned at 't': maybe start a blocking window. */
static inline void dnp_yield_slow(struct dnp_yield *y, uint64_t t)
{
	bool probe = y->block_until && t - y->block_until < DNP_YIELD_PROBE_NS;

	if (y->no_block)
		return;
	if (!probe && (y->slow == 0 || t - y->slow_first > DNP_YIELD_BUSY_WINDOW_NS)) {
		y->slow = 0;
		y->slow_first = t;
	}
	if (!probe && ++y->slow < DNP_YIELD_BUSY_RUN)
		return;
	y->block_ns = !probe                                   ? DNP_YIELD_BLOCK_NS :
		      y->block_ns * 2 > DNP_YIELD_BLOCK_MAX_NS ? DNP_YIELD_BLOCK_MAX_NS :
								 y->block_ns * 2;
	y->block_until = t + y->block_ns;
	y->slow = 0;
	y->busy++;
}

/*
 * One idle step at time 'now' (CLOCK_MONOTONIC ns): nothing while alone or
 * blocking (dnp_yield_blocking), else one timed sched_yield(). Returns true
 * if it yielded.
 */
static inline bool dnp_yield_step(struct dnp_yield *y, uint64_t now)
{
	uint64_t t0, t;

	if (dnp_yield_alone(y, now) || dnp_yield_blocking(y, now))
		return false;
	if (!y->fast_ns)
		y->fast_ns = dnp_yield_fast_ns();
	t0 = dnp_yield_now();
	sched_yield();
	t = dnp_yield_now();
	y->yields++;
	if (t - t0 >= DNP_YIELD_BUSY_NS)
		dnp_yield_slow(y, t);
	if (t - t0 >= y->fast_ns) {
		y->streak = 0;
		y->back = t;
		return true;
	}
	y->alone++;
	if (y->streak == 0)
		y->csw = dnp_yield_csw();
	if (++y->streak < DNP_YIELD_STREAK)
		return true;
	/*
	 * A run of fast yields, and (the exact test, one system call per
	 * window) nobody took the CPU from us since the run began: neither a
	 * yield nor a preemption while we polled without yielding.
	 */
	long csw = dnp_yield_csw();
	if (csw < 0 || csw != y->csw) {
		y->streak = 0;
		return true;
	}
	y->streak = DNP_YIELD_STREAK; /* a slow yield or a switch ends it */
	y->spin_until = t + DNP_YIELD_SPIN_NS;
	return true;
}

/*
 * True if a yield of ours ran somebody else and we got the CPU back less than
 * 'ns' before 'now' (see 'back' above). Costs no system call.
 */
static inline bool dnp_yield_held(const struct dnp_yield *y, uint64_t now, uint64_t ns)
{
	return y->back && now - y->back < ns;
}

/*
 * Forget the measurement (before a sleep: the CPU's load may differ after).
 * A blocking window stays: a sleep is what it asks for.
 */
static inline void dnp_yield_reset(struct dnp_yield *y)
{
	y->spin_until = 0;
	y->streak = 0;
	y->back = 0;
}

/*
 * A hand-off: give the CPU now, to a process we just woke on it. Ends the
 * "alone" window first (somebody is runnable here now, whatever the last
 * measurement said), so the yield is made, and so are the next idle steps'
 * until a new streak of fast yields shows the CPU free again. No yield
 * while blocking: the process we woke was woken by a futex and runs first.
 */
static inline void dnp_yield_handoff(struct dnp_yield *y, uint64_t now)
{
	y->spin_until = 0;
	y->streak = 0;
	(void)dnp_yield_step(y, now);
}

/*
 * The event count of a bell (dnp_session.h: ev_seq and ev_waiters), both
 * halves, shared by dnpd (the notifier) and libdnp (the waiter) so that the
 * order of their steps is written once (docs/performance.md, "Hand-off and
 * context switches", the race argument):
 *   waiter:   seen = seq (acquire); look for work; if none:
 *             dnp_evc_sleep(seq, waiters, seen, timeout);
 *   notifier: publish the work (release); dnp_evc_notify(seq, waiters).
 * The waiter increments 'waiters' and then loads 'seq' (both seq_cst); the
 * notifier increments 'seq' and then loads 'waiters' (both seq_cst). In the
 * single total order of these four operations one of the two loads comes
 * last and sees the other side's write: either the waiter sees seq moved and
 * does not sleep, or the notifier sees a waiter and wakes it (and a bump
 * between the waiter's load and its FUTEX_WAIT makes the kernel's own
 * compare fail: no sleep). The work was published before the bump, so a
 * waiter that sees seq moved and looks again finds it.
 * dnp_evc_notify returns true when it woke somebody (made the system call).
 */
static inline bool dnp_evc_notify(_Atomic uint32_t *seq, _Atomic uint32_t *waiters)
{
	atomic_fetch_add_explicit(seq, 1, memory_order_seq_cst);
	if (atomic_load_explicit(waiters, memory_order_seq_cst) == 0)
		return false;
	dnp_futex_wake(seq);
	return true;
}

/* Waiter half (above): 0 (woken, or seq already moved), -ETIMEDOUT, -EINTR. */
static inline int dnp_evc_sleep(_Atomic uint32_t *seq, _Atomic uint32_t *waiters, uint32_t seen,
				const struct timespec *timeout)
{
	int r = 0;

	atomic_fetch_add_explicit(waiters, 1, memory_order_seq_cst);
	if (atomic_load_explicit(seq, memory_order_seq_cst) == seen)
		r = dnp_futex_wait(seq, seen, timeout);
	atomic_fetch_sub_explicit(waiters, 1, memory_order_relaxed);
	return r;
}

#endif
