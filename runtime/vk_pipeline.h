/* Compute pipelines: the embedded shaders (shaders/kernels.def), their descriptor-set and pipeline
 * layouts, pipelines keyed by (kernel, specialization constants), and the VkPipelineCache kept on
 * disk under $XDG_CACHE_HOME/rlx/ so that a second process start skips driver compilation.
 *
 * Every pipeline layout is [set 0: the program's common set, set 1: the kernel's buffers] with one
 * push-constant range of RLX_VK_PUSH_BYTES, so set 0 stays bound across kernels. */
#ifndef RLX_RUNTIME_VK_PIPELINE_H
#define RLX_RUNTIME_VK_PIPELINE_H

#include <stdbool.h>
#include <stdint.h>

#include "runtime/vk_device.h"

typedef enum {
#define RLX_KERNEL(name, n_bindings, push_bytes, n_spec) RLX_VK_KERNEL_##name,
#include "shaders/kernels.def"
#undef RLX_KERNEL
    RLX_VK_KERNEL_COUNT
} rlx_vk_kernel;

/* Each kernel's named set-1 bindings and spec constants (shaders/kernels.def RLX_BINDING, RLX_SPEC):
 * RLX_VK_BIND(matvec, SYNC) is the binding's index, RLX_VK_BIT(matvec, SYNC) its bit in a dispatch's
 * read or write mask, RLX_VK_SPEC(matvec, NORM) the spec constant's id (and index in a spec array).
 * A variant (RLX_KERNEL_LIKE) takes its kernel's names. */
enum {
#define RLX_KERNEL(name, n_bindings, push_bytes, n_spec)
#define RLX_BINDING(kernel, name, index) RLX_VK_BINDING_##kernel##_##name = (index),
#define RLX_SPEC(kernel, name, id) RLX_VK_SPEC_ID_##kernel##_##name = (id),
#include "shaders/kernels.def"
#undef RLX_SPEC
#undef RLX_BINDING
#undef RLX_KERNEL
};
#define RLX_VK_BIND(kernel, name) RLX_VK_BINDING_##kernel##_##name
#define RLX_VK_BIT(kernel, name) (1u << RLX_VK_BINDING_##kernel##_##name)
#define RLX_VK_SPEC(kernel, name) RLX_VK_SPEC_ID_##kernel##_##name
#define RLX_VK_SPEC_WG 0 /* every kernel's spec constant 0: the workgroup size */

#define RLX_VK_MAX_SPEC 12
#define RLX_VK_MAX_BINDINGS 12
#define RLX_VK_PUSH_BYTES 128 /* the minimum maxPushConstantsSize Vulkan guarantees */
#define RLX_VK_COMMON_BINDINGS 2 /* set 0: scalars, status */

typedef struct rlx_vk_kernel_info {
    const char *name;
    const uint32_t *spirv; /* borrowed: the embedded module */
    uint32_t n_bindings, push_bytes, n_spec;
} rlx_vk_kernel_info;

const rlx_vk_kernel_info *rlx_vk_kernel_get(rlx_vk_kernel k);
/* Storage buffers the widest kernel binds, set 0's included: what a device must allow per stage. */
uint32_t rlx_vk_kernels_max_buffers(void);

typedef struct rlx_vk_pipeline {
    rlx_vk_kernel kernel;
    uint32_t spec[RLX_VK_MAX_SPEC]; /* the manifest's n_spec values; the rest 0 */
    VkPipeline pipeline;            /* owned by the pipeline set */
    VkPipelineLayout layout;        /* borrowed: the kernel's layout */
} rlx_vk_pipeline;

typedef struct rlx_vk_pipeline_stats {
    uint64_t disk_bytes_loaded; /* VkPipelineCache data accepted from disk at creation */
    uint32_t pipelines;         /* distinct pipelines created */
    bool disk_cache;            /* a cache file path is in use */
    char path[512];             /* that path ("" without one) */
} rlx_vk_pipeline_stats;

typedef struct rlx_vk_pipelines rlx_vk_pipelines;

/* Loads the disk cache unless RLX_VK_PIPELINE_CACHE=0. */
rlx_status rlx_vk_pipelines_create(rlx_vk_device *d, rlx_vk_pipelines **out);
/* Writes the disk cache back when pipelines were created, then destroys everything. NULL is fine. */
void rlx_vk_pipelines_destroy(rlx_vk_pipelines *p);

/* The pipeline for kernel k with spec constants spec[0..n_spec) (spec[0] the workgroup size),
 * created on first use; borrowed, valid until the set is destroyed. */
rlx_status rlx_vk_pipeline_get(rlx_vk_pipelines *p, rlx_vk_kernel k, const uint32_t *spec,
                               const rlx_vk_pipeline **out);

VkDescriptorSetLayout rlx_vk_common_set_layout(rlx_vk_pipelines *p);
VkDescriptorSetLayout rlx_vk_kernel_set_layout(rlx_vk_pipelines *p, rlx_vk_kernel k);
VkPipelineLayout rlx_vk_common_pipeline_layout(rlx_vk_pipelines *p); /* for binding set 0 */
rlx_vk_pipeline_stats rlx_vk_pipelines_get_stats(rlx_vk_pipelines *p);

#endif
