/* rlx synth --like NAME [--type T] -o FILE.gguf: a GGUF with the tensor names, shapes, types and
 * metadata llama.cpp's converter (F32/F16/BF16/Q8_0) or converter + llama-quantize (the other
 * types) writes for a real model, filled with seeded random weights: normal with std 0.02, norm
 * weights 1, llama3's rope_freqs computed as the converter does. Rows are generated and quantized
 * in parallel and streamed to disk (loader/quant/quantize_model.c), so an 8B model never sits in memory. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <libgen.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "cli_util.h"
#include "commands.h"
#include "loader/core/regular_file.h"
#include "loader/format/gguf.h"
#include "loader/quant/gguf_writer.h"
#include "loader/quant/quantize.h"
#include "quant_progress.h"
#include "synth_shapes.h"

#define WEIGHT_STD 0.02f
#define TOKEN_TYPE_UNUSED 5 /* gguf-py TokenType.UNUSED: the converter's type for [PAD<n>] tokens */
#define QUANTIZATION_VERSION 2u

static void usage(FILE *f) {
    fprintf(f, "usage: rlx synth --like NAME -o FILE.gguf [options]\n"
               "\n"
               "Writes a GGUF shaped exactly like llama.cpp's conversion of a real model (its converter for\n"
               "F32/F16/BF16/Q8_0, then llama-quantize for the other types), with random weights: normal,\n"
               "std 0.02, norm weights 1. The vocabulary (tokens, types, merges) comes from the fixtures'\n"
               "tokenizers/ggml-vocab-qwen2.gguf (qwen3, qwen3.5) or ggml-vocab-llama-bpe.gguf (llama), padded\n"
               "with [PAD<n>] tokens or cut to the model's vocabulary size. The qwen3.5 shapes are llama.cpp's\n"
               "conversion with --no-mtp (no multi-token-prediction block); write the 35B-A3B one straight\n"
               "in a quantized type (its F16 is 70 GB): tensors are generated and quantized one by one.\n"
               "\n"
               "NAME:");
    size_t n;
    const rlx_synth_shape *s = rlx_synth_shapes(&n);
    for (size_t i = 0; i < n; i++) fprintf(f, "%s %s", i ? "," : "", s[i].like);
    fprintf(f, "\n\n"
               "options:\n"
               "  --type T             F16 (default), F32, BF16, Q8_0, Q4_0, Q4_K_M, Q5_K_M, Q6_K, ... (as rlx quantize)\n"
               "  -o, --output FILE    the GGUF to write (written as FILE.tmp, renamed when complete)\n"
               "  --seed S             random seed (default 0); same seed, same weights for every --type\n"
               "  -t, --threads N      worker threads (default 0: every online core)\n"
               "  --dry-run            print the tensors (name, type, shape, bytes) the file would hold, in\n"
               "                       file order, and write nothing\n"
               "  --vocab FILE         vocabulary GGUF (default: the fixture for the family, found through\n"
               "                       $RLX_FIXTURES or ../shared/fixtures)\n"
               "  --chat-template FILE tokenizer.chat_template (default: the fixture template for qwen3 and\n"
               "                       qwen3.5)\n"
               "  --layers N, --hidden N, --ffn N, --heads N, --kv-heads N, --head-dim N, --vocab-size N,\n"
               "  -c, --ctx N          override the config (small variants for tests)\n"
               "  --ssm-k-heads N, --ssm-v-heads N, --ssm-dim N (key and value head size)\n"
               "                       Qwen3.5's linear-attention heads\n"
               "  --experts N, --experts-used N, --expert-ffn N, --shexp-ffn N\n"
               "                       Qwen3.5 MoE's experts (MoE shapes only)\n"
               "  -h, --help           this text\n"
               "\n"
               "exit status: 0 on success, 1 when reading or writing fails, 2 on bad arguments.\n");
}

typedef struct synth_args {
    const char *like, *type, *output, *vocab, *chat_template; /* borrowed from argv */
    uint64_t seed;
    int threads;
    rlx_synth_shape shape; /* the --like entry with overrides applied */
    bool overridden;
    bool help;
    bool dry_run;
} synth_args;

/* ---- arguments ---- */

enum {
    OPT_LIKE = RLX_OPT_COMMAND,
    OPT_TYPE,
    OPT_VOCAB,
    OPT_CHAT_TEMPLATE,
    OPT_SEED,
    OPT_DRY_RUN,
    OPT_LAYERS, /* the config overrides, in the order of override_offsets */
    OPT_HIDDEN,
    OPT_FFN,
    OPT_HEADS,
    OPT_KV_HEADS,
    OPT_HEAD_DIM,
    OPT_VOCAB_SIZE,
    OPT_CTX,
    OPT_EXPERTS,
    OPT_EXPERTS_USED,
    OPT_EXPERT_FFN,
    OPT_SHEXP_FFN,
    OPT_SSM_K_HEADS,
    OPT_SSM_V_HEADS,
    OPT_SSM_K_DIM,
    OPT_SSM_DIM, /* sets both head sizes: not in override_offsets */
};

