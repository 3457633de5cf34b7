#!/usr/bin/env bash
# Builds the Debian bookworm VM image the interop tests boot: a root file system image (ext4, made
# without a loop mount), the stock kernel and an initramfs that can find a virtio root disk.
#
# Usage: build_image.sh OUT_DIR [BINARY...]
#   OUT_DIR  receives rootfs.ext4, vmlinuz, initrd.img and key (the cache key of what is there)
#   BINARY   fastcm programs to run inside the VM: the Debian packages holding the shared libraries
#            they link (ldd, then dpkg -S on the host, which runs the same bookworm) are installed
#            into the image, so a program that starts linking a new library gets it
#
# The image is rebuilt only when its key changes: a hash of this script and of the package list.
# debootstrap downloads from the first mirror apt itself uses here (the URIs: line of
# /etc/apt/sources.list.d/debian.sources). Needs root (debootstrap, chroot). Exits non-zero, with
# debootstrap's log printed, when the build fails; a failed build leaves no key, so the next call
# starts again.
set -euo pipefail

out=${1:?usage: build_image.sh OUT_DIR [BINARY...]}
shift

# What the guest scripts run: the kernel CM and Soft-RoCE tools, captures, and the tools the
# scripts themselves call.
packages=(
  linux-image-amd64 kmod initramfs-tools
  rdma-core ibverbs-providers ibverbs-utils rdmacm-utils perftest
  iproute2 tcpdump procps
  # What fastcm's umad fabric opens, named even before a binary links it, so that the first
  # binary that does leaves the image as it is.
  libibumad3 libibverbs1
)

# The packages that hold the libraries BINARY links, from the host's dpkg database. A package
# records a library under the path it installed, which may differ from the one the loader found
# (/lib vs /usr/lib on a merged-/usr system, or a symlink's target), so every spelling is tried.
runtime_packages() {
  local lib real holders
  for lib in $(ldd "$@" | awk '$2 == "=>" && $3 ~ /^\// { print $3 }' | sort -u); do
    real=$(readlink -f "$lib")
    holders=$(grep -lxF -e "$lib" -e "/usr$lib" -e "${lib#/usr}" -e "$real" -e "/usr$real" \
                -e "${real#/usr}" /var/lib/dpkg/info/*.list) ||
      { echo "build_image: no Debian package holds $lib" >&2; return 1; }
    basename -a $holders
  done | sed 's/\.list$//; s/:.*$//' | sort -u
}

linked=$(runtime_packages "$@")
# libc6 and libgcc-s1 are in every minbase system already; naming them is harmless.
packages+=($linked)
# DPDK's shared EAL loads its drivers from a plugin directory at run time, out of ldd's sight; the
# ring mempool driver ("ring_mp_mc", what rte_mempool_create uses) is the one fastcm needs. Same
# ABI as the EAL linked.
if [[ $linked =~ librte-eal([0-9]+) ]]; then
  packages+=("librte-mempool-ring${BASH_REMATCH[1]}")
fi
package_list=$(printf '%s\n' "${packages[@]}" | sort -u | paste -sd, -)

key=$( { cat "${BASH_SOURCE[0]}"; echo "$package_list"; } | sha256sum | cut -d' ' -f1)
if [[ -f $out/key && $(cat "$out/key") == "$key" && -f $out/rootfs.ext4 && -f $out/vmlinuz &&
      -f $out/initrd.img ]]; then
  echo "build_image: $out is up to date (key $key)"
  exit 0
fi

mirror=$(awk '$1 == "URIs:" { print $2; exit }' /etc/apt/sources.list.d/debian.sources)
if [[ -z $mirror ]]; then
  echo "build_image: no URIs: line in /etc/apt/sources.list.d/debian.sources" >&2
  exit 1
fi

rm -rf "$out"
mkdir -p "$out"
root="$out/rootfs"
log="$out/debootstrap.log"
echo "build_image: debootstrap bookworm from $mirror into $root (log: $log)"
echo "build_image: packages: $package_list"
if ! debootstrap --variant=minbase --include="$package_list" bookworm "$root" "$mirror" >"$log" 2>&1; then
  tail -n 50 "$log" >&2
  [[ -f $root/debootstrap/debootstrap.log ]] && tail -n 50 "$root/debootstrap/debootstrap.log" >&2
  exit 1
fi

# Without udev nothing loads the virtio drivers, so the initramfs must carry the root disk's; only
# those (MODULES=list, with their dependencies): the default, most of the kernel's drivers, makes
# an initramfs about 4 times larger that the emulated CPU spends seconds unpacking at every boot.
printf '%s\n' virtio_pci virtio_blk ext4 >>"$root/etc/initramfs-tools/modules"
sed -i 's/^MODULES=.*/MODULES=list/' "$root/etc/initramfs-tools/initramfs.conf"
chroot "$root" update-initramfs -u -k all >>"$log" 2>&1

# The guest's PID 1 (the kernel's init=): mounts what the guest scripts need and the 9p share
# "out" (the run directory), runs out/job.sh with its output in out/job.log, writes its exit
# status to out/status and powers off. The job's own scripts and fastcm's binaries come through
# the shares "scripts" and "bin", so changing them never rebuilds the image.
cat >"$root/sbin/fastcm-init" <<'EOF'
#!/bin/sh
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mkdir -p /dev/pts /dev/shm /run /tmp
mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /dev/shm
mount -t tmpfs tmpfs /run
mount -t tmpfs tmpfs /tmp
hostname -F /etc/hostname
ip link set lo up
modprobe 9pnet_virtio
modprobe 9p
for tag in out scripts bin; do
  mkdir -p "/mnt/$tag"
  mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 "$tag" "/mnt/$tag" 2>/dev/null
done
if [ -f /mnt/out/job.sh ]; then
  sh /mnt/out/job.sh >/mnt/out/job.log 2>&1
  echo $? >/mnt/out/status
else
  echo "fastcm-init: no job.sh on the share out" >/dev/console
fi
sync
umount /mnt/out 2>/dev/null
# minbase has no init system and so no poweroff; sysrq "o" powers off at once.
echo o >/proc/sysrq-trigger
EOF
chmod 755 "$root/sbin/fastcm-init"
echo fastcm-vm >"$root/etc/hostname"

cp "$(readlink -f "$root/vmlinuz")" "$out/vmlinuz"
cp "$(readlink -f "$root/initrd.img")" "$out/initrd.img"
# Room for captures and logs the guest writes on its root disk (snapshot=on discards them).
size_mb=$(($(du -sm "$root" | cut -f1) + 512))
mkfs.ext4 -q -F -L fastcm-root -d "$root" "$out/rootfs.ext4" "${size_mb}M" >>"$log" 2>&1
rm -rf "$root"
echo "$key" >"$out/key"
echo "build_image: built $out (key $key)"
