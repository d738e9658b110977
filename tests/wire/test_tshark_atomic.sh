#!/usr/bin/env bash
# Wire test of RFC 7306: capture a uiwarp session with atomics and
# immediate data on lo and decode it with tshark's iWARP dissectors.  The
# session (uiwarp-atomicbench -W) sends FetchAdd and CmpSwap, plain and
# masked, in both directions, Immediate Data with and without SE, Writes
# with Immediate (one of several FPDUs), Reads and Sends among them,
# closes gracefully, then opens a second connection whose misaligned
# atomic ends in a Terminate.  Runs without markers, then with markers in
# both directions, CRC on.
#
# Fails on any malformed frame or expert error, any bad CRC, any TCP
# payload that is not MPA/DDP/RDMAP, RDMAP message counts per opcode that
# differ from what was sent, an Atomic Request not on queue 1 or with an
# AOpCode other than FetchAdd (0) and CmpSwap (2), an Atomic Response not
# on queue 3 or whose Original Request Identifier matches no request,
# Immediate Data not on queue 0 or not exactly 8 octets, or a Terminate
# other than "RDMAP remote operation error, catastrophic error localized
# to the RDMAP stream" with M and D and without R.  tshark 4.0 names the
# Immediate Data opcodes (8, 9) "Unknown": that is expected.
#
# usage: test_tshark_atomic.sh <build-dir> <source-dir>
# Needs capture rights on lo and tshark/dumpcap; missing tools fail the
# test.  The captures are kept in <build-dir>/wire-atomic-markers-*.pcapng.
set -uo pipefail

build=${1:?usage: test_tshark_atomic.sh <build-dir> <source-dir>}
tool=$build/uiwarp-atomicbench
timeout_s=${UIW_TEST_TIMEOUT_S:-60}

# shellcheck source=../check_lib.sh
. "$(dirname "$0")/../check_lib.sh"

command -v tshark >/dev/null || fail "tshark is not installed"
command -v dumpcap >/dev/null || fail "dumpcap is not installed"
[ -x "$tool" ] || fail "$tool is missing: build the tree first"

# shellcheck source=wire_lib.sh
. "$(dirname "$0")/wire_lib.sh"

# The RDMAP opcodes by number (RFC 5040 §4.3, RFC 7306 §4.1), as the
# session program names them.
names=(write read_req read_resp send send_inv send_se send_se_inv
       terminate imm imm_se atomic_req atomic_resp)

