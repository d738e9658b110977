#!/usr/bin/env bash
# The store example (examples/store/) end to end: one store-server on
# 127.0.0.1 serving RPC-over-RDMA, TCP and UDP; store-client over rdma
# and over tcp.
#
# - put then get of 0 B, 1 B, 1023-1025 B (around STORE_DDP_MIN),
#   4095-4097 B (around the inline threshold), 1 MiB and 16 MiB, each
#   compared with cmp;
# - over rdma, what --stats says moved: a get of STORE_DDP_MIN octets or
#   more by RDMA Write (the client offers a Write chunk for it), a put
#   whose call does not fit the 4096-octet inline threshold by RDMA Read
#   (a Read chunk: RFC 8166 §3.4.3 leaves reducing to the sender, and
#   libuiwarp-rpcrdma sends a call inline whenever it fits), everything
#   else in inline Sends only (no chunk of any kind); over tcp no RDMA
#   counts at all;
# - --no-private-data (RFC 8797 §5.1): 1024-octet inline messages, so a
#   put of 1024 octets by RDMA Read, a get of 1023 in a Reply chunk;
# - ls of 300 objects (two LIST replies, the first one larger than the
#   inline threshold: a Reply chunk over rdma) alike over both, stat, rm;
# - the server's counts on SIGUSR1 (its RDMA Reads and Writes);
# - a client to a port where no server listens fails with a message that
#   says so and a non-zero status, over both;
# - SIGTERM ends a client blocked on a mute peer (a TCP listener that
#   accepts and reads, and never answers) at once, over both; over tcp a
#   call timeout (-T) ends it too, with RPC's "Timed out";
# - SIGTERM ends the server, which prints its counts.
#
# usage: test_store.sh <build-dir> <source-dir>
set -uo pipefail

build=${1:?usage: test_store.sh <build-dir> <source-dir>}
server=$build/examples/store/store-server
client=$build/examples/store/store-client
for p in "$server" "$client"; do
	[ -x "$p" ] || { echo "FAIL: $p is not built"; exit 1; }
done
command -v python3 >/dev/null || { echo "FAIL: python3 is missing"; exit 1; }

# shellcheck source=../check_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../check_lib.sh"
check_workdir
# Both ends are uiwarp: no start delay after the MPA Reply (it is for
# Linux siw as a responder, README "Interoperability").
export UIWARP_START_DELAY_MS=0

# How long a client told to stop may take: the signal's handler exits
# at once; this is process start-up and scheduling on a busy machine.
LIMIT_MS=2000

# ---- the server ------------------------------------------------------
bg_start server stdout "$server" -a 127.0.0.1 -p 0 -t 0 -u 0
spid=$bgpid
sfd=$bgfd
if ! wait_line "$sfd" "store-server: serving *" "$tmp/server.out"; then
	show "$tmp/server.out" "$tmp/server.err"
	fail "the server did not start"
fi
rport=$(sed -n 's/.* rdma port \([0-9]*\).*/\1/p' <<<"$line")
tport=$(sed -n 's/.* tcp port \([0-9]*\).*/\1/p' <<<"$line")
[ -n "$rport" ] && [ -n "$tport" ] || fail "no ports in '$line'"
ok "the server listens: rdma port $rport, tcp port $tport"
declare -A port=([rdma]=$rport [tcp]=$tport)

# sc <transport> <args...>: the client on the server, output in
# $tmp/out, status in $rc.
sc() {
	local t=$1
	shift
	"$client" -x "$t" -p "${port[$t]}" "$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
}

# val <key>: the count <key> of the client's "rdma:" line in $tmp/out.
val() {
	sed -n "s/^store-client: rdma:.* $1=\([0-9]*\).*/\1/p" "$tmp/out"
}

# chunks_used: "read=R write=W reply=Rp long=L" from $tmp/out.
chunks_used() {
	echo "read=$(val read_chunks) write=$(val write_chunks)" \
		"reply=$(val reply_chunks)" \
		"long=$(($(val long_calls) + $(val long_replies)))"
}

# ---- put and get, each size, both transports ----------------------------
# STORE_DDP_MIN (examples/store/store_ulb.h), and the size from which a
# PUT's call (RPC header, name, data) cannot be sent inline in 4096
# octets; the sizes tested stay clear of the latter's exact edge.
ddp_min=1024
put_chunk_min=4095
sizes="0 1 1023 1024 1025 4095 4096 4097 1048576 16777216"
for s in $sizes; do
	head -c "$s" /dev/urandom >"$tmp/f$s"
