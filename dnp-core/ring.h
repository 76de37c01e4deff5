/* SPDX-License-Identifier: MIT */
/*
 * ring — single-producer/single-consumer ring of fixed-size slots in
 * caller-provided memory (so it can live in a memfd shared by two processes).
 *
 * Sizing is separate from initialisation: dnp_ring_memsize(slots, slot_size)
 * then dnp_ring_init(mem, ...). Free-running 32-bit head/tail, masked on
 * access; producer and consumer indices on separate 64-byte lines. Push and
 * pop never block: a full ring returns -EAGAIN, an empty one 0 items.
 *
 * Ordering: the producer writes the slot, then stores tail with release; the
 * consumer loads tail with acquire before reading slots, then stores head
 * with release; the producer loads head with acquire before reusing a slot.
 *
 * Exactly one producer thread and one consumer thread (they may be in
 * different processes). dnp_ring_attach validates a ring set up elsewhere.
 */
#ifndef DNP_RING_H
#define DNP_RING_H

#include <stdalign.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define DNP_RING_MAGIC 0x444e5052u /* "DNPR" */

struct dnp_ring {
	/* line 0: constant after init */
	uint32_t magic;
	uint32_t slots;     /* power of two */
	uint32_t slot_size; /* multiple of 8 */
	uint32_t mask;
	uint8_t pad0[48];
	/* line 1: written by the consumer */
	_Atomic uint32_t head;
	uint8_t pad1[60];
	/* line 2: written by the producer */
	_Atomic uint32_t tail;
	uint8_t pad2[60];
	/* slots follow, 64-byte aligned */
	alignas(64) uint8_t data[];
};

/* Bytes needed for the ring; 0 if slots is not a power of two >= 2 or slot_size is not a multiple of 8. */
size_t dnp_ring_memsize(uint32_t slots, uint32_t slot_size);
/* Initialises mem (at least memsize bytes, 64-byte aligned). Errors: -EINVAL. */
int dnp_ring_init(void *mem, uint32_t slots, uint32_t slot_size, struct dnp_ring **out);
/* Checks magic and geometry of a ring in mem of mem_len bytes. Errors: -EPROTO, -EINVAL. */
int dnp_ring_attach(void *mem, size_t mem_len, uint32_t slot_size, struct dnp_ring **out);

/* Copies one slot in. -EAGAIN if full. Producer only. */
int dnp_ring_push(struct dnp_ring *r, const void *slot);
/* Copies up to n slots in; returns how many. Producer only. */
unsigned dnp_ring_push_burst(struct dnp_ring *r, const void *slots, unsigned n);
/* Copies up to n slots out; returns how many. Consumer only. */
unsigned dnp_ring_pop_burst(struct dnp_ring *r, void *slots, unsigned n);
/* Items currently queued (approximate when called from a third party). */
uint32_t dnp_ring_count(const struct dnp_ring *r);
uint32_t dnp_ring_free(const struct dnp_ring *r);

#endif
