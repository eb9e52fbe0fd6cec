/* The Jinja subset, case by case, and the chat-template API around it.
 *
 * Language cases: tests/data/templates/expected/jinja_semantics.json, each a template and the text
 * Jinja's documented semantics give for it under transformers' settings (trim_blocks,
 * lstrip_blocks, loop controls, tojson as json.dumps); every value was checked against jinja2
 * 3.1.6, the reference implementation. The API checks take their truth from the fixture files
 * (special tokens as tokenizer_config.json and the GGUF token lists hold them) and from Python's
 * strftime for the fixed dates. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rlx/chat_template.h"
#include "test_util.h"

static char *render_str(const char *tpl, const rlx_chat_message *msgs, size_t n, const rlx_chat_render_opts *o) {
    rlx_chat_template *t = NULL;
    char *out = NULL;
    if (T_OK(rlx_chat_template_parse(tpl, strlen(tpl), "unit", &t))) T_OK(rlx_chat_template_render(t, msgs, n, o, &out, NULL));
    rlx_chat_template_destroy(t);
    return out;
}

static void expect_render(const char *tpl, const rlx_chat_message *msgs, size_t n, const rlx_chat_render_opts *o,
                          const char *want) {
    char *got = render_str(tpl, msgs, n, o);
    T_CHECK(got && !strcmp(got, want), "template %s\n  got:  [%s]\n  want: [%s]", tpl, got ? got : "(error)", want);
    free(got);
}

static void semantics_cases(void) {
    json_t *root = t_load_json(t_source_path("tests/data/templates/expected/jinja_semantics.json"));
    char *vars = json_dumps(json_object_get(root, "vars"), JSON_COMPACT);
    rlx_chat_render_opts o = {.extra_vars_json = vars};
    json_t *cases = json_object_get(root, "cases");
    size_t i, failed_before = (size_t)t_failures;
    json_t *c;
    json_array_foreach(cases, i, c) {
        expect_render(json_string_value(json_object_get(c, "template")), NULL, 0, &o,
                      json_string_value(json_object_get(c, "expected")));
    }
    printf("jinja semantics: %zu cases compared with jinja_semantics.json, %zu differ\n", json_array_size(cases),
           (size_t)t_failures - failed_before);
    free(vars);
    json_decref(root);
}

/* Messages reach templates as dicts: content NULL is none, extra_json adds fields. */
static void message_fields(void) {
    rlx_chat_message msgs[] = {
        {"user", "hi", NULL},
        {"assistant", NULL, "{\"tool_calls\": [{\"function\": {\"name\": \"f\", \"arguments\": {\"x\": 1}}}]}"},
        {"tool", "42", "{\"name\": \"f\", \"role\": \"ignored\"}"},
        {"user", NULL, "{\"content\": [{\"type\": \"text\", \"text\": \"part\"}]}"},
    };
    expect_render("{% for m in messages %}{{ m.role }}:{{ m.content }}:{{ m.tool_calls[0].function.name if m.tool_calls "
                  "else '-' }}:{{ m.get('name', '-') }};{% endfor %}",
                  msgs, 4, NULL, "user:hi:-:-;assistant:None:f:-;tool:42:-:f;user:[{'type': 'text', 'text': 'part'}]:-:-;");
    expect_render("{{ messages[1].tool_calls[0].function.arguments | tojson }}", msgs, 4, NULL, "{\"x\": 1}");
    /* add_generation_prompt, bos/eos and tools (none unless given) */
    rlx_chat_render_opts o = {.add_generation_prompt = true, .bos_token = "<s>", .eos_token = "</s>"};
    expect_render("{{ bos_token }}{{ add_generation_prompt }}{{ eos_token }}{{ tools is none }}{{ enable_thinking is defined }}",
                  NULL, 0, &o, "<s>True</s>TrueFalse");
    o.extra_vars_json = "{\"tools\": [{\"name\": \"t\"}], \"enable_thinking\": false}";
    expect_render("{{ tools[0].name }}{{ enable_thinking is false }}", NULL, 0, &o, "tTrue");
}

/* strftime_now at a fixed time, read as UTC. Expected: Python's
 * datetime.fromtimestamp(1727226123, timezone.utc).strftime(...). */
static void fixed_time(void) {
    rlx_chat_render_opts o = {.fixed_time = true, .now_unix = 1727226123};
    expect_render("{{ strftime_now('%Y-%m-%d %H:%M:%S|%a %A %b %B|%j %p %I %y|%e|%%|%d %b %Y') }}", NULL, 0, &o,
                  "2024-09-25 01:02:03|Wed Wednesday Sep September|269 AM 01 24|25|%|25 Sep 2024");
    o.now_unix += 13 * 3600;
    expect_render("{{ strftime_now('%I %p') }}", NULL, 0, &o, "02 PM");
}

