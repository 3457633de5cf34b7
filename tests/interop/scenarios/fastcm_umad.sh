#!/usr/bin/env bash
# Topology B with fastcm in a VM: fastcm-bench over the umad fabric on that VM's rxe device (the
# kernel CM kept out: ib_cm, rdma_cm and rdma_ucm must be absent) <-> the Linux kernel CM in a
# second VM, the two joined by QEMU's socket netdev on 127.0.0.1. For each N: a Linux cmtime
# client -> a fastcm-bench server, then a fastcm-bench client -> a Linux cmtime server. The Linux
# VM uses an address of its own per phase, by which each phase's pcap is cut out of the capture.
# Usage: fastcm_umad.sh IMAGE_DIR WORK_DIR BIN_DIR N...
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../vm.sh"

interop_init "$1" "$2" "$3"
counts=("${@:4}")
cm_port=7471
bench=/mnt/bin/bench/fastcm_bench/fastcm-bench
fastcm_ip=192.168.77.1
phases=()
for n in "${counts[@]}"; do phases+=("linux-to-fastcm-$n" "fastcm-to-linux-$n"); done
phase_addresses 192.168.77 "${phases[@]}"

{
  echo "net_up $fastcm_ip/24"
  echo "fastcm_owns_cm"
  for n in "${counts[@]}"; do
    echo "serve_fastcm linux-to-fastcm-$n $limit $bench --fabric umad --device rxe0 --role server" \
         "--rdma-cm-port $cm_port -n $n --json"
    phase=fastcm-to-linux-$n
    echo "client $phase $limit sh -c '$bench --fabric umad --device rxe0 --role client" \
         "--rdma-cm-port $cm_port --source-ip $fastcm_ip --target-ip ${address[$phase]} -n $n" \
         "--disconnect --json >/mnt/out/$phase.json'"
  done
} | vm_job fastcm
{
  echo "net_up 192.168.77.2/24 ${address[*]/%//24}"
  echo "kernel_cm_up"
  for n in "${counts[@]}"; do
    phase=linux-to-fastcm-$n
    echo "client $phase $limit cmtime -b ${address[$phase]} -s $fastcm_ip -p $cm_port -c $n"
    phase=fastcm-to-linux-$n
    echo "serve $phase $limit ${address[$phase]} cmtime -b ${address[$phase]} -p $cm_port"
  done
} | vm_job linux

boot_pair fastcm linux
vm_booted fastcm 300
vm_booted linux 300
for n in "${counts[@]}"; do
  run_phase fastcm linux "linux-to-fastcm-$n" "$limit"
  run_phase linux fastcm "fastcm-to-linux-$n" "$limit"
done
vm_wait fastcm 120
vm_wait linux 120

for m in ib_cm rdma_cm rdma_ucm; do
  ! grep -qx "$m" "$work_dir/fastcm/modules" || die "$m was loaded in the fastcm VM"
done
for m in rdma_rxe ib_umad; do
  grep -qx "$m" "$work_dir/fastcm/modules" || die "$m was not loaded in the fastcm VM"
done
log "fastcm VM: ib_cm, rdma_cm and rdma_ucm absent; ib_umad and rdma_rxe loaded"
for n in "${counts[@]}"; do
  bench_server_check "$work_dir/fastcm/linux-to-fastcm-$n.json" "$n"
  cmtime_figure "$work_dir/linux/linux-to-fastcm-$n.log" "$n" "Linux -> fastcm (umad)"
  bench_figure "$work_dir/fastcm/fastcm-to-linux-$n.json" "$n" "fastcm (umad) -> Linux"
done
for phase in "${phases[@]}"; do
  check_pcap "$(phase_pcap linux "$phase" "${address[$phase]}")"
done
