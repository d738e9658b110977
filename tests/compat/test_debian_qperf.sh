#!/usr/bin/env bash
# Debian 12's qperf (0.4.11, unmodified) on uiwarp through uiwarp-run,
# on the loopback address: a server, and a client that runs the reliable
# connected tests with their queue pairs connected through rdma_cm
# (-cm1, which iWARP requires: qperf then learns the server's rdma_cm
# port through rdma_get_src_port): Send/Receive bandwidth and latency,
# RDMA Read and RDMA Write bandwidth and latency, each for a short time
# (-t, ended by qperf's SIGALRM); then a second client against the same
# server with the atomics (FetchAdd, CmpSwap).  Each client exits 0 and
# every test prints its figure, above 0; the server serves both.
#
# usage: test_debian_qperf.sh <build-dir> <source-dir>
set -uo pipefail

# shellcheck source=compat_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/compat_lib.sh"
compat_init "$@" -- qperf
# Five tests of a second each, and their setup, in one client.
client_secs=40

# figures NAME TEST...: for each TEST, the client's output has its
# heading ("TEST:") and, under it, the figure qperf gives for it
# (bandwidth, latency or message rate) with a value above 0.
figures() {
	local name=$1 t
	shift
	for t in "$@"; do
		found "$name" "$tmp/$name.cout" "$t, a figure above 0" \
			-v t="$t:" '
			/^[a-z_0-9]+:$/ { cur = $1; next }
			cur == t && /^ +(bw|latency|msg_rate) += +[0-9.]+ / && $3 + 0 > 0 {
				print
			}'
	done
}

# rnr NAME: the server's log gained "no receive buffer posted" during
# client NAME's run.  qperf's rc_bw sends Sends as fast as it can and
# leaves the receiver's reposting to InfiniBand's receiver-not-ready
# retry; iWARP has none (RFC 5041 §7.2: a Send that finds no posted
# buffer ends the stream with a Terminate), so on a loaded machine its
# sender sometimes outruns the server's reposting, as it would on any
# iWARP device.  Such a run is qperf's, not uiwarp's, and is run again.
rnr() {
	local now
	now=$(grep -c 'no receive buffer posted' "$tmp/$name.serr")
	[ "$now" -gt "${rnr_seen:-0}" ] || return 1
	rnr_seen=$now
}

port=$(free_tcp_port) || fail "no free TCP port"
name=qperf
# The server logs (UIWARP_DEBUG) so that rnr can tell why a run failed.
if serve "$name" "$port" env UIWARP_DEBUG=2 "$run" qperf -lp "$port"; then
	# Clients in turn: Send bandwidth, the other data tests, the atomics.
	while read -r cname tests; do
		for attempt in 1 2 3; do
			# shellcheck disable=SC2086
			client "$cname" "$run" qperf -lp "$port" -cm1 -t 1 \
				127.0.0.1 $tests
			[ "$crc" -ne 0 ] && rnr "$cname" && [ "$attempt" -lt 3 ] ||
				break
			echo "note: $cname: qperf's sender outran its receiver's" \
				"reposting (see rnr); run again"
		done
		if [ "$crc" -eq 0 ]; then
			ok "$cname: the client exits 0"
			# shellcheck disable=SC2086
			figures "$cname" $tests
		else
			bad "$cname: client exit $crc"
			show "$tmp/$cname.cout" "$tmp/$cname.cerr" "$tmp/$name.serr"
		fi
	done <<-'EOF'
	qperf-send rc_bw
	qperf rc_lat rc_rdma_read_bw rc_rdma_write_bw rc_rdma_write_lat rc_rdma_read_lat
	qperf-atomic rc_fetch_add_mr rc_compare_swap_mr
	EOF

	if kill -0 "$spid" 2>/dev/null; then
		ok "$name: the server serves on after its clients"
	else
		bad "$name: the server ended"
		show "$tmp/$name.sout" "$tmp/$name.serr"
	fi
	reap "$name" stop
	# Its own messages, not uiwarp's log: none.
	if grep -v '^uiwarp' "$tmp/$name.serr" >"$tmp/$name.own"; then
		bad "$name: the server wrote to stderr"
		show "$tmp/$name.own"
	else
		ok "$name: the server reported no error"
	fi
fi

check_summary
