/* Float hyperparameters the graph divides by, raises to a power or scales with must be finite and
 * positive (and, for the RMS epsilon and the softmax scale, below a ceiling), from GGUF metadata
 * and from config.json alike. The property checked: NaN, +-inf, 0, a negative value and a scale of
 * 3e38 (which turns every q.k product into inf, so every logit into NaN) are refused with an error
 * naming the field, never replaced by a default; the values real models use still load. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "gguf_builder.h"
#include "loader/format/gguf.h"
#include "loader/format/model_config.h"
#include "test_util.h"

static const float bad_values[] = {NAN, INFINITY, -INFINITY, 0.0f, -1.0f, 3e38f};
#define N_BAD (sizeof bad_values / sizeof bad_values[0])

/* A qwen3 GGUF header (metadata only) with float key `<arch>.<suffix>` set to v (or the file's
 * normal keys only when suffix is NULL). */
static rlx_status gguf_config(const char *arch, const char *suffix, float v, rlx_model_config *c) {
    static const char *const u32_keys[] = {"block_count", "embedding_length", "feed_forward_length", "context_length",
                                           "attention.head_count", "attention.head_count_kv", "vocab_size"};
    static const uint32_t u32_vals[] = {2, 256, 512, 4096, 8, 2, 16};
    bool is_eps = suffix && !strcmp(suffix, "attention.layer_norm_rms_epsilon");
    gguf_builder b;
    gb_init(&b);
    gb_header(&b, 3, 0, 1 + 7 + 1 + (suffix && !is_eps));
    gb_kv_str(&b, "general.architecture", arch);
    char key[96];
    for (int i = 0; i < 7; i++) {
        snprintf(key, sizeof key, "%s.%s", arch, u32_keys[i]);
        gb_kv_u32(&b, key, u32_vals[i]);
    }
    snprintf(key, sizeof key, "%s.attention.layer_norm_rms_epsilon", arch);
    gb_kv(&b, key, RLX_GGUF_FLOAT32);
    gb_f32(&b, is_eps ? v : 1e-6f);
    if (suffix && !is_eps) {
        snprintf(key, sizeof key, "%s.%s", arch, suffix);
        gb_kv(&b, key, RLX_GGUF_FLOAT32);
        gb_f32(&b, v);
    }
    rlx_gguf *g = NULL;
    rlx_status s = rlx_gguf_open_memory(b.buf, b.len, &g);
    if (!s) s = rlx_model_config_from_gguf(g, c);
    rlx_gguf_close(g);
    gb_free(&b);
    return s;
}

/* A llama3 GGUF carries rope_freqs.weight and maybe the factor it was made from, never the
 * low/high frequency factors (the converter bakes them in): such a file must open. */
static void gguf_llama3_case(void) {
    gguf_builder b;
    gb_init(&b);
    gb_header(&b, 3, 1, 9);
    gb_kv_str(&b, "general.architecture", "llama");
    static const char *const keys[] = {"llama.block_count", "llama.embedding_length", "llama.feed_forward_length",
                                       "llama.context_length", "llama.attention.head_count", "llama.vocab_size"};
    static const uint32_t vals[] = {1, 64, 128, 64, 2, 16};
    for (int i = 0; i < 6; i++) gb_kv_u32(&b, keys[i], vals[i]);
    gb_kv(&b, "llama.attention.layer_norm_rms_epsilon", RLX_GGUF_FLOAT32);
    gb_f32(&b, 1e-5f);
    gb_kv(&b, "llama.rope.scaling.factor", RLX_GGUF_FLOAT32);
    gb_f32(&b, 32.0f);
    gb_tensor(&b, "rope_freqs.weight", 1, (const uint64_t[]){16}, 0, 0);
    gb_pad(&b, 32);
    gb_zeros(&b, 64);
    rlx_gguf *g = NULL;
    rlx_model_config c;
    if (T_OK(rlx_gguf_open_memory(b.buf, b.len, &g)) && T_OK(rlx_model_config_from_gguf(g, &c)))
        T_CHECK(c.has_rope_freqs && c.rope_scale_factor == 32.0f, "llama3 GGUF: rope_freqs %d factor %g",
                c.has_rope_freqs, (double)c.rope_scale_factor);
    rlx_gguf_close(g);
    gb_free(&b);
}

