#!/usr/bin/env bash
# NFS version 3 over RPC-over-RDMA against NFS over TCP, both directions
# with Linux, in one boot of the siw guest (tests/interop/nfs_lib.sh):
#
#   (a) uiwarp-nfs on the host against knfsd in the guest (through the
#       forwarded ports): put then get of an NFS_SIZE file (default 64
#       MiB), over rdma and over tcp (-x tcp), the transports taking turns
#       run by run, the first alternating from round to round; MB/s from
#       uiwarp-nfs --progress's last line (the file's octets over the time
#       of its WRITEs and COMMIT, or READs: the mount not counted); each
#       get compared with the file by cmp;
#   (b) the guest's kernel client against uiwarp-nfsd on the host,
#       mounted over rdma and over tcp (10.0.2.100, the host's loopback):
#       dd bs=1M oflag=direct, dd bs=1M iflag=direct, cp in, and cp out
#       after the guest's caches are dropped; MB/s the file's octets over
#       the guest's /proc/uptime around each command; each copy's SHA-256
#       compared with the source's in the guest, and the files in the
#       host's export with it too.
#
# Every figure is the median of NFS_ROUNDS runs; ratios RDMA / TCP (above
# 1: RDMA moves more).  The share moved by DDP: the octets that RDMA Read
# and RDMA Write chunks carried (RFC 8166 §3.4) over the file octets, from
# uiwarp-nfs --stats in (a) (its Read chunks for WRITE, its Write chunks
# for READ) and from uiwarp-nfsd --stats in (b) (counted over all the
# rdma runs).  The guest runs under QEMU, by TCG where there is no KVM:
# the absolute figures say more about the emulation than about either
# transport.
#
# Writes bench/nfs-latest.md.  Builds nothing: run it after a build (make
# bench-nfs builds first and installs the guest's packages).  A
# benchmark: it never fails for being slow; a point that fails is n/a in
# its table, and every failure is listed under the tables.  It fails only
# when the guest or knfsd cannot be brought up.
#
# usage: bench/nfs.sh
#   BUILD=<dir>        build directory (default: build)
#   NFS_ROUNDS=<n>     runs per figure, the median kept (default 3)
#   NFS_SIZE=<octets>  the file (default 64m; suffixes k, m)
#   NFS_QUICK=1        a short trial: one round of 16 MiB
#   NFS_OUT=<file>     the report (default bench/nfs-latest.md)
set -uo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${BUILD:-$src/build}" && pwd) || exit 2
# shellcheck source=lib.sh
source "$src/bench/lib.sh"
# shellcheck source=../tests/interop/nfs_lib.sh
source "$src/tests/interop/nfs_lib.sh"
quick=
if [ "${NFS_QUICK:-0}" = 1 ]; then
	quick=" (NFS_QUICK=1: a short trial)"
	rounds=${NFS_ROUNDS:-1}
	size=$(to_octets "${NFS_SIZE:-16m}")
else
	rounds=${NFS_ROUNDS:-3}
	size=$(to_octets "${NFS_SIZE:-64m}")
fi
out=${NFS_OUT:-$src/bench/nfs-latest.md}
nfs=$build/tools/nfs/uiwarp-nfs
nfsd=$build/tools/nfs/uiwarp-nfsd
for f in "$nfs" "$nfsd"; do
	if [ ! -x "$f" ]; then
		echo "bench/nfs.sh: $f is missing: build first (make bench-nfs)" >&2
		exit 2
	fi
done
if [ $((size % 1048576)) -ne 0 ]; then
	echo "bench/nfs.sh: NFS_SIZE must be whole MiB (dd bs=1M)" >&2
	exit 2
fi

bench_workdir
# Both ends of the run: the bench's processes and files, and the guest
# with the host servers of nfs_lib.sh; the guest's run directory (its
# console.log) stays when the run failed.
nfs_bench_cleanup() {
	local st=$?
	bench_cleanup
	siw_cleanup
	[ $st -ne 0 ] || [ -z "${GUEST_RUN:-}" ] || rm -rf "$GUEST_RUN"
}
trap nfs_bench_cleanup EXIT

