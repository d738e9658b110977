# shellcheck shell=bash disable=SC2034,SC2154 # names shared with the sourcing test
# Shared part of the NFS interop tests (test_siw_nfs_*.sh): Linux NFS over
# RPC-over-RDMA in the siw guest, knfsd and the kernel's NFS client, with
# the modules and programs build-guest.sh packs from Debian (loaded and
# started here, not at boot).  Source it (bash) with build and src set; it
# sources siw_lib.sh (ok / bad / show, siw_finish, host_start ...).
#
# Ports.  In the guest knfsd listens on the standard ports, and the guest
# reaches a server on the host at 10.0.2.100 on the same numbers:
#   NFS_RDMA_PORT 20049 (RFC 8267 §5.1), NFS_TCP_PORT 2049, and
#   NFS_MOUNT_PORT 20048 (rpc.mountd -p: MOUNT has no fixed port, and
#   neither side's rpcbind is reachable through QEMU's forwarding).
# nfs_boot sets the host's ends (127.0.0.1):
#   KNFSD_RDMA_PORT KNFSD_TCP_PORT KNFSD_MOUNT_PORT  forwarded to knfsd
#   NFSD_RDMA_PORT NFSD_TCP_PORT NFSD_MOUNT_PORT     where a server on the
#       host listens for the guest (its 10.0.2.100:20049, :2049, :20048)
#
#   nfs_boot NAME NHOST NGUEST
#       siw_boot with those six ports besides NHOST and NGUEST ports of
#       its own (HOST_PORTS[], GUEST_PORTS[]), then nfs_guest_prepare;
#       again after a restart (SIW_AFTER_RESTART)
#   nfs_guest_prepare
#       loads sunrpc, rpcrdma, nfsd and nfsv3 (with what they need),
#       mounts the nfsd file system; 1 on failure (output in
#       $SIW_TMP/nfs-prepare.log)
#   knfsd_start [EXPORT_OPTIONS]
#       a tmpfs at NFS_EXPORT (/srv/nfs) exported to everyone with
#       EXPORT_OPTIONS (default rw,fsid=1,no_root_squash,insecure,
#       no_subtree_check,sync: fsid= because a tmpfs has no device
#       number to name it by, insecure because the host's connections
#       arrive from unprivileged ports), rpcbind, rpc.mountd -p
#       NFS_MOUNT_PORT, rpc.nfsd for NFSv3 only on tcp NFS_TCP_PORT and
#       rdma NFS_RDMA_PORT (rpc.nfsd --rdma writes "rdma 20049" to
#       /proc/fs/nfsd/portlist); 1 unless both listeners are in the
#       portlist and mountd listens (output in $SIW_TMP/knfsd.log)
#   knfsd_stop
#       stops nfsd's threads (which closes its listeners), mountd and
#       rpcbind, and unexports
#   guest_nfs_mount SERVER:/PATH MNT [rdma|tcp] [OPTION,...]
#       mount.nfs of Debian's nfs-common (not busybox mount), NFSv3 over
#       RDMA (port NFS_RDMA_PORT) or TCP (NFS_TCP_PORT), MOUNT over TCP on
#       NFS_MOUNT_PORT, nolock: with the version, both ports and both
#       transports given, mount.nfs asks no portmapper (the test mounts
#       10.0.2.100, whose port 111 nothing forwards), and without NLM no
#       rpc.statd is needed.  SERVER 10.0.2.100 is the host's server,
#       10.0.2.15 (GUEST_ADDR) knfsd over siw loopback.  Output in
#       $SIW_TMP/mount.log; the mount's status.  retry=0: one attempt
#   guest_nfs_umount MNT
#   knfsd_rdma_stats
#       svcrdma's counters (/proc/sys/sunrpc/svc_rdma/rdma_stat_*), one
#       "NAME VALUE" a line, NAME without rdma_stat_: read (RDMA Reads
#       posted: WRITE data pulled from Read chunks), write (RDMA Writes:
#       READ data into Write chunks, and Reply chunks), recv, sq_starve ...
#   guest_nfs_xprt MNT
#       the RPC-over-RDMA transport's counters of the mount on MNT
#       (/proc/self/mountstats, rpcrdma's xprt line), "NAME VALUE" lines:
#       sends recvs bad_xids read_chunks write_chunks reply_chunks
#       rdma_request_bytes rdma_reply_bytes pullup_copies fixup_copies
#       hardway_registrations failed_marshals bad_replies nomsg_calls
#       mrs_recycled mrs_orphaned mrs_allocated local_inv_needed
#       empty_sendctx_q reply_waits_for_send; 1 when the mount is not
#       over RDMA
#   nfs_ops server|client
#       NFSv3 operation counts (nfsstat -s / -c), "OP COUNT" lines, with
#       "calls N" (RPC calls) first
#   nfs_stat FILE NAME
#       the VALUE of NAME in a file of "NAME VALUE" lines (0 if absent)
#   nfs_loop_to_knfsd
#       the host's server ports (NFSD_*_PORT) lead back to knfsd
#       (KNFSD_*_PORT) through socat on the host: the guest's client
#       then meets knfsd at 10.0.2.100 the way it meets a server on the
#       host; 1 unless all three listen
#   nfs_host_null PORT PROG VERS
#       an RPC NULL call over TCP from the host to 127.0.0.1:PORT
#       (rpc_probe.py; the host has no rpcinfo); its status
#   nfs_host_exports PORT
#       MOUNTPROC3_EXPORT over TCP from the host: "DIR GROUPS" lines
#   nfs_capture_start FILE PORT... / nfs_capture_stop / nfs_capture_decode
#       a capture of the host's side of the forwarded connections, and
#       tshark's reading of it (tests/wire/nfs_decode.sh); see below
#   nfs_program VAR NAME
#       sets VAR to the path of tools/nfs/NAME in $build (the test ends
#       when it is not built) and clears every UIWARP_* setting of the
#       environment, so that the programs run with their defaults

