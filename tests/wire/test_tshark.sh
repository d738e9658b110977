#!/usr/bin/env bash
# Wire test: capture uiwarp sessions on lo and decode them with tshark's
# iWARP dissectors (MPA, DDP/RDMAP).  Each session (uiwarp-wiretest) uses
# every RDMA operation in both directions, messages of several FPDUs and a
# graceful close, then a second connection that ends in a Terminate, all
# with CRC on; the first session runs without markers, the second with
# markers in both directions.  Fails on any malformed frame or expert
# error, any bad CRC, any TCP payload that is not MPA/DDP/RDMAP, any FPDU
# whose DDP or RDMAP header did not decode, missing markers, or RDMAP
# message counts that differ from what was sent.
#
# usage: test_tshark.sh <build-dir> <source-dir>
# Needs root (or capture rights on lo) and tshark/dumpcap
# (scripts/install-deps.sh installs them).  Missing tools fail the test.
# The captures are kept in <build-dir>/wire-session-markers-{on,off}.pcapng.
# Also checks FPDU alignment: at most UIW_WIRE_ALIGN_MAX % (20) of the
# data segments may start inside an FPDU.
set -uo pipefail

build=${1:?usage: test_tshark.sh <build-dir> <source-dir>}
tool=$build/uiwarp-wiretest
timeout_s=${UIW_TEST_TIMEOUT_S:-60}
# UIW_WIRE_TAG: a name part for the kept captures (test_tshark_mtu.sh);
# UIW_WIRE_ALIGN_MAX: data segments that may start inside an FPDU, in %.
tag=${UIW_WIRE_TAG:-}
align_max=${UIW_WIRE_ALIGN_MAX:-20}

# shellcheck source=../check_lib.sh
. "$(dirname "$0")/../check_lib.sh"

command -v tshark >/dev/null || fail "tshark is not installed (run scripts/install-deps.sh as root)"
command -v dumpcap >/dev/null || fail "dumpcap is not installed (run scripts/install-deps.sh as root)"
[ -x "$tool" ] || fail "$tool is missing: build the tree first"

# shellcheck source=wire_lib.sh
. "$(dirname "$0")/wire_lib.sh"

