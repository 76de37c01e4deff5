/* SPDX-License-Identifier: MIT */
/*
 * fi_dnp_coll — FI_COLLECTIVE of the provider "dnp" through the libfabric
 * API, on real daemons (run under dnp-run; FI_PROVIDER_PATH names the
 * directory of libdnp-fi.so). The instance of node 0 opens one endpoint on
 * every node of the torus (one process, one domain per daemon) and checks:
 *   getinfo     FI_COLLECTIVE only when the hints ask for it
 *   query       fi_query_collective: barrier, broadcast, allreduce on the
 *               four types and five operations the daemons run, and no more
 *   av sets     FI_UNIVERSE, start/end/stride, insert/remove, union, diff
 *   join        fi_join_collective ends in FI_JOIN_COMPLETE on the EQ
 *   allreduce   every type x operation against a reference computed here,
 *               the same bits on every member; several queued at once
 *   barrier     does not complete while a member has not entered it
 *   broadcast   from several roots, 64 KiB and 1 MiB (pipelined by the daemons)
 *   order       each member lists the same members in another order: one
 *               group all the same (allreduce and broadcast agree)
 *   refused     other collectives -FI_ENOSYS; other ops, types, sizes
 *               -FI_EOPNOTSUPP
 *   rejoin      the same members joined again (a new group) after fi_close
 *   death       a member (a child process with its own endpoint) is killed
 *               while the others wait in an allreduce: each survivor gets a
 *               CQ error entry (fi_cq_readerr), never a hang
 * Every wait is bounded. Prints "PASS fi_dnp_coll" and exits 0 if all is right.
 */
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_collective.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>

#include "fi_side.h"

#define MAXN 8
#define BIG_BCAST (1u << 20)
#define DAEMON_MAX (4u << 20) /* the daemons' largest collective (DNP_COLL_MAX_BYTES) */
#define WAIT_MS 20000         /* a collective's bound; a death's: the daemon's 30 s deadline + 15 */
#define DEATH_MS 45000
#define ADDRLEN 32

static struct fi_info *info;
static struct fi_side S[MAXN];
static struct fid_eq *eq;
static unsigned n;

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/*
 * Polls the CQs of members [0, k) (each read progresses its endpoint) until
 * each gave one entry or ms passed. got[i]: 1 completion (ctx checked), -err
 * an error entry, 0 nothing. Returns how many gave one.
 */
static unsigned collect(struct fi_side *s, unsigned k, int *got, void **ctx, unsigned ms)
{
	uint64_t end = now_ms() + ms;
	unsigned i, done = 0;

	memset(got, 0, k * sizeof(*got));
	while (done < k && now_ms() < end)
		for (i = 0; i < k; i++) {
			struct fi_cq_tagged_entry e;
			struct fi_cq_err_entry ee = { 0 };
			ssize_t r;

			if (got[i])
				continue;
			r = fi_cq_read(s[i].cq, &e, 1);
			if (r == 1) {
				CHECK(e.flags & FI_COLLECTIVE, "member %u: flags %#llx", i,
				      (unsigned long long)e.flags);
				CHECK(!ctx || e.op_context == ctx[i], "member %u: context", i);
				got[i] = 1;
				done++;
			} else if (r == -FI_EAVAIL && fi_cq_readerr(s[i].cq, &ee, 0) == 1) {
				got[i] = -(ee.err ? ee.err : FI_EIO);
				done++;
			} else if (r != -FI_EAGAIN) {
				got[i] = -(int)(r < 0 ? -r : FI_EIO);
				done++;
			}
		}
	return done;
}

/* All k members completed without error. */
static bool all_ok(struct fi_side *s, unsigned k, void **ctx, const char *what)
{
	int got[MAXN + 1];
	unsigned i;
	bool ok = collect(s, k, got, ctx, WAIT_MS) == k;

	for (i = 0; i < k; i++)
		if (got[i] != 1) {
			CHECK(0, "%s: member %u: %s", what, i,
			      got[i] ? fi_strerror(-got[i]) : "no completion");
			ok = false;
		}
	return ok;
}