static const struct option options[] = {
    {"like", required_argument, NULL, OPT_LIKE},
    {"type", required_argument, NULL, OPT_TYPE},
    {"output", required_argument, NULL, 'o'},
    {"vocab", required_argument, NULL, OPT_VOCAB},
    {"chat-template", required_argument, NULL, OPT_CHAT_TEMPLATE},
    {"seed", required_argument, NULL, OPT_SEED},
    {"dry-run", no_argument, NULL, OPT_DRY_RUN},
    {"threads", required_argument, NULL, 't'},
    {"layers", required_argument, NULL, OPT_LAYERS},
    {"hidden", required_argument, NULL, OPT_HIDDEN},
    {"ffn", required_argument, NULL, OPT_FFN},
    {"heads", required_argument, NULL, OPT_HEADS},
    {"kv-heads", required_argument, NULL, OPT_KV_HEADS},
    {"head-dim", required_argument, NULL, OPT_HEAD_DIM},
    {"vocab-size", required_argument, NULL, OPT_VOCAB_SIZE},
    {"ctx", required_argument, NULL, OPT_CTX},
    {"experts", required_argument, NULL, OPT_EXPERTS},
    {"experts-used", required_argument, NULL, OPT_EXPERTS_USED},
    {"expert-ffn", required_argument, NULL, OPT_EXPERT_FFN},
    {"shexp-ffn", required_argument, NULL, OPT_SHEXP_FFN},
    {"ssm-k-heads", required_argument, NULL, OPT_SSM_K_HEADS},
    {"ssm-v-heads", required_argument, NULL, OPT_SSM_V_HEADS},
    {"ssm-dim", required_argument, NULL, OPT_SSM_DIM},
    {"help", no_argument, NULL, 'h'},
    {0},
};

/* Where each override (OPT_LAYERS ..) goes: a uint32_t field of rlx_synth_shape. */
static const size_t override_offsets[] = {
    offsetof(rlx_synth_shape, n_layer), offsetof(rlx_synth_shape, n_embd),    offsetof(rlx_synth_shape, n_ff),
    offsetof(rlx_synth_shape, n_head),  offsetof(rlx_synth_shape, n_head_kv), offsetof(rlx_synth_shape, head_dim),
    offsetof(rlx_synth_shape, n_vocab),     offsetof(rlx_synth_shape, n_ctx),       offsetof(rlx_synth_shape, n_expert),
    offsetof(rlx_synth_shape, n_expert_used), offsetof(rlx_synth_shape, n_ff_exp),  offsetof(rlx_synth_shape, n_ff_shexp),
    offsetof(rlx_synth_shape, ssm_k_heads), offsetof(rlx_synth_shape, ssm_v_heads), offsetof(rlx_synth_shape, ssm_k_dim),
};
#define N_OVERRIDES (sizeof override_offsets / sizeof override_offsets[0])

/* The arguments and the overrides given, applied once --like is known. */
typedef struct synth_parse {
    synth_args *a;
    uint64_t values[N_OVERRIDES];
    bool set[N_OVERRIDES];
    uint32_t ssm_v_dim; /* --ssm-dim's value head size; 0 = not given */
} synth_parse;

static rlx_status apply(const rlx_cli_parser *p, int opt, void *args) {
    synth_parse *sp = args;
    synth_args *a = sp->a;
    int64_t n;
    if (opt == 'c') opt = OPT_CTX; /* -c: llama.cpp's spelling of --ctx, as in the model commands */
    switch (opt) {
    case OPT_LIKE:
        a->like = p->value;
        return NULL;
    case OPT_TYPE:
        a->type = p->value;
        return NULL;
    case 'o':
        a->output = p->value;
        return NULL;
    case OPT_VOCAB:
        a->vocab = p->value;
        return NULL;
    case OPT_CHAT_TEMPLATE:
        a->chat_template = p->value;
        return NULL;
    case OPT_SEED:
        return rlx_cli_parse_u64(p->name, p->value, &a->seed);
    case 't':
        return rlx_cli_parse_threads(p->name, p->value, &a->threads);
    case 'h':
        a->help = true;
        return NULL;
    case OPT_DRY_RUN:
        a->dry_run = true;
        return NULL;
    }
    if (opt < OPT_LAYERS || opt > OPT_SSM_DIM) return rlx_cli_unknown(p); /* a positional argument */
    RLX_TRY(rlx_cli_parse_i64(p->name, p->value, 1, INT32_MAX, &n));
    if (opt == OPT_SSM_DIM) { /* the key head size here, the value head size in parse() */
        sp->ssm_v_dim = (uint32_t)n;
        opt = OPT_SSM_K_DIM;
    }
    sp->values[opt - OPT_LAYERS] = (uint64_t)n;
    sp->set[opt - OPT_LAYERS] = true;
    return NULL;
}

/* Qwen3.5: the rotated dims (head_dim * partial_rotary_factor) are a whole even number; an MoE
 * shape has its experts, and at least as many as it routes each token to. */
static rlx_status check_hybrid(const rlx_synth_shape *s) {
    float rot = (float)s->head_dim * s->partial_rotary;
    if (rot != (float)(uint32_t)rot || (uint32_t)rot % 2 || rot < 2)
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "--head-dim %u: %g of it rotated is not an even number of dims",
                          s->head_dim, (double)s->partial_rotary);
    if (s->n_expert && s->n_expert < s->n_expert_used)
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "--experts %u is below the %u experts each token uses", s->n_expert,
                          s->n_expert_used);
    if (s->ssm_v_heads % s->ssm_k_heads) /* each key head serves a whole number of value heads */
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "--ssm-v-heads %u is not a multiple of --ssm-k-heads %u",
                          s->ssm_v_heads, s->ssm_k_heads);
    return NULL;
}

