# The prefill kernels of the Vulkan backend (tiled and cooperative-matrix matmul, tiled flash
# attention) against the CPU reference, with tests/vulkan.cmake's environment (validation on).
# Included after vulkan.cmake (the list is sorted), whose rlx_add_vk_test it uses.
if(RLX_VULKAN)
  rlx_add_vk_test(test_vk_prefill)
  # ... and with the GPU's plans (RLX_VK_PLANS=gpu: short prompts on matvec.comp, the tiled kernels'
  # short-row rule), which lavapipe would otherwise never take
  add_test(NAME test_vk_prefill_gpu_plans COMMAND test_vk_prefill)
  set_tests_properties(test_vk_prefill_gpu_plans PROPERTIES LABELS vulkan SKIP_RETURN_CODE 77
                       ENVIRONMENT "RLX_SOURCE_DIR=${CMAKE_SOURCE_DIR};${RLX_VK_TEST_ENV};RLX_VK_PLANS=gpu")
endif()
