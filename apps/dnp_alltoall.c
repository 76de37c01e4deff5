/* SPDX-License-Identifier: MIT */
/*
 * dnp_alltoall — every node PUTs one message of each size to every other
 * node and verifies, byte by byte, everything it received.
 *
 * Each node registers one PUT-target buffer holding a region per (source,
 * size), and tells every other node its address and key with a SEND. Message
 * bytes are a pattern derived from (source, destination, size), so a message
 * written to the wrong place, truncated, or corrupted is caught. A node
 * reports DONE to everyone after all its PUTs completed (TX_DONE means the
 * target wrote every byte), and verifies after it has everyone's DONE.
 * Exit 0 only if every RX event and every byte is right.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app_cli.h"
#include "app_common.h"

#define PROG "dnp_alltoall"
#define MAX_SIZES 32
#define TAG_ADDR 11
#define TAG_DONE 12
#define ALIGN 64u

struct a2a {
	struct app a;
	uint64_t sizes[MAX_SIZES];
	uint64_t offs[MAX_SIZES]; /* offset of size k inside a per-node region */
	unsigned nsizes;
	uint64_t region; /* bytes per peer */
	unsigned window;
	bool verbose;
	bool detours;      /* a path may be longer than the torus distance */
	unsigned tc;       /* --tc: traffic class of its PUTs (0..7) */
	unsigned detoured; /* messages that came the long way */
	uint8_t *rbuf, *sbuf;
	uint64_t *peer_va;
	uint32_t *peer_key;
	uint8_t *rx_seen; /* [src * nsizes + k] */
	unsigned rx_count, errors;
};

static void usage(FILE *f)
{
	fprintf(f, "usage: " PROG " [--sizes LIST] [--window W] [--detours] [--verbose] [--tc N]\n"
		   "  every node PUTs each size (default 1,4096,1048577) to every other node\n"
		   "  and verifies what it received. Run it under dnp-run. Each message must\n"
		   "  take exactly the torus distance in hops; with --detours (failures in the\n"
		   "  torus, docs/routing.md) it may take more, and the count is printed.\n"
		   "  --tc N: PUT in traffic class N (0..7, default 0; docs/api.md).\n"
		   "  --help: this text; --version: the version.\n");
}

static void rx_event(struct a2a *t, const struct dnp_event *ev)
{
	struct dnp_coords pc = { ev->peer_x, ev->peer_y, ev->peer_z };
	struct app *a = &t->a;
	unsigned src, k, want_hops;
	uint64_t base = (uintptr_t)t->rbuf;

	if (pc.x >= a->dims.x || pc.y >= a->dims.y || pc.z >= a->dims.z) {
		app_print_event(PROG, "RX_PUT from outside the torus", ev);
		t->errors++;
		return;
	}
	src = app_id_of(a, pc);
	for (k = 0; k < t->nsizes; k++)
		if (ev->va == base + src * t->region + t->offs[k] && ev->len == t->sizes[k])
			break;
	if (k == t->nsizes || src == a->id) {
		app_print_event(PROG, "RX_PUT not matching any expected message", ev);
		t->errors++;
		return;
	}
	if (t->rx_seen[src * t->nsizes + k]++) {
		app_print_event(PROG, "duplicate RX_PUT", ev);
		t->errors++;
		return;
	}
	want_hops = app_distance(a, pc, a->self);
	if (t->detours && ev->hops > want_hops)
		t->detoured++;
	else if (ev->hops != want_hops) {
		fprintf(stderr, PROG ": RX_PUT from %u,%u,%u: hops %u, torus distance %u\n", pc.x,
			pc.y, pc.z, ev->hops, want_hops);
		t->errors++;
	}
	t->rx_count++;
}

/* Handles one event; returns 1 for a TX_DONE of ours, 0 otherwise, -errno on failure. */
static int handle(struct a2a *t, const struct dnp_event *ev)
{
	switch (ev->type) {
	case DNP_EV_TX_DONE:
		return 1;
	case DNP_EV_RX_PUT:
		rx_event(t, ev);
		return 0;
	case DNP_EV_ERROR:
		app_print_event(PROG, "command failed", ev);
		return ev->status ? ev->status : -EIO;
	default:
		app_print_event(PROG, "ignored", ev);
		return 0;
	}
}

