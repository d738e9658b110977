#!/usr/bin/env bash
# uiwarp over two independent SCTP stacks, end to end: uiwarp on Linux's
# kernel SCTP in the interop guest, its packets in UDP (RFC 6951,
# net.sctp.udp_port 9899), against uiwarp on usrsctp on the host, over
# QEMU's user network (restrict=off: the guest's UDP reaches 10.0.2.2,
# the host's loopback; forwarded UDP reaches the guest's 9899).
#
# The data script of the siw test (peer_proto.h) runs between two
# uiw_peers, the guest's playing the guest's part (--as-guest): Send,
# RDMA Write and RDMA Read of 1 octet to 1 MiB, each octet checked by the
# receiving or reading end, host -> guest and guest -> host, over one
# connection each way of setting it up:
#   1. guest server (--llp sctp-kernel) <- host client (--llp sctp-udp,
#      UDP to 127.0.0.1:U, forwarded to the guest's 9899);
#   2. host server (--llp sctp-udp, UDP port L on 127.0.0.1) <- guest
#      client (--llp sctp-kernel --udp-port L, to 10.0.2.2).
# Each time: the host's QP reports UIW_LLP_SCTP_UDP and the guest's
# UIW_LLP_SCTP_KERNEL; the guest kernel's association has a remote UDP
# encapsulation port (SCTP_REMOTE_UDP_ENCAPS_PORT; L in 2.), and its
# counters show SCTP packets received, each in a UDP datagram.
#
# usage: test_sctp_data.sh <build-dir> <source-dir>
set -uo pipefail

