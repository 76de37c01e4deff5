/* SPDX-License-Identifier: MIT */
/*
 * test_engine_links — the engine over its links: a broken link fails or
 * detours commands, prompt credits and the ack delay, one loss one resend,
 * a restarted node rejoins, a replay on another link is dropped. Engines on
 * an X ring wired frame by frame (test_engine_harness.h).
 */
#include "test_engine_harness.h"

static void test_engine_link_down_fails_commands(void **state)
{
	setup_nodes(2);
	uint32_t key;

	key = reg_buf(1, 0, BASE, 65536, DNP_BUF_PUT_TARGET);
	pump(100);
	for (unsigned d = 0; d < 2; d++)
		dnp_engine_link_down(nodes[0].e, d, now);
	assert_int_equal(dnp_engine_link_state(nodes[0].e, DNP_DIR_XP), DNP_LINK_BROKEN);
	struct dnp_cmd c = put_cmd(1, 0, BASE, BASE, key, 100, 9);
	assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &c, now), 0);
	/* both cables to node 1 are known broken: no route at all */
	expect_error(0, 0, -EHOSTUNREACH);
}

/*
 * A ring of 4 with the cable 0-1 broken: node 0 sends to 1 the long way
 * round, and node 3, whose shorter way (3 -> 0 -> 1) crosses the cable,
 * learns of it from ROUTE packets and goes 3 -> 2 -> 1 (docs/routing.md).
 */
static void test_engine_detour_around_broken_cable(void **state)
{
	setup_nodes(4);
	uint32_t key;
	struct dnp_event ev;

	key = reg_buf(1, 0, BASE, 65536, DNP_BUF_PUT_TARGET);
	pump(100);
	dnp_engine_link_down(nodes[0].e, DNP_DIR_XP, now);
	dnp_engine_link_down(nodes[1].e, DNP_DIR_XM, now);
	pump(200);
	assert_true(dnp_engine_stats(nodes[3].e)->route_rx > 0);
	assert_true(dnp_engine_stats(nodes[2].e)->route_changes > 0);
	for (unsigned src = 0; src < 4; src += 3) {
		fill(nodes[src].mem[0], 5000, (uint8_t)(src + 1));
		struct dnp_cmd c = put_cmd(1, 0, BASE, BASE + 8192 * src, key, 5000, src);
		assert_int_equal(dnp_engine_submit(nodes[src].e, 0, &c, now), 0);
		do
			assert_true(next_event(1, 0, &ev, 5000));
		while (ev.type == DNP_EV_LINK);
		assert_int_equal(ev.type, DNP_EV_RX_PUT);
		assert_int_equal(ev.hops, src == 0 ? 3 : 2);
		assert_memory_equal(nodes[1].mem[0] + 8192 * src, nodes[src].mem[0], 5000);
		do
			assert_true(next_event(src, 0, &ev, 5000));
		while (ev.type == DNP_EV_LINK);
		assert_int_equal(ev.type, DNP_EV_TX_DONE);
		assert_int_equal(ev.status, 0);
	}
	/* both detours went through node 2 (2 packets each); nothing was dropped */
	assert_true(dnp_engine_stats(nodes[2].e)->pkts_forwarded >= 4);
	assert_int_equal(dnp_engine_stats(nodes[0].e)->cmds_failed, 0);
	assert_int_equal(dnp_engine_stats(nodes[3].e)->cmds_failed, 0);
}

/*
 * Node 0 PUTs len bytes (fill pattern seed) to a target at BASE of node 1,
 * port 0: it arrives byte-exact within rx_steps, and completes within 1000
 * more. Returns the completion.
 */
static struct dnp_event put_arrives(size_t len, unsigned seed, uint64_t cookie, unsigned rx_steps)
{
	uint32_t key = reg_buf(1, 0, BASE, len, DNP_BUF_PUT_TARGET);

	fill(nodes[0].mem[0], len, seed);
	struct dnp_cmd c = put_cmd(1, 0, BASE, BASE, key, len, cookie);
	assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &c, now), 0);
	assert_int_equal(expect_event(1, 0, rx_steps, DNP_EV_RX_PUT).len, len);
	assert_memory_equal(nodes[1].mem[0], nodes[0].mem[0], len);
	return expect_event(0, 0, 1000, DNP_EV_TX_DONE);
}

/* A 1 MiB PUT from node 0 to node 1 arrives byte-exact, completes, never resent, before max_now. */
static void put_stream_1mib(unsigned seed, uint64_t max_now)
{
	put_arrives(1u << 20, seed, 3, 20000); /* 256 packets of 4 KiB */
	assert_true(now < max_now);
	assert_int_equal(dnp_engine_link_stats(nodes[0].e, DNP_DIR_XP)->tx_retx_frames, 0);
}

