/* Device description and memory bandwidth for `rlx bench`.
 *
 * Bandwidth follows STREAM's copy rule: (bytes read + bytes written) / the best time of several
 * repetitions. On Vulkan the runtime's copy kernel measures it (runtime/vk_bandwidth.c); on the CPU
 * every online core memcpy's its slice of a 512 MiB buffer into another one. The figure belongs to
 * the device, not to a run, so it is cached per device: the Vulkan key is the device UUID and
 * driver version (as the pipeline cache's file name, runtime/vk_pipeline.c), the CPU's is "cpu". */
#include "bench_device.h"

#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli_util.h"
#include "loader/core/cache_dir.h"
#ifdef RLX_HAVE_VULKAN
#include "runtime/vk_bandwidth.h"
#include "runtime/vk_device.h"
#endif

#define CPU_BW_BYTES (512ull << 20) /* copied per repetition: beyond any last-level cache */
#define CPU_BW_REPS 5
#define CPU_BW_MAX_THREADS 512

static int online_cores(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > CPU_BW_MAX_THREADS ? CPU_BW_MAX_THREADS : (int)n;
}

/* /proc/cpuinfo's "model name" (x86); "CPU" where there is none. */
static void cpu_model(char *buf, size_t size) {
    snprintf(buf, size, "CPU");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        char *colon = strchr(line, ':');
        if (strncmp(line, "model name", 10) != 0 || !colon) continue;
        colon += 1 + (colon[1] == ' ');
        colon[strcspn(colon, "\n")] = 0;
        snprintf(buf, size, "%s", colon);
        break;
    }
    fclose(f);
}

#ifdef RLX_HAVE_VULKAN
static rlx_status describe_vulkan(const char *device, rlx_bench_device *out) {
    RLX_TRY(rlx_vk_registry_acquire());
    uint32_t index = 0;
    rlx_status s = rlx_vk_device_choose(device, &index);
    if (!s) {
        const rlx_vk_caps *c = rlx_vk_device_caps(index);
        snprintf(out->name, sizeof out->name, "%s", c->name);
        rlx_vk_caps_format(c, out->line, sizeof out->line);
        char uuid[2 * VK_UUID_SIZE + 1];
        for (unsigned i = 0; i < VK_UUID_SIZE; i++) snprintf(uuid + 2 * i, 3, "%02x", c->device_uuid[i]);
        snprintf(out->key, sizeof out->key, "vk-%s-%08x", uuid, (unsigned)c->driver_version);
    }
    rlx_vk_registry_release();
    return s;
}
#endif

rlx_status rlx_bench_device_describe(const char *backend, const char *device, int n_threads, rlx_bench_device *out) {
    *out = (rlx_bench_device){0};
    if (backend && !strcmp(backend, "vulkan")) {
#ifdef RLX_HAVE_VULKAN
        return describe_vulkan(device, out);
#else
        (void)device;
        return rlx_errorf(RLX_ERR_UNSUPPORTED, "bench: this rlx was built without Vulkan");
#endif
    }
    if (!backend || strcmp(backend, "cpu") != 0)
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "bench: unknown backend '%s'", backend ? backend : "(null)");
    char model[256];
    cpu_model(model, sizeof model);
    out->n_threads = n_threads > 0 ? n_threads : online_cores();
    snprintf(out->name, sizeof out->name, "CPU");
    snprintf(out->line, sizeof out->line, "cpu: %s, %d online cores", model, online_cores());
    snprintf(out->key, sizeof out->key, "cpu");
    return NULL;
}

/* ---- the CPU measurement ---- */

typedef struct cpu_slice {
    uint8_t *src, *dst; /* borrowed: this thread's part of the two buffers */
    size_t n;
    bool fill;          /* first touch: each thread faults in its own pages (NUMA placement) */
} cpu_slice;

static void *cpu_slice_run(void *arg) {
    cpu_slice *s = arg;
    if (s->fill) {
        memset(s->src, 0x5a, s->n);
        memset(s->dst, 0, s->n);
    } else {
        memcpy(s->dst, s->src, s->n);
    }
    return NULL;
}

static rlx_status cpu_run_slices(cpu_slice *sl, int n) {
    pthread_t th[CPU_BW_MAX_THREADS];
    int started = 0;
    rlx_status s = NULL;
    for (int i = 1; i < n && !s; i++) {
        int e = pthread_create(&th[i], NULL, cpu_slice_run, &sl[i]);
        if (e) s = rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "bandwidth probe: starting thread %d of %d: %s", i, n, strerror(e));
        else started = i;
    }
    cpu_slice_run(&sl[0]);
    for (int i = 1; i <= started; i++) pthread_join(th[i], NULL);
    return s;
}

