#!/usr/bin/env bash
# Check of tests/wire/ddp_sctp.lua, the tshark dissector of DDP over SCTP
# (RFC 5043), and of the decoding part of test_tshark_sctp.sh, on captures
# that tests/wire/sctp_pcap.py builds octet by octet (its docstring lists
# every frame):
#   - session.pcap decodes to exactly the values put in: checksums good,
#     the Adaptation Layer Indication 1 in INIT and INIT-ACK, the U flag
#     on every DATA chunk, DDP-SSNs, function codes, private data
#     lengths, the IRD/ORD word and its flags, and the DDP and RDMAP
#     headers of each DDP Segment Chunk; nothing malformed, no expert
#     error;
#   - each chunk of malformed.pcap raises its own expert error of
#     ddp_sctp.lua, and only that, and no exception;
#   - no chunk of session.pcap cut short (truncated.pcap) makes the Lua
#     dissector fail;
#   - test_tshark_sctp.sh passes session.pcap (UIW_WIRE_PCAP) and fails
#     each bad-*.pcap, and a message count that differs, with the
#     reason it must give.
#
# usage: test_ddp_sctp_lua.sh <build-dir> <source-dir>
# Needs tshark and python3; missing tools fail the test.
set -uo pipefail

build=${1:?usage: test_ddp_sctp_lua.sh <build-dir> <source-dir>}
src=${2:-$(cd "$(dirname "$0")/../.." && pwd)}
here=$src/tests/wire
lua=$here/ddp_sctp.lua
timeout_s=${UIW_TEST_TIMEOUT_S:-60}

# shellcheck source=../check_lib.sh
. "$here/../check_lib.sh"

command -v tshark >/dev/null || fail "tshark is not installed (run scripts/install-deps.sh as root)"
command -v python3 >/dev/null || fail "python3 is not installed"

# shellcheck source=wire_lib.sh
. "$here/wire_lib.sh"

pcaps=$work/pcaps
python3 "$here/sctp_pcap.py" "$pcaps" >"$work/gen.out" 2>&1 ||
	fail "sctp_pcap.py failed: $(cat "$work/gen.out")"
ok "sctp_pcap.py wrote the captures (its CRC32c gives RFC 3720 §B.4's values)"
wire_lua "$lua" "$pcaps/session.pcap"
ok "tshark loads ddp_sctp.lua"

dec=(-X "lua_script:$lua" -o sctp.checksum:crc-32c
     --disable-heuristic rpcrdma_iwarp --disable-heuristic smb_direct_iwarp)

# Fields of tshark -T fields, space-separated, an empty one as "."
dots() {
	awk -F'\t' -v OFS=' ' '{ $1 = $1; for (i = 1; i <= NF; i++) if ($i == "") $i = "."; print }' "$1"
}

# $1: what; $2: file of expected lines; $3: file of decoded lines
same() {
	if diff -u "$2" "$3" >"$work/diff"; then
		ok "$1"
	else
		bad "$1: decoded values differ (- expected, + decoded)"
		show "$work/diff"
	fi
}

# --- session.pcap: SCTP.  Per frame: chunk types, checksum status (1:
#     good), U flags and PPIDs of the DATA chunks, Adaptation Layer
#     Indications.
ts -r "$pcaps/session.pcap" "${dec[@]}" -T fields -E occurrence=a \
	-E aggregator=, -e frame.number -e sctp.chunk_type \
	-e sctp.checksum.status -e sctp.data_u_bit \
	-e sctp.data_payload_proto_id -e sctp.adaptation_layer_indication \
	>"$work/sctp.tsv"
cat >"$work/sctp.want" <<'EOF'
1 1 1 . . 0x00000001
2 2 1 . . 0x00000001
3 10 1 . . .
4 11 1 . . .
5 0 1 1 17 .
6 3,0 1 1 17 .
7 3,0,0 1 1,1 16,16 .
8 0 1 1 16 .
9 0 1 1 16 .
10 0 1 1 16 .
11 0 1 1 16 .
12 0 1 1 16 .
13 3,0 1 1 16 .
14 0 1 1 16 .
15 0 1 1 16 .
16 0 1 1 17 .
17 3,0 1 1 17 .
18 3,0 1 1 17 .
19 3 1 . . .
20 7 1 . . .
21 8 1 . . .
22 14 1 . . .
EOF
same "session.pcap, SCTP: checksums, U flags, PPIDs, Adaptation Layer Indications" \
	"$work/sctp.want" <(dots "$work/sctp.tsv")

