/* The copy-kernel bandwidth probe: two device-local buffers, one untimed copy (it also faults in
 * lazily backed memory), then several timed copies. With timestamp queries the copies share one
 * submit and each is timed on the device; without them each copy is its own submit, timed by the
 * host clock (which then includes the submit latency: a lower bound on the bandwidth). */
#include "runtime/vk_bandwidth.h"

#include <stdlib.h>
#include <time.h>

#include "runtime/vk_device.h"
#include "runtime/vk_memory.h"
#include "runtime/vk_pipeline.h"
#include "runtime/vk_status.h"

#define BW_MAX_REPS 10
#define BW_WG 256
#define BW_DEFAULT_BYTES (512ull << 20)
/* A CPU-type device (lavapipe) copies well under 1 GB/s on a small CI machine: a smaller buffer
 * and fewer repetitions keep the probe near a second, and 64 MiB still exceeds the last-level
 * cache of most hosts. */
#define BW_CPU_DEVICE_BYTES (64ull << 20)
#define BW_CPU_DEVICE_REPS 5

typedef struct bw_run {
    rlx_vk_device *d;            /* owned */
    rlx_vk_heap *heap;           /* owned: device-local */
    rlx_vk_pipelines *pipes;     /* owned */
    const rlx_vk_pipeline *pipe; /* borrowed from pipes */
    rlx_vk_alloc src, dst;       /* owned (heap) */
    VkDescriptorPool pool;       /* owned */
    VkDescriptorSet set;         /* from pool */
    VkCommandPool cmd_pool;      /* owned */
    VkFence fence;               /* owned */
    VkQueryPool queries;         /* owned; VK_NULL_HANDLE when the queue cannot time */
    uint64_t ts_mask;            /* the queue's valid timestamp bits */
    uint32_t wg, groups, n_words;
    uint32_t reps;               /* timed copies, at most BW_MAX_REPS */
} bw_run;

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static uint64_t largest_device_heap(const rlx_vk_caps *c) {
    uint64_t m = 0;
    for (uint32_t i = 0; i < c->n_heaps; i++)
        if (c->heap_device_local[i] && c->heap_size[i] > m) m = c->heap_size[i];
    return m;
}

/* The copy size: the request (or the default), capped by the heap and the binding limit, in
 * whole workgroups of 16-byte words. */
static rlx_status choose_size(bw_run *b, uint64_t want, uint64_t *bytes) {
    const rlx_vk_caps *c = b->d->caps;
    if (!want) want = c->is_cpu ? BW_CPU_DEVICE_BYTES : BW_DEFAULT_BYTES;
    uint64_t heap = largest_device_heap(c);
    if (heap && want > heap / 8) want = heap / 8;
    if (want > b->d->max_binding) want = b->d->max_binding;
    uint64_t unit = 16ull * b->wg;
    want -= want % unit;
    if (want == 0)
        return rlx_errorf(RLX_ERR_UNSUPPORTED, "bandwidth probe on %s: no room for one workgroup's copy (%llu bytes)",
                          c->name, (unsigned long long)unit);
    *bytes = want;
    return NULL;
}

static rlx_status make_descriptors(bw_run *b) {
    rlx_vk_device *d = b->d;
    VkDescriptorPoolSize size = {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 2};
    VkDescriptorPoolCreateInfo pi = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
        .maxSets = 1,
        .poolSizeCount = 1,
        .pPoolSizes = &size,
    };
    RLX_VK_TRY(d->vk.vkCreateDescriptorPool(d->dev, &pi, NULL, &b->pool), "bandwidth probe: descriptor pool");
    VkDescriptorSetLayout layout = rlx_vk_kernel_set_layout(b->pipes, RLX_VK_KERNEL_bw_copy);
    VkDescriptorSetAllocateInfo ai = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
        .descriptorPool = b->pool,
        .descriptorSetCount = 1,
        .pSetLayouts = &layout,
    };
    RLX_VK_TRY(d->vk.vkAllocateDescriptorSets(d->dev, &ai, &b->set), "bandwidth probe: descriptor set");
    VkDescriptorBufferInfo bi[2] = {
        {b->src.buffer, b->src.offset, b->src.size},
        {b->dst.buffer, b->dst.offset, b->dst.size},
    };
    VkWriteDescriptorSet w = {
        .sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
        .dstSet = b->set,
        .descriptorCount = 2,
        .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
        .pBufferInfo = bi,
    };
    d->vk.vkUpdateDescriptorSets(d->dev, 1, &w, 0, NULL);
    return NULL;
}

