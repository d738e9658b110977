# What rdma-core's rping prints and how it ends, for the scripts that run
# stock rping (tests/interop/siw_lib.sh, bench/siw_start_delay.sh);
# source it (bash).
#
#   rping_status STATUS FILE          rping's exit status, its teardown
#                                     race forgiven
#   rping_data_check FILE PREFIX COUNT SIZE [WIDTH]
#                                     the -v lines starting with PREFIX:
#                                     exactly COUNT, each the ping rping
#                                     sent (cut to WIDTH characters)

# rping_status STATUS FILE: rping's exit status, with its own teardown
# race forgiven.  rping's CM thread waits in rdma_get_cm_event while the
# main thread, its pings done, destroys the event channel; the thread then
# prints "rdma_get_cm_event: Bad file descriptor" and exits the process
# with status 255 (about one run in ten here, with any peer).  That exit
# flushes rping's buffered standard output after the message: whatever
# of its -v data lines the buffer still held, whole ("server ping data:
# rdma-ping-N: " and the ping pattern's characters, 'A' to 'z') or the
# tail of one.  Only that ending counts as 0; the pings themselves are
# checked apart.
rping_status() {
	local st=$1 f=$2 n
	[ "$st" -eq 255 ] || return "$st"
	n=$(grep -n -x "rdma_get_cm_event: Bad file descriptor" "$f" | tail -n 1 | cut -d: -f1)
	[ -n "$n" ] || return "$st"
	if tail -n +"$((n + 1))" "$f" |
	   LC_ALL=C grep -q -v -E -x '(server ping data: rdma-ping-[0-9]+: )?[A-z]*'; then
		return "$st"
	fi
	echo "# $(basename "$f"): rping exited 255 at its teardown (its CM thread read the event channel just destroyed)"
	return 0
}

# rping_data_check FILE PREFIX COUNT SIZE [WIDTH]: the lines of FILE that
# start with PREFIX ("ping data: " of rping -c -v, "server ping data: "
# of rping -s -v) must be COUNT, the Nth (from 0) holding ping N exactly
# as the client built it (rdma-core 44 rping.c, rping_test_client: the
# text "rdma-ping-N: ", then the letters from 'A' + N on, 'A' after 'z',
# up to SIZE - 1 characters, the last octet of the buffer being a NUL),
# cut to WIDTH characters when the output was cut so.  Prints what
# differs (the first three lines that do), returns 1.
rping_data_check() {
	local f=$1 prefix=$2 count=$3 size=$4 width=${5:-0}
	# rping_status's teardown message may have landed in the middle of a
	# line of standard output: taken out, the lines are whole again.
	sed -z 's/rdma_get_cm_event: Bad file descriptor\n//g' "$f" |
	LC_ALL=C awk -v pre="$prefix" -v count="$count" -v size="$size" \
		-v width="$width" -v name="${f##*/}" '
	BEGIN {
		for (c = 65; c <= 122; c++)
			letters = letters sprintf("%c", c)
	}
	function ping(n,   s, k, run) {
		s = "rdma-ping-" n ": "
		k = n % 58
		run = substr(letters, k + 1) substr(letters, 1, k)
		while (length(s) + length(run) < size - 1)
			run = run run
		return substr(s run, 1, size - 1)
	}
	index($0, pre) == 1 {
		want = pre ping(seen + 0)
		if (width > 0)
			want = substr(want, 1, width)
		if ($0 != want && ++bad <= 3)
			printf "%s line %d: ping %d differs at character %d\n",
				name, NR, seen, first_diff($0, want)
		seen++
	}
	function first_diff(a, b,   i) {
		for (i = 1; i <= length(a) && substr(a, i, 1) == substr(b, i, 1); i++)
			;
		return i
	}
	END {
		if (seen != count) {
			printf "%s: %d lines \"%s...\", expected %d\n", name, seen, pre, count
			bad = 1
		}
		exit bad > 0
	}'
}
