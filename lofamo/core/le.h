/* SPDX-License-Identifier: MIT */
/*
 * le.h — little-endian fields of LO|FA|MO's wire formats (the DFM's DIAG
 * payloads, dfm.c; the service-network datagrams, svc.c). The caller checks
 * the bounds: each reads or writes exactly 2, 4 or 8 bytes at p, any
 * alignment. Pure inline functions.
 */
#ifndef LOFAMO_LE_H
#define LOFAMO_LE_H

#include <stdint.h>

static inline void lfm_put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static inline void lfm_put32(uint8_t *p, uint32_t v)
{
	lfm_put16(p, (uint16_t)v);
	lfm_put16(p + 2, (uint16_t)(v >> 16));
}

static inline void lfm_put64(uint8_t *p, uint64_t v)
{
	lfm_put32(p, (uint32_t)v);
	lfm_put32(p + 4, (uint32_t)(v >> 32));
}

static inline uint16_t lfm_get16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static inline uint32_t lfm_get32(const uint8_t *p)
{
	return lfm_get16(p) | (uint32_t)lfm_get16(p + 2) << 16;
}

static inline uint64_t lfm_get64(const uint8_t *p)
{
	return lfm_get32(p) | (uint64_t)lfm_get32(p + 4) << 32;
}

#endif
