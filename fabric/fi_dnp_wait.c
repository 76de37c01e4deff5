/* SPDX-License-Identifier: MIT */
/*
 * fi_dnp_wait — a thread that sleeps in a CQ read must not keep the others
 * of its process from the provider (docs/mpi.md, "The wait: placement from
 * libdnp, a sleep without the lock"). Run under dnp-run (2x1x1 or larger)
 * with DNP_FI_WAIT=block, so that every idle step of a CQ read sleeps, as in
 * a blocking window beside busy processes. One process, FI_THREAD_SAFE:
 * endpoints A and C on node 0 (two sessions), B on the last node. A waiter
 * thread posts one tagged receive on A (tag STOP) and reads A's CQ with
 * fi_cq_sread until it ends: no event comes to A meanwhile, so each of its
 * sleeps lasts the whole 1 ms. The main thread sends ROUNDS 8-byte tagged
 * messages from C to B, one at a time, each received by a receive posted on
 * B first, and times each from the post to both completions read. The provider's lock is shared by all its domains: a
 * waiter that slept holding it (up to 1 ms per sleep, retaken at once) held
 * the main thread back for a millisecond or more per message.
 * Checks: every send completes, the median send-to-completion stays under
 * BOUND_US (default 500, argument 1), the waiter gets its STOP message.
 * Prints the median and the worst time and "PASS fi_dnp_wait".
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include "fi_side.h"

#define ROUNDS 500
#define TAG_DATA 1u
#define TAG_STOP 2u

static struct fi_side A, B, C; /* A: the reader's; C sends to B (and STOP to A) */
static fi_addr_t c_to_a;
static atomic_int waiter_state; /* 0 starting, 1 reading, 2 got STOP, -1 failed */

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Reads A's CQ, sleeping in the provider, until its one receive (STOP) ends; 30 s at most. */
static void *waiter(void *arg)
{
	static uint64_t buf;
	struct fi_cq_tagged_entry e;
	double end = now_us() + 30e6;
	ssize_t r;

	(void)arg;
	r = fi_trecv(A.ep, &buf, sizeof(buf), NULL, FI_ADDR_UNSPEC, TAG_STOP, 0, &buf);
	if (r) {
		atomic_store(&waiter_state, -1);
		return NULL;
	}
	atomic_store(&waiter_state, 1);
	while (now_us() < end) {
		r = fi_cq_sread(A.cq, &e, 1, NULL, 100);
		if (r == 1 && e.tag == TAG_STOP) {
			atomic_store(&waiter_state, 2);
			return NULL;
		}
		if (r != -FI_EAGAIN && r != 1)
			break;
	}
	atomic_store(&waiter_state, -1);
	return NULL;
}

/* Reads cq until one entry comes (5 s at most): 1, or 0. */
static int read_one(struct fid_cq *cq, double t0)
{
	struct fi_cq_tagged_entry e;
	ssize_t r;

	do
		r = fi_cq_read(cq, &e, 1);
	while (r == -FI_EAGAIN && now_us() - t0 < 5e6);
	return r == 1;
}

/*
 * One 8-byte tagged message from C to dest (B: a receive posted there
 * first), both ends' completions read: its time in us, or -1.
 */
static double send_one(fi_addr_t dest, uint64_t tag)
{
	static uint64_t v, in;
	double t0 = now_us();
	ssize_t r;

	if (tag == TAG_DATA &&
	    fi_trecv(B.ep, &in, sizeof(in), NULL, FI_ADDR_UNSPEC, TAG_DATA, 0, &in) != 0)
		return -1;
	do
		r = fi_tsend(C.ep, &v, sizeof(v), NULL, dest, tag, &v);
	while (r == -FI_EAGAIN && now_us() - t0 < 5e6);
	if (r || !read_one(C.cq, t0))
		return -1;
	if (tag == TAG_DATA && !read_one(B.cq, t0))
		return -1;
	return now_us() - t0;
}

