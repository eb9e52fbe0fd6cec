# The prefill kernels of the Vulkan backend (tiled and cooperative-matrix matmul, tiled flash
# attention) against the CPU reference, with tests/vulkan.cmake's environment (validation on).
# Included after vulkan.cmake (the list is sorted), whose rlx_add_vk_test it uses.
if(RLX_VULKAN)
  rlx_add_vk_test(test_vk_prefill)
endif()
