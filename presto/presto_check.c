/* SPDX-License-Identifier: MIT */
/*
 * presto_check — functional checks of Presto, one mode per integration test.
 * Run on every node of a torus by dnp-run; every rank prints "PASS MODE" or
 * "FAIL MODE" and exits 0 only if everything it checked was right.
 *
 *   basic        send/recv, isend/irecv/test, any-source, any-tag, truncation,
 *                zero bytes, eager and rendez-vous sizes, buffers sent twice
 *   random N     N messages in all (default 10000) of random sizes (0..64 KiB,
 *                a few up to 300 KiB) to random ranks with random tags; phase 1
 *                receives with ANY_SOURCE/ANY_TAG and checks per-sender order,
 *                phase 2 posts directed (source, tag) receives in shuffled
 *                order; every byte is checked
 *   collectives  barrier, bcast from every root, reduce/allreduce (sum, min,
 *                max on int, long and double), gather
 *   slow         every rank floods rank 0 (eager and rendez-vous) while rank 0
 *                does not receive; each sender, once it has seen a credit
 *                stall, creates a file in DNP_RUN_DIR, and rank 0 receives once
 *                all are there: nothing is lost, rank 0 receives everything in
 *                order
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "presto.h"

static int g_fail;
static int g_rank;

#define CHECK(cond, ...)                                                               \
	do {                                                                           \
		if (!(cond)) {                                                         \
			fprintf(stderr, "rank %d: check failed: %s: ", g_rank, #cond); \
			fprintf(stderr, __VA_ARGS__);                                  \
			fputc('\n', stderr);                                           \
			g_fail++;                                                      \
		}                                                                      \
	} while (0)

static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static void fill(uint8_t *b, size_t len, uint64_t seed)
{
	size_t i;
	uint64_t v = 0;

	for (i = 0; i < len; i++) {
		if (i % 8 == 0)
			v = mix(seed + i / 8);
		b[i] = (uint8_t)(v >> (8 * (i % 8)));
	}
}

static long long diff(const uint8_t *b, size_t len, uint64_t seed)
{
	size_t i;
	uint64_t v = 0;

	for (i = 0; i < len; i++) {
		if (i % 8 == 0)
			v = mix(seed + i / 8);
		if (b[i] != (uint8_t)(v >> (8 * (i % 8))))
			return (long long)i;
	}
	return -1;
}

/* ---- basic ---- */

