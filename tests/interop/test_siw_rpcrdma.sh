#!/usr/bin/env bash
# RPC-over-RDMA between uiwarp and Linux siw: libuiwarp-rpcrdma at both
# ends, with the same programs (the store example's store-server and
# store-client, uiwarp-rpcping) on both.
#
#   guest: on siw, through the libuiwarp-rpcrdma.so.0 of BUILD/rdma-core
#     (the same objects linked against Debian's libibverbs.so and
#     librdmacm.so: the guest runs this host's rdma-core, build-guest.sh)
#   host: on uiwarp, through the usual libuiwarp-rpcrdma.so.0 and the
#     drop-in libibverbs.so.1 and librdmacm.so.1
#
#   to-siw: the servers listen in the guest on siw0 (10.0.2.15:S and :R,
#     forwarded from the host's 127.0.0.1), the clients run on the host
#   from-siw: the servers listen on the host's 127.0.0.1:Q..., the
#     clients run in the guest and dial 10.0.2.100 (guestfwd)
#
# Each way:
# - store put and get of 0 B to 8 MiB, each object got back and
#   compared with what was put (from-siw also against the host's own
#   copy, by MD5); what --stats says moved: a put by RDMA Read once its
#   call does not fit the 4096-octet inline threshold, a get by RDMA
#   Write from STORE_DDP_MIN (1024) octets, the rest in inline Sends;
#   every reply a Send With Invalidate (each store call offers a Reply
#   chunk, the ULB's reply_max being above the inline threshold, and
#   both ends set RFC 8797's R bit);
# - ls (every object, its size), stat, rm;
# - RFC 8797 private data off on one end (--no-private-data: the host's
#   client to-siw, a host server from-siw): both ends keep to 1024
#   octets, so a put of 1024 octets moves by RDMA Read and one of 1023
#   (not DDP-eligible) as a Long call, the get of those 1023 comes back
#   in a Reply chunk, and no reply is a Send With Invalidate;
# - the server's counts at its end (calls, chunks of each kind, Long
#   messages) are the sums of its clients';
# - uiwarp-rpcping: NULL calls with 1 outstanding, 16 on a CLIENT each
#   and 16 sharing one: each run made -n calls, the transport counted
#   them with the warm-up calls, and the server counted all runs' calls.
#
# uiwarp runs with its defaults: every UIWARP_ variable is unset, so the
# drop-in's start delay after siw's MPA Reply (SIW_START_DELAY_MS in
# siw_lib.sh) is what lets the host's connections to siw start.
#
# usage: test_siw_rpcrdma.sh <build-dir> <source-dir>
set -uo pipefail

