/* Vulkan devices: the process-wide registry (instance, physical devices, capability snapshots,
 * validation messages), device choice, and one opened logical device with its compute queue.
 *
 * The registry is the one piece of mutable global state rlx has (DESIGN.md, "Contracts"): it is
 * made lazily by the first user, reference counted, and torn down by the last release, so the
 * validation layer sees every object destroyed. The loader (libvulkan.so.1) is found at run time
 * through volk; nothing links libvulkan. */
#ifndef RLX_RUNTIME_VK_DEVICE_H
#define RLX_RUNTIME_VK_DEVICE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <volk.h>

#include "rlx/status.h"

#define RLX_VK_MAX_HEAPS 16
#define RLX_VK_MAX_COOPMAT 16

/* One cooperative-matrix shape the device offers (VK_NV_cooperative_matrix's property list). */
typedef struct rlx_vk_coopmat_shape {
    uint32_t m, n, k;
    VkComponentTypeNV a_type, c_type;
} rlx_vk_coopmat_shape;

/* What a physical device can do, read once when the registry is made and never changed. Kernel
 * variants are chosen from it. */
typedef struct rlx_vk_caps {
    uint32_t index; /* position in the registry, as `rlx devices` prints it */
    char name[VK_MAX_PHYSICAL_DEVICE_NAME_SIZE];
    char driver_name[VK_MAX_DRIVER_NAME_SIZE];
    char driver_info[VK_MAX_DRIVER_INFO_SIZE];
    VkPhysicalDeviceType type;
    bool is_cpu;           /* CPU-type device (lavapipe): skipped unless named */
    bool usable;           /* Vulkan 1.2+ with a compute queue: the backend can run on it */
    uint32_t api_version, driver_version, vendor_id, device_id;
    uint8_t device_uuid[VK_UUID_SIZE];
    uint8_t pipeline_cache_uuid[VK_UUID_SIZE];

    /* arithmetic and storage */
    bool fp16, int8, fp64, int64, int16;
    bool bf16;             /* VK_KHR_shader_bfloat16 present */
    bool storage16, storage8; /* storage16 is enabled when the device is created: F16 K/V pools
                                 (shaders/kv_type.glsl) need it */

    /* subgroups */
    uint32_t subgroup_size, subgroup_min, subgroup_max;
    bool subgroup_size_control;
    bool subgroup_arithmetic; /* arithmetic subgroup ops in compute shaders */
    bool subgroup_shuffle;    /* subgroup shuffles in compute shaders (shaders/attention.glsl) */

    /* cooperative matrices */
    bool coopmat_khr;      /* VK_KHR_cooperative_matrix present */
    bool coopmat_nv;       /* VK_NV_cooperative_matrix present */
    uint32_t n_coopmat;
    rlx_vk_coopmat_shape coopmat[RLX_VK_MAX_COOPMAT];
    bool coopmat_f16;      /* shaders/matmul_coop.comp can run: the NV extension and feature, a 16x16x16
                              f16 -> f32 subgroup shape, subgroups of 32, shaderFloat16 and the Vulkan
                              memory model (all enabled when the device is created) */

    /* limits */
    uint64_t max_storage_range;   /* maxStorageBufferRange */
    uint64_t max_alloc;           /* maxMemoryAllocationSize */
    uint64_t storage_align;       /* minStorageBufferOffsetAlignment */
    uint64_t atom_size;           /* nonCoherentAtomSize */
    uint32_t max_wg_count[3], max_wg_size[3], max_wg_invocations, max_shared, max_push;
    uint32_t max_stage_buffers;   /* storage buffers a compute shader may bind: the smaller of
                                     maxPerStageDescriptorStorageBuffers and maxDescriptorSetStorageBuffers
                                     (rlx_vk_kernels_max_buffers must fit) */
    float timestamp_period;       /* ns per timestamp tick; 0 when compute queues cannot time */
    uint32_t queue_family;        /* the compute queue family used */

    bool memory_budget;           /* VK_EXT_memory_budget present: heap budgets and usage can be read */
    bool executable_props;        /* VK_KHR_pipeline_executable_properties present (vk_shader_stats.h) */
    uint32_t n_heaps;
    uint64_t heap_size[RLX_VK_MAX_HEAPS];
    bool heap_device_local[RLX_VK_MAX_HEAPS];
} rlx_vk_caps;

/* Takes a reference on the registry, making it on first use. Errors: no Vulkan loader, instance
 * creation failure (RLX_ERR_DEVICE). RLX_VK_VALIDATION=1 (or rlx_vk_options validation, for a
 * device opened with them) enables VK_LAYER_KHRONOS_validation when it is installed, with a
 * messenger that prints and counts every warning and error. */
rlx_status rlx_vk_registry_acquire(void);
void rlx_vk_registry_release(void);

/* Valid between acquire and release. */
uint32_t rlx_vk_device_count(void);
const rlx_vk_caps *rlx_vk_device_caps(uint32_t index);
/* Whether the validation layer is active in the registry now. */
bool rlx_vk_validation_enabled(void);
/* The largest power of two <= want that device c allows in a 1-D workgroup (1 at least). */
uint32_t rlx_vk_caps_wg_pow2(const rlx_vk_caps *c, uint32_t want);

