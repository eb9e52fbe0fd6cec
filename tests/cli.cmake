rlx_add_script_test(NAME cli_inspect SCRIPT cli_inspect.sh LABELS e2e)
rlx_add_test(NAME test_runner_incremental SOURCES test_runner_incremental.c LABELS unit)
rlx_add_script_test(NAME cli_text SCRIPT cli_text.sh LABELS e2e)
if(RLX_VULKAN)
  rlx_add_script_test(NAME cli_text_vulkan SCRIPT cli_text_vulkan.sh LABELS "e2e;vulkan")
  set_property(TEST cli_text_vulkan APPEND PROPERTY ENVIRONMENT
    "RLX_VK_VALIDATION=1" "XDG_CACHE_HOME=${CMAKE_BINARY_DIR}/vk-cache")
  # the device choice of tests/vulkan.cmake: the first GPU, else lavapipe
  if(NOT DEFINED ENV{RLX_VK_DEVICE})
    set_property(TEST cli_text_vulkan APPEND PROPERTY ENVIRONMENT "RLX_VK_DEVICE=gpu,llvmpipe")
  endif()
endif()
