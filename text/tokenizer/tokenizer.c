/* The public tokenizer API: opening (dispatch to the GGUF and HF loaders), the tables every
 * tokenizer builds after loading, encoding (special-token partition, then the model's algorithm
 * per text fragment) and decoding. Special-token handling follows llama.cpp's llama-vocab.cpp
 * (tokenizer_st_partition, token_to_piece). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <utf8proc.h>

#include "loader/core/regular_file.h"
#include "text/tokenizer/tokenizer.h"
#include "text/tokenizer/tokenizer_utf8.h"

/* End-of-turn / end-of-text tokens by their text: llama.cpp's list (llama_vocab::impl::load),
 * reduced to the formats rlx runs. */
static const char *const EOT_TEXTS[] = {"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>",
                                        "<|end_of_text|>", "<EOT>"};
static const char *const EOG_TEXTS[] = {"<|eot_id|>",      "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>",
                                        "<|end_of_text|>", "<|eom_id|>", "<EOT>"};

rlx_status rlx_tok_new(rlx_tokenizer_kind kind, rlx_tokenizer **out) {
    rlx_tokenizer *t = calloc(1, sizeof *t);
    if (!t) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "tokenizer: out of memory");
    t->kind = kind;
    for (int i = 0; i < RLX_SPECIAL_COUNT; i++) t->special[i] = RLX_TOKEN_NULL;
    *out = t;
    return NULL;
}

void rlx_tokenizer_close(rlx_tokenizer *t) {
    if (!t) return;
    rlx_tok_vocab_free(&t->vocab);
    rlx_tok_merges_free(&t->merges);
    rlx_tok_pretok_free(&t->pretok);
    free(t->eog);
    free(t->specials);
    free(t->description);
    free(t);
}

int rlx_tok_byte_token_value(const char *text, size_t len) {
    if (len != 6 || memcmp(text, "<0x", 3) || text[5] != '>') return -1;
    int v = 0;
    for (int i = 3; i < 5; i++) {
        char c = text[i];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (d < 0) return -1;
        v = v * 16 + d;
    }
    return v;
}

/* ---- tables built after loading ---- */

static bool text_in(const char *s, size_t n, const char *const *list, size_t count) {
    if (n < 3 || s[0] != '<' || s[n - 1] != '>') return false; /* every listed text is <...> */
    for (size_t i = 0; i < count; i++)
        if (strlen(list[i]) == n && !memcmp(list[i], s, n)) return true;
    return false;
}

/* llama.cpp detects EOT/EOG tokens by text and forces them to CONTROL, so that they are neither
 * parsed from plain text nor printed. */
static rlx_status find_eog(rlx_tokenizer *t) {
    rlx_tok_vocab *v = &t->vocab;
    t->eog = calloc(v->n, 1);
    if (!t->eog) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "tokenizer: out of memory for the end-of-generation set");
    for (uint32_t id = 0; id < v->n; id++) {
        const char *s = rlx_tok_text(v, (int32_t)id);
        size_t n = v->text_len[id];
        if (t->special[RLX_SPECIAL_EOT] < 0 && text_in(s, n, EOT_TEXTS, sizeof EOT_TEXTS / sizeof *EOT_TEXTS))
            t->special[RLX_SPECIAL_EOT] = (int32_t)id;
        if (text_in(s, n, EOG_TEXTS, sizeof EOG_TEXTS / sizeof *EOG_TEXTS)) {
            t->eog[id] = 1;
            v->type[id] = RLX_TOKEN_TYPE_CONTROL;
        }
    }
    const rlx_special ends[] = {RLX_SPECIAL_EOS, RLX_SPECIAL_EOT, RLX_SPECIAL_EOM};
    for (size_t i = 0; i < sizeof ends / sizeof *ends; i++)
        if (t->special[ends[i]] >= 0) t->eog[t->special[ends[i]]] = 1;
    return NULL;
}

typedef struct {
    uint32_t len;
    int32_t id;
} len_id;

static int longest_first(const void *a, const void *b) {
    const len_id *x = a, *y = b;
    if (x->len != y->len) return x->len > y->len ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* Tokens matched in the text before the model's algorithm runs, longest first (llama.cpp's
 * cache_special_tokens). */