static void basic(struct presto *p)
{
	int me = presto_rank(p), n = presto_size(p), peer = me ^ 1;
	size_t em = presto_eager_max(p);
	size_t sizes[] = { 0, 1, 63, em, em + 1, 100000, 1 << 20 };
	struct presto_status st;
	struct presto_req *rq, *sq, *sq2;
	uint8_t *a = malloc(1 << 20), *b = malloc(1 << 20);
	unsigned k;
	int r, flag;

	if (peer >= n)
		peer = me;
	for (k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		size_t len = sizes[k];

		fill(a, len, (uint64_t)me << 40 | len);
		memset(b, 0, len);
		r = presto_irecv(p, b, len, peer, 7, &rq);
		CHECK(r == 0, "irecv %d", r);
		r = presto_isend(p, a, len, peer, 7, &sq);
		CHECK(r == 0, "isend %d", r);
		flag = 0;
		while (!flag && r == 0)
			r = presto_test(p, &rq, &flag, &st);
		CHECK(r == 0 && st.source == peer && st.tag == 7 && st.len == len,
		      "size %zu: r %d source %d tag %d len %zu", len, r, st.source, st.tag, st.len);
		CHECK(diff(b, len, (uint64_t)peer << 40 | len) < 0, "size %zu: bytes", len);
		r = presto_wait(p, &sq, NULL);
		CHECK(r == 0 && sq == NULL, "send wait %d", r);
	}
	/* Any-source / any-tag, blocking forms; the ring neighbours (barriers keep
	 * the other steps' messages out of these wildcard receives). */
	CHECK(presto_barrier(p) == 0, "barrier");
	for (k = 0; k < 2; k++) {
		size_t len = k ? em * 3 : 100;
		int to = (me + 1) % n, from = (me - 1 + n) % n;

		fill(a, len, (uint64_t)me << 40 | 0x55);
		r = presto_isend(p, a, len, to, 1000 + me, &sq);
		CHECK(r == 0, "isend %d", r);
		r = presto_recv(p, b, 1 << 20, PRESTO_ANY_SOURCE, PRESTO_ANY_TAG, &st);
		CHECK(r == 0 && st.source == from && st.tag == 1000 + from && st.len == len,
		      "any: r %d source %d tag %d len %zu", r, st.source, st.tag, st.len);
		CHECK(diff(b, len, (uint64_t)from << 40 | 0x55) < 0, "any-source bytes");
		CHECK(presto_wait(p, &sq, NULL) == 0, "send");
		CHECK(presto_barrier(p) == 0, "barrier");
	}
	/* Truncation: eager and rendez-vous; the buffer holds the prefix. */
	for (k = 0; k < 2; k++) {
		size_t len = k ? 50000 : 40, cap = len / 2;

		fill(a, len, 99 + k);
		memset(b, 0xee, len);
		r = presto_isend(p, a, len, peer, 3, &sq);
		CHECK(r == 0, "isend");
		r = presto_recv(p, b, cap, peer, 3, &st);
		CHECK(r == -EMSGSIZE && st.error == -EMSGSIZE && st.len == cap,
		      "truncation: r %d len %zu", r, st.len);
		CHECK(diff(b, cap, 99 + k) < 0 && b[cap] == 0xee, "truncated bytes");
		r = presto_wait(p, &sq, NULL);
		CHECK(r == 0, "truncated send completes: %d", r);
	}
	/* One buffer sent twice at once (rendez-vous shares the registration),
	 * and an overlapping part of it (a private copy). */
	fill(a, 300000, 7777);
	CHECK(presto_isend(p, a, 200000, peer, 5, &sq) == 0, "isend");
	CHECK(presto_isend(p, a, 200000, peer, 5, &sq2) == 0, "isend twice");
	CHECK(presto_recv(p, b, 200000, peer, 5, &st) == 0 && diff(b, 200000, 7777) < 0,
	      "first copy");
	CHECK(presto_recv(p, b, 200000, peer, 5, &st) == 0 && diff(b, 200000, 7777) < 0,
	      "second copy");
	CHECK(presto_wait(p, &sq, NULL) == 0 && presto_wait(p, &sq2, NULL) == 0, "sends");
	CHECK(presto_isend(p, a, 200000, peer, 6, &sq) == 0, "isend");
	CHECK(presto_isend(p, a + 4096, 200000, peer, 6, &sq2) == 0, "overlapping isend");
	CHECK(presto_recv(p, b, 200000, peer, 6, &st) == 0 && diff(b, 200000, 7777) < 0, "first");
	CHECK(presto_recv(p, b, 200000, peer, 6, &st) == 0 && memcmp(b, a + 4096, 200000) == 0,
	      "overlapping");
	CHECK(presto_wait(p, &sq, NULL) == 0 && presto_wait(p, &sq2, NULL) == 0, "sends");
	/* Bad arguments. */
	CHECK(presto_isend(p, a, 1, n, 0, &sq) == -EINVAL, "bad rank");
	CHECK(presto_isend(p, a, 1, 0, -1, &sq) == -EINVAL, "bad tag");
	CHECK(presto_irecv(p, b, 1, -2, 0, &rq) == -EINVAL, "bad source");
	free(a);
	free(b);
}

/* ---- random traffic ---- */

struct rmsg {
	int dst, tag;
	size_t len;
};

static uint64_t rng_next(uint64_t *s)
{
	*s += 0x9e3779b97f4a7c15ull;
	return mix(*s);
}

/* Message k of rank src's plan (the same on every rank). */
static struct rmsg plan(int src, unsigned k, int n, int ntags, unsigned phase)
{
	uint64_t s = mix((uint64_t)src << 32 | k) ^ (uint64_t)phase << 60;
	struct rmsg m;
	uint64_t r = rng_next(&s);