static rlx_status check_shape(const rlx_synth_shape *s) {
    if (s->n_head % s->n_head_kv)
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "--heads %u is not a multiple of --kv-heads %u", s->n_head,
                          s->n_head_kv);
    if (s->head_dim % 2) return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "--head-dim %u is odd (RoPE rotates pairs)", s->head_dim);
    if (s->n_vocab < 4) return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "--vocab-size %u is below 4", s->n_vocab);
    return rlx_synth_is_hybrid(s) ? check_hybrid(s) : NULL;
}

static rlx_status parse(int argc, char **argv, synth_args *a) {
    synth_parse sp = {.a = a};
    a->type = "F16";
    rlx_cli_parser p = {.argc = argc, .argv = argv, .shorts = "o:t:c:h", .longs = options, .long_names = "ot"};
    RLX_TRY(rlx_cli_parse(&p, apply, &sp));
    if (a->help) return NULL;
    if (!a->like) return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "missing --like NAME");
    const rlx_synth_shape *s = rlx_synth_shape_find(a->like);
    if (!s) {
        size_t n;
        const rlx_synth_shape *all = rlx_synth_shapes(&n);
        char list[256] = "";
        for (size_t i = 0, len = 0; i < n && len < sizeof list; i++)
            len += (size_t)snprintf(list + len, sizeof list - len, "%s%s", i ? ", " : "", all[i].like);
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "unknown --like '%s' (known: %s)", a->like, list);
    }
    if (!a->output && !a->dry_run) return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "missing -o FILE.gguf");
    if (!rlx_quant_recipe_find(a->type))
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "unknown --type '%s' (see rlx quantize --help)", a->type);
    a->shape = *s;
    for (int o = OPT_EXPERTS; o <= OPT_SHEXP_FFN; o++)
        if (!s->n_expert && sp.set[o - OPT_LAYERS])
            return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "--experts, --experts-used, --expert-ffn and --shexp-ffn apply to "
                              "MoE shapes only ('%s' is dense)", s->like);
    for (int o = OPT_SSM_K_HEADS; o <= OPT_SSM_K_DIM; o++)
        if (!rlx_synth_is_hybrid(s) && sp.set[o - OPT_LAYERS])
            return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "--ssm-k-heads, --ssm-v-heads and --ssm-dim apply to the "
                              "Qwen3.5 shapes only ('%s' has no linear attention)", s->like);
    for (size_t k = 0; k < N_OVERRIDES; k++) {
        if (!sp.set[k]) continue;
        memcpy((char *)&a->shape + override_offsets[k], &(uint32_t){(uint32_t)sp.values[k]}, sizeof(uint32_t));
        a->overridden = true;
    }
    if (sp.ssm_v_dim) a->shape.ssm_v_dim = sp.ssm_v_dim;
    return check_shape(&a->shape);
}

/* ---- fixture files ---- */

/* The first of $RLX_FIXTURES, the source tree's ../shared/fixtures and .fixtures, and the working
 * directory's ../shared/fixtures holding rel. */
static rlx_status find_fixture(const char *rel, char *out, size_t cap) {
    const char *env = getenv("RLX_FIXTURES");
    const char *roots[] = {env, RLX_SOURCE_DIR "/../shared/fixtures", RLX_SOURCE_DIR "/.fixtures", "../shared/fixtures"};
    for (size_t i = 0; i < sizeof roots / sizeof roots[0]; i++) {
        if (!roots[i] || !*roots[i]) continue;
        snprintf(out, cap, "%s/%s", roots[i], rel);
        if (access(out, R_OK) == 0) return NULL;
    }
    return rlx_errorf(RLX_ERR_NOT_FOUND,
                      "'%s' not found under $RLX_FIXTURES (%s), %s/../shared/fixtures, %s/.fixtures or "
                      "../shared/fixtures; set RLX_FIXTURES or pass --vocab",
                      rel, env ? env : "unset", RLX_SOURCE_DIR, RLX_SOURCE_DIR);
}

static rlx_status read_text(const char *path, char **out) {
    RLX_TRY(rlx_file_refuse_special(path)); /* a FIFO would block the read below */
    FILE *f = fopen(path, "rb");
    if (!f) return rlx_errorf(RLX_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
    size_t len = 0, cap = 4096;
    char *buf = malloc(cap);
    while (buf) {
        len += fread(buf + len, 1, cap - len - 1, f);
        if (len < cap - 1) break;
        char *grown = realloc(buf, cap * 2);
        if (!grown) {
            free(buf);
            buf = NULL;
        } else {
            buf = grown;
            cap *= 2;
        }
    }
    bool err = ferror(f);
    fclose(f);
    if (!buf || err) {
        free(buf);
        return rlx_errorf(buf ? RLX_ERR_IO : RLX_ERR_OUT_OF_MEMORY, "reading '%s' failed", path);
    }
    buf[len] = '\0';
    *out = buf;
    return NULL;
}

/* ---- vocabulary ---- */

typedef struct str_set {
    rlx_gguf_str *slots; /* owned array of strings borrowing their bytes (s NULL: empty); power-of-two size */
    size_t mask;
} str_set;

static uint64_t hash_bytes(const char *s, uint64_t len) {
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (uint64_t i = 0; i < len; i++) h = (h ^ (uint8_t)s[i]) * 1099511628211ull;
    return h;
}

static bool set_has(const str_set *set, const char *s, uint64_t len) {
    for (size_t i = hash_bytes(s, len) & set->mask;; i = (i + 1) & set->mask) {
        const rlx_gguf_str *e = &set->slots[i];
        if (!e->s) return false;
        if (e->len == len && !memcmp(e->s, s, len)) return true;
    }
}

static rlx_status set_build(str_set *set, const rlx_gguf_value *tokens, uint64_t n) {
    size_t size = 16;
    while (size < 2 * n) size *= 2;
    if (!(set->slots = calloc(size, sizeof *set->slots)))
        return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "synth: out of memory for a set of %" PRIu64 " tokens", n);
    set->mask = size - 1;
    for (uint64_t k = 0; k < n; k++) {
        rlx_gguf_str t = rlx_gguf_arr_str(tokens, k);
        size_t i = hash_bytes(t.s, t.len) & set->mask;
        while (set->slots[i].s) i = (i + 1) & set->mask;
        set->slots[i] = t;
    }
    return NULL;
}