/* Waits (bounded) for k FI_JOIN_COMPLETE events on q, one for each mc[i]. */
static void join_wait(struct fid_eq *q, struct fid_mc **mc, unsigned k, const char *what)
{
	uint64_t end = now_ms() + WAIT_MS;
	bool seen[MAXN + 1] = { false };
	unsigned got = 0, i;

	while (got < k && now_ms() < end) {
		struct fi_eq_entry e;
		struct fi_eq_err_entry ee = { 0 };
		uint32_t ev = 0;
		ssize_t r = fi_eq_sread(q, &ev, &e, sizeof(e), 100, 0);

		if (r == -FI_EAVAIL) {
			fi_eq_readerr(q, &ee, 0);
			CHECK(0, "%s: join error %s", what, fi_strerror(ee.err));
			return;
		}
		if (r != sizeof(e))
			continue;
		CHECK(ev == FI_JOIN_COMPLETE, "%s: event %u", what, ev);
		for (i = 0; i < k; i++)
			if (e.fid == &mc[i]->fid && !seen[i]) {
				seen[i] = true;
				got++;
			}
	}
	CHECK(got == k, "%s: %u of %u joins completed", what, got, k);
}

/* ------------------------------------------------------------ checks */

static void getinfo_query(void)
{
	struct fi_info *h = fi_allocinfo(), *fi = NULL;
	struct fi_collective_attr a = { 0 };
	static const enum fi_op ops[] = { FI_SUM, FI_MIN, FI_MAX, FI_BAND, FI_BOR };
	static const enum fi_datatype dts[] = { FI_INT32, FI_INT64, FI_FLOAT, FI_DOUBLE };
	unsigned o, t;

	h->caps = FI_MSG;
	h->ep_attr->type = FI_EP_RDM;
	h->fabric_attr->prov_name = strdup("dnp");
	CHECK(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &fi) == 0 &&
		      !(fi->caps & FI_COLLECTIVE),
	      "FI_COLLECTIVE is not offered unasked");
	fi_freeinfo(fi);
	CHECK(info->caps & FI_COLLECTIVE, "FI_COLLECTIVE is granted when asked");
	fi_freeinfo(h);

	a.op = FI_NOOP;
	a.datatype = FI_VOID;
	CHECK(fi_query_collective(S[0].dom, FI_BARRIER, &a, 0) == 0 && a.max_members >= MAXN,
	      "barrier");
	for (o = 0; o < 5; o++)
		for (t = 0; t < 4; t++) {
			bool want = o < 3 || t < 2; /* bitwise ops on integers only */
			int r;

			memset(&a, 0, sizeof(a));
			a.op = ops[o];
			a.datatype = dts[t];
			r = fi_query_collective(S[0].dom, FI_ALLREDUCE, &a, 0);
			CHECK(want ? r == 0 : r == -FI_EOPNOTSUPP, "allreduce op %d type %d: %d",
			      ops[o], dts[t], r);
			if (r == 0)
				CHECK(a.datatype_attr.count * a.datatype_attr.size == DAEMON_MAX,
				      "count %zu size %zu", a.datatype_attr.count,
				      a.datatype_attr.size);
		}
	a.op = FI_PROD;
	a.datatype = FI_INT32;
	CHECK(fi_query_collective(S[0].dom, FI_ALLREDUCE, &a, 0) == -FI_EOPNOTSUPP, "FI_PROD");
	a.op = FI_SUM;
	a.datatype = FI_UINT32;
	CHECK(fi_query_collective(S[0].dom, FI_ALLREDUCE, &a, 0) == -FI_EOPNOTSUPP, "FI_UINT32");
	a.datatype = FI_UINT8;
	CHECK(fi_query_collective(S[0].dom, FI_BROADCAST, &a, 0) == 0 &&
		      a.datatype_attr.count == DAEMON_MAX,
	      "broadcast of bytes");
	CHECK(fi_query_collective(S[0].dom, FI_ALLGATHER, &a, 0) == -FI_EOPNOTSUPP, "allgather");
	CHECK(fi_query_collective(S[0].dom, FI_REDUCE, &a, 0) == -FI_EOPNOTSUPP, "reduce");
}

