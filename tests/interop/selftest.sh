#!/usr/bin/env bash
# Self-test of the siw interop harness: bash selftest.sh BUILD_DIR [SRC_DIR]
#
# Builds (or reuses) the guest, boots it, and proves the whole path:
#  1. siw0 exists in the guest (ibv_devices);
#  2. siw talks to itself inside the guest (rping server and client);
#  3. host -> guest: a raw MPA revision 2 Request sent from the host through
#     the forwarded port gets siw's exact Reply (SIW-FACTS.md);
#  4. guest -> host: rping -c in the guest dials 10.0.2.100, reaches a host
#     listener through guestfwd, and sends siw's default Request; answered
#     with a Reply, it sends rping's first Send as one FPDU.
# Prints the time taken to build, to boot and per command round trip.
set -euo pipefail

build=${1:?usage: selftest.sh BUILD_DIR [SRC_DIR]}
src=${2:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
here=$src/tests/interop
mkdir -p "$build"
build=$(cd "$build" && pwd)

now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }
fail() {
	echo "selftest: FAIL: $*" >&2
	[ -n "${GUEST_RUN:-}" ] && echo "selftest: run directory kept: $GUEST_RUN" >&2
	exit 1
}

# shellcheck source=guest.sh
source "$here/guest.sh"
t0=$(now)
guest_setup "$build" || fail "the guest could not be built"
t1=$(now)
trap 'guest_stop' EXIT

read -r P_SRV P_HOST <<< "$(guest_free_ports 2)"
guest_start --hostfwd "$P_SRV" --guestfwd "$P_HOST" ||
	fail "the guest did not boot"
t2=$(now)
echo "selftest: guest ready (build/check $(secs "$t0" "$t1")s, boot $(secs "$t1" "$t2")s);" \
	"ports: host 127.0.0.1:$P_SRV -> guest $P_SRV, guest $GUEST_HOST_ADDR:$P_HOST -> host $P_HOST"

# Round trip of one command, measured with the control channel alone.
python3 - "$here" "$GUEST_RUN" << 'EOF' || fail "command round trips"
import sys, time
sys.path.insert(0, sys.argv[1])
from guest import Guest
g = Guest.attach(sys.argv[2])
ts = []
for i in range(20):
    a = time.monotonic()
    rc, out = g.run('echo %d' % i, 10)
    ts.append(time.monotonic() - a)
    assert (rc, out) == (0, '%d\n' % i), (rc, out)
rc, out = g.run('exit 3', 10)
assert rc == 3, rc
rc, out = g.run('echo started; sleep 30', 2)
assert (rc, out) == (124, 'started\n'), (rc, out)
ts.sort()
print('selftest: command round trip: median %.3fs, max %.3fs (20 commands)'
      % (ts[len(ts) // 2], ts[-1]))
EOF

# 1. The device.
out=$(guest_run -t 30 ibv_devices) || fail "ibv_devices failed: $out"
grep -qw siw0 <<< "$out" || fail "ibv_devices shows no siw0: $out"
echo "selftest: ibv_devices shows siw0"

# 2. siw with itself: rping server and client in the guest.
guest_bg rping-s rping -s -a "$GUEST_ADDR" -v -C 3 || fail "cannot start rping -s"
guest_wait_listen 7174 -t 30 || fail "rping -s does not listen"
out=$(guest_run -t 60 rping -c -a "$GUEST_ADDR" -v -C 3) ||
	fail "rping -c failed: $out"
[ "$(grep -c '^ping data: rdma-ping-' <<< "$out")" -eq 3 ] ||
	fail "rping -c did not ping 3 times: $out"
sout=$(guest_bg_wait rping-s -t 30) || fail "rping -s failed: $sout"
[ "$(grep -c 'ping data: rdma-ping-' <<< "$sout")" -eq 3 ] ||
	fail "rping -s did not see 3 pings: $sout"
echo "selftest: rping in the guest: 3 pings each way over siw0"

# 3. Host -> guest: a raw MPA revision 2 Request (enhanced setup, IRD 1,
# ORD 1) to rping -s; siw echoes it (SIW-FACTS.md).  Not a peer-to-peer one:
# hanging up on siw 6.1 in peer-to-peer mode before it has reached
# ESTABLISHED crashes the guest (iwcm.c:969) about one time in three.
guest_bg mpa-srv rping -s -a "$GUEST_ADDR" -p "$P_SRV" -v -C 1 ||
	fail "cannot start rping -s on $P_SRV"
guest_wait_listen "$P_SRV" -t 30 || fail "rping -s does not listen on $P_SRV"
python3 "$here/mpa_probe.py" request --port "$P_SRV" \
	--send '10 02 0004 0001 0001' --expect '10 02 0004 0001 0001' ||
	fail "siw's MPA Reply is not the expected one"
# We hang up: the server sees the disconnect and exits.
sout=$(guest_bg_wait mpa-srv -t 60) ||
	fail "rping -s did not end cleanly after the probe hung up: $sout"
grep -q DISCONNECT <<< "$sout" || fail "rping -s saw no disconnect: $sout"
echo "selftest: host -> guest: MPA Request 10 02 0004 0001 0001 answered byte for byte"

# 4. Guest -> host: rping -c dials the host through guestfwd.  siw's default
# Request is revision 2 with IRD 1 / ORD 1; after our Reply its first FPDU
# is rping's Send (ULPDU length 0x22, Send-Last, QN 0, MSN 1, MO 0) with the
# 16-octet buffer advertisement and a zero CRC field.
python3 "$here/mpa_probe.py" accept --run "$GUEST_RUN" --port "$P_HOST" \
	--guest-cmd "rping -c -a $GUEST_HOST_ADDR -p $P_HOST -v -C 1" \
	--expect '10 02 0004 0001 0001' --reply '10 02 0004 0001 0001' \
	--fpdu '0022 4143 00000000 00000000 00000001 00000000' --fpdu-len 40 ||
	fail "siw's MPA Request or first FPDU is not the expected one"
echo "selftest: guest -> host: MPA Request 10 02 0004 0001 0001 and rping's first FPDU received"

guest_stop
trap - EXIT
status=$(guest_status || true)
[ "$status" = stopped ] || fail "guest status after stop: $status"
crash=$(grep -m 1 -E 'Kernel panic|kernel BUG|BUG: |Oops: ' "$GUEST_RUN/console.log" || true)
[ -z "$crash" ] || fail "the guest kernel complained: $crash"
rm -rf "$GUEST_RUN"
echo "selftest: total $(secs "$t0" "$(now)")s"
echo "1 passed, 0 failed"
