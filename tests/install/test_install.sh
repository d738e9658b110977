#!/usr/bin/env bash
# `make install` delivers a usable library: installs the build into a
# staging directory (DESTDIR), checks every installed piece, then builds
# the README's example program with pkg-config against the shared
# library and against the static one, and runs both.  The drop-in
# libibverbs.so.1 and librdmacm.so.1 go to a directory of their own,
# $libdir/uiwarp, by their sonames only (no unversioned namelink, which
# would take `-libverbs` away from rdma-core's), finding libuiwarp.so.0
# beside them; the installed uiwarp-run finds them there and runs
# Debian's ibv_devices on them.
#
# usage: test_install.sh <build-dir> <source-dir>
set -uo pipefail

build=${1:?usage: test_install.sh <build-dir> <source-dir>}
src=${2:?usage: test_install.sh <build-dir> <source-dir>}
build=$(cd "$build" && pwd)
src=$(cd "$src" && pwd)

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# shellcheck source=../check_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../check_lib.sh"
die() {
	bad "$*"
	check_summary
	exit 1
}

for tool in cmake pkg-config cc readelf ldd ibv_devices; do
	command -v $tool >/dev/null || die "$tool is not installed"
done

# The install prefix and library directory the build was configured with.
cache() {
	sed -n "s/^$1:[A-Z]*=//p" "$build/CMakeCache.txt"
}
prefix=$(cache CMAKE_INSTALL_PREFIX)
libdir=$(cache CMAKE_INSTALL_LIBDIR)
mandir=$(cache CMAKE_INSTALL_MANDIR)
[ -n "$mandir" ] || mandir=share/man
case $mandir in /*) ;; *) mandir=$prefix/$mandir ;; esac
[ -n "$prefix" ] || die "no CMAKE_INSTALL_PREFIX in $build/CMakeCache.txt"
[ -n "$libdir" ] || libdir=lib
case $libdir in /*) ;; *) libdir=$prefix/$libdir ;; esac

stage=$tmp/stage
if DESTDIR=$stage cmake --install "$build" >"$tmp/install.log" 2>&1; then
	ok "cmake --install into a staging directory"
else
	cat "$tmp/install.log"
	die "cmake --install failed"
fi

root=$stage$prefix
lib=$stage$libdir
need() {
	if [ -e "$1" ]; then
		ok "installed: ${1#$stage}"
	else
		bad "missing after install: ${1#$stage}"
	fi
}
need "$root/include/uiwarp/uiwarp.h"
need "$root/include/uiwarp/cm.h"
need "$root/include/uiwarp/rdma_option.h"
need "$lib/libuiwarp.a"
need "$lib/libuiwarp.so"
need "$lib/libuiwarp.so.0"
need "$lib/pkgconfig/uiwarp.pc"
need "$root/bin/uiwarp-ping"
need "$stage$mandir/man1/uiwarp-ping.1"
need "$root/bin/uiwarp-run"
need "$stage$mandir/man1/uiwarp-run.1"
need "$stage$mandir/man7/uiwarp-rdma.7"
need "$lib/uiwarp/libibverbs.so.1"
need "$lib/uiwarp/librdmacm.so.1"
# RPC-over-RDMA for libtirpc programs, uiwarp-rpcrdma(3)
need "$root/include/uiwarp/rpcrdma.h"
need "$lib/libuiwarp-rpcrdma.so.0"
need "$stage$mandir/man3/uiwarp-rpcrdma.3"
[ $failures -eq 0 ] || die "the installation is incomplete"

# Nothing outside the public headers is installed under include/.
extra=$(find "$root/include" -type f ! -path "*/uiwarp/uiwarp.h" \
	! -path "*/uiwarp/cm.h" ! -path "*/uiwarp/rdma_option.h" \
	! -path "*/uiwarp/rpcrdma.h")
[ -z "$extra" ] && ok "only the public headers are installed" ||
	bad "unexpected installed headers: $extra"

# The headers stand alone: a C file including only uiwarp.h compiles
# with -std=c11 -pedantic; so does one including only rdma_option.h
# (the options of the drop-in librdmacm, uiwarp-rdma(7)).
printf '#include <uiwarp/uiwarp.h>\nint main(void) { return uiw_last_error() == 0; }\n' \
	>"$tmp/alone.c"
printf '#include <uiwarp/rdma_option.h>\nint main(void) { return UIW_RDMA_OPTION_LEVEL == 0; }\n' \
	>"$tmp/alone-opt.c"
printf '#include <uiwarp/rpcrdma.h>\nint main(void) { struct uiw_rpcrdma_opts o; uiw_rpcrdma_opts_init(&o, false); return o.credits == 0; }\n' \
	>"$tmp/alone-rr.c"
