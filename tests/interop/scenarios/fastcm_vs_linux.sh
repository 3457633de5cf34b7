#!/usr/bin/env bash
# fastcm against the Linux kernel CM, every topology in one boot of two VMs:
#   fastcm VM  ib_cm, rdma_cm and rdma_ucm kept out (asserted); fastcm's programs over umad on its
#              rxe0: fastcm-bench, the example rping_server and rping_client (RC QPs with data),
#              cm_peer (the CM events); at the end the kernel CM takes over for the anchor.
#   linux VM   the kernel CM on rxe0 (eth0, the socket link to the fastcm VM: topology B) and
#              rxe1 (eth1, a TAP in the test's network namespace: topology A, where fastcm-bench
#              runs on the host over the udp fabric).
# Both QEMUs run inside that namespace; nothing leaves it. Phases, in order (N = each count given):
#   A  Linux cmtime client -> fastcm-bench server (udp); fastcm-bench client -> Linux cmtime server
#   B  the same over umad; stock rping -c -v -V and ucmatose -> rping_server, with data, and a REQ
#      to a port nothing listens on (fastcm's REJ 8); rping_client -> stock rping -s, with data;
#      cm_peer's consumer REJ with private data -> rping -c; a slow cm_peer accepter (fastcm's
#      MRA) and one without MRA (Linux sends the REQ again); a stopped cmtime server (Linux's
#      delayed MRA) -> cm_peer; cm_peer to a port nothing listens on (Linux's REJ 8); cm_peer's
#      stale connection (a second REQ with a live QPN: Linux's REJ 10 and its DREQ of the first);
#      REQs to dead peers from both sides (retries until the timeout; Linux's runs in the
#      background from the start, ~100 s); every MAD sent twice (netem) while cmtime and
#      fastcm-bench connect both ways; then the anchor, cmtime Linux -> Linux in the same VMs.
# Each phase has an address of its own, by which its pcap is cut out of the captures; every CM MAD
# of every phase must decode with fastcm-mad and tshark. Figures: WORK_DIR/figures.
# Usage: fastcm_vs_linux.sh IMAGE_DIR WORK_DIR BIN_DIR N...
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../vm.sh"

interop_init "$1" "$2" "$3"
counts=("${@:4}")
cm_port=7471
unused_port=7999
host_bench="$bin_dir/bench/fastcm_bench/fastcm-bench"
bench=/mnt/bin/bench/fastcm_bench/fastcm-bench
rping_server=/mnt/bin/examples/rping_server/rping_server
rping_client=/mnt/bin/examples/rping_client/rping_client
cm_peer=/mnt/bin/tests/interop/cm_peer
fastcm_ip=192.168.77.1
fastcm_mac=52:54:00:77:00:01
anchor_ip=192.168.77.9        # the fastcm VM's address once the kernel CM has taken over
linux_ip=192.168.77.2
linux_mac=52:54:00:77:00:02
linux_tap_ip=10.77.0.2
dead_from_fastcm=192.168.77.99  # sent to the linux VM's MAC, which drops them
dead_from_linux=192.168.77.98   # sent to the fastcm VM's MAC, which drops them
reject_text="fastcm says no"

a_phases=()
b_phases=()
for n in "${counts[@]}"; do
  a_phases+=("a-linux-to-bench-$n" "a-bench-to-linux-$n")
  b_phases+=("b-linux-to-bench-$n" "b-bench-to-linux-$n")
done
event_phases=(linux-to-example example-to-linux reject-from-fastcm slow-accept retransmitted-req
              linux-delayed-mra no-listener-at-linux stale dead-from-fastcm dead-from-linux
              dup-linux-to-bench dup-bench-to-linux)
anchor_phases=()
for n in "${counts[@]}"; do anchor_phases+=("anchor-$n"); done
phase_addresses 10.77.0 "${a_phases[@]}"
phase_addresses 192.168.77 "${b_phases[@]}" "${event_phases[@]}" "${anchor_phases[@]}"
# dead-from-fastcm's packets carry only the fastcm VM's and the dead peer's addresses.
address[dead-from-fastcm]=$dead_from_fastcm
b_addresses=()
for phase in "${b_phases[@]}" "${event_phases[@]}" "${anchor_phases[@]}"; do
  [[ $phase == dead-from-fastcm ]] || b_addresses+=("${address[$phase]}/24")
done