static void av_sets(void)
{
	struct fi_av_set_attr at = { .count = MAXN, .start_addr = 0, .end_addr = 6, .stride = 2 };
	struct fid_av_set *a, *b;
	fi_addr_t ca;

	/* 0, 2, 4, 6; then 1 inserted, 2 removed; union with {all}; diff {all} = empty */
	CHECK(fi_av_set(S[0].av, &at, &a, NULL) == 0, "av_set stride");
	CHECK(fi_av_set_insert(a, 1) == 0, "insert");
	CHECK(fi_av_set_insert(a, 1) == -FI_EINVAL, "insert twice");
	CHECK(fi_av_set_remove(a, 2) == 0, "remove");
	CHECK(fi_av_set_remove(a, 2) == -FI_EINVAL, "remove twice");
	CHECK(fi_av_set_insert(a, 1000) == -FI_EINVAL, "insert outside the AV");
	at.flags = FI_UNIVERSE;
	CHECK(fi_av_set(S[0].av, &at, &b, NULL) == 0, "av_set universe");
	CHECK(fi_av_set_union(a, b) == 0, "union");
	CHECK(fi_av_set_diff(a, b) == 0, "diff");
	CHECK(fi_av_set_addr(a, &ca) == 0, "addr");
	/* an empty set (and one without us) cannot be joined */
	{
		struct fid_mc *mc = NULL;

		CHECK(fi_join_collective(S[0].ep, ca, a, 0, &mc, NULL) == -FI_EINVAL,
		      "join of an empty set");
	}
	fi_close(&a->fid);
	fi_close(&b->fid);
}

/* Element i of member r for type t: small whole values (every sum exact in any order). */
static double val(unsigned r, unsigned i, unsigned t)
{
	int v = (int)((r * 7 + i * 13) % 29) - 11;

	return t >= 2 ? v * 0.5 : v;
}

static void put_elem(void *b, unsigned t, unsigned i, double v)
{
	switch (t) {
	case 0:
		((int32_t *)b)[i] = (int32_t)v;
		break;
	case 1:
		((int64_t *)b)[i] = (int64_t)v * 1000000007ll; /* past 32 bits */
		break;
	case 2:
		((float *)b)[i] = (float)v;
		break;
	default:
		((double *)b)[i] = v;
	}
}

/* The reference of op o over members [0, n) for element i of type t, in b at i. */
static void reference(void *b, unsigned t, unsigned o, unsigned i)
{
	int64_t acc = 0;
	double d = 0;
	unsigned r;

	for (r = 0; r < n; r++) {
		double v = val(r, i, t);
		int64_t x = t == 1 ? (int64_t)v * 1000000007ll : (int64_t)v;

		if (r == 0) {
			acc = x;
			d = v;
			continue;
		}
		switch (o) {
		case 0:
			acc += x;
			d += v;
			break;
		case 1:
			acc = x < acc ? x : acc;
			d = v < d ? v : d;
			break;
		case 2:
			acc = x > acc ? x : acc;
			d = v > d ? v : d;
			break;
		case 3:
			acc &= x;
			break;
		default:
			acc |= x;
		}
	}
	if (t == 0)
		((int32_t *)b)[i] = (int32_t)acc;
	else if (t == 1)
		((int64_t *)b)[i] = acc;
	else
		put_elem(b, t, i, d);
}

#define CNT 37

static void allreduce(fi_addr_t *ca)
{
	static const enum fi_op ops[] = { FI_SUM, FI_MIN, FI_MAX, FI_BAND, FI_BOR };
	static const enum fi_datatype dts[] = { FI_INT32, FI_INT64, FI_FLOAT, FI_DOUBLE };
	static const size_t esz[] = { 4, 8, 4, 8 };
	static uint8_t src[MAXN][5][CNT * 8], dst[MAXN][5][CNT * 8], ref[5][CNT * 8];
	unsigned t, o, r, i, nops, checked = 0;
	void *ctx[MAXN];

	for (t = 0; t < 4; t++) {
		nops = t < 2 ? 5 : 3;
		memset(dst, 0xa5, sizeof(dst));
		/* every operation of the type queued at once on every member */
		for (o = 0; o < nops; o++)
			for (r = 0; r < n; r++) {
				for (i = 0; i < CNT; i++)
					put_elem(src[r][o], t, i, val(r, i, t));
				CHECK(fi_allreduce(S[r].ep, src[r][o], CNT, NULL, dst[r][o], NULL,
						   ca[r], dts[t], ops[o], 0, &ctx[r]) == 0,
				      "allreduce type %u op %u member %u", t, o, r);
			}
		for (r = 0; r < n; r++)
			ctx[r] = &ctx[r];
		for (o = 0; o < nops; o++) {
			if (!all_ok(S, n, ctx, "allreduce"))
				return;
			for (i = 0; i < CNT; i++)
				reference(ref[o], t, o, i);
			for (r = 0; r < n; r++) {
				CHECK(!memcmp(dst[r][o], ref[o], CNT * esz[t]),
				      "allreduce type %u op %u: member %u differs from the reference",
				      t, o, r);
				checked++;
			}
		}
		if (t >= 2)
			for (o = 3; o < 5; o++)
				CHECK(fi_allreduce(S[0].ep, src[0][0], CNT, NULL, dst[0][0], NULL,
						   ca[0], dts[t], ops[o], 0,
						   NULL) == -FI_EOPNOTSUPP,
				      "bitwise op on a float type is refused");
	}
	CHECK(checked == n * 16, "%u allreduce results checked", checked);
}

