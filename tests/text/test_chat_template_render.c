/* Chat templates render a fixed 3-message conversation, with and without the generation prompt,
 * exactly as each vendor documents its prompt format.
 *
 * Templates: ../shared/fixtures/templates/<name>.jinja (from llama.cpp's models/templates/), and the
 * fixture models' own templates, read from their GGUF (tokenizer.chat_template) and from their HF
 * directory (chat_template.jinja or tokenizer_config.json).
 * Expected text: tests/data/templates/expected/<name>.{gen,nogen}.txt, written by hand from the
 * vendors' prompt-format documentation (cited in tests/data/templates/expected/README.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rlx/chat_template.h"
#include "test_util.h"

/* The conversation. Templates without a system role (Gemma 2, the gemma3 fixture) get
 * user / assistant / user instead. */
static const rlx_chat_message WITH_SYSTEM[] = {
    {"system", "You are a helpful assistant.", NULL},
    {"user", "What is the capital of France?", NULL},
    {"assistant", "The capital of France is Paris.", NULL},
};
static const rlx_chat_message NO_SYSTEM[] = {
    {"user", "What is the capital of France?", NULL},
    {"assistant", "The capital of France is Paris.", NULL},
    {"user", "And of Germany?", NULL},
};

/* Llama 3.2 writes strftime_now("%d %b %Y") into its system header: fix it at 2024-09-25 UTC. */
#define FIXED_NOW 1727222400

typedef struct tcase {
    const char *source;   /* fixture path (file or directory) */
    const char *expected; /* base name in tests/data/templates/expected */
    bool system;          /* WITH_SYSTEM or NO_SYSTEM */
    const char *bos;      /* the vendor's BOS text, as its tokenizer names it */
} tcase;

static const tcase CASES[] = {
    {"templates/Qwen-Qwen2.5-7B-Instruct.jinja", "Qwen-Qwen2.5-7B-Instruct", true, ""},
    {"templates/Qwen-QwQ-32B.jinja", "Qwen-QwQ-32B", true, ""},
    {"templates/Qwen-Qwen3-0.6B.jinja", "Qwen-Qwen3-0.6B", true, ""},
    {"templates/Qwen3.5-4B.jinja", "Qwen3.5-4B", true, ""},
    {"templates/google-gemma-2-2b-it.jinja", "google-gemma-2-2b-it", false, "<bos>"},
    {"templates/google-gemma-4-31B-it.jinja", "google-gemma-4-31B-it", true, "<bos>"},
    {"templates/meta-llama-Llama-3.1-8B-Instruct.jinja", "meta-llama-Llama-3.1-8B-Instruct", true, "<|begin_of_text|>"},
    {"templates/meta-llama-Llama-3.2-3B-Instruct.jinja", "meta-llama-Llama-3.2-3B-Instruct", true, "<|begin_of_text|>"},
    /* the fixture models: GGUF and HF directory hold the same template */
    {"models/qwen3/qwen3-F16.gguf", "model-qwen3", true, ""},
    {"models/qwen3/hf", "model-qwen3", true, ""},
    {"models/qwen3moe/qwen3moe-F16.gguf", "model-qwen3", true, ""},
    {"models/qwen3moe/hf", "model-qwen3", true, ""},
    {"models/qwen35/qwen35-F16.gguf", "model-qwen3", true, ""},
    {"models/qwen35/hf", "model-qwen3", true, ""},
    {"models/llama32/llama32-F16.gguf", "model-llama32", true, "<|begin_of_text|>"},
    {"models/llama32/hf", "model-llama32", true, "<|begin_of_text|>"},
    {"models/gemma3/gemma3-F16.gguf", "model-gemma3", false, "<bos>"},
    {"models/gemma3/hf", "model-gemma3", false, "<bos>"}, /* template in tokenizer_config.json */
};

/* Compares and, on a mismatch, shows where the texts part. Returns the offset of the first
 * difference (or the common length when one is a prefix of the other). */
static size_t first_difference(const char *a, size_t na, const char *b, size_t nb) {
    size_t i = 0;
    while (i < na && i < nb && a[i] == b[i]) i++;
    return i;
}

static void check_one(const tcase *tc, bool gen) {
    const char *kind = gen ? "gen" : "nogen";
    char rel[256];
    snprintf(rel, sizeof rel, "tests/data/templates/expected/%s.%s.txt", tc->expected, kind);
    size_t want_len;
    char *want = t_read_file(t_source_path(rel), &want_len);
    T_CHECK(want != NULL, "cannot read %s", rel);
    rlx_chat_template *t = NULL;
    if (!want || !T_OK(rlx_chat_template_open(t_fixture(tc->source), &t))) {
        free(want);
        return;
    }
    rlx_chat_render_opts o = {
        .add_generation_prompt = gen, .bos_token = tc->bos, .eos_token = "", .fixed_time = true, .now_unix = FIXED_NOW};
    char *got = NULL;
    size_t got_len = 0;
    const rlx_chat_message *msgs = tc->system ? WITH_SYSTEM : NO_SYSTEM;
    if (T_OK(rlx_chat_template_render(t, msgs, 3, &o, &got, &got_len))) {
        size_t at = first_difference(got, got_len, want, want_len);
        bool same = got_len == want_len && at == got_len;
        printf("%-48s %-5s: %zu bytes vs %zu expected: %s\n", tc->source, kind, got_len, want_len,
               same ? "identical" : "DIFFERENT");
        T_CHECK(same, "%s (%s): first difference at byte %zu:\n--- got ---\n%s\n--- expected ---\n%s", tc->source, kind,
                at, got + (at > 40 ? at - 40 : 0), want + (at > 40 ? at - 40 : 0));
    }
    free(got);
    free(want);
    rlx_chat_template_destroy(t);
}

int main(void) {
    t_require_fixture("templates");
    t_require_fixture("models");
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        t_require_fixture(CASES[i].source);
        check_one(&CASES[i], false);
        check_one(&CASES[i], true);
    }
    return t_summary("test_chat_template_render");
}
