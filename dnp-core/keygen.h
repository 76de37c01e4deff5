/* SPDX-License-Identifier: MIT */
/*
 * keygen — buffer keys that no other key predicts.
 *
 * A key is SipHash-2-4 (a keyed pseudo-random function) of a 64-bit counter
 * under a 128-bit secret, cut to 32 bits; 0 is skipped (keys are never 0).
 * Knowing any number of keys tells nothing of the next one without the
 * secret. The secret comes from the engine's driver: dnpd draws it with
 * getrandom(2) at start, the lab derives it from its seed (reproducible runs).
 * The engine itself stays sans-I/O.
 *
 * Pure functions; no allocation; a struct dnp_keygen is owned by one thread.
 */
#ifndef DNP_KEYGEN_H
#define DNP_KEYGEN_H

#include <stddef.h>
#include <stdint.h>

struct dnp_keygen {
	uint64_t k[2];  /* the secret */
	uint64_t count; /* keys drawn so far (the PRF input) */
};

/* SipHash-2-4 of msg[0..len) under k (the reference algorithm, little-endian). */
uint64_t dnp_siphash24(const uint64_t k[2], const void *msg, size_t len);

void dnp_keygen_init(struct dnp_keygen *g, const uint64_t secret[2]);
/* The next key: never 0. */
uint32_t dnp_keygen_next(struct dnp_keygen *g);

#endif