# A fastcm-bench server admits all N connections half-open from one source at once: cmtime -c N
# sends every REQ before it waits for a REP, and over EngineConfig's default per-source budget
# (1024) fastcm answers REJ 3 (no resources), a bound Linux's CM does not have. The settings file
# (in the fastcm VM's run directory, /mnt/out there) raises the budget to N.
server_settings() {  # N: the settings file's name, written into WORK_DIR/fastcm
  mkdir -p "$work_dir/fastcm"
  printf '[engine]\nhalf_open_per_source = %s\n' "$(($1 > 1024 ? $1 : 1024))" \
    >"$work_dir/fastcm/server-$1.ini"
  echo "server-$1.ini"
}
bench_server() {  # the fastcm VM's fastcm-bench server for N connections
  echo "$bench --fabric umad --device rxe0 --role server --rdma-cm-port $cm_port -n $1" \
       "--config /mnt/out/$(server_settings "$1") --json"
}
# PHASE N [OPTION...]: the fastcm VM's fastcm-bench client to the phase's Linux address. Without
# --disconnect its rate is N over the time from the first REQ to the last connection established,
# as cmtime's connect step measures it; the connections are then disconnected by fastcm (DREQ).
bench_client() {
  echo "sh -c '$bench --fabric umad --device rxe0 --role client --rdma-cm-port $cm_port" \
       "--source-ip $fastcm_ip --target-ip ${address[$1]} -n $2 ${*:3} --json >/mnt/out/$1.json'"
}
peer_ready='^cm_peer: listening'
# What bounds a phase of N connections: the fixed bound plus 0.1 s per connection (the slowest
# direction, the Linux anchor under TCG, made about 19 connections/s at N = 100).
count_limit() { echo $((limit + $1 / 10)); }

{
  echo "net_up $fastcm_ip/24 $anchor_ip/24"
  echo "fastcm_owns_cm"
  echo "dead_peer $dead_from_fastcm $linux_mac"
  # The first server listens from boot and waits through topology A's phases too.
  server_limit=0
  for n in "${counts[@]}"; do server_limit=$((server_limit + 2 * $(count_limit "$n"))); done
  for n in "${counts[@]}"; do
    server_limit=$((server_limit + $(count_limit "$n")))
    echo "serve_fastcm b-linux-to-bench-$n $server_limit $(bench_server "$n")"
    server_limit=0
    echo "client b-bench-to-linux-$n $(count_limit "$n") $(bench_client "b-bench-to-linux-$n" "$n")"
  done
  # rping, 4 ucmatose connections; the REQ to the unused port is the engine's to refuse.
  echo "serve_program linux-to-example $limit '^rping_server: listening' $rping_server --connections 5"
  echo "client example-to-linux $limit $rping_client --target-ip ${address[example-to-linux]} -C 5"
  echo "serve_program reject-from-fastcm $limit '$peer_ready' $cm_peer serve --port $cm_port --reject '$reject_text'"
  echo "serve_program slow-accept $limit '$peer_ready' $cm_peer serve --port $cm_port --accept-delay 6000"
  echo "serve_program retransmitted-req $limit '$peer_ready' $cm_peer serve --port $cm_port --accept-delay 8000 --no-auto-mra"
  echo "client linux-delayed-mra $limit $cm_peer connect --target-ip ${address[linux-delayed-mra]} --port $cm_port --expect established"
  echo "client no-listener-at-linux $limit $cm_peer connect --target-ip ${address[no-listener-at-linux]} --port $unused_port --expect rejected --reason 8"
  echo "client stale $limit $cm_peer connect --target-ip ${address[stale]} --port $cm_port --expect stale"
  echo "client dead-from-fastcm $limit $cm_peer connect --target-ip $dead_from_fastcm --source-ip $fastcm_ip --port $cm_port --expect timeout --cm-retries 3"
  echo "duplicate_on"
  echo "serve_fastcm dup-linux-to-bench $limit $(bench_server 100)"
  echo "client dup-bench-to-linux $limit $(bench_client dup-bench-to-linux 100 --disconnect)"
  echo "duplicate_off"
  echo "kernel_cm_takes_over"
  for n in "${counts[@]}"; do echo "serve anchor-$n $(count_limit "$n") $anchor_ip cmtime -b $anchor_ip -p $cm_port"; done
} | vm_job fastcm

