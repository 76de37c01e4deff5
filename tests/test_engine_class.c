/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for traffic classes: the arbiter (dnp-core/arb.h) on its own
 * (strict order, its starvation bound, weighted round robin) and in the
 * engine (class order at injection and at a router output, classes that
 * interleave the fragments of their messages, the class check of a
 * command). The engine runs on the harness's X ring (test_engine_harness.h).
 */
#include "test_engine_harness.h"

#include "arb.h"

/* Grants n times among avail; counts[c] gets class c's grants, order[] their sequence. */
static void run_arb(struct dnp_arb *a, unsigned avail, unsigned n, unsigned *counts, uint8_t *order)
{
	for (unsigned i = 0; i < n; i++) {
		int c = dnp_arb_pick(a, avail);

		assert_true(c >= 0 && c < (int)DNP_ARB_CLASSES);
		assert_true(avail >> c & 1u); /* only a class that can go */
		dnp_arb_grant(a, (unsigned)c, avail);
		if (counts)
			counts[c]++;
		if (order)
			order[i] = (uint8_t)c;
	}
}

/* Strict: the top class goes, and the lower one gets exactly every (N+1)th grant. */
static void test_arb_strict_order_and_bound(void **state)
{
	struct dnp_arb a;
	uint8_t order[200];
	const unsigned n = 5;

	(void)state;
	assert_int_equal(dnp_arb_pick(&a, 0), -1);
	dnp_arb_init(&a, DNP_ARB_STRICT, n);
	assert_int_equal(dnp_arb_pick(&a, 1u << 2), 2);
	/* classes 3 and 0 both waiting: 3 x5, 0, 3 x5, 0 ... */
	run_arb(&a, 1u << 3 | 1u << 0, 60, NULL, order);
	for (unsigned i = 0; i < 60; i++)
		assert_int_equal(order[i], i % (n + 1) == n ? 0 : 3);
	/* the lower class not waiting: the top goes every time, no debt builds */
	dnp_arb_init(&a, DNP_ARB_STRICT, n);
	run_arb(&a, 1u << 3, 50, NULL, NULL);
	assert_int_equal(dnp_arb_pick(&a, 1u << 3 | 1u << 1), 3);
	/* default bound */
	dnp_arb_init(&a, DNP_ARB_STRICT, 0);
	run_arb(&a, 1u << 7 | 1u << 6, 2 * (DNP_ARB_STARVE_DEFAULT + 1), NULL, order);
	for (unsigned i = 0; i < 2 * (DNP_ARB_STARVE_DEFAULT + 1); i++)
		assert_int_equal(order[i],
				 i % (DNP_ARB_STARVE_DEFAULT + 1) == DNP_ARB_STARVE_DEFAULT ? 6 :
											      7);
}

/*
 * Strict, every class waiting at once and some coming and going: no class
 * that can go is ever passed over by more than N consecutive grants to
 * higher classes, and the top class still beats the next one. (With all
 * eight waiting and N = 3 the guarantee costs the top class most grants:
 * each lower class takes at least one grant in N + 1.)
 */
static void test_arb_strict_bound_all_classes(void **state)
{
	struct dnp_arb a;
	unsigned run[DNP_ARB_CLASSES] = { 0 }, counts[DNP_ARB_CLASSES] = { 0 };
	const unsigned n = 3;
	uint32_t x = 12345;

	(void)state;
	dnp_arb_init(&a, DNP_ARB_STRICT, n);
	for (unsigned i = 0; i < 20000; i++) {
		x = x * 1103515245u + 12345u;
		unsigned avail = (x >> 8) & 0xffu;
		if (i < 10000)
			avail = 0xffu; /* first all waiting, then a random set */
		if (!avail)
			continue;
		int c = dnp_arb_pick(&a, avail);
		assert_true(c >= 0 && (avail >> c & 1u));
		dnp_arb_grant(&a, (unsigned)c, avail);
		counts[c]++;
		for (unsigned k = 0; k < DNP_ARB_CLASSES; k++) {
			if ((unsigned)c == k)
				run[k] = 0;
			else if ((avail >> k & 1u) && (unsigned)c > k)
				assert_true(++run[k] <= n);
		}
	}
	assert_true(counts[7] > counts[6]);
	for (unsigned k = 0; k < DNP_ARB_CLASSES; k++)
		assert_true(counts[k] > 0);
}

