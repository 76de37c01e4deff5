/* SPDX-License-Identifier: MIT */
/*
 * test_engine_links — the engine over its links: a broken link fails or
 * detours commands, prompt credits and the ack delay, one loss one resend,
 * a restarted node rejoins, a replay on another link is dropped, the link
 * handshake refuses a neighbour whose settings differ. Engines on an X ring
 * wired frame by frame (test_engine_harness.h).
 */
#include "test_engine_harness.h"

/*
 * An orderly stop (dnp_engine_leave): the next RESET frames say so, and the
 * neighbour takes both links as BROKEN at once, long before any credit
 * timeout, counting them as left (peer_left) rather than failed.
 */
static void test_engine_leave_breaks_peer_links_at_once(void **state)
{
	setup_nodes(2);
	pump(100);
	assert_int_equal(dnp_engine_link_state(nodes[1].e, DNP_DIR_XP), DNP_LINK_UP);
	dnp_engine_leave(nodes[0].e);
	pump(5);
	for (unsigned d = 0; d < 2; d++) {
		assert_int_equal(dnp_engine_link_state(nodes[1].e, d), DNP_LINK_BROKEN);
		assert_int_equal(dnp_engine_link_stats(nodes[1].e, d)->peer_left, 1);
	}
}

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

/* ---- the link handshake (link.h, docs/protocol.md "The link handshake") ---- */

/* Node i of an x-ring as create_node makes it (links come back), its conf then changed by tweak. */
static void create_node_tweaked(unsigned i, unsigned x, uint32_t seed,
				void (*tweak)(struct dnp_engine_conf *))
{
	struct dnp_engine_conf c;

	dnp_engine_conf_default(&c);
	dnp_torus_init(&c.torus, x, 1, 1);
	c.self = (struct dnp_coord){ (uint8_t)i, 0, 0 };
	c.max_ports = NPORTS;
	c.mem = &ops;
	c.mem_ctx = &nodes[i];
	c.key_secret[0] = seed;
	c.link.reset_period = reset_period;
	if (tweak)
		tweak(&c);
	assert_int_equal(dnp_engine_create(&c, now, &nodes[i].e), 0);
	for (unsigned p = 0; p < NPORTS; p++)
		assert_int_equal(dnp_engine_port_open(nodes[i].e, p), 0);
}

static void tweak_vcs(struct dnp_engine_conf *c)
{
	c->link.nvc = 4;
}

static void tweak_torus(struct dnp_engine_conf *c)
{
	dnp_torus_init(&c->torus, 3, 1, 1);
}

static void tweak_transport(struct dnp_engine_conf *c)
{
	c->link.transport = DNP_XPORT_UDP;
}

static void tweak_vc_mode(struct dnp_engine_conf *c)
{
	c->vc_mode = DNP_VC_SINGLE;
}

static void tweak_fifo(struct dnp_engine_conf *c)
{
	c->link.fifo_words = 4096;
	c->link.t_red = 4090;
	c->link.t_yellow = 2048;
}

static const struct mismatch {
	void (*tweak)(struct dnp_engine_conf *);
	unsigned field;
	uint64_t base, other; /* the value of node 0 (defaults) and of the tweaked node 1 */
	const char *words;    /* node 0's refusal in words */
} mismatches[] = {
	{ tweak_vcs, DNP_REFUSE_VCS, 2, 4, "vcs here 2 peer 4" },
	{ tweak_torus, DNP_REFUSE_TORUS, 2 | 1ull << 16 | 1ull << 32, 3 | 1ull << 16 | 1ull << 32,
	  "torus here 2x1x1 peer 3x1x1" },
	{ tweak_transport, DNP_REFUSE_TRANSPORT, DNP_XPORT_NONE, DNP_XPORT_UDP,
	  "transport here none peer udp" },
	{ tweak_vc_mode, DNP_REFUSE_VC_MODE, DNP_VC_DATELINE, DNP_VC_SINGLE,
	  "vc_mode here 0 peer 1" },
	{ tweak_fifo, DNP_REFUSE_FIFO, 2048, 4096, "fifo_words here 2048 peer 4096" },
};

