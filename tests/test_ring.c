/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for dnp-core/ring: sizing, fill/empty, 32-bit index wrap,
 * bursts, attach validation, a two-thread stress and a two-process test over
 * a memfd.
 */
#include <endian.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "ring.h"

/*
 * A 16-byte test item: a check word derived from the sequence number, then
 * the number. The check word's first byte is 0: its bit 7 is the ring's.
 */
struct item {
	uint64_t check;
	uint64_t seq;
};

static struct item mkitem(uint64_t seq)
{
	struct item it = { htole64((~seq * 0x9e3779b97f4a7c15ull) << 8), seq };

	return it;
}

static bool item_ok(const struct item *it, uint64_t seq)
{
	struct item want = mkitem(seq);

	return it->seq == want.seq && it->check == want.check;
}

/* A 64-byte aligned heap ring of 'slots' x 16-byte items; *h is its handle. */
static struct dnp_ring *mkring(uint32_t slots, void **mem, struct dnp_ring *h)
{
	size_t sz = dnp_ring_memsize(slots, sizeof(struct item));

	assert_true(sz > 0);
	assert_int_equal(posix_memalign(mem, 64, sz), 0);
	memset(*mem, 0xee, sz);
	assert_int_equal(dnp_ring_init(*mem, slots, sizeof(struct item), h), 0);
	assert_ptr_equal(h->shm, *mem);
	return h;
}

static void test_ring_memsize_and_init_errors(void **state)
{
	void *mem = NULL;
	struct dnp_ring rr = { 0 }, *r = &rr;

	assert_int_equal(dnp_ring_memsize(0, 16), 0);
	assert_int_equal(dnp_ring_memsize(1, 16), 0);
	assert_int_equal(dnp_ring_memsize(3, 16), 0);
	assert_int_equal(dnp_ring_memsize(6, 16), 0);
	assert_int_equal(dnp_ring_memsize(8, 0), 0);
	assert_int_equal(dnp_ring_memsize(8, 12), 0);
	assert_int_equal(dnp_ring_memsize(8, 4), 0);
	assert_int_equal(dnp_ring_memsize(2, 8), 192 + 16);
	assert_int_equal(dnp_ring_memsize(8, 16), 192 + 128);
	assert_int_equal(dnp_ring_memsize(1u << 31, 64), 192 + ((size_t)64 << 31));

	assert_int_equal(posix_memalign(&mem, 64, 4096), 0);
	assert_int_equal(dnp_ring_init(mem, 3, 16, r), -EINVAL);
	assert_int_equal(dnp_ring_init(mem, 8, 20, r), -EINVAL);
	assert_int_equal(dnp_ring_init((uint8_t *)mem + 8, 8, 16, r), -EINVAL);
	assert_int_equal(dnp_ring_init(NULL, 8, 16, r), -EINVAL);
	assert_int_equal(dnp_ring_init(mem, 8, 16, NULL), -EINVAL);
	assert_null(r->shm);
	assert_int_equal(dnp_ring_init(mem, 8, 16, r), 0);
	assert_int_equal(r->shm->magic, DNP_RING_MAGIC);
	assert_int_equal(r->shm->slots, 8);
	assert_int_equal(r->shm->mask, 7);
	assert_int_equal(r->slots, 8);
	assert_int_equal(r->mask, 7);
	assert_int_equal(r->slot_size, 16);
	assert_int_equal(dnp_ring_count(r), 0);
	assert_int_equal(dnp_ring_free(r), 8);
	assert_int_equal((uintptr_t)r->data % 64, 0);
	free(mem);
}

