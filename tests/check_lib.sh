# The counting of the script tests (tests/*/test_*.sh); source it (bash).
#
#   ok "what held"        a passed check
#   bad "what failed"     a failed check
#   show FILE...          the start of each non-empty FILE, after a failure
#                         (its end with SHOW_END=1)
#   check_summary         "N checks, M failed"; status 0 only with no failure
#   fail "why"            for tests that stop at their first failure:
#                         "FAIL: why" on stderr, exit 1
#   check_workdir         makes $tmp, a directory removed on exit, and
#                         $pids, processes of the test killed then
#   free_udp_port         prints a UDP port that no socket of this host
#                         is bound to now, below the ephemeral range and
#                         never 9899 (SCTP over UDP's default, RFC 6951,
#                         which a test must leave to the host)
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
check_summary() {
	echo "$checks checks, $failures failed"
	[ "$failures" -eq 0 ]
}
fail() {
	echo "FAIL: $*" >&2
	exit 1
}
free_udp_port() {
	local f addr used=" " lo=32768 port i
	for f in /proc/net/udp /proc/net/udp6; do
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
	echo "no free UDP port found" >&2
	return 1
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
