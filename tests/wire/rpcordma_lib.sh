# shellcheck shell=bash
# What the RPC-over-RDMA wire tests share: test_tshark_rpcordma.sh (a
# synthetic capture) and test_tshark_session.sh (a captured session of
# the store example).  Source it (bash) after check_lib.sh and after
# defining ts (tshark, its stderr kept aside); $rpcrdma_wire is the
# build's rpcrdma_wire.
#
#   rpcordma_fields          tshark arguments (-T fields ...) for what
#                            rpcordma_lines reads
#   rpcordma_lines           tshark's fields (stdin) to one line per
#                            RPC-over-RDMA header: "FRAME PORT LINE",
#                            PORT the TCP source port, LINE the header
#                            as rpcrdma_wire prints it, then " inv=0xK"
#                            when the Send carrying it invalidates K
#   ddp_payload CAP FRAME [ARGS...]
#                            the DDP payload of the one FPDU that the TCP
#                            segment FRAME of CAP holds or completes, in
#                            hex (tshark ARGS: how to decode CAP, so that
#                            an FPDU over several segments is put
#                            together); fails when the segment holds
#                            something else
#   hdr_len HEX              where the RPC message starts in a Send's
#                            payload (rpcrdma_wire's decoding of its
#                            transport header)
#   put_back RPC POS DATA    RPC (hex) with the chunk's octets DATA (hex)
#                            put in at octet POS, and their XDR pad
#                            after them: a reduced data item made whole
#                            again (RFC 8166 §3.4.4.1, §3.4.4.4, §3.4.6.2)
#   hexrep OCTET N           N times OCTET (two hex digits)

: "${rpcrdma_wire:?set rpcrdma_wire before sourcing rpcordma_lib.sh}"

rpcordma_fields=(-T fields -E occurrence=a -E "aggregator=,"
	-e frame.number -e rpcordma.xid -e rpcordma.version
	-e rpcordma.flow_control -e rpcordma.msg_type -e rpcordma.reads_count
	-e rpcordma.writes_count -e rpcordma.reply_count -e rpcordma.position
	-e rpcordma.segment_count -e rpcordma.rdma_handle
	-e rpcordma.rdma_length -e rpcordma.rdma_offset -e rpcordma.errcode
	-e rpcordma.vers_low -e rpcordma.vers_high -e tcp.srcport
	-e iwarp_rdma.inval_stag)

# Hex handles and offsets are kept as text, stripped of leading zeros:
# 64-bit offsets do not fit awk's numbers.
rpcordma_lines() {
	awk -F'\t' '
function hx(s) { sub(/^0[xX]0*/, "", s); return "0x" (s == "" ? "0" : tolower(s)) }
function seg(k) { return hx(h[k]) ":" (l[k] + 0) ":" hx(o[k]) }
{
	split($9, pos, ","); split($10, cnt, ",")
	split($11, h, ","); split($12, l, ","); split($13, o, ",")
	inv = $18 == "" ? "" : " inv=0x" sprintf("%x", $18)
	line = sprintf("xid=%s vers=%d credit=%d proc=%d", tolower($2), $3,
		$4, $5)
	if ($5 == 4) {
		line = line " err=" $14
		if ($14 == 1) line = line " low=" $15 " high=" $16
		print $1, $17, line inv; next
	}
	k = 0; s = ""
	for (i = 1; i <= $6; i++) s = s (i > 1 ? "," : "") pos[i] ":" seg(++k)
	line = line " reads=" (s == "" ? "-" : s)
	s = ""
	for (c = 1; c <= $7; c++) {
		t = ""
		for (j = 1; j <= cnt[c]; j++) t = t (j > 1 ? "," : "") seg(++k)
		s = s "{" t "}"
	}
	line = line " writes=" (s == "" ? "-" : s)
	s = "-"
	if ($8 == 1) {
		t = ""
		for (j = 1; j <= cnt[$7 + 1]; j++) t = t (j > 1 ? "," : "") seg(++k)
		s = "{" t "}"
	}
	print $1, $17, line " reply=" s inv
}'
}

# RFC 5044 §4.1: ULPDU_Length, the ULPDU, pad to 4, CRC32c; RFC 5041
# §4: a 14-octet tagged or 18-octet untagged DDP/RDMAP header.
ddp_payload() {
	local cap=$1 frame=$2 p r n ctl skip
	shift 2
	IFS='|' read -r r p < <(ts -r "$cap" "$@" -Y "frame.number == $frame" \
		-T fields -E separator='|' -e tcp.reassembled.data -e tcp.payload)
	p=${r:-$p}
	p=${p//:/}
	[ ${#p} -ge 4 ] || fail "frame $frame of ${cap##*/} carries no TCP payload"
	n=$((16#${p:0:4}))
	[ $(((2 + n + 3) / 4 * 4 + 4)) -eq $((${#p} / 2)) ] ||
		fail "frame $frame of ${cap##*/} is not one FPDU with CRC ($((${#p} / 2)) octets, ULPDU_Length $n)"
	ctl=$((16#${p:4:2}))
	skip=$((ctl & 0x80 ? 14 : 18))
	echo "${p:$(((2 + skip) * 2)):$(((n - skip) * 2))}"
}

hdr_len() {
	local d
	d=$("$rpcrdma_wire" dec "$1") || fail "rpcrdma_wire cannot decode $1"
	[[ $d == *" hdr_len="* ]] || fail "not an RDMA_MSG or RDMA_NOMSG: $d"
	echo "${d##* hdr_len=}"
}

hexrep() {
	[ "$2" -gt 0 ] || return 0
	printf "%0$(($2 * 2))d" 0 | sed "s/00/$1/g"
}

put_back() {
	local n=$((${#3} / 2))
	echo "${1:0:$(($2 * 2))}$3$(hexrep 00 $(((4 - n % 4) % 4)))${1:$(($2 * 2))}"
}
