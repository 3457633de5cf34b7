#!/usr/bin/env bash
# Topology A: fastcm on the host over the udp fabric <-> the Linux kernel CM in a VM, the VM on a
# TAP device inside a network namespace this test creates (fastcm runs in that namespace; nothing
# leaves it). CM only: the host side has no RDMA device. For each N: a Linux cmtime client -> a
# fastcm-bench server, then a fastcm-bench client -> a Linux cmtime server. Each phase uses a
# host-side address of its own, by which its pcap is cut out of the TAP's capture.
# Usage: fastcm_udp.sh IMAGE_DIR WORK_DIR BIN_DIR N...
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../vm.sh"

interop_init "$1" "$2" "$3"
counts=("${@:4}")
cm_port=7471
bench="$bin_dir/bench/fastcm_bench/fastcm-bench"
guest_ip=10.77.0.2
phases=()
for n in "${counts[@]}"; do phases+=("linux-to-fastcm-$n" "fastcm-to-linux-$n"); done
phase_addresses 10.77.0 "${phases[@]}"

make_tap_netns 10.77.0.1/24
for phase in "${phases[@]}"; do in_netns ip addr add "${address[$phase]}/24" dev tap0; done

{
  echo "net_up $guest_ip/24"
  echo "kernel_cm_up"
  for n in "${counts[@]}"; do
    echo "client linux-to-fastcm-$n $limit cmtime -s ${address[linux-to-fastcm-$n]} -p $cm_port -c $n"
    echo "serve fastcm-to-linux-$n $limit $guest_ip cmtime -b $guest_ip -p $cm_port"
  done
} | vm_job linux
boot_on_tap linux 52:54:00:77:01:02
vm_booted linux 300

for n in "${counts[@]}"; do
  phase=linux-to-fastcm-$n
  # Not through in_netns: $! must be fastcm-bench itself (ip netns exec execs it), not a subshell.
  ip netns exec "$interop_netns" "$bench" --fabric udp --address "${address[$phase]}" --role server \
    --rdma-cm-port "$cm_port" -n "$n" --json >"$work_dir/$phase.json" 2>"$work_dir/$phase.err" &
  server=$!
  host_wait_listening "$work_dir/$phase.err" "$server" 60
  run_client_phase linux "$phase" "$limit"
  stop_host_process "$server" 60 || { cat "$work_dir/$phase.err"; die "$phase: fastcm-bench server failed"; }
  bench_server_check "$work_dir/$phase.json" "$n"
  cmtime_figure "$work_dir/linux/$phase.log" "$n" "Linux -> fastcm (udp)"

  phase=fastcm-to-linux-$n
  vm_wait_file linux "ready-$phase" "$limit"
  in_netns timeout "$limit" "$bench" --fabric udp --address "${address[$phase]}" --role client \
    --rdma-cm-port "$cm_port" --source-ip "${address[$phase]}" --target-ip "$guest_ip" \
    --connections "$n" --disconnect --json >"$work_dir/$phase.json" 2>"$work_dir/$phase.err" ||
    { cat "$work_dir/$phase.err"; die "$phase: fastcm-bench client failed"; }
  vm_signal linux "stop-$phase"
  bench_figure "$work_dir/$phase.json" "$n" "fastcm (udp) -> Linux"
done
vm_wait linux 120

for phase in "${phases[@]}"; do
  check_pcap "$(phase_pcap linux "$phase" "${address[$phase]}")"
done
