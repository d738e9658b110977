#!/usr/bin/env bash
# uiwarp-ping against stock rping over Linux siw in a QEMU guest, both ways.
#
#   host -> guest: uiwarp-ping -c on the host, rping -s in the guest
#     (127.0.0.1:P forwarded to the guest's 10.0.2.15:P)
#   guest -> host: rping -c in the guest, uiwarp-ping -s on the host
#     (the guest dials 10.0.2.100:Q, forwarded to the host's 127.0.0.1:Q)
#
# Every connection pings with data verified (-V at the client; rping -v
# at the other end prints what it received, and the count is checked) at
# several sizes up to rping's largest, 65535 octets, across MPA revision
# 1 and 2, CRC on and off, and peer-to-peer mode with a Write RTR and a
# Read RTR; the MPA outcome each side reports is checked too.  Also: a
# Request asking for markers is rejected by siw, and a revision-1-only
# uiwarp responder refuses siw's revision 2 Request, both cleanly.
#
# siw as initiator always asks for revision 2 without CRC, and uses
# peer-to-peer mode only when built so (a compile-time constant of siw:
# siw_use_p2p swaps in such a build), so the guest -> host direction
# covers what siw can do: revision 2, CRC on or off as the uiwarp
# responder chooses, client-server and peer-to-peer with a Write or a
# Read RTR.  Host -> guest connections use
# --start-delay=100: siw 6.1 sends its MPA Reply before it reads FPDUs and
# loses a first FPDU (or RTR) that comes at once (SIW_START_DELAY_MS in
# siw_lib.sh).
#
# usage: test_siw_ping.sh <build-dir> <source-dir>
set -uo pipefail