static int exchange_addresses(struct a2a *t)
{
	struct app *a = &t->a;
	struct app_msg *m = calloc(a->nnodes, sizeof(*m));
	struct app_ctrl c;
	uint32_t key;
	int r;

	if (!m)
		return -ENOMEM;
	r = dnp_register(a->d, t->rbuf, t->region * a->nnodes, DNP_BUF_PUT_TARGET, &key);
	if (r < 0) {
		fprintf(stderr, PROG ": register %llu bytes: %s\n",
			(unsigned long long)(t->region * a->nnodes), dnp_strerror(r));
		free(m);
		return r;
	}
	memset(&c, 0, sizeof(c));
	c.tag = TAG_ADDR;
	c.a = (uintptr_t)t->rbuf;
	c.b = key;
	r = app_ctrl_exchange_all(a, &c, m);
	if (r < 0)
		fprintf(stderr, PROG ": exchanging addresses: %s\n", dnp_strerror(r));
	for (unsigned id = 0; r == 0 && id < a->nnodes; id++) {
		t->peer_va[id] = m[id].c.a;
		t->peer_key[id] = (uint32_t)m[id].c.b;
	}
	free(m);
	return r;
}

/* Takes one event (waiting for it) and counts a completion in *done. 0 or -errno. */
static int reap_one(struct a2a *t, unsigned *done)
{
	struct dnp_event ev;
	int r = app_next_event(&t->a, &ev, t->a.timeout_ms);

	if (r <= 0)
		return r ? r : -ETIMEDOUT;
	r = handle(t, &ev);
	if (r < 0)
		return r;
	*done += (unsigned)r;
	return 0;
}

static int put_all(struct a2a *t)
{
	struct app *a = &t->a;
	unsigned total = (a->nnodes - 1) * t->nsizes, issued = 0, done = 0, id, k;
	uint64_t cookie;
	int r;

	for (id = 0; id < a->nnodes; id++) {
		for (k = 0; k < t->nsizes && id != a->id; k++) {
			cookie = (uint64_t)id << 32 | k;
			for (;;) {
				if (issued - done < t->window) {
					r = dnp_put(a->d, t->sbuf + id * t->region + t->offs[k],
						    t->sizes[k], app_coords_of(a, id), a->peer_port,
						    t->peer_va[id] + a->id * t->region + t->offs[k],
						    t->peer_key[id], cookie,
						    DNP_NONBLOCK | DNP_TC(t->tc));
					if (r == 0)
						break;
					if (r != -EAGAIN) {
						fprintf(stderr, PROG ": put: %s\n",
							dnp_strerror(r));
						return r;
					}
				}
				r = reap_one(t, &done);
				if (r < 0)
					return r;
			}
			issued++;
		}
	}
	while (done < total) {
		r = reap_one(t, &done);
		if (r < 0)
			return r;
	}
	return 0;
}

static int finish(struct a2a *t)
{
	struct app *a = &t->a;
	unsigned expect = (a->nnodes - 1) * t->nsizes;
	uint64_t deadline;
	struct dnp_event ev;
	int r;

	r = app_barrier(a, TAG_DONE);
	if (r < 0) {
		fprintf(stderr, PROG ": DONE from every node: %s\n", dnp_strerror(r));
		return r;
	}
	/* Every sender saw its TX_DONEs, so the RX events are queued or about to be. */
	deadline = app_now_ns() + 5000000000ull;
	while (t->rx_count < expect && app_now_ns() < deadline) {
		r = app_next_event(a, &ev, 100);
		if (r < 0)
			return r;
		if (r == 1 && handle(t, &ev) < 0)
			t->errors++;
	}
	/* Anything else queued is unexpected. */
	while (app_next_event(a, &ev, 0) == 1)
		if (handle(t, &ev) != 0)
			t->errors++;
	if (t->rx_count != expect) {
		fprintf(stderr, PROG ": %u RX_PUT events, expected %u\n", t->rx_count, expect);
		t->errors++;
	}
	return 0;
}

static void verify(struct a2a *t)
{
	struct app *a = &t->a;
	unsigned id, k;
	long long off;

	for (id = 0; id < a->nnodes; id++) {
		for (k = 0; k < t->nsizes && id != a->id; k++) {
			off = app_pattern_check(t->rbuf + id * t->region + t->offs[k], t->sizes[k],
						id, a->id, t->sizes[k], 3);
			if (off < 0)
				continue;
			fprintf(stderr,
				PROG ": message of %llu bytes from node %u wrong at byte %lld\n",
				(unsigned long long)t->sizes[k], id, off);
			t->errors++;
		}
	}
}

