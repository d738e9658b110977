#!/usr/bin/env bash
# DDP over SCTP on this machine, over 127.0.0.1: raw usrsctp
# (bench/sctpraw.c, messages moved the way uiwarp's usrsctp backend moves
# DDP segments, with no DDP code) as the baseline, uiwarp over SCTP
# (uiwarp-perf --llp sctp-udp) against it, and uiwarp over TCP
# (uiwarp-perf --llp tcp), all measured in the same run, point by
# point, each point a server and a client process of its own:
#
#   - throughput, 64 B to 1 MiB (one-way stream of messages): raw,
#     uiwarp's RDMA Write and Send over SCTP, each next to a raw run of
#     its own just before it, and both over TCP;
#   - the goals: 64 KiB and 1 MiB, and the 8-octet ping-pong, in
#     several rounds, the median ratio of the rounds;
#   - 1 to 64 QPs on one association (raw: as many streams);
#   - raw and uiwarp at the backend's other path MTU (the one it uses
#     towards peers not on loopback);
#   - raw usrsctp at 1 MiB under several path MTUs and SCTP socket
#     buffers.
#
# Both ends of every SCTP figure have the same path MTU ($SCTP_MTU:
# sctpraw --mtu, which counts the SCTP packet without its 12-octet
# common header, and UIW_SCTP_MTU=$SCTP_MTU+12 for both uiwarp-perf
# processes, which the backend reads as the packet's size), so both
# send segments of the same size; the same stream count; the same
# depth; the same SCTP socket buffers ($SCTP_RAW_BUF, the backend's).
#
# Writes bench/sctp-latest.md and the plots bench/sctp-bw.png and
# bench/sctp-qps.png.  Builds nothing: run it after a build (make
# bench-sctp builds first).  A benchmark: it never fails for being slow;
# a point that fails is n/a in its table and listed under it.
#
# usage: bench/sctp.sh
#   BUILD=<dir>          build directory (default: build)
#   SCTP_SECS=<s>        seconds per throughput point (default 1)
#   SCTP_SIZES="..."     throughput sizes (default 64 128 ... 1m)
#   SCTP_LAT_ITERS=<n>   8-octet ping-pongs per run (default 20000)
#   SCTP_LAT_MODE=event|poll  how the application thread waits for a
#                        message: asleep on an eventfd or the CQ's fd,
#                        or spinning (default event)
#   SCTP_MTU=<n>         path MTU of both ends, as sctpraw --mtu
#                        (default 65475: the backend's to a loopback
#                        peer, 65487 with the common header)
#   SCTP_ALT_MTU=<n>     the other MTU compared, 0: none (default 1440:
#                        the backend's to other peers, 1452)
#   SCTP_STREAMS=<n>     streams each way (default 256, the backend's)
#   SCTP_DEPTH=<n>       messages posted ahead (default 16, as uiwarp-perf)
#   SCTP_RAW_BUF=<n>     sctpraw's SCTP socket buffers (default 256k, the
#                        backend's SO_SNDBUF and SO_RCVBUF)
#   SCTP_ROUNDS=<n>      rounds of the goal figures (default 7)
#   SCTP_QPS="..."       QP counts of the scaling table (default 1 4 16 64)
#   SCTP_QP_SIZE=<n>     their message size (default 64k)
#   SCTP_TCP=0           no uiwarp over TCP
#   SCTP_MTUS="..."      MTUs compared at 1 MiB (default 1440 9000 65000
#                        65475)
#   SCTP_MTU_BUFS="..."  SCTP socket buffers for that comparison:
#                        "default" (usrsctp's) or a size (default
#                        "256k 1m")
#   SCTP_MTU_REPEAT=<n>  runs per MTU and buffer, the median kept (3)
#   SCTP_QUICK=1         a short trial: 0.3 s per point, 2000
#                        ping-pongs, two rounds, one run per MTU, fewer
#                        sizes
#   SCTP_OUT=<file>      the report (default bench/sctp-latest.md)
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$src/build}
quick=${SCTP_QUICK:-0}
if [ "$quick" = 1 ]; then
	secs=${SCTP_SECS:-0.3}
	lat_iters=${SCTP_LAT_ITERS:-2000}
	mtu_repeat=${SCTP_MTU_REPEAT:-1}
	rounds=${SCTP_ROUNDS:-2}
	sizes=${SCTP_SIZES:-64 4k 64k 1m}
	qps=${SCTP_QPS:-1 16}
