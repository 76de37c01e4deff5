/* SPDX-License-Identifier: MIT */
/* The supervisor's on-fault / on-heal commands (lofamo/tools/hooks.h), with real children. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "hooks.h"

static char dir[64];

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000ull + (uint64_t)ts.tv_nsec / 1000000ull;
}

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/test_hooks.XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* Polls until no hook runs and none is pending (at most 10 s: the test's bound, not a figure). */
static void drain(struct dnp_hooks *h)
{
	uint64_t started, failed, t0 = mono_ms(), before = ~0ull;
	unsigned running = 1;

	while (mono_ms() - t0 < 10000) {
		dnp_hooks_poll(h, mono_ms());
		dnp_hooks_counts(h, &started, &failed, &running);
		if (!running && started == before)
			return;
		before = started;
		usleep(5000);
	}
	fail_msg("hooks still running after 10 s");
}

/* The lines of dir/name, into buf; their count. */
static int read_lines(const char *name, char *buf, size_t cap)
{
	char path[128];
	FILE *f;
	size_t n;
	int lines = 0;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	buf[0] = '\0';
	f = fopen(path, "r");
	if (!f)
		return 0;
	n = fread(buf, 1, cap - 1, f);
	buf[n] = '\0';
	fclose(f);
	for (size_t i = 0; i < n; i++)
		lines += buf[i] == '\n';
	return lines;
}

static struct dnp_hooks *make(const char *on_fault, const char *on_heal, unsigned max,
			      uint64_t timeout_ms, FILE *log)
{
	struct dnp_hooks_conf c = {
		.on_fault = on_fault,
		.on_heal = on_heal,
		.nnodes = 8,
		.dim = { 2, 2, 2 },
		.max_running = max,
		.timeout_ms = timeout_ms,
		.log = log,
	};
	struct dnp_hooks *h = NULL;

	assert_int_equal(dnp_hooks_create(&c, &h), 0);
	return h;
}

static void set(struct dnp_hooks *h, uint32_t node, bool faulty, const char *dnp)
{
	struct dnp_hooks_state st = {
		.faulty = faulty, .host = "ok", .dnp = dnp, .path = "service", .t_ms = 1234
	};

	assert_int_equal(dnp_hooks_set(h, node, &st), 0);
}

/* Many events about a node that stays faulty: one on-fault; healthy again: one on-heal. */
static void test_hooks_once_per_transition(void **state)
{
	char cmd[256], out[4096];
	struct dnp_hooks *h;

	(void)state;
	snprintf(cmd, sizeof(cmd),
		 "echo \"$DNP_EVENT $DNP_NODE_ID $DNP_NODE_COORD $DNP_DNP_STATE\" >>%s/ev", dir);
	h = make(cmd, cmd, 4, 10000, NULL);
	set(h, 6, false, "ok"); /* healthy from the start: nothing */
	drain(h);
	assert_int_equal(read_lines("ev", out, sizeof(out)), 0);
	for (int i = 0; i < 5; i++) {
		set(h, 6, true, i < 3 ? "faulty" : "dead");
		dnp_hooks_poll(h, mono_ms());
	}
	drain(h);
	set(h, 6, true, "dead");
	drain(h);
	assert_int_equal(read_lines("ev", out, sizeof(out)), 1);
	assert_string_equal(out, "fault 6 0,1,1 faulty\n");
	for (int i = 0; i < 3; i++)
		set(h, 6, false, "ok");
	drain(h);
	assert_int_equal(read_lines("ev", out, sizeof(out)), 2);
	assert_string_equal(out, "fault 6 0,1,1 faulty\nheal 6 0,1,1 ok\n");
	/* Faulty and healthy again before a poll: no transition to tell. */
	set(h, 2, true, "faulty");
	set(h, 2, false, "ok");
	drain(h);
	assert_int_equal(read_lines("ev", out, sizeof(out)), 2);
	assert_int_equal(dnp_hooks_set(h, 8, &(struct dnp_hooks_state){ 0 }), -ERANGE);
	dnp_hooks_destroy(h);
}

