#include "runners/backend_select.h"

#include <string.h>

rlx_status rlx_backend_select(const char *name, const char *device, int n_threads, rlx_backend **out) {
    if (n_threads < 0)
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "n_threads %d: expected 0 (online cores) or more", n_threads);
    /* Without a Vulkan backend in this build, "best available" is the CPU reference backend. */
    if (!name || !*name || !strcmp(name, "cpu")) {
        if (device && *device && name && !strcmp(name, "cpu"))
            return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "backend 'cpu' has no devices to choose from (got device '%s')",
                              device);
        return rlx_backend_cpu_create(n_threads, out);
    }
    if (!strcmp(name, "vulkan")) return rlx_errorf(RLX_ERR_UNSUPPORTED, "vulkan backend not built yet");
    return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "unknown backend '%s' (expected 'cpu' or 'vulkan')", name);
}
