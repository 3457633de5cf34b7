# Helpers of the guest scripts (POSIX sh, sourced inside the VM by the job the host writes).
# The host talks to a guest only through files in /mnt/out, the run directory it shares:
# the guest writes "ready" when it serves, and waits for files the host creates ("go", "stop").
# shellcheck shell=sh

out=/mnt/out

say() { echo "guest: $*"; }
fail() { echo "guest: FAILED: $*"; exit 1; }

# Waits up to $2 seconds for the file $out/$1 (written by the host). Fails when it does not come.
wait_for() {
  waited=0
  while [ ! -e "$out/$1" ]; do
    [ "$waited" -ge "$2" ] && fail "no $1 from the host within $2 s"
    sleep 1
    waited=$((waited + 1))
  done
}

# Brings eth0 up with the addresses given (CIDR). Soft-RoCE gives each its GID.
net_up() {
  modprobe virtio_net || fail "modprobe virtio_net"
  nic_up eth0 "$@"
}

# nic_up DEV CIDR...: brings DEV up with the addresses given.
nic_up() {
  dev=$1
  shift
  for a in "$@"; do ip addr add "$a" dev "$dev" || fail "ip addr add $a dev $dev"; done
  ip link set "$dev" up || fail "ip link set $dev up"
  ip -brief addr show "$dev"
}

