/* Shader modules (checked against their manifest), layouts, pipelines, and the on-disk
 * VkPipelineCache. */
#include "runtime/vk_pipeline.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "loader/core/cache_dir.h"
#include "runtime/vk_shader_stats.h"
#include "runtime/vk_status.h"

#define RLX_KERNEL(name, n_bindings, push_bytes, n_spec)                                                             \
    extern const uint32_t rlx_spv_##name[];                                                                           \
    extern const size_t rlx_spv_##name##_words;
#include "shaders/kernels.def"
#undef RLX_KERNEL
extern const char rlx_shader_build_id[];

static const rlx_vk_kernel_info kernel_table[RLX_VK_KERNEL_COUNT] = {
#define RLX_KERNEL(name, n_bindings, push_bytes, n_spec)                                                             \
    [RLX_VK_KERNEL_##name] = {#name, rlx_spv_##name, n_bindings, push_bytes, n_spec},
#include "shaders/kernels.def"
#undef RLX_KERNEL
};

/* A kernels.def line beyond the fixed arrays would overrun them (pipeline keys, binding layouts). */
#define RLX_KERNEL(name, n_bindings, push_bytes, n_spec)                                                             \
    _Static_assert((n_spec) <= RLX_VK_MAX_SPEC && (n_bindings) <= RLX_VK_MAX_BINDINGS,                              \
                   #name ": more spec constants or bindings than RLX_VK_MAX_SPEC / RLX_VK_MAX_BINDINGS");
#include "shaders/kernels.def"
#undef RLX_KERNEL

/* A name in kernels.def must fall inside its kernel's bindings or spec constants, and a variant
 * (RLX_KERNEL_LIKE) must have its kernel's counts, or the names would address the wrong slots. */
enum {
#define RLX_KERNEL(name, n_bindings, push_bytes, n_spec) N_BIND_##name = (n_bindings), N_SPEC_##name = (n_spec),
#include "shaders/kernels.def"
#undef RLX_KERNEL
};
#define RLX_KERNEL(name, n_bindings, push_bytes, n_spec)
#define RLX_BINDING(kernel, name, index)                                                                               \
    _Static_assert((index) < N_BIND_##kernel, #kernel " binding " #name ": past the kernel's bindings");
#define RLX_SPEC(kernel, name, id)                                                                                     \
    _Static_assert((id) > 0 && (id) < N_SPEC_##kernel, #kernel " spec " #name ": not one of the kernel's ids 1..");
#define RLX_KERNEL_LIKE(variant, kernel)                                                                               \
    _Static_assert(N_BIND_##variant == N_BIND_##kernel && N_SPEC_##variant == N_SPEC_##kernel,                        \
                   #variant ": not the bindings and spec constants of " #kernel);
#include "shaders/kernels.def"
#undef RLX_KERNEL_LIKE
#undef RLX_SPEC
#undef RLX_BINDING
#undef RLX_KERNEL

typedef struct kernel_name {
    rlx_vk_kernel kernel;
    bool spec; /* a spec constant id, else a set-1 binding */
    uint32_t index;
    const char *name;
} kernel_name;

static const kernel_name kernel_names[] = {
#define RLX_KERNEL(name, n_bindings, push_bytes, n_spec)
#define RLX_BINDING(kernel, name, index) {RLX_VK_KERNEL_##kernel, false, (index), #name},
#define RLX_SPEC(kernel, name, id) {RLX_VK_KERNEL_##kernel, true, (id), #name},
#include "shaders/kernels.def"
#undef RLX_SPEC
#undef RLX_BINDING
#undef RLX_KERNEL
};

/* The kernel whose names k uses: itself, or the one it is a variant of. */
static rlx_vk_kernel names_of(rlx_vk_kernel k) {
    switch (k) {
#define RLX_KERNEL(name, n_bindings, push_bytes, n_spec)
#define RLX_KERNEL_LIKE(variant, kernel)                                                                               \
    case RLX_VK_KERNEL_##variant: return RLX_VK_KERNEL_##kernel;
#include "shaders/kernels.def"
#undef RLX_KERNEL_LIKE
#undef RLX_KERNEL
    default: return k;
    }
}

/* The word counts are not constant expressions here (they live in the generated sources). */
static size_t kernel_words(rlx_vk_kernel k) {
    switch (k) {
#define RLX_KERNEL(name, n_bindings, push_bytes, n_spec)                                                             \
    case RLX_VK_KERNEL_##name: return rlx_spv_##name##_words;
#include "shaders/kernels.def"
#undef RLX_KERNEL
    default: return 0;
    }
}

const rlx_vk_kernel_info *rlx_vk_kernel_get(rlx_vk_kernel k) {
    return (unsigned)k < RLX_VK_KERNEL_COUNT ? &kernel_table[k] : NULL;
}

uint32_t rlx_vk_kernels_max_buffers(void) {
    uint32_t most = 0;
    for (int k = 0; k < RLX_VK_KERNEL_COUNT; k++)
        if (kernel_table[k].n_bindings > most) most = kernel_table[k].n_bindings;
    return most + RLX_VK_COMMON_BINDINGS;
}

struct rlx_vk_pipelines {
    rlx_vk_device *dev;                                    /* borrowed */
    pthread_mutex_t lock;
    VkPipelineCache cache;                                 /* owned */
    VkDescriptorSetLayout common_set;                      /* owned */
    VkPipelineLayout common_layout;                        /* owned: [common] + push range */
    VkShaderModule modules[RLX_VK_KERNEL_COUNT];           /* owned, made on first use */
    VkDescriptorSetLayout sets[RLX_VK_KERNEL_COUNT];       /* owned */
    VkPipelineLayout layouts[RLX_VK_KERNEL_COUNT];         /* owned */
    rlx_vk_pipeline **items;                               /* owned, n_items of cap_items */
    size_t n_items, cap_items;
    rlx_vk_pipeline_stats stats;
};

/* ---- SPIR-V manifest check ---- */

enum {
    SPV_MAGIC = 0x07230203,
    OP_ENTRY_POINT = 15,
    OP_TYPE_POINTER = 32,
    OP_VARIABLE = 59,
    OP_DECORATE = 71,
    OP_MEMBER_DECORATE = 72,
    DEC_SPEC_ID = 1,
    DEC_BINDING = 33,
    DEC_DESCRIPTOR_SET = 34,
    DEC_OFFSET = 35,
    SC_PUSH_CONSTANT = 9,
    EXEC_GL_COMPUTE = 5,
};

typedef struct spv_facts {
    uint32_t bound;
    int32_t *set, *binding;    /* per id, -1 when not decorated */
    uint32_t *ptr_pointee;     /* per id: pointee type of an OpTypePointer */
    uint32_t push_var_type;    /* pointer type of the push-constant variable, 0 if none */
    uint32_t max_spec_id;      /* one past the largest SpecId */
    uint32_t spec_ids;         /* bit i: SpecId i is decorated (ids below 32) */
    bool has_main;
} spv_facts;

static rlx_status spv_scan(const rlx_vk_kernel_info *k, const uint32_t *w, size_t n, spv_facts *f) {
    if (n < 5 || w[0] != SPV_MAGIC) return rlx_errorf(RLX_ERR_DEVICE, "shader %s: not a SPIR-V module", k->name);
    f->bound = w[3];
    f->set = malloc(f->bound * sizeof *f->set);
    f->binding = malloc(f->bound * sizeof *f->binding);
    f->ptr_pointee = calloc(f->bound, sizeof *f->ptr_pointee);
    if (!f->set || !f->binding || !f->ptr_pointee)
        return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "shader %s: reflecting %u ids", k->name, f->bound);
    for (uint32_t i = 0; i < f->bound; i++) f->set[i] = f->binding[i] = -1;
    for (size_t i = 5; i < n;) {
        uint32_t op = w[i] & 0xffff, wc = w[i] >> 16;
        if (wc == 0 || i + wc > n) return rlx_errorf(RLX_ERR_DEVICE, "shader %s: malformed at word %zu", k->name, i);
        const uint32_t *a = &w[i + 1];
        if (op == OP_ENTRY_POINT && wc >= 4 && a[0] == EXEC_GL_COMPUTE && strcmp((const char *)&a[2], "main") == 0)
            f->has_main = true;
        else if (op == OP_DECORATE && wc >= 4 && a[0] < f->bound && a[1] == DEC_DESCRIPTOR_SET)
            f->set[a[0]] = (int32_t)a[2];
        else if (op == OP_DECORATE && wc >= 4 && a[0] < f->bound && a[1] == DEC_BINDING)
            f->binding[a[0]] = (int32_t)a[2];
        else if (op == OP_DECORATE && wc >= 4 && a[1] == DEC_SPEC_ID) {
            if (a[2] + 1 > f->max_spec_id) f->max_spec_id = a[2] + 1;
            if (a[2] < 32) f->spec_ids |= 1u << a[2];
        }
        else if (op == OP_TYPE_POINTER && wc >= 4 && a[0] < f->bound)
            f->ptr_pointee[a[0]] = a[2];
        else if (op == OP_VARIABLE && wc >= 4 && a[2] == SC_PUSH_CONSTANT)
            f->push_var_type = a[0];
        i += wc;
    }
    return NULL;
}

/* The push block's extent: the largest member Offset + 4 (members are 32-bit by convention,
 * shaders/common.glsl). */
static uint32_t spv_push_extent(const uint32_t *w, size_t n, uint32_t block) {
    uint32_t extent = 0;
    for (size_t i = 5; i < n;) {
        uint32_t op = w[i] & 0xffff, wc = w[i] >> 16;
        const uint32_t *a = &w[i + 1];
        if (op == OP_MEMBER_DECORATE && wc >= 5 && a[0] == block && a[2] == DEC_OFFSET && a[3] + 4 > extent)
            extent = a[3] + 4;
        i += wc ? wc : 1;
    }
    return extent;
}

/* kernels.def's names for kernel k: each binding and spec id past 0 named once, and each named one
 * in the module (set1: its set-1 bindings as bits). A variant may fix spec constants in its source,
 * so only its bindings must be there. */
static rlx_status names_check(rlx_vk_kernel k, const spv_facts *f, uint32_t set1) {
    const rlx_vk_kernel_info *info = &kernel_table[k];
    rlx_vk_kernel base = names_of(k);
    uint32_t named[2] = {0, 1u}; /* bindings, spec ids (0 is the workgroup size) */
    for (size_t i = 0; i < sizeof kernel_names / sizeof kernel_names[0]; i++) {
        const kernel_name *nm = &kernel_names[i];
        if (nm->kernel != base) continue;
        uint32_t bit = 1u << nm->index, have = nm->spec ? f->spec_ids : set1;
        if (named[nm->spec] & bit)
            return rlx_errorf(RLX_ERR_INTERNAL, "shader %s: kernels.def names %s %u twice", info->name,
                              nm->spec ? "spec constant" : "binding", nm->index);
        named[nm->spec] |= bit;
        if (!(have & bit) && (!nm->spec || base == k))
            return rlx_errorf(RLX_ERR_INTERNAL, "shader %s: kernels.def names %s %u %s, which the module lacks",
                              info->name, nm->spec ? "spec constant" : "binding", nm->index, nm->name);
    }
    uint32_t all_b = (1u << info->n_bindings) - 1u, all_s = (1u << info->n_spec) - 1u;
    if (named[0] != all_b || named[1] != all_s)
        return rlx_errorf(RLX_ERR_INTERNAL,
                          "shader %s: kernels.def names bindings 0x%x of 0x%x and spec ids 0x%x of 0x%x", info->name,
                          named[0], all_b, named[1], all_s);
    return NULL;
}

static rlx_status spv_check(rlx_vk_kernel kernel, const uint32_t *w, size_t n) {
    const rlx_vk_kernel_info *k = &kernel_table[kernel];
    spv_facts f = {0};
    uint32_t set1 = 0;
    rlx_status s = spv_scan(k, w, n, &f);
    for (uint32_t id = 0; !s && id < f.bound; id++) {
        if (f.binding[id] < 0) continue;
        int32_t set = f.set[id] < 0 ? 0 : f.set[id];
        if (set == 1 && f.binding[id] < 32) set1 |= 1u << f.binding[id];
        uint32_t limit = set == 0 ? RLX_VK_COMMON_BINDINGS : set == 1 ? k->n_bindings : 0;
        if ((uint32_t)f.binding[id] >= limit)
            s = rlx_errorf(RLX_ERR_DEVICE, "shader %s: uses set %d binding %d, but kernels.def declares %u in set 1",
                           k->name, set, f.binding[id], k->n_bindings);
    }
    if (!s && !f.has_main) s = rlx_errorf(RLX_ERR_DEVICE, "shader %s: no GLCompute entry point 'main'", k->name);
    if (!s && f.max_spec_id > k->n_spec)
        s = rlx_errorf(RLX_ERR_DEVICE, "shader %s: spec constant id %u, but kernels.def declares %u", k->name,
                       f.max_spec_id - 1, k->n_spec);
    if (!s && f.push_var_type && f.push_var_type < f.bound) {
        uint32_t extent = spv_push_extent(w, n, f.ptr_pointee[f.push_var_type]);
        if (extent > k->push_bytes || k->push_bytes > RLX_VK_PUSH_BYTES)
            s = rlx_errorf(RLX_ERR_DEVICE, "shader %s: push constants span %u bytes, kernels.def declares %u (max %d)",
                           k->name, extent, k->push_bytes, RLX_VK_PUSH_BYTES);
    }
    if (!s) s = names_check(kernel, &f, set1);
    free(f.set);
    free(f.binding);
    free(f.ptr_pointee);
    return s;
}

/* ---- disk cache ---- */


/* $XDG_CACHE_HOME/rlx/pipelines-<device uuid>-<driver version>-<build id>.bin, or under
 * $HOME/.cache when XDG_CACHE_HOME is unset (loader/core/cache_dir.h); false when neither is set. */
static bool cache_path(const rlx_vk_caps *c, char *path, size_t size) {
    char dir[400];
    if (!rlx_cache_dir(dir, sizeof dir)) return false;
    char uuid[2 * VK_UUID_SIZE + 1];
    for (unsigned i = 0; i < VK_UUID_SIZE; i++) snprintf(uuid + 2 * i, 3, "%02x", c->device_uuid[i]);
    snprintf(path, size, "%s/pipelines-%s-%08" PRIx32 "-%.16s.bin", dir, uuid, c->driver_version,
             rlx_shader_build_id);
    return true;
}

/* Accepts data only with a version-one header for this very device (Vulkan spec, "Pipeline Cache
 * Header"): drivers are meant to reject foreign data, but not all are robust to it. */
static bool cache_header_ok(const rlx_vk_caps *c, const uint8_t *data, size_t n) {
    if (n < 32) return false;
    uint32_t h[4];
    memcpy(h, data, sizeof h);
    return h[0] >= 32 && h[1] == VK_PIPELINE_CACHE_HEADER_VERSION_ONE && h[2] == c->vendor_id &&
           h[3] == c->device_id && memcmp(data + 16, c->pipeline_cache_uuid, VK_UUID_SIZE) == 0;
}

static uint8_t *read_file(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    uint8_t *buf = NULL;
    long size = -1;
    if (fseek(f, 0, SEEK_END) == 0) size = ftell(f);
    if (size > 0 && size < (1L << 30) && fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)size)) &&
        fread(buf, 1, (size_t)size, f) != (size_t)size) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    *n = buf ? (size_t)size : 0;
    return buf;
}

static rlx_status create_cache(rlx_vk_pipelines *p) {
    rlx_vk_device *d = p->dev;
    size_t n = 0;
    uint8_t *data = NULL;
    p->stats.disk_cache = d->pipeline_cache && cache_path(d->caps, p->stats.path,
                                                                            sizeof p->stats.path);
    if (p->stats.disk_cache) data = read_file(p->stats.path, &n);
    if (data && !cache_header_ok(d->caps, data, n)) {
        free(data);
        data = NULL;
        n = 0;
    }
    VkPipelineCacheCreateInfo ci = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO,
        .initialDataSize = n,
        .pInitialData = data,
    };
    VkResult r = d->vk.vkCreatePipelineCache(d->dev, &ci, NULL, &p->cache);
    if (r != VK_SUCCESS && data) { /* unusable data: start empty rather than fail */
        ci.initialDataSize = 0;
        ci.pInitialData = NULL;
        n = 0;
        r = d->vk.vkCreatePipelineCache(d->dev, &ci, NULL, &p->cache);
    }
    free(data);
    p->stats.disk_bytes_loaded = n;
    return rlx_vk_check(r, "creating the pipeline cache");
}

