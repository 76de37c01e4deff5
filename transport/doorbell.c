/* SPDX-License-Identifier: MIT */
/* doorbell — futex event count in shared memory; see doorbell.h. */
#include "doorbell.h"

#include "dnp_futex.h"
#include "dnp_shmguard.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define DNP_DOORBELL_FILE_SIZE 4096

void dnp_doorbell_init(struct dnp_doorbell *db)
{
	atomic_store_explicit(&db->seq, 0, memory_order_relaxed);
	atomic_store_explicit(&db->sleeping, 0, memory_order_relaxed);
	/* release: a process that sees the magic sees the zeroed words */
	atomic_store_explicit(&db->magic, DNP_DOORBELL_MAGIC, memory_order_release);
}

uint32_t dnp_doorbell_seq(const struct dnp_doorbell *db)
{
	/* acquire: pairs with the ringer's seq increment, after which its work is visible */
	return atomic_load_explicit((_Atomic uint32_t *)&db->seq, memory_order_acquire);
}

bool dnp_doorbell_ring(struct dnp_doorbell *db)
{
	/*
	 * The seq_cst fence orders the work published before it (the ring tail
	 * store) before the load of sleeping: the pair of arm()'s increment
	 * and fence (doorbell.h). The common case ends here, having written
	 * nothing the owner reads.
	 */
	atomic_thread_fence(memory_order_seq_cst);
	if (atomic_load_explicit(&db->sleeping, memory_order_relaxed) == 0)
		return false;
	/* release: the work is visible to whoever sees the new seq */
	atomic_fetch_add_explicit(&db->seq, 1, memory_order_release);
	dnp_futex_wake(&db->seq);
	return true;
}

uint32_t dnp_doorbell_arm(struct dnp_doorbell *db)
{
	atomic_fetch_add_explicit(&db->sleeping, 1, memory_order_seq_cst);
	/* The Dekker pair with ring(): our second look comes after this fence. */
	atomic_thread_fence(memory_order_seq_cst);
	return dnp_doorbell_seq(db);
}

void dnp_doorbell_disarm(struct dnp_doorbell *db)
{
	atomic_fetch_sub_explicit(&db->sleeping, 1, memory_order_relaxed);
}

int dnp_doorbell_sleep(struct dnp_doorbell *db, uint32_t seen, uint64_t timeout_ns)
{
	struct timespec ts, *tsp = NULL;
	int ret = 0;

	if (dnp_doorbell_seq(db) != seen) {
		ret = 0;
	} else if (timeout_ns == 0) {
		ret = -ETIMEDOUT;
	} else {
		if (timeout_ns != UINT64_MAX) {
			ts.tv_sec = (time_t)(timeout_ns / 1000000000u);
			ts.tv_nsec = (long)(timeout_ns % 1000000000u);
			tsp = &ts;
		}
		/* The kernel re-checks seq == seen atomically with queueing us (EAGAIN otherwise). */
		ret = dnp_futex_wait(&db->seq, seen, tsp);
	}
	dnp_doorbell_disarm(db);
	/* acquire: whoever rang published its work before bumping seq */
	atomic_thread_fence(memory_order_acquire);
	return ret;
}

int dnp_doorbell_map(const char *path, struct dnp_doorbell **out)
{
	uint32_t zero = 0;
	struct stat st;
	void *mem;
	int fd, ret;

	if (!path || !out)
		return -EINVAL;
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0)
		goto err_errno;
	/* Only grow: a concurrent opener may already have sized (and used) it. */
	if (st.st_size < DNP_DOORBELL_FILE_SIZE && ftruncate(fd, DNP_DOORBELL_FILE_SIZE) < 0)
		goto err_errno;
	mem = mmap(NULL, DNP_DOORBELL_FILE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (mem == MAP_FAILED)
		goto err_errno;
	close(fd);
	/* Anyone with the path may truncate the file: its SIGBUS must not kill us. */
	(void)dnp_shmguard_add(mem, DNP_DOORBELL_FILE_SIZE);
	*out = mem;
	/* Zero-filled is already idle; the magic only marks the file as a doorbell. */
	atomic_compare_exchange_strong_explicit(&(*out)->magic, &zero, DNP_DOORBELL_MAGIC,
						memory_order_release, memory_order_relaxed);
	return 0;

err_errno:
	ret = -errno;
	close(fd);
	return ret;
}

int dnp_doorbell_remap(const char *path, struct dnp_doorbell *db)
{
	uint32_t zero = 0;
	struct stat st;
	void *mem;
	int fd, ret = 0;

	if (!path || !db)
		return -EINVAL;
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 ||
	    (st.st_size < DNP_DOORBELL_FILE_SIZE && ftruncate(fd, DNP_DOORBELL_FILE_SIZE) < 0)) {
		ret = -errno;
		goto out;
	}
	/* Over the zero pages the guard left (or the old mapping): same address, the file again. */
	dnp_shmguard_del(db);
	mem = mmap(db, DNP_DOORBELL_FILE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd,
		   0);
	if (mem == MAP_FAILED) {
		ret = -errno;
		goto out;
	}
	(void)dnp_shmguard_add(db, DNP_DOORBELL_FILE_SIZE);
	atomic_compare_exchange_strong_explicit(&db->magic, &zero, DNP_DOORBELL_MAGIC,
						memory_order_release, memory_order_relaxed);
out:
	close(fd);
	return ret;
}

void dnp_doorbell_unmap(struct dnp_doorbell *db)
{
	if (db) {
		dnp_shmguard_del(db);
		munmap(db, DNP_DOORBELL_FILE_SIZE);
	}
}
