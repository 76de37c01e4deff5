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
 * --verify (test mode) checks every message: message j of a size has its own
 * bytes and goes to slot j % S of a receiver buffer of S slots; the receiver
 * checks each one's address, length and bytes when its RX_PUT arrives, and
 * returns credits (a control SEND with the count checked so far) so that the
 * transmitter never writes a slot before it was checked. The transmitter
 * checks its completions and the credits. Figures are then not benchmarks.
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
#define TAG_CREDIT 3
#define VERIFY_BYTES (8ull << 20) /* --verify: receiver slots of a size fill at most this */

struct bw_opts {
	struct app_bench_opts b;
	unsigned window;
};

static void usage(FILE *f)
{
	fprintf(f, "usage: " PROG " [--peer X,Y,Z] [--sizes LIST] [--iters N] [--window W]\n"
		   "              [--warmup N] [--csv] [--verify]\n"
		   "  one-way PUT bandwidth from node (0,0,0) to its +X neighbour (or --peer).\n"
		   "  --verify (test mode): every message has its own bytes and its own slot\n"
		   "  at the receiver, which checks each one and returns credits.\n");
	app_bench_usage_common(f);
}

static int bw_opt(void *ctx, int c, const char *arg)
{
	struct bw_opts *o = ctx;

	if (c != 'W')
		return -EINVAL;
	return app_parse_count(arg, 1, &o->window);
}

/* Returns -1 to go on, else the exit status. */
static int parse_opts(int argc, char **argv, struct bw_opts *o)
{
	static const struct app_bench_cli cli = {
		PROG, usage, { "window", required_argument, NULL, 'W' }, "W:", bw_opt
	};

	memset(o, 0, sizeof(*o));
	app_bench_defaults(&o->b, 8);
	o->window = 32;
	return app_bench_parse(argc, argv, &cli, &o->b, o);
}

static unsigned iters_for(const struct bw_opts *o, uint64_t size)
{
	return app_bench_iters(&o->b, size, 128ull << 20, 32, 20000);
}

/* --verify: slots of this size in the receiver buffer (at most the window). */
static unsigned verify_slots(const struct bw_opts *o, uint64_t size)
{
	uint64_t n = VERIFY_BYTES / (size ? size : 1);

	if (n < 1)
		n = 1;
	return n < o->window ? (unsigned)n : o->window;
}

/* Bytes of the data buffer on each side: the largest message, or all slots. */
static uint64_t buf_bytes(const struct bw_opts *o)
{
	uint64_t m = app_bench_max_size(&o->b);

	for (unsigned k = 0; o->b.verify && k < o->b.nsizes; k++)
		if (verify_slots(o, o->b.sizes[k]) * o->b.sizes[k] > m)
			m = verify_slots(o, o->b.sizes[k]) * o->b.sizes[k];
	return m;
}

/* The salt of message j of size index k under --verify. */
static uint32_t msg_salt(unsigned k, uint32_t j)
{
	return ((uint32_t)(k + 1) << 24) ^ j;
}

/* --verify state of one size, on the transmitter. */
struct bw_tx_verify {
	unsigned k, slots;
	uint8_t *sbuf;    /* slots of source data */
	uint32_t next;    /* index of the next message */
	uint32_t checked; /* messages the receiver has checked (its last credit) */
};

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

/* A credit: checks it and takes it. -EIO if it is wrong. */
static int take_credit(const struct app_msg *m, struct bw_tx_verify *v)
{
	if (m->c.seq < v->k)
		return 0; /* the last credit of an earlier size, come after its TX_DONEs */
	if (m->c.seq != v->k || m->c.a < v->checked || m->c.a > v->next) {
		fprintf(stderr,
			PROG ": bad credit (size #%u, %llu checked) at size #%u, "
			     "%u checked, %u sent\n",
			m->c.seq, (unsigned long long)m->c.a, v->k, v->checked, v->next);
		return -EIO;
	}
	v->checked = (uint32_t)m->c.a;
	return 0;
}

/*
 * --verify: takes the receiver's credits that arrived; with wait, first waits
 * for one (credits are control messages, which next() does not return).
 */
