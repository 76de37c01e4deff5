#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The benchmark report: SoftDNP beside the stacks a user would pick instead,
# measured the same way, on loopback, in one run.
#
#   bench/run.sh BUILD_DIR [--quick] [--placement default|two-host|both]
#                          (./dnp bench [--quick] passes a release build)
#   bench/run.sh BUILD_DIR [--quick] --transport verbs
#                          (SoftDNP over verbs beside perftest in a Soft-RoCE VM: verbs_bench)
#
# Every test runs REPS times (default 3; env REPS), interleaved (rep 1
# of everything, then rep 2, ...), so that a slow minute of the shared machine
# hits every stack alike; bench/report.py keeps the median over the reps.
#
# SoftDNP (peer empty in the CSV), on every transport built and usable here:
#   shm and udp (default idle policy, dnp-run --pin), shm-busy (dnpd --idle
#   busy, --pin), shm-unpinned and udp-unpinned (placed by the scheduler), memif and dpdk
#   (af_packet on a namespace testbed; root and DPDK only):
#   lat = dnp_pingpong (half round trip of a PUT ping-pong), bw and msgrate =
#   dnp_bw (one-way PUT stream, window 32), loopback = dnp_pingpong --loopback.
# Peers, two processes pinned to CPUs 0 and 1 (as dnp-run --pin places
# SoftDNP's applications and daemons):
#   kernel: udp_pingpong over UDP and TCP, blocking and busy-polling receive;
#   libfabric (libfabric-bin): fi_pingpong over tcp, tcp;ofi_rxm, udp;ofi_rxd, shm;
#   ucx (ucx-utils): ucx_perftest tag_lat / tag_bw over tcp and posix;
#   perftest (ib_write_lat, ib_write_bw, ib_send_lat) where ibv_get_device_list
#   finds an RDMA device.
# Also: cacheline (bench/cacheline), multi-hop latency on 4x4x1 and 2x2x2
# tori, CPU cost per message and per MiB (getrusage of dnp-run's process tree,
# daemons included).
#
# Hand-off figures (part 'hand', every rep): the 8-byte ping-pong of SoftDNP shm
# and udp and of each libfabric provider, each run under GNU time, giving its
# half round trip, the CPU time (user + system) of all processes of both sides
# per message (two messages per round trip) and their context switches
# (voluntary + involuntary) per half round trip. Placements (--placement, default
# both): 'default' = SoftDNP --pin (rows shm, udp) and unpinned (shm-unpinned,
# udp-unpinned), the peers on CPUs 0 and 1; 'two-host' = each node's program
# and daemon share one CPU, node x on CPU x (rows shm-2host, udp-2host); a
# libfabric node is one process, so its two-host placement is its pinned one
# (rows NAME-2host repeat it, measured again in the same rep).
#
# Also the engine's ceiling (bench/engine_bench, 8 B and 4 KiB, a short run
# per rep, and in the first rep its instructions per 8-byte PUT under valgrind
# --tool=callgrind, 3 counts, when valgrind is installed), for the cost
# breakdown of an 8-byte PUT and the goals, and the cost of page faults
# (bench/pagefault_bench beside PART's figures; first rep only in a quick run).
#
# Part 'loop' (once, after the reps): the 8-byte loopback PUT in 10 runs (3 in a
# quick run) quiet and 10 beside two busy processes (two shell loops started
# before and killed by PID after each run), each run paired with the cache
# line measured just before it, without the loops: rows loop-quiet and
# loop-busy (test loopback, us; cacheline, ns; loopback_failed for a run that
# gave no figure), the rep column holding the run's number.
#
# Part 'mpi' (every rep of a full run; a quick run only when BENCH_ONLY names
# it, then in the first rep): MPI's overhead over the raw dnp_pingpong
# (bench/mpi-overhead.sh, one round: raw 8 B and NetPIPE 8 B over shm and udp)
# and NetPIPE 8 B..4 KiB over SoftDNP udp and over Open MPI's mtl ofi on
# libfabric udp;ofi_rxd (bench/mpi-bench.sh, MPI_SET=curves). Skipped, with
# the reason in the machine file, without Open MPI, NetPIPE or the provider.
#
# Writes into $BENCH_OUT (default results/bench/, ignored by git; ./dnp bench
# --save sets bench/results/, ./dnp bench --out DIR sets DIR):
# <date>-<host>.csv (transport,peer,test,bytes,rep,value,unit),
# <date>-<host>-more.csv (CPU cost, engine ceiling, hand-off, loop and mpi rows;
# same columns),
# <date>-<host>-machine.txt, <date>-<host>.md (tables, breakdown, goals) and
# <date>-<host>-{lat,bw,hops}.png; prints a one-screen summary. A quick run
# (--quick) writes the same with -quick after the host.
set -u
build=${1:?usage: bench/run.sh BUILD_DIR [--quick] [--transport verbs]}
shift
quick=0
transport=
placement=both
while [ $# -gt 0 ]; do
	case $1 in
	--quick) quick=1 ;;
	--placement)
		placement=${2:-}
		case $placement in default | two-host | both) ;; *)
			echo "bench/run.sh: --placement takes default, two-host or both" >&2
			exit 2 ;;
		esac
		shift ;;
	--transport)
		transport=${2:-}
		[ "$transport" = verbs ] || {
			echo "bench/run.sh: --transport takes verbs" >&2
			exit 2
		}
		shift ;;
	*)
		echo "bench/run.sh: unknown option $1" >&2
		exit 2 ;;
	esac
	shift