build=${1:?usage: test_siw_rpcrdma.sh <build-dir> <source-dir>}
src=${2:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
mkdir -p "$build"
build=$(cd "$build" && pwd)
src=$(cd "$src" && pwd)

# shellcheck source=siw_lib.sh
source "$src/tests/interop/siw_lib.sh"

client=$build/examples/store/store-client
server=$build/examples/store/store-server
ping=$build/uiwarp-rpcping
# libuiwarp-rpcrdma.so.0 linked against the system's rdma-core
# (src/rpcrdma/CMakeLists.txt), and libuiwarp.so.0, which
# uiwarp-rpcping loads for its tool helpers (tools/tool_util.c).
rr_core=$build/rdma-core/libuiwarp-rpcrdma.so.0
for f in "$client" "$server" "$ping" "$rr_core" "$build/libuiwarp.so.0"; do
	[ -e "$f" ] || siw_die "$f is not built"
done
san=$(sed -n 's/^UIW_SANITIZE:STRING=//p' "$build/CMakeCache.txt" 2> /dev/null)
[ -z "$san" ] || siw_die "the guest's programs need a build without sanitizers (this one has $san)"
# uiwarp's defaults, whatever the caller's environment holds.
while read -r v; do
	unset "$v"
done < <(env | sed -n 's/^\(UIWARP_[A-Z_]*\)=.*/\1/p')

GBIN=/root			# the programs in the guest
# What the guest's programs run under.  siw 6.1 counts the memory its
# users register against RLIMIT_MEMLOCK, root's too (siw_reg_user_mr
# and siw_umem_get check the limit and no capability), and the
# kernel's default limit is 8 MiB: a store moving 8 MiB objects, or
# uiwarp-rpcping's 16 CLIENTs with their receive buffers, need more.
GRUN="ulimit -l unlimited &&"
GDIR=/tmp/rr			# the guest's files
GLIB=/usr/lib/x86_64-linux-gnu	# uiwarp's libraries in the guest
SIZES=(0 1023 1024 4097 65536 1048576 8388608)
# STORE_DDP_MIN (examples/store/store_ulb.h): a get of that many octets
# or more moves by RDMA Write.  A put moves by RDMA Read once its call
# (transport header, RPC header, name, data) exceeds the 4096-octet
# inline threshold: from 4095 octets with these names, 4097 being clear
# of the edge.
DDP_MIN=1024
PUT_CHUNK_MIN=4095
# uiwarp-rpcping: calls per run and warm-up calls per thread.
PING_N=200
PING_W=5

# ------------------------------------------------------------ the guest
siw_boot test_siw_rpcrdma 3 3
C=${HOST_PORTS[0]}		# copy_in
S=${HOST_PORTS[1]}		# the guest's store-server
R=${HOST_PORTS[2]}		# the guest's uiwarp-rpcping -s
Q=${GUEST_PORTS[0]}		# the host's store-server
QP=${GUEST_PORTS[1]}		# the host's uiwarp-rpcping -s
QN=${GUEST_PORTS[2]}		# the host's store-server --no-private-data

# The host's programs must run on the drop-in (their RUNPATH).
if ldd "$client" > "$SIW_TMP/ldd.host" 2>&1 &&
   grep -q "libibverbs.so.1 => $build/compat/" "$SIW_TMP/ldd.host" &&
   grep -q "libuiwarp-rpcrdma.so.0 => $build/src/rpcrdma/" "$SIW_TMP/ldd.host"; then
	ok "host: store-client loads libuiwarp-rpcrdma.so.0 from $build/src/rpcrdma and the drop-in libibverbs.so.1 from $build/compat"
else
	bad "host: store-client does not load the drop-in libraries"
	show "$SIW_TMP/ldd.host"
fi

# guest_install: the three programs into the guest's $GBIN, the two
# libraries of uiwarp (the rdma-core build of libuiwarp-rpcrdma.so.0,
# and libuiwarp.so.0) into its $GLIB, and every other shared object
# they need that the guest lacks (libtirpc.so.3, its Kerberos
# libraries, ISA-L, usrsctp ...), as one tar through copy_in.  What
# they need is what ldd finds with uiwarp's two libraries first on the
# path, as the guest's loader will; nothing may come from the build
# directory.
guest_install() {
	local stage=$SIW_TMP/stage root=$SIW_TMP/root libs f missing
	mkdir -p "$stage" "$root$GBIN" "$root$GLIB"
	cp -L "$rr_core" "$build/libuiwarp.so.0" "$stage/"
	cp "$client" "$server" "$ping" "$root$GBIN/"
	libs=$(for f in "$client" "$server" "$ping"; do
		LD_LIBRARY_PATH=$stage ldd "$f"
	done | awk '/=> \// { print $3 }' | sort -u)
	if grep "^$build/" <<< "$libs"; then
		echo "found in the build directory, not for the guest"
		return 1
	fi
	cp "$stage"/* "$root$GLIB/"
	libs=$(grep -v "^$stage/" <<< "$libs" | tr '\n' ' ')
	missing=$(guest_run -t 20 "for f in $libs; do [ -e \$f ] || echo \$f; done") ||
		return 1
	for f in $missing; do
		# the guest's /lib and /lib64 are links into /usr
		case $f in
		/lib/* | /lib64/*) mkdir -p "$root/usr$(dirname "$f")"; cp -L "$f" "$root/usr$f" ;;
		*) mkdir -p "$root$(dirname "$f")"; cp -L "$f" "$root$f" ;;
		esac
	done
	(cd "$root" && find . -type f | sed 's|^\.||' | sort) > "$SIW_TMP/installed"
	(cd "$root" && find . -type f | tar -cf "$SIW_TMP/install.tar" --no-recursion -T -) &&
		copy_in "$SIW_TMP/install.tar" "$C" /tmp/install.tar &&
		guest_run -t 30 "tar -xf /tmp/install.tar -C / && rm /tmp/install.tar"
}

# What the guest's loader takes for each program: nothing missing,
# libuiwarp-rpcrdma.so.0 the rdma-core build, and libibverbs.so.1 and
# librdmacm.so.1 the very files of this host's Debian rdma-core.
guest_check_libs() {
	local n p paths="" want got
	guest_run -t 30 "for p in store-client store-server uiwarp-rpcping; do /lib64/ld-linux-x86-64.so.2 --list $GBIN/\$p; done" \
		> "$SIW_TMP/ldd.guest" 2>&1 || return 1
	if grep -q "not found" "$SIW_TMP/ldd.guest"; then
		grep "not found" "$SIW_TMP/ldd.guest" | sort -u
		return 1
	fi
	for n in libuiwarp-rpcrdma.so.0 libibverbs.so.1 librdmacm.so.1; do
		p=$(awk -v n="$n" '$1 == n && $2 == "=>" { print $3 }' "$SIW_TMP/ldd.guest" | sort -u)
		[ "$(wc -w <<< "$p")" -eq 1 ] || { echo "$n: loaded from '$p'"; return 1; }
		paths+="$p "
	done
	got=$(guest_run -t 20 "md5sum $paths" | awk '{ print $1 }' | tr '\n' ' ')
	want=$(md5sum "$rr_core" /lib/x86_64-linux-gnu/libibverbs.so.1 \
		/lib/x86_64-linux-gnu/librdmacm.so.1 | awk '{ print $1 }' | tr '\n' ' ')
	if [ "$got" != "$want" ]; then
		echo "MD5 of $paths in the guest: $got; of their originals here: $want"
		return 1
	fi
	echo "$paths"
}

if guest_install > "$SIW_TMP/install.log" 2>&1; then
	ok "install: into the guest: $(xargs -n 1 basename < "$SIW_TMP/installed" | tr '\n' ' ')"
else
	show "$SIW_TMP/install.log"
	siw_die "install: the programs could not be put in the guest"
fi
if f=$(guest_check_libs 2>&1); then
	ok "guest: the programs load $f(the rdma-core build, and Debian's rdma-core 44 as on this host)"
else
	bad "guest: the programs' libraries: $f"
	show "$SIW_TMP/ldd.guest"
fi

# guest_term JOB PROG PORT FILE: SIGTERM to PROG, JOB's program, by its
# pid (uiw-bg's kill signals the whole job, with the shell that records
# its status), then the job's status once it ended, its output in FILE
# (124: it did not end in 30 s; it is killed then).
guest_term() {
	local job=$1 prog=$2 port=$3 f=$4 st
	guest_run -t 20 "kill -s TERM \$(pidof $prog)" > /dev/null 2>&1
	job_wait "$job" 30 "$f"
	st=$?
	[ $st -eq 124 ] && job_end "$job" "$port"
	return $st
}

# ------------------------------------------------------------ the store
# sc host|guest PORT ARGS...: store-client on that side against a
# server on PORT (the guest's own address of the host, or the host's
# forwarded port); output in $SIW_TMP/out, status in rc.
sc() {
	local where=$1 port=$2
	shift 2
	if [ "$where" = host ]; then
		timeout -s KILL 90 "$client" -s 127.0.0.1 -p "$port" "$@" > "$SIW_TMP/out" 2>&1
	else
		guest_run -t 90 "$GRUN $GBIN/store-client -s $GUEST_HOST_ADDR -p $port $*" > "$SIW_TMP/out" 2>&1
	fi
	rc=$?
}

# count PROG KEY FILE: the count KEY of PROG's last "rdma:" line
# (uiw_ru_print_stats) in FILE, 0 without one.
count() {
	local v
	v=$(sed -n "s/^$1: rdma:.* $2=\([0-9]*\).*/\1/p" "$3" | tail -n 1)
	echo "${v:-0}"
}

# val KEY: the count KEY of the last store-client run.
val() {
	count store-client "$1" "$SIW_TMP/out"
}

# moved: what the client's run in $SIW_TMP/out moved, in the words of
# the expectations.
moved() {
	echo "read=$(val read_chunks) write=$(val write_chunks)" \
		"reply=$(val reply_chunks) long=$(($(val long_calls) + $(val long_replies)))"
}

# The sums over the clients of one server, to compare with its counts
# (and the Send With Invalidate replies its clients saw, client_inv).
SUM_KEYS="calls read_chunks write_chunks reply_chunks long_calls long_replies"
declare -A SUM
sum_reset() {
	local k
	for k in $SUM_KEYS client_inv; do SUM[$k]=0; done
}
tally() {
	local k
	for k in $SUM_KEYS; do
		SUM[$k]=$((SUM[$k] + $(val "$k")))
	done
	SUM[client_inv]=$((SUM[client_inv] + $(val remote_invalidations)))
}

# expect_moved WHAT WANT INV SIZE: the last run's counts are WANT
# ("read=.. write=.. reply=.. long=.."; with a Read or Write chunk, at
# least SIZE octets read or written), every call went in an inline
# Send or as a Long call, and INV replies came as Send With Invalidate
# ("calls": one per call).
expect_moved() {
	local what=$1 want=$2 inv=$3 size=$4 got ginv calls key=-
	case $want in
	*read=1*) key=read_bytes ;;
	*write=1*) key=write_bytes ;;
	esac
	got=$(moved)
	ginv=$(val remote_invalidations)
	calls=$(val calls)
	[ "$inv" = calls ] && inv=$calls
	if [ "$got" = "$want" ] && [ "$ginv" = "$inv" ] &&
	   { [ "$key" = - ] || [ "$(val "$key")" -ge "$size" ]; } &&
	   [ $(($(val inline_sends) + $(val long_calls))) -eq "$calls" ]; then
		ok "$what: $got, $(val inline_sends) inline Send(s) of $(val inline_bytes) octets,$([ "$key" = - ] || echo " $key=$(val "$key"),") $ginv Send With Invalidate"
	else
		bad "$what: $got, remote_invalidations=$ginv of $calls calls; expected $want, $inv invalidations$([ "$key" = - ] || echo ", $key >= $size")"
		show "$SIW_TMP/out"
	fi
}

