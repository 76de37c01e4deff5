/* SPDX-License-Identifier: MIT */
/*
 * engine_bench — the ceiling of a software DNP: two engines wired back to
 * back in one thread (no daemon, no transport, no system call in the loop),
 * streaming PUTs from node 0,0,0 to node 1,0,0 of a 2x1x1 torus with the
 * daemon's link settings (exact credits, prompt credits). Every packet is
 * built, CRC-32'd, copied into the receiver, CRC-checked, key- and
 * bounds-checked in the buffer table and written to the target buffer, as in
 * dnpd; only the transport is replaced by handing the frame pointer from one
 * engine's tx_burst to the other's rx.
 *
 * Beside it, in the same run, memcpy bandwidth with the same block size and
 * the same buffers (the reference of the goal: 4 KiB PUTs at no less
 * than half of it).
 *
 *   engine_bench [--sizes 8,64,4096] [--seconds S] [--reps R] [--csv] [--puts N]
 *                [--per-frame] [--tx-single] [--slots copy|direct]
 *
 * --puts N streams exactly N PUT packets per size (no warm-up, no memcpy
 * reference) instead of timing: for counting instructions per PUT under
 * valgrind --tool=callgrind, which repeat exactly where seconds do not.
 * Each burst of frames one engine sends goes to the other in one
 * dnp_engine_rx_burst call; --per-frame: one dnp_engine_rx call per frame.
 * PUTs are submitted in bursts (dnp_engine_submit_burst) and injected and
 * sent in runs (the send-side burst); --tx-single: one dnp_engine_submit
 * call per PUT and the engines' one-at-a-time send path (conf.tx_single).
 * --slots copy: every frame is copied into a slot buffer before the other
 * engine takes it from there (as dnpd's shm_tx_burst does); --slots direct:
 * the sender writes its frames into the slots itself (conf.tx_direct,
 * dnp_engine_tx_burst_into: a PUT's payload goes from the source straight
 * into the slot; docs/performance.md, "One pass on the first transmission").
 *
 * Output (--csv): transport,peer,test,bytes,rep,value,unit rows
 * (engine msgrate in packets/s, engine bw in MBps = 10^6 B/s, memcpy bw).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dnp_parse.h"
#include "engine.h"

#define PROG "engine_bench"
#define BASE 0x100000ull
#define ARENA (1u << 20) /* source and target buffers: 1 MiB each (cache-resident, as memcpy's) */
#define WINDOW 512u      /* PUTs outstanding */
#define MAX_SIZES 16

struct node {
	struct dnp_engine *e;
	uint8_t *mem;
};

static int mem_read(void *ctx, unsigned port, const struct dnp_buf *b, uint64_t va, void *dst,
		    size_t len, const struct dnp_mem_seq *seq)
{
	(void)seq;
	struct node *n = ctx;

	if (va < BASE || va - BASE > ARENA || len > ARENA - (va - BASE))
		return -EFAULT;
	memcpy(dst, n->mem + (va - BASE), len);
	return 0;
}

static int mem_write(void *ctx, unsigned port, const struct dnp_buf *b, uint64_t va,
		     const void *src, size_t len)
{
	struct node *n = ctx;

	if (va < BASE || va - BASE > ARENA || len > ARENA - (va - BASE))
		return -EFAULT;
	memcpy(n->mem + (va - BASE), src, len);
	return 0;
}

static bool mem_stable(void *ctx, unsigned port, uint64_t va, size_t len)
{
	(void)ctx;
	(void)port;
	return va >= BASE && va - BASE <= ARENA && len <= ARENA - (va - BASE);
}

static const struct dnp_mem_ops ops = { .read = mem_read,
					.write = mem_write,
					.stable = mem_stable };

/* --slots: 0 none (frames handed over in place), 1 copy, 2 direct (tx_burst_into) */
static unsigned slot_mode;
static uint8_t slot_buf[32][DNP_MAX_FRAME];

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* --tx-single: the one-at-a-time send path, and one submit call per PUT */
static bool tx_single;