done
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "$build" && pwd)
. "$here/lib.sh"
outdir=${BENCH_OUT:-$(cd "$here/.." && pwd)/results/bench}
stamp=$(date -u +%Y-%m-%d)
host=$(hostname -s 2>/dev/null || hostname)
base=$outdir/$stamp-$host$([ $quick = 1 ] && echo -quick)
csv=$base.csv
cpucsv=$base-more.csv
machine=$base-machine.txt
run=$build/apps/dnp-run
apps=$build/apps
if [ $quick = 1 ]; then
	reps=${REPS:-3}
	sizes=${BENCH_SIZES:-8,4096,1048576}
else
	reps=${REPS:-3}
	sizes=${BENCH_SIZES:-8,64,512,4096,32768,262144,1048576,4194304}
fi
T0=$(date +%s)

# ---------------------------------------------------------------- verbs
# --transport verbs: SoftDNP over the verbs transport beside perftest
# (ib_send_lat, ib_write_lat, ib_write_bw), all on the same two Soft-RoCE
# devices in one boot of the VM of tests/verbs/vm.sh (guest.sh scenario
# sweep), rounds alternating; the rows' transports are named NAME@ACCEL (kvm
# or tcg) and report.py --verbs writes <date>-<host>-verbs[-quick].md, .csv,
# -machine.txt and -{lat,bw}.png. Root only (vm.sh installs and boots); no
# 4 MiB size (minutes per size under TCG).
verbs_bench() {
	local vbase vout rc accel kver
	vbase=$outdir/$stamp-$host-verbs$([ $quick = 1 ] && echo -quick)
	[ $quick = 1 ] || sizes=${BENCH_SIZES:-8,64,512,4096,32768,262144,1048576}
	for p in "$build/dnp-core/dnpd/dnpd" "$build/dnp-core/dnpd/dnpctl" "$apps/dnp_pingpong" \
		"$apps/dnp_bw"; do
		[ -x "$p" ] || {
			echo "bench: $p is not built" >&2
			exit 1
		}
	done
	mkdir -p "$outdir"
	vout=$(mktemp -d /tmp/verbs-bench.XXXXXX)
	say "verbs: $reps rounds, sizes $sizes, in one VM boot (tests/verbs/vm.sh; waits for /tmp/softdnp-heavy.lock)"
	local lock=(flock /tmp/softdnp-heavy.lock)
	[ "${VERBS_LOCKED:-0}" = 1 ] && lock=()
	BENCH_ROUNDS=$reps BENCH_SIZES=$sizes VERBS_TIMEOUT=${VERBS_TIMEOUT:-3000} \
		"${lock[@]}" bash "$here/../tests/verbs/vm.sh" "$vout" "$here/../tests/verbs/guest.sh" \
		"$build" sweep
	rc=$?
	accel=$(cat "$vout/accel" 2>/dev/null || echo unknown)
	if [ $rc -ne 0 ] || [ ! -s "$vout/rows.csv" ]; then
		echo "bench: the verbs VM run failed (status $rc$([ $rc = 77 ] && echo ": no VM here"));" \
			"see $vout/guest.log and $vout/console.log" >&2
		tail -n 20 "$vout/guest.log" >&2 2>/dev/null
		exit 1
	fi
	echo "transport,peer,test,bytes,rep,value,unit" >"$vbase.csv"
	awk -F, -v a="$accel" 'NF == 7 { $1 = $1 "@" a; print }' OFS=, "$vout/rows.csv" >>"$vbase.csv"
	kver=$(ls /var/cache/softdnp-verbs/k/lib/modules 2>/dev/null | head -n 1)
	{
		echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
		echo "host: $host, $(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo), $(nproc) CPUs"
		echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
		echo "guest accelerator: $accel ($([ "$accel" = tcg ] && echo "emulated CPU, /dev/kvm not usable" || echo "hardware virtualisation"))"
		echo "guest: Debian kernel ${kver:-?}, ${VERBS_SMP:-2} vCPUs, 1.5 GiB; rdma_rxe on veth pairs (MTU 9000, RoCE v2)"
		echo "softdnp: $(git -C "$here/.." describe --always --dirty 2>/dev/null || echo unknown), $build"
		echo "perftest: $(dpkg-query -W -f='${Version}' perftest 2>/dev/null || echo unknown)"
		echo "mode: $([ $quick = 1 ] && echo quick || echo full), $reps rounds, sizes $sizes"
	} >"$vbase-machine.txt"
	rm -rf "$vout"
	say "measured; writing the report"
	python3 "$here/report.py" --verbs --csv "$vbase.csv" --machine "$vbase-machine.txt" \
		--out "$vbase" $([ $quick = 1 ] && echo --quick)
	say "done in $(($(date +%s) - T0)) s: $vbase.md, .csv, -machine.txt, -{lat,bw}.png"
	exit 0
}
say() { printf '[bench %4ds] %s\n' $(($(date +%s) - T0)) "$*"; }
[ "$transport" = verbs ] && verbs_bench

for p in "$run" "$apps/dnp_pingpong" "$apps/dnp_bw" "$apps/udp_pingpong" \
	"$build/dnp-core/dnpd/dnpd" "$build/bench/cacheline" "$build/bench/engine_bench"; do
	if [ ! -x "$p" ]; then
		echo "bench: $p is not built" >&2
		exit 1
	fi