static void barrier(fi_addr_t *ca)
{
	int got[MAXN];
	unsigned r;

	/* all but the last member enter: nobody may leave */
	for (r = 0; r + 1 < n; r++)
		CHECK(fi_barrier(S[r].ep, ca[r], NULL) == 0, "barrier %u", r);
	CHECK(collect(S, n - 1, got, NULL, 300) == 0, "a barrier completed with a member missing");
	CHECK(fi_barrier(S[n - 1].ep, ca[n - 1], NULL) == 0, "barrier last");
	{
		int g[MAXN];
		unsigned k = collect(S, n, g, NULL, WAIT_MS);

		CHECK(k == n, "barrier: %u of %u completed", k, n);
		for (r = 0; r < n; r++)
			CHECK(g[r] == 1, "barrier member %u: %d", r, g[r]);
	}
	CHECK(fi_barrier2(S[0].ep, ca[0], FI_MORE, NULL) == -FI_EOPNOTSUPP, "barrier2 flags");
}

static void broadcast(fi_addr_t *ca)
{
	static uint8_t buf[MAXN][BIG_BCAST + 8];
	const unsigned roots[] = { 0, 3, MAXN - 1, 5 };
	const size_t counts[] = { 1000, 65536, 1, BIG_BCAST };
	unsigned k, r;

	for (k = 0; k < 4; k++) {
		unsigned root = roots[k] % n;
		enum fi_datatype dt = k % 2 ? FI_UINT8 : FI_INT64;
		size_t bytes = counts[k] * (k % 2 ? 1 : 8);

		for (r = 0; r < n; r++) {
			if (r == root)
				fi_side_fill(buf[r], bytes, 100 + k);
			else
				memset(buf[r], 0, bytes);
			/* root_addr: the root's address in this member's AV (the same index) */
			CHECK(fi_broadcast(S[r].ep, buf[r], counts[k], NULL, ca[r], root, dt, 0,
					   NULL) == 0,
			      "broadcast %u member %u", k, r);
		}
		if (!all_ok(S, n, NULL, "broadcast"))
			return;
		for (r = 0; r < n; r++)
			CHECK(fi_side_same(buf[r], bytes, 100 + k), "broadcast from %u: member %u",
			      root, r);
	}
	CHECK(fi_broadcast(S[0].ep, buf[0], DAEMON_MAX + 1, NULL, ca[0], 0, FI_UINT8, 0, NULL) ==
		      -FI_EOPNOTSUPP,
	      "broadcast above 4 MiB");
	CHECK(fi_broadcast(S[0].ep, buf[0], 1, NULL, ca[0], 0, FI_LONG_DOUBLE, 0, NULL) ==
		      -FI_EOPNOTSUPP,
	      "broadcast of long double");
	CHECK(fi_allreduce(S[0].ep, buf[0], 1, NULL, buf[1], NULL, ca[0], FI_INT32, FI_PROD, 0,
			   NULL) == -FI_EOPNOTSUPP,
	      "FI_PROD");
	CHECK(fi_allreduce(S[0].ep, buf[0], DAEMON_MAX / 4 + 1, NULL, buf[1], NULL, ca[0], FI_INT32,
			   FI_SUM, 0, NULL) == -FI_EOPNOTSUPP,
	      "allreduce above 4 MiB");
	CHECK(fi_alltoall(S[0].ep, buf[0], 1, NULL, buf[1], NULL, ca[0], FI_INT32, 0, NULL) ==
		      -FI_ENOSYS,
	      "alltoall");
	CHECK(fi_allgather(S[0].ep, buf[0], 1, NULL, buf[1], NULL, ca[0], FI_INT32, 0, NULL) ==
		      -FI_ENOSYS,
	      "allgather");
	CHECK(fi_barrier(S[0].ep, 12345, NULL) == -FI_EINVAL, "barrier on no group");
}

