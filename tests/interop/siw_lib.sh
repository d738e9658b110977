# Shared part of the siw interop tests (test_siw_*.sh); source it (bash)
# after setting build and src:
#
#   source "$src/tests/interop/siw_lib.sh"
#   siw_boot NAME NHOSTFWD NGUESTFWD   # builds (cached) and boots the guest,
#                                      # fails the test with the reason
#   ... scenarios: ok / bad / show, host_start / host_wait, job_start,
#       rping_status / rping_data_check (rping_lib.sh) ...
#   siw_finish                         # stops the guest, summary, exit
#
# A scenario that fails records FAIL and the test goes on with the next
# one; after each scenario siw_check_guest makes sure the guest is still
# alive (a crashed guest is a failure, reported with its console line,
# and is booted again for the scenarios that follow).

# shellcheck source=guest.sh
source "$src/tests/interop/guest.sh"

# shellcheck source=../check_lib.sh
source "$src/tests/check_lib.sh"

# shellcheck source=rping_lib.sh
source "$src/tests/interop/rping_lib.sh"

SIW_T0=$(date +%s.%N)
SIW_TMP=$(mktemp -d)
SIW_HOST_PIDS=()
declare -A SIW_COPIER=()		# server pid -> pid of the copier of its output
SIW_JOB_SEQ=0
SIW_HOSTFWD_TO=()
SIW_GUESTFWD_FROM=()

siw_secs() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }

SIW_LAST=$SIW_T0
# ok / bad MESSAGE (check_lib.sh): one check, with the time since the
# previous one; show FILE...: the end of each file (a scenario's output).
siw_lap() {
	SIW_LAP=$(siw_secs "$SIW_LAST")
	SIW_LAST=$(date +%s.%N)
}
check_tag() {
	siw_lap
	CHECK_TAG="[${SIW_LAP}s] "
}
SHOW_END=1

siw_cleanup() {
	local p
	for p in "${SIW_HOST_PIDS[@]}"; do
		kill "$p" 2> /dev/null
	done
	wait 2> /dev/null
	guest_stop 2> /dev/null
	rm -rf "$SIW_TMP"
}
trap siw_cleanup EXIT

# The harness itself failed (no guest): the test fails with the reason.
siw_die() {
	echo "FAIL $*"
	if [ -n "${GUEST_RUN:-}" ] && [ -f "$GUEST_RUN/console.log" ]; then
		echo "  --- end of the guest console ($GUEST_RUN/console.log)"
		tail -n 30 "$GUEST_RUN/console.log" | sed 's/^/  | /'
	fi
	echo "$checks checks, $((failures + 1)) failed"
	exit 1
}

