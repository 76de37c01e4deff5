/* SPDX-License-Identifier: MIT */
/*
 * doorbell — lets an idle dnpd sleep and be woken by whoever gives it work:
 * a neighbour daemon that pushed frames into a shm link, or an application
 * that posted a command.
 *
 * Design (one futex word per daemon): every daemon owns ONE doorbell, kept in
 * a small shared file, by convention "<run dir>/node-<id>.bell" (any tmpfs,
 * e.g. /dev/shm). Producers map that file (dnp_doorbell_map) and ring it after
 * publishing work; the daemon sleeps on it when all its sources are empty.
 * A zero-filled doorbell is a valid one (seq 0, nobody sleeping), so the file
 * may be created by whichever process comes first: no initialisation race.
 *
 * Protocol (arm, look again, sleep):
 *   daemon:   poll every source (links, command rings, timers);
 *             if nothing: seen = dnp_doorbell_arm(db);
 *                         poll every source once more;
 *                         if something: dnp_doorbell_disarm(db), handle it;
 *                         else dnp_doorbell_sleep(db, seen, timeout_ns);
 *   producer: publish the work (ring tail store with release), then
 *             dnp_doorbell_ring(db).
 * ring() is a seq_cst fence and a load of 'sleeping' while the owner is
 * awake: a busy daemon's doorbell line is never written, so a command costs
 * its producer no atomic read-modify-write on a line the daemon reads on
 * every pass. Only when the owner is armed does ring() bump seq and make the
 * futex system call (~11 us here). arm() (seq_cst increment of sleeping, then
 * a seq_cst fence) and ring() (seq_cst fence, then the load of sleeping) are
 * a Dekker pair: either the ringer sees the owner armed and bumps seq and
 * wakes it, or the owner's second look sees the work. A ring between arm()
 * and sleep() moves seq, and sleep() then returns at once (the kernel
 * re-checks seq == seen when it queues the waiter). The futex is on a shared
 * mapping, so FUTEX_WAIT/WAKE without FUTEX_PRIVATE_FLAG.
 *
 * Memory: the doorbell lives in caller-provided shared memory (64 bytes,
 * 64-byte aligned) or in a file mapped by dnp_doorbell_map (owned by the
 * mapper, released by dnp_doorbell_unmap). Threads: ring() from any thread
 * of any process (and from a signal handler); arm(), disarm() and sleep()
 * from the owner only (several owners work but are all woken together).
 */
#ifndef DNP_DOORBELL_H
#define DNP_DOORBELL_H

#include <assert.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#define DNP_DOORBELL_MAGIC 0x444e5042u /* "DNPB" */

struct dnp_doorbell {
	alignas(64) _Atomic uint32_t seq; /* futex word: bumped by every ring */
	_Atomic uint32_t sleeping;        /* number of waiters inside wait() */
	_Atomic uint32_t magic;           /* 0 or DNP_DOORBELL_MAGIC (set by map) */
	uint32_t reserved[13];
};
static_assert(sizeof(struct dnp_doorbell) == 64, "doorbell is one cache line");

/* Makes mem (64 bytes, 64-byte aligned) an idle doorbell. */
void dnp_doorbell_init(struct dnp_doorbell *db);

/* Current sequence (acquire). */
uint32_t dnp_doorbell_seq(const struct dnp_doorbell *db);

/*
 * Announces work published before the call; wakes the owner if it is armed
 * or asleep. Returns true when it had to bump seq (the owner was armed).
 */
bool dnp_doorbell_ring(struct dnp_doorbell *db);

/*
 * The owner is about to sleep: marks it armed and returns seq. The caller
 * must look at every source once more after this, then either disarm (work
 * found) or sleep with the returned value.
 */
uint32_t dnp_doorbell_arm(struct dnp_doorbell *db);

/* Undoes arm() without sleeping. */
void dnp_doorbell_disarm(struct dnp_doorbell *db);

/*
 * Armed owner only: sleeps until seq differs from seen (a ring since arm()),
 * or timeout_ns elapses (0 = do not sleep), then disarms. Returns 0 when seq
 * moved (or a spurious wake-up), -ETIMEDOUT, -EINTR on a signal.
 */
int dnp_doorbell_sleep(struct dnp_doorbell *db, uint32_t seen, uint64_t timeout_ns);

/*
 * Maps the doorbell file at path, creating it (mode 0600) when missing;
 * either the owner or a ringer may come first. Errors: -EINVAL (NULL path),
 * -errno of open/fstat/ftruncate/mmap.
 */
int dnp_doorbell_map(const char *path, struct dnp_doorbell **out);
void dnp_doorbell_unmap(struct dnp_doorbell *db);

/*
 * The file may be truncated by anyone who can open it: dnp_doorbell_map
 * registers the mapping with the SIGBUS guard (dnp_shmguard.h), so a
 * process that installed it reads zeros there instead of dying, and sees
 * dnp_shmguard_faults(db) move. dnp_doorbell_remap then grows the file at
 * path back and maps it again at the same address db (the words are zero:
 * an idle doorbell; the owner publishes again what it keeps there). Errors:
 * -EINVAL, -errno of open/fstat/ftruncate/mmap (db then stays zero pages).
 */
int dnp_doorbell_remap(const char *path, struct dnp_doorbell *db);

#endif
