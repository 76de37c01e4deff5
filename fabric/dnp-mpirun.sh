#!/bin/sh
# SPDX-License-Identifier: MIT
# Run by dnp-run on every torus node (see `./dnp mpirun`, docs/mpi.md):
# node 0 starts Open MPI's mpirun with the libfabric provider "dnp"; the
# other nodes' instances exit at once (their daemons keep running until
# mpirun is done). Rank r talks to node r mod DNP_NNODES's daemon
# (DNP_FI_RUN_DIR/node-<id>.sock, chosen by the provider).
# Environment: DNP_MPI_NP (ranks), DNP_FI_DIR (directory of libdnp-fi.so),
# DNP_MPI_ARGS (extra mpirun arguments, word-split), DNP_MPI_PIN=1 (under
# `dnp-run --pin`: rank r runs on the CPU dnp-run gives node r mod DNP_NNODES's
# program, the next one after its daemon's; the provider learns from libdnp
# that it waits there and makes the pinned hand-off: docs/mpi.md, "MPI over
# udp", "The wait: placement from libdnp"). dnp-run's CPUs are taken to be
# all online CPUs. A provider older than that query needs DNP_FI_HANDOFF=pin
# given to the ranks (DNP_MPI_ARGS="-x DNP_FI_HANDOFF").
ncpu=$(getconf _NPROCESSORS_ONLN)
if [ "${1:-}" = --dnp-pin-rank ]; then
	shift
	cpu=$(((${OMPI_COMM_WORLD_RANK:-0} % ${DNP_FI_NNODES:-1} + 1) % ncpu))
	exec taskset -c "$cpu" "$@"
fi
[ "$DNP_NODE_ID" = 0 ] || exit 0
DNP_FI_RUN_DIR=$DNP_RUN_DIR
DNP_FI_NNODES=$DNP_NNODES
FI_PROVIDER_PATH=$DNP_FI_DIR
FI_PROVIDER=dnp
export DNP_FI_RUN_DIR DNP_FI_NNODES FI_PROVIDER_PATH FI_PROVIDER
unset DNP_SOCKET
np=${DNP_MPI_NP:-$DNP_NNODES}
root='' over='' pin=''
[ "$(id -u)" -eq 0 ] && root=--allow-run-as-root
if [ "${DNP_MPI_PIN:-0}" = 1 ]; then
	# dnp-run pinned us to one CPU: mpirun gets them all back, each rank its own
	pin="taskset -c 0-$((ncpu - 1))"
	set -- "$0" --dnp-pin-rank "$@"
else
	ncpu=$(nproc)
fi
# More ranks than cores: allowed, and Open MPI then yields when idle.
[ "$np" -gt "$ncpu" ] && over=--oversubscribe
# shellcheck disable=SC2086
exec $pin mpirun $root $over --bind-to none -np "$np" \
	--mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include dnp \
	-x DNP_FI_RUN_DIR -x DNP_FI_NNODES -x FI_PROVIDER_PATH -x FI_PROVIDER \
	${DNP_MPI_ARGS:-} "$@"
