/* Device-memory limits on the Vulkan backend: weights + a KV cache larger than the device memory
 * available are refused by rlx_runner_open before anything is uploaded, with RLX_ERR_OUT_OF_MEMORY
 * and one message naming the bytes needed and the bytes available; `rlx generate` / `rlx run`
 * with such a --ctx print that on one line and exit 1. The check itself (rlx_vk_heap_check_room,
 * also what compile uses for a program's intermediates) is tested against the heap sizes the
 * driver reports.
 *
 * Expected bytes: KV = 2 * n_layer * n_ctx * n_head_kv * head_dim * 4 (f32 K and V) with
 * stories260K's shape (5 layers, 4 KV heads, head_dim 8: tests/support/test_stories.c), plus the
 * weights, which are fewer bytes than the file holds. Available bytes are at most the largest
 * device-local heap of the device (vkGetPhysicalDeviceMemoryProperties, via the capability
 * snapshot).
 *
 * Usage: test_vk_limits [RLX_BINARY] */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "rlx/runner.h"
#include "runtime/vk_backend.h"
#include "runtime/vk_memory.h"
#include "test_stories.h"
#include "test_util.h"
#include "test_vk_util.h"

static const char *model;
static char device[16];
static uint64_t model_file_bytes, max_heap_bytes;

/* Every case runs the Vulkan backend on the device under test. */
static rlx_runner_opts vk_opts(int32_t n_ctx) {
    rlx_runner_opts o = rlx_runner_opts_default();
    o.backend = "vulkan";
    o.device = device;
    o.n_ctx = n_ctx;
    return o;
}

/* "... needs N bytes ... has M bytes available ...": N and M, or false. */
static bool parse_refusal(const char *msg, uint64_t *needs, uint64_t *avail) {
    const char *p = strstr(msg, "needs ");
    const char *q = strstr(msg, " bytes available");
    if (!p || !q) return false;
    while (q > msg && q[-1] >= '0' && q[-1] <= '9') q--;
    return sscanf(p, "needs %" SCNu64 " bytes", needs) == 1 && sscanf(q, "%" SCNu64, avail) == 1;
}

static void check_numbers(const char *what, const char *msg, uint64_t n_ctx) {
    uint64_t needs = 0, avail = 0;
    bool parsed = parse_refusal(msg, &needs, &avail);
    T_CHECK(parsed, "%s: no 'needs N bytes ... M bytes available' in: %s", what, msg);
    if (!parsed) return;
    /* F16 K/V: the default on Vulkan (every device the tests run on has 16-bit storage) */
    uint64_t kv = t_stories_kv_bytes(n_ctx, 2);
    printf("%s: needs %" PRIu64 " (KV %" PRIu64 " + weights %" PRIu64 " <= file %" PRIu64 "), available %" PRIu64
           " (largest device-local heap %" PRIu64 ")\n",
           what, needs, kv, needs - kv, model_file_bytes, avail, max_heap_bytes);
    T_CHECK(needs >= kv && needs - kv <= model_file_bytes, "%s: needs %" PRIu64 " is not KV %" PRIu64
            " plus at most the file's %" PRIu64 " bytes", what, needs, kv, model_file_bytes);
    T_CHECK(avail < needs && avail <= max_heap_bytes, "%s: available %" PRIu64 " is not below both needs and the "
            "largest heap", what, avail);
}

static void refused_by_runner(int32_t n_ctx) {
    rlx_runner_opts o = vk_opts(n_ctx);
    rlx_runner *r = NULL;
    rlx_status s = rlx_runner_open(model, &o, &r);
    char what[64];
    snprintf(what, sizeof what, "runner n_ctx %d", (int)n_ctx);
    printf("%s: %s\n", what, s ? rlx_status_message(s) : "(opened)");
    T_CHECK(s && rlx_status_code(s) == RLX_ERR_OUT_OF_MEMORY, "%s: expected RLX_ERR_OUT_OF_MEMORY", what);
    if (s) check_numbers(what, rlx_status_message(s), (uint64_t)n_ctx);
    T_CHECK(r == NULL, "%s: a refused open still set *out", what);
    rlx_status_free(s);
    rlx_runner_close(r);
}