/* Both links of node n refused field with these values (here first), and not UP. */
static void expect_refused(unsigned n, unsigned field, uint64_t here, uint64_t peer)
{
	for (unsigned d = 0; d < 2; d++) {
		const struct dnp_link *l = dnp_engine_link(nodes[n].e, d);
		const struct dnp_link_refusal *r = dnp_link_refusal(l);

		assert_int_not_equal(dnp_engine_link_state(nodes[n].e, d), DNP_LINK_UP);
		assert_int_equal(r->field, field);
		assert_int_equal(r->here, here);
		assert_int_equal(r->peer, peer);
		assert_true(r->frames > 1); /* the probes went on */
		assert_int_equal(dnp_link_stats(l)->ups, 0);
		assert_true(dnp_link_stats(l)->rx_refused >= r->frames);
	}
}

/*
 * Node 1 started with one setting that differs from node 0's: no link comes
 * UP, both ends name the field with both values, the probes go on; node 1
 * restarted with node 0's settings brings both links UP, and a PUT flows.
 */
static void test_engine_handshake_mismatch_refused(void **state)
{
	for (unsigned k = 0; k < sizeof(mismatches) / sizeof(mismatches[0]); k++) {
		const struct mismatch *m = &mismatches[k];
		char words[96];

		reset_period = 500;
		setup_nodes(2);
		dnp_engine_destroy(nodes[1].e);
		create_node_tweaked(1, 2, 1235, m->tweak);
		pump(3000);
		expect_refused(0, m->field, m->base, m->other);
		expect_refused(1, m->field, m->other, m->base);
		dnp_link_refusal_str(dnp_link_refusal(dnp_engine_link(nodes[0].e, DNP_DIR_XP)),
				     words, sizeof(words));
		assert_string_equal(words, m->words);
		uint32_t ep = dnp_link_refusal(dnp_engine_link(nodes[0].e, DNP_DIR_XP))->episode;
		pump(1000); /* the same refusal goes on: the same episode (dnpd logs it once) */
		assert_int_equal(dnp_link_refusal(dnp_engine_link(nodes[0].e, DNP_DIR_XP))->episode,
				 ep);

		/* node 1 restarted with the same settings as node 0 */
		dnp_engine_destroy(nodes[1].e);
		create_node_tweaked(1, 2, 1236, NULL);
		pump(3000);
		for (unsigned n = 0; n < 2; n++)
			for (unsigned d = 0; d < 2; d++) {
				assert_int_equal(dnp_engine_link_state(nodes[n].e, d), DNP_LINK_UP);
				assert_int_equal(
					dnp_link_refusal(dnp_engine_link(nodes[n].e, d))->field,
					DNP_REFUSE_NONE);
			}
		uint32_t key;
		struct dnp_event ev;

		assert_int_equal(
			dnp_engine_register(nodes[1].e, 0, BASE, 4096, DNP_BUF_PUT_TARGET, 0, &key),
			0);
		fill(nodes[0].mem[0], 4096, k);
		struct dnp_cmd c = put_cmd(1, 0, BASE, BASE, key, 4096, 40 + k);
		assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &c, now), 0);
		do
			assert_true(next_event(0, 0, &ev, 5000));
		while (ev.type == DNP_EV_LINK);
		assert_int_equal(ev.type, DNP_EV_TX_DONE);
		assert_memory_equal(nodes[1].mem[0], nodes[0].mem[0], 4096);
		teardown(state);
	}
}