/* WRR: class c gets 2^c grants per round among the classes waiting. */
static void test_arb_wrr_weights(void **state)
{
	struct dnp_arb a;
	unsigned counts[DNP_ARB_CLASSES] = { 0 };
	uint8_t order[90];

	(void)state;
	dnp_arb_init(&a, DNP_ARB_WRR, 0);
	run_arb(&a, 1u << 3 | 1u << 0, 90, counts, order);
	assert_int_equal(counts[3], 80);
	assert_int_equal(counts[0], 10);
	/* each round of 9: eight of class 3, then one of class 0 */
	for (unsigned i = 0; i < 90; i++)
		assert_int_equal(order[i], i % 9 == 8 ? 0 : 3);
	memset(counts, 0, sizeof(counts));
	dnp_arb_init(&a, DNP_ARB_WRR, 0);
	run_arb(&a, 0x0fu, 15 * 10, counts, NULL);
	for (unsigned c = 0; c < 4; c++)
		assert_int_equal(counts[c], 10u << c);
	/* a class alone goes every time */
	memset(counts, 0, sizeof(counts));
	run_arb(&a, 1u << 0, 7, counts, NULL);
	assert_int_equal(counts[0], 7);
}

static void test_arb_parse(void **state)
{
	uint8_t p = 9;

	(void)state;
	assert_int_equal(dnp_arb_parse("strict", &p), 0);
	assert_int_equal(p, DNP_ARB_STRICT);
	assert_int_equal(dnp_arb_parse("wrr", &p), 0);
	assert_int_equal(p, DNP_ARB_WRR);
	assert_int_equal(dnp_arb_parse("off", &p), 0);
	assert_int_equal(p, DNP_ARB_OFF);
	assert_int_equal(dnp_arb_parse("fifo", &p), -EINVAL);
	assert_int_equal(dnp_arb_parse(NULL, &p), -EINVAL);
	assert_string_equal(dnp_arb_name(DNP_ARB_WRR), "wrr");
}

#define TOP_VA (BASE + (1u << 20)) /* where the top-class PUT lands */

/* The va of the first RX_PUT on (node, port 0) within max steps. */
static uint64_t first_rx_put(unsigned node)
{
	return expect_event(node, 0, 20000, DNP_EV_RX_PUT).va;
}

/*
 * Node 0 queues four bulk PUTs (class 0), then one 8-byte PUT of class 7, to
 * node 1. Arbitration off: they leave in order, the small one last; strict:
 * the top class goes first.
 */
static uint64_t injection_race(uint8_t policy)
{
	arbitration = policy;
	setup_nodes(2);
	pump(100);
	uint32_t key = reg_buf(1, 0, BASE, 2u << 20, DNP_BUF_PUT_TARGET);
	for (unsigned i = 0; i < 4; i++) {
		struct dnp_cmd c = put_cmd(1, 0, BASE, BASE + i * 65536u, key, 65536, i);
		assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &c, now), 0);
	}
	struct dnp_cmd top = put_cmd(1, 0, BASE, TOP_VA, key, 8, 99);
	top.tc = 7;
	assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &top, now), 0);
	uint64_t va = first_rx_put(1);
	for (unsigned i = 0; i < 5; i++)
		(void)expect_event(0, 0, 20000, DNP_EV_TX_DONE);
	return va;
}

static void test_engine_class_injection_off(void **state)
{
	(void)state;
	assert_int_equal(injection_race(DNP_ARB_OFF), BASE); /* FIFO: the first bulk PUT */
}

static void test_engine_class_injection_strict(void **state)
{
	(void)state;
	assert_int_equal(injection_race(DNP_ARB_STRICT), TOP_VA);
}

static void test_engine_class_injection_wrr(void **state)
{
	(void)state;
	assert_int_equal(injection_race(DNP_ARB_WRR), TOP_VA);
}

