#!/usr/bin/env bash
# Linux NFS over RPC-over-RDMA on siw, both ends in the guest: knfsd
# (svcrdma) serving a tmpfs, mounted by the same guest's NFS client
# (xprtrdma) over siw loopback.  What the NFS tests (nfs_lib.sh) stand
# on, proven with nothing of uiwarp's:
#
# - knfsd listens on rdma 20049 and tcp 2049 (portlist), NFSv3 only;
# - from the host, through the forwarded ports, rpc.mountd answers MOUNT
#   v3 over TCP (NULL, and EXPORT lists the export) and nfsd answers an
#   NFSv3 NULL over TCP (rpc_probe.py);
# - the guest mounts 10.0.2.15:/srv/nfs over RDMA (/proc/mounts says
#   proto=rdma); files of 1 B, 4 KiB, 1 MiB and 64 MiB are copied in and
#   out, each with its SHA-256 at the client and at the server (the
#   export itself) and after a drop of the client's caches; the time of
#   each copy is printed;
# - dd with O_DIRECT at 4 KiB and 1 MiB, written and read back;
# - the RDMA counters: svcrdma's (rdma_stat_read: RDMA Reads pulling
#   WRITE data; rdma_stat_write: RDMA Writes pushing READ data) and the
#   client transport's Read and Write chunks grow at least by one per
#   rsize/wsize of what the 1 MiB and 64 MiB copies moved; nfsstat at
#   the server counts at least those READs and WRITEs;
# - the guest mounts 10.0.2.100:/srv/nfs, which QEMU leads out to the
#   host's loopback and back into the guest's knfsd, with port 111 of
#   10.0.2.100 refusing: guest_nfs_mount needs no portmapper (the way the
#   guest will mount a server on the host); and over TCP once;
# - each mount unmounts cleanly, knfsd stops.
#
# usage: test_siw_nfs_guest.sh <build-dir> <source-dir>
set -uo pipefail