/* Joins the set of all AV addresses on members [0, k); mc and coll addresses out. */
static void join_all(unsigned k, struct fid_mc **mc, fi_addr_t *ca, const char *what)
{
	struct fi_av_set_attr at = { .flags = FI_UNIVERSE };
	unsigned r;

	for (r = 0; r < k; r++) {
		struct fid_av_set *set;
		fi_addr_t sa;

		mc[r] = NULL;
		CHECK(fi_av_set(S[r].av, &at, &set, NULL) == 0, "%s: av_set %u", what, r);
		CHECK(fi_av_set_addr(set, &sa) == 0, "av_set_addr");
		CHECK(fi_join_collective(S[r].ep, sa, set, 0, &mc[r], &mc[r]) == 0, "%s: join %u",
		      what, r);
		fi_close(&set->fid); /* the group keeps its own list */
	}
	join_wait(eq, mc, k, what);
	for (r = 0; r < k; r++)
		ca[r] = mc[r] ? fi_mc_addr(mc[r]) : FI_ADDR_NOTAVAIL;
}

/*
 * Every member lists the members in its own order (member r starts at r and
 * goes backwards): the same group all the same. A sum of doubles whose bits
 * depend on the order of the additions is the same on every member, and a
 * broadcast from member 2 (named by address) reaches all. Without sorted
 * lists the ids differ (or the daemons' ranks do) and the joins or the
 * collectives fail.
 */
static void order(void)
{
	static double src[MAXN][CNT], dst[MAXN][CNT];
	static uint8_t buf[MAXN][3000];
	struct fi_av_set_attr at = { .flags = FI_UNIVERSE };
	struct fid_mc *mc[MAXN];
	fi_addr_t ca[MAXN];
	unsigned r, j, i;

	for (r = 0; r < n; r++) {
		struct fid_av_set *set;
		fi_addr_t sa;

		mc[r] = NULL;
		CHECK(fi_av_set(S[r].av, &at, &set, NULL) == 0, "order: av_set %u", r);
		for (j = 0; j < n; j++)
			CHECK(fi_av_set_remove(set, j) == 0, "order: remove");
		for (j = 0; j < n; j++)
			CHECK(fi_av_set_insert(set, (r + n - j) % n) == 0, "order: insert");
		CHECK(fi_av_set_addr(set, &sa) == 0, "order: av_set_addr");
		CHECK(fi_join_collective(S[r].ep, sa, set, 0, &mc[r], &mc[r]) == 0,
		      "order: join %u", r);
		fi_close(&set->fid);
	}
	join_wait(eq, mc, n, "order");
	for (r = 0; r < n; r++) {
		ca[r] = mc[r] ? fi_mc_addr(mc[r]) : FI_ADDR_NOTAVAIL;
		for (i = 0; i < CNT; i++)
			src[r][i] = (i + 1) * 1e-3 * (r % 3 ? 1e8 : 1.0) / (r + 3.0);
		CHECK(fi_allreduce(S[r].ep, src[r], CNT, NULL, dst[r], NULL, ca[r], FI_DOUBLE,
				   FI_SUM, 0, NULL) == 0,
		      "order: allreduce %u", r);
	}
	if (!all_ok(S, n, NULL, "order: allreduce"))
		return;
	for (r = 1; r < n; r++)
		CHECK(!memcmp(dst[r], dst[0], sizeof(dst[0])), "order: member %u's sum differs", r);
	for (r = 0; r < n; r++) {
		if (r == 2 % n)
			fi_side_fill(buf[r], sizeof(buf[r]), 77);
		else
			memset(buf[r], 0, sizeof(buf[r]));
		CHECK(fi_broadcast(S[r].ep, buf[r], sizeof(buf[r]), NULL, ca[r], 2 % n, FI_UINT8, 0,
				   NULL) == 0,
		      "order: broadcast %u", r);
	}
	if (all_ok(S, n, NULL, "order: broadcast"))
		for (r = 0; r < n; r++)
			CHECK(fi_side_same(buf[r], sizeof(buf[r]), 77),
			      "order: broadcast member %u", r);
	for (r = 0; r < n; r++)
		if (mc[r])
			fi_close(&mc[r]->fid);
}

/* ------------------------------------------------------------ death */

