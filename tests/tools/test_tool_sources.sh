#!/usr/bin/env bash
# The tools stand on their own: no source under tools/ includes a file of
# tests/ (the tools would then be built from test code, and a change to a
# test could change a program users install), and none includes a .c
# file (code the tools share goes into a library: tools/tool_*.c, or
# tools/lib/ for what tests link too).
#
# usage: test_tool_sources.sh <build-dir> <source-dir>
set -uo pipefail

src=${2:?usage: test_tool_sources.sh <build-dir> <source-dir>}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# shellcheck source=../check_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../check_lib.sh"

# bad_includes <dir>: "file:line: text" of every #include under dir (C
# sources and headers) that names a path through tests/ or a .c file.
bad_includes() {
	find "$1" -type f \( -name '*.c' -o -name '*.h' \) -print0 |
		sort -z |
		xargs -0 -r grep -HnE \
			'^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]([^">]*/)?(tests/|[^">]*\.c[">])'
}

# The check must be able to fail: a tree with each kind of include.
mkdir -p "$tmp/tools/lib"
cat >"$tmp/tools/a.c" <<'EOF'
#include "../tests/faultproxy/faultproxy.c"
#include "tool_util.h"
#include <stdio.h>
EOF
cat >"$tmp/tools/lib/b.h" <<'EOF'
# include <tests/loopback/lb_util.h>
#include "helper.c"
/* #include "../tests/x.h" in a comment is no include */
#include "contests/x.h"
EOF
want="a.c:1 b.h:1 b.h:2"
got=$(bad_includes "$tmp/tools" | sed -E 's|^([^:]*/)?([^/:]+:[0-9]+):.*|\2|' |
	tr '\n' ' ')
if [ "$got" = "$want " ]; then
	ok "the check finds the includes of tests/ and of .c files in a bad tree ($want), and nothing else"
else
	bad "the check found '$got' in the bad tree, not '$want'"
fi

if [ ! -d "$src/tools" ]; then
	bad "no tools/ under $src"
else
	bad_includes "$src/tools" >"$tmp/found"
	if [ -s "$tmp/found" ]; then
		bad "sources under tools/ include files of tests/ or .c files"
		show "$tmp/found"
	else
		n=$(find "$src/tools" -type f \( -name '*.c' -o -name '*.h' \) | wc -l)
		ok "none of the $n sources under tools/ includes a file of tests/ or a .c file"
	fi
fi
check_summary
