/* SPDX-License-Identifier: MIT */
/*
 * mpi_pingpong: an MPI ping-pong between ranks 0 and 1 timed the way
 * dnp_pingpong times its PUTs (apps/dnp_pingpong.c): every round trip on its
 * own, half of it in microseconds, then the median, mean and p99 of the
 * samples. NetPIPE reports the best mean of a few batches instead, which
 * takes in the tail of the distribution (heavier over udp than over shm), so
 * NetPIPE minus the raw median mixes two statistics; this program gives MPI's
 * median to set against the raw median (bench/mpi-overhead.sh).
 *
 * Built by the bench with mpicc (not by meson: Open MPI's headers are
 * optional). usage: mpi_pingpong [BYTES [ITERS [WARMUP]]]
 * prints on rank 0: bytes,iterations,t_median_us,t_mean_us,t_p99_us
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* One round trip of len bytes; rank 0 returns its half in us, rank 1 returns 0. */
static double round_trip(int rank, char *buf, int len)
{
	double t0 = MPI_Wtime();

	if (rank == 0) {
		MPI_Send(buf, len, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
		MPI_Recv(buf, len, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		return (MPI_Wtime() - t0) * 1e6 / 2.0;
	}
	MPI_Recv(buf, len, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	MPI_Send(buf, len, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
	return 0.0;
}

int main(int argc, char **argv)
{
	int rank, size, len = argc > 1 ? atoi(argv[1]) : 8;
	int iters = argc > 2 ? atoi(argv[2]) : 10000;
	int warm = argc > 3 ? atoi(argv[3]) : 1000;
	double *v, sum = 0;
	char *buf;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (size < 2 || len < 0 || iters < 1 || warm < 0) {
		if (rank == 0)
			fprintf(stderr, "mpi_pingpong: 2 ranks, BYTES >= 0, ITERS >= 1\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	buf = calloc(1, (size_t)len + 1);
	v = calloc((size_t)iters, sizeof(*v));
	if (!buf || !v)
		MPI_Abort(MPI_COMM_WORLD, 1);
	if (rank < 2) {
		for (int i = 0; i < warm; i++)
			(void)round_trip(rank, buf, len);
		for (int i = 0; i < iters; i++)
			v[i] = round_trip(rank, buf, len);
	}
	if (rank == 0) {
		for (int i = 0; i < iters; i++)
			sum += v[i];
		qsort(v, (size_t)iters, sizeof(*v), cmp_double);
		printf("bytes,iterations,t_median_us,t_mean_us,t_p99_us\n");
		printf("%d,%d,%.3f,%.3f,%.3f\n", len, iters,
		       iters % 2 ? v[iters / 2] : (v[iters / 2 - 1] + v[iters / 2]) / 2,
		       sum / iters, v[(size_t)((double)iters * 0.99)]);
	}
	free(v);
	free(buf);
	MPI_Finalize();
	return 0;
}
