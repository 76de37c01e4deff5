/* SPDX-License-Identifier: MIT */
/*
 * test_engine_congest — congestion management (engine.h, congestion ecn;
 * docs/protocol.md, "Congestion marks"): packets are marked exactly when the
 * VC they take is filled to the threshold, the mark comes back in the
 * report, a marked report shrinks the destination's window and the window
 * then holds new PUTs, unmarked reports open it again, a held command does
 * not hold younger ones to other nodes, and with congestion off nothing is
 * marked or held. Engines on an X ring wired frame by frame
 * (test_engine_harness.h); node 1 is "held" (it neither runs nor drains its
 * input) to fill node 0's credit estimate of it at will.
 *
 * Planted faults each of which fails at least one test here: marking above
 * instead of at the threshold (> for >=: mark_at_threshold); a window that
 * never holds (throttle, bypass); no growth on unmarked reports (throttle);
 * no bypass (CG_SCAN 1: throttle, bypass); no echo in the CMPL batch
 * (mark_at_threshold, throttle); a halving on every echo instead of once
 * per window (mark_at_threshold, throttle); a bypass that ignores an older
 * held command to the same node (bypass: the GET overtakes the PUTs).
 */
#include "test_engine_harness.h"

#define PAYLOAD 64u /* a PUT of 64 bytes is one 8-word frame */
#define FRAME_WORDS 8u

/* Nodes 0..x-1 with congestion management set as given (0: the engine's defaults). */
static void setup_cg(unsigned x, uint8_t mode, uint32_t threshold, uint32_t window)
{
	nnodes = x;
	now = 0;
	for (unsigned i = 0; i < x; i++) {
		struct dnp_engine_conf c;

		for (unsigned p = 0; p < NPORTS; p++) {
			nodes[i].mem[p] = calloc(1, ARENA);
			assert_non_null(nodes[i].mem[p]);
		}
		dnp_engine_conf_default(&c);
		dnp_torus_init(&c.torus, x, 1, 1);
		c.self = (struct dnp_coord){ (uint8_t)i, 0, 0 };
		c.max_ports = NPORTS;
		c.mem = &ops;
		c.mem_ctx = &nodes[i];
		c.key_secret[0] = 77 + i;
		c.congestion = mode;
		c.cg_threshold = threshold;
		c.cg_window = window;
		assert_int_equal(dnp_engine_create(&c, now, &nodes[i].e), 0);
		for (unsigned p = 0; p < NPORTS; p++)
			assert_int_equal(dnp_engine_port_open(nodes[i].e, p), 0);
	}
	pump(300); /* links UP, credits known */
}

static const struct dnp_engine_stats *st(unsigned n)
{
	return dnp_engine_stats(nodes[n].e);
}

/* Submits k 64-byte PUTs from node 0 to node dst (cookies from cookie0). */
static void put_k(unsigned dst, uint32_t key, unsigned k, uint64_t cookie0)
{
	for (unsigned i = 0; i < k; i++) {
		struct dnp_cmd c = put_cmd(dst, 0, BASE + i * PAYLOAD, BASE + i * PAYLOAD, key,
					   PAYLOAD, cookie0 + i);

		assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &c, now), 0);
	}
}

/* Waits for k TX_DONE events of node 0, port 0. */
static void done_k(unsigned k)
{
	for (unsigned i = 0; i < k; i++)
		expect_event(0, 0, 20000, DNP_EV_TX_DONE);
}

/* Node 1 is held while node 0 sends k PUTs (as many as the window lets go); returns how many left. */
static uint64_t sent_while_held(uint32_t key, unsigned k)
{
	uint64_t before = st(0)->pkts_injected;

	hold_node = 1;
	put_k(1, key, k, 1000);
	pump(400);
	hold_node = -1;
	return st(0)->pkts_injected - before;
}