/*
 * The child: an endpoint on node `node`, the parent's addresses (n - 1) then
 * its own in its AV, the group joined; then it says so and waits to be killed.
 */
static void child(int rd, int wr, const char *sock)
{
	struct fi_side c = { 0 };
	struct fid_eq *q = NULL;
	struct fi_eq_attr ea = { 0 };
	struct fi_av_set_attr at = { .flags = FI_UNIVERSE };
	struct fid_av_set *set;
	struct fid_mc *mc = NULL;
	uint8_t a[MAXN][ADDRLEN];
	size_t len = ADDRLEN;
	fi_addr_t sa;
	char ok = 1;

	if (read(rd, a, (size_t)(n - 1) * ADDRLEN) != (ssize_t)((n - 1) * ADDRLEN))
		_exit(2);
	if (fi_side_open(&c, info, sock, FI_AV_TABLE, 0) || fi_eq_open(c.fab, &ea, &q, NULL) ||
	    fi_ep_bind(c.ep, &q->fid, 0) || fi_getname(&c.ep->fid, a[n - 1], &len))
		_exit(3);
	if (write(wr, a[n - 1], ADDRLEN) != ADDRLEN)
		_exit(4);
	if (fi_av_insert(c.av, a, n, NULL, 0, NULL) != (int)n || fi_av_set(c.av, &at, &set, NULL) ||
	    fi_av_set_addr(set, &sa) || fi_join_collective(c.ep, sa, set, 0, &mc, NULL))
		_exit(5);
	fails = 0;
	join_wait(q, &mc, 1, "child join");
	if (fails || write(wr, &ok, 1) != 1)
		_exit(6);
	for (;;)
		pause();
}

static void death(pid_t pid, int rd, int wr)
{
	uint8_t a[MAXN][ADDRLEN];
	struct fid_mc *mc[MAXN];
	fi_addr_t ch;
	static int64_t src[MAXN], dst[MAXN];
	int got[MAXN], status = 0;
	unsigned r, k = n - 1, errs = 0;
	size_t len;
	char ok = 0;

	for (r = 0; r < k; r++) {
		len = ADDRLEN;
		CHECK(fi_getname(&S[r].ep->fid, a[r], &len) == 0, "getname");
	}
	CHECK(write(wr, a, (size_t)k * ADDRLEN) == (ssize_t)(k * ADDRLEN), "to the child");
	CHECK(read(rd, a[k], ADDRLEN) == ADDRLEN, "the child's address");
	/* members 0..k-1 of ours, then the child: in every AV, fi_addr n is the child */
	for (r = 0; r < k; r++) {
		struct fid_av_set *set;
		struct fi_av_set_attr at = {
			.count = k, .start_addr = 0, .end_addr = k - 1, .stride = 1
		};
		fi_addr_t sa;

		CHECK(fi_av_insert(S[r].av, a[k], 1, &ch, 0, NULL) == 1, "insert the child");
		CHECK(fi_av_set(S[r].av, &at, &set, NULL) == 0 && fi_av_set_insert(set, ch) == 0,
		      "death set");
		fi_av_set_addr(set, &sa);
		mc[r] = NULL;
		CHECK(fi_join_collective(S[r].ep, sa, set, 0, &mc[r], NULL) == 0, "death join");
		fi_close(&set->fid);
	}
	join_wait(eq, mc, k, "death join");
	{
		/* the child's join ends once ours did: poll our CQs meanwhile (bounded) */
		uint64_t end = now_ms() + WAIT_MS;
		int g[MAXN];

		while (!ok && now_ms() < end) {
			struct pollfd pf = { .fd = rd, .events = POLLIN };

			collect(S, k, g, NULL, 10);
			if (poll(&pf, 1, 10) == 1 && read(rd, &ok, 1) != 1)
				break;
		}
	}
	CHECK(ok == 1, "the child joined");
	for (r = 0; r < k; r++) {
		src[r] = r;
		CHECK(fi_allreduce(S[r].ep, &src[r], 1, NULL, &dst[r], NULL, fi_mc_addr(mc[r]),
				   FI_INT64, FI_SUM, 0, NULL) == 0,
		      "death allreduce %u", r);
	}
	collect(S, k, got, NULL, 200); /* the survivors are in it, waiting for the child */
	for (r = 0; r < k; r++)
		CHECK(got[r] == 0, "member %u completed without the child (%d)", r, got[r]);
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	CHECK(collect(S, k, got, NULL, DEATH_MS) == k, "a survivor hangs after the death");
	for (r = 0; r < k; r++) {
		CHECK(got[r] < 0, "member %u: no error completion (%d)", r, got[r]);
		if (got[r] < 0) {
			errs++;
			printf("death: member %u ended with %s\n", r, fi_strerror(-got[r]));
		}
	}
	CHECK(errs == k, "%u of %u survivors got an error entry", errs, k);
	for (r = 0; r < k; r++)
		if (mc[r])
			fi_close(&mc[r]->fid);
}

