/* SPDX-License-Identifier: MIT */
/*
 * The one log format of dnpd, dnp-hfm and dnp-supervisor (common/dnp_log.h):
 * the line's fields, the levels and their syslog priorities, the journald
 * prefix and its detection from JOURNAL_STREAM, the threshold, the cut of an
 * over-long message, and the version line (common/dnp_version.h).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "dnp_log.h"
#include "dnp_version.h"

/* 2026-12-05 04:14:22.123456789 UTC */
static const struct timespec ts = { .tv_sec = 1796444062, .tv_nsec = 123456789 };

static void test_dnp_log_line(void **state)
{
	struct dnp_log_fields f = { .level = DNP_LOG_WARN,
				    .ts = ts,
				    .prog = "dnpd",
				    .node = "node 3 (1,1,0)",
				    .msg = "link X+ UP -> BROKEN" };
	char buf[256];
	size_t n;

	(void)state;
	n = dnp_log_format(buf, sizeof(buf), &f);
	assert_string_equal(
		buf, "2026-12-05T04:14:22.123Z warn dnpd node 3 (1,1,0): link X+ UP -> BROKEN\n");
	assert_int_equal(n, strlen(buf));
	/* no node: the supervisor speaks for the torus */
	f.node = NULL;
	f.prog = "dnp-supervisor";
	f.level = DNP_LOG_INFO;
	f.msg = "node 3 host ok (service)";
	dnp_log_format(buf, sizeof(buf), &f);
	assert_string_equal(buf, "2026-12-05T04:14:22.123Z info dnp-supervisor: node 3 host ok "
				 "(service)\n");
	f.node = "";
	dnp_log_format(buf, sizeof(buf), &f);
	assert_non_null(strstr(buf, " info dnp-supervisor: node 3"));
}

static void test_dnp_log_levels(void **state)
{
	static const char *const names[] = { "error", "warn", "info", "debug" };
	static const int prio[] = { 3, 4, 6, 7 };
	enum dnp_log_level l;

	(void)state;
	for (int i = DNP_LOG_ERR; i <= DNP_LOG_DEBUG; i++) {
		assert_string_equal(dnp_log_level_name(i), names[i]);
		assert_int_equal(dnp_log_priority(i), prio[i]);
		assert_int_equal(dnp_log_level_parse(names[i], &l), 0);
		assert_int_equal(l, i);
	}
	assert_string_equal(dnp_log_level_name(4), "?");
	assert_int_equal(dnp_log_level_parse("WARNING", &l), 0);
	assert_int_equal(l, DNP_LOG_WARN);
	assert_int_equal(dnp_log_level_parse("err", &l), 0);
	assert_int_equal(l, DNP_LOG_ERR);
	assert_int_equal(dnp_log_level_parse("3", &l), 0);
	assert_int_equal(l, DNP_LOG_DEBUG);
	assert_int_equal(dnp_log_level_parse("4", &l), -EINVAL);
	assert_int_equal(dnp_log_level_parse("", &l), -EINVAL);
	assert_int_equal(dnp_log_level_parse("verbose", &l), -EINVAL);
	assert_int_equal(dnp_log_level_parse(NULL, &l), -EINVAL);
}

/* Under the journal: the priority instead of the timestamp, the rest unchanged. */
static void test_dnp_log_journal_prefix(void **state)
{
	struct dnp_log_fields f = {
		.journal = true, .ts = ts, .prog = "dnp-hfm", .node = "node 3"
	};
	char buf[256];

	(void)state;
	f.level = DNP_LOG_ERR;
	f.msg = "service network socket: Permission denied";
	dnp_log_format(buf, sizeof(buf), &f);
	assert_string_equal(buf,
			    "<3>error dnp-hfm node 3: service network socket: Permission denied\n");
	f.level = DNP_LOG_WARN;
	f.msg = "alarm link X+ sick on node 3 (alarm 1 to the supervisor)";
	dnp_log_format(buf, sizeof(buf), &f);
	assert_string_equal(buf, "<4>warn dnp-hfm node 3: alarm link X+ sick on node 3 "
				 "(alarm 1 to the supervisor)\n");
	f.level = DNP_LOG_INFO;
	dnp_log_format(buf, sizeof(buf), &f);
	assert_memory_equal(buf, "<6>info ", 8);
	f.level = DNP_LOG_DEBUG;
	dnp_log_format(buf, sizeof(buf), &f);
	assert_memory_equal(buf, "<7>debug ", 9);
}

static void test_dnp_log_journal_match(void **state)
{
	(void)state;
	assert_true(dnp_log_journal_match("8:12345", 8, 12345));
	assert_false(dnp_log_journal_match("8:12345", 8, 12346));
	assert_false(dnp_log_journal_match("9:12345", 8, 12345));
	assert_false(dnp_log_journal_match(NULL, 8, 12345));
	assert_false(dnp_log_journal_match("", 8, 12345));
	assert_false(dnp_log_journal_match("8", 8, 12345));
	assert_false(dnp_log_journal_match("8:", 8, 12345));
	assert_false(dnp_log_journal_match(":12345", 8, 12345));
	assert_false(dnp_log_journal_match("8:12345x", 8, 12345));
}

