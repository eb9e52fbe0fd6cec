/* The Vulkan device layer: registry and capability snapshot, device choice, VkResult mapping, the
 * memory sub-allocator and uploader, and that the validation messenger really counts messages.
 * Expected values come from the Vulkan specification (result codes, alignment rules) and from
 * properties (every allocation aligned and disjoint, data round-trips unchanged). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/vk_backend.h"
#include "runtime/vk_status.h"
#include "test_util.h"
#include "test_vk_util.h"

static void test_result_mapping(void) {
    T_ERR(rlx_vk_check(VK_ERROR_DEVICE_LOST, "submitting"), RLX_ERR_DEVICE, "submitting: the Vulkan device was lost");
    T_ERR(rlx_vk_check(VK_ERROR_OUT_OF_DEVICE_MEMORY, "allocating"), RLX_ERR_OUT_OF_MEMORY,
          "VK_ERROR_OUT_OF_DEVICE_MEMORY");
    T_ERR(rlx_vk_check(VK_ERROR_OUT_OF_HOST_MEMORY, "x"), RLX_ERR_OUT_OF_MEMORY, "out of host memory");
    T_ERR(rlx_vk_check(VK_ERROR_EXTENSION_NOT_PRESENT, "x"), RLX_ERR_UNSUPPORTED, "VK_ERROR_EXTENSION_NOT_PRESENT");
    T_ERR(rlx_vk_check((VkResult)-12345, "x"), RLX_ERR_DEVICE, "-12345");
    T_CHECK(rlx_vk_check(VK_SUCCESS, "x") == NULL, "VK_SUCCESS is not an error");
    T_CHECK(rlx_vk_check(VK_INCOMPLETE, "x") == NULL, "VK_INCOMPLETE (positive) is not an error");
}

static void test_registry(void) {
    T_OK(rlx_vk_registry_acquire());
    uint32_t n = rlx_vk_device_count();
    printf("%u Vulkan device(s)\n", n);
    bool has_cpu = false;
    for (uint32_t i = 0; i < n; i++) {
        const rlx_vk_caps *c = rlx_vk_device_caps(i);
        char line[2048];
        rlx_vk_caps_format(c, line, sizeof line);
        printf("  %s\n", line);
        T_CHECK(c->index == i, "device %u reports index %u", i, c->index);
        T_CHECK(strstr(line, c->name) && strstr(line, "max_storage_range") && strstr(line, "subgroup"),
                "caps line of device %u lacks fields: %s", i, line);
        if (c->usable) {
            /* Vulkan 1.2 minimums (spec, "Required Limits") */
            T_CHECK(c->max_storage_range >= (1u << 27), "maxStorageBufferRange %llu < 2^27",
                    (unsigned long long)c->max_storage_range);
            T_CHECK(c->max_wg_invocations >= 128 && c->max_push >= 128, "device %u below required limits", i);
            T_CHECK(c->subgroup_size >= 1 && (c->subgroup_size & (c->subgroup_size - 1)) == 0,
                    "subgroup size %u is not a power of two", c->subgroup_size);
        }
        has_cpu |= c->is_cpu && c->usable;
    }
    T_CHECK(rlx_vk_device_caps(n) == NULL, "caps past the end must be NULL");
    uint32_t pick = 99;
    T_ERR(rlx_vk_device_choose("no-such-device-xyz", &pick), RLX_ERR_NOT_FOUND, "no usable device name contains it");
    T_ERR(rlx_vk_device_choose("4096", &pick), RLX_ERR_NOT_FOUND, "no such index");
    if (has_cpu) {
        T_OK(rlx_vk_device_choose("LLVMPIPE", &pick)); /* case-insensitive substring */
        T_CHECK(pick < n && rlx_vk_device_caps(pick)->is_cpu, "'LLVMPIPE' picked device %u", pick);
        char idx[16];
        snprintf(idx, sizeof idx, "%u", pick);
        uint32_t again = 99;
        T_OK(rlx_vk_device_choose(idx, &again));
        T_CHECK(again == pick, "index %s picked %u", idx, again);
    }
    bool has_gpu = false;
    for (uint32_t i = 0; i < n; i++) has_gpu |= rlx_vk_device_caps(i)->usable && !rlx_vk_device_caps(i)->is_cpu;
    if (!has_gpu && !getenv("RLX_VK_DEVICE"))
        T_ERR(rlx_vk_device_choose(NULL, &pick), RLX_ERR_DEVICE, "RLX_VK_DEVICE=llvmpipe");
    rlx_vk_registry_release();
}

