/* SPDX-License-Identifier: MIT */
/*
 * test_parse.c — the shared parsers of common/dnp_parse.h: accepted forms,
 * garbage, signs, overflow of numbers, sizes and durations, and addresses.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <arpa/inet.h>
#include <cmocka.h>

#include "dnp_parse.h"

static void test_parse_u64(void **state)
{
	uint64_t v = 7;

	(void)state;
	assert_int_equal(dnp_parse_u64("0", &v), 0);
	assert_int_equal(v, 0);
	assert_int_equal(dnp_parse_u64("010", &v), 0);
	assert_int_equal(v, 10);
	assert_int_equal(dnp_parse_u64("0x1F", &v), 0);
	assert_int_equal(v, 31);
	assert_int_equal(dnp_parse_u64("18446744073709551615", &v), 0);
	assert_true(v == UINT64_MAX);
	assert_int_equal(dnp_parse_u64("0xffffffffffffffff", &v), 0);
	assert_true(v == UINT64_MAX);

	v = 7;
	assert_int_equal(dnp_parse_u64("18446744073709551616", &v), -ERANGE);
	assert_int_equal(dnp_parse_u64("0x10000000000000000", &v), -ERANGE);
	const char *bad[] = { "", "-1", "+1", " 1", "1 ", "1x", "0x", "abc", "1.5", "1K" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(dnp_parse_u64(bad[i], &v), -EINVAL);
	assert_int_equal(dnp_parse_u64(NULL, &v), -EINVAL);
	assert_int_equal(v, 7); /* never written on failure */

	assert_int_equal(dnp_parse_u64_max("65535", 65535, &v), 0);
	assert_int_equal(v, 65535);
	assert_int_equal(dnp_parse_u64_max("65536", 65535, &v), -ERANGE);
	assert_int_equal(dnp_parse_u64_max("x", 65535, &v), -EINVAL);
}

static void test_parse_size(void **state)
{
	static const struct {
		const char *s;
		uint64_t v;
	} good[] = {
		{ "4096", 4096 },     { "64K", 65536 },     { "64k", 65536 },
		{ "64KiB", 65536 },   { "64KB", 65536 },    { "1M", 1 << 20 },
		{ "2G", 2ull << 30 }, { "1T", 1ull << 40 }, { "12B", 12 },
		{ "0x1000", 4096 },   { "0", 0 },           { "16777215T", 16777215ull << 40 },
	};
	uint64_t v = 3;

	(void)state;
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		assert_int_equal(dnp_parse_size(good[i].s, &v), 0);
		assert_true(v == good[i].v);
	}
	/* 17179869185G = 2^34 G + 1 G: 2^64 + 2^30 bytes, which must not wrap to 1 GiB. */
	v = 3;
	assert_int_equal(dnp_parse_size("17179869185G", &v), -ERANGE);
	assert_int_equal(dnp_parse_size("16777216T", &v), -ERANGE);
	assert_int_equal(dnp_parse_size("99999999999999999999", &v), -ERANGE);
	const char *bad[] = { "", "K", "-1K", "1KK", "1Ki B", "1X", "1 K", "1.5M", "1iB", "1Bi" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(dnp_parse_size(bad[i], &v), -EINVAL);
	assert_int_equal(v, 3);
}

static void test_parse_sizes(void **state)
{
	uint64_t s[4] = { 0 };

	(void)state;
	assert_int_equal(dnp_parse_sizes("1,4K,1M", s, 4), 3);
	assert_true(s[0] == 1 && s[1] == 4096 && s[2] == 1 << 20);
	assert_int_equal(dnp_parse_sizes("8", s, 1), 1);
	assert_int_equal(dnp_parse_sizes("1,2,3,4,5", s, 4), -EINVAL); /* too many */
	assert_int_equal(dnp_parse_sizes("1,,2", s, 4), -EINVAL);
	assert_int_equal(dnp_parse_sizes("1,", s, 4), -EINVAL);
	assert_int_equal(dnp_parse_sizes(",1", s, 4), -EINVAL);
	assert_int_equal(dnp_parse_sizes("", s, 4), -EINVAL);
	assert_int_equal(dnp_parse_sizes("1,x", s, 4), -EINVAL);
	assert_int_equal(dnp_parse_sizes("1,17179869185G", s, 4), -ERANGE);
	assert_int_equal(dnp_parse_sizes("1,123456789012345678901234567890123", s, 4), -EINVAL);
}

