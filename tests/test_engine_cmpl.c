/* SPDX-License-Identifier: MIT */
/*
 * test_engine_cmpl — completion under pressure: lost reports and the command
 * deadline, SEND reassembly timeouts, slow applications (deliver_timeout),
 * report batches, a handful of packet buffers, mutual GET storms. Engines on
 * an X ring wired frame by frame (test_engine_harness.h).
 */
#include "test_engine_harness.h"

/*
 * Two nodes fill their command tables with GETs from each other: the slots
 * kept for responders let every GET finish instead of both waiting for ever.
 */
static void test_engine_mutual_get_storm(void **state)
{
	setup_nodes(2);
	uint32_t src_key[2], dst_key[2];
	unsigned issued[2] = { 0, 0 }, done[2] = { 0, 0 };

	for (unsigned n = 0; n < 2; n++) {
		fill(nodes[n].mem[0], 65536, n + 1);
		src_key[n] = reg_buf(n, 0, BASE, 65536, DNP_BUF_GET_SOURCE);
		dst_key[n] = reg_buf(n, 0, BASE + 0x100000, 65536, DNP_BUF_PUT_TARGET);
	}
	for (unsigned n = 0; n < 2; n++) {
		for (;;) {
			unsigned i = issued[n];
			struct dnp_cmd c =
				get_cmd(1 - n, 0, BASE + (i % 1024) * 64, src_key[1 - n], 64,
					BASE + 0x100000 + (i % 1024) * 64, dst_key[n], i);
			if (dnp_engine_submit(nodes[n].e, 0, &c, now) == -EAGAIN)
				break;
			issued[n]++;
		}
		assert_true(issued[n] > 500);
	}
	for (unsigned step = 0; step < 200000 && (done[0] < issued[0] || done[1] < issued[1]);
	     step++) {
		struct dnp_event ev[64];
		pump(1);
		for (unsigned n = 0; n < 2; n++) {
			unsigned k = dnp_engine_poll_events(nodes[n].e, 0, ev, 64);
			for (unsigned j = 0; j < k; j++) {
				assert_int_equal(ev[j].type, DNP_EV_GET_DONE);
				done[n]++;
			}
		}
	}
	assert_int_equal(done[0], issued[0]);
	assert_int_equal(done[1], issued[1]);
	assert_memory_equal(nodes[0].mem[0] + 0x100000, nodes[1].mem[0], 65536);
}

/* Node 0 PUTs len bytes at BASE to node 1's target key, whose reports are all lost. */
static void put_reports_lost(uint32_t key, size_t len, uint64_t cookie)
{
	drop_node = 1;
	drop_kind = DNP_PKT_CMPL;
	struct dnp_cmd c = put_cmd(1, 0, BASE, BASE, key, len, cookie);
	assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &c, now), 0);
}

/*
 * Issue 7, lost completion report: node 1 got the PUT but its CMPL never
 * reaches node 0 (every CMPL frame of node 1 is lost). With a command
 * deadline the PUT still completes, exactly once, with -ETIMEDOUT.
 */
static void test_engine_lost_cmpl_times_out(void **state)
{
	t_cmd = 5000;
	setup_nodes(2);
	struct dnp_event ev;

	fill(nodes[0].mem[0], 9000, 2);
	put_reports_lost(reg_buf(1, 0, BASE, 65536, DNP_BUF_PUT_TARGET), 9000, 44);
	expect_event(1, 0, 1000, DNP_EV_RX_PUT);
	uint64_t t0 = now;
	ev = expect_event(0, 0, 10000, DNP_EV_ERROR);
	assert_int_equal(ev.status, -ETIMEDOUT);
	assert_int_equal(ev.data, DNP_DATA_UNKNOWN); /* no answer could be had */
	assert_int_equal(ev.cookie, 44);
	assert_true(now - t0 <= 5000 + 5000 / 4 + 2); /* the documented bound */
	expect_quiet(0, 0, 20000); /* the link gives up on the CMPL too: still one event only */
}

