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
# Six tests of a second each, and their setup, in one client.
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

port=$(free_tcp_port) || fail "no free TCP port"
name=qperf
if serve "$name" "$port" "$run" qperf -lp "$port"; then
	# Two clients in turn: the data tests, then the atomics.
	while read -r cname tests; do
		# shellcheck disable=SC2086
		client "$cname" "$run" qperf -lp "$port" -cm1 -t 1 127.0.0.1 $tests
		if [ "$crc" -eq 0 ]; then
			ok "$cname: the client exits 0"
			# shellcheck disable=SC2086
			figures "$cname" $tests
		else
			bad "$cname: client exit $crc"
			show "$tmp/$cname.cout" "$tmp/$cname.cerr" "$tmp/$name.serr"
		fi
	done <<-'EOF'
	qperf rc_bw rc_lat rc_rdma_read_bw rc_rdma_write_bw rc_rdma_write_lat rc_rdma_read_lat
	qperf-atomic rc_fetch_add_mr rc_compare_swap_mr
	EOF

	if kill -0 "$spid" 2>/dev/null; then
		ok "$name: the server serves on after its clients"
	else
		bad "$name: the server ended"
		show "$tmp/$name.sout" "$tmp/$name.serr"
	fi
	reap "$name" stop
	if [ -s "$tmp/$name.serr" ]; then
		bad "$name: the server wrote to stderr"
		show "$tmp/$name.serr"
	else
		ok "$name: the server reported no error"
	fi
fi

check_summary
