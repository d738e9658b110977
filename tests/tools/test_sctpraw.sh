#!/usr/bin/env bash
# bench/sctpraw.c, the raw usrsctp baseline of bench/sctp.sh, works: a
# server and a client process over 127.0.0.1 move a few hundred
# messages of one segment and of several segments (on four streams),
# and a few hundred ping-pongs; the server counts every payload octet
# the client says it sent, and both exit 0.  A server waiting for a
# client that never comes ends within 2 s of SIGTERM with status 143.
# Short runs: nothing here is about speed.
#
# usage: test_sctpraw.sh <build-dir> <source-dir>
set -uo pipefail

build=${1:?usage: test_sctpraw.sh <build-dir> <source-dir>}
src=${2:?usage: test_sctpraw.sh <build-dir> <source-dir>}
bin=$build/sctpraw

# shellcheck source=../check_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../check_lib.sh"
check_workdir
# alive, kv_field
# shellcheck source=../../bench/lib.sh
source "$src/bench/lib.sh"

[ -x "$bin" ] || fail "$bin is missing: build the tree first"

now_ms() { echo $(($(date +%s%N) / 1000000)); }

# wait_end PID MS: waits up to MS ms for PID to end; then $rc is its
# status and $took the milliseconds it took.  1 if it did not end.
wait_end() {
	local t0
	t0=$(now_ms)
	while alive "$1"; do
		[ $(($(now_ms) - t0)) -le "$2" ] || return 1
		sleep 0.02
	done
	took=$(($(now_ms) - t0))
	wait "$1"
	rc=$?
}

# start_server NAME: a server on any free UDP port; once it says where
# it listens (5 s at most), $spid and $port are set.
start_server() {
	: >"$tmp/$1.srv"
	"$bin" -s --port 0 >"$tmp/$1.srv" 2>&1 &
	spid=$!
	pids+=("$spid")
	port=
	for _ in $(seq 100); do
		port=$(sed -n 's/^listening udp_port=\([0-9][0-9]*\) .*/\1/p' \
			"$tmp/$1.srv")
		[ -n "$port" ] && return 0
		alive "$spid" || return 1
		sleep 0.05
	done
	return 1
}

# run NAME CLIENT-ARGS...: a server and a client; both must exit 0.
run() {
	local name=$1 crc
	shift
	if ! start_server "$name"; then
		bad "$name: the server did not start"
		show "$tmp/$name.srv"
		return 1
	fi
	timeout 20 "$bin" -p "$port" "$@" 127.0.0.1 >"$tmp/$name.cli" 2>&1
	crc=$?
	if ! wait_end "$spid" 5000; then
		bad "$name: the server did not end after the client's shutdown"
		show "$tmp/$name.cli" "$tmp/$name.srv"
		return 1
	fi
	if [ "$crc" -ne 0 ] || [ "$rc" -ne 0 ]; then
		bad "$name: client status $crc, server status $rc"
		show "$tmp/$name.cli" "$tmp/$name.srv"
		return 1
	fi
	ok "$name: client and server exit 0"
}

# Throughput: 300 messages of 100 octets (one segment each) and of
# 3000 (three segments at the default MTU), on four streams.
if run bw --sizes 100,3000 -n 300 -q 4; then
	for size in 100 3000; do
		sent=$(kv_field "$tmp/bw.cli" "test=bw size=$size " bytes)
		msgs=$(kv_field "$tmp/bw.cli" "test=bw size=$size " msgs)
		got=$(kv_field "$tmp/bw.srv" "server test=bw size=$size " recv_bytes)
		if [ "$msgs" = 300 ] && [ "$sent" = $((300 * size)) ] &&
		   [ "$got" = "$sent" ]; then
			ok "bw at $size octets: the server received the $sent octets sent"
		else
			bad "bw at $size octets: $msgs messages, $sent octets sent, ${got:-none} received"
			show "$tmp/bw.cli" "$tmp/bw.srv"
		fi
	done
	segs=$(kv_field "$tmp/bw.srv" "server test=bw size=3000 " recv_segs)
	maxseg=$(kv_field "$tmp/bw.cli" "info role=client " maxseg)
	per=$(( (3000 + maxseg - 3) / (maxseg - 2) ))
	if [ "$segs" = $((300 * per)) ]; then
		ok "bw at 3000 octets: $per segments per message (maxseg $maxseg)"
	else
		bad "bw at 3000 octets: $segs segments for 300 messages (maxseg $maxseg)"
	fi
fi

# Ping-pong: every ping answered, the figures positive.
if run lat -t lat -S 8 -n 200; then
	sent=$(kv_field "$tmp/lat.cli" "test=lat size=8 " bytes)
	back=$(kv_field "$tmp/lat.cli" "test=lat size=8 " recv_bytes)
	got=$(kv_field "$tmp/lat.srv" "server test=lat size=8 " recv_bytes)
	p50=$(kv_field "$tmp/lat.cli" "test=lat size=8 " lat_p50_us)
	if [ -n "$sent" ] && [ "$sent" -gt 0 ] && [ "$got" = "$sent" ] &&
	   [ "$back" = "$sent" ] &&
	   awk -v v="$p50" 'BEGIN { exit !(v + 0 > 0) }'; then
		ok "lat at 8 octets: $sent octets each way, median $p50 µs"
	else
		bad "lat at 8 octets: sent $sent, server got ${got:-none}, back ${back:-none}, median ${p50:-none}"
		show "$tmp/lat.cli" "$tmp/lat.srv"
	fi
fi

# SIGTERM to a server whose client never comes.
if start_server silent; then
	sleep 0.2
	kill -TERM "$spid"
	if wait_end "$spid" 3000; then
		if [ "$rc" -eq 143 ] && [ "$took" -le 2000 ]; then
			ok "SIGTERM to a waiting server: status 143 after $took ms"
		else
			bad "SIGTERM to a waiting server: status $rc after $took ms"
			show "$tmp/silent.srv"
		fi
	else
		bad "SIGTERM to a waiting server: still running after 3 s"
	fi
else
	bad "silent: the server did not start"
	show "$tmp/silent.srv"
fi

check_summary