/* A RESET frame from node 1 to node 0's X+ link: probe of epoch 0, payload hello (len bytes). */
static int reset_frame(uint8_t *f, size_t cap, const uint8_t *hello, uint16_t len)
{
	struct dnp_pkt_hdr h = {
		.kind = DNP_PKT_CREDIT,
		.lflags = DNP_LINK_F_RESET,
		.len = len,
		.src_dir = DNP_DIR_XM,
		.src = { 1, 0, 0 },
		.dst = { 1, 0, 0 },
	};

	h.credit[0].received = 0x1234567u; /* its nonce */
	return dnp_pkt_encode(&h, hello, f, cap);
}

/* Node 0's hello as its engine sends it, for tests to alter. */
static void hello_of_node0(struct dnp_pkt_hello *he)
{
	uint8_t b[DNP_HELLO_BYTES];

	dnp_link_hello(dnp_engine_link(nodes[0].e, DNP_DIR_XP), b);
	assert_int_equal(dnp_pkt_hello_decode(b, sizeof(b), he), 0);
}

/*
 * What cannot be set in an engine's conf, told by hand-made frames: a peer
 * without a hello (an older SoftDNP), another hello version, a malformed
 * hello, another largest frame. Each is refused and named (-ECONNREFUSED),
 * the link stays INIT; the same frame with our hello then brings it UP.
 */
static void test_engine_handshake_old_or_odd_peer(void **state)
{
	uint8_t f[DNP_FRAME_OVERHEAD + DNP_HELLO_MAX_BYTES], b[DNP_HELLO_MAX_BYTES];
	struct dnp_pkt_hello he;
	const struct dnp_link_refusal *r;
	char words[96];
	int n;

	setup_nodes(2);
	r = dnp_link_refusal(dnp_engine_link(nodes[0].e, DNP_DIR_XP));
	hello_of_node0(&he);

	/* an older SoftDNP: a RESET frame without payload */
	n = reset_frame(f, sizeof(f), NULL, 0);
	assert_int_equal(n, DNP_FRAME_OVERHEAD);
	assert_int_equal(dnp_engine_rx(nodes[0].e, DNP_DIR_XP, f, (size_t)n, now), -ECONNREFUSED);
	assert_int_equal(r->field, DNP_REFUSE_NO_HELLO);
	dnp_link_refusal_str(r, words, sizeof(words));
	assert_string_equal(words, "hello missing (the peer is an older SoftDNP)");

	/* version 1 (a SoftDNP without buffer credits), and a later one, longer */
	dnp_pkt_hello_encode(&he, b);
	b[2] = 1;
	n = reset_frame(f, sizeof(f), b, DNP_HELLO_BYTES);
	assert_int_equal(dnp_engine_rx(nodes[0].e, DNP_DIR_XP, f, (size_t)n, now), -ECONNREFUSED);
	assert_int_equal(r->field, DNP_REFUSE_VERSION);
	dnp_link_refusal_str(r, words, sizeof(words));
	assert_string_equal(words, "hello version here 2 peer 1");
	memset(b, 0, sizeof(b));
	dnp_pkt_hello_encode(&he, b);
	b[2] = 3;
	n = reset_frame(f, sizeof(f), b, 48);
	assert_int_equal(dnp_engine_rx(nodes[0].e, DNP_DIR_XP, f, (size_t)n, now), -ECONNREFUSED);
	assert_int_equal(r->field, DNP_REFUSE_VERSION);
	dnp_link_refusal_str(r, words, sizeof(words));
	assert_string_equal(words, "hello version here 2 peer 3");

	/* version 2 with a reserved byte set, and a bad magic */
	dnp_pkt_hello_encode(&he, b);
	b[DNP_HELLO_BYTES - 1] = 1;
	n = reset_frame(f, sizeof(f), b, DNP_HELLO_BYTES);
	assert_int_equal(dnp_engine_rx(nodes[0].e, DNP_DIR_XP, f, (size_t)n, now), -ECONNREFUSED);
	assert_int_equal(r->field, DNP_REFUSE_BAD);
	dnp_pkt_hello_encode(&he, b);
	b[0] ^= 0xff;
	n = reset_frame(f, sizeof(f), b, DNP_HELLO_BYTES);
	assert_int_equal(dnp_engine_rx(nodes[0].e, DNP_DIR_XP, f, (size_t)n, now), -ECONNREFUSED);
	assert_int_equal(r->field, DNP_REFUSE_BAD);

	/* another largest frame */
	struct dnp_pkt_hello big = he;
	big.max_frame = 9000 + DNP_FRAME_OVERHEAD;
	dnp_pkt_hello_encode(&big, b);
	n = reset_frame(f, sizeof(f), b, DNP_HELLO_BYTES);
	uint32_t ep = r->episode;
	assert_int_equal(dnp_engine_rx(nodes[0].e, DNP_DIR_XP, f, (size_t)n, now), -ECONNREFUSED);
	assert_int_equal(r->field, DNP_REFUSE_MAX_FRAME);
	assert_int_equal(r->here, DNP_MAX_FRAME);
	assert_int_equal(r->peer, 9000 + DNP_FRAME_OVERHEAD);
	assert_int_equal(r->episode, ep + 1); /* a new refusal: dnpd logs it */
	assert_int_equal(r->frames, 1);
	assert_int_equal(dnp_engine_rx(nodes[0].e, DNP_DIR_XP, f, (size_t)n, now), -ECONNREFUSED);
	assert_int_equal(r->episode, ep + 1); /* the same one again: not a new episode */
	assert_int_equal(r->frames, 2);
	assert_int_equal(dnp_engine_link_state(nodes[0].e, DNP_DIR_XP), DNP_LINK_INIT);
	assert_int_equal(dnp_engine_link_stats(nodes[0].e, DNP_DIR_XP)->ups, 0);

	/* the same frame with our own hello: accepted, the link comes UP */
	dnp_pkt_hello_encode(&he, b);
	n = reset_frame(f, sizeof(f), b, DNP_HELLO_BYTES);
	assert_int_equal(dnp_engine_rx(nodes[0].e, DNP_DIR_XP, f, (size_t)n, now), 0);
	assert_int_equal(r->field, DNP_REFUSE_NONE);
	assert_int_equal(dnp_engine_link_state(nodes[0].e, DNP_DIR_XP), DNP_LINK_UP);
}