	m.dst = (int)(rng_next(&s) % (uint64_t)n);
	m.tag = (int)(rng_next(&s) % (uint64_t)ntags);
	if (r % 16 == 0)
		m.len = (size_t)(rng_next(&s) % 300000);
	else if (r % 4 == 0)
		m.len = (size_t)(rng_next(&s) % 65536);
	else
		m.len = (size_t)(rng_next(&s) % 4096);
	return m;
}

static uint64_t rseed(int src, unsigned k, unsigned phase)
{
	return (uint64_t)phase << 56 | (uint64_t)src << 40 | k;
}

#define WIN 32

struct slot {
	struct presto_req *q;
	uint8_t *buf;
	unsigned post; /* posting index of a receive */
	unsigned k;    /* directed: the message this receive must get */
	int src;
};

struct done_rx {
	int src, tag;
	size_t len;
	uint8_t *data; /* the received bytes, kept until the order is checked */
};

/* Checks one received message against message kk of src's plan. */
static void check_msg(int me, int n, int ntags, unsigned phase, unsigned per,
		      const struct done_rx *d, unsigned kk)
{
	struct rmsg m;

	CHECK(kk < per, "phase %u: more messages from %d than planned", phase, d->src);
	if (kk >= per)
		return;
	m = plan(d->src, kk, n, ntags, phase);
	CHECK(m.dst == me && d->tag == m.tag && d->len == m.len,
	      "phase %u from %d msg %u: tag %d/%d len %zu/%zu", phase, d->src, kk, d->tag, m.tag,
	      d->len, m.len);
	CHECK(diff(d->data, d->len, rseed(d->src, kk, phase)) < 0,
	      "phase %u from %d msg %u: bytes differ", phase, d->src, kk);
}

/* A message this rank expects: its sender and tag. */
struct exp_rx {
	int src, tag;
};

/*
 * The messages rank me expects in phase `phase` (per messages per rank), in
 * a shuffled order (the directed receives' posting order); *nexp their
 * count. NULL if out of memory.
 */
static struct exp_rx *expected_list(int me, int n, int ntags, unsigned per, unsigned phase,
				    unsigned *nexp)
{
	uint64_t shuf = 12345 + (uint64_t)me;
	struct exp_rx *exp;
	unsigned i = 0, k;
	int src;

	*nexp = 0;
	for (src = 0; src < n; src++)
		for (k = 0; k < per; k++)
			*nexp += plan(src, k, n, ntags, phase).dst == me;
	exp = calloc(*nexp + 1, sizeof(*exp));
	if (!exp)
		return NULL;
	for (src = 0; src < n; src++)
		for (k = 0; k < per; k++) {
			struct rmsg m = plan(src, k, n, ntags, phase);

			if (m.dst == me) {
				exp[i].src = src;
				exp[i].tag = m.tag;
				i++;
			}
		}
	for (i = *nexp; i > 1; i--) {
		unsigned j = (unsigned)(rng_next(&shuf) % i);
		struct exp_rx t = exp[i - 1];

		exp[i - 1] = exp[j];
		exp[j] = t;
	}
	return exp;
}

/*
 * Any-source receives, in posting order: each sender's messages must come in
 * the sender's order; each is checked against the plan.
 */
static void check_any_order(int me, int n, int ntags, unsigned phase, unsigned per,
			    const struct done_rx *dn, unsigned nexp)
{
	unsigned *next_from = calloc((size_t)n, sizeof(unsigned));

	CHECK(next_from != NULL, "out of memory");
	for (unsigned i = 0; next_from && i < nexp; i++) {
		const struct done_rx *d = &dn[i];
		unsigned k;

		if (d->src < 0 || d->src >= n)
			continue;
		k = next_from[d->src];
		while (k < per && plan(d->src, k, n, ntags, phase).dst != me)
			k++;
		next_from[d->src] = k + 1;
		check_msg(me, n, ntags, phase, per, d, k);
	}
	free(next_from);
}

