#!/usr/bin/env bash
# Unmodified programs on both ends: Debian's own rping and perftest's
# ib_write_bw and ib_read_bw, on uiwarp on the host through the drop-in
# libibverbs.so.1 and librdmacm.so.1 (uiwarp-run), and on Linux siw in a
# QEMU guest.
#
#   host -> guest: the client on the host dials 127.0.0.1:P, forwarded
#     to the guest's 10.0.2.15:P where the server listens on siw
#   guest -> host: the client in the guest dials 10.0.2.100:Q, forwarded
#     to the host's 127.0.0.1:Q where the server listens on uiwarp
#
# uiwarp runs with its defaults (uiwarp-rdma(7): MPA revision 2, CRC,
# peer-to-peer mode as the initiator): every UIWARP_ variable is unset,
# but UIWARP_MPA_REV=1 for the revision 1 connections.  In particular no
# UIWARP_START_DELAY_MS: siw 6.1 leaves a first FPDU (or RTR) that comes
# right after its MPA Reply unread (SIW_START_DELAY_MS in siw_lib.sh),
# and the drop-in's default start delay (UIW_RDMA_DEFAULT_START_DELAY_MS,
# measured in bench/siw-start-delay.md) is what must make every
# connection uiwarp initiates to siw here complete.
#
# rping: -v -V at both ends, at 64, 4096 and 65535 octets (rping's
# largest), MPA revision 2 both ways and revision 1 from the host (with
# rping -s -q in the guest: siw gives a plain rping -s an ORD of 0 with
# revision 1).  Each ping is checked where it is printed, at both ends
# (rping_data_check): the server prints what its RDMA Read fetched, the
# client what the server's RDMA Write brought back (and -V compares it).
#
# perftest -R (rdma_cm, which also carries perftest's own exchange of
# parameters): ib_write_bw and ib_read_bw, the server on one side and
# the client on the other, both ways, at 4096 and 65536 octets; both
# must exit 0 and print the result line (the server prints the client's).
#
# usage: test_siw_stock.sh <build-dir> <source-dir>
set -uo pipefail