/*
 * Issue 7, SEND reassembly: the sender goes (its port closes) in the middle
 * of a multi-packet SEND. The receiver reclaims the reassembly slot (there
 * is only one) and the buffer after reasm_timeout, tells its application
 * with DNP_EV_RX_ERROR -ETIMEDOUT, and the next SEND lands in that buffer.
 */
static void test_engine_send_reasm_timeout(void **state)
{
	t_reasm = 3000;
	setup_nodes(2);
	uint8_t *rx = nodes[1].mem[0];
	struct dnp_event ev;
	struct dnp_cmd c = start_long_send();
	const size_t len = c.len;

	assert_int_equal(dnp_engine_port_close(nodes[0].e, 1), 0); /* the sender is killed */
	uint64_t t0 = now;
	ev = expect_event(1, 0, 10000, DNP_EV_RX_ERROR);
	assert_int_equal(ev.status, -ETIMEDOUT);
	assert_int_equal(ev.va, BASE);
	assert_int_equal(ev.len, len);
	assert_int_equal(ev.port, 1);
	assert_true(now - t0 <= 3000 + 3000 / 4 + 100);
	assert_int_equal(dnp_engine_stats(nodes[1].e)->reasm_timeouts, 1);

	/* The slot and the buffer are back: a new SEND arrives in the same buffer. */
	assert_int_equal(dnp_engine_port_open(nodes[0].e, 1), 0);
	memset(nodes[0].mem[1], 0x77, len);
	c.cookie = 9;
	assert_int_equal(dnp_engine_submit(nodes[0].e, 1, &c, now), 0);
	assert_int_equal(expect_event(1, 0, 20000, DNP_EV_RX_SEND).va, BASE);
	assert_int_equal(rx[0], 0x77);
	assert_int_equal(rx[len - 1], 0x77);
	assert_int_equal(expect_event(0, 1, 5000, DNP_EV_TX_DONE).cookie, 9);
	expect_quiet(1, 0, 5000);
}

/*
 * Issue 7, a slow application: on a 4-node ring, node 1's application
 * (port 0) stops draining its events while node 0 floods it with PUTs. Node
 * 0's PUTs to node 2 cross node 1 on the same link and VC. The first blocked
 * PUT fails back after deliver_timeout with -EOVERFLOW, the next ones at once
 * (the port is overrun until it drains an event), so every transit PUT gets
 * through within about one deliver_timeout; every command of node 0
 * completes exactly once.
 */
static void test_engine_slow_app_does_not_block_transit(void **state)
{
	t_deliver = 20000;
	evq_slots = 4;
	setup_nodes(4);
	uint32_t k1, k2;
	unsigned issued = 0, done_ok = 0, done_nospc = 0, transit_ok = 0, rx2 = 0;
	uint8_t seen[64] = { 0 };

	k1 = reg_buf(1, 0, BASE, 65536, DNP_BUF_PUT_TARGET);
	k2 = reg_buf(2, 0, BASE, 65536, DNP_BUF_PUT_TARGET);
	/* alternate: to node 1 (never drained), to node 2 (transit through node 1) */
	for (unsigned i = 0; i < 24; i++) {
		struct dnp_cmd c = i % 2 ? put_cmd(2, 0, BASE, BASE + i * 1024, k2, 5000, i) :
					   put_cmd(1, 0, BASE, BASE + i * 1024, k1, 5000, i);
		assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &c, now), 0);
		issued++;
	}
	uint64_t t_start = now;
	for (unsigned step = 0; step < 400000 && done_ok + done_nospc < issued; step++) {
		struct dnp_event ev[8];
		pump(1);
		unsigned n = dnp_engine_poll_events(nodes[0].e, 0, ev, 8);
		for (unsigned j = 0; j < n; j++) {
			assert_true(ev[j].cookie < issued);
			assert_int_equal(seen[ev[j].cookie]++, 0); /* exactly once */
			if (ev[j].type == DNP_EV_TX_DONE) {
				done_ok++;
				transit_ok += ev[j].cookie % 2;
			} else {
				assert_int_equal(ev[j].type, DNP_EV_ERROR);
				assert_int_equal(ev[j].status, -EOVERFLOW);
				assert_int_equal(ev[j].cookie % 2, 0); /* only PUTs to node 1 */
				done_nospc++;
			}
		}
		rx2 += dnp_engine_poll_events(nodes[2].e, 0, ev, 8);
	}
	assert_int_equal(done_ok + done_nospc, issued);
	fprintf(stderr, "slow-app: %u failed back, all done after %llu\n", done_nospc,
		(unsigned long long)(now - t_start));
	/* one wait of deliver_timeout, not one per message: the port is overrun */
	assert_true(now - t_start < 2 * t_deliver);
	assert_int_equal(transit_ok, issued / 2);
	assert_int_equal(rx2, issued / 2);
	assert_true(done_nospc > 0);
	assert_int_equal(dnp_engine_stats(nodes[1].e)->deliver_timeouts, done_nospc);
}

