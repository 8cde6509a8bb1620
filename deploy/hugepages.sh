#!/usr/bin/env bash
# Prepare a host for wirespeed-dataplane: reserve hugepages, mount hugetlbfs, and bind NICs
# to vfio-pci with DPDK's dpdk-devbind.py. Idempotent: safe to run before every start.
#
#   hugepages.sh [--dry-run] [--pages N] [--size 2M|1G] [--node N] [--mount DIR]
#                [--bind PCI]... [--bind-list "PCI PCI ..."] [--driver vfio-pci]
#
#   --dry-run     print what would be done, change nothing (no root needed)
#   --pages N     hugepages to reserve (0: leave the reservation alone)
#   --size        page size, 2M (default) or 1G
#   --node N      reserve on this NUMA node only (default: system-wide)
#   --mount DIR   hugetlbfs mount point (default /dev/hugepages)
#   --bind PCI    bind this NIC (e.g. 0000:03:00.0) to the driver; repeatable
#   --bind-list   the same, several addresses in one (possibly empty) argument
#   --driver D    driver to bind to (default vfio-pci)
set -euo pipefail

dry_run=0
pages=0
size=2M
node=""
mount_dir=/dev/hugepages
driver=vfio-pci
bind=()

usage() { sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; }
die() { echo "hugepages.sh: $*" >&2; exit 1; }

while [[ $# -gt 0 ]]; do
  case "$1" in
    --dry-run) dry_run=1 ;;
    --pages) pages="${2:?--pages needs N}"; shift ;;
    --size) size="${2:?--size needs 2M or 1G}"; shift ;;
    --node) node="${2:?--node needs N}"; shift ;;
    --mount) mount_dir="${2:?--mount needs DIR}"; shift ;;
    --bind) bind+=("${2:?--bind needs a PCI address}"); shift ;;
    --bind-list) read -r -a more <<<"${2-}"; bind+=("${more[@]}"); shift ;;
    --driver) driver="${2:?--driver needs a name}"; shift ;;
    -h|--help) usage; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
  shift
done

[[ "$pages" =~ ^[0-9]+$ ]] || die "--pages must be a number, not '$pages'"
case "$size" in
  2M|2048|2048kB) size_kb=2048; size=2M ;;
  1G|1048576|1048576kB) size_kb=1048576; size=1G ;;
  *) die "--size must be 2M or 1G, not '$size'" ;;
esac
for pci in "${bind[@]}"; do
  [[ "$pci" =~ ^([0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$ ]] ||
    die "'$pci' is not a PCI address like 0000:03:00.0"
done

# Every change goes through run(): printed under --dry-run, executed otherwise.
run() {
  if [[ $dry_run -eq 1 ]]; then
    echo "would run: $*"
  else
    echo "+ $*"
    "$@"
  fi
}
write() {  # write VALUE FILE
  if [[ $dry_run -eq 1 ]]; then
    echo "would write: $1 > $2"
  else
    echo "+ echo $1 > $2"
    echo "$1" >"$2"
  fi
}

if [[ $dry_run -eq 0 && $EUID -ne 0 ]]; then
  die "must run as root (or use --dry-run)"
fi

# 1. Reserve hugepages.
if [[ $pages -gt 0 ]]; then
  if [[ -n "$node" ]]; then
    nr="/sys/devices/system/node/node${node}/hugepages/hugepages-${size_kb}kB/nr_hugepages"
  else
    nr="/sys/kernel/mm/hugepages/hugepages-${size_kb}kB/nr_hugepages"
  fi
  current=$(cat "$nr" 2>/dev/null || echo "?")
  if [[ "$current" == "$pages" ]]; then
    echo "hugepages: $pages x $size already reserved"
  else
    echo "hugepages: $current -> $pages x $size"
    write "$pages" "$nr"
    if [[ $dry_run -eq 0 ]]; then
      got=$(cat "$nr")
      # The kernel reserves what it can: fragmented memory gives fewer pages than asked.
      [[ "$got" -ge "$pages" ]] || die "asked for $pages hugepages of $size, got $got (memory fragmented? reserve at boot: hugepages=$pages)"
    fi
  fi

  # 2. Mount hugetlbfs for this page size.
  if grep -qs " ${mount_dir} hugetlbfs " /proc/mounts; then
    echo "hugetlbfs: already mounted at $mount_dir"
  else
    run mkdir -p "$mount_dir"
    run mount -t hugetlbfs -o "pagesize=${size}" nodev "$mount_dir"
  fi
fi

# 3. Bind NICs.
if [[ ${#bind[@]} -gt 0 ]]; then
  devbind=$(command -v dpdk-devbind.py || true)
  for candidate in /usr/bin/dpdk-devbind.py /usr/share/dpdk/usertools/dpdk-devbind.py \
                   /usr/local/bin/dpdk-devbind.py; do
    [[ -z "$devbind" && -x "$candidate" ]] && devbind=$candidate
  done
  if [[ -z "$devbind" ]]; then
    [[ $dry_run -eq 1 ]] || die "dpdk-devbind.py not found (package dpdk)"
    devbind=dpdk-devbind.py
  fi
  if [[ "$driver" == vfio-pci ]]; then
    run modprobe vfio-pci
  fi
  for pci in "${bind[@]}"; do
    [[ "$pci" =~ ^[0-9a-fA-F]{4}: ]] || pci="0000:$pci"
    current=$(basename "$(readlink "/sys/bus/pci/devices/$pci/driver" 2>/dev/null)" 2>/dev/null || true)
    if [[ "$current" == "$driver" ]]; then
      echo "nic $pci: already bound to $driver"
    else
      echo "nic $pci: ${current:-no driver} -> $driver"
      run "$devbind" --bind="$driver" "$pci"
    fi
  done
fi
exit 0
