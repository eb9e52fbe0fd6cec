/* The block sub-allocator and the staging uploader. */
#include "runtime/vk_memory.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/vk_fault.h"
#include "runtime/vk_status.h"

/* Blocks of this size amortise vkAllocateMemory (drivers cap the number of allocations, often at
 * 4096) without holding much memory unused; larger requests get a block of their own. */
#define RLX_VK_BLOCK_BYTES (64ull << 20)
#define RLX_VK_STAGING_BYTES (16ull << 20)

typedef struct free_range {
    VkDeviceSize offset, size;
} free_range;

struct rlx_vk_block {
    VkDeviceMemory memory;  /* owned */
    VkBuffer buffer;        /* owned, covers the whole block */
    VkDeviceSize size;
    uint8_t *mapped;        /* the mapping of the whole block (host-visible kinds), else NULL */
    free_range *free;       /* owned, sorted by offset, never adjacent (coalesced) */
    size_t n_free, cap_free;
    VkDeviceSize used;
    rlx_vk_block *next;     /* the heap's list */
};

struct rlx_vk_heap {
    rlx_vk_device *dev;     /* borrowed */
    rlx_vk_mem_kind kind;
    uint32_t memory_type;
    VkDeviceSize align;
    pthread_mutex_t lock;
    rlx_vk_block *blocks;   /* owned list */
    rlx_vk_heap_stats stats;
};

static const char *kind_name(rlx_vk_mem_kind k) {
    return k == RLX_VK_MEM_DEVICE ? "device" : k == RLX_VK_MEM_UPLOAD ? "upload" : "readback";
}

static VkDeviceSize round_up(VkDeviceSize x, VkDeviceSize a) { return (x + a - 1) / a * a; }

/* The first memory type allowed by `bits` that has `need`, preferring one that also has `want`. */
static int find_type(const VkPhysicalDeviceMemoryProperties *m, uint32_t bits, VkMemoryPropertyFlags need,
                     VkMemoryPropertyFlags want) {
    int fallback = -1;
    for (uint32_t i = 0; i < m->memoryTypeCount; i++) {
        if (!(bits & (1u << i))) continue;
        VkMemoryPropertyFlags f = m->memoryTypes[i].propertyFlags;
        if ((f & need) != need) continue;
        if ((f & want) == want) return (int)i;
        if (fallback < 0) fallback = (int)i;
    }
    return fallback;
}

static VkBufferCreateInfo buffer_info(VkDeviceSize size) {
    return (VkBufferCreateInfo){
        .sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
        .size = size,
        .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                 VK_BUFFER_USAGE_TRANSFER_DST_BIT,
        .sharingMode = VK_SHARING_MODE_EXCLUSIVE,
    };
}

/* vkCreateBuffer and vkAllocateMemory, each of which an armed fault can fail (vk_fault.h). */
static VkResult create_buffer(rlx_vk_device *d, const VkBufferCreateInfo *bi, VkBuffer *out) {
    VkResult r = rlx_vk_fault_memory();
    return r != VK_SUCCESS ? r : d->vk.vkCreateBuffer(d->dev, bi, NULL, out);
}

static VkResult allocate_memory(rlx_vk_device *d, const VkMemoryAllocateInfo *ai, VkDeviceMemory *out) {
    VkResult r = rlx_vk_fault_memory();
    return r != VK_SUCCESS ? r : d->vk.vkAllocateMemory(d->dev, ai, NULL, out);
}