done
for t in rdma tcp; do
	for s in $sizes; do
		name="$t-$s"
		sc "$t" --stats put "$tmp/f$s" "$name"
		if [ $rc -ne 0 ]; then
			bad "$t: put of $s octets: status $rc"
			show "$tmp/err"
			continue
		fi
		cp "$tmp/out" "$tmp/put.out"
		sc "$t" --stats get "$name" "$tmp/g"
		if [ $rc -ne 0 ]; then
			bad "$t: get of $s octets: status $rc"
			show "$tmp/err"
			continue
		fi
		if cmp -s "$tmp/f$s" "$tmp/g"; then
			ok "$t: $s octets put and got back the same"
		else
			bad "$t: $s octets put, and get gave back other octets"
		fi
		[ "$t" = rdma ] || {
			if grep 'rdma:' "$tmp/put.out" "$tmp/out" >/dev/null; then
				bad "tcp: --stats shows RDMA counts"
			fi
			continue
		}
		# what moved, over rdma
		got_get=$(chunks_used)
		sends_get=$(val inline_sends)
		wbytes=$(val write_bytes)
		mv "$tmp/put.out" "$tmp/out"
		got_put=$(chunks_used)
		sends_put=$(val inline_sends)
		rbytes=$(val read_bytes)
		none="read=0 write=0 reply=0 long=0"
		want_put=$none
		want_get=$none
		[ "$s" -lt $put_chunk_min ] ||
			want_put="read=1 write=0 reply=0 long=0"
		[ "$s" -lt $ddp_min ] ||
			want_get="read=0 write=1 reply=0 long=0"
		if [ "$got_put" = "$want_put" ] && [ "${sends_put:-0}" -ge 1 ] &&
			{ [ "$s" -lt $put_chunk_min ] || [ "$rbytes" -ge "$s" ]; }; then
			ok "rdma: put of $s: $want_put, ${rbytes} octets read, $sends_put inline Send(s)"
		else
			bad "rdma: put of $s: $got_put, read_bytes=$rbytes, inline_sends=$sends_put; expected $want_put"
			show "$tmp/out"
		fi
		if [ "$got_get" = "$want_get" ] && [ "${sends_get:-0}" -ge 1 ] &&
			{ [ "$s" -lt $ddp_min ] || [ "$wbytes" -ge "$s" ]; }; then
			ok "rdma: get of $s: $want_get, ${wbytes} octets written, $sends_get inline Send(s)"
		else
			bad "rdma: get of $s: $got_get, write_bytes=$wbytes, inline_sends=$sends_get; expected $want_get"
		fi
	done
done

# ---- MPA revision 1 ----------------------------------------------------------
# Its MPA frames carry no IRD/ORD (RFC 6581's word is revision 2's), so
# the server's CM reports 0 for both: the Responder must still pull a
# Read chunk (it takes its own ORD), and the data still comes back by
# RDMA Write.
head -c 300000 /dev/urandom >"$tmp/rev1"
UIWARP_MPA_REV=1 sc rdma --stats put "$tmp/rev1" rev1
if [ $rc -eq 0 ] && [ "$(val read_chunks)" = 1 ]; then
	ok "MPA revision 1: a put of 300000 octets by one Read chunk"
else
	bad "MPA revision 1: put: status $rc, $(chunks_used)"
	show "$tmp/err"
fi
UIWARP_MPA_REV=1 sc rdma --stats get rev1 "$tmp/g"
if [ $rc -eq 0 ] && [ "$(val write_chunks)" = 1 ] &&
	cmp -s "$tmp/rev1" "$tmp/g"; then
	ok "MPA revision 1: got back the same by one Write chunk"
else
	bad "MPA revision 1: get: status $rc, $(chunks_used)"
	show "$tmp/err"
fi
sc rdma rm rev1

# ---- ls, stat, rm ----------------------------------------------------------
# 300 more objects: LIST answers 256 at most, and a full answer is
# larger than the 4096-octet inline threshold.
for i in $(seq 100 399); do
	printf '%s' "$i" | "$client" -x tcp -p "$tport" put - "many-$i" ||
		{ bad "put of many-$i failed"; break; }