{
  echo "net_up $linux_ip/24 ${b_addresses[*]}"
  echo "nic_up eth1 $linux_tap_ip/24"
  echo "kernel_cm_up eth0 eth1"
  echo "dead_peer $dead_from_linux $fastcm_mac"
  echo "in_background dead-from-linux rping -c -a $dead_from_linux -I ${address[dead-from-linux]} -C 1"
  for n in "${counts[@]}"; do
    echo "client a-linux-to-bench-$n $(count_limit "$n") cmtime -b $linux_tap_ip -s ${address[a-linux-to-bench-$n]} -p $cm_port -c $n"
    echo "serve a-bench-to-linux-$n $(count_limit "$n") $linux_tap_ip cmtime -b $linux_tap_ip -p $cm_port"
  done
  for n in "${counts[@]}"; do
    echo "client b-linux-to-bench-$n $(count_limit "$n") cmtime -b ${address[b-linux-to-bench-$n]} -s $fastcm_ip -p $cm_port -c $n"
    echo "serve b-bench-to-linux-$n $(count_limit "$n") ${address[b-bench-to-linux-$n]} cmtime -b ${address[b-bench-to-linux-$n]} -p $cm_port"
  done
  x=${address[linux-to-example]}
  # eval, not sh -c: rping_checked is a function of the guest's job shell (guest/common.sh).
  echo "client linux-to-example $limit eval 'rping_checked 5 -a $fastcm_ip -I $x -V >/mnt/out/rping-in.log 2>&1 &&" \
       "ucmatose -b $x -s $fastcm_ip -c 4 >/mnt/out/ucmatose-in.log 2>&1 &&" \
       "! rping -c -a $fastcm_ip -I $x -p $unused_port -C 1 >/mnt/out/no-listener-at-fastcm.log 2>&1'"
  x=${address[example-to-linux]}
  echo "serve example-to-linux $limit $x rping -s -a $x -v -C 5"
  echo "client_refused reject-from-fastcm $limit rping -c -a $fastcm_ip -I ${address[reject-from-fastcm]} -p $cm_port -C 1"
  echo "client slow-accept $limit cmtime -b ${address[slow-accept]} -s $fastcm_ip -p $cm_port -c 1"
  echo "client retransmitted-req $limit cmtime -b ${address[retransmitted-req]} -s $fastcm_ip -p $cm_port -c 1"
  x=${address[linux-delayed-mra]}
  echo "serve_stopped 12 linux-delayed-mra $limit $x cmtime -b $x -p $cm_port"
  echo "no_server no-listener-at-linux $limit"
  echo "serve stale $limit ${address[stale]} cmtime -b ${address[stale]} -p $cm_port"
  echo "no_server dead-from-fastcm $limit"
  # Only the duplicate phases' packets: dead-from-linux's REQ retries go on meanwhile.
  echo "duplicate_on ${address[dup-linux-to-bench]} ${address[dup-bench-to-linux]}"
  echo "client dup-linux-to-bench $limit cmtime -b ${address[dup-linux-to-bench]} -s $fastcm_ip -p $cm_port -c 100"
  echo "serve dup-bench-to-linux $limit ${address[dup-bench-to-linux]} cmtime -b ${address[dup-bench-to-linux]} -p $cm_port"
  echo "duplicate_off"
  for n in "${counts[@]}"; do echo "client_within anchor-$n $(count_limit "$n") cmtime -b ${address[anchor-$n]} -s $anchor_ip -p $cm_port -c $n"; done
  echo "await_background dead-from-linux $limit"
} | vm_job linux

make_tap_netns 10.77.0.1/24
for phase in "${a_phases[@]}"; do in_netns ip addr add "${address[$phase]}/24" dev tap0; done
boot_pair fastcm linux 52:54:00:77:01:02 "$(tap_netdev)"
vm_booted fastcm 300
vm_booted linux 300

