# Fault injection and device-memory limits on the Vulkan backend (label vulkan; runtime/vk_fault.h,
# docs/RELIABILITY.md). They run like tests/vulkan.cmake's programs: validation layer on (any message
# fails), the pipeline cache in the build tree, the first GPU else lavapipe. That file is included
# after this one (the lists are included in name order), so the tests are added once the whole
# directory has been read.
if(RLX_VULKAN)
  function(rlx_add_fault_tests)
    rlx_add_vk_test(test_vk_faults ARGS $<TARGET_FILE:rlx_cli>)
    rlx_add_vk_test(test_vk_limits ARGS $<TARGET_FILE:rlx_cli>)
  endfunction()
  cmake_language(DEFER CALL rlx_add_fault_tests)
endif()
