# SPDX-License-Identifier: MIT
"""Python MPI programs (Debian's python3-mpi4py), run unchanged over the
provider "dnp" and a reference provider: mpirun -np EVEN python3 mpi_conform.py

  objects    comm.send/comm.recv of Python objects of many sizes (mpi4py
             receives them with MPI_Mprobe/MPI_Mrecv), isend/irecv of objects,
             bcast/gather/alltoall of objects
  mprobe     comm.mprobe/comm.improbe and Message.recv, any source and tag
  blocking   plain blocking comm.Send/comm.Recv of buffers from 1 B to 1 MiB,
             and comm.Sendrecv around a ring
Rank 0 prints PASS/FAIL per part and a summary; the exit status is 0 when all
passed, 1 otherwise.
"""
import sys
import time

from mpi4py import MPI

comm = MPI.COMM_WORLD
rank = comm.Get_rank()
size = comm.Get_size()
peer = rank ^ 1
fails = 0


def check(cond, what):
    global fails
    if not cond:
        print(f"rank {rank}: check failed: {what}", file=sys.stderr, flush=True)
        fails += 1


def obj(src, dst, n):
    """A Python object whose content depends on sender, receiver and size."""
    return {"from": src, "to": dst, "n": n, "blob": bytes((src * 7 + i) % 251 for i in range(n)),
            "list": list(range(n % 97)), "nested": ((src, dst), {"f": 1.5 * n})}


def t_objects():
    for n in (0, 10, 1000, 40000, 300000):
        if rank % 2 == 0:
            comm.send(obj(rank, peer, n), dest=peer, tag=n % 1000)
            back = comm.recv(source=peer, tag=n % 1000 + 1)
            check(back == obj(peer, rank, n), f"reply of {n} bytes differs")
        else:
            got = comm.recv(source=MPI.ANY_SOURCE, tag=n % 1000)
            check(got == obj(peer, rank, n), f"object of {n} bytes differs")
            comm.send(obj(rank, peer, n), dest=peer, tag=n % 1000 + 1)
    reqs = [comm.isend(obj(rank, peer, n), dest=peer, tag=50 + i)
            for i, n in enumerate((5, 5000, 70000))]
    for i, n in enumerate((5, 5000, 70000)):
        check(comm.irecv(buf=200000, source=peer, tag=50 + i).wait() == obj(peer, rank, n),
              f"irecv of {n} bytes differs")
    MPI.Request.waitall(reqs)
    root = comm.bcast({"root": 0, "data": list(range(100))} if rank == 0 else None, root=0)
    check(root == {"root": 0, "data": list(range(100))}, "bcast object differs")
    everyone = comm.gather((rank, "x" * rank), root=0)
    if rank == 0:
        check(everyone == [(r, "x" * r) for r in range(size)], "gather differs")
    got = comm.alltoall([(rank, j) for j in range(size)])
    check(got == [(j, rank) for j in range(size)], "alltoall of objects differs")


def t_mprobe():
    if rank % 2 == 0:
        # isend: a large blocking send may wait for its receive, posted last here
        MPI.Request.waitall([comm.isend(obj(rank, peer, 10 ** k), dest=peer, tag=20 + k)
                             for k in range(4)])
        return
    for k in (3, 2, 1, 0):
        if k % 2:
            t0 = time.time()
            msg = None
            while msg is None and time.time() - t0 < 30:
                msg = comm.improbe(source=MPI.ANY_SOURCE, tag=20 + k)
            check(msg is not None, f"improbe never found tag {20 + k}")
            if msg is None:
                return
        else:
            st = MPI.Status()
            msg = comm.mprobe(source=MPI.ANY_SOURCE, tag=20 + k, status=st)
            check(st.Get_source() == peer and st.Get_tag() == 20 + k,
                  f"mprobe status {st.Get_source()} {st.Get_tag()}")
        check(msg.recv() == obj(peer, rank, 10 ** k), f"message {k} differs")
    check(comm.improbe(source=MPI.ANY_SOURCE, tag=MPI.ANY_TAG) is None,
          "improbe finds a message that was received")


def pattern(src, n):
    return bytearray((src * 13 + i * 7 + (i >> 8)) & 255 for i in range(n))


def t_blocking():
    for n in (1, 100, 4096, 65536, 1 << 20):
        buf = bytearray(n)
        if rank % 2 == 0:
            comm.Send([pattern(rank, n), MPI.BYTE], dest=peer, tag=3)
            comm.Recv([buf, MPI.BYTE], source=peer, tag=4)
        else:
            comm.Recv([buf, MPI.BYTE], source=peer, tag=3)
            comm.Send([pattern(rank, n), MPI.BYTE], dest=peer, tag=4)
        check(buf == pattern(peer, n), f"blocking Send/Recv of {n} bytes differs")
    right, left = (rank + 1) % size, (rank - 1) % size
    buf = bytearray(10000)
    comm.Sendrecv([pattern(rank, 10000), MPI.BYTE], dest=right, recvbuf=[buf, MPI.BYTE],
                  source=left)
    check(buf == pattern(left, 10000), "Sendrecv around the ring differs")


def main():
    parts = {"objects": t_objects, "mprobe": t_mprobe, "blocking": t_blocking}
    names = sys.argv[1:] or list(parts)
    if size < 2 or size % 2 or any(n not in parts for n in names):
        if rank == 0:
            print("usage: mpirun -np EVEN python3 mpi_conform.py [objects|mprobe|blocking]...",
                  file=sys.stderr)
        return 2
    bad = 0
    global fails
    for name in names:
        fails = 0
        t0 = time.time()
        parts[name]()
        failed = comm.allreduce(fails)
        bad += failed != 0
        if rank == 0:
            print(f"{'FAIL' if failed else 'PASS'} py-{name} ({size} ranks, "
                  f"{time.time() - t0:.2f} s)", flush=True)
    if rank == 0:
        print(f"{'FAIL' if bad else 'PASS'} mpi_conform.py: {bad} failed", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
