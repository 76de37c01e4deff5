/* SPDX-License-Identifier: MIT */
/*
 * test_engine_flags — the command flags (dnp_abi.h): DNP_CMD_F_SRC_EVENT
 * (a DNP_EV_TX_READ once the source was read whole, before the one
 * completion, never after it, and no read of the source after it) and
 * DNP_CMD_F_NO_EVENT (no event for a success, an ERROR for every failure,
 * and the event room and slots given back either way); unknown flags are
 * refused with -EINVAL. Engines on an X ring wired frame by frame
 * (test_engine_harness.h).
 */
#include "test_engine_harness.h"

/* Every event of node 0, port 0 for 'steps' steps into ev[] (at most max); returns the count. */
static unsigned drain(unsigned node, unsigned port, struct dnp_event *ev, unsigned max,
		      unsigned steps)
{
	unsigned n = 0;

	for (unsigned s = 0; s < steps; s++) {
		struct dnp_event one;

		while (dnp_engine_poll_events(nodes[node].e, port, &one, 1) == 1) {
			if (one.type == DNP_EV_LINK)
				continue;
			assert_true(n < max);
			ev[n++] = one;
		}
		pump(1);
	}
	return n;
}

/*
 * A 200 KiB PUT asks for its source-read event: TX_READ comes first, once,
 * then TX_DONE, once. The source is overwritten as soon as TX_READ is seen,
 * and the target still gets the original bytes: nothing was read after it.
 */
static void test_engine_flags_src_event_before_done(void **state)
{
	setup_nodes(2);
	const uint32_t len = 200u << 10;
	uint32_t key;
	uint8_t *want = malloc(len);
	struct dnp_event ev;

	assert_non_null(want);
	assert_int_equal(dnp_engine_register(nodes[1].e, 0, BASE, len, DNP_BUF_PUT_TARGET, 0, &key),
			 0);
	fill(nodes[0].mem[0], len, 3);
	memcpy(want, nodes[0].mem[0], len);
	struct dnp_cmd c = put_cmd(1, 0, BASE, BASE, key, len, 71);
	c.flags = DNP_CMD_F_SRC_EVENT;
	assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &c, now), 0);

	assert_true(next_event(0, 0, &ev, 20000));
	assert_int_equal(ev.type, DNP_EV_TX_READ);
	assert_int_equal(ev.status, 0);
	assert_int_equal(ev.cookie, 71);
	assert_int_equal(ev.op, DNP_OP_PUT);
	assert_int_equal(ev.len, len);
	assert_int_equal(ev.va, BASE);
	unsigned nread = nreads[0];
	assert_true(nread >= len / DNP_MAX_PAYLOAD); /* every packet's payload was read */
	memset(nodes[0].mem[0], 0xee, len);          /* the application reuses its buffer */

	assert_true(next_event(0, 0, &ev, 20000));
	assert_int_equal(ev.type, DNP_EV_TX_DONE);
	assert_int_equal(ev.status, 0);
	assert_int_equal(ev.cookie, 71);
	assert_int_equal(ev.data, DNP_DATA_DELIVERED);
	assert_memory_equal(nodes[1].mem[0], want, len);
	assert_int_equal(nreads[0], nread);
	pump(5000); /* exactly once each */
	assert_int_equal(dnp_engine_poll_events(nodes[0].e, 0, &ev, 1), 0);
	free(want);
}

/* The same for a SEND, and for a loopback PUT (delivered in the injector's own pass). */
static void test_engine_flags_src_event_send_and_loopback(void **state)
{
	setup_nodes(2);
	uint32_t key;
	struct dnp_event ev[8];

	assert_int_equal(
		dnp_engine_register(nodes[1].e, 0, BASE, 65536, DNP_BUF_SEND_TARGET, 0, NULL), 0);
	fill(nodes[0].mem[0], 10000, 4);
	struct dnp_cmd c = { .op = DNP_OP_SEND,
			     .flags = DNP_CMD_F_SRC_EVENT,
			     .dst_x = 1,
			     .local_va = BASE,
			     .len = 10000,
			     .cookie = 72 };
	assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &c, now), 0);
	assert_int_equal(drain(0, 0, ev, 8, 5000), 2);
	assert_int_equal(ev[0].type, DNP_EV_TX_READ);
	assert_int_equal(ev[0].op, DNP_OP_SEND);
	assert_int_equal(ev[0].cookie, 72);
	assert_int_equal(ev[1].type, DNP_EV_TX_DONE);
	assert_int_equal(ev[1].cookie, 72);
	assert_memory_equal(nodes[1].mem[0], nodes[0].mem[0], 10000);

	/* loopback: node 0, port 1 -> port 0 */
	assert_int_equal(
		dnp_engine_register(nodes[0].e, 0, BASE, 65536, DNP_BUF_PUT_TARGET, 0, &key), 0);
	fill(nodes[0].mem[1], 9000, 5);
	c = put_cmd(0, 0, BASE, BASE, key, 9000, 73);
	c.flags = DNP_CMD_F_SRC_EVENT;
	assert_int_equal(dnp_engine_submit(nodes[0].e, 1, &c, now), 0);
	assert_int_equal(drain(0, 1, ev, 8, 5000), 2);
	assert_int_equal(ev[0].type, DNP_EV_TX_READ);
	assert_int_equal(ev[0].cookie, 73);
	assert_int_equal(ev[1].type, DNP_EV_TX_DONE);
	assert_int_equal(ev[1].cookie, 73);
	assert_memory_equal(nodes[0].mem[0], nodes[0].mem[1], 9000);
}