/*
 * An UP link that hears a hello it refuses (its neighbour restarted with
 * other settings) breaks at once and tells the application; the next probes
 * of the real neighbour, whose hello matches, bring it UP again.
 */
static void test_engine_handshake_refusal_breaks_up_link(void **state)
{
	uint8_t f[DNP_FRAME_OVERHEAD + DNP_HELLO_BYTES], b[DNP_HELLO_BYTES];
	struct dnp_pkt_hello he;
	struct dnp_event ev;
	int n;

	reset_period = 500;
	setup_nodes(2);
	pump(200);
	assert_int_equal(dnp_engine_link_state(nodes[0].e, DNP_DIR_XP), DNP_LINK_UP);
	hello_of_node0(&he);
	he.nvc = 4;
	dnp_pkt_hello_encode(&he, b);
	n = reset_frame(f, sizeof(f), b, DNP_HELLO_BYTES);
	assert_int_equal(dnp_engine_rx(nodes[0].e, DNP_DIR_XP, f, (size_t)n, now), -ECONNREFUSED);
	assert_int_equal(dnp_engine_link_state(nodes[0].e, DNP_DIR_XP), DNP_LINK_BROKEN);
	assert_int_equal(dnp_engine_poll_events(nodes[0].e, 0, &ev, 1), 1);
	assert_int_equal(ev.type, DNP_EV_LINK);
	assert_int_equal(ev.status, -ENOLINK);
	assert_int_equal(ev.len, DNP_DIR_XP);
	pump(3000);
	assert_int_equal(dnp_engine_link_state(nodes[0].e, DNP_DIR_XP), DNP_LINK_UP);
	assert_int_equal(dnp_link_refusal(dnp_engine_link(nodes[0].e, DNP_DIR_XP))->field,
			 DNP_REFUSE_NONE);
}

