#!/usr/bin/env bash
# uiwarp-rpcping, briefly, on both transports: a server (-s) on
# 127.0.0.1 serving NULL over RPC-over-RDMA, TCP and UDP; clients with
# every output (table, CSV, JSON), 1 and 4 outstanding calls, a CLIENT
# per thread and one shared.  Checked: the shape of each output; every
# run made exactly -n calls; over rdma the transport counted -n plus the
# warm-up calls, and the server's count at its end is the sum of the
# clients'; the latencies are ordered (min <= median <= p99); bad usage
# and a missing server give an error and a non-zero status; SIGTERM ends
# a client whose call a mute peer never answers within the 2 s of
# tools/tool_util.h, and the server, with 143.
#
# usage: test_rpcping.sh <build-dir> <source-dir>
set -uo pipefail

build=${1:?usage: test_rpcping.sh <build-dir> <source-dir>}
ping=$build/uiwarp-rpcping
[ -x "$ping" ] || { echo "FAIL: $ping is not built"; exit 1; }
command -v python3 >/dev/null || { echo "FAIL: python3 is missing"; exit 1; }

# shellcheck source=../check_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../check_lib.sh"
check_workdir
# Both ends are uiwarp: no start delay after the MPA Reply.
export UIWARP_START_DELAY_MS=0

N=400
W=20

mkfifo "$tmp/server.fifo"
"$ping" -s -a 127.0.0.1 -p 0 -t 0 -u 0 >"$tmp/server.fifo" 2>"$tmp/server.err" &
spid=$!
pids+=("$spid")
exec {sfd}<"$tmp/server.fifo"
if ! IFS= read -r -t 30 line <&"$sfd" ||
	[[ $line != "uiwarp-rpcping: serving NULL of program "* ]]; then
	show "$tmp/server.err"
	fail "the server did not start (first line: '${line:-}')"
fi
cat <&"$sfd" >"$tmp/server.out" &
drainpid=$!
pids+=("$drainpid")
rport=$(sed -n 's/.* rdma port \([0-9]*\).*/\1/p' <<<"$line")
tport=$(sed -n 's/.* tcp port \([0-9]*\).*/\1/p' <<<"$line")
uport=$(sed -n 's/.* udp port \([0-9]*\).*/\1/p' <<<"$line")
[ -n "$rport" ] && [ -n "$tport" ] && [ -n "$uport" ] ||
	fail "no ports in '$line'"
ok "the server listens: rdma port $rport, tcp port $tport, udp port $uport"
ports=(-p "$rport" -t "$tport" -u "$uport")

# rp <name> <args...>: a client run, output in $tmp/<name>, status $rc.
rp() {
	local name=$1
	shift
	"$ping" -c 127.0.0.1 "${ports[@]}" "$@" >"$tmp/$name" 2>"$tmp/$name.err"
	rc=$?
	[ $rc -eq 0 ] || { bad "$name: status $rc"; show "$tmp/$name.err"; }
}

# ---- CSV: every combination, every column ---------------------------------
rp csv -x rdma,tcp -n $N -w $W -o 1,4 --clients each,shared --csv
header=transport,outstanding,clients,calls,warmup,seconds,calls_per_s,lat_min_us,lat_avg_us,lat_median_us,lat_p99_us,transport_calls
if [ "$(sed -n 1p "$tmp/csv")" = "$header" ]; then
	ok "csv: the header names the columns"
else
	bad "csv: header '$(sed -n 1p "$tmp/csv")'"
fi
# The runs in order: transport, then outstanding, then clients mode (one
# thread: one run, shared being each).
want="rdma,1,1 rdma,4,4 rdma,4,1 tcp,1,1 tcp,4,4 tcp,4,1"
got=$(sed -n '2,$p' "$tmp/csv" | cut -d, -f1-3 | tr '\n' ' ')
if [ "$got" = "$want " ]; then
	ok "csv: one row per run: $want"
else
	bad "csv: rows '$got', expected '$want'"
	show "$tmp/csv"
fi
rdma_calls=0
while IFS=, read -r t o c calls warm secs rate lmin lavg lmed lp99 tcalls; do
	what="csv: $t, $o outstanding, $c CLIENT(s)"
	if [ "$calls" = $N ] && [ "$warm" = $((W * o)) ]; then
		ok "$what: $N calls, $warm warm-up"
	else
		bad "$what: $calls calls and $warm warm-up, expected $N and $((W * o))"
	fi
	if awk -v a="$lmin" -v m="$lmed" -v p="$lp99" -v v="$lavg" \
		-v s="$secs" -v r="$rate" \
		'BEGIN { exit !(a > 0 && a <= m && m <= p && a <= v && s > 0 && r > 0) }'; then
		ok "$what: latency min $lmin <= median $lmed <= p99 $lp99 µs, $rate calls/s"
	else
		bad "$what: figures out of order: min $lmin avg $lavg median $lmed p99 $lp99, $secs s, $rate/s"
	fi
	if [ "$t" = rdma ]; then
		if [ "$tcalls" = $((N + W * o)) ]; then
			ok "$what: the transport counted $tcalls calls"
		else
			bad "$what: the transport counted '$tcalls' calls, expected $((N + W * o))"
		fi
		rdma_calls=$((rdma_calls + ${tcalls:-0}))
	elif [ -n "$tcalls" ]; then
		bad "$what: transport_calls '$tcalls' for a libtirpc transport"
	fi
done < <(sed -n '2,$p' "$tmp/csv")