static rlx_status choose_memory_type(rlx_vk_heap *h) {
    rlx_vk_device *d = h->dev;
    VkBufferCreateInfo bi = buffer_info(4096);
    VkBuffer probe;
    RLX_VK_TRY(create_buffer(d, &bi, &probe), "creating a probe buffer");
    VkMemoryRequirements req;
    d->vk.vkGetBufferMemoryRequirements(d->dev, probe, &req);
    d->vk.vkDestroyBuffer(d->dev, probe, NULL);
    const VkMemoryPropertyFlags host = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    int t;
    if (h->kind == RLX_VK_MEM_DEVICE)
        t = find_type(&d->mem, req.memoryTypeBits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, 0);
    else if (h->kind == RLX_VK_MEM_UPLOAD)
        t = find_type(&d->mem, req.memoryTypeBits, host, 0);
    else
        t = find_type(&d->mem, req.memoryTypeBits, host, VK_MEMORY_PROPERTY_HOST_CACHED_BIT);
    if (t < 0 && h->kind == RLX_VK_MEM_DEVICE) t = find_type(&d->mem, req.memoryTypeBits, 0, 0);
    if (t < 0)
        return rlx_errorf(RLX_ERR_UNSUPPORTED, "Vulkan device %s: no memory type for %s buffers", d->caps->name,
                          kind_name(h->kind));
    h->memory_type = (uint32_t)t;
    h->align = req.alignment;
    if (h->align < d->caps->storage_align) h->align = d->caps->storage_align;
    if (h->kind != RLX_VK_MEM_DEVICE && h->align < d->caps->atom_size) h->align = d->caps->atom_size;
    if (h->align < 16) h->align = 16;
    return NULL;
}

rlx_status rlx_vk_heap_create(rlx_vk_device *d, rlx_vk_mem_kind kind, rlx_vk_heap **out) {
    rlx_vk_heap *h = calloc(1, sizeof *h);
    if (!h) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "creating the %s memory heap", kind_name(kind));
    h->dev = d;
    h->kind = kind;
    pthread_mutex_init(&h->lock, NULL);
    rlx_status s = choose_memory_type(h);
    if (s) {
        rlx_vk_heap_destroy(h);
        return rlx_status_annotate(s, "creating the %s memory heap", kind_name(kind));
    }
    *out = h;
    return NULL;
}

static void block_destroy(rlx_vk_heap *h, rlx_vk_block *b) {
    rlx_vk_device *d = h->dev;
    if (b->mapped) d->vk.vkUnmapMemory(d->dev, b->memory);
    if (b->buffer) d->vk.vkDestroyBuffer(d->dev, b->buffer, NULL);
    if (b->memory) d->vk.vkFreeMemory(d->dev, b->memory, NULL);
    h->stats.blocks--;
    h->stats.block_bytes -= b->size;
    free(b->free);
    free(b);
}

void rlx_vk_heap_destroy(rlx_vk_heap *h) {
    if (!h) return;
    while (h->blocks) {
        rlx_vk_block *b = h->blocks;
        h->blocks = b->next;
        block_destroy(h, b);
    }
    pthread_mutex_destroy(&h->lock);
    free(h);
}

static rlx_status block_create(rlx_vk_heap *h, VkDeviceSize size, const char *what, rlx_vk_block **out) {
    rlx_vk_device *d = h->dev;
    rlx_vk_block *b = calloc(1, sizeof *b);
    if (b) b->free = malloc(8 * sizeof *b->free);
    if (!b || !b->free) {
        free(b);
        return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "%s: allocating a block record", what);
    }
    b->cap_free = 8;
    b->size = size;
    h->stats.blocks++;
    h->stats.block_bytes += size;
    VkBufferCreateInfo bi = buffer_info(size);
    rlx_status s = rlx_vk_check(create_buffer(d, &bi, &b->buffer), "creating a memory block");
    VkMemoryRequirements req = {0};
    if (!s) d->vk.vkGetBufferMemoryRequirements(d->dev, b->buffer, &req);
    VkMemoryAllocateInfo ai = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
        .allocationSize = req.size,
        .memoryTypeIndex = h->memory_type,
    };
    if (!s) s = rlx_vk_check(allocate_memory(d, &ai, &b->memory), "allocating a memory block");
    if (!s) s = rlx_vk_check(d->vk.vkBindBufferMemory(d->dev, b->buffer, b->memory, 0), "binding a memory block");
    if (!s && h->kind != RLX_VK_MEM_DEVICE)
        s = rlx_vk_check(d->vk.vkMapMemory(d->dev, b->memory, 0, VK_WHOLE_SIZE, 0, (void **)&b->mapped),
                         "mapping a memory block");
    if (s) {
        block_destroy(h, b);
        return rlx_status_annotate(s, "%s: %.1f MiB of %s memory", what, (double)size / 1048576.0,
                                   kind_name(h->kind));
    }
    b->free[0] = (free_range){0, size};
    b->n_free = 1;
    b->next = h->blocks;
    h->blocks = b;
    *out = b;
    return NULL;
}

