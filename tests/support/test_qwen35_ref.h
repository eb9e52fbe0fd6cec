/* What the Qwen3.5 graph tests (tests/runners/test_qwen35_graph.c on the CPU, tests/vulkan/
 * test_vk_qwen35.c on the device) share: the family named on the command line, and the reference
 * file's extent, which sizes their programs. Header-only: each test links only what it uses. */
#ifndef RLX_TESTS_TEST_QWEN35_REF_H
#define RLX_TESTS_TEST_QWEN35_REF_H

#include <jansson.h>
#include <string.h>

#include "runners/family.h"

/* The ops of "qwen35" or "qwen35moe", else NULL. */
static inline const rlx_family_ops *t_qwen35_family(const char *name) {
    if (!strcmp(name, "qwen35")) return &rlx_family_qwen35_ops;
    return !strcmp(name, "qwen35moe") ? &rlx_family_qwen35moe_ops : NULL;
}

/* The longest prompt (at least 1) and the most greedy steps among ref-hf.json's prompts. */
static inline void t_qwen35_ref_extent(const json_t *prompts, size_t *longest, size_t *steps) {
    *longest = 1;
    *steps = 0;
    for (size_t pi = 0; pi < json_array_size(prompts); pi++) {
        const json_t *pr = json_array_get(prompts, pi);
        size_t n = json_array_size(json_object_get(pr, "ids")), g = json_array_size(json_object_get(pr, "greedy"));
        if (n > *longest) *longest = n;
        if (g > *steps) *steps = g;
    }
}

#endif