/*
 * A command that fails before its source was read whole ends with ERROR
 * alone; one refused by its target after the read gets TX_READ, then
 * ERROR. Either way the event room reserved for the TX_READ comes back:
 * with an event queue of two slots, command after command is accepted.
 */
static void test_engine_flags_src_event_and_failures(void **state)
{
	evq_slots = 2;
	evq_node = 0;
	setup_nodes(2);
	uint32_t key;
	struct dnp_event ev[8];

	assert_int_equal(
		dnp_engine_register(nodes[1].e, 0, BASE, 65536, DNP_BUF_PUT_TARGET, 0, &key), 0);
	for (unsigned i = 0; i < 8; i++) {
		/* the source runs past the end of the application's memory at its third packet */
		struct dnp_cmd c = put_cmd(1, 0, BASE + ARENA - 9000, BASE, key, 12000, 80 + i);
		c.flags = DNP_CMD_F_SRC_EVENT;
		assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &c, now), 0);
		assert_int_equal(drain(0, 0, ev, 8, 3000), 1);
		assert_int_equal(ev[0].type, DNP_EV_ERROR);
		assert_int_equal(ev[0].status, -EFAULT);
		assert_int_equal(ev[0].cookie, 80 + i);

		/* the whole source is read, then the target refuses the key */
		c = put_cmd(1, 0, BASE, BASE, key + 1, 300, 90 + i);
		c.flags = DNP_CMD_F_SRC_EVENT;
		assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &c, now), 0);
		assert_int_equal(drain(0, 0, ev, 8, 3000), 2);
		assert_int_equal(ev[0].type, DNP_EV_TX_READ);
		assert_int_equal(ev[0].cookie, 90 + i);
		assert_int_equal(ev[1].type, DNP_EV_ERROR);
		assert_int_equal(ev[1].status, -EACCES);
		assert_int_equal(ev[1].cookie, 90 + i);
	}
	/* two slots, and a TX_READ needs one beside its completion: one such command at a time */
	struct dnp_cmd c = put_cmd(1, 0, BASE, BASE, key, 64, 99);
	c.flags = DNP_CMD_F_SRC_EVENT;
	assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &c, now), 0);
	assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &c, now), -EAGAIN);
	assert_int_equal(drain(0, 0, ev, 8, 3000), 2);
	assert_int_equal(ev[1].type, DNP_EV_TX_DONE);
}

/*
 * The source was handed back (TX_READ) when the link under the PUT breaks
 * and its target declares it not delivered: the engine must not read the
 * source again to resend it (the application may have changed it). It
 * fails with -ENOLINK, not delivered, and nothing reaches the target.
 */