static rlx_status build_specials(rlx_tokenizer *t) {
    const rlx_tok_vocab *v = &t->vocab;
    len_id *list = malloc((size_t)v->n * sizeof *list);
    if (!list) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "tokenizer: out of memory for the special-token list");
    uint32_t n = 0;
    for (uint32_t id = 0; id < v->n; id++) {
        uint8_t ty = v->type[id];
        if (ty == RLX_TOKEN_TYPE_CONTROL || ty == RLX_TOKEN_TYPE_USER_DEFINED || ty == RLX_TOKEN_TYPE_UNKNOWN)
            list[n++] = (len_id){v->text_len[id], (int32_t)id};
    }
    qsort(list, n, sizeof *list, longest_first);
    t->specials = malloc((n ? n : 1) * sizeof *t->specials);
    if (!t->specials) {
        free(list);
        return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "tokenizer: out of memory for the special-token list");
    }
    for (uint32_t i = 0; i < n; i++) t->specials[i] = list[i].id;
    t->n_specials = n;
    free(list);
    return NULL;
}

/* What a NORMAL token decodes to: byte-level BPE maps each character back to its byte (a
 * character outside GPT-2's table, as in added tokens, stays as it is); SentencePiece and
 * WordPiece turn U+2581 into a space. */
static rlx_status normal_piece(const rlx_tokenizer *t, const char *s, size_t n, rlx_tok_buf *b) {
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        size_t k = rlx_utf8_next(s + i, n - i, &cp);
        if (!k) { /* not UTF-8: keep the byte */
            RLX_TRY(rlx_tok_buf_append(b, s + i, 1));
            i++;
            continue;
        }
        int byte = t->kind == RLX_TOKENIZER_BPE && t->pretok.byte_encode ? rlx_tok_cp_to_byte(cp) : -1;
        if (byte >= 0) {
            char c = (char)byte;
            RLX_TRY(rlx_tok_buf_append(b, &c, 1));
        } else if (t->kind != RLX_TOKENIZER_BPE && cp == 0x2581) {
            RLX_TRY(rlx_tok_buf_append(b, " ", 1));
        } else {
            RLX_TRY(rlx_tok_buf_append(b, s + i, k));
        }
        i += k;
    }
    return NULL;
}

static rlx_status build_pieces(rlx_tokenizer *t) {
    rlx_tok_vocab *v = &t->vocab;
    v->piece_off = malloc((size_t)v->n * sizeof *v->piece_off);
    v->piece_len = malloc((size_t)v->n * sizeof *v->piece_len);
    if (!v->piece_off || !v->piece_len) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "tokenizer: out of memory for pieces");
    for (uint32_t id = 0; id < v->n; id++) {
        const char *s = rlx_tok_text(v, (int32_t)id);
        size_t n = v->text_len[id], start = v->piece.len;
        switch (v->type[id]) {
        case RLX_TOKEN_TYPE_NORMAL:
            RLX_TRY(normal_piece(t, s, n, &v->piece));
            break;
        case RLX_TOKEN_TYPE_BYTE: {
            int b = rlx_tok_byte_token_value(s, n);
            char c = (char)b;
            RLX_TRY(b >= 0 ? rlx_tok_buf_append(&v->piece, &c, 1) : rlx_tok_buf_append(&v->piece, s, n));
            break;
        }
        case RLX_TOKEN_TYPE_CONTROL:
        case RLX_TOKEN_TYPE_UNKNOWN:
        case RLX_TOKEN_TYPE_USER_DEFINED:
            RLX_TRY(rlx_tok_buf_append(&v->piece, s, n));
            break;
        default: /* unused and undefined tokens decode to nothing (llama.cpp) */
            break;
        }
        v->piece_off[id] = start;
        v->piece_len[id] = (uint32_t)(v->piece.len - start);
    }
    return NULL;
}

static rlx_status check_added(const rlx_tokenizer *t, bool add, rlx_special which, const char *add_key,
                              const char *id_key, const char *what) {
    if (add && t->special[which] < 0)
        return rlx_errorf(RLX_ERR_BAD_FILE, "%s: %s is true, but %s is not set (or out of range)", what, add_key, id_key);
    return NULL;
}