/* First fit within b; true on success. */
static bool block_take(rlx_vk_block *b, VkDeviceSize size, VkDeviceSize align, VkDeviceSize *offset) {
    for (size_t i = 0; i < b->n_free; i++) {
        free_range *f = &b->free[i];
        VkDeviceSize start = round_up(f->offset, align);
        if (start + size > f->offset + f->size) continue;
        VkDeviceSize end = start + size, f_end = f->offset + f->size;
        /* Split f into [f->offset, start) and [end, f_end); at most one new range is needed. */
        if (start > f->offset && end < f_end) {
            if (b->n_free == b->cap_free) {
                free_range *grown = realloc(b->free, 2 * b->cap_free * sizeof *grown);
                if (!grown) return false;
                b->free = grown;
                b->cap_free *= 2;
                f = &b->free[i];
            }
            memmove(&b->free[i + 2], &b->free[i + 1], (b->n_free - i - 1) * sizeof *b->free);
            b->free[i + 1] = (free_range){end, f_end - end};
            f->size = start - f->offset;
            b->n_free++;
        } else if (start > f->offset) {
            f->size = start - f->offset;
        } else if (end < f_end) {
            f->offset = end;
            f->size = f_end - end;
        } else {
            memmove(&b->free[i], &b->free[i + 1], (b->n_free - i - 1) * sizeof *b->free);
            b->n_free--;
        }
        b->used += size;
        *offset = start;
        return true;
    }
    return false;
}

/* Gives [offset, offset+size) back, merging with its neighbours. */
static bool block_give(rlx_vk_block *b, VkDeviceSize offset, VkDeviceSize size) {
    size_t i = 0;
    while (i < b->n_free && b->free[i].offset < offset) i++;
    bool merge_prev = i > 0 && b->free[i - 1].offset + b->free[i - 1].size == offset;
    bool merge_next = i < b->n_free && offset + size == b->free[i].offset;
    b->used -= size;
    if (merge_prev && merge_next) {
        b->free[i - 1].size += size + b->free[i].size;
        memmove(&b->free[i], &b->free[i + 1], (b->n_free - i - 1) * sizeof *b->free);
        b->n_free--;
    } else if (merge_prev) {
        b->free[i - 1].size += size;
    } else if (merge_next) {
        b->free[i].offset = offset;
        b->free[i].size += size;
    } else {
        if (b->n_free == b->cap_free) {
            free_range *grown = realloc(b->free, 2 * b->cap_free * sizeof *grown);
            if (!grown) return false; /* the range is lost to this block until it is freed */
            b->free = grown;
            b->cap_free *= 2;
        }
        memmove(&b->free[i + 1], &b->free[i], (b->n_free - i) * sizeof *b->free);
        b->free[i] = (free_range){offset, size};
        b->n_free++;
    }
    return true;
}