# order ROUND: the transports in the order of that round.
order() {
	if [ $(($1 % 2)) -eq 1 ]; then echo "rdma tcp"; else echo "tcp rdma"; fi
}
# med GLOB: the median of the numbers in the files GLOB names, or n/a.
med() {
	# shellcheck disable=SC2086
	cat $1 2>/dev/null | awk "$awk_med"'$1 ~ /^[0-9.]+$/ { a[++k] = $1 }
		END { if (k) print med(a, k); else print "n/a" }'
}
# share OCTETS FILE_OCTETS: OCTETS as a percentage of FILE_OCTETS, or n/a.
share() {
	awk -v a="$1" -v b="$2" 'BEGIN {
		if (a ~ /^[0-9]+$/ && b + 0 > 0) printf "%.1f %%", a * 100 / b
		else printf "n/a" }'
}

started=$(date -u '+%Y-%m-%d %H:%M UTC')
load=$(cut -d' ' -f1-3 /proc/loadavg)
echo "bench/nfs.sh: booting the guest ($rounds rounds of $(human "$size"))" >&2
nfs_boot bench_nfs 0 0 >&2
accel=$(grep -o '"accel": "[a-z]*"' "$GUEST_RUN/config.json" | cut -d'"' -f4)
knfsd_start || { cat "$SIW_TMP/knfsd.log" >&2; echo "bench/nfs.sh: knfsd did not start" >&2; exit 1; }
guest_info=$(grep -E '^(kernel_package|kernel_version|siw_source)=' "$GUEST_CACHE/guest/info" | tr '\n' ' ')

# ------------------------------------------------------------------
# (a) uiwarp-nfs against knfsd

head -c "$size" /dev/urandom >"$work/file"
declare -A kport=([rdma]=$KNFSD_RDMA_PORT [tcp]=$KNFSD_TCP_PORT)
# mbps FILE: the rate of uiwarp-nfs --progress's last line, into FILE.mbps.
mbps() {
	sed -n 's/.*(100%), \([0-9.]*\) MB\/s.*/\1/p' "$1" | tail -n 1 >"$1.mbps"
	[ -s "$1.mbps" ]
}
for ((r = 1; r <= rounds; r++)); do
	for t in $(order "$r"); do
		f=$work/a-put-$t-$r
		echo "+ uiwarp-nfs -x $t put ($(human "$size")), round $r" >&2
		if waited timeout 900 "$nfs" -x "$t" -p "${kport[$t]}" \
			-m "$KNFSD_MOUNT_PORT" --stats --progress \
			"127.0.0.1:$NFS_EXPORT" put "$work/file" "bench.$t" 2>"$f" &&
			mbps "$f"; then
			:
		else
			failed "uiwarp-nfs put over $t, round $r" "$f"
		fi
		f=$work/a-get-$t-$r
		echo "+ uiwarp-nfs -x $t get ($(human "$size")), round $r" >&2
		rm -f "$work/back"
		if waited timeout 900 "$nfs" -x "$t" -p "${kport[$t]}" \
			-m "$KNFSD_MOUNT_PORT" --stats --progress \
			"127.0.0.1:$NFS_EXPORT" get "bench.$t" "$work/back" 2>"$f" &&
			mbps "$f"; then
			if ! cmp -s "$work/file" "$work/back"; then
				rm -f "$f.mbps"
				failed "uiwarp-nfs get over $t, round $r: not the file put" "$f"
			fi
		else
			failed "uiwarp-nfs get over $t, round $r" "$f"
		fi
	done
