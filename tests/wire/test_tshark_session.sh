#!/usr/bin/env bash
# Wire test: a real RPC-over-RDMA session, captured on lo and decoded by
# tshark.  The store example (examples/store/) runs on uiwarp (MPA
# revision 2, CRC on, markers off), one store-server and one
# store-client per command: NULL; a PUT and a GET of a small object
# (inline); PUTs of 8192 and 10001 octets (too long for a Send: the data
# goes by Read chunk, RFC 8166 §3.4.5) and GETs of them (the data by
# Write chunk, §3.4.6); PUTs of objects with 200-octet names and a LIST
# whose reply does not fit a Send (by Reply chunk, §3.5.3).  Both ends
# trace what they post (UIWARP_RPCRDMA_TRACE: every Send with its
# octets, every RDMA Read and Write), and the test holds tshark's
# decoding (tshark -2) against that:
#
# - no malformed frame, no expert error, every TCP octet decoded as MPA;
# - MPA: one Request and one Reply per connection, CRC on, markers off,
#   revision 2, RFC 6581's S bit; in their private data the RFC 6581 word (peer-to-peer,
#   IRD and ORD that fit each other) and the RFC 8797 message as the
#   library advertises it; the initiator's zero-length RDMA Write (RTR);
# - every call and every reply as rpcordma: the header the program sent,
#   field by field (xid, vers, credits, proc, Read list, Write list,
#   Reply chunk, each handle, length and offset), and the STag a Send
#   with Invalidate names; the session used each kind of chunk;
# - each RDMA Read Request and RDMA Write as the Responder posted it,
#   each landing in a chunk its call offered and its reply returned;
# - RPC: each call and reply once, with its xid, message type, the
#   store's program, version and procedure (tshark does not know the
#   program: rpc.dissect_unknown_programs) and reply status, and the
#   arguments and results tshark shows: a PUT's data put back from its
#   Read chunk; a LIST reply put together from its Reply chunk;
# - a GET's data, which went by Write chunk: tshark 4.0 leaves it out
#   of the results (docs/rpcrdma-wireshark.md: only a program it
#   decodes, such as NFS, tells it where the data goes), without any
#   flag.  For 10001 octets (not a multiple of 4) the test shows those
#   octets are right: the client wrote them to a file equal to the one
#   put (cmp), and the captured reply with the captured RDMA Write put
#   back in by RFC 8166's rules (§3.4.4.1, §3.4.4.4, §3.4.6.2), sent as
#   plain RPC over TCP, decodes cleanly with the object's octets;
# - the server's counts (uiw_rpcrdma_svc_stats) against the capture.
#
# usage: test_tshark_session.sh <build-dir> <source-dir>
# Needs root (or capture rights on lo), tshark, dumpcap and python3
# (scripts/install-deps.sh installs them); missing tools fail the test.
# The capture is kept in <build-dir>/wire-rpcrdma-session.pcapng.
set -uo pipefail

build=${1:?usage: test_tshark_session.sh <build-dir> <source-dir>}
here=$(cd "$(dirname "$0")" && pwd)
server=$build/examples/store/store-server
client=$build/examples/store/store-client
rpcrdma_wire=$build/rpcrdma_wire
timeout_s=${UIW_TEST_TIMEOUT_S:-20}

# shellcheck source=../check_lib.sh
. "$here/../check_lib.sh"

for t in tshark dumpcap python3 od; do
	command -v "$t" >/dev/null ||
		fail "$t is not installed (run scripts/install-deps.sh as root)"
done
for p in "$server" "$client" "$rpcrdma_wire"; do
	[ -x "$p" ] || fail "$p is missing: build the tree first"
done

# shellcheck source=wire_lib.sh
. "$here/wire_lib.sh"
# shellcheck source=rpcordma_lib.sh
. "$here/rpcordma_lib.sh"