/* A merge "left right" (split at the first space after the first byte, as llama.cpp's vocab loader
 * does) survives a cut vocabulary when left, right and their concatenation are all kept. */
static bool merge_kept(const str_set *set, const rlx_gguf_str *m, char *scratch) {
    const char *sp = m->len > 1 ? memchr(m->s + 1, ' ', m->len - 1) : NULL;
    if (!sp) return false;
    uint64_t left = (uint64_t)(sp - m->s), right = m->len - left - 1;
    memcpy(scratch, m->s, left);
    memcpy(scratch + left, sp + 1, right);
    return set_has(set, m->s, left) && set_has(set, sp + 1, right) && set_has(set, scratch, left + right);
}

typedef struct vocab_out {
    const char **strs; /* owned array; entries borrow from the vocab file or pads */
    uint64_t *lens;    /* owned */
    int32_t *types;    /* owned */
    char *pads;        /* owned: the "[PAD<n>]" texts */
    const char **merges; /* owned array of borrowed strings */
    uint64_t *merge_lens;
    uint64_t n_merges;
} vocab_out;

static void vocab_out_free(vocab_out *v) {
    free(v->strs);
    free(v->lens);
    free(v->types);
    free(v->pads);
    free(v->merges);
    free(v->merge_lens);
}

static rlx_status resize_tokens(const rlx_gguf_value *tokens, const rlx_gguf_value *types, uint64_t n, vocab_out *v) {
    uint64_t have = tokens->arr.n;
    v->strs = calloc(n, sizeof *v->strs);
    v->lens = calloc(n, sizeof *v->lens);
    v->types = calloc(n, sizeof *v->types);
    v->pads = n > have ? malloc((n - have) * 24) : NULL;
    if (!v->strs || !v->lens || !v->types || (n > have && !v->pads))
        return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "synth: out of memory for %" PRIu64 " tokens", n);
    for (uint64_t i = 0; i < n; i++) {
        if (i < have) {
            rlx_gguf_value t;
            rlx_gguf_arr_get(types, i, &t);
            rlx_gguf_str str = rlx_gguf_arr_str(tokens, i);
            v->strs[i] = str.s;
            v->lens[i] = str.len;
            v->types[i] = (int32_t)t.i64;
        } else {
            char *p = v->pads + (i - have) * 24;
            v->lens[i] = (uint64_t)snprintf(p, 24, "[PAD%" PRIu64 "]", i);
            v->strs[i] = p;
            v->types[i] = TOKEN_TYPE_UNUSED;
        }
    }
    return NULL;
}

static rlx_status filter_merges(const rlx_gguf_value *tokens, const rlx_gguf_value *merges, uint64_t n, vocab_out *v) {
    str_set set = {0};
    RLX_TRY(set_build(&set, tokens, n < tokens->arr.n ? n : tokens->arr.n));
    uint64_t longest = 0;
    for (uint64_t i = 0; i < merges->arr.n; i++)
        if (rlx_gguf_arr_str(merges, i).len > longest) longest = rlx_gguf_arr_str(merges, i).len;
    char *scratch = malloc(longest + 1);
    v->merges = calloc(merges->arr.n + 1, sizeof *v->merges);
    v->merge_lens = calloc(merges->arr.n + 1, sizeof *v->merge_lens);
    rlx_status s = !scratch || !v->merges || !v->merge_lens
                       ? rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "synth: out of memory for %" PRIu64 " merges", merges->arr.n)
                       : NULL;
    for (uint64_t i = 0; !s && i < merges->arr.n; i++) {
        rlx_gguf_str str = rlx_gguf_arr_str(merges, i), *m = &str;
        if (n >= tokens->arr.n || merge_kept(&set, m, scratch)) {
            v->merges[v->n_merges] = m->s;
            v->merge_lens[v->n_merges++] = m->len;
        }
    }
    free(scratch);
    free(set.slots);
    return s;
}

/* tokenizer.ggml.{model, pre, tokens, token_type, merges}, then the special ids the vocabulary
 * holds, add_bos_token and the chat template, in the converter's (SpecialVocab's) order. */
