/* SPDX-License-Identifier: MIT */
/*
 * test_engine_onepass.c — one pass on the first transmission (h-onepass;
 * engine.h conf.tx_direct, dnp_engine_tx_burst_into): node 0 writes its
 * frames into buffers of ours (as dnpd writes shm slots), node 1 is an
 * ordinary engine. Checks that a PUT whose payload stays in the sender's
 * memory arrives whole with a good CRC, that a retransmission reads the
 * source again, that a source changed right after it was read still gives a
 * frame whose CRC matches its bytes, that a port closed with such packets
 * in flight never has its memory read afterwards, that a read failing
 * at write-out ends the command once with -EFAULT and sends no wrong bytes,
 * and that a PUT failing in the middle of a send-side run (its first packet
 * a descriptor, the read of its second failing) fills the first packet
 * before its error event gives the source back (found by fuzz_engine).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "engine.h"

#define ARENA (1u << 20)
#define BASE 0x100000ull
#define NPORTS 2

static struct dnp_engine *eng[2];
static uint8_t *mem[2][NPORTS];
static uint64_t now;
static bool closed0;              /* node 0 port 0 closed: its memory is gone */
static unsigned reads_closed;     /* reads of it after that */
static unsigned reads_nul;        /* node 0 reads without a seq (write-out reads) */
static bool scribble;             /* node 0's source changes right after each write-out read */
static uint64_t fail_lo, fail_hi; /* node 0 port 0 write-out reads in [lo, hi) fail */
static int64_t drop_seq = -1;     /* node 0's first data frame with this seq is lost */
static bool hold1;                /* node 0's frames are not sent (its window fills) */
static uint64_t t_cmd;            /* node 0's cmd_timeout (0: none) */
static unsigned bad_frames;       /* node 0's frames that did not decode */
static uint8_t orig[8 * DNP_MAX_PAYLOAD]; /* node 0's source as start() filled it */
static bool given_back;                   /* node 0's source is the application's again */
static unsigned reads_given_back;         /* node 0's reads after that */

static int mem_read(void *ctx, unsigned port, const struct dnp_buf *b, uint64_t va, void *dst,
		    size_t len, const struct dnp_mem_seq *seq)
{
	unsigned n = (unsigned)(uintptr_t)ctx;
	(void)b;
	if (port >= NPORTS || va < BASE || va + len > BASE + ARENA)
		return -EFAULT;
	if (n == 0 && port == 0 && closed0) {
		reads_closed++;
		return -EFAULT;
	}
	if (n == 0 && given_back)
		reads_given_back++;
	if (n == 0 && !seq) {
		reads_nul++;
		if (port == 0 && va < fail_hi && fail_lo < va + len)
			return -EFAULT;
	}
	memcpy(dst, mem[n][port] + (va - BASE), len);
	if (n == 0 && !seq && scribble) /* the application writes its source at once */
		for (size_t i = 0; i < len; i++)
			mem[n][port][va - BASE + i] ^= 0x5a;
	return 0;
}

static int mem_write(void *ctx, unsigned port, const struct dnp_buf *b, uint64_t va,
		     const void *src, size_t len)
{
	unsigned n = (unsigned)(uintptr_t)ctx;
	(void)b;
	if (port >= NPORTS || va < BASE || va + len > BASE + ARENA)
		return -EFAULT;
	memcpy(mem[n][port] + (va - BASE), src, len);
	return 0;
}

static bool mem_stable(void *ctx, unsigned port, uint64_t va, size_t len)
{
	(void)ctx;
	return port < NPORTS && va >= BASE && va + len <= BASE + ARENA;
}

static const struct dnp_mem_ops ops = { .read = mem_read,
					.write = mem_write,
					.stable = mem_stable };