/*
 * Runs the plan of phase `phase`: per rank `per` messages. any: receives
 * are ANY_SOURCE/ANY_TAG, else directed (source, tag) receives posted in a
 * shuffled order. MPI orders matching, not completion: a receive posted
 * earlier gets an earlier message of the same sender (any), or of the same
 * (sender, tag) (directed). Completed receives are checked against that.
 */
static void random_phase(struct presto *p, unsigned per, int ntags, unsigned phase, bool any)
{
	int me = presto_rank(p), n = presto_size(p), r, flag;
	unsigned nexp = 0, sent = 0, got = 0, i, sk = 0, rk = 0;
	unsigned *next_k = calloc((size_t)n * (size_t)ntags, sizeof(unsigned));
	struct exp_rx *exp = expected_list(me, n, ntags, per, phase, &nexp);
	struct done_rx *dn = calloc(nexp + 1, sizeof(*dn));
	struct slot ss[WIN], rs[WIN];
	struct presto_status st;

	CHECK(next_k && exp && dn, "out of memory");
	if (!next_k || !exp || !dn)
		goto out;
	memset(ss, 0, sizeof(ss));
	memset(rs, 0, sizeof(rs));
	while (got < nexp || sent < per) {
		for (i = 0; i < WIN; i++) {
			if (!rs[i].q && rk < nexp) {
				rs[i].buf = malloc(300000);
				rs[i].post = rk;
				if (any) {
					r = presto_irecv(p, rs[i].buf, 300000, PRESTO_ANY_SOURCE,
							 PRESTO_ANY_TAG, &rs[i].q);
				} else {
					/* the next message of (src, tag) not yet asked for */
					unsigned *nk = &next_k[exp[rk].src * ntags + exp[rk].tag];
					struct rmsg m;

					for (;; (*nk)++) {
						m = plan(exp[rk].src, *nk, n, ntags, phase);
						if (m.dst == me && m.tag == exp[rk].tag)
							break;
					}
					rs[i].src = exp[rk].src;
					rs[i].k = (*nk)++;
					r = presto_irecv(p, rs[i].buf, 300000, rs[i].src, m.tag,
							 &rs[i].q);
				}
				CHECK(r == 0, "irecv %d", r);
				if (r < 0)
					goto out;
				rk++;
			}
			if (rs[i].q) {
				r = presto_test(p, &rs[i].q, &flag, &st);
				CHECK(r == 0, "recv error %d", r);
				if (r < 0)
					goto out;
				if (flag) {
					struct done_rx *d = &dn[rs[i].post];

					d->src = st.source;
					d->tag = st.tag;
					d->len = st.len;
					d->data = realloc(rs[i].buf, st.len ? st.len : 1);
					CHECK(st.source >= 0 && st.source < n, "source %d",
					      st.source);
					if (!any) {
						CHECK(st.source == rs[i].src,
						      "directed source %d want %d", st.source,
						      rs[i].src);
						check_msg(me, n, ntags, phase, per, d, rs[i].k);
						free(d->data);
						d->data = NULL;
					}
					got++;
				}
			}
			if (!ss[i].q && sk < per) {
				struct rmsg m = plan(me, sk, n, ntags, phase);

				ss[i].buf = malloc(m.len ? m.len : 1);
				fill(ss[i].buf, m.len, rseed(me, sk, phase));
				r = presto_isend(p, ss[i].buf, m.len, m.dst, m.tag, &ss[i].q);
				CHECK(r == 0, "isend %d", r);
				if (r < 0)
					goto out;
				sk++;
			}
			if (ss[i].q) {
				r = presto_test(p, &ss[i].q, &flag, NULL);
				CHECK(r == 0, "send error %d", r);
				if (r < 0)
					goto out;
				if (flag) {
					free(ss[i].buf);
					sent++;
				}
			}
		}
	}
	if (any)
		check_any_order(me, n, ntags, phase, per, dn, nexp);
	printf("ok: phase %u: sent %u, received %u of %u expected (%s)\n", phase, sent, got, nexp,
	       any ? "any-source any-tag, per-sender order" :
		     "directed, shuffled posting order, per-(sender, tag) order");
out:
	for (i = 0; dn && i < nexp; i++)
		free(dn[i].data);
	free(dn);
	free(exp);
	free(next_k);
}

