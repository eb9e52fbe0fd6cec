/* The Vulkan backend behind ir/backend.h: backend and session lifetime (weights uploaded once in
 * their stored type, the KV cache allocated on the device), with compile and run in
 * vk_compile.c. */
#include "runtime/vk_backend.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/vk_fault.h"
#include "runtime/vk_internal.h"
#include "runtime/vk_status.h"

/* ---- session ---- */

static void session_destroy(rlx_session *s) {
    if (!s) return;
    rlx_vk_backend *b = s->b;
    for (size_t i = 0; s->weights && i < s->n_weights; i++) {
        vk_weight *w = &s->weights[i];
        for (uint32_t k = 0; w->parts && k < w->n_parts; k++) rlx_vk_heap_free(b->dev_heap, &w->parts[k].alloc);
        free(w->parts);
        free(w->name);
    }
    free(s->weights);
    for (int32_t l = 0; l < s->kv.n_layer; l++) {
        if (s->k_cache) rlx_vk_heap_free(b->dev_heap, &s->k_cache[l]);
        if (s->v_cache) rlx_vk_heap_free(b->dev_heap, &s->v_cache[l]);
    }
    free(s->k_cache);
    free(s->v_cache);
    vk_state_free(s);
    free(s);
}

static int weight_cmp(const void *a, const void *b) {
    return strcmp(((const vk_weight *)a)->name, ((const vk_weight *)b)->name);
}

/* Checks one weight's table entry; fills rows and row_bytes. */
static rlx_status describe_weight(const rlx_weight *src, size_t index, vk_weight *w) {
    if (!src->name || !*src->name)
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "session: weight %zu has no name", index);
    if (src->n_dims < 1 || src->n_dims > RLX_WEIGHT_MAX_DIMS)
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "session: weight '%s' has %" PRIu32 " dims, expected 1..%d",
                          src->name, src->n_dims, RLX_WEIGHT_MAX_DIMS);
    uint64_t numel = 1, bytes;
    for (uint32_t d = 0; d < src->n_dims; d++) {
        if (src->ne[d] == 0 || __builtin_mul_overflow(numel, src->ne[d], &numel))
            return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "session: weight '%s': dim %u is 0 or the element count "
                              "overflows", src->name, d);
    }
    RLX_TRY(rlx_dtype_bytes(src->type, src->ne[0], src->name, &w->row_bytes));
    RLX_TRY(rlx_dtype_bytes(src->type, numel, src->name, &bytes));
    if (src->nbytes < bytes || !src->data)
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "session: weight '%s' holds %" PRIu64 " bytes at %p, its %s shape "
                          "needs %" PRIu64, src->name, src->nbytes, src->data, rlx_dtype_name(src->type), bytes);
    w->type = src->type;
    w->n_dims = src->n_dims;
    for (uint32_t d = 0; d < RLX_WEIGHT_MAX_DIMS; d++) w->ne[d] = d < src->n_dims ? src->ne[d] : 1;
    w->rows = numel / src->ne[0];
    w->name = strdup(src->name);
    if (!w->name) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "session: weight names");
    return NULL;
}

/* Uploads w in row parts that each fit one binding. */
static rlx_status upload_weight(rlx_vk_backend *b, rlx_vk_uploader *u, const rlx_weight *src, vk_weight *w) {
    uint64_t per_part = (b->dev->max_binding - 16) / w->row_bytes;
    if (per_part == 0)
        return rlx_errorf(RLX_ERR_UNSUPPORTED, "session: weight '%s': one row of %" PRIu64 " bytes exceeds the largest "
                          "binding (%" PRIu64 " bytes on %s)", w->name, w->row_bytes, b->dev->max_binding,
                          b->dev->caps->name);
    uint64_t n_parts = (w->rows + per_part - 1) / per_part;
    w->parts = calloc(n_parts, sizeof *w->parts);
    if (!w->parts) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "session: weight '%s' parts", w->name);
    w->n_parts = (uint32_t)n_parts;
    for (uint64_t k = 0; k < n_parts; k++) {
        vk_weight_part *part = &w->parts[k];
        part->row0 = k * per_part;
        part->rows = w->rows - part->row0 < per_part ? w->rows - part->row0 : per_part;
        /* + 16: shaders/dequant.glsl reads a word past unaligned data without a branch */
        RLX_TRY(rlx_vk_heap_alloc(b->dev_heap, part->rows * w->row_bytes + 16, w->name, &part->alloc));
        RLX_TRY(rlx_vk_uploader_copy(u, &part->alloc, 0, (const uint8_t *)src->data + part->row0 * w->row_bytes,
                                     part->rows * w->row_bytes));
    }
    return NULL;
}