static void test_ring_fill_empty_eagain(void **state)
{
	void *mem = NULL;
	struct dnp_ring rr, *r = mkring(8, &mem, &rr);
	struct item it, out[8];

	assert_int_equal(dnp_ring_pop_burst(r, out, 8), 0);
	for (uint64_t i = 0; i < 8; i++) {
		it = mkitem(i);
		assert_int_equal(dnp_ring_push(r, &it), 0);
		assert_int_equal(dnp_ring_count(r), i + 1);
		assert_int_equal(dnp_ring_free(r), 7 - i);
	}
	it = mkitem(99);
	assert_int_equal(dnp_ring_push(r, &it), -EAGAIN);
	assert_int_equal(dnp_ring_push_burst(r, &it, 1), 0);
	assert_int_equal(dnp_ring_count(r), 8);

	assert_int_equal(dnp_ring_pop_burst(r, out, 3), 3);
	for (uint64_t i = 0; i < 3; i++)
		assert_true(item_ok(&out[i], i));
	assert_int_equal(dnp_ring_free(r), 3);
	/* Room again after a pop. */
	it = mkitem(8);
	assert_int_equal(dnp_ring_push(r, &it), 0);
	assert_int_equal(dnp_ring_pop_burst(r, out, 8), 6);
	for (uint64_t i = 0; i < 6; i++)
		assert_true(item_ok(&out[i], 3 + i));
	assert_int_equal(dnp_ring_pop_burst(r, out, 8), 0);
	assert_int_equal(dnp_ring_count(r), 0);
	assert_int_equal(dnp_ring_pop_burst(r, out, 0), 0);
	free(mem);
}

/* Free-running indices across 2^32: start a few items below UINT32_MAX. */
static void test_ring_index_wraparound(void **state)
{
	void *mem = NULL;
	struct dnp_ring rr, *r = mkring(8, &mem, &rr);
	struct item in[8], out[8];
	uint64_t next_in = 0, next_out = 0;

	/*
	 * The indices are taken from shared memory at attach only. The start
	 * is on an even lap (index / 8), whose full bit is 1: the blank slots
	 * read as empty, as they would after the producer's own earlier laps.
	 */
	atomic_store(&r->shm->head, UINT32_MAX - 11);
	atomic_store(&r->shm->tail, UINT32_MAX - 11);
	assert_int_equal(dnp_ring_attach(mem, dnp_ring_memsize(8, sizeof(struct item)),
					 sizeof(struct item), r),
			 0);
	assert_int_equal(dnp_ring_count(r), 0);
	for (unsigned i = 0; i < 8; i++)
		in[i] = mkitem(next_in++);
	assert_int_equal(dnp_ring_push_burst(r, in, 8), 8);
	assert_int_equal(atomic_load(&r->shm->tail), UINT32_MAX - 3);
	assert_int_equal(dnp_ring_count(r), 8);
	assert_int_equal(dnp_ring_free(r), 0);
	{
		struct item x = mkitem(77);

		assert_int_equal(dnp_ring_push(r, &x), -EAGAIN);
	}
	/* Pop 3 at a time across the wrap, refilling as we go. */
	for (unsigned round = 0; round < 20; round++) {
		unsigned n = dnp_ring_pop_burst(r, out, 3);

		assert_int_equal(n, 3);
		for (unsigned i = 0; i < n; i++)
			assert_true(item_ok(&out[i], next_out++));
		for (unsigned i = 0; i < 3; i++)
			in[i] = mkitem(next_in++);
		assert_int_equal(dnp_ring_push_burst(r, in, 3), 3);
		assert_int_equal(dnp_ring_count(r), 8);
	}
	assert_int_equal(dnp_ring_pop_burst(r, out, 8), 8);
	for (unsigned i = 0; i < 8; i++)
		assert_true(item_ok(&out[i], next_out++));
	assert_int_equal(next_out, next_in);
	assert_int_equal(atomic_load(&r->shm->head), atomic_load(&r->shm->tail));
	assert_int_equal(atomic_load(&r->shm->tail), (uint32_t)(UINT32_MAX - 11 + next_in));
	assert_true(atomic_load(&r->shm->tail) < 100); /* wrapped */
	free(mem);
}

static void test_ring_burst_partial(void **state)
{
	void *mem = NULL;
	struct dnp_ring rr, *r = mkring(8, &mem, &rr);
	struct item in[20], out[20];

	for (unsigned i = 0; i < 20; i++)
		in[i] = mkitem(i);
	assert_int_equal(dnp_ring_push_burst(r, in, 10), 8);
	assert_int_equal(dnp_ring_push_burst(r, in, 10), 0);
	assert_int_equal(dnp_ring_pop_burst(r, out, 2), 2);
	assert_true(item_ok(&out[0], 0));
	assert_true(item_ok(&out[1], 1));
	/* Only two slots free: the rest of the burst is refused. */
	assert_int_equal(dnp_ring_push_burst(r, &in[8], 12), 2);
	assert_int_equal(dnp_ring_pop_burst(r, out, 20), 8);
	for (unsigned i = 0; i < 8; i++)
		assert_true(item_ok(&out[i], 2 + i));
	/* A burst that straddles the physical end of the slot array (tail at 10 % 8). */
	assert_int_equal(dnp_ring_push_burst(r, in, 7), 7);
	assert_int_equal(dnp_ring_pop_burst(r, out, 5), 5);
	assert_int_equal(dnp_ring_pop_burst(r, out + 5, 5), 2);
	for (unsigned i = 0; i < 7; i++)
		assert_true(item_ok(&out[i], i));
	free(mem);
}

