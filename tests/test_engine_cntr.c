/* SPDX-License-Identifier: MIT */
/*
 * test_engine_cntr — completion counters (a command's cntr byte, engine.h
 * dnp_engine_cntr_take) and inline PUTs (DNP_CMD_F_INLINE: the payload in
 * the slot, no read of application memory). Engines on an X ring wired
 * frame by frame (test_engine_harness.h).
 */
#include "test_engine_harness.h"

/* Pumps until node 0's port has 'want' commands counted on counter i (ok + err), or gives up. */
static const struct dnp_engine_cntr *cntr_settle(unsigned port, unsigned i, uint64_t want,
						 uint64_t *mask)
{
	const struct dnp_engine_cntr *v = NULL;

	*mask = 0;
	for (unsigned s = 0; s < 20000; s++) {
		*mask |= dnp_engine_cntr_take(nodes[0].e, port, &v);
		if (v[i].ok + v[i].err >= want)
			break;
		pump(1);
	}
	return v;
}

/* Drops every event of node, port (none are expected to matter here). */
static unsigned drop_events(unsigned node, unsigned port)
{
	struct dnp_event ev;
	unsigned n = 0;

	while (dnp_engine_poll_events(nodes[node].e, port, &ev, 1) == 1)
		n += ev.type != DNP_EV_LINK;
	return n;
}

/*
 * Event-less PUTs on counter 0, some to a wrong key; PUTs with events on the
 * last counter; a GET on counter 5: each counter counts its own commands'
 * successes and errors, once each, and the others stay 0. The mask names
 * exactly the counters that moved, and is clear after a take.
 */
static void test_engine_cntr_counts(void **state)
{
	evq_slots = 4;
	evq_node = 0;
	setup_nodes(2);
	uint32_t key, key0;
	unsigned sent = 0, errors = 0;
	uint64_t mask;
	struct dnp_event ev;

	assert_int_equal(dnp_engine_register(nodes[1].e, 0, BASE, 65536,
					     DNP_BUF_PUT_TARGET | DNP_BUF_GET_SOURCE, 0, &key),
			 0);
	assert_int_equal(dnp_engine_register(nodes[0].e, 0, BASE + 40000, 4096, DNP_BUF_PUT_TARGET,
					     0, &key0),
			 0);
	fill(nodes[0].mem[0], 65536, 9);
	/* 60 event-less PUTs through a 4-slot event queue: every 10th to a wrong key */
	for (unsigned step = 0; step < 100000 && sent < 60; step++) {
		struct dnp_cmd c = put_cmd(1, 0, BASE + sent * 500, BASE + sent * 500,
					   sent % 10 == 9 ? key + 1 : key, 500, sent);
		c.flags = DNP_CMD_F_NO_EVENT;
		c.cntr = 1;
		int rc = dnp_engine_submit(nodes[0].e, 0, &c, now);
		assert_true(rc == 0 || rc == -EAGAIN);
		sent += rc == 0;
		pump(1);
		while (dnp_engine_poll_events(nodes[0].e, 0, &ev, 1) == 1) {
			assert_int_equal(ev.type, DNP_EV_ERROR); /* errors still have their event */
			assert_int_equal(ev.status, -EACCES);
			errors++;
		}
		drop_events(1, 0);
	}
	assert_int_equal(sent, 60);
	const struct dnp_engine_cntr *v = cntr_settle(0, 0, 60, &mask);
	while (dnp_engine_poll_events(nodes[0].e, 0, &ev, 1) == 1)
		errors++;
	assert_int_equal(errors, 6);
	assert_int_equal(v[0].ok, 54);
	assert_int_equal(v[0].err, 6);
	assert_int_equal(mask, 1);
	assert_int_equal(dnp_engine_cntr_take(nodes[0].e, 0, &v), 0); /* taken */
	assert_memory_equal(nodes[1].mem[0], nodes[0].mem[0], 8 * 500);

	/* PUTs with their TX_DONE on the last counter, a GET on counter 5 */
	for (unsigned i = 0; i < 3; i++) {
		struct dnp_cmd c = put_cmd(1, 0, BASE, BASE, key, 100, 100 + i);
		c.cntr = DNP_CNTR_MAX;
		assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &c, now), 0);
		assert_true(next_event(0, 0, &ev, 5000));
		assert_int_equal(ev.type, DNP_EV_TX_DONE);
	}
	struct dnp_cmd g = { .op = DNP_OP_GET,
			     .dst_x = 1,
			     .remote_va = BASE,
			     .remote_key = key,
			     .local_va = BASE + 40000,
			     .local_key = key0,
			     .len = 300,
			     .cntr = 6,
			     .cookie = 7 };
	assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &g, now), 0);
	assert_true(next_event(0, 0, &ev, 5000));
	assert_int_equal(ev.type, DNP_EV_GET_DONE);
	mask = dnp_engine_cntr_take(nodes[0].e, 0, &v);
	assert_int_equal(mask, 1ull << 63 | 1ull << 5);
	assert_int_equal(v[DNP_CNTR_MAX - 1].ok, 3);
	assert_int_equal(v[DNP_CNTR_MAX - 1].err, 0);
	assert_int_equal(v[5].ok, 1);
	assert_int_equal(v[0].ok, 54); /* unchanged */
	for (unsigned i = 1; i < DNP_CNTR_MAX - 1; i++)
		if (i != 5)
			assert_true(v[i].ok == 0 && v[i].err == 0);
	/* the other port has counters of its own */
	assert_int_equal(dnp_engine_cntr_take(nodes[0].e, 1, &v), 0);
	assert_int_equal(v[0].ok, 0);
	assert_int_equal(dnp_engine_cntr_take(nodes[0].e, NPORTS, &v), 0);
}

