/* SPDX-License-Identifier: MIT */
/*
 * test_engine_sick — links LO|FA|MO judged sick (dnp_engine_link_sick): the
 * torus learns the sick cable from ROUTE packets and routes round it where a
 * way exists, uses it where none does, and lets it go only after the hold,
 * a hold that doubles when the link turns sick again soon after; adaptive
 * routing on the same ring (its choice, its escape, broken cables). Engines
 * on an X ring wired frame by frame (test_engine_harness.h).
 */
#include "test_engine_harness.h"

/* A PUT of 1000 bytes from node src to node 1; returns the hops it took. */
static unsigned put_hops(unsigned src, uint32_t key, unsigned tag)
{
	struct dnp_event ev;

	fill(nodes[src].mem[0], 1000, (uint8_t)(tag + 1));
	struct dnp_cmd c = put_cmd(1, 0, BASE, BASE + 4096 * src, key, 1000, tag);
	assert_int_equal(dnp_engine_submit(nodes[src].e, 0, &c, now), 0);
	do
		assert_true(next_event(1, 0, &ev, 5000));
	while (ev.type == DNP_EV_LINK);
	assert_int_equal(ev.type, DNP_EV_RX_PUT);
	assert_memory_equal(nodes[1].mem[0] + 4096 * src, nodes[src].mem[0], 1000);
	unsigned hops = ev.hops;
	do
		assert_true(next_event(src, 0, &ev, 5000));
	while (ev.type == DNP_EV_LINK);
	assert_int_equal(ev.type, DNP_EV_TX_DONE);
	assert_int_equal(ev.status, 0);
	return hops;
}

static uint32_t ring4(void)
{
	uint32_t key;

	setup_nodes(4);
	assert_int_equal(
		dnp_engine_register(nodes[1].e, 0, BASE, 65536, DNP_BUF_PUT_TARGET, 0, &key), 0);
	pump(100);
	return key;
}

/*
 * A ring of 4, node 0's X+ link (the cable 0-1) sick: 0 -> 1 goes the long
 * way (3 hops), 3 -> 1 goes 3 -> 2 -> 1 rather than through the cable, and
 * node 1, the far end whose frames are fine, keeps the cable sick. With the
 * cable 2-3 broken too there is no way round: the sick cable carries the
 * traffic (1 hop) rather than none.
 */
static void test_engine_sick_link_avoided(void **state)
{
	uint32_t key = ring4();

	assert_int_equal(put_hops(0, key, 1), 1);
	assert_int_equal(dnp_engine_link_sick(nodes[0].e, DNP_DIR_XP, true, now), 0);
	pump(200);
	assert_int_equal(dnp_engine_link_state(nodes[0].e, DNP_DIR_XP), DNP_LINK_UP);
	for (unsigned i = 0; i < 4; i++)
		assert_int_equal(dnp_engine_router(nodes[i].e)->n_sick, 1);
	assert_int_equal(dnp_engine_stats(nodes[0].e)->sick_avoided, 1);
	assert_int_equal(put_hops(0, key, 2), 3);
	assert_int_equal(put_hops(3, key, 3), 2);
	/* no way round: the sick cable is used */
	dnp_engine_link_down(nodes[2].e, DNP_DIR_XP, now);
	dnp_engine_link_down(nodes[3].e, DNP_DIR_XM, now);
	pump(200);
	assert_int_equal(put_hops(0, key, 4), 1);
	assert_int_equal(dnp_engine_stats(nodes[0].e)->cmds_failed, 0);
	/* bad directions are refused */
	assert_int_equal(dnp_engine_link_sick(nodes[0].e, DNP_NDIRS, true, now), -EINVAL);
	assert_int_equal(dnp_engine_link_sick(nodes[0].e, DNP_DIR_YP, true, now), -EINVAL);
}

/*
 * Hysteresis: healthy again, the link stays avoided for sick_hold (1000
 * units here), then carries traffic again and the torus forgets the cable.
 * Sick again within 8 x the hold of being let go: the next hold is twice as
 * long. A verdict that flips back to sick within its hold changes nothing.
 */
