#!/usr/bin/env bash
# Debian 12's rping (rdma-core 44, unmodified) on uiwarp through
# uiwarp-run, server and client on the loopback address: each ping's
# data, printed by both sides (-v), are rping's pattern and verified by
# the client (-V); under MPA revision 2 (the default) and revision 1
# (UIWARP_MPA_REV=1 on both sides), over IPv6, without the start delay,
# at rping's smallest, default and largest sizes; a persistent server
# (-P) serving two clients in turn; and a server that makes its QP
# itself (-q: ibv_create_qp, the QP named to rdma_accept by
# conn_param.qp_num alone), which uiwarp-rdma(7) does not support,
# refused cleanly: rdma_accept fails with EINVAL and says why under
# UIWARP_DEBUG, and both sides end.
#
# usage: test_debian_rping.sh <build-dir> <source-dir>
set -uo pipefail

# shellcheck source=compat_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/compat_lib.sh"
compat_init "$@" -- rping

# pings NAME FILE PREFIX FIRST COUNT SIZE: FILE holds, in its lines that
# begin with PREFIX, exactly the data of pings FIRST .. FIRST+COUNT-1
# (rping numbers the pings of each connection from 0).
pings() {
	local name=$1 f=$2 prefix=$3 first=$4 count=$5 size=$6 i
	for ((i = 0; i < count; i++)); do
		printf '%s%s\n' "$prefix" "$(rping_pattern $((first + i)) "$size")"
	done >"$tmp/$name.want"
	grep -a "^$prefix" "$f" >"$tmp/$name.got"
	if cmp -s "$tmp/$name.want" "$tmp/$name.got"; then
		ok "$name: $count pings of $size octets, rping's data"
		return 0
	fi
	bad "$name: not the $count pings of $size octets wanted ($(wc -l <"$tmp/$name.got") lines '$prefix')"
	diff "$tmp/$name.want" "$tmp/$name.got" | cut -c 1-160 | sed -n 1,8p |
		sed 's/^/  | /'
	return 1
}

# rping_case NAME ENV ADDR COUNT SIZE SERVER-OPTS CLIENT-OPTS: one
# server and one client, ENV (space-separated VAR=VALUE, or -) in the
# environment of both.
rping_case() {
	local name=$1 envs=$2 addr=$3 count=$4 size=$5 sopts=$6 copts=$7 port
	local -a e=()
	[ "$envs" = - ] || read -ra e <<<"$envs"
	port=$(free_tcp_port) || { bad "$name: no free TCP port"; return; }
	# shellcheck disable=SC2086  # options are words
	# rping's server reads into a buffer of its own -S size (rdma-core
	# 44 behaviour: no larger than the client's pings may be).
	serve "$name" "$port" env "${e[@]}" "$run" rping -s -a "$addr" \
		-p "$port" -v -S "$size" $sopts || return
	# shellcheck disable=SC2086
	client "$name" env "${e[@]}" "$run" rping -c -a "$addr" -p "$port" \
		-v -V -C "$count" -S "$size" $copts
	reap "$name"
	pair_ok "$name" || return
	pings "$name-client" "$tmp/$name.cout" "ping data: " 0 "$count" "$size"
	pings "$name-server" "$tmp/$name.sout" "server ping data: " 0 \
		"$count" "$size"
}

# name            environment       address    count size  server client
while read -r name envs addr count size sopts copts; do
	[ "$sopts" = - ] && sopts=
	[ "$copts" = - ] && copts=
	rping_case "$name" "$envs" "$addr" "$count" "$size" "$sopts" "$copts"
done <<'EOF'
rev2-64          -                 127.0.0.1  10    64     -      -
rev2-min         -                 127.0.0.1  4     26     -      -
rev2-max         -                 127.0.0.1  4     65535  -      -
rev1-64          UIWARP_MPA_REV=1  127.0.0.1  10    64     -      -
rev1-1000        UIWARP_MPA_REV=1  127.0.0.1  5     1000   -      -
rev1-max         UIWARP_MPA_REV=1  127.0.0.1  4     65535  -      -
ipv6             -                 ::1        5     4096   -      -
nodelay          UIWARP_START_DELAY_MS=0 127.0.0.1 5 4096   -      -
EOF

