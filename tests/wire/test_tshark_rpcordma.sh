#!/usr/bin/env bash
# Wire test: RPC-over-RDMA version 1 transport headers (RFC 8166) made by
# src/rpcrdma/'s codec, in RDMAP Sends of a synthetic iWARP connection
# (tests/wire/rpcrdma_pcap.py: TCP, MPA revision 2 Request and Reply
# whose private data carries the RFC 6581 word and RFC 8797's message,
# FPDUs with CRC32c), decoded by tshark's rpcordma dissector.
#
# 1. Every header, field by field (xid, vers, credits, proc, Read list
#    positions and segments, Write chunks, Reply chunk, RDMA_ERROR
#    fields) as tshark reads them equals the line it was encoded from,
#    and rpcrdma_wire decodes it back to that line; no frame malformed
#    or with an expert error.  The RFC 8797 message is read back out of
#    tshark's MPA private data, past the RFC 6581 word.
# 2. tshark 4.0's limits with a Write chunk (docs/rpcrdma-wireshark.md):
#    an NFS READ reply whose data went by RDMA Write is flagged
#    malformed when the capture lacks the RDMA Write, or when the data
#    is not a multiple of 4 octets.  The test shows that those octets
#    are right: the codec and RFC 8166's arithmetic put the reply back
#    together (§3.4.4.1, §3.4.4.4, §3.4.6.2), and tshark decodes that
#    reply cleanly from a plain TCP capture.  Should a tshark decode them
#    cleanly one day, the test fails so that the note gets updated.
#
# usage: test_tshark_rpcordma.sh <build-dir> <source-dir>
# Needs tshark and python3 (scripts/install-deps.sh); missing tools fail.
set -uo pipefail

build=${1:?usage: test_tshark_rpcordma.sh <build-dir> <source-dir>}
here=$(cd "$(dirname "$0")" && pwd)
tool=$build/rpcrdma_wire

# shellcheck source=../check_lib.sh
. "$here/../check_lib.sh"

command -v tshark >/dev/null || fail "tshark is not installed (run scripts/install-deps.sh as root)"
command -v python3 >/dev/null || fail "python3 is not installed"
[ -x "$tool" ] || fail "$tool is missing: build the tree first"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Two passes (-2): the dissector puts Write chunk data back only then.
dec=(-2 -o tcp.try_heuristic_first:TRUE --enable-heuristic iwarp_mpa_tcp)
ts() { tshark "$@" 2>>"$work/tshark.err"; }
rpcrdma_wire=$tool
# shellcheck source=rpcordma_lib.sh
. "$here/rpcordma_lib.sh"

# enc LINE: the header as hex (word splitting by read: no brace
# expansion of the chunk lists)
enc() {
	local w
	read -ra w <<<"$1"
	"$tool" enc "${w[@]}" || fail "rpcrdma_wire cannot encode: $1"
}
redec() { "$tool" dec "$1" | sed 's/ hdr_len=[0-9]*$//'; }

# ---- the session ------------------------------------------------------------
script=$work/session.txt
sends=()
# send DIR LINE RPC: an RDMAP Send of the header LINE and the RPC part
send() {
	local hex
	hex=$(enc "$2") || exit 1
	[ "$(redec "$hex")" = "$2" ] ||
		fail "rpcrdma_wire: $2 encodes to $hex, which decodes to $(redec "$hex")"
	echo "$1 send $hex $3" >>"$script"
	sends+=("$2")
}
write() { echo "$1 write $2 $3 $4" >>"$script"; }

FH=00000008aabbccdd11223344                   # nfs_fh3, 8 octets
cm_a=$("$tool" cm 1 4096 8192) && cm_b=$("$tool" cm 0 262144 1024) ||
	fail "rpcrdma_wire cm failed"
{
	echo "req-pd 80100008$cm_a"       # RFC 6581 word: A, IRD 16, ORD 8
	echo "rep-pd 80080010$cm_b"
} >"$script"
# an NFSv3 NULL call and reply, no chunks
send 'A>B' "xid=0x00000101 vers=1 credit=32 proc=0 reads=- writes=- reply=-" call:100003:3:0:-
send 'B>A' "xid=0x00000101 vers=1 credit=16 proc=0 reads=- writes=- reply=-" reply:-
# NFSv3 READ with a Write chunk of two segments (RFC 8267 §4: READ data
# is DDP-eligible); the Responder writes 32 octets and returns the
# chunk with the lengths it used (§3.4.6), the reply reduced (§3.4.4.1:
# the count stays, the bytes go)
send 'A>B' "xid=0x00000102 vers=1 credit=32 proc=0 reads=- writes={0x77:16:0x10000,0x78:8192:0x20000} reply=-" \
	"call:100003:3:6:${FH}00000000000000000000002000"
