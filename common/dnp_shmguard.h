/* SPDX-License-Identifier: MIT */
/*
 * dnp_shmguard.h — survives shared files that shrink under a mapping.
 *
 * A MAP_SHARED mapping of a file that another process truncates raises
 * SIGBUS at the next access of a page past the new end. dnpd maps files an
 * untrusted process can truncate (a neighbour's or its own doorbell file,
 * the shm link ring files, and, were the seals off, a session's memfds), and
 * the trust rule says nothing an application does to shared memory crashes
 * the daemon. So each such mapping is registered here; the SIGBUS handler,
 * when the faulting address lies in a registered mapping, replaces the whole
 * mapping with anonymous zero pages at the same address (mmap MAP_FIXED |
 * MAP_ANONYMOUS | MAP_PRIVATE) and bumps that mapping's fault counter: the
 * faulting access is retried and reads zeros. The owner of the mapping sees
 * the counter in its slow path and recovers (closes the session, re-maps the
 * bell, takes the link down). A SIGBUS anywhere else restores the default
 * action and is raised again: the process dies as it would have.
 *
 * Why mmap in a handler: mmap is not on POSIX's async-signal-safe list, but
 * on Linux it is a plain system call (the glibc wrapper takes no lock and
 * touches no allocator state), so calling it from the handler is safe there;
 * display servers use the same technique for client-supplied shared buffers.
 * The handler touches nothing else but the fixed table below (atomics, no
 * allocation, no lock), sigaction and raise, and it keeps errno.
 *
 * Table: DNP_SHMGUARD_MAX entries, fixed, process-wide (a full table:
 * -ENOSPC, the mapping unguarded). Registration and removal happen in
 * ordinary code, from any thread, but a mapping must be removed before it
 * is unmapped (the handler must never hit a range being reused). The zero
 * pages that replaced a file mapping are unmapped with munmap and the same
 * length, as the original would have been.
 */
#ifndef DNP_SHMGUARD_H
#define DNP_SHMGUARD_H

#include <stddef.h>
#include <stdint.h>

#define DNP_SHMGUARD_MAX 1024 /* 2 per session of 256 ports, the bells, the links */

/*
 * Installs the SIGBUS handler (SA_SIGINFO). Idempotent. Errors: -errno of
 * sigaction.
 */
int dnp_shmguard_install(void);

/* Restores the SIGBUS action found by install (the table stays). */
void dnp_shmguard_uninstall(void);

/*
 * Guards [addr, addr + len) (addr page-aligned, as mmap returned it), its
 * counter at 0. Registering without the handler installed is harmless.
 * Errors: -EINVAL (NULL addr or len 0), -ENOSPC (table full).
 */
int dnp_shmguard_add(void *addr, size_t len);

/* Stops guarding the mapping registered at addr (no-op when none). */
void dnp_shmguard_del(const void *addr);

/* Faults caught in the guarded mapping that holds addr (0 when none or not guarded). */
uint32_t dnp_shmguard_faults(const void *addr);

/* Faults caught in all guarded mappings since start: compare it in a slow path. */
uint64_t dnp_shmguard_total(void);

#endif /* DNP_SHMGUARD_H */