/*
 * The same bound for loopback: port 1 of a single node stops draining; a
 * loopback PUT to it must not hold up, for ever, the loopback PUT queued
 * behind it (here to port 0 itself).
 */
static void test_engine_slow_app_does_not_block_loopback(void **state)
{
	t_deliver = 2000;
	evq_slots = 8;
	evq_node = 0;
	setup_nodes(1);
	uint32_t k0, k1;
	struct dnp_event ev;

	k0 = reg_buf(0, 0, BASE + 0x100000, 65536, DNP_BUF_PUT_TARGET);
	k1 = reg_buf(0, 1, BASE, 65536, DNP_BUF_PUT_TARGET);
	/* fill port 1's event queue: 8 RX_PUT nobody reads */
	for (unsigned i = 0; i < 8; i++) {
		struct dnp_cmd c = put_cmd(0, 1, BASE, BASE + i * 64, k1, 64, 100 + i);
		assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &c, now), 0);
		expect_event(0, 0, 100, DNP_EV_TX_DONE);
	}
	struct dnp_cmd c = put_cmd(0, 1, BASE, BASE, k1, 5000, 1); /* blocked */
	assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &c, now), 0);
	c = put_cmd(0, 0, BASE, BASE + 0x100000, k0, 100, 2); /* behind it */
	assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &c, now), 0);
	uint64_t t0 = now;
	ev = expect_event(0, 0, 10000, DNP_EV_ERROR);
	assert_int_equal(ev.status, -EOVERFLOW);
	assert_int_equal(ev.cookie, 1);
	assert_true(now - t0 <= 2000 + 10);
	expect_event(0, 0, 100, DNP_EV_RX_PUT);
	assert_int_equal(expect_event(0, 0, 100, DNP_EV_TX_DONE).cookie, 2);
	expect_quiet(0, 0, 3000);
}

/*
 * Success reports travel in batches (one CMPL frame for the messages of one
 * sender that a pass delivered), an error report at once after the batch
 * before it: 100 PUTs, two with a bad key, end in 100 events at the sender,
 * in submission order, each once, in far fewer CMPL frames than messages.
 */
