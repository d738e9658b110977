#!/usr/bin/env bash
# What the drop-in libibverbs.so.1 and librdmacm.so.1 (src/compat/) cost:
# stock Debian programs running through uiwarp-run next to uiwarp's own
# API doing the same work, on this machine, over 127.0.0.1, in one run:
#
#   - RDMA Write bandwidth: perftest's ib_write_bw -R (the drop-in)
#     against uiwarp-perf --bw -t write (the uiw_ API), two processes
#     each, at the same sizes, depth and duration; uiwarp-perf both
#     asleep on the CQ's fd (--event) and busy-polling (--poll);
#   - Send/Receive ping-pong: ib_send_lat -R against uiwarp-perf --lat -t
#     send, the same sizes and counts; uiwarp-perf both busy-polling
#     (--poll, as perftest does) and asleep on the CQ's fd (--event);
#   - qperf's RDMA tests through the drop-in (rc_bw, rc_lat, -cm1)
#     against its TCP tests (tcp_bw, tcp_lat: the kernel's TCP, no
#     uiwarp), the same message sizes and time;
#   - connection setup: rping -c -C 1 runs, one after another, against
#     a persistent rping -s -P, with the libraries' default start delay
#     and with UIWARP_START_DELAY_MS=0, next to uiwarp-ping -c -C 1 (the
#     uiw_ API) and to rping starting and ending with no connection (its
#     usage message), the cost of the process and the libraries' loading.
#
# Every figure is the median of COMPAT_ROUNDS runs (connection setup: of
# COMPAT_CONNS runs), the two sides alternating run by run, so that a
# slow stretch of the machine falls on both.  Ratios are drop-in /
# native (for time: drop-in time / native time; for bandwidth: native
# rate / drop-in rate; above 1 means the drop-in costs that much more)
# and RDMA / TCP for qperf.
#
# Writes bench/compat-latest.md.  Builds nothing: run it after a build
# (make bench-compat builds first).  A benchmark: it never fails for
# being slow; a point that fails is n/a in its table, and every failed
# run is listed under the tables.
#
# usage: bench/compat.sh
#   BUILD=<dir>            build directory (default: build)
#   COMPAT_SIZES="..."     message sizes (default 64 4k 64k 1m)
#   COMPAT_DEPTH=<n>       operations outstanding in the bandwidth runs
#                          (default 16: ib_write_bw -t, uiwarp-perf -d)
#   COMPAT_SECS=<s>        seconds per bandwidth run, whole (perftest's -D;
#                          default 2)
#   COMPAT_ROUNDS=<n>      runs per figure (default 5)
#   COMPAT_LAT_ITERS=<n>   ping-pongs per latency run (default 5000; a
#                          fifth above 64 KiB)
#   COMPAT_QPERF_SECS=<s>  seconds per qperf test (default 3)
#   COMPAT_CONNS=<n>       client runs per connection figure (default 20)
#   COMPAT_PORT=<n>        first TCP port tried (default 21800: below the
#                          ephemeral ports, which connections take)
#   COMPAT_QUICK=1         a short trial: 1 s runs, one round, 1000
#                          ping-pongs, 5 connections
#   COMPAT_OUT=<file>      the report (default bench/compat-latest.md)
set -uo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$src/build}
if [ "${COMPAT_QUICK:-0}" = 1 ]; then
	secs=${COMPAT_SECS:-1}
	rounds=${COMPAT_ROUNDS:-1}
	lat_iters=${COMPAT_LAT_ITERS:-1000}
	qsecs=${COMPAT_QPERF_SECS:-1}
	conns=${COMPAT_CONNS:-5}
else
	secs=${COMPAT_SECS:-2}
	rounds=${COMPAT_ROUNDS:-5}
	lat_iters=${COMPAT_LAT_ITERS:-5000}
	qsecs=${COMPAT_QPERF_SECS:-3}
	conns=${COMPAT_CONNS:-20}
