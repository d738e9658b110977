#!/usr/bin/env bash
# uiwarp-ping end to end on loopback: rping's data pattern, sizes, counts,
# CRC and marker negotiation, a persistent server serving two clients one
# after another, IPv6, and failures that must end in a clear message and
# a non-zero exit status, never in a hang; then the same over DDP over
# SCTP (RFC 5043: --llp sctp-udp, on a free UDP port), its session
# opening (enhanced or plain Initiate), a refused SCTP port, and
# --llp sctp-kernel, which never falls back to the user-space stack.
#
# usage: test_ping.sh <build-dir> <source-dir>
set -uo pipefail

build=${1:?usage: test_ping.sh <build-dir> <source-dir>}
ping=$build/uiwarp-ping
if [ ! -x "$ping" ]; then
	echo "FAIL: $ping is not built"
	exit 1
fi

tmp=$(mktemp -d)
pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do
		kill "$p" 2>/dev/null
	done
	wait 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

# shellcheck source=../check_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../check_lib.sh"

# start_server <name> <args...>: a server on a free port (-p 0).  Sets
# $port, $spid (the server) and $catpid (the reader of its output), and
# waits until it listens: its first line is "server: listening on A port P".
start_server() {
	local name=$1 line fd
	shift
	mkfifo "$tmp/$name.fifo"
	timeout 120 "$ping" -s -p 0 "$@" >"$tmp/$name.fifo" \
		2>"$tmp/$name.serr" &
	spid=$!
	pids+=("$spid")
	exec {fd}<"$tmp/$name.fifo"
	if ! IFS= read -r -t 30 line <&"$fd"; then
		exec {fd}<&-
		bad "$name: the server did not start listening"
		show "$tmp/$name.serr"
		return 1
	fi
	case $line in
	"server: listening on "*" port "*) port=${line##* port } ;;
	*)
		exec {fd}<&-
		bad "$name: unexpected first server line: $line"
		return 1
		;;
	esac
	sfd=$fd
	[ -n "${keep_fd:-}" ] && return 0
	drain_server "$name"
}
# drain_server <name>: the rest of the server's output goes to a file.
drain_server() {
	cat <&"$sfd" >>"$tmp/$1.sout" &
	catpid=$!
	exec {sfd}<&-
}

# pingpong <name> <server args> <client args> [<client expect rc>]:
# runs one server and one client; checks both exit statuses.
pingpong() {
	local name=$1 sargs=$2 cargs=$3 crc src
	start_server "$name" -a 127.0.0.1 $sargs || return 1
	timeout 60 "$ping" -c -a 127.0.0.1 -p "$port" $cargs \
		>"$tmp/$name.cout" 2>"$tmp/$name.cerr"
	crc=$?
	wait "$spid"
	src=$?
	wait "$catpid"
	if [ "$crc" -ne 0 ] || [ "$src" -ne 0 ]; then
		bad "$name: client exit $crc, server exit $src"
		show "$tmp/$name.cout" "$tmp/$name.cerr" "$tmp/$name.sout" \
			"$tmp/$name.serr"
		return 1
	fi
	ok "$name: client and server exit 0"
}

# summary <name> <count> <size>: the client's and server's summary lines.
summary() {
	local name=$1 count=$2 size=$3 moved=$((2 * $2 * $3))
	expect_line "$name" "$tmp/$name.cout" \
		"^client: $count pings, $moved bytes moved by RDMA Read and RDMA Write in [0-9.]+ s: [0-9.]+ MB/s, data verified$" \
		"client summary: $count pings verified"
	expect_line "$name" "$tmp/$name.sout" \
		"^server: 127\\.0\\.0\\.1 port [0-9]+: $count pings, $moved bytes moved" \
		"server summary: $count pings"
}

