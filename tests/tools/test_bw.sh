#!/usr/bin/env bash
# Smoke test of uiwarp-bw: a very short run must print a table whose
# throughput figures (raw TCP, RDMA Write, Send) are numbers above zero.
# It says nothing about speed.
set -uo pipefail

build=${1:?usage: test_bw.sh <build-dir> <source-dir>}
bin=$build/uiwarp-bw

# shellcheck source=../check_lib.sh
. "$(dirname "$0")/../check_lib.sh"

[ -x "$bin" ] || fail "$bin is missing: build the tree first"
out=$(timeout 120 "$bin" -t 0.3 -s 64k,100000 -d 8 2>&1)
rc=$?
echo "$out"
[ "$rc" -eq 0 ] || fail "uiwarp-bw exited with $rc"
for t in tcp rdma_write send; do
	for size in 65536 100000; do
		row=$(echo "$out" | grep "^| $t | $size |") ||
			fail "no row for $t at $size octets"
		echo "$row" | awk -F'|' '{
			mbps = $5 + 0; ratio = $6
			gsub(/ /, "", ratio)
			if (!(mbps > 0)) exit 1
			if (ratio != "-" && !(ratio + 0 > 0)) exit 1
		}' || fail "not a positive figure: $row"
	done
done
echo "PASS"