static void gguf_cases(void) {
    static const struct {
        const char *arch, *suffix, *field;
    } keys[] = {
        {"qwen3", "attention.layer_norm_rms_epsilon", "RMS norm epsilon"},
        {"qwen3", "rope.freq_base", "RoPE base"},
        {"gemma3", "rope.freq_base_swa", "local RoPE base"},
        {"qwen3", "attention.scale", "attention scale"},
        {"llama", "attention.scale", "attention scale"},
    };
    rlx_model_config c;
    int refused = 0;
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
        for (size_t i = 0; i < N_BAD; i++) {
            /* 3e38 is a plausible (huge) RoPE base: frequencies only shrink */
            if (bad_values[i] == 3e38f && strstr(keys[k].suffix, "freq_base")) continue;
            refused += T_ERR(gguf_config(keys[k].arch, keys[k].suffix, bad_values[i], &c), RLX_ERR_BAD_FILE,
                             keys[k].field);
        }
    }
    printf("  GGUF: %d bad float values refused\n", refused);
    if (T_OK(gguf_config("qwen3", "attention.scale", 0.08838835f, &c)))
        T_CHECK(c.attn_scale == 0.08838835f, "an explicit attention.scale is kept: %g", (double)c.attn_scale);
    if (T_OK(gguf_config("qwen3", "rope.freq_base", 5e6f, &c)))
        T_CHECK(c.rope_base == 5e6f, "rope base kept: %g", (double)c.rope_base);
}

static rlx_status from_json(const char *json, rlx_model_config *c) {
    return rlx_model_config_from_json(json, strlen(json), "test config.json", c);
}

/* A gemma3_text or llama config with `extra` keys spliced in (they win over the defaults). */
static rlx_status hf_config(const char *model_type, const char *extra, rlx_model_config *c) {
    char json[1024];
    snprintf(json, sizeof json,
             "{\"model_type\": \"%s\", \"num_hidden_layers\": 2, \"hidden_size\": 256, \"intermediate_size\": 512,"
             " \"vocab_size\": 16, \"num_attention_heads\": 4, \"num_key_value_heads\": 2,"
             " \"max_position_embeddings\": 64%s%s}",
             model_type, extra[0] ? ", " : "", extra);
    return from_json(json, c);
}

static void hf_cases(void) {
    static const struct {
        const char *model_type, *extra, *field;
    } cases[] = {
        {"llama", "\"rms_norm_eps\": 0", "RMS norm epsilon"},
        {"llama", "\"rms_norm_eps\": -1e-6", "RMS norm epsilon"},
        {"llama", "\"rms_norm_eps\": 1e39", "RMS norm epsilon"},
        {"llama", "\"rms_norm_eps\": 2.0", "RMS norm epsilon"},
        {"llama", "\"rms_norm_eps\": 1e-5, \"rope_theta\": 0", "RoPE base"},
        {"llama", "\"rms_norm_eps\": 1e-5, \"rope_theta\": -10000", "RoPE base"},
        {"llama", "\"rms_norm_eps\": 1e-5, \"rope_theta\": 1e39", "RoPE base"},
        {"llama", "\"rms_norm_eps\": 1e-5, \"rope_parameters\": {\"rope_theta\": 1e300}", "RoPE base"},
        {"llama", "\"rms_norm_eps\": 1e-5, \"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": 1e39}",
         "llama3 RoPE factor"},
        {"llama", "\"rms_norm_eps\": 1e-5, \"rope_scaling\": {\"rope_type\": \"llama3\", \"high_freq_factor\": 1e39}",
         "llama3 RoPE high_freq_factor"},
        {"llama", "\"rms_norm_eps\": 1e-5, \"rope_scaling\": {\"rope_type\": \"llama3\", \"low_freq_factor\": 0}",
         "llama3 RoPE low_freq_factor"},
        {"gemma3_text", "\"rope_local_base_freq\": 0", "local RoPE base"},
        {"gemma3_text", "\"rope_local_base_freq\": 1e39", "local RoPE base"},
        {"gemma3_text", "\"query_pre_attn_scalar\": 1e39", "attention scale"},
        {"gemma3_text", "\"query_pre_attn_scalar\": 1e-38", "attention scale"},
        {"gemma3_text", "\"query_pre_attn_scalar\": 0", "query_pre_attn_scalar"},
        {"gemma3_text", "\"query_pre_attn_scalar\": -256", "query_pre_attn_scalar"},
    };
    rlx_model_config c;
    int refused = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        rlx_status s = hf_config(cases[i].model_type, cases[i].extra, &c);
        if (s && i == 0) printf("  e.g. %s\n", rlx_status_message(s));
        if (!s) printf("  accepted: %s {%s}\n", cases[i].model_type, cases[i].extra);
        refused += T_ERR(s, RLX_ERR_BAD_FILE, cases[i].field);
    }
    printf("  config.json: %d bad float values refused\n", refused);
    if (T_OK(hf_config("gemma3_text", "\"query_pre_attn_scalar\": 144", &c)))
        T_CHECK(c.attn_scale == 1.0f / 12.0f, "gemma3 scale 1/sqrt(144): %.9g", (double)c.attn_scale);
}

int main(void) {
    gguf_llama3_case();
    gguf_cases();
    hf_cases();
    return t_summary("test_model_floats");
}