static int setup(struct node n[2], uint32_t *key)
{
	for (unsigned i = 0; i < 2; i++) {
		struct dnp_engine_conf c;
		int r;

		dnp_engine_conf_default(&c);
		dnp_torus_init(&c.torus, 2, 1, 1);
		c.self = (struct dnp_coord){ (uint8_t)i, 0, 0 };
		c.max_ports = 2;
		c.max_commands = 8192;
		c.mem = &ops;
		c.mem_ctx = &n[i];
		c.key_secret[0] = 0x600d + i;
		/* as dnpd: exact credits sent promptly, nanosecond timers */
		c.link.credit_model = DNP_CREDIT_EXACT;
		c.prompt_credits = true;
		c.ack_delay = 100000; /* dnpd's DNPD_ACK_DELAY_NS */
		c.rx_direct = true;   /* as dnpd: delivered from the sender's frame */
		c.rx_map_priv = true; /* as dnpd: buffers registered with their mapping */
		c.tx_single = tx_single;
		c.tx_direct = slot_mode == 2;
		c.link.credit_period = 1000000;
		c.link.credit_timeout = 4000000000ull;
		c.link.rto = 20000000;
		n[i].mem = aligned_alloc(4096, ARENA);
		if (!n[i].mem)
			return -ENOMEM;
		memset(n[i].mem, 0x5a + (int)i, ARENA);
		r = dnp_engine_create(&c, now_ns(), &n[i].e);
		if (r == 0)
			r = dnp_engine_port_open(n[i].e, 0);
		if (r < 0)
			return r;
	}
	/* priv: the target's mapping, as dnpd registers a buffer in the shared heap */
	return dnp_engine_register(n[1].e, 0, BASE, ARENA, DNP_BUF_PUT_TARGET, (uintptr_t)n[1].mem,
				   key);
}

/* Moves every frame either engine has for the other; returns the number moved. */
static uint64_t rx_refused; /* frames an engine did not take (the sender resends them) */
/* frames handed over as a burst (dnp_engine_rx_burst, the default) or one by one (--per-frame) */
static bool burst = true;

/* --slots: the frames of link d written into slot_buf (copied, or by the engine). */
static unsigned slot_tx(struct dnp_engine *e, unsigned d, struct dnp_frame *f, uint64_t now)
{
	uint8_t *bufs[32];
	uint32_t lens[32];
	unsigned c;

	if (slot_mode == 2)
		dnp_engine_link_direct(e, d);
	if (slot_mode == 1 || !dnp_engine_stats(e)->tx_onepass_held ||
	    !(dnp_engine_tx_due(e, d, now) & DNP_TX_DUE_DIRECT)) {
		c = dnp_engine_tx_burst(e, d, f, 32, now);
		for (unsigned k = 0; k < c; k++) {
			memcpy(slot_buf[k], f[k].data, f[k].len);
			f[k].data = slot_buf[k];
		}
		return c;
	}
	for (unsigned k = 0; k < 32; k++)
		bufs[k] = slot_buf[k];
	c = dnp_engine_tx_burst_into(e, d, bufs, DNP_MAX_FRAME, 32, lens, now);
	for (unsigned k = 0; k < c; k++)
		f[k] = (struct dnp_frame){ slot_buf[k], lens[k] };
	return c;
}

static unsigned pump(struct node n[2], uint64_t now)
{
	struct dnp_frame f[32];
	unsigned moved = 0;

	for (unsigned i = 0; i < 2; i++)
		dnp_engine_run(n[i].e, now);
	for (unsigned i = 0; i < 2; i++) {
		for (unsigned d = DNP_DIR_XP; d <= DNP_DIR_XM; d++) {
			unsigned c = slot_mode ? slot_tx(n[i].e, d, f, now) :
						 dnp_engine_tx_burst(n[i].e, d, f, 32, now);

			if (burst)
				rx_refused += dnp_engine_rx_burst(n[1 - i].e, dnp_torus_opposite(d),
								  f, c, NULL, now);
			else
				for (unsigned k = 0; k < c; k++)
					if (dnp_engine_rx(n[1 - i].e, dnp_torus_opposite(d),
							  f[k].data, f[k].len, now) < 0)
						rx_refused++;
			moved += c;
		}
	}
	return moved;
}

struct result {
	double pps, mbps;
	uint64_t pkts;
	int err;
};

static void usage(void)
{
	printf("usage: " PROG " [--sizes LIST] [--seconds S] [--reps R] [--csv] [--puts N]\n"
	       "  [--per-frame] [--tx-single] [--slots copy|direct]\n"
	       "  two engines back to back in one thread: PUT packets/s and MB/s,\n"
	       "  beside memcpy MB/s of the same block size; --puts N: exactly N\n"
	       "  PUTs per size, no memcpy (instruction counts under callgrind);\n"
	       "  --per-frame: frames one by one (dnp_engine_rx), not as bursts;\n"
	       "  --tx-single: PUTs submitted, injected and sent one at a time;\n"
	       "  --slots copy|direct: frames copied into slots, or written there\n"
	       "  by the sender in one pass (conf.tx_direct).\n");
}