# Topology A: fastcm-bench on the host, in the namespace.
for n in "${counts[@]}"; do
  phase=a-linux-to-bench-$n
  # Not through in_netns: $! must be fastcm-bench itself (ip netns exec execs it), not a subshell.
  ip netns exec "$interop_netns" "$host_bench" --fabric udp --address "${address[$phase]}" --role server \
    --rdma-cm-port "$cm_port" -n "$n" --config "$work_dir/fastcm/$(server_settings "$n")" --json \
    >"$work_dir/$phase.json" 2>"$work_dir/$phase.err" &
  server=$!
  host_wait_listening "$work_dir/$phase.err" "$server" 60
  run_client_phase linux "$phase" "$(count_limit "$n")"
  stop_host_process "$server" 60 || { cat "$work_dir/$phase.err"; die "$phase: fastcm-bench server failed"; }

  phase=a-bench-to-linux-$n
  vm_wait_file linux "ready-$phase" "$(count_limit "$n")"
  in_netns timeout "$(count_limit "$n")" "$host_bench" --fabric udp --address "${address[$phase]}" --role client \
    --rdma-cm-port "$cm_port" --source-ip "${address[$phase]}" --target-ip "$linux_tap_ip" \
    --connections "$n" --json >"$work_dir/$phase.json" 2>"$work_dir/$phase.err" ||
    { cat "$work_dir/$phase.err"; die "$phase: fastcm-bench client failed"; }
  vm_signal linux "stop-$phase"
  log "$phase: done"
done

# Topology B, then the anchor.
for n in "${counts[@]}"; do
  run_phase fastcm linux "b-linux-to-bench-$n" "$(count_limit "$n")"
  run_phase linux fastcm "b-bench-to-linux-$n" "$(count_limit "$n")"
done
run_phase fastcm linux linux-to-example "$limit"
run_phase linux fastcm example-to-linux "$limit"
run_phase fastcm linux reject-from-fastcm "$limit"
run_phase fastcm linux slow-accept "$limit"
run_phase fastcm linux retransmitted-req "$limit"
run_phase linux fastcm linux-delayed-mra "$limit"
run_phase linux fastcm no-listener-at-linux "$limit"
run_phase linux fastcm stale "$limit"
run_phase linux fastcm dead-from-fastcm "$limit"
run_phase fastcm linux dup-linux-to-bench "$limit"
run_phase linux fastcm dup-bench-to-linux "$limit"
for n in "${counts[@]}"; do run_phase fastcm linux "anchor-$n" "$(count_limit "$n")"; done
vm_wait fastcm 120
vm_wait linux "$limit"

# ---- what each phase must show --------------------------------------------------------------
for m in ib_cm rdma_cm rdma_ucm; do
  ! grep -qx "$m" "$work_dir/fastcm/modules" || die "$m was loaded in the fastcm VM"
done
log "fastcm VM: ib_cm, rdma_cm and rdma_ucm absent while fastcm ran"
for phase in "${a_phases[@]}"; do
  check_pcap "$(phase_pcap linux-eth1 "$phase" "${address[$phase]}")"
done
for phase in "${b_phases[@]}" "${event_phases[@]}" "${anchor_phases[@]}"; do
  check_pcap "$(phase_pcap linux "$phase" "${address[$phase]}")"
done

# A cmtime client sends all N REQs before it waits for an answer; at N = 10,000 under emulation
# even the kernel CM's own server (the anchor) lost connections to REJ 28 (its backlog) and
# timeouts. Where the anchor lost some, a fastcm server is judged against it in the same run: it
# must accept at least as many as the anchor established. Where the anchor lost none, all N.
for n in "${counts[@]}"; do
  anchor_established=$((n - $(cmtime_failures "$work_dir/linux/anchor-$n.log")))
  bench_server_check "$work_dir/a-linux-to-bench-$n.json" "$n" "$anchor_established"
  bench_server_check "$work_dir/fastcm/b-linux-to-bench-$n.json" "$n" "$anchor_established"
done
for n in "${counts[@]}"; do
  cmtime_figure "$work_dir/linux/anchor-$n.log" "$n" "Linux -> Linux (anchor)"
  cmtime_figure "$work_dir/linux/b-linux-to-bench-$n.log" "$n" "Linux -> fastcm (umad)"
  bench_figure "$work_dir/fastcm/b-bench-to-linux-$n.json" "$n" "fastcm -> Linux (umad)"
  cmtime_figure "$work_dir/linux/a-linux-to-bench-$n.log" "$n" "Linux -> fastcm (udp)"
  bench_figure "$work_dir/a-bench-to-linux-$n.json" "$n" "fastcm (udp) -> Linux"
done