static rlx_status describe(rlx_tokenizer *t) {
    char buf[256];
    const char *kind = t->kind == RLX_TOKENIZER_BPE ? "BPE" : t->kind == RLX_TOKENIZER_SPM ? "SentencePiece" : "WordPiece";
    int n = snprintf(buf, sizeof buf, "%s", kind);
    if (t->kind == RLX_TOKENIZER_BPE)
        n += snprintf(buf + n, sizeof buf - (size_t)n, ", pre-tokenizer %s", t->pretok.name ? t->pretok.name : "none");
    if (t->nfc) n += snprintf(buf + n, sizeof buf - (size_t)n, ", NFC");
    n += snprintf(buf + n, sizeof buf - (size_t)n, ", %" PRIu32 " tokens", t->vocab.n);
    if (t->kind == RLX_TOKENIZER_BPE) snprintf(buf + n, sizeof buf - (size_t)n, ", %" PRIu32 " merges", t->merges.n);
    t->description = strdup(buf);
    return t->description ? NULL : rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "tokenizer: out of memory");
}

rlx_status rlx_tok_finish(rlx_tokenizer *t, const char *what) {
    RLX_TRY(rlx_tok_vocab_index(&t->vocab, what));
    if (t->kind == RLX_TOKENIZER_BPE) RLX_TRY(rlx_tok_merges_index(&t->merges));
    for (int i = 0; i < RLX_SPECIAL_COUNT; i++)
        if (t->special[i] >= (int32_t)t->vocab.n) t->special[i] = RLX_TOKEN_NULL;
    RLX_TRY(check_added(t, t->add_bos, RLX_SPECIAL_BOS, "add_bos_token", "the BOS token id", what));
    RLX_TRY(check_added(t, t->add_eos, RLX_SPECIAL_EOS, "add_eos_token", "the EOS token id", what));
    if (t->kind == RLX_TOKENIZER_WPM)
        RLX_TRY(check_added(t, t->add_sep, RLX_SPECIAL_SEP, "add_sep_token", "the SEP token id", what));
    RLX_TRY(find_eog(t));
    RLX_TRY(build_specials(t));
    RLX_TRY(build_pieces(t));
    return describe(t);
}

/* ---- opening ---- */

rlx_status rlx_tok_read_file(const char *path, char **data, size_t *len) {
    RLX_TRY(rlx_file_refuse_special(path)); /* a FIFO would block the read below */
    FILE *f = fopen(path, "rb");
    if (!f) return rlx_errorf(RLX_ERR_IO, "'%s': cannot open: %s", path, strerror(errno));
    rlx_tok_buf b = {0};
    char chunk[65536];
    size_t n;
    rlx_status s = NULL;
    while (!s && (n = fread(chunk, 1, sizeof chunk, f)) > 0) s = rlx_tok_buf_append(&b, chunk, n);
    if (!s && ferror(f)) s = rlx_errorf(RLX_ERR_IO, "'%s': read error: %s", path, strerror(errno));
    if (!s && !b.p) s = rlx_tok_buf_append(&b, "", 0);
    fclose(f);
    if (s) {
        rlx_tok_buf_free(&b);
        return s;
    }
    *data = b.p;
    *len = b.len;
    return NULL;
}

static bool ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && !strcmp(s + n - k, suffix);
}

static rlx_status open_gguf(const char *path, rlx_tokenizer **out) {
    rlx_gguf *g;
    RLX_TRY(rlx_gguf_open(path, &g));
    rlx_status s = rlx_tokenizer_from_gguf(g, out);
    rlx_gguf_close(g);
    return s;
}

static bool starts_with_gguf_magic(const char *path) {
    FILE *f = fopen(path, "rb");
    char magic[4] = {0};
    bool yes = f && fread(magic, 1, 4, f) == 4 && !memcmp(magic, "GGUF", 4);
    if (f) fclose(f);
    return yes;
}

/* The tokenizer_config.json beside a tokenizer file, or NULL (config_buf receives the path). */
static const char *sibling_config(const char *path, char *config_buf, size_t size) {
    const char *slash = strrchr(path, '/');
    int dir_len = slash ? (int)(slash - path) : 1;
    snprintf(config_buf, size, "%.*s/tokenizer_config.json", dir_len, slash ? path : ".");
    struct stat st;
    return stat(config_buf, &st) == 0 ? config_buf : NULL;
}

