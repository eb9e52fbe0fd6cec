/* Introspection of a Vulkan backend for tests and tools (the backend itself is reached through
 * ir/backend.h: rlx_backend_vulkan_create). `b` must come from rlx_backend_vulkan_create. */
#ifndef RLX_RUNTIME_VK_BACKEND_H
#define RLX_RUNTIME_VK_BACKEND_H

#include "ir/backend.h"
#include "runtime/vk_device.h"
#include "runtime/vk_memory.h"
#include "runtime/vk_pipeline.h"

const rlx_vk_caps *rlx_vk_backend_caps(const rlx_backend *b);
rlx_vk_pipeline_stats rlx_vk_backend_pipeline_stats(const rlx_backend *b);
rlx_vk_heap_stats rlx_vk_backend_device_memory(const rlx_backend *b);

#endif
