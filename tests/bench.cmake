# rlx bench (tools/cmd_bench.c): the CLI on the embedded stories260K, on the CPU backend and on
# Vulkan (lavapipe in CI, validation layer on). Each run keeps its bandwidth cache in a temporary
# XDG_CACHE_HOME (the script sets it), so the measure-then-reuse path is exercised every time.
rlx_add_script_test(NAME cli_bench SCRIPT cli_bench.sh LABELS e2e)
set_property(TEST cli_bench APPEND PROPERTY ENVIRONMENT "RLX_BENCH_TEST_BACKEND=cpu")
if(RLX_VULKAN)
  rlx_add_script_test(NAME cli_bench_vulkan SCRIPT cli_bench.sh LABELS "e2e;vulkan")
  set_property(TEST cli_bench_vulkan APPEND PROPERTY ENVIRONMENT "RLX_BENCH_TEST_BACKEND=vulkan" "RLX_VK_VALIDATION=1")
  # the device choice of tests/vulkan.cmake: the first GPU, else lavapipe
  if(NOT DEFINED ENV{RLX_VK_DEVICE})
    set_property(TEST cli_bench_vulkan APPEND PROPERTY ENVIRONMENT "RLX_VK_DEVICE=gpu,llvmpipe")
  endif()
endif()