static void run(double bound)
{
	static double t[ROUNDS];
	pthread_t th;
	double t0, sum = 0;
	unsigned i, done = 0;

	CHECK(pthread_create(&th, NULL, waiter, NULL) == 0, "pthread_create");
	t0 = now_us();
	while (atomic_load(&waiter_state) == 0 && now_us() - t0 < 5e6)
		;
	/* let the waiter reach its sleeps */
	t0 = now_us();
	while (now_us() - t0 < 20e3)
		;
	for (i = 0; i < ROUNDS; i++) {
		t[i] = send_one(C.peer, TAG_DATA);
		if (t[i] < 0)
			break;
		done++;
	}
	CHECK(done == ROUNDS, "%u of %u sends completed", done, ROUNDS);
	CHECK(send_one(c_to_a, TAG_STOP) >= 0, "the STOP message completed");
	pthread_join(th, NULL);
	CHECK(atomic_load(&waiter_state) == 2, "the waiter got its STOP message");
	if (!done)
		return;
	for (i = 0; i < done; i++)
		sum += t[i];
	qsort(t, done, sizeof(t[0]), cmp_double);
	printf("send to completion beside a sleeping reader (us): median %.1f, p90 %.1f, p99 %.1f, "
	       "worst %.1f, mean %.1f (%u sends; bound on p90 and mean %.0f us)\n",
	       t[done / 2], t[done * 9 / 10], t[done * 99 / 100], t[done - 1], sum / done, done,
	       bound);
	CHECK(t[done * 9 / 10] < bound, "p90 %.1f us over the bound %.0f us", t[done * 9 / 10],
	      bound);
	CHECK(sum / done < bound, "mean %.1f us over the bound %.0f us", sum / done, bound);
}

int main(int argc, char **argv)
{
	struct fi_info *hints, *info = NULL;
	const char *dir = getenv("DNP_RUN_DIR"), *nn = getenv("DNP_NNODES");
	char sa[4096], sb[4096];
	uint8_t addr[64];
	size_t len;
	double bound = argc > 1 ? atof(argv[1]) : 500;

	if (!dir || !nn) {
		fprintf(stderr, "fi_dnp_wait: run it under dnp-run (DNP_RUN_DIR, DNP_NNODES)\n");
		return 2;
	}
	if (getenv("DNP_NODE_ID") && strcmp(getenv("DNP_NODE_ID"), "0"))
		return 0; /* one instance does everything */
	hints = fi_allocinfo();
	if (!hints)
		return 1;
	hints->caps = FI_TAGGED | FI_MSG;
	hints->ep_attr->type = FI_EP_RDM;
	hints->fabric_attr->prov_name = strdup("dnp");
	hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_PROV_KEY | FI_MR_ALLOCATED;
	hints->domain_attr->threading = FI_THREAD_SAFE;
	if (fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info)) {
		fprintf(stderr, "fi_dnp_wait: fi_getinfo (provider dnp) failed\n");
		return 1;
	}
	CHECK(info->domain_attr->threading == FI_THREAD_SAFE, "FI_THREAD_SAFE granted");
	snprintf(sa, sizeof(sa), "%s/node-0.sock", dir);
	snprintf(sb, sizeof(sb), "%s/node-%d.sock", dir, atoi(nn) - 1);
	if (fi_side_open(&A, info, sa, FI_AV_TABLE, 0) ||
	    fi_side_open(&B, info, sb, FI_AV_TABLE, 0) ||
	    fi_side_open(&C, info, sa, FI_AV_TABLE, 0))
		return 1;
	len = sizeof(addr);
	CHECK(fi_getname(&B.ep->fid, addr, &len) == 0, "getname");
	CHECK(fi_av_insert(C.av, addr, 1, &C.peer, 0, NULL) == 1, "av_insert");
	len = sizeof(addr);
	CHECK(fi_getname(&A.ep->fid, addr, &len) == 0, "getname");
	CHECK(fi_av_insert(C.av, addr, 1, &c_to_a, 0, NULL) == 1, "av_insert");
	len = sizeof(addr);
	CHECK(fi_getname(&C.ep->fid, addr, &len) == 0, "getname");
	CHECK(fi_av_insert(B.av, addr, 1, &B.peer, 0, NULL) == 1, "av_insert");
	CHECK(fi_av_insert(A.av, addr, 1, &A.peer, 0, NULL) == 1, "av_insert");
	if (!fails)
		run(bound);
	fi_side_close(&A);
	fi_side_close(&B);
	fi_side_close(&C);
	fi_freeinfo(info);
	fi_freeinfo(hints);
	printf("%s fi_dnp_wait\n", fails ? "FAIL" : "PASS");
	return fails ? 1 : 0;
}