static void test_ring_attach_validation(void **state)
{
	void *mem = NULL;
	struct dnp_ring rr, *r = mkring(8, &mem, &rr), aa = { 0 }, *a = &aa;
	struct dnp_ring_shm *h = r->shm;
	size_t sz = dnp_ring_memsize(8, sizeof(struct item));
	struct item it = mkitem(5), out;

	assert_int_equal(dnp_ring_push(r, &it), 0);
	assert_int_equal(dnp_ring_attach(mem, sz, sizeof(struct item), a), 0);
	assert_ptr_equal(a->shm, h);
	assert_int_equal(dnp_ring_pop_burst(a, &out, 1), 1);
	assert_true(item_ok(&out, 5));

	memset(a, 0, sizeof(*a));
	/* Caller-side mismatches: -EINVAL. */
	assert_int_equal(dnp_ring_attach(mem, sz - 1, sizeof(struct item), a), -EINVAL);
	assert_int_equal(dnp_ring_attach(mem, 100, sizeof(struct item), a), -EINVAL);
	assert_int_equal(dnp_ring_attach(mem, sz, 32, a), -EINVAL);
	assert_int_equal(dnp_ring_attach(NULL, sz, sizeof(struct item), a), -EINVAL);
	/* Not a ring, or a corrupt header: -EPROTO. */
	h->magic = 0x12345678;
	assert_int_equal(dnp_ring_attach(mem, sz, sizeof(struct item), a), -EPROTO);
	h->magic = DNP_RING_MAGIC;
	h->slots = 6;
	assert_int_equal(dnp_ring_attach(mem, sz, sizeof(struct item), a), -EPROTO);
	h->slots = 8;
	h->mask = 15;
	assert_int_equal(dnp_ring_attach(mem, sz, sizeof(struct item), a), -EPROTO);
	h->mask = 7;
	h->slot_size = 12;
	assert_int_equal(dnp_ring_attach(mem, sz, 12, a), -EPROTO);
	h->slot_size = sizeof(struct item);
	atomic_store(&h->tail, atomic_load(&h->head) + 9); /* more queued than slots */
	assert_int_equal(dnp_ring_attach(mem, sz, sizeof(struct item), a), -EPROTO);
	atomic_store(&h->tail, atomic_load(&h->head));
	assert_null(a->shm);
	/* A ring of 16 slots does not fit in the memory of 8. */
	h->slots = 16;
	h->mask = 15;
	assert_int_equal(dnp_ring_attach(mem, sz, sizeof(struct item), a), -EINVAL);
	h->slots = 8;
	h->mask = 7;
	assert_int_equal(dnp_ring_attach(mem, sz, sizeof(struct item), a), 0);
	free(mem);
}

/*
 * The consumer goes by the full bit of the slot at its head, never by the
 * producer's tail: a scribbled tail changes nothing, a slot is read only once
 * its producer has set the bit, and bit 7 of the first byte is the ring's
 * (the producer's value there is lost, the consumer gets 0).
 */