/* The K/V pools of every layer but the recurrent ones, which keep their state instead (vk_state.c). */
static rlx_status alloc_kv(rlx_session *s, rlx_vk_uploader *u, const rlx_state_spec *kv) {
    s->kv = *kv;
    s->kv.layer_kind = NULL; /* borrowed for the call only */
    if (kv->n_layer == 0) return NULL;
    if (s->kv.head_dim_v == 0) s->kv.head_dim_v = kv->head_dim;
    s->k_cache = calloc((size_t)kv->n_layer, sizeof *s->k_cache);
    s->v_cache = calloc((size_t)kv->n_layer, sizeof *s->v_cache);
    if (!s->k_cache || !s->v_cache) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "session: KV cache table");
    uint64_t row = (uint64_t)rlx_state_kv_rows(kv) * (uint64_t)kv->n_head_kv * vk_kv_elem_bytes(s);
    uint64_t k_bytes = row * (uint64_t)kv->head_dim, v_bytes = row * (uint64_t)s->kv.head_dim_v;
    for (int32_t l = 0; l < kv->n_layer; l++) {
        if (kv->layer_kind && kv->layer_kind[l] == RLX_STATE_RECURRENT) continue;
        RLX_TRY(rlx_vk_heap_alloc(s->b->dev_heap, k_bytes, "KV cache (K)", &s->k_cache[l]));
        RLX_TRY(rlx_vk_heap_alloc(s->b->dev_heap, v_bytes, "KV cache (V)", &s->v_cache[l]));
        /* zeroed so that reads of never-written rows, were there any, see finite values */
        RLX_TRY(rlx_vk_uploader_fill(u, &s->k_cache[l], 0, s->k_cache[l].size, 0));
        RLX_TRY(rlx_vk_uploader_fill(u, &s->v_cache[l], 0, s->v_cache[l].size, 0));
    }
    return NULL;
}

/* Refuses, before anything is uploaded, weights + KV cache larger than the device memory available
 * (vk_memory.h), so that a context or model too large fails at once with needed vs available bytes
 * instead of part-way through the uploads. */
/* F16 pools are read and written by the *_f16 kernels, which need 16-bit storage buffers
 * (storageBuffer16BitAccess). A device without it refuses them here, before anything is uploaded;
 * callers that chose F16 as a default (runners/engine.c) then ask for F32. */
static rlx_status check_kv_dtype(const rlx_vk_backend *b, const rlx_state_spec *kv) {
    if (kv->n_layer == 0 || kv->kv_dtype == RLX_DTYPE_F32) return NULL;
    if (kv->kv_dtype != RLX_DTYPE_F16)
        return rlx_errorf(RLX_ERR_UNSUPPORTED, "vulkan session: K/V of %s; expected F32 or F16",
                          rlx_dtype_name(kv->kv_dtype));
    if (!b->dev->caps->storage16)
        return rlx_errorf(RLX_ERR_UNSUPPORTED, "vulkan session: F16 K/V needs 16-bit storage buffers "
                          "(storageBuffer16BitAccess), which %s lacks; use F32 K/V", b->dev->caps->name);
    return NULL;
}

static rlx_status check_session_room(const rlx_session *s, const rlx_state_spec *kv) {
    uint64_t weights = 0, cache = 0, need;
    uint32_t elem = kv->kv_dtype == RLX_DTYPE_F16 ? 2 : 4;
    for (size_t i = 0; i < s->n_weights; i++) weights += s->weights[i].rows * s->weights[i].row_bytes + 16;
    int32_t dv = kv->head_dim_v ? kv->head_dim_v : kv->head_dim;
    bool sane = kv->n_layer > 0;
    uint64_t state_layer = 0, n_state = (uint64_t)vk_state_layers(kv), state = 0;
    RLX_TRY(vk_state_layer_bytes(s->b, kv, &state_layer));
    bool overflow = sane && (__builtin_mul_overflow((uint64_t)rlx_state_kv_rows(kv) * (uint64_t)kv->n_head_kv,
                                                    ((uint64_t)kv->head_dim + (uint64_t)dv) * elem, &cache) ||
                             __builtin_mul_overflow(cache, (uint64_t)kv->n_layer - n_state, &cache) ||
                             __builtin_mul_overflow(state_layer, n_state, &state) ||
                             __builtin_add_overflow(cache, state, &cache));
    overflow = overflow || __builtin_add_overflow(weights, cache, &need);
    char what[256];
    if (sane)
        snprintf(what, sizeof what,
                 "session: weights (%" PRIu64 " bytes) and a KV pool of %lld rows (%d layers x %lld rows x %d KV "
                 "heads x (%d + %d) dims x %u bytes)%s",
                 weights, (long long)rlx_state_kv_rows(kv), kv->n_layer - (int32_t)n_state,
                 (long long)rlx_state_kv_rows(kv), kv->n_head_kv, kv->head_dim, dv, elem,
                 n_state ? " and the recurrent layers' state" : "");
    else
        snprintf(what, sizeof what, "session: weights (%" PRIu64 " bytes)", weights);
    if (overflow)
        return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "%s: needs more than 2^64 bytes of device memory, available: none "
                          "that large", what);
    return rlx_vk_heap_check_room(s->b->dev_heap, need, what);
}