static int setup(void **state)
{
	(void)state;
	now = 0;
	for (unsigned i = 0; i < 2; i++) {
		struct dnp_engine_conf c;

		dnp_engine_conf_default(&c);
		dnp_torus_init(&c.torus, 2, 1, 1);
		c.self = (struct dnp_coord){ (uint8_t)i, 0, 0 };
		c.max_ports = NPORTS;
		c.mem = &ops;
		c.mem_ctx = (void *)(uintptr_t)i;
		c.key_secret[0] = 77 + i;
		c.tx_direct = i == 0;
		c.cmd_timeout = i == 0 ? t_cmd : 0;
		for (unsigned p = 0; p < NPORTS; p++) {
			mem[i][p] = calloc(1, ARENA);
			assert_non_null(mem[i][p]);
		}
		assert_int_equal(dnp_engine_create(&c, now, &eng[i]), 0);
		for (unsigned p = 0; p < NPORTS; p++)
			assert_int_equal(dnp_engine_port_open(eng[i], p), 0);
	}
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	for (unsigned i = 0; i < 2; i++) {
		dnp_engine_destroy(eng[i]);
		for (unsigned p = 0; p < NPORTS; p++)
			free(mem[i][p]);
	}
	closed0 = scribble = hold1 = given_back = false;
	reads_closed = reads_nul = bad_frames = reads_given_back = 0;
	fail_lo = fail_hi = 0;
	drop_seq = -1;
	t_cmd = 0;
	return 0;
}

static int setup_timeout(void **state)
{
	t_cmd = 400;
	return setup(state);
}

/* Node 0's frames on link d, written into our buffers (slots) by the engine. */
static unsigned tx0(unsigned d, uint8_t (*slot)[DNP_MAX_FRAME], uint32_t *lens)
{
	uint8_t *bufs[16];

	for (unsigned k = 0; k < 16; k++) {
		bufs[k] = slot[k];
		memset(slot[k], 0xcc, DNP_MAX_FRAME); /* nothing of an earlier frame survives */
	}
	/* the driver's shortcut must never skip a frame: tx_due false means none */
	bool due = dnp_engine_tx_due(eng[0], d, now) != 0;
	unsigned n = dnp_engine_tx_burst_into(eng[0], d, bufs, DNP_MAX_FRAME, 16, lens, now);
	assert_true(due || n == 0);
	return n;
}

static void pump(unsigned steps)
{
	static uint8_t slot[16][DNP_MAX_FRAME];
	uint32_t lens[16];
	struct dnp_frame f[16];

	for (unsigned s = 0; s < steps; s++, now++) {
		dnp_engine_run(eng[0], now);
		dnp_engine_run(eng[1], now);
		for (unsigned d = 0; d < DNP_NDIRS; d++) {
			unsigned n = hold1 ? 0 : tx0(d, slot, lens);

			for (unsigned k = 0; k < n; k++) {
				struct dnp_pkt_hdr h;
				const uint8_t *pl;
				bool data = slot[k][3] & DNP_LINK_F_SEQ;

				if (dnp_pkt_decode(slot[k], lens[k], &h, &pl) != 0) {
					bad_frames++;
					continue;
				}
				if (data && drop_seq >= 0 && h.seq == (uint32_t)drop_seq) {
					drop_seq = -1; /* lost once */
					continue;
				}
				(void)dnp_engine_rx(eng[1], dnp_torus_opposite(d), slot[k], lens[k],
						    now);
			}
			n = dnp_engine_tx_burst(eng[1], d, f, 16, now);
			for (unsigned k = 0; k < n; k++) {
				uint8_t copy[DNP_MAX_FRAME];

				memcpy(copy, f[k].data, f[k].len);
				(void)dnp_engine_rx(eng[0], dnp_torus_opposite(d), copy, f[k].len,
						    now);
			}
		}
	}
}

/* The next event of node n port p within max steps (fails the test if none). */
static struct dnp_event next_ev(unsigned n, unsigned p, unsigned max)
{
	struct dnp_event ev;

	for (unsigned s = 0; s < max; s++) {
		if (dnp_engine_poll_events(eng[n], p, &ev, 1) == 1 && ev.type != DNP_EV_LINK)
			return ev;
		pump(1);
	}
	fail_msg("no event on node %u port %u", n, p);
	return ev;
}

/* Once everything is acked, no packet's payload is left in application memory. */
static void expect_no_desc(void)
{
	pump(500);
	assert_int_equal(dnp_engine_stats(eng[0])->tx_onepass_held, 0);
}

static uint32_t target(uint64_t len)
{
	uint32_t key = 0;

	assert_int_equal(dnp_engine_register(eng[1], 0, BASE, len, DNP_BUF_PUT_TARGET, 0, &key), 0);
	return key;
}

static void fill(uint8_t *p, size_t len, unsigned seed)
{
	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)(i * 7 + seed + (i >> 8));
}

static struct dnp_cmd put(uint32_t key, uint64_t len, uint64_t cookie)
{
	return (struct dnp_cmd){ .op = DNP_OP_PUT,
				 .dst_port = 0,
				 .dst_x = 1,
				 .remote_key = key,
				 .remote_va = BASE,
				 .len = len,
				 .local_va = BASE,
				 .cookie = cookie };
}