# check_data <name> <size>: after 4 pings with -v on both sides, each
# side printed rping's pattern for pings 0-3.
check_data() {
	local name=$1 size=$2 good=1 p want got
	for p in 0 1 2 3; do
		want="ping data: $(rping_pattern $p "$size")"
		got=$(sed -n "$((p + 1))p" "$tmp/$name.cout")
		[ "$got" = "$want" ] || { good=0; echo "  ping $p: got  '$got'"; echo "  ping $p: want '$want'"; }
		got=$(grep '^server ping data: ' "$tmp/$name.sout" | sed -n "$((p + 1))p")
		[ "$got" = "server $want" ] || { good=0; echo "  server ping $p: got '$got'"; }
	done
	if [ $good = 1 ]; then
		ok "$name: rping's pattern read and written back, pings 0-3"
	else
		bad "$name: ping data differ from rping's pattern"
	fi
}

# ---------------------------------------------------------------- data
# rping's data, printed by both sides with -v, at rping's minimum size
# (26) and default size (64).
for size in 26 64; do
	name=data-$size
	if pingpong "$name" "-v" "-v -V -C 4 -S $size"; then
		summary "$name" 4 "$size"
		check_data "$name" "$size"
	fi
done

# ---------------------------------------------------------------- sizes
# 65537 crosses segment and marker boundaries at odd offsets; 1 MiB is
# bigger than the server's initial buffer, which must grow.
for case in "4096 20" "65537 8" "1048576 4"; do
	set -- $case
	name=size-$1
	pingpong "$name" "" "-V -C $2 -S $1" && summary "$name" "$2" "$1"
done

# ---------------------------------------------------------------- trace
# -d shows every step of rping's sequence, in order, on both sides.
name=trace
if pingpong "$name" "-d" "-d -V -C 2"; then
	want='Send source advertisement|go-ahead received: the server has read the source by RDMA Read|Send sink advertisement|go-ahead received: the server has written the sink by RDMA Write|verified 64 bytes'
	got=$(grep -Eo "$want" "$tmp/$name.cout" | sed -n 1,5p | tr '\n' '|')
	if [ "$got" = "Send source advertisement|go-ahead received: the server has read the source by RDMA Read|Send sink advertisement|go-ahead received: the server has written the sink by RDMA Write|verified 64 bytes|" ]; then
		ok "$name: client steps in rping's order"
	else
		bad "$name: client steps out of order: $got"
		show "$tmp/$name.cout"
	fi
	want='received source advertisement|RDMA Read of 64 bytes complete|Send go-ahead|received sink advertisement|RDMA Write of 64 bytes complete|Send go-ahead'
	got=$(grep -Eo "$want" "$tmp/$name.sout" | sed -n 1,6p | tr '\n' '|')
	if [ "$got" = "received source advertisement|RDMA Read of 64 bytes complete|Send go-ahead|received sink advertisement|RDMA Write of 64 bytes complete|Send go-ahead|" ]; then
		ok "$name: server steps in rping's order"
	else
		bad "$name: server steps out of order: $got"
		show "$tmp/$name.sout"
	fi
fi

