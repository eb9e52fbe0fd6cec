# Runner tests (engineer D1): graph structure and generator behaviour, and a smoke check of one
# model per family against its reference (the full matrix is in parity.cmake).
rlx_add_test(NAME test_runner_unit SOURCES test_runner_unit.c LABELS unit)
add_test(NAME test_runner_unit_families COMMAND test_runner_unit families)
set_tests_properties(test_runner_unit_families PROPERTIES LABELS "unit;parity" SKIP_RETURN_CODE 77
  ENVIRONMENT "RLX_SOURCE_DIR=${CMAKE_SOURCE_DIR}")

# One program, one ctest per model: stories260K is in the repo (always runs), the rest are fixtures.
add_executable(test_runner_smoke test_runner_smoke.c)
target_link_libraries(test_runner_smoke PRIVATE rlx_test_util)
foreach(model stories qwen3 llama32 gemma3 qwen3moe)
  if(model STREQUAL "stories")
    set(labels "e2e")
  else()
    set(labels "parity")
  endif()
  add_test(NAME test_runner_smoke_${model} COMMAND test_runner_smoke ${model})
  set_tests_properties(test_runner_smoke_${model} PROPERTIES LABELS "${labels}" SKIP_RETURN_CODE 77
    ENVIRONMENT "RLX_SOURCE_DIR=${CMAKE_SOURCE_DIR}")
endforeach()

# Greedy generation with the argmax taken on the device == the host-argmax loop (stories260K, in
# the repo): on the CPU backend here, and on Vulkan in tests/vulkan.cmake.
rlx_add_test(NAME test_runner_argmax SOURCES test_runner_argmax.c LABELS e2e)
