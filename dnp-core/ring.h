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
 * The other side is not trusted. The shared memory holds a header (struct
 * dnp_ring_shm) that either process can scribble on; each side works through
 * its own struct dnp_ring handle in private memory, which keeps:
 *   - the geometry (slot pointer, slot count, mask, slot size), copied once
 *     at init/attach: the header's geometry fields are never read again;
 *   - its own index (the producer's tail, the consumer's head): only stored
 *     to shared memory, never read back from it;
 *   - the producer's view of the consumer's head, which only moves forward
 *     and never past the producer's tail: a push loads head at most once,
 *     and a value outside that range is ignored (the view stays where it
 *     was) and counted in 'faults'. The consumer reads no index of the
 *     producer's at all, only the full bit of the slot at its head.
 * So whatever the other side writes, a push or pop touches only the slots of
 * the ring, never more than 'slots' of them per call, and a room the producer saw
 * (dnp_ring_room) is still there at its next push.
 *
 * Each slot says itself whether it holds an item: bit 7 of its first byte
 * (DNP_RING_FULL_BIT) belongs to the ring, and the producer sets it to the
 * parity of the lap it writes (1 on the first lap over the slots, 0 on the
 * second, and so on); memory set up by dnp_ring_init has it 0, empty. A
 * consumer looks at the slot at its head, not at the producer's tail, so a
 * hand-off costs one cache line crossing (the slot's) instead of two in a
 * row (the tail's, then the slot's). The DNP's command ring is driven by a
 * write pointer in a device register (EURETILE report, Tx acceleration),
 * which the device reads for free; in shared memory that pointer is one
 * more line to fetch, so the slot carries a valid bit of its own, as the
 * LO|FA|MO watchdog registers do (EURETILE report, watchdog implementation).
 * What a producer puts in that bit is
 * lost; a consumer always gets it 0. The producer still publishes tail, for
 * dnp_ring_count and for an attach.
 *
 * Ordering: the producer writes a slot's other bytes, then its first byte
 * with release (then tail, with release); the consumer loads the first byte
 * with acquire before reading the rest of the slot, then stores head with
 * release; the producer loads head with acquire before reusing a slot.
 *
 * Exactly one producer thread and one consumer thread, each with its own
 * handle (they may be in different processes); one thread may use a single
 * handle for both roles. dnp_ring_attach validates a ring set up elsewhere.
 */
#ifndef DNP_RING_H
#define DNP_RING_H

#include <stdalign.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define DNP_RING_MAGIC 0x444e5052u /* "DNPR" */
/* Bit 7 of a slot's first byte: the ring's, the lap parity of a full slot. */
#define DNP_RING_FULL_BIT 0x80u

/* The shared header (an ABI: sizes and offsets are static_asserted in ring.c). */
struct dnp_ring_shm {
	/* line 0: written at init; informative afterwards (each side keeps a copy) */
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

/* One side's private handle (never in shared memory). */
struct dnp_ring {
	struct dnp_ring_shm *shm;
	uint8_t *data; /* shm->data, fixed at init/attach */
	uint32_t slots, mask, slot_size;
	uint32_t head; /* consumer: own index; producer: last valid head seen */
	uint32_t tail; /* producer: own index; consumer: unused (attach value) */
	uint32_t pad;
	uint64_t faults; /* producer: consumer's head out of range (ignored) */
};

/* Bytes needed for the ring; 0 if slots is not a power of two >= 2 or slot_size is not a multiple of 8. */
size_t dnp_ring_memsize(uint32_t slots, uint32_t slot_size);
/* Initialises mem (at least memsize bytes, 64-byte aligned) and *out. Errors: -EINVAL. */
int dnp_ring_init(void *mem, uint32_t slots, uint32_t slot_size, struct dnp_ring *out);
/* Checks magic and geometry of a ring in mem of mem_len bytes, fills *out. Errors: -EPROTO, -EINVAL. */
int dnp_ring_attach(void *mem, size_t mem_len, uint32_t slot_size, struct dnp_ring *out);

/* Copies one slot in. -EAGAIN if full. Producer only. */
int dnp_ring_push(struct dnp_ring *r, const void *slot);
/* Copies up to n slots in; returns how many. Producer only. */
unsigned dnp_ring_push_burst(struct dnp_ring *r, const void *slots, unsigned n);
/*
 * Copies up to n slots out, as far as the slots at head are full for this
 * lap; returns how many. Bit 7 of each copy's first byte is 0. Consumer only.
 */
unsigned dnp_ring_pop_burst(struct dnp_ring *r, void *slots, unsigned n);
/*
 * Producer only: free slots now. The next push or push_burst from this
 * handle accepts at least this many, whatever the consumer writes meanwhile.
 */
uint32_t dnp_ring_room(struct dnp_ring *r);
/*
 * The same, but the consumer's index is loaded only when the room already
 * known is below want: the result may be smaller than the true room (never
 * larger), and is at least want whenever the ring has that much. A push of
 * n slots does the same with want = n.
 */
uint32_t dnp_ring_room_min(struct dnp_ring *r, uint32_t want);
/* Items currently queued, from both shared indices (approximate; for reports). */
uint32_t dnp_ring_count(const struct dnp_ring *r);
uint32_t dnp_ring_free(const struct dnp_ring *r);

#endif