static void test_engine_cmpl_batch_in_order(void **state)
{
	setup_nodes(2);
	const unsigned n = 100;
	uint32_t key = reg_buf(1, 0, BASE, 65536, DNP_BUF_PUT_TARGET);

	fill(nodes[0].mem[0], 64 * n, 5);
	for (unsigned i = 0; i < n; i++) {
		uint32_t k = i == 37 || i == 71 ? key ^ 1 : key;
		struct dnp_cmd c = put_cmd(1, 0, BASE + 64 * i, BASE + 64 * i, k, 64, i);
		assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &c, now), 0);
	}
	for (unsigned i = 0; i < n; i++) {
		struct dnp_event ev;
		assert_true(next_event(0, 0, &ev, 5000));
		assert_int_equal(ev.cookie, i);
		if (i == 37 || i == 71) {
			assert_int_equal(ev.type, DNP_EV_ERROR);
			assert_int_equal(ev.status, -EACCES);
			assert_int_equal(ev.data,
					 DNP_DATA_NOT_DELIVERED); /* its target refused it */
		} else {
			assert_int_equal(ev.type, DNP_EV_TX_DONE);
			assert_int_equal(ev.status, 0);
			assert_int_equal(ev.data, DNP_DATA_DELIVERED);
			assert_memory_equal(nodes[1].mem[0] + 64 * i, nodes[0].mem[0] + 64 * i, 64);
		}
	}
	expect_quiet(0, 0, 500);
	uint64_t frames = dnp_engine_stats(nodes[1].e)->cmpl_frames;
	assert_true(frames >= 3); /* at least the two errors and a batch between them */
	assert_true(frames <= n / 4);
	assert_int_equal(dnp_engine_stats(nodes[0].e)->cmds_ok, n - 2);
	assert_int_equal(dnp_engine_stats(nodes[0].e)->cmds_failed, 2);
}

/*
 * More senders (node and port) than open batches: a new sender flushes the
 * batch of another, and every PUT still ends in exactly one TX_DONE.
 * Nodes 0, 2 and 3 of a 4-node ring PUT to node 1 from both their ports;
 * node 1 stands still until they all wait in its input FIFOs, so that one
 * round delivers the PUTs of six senders (four batches open at most).
 */
static void test_engine_cmpl_batch_many_senders(void **state)
{
	setup_nodes(4);
	uint32_t key;
	const unsigned per = 40, src[3] = { 0, 2, 3 };

	pump(100); /* links UP before node 1 stands still */

	key = reg_buf(1, 0, BASE, 65536, DNP_BUF_PUT_TARGET);
	for (unsigned i = 0; i < per; i++)
		for (unsigned k = 0; k < 3; k++)
			for (unsigned p = 0; p < NPORTS; p++) {
				struct dnp_cmd c = put_cmd(1, 0, BASE, BASE + 8 * (k * 2 + p), key,
							   8, (uint64_t)k << 32 | p << 16 | i);
				assert_int_equal(dnp_engine_submit(nodes[src[k]].e, p, &c, now), 0);
			}
	hold_node = 1;
	pump(300);
	hold_node = -1;
	for (unsigned k = 0; k < 3; k++)
		for (unsigned p = 0; p < NPORTS; p++) {
			for (unsigned i = 0; i < per; i++)
				assert_int_equal(
					expect_event(src[k], p, 5000, DNP_EV_TX_DONE).cookie,
					(uint64_t)k << 32 | p << 16 | i);
		}
	pump(500);
	for (unsigned k = 0; k < 3; k++)
		for (unsigned p = 0; p < NPORTS; p++) {
			struct dnp_event ev;
			assert_int_equal(dnp_engine_poll_events(nodes[src[k]].e, p, &ev, 1), 0);
		}
	assert_true(dnp_engine_stats(nodes[1].e)->cmpl_frames < 3 * NPORTS * per / 2);
}

/*
 * One sender's batch fills up (1 + DNP_CMPL_MAX_EXTRA reports): node 1
 * stands still until 120 PUTs of one sender wait in its FIFO, then one round
 * delivers them all; the full batch leaves and a new one starts, so every
 * PUT ends in one TX_DONE, in order, with no report lost (no query asked).
 */
