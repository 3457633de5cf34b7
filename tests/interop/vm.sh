# The host side of the interop tests (bash, sourced by the scenario scripts): boots QEMU VMs of the
# image build_image.sh makes, joins them by QEMU's socket netdev on 127.0.0.1 (topology B) or puts
# one on a TAP device inside a network namespace created here (topology A), and hands each guest a
# job through its run directory, shared over 9p as "out". Every packet stays on this machine.
#
# The guest's init (in the image) runs out/job.sh, writes its exit status to out/status and powers
# off. The guest scripts are shared read-only as "scripts" (tests/interop/guest), the build tree's
# binaries as "bin". Whatever happens, an EXIT trap kills the QEMUs started here and deletes the
# network namespace.
# shellcheck shell=bash

interop_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

# Set by interop_init.
image_dir=""
work_dir=""
bin_dir=""
declare -A vm_pids=()
interop_netns=""
# What bounds each wait of a scenario's phase, in seconds (under TCG on a loaded host, 1,000
# connections take about a minute).
limit=600
# Each phase's own address (phase_addresses).
declare -A address=()

log() { echo "interop: $*"; }
die() {
  echo "interop: FAILED: $*" >&2
  exit 1
}

# interop_init IMAGE_DIR WORK_DIR BIN_DIR: the image to boot, a directory for this scenario's run
# directories, pcaps and logs (emptied first), and the build tree shared with the guests as "bin".
interop_init() {
  image_dir=$1
  work_dir=$2
  bin_dir=$3
  [[ -f $image_dir/key ]] || die "no VM image in $image_dir (build_image.sh builds it)"
  rm -rf "$work_dir"
  mkdir -p "$work_dir"
  trap interop_cleanup EXIT
  # A signal (ctest's timeout, ^C) ends the script through its EXIT trap too.
  trap 'exit 143' TERM
  trap 'exit 130' INT
  remove_stale_netns
}

# Deletes the namespaces of earlier runs whose script is gone (killed too hard to clean up).
remove_stale_netns() {
  local ns
  for ns in $(ip netns list | awk '$1 ~ /^fastcm-interop-[0-9]+$/ { print $1 }'); do
    if ! kill -0 "${ns#fastcm-interop-}" 2>/dev/null; then
      log "deleting the stale network namespace $ns"
      ip netns delete "$ns"
    fi
  done
}

interop_cleanup() {
  local name pid
  for name in "${!vm_pids[@]}"; do
    pid=${vm_pids[$name]}
    if kill -0 "$pid" 2>/dev/null; then
      log "killing VM $name (QEMU pid $pid)"
      kill "$pid" 2>/dev/null
      wait "$pid" 2>/dev/null
    fi
  done
  vm_pids=()
  if [[ -n $interop_netns ]]; then
    ip netns delete "$interop_netns" 2>/dev/null
    interop_netns=""
  fi
}

# Prints a TCP port on 127.0.0.1 (of interop_netns when set) that nothing listens on, from a range
# picked by this process's PID so that concurrent runs rarely try the same one. QEMU's listen fails
# if it is taken meanwhile.
free_port() {
  local port
  for ((port = 20000 + ($$ * 7) % 30000; port < 65000; port++)); do
    if [[ -z $(in_netns ss -Hltn "sport = :$port") ]]; then
      echo "$port"
      return 0
    fi
  done
  die "no free TCP port on 127.0.0.1"
}

# phase_addresses NET PHASE...: gives each PHASE the address NET.(10 + its position) in `address`:
# the one address its traffic has, which tells its packets apart in a capture (phase_pcap).
phase_addresses() {
  local net=$1 i=10 phase
  shift
  for phase in "$@"; do
    address[$phase]=$net.$i
    i=$((i + 1))
  done
}

# vm_job NAME: creates the run directory of VM NAME and writes its job from stdin (sh, run by the
# guest's init after sourcing the guest helpers).
vm_job() {
  local dir="$work_dir/$1"
  mkdir -p "$dir"
  { echo ". /mnt/scripts/common.sh"; cat; } >"$dir/job.sh"
}

