# Fuzz targets: every tests/fuzz/fuzz_<name>.c defines LLVMFuzzerTestOneInput.
#  - fuzz_<name>_replay, a ctest test (label fuzz) that replays tests/corpus/<name>/ (seeds and every
#    crash found so far) through the same entry point, in every build;
#  - with RLX_FUZZ=ON (clang) also fuzz_<name>, the libFuzzer binary tests/fuzz/run.sh drives.
file(GLOB RLX_FUZZ_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/fuzz_*.c)
foreach(src ${RLX_FUZZ_SOURCES})
  get_filename_component(stem ${src} NAME_WE)
  string(REPLACE "fuzz_" "" name ${stem})
  if(RLX_FUZZ)
    add_executable(${stem} ${src})
    target_link_libraries(${stem} PRIVATE rlx_server rlx_static)
    target_link_options(${stem} PRIVATE -fsanitize=fuzzer)
  endif()
  add_executable(${stem}_replay ${src} ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/replay_main.c)
  target_link_libraries(${stem}_replay PRIVATE rlx_server rlx_static)
  add_test(NAME ${stem}_replay COMMAND ${stem}_replay ${CMAKE_CURRENT_SOURCE_DIR}/corpus/${name})
  set_tests_properties(${stem}_replay PROPERTIES LABELS "fuzz;unit")
endforeach()