done
# What moved by RDMA in the last round's rdma runs.
ddp_a_put=$(kv_field "$work/a-put-rdma-$rounds" "uiwarp-nfs: rdma: calls=" read_bytes)
ddp_a_get=$(kv_field "$work/a-get-rdma-$rounds" "uiwarp-nfs: rdma: calls=" write_bytes)
inl_a_put=$(kv_field "$work/a-put-rdma-$rounds" "uiwarp-nfs: rdma: calls=" inline_bytes)
inl_a_get=$(kv_field "$work/a-get-rdma-$rounds" "uiwarp-nfs: rdma: calls=" inline_bytes)
rep_a_get=$(kv_field "$work/a-get-rdma-$rounds" "uiwarp-nfs: rdma: calls=" reply_bytes)
line_a_put=$(sed -n 's/^uiwarp-nfs: rdma: RDMA Read/RDMA Read/p' "$work/a-put-rdma-$rounds" 2>/dev/null)
line_a_get=$(sed -n 's/^uiwarp-nfs: rdma: RDMA Read/RDMA Read/p' "$work/a-get-rdma-$rounds" 2>/dev/null)
knfsd_rdma_stats >"$work/svcrdma" 2>&1
guest_run -t 60 "rm -f $NFS_EXPORT/bench.rdma $NFS_EXPORT/bench.tcp" >/dev/null 2>&1
rm -f "$work/back"

# ------------------------------------------------------------------
# (b) the guest's kernel client against uiwarp-nfsd

mkdir "$work/export"
if ! host_listen nfsd 7200 "exporting" "$nfsd" --listen 127.0.0.1 \
	--port "$NFSD_RDMA_PORT" --tcp-port "$NFSD_TCP_PORT" \
	--mount-port "$NFSD_MOUNT_PORT" --no-root-squash --stats "$work/export"; then
	cat "$SIW_TMP/nfsd.out" "$SIW_TMP/nfsd.err" >&2
	echo "bench/nfs.sh: uiwarp-nfsd did not start" >&2
	exit 1
fi
nfsd_pid=$HOST_PID
mib=$((size / 1048576))
declare -A mounted
for t in rdma tcp; do
	if guest_nfs_mount "$GUEST_HOST_ADDR:/" "/mnt/u$t" "$t"; then
		mounted[$t]=$(grep " /mnt/u$t " "$SIW_TMP/mount.log" | cut -d' ' -f4)
	else
		failed "the guest's mount of uiwarp-nfsd over $t" "$SIW_TMP/mount.log"
	fi
done
guest_run -t 120 "head -c $size /dev/urandom > /tmp/src && sha256sum < /tmp/src | cut -d' ' -f1" \
	>"$work/gsum" 2>&1