else
	secs=${SCTP_SECS:-1}
	lat_iters=${SCTP_LAT_ITERS:-20000}
	mtu_repeat=${SCTP_MTU_REPEAT:-3}
	rounds=${SCTP_ROUNDS:-7}
	sizes=${SCTP_SIZES:-64 128 256 512 1k 2k 4k 8k 16k 32k 64k 128k 256k 512k 1m}
	qps=${SCTP_QPS:-1 4 16 64}
fi
lat_mode=${SCTP_LAT_MODE:-event}
mtu=${SCTP_MTU:-65475}
alt_mtu=${SCTP_ALT_MTU:-1440}
streams=${SCTP_STREAMS:-256}
depth=${SCTP_DEPTH:-16}
raw_buf=${SCTP_RAW_BUF:-256k}
qp_size=${SCTP_QP_SIZE:-64k}
with_tcp=${SCTP_TCP:-1}
mtus=${SCTP_MTUS:-1440 9000 65000 65475}
mtu_bufs=${SCTP_MTU_BUFS:-256k 1m}
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

# free_udp_port: a UDP port nothing on this host is bound to, for the
# uiwarp-perf server's SCTP listener (uiwarp-perf --udp-port).
free_udp_port() {
	local p
	for _ in $(seq 50); do
		p=$((20000 + RANDOM % 40000))
		if ! ss -lunH "sport = :$p" 2>/dev/null | grep . >/dev/null; then
			echo "$p"
			return
		fi
	done
	echo 9899
}

# uiwarp_run OUT MTU LLP CLIENT-ARGS...: a uiwarp-perf server and client
# over LLP (sctp-udp or tcp), both processes with the path MTU (as
# sctpraw --mtu; the backend's UIW_SCTP_MTU is 12 more); the client's CSV
# in OUT, its stderr in OUT.err, the server's output in OUT.srv.
uiwarp_run() {
	local f=$1 m=$2 llp=$3 rc=0
	local env=(env UIW_SCTP_MTU=$(($2 + 12)))
	shift 3
	start_server "$f.srv" 's/.*server listening on port \([0-9][0-9]*\).*/\1/p' \
		"${env[@]}" "$perf" -s -p 0 || return 1
	timeout --kill-after=5 120 "${env[@]}" "$perf" -c 127.0.0.1 \
		-p "$port" --llp "$llp" --udp-port "$(free_udp_port)" \
		"$@" >"$f" 2>"$f.err" || rc=$?
	stop_server
	[ "$rc" -eq 0 ] && [ "$srv_rc" -eq 0 ]
}

# next_file NAME: a new file for a run's output (the columns' functions
# run in subshells: no counter of theirs would last).
next_file() {
	mktemp -p "$work" "run-$1.XXXXXX"
}

# ------------------------------------------------------------------
# One figure each: MB/s, or "mean median p99" in µs, or n/a.

# raw_bw SIZE [MTU [STREAMS-USED [DEPTH]]]
raw_bw() {
	local f m=${2:-$mtu} q=${3:-1} d=${4:-$depth} v=
	f=$(next_file "raw-bw-$1")
	if raw_run "$f" --mtu "$m" --streams "$streams" --sctp-buf "$raw_buf" \
		-- -t bw -S "$1" -D "$secs" -d "$d" -q "$q"; then
		v=$(kv_field "$f" "test=bw " bw_MBps)
	fi
	[ -n "$v" ] || failed "raw usrsctp, throughput at $1 (MTU $m, $q streams)" \
		"$f" "$f.srv"
	echo "${v:-n/a}"
}

