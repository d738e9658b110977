#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz/ with clang (AddressSanitizer
# and UndefinedBehaviorSanitizer, every finding fatal) and runs each one
# for the given number of seconds on a copy of its seed corpus, one after
# another.  Before fuzzing a target, the reproducers saved under
# tests/fuzz/crashes/<target>/ are run once each: they must not fail any
# more.  Exits non-zero when anything crashed, hung or failed to build.
#
#   scripts/fuzz.sh [seconds-per-target] [target...]     (default 60, all)
#
# Targets: the wire codecs (crc32c mpa_frame mpa_v2 mpa_fpdu mpa_layout
# ddp_hdr read_req term atomic), the RFC 6581 negotiation (mpa2), the
# engine's receive path after the handshake (engine_rx) and the
# connection manager's MPA startup (mpa_startup, which listens on
# 127.0.0.1 with a progress thread of its own; a run of it holds one
# loopback port).  tests/fuzz/README.md says what each checks.
#
# Environment: FUZZ_BUILD, the build directory (default build-fuzz/ in
# the source tree).  Each run starts afresh in $FUZZ_BUILD/run/<target>/:
# corpus/ (the seeds plus what the run added; tests/fuzz/corpus/ is never
# written), artifacts/ (failing inputs) and log.
#
# Everything happens in functions, which bash reads whole before running
# them: editing this file during a long run does not disturb the run.
set -euo pipefail

die() {
	echo "fuzz: $*" >&2
	exit 1
}

build_targets() {
	command -v clang >/dev/null ||
		die "clang not found: libFuzzer needs clang and" \
			"libclang-rt-dev (run scripts/install-deps.sh as root)"
	command -v cmake >/dev/null || die "cmake not found"
	mkdir -p "$build"
	if [ ! -f "$build/CMakeCache.txt" ]; then
		if ! cmake -S "$src" -B "$build" -DCMAKE_C_COMPILER=clang \
			>"$build/configure.log" 2>&1; then
			cat "$build/configure.log" >&2
			rm -f "$build/CMakeCache.txt"
			die "configuring $build failed"
		fi
	fi
	if ! cmake --build "$build" -j "$(nproc)" >"$build/build.log" 2>&1
	then
		cat "$build/build.log" >&2
		die "building the fuzz targets failed"
	fi
}

# Replays tests/fuzz/crashes/<t>/*; returns 1 if any still fails.
replay_saved() {
	local t=$1 bin=$2 run=$3 c rc=0

	[ -d "$src/crashes/$t" ] || return 0
	for c in "$src/crashes/$t"/*; do
		[ -f "$c" ] || continue
		if ! "$bin" "$c" >"$run/replay.log" 2>&1; then
			echo "fuzz: $t: saved reproducer ${c#"$root"/} still" \
				"fails:" >&2
			grep -E -A1 'invariant violated|ERROR:|runtime error' \
				"$run/replay.log" | sed -n 1,6p >&2 || true
			rc=1
		fi
	done
	return $rc
}

# Fuzzes target t for secs seconds; appends its row to rows, its name to
# failed when it found something.
fuzz_one() {
	local t=$1 bin=$build/fuzz_$1 run=$build/run/$1
	local status=ok rc=0 t0 t1 runs eps last cov ft corp wall a

	[ -x "$bin" ] || die "no target fuzz_$t (tests/fuzz/fuzz_$t.c)"
	rm -rf "$run"
	mkdir -p "$run/corpus" "$run/artifacts"
	if [ -d "$src/corpus/$t" ]; then
		cp -r "$src/corpus/$t/." "$run/corpus/"
	fi
	replay_saved "$t" "$bin" "$run" || status=FAIL

	echo "fuzz: $t: ${secs}s ..." >&2
	t0=$(date +%s.%N)
	"$bin" -max_total_time="$secs" -timeout=10 -print_final_stats=1 \
		-artifact_prefix="$run/artifacts/" "$run/corpus" \
		>"$run/log" 2>&1 || rc=$?
	t1=$(date +%s.%N)

	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$run/log")
	eps=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$run/log")
	last=$(grep -E '^#[0-9]+.*cov: ' "$run/log" | tail -n 1 || true)
	cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
	ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
	corp=$(sed -n 's/.* corp: \([0-9]*\)\/.*/\1/p' <<<"$last")
	wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
	if [ $rc -ne 0 ]; then
		status=FAIL
		echo "fuzz: $t: exit status $rc (full log: $run/log):" >&2
		grep -E -A3 'invariant violated|ERROR:|runtime error' \
			"$run/log" | sed -n 1,24p >&2 ||
			grep -vE '^#[0-9]+|^(INFO|stat::)' "$run/log" |
			tail -n 24 >&2
		for a in "$run/artifacts"/*; do
			[ -f "$a" ] || continue
			echo "fuzz: $t: input $a; replay: $bin $a;" \
				"minimise: $bin -minimize_crash=1" \
				"-max_total_time=60 $a" >&2
		done
	fi
	[ "$status" = ok ] || failed+=("$t")
	rows+=("$(printf '%-12s %11s %9s %6s %8s %6s %8s  %s' "$t" \
		"${runs:-?}" "${eps:-?}" "${cov:-?}" "${ft:-?}" "${corp:-?}" \
		"${wall}s" "$status")")
}

main() {
	local f t

	root=$(cd "$(dirname "$0")/.." && pwd)
	src=$root/tests/fuzz
	build=${FUZZ_BUILD:-$root/build-fuzz}
	secs=${1:-60}
	[[ $secs =~ ^[1-9][0-9]*$ ]] ||
		die "seconds per target must be a positive integer, not '$secs'"
	[ $# -eq 0 ] || shift

	build_targets
	if [ $# -gt 0 ]; then
		targets=("$@")
	else
		targets=()
		for f in "$src"/fuzz_*.c; do
			f=${f##*/fuzz_}
			targets+=("${f%.c}")
		done
	fi
	[ ${#targets[@]} -gt 0 ] || die "no targets in $src"

	# Every sanitizer finding is fatal; leaks count too.
	: "${ASAN_OPTIONS:=detect_leaks=1:strict_string_checks=1}"
	: "${UBSAN_OPTIONS:=halt_on_error=1:print_stacktrace=1}"
	export ASAN_OPTIONS UBSAN_OPTIONS

	failed=()
	rows=()
	for t in "${targets[@]}"; do
		fuzz_one "$t"
	done

	printf '%-12s %11s %9s %6s %8s %6s %8s  %s\n' target runs exec/s \
		cov features corpus time result
	printf '%s\n' "${rows[@]}"
	if [ ${#failed[@]} -gt 0 ]; then
		echo "fuzz: FAILED: ${failed[*]} (logs and inputs in" \
			"$build/run/)" >&2
		exit 1
	fi
	echo "fuzz: all ${#targets[@]} targets ran ${secs}s each without a" \
		"finding"
}

# One compound command: bash has read it whole before it runs, so an edit
# of this file during a run changes nothing.
{ main "$@"; exit; }
