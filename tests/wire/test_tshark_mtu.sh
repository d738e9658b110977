#!/usr/bin/env bash
# Wire test: the session of test_tshark.sh without markers over a
# loopback with an Ethernet MTU (1500), in a network namespace of this
# test's own.  There a full FPDU is exactly one TCP segment (EMSS 1448)
# and uiwarp sends a run of them in one sendmsg, trusting TCP to cut at
# every MSS.  GSO is limited to one segment, so that the capture shows
# the segments TCP cut (on lo it would otherwise hold 64 KiB packets):
# the capture must decode as on lo, and no more than 5 % of the data
# segments may start inside an FPDU.  (With markers, tshark 4.0 decodes
# an FPDU only when it fills its segment exactly, which at this MTU the
# marker count makes it miss by 4 octets in some FPDUs: that session is
# left to test_tshark.sh on lo.)
#
# usage: test_tshark_mtu.sh <build-dir> <source-dir>
# Needs root (unshare -n, ip) and what test_tshark.sh needs.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
mtu=${UIW_WIRE_MTU:-1500}

# shellcheck source=../check_lib.sh
. "$(dirname "$0")/../check_lib.sh"

command -v unshare >/dev/null || fail "unshare is not installed (util-linux)"
command -v ip >/dev/null || fail "ip is not installed (iproute2; run scripts/install-deps.sh as root)"
[ "$(id -u)" -eq 0 ] || fail "needs root for a network namespace"

export UIW_WIRE_TAG=-mtu$mtu UIW_WIRE_ALIGN_MAX=${UIW_WIRE_ALIGN_MAX:-5}
export UIW_WIRE_MARKERS=off
exec unshare -n bash -c '
	ip link set lo mtu "$1" gso_max_size "$1" up ||
		{ echo "FAIL: cannot set lo to MTU $1, GSO $1" >&2; exit 1; }
	shift
	echo "network namespace: $(ip -d link show lo | grep -o "mtu [1-9][0-9]*\|gso_max_size [0-9]*" | tr "\n" " ")"
	exec bash "$@"' _ "$mtu" "$here/test_tshark.sh" "$@"