static rlx_status write_vocab(rlx_gguf_writer *w, const rlx_gguf *vg, const char *vocab_path, const rlx_synth_shape *s,
                              const char *chat_template) {
    const rlx_gguf_value *tokens = NULL, *types = NULL, *merges = NULL;
    const char *model = NULL, *pre = NULL;
    rlx_status err = NULL;
    if (!rlx_gguf_get_arr(vg, "tokenizer.ggml.tokens", RLX_GGUF_STRING, &tokens, &err) ||
        !rlx_gguf_get_arr(vg, "tokenizer.ggml.token_type", RLX_GGUF_INT32, &types, &err) ||
        !rlx_gguf_get_arr(vg, "tokenizer.ggml.merges", RLX_GGUF_STRING, &merges, &err) ||
        !rlx_gguf_get_str(vg, "tokenizer.ggml.model", &model, &err) ||
        !rlx_gguf_get_str(vg, "tokenizer.ggml.pre", &pre, &err) || types->arr.n != tokens->arr.n) {
        rlx_status_free(err);
        return rlx_errorf(RLX_ERR_BAD_FILE,
                          "vocabulary '%s': expected tokenizer.ggml.{model, pre} strings, tokens and merges string "
                          "arrays and an i32 token_type array as long as tokens",
                          vocab_path);
    }
    RLX_TRY(rlx_gguf_writer_set_str(w, "tokenizer.ggml.model", model));
    RLX_TRY(rlx_gguf_writer_set_str(w, "tokenizer.ggml.pre", s->pre ? s->pre : pre));
    vocab_out v = {0};
    rlx_status st = NULL;
    if (s->n_vocab == tokens->arr.n) { /* as in the file: copied whole */
        st = rlx_gguf_writer_set_value(w, "tokenizer.ggml.tokens", tokens);
        if (!st) st = rlx_gguf_writer_set_value(w, "tokenizer.ggml.token_type", types);
        if (!st) st = rlx_gguf_writer_set_value(w, "tokenizer.ggml.merges", merges);
    } else {
        st = resize_tokens(tokens, types, s->n_vocab, &v);
        if (!st) st = filter_merges(tokens, merges, s->n_vocab, &v);
        if (!st) st = rlx_gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", v.strs, v.lens, s->n_vocab);
        if (!st) st = rlx_gguf_writer_set_arr(w, "tokenizer.ggml.token_type", RLX_GGUF_INT32, v.types, s->n_vocab);
        if (!st) st = rlx_gguf_writer_set_arr_str(w, "tokenizer.ggml.merges", v.merges, v.merge_lens, v.n_merges);
    }
    vocab_out_free(&v);
    RLX_TRY(st);
    const struct {
        const char *key;
        int32_t id;
    } special[] = {{"tokenizer.ggml.bos_token_id", s->bos},
                   {"tokenizer.ggml.eos_token_id", s->eos},
                   {"tokenizer.ggml.padding_token_id", s->pad}};
    for (size_t i = 0; i < sizeof special / sizeof special[0]; i++) /* ids a cut vocabulary lost are left out */
        if (special[i].id >= 0 && (uint32_t)special[i].id < s->n_vocab)
            RLX_TRY(rlx_gguf_writer_set_u32(w, special[i].key, (uint32_t)special[i].id));
    RLX_TRY(rlx_gguf_writer_set_bool(w, "tokenizer.ggml.add_bos_token", s->add_bos));
    if (chat_template) RLX_TRY(rlx_gguf_writer_set_str(w, "tokenizer.chat_template", chat_template));
    return NULL;
}

/* ---- metadata ---- */

static void size_label(const rlx_synth_shape *s, bool overridden, char *out, size_t cap) {
    if (!overridden) {
        snprintf(out, cap, "%s", s->size_label);
        return;
    }
    double n = (double)rlx_synth_param_count(s);
    const char *unit = n >= 1e12 ? "T" : n >= 1e9 ? "B" : n >= 1e6 ? "M" : "K";
    double scale = n >= 1e12 ? 1e12 : n >= 1e9 ? 1e9 : n >= 1e6 ? 1e6 : 1e3;
    snprintf(out, cap, "%.1f%s", n / scale, unit);
}

static rlx_status arch_u32(rlx_gguf_writer *w, const char *arch, const char *suffix, uint32_t v) {
    char key[128];
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    return rlx_gguf_writer_set_u32(w, key, v);
}

static rlx_status arch_f32(rlx_gguf_writer *w, const char *arch, const char *suffix, float v) {
    char key[128];
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    return rlx_gguf_writer_set_f32(w, key, v);
}

/* Qwen3.5's keys after general.file_type, in the order of the fixtures' models/qwen35 and
 * models/qwen35moe GGUFs: the MoE FFN sizes, then the Gated DeltaNet sizes (conv kernel, key head
 * dim as state_size, key heads as group_count, value heads as time_step_rank, value channels as
 * inner_size), the attention interval and the partial RoPE. */
static rlx_status write_hybrid_keys(rlx_gguf_writer *w, const rlx_synth_shape *s) {
    if (s->n_expert) {
        RLX_TRY(arch_u32(w, s->arch, "expert_feed_forward_length", s->n_ff_exp));
        RLX_TRY(arch_u32(w, s->arch, "expert_shared_feed_forward_length", s->n_ff_shexp));
    }
    RLX_TRY(arch_u32(w, s->arch, "ssm.conv_kernel", s->ssm_conv_kernel));
    RLX_TRY(arch_u32(w, s->arch, "ssm.state_size", s->ssm_k_dim));
    RLX_TRY(arch_u32(w, s->arch, "ssm.group_count", s->ssm_k_heads));
    RLX_TRY(arch_u32(w, s->arch, "ssm.time_step_rank", s->ssm_v_heads));
    RLX_TRY(arch_u32(w, s->arch, "ssm.inner_size", s->ssm_v_heads * s->ssm_v_dim));
    RLX_TRY(arch_u32(w, s->arch, "full_attention_interval", s->full_attn_interval));
    RLX_TRY(arch_u32(w, s->arch, "rope.dimension_count", (uint32_t)((float)s->head_dim * s->partial_rotary)));
    char key[128];
    snprintf(key, sizeof key, "%s.rope.dimension_sections", s->arch);
    return rlx_gguf_writer_set_arr(w, key, RLX_GGUF_INT32, s->rope_sections, 4);
}

