#!/usr/bin/env bash
# The anchor: the Linux kernel CM on both sides, two VMs joined by QEMU's socket netdev
# (topology B). A cmtime client -> cmtime server run for each N given, then rping with data
# (rping -c -v -C 5). Each phase talks to a server address of its own, by which its pcap is cut
# out of the capture; every CM MAD in each must decode (check_pcap).
# Usage: linux_linux.sh IMAGE_DIR WORK_DIR BIN_DIR N...
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../vm.sh"

interop_init "$1" "$2" "$3"
counts=("${@:4}")
phases=()
for n in "${counts[@]}"; do phases+=("cmtime-$n"); done
phases+=(rping)
phase_addresses 192.168.77 "${phases[@]}"

{
  echo "net_up 192.168.77.1/24 ${address[*]/%//24}"
  echo "kernel_cm_up"
  for n in "${counts[@]}"; do echo "serve cmtime-$n $limit ${address[cmtime-$n]} cmtime -b ${address[cmtime-$n]}"; done
  echo "serve rping $limit ${address[rping]} rping -s -a ${address[rping]} -v -C 5"
} | vm_job server
{
  echo "net_up 192.168.77.2/24"
  echo "kernel_cm_up"
  for n in "${counts[@]}"; do echo "client cmtime-$n $limit cmtime -s ${address[cmtime-$n]} -c $n"; done
  echo "rping_client rping $limit 5 -a ${address[rping]}"
} | vm_job client

boot_pair server client
vm_booted server 300
vm_booted client 300
for phase in "${phases[@]}"; do
  run_phase server client "$phase" "$limit"
done
vm_wait server 120
vm_wait client 120

for n in "${counts[@]}"; do
  cmtime_figure "$work_dir/client/cmtime-$n.log" "$n" "Linux -> Linux"
done
# The server prints each ping's data as it received it (RDMA read), the client as it came back
# (RDMA write): the same 5 lines on both sides.
pings=$(grep -c '^ping data: rdma-ping-' "$work_dir/client/rping.log" || true)
((pings == 5)) || die "rping: $pings of 5 pings came back (client/rping.log)"
diff <(sed -n 's/^ping data: //p' "$work_dir/client/rping.log") \
     <(sed -n 's/^server ping data: //p' "$work_dir/server/rping.log") >/dev/null ||
  die "rping: the data the client got back differs from what the server received"
log "rping: 5 pings, the same data on both sides"
for phase in "${phases[@]}"; do
  check_pcap "$(phase_pcap client "$phase" "${address[$phase]}")"
done