/*
 * The hello's bytes (docs/protocol.md, "The link handshake"), pinned: magic
 * "HL", version 1, transport, dims, VCs, VC mode, FIFO words, largest frame,
 * 14 zero bytes; and each class of bad hello has its error.
 */
static void tweak_vcs_adaptive(struct dnp_engine_conf *c)
{
	tweak_vcs(c);
	c->routing = DNP_ROUTING_ADAPTIVE;
}

/*
 * Two 4-VC nodes, one of them adaptive: a DOR node drops adaptive packets as
 * misrouted, so the hello refuses the pair (routing named on both ends), and
 * node 1 restarted with DOR brings the links UP.
 */
static void test_engine_handshake_routing_refused(void **state)
{
	char words[96];

	reset_period = 500;
	setup_nodes(2);
	for (unsigned n = 0; n < 2; n++) {
		dnp_engine_destroy(nodes[n].e);
		create_node_tweaked(n, 2, 1240 + n, n ? tweak_vcs_adaptive : tweak_vcs);
	}
	pump(3000);
	expect_refused(0, DNP_REFUSE_ROUTING, DNP_ROUTING_DOR, DNP_ROUTING_ADAPTIVE);
	expect_refused(1, DNP_REFUSE_ROUTING, DNP_ROUTING_ADAPTIVE, DNP_ROUTING_DOR);
	dnp_link_refusal_str(dnp_link_refusal(dnp_engine_link(nodes[1].e, DNP_DIR_XP)), words,
			     sizeof(words));
	assert_string_equal(words, "routing here adaptive peer dor");
	dnp_engine_destroy(nodes[1].e);
	create_node_tweaked(1, 2, 1242, tweak_vcs);
	pump(3000);
	for (unsigned n = 0; n < 2; n++)
		for (unsigned d = 0; d < 2; d++)
			assert_int_equal(dnp_engine_link_state(nodes[n].e, d), DNP_LINK_UP);
	teardown(state);
}