static void test_engine_sick_link_hold(void **state)
{
	t_sick_hold = 1000;
	uint32_t key = ring4();

	assert_int_equal(dnp_engine_link_sick(nodes[0].e, DNP_DIR_XP, true, now), 0);
	pump(200);
	assert_int_equal(dnp_engine_link_sick(nodes[0].e, DNP_DIR_XP, false, now), 0);
	pump(500);
	assert_int_equal(put_hops(0, key, 1), 3); /* still held */
	assert_int_equal(dnp_engine_link_sick(nodes[0].e, DNP_DIR_XP, true, now), 0);
	assert_int_equal(dnp_engine_link_sick(nodes[0].e, DNP_DIR_XP, false, now), 0);
	assert_int_equal(dnp_engine_stats(nodes[0].e)->sick_avoided, 1);
	uint64_t healthy = now;
	assert_true(dnp_engine_next_deadline(nodes[0].e) <= healthy + 1000);
	pump(1100);
	for (unsigned i = 0; i < 4; i++)
		assert_int_equal(dnp_engine_router(nodes[i].e)->n_faults, 0);
	assert_int_equal(put_hops(0, key, 2), 1);
	/* sick again soon after: avoided, and held twice as long */
	assert_int_equal(dnp_engine_link_sick(nodes[0].e, DNP_DIR_XP, true, now), 0);
	pump(200);
	assert_int_equal(dnp_engine_link_sick(nodes[0].e, DNP_DIR_XP, false, now), 0);
	pump(1500);
	assert_int_equal(dnp_engine_router(nodes[3].e)->n_sick, 1);
	assert_int_equal(put_hops(0, key, 3), 3);
	pump(600);
	assert_int_equal(dnp_engine_router(nodes[3].e)->n_sick, 0);
	assert_int_equal(put_hops(0, key, 4), 1);
	assert_int_equal(dnp_engine_stats(nodes[0].e)->sick_avoided, 2);
}

/* A PUT of len bytes from src to dst (port 0 both); returns the hops it took. */
static unsigned put_to(unsigned src, unsigned dst, uint32_t key, size_t len, unsigned tag)
{
	struct dnp_event ev;

	fill(nodes[src].mem[0], len, (uint8_t)(tag + 1));
	struct dnp_cmd c = put_cmd(dst, 0, BASE, BASE + 8192 * src, key, len, tag);
	assert_int_equal(dnp_engine_submit(nodes[src].e, 0, &c, now), 0);
	ev = expect_event_nolink(dst, 0, 5000, DNP_EV_RX_PUT);
	assert_memory_equal(nodes[dst].mem[0] + 8192 * src, nodes[src].mem[0], len);
	unsigned hops = ev.hops;
	ev = expect_event_nolink(src, 0, 5000, DNP_EV_TX_DONE);
	assert_int_equal(ev.status, 0);
	return hops;
}

static uint64_t tx_on(unsigned node, unsigned dir, unsigned vc)
{
	return dnp_engine_link_stats(nodes[node].e, dir)->vc[vc].tx_packets;
}

/*
 * Adaptive routing (route.h) on a ring of 4 with 4 VCs. The source sends on
 * its escape hop (commands are queued per output link at submission); the
 * next node forwards a one-packet PUT on an adaptive VC (2, the first with
 * the most credit), and the packets of a multi-packet PUT on the escape VC
 * (0). With the cable 0-1 broken, 0 -> 2 goes X- and node 3 forwards it
 * adaptively, never towards the broken cable. Two VCs are refused.
 */
static void test_engine_adaptive_ring(void **state)
{
	struct dnp_engine *e;
	struct dnp_engine_conf c;

	routing = DNP_ROUTING_ADAPTIVE;
	nvcs = 4;
	setup_nodes(4);
	uint32_t key;
	assert_int_equal(
		dnp_engine_register(nodes[2].e, 0, BASE, 65536, DNP_BUF_PUT_TARGET, 0, &key), 0);
	pump(100);
	assert_int_equal(put_to(0, 2, key, 1000, 1), 2);
	assert_int_equal(tx_on(0, DNP_DIR_XP, 0), 1);
	assert_int_equal(dnp_engine_stats(nodes[1].e)->adaptive_hops, 1);
	assert_int_equal(tx_on(1, DNP_DIR_XP, 2), 1);
	assert_int_equal(tx_on(1, DNP_DIR_XP, 0) + tx_on(1, DNP_DIR_XP, 1), 0);
	/* 3 packets, all on the escape route (X+, VC 0) */
	assert_int_equal(put_to(0, 2, key, 3 * DNP_MAX_PAYLOAD, 2), 2);
	assert_int_equal(dnp_engine_stats(nodes[1].e)->adaptive_hops, 1);
	assert_int_equal(tx_on(1, DNP_DIR_XP, 0), 3);
	/* the cable 0-1 broken: the other way round, adaptive at node 3 */
	dnp_engine_link_down(nodes[0].e, DNP_DIR_XP, now);
	dnp_engine_link_down(nodes[1].e, DNP_DIR_XM, now);
	pump(200);
	uint64_t adaptive_xm = tx_on(3, DNP_DIR_XM, 2); /* ROUTE packets to node 2 may be there */
	uint64_t escape_xm = tx_on(3, DNP_DIR_XM, 0) + tx_on(3, DNP_DIR_XM, 1);
	assert_int_equal(put_to(0, 2, key, 1000, 3), 2);
	assert_true(tx_on(3, DNP_DIR_XM, 2) > adaptive_xm);
	assert_int_equal(tx_on(3, DNP_DIR_XM, 0) + tx_on(3, DNP_DIR_XM, 1), escape_xm);
	assert_int_equal(tx_on(0, DNP_DIR_XP, 0), 4);
	/* too few VCs */
	dnp_engine_conf_default(&c);
	dnp_torus_init(&c.torus, 4, 1, 1);
	c.mem = &ops;
	c.routing = DNP_ROUTING_ADAPTIVE;
	assert_int_equal(dnp_engine_create(&c, now, &e), -EINVAL);
	c.link.nvc = 3;
	assert_int_equal(dnp_engine_create(&c, now, &e), 0);
	dnp_engine_destroy(e);
}