/* Node 0 PUTs one at a time (each reported before the next starts: never marked), n times. */
static void one_by_one(uint32_t key, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		put_k(1, key, 1, 500 + i);
		done_k(1);
		pump(100); /* a fresh credit brings node 0's estimate down again */
	}
}

/*
 * Marking at the threshold: with the threshold at 3 frames, the 4th packet
 * sent into a receiver that drains nothing finds the estimate at exactly
 * the threshold and is marked, and so is every later one; the first three
 * are not. Their target then echoes the marks, and the window is halved
 * once for the lot (a window starts at 8 packets: all 8 left at once).
 */
static void test_cg_mark_at_threshold(void **state)
{
	setup_cg(2, DNP_CONGESTION_ECN, 3 * FRAME_WORDS, 16);
	uint32_t key = reg_buf(1, 0, BASE, 65536, DNP_BUF_PUT_TARGET);
	struct dnp_pkt_hdr h;
	const uint8_t *pl;

	assert_int_equal(sent_while_held(key, 8), 8);
	assert_int_equal(st(0)->cg_marked, 8 - 3);
	/* the last data frame on the wire carries the mark */
	assert_int_equal(dnp_pkt_decode(last_data, last_data_len, &h, &pl), 0);
	assert_int_equal(h.kind, DNP_PKT_PUT);
	assert_true(h.fstatus & DNP_FT_CE);
	done_k(8);
	assert_true(st(0)->cg_echoes >= 8 - 3); /* a batch is marked when any of it was */
	assert_int_equal(st(0)->cg_cuts, 1);    /* once per window: all eight started before */
	assert_int_equal(st(1)->cg_marked, 0);  /* reports are never marked */
}

/*
 * Throttling engages and releases: a window starts at 8 packets; after a
 * marked round it is halved, and a burst into the held receiver leaves only
 * 4 packets; the rest wait. Unmarked reports then grow it to its ceiling
 * (16), past its start: a burst leaves 16. Every PUT completes once.
 */
static void test_cg_throttle_engages_and_releases(void **state)
{
	setup_cg(2, DNP_CONGESTION_ECN, 3 * FRAME_WORDS, 16);
	uint32_t key = reg_buf(1, 0, BASE, 65536, DNP_BUF_PUT_TARGET);

	assert_int_equal(sent_while_held(key, 8), 8); /* the first window: 8 */
	done_k(8);
	assert_int_equal(st(0)->cg_cuts, 1); /* 8 -> 4 */

	uint64_t held0 = st(0)->cg_held;
	assert_int_equal(sent_while_held(key, 20), 4); /* engaged: the window holds the rest */
	assert_int_equal(st(0)->cg_held, held0 + 16);
	done_k(20);
	assert_true(st(0)->cg_cuts >= 2); /* that burst was marked too (4 > 3 frames) */

	one_by_one(key, 16); /* released: each unmarked report adds a packet, up to 16 */
	assert_int_equal(sent_while_held(key, 20), 16);
	done_k(20);
	expect_quiet(0, 0, 2000);
}

/*
 * A held PUT does not hold the queue: with node 2's window (1) taken by a
 * PUT that node 2 does not take in, a PUT to node 1 (the same first hop,
 * X+) submitted after two more PUTs and a GET to node 2 leaves while they
 * wait. The GET, never held itself, stays behind the held PUTs to its node;
 * the PUTs to node 2 keep their order, and every byte lands.
 */
