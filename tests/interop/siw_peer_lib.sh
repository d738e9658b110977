# The uiw_peer / siw_peer pair of the interop data tests (peer_proto.h);
# source it after siw_lib.sh and siw_boot (with at least 2 hostfwd ports
# and 1 guestfwd port).
#
#   peer_setup                         builds both ends, copies siw_peer in
#   data_to_siw NAME SIZES OPTS...     uiw_peer -c OPTS -> siw_peer -s
#                                      (with --start-delay)
#   data_from_siw NAME SIZES OPTS...   siw_peer -c -> uiw_peer -s OPTS
#   error_from_siw NAME EXPECT DMESG OPTS...
#                                      siw_peer -c -> uiw_peer -s OPTS that
#                                      must end with the Terminate EXPECT
#                                      (uiw_peer --expect), and DMESG (if
#                                      not empty) in the guest kernel log

UIW_PEER=$SIW_TMP/uiw_peer
SIW_PEER=/tmp/siw_peer			# in the guest
# siw registers (pins) about 9 MiB per connection here; the guest's
# default RLIMIT_MEMLOCK is 8 MiB.
SIW_PEER_RUN="ulimit -l unlimited; $SIW_PEER"

peer_setup() {
	local cflags=() san
	bash "$src/tests/interop/build-peer.sh" "$GUEST_CACHE" \
		> "$SIW_TMP/build-peer.log" 2>&1 ||
		{ show "$SIW_TMP/build-peer.log"; siw_die "siw_peer could not be built"; }
	# The library as this build made it (with its sanitizers, if any).
	san=$(sed -n 's/^UIW_SANITIZE:STRING=//p' "$build/CMakeCache.txt" 2> /dev/null)
	[ -n "$san" ] && cflags+=("-fsanitize=$san")
	[ -f "$build/libuiwarp.a" ] || siw_die "$build/libuiwarp.a is not built"
	gcc -std=gnu11 -O2 -g -Wall -Wextra "${cflags[@]}" -I"$src/include" \
		-I"$src/tools" -o "$UIW_PEER" "$src/tests/interop/uiw_peer.c" \
		"$build/libuiw_tool_helpers.a" "$build/libuiwarp.a" -lisal \
		-lusrsctp -lpthread > "$SIW_TMP/cc.log" 2>&1 ||
		{ show "$SIW_TMP/cc.log"; siw_die "uiw_peer did not compile"; }
	peer_copy_in || siw_die "siw_peer could not be copied into the guest"
	# shellcheck disable=SC2034 # used by siw_check_guest (siw_lib.sh)
	SIW_AFTER_RESTART=peer_copy_in
	echo "# siw_peer and uiw_peer built; siw_peer copied into the guest"
}

# Through the second forwarded port.
peer_copy_in() {
	copy_in "$GUEST_CACHE/peer/siw_peer" "${HOST_PORTS[1]}" "$SIW_PEER"
}

# peer_verdict NAME SIZES HOSTSTATUS GUESTSTATUS HOSTOUT GUESTOUT WHAT
peer_verdict() {
	local name=$1 sizes=$2 hst=$3 gst=$4 hout=$5 gout=$6 what=$7 n nh ng
	n=$(( $(tr -cd , <<< "$sizes" | wc -c) + 1 ))
	nh=$(grep -c ': verified$' "$hout")
	ng=$(grep -c ': verified$' "$gout")
	if [ "$hst" -eq 0 ] && [ "$gst" -eq 0 ] &&
	   [ "$nh" -eq $((n * 3)) ] && [ "$ng" -eq $((n * 3)) ]; then
		ok "$name: $what: Send, RDMA Write and RDMA Read both ways, $n sizes ($sizes octets), $((nh + ng)) transfers verified ($(grep -m 1 'established:' "$hout" | sed 's/^uiw_peer: established: //'); $(grep -m 1 'QP:' "$hout" | sed 's/^uiw_peer: QP: //'))"
	else
		bad "$name: $what: host status $hst, guest status $gst, $nh + $ng of $((n * 6)) transfers verified"
		show "$hout" "$gout"
	fi
}