/* The converter's keys in its order (the fixtures' models/qwen3, models/llama32, models/qwen35 and
 * models/qwen35moe GGUFs). converter_ftype is the file type the converter writes (F16 when
 * llama-quantize comes next). */
static rlx_status write_model_keys(rlx_gguf_writer *w, const synth_args *a, uint32_t converter_ftype) {
    const rlx_synth_shape *s = &a->shape;
    char label[32];
    size_label(s, a->overridden, label, sizeof label);
    RLX_TRY(rlx_gguf_writer_set_str(w, "general.architecture", s->arch));
    RLX_TRY(rlx_gguf_writer_set_str(w, "general.type", "model"));
    RLX_TRY(rlx_gguf_writer_set_str(w, "general.name", s->name));
    RLX_TRY(rlx_gguf_writer_set_str(w, "general.basename", s->basename));
    RLX_TRY(rlx_gguf_writer_set_str(w, "general.size_label", label));
    RLX_TRY(arch_u32(w, s->arch, "block_count", s->n_layer));
    RLX_TRY(arch_u32(w, s->arch, "context_length", s->n_ctx));
    RLX_TRY(arch_u32(w, s->arch, "embedding_length", s->n_embd));
    if (s->n_ff) RLX_TRY(arch_u32(w, s->arch, "feed_forward_length", s->n_ff)); /* qwen35moe has no dense FFN */
    RLX_TRY(arch_u32(w, s->arch, "attention.head_count", s->n_head));
    RLX_TRY(arch_u32(w, s->arch, "attention.head_count_kv", s->n_head_kv));
    RLX_TRY(arch_f32(w, s->arch, "rope.freq_base", s->rope_base));
    RLX_TRY(arch_f32(w, s->arch, "attention.layer_norm_rms_epsilon", s->rms_eps));
    if (s->n_expert) {
        RLX_TRY(arch_u32(w, s->arch, "expert_count", s->n_expert));
        RLX_TRY(arch_u32(w, s->arch, "expert_used_count", s->n_expert_used));
    }
    RLX_TRY(arch_u32(w, s->arch, "attention.key_length", s->head_dim));
    RLX_TRY(arch_u32(w, s->arch, "attention.value_length", s->head_dim));
    RLX_TRY(rlx_gguf_writer_set_u32(w, "general.file_type", converter_ftype));
    if (rlx_synth_is_hybrid(s)) RLX_TRY(write_hybrid_keys(w, s));
    if (!strcmp(s->arch, "llama")) { /* LlamaModel.set_gguf_parameters adds these two */
        RLX_TRY(arch_u32(w, s->arch, "vocab_size", s->n_vocab));
        RLX_TRY(arch_u32(w, s->arch, "rope.dimension_count", s->head_dim));
    }
    return rlx_gguf_writer_set_u32(w, "general.quantization_version", QUANTIZATION_VERSION);
}

static rlx_status write_metadata(rlx_gguf_writer *w, const synth_args *a, const rlx_quant_recipe *r, bool converter) {
    char vocab_path[4096], template_path[4096];
    char rel[256];
    snprintf(rel, sizeof rel, "tokenizers/%s", a->shape.vocab_file);
    if (a->vocab) snprintf(vocab_path, sizeof vocab_path, "%s", a->vocab);
    else RLX_TRY(find_fixture(rel, vocab_path, sizeof vocab_path)); /* names the roots tried */
    char *chat_template = NULL;
    if (a->chat_template) RLX_TRY(read_text(a->chat_template, &chat_template));
    else if (a->shape.template_file) {
        snprintf(rel, sizeof rel, "templates/%s", a->shape.template_file);
        rlx_status missing = find_fixture(rel, template_path, sizeof template_path);
        if (!missing) RLX_TRY(read_text(template_path, &chat_template));
        rlx_status_free(missing); /* optional: the file is written without a template */
    }
    rlx_gguf *vg = NULL;
    rlx_status s = rlx_gguf_open(vocab_path, &vg);
    if (!s) s = write_model_keys(w, a, converter ? r->ftype : RLX_FTYPE_MOSTLY_F16);
    if (!s) s = write_vocab(w, vg, vocab_path, &a->shape, chat_template);
    /* llama-quantize re-sets these two, which moves them to the end. */
    if (!s && !converter) s = rlx_gguf_writer_set_u32(w, "general.quantization_version", QUANTIZATION_VERSION);
    if (!s && !converter) s = rlx_gguf_writer_set_u32(w, "general.file_type", r->ftype);
    rlx_gguf_close(vg);
    free(chat_template);
    return s;
}

/* ---- tensors ---- */

