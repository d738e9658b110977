# shellcheck shell=bash disable=SC2034,SC2154 # names shared with the sourcing test
# Shared part of the SCTP interop tests (test_sctp_*.sh): the guest's
# kernel SCTP, UDP-encapsulated, against usrsctp on the host, and uiwarp
# programs built here to run in the guest.  Source it after siw_lib.sh
# (bash), with build and src set.
#
#   sctp_prog_build [--static] OUT SOURCE...
#       links SOURCE... with the build's libuiwarp.a, the tools' helpers
#       (libuiw_tool_helpers.a) and usrsctp's libusrsctp.a; on failure
#       says why on stdout and returns 1
#   sctp_boot          builds (cached) and boots the guest for them (fails
#                      the test with the reason): ports C (TCP, forwarded:
#                      programs go in through it), U (UDP, forwarded to
#                      the guest kernel's encapsulation port SCTP_ENCAP),
#                      L (free on the host: a usrsctp listener's UDP port)
#   sctp_prog_copy_in PROG DEST
#       PROG into the guest as DEST (copy_in, through C), with each shared
#       object it needs that the guest lacks
#   sctp_wait_listen PORT   until a kernel SCTP socket listens on PORT in
#                           the guest (30 s at most)
#
# The guest has none of uiwarp's libraries, only the shared objects
# build-guest.sh takes from this host for rdma-core's tools: this host's
# libc and loader among them.  ISA-L (the CRC32c of MPA, which a program
# using the CM needs) is a shared object only here: Debian's
# libisal-dev has no libisal.a.  So a program is linked static where it
# can be (--static: one without ISA-L, such as sctp_backend_check), and
# otherwise against the shared libc and libisal, everything else static;
# sctp_prog_copy_in then puts libisal.so.2 in the guest where ldd names
# it.  A sanitizer build's library needs run-time libraries the guest
# lacks: these programs need a build without sanitizers.

SCTP_ENCAP=9899			# the guest kernel's net.sctp.udp_port
SCTP_HOST_IN_GUEST=10.0.2.2	# QEMU's address of the host's loopback
				# (UDP from the guest: --open-net)

sctp_prog_build() {
	local link=() out san usrsctp_a f
	if [ "$1" = --static ]; then
		link=(-static)
		shift
	fi
	out=$1
	shift
	san=$(sed -n 's/^UIW_SANITIZE:STRING=//p' "$build/CMakeCache.txt" 2> /dev/null)
	if [ -n "$san" ]; then
		echo "the guest's programs need a build without sanitizers (this one has $san)"
		return 1
	fi
	for f in libuiwarp.a libuiw_tool_helpers.a; do
		[ -f "$build/$f" ] || { echo "$build/$f is not built"; return 1; }
	done
	usrsctp_a=$(gcc -print-file-name=libusrsctp.a)
	if [ ! -f "$usrsctp_a" ]; then
		echo "no libusrsctp.a (libusrsctp-dev) to link $(basename "$out")"
		return 1
	fi
	# shellcheck disable=SC2054 # the comma is the linker's
	[ ${#link[@]} -gt 0 ] || link=(-Wl,--as-needed -lisal)
	if ! gcc -std=gnu11 -O2 -Wall -Wextra -I"$src/src" -I"$src/tests" \
		-I"$src/include" -I"$src/tools" -o "$out" "$@" \
		"$build/libuiw_tool_helpers.a" "$build/libuiwarp.a" \
		"$usrsctp_a" "${link[@]}" -lpthread > "$out.cc.log" 2>&1; then
		tail -n 20 "$out.cc.log"
		echo "$(basename "$out") did not link"
		return 1
	fi
}

sctp_boot() {
	local t
	t=$(date +%s.%N)
	guest_setup "$build" > "$SIW_TMP/setup.log" 2>&1 ||
		{ show "$SIW_TMP/setup.log"; siw_die "the guest could not be built"; }
	read -r C U L <<< "$(guest_free_ports 3)"
	if ! guest_start --hostfwd "$C" --udpfwd "$U:$SCTP_ENCAP" --open-net \
		2> "$SIW_TMP/boot.log"; then
		show "$SIW_TMP/boot.log"
		siw_die "the guest did not boot"
	fi
	echo "# guest up in $(siw_secs "$t")s ($(tr '\n' ' ' < "$SIW_TMP/boot.log"))"
	echo "# tested against: $(grep -E '^(kernel_package|kernel_version)=' "$GUEST_CACHE/guest/info" | tr '\n' ' ')"
	# The start of the first check's lap (siw_lib.sh).
	SIW_LAST=$(date +%s.%N)
}

sctp_prog_copy_in() {
	local prog=$1 dest=$2 libs loader missing f
	copy_in "$prog" "$C" "$dest" || return 1
	# ldd says "not a dynamic executable" of a static one: no objects.
	libs=$(ldd "$prog" 2> /dev/null | awk '/=> \// { print $3 }' | tr '\n' ' ')
	loader=$(ldd "$prog" 2> /dev/null | awk '/^[ \t]*\// { print $1 }')
	[ -n "$libs" ] || return 0
	missing=$(guest_run -t 20 "for f in $libs; do [ -e \$f ] || echo \$f; done") ||
		return 1
	for f in $missing; do
		copy_in "$f" "$C" "$f" || return 1
	done
	# The guest has no ldd: its loader says what it would load.
	if ! f=$(guest_run -t 20 "$loader --list $dest" 2>&1) ||
	   grep -q 'not found' <<< "$f"; then
		echo "$dest cannot run in the guest:"
		echo "$f"
		return 1
	fi
}

sctp_wait_listen() {
	guest_run -t 40 "n=300; while ! awk '\$6 == $1 { f = 1 } END { exit !f }' /proc/net/sctp/eps; do [ \$n -gt 0 ] || exit 1; n=\$((n - 1)); sleep 0.1; done" \
		> /dev/null 2>&1
}
