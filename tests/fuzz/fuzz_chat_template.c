/* Fuzz target for chat templates: the input is a template; it is parsed and, when that succeeds,
 * rendered with a small fixed conversation (with and without the generation prompt), a fixed
 * time, and production's bounds (the render options' defaults, RLX_CHAT_TEMPLATE_DEFAULT_*;
 * steps scaled down, below), so a small template can reach what production reaches: values
 * nested to the depth limit, long loops, big strings. Inputs are capped at MAX_INPUT bytes to
 * keep each run short; real templates are a few KiB. Any input must end in output or an error status, never a crash, a
 * hang or a leak. Seeds: tests/corpus/chat_template/ (small templates and fragments, and
 * regressions: deep values, cycles, runaway source, 64-bit arithmetic edges). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "rlx/chat_template.h"

#define MAX_INPUT ((size_t)64 << 10)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static const rlx_chat_message msgs[] = {
        {"system", "Be brief.", NULL},
        {"user", "Hi <b>there</b>\n", NULL},
        {"assistant", "<think>\nhm\n</think>\n\nHello!", "{\"tool_calls\": [{\"function\": {\"name\": \"f\", \"arguments\": {\"x\": [1, 2.5]}}}]}"},
        {"user", "Bye", NULL},
    };
    if (size > MAX_INPUT) return 0;
    rlx_chat_template *t = NULL;
    rlx_status s = rlx_chat_template_parse((const char *)data, size, "fuzz", &t);
    if (s) {
        rlx_status_free(s);
        return 0;
    }
    for (int gen = 0; gen < 2; gen++) {
        rlx_chat_render_opts o = {
            .add_generation_prompt = gen,
            .bos_token = "<s>",
            .eos_token = "</s>",
            .extra_vars_json = "{\"tools\": [{\"type\": \"function\", \"function\": {\"name\": \"f\"}}]}",
            .fixed_time = true,
            .now_unix = 1727222400,
            .max_output_bytes = RLX_CHAT_TEMPLATE_DEFAULT_MAX_OUTPUT,
            .max_memory_bytes = RLX_CHAT_TEMPLATE_DEFAULT_MAX_MEMORY,
            /* a tenth of production's steps: an input that spends them all (two renders) then
             * takes about 2 s under ASan, not the 14 s that would pass libFuzzer's 10 s
             * timeout. Every bound stays reachable: the depth bound takes ~10,000 steps to hit,
             * the memory bound a few dozen doublings. */
            .max_steps = RLX_CHAT_TEMPLATE_DEFAULT_MAX_STEPS / 10,
        };
        char *out = NULL;
        s = rlx_chat_template_render(t, msgs, sizeof msgs / sizeof msgs[0], &o, &out, NULL);
        rlx_status_free(s);
        free(out);
    }
    rlx_chat_template_destroy(t);
    return 0;
}
