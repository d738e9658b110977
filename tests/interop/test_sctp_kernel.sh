#!/usr/bin/env bash
# The kernel SCTP carrier (src/llp/sctp_kern.c) against Linux's SCTP in
# the interop guest: this host's kernel has no SCTP and loads no module,
# the guest's (Debian's, build-guest.sh) has sctp.ko, loaded here with
# "modprobe sctp".
#
# sctp_backend_check (sctp_check.h: the script of checks), built static
# and copied into the guest, runs there as server and client of one
# process, kernel to kernel over the guest's loopback:
#   1. plain SCTP over IP (net.sctp.udp_port 0): no UDP datagram may be
#      received meanwhile;
#   2. UDP-encapsulated (RFC 6951, net.sctp.udp_port 9899), with a path
#      MTU of 1400 set (cfg.mtu): the server learns the client's UDP
#      port 9899 from its packets, and the guest's UDP counters show the
#      datagrams.
# Then, as a separate step, the kernel in the guest against the
# user-space backend (usrsctp) on the host, over UDP through QEMU's user
# network (restrict=off: the guest's own UDP reaches 10.0.2.2, the
# host's loopback), both ways:
#   3. guest client -> host server: the guest sends to 10.0.2.2:L, the
#      host's usrsctp stack listens on UDP 127.0.0.1:L;
#   4. host client -> guest server: the host sends to 127.0.0.1:U,
#      forwarded (hostfwd=udp) to the guest's 9899.
# Step 3-4 needs the user-space backend (sctp_usr.c); where it cannot run
# on this host (it says -EPROTONOSUPPORT), the step fails with its reason.
#
# usage: test_sctp_kernel.sh <build-dir> <source-dir>
set -uo pipefail

