# Runner tests (engineer D1): graph structure and generator behaviour, and a smoke check of one
# model per family against its reference (the full matrix is below).
rlx_add_test(NAME test_runner_unit SOURCES test_runner_unit.c LABELS unit)
add_test(NAME test_runner_unit_families COMMAND test_runner_unit families)
set_tests_properties(test_runner_unit_families PROPERTIES LABELS "unit;parity" SKIP_RETURN_CODE 77
  ENVIRONMENT "RLX_SOURCE_DIR=${CMAKE_SOURCE_DIR}")

# One program, one ctest per model: stories260K is in the repo (always runs), the rest are fixtures.
add_executable(test_runner_smoke ${CMAKE_CURRENT_LIST_DIR}/test_runner_smoke.c)
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
# the repo): on the CPU backend here, and on Vulkan in tests/vulkan/tests.cmake.
rlx_add_test(NAME test_runner_argmax SOURCES test_runner_argmax.c LABELS e2e)
rlx_add_test(NAME test_runner_incremental SOURCES test_runner_incremental.c LABELS unit)

# Sampling, the validation CLI (rlx logits / rlx generate) and the parity matrix against the
# fixtures (../shared/fixtures). Families run as separate tests so failures localise and
# ctest -j parallelises.
rlx_add_test(NAME test_sampling SOURCES test_sampling.c LABELS unit)

# One program, several ctest tests: rlx_add_test_run(NAME test PROGRAM target LABELS ... ARGS ...)
function(rlx_add_test_run)
  cmake_parse_arguments(T "" "NAME;PROGRAM" "LABELS;ARGS" ${ARGN})
  add_test(NAME ${T_NAME} COMMAND ${T_PROGRAM} ${T_ARGS})
  set_tests_properties(${T_NAME} PROPERTIES LABELS "${T_LABELS}" SKIP_RETURN_CODE 77
    ENVIRONMENT "RLX_SOURCE_DIR=${CMAKE_SOURCE_DIR}")
endfunction()

# Family parity against ../shared/fixtures/models/<family>/ref-*.json.
add_executable(test_family_parity ${CMAKE_CURRENT_LIST_DIR}/test_family_parity.c)
target_link_libraries(test_family_parity PRIVATE rlx_test_util)
foreach(fam llama32 gemma3 qwen3moe)
  rlx_add_test_run(NAME family_parity_${fam} PROGRAM test_family_parity LABELS parity ARGS ${fam})
endforeach()
# The hybrids (recurrent + attention layers): their float files against ref-hf.json.
foreach(fam qwen35 qwen35moe)
  rlx_add_test_run(NAME family_parity_${fam} PROGRAM test_family_parity LABELS parity ARGS ${fam} hf F32 F16)
endforeach()
# qwen3 has every weight type: float and quantized files run as two tests.
rlx_add_test_run(NAME family_parity_qwen3 PROGRAM test_family_parity LABELS parity ARGS qwen3 hf F32 F16 BF16)
rlx_add_test_run(NAME family_parity_qwen3_quant PROGRAM test_family_parity LABELS parity
  ARGS qwen3 Q8_0 Q6_K Q5_K_M Q4_K_M Q4_0)

# Path parity (properties: cached == naive, bucketed == exact, ...), per family and on the
# embedded stories260K, which always runs.
add_executable(test_path_parity ${CMAKE_CURRENT_LIST_DIR}/test_path_parity.c)
target_link_libraries(test_path_parity PRIVATE rlx_test_util)
rlx_add_test_run(NAME path_parity_stories260K PROGRAM test_path_parity LABELS parity ARGS stories260K)
rlx_add_test_run(NAME path_parity_qwen3 PROGRAM test_path_parity LABELS parity ARGS models/qwen3/qwen3-F32.gguf)
rlx_add_test_run(NAME path_parity_llama32 PROGRAM test_path_parity LABELS parity
  ARGS models/llama32/llama32-F32.gguf)
rlx_add_test_run(NAME path_parity_gemma3 PROGRAM test_path_parity LABELS parity ARGS models/gemma3/gemma3-F16.gguf)
rlx_add_test_run(NAME path_parity_qwen3moe PROGRAM test_path_parity LABELS parity
  ARGS models/qwen3moe/qwen3moe-F16.gguf)