static rlx_status heap_alloc_locked(rlx_vk_heap *h, VkDeviceSize size, const char *what, rlx_vk_alloc *out) {
    const rlx_vk_caps *c = h->dev->caps;
    if (size == 0 || size > h->dev->max_binding)
        return rlx_errorf(RLX_ERR_UNSUPPORTED,
                          "%s: %" PRIu64 " bytes is outside (0, %" PRIu64 "], the largest range one binding may "
                          "cover on %s (maxStorageBufferRange %" PRIu64 ", maxMemoryAllocationSize %" PRIu64 ")",
                          what, (uint64_t)size, h->dev->max_binding, c->name, c->max_storage_range, c->max_alloc);
    size = round_up(size, 16);
    VkDeviceSize offset = 0;
    rlx_vk_block *b = h->blocks;
    while (b && !block_take(b, size, h->align, &offset)) b = b->next;
    if (!b) {
        VkDeviceSize block = RLX_VK_BLOCK_BYTES;
        if (h->kind != RLX_VK_MEM_DEVICE) block = 4ull << 20;
        if (c->max_alloc && block > c->max_alloc) block = c->max_alloc;
        if (size > block) block = round_up(size, h->align);
        RLX_TRY(block_create(h, block, what, &b));
        if (!block_take(b, size, h->align, &offset))
            return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "%s: a fresh block of %" PRIu64 " bytes did not fit %" PRIu64,
                              what, (uint64_t)block, (uint64_t)size);
    }
    *out = (rlx_vk_alloc){
        .buffer = b->buffer,
        .offset = offset,
        .size = size,
        .mapped = b->mapped ? b->mapped + offset : NULL,
        .block = b,
    };
    h->stats.used_bytes += size;
    if (h->stats.used_bytes > h->stats.peak_used_bytes) h->stats.peak_used_bytes = h->stats.used_bytes;
    return NULL;
}

rlx_status rlx_vk_heap_alloc(rlx_vk_heap *h, VkDeviceSize size, const char *what, rlx_vk_alloc *out) {
    pthread_mutex_lock(&h->lock);
    rlx_status s = heap_alloc_locked(h, size, what, out);
    pthread_mutex_unlock(&h->lock);
    return s;
}

void rlx_vk_heap_free(rlx_vk_heap *h, rlx_vk_alloc *a) {
    if (!a->block) return;
    pthread_mutex_lock(&h->lock);
    rlx_vk_block *b = a->block;
    block_give(b, a->offset, a->size);
    h->stats.used_bytes -= a->size;
    if (b->used == 0) {
        rlx_vk_block **p = &h->blocks;
        while (*p != b) p = &(*p)->next;
        *p = b->next;
        block_destroy(h, b);
    }
    pthread_mutex_unlock(&h->lock);
    memset(a, 0, sizeof *a);
}

rlx_vk_heap_stats rlx_vk_heap_get_stats(rlx_vk_heap *h) {
    pthread_mutex_lock(&h->lock);
    rlx_vk_heap_stats s = h->stats;
    pthread_mutex_unlock(&h->lock);
    return s;
}

/* The memory heap behind h: its limit (budget or size), the bytes in use against it, whether the
 * limit is a budget, and the bytes available (see rlx_vk_heap_check_room). */
typedef struct heap_room {
    uint32_t heap;
    uint64_t limit, in_use, avail;
    bool budget;
} heap_room;

static heap_room room_of(rlx_vk_heap *h) {
    rlx_vk_device *d = h->dev;
    uint32_t heap = d->mem.memoryTypes[h->memory_type].heapIndex;
    rlx_vk_heap_stats st = rlx_vk_heap_get_stats(h);
    uint64_t limit = d->mem.memoryHeaps[heap].size, in_use = st.block_bytes;
    bool budget = false;
    if (d->caps->memory_budget) {
        VkPhysicalDeviceMemoryBudgetPropertiesEXT b = {
            .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_BUDGET_PROPERTIES_EXT};
        VkPhysicalDeviceMemoryProperties2 m = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_PROPERTIES_2,
                                               .pNext = &b};
        vkGetPhysicalDeviceMemoryProperties2(d->phys, &m);
        /* a driver that leaves the budget at 0 has none to give: keep the heap size */
        if (b.heapBudget[heap] > 0) {
            budget = true;
            limit = b.heapBudget[heap];
            in_use = b.heapUsage[heap];
        }
    }
    uint64_t avail = (limit > in_use ? limit - in_use : 0) + (st.block_bytes - st.used_bytes);
    return (heap_room){heap, limit, in_use, avail, budget};
}

uint64_t rlx_vk_heap_room(rlx_vk_heap *h) { return room_of(h).avail; }