done
mkdir -p "$outdir"
tmp=$(mktemp -d /tmp/perf-bench.XXXXXX)
busy_pids=()
# the busy loops of part 'loop' die with the run, however it ends
trap '[ ${#busy_pids[@]} -gt 0 ] && kill "${busy_pids[@]}" 2>/dev/null; rm -rf "$tmp"' EXIT
trap 'exit 1' INT TERM
echo "transport,peer,test,bytes,rep,value,unit" >"$csv"
echo "transport,peer,test,bytes,rep,value,unit" >"$cpucsv"

row() { echo "$1,$2,$3,$4,$5,$6,$7" >>"$csv"; } # TRANSPORT PEER TEST BYTES REP VALUE UNIT

# keep LABEL COMMAND...: runs it, output in $tmp/out; on failure says so (the
# rows are then missing, never invented) and returns 1.
keep() {
	local label=$1
	shift
	if ! timeout 300 "$@" >"$tmp/out" 2>"$tmp/err"; then
		echo "bench: $label failed (rows left out):" >&2
		tail -n 5 "$tmp/err" "$tmp/out" 2>/dev/null | sed 's/^/    /' >&2
		return 1
	fi
}

# dnp_rows TRANSPORT REP KIND: rows of dnp_pingpong/dnp_bw --csv output in $tmp/out
# (KIND lat, loopback or bw). dnp-run prefixes each line with the node.
dnp_rows() {
	sed -n 's/^\[0,0,0\] //p' "$tmp/out" | awk -F, -v t="$1" -v r="$2" -v k="$3" '
		/^[0-9]+,/ {
			if (k == "bw") {
				printf "%s,,bw,%s,%s,%s,MBps\n", t, $1, r, $3
				printf "%s,,msgrate,%s,%s,%s,msgps\n", t, $1, r, $4
			} else
				printf "%s,,%s,%s,%s,%s,us\n", t, k, $1, r, $4
		}' >>"$csv"
}

# ---------------------------------------------------------------- what is here
transports=(shm shm-busy shm-unpinned udp udp-unpinned)
have_dpdk=0
grep -q 'DNP_HAVE_DPDK 1' "$build/dnp_config.h" 2>/dev/null && have_dpdk=1
if [ $have_dpdk = 1 ]; then
	transports+=(memif)
	[ "$(id -u)" -eq 0 ] && command -v ip >/dev/null && transports+=(dpdk)
fi
have_fi=0
command -v fi_pingpong >/dev/null && have_fi=1
have_ucx=0
command -v ucx_perftest >/dev/null && have_ucx=1
ibdevs=""
command -v ibv_devices >/dev/null && ibdevs=$(ibv_devices 2>/dev/null | awk 'NR > 2 && NF { print $1 }')
ib_line="InfiniBand/RDMA: ibv_get_device_list found no device on this machine (ibv_devices); no perftest rows."
if [ -n "$ibdevs" ]; then
	ibdev=$(echo "$ibdevs" | head -n 1)
	if command -v ib_write_lat >/dev/null; then
		ib_line="InfiniBand/RDMA: device $ibdev, perftest ib_write_lat, ib_write_bw, ib_send_lat over it (loopback through the device)."
	else
		ib_line="InfiniBand/RDMA: device $ibdev found but perftest is not installed; no perftest rows."
		ibdev=""
	fi
else
	ibdev=""
fi

# ---------------------------------------------------------------- machine
{
	echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
	echo "host: $host"
	echo "cpu: $(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)"
	echo "cpus: $(nproc) (online: $(cat /sys/devices/system/cpu/online 2>/dev/null))"
	echo "hypervisor: $(grep -q hypervisor /proc/cpuinfo && echo yes || echo no)"
	echo "memory: $(awk '/MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)"
	echo "kernel: $(uname -sr)"
	echo "os: $(. /etc/os-release 2>/dev/null && echo "$PRETTY_NAME")"
	echo "compiler: $(cc --version 2>/dev/null | head -n 1)"
	echo "build: $(meson introspect "$build" --buildoptions 2>/dev/null | python3 -c \
		'import json,sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"] == "buildtype"))' \
		2>/dev/null || echo unknown), $build"
	echo "softdnp: $(git -C "$here/.." describe --always --dirty 2>/dev/null || echo unknown)"
	echo "libfabric: $(dpkg-query -W -f='${Version}' libfabric1 2>/dev/null || echo absent)"
	echo "ucx: $(dpkg-query -W -f='${Version}' libucx0 2>/dev/null || echo absent)"
	echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "mode: $([ $quick = 1 ] && echo quick || echo full), $reps reps, sizes $sizes, placement $placement"
	echo "transports: ${transports[*]}"
	echo "$ib_line"
} >"$machine"
say "$([ $quick = 1 ] && echo quick || echo full) run: $reps reps, sizes $sizes; SoftDNP on ${transports[*]}"
say "peers: kernel udp/tcp$([ $have_fi = 1 ] && echo ", libfabric")$([ $have_ucx = 1 ] && echo ", ucx")"
say "$ib_line"

port() { echo $((20000 + RANDOM % 20000)); }
# stop_server: the peer's server of the last test ($spid) is done (or stuck
# after its client failed): stop it now rather than at its timeout.
stop_server() {
	sleep 0.1
	kill "$spid" 2>/dev/null
	wait "$spid" 2>/dev/null
}
# wait_listen PORT: until a server listens on TCP PORT (at most 10 s)
wait_listen() {
	local i
	for i in $(seq 100); do
		ss -Hltn "sport = :$1" 2>/dev/null | grep -q . && return 0
		sleep 0.1
	done
	return 1
}