/* Timestamp queries when the compute queue family has valid timestamp bits. */
static rlx_status make_queries(bw_run *b) {
    rlx_vk_device *d = b->d;
    uint32_t n = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(d->phys, &n, NULL);
    VkQueueFamilyProperties *q = calloc(n ? n : 1, sizeof *q);
    if (!q) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "bandwidth probe: %u queue families", n);
    vkGetPhysicalDeviceQueueFamilyProperties(d->phys, &n, q);
    uint32_t bits = d->caps->queue_family < n ? q[d->caps->queue_family].timestampValidBits : 0;
    free(q);
    if (bits == 0 || d->caps->timestamp_period <= 0.0f) return NULL;
    b->ts_mask = bits >= 64 ? UINT64_MAX : (1ull << bits) - 1;
    VkQueryPoolCreateInfo qi = {
        .sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
        .queryType = VK_QUERY_TYPE_TIMESTAMP,
        .queryCount = BW_MAX_REPS + 1,
    };
    RLX_VK_TRY(d->vk.vkCreateQueryPool(d->dev, &qi, NULL, &b->queries), "bandwidth probe: timestamp pool");
    return NULL;
}

static rlx_status setup(bw_run *b, uint64_t want, uint64_t *bytes) {
    rlx_vk_device *d = b->d;
    b->wg = BW_WG;
    b->reps = d->caps->is_cpu ? BW_CPU_DEVICE_REPS : BW_MAX_REPS;
    if (b->wg > d->caps->max_wg_size[0]) b->wg = d->caps->max_wg_size[0];
    if (b->wg > d->caps->max_wg_invocations) b->wg = d->caps->max_wg_invocations;
    RLX_TRY(choose_size(b, want, bytes));
    b->n_words = (uint32_t)(*bytes / 16);
    /* enough groups to fill any GPU; the kernel's grid-stride loop covers the rest */
    uint64_t groups = b->n_words / b->wg, cap = d->caps->max_wg_count[0] < 65535 ? d->caps->max_wg_count[0] : 65535;
    b->groups = (uint32_t)(groups < cap ? groups : cap);
    RLX_TRY(rlx_vk_heap_create(d, RLX_VK_MEM_DEVICE, &b->heap));
    RLX_TRY(rlx_vk_heap_alloc(b->heap, *bytes, "bandwidth probe source", &b->src));
    RLX_TRY(rlx_vk_heap_alloc(b->heap, *bytes, "bandwidth probe destination", &b->dst));
    RLX_TRY(rlx_vk_pipelines_create(d, &b->pipes));
    uint32_t spec[1] = {b->wg};
    RLX_TRY(rlx_vk_pipeline_get(b->pipes, RLX_VK_KERNEL_bw_copy, spec, &b->pipe));
    RLX_TRY(make_descriptors(b));
    VkCommandPoolCreateInfo ci = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
        .queueFamilyIndex = d->caps->queue_family,
    };
    RLX_VK_TRY(d->vk.vkCreateCommandPool(d->dev, &ci, NULL, &b->cmd_pool), "bandwidth probe: command pool");
    VkFenceCreateInfo fi = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    RLX_VK_TRY(d->vk.vkCreateFence(d->dev, &fi, NULL, &b->fence), "bandwidth probe: fence");
    return make_queries(b);
}

static void teardown(bw_run *b) {
    rlx_vk_device *d = b->d;
    if (b->queries) d->vk.vkDestroyQueryPool(d->dev, b->queries, NULL);
    if (b->fence) d->vk.vkDestroyFence(d->dev, b->fence, NULL);
    if (b->cmd_pool) d->vk.vkDestroyCommandPool(d->dev, b->cmd_pool, NULL);
    if (b->pool) d->vk.vkDestroyDescriptorPool(d->dev, b->pool, NULL);
    rlx_vk_pipelines_destroy(b->pipes);
    if (b->heap) {
        rlx_vk_heap_free(b->heap, &b->src);
        rlx_vk_heap_free(b->heap, &b->dst);
    }
    rlx_vk_heap_destroy(b->heap);
}

static void barrier(bw_run *b, VkCommandBuffer cb, VkPipelineStageFlags src, VkAccessFlags src_access) {
    VkMemoryBarrier mb = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
        .srcAccessMask = src_access,
        .dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT,
    };
    b->d->vk.vkCmdPipelineBarrier(cb, src, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &mb, 0, NULL, 0, NULL);
}

/* One copy, after a barrier against the previous one (both write dst). */
static void record_copy(bw_run *b, VkCommandBuffer cb) {
    rlx_vk_device *d = b->d;
    barrier(b, cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT);
    d->vk.vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, b->pipe->pipeline);
    d->vk.vkCmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE, b->pipe->layout, 1, 1, &b->set, 0, NULL);
    d->vk.vkCmdPushConstants(cb, b->pipe->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof b->n_words, &b->n_words);
    d->vk.vkCmdDispatch(cb, b->groups, 1, 1);
}