/*
 * A route that changes under a message, on a 2x2 torus: a 32 KiB PUT or
 * SEND from node 0 (0,0) to node 3 (1,1) corrects X to node 1, which sends
 * its first packets on to node 3 by its Y+ cable, whose frames are held up
 * (stashed), when that link is judged sick; the rest takes node 1's Y-
 * cable (to the same node 3) and arrives first. The target finds the
 * message incomplete at its last packet and declares it not delivered: the
 * source sends it again whole, the late originals are refused, and the
 * message is applied once and completes 0 (before: -ENOLINK, "a link on the
 * path broke", though none did; a SEND whose first packet came last failed
 * with -ENOBUFS).
 */
static void reorder_body(uint8_t op)
{
	const uint32_t len = 32768;
	struct dnp_event ev;
	uint32_t key;

	t_cmd = 1000000;
	t_query = 3000;
	grid = true;
	setup_nodes(4);
	assert_int_equal(
		dnp_engine_register(nodes[3].e, 0, BASE, 65536,
				    op == DNP_OP_PUT ? DNP_BUF_PUT_TARGET : DNP_BUF_SEND_TARGET, 0,
				    &key),
		0);
	pump(100);
	fill(nodes[0].mem[0], len, 9);
	stash_node = 1;
	stash_dir = DNP_DIR_YP;
	struct dnp_cmd c = op == DNP_OP_PUT ? put_cmd(1, 0, BASE, BASE, key, len, 61) :
					      send_cmd(1, 0, BASE, len, 61);
	c.dst_y = 1;
	assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &c, now), 0);
	for (unsigned s = 0; s < 2000 && nstash < 2; s++)
		pump(1);
	assert_true(nstash >= 2); /* the first packets are held up on the way */
	assert_int_equal(dnp_engine_link_sick(nodes[1].e, DNP_DIR_YP, true, now), 0);
	for (unsigned s = 0; s < 3000 && !dnp_engine_stats(nodes[3].e)->rx_incomplete_msgs; s++)
		pump(1);
	assert_int_equal(dnp_engine_stats(nodes[3].e)->rx_incomplete_msgs, 1);
	stash_release();
	do
		assert_true(next_event(0, 0, &ev, 200000));
	while (ev.type == DNP_EV_LINK);
	assert_int_equal(ev.cookie, 61);
	assert_int_equal(ev.status, 0);
	assert_int_equal(ev.type, DNP_EV_TX_DONE);
	assert_int_equal(dnp_engine_stats(nodes[0].e)->query_resends, 1);
	assert_true(dnp_engine_stats(nodes[3].e)->rx_refused >= 1); /* the late originals */
	unsigned rx = 0;
	for (unsigned s = 0; s < 20000; s++) { /* applied once: one RX event, one completion */
		while (dnp_engine_poll_events(nodes[3].e, 0, &ev, 1) == 1) {
			assert_int_not_equal(ev.type, DNP_EV_RX_ERROR);
			if (ev.type == (op == DNP_OP_PUT ? DNP_EV_RX_PUT : DNP_EV_RX_SEND)) {
				assert_int_equal(ev.len, len);
				rx++;
			}
		}
		pump(1);
	}
	assert_int_equal(rx, 1);
	assert_memory_equal(nodes[3].mem[0], nodes[0].mem[0], len);
	assert_int_equal(dnp_engine_poll_events(nodes[0].e, 0, &ev, 1), 0);
}

static void test_engine_reordered_put_resent(void **state)
{
	reorder_body(DNP_OP_PUT);
}

static void test_engine_reordered_send_resent(void **state)
{
	reorder_body(DNP_OP_SEND);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_engine_sick_link_avoided, teardown),
		cmocka_unit_test_teardown(test_engine_sick_link_hold, teardown),
		cmocka_unit_test_teardown(test_engine_adaptive_ring, teardown),
		cmocka_unit_test_teardown(test_engine_reordered_put_resent, teardown),
		cmocka_unit_test_teardown(test_engine_reordered_send_resent, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