# rxe_up [NETDEV...]: Soft-RoCE (rxe0, rxe1, ...) on each NETDEV (default eth0) with the uverbs
# and umad interfaces, but no CM: the modules a user-space CM needs (the rdma_rxe device,
# ib_uverbs for queue pairs, ib_umad for the GSI).
rxe_up() {
  for m in rdma_rxe ib_uverbs ib_umad; do modprobe "$m" || fail "modprobe $m"; done
  [ $# -gt 0 ] || set -- eth0
  i=0
  for dev in "$@"; do
    rdma link add "rxe$i" type rxe netdev "$dev" || fail "rdma link add rxe$i on $dev"
    i=$((i + 1))
  done
  rdma link show
}

# kernel_cm_up [NETDEV...]: the Linux kernel CM on top of rxe_up: ib_cm and rdma_cm come with
# rdma_ucm.
kernel_cm_up() {
  rxe_up "$@"
  kernel_cm_load
}

# rdma_ucm turns cmtime's listen backlog of 0 into max_backlog (1024 by default), which refuses a
# larger burst with REJ reason 28; raised so a storm of N REQs is all accepted.
kernel_cm_load() {
  modprobe rdma_ucm || fail "modprobe rdma_ucm"
  echo 65536 >/proc/sys/net/rdma_ucm/max_backlog || fail "raise rdma_ucm max_backlog"
}

# In a VM where fastcm owned the CM (fastcm_owns_cm) and its programs have exited: lets the kernel
# CM load and take the CM class over, so the same VM serves the Linux-to-Linux anchor.
kernel_cm_takes_over() {
  rm -f /etc/modprobe.d/fastcm-owns-cm.conf
  kernel_cm_load
  say "the kernel CM owns the CM class now"
}

# duplicate_on [SOURCE...] / duplicate_off: netem sends twice every packet eth0 sends from the
# given IPv4 source addresses (each CM MAD reaches the peer twice), or every packet when no source
# is given; or stops doing so. Sources keep the phases that run beside the duplicating ones (a
# background client's retries) out of it.
duplicate_on() {
  modprobe sch_netem || fail "modprobe sch_netem"
  # A prio qdisc whose priority map sends every packet to its first band; its third holds the
  # netem, and the filters send the duplicated packets there.
  tc qdisc add dev eth0 root handle 1: prio bands 3 priomap 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 ||
    fail "prio qdisc on eth0"
  tc qdisc add dev eth0 parent 1:3 handle 30: netem duplicate 100% || fail "netem duplicate under prio on eth0"
  if [ $# -eq 0 ]; then
    tc filter add dev eth0 parent 1: protocol all prio 1 u32 match u32 0 0 flowid 1:3 ||
      fail "filter for every packet on eth0"
  fi
  for duplicated_source in "$@"; do
    tc filter add dev eth0 parent 1: protocol ip prio 1 u32 match ip src "$duplicated_source/32" flowid 1:3 ||
      fail "filter for $duplicated_source on eth0"
  done
}
duplicate_off() {
  tc qdisc del dev eth0 root || fail "netem off on eth0"
}

# dead_peer ADDRESS MAC: a permanent neighbour entry sends ADDRESS's packets to MAC, a host that
# does not own ADDRESS and drops them: a peer that never answers, though its packets leave.
dead_peer() {
  ip neigh add "$1" lladdr "$2" dev eth0 nud permanent || fail "ip neigh add $1"
}

# in_background PHASE CMD...: runs CMD in the background (output in PHASE.log, exit status in
# PHASE.status once it ends) while the job goes on; await_background PHASE SECONDS waits for it.
in_background() {
  phase=$1
  shift
  ( "$@" >"$out/$phase.log" 2>&1; echo $? >"$out/$phase.status" ) &
}
await_background() {
  wait_until "$2" test -e "$out/$1.status"
  say "$1: the background command ended with status $(cat "$out/$1.status")"
}

# Polls "$@" (a condition) once a second for up to $1 seconds; fails naming it when it never holds.
wait_until() {
  limit=$1
  shift
  waited=0
  until "$@"; do
    [ "$waited" -ge "$limit" ] && fail "'$*' did not hold within $limit s"
    sleep 1
    waited=$((waited + 1))
  done
}

# True when the kernel CM has an rdma_cm ID listening on the address $1.
kernel_cm_listening() {
  rdma resource show cm_id 2>/dev/null | grep 'state LISTEN' | grep -q "src-addr $1:"
}

# Soft-RoCE for a user-space CM: rxe_up with ib_cm, rdma_cm and rdma_ucm kept out ("install ...
# /bin/false" stops them loading even as another module's dependency), so the CM class of the
# GSI is free for fastcm's umad agent. The loaded modules go to $out/modules for the host to check.
fastcm_owns_cm() {
  for m in ib_cm rdma_cm rdma_ucm iw_cm; do echo "install $m /bin/false"; done >/etc/modprobe.d/fastcm-owns-cm.conf
  rxe_up
  cut -d' ' -f1 /proc/modules >"$out/modules"
  for m in ib_cm rdma_cm rdma_ucm; do
    ! grep -qx "$m" "$out/modules" || fail "$m is loaded although fastcm is to own the CM"
  done
}

# The phases of a two-VM scenario: the server VM runs `serve PHASE SECONDS ...` for each phase,
# the client VM `client PHASE SECONDS CMD...`, and the host relays between them: server writes
# ready-PHASE once it listens, the host then writes go-PHASE for the client, the client runs its
# command and writes done-PHASE (0 when it went as expected), and the host then writes
# stop-PHASE for the server. A phase with no server (a client refused for want of a listener) has
# only the client's half. SECONDS bounds each wait.

# serve PHASE SECONDS ADDRESS CMD...: starts the server CMD in the background (output in
# PHASE.log), waits until the kernel CM listens on ADDRESS, serves until stop-PHASE and ends it. A
# server that ends by itself (rping -s after its one client) must end with status 0.
serve() {
  start_server "$@"
  echo ready >"$out/ready-$phase"
  end_server
}

# serve_stopped PAUSE PHASE SECONDS ADDRESS CMD...: serve, but with the server process stopped
# (SIGSTOP) from the moment it listens until PAUSE seconds after the host was told it is ready: a
# slow accepter, whose kernel CM answers the client's retransmitted REQ with an MRA.
serve_stopped() {
  pause=$1
  shift
  start_server "$@"
  kill -STOP "$pid"
  echo ready >"$out/ready-$phase"
  sleep "$pause"
  kill -CONT "$pid"
  end_server
}

# no_server PHASE SECONDS: the server's half of a phase with nothing listening: tells the host the
# VM is ready (its network and RDMA stack are up) and waits for stop-PHASE.
no_server() {
  phase=$1 limit=$2
  echo ready >"$out/ready-$phase"
  wait_for "stop-$phase" "$limit"
}

# serve_fastcm PHASE SECONDS CMD...: a fastcm-bench server as serve runs a kernel-CM one: its JSON
# in PHASE.json, its stderr in PHASE.err; ready once it says it listens; at stop-PHASE asked to
# finish (SIGTERM: a background job of a script starts with SIGINT ignored) and required to exit with status 0 (its leak checks passed).
serve_fastcm() {
  phase=$1 limit=$2
  shift 2
  "$@" >"$out/$phase.json" 2>"$out/$phase.err" &
  pid=$!
  wait_until "$limit" grep -q '^fastcm-bench: listening' "$out/$phase.err"
  echo ready >"$out/ready-$phase"
  wait_for "stop-$phase" "$limit"
  kill -TERM "$pid"
  wait "$pid"
  status=$?
  [ "$status" -eq 0 ] || fail "$phase: fastcm-bench server exited with status $status (its log: $phase.err)"
  say "$phase: fastcm-bench server done"
}

# serve_program PHASE SECONDS READY CMD...: a fastcm server program (rping_server, cm_peer) as
# serve runs a kernel-CM one: its output in PHASE.log, ready once a line of it matches the regular
# expression READY; at stop-PHASE it has 30 s to end by itself (it serves a number of connections,
# the last perhaps still in time-wait), or is asked to finish (SIGTERM); it must exit with status 0
# (every connection went as it expects).
serve_program() {
  phase=$1 limit=$2 ready=$3
  shift 3
  "$@" >"$out/$phase.log" 2>&1 &
  pid=$!
  wait_until "$limit" grep -q "$ready" "$out/$phase.log"
  echo ready >"$out/ready-$phase"
  wait_for "stop-$phase" "$limit"
  waited=0
  while ! process_gone "$pid" && [ "$waited" -lt 30 ]; do
    sleep 1
    waited=$((waited + 1))
  done
  kill -TERM "$pid" 2>/dev/null
  wait "$pid"
  status=$?
  [ "$status" -eq 0 ] || fail "$phase: the server exited with status $status (its log: $phase.log)"
  say "$phase: server done"
}

# True once process $1 has exited (a zombie of this shell counts as exited).
process_gone() {
  ! kill -0 "$1" 2>/dev/null || [ "$(cut -d' ' -f3 "/proc/$1/stat" 2>/dev/null)" = Z ]
}

start_server() {
  phase=$1 limit=$2 address=$3
  shift 3
  "$@" >"$out/$phase.log" 2>&1 &
  pid=$!
  wait_until "$limit" kernel_cm_listening "$address"
}

end_server() {
  wait_for "stop-$phase" "$limit"
  if kill -0 "$pid" 2>/dev/null; then
    kill "$pid"
    wait "$pid" 2>/dev/null
    say "$phase: server stopped"
    return 0
  fi
  wait "$pid"
  status=$?
  [ "$status" -eq 0 ] || fail "$phase: server exited with status $status (its log: $phase.log)"
  say "$phase: server exited by itself with status 0"
}

# client PHASE SECONDS CMD...: waits for go-PHASE, runs CMD (output in PHASE.log) and writes 0
# to done-PHASE when it exited with status 0; otherwise writes 1 there and fails.
client() {
  run_client "$@"
  verdict "$((status != 0))" "the client exited with status $status"
}

# client_within PHASE SECONDS CMD...: as client, for a reference run that need not finish (the
# Linux anchor at N = 10,000 under emulation outlasts any bound): CMD is stopped a minute before the
# host stops waiting, and a run stopped there counts as done; its log holds how far it got.
client_within() {
  phase=$1 limit=$2
  shift 2
  run_client "$phase" "$limit" timeout "$((limit - 60))" "$@"
  if [ "$status" -eq 124 ]; then
    say "$phase: stopped after $((limit - 60)) s, unfinished"
    status=0
  fi
  verdict "$((status != 0))" "the client exited with status $status"
}

# client_refused PHASE SECONDS CMD...: as client, for a command that must fail (a connection the
# peer refuses): done-PHASE gets 0 when it failed, 1 when it succeeded.
client_refused() {
  run_client "$@"
  verdict "$((status == 0))" "the client succeeded where it should have been refused"
}

# rping_checked COUNT ARGS...: runs `rping -c -v -C COUNT ARGS...`, its output on stdout, and
# returns its status, except for one harmless failure. rping (rdma-core 44) can exit with status 255
# after a successful run: its CM event thread calls rdma_get_cm_event on the channel the main
# thread has just destroyed ("rdma_get_cm_event: Bad file descriptor"; fixed upstream in
# rdma-core pull request 1622). That exit counts as success when all COUNT pings came back and the
# disconnect was seen, wherever the lines fell (stdout is flushed at exit, after stderr); the host
# checks the pings' data.
rping_checked() {
  count=$1
  shift
  rping_log=$(mktemp)
  rping -c -v -C "$count" "$@" >"$rping_log" 2>&1
  rc=$?
  cat "$rping_log"
  if [ "$rc" -ne 0 ] && grep -qx 'rdma_get_cm_event: Bad file descriptor' "$rping_log" &&
     [ "$(grep -c '^ping data: ' "$rping_log")" -eq "$count" ] &&
     grep -q '^client DISCONNECT EVENT' "$rping_log"; then
    say "rping's teardown race ended it with status $rc after $count pings and the disconnect"
    rc=0
  fi
  rm -f "$rping_log"
  return "$rc"
}

# rping_client PHASE SECONDS COUNT ARGS...: client for rping_checked COUNT ARGS....
rping_client() {
  phase=$1 limit=$2 count=$3
  shift 3
  run_client "$phase" "$limit" rping_checked "$count" "$@"
  verdict "$((status != 0))" "rping exited with status $status"
}

run_client() {
  phase=$1 limit=$2
  shift 2
  wait_for "go-$phase" "$limit"
  "$@" >"$out/$phase.log" 2>&1
  status=$?
}

# verdict FAILED WHY: writes done-PHASE (0 or 1); fails saying WHY when FAILED is 1.
verdict() {
  echo "$1" >"$out/done-$phase"
  [ "$1" -eq 0 ] || fail "$phase: $2 (its log: $phase.log)"
  say "$phase: client exit status $status, as expected"
}

# Marks the job as started (the host times the boot by it).
echo booted >"$out/booted"
