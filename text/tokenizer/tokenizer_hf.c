/* Tokenizers from Hugging Face files:
 *  - tokenizer.json (the `tokenizers` library's serialization): a BPE model with its vocab,
 *    merges, added_tokens, normalizer (NFC), pre_tokenizer (Sequence / Split / ByteLevel / Digits)
 *    and post_processor (TemplateProcessing's leading/trailing special tokens = add_bos/add_eos);
 *  - vocab.json + merges.txt (the "slow" GPT2Tokenizer / Qwen2Tokenizer files);
 *  - tokenizer_config.json beside either: added_tokens_decoder, bos/eos/unk/pad tokens,
 *    add_bos_token / add_eos_token, add_prefix_space.
 * Added tokens with "special": true become CONTROL tokens (parsed from text only on request),
 * the others USER_DEFINED (always parsed), matching the GGUF converter's token types. */
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "text/tokenizer/tokenizer.h"

/* HF ByteLevel(use_regex=true) splits with GPT-2's pattern (tokenizers pre_tokenizers/byte_level.rs). */
#define HF_BYTELEVEL_REGEX "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+"
/* Qwen2Tokenizer's PRETOKENIZE_REGEX (transformers models/qwen2/tokenization_qwen2.py). */
#define QWEN2_REGEX                                                                                \
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|"     \
    "\\s+(?!\\S)|\\s+"
#define MAX_HF_VOCAB (1u << 24) /* refuses absurd ids before allocating for them */
/* Ids may leave holes (they become "[PAD<id>]" tokens), but no more holes than entries plus a
 * little: the tables are sized by the largest id, and a few bytes of JSON must not buy gigabytes
 * of them. HF and llama.cpp expect ids below the vocabulary size anyway. */
#define HF_ID_SLACK 256u

/* Vocabulary entries gathered from several JSON places before the table is built; texts are
 * borrowed from the JSON documents, which outlive the staging. */
typedef struct {
    const char **text;
    size_t *len;
    uint8_t *type;
    uint8_t *flags;
    uint32_t n;     /* ids 0 .. n-1 are in use */
    uint32_t cap;   /* allocated entries */
    uint32_t limit; /* ids must be below this (id_limit of the entries the files hold) */
    size_t entries; /* how many entries the files hold, for messages */
} staging;

typedef struct {
    const char *what;  /* file name for messages */
    json_t *root;      /* owned */
    json_t *config;    /* owned: tokenizer_config.json, or NULL */
    staging st;
    const char *regex[RLX_TOK_MAX_REGEX]; /* borrowed from root, or static */
    char *owned_regex[RLX_TOK_MAX_REGEX]; /* owned: escaped literal Split patterns */
    uint32_t n_regex;
    bool byte_level;
} hf_load;

/* tokenizer_config.json holds integers past 64 bits (model_max_length = 1e30): `as_real` reads
 * numbers as doubles there, where no integer is needed. */
static rlx_status load_json(const char *path, bool as_real, json_t **out) {
    char *data;
    size_t len;
    RLX_TRY(rlx_tok_read_file(path, &data, &len));
    json_error_t e;
    *out = json_loadb(data, len, JSON_ALLOW_NUL | (as_real ? JSON_DECODE_INT_AS_REAL : 0), &e);
    free(data);
    if (!*out) return rlx_errorf(RLX_ERR_BAD_FILE, "'%s': invalid JSON at line %d column %d: %s", path, e.line, e.column, e.text);
    return NULL;
}

/* Sets the id bound from the number of entries the files list (vocabulary and added tokens). */
static void staging_set_entries(staging *st, size_t entries) {
    st->entries = entries;
    uint64_t limit = 2 * (uint64_t)entries + HF_ID_SLACK;
    st->limit = limit < MAX_HF_VOCAB ? (uint32_t)limit : MAX_HF_VOCAB;
}