# shellcheck source=siw_lib.sh
source "$src/tests/interop/siw_lib.sh"

NFS_RDMA_PORT=20049
NFS_TCP_PORT=2049
NFS_MOUNT_PORT=20048
NFS_EXPORT=/srv/nfs
# The export's size: files of 64 MiB, each with a copy.
NFS_EXPORT_SIZE=400m
NFS_EXPORT_OPTIONS=rw,fsid=1,no_root_squash,insecure,no_subtree_check,sync

nfs_boot() {
	SIW_HOSTFWD_TO=("$NFS_RDMA_PORT" "$NFS_TCP_PORT" "$NFS_MOUNT_PORT")
	SIW_GUESTFWD_FROM=("$NFS_RDMA_PORT" "$NFS_TCP_PORT" "$NFS_MOUNT_PORT")
	siw_boot "$@"
	KNFSD_RDMA_PORT=${SIW_HOSTFWD_PORT[0]}
	KNFSD_TCP_PORT=${SIW_HOSTFWD_PORT[1]}
	KNFSD_MOUNT_PORT=${SIW_HOSTFWD_PORT[2]}
	NFSD_RDMA_PORT=${SIW_GUESTFWD_PORT[0]}
	NFSD_TCP_PORT=${SIW_GUESTFWD_PORT[1]}
	NFSD_MOUNT_PORT=${SIW_GUESTFWD_PORT[2]}
	SIW_AFTER_RESTART=nfs_guest_prepare
	nfs_guest_prepare || { show "$SIW_TMP/nfs-prepare.log"; siw_die "$1: NFS could not be set up in the guest"; }
}

nfs_guest_prepare() {
	# The kernel asks for modules by alias (svcrdma, xprtrdma, fs-nfs)
	# through the usermode helper: busybox's modprobe, from the
	# modules.dep build-guest.sh made.  The four are loaded here all
	# the same, so that a missing one fails here, saying which.
	guest_run -t 60 "echo /bin/modprobe > /proc/sys/kernel/modprobe &&
		modprobe -a sunrpc rpcrdma nfsd nfsv3 &&
		{ grep -q ' /proc/fs/nfsd ' /proc/mounts || mount -t nfsd nfsd /proc/fs/nfsd; }" \
		> "$SIW_TMP/nfs-prepare.log" 2>&1
}