static void random_mode(struct presto *p, unsigned total)
{
	int n = presto_size(p);
	unsigned per = (total + (unsigned)n - 1) / (unsigned)n;
	struct presto_stats s;

	random_phase(p, per, 1000, 1, true);
	presto_barrier(p);
	random_phase(p, per / 4 + 1, 4, 2, false);
	presto_get_stats(p, &s);
	printf("ok: %u messages per rank; eager %llu, rendez-vous %llu, unexpected %llu, "
	       "credit stalls %llu, retries %llu, out-of-order held %llu, bounce %llu\n",
	       per + per / 4 + 1, (unsigned long long)s.eager_sent, (unsigned long long)s.rndv_sent,
	       (unsigned long long)s.unexpected, (unsigned long long)s.credit_stalls,
	       (unsigned long long)s.retries, (unsigned long long)s.held_out_of_order,
	       (unsigned long long)s.bounce);
}

/* ---- collectives ---- */

static void collectives(struct presto *p)
{
	int me = presto_rank(p), n = presto_size(p), root, i;
	uint8_t *b = malloc(100000);
	int iv[3], ir[3];
	long lv[3], lr[3];
	double dv[3], dr[3];
	size_t len;

	for (i = 0; i < 5; i++)
		CHECK(presto_barrier(p) == 0, "barrier");
	for (root = 0; root < n; root++)
		for (len = 1; len <= 100000; len *= 100) {
			if (me == root)
				fill(b, len, 500 + (uint64_t)root);
			else
				memset(b, 0, len);
			CHECK(presto_bcast(p, b, len, root) == 0, "bcast");
			CHECK(diff(b, len, 500 + (uint64_t)root) < 0, "bcast %zu from %d", len,
			      root);
		}
	iv[0] = me + 1, iv[1] = -me, iv[2] = me * 7 % 5;
	lv[0] = (long)me << 33, lv[1] = -(long)me * 3, lv[2] = me % 3;
	dv[0] = me * 0.5, dv[1] = -1.25 * me, dv[2] = 1e300 / (me + 1);
	for (root = 0; root<n; root += n - 1> 0 ? n - 1 : 1) {
		memset(ir, 0, sizeof(ir));
		CHECK(presto_reduce(p, iv, ir, 3, PRESTO_INT, PRESTO_SUM, root) == 0, "reduce");
		if (me == root)
			CHECK(ir[0] == n * (n + 1) / 2 && ir[1] == -n * (n - 1) / 2,
			      "int sum %d %d", ir[0], ir[1]);
		if (n == 1)
			break;
	}
	CHECK(presto_allreduce(p, iv, ir, 3, PRESTO_INT, PRESTO_MAX) == 0, "allreduce");
	CHECK(ir[0] == n && ir[1] == 0, "int max %d %d", ir[0], ir[1]);
	CHECK(presto_allreduce(p, iv, ir, 3, PRESTO_INT, PRESTO_MIN) == 0, "allreduce");
	CHECK(ir[0] == 1 && ir[1] == -(n - 1) && ir[2] == 0, "int min");
	CHECK(presto_allreduce(p, lv, lr, 3, PRESTO_LONG, PRESTO_SUM) == 0, "allreduce");
	CHECK(lr[0] == ((long)n * (n - 1) / 2) << 33, "long sum %ld", lr[0]);
	CHECK(presto_allreduce(p, lv, lr, 3, PRESTO_LONG, PRESTO_MIN) == 0, "allreduce");
	CHECK(lr[0] == 0 && lr[1] == -3L * (n - 1), "long min");
	CHECK(presto_allreduce(p, lv, lr, 3, PRESTO_LONG, PRESTO_MAX) == 0, "allreduce");
	CHECK(lr[0] == (long)(n - 1) << 33 && lr[2] == (n > 2 ? 2 : n - 1), "long max");
	CHECK(presto_allreduce(p, dv, dr, 3, PRESTO_DOUBLE, PRESTO_SUM) == 0, "allreduce");
	CHECK(dr[0] == 0.25 * n * (n - 1), "double sum %g", dr[0]);
	CHECK(presto_allreduce(p, dv, dr, 3, PRESTO_DOUBLE, PRESTO_MIN) == 0, "allreduce");
	CHECK(dr[1] == -1.25 * (n - 1) && dr[2] == 1e300 / n, "double min %g", dr[2]);
	CHECK(presto_allreduce(p, dv, dr, 3, PRESTO_DOUBLE, PRESTO_MAX) == 0, "allreduce");
	CHECK(dr[0] == 0.5 * (n - 1) && dr[2] == 1e300, "double max");
	/* A long vector: all ranks contribute rank+i, rendez-vous sized. */
	{
		size_t cnt = 20000, j;
		long *v = malloc(cnt * sizeof(long)), *w = malloc(cnt * sizeof(long));

		for (j = 0; j < cnt; j++)
			v[j] = me + (long)j;
		CHECK(presto_allreduce(p, v, w, cnt, PRESTO_LONG, PRESTO_SUM) == 0, "allreduce");
		for (j = 0; j < cnt; j++)
			if (w[j] != (long)n * (n - 1) / 2 + (long)n * (long)j)
				break;
		CHECK(j == cnt, "long vector sum at %zu", j);
		free(v);
		free(w);
	}
	for (root = 0; root < n; root++) {
		uint8_t mine[5000], *all = malloc((size_t)n * sizeof(mine));

		fill(mine, sizeof(mine), 900 + (uint64_t)me);
		CHECK(presto_gather(p, mine, sizeof(mine), all, root) == 0, "gather");
		for (i = 0; me == root && i < n; i++)
			CHECK(diff(all + (size_t)i * sizeof(mine), sizeof(mine),
				   900 + (uint64_t)i) < 0,
			      "gather root %d part %d", root, i);
		free(all);
	}
	free(b);
}

