# shellcheck shell=bash
# What the wire tests share: those that capture a uiwarp-wiretest session
# on lo (test_tshark.sh and test_tshark_atomic.sh over TCP,
# test_tshark_sctp.sh over SCTP in UDP), the one that captures the store
# example over RPC-over-RDMA (test_tshark_session.sh)
# and the check of the SCTP one's dissector (test_ddp_sctp_lua.sh).
# Source it (bash) after check_lib.sh, with $timeout_s set.  It makes $work and a
# trap that stops what was started here and removes $work.
#
#   ts ARGS...               tshark; its stderr (a warning about running
#                            as root, among others) goes to
#                            $work/tshark.err
#   wire_start CMD...        starts the session program, its stdin and
#                            stdout on fifos (fds 3 and 4)
#   wire_line WORD           reads the program's next line, "WORD N" with
#                            N > 0, into $wire_value
#   wire_capture CAP FILTER PORT
#                            starts dumpcap on lo with FILTER or a UDP
#                            probe port derived from PORT; returns once
#                            dumpcap says it is capturing and a probe
#                            shows that packets reach the file
#   wire_run                 lets the session go, checks that the program
#                            ended with "ok" (its output in
#                            $work/tool.out), then wire_stop
#   wire_stop                waits until a second probe is in the
#                            capture and stops dumpcap; status 75 when
#                            dumpcap dropped packets
#   wire_retry CMD...        runs CMD again while it returns 75, 3 times
#                            at the most
#   wire_tcpf PORT           a display filter for the segments of TCP
#                            PORT that carry octets for the first time
#                            (no retransmission, no copy of a reordered
#                            segment)
#   wire_expert_errors FILTER ARGS...
#                            frames of FILTER with an expert item of
#                            severity error, decoded with tshark ARGS
#   $wire_awk               awk functions for tshark's -T fields values:
#                            cnt(s, a) splits a list on commas into a
#                            and counts it, truth(v) reads a boolean,
#                            num(s) a number in decimal or 0x-hex
#   wire_lua LUA CAP         fails unless tshark loads LUA, the dissector
#                            of DDP over SCTP (ddp_sctp.lua), without an
#                            error when it reads CAP
#   wire_no_errors FILTER ARGS...
#                            fails on a malformed frame or an expert
#                            error in FILTER
#   wire_check_messages SUMMARY NOTLAST
#                            RDMAP messages decoded (lines "op<N>
#                            <messages> <segments>" of SUMMARY) against
#                            the "messages" and "multi" lines of
#                            $work/tool.out

: "${timeout_s:?set timeout_s before sourcing wire_lib.sh}"
work=$(mktemp -d)
toolpid='' dcpid=''
wire_cleanup() {
	exec 3>&- 4<&- 2>/dev/null
	[ -n "$toolpid" ] && kill "$toolpid" 2>/dev/null
	[ -n "$dcpid" ] && kill "$dcpid" 2>/dev/null
	wait 2>/dev/null
	rm -rf "$work"
}
trap wire_cleanup EXIT

ts() {
	tshark "$@" 2>>"$work/tshark.err"
}

