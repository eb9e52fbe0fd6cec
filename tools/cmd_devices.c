/* rlx devices: every Vulkan device with its index and capability snapshot, one line each. */
#include <stdio.h>

#include "cli_util.h"
#include "commands.h"
#include "rlx/status.h"
#ifdef RLX_HAVE_VULKAN
#include "runtime/vk_device.h"
#endif

static void usage(FILE *f) {
    fprintf(f, "usage: rlx devices\n\n"
               "Lists every Vulkan device with its index and its capability snapshot (arithmetic and storage\n"
               "types, subgroup sizes, cooperative matrices, buffer and workgroup limits, memory heaps), one\n"
               "line each, then the device the vulkan backend picks by default.\n\n"
               "CPU-type devices (lavapipe/llvmpipe) are used only when named: RLX_VK_DEVICE=<index|name>\n"
               "or a command's device option; a comma-separated list is tried in order, and \"gpu\" means the\n"
               "first non-CPU device (e.g. RLX_VK_DEVICE=gpu,llvmpipe).\n"
               "RLX_VK_VALIDATION=1 enables the Khronos validation layer.\n");
}

static const struct option options[] = {
    {"help", no_argument, NULL, 'h'},
    {0},
};

int rlx_cmd_devices(int argc, char **argv) {
    /* the first argument decides: --help, or a usage error (devices takes none) */
    rlx_cli_parser p = {.argc = argc, .argv = argv, .shorts = "h", .longs = options};
    int opt;
    rlx_status bad = rlx_cli_next(&p, &opt);
    if (!bad && opt == 'h') {
        usage(stdout);
        return 0;
    }
    if (!bad && opt == RLX_CLI_ARG) bad = rlx_cli_unknown(&p);
    if (bad) {
        fprintf(stderr, "rlx devices: %s\n\n", rlx_status_message(bad));
        rlx_status_free(bad);
        usage(stderr);
        return 2;
    }
#ifdef RLX_HAVE_VULKAN
    rlx_status s = rlx_vk_registry_acquire();
    if (s) {
        fprintf(stderr, "rlx devices: %s\n", rlx_status_message(s));
        rlx_status_free(s);
        return 1;
    }
    char line[2048];
    uint32_t n = rlx_vk_device_count();
    for (uint32_t i = 0; i < n; i++) {
        rlx_vk_caps_format(rlx_vk_device_caps(i), line, sizeof line);
        printf("%s\n", line);
    }
    if (n == 0) printf("no Vulkan devices\n");
    uint32_t pick = 0;
    s = rlx_vk_device_choose(NULL, &pick);
    if (s)
        printf("default: none (%s)\n", rlx_status_message(s));
    else
        printf("default: %u (%s)\n", pick, rlx_vk_device_caps(pick)->name);
    rlx_status_free(s);
    rlx_vk_registry_release();
    return 0;
#else
    fprintf(stderr, "rlx devices: this rlx was built without Vulkan (RLX_VULKAN=OFF)\n");
    return 1;
#endif
}