static void test_cg_bypass_keeps_order(void **state)
{
	setup_cg(4, DNP_CONGESTION_ECN, 0, 1);
	uint32_t k2 = reg_buf(2, 0, BASE, 65536, DNP_BUF_PUT_TARGET);
	uint32_t k1 = reg_buf(1, 0, BASE, 65536, DNP_BUF_PUT_TARGET);
	uint32_t gsrc = reg_buf(2, 1, BASE, 4096, DNP_BUF_GET_SOURCE);
	uint32_t gdst = reg_buf(0, 1, BASE, 4096, DNP_BUF_PUT_TARGET);
	struct dnp_event ev;

	fill(nodes[0].mem[0], 4 * PAYLOAD, 5);
	hold_node = 2; /* node 2 takes nothing in: the first PUT to it stays unreported */
	for (unsigned i = 0; i < 3; i++) {
		struct dnp_cmd c =
			put_cmd(2, 0, BASE + i * PAYLOAD, BASE + i * PAYLOAD, k2, PAYLOAD, 20 + i);

		assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &c, now), 0);
	}
	struct dnp_cmd g = get_cmd(2, 1, BASE, gsrc, 64, BASE, gdst, 40);
	assert_int_equal(dnp_engine_submit(nodes[0].e, 1, &g, now), 0);
	struct dnp_cmd c1 = put_cmd(1, 0, BASE + 3 * PAYLOAD, BASE, k1, PAYLOAD, 30);
	assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &c1, now), 0);
	ev = expect_event(0, 0, 5000, DNP_EV_TX_DONE); /* node 1's, past the held ones */
	assert_int_equal(ev.cookie, 30);
	assert_int_equal(st(0)->cg_bypassed, 1);
	assert_int_equal(st(0)->cg_held, 3);
	assert_int_equal(st(0)->pkts_injected, 2); /* the first PUT to node 2 and node 1's */
	hold_node = -1;
	assert_int_equal(expect_event(0, 1, 20000, DNP_EV_GET_DONE).cookie, 40);
	for (unsigned i = 0; i < 3; i++) /* node 2's, in submission order */
		assert_int_equal(expect_event(0, 0, 20000, DNP_EV_TX_DONE).cookie, 20 + i);
	assert_memory_equal(nodes[2].mem[0], nodes[0].mem[0], 3 * PAYLOAD);
	assert_memory_equal(nodes[1].mem[0], nodes[0].mem[0] + 3 * PAYLOAD, PAYLOAD);
}

/* Off (the default engine configuration): a burst leaves whole, nothing is marked or held. */
static void test_cg_off_changes_nothing(void **state)
{
	setup_nodes(2);
	pump(300);
	uint32_t key = reg_buf(1, 0, BASE, 65536, DNP_BUF_PUT_TARGET);

	assert_int_equal(sent_while_held(key, 20), 20);
	done_k(20);
	assert_int_equal(st(0)->cg_marked + st(0)->cg_held + st(0)->cg_cuts + st(0)->cg_echoes, 0);
	assert_int_equal(st(1)->cg_marked, 0);
}

/* Names and the configuration check. */
static void test_cg_names_and_conf(void **state)
{
	struct dnp_engine_conf c;
	struct dnp_engine *e = NULL;

	assert_int_equal(dnp_congestion_parse("off"), DNP_CONGESTION_OFF);
	assert_int_equal(dnp_congestion_parse("ecn"), DNP_CONGESTION_ECN);
	assert_int_equal(dnp_congestion_parse("qcn"), -EINVAL);
	assert_int_equal(dnp_congestion_parse(NULL), -EINVAL);
	assert_string_equal(dnp_congestion_name(DNP_CONGESTION_ECN), "ecn");
	assert_null(dnp_congestion_name(7));
	dnp_engine_conf_default(&c);
	assert_int_equal(c.congestion, DNP_CONGESTION_OFF);
	c.mem = &ops;
	c.congestion = 9;
	assert_int_equal(dnp_engine_create(&c, 0, &e), -EINVAL);
	c.congestion = DNP_CONGESTION_ECN;
	c.cg_window = 1u << 20;
	assert_int_equal(dnp_engine_create(&c, 0, &e), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_cg_mark_at_threshold, teardown),
		cmocka_unit_test_teardown(test_cg_throttle_engages_and_releases, teardown),
		cmocka_unit_test_teardown(test_cg_bypass_keeps_order, teardown),
		cmocka_unit_test_teardown(test_cg_off_changes_nothing, teardown),
		cmocka_unit_test(test_cg_names_and_conf),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