# Data: the pings each side saw, in order, must be the same.
same_pings() {  # CLIENT_LOG SERVER_LOG COUNT WHAT
  local pings
  pings=$(grep -c '^ping data: rdma-ping-' "$1" || true)
  ((pings == $3)) || die "$4: $pings of $3 pings came back ($1)"
  diff <(sed -n 's/^ping data: //p' "$1") <(sed -n 's/^server ping data: //p' "$2") >/dev/null ||
    die "$4: the ping data the client got back differs from what the server read"
  log "$4: $3 pings, the same data on both sides"
}
same_pings "$work_dir/linux/rping-in.log" "$work_dir/fastcm/linux-to-example.log" 5 "rping -> rping_server"
grep -q '^return status 0' "$work_dir/linux/ucmatose-in.log" || die "ucmatose -> rping_server did not succeed"
grep -q '^rping_server: 5 connections ended, 0 failed; 5 pings verified, 40 ucmatose messages received' \
  "$work_dir/fastcm/linux-to-example.log" || die "rping_server did not serve all 5 connections"
log "ucmatose -> rping_server: 4 connections, 10 messages each way, the server disconnected them"
expect_mads linux-to-example '.message == "rej" and .fields.reason == 8' "fastcm's REJ 8 for the unused port"
same_pings "$work_dir/fastcm/example-to-linux.log" "$work_dir/linux/example-to-linux.log" 5 "rping_client -> rping -s"

grep -q 'RDMA_CM_EVENT_REJECTED, error 28' "$work_dir/linux/reject-from-fastcm.log" ||
  die "reject-from-fastcm: rping did not report REJ 28"
expect_mads reject-from-fastcm ".message == \"rej\" and .fields.reason == 28 and
  (.fields.private_data | startswith(\"$(printf '%s' "$reject_text" | od -An -tx1 | tr -d ' \n')\"))" \
  "fastcm's REJ 28 with its private data"
expect_mads slow-accept ".message == \"mra\" and .src == \"::ffff:$fastcm_ip\"" "fastcm's MRA"
expect_mads slow-accept '.message == "rtu"' "the RTU after fastcm's MRA and late REP"
expect_mads retransmitted-req '.message == "req"' "Linux's REQ and its retransmission" 2
grep -Eq '^counters req sent=0 received=[0-9]+ retried=0 duplicate=[1-9]' "$work_dir/fastcm/retransmitted-req.log" ||
  die "retransmitted-req: fastcm counted no duplicate REQ"
expect_mads retransmitted-req '.message == "rtu"' "the RTU after the late REP"
grep -q '^event mra_received' "$work_dir/fastcm/linux-delayed-mra.log" || die "linux-delayed-mra: cm_peer saw no MRA"
expect_mads linux-delayed-mra ".message == \"mra\" and .src == \"::ffff:${address[linux-delayed-mra]}\"" "Linux's delayed MRA"
expect_mads no-listener-at-linux '.message == "rej" and .fields.reason == 8' "Linux's REJ 8"
expect_mads stale '.message == "rej" and .fields.reason == 10' "Linux's REJ 10 (stale connection)"
expect_mads stale ".message == \"dreq\" and .src == \"::ffff:${address[stale]}\"" "Linux's DREQ of the first connection"
expect_mads dead-from-fastcm '.message == "req"' "cm_peer's REQ and its 3 retries" 4
# fastcm tells the silent peer it gave up (REJ "timeout", its CA GUID as ARI), in case only the
# answers were lost; Linux' ib_cm sends that REJ only when its consumer destroys a waiting ID.
expect_mads dead-from-fastcm ".message == \"rej\" and .fields.reason == 4 and .src == \"::ffff:$fastcm_ip\"" \
  "cm_peer's REJ timeout once the retries ran out" 1
expect_mads dead-from-fastcm '.message != "req" and .message != "rej"' "answers from the dead peer" 0
[[ $(cat "$work_dir/linux/dead-from-linux.status") != 0 ]] &&
  grep -q 'RDMA_CM_EVENT_UNREACHABLE' "$work_dir/linux/dead-from-linux.log" ||
  die "dead-from-linux: rping did not end with RDMA_CM_EVENT_UNREACHABLE"
expect_mads dead-from-linux '.message == "req"' "Linux's REQ and its 15 retries" 16
expect_mads dead-from-linux '.message != "req"' "other MADs (Linux sends no REJ when its retries run out)" 0
bench_server_check "$work_dir/fastcm/dup-linux-to-bench.json" 100
jq -e '.counters.duplicates_received > 0' "$work_dir/fastcm/dup-linux-to-bench.json" >/dev/null ||
  die "dup-linux-to-bench: fastcm-bench counted no duplicate"
bench_figure "$work_dir/fastcm/dup-bench-to-linux.json" 100 "fastcm -> Linux, every MAD twice"
log "all phases as expected"