write 'B>A' 0x77 0x10000 "$(hexrep 5a 16)"
write 'B>A' 0x78 0x20000 "$(hexrep 5b 16)"
send 'B>A' "xid=0x00000102 vers=1 credit=16 proc=0 reads=- writes={0x77:16:0x10000,0x78:16:0x20000} reply=-" \
	reply:0000000000000000000000200000000100000020
# GETATTR with a Reply chunk, answered as a Long Reply: the RPC reply
# (NFS3ERR_STALE) written into the Reply chunk, then RDMA_NOMSG with
# the chunk's used length (§3.5.3, §4.3.3)
send 'A>B' "xid=0x00000103 vers=1 credit=32 proc=0 reads=- writes=- reply={0x99:4096:0x30000}" \
	"call:100003:3:1:$FH"
write 'B>A' 0x99 0x30000 000001030000000100000000000000000000000000000000000000460000000000000000
send 'B>A' "xid=0x00000103 vers=1 credit=16 proc=1 reads=- writes=- reply={0x99:36:0x30000}" -
# a Long Call with all three lists: a Position-Zero Read chunk of two
# segments, a Read chunk at 8, two Write chunks (one empty), a Reply
# chunk of two segments
send 'A>B' "xid=0x00000104 vers=1 credit=32 proc=1 reads=0:0x55:100:0x1000,0:0x56:20:0xffffffffffffe000,8:0x57:7:0x0 writes={0x58:64:0x3000}{} reply={0x59:1024:0x4000,0x5a:1024:0x5000}" -
# a call with Read chunks at three Positions, segments of odd lengths
send 'A>B' "xid=0x00000105 vers=1 credit=32 proc=0 reads=36:0x60:5:0x0,36:0x61:3:0x8,44:0x62:8:0x10,64:0x63:4:0x20 writes=- reply=-" \
	call:100099:1:1:00000001000000020000000300000004
# RDMA_ERROR: ERR_CHUNK, and ERR_VERS from a peer speaking 2 to 3
send 'B>A' "xid=0x00000105 vers=1 credit=16 proc=4 err=2" -
send 'B>A' "xid=0x00000106 vers=1 credit=16 proc=4 err=1 low=2 high=3" -

cap=$work/session.pcap
python3 "$here/rpcrdma_pcap.py" "$cap" "$script" >"$work/frames" 2>"$work/gen.err" ||
	fail "rpcrdma_pcap.py failed: $(cat "$work/gen.err")"
cp "$cap" "$build/wire-rpcordma.pcap" 2>/dev/null
[ "$(wc -l <"$work/frames")" -eq "${#sends[@]}" ] ||
	fail "rpcrdma_pcap.py reported $(wc -l <"$work/frames") Sends, ${#sends[@]} were written"
ok "${#sends[@]} headers encoded, each decoding back to its line; capture written"

# ---- 1. field by field --------------------------------------------------------
bad=$(ts "${dec[@]}" -r "$cap" -Y '_ws.malformed || _ws.expert.severity >= 8388608')
[ -z "$bad" ] && ok "no malformed frame, no expert error" ||
	bad "frames tshark flags:
$bad"

ts "${dec[@]}" -r "$cap" -Y rpcordma "${rpcordma_fields[@]}" >"$work/fields.tsv"
rpcordma_lines <"$work/fields.tsv" >"$work/tshark.lines" 2>"$work/awk.err" ||
	fail "reading tshark's fields: $(cat "$work/awk.err")"

i=0
while read -r frame hex; do
	want=${sends[$i]}
	got=$(awk -v f="$frame" '$1 == f { $1 = $2 = ""; sub(/^  /, ""); print }' "$work/tshark.lines")
	if [ "$got" = "$want" ]; then
		ok "frame $frame: tshark reads $want"
	else
		bad "frame $frame: sent    $want
                    tshark: ${got:-(no rpcordma)}"
	fi
	i=$((i + 1))
done <"$work/frames"

# RFC 8797 private data: tshark's MPA private data, past the word
i=0
for want in "present=1 rinv=1 send=4096 recv=8192 offset=0" \
	"present=1 rinv=0 send=262144 recv=1024 offset=0"; do
	pd=$(ts -r "$cap" "${dec[@]}" -Y iwarp_mpa.privatedata -T fields -e iwarp_mpa.privatedata |
		sed -n "$((i + 1))p" | tr -d ':')
	got=$("$tool" cmdec --mpa2 "$pd")
	[ "$got" = "$want" ] && ok "MPA private data $pd: RFC 8797 $got" ||
		bad "MPA private data '$pd': read $got, expected $want"
	i=$((i + 1))
