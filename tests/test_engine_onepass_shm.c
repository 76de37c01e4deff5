/* SPDX-License-Identifier: MIT */
/*
 * test_engine_onepass_shm.c — the shm transport's tx_reserve/tx_commit
 * (h-onepass; transport.h): frames written in place arrive exactly, in
 * order, interleaved with tx_burst; a reserve changes nothing until its
 * commit; a full ring reserves nothing; a commit beyond the reserve or a
 * length over the cap sends nothing. Also through the impairment wrapper
 * dnpd puts around every link: passed through while nothing is impaired,
 * -ENOTSUP (copy this time) while something is.
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

#include "impair.h"
#include "pkt.h"
#include "transport.h"

#define DEPTH 8u

static char path[256];
static struct dnp_transport *t0, *t1;

static int setup(void **state)
{
	struct dnp_transport_conf c[2];

	(void)state;
	snprintf(path, sizeof(path), "/dev/shm/test-onepass-shm-%d", (int)getpid());
	unlink(path);
	for (unsigned s = 0; s < 2; s++) {
		memset(&c[s], 0, sizeof(c[s]));
		c[s].local = c[s].remote = path;
		c[s].side = s;
		c[s].frame_max = DNP_MAX_FRAME;
		c[s].depth = DEPTH;
		c[s].options = "wait_ms=5000";
	}
	assert_int_equal(dnp_transport_shm.open(&c[0], &t0), 0);
	assert_int_equal(dnp_transport_shm.open(&c[1], &t1), 0);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	dnp_transport_shm.close(t0);
	dnp_transport_shm.close(t1);
	unlink(path);
	return 0;
}

static void pattern(uint8_t *p, uint32_t len, unsigned seed)
{
	for (uint32_t i = 0; i < len; i++)
		p[i] = (uint8_t)(seed * 31 + i * 7);
}

static void expect_frame(const struct dnp_rx_frame *f, uint32_t len, unsigned seed)
{
	uint8_t want[DNP_MAX_FRAME];

	pattern(want, len, seed);
	assert_int_equal(f->len, len);
	assert_memory_equal(f->data, want, len);
}

static void test_reserve_commit(void **state)
{
	(void)state;
	const struct dnp_transport_ops *o = &dnp_transport_shm;
	uint8_t *b[DEPTH], *b2[DEPTH];
	uint32_t cap = 0, lens[DEPTH];
	struct dnp_rx_frame rx[DEPTH];

	assert_int_equal(o->tx_reserve(t0, b, &cap, 3), 3);
	assert_true(cap >= DNP_MAX_FRAME);
	/* nothing was published by the reserve */
	assert_int_equal(o->rx_burst(t1, rx, DEPTH), 0);
	/* a second reserve gives the same places */
	assert_int_equal(o->tx_reserve(t0, b2, &cap, 3), 3);
	assert_memory_equal(b, b2, sizeof(b[0]) * 3);
	pattern(b[0], 100, 1);
	pattern(b[1], DNP_MAX_FRAME, 2);
	lens[0] = 100;
	lens[1] = DNP_MAX_FRAME;
	assert_int_equal(o->tx_commit(t0, lens, 2), 2);
	/* the next place is the third one reserved */
	assert_int_equal(o->tx_reserve(t0, b2, &cap, 1), 1);
	assert_ptr_equal(b2[0], b[2]);
	/* a copied frame goes after them, into the third place */
	uint8_t f3[64];
	pattern(f3, 64, 3);
	struct dnp_tx_frame tf = { f3, 64 };
	assert_int_equal(o->tx_burst(t0, &tf, 1), 1);
	assert_int_equal(o->rx_burst(t1, rx, DEPTH), 3);
	expect_frame(&rx[0], 100, 1);
	expect_frame(&rx[1], DNP_MAX_FRAME, 2);
	expect_frame(&rx[2], 64, 3);
}

static void test_full_and_errors(void **state)
{
	(void)state;
	const struct dnp_transport_ops *o = &dnp_transport_shm;
	uint8_t *b[2 * DEPTH];
	uint32_t cap = 0, lens[2 * DEPTH];
	struct dnp_rx_frame rx[2 * DEPTH];

	assert_int_equal(o->tx_reserve(t0, b, &cap, 2 * DEPTH), DEPTH); /* at most the ring */
	for (unsigned i = 0; i < DEPTH; i++) {
		lens[i] = 64 + 16 * i;
		pattern(b[i], lens[i], 10 + i);
	}
	lens[0] = cap + 1;
	assert_int_equal(o->tx_commit(t0, lens, DEPTH), -EMSGSIZE);
	assert_int_equal(o->rx_burst(t1, rx, DEPTH), 0); /* nothing sent */
	lens[0] = 64;
	assert_int_equal(o->tx_commit(t0, lens, DEPTH + 1), -EINVAL);
	assert_int_equal(o->tx_commit(t0, lens, DEPTH), (int)DEPTH);
	assert_int_equal(o->tx_reserve(t0, b, &cap, 1), 0); /* full */
	assert_int_equal(o->rx_burst(t1, rx, 2 * DEPTH), (int)DEPTH);
	for (unsigned i = 0; i < DEPTH; i++)
		expect_frame(&rx[i], lens[i], 10 + i);
	/* released by the next rx_burst: room again */
	assert_int_equal(o->rx_burst(t1, rx, 1), 0);
	assert_int_equal(o->tx_reserve(t0, b, &cap, 2), 2);
}

static void test_through_impair(void **state)
{
	(void)state;
	struct dnp_impair_conf off, loss;
	struct dnp_transport *w;
	uint8_t *b[2];
	uint32_t cap = 0, len = 80;
	struct dnp_rx_frame rx[2];

	assert_int_equal(dnp_impair_parse("off", &off), 0);
	assert_int_equal(dnp_impair_parse("loss=50%", &loss), 0);
	assert_int_equal(dnp_impair_wrap(t0, 0, &off, &w), 0);
	const struct dnp_transport_ops *o = dnp_transport_ops_of(w);
	assert_non_null(o->tx_reserve);
	assert_int_equal(o->tx_reserve(w, b, &cap, 2), 2);
	pattern(b[0], len, 5);
	assert_int_equal(o->tx_commit(w, &len, 1), 1);
	assert_int_equal(dnp_transport_shm.rx_burst(t1, rx, 2), 1);
	expect_frame(&rx[0], len, 5);
	loss.dirs = 1; /* direction 0 */
	dnp_impair_set(w, &loss);
	assert_int_equal(o->tx_reserve(w, b, &cap, 2), -ENOTSUP);
	dnp_impair_set(w, &off);
	assert_int_equal(o->tx_reserve(w, b, &cap, 2), 2);
	/* the wrapper closes its inner link: keep t0 for teardown */
	t0 = NULL;
	o->close(w);
}

static int teardown_wrapped(void **state)
{
	(void)state;
	dnp_transport_shm.close(t1);
	unlink(path);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_reserve_commit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_full_and_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_through_impair, setup, teardown_wrapped),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
