#!/usr/bin/env bash
# uiwarp-nfs on the host against knfsd in the guest (svcrdma on siw),
# through the forwarded ports: MOUNT over TCP to rpc.mountd, NFSv3 over
# RPC-over-RDMA to knfsd's rdma listener (nfs_lib.sh).
#
# - WRITE and READ of files of 1 B, 4 KiB, 1 MiB and 64 MiB: each put
#   with its SHA-256 checked in the export (in the guest), a GETATTR
#   (stat) after it giving the size, and got back into a file equal to
#   the original (cmp); the tool's counts show the data of the 1 MiB and
#   64 MiB files moved by RDMA Read (Read chunks) on put and by RDMA
#   Write (Write chunks) on get, every octet;
# - READDIRPLUS of a directory of 2000 entries (Reply chunks), each name
#   listed once;
# - READLINK of a link made in the guest; mkdir, mv and rm by the tool,
#   each seen in the export, with a GETATTR after each;
# - errors as the NFS errors they are: NFS3ERR_NOENT for a missing
#   file, NFS3ERR_ACCES for a file of mode 0600 read as another uid,
#   NFS3ERR_STALE for the handle of a file removed in the guest;
# - knfsd's side: nfsstat -s counts the READs and WRITEs, svcrdma's
#   counters the RDMA Reads and Writes;
# - a session captured on the host's lo decoded by tshark down to NFS
#   procedures with no malformed frame (tests/wire/nfs_decode.sh; the
#   capture is kept as interop-nfs-client.pcapng in the build dir);
# - knfsd's threads stopped (rpc.nfsd 0) in the middle of a 64 MiB get:
#   the tool ends with an error within its timeout, no hang (a transport
#   error, or NFS3ERR_JUKEBOX after waiting it out).
#
# usage: test_siw_nfs_client.sh <build-dir> <source-dir>
set -uo pipefail

