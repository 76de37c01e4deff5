#!/bin/sh
# SPDX-License-Identifier: MIT
# A stand-in for dnpd used by test-dnp-run.sh: parses the same arguments,
# announces its links up, stays until SIGTERM. FAKE_DNPD_DIE=<id> makes that
# node's daemon die 0.5 s after start; FAKE_DNPD_NOUP=<id> never comes up.
while [ $# -gt 0 ]; do
	case $1 in
	--torus) torus=$2; shift ;;
	--coord) coord=$2; shift ;;
	--run-dir) dir=$2; shift ;;
	esac
	shift
done
X=${torus%%x*}; rest=${torus#*x}; Y=${rest%%x*}
x=${coord%%,*}; rest=${coord#*,}; y=${rest%%,*}; z=${rest#*,}
id=$((x + X * (y + Y * z)))
echo "fake dnpd $coord (node $id)"
trap 'echo "stopping"; exit 0' TERM
if [ "${FAKE_DNPD_NOUP:-x}" != "$id" ]; then
	: >"$dir/node-$id.sock"
	: >"$dir/node-$id.up"
fi
i=0
while :; do
	sleep 0.05
	i=$((i + 1))
	if [ "${FAKE_DNPD_DIE:-x}" = "$id" ] && [ $i -ge 10 ]; then
		echo "dying on purpose"
		exit 3
	fi
done
