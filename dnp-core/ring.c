/* SPDX-License-Identifier: MIT */
/*
 * ring — SPSC ring of fixed-size slots in caller memory (ring.h).
 *
 * head and tail run freely over 32 bits and are masked only to address a
 * slot, so tail - head is the fill level even across the 2^32 wrap and a
 * full ring is told from an empty one without a spare slot. Each side keeps
 * its own index privately (it is the only writer) and loads the other
 * side's with acquire, once per operation; it publishes its own with
 * release after touching the slots. All geometry comes from the private
 * handle: a scribbled header cannot move a copy outside the slots.
 */
#include <assert.h>
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "ring.h"

static_assert(offsetof(struct dnp_ring_shm, head) == 64, "head on its own line");
static_assert(offsetof(struct dnp_ring_shm, tail) == 128, "tail on its own line");
static_assert(offsetof(struct dnp_ring_shm, data) == 192, "slots start on line 3");
static_assert(sizeof(struct dnp_ring_shm) == 192, "ring header is three lines");

static bool geometry_ok(uint32_t slots, uint32_t slot_size)
{
	return slots >= 2 && (slots & (slots - 1)) == 0 && slot_size > 0 && (slot_size & 7u) == 0;
}

size_t dnp_ring_memsize(uint32_t slots, uint32_t slot_size)
{
	if (!geometry_ok(slots, slot_size))
		return 0;
	return sizeof(struct dnp_ring_shm) + (size_t)slots * slot_size;
}

static void handle_fill(struct dnp_ring *r, struct dnp_ring_shm *shm, uint32_t slots,
			uint32_t slot_size, uint32_t head, uint32_t tail)
{
	memset(r, 0, sizeof(*r));
	r->shm = shm;
	r->data = shm->data;
	r->slots = slots;
	r->mask = slots - 1;
	r->slot_size = slot_size;
	r->head = head;
	r->tail = tail;
}

int dnp_ring_init(void *mem, uint32_t slots, uint32_t slot_size, struct dnp_ring *out)
{
	struct dnp_ring_shm *s = mem;

	if (!mem || !out || ((uintptr_t)mem & 63u) || !geometry_ok(slots, slot_size))
		return -EINVAL;
	memset(s, 0, dnp_ring_memsize(slots, slot_size)); /* every slot empty for lap 0 */
	s->slots = slots;
	s->slot_size = slot_size;
	s->mask = slots - 1;
	atomic_store_explicit(&s->head, 0, memory_order_relaxed);
	atomic_store_explicit(&s->tail, 0, memory_order_relaxed);
	/*
	 * Plain store: the memory reaches the other side only through a later
	 * synchronising step (fork, passing the memfd, thread creation).
	 */
	s->magic = DNP_RING_MAGIC;
	handle_fill(out, s, slots, slot_size, 0, 0);
	return 0;
}

/*
 * -EINVAL: the caller's side does not fit (NULL, misaligned, mem_len too
 * small for the ring, slot_size differs from what the caller expects).
 * -EPROTO: the memory is not a ring (magic) or its header is inconsistent
 * (geometry, mask, or more items queued than slots). Every header field is
 * read once, into locals, and the handle is built from those.
 */
int dnp_ring_attach(void *mem, size_t mem_len, uint32_t slot_size, struct dnp_ring *out)
{
	struct dnp_ring_shm *s = mem;
	uint32_t magic, slots, ssize, mask, head, tail;

	if (!mem || !out || ((uintptr_t)mem & 63u) || mem_len < sizeof(*s))
		return -EINVAL;
	magic = s->magic;
	slots = s->slots;
	ssize = s->slot_size;
	mask = s->mask;
	if (magic != DNP_RING_MAGIC)
		return -EPROTO;
	if (!geometry_ok(slots, ssize) || mask != slots - 1)
		return -EPROTO;
	if (ssize != slot_size || dnp_ring_memsize(slots, ssize) > mem_len)
		return -EINVAL;
	head = atomic_load_explicit(&s->head, memory_order_acquire);
	tail = atomic_load_explicit(&s->tail, memory_order_acquire);
	if (tail - head > slots)
		return -EPROTO;
	handle_fill(out, s, slots, ssize, head, tail);
	return 0;
}

static uint8_t *slot_ptr(const struct dnp_ring *r, uint32_t idx)
{
	return r->data + (size_t)(idx & r->mask) * r->slot_size;
}

/*
 * Producer: refreshes the view of head with one load. A valid head lies
 * between the one seen last and our tail (the consumer only moves forward
 * and never past what we produced); anything else is ignored and counted.
 */