static void test_memory(rlx_vk_device *d) {
    rlx_vk_heap *h = NULL, *rb = NULL, *up = NULL;
    T_OK(rlx_vk_heap_create(d, RLX_VK_MEM_DEVICE, &h));
    T_OK(rlx_vk_heap_create(d, RLX_VK_MEM_READBACK, &rb));
    T_OK(rlx_vk_heap_create(d, RLX_VK_MEM_UPLOAD, &up));
    if (!h || !rb || !up) return;
    enum { N = 40 };
    rlx_vk_alloc a[N];
    vkt_rng r = {12345};
    for (int i = 0; i < N; i++) T_OK(rlx_vk_heap_alloc(h, 1 + vkt_next(&r) % (3u << 20), "test", &a[i]));
    for (int i = 0; i < N; i++) {
        T_CHECK(a[i].offset % d->caps->storage_align == 0, "alloc %d offset %llu not aligned to %llu", i,
                (unsigned long long)a[i].offset, (unsigned long long)d->caps->storage_align);
        for (int j = 0; j < i; j++)
            T_CHECK(a[i].buffer != a[j].buffer || a[i].offset + a[i].size <= a[j].offset ||
                        a[j].offset + a[j].size <= a[i].offset,
                    "allocs %d and %d overlap", i, j);
    }
    for (int i = 0; i < N; i += 2) rlx_vk_heap_free(h, &a[i]); /* holes, then refill them */
    for (int i = 0; i < N; i += 2) T_OK(rlx_vk_heap_alloc(h, 4096, "refill", &a[i]));
    for (int i = 0; i < N; i++) rlx_vk_heap_free(h, &a[i]);
    rlx_vk_heap_stats st = rlx_vk_heap_get_stats(h);
    T_CHECK(st.used_bytes == 0 && st.blocks == 0, "after freeing all: %llu bytes used in %llu blocks",
            (unsigned long long)st.used_bytes, (unsigned long long)st.blocks);
    rlx_vk_alloc big;
    T_ERR(rlx_vk_heap_alloc(h, d->max_binding + 1, "too-big tensor", &big), RLX_ERR_UNSUPPORTED,
          "too-big tensor");
    T_ERR(rlx_vk_heap_alloc(h, 0, "empty tensor", &big), RLX_ERR_UNSUPPORTED, "empty tensor");

    /* uploader: more than one staging range (16 MiB) of data lands intact */
    size_t n = (20u << 20) + 12;
    uint8_t *src = malloc(n);
    rlx_vk_alloc dst = {0};
    rlx_vk_uploader *u = NULL;
    T_OK(rlx_vk_heap_alloc(rb, n, "upload target", &dst));
    T_OK(rlx_vk_uploader_create(d, up, &u));
    if (src && dst.mapped && u) {
        for (size_t i = 0; i < n; i++) src[i] = (uint8_t)(i * 2654435761u >> 13);
        T_OK(rlx_vk_uploader_fill(u, &dst, 0, n & ~(size_t)3, 0xdeadbeef));
        T_OK(rlx_vk_uploader_copy(u, &dst, 0, src, n));
        T_OK(rlx_vk_uploader_flush(u));
        T_CHECK(memcmp(dst.mapped, src, n) == 0, "uploaded %zu bytes differ", n);
    }
    rlx_vk_uploader_destroy(u);
    rlx_vk_heap_free(rb, &dst);
    free(src);
    rlx_vk_heap_destroy(h);
    rlx_vk_heap_destroy(rb);
    rlx_vk_heap_destroy(up);
}

/* The messenger must count real messages, or "no messages" would prove nothing. */
static void test_messenger_counts(rlx_vk_device *d) {
    if (!rlx_vk_validation_enabled()) {
        printf("validation layer not active: messenger check skipped\n");
        return;
    }
    uint64_t before = rlx_vk_validation_message_count();
    VkBufferCreateInfo bad = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO, .size = 0,
                              .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT};
    VkBuffer buf = VK_NULL_HANDLE;
    fprintf(stderr, "(an intentional validation error follows: buffer size 0)\n");
    if (d->vk.vkCreateBuffer(d->dev, &bad, NULL, &buf) == VK_SUCCESS && buf) d->vk.vkDestroyBuffer(d->dev, buf, NULL);
    uint64_t after = rlx_vk_validation_message_count();
    T_CHECK(after > before, "an invalid vkCreateBuffer produced no validation message");
    rlx_vk_validation_message_reset();
}

int main(void) {
    test_result_mapping();
    test_registry();
    rlx_backend *b = vkt_backend(); /* skips here when there is no device */
    rlx_backend_destroy(b);
    const char *want = getenv("RLX_VK_DEVICE");
    rlx_vk_device *d = NULL;
    rlx_status s = rlx_vk_device_open(want && *want ? want : NULL, &d);
    if (s && rlx_status_code(s) == RLX_ERR_DEVICE) {
        rlx_status_free(s);
        s = rlx_vk_device_open("llvmpipe", &d);
    }
    if (T_OK(s)) {
        test_messenger_counts(d);
        test_memory(d);
        rlx_vk_device_close(d);
    }
    rlx_backend *none = NULL;
    T_ERR(rlx_backend_vulkan_create("no-such-device-xyz", &none), RLX_ERR_NOT_FOUND, "no-such-device-xyz");
    vkt_check_validation();
    return t_summary("test_vk_device");
}