# ---- the table and JSON ------------------------------------------------------
rp table -x rdma,tcp,udp -n $N -w $W
expect_line table "$tmp/table" "^uiwarp-rpcping: server 127.0.0.1, NULL of program 0x20756978 version 1, $N calls per run, $W warm-up calls per thread\$" \
	"the title line"
expect_line table "$tmp/table" '^\| transport \| outstanding \| clients \| calls \| seconds \| calls/s \| min µs \| avg µs \| median µs \| p99 µs \|$' \
	"the table's header"
for t in rdma tcp udp; do
	expect_line table "$tmp/table" "^\\| $t \\| 1 \\| 1 \\| $N \\| [0-9.]+ \\| [0-9]+ \\| [0-9.]+ \\| [0-9.]+ \\| [0-9.]+ \\| [0-9.]+ \\|\$" \
		"a row for $t with $N calls"
done
rdma_calls=$((rdma_calls + N + W))

rp json -x tcp -n $N -w 0 -o 2 --json
if python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
r = d["results"]
assert d["tool"] == "uiwarp-rpcping" and d["server"] == "127.0.0.1"
assert d["program"] == 0x20756978 and d["version"] == 1
assert len(r) == 1 and r[0]["transport"] == "tcp" and r[0]["calls"] == int(sys.argv[2])
assert r[0]["outstanding"] == 2 and r[0]["clients"] == 2 and r[0]["warmup"] == 0
assert r[0]["transport_calls"] is None
' "$tmp/json" $N; then
	ok "json: parses, one run of $N calls on 2 CLIENTs, no transport count for tcp"
else
	bad "json: not what was asked"
	show "$tmp/json"
fi

# ---- errors --------------------------------------------------------------------
"$ping" -c 127.0.0.1 -n 0 >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ $rc -eq 2 ] && grep "^uiwarp-rpcping: bad count" "$tmp/err" >/dev/null; then
	ok "-n 0: a usage error, status 2: $(sed -n 1p "$tmp/err")"
else
	bad "-n 0: status $rc"
	show "$tmp/err"
fi
"$ping" -s -n 5 >"$tmp/out" 2>"$tmp/err"
rc=$?
[ $rc -eq 2 ] && ok "-s -n: a usage error, status 2" ||
	{ bad "-s -n: status $rc"; show "$tmp/err"; }
noport=$(free_tcp_port)
for t in rdma tcp; do
	opt=-t
	[ $t = tcp ] || opt=-p
	"$ping" -c 127.0.0.1 -x $t $opt "$noport" -n 10 >"$tmp/out" 2>"$tmp/err"
	rc=$?
	if [ $rc -eq 1 ] && grep "^uiwarp-rpcping: cannot reach 127.0.0.1 port $noport over $t: " "$tmp/err" >/dev/null; then
		ok "$t: no server: status 1, '$(sed -n 1p "$tmp/err")'"
	else
		bad "$t: no server: status $rc"
		show "$tmp/out" "$tmp/err"
	fi
done

# ---- a mute peer: SIGTERM during a call no one answers ------------------------
# The client stops between calls; a call under way ends 2 s after the
# signal at the latest (tools/tool_util.h), with 128 + 15.
mute_peer_start mute
for t in rdma tcp; do
	opt=-t
	[ $t = tcp ] || opt=-p
	"$ping" -c 127.0.0.1 -x $t $opt "$mute_port" -n 10 -T 60 \
		>"$tmp/mute-$t.out" 2>"$tmp/mute-$t.err" &
	cpid=$!
	pids+=("$cpid")
	if ! wait_line "$mute_fd" "received *" "$tmp/mute.out"; then
		bad "$t: the client never reached the mute peer"
		continue
	fi
	t0=$EPOCHREALTIME
	kill -TERM "$cpid"
	timeout 30 tail -s 0.02 --pid="$cpid" -f /dev/null
	wait "$cpid"
	rc=$?
	ms=$(( (${EPOCHREALTIME/./} - ${t0/./}) / 1000 ))
	if [ $rc -eq 143 ] && [ $ms -le 3500 ] &&
		grep "^uiwarp-rpcping: server did not answer within 2 s of SIGTERM; exiting" \
			"$tmp/mute-$t.err" >/dev/null; then
		ok "$t: SIGTERM ends a client waiting on a mute peer in $ms ms, status 143"
	else
		bad "$t: SIGTERM to a client waiting on a mute peer: status $rc after $ms ms"
		show "$tmp/mute-$t.out" "$tmp/mute-$t.err"
	fi
done

# ---- the server's end -------------------------------------------------------
kill -TERM "$spid"
timeout 30 tail -s 0.02 --pid="$spid" -f /dev/null
wait "$spid"
rc=$?
wait "$drainpid"
if [ $rc -eq 143 ] && grep -x "uiwarp-rpcping: stopped by SIGTERM" "$tmp/server.err" >/dev/null; then
	ok "SIGTERM ends the server, status 143"
else
	bad "SIGTERM to the server: status $rc"
	show "$tmp/server.out" "$tmp/server.err"
fi
scalls=$(sed -n 's/^uiwarp-rpcping: rdma:.* calls=\([0-9]*\).*/\1/p' "$tmp/server.out")
if [ "$scalls" = "$rdma_calls" ]; then
	ok "the server counted the $rdma_calls calls the clients made over rdma"
else
	bad "the server counted '$scalls' calls over rdma, the clients $rdma_calls"
	show "$tmp/server.out"
fi
check_summary