/* With EXACT credits a stream is paced by prompt credits, not by the credit period. */
static void test_engine_prompt_credits_stream(void **state)
{
	exact_prompt = true;
	setup_nodes(2);
	put_stream_1mib(11, 1000000000); /* far fewer steps than one credit period */
}

/* CREDIT frames both nodes sent, over every link. */
static uint64_t credits_sent(void)
{
	uint64_t n = 0;

	for (unsigned i = 0; i < nnodes; i++)
		for (unsigned d = 0; d < DNP_NDIRS; d++) {
			const struct dnp_link_stats *st = dnp_engine_link_stats(nodes[i].e, d);
			if (st)
				n += st->tx_credits;
		}
	return n;
}

/*
 * 'rounds' 8-byte PUT ping-pongs between nodes 0 and 1; every message and
 * completion arrives. Returns the CREDIT frames sent meanwhile.
 */
static uint64_t pingpong_credits(unsigned rounds)
{
	uint32_t key[2];
	struct dnp_event ev;

	for (unsigned i = 0; i < 2; i++)
		assert_int_equal(dnp_engine_register(nodes[i].e, 1, BASE + 0x1000, 4096,
						     DNP_BUF_PUT_TARGET, 0, &key[i]),
				 0);
	pump(200); /* links up, their first credits out */
	uint64_t c0 = credits_sent();
	for (unsigned r = 0; r < rounds; r++) {
		for (unsigned i = 0; i < 2; i++) {
			unsigned j = 1 - i;
			nodes[i].mem[0][0] = (uint8_t)(r * 2 + i);
			struct dnp_cmd c = put_cmd(j, 1, BASE, BASE + 0x1000, key[j], 8, r);
			assert_int_equal(dnp_engine_submit(nodes[i].e, 0, &c, now), 0);
			ev = expect_event(j, 1, 1000, DNP_EV_RX_PUT);
			assert_int_equal(nodes[j].mem[1][0x1000], (uint8_t)(r * 2 + i));
			ev = expect_event(i, 0, 1000, DNP_EV_TX_DONE);
			assert_int_equal(ev.cookie, r);
		}
	}
	return credits_sent() - c0;
}

/* Prompt credits without a delay: a credit for (nearly) every frame that arrived. */
static void test_engine_prompt_credits_per_frame(void **state)
{
	exact_prompt = true;
	setup_nodes(2);
	/* 20 rounds: 40 data frames and 40 completions */
	assert_true(pingpong_credits(20) >= 40);
}

/*
 * dnpd's delayed credits (ack_delay): the same ping-pong sends almost no
 * CREDIT frame (the acks wait, or ride on frames going back), yet an idle
 * link's pending credit still goes out once the delay has passed.
 */
static void test_engine_ack_delay_pingpong(void **state)
{
	exact_prompt = true;
	ack_delay = 5000;
	setup_nodes(2);
	assert_true(pingpong_credits(20) <= 4);
	uint64_t c0 = credits_sent();
	uint64_t dl = dnp_engine_next_deadline(nodes[1].e);
	assert_true(dl <= now + ack_delay);
	pump((unsigned)(dl - now) + 2);
	assert_true(credits_sent() > c0);
	pump((unsigned)ack_delay + 2); /* the other node's, too */
	for (unsigned i = 0; i < 2; i++)
		assert_false(dnp_engine_has_work(nodes[i].e));
}

/* A 1 MiB stream under delayed credits: its credits come as the FIFO matters, no stall. */
static void test_engine_ack_delay_stream(void **state)
{
	exact_prompt = true;
	ack_delay = 1000000; /* longer than the whole test: only stale-credit rules act */
	setup_nodes(2);
	put_stream_1mib(13, 20000);
}

static void one_loss_one_resend(void);

/* A lost frame under delayed credits: the gap is reported at once, one resend. */
static void test_engine_ack_delay_one_loss(void **state)
{
	exact_prompt = true;
	ack_delay = 1000000;
	setup_nodes(2);
	one_loss_one_resend();
}

/*
 * One data frame of a 16-frame PUT is lost: the receiver holds the 12 frames
 * behind the gap, its selective ack gets exactly that frame resent within a
 * round trip (long before the retransmission timeout), and the message is
 * written once, byte for byte, with one completion.
 */