static void test_engine_flags_src_event_never_resent(void **state)
{
	t_cmd = 1000000;
	t_query = 3000;
	setup_nodes(2);
	uint32_t key;
	struct dnp_event ev[16];
	struct dnp_hop hop;

	assert_int_equal(
		dnp_engine_register(nodes[1].e, 0, BASE, 65536, DNP_BUF_PUT_TARGET, 0, &key), 0);
	assert_int_equal(dnp_route_step(dnp_engine_router(nodes[0].e),
					(struct dnp_coord){ 0, 0, 0 },
					(struct dnp_coord){ 1, 0, 0 }, 0, DNP_DIR_LOCAL, 0, &hop),
			 0);
	drop_node = 0;
	drop_kind = DNP_PKT_PUT;
	drop_dir = (int)hop.dir;
	fill(nodes[0].mem[0], 300, 6);
	struct dnp_cmd c = put_cmd(1, 0, BASE, BASE + 64, key, 300, 46);
	c.flags = DNP_CMD_F_SRC_EVENT;
	assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &c, now), 0);
	unsigned n = drain(0, 0, ev, 16, 400000);
	assert_int_equal(n, 2);
	assert_int_equal(ev[0].type, DNP_EV_TX_READ);
	assert_int_equal(ev[1].type, DNP_EV_ERROR);
	assert_int_equal(ev[1].status, -ENOLINK);
	assert_int_equal(ev[1].data, DNP_DATA_NOT_DELIVERED);
	assert_int_equal(ev[1].cookie, 46);
	assert_int_equal(dnp_engine_stats(nodes[0].e)->query_resends, 0);
	assert_true(dnp_engine_stats(nodes[0].e)->query_tx >= 1); /* it did ask */
	assert_int_equal(drain(1, 0, ev, 16, 100), 0);            /* no RX_PUT */
}

/*
 * Event-less PUTs: no event at the source, every one delivered, each
 * counted once by dnp_engine_quiet_take. With an event queue of four
 * slots, 64 of them go through: their room and slots come back.
 */
static void test_engine_flags_no_event_success(void **state)
{
	evq_slots = 4;
	evq_node = 0;
	setup_nodes(2);
	uint32_t key, quiet = 0;
	unsigned rx = 0, sent = 0;
	struct dnp_event ev;

	assert_int_equal(
		dnp_engine_register(nodes[1].e, 0, BASE, 65536, DNP_BUF_PUT_TARGET, 0, &key), 0);
	fill(nodes[0].mem[0], 65536, 7);
	for (unsigned step = 0; step < 100000 && (sent < 64 || rx < 64); step++) {
		if (sent < 64) {
			struct dnp_cmd c = put_cmd(1, 0, BASE + sent * 1000, BASE + sent * 1000,
						   key, 1000, sent);
			c.flags = DNP_CMD_F_NO_EVENT;
			int rc = dnp_engine_submit(nodes[0].e, 0, &c, now);
			assert_true(rc == 0 || rc == -EAGAIN);
			sent += rc == 0;
		}
		pump(1);
		assert_int_equal(dnp_engine_poll_events(nodes[0].e, 0, &ev, 1), 0);
		quiet += dnp_engine_quiet_take(nodes[0].e, 0);
		while (dnp_engine_poll_events(nodes[1].e, 0, &ev, 1) == 1) {
			assert_int_equal(ev.type, DNP_EV_RX_PUT);
			rx++;
		}
	}
	assert_int_equal(sent, 64);
	assert_int_equal(rx, 64);
	pump(2000);
	quiet += dnp_engine_quiet_take(nodes[0].e, 0);
	assert_int_equal(quiet, 64);
	assert_int_equal(dnp_engine_quiet_take(nodes[0].e, 0), 0);
	assert_int_equal(dnp_engine_quiet_take(nodes[0].e, 1), 0);
	assert_int_equal(dnp_engine_stats(nodes[0].e)->cmds_ok, 64);
	assert_memory_equal(nodes[1].mem[0], nodes[0].mem[0], 64000);
	assert_int_equal(dnp_engine_poll_events(nodes[0].e, 0, &ev, 1), 0);

	/* with SRC_EVENT too: the TX_READ alone */
	struct dnp_cmd c = put_cmd(1, 0, BASE, BASE, key, 5000, 200);
	c.flags = DNP_CMD_F_NO_EVENT | DNP_CMD_F_SRC_EVENT;
	assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &c, now), 0);
	struct dnp_event evs[4];
	assert_int_equal(drain(0, 0, evs, 4, 5000), 1);
	assert_int_equal(evs[0].type, DNP_EV_TX_READ);
	assert_int_equal(evs[0].cookie, 200);
	assert_int_equal(dnp_engine_quiet_take(nodes[0].e, 0), 1);
}