/* Best effort: a cache that cannot be written only costs compile time on the next start. */
static void save_cache(rlx_vk_pipelines *p) {
    rlx_vk_device *d = p->dev;
    size_t n = 0;
    if (!p->stats.disk_cache || p->stats.pipelines == 0) return;
    if (d->vk.vkGetPipelineCacheData(d->dev, p->cache, &n, NULL) != VK_SUCCESS || n == 0) return;
    void *data = malloc(n);
    if (!data) return;
    char tmp[600];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", p->stats.path, (long)getpid());
    if (d->vk.vkGetPipelineCacheData(d->dev, p->cache, &n, data) == VK_SUCCESS) {
        FILE *f = fopen(tmp, "wb");
        bool ok = f && fwrite(data, 1, n, f) == n;
        if (f && fclose(f) != 0) ok = false;
        /* write-then-rename: a concurrent reader sees the old file or the new one, never half */
        if (f && (!ok || rename(tmp, p->stats.path) != 0)) remove(tmp);
    }
    free(data);
}

/* ---- layouts and pipelines ---- */

static rlx_status make_set_layout(rlx_vk_device *d, uint32_t n, VkDescriptorSetLayout *out) {
    VkDescriptorSetLayoutBinding b[RLX_VK_MAX_BINDINGS];
    for (uint32_t i = 0; i < n; i++)
        b[i] = (VkDescriptorSetLayoutBinding){
            .binding = i,
            .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
            .descriptorCount = 1,
            .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT,
        };
    VkDescriptorSetLayoutCreateInfo ci = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
        .bindingCount = n,
        .pBindings = b,
    };
    return rlx_vk_check(d->vk.vkCreateDescriptorSetLayout(d->dev, &ci, NULL, out), "creating a descriptor set layout");
}