build=${1:?usage: test_siw_nfs_guest.sh <build-dir> <source-dir>}
src=${2:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
mkdir -p "$build"
build=$(cd "$build" && pwd)
src=$(cd "$src" && pwd)

# shellcheck source=nfs_lib.sh
source "$src/tests/interop/nfs_lib.sh"

SIZES=(1 4096 1048576 67108864)
MNT=/mnt/nfs

nfs_boot test_siw_nfs_guest 0 0

# ------------------------------------------------------------- knfsd
if knfsd_start; then
	ok "knfsd: NFSv3 on rdma $NFS_RDMA_PORT and tcp $NFS_TCP_PORT, mountd on $NFS_MOUNT_PORT ($(grep -c . "$SIW_TMP/knfsd.log") lines of portlist, versions, etab)"
else
	bad "knfsd did not start"
	show "$SIW_TMP/knfsd.log"
	siw_finish
fi
siw_check_guest knfsd

# ------------------------------------------------------- from the host
if nfs_host_null "$KNFSD_MOUNT_PORT" 100005 3 > "$SIW_TMP/null.out" 2>&1; then
	ok "host: MOUNT v3 NULL over TCP to 127.0.0.1:$KNFSD_MOUNT_PORT (rpc.mountd in the guest) answered"
else
	bad "host: MOUNT v3 NULL over TCP to rpc.mountd"
	show "$SIW_TMP/null.out"
fi
if nfs_host_exports "$KNFSD_MOUNT_PORT" > "$SIW_TMP/exports.out" 2>&1 &&
   grep -q "^$NFS_EXPORT " "$SIW_TMP/exports.out"; then
	ok "host: MOUNT v3 EXPORT lists $(tr '\n' ' ' < "$SIW_TMP/exports.out")"
else
	bad "host: MOUNT v3 EXPORT does not list $NFS_EXPORT"
	show "$SIW_TMP/exports.out"
fi
if nfs_host_null "$KNFSD_TCP_PORT" 100003 3 > "$SIW_TMP/null.out" 2>&1; then
	ok "host: NFS v3 NULL over TCP to 127.0.0.1:$KNFSD_TCP_PORT (knfsd) answered"
else
	bad "host: NFS v3 NULL over TCP to knfsd"
	show "$SIW_TMP/null.out"
fi

# ------------------------------------------------- mount over siw loopback
if guest_nfs_mount "$GUEST_ADDR:$NFS_EXPORT" "$MNT" rdma &&
   grep -q "proto=rdma,port=$NFS_RDMA_PORT" "$SIW_TMP/mount.log"; then
	ok "mount $GUEST_ADDR:$NFS_EXPORT on $MNT over RDMA: $(grep " $MNT " "$SIW_TMP/mount.log" | cut -d' ' -f4)"
else
	bad "mount $GUEST_ADDR:$NFS_EXPORT over RDMA"
	show "$SIW_TMP/mount.log"
	guest_dmesg_new | tail -n 20
	siw_finish
fi
rsize=$(grep -o 'rsize=[0-9]*' "$SIW_TMP/mount.log" | cut -d= -f2)
wsize=$(grep -o 'wsize=[0-9]*' "$SIW_TMP/mount.log" | cut -d= -f2)

# stats_snapshot NAME: the server's and the client's counters now.
stats_snapshot() {
	knfsd_rdma_stats > "$SIW_TMP/$1.srv" 2>&1
	guest_nfs_xprt "$MNT" > "$SIW_TMP/$1.cli" 2>&1
	nfs_ops server > "$SIW_TMP/$1.ops" 2>&1
}
# delta A B FILE-SUFFIX NAME: how much NAME grew from snapshot A to B.
delta() {
	echo $(($(nfs_stat "$SIW_TMP/$2.$3" "$4") - $(nfs_stat "$SIW_TMP/$1.$3" "$4")))
}
stats_snapshot s0

# ------------------------------------------------------- files in and out
# One guest command per size: makes the file, copies it in (timed), sums
# it at the client's source and in the export, drops the caches, copies
# it out (timed), sums the copy.  Lines: "src SUM", "srv SUM", "back SUM",
# "put SECONDS", "get SECONDS".
declare -A PUT_T GET_T
field() { awk -v n="$1" '$1 == n { print $2 }' "$2"; }
for n in "${SIZES[@]}"; do
	stats_snapshot "a$n"
	guest_run -t 300 "set -e
		t() { cut -d' ' -f1 /proc/uptime; }
		head -c $n /dev/urandom > /tmp/src
		echo src \$(sha256sum < /tmp/src | cut -d' ' -f1)
		a=\$(t); cp /tmp/src $MNT/f.$n; b=\$(t)
		echo put \$(awk -v a=\$a -v b=\$b 'BEGIN { print b - a }')
		echo srv \$(sha256sum < $NFS_EXPORT/f.$n | cut -d' ' -f1)
		rm /tmp/src
		sync; echo 3 > /proc/sys/vm/drop_caches
		a=\$(t); cp $MNT/f.$n /tmp/back; b=\$(t)
		echo get \$(awk -v a=\$a -v b=\$b 'BEGIN { print b - a }')
		echo back \$(sha256sum < /tmp/back | cut -d' ' -f1)
		rm /tmp/back" > "$SIW_TMP/f$n.out" 2>&1
	st=$?
	stats_snapshot "b$n"
	s_src=$(field src "$SIW_TMP/f$n.out")
	s_srv=$(field srv "$SIW_TMP/f$n.out")
	s_back=$(field back "$SIW_TMP/f$n.out")
	PUT_T[$n]=$(field put "$SIW_TMP/f$n.out")
	GET_T[$n]=$(field get "$SIW_TMP/f$n.out")
	if [ $st -eq 0 ] && [ ${#s_src} -eq 64 ] && [ "$s_src" = "$s_srv" ] && [ "$s_src" = "$s_back" ]; then
		ok "$n octets: in (${PUT_T[$n]}s) and out (${GET_T[$n]}s), SHA-256 $(echo "$s_src" | cut -c1-16)... at the source, in the export and in the copy"
	else
		bad "$n octets: status $st, SHA-256 source $s_src, export $s_srv, copy $s_back"
		show "$SIW_TMP/f$n.out"
	fi
	# What must have moved by RDMA: each WRITE of the copy in pulls its
	# data with RDMA Reads, each READ of the copy out pushes it with an
	# RDMA Write; at least one per wsize / rsize of the file.  (Below
	# the 4096-octet inline threshold the client sends its data inline.)
	if [ "$n" -ge 1048576 ]; then
		w=$(((n + wsize - 1) / wsize))
		r=$(((n + rsize - 1) / rsize))
		d_read=$(delta "a$n" "b$n" srv read)
		d_write=$(delta "a$n" "b$n" srv write)
		c_read=$(delta "a$n" "b$n" cli read_chunks)
		c_write=$(delta "a$n" "b$n" cli write_chunks)
		o_write=$(delta "a$n" "b$n" ops write)
		o_read=$(delta "a$n" "b$n" ops read)
		if [ "$d_read" -ge "$w" ] && [ "$d_write" -ge "$r" ] &&
		   [ "$c_read" -ge "$w" ] && [ "$c_write" -ge "$r" ] &&
		   [ "$o_write" -ge "$w" ] && [ "$o_read" -ge "$r" ]; then
			ok "$n octets by RDMA: svcrdma $d_read RDMA Reads and $d_write RDMA Writes, the client $c_read Read and $c_write Write chunks, nfsstat -s $o_write WRITEs and $o_read READs (at least $w and $r)"
		else
			bad "$n octets: svcrdma $d_read RDMA Reads and $d_write RDMA Writes, client $c_read Read and $c_write Write chunks, nfsstat -s $o_write WRITEs and $o_read READs; expected at least $w (wsize $wsize) and $r (rsize $rsize)"
			show "$SIW_TMP/b$n.srv" "$SIW_TMP/b$n.cli" "$SIW_TMP/b$n.ops"
		fi
	fi
done
siw_check_guest files

# ------------------------------------------------------------ direct I/O
for bs in 4096 1048576; do
	count=$((bs == 4096 ? 256 : 8))
	guest_run -t 120 "set -e
		head -c $((bs * count)) /dev/urandom > /tmp/src
		dd if=/tmp/src of=$MNT/d.$bs bs=$bs count=$count oflag=direct 2>&1 | tail -n 1
		dd if=$MNT/d.$bs of=/tmp/back bs=$bs count=$count iflag=direct 2>&1 | tail -n 1
		sha256sum /tmp/src /tmp/back $NFS_EXPORT/d.$bs | cut -d' ' -f1 | uniq | wc -l
		rm /tmp/src /tmp/back $MNT/d.$bs" > "$SIW_TMP/dd$bs.out" 2>&1
	st=$?
	if [ $st -eq 0 ] && [ "$(tail -n 1 "$SIW_TMP/dd$bs.out")" = 1 ]; then
		ok "dd oflag=direct and iflag=direct, bs=$bs count=$count: the same SHA-256 at the source, in the export and read back"
	else
		bad "dd direct I/O bs=$bs: status $st"
		show "$SIW_TMP/dd$bs.out"
	fi
done

# -------------------------------------------- the way to a host's server
# 10.0.2.100 is the host's loopback; 20049, 2049 and 20048 there lead
# (guestfwd, socat on the host, then hostfwd) back to this guest's knfsd.
# Nothing answers on its port 111.
guest_run -t 20 "nc -w 5 $GUEST_HOST_ADDR 111 < /dev/null" > "$SIW_TMP/nc111.out" 2>&1
if [ $? -ne 0 ]; then
	ok "no portmapper at $GUEST_HOST_ADDR:111 ($(head -n 1 "$SIW_TMP/nc111.out"))"
else
	bad "something answers at $GUEST_HOST_ADDR:111: the next mount proves nothing about rpcbind"
fi
if nfs_loop_to_knfsd; then
	ok "host: socat from the host server's ports $NFSD_RDMA_PORT, $NFSD_TCP_PORT, $NFSD_MOUNT_PORT to knfsd's"
else
	bad "host: socat to knfsd did not start"
	show "$SIW_TMP"/loop*.out
fi
for proto in rdma tcp; do
	m=/mnt/h$proto
	if guest_nfs_mount "$GUEST_HOST_ADDR:$NFS_EXPORT" "$m" "$proto" &&
	   guest_run -t 120 "set -e; sha256sum < $m/f.1048576 | cut -d' ' -f1
		sha256sum < $NFS_EXPORT/f.1048576 | cut -d' ' -f1
		grep ' $m ' /proc/mounts | grep -o 'proto=[a-z]*'" > "$SIW_TMP/h$proto.out" 2>&1 &&
	   [ "$(sed -n 1p "$SIW_TMP/h$proto.out")" = "$(sed -n 2p "$SIW_TMP/h$proto.out")" ] &&
	   [ "$(sed -n 3p "$SIW_TMP/h$proto.out")" = "proto=$proto" ] &&
	   guest_nfs_umount "$m"; then
		ok "mount $GUEST_HOST_ADDR:$NFS_EXPORT over $proto (through the host, no portmapper), 1 MiB read back with its SHA-256, unmounted"
	else
		bad "mount $GUEST_HOST_ADDR:$NFS_EXPORT over $proto through the host"
		show "$SIW_TMP/mount.log" "$SIW_TMP/h$proto.out" "$SIW_TMP/umount.log"
	fi
done

# --------------------------------------------------------------- the end
if guest_nfs_umount "$MNT"; then
	ok "umount $MNT"
else
	bad "umount $MNT"
	show "$SIW_TMP/umount.log"
fi
if knfsd_stop && [ "$(tail -n 1 "$SIW_TMP/knfsd-stop.log")" = 0 ]; then
	ok "knfsd stopped (0 threads)"
else
	bad "knfsd did not stop"
	show "$SIW_TMP/knfsd-stop.log"
fi
siw_check_guest end
echo "# 64 MiB over RDMA on siw loopback under $(grep -o '"accel": "[a-z]*"' "$GUEST_RUN/config.json" | cut -d'"' -f4): in ${PUT_T[67108864]:-?}s, out ${GET_T[67108864]:-?}s"
siw_finish
