#!/bin/bash
# SPDX-License-Identifier: MIT
# run.sh BUILD_DIR SRC_DIR — suite 'verbs' (tests/verbs/meson.build): every
# scenario of guest.sh in one Soft-RoCE VM, under /tmp/softdnp-heavy.lock
# (unless VERBS_LOCKED=1: the caller holds it). Exit 0 pass, 1 fail, 77 skip.
set -u
build=$(cd "$1" && pwd)
src=$2
if [ "${DNP_HAVE_IBVERBS:-1}" != 1 ]; then
	echo "SKIP: this build has no verbs transport (meson found no libibverbs)"
	exit 77
fi
for p in dnp-core/dnpd/dnpd dnp-core/dnpd/dnpctl apps/dnp_pingpong apps/dnp_alltoall; do
	[ -x "$build/$p" ] || {
		echo "SKIP: $build/$p is not built"
		exit 77
	}
done
out=$build/verbs-vm
rm -rf "$out"
lock=(flock /tmp/softdnp-heavy.lock)
[ "${VERBS_LOCKED:-0}" = 1 ] && lock=()
VERBS_TIMEOUT=${VERBS_TIMEOUT:-800} "${lock[@]}" "$src/vm.sh" "$out" "$src/guest.sh" "$build" \
	pingpong rejoin rc alltoall cut
rc=$?
[ -e "$out/guest.log" ] && cat "$out/guest.log"
echo "accelerator: $(cat "$out/accel" 2>/dev/null)"
exit $rc
