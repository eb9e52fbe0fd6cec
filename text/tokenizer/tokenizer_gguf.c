/* Tokenizer from GGUF metadata (ggml docs/gguf.md "tokenizer.ggml.*"), with llama.cpp's defaults
 * and overrides (llama_vocab::impl::load): special ids per model, add_bos/add_eos/add_sep,
 * add_space_prefix, and the pre-tokenizer named by tokenizer.ggml.pre. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "text/tokenizer/tokenizer.h"

#define KEY(k) "tokenizer.ggml." k

static rlx_status get_bool(const rlx_gguf *g, const char *key, bool *v) {
    rlx_status err = NULL;
    rlx_gguf_get_bool(g, key, v, &err);
    return err;
}

/* Model name -> kind and llama.cpp's default special ids and flags for it. */
static rlx_status set_model_defaults(rlx_tokenizer *t, const char *model) {
    int32_t *sp = t->special;
    if (!strcmp(model, "llama")) {
        t->kind = RLX_TOKENIZER_SPM;
        sp[RLX_SPECIAL_BOS] = 1;
        sp[RLX_SPECIAL_EOS] = 2;
        sp[RLX_SPECIAL_UNK] = 0;
        t->add_space_prefix = true;
        t->add_bos = true;
    } else if (!strcmp(model, "bert")) {
        t->kind = RLX_TOKENIZER_WPM;
        sp[RLX_SPECIAL_BOS] = 101;
        sp[RLX_SPECIAL_UNK] = 100;
        sp[RLX_SPECIAL_SEP] = 102;
        sp[RLX_SPECIAL_PAD] = 0;
        sp[RLX_SPECIAL_MASK] = 103;
        t->add_bos = t->add_sep = true;
        t->wpm_lowercase = true;
    } else if (!strcmp(model, "gpt2")) {
        t->kind = RLX_TOKENIZER_BPE;
        sp[RLX_SPECIAL_BOS] = 11;
        sp[RLX_SPECIAL_EOS] = 11;
    } else {
        return rlx_errorf(RLX_ERR_UNSUPPORTED, KEY("model") " '%s' is not supported (supported: gpt2, llama, bert)",
                          model);
    }
    return NULL;
}

/* A numeric array of at least n elements, or NULL when the key is absent. */
static rlx_status numeric_array(const rlx_gguf *g, const char *key, rlx_gguf_type t1, rlx_gguf_type t2, uint64_t n,
                                const rlx_gguf_value **out) {
    *out = NULL;
    const rlx_gguf_kv *kv = rlx_gguf_find(g, key);
    if (!kv) return NULL;
    const rlx_gguf_value *v = &kv->value;
    if (v->type != RLX_GGUF_ARRAY)
        return rlx_errorf(RLX_ERR_BAD_FILE, "key '%s': type is %s, expected an array of %s", key,
                          rlx_gguf_type_name(v->type), rlx_gguf_type_name(t1));
    if (v->arr.elem_type != t1 && v->arr.elem_type != t2)
        return rlx_errorf(RLX_ERR_BAD_FILE, "key '%s': type is array of %s, expected an array of %s", key,
                          rlx_gguf_type_name(v->arr.elem_type), rlx_gguf_type_name(t1));
    if (v->arr.n < n)
        return rlx_errorf(RLX_ERR_BAD_FILE, "key '%s': %" PRIu64 " entries for %" PRIu64 " tokens", key, v->arr.n, n);
    *out = v;
    return NULL;
}

static rlx_status load_vocab(rlx_tokenizer *t, const rlx_gguf *g) {
    const rlx_gguf_value *tokens, *scores, *types;
    rlx_status err = NULL;
    if (!rlx_gguf_get_arr(g, KEY("tokens"), RLX_GGUF_STRING, &tokens, &err))
        return err ? err : rlx_errorf(RLX_ERR_BAD_FILE, "no " KEY("tokens") " (the vocabulary)");
    uint64_t n = tokens->arr.n;
    if (n == 0 || n > INT32_MAX)
        return rlx_errorf(RLX_ERR_BAD_FILE, KEY("tokens") ": %" PRIu64 " tokens (expected 1 .. %d)", n, INT32_MAX);
    RLX_TRY(numeric_array(g, KEY("scores"), RLX_GGUF_FLOAT32, RLX_GGUF_INT32, n, &scores));
    RLX_TRY(numeric_array(g, KEY("token_type"), RLX_GGUF_INT32, RLX_GGUF_INT32, n, &types));
    RLX_TRY(rlx_tok_vocab_init(&t->vocab, (uint32_t)n));
    for (uint64_t i = 0; i < n; i++) {
        rlx_gguf_str str = rlx_gguf_arr_str(tokens, i), *s = &str;
        rlx_gguf_value e;
        float score = 0;
        if (scores && rlx_gguf_arr_get(scores, i, &e))
            score = e.type == RLX_GGUF_FLOAT32 ? (float)e.f64 : (float)e.i64;
        uint8_t type = RLX_TOKEN_TYPE_NORMAL;
        if (types && rlx_gguf_arr_get(types, i, &e))
            type = e.i64 >= RLX_TOKEN_TYPE_NORMAL && e.i64 <= RLX_TOKEN_TYPE_BYTE ? (uint8_t)e.i64 : RLX_TOKEN_TYPE_UNDEFINED;
        RLX_TRY(rlx_tok_vocab_set(&t->vocab, (uint32_t)i, s->s, s->len, score, type));
    }
    return NULL;
}

