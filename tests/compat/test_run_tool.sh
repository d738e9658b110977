#!/usr/bin/env bash
# uiwarp-run itself: its help and version, its usage errors and env(1)'s
# exit statuses (125 its own failure, 126 a program that cannot run, 127
# one not found), the environment it gives the program (the drop-in
# libraries' directory first in LD_LIBRARY_PATH, UIWARP_ADDR and
# UIWARP_DEBUG only when asked for, the rest as it was), "--" and the
# program's own options, the program's exit status, the program as the
# very process started (no fork: signals reach it), a copy of
# uiwarp-run far from its libraries saying where it looked, and every
# Debian program the drop-in serves resolving all its verbs and rdma_cm
# symbols in the drop-in libraries with every symbol bound at load time.
#
# usage: test_run_tool.sh <build-dir> <source-dir>
set -uo pipefail

# shellcheck source=compat_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/compat_lib.sh"
compat_init "$@" -- rping ibv_devices ibv_devinfo ib_write_bw qperf readelf

# runs NAME ARGS...: "$run" ARGS... under timeout, its output in
# $tmp/NAME.out and NAME.err, its status in $rc.
runs() {
	local name=$1
	shift
	timeout 30 "$run" "$@" >"$tmp/$name.out" 2>"$tmp/$name.err"
	rc=$?
}
# status NAME WANT WHAT: a check that $rc is WANT.
status() {
	if [ "$rc" -eq "$2" ]; then
		ok "$1: exit $rc: $3"
		return 0
	fi
	bad "$1: exit $rc, want $2: $3"
	show "$tmp/$1.out" "$tmp/$1.err"
	return 1
}
# env_of NAME VAR: VAR's value in the env(1) output of NAME (empty line
# when unset: "unset" then).
env_of() {
	sed -n "s/^$2=//p" "$tmp/$1.out" | sed -n 1p
}

# ---------------------------------------------------------------- help
runs help --help
status help 0 "--help" &&
	expect_line help "$tmp/help.out" '^usage: uiwarp-run .*COMMAND' "prints its usage"
runs help-h -h
status help-h 0 "-h" &&
	expect_line help-h "$tmp/help-h.out" '^usage: uiwarp-run ' "prints its usage"