static void one_loss_one_resend(void)
{
	struct dnp_event ev;

	drop_seq = 3;
	assert_int_equal(put_arrives(16 * DNP_MAX_PAYLOAD, 5, 9, 5000).status, 0);
	assert_int_equal(drop_seq, -1); /* the frame was dropped */
	assert_true(now < 2000);        /* the engine's default rto: no timeout was waited for */
	const struct dnp_link_stats *tx = dnp_engine_link_stats(nodes[0].e, DNP_DIR_XP);
	const struct dnp_link_stats *rx = dnp_engine_link_stats(nodes[1].e, DNP_DIR_XM);
	assert_int_equal(tx->tx_retx_frames, 1);
	assert_int_equal(tx->fast_retx, 1);
	assert_int_equal(tx->retx_rounds, 0);
	assert_true(rx->rx_held > 0);
	assert_int_equal(rx->vc[0].rx_packets, 16);
	expect_quiet(0, 0, 500); /* one completion */
	assert_int_equal(dnp_engine_poll_events(nodes[1].e, 0, &ev, 1), 0);
}

static void test_engine_one_loss_one_resend(void **state)
{
	exact_prompt = true;
	setup_nodes(2);
	one_loss_one_resend();
}

/*
 * Node 1 is killed under traffic and a fresh engine takes its place (same
 * coordinates, another incarnation). Node 0's links break and come back in a
 * new epoch: the PUT in flight fails exactly once, both LINK events reach
 * the application, a frame of the old epoch is never delivered, and a new PUT
 * flows through the rejoined links.
 */
static void test_engine_restarted_node_rejoins(void **state)
{
	reset_period = 500;
	setup_nodes(2);
	uint32_t key;
	const size_t len = 1u << 20;
	struct dnp_event ev;

	key = reg_buf(1, 0, BASE, len, DNP_BUF_PUT_TARGET);
	fill(nodes[0].mem[0], len, 5);
	struct dnp_cmd c = put_cmd(1, 0, BASE, BASE, key, len, 77);
	assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &c, now), 0);
	pump(30);
	assert_true(last_data_len > 0);
	uint8_t stale[DNP_MAX_FRAME];
	uint32_t stale_len = last_data_len;
	memcpy(stale, last_data, stale_len);

	/* kill -9 and restart node 1: new engine, new nonce, empty memory */
	dnp_engine_destroy(nodes[1].e);
	memset(nodes[1].mem[0], 0, ARENA);
	create_node(1, 2, 999);
	unsigned failed = 0, done = 0, down = 0, up = 0;
	for (unsigned s = 0; s < 20000 && (up < 2 || failed + done < 1); s++) {
		pump(1);
		while (dnp_engine_poll_events(nodes[0].e, 0, &ev, 1) == 1) {
			if (ev.type == DNP_EV_LINK) {
				if (ev.status == -ENOLINK)
					down++;
				else if (ev.status == 0)
					up++;
			} else if (ev.cookie == 77) {
				if (ev.type == DNP_EV_ERROR)
					failed++;
				else
					done++;
			}
		}
	}
	assert_int_equal(failed, 1);
	assert_int_equal(done, 0);
	assert_int_equal(down, 2); /* X+ and X- both lead to node 1 on a 2-ring */
	assert_int_equal(up, 2);
	for (unsigned d = 0; d < 2; d++) {
		assert_int_equal(dnp_engine_link_state(nodes[0].e, d), DNP_LINK_UP);
		assert_int_equal(dnp_engine_link_state(nodes[1].e, d), DNP_LINK_UP);
	}
	pump(5000);
	while (dnp_engine_poll_events(nodes[0].e, 0, &ev, 1) == 1)
		assert_true(ev.cookie != 77); /* never a second completion */

	/* A frame of the old epoch is dropped: nothing is written. */
	uint64_t stale0 = dnp_engine_link_stats(nodes[1].e, DNP_DIR_XM)->rx_stale;
	assert_int_equal(dnp_engine_rx(nodes[1].e, DNP_DIR_XM, stale, stale_len, now), -ESTALE);
	assert_int_equal(dnp_engine_link_stats(nodes[1].e, DNP_DIR_XM)->rx_stale, stale0 + 1);
	expect_quiet(1, 0, 100);

	/* New commands flow: a PUT to the restarted node arrives byte-exact. */
	key = reg_buf(1, 0, BASE, len, DNP_BUF_PUT_TARGET);
	fill(nodes[0].mem[0], 65536, 9);
	c = put_cmd(1, 0, BASE, BASE, key, 65536, 78);
	assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &c, now), 0);
	ev = expect_event(0, 0, 20000, DNP_EV_TX_DONE);
	assert_int_equal(ev.cookie, 78);
	assert_memory_equal(nodes[1].mem[0], nodes[0].mem[0], 65536);
}

/*
 * Issue 7: a frame is accepted only on its own link. In a ring of size 2
 * both X links join the same two nodes, each with its own sequence space
 * starting at 0: the first PUT frame recorded on one link and replayed on
 * the other must be dropped (and counted), never delivered a second time.
 */