static uint32_t producer_room(struct dnp_ring *r, uint32_t want)
{
	/*
	 * The room already known (from the last head we saw) is still there:
	 * when it is enough, the consumer's line is not touched at all, so a
	 * push does not pull it back from the consumer's cache.
	 */
	if (r->slots - (r->tail - r->head) >= want)
		return r->slots - (r->tail - r->head);
	/* Pairs with the consumer's release store of head in dnp_ring_pop_burst. */
	uint32_t h = atomic_load_explicit(&r->shm->head, memory_order_acquire);

	if (h != r->head) {
		if (r->tail - h <= r->tail - r->head)
			r->head = h;
		else
			r->faults++;
	}
	return r->slots - (r->tail - r->head);
}

/* The full bit a slot at index idx has while it holds an item of this lap. */
static uint8_t full_bit(const struct dnp_ring *r, uint32_t idx)
{
	/* lap = idx / slots; laps 0, 2, 4, ... write 1, so zeroed memory is empty */
	return (idx & r->slots) ? 0 : DNP_RING_FULL_BIT;
}

uint32_t dnp_ring_room(struct dnp_ring *r)
{
	return producer_room(r, r->slots);
}

uint32_t dnp_ring_room_min(struct dnp_ring *r, uint32_t want)
{
	return producer_room(r, want);
}

/*
 * Writes one item into the slot at idx: every byte but the first, then the
 * first with the full bit of idx's lap, with release, so a consumer that
 * sees the bit sees the rest (pairs with the acquire in dnp_ring_pop_burst).
 */
static void slot_put(struct dnp_ring *r, uint32_t idx, const uint8_t *src)
{
	uint8_t *s = slot_ptr(r, idx);

	memcpy(s + 1, src + 1, r->slot_size - 1);
	__atomic_store_n(s, (uint8_t)((src[0] & ~DNP_RING_FULL_BIT) | full_bit(r, idx)),
			 __ATOMIC_RELEASE);
}

int dnp_ring_push(struct dnp_ring *r, const void *slot)
{
	return dnp_ring_push_burst(r, slot, 1) == 1 ? 0 : -EAGAIN;
}

unsigned dnp_ring_push_burst(struct dnp_ring *r, const void *slots, unsigned n)
{
	uint32_t room = producer_room(r, n);
	const uint8_t *src = slots;

	if (n > room)
		n = room;
	if (n == 0)
		return 0;
	for (unsigned k = 0; k < n; k++)
		slot_put(r, r->tail + k, src + (size_t)k * r->slot_size);
	r->tail += n;
	/* For dnp_ring_count and attach only: a consumer goes by the full bits. */
	atomic_store_explicit(&r->shm->tail, r->tail, memory_order_release);
	return n;
}

unsigned dnp_ring_pop_burst(struct dnp_ring *r, void *slots, unsigned n)
{
	uint8_t *dst = slots;
	unsigned k;

	if (n > r->slots)
		n = r->slots;
	for (k = 0; k < n; k++) {
		const uint8_t *s = slot_ptr(r, r->head + k);
		uint8_t *d = dst + (size_t)k * r->slot_size;
		/* Pairs with the release store of the first byte in slot_put. */
		uint8_t b0 = __atomic_load_n(s, __ATOMIC_ACQUIRE);

		if ((b0 & DNP_RING_FULL_BIT) != full_bit(r, r->head + k))
			break;
		memcpy(d + 1, s + 1, r->slot_size - 1);
		d[0] = (uint8_t)(b0 & ~DNP_RING_FULL_BIT);
	}
	if (k == 0)
		return 0;
	r->head += k;
	/*
	 * Pairs with the producer's acquire load of head in
	 * dnp_ring_push{,_burst}: the slots are read before they are reused.
	 */
	atomic_store_explicit(&r->shm->head, r->head, memory_order_release);
	return k;
}

uint32_t dnp_ring_count(const struct dnp_ring *r)
{
	/*
	 * head first: tail only grows past it, so a later tail load never
	 * makes the difference negative. Both acquire, pairing with the
	 * owners' release stores, for callers that act on the result.
	 */
	uint32_t head = atomic_load_explicit(&r->shm->head, memory_order_acquire);
	uint32_t tail = atomic_load_explicit(&r->shm->tail, memory_order_acquire);
	uint32_t n = tail - head;

	return n > r->slots ? r->slots : n;
}

uint32_t dnp_ring_free(const struct dnp_ring *r)
{
	return r->slots - dnp_ring_count(r);
}