static void test_ring_full_bit(void **state)
{
	void *mem = NULL;
	struct dnp_ring rr, *r = mkring(8, &mem, &rr);
	struct item it = mkitem(1), out[8];
	uint8_t *slot0 = r->shm->data;

	(void)state;
	atomic_store(&r->shm->tail, 5); /* says five items; none was pushed */
	assert_int_equal(dnp_ring_pop_burst(r, out, 8), 0);
	/* the producer's bit 7 is not the item's: the consumer sees it clear */
	((uint8_t *)&it)[0] |= DNP_RING_FULL_BIT;
	assert_int_equal(dnp_ring_push(r, &it), 0);
	assert_int_equal(slot0[0] & DNP_RING_FULL_BIT, DNP_RING_FULL_BIT); /* lap 0 */
	atomic_store(&r->shm->tail, 0); /* says empty; the slot says full */
	assert_int_equal(dnp_ring_pop_burst(r, out, 8), 1);
	assert_true(item_ok(&out[0], 1));
	/* a whole lap later the same slot is full when its bit is 0 */
	for (uint64_t i = 0; i < 8; i++) {
		it = mkitem(10 + i);
		assert_int_equal(dnp_ring_push(r, &it), 0);
	}
	assert_int_equal(dnp_ring_pop_burst(r, out, 8), 8);
	for (unsigned i = 0; i < 8; i++)
		assert_true(item_ok(&out[i], 10 + i));
	assert_int_equal(slot0[0] & DNP_RING_FULL_BIT, 0); /* index 8: lap 1 */
	/* a slot whose bit its producer has not set yet is not read */
	it = mkitem(20);
	assert_int_equal(dnp_ring_push(r, &it), 0);
	r->shm->data[sizeof(struct item)] ^= DNP_RING_FULL_BIT; /* undo index 9's bit */
	assert_int_equal(dnp_ring_pop_burst(r, out, 8), 0);
	r->shm->data[sizeof(struct item)] ^= DNP_RING_FULL_BIT;
	assert_int_equal(dnp_ring_pop_burst(r, out, 8), 1);
	assert_true(item_ok(&out[0], 20));
	free(mem);
}

#define STRESS_ITEMS 1000000u

struct stress {
	struct dnp_ring *r;
	uint64_t n;
};

/* Producer: pushes items 0..n-1 in bursts of varying size. */
static void produce(struct dnp_ring *r, uint64_t n)
{
	struct item buf[37];
	uint64_t next = 0;
	unsigned burst = 1;

	while (next < n) {
		unsigned k = burst, done;

		if (k > n - next)
			k = (unsigned)(n - next);
		for (unsigned i = 0; i < k; i++)
			buf[i] = mkitem(next + i);
		if (k == 1) {
			done = dnp_ring_push(r, buf) == 0;
		} else {
			done = dnp_ring_push_burst(r, buf, k);
		}
		next += done;
		if (done == 0)
			sched_yield();
		burst = burst % 37 + 1;
	}
}

static void *producer_thread(void *arg)
{
	struct stress *s = arg;

	produce(s->r, s->n);
	return NULL;
}

/*
 * Consumer: pops until n items were seen, checking order and content.
 * Returns the number of the first bad item, or n if all were good; gives up
 * (returns what it had) if alive() reports the producer gone with the ring empty.
 */
static uint64_t consume(struct dnp_ring *r, uint64_t n, bool (*alive)(void *), void *arg)
{
	struct item buf[29];
	uint64_t next = 0;
	unsigned want = 29;

	while (next < n) {
		unsigned got = dnp_ring_pop_burst(r, buf, want);

		for (unsigned i = 0; i < got; i++, next++)
			if (!item_ok(&buf[i], next))
				return next;
		if (got == 0) {
			if (alive && !alive(arg) && dnp_ring_count(r) == 0)
				return next;
			sched_yield();
		}
		want = want % 29 + 1;
	}
	return next;
}

static void test_ring_two_thread_stress(void **state)
{
	void *mem = NULL;
	struct dnp_ring rr, *r = mkring(256, &mem, &rr), cons;
	struct stress s = { r, STRESS_ITEMS };
	pthread_t th;

	/* Each thread has its own handle (ring.h). */
	assert_int_equal(dnp_ring_attach(mem, dnp_ring_memsize(256, sizeof(struct item)),
					 sizeof(struct item), &cons),
			 0);
	assert_int_equal(pthread_create(&th, NULL, producer_thread, &s), 0);
	assert_int_equal(consume(&cons, STRESS_ITEMS, NULL, NULL), STRESS_ITEMS);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(dnp_ring_count(r), 0);
	assert_int_equal(atomic_load(&r->shm->tail), STRESS_ITEMS);
	assert_int_equal(r->faults + cons.faults, 0);
	free(mem);
}

#define PROC_ITEMS 300000u

struct child {
	pid_t pid;
	int status;
	bool reaped;
};

