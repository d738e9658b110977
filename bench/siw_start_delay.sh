#!/usr/bin/env bash
# The start delay of the drop-in rdma_cm against Linux siw: how many
# connections that uiwarp initiates to siw hang, for each
# UIWARP_START_DELAY_MS, and what the delay costs where the peer is uiwarp
# itself.  Writes bench/siw-start-delay.md (make bench-siw-delay); never
# part of check.
#
# siw 6.1 sends its MPA Reply before it reads FPDUs and leaves a first
# FPDU that arrives in between unread (tests/interop/siw_lib.sh,
# SIW_START_DELAY_MS): the connection hangs.  The initiator's wait after
# the Reply (UIWARP_START_DELAY_MS, by default the constant
# UIW_RDMA_DEFAULT_START_DELAY_MS of include/uiwarp/rdma_option.h)
# closes that race.
#
# 1. siw: one QEMU guest (tests/interop/guest.sh) with a persistent
#    `rping -s -P` on siw; on the host, stock rping -c -C 1 through the
#    drop-in libraries, CONNS connections for each delay of DELAYS, the
#    delays taking turns connection by connection (so that a busier
#    moment hits all of them alike).  A connection that has not ended
#    after HANG_SECS is killed and counted as hung; one that ends
#    without its ping verified counts as failed.
# 2. loopback: rping -s -P and rping -c -C 1, both on uiwarp (the drop-in)
#    on 127.0.0.1, LOOP_CONNS connections with the delay 0 and as many
#    with the default (UIWARP_START_DELAY_MS unset), taking turns; the
#    time of each rping -c from start to exit.
#
# Variables (defaults): BUILD (build), CONNS (25), DELAYS ("0 2 10 25 50 100";
# "default" means UIWARP_START_DELAY_MS unset), HANG_SECS (10),
# LOOP_CONNS (20), BUSY ("0 2": part 1 once for each number, with that
# many busy loops on the host meanwhile, a busier machine on purpose),
# CLIENT (rping; uiwarp-ping: uiwarp's own tool with
# --start-delay, which needs no drop-in), OUT (bench/siw-start-delay.md).
# The outputs of the connections that did not complete stay in
# $BUILD/siw-start-delay/.
set -uo pipefail

src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$(cd "${BUILD:-$src/build}" && pwd) || exit 1
CONNS=${CONNS:-25}
DELAYS=${DELAYS:-0 2 10 25 50 100}
HANG_SECS=${HANG_SECS:-10}
LOOP_CONNS=${LOOP_CONNS:-20}
BUSY=${BUSY:-0 2}
CLIENT=${CLIENT:-rping}
OUT=${OUT:-$src/bench/siw-start-delay.md}

# shellcheck source=lib.sh
source "$src/bench/lib.sh"
# shellcheck source=../tests/interop/guest.sh
source "$src/tests/interop/guest.sh"
# shellcheck source=../tests/interop/rping_lib.sh
source "$src/tests/interop/rping_lib.sh"

die() {
	echo "siw_start_delay: $*" >&2
	exit 1
}

# The drop-in libraries: through uiwarp-run where it is built.
if [ -x "$build/uiwarp-run" ]; then
	RUN=("$build/uiwarp-run")
	RUN_NAME=uiwarp-run
else
	RUN=(env "LD_LIBRARY_PATH=$build/compat${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
	RUN_NAME="LD_LIBRARY_PATH=\$BUILD/compat"
fi
case $CLIENT in
rping)
	[ -e "$build/compat/librdmacm.so.1" ] ||
		die "$build/compat/librdmacm.so.1 is not built"
	;;
uiwarp-ping)
	[ -x "$build/uiwarp-ping" ] || die "$build/uiwarp-ping is not built"
	;;
*)
	die "CLIENT must be rping or uiwarp-ping"
	;;
esac
default=$(sed -n 's/^#define UIW_RDMA_DEFAULT_START_DELAY_MS[[:space:]]*\([0-9]*\).*/\1/p' \
	"$src"/include/uiwarp/*.h "$src"/src/compat/*.[ch] | sed -n 1p)
[ -n "$default" ] || [ "$CLIENT" != rping ] ||
	die "no UIW_RDMA_DEFAULT_START_DELAY_MS in include/uiwarp/rdma_option.h"
# Only the variable under test, and no other UIWARP_ setting.
while read -r v; do
	unset "$v"
done < <(env | sed -n 's/^\(UIWARP_[A-Z_]*\)=.*/\1/p')

logs=$build/siw-start-delay
rm -rf "$logs"
mkdir -p "$logs"
pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do
		kill "$p" 2> /dev/null
	done
	wait 2> /dev/null
	guest_stop > /dev/null 2>&1
}
trap cleanup EXIT
trap 'exit 130' INT TERM

