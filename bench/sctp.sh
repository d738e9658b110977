#!/usr/bin/env bash
# DDP over SCTP on this machine, over 127.0.0.1: raw usrsctp
# (bench/sctpraw.c, messages moved the way uiwarp's usrsctp backend moves
# DDP segments, with no DDP code) as the baseline, next to uiwarp over
# SCTP (uiwarp-perf --llp sctp, once uiwarp-perf has it), measured in
# the same run, point by point, each point a server and a client process
# of its own:
#
#   - throughput, 64 B to 1 MiB (one-way stream of messages);
#   - the 8-octet ping-pong (half round trip: mean, median, p99);
#   - raw usrsctp at 1 MiB under several path MTUs and SCTP socket
#     buffers, to choose the MTU the backend uses on loopback.
#
# Writes bench/sctp-latest.md.  Builds nothing: run it after a build
# (make bench-sctp builds first).  A benchmark: it never fails for being
# slow; a point that fails is n/a in its table and listed under it.
#
# usage: bench/sctp.sh
#   BUILD=<dir>          build directory (default: build)
#   SCTP_SECS=<s>        seconds per throughput point (default 3)
#   SCTP_SIZES="..."     throughput sizes (default 64 128 ... 1m)
#   SCTP_LAT_ITERS=<n>   8-octet ping-pongs (default 20000)
#   SCTP_LAT_MODE=event|poll  how the application thread waits for a
#                        message: asleep on an eventfd, or spinning
#                        (default event)
#   SCTP_MTU=<n>         path MTU of both ends (default 1200, the
#                        backend's)
#   SCTP_STREAMS=<n>     streams each way (default 256, the backend's)
#   SCTP_DEPTH=<n>       messages posted ahead (default 16, as uiwarp-perf)
#   SCTP_MTUS="..."      MTUs compared at 1 MiB (default 1200 9000 65000)
#   SCTP_MTU_BUFS="..."  SCTP socket buffers for that comparison:
#                        "default" (usrsctp's) or a size (default
#                        "default 1m")
#   SCTP_MTU_REPEAT=<n>  runs per MTU and buffer, the median kept (3)
#   SCTP_QUICK=1         a short trial: 0.5 s per point, 2000 ping-pongs,
#                        one run per MTU
#   SCTP_OUT=<file>      the report (default bench/sctp-latest.md)
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$src/build}
quick=${SCTP_QUICK:-0}
if [ "$quick" = 1 ]; then
	secs=${SCTP_SECS:-0.5}
	lat_iters=${SCTP_LAT_ITERS:-2000}
	mtu_repeat=${SCTP_MTU_REPEAT:-1}
else
	secs=${SCTP_SECS:-3}
	lat_iters=${SCTP_LAT_ITERS:-20000}
	mtu_repeat=${SCTP_MTU_REPEAT:-3}
fi
sizes=${SCTP_SIZES:-64 128 256 512 1k 2k 4k 8k 16k 32k 64k 128k 256k 512k 1m}
lat_mode=${SCTP_LAT_MODE:-event}
mtu=${SCTP_MTU:-1200}
streams=${SCTP_STREAMS:-256}
depth=${SCTP_DEPTH:-16}
mtus=${SCTP_MTUS:-1200 9000 65000}
mtu_bufs=${SCTP_MTU_BUFS:-default 1m}
out=${SCTP_OUT:-$src/bench/sctp-latest.md}
# shellcheck source=lib.sh
source "$src/bench/lib.sh"

raw=$build/sctpraw
perf=$build/uiwarp-perf
if [ ! -x "$raw" ]; then
	echo "bench/sctp.sh: $raw is missing: build first (make bench-sctp)" >&2
	exit 2
fi
case $lat_mode in
event | poll) ;;
*)
	echo "bench/sctp.sh: SCTP_LAT_MODE is event or poll, not $lat_mode" >&2
	exit 2
	;;
esac