rlx_status rlx_tokenizer_open(const char *path, rlx_tokenizer **out) {
    if (!path || !out) return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "rlx_tokenizer_open: NULL path or out");
    struct stat st;
    if (stat(path, &st) != 0) return rlx_errorf(RLX_ERR_IO, "tokenizer '%s': %s", path, strerror(errno));
    /* a directory is an HF model; anything else must be a regular file (a FIFO would block) */
    if (!S_ISDIR(st.st_mode)) RLX_TRY(rlx_status_annotate(rlx_file_refuse_special(path), "tokenizer"));
    rlx_status s;
    char config[4096];
    if (S_ISDIR(st.st_mode)) s = rlx_tok_load_hf_dir(path, out);
    else if (starts_with_gguf_magic(path)) s = open_gguf(path, out);
    else if (ends_with(path, ".json")) s = rlx_tok_load_hf_json(path, sibling_config(path, config, sizeof config), out);
    else if (ends_with(path, ".model")) s = rlx_tok_load_spm_model(path, sibling_config(path, config, sizeof config), out);
    else
        s = rlx_errorf(RLX_ERR_BAD_FILE, "not a GGUF file, an HF model directory, a tokenizer.json or a "
                                         "SentencePiece .model file");
    return s ? rlx_status_annotate(s, "tokenizer '%s'", path) : NULL;
}

/* ---- queries ---- */

rlx_tokenizer_kind rlx_tokenizer_get_kind(const rlx_tokenizer *t) { return t->kind; }
const char *rlx_tokenizer_describe(const rlx_tokenizer *t) { return t->description; }
int32_t rlx_tokenizer_vocab_size(const rlx_tokenizer *t) { return (int32_t)t->vocab.n; }
bool rlx_tokenizer_adds_bos(const rlx_tokenizer *t) { return t->add_bos; }

int32_t rlx_tokenizer_special(const rlx_tokenizer *t, rlx_special which) {
    return (unsigned)which < RLX_SPECIAL_COUNT ? t->special[which] : RLX_TOKEN_NULL;
}

bool rlx_tokenizer_is_eog(const rlx_tokenizer *t, int32_t id) {
    return id >= 0 && (uint32_t)id < t->vocab.n && t->eog[id];
}

rlx_token_type rlx_tokenizer_token_type(const rlx_tokenizer *t, int32_t id) {
    return id >= 0 && (uint32_t)id < t->vocab.n ? (rlx_token_type)t->vocab.type[id] : RLX_TOKEN_TYPE_UNDEFINED;
}

const char *rlx_tokenizer_piece(const rlx_tokenizer *t, int32_t id, size_t *len) {
    if (id < 0 || (uint32_t)id >= t->vocab.n) return NULL;
    if (len) *len = t->vocab.text_len[id];
    return rlx_tok_text(&t->vocab, id);
}

int32_t rlx_tokenizer_find(const rlx_tokenizer *t, const char *piece, size_t len) {
    return piece ? rlx_tok_vocab_find(&t->vocab, piece, len) : RLX_TOKEN_NULL;
}

/* ---- encoding ---- */

typedef struct {
    int32_t id; /* RLX_TOKEN_NULL for text */
    size_t off, len;
} fragment;

typedef struct {
    fragment *v;
    size_t n, cap;
} fragment_list;

static rlx_status frag_push(fragment_list *l, int32_t id, size_t off, size_t len) {
    if (id < 0 && len == 0) return NULL;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        fragment *v = realloc(l->v, cap * sizeof *v);
        if (!v) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "tokenizer: out of memory for %zu fragments", cap);
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = (fragment){id, off, len};
    return NULL;
}

static const char *find_bytes(const char *hay, size_t n, const char *needle, size_t k) {
    if (k == 0 || k > n) return NULL;
    const char *end = hay + n - k;
    for (const char *p = hay; p <= end; p++) {
        p = memchr(p, needle[0], (size_t)(end - p) + 1);
        if (!p) return NULL;
        if (!memcmp(p, needle, k)) return p;
    }
    return NULL;
}

