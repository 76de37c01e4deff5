/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer harness for the engine's receive path: a hostile neighbour sends
 * any frames on any link of a node (raw bytes, or well-formed frames built
 * from fuzzer-chosen header fields, so that they pass the CRC and reach the
 * delivery handlers), while the node's applications register, unregister
 * and close ports. The engine must never crash, and must read or write
 * application memory only inside buffers registered on that port (a write
 * only inside one registered as PUT or SEND target, a read only inside a
 * GET source): the memory callbacks abort otherwise.
 *
 * One pass (input's last byte & 0x20; engine.h conf.tx_direct): the node
 * also has a well-behaved neighbour, a second engine on its X+ link, so
 * the links come up and its applications' PUTs go out; the node writes its
 * frames with dnp_engine_tx_burst_into, so PUTs of >= DNP_ONEPASS_MIN bytes
 * keep their payload in the application's memory until written out (lost
 * on the way at the fuzzer's choice, so resends read it again), and the
 * fuzzer makes those write-out reads fail (the packet goes with key 0 and
 * its command fails). The node may then also read a command's own source
 * (nothing else unregistered; after the command succeeded only to write out
 * a resend, after it failed never), never a port's memory after it closed,
 * and ends each command at most once (exactly once unless its port closed).
 * FUZZ_ENGINE_STATS=1 prints the one-pass counters summed over the run.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "fuzz_input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NPORTS 4
#define NBUF 8
#define ARENA (1u << 20)

struct reg {
	bool used;
	unsigned port, flags;
	uint64_t va, len;
};

/* node 0 is the node under test, node 1 its neighbour (one-pass inputs only) */
static struct reg regs[2][NBUF];
static uint8_t arena[2][NPORTS][ARENA];
static uint32_t keys[NBUF]; /* the neighbour's keys, of regs[1][i] */

/* A command of node 0 that has not ended: its source may be read. */
#define NCMD 16
#define COOKIE_TAG 0xf00d000000000000ull
struct cmd_rec {
	bool used;
	unsigned port;
	uint64_t cookie, va, len;
};
static struct cmd_rec cmds[NCMD];
/*
 * Sources of PUTs that succeeded, the last NDONE: a packet of one may still
 * be resent (its ack late) and its source read again at write-out (a
 * duplicate the neighbour drops); after a failure, never.
 */
#define NDONE 64
static struct cmd_rec done[NDONE];
static unsigned done_next;
static uint64_t cookie_next;
static bool fail_out;                              /* node 0's write-out reads (no seq) fail */
static bool fail_all;                              /* every read of a command's source fails */
static bool unstable;                              /* mem->stable says no */
static uint64_t sum_onepass, sum_faults, sum_cmds; /* FUZZ_ENGINE_STATS */

/* Is [va, va+len) inside a registered buffer of node's port with one of flags? */
static bool inside(unsigned node, unsigned port, uint64_t va, size_t len, unsigned flags)
{
	for (unsigned i = 0; i < NBUF; i++) {
		const struct reg *r = &regs[node][i];
		if (r->used && r->port == port && (r->flags & flags) && va >= r->va &&
		    len <= r->len && va - r->va <= r->len - len)
			return true;
	}
	return false;
}

/* Is [va, va+len) inside the source of one of the n commands of node 0's port in t? */
static bool cmd_src(const struct cmd_rec *t, unsigned n, unsigned port, uint64_t va, size_t len)
{
	for (unsigned i = 0; i < n; i++) {
		const struct cmd_rec *c = &t[i];
		if (c->used && c->port == port && va >= c->va && len <= c->len &&
		    va - c->va <= c->len - len)
			return true;
	}
	return false;
}

static int mem_read(void *ctx, unsigned port, const struct dnp_buf *b, uint64_t va, void *dst,
		    size_t len, const struct dnp_mem_seq *seq)
{
	unsigned node = (unsigned)(uintptr_t)ctx;
	bool src = node == 0 && port < NPORTS &&
		   (cmd_src(cmds, NCMD, port, va, len) ||
		    (!seq && cmd_src(done, NDONE, port, va, len)));

	(void)b;
	if (port >= NPORTS || (!src && !inside(node, port, va, len, DNP_BUF_GET_SOURCE)))
		abort();
	if (src && (fail_all || (fail_out && !seq)))
		return -EFAULT;
	if (va > ARENA || len > ARENA - va) /* a command may name any source */
		return -EFAULT;
	memcpy(dst, &arena[node][port][va], len);
	return 0;
}

static int mem_write(void *ctx, unsigned port, const struct dnp_buf *b, uint64_t va,
		     const void *src, size_t len)
{
	unsigned node = (unsigned)(uintptr_t)ctx;

	(void)b;
	if (port >= NPORTS ||
	    !inside(node, port, va, len, DNP_BUF_PUT_TARGET | DNP_BUF_SEND_TARGET))
		abort();
	memcpy(&arena[node][port][va], src, len);
	return 0;
}

/* The application's memory as dnpd's sealed heap: stays mapped while the port is open. */
static bool mem_stable(void *ctx, unsigned port, uint64_t va, size_t len)
{
	(void)ctx;
	return !unstable && port < NPORTS && va <= ARENA && len <= ARENA - va;
}

static const struct dnp_mem_ops ops = { .read = mem_read, .write = mem_write };
static const struct dnp_mem_ops ops_direct = { .read = mem_read,
					       .write = mem_write,
					       .stable = mem_stable };

/* Events of node 0's port: a command ends at most once (its record goes). */
static void drain(struct dnp_engine *e, unsigned port)
{
	struct dnp_event ev[8];
	unsigned n = dnp_engine_poll_events(e, port, ev, 8);

	for (unsigned k = 0; k < n; k++) {
		bool end = ev[k].type == DNP_EV_TX_DONE || ev[k].type == DNP_EV_ERROR;
		unsigned i;

		if (!end || (ev[k].cookie & COOKIE_TAG) != COOKIE_TAG)
			continue;
		for (i = 0; i < NCMD; i++)
			if (cmds[i].used && cmds[i].cookie == ev[k].cookie && cmds[i].port == port)
				break;
		if (i == NCMD) /* ended twice, or never submitted on this port */
			abort();
		if (ev[k].type == DNP_EV_TX_DONE)
			done[done_next++ % NDONE] = cmds[i];
		cmds[i].used = false;
	}
}

/* A PUT of node 0, mostly to its neighbour, from anywhere in its port's memory. */
static void put_op(struct dnp_engine *e, struct fuzz_in *in, uint64_t now)
{
	unsigned slot = NCMD, port = (unsigned)fuzz_take(in, 1) % NPORTS;
	unsigned how = (unsigned)fuzz_take(in, 1), ri = (unsigned)fuzz_take(in, 1) % NBUF;
	const struct reg *r = &regs[1][ri];
	struct dnp_cmd c;

	for (unsigned i = 0; i < NCMD; i++)
		if (!cmds[i].used)
			slot = i;
	memset(&c, 0, sizeof(c));
	c.op = DNP_OP_PUT;
	c.flags = (how & 3) == 1 ? DNP_CMD_F_SRC_EVENT : (how & 3) == 2 ? DNP_CMD_F_INLINE : 0;
	c.dst_port = (uint8_t)(r->used ? r->port : fuzz_take(in, 1) % NPORTS);
	c.dst_x = (how & 4) ? (uint8_t)(fuzz_take(in, 1) % 3) : 2;
	c.remote_key = (how & 8) ? (uint32_t)fuzz_take(in, 4) : keys[ri];
	c.remote_va = r->va + fuzz_take(in, 2) % (r->len + 1);
	c.len = (how & 16) ? fuzz_take(in, 1) : 512 + fuzz_take(in, 2) % (24 * 1024);
	if (c.flags & DNP_CMD_F_INLINE)
		c.len %= DNP_CMD_INLINE_MAX + 1;
	c.local_va = fuzz_take(in, 3) % ARENA;
	c.cookie = COOKIE_TAG | ++cookie_next;
	if (slot == NCMD || dnp_engine_submit(e, port, &c, now) != 0)
		return;
	sum_cmds++;
	cmds[slot] = (struct cmd_rec){ true, port, c.cookie, c.local_va, c.len };
	if (c.flags & DNP_CMD_F_INLINE)
		cmds[slot].len = 0; /* its payload is in the command: nothing is read */
}

/* The fuzzer's other choices in a one-pass input: reads that fail, stable or not. */
static void fault_op(struct fuzz_in *in)
{
	unsigned v = (unsigned)fuzz_take(in, 1);

	fail_out = v & 1;
	fail_all = (v & 6) == 6;
	unstable = (v & 0x18) == 0x18;
}

/* Closes node 0's port and opens it again: nothing of the old application survives. */
static void port_cycle(struct dnp_engine *e, unsigned port)
{
	if (dnp_engine_port_close(e, port) != 0)
		return;
	/* its memory is gone: no read of it from now on (one pass reads it during the close) */
	for (unsigned k = 0; k < NCMD; k++)
		if (cmds[k].port == port)
			cmds[k].used = false;
	for (unsigned k = 0; k < NDONE; k++)
		if (done[k].port == port)
			done[k].used = false;
	for (unsigned k = 0; k < NBUF; k++)
		if (regs[0][k].port == port)
			regs[0][k].used = false;
	(void)dnp_engine_port_open(e, port);
}

/* An application's step: on node 0 (node 1, the neighbour, only registers targets). */
static void app_op(struct dnp_engine *e, struct dnp_engine *peer, struct fuzz_in *in, uint64_t now)
{
	unsigned what = (unsigned)fuzz_take(in, 1) % (peer ? 7 : 4);
	unsigned i = (unsigned)fuzz_take(in, 1) % NBUF, node = what == 5;
	struct reg *r = &regs[node][i];

	if ((what == 0 || what == 5) && !r->used) {
		r->port = (unsigned)fuzz_take(in, 1) % NPORTS;
		r->flags = (unsigned)fuzz_take(in, 1) % DNP_BUF_ALL + 1;
		r->va = fuzz_take(in, 3) % ARENA;
		r->len = fuzz_take(in, 3) % (ARENA - r->va) + 1;
		if (dnp_engine_register(node ? peer : e, r->port, r->va, r->len, r->flags, 0,
					node ? &keys[i] : NULL) == 0)
			r->used = true;
	} else if (what == 1 && r->used) {
		if (dnp_engine_unregister(e, r->port, r->va) == 0)
			r->used = false;
	} else if (what == 2) {
		port_cycle(e, (unsigned)fuzz_take(in, 1) % NPORTS);
	} else if (what == 3) {
		drain(e, (unsigned)fuzz_take(in, 1) % NPORTS);
	} else if (what == 4) {
		put_op(e, in, now);
	} else if (what == 6) {
		fault_op(in);
	}
}

/* One frame into frame[]: raw bytes, or a well-formed packet of fuzzed fields. Its length. */
static size_t frame_make(struct fuzz_in *in, uint8_t *frame)
{
	static uint8_t payload[DNP_MAX_PAYLOAD];
	struct dnp_pkt_hdr h;
	size_t len;

	if (fuzz_take(in, 1) & 1) { /* raw bytes */
		len = (size_t)fuzz_take(in, 2) % (DNP_MAX_FRAME + 32);
		for (size_t i = 0; i < len; i++)
			frame[i % DNP_MAX_FRAME] = (uint8_t)fuzz_take(in, 1);
		return len > DNP_MAX_FRAME ? DNP_MAX_FRAME : len;
	}
	memset(&h, 0, sizeof(h));
	h.lflags = (uint8_t)(fuzz_take(in, 1) & 1);
	h.src_dir = (uint8_t)(fuzz_take(in, 1) % 7);
	h.seq = (uint32_t)fuzz_take(in, 1);
	h.ack = (uint32_t)fuzz_take(in, 1);
	h.dst = (struct dnp_coord){ (uint8_t)(fuzz_take(in, 1) % 3), 0, 0 };
	h.src = (struct dnp_coord){ (uint8_t)(fuzz_take(in, 1) % 3), 0, 0 };
	h.dst_port = (uint8_t)fuzz_take(in, 1);
	h.src_port = (uint8_t)fuzz_take(in, 1);
	h.kind = (uint8_t)(fuzz_take(in, 1) % 11); /* DNP_PKT_COLL included */
	h.vc = (uint8_t)(fuzz_take(in, 1) % DNP_MAX_VC);
	h.flags = (uint8_t)(fuzz_take(in, 1) % 4);
	h.status = (uint8_t)fuzz_take(in, 1);
	h.len = (uint16_t)(fuzz_take(in, 2) % (DNP_MAX_PAYLOAD + 1));
	h.msg_id = (uint32_t)fuzz_take(in, 2);
	h.va = fuzz_take(in, 3);
	h.key = (uint32_t)fuzz_take(in, 4);
	h.offset = (uint32_t)fuzz_take(in, 3);
	h.hops = (uint8_t)fuzz_take(in, 1);
	h.msg_len = (uint32_t)fuzz_take(in, 3);
	h.via = (uint16_t)(fuzz_take(in, 2) & ~DNP_PKT_VIA_RSVD); /* route through a via */
	for (unsigned i = 0; i < h.len; i++)
		payload[i] = (uint8_t)fuzz_take(in, 1);
	int n = dnp_pkt_encode(&h, payload, frame, DNP_MAX_FRAME);
	return n > 0 ? (size_t)n : 0;
}

/*
 * Frames from a link: one through dnp_engine_rx, or (burst) 1..4 through
 * dnp_engine_rx_burst, dnpd's receive path (docs/performance.md, "Batched
 * receive"), whose results must match the per-frame ones.
 */
static void frame_op(struct dnp_engine *e, struct fuzz_in *in, uint64_t now, bool burst)
{
	static uint8_t frames[4][DNP_MAX_FRAME];
	unsigned dir = (unsigned)fuzz_take(in, 1) % DNP_NDIRS;
	struct dnp_frame f[4];
	int rc[4];
	unsigned k = burst ? 1 + (unsigned)fuzz_take(in, 1) % 4 : 1, m = 0;

	for (unsigned i = 0; i < k; i++) {
		size_t len = frame_make(in, frames[m]);

		if (len) {
			f[m].data = frames[m];
			f[m].len = (uint32_t)len;
			m++;
		}
	}
	if (!burst) {
		if (m)
			(void)dnp_engine_rx(e, dir, f[0].data, f[0].len, now);
		return;
	}
	unsigned dropped = dnp_engine_rx_burst(e, dir, f, m, rc, now), bad = 0;

	for (unsigned i = 0; i < m; i++)
		bad += rc[i] < 0;
	if (bad != dropped) /* the count returned is the frames refused */
		abort();
}

/*
 * The links' traffic of one step. One pass (peer set): node 0 writes its
 * frames into buffers, as dnpd into shm slots; those on X+ go to the
 * neighbour, except the ones the fuzzer loses (bit k of a byte: frame k),
 * and the neighbour's on its X- come back.
 */
static void pump(struct dnp_engine *e, struct dnp_engine *peer, struct fuzz_in *in, uint64_t now)
{
	static uint8_t slots[16][DNP_MAX_FRAME], copy[DNP_MAX_FRAME];
	struct dnp_frame out[16];
	unsigned loss = peer ? (unsigned)fuzz_take(in, 1) : 0;

	dnp_engine_run(e, now);
	for (unsigned d = 0; d < DNP_NDIRS; d++) {
		uint8_t *bufs[16];
		uint32_t lens[16];
		unsigned n;

		if (!peer) {
			(void)dnp_engine_tx_burst(e, d, out, 16, now);
			continue;
		}
		for (unsigned k = 0; k < 16; k++)
			bufs[k] = slots[k];
		n = dnp_engine_tx_burst_into(e, d, bufs, DNP_MAX_FRAME, 16, lens, now);
		for (unsigned k = 0; k < n && d == DNP_DIR_XP; k++)
			if (k >= 8 || !((loss >> k) & 1))
				(void)dnp_engine_rx(peer, DNP_DIR_XM, slots[k], lens[k], now);
	}
	if (!peer)
		return;
	dnp_engine_run(peer, now);
	for (unsigned d = 0; d < DNP_NDIRS; d++) {
		unsigned n = dnp_engine_tx_burst(peer, d, out, 16, now);

		for (unsigned k = 0; k < n && d == DNP_DIR_XM; k++) {
			memcpy(copy, out[k].data, out[k].len);
			(void)dnp_engine_rx(e, DNP_DIR_XP, copy, out[k].len, now);
		}
	}
	for (unsigned p = 0; p < NPORTS; p++) { /* the neighbour's applications keep up */
		struct dnp_event ev[8];
		(void)dnp_engine_poll_events(peer, p, ev, 8);
	}
}

static struct dnp_engine *node_create(unsigned x, bool direct, bool rx_direct)
{
	struct dnp_engine_conf c;
	struct dnp_engine *e;

	dnp_engine_conf_default(&c);
	dnp_torus_init(&c.torus, 3, 1, 1);
	c.self = (struct dnp_coord){ (uint8_t)x, 0, 0 };
	c.max_ports = NPORTS;
	c.max_buffers = NBUF;
	c.max_commands = 16;
	c.event_queue = 8;
	c.max_sends = 2;
	c.cmd_timeout = 500;
	c.reasm_timeout = 300;
	c.deliver_timeout = 200;
	c.link.fifo_words = 1024;
	c.link.t_red = 1000;
	c.link.t_yellow = 500;
	c.mem = direct ? &ops_direct : &ops;
	c.mem_ctx = (void *)(uintptr_t)(x == 2);
	c.key_secret[0] = 5 + x;
	c.tx_direct = direct;
	/* both receive paths: the copying one, and direct receive (dnpd's) */
	c.rx_direct = rx_direct;
	if (dnp_engine_create(&c, 0, &e))
		abort();
	for (unsigned p = 0; p < NPORTS; p++)
		(void)dnp_engine_port_open(e, p);
	return e;
}

static void stats_print(void) __attribute__((destructor));
static void stats_print(void)
{
	if (getenv("FUZZ_ENGINE_STATS"))
		fprintf(stderr, "fuzz_engine: puts %llu tx_onepass %llu tx_onepass_faults %llu\n",
			(unsigned long long)sum_cmds, (unsigned long long)sum_onepass,
			(unsigned long long)sum_faults);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };
	uint64_t now = 0;
	/* the last byte: receive path, bursts, one pass with a neighbour */
	uint8_t mode = size > 0 ? data[size - 1] : 0;
	bool burst = mode & 0x40, onepass = mode & 0x20;

	memset(regs, 0, sizeof(regs));
	memset(cmds, 0, sizeof(cmds));
	memset(done, 0, sizeof(done));
	fail_out = fail_all = unstable = false;
	struct dnp_engine *e = node_create(1, onepass, mode & 0x80);
	struct dnp_engine *peer = onepass ? node_create(2, false, false) : NULL;

	while (in.n) {
		now += fuzz_take(&in, 1) % 64;
		if (fuzz_take(&in, 1) % 4 == 0)
			app_op(e, peer, &in, now);
		else
			frame_op(e, &in, now, burst);
		pump(e, peer, &in, now);
	}
	/* let every timer fire: every command ends, once */
	fail_out = fail_all = unstable = false;
	for (unsigned i = 0; i < 8; i++) {
		now += 1000;
		pump(e, peer, &in, now);
		for (unsigned p = 0; p < NPORTS; p++)
			drain(e, p);
	}
	for (unsigned i = 0; i < NCMD; i++)
		if (cmds[i].used) /* accepted and never ended */
			abort();
	sum_onepass += dnp_engine_stats(e)->tx_onepass;
	sum_faults += dnp_engine_stats(e)->tx_onepass_faults;
	dnp_engine_destroy(e);
	if (peer)
		dnp_engine_destroy(peer);
	return 0;
}