now_ms() { echo $(($(date +%s%N) / 1000000)); }

# with_delay D CMD...: CMD with UIWARP_START_DELAY_MS=D ("default":
# unset).
with_delay() {
	local d=$1
	shift
	if [ "$d" = default ]; then
		"$@"
	else
		env "UIWARP_START_DELAY_MS=$d" "$@"
	fi
}

# connect D PORT SECS FILE: one connection, one ping of 64 octets,
# verified; prints "ok MS", "hung MS" or "failed MS".
connect() {
	local d=$1 port=$2 secs=$3 f=$4 t st
	t=$(now_ms)
	if [ "$CLIENT" = uiwarp-ping ]; then
		[ "$d" = default ] && d=$default
		timeout -s KILL "$secs" "$build/uiwarp-ping" -c -a 127.0.0.1 \
			-p "$port" -C 1 -S 64 -V --start-delay="$d" > "$f" 2>&1
		st=$?
		t=$(($(now_ms) - t))
		echo "status $st" > "$f.why"
		[ $st -eq 0 ] && grep -q "1 pings, .*data verified" "$f" && st=ok
	else
		# (Standard error apart: rping's messages would land inside
		# its buffered data lines.)
		with_delay "$d" timeout -s KILL "$secs" "${RUN[@]}" rping -c \
			-a 127.0.0.1 -p "$port" -C 1 -S 64 -v -V > "$f" 2> "$f.err"
		st=$?
		t=$(($(now_ms) - t))
		echo "status $st" > "$f.why"
		rping_status $st "$f.err" >> "$f.why" &&
			rping_data_check "$f" "ping data: " 1 64 >> "$f.why" && st=ok
	fi
	case $st in
	ok) echo "ok $t" ;;
	137) echo "hung $t" ;;
	*) echo "failed $t" ;;
	esac
}

# The guest: one forwarded port, a persistent rping -s on siw.
guest_setup "$build" > "$logs/setup.log" 2>&1 || die "the guest could not be built ($logs/setup.log)"
P=$(guest_free_ports 1)
t0=$(now_ms)
guest_start --hostfwd "$P" > "$logs/boot.log" 2>&1 || die "the guest did not boot ($logs/boot.log)"
echo "guest up in $((($(now_ms) - t0) / 1000)) s"
# The server on siw, at the start and after a restart of the guest.
server_start() {
	if ! guest_bg srv "rping -s -P -a $GUEST_ADDR -p $P -C 1 > /dev/null 2>&1" > /dev/null ||
	   ! guest_wait_listen "$P" -t 30 > /dev/null; then
		die "rping -s -P did not start in the guest"
	fi
}
server_start

load=$(cut -d' ' -f1-3 /proc/loadavg)
start_date=$(date -u '+%Y-%m-%d %H:%M UTC')
# crashed_after_hang: after a hung connection was killed, whether siw's
# teardown of it took the guest down (siw 6.1 may hit a kernel BUG,
# iwcm.c:969, closing a peer-to-peer connection that never reached RTS:
# tests/interop/README.md).  A command's round trip in the guest comes
# after its network work; a dead guest is booted again, with its server.
crashed_after_hang() {
	guest_run -t 20 true > /dev/null 2>&1
	[ "$(guest_status 2> /dev/null)" = running ] && return 1
	crashes+=("$1: $(guest_status 2> /dev/null)")
	# shellcheck disable=SC2119  # no arguments: the same guest again
	guest_restart > "$logs/restart.log" 2>&1 || die "the guest did not boot again ($logs/restart.log)"
	server_start
	return 0
}

# rounds WHERE PORT SECS N DELAY...: N connections with each DELAY,
# the delays taking turns; counted in n_ok, n_hung (n_crash: those whose
# end took the guest down) and n_failed, the times of the completed ones
# in times, all keyed by WHERE:DELAY.
declare -A n_ok=() n_hung=() n_crash=() n_failed=() times=()
failures=() crashes=()
rounds() {
	local where=$1 port=$2 secs=$3 n=$4 i d f res ms
	shift 4
	for ((i = 1; i <= n; i++)); do
		for d in "$@"; do
			f=$logs/$where-$d-$i.out
			read -r res ms <<< "$(connect "$d" "$port" "$secs" "$f")"
			if [ "$res" = hung ] && [ "$where" != loop ] &&
			   crashed_after_hang "$where, delay $d, connection $i"; then
				n_crash[$where:$d]=$((${n_crash[$where:$d]:-0} + 1))
				res="hung, the guest crashed"
			fi
			case $res in
			ok)
				times[$where:$d]+="$ms "
				rm -f "$f" "$f.why" "$f.err"
				;;
			hung*) n_hung[$where:$d]=$((${n_hung[$where:$d]:-0} + 1)) ;;
			*)
				n_failed[$where:$d]=$((${n_failed[$where:$d]:-0} + 1))
				failures+=("$where, delay $d, connection $i: $(head -n 1 "$f.why"); $(grep -m 1 . "$f.err" 2> /dev/null)")
				;;
			esac
			[ "$res" = ok ] && n_ok[$where:$d]=$((${n_ok[$where:$d]:-0} + 1))
			echo "$where delay $d, connection $i: $res ($ms ms)"
		done
		# A crash not seen after a hang (none so far) is listed too.
		[ "$where" != loop ] && crashed_after_hang "$where, round $i, not after a hang"
	done
}

