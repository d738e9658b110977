#!/usr/bin/env bash
# Measures uiwarp's RDMA Write and Send throughput at 64 KiB and 1 MiB next
# to raw TCP in the same run, over 127.0.0.1, and writes the report to
# bench/throughput-latest.md.  A benchmark: it never fails for being slow.
#
# usage: bench/throughput.sh [uiwarp-bw options...]
#   BUILD=<dir>  build directory (default: build)
#   SECS=<n>     seconds per measurement (default: 3)
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$src/build}
secs=${SECS:-3}
out=$src/bench/throughput-latest.md

if [ ! -f "$build/CMakeCache.txt" ]; then
	cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
cmake --build "$build" --target uiwarp-bw -j "$(nproc)" >/dev/null

cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
rev=$(git -C "$src" rev-parse --short HEAD 2>/dev/null || echo unknown)
if ! git -C "$src" diff --quiet HEAD -- src include 2>/dev/null; then
	rev="$rev (with local changes)"
fi
btype=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$build/CMakeCache.txt")

tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
{
	echo "# uiwarp throughput over 127.0.0.1"
	echo
	echo "- date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
	echo "- machine: $(uname -srm), $(nproc) CPUs, ${cpu:-unknown CPU}"
	echo "- load average before the run: $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "- source: $rev, build type ${btype:-unknown}"
	echo "- command: uiwarp-bw -t $secs $*"
	echo
	"$build/uiwarp-bw" -t "$secs" "$@"
	echo
	echo "MB/s is 10^6 octets of payload per second; \"vs TCP\" divides by"
	echo "the raw TCP figure for the same message size from the same run."
} >"$tmp"
mv "$tmp" "$out"
trap - EXIT
cat "$out"