# uiwarp_bw LLP TEST SIZE [MTU [QPS]]
uiwarp_bw() {
	local f llp=$1 t=$2 s=$3 m=${4:-$mtu} q=${5:-1} v=
	f=$(next_file "uiwarp-bw-$llp-$t-$s")
	if uiwarp_run "$f" "$m" "$llp" -t "$t" --bw -S "$s" -D "$secs" \
		-d "$depth" -q "$q" --csv; then
		v=$(csv_value "$f" mbps)
	fi
	[ -n "$v" ] || failed "uiwarp over $llp, $t at $s (MTU $m, $q QPs)" \
		"$f" "$f.err" "$f.srv"
	echo "${v:-n/a}"
}

raw_lat() {
	local f v=''
	local mode=()
	f=$(next_file raw-lat)
	[ "$lat_mode" = poll ] && mode=(--poll)
	if raw_run "$f" --mtu "$mtu" --streams "$streams" --sctp-buf "$raw_buf" \
		-- -t lat -S 8 -n "$lat_iters" "${mode[@]}"; then
		v="$(kv_field "$f" "test=lat " lat_mean_us)"
		v="$v $(kv_field "$f" "test=lat " lat_p50_us)"
		v="$v $(kv_field "$f" "test=lat " lat_p99_us)"
		[[ $v =~ ^[0-9.]+\ [0-9.]+\ [0-9.]+$ ]] || v=
	fi
	[ -n "$v" ] || failed "raw usrsctp, ping-pong" "$f" "$f.srv"
	echo "${v:-n/a n/a n/a}"
}

# uiwarp_lat LLP: the Send/Receive ping-pong
uiwarp_lat() {
	local f v=
	f=$(next_file "uiwarp-lat-$1")
	if uiwarp_run "$f" "$mtu" "$1" -t send --lat -S 8 -n "$lat_iters" \
		"--$lat_mode" --csv; then
		v="$(csv_value "$f" lat_avg_us) $(csv_value "$f" lat_median_us)"
		v="$v $(csv_value "$f" lat_p99_us)"
		[[ $v =~ ^[0-9.]+\ [0-9.]+\ [0-9.]+$ ]] || v=
	fi
	[ -n "$v" ] || failed "uiwarp over $1, ping-pong" "$f" "$f.err" \
		"$f.srv"
	echo "${v:-n/a n/a n/a}"
}

# Where the host has put the two vCPUs (bench/cpuprobe.c, as
# bench/perf.sh): a cache line's round trip between them is "near" (a
# shared cache) or "far", changing every few seconds, and a loopback run
# is up to 2.4 times as slow far.  probe sets cls to n, f, or - (no
# probe: one CPU, or no C compiler).
probe_min=
if cc -O2 -pthread -o "$work/cpuprobe" "$src/bench/cpuprobe.c" 2>/dev/null &&
   "$work/cpuprobe" -t 2 >"$work/placement" 2>/dev/null; then
	probe_min=$(sort -n "$work/placement" | sed -n 1p)
fi
probe() {
	local ns

	cls=-
	[ -n "$probe_min" ] || return 0
	ns=$("$work/cpuprobe" 10 2>/dev/null) || return 0
	[ "$ns" -lt "$probe_min" ] && probe_min=$ns
	if [ "$ns" -lt $((2 * probe_min)) ]; then cls=n; else cls=f; fi
}
# A pair of runs between probes: $place is n or f when the three probes
# agreed, x when the placement changed, - without probes.
pair_begin() { probe; p1=$cls; }
pair_mid() { probe; p2=$cls; }
pair_end() {
	probe
	place=$p1
	[ "$p1" = "$p2" ] && [ "$p2" = "$cls" ] || place=x
}

# goal_ratio FILE: FILE's lines are "raw uiwarp place"; the median ratio
# uiwarp / raw of the pairs made at one placement, "(min-max, k of n
# pairs)", then that of all pairs.
goal_ratio() {
	local f=$1 k
	awk '$3 != "x" { print $1, $2 }' "$f" | while read -r a b; do
		ratio "$a" "$b"
		echo
	done >"$f.one"
	awk '{ print $1, $2 }' "$f" | while read -r a b; do
		ratio "$a" "$b"
		echo
	done >"$f.all"
	k=$(grep -c . "$f.one" || true)
	printf '%s of %s pairs: %s; all: %s' "$k" "$(grep -c . "$f")" \
		"$(summary "$f.one")" "$(summary "$f.all" | sed 's/ (.*//')"
}