/* Reaps the child without blocking, keeping its status for the final check. */
static bool child_alive(void *arg)
{
	struct child *c = arg;

	if (!c->reaped && waitpid(c->pid, &c->status, WNOHANG) == c->pid)
		c->reaped = true;
	return !c->reaped;
}

static void test_ring_two_process_memfd(void **state)
{
	size_t sz = dnp_ring_memsize(128, sizeof(struct item));
	struct dnp_ring rr, aa, *r = &rr, *a = &aa;
	int fd = memfd_create("dnp-ring-test", MFD_CLOEXEC);
	void *mem = NULL;
	struct child ch = { .status = -1 };

	if (fd < 0) {
		print_message("memfd_create unavailable (errno %d): skipping\n", errno);
		skip();
	}
	assert_int_equal(ftruncate(fd, (off_t)sz), 0);
	mem = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	assert_true(mem != MAP_FAILED);
	assert_int_equal(dnp_ring_init(mem, 128, sizeof(struct item), r), 0);

	ch.pid = fork();
	assert_true(ch.pid >= 0);
	if (ch.pid == 0) {
		/* Child: its own mapping of the same memfd, validated by attach. */
		void *cm = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		struct dnp_ring cr;

		if (cm == MAP_FAILED || dnp_ring_attach(cm, sz, sizeof(struct item), &cr) != 0)
			_exit(2);
		produce(&cr, PROC_ITEMS);
		_exit(0);
	}
	assert_int_equal(dnp_ring_attach(mem, sz, sizeof(struct item), a), 0);
	assert_int_equal(consume(a, PROC_ITEMS, child_alive, &ch), PROC_ITEMS);
	if (!ch.reaped)
		assert_int_equal(waitpid(ch.pid, &ch.status, 0), ch.pid);
	assert_true(WIFEXITED(ch.status));
	assert_int_equal(WEXITSTATUS(ch.status), 0);
	assert_int_equal(dnp_ring_count(a), 0);
	munmap(mem, sz);
	close(fd);
}

/*
 * The other side scribbles on the shared header (geometry and both
 * indices) between operations: every push and pop must stay inside the
 * slots, move at most 'slots' items, and count what it ignored. The ring
 * ends right before a PROT_NONE page, so a copy past it faults even
 * without ASan.
 */