/* Streams PUTs of 'size' bytes for about 'seconds'. */
static struct result stream(struct node n[2], uint32_t key, uint32_t size, double seconds,
			    uint64_t limit)
{
	const uint64_t slots = ARENA / size < 4096 ? ARENA / size : 4096;
	struct result res = { 0 };
	struct dnp_event ev[64];
	uint64_t issued = 0, done = 0, rx = 0, t0, t1, deadline, rx0 = 0, pk0;
	const struct dnp_engine_stats *st = dnp_engine_stats(n[1].e);
	unsigned k, c;
	bool timing = false;

	t0 = now_ns();
	deadline = t0 + (uint64_t)(seconds * 1e9);
	pk0 = st->pkts_delivered;
	if (limit)
		timing = true; /* counted from the first PUT */
	for (;;) {
		uint64_t now = now_ns();

		if (limit && st->pkts_delivered - pk0 >= limit)
			break;
		if (!timing && now - t0 > 50000000ull) { /* 50 ms warm-up */
			timing = true;
			t0 = now;
			rx0 = rx;
			pk0 = st->pkts_delivered;
		}
		if (timing && !limit && now >= deadline)
			break;
		while (issued - done < WINDOW && (!limit || issued < limit)) {
			struct dnp_cmd cmd[64];
			unsigned m = 0, got;
			int r = 0;

			for (;
			     m < 64 && issued + m - done < WINDOW && (!limit || issued + m < limit);
			     m++) {
				uint64_t off = ((issued + m) % slots) * size;

				cmd[m] = (struct dnp_cmd){ .op = DNP_OP_PUT,
							   .dst_x = 1,
							   .remote_key = key,
							   .remote_va = BASE + off,
							   .len = size,
							   .local_va = BASE + off,
							   .cookie = issued + m };
			}
			if (tx_single) {
				for (got = 0; got < m; got++)
					if ((r = dnp_engine_submit(n[0].e, 0, &cmd[got], now)) < 0)
						break;
			} else {
				got = dnp_engine_submit_burst(n[0].e, 0, cmd, m, &r, now);
			}
			issued += got;
			if (r == -EAGAIN)
				break;
			if (r < 0) {
				res.err = r;
				return res;
			}
		}
		/* several rounds per clock read: the clock is not part of the engine's cost */
		for (k = 0; k < 8; k++)
			if (!pump(n, now))
				break;
		while ((c = dnp_engine_poll_events(n[0].e, 0, ev, 64)) > 0)
			for (k = 0; k < c; k++) {
				if (ev[k].type != DNP_EV_TX_DONE || ev[k].status) {
					res.err = ev[k].status ? ev[k].status : -EPROTO;
					return res;
				}
				done++;
			}
		while ((c = dnp_engine_poll_events(n[1].e, 0, ev, 64)) > 0)
			rx += c;
	}
	t1 = now_ns();
	res.pkts = st->pkts_delivered - pk0;
	res.pps = (double)res.pkts / ((double)(t1 - t0) / 1e9);
	res.mbps = (double)(rx - rx0) * size / ((double)(t1 - t0) / 1e3);
	/* drain: every PUT completes (a refused frame waits for its retransmission) */
	for (uint64_t end = now_ns() + 5000000000ull; done < issued && now_ns() < end;) {
		pump(n, now_ns());
		while ((c = dnp_engine_poll_events(n[0].e, 0, ev, 64)) > 0)
			done += c;
		while (dnp_engine_poll_events(n[1].e, 0, ev, 64) > 0)
			;
	}
	if (done != issued)
		res.err = -ETIMEDOUT;
	return res;
}

/* memcpy of 'size'-byte blocks walking the same 1 MiB buffers, MB/s. */
static double memcpy_mbps(struct node n[2], uint32_t size, double seconds)
{
	const uint64_t slots = ARENA / size;
	uint64_t i = 0, t0 = now_ns(), t;

	do {
		for (unsigned k = 0; k < 256; k++, i++) {
			uint64_t off = (i % slots) * size;

			memcpy(n[1].mem + off, n[0].mem + off, size);
			__asm__ volatile("" ::: "memory");
		}
		t = now_ns();
	} while (t - t0 < (uint64_t)(seconds * 1e9));
	return (double)i * size / ((double)(t - t0) / 1e3);
}

/* Frames on the wire per PUT, each way (data, completions, credits), over the whole run. */
static void frames_per_put(struct node n[2])
{
	const struct dnp_engine_stats *st = dnp_engine_stats(n[1].e);
	double puts = (double)st->pkts_delivered;

	for (unsigned i = 0; i < 2; i++) {
		uint64_t fr = 0, cr = 0;

		for (unsigned d = DNP_DIR_XP; d <= DNP_DIR_XM; d++) {
			const struct dnp_link_stats *ls = dnp_engine_link_stats(n[i].e, d);

			fr += ls->tx_frames;
			cr += ls->tx_credits;
		}
		printf("# node %u sent %.3f frames per PUT packet (%.3f of them credit frames)\n",
		       i, (double)fr / puts, (double)cr / puts);
	}
	printf("# frames refused by the receiving engine (resent later): %llu\n",
	       (unsigned long long)rx_refused);
}

