#!/usr/bin/env bash
# RPC-over-RDMA on uiwarp (libuiwarp-rpcrdma over the drop-in libibverbs
# and librdmacm) against libtirpc over TCP, on this machine, over
# 127.0.0.1, in one run:
#
#   - NULL RPCs (uiwarp-rpcping against uiwarp-rpcping -s): the round
#     trip and the rate with 1 call outstanding, and the rate with 16
#     (16 threads, a CLIENT each, and over rdma also sharing one);
#   - the store example (examples/store/: rpcgen's stubs): PUT and GET of
#     4 KiB to 16 MiB objects, store-client -r making each call K times
#     on one connection (K: about RPC_BYTES octets a figure, at least
#     RPC_MIN_CALLS calls); MB/s are the objects' octets over the time
#     of those calls (get's STAT before them, the connection and the
#     files not counted).  After the runs of a size each transport gets
#     the object once more into a file, compared with cmp;
#   - where the time goes: the context switches and CPU time a call of
#     the server (from /proc) and the client (GNU time) in those runs,
#     and why a goal that is not met is not.
#
# Both transports use the same server process (one for NULL, one for the
# store), each figure is the median of RPC_ROUNDS runs, and the two
# transports take turns run by run, the first alternating from round to
# round, so that a slow stretch of the machine falls on both.  Ratios
# are RDMA / TCP: for throughput and rate above 1 means RDMA moves more;
# for latency below 1 means RDMA answers sooner.  The goals: RDMA at
# least 1.2 times TCP's throughput from 256 KiB on, and a NULL round trip
# at most 1.2 times TCP's.
#
# Writes bench/rpcrdma-latest.md and the plots bench/rpcrdma-bw.png and
# bench/rpcrdma-null.png (gnuplot; bench/deps.sh installs it).  Builds
# nothing: run it after a build (make bench-rpcrdma builds first).  A
# benchmark: it never fails for being slow; a point that fails is n/a in
# its table, and every failure is listed under the tables.
#
# usage: bench/rpcrdma.sh
#   BUILD=<dir>           build directory (default: build)
#   RPC_ROUNDS=<n>        runs per figure, the median kept (default 3)
#   RPC_NULL_CALLS=<n>    NULL calls per run (default 20000)
#   RPC_SIZES="..."       object sizes (default 4k 16k 64k 256k 1m 4m 16m)
#   RPC_BYTES=<octets>    octets a GET or PUT figure moves (default 128m)
#   RPC_MIN_CALLS=<n>     calls a GET or PUT figure makes at least
#                         (default 8)
#   RPC_QUICK=1           a short trial: one round, 2000 NULL calls, 16 MiB
#                         a figure, 2 calls at least
#   RPC_OUT=<file>        the report (default bench/rpcrdma-latest.md)
set -uo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$src/build}
# shellcheck source=lib.sh
source "$src/bench/lib.sh"
if [ "${RPC_QUICK:-0}" = 1 ]; then
	rounds=${RPC_ROUNDS:-1}
	null_calls=${RPC_NULL_CALLS:-2000}
	bytes=$(to_octets "${RPC_BYTES:-16m}")
	min_calls=${RPC_MIN_CALLS:-2}
else
	rounds=${RPC_ROUNDS:-3}
	null_calls=${RPC_NULL_CALLS:-20000}
	bytes=$(to_octets "${RPC_BYTES:-128m}")
	min_calls=${RPC_MIN_CALLS:-8}
fi
sizes=${RPC_SIZES:-4k 16k 64k 256k 1m 4m 16m}
out=${RPC_OUT:-$src/bench/rpcrdma-latest.md}

# gnuplot for the plots (nothing when it is there)
bash "$src/bench/deps.sh" || echo "bench/rpcrdma.sh: bench/deps.sh failed: the plots may be missing" >&2