# store_op WHAT REGEX ARGS...: one store-client run (sc ARGS), counted
# in the sums; it must end with status 0 and, REGEX not empty, print a
# line that matches it.  1 when it failed.
store_op() {
	local what=$1 re=$2
	shift 2
	sc "$@"
	tally
	if [ $rc -eq 0 ] && { [ -z "$re" ] || grep -Eq -- "$re" "$SIW_TMP/out"; }; then
		return 0
	fi
	bad "$what: status $rc${re:+, no line /$re/}"
	show "$SIW_TMP/out"
	return 1
}

# store_putget WAY WHERE PORT INV NAME SIZE PUT_WANT GET_WANT [OPTION...]:
# the file f<SIZE> put as NAME and got back into the file NAME, with
# store-client's OPTIONs, on WHERE (host: files in $SIW_TMP, compared at
# once; guest: in $GDIR, compared by guest_cmp); what each moved
# (expect_moved), the client seeing INV Send With Invalidate replies
# ("calls": every one; 0: the client in the guest, to whom libsiw
# reports none).
store_putget() {
	local way=$1 where=$2 port=$3 inv=$4 name=$5 s=$6 pw=$7 gw=$8 dir=$GDIR
	shift 8
	[ "$where" = host ] && dir=$SIW_TMP
	store_op "$way: put of $s octets" "" "$where" "$port" "$@" --stats put "$dir/f$s" "$name" ||
		return
	expect_moved "$way: put of $s octets" "$pw" "$inv" "$s"
	store_op "$way: get of $s octets" "" "$where" "$port" "$@" --stats get "$name" "$dir/$name" ||
		return
	expect_moved "$way: get of $s octets" "$gw" "$inv" "$s"
	[ "$where" = host ] || return 0
	if cmp -s "$dir/f$s" "$dir/$name"; then
		ok "$way: $s octets put and got back the same (cmp)"
	else
		bad "$way: $s octets put, get gave back other octets"
	fi
}

