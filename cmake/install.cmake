# `cmake --install`: headers, libvkformer.a and libvkformer.so, the vkformer command, a
# CMake package (find_package(vkformer CONFIG) -> vkformer::vkformer) and vkformer.pc.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/vkformer DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
set(vkf_install_targets vkformer)
if(TARGET vkformer_shared)
  list(APPEND vkf_install_targets vkformer_shared)
endif()
install(TARGETS ${vkf_install_targets} EXPORT vkformerTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
if(TARGET vkformer_cli)
  install(TARGETS vkformer_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
# The sample models: `vkformer bench model` runs the date sample by default, found from
# the binary (bin/../share/vkformer/samples).
install(DIRECTORY ${PROJECT_SOURCE_DIR}/samples/dates ${PROJECT_SOURCE_DIR}/samples/forecast
        DESTINATION ${CMAKE_INSTALL_DATADIR}/vkformer/samples)
install(FILES ${PROJECT_SOURCE_DIR}/LICENSE ${PROJECT_SOURCE_DIR}/THIRD_PARTY_NOTICES.md
        DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/vkformer)

set(vkf_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/vkformer)
install(EXPORT vkformerTargets NAMESPACE vkformer:: DESTINATION ${vkf_cmake_dir})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/vkformerConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/vkformerConfig.cmake INSTALL_DESTINATION ${vkf_cmake_dir})
# 0.x: only the same minor version is compatible.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/vkformerConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/vkformerConfig.cmake ${PROJECT_BINARY_DIR}/vkformerConfigVersion.cmake
        DESTINATION ${vkf_cmake_dir})

# The prefix relative to the .pc file, so the package works wherever it is installed
# (cmake --install --prefix, DESTDIR), not only at CMAKE_INSTALL_PREFIX.
file(RELATIVE_PATH VKF_PC_TO_PREFIX "/root/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/root")
configure_file(${PROJECT_SOURCE_DIR}/cmake/vkformer.pc.in ${PROJECT_BINARY_DIR}/vkformer.pc @ONLY)
# vkformer-static.pc names the archive itself: `pkg-config --static vkformer` would only
# add the private libraries after -lvkformer, which the linker resolves to the .so.
configure_file(${PROJECT_SOURCE_DIR}/cmake/vkformer-static.pc.in ${PROJECT_BINARY_DIR}/vkformer-static.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/vkformer.pc ${PROJECT_BINARY_DIR}/vkformer-static.pc
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
