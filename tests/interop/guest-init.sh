#!/bin/sh
# PID 1 of the siw guest's initramfs (build-guest.sh installs it as /init and
# links /bin/uiw-bg and /bin/uiw-waitport to it).
#
# As /init it mounts the pseudo file systems, loads the modules listed in
# /etc/uiw/modules (dependency order, made on the host from modules.dep),
# gives eth0 the QEMU user-network address 10.0.2.15/24, creates the soft
# iWARP device siw0 on eth0, records the outcome in /tmp/boot.status and then
# serves commands from the host on the second serial port, /dev/ttyS1:
#
#   host -> guest, one line:  @@C <id> <timeout-seconds> <base64 script>
#   guest -> host:            @@UIW-BEGIN <id>
#                             <base64 of the script's stdout and stderr>
#                             @@UIW-END <id> <exit status> <md5 of output>
#
# The script runs in its own session with stdin from /dev/null; after its
# timeout its whole process group is killed and the status is 124.  Output is
# sent as base64 so that no byte of it can be taken for a marker.  Anything
# before "@@C " on a line is ignored (a partial line left over from the time
# before the port was opened, or line noise).  A command whose id is the
# last one run is not run again: its reply is sent again, so that the host
# may repeat a command whose reply it missed without running it twice.
#
# As uiw-bg it keeps long-running commands (an rping server, say) in the
# background, each in its own session:
#   uiw-bg start NAME CMD...   uiw-bg status NAME   uiw-bg wait NAME SECONDS
#   uiw-bg out NAME            uiw-bg kill NAME [SIGNAL]
# As uiw-waitport PORT SECONDS it waits until a TCP socket listens on PORT.

PATH=/usr/sbin:/usr/bin:/sbin:/bin
export PATH

ctl_dir=/tmp/ctl
bg_root=/tmp/bg

say() {
	echo "uiw-guest: $*"
}

valid_name() {
	case $1 in
	'' | *[!A-Za-z0-9_.-]*) return 1 ;;
	esac
	return 0
}

valid_number() {
	case $1 in
	'' | *[!0-9]*) return 1 ;;
	esac
	return 0
}

# ---------------------------------------------------------------- uiw-bg
bg_main() {
	op=$1
	name=$2
	if ! valid_name "$name"; then
		echo "uiw-bg: bad or missing job name '$name'" >&2
		return 2
	fi
	d=$bg_root/$name
	case $op in
	start)
		shift 2
		if [ $# -eq 0 ]; then
			echo "uiw-bg: no command for $name" >&2
			return 2
		fi
		if [ -e "$d/pid" ] && [ ! -e "$d/rc" ]; then
			echo "uiw-bg: job $name is still running" >&2
			return 1
		fi
		rm -rf "$d"
		mkdir -p "$d"
		# shellcheck disable=SC2016 # expanded by the inner shell
		# A new session, so that "kill" reaches everything the job
		# starts and the control loop's clean-up reaches none of it.
		setsid sh -c 'sh -c "$1" > "$2/out" 2>&1 < /dev/null
			echo $? > "$2/rc.tmp"; mv "$2/rc.tmp" "$2/rc"' \
			uiw-bg "$*" "$d" > /dev/null 2>&1 < /dev/null &
		echo $! > "$d/pid"
		echo "$!"
		;;
	status)
		if [ -e "$d/rc" ]; then
			echo "exited $(cat "$d/rc")"
		elif [ -e "$d/pid" ]; then
			echo running
		else
			echo "uiw-bg: no job $name" >&2
			return 1
		fi
		;;
	wait)
		t=${3:-60}
		if ! valid_number "$t"; then
			echo "uiw-bg: bad timeout '$t'" >&2
			return 2
		fi
		if [ ! -e "$d/pid" ]; then
			echo "uiw-bg: no job $name" >&2
			return 1
		fi
		# The job is not our child: poll for the status file it
		# leaves, ten times a second, for at most t seconds.
		n=$((t * 10))
		while [ ! -e "$d/rc" ] && [ "$n" -gt 0 ]; do
			sleep 0.1
			n=$((n - 1))
		done
		if [ ! -e "$d/rc" ]; then
			echo "uiw-bg: job $name still running after ${t}s" >&2
			return 124
		fi
		return "$(cat "$d/rc")"
		;;
	out)
		[ -e "$d/out" ] && cat "$d/out"
		;;
	kill)
		sig=${3:-TERM}
		if [ ! -e "$d/pid" ]; then
			echo "uiw-bg: no job $name" >&2
			return 1
		fi
		[ -e "$d/rc" ] && return 0
		kill -s "$sig" "-$(cat "$d/pid")" 2>/dev/null
		return 0
		;;
	*)
		echo "uiw-bg: unknown operation '$op'" >&2
		return 2
		;;
	esac
}

# ---------------------------------------------------------- uiw-waitport
port_listening() {
	hex=$(printf '%04X' "$1")
	# /proc/net/tcp: "sl local rem st ...", state 0A is LISTEN.
	grep -q ":$hex 0\{8,32\}:0000 0A " /proc/net/tcp /proc/net/tcp6 2>/dev/null
}

waitport_main() {
	port=$1
	t=${2:-30}
	if ! valid_number "$port" || ! valid_number "$t"; then
		echo "usage: uiw-waitport PORT SECONDS" >&2
		return 2
	fi
	n=$((t * 10))
	while ! port_listening "$port"; do
		if [ "$n" -le 0 ]; then
			echo "uiw-waitport: nothing listens on $port after ${t}s" >&2
			return 124
		fi
		sleep 0.1
		n=$((n - 1))
	done
	return 0
}