NONE="read=0 write=0 reply=0 long=0"

# store_pass WAY WHERE PORT INV: store_putget of each size, as o<size>.
store_pass() {
	local s pw gw
	for s in "${SIZES[@]}"; do
		pw=$NONE gw=$NONE
		[ "$s" -lt $PUT_CHUNK_MIN ] || pw="read=1 write=0 reply=0 long=0"
		[ "$s" -lt $DDP_MIN ] || gw="read=0 write=1 reply=0 long=0"
		store_putget "$1" "$2" "$3" "$4" "o$s" "$s" "$pw" "$gw"
	done
}

# store_ls WAY WHERE PORT NAME=SIZE...: ls lists exactly these objects.
store_ls() {
	local way=$1 where=$2 port=$3 want got
	shift 3
	want=$(printf '%s\n' "$@" | LC_ALL=C sort | tr '\n' ' ')
	store_op "$way: ls" "" "$where" "$port" --stats ls || return
	got=$(awk '/ UTC  / { print $NF "=" $1 }' "$SIW_TMP/out" | tr '\n' ' ')
	if [ "$got" = "$want" ]; then
		ok "$way: ls lists the $# objects by name with their sizes"
	else
		bad "$way: ls listed '$got', expected '$want'"
		show "$SIW_TMP/out"
	fi
}

