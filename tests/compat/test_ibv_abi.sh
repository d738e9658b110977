#!/usr/bin/env bash
# The drop-in libibverbs.so.1 against the installed rdma-core 44:
#  - every default-version symbol of Debian's libibverbs.so.1 is exported
#    by build/compat/libibverbs.so.1 in the same version node, and it
#    exports nothing else but UIWARP_COMPAT_PRIVATE (read with objdump -T
#    now, not from a list kept here);
#  - its version nodes inherit as rdma-core's do;
#  - every import from libibverbs of ibv_devinfo, ibv_devices, rping,
#    ib_write_bw, qperf, libmlx5 and libefa resolves with it at load time
#    (they are linked with BIND_NOW);
#  - ibv_devices and ibv_devinfo -v run on it and show uiwarp0, iWARP, an
#    active port and the GID of UIWARP_ADDR.
#
# usage: test_ibv_abi.sh <build-dir> <source-dir>
set -uo pipefail

build=${1:?usage: test_ibv_abi.sh <build-dir> <source-dir>}
src=${2:?usage: test_ibv_abi.sh <build-dir> <source-dir>}
# shellcheck source=../check_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../check_lib.sh"
check_workdir

bash "$src/tests/compat/deps.sh" || fail "the packages this test needs are missing"

multi=$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
real=/usr/lib/$multi/libibverbs.so.1
ours=$build/compat/libibverbs.so.1
[ -e "$real" ] || fail "$real is missing (package libibverbs1)"
[ -e "$ours" ] || fail "$ours is not built"

# "NODE NAME" for each defined dynamic symbol at its default version (the
# version column without parentheses), version node names left out.
exports() {
	objdump -T "$1" | awk '$2 == "g" && $0 !~ /\*UND\*/ {
		ver = $(NF - 1); name = $NF
		if (ver ~ /^\(/ || ver == name) next
		print ver, name }' | sort -u
}
exports "$real" >"$tmp/real"
exports "$ours" >"$tmp/ours"
[ -s "$tmp/real" ] || fail "no exports read from $real"

missing=$(comm -23 "$tmp/real" "$tmp/ours")
if [ -z "$missing" ]; then
	ok "all $(wc -l <"$tmp/real") default-version exports of rdma-core's libibverbs, in their nodes"
else
	bad "exports missing or in another node:"
	echo "$missing" | sed 's/^/  | /'
fi
extra=$(comm -13 "$tmp/real" "$tmp/ours" | grep -v '^UIWARP_COMPAT_PRIVATE ')
if [ -z "$extra" ]; then
	ok "nothing exported beyond those and UIWARP_COMPAT_PRIVATE"
else
	bad "exports rdma-core does not have:"
	echo "$extra" | sed 's/^/  | /'
fi
for f in uiw_compat_device uiw_compat_context uiw_compat_pd uiw_compat_qp \
	uiw_compat_qp_of uiw_compat_qp_set_state uiw_compat_dev_addr \
	uiw_compat_log uiw_compat_unsupported; do
	grep -qx "UIWARP_COMPAT_PRIVATE $f" "$tmp/ours" || bad "$f not exported in UIWARP_COMPAT_PRIVATE"
done
n=$(grep -c '^IBVERBS_PRIVATE_34 ' "$tmp/ours")
[ "$n" = "$(grep -c '^IBVERBS_PRIVATE_34 ' "$tmp/real")" ] &&
	ok "$n IBVERBS_PRIVATE_34 symbols" || bad "$n IBVERBS_PRIVATE_34 symbols"
objdump -T "$ours" >"$tmp/ours.T"
grep -Eq 'DO[[:space:]].*IBVERBS_PRIVATE_34[[:space:]]+verbs_allow_disassociate_destroy$' "$tmp/ours.T" &&
	ok "verbs_allow_disassociate_destroy is a data object" ||
	bad "verbs_allow_disassociate_destroy is not a data object"