fi
sizes=${COMPAT_SIZES:-64 4k 64k 1m}
depth=${COMPAT_DEPTH:-16}
port=${COMPAT_PORT:-21800}
out=${COMPAT_OUT:-$src/bench/compat-latest.md}
# shellcheck source=lib.sh
source "$src/bench/lib.sh"

run=$build/uiwarp-run
perf=$build/uiwarp-perf
ping=$build/uiwarp-ping
for f in "$run" "$perf" "$ping"; do
	if [ ! -x "$f" ]; then
		echo "bench/compat.sh: $f is missing: build first (make bench-compat)" >&2
		exit 2
	fi
done
if ! libdir=$("$run" --print-libdir) ||
	[ ! -e "$libdir/libibverbs.so.1" ] || [ ! -e "$libdir/librdmacm.so.1" ]; then
	echo "bench/compat.sh: the drop-in libraries are not built in ${libdir:-$build/compat}" >&2
	exit 2
fi
for p in ib_write_bw ib_send_lat qperf rping ss; do
	if ! command -v "$p" >/dev/null; then
		echo "bench/compat.sh: $p is missing (scripts/install-deps.sh installs it)" >&2
		exit 2
	fi
done
# Every program's symbols bound at load, as rdma-core's programs are.
export LD_BIND_NOW=1
unset "${!UIWARP_@}"

bench_workdir

# next_port: the next TCP port from $port on that no socket has.
next_port() {
	port=$((port + 1))
	while ss -tanH "sport = :$port" 2>/dev/null | grep . >/dev/null; do
		port=$((port + 1))
	done
}

# serve OUT PORT CMD...: CMD in the background, its output in OUT.srv,
# until it listens on PORT (5 s at most: 1 then).  Sets $spid.
serve() {
	local f=$1 p=$2
	shift 2
	timeout 300 "$@" >"$f.srv" 2>&1 &
	spid=$!
	echo "$spid" >>"$work/pids"
	wait_listen "$p" "$spid" && return 0
	kill -TERM "$spid" 2>/dev/null
	wait "$spid" 2>/dev/null
	return 1
}
# unserve: the server ends by itself once its client is done (perftest,
# uiwarp-perf -s), and is stopped if it has not within 5 s; one that
# serves on (qperf: $persist set) is stopped at once.
unserve() {
	local i
	for ((i = 0; i < 100 && ${persist:-0} == 0; i++)); do
		alive "$spid" || break
		sleep 0.05
	done
	kill -TERM "$spid" 2>/dev/null
	wait "$spid" 2>/dev/null
}

