/* SPDX-License-Identifier: MIT */
/*
 * test_file.c — common/dnp_file.h: a small file read whole and ended with a
 * NUL, a long one cut to the buffer, an empty, a missing and a bad-size case.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "dnp_file.h"

/* Writes text into a fresh temporary file whose name goes to path. */
static void temp_file(char *path, size_t size, const char *text)
{
	FILE *f;
	int fd;

	snprintf(path, size, "/tmp/test_file.XXXXXX");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	assert_non_null(f);
	assert_true(fputs(text, f) >= 0);
	assert_int_equal(fclose(f), 0);
}

static void test_file_read_small(void **state)
{
	char path[64], buf[8];

	(void)state;
	temp_file(path, sizeof(path), "-42\n");
	memset(buf, 'x', sizeof(buf));
	assert_int_equal(dnp_read_small(path, buf, sizeof(buf)), 4);
	assert_string_equal(buf, "-42\n");
	unlink(path);

	temp_file(path, sizeof(path), "0123456789");
	assert_int_equal(dnp_read_small(path, buf, sizeof(buf)), 7); /* cut, still a string */
	assert_string_equal(buf, "0123456");
	unlink(path);
}

static void test_file_errors(void **state)
{
	char path[64], buf[8] = "keep";

	(void)state;
	temp_file(path, sizeof(path), "");
	assert_int_equal(dnp_read_small(path, buf, sizeof(buf)), -ENODATA);
	assert_int_equal(dnp_read_small(path, buf, 0), -EINVAL);
	unlink(path);
	assert_int_equal(dnp_read_small(path, buf, sizeof(buf)), -ENOENT);
	assert_int_equal(dnp_read_small("/", buf, sizeof(buf)), -EISDIR);
	assert_string_equal(buf, "keep");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_file_read_small),
		cmocka_unit_test(test_file_errors),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