# ---------------------------------------------------------------- one test each
softdnp() { # REP
	local r=$1 t opts
	for t in "${transports[@]}"; do
		case $t in
		# Pinned like the peers (two processes on CPUs 0 and 1) and like
		# shm-busy, so the goals compare idle policies, not placements;
		# -unpinned: placed by the scheduler (dnp-run's default).
		shm) opts=(--transport shm --pin) ;;
		shm-busy) opts=(--transport shm --pin --idle busy) ;;
		shm-unpinned) opts=(--transport shm) ;;
		udp) opts=(--transport udp --pin) ;;
		udp-unpinned) opts=(--transport udp) ;;
		*) opts=(--transport "$t") ;;
		esac
		say "rep $r: SoftDNP $t ping-pong"
		keep "dnp $t lat" "$run" --torus 2x1x1 "${opts[@]}" --timeout 240 -- dnp_pingpong \
			--sizes "$sizes" --csv && dnp_rows "$t" "$r" lat
		say "rep $r: SoftDNP $t PUT stream"
		keep "dnp $t bw" "$run" --torus 2x1x1 "${opts[@]}" --timeout 240 -- dnp_bw \
			--sizes "$sizes" --csv && dnp_rows "$t" "$r" bw
	done
	# The cache line again, just before: on a VM the two vCPUs are sometimes
	# hyperthreads of one host core (a 30 ns line) and sometimes not (170 ns),
	# and the loopback follows; the goal pairs each loopback with this one.
	keep cacheline "$build/bench/cacheline" --cpus 0,1 &&
		echo "cpu,,cacheline-beside,64,$r,$(cat "$tmp/out"),ns" >>"$cpucsv"
	say "rep $r: SoftDNP loopback PUT"
	keep "dnp loopback" "$run" --torus 1x1x1 --transport shm --pin --timeout 120 -- \
		dnp_pingpong --loopback --sizes "$sizes" --csv && dnp_rows shm "$r" loopback
}

kernel() { # REP
	local r=$1 name args
	say "rep $r: kernel UDP and TCP ping-pong"
	for name in udp udp-busy tcp tcp-busy udp-1cpu udp-unpinned; do
		case $name in
		udp) args=(--cpus 0,1) ;;
		udp-busy) args=(--busy --cpus 0,1) ;;
		tcp) args=(--tcp --cpus 0,1) ;;
		tcp-busy) args=(--tcp --busy --cpus 0,1) ;;
		udp-1cpu) args=(--cpus 0,0) ;;
		udp-unpinned) args=() ;;
		esac
		keep "kernel $name" "$apps/udp_pingpong" "${args[@]}" --sizes "$sizes" --csv || continue
		awk -F, -v t="$name" -v r="$r" '/^[0-9]+,/ { printf "%s,kernel,lat,%s,%s,%s,us\n", t, $1, r, $4 }' \
			"$tmp/out" >>"$csv"
	done
}

fi_iters() { # SIZE
	if [ "$1" -ge 1048576 ]; then echo 200; elif [ "$1" -ge 65536 ]; then echo 1000
	else echo $([ $quick = 1 ] && echo 3000 || echo 10000); fi
}

libfabric() { # REP
	local r=$1 prov ep b p n out
	for prov in tcp "tcp;ofi_rxm" "udp;ofi_rxd" shm; do
		case $prov in tcp) ep=msg ;; *) ep=rdm ;; esac
		say "rep $r: libfabric fi_pingpong $prov"
		for b in ${sizes//,/ }; do
			p=$(port)
			n=$(fi_iters "$b")
			taskset -c 1 timeout 120 fi_pingpong -p "$prov" -e "$ep" -B "$p" -S "$b" -I "$n" \
				>"$tmp/fis" 2>&1 &
			spid=$!
			wait_listen "$p"
			if taskset -c 0 timeout 120 fi_pingpong -p "$prov" -e "$ep" -P "$p" -S "$b" -I "$n" \
				127.0.0.1 >"$tmp/fic" 2>&1; then
				# bytes #sent #ack total time MB/sec usec/xfer Mxfers/sec
				# (sizes printed as 4k, 1m: take the line after the header)
				awk -v t="$prov" -v r="$r" -v b="$b" 'h && NF >= 8 { h = 0
					printf "%s,libfabric,lat,%s,%s,%s,us\n", t, b, r, $7
					printf "%s,libfabric,bw,%s,%s,%s,MBps\n", t, b, r, $6
				} $1 == "bytes" { h = 1 }' "$tmp/fic" >>"$csv"
			else
				echo "bench: fi_pingpong $prov $b bytes failed (rows left out): $(tail -n 1 "$tmp/fic")" >&2
			fi
			stop_server
		done
	done
}

