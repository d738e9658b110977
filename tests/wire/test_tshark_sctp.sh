#!/usr/bin/env bash
# Wire test of DDP over SCTP (RFC 5043) carried in UDP (RFC 6951):
# capture a uiwarp session on lo (uiwarp-wiretest --llp sctp: every RDMA
# operation in both directions, messages of several segments, a graceful
# close, then a second connection that ends in a Terminate) and decode it
# with tshark's SCTP dissector, tests/wire/ddp_sctp.lua for the DDP-SSN
# and Session Control chunks, and tshark's DDP/RDMAP dissector for the
# DDP segments.
#
# Fails on any UDP datagram of the session's port that is not SCTP, an
# SCTP packet of another SCTP port, a bad SCTP checksum (CRC32c), a DATA
# chunk without the U flag (RFC 5043 §10), a fragmented one (§9), one
# whose PPID is neither 16 nor 17 (§5.2), an INIT or INIT-ACK without
# the Adaptation Layer Indication 1 (§5.1), a DDP Segment Chunk whose DDP
# or RDMAP header did not decode or whose DDP or RDMAP version is not 1,
# a Session Control chunk without a function code, DDP-SSNs that do not
# run 0, 1, 2, ... without a gap from each session's first control chunk
# (§5.2.1, §6, §6.1), an Initiate not answered by one Accept or Reject, an
# accepted session without a Session Terminate (§6.2), any malformed frame
# or expert error (ddp_sctp.lua flags private data over 512 octets, a
# Terminate with private data, unknown function codes and short chunks),
# or RDMAP message counts that differ from what was sent.  A DATA chunk
# that SCTP sent again (same TSN, same direction) counts once.
#
# usage: test_tshark_sctp.sh <build-dir> <source-dir>
# Needs capture rights on lo, tshark and dumpcap; missing tools fail the
# test.  The capture is kept in <build-dir>/wire-session-sctp.pcapng.
#
# UIW_WIRE_PCAP=FILE checks FILE, a capture made before, instead of
# running a session: nothing is captured, and UIW_WIRE_TOOL_OUT=FILE gives
# what uiwarp-wiretest printed for it ("port", "udp", "messages" and
# "multi" lines).  tests/wire/test_ddp_sctp_lua.sh checks this part so,
# against captures that tests/wire/sctp_pcap.py writes.
set -uo pipefail

build=${1:?usage: test_tshark_sctp.sh <build-dir> <source-dir>}
src=${2:-$(cd "$(dirname "$0")/../.." && pwd)}
tool=$build/uiwarp-wiretest
timeout_s=${UIW_TEST_TIMEOUT_S:-60}
lua=$src/tests/wire/ddp_sctp.lua

# shellcheck source=../check_lib.sh
. "$(dirname "$0")/../check_lib.sh"

command -v tshark >/dev/null || fail "tshark is not installed (run scripts/install-deps.sh as root)"
[ -r "$lua" ] || fail "$lua is missing"

# shellcheck source=wire_lib.sh
. "$(dirname "$0")/wire_lib.sh"

# The session, captured: sets cap, port (SCTP) and udp (the listener's
# UDP port); the program's output is in $work/tool.out.
capture_session() {
	echo "=== session over SCTP in UDP"
	# 1. The session program: it listens, prints its SCTP port and the
	#    UDP port that carries it, and waits for a line on stdin.
	wire_start "$tool" --llp sctp -w -t -c on -m off
	wire_line port
	port=$wire_value
	wire_line udp
	udp=$wire_value

	# 2. Capture the UDP port on lo.  An active end sends from a UDP port
	#    of its own, to which the listener answers (RFC 6951 §5.4): both
	#    directions have the listener's port on one side.
	cap=$work/session-sctp.pcapng
	wire_capture "$cap" "udp port $udp" "$udp"

	# 3. Run the session.
	wire_run || return
	cp "$cap" "$build/wire-session-sctp.pcapng" 2>/dev/null &&
		echo "capture kept in $build/wire-session-sctp.pcapng"
}