static rlx_status staging_grow(staging *st, uint32_t n, const char *what) {
    if (n <= st->n) return NULL;
    if (n > st->limit) return rlx_errorf(RLX_ERR_INTERNAL, "%s: token id %" PRIu32 " passed the id check", what, n - 1);
    if (n > st->cap) { /* geometric growth: vocab.json lists ids one by one */
        uint32_t cap = st->cap ? st->cap : 1024;
        while (cap < n) cap *= 2;
        const char **text = realloc(st->text, cap * sizeof *text);
        if (text) st->text = text;
        size_t *len = realloc(st->len, cap * sizeof *len);
        if (len) st->len = len;
        uint8_t *type = realloc(st->type, cap);
        if (type) st->type = type;
        uint8_t *flags = realloc(st->flags, cap);
        if (flags) st->flags = flags;
        if (!text || !len || !type || !flags) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "%s: out of memory", what);
        st->cap = cap;
    }
    for (uint32_t i = st->n; i < n; i++) {
        st->text[i] = NULL;
        st->len[i] = 0;
        st->type[i] = st->flags[i] = 0;
    }
    st->n = n;
    return NULL;
}

static void staging_free(staging *st) {
    free(st->text);
    free(st->len);
    free(st->type);
    free(st->flags);
    *st = (staging){0};
}

static rlx_status stage(staging *st, json_int_t id, const char *text, size_t len, uint8_t type, uint8_t flags,
                        const char *what) {
    if (id < 0 || id >= (json_int_t)st->limit)
        return rlx_errorf(RLX_ERR_BAD_FILE, "%s: token '%.64s' has id %" JSON_INTEGER_FORMAT " (expected 0 .. %" PRIu32
                          ": the files list %zu tokens, and ids may leave at most as many holes plus %u)", what, text,
                          id, st->limit - 1, st->entries, HF_ID_SLACK);
    RLX_TRY(staging_grow(st, (uint32_t)id + 1, what));
    if (st->text[id] && (st->len[id] != len || memcmp(st->text[id], text, len)))
        return rlx_errorf(RLX_ERR_BAD_FILE, "%s: id %" JSON_INTEGER_FORMAT " is both '%.64s' and '%.64s'", what, id,
                          st->text[id], text);
    st->text[id] = text;
    st->len[id] = len;
    st->type[id] = type;
    st->flags[id] = flags;
    return NULL;
}

static rlx_status stage_vocab_object(staging *st, json_t *vocab, const char *what) {
    if (!json_is_object(vocab)) return rlx_errorf(RLX_ERR_BAD_FILE, "%s: the vocabulary is not a JSON object", what);
    const char *key;
    json_t *v;
    json_object_foreach(vocab, key, v) {
        if (!json_is_integer(v)) return rlx_errorf(RLX_ERR_BAD_FILE, "%s: token '%.64s' has a non-integer id", what, key);
        RLX_TRY(stage(st, json_integer_value(v), key, strlen(key), RLX_TOKEN_TYPE_NORMAL, 0, what));
    }
    return NULL;
}

/* One added token: {"id"?, "content", "special", "lstrip", "rstrip"}; id given separately for
 * tokenizer_config.json's added_tokens_decoder (keyed by id). */
static rlx_status stage_added(staging *st, json_int_t id, json_t *tok, const char *what) {
    json_t *content = json_object_get(tok, "content");
    if (!json_is_string(content)) return rlx_errorf(RLX_ERR_BAD_FILE, "%s: added token %" JSON_INTEGER_FORMAT " has no content", what, id);
    uint8_t type = json_is_true(json_object_get(tok, "special")) ? RLX_TOKEN_TYPE_CONTROL : RLX_TOKEN_TYPE_USER_DEFINED;
    uint8_t flags = (json_is_true(json_object_get(tok, "lstrip")) ? RLX_TOK_LSTRIP : 0) |
                    (json_is_true(json_object_get(tok, "rstrip")) ? RLX_TOK_RSTRIP : 0);
    return stage(st, id, json_string_value(content), json_string_length(content), type, flags, what);
}