# store_meta WAY WHERE PORT: ls, stat, rm, ls.
store_meta() {
	local way=$1 where=$2 port=$3 s objs=()
	for s in "${SIZES[@]}"; do objs+=("o$s=$s"); done
	store_ls "$way" "$where" "$port" "${objs[@]}"
	store_op "$way: stat o8388608" '^ +8388608  [-0-9]+ [:.0-9]+ UTC  o8388608$' \
		"$where" "$port" --stats stat o8388608 &&
		ok "$way: stat gives the size of the 8 MiB object"
	store_op "$way: rm o0" "" "$where" "$port" --stats rm o0 &&
		ok "$way: rm o0"
	store_ls "$way (after rm)" "$where" "$port" "${objs[@]:1}"
}

# store_no_pd WAY WHERE PORT [--no-private-data]: the 1024-octet
# fallback (RFC 8797 §5.1) with a server, or a client, that sends no
# private data: the files of 1023 and 1024 octets put as p1023 and
# p1024 and got back.  1023 octets are not DDP-eligible
# (STORE_DDP_MIN): the PUT is a Long call (the whole call by RDMA Read
# from a Position-Zero Read chunk), the GET's reply a Long reply in the
# Reply chunk; the PUT of 1024 reduces its data to a Read chunk.  The
# R bit of RFC 8797 §4.1 is not set without private data: no Send With
# Invalidate.
store_no_pd() {
	local way=$1 where=$2 port=$3
	shift 3
	store_putget "$way" "$where" "$port" 0 p1023 1023 \
		"read=1 write=0 reply=0 long=1" "read=0 write=0 reply=1 long=1" "$@"
	store_putget "$way" "$where" "$port" 0 p1024 1024 \
		"read=1 write=0 reply=0 long=0" "read=0 write=1 reply=0 long=0" "$@"
}

