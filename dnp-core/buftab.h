/* SPDX-License-Identifier: MIT */
/*
 * buftab — the RDMA buffer table of one node (EURETILE report, kernel driver
 * and buffer search benchmark: buf_desc VirtAddr/Len/Flags/MagicWord).
 *
 * Entries are (port, va, len, flags, key, priv). Lookup of [va, va+len) must
 * lie entirely in one buffer of that port; it is O(log n) (a sorted array
 * searched by (port, va)), with no allocation, and the entries of the last
 * two lookups that found one are tried first (a stream hits them). Capacity is fixed at create
 * time (at least 4096).
 *
 * Rules (docs/protocol.md, "Buffer table"):
 *  - buffers of one port may not overlap (-EEXIST); different ports are
 *    different address spaces and may;
 *  - unregistering a buffer that traffic still targets is allowed: packets
 *    that arrive afterwards fail with -ENOENT and their sender gets an error
 *    completion; bytes already written stay written.
 *
 * Owned by one thread (the engine's): lookups too write the table (its hints).
 */
#ifndef DNP_BUFTAB_H
#define DNP_BUFTAB_H

#include <stdbool.h>
#include <stdint.h>

#include "dnp_abi.h" /* DNP_BUF_* flags */

struct dnp_buf {
	uint64_t va;
	uint64_t len; /* > 0, va + len must not overflow */
	uint32_t key;
	uint16_t flags; /* DNP_BUF_* */
	uint8_t port;
	uint8_t rsvd;
	uintptr_t priv; /* owner's cookie (e.g. a host mapping); not interpreted */
};

struct dnp_buftab;

/* Errors: -EINVAL (max_buffers 0), -ENOMEM. */
int dnp_buftab_create(uint32_t max_buffers, struct dnp_buftab **out);
void dnp_buftab_destroy(struct dnp_buftab *bt);
uint32_t dnp_buftab_count(const struct dnp_buftab *bt);
/*
 * The table's generation: it changes with every insert and remove (and
 * wraps after 2^32 of them). An entry pointer a lookup returned, kept
 * together with the generation it was found in, still names the same
 * buffer, unchanged, while the generation is the same (a per-burst cache
 * of the receive path, engine_rx8.h).
 */
uint32_t dnp_buftab_gen(const struct dnp_buftab *bt);

/* Errors: -EINVAL (len 0, overflow, unknown flags), -EEXIST (overlaps a buffer of the port), -ENOSPC. */
int dnp_buftab_insert(struct dnp_buftab *bt, const struct dnp_buf *b);
/* Removes the buffer of 'port' that starts at va. Errors: -ENOENT. If out, the entry is copied there. */
int dnp_buftab_remove(struct dnp_buftab *bt, uint8_t port, uint64_t va, struct dnp_buf *out);
/* Removes every buffer of a port; returns how many. */
unsigned dnp_buftab_remove_port(struct dnp_buftab *bt, uint8_t port);

/*
 * Finds the buffer of 'port' holding [va, va+len) (len 0 is treated as 1),
 * for a remote access that presents 'key'.
 * Errors, checked in this order:
 *   -EACCES  no buffer of the port that contains va has this key (no buffer
 *            at va and a wrong key are the same error, whatever the range:
 *            without the key nothing is learnt about a buffer, not even
 *            whether it exists or where it ends)
 *   -ERANGE  va+len runs past the end of the buffer the key opens (or overflows)
 *   -EPERM   the buffer lacks one of need_flags
 * On success *out points at the entry (valid until the next insert/remove).
 */
int dnp_buftab_lookup(const struct dnp_buftab *bt, uint8_t port, uint64_t va, uint64_t len,
		      uint32_t key, unsigned need_flags, const struct dnp_buf **out);

/*
 * The buffer of 'port' that contains all of [va, va+len) (len 0 is treated
 * as 1), whatever its key and flags, or NULL. For the owner's own accesses.
 */
const struct dnp_buf *dnp_buftab_find(const struct dnp_buftab *bt, uint8_t port, uint64_t va,
				      uint64_t len);

/* Iteration in (port, va) order: i from 0 to count-1. */
const struct dnp_buf *dnp_buftab_at(const struct dnp_buftab *bt, uint32_t i);

#endif
