/* SPDX-License-Identifier: MIT */
/*
 * dnp_coll — the collectives run by the daemons (docs/api.md,
 * "Collectives"), checked and measured on every node of a torus (dnp-run).
 *
 * Presto (presto.h) starts the ranks and exchanges each rank's port; the
 * collectives run on a second session of this process, in one group of
 * every rank (rank order). Presto is told to keep to its host-based
 * collectives (PRESTO_COLL=host), the reference of --bench. Modes:
 *   check (default)  every reduction on every type, at 1, 7 and 64 KiB worth
 *                    of elements, against a reference each rank computes for
 *                    itself (values are a function of rank and index), and
 *                    sum and bor at 1 MiB (pipelined), then broadcast from
 *                    every root (up to 1 MiB), then barriers. "PASS coll".
 *   --bench N        allreduce of --size bytes (8) of doubles, N times
 *                    offloaded and N times with Presto's host-based
 *                    presto_allreduce, in blocks of 10 alternately; rank 0
 *                    prints each one's median, the ratio and the bandwidth
 *                    (bytes / median). With --bcast: broadcasts from rank 0
 *                    (dnp_bcast against presto_bcast) instead.
 *   --kill-rank R    allreduces of --size bytes until one fails; rank R kills its own daemon
 *                    (kill -9, its PID from the run directory) after 20 of
 *                    them and exits. Every other rank must end its current
 *                    collective with an error event ("PASS kill", the errno
 *                    named): never a hang (--wait-ms bounds each wait).
 * Exit 0 on success, 1 on a failure (printed), 2 on bad usage.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "coll_ref.h"
#include "dnp.h"
#include "presto.h"

#define PROG "dnp_coll"
#define GID 0xc011u
#define MAXB DNP_COLL_MAX_BYTES
#define CHECK_BIG (1u << 20) /* check: the large (pipelined) collectives' size */