/* ---- back-pressure ---- */

/*
 * The slow mode's handshake, through files in the torus's run directory
 * (DNP_RUN_DIR, set by dnp-run): a sender creates presto-slow.RANK once it has
 * seen its queue to rank 0 run out of credits; rank 0 starts receiving once
 * every sender's file is there (a bounded wait). It replaces a fixed sleep,
 * which proved nothing on a slow machine and wasted time on a fast one.
 */
#define SLOW_WAIT_S 60

static void slow_flag_path(char *path, size_t cap, int rank)
{
	const char *dir = getenv("DNP_RUN_DIR");

	snprintf(path, cap, "%s/presto-slow.%d", dir ? dir : "/tmp", rank);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/*
 * A sender: drives its requests (presto_test) until it has seen a credit
 * stall, then says so; returns the sends completed meanwhile.
 */
static unsigned slow_stall_then_flag(struct presto *p, struct presto_req **q, uint8_t **bufs,
				     unsigned per)
{
	struct presto_stats s;
	double t_end = now_s() + SLOW_WAIT_S;
	unsigned done = 0;
	char path[512];
	int fd;

	for (;;) {
		presto_get_stats(p, &s);
		if (s.credit_stalls > 0 || now_s() > t_end)
			break;
		for (unsigned k = 0; k < per; k++) {
			int flag = 0;

			if (!q[k])
				continue;
			CHECK(presto_test(p, &q[k], &flag, NULL) == 0, "flood send %u", k);
			if (flag || !q[k]) {
				free(bufs[k]);
				bufs[k] = NULL;
				q[k] = NULL;
				done++;
			}
		}
	}
	CHECK(s.credit_stalls > 0, "no credit stall in %d s while rank 0 did not receive",
	      SLOW_WAIT_S);
	/* rank 0 waits for this file either way, so that the run ends */
	slow_flag_path(path, sizeof(path), presto_rank(p));
	fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
	CHECK(fd >= 0, "%s: %s", path, strerror(errno));
	if (fd >= 0)
		close(fd);
	return done;
}

/* Rank 0: waits until every sender has said it stalled; the count that did. */
static int slow_wait_flags(int n)
{
	double t_end = now_s() + SLOW_WAIT_S + 10;
	char path[512];
	int have = 0;

	while (have < n - 1 && now_s() < t_end) {
		have = 0;
		for (int r = 1; r < n; r++) {
			slow_flag_path(path, sizeof(path), r);
			have += access(path, F_OK) == 0;
		}
		if (have < n - 1)
			usleep(10000);
	}
	CHECK(have == n - 1, "%d of %d senders said they stalled on credits", have, n - 1);
	return have;
}

static void slow(struct presto *p)
{
	int me = presto_rank(p), n = presto_size(p);
	unsigned per = 200, k;
	size_t em = presto_eager_max(p);
	struct presto_status st;
	struct presto_stats s;
	uint8_t *b = malloc(em * 4);
	int src;

	CHECK(getenv("DNP_RUN_DIR") != NULL, "DNP_RUN_DIR unset (run under dnp-run)");
	if (me != 0) {
		struct presto_req **q = calloc(per, sizeof(*q));
		uint8_t **bufs = calloc(per, sizeof(*bufs));
		unsigned early;

		for (k = 0; k < per; k++) {
			size_t len = k % 10 == 9 ? em * 3 : k % (em + 1);

			bufs[k] = malloc(len ? len : 1);
			fill(bufs[k], len, rseed(me, k, 9));
			CHECK(presto_isend(p, bufs[k], len, 0, (int)k, &q[k]) == 0, "isend");
		}
		/* rank 0 does not receive until we stalled on credits: nothing is lost */
		early = slow_stall_then_flag(p, q, bufs, per);
		for (k = 0; k < per; k++) {
			if (!q[k])
				continue;
			CHECK(presto_wait(p, &q[k], NULL) == 0, "flood send %u", k);
			free(bufs[k]);
		}
		presto_get_stats(p, &s);
		printf("ok: %u sends to a rank 0 not receiving completed (%u before it began), "
		       "%llu credit stalls\n",
		       per, early, (unsigned long long)s.credit_stalls);
		free(q);
		free(bufs);
	} else {
		int have = slow_wait_flags(n);

		/* Directed receives in reverse sender order, each sender's messages in order. */
		for (src = n - 1; src > 0; src--)
			for (k = 0; k < per; k++) {
				size_t len = k % 10 == 9 ? em * 3 : k % (em + 1);

				CHECK(presto_recv(p, b, em * 4, src, (int)k, &st) == 0, "recv");
				CHECK(st.len == len && diff(b, len, rseed(src, k, 9)) < 0,
				      "flood msg %u from %d", k, src);
			}
		printf("ok: %d senders stalled on credits; %u flood messages from %d ranks "
		       "received in order\n",
		       have, per * (n - 1), n - 1);
	}
	free(b);
}

int main(int argc, char **argv)
{
	struct presto *p;
	const char *mode = argc > 1 ? argv[1] : "";
	int r;

	r = presto_init(NULL, &p);
	if (r < 0) {
		fprintf(stderr, "presto_check: presto_init: %s\n", strerror(-r));
		return 1;
	}
	g_rank = presto_rank(p);
	if (!strcmp(mode, "basic"))
		basic(p);
	else if (!strcmp(mode, "random"))
		random_mode(p, argc > 2 ? (unsigned)atoi(argv[2]) : 10000);
	else if (!strcmp(mode, "collectives"))
		collectives(p);
	else if (!strcmp(mode, "slow"))
		slow(p);
	else {
		fprintf(stderr, "usage: presto_check basic|random [N]|collectives|slow\n");
		presto_finalize(p);
		return 2;
	}
	presto_finalize(p);
	printf("%s %s\n", g_fail ? "FAIL" : "PASS", mode);
	return g_fail ? 1 : 0;
}
