#!/usr/bin/env bash
# uiwarp-perf works: every test type in loopback at a couple of sizes with
# raw TCP next to it, bandwidth, rate and latency, CSV and JSON parsed and
# checked (every column present, figures above zero), a server and a
# client on a free port, IPv6, CRC off with markers, DDP over SCTP
# (--llp sctp-udp: loopback, server and client, and --llp sctp-kernel
# that never falls back), and misuse that must end in a clear message and
# a non-zero exit.  Short runs: it says nothing about speed.
#
# usage: test_perf.sh <build-dir> <source-dir>
set -uo pipefail

build=${1:?usage: test_perf.sh <build-dir> <source-dir>}
perf=$build/uiwarp-perf
[ -x "$perf" ] || { echo "FAIL: $perf is not built"; exit 1; }

tmp=$(mktemp -d)
spid=
cleanup() {
	[ -n "$spid" ] && kill "$spid" 2>/dev/null
	wait 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

# shellcheck source=../check_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../check_lib.sh"

columns="test mode size qps depth crc markers completion ops seconds mbps \
mmsgs lat_min_us lat_avg_us lat_median_us lat_p99_us tcp_mbps tcp_mmsgs \
tcp_lat_min_us tcp_lat_avg_us tcp_lat_median_us tcp_lat_p99_us vs_tcp turns"

# check_csv <file> <mode> <tests...>: the header names every column; one
# row per test (and per size for data tests); the figures of the mode are
# numbers above zero, raw TCP's too, and so is the ratio.
check_csv() {
	local f=$1 mode=$2 t
	shift 2
	awk -F, -v cols="$columns" -v mode="$mode" '
	NR == 1 {
		n = split(cols, want, " ")
		for (i = 1; i <= NF; i++) idx[$i] = i
		for (i = 1; i <= n; i++)
			if (!(want[i] in idx)) { print "no column " want[i]; bad = 1 }
		if (NF != n) { print "columns: " NF ", expected " n; bad = 1 }
		next
	}
	{
		if (NF != n) { print "row " NR ": " NF " fields"; bad = 1 }
		if ($idx["mode"] != mode) { print "row " NR ": mode " $idx["mode"]; bad = 1 }
		if (mode == "lat")
			need = "lat_min_us lat_avg_us lat_median_us lat_p99_us tcp_lat_median_us tcp_lat_p99_us vs_tcp"
		else
			need = "mbps mmsgs tcp_mbps tcp_mmsgs vs_tcp"
		need = need " ops seconds size depth"
		k = split(need, nn, " ")
		for (i = 1; i <= k; i++) {
			v = $idx[nn[i]]
			if (v == "" || !(v + 0 > 0)) {
				print "row " NR ": " nn[i] " is \"" v "\""; bad = 1
			}
		}
		seen[$idx["test"]]++
	}
	END {
		if (NR < 2) { print "no rows"; bad = 1 }
		for (t in seen) printf "%s:%d ", t, seen[t]
		print ""
		exit bad
	}' "$f" >"$tmp/csvcheck" 2>&1 || return 1
	for t in "$@"; do
		grep -q "$t:" "$tmp/csvcheck" || { echo "no row for $t" >>"$tmp/csvcheck"; return 1; }
	done
	return 0
}

# check_json <file> <rows> <mode>: one object a line with every column;
# the mode's figures above zero; python3, if there, parses it as JSON.
check_json() {
	local f=$1 rows=$2 mode=$3 c
	[ "$(grep -c '^    {' "$f")" -eq "$rows" ] || { echo "expected $rows results"; return 1; }
	for c in $columns; do
		[ "$(grep '^    {' "$f" | grep -c "\"$c\": ")" -eq "$rows" ] ||
			{ echo "column $c missing"; return 1; }
	done
	# a number above zero
	local pos='([1-9][0-9]*(\.[0-9]+)?|0\.[0-9]*[1-9][0-9]*)[,}]'
	if [ "$mode" = lat ]; then
		c="\"lat_median_us\": $pos"
	else
		c="\"mbps\": $pos"
	fi
	[ "$(grep '^    {' "$f" | grep -Ec "$c")" -eq "$rows" ] ||
		{ echo "a figure is zero or missing"; return 1; }
	[ "$(grep '^    {' "$f" | grep -Ec "\"vs_tcp\": $pos")" -eq "$rows" ] ||
		{ echo "a ratio is missing"; return 1; }
	if command -v python3 >/dev/null; then
		python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert len(d["results"]) == int(sys.argv[2])' "$f" "$rows" ||
			{ echo "not valid JSON"; return 1; }
	fi
	return 0
}

# 1. bandwidth: every test type, two sizes, raw TCP, CSV
if timeout 120 "$perf" --loopback -t all --sweep 4k:8k -D 0.15 --tcp --csv \
	>"$tmp/bw.csv" 2>"$tmp/bw.err"; then
	# data tests at both sizes, atomics once (8 octets): 4*2 + 2 rows
	rows=$(($(wc -l <"$tmp/bw.csv") - 1))
	if [ "$rows" -eq 10 ] && check_csv "$tmp/bw.csv" bw write read send \
		write_imm fetch_add cmp_swap; then
		ok "bw, every test type, 4k and 8k, CSV with raw TCP"
	else
		bad "bw CSV ($rows rows)"; show "$tmp/bw.csv" "$tmp/csvcheck"
	fi
else
	bad "bw run failed"; show "$tmp/bw.err"
fi

# 1b. bandwidth with raw TCP in turns (-D 0.4: four turns of 0.1 s each)
if timeout 120 "$perf" --loopback -t write,send -S 64k -D 0.4 --tcp --csv \
	>"$tmp/bwturns.csv" 2>"$tmp/bwturns.err" &&
   check_csv "$tmp/bwturns.csv" bw write send &&
   awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
	$c["turns"] != 4 || !($c["ops"] > 0) || !($c["seconds"] >= 0.4) ||
	!($c["tcp_mbps"] > 0) || !($c["vs_tcp"] > 0) { exit 1 }
	END { if (NR != 3) exit 1 }' "$tmp/bwturns.csv"; then
	ok "bw with raw TCP in four turns: both figures, 0.4 s of uiwarp"
else
	bad "bw in turns"; show "$tmp/bwturns.csv" "$tmp/bwturns.err" \
		"$tmp/csvcheck"
fi

# 2. latency: every test type, JSON, busy polling
if timeout 120 "$perf" --loopback -t all --lat -S 16 -n 300 --tcp --poll \
	--json >"$tmp/lat.json" 2>"$tmp/lat.err"; then
	if check_json "$tmp/lat.json" 6 lat >"$tmp/jsoncheck" 2>&1 &&
	   grep -q '"completion": "poll"' "$tmp/lat.json"; then
		ok "lat, every test type, JSON, polling"
	else
		bad "lat JSON"; show "$tmp/lat.json" "$tmp/jsoncheck"
	fi
else
	bad "lat run failed"; show "$tmp/lat.err"
fi

# 2b. latency with raw TCP in turns (-n 1000, warm-up 50: five turns of
# 200 each): every ping-pong of every turn counted, both medians there
if timeout 120 "$perf" --loopback -t write,send --lat -S 8 -n 1000 \
	--warmup 50 --tcp --poll --csv >"$tmp/turns.csv" 2>"$tmp/turns.err" &&
   check_csv "$tmp/turns.csv" lat write send &&
   awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
	$c["ops"] != 1000 || $c["turns"] != 5 || !($c["lat_median_us"] > 0) ||
	!($c["tcp_lat_median_us"] > 0) || !($c["vs_tcp"] > 0) { exit 1 }' \
	"$tmp/turns.csv"; then
	ok "lat with raw TCP in turns: all 1000 ping-pongs, both medians"
else
	bad "lat in turns"; show "$tmp/turns.csv" "$tmp/turns.err" "$tmp/csvcheck"
fi

# 3. message rate, event-driven, CSV
if timeout 120 "$perf" --loopback -t write,send --rate -D 0.2 --tcp --csv \
	>"$tmp/rate.csv" 2>"$tmp/rate.err" &&
   check_csv "$tmp/rate.csv" rate write send &&
   awk -F, 'NR > 1 && ($3 != 8 || $5 != 64) { exit 1 }' "$tmp/rate.csv"; then
	ok "rate: 8 octets, depth 64 by default, CSV"
else
	bad "rate"; show "$tmp/rate.csv" "$tmp/rate.err" "$tmp/csvcheck"
fi

# 4. the readable table, several QPs, CRC off and markers on
if timeout 120 "$perf" --loopback -t write,read -S 64k -q 3 -D 0.15 \
	--crc off --markers on --tcp >"$tmp/table.out" 2>"$tmp/table.err" &&
   grep -q 'CRC off, markers on' "$tmp/table.out" &&
   grep -Eq '^\| write \| 65536 \| 3 \| 16 \| [0-9.]+ \|' "$tmp/table.out" &&
   grep -Eq '^\| read \| 65536 \| 3 \| [0-9]+ \| [0-9.]+ \|' "$tmp/table.out"; then
	ok "table, 3 QPs, CRC off, markers on"
else
	bad "table"; show "$tmp/table.out" "$tmp/table.err"
fi

# 4b. --repeat with raw TCP: every run reported, the pair with the median
# ratio kept whole (its uiwarp and TCP figures and their ratio)
if timeout 120 "$perf" --loopback -t write,send -S 8k -D 0.1 --tcp \
	--repeat 3 --csv >"$tmp/rep.csv" 2>"$tmp/rep.err" &&
   awk -F, '
	FNR == NR {
		# "  write 8192 run 2: 980.9, raw TCP 1192.5, ratio 0.82"
		if ($0 ~ / run [0-9]+: .*, raw TCP .*, ratio /) {
			split($0, w, " ")
			t = w[1]; n[t]++
			fig[t, n[t]] = w[5] + 0; tcp[t, n[t]] = w[8] + 0
			r[t, n[t]] = w[10] + 0
		}
		next
	}
	FNR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
	{
		t = $c["test"]; rows++
		if (n[t] != 3) { print t ": " n[t] " runs reported"; bad = 1; next }
		# the median of three ratios
		m = 0
		for (i = 1; i <= 3; i++) {
			below = 0
			for (j = 1; j <= 3; j++)
				if (r[t, j] < r[t, i] || (r[t, j] == r[t, i] && j < i)) below++
			if (below == 1) m = i
		}
		if (!m) { print t ": no median"; bad = 1; next }
		d1 = $c["vs_tcp"] - r[t, m]; d2 = $c["mbps"] - fig[t, m]
		d3 = $c["tcp_mbps"] - tcp[t, m]
		if (d1 * d1 > 1e-6 || d2 * d2 > 0.01 * fig[t, m] || d3 * d3 > 0.01 * tcp[t, m]) {
			print t ": kept " $c["mbps"] "/" $c["tcp_mbps"] "=" $c["vs_tcp"] \
			      ", median pair " fig[t, m] "/" tcp[t, m] "=" r[t, m]
			bad = 1
		}
	}
	END { if (rows != 2) { print rows " rows"; bad = 1 } exit bad }' \
	"$tmp/rep.err" "$tmp/rep.csv" >"$tmp/repcheck" 2>&1; then
	ok "--repeat 3 --tcp: three runs reported, the median pair kept"
else
	bad "--repeat with raw TCP"; show "$tmp/rep.csv" "$tmp/rep.err" "$tmp/repcheck"
fi

# 5. server and client on a free port (FPDU alignment off on both ends)
mkfifo "$tmp/srv.fifo"
timeout 120 "$perf" -s -p 0 --bind 127.0.0.1 >"$tmp/srv.fifo" \
	2>"$tmp/srv.err" &
spid=$!
exec {sfd}<"$tmp/srv.fifo"
port=
if IFS= read -r -t 30 line <&"$sfd"; then
	port=${line##*port }
fi
if [[ "$port" =~ ^[0-9]+$ ]] && [ "$port" -gt 0 ]; then
	if timeout 120 "$perf" -c 127.0.0.1 -p "$port" -t write,send,fetch_add \
		-S 128k -D 0.15 --align off --tcp --json >"$tmp/cs.json" \
		2>"$tmp/cs.err" &&
	   check_json "$tmp/cs.json" 3 bw >"$tmp/jsoncheck" 2>&1; then
		ok "client against a server on port $port"
	else
		bad "client against server"; show "$tmp/cs.json" "$tmp/cs.err" \
			"$tmp/jsoncheck" "$tmp/srv.err"
	fi
	cat <&"$sfd" >"$tmp/srv.out"
	wait "$spid"
	rc=$?
	spid=
	if [ "$rc" -eq 0 ] && grep -q 'server done' "$tmp/srv.out"; then
		ok "the server served one client and exited"
	else
		bad "server exit $rc"; show "$tmp/srv.out" "$tmp/srv.err"
	fi
	# nobody listens there now: a clear error, exit 1, no hang
	timeout 30 "$perf" -c 127.0.0.1 -p "$port" -S 8 -D 0.1 \
		>"$tmp/unr.out" 2>"$tmp/unr.err"
	rc=$?
	if [ "$rc" -eq 1 ] && grep -q 'cannot connect to 127.0.0.1 port' "$tmp/unr.err"; then
		ok "unreachable server: exit 1, clear message"
	else
		bad "unreachable server: exit $rc"; show "$tmp/unr.err"
	fi
else
	bad "the server printed no port: $line"; show "$tmp/srv.err"
fi
exec {sfd}<&-

# 6. IPv6 loopback, when ::1 is configured
if [ -e /proc/net/if_inet6 ] && grep -q '^0\{31\}1 ' /proc/net/if_inet6; then
	if timeout 60 "$perf" --loopback -6 -t send -S 1k -D 0.15 --tcp \
		>"$tmp/v6.out" 2>"$tmp/v6.err" &&
	   grep -q 'loopback ::1' "$tmp/v6.out" &&
	   grep -Eq '^\| send \| 1024 \|' "$tmp/v6.out"; then
		ok "IPv6 loopback"
	else
		bad "IPv6 loopback"; show "$tmp/v6.out" "$tmp/v6.err"
	fi
else
	echo "skip IPv6: ::1 is not configured"
fi

# 8. DDP over SCTP (RFC 5043) on the user-space stack, over UDP (RFC
# 6951) on a free UDP port: in loopback, and a server and a client, the
# server told its UDP port (the client learns it in the WELCOME) or
# listening on the one the client names.  bw and rate check the data
# (a mismatch ends the run with exit 1); the table names the LLP, and
# every row has a figure above zero.
udp=$(free_udp_port) || fail "no free UDP port"

# sctp_table <file> <mode> <tests...>: the header names DDP over SCTP
# (sctp-udp); each test has a row whose MB/s (lat: median µs), the
# fifth column, is above zero.
sctp_table() {
	local f=$1 mode=$2 t
	shift 2
	grep -Eq "^uiwarp-perf: .*, $mode, 1 QP, DDP over SCTP \(sctp-udp\), MULPDU [0-9]+, " "$f" ||
		{ echo "no header of $mode over SCTP"; return 1; }
	for t in "$@"; do
		awk -F'|' -v t=" $t " '$2 == t && $6 + 0 > 0 { n++ }
			END { exit n != 1 }' "$f" ||
			{ echo "no figure for $t"; return 1; }
	done
}

if timeout 120 "$perf" --loopback --llp sctp-udp --udp-port "$udp" -t all \
	-S 64k -D 0.15 >"$tmp/sctp-bw.out" 2>"$tmp/sctp-bw.err" &&
   sctp_table "$tmp/sctp-bw.out" bw write read send write_imm fetch_add \
	cmp_swap >"$tmp/sctpcheck" 2>&1; then
	ok "loopback over SCTP: bw of every test type, data verified"
else
	bad "loopback bw over SCTP"; show "$tmp/sctp-bw.out" "$tmp/sctp-bw.err" \
		"$tmp/sctpcheck"
fi
if timeout 120 "$perf" --loopback --llp sctp-udp --udp-port "$udp" --lat \
	-t write,read,send -S 8 -n 300 >"$tmp/sctp-lat.out" \
	2>"$tmp/sctp-lat.err" &&
   sctp_table "$tmp/sctp-lat.out" lat write read send >"$tmp/sctpcheck" 2>&1; then
	ok "loopback over SCTP: lat of write, read and send"
else
	bad "loopback lat over SCTP"; show "$tmp/sctp-lat.out" \
		"$tmp/sctp-lat.err" "$tmp/sctpcheck"
fi

# sctp_pair <name> <server args> <client args> <mode> <tests...>: a
# server on a free control port and one client of it.
sctp_pair() {
	local name=$1 sargs=$2 cargs=$3 mode=$4 line port rc fd
	shift 4
	mkfifo "$tmp/$name.fifo"
	timeout 120 "$perf" -s -p 0 --bind 127.0.0.1 $sargs \
		>"$tmp/$name.fifo" 2>"$tmp/$name.serr" &
	spid=$!
	exec {fd}<"$tmp/$name.fifo"
	port=
	IFS= read -r -t 30 line <&"$fd" && port=${line##*port }
	if ! [[ "$port" =~ ^[0-9]+$ ]]; then
		bad "$name: the server printed no port: $line"
		show "$tmp/$name.serr"
		exec {fd}<&-
		return 1
	fi
	timeout 120 "$perf" -c 127.0.0.1 -p "$port" --llp sctp-udp $cargs \
		>"$tmp/$name.out" 2>"$tmp/$name.err"
	rc=$?
	cat <&"$fd" >"$tmp/$name.sout"
	exec {fd}<&-
	wait "$spid"
	src=$?
	spid=
	if [ $rc -eq 0 ] && [ $src -eq 0 ] &&
	   sctp_table "$tmp/$name.out" "$mode" "$@" >"$tmp/sctpcheck" 2>&1 &&
	   grep -q '^uiwarp-perf: server: 1 QP connected over SCTP (sctp-udp)$' \
		"$tmp/$name.serr" && grep -q 'server done' "$tmp/$name.sout"; then
		ok "$name: client and server over SCTP, $mode of $*"
	else
		bad "$name: client exit $rc, server exit $src"
		show "$tmp/$name.out" "$tmp/$name.err" "$tmp/$name.serr" \
			"$tmp/sctpcheck"
	fi
}
sctp_pair sctp-server-udp "--udp-port $udp" "-t write,send,read -S 128k -D 0.15" \
	bw write send read
sctp_pair sctp-client-udp "" "--udp-port $udp --lat -t write,send -n 300" \
	lat write send

# --llp sctp-kernel is the kernel's SCTP or nothing: where this kernel
# has none, the run ends with exit 1 and says why (no fallback to the
# user-space stack); where it has one, the run goes over it.
timeout 60 "$perf" --loopback --llp sctp-kernel -t write -S 8k -D 0.1 \
	>"$tmp/kern.out" 2>"$tmp/kern.err"
rc=$?
if [ $rc -eq 0 ] && grep -q 'DDP over SCTP (sctp-kernel)' "$tmp/kern.out"; then
	ok "--llp sctp-kernel: this kernel has SCTP, and the run went over it"
elif [ $rc -eq 1 ] && [ ! -s "$tmp/kern.out" ] &&
	grep -q 'this kernel has no SCTP' "$tmp/kern.err" &&
	grep -q 'cannot listen over sctp-kernel' "$tmp/kern.err"; then
	ok "--llp sctp-kernel without kernel SCTP: exit 1, says why"
else
	bad "--llp sctp-kernel: exit $rc"; show "$tmp/kern.out" "$tmp/kern.err"
fi

# 7. misuse: exit 2 and a message that says what was wrong
misuse() {
	local want=$1
	shift
	timeout 10 "$perf" "$@" >"$tmp/mis.out" 2>"$tmp/mis.err"
	local rc=$?
	if [ "$rc" -eq 2 ] && grep -q -- "$want" "$tmp/mis.err"; then
		ok "misuse '$*': $want"
	else
		bad "misuse '$*' (exit $rc)"; show "$tmp/mis.err"
	fi
}
misuse "bad size '0'" --loopback -S 0
misuse "bad size '17m'" --loopback -S 17m
misuse "bad sweep" --loopback --sweep 64:8
misuse "unknown test 'wrte'" --loopback -t wrte
misuse "give one of" -S 8
misuse "latency tests use one QP" --loopback --lat -q 2
misuse "--crc takes on or off" --loopback --crc maybe
misuse "--align takes on or off" --loopback --align maybe
misuse "bad depth" --loopback -d 0
misuse "bad warm-up count '-1'" --loopback --lat --warmup -1
misuse "--llp takes tcp, sctp, sctp-udp or sctp-kernel, not bogus" --loopback --llp bogus
misuse "--llp is the client's choice" -s --llp sctp-udp
misuse "bad --udp-port" --loopback --llp sctp-udp --udp-port 0

check_summary && echo PASS
