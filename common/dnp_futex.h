/* SPDX-License-Identifier: MIT */
/*
 * dnp_futex — the two futex calls every SoftDNP sleeper and waker uses, on
 * 32-bit words in shared memory (MAP_SHARED files and memfds): the daemon's
 * doorbell (transport/doorbell.h), the session bells (api/abi/dnp_session.h)
 * and libdnp's event bell. Shared futexes: no FUTEX_PRIVATE_FLAG, because
 * the words are mapped by several processes.
 *
 * The event-count protocol around them (take the counter, look for work,
 * announce the sleep, re-check, wait) is the caller's: these only wrap the
 * system call. Header-only, so that libdnp, the transports and the daemon
 * share it without a library between them; the engine (dnp-core/) cannot
 * include it, since it makes system calls.
 */
#ifndef DNP_FUTEX_H
#define DNP_FUTEX_H

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* Wakes every thread sleeping on w. */
static inline void dnp_futex_wake(_Atomic uint32_t *w)
{
	syscall(SYS_futex, (uint32_t *)w, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

/*
 * Sleeps while *w == val, at most *timeout (relative; NULL: no limit). The
 * kernel compares and queues atomically, so a change of *w before the call
 * is never missed. Returns 0 (woken, or *w != val already: -EAGAIN is folded
 * into 0, the caller re-checks anyway), -ETIMEDOUT or -EINTR.
 */
static inline int dnp_futex_wait(_Atomic uint32_t *w, uint32_t val, const struct timespec *timeout)
{
	if (syscall(SYS_futex, (uint32_t *)w, FUTEX_WAIT, val, timeout, NULL, 0) == 0)
		return 0;
	return errno == ETIMEDOUT || errno == EINTR ? -errno : 0;
}

#endif
