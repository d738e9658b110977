#!/usr/bin/env bash
# Debian 12's ibv_devices and ibv_devinfo (rdma-core 44, unmodified) on
# uiwarp through uiwarp-run: one device, uiwarp0, an iWARP RNIC whose
# port is active on an Ethernet link layer, with its GID made from the
# device's address (UIWARP_ADDR or uiwarp-run --addr; an IPv4 address A
# as the IPv4-mapped ::ffff:A, RFC 4291 §2.5.5.2; an IPv6 address as it
# is; by default the first up non-loopback IPv4 interface's, else
# 127.0.0.1), and its node GUID, the same in both programs, made from
# that address too.  Nothing on standard error: no loader warning (a
# library without rdma-core's symbol versions makes the loader print "no
# version information available") and no error of the programs.
#
# usage: test_debian_devinfo.sh <build-dir> <source-dir>
set -uo pipefail

# shellcheck source=compat_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/compat_lib.sh"
compat_init "$@" -- ibv_devices ibv_devinfo ip

# runs NAME CMD...: CMD under timeout, output in $tmp/NAME.out and
# NAME.err; a check that it exits 0 with nothing on stderr.  Status 1
# when it did not exit 0.
runs() {
	local name=$1 rc
	shift
	timeout 30 "$@" >"$tmp/$name.out" 2>"$tmp/$name.err"
	rc=$?
	if [ $rc -ne 0 ]; then
		bad "$name: exit $rc: $*"
		show "$tmp/$name.out" "$tmp/$name.err"
		return 1
	fi
	if [ -s "$tmp/$name.err" ]; then
		bad "$name: exit 0 but wrote to stderr"
		show "$tmp/$name.err"
	else
		ok "$name: exit 0, nothing on stderr"
	fi
}

# mapped A.B.C.D: the GID of an IPv4 address as ibv_devinfo prints it.
mapped() {
	local IFS=.
	# shellcheck disable=SC2086
	set -- $1
	printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' "$1" "$2" "$3" "$4"
}
# gid_line NAME GID: ibv_devinfo -v shows GID as its GID[0], in the
# colon-separated hex that rdma-core 44 prints for a RoCE v1-typed entry
# or in the IPv6 text it prints for a RoCE v2-typed one (TEXT).
gid_line() {
	local name=$1 gid=$2 text=$3 re
	re="^[[:space:]]+GID\\[  0\\]:[[:space:]]+($gid|${text//./\\.})(,|\$)"
	expect_line "$name" "$tmp/$name.out" "$re" "GID[0] $gid ($text)"
}
# guid NAME: the node GUID ibv_devinfo printed, as 16 hex digits.
guid() {
	sed -n 's/^[[:space:]]*node_guid:[[:space:]]*\([0-9a-f:]*\)$/\1/p' \
		"$tmp/$1.out" | tr -d : | sed -n 1p
}

# ---------------------------------------------------------------- devices
export UIWARP_ADDR=192.0.2.7
if runs devices "$run" ibv_devices; then
	expect_line devices "$tmp/devices.out" '^[[:space:]]+uiwarp0[[:space:]]+[0-9a-f]{16}$' \
		"lists uiwarp0 and its node GUID"
	n=$(grep -Ec '^[[:space:]]+[a-z][a-z0-9_]*[[:space:]]+[0-9a-f]{16}$' "$tmp/devices.out")
	[ "$n" = 1 ] && ok "devices: one device" || bad "devices: $n devices listed"
	dev_guid=$(sed -n 's/^[[:space:]]*uiwarp0[[:space:]]*\([0-9a-f]\{16\}\)$/\1/p' "$tmp/devices.out")
fi

# ---------------------------------------------------------------- devinfo
if runs devinfo "$run" ibv_devinfo; then
	f=$tmp/devinfo.out
	expect_line devinfo "$f" $'^hca_id:\tuiwarp0$' "hca_id uiwarp0"
	expect_line devinfo "$f" '^[[:space:]]+transport:[[:space:]]+iWARP \(1\)$' "transport iWARP"
	expect_line devinfo "$f" '^[[:space:]]+port:[[:space:]]+1$' "port 1"
	expect_line devinfo "$f" '^[[:space:]]+state:[[:space:]]+PORT_ACTIVE \(4\)$' "PORT_ACTIVE"
	expect_line devinfo "$f" '^[[:space:]]+link_layer:[[:space:]]+Ethernet$' "link layer Ethernet"
	g=$(guid devinfo)
	if [ -n "$g" ] && [ "$g" = "${dev_guid:-}" ]; then
		ok "devinfo: node GUID $g, as ibv_devices shows it"
	else
		bad "devinfo: node GUID '$g', ibv_devices: '${dev_guid:-}'"
	fi
