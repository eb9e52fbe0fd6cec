/* Device memory: a sub-allocator over large blocks (one VkBuffer per block, suballocations are
 * (buffer, offset, size) ranges), and an uploader that moves host data into device memory
 * through a reused host-visible staging range.
 *
 * Every block respects maxMemoryAllocationSize; a suballocation never exceeds the device's binding
 * limit (rlx_vk_device.max_binding), so any one of them can be bound whole to a descriptor. */
#ifndef RLX_RUNTIME_VK_MEMORY_H
#define RLX_RUNTIME_VK_MEMORY_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/vk_device.h"

typedef enum {
    RLX_VK_MEM_DEVICE,   /* device-local: weights, KV cache, intermediates */
    RLX_VK_MEM_UPLOAD,   /* host-visible, coherent, written by the host: inputs, staging, scalars */
    RLX_VK_MEM_READBACK, /* host-visible, coherent, cached where possible: outputs read by the host */
} rlx_vk_mem_kind;

typedef struct rlx_vk_block rlx_vk_block;

typedef struct rlx_vk_alloc {
    VkBuffer buffer;      /* borrowed from the block */
    VkDeviceSize offset;  /* into buffer; a multiple of the storage offset alignment */
    VkDeviceSize size;    /* bytes usable (the request rounded up to 16) */
    void *mapped;         /* host address of offset for host-visible kinds; NULL otherwise */
    rlx_vk_block *block;  /* borrowed; NULL for an empty alloc */
} rlx_vk_alloc;

typedef struct rlx_vk_heap rlx_vk_heap;

rlx_status rlx_vk_heap_create(rlx_vk_device *d, rlx_vk_mem_kind kind, rlx_vk_heap **out);
/* Frees every block; allocations still out become invalid. NULL is fine. */
void rlx_vk_heap_destroy(rlx_vk_heap *h);

/* size > 0 and <= the device's binding limit; `what` names the user in error messages. */
rlx_status rlx_vk_heap_alloc(rlx_vk_heap *h, VkDeviceSize size, const char *what, rlx_vk_alloc *out);
/* Returns the range; a block that becomes empty is freed. Clears *a; an empty alloc is fine. */
void rlx_vk_heap_free(rlx_vk_heap *h, rlx_vk_alloc *a);

typedef struct rlx_vk_heap_stats {
    uint64_t blocks, block_bytes, used_bytes, peak_used_bytes;
} rlx_vk_heap_stats;
rlx_vk_heap_stats rlx_vk_heap_get_stats(rlx_vk_heap *h);

/* Refuses up front, before anything is allocated, `bytes` more than the Vulkan memory heap behind
 * h can take now: RLX_ERR_OUT_OF_MEMORY whose message says what (`what`) needs how many bytes and
 * how many are available. Available: with VK_EXT_memory_budget, the heap's budget less the
 * process's usage of it; without, the heap's size less the blocks h holds; plus, either way, the
 * free room inside h's blocks. An estimate (other heaps of the process may share the memory heap,
 * blocks fragment): allocation can still fail, and then fails cleanly. */
rlx_status rlx_vk_heap_check_room(rlx_vk_heap *h, uint64_t bytes, const char *what);
/* The bytes rlx_vk_heap_check_room counts as available. */
uint64_t rlx_vk_heap_room(rlx_vk_heap *h);

/* Batches copies (and fills) into device allocations; staging memory is reused, so any amount
 * of data passes through a bounded staging range. Each flush is one submit + wait. */
typedef struct rlx_vk_uploader rlx_vk_uploader;

rlx_status rlx_vk_uploader_create(rlx_vk_device *d, rlx_vk_heap *upload_heap, rlx_vk_uploader **out);
rlx_status rlx_vk_uploader_copy(rlx_vk_uploader *u, const rlx_vk_alloc *dst, VkDeviceSize dst_offset,
                                const void *src, size_t n);
/* Fills [dst_offset, dst_offset + n) with the 32-bit pattern; n a multiple of 4. */
rlx_status rlx_vk_uploader_fill(rlx_vk_uploader *u, const rlx_vk_alloc *dst, VkDeviceSize dst_offset, size_t n,
                                uint32_t pattern);
/* Submits what is pending and waits for it. */
rlx_status rlx_vk_uploader_flush(rlx_vk_uploader *u);
void rlx_vk_uploader_destroy(rlx_vk_uploader *u); /* does not flush; NULL is fine */

/* Copies n bytes at src + offset into host memory through a readback range: one submit + wait,
 * for compile-time use (e.g. reading a small weight back), never per token. */
rlx_status rlx_vk_download(rlx_vk_device *d, rlx_vk_heap *readback_heap, const rlx_vk_alloc *src,
                           VkDeviceSize offset, void *dst, size_t n);

#endif
