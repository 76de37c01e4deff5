/* SPDX-License-Identifier: MIT */
/*
 * dnp_bw — one-way PUT bandwidth between two nodes.
 *
 * Method (EURETILE report, software test suite: the two-node bandwidth test):
 * the receiver registers a buffer and SENDs its address and key to the
 * transmitter; the transmitter writes that buffer N times with PUT, keeping
 * at most --window PUTs outstanding by reaping TX_DONE events; the receiver
 * waits for N RX_PUT events and acknowledges with a SEND. Time runs on the
 * transmitter from the first PUT to the acknowledgement.
 *
 * Run under dnp-run: the transmitter is node (0,0,0), the receiver its +X
 * neighbour or --peer; the instances on the other nodes exit 0 at once.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app_common.h"

#define PROG "dnp_bw"
#define TAG_ADDR 1
#define TAG_ACK 2

struct bw_opts {
	struct app_bench_opts b;
	unsigned window;
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: " PROG " [--peer X,Y,Z] [--sizes LIST] [--iters N] [--window W]\n"
		"              [--warmup N] [--csv]\n"
		"  one-way PUT bandwidth from node (0,0,0) to its +X neighbour (or --peer).\n"
		"  LIST: comma-separated sizes, K/M suffixes (default 8,32,...,2M,4M).\n"
		"  Run it under dnp-run; instances on other nodes exit 0.\n");
}

static int parse_opts(int argc, char **argv, struct bw_opts *o)
{
	static const struct option lo[] = {
		{ "peer", required_argument, NULL, 'p' },
		{ "sizes", required_argument, NULL, 's' },
		{ "iters", required_argument, NULL, 'n' },
		{ "window", required_argument, NULL, 'W' },
		{ "warmup", required_argument, NULL, 'w' },
		{ "csv", no_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c, r;

	memset(o, 0, sizeof(*o));
	app_bench_defaults(&o->b, 8);
	o->window = 32;
	while ((c = getopt_long(argc, argv, "p:s:n:W:w:ch", lo, NULL)) != -1) {
		r = app_bench_opt(&o->b, c, optarg);
		if (r < 0)
			return r;
		if (r)
			continue;
		switch (c) {
		case 'W':
			o->window = (unsigned)strtoul(optarg, NULL, 0);
			if (!o->window)
				return -EINVAL;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			return -EINVAL;
		}
	}
	return optind == argc ? 0 : -EINVAL;
}

static unsigned iters_for(const struct bw_opts *o, uint64_t size)
{
	uint64_t n;

	if (o->b.iters)
		return o->b.iters;
	n = (128ull << 20) / (size ? size : 1);
	return n > 20000 ? 20000 : n < 32 ? 32 : (unsigned)n;
}

/* One event; ERROR fails the run. Returns the event type or -errno. */
static int next(struct app *a, struct dnp_event *ev)
{
	int r = app_next_event(a, ev, a->timeout_ms);

	if (r < 0) {
		fprintf(stderr, PROG ": wait_event: %s\n", dnp_strerror(r));
		return r;
	}
	if (r == 0) {
		fprintf(stderr, PROG ": timed out waiting for an event\n");
		return -ETIMEDOUT;
	}
	if (ev->type == DNP_EV_ERROR) {
		app_print_event(PROG, "unexpected", ev);
		return ev->status ? ev->status : -EIO;
	}
	return ev->type;
}

/* Issues n PUTs of size bytes with at most 'window' outstanding; waits for all TX_DONEs. */
static int put_burst(struct app *a, const struct bw_opts *o, const void *src, uint64_t size,
		     unsigned n, struct dnp_coords peer, uint64_t rva, uint32_t rkey, uint64_t *cookie)
{
	unsigned issued = 0, done = 0;
	struct dnp_event ev;
	int r;

	while (done < n) {
		if (issued < n && issued - done < o->window) {
			r = dnp_put(a->d, src, size, peer, a->peer_port, rva, rkey, ++*cookie, 0);
			if (r < 0) {
				fprintf(stderr, PROG ": put: %s\n", dnp_strerror(r));
				return r;
			}
			issued++;
			continue;
		}
		r = next(a, &ev);
		if (r < 0)
			return r;
		if (r == DNP_EV_TX_DONE)
			done++;
	}
	return 0;
}

