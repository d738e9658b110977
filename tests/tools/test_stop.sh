#!/usr/bin/env bash
# A tool told to stop by SIGINT or SIGTERM ends within about 2 s, even
# when its orderly end waits for a peer that never answers (tools/
# tool_util.h): then it says so on stderr,
#   "<tool>: peer did not answer within 2 s of SIGTERM; exiting",
# and exits with 128 + the signal's number.
#
# The silent peer is a real one behind uiwarp-faultproxy, which stalls
# one direction of the stream: uiwarp-ping's client sends its first
# advertisement into the stall and waits for the go-ahead (as against a
# siw that left the first Send unread); uiwarp-ping's server waits for
# the Read Response of a Read Request held in the stall; uiwarp-perf's
# client waits for the WELCOME held in the stall, its server for the
# client that never got it.  uiwarp-bw has no peer outside itself: it
# ends its measurement early, without figures.  Every signal is sent
# once the tool has said (or the proxy has seen) that it is in the
# state to test.
#
# usage: test_stop.sh <build-dir> <source-dir>
set -uo pipefail

build=${1:?usage: test_stop.sh <build-dir> <source-dir>}
for t in ping perf bw faultproxy; do
	if [ ! -x "$build/uiwarp-$t" ]; then
		echo "FAIL: $build/uiwarp-$t is not built"
		exit 1
	fi
done
ping=$build/uiwarp-ping
perf=$build/uiwarp-perf
bw=$build/uiwarp-bw
proxy=$build/uiwarp-faultproxy

tmp=$(mktemp -d)
pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do
		kill -KILL "$p" 2>/dev/null
	done
	wait 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

# shellcheck source=../check_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../check_lib.sh"

# The bound on the end: the 2 s deadline and the start of a process.
LIMIT_MS=3500

# start <name> <out: stdout|stderr> <cmd...>: runs cmd in the background
# (no timeout(1) in between: the signals must reach the tool itself)
# with the chosen output on a pipe that the test reads, the other in a
# file.  Sets $bgpid and $bgfd.
start() {
	local name=$1 which=$2
	shift 2
	mkfifo "$tmp/$name.fifo"
	if [ "$which" = stdout ]; then
		"$@" >"$tmp/$name.fifo" 2>"$tmp/$name.err" &
	else
		"$@" 2>"$tmp/$name.fifo" >"$tmp/$name.out" &
	fi
	bgpid=$!
	pids+=("$bgpid")
	exec {bgfd}<"$tmp/$name.fifo"
}

# wait_line <fd> <glob> <log>: reads lines from fd (copying them to log)
# until one matches glob; 30 s at most.  The matching line is in $line.
wait_line() {
	local fd=$1 glob=$2 log=$3
	while IFS= read -r -t 30 line <&"$fd"; do
		printf '%s\n' "$line" >>"$log"
		# shellcheck disable=SC2053
		[[ $line == $glob ]] && return 0
	done
	return 1
}

# drain <fd> <log>: the rest of fd goes to log, in the background (a
# tool that writes into a full pipe would block).  Sets $drainpid.
drain() {
	local fd=$1
	cat <&"$fd" >>"$2" &
	drainpid=$!
	exec {fd}<&-
}

