/* A Vulkan device's memory bandwidth, measured by a copy kernel (shaders/bw_copy.comp). `rlx bench`
 * divides it by the bytes one decode step must read to get the decode floor (DESIGN.md,
 * "Performance model"). */
#ifndef RLX_RUNTIME_VK_BANDWIDTH_H
#define RLX_RUNTIME_VK_BANDWIDTH_H

#include <stdbool.h>
#include <stdint.h>

#include "rlx/status.h"

typedef struct rlx_vk_bandwidth {
    double bytes_per_s;    /* (bytes read + bytes written) / the best repetition's time (STREAM's rule) */
    uint64_t copy_bytes;   /* bytes copied per repetition (read once and written once) */
    uint32_t reps;         /* timed repetitions, after one untimed */
    bool gpu_timestamps;   /* timed by timestamp queries; else by the host clock around each submit */
    double best_s;         /* the best repetition's time */
} rlx_vk_bandwidth;

/* Opens `device` (as rlx_vk_device_choose reads it: NULL means $RLX_VK_DEVICE, else the first GPU),
 * copies a buffer of copy_bytes into another one repeatedly, and times the copies.
 * copy_bytes 0 picks the default: 512 MiB (64 MiB on a CPU-type device such as lavapipe), less
 * when an eighth of the largest device-local heap or the device's binding limit is smaller. */
rlx_status rlx_vk_measure_bandwidth(const char *device, uint64_t copy_bytes, rlx_vk_bandwidth *out);

#endif
