/* SPDX-License-Identifier: MIT */
/*
 * dnp_pingpong — PUT latency between two nodes (half round trip), or the
 * local-loop latency of one node (--loopback).
 *
 * Method (EURETILE report, software test suite: "latency, estimated as half
 * the round-trip time in a ping-pong test"): both nodes register a PUT-target
 * buffer and exchange address and key with a SEND; node A PUTs into B, B
 * waits for the RX_PUT event and PUTs back, A waits for the RX_PUT event.
 * --loopback follows the APEnet v5 paper (results): a PUT to the node itself,
 * timed until both the "sent" (TX_DONE) and the "received" (RX_PUT) events
 * have arrived.
 *
 * Run under dnp-run: A is node (0,0,0), B its +X neighbour or --peer; the
 * instances on the other nodes exit 0 at once.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app_cli.h"
#include "app_common.h"

#define PROG "dnp_pingpong"
#define TAG_ADDR 1
#define TAG_DONE 2

struct pp_opts {
	struct app_bench_opts b;
	bool loopback;
	bool inl; /* --inline: DNP_INLINE for sizes up to DNP_INLINE_MAX */
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: " PROG " [--peer X,Y,Z] [--loopback] [--sizes LIST | -a] [--iters N]\n"
		"                    [--warmup N] [--csv] [--verify] [--inline]\n"
		"  PUT ping-pong latency (half round trip) between node (0,0,0) and its +X\n"
		"  neighbour (or --peer); --loopback: PUT-to-self completion time on node 0.\n"
		"  Columns as perftest's: min, max, typical (median), average, stdev, 99%%,\n"
		"  99.9%% (microseconds). -a: every power of two from 2 bytes to 8 MiB.\n"
		"  --verify (test mode): every message has its own bytes, and both sides\n"
		"  check each one they receive (its address, length and every byte).\n"
		"  --inline: PUTs of up to %u bytes carry their payload in the command\n"
		"  (DNP_INLINE); larger sizes are sent as usual.\n",
		DNP_INLINE_MAX);
	app_bench_usage_common(f);
}

static int pp_opt(void *ctx, int c, const char *arg)
{
	struct pp_opts *o = ctx;

	(void)arg;
	if (c == 'a') { /* perftest's -a: every power of two from 2 bytes to 8 MiB */
		o->b.nsizes = 0;
		for (uint64_t s = 2; s <= (8u << 20); s *= 2)
			o->b.sizes[o->b.nsizes++] = s;
		return 0;
	}
	if (c != 'l')
		return -EINVAL;
	o->loopback = true;
	return 0;
}

/* Returns -1 to go on, else the exit status. */
static int parse_opts(int argc, char **argv, struct pp_opts *o)
{
	static const struct app_bench_cli cli = {
		PROG, usage, { "loopback", no_argument, NULL, 'l' }, "la", pp_opt
	};

	memset(o, 0, sizeof(*o));
	app_bench_defaults(&o->b, 200); /* lets the scheduler settle the four processes first */
	/* --inline is taken out here: the shared parser has one own-option slot (--loopback) */
	int n = 0;
	for (int i = 0; i < argc; i++) {
		if (i && !strcmp(argv[i], "--inline"))
			o->inl = true;
		else
			argv[n++] = argv[i];
	}
	argv[n] = NULL;
	return app_bench_parse(n, argv, &cli, &o->b, o);
}

/* DNP_INLINE for a size that fits the command, under --inline. */
static unsigned put_flags(const struct pp_opts *o, uint64_t size)
{
	return (o->inl && size <= DNP_INLINE_MAX ? DNP_INLINE : 0) | DNP_TC(o->b.tc);
}

static unsigned iters_for(const struct pp_opts *o, uint64_t size)
{
	return app_bench_iters(&o->b, size, 64ull << 20, 20, 1000);
}