rpcping=$build/uiwarp-rpcping
server=$build/examples/store/store-server
client=$build/examples/store/store-client
for f in "$rpcping" "$server" "$client"; do
	if [ ! -x "$f" ]; then
		echo "bench/rpcrdma.sh: $f is missing: build first (make bench-rpcrdma)" >&2
		exit 2
	fi
done
# Both ends are uiwarp: no pause after the MPA Reply (it is for siw).
unset "${!UIWARP_@}"
export UIWARP_START_DELAY_MS=0

bench_workdir

# start_server NAME CMD...: CMD in the background, until its first line
# (which names its ports) is in $work/NAME.line; sets $spid.
start_server() {
	local name=$1 fd
	shift
	mkfifo "$work/$name.fifo"
	"$@" >"$work/$name.fifo" 2>"$work/$name.err" &
	spid=$!
	echo "$spid" >>"$work/pids"
	exec {fd}<"$work/$name.fifo"
	if ! IFS= read -r -t 30 line <&"$fd"; then
		echo "bench/rpcrdma.sh: $name did not start:" >&2
		cat "$work/$name.err" >&2
		exit 1
	fi
	echo "$line" >"$work/$name.line"
	cat <&"$fd" >"$work/$name.out" &
	exec {fd}<&-
}

# port_of NAME TRANSPORT: the port a server's first line names.
port_of() {
	sed -n "s/.* $2 port \\([0-9]*\\).*/\\1/p" "$work/$1.line"
}

start_server ping "$rpcping" -s -a 127.0.0.1 -p 0 -t 0 --no-udp
ping_pid=$spid
start_server store "$server" -a 127.0.0.1 -p 0 -t 0 --no-udp
store_pid=$spid
declare -A pport=([rdma]=$(port_of ping rdma) [tcp]=$(port_of ping tcp))
declare -A sport=([rdma]=$(port_of store rdma) [tcp]=$(port_of store tcp))

# order ROUND: the transports in the order of that round.
order() {
	if [ $(($1 % 2)) -eq 1 ]; then echo "rdma tcp"; else echo "tcp rdma"; fi
}

# med FILE: the median of the numbers in FILE (one a line), or n/a.
med() {
	awk "$awk_med"'$1 ~ /^[0-9.]+$/ { a[++k] = $1 }
		END { if (k) print med(a, k); else print "n/a" }' "$1"
}

# Where the time goes: a server's context switches (voluntary and not)
# and CPU time (ms, the scheduler's run time), summed over its threads
# from /proc around each client run; a client's from GNU time (-f '%w %c
# %U %S': its CPU time in hundredths of a second).
gtime=/usr/bin/time
[ -x "$gtime" ] || gtime=
# proc_counts PID: "switches cpu_ms" of a running process.
proc_counts() {
	local pid=$1 cs ms
	cs=$(cat /proc/"$pid"/task/*/status 2>/dev/null |
		awk '/^(non)?voluntary_ctxt_switches:/ { n += $2 } END { print n + 0 }')
	ms=$(cat /proc/"$pid"/task/*/schedstat 2>/dev/null |
		awk '{ n += $1 } END { printf "%.3f", n / 1e6 }')
	echo "${cs:-n/a} ${ms:-n/a}"
}
# timed OUT CMD...: CMD, its counts in OUT ("switches cpu_ms") when GNU
# time is there.
timed() {
	local out=$1
	shift
	if [ -n "$gtime" ]; then
		"$gtime" -f '%w %c %U %S' -o "$out.gt" "$@"
	else
		"$@"
	fi
}
# counts_per SRV0 SRV1 CLIENT_GT CALLS: "server_switches server_ms
# client_switches client_ms", each per call.
counts_per() {
	local gt=
	[ -s "$3" ] && gt=$(tail -n 1 "$3")
	awk -v a="$1" -v b="$2" -v g="$gt" -v n="$4" 'BEGIN {
		split(a, x, " "); split(b, y, " "); split(g, z, " ")
		sc = (x[1] ~ /^[0-9]/ && y[1] ~ /^[0-9]/) ? sprintf("%.2f", (y[1] - x[1]) / n) : "n/a"
		sm = (x[2] ~ /^[0-9]/ && y[2] ~ /^[0-9]/) ? sprintf("%.3f", (y[2] - x[2]) / n) : "n/a"
		cc = (z[1] ~ /^[0-9]/) ? sprintf("%.2f", (z[1] + z[2]) / n) : "n/a"
		cm = (z[3] ~ /^[0-9]/) ? sprintf("%.3f", (z[3] + z[4]) * 1000 / n) : "n/a"
		print sc, sm, cc, cm }'
}