/*
 * A command refused by dnp_cmd_check counts as an error on its counter when
 * the counter is valid; one naming a counter past DNP_CNTR_MAX gets its
 * ERROR -EINVAL and moves no counter. A port opened anew counts from 0.
 */
static void test_engine_cntr_refused_and_reopen(void **state)
{
	setup_nodes(2);
	uint32_t key;
	uint64_t mask;
	struct dnp_event ev;
	const struct dnp_engine_cntr *v;

	assert_int_equal(
		dnp_engine_register(nodes[1].e, 0, BASE, 65536, DNP_BUF_PUT_TARGET, 0, &key), 0);
	struct dnp_cmd c = put_cmd(1, 0, BASE, BASE, key, 100, 1);
	c.cntr = 3;
	c.flags = 0x80; /* unknown flag */
	assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &c, now), 0);
	assert_true(next_event(0, 0, &ev, 100));
	assert_int_equal(ev.status, -EINVAL);
	assert_int_equal(dnp_engine_cntr_take(nodes[0].e, 0, &v), 1u << 2);
	assert_int_equal(v[2].err, 1);
	c.flags = DNP_CMD_F_NO_EVENT;
	c.cntr = DNP_CNTR_MAX + 1;
	assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &c, now), 0);
	assert_true(next_event(0, 0, &ev, 100));
	assert_int_equal(ev.status, -EINVAL);
	assert_int_equal(dnp_engine_cntr_take(nodes[0].e, 0, &v), 0);

	c.cntr = 3;
	assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &c, now), 0);
	v = cntr_settle(0, 2, 2, &mask);
	assert_int_equal(v[2].ok, 1);
	assert_int_equal(dnp_engine_port_close(nodes[0].e, 0), 0);
	assert_int_equal(dnp_engine_port_open(nodes[0].e, 0), 0);
	assert_int_equal(dnp_engine_cntr_take(nodes[0].e, 0, &v), 0);
	assert_true(v[2].ok == 0 && v[2].err == 0);
}

/*
 * Inline PUTs of 0 to DNP_CMD_INLINE_MAX bytes: the target gets the bytes of
 * the slot, the source node's memory is never read, and TX_DONE carries
 * va 0 (the slot's word 2 is payload). Also loopback, and an inline PUT
 * refused at its target (ERROR, va 0).
 */