/* The columns of perftest's latency tests (t_typical = median), half round trips. */
static void print_header(const struct pp_opts *o)
{
	if (o->b.csv)
		printf("bytes,iterations,t_min_us,t_median_us,t_p99_us,t_mean_us,t_max_us,"
		       "t_stdev_us,t_p99_9_us\n");
	else
		printf("%10s %10s %10s %10s %12s %10s %10s %10s %10s\n", "#bytes", "#iterations",
		       "t_min[us]", "t_max[us]", "t_typical[us]", "t_avg[us]", "t_stdev[us]",
		       "99%[us]", "99.9%[us]");
}

static void print_row(const struct pp_opts *o, uint64_t size, unsigned iters, double *v)
{
	struct app_stats st;

	app_stats_compute(v, iters, &st);
	if (o->b.csv)
		printf("%llu,%u,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f\n", (unsigned long long)size,
		       iters, st.min, st.median, st.p99, st.mean, st.max, st.stdev, st.p999);
	else
		printf("%10llu %10u %10.3f %10.3f %12.3f %10.3f %10.3f %10.3f %10.3f\n",
		       (unsigned long long)size, iters, st.min, st.max, st.median, st.mean,
		       st.stdev, st.p99, st.p999);
	fflush(stdout);
}

/*
 * Waits for one event of type 'want' (TX_DONE completions met on the way are
 * counted in *done). Any ERROR fails the run.
 */
static int wait_for(struct app *a, unsigned want, uint64_t *done, struct dnp_event *out)
{
	struct dnp_event ev;
	int r;

	for (;;) {
		r = app_next_event(a, &ev, a->timeout_ms);
		if (r < 0) {
			fprintf(stderr, PROG ": wait_event: %s\n", dnp_strerror(r));
			return r;
		}
		if (r == 0) {
			fprintf(stderr, PROG ": timed out waiting for %s\n", app_ev_name(want));
			return -ETIMEDOUT;
		}
		if (ev.type == DNP_EV_ERROR) {
			app_print_event(PROG, "unexpected", &ev);
			return ev.status ? ev.status : -EIO;
		}
		if (ev.type == DNP_EV_TX_DONE)
			(*done)++;
		if (ev.type == want) {
			if (out)
				*out = ev;
			return 0;
		}
	}
}

/* The salt of message i of size index k under --verify: every message has its own bytes. */
static uint32_t msg_salt(unsigned k, unsigned i)
{
	return ((uint32_t)(k + 1) << 24) ^ i;
}

/*
 * --verify: the RX_PUT event names our buffer and the size, and the buffer
 * holds exactly message (src -> dst, size, salt). Prints what is wrong.
 */
static int check_rx(const struct dnp_event *ev, const uint8_t *rbuf, uint64_t size, uint32_t src,
		    uint32_t dst, uint32_t salt)
{
	long long off;

	if (ev->va != (uintptr_t)rbuf || ev->len != size) {
		fprintf(stderr, PROG ": RX_PUT at %#llx of %u bytes, expected %p, %llu bytes\n",
			(unsigned long long)ev->va, ev->len, (const void *)rbuf,
			(unsigned long long)size);
		return -EIO;
	}
	off = app_pattern_check(rbuf, size, src, dst, size, salt);
	if (off >= 0) {
		fprintf(stderr,
			PROG ": message %#x of %llu bytes from node %u wrong at byte %lld\n", salt,
			(unsigned long long)size, src, off);
		return -EIO;
	}
	return 0;
}

static int drain_tx(struct app *a, uint64_t *done, uint64_t issued)
{
	int r;

	while (*done < issued) {
		r = wait_for(a, DNP_EV_TX_DONE, done, NULL);
		if (r < 0)
			return r;
	}
	return 0;
}