# pair NAME SERVER-CMD... -- CLIENT-CMD...: one server and one client on
# a fresh port (the word PORT in either command is replaced by it); the
# client's output in $work/NAME, the server's in $work/NAME.srv.  0 when
# the client exits 0.
pair() {
	local name=$1 f=$work/$1 rc a
	local -a s=() c=()
	shift
	next_port
	while [ $# -gt 0 ] && [ "$1" != -- ]; do
		s+=("${1//PORT/$port}")
		shift
	done
	shift
	for a in "$@"; do
		c+=("${a//PORT/$port}")
	done
	echo "+ ${c[*]}" >&2
	serve "$f" "$port" "${s[@]}" || return 1
	waited timeout 300 "${c[@]}" >"$f" 2>&1
	rc=$?
	unserve
	return $rc
}

# ------------------------------------------------------------------
# One run each; every function prints one figure, or nothing.

# The row of a perftest result table for SIZE: column COL.
perftest_col() {
	awk -v s="$2" -v c="$3" '
		$1 == s && NF >= 5 && $c ~ /^[0-9.]+$/ { v = $c }
		END { if (v != "") print v }' "$1"
}

# perftest_fig NAME SIZE COL WHAT: column COL of the result row of run
# NAME (status $rc), or a note in the failures.  A run that printed its
# row and failed after it (at perftest's closing handshake) gives its
# figure, and the failure is noted too.
perftest_fig() {
	local v
	v=$(perftest_col "$work/$1" "$2" "$3")
	if [ -z "$v" ]; then
		failed "$4 at $2 octets" "$work/$1" "$work/$1.srv"
		return
	fi
	[ "$rc" -eq 0 ] ||
		failed "$4 at $2 octets: exit $rc after its result (figure kept)" "$work/$1"
	echo "$v"
}

# dropin_bw SIZE K: ib_write_bw's average, in MB/s (10^6 octets; perftest
# prints MiB/s).
dropin_bw() {
	local n=ptbw-$1-$2 v
	pair "$n" "$run" ib_write_bw -R -F -p PORT -s "$1" -t "$depth" \
		-D "$secs" -- "$run" ib_write_bw -R -F -p PORT -s "$1" \
		-t "$depth" -D "$secs" 127.0.0.1
	rc=$?
	v=$(perftest_fig "$n" "$1" 4 "ib_write_bw -R")
	[ -n "$v" ] && awk -v v="$v" 'BEGIN { printf "%.1f\n", v * 1.048576 }'
}
# native_bw SIZE K MODE: uiwarp-perf's RDMA Write rate in MB/s, --MODE.
native_bw() {
	local n=uwbw-$1-$2-$3 v
	if pair "$n" "$perf" -s -p PORT -- "$perf" -c 127.0.0.1 -p PORT --bw \
		-t write -S "$1" -d "$depth" -D "$secs" "--$3" --csv; then
		v=$(sed -n '/^test,/,$p' "$work/$n" >"$work/$n.csv"; csv_value "$work/$n.csv" mbps)
	fi
	[ -n "${v:-}" ] && printf '%.1f\n' "$v" ||
		failed "uiwarp-perf --bw -t write --$3 at $1 octets" "$work/$n" "$work/$n.srv"
}
# lat_iters_of SIZE: ping-pongs for that size.
lat_iters_of() {
	if [ "$1" -gt 65536 ]; then echo $(((lat_iters + 4) / 5)); else echo "$lat_iters"; fi
}
# dropin_lat SIZE K: ib_send_lat's typical (median) half round trip, µs.
dropin_lat() {
	local n=ptlat-$1-$2 it
	it=$(lat_iters_of "$1")
	pair "$n" "$run" ib_send_lat -R -F -p PORT -s "$1" -n "$it" -- \
		"$run" ib_send_lat -R -F -p PORT -s "$1" -n "$it" 127.0.0.1
	rc=$?
	perftest_fig "$n" "$1" 5 "ib_send_lat -R"
}
# native_lat SIZE K MODE: uiwarp-perf's median half round trip, µs.
native_lat() {
	local n=uwlat-$1-$2-$3 v it
	it=$(lat_iters_of "$1")
	if pair "$n" "$perf" -s -p PORT -- "$perf" -c 127.0.0.1 -p PORT --lat \
		-t send -S "$1" -n "$it" "--$3" --csv; then
		v=$(sed -n '/^test,/,$p' "$work/$n" >"$work/$n.csv"; csv_value "$work/$n.csv" lat_median_us)
	fi
	[ -n "${v:-}" ] && echo "$v" ||
		failed "uiwarp-perf --lat -t send --$3 at $1 octets" "$work/$n" "$work/$n.srv"
}
# qperf_fig FILE: the first figure of a qperf run, in MB/s (bw, qperf's
# units are powers of 1000) or µs (latency).
qperf_fig() {
	awk '
		$1 == "bw" && $2 == "=" {
			f["bytes/sec"] = 1e-6; f["KB/sec"] = 1e-3; f["MB/sec"] = 1
			f["GB/sec"] = 1e3; f["TB/sec"] = 1e6
			if ($4 in f) { printf "%.1f\n", $3 * f[$4]; exit }
		}
		$1 == "latency" && $2 == "=" {
			f["ns"] = 1e-3; f["us"] = 1; f["ms"] = 1e3; f["sec"] = 1e6
			if ($4 in f) { printf "%.2f\n", $3 * f[$4]; exit }
		}' "$1"
}
# qperf_run TEST SIZE K: TEST (tcp_* plain, rc_* through the drop-in
# with -cm1) at SIZE octets.
qperf_run() {
	local n=qperf-$1-$2-$3 v
	local -a pre=() cm=()
	case $1 in rc_*) pre=("$run"); cm=(-cm1) ;; esac
	if persist=1 pair "$n" "${pre[@]}" qperf -lp PORT -- "${pre[@]}" qperf -lp PORT \
		"${cm[@]}" -t "$qsecs" -m "$2" 127.0.0.1 "$1"; then
		v=$(qperf_fig "$work/$n")
	fi
	[ -n "${v:-}" ] && echo "$v" ||
		failed "qperf $1 at $2 octets" "$work/$n" "$work/$n.srv"
}

