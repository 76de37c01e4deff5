/* SPDX-License-Identifier: MIT */
/*
 * crc — CRC-32 IEEE 802.3 through Intel ISA-L's crc32_gzip_refl(), the same
 * CRC as zlib's crc32() (tests/test_crc.c checks the standard vector) but
 * folded with carry-less multiplication (PCLMUL/VPCLMUL): on this project's
 * machines about 10x faster than zlib on a 4 KiB frame (bench/results/crc.md).
 * Chosen at build time when libisal is found; dnp-core/crc.c (zlib) otherwise.
 * Short buffers take crc_fold.h's loop, no call into the library.
 */
#include <isa-l/crc.h>
#include <limits.h>

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
	const unsigned char *p = buf;

	if (len == 0)
		return crc;
	/* crc32_gzip_refl takes a 64-bit length on x86-64; chunk anyway for portability. */
	while (len > UINT_MAX) {
		crc = crc32_gzip_refl(crc, (unsigned char *)p, UINT_MAX);
		p += UINT_MAX;
		len -= UINT_MAX;
	}
	return crc32_gzip_refl(crc, (unsigned char *)p, len);
}

uint32_t dnp_crc32(uint32_t crc, const void *buf, size_t len)
{
	if (crcf_short(len))
		return crcf_fold(crc, buf, len); /* a jump: no library set-up */
	/* a longer frame (or a short one without PCLMUL): one jump too */
	if (len - 1u < UINT_MAX)
		return crc32_gzip_refl(crc, (unsigned char *)buf, len);
	return crc_lib(crc, buf, len);
}
