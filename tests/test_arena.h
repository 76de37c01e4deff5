/* SPDX-License-Identifier: MIT */
/*
 * test_arena.h — application memory for engine tests that wire engines by
 * hand: one arena of ARENA bytes per node standing at BASE. The includer
 * defines ARENA and BASE; its dnp_mem_ops call test_arena_at for the range
 * rule the engine expects of a driver (a read or write outside the arena is
 * -EFAULT).
 */
#ifndef TEST_ARENA_H
#define TEST_ARENA_H

#include <stddef.h>
#include <stdint.h>

/* Where [va, va + len) is in arena m, or NULL if any of it is outside. */
static inline uint8_t *test_arena_at(uint8_t *m, uint64_t va, size_t len)
{
	if (va < BASE || va - BASE > ARENA || len > ARENA - (va - BASE))
		return NULL;
	return m + (va - BASE);
}

#endif