/* The special tokens a source names become the render defaults. Truth: the fixtures'
 * tokenizer_config.json, and tokenizer.ggml.tokens[bos/eos id] in the GGUFs. */
static void default_tokens(void) {
    static const struct {
        const char *source, *bos, *eos;
    } cases[] = {
        {"models/llama32/llama32-F16.gguf", "<|begin_of_text|>", "<|eot_id|>"},
        {"models/llama32/hf", "<|begin_of_text|>", "<|eot_id|>"},
        {"models/gemma3/gemma3-F16.gguf", "<s>", "</s>"},
        {"models/gemma3/hf", "<bos>", "<eos>"},
        {"models/qwen3/qwen3-F16.gguf", "", "<|im_end|>"},
        {"models/qwen3/hf", "", "<|im_end|>"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        t_require_fixture(cases[i].source);
        rlx_chat_template *t;
        if (!T_OK(rlx_chat_template_open(t_fixture(cases[i].source), &t))) continue;
        T_CHECK(!strcmp(rlx_chat_template_bos(t), cases[i].bos) && !strcmp(rlx_chat_template_eos(t), cases[i].eos),
                "%s: bos/eos '%s'/'%s', want '%s'/'%s'", cases[i].source, rlx_chat_template_bos(t),
                rlx_chat_template_eos(t), cases[i].bos, cases[i].eos);
        /* rendering without bos_token uses the source's */
        rlx_chat_message m = {"user", "x", NULL};
        char *out = NULL;
        if (T_OK(rlx_chat_template_render(t, &m, 1, NULL, &out, NULL)) && *cases[i].bos)
            T_CHECK(!strncmp(out, cases[i].bos, strlen(cases[i].bos)), "%s: rendering starts '%.20s', want the BOS '%s'",
                    cases[i].source, out, cases[i].bos);
        free(out);
        rlx_chat_template_destroy(t);
    }
    printf("default bos/eos: %zu sources checked\n", sizeof cases / sizeof cases[0]);
}

/* --chat-template FILE: a plain file is the template text; tokenizer_config.json works directly. */
static void sources(void) {
    t_require_fixture("templates/google-gemma-2-2b-it.jinja");
    rlx_chat_template *t;
    if (T_OK(rlx_chat_template_open(t_fixture("templates/google-gemma-2-2b-it.jinja"), &t))) {
        T_CHECK(strstr(rlx_chat_template_source(t), "<start_of_turn>") != NULL, "source text not kept");
        T_CHECK(strstr(rlx_chat_template_origin(t), "gemma-2") != NULL, "origin '%s'", rlx_chat_template_origin(t));
        rlx_chat_template_destroy(t);
    }
    /* Llama 3.1 takes its date from a date_string variable, which extra variables can set */
    t_require_fixture("templates/meta-llama-Llama-3.1-8B-Instruct.jinja");
    if (T_OK(rlx_chat_template_open(t_fixture("templates/meta-llama-Llama-3.1-8B-Instruct.jinja"), &t))) {
        rlx_chat_message m = {"user", "hi", NULL};
        rlx_chat_render_opts o = {.extra_vars_json = "{\"date_string\": \"01 Jan 2025\"}"};
        char *out = NULL;
        if (T_OK(rlx_chat_template_render(t, &m, 1, &o, &out, NULL)))
            T_CHECK(strstr(out, "Cutting Knowledge Date: December 2023\nToday Date: 01 Jan 2025\n\n") != NULL,
                    "llama 3.1 date_string: %s", out);
        free(out);
        rlx_chat_template_destroy(t);
    }
    t_require_fixture("tokenizers/hf-qwen2/tokenizer_config.json");
    if (T_OK(rlx_chat_template_open(t_fixture("tokenizers/hf-qwen2/tokenizer_config.json"), &t))) {
        rlx_chat_message m = {"user", "hi", NULL};
        rlx_chat_render_opts o = {.add_generation_prompt = true};
        char *out = NULL;
        /* Qwen2's ChatML: a user turn then the assistant header */
        if (T_OK(rlx_chat_template_render(t, &m, 1, &o, &out, NULL)))
            T_CHECK(strstr(out, "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n") != NULL, "qwen2 render: %s", out);
        free(out);
        rlx_chat_template_destroy(t);
    }
}

int main(void) {
    t_require_fixture("models");
    t_require_fixture("templates");
    t_require_fixture("tokenizers/hf-qwen2");
    semantics_cases();
    message_fields();
    fixed_time();
    default_tokens();
    sources();
    return t_summary("test_chat_template_unit");
}