work=$(mktemp -d)
spid=
# Servers start in the subshells of the columns' functions: their
# process ids go to a file, so that an interrupted run ends them too.
cleanup() {
	local p
	while read -r p; do
		kill -TERM "$p" 2>/dev/null || true
	done <"$work/pids"
	rm -rf "$work"
}
: >"$work/pids"
trap cleanup EXIT
: >"$work/failures"

# failed WHAT FILE...: notes a point that gave no figure, with the end of
# what its processes said.
failed() {
	local what=$1 f
	shift
	{
		echo "- $what:"
		for f in "$@"; do
			[ -s "$f" ] && tail -n 3 "$f" | sed 's/^/      /'
		done
	} >>"$work/failures"
}

# start_server OUT PATTERN CMD...: CMD in the background, its output in
# OUT; once a line of OUT matches PATTERN (a sed expression that prints
# the port), $spid and $port are set.  1 when no port came in 5 s.
start_server() {
	local f=$1 pat=$2
	shift 2
	: >"$f"
	"$@" >"$f" 2>&1 &
	spid=$!
	echo "$spid" >>"$work/pids"
	port=
	for _ in $(seq 100); do
		port=$(sed -n "$pat" "$f")
		[ -n "$port" ] && return 0
		alive "$spid" || break
		sleep 0.05
	done
	stop_server
	return 1
}

# stop_server: the server ends on its own once its client has shut down;
# after a moment it is told to (it ends within 2 s of SIGTERM).  Its
# status in $srv_rc.
stop_server() {
	srv_rc=0
	[ -n "$spid" ] || return 0
	for _ in $(seq 40); do
		alive "$spid" || break
		sleep 0.05
	done
	kill -TERM "$spid" 2>/dev/null || true
	wait "$spid" 2>/dev/null || srv_rc=$?
	spid=
}

