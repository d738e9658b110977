# The counting of the script tests (tests/*/test_*.sh); source it (bash).
#
#   ok "what held"        a passed check
#   bad "what failed"     a failed check
#   show FILE...          the start of each non-empty FILE, after a failure
#                         (its end with SHOW_END=1)
#   expect_line NAME FILE REGEX WHAT
#                         a check: a line of FILE matches REGEX (grep -E);
#                         FILE shown when none does
#   check_summary         "N checks, M failed"; status 0 only with no failure
#   fail "why"            for tests that stop at their first failure:
#                         "FAIL: why" on stderr, exit 1
#   check_workdir         makes $tmp, a directory removed on exit, and
#                         $pids, processes of the test killed then
#   free_udp_port         prints a UDP port that no socket of this host
#                         is bound to now, below the ephemeral range and
#                         never 9899 (SCTP over UDP's default, RFC 6951,
#                         which a test must leave to the host)
#   free_tcp_port         the same for TCP (for programs that take a fixed
#                         port, such as rping -p and perftest -p)
#   wait_tcp_listen PORT PID [SECONDS]
#                         returns once a socket listens on TCP PORT (ss),
#                         polling for at most SECONDS (default 20); 1 if
#                         none did or PID ended first
#   rping_pattern N SIZE  rping's data of ping N at SIZE, without the NUL
#   bg_start NAME stdout|stderr CMD...
#                         runs CMD in the background (a process of the
#                         test: no timeout(1) in between, signals reach
#                         it), the chosen output on a pipe read from
#                         $bgfd, the other in $tmp/NAME.err or .out;
#                         sets $bgpid (in $pids too)
#   wait_line FD GLOB LOG reads lines from FD, copying them to LOG, until
#                         one matches GLOB (30 s at most); the line is in
#                         $line; 1 if none came
#   mute_peer_start NAME  a TCP listener on 127.0.0.1 (python3) that
#                         accepts every connection, reads once and never
#                         answers nor closes; sets $mute_port, and
#                         $mute_fd, from which a line "received N" comes
#                         for each connection once it has N octets (the
#                         lines are copied to $tmp/NAME.out by wait_line)
#
# A test may redefine check_tag to put something (in CHECK_TAG) before
# each check's message, such as the time it took.

checks=0
failures=0
check_tag() { CHECK_TAG=; }
ok() {
	checks=$((checks + 1))
	check_tag
	echo "ok   ${CHECK_TAG}$*"
}
bad() {
	checks=$((checks + 1))
	failures=$((failures + 1))
	check_tag
	echo "FAIL ${CHECK_TAG}$*"
}
show() {
	local f
	for f in "$@"; do
		[ -s "$f" ] || continue
		echo "  --- ${f##*/}"
		if [ "${SHOW_END:-0}" = 1 ]; then
			tail -c 3000 "$f"
		else
			head -c 4000 "$f"
		fi | sed 's/^/  | /'
	done
}
expect_line() {
	if grep -Eq -- "$3" "$2"; then
		ok "$1: $4"
	else
		bad "$1: $4 (no line matching /$3/ in ${2##*/})"
		show "$2"
	fi
}
check_summary() {
	echo "$checks checks, $failures failed"
	[ "$failures" -eq 0 ]
}
fail() {
	echo "FAIL: $*" >&2
	exit 1
}
free_udp_port() {
	free_port udp
}
free_tcp_port() {
	free_port tcp
}
# free_port udp|tcp: what free_udp_port and free_tcp_port print.
free_port() {
	local f addr used=" " lo=32768 port i
	for f in /proc/net/$1 /proc/net/${1}6; do
		[ -r "$f" ] || continue
		while read -r _ addr _; do
			[[ $addr == *:* ]] && used+="$((16#${addr##*:})) "
		done <"$f"
	done
	read -r lo _ </proc/sys/net/ipv4/ip_local_port_range
	[ "$lo" -gt 11024 ] || lo=32768
	for ((i = 0; i < 100; i++)); do
		port=$((10000 + (RANDOM * 32768 + RANDOM) % (lo - 10000)))
		[ "$port" -ne 9899 ] && [[ $used != *" $port "* ]] &&
			{ echo "$port"; return 0; }
	done
	echo "no free ${1^^} port found" >&2
	return 1
}

wait_tcp_listen() {
	local port=$1 pid=$2 secs=${3:-20} i
	for ((i = 0; i < secs * 20; i++)); do
		ss -ltnH "sport = :$port" 2>/dev/null | grep . >/dev/null &&
			return 0
		kill -0 "$pid" 2>/dev/null || return 1
		sleep 0.05
	done
	return 1
}

# rping's ping data (librdmacm's examples/rping.c, rdma-core 44
# behaviour): "rdma-ping-N: " then the letters 'A'..'z' in a run
# starting at letter 65 + N (mod 58), cut at SIZE - 1 (the last octet is
# the NUL).
rping_pattern() {
	local ping=$1 size=$2 head s i c out
	head="rdma-ping-$ping: "
	c=$((65 + ping % 58))
	s=""
	for ((i = 0; i < 58; i++)); do
		s+=$(printf "\\$(printf %03o $((65 + (c - 65 + i) % 58)))")
	done
	out=$head
	while [ ${#out} -lt $((size - 1)) ]; do
		out+=$s
	done
	printf '%s' "${out:0:$((size - 1))}"
}

check_workdir() {
	tmp=$(mktemp -d)
	pids=()
	trap check_workdir_cleanup EXIT
}
check_workdir_cleanup() {
	local p
	for p in "${pids[@]}"; do
		kill -KILL "$p" 2>/dev/null
	done
	wait 2>/dev/null
	rm -rf "$tmp"
}

bg_start() {
	local name=$1 which=$2
	shift 2
	mkfifo "$tmp/$name.fifo"
	if [ "$which" = stdout ]; then
		"$@" >"$tmp/$name.fifo" 2>"$tmp/$name.err" &
	else
		"$@" 2>"$tmp/$name.fifo" >"$tmp/$name.out" &
	fi
	bgpid=$!
	pids+=("$bgpid")
	exec {bgfd}<"$tmp/$name.fifo"
}

wait_line() {
	local fd=$1 glob=$2 log=$3
	while IFS= read -r -t 30 line <&"$fd"; do
		printf '%s\n' "$line" >>"$log"
		# shellcheck disable=SC2053
		[[ $line == $glob ]] && return 0
	done
	return 1
}

mute_peer_start() {
	bg_start "$1" stdout python3 -c '
import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(8)
print("listening", s.getsockname()[1], flush=True)
held = []
while True:
    c, _ = s.accept()
    held.append(c)
    print("received", len(c.recv(65536)), flush=True)
'
	mute_fd=$bgfd
	wait_line "$mute_fd" "listening *" "$tmp/$1.out" ||
		fail "the mute peer did not start"
	mute_port=${line##* }
}