static void test_engine_cmpl_batch_full(void **state)
{
	setup_nodes(2);
	const unsigned n = 120;

	pump(100); /* links UP before node 1 stands still */
	uint32_t key = reg_buf(1, 0, BASE, 65536, DNP_BUF_PUT_TARGET);
	for (unsigned i = 0; i < n; i++) {
		struct dnp_cmd c = put_cmd(1, 0, BASE, BASE + 8 * i, key, 8, i);
		assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &c, now), 0);
	}
	hold_node = 1;
	pump(300);
	hold_node = -1;
	for (unsigned i = 0; i < n; i++)
		assert_int_equal(expect_event(0, 0, 5000, DNP_EV_TX_DONE).cookie, i);
	expect_quiet(0, 0, 500);
	assert_int_equal(dnp_engine_stats(nodes[0].e)->query_tx, 0);
	assert_true(dnp_engine_stats(nodes[1].e)->cmpl_frames >=
		    (n + DNP_CMPL_MAX_EXTRA) / (1 + DNP_CMPL_MAX_EXTRA));
}

/*
 * Node 1 runs with a handful of packet buffers while node 0 sends it 300
 * small PUTs, every third with a wrong key: the receiver refuses frames it
 * has no buffer for (hearing their acks), holds deliveries whose report has
 * no buffer, and sends error reports beside its batches of success reports.
 * Every command still ends in exactly one completion with its own status,
 * every good PUT lands and no bad one writes.
 */
static void pool_short_body(void)
{
	enum {
		N = 300,
		STEP = 16
	};
	unsigned seen[N] = { 0 }, rx = 0, done = 0;
	uint32_t key;

	pool_node = 1;
	pool_small_n = 4;
	pool_big_n = 2;
	setup_nodes(2);
	key = reg_buf(1, 0, BASE, 65536, DNP_BUF_PUT_TARGET);
	fill(nodes[0].mem[0], N * STEP, 9);
	for (unsigned i = 0; i < N; i++) {
		struct dnp_cmd c = put_cmd(1, 0, BASE + i * STEP, BASE + i * STEP,
					   i % 3 == 2 ? key ^ 1 : key, 8, i);
		assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &c, now), 0);
	}
	for (unsigned s = 0; s < 400000 && done < N; s++) {
		struct dnp_event ev;

		pump(1);
		while (dnp_engine_poll_events(nodes[1].e, 0, &ev, 1) == 1) {
			assert_int_equal(ev.type, DNP_EV_RX_PUT);
			rx++;
		}
		while (dnp_engine_poll_events(nodes[0].e, 0, &ev, 1) == 1) {
			if (ev.type == DNP_EV_LINK)
				continue;
			assert_true(ev.cookie < N);
			seen[ev.cookie]++;
			done++;
			if (ev.cookie % 3 == 2) {
				assert_int_equal(ev.type, DNP_EV_ERROR);
				assert_int_equal(ev.status, -EACCES);
			} else {
				assert_int_equal(ev.type, DNP_EV_TX_DONE);
				assert_int_equal(ev.status, 0);
			}
		}
	}
	assert_int_equal(done, N);
	expect_quiet(0, 0, 20000); /* nothing more comes */
	for (unsigned i = 0; i < N; i++) {
		assert_int_equal(seen[i], 1);
		if (i % 3 == 2)
			for (unsigned b = 0; b < 8; b++)
				assert_int_equal(nodes[1].mem[0][i * STEP + b], 0);
		else
			assert_memory_equal(nodes[1].mem[0] + i * STEP, nodes[0].mem[0] + i * STEP,
					    8);
	}
	assert_int_equal(rx, N - N / 3);
	/* the buffers really ran out: frames were heard without being kept */
	assert_true(dnp_engine_stats(nodes[1].e)->rx_nobuf > 0);
}

static void test_engine_pool_short_hw_credits(void **state)
{
	pool_short_body();
}

static void test_engine_pool_short_dnpd_links(void **state)
{
	exact_prompt = true;
	ack_delay = 100;
	pool_short_body();
}

/*
 * Two nodes with outcome queries (query_timeout 3000) and a command deadline
 * far away; returns the key of node 1's PUT target (64 KiB at BASE, port 0).
 */
static uint32_t setup_query_pair(void)
{
	t_cmd = 1000000;
	t_query = 3000;
	setup_nodes(2);
	return reg_buf(1, 0, BASE, 65536, DNP_BUF_PUT_TARGET);
}