/*
 * A test's start: node 1's port 0 takes PUTs into [BASE, BASE + len), the
 * links come up, node 0's source gets the bytes of 'seed' (copied to orig
 * if 'keep'). Returns the target's key.
 */
static uint32_t start(uint64_t len, unsigned seed, bool keep)
{
	uint32_t key = target(len);

	pump(50); /* links up */
	fill(mem[0][0], len, seed);
	if (keep) {
		assert_true(len <= sizeof(orig));
		memcpy(orig, mem[0][0], len);
	}
	return key;
}

/* Node 0's port 0 submits PUT 'cookie': len bytes from BASE to BASE with key. */
static void submit_put(uint32_t key, uint64_t len, uint64_t cookie)
{
	struct dnp_cmd c = put(key, len, cookie);

	assert_int_equal(dnp_engine_submit(eng[0], 0, &c, now), 0);
}

/* Node 0's port 0 hears, within max steps, an event of this type and status. */
static void expect_ev(unsigned max, int type, int status)
{
	struct dnp_event ev = next_ev(0, 0, max);

	assert_int_equal(ev.type, type);
	assert_int_equal(ev.status, status);
}

/*
 * Node 0's held frames go out (hold1 off): they decode, the target gets
 * orig, and once all is acked no payload is left in application memory.
 */
static void let_go(uint64_t len)
{
	hold1 = false;
	pump(3000);
	assert_int_equal(bad_frames, 0);
	assert_memory_equal(mem[1][0], orig, len);
	expect_no_desc();
}

/* A 64 KiB PUT goes out in one pass and arrives whole; every frame decodes. */
static void test_onepass_put(void **state)
{
	(void)state;
	const uint64_t len = 64 * 1024 + 100;
	uint32_t key = start(len, 3, false);

	submit_put(key, len, 11);
	expect_ev(5000, DNP_EV_TX_DONE, 0);
	assert_memory_equal(mem[1][0], mem[0][0], len);
	assert_int_equal(bad_frames, 0);
	/* 17 packets; the last (100 bytes) is under DNP_ONEPASS_MIN and copied */
	assert_int_equal(dnp_engine_stats(eng[0])->tx_onepass, 16);
	assert_true(reads_nul >= 16);
	assert_int_equal(dnp_engine_stats(eng[0])->tx_onepass_faults, 0);
	expect_no_desc();
}

/* A lost frame is sent again from the source as it is then (the PUT is not done yet). */
static void test_onepass_retx_rereads(void **state)
{
	(void)state;
	const uint64_t len = 4 * DNP_MAX_PAYLOAD;
	uint32_t key = start(len, 5, false);

	/* the second packet is lost; by its resend the source's second packet is new */
	hold1 = true;
	submit_put(key, len, 12);
	dnp_engine_run(eng[0], now);
	/* find the sequence number the second packet gets: the first data frame's + 1 */
	static uint8_t slot[16][DNP_MAX_FRAME];
	uint32_t lens[16];
	unsigned d, n = 0;
	for (d = 0; d < DNP_NDIRS && !n; d++)
		n = tx0(d, slot, lens);
	assert_true(n >= 2);
	unsigned first = 0;
	while (first < n && !(slot[first][3] & DNP_LINK_F_SEQ))
		first++;
	assert_true(first + 1 < n);
	struct dnp_pkt_hdr h;
	const uint8_t *pl;
	d--;
	for (unsigned k = 0; k < n; k++) {
		assert_int_equal(dnp_pkt_decode(slot[k], lens[k], &h, &pl), 0);
		if (k == first + 1) /* lost on the wire */
			continue;
		(void)dnp_engine_rx(eng[1], dnp_torus_opposite(d), slot[k], lens[k], now);
	}
	for (size_t i = DNP_MAX_PAYLOAD; i < 2 * DNP_MAX_PAYLOAD; i++)
		mem[0][0][i] = (uint8_t)~mem[0][0][i];
	hold1 = false;
	expect_ev(20000, DNP_EV_TX_DONE, 0);
	/* the target has the new bytes of the resent packet: it was read again */
	assert_memory_equal(mem[1][0], mem[0][0], len);
	assert_int_equal(bad_frames, 0);
	assert_true(dnp_engine_stats(eng[0])->tx_onepass >= 5);
}