session() {
	local markers=$1 port cap i

	echo "=== session with atomics, CRC on, markers $markers"
	wire_start "$tool" -W -w -c on -m "$markers"
	wire_line port
	port=$wire_value
	cap=$work/atomic-markers-$markers.pcapng
	wire_capture "$cap" "tcp port $port" "$port"
	wire_run || return
	cp "$cap" "$build/wire-atomic-markers-$markers.pcapng" 2>/dev/null &&
		echo "capture kept in $build/wire-atomic-markers-$markers.pcapng"

	# Decode: MPA by its heuristic (the capture has the MPA Request
	# and Reply); no RPC-over-RDMA or SMB Direct guesses on our data.
	dec=(-r "$cap" -2 -o tcp.desegment_tcp_streams:TRUE
	     -o tcp.try_heuristic_first:TRUE --enable-heuristic iwarp_mpa_tcp
	     --disable-heuristic rpcrdma_iwarp
	     --disable-heuristic smb_direct_iwarp)
	tcpf="tcp.port == $port && !tcp.analysis.retransmission"
	tcpf="$tcpf && !tcp.analysis.fast_retransmission"
	tcpf="$tcpf && !tcp.analysis.spurious_retransmission"

	[ "$(ts "${dec[@]}" -Y "$tcpf" | wc -l)" -gt 0 ] ||
		fail "no frames of port $port in the capture"
	bad=$(ts "${dec[@]}" -Y "$tcpf && _ws.malformed")
	[ -z "$bad" ] || fail "malformed frames:
$bad"
	experr=$(ts "${dec[@]}" -Y "$tcpf && _ws.expert" -T fields \
		-E occurrence=a -e frame.number -e _ws.expert.severity \
		-e _ws.expert.message |
		awk -F'\t' '{ n = split($2, s, ","); for (i = 1; i <= n; i++)
			if (s[i] + 0 >= 8388608) { print; break } }')
	[ -z "$experr" ] || fail "expert errors:
$experr"
	undecoded=$(ts "${dec[@]}" -Y "$tcpf && tcp.len > 0 && !iwarp_mpa && !tcp.reassembled_in")
	[ -z "$undecoded" ] || fail "TCP payload not decoded as MPA:
$(echo "$undecoded" | sed -n 1,20p)"

	# One line per RDMAP header: opcode, Last, queue, MSN, ULPDU length;
	# and the atomic fields.
	ts "${dec[@]}" -Y "$tcpf && iwarp_rdma" -T fields -E occurrence=a \
		-E aggregator=, -e frame.number -e iwarp_rdma.opcode \
		-e iwarp_ddp.last_flag -e iwarp_ddp.qn -e iwarp_mpa.ulpdulength \
		-e iwarp_ddp.tagged_flag >"$work/hdrs.tsv"
	ts "${dec[@]}" -Y "$tcpf && iwarp_rdma.atomic.opcode" -T fields \
		-E occurrence=a -E aggregator=, -e iwarp_rdma.atomic.opcode |
		tr ',' '\n' >"$work/aops.txt"
	ts "${dec[@]}" -Y "$tcpf && iwarp_rdma.atomic.request_identifier" \
		-T fields -E occurrence=a -E aggregator=, \
		-e iwarp_rdma.atomic.request_identifier | tr ',' '\n' \
		>"$work/areq.txt"
	ts "${dec[@]}" -Y "$tcpf && iwarp_rdma.atomic.original_request_identifier" \
		-T fields -E occurrence=a -E aggregator=, \
		-e iwarp_rdma.atomic.original_request_identifier | tr ',' '\n' \
		>"$work/aresp.txt"
	ts "${dec[@]}" -Y "$tcpf && iwarp_rdma.terminate" -T fields \
		-e iwarp_rdma.term_layer -e iwarp_rdma.term_etype_rdma \
		-e iwarp_rdma.term_errcode_rdma -e iwarp_rdma.term_hdrct_m \
		-e iwarp_rdma.hdrct_d -e iwarp_rdma.hdrct_r >"$work/term.tsv"

	awk -F'\t' -v out="$work/summary" '
	function num(s,   v, i, c) {
		if (s !~ /^0[xX]/) return s + 0
		v = 0
		for (i = 3; i <= length(s); i++) {
			c = index("0123456789abcdef", tolower(substr(s, i, 1)))
			if (c == 0) return -1
			v = v * 16 + c - 1
		}
		return v
	}
	function truth(v) { return v == "1" || v == "True" || v == "true" }
	{
		n = split($2, op, ","); split($3, lf, ","); split($5, ul, ",")
		split($6, tg, ",")
		nq = split($4, qn, ","); q = 0
		for (i = 1; i <= n; i++) {
			o = num(op[i])
			if (truth(lf[i])) msgs[o]++
			if (truth(tg[i])) continue
			q++
			if (o == 8 || o == 9) {
				if (num(qn[q]) != 0 || num(ul[i]) != 26) {
					printf "frame %s: Immediate Data on queue %s, ULPDU %s\n", $1, qn[q], ul[i]; err = 1 }
			} else if (o == 10) {
				if (num(qn[q]) != 1 || num(ul[i]) != 70) {
					printf "frame %s: Atomic Request on queue %s, ULPDU %s\n", $1, qn[q], ul[i]; err = 1 }
			} else if (o == 11) {
				if (num(qn[q]) != 3 || num(ul[i]) != 30) {
					printf "frame %s: Atomic Response on queue %s, ULPDU %s\n", $1, qn[q], ul[i]; err = 1 }
			}
		}
	}
	END {
		for (o = 0; o < 12; o++) printf "op%d %d\n", o, msgs[o] + 0 > out
		printf "fpdus %d\n", fpdus + 0 > out
		exit err
	}
	{ fpdus += n }' "$work/hdrs.tsv" || fail "RDMAP headers that do not follow RFC 7306 (see above)"

	# Every FPDU's CRC checks out.
	fpdus=$(awk '$1 == "fpdus" { print $2 }' "$work/summary")
	ts "${dec[@]}" -Y "$tcpf && iwarp_mpa.crc_check" -V -O iwarp_mpa >"$work/crc.txt"
	bad=$(grep -c 'Bad CRC32' "$work/crc.txt")
	good=$(grep -c 'Good CRC32' "$work/crc.txt")
	[ "$bad" -eq 0 ] || fail "$bad FPDUs with a bad CRC"
	[ "$good" -eq "$fpdus" ] || fail "$good good CRCs for $fpdus FPDUs"

	sent=$(sed -n 's/^messages //p' "$work/tool.out")
	for ((i = 0; i < 12; i++)); do
		want=$(echo "$sent" | tr ' ' '\n' | sed -n "s/^${names[$i]}=//p")
		got=$(awk -v k="op$i" '$1 == k { print $2 }' "$work/summary")
		[ -n "$want" ] || fail "the session did not report ${names[$i]}"
		[ "$got" -eq "$want" ] ||
			fail "${names[$i]}: tshark decoded $got messages, $want were sent"
		echo "${names[$i]}: $got"
	done
	for o in 8 9 10 11; do
		[ "$(awk -v k="op$o" '$1 == k { print $2 }' "$work/summary")" -gt 0 ] ||
			fail "no RDMAP message with opcode $o decoded"
	done

	# AOpCodes and Request Identifiers: every Response answers a Request.
	[ "$(wc -l <"$work/aops.txt")" -eq "$(wc -l <"$work/areq.txt")" ] ||
		fail "AOpCodes and Request Identifiers differ in number"
	awk '{ if ($1 + 0 != 0 && $1 + 0 != 2) { print "AOpCode " $1; e = 1 } }
		END { exit e }' "$work/aops.txt" || fail "Atomic Requests with an unexpected AOpCode"
	grep -qx 0 "$work/aops.txt" && grep -qx 2 "$work/aops.txt" ||
		fail "expected both FetchAdd (0) and CmpSwap (2) Requests"
	sort "$work/areq.txt" >"$work/ids.req"
	sort "$work/aresp.txt" >"$work/ids.resp"
	[ -s "$work/ids.resp" ] || fail "no Atomic Response decoded"
	lost=$(comm -13 "$work/ids.req" "$work/ids.resp" | sed -n 1,5p | tr '\n' ' ')
	[ -z "$lost" ] || fail "Atomic Responses for Request Identifiers never requested: $lost"
	[ "$(wc -l <"$work/ids.req")" -eq $(( $(wc -l <"$work/ids.resp") + 1 )) ] ||
		fail "$(wc -l <"$work/ids.req") Atomic Requests, $(wc -l <"$work/ids.resp") Responses (one request must go unanswered: the misaligned one)"

	# The Terminate of the misaligned atomic (RFC 7306 §8.2, §8.1 rule 2).
	[ "$(wc -l <"$work/term.tsv")" -eq 1 ] || fail "expected one Terminate: $(cat "$work/term.tsv")"
	read -r layer etype ecode m d r <"$work/term.tsv"
	[ "$(printf '%d' "$layer")" -eq 0 ] && [ "$(printf '%d' "$etype")" -eq 2 ] &&
		[ "$(printf '%d' "$ecode")" -eq 7 ] ||
		fail "Terminate $layer/$etype/$ecode, expected 0/2/0x07"
	case "$m$d$r" in
	11[0F]* | TrueTrueFalse | truetruefalse) ;;
	*) fail "Terminate header bits M=$m D=$d R=$r, expected M and D only" ;;
	esac
	echo "session with markers $markers: decoded, counts match, Terminate 0/2/7"
}

wire_retry session off
wire_retry session on
echo PASS