/*
 * A router output (node 1 of a 4-node ring, forwarding 0 -> 2): a 20 KiB
 * bulk PUT (five packets, class 0) waits in node 1's input FIFO, held, with
 * an 8-byte PUT of class 7 behind it. Released: with strict arbitration the
 * small one passes the bulk packets in the FIFO and lands first; off, it
 * lands after them.
 */
static uint64_t router_race(uint8_t policy)
{
	arbitration = policy;
	setup_nodes(4);
	pump(100);
	uint32_t key = reg_buf(2, 0, BASE, 2u << 20, DNP_BUF_PUT_TARGET);
	struct dnp_cmd bulk = put_cmd(2, 0, BASE, BASE, key, 20480, 1);
	struct dnp_cmd top = put_cmd(2, 0, BASE, TOP_VA, key, 8, 2);

	top.tc = 7;
	hold_node = 1;
	assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &bulk, now), 0);
	pump(200);
	assert_int_equal(dnp_engine_stats(nodes[0].e)->pkts_injected, 5);
	assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &top, now), 0);
	pump(200);
	assert_int_equal(dnp_engine_stats(nodes[0].e)->pkts_injected, 6);
	hold_node = -1;
	uint64_t va = first_rx_put(2);
	(void)expect_event(0, 0, 20000, DNP_EV_TX_DONE);
	(void)expect_event(0, 0, 20000, DNP_EV_TX_DONE);
	return va;
}

static void test_engine_class_router_off(void **state)
{
	(void)state;
	assert_int_equal(router_race(DNP_ARB_OFF), BASE);
}

static void test_engine_class_router_strict(void **state)
{
	(void)state;
	assert_int_equal(router_race(DNP_ARB_STRICT), TOP_VA);
	assert_true(dnp_engine_stats(nodes[1].e)->pkts_forwarded >= 6);
}

/*
 * Strict: a class-3 PUT of 64 KiB starts while a class-0 one of 64 KiB to
 * the same node is half sent, so their fragments interleave on the wire;
 * each class keeps its own fragment sequence at the target, so both land
 * whole and complete.
 */
static void test_engine_class_interleaved_messages(void **state)
{
	(void)state;
	arbitration = DNP_ARB_STRICT;
	setup_nodes(2);
	pump(100);
	uint32_t key = reg_buf(1, 0, BASE, 2u << 20, DNP_BUF_PUT_TARGET);
	fill(nodes[0].mem[0], 65536, 1);
	fill(nodes[0].mem[0] + 65536, 65536, 2);
	struct dnp_cmd lo = put_cmd(1, 0, BASE, BASE, key, 65536, 1);
	struct dnp_cmd hi = put_cmd(1, 0, BASE + 65536, TOP_VA, key, 65536, 2);

	hi.tc = 3;
	assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &lo, now), 0);
	for (unsigned i = 0; i < 2000 && dnp_engine_stats(nodes[0].e)->pkts_injected < 4; i++)
		pump(1);
	uint64_t before = dnp_engine_stats(nodes[0].e)->pkts_injected;
	assert_true(before >= 4 && before < 16);
	assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &hi, now), 0);
	/* the class-3 message lands first, then the class-0 one, both whole */
	assert_int_equal(first_rx_put(1), TOP_VA);
	assert_int_equal(first_rx_put(1), BASE);
	assert_int_equal(expect_event(0, 0, 20000, DNP_EV_TX_DONE).cookie, 2);
	assert_int_equal(expect_event(0, 0, 20000, DNP_EV_TX_DONE).cookie, 1);
	assert_memory_equal(nodes[1].mem[0], nodes[0].mem[0], 65536);
	assert_memory_equal(nodes[1].mem[0] + (TOP_VA - BASE), nodes[0].mem[0] + 65536, 65536);
	assert_int_equal(dnp_engine_stats(nodes[1].e)->rx_incomplete, 0);
}

/*
 * With arbitration on, a packet waits for its output to be free (nothing
 * unsent there): when the driver takes the frame that was waiting, the
 * engine has work again, or a daemon that idles until dnp_engine_has_work
 * would leave the next packet where it is.
 */