# ---------------------------------------------------------------- MPA
# RFC 5044 §7.1: CRC is used when either side asks for it; markers are
# sent towards the side that asks for them.  Each case: name, server
# options, client options, expected CRC, markers the client sends,
# markers the client receives.
while read -r name sopts copts crc mtx mrx; do
	sopts=${sopts//,/ }
	copts=${copts//,/ }
	if pingpong "$name" "$sopts" "-d -V -C 5 -S 4096 $copts"; then
		summary "$name" 5 4096
		expect_line "$name" "$tmp/$name.cout" \
			"^client: connected with .* CRC $crc, markers sent $mtx, received $mrx," \
			"CRC $crc, markers sent $mtx, received $mrx"
	fi
done <<'EOF'
mpa-crc-on      --crc=on                  --crc=on                  on  off off
mpa-crc-off     --crc=off                 --crc=off                 off off off
mpa-crc-client  --crc=off                 --crc=on                  on  off off
mpa-crc-server  --crc=on                  --crc=off                 on  off off
mpa-mk-both     --markers=on,--crc=off    --markers=on,--crc=off    off on  on
mpa-mk-client   --markers=off             --markers=on              on  off on
mpa-mk-crc      --markers=on,--crc=on     --markers=on,--crc=on     on  on  on
EOF

# rping -q fixes the server's IRD and ORD at 1; -I and -O set them.
# MPA revision 1 carries no IRD/ORD: each side keeps its own.
name=ird-ord
if pingpong "$name" "-d -q" "-d -V -C 3 -I 4 -O 2 --mpa-rev=1"; then
	expect_line "$name" "$tmp/$name.sout" \
		'^server: connected with .* MPA revision 1, .* IRD 1, ORD 1,' "-q: server IRD 1, ORD 1"
	expect_line "$name" "$tmp/$name.cout" \
		'^client: connected with .* IRD 4, ORD 2,' "-I 4 -O 2: client IRD 4, ORD 2"
fi
# Revision 2 (the default) negotiates them (RFC 6581 §9.1): the server
# raises its IRD to the client's ORD and keeps its ORD within the
# client's IRD.
name=ird-ord-v2
if pingpong "$name" "-d -q" "-d -V -C 3 -I 4 -O 2"; then
	expect_line "$name" "$tmp/$name.sout" \
		'^server: connection request from .* MPA revision 2, .* IRD 4, ORD 2,' "server sees IRD 4, ORD 2"
	expect_line "$name" "$tmp/$name.sout" \
		'^server: connected with .* IRD 2, ORD 1,' "server IRD 2, ORD 1"
	expect_line "$name" "$tmp/$name.cout" \
		'^client: connected with .* MPA revision 2, .* IRD 4, ORD 2,' "client IRD 4, ORD 2"
fi

# ---------------------------------------------------------------- p2p
# Peer-to-peer mode (RFC 6581 §9.2) with each RTR type; the server may
# narrow the types it accepts.  Options are separated by ';' here.
while read -r name sopts copts rtr; do
	sopts=${sopts//;/ }
	copts=${copts//;/ }
	[ "$sopts" = - ] && sopts=
	[ "$copts" = - ] && copts=
	if pingpong "$name" "-d $sopts" "-d -V -C 3 -S 1000 --p2p $copts"; then
		summary "$name" 3 1000
		expect_line "$name" "$tmp/$name.cout" \
			"^client: connected with .* peer-to-peer on, RTR $rtr\$" \
			"client sent a $rtr RTR"
	fi
done <<'EOF2'
p2p-write   -              --rtr=write          write
p2p-read    -              --rtr=read           read
p2p-send    -              --rtr=send           send
p2p-any     -              -                    write
p2p-narrow  --rtr=read     --rtr=send,read      read
p2p-nocrc   --crc=off      --crc=off;--rtr=read read
p2p-delay   -              --start-delay=50     write
EOF2

# --start-delay: the client's first FPDU waits after the Reply, and the
# pings go on as usual.
name=start-delay
if pingpong "$name" "-d" "-d -V -C 3 -S 4096 --start-delay=200"; then
	summary "$name" 3 4096
fi

# A revision 1 server closes on a revision 2 Request (RFC 6581 §10).
name=rev1-server
if start_server "$name" -a 127.0.0.1 --mpa-rev=1; then
	if timeout 60 "$ping" -c -a 127.0.0.1 -p "$port" -C 1 \
		>"$tmp/$name.cout" 2>"$tmp/$name.cerr"; then
		bad "$name: a revision 2 client connected"
	else
		ok "$name: a revision 2 client is refused"
	fi
	if timeout 60 "$ping" -c -a 127.0.0.1 -p "$port" -C 2 -V \
		--mpa-rev=1 >"$tmp/$name.c1out" 2>"$tmp/$name.c1err"; then
		ok "$name: a revision 1 client pings"
	else
		bad "$name: a revision 1 client failed"
		show "$tmp/$name.c1out" "$tmp/$name.c1err"
	fi
	wait "$spid"
	wait "$catpid"
fi

# ---------------------------------------------------------------- -P
# A persistent server serves one client after another, with different
# sizes, and stays up until told to stop.
name=persistent
if start_server "$name" -a 127.0.0.1 -P; then
	good=1
	for c in "1 100 3" "2 200000 2"; do
		set -- $c
		if ! timeout 60 "$ping" -c -a 127.0.0.1 -p "$port" -V -S "$2" \
			-C "$3" >"$tmp/$name.c$1.out" 2>"$tmp/$name.c$1.err"; then
			good=0
			bad "$name: client $1 failed"
			show "$tmp/$name.c$1.out" "$tmp/$name.c$1.err"
		else
			expect_line "$name" "$tmp/$name.c$1.out" \
				"^client: $3 pings, .* data verified$" \
				"client $1 verified $3 pings of $2 bytes"
		fi
	done
	if kill -0 "$spid" 2>/dev/null; then
		ok "$name: server still running after two clients"
	else
		good=0
		bad "$name: server exited after its clients"
	fi
	kill -TERM "$spid" 2>/dev/null
	wait "$spid"
	src=$?
	wait "$catpid"
	if [ "$src" -eq 0 ]; then
		ok "$name: server exits 0 on SIGTERM"
	else
		bad "$name: server exit $src on SIGTERM"
		show "$tmp/$name.serr"
	fi
	n=$(grep -Ec '^server: 127\.0\.0\.1 port [0-9]+: [0-9]+ pings' "$tmp/$name.sout")
	if [ "$n" = 2 ]; then
		ok "$name: server served 2 connections"
	else
		bad "$name: server reports $n connections, want 2"
		show "$tmp/$name.sout" "$tmp/$name.serr"
	fi
fi

# A client that connects while a persistent server is busy waits for its
# turn: the first client pings until SIGINT, the second then gets served.
name=queue
if keep_fd=1 start_server "$name" -a 127.0.0.1 -P; then
	mkfifo "$tmp/$name.afifo"
	timeout 60 "$ping" -c -a 127.0.0.1 -p "$port" -d -V \
		>"$tmp/$name.afifo" 2>"$tmp/$name.aerr" &
	apid=$!
	pids+=("$apid")
	exec {fd}<"$tmp/$name.afifo"
	while IFS= read -r -t 30 line <&"$fd"; do
		case $line in *"ping 2: verified"*) break ;; esac
	done
	timeout 60 "$ping" -c -a 127.0.0.1 -p "$port" -V -C 3 \
		>"$tmp/$name.bout" 2>"$tmp/$name.berr" &
	bpid=$!
	pids+=("$bpid")
	# The server tells when the second client's request waits.
	while IFS= read -r -t 30 line <&"$sfd"; do
		printf '%s\n' "$line" >>"$tmp/$name.sout"
		case $line in *" waits for its turn") break ;; esac
	done
	drain_server "$name"
	kill -INT "$apid"
	cat <&"$fd" >/dev/null
	exec {fd}<&-
	wait "$apid"
	arc=$?
	wait "$bpid"
	brc=$?
	kill -TERM "$spid"
	wait "$spid"
	src=$?
	wait "$catpid"
	if [ $arc -eq 0 ] && [ $brc -eq 0 ] && [ $src -eq 0 ]; then
		ok "$name: both clients and the server exit 0"
		expect_line "$name" "$tmp/$name.sout" \
			'^server: 127\.0\.0\.1 port [0-9]+ waits for its turn$' \
			"the second request waited for its turn"
		expect_line "$name" "$tmp/$name.bout" \
			'^client: 3 pings, .* data verified$' \
			"the waiting client verified its 3 pings"
	else
		bad "$name: first client exit $arc, second $brc, server $src"
		show "$tmp/$name.aerr" "$tmp/$name.bout" "$tmp/$name.berr" \
			"$tmp/$name.serr"
	fi
fi

# ---------------------------------------------------------------- IPv6
if grep -qE '^0{31}1 .* lo$' /proc/net/if_inet6 2>/dev/null; then
	name=ipv6
	if start_server "$name" -6 -a ::1; then
		timeout 60 "$ping" -6 -c -a ::1 -p "$port" -V -C 10 -S 4096 \
			>"$tmp/$name.cout" 2>"$tmp/$name.cerr"
		crc=$?
		wait "$spid"
		src=$?
		wait "$catpid"
		if [ $crc -eq 0 ] && [ $src -eq 0 ]; then
			ok "$name: client and server exit 0 over ::1"
			expect_line "$name" "$tmp/$name.sout" \
				'^server: ::1 port [0-9]+: 10 pings' \
				"server saw the client at ::1"
			expect_line "$name" "$tmp/$name.cout" \
				'^client: 10 pings, .* data verified$' \
				"client verified 10 pings"
		else
			bad "$name: client exit $crc, server exit $src"
			show "$tmp/$name.cout" "$tmp/$name.cerr" \
				"$tmp/$name.serr"
		fi
	fi
else
	echo "skip ipv6: the loopback interface has no ::1"
fi

# ---------------------------------------------------------------- failures
# Nothing listens on the port of a server that has exited.
name=refused
closed=$port
timeout 30 "$ping" -c -a 127.0.0.1 -p "$closed" -C 1 \
	>"$tmp/$name.cout" 2>"$tmp/$name.cerr"
rc=$?
if [ $rc -ne 0 ] && [ $rc -ne 124 ] && [ -s "$tmp/$name.cerr" ]; then
	ok "$name: exit $rc: $(head -1 "$tmp/$name.cerr")"
else
	bad "$name: exit $rc with no listener"
	show "$tmp/$name.cout" "$tmp/$name.cerr"
fi

# An endless client (-C 0, rping's default) stops cleanly on SIGINT: it
# finishes the ping under way, disconnects and reports what it verified.
name=interrupt
if start_server "$name" -a 127.0.0.1; then
	mkfifo "$tmp/$name.cfifo"
	timeout 60 "$ping" -c -a 127.0.0.1 -p "$port" -d -V -S 4096 \
		>"$tmp/$name.cfifo" 2>"$tmp/$name.cerr" &
	cpid=$!
	pids+=("$cpid")
	exec {fd}<"$tmp/$name.cfifo"
	: >"$tmp/$name.cout"
	while IFS= read -r -t 30 line <&"$fd"; do
		printf '%s\n' "$line" >>"$tmp/$name.cout"
		case $line in *"ping 2: verified"*) break ;; esac
	done
	kill -INT "$cpid"
	cat <&"$fd" >>"$tmp/$name.cout"
	exec {fd}<&-
	wait "$cpid"
	crc=$?
	wait "$spid"
	src=$?
	wait "$catpid"
	n=$(sed -n 's/^client: \([0-9]*\) pings, .* data verified$/\1/p' \
		"$tmp/$name.cout")
	if [ $crc -eq 0 ] && [ $src -eq 0 ] && [ "${n:-0}" -ge 3 ]; then
		ok "$name: client stopped on SIGINT after $n verified pings, both exit 0"
	else
		bad "$name: client exit $crc, server exit $src, ${n:-no} pings reported"
		show "$tmp/$name.cerr" "$tmp/$name.sout" "$tmp/$name.serr"
		tail -5 "$tmp/$name.cout"
	fi
fi

# A raw peer (bash's /dev/tcp) speaks MPA revision 1 without CRC or
# markers and sends one Send that is not what rping sends, or vanishes
# in the middle of a ping; the server must end with a clear message and
# exit status 1.
hex2bin() {
	local h=$1 i out=""
	for ((i = 0; i < ${#h}; i += 2)); do
		out+="\\x${h:i:2}"
	done
	printf "$out"
}
# raw_send <port> <payload hex> <wait|close>: the MPA startup, then one
# FPDU carrying an untagged Send (RFC 5041 §5.2: QN 0, MSN 1, MO 0) with
# the payload; then either wait for the server to close or close first.
raw_send() {
	local port=$1 payload=$2 how=$3 sock reply ulen fpdu pad
	exec {sock}<>"/dev/tcp/127.0.0.1/$port" || return 1
	# RFC 5044 §7.1: key, flags (no M, no C), revision 1, no private data.
	printf 'MPA ID Req Frame\x00\x01\x00\x00' >&"$sock"
	reply=$(timeout 10 head -c 20 <&"$sock" | od -An -tx1 | tr -d ' \n')
	if [ "$reply" != "4d504120494420526570204672616d6500010000" ]; then
		echo "  unexpected MPA Reply: $reply"
		exec {sock}>&-
		return 1
	fi
	# ULPDU_Length; DDP control 0x41 (L, DV 1); RDMAP control 0x43
	# (RV 1, Send); reserved; QN; MSN; MO; the payload; pad; the CRC
	# field (not checked: CRC is off).
	ulen=$((18 + ${#payload} / 2))
	fpdu=$(printf '%04x4143%08x%08x%08x%08x' $ulen 0 0 1 0)$payload
	pad=$(((4 - (2 + ulen) % 4) % 4))
	for ((; pad > 0; pad--)); do
		fpdu+=00
	done
	fpdu+=00000000
	hex2bin "$fpdu" >&"$sock"
	[ "$how" = wait ] && timeout 10 cat <&"$sock" >/dev/null
	exec {sock}>&-
	return 0
}
while read -r name how payload want; do
	start_server "$name" -a 127.0.0.1 --crc=off || continue
	if ! raw_send "$port" "$payload" "$how"; then
		bad "$name: the MPA startup with the server failed"
	fi
	wait "$spid"
	src=$?
	wait "$catpid"
	if [ $src -eq 1 ]; then
		ok "$name: server exit 1"
		expect_line "$name" "$tmp/$name.serr" "$want" "server says: $want"
	else
		bad "$name: server exit $src"
		show "$tmp/$name.sout" "$tmp/$name.serr"
	fi
done <<'CASES'
raw-short  wait  0000000000000001                    received a message of 8 octets, expected 16
raw-long   wait  0000000000000001000000010000004041  Receive failed: .*|Terminate
raw-gone   close 00000000000000010000010000000040    RDMA Read failed|ended while
CASES

# ---------------------------------------------------------------- SCTP
# DDP over SCTP (RFC 5043) on the user-space stack, over UDP (RFC 6951)
# on a free UDP port that the server receives on and the client sends
# to; -p is then the SCTP port.  The same rping sequence, with no MPA in
# between: both sides say so when connected (-d).
udp=$(free_udp_port) || fail "no free UDP port"
sctp="--llp sctp-udp --udp-port $udp"

# over_sctp <name> <llp>: both sides connected over SCTP by that LLP.
over_sctp() {
	expect_line "$1" "$tmp/$1.cout" \
		"^client: connected with 127\\.0\\.0\\.1 port [0-9]+ over SCTP \\($2\\): " \
		"the client connected over SCTP ($2)"
	expect_line "$1" "$tmp/$1.sout" \
		"^server: connected with 127\\.0\\.0\\.1 port [0-9]+ over SCTP \\($2\\): " \
		"the server connected over SCTP ($2)"
}

name=sctp-data-26
if pingpong "$name" "-v $sctp" "-v -V -C 4 -S 26 $sctp"; then
	summary "$name" 4 26
	check_data "$name" 26
fi
# 65537 and 1 MiB are many DATA chunks per DDP message (MULPDU about
# 1400); 1 MiB also grows the server's buffer.
for case in "4096 20" "65537 8" "1048576 4"; do
	set -- $case
	name=sctp-size-$1
	if pingpong "$name" "-d $sctp" "-d -V -C $2 -S $1 $sctp"; then
		summary "$name" "$2" "$1"
		over_sctp "$name" sctp-udp
	fi
done

# The session's opening (RFC 6581 §7): an enhanced Initiate carries the
# client's IRD and ORD; --mpa-rev=1 sends RFC 5043's plain one.  A server
# held to revision 1 ends an enhanced Initiate's session, and the client
# comes back with a plain one.
while read -r name sopts copts want; do
	[ "$sopts" = - ] && sopts=
	[ "$copts" = - ] && copts=
	if pingpong "$name" "-d $sctp $sopts" "-d -V -C 3 -S 1000 $sctp ${copts//,/ }"; then
		summary "$name" 3 1000
		expect_line "$name" "$tmp/$name.sout" \
			"^server: connection request from .* over SCTP: $want\$" \
			"the server took: $want"
	fi
done <<'EOF3'
sctp-enhanced  -            -I,4,-O,2    enhanced Initiate, IRD 4, ORD 2
sctp-rev1      --mpa-rev=1  --mpa-rev=1  plain Initiate, IRD 0, ORD 0
sctp-rev1-srv  --mpa-rev=1  -I,4,-O,2    plain Initiate, IRD 0, ORD 0
sctp-rev1-cli  -            --mpa-rev=1  plain Initiate, IRD 0, ORD 0
EOF3

# A client to an SCTP port that nobody listens on, of a stack that
# answers on that UDP port (a persistent server's, listening on another
# SCTP port): the stack answers the INIT with an ABORT (RFC 4960 §8.4),
# which refuses the connection at once, well before the 10 s that an
# INIT nobody answers takes.  The same stack then serves its own port,
# and a second server cannot have the UDP port: its message names it.
name=sctp-refused
if start_server "$name" -a 127.0.0.1 -P $sctp; then
	other=$((port == 65535 ? port - 1 : port + 1))
	t0=$EPOCHREALTIME
	timeout 30 "$ping" -c -a 127.0.0.1 -p "$other" -C 1 $sctp \
		>"$tmp/$name.cout" 2>"$tmp/$name.cerr"
	rc=$?
	t1=$EPOCHREALTIME
	ms=$(( (${t1/./} - ${t0/./}) / 1000 ))
	if [ $rc -eq 1 ] && [ "$ms" -le 3000 ] &&
		grep -q "^client: connection with 127\.0\.0\.1 port $other failed: Connection refused\$" \
			"$tmp/$name.cerr"; then
		ok "$name: exit 1 in $ms ms: $(cat "$tmp/$name.cerr")"
	else
		bad "$name: exit $rc in $ms ms (want 1, within 3000 ms, refused)"
		show "$tmp/$name.cout" "$tmp/$name.cerr"
	fi
	if timeout 30 "$ping" -c -a 127.0.0.1 -p "$port" -C 2 -V $sctp \
		>"$tmp/$name.c2out" 2>"$tmp/$name.c2err"; then
		ok "$name: the server's own port pings"
	else
		bad "$name: a client to the server's own port failed"
		show "$tmp/$name.c2out" "$tmp/$name.c2err"
	fi
	timeout 30 "$ping" -s -p 0 -a 127.0.0.1 $sctp \
		>"$tmp/$name.s2out" 2>"$tmp/$name.s2err"
	rc=$?
	if [ $rc -eq 1 ] && grep -q "over SCTP over UDP port $udp: Address already in use" \
		"$tmp/$name.s2err"; then
		ok "$name: a second server on UDP port $udp: exit 1: $(cat "$tmp/$name.s2err")"
	else
		bad "$name: a second server on the UDP port: exit $rc"
		show "$tmp/$name.s2out" "$tmp/$name.s2err"
	fi
	kill -TERM "$spid"
	wait "$spid"
	src=$?
	wait "$catpid"
	if [ $src -eq 0 ]; then
		ok "$name: the server exits 0 on SIGTERM"
	else
		bad "$name: server exit $src on SIGTERM"
		show "$tmp/$name.serr"
	fi
fi

# --llp sctp-kernel is the kernel's SCTP and nothing else: where the
# kernel has none, the server and the client fail, saying why, and never
# fall back to the user-space stack; where it has one, they ping over
# it.  --llp sctp takes whichever of the two this host has.
name=sctp-kernel
mkfifo "$tmp/$name.fifo"
timeout 60 "$ping" -s -p 0 -a 127.0.0.1 -d --llp sctp-kernel \
	>"$tmp/$name.fifo" 2>"$tmp/$name.serr" &
spid=$!
pids+=("$spid")
exec {fd}<"$tmp/$name.fifo"
if IFS= read -r -t 30 line <&"$fd"; then
	auto=sctp-kernel
	sfd=$fd
	drain_server "$name"
	port=${line##* port }
	timeout 60 "$ping" -c -a 127.0.0.1 -p "$port" -d -V -C 3 \
		--llp sctp-kernel >"$tmp/$name.cout" 2>"$tmp/$name.cerr"
	crc=$?
	wait "$spid"
	src=$?
	wait "$catpid"
	if [ $crc -eq 0 ] && [ $src -eq 0 ]; then
		ok "$name: this kernel has SCTP: client and server exit 0"
		over_sctp "$name" sctp-kernel
	else
		bad "$name: client exit $crc, server exit $src"
		show "$tmp/$name.cout" "$tmp/$name.cerr" "$tmp/$name.serr"
	fi
else
	auto=sctp-udp
	exec {fd}<&-
	wait "$spid"
	src=$?
	timeout 30 "$ping" -c -a 127.0.0.1 -p 7174 -C 1 --llp sctp-kernel \
		>"$tmp/$name.cout" 2>"$tmp/$name.cerr"
	crc=$?
	why='this kernel has no SCTP'
	if [ $src -eq 1 ] && grep -q "^server: .*$why" "$tmp/$name.serr"; then
		ok "$name: the server exits 1: $(cat "$tmp/$name.serr")"
	else
		bad "$name: the server: exit $src, no '$why'"
		show "$tmp/$name.serr"
	fi
	if [ $crc -eq 1 ] && [ ! -s "$tmp/$name.cout" ] &&
		grep -q "^client: .*$why" "$tmp/$name.cerr"; then
		ok "$name: the client exits 1: $(cat "$tmp/$name.cerr")"
	else
		bad "$name: the client: exit $crc, no '$why'"
		show "$tmp/$name.cout" "$tmp/$name.cerr"
	fi
fi
name=sctp-auto
if pingpong "$name" "-d --llp sctp --udp-port $udp" \
	"-d -V -C 3 --llp sctp --udp-port $udp"; then
	summary "$name" 3 64
	over_sctp "$name" "$auto"
fi

# Usage errors: exit status 2 and a message.
while read -r name args; do
	"$ping" $args >"$tmp/$name.out" 2>"$tmp/$name.err"
	rc=$?
	if [ $rc -eq 2 ] && [ -s "$tmp/$name.err" ]; then
		ok "$name: exit 2: $(head -1 "$tmp/$name.err")"
	else
		bad "$name: exit $rc"
		show "$tmp/$name.err"
	fi
done <<'EOF'
usage-size      -c -a 127.0.0.1 -S 25
usage-noaddr    -c
usage-norole    -a 127.0.0.1
usage-crc       -s --crc=maybe
usage-port      -s -p 70000
usage-delay     -c -a 127.0.0.1 --start-delay=10001
usage-delay-srv -s --start-delay=100
usage-llp       -c -a 127.0.0.1 --llp bogus
usage-udp-port  -s --llp sctp-udp --udp-port 0
EOF

check_summary