static bool is_ascii_space(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

/* Splits the text fragments of *in on every occurrence of token id (llama.cpp's
 * tokenizer_st_partition, one token at a time, longest tokens first). */
static rlx_status split_on(const rlx_tokenizer *t, const char *text, int32_t id, const fragment_list *in,
                           fragment_list *out) {
    const char *tok = rlx_tok_text(&t->vocab, id);
    size_t k = t->vocab.text_len[id];
    uint8_t fl = t->vocab.flags[id];
    out->n = 0;
    for (size_t i = 0; i < in->n; i++) {
        fragment f = in->v[i];
        if (f.id >= 0) {
            RLX_TRY(frag_push(out, f.id, 0, 0));
            continue;
        }
        size_t pos = f.off, end = f.off + f.len;
        const char *m;
        while ((m = find_bytes(text + pos, end - pos, tok, k))) {
            size_t at = (size_t)(m - text), left_end = at;
            if (fl & RLX_TOK_LSTRIP)
                while (left_end > pos && is_ascii_space(text[left_end - 1])) left_end--;
            RLX_TRY(frag_push(out, RLX_TOKEN_NULL, pos, left_end - pos));
            RLX_TRY(frag_push(out, id, 0, 0));
            pos = at + k;
            if (fl & RLX_TOK_RSTRIP)
                while (pos < end && is_ascii_space(text[pos])) pos++;
        }
        RLX_TRY(frag_push(out, RLX_TOKEN_NULL, pos, end - pos));
    }
    return NULL;
}

static rlx_status partition(const rlx_tokenizer *t, const char *text, size_t len, bool parse_special,
                            fragment_list *frags) {
    fragment_list other = {0};
    rlx_status s = frag_push(frags, RLX_TOKEN_NULL, 0, len);
    for (uint32_t i = 0; !s && i < t->n_specials; i++) {
        int32_t id = t->specials[i];
        uint8_t ty = t->vocab.type[id];
        if (!parse_special && (ty == RLX_TOKEN_TYPE_CONTROL || ty == RLX_TOKEN_TYPE_UNKNOWN)) continue;
        s = split_on(t, text, id, frags, &other);
        fragment_list tmp = *frags;
        *frags = other;
        other = tmp;
    }
    free(other.v);
    return s;
}

static rlx_status encode_bpe_fragment(const rlx_tokenizer *t, const char *s, size_t n, rlx_tok_budget *budget,
                                      rlx_tok_ids *out) {
    if (!t->bpe_prefix_space || s[0] == ' ') return rlx_tok_bpe_encode(t, s, n, budget, out);
    rlx_tok_buf b = {0};
    rlx_status st = rlx_tok_buf_append(&b, " ", 1);
    if (!st) st = rlx_tok_buf_append(&b, s, n);
    if (!st) st = rlx_tok_bpe_encode(t, b.p, b.len, budget, out);
    rlx_tok_buf_free(&b);
    return st;
}

/* text is the whole (clean) text of length len: one regex budget serves all its fragments. */
static rlx_status encode_fragments(const rlx_tokenizer *t, const char *text, size_t len, const fragment_list *frags,
                                   unsigned flags, rlx_tok_ids *out) {
    bool add = flags & RLX_ENCODE_ADD_SPECIAL;
    rlx_tok_budget budget = rlx_tok_regex_budget(&t->pretok, len + frags->n); /* + a prefix space each */
    if (add && t->add_bos) RLX_TRY(rlx_tok_ids_push(out, t->special[RLX_SPECIAL_BOS]));
    bool prev_special = true; /* SPM puts a space prefix on the first fragment and after specials */
    for (size_t i = 0; i < frags->n; i++) {
        const fragment *f = &frags->v[i];
        if (f->id >= 0) {
            RLX_TRY(rlx_tok_ids_push(out, f->id));
            prev_special = true;
            continue;
        }
        const char *s = text + f->off;
        if (t->kind == RLX_TOKENIZER_BPE) RLX_TRY(encode_bpe_fragment(t, s, f->len, &budget, out));
        else if (t->kind == RLX_TOKENIZER_SPM) RLX_TRY(rlx_tok_spm_encode(t, s, f->len, t->add_space_prefix && prev_special, out));
        else RLX_TRY(rlx_tok_wpm_encode(t, s, f->len, out));
        prev_special = false;
    }
    if (add && t->add_eos) RLX_TRY(rlx_tok_ids_push(out, t->special[RLX_SPECIAL_EOS]));
    if (add && t->kind == RLX_TOKENIZER_WPM && t->add_sep) RLX_TRY(rlx_tok_ids_push(out, t->special[RLX_SPECIAL_SEP]));
    return NULL;
}

static rlx_status normalize_nfc(char **text, size_t *len) {
    utf8proc_uint8_t *dst = NULL;
    utf8proc_ssize_t n = utf8proc_map((const utf8proc_uint8_t *)*text, (utf8proc_ssize_t)*len, &dst,
                                      UTF8PROC_STABLE | UTF8PROC_COMPOSE);
    if (n < 0) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "NFC normalization failed: %s", utf8proc_errmsg(n));
    free(*text);
    *text = (char *)dst;
    *len = (size_t)n;
    return NULL;
}