static void test_engine_class_output_frees_work(void **state)
{
	struct dnp_frame f[4];

	(void)state;
	arbitration = DNP_ARB_STRICT;
	setup_nodes(2);
	pump(100);
	uint32_t key = reg_buf(1, 0, BASE, 65536, DNP_BUF_PUT_TARGET);
	for (unsigned i = 0; i < 3; i++) {
		struct dnp_cmd c = put_cmd(1, 0, BASE, BASE + 64 * i, key, 8, i + 1);
		assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &c, now), 0);
	}
	dnp_engine_run(nodes[0].e, now);
	assert_int_equal(dnp_engine_stats(nodes[0].e)->pkts_injected, 1); /* one per free output */
	assert_int_equal(dnp_engine_tx_burst(nodes[0].e, DNP_DIR_XP, f, 4, now), 1);
	assert_true(dnp_engine_has_work(nodes[0].e));
	dnp_engine_run(nodes[0].e, now);
	assert_int_equal(dnp_engine_stats(nodes[0].e)->pkts_injected, 2);
	for (unsigned i = 0; i < 3; i++)
		assert_int_equal(expect_event(0, 0, 5000, DNP_EV_TX_DONE).status, 0);
}

/* A class above the top one: the command ends with ERROR -EINVAL, nothing sent. */
static void test_engine_class_out_of_range(void **state)
{
	(void)state;
	arbitration = DNP_ARB_STRICT;
	setup_nodes(2);
	pump(100);
	uint32_t key = reg_buf(1, 0, BASE, 65536, DNP_BUF_PUT_TARGET);
	struct dnp_cmd c = put_cmd(1, 0, BASE, BASE, key, 8, 5);

	c.tc = DNP_TC_MAX + 1;
	assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &c, now), 0);
	struct dnp_event ev = expect_event(0, 0, 100, DNP_EV_ERROR);
	assert_int_equal(ev.status, -EINVAL);
	assert_int_equal(ev.cookie, 5);
	assert_int_equal(dnp_engine_stats(nodes[0].e)->pkts_injected, 0);
}

/*
 * Top-class remedy 1 (engine.h arb_low_payload): with strict arbitration and
 * a 256-byte cap, a 4 KiB PUT of class 0 leaves in 16 packets and lands
 * whole; one of the top class still leaves in one packet. Without the cap
 * (or with arbitration off, where the setting is refused) it is one packet.
 */
static void test_engine_class_low_payload(void **state)
{
	(void)state;
	arbitration = DNP_ARB_STRICT;
	low_payload = 256;
	setup_nodes(2);
	pump(100);
	uint32_t key = reg_buf(1, 0, BASE, 2u << 20, DNP_BUF_PUT_TARGET);
	fill(nodes[0].mem[0], 8192, 3);
	struct dnp_cmd lo = put_cmd(1, 0, BASE, BASE, key, 4096, 1);
	struct dnp_cmd hi = put_cmd(1, 0, BASE + 4096, TOP_VA, key, 4096, 2);

	hi.tc = 7;
	assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &lo, now), 0);
	assert_int_equal(expect_event(0, 0, 20000, DNP_EV_TX_DONE).cookie, 1);
	assert_int_equal(dnp_engine_stats(nodes[0].e)->pkts_injected, 16);
	assert_int_equal(first_rx_put(1), BASE);
	assert_memory_equal(nodes[1].mem[0], nodes[0].mem[0], 4096);
	assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &hi, now), 0);
	assert_int_equal(expect_event(0, 0, 20000, DNP_EV_TX_DONE).cookie, 2);
	assert_int_equal(dnp_engine_stats(nodes[0].e)->pkts_injected, 17);
	assert_memory_equal(nodes[1].mem[0] + (TOP_VA - BASE), nodes[0].mem[0] + 4096, 4096);
}