static rlx_status build_vocab(rlx_tokenizer *t, const staging *st, const char *what) {
    if (st->n == 0) return rlx_errorf(RLX_ERR_BAD_FILE, "%s: empty vocabulary", what);
    RLX_TRY(rlx_tok_vocab_init(&t->vocab, st->n));
    for (uint32_t i = 0; i < st->n; i++) {
        if (!st->text[i]) continue; /* holes become "[PAD<id>]" in rlx_tok_vocab_index */
        RLX_TRY(rlx_tok_vocab_set(&t->vocab, i, st->text[i], st->len[i], 0, st->type[i]));
        t->vocab.flags[i] = st->flags[i];
    }
    return NULL;
}

/* ---- tokenizer.json ---- */

static rlx_status add_regex(hf_load *h, const char *re) {
    if (h->n_regex == RLX_TOK_MAX_REGEX)
        return rlx_errorf(RLX_ERR_UNSUPPORTED, "%s: more than %d pre-tokenizer splits", h->what, RLX_TOK_MAX_REGEX);
    h->regex[h->n_regex++] = re;
    return NULL;
}

/* A Split on a literal string: quote every character (PCRE2 \Q..\E cannot hold "\E" itself). */
static rlx_status add_literal(hf_load *h, const char *s) {
    if (h->n_regex == RLX_TOK_MAX_REGEX)
        return rlx_errorf(RLX_ERR_UNSUPPORTED, "%s: more than %d pre-tokenizer splits", h->what, RLX_TOK_MAX_REGEX);
    size_t n = strlen(s);
    char *re = malloc(2 * n + 1);
    if (!re) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "%s: out of memory", h->what);
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        if (strchr("\\^$.|?*+()[]{}", s[i])) re[o++] = '\\';
        re[o++] = s[i];
    }
    re[o] = '\0';
    h->owned_regex[h->n_regex] = re;
    return add_regex(h, re);
}

static rlx_status parse_pretok(hf_load *h, json_t *pt, rlx_tokenizer *t, int depth) {
    if (!pt || json_is_null(pt)) return NULL;
    const char *type = json_string_value(json_object_get(pt, "type"));
    if (!type) return rlx_errorf(RLX_ERR_BAD_FILE, "%s: pre_tokenizer without a type", h->what);
    if (!strcmp(type, "Sequence") && depth < 4) {
        json_t *list = json_object_get(pt, "pretokenizers"), *item;
        size_t i;
        json_array_foreach(list, i, item) RLX_TRY(parse_pretok(h, item, t, depth + 1));
        return NULL;
    }
    if (!strcmp(type, "ByteLevel")) {
        h->byte_level = true;
        t->bpe_prefix_space = json_is_true(json_object_get(pt, "add_prefix_space"));
        json_t *use_regex = json_object_get(pt, "use_regex");
        return use_regex && json_is_false(use_regex) ? NULL : add_regex(h, HF_BYTELEVEL_REGEX);
    }
    if (!strcmp(type, "Digits"))
        return add_regex(h, json_is_true(json_object_get(pt, "individual_digits")) ? "\\p{N}" : "\\p{N}+");
    if (!strcmp(type, "Split")) {
        const char *behavior = json_string_value(json_object_get(pt, "behavior"));
        if (!behavior || strcmp(behavior, "Isolated") || json_is_true(json_object_get(pt, "invert")))
            return rlx_errorf(RLX_ERR_UNSUPPORTED, "%s: Split pre-tokenizer with behavior '%s'%s (only Isolated, not "
                              "inverted, is supported)", h->what, behavior ? behavior : "?",
                              json_is_true(json_object_get(pt, "invert")) ? " inverted" : "");
        json_t *pattern = json_object_get(pt, "pattern");
        const char *re = json_string_value(json_object_get(pattern, "Regex"));
        if (re) return add_regex(h, re);
        const char *lit = json_string_value(json_object_get(pattern, "String"));
        if (lit) return add_literal(h, lit);
        return rlx_errorf(RLX_ERR_BAD_FILE, "%s: Split pre-tokenizer without a Regex or String pattern", h->what);
    }
    return rlx_errorf(RLX_ERR_UNSUPPORTED, "%s: pre_tokenizer type '%s' is not supported (supported: Sequence, "
                      "Split, ByteLevel, Digits)", h->what, type);
}

