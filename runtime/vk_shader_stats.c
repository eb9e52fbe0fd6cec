/* See vk_shader_stats.h. */
#include "runtime/vk_shader_stats.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_EXECUTABLES 4
#define MAX_STATS 32

static void print_value(const VkPipelineExecutableStatisticKHR *s) {
    switch (s->format) {
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_BOOL32_KHR: fprintf(stderr, "%s", s->value.b32 ? "yes" : "no"); break;
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_INT64_KHR: fprintf(stderr, "%" PRId64, s->value.i64); break;
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_UINT64_KHR: fprintf(stderr, "%" PRIu64, s->value.u64); break;
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_FLOAT64_KHR: fprintf(stderr, "%g", s->value.f64); break;
    default: fprintf(stderr, "?"); break;
    }
}

static void print_executable(const rlx_vk_device *d, VkPipeline pl, uint32_t index, const char *label) {
    VkPipelineExecutableInfoKHR info = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INFO_KHR, .pipeline = pl, .executableIndex = index};
    VkPipelineExecutableStatisticKHR stats[MAX_STATS];
    for (uint32_t i = 0; i < MAX_STATS; i++) stats[i] = (VkPipelineExecutableStatisticKHR){
        .sType = VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_STATISTIC_KHR};
    uint32_t n = MAX_STATS;
    VkResult r = d->vk.vkGetPipelineExecutableStatisticsKHR(d->dev, &info, &n, stats);
    if (r < 0) {
        fprintf(stderr, "rlx vulkan shader stats: %s: the driver gave no statistics (VkResult %d)\n", label, (int)r);
        return;
    }
    fprintf(stderr, "rlx vulkan shader stats: %s:", label);
    for (uint32_t i = 0; i < n; i++) {
        fprintf(stderr, "%s %s ", i ? "," : "", stats[i].name);
        print_value(&stats[i]);
    }
    fprintf(stderr, "\n");
}

void rlx_vk_shader_stats_print(const rlx_vk_device *d, VkPipeline pl, const char *name, const uint32_t *spec,
                               uint32_t n_spec) {
    if (!d->vk.vkGetPipelineExecutablePropertiesKHR || !d->vk.vkGetPipelineExecutableStatisticsKHR) return;
    VkPipelineInfoKHR info = {.sType = VK_STRUCTURE_TYPE_PIPELINE_INFO_KHR, .pipeline = pl};
    VkPipelineExecutablePropertiesKHR props[MAX_EXECUTABLES];
    for (uint32_t i = 0; i < MAX_EXECUTABLES; i++)
        props[i] = (VkPipelineExecutablePropertiesKHR){.sType = VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_PROPERTIES_KHR};
    uint32_t n = MAX_EXECUTABLES;
    if (d->vk.vkGetPipelineExecutablePropertiesKHR(d->dev, &info, &n, props) < 0) n = 0;
    char label[256];
    int at = snprintf(label, sizeof label, "%s [spec", name);
    for (uint32_t i = 0; i < n_spec && at > 0 && (size_t)at < sizeof label; i++)
        at += snprintf(label + at, sizeof label - (size_t)at, " %" PRIu32, spec[i]);
    size_t base = at > 0 && (size_t)at < sizeof label ? (size_t)at : strlen(label);
    for (uint32_t e = 0; e < n; e++) {
        snprintf(label + base, sizeof label - base, "] %s", props[e].name);
        print_executable(d, pl, e, label);
    }
}
