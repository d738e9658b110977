#!/usr/bin/env bash
# The loopback demonstration (`make demo`): a uiwarp-ping server and
# client on 127.0.0.1 run rping's protocol over uiwarp, first step by
# step, then with MPA markers and CRC, then for a throughput figure,
# then over SCTP; last, the rpcgen example (examples/store/) puts and
# gets a few MiB over RPC-over-RDMA and over TCP.
#
# usage: demo.sh <build-dir>
set -uo pipefail

build=${1:-build}
ping=$build/uiwarp-ping
if [ ! -x "$ping" ]; then
	echo "demo: $ping is not built (run make demo from the top directory)" >&2
	exit 1
fi

tmp=$(mktemp -d)
spid=
cleanup() {
	if [ -n "$spid" ] && kill -0 "$spid" 2>/dev/null; then
		kill "$spid" 2>/dev/null
		wait "$spid" 2>/dev/null
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# shellcheck source=demo_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/demo_lib.sh"
fail() {
	printf '\ndemo: FAILED: %s\n' "$*" >&2
	exit 1
}

# run <name> "<server options>" "<client options>": starts a server on a
# free port of 127.0.0.1 (-p 0; its first line names the port), runs the
# client against it, and fails the demo unless both exit 0.  The outputs
# are left in $tmp/<name>.{client,server}.
runs=0
run() {
	local name=$1 sopts=$2 copts=$3 line fd port crc src
	runs=$((runs + 1))
	mkfifo "$tmp/$name.fifo"
	timeout 300 "$ping" -s -a 127.0.0.1 -p 0 $sopts \
		>"$tmp/$name.fifo" 2>"$tmp/$name.server.err" &
	spid=$!
	exec {fd}<"$tmp/$name.fifo"
	IFS= read -r -t 30 line <&"$fd" ||
		{ cat "$tmp/$name.server.err"; fail "the server did not start"; }
	port=${line##* port }
	cat <&"$fd" >"$tmp/$name.server" &
	exec {fd}<&-
	echo "\$ uiwarp-ping -s -a 127.0.0.1 -p $port${sopts:+ $sopts}"
	echo "\$ uiwarp-ping -c -a 127.0.0.1 -p $port${copts:+ $copts}"
	timeout 300 "$ping" -c -a 127.0.0.1 -p "$port" $copts \
		>"$tmp/$name.client" 2>"$tmp/$name.client.err"
	crc=$?
	wait "$spid"
	src=$?
	spid=
	wait
	if [ $crc -ne 0 ] || [ $src -ne 0 ]; then
		cat "$tmp/$name.client" "$tmp/$name.client.err" \
			"$tmp/$name.server" "$tmp/$name.server.err" >&2
		fail "$name: client exit status $crc, server exit status $src"
	fi
}

cat <<EOF
${bold}uiwarp demonstration${plain}: a software iWARP RNIC in user space.

uiwarp-ping speaks librdmacm's rping protocol (RDMAP over DDP over MPA
over TCP, here on 127.0.0.1).  For every ping:
  1. the client Sends the address, STag and length of its source buffer;
  2. the server RDMA Reads that buffer into its own, then Sends "go ahead";
  3. the client Sends the address, STag and length of its sink buffer;
  4. the server RDMA Writes the data into the sink, then Sends "go ahead";
  5. the client compares sink and source (-V).
EOF

title "1. Three pings, step by step (-d trace, -v data, -V verify)"
run steps "-d -v" "-d -v -V -C 3"
echo
echo "  The client's side:"
indent "$tmp/steps.client"
echo "  The server's side:"
indent "$tmp/steps.server"
grep -q '^client: 3 pings, .* data verified$' "$tmp/steps.client" ||
	fail "the client did not verify 3 pings"
n=$(grep -c 'RDMA Read of 64 bytes complete' "$tmp/steps.server")
[ "$n" = 3 ] || fail "the server completed $n RDMA Reads, expected 3"
n=$(grep -c 'RDMA Write of 64 bytes complete' "$tmp/steps.server")
[ "$n" = 3 ] || fail "the server completed $n RDMA Writes, expected 3"

title "2. MPA markers and CRC on both directions, 65537-byte pings"
run markers "-d --markers=on --crc=on" \
	"-d --markers=on --crc=on -V -C 200 -S 65537"
echo
grep -h 'connected with\| pings, ' "$tmp/markers.client" "$tmp/markers.server" | indent
grep -q 'CRC on, markers sent on, received on' "$tmp/markers.client" ||
	fail "markers or CRC were not negotiated"
grep -q '^client: 200 pings, .* data verified$' "$tmp/markers.client" ||
	fail "the client did not verify 200 pings"

title "3. Throughput: 1 MiB pings, each moved by one RDMA Read and one RDMA Write"
run big "" "-V -C 1000 -S 1048576"
echo
indent "$tmp/big.client"
indent "$tmp/big.server"
grep -q '^client: 1000 pings, .* MB/s, data verified$' "$tmp/big.client" ||
	fail "the client did not verify 1000 pings"

title "4. DDP over SCTP (RFC 5043): the same pings on usrsctp, its packets in UDP"
# Both processes use UDP port 9899 (RFC 6951's; --udp-port for another).
run sctp "-d --llp=sctp-udp" "-d --llp=sctp-udp -V -C 200 -S 65537"
echo
grep -h 'over SCTP\| pings, ' "$tmp/sctp.client" "$tmp/sctp.server" | indent
grep -q 'connected with .* over SCTP (sctp-udp)' "$tmp/sctp.client" ||
	fail "the client did not connect over SCTP"
grep -q '^client: 200 pings, .* data verified$' "$tmp/sctp.client" ||
	fail "the client did not verify 200 pings over SCTP"

title "5. RPC over RDMA: an rpcgen program (examples/store) over RPC-over-RDMA and over TCP"
store=$build/examples/store
[ -x "$store/store-server" ] && [ -x "$store/store-client" ] ||
	fail "$store/store-server and store-client are not built (they need libuiwarp-rpcrdma)"
echo "store-server serves one rpcgen program over RPC-over-RDMA (RFC 8166), TCP"
echo "and UDP from one loop; store-client uses rpcgen's stubs over either, only"
echo "the creation of its CLIENT differing.  Its Upper-Layer Binding makes a"
echo "PUT's data DDP-eligible (the server pulls it by RDMA Read) and a GET's"
echo "(the server pushes it by RDMA Write); the rest travels in inline Sends."
# Both ends are uiwarp: no pause after the MPA Reply (it is for siw).
export UIWARP_START_DELAY_MS=0
mkfifo "$tmp/store.fifo"
timeout 300 "$store/store-server" -a 127.0.0.1 -p 0 -t 0 -u 0 \
	>"$tmp/store.fifo" 2>"$tmp/store.server.err" &
spid=$!
exec {sfd}<"$tmp/store.fifo"
IFS= read -r -t 30 line <&"$sfd" ||
	{ cat "$tmp/store.server.err"; fail "the store server did not start"; }
cat <&"$sfd" >"$tmp/store.server" &
exec {sfd}<&-
rport=$(sed -n 's/.* rdma port \([0-9]*\).*/\1/p' <<<"$line")
tport=$(sed -n 's/.* tcp port \([0-9]*\).*/\1/p' <<<"$line")
echo
echo "\$ store-server -a 127.0.0.1 -p 0 -t 0 -u 0"
indent <<<"$line"
head -c $((4 * 1024 * 1024 + 12345)) /dev/urandom >"$tmp/object"
size=$(stat -c %s "$tmp/object")
for t in rdma tcp; do
	port=$rport
	[ $t = tcp ] && port=$tport
	for op in put get; do
		if [ $op = put ]; then
			args=("$tmp/object" "demo-$t")
			shown="put object demo-$t"
		else
			args=("demo-$t" "$tmp/copy-$t")
			shown="get demo-$t copy"
		fi
		echo "\$ store-client -x $t -p $port --stats $shown"
		timeout 300 "$store/store-client" -x $t -p "$port" --stats \
			$op "${args[@]}" >"$tmp/store.$op.$t" 2>&1 ||
			{ cat "$tmp/store.$op.$t"; fail "store-client $op over $t failed"; }
		# the time and, over rdma, what moved how, in words
		grep -v '^store-client: rdma: calls=' "$tmp/store.$op.$t" | indent
	done
	cmp "$tmp/object" "$tmp/copy-$t" ||
		fail "over $t the object came back different"
	echo "    $size octets put and got back over $t: the same (cmp)"
	if [ $t = rdma ]; then
		grep 'read_chunks=1 ' "$tmp/store.put.rdma" >/dev/null ||
			fail "the put over rdma did not move its data by RDMA Read"
		grep 'write_chunks=1 ' "$tmp/store.get.rdma" >/dev/null ||
			fail "the get over rdma did not move its data by RDMA Write"
	fi
done
kill -TERM "$spid"
wait "$spid" || fail "the store server did not end cleanly"
spid=
wait
echo "  The server's side, at its end:"
grep -v ': rdma: calls=' "$tmp/store.server" | indent

printf '\n%sdemo: every operation succeeded (Send, RDMA Read, RDMA Write, verification) in %d runs, and an rpcgen program over RPC-over-RDMA and TCP.%s\n' \
	"$bold" "$runs" "$plain"