# --- Session Control chunks: DDP-SSN, function code, private data length
#     and octets, the IRD/ORD word, IRD, ORD, A, B, C, D.
ts -r "$pcaps/session.pcap" "${dec[@]}" -Y "sctp.data_payload_proto_id == 17" \
	-T fields -E occurrence=a -E aggregator=, -e frame.number \
	-e ddp_sctp.ssn -e ddp_sctp.fc -e ddp_sctp.pd_len -e ddp_sctp.pd \
	-e ddp_sctp.ird_ord -e ddp_sctp.ird -e ddp_sctp.ord \
	-e ddp_sctp.peer2peer -e ddp_sctp.rtr_send -e ddp_sctp.rtr_write \
	-e ddp_sctp.rtr_read >"$work/ctl.tsv"
cat >"$work/ctl.want" <<'EOF'
5 0 5 15 801040087569776172702d696e6974 0x80104008 16 8 1 0 0 1
6 0 6 4 40080010 0x40080010 8 16 0 1 0 0
16 4 4 0 . . . . . . . .
17 0 1 5 7265747279 . . . . . . .
18 0 3 4 62757379 . . . . . . .
EOF
same "session.pcap, Session Control: DDP-SSNs, function codes, private data, IRD/ORD" \
	"$work/ctl.want" <(dots "$work/ctl.tsv")

# --- DDP Segment Chunks: DDP-SSN, T and L flags, opcode, STag, TO, QN,
#     MSN, MO, the STag to invalidate, the Read Request's sink STag and
#     size, the Terminate's layer and code.
ts -r "$pcaps/session.pcap" "${dec[@]}" -Y "sctp.data_payload_proto_id == 16" \
	-T fields -E occurrence=a -E aggregator=, -e frame.number \
	-e ddp_sctp.ssn -e iwarp_ddp.tagged_flag -e iwarp_ddp.last_flag \
	-e iwarp_rdma.opcode -e iwarp_ddp.stag -e iwarp_ddp.tagged_offset \
	-e iwarp_ddp.qn -e iwarp_ddp.msn -e iwarp_ddp.mo \
	-e iwarp_rdma.inval_stag -e iwarp_rdma.sinkstag -e iwarp_rdma.rdmardsz \
	-e iwarp_rdma.term_layer -e iwarp_rdma.term_errcode_ddp_tagged \
	>"$work/seg.tsv"
cat >"$work/seg.want" <<'EOF'
7 1,2 1,1 0,1 0x00,0x00 0x00001234,0x00001234 0x0000000000001000,0x0000000000001020 . . . . . . . .
8 3 0 1 0x03 . . 0 1 0 . . . . .
9 4 0 1 0x04 . . 0 2 0 2882338817 . . . .
10 5 0 1 0x05 . . 0 3 0 . . . . .
11 6 0 1 0x06 . . 0 4 0 2882338818 . . . .
12 7 0 1 0x01 . . 1 1 0 . 0x00005678 64 . .
13 1 1 1 0x02 0x00005678 0x0000000000002000 . . . . . . . .
14 2 0 1 0x03 . . 0 1 0 . . . . .
15 3 0 1 0x07 . . 2 1 0 . . . 0x01 0x00
EOF
same "session.pcap, DDP Segment Chunks: DDP-SSNs and DDP/RDMAP headers" \
	"$work/seg.want" <(dots "$work/seg.tsv")

bad_frames=$(ts -r "$pcaps/session.pcap" "${dec[@]}" -Y _ws.malformed)
experr=$(wire_expert_errors "frame" -r "$pcaps/session.pcap" "${dec[@]}")
if [ -z "$bad_frames" ] && [ -z "$experr" ]; then
	ok "session.pcap: no malformed frame, no expert error"
else
	bad "session.pcap: malformed frames or expert errors:
$bad_frames
$experr"
fi

# --- malformed.pcap: frame by frame, the ddp_sctp expert items raised
#     (all of severity error), and whether an exception or a Lua error
#     came with them.
experts=(short_chunk short_ctl unknown_fc term_pd pd_too_long short_ddp no_ird_ord)
args=()
for x in "${experts[@]}"; do
	args+=(-e "ddp_sctp.$x")
done
ts -r "$pcaps/malformed.pcap" "${dec[@]}" -T fields -E occurrence=a \
	-E aggregator=, -e frame.number -e _ws.expert.severity \
	-e _ws.expert.message "${args[@]}" >"$work/mal.tsv"
