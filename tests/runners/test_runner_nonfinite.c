/* Generation stops with an error naming the step when the model's logits are NaN or infinite,
 * instead of reporting token 0 (every comparison with NaN is false, so a plain argmax lands on 0).
 *
 * The model is built here: a 1-layer llama (n_embd 16, 2 heads of 8, vocab 4) whose attention and
 * FFN matrices are zero, so each layer adds nothing and the residual stream is the token's
 * embedding. The truth is arithmetic: token t's embedding is the unit vector e_t, which rms_norm
 * scales to 4 e_t, and output.weight's rows 2, 3 and 1 are 10 e_0, 10 e_2 and 10 e_3, so the only
 * non-zero logit (40) after token 0 is 2's, after 2 it is 3's, after 3 it is 1's: from prompt 0,
 * greedy (and sampling at 0.8, where the others weigh e^-50) goes 2, 3, 1. Token 1's embedding is
 * NaN, so every logit after it is NaN, three steps in, where greedy decodes ahead in a chain. Each
 * sampling path must fail at the step that reads them, having reported a prefix of 2, 3, 1: the
 * host sampler (temperature > 0, or the first token), the backend's ARGMAX (plain greedy decoding
 * ahead) and the host argmax of the no-cache path, on $RLX_TEST_BACKEND (default cpu; vulkan checks
 * its ARGMAX, fused into the LM head's matvec, and the chained decode). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gguf_builder.h"
#include "loader/core/dtype.h"
#include "loader/format/gguf.h"
#include "rlx/runner.h"
#include "test_util.h"

enum { EMBD = 16, FF = 32, VOCAB = 4 };

static const gb_f32_tensor tensors[] = {
    {"token_embd.weight", 2, {EMBD, VOCAB}},     {"output.weight", 2, {EMBD, VOCAB}},
    {"output_norm.weight", 1, {EMBD, 1}},        {"blk.0.attn_norm.weight", 1, {EMBD, 1}},
    {"blk.0.attn_q.weight", 2, {EMBD, EMBD}},    {"blk.0.attn_k.weight", 2, {EMBD, EMBD}},
    {"blk.0.attn_v.weight", 2, {EMBD, EMBD}},    {"blk.0.attn_output.weight", 2, {EMBD, EMBD}},
    {"blk.0.ffn_norm.weight", 1, {EMBD, 1}},     {"blk.0.ffn_gate.weight", 2, {EMBD, FF}},
    {"blk.0.ffn_up.weight", 2, {EMBD, FF}},      {"blk.0.ffn_down.weight", 2, {FF, EMBD}},
};
#define N_T (sizeof tensors / sizeof tensors[0])
/* what each tensor holds: 0 zeros, 1 ones, 2 the embedding table, 3 the LM head */
static const int fills[N_T] = {2, 3, 1, 1, 0, 0, 0, 0, 1, 0, 0, 0};

static float value_at(size_t i, uint64_t row, uint64_t col) {
    static const int head_hot[VOCAB] = {-1, 3, 0, 2}; /* row r of the LM head is 10 e_hot[r] */
    switch (fills[i]) {
    case 1: return 1.0f;
    case 2: return row == 1 ? NAN : col == row ? 1.0f : 0.0f;
    case 3: return (int)col == head_hot[row] ? 10.0f : 0.0f;
    default: return 0.0f;
    }
}

static const char *write_model(void) {
    gguf_builder b;
    gb_init(&b);
    gb_header(&b, 3, N_T, 8);
    gb_kv_str(&b, "general.architecture", "llama");
    gb_kv_u32(&b, "llama.block_count", 1);
    gb_kv_u32(&b, "llama.embedding_length", EMBD);
    gb_kv_u32(&b, "llama.feed_forward_length", FF);
    gb_kv_u32(&b, "llama.context_length", 64);
    gb_kv_u32(&b, "llama.attention.head_count", 2);
    gb_kv_u32(&b, "llama.vocab_size", VOCAB);
    gb_kv(&b, "llama.attention.layer_norm_rms_epsilon", RLX_GGUF_FLOAT32);
    gb_f32(&b, 1e-5f);
    gb_f32_infos(&b, tensors, N_T);
    gb_f32_data(&b, tensors, N_T, value_at);
    const char *path = t_tmp_path("nan-embedding.gguf");
    t_write_file(path, b.buf, b.len);
    gb_free(&b);
    return path;
}

typedef struct path_case {
    const char *what;
    bool no_kv_cache;
    float temperature;
    int32_t prompt; /* 0: finite logits first; 1: NaN from the prefill on */
    int32_t min_out; /* tokens of 2, 3, 1 reported before the failure, at least (a chain drops its own) */
    const char *needle;
} path_case;

static const char *backend = "cpu";

static void run_case(const char *model, const path_case *pc) {
    rlx_runner_opts o = rlx_runner_opts_default();
    o.backend = backend;
    o.n_threads = 1;
    o.n_ctx = 16;
    o.no_kv_cache = pc->no_kv_cache;
    rlx_runner *r = NULL;
    if (!T_OK(rlx_runner_open(model, &o, &r))) return;
    rlx_sample_opts so = rlx_sample_opts_greedy();
    so.temperature = pc->temperature;
    int32_t out[6] = {-7, -7, -7, -7, -7, -7}, n_out = 0;
    rlx_status s = rlx_runner_generate(r, &pc->prompt, 1, 6, &so, NULL, NULL, out, &n_out);
    printf("  %s (%s): %s\n", pc->what, backend, s ? rlx_status_message(s) : "(no error)");
    T_ERR(s, RLX_ERR_BAD_FILE, pc->needle);
    static const int32_t path[3] = {2, 3, 1};
    bool prefix = n_out >= pc->min_out && n_out <= (pc->min_out ? 3 : 0);
    for (int32_t i = 0; prefix && i < n_out; i++) prefix = out[i] == path[i];
    T_CHECK(prefix, "%s: %d tokens reported (%d %d %d), expected %d to %d of 2 3 1", pc->what, (int)n_out,
            (int)out[0], (int)out[1], (int)out[2], (int)pc->min_out, pc->min_out ? 3 : 0);
    rlx_runner_close(r);
}

int main(void) {
    const char *env = getenv("RLX_TEST_BACKEND");
    if (env && *env) backend = env;
    t_tmp_dir("rlx-nonfinite");
    const char *model = write_model();
    static const path_case cases[] = {
        {"prefill logits NaN, host sampler (greedy)", false, 0.0f, 1, 0, "generating token 0"},
        {"prefill logits NaN, host sampler (t 0.8)", false, 0.8f, 1, 0, "the logit of id 0 is nan"},
        /* token 1 sits at position 3; decoding ahead reports none of a batch that fails */
        {"decode logits NaN, backend ARGMAX (greedy ahead)", false, 0.0f, 0, 2, "decode at position 3: the logits hold NaN"},
        {"decode logits NaN, host sampler (t 0.8)", false, 0.8f, 0, 3, "generating token 3"},
        {"decode logits NaN, no-cache host argmax", true, 0.0f, 0, 2, "decode at position 3: the logits hold NaN"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run_case(model, &cases[i]);
    unlink(model);
    t_tmp_dir_remove();
    return t_summary("test_runner_nonfinite");
}