static void test_engine_handshake_hello_bytes(void **state)
{
	static const uint8_t golden[DNP_HELLO_BYTES] = {
		0x48,
		0x4c,
		0x02,
		0x02,
		0x04,
		0x00,
		0x02,
		0x00,
		0x00,
		0x01,
		0x03,
		0x01,
		0x00,
		0x40,
		0x00,
		0x00,
		0x40,
		0x10,
		0x01, /* routing: adaptive */
		/* reserved: */ 0,
	};
	struct dnp_pkt_hello he = { .version = 2,
				    .transport = DNP_XPORT_UDP,
				    .dim = { 4, 2, 256 },
				    .nvc = 3,
				    .vc_mode = DNP_VC_SINGLE,
				    .fifo_words = 16384,
				    .max_frame = DNP_MAX_FRAME,
				    .routing = DNP_ROUTING_ADAPTIVE },
			     d;
	uint8_t b[DNP_HELLO_MAX_BYTES];

	(void)state;
	dnp_pkt_hello_encode(&he, b);
	assert_memory_equal(b, golden, DNP_HELLO_BYTES);
	assert_int_equal(dnp_pkt_hello_decode(b, DNP_HELLO_BYTES, &d), 0);
	assert_true(d.version == 2 && d.transport == DNP_XPORT_UDP && d.dim[0] == 4 &&
		    d.dim[1] == 2 && d.dim[2] == 256 && d.nvc == 3 && d.vc_mode == DNP_VC_SINGLE &&
		    d.fifo_words == 16384 && d.max_frame == DNP_MAX_FRAME &&
		    d.routing == DNP_ROUTING_ADAPTIVE);
	assert_int_equal(dnp_pkt_hello_decode(b, 0, &d), -ENODATA);
	assert_int_equal(dnp_pkt_hello_decode(NULL, 32, &d), -ENODATA);
	assert_int_equal(dnp_pkt_hello_decode(b, 2, &d), -EPROTO);
	assert_int_equal(dnp_pkt_hello_decode(b, 48, &d), -EINVAL); /* version 2 is 32 bytes */
	b[20] = 1;
	assert_int_equal(dnp_pkt_hello_decode(b, DNP_HELLO_BYTES, &d), -EINVAL);
	b[20] = 0;
	b[2] = 7;
	assert_int_equal(dnp_pkt_hello_decode(b, DNP_HELLO_BYTES, &d), -EPROTONOSUPPORT);
	assert_int_equal(d.version, 7);
	b[1] = 0;
	assert_int_equal(dnp_pkt_hello_decode(b, DNP_HELLO_BYTES, &d), -EPROTO);
	assert_string_equal(dnp_xport_name(dnp_xport_code("dpdk")), "dpdk");
	assert_int_equal(dnp_xport_code("impair"), DNP_XPORT_NONE);
	assert_string_equal(dnp_xport_name(200), "?");

	/* A RESET frame carries 0 or 32-64 bytes (whole words), never the one credit word. */
	uint8_t f[DNP_FRAME_OVERHEAD + DNP_HELLO_MAX_BYTES + 16];
	struct dnp_pkt_hdr h = { .kind = DNP_PKT_CREDIT, .lflags = DNP_LINK_F_RESET }, h2;
	const uint8_t *pl;
	static const uint16_t lens[] = { 16, 17, 33, 80 };

	memset(b, 0, sizeof(b));
	dnp_pkt_hello_encode(&he, b);
	for (unsigned i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		h.len = lens[i];
		assert_int_equal(dnp_pkt_encode(&h, b, f, sizeof(f)), -EINVAL);
	}
	h.len = DNP_HELLO_BYTES;
	h.credit[2].occupancy = 99; /* not on the wire: a RESET frame's payload is its hello */
	assert_int_equal(dnp_pkt_encode(&h, NULL, f, sizeof(f)), -EINVAL);
	assert_int_equal(dnp_pkt_encode(&h, b, f, sizeof(f)), 96);
	assert_int_equal(dnp_pkt_decode(f, 96, &h2, &pl), 0);
	assert_int_equal(h2.len, DNP_HELLO_BYTES);
	assert_int_equal(h2.credit[2].occupancy, 0);
	assert_memory_equal(pl, golden, DNP_HELLO_BYTES);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_engine_replay_on_other_link_dropped, teardown),
		cmocka_unit_test_teardown(test_engine_one_loss_one_resend, teardown),
		cmocka_unit_test_teardown(test_engine_link_down_fails_commands, teardown),
		cmocka_unit_test_teardown(test_engine_leave_breaks_peer_links_at_once, teardown),
		cmocka_unit_test_teardown(test_engine_detour_around_broken_cable, teardown),
		cmocka_unit_test_teardown(test_engine_prompt_credits_stream, teardown),
		cmocka_unit_test_teardown(test_engine_prompt_credits_per_frame, teardown),
		cmocka_unit_test_teardown(test_engine_ack_delay_pingpong, teardown),
		cmocka_unit_test_teardown(test_engine_ack_delay_stream, teardown),
		cmocka_unit_test_teardown(test_engine_ack_delay_one_loss, teardown),
		cmocka_unit_test_teardown(test_engine_restarted_node_rejoins, teardown),
		cmocka_unit_test_teardown(test_engine_handshake_mismatch_refused, teardown),
		cmocka_unit_test_teardown(test_engine_handshake_old_or_odd_peer, teardown),
		cmocka_unit_test_teardown(test_engine_handshake_refusal_breaks_up_link, teardown),
		cmocka_unit_test_teardown(test_engine_handshake_routing_refused, teardown),
		cmocka_unit_test(test_engine_handshake_hello_bytes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