static int take_credits(struct app *a, unsigned peer_id, struct bw_tx_verify *v, bool wait)
{
	struct app_msg m;
	int r;

	if (wait) {
		r = app_ctrl_recv(a, peer_id, TAG_CREDIT, &m);
		if (r == 0)
			r = take_credit(&m, v);
		if (r < 0) {
			fprintf(stderr, PROG ": waiting for a credit: %s\n", dnp_strerror(r));
			return r;
		}
	}
	while (app_ctrl_recv_nowait(a, peer_id, TAG_CREDIT, &m) == 0) {
		r = take_credit(&m, v);
		if (r < 0)
			return r;
	}
	return 0;
}

/*
 * Issues n PUTs of size bytes with at most 'window' outstanding; waits for
 * all TX_DONEs. With v (--verify), message j carries its own bytes into slot
 * j % slots, and is issued only once the receiver has checked message
 * j - slots, the last one that used the slot.
 */
static int put_burst(struct app *a, const struct bw_opts *o, const void *src, uint64_t size,
		     unsigned n, struct dnp_coords peer, uint64_t rva, uint32_t rkey,
		     uint64_t *cookie, struct bw_tx_verify *v)
{
	unsigned issued = 0, done = 0, window = v ? v->slots : o->window;
	unsigned peer_id = app_id_of(a, peer);
	struct dnp_event ev;
	uint64_t off = 0;
	int r;

	while (done < n) {
		bool starved = v && issued < n && v->next >= v->checked + v->slots;

		if (v) {
			/* nothing else to wait for: the next event is a credit */
			r = take_credits(a, peer_id, v, starved && done == issued);
			if (r < 0)
				return r;
			starved = issued < n && v->next >= v->checked + v->slots;
		}
		if (issued < n && issued - done < window && !starved) {
			if (v) {
				off = (uint64_t)(v->next % v->slots) * size;
				app_pattern_fill(v->sbuf + off, size, a->id, peer_id, size,
						 msg_salt(v->k, v->next));
				src = v->sbuf + off;
			}
			r = dnp_put(a->d, src, size, peer, a->peer_port, rva + off, rkey, ++*cookie,
				    DNP_TC(o->b.tc));
			if (r < 0) {
				fprintf(stderr, PROG ": put: %s\n", dnp_strerror(r));
				return r;
			}
			issued++;
			if (v)
				v->next++;
			continue;
		}
		r = next(a, &ev);
		if (r < 0)
			return r;
		if (r == DNP_EV_TX_DONE && v && ev.len != size) {
			fprintf(stderr, PROG ": TX_DONE of %u bytes for a PUT of %llu\n", ev.len,
				(unsigned long long)size);
			return -EIO;
		}
		if (r == DNP_EV_TX_DONE)
			done++;
	}
	return 0;
}