# guest_cmp WAY PREFIX SIZE...: in the guest, PREFIX<size> against
# f<size> (in $GDIR) for each size given.
guest_cmp() {
	local way=$1 pre=$2 s
	shift 2
	guest_run -t 30 "cd $GDIR && for s in $*; do if cmp -s f\$s $pre\$s; then echo same \$s; else echo differ \$s; fi; done" \
		> "$SIW_TMP/cmp" 2>&1
	for s in "$@"; do
		if grep -qx "same $s" "$SIW_TMP/cmp"; then
			ok "$way: $s octets put and got back the same (cmp in the guest)"
		else
			bad "$way: $s octets put, get gave back other octets"
			show "$SIW_TMP/cmp"
		fi
	done
}

# server_counts WAY PROG FILE KEY=VALUE...: the counts of PROG (a
# server) at its end, in FILE, are those given: what its clients did.
server_counts() {
	local way=$1 prog=$2 f=$3 kv got=""
	shift 3
	for kv in "$@"; do
		got+="${kv%%=*}=$(count "$prog" "${kv%%=*}" "$f") "
	done
	if [ "$got" = "$* " ]; then
		ok "$way: the server counted what its clients did: $*"
	else
		bad "$way: the server counted ${got% }; its clients $*"
		show "$f"
	fi
}

# store_counts WAY FILE INV: server_counts of the store's server against
# the sums of its clients', with INV replies sent as Send With
# Invalidate.
store_counts() {
	local k want=()
	for k in $SUM_KEYS; do want+=("$k=${SUM[$k]}"); done
	server_counts "$1" store-server "$2" "${want[@]}" "remote_invalidations=$3"
}

# ---- to-siw: the store's server in the guest, its clients on the host
way=to-siw
sum_reset
for s in "${SIZES[@]}"; do
	head -c "$s" /dev/urandom > "$SIW_TMP/f$s"
done
if job_start "$GRUN $GBIN/store-server -a $GUEST_ADDR -p $S --no-tcp --no-udp 2>&1" > "$SIW_TMP/start" 2>&1 &&
   guest_wait_listen "$S" -t 30 > "$SIW_TMP/listen" 2>&1; then
	SRV=$JOB
	ok "$way: store-server listens on siw0 ($GUEST_ADDR port $S)"
	store_pass "$way" host "$S" calls
	store_meta "$way" host "$S"
	store_no_pd "$way, the host's client --no-private-data" host "$S" --no-private-data
	guest_term "$SRV" store-server "$S" "$SIW_TMP/srv.out"
	st=$?
	if [ $st -eq 0 ] && grep -qx "store-server: ended by SIGTERM" "$SIW_TMP/srv.out"; then
		ok "$way: SIGTERM ends the server in the guest, status 0"
	else
		bad "$way: SIGTERM to the server in the guest: status $st"
		show "$SIW_TMP/srv.out"
	fi
	store_counts "$way" "$SIW_TMP/srv.out" "${SUM[client_inv]}"
else
	bad "$way: store-server did not start in the guest"
	show "$SIW_TMP/start" "$SIW_TMP/listen"
fi
siw_check_guest "$way store"

# ---- from-siw: the store's server on the host, its clients in the guest
way=from-siw
sum_reset
if ! guest_run -t 60 "rm -rf $GDIR && mkdir $GDIR && cd $GDIR && for s in ${SIZES[*]}; do head -c \$s /dev/urandom > f\$s || exit 1; done" \
	> "$SIW_TMP/gen" 2>&1; then
	bad "$way: the guest could not make its files"
	show "$SIW_TMP/gen"
