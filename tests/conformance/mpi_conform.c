/* SPDX-License-Identifier: MIT */
/*
 * mpi_conform — MPI behaviours a libfabric provider must carry under Open
 * MPI's ofi MTL, run unchanged over the provider "dnp" and a reference.
 *
 *   mpi_conform all|TEST...   (an even number of ranks, 2 or more)
 *
 *   mprobe         MPI_Improbe until a message is there, MPI_Mprobe, MPI_Mrecv,
 *                  MPI_Get_count; messages of several sizes and tags, any source
 *   issend-cancel  MPI_Issend does not complete before its receive is posted;
 *                  a posted MPI_Irecv canceled is MPI_Test_cancelled (canceling an
 *                  MPI_Issend is left out: Open MPI 4.1's ofi MTL crashes in it)
 *   alltoallw      MPI_Alltoallw with a count and a datatype per peer
 *   osc            MPI_Put, MPI_Get, MPI_Accumulate in a window (fence and
 *                  passive target lock/unlock)
 *   ranks          every rank with every other: MPI_Sendrecv round-robin and
 *                  MPI_Allreduce (run with several ranks per node)
 *   accept-connect MPI_Open_port, MPI_Comm_accept/MPI_Comm_connect between the
 *                  two halves of MPI_COMM_WORLD, then a message each way
 * Rank 0 prints "PASS TEST" or "FAIL TEST" for each, then a summary line;
 * exit 0 when all passed, 1 otherwise, 2 on bad usage.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

static int rank, nranks, fails;

#define CHECK(c, ...)                                                                          \
	do {                                                                                   \
		if (!(c)) {                                                                    \
			fprintf(stderr, "rank %d: check failed (%s:%d): %s: ", rank, __FILE__, \
				__LINE__, #c);                                                 \
			fprintf(stderr, __VA_ARGS__);                                          \
			fputc('\n', stderr);                                                   \
			fails++;                                                               \
		}                                                                              \
	} while (0)

static int val(int from, int to, int i)
{
	return from * 1000003 + to * 10007 + i;
}

static void t_mprobe(void)
{
	int peer = rank ^ 1, sizes[] = { 1, 100, 3000, 70000 }, n = 4;

	if (rank % 2 == 0) {
		/* Nonblocking: a large MPI_Send may wait for its receive, posted last here. */
		MPI_Request rq[4];
		int *b[4];

		for (int k = 0; k < n; k++) {
			b[k] = malloc(sizeof(int) * (size_t)sizes[k]);
			for (int i = 0; i < sizes[k]; i++)
				b[k][i] = val(rank, peer, i + k);
			MPI_Isend(b[k], sizes[k], MPI_INT, peer, 10 + k, MPI_COMM_WORLD, &rq[k]);
		}
		MPI_Waitall(n, rq, MPI_STATUSES_IGNORE);
		for (int k = 0; k < n; k++)
			free(b[k]);
		return;
	}
	/* Receive them in reverse tag order: improbe for odd k, mprobe for even. */
	for (int k = n - 1; k >= 0; k--) {
		MPI_Message msg;
		MPI_Status st;
		int flag = 0, count = -1, *b;

		if (k % 2) {
			double t0 = MPI_Wtime();

			while (!flag && MPI_Wtime() - t0 < 30)
				MPI_Improbe(MPI_ANY_SOURCE, 10 + k, MPI_COMM_WORLD, &flag, &msg,
					    &st);
			CHECK(flag, "MPI_Improbe never found tag %d", 10 + k);
			if (!flag)
				return;
		} else {
			MPI_Mprobe(MPI_ANY_SOURCE, 10 + k, MPI_COMM_WORLD, &msg, &st);
		}
		MPI_Get_count(&st, MPI_INT, &count);
		CHECK(count == sizes[k] && st.MPI_SOURCE == peer && st.MPI_TAG == 10 + k,
		      "probe: count %d source %d tag %d", count, st.MPI_SOURCE, st.MPI_TAG);
		b = calloc((size_t)sizes[k], sizeof(int));
		MPI_Mrecv(b, sizes[k], MPI_INT, &msg, &st);
		CHECK(msg == MPI_MESSAGE_NULL, "MPI_Mrecv leaves the message handle");
		for (int i = 0; i < sizes[k]; i++)
			if (b[i] != val(peer, rank, i + k)) {
				CHECK(0, "message %d: element %d differs", k, i);
				break;
			}
		free(b);
	}
	/* Nothing left: improbe finds nothing. */
	{
		MPI_Message msg;
		int flag = 1;

		MPI_Improbe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &msg,
			    MPI_STATUS_IGNORE);
		CHECK(!flag, "MPI_Improbe finds a message that was received");
	}
}

