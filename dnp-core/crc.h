/* SPDX-License-Identifier: MIT */
/*
 * crc — CRC-32 (IEEE 802.3 polynomial, reflected, init/xorout 0xFFFFFFFF) as
 * used by the DNP's CRC_TX/CRC_RX blocks (EURETILE report, HW instrumentation
 * for debugging).
 * Backed by Intel ISA-L (crc_isal.c) when available, else zlib's crc32()
 * (crc.c). Buffers of up to DNP_CRC_SHORT_MAX bytes (the frames of small
 * messages) take a folding loop of our own instead (crc_fold.h, one jump
 * away), when the CPU has carry-less multiplication: for such a frame the
 * library's call, dispatch and set-up cost more than the CRC itself.
 * Thread-safe, no allocation.
 */
#ifndef DNP_CRC_H
#define DNP_CRC_H

#include <stddef.h>
#include <stdint.h>

/* CRC-32 of buf[0..len); chain by passing the previous result as crc (start with 0). */
uint32_t dnp_crc32(uint32_t crc, const void *buf, size_t len);

/* Up to this many bytes, dnp_crc32 takes dnp_crc32_short's path (if the CPU has PCLMUL). */
#define DNP_CRC_SHORT_MAX 256u

/*
 * The same CRC without the library, any length: carry-less folding where
 * the CPU has it, else a byte table. For tests (against the library) and
 * for dnp_crc32 on short buffers.
 */
uint32_t dnp_crc32_short(uint32_t crc, const void *buf, size_t len);

#endif