# summary FILE: "median (min-max, k of n)" of the numbers in FILE, one
# a line (n/a lines count in n only).
summary() {
	awk "$awk_med"'
		{ t++ }
		$1 ~ /^[0-9.]+$/ { a[++k] = $1 + 0
			if (k == 1 || $1 + 0 < lo) lo = $1 + 0
			if (k == 1 || $1 + 0 > hi) hi = $1 + 0 }
		END {
			if (!k) { printf "n/a"; exit }
			printf "%.2f (%.2f-%.2f", med(a, k), lo, hi
			if (k < t) printf ", %d of %d", k, t
			printf ")"
		}' "$1"
}

# ------------------------------------------------------------------

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
started=$(date -u '+%Y-%m-%d %H:%M:%S UTC')
tcp_on() { [ "$with_tcp" = 1 ]; }

# What each LLP runs with: uiwarp-perf's table header (MULPDU).
mulpdu_of() {
	local f
	f=$(next_file "probe-$1")
	uiwarp_run "$f" "$2" "$1" -t send --lat -S 8 -n 20 >/dev/null 2>&1 ||
		true
	sed -n 's/.*MULPDU \([0-9][0-9]*\).*/\1/p' "$f" | sed -n 1p
}
mulpdu_sctp=$(mulpdu_of sctp-udp "$mtu")
mulpdu_alt=
[ "$alt_mtu" != 0 ] && mulpdu_alt=$(mulpdu_of sctp-udp "$alt_mtu")
mulpdu_tcp=
tcp_on && mulpdu_tcp=$(mulpdu_of tcp "$mtu")

# Throughput, size by size: raw, Write, raw, Send (each uiwarp figure
# next to the raw one just before it), then uiwarp over TCP.
{
	printf '| size | raw MB/s | Write MB/s | Write / raw | raw MB/s | Send MB/s | Send / raw |'
	tcp_on && printf ' TCP Write MB/s | TCP Send MB/s | SCTP / TCP Write | SCTP / TCP Send |'
	printf '\n|-----:|-----:|-----:|-----:|-----:|-----:|-----:|'
	tcp_on && printf -- '-----:|-----:|-----:|-----:|'
	printf '\n'
} >"$work/bw.md"
: >"$work/bw.dat"
for s in $sizes; do
	o=$(to_octets "$s")
	r1=$(raw_bw "$o")
	w=$(uiwarp_bw sctp-udp write "$o")
	r2=$(raw_bw "$o")
	sd=$(uiwarp_bw sctp-udp send "$o")
	tw=n/a
	ts=n/a
	if tcp_on; then
		tw=$(uiwarp_bw tcp write "$o")
		ts=$(uiwarp_bw tcp send "$o")
	fi
	echo "throughput $(human "$o"): raw $r1 write $w raw $r2 send $sd tcp $tw $ts" >&2
	{
		printf '| %s | %s | %s | %s | %s | %s | %s |' "$(human "$o")" \
			"$r1" "$w" "$(ratio "$r1" "$w")" "$r2" "$sd" \
			"$(ratio "$r2" "$sd")"
		tcp_on && printf ' %s | %s | %s | %s |' "$tw" "$ts" \
			"$(ratio "$tw" "$w")" "$(ratio "$ts" "$sd")"
		printf '\n'
	} >>"$work/bw.md"
	echo "$o $r1 $w $r2 $sd $tw $ts" >>"$work/bw.dat"
done