knfsd_start() {
	local opts=${1:-$NFS_EXPORT_OPTIONS}
	guest_run -t 90 "set -e
		mkdir -p $NFS_EXPORT
		grep -q ' $NFS_EXPORT ' /proc/mounts ||
			mount -t tmpfs -o size=$NFS_EXPORT_SIZE,mode=1777 tmpfs $NFS_EXPORT
		pidof rpcbind > /dev/null || rpcbind
		echo '$NFS_EXPORT *($opts)' > /etc/exports
		exportfs -ra
		pidof rpc.mountd > /dev/null ||
			rpc.mountd -p $NFS_MOUNT_PORT -N 4 -N 4.1 -N 4.2
		rpc.nfsd -N 4 -N 4.1 -N 4.2 -p $NFS_TCP_PORT --rdma=$NFS_RDMA_PORT 8
		uiw-waitport $NFS_MOUNT_PORT 30
		uiw-waitport $NFS_TCP_PORT 30
		grep -qx 'rdma $NFS_RDMA_PORT' /proc/fs/nfsd/portlist
		grep -qx 'tcp $NFS_TCP_PORT' /proc/fs/nfsd/portlist
		cat /proc/fs/nfsd/portlist /proc/fs/nfsd/versions /var/lib/nfs/etab" \
		> "$SIW_TMP/knfsd.log" 2>&1
}

knfsd_stop() {
	guest_run -t 60 "rpc.nfsd 0; exportfs -ua
		for p in \$(pidof rpc.mountd) \$(pidof rpcbind); do kill \$p; done
		cat /proc/fs/nfsd/threads" > "$SIW_TMP/knfsd-stop.log" 2>&1
}

guest_nfs_mount() {
	local what=$1 mnt=$2 proto=${3:-rdma} extra=${4:+,$4} o
	case $proto in
	rdma) o=rdma,port=$NFS_RDMA_PORT ;;
	tcp) o=proto=tcp,port=$NFS_TCP_PORT ;;
	*) echo "guest_nfs_mount: transport '$proto' is not rdma or tcp" > "$SIW_TMP/mount.log"; return 2 ;;
	esac
	# retry=0: one attempt, an error at once rather than two minutes of
	# retries in the foreground (nfs(5)).
	o=$o,vers=3,mountport=$NFS_MOUNT_PORT,mountproto=tcp,mountvers=3,nolock,retry=0$extra
	guest_run -t 120 "mkdir -p $mnt && mount.nfs $what $mnt -v -o $o && grep ' $mnt ' /proc/mounts" \
		> "$SIW_TMP/mount.log" 2>&1
}

guest_nfs_umount() {
	guest_run -t 120 "umount $1 && ! grep -q ' $1 ' /proc/mounts" \
		> "$SIW_TMP/umount.log" 2>&1
}

knfsd_rdma_stats() {
	guest_run -t 20 'cd /proc/sys/sunrpc/svc_rdma &&
		for f in rdma_stat_*; do echo "${f#rdma_stat_} $(cat "$f")"; done'
}

guest_nfs_xprt() {
	# rpcrdma's xprt line (xprt_rdma_print_stats in Linux 6.1): "rdma",
	# a source port of 0, bind_count, connect_count, connect_time,
	# idle_time, then the names below in order.
	guest_run -t 20 "awk -v mnt='$1' '
		\$1 == \"device\" { here = (\$5 == mnt) }
		here && \$1 == \"xprt:\" && \$2 == \"rdma\" {
			n = split(\"sends recvs bad_xids req_u bklog_u read_chunks write_chunks reply_chunks rdma_request_bytes rdma_reply_bytes pullup_copies fixup_copies hardway_registrations failed_marshals bad_replies nomsg_calls mrs_recycled mrs_orphaned mrs_allocated local_inv_needed empty_sendctx_q reply_waits_for_send\", name)
			for (i = 1; i <= n; i++)
				print name[i], \$(i + 7)
			found = 1
		}
		END { exit !found }' /proc/self/mountstats"
}

nfs_ops() {
	local flag
	case $1 in
	server) flag=-s ;;
	client) flag=-c ;;
	*) echo "nfs_ops: server or client, not '$1'" >&2; return 2 ;;
	esac
	# nfsstat -l: "nfs v3 server        read:        513" lines; the
	# RPC calls from its "rpc" table.
	guest_run -t 20 "nfsstat $flag -o rpc | awk 'p { print \"calls\", \$1; exit } \$1 == \"calls\" { p = 1 }'
		nfsstat $flag -3 -l | awk '\$1 == \"nfs\" && \$2 == \"v3\" { sub(\":\", \"\", \$4); print \$4, \$5 }'"
}

