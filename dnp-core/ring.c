/* SPDX-License-Identifier: MIT */
/*
 * ring — SPSC ring of fixed-size slots in caller memory (ring.h).
 *
 * head and tail run freely over 32 bits and are masked only to address a
 * slot, so tail - head is the fill level even across the 2^32 wrap and a
 * full ring is told from an empty one without a spare slot. Each side reads
 * its own index relaxed (only it writes it) and the other side's with
 * acquire; it publishes its own with release after touching the slots.
 */
#include <assert.h>
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "ring.h"

static_assert(offsetof(struct dnp_ring, head) == 64, "head on its own line");
static_assert(offsetof(struct dnp_ring, tail) == 128, "tail on its own line");
static_assert(offsetof(struct dnp_ring, data) == 192, "slots start on line 3");
static_assert(sizeof(struct dnp_ring) == 192, "ring header is three lines");

static bool geometry_ok(uint32_t slots, uint32_t slot_size)
{
	return slots >= 2 && (slots & (slots - 1)) == 0 && slot_size > 0 &&
	       (slot_size & 7u) == 0;
}

size_t dnp_ring_memsize(uint32_t slots, uint32_t slot_size)
{
	if (!geometry_ok(slots, slot_size))
		return 0;
	return sizeof(struct dnp_ring) + (size_t)slots * slot_size;
}

int dnp_ring_init(void *mem, uint32_t slots, uint32_t slot_size, struct dnp_ring **out)
{
	struct dnp_ring *r = mem;

	if (!mem || ((uintptr_t)mem & 63u) || !geometry_ok(slots, slot_size))
		return -EINVAL;
	memset(r, 0, sizeof(*r));
	r->slots = slots;
	r->slot_size = slot_size;
	r->mask = slots - 1;
	atomic_store_explicit(&r->head, 0, memory_order_relaxed);
	atomic_store_explicit(&r->tail, 0, memory_order_relaxed);
	/*
	 * Plain store: the memory reaches the other side only through a later
	 * synchronising step (fork, passing the memfd, thread creation).
	 */
	r->magic = DNP_RING_MAGIC;
	*out = r;
	return 0;
}

/*
 * -EINVAL: the caller's side does not fit (NULL, misaligned, mem_len too
 * small for the ring, slot_size differs from what the caller expects).
 * -EPROTO: the memory is not a ring (magic) or its header is inconsistent
 * (geometry, mask, or more items queued than slots).
 */
int dnp_ring_attach(void *mem, size_t mem_len, uint32_t slot_size, struct dnp_ring **out)
{
	struct dnp_ring *r = mem;
	uint32_t head, tail;

	if (!mem || ((uintptr_t)mem & 63u) || mem_len < sizeof(*r))
		return -EINVAL;
	if (r->magic != DNP_RING_MAGIC)
		return -EPROTO;
	if (!geometry_ok(r->slots, r->slot_size) || r->mask != r->slots - 1)
		return -EPROTO;
	if (r->slot_size != slot_size || dnp_ring_memsize(r->slots, r->slot_size) > mem_len)
		return -EINVAL;
	head = atomic_load_explicit(&r->head, memory_order_acquire);
	tail = atomic_load_explicit(&r->tail, memory_order_acquire);
	if (tail - head > r->slots)
		return -EPROTO;
	*out = r;
	return 0;
}

static uint8_t *slot_ptr(struct dnp_ring *r, uint32_t idx)
{
	return r->data + (size_t)(idx & r->mask) * r->slot_size;
}

int dnp_ring_push(struct dnp_ring *r, const void *slot)
{
	uint32_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
	/* Pairs with the consumer's release store of head in dnp_ring_pop_burst. */
	uint32_t head = atomic_load_explicit(&r->head, memory_order_acquire);

	if (tail - head >= r->slots)
		return -EAGAIN;
	memcpy(slot_ptr(r, tail), slot, r->slot_size);
	/* Pairs with the consumer's acquire load of tail in dnp_ring_pop_burst. */
	atomic_store_explicit(&r->tail, tail + 1, memory_order_release);
	return 0;
}

/* Copies n slots between the ring (from index idx) and a flat buffer, in up to two parts. */
static void copy_in(struct dnp_ring *r, uint32_t idx, const uint8_t *src, uint32_t n)
{
	uint32_t first = r->slots - (idx & r->mask);

	if (first > n)
		first = n;
	memcpy(slot_ptr(r, idx), src, (size_t)first * r->slot_size);
	if (n > first)
		memcpy(r->data, src + (size_t)first * r->slot_size,
		       (size_t)(n - first) * r->slot_size);
}

static void copy_out(struct dnp_ring *r, uint32_t idx, uint8_t *dst, uint32_t n)
{
	uint32_t first = r->slots - (idx & r->mask);

	if (first > n)
		first = n;
	memcpy(dst, slot_ptr(r, idx), (size_t)first * r->slot_size);
	if (n > first)
		memcpy(dst + (size_t)first * r->slot_size, r->data,
		       (size_t)(n - first) * r->slot_size);
}

unsigned dnp_ring_push_burst(struct dnp_ring *r, const void *slots, unsigned n)
{
	uint32_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
	/* Pairs with the consumer's release store of head in dnp_ring_pop_burst. */
	uint32_t head = atomic_load_explicit(&r->head, memory_order_acquire);
	uint32_t room = r->slots - (tail - head);

	if (n > room)
		n = room;
	if (n == 0)
		return 0;
	copy_in(r, tail, slots, n);
	/* Pairs with the consumer's acquire load of tail in dnp_ring_pop_burst. */
	atomic_store_explicit(&r->tail, tail + n, memory_order_release);
	return n;
}

unsigned dnp_ring_pop_burst(struct dnp_ring *r, void *slots, unsigned n)
{
	uint32_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
	/* Pairs with the producer's release store of tail in dnp_ring_push{,_burst}. */
	uint32_t tail = atomic_load_explicit(&r->tail, memory_order_acquire);
	uint32_t avail = tail - head;

	if (n > avail)
		n = avail;
	if (n == 0)
		return 0;
	copy_out(r, head, slots, n);
	/*
	 * Pairs with the producer's acquire load of head in
	 * dnp_ring_push{,_burst}: the slots are read before they are reused.
	 */
	atomic_store_explicit(&r->head, head + n, memory_order_release);
	return n;
}

uint32_t dnp_ring_count(const struct dnp_ring *r)
{
	/*
	 * head first: tail only grows past it, so a later tail load never
	 * makes the difference negative. Both acquire, pairing with the
	 * owners' release stores, for callers that act on the result.
	 */
	uint32_t head = atomic_load_explicit(&r->head, memory_order_acquire);
	uint32_t tail = atomic_load_explicit(&r->tail, memory_order_acquire);
	uint32_t n = tail - head;

	return n > r->slots ? r->slots : n;
}

uint32_t dnp_ring_free(const struct dnp_ring *r)
{
	return r->slots - dnp_ring_count(r);
}