static rlx_status make_pipeline_layout(rlx_vk_device *d, const VkDescriptorSetLayout *sets, uint32_t n,
                                       VkPipelineLayout *out) {
    VkPushConstantRange range = {.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT, .size = RLX_VK_PUSH_BYTES};
    VkPipelineLayoutCreateInfo ci = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
        .setLayoutCount = n,
        .pSetLayouts = sets,
        .pushConstantRangeCount = 1,
        .pPushConstantRanges = &range,
    };
    return rlx_vk_check(d->vk.vkCreatePipelineLayout(d->dev, &ci, NULL, out), "creating a pipeline layout");
}

rlx_status rlx_vk_pipelines_create(rlx_vk_device *d, rlx_vk_pipelines **out) {
    if (d->caps->max_push < RLX_VK_PUSH_BYTES)
        return rlx_errorf(RLX_ERR_UNSUPPORTED, "Vulkan device %s: maxPushConstantsSize %u < %d", d->caps->name,
                          d->caps->max_push, RLX_VK_PUSH_BYTES);
    rlx_vk_pipelines *p = calloc(1, sizeof *p);
    if (!p) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "creating the pipeline set");
    p->dev = d;
    pthread_mutex_init(&p->lock, NULL);
    rlx_status s = create_cache(p);
    if (!s) s = make_set_layout(d, RLX_VK_COMMON_BINDINGS, &p->common_set);
    if (!s) s = make_pipeline_layout(d, &p->common_set, 1, &p->common_layout);
    if (s) {
        rlx_vk_pipelines_destroy(p);
        return s;
    }
    *out = p;
    return NULL;
}