# One session, captured and decoded; $1: markers on or off.
check_session() {
	local markers=$1 segs inside port cap dec tcpf nframes bad
	local hint undecoded lost fpdus crcs nmarkers notlast reqs reps good

	echo "=== session with CRC on, markers $markers"
	# 1. The session program: it listens, prints its port and waits for a
	#    line on stdin before it connects.
	wire_start "$tool" -w -t -c on -m "$markers"
	wire_line port
	port=$wire_value

	# 2. Capture that port on lo (and a probe port).
	cap=$work/session-markers-$markers.pcapng
	wire_capture "$cap" "tcp port $port" "$port"

	# 3. Run the session.
	wire_run || return
	cp "$cap" "$build/wire-session$tag-markers-$markers.pcapng" 2>/dev/null &&
		echo "capture kept in $build/wire-session$tag-markers-$markers.pcapng"

	# 4. Decode.  MPA is found by its heuristic (the capture holds the MPA
	#    Request and Reply), tried before the dissectors registered for port
	#    numbers, which an ephemeral port may happen to hit; the payload
	#    heuristics for RPC-over-RDMA and SMB Direct would misread our test
	#    patterns.
	#    Loopback reorders packets now and then (each CPU has its own
	#    backlog of packets to deliver, and a sender that moves between
	#    CPUs leaves some behind): tshark puts them back in order.
	dec=(-r "$cap" -2 -o tcp.desegment_tcp_streams:TRUE
	     -o tcp.reassemble_out_of_order:TRUE
	     -o tcp.try_heuristic_first:TRUE --enable-heuristic iwarp_mpa_tcp
	     --disable-heuristic rpcrdma_iwarp --disable-heuristic smb_direct_iwarp)
	# Segments that carry octets for the first time (wire_tcpf).
	tcpf=$(wire_tcpf "$port")

	nframes=$(ts "${dec[@]}" -Y "$tcpf" | wc -l)
	[ "$nframes" -gt 0 ] || fail "no frames of port $port in the capture"
	echo "frames on port $port: $nframes"

	wire_no_errors "$tcpf" "${dec[@]}"

	hint=
	if [ "$markers" = on ]; then
		hint="
	(tshark 4.0 locates markers only in FPDUs that start a TCP segment and
	fill it alone: FPDU alignment, which RFC 5044 §5.1 asks senders to keep;
	an FPDU split over several segments, or sharing one, cannot be decoded.)"
	fi
	undecoded=$(ts "${dec[@]}" -Y "$tcpf && tcp.len > 0 && !iwarp_mpa && !tcp.reassembled_in")
	[ -z "$undecoded" ] || fail "TCP payload not decoded as MPA:
	$(echo "$undecoded" | sed -n 1,20p)$hint"
	# Segments of a reassembled PDU must end in a frame that decoded.
	ts "${dec[@]}" -Y "$tcpf && tcp.reassembled_in" -T fields \
		-e tcp.reassembled_in | tr ',' '\n' | sort -u >"$work/rin"
	ts "${dec[@]}" -Y "$tcpf && iwarp_mpa" -T fields -e frame.number |
		sort -u >"$work/mpaframes"
	lost=$(comm -23 "$work/rin" "$work/mpaframes" | sed -n 1,20p | tr '\n' ' ')
	[ -z "$lost" ] || fail "reassembled PDUs that did not decode as MPA, in frames: $lost$hint"

	# FPDU alignment (RFC 5044 §5.1): a segment that does not start an
	# FPDU is every segment of a reassembled PDU but its first.  TCP may
	# cut FPDUs while its windows are small or the send buffer is full,
	# so a few are allowed; a sender that packs FPDUs across segment
	# boundaries would show in most segments.
	segs=$(ts "${dec[@]}" -Y "$tcpf && tcp.len > 0" | wc -l)
	inside=$(ts "${dec[@]}" -Y "$tcpf && tcp.segments" -T fields -e tcp.segment |
		awk -F, '{ n += NF - 1 } END { print n + 0 }')
	echo "data segments $segs, starting inside an FPDU $inside (at most $align_max %)"
	[ $((inside * 100)) -le $((segs * align_max)) ] ||
		fail "$inside of $segs data segments start inside an FPDU: FPDU alignment lost"

	# Per frame: FPDUs, DDP headers, RDMAP headers, CRC checks, opcodes,
	# Last flags, markers, DDP and RDMAP versions.
	ts "${dec[@]}" -Y "$tcpf && iwarp_mpa" -T fields -E occurrence=a \
		-E aggregator=, -E separator=/t \
		-e frame.number -e iwarp_mpa.ulpdulength -e iwarp_ddp.dv \
		-e iwarp_rdma.version -e iwarp_mpa.crc_check -e iwarp_rdma.opcode \
		-e iwarp_ddp.last_flag -e iwarp_mpa.marker_fpduptr \
		-e iwarp_mpa.marker_res -e iwarp_mpa.key.req -e iwarp_mpa.key.rep \
		-e iwarp_mpa.marker_flag -e iwarp_mpa.crc_flag \
		>"$work/fields.tsv"

	awk -F'\t' -v out="$work/summary" -v wantm="$([ "$markers" = on ] && echo 1 || echo 0)" "$wire_awk"'
	{
		f = cnt($2); d = cnt($3); r = cnt($4); c = cnt($5)
		if (f != d || f != r) {
			printf "frame %s: %d FPDUs but %d DDP and %d RDMAP headers\n", $1, f, d, r
			err = 1
		}
		if (c != f) {
			printf "frame %s: %d FPDUs but %d CRC checks\n", $1, f, c
			err = 1
		}
		nd = split($3, dv, ","); for (i = 1; i <= nd; i++) if (num(dv[i]) != 1) {
			printf "frame %s: DDP version %s\n", $1, dv[i]; err = 1 }
		nr = split($4, rv, ","); for (i = 1; i <= nr; i++) if (num(rv[i]) != 1) {
			printf "frame %s: RDMAP version %s\n", $1, rv[i]; err = 1 }
		no = split($6, op, ","); nl = split($7, lf, ",")
		if (no != nl) { printf "frame %s: %d opcodes, %d Last flags\n", $1, no, nl; err = 1 }
		for (i = 1; i <= no; i++) {
			o = num(op[i])
			fpdus[o]++
			if (truth(lf[i])) msgs[o]++; else notlast++
		}
		nm = cnt($8); markers += nm
		nres = split($9, mr, ","); for (i = 1; i <= nres; i++) if (num(mr[i]) != 0) {
			printf "frame %s: marker reserved field %s\n", $1, mr[i]; err = 1 }
		fp += f; crcs += c
		if ($10 != "" || $11 != "") {
			if ($10 != "") reqs++; else reps++
			if (truth($12) != wantm || !truth($13)) {
				printf "frame %s: MPA %s with M=%s C=%s, expected M=%d C=1\n", $1, ($10 != "" ? "Request" : "Reply"), $12, $13, wantm
				err = 1
			}
		}
	}
	END {
		printf "fpdus %d crc %d markers %d notlast %d requests %d replies %d\n", fp, crcs, markers, notlast, reqs, reps > out
		for (o = 0; o < 8; o++) printf "op%d %d %d\n", o, msgs[o] + 0, fpdus[o] + 0 >> out
		exit err
	}' "$work/fields.tsv" || fail "FPDUs that did not decode completely (see above)"

	cat "$work/summary"
	read -r _ fpdus _ crcs _ nmarkers _ notlast _ reqs _ reps <"$work/summary"

	bad=$(ts "${dec[@]}" -Y "$tcpf && iwarp_mpa.crc_check" -V -O iwarp_mpa | grep -c 'Bad CRC32')
	good=$(ts "${dec[@]}" -Y "$tcpf && iwarp_mpa.crc_check" -V -O iwarp_mpa | grep -c 'Good CRC32')
	[ "$bad" -eq 0 ] || fail "$bad FPDUs with a bad CRC"
	[ "$good" -eq "$fpdus" ] || fail "$good good CRCs for $fpdus FPDUs"
	[ "$fpdus" -gt 0 ] || fail "no FPDUs decoded"
	if [ "$markers" = on ]; then
		[ "$nmarkers" -gt 0 ] || fail "no markers found although both sides asked for them"
	else
		[ "$nmarkers" -eq 0 ] || fail "$nmarkers markers found although nobody asked for them"
	fi
	[ "$reqs" -eq 2 ] && [ "$reps" -eq 2 ] || fail "expected 2 MPA Requests and 2 Replies, found $reqs and $reps"

	# 5. RDMAP messages against what the program sent.
	wire_check_messages "$work/summary" "$notlast"

	echo "session with markers $markers: $fpdus FPDUs decoded, CRC good, $nmarkers markers"
}

# Without markers first: a failure only in the second session points at
# markers.  UIW_WIRE_MARKERS=on|off runs one of them.
run_session() {
	wire_retry check_session "$1"
}

case ${UIW_WIRE_MARKERS:-both} in
both)
	run_session off
	run_session on
	;;
on | off)
	run_session "$UIW_WIRE_MARKERS"
	;;
*)
	fail "UIW_WIRE_MARKERS must be on, off or both"
	;;
esac
echo "PASS"