# vm_boot NAME MAC NETDEV [MAC NETDEV]...: starts VM NAME in the background with a virtio NIC per
# MAC NETDEV pair (eth0, eth1, ... in the guest) on the QEMU netdev NETDEV (its options after
# "-netdev", without id), and captures each NIC's traffic (QEMU's filter-dump): eth0 into
# WORK_DIR/NAME.pcap, ethI into WORK_DIR/NAME-ethI.pcap. With interop_netns set, QEMU runs inside
# that namespace. Needs vm_job NAME first.
vm_boot() {
  local name=$1 dir="$work_dir/$1" nic=0 capture
  shift
  [[ -f $dir/job.sh ]] || die "vm_boot $name: no job"
  # no_timer_check: on a loaded host the emulated timer can miss the kernel's IO-APIC timer check
  # ("IO-APIC + timer doesn't work!" panic); the check only guards against broken real hardware.
  local qemu=(
    qemu-system-x86_64 -name "$name" -nodefaults -no-reboot -display none -monitor none
    -accel tcg,thread=multi,tb-size=512 -cpu max -smp 1 -m 2048
    -kernel "$image_dir/vmlinuz" -initrd "$image_dir/initrd.img"
    -append "root=/dev/vda rw console=ttyS0 net.ifnames=0 panic=-1 no_timer_check init=/sbin/fastcm-init"
    -serial "file:$dir/console.log"
    -drive "file=$image_dir/rootfs.ext4,format=raw,if=virtio,snapshot=on"
    -virtfs "local,path=$dir,mount_tag=out,security_model=none,id=out"
    -virtfs "local,path=$interop_dir/guest,mount_tag=scripts,security_model=none,readonly=on,id=scripts"
    -virtfs "local,path=$bin_dir,mount_tag=bin,security_model=none,readonly=on,id=bin"
  )
  while (($# >= 2)); do
    capture="$work_dir/$name.pcap"
    ((nic == 0)) || capture="$work_dir/$name-eth$nic.pcap"
    qemu+=(-netdev "$2,id=n$nic" -device "virtio-net-pci,netdev=n$nic,mac=$1"
           -object "filter-dump,id=dump$nic,netdev=n$nic,file=$capture")
    nic=$((nic + 1))
    shift 2
  done
  if [[ -n $interop_netns ]]; then
    qemu=(ip netns exec "$interop_netns" "${qemu[@]}")
  fi
  "${qemu[@]}" >"$dir/qemu.log" 2>&1 &
  vm_pids[$name]=$!
  log "booting $name (QEMU pid $!, console: $dir/console.log)"
}

# vm_show NAME [PHASE]: prints what a failed guest left: the end of its console and its job's log,
# and PHASE's own output in the guest's run directory (its log and, for fastcm-bench, its JSON
# report, about 140 lines, shown whole), which is where a failed phase says why.
vm_show() {
  local dir="$work_dir/$1" f lines
  for f in qemu.log job.log console.log ${2:+"$2.log" "$2.err" "$2.json"}; do
    if [[ -s $dir/$f ]]; then
      lines=40
      [[ $f == "${2:-}".* ]] && lines=200
      echo "---- $1/$f (last $lines lines)"
      tail -n "$lines" "$dir/$f"
    fi
  done
}

# vm_wait NAME SECONDS: waits up to SECONDS for VM NAME to power off; fails (after showing its
# logs) when it does not, or when its job's exit status is not 0.
vm_wait() {
  local name=$1 limit=$2 pid=${vm_pids[$1]} start=$SECONDS status
  while kill -0 "$pid" 2>/dev/null; do
    if ((SECONDS - start >= limit)); then
      vm_show "$name"
      die "VM $name still running after $limit s"
    fi
    sleep 0.5
  done
  wait "$pid" 2>/dev/null
  unset "vm_pids[$name]"
  status=$(cat "$work_dir/$name/status" 2>/dev/null || echo "none (the job did not finish)")
  if [[ $status != 0 ]]; then
    vm_show "$name"
    die "VM $name: job status $status"
  fi
  log "$name finished in $((SECONDS - start)) s of waiting"
}

# vm_wait_file NAME FILE SECONDS: waits up to SECONDS for the guest of VM NAME to write FILE in its
# run directory; fails, showing its logs, when it does not or the VM stops first. Waits for FILE's
# content, not its name: the guest's `echo 0 >FILE` creates it empty before writing over 9p, and a
# done-PHASE read in between looked like a failure (linux_linux_events' ucmatose, 2026-12-05).
vm_wait_file() {
  local name=$1 file="$work_dir/$1/$2" limit=$3 start=$SECONDS
  until [[ -s $file ]]; do
    if ! kill -0 "${vm_pids[$name]}" 2>/dev/null; then
      vm_show "$name"
      die "VM $name stopped before writing $2"
    fi
    if ((SECONDS - start >= limit)); then
      vm_show "$name"
      die "VM $name did not write $2 within $limit s"
    fi
    sleep 0.5
  done
}

# vm_signal NAME FILE: creates FILE in the run directory of VM NAME (the guest waits for it).
vm_signal() {
  echo "$2" >"$work_dir/$1/$2"
}

# boot_pair A B [MAC NETDEV]...: topology B, VMs A and B joined by a QEMU socket netdev on
# 127.0.0.1 (of interop_netns when set; A listens, and B's QEMU starts only once A's port is open);
# B gets the further NICs given (boot_pair fastcm linux MAC "$(tap_netdev)" adds topology A's TAP).
boot_pair() {
  local a=$1 b=$2 port
  shift 2
  port=$(free_port)
  vm_boot "$a" 52:54:00:77:00:01 "socket,listen=127.0.0.1:$port"
  local start=$SECONDS
  until [[ -n $(in_netns ss -Hltn "sport = :$port") ]]; do
    kill -0 "${vm_pids[$a]}" 2>/dev/null || { vm_show "$a"; die "QEMU of $a exited"; }
    ((SECONDS - start < 30)) || die "QEMU of $a did not listen on 127.0.0.1:$port"
    sleep 0.2
  done
  vm_boot "$b" 52:54:00:77:00:02 "socket,connect=127.0.0.1:$port" "$@"
}

# Topology A: creates a network namespace with a TAP device (host side HOST_CIDR, $1), and sets
# interop_netns so that every later vm_boot starts QEMU inside it (a VM on the TAP with
# tap_netdev; the socket link of boot_pair on the namespace's own 127.0.0.1). Host programs join
# it with in_netns.
make_tap_netns() {
  interop_netns="fastcm-interop-$$"
  ip netns add "$interop_netns" || die "ip netns add $interop_netns"
  in_netns ip link set lo up
  in_netns ip tuntap add dev tap0 mode tap || die "tuntap add in $interop_netns"
  in_netns ip addr add "$1" dev tap0
  in_netns ip link set tap0 up
}

# The netdev of make_tap_netns's TAP device, for vm_boot. Without vnet_hdr=off the TAP frames
# carry the virtio-net header, and filter-dump writes it into the pcap.
tap_netdev() {
  echo "tap,ifname=tap0,script=no,downscript=no,vnet_hdr=off"
}

# Runs "$@" in interop_netns, or here when there is none.
in_netns() {
  if [[ -n $interop_netns ]]; then
    ip netns exec "$interop_netns" "$@"
  else
    "$@"
  fi
}

# tshark without its warning about running as root.
tshark_quiet() {
  tshark -n "$@" 2> >(grep -v '^Running as user' >&2)
}

# check_pcap PCAP: every CM MAD in PCAP decodes with fastcm-mad (no malformed MAD, no bad ICRC),
# tshark dissects every frame without a malformed-packet or error-level expert item, and the two
# count the same MADs (at least one). Prints the count per message; fails otherwise.
check_pcap() {
  local pcap=$1 json="${1%.pcap}.mads.json" summary mads bad_icrc ts_mads ts_bad
  "$bin_dir/tools/fastcm-mad/fastcm-mad" pcap "$pcap" >"$json" 2>"$json.summary" || {
    cat "$json.summary"
    die "fastcm-mad refused MADs in $pcap ($json)"
  }
  summary=$(cat "$json.summary")
  mads=$(wc -l <"$json")
  bad_icrc=$(grep -c '"icrc_ok":false' "$json" || true)
  ((bad_icrc == 0)) || die "$pcap: $bad_icrc MADs with a bad ICRC ($summary)"
  ((mads > 0)) || die "$pcap: no CM MAD captured ($summary)"
  # The heuristic dissectors that would claim CM private data as their own protocols.
  local no_heuristics=(--disable-protocol infiniband_sdp --disable-protocol iser
                       --disable-protocol nvme-rdma --disable-protocol lnet)
  # An ICMP error quotes the packet it answers, and tshark dissects the quoted MAD too.
  ts_mads=$(tshark_quiet "${no_heuristics[@]}" -r "$pcap" -Y 'infiniband.mad && !icmp && !icmpv6' \
              -T fields -e frame.number | wc -l)
  ts_bad=$(tshark_quiet "${no_heuristics[@]}" -r "$pcap" -Y '_ws.malformed || _ws.expert.severity >= "Error"' \
             -T fields -e frame.number -e _ws.expert.message)
  [[ -z $ts_bad ]] || die "$pcap: tshark reports errors in frames: $ts_bad"
  ((ts_mads == mads)) || die "$pcap: tshark sees $ts_mads MADs, fastcm-mad $mads"
  log "$(basename "$pcap"): $summary; tshark: $ts_mads MADs, no errors; by message:$(
    grep -o '"message":"[a-z_]*"' "$json" | cut -d'"' -f4 | sort | uniq -c | awk '{printf " %s %s", $2, $1}')"
}

# The figures of a scenario go to WORK_DIR/figures, one line per run:
# "DIRECTION<TAB>N<TAB>connections per second<TAB>handshake latency, as the tool measured it".
add_figure() {
  printf '%s\t%s\t%s\t%s\n' "$@" >>"$work_dir/figures"
  log "$1 N=$2: $3 conn/s; $4"
}

# cmtime_figure LOG N DIRECTION: the connect step of cmtime's table in LOG (a client run of N
# connections) as a figure: N over the step's total (first REQ to last connection established),
# and the fastest and slowest connection. Fails when the table has no connect step.
cmtime_figure() {
  local fields
  fields=$(awk -v n="$2" '$1 == "connect" && $2 == ":" {
             printf "%.0f\tcmtime connect step %.0f ms, per connection %.1f..%.1f ms", n * 1000 / $3, $3, $5 / 1000, $4 }' "$1")
  if [[ -z $fields ]]; then
    # cmtime prints no table when a connection failed: the figure is what failed, by event.
    (($(cmtime_failures "$1") > 0)) || die "no connect step in cmtime's output $1"
    add_figure "$3" "$2" "fails" "$(cmtime_failure_summary "$1")"
    return
  fi
  add_figure "$3" "$2" "${fields%%$'\t'*}" "${fields#*$'\t'}"
}

# cmtime_failures LOG: how many of a cmtime client's connections failed (one "event: ..., error:"
# line each: REJECTED, UNREACHABLE, ...).
cmtime_failures() {
  grep -c '^event: RDMA_CM_EVENT_[A-Z_]*, error: ' "$1" || true
}

# cmtime_failure_summary LOG: those failures counted by event and error, e.g.
# "2264 REJECTED (error 28), 7418 UNREACHABLE (error -110)".
cmtime_failure_summary() {
  sed -n 's/^event: RDMA_CM_EVENT_\([A-Z_]*\), error: \(-\{0,1\}[0-9]*\)$/\1 (error \2)/p' "$1" |
    sort | uniq -c | awk '{ $1 = $1; n = $1; $1 = ""; printf "%s%d%s", (NR > 1 ? ", " : ""), n, $0 }'
}

# bench_figure JSON N DIRECTION: a fastcm-bench client's --json output as a figure, after checking
# that all N connections were established, none failed and nothing leaked.
bench_figure() {
  local json=$1 n=$2 bad
  bad=$(jq -r --argjson n "$n" '[
      (select(.established != $n) | "established \(.established) of \($n)"),
      (select(.rejected + .timed_out + .failed_calls > 0) | "rejected \(.rejected), timed out \(.timed_out), failed calls \(.failed_calls)"),
      (select(.leaked_ceps + .leaked_mads > 0) | "leaked \(.leaked_ceps) endpoints, \(.leaked_mads) MADs")
    ] | join("; ")' "$json") || die "$json: not fastcm-bench's JSON"
  [[ -z $bad ]] || die "$3 N=$n: $bad ($json)"
  add_figure "$3" "$n" "$(jq -r '.established_per_sec | round' "$json")" \
    "$(jq -r 'def ms: . / 100 | round / 10;
           "fastcm-bench REQ to REP p50 \(.latency_us.p50 | ms) ms, p99 \(.latency_us.p99 | ms) ms"' "$json")"
}

# bench_server_check JSON N [AT_LEAST]: a fastcm-bench server's --json output accepted N
# connections (at least AT_LEAST of them, when given), had no failed call and leaked nothing; fails
# naming what is wrong.
bench_server_check() {
  local bad
  bad=$(jq -r --argjson n "$2" --argjson least "${3:-$2}" '[
      (select(.accepted < $least or .accepted > $n) | "accepted \(.accepted) of \($n) (at least \($least) required)"),
      (select(.failed_calls > 0) | "\(.failed_calls) failed calls"),
      (select(.leaked_ceps + .leaked_mads > 0) | "leaked \(.leaked_ceps) endpoints, \(.leaked_mads) MADs")
    ] | join("; ")' "$1") || die "$1: not fastcm-bench's JSON"
  [[ -z $bad ]] || die "fastcm-bench server: $bad ($1)"
  log "fastcm-bench server: accepted $(jq -r .accepted "$1") of $2 (at least ${3:-$2} required), nothing leaked"
}

# host_wait_listening ERR_LOG PID SECONDS: waits up to SECONDS for a fastcm-bench server (PID,
# its stderr in ERR_LOG) to say it listens; fails when it exits first or stays silent.
host_wait_listening() {
  local start=$SECONDS
  until grep -q '^fastcm-bench: listening' "$1" 2>/dev/null; do
    kill -0 "$2" 2>/dev/null || { cat "$1"; die "fastcm-bench exited before it listened"; }
    ((SECONDS - start < $3)) || { cat "$1"; die "fastcm-bench did not listen within $3 s"; }
    sleep 0.2
  done
}

# stop_host_process PID SECONDS: asks a host-side process to finish (SIGTERM: a background
# process of a script starts with SIGINT ignored) and waits up to SECONDS for it, then kills it.
# Returns its exit status (non-zero when killed).
stop_host_process() {
  local pid=$1 start=$SECONDS status=0
  kill -TERM "$pid" 2>/dev/null || true
  while kill -0 "$pid" 2>/dev/null; do
    if ((SECONDS - start >= $2)); then
      kill -KILL "$pid" 2>/dev/null
      break
    fi
    sleep 0.2
  done
  wait "$pid" || status=$?
  return "$status"
}

# run_phase SERVER CLIENT PHASE SECONDS: relays one phase of the guests' serve/client protocol
# (guest/common.sh): waits for the server VM's ready-PHASE, runs the client's half and stops the
# server; each wait bounded by SECONDS.
run_phase() {
  vm_wait_file "$1" "ready-$3" "$4"
  run_client_phase "$2" "$3" "$4"
  vm_signal "$1" "stop-$3"
}

# run_client_phase CLIENT PHASE SECONDS: lets the client VM go and waits for its done-PHASE;
# fails when the client did not do what it expected.
run_client_phase() {
  local client=$1 phase=$2 t0=$SECONDS
  vm_signal "$client" "go-$phase"
  vm_wait_file "$client" "done-$phase" "$3"
  if [[ $(cat "$work_dir/$client/done-$phase") != 0 ]]; then
    vm_show "$client" "$phase"
    die "$phase: the client in $client did not do what it expected"
  fi
  log "$phase: $((SECONDS - t0)) s"
}

# phase_pcap VM PHASE ADDRESS: the frames of VM's capture to or from ADDRESS (the address the
# scenario gave PHASE alone) into WORK_DIR/PHASE.pcap; prints that path. QEMU's filter-dump stamps
# frames with its virtual clock offset by a whole-second start time, so the phases of one run are
# told apart by address, not by time.
phase_pcap() {
  local pcap="$work_dir/$2.pcap"
  tshark -n -r "$work_dir/$1.pcap" -Y "ip.addr == $3" -w "$pcap" 2> >(grep -v '^Running as user' >&2) ||
    die "tshark could not cut $2 ($3) out of $1.pcap"
  echo "$pcap"
}

# vm_booted NAME SECONDS: waits for the guest's job to start and logs how long the boot took.
vm_booted() {
  local start=$SECONDS
  vm_wait_file "$1" booted "$2"
  log "$1: job started $((SECONDS - start)) s after waiting began"
}

# expect_mads PHASE FILTER WHAT [COUNT]: the CM MADs of PHASE's pcap (check_pcap's JSON lines, as
# fastcm-mad prints them: .message, .src, .fields...) for which the jq expression FILTER holds
# number COUNT exactly, or at least one without COUNT; fails naming WHAT otherwise.
expect_mads() {
  local phase=$1 filter=$2 what=$3 found
  found=$(jq -c "select($filter)" "$work_dir/$phase.mads.json" | wc -l) ||
    die "$phase: jq could not read $phase.mads.json"
  if [[ -n ${4:-} ]]; then
    ((found == $4)) || die "$phase: $found MADs of $what, expected $4"
  else
    ((found > 0)) || die "$phase: no MAD of $what"
  fi
  log "$phase: $what ($found MADs)"
}
