#!/usr/bin/env bash
# uiwarp-nfsd on the host, mounted by the guest's Linux NFS client over
# RPC-over-RDMA on siw (xprtrdma), through QEMU's forwarding: the guest
# dials 10.0.2.100:20049 (NFS, RDMA) and :20048 (MOUNT, TCP), which lead
# to the server's ports on 127.0.0.1 (nfs_lib.sh).  No rpcbind anywhere:
# the mount names every port (guest_nfs_mount).
#
# - files of 1 B, 4 KiB, 1 MiB and 64 MiB copied in by the guest, with
#   their SHA-256 at the guest's source and in the host's directory, and
#   out again (after the guest drops its caches); a file made on the host
#   read in the guest;
# - mkdir, mv, ln -s, readlink, rm and ls in the guest, each seen on the
#   host;
# - dd with O_DIRECT at 4 KiB, 64 KiB and 1 MiB, written and read back;
# - a clean umount; at SIGUSR1 the server's usage line shows no
#   connection, no registration and nothing held;
# - the server killed (SIGKILL) in the middle of a 64 MiB copy and started
#   again with the same key and ports: the hard mount retries and the copy
#   ends with the right SHA-256;
# - the restarted server's counts at SIGTERM: the guest's WRITE data came
#   by RDMA Read (Read chunks), its READ data of the copy read back went
#   by RDMA Write (Write chunks), at least one per wsize / rsize;
# - a session of the Linux client (mount, a 1 MiB file in and out, a
#   listing, a symbolic link) captured on the host's lo and decoded by
#   tshark down to NFS procedures with no malformed frame
#   (tests/wire/nfs_decode.sh; kept as interop-nfs-server.pcapng);
# - the guest killed (QEMU stopped) in the middle of a copy: the server's
#   usage line comes back to zero connections, registrations and memory.
#
# usage: test_siw_nfs_server.sh <build-dir> <source-dir>
set -uo pipefail

