#!/usr/bin/env bash
# make check: builds the libFuzzer targets (clang, ASan + UBSan) into
# <build-dir>/fuzz and runs each for a short fixed time on a copy of its
# seed corpus, after replaying the saved reproducers.  Fails on any
# crash, hang or sanitizer report, and when clang or libFuzzer is missing
# (the fuzz targets are part of the suite; nothing is skipped).
#   bash test_fuzz_short.sh <build-dir> <source-dir>
set -euo pipefail
build=${1:?build directory}
srcdir=${2:?source directory}
# 8 s per target (12 targets: about 100 s of fuzzing on top of the
# build), fewer seconds each if targets are added
# beyond 12 (the whole run stays near 100 s; at least 3 s each).
n=$(ls "$srcdir"/tests/fuzz/fuzz_*.c | wc -l)
secs=$((100 / (n > 0 ? n : 1)))
[ $secs -le 8 ] || secs=8
[ $secs -ge 3 ] || secs=3
secs=${FUZZ_SHORT_SECONDS:-$secs}

if ! command -v clang >/dev/null; then
	echo "FAIL: clang is not installed; the fuzz targets need clang and" \
		"libclang-rt-dev (scripts/install-deps.sh installs them)" >&2
	exit 1
fi
FUZZ_BUILD=$build/fuzz exec bash "$srcdir/scripts/fuzz.sh" "$secs"