# ------------------------------------------------------------------
# NULL RPCs

started=$(date -u '+%Y-%m-%d %H:%M UTC')
load=$(cut -d' ' -f1-3 /proc/loadavg)
# The runs: "outstanding clients" pairs; each writes one CSV row.
null_runs=("1 each" "16 each" "16 shared")
for ((r = 1; r <= rounds; r++)); do
	for t in $(order "$r"); do
		for run in "${null_runs[@]}"; do
			read -r o c <<<"$run"
			f=$work/null-$t-$o-$c-$r
			echo "+ uiwarp-rpcping -x $t -o $o --clients $c -n $null_calls" >&2
			c0=$(proc_counts "$ping_pid")
			if waited timed "$f" timeout 300 "$rpcping" -c 127.0.0.1 \
				-p "${pport[rdma]}" -t "${pport[tcp]}" -x "$t" \
				-o "$o" --clients "$c" -n "$null_calls" --csv \
				>"$f" 2>"$f.err"; then
				csv_value "$f" calls_per_s >"$f.rate"
				csv_value "$f" lat_median_us >"$f.med"
				csv_value "$f" lat_p99_us >"$f.p99"
				# the calls and the warm-up (100 a thread)
				counts_per "$c0" "$(proc_counts "$ping_pid")" \
					"$f.gt" $((null_calls + 100 * o)) >"$f.cnt"
			else
				failed "NULL over $t, $o outstanding ($c), round $r" "$f" "$f.err"
			fi
		done
	done
done

# null_fig T O C KIND: the median over the rounds of KIND (rate, med,
# p99) of that run.
null_fig() {
	cat "$work"/null-"$1"-"$2"-"$3"-*."$4" 2>/dev/null >"$work/fig"
	med "$work/fig"
}

: >"$work/null.md"
: >"$work/null.dat"
for run in "${null_runs[@]}"; do
	read -r o c <<<"$run"
	rr=$(null_fig rdma "$o" "$c" rate)
	tr=$(null_fig tcp "$o" "$c" rate)
	rm_=$(null_fig rdma "$o" "$c" med)
	tm=$(null_fig tcp "$o" "$c" med)
	rp=$(null_fig rdma "$o" "$c" p99)
	tp=$(null_fig tcp "$o" "$c" p99)
	echo "| $o | $c | $rr | $tr | $(ratio "$tr" "$rr") | $rm_ / $rp | $tm / $tp | $(ratio "$tm" "$rm_") |" >>"$work/null.md"
	echo "\"$o $c\" $rr $tr" >>"$work/null.dat"
	if [ "$o" = 1 ]; then
		null_lat_ratio=$(ratio "$tm" "$rm_")
		null_lat="$rm_ µs against $tm µs"
	fi
done
# cnt_fig GLOB FIELD: the median over the rounds of FIELD (1: server
# switches, 2: server ms, 3: client switches, 4: client ms) of the
# .cnt files GLOB names.
cnt_fig() {
	# shellcheck disable=SC2086
	cat $1 2>/dev/null | awk -v f="$2" '{ print $f }' >"$work/fig"
	med "$work/fig"
}
: >"$work/where.md"
for t in rdma tcp; do
	g="$work/null-$t-1-each-*.cnt"
	echo "| NULL | $t | $(cnt_fig "$g" 1) | $(cnt_fig "$g" 3) | $(cnt_fig "$g" 2) | $(cnt_fig "$g" 4) |" >>"$work/where.md"