awk -F'\t' -v names="${experts[*]}" '
BEGIN { split(names, name, " ") }
{
	line = $1
	for (i = 4; i <= NF; i++) if ($i != "") line = line " " name[i - 3]
	n = split($2, sev, ",")
	for (i = 1; i <= n; i++) if (sev[i] + 0 != 8388608) line = line " severity:" sev[i]
	if ($3 ~ /Exception occurred|Lua Error/) line = line " exception"
	print line
}' "$work/mal.tsv" >"$work/mal.got"
cat >"$work/mal.want" <<'EOF'
1 short_chunk
2 short_ctl
3 unknown_fc
4 term_pd
5 pd_too_long
6 short_ddp
7 short_ddp
8 no_ird_ord
EOF
same "malformed.pcap: each flaw raises its own expert error, and nothing else" \
	"$work/mal.want" "$work/mal.got"

# --- truncated.pcap: the dissector decodes every cut chunk without a Lua
#     error (an exception that iwarp_ddp_rdmap throws on an RDMAP header
#     cut short is its own report, and allowed).
ts -r "$pcaps/truncated.pcap" "${dec[@]}" -T fields -e frame.number \
	-e ddp_sctp -e _ws.expert.message >"$work/trunc.tsv"
nt=$(wc -l <"$work/trunc.tsv")
undecoded=$(awk -F'\t' '$2 == "" { print $1 }' "$work/trunc.tsv" | tr '\n' ' ')
luaerr=$(grep -c 'Lua Error' "$work/trunc.tsv")
if [ "$nt" -gt 100 ] && [ -z "$undecoded" ] && [ "$luaerr" -eq 0 ]; then
	ok "truncated.pcap: $nt chunks cut short, each decoded by ddp_sctp without a Lua error"
else
	bad "truncated.pcap: $nt frames, not decoded by ddp_sctp: '$undecoded', Lua errors: $luaerr"
	grep 'Lua Error' "$work/trunc.tsv" >"$work/luaerr"
	show "$work/luaerr"
fi

# --- test_tshark_sctp.sh on the captures: $1 capture, $2 program output,
#     $3 what its last line must say ("PASS" or part of the reason).
session_check() {
	local rc=0
	UIW_WIRE_PCAP=$1 UIW_WIRE_TOOL_OUT=$2 bash "$here/test_tshark_sctp.sh" \
		"$build" "$src" >"$work/check.out" 2>&1 || rc=$?
	if [ "$3" = PASS ]; then
		[ "$rc" -eq 0 ] && [ "$(sed -n '$p' "$work/check.out")" = PASS ]
	else
		[ "$rc" -ne 0 ] && grep -F -e "$3" "$work/check.out" >/dev/null
	fi
}
if session_check "$pcaps/session.pcap" "$pcaps/session.out" PASS; then
	ok "test_tshark_sctp.sh passes session.pcap"
else
	bad "test_tshark_sctp.sh does not pass session.pcap"
	SHOW_END=1 show "$work/check.out"
fi
while read -r flaw reason; do
	if session_check "$pcaps/bad-$flaw.pcap" "$pcaps/session.out" "$reason"; then
		ok "test_tshark_sctp.sh fails bad-$flaw.pcap: $reason"
	else
		bad "test_tshark_sctp.sh does not fail bad-$flaw.pcap with '$reason'"
		SHOW_END=1 show "$work/check.out"
	fi
done <<'EOF'
crc SCTP packets whose checksum is not good
ordered DATA chunk TSN 1004 without the U flag (RFC 5043 §10)
ppid DATA chunk TSN 0 with PPID 18, not 16 or 17 (RFC 5043 §5.2)
noadapt 1 INIT or INIT-ACK chunks but 0 Adaptation Layer Indications
ssngap DDP-SSN 4 on 1 chunks, 3 on 0: a gap (RFC 5043 §6)
EOF
sed 's/^messages write=1 /messages write=2 /' "$pcaps/session.out" >"$work/more.out"
if session_check "$pcaps/session.pcap" "$work/more.out" "write: tshark decoded 1 messages, 2 were sent"; then
	ok "test_tshark_sctp.sh fails a session whose message counts differ"
else
	bad "test_tshark_sctp.sh does not fail a session whose message counts differ"
	SHOW_END=1 show "$work/check.out"
fi

check_summary
