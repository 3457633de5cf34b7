#!/usr/bin/env bash
# What the Linux kernel CM itself does, between two kernel-CM VMs (topology B), as the reference
# for fastcm's behaviour: a REQ to a port nothing listens on (REJ reason 8, invalid service ID; a
# port that a listener on another address of the VM holds gets reason 28, consumer reject, from
# rdma_cm instead, as ib_cm listens by service ID alone), a slow accepter (the listener stopped for 12 s: rdma_cm's delayed MRA answers the
# retransmitted REQ, then the connection completes), and ucmatose's 10 connections with data.
# Usage: linux_linux_events.sh IMAGE_DIR WORK_DIR BIN_DIR
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../vm.sh"

interop_init "$1" "$2" "$3"
unused_port=7999
phases=(no-listener slow-accept ucmatose)
phase_addresses 192.168.77 "${phases[@]}"

vm_job server <<EOF2
net_up 192.168.77.1/24 ${address[no-listener]}/24 ${address[slow-accept]}/24 ${address[ucmatose]}/24
kernel_cm_up
no_server no-listener $limit
serve_stopped 12 slow-accept $limit ${address[slow-accept]} rping -s -a ${address[slow-accept]} -v -C 1
serve ucmatose $limit ${address[ucmatose]} ucmatose -b ${address[ucmatose]} -c 10
EOF2
vm_job client <<EOF2
net_up 192.168.77.2/24
kernel_cm_up
client_refused no-listener $limit rping -c -a ${address[no-listener]} -p $unused_port -v -C 1
rping_client slow-accept $limit 1 -a ${address[slow-accept]}
client ucmatose $limit ucmatose -s ${address[ucmatose]} -c 10
EOF2

boot_pair server client
vm_booted server 300
vm_booted client 300
run_phase server client no-listener "$limit"
run_phase server client slow-accept "$limit"
run_phase server client ucmatose "$limit"
vm_wait server 120
vm_wait client 120

for phase in "${phases[@]}"; do
  check_pcap "$(phase_pcap client "$phase" "${address[$phase]}")"
done
mads_of() { grep "\"message\":\"$2\"" "$work_dir/$1.mads.json" || true; }
[[ -n $(mads_of no-listener rej | grep '"reason":8') ]] ||
  die "no-listener: no REJ with reason 8 (invalid service ID) in no-listener.pcap"
[[ -n $(mads_of slow-accept mra) ]] || die "slow-accept: no MRA in slow-accept.pcap"
[[ -n $(mads_of slow-accept rtu) ]] || die "slow-accept: the connection was not established after the MRA"
log "no-listener: REJ reason 8; slow-accept: $(mads_of slow-accept mra | wc -l) MRA(s), then RTU"