check_capture() {
	local dec f nframes others bad fields s notlast

	# 4. Decode.  Port 9899 (RFC 6951 §5.1) is SCTP to tshark already;
	#    another one is named.  TSN analysis is off: with it, tshark
	#    hands no retransmitted chunk to the payload's dissector, and the
	#    chunks' fields would no longer line up (retransmissions are
	#    recognised below, by TSN).  The payload heuristics for
	#    RPC-over-RDMA and SMB Direct would misread our test patterns.
	dec=(-r "$cap" -X "lua_script:$lua" -o sctp.checksum:crc-32c
	     -o sctp.tsn_analysis:FALSE
	     --disable-heuristic rpcrdma_iwarp --disable-heuristic smb_direct_iwarp)
	[ "$udp" -eq 9899 ] || dec+=(-d "udp.port==$udp,sctp")
	f="udp.port == $udp"
	wire_lua "$lua" "$cap"

	nframes=$(ts "${dec[@]}" -Y "$f" | wc -l)
	[ "$nframes" -gt 0 ] || fail "no frames of UDP port $udp in the capture"
	echo "frames on UDP port $udp: $nframes"

	others=$(ts "${dec[@]}" -Y "$f && !sctp")
	[ -z "$others" ] || fail "UDP datagrams on port $udp that are not SCTP:
	$(echo "$others" | sed -n 1,20p)"
	others=$(ts "${dec[@]}" -Y "$f && sctp && !(sctp.port == $port)")
	[ -z "$others" ] || fail "SCTP packets on UDP port $udp without SCTP port $port:
	$(echo "$others" | sed -n 1,20p)"

	bad=$(ts "${dec[@]}" -Y "$f && sctp.checksum.status != 1" -T fields \
		-e frame.number -e sctp.checksum -e sctp.checksum.status)
	[ -z "$bad" ] || fail "SCTP packets whose checksum is not good (frame, checksum, status):
	$(echo "$bad" | sed -n 1,20p)"

	# 5. Chunk by chunk.  The fields of DATA chunks line up in each
	#    frame: ddp_sctp.ssn for every one, ddp_sctp.fc for PPID 17, DDP
	#    and RDMAP headers for PPID 16, once it is checked that there
	#    are as many as there are chunks of each kind.
	fields=$work/chunks.tsv
	ts "${dec[@]}" -Y "$f && sctp" -T fields -E occurrence=a -E aggregator=, \
		-E separator=/t \
		-e frame.number -e udp.srcport -e sctp.srcport \
		-e sctp.verification_tag -e sctp.chunk_type -e sctp.data_tsn_raw \
		-e sctp.data_sid -e sctp.data_payload_proto_id \
		-e sctp.data_u_bit -e sctp.data_b_bit -e sctp.data_e_bit \
		-e ddp_sctp.ssn -e ddp_sctp.fc -e iwarp_ddp.dv -e iwarp_rdma.version \
		-e iwarp_rdma.opcode -e iwarp_ddp.last_flag \
		-e sctp.adaptation_layer_indication >"$fields"
	awk -F'\t' -v out="$work/summary" "$wire_awk"'
	function flaw(msg) { printf "frame %s: %s\n", $1, msg; bad = 1 }
	{
		nc = split($5, ct, ",")
		ndata = 0; ninit = 0
		for (i = 1; i <= nc; i++) {
			t = ct[i] + 0
			if (t == 0) ndata++
			if (t == 1) inits++
			if (t == 2) initacks++
			if (t == 1 || t == 2) ninit++
		}
		na = cnt($18, ad)
		if (na != ninit)
			flaw(sprintf("%d INIT or INIT-ACK chunks but %d Adaptation Layer Indications (RFC 5043 §5.1)", ninit, na))
		for (i = 1; i <= na; i++) if (num(ad[i]) != 1)
			flaw("Adaptation Layer Indication " ad[i] ", not 1 (DDP, RFC 5043 §5.1)")
		if (ndata == 0) next
		if (cnt($6, tsn) != ndata || cnt($7, sid) != ndata || cnt($8, ppid) != ndata ||
		    cnt($9, u) != ndata || cnt($10, b) != ndata || cnt($11, e) != ndata) {
			flaw(sprintf("%d DATA chunks, but not as many TSNs, streams, PPIDs and flags", ndata))
			next
		}
		# skip: the fields of this frame do not line up with its chunks
		skip = 0; n16 = 0; n17 = 0
		for (i = 1; i <= ndata; i++) {
			p = ppid[i] + 0
			if (p == 16) n16++
			else if (p == 17) n17++
			else flaw(sprintf("DATA chunk TSN %s with PPID %s, not 16 or 17 (RFC 5043 §5.2)", tsn[i], ppid[i]))
			if (!truth(u[i]))
				flaw(sprintf("DATA chunk TSN %s without the U flag (RFC 5043 §10)", tsn[i]))
			if (!truth(b[i]) || !truth(e[i])) {
				# tshark decodes a reassembled message once
				flaw(sprintf("DATA chunk TSN %s is a fragment, B %s E %s (RFC 5043 §9)", tsn[i], b[i], e[i]))
				skip = 1
			}
		}
		if (skip) next
		nssn = cnt($12, ssn); nfc = cnt($13, fc)
		ndv = cnt($14, dv); nrv = cnt($15, rv); nop = cnt($16, op); nl = cnt($17, lf)
		if (nssn != n16 + n17) {
			flaw(sprintf("%d DATA chunks of PPID 16 or 17 but %d DDP-SSNs decoded", n16 + n17, nssn))
			skip = 1
		}
		if (nfc != n17) {
			flaw(sprintf("%d Session Control chunks but %d function codes decoded", n17, nfc))
			skip = 1
		}
		if (ndv != n16 || nrv != n16 || nop != n16 || nl != n16) {
			flaw(sprintf("%d DDP Segment Chunks but %d DDP headers, %d RDMAP headers, %d opcodes, %d Last flags", n16, ndv, nrv, nop, nl))
			skip = 1
		}
		if (skip) next
		# a direction of an association: the ports it is sent from
		# and the tag it carries (the receiving end chose it, RFC 4960
		# §8.5)
		dir = $2 "/" $3 "/" $4
		j = 0; j16 = 0; j17 = 0
		for (i = 1; i <= ndata; i++) {
			p = ppid[i] + 0
			if (p != 16 && p != 17) continue
			j++
			if (p == 16) j16++; else j17++
			key = dir " " tsn[i]
			if (key in seen) { retx++; continue }
			seen[key] = 1
			chunks++
			st = dir "/" sid[i]
			streams[st] = 1
			v = ssn[j] + 0
			nssnv[st, v]++
			if (v > maxssn[st]) maxssn[st] = v
			if (p == 16) {
				if (num(dv[j16]) != 1) flaw("DDP version " dv[j16])
				if (num(rv[j16]) != 1) flaw("RDMAP version " rv[j16])
				o = num(op[j16])
				segs[o]++
				if (truth(lf[j16])) msgs[o]++; else notlast++
			} else {
				c = fc[j17] + 0
				fcs[c]++
				# a session begins, in each direction, with its
				# Initiate, Accept or Reject (RFC 5043 §6.2, §6.3)
				if (c != 4) starts[st]++
			}
		}
	}
	END {
		for (st in streams) {
			# RFC 5043 §6.1: each session numbers from 0; §6: no gaps.
			# Counted per value, in no order (§10: TSNs need not follow
			# the DDP-SSNs), each session adds one to each of 0..its
			# last.  (A session of 65536 chunks on a stream would wrap
			# the 16 bits: the sessions here are far shorter.)
			if (nssnv[st, 0] + 0 != starts[st] + 0) {
				printf "stream %s: DDP-SSN 0 on %d chunks, %d sessions began\n", st, nssnv[st, 0], starts[st]
				bad = 1
			}
			for (v = 1; v <= maxssn[st]; v++) if (nssnv[st, v] + 0 > nssnv[st, v - 1] + 0) {
				printf "stream %s: DDP-SSN %d on %d chunks, %d on %d: a gap (RFC 5043 §6)\n", st, v, nssnv[st, v], v - 1, nssnv[st, v - 1] + 0
				bad = 1
				break
			}
		}
		init = fcs[1] + fcs[5]; acc = fcs[2] + fcs[6]; rej = fcs[3] + fcs[7]
		if (inits + 0 == 0 || initacks + 0 == 0) {
			printf "%d INIT and %d INIT-ACK chunks\n", inits, initacks
			bad = 1
		}
		if (init == 0) { print "no Initiate"; bad = 1 }
		if (init != acc + rej) {
			printf "%d Initiates, %d Accepts and %d Rejects\n", init, acc, rej
			bad = 1
		}
		if (fcs[4] + 0 < acc) {
			printf "%d accepted sessions but %d Session Terminates (RFC 5043 §6.2)\n", acc, fcs[4]
			bad = 1
		}
		printf "chunks %d retransmitted %d notlast %d initiate %d accept %d reject %d terminate %d\n", chunks, retx, notlast, init, acc, rej, fcs[4] > out
		for (o = 0; o < 8; o++) printf "op%d %d %d\n", o, msgs[o] + 0, segs[o] + 0 >> out
		exit bad
	}' "$fields" || fail "chunks that break RFC 5043 or did not decode (see above)"
	cat "$work/summary"
	read -r _ s _ _ _ notlast _ <"$work/summary"
	[ "$s" -gt 0 ] || fail "no DATA chunks decoded"

	wire_no_errors "$f" "${dec[@]}"

	# 6. RDMAP messages against what the program sent.
	wire_check_messages "$work/summary" "$notlast"
	echo "session over SCTP: $s DATA chunks decoded, checksums good"
}