ucx() { # REP
	local r=$1 tls test b p n
	for tls in tcp posix; do
		say "rep $r: UCX ucx_perftest $tls"
		for test in tag_lat tag_bw; do
			for b in ${sizes//,/ }; do
				p=$(port)
				n=$(fi_iters "$b")
				UCX_TLS=$tls,self taskset -c 1 timeout 120 ucx_perftest -p "$p" >"$tmp/us" 2>&1 &
				spid=$!
				wait_listen "$p"
				if UCX_TLS=$tls,self taskset -c 0 timeout 120 ucx_perftest 127.0.0.1 -p "$p" \
					-t "$test" -s "$b" -n "$n" -w $((n / 10 + 1)) -f -v >"$tmp/uc" 2>&1; then
					# iterations,50.0_percentile_lat,avg_lat,overall_lat,avg_bw,overall_bw,avg_mr,overall_mr
					# (bandwidth in 2^20 bytes/s)
					awk -F, -v t="$tls" -v r="$r" -v b="$b" -v k="$test" '
						/^ *[0-9]+,/ { l = $0 }
						END { if (l == "") exit; split(l, f, ",")
							if (k == "tag_lat") printf "%s,ucx,lat,%s,%s,%s,us\n", t, b, r, f[2]
							else { printf "%s,ucx,bw,%s,%s,%.2f,MBps\n", t, b, r, f[6] * 1.048576
								printf "%s,ucx,msgrate,%s,%s,%s,msgps\n", t, b, r, f[8] } }' \
						"$tmp/uc" >>"$csv"
				else
					echo "bench: ucx_perftest $tls $test $b bytes failed (rows left out): $(tail -n 1 "$tmp/uc")" >&2
				fi
				stop_server
			done
		done
	done
}

perftest() { # REP: only with an RDMA device
	local r=$1 tool p
	for tool in ib_write_lat ib_send_lat ib_write_bw; do
		say "rep $r: perftest $tool on $ibdev"
		p=$(port)
		taskset -c 1 timeout 120 "$tool" -d "$ibdev" -p "$p" -a >/dev/null 2>&1 &
		spid=$!
		wait_listen "$p"
		if taskset -c 0 timeout 120 "$tool" -d "$ibdev" -p "$p" -a 127.0.0.1 >"$tmp/ib" 2>&1; then
			# lat: #bytes #iterations t_min t_max t_typical ...; bw: #bytes #iter BW_peak BW_avg MsgRate
			awk -v t="ib:$ibdev" -v r="$r" -v k="$tool" -v s=",$sizes," '
				$1 ~ /^[0-9]+$/ && index(s, "," $1 ",") {
					if (k == "ib_write_bw") {
						printf "%s,perftest,bw,%s,%s,%.2f,MBps\n", t, $1, r, $4 * 1.048576
						printf "%s,perftest,msgrate,%s,%s,%.0f,msgps\n", t, $1, r, $5 * 1e6
					} else
						printf "%s-%s,perftest,lat,%s,%s,%s,us\n", t, k == "ib_send_lat" ? "send" : "write", $1, r, $5
				}' "$tmp/ib" >>"$csv"
		else
			echo "bench: $tool failed (rows left out)" >&2
		fi
		stop_server
	done
}

engine() { # REP: the engine alone, one core (CPU 0)
	say "rep $1: engine ceiling (two engines back to back, no I/O)"
	keep engine taskset -c 0 "$build/bench/engine_bench" --sizes 8,4096 --reps 1 --seconds 0.3 --csv &&
		awk -F, -v r="$1" 'NR > 1 { $5 = r; print }' OFS=, "$tmp/out" >>"$cpucsv"
	[ "$1" = 1 ] || return 0
	if ! command -v valgrind >/dev/null; then
		echo "engine: no callgrind count: valgrind is not installed" >>"$machine"
		return 0
	fi
	say "rep $1: engine, instructions per 8-byte PUT (callgrind, 3 counts, about 5 s)"
	callgrind_rows "$build/bench/engine_bench" 3 >>"$cpucsv"
}

cacheline() { # REP
	say "rep $1: cache-line round trip between CPUs 0 and 1"
	keep cacheline "$build/bench/cacheline" --cpus 0,1 &&
		row cpu "" cacheline 64 "$1" "$(cat "$tmp/out")" ns
}

hops() { # REP: multi-hop PUT ping-pong latency on 4x4x1 and 2x2x2 (shm, 8 B)
	local r=$1 topo peer h
	for topo in 4x4x1 2x2x2; do
		say "rep $r: multi-hop latency on $topo"
		if [ $topo = 4x4x1 ]; then set -- 1,0,0:1 2,0,0:2 2,1,0:3 2,2,0:4
		else set -- 1,0,0:1 1,1,0:2 1,1,1:3; fi
		for peer in "$@"; do
			h=${peer#*:}
			keep "hops $topo $h" "$run" --torus $topo --transport shm --timeout 120 -- \
				dnp_pingpong --peer "${peer%:*}" --sizes 8 --iters 2000 --csv &&
				dnp_rows "shm/$topo/${h}hops" "$r" lat
		done
	done
}

# pagefault REP: what page faults cost a PUT through process_vm_* (bench/pagefault_bench,
# PART's comparison; docs/performance.md, "Page faults"): call to TX_DONE of PUTs of one
# page, 1 MiB and 4 MiB into touched pages, never-touched target pages and never-touched
# source pages (medians of N), never-touched target pages registered with
# DNP_BUF_POPULATE, and the kernel's process_vm_writev alone, into
# touched and fresh pages.
pagefault() {
	local n=$([ $quick = 1 ] && echo 11 || echo 31)
	say "rep $1: page faults (pagefault_bench, 2x1x1 shm)"
	# a path: dnp-run looks a bare name up next to itself (apps/), then in $PATH
	keep pagefault "$run" --torus 2x1x1 --transport shm --timeout 280 -- \
		"$build/bench/pagefault_bench" --iters $n || return 0
	sed -n 's/^\[0,0,0\] //p' "$tmp/out" | awk -v r="$1" '
		/process_vm_\* alone/ { part = "vm"; next }
		/call to TX_DONE/ { part = "put"; next }
		part == "vm" && NF == 7 && $1 ~ /^[0-9]+$/ {
			printf "cpu,,pf_vm_wr_warm,%s,%s,%s,us\ncpu,,pf_vm_wr_fresh,%s,%s,%s,us\n", $1, r, $2, $1, r, $3 }
		part == "put" && NF >= 6 && $1 ~ /^[0-9]+$/ {
			printf "shm,,pf_warm,%s,%s,%s,us\n", $1, r, $2
			printf "shm,,pf_cold_dst,%s,%s,%s,us\n", $1, r, $3
			printf "shm,,pf_cold_src,%s,%s,%s,us\n", $1, r, $5
			if (NF >= 8) printf "shm,,pf_populated,%s,%s,%s,us\n", $1, r, $7 }' >>"$cpucsv"
}

# cpu_cost REP: CPU time (user + system) of all the processes of a run (the
# two daemons and the two programs, as getrusage(RUSAGE_CHILDREN) sees them
# through dnp-run), divided by the messages or the MiB it moved.
children_cpu() { # seconds of user + system of every reaped child so far (not in a subshell)
	times >"$tmp/times"
	cpu_now=$(awk 'NR == 2 { split($1, u, /[ms]/); split($2, s, /[ms]/); printf "%.4f\n", u[1] * 60 + u[2] + s[1] * 60 + s[2] }' "$tmp/times")
}
cpu_cost() {
	local r=$1 t opts a b n
	for t in shm shm-busy udp; do
		case $t in
		shm-busy) opts=(--transport shm --pin --idle busy) ;;
		*) opts=(--transport "$t") ;;
		esac
		say "rep $r: CPU cost, $t"
		n=$([ $quick = 1 ] && echo 30000 || echo 200000)
		children_cpu; a=$cpu_now
		keep "cpu $t 8" "$run" --torus 2x1x1 "${opts[@]}" -- dnp_bw --sizes 8 --iters $n --csv || continue
		children_cpu; b=$cpu_now
		awk -v t="$t" -v r="$r" -v a="$a" -v b="$b" -v n=$n \
			'BEGIN { printf "%s,,cpu_per_msg,8,%s,%.0f,ns\n", t, r, (b - a) * 1e9 / n }' >>"$cpucsv"
		n=$([ $quick = 1 ] && echo 300 || echo 2000)
		children_cpu; a=$cpu_now
		keep "cpu $t 1M" "$run" --torus 2x1x1 "${opts[@]}" -- dnp_bw --sizes 1M --iters $n --csv || continue
		children_cpu; b=$cpu_now
		awk -v t="$t" -v r="$r" -v a="$a" -v b="$b" -v n=$n \
			'BEGIN { printf "%s,,cpu_per_mib,1048576,%s,%.1f,us\n", t, r, (b - a) * 1e6 / n }' >>"$cpucsv"
	done
	say "rep $r: CPU cost, kernel UDP and TCP (blocking)"
	for t in udp tcp; do
		children_cpu; a=$cpu_now
		keep "cpu kernel $t" "$apps/udp_pingpong" --cpus 0,1 $([ $t = tcp ] && echo --tcp) \
			--sizes 8 --iters 20000 --csv || continue
		children_cpu; b=$cpu_now
		# a ping-pong moves two messages per iteration
		awk -v t="$t" -v r="$r" -v a="$a" -v b="$b" \
			'BEGIN { printf "%s,kernel,cpu_per_msg,8,%s,%.0f,ns\n", t, r, (b - a) * 1e9 / 40020 }' >>"$cpucsv"
	done
}