# The goals, in rounds: at 64 KiB and 1 MiB a raw run and a Write, a raw
# run and a Send; the ping-pong, raw and uiwarp.  Each pair is one raw and
# one uiwarp run, the one to go first alternating from round to round,
# with a placement probe before, between and after (pair_place).
for s in 64k 1m; do
	o=$(to_octets "$s")
	: >"$work/goal-$s-write"
	: >"$work/goal-$s-send"
	for r in $(seq "$rounds"); do
		for t in write send; do
			if [ $((r % 2)) = 1 ]; then
				pair_begin
				a=$(raw_bw "$o")
				pair_mid
				b=$(uiwarp_bw sctp-udp "$t" "$o")
			else
				pair_begin
				b=$(uiwarp_bw sctp-udp "$t" "$o")
				pair_mid
				a=$(raw_bw "$o")
			fi
			pair_end
			echo "goal $s $t round $r: raw $a uiwarp $b ($place)" >&2
			echo "$a $b $place" >>"$work/goal-$s-$t"
		done
	done
done
: >"$work/lat-raw"
: >"$work/lat-sctp"
: >"$work/lat-tcp"
: >"$work/goal-lat"
for r in $(seq "$rounds"); do
	if [ $((r % 2)) = 1 ]; then
		pair_begin
		a=$(raw_lat)
		pair_mid
		b=$(uiwarp_lat sctp-udp)
	else
		pair_begin
		b=$(uiwarp_lat sctp-udp)
		pair_mid
		a=$(raw_lat)
	fi
	pair_end
	c="n/a n/a n/a"
	tcp_on && c=$(uiwarp_lat tcp)
	echo "ping-pong round $r: raw $a sctp $b ($place) tcp $c" >&2
	echo "$a" >>"$work/lat-raw"
	echo "$b" >>"$work/lat-sctp"
	echo "$c" >>"$work/lat-tcp"
	read -r am ap _ <<<"$a"
	read -r bm bp _ <<<"$b"
	echo "$ap $bp $place $am $bm" >>"$work/goal-lat"
done

# 1 to 64 QPs on one association; raw: as many streams, with as many
# messages posted ahead as uiwarp's QPs have in all (sctpraw takes at
# most 512).
{
	printf '| QPs | raw MB/s | Write MB/s | Write / raw |'
	tcp_on && printf ' TCP Write MB/s | SCTP / TCP |'
	printf '\n|----:|-----:|-----:|-----:|'
	tcp_on && printf -- '-----:|-----:|'
	printf '\n'
} >"$work/qps.md"
: >"$work/qps.dat"
qo=$(to_octets "$qp_size")
for q in $qps; do
	d=$((depth * q))
	[ "$d" -le 512 ] || d=512
	r1=$(raw_bw "$qo" "$mtu" "$q" "$d")
	w=$(uiwarp_bw sctp-udp write "$qo" "$mtu" "$q")
	tw=n/a
	tcp_on && tw=$(uiwarp_bw tcp write "$qo" "$mtu" "$q")
	echo "qps $q: raw $r1 write $w tcp $tw" >&2
	{
		printf '| %s | %s | %s | %s |' "$q" "$r1" "$w" "$(ratio "$r1" "$w")"
		tcp_on && printf ' %s | %s |' "$tw" "$(ratio "$tw" "$w")"
		printf '\n'
	} >>"$work/qps.md"
	echo "$q $r1 $w $tw" >>"$work/qps.dat"
done

# The backend's other MTU (towards peers not on loopback): the goal
# sizes, one run each, in rounds.
if [ "$alt_mtu" != 0 ]; then
	{
		echo '| size | raw MB/s (median) | Write / raw | Send / raw |'
		echo '|-----:|-----:|-----:|-----:|'
	} >"$work/alt.md"
	for s in 64k 1m; do
		o=$(to_octets "$s")
		: >"$work/alt-raw"
		: >"$work/alt-w"
		: >"$work/alt-s"
		for r in $(seq "$rounds"); do
			r1=$(raw_bw "$o" "$alt_mtu")
			w=$(uiwarp_bw sctp-udp write "$o" "$alt_mtu")
			r2=$(raw_bw "$o" "$alt_mtu")
			sd=$(uiwarp_bw sctp-udp send "$o" "$alt_mtu")
			echo "MTU $alt_mtu, $s, round $r: raw $r1 write $w raw $r2 send $sd" >&2
			printf '%s\n%s\n' "$r1" "$r2" >>"$work/alt-raw"
			{ ratio "$r1" "$w"; echo; } >>"$work/alt-w"
			{ ratio "$r2" "$sd"; echo; } >>"$work/alt-s"
		done
		printf '| %s | %s | %s | %s |\n' "$(human "$o")" \
			"$(summary "$work/alt-raw")" "$(summary "$work/alt-w")" \
			"$(summary "$work/alt-s")" >>"$work/alt.md"
	done