build=${1:?usage: test_sctp_data.sh <build-dir> <source-dir>}
src=${2:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
mkdir -p "$build"
build=$(cd "$build" && pwd)
src=$(cd "$src" && pwd)

# shellcheck source=siw_lib.sh
source "$src/tests/interop/siw_lib.sh"
# shellcheck source=sctp_lib.sh
source "$src/tests/interop/sctp_lib.sh"
# shellcheck source=siw_peer_lib.sh
source "$src/tests/interop/siw_peer_lib.sh"	# peer_verdict

PEER_GUEST=/tmp/uiw_peer
# 1428: an untagged segment that fills the guest kernel's MULPDU (1442 =
# 1444, its maxseg on a 1500-octet path, less the DDP-SSN), over that of
# usrsctp (1422, its MTU 1452).
SIZES=1,7,1428,4096,65537,1048576
GUEST_SCTP_PORT=5010		# SCTP ports (in the guest's kernel, and in
HOST_SCTP_PORT=5011		# the host's usrsctp: not the host's own)

# One program for both ends: the host runs the same binary.
sctp_prog_build "$UIW_PEER" "$src/tests/interop/uiw_peer.c" \
	> "$SIW_TMP/cc.log" 2>&1 ||
	{ show "$SIW_TMP/cc.log"; siw_die "uiw_peer for the guest did not link"; }

# Ports (sctp_lib.sh): C copies programs in, U is forwarded to the guest
# kernel's encapsulation port, L is the host usrsctp listener's.
sctp_boot
echo "# usrsctp on the host: $(dpkg-query -W -f='${Version}' libusrsctp-dev 2> /dev/null)"

# uiw_peer in, kernel SCTP loaded, UDP encapsulation on (also after a
# restart of the guest).
sctp_setup() {
	sctp_prog_copy_in "$UIW_PEER" "$PEER_GUEST" > "$SIW_TMP/copy.log" 2>&1 ||
		{ show "$SIW_TMP/copy.log"; return 1; }
	guest_run -t 60 "modprobe sctp && sysctl -w net.sctp.udp_port=$SCTP_ENCAP && grep -q ':$(printf '%04X' $SCTP_ENCAP) ' /proc/net/udp" \
		> "$SIW_TMP/sctp.log" 2>&1 || { show "$SIW_TMP/sctp.log"; return 1; }
}
sctp_setup || siw_die "uiw_peer, kernel SCTP or its UDP encapsulation could not be set up in the guest"
ok "uiw_peer ($(du -k "$UIW_PEER" | cut -f1) KiB; shared: $(ldd "$UIW_PEER" | awk '/=> \// { printf "%s%s", s, $1; s = " " }')) copied into the guest; sctp loaded; net.sctp.udp_port=$SCTP_ENCAP bound"
# shellcheck disable=SC2034 # used by siw_check_guest (siw_lib.sh)
SIW_AFTER_RESTART=sctp_setup

# counters: "UDP-in SCTP-in SCTP-out" of the guest's kernel
# (/proc/net/snmp's Udp InDatagrams, /proc/net/sctp/snmp).
counters() {
	guest_run -t 20 "awk '/^Udp: [0-9]/ { print \$2 }' /proc/net/snmp; awk '\$1 == \"SctpInSCTPPacks\" { i = \$2 } \$1 == \"SctpOutSCTPPacks\" { o = \$2 } END { print i, o }' /proc/net/sctp/snmp" |
		tr -s '\n' ' '
}

# verdict NAME HOSTOUT GUESTOUT HOSTST GUESTST BEFORE UDPPORT WHAT:
# the data (peer_verdict), each end's LLP, the guest association's UDP
# port (UDPPORT, or any but 0 when empty), the guest's counters since
# BEFORE, and the figures at 1 MiB.
verdict() {
	local name=$1 hout=$2 gout=$3 hst=$4 gst=$5 before=$6 port=$7 what=$8
	local hllp gllp gport u0 i0 o0 u1 i1 o1 fig
	peer_verdict "$name" "$SIZES" "$hst" "$gst" "$hout" "$gout" "$what"
	hllp=$(sed -n 's/^uiw_peer: QP: LLP \([a-z-]*\),.*/\1/p' "$hout")
	gllp=$(sed -n 's/^uiw_peer: QP: LLP \([a-z-]*\),.*/\1/p' "$gout")
	if [ "$hllp" = sctp-udp ] && [ "$gllp" = sctp-kernel ]; then
		ok "$name: the host's QP runs on UIW_LLP_SCTP_UDP (usrsctp), the guest's on UIW_LLP_SCTP_KERNEL"
	else
		bad "$name: the QPs' LLPs: host '$hllp' (want sctp-udp), guest '$gllp' (want sctp-kernel)"
	fi
	# sctp_kern.c logs the association's SCTP_REMOTE_UDP_ENCAPS_PORT
	# (UIWARP_DEBUG=1).
	gport=$(sed -n 's/.*kernel SCTP: association .* up: .*, UDP port \([0-9]*\)$/\1/p' "$gout" | sed -n 1p)
	if [ -n "$gport" ] && [ "$gport" != 0 ] && { [ -z "$port" ] || [ "$gport" = "$port" ]; }; then
		ok "$name: the guest kernel's association sends in UDP to the host's port $gport (RFC 6951)"
	else
		bad "$name: the guest kernel's association: remote UDP port '$gport'${port:+, want $port}"
		grep 'kernel SCTP' "$gout" | sed -n 1,5p | sed 's/^/  | /'
	fi
	read -r u0 i0 o0 <<< "$before"
	read -r u1 i1 o1 <<< "$(counters)"
	if [ -n "$u0" ] && [ -n "$o1" ] && [ $((i1 - i0)) -gt 0 ] &&
	   [ $((o1 - o0)) -gt 0 ] && [ $((u1 - u0)) -ge $((i1 - i0)) ]; then
		ok "$name: the guest kernel received $((i1 - i0)) SCTP packets in $((u1 - u0)) UDP datagrams and sent $((o1 - o0))"
	else
		bad "$name: the guest's counters (UDP in, SCTP in, SCTP out): '$before' before, '$u1 $i1 $o1' after"
	fi
	fig=$(awk '/^uiw_peer: 1048576 octets: .* MB\/s$/ {
		sub(/^uiw_peer: 1048576 octets: /, ""); printf "%s%s", s, $0; s = "; " }' "$hout")
	echo "# $name, 1 MiB steps (each: fill, transfer, check, RESULT; TCG): $fig"
}

# 1. Guest server (kernel SCTP) <- host client (usrsctp).
out=$SIW_TMP/k-srv
before=$(counters)
job_start "UIWARP_DEBUG=1 $PEER_GUEST -s $GUEST_ADDR -p $GUEST_SCTP_PORT --llp sctp-kernel --as-guest -n $SIZES -t 60" \
	> "$out.start" 2>&1
srv=$JOB
if sctp_wait_listen "$GUEST_SCTP_PORT"; then
	timeout -s KILL 150 "$UIW_PEER" -c 127.0.0.1 -p "$GUEST_SCTP_PORT" \
		--llp sctp-udp --udp-port "$U" -n "$SIZES" -t 60 \
		> "$out.host" 2>&1
	hst=$?
	job_wait "$srv" 90 "$out.guest"
	gst=$?
	verdict k-srv "$out.host" "$out.guest" "$hst" "$gst" "$before" "" \
		"usrsctp (host, client, UDP to $U -> $SCTP_ENCAP) -> kernel SCTP (guest, server)"
else
	bad "k-srv: uiw_peer in the guest did not listen on SCTP port $GUEST_SCTP_PORT"
	job_wait "$srv" 5 "$out.guest"
	show "$out.start" "$out.guest"
fi
siw_check_guest k-srv

# 2. Host server (usrsctp, UDP port L) <- guest client (kernel SCTP).
out=$SIW_TMP/k-cli
before=$(counters)
if host_listen k-cli.h 150 "listening on" "$UIW_PEER" -s 127.0.0.1 \
	-p "$HOST_SCTP_PORT" --llp sctp-udp --udp-port "$L" -n "$SIZES" -t 60; then
	pid=$HOST_PID
	guest_run -t 120 "UIWARP_DEBUG=1 $PEER_GUEST -c $SCTP_HOST_IN_GUEST -p $HOST_SCTP_PORT --llp sctp-kernel --udp-port $L --as-guest -n $SIZES -t 60" \
		> "$out.guest" 2>&1
	gst=$?
	host_wait "$pid"
	hst=$?
	cat "$SIW_TMP/k-cli.h.err" >> "$SIW_TMP/k-cli.h.out"
	verdict k-cli "$SIW_TMP/k-cli.h.out" "$out.guest" "$hst" "$gst" \
		"$before" "$L" \
		"kernel SCTP (guest, client, UDP to $SCTP_HOST_IN_GUEST:$L) -> usrsctp (host, server)"
else
	bad "k-cli: uiw_peer on the host did not listen"
	show "$SIW_TMP/k-cli.h.out" "$SIW_TMP/k-cli.h.err"
fi
siw_check_guest k-cli

siw_finish