void rlx_vk_pipelines_destroy(rlx_vk_pipelines *p) {
    if (!p) return;
    rlx_vk_device *d = p->dev;
    if (p->cache) save_cache(p);
    for (size_t i = 0; i < p->n_items; i++) {
        d->vk.vkDestroyPipeline(d->dev, p->items[i]->pipeline, NULL);
        free(p->items[i]);
    }
    free(p->items);
    for (int k = 0; k < RLX_VK_KERNEL_COUNT; k++) {
        if (p->layouts[k]) d->vk.vkDestroyPipelineLayout(d->dev, p->layouts[k], NULL);
        if (p->sets[k]) d->vk.vkDestroyDescriptorSetLayout(d->dev, p->sets[k], NULL);
        if (p->modules[k]) d->vk.vkDestroyShaderModule(d->dev, p->modules[k], NULL);
    }
    if (p->common_layout) d->vk.vkDestroyPipelineLayout(d->dev, p->common_layout, NULL);
    if (p->common_set) d->vk.vkDestroyDescriptorSetLayout(d->dev, p->common_set, NULL);
    if (p->cache) d->vk.vkDestroyPipelineCache(d->dev, p->cache, NULL);
    pthread_mutex_destroy(&p->lock);
    free(p);
}

/* Module, set layout and pipeline layout of kernel k, made on first use. */
static rlx_status kernel_ready(rlx_vk_pipelines *p, rlx_vk_kernel k) {
    if (p->layouts[k]) return NULL;
    rlx_vk_device *d = p->dev;
    const rlx_vk_kernel_info *info = &kernel_table[k];
    size_t words = kernel_words(k);
    RLX_TRY(spv_check(k, info->spirv, words));
    VkShaderModuleCreateInfo mi = {
        .sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
        .codeSize = words * sizeof(uint32_t),
        .pCode = info->spirv,
    };
    if (!p->modules[k])
        RLX_VK_TRY(d->vk.vkCreateShaderModule(d->dev, &mi, NULL, &p->modules[k]), info->name);
    if (!p->sets[k]) RLX_TRY(make_set_layout(d, info->n_bindings, &p->sets[k]));
    VkDescriptorSetLayout sets[2] = {p->common_set, p->sets[k]};
    return make_pipeline_layout(d, sets, 2, &p->layouts[k]);
}