static void test_parse_duration(void **state)
{
	uint64_t ns = 5, ms = 5;

	(void)state;
	assert_int_equal(dnp_parse_duration_ns("250", 1000000, &ns), 0);
	assert_true(ns == 250000000ull);
	assert_int_equal(dnp_parse_duration_ns("250ms", 1, &ns), 0);
	assert_true(ns == 250000000ull);
	assert_int_equal(dnp_parse_duration_ns("1.5s", 1, &ns), 0);
	assert_true(ns == 1500000000ull);
	assert_int_equal(dnp_parse_duration_ns("2min", 1, &ns), 0);
	assert_true(ns == 120000000000ull);
	assert_int_equal(dnp_parse_duration_ns("7us", 1, &ns), 0);
	assert_true(ns == 7000);
	assert_int_equal(dnp_parse_duration_ns("0.0000000001s", 1, &ns), 0);
	assert_true(ns == 0); /* finer than a nanosecond */
	assert_int_equal(dnp_parse_duration_ns("0.1234567890123456789012s", 1, &ns), 0);
	assert_true(ns == 123456789);
	assert_int_equal(dnp_parse_duration_ns("18446744073709551615ns", 1, &ns), 0);
	assert_true(ns == UINT64_MAX);

	ns = 5;
	assert_int_equal(dnp_parse_duration_ns("18446744073709551616ns", 1, &ns), -ERANGE);
	assert_int_equal(dnp_parse_duration_ns("18446744074s", 1, &ns), -ERANGE);
	assert_int_equal(dnp_parse_duration_ns("10", 7, &ns), -EINVAL); /* bad default unit */
	const char *bad[] = {
		"", "s", "-1s", "1.s", ".5s", "1 s", "1sec", "1h", "1.5.5s", "0x10ms"
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(dnp_parse_duration_ns(bad[i], 1000000, &ns), -EINVAL);
	assert_int_equal(ns, 5);

	assert_int_equal(dnp_parse_duration_ms("30000", &ms), 0);
	assert_true(ms == 30000);
	assert_int_equal(dnp_parse_duration_ms("2s", &ms), 0);
	assert_true(ms == 2000);
	assert_int_equal(dnp_parse_duration_ms("1us", &ms), 0);
	assert_true(ms == 1); /* rounded up, never 0 */
	assert_int_equal(dnp_parse_duration_ms("0", &ms), 0);
	assert_true(ms == 0);
	assert_int_equal(dnp_parse_duration_ms("abc", &ms), -EINVAL);
}

static void test_parse_ipv4_port(void **state)
{
	struct sockaddr_in sa;
	char host[INET_ADDRSTRLEN];

	(void)state;
	assert_int_equal(dnp_parse_ipv4_port("127.0.0.1:7000", &sa), 0);
	assert_int_equal(sa.sin_family, AF_INET);
	assert_int_equal(ntohs(sa.sin_port), 7000);
	assert_non_null(inet_ntop(AF_INET, &sa.sin_addr, host, sizeof(host)));
	assert_string_equal(host, "127.0.0.1");
	assert_int_equal(dnp_parse_ipv4_port("10.0.0.255:65535", &sa), 0);
	assert_int_equal(ntohs(sa.sin_port), 65535);

	assert_int_equal(dnp_parse_ipv4_port("127.0.0.1:0", &sa), -ERANGE);
	assert_int_equal(dnp_parse_ipv4_port("127.0.0.1:65536", &sa), -ERANGE);
	assert_int_equal(dnp_parse_ipv4_port("127.0.0.1:99999999999999999999", &sa), -ERANGE);
	const char *bad[] = {
		"",           "127.0.0.1",     ":7000",      "127.0.0.1:", "localhost:7000",
		"1.2.3:7000", "1.2.3.4:7000x", "1.2.3.4:-1", "1.2.3.4: 7", "::1:7000",
		"1.2.3.256:7"
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(dnp_parse_ipv4_port(bad[i], &sa), -EINVAL);
	assert_int_equal(dnp_parse_ipv4_port(NULL, &sa), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_u64),       cmocka_unit_test(test_parse_size),
		cmocka_unit_test(test_parse_sizes),     cmocka_unit_test(test_parse_duration),
		cmocka_unit_test(test_parse_ipv4_port),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