# hand REP: hand-off figures of the 8-byte ping-pong (see the head of this
# file): rows in the -more CSV: hand_lat (us, the half round trip), cpu_pp_msg
# (ns of CPU per message, all processes of both sides) and csw_half (context
# switches per half round trip). Each stack runs twice, N/5 and N round trips,
# and the figures are the differences divided by the extra messages: start-up,
# connection set-up and teardown cancel out.
hand_rows() { # LABEL PEER EXTRA_MESSAGES LAT_US RUSAGE_LONG RUSAGE_SHORT
	local l=$1 p=$2 m=$3 lat=$4 hi lo
	hi=$(rus_sum "$5")
	lo=$(rus_sum "$6")
	echo "$hi $lo" | awk -v t="$l" -v p="$p" -v r="$r" -v m="$m" '{
		printf "%s,%s,cpu_pp_msg,8,%s,%.0f,ns\n", t, p, r, ($1 - $3) * 1e9 / m
		printf "%s,%s,csw_half,8,%s,%.2f,n\n", t, p, r, ($2 - $4) / m }' >>"$cpucsv"
	[ -n "$lat" ] && echo "$l,$p,hand_lat,8,$r,$lat,us" >>"$cpucsv"
	return 0
}
# hand_fi PROV EP ITERS SUFFIX: one fi_pingpong run, GNU time of server and client
# in $tmp/rus-s$SUFFIX and $tmp/rus-c$SUFFIX; half round trip in $lat
hand_fi() {
	local p
	p=$(port)
	/usr/bin/time -f '%U %S %w %c' -o "$tmp/rus-s$4" taskset -c 1 timeout 120 fi_pingpong \
		-p "$1" -e "$2" -B "$p" -S 8 -I "$3" >"$tmp/fis" 2>&1 &
	spid=$!
	wait_listen "$p"
	if /usr/bin/time -f '%U %S %w %c' -o "$tmp/rus-c$4" taskset -c 0 timeout 120 fi_pingpong \
		-p "$1" -e "$2" -P "$p" -S 8 -I "$3" 127.0.0.1 >"$tmp/fic" 2>&1; then
		wait "$spid"
		lat=$(awk 'h && NF >= 8 { print $7; exit } $1 == "bytes" { h = 1 }' "$tmp/fic")
		return 0
	fi
	echo "bench: fi_pingpong $1 (hand-off) failed (rows left out)" >&2
	stop_server
	return 1
}
hand() {
	local r=$1 t pl opts prog n lo lat prov ep lab
	n=$([ $quick = 1 ] && echo 5000 || echo 20000)
	lo=$((n / 5))
	[ -x "$tmp/2host/dnpd" ] || two_host_wrappers "$tmp/2host" "$build"
	for pl in pin unpinned 2host; do
		case $placement-$pl in default-2host | two-host-pin | two-host-unpinned) continue ;; esac
		for t in shm udp; do
			case $pl in
			pin) opts=(--pin) prog=dnp_pingpong lab=$t ;;
			unpinned) opts=() prog=dnp_pingpong lab=$t-unpinned ;;
			2host) opts=(--dnpd "$tmp/2host/dnpd") prog=$tmp/2host/dnp_pingpong lab=$t-2host ;;
			esac
			say "rep $r: hand-off, SoftDNP $lab 8 B ping-pong (CPU, switches)"
			keep "hand $lab" /usr/bin/time -f '%U %S %w %c' -o "$tmp/rus-lo" "$run" --torus 2x1x1 \
				--transport $t "${opts[@]}" --timeout 240 -- "$prog" --sizes 8 --iters $lo \
				--warmup 100 --csv || continue
			keep "hand $lab" /usr/bin/time -f '%U %S %w %c' -o "$tmp/rus" "$run" --torus 2x1x1 \
				--transport $t "${opts[@]}" --timeout 240 -- "$prog" --sizes 8 --iters $n \
				--warmup 100 --csv || continue
			lat=$(sed -n 's/^\[0,0,0\] 8,[0-9]*,[^,]*,\([^,]*\),.*/\1/p' "$tmp/out")
			hand_rows "$lab" "" $((2 * (n - lo))) "$lat" "$tmp/rus" "$tmp/rus-lo"
		done
	done
	[ $have_fi = 1 ] || return 0
	for pl in pin 2host; do
		case $placement-$pl in default-2host | two-host-pin) continue ;; esac
		for prov in tcp "tcp;ofi_rxm" "udp;ofi_rxd" shm; do
			case $prov in tcp) ep=msg ;; *) ep=rdm ;; esac
			lab=$prov$([ $pl = 2host ] && echo -2host)
			say "rep $r: hand-off, libfabric $lab 8 B ping-pong (CPU, switches)"
			hand_fi "$prov" "$ep" $lo -lo || continue
			hand_fi "$prov" "$ep" $n "" || continue
			cat "$tmp/rus-s" "$tmp/rus-c" >"$tmp/rus"
			cat "$tmp/rus-s-lo" "$tmp/rus-c-lo" >"$tmp/rus-lo"
			hand_rows "$lab" libfabric $((2 * (n - lo))) "$lat" "$tmp/rus" "$tmp/rus-lo"
		done
	done
}