/*
 * The application rewrites its source right after each copy into the slot
 * (before the CRC is computed): every frame still decodes, because the CRC
 * covers the slot's bytes, and the target gets exactly the bytes copied.
 */
static void test_onepass_crc_over_slot(void **state)
{
	(void)state;
	const uint64_t len = 8 * DNP_MAX_PAYLOAD;
	uint32_t key = start(len, 9, true);

	scribble = true;
	submit_put(key, len, 13);
	expect_ev(5000, DNP_EV_TX_DONE, 0);
	assert_int_equal(bad_frames, 0);
	assert_int_equal(dnp_engine_stats(eng[1])->rx_crc_errors, 0);
	assert_memory_equal(mem[1][0], orig, len); /* what was copied, once each */
	assert_int_equal(dnp_engine_stats(eng[0])->tx_onepass, 8);
}

/*
 * The port closes (the application exits) with its packets in the link's
 * window, not yet sent: their bytes are read at the close, the memory is
 * never read afterwards, and the target gets the right bytes.
 */
static void test_onepass_port_close(void **state)
{
	(void)state;
	const uint64_t len = 6 * DNP_MAX_PAYLOAD;
	uint32_t key = start(len, 21, true);

	/* the links are direct (pump used tx_burst_into); nothing goes out now */
	hold1 = true;
	submit_put(key, len, 14);
	dnp_engine_run(eng[0], now);
	assert_true(dnp_engine_pending(eng[0]) >= 6);
	assert_int_equal(dnp_engine_stats(eng[0])->tx_onepass_held, 6);
	assert_int_equal(dnp_engine_port_close(eng[0], 0), 0);
	closed0 = true;
	memset(mem[0][0], 0xee, len); /* the heap is gone */
	let_go(len);
	assert_int_equal(reads_closed, 0);
	assert_int_equal(dnp_engine_stats(eng[0])->tx_onepass_faults, 0);
	struct dnp_event ev;
	assert_int_equal(dnp_engine_poll_events(eng[0], 0, &ev, 1), 0); /* the port is closed */
}

/*
 * A read that fails at write-out: the command ends once, with -EFAULT; the
 * target takes no byte of the failed packet; the link carries the next PUT.
 */
static void test_onepass_read_fault(void **state)
{
	(void)state;
	const uint64_t len = 4 * DNP_MAX_PAYLOAD;
	uint32_t key = start(len, 31, false);
	struct dnp_event ev;

	memset(mem[1][0], 0x11, len);
	fail_lo = BASE + DNP_MAX_PAYLOAD; /* the second packet */
	fail_hi = fail_lo + 1;
	submit_put(key, len, 15);
	expect_ev(5000, DNP_EV_ERROR, -EFAULT);
	pump(2000);
	assert_int_equal(dnp_engine_poll_events(eng[0], 0, &ev, 1), 0); /* exactly one */
	assert_int_equal(dnp_engine_stats(eng[0])->tx_onepass_faults, 1);
	for (size_t i = DNP_MAX_PAYLOAD; i < 2 * DNP_MAX_PAYLOAD; i++)
		assert_int_equal(mem[1][0][i], 0x11); /* nothing of the failed packet */
	assert_true(dnp_engine_stats(eng[1])->deliver_errors >= 1);
	fail_lo = fail_hi = 0;
	fill(mem[0][0], len, 33);
	submit_put(key, len, 16);
	expect_ev(5000, DNP_EV_TX_DONE, 0);
	assert_memory_equal(mem[1][0], mem[0][0], len);
	assert_int_equal(bad_frames, 0);
	expect_no_desc();
}

/*
 * A PUT that fails (cmd_timeout) with packets still in the window gives its
 * source back to the application: those packets keep the bytes they had,
 * whatever the application writes there afterwards.
 */
static void test_onepass_failed_cmd_frozen(void **state)
{
	(void)state;
	const uint64_t len = 4 * DNP_MAX_PAYLOAD;
	uint32_t key = start(len, 51, true);

	hold1 = true;
	submit_put(key, len, 18);
	expect_ev(5000, DNP_EV_ERROR, -ETIMEDOUT);
	memset(mem[0][0], 0x77, len); /* the application reuses its buffer */
	unsigned before = reads_nul;
	let_go(len);
	assert_int_equal(reads_nul, before); /* not read again */
}