# Bad input to the runner: stories260K always; the file checks again on a quantized fixture.
add_executable(test_runner_errors ${CMAKE_CURRENT_LIST_DIR}/test_runner_errors.c)
target_link_libraries(test_runner_errors PRIVATE rlx_test_util)
rlx_add_test_run(NAME runner_errors PROGRAM test_runner_errors LABELS unit)
rlx_add_test_run(NAME runner_errors_qwen3_q4_k_m PROGRAM test_runner_errors LABELS unit
  ARGS models/qwen3/qwen3-Q4_K_M.gguf qwen3)


# Non-finite logits stop generation with an error naming the step, on every sampling path (a model
# built by the test; CPU backend here, Vulkan as vk_runner_nonfinite in tests/vulkan/tests.cmake).
rlx_add_test(NAME test_runner_nonfinite SOURCES test_runner_nonfinite.c ${RLX_TEST_SUPPORT}/gguf_builder.c LABELS unit)

# The paged KV pool's bookkeeping against a simulated pool: targeted cases and random operations.
# The _collide build masks the prefix hash to 2 bits, so only the token and parent checks keep
# prefix matches right (its own copy of runners/kv_pages.c; the library's is then never linked in).
rlx_add_test(NAME test_kv_pages SOURCES test_kv_pages.c LABELS unit)
rlx_add_test(NAME test_kv_pages_collide SOURCES test_kv_pages.c ${CMAKE_SOURCE_DIR}/runners/kv_pages.c LABELS unit)
target_compile_definitions(test_kv_pages_collide PRIVATE RLX_KV_PAGES_HASH_MASK=3)

# The engine's properties on the CPU (batched == alone, chunked == one-shot, fork, prefix sharing,
# preemption, truncate): stories260K always; fixture models with sliding windows and experts too.
rlx_add_test(NAME test_engine SOURCES test_engine.c LABELS unit)
# The default KV budget's rule, against a backend that reports a device of a chosen size.
rlx_add_test(NAME test_engine_budget SOURCES test_engine_budget.c LABELS unit)
foreach(m qwen3/qwen3-F32.gguf gemma3/gemma3-F16.gguf qwen3moe/qwen3moe-F16.gguf qwen35/qwen35-F32.gguf
          qwen35moe/qwen35moe-F16.gguf)
  get_filename_component(stem ${m} NAME_WE)
  rlx_add_test_run(NAME engine_${stem} PROGRAM test_engine LABELS parity ARGS models/${m})
endforeach()

# The hybrids' recurrent state in the engine and the runner: reference prompts in small chunks,
# checkpoints, speculative rollback, a 10-turn chat's prefill per turn.
rlx_add_test(NAME test_engine_state SOURCES test_engine_state.c LABELS parity ARGS qwen35 models/qwen35/qwen35-F32.gguf)
add_test(NAME test_engine_state_qwen35moe COMMAND test_engine_state qwen35moe models/qwen35moe/qwen35moe-F16.gguf)
set_tests_properties(test_engine_state_qwen35moe PROPERTIES LABELS "parity" SKIP_RETURN_CODE 77
  ENVIRONMENT "RLX_SOURCE_DIR=${CMAKE_SOURCE_DIR}")

# The engine's books under random operations on a recurrent model (state slots, checkpoints,
# rewinds, preemption), against a model of each sequence as its history; finished sequences ==
# alone. A few seconds: it runs in the sanitized pass too.
rlx_add_test(NAME test_engine_props SOURCES test_engine_props.c LABELS parity)
# Seed 11 once left two checkpoints sharing every page they held, which the pool never got back.
add_test(NAME test_engine_props_seed11 COMMAND test_engine_props)
set_tests_properties(test_engine_props_seed11 PROPERTIES LABELS "parity" SKIP_RETURN_CODE 77
  ENVIRONMENT "RLX_SOURCE_DIR=${CMAKE_SOURCE_DIR};RLX_PROP_SEED=11")

# Qwen3.5's layer on the CPU against ref-hf.json, with the session's recurrent state made by the
# test (the engine does not hold it yet).
add_executable(test_qwen35_graph ${CMAKE_CURRENT_LIST_DIR}/test_qwen35_graph.c)
target_link_libraries(test_qwen35_graph PRIVATE rlx_test_util)
foreach(family qwen35 qwen35moe)
  add_test(NAME test_qwen35_graph_${family} COMMAND test_qwen35_graph ${family})
  set_tests_properties(test_qwen35_graph_${family} PROPERTIES LABELS "parity" SKIP_RETURN_CODE 77
    ENVIRONMENT "RLX_SOURCE_DIR=${CMAKE_SOURCE_DIR}")
endforeach()