done
nobj=$((2 * $(wc -w <<<"$sizes") + 300))
for t in rdma tcp; do
	sc "$t" --stats ls
	n=$(grep -c ' UTC  ' "$tmp/out")
	if [ $rc -eq 0 ] && [ "$n" -eq $nobj ]; then
		ok "$t: ls lists the $nobj objects"
	else
		bad "$t: ls: status $rc, $n objects listed, expected $nobj"
		show "$tmp/err"
	fi
	awk '/ UTC  / { print $NF, $1 }' "$tmp/out" >"$tmp/ls.$t"
	expect_line "$t" "$tmp/out" '^ +16777216  .* UTC  rdma-16777216$' \
		"ls gives the size of a 16 MiB object"
	[ "$t" = rdma ] || continue
	reply=$(val reply_chunks)
	if [ "${reply:-0}" -ge 1 ]; then
		ok "rdma: ls: the long LIST reply came in a Reply chunk ($(val reply_bytes) octets)"
	else
		bad "rdma: ls: no Reply chunk used (reply_chunks=$reply)"
		show "$tmp/out"
	fi
done
if cmp -s "$tmp/ls.rdma" "$tmp/ls.tcp"; then
	ok "ls over rdma and over tcp list the same names and sizes"
else
	bad "ls over rdma and over tcp differ"
fi
if LC_ALL=C sort -c "$tmp/ls.tcp" 2>/dev/null; then
	ok "ls lists in name order"
else
	bad "ls is not in name order"
fi

# expect_status <what> <status> [<stderr regex>]: the last sc's status
# and a line of its stderr.
expect_status() {
	if [ $rc -eq "$2" ] &&
		{ [ -z "${3:-}" ] || grep -E "$3" "$tmp/err" >/dev/null; }; then
		ok "$1: status $2"
	else
		bad "$1: status $rc, expected $2 and /$3/ on stderr"
		show "$tmp/out" "$tmp/err"
	fi
}

for t in rdma tcp; do
	sc "$t" stat "$t-1048576"
	expect_status "$t: stat" 0
	expect_line "$t" "$tmp/out" "^ +1048576  .* UTC  $t-1048576\$" \
		"stat gives the size of a 1 MiB object"
	sc "$t" rm "$t-1"
	expect_status "$t: rm" 0
	sc "$t" stat "$t-1"
	expect_status "$t: stat after rm" 1 "^store-client: $t-1: no such object\$"
	sc "$t" get "$t-1" "$tmp/nothing"
	if [ $rc -eq 1 ] && [ ! -e "$tmp/nothing" ]; then
		ok "$t: get of a removed object fails and writes no file"
	else
		bad "$t: get of a removed object: status $rc"
	fi
done

# ---- RFC 8797 private data off at the client ----------------------------------
# Both ends then keep to 1024-octet inline messages (§5.1): a put of
# 1024 octets, inline above, moves its data by RDMA Read; the reply to
# a get of 1023 octets (no Write chunk below STORE_DDP_MIN) comes as a
# Long reply in the Reply chunk.
sc rdma --no-private-data --stats put "$tmp/f1024" np-1024
if [ $rc -eq 0 ] && [ "$(chunks_used)" = "read=1 write=0 reply=0 long=0" ]; then
	ok "rdma --no-private-data: put of 1024 octets by RDMA Read"
else
	bad "rdma --no-private-data: put of 1024 octets: status $rc, $(chunks_used)"
	show "$tmp/out" "$tmp/err"
fi
sc rdma --no-private-data --stats get rdma-1023 "$tmp/g"
if [ $rc -eq 0 ] && [ "$(chunks_used)" = "read=0 write=0 reply=1 long=1" ] &&
	cmp -s "$tmp/f1023" "$tmp/g"; then
	ok "rdma --no-private-data: get of 1023 octets in a Reply chunk, the same octets"
else
	bad "rdma --no-private-data: get of 1023 octets: status $rc, $(chunks_used)"
	show "$tmp/out" "$tmp/err"
fi

# ---- the server's counts ---------------------------------------------------
kill -USR1 "$spid"
if wait_line "$sfd" "store-server: rdma: calls=*" "$tmp/server.out"; then
	r=$(sed -n 's/.* read_bytes=\([0-9]*\).*/\1/p' <<<"$line")
	w=$(sed -n 's/.* write_bytes=\([0-9]*\).*/\1/p' <<<"$line")
	if [ "${r:-0}" -ge $((16777216 + 1048576)) ] &&
		[ "${w:-0}" -ge $((16777216 + 1048576)) ]; then
		ok "SIGUSR1: the server counts $r octets RDMA Read, $w RDMA Written"
	else
		bad "SIGUSR1: the server's counts: $line"
	fi