# rping -s -q: refused as uiwarp-rdma(7) says, without a hang.
name=refused-q
port=$(free_tcp_port) || fail "no free TCP port"
if serve "$name" "$port" env UIWARP_DEBUG=1 "$run" rping -s -q -a 127.0.0.1 \
	-p "$port" -v; then
	client "$name" "$run" rping -c -a 127.0.0.1 -p "$port" -V -C 3
	reap "$name"
	# its own failure: not 0, not a signal's (a crash), not the timeout's
	if { [ "$crc" -ne 0 ] && [ "$crc" -lt 124 ]; } || [ "$crc" -eq 255 ]; then
		ok "$name: the client ends, exit $crc: $(tr '\n' ' ' <"$tmp/$name.cerr")"
	else
		bad "$name: client exit $crc, want a failure of its own"
		show "$tmp/$name.cout" "$tmp/$name.cerr"
	fi
	if { [ "$src" -ne 0 ] && [ "$src" -lt 124 ]; } || [ "$src" -eq 255 ]; then
		ok "$name: the server ends by itself, exit $src"
	else
		bad "$name: server exit $src, want a failure of its own"
		show "$tmp/$name.serr"
	fi
	# The server's request ends unanswered (its id destroyed): a reset
	# during the setup, which Linux's iWARP CM reports as REJECTED with
	# -ECONNRESET (uiwarp-rdma(7)).
	expect_line "$name" "$tmp/$name.cerr" \
		'RDMA_CM_EVENT_REJECTED, error -104$' \
		"the client sees REJECTED with -ECONNRESET"
	expect_line "$name" "$tmp/$name.serr" '^rdma_accept: Invalid argument$' \
		"rdma_accept fails with EINVAL"
	expect_line "$name" "$tmp/$name.serr" '^uiwarp: rdma_accept: .*qp_num' \
		"UIWARP_DEBUG says why (a QP named by qp_num)"
	if grep -a -n 'uiwarp: .*no error' "$tmp/$name.serr" >"$tmp/$name.noerr"; then
		bad "$name: a debug line without a reason: $(cat "$tmp/$name.noerr")"
	else
		ok "$name: no debug line without a reason"
	fi
fi

# A persistent server (-P) serves two clients one after the other, with
# different sizes and counts, and serves on until it is stopped: rping
# has no handler for SIGTERM, so it ends by the signal, and its output
# is line-buffered (stdbuf) so that the signal loses none of it.
name=persistent
port=$(free_tcp_port) || fail "no free TCP port"
if serve "$name" "$port" stdbuf -oL "$run" rping -s -P -a 127.0.0.1 \
	-p "$port" -v -S 4096; then
	good=1
	for c in "1 3 64" "2 5 4096"; do
		set -- $c
		client "$name-$1" "$run" rping -c -a 127.0.0.1 -p "$port" -v -V \
			-C "$2" -S "$3"
		if [ "$crc" -eq 0 ]; then
			ok "$name: client $1 exits 0"
			pings "$name-client$1" "$tmp/$name-$1.cout" "ping data: " 0 "$2" "$3"
		else
			good=0
			bad "$name: client $1: exit $crc"
			show "$tmp/$name-$1.cout" "$tmp/$name-$1.cerr"
		fi
	done
	if kill -0 "$spid" 2>/dev/null; then
		ok "$name: the server still serves after two clients"
	else
		bad "$name: the server ended after its clients"
	fi
	kill -TERM "$spid" 2>/dev/null
	reap "$name" stop
	if [ "$src" -eq 143 ]; then
		ok "$name: the server ends on SIGTERM"
	else
		bad "$name: server exit $src on SIGTERM, want 143"
		show "$tmp/$name.serr"
	fi
	if [ $good = 1 ]; then
		# The server's lines, in the order of its clients.
		{
			for i in 0 1 2; do
				printf 'server ping data: %s\n' "$(rping_pattern $i 64)"
			done
			for i in 0 1 2 3 4; do
				printf 'server ping data: %s\n' "$(rping_pattern $i 4096)"
			done
		} >"$tmp/$name.want"
		grep -a '^server ping data: ' "$tmp/$name.sout" >"$tmp/$name.got"
		if cmp -s "$tmp/$name.want" "$tmp/$name.got"; then
			ok "$name: the server printed both clients' pings, in turn"
		else
			bad "$name: the server's ping lines differ from both clients' pings"
			diff "$tmp/$name.want" "$tmp/$name.got" | cut -c 1-160 |
				sed -n 1,8p | sed 's/^/  | /'
			show "$tmp/$name.serr"
		fi
	fi
fi

check_summary
