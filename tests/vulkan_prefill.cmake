# The prefill kernels of the Vulkan backend (tiled and cooperative-matrix matmul, tiled flash
# attention) against the CPU reference, with tests/vulkan.cmake's environment (validation on).
# Included after vulkan.cmake (the list is sorted), whose rlx_add_vk_test(_with) it uses.
if(RLX_VULKAN)
  rlx_add_vk_test(test_vk_prefill)
  # ... and with the GPU's plans (RLX_VK_PLANS=gpu: short prompts on matvec.comp, the tiled kernels'
  # short-row rule), which lavapipe would otherwise never take
  rlx_add_vk_test_with(test_vk_prefill_gpu_plans test_vk_prefill RLX_VK_PLANS=gpu)
endif()