rlx_status rlx_vk_heap_check_room(rlx_vk_heap *h, uint64_t bytes, const char *what) {
    heap_room r = room_of(h);
    if (bytes <= r.avail) return NULL;
    return rlx_errorf(RLX_ERR_OUT_OF_MEMORY,
                      "%s needs %" PRIu64 " bytes of device memory, but %s has %" PRIu64 " bytes available "
                      "(memory heap %u: %s %" PRIu64 " bytes, %" PRIu64 " in use)",
                      what, bytes, h->dev->caps->name, r.avail, r.heap, r.budget ? "budget" : "size", r.limit,
                      r.in_use);
}

/* ---- uploader ---- */

struct rlx_vk_uploader {
    rlx_vk_device *dev;      /* borrowed */
    rlx_vk_heap *heap;       /* borrowed: where staging comes from */
    rlx_vk_alloc staging;    /* owned by heap */
    VkDeviceSize staged;     /* bytes of staging used by pending copies */
    VkCommandBuffer cb;      /* owned: from the device's pool */
    VkFence fence;           /* owned */
    bool recording;
};

rlx_status rlx_vk_uploader_create(rlx_vk_device *d, rlx_vk_heap *upload_heap, rlx_vk_uploader **out) {
    rlx_vk_uploader *u = calloc(1, sizeof *u);
    if (!u) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "creating an uploader");
    u->dev = d;
    u->heap = upload_heap;
    VkDeviceSize staging = RLX_VK_STAGING_BYTES < d->max_binding ? RLX_VK_STAGING_BYTES : d->max_binding;
    rlx_status s = rlx_vk_heap_alloc(upload_heap, staging, "upload staging", &u->staging);
    VkCommandBufferAllocateInfo ai = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
        .commandPool = d->pool,
        .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
        .commandBufferCount = 1,
    };
    if (!s) {
        pthread_mutex_lock(&d->queue_lock);
        s = rlx_vk_check(d->vk.vkAllocateCommandBuffers(d->dev, &ai, &u->cb), "allocating an upload command buffer");
        pthread_mutex_unlock(&d->queue_lock);
    }
    VkFenceCreateInfo fi = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    if (!s) s = rlx_vk_check(d->vk.vkCreateFence(d->dev, &fi, NULL, &u->fence), "creating an upload fence");
    if (s) {
        rlx_vk_uploader_destroy(u);
        return s;
    }
    *out = u;
    return NULL;
}

void rlx_vk_uploader_destroy(rlx_vk_uploader *u) {
    if (!u) return;
    rlx_vk_device *d = u->dev;
    if (u->recording) d->vk.vkEndCommandBuffer(u->cb);
    if (u->fence) d->vk.vkDestroyFence(d->dev, u->fence, NULL);
    if (u->cb) {
        pthread_mutex_lock(&d->queue_lock);
        d->vk.vkFreeCommandBuffers(d->dev, d->pool, 1, &u->cb);
        pthread_mutex_unlock(&d->queue_lock);
    }
    rlx_vk_heap_free(u->heap, &u->staging);
    free(u);
}

static rlx_status begin(rlx_vk_uploader *u) {
    if (u->recording) return NULL;
    VkCommandBufferBeginInfo bi = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
        .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT,
    };
    RLX_VK_TRY(u->dev->vk.vkBeginCommandBuffer(u->cb, &bi), "beginning an upload");
    u->recording = true;
    return NULL;
}

static void transfer_barrier(rlx_vk_uploader *u) {
    VkMemoryBarrier mb = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
        .srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT,
        .dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
    };
    u->dev->vk.vkCmdPipelineBarrier(u->cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &mb,
                                    0, NULL, 0, NULL);
}

