# Shell functions shared by the benchmark scripts (bench/perf.sh,
# bench/ab.sh, bench/sctp.sh, bench/compat.sh, bench/siw_start_delay.sh,
# bench/rpcrdma.sh, bench/nfs.sh),
# tests/tools/test_sctpraw.sh, tests/interop/test_siw_stock.sh and
# scripts/demo-nfs.sh;
# sourced, not run.

# med(a, k): the median (the lower middle) of a[1..k], which it sorts;
# for awk programs, which may not have asort (mawk).  Prepend it to a
# program: awk "$awk_med"'...'.
# shellcheck disable=SC2034  # used by the scripts that source this file
awk_med='
	function med(a, k,   i, j, t) {
		for (i = 2; i <= k; i++)
			for (j = i; j > 1 && a[j - 1] > a[j]; j--) {
				t = a[j]; a[j] = a[j - 1]; a[j - 1] = t
			}
		return a[int((k + 1) / 2)]
	}
'

# wait_listen PORT [PID]: returns once something listens on TCP PORT (up
# to 5 s; 1 if nothing did, or as soon as PID, the server, has ended).
wait_listen() {
	for _ in $(seq 100); do
		ss -ltnH "sport = :$1" 2>/dev/null | grep . > /dev/null && return 0
		[ -z "${2:-}" ] || alive "$2" || return 1
		sleep 0.05
	done
	return 1
}

# to_octets 4k -> 4096 (suffixes k, m).
to_octets() {
	case $1 in
	*k | *K) echo $((${1%?} * 1024)) ;;
	*m | *M) echo $((${1%?} * 1048576)) ;;
	*) echo "$1" ;;
	esac
}

# human 4096 -> "4 KiB".
human() {
	awk -v s="$1" 'BEGIN {
		if (s >= 1048576) printf "%g MiB", s / 1048576
		else if (s >= 1024) printf "%g KiB", s / 1024
		else printf "%d B", s }'
}

# csv_cols FILE NAME...: the 1-based column numbers of the named columns
# in FILE's CSV header line, space-separated (0 for a name not there),
# so that a script reads uiwarp-perf's CSV by name, not by position.
csv_cols() {
	local f=$1

	shift
	awk -F, -v want="$*" 'NR == 1 {
		for (i = 1; i <= NF; i++) c[$i] = i
		n = split(want, w, " ")
		for (i = 1; i <= n; i++) printf "%s%d", (i > 1 ? " " : ""), c[w[i]] + 0
		print ""
	}' "$f"
}

# alive PID: the process runs (a child that ended and was not waited
# for is a zombie, which kill -0 still finds).
alive() {
	local s
	s=$(cut -d' ' -f3 "/proc/$1/stat" 2>/dev/null) || return 1
	[ "$s" != Z ]
}

# kv_field FILE START KEY: KEY's value on the line of FILE that begins
# with START, in output of key=value words such as bench/sctpraw.c's
# (empty when there is none).
kv_field() {
	awk -v start="$2" -v key="$3" '
		index($0, start) == 1 {
			for (i = 1; i <= NF; i++)
				if (index($i, key "=") == 1)
					v = substr($i, length(key) + 2)
		}
		END { print v }' "$1"
}

# csv_value FILE COLUMN: COLUMN of FILE's first data row.
csv_value() {
	local c
	c=$(csv_cols "$1" "$2")
	[ "$c" -gt 0 ] || return 0
	awk -F, -v c="$c" 'NR == 2 { print $c }' "$1"
}

# ratio A B: B / A to two places, or n/a.
ratio() {
	awk -v a="$1" -v b="$2" 'BEGIN {
		if (a ~ /^[0-9.]+$/ && b ~ /^[0-9.]+$/ && a + 0 > 0)
			printf "%.2f", b / a
		else
			printf "n/a"
	}'
}

# failed WHAT FILE...: notes in $work/failures a point that gave no
# figure, with the end of what its processes said (the end of each FILE).
failed() {
	local what=$1 f
	shift
	{
		echo "- $what:"
		for f in "$@"; do
			[ -s "$f" ] && tail -n 3 "$f" | sed 's/^/      /'
		done
	} >>"$work/failures"
}

# failures_section: the report's "## Failures" list, when failed noted
# any (nothing otherwise).
failures_section() {
	[ -s "$work/failures" ] || return 0
	echo
	echo "## Failures"
	echo
	cat "$work/failures"
}

# bench_workdir: makes $work, a directory removed on exit, with
# $work/pids (processes stopped on exit: waited's, and whatever the
# script adds) and $work/failures (for failed).  A signal ends the run
# (and the EXIT trap stops its processes) at once: every client runs in
# the background, waited for (wait returns on a signal, a foreground
# command would not).
bench_workdir() {
	work=$(mktemp -d)
	: >"$work/pids"
	: >"$work/failures"
	trap bench_cleanup EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
}
bench_cleanup() {
	local p
	while read -r p; do
		kill -TERM "$p" 2>/dev/null
	done <"$work/pids"
	rm -rf "$work"
}

# waited CMD...: CMD in the background, waited for; its status.
waited() {
	local p
	"$@" &
	p=$!
	echo "$p" >>"$work/pids"
	wait "$p"
}

# bench_cpu: the CPU's model name.
bench_cpu() {
	sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | sed -n 1p
}

# bench_rev SRC: the source's revision, short, with "(with changes)"
# when the work tree differs from it.
bench_rev() {
	local rev
	rev=$(git -C "$1" rev-parse --short HEAD 2>/dev/null || echo '?')
	git -C "$1" diff --quiet HEAD 2>/dev/null || rev="$rev (with changes)"
	echo "$rev"
}

# pkg_version PKG: the Debian package's version, or ?.
pkg_version() {
	dpkg-query -W -f '${Version}' "$1" 2>/dev/null || echo '?'
}
