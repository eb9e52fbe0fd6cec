#include "runners/backend_select.h"

#include <string.h>

rlx_status rlx_backend_select(const char *name, const char *device, int n_threads, rlx_backend **out) {
    return rlx_backend_select_opts(name, device, n_threads, NULL, out);
}

/* The CPU backend is deterministic in every mode: opts asks nothing more of it. */
rlx_status rlx_backend_select_opts(const char *name, const char *device, int n_threads, const rlx_backend_opts *opts,
                                   rlx_backend **out) {
    if (n_threads < 0)
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "n_threads %d: expected 0 (online cores) or more", n_threads);
#ifdef RLX_HAVE_VULKAN
    /* "best available": a Vulkan GPU (or the device RLX_VK_DEVICE names), else the CPU backend */
    if (!name || !*name) {
        rlx_status s = rlx_backend_vulkan_create_opts(device, opts, out);
        if (!s || rlx_status_code(s) != RLX_ERR_DEVICE) return s;
        rlx_status_free(s);
        return rlx_backend_cpu_create(n_threads, out);
    }
    if (!strcmp(name, "vulkan")) return rlx_backend_vulkan_create_opts(device, opts, out);
#else
    (void)opts;
    if (name && !strcmp(name, "vulkan"))
        return rlx_errorf(RLX_ERR_UNSUPPORTED, "vulkan backend: this build has none (configured with RLX_VULKAN=OFF)");
#endif
    if (!name || !*name || !strcmp(name, "cpu")) {
        if (device && *device && name && !strcmp(name, "cpu"))
            return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "backend 'cpu' has no devices to choose from (got device '%s')",
                              device);
        return rlx_backend_cpu_create(n_threads, out);
    }
    return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "unknown backend '%s' (expected 'cpu' or 'vulkan')", name);
}

rlx_kv_type rlx_kv_type_resolve(const rlx_backend *b, rlx_kv_type t) {
    if (t != RLX_KV_TYPE_DEFAULT) return t;
    return strcmp(b->name, "vulkan") == 0 ? RLX_KV_TYPE_F16 : RLX_KV_TYPE_F32;
}
