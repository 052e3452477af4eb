# ki_embed_directory(target dir symbol): compiles every file of `dir` into
# `target` as a sorted table {name, bytes} reachable through
#   const ki::EmbeddedFile* <symbol>(size_t* count);
# so the binary needs no data files at run time.
function(ki_embed_directory target dir symbol)
  file(GLOB files CONFIGURE_DEPENDS ${dir}/*)
  list(SORT files)
  set(out ${CMAKE_BINARY_DIR}/embedded/${symbol}.cc)
  add_custom_command(
    OUTPUT ${out}
    COMMAND ${CMAKE_COMMAND} -DDIR=${dir} -DOUT=${out} -DSYMBOL=${symbol}
            -P ${CMAKE_SOURCE_DIR}/cmake/EmbedGen.cmake
    DEPENDS ${files} ${CMAKE_SOURCE_DIR}/cmake/EmbedGen.cmake
    COMMENT "Embedding ${dir}")
  target_sources(${target} PRIVATE ${out})
  # Every generated file names its arrays alike (kData0, kTable): not
  # batched with other files when the target is a unity build (KI_QUICK).
  set_source_files_properties(${out} PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
endfunction()