fi

# -v: the GID, and the limits a program sizes its queues by.
if runs devinfo-v "$run" ibv_devinfo -v; then
	gid_line devinfo-v "$(mapped 192.0.2.7)" ::ffff:192.0.2.7
	for cap in max_qp max_qp_wr max_cq max_cqe max_mr max_pd max_qp_rd_atom max_qp_init_rd_atom; do
		v=$(sed -n "s/^[[:space:]]*$cap:[[:space:]]*\\([0-9]*\\)\$/\\1/p" "$tmp/devinfo-v.out" | sed -n 1p)
		[ -n "$v" ] && [ "$v" -gt 0 ] && ok "devinfo-v: $cap $v" ||
			bad "devinfo-v: $cap '$v', want a number above 0"
	done
fi

# -l, and -d by name.
if runs devinfo-l "$run" ibv_devinfo -l; then
	expect_line devinfo-l "$tmp/devinfo-l.out" '^1 HCA found:' "one HCA"
	expect_line devinfo-l "$tmp/devinfo-l.out" $'^\tuiwarp0$' "named uiwarp0"
fi
runs devinfo-d "$run" ibv_devinfo -d uiwarp0 &&
	expect_line devinfo-d "$tmp/devinfo-d.out" $'^hca_id:\tuiwarp0$' "-d uiwarp0 finds it"
timeout 30 "$run" ibv_devinfo -d mlx5_0 >"$tmp/devinfo-none.out" 2>"$tmp/devinfo-none.err"
rc=$?
if [ $rc -ne 0 ] && ! grep -q 'hca_id' "$tmp/devinfo-none.out"; then
	ok "devinfo-none: -d mlx5_0: exit $rc: $(cat "$tmp/devinfo-none.err" "$tmp/devinfo-none.out" | tr '\n' ' ')"
else
	bad "devinfo-none: -d mlx5_0: exit $rc"
	show "$tmp/devinfo-none.out" "$tmp/devinfo-none.err"
fi

# ---------------------------------------------------------------- address
# Another address, another GID and node GUID; --addr sets it as the
# variable does; an IPv6 address is the GID itself.
export UIWARP_ADDR=192.0.2.8
if runs addr-other "$run" ibv_devinfo -v; then
	gid_line addr-other "$(mapped 192.0.2.8)" ::ffff:192.0.2.8
	g=$(guid addr-other)
	[ -n "$g" ] && [ "$g" != "${dev_guid:-}" ] &&
		ok "addr-other: node GUID $g, not 192.0.2.7's" ||
		bad "addr-other: node GUID '$g' (192.0.2.7's: '${dev_guid:-}')"
fi
unset UIWARP_ADDR
if runs addr-option "$run" --addr 198.51.100.23 ibv_devinfo -v; then
	gid_line addr-option "$(mapped 198.51.100.23)" ::ffff:198.51.100.23
fi
runs addr6 "$run" --addr 2001:db8::7 ibv_devinfo -v &&
	gid_line addr6 2001:0db8:0000:0000:0000:0000:0000:0007 2001:db8::7

# No address given: the first up non-loopback IPv4 interface's, else
# 127.0.0.1 (interfaces in the kernel's order, as getifaddrs gives them).
loops=" $(ip -o link show | awk -F': ' '/LOOPBACK/ { print $2 }' | tr '\n' ' ')"
default=$(ip -o -4 addr show up | awk -v l="$loops" '
	index(l, " " $2 " ") == 0 { split($4, a, "/"); print a[1] }' | sed -n 1p)
default=${default:-127.0.0.1}
if runs addr-default "$run" ibv_devinfo -v; then
	gid_line addr-default "$(mapped "$default")" "::ffff:$default"
fi

check_summary