/* One line per message: a newline inside is blanked, an over-long one is cut with "...". */
static void test_dnp_log_one_line(void **state)
{
	struct dnp_log_fields f = { .level = DNP_LOG_INFO, .ts = ts, .prog = "dnpd" };
	char msg[300], buf[64];
	size_t n;

	(void)state;
	f.msg = "two\nlines";
	n = dnp_log_format(buf, sizeof(buf), &f);
	assert_string_equal(buf, "2026-12-05T04:14:22.123Z info dnpd: two lines\n");
	memset(msg, 'a', sizeof(msg) - 1);
	msg[sizeof(msg) - 1] = 0;
	f.msg = msg;
	n = dnp_log_format(buf, sizeof(buf), &f);
	assert_int_equal(n, sizeof(buf) - 1);
	assert_int_equal(strlen(buf), n);
	assert_string_equal(buf + n - 4, "...\n");
	assert_int_equal(dnp_log_format(buf, 8, &f), 0);
}

/* The logger proper: a file as the stream, the threshold, the node, and journald's stream. */
static void test_dnp_log_stream(void **state)
{
	char path[] = "/tmp/test_dnp_log.XXXXXX", line[256], env[64];
	struct stat st;
	int fd = mkstemp(path);
	FILE *f;

	(void)state;
	assert_true(fd >= 0);
	f = fdopen(fd, "w+");
	assert_non_null(f);
	unsetenv("JOURNAL_STREAM");
	dnp_log_setup("dnpd", f, DNP_LOG_WARN);
	dnp_log_set_node("node 5 (1,0,1)");
	assert_true(dnp_log_enabled(DNP_LOG_WARN));
	assert_false(dnp_log_enabled(DNP_LOG_INFO));
	dnp_log(DNP_LOG_INFO, "dropped %d", 1);
	dnp_log(DNP_LOG_WARN, "kept %d", 2);
	dnp_log_set_level(DNP_LOG_DEBUG);
	assert_int_equal(dnp_log_get_level(), DNP_LOG_DEBUG);
	dnp_log(DNP_LOG_DEBUG, "now kept %d", 3);
	/* the same stream named by JOURNAL_STREAM: priorities, no timestamps */
	assert_int_equal(fstat(fd, &st), 0);
	snprintf(env, sizeof(env), "%llu:%llu", (unsigned long long)st.st_dev,
		 (unsigned long long)st.st_ino);
	setenv("JOURNAL_STREAM", env, 1);
	dnp_log_setup("dnpd", f, DNP_LOG_INFO);
	dnp_log(DNP_LOG_INFO, "to the journal");
	dnp_log_to(f, DNP_LOG_WARN, "hook %s", "on-fault node 5: exited 1");
	unsetenv("JOURNAL_STREAM");
	rewind(f);
	assert_non_null(fgets(line, sizeof(line), f));
	assert_non_null(strstr(line, "Z warn dnpd node 5 (1,0,1): kept 2\n"));
	assert_int_equal(line[4], '-');
	assert_int_equal(line[10], 'T');
	assert_non_null(fgets(line, sizeof(line), f));
	assert_non_null(strstr(line, "Z debug dnpd node 5 (1,0,1): now kept 3\n"));
	assert_non_null(fgets(line, sizeof(line), f));
	assert_string_equal(line, "<6>info dnpd node 5 (1,0,1): to the journal\n");
	assert_non_null(fgets(line, sizeof(line), f));
	assert_string_equal(line, "<4>warn dnpd node 5 (1,0,1): hook on-fault node 5: exited 1\n");
	assert_null(fgets(line, sizeof(line), f));
	dnp_log_setup("dnpd", stderr, DNP_LOG_WARN);
	fclose(f);
	unlink(path);
}

/* --version's line: "PROG (SoftDNP) VERSION", VERSION starting with the project's. */
static void test_dnp_log_version(void **state)
{
	const char *v = dnp_version();

	(void)state;
	assert_non_null(v);
	assert_true(v[0] >= '0' && v[0] <= '9');
	assert_null(strchr(v, ' '));
	assert_null(strchr(v, '\n'));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dnp_log_line),
		cmocka_unit_test(test_dnp_log_levels),
		cmocka_unit_test(test_dnp_log_journal_prefix),
		cmocka_unit_test(test_dnp_log_journal_match),
		cmocka_unit_test(test_dnp_log_one_line),
		cmocka_unit_test(test_dnp_log_stream),
		cmocka_unit_test(test_dnp_log_version),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