/* The first hop node 0 takes towards node 1. */
static unsigned first_dir_to_1(void)
{
	struct dnp_hop hop;

	assert_int_equal(dnp_route_step(dnp_engine_router(nodes[0].e),
					(struct dnp_coord){ 0, 0, 0 },
					(struct dnp_coord){ 1, 0, 0 }, 0, DNP_DIR_LOCAL, 0, &hop),
			 0);
	return hop.dir;
}

/*
 * Every report of node 1 is lost until its link gives up on them: an
 * outcome query then has the PUT complete with its true status, long
 * before the command deadline (without queries: -ETIMEDOUT at it).
 */
static void test_engine_query_recovers_lost_cmpl(void **state)
{
	uint32_t key = setup_query_pair();
	struct dnp_event ev;

	fill(nodes[0].mem[0], 9000, 5);
	put_reports_lost(key, 9000, 45);
	expect_event_nolink(1, 0, 1000, DNP_EV_RX_PUT);
	/* node 1's link that carried the reports gives up: they are lost with it */
	for (unsigned s = 0;
	     s < 400000 && dnp_engine_link_state(nodes[1].e, DNP_DIR_XP) != DNP_LINK_BROKEN &&
	     dnp_engine_link_state(nodes[1].e, DNP_DIR_XM) != DNP_LINK_BROKEN;
	     s++)
		pump(1);
	drop_kind = -1;
	ev = expect_event_nolink(0, 0, 100000, DNP_EV_TX_DONE);
	assert_int_equal(ev.status, 0);
	assert_int_equal(ev.data, DNP_DATA_DELIVERED);
	assert_int_equal(ev.cookie, 45);
	assert_true(now < t_cmd);
	assert_true(dnp_engine_stats(nodes[0].e)->query_tx >= 1);
	assert_true(dnp_engine_stats(nodes[1].e)->query_rx >= 1);
	assert_int_equal(dnp_engine_stats(nodes[0].e)->query_resends, 0); /* it was applied */
	expect_quiet(0, 0, 20000); /* one completion, one RX event */
	assert_false(next_event_nolink(1, 0, &ev, 1));
}

/*
 * The link a PUT left on breaks before its target got it: the target,
 * asked, declares it not delivered; it is sent again on the other cable
 * and applied once (without queries: -ENOLINK, nothing written).
 */
static void test_engine_put_resent_after_path_break_applied_once(void **state)
{
	uint32_t key = setup_query_pair();
	struct dnp_event ev;

	drop_node = 0;
	drop_kind = DNP_PKT_PUT;
	drop_dir = (int)first_dir_to_1();
	fill(nodes[0].mem[0], 300, 6);
	struct dnp_cmd c = put_cmd(1, 0, BASE, BASE + 64, key, 300, 46);
	assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &c, now), 0);
	ev = expect_event_nolink(0, 0, 400000, DNP_EV_TX_DONE);
	assert_int_equal(ev.status, 0);
	assert_int_equal(ev.cookie, 46);
	assert_int_equal(dnp_engine_link_state(nodes[0].e, (unsigned)drop_dir), DNP_LINK_BROKEN);
	assert_int_equal(dnp_engine_stats(nodes[0].e)->query_resends, 1);
	assert_int_equal(expect_event_nolink(1, 0, 1000, DNP_EV_RX_PUT).va, BASE + 64);
	assert_memory_equal(nodes[1].mem[0] + 64, nodes[0].mem[0], 300);
	pump(20000); /* applied once: one RX event, one completion */
	assert_false(next_event_nolink(1, 0, &ev, 1));
	assert_int_equal(dnp_engine_poll_events(nodes[0].e, 0, &ev, 1), 0);
	assert_int_equal(dnp_engine_stats(nodes[1].e)->rx_refused, 0);
}