# med FILE: the median of the figures in FILE (one a line), or n/a.
med() {
	if [ -s "$1" ]; then
		awk "$awk_med"'{ a[++k] = $1 } END { print med(a, k) }' "$1"
	else
		echo n/a
	fi
}

# ------------------------------------------------------------------
# The runs.

started=$(date -u '+%Y-%m-%d %H:%M UTC')
load=$(cut -d' ' -f1-3 /proc/loadavg)
: >"$work/bw"
: >"$work/lat"
for s in $sizes; do
	o=$(to_octets "$s")
	for ((k = 1; k <= rounds; k++)); do
		# Which side goes first alternates from round to round.
		if ((k % 2)); then
			dropin_bw "$o" "$k" >>"$work/bw-d-$o"
			native_bw "$o" "$k" event >>"$work/bw-e-$o"
			native_bw "$o" "$k" poll >>"$work/bw-p-$o"
		else
			native_bw "$o" "$k" poll >>"$work/bw-p-$o"
			native_bw "$o" "$k" event >>"$work/bw-e-$o"
			dropin_bw "$o" "$k" >>"$work/bw-d-$o"
		fi
		dropin_lat "$o" "$k" >>"$work/lat-d-$o"
		native_lat "$o" "$k" poll >>"$work/lat-p-$o"
		native_lat "$o" "$k" event >>"$work/lat-e-$o"
	done
	d=$(med "$work/bw-d-$o")
	e=$(med "$work/bw-e-$o")
	p=$(med "$work/bw-p-$o")
	echo "| $(human "$o") | $d | $e | $(ratio "$d" "$e") | $p | $(ratio "$d" "$p") |" >>"$work/bw"
	d=$(med "$work/lat-d-$o")
	p=$(med "$work/lat-p-$o")
	e=$(med "$work/lat-e-$o")
	echo "| $(human "$o") | $d | $p | $(ratio "$p" "$d") | $e | $(ratio "$e" "$d") |" >>"$work/lat"
done

# qperf: RDMA through the drop-in against the kernel's TCP.
: >"$work/qperf"
for t in "bw 65536" "lat 64"; do
	set -- $t
	for ((k = 1; k <= rounds; k++)); do
		qperf_run "tcp_$1" "$2" "$k" >>"$work/q-tcp-$1"
		qperf_run "rc_$1" "$2" "$k" >>"$work/q-rc-$1"
	done
	tv=$(med "$work/q-tcp-$1")
	rv=$(med "$work/q-rc-$1")
	if [ "$1" = bw ]; then
		echo "| tcp_bw / rc_bw, $(human "$2") (MB/s) | $tv | $rv | $(ratio "$tv" "$rv") |" >>"$work/qperf"
	else
		echo "| tcp_lat / rc_lat, $(human "$2") (µs) | $tv | $rv | $(ratio "$tv" "$rv") |" >>"$work/qperf"
	fi
