/* SPDX-License-Identifier: MIT */
/*
 * mpi_check — a small Open MPI program for the Slurm test (slurm.sh): every
 * rank sends 64 KiB of a pattern of its own to the next rank of a ring
 * (MPI_Sendrecv) and checks what the previous rank sent, then an
 * MPI_Alltoall of one int per pair and an MPI_Allreduce are checked too.
 * Each rank prints "mpi_check: rank R of N on DNP_COORD ok" or what failed;
 * exit 0 only when every rank's checks passed (MPI_Allreduce of the
 * failures). Built by the test with mpicc; nothing in it knows SoftDNP.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define MPI_CHECK_BYTES 65536

static uint8_t pattern(int rank, int i)
{
	return (uint8_t)(rank * 131 + i * 7 + (i >> 8));
}

int main(int argc, char **argv)
{
	static uint8_t out[MPI_CHECK_BYTES], in[MPI_CHECK_BYTES];
	int rank, size, bad = 0, allbad = 0, sum = 0;
	const char *coord = getenv("DNP_COORD");
	int *a2a_out, *a2a_in;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	for (int i = 0; i < MPI_CHECK_BYTES; i++)
		out[i] = pattern(rank, i);
	MPI_Sendrecv(out, MPI_CHECK_BYTES, MPI_BYTE, (rank + 1) % size, 1, in, MPI_CHECK_BYTES,
		     MPI_BYTE, (rank + size - 1) % size, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	for (int i = 0; i < MPI_CHECK_BYTES; i++)
		if (in[i] != pattern((rank + size - 1) % size, i)) {
			fprintf(stderr, "mpi_check: rank %d: ring byte %d wrong\n", rank, i);
			bad = 1;
			break;
		}
	a2a_out = malloc(sizeof(int) * (size_t)size);
	a2a_in = malloc(sizeof(int) * (size_t)size);
	if (!a2a_out || !a2a_in)
		MPI_Abort(MPI_COMM_WORLD, 2);
	for (int r = 0; r < size; r++)
		a2a_out[r] = rank * 1000 + r;
	MPI_Alltoall(a2a_out, 1, MPI_INT, a2a_in, 1, MPI_INT, MPI_COMM_WORLD);
	for (int r = 0; r < size; r++)
		if (a2a_in[r] != r * 1000 + rank) {
			fprintf(stderr, "mpi_check: rank %d: alltoall from %d wrong\n", rank, r);
			bad = 1;
		}
	MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	if (sum != size * (size - 1) / 2) {
		fprintf(stderr, "mpi_check: rank %d: allreduce %d\n", rank, sum);
		bad = 1;
	}
	MPI_Allreduce(&bad, &allbad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
	printf("mpi_check: rank %d of %d on %s %s\n", rank, size, coord ? coord : "?",
	       bad ? "FAILED" : "ok");
	free(a2a_out);
	free(a2a_in);
	MPI_Finalize();
	return allbad ? 1 : 0;
}