static rlx_status begin(bw_run *b, VkCommandBuffer *cb) {
    rlx_vk_device *d = b->d;
    VkCommandBufferAllocateInfo ai = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
        .commandPool = b->cmd_pool,
        .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
        .commandBufferCount = 1,
    };
    RLX_VK_TRY(d->vk.vkAllocateCommandBuffers(d->dev, &ai, cb), "bandwidth probe: command buffer");
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    RLX_VK_TRY(d->vk.vkBeginCommandBuffer(*cb, &bi), "bandwidth probe: beginning a command buffer");
    return NULL;
}

/* Fills both buffers (so no page of them is left untouched) and runs the untimed copy. */
static rlx_status warm_up(bw_run *b, VkCommandBuffer cb) {
    rlx_vk_device *d = b->d;
    d->vk.vkCmdFillBuffer(cb, b->src.buffer, b->src.offset, b->src.size, 0x5a5a5a5a);
    d->vk.vkCmdFillBuffer(cb, b->dst.buffer, b->dst.offset, b->dst.size, 0);
    barrier(b, cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT);
    record_copy(b, cb);
    RLX_VK_TRY(d->vk.vkEndCommandBuffer(cb), "bandwidth probe: ending a command buffer");
    return rlx_vk_submit_wait(d, cb, b->fence, "bandwidth probe: warm-up copy");
}

static rlx_status time_on_device(bw_run *b, VkCommandBuffer cb, double *best) {
    rlx_vk_device *d = b->d;
    d->vk.vkCmdResetQueryPool(cb, b->queries, 0, b->reps + 1);
    /* each stamp is written once everything before it has finished: stamp r+1 - stamp r is copy r */
    d->vk.vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, b->queries, 0);
    for (uint32_t r = 0; r < b->reps; r++) {
        record_copy(b, cb);
        d->vk.vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, b->queries, r + 1);
    }
    RLX_VK_TRY(d->vk.vkEndCommandBuffer(cb), "bandwidth probe: ending a command buffer");
    RLX_TRY(rlx_vk_submit_wait(d, cb, b->fence, "bandwidth probe: timed copies"));
    uint64_t ts[BW_MAX_REPS + 1];
    RLX_VK_TRY(d->vk.vkGetQueryPoolResults(d->dev, b->queries, 0, b->reps + 1, (b->reps + 1) * sizeof ts[0], ts, sizeof ts[0],
                                           VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT),
               "bandwidth probe: reading timestamps");
    *best = 0.0;
    for (uint32_t r = 0; r < b->reps; r++) {
        double s = (double)((ts[r + 1] - ts[r]) & b->ts_mask) * d->caps->timestamp_period * 1e-9;
        if (s > 0.0 && (*best == 0.0 || s < *best)) *best = s;
    }
    return NULL;
}

static rlx_status time_on_host(bw_run *b, VkCommandBuffer cb, double *best) {
    rlx_vk_device *d = b->d;
    record_copy(b, cb);
    RLX_VK_TRY(d->vk.vkEndCommandBuffer(cb), "bandwidth probe: ending a command buffer");
    *best = 0.0;
    for (uint32_t r = 0; r < b->reps; r++) {
        double t0 = now_s();
        RLX_TRY(rlx_vk_submit_wait(d, cb, b->fence, "bandwidth probe: timed copy"));
        double s = now_s() - t0;
        if (s > 0.0 && (*best == 0.0 || s < *best)) *best = s;
    }
    return NULL;
}

static rlx_status measure(bw_run *b, uint64_t want, rlx_vk_bandwidth *out) {
    uint64_t bytes = 0;
    RLX_TRY(setup(b, want, &bytes));
    VkCommandBuffer cb[2];
    RLX_TRY(begin(b, &cb[0]));
    RLX_TRY(warm_up(b, cb[0]));
    RLX_TRY(begin(b, &cb[1]));
    double best = 0.0;
    RLX_TRY(b->queries ? time_on_device(b, cb[1], &best) : time_on_host(b, cb[1], &best));
    if (best <= 0.0)
        return rlx_errorf(RLX_ERR_DEVICE, "bandwidth probe on %s: no copy took measurable time", b->d->caps->name);
    *out = (rlx_vk_bandwidth){
        .bytes_per_s = 2.0 * (double)bytes / best,
        .copy_bytes = bytes,
        .reps = b->reps,
        .gpu_timestamps = b->queries != VK_NULL_HANDLE,
        .best_s = best,
    };
    return NULL;
}

rlx_status rlx_vk_measure_bandwidth(const char *device, uint64_t copy_bytes, rlx_vk_bandwidth *out) {
    if (!out) return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "rlx_vk_measure_bandwidth: out must not be NULL");
    bw_run b = {0};
    RLX_TRY(rlx_vk_device_open(device, &b.d));
    rlx_status s = measure(&b, copy_bytes, out);
    teardown(&b);
    rlx_vk_device_close(b.d);
    return s ? rlx_status_annotate(s, "measuring memory bandwidth") : NULL;
}
