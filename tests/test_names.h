/* SPDX-License-Identifier: MIT */
/*
 * test_names.h — checks a value-to-name function (dnp_op_name(),
 * dnp_pkt_kind_name()...) against a table of expected names, so that each
 * test states its names as data.
 */
#ifndef DNP_TEST_NAMES_H
#define DNP_TEST_NAMES_H

#include <stddef.h>

struct test_name {
	unsigned value;
	const char *name; /* "?" for a value the function must not know */
};

#define TEST_NAMES_CHECK(fn, table) test_names_check(fn, table, sizeof(table) / sizeof(table[0]))

/* Asserts name(t[i].value) is t[i].name for every entry (a cmocka test step). */
static inline void test_names_check(const char *(*name)(unsigned), const struct test_name *t,
				    size_t n)
{
	for (size_t i = 0; i < n; i++)
		assert_string_equal(name(t[i].value), t[i].name);
}

#endif /* DNP_TEST_NAMES_H */