nfs_stat() {
	awk -v n="$2" '$1 == n { v = $2 } END { print v + 0 }' "$1"
}

nfs_loop_to_knfsd() {
	local p k i
	p=("$NFSD_RDMA_PORT" "$NFSD_TCP_PORT" "$NFSD_MOUNT_PORT")
	k=("$KNFSD_RDMA_PORT" "$KNFSD_TCP_PORT" "$KNFSD_MOUNT_PORT")
	for i in 0 1 2; do
		host_start "loop${p[i]}" 900 socat \
			"TCP4-LISTEN:${p[i]},bind=127.0.0.1,reuseaddr,fork" \
			"TCP4:127.0.0.1:${k[i]}"
		wait_tcp_listen "${p[i]}" "$HOST_PID" 20 || return 1
	done
}

nfs_host_null() {
	python3 "$src/tests/interop/rpc_probe.py" "$1" "$2" "$3" null
}

nfs_host_exports() {
	python3 "$src/tests/interop/rpc_probe.py" "$1" 100005 3 exports
}

nfs_program() {
	local p=$build/tools/nfs/$2 v
	[ -x "$p" ] || siw_die "$p is not built"
	while read -r v; do
		unset "$v"
	done < <(env | sed -n 's/^\(UIWARP_[A-Z_]*\)=.*/\1/p')
	printf -v "$1" '%s' "$p"
}

# nfs_capture_start FILE PORT...: dumpcap on the host's lo, keeping the
# TCP segments of PORTs (QEMU's forwarded connections to and from the
# guest cross lo) in FILE, from the moment it returns: a UDP probe to a
# closed port must be in the file first.  nfs_capture_stop: a second
# probe in the file (what came before it was written), then dumpcap
# stopped; 75 when it dropped packets.  nfs_capture_decode FILE
# OPTIONS...: tests/wire/nfs_decode.sh on the capture (its output in
# $SIW_TMP/decode.out, its status: 75 when TCP lost or resent a
# segment of it, and tshark's MPA dissector cannot follow).
nfs_capture_probe() {
	local tag=$1 i
	for ((i = 0; i < 200; i++)); do
		kill -0 "$NFS_DUMPCAP" 2> /dev/null || return 1
		printf '%s' "$tag" > "/dev/udp/127.0.0.1/$NFS_PROBE" 2> /dev/null
		[ -s "$NFS_CAP" ] && [ -n "$(tshark -r "$NFS_CAP" -Y "udp.dstport == $NFS_PROBE && frame contains \"$tag\"" 2> /dev/null | sed -n 1p)" ] && return 0
		sleep 0.1
	done
	return 1
}
nfs_capture_start() {
	local f p i
	NFS_CAP=$1
	shift
	f=""
	for p in "$@"; do
		f="$f${f:+ or }tcp port $p"
	done
	NFS_PROBE=$(( ($1 + 7919) % 50000 + 10000 ))
	rm -f "$NFS_CAP"
	dumpcap -q -B 64 -i lo -f "$f or udp port $NFS_PROBE" -w "$NFS_CAP" \
		> "$SIW_TMP/dumpcap.out" 2>&1 &
	NFS_DUMPCAP=$!
	for ((i = 0; i < 200; i++)); do
		grep -q '^Capturing on' "$SIW_TMP/dumpcap.out" && break
		sleep 0.05
	done
	nfs_capture_probe uiwstart
}
nfs_capture_stop() {
	local drops
	nfs_capture_probe uiwend || { kill "$NFS_DUMPCAP" 2> /dev/null; return 1; }
	kill -INT "$NFS_DUMPCAP"
	wait "$NFS_DUMPCAP" 2> /dev/null
	drops=$(sed -n 's|.*received/dropped on interface.*: [0-9]*/\([0-9]*\) .*|\1|p' \
		"$SIW_TMP/dumpcap.out" | sed -n 1p)
	[ "${drops:-1}" -eq 0 ] || return 75
}
nfs_capture_decode() {
	local cap=$1
	shift
	"$src/tests/wire/nfs_decode.sh" "$cap" "$@" > "$SIW_TMP/decode.out" 2>&1
}