static rlx_status create_pipeline(rlx_vk_pipelines *p, rlx_vk_kernel k, const uint32_t *spec,
                                  rlx_vk_pipeline **out) {
    rlx_vk_device *d = p->dev;
    const rlx_vk_kernel_info *info = &kernel_table[k];
    VkSpecializationMapEntry map[RLX_VK_MAX_SPEC];
    for (uint32_t i = 0; i < info->n_spec; i++)
        map[i] = (VkSpecializationMapEntry){.constantID = i, .offset = i * 4, .size = 4};
    VkSpecializationInfo si = {
        .mapEntryCount = info->n_spec,
        .pMapEntries = map,
        .dataSize = info->n_spec * 4,
        .pData = spec,
    };
    VkComputePipelineCreateInfo ci = {
        .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
        .stage =
            {
                .sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
                .stage = VK_SHADER_STAGE_COMPUTE_BIT,
                .module = p->modules[k],
                .pName = "main",
                .pSpecializationInfo = &si,
            },
        .layout = p->layouts[k],
    };
    if (d->shader_stats) ci.flags |= VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR;
    rlx_vk_pipeline *pl = calloc(1, sizeof *pl);
    if (!pl) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "creating pipeline %s", info->name);
    pl->kernel = k;
    memcpy(pl->spec, spec, info->n_spec * sizeof *spec);
    pl->layout = p->layouts[k];
    rlx_status s = rlx_vk_check(d->vk.vkCreateComputePipelines(d->dev, p->cache, 1, &ci, NULL, &pl->pipeline),
                                info->name);
    if (s) {
        free(pl);
        return rlx_status_annotate(s, "creating the compute pipeline");
    }
    if (d->shader_stats) rlx_vk_shader_stats_print(d, pl->pipeline, info->name, spec, info->n_spec);
    *out = pl;
    return NULL;
}