static rlx_status parse_normalizer(hf_load *h, json_t *n, rlx_tokenizer *t, int depth) {
    if (!n || json_is_null(n)) return NULL;
    const char *type = json_string_value(json_object_get(n, "type"));
    if (type && !strcmp(type, "Sequence") && depth < 4) {
        json_t *list = json_object_get(n, "normalizers"), *item;
        size_t i;
        json_array_foreach(list, i, item) RLX_TRY(parse_normalizer(h, item, t, depth + 1));
        return NULL;
    }
    if (type && !strcmp(type, "NFC")) {
        t->nfc = true;
        return NULL;
    }
    return rlx_errorf(RLX_ERR_UNSUPPORTED, "%s: normalizer '%s' is not supported (supported: NFC)", h->what,
                      type ? type : "?");
}

static rlx_status parse_merges(hf_load *h, json_t *merges, rlx_tokenizer *t) {
    if (!json_is_array(merges)) return rlx_errorf(RLX_ERR_BAD_FILE, "%s: model.merges is not an array", h->what);
    json_t *m;
    size_t i;
    json_array_foreach(merges, i, m) {
        if (json_is_string(m)) {
            rlx_status s = rlx_tok_merges_add_line(&t->merges, json_string_value(m), json_string_length(m));
            if (s) return rlx_status_annotate(s, "%s: model.merges[%zu]", h->what, i);
        } else if (json_is_array(m) && json_array_size(m) == 2 && json_is_string(json_array_get(m, 0)) &&
                   json_is_string(json_array_get(m, 1))) {
            json_t *l = json_array_get(m, 0), *r = json_array_get(m, 1);
            RLX_TRY(rlx_tok_merges_add(&t->merges, json_string_value(l), json_string_length(l), json_string_value(r),
                                       json_string_length(r)));
        } else {
            return rlx_errorf(RLX_ERR_BAD_FILE, "%s: model.merges[%zu] is neither \"a b\" nor [\"a\", \"b\"]", h->what, i);
        }
    }
    return NULL;
}

static int32_t special_token_id(const rlx_tokenizer *t, json_t *proc, const char *name) {
    json_t *entry = json_object_get(json_object_get(proc, "special_tokens"), name);
    json_t *ids = json_object_get(entry, "ids");
    if (json_array_size(ids) == 1 && json_is_integer(json_array_get(ids, 0)))
        return (int32_t)json_integer_value(json_array_get(ids, 0));
    return rlx_tok_vocab_find(&t->vocab, name, strlen(name));
}

/* TemplateProcessing's "single" template: a SpecialToken before the sequence is the BOS the
 * tokenizer adds, one after it the EOS. */
static void parse_post_processor(json_t *proc, rlx_tokenizer *t, int depth) {
    const char *type = json_string_value(json_object_get(proc, "type"));
    if (!type) return;
    if (!strcmp(type, "Sequence") && depth < 4) {
        json_t *item;
        size_t i;
        json_array_foreach(json_object_get(proc, "processors"), i, item) parse_post_processor(item, t, depth + 1);
        return;
    }
    if (strcmp(type, "TemplateProcessing")) return;
    json_t *single = json_object_get(proc, "single"), *piece;
    size_t i;
    bool seen_sequence = false;
    json_array_foreach(single, i, piece) {
        if (json_object_get(piece, "Sequence")) {
            seen_sequence = true;
            continue;
        }
        const char *name = json_string_value(json_object_get(json_object_get(piece, "SpecialToken"), "id"));
        int32_t id = name ? special_token_id(t, proc, name) : RLX_TOKEN_NULL;
        if (id < 0) continue;
        rlx_special which = seen_sequence ? RLX_SPECIAL_EOS : RLX_SPECIAL_BOS;
        t->special[which] = id;
        if (seen_sequence) t->add_eos = true;
        else t->add_bos = true;
    }
}

