# The Vulkan backend's tests (label vulkan). They run with the Khronos validation layer when it is
# installed (RLX_VK_VALIDATION=1; any message fails the test), keep their pipeline cache in the
# build tree, and use lavapipe when no GPU is present (tests/test_vk_util.c). Without any Vulkan
# device they are SKIPPED, except under CI=true.
if(RLX_VULKAN)
  add_library(rlx_vk_test_util STATIC ${CMAKE_CURRENT_SOURCE_DIR}/test_vk_util.c)
  target_link_libraries(rlx_vk_test_util PUBLIC rlx_test_util)

  function(rlx_add_vk_test name)
    rlx_add_test(NAME ${name} SOURCES ${name}.c LABELS vulkan ${ARGN})
    target_link_libraries(${name} PRIVATE rlx_vk_test_util)
    set_property(TEST ${name} APPEND PROPERTY ENVIRONMENT
      "RLX_VK_VALIDATION=1" "XDG_CACHE_HOME=${CMAKE_BINARY_DIR}/vk-cache")
  endfunction()

  rlx_add_vk_test(test_vk_device)
  rlx_add_vk_test(test_vk_ops)
endif()