# ------------------------------------------------------- control channel
# run_one ID TIMEOUT BASE64: runs the script; leaves its output in
# $ctl_dir/out and its status in $rc.
run_one() {
	mkdir -p "$ctl_dir"
	rm -f "$ctl_dir/timedout"
	if printf '%s' "$3" | base64 -d > "$ctl_dir/cmd" 2>/dev/null; then
		# The script and its watchdog each lead a new session (setsid
		# does not fork here: a background job is no group leader),
		# so that "kill -9 -pid" ends each with all its children.
		setsid sh "$ctl_dir/cmd" > "$ctl_dir/out" 2>&1 < /dev/null 3>&- &
		pid=$!
		# shellcheck disable=SC2016 # expanded by the inner shell
		setsid sh -c 'sleep "$1"; : > "$3/timedout"; kill -9 "-$2"' \
			uiw-watchdog "$2" "$pid" "$ctl_dir" \
			> /dev/null 2>&1 < /dev/null 3>&- &
		wd=$!
		wait "$pid"
		rc=$?
		# The watchdog may not have called setsid yet (then there is
		# no group -wd); the process first, then any child it has.
		kill -9 "$wd" 2>/dev/null
		kill -9 "-$wd" 2>/dev/null
		wait "$wd" 2>/dev/null
		[ -e "$ctl_dir/timedout" ] && rc=124
	else
		echo "uiw-guest: command $1 is not valid base64" > "$ctl_dir/out"
		rc=125
	fi
}

# send_reply ID STATUS: the reply to a command, from $ctl_dir/out, with the
# MD5 sum of the output so that the host can tell a damaged reply.
send_reply() {
	sum=$(md5sum < "$ctl_dir/out")
	printf '\n@@UIW-BEGIN %s\n' "$1"
	base64 "$ctl_dir/out"
	printf '@@UIW-END %s %s %s\n' "$1" "$2" "${sum%% *}"
}

ctl_loop() {
	tty=/dev/ttyS1
	# A failed redirection on "exec" would end PID 1: try it first.
	if ! (: <> "$tty") 2> /dev/null; then
		say "cannot open $tty"
		return 1
	fi
	exec 3<> "$tty"
	stty raw -echo -ixon -ixoff <&3
	# "uiw.trace" on the kernel command line logs each command's id on
	# the console.
	trace=
	grep -qw uiw.trace /proc/cmdline && trace=1
	last_id=
	last_rc=
	printf '\n@@UIW-READY\n' >&3
	while IFS= read -r line <&3; do
		case $line in
		*'@@C '*) line="@@C ${line##*@@C }" ;;
		*) continue ;;
		esac
		set -f
		# shellcheck disable=SC2086 # split the line into its fields
		set -- $line
		set +f
		[ $# -eq 4 ] || continue
		valid_name "$2" || continue
		valid_number "$3" || continue
		if [ "$2" = "$last_id" ]; then
			# The host asks again: it missed the reply (or its
			# first request seemed lost).  Never run it twice.
			[ -n "$trace" ] && say "command $2 repeated"
			send_reply "$2" "$last_rc" >&3
			continue
		fi
		[ -n "$trace" ] && say "command $2 received"
		run_one "$2" "$3" "$4"
		last_id=$2
		last_rc=$rc
		send_reply "$2" "$rc" >&3
		[ -n "$trace" ] && say "command $2 answered"
	done
	exec 3>&-
	return 1
}

# ------------------------------------------------------------------ boot
boot_fail() {
	say "BOOT FAILED: $*"
	echo "FAIL: $*" > /tmp/boot.status
}

boot() {
	mount -t proc proc /proc
	mount -t sysfs sysfs /sys
	mount -t devtmpfs devtmpfs /dev
	mkdir -p /dev/pts /dev/shm
	mount -t devpts devpts /dev/pts
	mount -t tmpfs tmpfs /dev/shm
	mount -t tmpfs tmpfs /tmp
	mkdir -p "$ctl_dir" "$bg_root"
	hostname uiw-guest
	kver=$(uname -r)
	say "kernel $kver"

	failed=
	while read -r m; do
		[ -n "$m" ] || continue
		if ! insmod "/lib/modules/$kver/$m" 2>> /tmp/boot.log; then
			case $m in
			# An accelerated CRC32c needs SSE 4.2; the generic
			# one does the same work.
			*/crc32c-intel.ko) ;;
			*) failed="$failed ${m##*/}" ;;
			esac
		fi
	done < /etc/uiw/modules
	[ -d /sys/kernel/config ] && mount -t configfs configfs /sys/kernel/config
	if [ -n "$failed" ]; then
		boot_fail "insmod failed:$failed"
		return
	fi

	n=100
	while [ ! -e /sys/class/net/eth0 ] && [ "$n" -gt 0 ]; do
		sleep 0.1
		n=$((n - 1))
	done
	ip link set lo up
	if ! ip link set eth0 up 2>> /tmp/boot.log ||
	   ! ip addr add 10.0.2.15/24 dev eth0 2>> /tmp/boot.log; then
		boot_fail "no eth0 (virtio-net)"
		return
	fi
	ip route add default via 10.0.2.2 2>> /tmp/boot.log
	if ! rdma link add siw0 type siw netdev eth0 2>> /tmp/boot.log ||
	   [ ! -e /sys/class/infiniband/siw0 ]; then
		boot_fail "rdma link add siw0 failed: $(tail -n 1 /tmp/boot.log)"
		return
	fi
	echo ok > /tmp/boot.status
	say "boot ok: siw0 on eth0 10.0.2.15"
}

case ${0##*/} in
uiw-bg)
	bg_main "$@"
	exit $?
	;;
uiw-waitport)
	waitport_main "$@"
	exit $?
	;;
esac

boot
# PID 1 must never exit: serve the host for as long as the guest runs.
while :; do
	ctl_loop || sleep 1
done