/*
 * A 1 MiB PUT is half injected (its link's window full) when that link
 * breaks: the packets it sent are lost or written, the rest never left. The
 * target, asked, declares it not delivered (refusing any stray rest), and it
 * is sent again whole on the other cable: it completes 0 with every byte
 * there (without the query: -ENOLINK at once, the data unknown).
 */
static void test_engine_half_injected_put_resent(void **state)
{
	const size_t len = 1u << 20;
	struct dnp_event ev;

	t_cmd = 1000000;
	t_query = 3000;
	setup_nodes(2);
	uint32_t key = reg_buf(1, 0, BASE, len, DNP_BUF_PUT_TARGET);
	unsigned dir = first_dir_to_1();

	fill(nodes[0].mem[0], len, 8);
	struct dnp_cmd c = put_cmd(1, 0, BASE, BASE, key, len, 48);
	assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &c, now), 0);
	for (unsigned s = 0; s < 100 && !dnp_engine_stats(nodes[0].e)->pkts_injected; s++)
		pump(1);
	uint64_t inj = dnp_engine_stats(nodes[0].e)->pkts_injected;
	assert_true(inj > 0 && inj < 256);
	dnp_engine_link_down(nodes[0].e, dir, now);
	dnp_engine_link_down(nodes[1].e, dnp_torus_opposite((enum dnp_dir)dir), now);
	ev = expect_event_nolink(0, 0, 400000, DNP_EV_TX_DONE);
	assert_int_equal(ev.status, 0);
	assert_int_equal(ev.cookie, 48);
	assert_int_equal(dnp_engine_stats(nodes[0].e)->query_resends, 1);
	assert_memory_equal(nodes[1].mem[0], nodes[0].mem[0], len);
	pump(20000); /* one completion */
	assert_int_equal(dnp_engine_poll_events(nodes[0].e, 0, &ev, 1), 0);
}

/*
 * The PUT was applied but its report is lost, and then every cable of
 * node 0 breaks: no route to ask over, so it fails with -EHOSTUNREACH at
 * its next query, not at the command deadline with -ETIMEDOUT.
 */
static void test_engine_unreachable_target_fails_fast(void **state)
{
	uint32_t key = setup_query_pair();
	struct dnp_event ev;

	put_reports_lost(key, 100, 47);
	expect_event_nolink(1, 0, 1000, DNP_EV_RX_PUT);
	for (unsigned d = 0; d < 2; d++)
		dnp_engine_link_down(nodes[0].e, d, now);
	uint64_t t0 = now;
	ev = expect_event_nolink(0, 0, 100000, DNP_EV_ERROR);
	assert_int_equal(ev.status, -EHOSTUNREACH);
	assert_int_equal(ev.data, DNP_DATA_UNKNOWN); /* it left: the target may hold it */
	assert_int_equal(ev.cookie, 47);
	assert_true(now - t0 <= 2 * t_query); /* the next query, in simulated time */
}

/*
 * The target is slow (its event queue full): a PUT waits at the head of its
 * input while its link breaks, and a query over the other cable finds it not
 * delivered. When the application drains its events, both the original and
 * the resend reach delivery: the message is applied once (the original is
 * refused), and completes once.
 */
