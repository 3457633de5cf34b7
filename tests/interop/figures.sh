#!/usr/bin/env bash
# Prints the connections-per-second figures of the interop runs under RUNS_DIR (each scenario's
# WORK_DIR/figures, see vm.sh add_figure) as one Markdown table. The VMs run under QEMU TCG (an
# emulated CPU, one vCPU each, on a shared host), so the figures compare CMs with each other in the
# same setup; native hardware is far faster.
# Usage: figures.sh RUNS_DIR     (build/release/tests/interop/runs after a ctest run)
set -euo pipefail
runs=${1:?usage: figures.sh RUNS_DIR}
shopt -s nullglob
files=("$runs"/*/figures)
((${#files[@]} > 0)) || { echo "figures.sh: no figures under $runs" >&2; exit 1; }
echo "Emulated (QEMU TCG, 1 vCPU per VM, Soft-RoCE): compare the rows, not with hardware."
echo
echo "| direction | N | connections/s | handshake latency | scenario |"
echo "|---|---:|---:|---|---|"
for f in "${files[@]}"; do
  scenario=$(basename "$(dirname "$f")")
  awk -F'\t' -v s="$scenario" '{ printf "| %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, s }' "$f"
done
