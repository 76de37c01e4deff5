/* SPDX-License-Identifier: MIT */
/*
 * crc — CRC-32 (IEEE 802.3 polynomial, reflected, init/xorout 0xFFFFFFFF) as
 * used by the DNP's CRC_TX/CRC_RX blocks (EURETILE report, HW instrumentation
 * for debugging).
 * Backed by Intel ISA-L (crc_isal.c) when available, else zlib's crc32()
 * (crc.c); no table of our own. Thread-safe, no allocation.
 */
#ifndef DNP_CRC_H
#define DNP_CRC_H

#include <stddef.h>
#include <stdint.h>

/* CRC-32 of buf[0..len); chain by passing the previous result as crc (start with 0). */
uint32_t dnp_crc32(uint32_t crc, const void *buf, size_t len);

#endif