wire_start() {
	wire_name=${1##*/}
	rm -f "$work/go" "$work/out"
	mkfifo "$work/go" "$work/out"
	"$@" <"$work/go" >"$work/out" 2>"$work/tool.err" &
	toolpid=$!
	exec 3>"$work/go" 4<"$work/out"
}

wire_line() {
	local want=$1 word
	wire_value=
	read -r -t "$timeout_s" word wire_value <&4 ||
		fail "$wire_name printed no $want: $(cat "$work/tool.err")"
	[ "$word" = "$want" ] && [ "$wire_value" -gt 0 ] 2>/dev/null ||
		fail "unexpected line from $wire_name: $word $wire_value (expected $want N)"
}

wire_probe_seen() {
	# $1: payload marker; true once a probe with it is in the file
	[ -s "$wire_cap" ] || return 1
	[ "$(ts -r "$wire_cap" -Y "udp.dstport == $wire_probe && frame contains \"$1\"" | wc -l)" -gt 0 ]
}

wire_wait_probe() {
	local tag=$1 i
	for ((i = 0; i < timeout_s * 10; i++)); do
		kill -0 "$dcpid" 2>/dev/null || fail "dumpcap exited: $(cat "$work/dumpcap.out")"
		printf '%s' "$tag" >"/dev/udp/127.0.0.1/$wire_probe" 2>/dev/null
		wire_probe_seen "$tag" && return 0
		sleep 0.1
	done
	fail "dumpcap did not capture the $tag probe within ${timeout_s}s: $(cat "$work/dumpcap.out")"
}

# dumpcap prints "Capturing on" before its socket takes packets: a UDP
# probe to a closed port proves that the capture is running before the
# session starts, and a second one that everything before it has been
# written (dumpcap stopped by SIGINT drops what it has not read yet).
wire_capture() {
	local i
	wire_cap=$1
	wire_probe=$(( ($3 + 7919) % 50000 + 10000 ))
	dumpcap -q -B 64 -i lo -f "$2 or udp port $wire_probe" \
		-w "$wire_cap" >"$work/dumpcap.out" 2>&1 &
	dcpid=$!
	for ((i = 0; i < timeout_s * 20; i++)); do
		grep -q '^Capturing on' "$work/dumpcap.out" && break
		kill -0 "$dcpid" 2>/dev/null || fail "dumpcap exited: $(cat "$work/dumpcap.out")"
		sleep 0.05
	done
	wire_wait_probe uiwstart
}

wire_run() {
	local rc=0

	echo go >&3
	exec 3>&-
	wait "$toolpid" || rc=$?
	toolpid=
	cat <&4 >"$work/tool.out"
	exec 4<&-
	[ "$rc" -eq 0 ] || fail "$wire_name failed (exit $rc): $(cat "$work/tool.err")"
	grep -q '^ok$' "$work/tool.out" || fail "$wire_name did not finish: $(cat "$work/tool.out")"
	cat "$work/tool.out"
	wire_stop
}

wire_stop() {
	local drops

	wire_wait_probe uiwend
	kill -INT "$dcpid"
	wait "$dcpid" 2>/dev/null
	dcpid=
	# A busy machine can make the capture lose packets; that says
	# nothing about uiwarp, so such a session is run again.
	drops=$(sed -n 's|.*received/dropped on interface.*: [0-9]*/\([0-9]*\) .*|\1|p' \
		"$work/dumpcap.out" | sed -n 1p)
	[ -n "$drops" ] || fail "no capture statistics from dumpcap: $(cat "$work/dumpcap.out")"
	if [ "$drops" -gt 0 ]; then
		echo "the capture dropped $drops packets: session discarded"
		return 75
	fi
}

wire_retry() {
	local rc

	for _ in 1 2 3; do
		rc=0
		"$@" || rc=$?
		[ "$rc" -eq 75 ] || return "$rc"
	done
	fail "the capture lost packets in 3 attempts: is the machine overloaded?"
}

# A segment that TCP sent again (lo drops packets under load too)
# repeats octets already decoded in the first copy: leave it out; and so
# does a copy of a reordered segment, which tshark marks out-of-order as
# it does the original: an out-of-order segment that does not decode
# repeats octets already placed.
wire_tcpf() {
	echo "tcp.port == $1 && !tcp.analysis.retransmission" \
		"&& !tcp.analysis.fast_retransmission" \
		"&& !tcp.analysis.spurious_retransmission" \
		"&& !(tcp.analysis.out_of_order && !iwarp_mpa && !tcp.reassembled_in)"
}

wire_expert_errors() {
	local filter=$1
	shift
	ts "$@" -Y "($filter) && _ws.expert" -T fields -E occurrence=a \
		-e frame.number -e _ws.expert.severity -e _ws.expert.message |
		awk -F'\t' '{ n = split($2, s, ","); for (i = 1; i <= n; i++)
			if (s[i] + 0 >= 8388608) { print; break } }'
}

wire_no_errors() {
	local filter=$1 bad experr
	shift
	bad=$(ts "$@" -Y "($filter) && _ws.malformed")
	[ -z "$bad" ] || fail "malformed frames:
	$bad"
	experr=$(wire_expert_errors "$filter" "$@")
	[ -z "$experr" ] || fail "expert errors:
	$experr"
}

wire_awk='
function cnt(s, a) { if (s == "") return 0; return split(s, a, ",") }
function truth(v) { return v == "1" || v == "True" || v == "true" }
function num(s,   v, i, c) {
	# decimal or 0x-hex, without gawk extensions
	if (s !~ /^0[xX]/) return s + 0
	v = 0
	for (i = 3; i <= length(s); i++) {
		c = index("0123456789abcdef", tolower(substr(s, i, 1)))
		if (c == 0) return -1
		v = v * 16 + c - 1
	}
	return v
}'

# tshark reports a Lua script that does not load on stderr and goes on
# without it; a filter naming its protocol fails then.
wire_lua() {
	tshark -X "lua_script:$1" -r "$2" -c 1 -Y ddp_sctp >/dev/null 2>"$work/lua.err" &&
		! grep -i lua "$work/lua.err" >/dev/null ||
		fail "tshark did not load $1:
	$(grep -v '^Running as' "$work/lua.err")"
}

# RDMAP messages: those with the Last flag, per opcode (RFC 5040 §4.2
# numbering), must match what the program sent; messages of several
# DDP segments must show up.
wire_check_messages() {
	local summary=$1 notlast=$2 names sent multi o want got

	names=(write read_req read_resp send send_inv send_se send_se_inv terminate)
	sent=$(sed -n 's/^messages //p' "$work/tool.out")
	multi=$(sed -n 's/^multi //p' "$work/tool.out")
	for o in 0 1 2 3 4 5 6 7; do
		want=$(echo "$sent" | tr ' ' '\n' | sed -n "s/^${names[$o]}=//p")
		got=$(awk -v k="op$o" '$1 == k { print $2 }' "$summary")
		[ -n "$want" ] || fail "uiwarp-wiretest did not report ${names[$o]}"
		[ "$want" -gt 0 ] || fail "the session sent no ${names[$o]} message"
		[ "$got" -eq "$want" ] || fail "${names[$o]}: tshark decoded $got messages, $want were sent"
		echo "${names[$o]}: $got messages"
	done
	[ -n "$multi" ] || fail "uiwarp-wiretest did not report multi"
	[ "$multi" -gt 0 ] || fail "no message needed more than one DDP segment"
	[ "$notlast" -ge "$multi" ] || fail "$multi messages need several DDP segments, but only $notlast non-last segments decoded"
}