static int run_tx(struct app *a, const struct bw_opts *o, struct dnp_coords peer)
{
	uint64_t msz = buf_bytes(o), cookie = 0, t0, t1, rva;
	unsigned peer_id = app_id_of(a, peer), k, n;
	uint8_t *sbuf = app_alloc(a, msz);
	struct bw_tx_verify v, *vp = o->b.verify ? &v : NULL;
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
		       a->self.y, a->self.z, peer.x, peer.y, peer.z, app_distance(a, a->self, peer),
		       o->window);
		printf("%10s %10s %12s %12s\n", "bytes", "iterations", "MB/s", "msg/s");
	}
	for (k = 0; k < o->b.nsizes; k++) {
		n = iters_for(o, o->b.sizes[k]);
		v = (struct bw_tx_verify){ .k = k,
					   .slots = verify_slots(o, o->b.sizes[k]),
					   .sbuf = sbuf };
		r = put_burst(a, o, sbuf, o->b.sizes[k], o->b.warmup, peer, rva, rkey, &cookie, vp);
		if (r < 0)
			return r;
		t0 = app_now_ns();
		r = put_burst(a, o, sbuf, o->b.sizes[k], n, peer, rva, rkey, &cookie, vp);
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

/*
 * --verify, receiver side of one size: n messages, each checked when its
 * RX_PUT arrives (slot, length, bytes); credits go back every half of the
 * slots and at the end. Returns 0, -EIO for a wrong message (printed), or
 * -errno.
 */
static int rx_verify(struct app *a, const struct bw_opts *o, unsigned peer_id, unsigned k,
		     unsigned n, const uint8_t *rbuf)
{
	uint64_t size = o->b.sizes[k];
	unsigned slots = verify_slots(o, size), step = slots > 1 ? slots / 2 : 1;
	uint32_t checked = 0, credited = 0;
	bool *arrived = calloc(slots, sizeof(*arrived));
	struct dnp_event ev;
	struct app_ctrl c;
	int r = 0;

	if (!arrived)
		return -ENOMEM;
	while (checked < n) {
		uint64_t off, slot;
		uint32_t j;
		long long bad;

		r = next(a, &ev);
		if (r < 0)
			break;
		r = 0;
		if (ev.type != DNP_EV_RX_PUT)
			continue;
		off = ev.va - (uintptr_t)rbuf;
		slot = off / (size ? size : 1);
		if (ev.va < (uintptr_t)rbuf || ev.len != size || slot >= slots ||
		    off != slot * size) {
			fprintf(stderr,
				PROG ": RX_PUT at %#llx of %u bytes is no slot of size %llu\n",
				(unsigned long long)ev.va, ev.len, (unsigned long long)size);
			r = -EIO;
			break;
		}
		/* the one message in flight that uses this slot (credits allow no other) */
		j = checked + (uint32_t)((slot + slots - checked % slots) % slots);
		if (j >= n || arrived[slot]) {
			fprintf(stderr, PROG ": unexpected message in slot %llu of size %llu\n",
				(unsigned long long)slot, (unsigned long long)size);
			r = -EIO;
			break;
		}
		bad = app_pattern_check(rbuf + off, size, peer_id, a->id, size, msg_salt(k, j));
		if (bad >= 0) {
			fprintf(stderr, PROG ": message %u of %llu bytes wrong at byte %lld\n", j,
				(unsigned long long)size, bad);
			r = -EIO;
			break;
		}
		arrived[slot] = true;
		while (checked < n && arrived[checked % slots])
			arrived[checked++ % slots] = false;
		if (checked - credited >= step || checked == n) {
			memset(&c, 0, sizeof(c));
			c.tag = TAG_CREDIT;
			c.seq = k;
			c.a = checked;
			r = app_ctrl_send(a, peer_id, &c);
			if (r < 0) {
				fprintf(stderr, PROG ": credit: %s\n", dnp_strerror(r));
				break;
			}
			credited = checked;
		}
	}
	free(arrived);
	return r;
}

static int run_rx(struct app *a, const struct bw_opts *o, struct dnp_coords peer)
{
	uint64_t msz = buf_bytes(o);
	unsigned peer_id = app_id_of(a, peer), k, n, got;
	uint8_t *rbuf = app_alloc(a, msz);
	struct dnp_event ev;
	struct app_ctrl c;
	bool bad;
	int r;

	if (!rbuf)
		return -ENOMEM;
	r = app_offer_buffer(a, peer_id, TAG_ADDR, rbuf, msz, PROG);
	if (r < 0)
		goto out;
	for (k = 0; k < o->b.nsizes; k++) {
		n = iters_for(o, o->b.sizes[k]) + o->b.warmup;
		if (o->b.verify) {
			r = rx_verify(a, o, peer_id, k, n, rbuf);
			if (r < 0 && r != -EIO)
				goto out;
			bad = r == -EIO;
		} else {
			for (got = 0; got < n;) {
				r = next(a, &ev);
				if (r < 0)
					goto out;
				if (r == DNP_EV_RX_PUT)
					got++;
			}
			/* the last message must hold the transmitter's pattern */
			bad = app_pattern_check(rbuf, o->b.sizes[k], peer_id, a->id, msz, 2) >= 0;
		}
		memset(&c, 0, sizeof(c));
		c.tag = TAG_ACK;
		c.seq = k;
		c.a = bad; /* 1: wrong data */
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

static int bw_run(struct app *a, void *ctx, struct dnp_coords peer, bool is_tx)
{
	return is_tx ? run_tx(a, ctx, peer) : run_rx(a, ctx, peer);
}

int main(int argc, char **argv)
{
	struct bw_opts o;
	struct app a;
	int r;

	r = parse_opts(argc, argv, &o);
	if (r >= 0)
		return r;
	if (app_open(&a, PROG) < 0)
		return 1;
	return app_run_pair(&a, &o.b, PROG, NULL, bw_run, &o);
}