elif host_listen store 300 "store-server: serving" "$server" -a 127.0.0.1 -p "$Q" --no-tcp --no-udp; then
	SRV=$HOST_PID
	ok "$way: store-server listens on the host ($(head -n 1 "$SIW_TMP/store.out"))"
	store_pass "$way" guest "$Q" 0
	guest_cmp "$way" o "${SIZES[@]}"
	# The host's own copies (uiwarp to uiwarp) against the guest's files.
	guest_run -t 30 "cd $GDIR && md5sum $(printf 'f%s ' "${SIZES[@]}")" > "$SIW_TMP/md5.guest" 2>&1
	for s in "${SIZES[@]}"; do
		sc host "$Q" get "o$s" "$SIW_TMP/h$s"
		h=$(md5sum < "$SIW_TMP/h$s" | cut -d' ' -f1)
		if [ $rc -eq 0 ] && grep -qx "$h  f$s" "$SIW_TMP/md5.guest"; then
			ok "$way: the object of $s octets the guest put is its file (MD5 on both sides)"
		else
			bad "$way: the object of $s octets the guest put differs from its file (status $rc, MD5 $h)"
			show "$SIW_TMP/out" "$SIW_TMP/md5.guest"
		fi
	done
	store_meta "$way" guest "$Q"
	kill -TERM "$SRV"
	host_wait "$SRV"
	st=$?
	if [ $st -eq 0 ] && grep -qx "store-server: ended by SIGTERM" "$SIW_TMP/store.err"; then
		ok "$way: SIGTERM ends the server on the host, status 0"
	else
		bad "$way: SIGTERM to the server on the host: status $st"
		show "$SIW_TMP/store.out" "$SIW_TMP/store.err"
	fi
	# The host's gets above are in the server's counts: 7 gets, each a
	# STAT then a GET, the Write chunks those of 1024 octets and more.
	n=0
	for s in "${SIZES[@]}"; do
		[ "$s" -lt $DDP_MIN ] || n=$((n + 1))
	done
	SUM[calls]=$((SUM[calls] + 2 * ${#SIZES[@]}))
	SUM[write_chunks]=$((SUM[write_chunks] + n))
	# libsiw hides them from the guest's clients (client_inv 0): every
	# reply was one.
	store_counts "$way" "$SIW_TMP/store.out" "${SUM[calls]}"
else
	bad "$way: store-server did not start on the host"
	show "$SIW_TMP/store.out" "$SIW_TMP/store.err"
fi
siw_check_guest "$way store"

# ---- from-siw: a host server without RFC 8797 private data
way="from-siw, the host's server --no-private-data"
sum_reset
if host_listen store-np 120 "store-server: serving" "$server" -a 127.0.0.1 -p "$QN" --no-tcp --no-udp --no-private-data; then
	SRV=$HOST_PID
	store_no_pd "$way" guest "$QN"
	guest_cmp "$way" p 1023 1024
	kill -TERM "$SRV"
	host_wait "$SRV"
	store_counts "$way" "$SIW_TMP/store-np.out" 0
else
	bad "$way: store-server did not start on the host"
	show "$SIW_TMP/store-np.out" "$SIW_TMP/store-np.err"
fi
siw_check_guest "$way"

# ------------------------------------------------------------ rpcping
# ping_check WAY FILE: the CSV of one client's runs (1 outstanding, 16
# on a CLIENT each, 16 sharing one): each made PING_N calls after
# PING_W warm-up calls a thread, and the transport counted both.  Adds
# the transport's counts to PING_SUM.
PING_RUNS="rdma,1,1 rdma,16,16 rdma,16,1"
ping_check() {
	local way=$1 f=$2 o c calls warm rest tcalls got
	got=$(grep '^rdma,' "$f" | cut -d, -f1-3 | tr '\n' ' ')
	if [ "$got" != "$PING_RUNS " ]; then
		bad "$way: uiwarp-rpcping ran '$got', expected '$PING_RUNS'"
		show "$f"
		return
	fi
	while IFS=, read -r _ o c calls warm _ rate _ _ med _ tcalls; do
		rest="$way: uiwarp-rpcping, $o outstanding on $c CLIENT(s)"
		if [ "$calls" = $PING_N ] && [ "$warm" = $((PING_W * o)) ] &&
		   [ "$tcalls" = $((PING_N + PING_W * o)) ]; then
			ok "$rest: $calls NULL calls, the transport counted $tcalls with the warm-up ($rate calls/s, median $med µs)"
		else
			bad "$rest: $calls calls, $warm warm-up, the transport counted '$tcalls'; expected $PING_N, $((PING_W * o)), $((PING_N + PING_W * o))"
		fi
		PING_SUM=$((PING_SUM + ${tcalls:-0}))
	done < <(grep '^rdma,' "$f")
}

PING_ARGS="-x rdma -n $PING_N -w $PING_W -o 1,16 --clients each,shared --csv"

way=to-siw
PING_SUM=0
if job_start "$GRUN $GBIN/uiwarp-rpcping -s -a $GUEST_ADDR -p $R --no-tcp --no-udp 2>&1" > "$SIW_TMP/start" 2>&1 &&
   guest_wait_listen "$R" -t 30 > "$SIW_TMP/listen" 2>&1; then
	SRV=$JOB
	# shellcheck disable=SC2086  # the options
	timeout -s KILL 120 "$ping" -c 127.0.0.1 -p "$R" $PING_ARGS > "$SIW_TMP/ping" 2>&1
	st=$?
	if [ $st -eq 0 ]; then
		ping_check "$way" "$SIW_TMP/ping"
	else
		bad "$way: uiwarp-rpcping -c on the host: status $st"
		show "$SIW_TMP/ping"
	fi
	guest_term "$SRV" uiwarp-rpcping "$R" "$SIW_TMP/ping-srv.out"
	st=$?
	if [ $st -eq 143 ]; then
		ok "$way: SIGTERM ends uiwarp-rpcping -s in the guest, status 143"
	else
		bad "$way: SIGTERM to uiwarp-rpcping -s in the guest: status $st"
		show "$SIW_TMP/ping-srv.out"
	fi
	server_counts "$way" uiwarp-rpcping "$SIW_TMP/ping-srv.out" "calls=$PING_SUM"
else
	bad "$way: uiwarp-rpcping -s did not start in the guest"
	show "$SIW_TMP/start" "$SIW_TMP/listen"
fi
siw_check_guest "$way rpcping"

way=from-siw
PING_SUM=0
if host_listen ping 300 "uiwarp-rpcping: serving" "$ping" -s -a 127.0.0.1 -p "$QP" --no-tcp --no-udp; then
	SRV=$HOST_PID
	guest_run -t 120 "$GRUN $GBIN/uiwarp-rpcping -c $GUEST_HOST_ADDR -p $QP $PING_ARGS" > "$SIW_TMP/ping" 2>&1
	st=$?
	if [ $st -eq 0 ]; then
		ping_check "$way" "$SIW_TMP/ping"
	else
		bad "$way: uiwarp-rpcping -c in the guest: status $st"
		show "$SIW_TMP/ping"
	fi
	kill -TERM "$SRV"
	host_wait "$SRV"
	st=$?
	if [ $st -eq 143 ]; then
		ok "$way: SIGTERM ends uiwarp-rpcping -s on the host, status 143"
	else
		bad "$way: SIGTERM to uiwarp-rpcping -s on the host: status $st"
		show "$SIW_TMP/ping.out" "$SIW_TMP/ping.err"
	fi
	server_counts "$way" uiwarp-rpcping "$SIW_TMP/ping.out" "calls=$PING_SUM"
else
	bad "$way: uiwarp-rpcping -s did not start on the host"
	show "$SIW_TMP/ping.out" "$SIW_TMP/ping.err"
fi
siw_check_guest "$way rpcping"

siw_finish