int main(int argc, char **argv)
{
	struct fi_info *hints;
	const char *dir = getenv("DNP_RUN_DIR"), *nn = getenv("DNP_NNODES");
	struct fi_eq_attr ea = { 0 };
	struct fid_mc *mc[MAXN];
	fi_addr_t ca[MAXN];
	char sock[MAXN][4096];
	int p2c[2], c2p[2];
	pid_t pid;
	unsigned r;

	if (!dir || !nn) {
		fprintf(stderr, "fi_dnp_coll: run it under dnp-run (DNP_RUN_DIR, DNP_NNODES)\n");
		return 2;
	}
	if (getenv("DNP_NODE_ID") && strcmp(getenv("DNP_NODE_ID"), "0"))
		return 0; /* one instance does everything */
	n = (unsigned)atoi(nn);
	if (n < 2 || n > MAXN) {
		fprintf(stderr, "fi_dnp_coll: 2 to %d nodes (DNP_NNODES=%s)\n", MAXN, nn);
		return 2;
	}
	hints = fi_allocinfo();
	if (!hints)
		return 1;
	hints->caps = FI_MSG | FI_COLLECTIVE;
	hints->ep_attr->type = FI_EP_RDM;
	hints->fabric_attr->prov_name = strdup("dnp");
	if (fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info)) {
		fprintf(stderr, "fi_dnp_coll: fi_getinfo (provider dnp, FI_COLLECTIVE) failed\n");
		return 1;
	}
	for (r = 0; r < n; r++)
		snprintf(sock[r], sizeof(sock[r]), "%s/node-%u.sock", dir, r);
	/* the child before any session opens: it shares none of them */
	if (pipe(p2c) || pipe(c2p))
		return 1;
	pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		close(p2c[1]);
		close(c2p[0]);
		alarm(120); /* never outlives a broken parent */
		child(p2c[0], c2p[1], sock[n - 1]);
	}
	close(p2c[0]);
	close(c2p[1]);
	for (r = 0; r < n; r++)
		if (fi_side_open(&S[r], info, sock[r], FI_AV_TABLE, 0)) {
			fprintf(stderr, "fi_dnp_coll: endpoint on %s\n", sock[r]);
			kill(pid, SIGKILL);
			return 1;
		}
	CHECK(fi_eq_open(S[0].fab, &ea, &eq, NULL) == 0, "eq_open");
	for (r = 0; r < n; r++) {
		uint8_t a[MAXN][ADDRLEN];
		unsigned j;

		CHECK(fi_ep_bind(S[r].ep, &eq->fid, 0) == 0, "bind the EQ");
		for (j = 0; j < n; j++) {
			size_t len = ADDRLEN;

			CHECK(fi_getname(&S[j].ep->fid, a[j], &len) == 0, "getname");
		}
		CHECK(fi_av_insert(S[r].av, a, n, NULL, 0, NULL) == (int)n, "av_insert");
	}
	getinfo_query();
	av_sets();
	join_all(n, mc, ca, "join");
	allreduce(ca);
	barrier(ca);
	broadcast(ca);
	for (r = 0; r < n; r++)
		if (mc[r])
			fi_close(&mc[r]->fid);
	join_all(n, mc, ca, "rejoin"); /* the same list again: a new daemon group */
	barrier(ca);
	for (r = 0; r < n; r++)
		if (mc[r])
			fi_close(&mc[r]->fid);
	order();
	death(pid, c2p[0], p2c[1]);
	for (r = 0; r < n; r++)
		fi_side_close(&S[r]);
	fi_close(&eq->fid);
	fi_freeinfo(info);
	fi_freeinfo(hints);
	printf("%s fi_dnp_coll\n", fails ? "FAIL" : "PASS");
	return fails ? 1 : 0;
}