static int run_loopback(struct app *a, const struct pp_opts *o)
{
	uint64_t msz = app_bench_max_size(&o->b), done = 0, t0, issued = 0;
	uint8_t *sbuf = app_alloc(a, msz), *rbuf = app_alloc(a, msz);
	double *v = NULL;
	uint32_t key;
	unsigned i, k, n;
	bool got_tx, got_rx;
	struct dnp_event ev, rx = { 0 };
	int r;

	if (!sbuf || !rbuf)
		return -ENOMEM;
	app_pattern_fill(sbuf, msz, a->id, a->id, msz, 7);
	r = dnp_register(a->d, rbuf, msz, DNP_BUF_PUT_TARGET, &key);
	if (r < 0) {
		fprintf(stderr, PROG ": register: %s\n", dnp_strerror(r));
		return r;
	}
	if (!o->b.csv)
		printf("# loopback PUT on node %u,%u,%u: time until TX_DONE and RX_PUT\n",
		       a->self.x, a->self.y, a->self.z);
	print_header(o);
	for (k = 0; k < o->b.nsizes; k++) {
		n = iters_for(o, o->b.sizes[k]);
		free(v);
		v = calloc(n, sizeof(*v));
		if (!v)
			return -ENOMEM;
		for (i = 0; i < o->b.warmup + n; i++) {
			got_tx = got_rx = false;
			if (o->b.verify)
				app_pattern_fill(sbuf, o->b.sizes[k], a->id, a->id, o->b.sizes[k],
						 msg_salt(k, i));
			t0 = app_now_ns();
			r = dnp_put(a->d, sbuf, o->b.sizes[k], a->self, a->port, (uintptr_t)rbuf,
				    key, ++issued, put_flags(o, o->b.sizes[k]));
			if (r < 0) {
				fprintf(stderr, PROG ": put: %s\n", dnp_strerror(r));
				goto out;
			}
			while (!got_tx || !got_rx) {
				r = app_next_event(a, &ev, a->timeout_ms);
				if (r <= 0) {
					fprintf(stderr, PROG ": loopback: %s\n",
						r ? dnp_strerror(r) : "timed out");
					r = r ? r : -ETIMEDOUT;
					goto out;
				}
				if (ev.type == DNP_EV_TX_DONE && ev.cookie == issued)
					got_tx = true;
				else if (ev.type == DNP_EV_RX_PUT) {
					got_rx = true;
					rx = ev;
				} else if (ev.type == DNP_EV_ERROR) {
					app_print_event(PROG, "loopback", &ev);
					r = -EIO;
					goto out;
				}
			}
			if (i >= o->b.warmup)
				v[i - o->b.warmup] = (double)(app_now_ns() - t0) / 1000.0;
			if (o->b.verify) {
				r = check_rx(&rx, rbuf, o->b.sizes[k], a->id, a->id,
					     msg_salt(k, i));
				if (r < 0)
					goto out;
			}
		}
		if (!o->b.verify &&
		    app_pattern_check(rbuf, o->b.sizes[k], a->id, a->id, msz, 7) >= 0) {
			fprintf(stderr, PROG ": loopback data of %llu bytes corrupted\n",
				(unsigned long long)o->b.sizes[k]);
			r = -EIO;
			goto out;
		}
		print_row(o, o->b.sizes[k], n, v);
	}
	r = 0;
out:
	(void)done;
	free(v);
	dnp_unregister(a->d, rbuf);
	return r;
}

