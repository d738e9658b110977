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
# client that never got it.  Over DDP over SCTP (--llp sctp-udp) the
# silent peer is behind uiwarp-faultproxy --udp, which cuts the path of
# the SCTP packets (RFC 6951): uiwarp-ping's client and server in the
# middle of their pings, uiwarp-perf's in the middle of a bw run; and
# uiwarp-perf's WELCOME stalls as over TCP.  A client still connecting
# (its INIT never answered) needs no peer to stop: it ends at once,
#   "client: interrupted while connecting",
# with exit status 1.  uiwarp-bw has no peer outside itself: it ends its
# measurement early, without figures.  Every signal is sent once the
# tool has said (or the proxy has seen) that it is in the state to test.
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

# shellcheck source=../check_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../check_lib.sh"
check_workdir

# The bound on the end: the 2 s deadline and the start of a process.
LIMIT_MS=3500

# drain <fd> <log>: the rest of fd goes to log, in the background (a
# tool that writes into a full pipe would block).  Sets $drainpid.
drain() {
	local fd=$1
	cat <&"$fd" >>"$2" &
	drainpid=$!
	exec {fd}<&-
}

# start_proxy <name> <target port> <command> [<option>...]:
# uiwarp-faultproxy to 127.0.0.1:<port> with one -e command (none if
# empty) and the options (--udp: the UDP relay); its commands go in on
# $pxin, its answers come out on $pxout.  Sets $pxport and $pxpid.
start_proxy() {
	local name=$1 tport=$2 cmd=$3
	shift 3
	mkfifo "$tmp/$name.pin" "$tmp/$name.pout"
	"$proxy" "$@" -t "127.0.0.1:$tport" ${cmd:+-e "$cmd"} \
		<"$tmp/$name.pin" >"$tmp/$name.pout" 2>"$tmp/$name.perr" &
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

# proxy_cmd <name> <command>: one command to the proxy; its answer
# must be "ok".
proxy_cmd() {
	echo "$2" >&"$pxin"
	if IFS= read -r -t 40 line <&"$pxout" && [ "$line" = ok ]; then
		return 0
	fi
	bad "$1: the proxy answered '$line' to '$2'"
	return 1
}

stop_proxy() {
	kill -TERM "$pxpid" 2>/dev/null
	exec {pxin}>&-
	exec {pxout}<&-
}

# expect_end <name> <pid> <SIG> <err file> <regex> [<drain pid>]: sends
# SIG to pid and checks that it ends within LIMIT_MS with status
# 128 + SIG ($end_status instead, if set) and a line matching regex in
# the err file (once the drain that copies it there has finished).  The
# wait for the end has its own deadline (tail --pid, which looks every
# 20 ms), so a tool that hangs fails the check, not the test run.
expect_end() {
	local t0=$EPOCHREALTIME
	kill -"$3" "$2"
	end_checked "$t0" "$@"
}

# expect_ends <SIG> <regex> <name> <pid> <err file> [<name> <pid> <err
# file>]...: sends SIG to every pid at once, then checks each end as
# expect_end does (a run of two silent peers takes the time of one).
expect_ends() {
	local sig=$1 re=$2 t0 i
	shift 2
	t0=$EPOCHREALTIME
	for ((i = 2; i <= $#; i += 3)); do
		kill -"$sig" "${!i}"
	done
	while [ $# -ge 3 ]; do
		end_checked "$t0" "$1" "$2" "$sig" "$3" "$re"
		shift 3
	done
}

# end_checked <t0> <name> <pid> <SIG> <err file> <regex> [<drain pid>]:
# the checks of expect_end on a pid signalled at t0 ($EPOCHREALTIME).
end_checked() {
	local t0=$1 name=$2 pid=$3 sig=$4 err=$5 re=$6 drain=${7:-} t1 ms rc want
	want=${end_status:-$((128 + $(kill -l "$sig")))}
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
	[ -n "$drain" ] && wait "$drain"
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
	bg_start "$name.srv" stdout "$ping" -s -p 0 -a 127.0.0.1 "$@"
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
	bg_start "$name" stdout "$ping" -c -a 127.0.0.1 -p "$pxport" -d \
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
	bg_start "$name.cli" stdout "$ping" -c -a 127.0.0.1 -p "$pxport" \
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

# ---------------------------------------------------------------- ping over SCTP
# DDP over SCTP over UDP (RFC 6951), on free UDP ports.
#
# A client whose INIT nobody answers (a UDP relay that drops everything)
# is still connecting when the signal comes: that end needs no peer, so
# it gives up at once, saying so, with exit status 1 (a connection that
# could not be made, as over TCP).  The signal comes once the INIT has
# reached the relay.
for sig in TERM INT; do
	name=ping-sctp-connect-$sig
	udp=$(free_udp_port) || fail "no free UDP port"
	start_proxy "$name" "$udp" cut --udp || continue
	bg_start "$name" stdout "$ping" -c -a 127.0.0.1 -p 7174 -d -C 1 \
		--llp sctp-udp --udp-port "$pxport"
	cpid=$bgpid
	if ! wait_line "$bgfd" "client: connecting to *" "$tmp/$name.out"; then
		bad "$name: the client did not start connecting"
		show "$tmp/$name.out" "$tmp/$name.err"
	elif proxy_cmd "$name" "waitrecv c2s 1"; then
		drain "$bgfd" "$tmp/$name.out"
		end_status=1 expect_end "$name" "$cpid" "$sig" \
			"$tmp/$name.err" "^client: interrupted while connecting$"
	else
		show "$tmp/$name.err" "$tmp/$name.perr"
	fi
	stop_proxy
	kill -KILL "$cpid" 2>/dev/null
	wait 2>/dev/null
done

# A client and a server in the middle of their pings, the client through
# a UDP relay that then cuts the path both ways: each, signalled, waits
# for its silent peer (the client for a go-ahead or the end of its
# session, the server for a Read Response, an advertisement or the end
# of its session) until the deadline.
for sig in TERM INT; do
	name=ping-sctp-cut-$sig
	udp=$(free_udp_port) || fail "no free UDP port"
	ping_server "$name" -d --llp sctp-udp --udp-port "$udp" || continue
	drain "$sfd" "$tmp/$name.srv.out"
	start_proxy "$name" "$udp" "" --udp || continue
	bg_start "$name" stdout "$ping" -c -a 127.0.0.1 -p "$sport" -d -V \
		-S 4096 --llp sctp-udp --udp-port "$pxport"
	cpid=$bgpid
	if wait_line "$bgfd" "client: ping 2: verified*" "$tmp/$name.out"; then
		drain "$bgfd" "$tmp/$name.out"
		proxy_cmd "$name" cut &&
		expect_ends "$sig" \
			"^uiwarp-ping: peer did not answer within 2 s of SIG$sig; exiting$" \
			"$name-client" "$cpid" "$tmp/$name.err" \
			"$name-server" "$spid" "$tmp/$name.srv.err"
	else
		bad "$name: the client did not verify 3 pings"
		show "$tmp/$name.out" "$tmp/$name.err" "$tmp/$name.srv.err"
	fi
	stop_proxy
	kill -KILL "$cpid" "$spid" 2>/dev/null
	wait 2>/dev/null
done

# ---------------------------------------------------------------- perf
# perf_server <name> <args...>: uiwarp-perf -s on a free port.  Sets
# $sport and $spid; its output goes on to files.
perf_server() {
	local name=$1
	shift
	bg_start "$name.srv" stdout "$perf" -s -p 0 "$@"
	spid=$bgpid
	if ! wait_line "$bgfd" "uiwarp-perf: server listening on port *" \
		"$tmp/$name.srv.out"; then
		bad "$name: the server did not start listening"
		show "$tmp/$name.srv.err"
		return 1
	fi
	sport=${line##* port }
	drain "$bgfd" "$tmp/$name.srv.out"
}

# The client's HELLO (128 octets) reaches the server; the WELCOME stalls.
# Then the client waits for the WELCOME and the server for the client's
# QPs: each, signalled, waits in vain for its peer.  Over TCP, and once
# with the server listening over SCTP (its stack's threads running).
for c in "TERM tcp" "INT tcp" "TERM sctp-udp"; do
	set -- $c
	sig=$1
	name=perf-$sig
	sargs=()
	cargs=()
	if [ "$2" != tcp ]; then
		name=perf-sctp-$sig
		udp=$(free_udp_port) || fail "no free UDP port"
		sargs=(--udp-port "$udp")
		cargs=(--llp "$2")
	fi
	perf_server "$name" "${sargs[@]}" || continue
	start_proxy "$name" "$sport" "stall s2c 0" || continue
	"$perf" -c 127.0.0.1 -p "$pxport" -D 1 "${cargs[@]}" \
		>"$tmp/$name.out" 2>"$tmp/$name.err" &
	cpid=$!
	pids+=("$cpid")
	if proxy_cmd "$name" "wait c2s 128"; then
		expect_ends "$sig" \
			"^uiwarp-perf: peer did not answer within 2 s of SIG$sig; exiting$" \
			"$name-client" "$cpid" "$tmp/$name.err" \
			"$name-server" "$spid" "$tmp/$name.srv.err"
	else
		show "$tmp/$name.err" "$tmp/$name.srv.err"
	fi
	stop_proxy
	wait 2>/dev/null
done

# Over SCTP, the QPs reach the server through a UDP relay (the server
# told its own UDP port, the client the relay's).  In the middle of a
# long bw run of Writes (far more datagrams through the relay than the
# setup takes) the relay cuts the path: the server, signalled (SIGTERM),
# waits in vain for the client's DONE; then the client, signalled
# (SIGINT), for the completions of its Writes.  The server goes first:
# it reads the control connection, where the client's end would show
# before the server's own deadline; the client, waiting on its CQ alone,
# does not see the server's end.
name=perf-sctp-cut
udp=$(free_udp_port) || fail "no free UDP port"
if perf_server "$name" --udp-port "$udp" &&
	start_proxy "$name" "$udp" "" --udp; then
	"$perf" -c 127.0.0.1 -p "$sport" --llp sctp-udp --udp-port "$pxport" \
		-t write -S 64k -D 60 >"$tmp/$name.out" 2>"$tmp/$name.err" &
	cpid=$!
	pids+=("$cpid")
	if proxy_cmd "$name" "waitrecv c2s 2000" && proxy_cmd "$name" cut; then
		expect_end "$name-server" "$spid" TERM "$tmp/$name.srv.err" \
			"^uiwarp-perf: peer did not answer within 2 s of SIGTERM; exiting$"
		expect_end "$name-client" "$cpid" INT "$tmp/$name.err" \
			"^uiwarp-perf: peer did not answer within 2 s of SIGINT; exiting$"
	else
		show "$tmp/$name.err" "$tmp/$name.srv.err" "$tmp/$name.perr"
	fi
	stop_proxy
	kill -KILL "$cpid" "$spid" 2>/dev/null
	wait 2>/dev/null
fi

# A server that no client has reached yet ends at once, saying so.
name=perf-idle
bg_start "$name" stdout "$perf" -s -p 0
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
	bg_start "$name" stderr "$bw" -v -t 60 -o write -s 64k
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