static rlx_status parse_tokenizer_json(hf_load *h, rlx_tokenizer *t) {
    json_t *model = json_object_get(h->root, "model");
    const char *type = json_string_value(json_object_get(model, "type"));
    if (!type) return rlx_errorf(RLX_ERR_BAD_FILE, "%s: no model.type", h->what);
    if (strcmp(type, "BPE"))
        return rlx_errorf(RLX_ERR_UNSUPPORTED, "%s: model type '%s' is not supported (supported: BPE)", h->what, type);
    if (json_is_true(json_object_get(model, "byte_fallback")))
        return rlx_errorf(RLX_ERR_UNSUPPORTED, "%s: BPE with byte_fallback (SentencePiece-style) is not supported; "
                          "use the GGUF or tokenizer.model", h->what);
    t->ignore_merges = json_is_true(json_object_get(model, "ignore_merges"));
    json_t *added = json_object_get(h->root, "added_tokens"), *tok;
    staging_set_entries(&h->st, json_object_size(json_object_get(model, "vocab")) + json_array_size(added));
    RLX_TRY(stage_vocab_object(&h->st, json_object_get(model, "vocab"), h->what));
    size_t i;
    json_array_foreach(added, i, tok) {
        json_t *id = json_object_get(tok, "id");
        if (!json_is_integer(id)) return rlx_errorf(RLX_ERR_BAD_FILE, "%s: added_tokens[%zu] has no integer id", h->what, i);
        RLX_TRY(stage_added(&h->st, json_integer_value(id), tok, h->what));
    }
    RLX_TRY(parse_normalizer(h, json_object_get(h->root, "normalizer"), t, 0));
    RLX_TRY(parse_pretok(h, json_object_get(h->root, "pre_tokenizer"), t, 0));
    RLX_TRY(parse_merges(h, json_object_get(model, "merges"), t));
    RLX_TRY(build_vocab(t, &h->st, h->what));
    RLX_TRY(rlx_tok_vocab_index(&t->vocab, h->what));
    parse_post_processor(json_object_get(h->root, "post_processor"), t, 0);
    return rlx_tok_pretok_regexes(&t->pretok, "tokenizer.json", h->regex, h->n_regex, h->byte_level);
}

/* ---- tokenizer_config.json ---- */

static const char *token_text(json_t *v) {
    if (json_is_string(v)) return json_string_value(v);
    return json_string_value(json_object_get(v, "content")); /* {"content": ..., "__type": "AddedToken"} */
}

static rlx_status stage_config_added(hf_load *h) {
    const char *key;
    json_t *tok;
    json_object_foreach(json_object_get(h->config, "added_tokens_decoder"), key, tok) {
        char *end;
        long long id = strtoll(key, &end, 10);
        if (*end || end == key)
            return rlx_errorf(RLX_ERR_BAD_FILE, "tokenizer_config.json: added_tokens_decoder key '%.32s' is not an id", key);
        RLX_TRY(stage_added(&h->st, (json_int_t)id, tok, "tokenizer_config.json"));
    }
    return NULL;
}

static rlx_status get_config_bool(json_t *config, const char *key, bool *out) {
    json_t *v = json_object_get(config, key);
    if (!v || json_is_null(v)) return NULL;
    if (!json_is_boolean(v)) return rlx_errorf(RLX_ERR_BAD_FILE, "tokenizer_config.json: '%s' must be true or false", key);
    *out = json_is_true(v);
    return NULL;
}