/* The converter writes F32, F16, BF16 and Q8_0 itself; everything else is llama-quantize's. */
static bool converter_writes(const rlx_quant_recipe *r) {
    return r->ftype == RLX_FTYPE_ALL_F32 || r->ftype == RLX_FTYPE_MOSTLY_F16 || r->ftype == RLX_FTYPE_MOSTLY_BF16 ||
           r->ftype == RLX_FTYPE_MOSTLY_Q8_0;
}

/* convert_hf_to_gguf: 1-D tensors, norms, rope_freqs and the tensors it always keeps in F32
 * (ssm_conv1d, the MoE routers: force_f32) stay F32; Q8_0 falls back to F16 for rows that do not
 * split into its blocks. */
static uint32_t converter_type(const rlx_synth_tensor *t, uint32_t outtype) {
    size_t len = strlen(t->name);
    if (t->n_dims < 2 || (len >= 12 && !strcmp(t->name + len - 12, "_norm.weight")) || t->init == RLX_SYNTH_ROPE_FREQS ||
        t->force_f32)
        return RLX_DTYPE_F32;
    if (outtype == RLX_DTYPE_Q8_0 && t->ne[0] % 32) return RLX_DTYPE_F16;
    return outtype;
}

typedef struct synth_plan {
    rlx_synth_tensor *tensors; /* owned, in file order */
    uint32_t *types;           /* owned */
    rlx_quant_job *jobs;       /* owned */
    size_t n;
} synth_plan;

static void plan_free(synth_plan *p) {
    free(p->tensors);
    free(p->types);
    free(p->jobs);
}

/* Reorders the converter's list into llama-quantize's order and picks its types. */
static rlx_status quantizer_types(const synth_args *a, const rlx_quant_recipe *r, synth_plan *p) {
    const char **names = malloc(p->n * sizeof *names);
    size_t *order = malloc(p->n * sizeof *order);
    rlx_synth_tensor *sorted = malloc(p->n * sizeof *sorted);
    rlx_weight *w = calloc(p->n, sizeof *w);
    rlx_status s = !names || !order || !sorted || !w ? rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "synth: out of memory") : NULL;
    if (!s) {
        for (size_t i = 0; i < p->n; i++) names[i] = p->tensors[i].name;
        rlx_quant_sort_order(names, p->n, order);
        for (size_t i = 0; i < p->n; i++) sorted[i] = p->tensors[order[i]];
        memcpy(p->tensors, sorted, p->n * sizeof *sorted);
        for (size_t i = 0; i < p->n; i++) {
            rlx_synth_tensor *t = &p->tensors[i];
            w[i] = (rlx_weight){t->name, converter_type(t, RLX_DTYPE_F16), t->n_dims, {t->ne[0], t->ne[1], t->ne[2], 1}, 0, NULL};
            /* llama-quantize writes ggml_n_dims: trailing dims of 1 are dropped ([n, 1] -> [n]) */
            while (t->n_dims > 1 && t->ne[t->n_dims - 1] == 1) t->n_dims--;
        }
        rlx_quant_model_info m = {a->shape.arch, a->shape.n_layer, a->shape.n_expert, a->shape.n_head,
                                  a->shape.n_head_kv};
        s = rlx_quant_choose_types(r, &m, w, p->n, p->types);
    }
    free(names);
    free(order);
    free(sorted);
    free(w);
    return s;
}

static rlx_status make_plan(const synth_args *a, const rlx_quant_recipe *r, synth_plan *p) {
    RLX_TRY(rlx_synth_tensor_list(&a->shape, &p->tensors, &p->n));
    p->types = calloc(p->n, sizeof *p->types);
    p->jobs = calloc(p->n, sizeof *p->jobs);
    if (!p->types || !p->jobs) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "synth: out of memory for %zu tensors", p->n);
    if (converter_writes(r))
        for (size_t i = 0; i < p->n; i++) p->types[i] = converter_type(&p->tensors[i], r->default_type);
    else
        RLX_TRY(quantizer_types(a, r, p));
    for (size_t i = 0; i < p->n; i++)
        p->jobs[i] = (rlx_quant_job){p->tensors[i].name, p->types[i], p->tensors[i].ne[0],
                                     p->tensors[i].ne[1] * p->tensors[i].ne[2], NULL};
    return NULL;
}

/* ---- values ---- */

typedef struct synth_fill {
    const rlx_synth_tensor *tensors; /* borrowed, job order */
    const float *rope;               /* borrowed: head_dim / 2 factors, or NULL */
    uint64_t seed;
} synth_fill;

