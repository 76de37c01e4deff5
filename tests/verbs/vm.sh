#!/bin/bash
# SPDX-License-Identifier: MIT
# vm.sh — boots Debian's kernel (which ships rdma_rxe, Soft-RoCE) in qemu with
# this machine's root shared read-only over 9p, and runs one guest script in
# it (chroot into the shared root: the build directory, rdma-core, perftest
# and iproute2 are the host's own files, nothing is copied into an image).
#
#   vm.sh OUTDIR SCRIPT [ARGS...]
#
# OUTDIR (host, created) is shared read-write and appears in the guest as
# /tmp/vmout; the guest script's output goes to OUTDIR/guest.log, its exit
# status to OUTDIR/rc, the serial console to OUTDIR/console.log, the
# accelerator used ("kvm" or "tcg") to OUTDIR/accel. vm.sh exits with the
# guest script's status, or 77 (with the reason) when no VM can boot here.
#
# Root only (installs qemu-system-x86, busybox-static, kmod, rdma-core,
# ibverbs-utils, perftest and downloads linux-image-amd64 into
# /var/cache/softdnp-verbs, extracted, never installed). KVM is tried first
# with a boot timeout (a KVM guest hung after "Probing EDD" on this machine),
# then TCG. Environment: VERBS_ACCEL=tcg|kvm forces one, VERBS_TIMEOUT
# (seconds, default 600) bounds the whole run, VERBS_SMP (default 2) sets the
# vCPUs; BENCH_ROUNDS, BENCH_SIZES, VERBS_VARIANTS and VERBS_BEFORE_DNPD are
# passed on to the guest (tests/verbs/guest.sh).
set -u

skip() {
	echo "SKIP: $*" >&2
	exit 77
}

[ $# -ge 2 ] || {
	echo "usage: vm.sh OUTDIR SCRIPT [ARGS...]" >&2
	exit 2
}
OUT=$1
shift
[ "$(id -u)" = 0 ] || skip "needs root (package installs, qemu)"
CACHE=/var/cache/softdnp-verbs
TIMEOUT=${VERBS_TIMEOUT:-600}
SMP=${VERBS_SMP:-2}

