#!/usr/bin/env bash
# The drop-in librdmacm.so.1 (build/compat/) exports what Debian 12's
# rdma-core 44 librdmacm.so.1 exports, read with objdump -T at test
# time: the same symbols, each in the same version node (RDMACM_1.0 to
# RDMACM_1.3), each a function where the real one's is, every one the
# default version; and the same soname.  Programs linked with BIND_NOW
# against the real library then load against this one.
#
# usage: test_cma_abi.sh <build-dir> <source-dir>
set -uo pipefail

build=${1:?usage: test_cma_abi.sh <build-dir> <source-dir>}
# shellcheck source=../check_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../check_lib.sh"

real=/usr/lib/x86_64-linux-gnu/librdmacm.so.1
ours=$build/compat/librdmacm.so.1
command -v objdump >/dev/null ||
	fail "objdump is missing (Debian package binutils)"
[ -e "$real" ] ||
	fail "$real is missing (Debian package librdmacm1, scripts/install-deps.sh)"
[ -e "$ours" ] ||
	fail "$ours is not built (src/compat/ builds it once libibverbs.so.1's sources are there)"
check_workdir

# "VERSION NAME TYPE" of each defined dynamic symbol, sorted; a hidden
# (non-default) version keeps objdump's parentheses.
exports() {
	objdump -T "$1" | awk '$2 == "g" && $4 != "*UND*" {
		print $(NF - 1), $NF, $3 }' | sort
}
exports "$real" >"$tmp/real" || fail "objdump -T $real"
exports "$ours" >"$tmp/ours" || fail "objdump -T $ours"
[ -s "$tmp/real" ] || fail "no exports read from $real"

missing=$(comm -23 "$tmp/real" "$tmp/ours")
extra=$(comm -13 "$tmp/real" "$tmp/ours")
if [ -z "$missing" ]; then
	ok "every one of the $(wc -l <"$tmp/real") exports of rdma-core 44, in its node and of its type"
else
	bad "exports of rdma-core 44 missing or in another node or of another type:"
	echo "$missing" | sed 's/^/  /'
fi
if [ -z "$extra" ]; then
	ok "nothing exported beyond them"
else
	bad "exported beyond rdma-core 44's list:"
	echo "$extra" | sed 's/^/  /'
fi
if grep -q '(' "$tmp/ours"; then
	bad "a symbol with a hidden (non-default) version"
	grep '(' "$tmp/ours" | sed 's/^/  /'
else
	ok "every version the default one"
fi
# The nodes inherit one another as the real ones do: in objdump -p's
# version definitions, the line after a node names its parent.
prev=1.0
for n in 1.1 1.2 1.3; do
	parent=$(objdump -p "$ours" | awk -v n="RDMACM_$n" '
		found { print $1; exit } $NF == n && NF == 4 { found = 1 }')
	if [ "$parent" = "RDMACM_$prev" ]; then
		ok "RDMACM_$n inherits RDMACM_$prev"
	else
		bad "RDMACM_$n's parent is '$parent', not RDMACM_$prev"
	fi
	prev=$n
done
soname=$(objdump -p "$ours" | awk '$1 == "SONAME" { print $2 }')
if [ "$soname" = librdmacm.so.1 ]; then
	ok "soname librdmacm.so.1"
else
	bad "soname '$soname', not librdmacm.so.1"
fi
check_summary