# Version definitions and their parents: "NODE PARENT" lines.
verdefs() {
	objdump -p "$1" | awk '/^Version definitions:/ { on = 1; next }
		/^Version References:/ { on = 0 }
		on && NF == 4 { node = $4; print node, "-" }
		on && NF == 1 { print node, $1 }' | grep -v '^libibverbs' |
		awk '{ p[$1] = (p[$1] == "" || p[$1] == "-") ? $2 : p[$1] }
		END { for (k in p) print k, p[k] }' | sort
}
verdefs "$real" >"$tmp/vreal"
verdefs "$ours" | grep -v '^UIWARP_COMPAT_PRIVATE ' >"$tmp/vours"
if diff -u "$tmp/vreal" "$tmp/vours" >"$tmp/vdiff"; then
	ok "version nodes and their parents as rdma-core's ($(wc -l <"$tmp/vreal") nodes)"
else
	bad "version nodes differ"
	show "$tmp/vdiff"
fi

# Imports: with BIND_NOW every symbol must bind at load.  librdmacm may be
# the system's here; only libibverbs symbols are this test's business.
for bin in /usr/bin/ibv_devinfo /usr/bin/ibv_devices /usr/bin/rping \
	/usr/bin/ib_write_bw /usr/bin/qperf \
	"/usr/lib/$multi/libmlx5.so.1" "/usr/lib/$multi/libefa.so.1"; do
	name=${bin##*/}
	if [ ! -e "$bin" ]; then
		bad "$bin is missing"
		continue
	fi
	LD_LIBRARY_PATH=$build/compat LD_BIND_NOW=1 ldd -r "$bin" >"$tmp/$name.ldd" 2>&1
	if ! grep -q "libibverbs.so.1 => $(readlink -f "$build")/compat/libibverbs.so.1\|libibverbs.so.1 => $build/compat/libibverbs.so.1" "$tmp/$name.ldd"; then
		bad "$name: ldd does not load build/compat/libibverbs.so.1"
		show "$tmp/$name.ldd"
		continue
	fi
	if grep -E "IBVERBS|libibverbs" "$tmp/$name.ldd" | grep -iE "undefined symbol|not found" > /dev/null; then
		bad "$name: libibverbs imports that do not resolve"
		grep -E "IBVERBS|libibverbs" "$tmp/$name.ldd" | grep -iE "undefined|not found" | sed 's/^/  | /'
	else
		ok "$name: every libibverbs import resolves"
	fi
done

# The programs themselves.
export UIWARP_ADDR=127.0.0.1
if LD_LIBRARY_PATH=$build/compat timeout 20 ibv_devices >"$tmp/devices" 2>&1 &&
	grep -Eq '^[[:space:]]+uiwarp0[[:space:]]+020000007f000001$' "$tmp/devices"; then
	ok "ibv_devices lists uiwarp0 with its node GUID"
else
	bad "ibv_devices"
	show "$tmp/devices"
fi
if LD_LIBRARY_PATH=$build/compat timeout 20 ibv_devinfo -v >"$tmp/devinfo" 2>&1; then
	ok "ibv_devinfo -v runs"
else
	bad "ibv_devinfo -v failed"
fi
for want in 'hca_id:[[:space:]]+uiwarp0' 'transport:[[:space:]]+iWARP \(1\)' \
	'fw_ver:[[:space:]]+uiwarp [0-9]+\.[0-9]+' \
	'state:[[:space:]]+PORT_ACTIVE \(4\)' 'link_layer:[[:space:]]+Ethernet' \
	'active_mtu:[[:space:]]+4096 \(5\)' 'atomic_cap:[[:space:]]+ATOMIC_HCA' \
	'max_qp_rd_atom:[[:space:]]+[1-9]' 'max_sge_rd:[[:space:]]+1$' \
	'GID\[  0\]:[[:space:]]+0000:0000:0000:0000:0000:ffff:7f00:0001'; do
	grep -Eq "$want" "$tmp/devinfo" && ok "ibv_devinfo -v: $want" ||
		{ bad "ibv_devinfo -v lacks: $want"; show "$tmp/devinfo"; }
done

check_summary