version=$(sed -n 's/^project(uiwarp VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt")
runs version --version
status version 0 "--version" &&
	expect_line version "$tmp/version.out" "^uiwarp-run \\(uiwarp\\) ${version//./\\.}\$" \
		"names the project's version, $version"

# ---------------------------------------------------------------- usage
while read -r name want args; do
	# shellcheck disable=SC2086  # the arguments are words of the table
	runs "$name" $args
	if status "$name" "$want" "uiwarp-run $args"; then
		expect_line "$name" "$tmp/$name.err" "^uiwarp-run: " "says why"
	fi
done <<'EOF'
usage-none      125 
usage-unknown   125 --bogus true
usage-short     125 -x true
usage-addr      125 --addr not-an-address true
usage-noaddr    125 --addr
usage-debug     125 --debug=7 true
notfound        127 no-such-program-uiwarp-test
notfound-path   127 /nonexistent/program
EOF
expect_line notfound "$tmp/notfound.err" \
	'^uiwarp-run: no-such-program-uiwarp-test: No such file or directory$' \
	"names the program, as env(1) does"
printf 'not a program\n' >"$tmp/noexec"
chmod 644 "$tmp/noexec"
runs noexec "$tmp/noexec"
status noexec 126 "a file that is not executable" &&
	expect_line noexec "$tmp/noexec.err" "^uiwarp-run: $tmp/noexec: Permission denied\$" \
		"names the file and why"

# ---------------------------------------------------------------- env
realdir=$(cd "$build/compat" && pwd -P)
runs libdir --print-libdir
if status libdir 0 "--print-libdir" &&
	[ "$(cat "$tmp/libdir.out")" = "$realdir" ]; then
	ok "libdir: the build tree's compat/: $realdir"
else
	bad "libdir: '$(cat "$tmp/libdir.out")', want $realdir"
fi

(
	unset LD_LIBRARY_PATH
	export UIWARP_KEEP=kept
	runs env-plain env
	exit "$rc"
)
rc=$?
if status env-plain 0 "uiwarp-run env"; then
	v=$(env_of env-plain LD_LIBRARY_PATH)
	[ "$v" = "$realdir" ] && ok "env-plain: LD_LIBRARY_PATH=$v" ||
		bad "env-plain: LD_LIBRARY_PATH='$v', want $realdir"
	grep -Eq '^UIWARP_(ADDR|DEBUG)=' "$tmp/env-plain.out" &&
		bad "env-plain: set $(grep -E '^UIWARP_(ADDR|DEBUG)=' "$tmp/env-plain.out" | tr '\n' ' ')unasked" ||
		ok "env-plain: neither UIWARP_ADDR nor UIWARP_DEBUG set unasked"
	[ "$(env_of env-plain UIWARP_KEEP)" = kept ] &&
		ok "env-plain: the caller's variables pass through" ||
		bad "env-plain: UIWARP_KEEP lost"
fi

(
	export LD_LIBRARY_PATH=/opt/a:/opt/b UIWARP_ADDR=198.51.100.1
	runs env-keep env
	exit "$rc"
)
rc=$?
if status env-keep 0 "uiwarp-run env, LD_LIBRARY_PATH and UIWARP_ADDR set"; then
	v=$(env_of env-keep LD_LIBRARY_PATH)
	[ "$v" = "$realdir:/opt/a:/opt/b" ] &&
		ok "env-keep: the drop-in first, the caller's path after it: $v" ||
		bad "env-keep: LD_LIBRARY_PATH='$v'"
	v=$(env_of env-keep UIWARP_ADDR)
	[ "$v" = 198.51.100.1 ] && ok "env-keep: the caller's UIWARP_ADDR kept" ||
		bad "env-keep: UIWARP_ADDR='$v', want the caller's 198.51.100.1"
fi

# uiwarp-run within uiwarp-run adds the directory once.
runs env-nested "$run" env
if status env-nested 0 "uiwarp-run uiwarp-run env"; then
	v=$(env_of env-nested LD_LIBRARY_PATH)
	[ "$v" = "$realdir" ] || [[ $v == "$realdir:"* && $v != "$realdir:$realdir"* ]] &&
		ok "env-nested: the directory once: $v" ||
		bad "env-nested: LD_LIBRARY_PATH='$v'"
fi

while read -r name var want args; do
	# shellcheck disable=SC2086
	runs "$name" $args env
	if status "$name" 0 "uiwarp-run $args env"; then
		v=$(env_of "$name" "$var")
		[ "$v" = "$want" ] && ok "$name: $var=$v" ||
			bad "$name: $var='$v', want $want"
	fi
done <<'EOF'
env-addr      UIWARP_ADDR   192.0.2.7    --addr 192.0.2.7
env-addr-a    UIWARP_ADDR   192.0.2.8    -a 192.0.2.8
env-addr-eq   UIWARP_ADDR   192.0.2.9    --addr=192.0.2.9
env-addr6     UIWARP_ADDR   2001:db8::7  --addr 2001:db8::7
env-debug     UIWARP_DEBUG  1            --debug
env-debug-d   UIWARP_DEBUG  1            -d
env-debug3    UIWARP_DEBUG  3            --debug=3
env-both      UIWARP_DEBUG  2            --addr 192.0.2.7 -d2 --
EOF

# ---------------------------------------------------------------- argv
# The program's options are its own, "--" ends uiwarp-run's.
runs argv sh -c 'printf "[%s]\n" "$@"' sh -a --debug -- --help
if status argv 0 "options after the program are the program's"; then
	got=$(tr -d '\n' <"$tmp/argv.out")
	[ "$got" = "[-a][--debug][--][--help]" ] &&
		ok "argv: the program got its arguments as given: $got" ||
		bad "argv: the program got $got"
fi
runs dashdash -- --debug
status dashdash 127 "uiwarp-run -- --debug runs a program named --debug" &&
	expect_line dashdash "$tmp/dashdash.err" '^uiwarp-run: --debug: No such file' \
		"and says it is not found"

# ---------------------------------------------------------------- status
for want in 0 1 42 255; do
	runs "exit-$want" sh -c "exit $want"
	status "exit-$want" "$want" "the program's exit status passes through"
done

# The program replaces uiwarp-run (exec, no fork): the process that was
# started is the program, and a signal to it ends the program.  The
# program says its pid, then waits for its standard input (a fifo that
# the test holds open, so it waits until killed).
# (SIGINT is left out: a background job of a script starts with it
# ignored, and the program inherits that.)
for sig in TERM HUP USR1; do
	name=signal-$sig
	mkfifo "$tmp/$name.in" "$tmp/$name.fifo"
	"$run" sh -c 'echo $$; exec cat >/dev/null' \
		<"$tmp/$name.in" >"$tmp/$name.fifo" 2>"$tmp/$name.err" &
	p=$!
	pids+=("$p")
	exec {hold}>"$tmp/$name.in"
	exec {rfd}<"$tmp/$name.fifo"
	if ! IFS= read -r -t 20 line <&"$rfd"; then
		bad "$name: the program did not start"
		show "$tmp/$name.err"
		exec {rfd}<&- {hold}>&-
		continue
	fi
	exec {rfd}<&-
	if [ "$line" = "$p" ]; then
		ok "$name: the program runs as the process started ($p)"
	else
		bad "$name: the program runs as $line, not as the process started ($p)"
	fi
	kill -"$sig" "$p"
	wait "$p" 2>/dev/null
	rc=$?
	exec {hold}>&-
	want=$((128 + $(kill -l "$sig")))
	status "$name" "$want" "SIG$sig to it ends the program by that signal"
done

# ---------------------------------------------------------------- where
# A copy of uiwarp-run elsewhere looks for compat/ beside itself and says
# so; a symbolic link to it in the build tree finds the build's.
mkdir -p "$tmp/elsewhere"
cp "$run" "$tmp/elsewhere/uiwarp-run"
timeout 30 "$tmp/elsewhere/uiwarp-run" true >"$tmp/missing.out" 2>"$tmp/missing.err"
rc=$?
if status missing 125 "a copy away from the libraries"; then
	dir=$(cd "$tmp/elsewhere" && pwd -P)/compat
	expect_line missing "$tmp/missing.err" \
		"^uiwarp-run: the drop-in libraries are not in ${dir//./\\.} \\(libibverbs\\.so\\.1: No such file or directory\\)" \
		"names the directory and the library it looked for"
fi
ln -s "$run" "$tmp/elsewhere/link"
timeout 30 "$tmp/elsewhere/link" --print-libdir >"$tmp/link.out" 2>"$tmp/link.err"
rc=$?
if status link 0 "a symbolic link to the build's uiwarp-run" &&
	[ "$(cat "$tmp/link.out")" = "$realdir" ]; then
	ok "link: finds the build tree's libraries through the link"
else
	bad "link: library directory '$(cat "$tmp/link.out")', want $realdir"
fi

# ---------------------------------------------------------------- Debian
# Every program the drop-in serves loads it: ldd -r binds every symbol
# (functions and data) as LD_BIND_NOW does and reports each that is
# missing or of a version the library does not define.  The drop-in's
# libibverbs.so.1 and librdmacm.so.1 come from the build tree, and
# nothing stays unresolved.
progs="rping ibv_devices ibv_devinfo qperf"
for p in /usr/bin/ib_*; do
	[ -x "$p" ] && progs+=" ${p##*/}"
done
for p in $progs; do
	path=$(command -v "$p") || { bad "ldd-$p: $p is not installed"; continue; }
	needs=$(readelf -d "$path" | sed -n 's/.*(NEEDED).*\[\(lib\(ibverbs\|rdmacm\)\.so\.1\)\]/\1/p' | tr '\n' ' ')
	[ -n "$needs" ] || continue
	flags=$(readelf -d "$path" | sed -n 's/.*(FLAGS_1) *Flags: *//p')
	timeout 30 "$run" ldd -r "$path" >"$tmp/ldd-$p.out" 2>&1
	rc=$?
	good=1
	for l in $needs; do
		grep -q "^[[:space:]]*$l => $realdir/$l " "$tmp/ldd-$p.out" || good=0
	done
	problems=$(grep -E 'undefined symbol|not found|no version information|error' "$tmp/ldd-$p.out" | sort -u)
	if [ "$rc" -eq 0 ] && [ $good = 1 ] && [ -z "$problems" ]; then
		ok "ldd-$p: ${needs% } from the drop-in, every symbol bound (the program's flags: ${flags:-none})"
	else
		bad "ldd-$p: exit $rc, ${needs% } from the drop-in: $([ $good = 1 ] && echo yes || echo no)"
		printf '%s\n' "$problems" | sed -n 1,40p | sed 's/^/  | /'
		[ $good = 1 ] || show "$tmp/ldd-$p.out"
	fi
done

check_summary