static inline uint64_t splitmix64(uint64_t *state) {
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Normal values with std WEIGHT_STD for one row. The stream depends on (seed, tensor name, row)
 * only, so the weights are the same whatever the thread count, file order or --type. Box-Muller
 * on two 24-bit uniforms from each 64-bit draw. */
static void random_row(uint64_t seed, uint64_t name_hash, uint64_t row, float *out, uint64_t n) {
    uint64_t state = seed ^ name_hash;
    state = splitmix64(&state) ^ (row * 0xd1b54a32d192ed03ull);
    const float two_pi = 6.283185307179586f;
    for (uint64_t i = 0; i < n; i += 2) {
        uint64_t x = splitmix64(&state);
        float u1 = (float)((x >> 40) + 1) * 0x1p-24f, u2 = (float)(x & 0xffffff) * 0x1p-24f;
        float r = WEIGHT_STD * sqrtf(-2.0f * logf(u1)), a = two_pi * u2;
        out[i] = r * cosf(a);
        if (i + 1 < n) out[i + 1] = r * sinf(a);
    }
}

static rlx_status fill_synth(void *user, size_t tensor, uint64_t row0, uint64_t n_rows, float *dst) {
    const synth_fill *f = user;
    const rlx_synth_tensor *t = &f->tensors[tensor];
    uint64_t n = t->ne[0];
    switch (t->init) {
    case RLX_SYNTH_ONES:
    case RLX_SYNTH_MINUS_ONES:
        for (uint64_t i = 0; i < n_rows * n; i++) dst[i] = t->init == RLX_SYNTH_ONES ? 1.0f : -1.0f;
        break;
    case RLX_SYNTH_ROPE_FREQS: memcpy(dst, f->rope, (size_t)n * sizeof *dst); break;
    case RLX_SYNTH_RANDOM: {
        uint64_t h = hash_bytes(t->name, strlen(t->name));
        for (uint64_t r = 0; r < n_rows; r++) random_row(f->seed, h, row0 + r, dst + r * n, n);
        break;
    }
    }
    return NULL;
}

/* --dry-run: the tensor table, "name type [ne0, ne1, ne2] bytes" per line, then the total. */
static void print_plan(const synth_plan *p, const rlx_gguf_writer *w) {
    for (size_t i = 0; i < p->n; i++) {
        const rlx_synth_tensor *t = &p->tensors[i];
        char shape[96];
        int len = snprintf(shape, sizeof shape, "[%" PRIu64, t->ne[0]);
        for (uint32_t d = 1; d < t->n_dims && len > 0 && (size_t)len < sizeof shape; d++)
            len += snprintf(shape + len, sizeof shape - (size_t)len, ", %" PRIu64, t->ne[d]);
        if (len > 0 && (size_t)len + 1 < sizeof shape) strcat(shape, "]");
        printf("%-40s %-6s %-22s %" PRIu64 "\n", t->name, rlx_dtype_name(p->types[i]), shape,
               rlx_gguf_writer_tensor_nbytes(w, i));
    }
    printf("%zu tensors, %" PRIu64 " bytes of tensor data\n", p->n, rlx_gguf_writer_data_bytes(w));
}

/* Refuses up front a file its filesystem cannot hold, rather than after minutes of writing (a
 * 35B model is 20 GB even in Q4_K_M). The file adds its metadata (the vocabulary: some MB) and
 * padding to the tensor data; a write that still runs out of space reports ENOSPC by name. */
static rlx_status check_space(const char *output, uint64_t data_bytes) {
    char *copy = strdup(output);
    if (!copy) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "synth: out of memory");
    struct statvfs v;
    int rc = statvfs(dirname(copy), &v);
    free(copy);
    if (rc != 0) return NULL; /* the create that follows names the problem */
    uint64_t free_bytes = (uint64_t)v.f_bavail * v.f_frsize;
    if (free_bytes >= data_bytes) return NULL;
    return rlx_errorf(RLX_ERR_IO, "'%s' needs %.2f GB of tensor data, but its filesystem has %.2f GB free", output,
                      (double)data_bytes / 1e9, (double)free_bytes / 1e9);
}

static rlx_status synth(const synth_args *a, rlx_quant_progress *progress) {
    const rlx_quant_recipe *r = rlx_quant_recipe_find(a->type);
    bool converter = converter_writes(r);
    synth_plan p = {0};
    rlx_gguf_writer *w = NULL;
    float *rope = calloc(a->shape.head_dim / 2 + 1, sizeof *rope);
    rlx_status s = rope ? NULL : rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "synth: out of memory");
    if (!s) s = make_plan(a, r, &p);
    if (!s) s = rlx_gguf_writer_create(&w);
    if (!s) s = write_metadata(w, a, r, converter);
    for (size_t i = 0; !s && i < p.n; i++) {
        const rlx_synth_tensor *t = &p.tensors[i];
        s = rlx_gguf_writer_add_tensor(w, t->name, p.types[i], t->n_dims, t->ne);
    }
    if (!s && a->dry_run) {
        print_plan(&p, w);
        goto done;
    }
    if (!s && a->shape.rope_factor > 0) rlx_synth_rope_factors(&a->shape, rope);
    if (!s) s = check_space(a->output, rlx_gguf_writer_data_bytes(w));
    if (!s) s = rlx_gguf_writer_begin(w, a->output);
    synth_fill fill = {p.tensors, rope, a->seed};
    if (!s) s = rlx_quant_write_jobs(w, p.jobs, p.n, fill_synth, &fill, a->threads, rlx_quant_progress_update, progress);
    if (!s) s = rlx_gguf_writer_finish(w);
done:
    rlx_gguf_writer_destroy(w);
    plan_free(&p);
    free(rope);
    return s;
}

int rlx_cmd_synth(int argc, char **argv) {
    synth_args a = {0};
    rlx_status s = parse(argc, argv, &a);
    if (s) return rlx_cli_fail("synth", s, true);
    if (a.help) {
        usage(stdout);
        return RLX_EXIT_OK;
    }
    rlx_quant_progress p;
    rlx_quant_progress_start(&p, "synth");
    s = synth(&a, &p);
    rlx_quant_progress_end(&p);
    if (s) return rlx_cli_fail("synth", s, false);
    if (a.dry_run) return RLX_EXIT_OK;
    rlx_quant_print_summary("synth", a.output, rlx_cli_now() - p.t0);
    return RLX_EXIT_OK;
}
