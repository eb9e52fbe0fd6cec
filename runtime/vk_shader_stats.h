/* RLX_VK_SHADER_STATS=1: the driver's own statistics of every compute pipeline rlx creates
 * (VK_KHR_pipeline_executable_properties), printed to stderr as the pipeline is made. On NVIDIA
 * they include the registers each invocation takes and the shared memory, which decide how many
 * workgroups an SM holds: the question behind most decode-kernel tuning (docs/PERFORMANCE.md). A
 * device without the extension says so once and runs as usual. */
#ifndef RLX_RUNTIME_VK_SHADER_STATS_H
#define RLX_RUNTIME_VK_SHADER_STATS_H

#include <stdbool.h>
#include <stdint.h>
#include <volk.h>

#include "runtime/vk_device.h"

/* Prints the statistics of each executable of pipeline pl (kernel name, its n_spec specialization
 * constants) on one line each; d must have been created with the extension (d->shader_stats). */
void rlx_vk_shader_stats_print(const rlx_vk_device *d, VkPipeline pl, const char *name, const uint32_t *spec,
                               uint32_t n_spec);

#endif