build=${1:?usage: test_siw_nfs_client.sh <build-dir> <source-dir>}
src=${2:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
mkdir -p "$build"
build=$(cd "$build" && pwd)
src=$(cd "$src" && pwd)

# shellcheck source=nfs_lib.sh
source "$src/tests/interop/nfs_lib.sh"

nfs_program nfs uiwarp-nfs

SIZES=(1 4096 1048576 67108864)
NLIST=2000
H=$SIW_TMP/host
mkdir -p "$H"

nfs_boot test_siw_nfs_client 0 0
if knfsd_start; then
	ok "knfsd: NFSv3 on rdma $NFS_RDMA_PORT, mountd on $NFS_MOUNT_PORT"
else
	bad "knfsd did not start"
	show "$SIW_TMP/knfsd.log"
	siw_finish
fi

# un [OPTIONS] CMD ARGS...: uiwarp-nfs against knfsd over RDMA
un() {
	local o=()
	while [ $# -gt 0 ] && [ "${1#-}" != "$1" ]; do
		o+=("$1")
		shift
	done
	timeout -s TERM 300 "$nfs" "${o[@]}" -T 60 -p "$KNFSD_RDMA_PORT" \
		-m "$KNFSD_MOUNT_PORT" "127.0.0.1:$NFS_EXPORT" "$@"
}
stat_of() { sed -n "s/.* $1=\([0-9]*\).*/\1/p" "$2" | tail -n 1; }
size_of() { sed -n 's/^size=//p' "$1"; }

guest_run -t 20 "nfsstat -s -3 -l | awk '\$1 == \"nfs\" { sub(\":\", \"\", \$4); print \$4, \$5 }'" > "$SIW_TMP/ops0" 2>&1
knfsd_rdma_stats > "$SIW_TMP/rdma0" 2>&1

# ------------------------------------------------------- WRITE and READ
for n in "${SIZES[@]}"; do
	head -c "$n" /dev/urandom > "$H/f.$n"
	want=$(sha256sum < "$H/f.$n" | cut -d' ' -f1)
	un --stats put "$H/f.$n" "f.$n" > "$SIW_TMP/put$n.out" 2> "$SIW_TMP/put$n.err"
	st_put=$?
	srv=$(guest_run -t 120 "sha256sum < $NFS_EXPORT/f.$n" 2>&1 | cut -d' ' -f1)
	un stat "f.$n" > "$SIW_TMP/stat$n.out" 2>&1
	un --stats get "f.$n" "$H/g.$n" > "$SIW_TMP/get$n.out" 2> "$SIW_TMP/get$n.err"
	st_get=$?
	if [ $st_put -eq 0 ] && [ $st_get -eq 0 ] && [ "$srv" = "$want" ] &&
	   [ "$(size_of "$SIW_TMP/stat$n.out")" = "$n" ] && cmp -s "$H/f.$n" "$H/g.$n"; then
		ok "$n octets: put (SHA-256 in the export $(echo "$want" | cut -c1-16)...), GETATTR size $n, get equal (cmp)"
	else
		bad "$n octets: put $st_put, get $st_get, export $srv, want $want, stat size $(size_of "$SIW_TMP/stat$n.out")"
		show "$SIW_TMP/put$n.err" "$SIW_TMP/get$n.err" "$SIW_TMP/stat$n.out"
	fi
	if [ "$n" -ge 1048576 ]; then
		rb=$(stat_of read_bytes "$SIW_TMP/put$n.err")
		wb=$(stat_of write_bytes "$SIW_TMP/get$n.err")
		rc=$(stat_of reply_chunks "$SIW_TMP/get$n.err")
		if [ "${rb:-0}" -eq "$n" ] && [ "${wb:-0}" -eq "$n" ] && [ "${rc:-1}" -eq 0 ]; then
			ok "$n octets by DDP: put $rb octets by RDMA Read, get $wb by RDMA Write, no Reply chunk"
		else
			bad "$n octets: put moved $rb octets by RDMA Read, get $wb by RDMA Write, $rc Reply chunks"
			show "$SIW_TMP/put$n.err" "$SIW_TMP/get$n.err"
		fi
	fi
	rm -f "$H/g.$n"
done
siw_check_guest files

# ---------------------------------------------------- READDIRPLUS, READLINK
guest_run -t 120 "set -e; mkdir -p $NFS_EXPORT/many; cd $NFS_EXPORT/many
	i=0; while [ \$i -lt $NLIST ]; do : > entry-\$i; i=\$((i + 1)); done
	ln -s some/where/else $NFS_EXPORT/lnk" > "$SIW_TMP/many.out" 2>&1 ||
	{ bad "the guest could not make the directory"; show "$SIW_TMP/many.out"; }
un --stats ls many > "$SIW_TMP/ls.out" 2> "$SIW_TMP/ls.err"
st=$?
if [ $st -eq 0 ] && [ "$(sort -u "$SIW_TMP/ls.out" | wc -l)" -eq "$NLIST" ] &&
   [ "$(wc -l < "$SIW_TMP/ls.out")" -eq "$NLIST" ] &&
   [ "$(stat_of reply_chunks "$SIW_TMP/ls.err")" -gt 0 ]; then
	ok "READDIRPLUS: $NLIST entries, each once, $(stat_of reply_chunks "$SIW_TMP/ls.err") replies by Reply chunk"
else
	bad "ls of $NLIST entries: status $st, $(wc -l < "$SIW_TMP/ls.out") lines"
	show "$SIW_TMP/ls.err"
fi
if [ "$(un readlink lnk 2>&1)" = some/where/else ]; then
	ok "READLINK: some/where/else"
else
	bad "READLINK of lnk: $(un readlink lnk 2>&1)"
fi

# ----------------------------------------------------- mkdir, mv, rm
un mkdir newdir && un mv f.4096 newdir/moved && un rm f.1 &&
	un stat newdir/moved > "$SIW_TMP/moved.out" 2>&1
st=$?
guest_run -t 30 "test -d $NFS_EXPORT/newdir && test -f $NFS_EXPORT/newdir/moved &&
	! test -e $NFS_EXPORT/f.4096 && ! test -e $NFS_EXPORT/f.1" > "$SIW_TMP/ns.out" 2>&1
st_guest=$?
if [ $st -eq 0 ] && [ $st_guest -eq 0 ] && [ "$(size_of "$SIW_TMP/moved.out")" = 4096 ]; then
	ok "mkdir, mv and rm by the tool as the export shows them, GETATTR of the moved file 4096 octets"
else
	bad "mkdir, mv, rm: status $st"
	show "$SIW_TMP/ns.out" "$SIW_TMP/moved.out"
fi

# ------------------------------------------------------------- errors
out=$(un stat not-there 2>&1)
st=$?
if [ $st -eq 1 ] && grep -q 'NFS3ERR_NOENT' <<<"$out"; then
	ok "a missing file: exit 1, $out"
else
	bad "a missing file: exit $st, $out"
fi
guest_run -t 30 "echo secret > $NFS_EXPORT/secret && chmod 600 $NFS_EXPORT/secret" > /dev/null 2>&1
out=$(un --uid=1000 --gid=1000 get secret - 2>&1)
st=$?
if [ $st -eq 1 ] && grep -q 'NFS3ERR_ACCES' <<<"$out"; then
	ok "a file of mode 0600 read as uid 1000: exit 1, $out"
else
	bad "a file of mode 0600 read as uid 1000: exit $st, $out"
fi

# A handle kept from before the file was removed (uiwarp-nfs stat
# prints it; a path "@HEX" starts from it): knfsd answers NFS3ERR_STALE
guest_run -t 30 "echo doomed > $NFS_EXPORT/doomed" > /dev/null 2>&1
h=$(un stat doomed 2> /dev/null | sed -n 's/^handle=//p')
guest_run -t 30 "rm $NFS_EXPORT/doomed" > /dev/null 2>&1
out=$(un stat "$h" 2>&1)
st=$?
if [ -n "$h" ] && [ $st -eq 1 ] && grep -q 'NFS3ERR_STALE' <<<"$out"; then
	ok "the handle of a file removed in the guest: exit 1, NFS3ERR_STALE"
else
	bad "the handle ($h) of a file removed in the guest: exit $st, $out"
fi

# ------------------------------------------------------ knfsd's side
guest_run -t 20 "nfsstat -s -3 -l | awk '\$1 == \"nfs\" { sub(\":\", \"\", \$4); print \$4, \$5 }'" > "$SIW_TMP/ops1" 2>&1
knfsd_rdma_stats > "$SIW_TMP/rdma1" 2>&1
d() { echo $(($(nfs_stat "$SIW_TMP/${1}1" "$2") - $(nfs_stat "$SIW_TMP/${1}0" "$2"))); }
o_read=$(d ops read) o_write=$(d ops write) r_read=$(d rdma read) r_write=$(d rdma write)
if [ "$o_read" -ge 64 ] && [ "$o_write" -ge 64 ] && [ "$r_read" -ge 64 ] && [ "$r_write" -ge 64 ]; then
	ok "knfsd: nfsstat -s $o_read READs and $o_write WRITEs; svcrdma $r_read RDMA Reads and $r_write RDMA Writes"
else
	bad "knfsd: nfsstat -s $o_read READs, $o_write WRITEs; svcrdma $r_read RDMA Reads, $r_write RDMA Writes"
	show "$SIW_TMP/ops1" "$SIW_TMP/rdma1"
fi

# ------------------------------------------------- a captured session
# A session of uiwarp-nfs against knfsd captured on the host's lo and
# decoded by tshark down to NFS procedures (tests/wire/nfs_decode.sh):
# MOUNT, a 1 MiB put and get, a listing by Reply chunk, READLINK and a
# missing file; no malformed frame.  Again (3 times at most) when TCP
# lost segments on lo or dumpcap dropped some.
head -c 1048576 /dev/urandom > "$H/cap.bin"
for try in 1 2 3; do
	nfs_capture_start "$SIW_TMP/client.pcapng" "$KNFSD_RDMA_PORT" "$KNFSD_MOUNT_PORT" ||
		{ bad "dumpcap did not start: $(cat "$SIW_TMP/dumpcap.out")"; break; }
	# one call at a time: with several READs in flight tshark 4.0 once
	# put a Write chunk together from the wrong fragments
	# (docs/rpcrdma-wireshark.md)
	un --depth=1 put "$H/cap.bin" cap.bin > /dev/null 2>&1 &&
		un --depth=1 get cap.bin "$H/cap.got" > /dev/null 2>&1 &&
		un ls many > /dev/null 2>&1 && un readlink lnk > /dev/null 2>&1
	st=$?
	un stat not-there > /dev/null 2>&1
	nfs_capture_stop
	cst=$?
	[ $cst -eq 75 ] && continue
	nfs_capture_decode "$SIW_TMP/client.pcapng" --mount --noent 1 \
		--procs "FSINFO LOOKUP CREATE WRITE COMMIT READ READDIRPLUS READLINK" \
		--read 1048576 --write 1048576 --read-lists 1 --write-lists 2 --nomsg 1
	dst=$?
	[ $dst -eq 75 ] && continue
	break
done
cp "$SIW_TMP/client.pcapng" "$build/interop-nfs-client.pcapng" 2> /dev/null
if [ $st -eq 0 ] && [ $cst -eq 0 ] && [ $dst -eq 0 ] && cmp -s "$H/cap.bin" "$H/cap.got"; then
	ok "tshark decodes the captured session (try $try) down to NFS procedures, no malformed frame: $(grep -E '^[0-9]+ calls' "$SIW_TMP/decode.out"); $(grep '^READ data' "$SIW_TMP/decode.out")"
else
	bad "the captured session: tool $st, capture $cst, decoding $dst (try $try)"
	show "$SIW_TMP/decode.out"
fi

# ------------------------------------------- the server goes away mid-get
start=$(date +%s)
timeout -s KILL 120 "$nfs" -T 20 -d 1 -r 65536 -p "$KNFSD_RDMA_PORT" -m "$KNFSD_MOUNT_PORT" \
	--progress "127.0.0.1:$NFS_EXPORT" get f.67108864 "$H/cut" > "$SIW_TMP/cut.out" 2> "$SIW_TMP/cut.err" &
cpid=$!
for ((i = 0; i < 600; i++)); do
	[ -s "$H/cut" ] && break
	kill -0 "$cpid" 2> /dev/null || break
	sleep 0.1
done
guest_run -t 60 "rpc.nfsd 0; cat /proc/fs/nfsd/threads" > "$SIW_TMP/stop.out" 2>&1
wait "$cpid"
st=$?
took=$(($(date +%s) - start))
# An error, not a hang: the connection's end (exit 3), or, when nfsd's
# threads stop while a READ is in hand, NFS3ERR_JUKEBOX (RFC 1813 §2.6)
# past the tool's waits for it (exit 1)
if { [ $st -eq 3 ] || { [ $st -eq 1 ] && grep -q NFS3ERR_JUKEBOX "$SIW_TMP/cut.err"; }; } &&
   [ "$took" -lt 100 ]; then
	ok "knfsd stopped mid-get: the tool ended with exit $st in ${took}s ($(grep -v 'bytes' "$SIW_TMP/cut.err" | tail -n 1))"
else
	bad "knfsd stopped mid-get: exit $st after ${took}s"
	show "$SIW_TMP/cut.err"
fi
knfsd_stop
siw_finish
