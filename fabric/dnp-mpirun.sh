#!/bin/sh
# SPDX-License-Identifier: MIT
# Run by dnp-run on every torus node (see `./dnp mpirun`, docs/mpi.md):
# node 0 starts Open MPI's mpirun with the libfabric provider "dnp"; the
# other nodes' instances exit at once (their daemons keep running until
# mpirun is done). Rank r talks to node r mod DNP_NNODES's daemon
# (DNP_FI_RUN_DIR/node-<id>.sock, chosen by the provider).
# Environment: DNP_MPI_NP (ranks), DNP_FI_DIR (directory of libdnp-fi.so),
# DNP_MPI_ARGS (extra mpirun arguments, word-split).
[ "$DNP_NODE_ID" = 0 ] || exit 0
DNP_FI_RUN_DIR=$DNP_RUN_DIR
DNP_FI_NNODES=$DNP_NNODES
FI_PROVIDER_PATH=$DNP_FI_DIR
FI_PROVIDER=dnp
export DNP_FI_RUN_DIR DNP_FI_NNODES FI_PROVIDER_PATH FI_PROVIDER
unset DNP_SOCKET
np=${DNP_MPI_NP:-$DNP_NNODES}
root= over=
[ "$(id -u)" -eq 0 ] && root=--allow-run-as-root
# More ranks than cores: allowed, and Open MPI then yields when idle.
[ "$np" -gt "$(nproc)" ] && over=--oversubscribe
# shellcheck disable=SC2086
exec mpirun $root $over --bind-to none -np "$np" \
	--mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include dnp \
	-x DNP_FI_RUN_DIR -x DNP_FI_NNODES -x FI_PROVIDER_PATH -x FI_PROVIDER \
	${DNP_MPI_ARGS:-} "$@"
