#!/usr/bin/env bash
# Builds the siw guest for the interop tests: Debian's kernel (the version
# linux-image-amd64 points to), siw.ko built out of tree from Debian's
# linux-source, and a busybox initramfs with rdma-core's tools.
#
#   bash tests/interop/build-guest.sh [CACHE]      (default build/interop-cache)
#
# Results, under CACHE/guest: vmlinuz, initrd.gz, info (versions) and stamp.
# Nothing is installed as a kernel: packages are fetched with
# "apt-get download" into CACHE/debs and unpacked with "dpkg-deb -x".  A
# second run with the same kernel version, the same host tools and the same
# scripts does nothing.  Concurrent runs wait for each other (flock).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache=${1:-build/interop-cache}
mkdir -p "$cache"
cache=$(cd "$cache" && pwd)
out=$cache/guest
PATH=$PATH:/usr/sbin:/sbin

say() { echo "build-guest: $*" >&2; }
die() { say "error: $*"; exit 1; }

# The modules the guest loads, with everything they depend on.
guest_modules=(virtio_pci virtio_net ib_core ib_uverbs iw_cm ib_cm rdma_cm
               rdma_ucm crc32c_generic crc32c-intel libcrc32c siw)
# Modules copied in with everything they depend on, but loaded only when a
# test asks ("modprobe sctp" in the guest, from the modules.dep made for
# the initramfs): the kernel's SCTP for test_sctp_kernel.sh.  The guest
# boots as without them.
guest_demand_modules=(sctp)
# Linux NFS/RDMA for the NFS tests (nfs_lib.sh): knfsd and the NFS
# client with the RPC-over-RDMA transport (rpcrdma holds both xprtrdma and
# svcrdma), loaded on demand like sctp.
guest_demand_modules+=(sunrpc rpcrdma nfsd nfs nfsv3 lockd grace nfs_acl
                       auth_rpcgss)
# The NFS user programs, out of Debian's packages (nfs_pkgs), fetched with
# "apt-get download" and unpacked like the kernel's: nothing of NFS is
# installed or started on the host.  Shared objects the host lacks come
# from the packages those depend on (nfs_dep_pkgs, below).
nfs_pkgs=(nfs-kernel-server nfs-common rpcbind)
nfs_tools=(rpcbind rpcinfo rpc.nfsd rpc.mountd exportfs mount.nfs nfsstat
           showmount)
# rdma-core's tools (and iproute2's rdma) copied into the guest.
guest_tools=(rping ucmatose udaddy mckey rdma_server rdma_client cmtime
             rstream riostream rcopy ibv_devices ibv_devinfo ibv_asyncwatch
             ib_write_bw ib_write_lat ib_read_bw ib_read_lat ib_send_bw
             ib_send_lat ib_atomic_bw ib_atomic_lat rdma)
host_pkgs=(busybox-static rdmacm-utils ibverbs-utils perftest
           ibverbs-providers libibverbs1 librdmacm1 iproute2 libc6)

exec 9> "$cache/.lock"
flock -w 3600 9 || die "another build holds $cache/.lock"

# Host packages (a no-op when present; needs root otherwise).
bash "$here/deps.sh" || die "missing host packages: run tests/interop/deps.sh as root"
for c in apt-get apt-cache dpkg-deb depmod modprobe cpio gzip make gcc-12 \
         flock sha256sum ldd; do
	command -v "$c" > /dev/null || die "$c not found"
done

# ---------------------------------------------------------------- versions
apt_lookup() {
	# One query (apt-cache is slow here): the meta package's Depends names
	# the image package and pins its version.
	local dep
	dep=$(apt-cache show --no-all-versions linux-image-amd64 2> /dev/null |
		sed -n 's/^Depends: *//p' | tr ',' '\n' |
		sed -n 's/^ *\(linux-image-[^ ]*\) *(= *\([^)]*\)).*/\1 \2/p' |
		sed -n 1p)
	[ -n "$dep" ] || return 1
	img_pkg=${dep% *}
	kpkgver=${dep#* }
	kver=${img_pkg#linux-image-}
}

if ! apt_lookup; then
	if [ -s "$out/stamp" ] && [ -s "$out/vmlinuz" ] && [ -s "$out/initrd.gz" ]; then
		say "apt lists unavailable; using the guest already built in $out"
		exit 0
	fi
	[ "$(id -u)" -eq 0 ] || die "apt knows no linux-image-amd64 (run apt-get update as root)"
	say "apt knows no linux-image-amd64: running apt-get update"
	apt-get update -q > /dev/null
	apt_lookup || die "apt-cache cannot resolve linux-image-amd64"
fi
kseries=$(echo "$kpkgver" | sed -E 's/^([0-9]+\.[0-9]+).*/\1/')
kcommon=${kver%-amd64}-common
case $kver in
*-amd64) ;;
*) die "unexpected kernel flavour '$kver'" ;;
esac