# raw_run OUT BOTH-ARGS... -- CLIENT-ARGS...: an sctpraw server and
# client on 127.0.0.1, the arguments before -- given to both; the
# client's output in OUT, the server's in OUT.srv.  0 when both end
# well.
raw_run() {
	local f=$1 both=() rc=0
	shift
	while [ $# -gt 0 ] && [ "$1" != -- ]; do
		both+=("$1")
		shift
	done
	shift
	start_server "$f.srv" 's/^listening udp_port=\([0-9][0-9]*\) .*/\1/p' \
		"$raw" -s --port 0 "${both[@]}" || return 1
	timeout --kill-after=5 120 "$raw" -p "$port" "${both[@]}" "$@" \
		127.0.0.1 >"$f" 2>&1 || rc=$?
	stop_server
	[ "$rc" -eq 0 ] && [ "$srv_rc" -eq 0 ]
}

# ------------------------------------------------------------------
# The columns.  Each is a function that prints its figure for a size
# (MB/s, or "mean p50 p99" in µs for the ping-pong), or n/a; the tables
# have one column per entry of these lists, in this order, and a ratio
# of the second to the first.

# raw usrsctp (bench/sctpraw.c)
raw_bw() {
	local f=$work/raw-bw-$1 v=
	if raw_run "$f" --mtu "$mtu" --streams "$streams" -- \
		-t bw -S "$1" -D "$secs" -d "$depth"; then
		v=$(kv_field "$f" "test=bw " bw_MBps)
	fi
	[ -n "$v" ] || failed "raw usrsctp, throughput at $1" "$f" "$f.srv"
	echo "${v:-n/a}"
}

raw_lat() {
	local f=$work/raw-lat-$1 v=''
	local mode=()
	[ "$lat_mode" = poll ] && mode=(--poll)
	if raw_run "$f" --mtu "$mtu" --streams "$streams" -- \
		-t lat -S "$1" -n "$lat_iters" "${mode[@]}"; then
		v="$(kv_field "$f" "test=lat " lat_mean_us)"
		v="$v $(kv_field "$f" "test=lat " lat_p50_us)"
		v="$v $(kv_field "$f" "test=lat " lat_p99_us)"
		[[ $v =~ ^[0-9.]+\ [0-9.]+\ [0-9.]+$ ]] || v=
	fi
	[ -n "$v" ] || failed "raw usrsctp, ping-pong at $1" "$f" "$f.srv"
	echo "${v:-n/a n/a n/a}"
}

# uiwarp over SCTP: uiwarp-perf with --llp sctp, a server and a client
# process like the raw figures, RDMA Write for throughput and Send for
# the ping-pong.  n/a while uiwarp-perf has no --llp sctp.  (The change
# that gives it one checks these command lines and gives uiwarp the same
# MTU ($mtu), stream count ($streams) and depth ($depth) as sctpraw.)
uiwarp_sctp=0
if [ -x "$perf" ]; then
	"$perf" -h >"$work/perf-help" 2>&1 || true
	if grep -- '--llp' "$work/perf-help" >/dev/null &&
	   grep sctp "$work/perf-help" >/dev/null; then
		uiwarp_sctp=1
	fi
fi

# uiwarp_run OUT CLIENT-ARGS...: uiwarp-perf server and client over SCTP;
# the client's CSV in OUT.
uiwarp_run() {
	local f=$1 rc=0
	shift
	start_server "$f.srv" 's/.*server listening on port \([0-9][0-9]*\).*/\1/p' \
		"$perf" -s -p 0 --llp sctp || return 1
	timeout --kill-after=5 120 "$perf" -c 127.0.0.1 -p "$port" --llp sctp \
		"$@" --csv >"$f" 2>"$f.err" || rc=$?
	stop_server
	[ "$rc" -eq 0 ] && [ "$srv_rc" -eq 0 ]
}

# csv_value FILE COLUMN: COLUMN of FILE's first data row.
csv_value() {
	local c
	c=$(csv_cols "$1" "$2")
	[ "$c" -gt 0 ] || return 0
	awk -F, -v c="$c" 'NR == 2 { print $c }' "$1"
}

uiwarp_bw() {
	local f=$work/uiwarp-bw-$1 v=
	if [ "$uiwarp_sctp" != 1 ]; then
		echo n/a
		return
	fi
	if uiwarp_run "$f" -t write --bw -S "$1" -D "$secs" -d "$depth"; then
		v=$(csv_value "$f" mbps)
	fi
	[ -n "$v" ] || failed "uiwarp over SCTP, throughput at $1" "$f" \
		"$f.err" "$f.srv"
	echo "${v:-n/a}"
}

uiwarp_lat() {
	local f=$work/uiwarp-lat-$1 v=
	if [ "$uiwarp_sctp" != 1 ]; then
		echo "n/a n/a n/a"
		return
	fi
	if uiwarp_run "$f" -t send --lat -S "$1" -n "$lat_iters" \
		"--$lat_mode"; then
		v="$(csv_value "$f" lat_avg_us) $(csv_value "$f" lat_median_us)"
		v="$v $(csv_value "$f" lat_p99_us)"
		[[ $v =~ ^[0-9.]+\ [0-9.]+\ [0-9.]+$ ]] || v=
	fi
	[ -n "$v" ] || failed "uiwarp over SCTP, ping-pong at $1" "$f" \
		"$f.err" "$f.srv"
	echo "${v:-n/a n/a n/a}"
}

bw_heads=("raw usrsctp MB/s" "uiwarp over SCTP MB/s")
bw_funcs=(raw_bw uiwarp_bw)
lat_heads=("raw usrsctp" "uiwarp over SCTP")
lat_funcs=(raw_lat uiwarp_lat)

# ratio A B: B / A to two places, or n/a.
ratio() {
	awk -v a="$1" -v b="$2" 'BEGIN {
		if (a ~ /^[0-9.]+$/ && b ~ /^[0-9.]+$/ && a + 0 > 0)
			printf "%.2f", b / a
		else
			printf "n/a"
	}'
}

# ------------------------------------------------------------------

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
started=$(date -u '+%Y-%m-%d %H:%M:%S UTC')

