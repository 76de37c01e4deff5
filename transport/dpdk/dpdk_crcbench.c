/* SPDX-License-Identifier: MIT */
/*
 * dpdk_crcbench — CRC-32 (IEEE 802.3) of one buffer with zlib crc32() (what
 * dnp-core/crc.c uses) and with DPDK's rte_net_crc (RTE_NET_CRC32_ETH) in each
 * of its implementations: scalar table, SSE4.2 + PCLMULQDQ, AVX-512 +
 * VPCLMULQDQ. Checks that they agree and prints the median time per call.
 * Not a test; figures for docs/dpdk.md.
 *
 *   dpdk_crcbench [bytes (4096)] [rounds (20001)]
 *
 * rte_net_crc needs no EAL; the AVX-512 path is only chosen when the max SIMD
 * bit width is 512 (EAL option --force-max-simd-bitwidth=512, set here with
 * rte_vect_set_max_simd_bitwidth) and the CPU has AVX512F + VPCLMULQDQ.
 */
/* rte_vect_set_max_simd_bitwidth is still experimental in DPDK 22.11 */
#define ALLOW_EXPERIMENTAL_API 1

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

#include <rte_net_crc.h>
#include <rte_vect.h>

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#define BATCH 16u /* calls per timed sample: the clock costs ~20 ns */

static double median_ns(uint64_t *s, unsigned n)
{
	qsort(s, n, sizeof(*s), cmp_u64);
	return (double)s[n / 2] / BATCH;
}

int main(int argc, char **argv)
{
	static const struct {
		enum rte_net_crc_alg alg;
		const char *name;
	} algs[] = {
		{ RTE_NET_CRC_SCALAR, "rte_net_crc scalar" },
		{ RTE_NET_CRC_SSE42, "rte_net_crc sse4.2" },
		{ RTE_NET_CRC_AVX512, "rte_net_crc avx512" },
	};
	unsigned len = argc > 1 ? (unsigned)atoi(argv[1]) : 4096;
	unsigned rounds = argc > 2 ? (unsigned)atoi(argv[2]) : 20001;
	uint64_t *s = calloc(rounds, sizeof(*s));
	uint8_t *buf = aligned_alloc(64, (len + 63) & ~63u);
	uint32_t ref, sink = 0;
	double zl;
	int bad = 0;

	if (!s || !buf || len == 0 || rounds == 0)
		return 2;
	for (unsigned i = 0; i < len; i++)
		buf[i] = (uint8_t)(i * 131u + 7u);
	rte_vect_set_max_simd_bitwidth(RTE_VECT_SIMD_512);

	ref = (uint32_t)crc32(0, buf, len);
	for (unsigned r = 0; r < rounds; r++) {
		uint64_t t0 = now_ns();

		for (unsigned b = 0; b < BATCH; b++)
			sink += (uint32_t)crc32(0, buf, len);
		s[r] = now_ns() - t0;
	}
	zl = median_ns(s, rounds);
	printf("%-22s %5u B  %8.1f ns  %6.2f GB/s  crc %08" PRIx32 "\n", "zlib crc32", len, zl,
	       len / zl, ref);

	for (unsigned a = 0; a < sizeof(algs) / sizeof(algs[0]); a++) {
		uint32_t c;
		double t;

		rte_net_crc_set_alg(algs[a].alg);
		c = rte_net_crc_calc(buf, len, RTE_NET_CRC32_ETH);
		for (unsigned r = 0; r < rounds; r++) {
			uint64_t t0 = now_ns();

			for (unsigned b = 0; b < BATCH; b++)
				sink += rte_net_crc_calc(buf, len, RTE_NET_CRC32_ETH);
			s[r] = now_ns() - t0;
		}
		t = median_ns(s, rounds);
		printf("%-22s %5u B  %8.1f ns  %6.2f GB/s  crc %08" PRIx32 "%s  (%.2fx zlib)\n",
		       algs[a].name, len, t, len / t, c, c == ref ? "" : "  MISMATCH", zl / t);
		bad |= c != ref;
	}
	/* (rte_net_crc_set_alg falls back silently when the CPU lacks an ISA.) */
	if (sink == 0x12345678u)
		printf("\n");
	free(s);
	free(buf);
	return bad;
}