/* The CLI: exit status 1 and one line on stderr with both byte counts. */
static void refused_by_cli(const char *rlx, const char *cmd, const char *ctx) {
    const char *run[] = {rlx, "run", "-m", model, "-n", "2", "--seed", "0", "--backend", "vulkan", "--device",
                         device, "--ctx", ctx, NULL};
    const char *gen[] = {rlx, "generate", "-m", model, "--tokens", "1", "-n", "1", "--backend", "vulkan",
                         "--device", device, "--ctx", ctx, NULL};
    t_cli_result res;
    if (!t_run_cli(!strcmp(cmd, "run") ? run : gen, NULL, 60, &res)) return;
    char what[64];
    snprintf(what, sizeof what, "rlx %s --ctx %s", cmd, ctx);
    printf("%s: exit %d, stderr: %s", what, res.status, res.err);
    T_CHECK(res.status == 1, "%s: expected exit status 1", what);
    T_CHECK(res.lines == 1 && res.len > 0 && res.err[res.len - 1] == '\n', "%s: expected one line on stderr, got %d",
            what, res.lines);
    check_numbers(what, res.err, strtoull(ctx, NULL, 10));
}

/* The check on its own, against the device-local heap the driver reports. */
static void heap_room(void) {
    rlx_vk_device *d = NULL;
    rlx_vk_heap *h = NULL;
    if (!T_OK(rlx_vk_device_open(device, &d))) return;
    if (T_OK(rlx_vk_heap_create(d, RLX_VK_MEM_DEVICE, &h))) {
        T_OK(rlx_vk_heap_check_room(h, 1 << 20, "1 MiB"));
        rlx_status s = rlx_vk_heap_check_room(h, max_heap_bytes + 1, "one byte more than the largest heap");
        printf("check_room(largest heap + 1): %s\n", rlx_status_message(s));
        T_CHECK(s && rlx_status_code(s) == RLX_ERR_OUT_OF_MEMORY,
                "one byte more than the largest heap was not refused");
        rlx_status_free(s);
        rlx_vk_heap_stats st = rlx_vk_heap_get_stats(h);
        T_CHECK(st.blocks == 0, "the checks allocated %" PRIu64 " block(s)", st.blocks);
    }
    rlx_vk_heap_destroy(h);
    rlx_vk_device_close(d);
}

int main(int argc, char **argv) {
    model = t_source_path("models/stories260K.gguf");
    struct stat sb;
    T_CHECK(stat(model, &sb) == 0, "cannot stat %s", model);
    model_file_bytes = (uint64_t)sb.st_size;
    rlx_backend *probe = vkt_backend();
    const rlx_vk_caps *c = rlx_vk_backend_caps(probe);
    snprintf(device, sizeof device, "%u", c->index);
    for (uint32_t i = 0; i < c->n_heaps; i++)
        if (c->heap_device_local[i] && c->heap_size[i] > max_heap_bytes) max_heap_bytes = c->heap_size[i];
    if (!max_heap_bytes) /* no device-local heap: the backend falls back to any memory type */
        for (uint32_t i = 0; i < c->n_heaps; i++)
            if (c->heap_size[i] > max_heap_bytes) max_heap_bytes = c->heap_size[i];
    printf("largest device-local heap: %" PRIu64 " bytes; VK_EXT_memory_budget %s\n", max_heap_bytes,
           c->memory_budget ? "yes" : "no");
    rlx_backend_destroy(probe);

    /* the largest context an int32 holds needs 2.7 TB of KV; 2^30 tokens 1.4 TB */
    refused_by_runner(INT32_MAX);
    refused_by_runner(1 << 30);
    rlx_runner_opts o = vk_opts(2048);
    t_stories_generates(model, &o);
    heap_room();
    if (argc > 1) {
        refused_by_cli(argv[1], "generate", "2147483647");
        refused_by_cli(argv[1], "run", "1073741824");
    }
    vkt_check_validation();
    return t_summary("test_vk_limits");
}