static rlx_status pipeline_get_locked(rlx_vk_pipelines *p, rlx_vk_kernel k, const uint32_t *spec,
                                      const rlx_vk_pipeline **out) {
    const rlx_vk_kernel_info *info = &kernel_table[k];
    for (size_t i = 0; i < p->n_items; i++) {
        const rlx_vk_pipeline *pl = p->items[i];
        if (pl->kernel == k && memcmp(pl->spec, spec, info->n_spec * sizeof *spec) == 0) {
            *out = pl;
            return NULL;
        }
    }
    RLX_TRY(kernel_ready(p, k));
    if (p->n_items == p->cap_items) {
        size_t cap = p->cap_items ? 2 * p->cap_items : 32;
        rlx_vk_pipeline **grown = realloc(p->items, cap * sizeof *grown);
        if (!grown) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "growing the pipeline list to %zu", cap);
        p->items = grown;
        p->cap_items = cap;
    }
    rlx_vk_pipeline *pl = NULL;
    RLX_TRY(create_pipeline(p, k, spec, &pl));
    p->items[p->n_items++] = pl;
    p->stats.pipelines++;
    *out = pl;
    return NULL;
}

rlx_status rlx_vk_pipeline_get(rlx_vk_pipelines *p, rlx_vk_kernel k, const uint32_t *spec,
                               const rlx_vk_pipeline **out) {
    if ((unsigned)k >= RLX_VK_KERNEL_COUNT)
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "pipeline: kernel %d does not exist", (int)k);
    pthread_mutex_lock(&p->lock);
    rlx_status s = pipeline_get_locked(p, k, spec, out);
    pthread_mutex_unlock(&p->lock);
    return s;
}

VkDescriptorSetLayout rlx_vk_common_set_layout(rlx_vk_pipelines *p) { return p->common_set; }
VkDescriptorSetLayout rlx_vk_kernel_set_layout(rlx_vk_pipelines *p, rlx_vk_kernel k) { return p->sets[k]; }
VkPipelineLayout rlx_vk_common_pipeline_layout(rlx_vk_pipelines *p) { return p->common_layout; }

rlx_vk_pipeline_stats rlx_vk_pipelines_get_stats(rlx_vk_pipelines *p) {
    pthread_mutex_lock(&p->lock);
    rlx_vk_pipeline_stats s = p->stats;
    pthread_mutex_unlock(&p->lock);
    return s;
}