done

# Connection setup: one client process after another, each timed from
# its start to its end (ms).  rping -c -C 1 against rping -s -P, the
# default start delay and none alternating; uiwarp-ping the same way
# against uiwarp-ping -s -P; and rping printing its usage, no device.
# timed FILE CMD...: appends CMD's time in ms to FILE when it exits 0.
timed() {
	local f=$1 t0 t1
	shift
	t0=$EPOCHREALTIME
	if waited timeout 30 "$@" >"$work/timed.out" 2>&1; then
		t1=$EPOCHREALTIME
		echo $(((${t1/./} - ${t0/./}) / 1000)) >>"$f"
	else
		failed "$*" "$work/timed.out"
	fi
}
: >"$work/c-default"
: >"$work/c-zero"
: >"$work/c-native"
: >"$work/c-start"
next_port
rport=$port
if serve "$work/rping" "$rport" "$run" rping -s -P -a 127.0.0.1 -p "$rport"; then
	rpid=$spid
	for ((k = 0; k < conns; k++)); do
		timed "$work/c-default" "$run" rping -c -a 127.0.0.1 -p "$rport" -C 1
		timed "$work/c-zero" env UIWARP_START_DELAY_MS=0 "$run" rping -c \
			-a 127.0.0.1 -p "$rport" -C 1
	done
	kill -TERM "$rpid" 2>/dev/null
	wait "$rpid" 2>/dev/null
else
	failed "rping -s -P did not listen" "$work/rping.srv"
fi
next_port
if serve "$work/uping" "$port" "$ping" -s -P -a 127.0.0.1 -p "$port"; then
	upid=$spid
	for ((k = 0; k < conns; k++)); do
		timed "$work/c-native" "$ping" -c -a 127.0.0.1 -p "$port" -C 1
	done
	kill -TERM "$upid" 2>/dev/null
	wait "$upid" 2>/dev/null
else
	failed "uiwarp-ping -s -P did not listen" "$work/uping.srv"
fi
for ((k = 0; k < conns; k++)); do
	# rping -h: an unknown option; the usage, status EINVAL.
	t0=$EPOCHREALTIME
	"$run" rping -h >/dev/null 2>&1
	t1=$EPOCHREALTIME
	echo $(((${t1/./} - ${t0/./}) / 1000)) >>"$work/c-start"
done
cdef=$(med "$work/c-default")
czero=$(med "$work/c-zero")
cnat=$(med "$work/c-native")
cstart=$(med "$work/c-start")
cdiff=$(awk -v a="$cdef" -v b="$czero" 'BEGIN {
	if (a ~ /^[0-9.]+$/ && b ~ /^[0-9.]+$/) print a - b; else print "n/a" }')

# ------------------------------------------------------------------
# The report.