for h in alone:uiwarp.h alone-opt:rdma_option.h alone-rr:rpcrdma.h; do
	if cc -std=c11 -pedantic -Wall -Werror -I"$root/include" \
		-I/usr/include/tirpc \
		-c "$tmp/${h%%:*}.c" -o "$tmp/${h%%:*}.o" 2>"$tmp/alone.err"; then
		ok "${h#*:} compiles alone with -std=c11 -pedantic"
	else
		bad "${h#*:} does not compile alone"
		cat "$tmp/alone.err"
	fi
done

# pkg-config sees only the staged file; the sysroot maps its paths
# (written for $prefix) into the staging directory.
export PKG_CONFIG_LIBDIR=$lib/pkgconfig
export PKG_CONFIG_SYSROOT_DIR=$stage
if ! pkg-config --exists --print-errors uiwarp; then
	die "pkg-config does not find uiwarp"
fi
cflags=$(pkg-config --cflags uiwarp)
libs=$(pkg-config --libs uiwarp)
slibs=$(pkg-config --static --libs uiwarp)
echo "     pkg-config --cflags: $cflags"
echo "     pkg-config --libs: $libs"
echo "     pkg-config --static --libs: $slibs"
ok "pkg-config knows uiwarp $(pkg-config --modversion uiwarp)"

hello=$src/examples/hello.c
[ -f "$hello" ] || die "$hello is missing"

# The README shows the example program as it is in examples/hello.c
# (from its first #include on).
if diff <(sed -n '/^```c$/,/^```$/p' "$src/README.md" | sed '1d;$d') \
	<(sed -n '/^#include/,$p' "$hello") >"$tmp/readme.diff"; then
	ok "README.md shows examples/hello.c as it is"
else
	bad "README.md and examples/hello.c differ"
	cat "$tmp/readme.diff"
fi

# Shared: exactly the README's command line.
if cc -o "$tmp/hello-shared" "$hello" $cflags $libs 2>"$tmp/cc.err"; then
	ok "hello.c builds against the shared library"
else
	cat "$tmp/cc.err"
	die "hello.c does not build against the shared library"
fi
# ldd's whole output first: with pipefail, grep -q closing the pipe early
# would fail the pipeline by SIGPIPE.
deps=$(LD_LIBRARY_PATH=$lib ldd "$tmp/hello-shared")
if grep -q "libuiwarp.so.0 => $lib/libuiwarp.so.0" <<<"$deps"; then
	ok "hello (shared) loads the installed libuiwarp.so.0"
else
	bad "hello (shared) does not load $lib/libuiwarp.so.0"
	LD_LIBRARY_PATH=$lib ldd "$tmp/hello-shared"
fi
if LD_LIBRARY_PATH=$lib timeout 60 "$tmp/hello-shared" >"$tmp/out" 2>&1 &&
	grep -q 'server received 13 bytes: "hello, iWARP"' "$tmp/out"; then
	ok "hello (shared) runs: $(cat "$tmp/out")"
else
	bad "hello (shared) failed"
	cat "$tmp/out"
fi

# Static: the same flags with --static, and libuiwarp.a in place of the
# shared library (the system libraries it needs stay shared).
slibs_a=$(printf '%s\n' $slibs | sed 's/^-luiwarp$/-l:libuiwarp.a/' | tr '\n' ' ')
if cc -o "$tmp/hello-static" "$hello" $cflags $slibs_a 2>"$tmp/cc.err"; then
	ok "hello.c builds against the static library"
else
	cat "$tmp/cc.err"
	die "hello.c does not build with pkg-config --static"
fi
if readelf -d "$tmp/hello-static" | grep 'libuiwarp' > /dev/null; then
	bad "hello (static) still needs libuiwarp.so"
else
	ok "hello (static) needs no libuiwarp.so"
fi
if timeout 60 "$tmp/hello-static" >"$tmp/out" 2>&1 &&
	grep -q 'server received 13 bytes: "hello, iWARP"' "$tmp/out"; then
	ok "hello (static) runs: $(cat "$tmp/out")"
else
	bad "hello (static) failed"
	cat "$tmp/out"
fi

# The shared library exports the API and nothing else: every function
# the installed headers declare, and no other symbol.
syms=$(nm -D --defined-only "$lib/libuiwarp.so.0" |
	awk '$2 ~ /^[TDBRVWi]$/ { sub(/@.*/, "", $3); print $3 }' | sort -u)