data_to_siw() {
	local name=$1 sizes=$2 out=$SIW_TMP/$1 hst gst
	local port=${HOST_PORTS[0]}
	shift 2
	if ! job_start "$SIW_PEER_RUN -s $GUEST_ADDR -p $port -n $sizes" \
		> "$out.start" 2>&1 ||
	   ! guest_wait_listen "$port" -t 30 > "$out.listen" 2>&1; then
		bad "$name: siw_peer -s did not start"
		show "$out.start" "$out.listen"
		return
	fi
	timeout -s KILL 120 "$UIW_PEER" -c 127.0.0.1 -p "$port" \
		--start-delay="$SIW_START_DELAY_MS" -n "$sizes" "$@" \
		> "$out.host" 2>&1
	hst=$?
	job_wait "$JOB" 60 "$out.guest"
	gst=$?
	[ "$gst" -eq 124 ] && job_end "$JOB" "$port"
	peer_verdict "$name" "$sizes" "$hst" "$gst" "$out.host" "$out.guest" \
		"uiw_peer -c $* -> siw_peer -s"
	siw_check_guest "$name"
}

data_from_siw() {
	local name=$1 sizes=$2 out=$SIW_TMP/$1 hst gst pid
	local port=${GUEST_PORTS[0]}
	shift 2
	if ! host_listen "$name.h" 120 "listening on" "$UIW_PEER" -s 127.0.0.1 \
		-p "$port" -n "$sizes" "$@"; then
		bad "$name: uiw_peer -s did not start"
		show "$SIW_TMP/$name.h.out" "$SIW_TMP/$name.h.err"
		return
	fi
	pid=$HOST_PID
	guest_run -t 100 "$SIW_PEER_RUN -c $GUEST_HOST_ADDR -p $port -n $sizes" \
		> "$out.guest" 2>&1
	gst=$?
	host_wait "$pid"
	hst=$?
	cat "$SIW_TMP/$name.h.err" >> "$SIW_TMP/$name.h.out"
	peer_verdict "$name" "$sizes" "$hst" "$gst" "$SIW_TMP/$name.h.out" \
		"$out.guest" "siw_peer -c -> uiw_peer -s $*"
	siw_check_guest "$name"
}

error_from_siw() {
	local name=$1 expect=$2 klog=$3 out=$SIW_TMP/$1 hst gst pid gmode klog_ok
	local port=${GUEST_PORTS[0]} mode
	shift 3
	mode=$(sed -n 's/.*--mode=\([a-z-]*\).*/\1/p' <<< "$*")
	gmode=--expect-fail
	[ "$mode" = victim ] && gmode=--bad-read
	guest_dmesg_mark
	if ! host_listen "$name.h" 120 "listening on" "$UIW_PEER" -s 127.0.0.1 \
		-p "$port" -t 30 --expect="$expect" "$@"; then
		bad "$name: uiw_peer -s did not start"
		show "$SIW_TMP/$name.h.out" "$SIW_TMP/$name.h.err"
		return
	fi
	pid=$HOST_PID
	guest_run -t 60 "$SIW_PEER_RUN -c $GUEST_HOST_ADDR -p $port -t 30 $gmode" \
		> "$out.guest" 2>&1
	gst=$?
	host_wait "$pid"
	hst=$?
	cat "$SIW_TMP/$name.h.err" >> "$SIW_TMP/$name.h.out"
	guest_dmesg_new > "$out.dmesg"
	klog_ok=yes
	[ -z "$klog" ] || grep -qF "$klog" "$out.dmesg" || klog_ok=no
	if [ "$hst" -eq 0 ] && [ "$gst" -eq 0 ] && [ $klog_ok = yes ]; then
		ok "$name: $(grep -m 1 '^uiw_peer: QP ' "$SIW_TMP/$name.h.out" | sed 's/^uiw_peer: //'); siw: $(grep -m 1 'as expected' "$out.guest" | sed 's/^siw_peer: //')${klog:+; siw logged \"$klog\"}"
	else
		bad "$name: uiw_peer $* --expect=$expect: host status $hst, guest status $gst${klog:+, \"$klog\" in the guest kernel log: $klog_ok}"
		show "$SIW_TMP/$name.h.out" "$out.guest" "$out.dmesg"
	fi
	siw_check_guest "$name"
}