rlx_status rlx_tokenizer_encode(const rlx_tokenizer *t, const char *text, size_t len, unsigned flags,
                                int32_t **ids, size_t *n_ids) {
    if (!t || !ids || !n_ids || (!text && len))
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "rlx_tokenizer_encode: NULL tokenizer, text or output");
    char *clean;
    size_t clean_len;
    RLX_TRY(rlx_utf8_sanitize(text ? text : "", len, &clean, &clean_len));
    rlx_status s = t->nfc && clean_len ? normalize_nfc(&clean, &clean_len) : NULL;
    fragment_list frags = {0};
    rlx_tok_ids out = {0};
    if (!s) s = partition(t, clean, clean_len, flags & RLX_ENCODE_PARSE_SPECIAL, &frags);
    if (!s) s = encode_fragments(t, clean, clean_len, &frags, flags, &out);
    if (!s && !out.v) { /* an empty result is still an allocation the caller frees */
        s = rlx_tok_ids_push(&out, 0);
        out.n = 0;
    }
    free(clean);
    free(frags.v);
    if (s) {
        free(out.v);
        return s;
    }
    *ids = out.v;
    *n_ids = out.n;
    return NULL;
}

/* ---- decoding ---- */

rlx_status rlx_tok_decode_piece(const rlx_tokenizer *t, int32_t id, unsigned flags, bool *at_start, const char **bytes,
                                size_t *len) {
    if (id < 0 || (uint32_t)id >= t->vocab.n)
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "token id %" PRId32 " is outside the vocabulary [0, %" PRIu32 ")",
                          id, t->vocab.n);
    uint8_t ty = t->vocab.type[id];
    /* a vocabulary of empty pieces allocates no piece buffer: NULL + 0 is undefined */
    const char *p = t->vocab.piece.p ? t->vocab.piece.p + t->vocab.piece_off[id] : "";
    size_t n = t->vocab.piece_len[id];
    if ((ty == RLX_TOKEN_TYPE_CONTROL || ty == RLX_TOKEN_TYPE_UNKNOWN) && !(flags & RLX_DECODE_SPECIAL)) n = 0;
    if (n && *at_start) {
        /* SentencePiece's decoder drops the space its add_dummy_prefix added; WordPiece's word
         * marker on the first word is the same kind of artefact. */
        bool prefixed = (t->kind == RLX_TOKENIZER_SPM && t->add_space_prefix) || t->kind == RLX_TOKENIZER_WPM;
        if (prefixed && !(flags & RLX_DECODE_CONTINUE) && ty == RLX_TOKEN_TYPE_NORMAL && p[0] == ' ') {
            p++;
            n--;
        }
        *at_start = false;
    }
    *bytes = p;
    *len = n;
    return NULL;
}

rlx_status rlx_tokenizer_decode(const rlx_tokenizer *t, const int32_t *ids, size_t n_ids, unsigned flags,
                                char **text, size_t *len) {
    if (!t || !text || !len || (!ids && n_ids))
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "rlx_tokenizer_decode: NULL tokenizer, ids or output");
    rlx_tok_buf b = {0};
    bool at_start = true;
    rlx_status s = rlx_tok_buf_append(&b, "", 0);
    for (size_t i = 0; !s && i < n_ids; i++) {
        const char *p = NULL;
        size_t n = 0;
        s = rlx_tok_decode_piece(t, ids[i], flags, &at_start, &p, &n);
        if (s) s = rlx_status_annotate(s, "ids[%zu]", i);
        else s = rlx_tok_buf_append(&b, p, n);
    }
    if (s) {
        rlx_tok_buf_free(&b);
        return s;
    }
    *text = b.p;
    *len = b.len;
    return NULL;
}