# The connection settings, whatever the defaults become: what tshark's
# MPA dissector is checked on here.  Both ends are uiwarp: no start
# delay after the MPA Reply (it is for Linux siw).
export UIWARP_MPA_REV=2 UIWARP_CRC=1 UIWARP_MARKERS=0 UIWARP_START_DELAY_MS=0
unset UIWARP_RPCRDMA_TRACE UIWARP_DEBUG
# What the library advertises (uiw_rpcrdma_opts_init: 4096-octet inline
# thresholds both ways, remote invalidation allowed), RFC 8797 §4.
want_cm="present=1 rinv=1 send=4096 recv=4096 offset=0"
# The store's program (store.x) and procedures
prog=$((0x20756977))
P_PUT=1 P_GET=2 P_LIST=4

# a file's octets, a string's, in hex
hex() { od -An -v -tx1 "$1" | tr -d ' \n'; }
strhex() { printf %s "$1" | od -An -v -tx1 | tr -d ' \n'; }
# XDR (RFC 4506 §4.10, §4.11): a variable-length opaque or string, its
# length word, octets and pad
xdr_opaque() {
	local h=$1
	printf '%08x%s%s' $((${#h} / 2)) "$h" "$(hexrep 00 $(((4 - ${#h} / 2 % 4) % 4)))"
}

# The objects
printf 'hello, RPC-over-RDMA\n' >"$work/small"
head -c 8192 /dev/urandom >"$work/even"
head -c 10001 /dev/urandom >"$work/odd"
: >"$work/empty"
nlong=20
longname() { printf 'list-%02d-%0192d' "$1" 0; }

strace=$work/server.trace
ctrace=$work/client.trace
cap=$work/session.pcapng

# sc ARGS...: store-client over rdma to the session's server, tracing
# into $ctrace; one connection each, one call each but for get (STAT,
# then GET)
sc() {
	[ "$1" = get ] && calls_made=$((calls_made + 2)) || calls_made=$((calls_made + 1))
	UIWARP_RPCRDMA_TRACE=$ctrace "$client" -p "$port" -T "$timeout_s" "$@" \
		>"$work/client.out" 2>"$work/client.err" ||
		fail "store-client $*: $(cat "$work/client.err")"
	nconn=$((nconn + 1))
}

session() {
	local line rc=0 i

	rm -f "$strace" "$ctrace" "$cap"
	nconn=0 calls_made=0
	UIWARP_RPCRDMA_TRACE=$strace wire_start "$server" -a 127.0.0.1 -p 0 -t 0 -u 0
	read -r -t "$timeout_s" line <&4 ||
		fail "store-server did not start: $(cat "$work/tool.err")"
	port=$(sed -n 's/.* rdma port \([0-9]*\).*/\1/p' <<<"$line")
	[ -n "$port" ] || fail "no rdma port in: $line"

	wire_capture "$cap" "tcp port $port" "$port"
	sc null
	sc put "$work/small" small
	sc get small "$work/small.got"
	sc put "$work/even" even
	sc put "$work/odd" odd
	sc get even "$work/even.got"
	sc get odd "$work/odd.got"
	for ((i = 1; i <= nlong; i++)); do
		sc put "$work/empty" "$(longname "$i")"
	done
	sc ls
	cp "$work/client.out" "$work/ls.out"
	wire_stop || rc=$?

	# SIGTERM: the server prints its counts and exits 0
	kill -TERM "$toolpid"
	wait "$toolpid" || fail "store-server ended with status $?: $(cat "$work/tool.err")"
	toolpid=
	cat <&4 >"$work/server.out"
	exec 3>&- 4<&-
	return "$rc"
}
wire_retry session
cp "$cap" "$build/wire-rpcrdma-session.pcapng" 2>/dev/null &&
	echo "capture kept in $build/wire-rpcrdma-session.pcapng"
echo "$nconn connections to port $port"

for f in small even odd; do
	cmp -s "$work/$f" "$work/$f.got" &&
		ok "get $f: the octets put ($(wc -c <"$work/$f"))" ||
		bad "get $f gave other octets than those put"
done
[ "$(wc -l <"$work/ls.out")" -eq $((nlong + 3)) ] &&
	ok "ls lists the $((nlong + 3)) objects" ||
	bad "ls lists $(wc -l <"$work/ls.out") objects, $((nlong + 3)) were put"

# Two passes: the rpcordma dissector puts chunks back only then.  MPA
# is found by its heuristic (before port numbers, which an ephemeral
# port may hit), SMB Direct's is left out; loopback reorders segments
# now and then, which tshark puts back in order.
opts=(-2 -o tcp.desegment_tcp_streams:TRUE -o tcp.reassemble_out_of_order:TRUE
	-o tcp.try_heuristic_first:TRUE --enable-heuristic iwarp_mpa_tcp
	--disable-heuristic smb_direct_iwarp -o rpc.dissect_unknown_programs:TRUE)
dec=(-r "$cap" "${opts[@]}")
tcpf=$(wire_tcpf "$port")

# ---- frames ----------------------------------------------------------------
wire_no_errors "$tcpf" "${dec[@]}"
ok "no malformed frame, no expert error"
undecoded=$(ts "${dec[@]}" -Y "$tcpf && tcp.len > 0 && !iwarp_mpa && !tcp.reassembled_in")
[ -z "$undecoded" ] && ok "every TCP segment with octets decodes as MPA" ||
	bad "TCP payload not decoded as MPA:
$(sed -n 1,10p <<<"$undecoded")"

# ---- MPA startup -----------------------------------------------------------
ts "${dec[@]}" -Y "$tcpf && (iwarp_mpa.key.req || iwarp_mpa.key.rep)" \
	-T fields -E separator='|' -e tcp.stream -e tcp.srcport \
	-e iwarp_mpa.key.req -e iwarp_mpa.marker_flag -e iwarp_mpa.crc_flag \
	-e iwarp_mpa.rej_flag -e iwarp_mpa.res -e iwarp_mpa.rev \
	-e iwarp_mpa.privatedata \
	>"$work/mpa.tsv"
reqs=0 reps=0 mpabad=''
declare -A ird ord
while IFS='|' read -r stream sport req mf cf rf res rev pd; do
	pd=${pd//:/}
	# a Request from the client, a Reply from the server's port
	if [ -n "$req" ]; then
		kind=Request from=client
		reqs=$((reqs + 1))
	else
		kind=Reply from=server
		reps=$((reps + 1))
	fi
	[ "$sport" = "$port" ] && by=server || by=client
	[ "$by" = "$from" ] ||
		mpabad+="stream $stream: an MPA $kind from port $sport
"
	# RFC 6581 §6: S, the bit after R, says the private data opens with
	# the word of §9; tshark 4.0 shows it as part of Res
	case "$mf/$cf/$rf/$res/$rev" in
	False/True/False/0x10/2 | 0/1/0/0x10/2) ;;
	*) mpabad+="stream $stream: MPA $kind with M=$mf C=$cf R=$rf Res=$res Rev=$rev, expected M=0 C=1 R=0 S=1 Rev=2
" ;;
	esac
	# RFC 6581 §9: A (peer-to-peer), IRD and ORD in 14 bits each
	w=$((16#${pd:0:8}))
	[ $((w >> 31)) -eq 1 ] ||
		mpabad+="stream $stream: MPA $kind private data $pd without the peer-to-peer flag
"
	ird[$stream.$kind]=$(((w >> 16) & 0x3fff))
	ord[$stream.$kind]=$((w & 0x3fff))
	got=$("$rpcrdma_wire" cmdec --mpa2 "$pd")
	[ "$got" = "$want_cm" ] ||
		mpabad+="stream $stream: MPA $kind private data $pd reads '$got', the library advertises '$want_cm'
"
done <"$work/mpa.tsv"
# RFC 6581 §9.1: the responder's ORD at most the initiator's IRD, its
# IRD at least the initiator's ORD
for k in "${!ird[@]}"; do
	s=${k%.*}
	[ "${k#*.}" = Reply ] || continue
	[ "${ord[$s.Reply]}" -le "${ird[$s.Request]:-0}" ] &&
		[ "${ird[$s.Reply]}" -ge "${ord[$s.Request]:-16384}" ] ||
		mpabad+="stream $s: IRD/ORD ${ird[$s.Request]:-}/${ord[$s.Request]:-} asked, ${ird[$s.Reply]}/${ord[$s.Reply]} answered
"
done
if [ -z "$mpabad" ] && [ "$reqs" -eq "$nconn" ] && [ "$reps" -eq "$nconn" ]; then
	ok "MPA: $reqs Requests and $reps Replies (revision 2, CRC, no markers, S); RFC 6581 word and RFC 8797 '$want_cm' each way"
else
	bad "MPA: $reqs Requests, $reps Replies for $nconn connections
$mpabad"
fi
rtr=$(ts "${dec[@]}" -Y "$tcpf && tcp.dstport == $port && iwarp_rdma.opcode == 0 && iwarp_mpa.ulpdulength == 14" | wc -l)
[ "$rtr" -eq "$nconn" ] &&
	ok "each initiator's first message: a zero-length RDMA Write (RFC 6581 §9.2 RTR), $rtr" ||
	bad "$rtr zero-length RDMA Writes from the initiators, $nconn connections"

# ---- the transport headers ---------------------------------------------------
# What the programs sent: each traced Send decoded by the codec, as
# "call|reply XID LINE" (with " inv=0xK" for Send with Invalidate)
trace_sends() {
	local dir=$1 op qp len rest d inv
	while read -r op qp len rest; do
		case $op in
		send | send_inv) ;;
		read | write) continue ;;
		*) fail "unknown line in the trace: $op $qp $len $rest" ;;
		esac
		d=$("$rpcrdma_wire" dec "${rest##*data=}")
		inv=''
		[ "$op" = send_inv ] && inv=" ${rest%% data=*}"
		echo "$dir ${d% hdr_len=*}$inv"
	done
}
trace_sends call <"$ctrace" >"$work/sent.lines"
trace_sends reply <"$strace" >>"$work/sent.lines"
sort -o "$work/sent.lines" "$work/sent.lines"

ts "${dec[@]}" -Y "$tcpf && rpcordma.xid" "${rpcordma_fields[@]}" >"$work/rpcordma.tsv"
rpcordma_lines <"$work/rpcordma.tsv" |
	awk -v port="$port" '{ d = $2 == port ? "reply" : "call"
		$1 = $2 = ""; sub(/^  /, ""); print d, $0 }' | sort >"$work/shown.lines"