/* A link marked direct and then sent with dnp_engine_tx_burst: the bytes are read first. */
static void test_onepass_plain_tx_burst(void **state)
{
	(void)state;
	const uint64_t len = 4 * DNP_MAX_PAYLOAD;
	uint32_t key = start(len, 41, false);
	struct dnp_frame f[16];

	submit_put(key, len, 17);
	dnp_engine_run(eng[0], now);
	unsigned total = 0;
	for (unsigned d = 0; d < DNP_NDIRS; d++) {
		unsigned n = dnp_engine_tx_burst(eng[0], d, f, 16, now);
		for (unsigned k = 0; k < n; k++) {
			struct dnp_pkt_hdr h;
			const uint8_t *pl;
			uint8_t copy[DNP_MAX_FRAME];

			memcpy(copy, f[k].data, f[k].len);
			assert_int_equal(dnp_pkt_decode(copy, f[k].len, &h, &pl), 0);
			if (h.kind == DNP_PKT_PUT) {
				assert_memory_equal(pl, mem[0][0] + h.offset, h.len);
				total++;
			}
			(void)dnp_engine_rx(eng[1], dnp_torus_opposite(d), copy, f[k].len, now);
		}
	}
	assert_int_equal(total, 4);
	assert_int_equal(dnp_engine_stats(eng[0])->tx_onepass, 0);
	expect_ev(5000, DNP_EV_TX_DONE, 0); /* the status too */
	assert_memory_equal(mem[1][0], mem[0][0], len);
}

/*
 * A PUT that fails in the middle of a send-side run: packet 1 inside the
 * arena goes as a descriptor, packet 2 lies beyond it and its read fails
 * (-EFAULT). The error event gives the source back to the application, so
 * packet 1 must have its bytes by then: no read of the source afterwards,
 * and the target gets the bytes the source had, or none.
 */
static void test_onepass_run_fail_fills_first(void **state)
{
	(void)state;
	const uint64_t off = ARENA - DNP_MAX_PAYLOAD; /* packet 1 inside, packet 2 beyond */
	uint32_t key = target(ARENA);
	struct dnp_event ev;
	struct dnp_cmd c = put(key, 2 * DNP_MAX_PAYLOAD, 7);

	pump(50); /* links up, and direct */
	for (size_t i = 0; i < DNP_MAX_PAYLOAD; i++)
		mem[0][0][off + i] = (uint8_t)(i * 13 + 1);
	memset(mem[1][0], 0x11, ARENA);
	c.local_va = BASE + off;
	assert_int_equal(dnp_engine_submit(eng[0], 0, &c, now), 0);
	dnp_engine_run(eng[0], now); /* the run: packet 1 a descriptor, packet 2's read fails */
	assert_int_equal(dnp_engine_poll_events(eng[0], 0, &ev, 1), 1);
	assert_int_equal(ev.type, DNP_EV_ERROR);
	assert_int_equal(ev.status, -EFAULT);
	/* the source is the application's again: it writes there, and must not be read */
	given_back = true;
	memset(mem[0][0] + off, 0xee, DNP_MAX_PAYLOAD);
	assert_int_equal(dnp_engine_stats(eng[0])->tx_onepass_held, 0);
	pump(2000);
	assert_int_equal(reads_given_back, 0);
	assert_int_equal(dnp_engine_stats(eng[0])->tx_onepass, 0);
	for (size_t i = 0; i < DNP_MAX_PAYLOAD; i++) /* the old bytes, or none */
		if (mem[1][0][i] != 0x11 && mem[1][0][i] != (uint8_t)(i * 13 + 1))
			fail_msg("byte %zu of the target is 0x%02x", i, mem[1][0][i]);
	assert_int_equal(dnp_engine_poll_events(eng[0], 0, &ev, 1), 0); /* one end only */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_onepass_put, setup, teardown),
		cmocka_unit_test_setup_teardown(test_onepass_retx_rereads, setup, teardown),
		cmocka_unit_test_setup_teardown(test_onepass_crc_over_slot, setup, teardown),
		cmocka_unit_test_setup_teardown(test_onepass_port_close, setup, teardown),
		cmocka_unit_test_setup_teardown(test_onepass_read_fault, setup, teardown),
		cmocka_unit_test_setup_teardown(test_onepass_plain_tx_burst, setup, teardown),
		cmocka_unit_test_setup_teardown(test_onepass_failed_cmd_frozen, setup_timeout,
						teardown),
		cmocka_unit_test_setup_teardown(test_onepass_run_fail_fills_first, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