static rlx_status session_fill(rlx_session *s, const rlx_weight *weights, size_t n_weights, const rlx_state_spec *kv) {
    RLX_TRY(rlx_state_spec_check(kv));
    RLX_TRY(check_kv_dtype(s->b, kv));
    s->weights = calloc(n_weights ? n_weights : 1, sizeof *s->weights);
    if (!s->weights) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "session: %zu weights", n_weights);
    for (size_t i = 0; i < n_weights; i++) {
        RLX_TRY(describe_weight(&weights[i], i, &s->weights[i]));
        s->n_weights = i + 1;
    }
    RLX_TRY(check_session_room(s, kv));
    rlx_vk_uploader *u = NULL;
    rlx_status st = rlx_vk_uploader_create(s->b->dev, s->b->up_heap, &u);
    for (size_t i = 0; !st && i < n_weights; i++) st = upload_weight(s->b, u, &weights[i], &s->weights[i]);
    if (!st) st = alloc_kv(s, u, kv);
    if (!st) st = vk_state_alloc(s, u, kv);
    if (!st) st = rlx_vk_uploader_flush(u);
    rlx_vk_uploader_destroy(u);
    if (st) return st;
    /* sorted by name for lookup at compile (after the uploads, which index the caller's table) */
    qsort(s->weights, s->n_weights, sizeof *s->weights, weight_cmp);
    for (size_t i = 1; i < s->n_weights; i++)
        if (strcmp(s->weights[i - 1].name, s->weights[i].name) == 0)
            return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "session: weight '%s' appears twice", s->weights[i].name);
    return NULL;
}

static rlx_status session_create(rlx_backend *base, const rlx_weight *weights, size_t n_weights,
                                 const rlx_state_spec *kv, rlx_session **out) {
    if ((!weights && n_weights) || !kv || !out)
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "vulkan session_create: weights, kv and out must not be NULL");
    rlx_session *s = calloc(1, sizeof *s);
    if (!s) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "session: cannot allocate");
    s->b = (rlx_vk_backend *)base;
    rlx_status st = session_fill(s, weights, n_weights, kv);
    if (st) {
        session_destroy(s);
        return st;
    }
    *out = s;
    return NULL;
}

/* ---- copy_pages ---- */

static rlx_status check_pages(const rlx_session *s, const int32_t *src, const int32_t *dst, int32_t n) {
    if (n < 0 || (n > 0 && (!src || !dst)))
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "copy_pages: %d pages with src %p and dst %p", n, (const void *)src,
                          (const void *)dst);
    for (int32_t i = 0; i < n; i++)
        if (src[i] < 0 || src[i] >= s->kv.n_pages || dst[i] < 0 || dst[i] >= s->kv.n_pages || s->kv.n_layer == 0)
            return rlx_errorf(RLX_ERR_INVALID_ARGUMENT,
                              "copy_pages: copy %d is page %d -> %d, outside the pool's %d pages", i, src[i], dst[i],
                              s->kv.n_layer ? s->kv.n_pages : 0);
    return NULL;
}

typedef struct page_copies {
    const rlx_session *s;
    const int32_t *src, *dst;
    int32_t n;
} page_copies;

