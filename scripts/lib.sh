# Shared helpers of scripts/setup and scripts/test: sourced, never run on its own.
# The build flags live only in CMakePresets.json; these helpers just name presets. cmake and ctest
# read the presets from the working directory, so callers cd to FASTCM_ROOT first.
# shellcheck shell=bash

FASTCM_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
FASTCM_LOGS="$FASTCM_ROOT/build/logs"
FASTCM_JOBS="$(nproc)"

# Debian bookworm packages for building, testing, fuzzing, benchmarking and plotting.
# gnuplot-nox is gnuplot without a GUI: the gnuplot metapackage would pull in Qt.
# ibsim-utils, libumad2sim0, opensm and infiniband-diags run the ibsim tests (simulated
# InfiniBand: the simulator, its umad preload library, the SM that brings the ports up, ibstat).
# The interop tests build a VM image (debootstrap, mkfs.ext4 of e2fsprogs), boot it
# (qemu-system-x86) and make network namespaces and TAP devices (iproute2); jq reads
# fastcm-bench's JSON there.
FASTCM_PACKAGES=(
  build-essential cmake pkg-config g++ clang libclang-rt-14-dev
  libdpdk-dev libtbb-dev libibumad-dev libibverbs-dev
  libgtest-dev libgmock-dev libbenchmark-dev libcli11-dev nlohmann-json3-dev
  libpcap-dev zlib1g-dev tshark gnuplot-nox valgrind
  ibsim-utils libumad2sim0 opensm infiniband-diags
  qemu-system-x86 debootstrap e2fsprogs iproute2 jq
  prometheus  # promtool checks the metrics (the package starts no service where policy-rc.d forbids it)
)

# Seconds as "XmYYs".
fastcm_duration() {
  printf '%dm%02ds' $(($1 / 60)) $(($1 % 60))
}

# Installs the packages of FASTCM_PACKAGES that are not installed yet, non-interactively (tshark
# would otherwise ask about capture rights). Prints nothing and touches no package list when
# everything is there. Returns apt-get's failure status, or 1 when not root and sudo is missing.
fastcm_install_packages() {
  local -A installed=()
  local missing=() name status pkg
  while read -r name status; do
    if [[ $status == installed ]]; then
      installed[$name]=1
    fi
  done < <(dpkg-query -W -f='${Package} ${db:Status-Status}\n' "${FASTCM_PACKAGES[@]}" 2>/dev/null || true)
  for pkg in "${FASTCM_PACKAGES[@]}"; do
    if [[ -z ${installed[$pkg]:-} ]]; then
      missing+=("$pkg")
    fi
  done
  if ((${#missing[@]} == 0)); then
    return 0
  fi

  local as_root=()
  if ((EUID != 0)); then
    if ! command -v sudo >/dev/null; then
      echo "setup: root (or sudo) is needed to install: ${missing[*]}" >&2
      return 1
    fi
    as_root=(sudo)
  fi
  echo "setup: installing ${missing[*]}"
  "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq || return
  "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -qq --no-install-recommends "${missing[@]}" || return
}

# Runs "$@" with its output going to the log file $1 only; when it fails, prints that log.
# Returns the command's status.
fastcm_logged() {
  local log=$1 status=0
  shift
  mkdir -p "$(dirname "$log")"
  "$@" >"$log" 2>&1 || status=$?
  if ((status != 0)); then
    echo "---- '$*' failed (exit $status); its output, also in $log:"
    cat "$log"
    echo "----"
  fi
  return "$status"
}

# Configures preset $1 into build/$1 (logs: build/logs/$1-configure.log). Returns cmake's status.
fastcm_configure() {
  fastcm_logged "$FASTCM_LOGS/$1-configure.log" cmake --preset "$1"
}

# Builds preset $1 on all cores (log: build/logs/$1-build.log). Returns the build's status.
fastcm_build() {
  fastcm_logged "$FASTCM_LOGS/$1-build.log" cmake --build --preset "$1" --parallel "$FASTCM_JOBS"
}