else
	bad "SIGUSR1: no counts from the server"
	show "$tmp/server.out" "$tmp/server.err"
fi

# ---- no server ---------------------------------------------------------------
noport=$(free_tcp_port)
for t in rdma tcp; do
	t0=$EPOCHREALTIME
	"$client" -x "$t" -p "$noport" ls >"$tmp/out" 2>"$tmp/err"
	rc=$?
	ms=$(( (${EPOCHREALTIME/./} - ${t0/./}) / 1000 ))
	if [ $rc -ne 0 ] && grep "^store-client: cannot reach the store at 127.0.0.1 port $noport over $t: " "$tmp/err" >/dev/null; then
		ok "$t: no server: status $rc in $ms ms, '$(sed -n 1p "$tmp/err")'"
	else
		bad "$t: no server: status $rc"
		show "$tmp/out" "$tmp/err"
	fi
done

# ---- a mute peer ---------------------------------------------------------------
mute_peer_start mute
mfd=$mute_fd
mport=$mute_port

# mute_client <name> <signal or ""> <client args...>: starts the client
# on the mute peer, waits until the peer has its first octets, then
# sends the signal (if any) and times the end.  Sets $rc, $ms.
mute_client() {
	local name=$1 sig=$2 t0 cpid
	shift 2
	"$client" -p "$mport" "$@" >"$tmp/$name.out" 2>"$tmp/$name.err" &
	cpid=$!
	pids+=("$cpid")
	if ! wait_line "$mfd" "received *" "$tmp/mute.out"; then
		rc=-1 ms=-1
		return
	fi
	t0=$EPOCHREALTIME
	[ -z "$sig" ] || kill -"$sig" "$cpid"
	# the end has its own deadline: a client that hangs fails here
	timeout 30 tail -s 0.02 --pid="$cpid" -f /dev/null
	wait "$cpid"
	rc=$?
	ms=$(( (${EPOCHREALTIME/./} - ${t0/./}) / 1000 ))
}

for t in rdma tcp; do
	mute_client "mute-$t" TERM -x "$t" ls
	if [ $rc -eq 143 ] && [ $ms -le $LIMIT_MS ] &&
		grep -x "store-client: interrupted by SIGTERM" "$tmp/mute-$t.err" >/dev/null; then
		ok "$t: SIGTERM ends a client waiting on a mute peer in $ms ms, status 143"
	else
		bad "$t: SIGTERM to a client waiting on a mute peer: status $rc after $ms ms (at most $LIMIT_MS)"
		show "$tmp/mute-$t.out" "$tmp/mute-$t.err"
	fi
done
mute_client mute-timeout "" -x tcp -T 1 ls
if [ $rc -eq 1 ] && [ $ms -le $((1000 + LIMIT_MS)) ] &&
	grep "^store-client: ls: RPC: Timed out" "$tmp/mute-timeout.err" >/dev/null; then
	ok "tcp: -T 1 ends a call to a mute peer after $ms ms: $(sed -n 1p "$tmp/mute-timeout.err")"
else
	bad "tcp: -T 1 on a mute peer: status $rc after $ms ms"
	show "$tmp/mute-timeout.out" "$tmp/mute-timeout.err"
fi

# ---- the server's end ------------------------------------------------------------
t0=$EPOCHREALTIME
kill -TERM "$spid"
timeout 30 tail -s 0.02 --pid="$spid" -f /dev/null
wait "$spid"
rc=$?
ms=$(( (${EPOCHREALTIME/./} - ${t0/./}) / 1000 ))
cat <&"$sfd" >>"$tmp/server.out"
if [ $rc -eq 0 ] && [ $ms -le $LIMIT_MS ] &&
	grep "^store-server: rdma: calls=" "$tmp/server.out" >/dev/null &&
	grep -x "store-server: ended by SIGTERM" "$tmp/server.err" >/dev/null; then
	ok "SIGTERM ends the server in $ms ms, status 0, with its counts"
else
	bad "SIGTERM to the server: status $rc after $ms ms"
	show "$tmp/server.out" "$tmp/server.err"
fi
check_summary