static void test_engine_replay_on_other_link_dropped(void **state)
{
	setup_nodes(2);
	uint32_t key;
	struct dnp_frame f[16];
	uint8_t rec[DNP_MAX_FRAME];
	uint32_t rec_len = 0;
	unsigned rec_dir = 0;

	key = reg_buf(1, 0, BASE, 65536, DNP_BUF_PUT_TARGET);
	pump(10);
	fill(nodes[0].mem[0], 1000, 4);
	struct dnp_cmd c = put_cmd(1, 0, BASE, BASE, key, 1000, 1);
	assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &c, now), 0);
	/* pump by hand, recording the PUT frame */
	for (unsigned step = 0; step < 200; step++, now++) {
		for (unsigned i = 0; i < 2; i++)
			dnp_engine_run(nodes[i].e, now);
		for (unsigned i = 0; i < 2; i++)
			for (unsigned d = 0; d < DNP_NDIRS; d++) {
				unsigned n = dnp_engine_tx_burst(nodes[i].e, d, f, 16, now);
				for (unsigned k = 0; k < n; k++) {
					struct dnp_pkt_hdr h;
					const uint8_t *pl;
					uint8_t copy[DNP_MAX_FRAME];
					memcpy(copy, f[k].data, f[k].len);
					assert_int_equal(dnp_pkt_decode(copy, f[k].len, &h, &pl),
							 0);
					if (i == 0 && h.kind == DNP_PKT_PUT && !rec_len) {
						memcpy(rec, copy, f[k].len);
						rec_len = f[k].len;
						rec_dir = d;
					}
					(void)dnp_engine_rx(nodes[1 - i].e, dnp_torus_opposite(d),
							    copy, f[k].len, now);
				}
			}
	}
	assert_true(rec_len > 0);
	struct dnp_event ev;
	assert_int_equal(dnp_engine_poll_events(nodes[1].e, 0, &ev, 1), 1);
	assert_int_equal(ev.type, DNP_EV_RX_PUT);
	assert_int_equal(dnp_engine_poll_events(nodes[0].e, 0, &ev, 1), 1);
	assert_int_equal(ev.type, DNP_EV_TX_DONE);

	/* Replay on node 1's other X link (the one node 0's rec_dir does not feed). */
	memset(nodes[1].mem[0], 0, 1000);
	uint64_t wrong = dnp_engine_stats(nodes[1].e)->rx_wrong_link;
	assert_int_equal(dnp_engine_rx(nodes[1].e, rec_dir, rec, rec_len, now), -EXDEV);
	assert_int_equal(dnp_engine_stats(nodes[1].e)->rx_wrong_link, wrong + 1);
	expect_quiet(1, 0, 500);
	for (size_t i = 0; i < 1000; i++)
		assert_int_equal(nodes[1].mem[0][i], 0);
	/* On its own link it is a duplicate: dropped as well. */
	assert_int_equal(dnp_engine_rx(nodes[1].e, dnp_torus_opposite(rec_dir), rec, rec_len, now),
			 -EALREADY);
	expect_quiet(1, 0, 500);
	/* And a credit frame naming another node than the neighbour is refused. */
	struct dnp_pkt_hdr h = { .kind = DNP_PKT_CREDIT,
				 .src_dir = DNP_DIR_XP,
				 .src = { 1, 0, 0 },
				 .dst = { 1, 0, 0 } };
	uint8_t cf[DNP_FRAME_OVERHEAD];
	assert_int_equal(dnp_pkt_encode(&h, NULL, cf, sizeof(cf)), (int)sizeof(cf));
	assert_int_equal(dnp_engine_rx(nodes[1].e, DNP_DIR_XM, cf, sizeof(cf), now), -EXDEV);
	h.src = (struct dnp_coord){ 0, 0, 0 };
	h.epoch = dnp_link_epoch(dnp_engine_link(nodes[1].e, DNP_DIR_XM)); /* the agreed one */
	assert_int_equal(dnp_pkt_encode(&h, NULL, cf, sizeof(cf)), (int)sizeof(cf));
	assert_int_equal(dnp_engine_rx(nodes[1].e, DNP_DIR_XM, cf, sizeof(cf), now), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_engine_replay_on_other_link_dropped, teardown),
		cmocka_unit_test_teardown(test_engine_one_loss_one_resend, teardown),
		cmocka_unit_test_teardown(test_engine_link_down_fails_commands, teardown),
		cmocka_unit_test_teardown(test_engine_detour_around_broken_cable, teardown),
		cmocka_unit_test_teardown(test_engine_prompt_credits_stream, teardown),
		cmocka_unit_test_teardown(test_engine_prompt_credits_per_frame, teardown),
		cmocka_unit_test_teardown(test_engine_ack_delay_pingpong, teardown),
		cmocka_unit_test_teardown(test_engine_ack_delay_stream, teardown),
		cmocka_unit_test_teardown(test_engine_ack_delay_one_loss, teardown),
		cmocka_unit_test_teardown(test_engine_restarted_node_rejoins, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