# table_head SUFFIX N LAST HEADING...: a table's header and rule: size,
# each HEADING with SUFFIX over N columns, and LAST.
table_head() {
	local suffix=$1 n=$2 last=$3 h i
	shift 3
	printf '| size |'
	for h in "$@"; do printf ' %s%s |' "$h" "$suffix"; done
	printf ' %s |\n|-----:|' "$last"
	for _ in "$@"; do
		for ((i = 0; i < n; i++)); do printf -- '-----:|'; done
	done
	printf -- '-----:|\n'
}

# Throughput, size by size, the columns in turn.
table_head "" 1 "uiwarp / raw" "${bw_heads[@]}" >"$work/bw.md"
for s in $sizes; do
	octets=$(to_octets "$s")
	vals=()
	for fn in "${bw_funcs[@]}"; do
		vals+=("$("$fn" "$octets")")
	done
	echo "throughput $(human "$octets"): ${vals[*]}" >&2
	{
		printf '| %s |' "$(human "$octets")"
		for v in "${vals[@]}"; do printf ' %s |' "$v"; done
		printf ' %s |\n' "$(ratio "${vals[0]}" "${vals[1]:-n/a}")"
	} >>"$work/bw.md"
done

# The 8-octet ping-pong.
table_head " mean | median | p99" 3 "uiwarp / raw (mean)" \
	"${lat_heads[@]}" >"$work/lat.md"
vals=()
for fn in "${lat_funcs[@]}"; do
	vals+=("$("$fn" 8)")
done
echo "ping-pong 8 B: ${vals[*]}" >&2
{
	printf '| 8 B |'
	for v in "${vals[@]}"; do
		read -r a b c <<<"$v"
		printf ' %s | %s | %s |' "$a" "$b" "$c"
	done
	printf ' %s |\n' "$(ratio "${vals[0]%% *}" "$(echo "${vals[1]:-n/a}" | cut -d' ' -f1)")"
} >>"$work/lat.md"

# Raw usrsctp at 1 MiB by path MTU and SCTP socket buffer, each the
# median of mtu_repeat runs, the MTUs taking turns within a round.
for buf in $mtu_bufs; do
	bufarg=()
	[ "$buf" = default ] || bufarg=(--sctp-buf "$buf")
	for r in $(seq "$mtu_repeat"); do
		for m in $mtus; do
			f=$work/mtu-$m-$buf-$r
			v=
			if raw_run "$f" --mtu "$m" --streams "$streams" "${bufarg[@]}" \
				-- -t bw -S 1m -D "$secs" -d "$depth"; then
				v=$(kv_field "$f" "test=bw " bw_MBps)
			fi
			if [ -n "$v" ]; then
				echo "$buf $m $v $(kv_field "$f" "test=bw " maxseg) $(kv_field "$f" "test=bw " rtx) $(kv_field "$f" "info " sctp_rcvbuf)" >>"$work/mtu"
			else
				failed "raw usrsctp at 1 MiB, MTU $m, buffers $buf" "$f" "$f.srv"
			fi
			echo "mtu $m, buffers $buf, run $r: ${v:-n/a}" >&2
		done
	done
done
: >>"$work/mtu"
awk "$awk_med"'
	{
		k = $1 " " $2
		if (!(k in n)) { order[++nk] = k; buf[k] = $1; mtu[k] = $2 }
		v[k, ++n[k]] = $3 + 0
		seg[k] = $4; rtx[k] += $5; rb[k] = $6
		if (!(k in lo) || $3 + 0 < lo[k]) lo[k] = $3 + 0
		if (!(k in hi) || $3 + 0 > hi[k]) hi[k] = $3 + 0
	}
	END {
		print "| SCTP buffers | MTU | maxseg | MB/s (median) | min-max | runs | retransmitted chunks |"
		print "|---|---:|---:|---:|---|---:|---:|"
		for (i = 1; i <= nk; i++) {
			k = order[i]
			for (j = 1; j <= n[k]; j++) a[j] = v[k, j]
			m = med(a, n[k])
			b = buf[k] == "default" ? "usrsctp'"'"'s (receive " rb[k] ")" : \
				"--sctp-buf " buf[k]
			printf "| %s | %s | %s | %.1f | %.1f-%.1f | %d | %d |\n",
				b, mtu[k], seg[k], m, lo[k], hi[k], n[k], rtx[k]
			if (!(buf[k] in best) || m > bestv[buf[k]]) {
				best[buf[k]] = mtu[k]; bestv[buf[k]] = m
			}
		}
		print ""
		for (b in best)
			printf "Fastest with %s buffers: MTU %s (%.1f MB/s).\n",
				b == "default" ? "usrsctp'"'"'s" : b, best[b], bestv[b]
	}' "$work/mtu" >"$work/mtu.md"