read -r -a delays <<< "$DELAYS"
read -r -a levels <<< "$BUSY"
for level in "${levels[@]}"; do
	busy=()
	for ((b = 0; b < level; b++)); do
		timeout 3600 bash -c 'while :; do :; done' &
		busy+=($!)
		pids+=($!)
	done
	rounds "siw$level" "$P" "$HANG_SECS" "$CONNS" "${delays[@]}"
	[ ${#busy[@]} -gt 0 ] && kill "${busy[@]}"
done
guest_bg_kill srv KILL > /dev/null 2>&1
guest_stop > /dev/null 2>&1

# The loopback: both ends on uiwarp.
L=$(guest_free_ports 1)
lo=()
if [ "$CLIENT" = rping ]; then
	timeout -s KILL 600 "${RUN[@]}" rping -s -P -a 127.0.0.1 -p "$L" -C 1 \
		> "$logs/loop-server.out" 2>&1 &
	pids+=($!)
	wait_listen "$L" $! || die "rping -s -P on uiwarp did not listen ($logs/loop-server.out)"
	lo=(0 default)
	rounds loop "$L" 30 "$LOOP_CONNS" "${lo[@]}"
fi

# table WHERE DELAY...: one row per DELAY, the time of the completed
# connections as median, fastest and slowest.
table() {
	local where=$1 d k
	shift
	echo "| UIWARP_START_DELAY_MS | connections | completed | hung | of those, the guest crashed | failed | median (ms) | fastest (ms) | slowest (ms) |"
	echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"
	for d in "$@"; do
		k=$where:$d
		echo "${times[$k]:-}" | awk -v row="| $d | $((${n_ok[$k]:-0} + ${n_hung[$k]:-0} + ${n_failed[$k]:-0})) | ${n_ok[$k]:-0} | ${n_hung[$k]:-0} | ${n_crash[$k]:-0} | ${n_failed[$k]:-0} |" \
			"$awk_med"'{
			for (i = 1; i <= NF; i++) {
				a[i] = $i
				if (i == 1 || $i < lo) lo = $i
				if ($i > hi) hi = $i
			}
			if (NF) printf "%s %d | %d | %d |\n", row, med(a, NF), lo, hi
			else print row " - | - | - |" }'
	done
}

{
	echo "# The start delay against siw"
	echo
	echo "Written by \`bench/siw_start_delay.sh\` (\`make bench-siw-delay\`), $start_date."
	echo
	echo "- host: $(uname -r), $(nproc) CPUs ($(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | sed -n 1p)), load $load before the run"
	echo "- source: $(git -C "$src" rev-parse --short HEAD 2> /dev/null)$(git -C "$src" diff --quiet HEAD -- src include bench/siw_start_delay.sh 2> /dev/null || echo ' (with uncommitted changes)'); \`UIW_RDMA_DEFAULT_START_DELAY_MS\` = $default"
	echo "- guest: $(grep -E '^(kernel_package|siw_source)=' "$GUEST_CACHE/guest/info" | tr '\n' ' ')under $(guest_py accel 2> /dev/null || echo '?'), one vCPU"
	echo "- rdma-core: $(grep -oE '(librdmacm1|rdmacm-utils)=[^ ]*' "$GUEST_CACHE/guest/info" | tr '\n' ' ')(the guest's and the host's)"
	if [ "$CLIENT" = rping ]; then
		echo "- client: stock \`rping -c -C 1 -S 64 -v -V\` on the host through the drop-in libraries (\`${RUN_NAME}\`)"
	else
		echo "- client: \`uiwarp-ping -c -C 1 -S 64 -V --start-delay=D\`"
	fi
	echo
	echo "## Method"
	echo
	echo "The guest runs a persistent \`rping -s -P\` on siw; the host connects"
	echo "through QEMU's forwarded port, $CONNS connections per delay, the delays"
	echo "taking turns.  A connection still running after $HANG_SECS s is killed and"
	echo "counted as hung (a normal one takes well under a second);"
	echo "one that ends without its ping verified counts as failed.  After a"
	echo "hung connection, a command's round trip in the guest shows whether"
	echo "siw's teardown of it crashed the guest, which is then booted again."
	echo "Every connection has the drop-in's defaults otherwise (no other"
	echo "\`UIWARP_\` variable set)."
	echo "That is done once for each number of busy loops (\`bash -c 'while :; do"
	echo ":; done'\`) run on the host meanwhile: $BUSY."
	echo
	echo "## Connections uiwarp initiates to siw"
	echo
	for level in "${levels[@]}"; do
		echo "With $level busy loop(s) on the host:"
		echo
		table "siw$level" "${delays[@]}"
		echo
	done
	if [ ${#lo[@]} -gt 0 ]; then
		echo
		echo "## What the delay costs between two uiwarps (loopback)"
		echo
		echo "\`rping -c -C 1 -S 64\` from start to exit, both ends on the drop-in"
		echo "libraries on 127.0.0.1, $LOOP_CONNS connections each, taking turns"
		echo "(\"default\": UIWARP_START_DELAY_MS unset, $default ms):"
		echo
		table loop "${lo[@]}"
	fi
	echo
	echo "## Reading"
	echo
	# The sums over the busy levels: hung at each delay, and the largest
	# delay that still saw a hang.
	all=0 hung_at_0=0 hung_at_default=0 worst=none
	for d in "${delays[@]}"; do
		h=0
		for level in "${levels[@]}"; do
			h=$((h + ${n_hung[siw$level:$d]:-0}))
		done
		[ "$d" = 0 ] && hung_at_0=$h
		{ [ "$d" = "$default" ] || [ "$d" = default ]; } && hung_at_default=$h
		[ "$h" -gt 0 ] && [ "$d" != default ] &&
			{ [ "$worst" = none ] || [ "$d" -gt "$worst" ]; } && worst=$d
	done
	all=$((CONNS * ${#levels[@]}))
	for level in "${levels[@]}"; do
		clean=
		for d in "${delays[@]}"; do
			[ "${n_hung[siw$level:$d]:-0}" -eq 0 ] && clean+=" $d"
		done
		echo "With $level busy loop(s), the delays at which no connection hung:${clean:- none}."
	done
	echo
	[ "$worst" = none ] && worst="none saw one" || worst="$worst ms"
	echo "Without a delay, $hung_at_0 of $all connections to siw hung; the"
	echo "largest delay that still saw a hang: $worst.  At the default,"
	echo "$default ms, $hung_at_default of $all hung."
	if [ "$hung_at_default" -gt 0 ]; then
		echo "The default is too short for this machine."
	fi
	echo
	echo "A failed connection is one that ended without its ping verified, or"
	echo "with an exit status other than 0 (rping's own teardown race, status"
	echo "255 with \"rdma_get_cm_event: Bad file descriptor\", is forgiven"
	echo "as in the tests); status 139 is a crash (SIGSEGV)."
	if [ ${#crashes[@]} -gt 0 ]; then
		echo
		echo "The guest crashed after these hung connections (its console's line):"
		echo
		printf -- '- %s\n' "${crashes[@]}"
	fi
	if [ ${#failures[@]} -gt 0 ]; then
		echo
		echo "The failed connections (rping's exit status; its first message):"
		echo
		printf -- '- %s\n' "${failures[@]}"
	fi
	echo
	echo "The outputs of the connections that did not complete are in"
	echo "\`\$BUILD/siw-start-delay/\`."
	echo
	echo "## The default"
	echo
	echo "siw's window lies between the moment it sends its Reply and the"
	echo "moment it switches the socket to reading FPDUs (\`siw_accept()\` in"
	echo "drivers/infiniband/sw/siw/siw_cm.c): a few instructions, which take"
	echo "milliseconds here only because the guest is emulated, or longer"
	echo "when the host deschedules QEMU's vCPU thread in between.  The"
	echo "default is kept well above the largest delay that still saw a hang,"
	echo "for a host busier than this one: the price is the delay itself, once"
	echo "per connection uiwarp initiates (the loopback table: the median"
	echo "connection, start to exit, with 0 and with the default), nothing"
	echo "after.  Where the peer is not siw, \`UIWARP_START_DELAY_MS=0\`"
	echo "saves it.  Peer-to-peer mode (RFC 6581) is no way around it: siw"
	echo "loses the RTR the same way (\`SIW_START_DELAY_MS\` in"
	echo "tests/interop/siw_lib.sh)."
} > "$OUT"
echo "wrote $OUT"