static void test_engine_inline_put(void **state)
{
	setup_nodes(2);
	uint32_t key, key0;
	struct dnp_event ev;
	uint8_t src[DNP_CMD_INLINE_MAX];

	assert_int_equal(
		dnp_engine_register(nodes[1].e, 0, BASE, 65536, DNP_BUF_PUT_TARGET, 0, &key), 0);
	for (unsigned len = 0; len <= DNP_CMD_INLINE_MAX; len++) {
		struct dnp_cmd c = put_cmd(1, 0, 0, BASE + len * 64, key, len, 300 + len);

		for (unsigned i = 0; i < len; i++)
			src[i] = (uint8_t)(len * 7 + i);
		c.flags = DNP_CMD_F_INLINE;
		dnp_cmd_inline_set(&c, src, len);
		assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &c, now), 0);
		assert_true(next_event(0, 0, &ev, 5000));
		assert_int_equal(ev.type, DNP_EV_TX_DONE);
		assert_int_equal(ev.cookie, 300 + len);
		assert_int_equal(ev.len, len);
		assert_int_equal(ev.va, 0);
		assert_memory_equal(nodes[1].mem[0] + len * 64, src, len);
		assert_true(next_event(1, 0, &ev, 100));
		assert_int_equal(ev.type, DNP_EV_RX_PUT);
		assert_int_equal(ev.len, len);
	}
	assert_int_equal(nreads[0], 0); /* node 0's memory was never read */
	assert_int_equal(dnp_engine_stats(nodes[0].e)->cmds_ok, DNP_CMD_INLINE_MAX + 1);

	/* loopback: port 1 -> port 0 of node 0, event-less, on a counter */
	assert_int_equal(
		dnp_engine_register(nodes[0].e, 0, BASE, 65536, DNP_BUF_PUT_TARGET, 0, &key0), 0);
	struct dnp_cmd c = put_cmd(0, 0, 0, BASE + 100, key0, 20, 400);
	c.flags = DNP_CMD_F_INLINE | DNP_CMD_F_NO_EVENT;
	c.cntr = 1;
	memcpy(src, "twenty bytes inline!", 20);
	dnp_cmd_inline_set(&c, src, 20);
	assert_int_equal(dnp_engine_submit(nodes[0].e, 1, &c, now), 0);
	uint64_t mask;
	const struct dnp_engine_cntr *v;
	for (unsigned s = 0; s < 1000 && !(mask = dnp_engine_cntr_take(nodes[0].e, 1, &v)); s++)
		pump(1);
	assert_int_equal(mask, 1);
	assert_int_equal(v[0].ok, 1);
	assert_memory_equal(nodes[0].mem[0] + 100, "twenty bytes inline!", 20);
	assert_int_equal(nreads[0], 0);

	/* a wrong key: ERROR -EACCES, va 0 */
	c = put_cmd(1, 0, 0, BASE, key + 1, 8, 401);
	c.flags = DNP_CMD_F_INLINE;
	dnp_cmd_inline_set(&c, "8 bytes!", 8);
	drop_events(0, 0);
	assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &c, now), 0);
	assert_true(next_event(0, 0, &ev, 5000));
	assert_int_equal(ev.type, DNP_EV_ERROR);
	assert_int_equal(ev.status, -EACCES);
	assert_int_equal(ev.va, 0);
	assert_int_equal(ev.cookie, 401);
}

/* An inline PUT longer than DNP_CMD_INLINE_MAX, or with SRC_EVENT, is refused and reads nothing. */
static void test_engine_inline_refused(void **state)
{
	setup_nodes(2);
	uint32_t key;
	struct dnp_event ev;

	assert_int_equal(
		dnp_engine_register(nodes[1].e, 0, BASE, 65536, DNP_BUF_PUT_TARGET, 0, &key), 0);
	struct dnp_cmd c = put_cmd(1, 0, BASE, BASE, key, DNP_CMD_INLINE_MAX + 1, 1);
	c.flags = DNP_CMD_F_INLINE;
	assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &c, now), 0);
	assert_true(next_event(0, 0, &ev, 100));
	assert_int_equal(ev.status, -EINVAL);
	c.len = 8;
	c.flags = DNP_CMD_F_INLINE | DNP_CMD_F_SRC_EVENT;
	assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &c, now), 0);
	assert_true(next_event(0, 0, &ev, 100));
	assert_int_equal(ev.status, -EINVAL);
	assert_int_equal(nreads[0], 0);
	assert_int_equal(dnp_engine_stats(nodes[0].e)->pkts_injected, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_engine_cntr_counts, teardown),
		cmocka_unit_test_teardown(test_engine_cntr_refused_and_reopen, teardown),
		cmocka_unit_test_teardown(test_engine_inline_put, teardown),
		cmocka_unit_test_teardown(test_engine_inline_refused, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
