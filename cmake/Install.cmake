# `cmake --install`: the public headers, libfastcm.so.N, the tools, a pkg-config file and a CMake
# package, all relative to the install prefix (the tree can be moved after installing).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS fastcm_shared EXPORT fastcmTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})

# The public headers: include/fastcm/ and the generated version.h as <fastcm/...>; the loopback
# fabric's public headers as <fastcm/loopback/...> (they include each other by file name, so they
# resolve in both trees).
install(DIRECTORY include/fastcm DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} FILES_MATCHING PATTERN "*.h")
install(FILES ${PROJECT_BINARY_DIR}/include/fastcm/version.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/fastcm)
install(FILES
  fabric/loopback/fault_rule.h
  fabric/loopback/loopback_config.h
  fabric/loopback/loopback_fabric.h
  fabric/loopback/port_counters.h
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/fastcm/loopback)

install(TARGETS fastcm-mad RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
if(TARGET fastcm-bench)
  install(TARGETS fastcm-bench RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()

# pkg-config: found through ${pcfiledir}, so the file names the tree it sits in. No Requires: the
# shared library carries its DPDK dependency itself, and a Requires (even .private) would put
# libdpdk's -include rte_config.h -march=... into every consumer's --cflags.
file(RELATIVE_PATH FASTCM_PC_TO_PREFIX "/prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/prefix")
string(REGEX REPLACE "/$" "" FASTCM_PC_TO_PREFIX "${FASTCM_PC_TO_PREFIX}")
configure_file(cmake/fastcm.pc.in ${PROJECT_BINARY_DIR}/fastcm.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/fastcm.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# CMake: find_package(fastcm) gives fastcm::fastcm (include directory, C++20, the library).
set(FASTCM_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/fastcm)
install(EXPORT fastcmTargets NAMESPACE fastcm:: DESTINATION ${FASTCM_CMAKE_DIR})
configure_package_config_file(cmake/fastcmConfig.cmake.in ${PROJECT_BINARY_DIR}/fastcmConfig.cmake
  INSTALL_DESTINATION ${FASTCM_CMAKE_DIR})
# Before 1.0 a minor release may change the ABI (the SONAME says when): same minor required.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/fastcmConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/fastcmConfig.cmake ${PROJECT_BINARY_DIR}/fastcmConfigVersion.cmake
  DESTINATION ${FASTCM_CMAKE_DIR})