struct run {
	struct presto *p;
	struct dnp *d;
	int rank, size;
	uint64_t cookie;
	int wait_ms;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Waits for the completion of the command with this cookie: 0, its error, or -ETIME. */
static int wait_done(struct run *r, uint64_t cookie, unsigned op)
{
	uint64_t t0 = now_ns();
	struct dnp_event ev;

	for (;;) {
		int n = dnp_wait_event(r->d, &ev, 100);
		if (n < 0)
			return n;
		if (n == 1 && ev.cookie == cookie &&
		    (ev.type == DNP_EV_TX_DONE || ev.type == DNP_EV_ERROR)) {
			if (ev.type == DNP_EV_TX_DONE && ev.op != op)
				return -EPROTO;
			return ev.status;
		}
		if (now_ns() - t0 > (uint64_t)r->wait_ms * 1000000ull)
			return -ETIME;
	}
}

static int run_allreduce(struct run *r, const void *src, void *dst, size_t count, unsigned t,
			 unsigned op)
{
	uint64_t ck = ++r->cookie;
	int rc = dnp_allreduce(r->d, GID, src, dst, count, t, op, ck, 0);

	return rc ? rc : wait_done(r, ck, DNP_OP_ALLREDUCE);
}

/* Pipelined allreduces (coll.h): a sum of doubles and a bor of int64, of CHECK_BIG bytes. */
static int check_large(struct run *r, uint8_t *src, uint8_t *dst, uint8_t *want, unsigned salt)
{
	static const unsigned t[2] = { DNP_TYPE_DOUBLE, DNP_TYPE_INT64 };
	static const unsigned op[2] = { DNP_RED_SUM, DNP_RED_BOR };

	for (unsigned k = 0; k < 2; k++) {
		size_t n = CHECK_BIG / 8;

		salt++;
		for (size_t i = 0; i < n; i++) {
			coll_ref_put(src + i * 8, t[k], coll_ref_val((unsigned)r->rank, i, salt));
			coll_ref_put(want + i * 8, t[k],
				     coll_ref_elem(op[k], (unsigned)r->size, i, salt));
		}
		memset(dst, 0xee, CHECK_BIG);
		int rc = run_allreduce(r, src, dst, n, t[k], op[k]);
		if (rc || memcmp(dst, want, CHECK_BIG)) {
			printf("FAIL allreduce op %u type %u count %zu: %s\n", op[k], t[k], n,
			       rc ? dnp_strerror(rc) : "wrong result");
			return -1;
		}
	}
	return 0;
}

static int check_reduce(struct run *r, uint8_t *src, uint8_t *dst, uint8_t *want)
{
	static const unsigned types[] = { DNP_TYPE_INT32, DNP_TYPE_INT64, DNP_TYPE_FLOAT,
					  DNP_TYPE_DOUBLE };
	static const char *const tn[] = { "", "int32", "int64", "float", "double" };
	unsigned salt = 0;

	for (unsigned ti = 0; ti < 4; ti++)
		for (unsigned op = DNP_RED_SUM; op <= DNP_RED_BOR; op++) {
			unsigned t = types[ti];
			size_t counts[3] = { 1, 7, 65536 / coll_ref_esize(t) };

			if (op > DNP_RED_MAX && (t == DNP_TYPE_FLOAT || t == DNP_TYPE_DOUBLE))
				continue;
			for (unsigned k = 0; k < 3; k++) {
				size_t n = counts[k], len = n * coll_ref_esize(t);

				salt++;
				for (size_t i = 0; i < n; i++) {
					coll_ref_put(src + i * coll_ref_esize(t), t,
						     coll_ref_val((unsigned)r->rank, i, salt));
					coll_ref_put(want + i * coll_ref_esize(t), t,
						     coll_ref_elem(op, (unsigned)r->size, i, salt));
				}
				memset(dst, 0xee, len);
				int rc = run_allreduce(r, src, dst, n, t, op);
				if (rc || memcmp(dst, want, len)) {
					printf("FAIL allreduce op %u %s count %zu: %s\n", op, tn[t],
					       n, rc ? dnp_strerror(rc) : "wrong result");
					return -1;
				}
			}
		}
	return check_large(r, src, dst, want, salt);
}

static int check_bcast_barrier(struct run *r, uint8_t *buf)
{
	static const size_t lens[] = { 1, 5000, 65536, CHECK_BIG };

	for (int root = 0; root < r->size; root++) {
		size_t len = lens[root % 4];

		for (size_t i = 0; i < len; i++)
			buf[i] = (uint8_t)(r->rank == root ? i * 13 + (size_t)root : 0x5a);
		uint64_t ck = ++r->cookie;
		int rc = dnp_bcast(r->d, GID, buf, len, (unsigned)root, ck, 0);
		if (rc == 0)
			rc = wait_done(r, ck, DNP_OP_BCAST);
		for (size_t i = 0; rc == 0 && i < len; i++)
			if (buf[i] != (uint8_t)(i * 13 + (size_t)root))
				rc = -EBADMSG;
		if (rc) {
			printf("FAIL bcast root %d len %zu: %s\n", root, len, dnp_strerror(rc));
			return -1;
		}
	}
	for (unsigned i = 0; i < 20; i++) {
		uint64_t ck = ++r->cookie;
		int rc = dnp_barrier(r->d, GID, ck, 0);
		if (rc == 0)
			rc = wait_done(r, ck, DNP_OP_BARRIER);
		if (rc) {
			printf("FAIL barrier: %s\n", dnp_strerror(rc));
			return -1;
		}
	}
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static double median_us(uint64_t *v, unsigned n)
{
	qsort(v, n, sizeof(*v), cmp_u64);
	return (double)v[n / 2] / 1000.0;
}

/* One offloaded (host false) or host-based collective of the benchmark. */
static int bench_one(struct run *r, bool bcast, bool host, double *src, double *dst, size_t count)
{
	if (bcast && host)
		return presto_bcast(r->p, dst, count * 8, 0);
	if (bcast) {
		uint64_t ck = ++r->cookie;
		int rc = dnp_bcast(r->d, GID, dst, count * 8, 0, ck, 0);
		return rc ? rc : wait_done(r, ck, DNP_OP_BCAST);
	}
	if (host)
		return presto_allreduce(r->p, src, dst, count, PRESTO_DOUBLE, PRESTO_SUM);
	return run_allreduce(r, src, dst, count, DNP_TYPE_DOUBLE, DNP_RED_SUM);
}

static int bench(struct run *r, unsigned iters, size_t size, bool bcast)
{
	size_t count = size / 8 ? size / 8 : 1;
	double *src = calloc(count, 8), *dst = calloc(count, 8);
	uint64_t *off = calloc(iters, 8), *host = calloc(iters, 8);
	unsigned no = 0, nh = 0;
	int rc = 0;

	if (!off || !host || !src || !dst) {
		free(src);
		free(dst);
		free(off);
		free(host);
		return -ENOMEM;
	}
	for (size_t i = 0; i < count; i++)
		src[i] = dst[i] = r->rank + i * 0.5;
	for (unsigned b = 0; rc == 0 && (no < iters || nh < iters); b++) {
		for (unsigned k = 0; rc == 0 && k < 10 && no < iters; k++) {
			uint64_t t0 = now_ns();
			rc = bench_one(r, bcast, false, src, dst, count);
			off[no++] = now_ns() - t0;
		}
		for (unsigned k = 0; rc == 0 && k < 10 && nh < iters; k++) {
			uint64_t t0 = now_ns();
			rc = bench_one(r, bcast, true, src, dst, count);
			host[nh++] = now_ns() - t0;
		}
	}
	if (rc)
		printf("FAIL bench: %s allreduce %u: %s\n", no > nh ? "offloaded" : "presto",
		       no > nh ? no : nh, dnp_strerror(rc));
	if (rc == 0 && r->rank == 0) {
		double mo = median_us(off, iters), mh = median_us(host, iters);
		printf("%s %zu B on %d ranks, %u each: offloaded median %.2f us, "
		       "presto median %.2f us, ratio %.3f, offloaded %.1f MB/s, presto %.1f MB/s\n",
		       bcast ? "bcast" : "allreduce", count * 8, r->size, iters, mo, mh, mo / mh,
		       (double)(count * 8) / mo, (double)(count * 8) / mh);
	}
	free(src);
	free(dst);
	free(off);
	free(host);
	return rc;
}

/* This rank's daemon: its PID from the run directory (DNP_SOCKET's, node-<id>.pid). */
static int kill_own_daemon(void)
{
	const char *sock = getenv("DNP_SOCKET"), *id = getenv("DNP_NODE_ID");
	char path[512];
	long pid = 0;

	if (!sock || !id || strlen(sock) > 400 || !strrchr(sock, '/'))
		return -EINVAL;
	snprintf(path, sizeof(path), "%.*s/node-%s.pid", (int)(strrchr(sock, '/') - sock), sock,
		 id);
	FILE *f = fopen(path, "r");
	if (!f)
		return -errno;
	if (fscanf(f, "%ld", &pid) != 1 || pid <= 1)
		pid = 0;
	fclose(f);
	return pid && kill((pid_t)pid, SIGKILL) == 0 ? 0 : -ESRCH;
}

/* Allreduces until one fails; the victim kills its daemon after 20. */
static int kill_loop(struct run *r, int victim, double *src, double *dst, size_t count)
{
	for (unsigned i = 0;; i++) {
		if (r->rank == victim && i == 20) {
			int rc = kill_own_daemon();
			printf("%s own daemon after %u allreduces\n",
			       rc ? "FAIL to kill" : "killed", i);
			return rc ? -1 : 0;
		}
		int rc = run_allreduce(r, src, dst, count, DNP_TYPE_DOUBLE, DNP_RED_SUM);
		if (rc == -ETIME) {
			printf("FAIL kill: allreduce %u still running after %d ms\n", i,
			       r->wait_ms);
			return -1;
		}
		if (rc) {
			printf("PASS kill: allreduce %u ended with %s (%d)\n", i, dnp_strerror(rc),
			       rc);
			return 0;
		}
		if (dst[0] != r->size * (r->size - 1) / 2.0 ||
		    dst[count - 1] != r->size * (r->size - 1) / 2.0) {
			printf("FAIL kill: wrong sum before the kill\n");
			return -1;
		}
		if (i > 100000) {
			printf("FAIL kill: no error after %u allreduces\n", i);
			return -1;
		}
	}
}

static int kill_mode(struct run *r, int victim, size_t size)
{
	size_t count = size / 8 ? size / 8 : 1;
	double *src = calloc(count, 8), *dst = calloc(count, 8);

	if (!src || !dst) {
		free(src);
		free(dst);
		return -1;
	}
	for (size_t i = 0; i < count; i++)
		src[i] = r->rank;
	int rc = kill_loop(r, victim, src, dst, count);

	free(src);
	free(dst);
	return rc;
}

/* Every rank's (node, port) in rank order, through Presto. */
static int make_group(struct run *r)
{
	struct dnp_coords self, dims;
	struct dnp_coll_member me, *all = calloc((size_t)r->size, sizeof(*all));
	int rc;

	if (!all)
		return -ENOMEM;
	dnp_self(r->d, &self, &dims);
	me = (struct dnp_coll_member){ (uint8_t)self.x, (uint8_t)self.y, (uint8_t)self.z,
				       (uint8_t)dnp_port(r->d) };
	rc = presto_gather(r->p, &me, sizeof(me), all, 0);
	if (rc == 0)
		rc = presto_bcast(r->p, all, (size_t)r->size * sizeof(me), 0);
	if (rc == 0) {
		uint64_t ck = ++r->cookie;
		rc = dnp_coll_group_create(r->d, GID, all, (unsigned)r->size, ck, 0);
		if (rc == 0)
			rc = wait_done(r, ck, DNP_OP_COLL_JOIN);
	}
	free(all);
	if (rc == 0)
		rc = presto_barrier(r->p); /* every member joined before anyone starts */
	return rc;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: " PROG
		   " [--bench N [--size BYTES] [--bcast]] [--kill-rank R [--size BYTES]]\n"
		   "       [--wait-ms MS]\n"
		   "  under dnp-run: checks (default), measures against Presto's allreduce\n"
		   "  (--bench), or kills rank R's daemon mid-run (--kill-rank).\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = { { "bench", required_argument, NULL, 'b' },
					      { "size", required_argument, NULL, 's' },
					      { "kill-rank", required_argument, NULL, 'k' },
					      { "wait-ms", required_argument, NULL, 'w' },
					      { "bcast", no_argument, NULL, 'c' },
					      { "help", no_argument, NULL, 'h' },
					      { NULL, 0, NULL, 0 } };
	struct run r = { .wait_ms = 60000 };
	unsigned iters = 0;
	size_t size = 8;
	int victim = -1, c, rc;
	bool bcast = false;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		char *end = NULL;
		long v = optarg ? strtol(optarg, &end, 10) : 0;

		if (c == 'h') {
			usage(stdout);
			return 0;
		}
		if (c == 'c') {
			bcast = true;
			continue;
		}
		if (c == '?' || !end || *end || v < 0 || v > 10000000) {
			usage(stderr);
			return 2;
		}
		if (c == 'b')
			iters = (unsigned)v;
		else if (c == 's')
			size = (size_t)v;
		else if (c == 'k')
			victim = (int)v;
		else
			r.wait_ms = (int)v;
	}
	if (size > MAXB || (iters == 0 && argc > optind)) {
		usage(stderr);
		return 2;
	}
	setenv("PRESTO_COLL", "host", 1); /* Presto's own collectives: the host-based ones */
	rc = presto_init(NULL, &r.p);
	if (rc == 0)
		rc = dnp_open(NULL, &r.d);
	if (rc) {
		printf("FAIL start: %s\n", dnp_strerror(rc));
		return 1;
	}
	r.rank = presto_rank(r.p);
	r.size = presto_size(r.p);
	rc = make_group(&r);
	if (rc) {
		printf("FAIL group: %s\n", dnp_strerror(rc));
		return 1;
	}
	if (victim >= 0) {
		rc = kill_mode(&r, victim, size);
		fflush(stdout);
		_exit(rc ? 1 : 0); /* the torus lost a node: no orderly goodbye */
	}
	if (iters) {
		rc = bench(&r, iters, size, bcast) ? -1 : 0;
	} else {
		uint8_t *a = malloc(CHECK_BIG), *b = malloc(CHECK_BIG), *w = malloc(CHECK_BIG);
		rc = a && b && w ? check_reduce(&r, a, b, w) : -ENOMEM;
		if (rc == 0)
			rc = check_bcast_barrier(&r, a);
		free(a);
		free(b);
		free(w);
		if (rc == 0)
			printf("PASS coll\n");
	}
	if (rc && rc != -1)
		printf("FAIL: %s\n", dnp_strerror(rc));
	dnp_close(r.d);
	presto_finalize(r.p);
	return rc ? 1 : 0;
}