static void test_ring_hostile_header(void **state)
{
	const uint32_t slots = 8, isz = sizeof(struct item);
	size_t sz = dnp_ring_memsize(slots, isz);
	long pg = sysconf(_SC_PAGESIZE);
	uint8_t *map = mmap(NULL, (size_t)pg * 2, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct dnp_ring prod, cons;
	struct dnp_ring_shm *h;
	struct item in[64], out[64];
	uint64_t seed = 0x243f6a8885a308d3ull;
	unsigned round;

	(void)state;
	assert_true(map != MAP_FAILED);
	assert_int_equal(mprotect(map + pg, (size_t)pg, PROT_NONE), 0);
	h = (struct dnp_ring_shm *)(map + pg - sz); /* sz is a multiple of 64 here */
	assert_int_equal(dnp_ring_init(h, slots, isz, &prod), 0);
	assert_int_equal(dnp_ring_attach(h, sz, isz, &cons), 0);
	for (unsigned i = 0; i < 64; i++)
		in[i] = mkitem(i);

	for (round = 0; round < 2000; round++) {
		unsigned n;

		seed ^= seed << 13;
		seed ^= seed >> 7;
		seed ^= seed << 17;
		/* The hostile side rewrites the geometry and one or both indices. */
		h->magic = (uint32_t)seed;
		h->slots = 1u << (seed >> 59);
		h->slot_size = (uint32_t)(seed >> 20) & ~7u;
		h->mask = (uint32_t)(seed >> 32);
		if (seed & 1)
			atomic_store(&h->head, (uint32_t)(seed >> 8));
		if (seed & 2)
			atomic_store(&h->tail, (uint32_t)(seed >> 16));
		n = dnp_ring_push_burst(&prod, in, 1 + (unsigned)(seed % 63));
		assert_true(n <= slots);
		n = dnp_ring_pop_burst(&cons, out, 64);
		assert_true(n <= slots);
		assert_true(dnp_ring_room(&prod) <= slots);
		assert_true(dnp_ring_count(&cons) <= slots);
		/* The private geometry never changes. */
		assert_int_equal(prod.slots, slots);
		assert_int_equal(cons.mask, slots - 1);
		assert_int_equal(cons.slot_size, isz);
	}
	assert_true(prod.faults + cons.faults > 0);
	munmap(map, (size_t)pg * 2);
}

/* in[] := items 0..7, and cons := a consumer handle on the 8-slot ring at mem. */
static void attach_consumer(void *mem, struct dnp_ring *cons, struct item in[8])
{
	for (unsigned i = 0; i < 8; i++)
		in[i] = mkitem(i);
	assert_int_equal(dnp_ring_attach(mem, dnp_ring_memsize(8, sizeof(struct item)),
					 sizeof(struct item), cons),
			 0);
}

/*
 * A room the producer saw stays there even if the consumer moves head
 * backwards (or anywhere) meanwhile: the daemon takes events from its
 * engine only as many as the room it saw, and must not lose any.
 */
static void test_ring_room_is_kept(void **state)
{
	void *mem = NULL;
	struct dnp_ring rr, *r = mkring(8, &mem, &rr), cons;
	struct item in[8], out[8];

	(void)state;
	attach_consumer(mem, &cons, in);
	assert_int_equal(dnp_ring_push_burst(r, in, 6), 6);
	assert_int_equal(dnp_ring_pop_burst(&cons, out, 4), 4);
	assert_int_equal(dnp_ring_room(r), 6);
	atomic_store(&r->shm->head, 0); /* backwards */
	assert_int_equal(dnp_ring_push_burst(r, in, 8), 6);
	atomic_store(&r->shm->head, 12345); /* ahead of tail */
	assert_int_equal(dnp_ring_room(r), 0);
	assert_true(r->faults >= 2);
	/* The consumer still sees exactly the 8 items pushed and not popped. */
	assert_int_equal(dnp_ring_pop_burst(&cons, out, 8), 8);
	assert_true(item_ok(&out[0], 4));
	assert_true(item_ok(&out[1], 5));
	assert_true(item_ok(&out[2], 0));
	free(mem);
}

/*
 * dnp_ring_room_min and pushes look at the consumer's index only when the
 * room already known is too small: a busy producer does not pull the
 * consumer's line out of its cache for every push. The room may lag (never
 * exceed) the truth.
 */
static void test_ring_room_min_is_lazy(void **state)
{
	void *mem = NULL;
	struct dnp_ring rr, *r = mkring(8, &mem, &rr), cons;
	struct item in[8], out[8];
	uint64_t faults;

	(void)state;
	attach_consumer(mem, &cons, in);
	assert_int_equal(dnp_ring_push_burst(r, in, 2), 2);
	assert_int_equal(dnp_ring_pop_burst(&cons, out, 2), 2);
	assert_int_equal(dnp_ring_room_min(r, 4), 6); /* enough known: head not read */
	assert_int_equal(dnp_ring_room_min(r, 7), 8); /* not enough: read, now exact */
	faults = r->faults;
	atomic_store(&r->shm->head, 12345); /* garbage, but not looked at */
	assert_int_equal(dnp_ring_room_min(r, 1), 8);
	assert_int_equal(dnp_ring_push_burst(r, in, 8), 8);
	assert_int_equal(r->faults, faults);
	assert_int_equal(dnp_ring_room(r), 0); /* exact: read, refused */
	assert_true(r->faults > faults);
	assert_int_equal(dnp_ring_pop_burst(&cons, out, 8), 8);
	assert_true(item_ok(&out[0], 0));
	assert_true(item_ok(&out[7], 7));
	free(mem);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ring_memsize_and_init_errors),
		cmocka_unit_test(test_ring_fill_empty_eagain),
		cmocka_unit_test(test_ring_index_wraparound),
		cmocka_unit_test(test_ring_burst_partial),
		cmocka_unit_test(test_ring_attach_validation),
		cmocka_unit_test(test_ring_full_bit),
		cmocka_unit_test(test_ring_two_thread_stress),
		cmocka_unit_test(test_ring_two_process_memfd),
		cmocka_unit_test(test_ring_hostile_header),
		cmocka_unit_test(test_ring_room_is_kept),
		cmocka_unit_test(test_ring_room_min_is_lazy),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