if [ -n "${UIW_WIRE_PCAP:-}" ]; then
	[ -r "$UIW_WIRE_PCAP" ] || fail "UIW_WIRE_PCAP: cannot read $UIW_WIRE_PCAP"
	[ -r "${UIW_WIRE_TOOL_OUT:-}" ] ||
		fail "UIW_WIRE_PCAP needs UIW_WIRE_TOOL_OUT, what uiwarp-wiretest printed for that session"
	echo "=== capture $UIW_WIRE_PCAP"
	cap=$UIW_WIRE_PCAP
	cp "$UIW_WIRE_TOOL_OUT" "$work/tool.out"
	port=$(sed -n 's/^port //p' "$work/tool.out")
	udp=$(sed -n 's/^udp //p' "$work/tool.out")
	[ "$port" -gt 0 ] 2>/dev/null && [ "$udp" -gt 0 ] 2>/dev/null ||
		fail "no port and udp lines in $UIW_WIRE_TOOL_OUT"
else
	command -v dumpcap >/dev/null || fail "dumpcap is not installed (run scripts/install-deps.sh as root)"
	[ -x "$tool" ] || fail "$tool is missing: build the tree first"
	timeout "$timeout_s" "$tool" --help >"$work/help" 2>&1
	grep -q -e '--llp' "$work/help" ||
		fail "uiwarp-wiretest has no --llp sctp: its --help says
	$(cat "$work/help")"
	wire_retry capture_session
fi
check_capture
echo "PASS"
