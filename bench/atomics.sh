#!/usr/bin/env bash
# Measures RFC 7306 atomics over 127.0.0.1: FetchAdd operations per second
# with 1 and 8 QPs on one responder word, next to zero-byte RDMA Reads
# with the same QPs and depth in the same run, and the latency of one
# FetchAdd next to that of one zero-byte RDMA Read; writes the report to
# bench/atomics-latest.md.  A benchmark: it never fails for being slow.
#
# usage: bench/atomics.sh [uiwarp-atomicbench options...]
#   BUILD=<dir>  build directory (default: build)
#   SECS=<n>     seconds per throughput measurement (default: 3)
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$src/build}
secs=${SECS:-3}
out=$src/bench/atomics-latest.md

if [ ! -f "$build/CMakeCache.txt" ]; then
	cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
cmake --build "$build" --target uiwarp-atomicbench -j "$(nproc)" >/dev/null

cpu=$(sed -n '/^model name/{s/^model name[[:space:]]*: //p;q}' /proc/cpuinfo)
rev=$(git -C "$src" rev-parse --short HEAD 2>/dev/null || echo unknown)
if ! git -C "$src" diff --quiet HEAD -- src include 2>/dev/null ||
   [ -n "$(git -C "$src" ls-files --others --exclude-standard -- src include 2>/dev/null)" ]; then
	rev="$rev (with local changes)"
fi
btype=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$build/CMakeCache.txt")

tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
{
	echo "# uiwarp RFC 7306 atomics over 127.0.0.1"
	echo
	echo "- date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
	echo "- machine: $(uname -srm), $(nproc) CPUs, ${cpu:-unknown CPU}"
	echo "- source: $rev, build type ${btype:-unknown}"
	echo "- command: uiwarp-atomicbench -t $secs $*"
	echo
	"$build/uiwarp-atomicbench" -t "$secs" "$@"
	echo
	echo "ops/s: completed operations per second, summed over the QPs;"
	echo "every QP does FetchAdds of 1 on the same 64-bit word of the"
	echo "responder (read_0: zero-byte RDMA Reads, the same QPs and depth,"
	echo "the baseline of the same run).  Requester QPs share one device,"
	echo "responder QPs another; each requester QP has its own thread,"
	echo "which sleeps on its CQ's fd between completions.  Latency: post"
	echo "to completion of one operation at a time, FetchAdd and Read"
	echo "alternating on one QP."
} >"$tmp"
mv "$tmp" "$out"
trap - EXIT
cat "$out"
