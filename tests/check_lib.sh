# The counting of the script tests (tests/*/test_*.sh); source it (bash).
#
#   ok "what held"        a passed check
#   bad "what failed"     a failed check
#   show FILE...          the start of each non-empty FILE, after a failure
#   check_summary         "N checks, M failed"; status 0 only with no failure

checks=0
failures=0
ok() { checks=$((checks + 1)); echo "ok   $*"; }
bad() {
	checks=$((checks + 1))
	failures=$((failures + 1))
	echo "FAIL $*"
}
show() {
	local f
	for f in "$@"; do
		[ -s "$f" ] || continue
		echo "  --- ${f##*/}"
		head -c 4000 "$f" | sed 's/^/  | /'
	done
}
check_summary() {
	echo "$checks checks, $failures failed"
	[ "$failures" -eq 0 ]
}
