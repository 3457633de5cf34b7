# libfastcm.so: the C++ API (Engine::create, the loopback fabric, the fabric a settings file names)
# and the C API, built from the same static archives the in-tree tests and benchmarks link, so both
# uses run the same objects. It holds every fabric (loopback, umad, udp) and the pcap tap, so an
# application opens a real HCA from a settings file as it opens the loopback.
#
# Exports: only the public API, by the version script cmake/libfastcm.map (internal classes stay
# local, so the SONAME promise covers only what the headers declare). DPDK, rdma-core (libibumad,
# libibverbs) and zlib are linked as shared libraries and privately: an application with its own
# EAL shares the libdpdk its pkg-config finds; --as-needed keeps out those nothing calls.
# GNUInstallDirs before the INSTALL_INTERFACE include directory below: on a first configure
# CMAKE_INSTALL_INCLUDEDIR is otherwise still empty and the exported target names no headers.
include(GNUInstallDirs)
set(FASTCM_ARCHIVES fastcm fastcm_engine fastcm_mad fastcm_shards fastcm_mempool fastcm_dpdk_runtime
  fastcm_owned_ring fastcm_wakeup_fd fastcm_loopback fastcm_capi fastcm_config fastcm_log
  fastcm_metrics fastcm_opened_fabrics fastcm_fabric_umad fastcm_fabric_udp fastcm_roce_frame
  fastcm_pcap_tap)
# Position-independent for the shared library. -fno-semantic-interposition keeps the optimizer's
# inlining and direct calls inside the archives (nothing of them is interposed: the version
# script exports only the API), so the static users see no -fPIC cost.
set_target_properties(${FASTCM_ARCHIVES} PROPERTIES POSITION_INDEPENDENT_CODE ON)
foreach(archive IN LISTS FASTCM_ARCHIVES)
  target_compile_options(${archive} PRIVATE -fno-semantic-interposition)
endforeach()

# The C API's, the settings parser's and its fabric opener's, the log's and the metrics' objects are
# the library's own; the archives under them are linked as below.
add_library(fastcm_shared SHARED $<TARGET_OBJECTS:fastcm_capi> $<TARGET_OBJECTS:fastcm_config>
  $<TARGET_OBJECTS:fastcm_opened_fabrics> $<TARGET_OBJECTS:fastcm_log> $<TARGET_OBJECTS:fastcm_metrics>)
set_target_properties(fastcm_shared PROPERTIES
  OUTPUT_NAME fastcm
  EXPORT_NAME fastcm
  # The file is libfastcm.so.N.MINOR.PATCH: its first number is the SONAME's N, as ldconfig expects.
  VERSION ${FASTCM_SOVERSION}.${PROJECT_VERSION_MINOR}.${PROJECT_VERSION_PATCH}
  SOVERSION ${FASTCM_SOVERSION}
  LINKER_LANGUAGE CXX
  LINK_DEPENDS ${PROJECT_SOURCE_DIR}/cmake/libfastcm.map)
# The C++ API's archives whole (every API object, whether or not the C API needs it); their
# dependencies (DPDK, threads) come along as private link items.
target_link_libraries(fastcm_shared PRIVATE
  "$<LINK_LIBRARY:WHOLE_ARCHIVE,fastcm,fastcm_loopback>"
  fastcm_engine fastcm_mad fastcm_shards fastcm_mempool fastcm_dpdk_runtime fastcm_owned_ring fastcm_wakeup_fd
  fastcm_fabric_umad fastcm_fabric_udp fastcm_roce_frame fastcm_pcap_tap PkgConfig::DPDK Threads::Threads)
target_link_options(fastcm_shared PRIVATE
  -Wl,--version-script=${PROJECT_SOURCE_DIR}/cmake/libfastcm.map -Wl,--no-undefined -Wl,--as-needed)
target_include_directories(fastcm_shared INTERFACE
  $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include> $<BUILD_INTERFACE:${PROJECT_BINARY_DIR}/include>
  $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
target_compile_features(fastcm_shared INTERFACE cxx_std_20)