need_pkgs() {
	local missing=()
	command -v qemu-system-x86_64 >/dev/null || missing+=(qemu-system-x86)
	[ -x /bin/busybox ] || missing+=(busybox-static)
	command -v depmod >/dev/null || missing+=(kmod)
	command -v cpio >/dev/null || missing+=(cpio)
	command -v rdma >/dev/null || missing+=(iproute2)
	command -v ibv_devices >/dev/null || missing+=(ibverbs-utils)
	[ -e /usr/lib/x86_64-linux-gnu/libibverbs/librxe-rdmav34.so ] ||
		missing+=(ibverbs-providers rdma-core)
	command -v ib_send_lat >/dev/null || missing+=(perftest)
	if [ ${#missing[@]} -gt 0 ]; then
		DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
			-o Dpkg::Options::=--force-unsafe-io "${missing[@]}" >"$OUT/apt.log" 2>&1 ||
			skip "apt-get install ${missing[*]} failed (see $OUT/apt.log)"
	fi
}

# Kernel: linux-image-amd64's current image, extracted (not installed).
get_kernel() {
	mkdir -p "$CACHE"
	KVER=$(ls "$CACHE/k/lib/modules" 2>/dev/null | head -1)
	if [ -z "$KVER" ] || [ ! -e "$CACHE/k/lib/modules/$KVER/modules.dep" ]; then
		local pkg
		pkg=$(apt-cache depends linux-image-amd64 2>/dev/null |
			awk '/Depends: linux-image-[0-9]/ {print $2; exit}')
		[ -n "$pkg" ] || skip "apt-cache knows no linux-image-amd64"
		(cd "$CACHE" && apt-get download "$pkg" >"$OUT/kernel.log" 2>&1) ||
			skip "apt-get download $pkg failed (see $OUT/kernel.log)"
		rm -rf "$CACHE/k"
		dpkg-deb -x "$CACHE/$pkg"_*.deb "$CACHE/k" || skip "dpkg-deb -x $pkg failed"
		KVER=$(ls "$CACHE/k/lib/modules" | head -1)
		depmod -b "$CACHE/k" "$KVER" || skip "depmod failed"
	fi
	KERNEL=$CACHE/k/boot/vmlinuz-$KVER
	[ -r "$KERNEL" ] || skip "no $KERNEL"
	[ -e "$CACHE/k/lib/modules/$KVER/kernel/drivers/infiniband/sw/rxe/rdma_rxe.ko" ] ||
		skip "the kernel package has no rdma_rxe.ko"
}

# Initramfs: busybox, the modules (in dependency order) and an init that
# mounts the host root and chroots into it.
make_initrd() {
	local d=$OUT/initrd m mods=()
	INITRD=$OUT/initrd.cpio.gz
	rm -rf "$d"
	mkdir -p "$d/bin" "$d/mod" "$d/proc" "$d/sys" "$d/dev" "$d/root"
	cp /bin/busybox "$d/bin/busybox"
	# crc32_generic first: rdma_rxe fails with "failed to init crc32 algorithm" without it.
	for m in crc32_generic virtio_pci 9pnet_virtio 9p veth rdma_rxe; do
		mods+=($(modprobe -d "$CACHE/k" -S "$KVER" --show-depends "$m" |
			awk '$1 == "insmod" {print $2}'))
	done
	: >"$d/mod/order"
	for m in "${mods[@]}"; do
		grep -qx "$(basename "$m")" "$d/mod/order" && continue
		cp "$m" "$d/mod/"
		basename "$m" >>"$d/mod/order"
	done
	cat >"$d/init" <<'EOF'
#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
for m in $(cat /mod/order); do insmod /mod/$m || echo "insmod $m failed"; done
R=/root
mount -t 9p -o trans=virtio,version=9p2000.L,ro,cache=loose,msize=262144 hostroot $R ||
	{ echo "mount hostroot failed"; poweroff -f; }
# The guest's /tmp is its own; the host's stays reachable under /hosttmp for
# the folders named in vmout/binds (a build or clone under the host's /tmp).
mkdir -p /hosttmp && mount -o bind $R/tmp /hosttmp
mount -t tmpfs -o size=256m tmp $R/tmp
mount -t tmpfs run $R/run
mount -t proc proc $R/proc
mount -t sysfs sys $R/sys
mount -t devtmpfs dev $R/dev
mkdir -p $R/dev/shm; mount -t tmpfs shm $R/dev/shm
mkdir -p $R/tmp/vmout
mount -t 9p -o trans=virtio,version=9p2000.L,cache=none,msize=262144 vmout $R/tmp/vmout ||
	{ echo "mount vmout failed"; poweroff -f; }
for p in $(cat $R/tmp/vmout/binds 2>/dev/null); do
	rel=${p#/tmp/}
	mkdir -p "$R/tmp/$rel" && mount -o bind "/hosttmp/$rel" "$R/tmp/$rel" ||
		echo "bind $p failed"
done
ip link set lo up 2>/dev/null
echo up >$R/tmp/vmout/booted
chroot $R /bin/bash /tmp/vmout/cmd >$R/tmp/vmout/guest.log 2>&1
echo $? >$R/tmp/vmout/rc
sync
poweroff -f
EOF
	chmod +x "$d/init"
	(cd "$d" && find . | cpio -o -H newc 2>/dev/null | gzip -1) >"$INITRD"
	rm -rf "$d"
}

# Runs qemu with accelerator $1; waits for the boot marker for up to $2 s.
run_vm() {
	local accel=$1 boot_wait=$2 cpu pid t=0
	cpu=max
	[ "$accel" = kvm ] && cpu=host
	rm -f "$OUT/booted" "$OUT/rc"
	echo "$accel" >"$OUT/accel"
	timeout "$TIMEOUT" qemu-system-x86_64 -accel "$accel" -cpu "$cpu" -smp "$SMP" -m 1536 \
		-kernel "$KERNEL" -initrd "$INITRD" -nographic -no-reboot -nic none \
		-append "console=ttyS0 panic=-1 quiet edd=off" \
		-virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap \
		-virtfs local,path="$OUT",mount_tag=vmout,security_model=none,multidevs=remap \
		-serial "file:$OUT/console.$accel.log" -monitor none </dev/null >"$OUT/qemu.$accel.log" 2>&1 &
	pid=$!
	QPID=$pid
	while [ ! -e "$OUT/booted" ]; do
		if ! kill -0 "$pid" 2>/dev/null; then
			wait "$pid"
			return 1
		fi
		if [ "$t" -ge "$boot_wait" ]; then
			kill "$pid" 2>/dev/null
			wait "$pid"
			return 1
		fi
		sleep 1
		t=$((t + 1))
	done
	wait "$pid"
	return 0
}

mkdir -p "$OUT" || exit 2
OUT=$(cd "$OUT" && pwd)
# qemu runs under timeout(1), in a process group of its own: end it with us.
QPID=
trap '[ -n "$QPID" ] && kill "$QPID" 2>/dev/null' EXIT
trap 'exit 1' INT TERM
need_pkgs
get_kernel
make_initrd
# The command the guest runs (a host path: the host root is the guest's root).
{
	echo "cd $(printf '%q' "$PWD") || exit 2"
	# The few settings the guest scripts read (the guest starts with a bare environment).
	for v in BENCH_ROUNDS BENCH_SIZES VERBS_VARIANTS VERBS_BEFORE_DNPD; do
		[ -n "${!v:-}" ] && echo "export $v=$(printf '%q' "${!v}")"
	done
	printf '%q ' "$@"
	echo
} >"$OUT/cmd"
# Folders of the host's /tmp the guest needs (its /tmp is a tmpfs of its own):
# the top folder under /tmp of the working directory and of every path argument
# (a clone in /tmp/X: /tmp/X is bound whole).
for a in "$PWD" "$@"; do
	[ -e "$a" ] || continue
	r=$(realpath "$a")
	case $r in
	/tmp/vmout | /tmp/vmout/*) ;;
	/tmp/?*)
		t=${r#/tmp/}
		echo "/tmp/${t%%/*}"
		;;
	esac
done | sort -u >"$OUT/binds"

booted=
if [ "${VERBS_ACCEL:-}" != tcg ] && [ -w /dev/kvm ]; then
	if run_vm kvm 25; then
		booted=kvm
	else
		echo "vm.sh: KVM guest did not boot in 25 s; falling back to TCG" >&2
	fi
fi
if [ -z "$booted" ] && [ "${VERBS_ACCEL:-}" != kvm ]; then
	run_vm tcg 120 && booted=tcg
fi
if [ -z "$booted" ]; then
	tail -5 "$OUT"/console.*.log "$OUT"/qemu.*.log 2>/dev/null >&2
	skip "no VM booted (KVM and TCG; consoles in $OUT)"
fi
cp "$OUT/console.$booted.log" "$OUT/console.log" 2>/dev/null
if [ ! -e "$OUT/rc" ]; then
	echo "vm.sh: the guest ($booted) ended without a result (timeout ${TIMEOUT}s?)" >&2
	tail -20 "$OUT/console.log" "$OUT/guest.log" >&2 2>/dev/null
	exit 1
fi
exit "$(cat "$OUT/rc")"