# loop: part 'loop' (see the head of this file). A run = the cache line between
# CPUs 0 and 1, then the 8-byte loopback (1x1x1 shm --pin) of 20000 PUTs quiet,
# or 5000 beside two busy shell loops (started after the cache line, killed by
# PID after the run). The goal counts the runs within 3 x the line's round trip.
loop_one() { # SET RUN ITERS
	local set=$1 i=$2 n=$3 h
	if keep "cacheline ($set run $i)" "$build/bench/cacheline" --cpus 0,1; then
		echo "$set,,cacheline,64,$i,$(cat "$tmp/out"),ns" >>"$cpucsv"
	fi
	if [ "$set" = loop-busy ]; then
		for h in 1 2; do
			sh -c 'while :; do :; done' &
			busy_pids+=($!)
		done
	fi
	if keep "loopback ($set run $i)" "$run" --torus 1x1x1 --transport shm --pin --timeout 60 -- \
		dnp_pingpong --loopback --sizes 8 --iters "$n" --warmup 100 --csv &&
		grep -q '^\[0,0,0\] 8,' "$tmp/out"; then
		sed -n 's/^\[0,0,0\] 8,[0-9]*,[^,]*,\([^,]*\),.*/\1/p' "$tmp/out" |
			awk -v t="$set" -v i="$i" '{ printf "%s,,loopback,8,%s,%s,us\n", t, i, $1 }' >>"$cpucsv"
	else
		echo "$set,,loopback_failed,8,$i,1,n" >>"$cpucsv"
	fi
	if [ ${#busy_pids[@]} -gt 0 ]; then
		kill "${busy_pids[@]}" 2>/dev/null
		wait "${busy_pids[@]}" 2>/dev/null
		busy_pids=()
	fi
	return 0
}
loop() {
	local runs i
	runs=$([ $quick = 1 ] && echo 3 || echo 10)
	echo "part loop: $runs runs quiet and $runs beside two busy processes$([ $quick = 1 ] &&
		echo " (quick run; a full run does 10)")" >>"$machine"
	for i in $(seq "$runs"); do
		say "loopback run $i of $runs: quiet, then beside two busy processes"
		loop_one loop-quiet "$i" 20000
		loop_one loop-busy "$i" 5000
	done
}

# mpi REP: part 'mpi' (see the head of this file); rows in the -more CSV:
# TR,,mpi_raw,8, TR,,mpi_netpipe,8 and TR,,mpi_pingpong,8 (fabric/mpi_pingpong's
# median, when mpicc built it) (us, TR shm and udp, from one round of
# bench/mpi-overhead.sh), udp,,netpipe,SIZE and udp;ofi_rxd,libfabric,netpipe,SIZE
# (us, NetPIPE's one-way time, 8 B..4 KiB). The scripts take no lock here
# (DNP_BENCH_LOCK=env): a caller that wants one holds it around the whole run.
mpi_why_not() { # prints why part mpi cannot run here, or nothing
	command -v mpirun >/dev/null || { echo "Open MPI's mpirun is not installed"; return; }
	command -v NPopenmpi >/dev/null || { echo "NetPIPE (NPopenmpi) is not installed"; return; }
	[ -f "$build/fabric/libdnp-fi.so" ] ||
		echo "the provider $build/fabric/libdnp-fi.so is not built (libfabric-dev missing?)"
}
mpi() {
	local r=$1 why
	why=$(mpi_why_not)
	if [ -n "$why" ]; then
		[ "$r" = 1 ] && say "part mpi skipped: $why" &&
			echo "part mpi: skipped: $why" >>"$machine"
		return 0
	fi
	say "rep $r: MPI overhead over the raw dnp_pingpong, shm and udp (bench/mpi-overhead.sh)"
	DNP_BENCH_LOCK=env ROUNDS=1 timeout 300 bash "$here/mpi-overhead.sh" "$build" "$tmp/mo.csv" \
		>"$tmp/mo.log" 2>&1 || { echo "bench: mpi-overhead.sh failed (its rows may be missing):" >&2
		tail -n 5 "$tmp/mo.log" | sed 's/^/    /' >&2; }
	awk -F, -v r="$r" '$2 == "raw" || $2 == "new" || $2 == "mpp-new" {
		k = $2 == "raw" ? "mpi_raw" : $2 == "new" ? "mpi_netpipe" : "mpi_pingpong"
		printf "%s,,%s,8,%s,%s,us\n", $3, k, r, $4 }' \
		"$tmp/mo.csv" >>"$cpucsv" 2>/dev/null
	say "rep $r: NetPIPE 8 B..4 KiB over SoftDNP udp and libfabric udp;ofi_rxd (bench/mpi-bench.sh)"
	DNP_BENCH_LOCK=env MPI_SET=curves MPI_CSV="$tmp/mb.csv" REPS=1 timeout 300 \
		bash "$here/mpi-bench.sh" "$build" >"$tmp/mb.log" 2>&1 || {
		echo "bench: mpi-bench.sh failed (its rows may be missing):" >&2
		tail -n 5 "$tmp/mb.log" | sed 's/^/    /' >&2; }
	awk -F, -v r="$r" '$1 == "np4k-dnp-udp" { printf "udp,,netpipe,%s,%s,%s,us\n", $2, r, $3 }
		$1 == "np4k-rxd" { printf "udp;ofi_rxd,libfabric,netpipe,%s,%s,%s,us\n", $2, r, $3 }' \
		"$tmp/mb.csv" >>"$cpucsv" 2>/dev/null
	rm -f "$tmp/mo.csv" "$tmp/mb.csv"
}