done
null_cs_rdma=$(awk -v s="$(cnt_fig "$work/null-rdma-1-each-*.cnt" 1)" -v c="$(cnt_fig "$work/null-rdma-1-each-*.cnt" 3)" \
	'BEGIN { if (s ~ /^[0-9.]+$/ && c ~ /^[0-9.]+$/) printf "%.1f", s + c; else print "n/a" }')
null_cs_tcp=$(awk -v s="$(cnt_fig "$work/null-tcp-1-each-*.cnt" 1)" -v c="$(cnt_fig "$work/null-tcp-1-each-*.cnt" 3)" \
	'BEGIN { if (s ~ /^[0-9.]+$/ && c ~ /^[0-9.]+$/) printf "%.1f", s + c; else print "n/a" }')

# ------------------------------------------------------------------
# The store: PUT and GET

: >"$work/data.md"
: >"$work/moved.md"
: >"$work/put.dat"
: >"$work/get.dat"
goal_min=
goal_at=
for s in $sizes; do
	o=$(to_octets "$s")
	k=$((bytes / o))
	[ "$k" -ge "$min_calls" ] || k=$min_calls
	head -c "$o" /dev/urandom >"$work/obj"
	for ((r = 1; r <= rounds; r++)); do
		for t in $(order "$r"); do
			name=bench-$t-$o
			for op in put get; do
				f=$work/$op-$t-$o-$r
				# get: the object to stdout, the figures to stderr
				if [ $op = put ]; then
					args=(put "$work/obj" "$name")
				else
					args=(get "$name" -)
				fi
				echo "+ store-client -x $t -r $k ${args[*]}" >&2
				c0=$(proc_counts "$store_pid")
				if [ $op = put ]; then
					waited timed "$f" timeout 600 "$client" -x "$t" \
						-p "${sport[$t]}" --stats -r "$k" \
						"${args[@]}" >"$f" 2>&1
				else
					waited timed "$f" timeout 600 "$client" -x "$t" \
						-p "${sport[$t]}" --stats -r "$k" \
						"${args[@]}" >/dev/null 2>"$f"
				fi
				rc=$?
				counts_per "$c0" "$(proc_counts "$store_pid")" \
					"$f.gt" "$k" >"$f.cnt"
				if [ $rc -eq 0 ]; then
					# "... N octets in S s ..."
					sed -n 's/.* \([0-9]*\) octets in \([0-9.]*\) s.*/\1 \2/p' "$f" |
						awk '$2 > 0 { printf "%.1f\n", $1 / $2 / 1e6 }' >"$f.mbps"
					[ -s "$f.mbps" ] || failed "$op of $s over $t, round $r: no time" "$f"
				else
					failed "$op of $s over $t, round $r" "$f"
				fi
			done
		done
	done
	# the objects as they are now, compared
	verified=yes
	for t in rdma tcp; do
		if ! waited timeout 600 "$client" -x "$t" -p "${sport[$t]}" get \
			"bench-$t-$o" "$work/copy" 2>"$work/copy.err" ||
			! cmp -s "$work/obj" "$work/copy"; then
			verified=NO
			failed "the $s object over $t is not what was put" "$work/copy.err"
		fi
	done
	row="| $(human "$o") | $k"
	for op in put get; do
		cat "$work"/$op-rdma-"$o"-*.mbps 2>/dev/null >"$work/fig"
		rv=$(med "$work/fig")
		cat "$work"/$op-tcp-"$o"-*.mbps 2>/dev/null >"$work/fig"
		tv=$(med "$work/fig")
		rt=$(ratio "$tv" "$rv")
		row="$row | $rv | $tv | $rt"
		echo "$o $rv $tv" >>"$work/$op.dat"
		if [ "$o" -ge 262144 ]; then
			goal_at="$goal_at $op $(human "$o") $rt,"
			goal_min=$(awk -v a="${goal_min:-}" -v b="$rt" 'BEGIN {
				if (b !~ /^[0-9.]+$/) print "n/a"
				else if (a == "" || (a ~ /^[0-9.]+$/ && b + 0 < a + 0)) print b
				else print a }')
		fi
	done
	echo "$row | $verified |" >>"$work/data.md"
	for op in put get; do
		for t in rdma tcp; do
			g="$work/$op-$t-$o-*.cnt"
			echo "| $(echo $op | tr a-z A-Z) $(human "$o") | $t | $(cnt_fig "$g" 1) | $(cnt_fig "$g" 3) | $(cnt_fig "$g" 2) | $(cnt_fig "$g" 4) |" >>"$work/where.md"
		done
	done
	# what moved, over rdma, in the last round's runs
	for op in put get; do
		f=$work/$op-rdma-$o-$rounds
		row="| $(human "$o") | $op"
		for kv in calls inline_sends:inline_bytes read_chunks:read_bytes \
			write_chunks:write_bytes reply_chunks:reply_bytes; do
			n=$(kv_field "$f" "store-client: rdma: calls=" "${kv%%:*}" 2>/dev/null)
			[ "$kv" = calls ] || n="$n (${n:+$(kv_field "$f" "store-client: rdma: calls=" "${kv##*:}")})"
			row="$row | ${n:-n/a}"
		done
		echo "$row |" >>"$work/moved.md"
	done
done

# ------------------------------------------------------------------
# The servers' ends and their counts

for p in "$ping_pid" "$store_pid"; do
	kill -TERM "$p" 2>/dev/null
	wait "$p" 2>/dev/null
done
wait
server_counts=$(sed -n 's/^store-server: rdma: \(calls=.*\)/\1/p' "$work/store.out")

# ------------------------------------------------------------------
# The report

verdict() {
	awk -v r="$1" -v g="$2" -v dir="$3" 'BEGIN {
		if (r !~ /^[0-9.]+$/) print "n/a"
		else if ((dir == "ge" && r + 0 >= g) || (dir == "le" && r + 0 <= g)) print "met"
		else print "not met" }'
}
cpu=$(bench_cpu)
rev=$(bench_rev "$src")
{
	echo "# RPC-over-RDMA on uiwarp against libtirpc over TCP"
	echo
	echo "Written by \`bench/rpcrdma.sh\` (\`make bench-rpcrdma\`), started $started."
	echo
	echo "- machine: $(nproc) CPUs ($cpu), Linux $(uname -r), load $load before the run, $(cut -d' ' -f1-3 /proc/loadavg) after it; idle: $(cat /sys/devices/system/cpu/cpuidle/current_driver 2>/dev/null || echo '?') (guest_halt_poll_ns $(cat /sys/module/haltpoll/parameters/guest_halt_poll_ns 2>/dev/null || echo n/a))"
	echo "- source: $rev, build type $(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$build/CMakeCache.txt"), libtirpc $(pkg_version libtirpc3)"
	echo "- RPC-over-RDMA: libuiwarp-rpcrdma's defaults (credits, 4 KiB inline thresholds) over the drop-in libraries, MPA revision 2 with CRC, UIWARP_START_DELAY_MS=0; TCP: libtirpc's clnt_vc and svc_vc with 256 KiB record buffers"
	echo "- all over 127.0.0.1, each transport's server in one process for both (\`uiwarp-rpcping -s\`, \`store-server\`); every figure the median of $rounds runs, the transports taking turns"
	echo
	echo "## Goals"
	echo
	echo "| goal | measured | ratio | |"
	echo "| --- | --- | --- | --- |"
	echo "| RDMA at least 1.2 x TCP's throughput from 256 KiB | the lowest RDMA / TCP of GET and PUT at 256 KiB and above:${goal_at%,} | ${goal_min:-n/a} | $(verdict "${goal_min:-n/a}" 1.2 ge) |"
	echo "| NULL round trip at most 1.2 x TCP's | median round trip, 1 outstanding: ${null_lat:-n/a} | ${null_lat_ratio:-n/a} | $(verdict "${null_lat_ratio:-n/a}" 1.2 le) |"
	echo
	echo "## NULL RPCs"
	echo
	echo "\`uiwarp-rpcping -c 127.0.0.1 -x T -o N --clients C -n $null_calls\` against"
	echo "\`uiwarp-rpcping -s\`: N threads calling at once, on a CLIENT each or"
	echo "all on one (libtirpc's clnt_vc holds its CLIENT for the whole of a call,"
	echo "so shared calls over TCP go one at a time).  Round trips in µs (median"
	echo "/ p99); ratios RDMA / TCP."
	echo
	echo "| outstanding | CLIENTs | RDMA calls/s | TCP calls/s | ratio | RDMA µs | TCP µs | ratio |"
	echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
	cat "$work/null.md"
	echo
	echo "## The store: PUT and GET"
	echo
	echo "\`store-client -x T -r K put FILE NAME\` and \`get NAME -\` (rpcgen's"
	echo "stubs, the same for both transports) against \`store-server\`: K calls"
	echo "on one connection, MB/s the objects' octets (10^6 a second) over the"
	echo "time of the K calls.  Over RDMA a PUT's data moves by RDMA Read and a"
	echo "GET's by RDMA Write (the example's Upper-Layer Binding: 1 KiB and"
	echo "more); over TCP through libtirpc's record marking.  Ratios RDMA / TCP."
	echo "\"same\": the object got back once more over each transport, compared"
	echo "with cmp."
	echo
	echo "| size | calls | PUT RDMA MB/s | PUT TCP MB/s | ratio | GET RDMA MB/s | GET TCP MB/s | ratio | same |"
	echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"
	cat "$work/data.md"
	echo
	echo "What moved over RDMA in the last round's runs (\`store-client --stats\`:"
	echo "the client's counts, messages or chunks and their octets; a get's"
	echo "include its STAT):"
	echo
	echo "| size | call | calls | inline Sends | Read chunks | Write chunks | Reply chunks |"
	echo "| --- | --- | --- | --- | --- | --- | --- |"
	cat "$work/moved.md"
	echo
	echo "The store server's RPC-over-RDMA counts at its end: ${server_counts:-n/a}"
	echo
	echo "## Where the time goes"
	echo
	echo "Context switches and CPU time a call, the medians over the rounds: the"
	echo "server process, all its threads (from /proc around each client run),"
	echo "and the client process (GNU time; n/a without it), for the NULL runs"
	echo "with one call outstanding and for the PUT and GET runs above."
	echo
	echo "| calls | transport | server switches | client switches | server CPU ms | client CPU ms |"
	echo "| --- | --- | --- | --- | --- | --- |"
	cat "$work/where.md"
	echo
	echo "Why a goal is not met:"
	echo
	echo "- The NULL round trip.  Over TCP a call costs two wake-ups: the"
	echo "  server's thread reads the call, the client's the reply.  Over"
	echo "  RPC-over-RDMA on the drop-in libraries the client reads its reply on"
	echo "  its own thread while it spins (a CQ it arms is in uiwarp's poll mode),"
	echo "  but the server's call is read by the device's progress thread and"
	echo "  handed to the svc_run thread through the CQ's notification (an"
	echo "  eventfd, the completion channel's epoll set, svc_run's poll(2)): in"
	echo "  this run ${null_cs_rdma:-n/a} context switches a NULL call, server and"
	echo "  client together, against ${null_cs_tcp:-n/a} over TCP.  svc_run sleeps"
	echo "  in poll(2), outside the verbs library, and a verbs program may arm a"
	echo "  CQ and then wait elsewhere (on memory an RDMA Write fills, say): a"
	echo "  CQ whose receiving stayed with the sleeping program would leave Writes"
	echo "  unplaced and Read Requests unanswered until it comes back (the"
	echo "  engine's lease bounds that at 10 ms), which an RNIC never does; so the"
	echo "  progress thread receives for an armed CQ.  Each hand-over is a"
	echo "  context switch, and on a virtual machine the wake-up of an idle vCPU"
	echo "  goes through the host (see the machine's idle settings at the top):"
	echo "  the hand-overs and the load of other work decide the figure."
	echo "- Throughput from 256 KiB.  Both transports copy the octets into and"
	echo "  out of the kernel once each way and decode them once more into the"
	echo "  rpcgen stub's own buffer (xdr_bytes allocates, zeroes and copies);"
	echo "  RPC-over-RDMA saves TCP's copy into libtirpc's record buffer and adds"
	echo "  MPA's CRC32c over every octet at both ends (RFC 5044 §4.4), which"
	echo "  costs about as much as a copy: its CPU time a call is no lower than"
	echo "  TCP's (the table above), and its progress threads sleep and wake as"
	echo "  the octets stream (the switches above).  And a call's"
	echo "  steps follow one another (the Read chunk or the Write chunk moves,"
	echo "  then the stub decodes), where libtirpc over TCP decodes each record"
	echo "  while the next is on its way.  On two CPUs shared with other work the"
	echo "  figures then move with the load from run to run more than the two"
	echo "  transports differ."
	echo
	echo "Plots: [throughput](rpcrdma-bw.png), [NULL rate](rpcrdma-null.png)."
	failures_section
} >"$work/report.md"