/* Validation/driver messages of severity warning or error seen by the messenger since the process
 * started (or since the last reset). Tests fail when this is non-zero; the messages themselves are
 * printed to stderr as they arrive. */
uint64_t rlx_vk_validation_message_count(void);
void rlx_vk_validation_message_reset(void);

/* The capability snapshot in one line (for `rlx devices`). */
void rlx_vk_caps_format(const rlx_vk_caps *c, char *buf, size_t size);

/* Picks a device from `want`: an index, a case-insensitive substring of the name, or "gpu" (the
 * first usable non-CPU device), or a comma-separated list of these tried in order (tests use
 * "gpu,llvmpipe"). NULL or "" means $RLX_VK_DEVICE, and when that is unset too, "gpu". CPU-type
 * devices are only chosen when named. Needs an acquired registry. */
rlx_status rlx_vk_device_choose(const char *want, uint32_t *index);

/* An opened logical device. */
typedef struct rlx_vk_device {
    const rlx_vk_caps *caps;        /* borrowed from the registry (held by this device) */
    VkPhysicalDevice phys;          /* borrowed from the registry */
    VkDevice dev;                   /* owned */
    struct VolkDeviceTable vk;      /* device-level entry points of dev */
    VkQueue queue;                  /* owned by dev */
    pthread_mutex_t queue_lock;     /* vkQueueSubmit and the one-shot pool need external sync */
    VkCommandPool pool;             /* owned: one-shot command buffers (uploads) */
    VkPhysicalDeviceMemoryProperties mem;
    uint64_t max_binding;           /* the largest range one descriptor may bind (see vk_device.c) */
    atomic_bool lost;               /* a submit reported VK_ERROR_DEVICE_LOST: every later one fails at once */
    bool shader_stats;              /* created for RLX_VK_SHADER_STATS: pipelines capture statistics */
    bool polls;                     /* a submit polls its fence (a GPU, or RLX_VK_WAIT=poll; see vk_device.c) */
    bool pipeline_cache;            /* pipelines are cached on disk (RLX_VK_PIPELINE_CACHE, vk_pipeline.c) */
} rlx_vk_device;

struct rlx_vk_options;
/* Acquires the registry, chooses the device o names (see rlx_vk_device_choose; none: the first
 * GPU) and creates it with o's validation, fence wait, binding limit, shader statistics and
 * pipeline cache (vk_options.h). */
rlx_status rlx_vk_device_open_with(const struct rlx_vk_options *o, rlx_vk_device **out);
/* rlx_vk_device_open_with the options of the environment (rlx_vk_options_from_env, whose errors it
 * returns), with `want`, where given, as the device. */
rlx_status rlx_vk_device_open(const char *want, rlx_vk_device **out);
void rlx_vk_device_close(rlx_vk_device *d); /* NULL is fine; releases the registry */

/* Submits one command buffer and waits for it (with the queue lock held only for the submit).
 * Device loss (real, or injected by vk_fault.h) marks d lost; on a lost device it fails at once. */
rlx_status rlx_vk_submit_wait(rlx_vk_device *d, VkCommandBuffer cb, VkFence fence, const char *what);

/* A global memory barrier from (src stages, src accesses) to (dst stages, dst accesses). */
void rlx_vk_cmd_barrier(const rlx_vk_device *d, VkCommandBuffer cb, VkPipelineStageFlags src, VkAccessFlags src_access,
                        VkPipelineStageFlags dst, VkAccessFlags dst_access);

/* In a list of copies src[k] -> dst[k] recorded in order (src -1: a fill, which reads nothing),
 * whether copy i touches what an earlier copy since `from` writes, or writes what one reads: then
 * a barrier before it keeps them in order. */
bool rlx_vk_copy_hazard(const int32_t *src, const int32_t *dst, int32_t from, int32_t i);

/* One-shot work: a command buffer from d's pool, recorded by record(ctx, cb), submitted and waited
 * for, then freed (downloads, page copies). Errors name the work: "allocating a <noun>", "creating
 * a <noun> fence", "beginning / ending a <noun>", and `doing` for the submission. */
typedef void (*rlx_vk_record_fn)(void *ctx, VkCommandBuffer cb);
rlx_status rlx_vk_run_once(rlx_vk_device *d, rlx_vk_record_fn record, void *ctx, const char *noun, const char *doing);

/* How one submission is waited for. expect_ms: how long the work should take (what the same work
 * took last time), 0 when unknown. took_ms (may be NULL) receives the time from submit to the
 * fence seen signalled. */
typedef struct rlx_vk_wait {
    double expect_ms;
    double *took_ms;
} rlx_vk_wait;

/* Submits n command buffers in order in one batch and waits as rlx_vk_submit_wait does. On a GPU
 * the wait polls the fence: for work expected to take longer than a few milliseconds it first
 * sleeps in the driver until shortly before the expected end, so a long decode step neither keeps
 * a core busy throughout nor pays the driver's wake-up latency (~0.1 ms) after it. */
rlx_status rlx_vk_submit_batch(rlx_vk_device *d, const VkCommandBuffer *cbs, uint32_t n, VkFence fence,
                               rlx_vk_wait wait, const char *what);

#endif