# want PART: env BENCH_ONLY (a list of parts: cacheline engine softdnp kernel hand
# libfabric ucx perftest hops cpu pagefault mpi loop) limits a run to some parts, for
# debugging the script; the report then has only those rows.
want() { [ -z "${BENCH_ONLY:-}" ] || [[ " $BENCH_ONLY " == *" $1 "* ]]; }
# part mpi: in a full run; in a quick run only when BENCH_ONLY names it
want_mpi() { [ $quick = 0 ] && want mpi || [[ " ${BENCH_ONLY:-} " == *" mpi "* ]]; }
[ $quick = 1 ] && ! want_mpi && echo "part mpi: not run (quick run; a full run runs it)" >>"$machine"
r=1
while [ "$r" -le "$reps" ]; do
	want cacheline && cacheline "$r"
	want engine && engine "$r"
	want softdnp && softdnp "$r"
	want kernel && kernel "$r"
	want hand && hand "$r"
	[ $have_fi = 1 ] && want libfabric && libfabric "$r"
	[ $have_ucx = 1 ] && want ucx && ucx "$r"
	[ -n "$ibdev" ] && want perftest && perftest "$r"
	# the slow, many-daemon tests: every rep in a full run, the first only in a quick one
	if [ $quick = 0 ] || [ "$r" = 1 ]; then
		want hops && hops "$r"
		want cpu && cpu_cost "$r"
		want pagefault && [ -x "$build/bench/pagefault_bench" ] && pagefault "$r"
	fi
	if [ $quick = 0 ] || [ "$r" = 1 ]; then
		want_mpi && mpi "$r"
	fi
	r=$((r + 1))
done
want loop && loop
say "measured; writing the report"
python3 "$here/report.py" --csv "$csv" --cpu "$cpucsv" --machine "$machine" --out "$base" \
	$([ $quick = 1 ] && echo --quick)
say "done in $(($(date +%s) - T0)) s: $base.md, .csv, -more.csv, -machine.txt, -*.png"