static rlx_status cpu_measure(double *bytes_per_s, char *method, size_t method_size) {
    int n = online_cores();
    uint8_t *src = malloc(CPU_BW_BYTES), *dst = malloc(CPU_BW_BYTES);
    cpu_slice *sl = calloc((size_t)n, sizeof *sl);
    if (!src || !dst || !sl) {
        free(src);
        free(dst);
        free(sl);
        return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "bandwidth probe: two buffers of %llu MiB",
                          (unsigned long long)(CPU_BW_BYTES >> 20));
    }
    size_t part = CPU_BW_BYTES / (size_t)n / 4096 * 4096;
    for (int i = 0; i < n; i++)
        sl[i] = (cpu_slice){src + (size_t)i * part, dst + (size_t)i * part,
                            i == n - 1 ? CPU_BW_BYTES - (size_t)i * part : part, true};
    rlx_status s = cpu_run_slices(sl, n);
    for (int i = 0; i < n; i++) sl[i].fill = false;
    double best = 0.0;
    for (int r = 0; r < CPU_BW_REPS && !s; r++) {
        double t0 = rlx_cli_now();
        s = cpu_run_slices(sl, n);
        double t = rlx_cli_now() - t0;
        if (t > 0 && (best == 0.0 || t < best)) best = t;
    }
    free(src);
    free(dst);
    free(sl);
    if (s) return s;
    if (best <= 0.0) return rlx_errorf(RLX_ERR_IO, "bandwidth probe: the copies took no measurable time");
    *bytes_per_s = 2.0 * (double)CPU_BW_BYTES / best;
    snprintf(method, method_size, "memcpy on %d threads, %llu MiB read + written, best of %d", n,
             (unsigned long long)(CPU_BW_BYTES >> 20), CPU_BW_REPS);
    return NULL;
}

static rlx_status measure(const rlx_bench_device *dev, const char *device, rlx_bench_bandwidth *out) {
    if (strcmp(dev->key, "cpu") == 0) return cpu_measure(&out->bytes_per_s, out->method, sizeof out->method);
#ifdef RLX_HAVE_VULKAN
    rlx_vk_bandwidth bw;
    RLX_TRY(rlx_vk_measure_bandwidth(device, 0, &bw));
    out->bytes_per_s = bw.bytes_per_s;
    snprintf(out->method, sizeof out->method, "copy kernel, %llu MiB read + written, best of %u (%s)",
             (unsigned long long)(bw.copy_bytes >> 20), bw.reps,
             bw.gpu_timestamps ? "GPU timestamps" : "host clock around each submit");
    return NULL;
#else
    (void)device;
    return rlx_errorf(RLX_ERR_UNSUPPORTED, "bench: this rlx was built without Vulkan");
#endif
}

/* ---- the cache ---- */

/* <cache dir>/bandwidth-<key>.json (loader/core/cache_dir.h); false when there is none. */
static bool cache_path(const char *key, char *path, size_t size) {
    char dir[400];
    if (!rlx_cache_dir(dir, sizeof dir)) return false;
    snprintf(path, size, "%s/bandwidth-%s.json", dir, key);
    return true;
}

/* A cache file counts only when it names this key and holds a positive finite figure. */
static bool cache_read(const rlx_bench_device *dev, rlx_bench_bandwidth *out) {
    json_t *j = json_load_file(out->cache_path, 0, NULL);
    const char *key = json_string_value(json_object_get(j, "key"));
    const char *method = json_string_value(json_object_get(j, "method"));
    double bw = json_number_value(json_object_get(j, "bytes_per_s"));
    bool ok = key && !strcmp(key, dev->key) && method && isfinite(bw) && bw > 0;
    if (ok) {
        out->bytes_per_s = bw;
        snprintf(out->method, sizeof out->method, "%s", method);
    }
    json_decref(j);
    return ok;
}

/* Best effort, written then renamed so a concurrent reader never sees half a file. */
static void cache_write(const rlx_bench_device *dev, const rlx_bench_bandwidth *bw) {
    json_t *j = json_pack("{s:s, s:s, s:f, s:s, s:I}", "key", dev->key, "device", dev->name, "bytes_per_s",
                          bw->bytes_per_s, "method", bw->method, "measured_unix_time", (json_int_t)time(NULL));
    char tmp[600];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", bw->cache_path, (long)getpid());
    if (j && json_dump_file(j, tmp, JSON_INDENT(2)) == 0 && rename(tmp, bw->cache_path) != 0) remove(tmp);
    json_decref(j);
}

rlx_status rlx_bench_bandwidth_get(const rlx_bench_device *dev, const char *device, bool remeasure,
                                   rlx_bench_bandwidth *out) {
    *out = (rlx_bench_bandwidth){0};
    bool cached = cache_path(dev->key, out->cache_path, sizeof out->cache_path);
    if (!cached) out->cache_path[0] = 0;
    if (cached && !remeasure && cache_read(dev, out)) {
        out->from_cache = true;
        return NULL;
    }
    RLX_TRY(measure(dev, device, out));
    if (cached) cache_write(dev, out);
    return NULL;
}