fi

# Raw usrsctp at 1 MiB by path MTU and SCTP socket buffer, each the
# median of mtu_repeat runs, the MTUs taking turns within a round.
: >"$work/mtu"
for buf in $mtu_bufs; do
	bufarg=()
	[ "$buf" = default ] || bufarg=(--sctp-buf "$buf")
	for r in $(seq "$mtu_repeat"); do
		for m in $mtus; do
			f=$(next_file "mtu-$m-$buf-$r")
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

load_after=$(cut -d' ' -f1-3 /proc/loadavg)
cpu=$(sed -n '/^model name/{s/^model name[[:space:]]*: //p;q}' /proc/cpuinfo)
rev=$(git -C "$src" rev-parse --short HEAD 2>/dev/null || echo unknown)
if ! git -C "$src" diff --quiet HEAD -- src include tools CMakeLists.txt \
	'bench/*.c' 'bench/*.sh' 2>/dev/null; then
	rev="$rev (with local changes)"
fi
btype=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$build/CMakeCache.txt" 2>/dev/null)
usrsctp=$(pkg-config --modversion usrsctp 2>/dev/null || echo unknown)
settings=
for f in "$work"/run-raw-bw-*; do
	case $f in *.srv) continue ;; esac
	[ -f "$f" ] && settings=$(sed -n 's/^info role=client //p' "$f")
	[ -z "$settings" ] || break
done

# lat_cols FILE: "mean | median | p99" medians over the rounds
lat_cols() {
	local i
	for i in 1 2 3; do
		awk -v i="$i" '{ print $i }' "$1" >"$work/lat-col"
		printf '%s' "$(summary "$work/lat-col" | sed 's/ (.*//')"
		if [ "$i" -lt 3 ]; then printf ' | '; fi
	done
}

