#!/usr/bin/env bash
# Installs the build into a temporary prefix, moves the tree (the install must be relocatable),
# and checks what an application gets: the library's SONAME, exports and DPDK linkage, headers
# free of DPDK, pkg-config and CMake package flags free of DPDK's, the tools, and two small
# programs (C++ and C) built against the tree with pkg-config and with find_package, and run.
#
# Usage: install_test.sh BUILD_DIR SOURCE_DIR C_COMPILER CXX_COMPILER
set -euo pipefail

build=$1 src=$2 cc=$3 cxx=$4
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "install test: FAILED: $*" >&2; exit 1; }
step() { echo "install test: $*"; }

cmake --install "$build" --prefix "$work/staged" > "$work/install.log" || { cat "$work/install.log"; fail "cmake --install"; }
mv "$work/staged" "$work/prefix"
prefix=$work/prefix
pc=$(find "$prefix" -name fastcm.pc -print -quit)
[[ -n $pc ]] || fail "no fastcm.pc installed"
libdir=$(dirname "$(dirname "$pc")")

step "library"
so=$(awk '/#define FASTCM_SOVERSION/ {print $3}' "$prefix/include/fastcm/version.h")
[[ -n $so ]] || fail "version.h names no FASTCM_SOVERSION"
lib=$(find "$libdir" -maxdepth 1 -name "libfastcm.so.$so.*.*" -print -quit)
[[ -n $lib && -L $libdir/libfastcm.so && -L $libdir/libfastcm.so.$so ]] || fail "libfastcm.so, .so.$so and .so.$so.y.z not all installed"
readelf -d "$lib" | grep -q "Library soname: \[libfastcm.so.$so\]" || fail "SONAME is not libfastcm.so.$so"
readelf -d "$lib" | grep -q 'NEEDED.*librte_eal\.so' || fail "DPDK (librte_eal) is not linked as a shared library"
exports=$(nm -D --defined-only "$lib" | awk '{print $3}' | c++filt)
internal=$(grep -vE '^(fastcm_[a-z_0-9]+|fastcm::Engine::create\(.*|fastcm::(load_settings|open_fabrics|set_log_sink|set_log_level|log_level|render_metrics)(\[abi:cxx11\])?\(.*|fastcm::loopback::Loopback(Fabric|Config)::.*|FASTCM_0)(@@FASTCM_0)?$' <<< "$exports" || true)
[[ -z $internal ]] || fail "exports beyond the API: $(head -5 <<< "$internal")"
grep -q '^fastcm_engine_create' <<< "$exports" || fail "the C API is not exported"

step "headers"
if grep -rlE '^\s*#\s*include\s*[<"](rte_|generic/rte_|dpdk)' "$prefix/include"; then
  fail "a public header includes a DPDK header"
fi
# Each header alone, with nothing but the installed include directory.
for header in $(cd "$prefix/include" && find fastcm -name '*.h' | sort); do
  echo "#include <$header>" | "$cxx" -std=c++20 -fsyntax-only -Wall -Wextra -Werror -I"$prefix/include" -x c++ - \
    || fail "$header does not compile on its own"
done
for header in fastcm/fastcm.h fastcm/version.h; do
  printf '#include <%s>\nint fastcm_header_check;\n' "$header" | "$cc" -std=c11 -pedantic -fsyntax-only -Wall -Wextra -Werror -I"$prefix/include" -x c - \
    || fail "$header does not compile as C11"
done

step "tools"
"$prefix/bin/fastcm-mad" --help > /dev/null || fail "fastcm-mad is not installed or does not run"

step "pkg-config"
export PKG_CONFIG_PATH=$libdir/pkgconfig
cflags=$(pkg-config --cflags fastcm)
libs=$(pkg-config --libs fastcm)
[[ $cflags != *rte_config* && $cflags != *-march* && $cflags != *dpdk* ]] || fail "pkg-config --cflags fastcm carries DPDK's flags: $cflags"
incdir=${cflags#-I}
incdir=${incdir%% *}
[[ $(realpath -m "$incdir") == "$(realpath "$prefix/include")" ]] || fail "pkg-config --cflags names another tree: $cflags (moved to $prefix)"
# shellcheck disable=SC2086  # the flags are words
"$cxx" -std=c++20 "$src/tests/install/consumer/consumer.cpp" $cflags $libs -o "$work/consumer_pc"
# shellcheck disable=SC2086
"$cc" -std=c11 -Wall -Wextra -Werror -pedantic "$src/tests/install/consumer/consumer_c.c" $cflags $libs -o "$work/consumer_c_pc"
LD_LIBRARY_PATH=$libdir "$work/consumer_pc" || fail "the pkg-config C++ consumer failed"
LD_LIBRARY_PATH=$libdir "$work/consumer_c_pc" || fail "the pkg-config C consumer failed"

step "README examples and examples/c_server"
# The code blocks that follow each "<!-- readme-example: NAME -->" line of the README.
readme_example() {
  awk -v marker="<!-- readme-example: $1 -->" '
    $0 == marker { found = 1; next }
    found && /^```/ { if (inside) exit; inside = 1; next }
    inside { print }' "$src/README.md"
}
readme_example operate.cpp > "$work/operate.cpp"
readme_example operate.c > "$work/operate.c"
[[ -s $work/operate.cpp && -s $work/operate.c ]] || fail "the README's examples (readme-example: operate.cpp, operate.c) are missing"
# shellcheck disable=SC2086
"$cxx" -std=c++20 -Wall -Wextra -Werror "$work/operate.cpp" $cflags $libs -o "$work/operate_cpp" || fail "the README's C++ example does not compile"
# shellcheck disable=SC2086
"$cc" -std=c11 -Wall -Wextra -Werror -pedantic "$work/operate.c" $cflags $libs -o "$work/operate_c" || fail "the README's C example does not compile"
LD_LIBRARY_PATH=$libdir "$work/operate_cpp" "$src/configs/demo.ini" > "$work/operate_cpp.out" 2> /dev/null || fail "the README's C++ example failed"
grep -q '^# HELP fastcm_messages_sent_total ' "$work/operate_cpp.out" || fail "the README's C++ example printed no metrics"
LD_LIBRARY_PATH=$libdir "$work/operate_c" "$src/configs/demo.ini" > "$work/operate_c.out" 2> /dev/null || fail "the README's C example failed"
grep -q '"engines"' "$work/operate_c.out" || fail "the README's C example printed no metrics"
# shellcheck disable=SC2086
"$cc" -std=c11 -Wall -Wextra -Werror -pedantic -D_POSIX_C_SOURCE=200809L -c "$src/examples/c_server/c_server.c" $cflags \
  -o "$work/c_server.o" || fail "examples/c_server does not compile against the install"

step "CMake package"
cmake -S "$src/tests/install/consumer" -B "$work/consumer_build" -DCMAKE_PREFIX_PATH="$prefix" \
  -DFASTCM_C_SERVER_SOURCE="$src/examples/c_server/c_server.c" \
  -DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx" > "$work/consumer.log" \
  || { cat "$work/consumer.log"; fail "find_package(fastcm) consumer configure"; }
cmake --build "$work/consumer_build" > "$work/consumer_build.log" || { cat "$work/consumer_build.log"; fail "CMake consumer build"; }
"$work/consumer_build/consumer" || fail "the CMake C++ consumer failed"
"$work/consumer_build/consumer_c" || fail "the CMake C consumer failed"
step "passed"