/* The settings are refused with arbitration off, or when no low frame would fit. */
static void test_engine_class_top_conf(void **state)
{
	struct dnp_engine_conf c;
	struct dnp_engine *e = NULL;

	(void)state;
	dnp_engine_conf_default(&c);
	dnp_torus_init(&c.torus, 2, 1, 1);
	c.mem = &ops;
	c.arb_low_payload = 256;
	assert_int_equal(dnp_engine_create(&c, 0, &e), -EINVAL); /* arbitration off */
	c.arbitration = DNP_ARB_STRICT;
	c.arb_low_payload = 100; /* not a multiple of 16 */
	assert_int_equal(dnp_engine_create(&c, 0, &e), -EINVAL);
	c.arb_low_payload = 0;
	c.arb_top_reserve = (uint16_t)(c.link.t_red - DNP_MAX_FRAME / DNP_WORD_BYTES + 1);
	assert_int_equal(dnp_engine_create(&c, 0, &e), -EINVAL);
	c.arb_top_reserve--;
	assert_int_equal(dnp_engine_create(&c, 0, &e), 0);
	dnp_engine_destroy(e);
}

/*
 * Top-class remedy 2 (engine.h arb_top_reserve): node 1 is held, so node 0's
 * estimate of its FIFO only grows. Class-0 packets of 8 words (64-byte
 * payloads) fill the VC; then an 8-byte PUT of class 7 (5 words) is
 * submitted. Returns whether it left. T_RED 2042: without a reserve the low
 * class leaves 2 words, too few; with 16 reserved it stops at 2016.
 */
static bool reserve_race(uint16_t reserve, uint64_t *low_pkts)
{
	arbitration = DNP_ARB_STRICT;
	low_payload = 64;
	top_reserve = reserve;
	setup_nodes(2);
	pump(100);
	uint32_t key = reg_buf(1, 0, BASE, 2u << 20, DNP_BUF_PUT_TARGET);
	struct dnp_cmd lo = put_cmd(1, 0, BASE, BASE, key, 300 * 64, 1);
	struct dnp_cmd hi = put_cmd(1, 0, BASE, TOP_VA, key, 8, 2);

	hi.tc = 7;
	hold_node = 1;
	assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &lo, now), 0);
	pump(1000);
	*low_pkts = dnp_engine_stats(nodes[0].e)->pkts_injected;
	assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &hi, now), 0);
	pump(200);
	bool went = dnp_engine_stats(nodes[0].e)->pkts_injected == *low_pkts + 1;
	hold_node = -1;
	return went;
}

static void test_engine_class_top_reserve(void **state)
{
	uint64_t n;

	(void)state;
	assert_true(reserve_race(16, &n));
	assert_int_equal(n, 253); /* 253 x 8 + 16 + 8 > 2042 */
	for (unsigned i = 0; i < 2; i++)
		assert_int_equal(expect_event(0, 0, 50000, DNP_EV_TX_DONE).status, 0);
}

static void test_engine_class_no_reserve(void **state)
{
	uint64_t n;

	(void)state;
	assert_false(reserve_race(0, &n)); /* the problem the reserve solves */
	assert_int_equal(n, 255);
	for (unsigned i = 0; i < 2; i++)
		assert_int_equal(expect_event(0, 0, 50000, DNP_EV_TX_DONE).status, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_arb_strict_order_and_bound),
		cmocka_unit_test(test_arb_strict_bound_all_classes),
		cmocka_unit_test(test_arb_wrr_weights),
		cmocka_unit_test(test_arb_parse),
		cmocka_unit_test_teardown(test_engine_class_injection_off, teardown),
		cmocka_unit_test_teardown(test_engine_class_injection_strict, teardown),
		cmocka_unit_test_teardown(test_engine_class_injection_wrr, teardown),
		cmocka_unit_test_teardown(test_engine_class_router_off, teardown),
		cmocka_unit_test_teardown(test_engine_class_router_strict, teardown),
		cmocka_unit_test_teardown(test_engine_class_interleaved_messages, teardown),
		cmocka_unit_test_teardown(test_engine_class_output_frees_work, teardown),
		cmocka_unit_test_teardown(test_engine_class_out_of_range, teardown),
		cmocka_unit_test_teardown(test_engine_class_low_payload, teardown),
		cmocka_unit_test(test_engine_class_top_conf),
		cmocka_unit_test_teardown(test_engine_class_top_reserve, teardown),
		cmocka_unit_test_teardown(test_engine_class_no_reserve, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
