#!/bin/sh
# SPDX-License-Identifier: MIT
# ./dnp demo's LO|FA|MO part (apps/dnp-demo.sh --lofamo-only: the whole demo
# takes minutes; this part, ~15 s, is the one with the fault map): it prints
# the supervisor's fault-map URL while the drill runs, the URL serves the
# page, the drill passes, and the source tree's `git status --porcelain` is
# the same afterwards (the demo writes nothing into the tree).
# usage: demo.sh BUILD_DIR SOURCE_DIR
# Exit: 0 pass, 1 fail, 77 skip (supervisor without libmicrohttpd, no curl).
set -u
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
. "$(dirname "$0")/lib.sh"
need_built "$build/apps/dnp-run" "$build/lofamo/dnp-supervisor" "$build/lofamo/dnp-hfm" \
	"$build/dnp-core/dnpd/dnpctl"
command -v curl >/dev/null || { echo "SKIP: no curl to fetch the fault map"; exit 77; }
ldd "$build/lofamo/dnp-supervisor" 2>/dev/null | grep -q libmicrohttpd ||
	{ echo "SKIP: dnp-supervisor built without libmicrohttpd (no fault map)"; exit 77; }
fail() {
	echo "FAIL: $*"
	[ -f "$dir/demo.out" ] && { echo "--- demo output"; tail -n 30 "$dir/demo.out"; }
	exit 1
}
run_dir "$(mktemp -d)"
git_status() { git -C "$src" status --porcelain 2>/dev/null; }
has_git=false
git -C "$src" rev-parse --git-dir >/dev/null 2>&1 && has_git=true
$has_git && git_status >"$dir/before"

timeout 120 sh "$src/apps/dnp-demo.sh" "$build" --lofamo-only >"$dir/demo.out" 2>&1 &
demo=$!
pids="$demo"
url_said() { grep -q "fault map, live: open http://" "$dir/demo.out"; }
wait_for 60 url_said || fail "the demo never printed the fault map's URL"
url=$(sed -n 's|.*fault map, live: open \(http://[^ ]*\) in a browser.*|\1|p' "$dir/demo.out")
case $url in http://127.0.0.1:[0-9]*/) ;; *) fail "not a local URL: '$url'" ;; esac
curl -sf --max-time 10 "$url" >"$dir/page.html" || fail "$url does not answer"
grep -q "LO|FA|MO fault map" "$dir/page.html" || fail "$url is not the fault map page"
wait "$demo"
rc=$?
pids=""
[ $rc = 0 ] && grep -q "^lofamo drill: ok" "$dir/demo.out" || fail "the demo's drill failed (exit $rc)"
if $has_git; then
	git_status >"$dir/after"
	cmp -s "$dir/before" "$dir/after" || {
		diff "$dir/before" "$dir/after"
		fail "the demo changed git status"
	}
	echo "git status unchanged"
else
	echo "(not a git checkout: the tree's status not compared)"
fi
echo "demo: ok (fault map at $url)"