ncalls=$(grep -c '^call ' "$work/sent.lines")
nreplies=$(grep -c '^reply ' "$work/sent.lines")
if [ "$ncalls" -eq "$calls_made" ] && [ "$nreplies" -eq "$calls_made" ] &&
	cmp -s "$work/sent.lines" "$work/shown.lines"; then
	ok "$ncalls calls and $nreplies replies: tshark reads every header as the programs sent it"
else
	bad "$calls_made calls made, $ncalls calls and $nreplies replies traced; headers sent (<) and as tshark reads them (>):
$(diff "$work/sent.lines" "$work/shown.lines" | sed -n 1,20p)"
fi

# The RPC message in each traced Send (RFC 5531 §9), by xid:
# "XID call PROC" and "XID reply STAT" (RDMA_NOMSG: "XID reply -")
trace_rpc() {
	local op qp len rest data d hl rpc
	while read -r op qp len rest; do
		[[ $op == send* ]] || continue
		data=${rest##*data=}
		d=$("$rpcrdma_wire" dec "$data")
		hl=${d##* hdr_len=}
		rpc=${data:$((hl * 2))}
		if [ -z "$rpc" ]; then
			echo "0x${data:0:8} reply -"
		elif [ "${rpc:8:8}" = 00000000 ]; then
			[ "${rpc:0:8}" = "${data:0:8}" ] && [ $((16#${rpc:16:8})) -eq 2 ] &&
				[ $((16#${rpc:24:8})) -eq "$prog" ] && [ $((16#${rpc:32:8})) -eq 1 ] ||
				fail "not a call of the store's version 1: $rpc"
			echo "0x${rpc:0:8} call $((16#${rpc:40:8}))"
		else
			echo "0x${rpc:0:8} reply $((16#${rpc:16:8}))"
		fi
	done
}
trace_rpc <"$ctrace" >"$work/rpc.sent"
trace_rpc <"$strace" >>"$work/rpc.sent"
declare -A proc_of
while read -r x kind v; do
	[ "$kind" = call ] && proc_of[$x]=$v
done <"$work/rpc.sent"

# What the session used, from the programs' headers: each procedure's
# chunks as the ULB says (store_ulb.c), and every kind of chunk
# hdr XID call|reply: the header's line
hdr() { sed -n "s/^$2 xid=$1 /xid=$1 /p" "$work/sent.lines"; }
used=''
nomsg=0
for x in "${!proc_of[@]}"; do
	c=$(hdr "$x" call) r=$(hdr "$x" reply)
	[[ $c == *" vers=1 "* && $r == *" vers=1 "* && $c == *" proc=0 "* ]] ||
		used+="$x: call '$c', reply '$r': not RPC-over-RDMA version 1, or a call not RDMA_MSG
"
	[[ $r == *" proc=1 "* ]] && nomsg=$((nomsg + 1))
	case ${proc_of[$x]} in
	"$P_PUT") [[ $c == *" reads=- "* ]] || used+=" read" ;;
	"$P_GET")
		[[ $r == *" writes={"* ]] && used+=" write"
		# the Write chunk offered comes back with the length used
		w=$(sed -n 's/.* writes=\({[^}]*}\).*/\1/p' <<<"$c")
		[ -z "$w" ] || [[ $r == *" writes=${w%%:*}:"* ]] ||
			used+="$x: GET offered $w, the reply returned '$r'
"
		;;
	"$P_LIST") [[ $r == *" proc=1 "*" reply={"* ]] && used+=" reply" ;;
	esac
done
for k in read write reply; do
	[[ $used == *" $k"* ]] || used+="no $k chunk used
"
done
if [[ $used != *$'\n'* ]] && [ "$nomsg" -eq 1 ]; then
	ok "the session used Read chunks (PUT), Write chunks (GET) and a Reply chunk (LIST, RDMA_NOMSG)"
else
	bad "chunks used: $used (RDMA_NOMSG replies: $nomsg)"
fi

# ---- RDMA Reads and Writes ----------------------------------------------------
# As the Responder posted them: "read|write LEN RKEY RADDR"
grep -E '^(read|write) ' "$strace" |
	sed 's/^\([a-z]*\) qp=[0-9]* len=\([0-9]*\) rkey=\([^ ]*\) raddr=\([^ ]*\)$/\1 \2 \3 \4/' |
	sort >"$work/rdma.posted"
# As tshark shows them: Read Requests, and Writes of the Responder's
# side put together from their DDP segments (RFC 5041 §5: the Last flag
# ends a message)
{
	ts "${dec[@]}" -Y "$tcpf && iwarp_rdma.rdmardsz" -T fields -E occurrence=a \
		-E aggregator=, -e iwarp_rdma.rdmardsz -e iwarp_rdma.srcstag -e iwarp_rdma.srcto |
		awk -F'\t' '
function hx(s) { sub(/^0[xX]0*/, "", s); return "0x" (s == "" ? "0" : tolower(s)) }
{ n = split($1, l, ","); split($2, k, ","); split($3, a, ",")
  for (i = 1; i <= n; i++) print "read", l[i], hx(k[i]), hx(a[i]) }'
	ts "${dec[@]}" -Y "$tcpf && tcp.srcport == $port && iwarp_rdma.opcode == 0" \
		-T fields -E occurrence=a -E aggregator=, -e iwarp_rdma.opcode \
		-e iwarp_ddp.stag -e iwarp_ddp.tagged_offset -e iwarp_mpa.ulpdulength \
		-e iwarp_ddp.last_flag | awk -F'\t' "$wire_awk"'
function hx(s) { sub(/^0[xX]0*/, "", s); return "0x" (s == "" ? "0" : tolower(s)) }
{ n = split($1, op, ","); split($2, k, ","); split($3, a, ",")
  split($4, u, ","); split($5, lf, ",")
  # fields of tagged segments only: Write (0) and Read Response (2)
  t = 0
  for (i = 1; i <= n; i++) {
	o = num(op[i])
	if (o != 0 && o != 2) continue
	t++
	if (o != 0) continue
	if (!(k[t] in len)) { len[k[t]] = 0; to[k[t]] = a[t] }
	len[k[t]] += u[i] - 14          # RFC 5041 §4: 14-octet tagged header
	if (truth(lf[i])) { print "write", len[k[t]], hx(k[t]), hx(to[k[t]]); delete len[k[t]] }
  } }'
} | sort >"$work/rdma.shown"
if [ -s "$work/rdma.posted" ] && cmp -s "$work/rdma.posted" "$work/rdma.shown"; then
	ok "$(grep -c '^read' "$work/rdma.posted") RDMA Reads and $(grep -c '^write' "$work/rdma.posted") RDMA Writes as the server posted them"
else
	bad "RDMA Reads and Writes posted (<) and as tshark shows them (>):
$(diff "$work/rdma.posted" "$work/rdma.shown" | sed -n 1,20p)"
fi
# Each Read reads a Read list segment of its call (one segment a chunk
# here); each Write fills what a reply returns of a Write chunk or of
# its Reply chunk (RFC 8166 §3.4.6, §3.5.3), and nothing else.
{
	sed -n 's/^call .* reads=\([^ ]*\) .*/\1/p' "$work/sent.lines" | tr ',' '\n' |
		awk -F: '$1 != "-" { print "read", $3, $2, $4 }'
	sed -n 's/^reply .* writes=\([^ ]*\) reply=\([^ ]*\).*/\1\2/p' "$work/sent.lines" |
		sed 's/}{/,/g' | tr -d '{}-' | tr ',' '\n' | awk -F: 'NF == 3 && $2 > 0 { print "write", $2, $1, $3 }'
} | sort >"$work/rdma.chunks"
cmp -s "$work/rdma.chunks" "$work/rdma.posted" &&
	ok "each RDMA Read took a Read list segment whole, each RDMA Write filled a returned Write or Reply chunk segment" ||
	bad "chunk segments (<) and RDMA operations (>):
$(diff "$work/rdma.chunks" "$work/rdma.posted" | sed -n 1,20p)"

# ---- RPC -------------------------------------------------------------------
# Each call and reply once: "XID MSGTYP PROGRAM VERSION PROCEDURE STAT"
ts "${dec[@]}" -Y "$tcpf && rpc" -T fields -E occurrence=f -e rpc.xid \
	-e rpc.msgtyp -e rpc.program -e rpc.programversion -e rpc.procedure \
	-e rpc.replystat -e data.data >"$work/rpc.tsv"
awk -F'\t' '{ print tolower($1), $2, $3, $4, $5, ($6 == "" ? "-" : $6) }' \
	"$work/rpc.tsv" | sort >"$work/rpc.shown"
while read -r x kind v; do
	p=${proc_of[$x]:-?}
	# an RDMA_NOMSG reply's RPC message went by its Reply chunk: the
	# client's success says it was MSG_ACCEPTED, SUCCESS
	[ "$kind" = call ] && echo "$x 0 $prog 1 $p -" ||
		echo "$x 1 $prog 1 $p ${v/-/0}"
done <"$work/rpc.sent" | sort >"$work/rpc.want"
cmp -s "$work/rpc.want" "$work/rpc.shown" &&
	ok "RPC: $(wc -l <"$work/rpc.shown") messages, each once, with xid, type, program $prog, version, procedure and reply status" ||
	bad "RPC messages sent (<) and as tshark reads them (>):
$(diff "$work/rpc.want" "$work/rpc.shown" | sed -n 1,20p)"

# rpc_data XID TYPE: the arguments or results tshark shows, in hex
rpc_data() {
	awk -F'\t' -v x="$1" -v t="$2" 'tolower($1) == x && $2 == t { print $7 }' \
		"$work/rpc.tsv" | tr -d ':'
}
# xid_of PROC ARG: the xid of the call of PROC whose arguments (as sent)
# start with ARG (hex)
xid_of() {
	local x
	for x in "${!proc_of[@]}"; do
		[ "${proc_of[$x]}" = "$1" ] || continue
		grep -q "^send qp=[0-9]* len=[0-9]* data=${x#0x}.*$2" "$ctrace" && echo "$x"
	done | sed -n 1p
}

declare -A getx
for f in even odd; do
	namex=$(xdr_opaque "$(strhex "$f")")
	datax=$(hex "$work/$f")
	n=$(wc -c <"$work/$f")
	# PUT: tshark puts the Read chunk back (with its pad) into the call
	x=$(xid_of $P_PUT "$namex")
	[ -n "$x" ] || fail "no PUT of $f in the client's trace"
	got=$(rpc_data "$x" 0)
	[ "$got" = "$namex$(xdr_opaque "$datax")" ] &&
		ok "PUT $f ($x): tshark shows its $n octets, put back from the Read chunk, and their pad" ||
		bad "PUT $f ($x): tshark shows arguments of $((${#got} / 2)) octets, not the name and the $n octets put"
	# GET: the data went by Write chunk and tshark leaves it out
	x=$(xid_of $P_GET "$namex")
	[ -n "$x" ] || fail "no GET of $f in the client's trace"
	got=$(rpc_data "$x" 1)
	want=00000000$(printf %08x%016x "$n" "$n")
	if [ "$got" = "$want" ]; then
		ok "GET $f ($x): tshark shows the results reduced (status, data length $n, size), not flagged, as docs/rpcrdma-wireshark.md says"
	else
		bad "GET $f ($x): tshark shows results '${got:0:80}'...: update docs/rpcrdma-wireshark.md and this test"
	fi
	getx[$f]=$x
done

# LIST: its reply put together from the Reply chunk, with every object
x=$(xid_of $P_LIST "")
r=$(hdr "$x" reply)
rlen=$(sed -n 's/.* reply={0x[0-9a-f]*:\([0-9]*\):.*/\1/p' <<<"$r")
got=$(rpc_data "$x" 1)
[ -n "$rlen" ] && [ $((${#got} / 2 + 24)) -eq "$rlen" ] &&
	[ "${got:0:8}" = 00000000 ] && [ $((16#${got:8:8})) -eq $((nlong + 3)) ] &&
	[[ $got == *"$(xdr_opaque "$(strhex "$(longname "$nlong")")")"* ]] &&
	ok "LIST ($x): tshark shows the $rlen-octet reply from the Reply chunk, $((nlong + 3)) entries" ||
	bad "LIST ($x): reply '$r', tshark shows $((${#got} / 2)) octets of results: ${got:0:40}"

# ---- the GET of 10001 octets, put back together ------------------------------
# Its call and reply as captured, their RPC messages after the
# transport headers; the RDMA Write into its Write chunk as captured
x=${getx[odd]}
n=$(wc -c <"$work/odd")
frames=$(ts "${dec[@]}" -Y "$tcpf && rpcordma.xid == $x" -T fields -e frame.number -e tcp.srcport)
callf=$(awk -v p="$port" '$2 != p { print $1 }' <<<"$frames")
replyf=$(awk -v p="$port" '$2 == p { print $1 }' <<<"$frames")
[ -n "$callf" ] && [ -n "$replyf" ] || fail "GET odd ($x): no call or reply frame in: $frames"
call=$(ddp_payload "$cap" "$callf" "${opts[@]}") || exit 1
reply=$(ddp_payload "$cap" "$replyf" "${opts[@]}") || exit 1
rl=$(hdr_len "$call") || exit 1
call=${call:$((rl * 2))}
rl=$(hdr_len "$reply") || exit 1
reply=${reply:$((rl * 2))}
w=$(sed -n 's/.* writes={\(0x[0-9a-f]*\):[0-9]*:\(0x[0-9a-f]*\)}.*/\1 \2/p' <<<"$(hdr "$x" reply)")
read -r wk wo <<<"$w"
wf=$(ts "${dec[@]}" -Y "$tcpf && tcp.srcport == $port && iwarp_ddp.stag == $wk && iwarp_ddp.tagged_offset == $wo" \
	-T fields -e frame.number)
[ "$(wc -w <<<"$wf")" -eq 1 ] || fail "GET odd ($x): the RDMA Write to $wk at $wo in frames '$wf'"
data=$(ddp_payload "$cap" "$wf" "${opts[@]}") || exit 1
[ "$data" = "$(hex "$work/odd")" ] &&
	ok "GET odd: the RDMA Write (frame $wf) carries the object's $n octets, without pad (RFC 8166 §3.4.6.2)" ||
	bad "GET odd: the RDMA Write (frame $wf) carries $((${#data} / 2)) other octets"
# store.x's store_get_res after the 24-octet accepted reply (RFC 5531
# §9, AUTH_NONE verifier): status, the data's length word, which stays
# in the Payload stream (§3.4.4.1), then the size; the data and its pad
# go in right after the length word
[ "${reply:48:8}" = 00000000 ] && [ $((16#${reply:56:8})) -eq "$n" ] &&
	[ $((${#reply} / 2)) -eq 40 ] ||
	fail "GET odd: not the reduced store_get_res: $reply"
whole=$(put_back "$reply" 32 "$data")
plain=$work/get-odd-tcp.pcap
python3 "$here/rpcrdma_pcap.py" --rpc-tcp "$plain" "$call" "$whole" ||
	fail "rpcrdma_pcap.py --rpc-tcp failed"
cp "$plain" "$build/wire-rpcrdma-session-get-tcp.pcap" 2>/dev/null
popts=(-r "$plain" -2 -o rpc.dissect_unknown_programs:TRUE)
wire_no_errors tcp "${popts[@]}"
got=$(ts "${popts[@]}" -Y 'rpc.msgtyp == 1' -T fields -E occurrence=f -e rpc.xid \
	-e rpc.procedure -e rpc.replystat -e data.data | tr -d ':')
want=$(printf '%s\t%s\t0\t00000000%08x%s%s%016x' "$x" $P_GET "$n" \
	"$(hex "$work/odd")" "$(hexrep 00 $(((4 - n % 4) % 4)))" "$n")
[ "$got" = "$want" ] &&
	ok "GET odd: the captured octets, put back together by RFC 8166's rules, decode cleanly over plain TCP as the GET reply with the object's $n octets and their pad" ||
	bad "GET odd: the reply put back together decodes over TCP as '${got:0:100}'"

# ---- the server's counts ----------------------------------------------------
# uiw_rpcrdma_svc_stats (store-server prints them at its end) against
# what tshark shows
sv() { sed -n "s/^store-server: rdma:.* $1=\([0-9]*\).*/\1/p" "$work/server.out"; }
sum() { awk -v k="$1" '$1 == k { n++; b += $2 } END { print n + 0, b + 0 }' "$work/rdma.shown"; }
read -r nr br < <(sum read)
read -r nw bw < <(sum write)
stats="calls=$(sv calls) replies=$(sv replies) read=$(sv read_chunks)/$(sv read_bytes)"
stats+=" write+reply=$(($(sv write_chunks) + $(sv reply_chunks)))/$(($(sv write_bytes) + $(sv reply_bytes)))"
stats+=" reply=$(sv reply_chunks)/$(sv reply_bytes)"
want="calls=$ncalls replies=$nreplies read=$nr/$br write+reply=$nw/$bw reply=1/$rlen"
[ "$stats" = "$want" ] &&
	ok "the server's counts agree with the capture: $stats" ||
	bad "the server counts $stats, the capture shows $want"

echo "tshark: $(tshark --version 2>/dev/null | sed -n 1p)"
check_summary