/* Named special tokens and add_* flags; runs after the vocabulary is indexed. */
static rlx_status apply_config(json_t *config, rlx_tokenizer *t) {
    if (!config) return NULL;
    static const struct {
        const char *key;
        rlx_special which;
    } names[] = {{"bos_token", RLX_SPECIAL_BOS}, {"eos_token", RLX_SPECIAL_EOS}, {"unk_token", RLX_SPECIAL_UNK},
                 {"pad_token", RLX_SPECIAL_PAD}, {"sep_token", RLX_SPECIAL_SEP}, {"mask_token", RLX_SPECIAL_MASK}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const char *text = token_text(json_object_get(config, names[i].key));
        int32_t id = text ? rlx_tok_vocab_find(&t->vocab, text, strlen(text)) : RLX_TOKEN_NULL;
        if (id >= 0) t->special[names[i].which] = id;
    }
    RLX_TRY(get_config_bool(config, "add_bos_token", &t->add_bos));
    RLX_TRY(get_config_bool(config, "add_eos_token", &t->add_eos));
    return NULL;
}

rlx_status rlx_tok_apply_hf_config(const char *config_path, rlx_tokenizer *t) {
    if (!config_path) return NULL;
    json_t *config;
    RLX_TRY(load_json(config_path, true, &config));
    rlx_status s = apply_config(config, t);
    json_decref(config);
    return s;
}

/* ---- entry points ---- */

static void hf_free(hf_load *h) {
    json_decref(h->root);
    json_decref(h->config);
    staging_free(&h->st);
    for (uint32_t i = 0; i < RLX_TOK_MAX_REGEX; i++) free(h->owned_regex[i]);
}

static rlx_status finish(rlx_tokenizer *t, hf_load *h, rlx_tokenizer **out) {
    rlx_status s = apply_config(h->config, t);
    if (!s) s = rlx_tok_finish(t, h->what);
    hf_free(h);
    if (s) {
        rlx_tokenizer_close(t);
        return s;
    }
    *out = t;
    return NULL;
}

rlx_status rlx_tok_load_hf_json(const char *path, const char *config_path, rlx_tokenizer **out) {
    hf_load h = {.what = "tokenizer.json"};
    rlx_tokenizer *t = NULL;
    rlx_status s = load_json(path, false, &h.root);
    if (!s && config_path) s = load_json(config_path, true, &h.config);
    if (!s) s = rlx_tok_new(RLX_TOKENIZER_BPE, &t);
    if (!s) s = parse_tokenizer_json(&h, t);
    if (s) {
        hf_free(&h);
        rlx_tokenizer_close(t);
        return s;
    }
    return finish(t, &h, out);
}

/* The slow tokenizer classes whose vocab.json + merges.txt this loader understands. */
static rlx_status class_pretok(hf_load *h, rlx_tokenizer *t) {
    const char *cls = json_string_value(json_object_get(h->config, "tokenizer_class"));
    if (!cls || !strcmp(cls, "GPT2Tokenizer") || !strcmp(cls, "GPT2TokenizerFast") || !strcmp(cls, "CodeGenTokenizer"))
        return add_regex(h, HF_BYTELEVEL_REGEX);
    if (!strcmp(cls, "Qwen2Tokenizer") || !strcmp(cls, "Qwen2TokenizerFast")) {
        t->nfc = true; /* Qwen2Tokenizer normalizes its input to NFC */
        return add_regex(h, QWEN2_REGEX);
    }
    return rlx_errorf(RLX_ERR_UNSUPPORTED, "tokenizer_config.json: tokenizer_class '%s' with vocab.json + merges.txt "
                      "is not supported (supported: GPT2Tokenizer, Qwen2Tokenizer, CodeGenTokenizer)", cls);
}

