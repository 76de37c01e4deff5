/* SPDX-License-Identifier: MIT */
/*
 * fuzz_input.h — the harnesses' reader over the fuzzer's bytes: little-endian
 * values of 1..8 bytes, zeros once the input runs out (so every input, however
 * short, is a complete program).
 */
#ifndef FUZZ_INPUT_H
#define FUZZ_INPUT_H

#include <stddef.h>
#include <stdint.h>

struct fuzz_in {
	const uint8_t *p;
	size_t n;
};

static inline uint64_t fuzz_take(struct fuzz_in *in, unsigned bytes)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < bytes; i++) {
		v |= (uint64_t)(in->n ? *in->p : 0) << (8 * i);
		if (in->n) {
			in->p++;
			in->n--;
		}
	}
	return v;
}

#endif
