/* SPDX-License-Identifier: MIT */
/*
 * crc — CRC-32 IEEE 802.3 (EURETILE report, HW instrumentation for debugging:
 * CRC_TX/CRC_RX compute it over header + payload + footer). zlib's crc32() is
 * exactly this CRC (reflected 0x04C11DB7, init and xorout 0xFFFFFFFF) and is
 * table/braid accelerated, so we only adapt the types. Short buffers take
 * crc_fold.h's loop, no call into the library.
 */
#include <limits.h>
#include <zlib.h>

#include "crc.h"
#include "crc_fold.h"

uint32_t dnp_crc32_short(uint32_t crc, const void *buf, size_t len)
{
	return crcf_crc32(crc, buf, len);
}

/*
 * The library for buffers past 4 GiB, in chunks; out of line, so that
 * dnp_crc32 saves no registers on its way to the fold or the library.
 */
__attribute__((noinline)) static uint32_t crc_lib(uint32_t crc, const void *buf, size_t len)
{
	const Bytef *p = buf;
	uLong c = crc;

	/* crc32(c, NULL, 0) would return 0 (zlib's "initial value"), not c. */
	if (len == 0)
		return crc;

	/* zlib takes a uInt length: feed very large buffers in chunks. */
	while (len > UINT_MAX) {
		c = crc32(c, p, UINT_MAX);
		p += UINT_MAX;
		len -= UINT_MAX;
	}
	return (uint32_t)crc32(c, p, (uInt)len);
}

uint32_t dnp_crc32(uint32_t crc, const void *buf, size_t len)
{
	if (crcf_short(len))
		return crcf_fold(crc, buf, len); /* a jump: no library set-up */
	/* a longer frame (or a short one without PCLMUL): one jump too */
	if (len - 1u < UINT_MAX)
		return (uint32_t)crc32(crc, buf, (uInt)len);
	return crc_lib(crc, buf, len);
}