static rlx_status parse_merges_txt(const char *data, size_t len, rlx_tokenizer *t) {
    uint64_t line = 0;
    for (size_t i = 0; i < len; line++) {
        const char *nl = memchr(data + i, '\n', len - i);
        size_t n = nl ? (size_t)(nl - (data + i)) : len - i;
        const char *s = data + i;
        i += n + 1;
        if (n && s[n - 1] == '\r') n--;
        if (n == 0 || (line == 0 && n >= 8 && !memcmp(s, "#version", 8))) continue;
        rlx_status err = rlx_tok_merges_add_line(&t->merges, s, n);
        if (err) return rlx_status_annotate(err, "merges.txt line %" PRIu64, line + 1);
    }
    return NULL;
}

static rlx_status load_vocab_merges(const char *dir, hf_load *h, rlx_tokenizer *t) {
    char path[4096];
    snprintf(path, sizeof path, "%s/vocab.json", dir);
    RLX_TRY(load_json(path, false, &h->root));
    staging_set_entries(&h->st, json_object_size(h->root) +
                                    json_object_size(json_object_get(h->config, "added_tokens_decoder")));
    RLX_TRY(stage_vocab_object(&h->st, h->root, "vocab.json"));
    RLX_TRY(stage_config_added(h));
    RLX_TRY(class_pretok(h, t));
    RLX_TRY(get_config_bool(h->config, "add_prefix_space", &t->bpe_prefix_space));
    snprintf(path, sizeof path, "%s/merges.txt", dir);
    char *merges;
    size_t len;
    RLX_TRY(rlx_tok_read_file(path, &merges, &len));
    rlx_status s = parse_merges_txt(merges, len, t);
    free(merges);
    RLX_TRY(s);
    RLX_TRY(build_vocab(t, &h->st, "vocab.json"));
    RLX_TRY(rlx_tok_vocab_index(&t->vocab, "vocab.json"));
    return rlx_tok_pretok_regexes(&t->pretok, "vocab.json", h->regex, h->n_regex, true);
}

static bool exists(const char *dir, const char *name, char *path, size_t size) {
    snprintf(path, size, "%s/%s", dir, name);
    struct stat st;
    return stat(path, &st) == 0;
}

rlx_status rlx_tok_load_hf_dir(const char *dir, rlx_tokenizer **out) {
    char path[4096], config[4096], merges[4096];
    const char *config_path = exists(dir, "tokenizer_config.json", config, sizeof config) ? config : NULL;
    char model[4096];
    bool has_model = exists(dir, "tokenizer.model", model, sizeof model);
    if (exists(dir, "tokenizer.json", path, sizeof path)) {
        rlx_status s = rlx_tok_load_hf_json(path, config_path, out);
        /* SentencePiece-style tokenizer.json (Metaspace, byte_fallback) ships beside the
         * tokenizer.model it was made from: use that. */
        if (!s || rlx_status_code(s) != RLX_ERR_UNSUPPORTED || !has_model) return s;
        rlx_status_free(s);
        return rlx_tok_load_spm_model(model, config_path, out);
    }
    if (exists(dir, "vocab.json", path, sizeof path) && exists(dir, "merges.txt", merges, sizeof merges)) {
        hf_load h = {.what = "vocab.json + merges.txt"};
        rlx_tokenizer *t = NULL;
        rlx_status s = config_path ? load_json(config_path, true, &h.config) : NULL;
        if (!s) s = rlx_tok_new(RLX_TOKENIZER_BPE, &t);
        if (!s) s = load_vocab_merges(dir, &h, t);
        if (s) {
            hf_free(&h);
            rlx_tokenizer_close(t);
            return s;
        }
        return finish(t, &h, out);
    }
    if (has_model) return rlx_tok_load_spm_model(model, config_path, out);
    return rlx_errorf(RLX_ERR_NOT_FOUND, "no tokenizer.json, vocab.json + merges.txt, or tokenizer.model in this directory");
}