/* Page src[i] -> dst[i] of every layer's K and V pool. */
static void record_page_copies(void *ctx, VkCommandBuffer cb) {
    const page_copies *pc = ctx;
    const rlx_session *s = pc->s;
    const int32_t *src = pc->src, *dst = pc->dst;
    int32_t n = pc->n;
    rlx_vk_device *d = s->b->dev;
    VkDeviceSize rows = (VkDeviceSize)s->kv.page_size * (VkDeviceSize)s->kv.n_head_kv * vk_kv_elem_bytes(s);
    VkDeviceSize k_page = rows * (VkDeviceSize)s->kv.head_dim, v_page = rows * (VkDeviceSize)s->kv.head_dim_v;
    rlx_vk_cmd_barrier(d, cb, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, VK_ACCESS_MEMORY_WRITE_BIT,
                       VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT);
    for (int32_t i = 0, from = 0; i < n; i++) {
        if (src[i] == dst[i]) continue;
        if (rlx_vk_copy_hazard(src, dst, from, i)) {
            rlx_vk_cmd_barrier(d, cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT,
                               VK_PIPELINE_STAGE_TRANSFER_BIT,
                               VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT);
            from = i;
        }
        for (int32_t l = 0; l < s->kv.n_layer; l++) {
            const rlx_vk_alloc *k = &s->k_cache[l], *v = &s->v_cache[l];
            if (!k->buffer) continue; /* a recurrent layer: no pool */
            VkDeviceSize sp = (VkDeviceSize)src[i], dp = (VkDeviceSize)dst[i];
            VkBufferCopy ck = {k->offset + sp * k_page, k->offset + dp * k_page, k_page};
            VkBufferCopy cv = {v->offset + sp * v_page, v->offset + dp * v_page, v_page};
            d->vk.vkCmdCopyBuffer(cb, k->buffer, k->buffer, 1, &ck);
            d->vk.vkCmdCopyBuffer(cb, v->buffer, v->buffer, 1, &cv);
        }
    }
    rlx_vk_cmd_barrier(d, cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT,
                       VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, VK_ACCESS_MEMORY_READ_BIT | VK_ACCESS_MEMORY_WRITE_BIT);
}

/* One submission of every copy, in order (a barrier where a copy depends on an earlier one). */
static rlx_status copy_pages(rlx_session *s, const int32_t *src, const int32_t *dst, int32_t n) {
    if (!s) return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "copy_pages: session is NULL");
    RLX_TRY(check_pages(s, src, dst, n));
    if (n == 0) return NULL;
    page_copies pc = {.s = s, .src = src, .dst = dst, .n = n};
    return rlx_vk_run_once(s->b->dev, record_page_copies, &pc, "page copy", "copying KV pages");
}

/* ---- backend ---- */

static rlx_status compile(rlx_session *s, const rlx_graph *g, rlx_program **out) {
    return vk_program_compile(s, g, out);
}
static rlx_status run(rlx_program *p, const rlx_run_args *a) { return vk_program_run(p, a); }
static rlx_status run_chain(rlx_program *p, const rlx_run_args *first, int32_t k, int32_t *outs) {
    return vk_program_run_chain(p, first, k, outs);
}
static void program_destroy(rlx_program *p) { vk_program_destroy(p); }

static void backend_destroy(rlx_backend *base) {
    rlx_vk_backend *b = (rlx_vk_backend *)base;
    if (!b) return;
    rlx_vk_pipelines_destroy(b->pipes);
    rlx_vk_heap_destroy(b->dev_heap);
    rlx_vk_heap_destroy(b->up_heap);
    rlx_vk_heap_destroy(b->rb_heap);
    rlx_vk_device_close(b->dev);
    free(b);
}

/* A GPU's device-local heap (what a session's weights and KV pool come from): its room now, and the
 * most one buffer may bind. A CPU device's memory is the host's. */
static rlx_status memory_room(rlx_backend *base, rlx_backend_room *out) {
    rlx_vk_backend *b = (rlx_vk_backend *)base;
    if (b->dev->caps->is_cpu)
        return rlx_errorf(RLX_ERR_UNSUPPORTED, "%s computes in host memory", b->dev->caps->name);
    uint64_t room = rlx_vk_heap_room(b->dev_heap), buf = b->dev->max_binding;
    if (b->dev->caps->max_alloc && b->dev->caps->max_alloc < buf) buf = b->dev->caps->max_alloc;
    *out = (rlx_backend_room){room > INT64_MAX ? INT64_MAX : (int64_t)room, buf > INT64_MAX ? INT64_MAX : (int64_t)buf};
    return NULL;
}

static const rlx_backend_ops vk_ops = {
    .session_create = session_create,
    .session_destroy = session_destroy,
    .copy_pages = copy_pages,
    .copy_state = vk_copy_state,
    .compile = compile,
    .run = run,
    .run_chain = run_chain,
    .program_destroy = program_destroy,
    .destroy = backend_destroy,
    .memory_room = memory_room,
};