tmp=$(mktemp)
{
	echo "# DDP over SCTP over 127.0.0.1: raw usrsctp and uiwarp"
	echo
	echo "- date: $started"
	echo "- machine: $(uname -srm), $(nproc) CPUs, ${cpu:-unknown CPU}"
	echo "- load average before / after the run: $load_before / $load_after"
	echo "- source: $rev, build type ${btype:-unknown}; usrsctp $usrsctp"
	echo "- net.core.rmem_max / wmem_max: $(cat /proc/sys/net/core/rmem_max) / $(cat /proc/sys/net/core/wmem_max)"
	echo "- settings: path MTU $mtu (sctpraw --mtu; UIW_SCTP_MTU=$((mtu + 12)) for uiwarp),"
	echo "  $streams streams each way, depth $depth, SCTP socket buffers $raw_buf,"
	echo "  $secs s per throughput point, $rounds rounds of the goal figures,"
	echo "  $lat_iters ping-pongs per run ($lat_mode mode)$([ "$quick" = 1 ] && echo ", SCTP_QUICK=1")"
	echo "- sctpraw as measured: ${settings:-n/a}"
	echo "- uiwarp-perf over SCTP (--llp sctp-udp): MULPDU ${mulpdu_sctp:-n/a}$([ -n "$mulpdu_alt" ] && echo " (at MTU $alt_mtu: $mulpdu_alt)"), CRC off (SCTP's CRC32c covers each packet)"
	tcp_on && echo "- uiwarp-perf over TCP (--llp tcp): MULPDU ${mulpdu_tcp:-n/a}, MPA CRC on (the default)"
	echo
	echo "Each figure is one run of a server and a client process of its"
	echo "own.  Raw usrsctp: bench/sctpraw.c, usrsctp in AF_CONN mode over UDP"
	echo "(RFC 6951) with a progress thread per process, as uiwarp's backend;"
	echo "a message of S octets goes as unordered segments of at most"
	echo "maxseg - 2 octets behind a 2-octet sequence number, placed at the"
	echo "receiver; MB/s = 10^6 payload octets per second, until the server"
	echo "has them all.  uiwarp: uiwarp-perf -s and -c, RDMA Write (the clock"
	echo "stops after a Read behind the Writes) or Send, $depth outstanding."
	echo "Both send from $depth slots of S octets; sctpraw's server places"
	echo "every message into one buffer of S octets, uiwarp's into $depth"
	echo "slots (at 1 MiB: 1 MiB against 16 MiB, which the caches hold less"
	echo "of)."
	echo "Ratios are uiwarp's figure over the raw run just before it"
	echo "(throughput: higher is better; latency: lower is better).  On a"
	echo "shared machine a figure moves by tens of per cent from run to"
	echo "run: the goals are taken in $rounds rounds (below)."
	echo
	echo "## The goals"
	echo
	echo "Each pair: a raw run and a uiwarp run, the one to go first"
	echo "alternating, with a placement probe before, between and after"
	echo "(bench/cpuprobe.c: the host moves the two vCPUs between cores"
	echo "that share a cache and cores that do not, and a loopback run is up"
	echo "to 2.4 times as slow at the far placement).  The ratio is the"
	echo "median (min-max) over the pairs whose three probes agreed; then"
	echo "the median over all pairs."
	echo
	echo "| goal | uiwarp / raw | uiwarp median | raw median |"
	echo "|---|---|---:|---:|"
	for s in 64k 1m; do
		for t in write send; do
			f=$work/goal-$s-$t
			awk '{ print $1 }' "$f" >"$f.raw"
			awk '{ print $2 }' "$f" >"$f.u"
			printf '| %s at %s >= 0.9 x raw | %s | %s MB/s | %s MB/s |\n' \
				"$([ $t = write ] && echo "RDMA Write" || echo Send)" \
				"$(human "$(to_octets $s)")" "$(goal_ratio "$f")" \
				"$(summary "$f.u" | sed 's/ (.*//')" \
				"$(summary "$f.raw" | sed 's/ (.*//')"
		done
	done
	awk '{ print $1, $2, $3 }' "$work/goal-lat" >"$work/goal-lat-p50"
	awk '{ print $4, $5, $3 }' "$work/goal-lat" >"$work/goal-lat-mean"
	awk '{ print $2 }' "$work/lat-sctp" >"$work/lat-s2"
	awk '{ print $2 }' "$work/lat-raw" >"$work/lat-r2"
	echo "| 8-octet ping-pong, median half round trip, <= 1.2 x raw | $(goal_ratio "$work/goal-lat-p50") | $(summary "$work/lat-s2" | sed 's/ (.*//') µs | $(summary "$work/lat-r2" | sed 's/ (.*//') µs |"
	echo "| the same, mean half round trip | $(goal_ratio "$work/goal-lat-mean") | | |"
	echo
	echo "## Throughput"
	echo
	cat "$work/bw.md"
	echo
	echo "## Ping-pong, 8 octets, half round trip in µs"
	echo
	echo "Send/Receive; each column the median over $rounds runs of"
	echo "$lat_iters ping-pongs of that run's mean, median and p99."
	echo
	echo "| | mean | median | p99 |"
	echo "|---|---:|---:|---:|"
	echo "| raw usrsctp | $(lat_cols "$work/lat-raw") |"
	echo "| uiwarp over SCTP | $(lat_cols "$work/lat-sctp") |"
	tcp_on && echo "| uiwarp over TCP | $(lat_cols "$work/lat-tcp") |"
	echo
	echo "## QPs on one association ($(human "$qo") RDMA Writes)"
	echo
	echo "uiwarp-perf --qps N: N sessions on N streams of one association,"
	echo "$depth Writes outstanding on each; sctpraw --streams-used N with"
	echo "$depth x N messages posted ahead (at most 512)."
	echo
	cat "$work/qps.md"
	if [ "$alt_mtu" != 0 ]; then
		echo
		echo "## At path MTU $alt_mtu"
		echo
		echo "The backend's MTU towards peers not on loopback (1452 with the"
		echo "common header), both ends; $rounds rounds, median (min-max)."
		echo
		cat "$work/alt.md"
	fi
	echo
	echo "## Raw usrsctp at 1 MiB by path MTU"
	echo
	echo "The MTU is SCTP's (spp_pathmtu): packets are up to 12 octets"
	echo "longer (the common header), datagrams 28 more (UDP, IPv4)."
	echo "$mtu_repeat run(s) of $secs s per line, the MTUs taking turns."
	echo
	cat "$work/mtu.md"
	echo
	echo "Plots: [throughput](sctp-bw.png), [QPs](sctp-qps.png)."
	if [ -s "$work/failures" ]; then
		echo
		echo "## Points without a figure"
		echo
		cat "$work/failures"
	fi
} >"$tmp"