build=${1:?usage: test_sctp_kernel.sh <build-dir> <source-dir>}
src=${2:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
mkdir -p "$build"
build=$(cd "$build" && pwd)
src=$(cd "$src" && pwd)

# shellcheck source=siw_lib.sh
source "$src/tests/interop/siw_lib.sh"
# shellcheck source=sctp_lib.sh
source "$src/tests/interop/sctp_lib.sh"

CHECK_HOST=$build/sctp_backend_check
CHECK_STATIC=$SIW_TMP/sctp_backend_check
CHECK_GUEST=/tmp/sctp_backend_check

[ -x "$CHECK_HOST" ] || siw_die "$CHECK_HOST is not built"

# The carrier alone needs no ISA-L: the program goes in static.
sctp_prog_build --static "$CHECK_STATIC" \
	"$src/tests/interop/sctp_backend_check.c" \
	"$src/tests/interop/sctp_check.c" > "$SIW_TMP/cc.log" 2>&1 ||
	{ show "$SIW_TMP/cc.log"; siw_die "the static sctp_backend_check did not link"; }

# Ports (sctp_lib.sh): C copies the program in, U is forwarded to the
# guest kernel's encapsulation port, L is the host usrsctp listener's.
sctp_boot

sctp_prog_copy_in "$CHECK_STATIC" "$CHECK_GUEST" ||
	siw_die "sctp_backend_check could not be copied into the guest"
ok "sctp_backend_check ($(du -k "$CHECK_STATIC" | cut -f1) KiB, static) copied into the guest"

if guest_run -t 60 "modprobe sctp && test -e /proc/net/sctp/eps && test -e /proc/sys/net/sctp/udp_port" \
	> "$SIW_TMP/modprobe.out" 2>&1; then
	ok "modprobe sctp: $(guest_run -t 20 "lsmod | awk '/^(sctp|udp_tunnel|ip6_udp_tunnel|libcrc32c) / { printf \"%s \", \$1 }'")loaded; net.sctp.udp_port exists"
else
	bad "modprobe sctp in the guest"
	show "$SIW_TMP/modprobe.out"
	siw_finish
fi

# udp_in: the guest's count of UDP datagrams received (/proc/net/snmp).
udp_in() {
	guest_run -t 20 "awk '/^Udp: [0-9]/ { print \$2 }' /proc/net/snmp" | tr -dc 0-9
}

# kernel_run NAME ARGS...: the script in the guest, server and client in
# one process over the loopback; its output in $SIW_TMP/NAME.out.
kernel_run() {
	local name=$1 st
	shift
	guest_run -t 200 "$CHECK_GUEST --kind kernel --listen 127.0.0.1:5000 --connect 127.0.0.1:5000 --timeout 150 $*" \
		> "$SIW_TMP/$name.out" 2>&1
	st=$?
	if [ "$st" -eq 0 ]; then
		ok "$name: kernel <-> kernel: $(tail -n 1 "$SIW_TMP/$name.out")"
	else
		bad "$name: kernel <-> kernel: status $st: $(grep -c '^FAIL' "$SIW_TMP/$name.out") checks failed"
		grep '^FAIL\|^#' "$SIW_TMP/$name.out" | sed -n 1,20p | sed 's/^/  | /'
		show "$SIW_TMP/$name.out"
	fi
	return "$st"
}

# 1. Plain SCTP.
guest_run -t 20 "sysctl -w net.sctp.udp_port=0" > /dev/null 2>&1
u0=$(udp_in)
if kernel_run plain; then
	u1=$(udp_in)
	if [ "$u1" -eq "$u0" ] && grep -q 'server 1 (data): up: .*peer UDP port 0$' "$SIW_TMP/plain.out"; then
		ok "plain: SCTP over IP (no UDP datagram received: $u0 before, $u1 after)"
	else
		bad "plain: UDP datagrams $u0 before, $u1 after; the server's peer UDP port: $(grep -o 'server 1 (data): up: .*' "$SIW_TMP/plain.out")"
	fi
fi
siw_check_guest plain

# 2. UDP-encapsulated, path MTU 1400.
if guest_run -t 20 "sysctl -w net.sctp.udp_port=$SCTP_ENCAP && grep -q ':$(printf '%04X' $SCTP_ENCAP) ' /proc/net/udp" \
	> "$SIW_TMP/sysctl.out" 2>&1; then
	ok "net.sctp.udp_port=$SCTP_ENCAP: the kernel's encapsulation socket is bound"
else
	bad "net.sctp.udp_port=$SCTP_ENCAP"
	show "$SIW_TMP/sysctl.out"
fi
u0=$(udp_in)
if kernel_run udp --udp-port $SCTP_ENCAP --mtu 1400; then
	u1=$(udp_in)
	if [ "$u1" -gt "$u0" ] &&
	   grep -q "server 1 (data): up: .*peer UDP port $SCTP_ENCAP\$" "$SIW_TMP/udp.out" &&
	   grep -q "client 1 (data): up: .*maxseg 1372," "$SIW_TMP/udp.out"; then
		ok "udp: SCTP over UDP (RFC 6951): $((u1 - u0)) datagrams received; the server saw UDP port $SCTP_ENCAP; maxseg 1372 for a path MTU of 1400"
	else
		bad "udp: UDP datagrams $u0 before, $u1 after; $(grep -o 'server 1 (data): up: .*' "$SIW_TMP/udp.out"); $(grep -o 'client 1 (data): up: .*' "$SIW_TMP/udp.out")"
	fi
fi
siw_check_guest udp

# 3-4. Kernel (guest) <-> usrsctp (host) over QEMU's user network.
# 3. Guest client -> host server (UDP 127.0.0.1:L).
if host_listen usr-srv 200 "# listening on" "$CHECK_HOST" --kind user \
	--listen 127.0.0.1:5002 --udp-port "$L" --timeout 150; then
	pid=$HOST_PID
	guest_run -t 200 "$CHECK_GUEST --kind kernel --connect $SCTP_HOST_IN_GUEST:5002 --udp-port $L --timeout 150" \
		> "$SIW_TMP/k2u.guest" 2>&1
	gst=$?
	host_wait "$pid"
	hst=$?
	if [ "$gst" -eq 0 ] && [ "$hst" -eq 0 ]; then
		ok "kernel (guest, client) -> usrsctp (host, server) over UDP: guest $(tail -n 1 "$SIW_TMP/k2u.guest"), host $(tail -n 1 "$SIW_TMP/usr-srv.out")"
	else
		bad "kernel (guest, client) -> usrsctp (host, server) over UDP: guest status $gst, host status $hst"
		show "$SIW_TMP/k2u.guest" "$SIW_TMP/usr-srv.out" "$SIW_TMP/usr-srv.err"
	fi
	siw_check_guest k2u

	# 4. Host client (UDP to 127.0.0.1:U, forwarded to the guest's
	# encapsulation port) -> guest server.
	job_start "$CHECK_GUEST --kind kernel --listen 0.0.0.0:5003 --timeout 150" > /dev/null 2>&1
	srv=$JOB
	if sctp_wait_listen 5003; then
		timeout -s KILL 200 "$CHECK_HOST" --kind user --connect 127.0.0.1:5003 \
			--udp-port "$U" --timeout 150 > "$SIW_TMP/u2k.host" 2>&1
		hst=$?
		job_wait "$srv" 200 "$SIW_TMP/u2k.guest"
		gst=$?
		if [ "$gst" -eq 0 ] && [ "$hst" -eq 0 ]; then
			ok "usrsctp (host, client) -> kernel (guest, server) over UDP: host $(tail -n 1 "$SIW_TMP/u2k.host"), guest $(tail -n 1 "$SIW_TMP/u2k.guest")"
		else
			bad "usrsctp (host, client) -> kernel (guest, server) over UDP: host status $hst, guest status $gst"
			show "$SIW_TMP/u2k.host" "$SIW_TMP/u2k.guest"
		fi
	else
		bad "the kernel server in the guest did not listen on SCTP port 5003"
		job_wait "$srv" 5 "$SIW_TMP/u2k.guest"
		show "$SIW_TMP/u2k.guest"
	fi
	siw_check_guest u2k
elif grep -q '^# no user-space SCTP stack here' "$SIW_TMP/usr-srv.out"; then
	bad "kernel <-> usrsctp, both ways: the user-space backend cannot run on this host, so neither direction can be checked: $(sed -n 's/^# no user-space SCTP stack here: //p' "$SIW_TMP/usr-srv.out")"
else
	bad "kernel <-> usrsctp: the usrsctp server on the host did not start"
	show "$SIW_TMP/usr-srv.out" "$SIW_TMP/usr-srv.err"
fi

siw_finish