/* The JSON of the event, as the command sees it. */
static void test_hooks_json(void **state)
{
	char cmd[256], out[4096];
	struct dnp_hooks *h;

	(void)state;
	snprintf(cmd, sizeof(cmd), "printf '%%s\\n' \"$DNP_EVENT_JSON\" >%s/json", dir);
	h = make(cmd, NULL, 1, 10000, NULL);
	set(h, 5, true, "faulty\"x"); /* a name that is not one is not passed on as is */
	drain(h);
	assert_int_equal(read_lines("json", out, sizeof(out)), 1);
	assert_string_equal(out,
			    "{\"event\":\"fault\",\"node\":5,\"coord\":[1,0,1],\"host\":\"ok\","
			    "\"dnp\":\"faulty?x\",\"path\":\"service\",\"t_ms\":1234}\n");
	/* No on-heal command: healing runs nothing, and a later fault runs on-fault again. */
	set(h, 5, false, "ok");
	drain(h);
	set(h, 5, true, "dead");
	drain(h);
	assert_int_equal(read_lines("json", out, sizeof(out)), 1);
	assert_non_null(strstr(out, "\"dnp\":\"dead\""));
	dnp_hooks_destroy(h);
}

/*
 * A slow command does not hold the caller: dnp_hooks_poll returns while it
 * runs; past the timeout it is killed and logged; a failing command is logged.
 */
static void test_hooks_slow_and_failing(void **state)
{
	char logpath[128], out[4096];
	uint64_t started, failed;
	unsigned running;
	struct dnp_hooks *h;
	FILE *log;

	(void)state;
	snprintf(logpath, sizeof(logpath), "%s/log", dir);
	log = fopen(logpath, "w");
	assert_non_null(log);
	h = make("sleep 30", "exit 3", 2, 300, log);
	set(h, 1, true, "faulty");
	dnp_hooks_poll(h, mono_ms());
	dnp_hooks_counts(h, &started, &failed, &running);
	assert_int_equal(started, 1);
	assert_int_equal(running, 1); /* returned while sleep 30 runs */
	/* Its heal waits for it: one hook per node at a time. */
	set(h, 1, false, "ok");
	dnp_hooks_poll(h, mono_ms());
	dnp_hooks_counts(h, &started, &failed, &running);
	assert_int_equal(started, 1);
	drain(h); /* the timeout kills sleep 30, then exit 3 runs */
	dnp_hooks_counts(h, &started, &failed, &running);
	assert_int_equal(started, 2);
	assert_int_equal(failed, 2);
	fclose(log);
	read_lines("log", out, sizeof(out));
	assert_non_null(strstr(out, "on-fault node 1: killed after"));
	assert_non_null(strstr(out, "on-heal node 1: exited 3"));
	dnp_hooks_destroy(h);
}

/* At most max_running hooks at once; the others wait their turn and all run. */
static void test_hooks_bounded(void **state)
{
	char cmd[256], out[4096];
	uint64_t started, failed;
	unsigned running, most = 0;
	struct dnp_hooks *h;
	uint64_t t0;

	(void)state;
	snprintf(cmd, sizeof(cmd), "sleep 0.2; echo $DNP_NODE_ID >>%s/b", dir);
	h = make(cmd, NULL, 2, 10000, NULL);
	for (uint32_t i = 0; i < 7; i++)
		set(h, i, true, "faulty");
	t0 = mono_ms();
	do {
		dnp_hooks_poll(h, mono_ms());
		dnp_hooks_counts(h, &started, &failed, &running);
		most = running > most ? running : most;
		assert_true(running <= 2);
		usleep(5000);
	} while ((running || started < 7) && mono_ms() - t0 < 10000);
	assert_int_equal(most, 2);
	assert_int_equal(started, 7);
	assert_int_equal(failed, 0);
	assert_int_equal(read_lines("b", out, sizeof(out)), 7);
	dnp_hooks_destroy(h);
}

/* Destroy kills what still runs (no child left behind). */
static void test_hooks_destroy_kills(void **state)
{
	struct dnp_hooks *h;
	uint64_t started, failed;
	unsigned running;
	struct dnp_hooks_conf bad = { .nnodes = 8, .dim = { 2, 2, 2 }, .timeout_ms = 1 };

	(void)state;
	assert_int_equal(dnp_hooks_create(&bad, &h), -EINVAL); /* max_running 0 */
	bad.max_running = 1;
	bad.dim[2] = 3;
	assert_int_equal(dnp_hooks_create(&bad, &h), -EINVAL); /* 2x2x3 != 8 */
	h = make("sleep 30", NULL, 1, 60000, NULL);
	set(h, 0, true, "dead");
	dnp_hooks_poll(h, mono_ms());
	dnp_hooks_counts(h, &started, &failed, &running);
	assert_int_equal(running, 1);
	dnp_hooks_destroy(h); /* returns at once: sleep 30 killed and reaped */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_hooks_once_per_transition, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hooks_json, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hooks_slow_and_failing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hooks_bounded, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hooks_destroy_kills, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
