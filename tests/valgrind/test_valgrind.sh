#!/usr/bin/env bash
# The loopback tests under valgrind's memcheck: the soak (256 QPs on one
# device, mixed Writes, Reads and Sends, every octet verified; fewer with
# UIW_SOAK_PAIRS) and every other loopback test; then some of them again
# over DDP over SCTP on usrsctp (UIW_LB_LLP=sctp-udp: the RFC 5043 layer,
# the usrsctp carrier and the library itself under memcheck).  Any invalid access, use
# of uninitialised memory, or definite or indirect leak fails the test
# (memcheck's exit code 1); the cmocka cases must pass as well.  Prints
# how long each program took under valgrind.
#
# Usage: test_valgrind.sh <build-dir> [<source-dir>]
set -uo pipefail

build=${1:?usage: test_valgrind.sh <build-dir> [<source-dir>]}

# shellcheck source=../check_lib.sh
. "$(dirname "$0")/../check_lib.sh"

command -v valgrind >/dev/null ||
	fail "valgrind is not installed (make deps installs it)"
progs=()
for p in "$build"/loopback_test_*; do
	[ -x "$p" ] && progs+=("$p")
done
[ ${#progs[@]} -gt 0 ] || fail "no loopback tests in $build: build first"
found_soak=0
for p in "${progs[@]}"; do
	[ "$(basename "$p")" = loopback_test_soak ] && found_soak=1
done
[ $found_soak -eq 1 ] || fail "$build/loopback_test_soak is missing"

export UIW_SOAK_PAIRS=${UIW_SOAK_PAIRS:-128}
echo "valgrind $(valgrind --version), soak with $UIW_SOAK_PAIRS connections"
bad=0
t_all=$(date +%s%N)
# Entries "<program>" or "<program>@sctp" (the same over SCTP).
for p in "$build"/loopback_test_atomic "$build"/loopback_test_manyqp; do
	[ -x "$p" ] || fail "$p is missing"
	progs+=("$p@sctp")
done
for e in "${progs[@]}"; do
	p=${e%@sctp}
	name=$(basename "$p")
	llp=tcp
	[ "$p" != "$e" ] && { llp=sctp-udp; name="$name over SCTP"; }
	log=$(mktemp)
	t0=$(date +%s%N)
	UIW_LB_LLP=$llp valgrind -q --tool=memcheck --leak-check=full \
		--errors-for-leak-kinds=definite,indirect \
		--show-leak-kinds=definite,indirect --error-exitcode=1 \
		--track-origins=no "$p" >"$log" 2>&1
	rc=$?
	ms=$(( ($(date +%s%N) - t0) / 1000000 ))
	if [ $rc -ne 0 ] || grep -q '^==[0-9]*== ' "$log"; then
		cat "$log"
		echo "FAIL: $name under valgrind: exit $rc (${ms} ms)" >&2
		bad=1
	else
		grep '^soak:' "$log"
		echo "ok: $name under valgrind, ${ms} ms"
	fi
	rm -f "$log"
done
echo "valgrind: $(( ($(date +%s%N) - t_all) / 1000000 )) ms in all"
exit $bad