/* The command line into t. Returns -1 to go on, else the exit status. */
static int parse_opts(int argc, char **argv, struct a2a *t)
{
	static const struct option lo[] = {
		{ "sizes", required_argument, NULL, 's' },
		{ "window", required_argument, NULL, 'W' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "detours", no_argument, NULL, 'd' },
		{ "tc", required_argument, NULL, APP_OPT_TC },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	int c, r;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":s:W:vdhV", lo, NULL)) != -1) {
		switch (c) {
		case 's':
			r = app_parse_sizes(optarg, t->sizes, MAX_SIZES);
			if (r < 0)
				return app_cli_bad_value(PROG, usage, "--sizes", optarg);
			t->nsizes = (unsigned)r;
			break;
		case 'W':
			if (app_parse_count(optarg, 0, &t->window) < 0)
				return app_cli_bad_value(PROG, usage, "--window", optarg);
			if (!t->window)
				t->window = 1;
			break;
		case 'v':
			t->verbose = true;
			break;
		case 'd':
			t->detours = true;
			break;
		case APP_OPT_TC:
			if (app_parse_count(optarg, 0, &t->tc) < 0 || t->tc > DNP_TC_MAX)
				return app_cli_bad_value(PROG, usage, "--tc", optarg);
			break;
		default: /* --help, --version, usage errors */
			return app_cli_other(PROG, usage, c, argv);
		}
	}
	if (optind != argc)
		return app_cli_usage_error(PROG, usage, "unexpected argument '%s'", argv[optind]);
	return -1;
}

int main(int argc, char **argv)
{
	static struct a2a t;
	struct app *a = &t.a;
	uint64_t t0, bytes = 0;
	unsigned id, k;
	int r;

	t.sizes[0] = 1;
	t.sizes[1] = 4096;
	t.sizes[2] = 1048577;
	t.nsizes = 3;
	t.window = 64;
	r = parse_opts(argc, argv, &t);
	if (r >= 0)
		return r;
	for (k = 0; k < t.nsizes; k++) {
		t.offs[k] = t.region;
		t.region += (t.sizes[k] + ALIGN - 1) / ALIGN * ALIGN;
	}
	if (app_open(a, PROG) < 0)
		return 1;
	if (a->nnodes < 2) {
		fprintf(stderr, PROG ": needs at least two nodes\n");
		app_close(a);
		return 2;
	}
	t.rbuf = app_alloc(a, t.region * a->nnodes);
	t.sbuf = app_alloc(a, t.region * a->nnodes);
	t.peer_va = calloc(a->nnodes, sizeof(*t.peer_va));
	t.peer_key = calloc(a->nnodes, sizeof(*t.peer_key));
	t.rx_seen = calloc((size_t)a->nnodes * t.nsizes, 1);
	if (!t.rbuf || !t.sbuf || !t.peer_va || !t.peer_key || !t.rx_seen) {
		fprintf(stderr, PROG ": out of memory\n");
		app_close(a);
		return 1;
	}
	memset(t.rbuf, 0, t.region * a->nnodes);
	for (id = 0; id < a->nnodes; id++)
		for (k = 0; k < t.nsizes && id != a->id; k++) {
			app_pattern_fill(t.sbuf + id * t.region + t.offs[k], t.sizes[k], a->id, id,
					 t.sizes[k], 3);
			bytes += t.sizes[k];
		}
	r = exchange_addresses(&t);
	t0 = app_now_ns();
	if (r == 0)
		r = put_all(&t);
	if (r == 0)
		r = finish(&t);
	if (r < 0) {
		fprintf(stderr, PROG ": node %u,%u,%u failed: %s\n", a->self.x, a->self.y,
			a->self.z, dnp_strerror(r));
		app_close(a);
		return 1;
	}
	verify(&t);
	if (t.detours)
		printf("node %u,%u,%u: %u messages came by a detour\n", a->self.x, a->self.y,
		       a->self.z, t.detoured);
	printf("node %u,%u,%u: sent %u messages (%llu bytes) in %.1f ms, received %u, %s\n",
	       a->self.x, a->self.y, a->self.z, (a->nnodes - 1) * t.nsizes,
	       (unsigned long long)bytes, (double)(app_now_ns() - t0) / 1e6, t.rx_count,
	       t.errors ? "ERRORS" : "all bytes verified");
	dnp_unregister(a->d, t.rbuf);
	app_close(a);
	return t.errors ? 1 : 0;
}