static int run_pingpong(struct app *a, const struct pp_opts *o, struct dnp_coords peer, bool is_a)
{
	uint64_t msz = app_bench_max_size(&o->b), done = 0, issued = 0, t0, rva;
	uint8_t *sbuf = app_alloc(a, msz), *rbuf = app_alloc(a, msz);
	unsigned peer_id = app_id_of(a, peer), i, k, n;
	struct app_ctrl c;
	struct app_msg m;
	struct dnp_event ev;
	double *v = NULL;
	uint32_t rkey;
	int r;

	if (!sbuf || !rbuf)
		return -ENOMEM;
	app_pattern_fill(sbuf, msz, a->id, peer_id, msz, 1);
	r = app_offer_buffer(a, peer_id, TAG_ADDR, rbuf, msz, PROG);
	if (r == 0)
		r = app_ctrl_recv(a, peer_id, TAG_ADDR, &m);
	if (r < 0) {
		fprintf(stderr, PROG ": handshake with %u,%u,%u: %s\n", peer.x, peer.y, peer.z,
			dnp_strerror(r));
		goto out;
	}
	rva = m.c.a;
	rkey = (uint32_t)m.c.b;
	if (is_a) {
		if (!o->b.csv)
			printf("# PUT ping-pong %u,%u,%u <-> %u,%u,%u (%u hops): half round trip\n",
			       a->self.x, a->self.y, a->self.z, peer.x, peer.y, peer.z,
			       app_distance(a, a->self, peer));
		print_header(o);
	}
	for (k = 0; k < o->b.nsizes; k++) {
		n = iters_for(o, o->b.sizes[k]);
		free(v);
		v = calloc(n, sizeof(*v));
		if (!v) {
			r = -ENOMEM;
			goto out;
		}
		for (i = 0; i < o->b.warmup + n; i++) {
			uint64_t size = o->b.sizes[k];

			if (o->b.verify && is_a)
				app_pattern_fill(sbuf, size, a->id, peer_id, size, msg_salt(k, i));
			t0 = app_now_ns();
			if (!is_a) {
				r = wait_for(a, DNP_EV_RX_PUT, &done, &ev);
				if (r == 0 && o->b.verify)
					r = check_rx(&ev, rbuf, size, peer_id, a->id,
						     msg_salt(k, i));
				if (r < 0)
					goto out;
				if (o->b.verify)
					app_pattern_fill(sbuf, size, a->id, peer_id, size,
							 msg_salt(k, i));
			}
			r = dnp_put(a->d, sbuf, o->b.sizes[k], peer, a->peer_port, rva, rkey,
				    ++issued, put_flags(o, size));
			if (r < 0) {
				fprintf(stderr, PROG ": put: %s\n", dnp_strerror(r));
				goto out;
			}
			if (is_a) {
				r = wait_for(a, DNP_EV_RX_PUT, &done, &ev);
				if (r < 0)
					goto out;
				if (i >= o->b.warmup)
					v[i - o->b.warmup] = (double)(app_now_ns() - t0) / 2000.0;
				if (o->b.verify) {
					r = check_rx(&ev, rbuf, size, peer_id, a->id,
						     msg_salt(k, i));
					if (r < 0)
						goto out;
				}
			}
		}
		if (is_a) {
			if (!o->b.verify &&
			    app_pattern_check(rbuf, o->b.sizes[k], peer_id, a->id, msz, 1) >= 0) {
				fprintf(stderr, PROG ": data of %llu bytes corrupted\n",
					(unsigned long long)o->b.sizes[k]);
				r = -EIO;
				goto out;
			}
			print_row(o, o->b.sizes[k], n, v);
		}
	}
	r = drain_tx(a, &done, issued);
	if (r < 0)
		goto out;
	/* B reports completion so that A does not close its port under B's last PUT. */
	if (is_a) {
		r = app_ctrl_recv(a, peer_id, TAG_DONE, &m);
	} else {
		memset(&c, 0, sizeof(c));
		c.tag = TAG_DONE;
		r = app_ctrl_send(a, peer_id, &c);
	}
	if (r < 0)
		fprintf(stderr, PROG ": final handshake: %s\n", dnp_strerror(r));
out:
	free(v);
	dnp_unregister(a->d, rbuf);
	return r;
}

static int pp_run(struct app *a, void *ctx, struct dnp_coords peer, bool is_a)
{
	return run_pingpong(a, ctx, peer, is_a);
}

int main(int argc, char **argv)
{
	struct dnp_coords origin = { 0, 0, 0 };
	struct pp_opts o;
	struct app a;
	int r;

	r = parse_opts(argc, argv, &o);
	if (r >= 0)
		return r;
	if (app_open(&a, PROG) < 0)
		return 1;
	if (o.loopback) {
		r = app_coords_eq(a.self, origin) ? run_loopback(&a, &o) : 0;
		app_close(&a);
		return r < 0 ? 1 : 0;
	}
	return app_run_pair(&a, &o.b, PROG, " (use --loopback for one node)", pp_run, &o);
}