# siw_boot NAME NHOST NGUEST: builds or reuses the guest, boots it with
# NHOST forwarded host ports (HOST_PORTS[], the same port in the guest)
# and NGUEST ports the guest reaches at 10.0.2.100 (GUEST_PORTS[], the
# same port on the host's 127.0.0.1).  Prints the versions tested.
# Services on fixed ports: for each port G of SIW_HOSTFWD_TO[], a free
# host port forwarded to the guest's G (SIW_HOSTFWD_PORT[], in order);
# for each port G of SIW_GUESTFWD_FROM[], a free host port that the
# guest reaches at 10.0.2.100:G (SIW_GUESTFWD_PORT[]).
siw_boot() {
	local name=$1 nh=$2 ng=$3 t a=() p i
	local nt=${#SIW_HOSTFWD_TO[@]} nf=${#SIW_GUESTFWD_FROM[@]}
	t=$(date +%s.%N)
	guest_setup "$build" > "$SIW_TMP/setup.log" 2>&1 ||
		{ show "$SIW_TMP/setup.log"; siw_die "$name: the siw guest could not be built"; }
	read -r -a p <<< "$(guest_free_ports $((nh + ng + nt + nf)))"
	HOST_PORTS=("${p[@]:0:nh}")
	GUEST_PORTS=("${p[@]:nh:ng}")
	SIW_HOSTFWD_PORT=("${p[@]:nh+ng:nt}")
	SIW_GUESTFWD_PORT=("${p[@]:nh+ng+nt:nf}")
	for x in "${HOST_PORTS[@]}"; do a+=(--hostfwd "$x"); done
	for x in "${GUEST_PORTS[@]}"; do a+=(--guestfwd "$x"); done
	for ((i = 0; i < nt; i++)); do
		a+=(--hostfwd "${SIW_HOSTFWD_PORT[i]}:${SIW_HOSTFWD_TO[i]}")
	done
	for ((i = 0; i < nf; i++)); do
		a+=(--guestfwd "${SIW_GUESTFWD_FROM[i]}:${SIW_GUESTFWD_PORT[i]}")
	done
	if ! guest_start "${a[@]}" 2> "$SIW_TMP/boot.log"; then
		show "$SIW_TMP/boot.log"
		siw_die "$name: the siw guest did not boot"
	fi
	echo "# guest up in $(siw_secs "$t")s ($(tr '\n' ' ' < "$SIW_TMP/boot.log"))"
	SIW_LAST=$(date +%s.%N)
	echo "# tested against: $(grep -E '^(kernel_package|kernel_version|siw_source)=' "$GUEST_CACHE/guest/info" | tr '\n' ' ')"
	echo "# rdma-core in the guest: $(grep -oE '(librdmacm1|rdmacm-utils|perftest)=[^ ]*' "$GUEST_CACHE/guest/info" | tr '\n' ' ')"
}

# After a scenario: the guest must still be alive.  A dead guest is a
# failure of that scenario; it is booted again for the next ones.
siw_check_guest() {
	local what=$1 st
	st=$(guest_status 2> /dev/null)
	[ "$st" = running ] && return 0
	bad "$what: the guest died: $st"
	guest_console -n 30 2> /dev/null | sed 's/^/  | /'
	guest_restart > "$SIW_TMP/restart.log" 2>&1 ||
		{ show "$SIW_TMP/restart.log"; siw_die "the guest did not boot again"; }
	# What the scenarios need in the guest besides its initramfs.
	if [ -n "${SIW_AFTER_RESTART:-}" ]; then
		$SIW_AFTER_RESTART || siw_die "the guest could not be set up again"
	fi
	return 1
}

# host_start NAME SECONDS CMD...: a host program in the background, its
# output in $SIW_TMP/NAME.out; HOST_PID is its pid (the timeout's).
host_start() {
	local name=$1 secs=$2
	shift 2
	timeout -s KILL "$secs" "$@" > "$SIW_TMP/$name.out" 2>&1 &
	HOST_PID=$!
	SIW_HOST_PIDS+=("$HOST_PID")
}

# host_listen NAME SECONDS PATTERN CMD...: a host server in the background
# that prints PATTERN on its first line once it listens; returns when it
# does (or 1 when it exits or says nothing for 30 s).  HOST_PID is its pid.
host_listen() {
	local name=$1 secs=$2 pat=$3 fd line
	shift 3
	rm -f "$SIW_TMP/$name.fifo"
	mkfifo "$SIW_TMP/$name.fifo"
	timeout -s KILL "$secs" "$@" > "$SIW_TMP/$name.fifo" \
		2> "$SIW_TMP/$name.err" &
	HOST_PID=$!
	SIW_HOST_PIDS+=("$HOST_PID")
	exec {fd}< "$SIW_TMP/$name.fifo"
	if ! IFS= read -r -t 30 line <&"$fd" || [[ $line != *"$pat"* ]]; then
		echo "$line" > "$SIW_TMP/$name.out"
		exec {fd}<&-
		return 1
	fi
	echo "$line" > "$SIW_TMP/$name.out"
	cat <&"$fd" >> "$SIW_TMP/$name.out" &
	SIW_COPIER[$HOST_PID]=$!
	exec {fd}<&-
	return 0
}

# SIW_START_DELAY_MS: how long uiwarp, as the initiator, waits after
# siw's accepting Reply before its first FPDU (uiw_conn_param's
# start_delay_ms; --start-delay of uiwarp-ping and uiw_peer).
#
# Why: siw in Linux 6.1 sends its MPA Reply before it reads FPDUs (a
# responder must read them from its Reply on, RFC 5044 §7.1.3): in
# siw_accept() the Reply goes out first, then the socket's upcall is
# switched to FPDU (or RTR) reading.  An FPDU that arrives in between is
# left unread, and the connection hangs: about one connection in seven
# here, with and without peer-to-peer mode (the RTR is lost the same way,
# and a peer-to-peer connection that never reaches RTS at siw may crash
# the guest when closed).
SIW_START_DELAY_MS=${SIW_START_DELAY_MS:-100}

# host_wait PID: its exit status (137: killed by its timeout), once its
# output is all in its file.
host_wait() {
	local st
	wait "$1"
	st=$?
	[ -n "${SIW_COPIER[$1]:-}" ] && wait "${SIW_COPIER[$1]}"
	return $st
}

# job_start CMD...: a guest background job under a fresh name ($JOB).
job_start() {
	SIW_JOB_SEQ=$((SIW_JOB_SEQ + 1))
	JOB=j$SIW_JOB_SEQ
	guest_bg "$JOB" "$@"
}

# job_wait NAME SECONDS FILE: its output into FILE; returns its status
# (124: still running after SECONDS).
job_wait() {
	guest_bg_wait "$1" -t "$2" > "$3" 2>&1
}

# job_end NAME PORT: kills a job that is still running and waits until
# nothing listens on PORT any more.  (A killed job's name is not reused.)
job_end() {
	guest_bg_kill "$1" KILL > /dev/null 2>&1
	local hex
	hex=$(printf '%04X' "$2")
	guest_run -t 20 "n=100; while grep -q ':$hex 0\\{8\\}:0000 0A ' /proc/net/tcp && [ \$n -gt 0 ]; do sleep 0.1; n=\$((n - 1)); done; [ \$n -gt 0 ]" \
		> /dev/null 2>&1
}

# copy_in FILE PORT DEST: FILE into the guest as DEST (mode 755): busybox
# nc listens on PORT (forwarded), the host sends the file, the guest's MD5
# sum of it must match.
copy_in() {
	local file=$1 port=$2 dest=$3 sum got
	sum=$(md5sum < "$file" | cut -d' ' -f1)
	job_start "nc -l -p $port > $dest" > /dev/null 2>&1 &&
		guest_wait_listen "$port" -t 30 > /dev/null 2>&1 || return 1
	cat "$file" > "/dev/tcp/127.0.0.1/$port" || return 1
	job_wait "$JOB" 30 "$SIW_TMP/nc.out" || return 1
	got=$(guest_run -t 30 "chmod 755 $dest && md5sum $dest" | cut -d' ' -f1)
	[ "$got" = "$sum" ]
}

# guest_dmesg_mark: remembers how much of the kernel log exists, so that
# guest_dmesg_new shows what a scenario added.
guest_dmesg_mark() {
	SIW_DMESG_LINES=$(guest_run -t 20 'dmesg | wc -l' 2> /dev/null | tr -dc 0-9)
	: "${SIW_DMESG_LINES:=0}"
}
guest_dmesg_new() {
	guest_run -t 20 "dmesg | tail -n +$((SIW_DMESG_LINES + 1))" 2> /dev/null
}

# The end: stops the guest, fails on a kernel complaint, prints the count.
siw_finish() {
	local crash
	guest_stop > /dev/null 2>&1
	crash=$(grep -m 1 -E 'Kernel panic|kernel BUG|BUG: |Oops: |WARNING: ' \
		"$GUEST_RUN/console.log" 2> /dev/null)
	if [ -n "$crash" ]; then
		bad "the guest kernel complained: $crash"
	fi
	if [ "$failures" -eq 0 ]; then
		rm -rf "$GUEST_RUN"
	else
		echo "# the guest's run directory (console.log): $GUEST_RUN"
	fi
	echo "# total $(siw_secs "$SIW_T0")s"
	check_summary
	exit $?
}

# siw_use_p2p: replaces siw.ko in the guest by the build whose connections
# start in peer-to-peer mode (build-guest.sh: siw 6.1 has only a
# compile-time constant for it), so that siw initiates with RFC 6581's
# A bit and an RTR.  Also the set-up after a restart (SIW_AFTER_RESTART).
siw_use_p2p() {
	guest_run -t 60 "rdma link delete siw0 && rmmod siw && insmod /root/siw-p2p.ko &&
		rdma link add siw0 type siw netdev eth0 && test -e /sys/class/infiniband/siw0" \
		> "$SIW_TMP/use-p2p.log" 2>&1 && return 0
	show "$SIW_TMP/use-p2p.log"
	return 1
}