api=$(ls "$root"/include/uiwarp/*.h | grep -v '/rpcrdma\.h$' | xargs cat | grep -Eo '[ *]uiw_[a-z0-9_]+\(' |
	tr -d ' *(' | sort -u)
missing=$(comm -13 <(printf '%s\n' $syms) <(printf '%s\n' $api))
extra=$(comm -23 <(printf '%s\n' $syms) <(printf '%s\n' $api))
if [ -n "$api" ] && [ -z "$missing" ]; then
	ok "libuiwarp.so defines all $(printf '%s\n' $api | wc -l) API functions"
else
	bad "libuiwarp.so lacks API functions: $(echo $missing)"
fi
if [ -z "$extra" ]; then
	ok "libuiwarp.so exports nothing beyond the API"
else
	bad "libuiwarp.so also exports: $(echo $extra | cut -c 1-300)"
fi

# libuiwarp-rpcrdma.so.0 exports the functions of rpcrdma.h, no more.
syms=$(nm -D --defined-only "$lib/libuiwarp-rpcrdma.so.0" |
	awk '$2 ~ /^[TDBRVWi]$/ { sub(/@.*/, "", $3); print $3 }' | sort -u)
api=$(grep -Eo '[ *]uiw_rpcrdma_[a-z0-9_]+\(' "$root/include/uiwarp/rpcrdma.h" |
	tr -d ' *(' | sort -u)
if [ -n "$api" ] && [ "$syms" = "$api" ]; then
	ok "libuiwarp-rpcrdma.so exports its $(printf '%s\n' $api | wc -l) API functions and nothing else"
else
	bad "libuiwarp-rpcrdma.so exports: $(echo $syms | cut -c 1-300); API: $(echo $api)"
fi

# The installed tool runs.
if "$root/bin/uiwarp-ping" --help >"$tmp/out" 2>&1 &&
	grep -q 'uiwarp-ping -s' "$tmp/out"; then
	ok "installed uiwarp-ping runs"
else
	bad "installed uiwarp-ping --help failed"
	cat "$tmp/out"
fi

# The drop-in libraries: their sonames and the files they name, nothing
# else (no libibverbs.so, no librdmacm.so).
compat=$lib/uiwarp
extra=$(cd "$compat" && ls -A | grep -Ev '^lib(ibverbs|rdmacm)\.so\.1(\.[0-9]+)*$')
if [ -z "$extra" ]; then
	ok "$libdir/uiwarp holds the two libraries by their sonames, no namelink"
else
	bad "$libdir/uiwarp also holds: $(echo $extra)"
fi
for l in libibverbs.so.1 librdmacm.so.1; do
	rp=$(readelf -d "$compat/$l" | sed -n 's/.*(\(RUNPATH\|RPATH\)).*\[\(.*\)\]/\2/p')
	if [ "$rp" = '$ORIGIN/..' ]; then
		ok "$l finds libuiwarp.so.0 in \$ORIGIN/.. (RUNPATH $rp)"
	else
		bad "$l: RUNPATH '$rp', want \$ORIGIN/.. (not the build tree)"
	fi
done

# The installed uiwarp-run: $libdir/uiwarp seen from $bindir; Debian's
# ibv_devices then loads the installed libraries, libuiwarp.so.0 the
# installed one too, and finds uiwarp0.
got=$("$root/bin/uiwarp-run" --print-libdir 2>&1)
if [ "$got" = "$(cd "$compat" && pwd -P)" ]; then
	ok "installed uiwarp-run: libraries in $got"
else
	bad "installed uiwarp-run --print-libdir: '$got', want $compat"
fi
devices=$(command -v ibv_devices)
LD_BIND_NOW=1 timeout 30 "$root/bin/uiwarp-run" ldd "$devices" >"$tmp/ldd" 2>&1
where() {
	local p
	p=$(sed -n "s|^[[:space:]]*$1 => \([^ ]*\) .*|\1|p" "$tmp/ldd")
	[ -n "$p" ] && realpath "$p"
}
lv=$(where libibverbs.so.1)
lu=$(where libuiwarp.so.0)
if [ "$lv" = "$(realpath "$compat/libibverbs.so.1")" ] &&
	[ "$lu" = "$(realpath "$lib/libuiwarp.so.0")" ]; then
	ok "ibv_devices under the installed uiwarp-run loads the installed libibverbs.so.1 and libuiwarp.so.0"
else
	bad "ibv_devices under the installed uiwarp-run loads libibverbs.so.1 '$lv', libuiwarp.so.0 '$lu'"
	cat "$tmp/ldd"
fi
if LD_BIND_NOW=1 timeout 30 "$root/bin/uiwarp-run" ibv_devices >"$tmp/out" 2>"$tmp/err" &&
	grep -Eq '^[[:space:]]+uiwarp0[[:space:]]+[0-9a-f]{16}$' "$tmp/out" &&
	[ ! -s "$tmp/err" ]; then
	ok "installed uiwarp-run ibv_devices lists uiwarp0"
else
	bad "installed uiwarp-run ibv_devices failed"
	cat "$tmp/out" "$tmp/err"
fi

check_summary