cpu=$(sed -n '/^model name/{s/^model name[[:space:]]*: //p;q}' /proc/cpuinfo)
rev=$(git -C "$src" rev-parse --short HEAD 2>/dev/null || echo unknown)
if ! git -C "$src" diff --quiet HEAD -- src include bench 2>/dev/null; then
	rev="$rev (with local changes)"
fi
btype=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$build/CMakeCache.txt" 2>/dev/null)
usrsctp=$(pkg-config --modversion usrsctp 2>/dev/null || echo unknown)
settings=
for s in $sizes; do
	f=$work/raw-bw-$(to_octets "$s")
	[ -f "$f" ] && settings=$(sed -n 's/^info role=client //p' "$f")
	[ -z "$settings" ] || break
done

tmp=$(mktemp)
{
	echo "# DDP over SCTP over 127.0.0.1: raw usrsctp and uiwarp"
	echo
	echo "- date: $started"
	echo "- machine: $(uname -srm), $(nproc) CPUs, ${cpu:-unknown CPU}"
	echo "- load average before the run: $load_before"
	echo "- source: $rev, build type ${btype:-unknown}; usrsctp $usrsctp"
	echo "- net.core.rmem_max / wmem_max: $(cat /proc/sys/net/core/rmem_max) / $(cat /proc/sys/net/core/wmem_max)"
	echo "- settings: path MTU $mtu, $streams streams each way, depth $depth,"
	echo "  $secs s per throughput point, $lat_iters ping-pongs ($lat_mode mode)$([ "$quick" = 1 ] && echo ", SCTP_QUICK=1")"
	echo "- sctpraw as measured: ${settings:-n/a}"
	echo "- uiwarp over SCTP: $([ "$uiwarp_sctp" = 1 ] && echo "uiwarp-perf --llp sctp" || echo "n/a (uiwarp-perf has no --llp sctp yet)")"
	echo
	echo "Each figure is one run of a server and a client process of its"
	echo "own.  Raw usrsctp: bench/sctpraw.c, usrsctp in AF_CONN mode over UDP"
	echo "(RFC 6951) with a progress thread per process, as uiwarp's backend;"
	echo "a message of S octets goes as unordered segments of at most"
	echo "maxseg - 2 octets behind a 2-octet sequence number, placed at the"
	echo "receiver; MB/s = 10^6 payload octets per second, until the server"
	echo "has them all.  \"uiwarp / raw\": the second column over the first"
	echo "(throughput: higher is better; latency: lower is better).  One run"
	echo "per point: on a shared machine a figure moves by tens of per cent"
	echo "from run to run (the MTU table's min-max shows how much)."
	echo
	echo "## Throughput"
	echo
	cat "$work/bw.md"
	echo
	echo "## Ping-pong, half round trip in µs"
	echo
	cat "$work/lat.md"
	echo
	echo "## Raw usrsctp at 1 MiB by path MTU"
	echo
	echo "The MTU is SCTP's (spp_pathmtu): packets are up to 12 octets"
	echo "longer (the common header), datagrams 28 more (UDP, IPv4)."
	echo "$mtu_repeat run(s) of $secs s per line, the MTUs taking turns."
	echo
	cat "$work/mtu.md"
	if [ -s "$work/failures" ]; then
		echo
		echo "## Points without a figure"
		echo
		cat "$work/failures"
	fi
} >"$tmp"
mv "$tmp" "$out"
cat "$out"