# start_proxy <name> <target port> <command>: uiwarp-faultproxy to
# 127.0.0.1:<port> with one -e command; its commands go in on $pxin, its
# answers come out on $pxout.  Sets $pxport and $pxpid.
start_proxy() {
	local name=$1 tport=$2 cmd=$3
	mkfifo "$tmp/$name.pin" "$tmp/$name.pout"
	"$proxy" -t "127.0.0.1:$tport" -e "$cmd" <"$tmp/$name.pin" \
		>"$tmp/$name.pout" 2>"$tmp/$name.perr" &
	pxpid=$!
	pids+=("$pxpid")
	exec {pxin}>"$tmp/$name.pin"
	exec {pxout}<"$tmp/$name.pout"
	if ! IFS= read -r -t 30 line <&"$pxout" ||
		[[ $line != "listening "* ]]; then
		bad "$name: the proxy did not start"
		show "$tmp/$name.perr"
		return 1
	fi
	pxport=${line##* }
}

stop_proxy() {
	kill -TERM "$pxpid" 2>/dev/null
	exec {pxin}>&-
	exec {pxout}<&-
}

# expect_end <name> <pid> <SIG> <err file> <regex> [<drain pid>]: sends
# SIG to pid and checks that it ends within LIMIT_MS with status
# 128 + SIG and a line matching regex in the err file (once the drain
# that copies it there has finished).  The wait for the end has its own
# deadline (tail --pid, which looks every 20 ms), so a tool that hangs fails the check, not the
# test run.
expect_end() {
	local name=$1 pid=$2 sig=$3 err=$4 re=$5 t0 t1 ms rc want
	want=$((128 + $(kill -l "$sig")))
	t0=$EPOCHREALTIME
	kill -"$sig" "$pid"
	timeout 20 tail -s 0.02 --pid="$pid" -f /dev/null
	t1=$EPOCHREALTIME
	if kill -0 "$pid" 2>/dev/null; then
		bad "$name: still running 20 s after SIG$sig"
		show "$err"
		kill -KILL "$pid"
		wait "$pid"
		return 1
	fi
	wait "$pid"
	rc=$?
	[ -n "${6:-}" ] && wait "$6"
	ms=$(( (${t1/./} - ${t0/./}) / 1000 ))
	if [ "$ms" -le "$LIMIT_MS" ] && [ "$rc" -eq "$want" ] &&
		grep -Eq -- "$re" "$err"; then
		ok "$name: ended $ms ms after SIG$sig, status $rc: $(grep -E -- "$re" "$err")"
	else
		bad "$name: ended $ms ms after SIG$sig (at most $LIMIT_MS), status $rc (want $want), message /$re/"
		show "$err"
	fi
}

# ping_server <name> <args...>: a uiwarp-ping server on a free port.
# Sets $sport, $spid, $sfd (its stdout, after the listening line).
ping_server() {
	local name=$1
	shift
	start "$name.srv" stdout "$ping" -s -p 0 -a 127.0.0.1 "$@"
	spid=$bgpid
	sfd=$bgfd
	if ! wait_line "$sfd" "server: listening on * port *" \
		"$tmp/$name.srv.out"; then
		bad "$name: the server did not start listening"
		show "$tmp/$name.srv.err"
		return 1
	fi
	sport=${line##* port }
}

# ---------------------------------------------------------------- ping
# The client: its first advertisement (an MPA revision 1 Request is 20
# octets, RFC 5044 §7.1; no private data) stalls in the proxy, and the
# client waits for the go-ahead of ping 0 when the signal comes.
for sig in TERM INT; do
	name=ping-client-$sig
	ping_server "$name" || continue
	drain "$sfd" "$tmp/$name.srv.out"
	start_proxy "$name" "$sport" "stall c2s 20" || continue
	start "$name" stdout "$ping" -c -a 127.0.0.1 -p "$pxport" -d \
		--mpa-rev=1 --crc=off -C 1
	cpid=$bgpid
	if wait_line "$bgfd" "client: ping 0: Send source advertisement*" \
		"$tmp/$name.out"; then
		drain "$bgfd" "$tmp/$name.out"
		expect_end "$name" "$cpid" "$sig" "$tmp/$name.err" \
			"^uiwarp-ping: peer did not answer within 2 s of SIG$sig; exiting$"
	else
		bad "$name: the client did not send its first advertisement"
		show "$tmp/$name.out" "$tmp/$name.err"
	fi
	stop_proxy
	kill -KILL "$spid" 2>/dev/null
	wait 2>/dev/null
done

# The server: it has read the client's source advertisement and waits for
# the Response of its RDMA Read, which (after its 20-octet MPA Reply)
# stalls in the proxy.
for sig in TERM INT; do
	name=ping-server-$sig
	ping_server "$name" -d || continue
	start_proxy "$name" "$sport" "stall s2c 20" || continue
	start "$name.cli" stdout "$ping" -c -a 127.0.0.1 -p "$pxport" \
		--mpa-rev=1 --crc=off -C 1
	cpid=$bgpid
	drain "$bgfd" "$tmp/$name.cli.out"
	if wait_line "$sfd" "server: ping 0: received source advertisement*" \
		"$tmp/$name.srv.out"; then
		drain "$sfd" "$tmp/$name.srv.out"
		expect_end "$name" "$spid" "$sig" "$tmp/$name.srv.err" \
			"^uiwarp-ping: peer did not answer within 2 s of SIG$sig; exiting$"
	else
		bad "$name: the server did not receive the advertisement"
		show "$tmp/$name.srv.out" "$tmp/$name.srv.err" \
			"$tmp/$name.cli.err"
	fi
	stop_proxy
	kill -KILL "$cpid" 2>/dev/null
	wait 2>/dev/null
done

# ---------------------------------------------------------------- perf
# The client's HELLO (128 octets) reaches the server; the WELCOME stalls.
# Then the client waits for the WELCOME and the server for the client's
# QPs: each, signalled, waits in vain for its peer.
for sig in TERM INT; do
	name=perf-$sig
	start "$name.srv" stdout "$perf" -s -p 0
	spid=$bgpid
	sfd=$bgfd
	if ! wait_line "$sfd" "uiwarp-perf: server listening on port *" \
		"$tmp/$name.srv.out"; then
		bad "$name: the server did not start listening"
		show "$tmp/$name.srv.err"
		continue
	fi
	sport=${line##* port }
	drain "$sfd" "$tmp/$name.srv.out"
	start_proxy "$name" "$sport" "stall s2c 0" || continue
	"$perf" -c 127.0.0.1 -p "$pxport" -D 1 >"$tmp/$name.out" \
		2>"$tmp/$name.err" &
	cpid=$!
	pids+=("$cpid")
	echo "wait c2s 128" >&"$pxin"
	if IFS= read -r -t 40 line <&"$pxout" && [ "$line" = ok ]; then
		expect_end "$name-client" "$cpid" "$sig" "$tmp/$name.err" \
			"^uiwarp-perf: peer did not answer within 2 s of SIG$sig; exiting$"
		expect_end "$name-server" "$spid" "$sig" "$tmp/$name.srv.err" \
			"^uiwarp-perf: peer did not answer within 2 s of SIG$sig; exiting$"
	else
		bad "$name: the client's HELLO did not reach the server: $line"
		show "$tmp/$name.err" "$tmp/$name.srv.err"
	fi
	stop_proxy
	wait 2>/dev/null
done

# A server that no client has reached yet ends at once, saying so.
name=perf-idle
start "$name" stdout "$perf" -s -p 0
spid=$bgpid
if wait_line "$bgfd" "uiwarp-perf: server listening on port *" \
	"$tmp/$name.out"; then
	drain "$bgfd" "$tmp/$name.out"
	expect_end "$name" "$spid" TERM "$tmp/$name.err" \
		"^uiwarp-perf: stopped by SIGTERM$"
else
	bad "$name: the server did not start listening"
	show "$tmp/$name.err"
fi

# ---------------------------------------------------------------- bw
# A minute-long measurement ends early on the signal, without figures.
for sig in TERM INT; do
	name=bw-$sig
	start "$name" stderr "$bw" -v -t 60 -o write -s 64k
	if wait_line "$bgfd" "uiwarp-bw: measuring rdma_write*" \
		"$tmp/$name.err"; then
		drain "$bgfd" "$tmp/$name.err"
		expect_end "$name" "$bgpid" "$sig" "$tmp/$name.err" \
			"^uiwarp-bw: stopped by SIG$sig$" "$drainpid"
		if grep -q '^| rdma_write' "$tmp/$name.out"; then
			bad "$name: figures printed after the signal"
			show "$tmp/$name.out"
		fi
	else
		bad "$name: no measurement started"
		show "$tmp/$name.err"
	fi
	wait 2>/dev/null
done

check_summary
