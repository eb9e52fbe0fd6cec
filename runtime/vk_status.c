/* VkResult -> rlx_status. Result names follow the Vulkan specification's VkResult table. */
#include "runtime/vk_status.h"

const char *rlx_vk_result_name(VkResult r) {
    switch (r) {
#define NAME(x)                                                                                                        \
    case x: return #x;
        NAME(VK_SUCCESS)
        NAME(VK_NOT_READY)
        NAME(VK_TIMEOUT)
        NAME(VK_EVENT_SET)
        NAME(VK_EVENT_RESET)
        NAME(VK_INCOMPLETE)
        NAME(VK_ERROR_OUT_OF_HOST_MEMORY)
        NAME(VK_ERROR_OUT_OF_DEVICE_MEMORY)
        NAME(VK_ERROR_INITIALIZATION_FAILED)
        NAME(VK_ERROR_DEVICE_LOST)
        NAME(VK_ERROR_MEMORY_MAP_FAILED)
        NAME(VK_ERROR_LAYER_NOT_PRESENT)
        NAME(VK_ERROR_EXTENSION_NOT_PRESENT)
        NAME(VK_ERROR_FEATURE_NOT_PRESENT)
        NAME(VK_ERROR_INCOMPATIBLE_DRIVER)
        NAME(VK_ERROR_TOO_MANY_OBJECTS)
        NAME(VK_ERROR_FORMAT_NOT_SUPPORTED)
        NAME(VK_ERROR_FRAGMENTED_POOL)
        NAME(VK_ERROR_UNKNOWN)
        NAME(VK_ERROR_OUT_OF_POOL_MEMORY)
        NAME(VK_ERROR_INVALID_EXTERNAL_HANDLE)
        NAME(VK_ERROR_FRAGMENTATION)
        NAME(VK_ERROR_INVALID_OPAQUE_CAPTURE_ADDRESS)
        NAME(VK_PIPELINE_COMPILE_REQUIRED)
#undef NAME
    default: break;
    }
    return "an unknown VkResult";
}

rlx_status rlx_vk_check(VkResult r, const char *what) {
    if (r >= 0) return NULL; /* VK_SUCCESS and the positive status codes are not errors */
    switch (r) {
    case VK_ERROR_OUT_OF_HOST_MEMORY:
        return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "%s: out of host memory (VK_ERROR_OUT_OF_HOST_MEMORY)", what);
    case VK_ERROR_OUT_OF_DEVICE_MEMORY:
        return rlx_errorf(RLX_ERR_OUT_OF_MEMORY,
                          "%s: out of device memory (VK_ERROR_OUT_OF_DEVICE_MEMORY); try a smaller context or model",
                          what);
    case VK_ERROR_DEVICE_LOST:
        return rlx_errorf(RLX_ERR_DEVICE,
                          "%s: the Vulkan device was lost (VK_ERROR_DEVICE_LOST: driver reset, hang or crash); "
                          "the backend must be recreated",
                          what);
    case VK_ERROR_INCOMPATIBLE_DRIVER:
        /* only vkCreateInstance returns it: no device to use, as with no GPU, so that the
         * best-available choice falls back to the CPU */
        return rlx_errorf(RLX_ERR_DEVICE,
                          "%s: no Vulkan driver found (VK_ERROR_INCOMPATIBLE_DRIVER: none, or none of the API "
                          "version asked for); install the GPU's driver, or mesa-vulkan-drivers for lavapipe",
                          what);
    case VK_ERROR_LAYER_NOT_PRESENT:
    case VK_ERROR_EXTENSION_NOT_PRESENT:
    case VK_ERROR_FEATURE_NOT_PRESENT:
    case VK_ERROR_FORMAT_NOT_SUPPORTED:
        return rlx_errorf(RLX_ERR_UNSUPPORTED, "%s: %s", what, rlx_vk_result_name(r));
    default:
        return rlx_errorf(RLX_ERR_DEVICE, "%s: %s (%d)", what, rlx_vk_result_name(r), (int)r);
    }
}