/* What a compile reads of the options: the switches and the tuning (o checked). */
static void apply_options(rlx_vk_backend *b, const rlx_vk_options *o) {
    b->debug = o->debug;
    b->profile = o->profile > 0;
    b->profile_each = o->profile == 2;
    b->fusion = o->fusion;
    b->tuning = rlx_vk_tuning_make(b->dev->caps, o);
}

rlx_status rlx_backend_vulkan_create(const char *device, rlx_backend **out) {
    return rlx_backend_vulkan_create_opts(device, NULL, out);
}

rlx_status rlx_backend_vulkan_create_opts(const char *device, const rlx_backend_opts *opts, rlx_backend **out) {
    if (!out) return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "vulkan backend: out is NULL");
    rlx_vk_options o;
    rlx_status s = rlx_vk_options_from_env(&o);
    if (s) return rlx_status_annotate(s, "vulkan backend");
    if (device && *device) {
        o.device = device;
        o.device_from_env = false;
    }
    if (opts && opts->deterministic) o.deterministic = true;
    return rlx_backend_vulkan_create_with(&o, out);
}

rlx_status rlx_backend_vulkan_create_with(const rlx_vk_options *o, rlx_backend **out) {
    if (!o || !out) return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "vulkan backend: options and out must not be NULL");
    RLX_TRY(rlx_status_annotate(rlx_vk_options_check(o), "vulkan backend"));
    rlx_vk_backend *b = calloc(1, sizeof *b);
    if (!b) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "vulkan backend: cannot allocate");
    b->base.ops = &vk_ops;
    b->base.name = "vulkan";
    rlx_vk_fault_arm_first(o->fault, o->fault_at);
    rlx_status s = rlx_vk_device_open_with(o, &b->dev);
    if (s) s = rlx_status_annotate(s, "vulkan backend");
    /* shaders/reduce.glsl reduces with subgroup arithmetic (any subgroup size), attention.glsl with
     * shuffles too */
    if (!s && (!b->dev->caps->subgroup_arithmetic || !b->dev->caps->subgroup_shuffle))
        s = rlx_errorf(RLX_ERR_UNSUPPORTED, "vulkan backend: device %s lacks subgroup %s in compute shaders",
                       b->dev->caps->name, !b->dev->caps->subgroup_arithmetic ? "arithmetic" : "shuffles");
    if (!s && b->dev->caps->max_stage_buffers < rlx_vk_kernels_max_buffers())
        s = rlx_errorf(RLX_ERR_UNSUPPORTED, "vulkan backend: device %s binds %u storage buffers per compute shader, the "
                       "kernels need %u", b->dev->caps->name, b->dev->caps->max_stage_buffers, rlx_vk_kernels_max_buffers());
    if (!s) s = rlx_vk_heap_create(b->dev, RLX_VK_MEM_DEVICE, &b->dev_heap);
    if (!s) s = rlx_vk_heap_create(b->dev, RLX_VK_MEM_UPLOAD, &b->up_heap);
    if (!s) s = rlx_vk_heap_create(b->dev, RLX_VK_MEM_READBACK, &b->rb_heap);
    if (!s) s = rlx_vk_pipelines_create(b->dev, &b->pipes);
    if (s) {
        backend_destroy(&b->base);
        return s;
    }
    apply_options(b, o);
    b->wg = rlx_vk_caps_wg_pow2(b->dev->caps, 64);
    b->wg_row = rlx_vk_caps_wg_pow2(b->dev->caps, 256);
    *out = &b->base;
    return NULL;
}

rlx_status rlx_vk_backend_set_options(rlx_backend *base, const rlx_vk_options *o) {
    if (!base || !o) return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "vulkan backend: backend and options must not be NULL");
    if (base->ops != &vk_ops)
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "vulkan backend: options set on a %s backend", base->name);
    RLX_TRY(rlx_status_annotate(rlx_vk_options_check(o), "vulkan backend"));
    apply_options((rlx_vk_backend *)base, o);
    return NULL;
}

const rlx_vk_caps *rlx_vk_backend_caps(const rlx_backend *b) { return ((const rlx_vk_backend *)b)->dev->caps; }

rlx_vk_pipeline_stats rlx_vk_backend_pipeline_stats(const rlx_backend *b) {
    return rlx_vk_pipelines_get_stats(((const rlx_vk_backend *)b)->pipes);
}

bool rlx_vk_backend_polls(const rlx_backend *b) { return ((const rlx_vk_backend *)b)->dev->polls; }

rlx_vk_heap_stats rlx_vk_backend_device_memory(const rlx_backend *b) {
    return rlx_vk_heap_get_stats(((const rlx_vk_backend *)b)->dev_heap);
}