# The NFS packages' versions (one apt-cache query), and those of the
# libraries they depend on that the host does not have.
nfs_versions() { # package... -> "package version" lines
	apt-cache show --no-all-versions "$@" 2> /dev/null |
		awk '/^Package:/ { p = $2 } /^Version:/ { print p, $2 }'
}
nfsvers=$(nfs_versions "${nfs_pkgs[@]}")
[ "$(echo "$nfsvers" | grep -c .)" -eq ${#nfs_pkgs[@]} ] ||
	die "apt-cache does not know all of ${nfs_pkgs[*]}"
nfs_dep_pkgs=()
for p in $(apt-cache depends --no-recommends --no-suggests --no-conflicts \
		--no-breaks --no-replaces --no-enhances "${nfs_pkgs[@]}" 2> /dev/null |
		awk '$1 == "Depends:" && $2 ~ /^lib/ { print $2 }' | sort -u); do
	[ "$(dpkg-query -W -f='${db:Status-Status}' "$p" 2> /dev/null)" = installed ] ||
		nfs_dep_pkgs+=("$p")
done
if [ ${#nfs_dep_pkgs[@]} -gt 0 ]; then
	nfsvers=$(printf '%s\n%s' "$nfsvers" "$(nfs_versions "${nfs_dep_pkgs[@]}")")
fi

hostvers=$(dpkg-query -W -f='${Package}=${Version}\n' "${host_pkgs[@]}" | sort | tr '\n' ' ')
key=$( {
	echo "kernel $img_pkg $kpkgver"
	echo "host $hostvers"
	echo "modules ${guest_modules[*]}"
	echo "demand ${guest_demand_modules[*]}"
	echo "tools ${guest_tools[*]}"
	echo "nfs $(echo "$nfsvers" | tr '\n' ' ') ${nfs_tools[*]}"
	sha256sum "$here/build-guest.sh" "$here/guest-init.sh" | awk '{ print $1 }'
} | sha256sum | awk '{ print $1 }')

if [ -s "$out/stamp" ] && [ "$(cat "$out/stamp")" = "$key" ] &&
   [ -s "$out/vmlinuz" ] && [ -s "$out/initrd.gz" ]; then
	say "up to date: $out (kernel $kver, $kpkgver)"
	exit 0
fi

t0=$(date +%s)
say "building the siw guest: kernel $kver ($kpkgver) into $cache"
rm -f "$out/stamp"

# ---------------------------------------------------------------- download
debs=$cache/debs
mkdir -p "$debs"
deb_of() { # package -> path of its .deb at version $kpkgver, if present
	local f
	for f in "$debs/$1_${kpkgver//:/%3a}_"*.deb; do
		[ -s "$f" ] && { echo "$f"; return 0; }
	done
	return 1
}
fetch() {
	local p missing=()
	for p in "$@"; do
		deb_of "$p" > /dev/null || missing+=("$p=$kpkgver")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	say "apt-get download ${missing[*]}"
	(cd "$debs" && apt-get download -q -o APT::Sandbox::User=root "${missing[@]}") \
		> "$cache/download.log" 2>&1 ||
		{ tail -n 20 "$cache/download.log" >&2; die "apt-get download failed"; }
}
kpkgs=("$img_pkg" "linux-headers-$kver" "linux-headers-$kcommon" "linux-kbuild-$kseries")
# Packages and sources of other kernel versions are of no further use.
for f in "$debs"/*.deb; do
	[ -e "$f" ] || continue
	case $f in
	*"_${kpkgver//:/%3a}_"*) ;;
	*) rm -f "$f" ;;
	esac
done
for d in "$cache"/src/siw-*; do
	[ -e "$d" ] || continue
	[ "$d" = "$cache/src/siw-$kpkgver" ] || rm -rf "$d"
done
fetch "${kpkgs[@]}"

# The NFS packages, at the versions in the stamp, in a folder of their own
# (their versions are not the kernel's); other versions are dropped.
nfsdebs=$cache/debs-nfs
mkdir -p "$nfsdebs"
nfs_deb() { # "package version" -> its .deb's file name
	echo "${1}_${2//:/%3a}_"
}
nfs_wanted=$(echo "$nfsvers" | while read -r p v; do nfs_deb "$p" "$v"; done)
for f in "$nfsdebs"/*.deb; do
	[ -e "$f" ] || continue
	grep -xF "$(basename "$f" | sed 's/[^_]*$//')" <<<"$nfs_wanted" > /dev/null || rm -f "$f"
done
nfs_missing=()
while read -r p v; do
	compgen -G "$nfsdebs/$(nfs_deb "$p" "$v")*.deb" > /dev/null || nfs_missing+=("$p=$v")
done <<< "$nfsvers"
if [ ${#nfs_missing[@]} -gt 0 ]; then
	say "apt-get download ${nfs_missing[*]}"
	(cd "$nfsdebs" && apt-get download -q -o APT::Sandbox::User=root "${nfs_missing[@]}") \
		> "$cache/download.log" 2>&1 ||
		{ tail -n 20 "$cache/download.log" >&2; die "apt-get download failed"; }
fi

# The siw sources out of linux-source (kept; the 140 MB .deb is not).
siwsrc=$cache/src/siw-$kpkgver
if [ ! -s "$siwsrc/siw_main.c" ]; then
	fetch "linux-source-$kseries"
	srcdeb=$(deb_of "linux-source-$kseries")
	say "extracting drivers/infiniband/sw/siw from $(basename "$srcdeb")"
	rm -rf "$siwsrc.tmp"
	mkdir -p "$siwsrc.tmp"
	dpkg-deb --fsys-tarfile "$srcdeb" |
		tar -xO "./usr/src/linux-source-$kseries.tar.xz" |
		tar -xJ -C "$siwsrc.tmp" --strip-components=5 \
			"linux-source-$kseries/drivers/infiniband/sw/siw"
	[ -s "$siwsrc.tmp/siw_main.c" ] || die "no siw sources in $srcdeb"
	rm -rf "$siwsrc"
	mv "$siwsrc.tmp" "$siwsrc"
	rm -f "$srcdeb"
fi

# ---------------------------------------------------------------- unpack
work=$cache/work
rm -rf "$work"
mkdir -p "$work/k"
for p in "${kpkgs[@]}"; do
	dpkg-deb -x "$(deb_of "$p")" "$work/k"
done
hdr=$work/k/usr/src/linux-headers-$kver
[ -f "$hdr/Makefile" ] || die "no $hdr/Makefile"
# The flavour's Makefile includes the common one by absolute path.
sed -i "s#^include /usr/src/#include $work/k/usr/src/#" "$hdr/Makefile"
modroot=$work/k/lib/modules/$kver
nfsroot=$work/nfs
mkdir -p "$nfsroot"
for f in "$nfsdebs"/*.deb; do
	dpkg-deb -x "$f" "$nfsroot"
done
[ -s "$work/k/boot/vmlinuz-$kver" ] || die "no vmlinuz in $img_pkg"

# ---------------------------------------------------------------- siw.ko
mkdir -p "$work/siw"
cp "$siwsrc"/*.[ch] "$work/siw/"
cat > "$work/siw/Kbuild" << 'EOF'
obj-m += siw.o
siw-y := siw_cm.o siw_cq.o siw_main.o siw_mem.o siw_qp.o siw_qp_rx.o siw_qp_tx.o siw_verbs.o
EOF
say "building siw.ko"
if ! make -C "$hdr" M="$work/siw" -j "$(nproc)" modules > "$work/siw.log" 2>&1; then
	tail -n 30 "$work/siw.log" >&2
	die "siw.ko did not build (log: $work/siw.log)"
fi
mkdir -p "$modroot/extra"
cp "$work/siw/siw.ko" "$modroot/extra/siw.ko"

# A second build whose connections start in peer-to-peer mode (RFC 6581
# §9.2): siw 6.1 has no run-time switch for it, only the constant
# peer_to_peer in siw_main.c.  It stays outside the module tree
# (/root/siw-p2p.ko) and replaces siw.ko when a scenario asks for it.
mkdir -p "$work/siw-p2p"
cp "$work/siw"/*.[ch] "$work/siw/Kbuild" "$work/siw-p2p/"
sed -i 's/^const bool peer_to_peer;$/const bool peer_to_peer = true;/' \
	"$work/siw-p2p/siw_main.c"
grep -qx 'const bool peer_to_peer = true;' "$work/siw-p2p/siw_main.c" ||
	die "siw_main.c has no 'const bool peer_to_peer;' to turn on"
say "building siw.ko with peer_to_peer on"
if ! make -C "$hdr" M="$work/siw-p2p" -j "$(nproc)" modules > "$work/siw-p2p.log" 2>&1; then
	tail -n 30 "$work/siw-p2p.log" >&2
	die "siw.ko (peer_to_peer) did not build (log: $work/siw-p2p.log)"
fi
depmod -b "$work/k" "$kver"

# resolve LIST MODULE...: appends to LIST the modules MODULE... need, in
# load order (from modules.dep), each once and none already in LIST or
# in $modlist.
resolve() {
	local list=$1 m path rel
	shift
	for m in "$@"; do
		modprobe -d "$work/k" -S "$kver" --show-depends "$m" > "$work/dep.txt" 2>&1 ||
			{ cat "$work/dep.txt" >&2; die "modprobe cannot resolve $m"; }
		awk '$1 == "insmod" { print $2 }' "$work/dep.txt" |
		while read -r path; do
			rel=${path#"$modroot"/}
			grep -qxF "$rel" "$modlist" "$list" || echo "$rel" >> "$list"
		done
	done
}
# Module load order, each module once; then those loaded on demand.
modlist=$work/modules
demandlist=$work/demand-modules
: > "$modlist"
: > "$demandlist"
resolve "$modlist" "${guest_modules[@]}"
grep -q 'extra/siw.ko' "$modlist" || die "siw.ko is not in the module list"
resolve "$demandlist" "${guest_demand_modules[@]}"

# ---------------------------------------------------------------- initramfs
root=$work/initramfs
mkdir -p "$root"/{bin,sbin,etc/uiw,etc/libibverbs.d,proc,sys,dev,tmp,run,root}
mkdir -p "$root"/usr/{bin,sbin,lib/x86_64-linux-gnu,lib64}
ln -s usr/lib "$root/lib"
ln -s usr/lib64 "$root/lib64"
bb=$(command -v busybox)
ldd "$bb" > /dev/null 2>&1 && die "$bb is not static (install busybox-static)"
cp "$bb" "$root/bin/busybox"
for a in $("$bb" --list); do
	[ -e "$root/bin/$a" ] || ln -s busybox "$root/bin/$a"
done
install -m 755 "$here/guest-init.sh" "$root/init"
ln -s ../init "$root/bin/uiw-bg"
ln -s ../init "$root/bin/uiw-waitport"

cat "$modlist" "$demandlist" | while read -r rel; do
	mkdir -p "$root/lib/modules/$kver/$(dirname "$rel")"
	cp "$modroot/$rel" "$root/lib/modules/$kver/$rel"
done
cp "$modlist" "$root/etc/uiw/modules"
# modules.dep of what the guest has, for busybox modprobe.
cp "$modroot/modules.order" "$modroot/modules.builtin" \
	"$modroot/modules.builtin.modinfo" "$root/lib/modules/$kver/" 2> /dev/null || true
depmod -b "$root" "$kver" || die "depmod failed on the initramfs"
[ -s "$root/lib/modules/$kver/modules.dep" ] || die "no modules.dep in the initramfs"
cp "$work/siw-p2p/siw.ko" "$root/root/siw-p2p.ko"

# Programs and every shared object they need, at the paths ldd names.
# (Under pipefail, a reader that stops early can kill the writer with
# SIGPIPE and fail the pipeline: these readers take everything.)
provider=$(dpkg -L ibverbs-providers |
	awk '!f && /\/libibverbs\/libsiw-rdmav[0-9]*\.so$/ { print; f = 1 }')
[ -n "$provider" ] || die "ibverbs-providers has no libsiw"
libgcc=$(ldconfig -p | awk '!f && $1 == "libgcc_s.so.1" && /x86-64/ { print $NF; f = 1 }')
[ -n "$libgcc" ] || die "no libgcc_s.so.1"
objs=()
for t in "${guest_tools[@]}"; do
	p=$(command -v "$t") || die "$t not found on the host"
	cp -L "$p" "$root/usr/bin/$t"
	objs+=("$p")
done
objs+=("$provider" "$libgcc")
copy_obj() {
	mkdir -p "$root$(dirname "$1")"
	[ -e "$root$1" ] || cp -L "$1" "$root$1"
}
copy_obj "$provider"
copy_obj "$libgcc"
for o in "${objs[@]}"; do
	ldd "$o" | awk '/=> \// { print $3 } /^[ \t]*\// { print $1 }'
done | sort -u | while read -r lib; do
	copy_obj "$lib"
done

# The NFS programs from the unpacked packages, with the shared objects
# they need: the host's, or those of the unpacked library packages (found
# through LD_LIBRARY_PATH, packed at their own paths).
nfslibpath=$nfsroot/lib/x86_64-linux-gnu:$nfsroot/usr/lib/x86_64-linux-gnu
for t in "${nfs_tools[@]}"; do
	p=
	for d in sbin usr/sbin bin usr/bin; do
		[ -f "$nfsroot/$d/$t" ] && { p=$nfsroot/$d/$t; break; }
	done
	[ -n "$p" ] || die "$t is in none of ${nfs_pkgs[*]}"
	cp -L "$p" "$root/usr/sbin/$t"
	LD_LIBRARY_PATH=$nfslibpath ldd "$p" > "$work/ldd.txt" 2>&1 ||
		{ cat "$work/ldd.txt" >&2; die "ldd $t failed"; }
	if grep -q 'not found' "$work/ldd.txt"; then
		grep 'not found' "$work/ldd.txt" >&2
		die "$t needs a shared object that neither the host nor ${nfs_dep_pkgs[*]:-(none)} has"
	fi
	awk '/=> \// { print $3 } /^[ \t]*\// { print $1 }' "$work/ldd.txt"
done | sort -u | while read -r lib; do
	case $lib in
	"$nfsroot"/*)
		rel=${lib#"$nfsroot"}
		mkdir -p "$root$(dirname "$rel")"
		cp -L "$lib" "$root$rel"
		;;
	*) copy_obj "$lib" ;;
	esac
done
# What the RPC programs read: libtirpc's transports, the RPC program and
# service names; the state knfsd's tools keep; an empty export table.
cp /etc/netconfig /etc/rpc /etc/services /etc/protocols "$root/etc/"
mkdir -p "$root/var/lib/nfs/rpc_pipefs" "$root/var/lib/nfs/v4recovery" \
	"$root/run/rpcbind"
: > "$root/etc/exports"
: > "$root/var/lib/nfs/etab"
: > "$root/var/lib/nfs/rmtab"
cp /etc/libibverbs.d/siw.driver "$root/etc/libibverbs.d/"
echo /usr/lib/x86_64-linux-gnu > "$root/etc/ld.so.conf"
ldconfig -r "$root" 2> /dev/null || true
# rpcbind drops root for the user _rpc (Debian's build); knfsd maps
# squashed users to nobody.
printf 'root:x:0:0:root:/root:/bin/sh\n_rpc:x:100:65534::/run/rpcbind:/bin/false\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' \
	> "$root/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' > "$root/etc/group"
printf '127.0.0.1 localhost\n10.0.2.15 uiw-guest\n' > "$root/etc/hosts"

# ---------------------------------------------------------------- info
siwsum=$(sha256sum "$work/siw/siw.ko" | awk '{ print $1 }')
{
	echo "kernel_package=$img_pkg"
	echo "kernel_version=$kpkgver"
	echo "kernel_release=$kver"
	echo "siw_source=linux-source-$kseries $kpkgver"
	echo "siw_ko_sha256=$siwsum"
	echo "host_packages=$hostvers"
	echo "modules=$(tr '\n' ' ' < "$modlist")"
	echo "demand_modules=$(tr '\n' ' ' < "$demandlist")"
	echo "nfs_packages=$(echo "$nfsvers" | tr ' \n' '= ')"
} > "$root/etc/uiw/info"

mkdir -p "$out"
(cd "$root" && find . | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet) |
	gzip -6 > "$out/initrd.gz.tmp"
cp "$work/k/boot/vmlinuz-$kver" "$out/vmlinuz.tmp"
mv "$out/initrd.gz.tmp" "$out/initrd.gz"
mv "$out/vmlinuz.tmp" "$out/vmlinuz"
cp "$root/etc/uiw/info" "$out/info"
rm -rf "$work"
echo "$key" > "$out/stamp"
say "done in $(($(date +%s) - t0))s: $out (kernel $kver, initrd $(du -k "$out/initrd.gz" | cut -f1) KiB)"
