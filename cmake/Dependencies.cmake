# All dependencies are Debian packages; scripts/setup installs them.
find_package(PkgConfig REQUIRED)
find_package(Threads REQUIRED)
# The umbrella libdpdk .pc carries -include rte_config.h and -march=corei7, which DPDK's inline
# headers need; imported include directories are SYSTEM, so DPDK's own warnings stay out of -Werror.
pkg_check_modules(DPDK REQUIRED IMPORTED_TARGET libdpdk)
pkg_check_modules(IBUMAD REQUIRED IMPORTED_TARGET libibumad)
pkg_check_modules(IBVERBS REQUIRED IMPORTED_TARGET libibverbs)
pkg_check_modules(PCAP REQUIRED IMPORTED_TARGET libpcap)
find_package(TBB REQUIRED)
find_package(GTest REQUIRED)
find_package(benchmark REQUIRED)
find_package(CLI11 REQUIRED)
find_package(nlohmann_json REQUIRED)