cpu=$(bench_cpu)
rev=$(bench_rev "$src")
{
	echo "# The drop-in libraries against uiwarp's own API"
	echo
	echo "Written by \`bench/compat.sh\` (\`make bench-compat\`), started $started."
	echo
	echo "- machine: $(nproc) CPUs ($cpu), Linux $(uname -r), load $load before the run, $(cut -d' ' -f1-3 /proc/loadavg) after it"
	echo "- source: $rev, build type $(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$build/CMakeCache.txt")"
	echo "- Debian programs: perftest $(pkg_version perftest), qperf $(pkg_version qperf), rping of rdmacm-utils $(pkg_version rdmacm-utils), each through \`uiwarp-run\` with LD_BIND_NOW=1"
	echo "- all over 127.0.0.1, MPA revision 2 with CRC (the defaults of both sides); every figure the median of $rounds runs, the drop-in and the native run alternating"
	echo
	echo "## RDMA Write bandwidth"
	echo
	echo "\`ib_write_bw -R -s SIZE -t $depth -D $secs\` (server and client through"
	echo "\`uiwarp-run\`; perftest busy-polls its CQ) against \`uiwarp-perf -c --bw"
	echo "-t write -S SIZE -d $depth -D $secs\` (against \`uiwarp-perf -s\`), asleep on"
	echo "the CQ's fd (\`--event\`, its default) and busy-polling (\`--poll\`: the"
	echo "CQ in the library's poll mode).  MB/s are 10^6 octets a second"
	echo "(perftest's MiB/s converted).  Ratios: native / drop-in, the time the"
	echo "drop-in takes for the same data against uiwarp-perf's (goal: at most 1.05)."
	echo
	echo "| size | ib_write_bw -R (MB/s) | uiwarp-perf --event (MB/s) | ratio | uiwarp-perf --poll (MB/s) | ratio |"
	echo "| --- | --- | --- | --- | --- | --- |"
	cat "$work/bw"
	echo
	echo "## Send/Receive ping-pong"
	echo
	echo "\`ib_send_lat -R -s SIZE -n N\` (t_typical, the median half round trip;"
	echo "perftest busy-polls its CQ) against \`uiwarp-perf -c --lat -t send -S"
	echo "SIZE -n N\` (median half round trip), busy-polling (\`--poll\`: the CQ"
	echo "in the library's poll mode) and asleep on the CQ's fd (\`--event\`); N"
	echo "$lat_iters, a fifth of that above 64 KiB.  Ratios: drop-in / native (goal:"
	echo "at most 1.05)."
	echo
	echo "| size | ib_send_lat -R (µs) | uiwarp-perf --poll (µs) | ratio | uiwarp-perf --event (µs) | ratio |"
	echo "| --- | --- | --- | --- | --- | --- |"
	cat "$work/lat"
	echo
	echo "## qperf: RDMA on uiwarp against the kernel's TCP"
	echo
	echo "\`qperf -t $qsecs -m SIZE 127.0.0.1 tcp_bw\` (or \`tcp_lat\`), no uiwarp,"
	echo "against \`uiwarp-run qperf -cm1 -t $qsecs -m SIZE 127.0.0.1 rc_bw\` (or"
	echo "\`rc_lat\`), each against its own qperf server.  Ratio: RDMA / TCP"
	echo "(bandwidth: above 1, RDMA moves more; latency: below 1, RDMA answers"
	echo "sooner)."
	echo
	echo "| test | TCP | RDMA on uiwarp | ratio |"
	echo "| --- | --- | --- | --- |"
	cat "$work/qperf"
	echo
	echo "## Connection setup"
	echo
	echo "The time of one client process, from its start to its end, median of"
	echo "$conns, in ms: connect, one ping, disconnect.  \`rping -c -C 1\` against"
	echo "\`rping -s -P\`, with the libraries' default start delay (the pause"
	echo "between the MPA Reply and the initiator's first FPDU) and with"
	echo "\`UIWARP_START_DELAY_MS=0\`, runs alternating; \`uiwarp-ping -c -C 1\`"
	echo "against \`uiwarp-ping -s -P\` (no start delay); and \`rping\` printing its"
	echo "usage through \`uiwarp-run\`, with no connection: the cost of starting"
	echo "the process and loading the libraries."
	echo
	echo "| run | ms |"
	echo "| --- | --- |"
	echo "| rping -c -C 1, default start delay | $cdef |"
	echo "| rping -c -C 1, UIWARP_START_DELAY_MS=0 | $czero |"
	echo "| difference: the start delay's cost | $cdiff |"
	echo "| uiwarp-ping -c -C 1 | $cnat |"
	echo "| rping's usage, no connection | $cstart |"
	if [ -s "$work/failures" ]; then
		echo
		echo "## Runs that failed"
		echo
		echo "A run that printed its figure before it failed keeps its figure."
		echo
		cat "$work/failures"
	fi
} >"$out"
echo "bench/compat.sh: wrote $out" >&2
cat "$out"