static rlx_status load_merges(rlx_tokenizer *t, const rlx_gguf *g) {
    const rlx_gguf_value *merges;
    rlx_status err = NULL;
    if (!rlx_gguf_get_arr(g, KEY("merges"), RLX_GGUF_STRING, &merges, &err))
        return err ? err : rlx_errorf(RLX_ERR_BAD_FILE, "BPE vocabulary without " KEY("merges"));
    for (uint64_t i = 0; i < merges->arr.n; i++) {
        rlx_gguf_str str = rlx_gguf_arr_str(merges, i), *s = &str;
        rlx_status bad = rlx_tok_merges_add_line(&t->merges, s->s, s->len);
        if (bad) return rlx_status_annotate(bad, KEY("merges") "[%" PRIu64 "]", i);
    }
    return NULL;
}

static rlx_status load_pretok(rlx_tokenizer *t, const rlx_gguf *g) {
    const char *pre = "default"; /* llama.cpp's fallback when the key is missing */
    rlx_status err = NULL;
    rlx_gguf_get_str(g, KEY("pre"), &pre, &err);
    if (err) return err;
    return rlx_tok_pretok_named(&t->pretok, pre, &t->ignore_merges, &t->add_bos);
}

/* Special ids: an absent key keeps the model default; a value outside the vocabulary (such as
 * 0xFFFFFFFF or -1 for "none") keeps it too, as llama.cpp does. */
static rlx_status load_special_ids(rlx_tokenizer *t, const rlx_gguf *g) {
    static const struct {
        const char *key;
        rlx_special which;
    } keys[] = {
        {KEY("bos_token_id"), RLX_SPECIAL_BOS},     {KEY("eos_token_id"), RLX_SPECIAL_EOS},
        {KEY("eot_token_id"), RLX_SPECIAL_EOT},     {KEY("eom_token_id"), RLX_SPECIAL_EOM},
        {KEY("unknown_token_id"), RLX_SPECIAL_UNK}, {KEY("seperator_token_id"), RLX_SPECIAL_SEP},
        {KEY("padding_token_id"), RLX_SPECIAL_PAD}, {KEY("mask_token_id"), RLX_SPECIAL_MASK},
    };
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        int32_t *id = &t->special[keys[i].which];
        if (*id >= (int32_t)t->vocab.n) *id = RLX_TOKEN_NULL;
        const rlx_gguf_kv *kv = rlx_gguf_find(g, keys[i].key);
        if (!kv) continue;
        const rlx_gguf_value *v = &kv->value;
        int64_t value;
        switch (v->type) {
        case RLX_GGUF_UINT8: case RLX_GGUF_UINT16: case RLX_GGUF_UINT32: case RLX_GGUF_UINT64:
            value = v->u64 > INT32_MAX ? -1 : (int64_t)v->u64;
            break;
        case RLX_GGUF_INT8: case RLX_GGUF_INT16: case RLX_GGUF_INT32: case RLX_GGUF_INT64:
            value = v->i64;
            break;
        default:
            return rlx_errorf(RLX_ERR_BAD_FILE, "key '%s': type is %s, expected an integer token id", keys[i].key,
                              rlx_gguf_type_name(v->type));
        }
        if (value >= 0 && value < (int64_t)t->vocab.n) *id = (int32_t)value;
    }
    return NULL;
}

static rlx_status load_flags(rlx_tokenizer *t, const rlx_gguf *g) {
    RLX_TRY(get_bool(g, KEY("add_bos_token"), &t->add_bos));
    RLX_TRY(get_bool(g, KEY("add_eos_token"), &t->add_eos));
    RLX_TRY(get_bool(g, KEY("add_sep_token"), &t->add_sep));
    RLX_TRY(get_bool(g, KEY("add_space_prefix"), &t->add_space_prefix));
    RLX_TRY(get_bool(g, KEY("normalizer.lowercase"), &t->wpm_lowercase));
    t->wpm_strip_accents = t->wpm_lowercase; /* llama.cpp: strip_accents follows lowercase unless given */
    return get_bool(g, KEY("normalizer.strip_accents"), &t->wpm_strip_accents);
}

static rlx_status load(rlx_tokenizer *t, const rlx_gguf *g) {
    const char *model = NULL;
    rlx_status err = NULL;
    if (!rlx_gguf_get_str(g, KEY("model"), &model, &err))
        return err ? err : rlx_errorf(RLX_ERR_NOT_FOUND, "no " KEY("model") ": this GGUF carries no tokenizer");
    RLX_TRY(set_model_defaults(t, model));
    if (t->kind == RLX_TOKENIZER_BPE) RLX_TRY(load_pretok(t, g));
    RLX_TRY(load_vocab(t, g));
    if (t->kind == RLX_TOKENIZER_BPE) RLX_TRY(load_merges(t, g));
    RLX_TRY(load_special_ids(t, g));
    RLX_TRY(load_flags(t, g));
    return rlx_tok_finish(t, "GGUF tokenizer");
}

rlx_status rlx_tokenizer_from_gguf(const rlx_gguf *g, rlx_tokenizer **out) {
    if (!g || !out) return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "rlx_tokenizer_from_gguf: NULL gguf or out");
    rlx_tokenizer *t;
    RLX_TRY(rlx_tok_new(RLX_TOKENIZER_BPE, &t));
    rlx_status s = load(t, g);
    if (s) {
        rlx_tokenizer_close(t);
        return s;
    }
    *out = t;
    return NULL;
}