static void test_engine_late_original_refused(void **state)
{
	evq_slots = 2;
	evq_node = 1;
	uint32_t key = setup_query_pair();
	struct dnp_event ev;

	for (unsigned i = 0; i < 2; i++) { /* two RX events fill node 1's queue */
		struct dnp_cmd f = put_cmd(1, 0, BASE, BASE, key, 8, 100 + i);
		assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &f, now), 0);
		assert_true(next_event_nolink(0, 0, &ev, 1000));
		assert_int_equal(ev.status, 0);
	}
	fill(nodes[0].mem[0] + 4096, 200, 8);
	struct dnp_cmd c = put_cmd(1, 0, BASE + 4096, BASE + 4096, key, 200, 48);
	assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &c, now), 0);
	pump(200); /* it arrived and was acked; it waits for room at node 1 */
	assert_int_equal(dnp_engine_stats(nodes[1].e)->pkts_delivered, 2);
	dnp_engine_link_down(nodes[0].e, first_dir_to_1(), now);
	for (unsigned s = 0; s < 20000 && !dnp_engine_stats(nodes[0].e)->query_resends; s++)
		pump(1);
	assert_int_equal(dnp_engine_stats(nodes[0].e)->query_resends, 1);
	unsigned rx = 0, mine = 0;
	for (unsigned s = 0; s < 20000; s++) { /* the application drains its events */
		while (dnp_engine_poll_events(nodes[1].e, 0, &ev, 1) == 1)
			if (ev.type == DNP_EV_RX_PUT && (rx++, ev.va == BASE + 4096))
				mine++;
		pump(1);
	}
	assert_int_equal(rx, 3);
	assert_int_equal(mine, 1);
	assert_int_equal(dnp_engine_stats(nodes[1].e)->rx_refused, 1);
	assert_memory_equal(nodes[1].mem[0] + 4096, nodes[0].mem[0] + 4096, 200);
	assert_int_equal(expect_event_nolink(0, 0, 1000, DNP_EV_TX_DONE).cookie, 48);
	assert_int_equal(dnp_engine_poll_events(nodes[0].e, 0, &ev, 1), 0);
}

/*
 * A command that never left (its first hop's link is down, no detour in a
 * 2-node ring) says its data was not delivered; one that left says so after
 * its target refused it; one whose target never answered, that it is unknown.
 */
static void test_engine_error_event_data(void **state)
{
	uint32_t key = setup_query_pair();
	struct dnp_event ev;

	struct dnp_cmd bad = put_cmd(1, 0, BASE, BASE + 65536, key, 64, 50); /* out of range */
	assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &bad, now), 0);
	ev = expect_event_nolink(0, 0, 1000, DNP_EV_ERROR);
	assert_int_equal(ev.cookie, 50);
	assert_int_equal(ev.data, DNP_DATA_NOT_DELIVERED);
	for (unsigned d = 0; d < 2; d++)
		dnp_engine_link_down(nodes[0].e, d, now);
	struct dnp_cmd c = put_cmd(1, 0, BASE, BASE, key, 64, 51);
	assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &c, now), 0);
	ev = expect_event_nolink(0, 0, 1000, DNP_EV_ERROR);
	assert_int_equal(ev.cookie, 51);
	assert_true(ev.status == -ENOLINK || ev.status == -EHOSTUNREACH);
	assert_int_equal(ev.data, DNP_DATA_NOT_DELIVERED); /* nothing left */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_engine_cmpl_batch_in_order, teardown),
		cmocka_unit_test_teardown(test_engine_cmpl_batch_many_senders, teardown),
		cmocka_unit_test_teardown(test_engine_cmpl_batch_full, teardown),
		cmocka_unit_test_teardown(test_engine_pool_short_hw_credits, teardown),
		cmocka_unit_test_teardown(test_engine_pool_short_dnpd_links, teardown),
		cmocka_unit_test_teardown(test_engine_lost_cmpl_times_out, teardown),
		cmocka_unit_test_teardown(test_engine_query_recovers_lost_cmpl, teardown),
		cmocka_unit_test_teardown(test_engine_put_resent_after_path_break_applied_once,
					  teardown),
		cmocka_unit_test_teardown(test_engine_half_injected_put_resent, teardown),
		cmocka_unit_test_teardown(test_engine_unreachable_target_fails_fast, teardown),
		cmocka_unit_test_teardown(test_engine_late_original_refused, teardown),
		cmocka_unit_test_teardown(test_engine_error_event_data, teardown),
		cmocka_unit_test_teardown(test_engine_send_reasm_timeout, teardown),
		cmocka_unit_test_teardown(test_engine_slow_app_does_not_block_transit, teardown),
		cmocka_unit_test_teardown(test_engine_slow_app_does_not_block_loopback, teardown),
		cmocka_unit_test_teardown(test_engine_mutual_get_storm, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
