#!/usr/bin/env bash
# The project's shell scripts: each parses (bash -n), and none that sets
# pipefail ends a pipeline with a reader that stops early (head, grep -q,
# grep -m, awk's exit, sed's q).  Such a reader can leave the writer to
# die of SIGPIPE, which fails the whole pipeline now and then: under
# set -e the script stops without a word, in a condition the test goes the
# wrong way.  (The siw guest's build once stopped so, after
# "ldconfig -p | awk '... { print; exit }'".)  Read everything instead:
# sed -n 1,Np, grep > /dev/null, awk with a flag.
#
# usage: test_scripts.sh <build-dir> <source-dir>
set -uo pipefail

src=${2:?usage: test_scripts.sh <build-dir> <source-dir>}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# shellcheck source=../check_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../check_lib.sh"

# Lines of FILE (continuations joined, comments dropped) whose pipeline
# ends in an early-stopping reader, as "line: text".
early_readers() {
	awk '
	{ line = $0; sub(/^[ \t]*#.*/, "", line) }
	joined == "" { start = NR }
	{ joined = joined " " line }
	/(\\|\|)[ \t]*$/ { next }
	{
		if (joined ~ /(^|[^|])\|[ \t\\]*(head([ \t]|$)|grep[ \t]+-[a-zA-Z]*[qm]|awk[^|]*[^a-z_]exit([^a-z_]|$)|sed[^|]*[;{ \t]q[ \t]*[;}])/)
			printf "%d: %s\n", start, joined
		joined = ""
	}' "$1"
}

# The check must be able to fail: a script with each kind of reader.
cat > "$tmp/bad.sh" << 'BAD'
set -euo pipefail
a=$(ldconfig -p | awk '/x/ { print; exit }')
b=$(dpkg -L x | grep y | head -n 1)
ss -lt | grep -q . && echo listening
c=$(ls /x |
	head -1)
d=$(sed -n 's/a/b/p' /proc/cpuinfo | sed -n '/m/{p;q}')
# a comment | head -1 is not code
e=$(ls | sed -n 1,3p)
f=$(head -c 10 /dev/zero | od)
BAD
want="2 3 4 5 7"
got=$(early_readers "$tmp/bad.sh" | cut -d: -f1 | tr '\n' ' ')
if [ "$got" = "$want " ]; then
	ok "the check finds early readers on lines $want of a bad script, and nothing else"
else
	bad "the check found lines '$got' of the bad script, not '$want'"
	show "$tmp/bad.sh"
fi

cd "$src" || exit 1
scripts=$(git ls-files '*.sh' 2>/dev/null) || scripts=
[ -n "$scripts" ] || scripts=$(find . -name '*.sh' -not -path './build*' | sed 's|^\./||' | sort)
n=0 flagged=0
for f in $scripts; do
	n=$((n + 1))
	if ! bash -n "$f" 2> "$tmp/syntax"; then
		bad "$f does not parse"
		flagged=$((flagged + 1))
		show "$tmp/syntax"
	fi
	# (This file's bad script above is meant to be found.)
	[ "$f" != tests/tools/test_scripts.sh ] || continue
	grep -q pipefail "$f" || continue
	early_readers "$f" > "$tmp/early"
	if [ -s "$tmp/early" ]; then
		bad "$f sets pipefail and ends pipelines with a reader that stops early"
		show "$tmp/early"
		flagged=$((flagged + 1))
	fi
done
if [ "$n" -lt 20 ]; then
	bad "only $n shell scripts found under $src"
elif [ "$flagged" -eq 0 ]; then
	ok "$n shell scripts parse, and none that sets pipefail has an early reader"
fi
check_summary