if command -v gnuplot >/dev/null; then
	gnuplot <<EOF
set terminal pngcairo size 900,560 noenhanced
set datafile separator " "
set datafile missing "n/a"
set logscale x 2
set xrange [3072:22369621]
set xtics ("4 KiB" 4096, "16 KiB" 16384, "64 KiB" 65536, "256 KiB" 262144, "1 MiB" 1048576, "4 MiB" 4194304, "16 MiB" 16777216)
set xlabel "object size (octets)"
set ylabel "MB/s (10^6 octets/s)"
set grid
set key left top
set output "$work/rpcrdma-bw.png"
set title "store example (rpcgen), 127.0.0.1: RPC-over-RDMA on uiwarp vs libtirpc TCP"
plot "$work/put.dat" using 1:2 with linespoints lw 2 title "PUT, RPC-over-RDMA", \
     "$work/put.dat" using 1:3 with linespoints title "PUT, TCP", \
     "$work/get.dat" using 1:2 with linespoints lw 2 title "GET, RPC-over-RDMA", \
     "$work/get.dat" using 1:3 with linespoints title "GET, TCP"
set output "$work/rpcrdma-null.png"
unset logscale x
set xrange [*:*]
set xtics auto
set key top right
set title "NULL RPCs, 127.0.0.1: calls per second"
set xlabel "outstanding calls, CLIENTs (each: one per thread)"
set ylabel "calls/s"
set style data histograms
set style histogram clustered
set style fill solid 0.8 border -1
set boxwidth 0.9
set yrange [0:*]
plot "$work/null.dat" using 2:xtic(1) title "RPC-over-RDMA", \
     "" using 3 title "TCP"
EOF
	mv "$work/rpcrdma-bw.png" "$work/rpcrdma-null.png" "$src/bench/"
else
	echo "bench/rpcrdma.sh: no gnuplot: no plots (bench/deps.sh installs it)" >&2
fi
mv "$work/report.md" "$out"
cat "$out"
