# What the tests of tests/compat/ share: stock Debian programs (rdma-core
# 44's rping and ibv_devinfo, perftest, qperf) run unmodified on uiwarp's
# drop-in libibverbs.so.1 and librdmacm.so.1 through uiwarp-run.
# Sourced by each test, which it gives check_lib.sh's functions.
#
#   compat_init BUILD SRC -- PROG...
#                          (the test's own arguments, then the Debian
#                          programs it runs) $build and $src, absolute;
#                          $tmp and $pids (check_workdir); $run: the
#                          build's uiwarp-run; $libdir: the drop-in
#                          libraries' directory.  Fails the test (loudly)
#                          when either is not built or a program PROG is
#                          not installed.  Clears the caller's UIWARP_*
#                          variables and exports LD_BIND_NOW=1: every
#                          symbol of every program is bound at load time,
#                          as rdma-core 44's programs, linked with -z now,
#                          do anyway.
#   serve NAME PORT CMD... CMD, a server, in the background (under
#                          timeout 60), its output in $tmp/NAME.sout and
#                          NAME.serr; returns once it listens on TCP
#                          PORT.  Sets $spid.  Counts a failure and
#                          returns 1 when it does not listen.
#   client NAME CMD...     CMD, the client, in the foreground (under
#                          timeout $client_secs, 20 unless the test sets
#                          it), output in $tmp/NAME.cout and NAME.cerr;
#                          its status in $crc.
#   reap NAME [stop]       waits for the server to end (15 s at most once
#                          its client exited 0; not at all when the client
#                          failed, as a server may wait for ever for a
#                          client that never came, or with "stop", for a
#                          server that serves on), then stops it; its
#                          status in $src.
#   found NAME FILE WHAT AWK-ARG...
#                          counts a check: awk AWK-ARG... FILE prints a
#                          line (the first is shown after WHAT); FILE is
#                          shown when it prints none.
#   pair_ok NAME [SRC]     counts a check: the client exited 0 and the
#                          server SRC (default 0); shows both sides'
#                          output when not.

# shellcheck source=../check_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../check_lib.sh"

compat_init() {
	local p l
	[ $# -ge 3 ] && [ "$3" = -- ] ||
		fail "usage: ${0##*/} <build-dir> <source-dir>"
	build=$(cd "$1" && pwd) || fail "no build directory $1"
	src=$(cd "$2" && pwd) || fail "no source directory $2"
	shift 3
	check_workdir
	run=$build/uiwarp-run
	[ -x "$run" ] || fail "$run is not built"
	libdir=$("$run" --print-libdir) || fail "$run --print-libdir failed"
	for l in libibverbs.so.1 librdmacm.so.1; do
		[ -e "$libdir/$l" ] ||
			fail "$libdir/$l is not built (src/compat/)"
	done
	for p in "$@"; do
		command -v "$p" >/dev/null ||
			fail "$p is not installed (scripts/install-deps.sh installs the Debian packages)"
	done
	unset "${!UIWARP_@}"
	export LD_BIND_NOW=1
}

serve() {
	local name=$1 port=$2
	shift 2
	# The server holds the write end of a fifo (fd 3) until it ends:
	# reap reads it to its end, or to a deadline.
	mkfifo "$tmp/$name.alive"
	timeout 60 "$@" >"$tmp/$name.sout" 2>"$tmp/$name.serr" \
		3>"$tmp/$name.alive" &
	spid=$!
	pids+=("$spid")
	exec {alive_fd}<"$tmp/$name.alive"
	wait_tcp_listen "$port" "$spid" 20 && return 0
	bad "$name: the server did not listen on TCP port $port: $*"
	reap "$name" stop
	show "$tmp/$name.sout" "$tmp/$name.serr"
	return 1
}

client() {
	local name=$1
	shift
	timeout "${client_secs:-20}" "$@" >"$tmp/$name.cout" 2>"$tmp/$name.cerr"
	crc=$?
}

reap() {
	local _
	if [ "${2:-}" != stop ] && [ "${crc:-1}" -eq 0 ]; then
		read -r -t 15 -u "$alive_fd" _
	fi
	exec {alive_fd}<&-
	kill -TERM "$spid" 2>/dev/null
	wait "$spid"
	src=$?
}

pair_ok() {
	local name=$1 want=${2:-0}
	if [ "$crc" -eq 0 ] && [ "$src" -eq "$want" ]; then
		ok "$name: client exit 0, server exit $src"
		return 0
	fi
	bad "$name: client exit $crc, server exit $src (want 0 and $want)"
	show "$tmp/$name.cout" "$tmp/$name.cerr" "$tmp/$name.sout" \
		"$tmp/$name.serr"
	return 1
}

found() {
	local name=$1 f=$2 what=$3 line
	shift 3
	line=$(awk "$@" "$f" | sed -n 1p)
	if [ -n "$line" ]; then
		ok "$name: $what: $(tr -s ' \t' ' ' <<<"$line" | sed 's/^ //')"
	else
		bad "$name: $what: none"
		show "$f"
	fi
}