/* --sizes: dnp_parse_sizes(), each 1..DNP_MAX_PAYLOAD. */
static int parse_sizes(const char *s, uint32_t *sz, unsigned *n)
{
	uint64_t v[MAX_SIZES];
	int k = dnp_parse_sizes(s, v, MAX_SIZES);

	if (k < 0)
		return k;
	for (int i = 0; i < k; i++) {
		if (v[i] == 0 || v[i] > DNP_MAX_PAYLOAD)
			return -ERANGE;
		sz[i] = (uint32_t)v[i];
	}
	*n = (unsigned)k;
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "sizes", required_argument, NULL, 's' },
		{ "seconds", required_argument, NULL, 't' },
		{ "reps", required_argument, NULL, 'r' },
		{ "csv", no_argument, NULL, 'c' },
		{ "puts", required_argument, NULL, 'p' },
		{ "per-frame", no_argument, NULL, 'f' },
		{ "tx-single", no_argument, NULL, 'S' },
		{ "slots", required_argument, NULL, 'L' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	uint32_t sizes[MAX_SIZES] = { 8, 64, 4096 }, key;
	unsigned nsizes = 3, reps = 3, k, r;
	double seconds = 1.0;
	uint64_t limit = 0, ns;
	bool csv = false;
	struct node n[2] = { 0 };
	int c;

	while ((c = getopt_long(argc, argv, "s:t:r:p:cfSL:h", lo, NULL)) != -1) {
		switch (c) {
		case 's':
			if (parse_sizes(optarg, sizes, &nsizes) < 0) {
				fprintf(stderr, PROG ": bad --sizes (1..%u bytes)\n",
					DNP_MAX_PAYLOAD);
				return 2;
			}
			break;
		case 't': /* a bare number is seconds; "50ms" works too */
			if (dnp_parse_duration_ns(optarg, 1000000000ull, &ns)) {
				fprintf(stderr, PROG ": bad --seconds '%s'\n", optarg);
				return 2;
			}
			seconds = (double)ns / 1e9;
			break;
		case 'r':
			if (dnp_parse_u64_max(optarg, UINT32_MAX, &ns)) {
				fprintf(stderr, PROG ": bad --reps '%s'\n", optarg);
				return 2;
			}
			reps = (unsigned)ns;
			break;
		case 'c':
			csv = true;
			break;
		case 'f':
			burst = false;
			break;
		case 'S':
			tx_single = true;
			break;
		case 'L':
			if (strcmp(optarg, "copy") && strcmp(optarg, "direct")) {
				fprintf(stderr, PROG ": bad --slots (copy or direct)\n");
				return 2;
			}
			slot_mode = strcmp(optarg, "copy") ? 2u : 1u;
			break;
		case 'p':
			if (dnp_parse_u64(optarg, &limit) || !limit) {
				fprintf(stderr, PROG ": bad --puts\n");
				return 2;
			}
			break;
		case 'h':
			usage();
			return 0;
		default:
			return 2;
		}
	}
	if (seconds <= 0 || seconds > 60 || reps == 0) {
		fprintf(stderr, PROG ": bad --seconds or --reps\n");
		return 2;
	}
	c = setup(n, &key);
	if (c < 0) {
		fprintf(stderr, PROG ": setup: %s\n", strerror(-c));
		return 1;
	}
	if (csv)
		printf("transport,peer,test,bytes,rep,value,unit\n");
	else
		printf("# two engines back to back, one thread, CRC-32 on every packet\n"
		       "%8s %4s %14s %12s %14s\n",
		       "bytes", "rep", "packets/s", "MB/s", "memcpy MB/s");
	for (r = 1; r <= reps; r++) {
		for (k = 0; k < nsizes; k++) {
			struct result res = stream(n, key, sizes[k], seconds, limit);
			double mc;

			if (res.err) {
				fprintf(stderr, PROG ": %u bytes: %s\n", sizes[k],
					strerror(-res.err));
				return 1;
			}
			mc = limit ? 0 : memcpy_mbps(n, sizes[k], seconds / 2);
			if (csv)
				printf("engine,,msgrate,%u,%u,%.0f,msgps\n"
				       "engine,,bw,%u,%u,%.1f,MBps\n"
				       "memcpy,,bw,%u,%u,%.1f,MBps\n",
				       sizes[k], r, res.pps, sizes[k], r, res.mbps, sizes[k], r,
				       mc);
			else
				printf("%8u %4u %14.0f %12.1f %14.1f\n", sizes[k], r, res.pps,
				       res.mbps, mc);
			if (!csv && r == reps && k == nsizes - 1)
				frames_per_put(n);
			fflush(stdout);
		}
	}
	for (k = 0; k < 2; k++) {
		dnp_engine_destroy(n[k].e);
		free(n[k].mem);
	}
	return 0;
}
