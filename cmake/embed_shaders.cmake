# Embeds every GLSL source in shaders/ into the library as a byte array, so the
# runtime compiles the very text that was built with it (no search paths at run time).
function(vkf_embed_shaders out)
  set(inputs ${ARGN})
  add_custom_command(
    OUTPUT ${out}
    COMMAND ${CMAKE_COMMAND} -DOUT=${out} "-DINPUTS=${inputs}" -P ${PROJECT_SOURCE_DIR}/cmake/embed_shaders_run.cmake
    DEPENDS ${inputs} ${PROJECT_SOURCE_DIR}/cmake/embed_shaders_run.cmake
    COMMENT "Embedding ${PROJECT_NAME} shaders"
    VERBATIM)
endfunction()