build=${1:?usage: test_siw_ping.sh <build-dir> <source-dir>}
src=${2:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
mkdir -p "$build"
build=$(cd "$build" && pwd)
src=$(cd "$src" && pwd)
ping=$build/uiwarp-ping

# shellcheck source=siw_lib.sh
source "$src/tests/interop/siw_lib.sh"

[ -x "$ping" ] || siw_die "$ping is not built"
siw_boot test_siw_ping 1 2
P=${HOST_PORTS[0]}
Q=${GUEST_PORTS[0]}
Q2=${GUEST_PORTS[1]}

# ---------------------------------------------------------------- host -> guest
# to_siw NAME "RPING_ARGS" EXPECT UIWARP_PING_ARGS...: rping -s in the
# guest with RPING_ARGS (its -C is the client's), uiwarp-ping -c -d on the
# host; EXPECT is a regular expression the client's "connected with" line
# must match (the MPA outcome).
to_siw() {
	local name=$1 rargs=$2 expect=$3 count size out=$SIW_TMP/$1 st jst
	shift 3
	count=$(sed -n 's/.*-C \([0-9]*\).*/\1/p' <<< "$rargs")
	size=$(sed -n 's/.*-S \([0-9]*\).*/\1/p' <<< "$rargs")
	# (-v prints whole buffers: only their start comes back.)
	if ! job_start "set -o pipefail; rping -s -a $GUEST_ADDR -p $P -v $rargs 2>&1 | cut -c 1-100" > "$out.start" 2>&1 ||
	   ! guest_wait_listen "$P" -t 30 > "$out.listen" 2>&1; then
		bad "$name: rping -s did not start"
		show "$out.start" "$out.listen"
		return
	fi
	timeout -s KILL 60 "$ping" -c -a 127.0.0.1 -p "$P" --start-delay="$SIW_START_DELAY_MS" -V -d "$@" \
		> "$out.client" 2>&1
	st=$?
	job_wait "$JOB" 30 "$out.server"
	jst=$?
	[ "$jst" -eq 124 ] && job_end "$JOB" "$P"
	rping_status "$jst" "$out.server"
	jst=$?
	if [ "$st" -eq 0 ] && [ "$jst" -eq 0 ] &&
	   grep -q "$count pings, .*data verified" "$out.client" &&
	   grep -Eq "connected with .*$expect" "$out.client" &&
	   [ "$(grep -c "^server ping data: rdma-ping-" "$out.server")" -eq "$count" ]; then
		ok "$name: uiwarp-ping -c $* -> rping -s: $count pings of $size octets verified ($(grep -o 'MPA revision.*' "$out.client" | sed -n 1p))"
	else
		bad "$name: uiwarp-ping -c $* -> rping -s $rargs (client status $st, server status $jst)"
		show "$out.client" "$out.server"
	fi
	siw_check_guest "$name"
}

to_siw rev2-crc-64 "-S 64 -C 5" "MPA revision 2, CRC on, markers sent off, received off, .*peer-to-peer off" -S 64 -C 5
to_siw rev2-nocrc-4096 "-S 4096 -C 3" "MPA revision 2, CRC off, .*peer-to-peer off" -S 4096 -C 3 --crc=off
to_siw rev2-crc-65535 "-S 65535 -C 2" "MPA revision 2, CRC on, .*peer-to-peer off" -S 65535 -C 2
# Revision 1 carries no IRD/ORD, and siw then gives a plain rping -s an
# ORD of 0, so that its RDMA Read fails: rping -s -q, as IRD = ORD = 1.
to_siw rev1-nocrc-64 "-q -S 64 -C 3" "MPA revision 1, CRC off, .*peer-to-peer off" -S 64 -C 3 --mpa-rev=1 --crc=off
to_siw rev1-crc-65535 "-q -S 65535 -C 2" "MPA revision 1, CRC on, .*peer-to-peer off" -S 65535 -C 2 --mpa-rev=1 --crc=on
# Peer-to-peer: the RTR is the first FPDU, siw's choice of RTR is checked.
to_siw p2p-write-crc-4096 "-S 4096 -C 3" "MPA revision 2, CRC on, .*peer-to-peer on, RTR write" -S 4096 -C 3 --p2p --rtr=write
to_siw p2p-read-nocrc-65535 "-S 65535 -C 2" "MPA revision 2, CRC off, .*peer-to-peer on, RTR read" -S 65535 -C 2 --p2p --rtr=read --crc=off
to_siw p2p-read-crc-1000 "-S 1000 -C 4" "MPA revision 2, CRC on, .*peer-to-peer on, RTR read" -S 1000 -C 4 --p2p --rtr=read --crc=on
# All three RTR types offered: siw prefers a Write.
to_siw p2p-any-64 "-S 64 -C 2" "MPA revision 2, .*peer-to-peer on, RTR write" -S 64 -C 2 --p2p

# siw never takes markers: it answers with R set and closes; rping -s
# never hears of the connection.
name=markers-rejected
out=$SIW_TMP/$name
if job_start rping -s -a "$GUEST_ADDR" -p "$P" -v -C 1 > "$out.start" 2>&1 &&
   guest_wait_listen "$P" -t 30 > "$out.listen" 2>&1; then
	timeout -s KILL 60 "$ping" -c -a 127.0.0.1 -p "$P" --start-delay="$SIW_START_DELAY_MS" -C 1 --markers=on \
		> "$out.client" 2>&1
	st=$?
	if [ "$st" -eq 1 ] && grep -q "rejected" "$out.client"; then
		ok "$name: a Request with M set is rejected by siw, uiwarp-ping reports it and exits 1"
	else
		bad "$name: uiwarp-ping --markers=on against siw: status $st"
		show "$out.client"
	fi
	job_end "$JOB" "$P"
else
	bad "$name: rping -s did not start"
	show "$out.start" "$out.listen"
fi
siw_check_guest "$name"

# ---------------------------------------------------------------- guest -> host
# from_siw NAME PORT "RPING_ARGS": rping -c in the guest against the
# uiwarp-ping server listening on PORT; checks its pings.
from_siw() {
	local name=$1 port=$2 rargs=$3 count size out=$SIW_TMP/$1 st
	count=$(sed -n 's/.*-C \([0-9]*\).*/\1/p' <<< "$rargs")
	size=$(sed -n 's/.*-S \([0-9]*\).*/\1/p' <<< "$rargs")
	guest_run -t 60 "set -o pipefail; rping -c -a $GUEST_HOST_ADDR -p $port -V -v $rargs 2>&1 | cut -c 1-100" \
		> "$out.client" 2>&1
	rping_status $? "$out.client"
	st=$?
	if [ "$st" -eq 0 ] &&
	   [ "$(grep -c "^ping data: rdma-ping-" "$out.client")" -eq "$count" ]; then
		ok "$name: rping -c $rargs -> uiwarp-ping -s: $count pings of $size octets verified by rping"
	else
		bad "$name: rping -c $rargs -> uiwarp-ping -s (status $st)"
		show "$out.client"
	fi
	siw_check_guest "$name"
}

# server_check NAME FILE EXPECT...: the persistent server's account: one
# "connected with" line per client, each matching the next EXPECT, and
# no failure.
server_check() {
	local name=$1 f=$2 i=0 line e
	shift 2
	mapfile -t lines < <(grep "connected with" "$f")
	if [ "${#lines[@]}" -ne "$#" ] || grep -q "failed\|error" "$f"; then
		bad "$name: the uiwarp-ping server saw ${#lines[@]} connections, expected $#"
		show "$f"
		return
	fi
	for e in "$@"; do
		line=${lines[$i]}
		i=$((i + 1))
		if ! grep -Eq "$e" <<< "$line"; then
			bad "$name: server connection $i: expected /$e/: $line"
			return
		fi
	done
	ok "$name: the uiwarp-ping server served $# rping clients: $(grep -c ' pings, ' "$f") ping summaries, no failure"
}

# serve_from_siw NAME PORT "SERVER_OPTS" EXPECT SIZE:"RPING_ARGS"...: a
# persistent uiwarp-ping server with SERVER_OPTS on PORT, one rping -c
# in the guest per SIZE:ARGS (from_siw NAME-SIZE), then the server's
# account: every connection's line must match EXPECT.
serve_from_siw() {
	local name=$1 port=$2 sopts=$3 expect=$4 spec spid exps=()
	shift 4
	# shellcheck disable=SC2086
	if ! host_listen "srv-$name" 300 "listening on" "$ping" -s -P -d $sopts \
		-a 127.0.0.1 -p "$port"; then
		bad "$name: uiwarp-ping -s did not start"
		show "$SIW_TMP/srv-$name.out" "$SIW_TMP/srv-$name.err"
		return
	fi
	spid=$HOST_PID
	for spec in "$@"; do
		from_siw "$name-${spec%%:*}" "$port" "${spec#*:}"
		exps+=("$expect")
	done
	kill "$spid"
	host_wait "$spid"
	server_check "$name" "$SIW_TMP/srv-$name.out" "${exps[@]}"
}

# A persistent server with the defaults: CRC on in its Reply (siw asks for
# none but honours the responder's C bit).
serve_from_siw from-siw-crc "$Q" "" "MPA revision 2, CRC on, .*peer-to-peer off" \
	"64:-S 64 -C 5" "4096:-S 4096 -C 3" "65535:-S 65535 -C 2"
serve_from_siw from-siw-nocrc "$Q2" "--crc=off" "MPA revision 2, CRC off, .*peer-to-peer off" \
	"1000:-S 1000 -C 3" "65535:-S 65535 -C 1"

# A responder limited to revision 1 closes a revision 2 Request without a
# Reply (RFC 5044 §7.1.1 Rev); siw does not fall back to revision 1, so
# rping -c fails at once, and the server keeps listening.
name=rev1-responder
if host_listen srv-rev1 120 "listening on" "$ping" -s -P -d --mpa-rev=1 -a 127.0.0.1 -p "$Q"; then
	spid=$HOST_PID
	guest_run -t 60 rping -c -a "$GUEST_HOST_ADDR" -p "$Q" -C 1 \
		> "$SIW_TMP/$name.client" 2>&1
	st=$?
	kill "$spid"
	host_wait "$spid"
	sst=$?
	if [ "$st" -ne 0 ] && [ "$st" -ne 124 ] &&
	   grep -q "REJECTED\|ERROR\|failed" "$SIW_TMP/$name.client" &&
	   ! grep -q "connected with" "$SIW_TMP/srv-rev1.out"; then
		ok "$name: a revision-1-only uiwarp-ping server refuses siw's revision 2 Request; rping -c fails at once ($(grep -m 1 -o 'RDMA_CM_EVENT_[A-Z_]*' "$SIW_TMP/$name.client"))"
	else
		bad "$name: rping -c status $st, server status $sst"
		show "$SIW_TMP/$name.client" "$SIW_TMP/srv-rev1.out" "$SIW_TMP/srv-rev1.err"
	fi
	siw_check_guest "$name"
else
	bad "$name: uiwarp-ping -s did not start"
	show "$SIW_TMP/srv-rev1.out" "$SIW_TMP/srv-rev1.err"
fi

# ---------------------------------------------------------------- siw P2P
# siw as a peer-to-peer initiator (the build with peer_to_peer on): its
# Request offers Write and Read RTRs, it opens with the RTR the server
# keeps, and the RTR never reaches uiwarp-ping.
if siw_use_p2p; then
	SIW_AFTER_RESTART=siw_use_p2p
	serve_from_siw from-siw-p2p "$Q" "" "MPA revision 2, CRC on, .*peer-to-peer on, RTR write" \
		"64:-S 64 -C 3" "65535:-S 65535 -C 2"
	# A server that accepts only a Read RTR: siw opens with a
	# zero-length RDMA Read, answered by a zero-length Read Response.
	serve_from_siw from-siw-p2p-read "$Q2" "--crc=off --rtr=read" \
		"MPA revision 2, CRC off, .*peer-to-peer on, RTR read" \
		"1000:-S 1000 -C 3" "4096:-S 4096 -C 2"
else
	bad "from-siw-p2p: siw.ko with peer_to_peer on could not replace siw.ko"
fi

siw_finish
