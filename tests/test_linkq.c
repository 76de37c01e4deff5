/* SPDX-License-Identifier: MIT */
/*
 * test_linkq — the byte-queue limit per link (transport/linkq.h, dnpd
 * --link-queue) over the shm transport's tx_queued: frames go to a link only
 * while fewer than the limit's bytes wait in it, the link opens again as the
 * peer drains it, the byte count stays exact across ring laps and after a
 * restarted end takes its side over, and a limit of 0 changes nothing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "linkq.h"
#include "transport.h"

#define FRAME_MAX 4160u
#define DEPTH 16u

static char dir_path[64];

static void open_end(const char *path, unsigned side, struct dnp_transport **t)
{
	struct dnp_transport_conf c = {
		.local = path,
		.remote = "",
		.side = side,
		.frame_max = FRAME_MAX,
		.depth = DEPTH,
	};

	assert_int_equal(dnp_transport_shm.open(&c, t), 0);
}

static void open_pair(const char *name, char *path, struct dnp_transport **t0,
		      struct dnp_transport **t1)
{
	snprintf(path, 128, "%s/%s", dir_path, name);
	open_end(path, 0, t0);
	open_end(path, 1, t1);
}

static int send_one(struct dnp_transport *t, uint32_t len)
{
	static uint8_t buf[FRAME_MAX];
	struct dnp_tx_frame f = { buf, len };

	return dnp_transport_shm.tx_burst(t, &f, 1);
}

/* Frames go while under the limit; the link opens again once the peer releases one. */
static void test_linkq_limit_and_drain(void **state)
{
	struct dnp_transport *t0, *t1;
	struct dnp_rx_frame rx[DEPTH];
	struct dnp_linkq q = { .limit = 8192 };
	char path[128];
	unsigned n = 0;

	(void)state;
	open_pair("lq.link", path, &t0, &t1);
	assert_int_equal(dnp_transport_shm.tx_queued(t0), 0);
	while (dnp_linkq_open(&q, t0)) {
		assert_int_equal(send_one(t0, FRAME_MAX), 1);
		dnp_linkq_sent(&q);
		assert_true(++n <= DEPTH);
	}
	/* 0 and 4160 bytes were under 8192, 8320 is not: two frames, the second crossing */
	assert_int_equal(n, 2);
	assert_true(q.held);
	assert_int_equal(q.holds, 1);
	assert_int_equal(q.handoffs, 2);
	assert_int_equal(q.ahead_max, FRAME_MAX);
	assert_int_equal(q.ahead_sum, FRAME_MAX);
	assert_int_equal(dnp_transport_shm.tx_queued(t0), 2 * FRAME_MAX);
	/* taken but not released (zero-copy): still queued, still held */
	assert_int_equal(dnp_transport_shm.rx_burst(t1, rx, 1), 1);
	assert_false(dnp_linkq_open(&q, t0));
	assert_int_equal(q.holds, 2);
	/* the next rx_burst releases the first frame */
	assert_int_equal(dnp_transport_shm.rx_burst(t1, rx, 1), 1);
	assert_int_equal(dnp_transport_shm.tx_queued(t0), FRAME_MAX);
	assert_true(dnp_linkq_open(&q, t0));
	assert_false(q.held);
	assert_int_equal(q.last, FRAME_MAX);
	assert_int_equal(dnp_transport_shm.rx_burst(t1, rx, DEPTH), 0);
	assert_int_equal(dnp_transport_shm.tx_queued(t0), 0);
	dnp_transport_shm.close(t1);
	dnp_transport_shm.close(t0);
}

/* The count is exact frame by frame over many laps of the ring, with mixed lengths. */
static void test_linkq_exact_over_laps(void **state)
{
	struct dnp_transport *t0, *t1;
	struct dnp_rx_frame rx[DEPTH];
	uint32_t lens[DEPTH * 2];
	unsigned head = 0, tail = 0, held = 0;
	uint64_t queued = 0;
	char path[128];

	(void)state;
	open_pair("laps.link", path, &t0, &t1);
	for (unsigned step = 0; step < 40 * DEPTH; step++) {
		unsigned burst = step % 5;

		/* send up to 'burst' frames of 16..4160 bytes */
		for (unsigned k = 0; k < burst; k++) {
			uint32_t len =
				16u + (uint32_t)((step * 977u + k * 131u) % (FRAME_MAX - 15u));
			int r = send_one(t0, len);

			if (r == 0)
				break;
			assert_int_equal(r, 1);
			lens[tail++ % (DEPTH * 2)] = len;
			queued += len;
		}
		assert_int_equal(dnp_transport_shm.tx_queued(t0), queued);
		/* take up to 3: the frames held since the last rx_burst are released now */
		int got = dnp_transport_shm.rx_burst(t1, rx, 3);

		assert_true(got >= 0);
		for (unsigned k = 0; k < held; k++)
			queued -= lens[head++ % (DEPTH * 2)];
		held = (unsigned)got;
		assert_int_equal(dnp_transport_shm.tx_queued(t0), queued);
	}
	assert_true(tail > 4 * DEPTH);
	dnp_transport_shm.close(t1);
	dnp_transport_shm.close(t0);
}

/* An end that takes its side over counts the frames its predecessor left in the ring. */
static void test_linkq_takeover_counts_left_frames(void **state)
{
	struct dnp_transport *t0, *t1;
	char path[128];

	(void)state;
	open_pair("take.link", path, &t0, &t1);
	assert_int_equal(send_one(t0, 100), 1);
	assert_int_equal(send_one(t0, 2000), 1);
	dnp_transport_shm.close(t0);
	open_end(path, 0, &t0);
	assert_int_equal(dnp_transport_shm.tx_queued(t0), 2100);
	assert_int_equal(send_one(t0, 16), 1);
	assert_int_equal(dnp_transport_shm.tx_queued(t0), 2116);
	dnp_transport_shm.close(t1);
	dnp_transport_shm.close(t0);
}

/* Limit 0 (the default): always open, no counters, the transport is not asked. */
static void test_linkq_off(void **state)
{
	struct dnp_transport *t0, *t1;
	struct dnp_linkq q = { 0 };
	char path[128];

	(void)state;
	open_pair("off.link", path, &t0, &t1);
	for (unsigned i = 0; i < DEPTH; i++) {
		assert_true(dnp_linkq_open(&q, t0));
		assert_int_equal(send_one(t0, FRAME_MAX), 1);
		dnp_linkq_sent(&q);
	}
	assert_false(q.held);
	assert_int_equal(q.holds + q.handoffs + q.ahead_sum + q.ahead_max, 0);
	dnp_transport_shm.close(t1);
	dnp_transport_shm.close(t0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_linkq_limit_and_drain),
		cmocka_unit_test(test_linkq_exact_over_laps),
		cmocka_unit_test(test_linkq_takeover_counts_left_frames),
		cmocka_unit_test(test_linkq_off),
	};
	int rc;

	snprintf(dir_path, sizeof(dir_path), "/dev/shm/dnp-linkq-XXXXXX");
	if (!mkdtemp(dir_path)) {
		snprintf(dir_path, sizeof(dir_path), "/tmp/dnp-linkq-XXXXXX");
		if (!mkdtemp(dir_path))
			return 1;
	}
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	rmdir(dir_path);
	return rc;
}
