#!/usr/bin/env bash
# Debian 12's perftest (4.5, unmodified) on uiwarp through uiwarp-run,
# server and client on the loopback address, each pair on a free port of
# its own (-p): RDMA Write, RDMA Read and Send bandwidth and latency, and
# atomics (FetchAdd and CmpSwap), all connected through rdma_cm (-R,
# which iWARP requires), each a fixed number of iterations (-n).  Every
# pair: both exit 0, the client shows uiwarp0 and the iWARP transport,
# and prints its result table: the header, and a row for the size and
# iteration count asked for with figures above zero.  Write with
# Immediate (--write_with_imm) where this perftest offers it.
#
# ib_write_lat's server posts the first RDMA Write, and an iWARP responder
# sends nothing before the initiator's first message (RFC 5044 §7.1.2):
# it runs as it is because the drop-in's initiator opens in peer-to-peer
# mode by default (RFC 6581 §9.2, uiwarp-rdma(7)).
#
# usage: test_debian_perftest.sh <build-dir> <source-dir>
set -uo pipefail

# shellcheck source=compat_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/compat_lib.sh"
compat_init "$@" -- ib_write_bw ib_read_bw ib_send_bw ib_write_lat \
	ib_read_lat ib_send_lat ib_atomic_bw ib_atomic_lat

# perftest_race NAME: the client failed as perftest 4.5 itself fails
# (true), not as uiwarp could make it fail.  After the parameters are
# exchanged, perftest's client connects its data connection without
# waiting for the server to bind and listen for it; a connection to a
# port nobody listens on is refused (REJECTED, -ECONNREFUSED, as iWARP
# devices report it), and perftest 4.5's retry then uses the ids it has
# just destroyed (a use after free, fixed in perftest after 4.5 by
# "Fix crashes and logical flaws in RDMA CM connection retry"): the
# client dies of SIGSEGV, or fails, right after that REJECTED.
perftest_race() {
	[ "$crc" -ne 0 ] &&
		grep -e 'Event: RDMA_CM_EVENT_REJECTED; error: -111' \
			"$tmp/$1.cerr" >/dev/null
}

# perf_case NAME KIND ENV PROG SIZE ITERS ARGS...: a PROG server and
# client with -R -s SIZE -n ITERS ARGS, ENV (VAR=VALUE words, or -) in
# the environment of both; KIND bw or lat says which table.  A run that
# perftest_race explains is run again, twice at most.
perf_case() {
	local name=$1 kind=$2 prog=$4 size=$5 iters=$6 port head attempt
	local -a e=()
	[ "$3" = - ] || read -ra e <<<"$3"
	shift 6
	for attempt in 1 2 3; do
		port=$(free_tcp_port) || { bad "$name: no free TCP port"; return; }
		serve "$name" "$port" env "${e[@]}" "$run" "$prog" -R -F \
			-p "$port" -s "$size" -n "$iters" "$@" || return
		client "$name" env "${e[@]}" "$run" "$prog" -R -F -p "$port" \
			-s "$size" -n "$iters" "$@" 127.0.0.1
		reap "$name"
		perftest_race "$name" && [ "$attempt" -lt 3 ] || break
		echo "note: $name: perftest's data connection came before its" \
			"server listened, and its retry crashed (perftest's own" \
			"bug, see perftest_race); run again"
	done
	pair_ok "$name" || return
	expect_line "$name" "$tmp/$name.cout" \
		'Device +: uiwarp0([[:space:]]|$)' "the client runs on uiwarp0"
	expect_line "$name" "$tmp/$name.cout" \
		'Transport type : IW([[:space:]]|$)' "over iWARP"
	if [ "$kind" = bw ]; then
		head='^ #bytes +#iterations +BW peak\[MB/sec\] +BW average\[MB/sec\] +MsgRate\[Mpps\]'
	else
		head='^ #bytes +#iterations +t_min\[usec\] +t_max\[usec\] +t_typical\[usec\] +t_avg\[usec\]'
	fi
	expect_line "$name" "$tmp/$name.cout" "$head" "the $kind result table"
	# The row: size, iterations, then figures, the first two (peak and
	# average bandwidth; least and most latency) above 0.
	found "$name" "$tmp/$name.cout" \
		"a result row of $size octets x $iters, the first two figures above 0" \
		-v s="$size" -v n="$iters" '
		$1 == s && $2 == n && NF >= 5 {
			good = $3 + 0 > 0 && $4 + 0 > 0
			for (i = 3; i <= NF; i++)
				if ($i !~ /^[0-9]+(\.[0-9]+)?$/)
					good = 0
			if (good)
				print
		}'
}

#          name          kind  environment  program        size   iters  options
while read -r name kind envs prog size iters opts; do
	[ "$opts" = - ] && opts=
	opts=${opts//,/ }
	# shellcheck disable=SC2086
	perf_case "$name" "$kind" "$envs" "$prog" "$size" "$iters" $opts
done <<'EOF'
write_bw         bw    -            ib_write_bw    65536  2000   -
write_bw_small   bw    -            ib_write_bw    64     5000   -
read_bw          bw    -            ib_read_bw     65536  2000   -
send_bw          bw    -            ib_send_bw     65536  2000   -
write_lat        lat   -            ib_write_lat   64     2000   -
read_lat         lat   -            ib_read_lat    64     2000   -
send_lat         lat   -            ib_send_lat    64     2000   -
send_lat_4k      lat   -            ib_send_lat    4096   1000   -
atomic_bw        bw    -            ib_atomic_bw   8      2000   -
atomic_bw_cas    bw    -            ib_atomic_bw   8      2000   -A,CMP_AND_SWAP
atomic_lat       lat   -            ib_atomic_lat  8      1000   -
EOF

# Write with Immediate: perftest gained --write_with_imm after 4.5-0.17
# (Debian 12's); where the installed one has it, it runs too.
ib_write_bw --help >"$tmp/write_bw.help" 2>&1
if grep -e '--write_with_imm' "$tmp/write_bw.help" >/dev/null; then
	perf_case write_imm_bw bw - ib_write_bw 65536 2000 --write_with_imm
else
	ver=$(dpkg-query -W -f '${Version}' perftest 2>/dev/null)
	echo "note: this perftest (${ver:-version unknown}) has no --write_with_imm: Write with Immediate is not run here"
fi

check_summary
