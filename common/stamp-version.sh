#!/bin/sh
# SPDX-License-Identifier: MIT
# stamp-version.sh IN VERSION_HEADER OUT: the script IN with @DNP_VERSION@
# replaced by the version of this build (DNP_VERSION_FULL in the generated
# common/dnp_version_gen.h), as OUT, executable. The installed scripts
# (dnp-topo, dnp-slurm, dnp-lofamo-slurm) say the same version as the C tools.
set -eu
v=$(sed -n 's/^#define DNP_VERSION_FULL "\(.*\)"$/\1/p' "$2")
[ -n "$v" ] || { echo "stamp-version.sh: no version in $2" >&2; exit 1; }
sed "s|@DNP_VERSION@|$v|g" "$1" >"$3.tmp"
chmod 755 "$3.tmp"
mv "$3.tmp" "$3"