done

# ---- 2. the Write chunk limits ---------------------------------------------------
# A READ of 30 octets: no XDR pad in the chunk (§3.4.6.2) nor in the
# reduced reply (§3.4.4.4).  Variant "nowrite": 32 octets, the RDMA
# Write not captured.
limit_case() {
	local name=$1 n=$2 withwrite=$3 s=$work/$1.txt c=$work/$1.pcap
	local call reply callf replyf wf hdr payload rl pos clen data
	local pad unreduced plain

	{
		echo "A>B send $(enc "xid=0x00000201 vers=1 credit=32 proc=0 reads=- writes={0x77:8192:0x10000} reply=-") call:100003:3:6:${FH}0000000000000000$(printf %08x "$n")"
		[ "$withwrite" = 0 ] || echo "B>A write 0x77 0x10000 $(hexrep 5a "$n")"
		echo "B>A send $(enc "xid=0x00000201 vers=1 credit=16 proc=0 reads=- writes={0x77:$n:0x10000} reply=-") reply:0000000000000000$(printf %08x "$n")00000001$(printf %08x "$n")"
	} >"$s"
	python3 "$here/rpcrdma_pcap.py" "$c" "$s" >"$work/$name.frames" ||
		fail "rpcrdma_pcap.py failed on $name"
	cp "$c" "$build/wire-rpcordma-$name.pcap" 2>/dev/null
	callf=$(sed -n 1p "$work/$name.frames" | cut -d' ' -f1)
	replyf=$(sed -n 2p "$work/$name.frames" | cut -d' ' -f1)

	# what tshark 4.0 makes of it
	if [ -n "$(ts "${dec[@]}" -r "$c" -Y "frame.number == $replyf && _ws.malformed")" ]; then
		ok "$name: tshark flags the READ reply (frame $replyf) malformed, as docs/rpcrdma-wireshark.md says"
	else
		bad "$name: tshark decodes the READ reply cleanly now: update docs/rpcrdma-wireshark.md and this test"
	fi

	# the codec's reading of the reply's header: where the RPC message
	# starts, what the Write chunk holds
	payload=$(ddp_payload "$c" "$replyf") || exit 1
	hdr=$("$tool" dec "$payload")
	clen=$(sed -n 's/.* writes={0x77:\([0-9]*\):0x10000} .*/\1/p' <<<"$hdr")
	[ "$clen" = "$n" ] ||
		fail "$name: the codec reads the reply header as: $hdr"
	rl=$(hdr_len "$payload") || exit 1
	reply=${payload:$((rl * 2))}
	# RFC 1813 READ3resok after the 24-octet accepted reply: status,
	# attributes_follow (0 here), count, eof, then the opaque's length,
	# which stays in the Payload stream (§3.4.4.1): the chunk goes in
	# right after it
	[ "${reply:56:8}" = 00000000 ] && [ $((16#${reply:80:8})) -eq "$n" ] ||
		fail "$name: not the READ3resok written: $reply"
	pos=44
	if [ "$withwrite" = 0 ]; then
		data=$(hexrep 5a "$n")     # what the Write would have carried
	else
		wf=$((callf + 2))
		data=$(ddp_payload "$c" "$wf") || exit 1
	fi
	pad=$(( (4 - n % 4) % 4 ))
	unreduced=$(put_back "$reply" "$pos" "$data")
	[ $((${#unreduced} / 2)) -eq $((${#reply} / 2 + n + pad)) ] ||
		fail "$name: the reply put back together is $((${#unreduced} / 2)) octets"
	call=$(ddp_payload "$c" "$callf") || exit 1
	rl=$(hdr_len "$call") || exit 1
	plain=$work/$name-tcp.pcap
	python3 "$here/rpcrdma_pcap.py" --rpc-tcp "$plain" "${call:$((rl * 2))}" "$unreduced" ||
		fail "rpcrdma_pcap.py --rpc-tcp failed"
	got=$(ts -2 -r "$plain" -Y 'nfs && rpc.msgtyp == 1 && !_ws.malformed && !_ws.expert' \
		-T fields -e nfs.count3 -e nfs.data | tr -d ':')
	want=$(printf '%s\t%s' "$n" "$data")
	[ "$got" = "$want" ] &&
		ok "$name: the same octets, put back together by RFC 8166's rules, decode as a clean NFS READ reply of $n octets over TCP" ||
		bad "$name: the reply put back together does not decode over TCP: '$got'"
}
limit_case odd 30 1
limit_case nowrite 32 0

echo "tshark: $(tshark --version 2>/dev/null | sed -n 1p)"
check_summary