# ---- the plots ------------------------------------------------------------
awk '{ print $1, $2 }' "$work/bw.dat" | grep -v n/a >"$work/p-raw.dat" || true
awk '{ print $1, $3 }' "$work/bw.dat" | grep -v n/a >"$work/p-w.dat" || true
awk '{ print $1, $5 }' "$work/bw.dat" | grep -v n/a >"$work/p-s.dat" || true
awk '{ print $1, $6 }' "$work/bw.dat" | grep -v n/a >"$work/p-tw.dat" || true
awk '{ print $1, $7 }' "$work/bw.dat" | grep -v n/a >"$work/p-ts.dat" || true
awk '{ print $1, $2 }' "$work/qps.dat" | grep -v n/a >"$work/q-raw.dat" || true
awk '{ print $1, $3 }' "$work/qps.dat" | grep -v n/a >"$work/q-w.dat" || true
awk '{ print $1, $4 }' "$work/qps.dat" | grep -v n/a >"$work/q-tw.dat" || true
tcp_plot=
if tcp_on; then
	tcp_plot=", \"$work/p-tw.dat\" using 1:2 with linespoints title \"uiwarp over TCP, RDMA Write\", \"$work/p-ts.dat\" using 1:2 with linespoints title \"uiwarp over TCP, Send\""
	qtcp_plot=", \"$work/q-tw.dat\" using 1:2 with linespoints title \"uiwarp over TCP, RDMA Write\""
fi
if command -v gnuplot >/dev/null; then
	gnuplot <<EOF
set terminal pngcairo size 900,560 noenhanced
set datafile separator " "
set logscale x 2
set logscale y 10
set xtics ("64 B" 64, "256 B" 256, "1 KiB" 1024, "4 KiB" 4096, "16 KiB" 16384, "64 KiB" 65536, "256 KiB" 262144, "1 MiB" 1048576)
set xlabel "message size (octets)"
set ylabel "MB/s (10^6 octets/s)"
set grid
set key left top
set output "$work/sctp-bw.png"
set title "DDP over SCTP over 127.0.0.1: throughput (MTU $mtu, depth $depth, 1 QP)"
plot "$work/p-raw.dat" using 1:2 with linespoints lw 2 title "raw usrsctp", \
     "$work/p-w.dat" using 1:2 with linespoints title "uiwarp over SCTP, RDMA Write", \
     "$work/p-s.dat" using 1:2 with linespoints title "uiwarp over SCTP, Send"$tcp_plot
set output "$work/sctp-qps.png"
set title "$(human "$qo") RDMA Writes, QPs on one association (MTU $mtu)"
set xlabel "QPs (raw: streams)"
set xtics ("1" 1, "4" 4, "16" 16, "64" 64)
set xrange [0.8:80]
plot "$work/q-raw.dat" using 1:2 with linespoints lw 2 title "raw usrsctp", \
     "$work/q-w.dat" using 1:2 with linespoints title "uiwarp over SCTP"${qtcp_plot:-}
EOF
	mv "$work/sctp-bw.png" "$work/sctp-qps.png" "$src/bench/"
else
	echo "bench/sctp.sh: no gnuplot: no plots (bench/deps.sh installs it)" >&2
fi
mv "$tmp" "$out"
cat "$out"