rlx_status rlx_vk_uploader_flush(rlx_vk_uploader *u) {
    if (!u->recording) return NULL;
    rlx_vk_device *d = u->dev;
    /* Later submissions (dispatches) and the host (host-visible targets) read what was copied. */
    VkMemoryBarrier mb = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
        .srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT,
        .dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT |
                         VK_ACCESS_TRANSFER_WRITE_BIT | VK_ACCESS_HOST_READ_BIT,
    };
    d->vk.vkCmdPipelineBarrier(u->cb, VK_PIPELINE_STAGE_TRANSFER_BIT,
                               VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT |
                                   VK_PIPELINE_STAGE_HOST_BIT,
                               0, 1, &mb, 0, NULL, 0, NULL);
    u->recording = false;
    RLX_VK_TRY(d->vk.vkEndCommandBuffer(u->cb), "ending an upload");
    RLX_TRY(rlx_vk_submit_wait(d, u->cb, u->fence, "uploading to the device"));
    u->staged = 0;
    return NULL;
}

rlx_status rlx_vk_uploader_copy(rlx_vk_uploader *u, const rlx_vk_alloc *dst, VkDeviceSize dst_offset,
                                const void *src, size_t n) {
    const uint8_t *p = src;
    while (n > 0) {
        if (u->staged == u->staging.size) RLX_TRY(rlx_vk_uploader_flush(u));
        RLX_TRY(begin(u));
        VkDeviceSize room = u->staging.size - u->staged;
        VkDeviceSize chunk = n < room ? n : room;
        memcpy((uint8_t *)u->staging.mapped + u->staged, p, chunk);
        VkBufferCopy region = {
            .srcOffset = u->staging.offset + u->staged,
            .dstOffset = dst->offset + dst_offset,
            .size = chunk,
        };
        u->dev->vk.vkCmdCopyBuffer(u->cb, u->staging.buffer, dst->buffer, 1, &region);
        /* Keep the next staged range 16-byte aligned, as copy offsets like. */
        u->staged += (chunk + 15) & ~(VkDeviceSize)15;
        if (u->staged > u->staging.size) u->staged = u->staging.size;
        p += chunk;
        n -= chunk;
        dst_offset += chunk;
    }
    return NULL;
}

rlx_status rlx_vk_uploader_fill(rlx_vk_uploader *u, const rlx_vk_alloc *dst, VkDeviceSize dst_offset, size_t n,
                                uint32_t pattern) {
    if (n == 0) return NULL;
    RLX_TRY(begin(u));
    /* Copies never overlap each other (distinct targets, distinct staging ranges), but a fill may
     * overlap a copy before or after it: order it against both. */
    transfer_barrier(u);
    u->dev->vk.vkCmdFillBuffer(u->cb, dst->buffer, dst->offset + dst_offset, n, pattern);
    transfer_barrier(u);
    return NULL;
}

typedef struct download {
    const rlx_vk_device *d;
    const rlx_vk_alloc *src, *rb;
    VkDeviceSize offset, n;
} download;

static void record_download(void *ctx, VkCommandBuffer cb) {
    const download *dl = ctx;
    const rlx_vk_device *d = dl->d;
    VkMemoryBarrier mb = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
        .srcAccessMask = VK_ACCESS_MEMORY_WRITE_BIT,
        .dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT,
    };
    d->vk.vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &mb, 0,
                               NULL, 0, NULL);
    VkBufferCopy region = {dl->src->offset + dl->offset, dl->rb->offset, dl->n};
    d->vk.vkCmdCopyBuffer(cb, dl->src->buffer, dl->rb->buffer, 1, &region);
    mb.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
    mb.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
    d->vk.vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0, NULL, 0,
                               NULL);
}

rlx_status rlx_vk_download(rlx_vk_device *d, rlx_vk_heap *readback_heap, const rlx_vk_alloc *src,
                           VkDeviceSize offset, void *dst, size_t n) {
    rlx_vk_alloc rb = {0};
    RLX_TRY(rlx_vk_heap_alloc(readback_heap, n, "download", &rb));
    download dl = {.d = d, .src = src, .rb = &rb, .offset = offset, .n = n};
    rlx_status s = rlx_vk_run_once(d, record_download, &dl, "download", "downloading from the device");
    if (!s) memcpy(dst, rb.mapped, n);
    rlx_vk_heap_free(readback_heap, &rb);
    return s;
}