gsum=$(tail -n 1 "$work/gsum")
[ ${#gsum} -eq 64 ] || failed "the guest's source file" "$work/gsum"
# One guest command a run: each step's seconds ("ddw S", "ddr S", "cpin
# S", "cpout S") and whether its copy is the source ("same ddr|cpout").
for ((r = 1; r <= rounds; r++)); do
	for t in $(order "$r"); do
		[ -n "${mounted[$t]:-}" ] || continue
		m=/mnt/u$t
		f=$work/b-$t-$r
		echo "+ the guest's dd and cp over $t ($(human "$size")), round $r" >&2
		waited guest_run -t 1800 "
			t() { cut -d' ' -f1 /proc/uptime; }
			el() { awk -v a=\$1 -v b=\$2 'BEGIN { print b - a }'; }
			same() { [ \"\$(sha256sum < \$2 | cut -d' ' -f1)\" = $gsum ] && echo same \$1; rm -f \$2; }
			a=\$(t); dd if=/tmp/src of=$m/dd.bin bs=1M count=$mib oflag=direct 2>/dev/null && echo ddw \$(el \$a \$(t))
			sync; echo 3 > /proc/sys/vm/drop_caches
			a=\$(t); dd if=$m/dd.bin of=/tmp/back bs=1M count=$mib iflag=direct 2>/dev/null && echo ddr \$(el \$a \$(t))
			same ddr /tmp/back
			a=\$(t); cp /tmp/src $m/cp.bin && echo cpin \$(el \$a \$(t))
			sync; echo 3 > /proc/sys/vm/drop_caches
			a=\$(t); cp $m/cp.bin /tmp/back && echo cpout \$(el \$a \$(t))
			same cpout /tmp/back" >"$f" 2>&1
		for step in ddw ddr cpin cpout; do
			awk -v s="$step" -v n="$size" '$1 == s && $2 > 0 { printf "%.2f\n", n / $2 / 1e6 }' \
				"$f" >"$f.$step"
			[ -s "$f.$step" ] || failed "$step over $t, round $r" "$f"
		done
		for step in ddr cpout; do
			if [ -s "$f.$step" ] && ! grep -qx "same $step" "$f"; then
				rm -f "$f.$step"
				failed "$step over $t, round $r: the copy is not the source" "$f"
			fi
		done
		for x in dd cp; do
			if [ "$(sha256sum <"$work/export/$x.bin" 2>/dev/null | cut -d' ' -f1)" != "$gsum" ]; then
				if [ $x = dd ]; then rm -f "$f.ddw"; else rm -f "$f.cpin"; fi
				failed "$x over $t, round $r: the file in the host's export is not the source" "$f"
			fi
		done
	done
done
for t in rdma tcp; do
	[ -n "${mounted[$t]:-}" ] || continue
	guest_nfs_umount "/mnt/u$t" || failed "umount over $t" "$SIW_TMP/umount.log"
done
kill -TERM "$nfsd_pid" 2>/dev/null
host_wait "$nfsd_pid"
ddp_b_read=$(kv_field "$SIW_TMP/nfsd.out" "uiwarp-nfsd: rdma: calls=" read_bytes)
ddp_b_write=$(kv_field "$SIW_TMP/nfsd.out" "uiwarp-nfsd: rdma: calls=" write_bytes)
inl_b=$(kv_field "$SIW_TMP/nfsd.out" "uiwarp-nfsd: rdma: calls=" inline_bytes)
line_b=$(sed -n 's/^uiwarp-nfsd: rdma: RDMA Read/RDMA Read/p' "$SIW_TMP/nfsd.out")
# The octets the rdma runs wrote (dd and cp in) and read (dd and cp out).
runs_b=$(cat "$work"/b-rdma-* 2>/dev/null | grep -c '^ddw ')
written_b=$((runs_b * 2 * size))

# ------------------------------------------------------------------
# The report

row() {
	local what=$1 g=$2 rv tv
	rv=$(med "$work/$g-rdma-*$3")
	tv=$(med "$work/$g-tcp-*$3")
	echo "| $what | $rv | $tv | $(ratio "$tv" "$rv") |"
}
{
	echo "# NFS version 3 over RPC-over-RDMA and over TCP, with Linux"
	echo
	echo "Written by \`bench/nfs.sh\` (\`make bench-nfs\`), started $started."
	echo
	echo "- host: $(nproc) CPUs ($(bench_cpu)), Linux $(uname -r), load $load before the run, $(cut -d' ' -f1-3 /proc/loadavg) after it"
	echo "- source: $(bench_rev "$src"), build type $(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$build/CMakeCache.txt")"
	echo "- guest: QEMU (accel ${accel:-?}), 1 vCPU, siw; $guest_info"
	echo "- a file of $(human "$size"), every figure the median of $rounds runs, the transports taking turns$quick"
	echo
	echo "The guest runs under emulation (TCG: every guest instruction"
	echo "translated): the absolute figures measure QEMU more than NFS and"
	echo "mean nothing for real hardware.  What the report gives is the ratio"
	echo "RDMA / TCP, both measured through the same emulated guest and the"
	echo "same forwarded TCP connections, and the share of the data that RDMA"
	echo "Read and RDMA Write chunks moved rather than inline messages."
	echo
	echo "## uiwarp-nfs on the host, knfsd in the guest"
	echo
	echo "\`uiwarp-nfs -x rdma|tcp --stats --progress 127.0.0.1:$NFS_EXPORT put FILE NAME\`,"
	echo "then \`get NAME COPY\` (compared with cmp), against knfsd (svcrdma on"
	echo "siw, and its TCP listener) through QEMU's forwarded ports; MB/s"
	echo "(10^6 octets a second) the file over the time of its WRITEs (and"
	echo "COMMIT) or READs, as uiwarp-nfs reports it."
	echo
	echo "| call | RDMA MB/s | TCP MB/s | ratio |"
	echo "| --- | --- | --- | --- |"
	row "put (WRITE)" a-put .mbps
	row "get (READ)" a-get .mbps
	echo
	echo "Moved by DDP in the last rdma round (uiwarp-nfs --stats):"
	echo
	echo "- put: $(share "$ddp_a_put" "$size") of the file's octets by Read chunks (knfsd's RDMA Reads; ${ddp_a_put:-n/a} octets; inline ${inl_a_put:-n/a} octets) — ${line_a_put:-n/a}"
	echo "- get: $(share "$ddp_a_get" "$size") by Write chunks (knfsd's RDMA Writes; ${ddp_a_get:-n/a} octets; inline ${inl_a_get:-n/a} octets) — ${line_a_get:-n/a}"
	echo
	echo "- svcrdma's counters after these runs: $(awk '$1 == "read" || $1 == "write" || $1 == "recv" { printf "%s%s=%s", s, $1, $2; s = ", " }' "$work/svcrdma")"
	# knfsd puts READ data in an offered Reply chunk too?
	if awk -v a="${rep_a_get:-0}" -v b="$size" 'BEGIN { exit !(a + 0 >= 0.9 * b) }'; then
		echo
		echo "uiwarp-nfs offers a Reply chunk with every call (knfsd sends"
		echo "anything longer than its 4096-octet inline buffer only that way)."
		echo "In this run a get's Reply chunks came back with $(share "$rep_a_get" "$size") of the"
		echo "file's octets (${rep_a_get:-n/a}, the lengths knfsd returned): knfsd"
		echo "wrote each READ's data into the Reply chunk as well as into the Write"
		echo "chunk, so over RDMA the data crossed the link twice, and the get"
		echo "figures above pay for it.  (Linux's own client offers a READ a"
		echo "Write chunk and no Reply chunk.)"
	fi
	echo
	echo "## The guest's Linux client, uiwarp-nfsd on the host"
	echo
	echo "\`mount -t nfs -o vers=3,rdma,port=20049\` (or \`proto=tcp,port=2049\`)"
	echo "of 10.0.2.100:/ (uiwarp-nfsd on the host's 127.0.0.1 through QEMU's"
	echo "guestfwd), then in the guest: \`dd bs=1M oflag=direct\` from a tmpfs"
	echo "file, \`dd bs=1M iflag=direct\` back, \`cp\` in, and \`cp\` out after"
	echo "\`echo 3 > /proc/sys/vm/drop_caches\`; MB/s the file over the guest's"
	echo "time around each command; each copy checked by SHA-256 in the guest"
	echo "and in the host's export."
	echo
	echo "| step | RDMA MB/s | TCP MB/s | ratio |"
	echo "| --- | --- | --- | --- |"
	row "dd oflag=direct (WRITE)" b .ddw
	row "dd iflag=direct (READ)" b .ddr
	row "cp in (WRITE)" b .cpin
	row "cp out (READ)" b .cpout
	echo
	echo "Mount options: rdma: ${mounted[rdma]:-n/a}; tcp: ${mounted[tcp]:-n/a}."
	echo
	echo "Moved by DDP over all $runs_b rdma runs (uiwarp-nfsd --stats at its"
	echo "end; $(human "$size") written twice and read twice a run):"
	echo
	echo "- WRITE data by RDMA Read (Read chunks): $(share "$ddp_b_read" "$written_b") of the octets written (${ddp_b_read:-n/a} of $written_b)"
	echo "- READ data by RDMA Write (Write chunks): $(share "$ddp_b_write" "$written_b") of the octets read (${ddp_b_write:-n/a} of $written_b)"
	echo "- inline: ${inl_b:-n/a} octets; the server's line: ${line_b:-n/a}"
	failures_section
} >"$work/report.md"
mv "$work/report.md" "$out"
cat "$out"
