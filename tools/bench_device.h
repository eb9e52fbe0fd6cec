/* The device `rlx bench` ran on: its name, its `rlx devices`-style line, and its memory bandwidth,
 * measured once and cached under $XDG_CACHE_HOME/rlx (else ~/.cache/rlx). */
#ifndef RLX_TOOLS_BENCH_DEVICE_H
#define RLX_TOOLS_BENCH_DEVICE_H

#include <stdbool.h>

#include "rlx/status.h"

typedef struct rlx_bench_device {
    char name[256];        /* the Vulkan device's name, or "CPU" */
    char line[2048];       /* `rlx devices`' line for it; for the CPU, its model and core count */
    char key[96];          /* the cache key: "cpu", or "vk-<device uuid>-<driver version>" */
    int n_threads;         /* CPU backend: the threads the run used */
} rlx_bench_device;

typedef struct rlx_bench_bandwidth {
    double bytes_per_s;    /* (bytes read + bytes written) / the best repetition's time */
    char method[160];      /* how it was measured, in words */
    char cache_path[512];  /* "" when there is no cache directory */
    bool from_cache;
} rlx_bench_bandwidth;

/* backend: "cpu" or "vulkan" (what the runner reported); device: the Vulkan device choice as
 * given to the runner (NULL: its default); n_threads: the CPU threads option (0 = online cores). */
rlx_status rlx_bench_device_describe(const char *backend, const char *device, int n_threads, rlx_bench_device *out);

/* The cached figure for dev->key, or a new measurement (stored in the cache) when there is none
 * or remeasure is set. An unwritable cache only costs a measurement next time. */
rlx_status rlx_bench_bandwidth_get(const rlx_bench_device *dev, const char *device, bool remeasure,
                                   rlx_bench_bandwidth *out);

#endif