build=${1:?usage: test_siw_nfs_server.sh <build-dir> <source-dir>}
src=${2:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
mkdir -p "$build"
build=$(cd "$build" && pwd)
src=$(cd "$src" && pwd)

# shellcheck source=nfs_lib.sh
source "$src/tests/interop/nfs_lib.sh"

nfs_program nfsd uiwarp-nfsd

SIZES=(1 4096 1048576 67108864)
MNT=/mnt/u
EXP=$SIW_TMP/export
mkdir -p "$EXP"

nfs_boot test_siw_nfs_server 0 0

# server_start NAME: uiwarp-nfsd on the ports the guest reaches.
# SERVER is the timeout(1) around it (host_wait's), NFSD its own pid,
# which the signals go to: timeout passes on neither SIGKILL nor SIGUSR1.
server_start() {
	host_listen "$1" 900 "exporting" "$nfsd" --port "$NFSD_RDMA_PORT" \
		--tcp-port "$NFSD_TCP_PORT" --mount-port "$NFSD_MOUNT_PORT" \
		--key-file "$SIW_TMP/key" --no-root-squash --stats "$EXP" || return 1
	SERVER=$HOST_PID
	NFSD=$(pgrep -P "$SERVER")
	[ -n "$NFSD" ]
}
# usage_line: the server's usage line after SIGUSR1 (its newest).
usage_line() {
	local n
	n=$(grep -c ': usage: ' "$SIW_TMP/$SERVER_NAME.err")
	kill -USR1 "$NFSD" 2> /dev/null || return 1
	for ((i = 0; i < 100; i++)); do
		[ "$(grep -c ': usage: ' "$SIW_TMP/$SERVER_NAME.err")" -gt "$n" ] && break
		sleep 0.1
	done
	grep ': usage: ' "$SIW_TMP/$SERVER_NAME.err" | tail -n 1
}
SERVER_NAME=srv1
if server_start "$SERVER_NAME"; then
	ok "uiwarp-nfsd: $(cat "$SIW_TMP/$SERVER_NAME.out")"
else
	bad "uiwarp-nfsd did not start"
	show "$SIW_TMP/$SERVER_NAME.out" "$SIW_TMP/$SERVER_NAME.err"
	siw_finish
fi

if guest_nfs_mount "$GUEST_HOST_ADDR:/" "$MNT" rdma &&
   grep -q "proto=rdma,port=$NFS_RDMA_PORT" "$SIW_TMP/mount.log"; then
	ok "the guest mounts $GUEST_HOST_ADDR:/ over RDMA: $(grep " $MNT " "$SIW_TMP/mount.log" | cut -d' ' -f4)"
else
	bad "the guest's mount of uiwarp-nfsd over RDMA"
	show "$SIW_TMP/mount.log" "$SIW_TMP/$SERVER_NAME.err"
	guest_dmesg_new | tail -n 20
	siw_finish
fi

field() { awk -v n="$1" '$1 == n { print $2 }' "$2"; }
for n in "${SIZES[@]}"; do
	guest_run -t 300 "set -e
		head -c $n /dev/urandom > /tmp/src
		echo src \$(sha256sum < /tmp/src | cut -d' ' -f1)
		cp /tmp/src $MNT/f.$n
		rm /tmp/src
		sync; echo 3 > /proc/sys/vm/drop_caches
		cp $MNT/f.$n /tmp/back
		echo back \$(sha256sum < /tmp/back | cut -d' ' -f1)
		rm /tmp/back" > "$SIW_TMP/f$n.out" 2>&1
	st=$?
	s_src=$(field src "$SIW_TMP/f$n.out")
	s_back=$(field back "$SIW_TMP/f$n.out")
	s_host=$(sha256sum < "$EXP/f.$n" 2> /dev/null | cut -d' ' -f1)
	if [ $st -eq 0 ] && [ ${#s_src} -eq 64 ] && [ "$s_src" = "$s_host" ] && [ "$s_src" = "$s_back" ]; then
		ok "$n octets in and out: the same SHA-256 in the guest, on the host and in the copy"
	else
		bad "$n octets: status $st, SHA-256 guest $s_src, host $s_host, copy $s_back"
		show "$SIW_TMP/f$n.out"
	fi
done
head -c 3000000 /dev/urandom > "$EXP/host.bin"
want=$(sha256sum < "$EXP/host.bin" | cut -d' ' -f1)
got=$(guest_run -t 120 "sha256sum < $MNT/host.bin" 2>&1 | cut -d' ' -f1)
if [ "$got" = "$want" ]; then
	ok "a file made on the host read in the guest with its SHA-256"
else
	bad "the host's file read in the guest: $got, not $want"
fi
siw_check_guest files

# ------------------------------------------------------------ namespace
guest_run -t 60 "set -e; cd $MNT
	mkdir d
	echo hello > d/a
	mv d/a d/b
	ln -s d/b link
	readlink link
	cat link
	rm f.1
	ls" > "$SIW_TMP/ns.out" 2>&1
st=$?
if [ $st -eq 0 ] && [ -d "$EXP/d" ] && [ "$(cat "$EXP/d/b" 2> /dev/null)" = hello ] &&
   [ ! -e "$EXP/d/a" ] && [ "$(readlink "$EXP/link")" = d/b ] && [ ! -e "$EXP/f.1" ] &&
   grep -qx d/b "$SIW_TMP/ns.out" && grep -qx link "$SIW_TMP/ns.out" &&
   grep -qx f.4096 "$SIW_TMP/ns.out"; then
	ok "mkdir, mv, ln -s, readlink, rm and ls in the guest, each as the host sees it"
else
	bad "namespace operations (status $st)"
	show "$SIW_TMP/ns.out"
	ls -la "$EXP" "$EXP/d" 2>&1 | sed 's/^/  | /'
fi

# ------------------------------------------------------------ direct I/O
for bs in 4096 65536 1048576; do
	count=$((4194304 / bs))
	[ "$count" -gt 256 ] && count=256
	guest_run -t 120 "set -e
		head -c $((bs * count)) /dev/urandom > /tmp/src
		dd if=/tmp/src of=$MNT/d.$bs bs=$bs count=$count oflag=direct 2>&1 | tail -n 1
		dd if=$MNT/d.$bs of=/tmp/back bs=$bs count=$count iflag=direct 2>&1 | tail -n 1
		sha256sum < /tmp/src | cut -d' ' -f1
		sha256sum < /tmp/back | cut -d' ' -f1
		rm /tmp/src /tmp/back" > "$SIW_TMP/dd$bs.out" 2>&1
	st=$?
	a=$(tail -n 2 "$SIW_TMP/dd$bs.out" | sed -n 1p)
	b=$(tail -n 1 "$SIW_TMP/dd$bs.out")
	h=$(sha256sum < "$EXP/d.$bs" 2> /dev/null | cut -d' ' -f1)
	if [ $st -eq 0 ] && [ "$a" = "$b" ] && [ "$a" = "$h" ]; then
		ok "dd direct I/O bs=$bs count=$count: the same SHA-256 in the guest, read back and on the host"
	else
		bad "dd direct I/O bs=$bs: status $st, $a / $b / host $h"
		show "$SIW_TMP/dd$bs.out"
	fi
done

# ------------------------------------------- the server killed mid-copy
guest_run -t 60 "head -c 67108864 /dev/urandom > /tmp/big && sha256sum < /tmp/big | cut -d' ' -f1" \
	> "$SIW_TMP/big.sum" 2>&1
guest_bg cp-big "cp /tmp/big $MNT/big2 && sync" > /dev/null 2>&1
# Kill it once part of the file has arrived (at most 60 s of waiting).
for ((i = 0; i < 600; i++)); do
	[ "$(stat -c %s "$EXP/big2" 2> /dev/null || echo 0)" -gt 4194304 ] && break
	sleep 0.1
done
part=$(stat -c %s "$EXP/big2" 2> /dev/null || echo 0)
kill -KILL "$NFSD"
host_wait "$SERVER" 2> /dev/null
SERVER_NAME=srv2
if server_start "$SERVER_NAME" &&
   guest_bg_wait cp-big -t 240 > "$SIW_TMP/cp-big.out" 2>&1 &&
   [ "$(sha256sum < "$EXP/big2" | cut -d' ' -f1)" = "$(cat "$SIW_TMP/big.sum")" ]; then
	ok "server killed after $part of 67108864 octets and started again: the copy ended, SHA-256 right on the host"
else
	bad "the copy across a server restart (killed at $part octets)"
	show "$SIW_TMP/cp-big.out" "$SIW_TMP/srv2.out" "$SIW_TMP/srv2.err"
fi
# Read back from the restarted server, whose counts are checked at the
# end (the first one's died with it).
got=$(guest_run -t 120 "rm -f /tmp/big; echo 3 > /proc/sys/vm/drop_caches; sha256sum < $MNT/big2" 2>&1 | cut -d' ' -f1)
if [ "$got" = "$(cat "$SIW_TMP/big.sum")" ]; then
	ok "the restarted server's copy read back in the guest with its SHA-256"
else
	bad "the copy read back from the restarted server: $got"
fi

if guest_nfs_umount "$MNT"; then
	ok "umount $MNT"
else
	bad "umount $MNT"
	show "$SIW_TMP/umount.log"
fi
line=$(usage_line)
if [[ $line == *"rdma_conns=0 mrs=0 held=0"* ]]; then
	ok "after umount: $line"
else
	bad "after umount the server still holds something: $line"
fi

# ------------------------------------------------- a captured session
# The Linux client's session with uiwarp-nfsd, captured on the host's lo
# (QEMU's connections to the server's ports cross it) from the mount on:
# a 1 MiB file copied in and, after a drop of the caches, out; a listing;
# a symbolic link made and read.  tshark decodes it down to NFS
# procedures with no malformed frame (tests/wire/nfs_decode.sh).  Again
# (3 times at most) when TCP lost segments on lo or dumpcap dropped some.
CAPMNT=/mnt/cap
guest_run -t 60 "head -c 1048576 /dev/urandom > /tmp/cap.bin" > /dev/null 2>&1
for try in 1 2 3; do
	guest_run -t 30 "rm -f $MNT/cap.bin $MNT/cap.link" > /dev/null 2>&1
	rm -f "$EXP/cap.bin" "$EXP/cap.link"
	nfs_capture_start "$SIW_TMP/server.pcapng" "$NFSD_RDMA_PORT" "$NFSD_MOUNT_PORT" ||
		{ bad "dumpcap did not start: $(cat "$SIW_TMP/dumpcap.out")"; break; }
	guest_nfs_mount "$GUEST_HOST_ADDR:/" "$CAPMNT" rdma > /dev/null 2>&1 &&
		guest_run -t 120 "set -e; cp /tmp/cap.bin $CAPMNT/cap.bin; sync
			echo 3 > /proc/sys/vm/drop_caches
			cmp /tmp/cap.bin $CAPMNT/cap.bin
			ls $CAPMNT > /dev/null
			ln -s cap.bin $CAPMNT/cap.link
			echo 3 > /proc/sys/vm/drop_caches
			readlink $CAPMNT/cap.link" > "$SIW_TMP/cap.out" 2>&1 &&
		guest_nfs_umount "$CAPMNT"
	st=$?
	nfs_capture_stop
	cst=$?
	[ $cst -eq 75 ] && continue
	nfs_capture_decode "$SIW_TMP/server.pcapng" --noent any \
		--procs "FSINFO LOOKUP CREATE WRITE READ SYMLINK READLINK" \
		--read 1048576 --write 1048576 --read-lists 1 --write-lists 2
	dst=$?
	[ $dst -eq 75 ] && continue
	break
done
cp "$SIW_TMP/server.pcapng" "$build/interop-nfs-server.pcapng" 2> /dev/null
if [ $st -eq 0 ] && [ $cst -eq 0 ] && [ $dst -eq 0 ]; then
	ok "tshark decodes the Linux client's captured session (try $try) down to NFS procedures, no malformed frame: $(grep -E '^[0-9]+ calls' "$SIW_TMP/decode.out"); $(grep '^READ data' "$SIW_TMP/decode.out")"
else
	bad "the captured session: guest $st, capture $cst, decoding $dst (try $try)"
	show "$SIW_TMP/cap.out" "$SIW_TMP/decode.out"
fi

# --------------------------------------------- the client killed mid-copy
guest_nfs_mount "$GUEST_HOST_ADDR:/" "$MNT" rdma > /dev/null 2>&1
guest_bg cp-die "head -c 67108864 /dev/zero > $MNT/big3" > /dev/null 2>&1
for ((i = 0; i < 600; i++)); do
	[ "$(stat -c %s "$EXP/big3" 2> /dev/null || echo 0)" -gt 1048576 ] && break
	sleep 0.1
done
guest_stop > /dev/null 2>&1
for ((i = 0; i < 100; i++)); do
	line=$(usage_line)
	[[ $line == *"rdma_conns=0 mrs=0 held=0"* ]] && break
done
if [[ $line == *"rdma_conns=0 mrs=0 held=0"* ]]; then
	ok "the guest stopped mid-copy: $line"
else
	bad "the guest stopped mid-copy, the server still holds: $line"
fi

kill -TERM "$NFSD"
host_wait "$SERVER"
st=$?
cp "$SIW_TMP/srv2.out" "$SIW_TMP/stats.out"
rc=$(grep -o 'read_chunks=[0-9]*' "$SIW_TMP/stats.out" | cut -d= -f2 | awk '{ s += $1 } END { print s + 0 }')
wc=$(grep -o 'write_chunks=[0-9]*' "$SIW_TMP/stats.out" | cut -d= -f2 | awk '{ s += $1 } END { print s + 0 }')
rsize=$(grep -o 'rsize=[0-9]*' "$SIW_TMP/mount.log" | cut -d= -f2)
wsize=$(grep -o 'wsize=[0-9]*' "$SIW_TMP/mount.log" | cut -d= -f2)
min_r=$((67108864 / ${wsize:-1048576}))
min_w=$((67108864 / ${rsize:-1048576}))
if [ $st -eq 0 ] && [ "$rc" -ge "$min_r" ] && [ "$wc" -ge "$min_w" ]; then
	ok "server counts: $rc Read chunks (WRITE data by RDMA Read), $wc Write chunks (READ data by RDMA Write)"
else
	bad "server status $st, $rc Read chunks and $wc Write chunks (64 MiB each way: at least $min_r and $min_w)"
	show "$SIW_TMP/stats.out"
fi
siw_finish