static void t_issend_cancel(void)
{
	int peer = rank ^ 1, x = 0, flag = 0, cancelled = -1;
	MPI_Request rq;
	double t0;

	if (rank % 2 == 0) {
		/* A synchronous send cannot complete before its receive is posted. */
		x = 4242;
		MPI_Issend(&x, 1, MPI_INT, peer, 7, MPI_COMM_WORLD, &rq);
		for (t0 = MPI_Wtime(); MPI_Wtime() - t0 < 0.3 && !flag;)
			MPI_Test(&rq, &flag, MPI_STATUS_IGNORE);
		CHECK(!flag, "MPI_Issend completed before any receive was posted");
		MPI_Send(&x, 1, MPI_INT, peer, 8, MPI_COMM_WORLD); /* "post it now" */
		MPI_Wait(&rq, MPI_STATUS_IGNORE);
	} else {
		MPI_Recv(&x, 1, MPI_INT, peer, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		MPI_Recv(&x, 1, MPI_INT, peer, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		CHECK(x == 4242, "Issend data %d", x);
	}
	/* A posted receive that nothing matches is canceled. */
	MPI_Irecv(&x, 1, MPI_INT, peer, 999, MPI_COMM_WORLD, &rq);
	MPI_Cancel(&rq);
	{
		MPI_Status st;

		MPI_Wait(&rq, &st);
		MPI_Test_cancelled(&st, &cancelled);
		CHECK(cancelled, "a canceled MPI_Irecv is not MPI_Test_cancelled");
	}
	/* Nothing canceled arrives later. */
	MPI_Barrier(MPI_COMM_WORLD);
	{
		int f = 1;

		MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &f, MPI_STATUS_IGNORE);
		CHECK(!f, "a message is left over");
	}
}

static void t_alltoallw(void)
{
	int n = nranks, *sc = calloc((size_t)n, sizeof(int)), *rc = calloc((size_t)n, sizeof(int));
	int *sd = calloc((size_t)n, sizeof(int)), *rd = calloc((size_t)n, sizeof(int));
	MPI_Datatype *st = calloc((size_t)n, sizeof(*st)), *rt = calloc((size_t)n, sizeof(*rt));
	MPI_Datatype pair;
	int stot = 0, rtot = 0, *sb, *rb;

	/* To peer j: (rank + j) % 3 + 1 items; an item is an int, or to odd peers a pair. */
	MPI_Type_contiguous(2, MPI_INT, &pair);
	MPI_Type_commit(&pair);
	for (int j = 0; j < n; j++) {
		int w = (j % 2) ? 2 : 1, wr = (rank % 2) ? 2 : 1;

		sc[j] = (rank + j) % 3 + 1;
		st[j] = w == 2 ? pair : MPI_INT;
		sd[j] = stot * (int)sizeof(int);
		stot += sc[j] * w;
		rc[j] = (j + rank) % 3 + 1;
		rt[j] = wr == 2 ? pair : MPI_INT;
		rd[j] = rtot * (int)sizeof(int);
		rtot += rc[j] * wr;
	}
	sb = malloc(sizeof(int) * (size_t)stot);
	rb = calloc((size_t)rtot, sizeof(int));
	for (int j = 0, o = 0; j < n; j++)
		for (int i = 0; i < sc[j] * ((j % 2) ? 2 : 1); i++)
			sb[o++] = val(rank, j, i);
	MPI_Alltoallw(sb, sc, sd, st, rb, rc, rd, rt, MPI_COMM_WORLD);
	for (int j = 0, o = 0; j < n; j++)
		for (int i = 0; i < rc[j] * ((rank % 2) ? 2 : 1); i++, o++)
			if (rb[o] != val(j, rank, i)) {
				CHECK(0, "from %d element %d: %d", j, i, rb[o]);
				j = n;
				break;
			}
	MPI_Type_free(&pair);
	free(sc), free(rc), free(sd), free(rd), free(st), free(rt), free(sb), free(rb);
}

#define WN 4096

static void t_osc(void)
{
	int *base, *got = calloc(WN, sizeof(int)), *put = malloc(WN * sizeof(int));
	int right = (rank + 1) % nranks, left = (rank + nranks - 1) % nranks, one = 1, sum;
	MPI_Win win;

	MPI_Win_allocate(3 * WN * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &base,
			 &win);
	/* Fence epoch: Put into the right neighbour's first third. */
	MPI_Win_fence(0, win);
	for (int i = 0; i < 3 * WN; i++)
		base[i] = i < WN ? -1 : val(rank, 0, i);
	MPI_Win_fence(0, win);
	for (int i = 0; i < WN; i++)
		put[i] = val(rank, right, i);
	MPI_Put(put, WN, MPI_INT, right, 0, WN, MPI_INT, win);
	/* Get the left neighbour's second third. */
	MPI_Get(got, WN, MPI_INT, left, WN, WN, MPI_INT, win);
	MPI_Win_fence(0, win);
	for (int i = 0; i < WN; i++) {
		if (base[i] != val(left, rank, i)) {
			CHECK(0, "MPI_Put: element %d is %d", i, base[i]);
			break;
		}
		if (got[i] != val(left, 0, WN + i)) {
			CHECK(0, "MPI_Get: element %d is %d", i, got[i]);
			break;
		}
	}
	/* Passive target: every rank adds 1 and its rank into rank 0's last third. */
	if (rank == 0) {
		MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
		base[2 * WN] = 0;
		base[2 * WN + 1] = 0;
		MPI_Win_unlock(0, win);
	}
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
	MPI_Accumulate(&one, 1, MPI_INT, 0, 2 * WN, 1, MPI_INT, MPI_SUM, win);
	MPI_Accumulate(&rank, 1, MPI_INT, 0, 2 * WN + 1, 1, MPI_INT, MPI_SUM, win);
	MPI_Win_unlock(0, win);
	MPI_Barrier(MPI_COMM_WORLD);
	if (rank == 0) {
		MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
		sum = base[2 * WN + 1];
		CHECK(base[2 * WN] == nranks, "MPI_Accumulate: count %d of %d", base[2 * WN],
		      nranks);
		CHECK(sum == nranks * (nranks - 1) / 2, "MPI_Accumulate: sum %d", sum);
		MPI_Win_unlock(0, win);
	}
	MPI_Win_free(&win);
	free(got);
	free(put);
}

static void t_ranks(void)
{
	int n = nranks, sum = 0;
	int *out = malloc(sizeof(int) * 512), *in = malloc(sizeof(int) * 512);

	/* Round-robin: in round r every rank exchanges with (rank + r) and (rank - r). */
	for (int r = 1; r < n; r++) {
		int to = (rank + r) % n, from = (rank + n - r) % n;

		for (int i = 0; i < 512; i++)
			out[i] = val(rank, to, i);
		MPI_Sendrecv(out, 512, MPI_INT, to, r, in, 512, MPI_INT, from, r, MPI_COMM_WORLD,
			     MPI_STATUS_IGNORE);
		for (int i = 0; i < 512; i++)
			if (in[i] != val(from, rank, i)) {
				CHECK(0, "round %d from %d: element %d", r, from, i);
				break;
			}
	}
	MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	CHECK(sum == n * (n - 1) / 2, "MPI_Allreduce: %d", sum);
	free(out);
	free(in);
}

static void t_accept_connect(void)
{
	char port[MPI_MAX_PORT_NAME] = "";
	int half = nranks / 2, side = rank >= half, x;
	MPI_Comm sub, inter;

	MPI_Comm_split(MPI_COMM_WORLD, side, rank, &sub);
	if (rank == 0) {
		MPI_Open_port(MPI_INFO_NULL, port);
		MPI_Send(port, MPI_MAX_PORT_NAME, MPI_CHAR, half, 1, MPI_COMM_WORLD);
	} else if (rank == half) {
		MPI_Recv(port, MPI_MAX_PORT_NAME, MPI_CHAR, 0, 1, MPI_COMM_WORLD,
			 MPI_STATUS_IGNORE);
	}
	if (side == 0)
		MPI_Comm_accept(port, MPI_INFO_NULL, 0, sub, &inter);
	else
		MPI_Comm_connect(port, MPI_INFO_NULL, 0, sub, &inter);
	{
		int rsize = 0, lrank;

		MPI_Comm_remote_size(inter, &rsize);
		CHECK(rsize == (side ? half : nranks - half), "remote size %d", rsize);
		MPI_Comm_rank(sub, &lrank);
		/* Local rank i of each side exchanges with remote rank i. */
		if (lrank < rsize) {
			int mine = val(rank, 0, 0);

			MPI_Sendrecv(&mine, 1, MPI_INT, lrank, 3, &x, 1, MPI_INT, lrank, 3, inter,
				     MPI_STATUS_IGNORE);
			CHECK(x == val(side ? lrank : lrank + half, 0, 0), "intercomm message %d",
			      x);
		}
	}
	MPI_Comm_disconnect(&inter);
	if (rank == 0)
		MPI_Close_port(port);
	MPI_Comm_free(&sub);
}

static const struct {
	const char *name;
	void (*fn)(void);
} tests[] = {
	{ "mprobe", t_mprobe },       { "issend-cancel", t_issend_cancel },
	{ "alltoallw", t_alltoallw }, { "osc", t_osc },
	{ "ranks", t_ranks },         { "accept-connect", t_accept_connect },
};

/* Runs test I; rank 0 prints its outcome. Returns the failed checks of all ranks. */
static int run(size_t i)
{
	int all = 0;
	double t0 = MPI_Wtime();

	fails = 0;
	tests[i].fn();
	MPI_Allreduce(&fails, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	if (rank == 0)
		printf("%s %s (%d ranks, %.2f s)\n", all ? "FAIL" : "PASS", tests[i].name, nranks,
		       MPI_Wtime() - t0);
	fflush(stdout);
	return all;
}

int main(int argc, char **argv)
{
	size_t nt = sizeof(tests) / sizeof(tests[0]), i;
	int bad = 0, k;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	for (k = 1; k < argc; k++) {
		for (i = 0; i < nt && strcmp(argv[k], tests[i].name); i++)
			;
		if (i == nt && strcmp(argv[k], "all"))
			break;
	}
	if (argc < 2 || k < argc || nranks < 2 || nranks % 2) {
		if (rank == 0)
			fprintf(stderr, "usage: mpirun -np EVEN mpi_conform all|TEST...\n");
		MPI_Finalize();
		return 2;
	}
	for (k = 1; k < argc; k++)
		for (i = 0; i < nt; i++)
			if (!strcmp(argv[k], "all") || !strcmp(argv[k], tests[i].name))
				bad += run(i) != 0;
	if (rank == 0)
		printf("%s mpi_conform: %d failed\n", bad ? "FAIL" : "PASS", bad);
	MPI_Finalize();
	return bad ? 1 : 0;
}