build=${1:?usage: test_siw_stock.sh <build-dir> <source-dir>}
src=${2:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
mkdir -p "$build"
build=$(cd "$build" && pwd)
src=$(cd "$src" && pwd)

# shellcheck source=siw_lib.sh
source "$src/tests/interop/siw_lib.sh"
# shellcheck source=../../bench/lib.sh
source "$src/bench/lib.sh"

# The drop-in libraries: through uiwarp-run where it is built.
if [ -x "$build/uiwarp-run" ]; then
	RUN=("$build/uiwarp-run")
	RUN_NAME=uiwarp-run
else
	RUN=(env "LD_LIBRARY_PATH=$build/compat${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
	RUN_NAME="LD_LIBRARY_PATH=$build/compat"
fi
for lib in libibverbs.so.1 librdmacm.so.1; do
	[ -e "$build/compat/$lib" ] || siw_die "$build/compat/$lib is not built"
done
# uiwarp's defaults, whatever the caller's environment holds.
while read -r v; do
	unset "$v"
done < <(env | sed -n 's/^\(UIWARP_[A-Z_]*\)=.*/\1/p')

siw_boot test_siw_stock 1 1
P=${HOST_PORTS[0]}
Q=${GUEST_PORTS[0]}

# The host's stock programs (tests/interop/deps.sh, run by siw_boot).
for prog in rping ib_write_bw ib_read_bw ibv_devices; do
	command -v "$prog" > /dev/null || siw_die "$prog is not installed on the host"
done
if "${RUN[@]}" ibv_devices > "$SIW_TMP/devices.out" 2>&1 &&
   grep -q uiwarp0 "$SIW_TMP/devices.out"; then
	ok "dropin: $RUN_NAME ibv_devices lists uiwarp0 (Debian's $(command -v ibv_devices) on the drop-in libibverbs)"
else
	bad "dropin: $RUN_NAME ibv_devices does not list uiwarp0"
	show "$SIW_TMP/devices.out"
fi

# ---------------------------------------------------------------- rping
# rping prints its -v lines on standard output, buffered, and its
# messages (DISCONNECT EVENT, ...) on standard error at once: into one
# file, a message may land inside a data line.  So each side's standard
# error goes apart (the guest's after its standard output).

# rping_pair NAME SIZE COUNT "GUEST_OPTS" [VAR=VALUE...] (host -> guest,
# with the VARs for uiwarp) or rping_pair NAME SIZE COUNT from-siw
# [VAR=VALUE...] (guest -> host).  The guest's -v output is cut to 100
# characters a line (only that much comes back).
rping_pair() {
	local name=$1 size=$2 count=$3 gopts=$4 out=$SIW_TMP/$1 st sst cli srv pid
	local args=(-v -V -S "$size" -C "$count") gerr=/tmp/$1.err
	local gcut="2> $gerr | cut -c 1-100; st=\$?; cat $gerr; exit \$st"
	shift 4
	if [ "$gopts" = from-siw ]; then
		cli="guest rping -c"
		srv="host rping -s"
		timeout -s KILL 90 env "$@" "${RUN[@]}" rping -s -a 127.0.0.1 -p "$Q" "${args[@]}" \
			> "$out.server" 2> "$out.server.err" &
		pid=$!
		SIW_HOST_PIDS+=("$pid")
		wait_listen "$Q" "$pid" ||
			{ bad "$name: rping -s on uiwarp does not listen on $Q"; show "$out.server.err"; return; }
		guest_run -t 60 "set -o pipefail; rping -c -a $GUEST_HOST_ADDR -p $Q ${args[*]} $gcut" \
			> "$out.client" 2>&1
		st=$?
		host_wait "$pid"
		sst=$?
		rping_status $st "$out.client" && rping_status $sst "$out.server.err" &&
			rping_data_check "$out.client" "ping data: " "$count" "$size" 100 > "$out.check" &&
			rping_data_check "$out.server" "server ping data: " "$count" "$size" >> "$out.check"
	else
		cli="host rping -c"
		srv="guest rping -s${gopts:+ $gopts}"
		if ! job_start "set -o pipefail; rping -s -a $GUEST_ADDR -p $P $gopts ${args[*]} $gcut" > "$out.start" 2>&1 ||
		   ! guest_wait_listen "$P" -t 30 > "$out.listen" 2>&1; then
			bad "$name: rping -s did not start in the guest"
			show "$out.start" "$out.listen"
			return
		fi
		timeout -s KILL 60 env "$@" "${RUN[@]}" rping -c -a 127.0.0.1 -p "$P" "${args[@]}" \
			> "$out.client" 2> "$out.client.err"
		st=$?
		job_wait "$JOB" 30 "$out.server"
		sst=$?
		[ "$sst" -eq 124 ] && job_end "$JOB" "$P"
		rping_status $st "$out.client.err" && rping_status $sst "$out.server" &&
			rping_data_check "$out.client" "ping data: " "$count" "$size" > "$out.check" &&
			rping_data_check "$out.server" "server ping data: " "$count" "$size" 100 >> "$out.check"
	fi
	# shellcheck disable=SC2181  # the status of the chain above
	if [ $? -eq 0 ]; then
		ok "$name: $cli -> $srv${*:+ ($*)}: $count pings of $size octets, each checked at both ends"
	else
		bad "$name: $cli -> $srv${*:+ ($*)}, $count pings of $size octets: client status $st, server status $sst"
		show "$out.check" "$out.client.err" "$out.client" "$out.server.err" "$out.server"
	fi
	siw_check_guest "$name"
}

rping_pair rping-to-siw-64 64 5 ""
rping_pair rping-to-siw-4096 4096 3 ""
rping_pair rping-to-siw-65535 65535 2 ""
rping_pair rping-from-siw-64 64 5 from-siw
rping_pair rping-from-siw-4096 4096 3 from-siw
rping_pair rping-from-siw-65535 65535 2 from-siw
# Revision 1 carries no IRD/ORD: rping -s -q (SIW-FACTS.md).
rping_pair rping-to-siw-rev1-4096 4096 3 -q UIWARP_MPA_REV=1

# That the drop-in spoke revision 1 shows in siw: without -q its rping -s
# has an ORD of 0 then, and cannot post its first RDMA Read ("post send
# error"; the client then sees the disconnect, and rping -c counts that
# as a normal end, status 0).
name=rping-to-siw-rev1-ord0
out=$SIW_TMP/$name
if job_start "rping -s -a $GUEST_ADDR -p $P -v -S 64 -C 2 2>&1 | cut -c 1-100" > "$out.start" 2>&1 &&
   guest_wait_listen "$P" -t 30 > "$out.listen" 2>&1; then
	timeout -s KILL 60 env UIWARP_MPA_REV=1 "${RUN[@]}" rping -c -a 127.0.0.1 -p "$P" -v -V -S 64 -C 2 \
		> "$out.client" 2> "$out.client.err"
	st=$?
	job_wait "$JOB" 30 "$out.server"
	sst=$?
	[ "$sst" -eq 124 ] && job_end "$JOB" "$P"
	if [ "$st" -ne 137 ] && [ "$sst" -ne 124 ] && grep -q "post send error" "$out.server" &&
	   ! grep -q "ping data" "$out.client" "$out.server"; then
		ok "$name: with UIWARP_MPA_REV=1 a plain rping -s on siw cannot post its RDMA Read (\"$(grep -m 1 "post send error" "$out.server")\"), no ping"
	else
		bad "$name: with UIWARP_MPA_REV=1 a plain rping -s on siw still pinged, or hung (client status $st, server status $sst)"
		show "$out.client.err" "$out.client" "$out.server"
	fi
else
	bad "$name: rping -s did not start in the guest"
	show "$out.start" "$out.listen"
fi
siw_check_guest "$name"

# ---------------------------------------------------------------- perftest
# perf_result FILE SIZE ITERS: the BW average of the result line
# " SIZE ITERS peak average msgrate" (perftest's RESULT_FMT), if FILE has
# one with a positive average.
perf_result() {
	awk -v size="$2" -v iters="$3" '
		NF == 5 && $1 == size && $2 == iters && $4 + 0 > 0 { print $4; found = 1 }
		END { exit !found }' "$1"
}

# perf_run NAME TOOL SIZE ITERS to-siw|from-siw: one run, both sides;
# status 0 when both exited 0 with their result lines.  Sets PERF_BW.
# The host's client reaches the guest's server through relay.py (on
# port R), which connects each connection only once the server listens:
# perftest's client connects a second time as soon as their exchange
# over the first connection is done, while the server in the emulated
# guest has yet to listen again (relay.py says more).
perf_run() {
	local name=$1 tool=$2 size=$3 iters=$4 dir=$5 out=$SIW_TMP/$1 st sst
	local args=(-R -s "$size" -n "$iters")
	if [ "$dir" = from-siw ]; then
		host_start "$name.server" 120 "${RUN[@]}" "$tool" "${args[@]}" -p "$Q" --source_ip 127.0.0.1
		wait_listen "$Q" "$HOST_PID" ||
			{ echo "$tool -R on uiwarp does not listen on $Q" > "$out.check"; return 1; }
		guest_run -t 90 "$tool -d siw0 ${args[*]} -p $Q $GUEST_HOST_ADDR 2>&1" > "$out.client" 2>&1
		st=$?
		host_wait "$HOST_PID"
		sst=$?
		cp "$SIW_TMP/$name.server.out" "$out.server"
	else
		if ! job_start "$tool -d siw0 ${args[*]} -p $P 2>&1" > "$out.start" 2>&1 ||
		   ! guest_wait_listen "$P" -t 30 > "$out.listen" 2>&1; then
			cat "$out.start" "$out.listen" > "$out.check"
			return 1
		fi
		timeout -s KILL 90 "${RUN[@]}" "$tool" "${args[@]}" -p "$R" 127.0.0.1 > "$out.client" 2>&1
		st=$?
		job_wait "$JOB" 60 "$out.server"
		sst=$?
		[ "$sst" -eq 124 ] && job_end "$JOB" "$P"
	fi
	{
		echo "client status $st, server status $sst"
		PERF_BW=$(perf_result "$out.client" "$size" "$iters") ||
			echo "no result line \"$size $iters ...\" from the client"
		perf_result "$out.server" "$size" "$iters" > /dev/null ||
			echo "no result line \"$size $iters ...\" from the server"
	} > "$out.check"
	[ "$st" -eq 0 ] && [ "$sst" -eq 0 ] && [ "$(wc -l < "$out.check")" -eq 1 ]
}

# perf_pair NAME TOOL SIZE ITERS to-siw|from-siw.  perftest under
# emulation sometimes cannot estimate the guest's clock rate ("Correlation
# coefficient r^2: ... < 0.9", then "Can't produce a report" and exit 1,
# after the transfer): only that failure is run again, once.
perf_pair() {
	local name=$1 tool=$2 size=$3 iters=$4 dir=$5 out=$SIW_TMP/$1 how
	how="host $tool -> guest $tool (server)"
	[ "$dir" = from-siw ] && how="guest $tool -> host $tool (server)"
	if ! perf_run "$@"; then
		if grep -q "Correlation coefficient" "$out.client" "$out.server" 2> /dev/null; then
			echo "# $name: perftest could not estimate the guest's clock rate; run again"
			perf_run "$@"
		else
			false
		fi
	fi
	# shellcheck disable=SC2181  # perf_run's status, or its second run's
	if [ $? -eq 0 ]; then
		ok "$name: $how -R -s $size -n $iters: both exit 0 with the result line, $PERF_BW MB/s average"
	else
		bad "$name: $how -R -s $size -n $iters"
		show "$out.check" "$out.client" "$out.server"
	fi
	siw_check_guest "$name"
}

R=$(guest_free_ports 1)
if ! host_listen relay 600 "relay listening" python3 "$src/tests/interop/relay.py" \
	--run "$GUEST_RUN" --listen "$R" --to "$P"; then
	show "$SIW_TMP/relay.out" "$SIW_TMP/relay.err"
	siw_die "relay.py did not start"
fi
perf_pair write-to-siw-65536 ib_write_bw 65536 20 to-siw
perf_pair write-to-siw-4096 ib_write_bw 4096 50 to-siw
perf_pair write-from-siw-65536 ib_write_bw 65536 20 from-siw
perf_pair write-from-siw-4096 ib_write_bw 4096 50 from-siw
perf_pair read-to-siw-65536 ib_read_bw 65536 20 to-siw
perf_pair read-to-siw-4096 ib_read_bw 4096 50 to-siw
perf_pair read-from-siw-65536 ib_read_bw 65536 20 from-siw
perf_pair read-from-siw-4096 ib_read_bw 4096 50 from-siw

siw_finish