static int run_tx(struct app *a, const struct bw_opts *o, struct dnp_coords peer)
{
	uint64_t msz = app_bench_max_size(&o->b), cookie = 0, t0, t1, rva;
	unsigned peer_id = app_id_of(a, peer), k, n;
	uint8_t *sbuf = app_alloc(a, msz);
	struct app_msg m;
	uint32_t rkey;
	double secs;
	int r;

	if (!sbuf)
		return -ENOMEM;
	app_pattern_fill(sbuf, msz, a->id, peer_id, msz, 2);
	r = app_ctrl_recv(a, peer_id, TAG_ADDR, &m);
	if (r < 0) {
		fprintf(stderr, PROG ": no buffer address from the receiver: %s\n",
			dnp_strerror(r));
		return r;
	}
	rva = m.c.a;
	rkey = (uint32_t)m.c.b;
	if (o->b.csv) {
		printf("bytes,iterations,MBps,msgps\n");
	} else {
		printf("# PUT bandwidth %u,%u,%u -> %u,%u,%u (%u hops), window %u\n", a->self.x,
		       a->self.y, a->self.z, peer.x, peer.y, peer.z,
		       app_distance(a, a->self, peer), o->window);
		printf("%10s %10s %12s %12s\n", "bytes", "iterations", "MB/s", "msg/s");
	}
	for (k = 0; k < o->b.nsizes; k++) {
		n = iters_for(o, o->b.sizes[k]);
		r = put_burst(a, o, sbuf, o->b.sizes[k], o->b.warmup, peer, rva, rkey, &cookie);
		if (r < 0)
			return r;
		t0 = app_now_ns();
		r = put_burst(a, o, sbuf, o->b.sizes[k], n, peer, rva, rkey, &cookie);
		if (r == 0)
			r = app_ctrl_recv(a, peer_id, TAG_ACK, &m);
		if (r < 0) {
			fprintf(stderr, PROG ": size %llu: %s\n", (unsigned long long)o->b.sizes[k],
				dnp_strerror(r));
			return r;
		}
		t1 = app_now_ns();
		if (m.c.a != 0) {
			fprintf(stderr, PROG ": receiver found corrupted data at size %llu\n",
				(unsigned long long)o->b.sizes[k]);
			return -EIO;
		}
		secs = (double)(t1 - t0) / 1e9;
		if (o->b.csv)
			printf("%llu,%u,%.2f,%.0f\n", (unsigned long long)o->b.sizes[k], n,
			       (double)o->b.sizes[k] * n / secs / 1e6, n / secs);
		else
			printf("%10llu %10u %12.2f %12.0f\n", (unsigned long long)o->b.sizes[k], n,
			       (double)o->b.sizes[k] * n / secs / 1e6, n / secs);
		fflush(stdout);
	}
	return 0;
}

static int run_rx(struct app *a, const struct bw_opts *o, struct dnp_coords peer)
{
	uint64_t msz = app_bench_max_size(&o->b);
	unsigned peer_id = app_id_of(a, peer), k, n, got;
	uint8_t *rbuf = app_alloc(a, msz);
	struct dnp_event ev;
	struct app_ctrl c;
	uint32_t key;
	int r;

	if (!rbuf)
		return -ENOMEM;
	r = dnp_register(a->d, rbuf, msz, DNP_BUF_PUT_TARGET, &key);
	if (r < 0) {
		fprintf(stderr, PROG ": register: %s\n", dnp_strerror(r));
		return r;
	}
	memset(&c, 0, sizeof(c));
	c.tag = TAG_ADDR;
	c.a = (uintptr_t)rbuf;
	c.b = key;
	r = app_ctrl_send(a, peer_id, &c);
	if (r < 0) {
		fprintf(stderr, PROG ": sending the buffer address: %s\n", dnp_strerror(r));
		goto out;
	}
	for (k = 0; k < o->b.nsizes; k++) {
		n = iters_for(o, o->b.sizes[k]) + o->b.warmup;
		for (got = 0; got < n;) {
			r = next(a, &ev);
			if (r < 0)
				goto out;
			if (r == DNP_EV_RX_PUT)
				got++;
		}
		memset(&c, 0, sizeof(c));
		c.tag = TAG_ACK;
		c.seq = k;
		/* a = 1 when the last message does not hold the transmitter's pattern */
		c.a = app_pattern_check(rbuf, o->b.sizes[k], peer_id, a->id, msz, 2) >= 0;
		r = app_ctrl_send(a, peer_id, &c);
		if (r < 0) {
			fprintf(stderr, PROG ": ack: %s\n", dnp_strerror(r));
			goto out;
		}
		if (c.a) {
			r = -EIO;
			goto out;
		}
	}
out:
	dnp_unregister(a->d, rbuf);
	return r;
}

int main(int argc, char **argv)
{
	struct dnp_coords peer, origin = { 0, 0, 0 };
	struct bw_opts o;
	struct app a;
	bool is_tx;
	int r;

	if (parse_opts(argc, argv, &o) < 0) {
		usage(stderr);
		return 2;
	}
	if (app_open(&a, PROG) < 0)
		return 1;
	is_tx = app_coords_eq(a.self, origin);
	if (o.b.have_peer) {
		peer = o.b.peer;
	} else {
		peer.x = 1 % a.dims.x;
		peer.y = 0;
		peer.z = 0;
	}
	if (!is_tx && !app_coords_eq(a.self, peer)) {
		app_close(&a); /* not part of this measurement */
		return 0;
	}
	if (peer.x >= a.dims.x || peer.y >= a.dims.y || peer.z >= a.dims.z ||
	    app_coords_eq(peer, origin)) {
		fprintf(stderr, PROG ": peer %u,%u,%u is not another node of the %ux%ux%u torus\n",
			peer.x, peer.y, peer.z, a.dims.x, a.dims.y, a.dims.z);
		app_close(&a);
		return 2;
	}
	r = is_tx ? run_tx(&a, &o, peer) : run_rx(&a, &o, origin);
	app_close(&a);
	return r < 0 ? 1 : 0;
}
