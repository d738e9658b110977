#!/usr/bin/env bash
# The benchmark's own programs (bench/*.c) build without a warning and
# work: cpuprobe gives round trips in nanoseconds (one figure, or one per
# 50 ms window) and refuses bad arguments; wirepattern plays every
# pattern and prints a median for each; copyalign prints its table.
# `make bench` compiles them itself; this keeps them from rotting between
# reports.  Short runs: nothing here is about speed.
#
# usage: test_bench_sources.sh <build-dir> <source-dir>
set -uo pipefail

src=${2:?usage: test_bench_sources.sh <build-dir> <source-dir>}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# shellcheck source=../check_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../check_lib.sh"

cc=${CC:-cc}
for prog in cpuprobe wirepattern copyalign; do
	if "$cc" -O2 -Wall -Wextra -Werror -pthread -o "$tmp/$prog" \
		"$src/bench/$prog.c" 2>"$tmp/$prog.cc"; then
		ok "bench/$prog.c builds with -Wall -Wextra -Werror"
	else
		bad "bench/$prog.c does not build cleanly"
		show "$tmp/$prog.cc"
	fi
done

# cpuprobe: a positive whole number of nanoseconds, on a machine with two
# CPUs or more (CI has two); with one, exit status 2 and a message.
ncpu=$(nproc)
if [ -x "$tmp/cpuprobe" ]; then
	out=$("$tmp/cpuprobe" 5 2>"$tmp/probe.err")
	rc=$?
	if [ "$ncpu" -ge 2 ]; then
		if [ "$rc" -eq 0 ] && [[ $out =~ ^[0-9]+$ ]] && [ "$out" -gt 0 ]; then
			ok "cpuprobe 5: a round trip of $out ns"
		else
			bad "cpuprobe 5: status $rc, output '$out'"
			show "$tmp/probe.err"
		fi
		"$tmp/cpuprobe" -t 0.3 >"$tmp/trace" 2>"$tmp/probe.err"
		rc=$?
		lines=$(wc -l <"$tmp/trace")
		if [ "$rc" -eq 0 ] && [ "$lines" -ge 1 ] && [ "$lines" -le 7 ] &&
		   ! grep -qvE '^[1-9][0-9]*$' "$tmp/trace"; then
			ok "cpuprobe -t 0.3: $lines windows of 50 ms, each a positive figure"
		else
			bad "cpuprobe -t 0.3: status $rc, $lines lines"
			show "$tmp/trace" "$tmp/probe.err"
		fi
		out=$(taskset -c 0 "$tmp/cpuprobe" 5 2>"$tmp/probe.err")
		rc=$?
		if [ "$rc" -eq 2 ] && [ -z "$out" ] &&
		   grep -q "fewer than two CPUs" "$tmp/probe.err"; then
			ok "cpuprobe on one CPU: status 2 and a message"
		else
			bad "cpuprobe on one CPU: status $rc, output '$out'"
			show "$tmp/probe.err"
		fi
	else
		if [ "$rc" -eq 2 ] && grep -q "fewer than two CPUs" "$tmp/probe.err"; then
			ok "cpuprobe with one CPU: status 2 and a message"
		else
			bad "cpuprobe with one CPU: status $rc, output '$out'"
			show "$tmp/probe.err"
		fi
	fi
	for args in "-t" "-t 0" "-t 1 2" "-5" "0" "5 6"; do
		# shellcheck disable=SC2086 # the arguments are split on purpose
		"$tmp/cpuprobe" $args >"$tmp/out" 2>"$tmp/probe.err"
		rc=$?
		if [ "$rc" -eq 2 ] && [ ! -s "$tmp/out" ] &&
		   grep -q "usage: cpuprobe" "$tmp/probe.err"; then
			ok "cpuprobe $args: refused with its usage"
		else
			bad "cpuprobe $args: status $rc"
			show "$tmp/out" "$tmp/probe.err"
		fi
	done
fi

# wirepattern: two turns at 64 KiB; every pattern gets a positive median,
# raw's ratio is 1.00.
if [ -x "$tmp/wirepattern" ]; then
	if timeout 60 "$tmp/wirepattern" 65536 20 64690 2 >"$tmp/wp" 2>&1; then
		rows=$(awk -F'|' '$2 ~ /[a-z]/ && $3 + 0 > 0 && $4 + 0 > 0 { n++ }
			END { print n + 0 }' "$tmp/wp")
		if [ "$rows" -eq 7 ] &&
		   grep -qE '^\| raw \| [0-9.]+ \| [0-9.]+ \| 1\.00 \|$' "$tmp/wp"; then
			ok "wirepattern: 7 patterns with positive medians, raw at 1.00"
		else
			bad "wirepattern: $rows patterns with figures"
			show "$tmp/wp"
		fi
	else
		bad "wirepattern 65536 20 64690 2 failed"
		show "$tmp/wp"
	fi
	if "$tmp/wirepattern" 0 >"$tmp/out" 2>&1; then
		bad "wirepattern 0: accepted a message of no octets"
	elif grep -q "usage: wirepattern" "$tmp/out"; then
		ok "wirepattern 0: refused with its usage"
	else
		bad "wirepattern 0: refused without its usage"
		show "$tmp/out"
	fi
fi

# copyalign: a row per distance, each with two positive rates.
if [ -x "$tmp/copyalign" ]; then
	if timeout 120 "$tmp/copyalign" >"$tmp/ca" 2>&1; then
		rows=$(awk -F'|' '$2 ~ /[0-9]/ && $3 + 0 > 0 && $4 + 0 > 0 { n++ }
			END { print n + 0 }' "$tmp/ca")
		if [ "$rows" -ge 10 ] && grep -q '^| 0 |' "$tmp/ca"; then
			ok "copyalign: $rows distances, each with two rates"
		else
			bad "copyalign: $rows rows with rates"
			show "$tmp/ca"
		fi
	else
		bad "copyalign failed"
		show "$tmp/ca"
	fi
fi

check_summary