/* An event-less command that fails is never silent: ERROR with its cookie, whatever the cause. */
static void test_engine_flags_no_event_errors(void **state)
{
	setup_nodes(2);
	uint32_t key;
	struct dnp_event ev[4];

	assert_int_equal(
		dnp_engine_register(nodes[1].e, 0, BASE, 65536, DNP_BUF_PUT_TARGET, 0, &key), 0);
	assert_int_equal(dnp_engine_port_close(nodes[1].e, 1), 0);
	const struct {
		struct dnp_cmd c;
		int err;
	} cases[] = {
		{ put_cmd(1, 0, BASE, BASE, key + 1, 100, 1), -EACCES },     /* wrong key */
		{ put_cmd(1, 0, BASE, BASE + 65500, key, 100, 2), -ERANGE }, /* past its end */
		{ put_cmd(1, 1, BASE, BASE, key, 100, 3), -ECONNREFUSED },   /* port closed */
		{ put_cmd(5, 0, BASE, BASE, key, 100, 4), -EHOSTUNREACH },   /* outside the torus */
		{ put_cmd(1, 0, BASE + ARENA - 50, BASE, key, 100, 5), -EFAULT }, /* bad source */
		{ { .op = DNP_OP_SEND, .dst_x = 1, .local_va = BASE, .len = 10, .cookie = 6 },
		  -ENOBUFS }, /* no SEND buffer posted */
		{ { .op = DNP_OP_GET,
		    .dst_x = 1,
		    .remote_va = BASE,
		    .remote_key = key,
		    .local_va = BASE,
		    .local_key = 0,
		    .len = 10,
		    .cookie = 7 },
		  -EPERM }, /* not a GET source */
	};

	for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct dnp_cmd c = cases[i].c;

		c.flags = DNP_CMD_F_NO_EVENT;
		assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &c, now), 0);
		assert_int_equal(drain(0, 0, ev, 4, 3000), 1);
		assert_int_equal(ev[0].type, DNP_EV_ERROR);
		assert_int_equal(ev[0].status, cases[i].err);
		assert_int_equal(ev[0].cookie, c.cookie);
	}
	assert_int_equal(dnp_engine_quiet_take(nodes[0].e, 0), 0);
	assert_int_equal(dnp_engine_stats(nodes[0].e)->cmds_failed,
			 sizeof(cases) / sizeof(cases[0]));
}

/*
 * A flag the engine does not know, alone or beside known ones, and
 * SRC_EVENT on a GET, are refused: ERROR -EINVAL (event-less or not), and
 * nothing reaches the target.
 */
static void test_engine_flags_unknown_refused(void **state)
{
	setup_nodes(2);
	uint32_t key;
	struct dnp_event ev[4];
	uint64_t cookie = 1;

	assert_int_equal(dnp_engine_register(nodes[1].e, 0, BASE, 65536,
					     DNP_BUF_PUT_TARGET | DNP_BUF_GET_SOURCE, 0, &key),
			 0);
	for (unsigned bit = 0; bit < 8; bit++) {
		if ((1u << bit) & DNP_CMD_F_ALL)
			continue;
		for (unsigned with = 0; with <= DNP_CMD_F_ALL; with++) {
			struct dnp_cmd c = put_cmd(1, 0, BASE, BASE, key, 100, cookie++);

			c.flags = (uint8_t)(1u << bit | with);
			assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &c, now), 0);
			assert_int_equal(drain(0, 0, ev, 4, 200), 1);
			assert_int_equal(ev[0].type, DNP_EV_ERROR);
			assert_int_equal(ev[0].status, -EINVAL);
			assert_int_equal(ev[0].cookie, c.cookie);
		}
	}
	struct dnp_cmd g = { .op = DNP_OP_GET,
			     .flags = DNP_CMD_F_SRC_EVENT,
			     .dst_x = 1,
			     .remote_va = BASE,
			     .remote_key = key,
			     .local_va = BASE,
			     .len = 10,
			     .cookie = 500 };
	assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &g, now), 0);
	assert_int_equal(drain(0, 0, ev, 4, 200), 1);
	assert_int_equal(ev[0].type, DNP_EV_ERROR);
	assert_int_equal(ev[0].status, -EINVAL);
	assert_int_equal(ev[0].cookie, 500);
	assert_int_equal(drain(1, 0, ev, 4, 200), 0); /* nothing was sent */
	assert_int_equal(dnp_engine_stats(nodes[0].e)->pkts_injected, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_engine_flags_src_event_before_done, teardown),
		cmocka_unit_test_teardown(test_engine_flags_src_event_send_and_loopback, teardown),
		cmocka_unit_test_teardown(test_engine_flags_src_event_and_failures, teardown),
		cmocka_unit_test_teardown(test_engine_flags_src_event_never_resent, teardown),
		cmocka_unit_test_teardown(test_engine_flags_no_event_success, teardown),
		cmocka_unit_test_teardown(test_engine_flags_no_event_errors, teardown),
		cmocka_unit_test_teardown(test_engine_flags_unknown_refused, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
