/* Vocabulary (id <-> text) and BPE merge-rank tables: open-addressing hashes over byte strings,
 * so that the merge loop looks pairs up without building strings. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text/tokenizer/tokenizer.h"

rlx_status rlx_tok_buf_append(rlx_tok_buf *b, const void *data, size_t n) {
    if (n > SIZE_MAX - b->len - 1) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "tokenizer buffer overflow");
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap < b->len + n + 1) {
            if (cap > SIZE_MAX / 2) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "tokenizer buffer overflow");
            cap *= 2;
        }
        char *p = realloc(b->p, cap);
        if (!p) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "tokenizer: out of memory growing a buffer to %zu bytes", cap);
        b->p = p;
        b->cap = cap;
    }
    if (n) memcpy(b->p + b->len, data, n);
    b->len += n;
    b->p[b->len] = '\0'; /* keeps the buffer a C string; the NUL is not counted */
    return NULL;
}

void rlx_tok_buf_free(rlx_tok_buf *b) {
    free(b->p);
    *b = (rlx_tok_buf){0};
}

rlx_status rlx_tok_ids_push(rlx_tok_ids *ids, int32_t id) {
    if (ids->n == ids->cap) {
        size_t cap = ids->cap ? ids->cap * 2 : 64;
        if (cap > SIZE_MAX / sizeof *ids->v) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "token list overflow");
        int32_t *v = realloc(ids->v, cap * sizeof *v);
        if (!v) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "tokenizer: out of memory for %zu token ids", cap);
        ids->v = v;
        ids->cap = cap;
    }
    ids->v[ids->n++] = id;
    return NULL;
}

/* FNV-1a, 64-bit, continued from seed (pass the FNV offset basis to start). */
uint64_t rlx_tok_hash(const char *s, size_t n, uint64_t seed) {
    uint64_t h = seed;
    for (size_t i = 0; i < n; i++) {
        h ^= (uint8_t)s[i];
        h *= 0x100000001B3ull;
    }
    return h;
}

#define FNV_BASIS 0xCBF29CE484222325ull

/* A power-of-two table at least twice the entry count, so probes stay short. */
static rlx_status alloc_slots(uint32_t n, uint32_t **slots, uint32_t *mask, const char *what) {
    uint64_t cap = 16;
    while (cap < 2 * (uint64_t)n) cap *= 2;
    if (cap > UINT32_MAX) return rlx_errorf(RLX_ERR_BAD_FILE, "%s: %" PRIu32 " entries are too many", what, n);
    *slots = calloc((size_t)cap, sizeof **slots);
    if (!*slots) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "%s: out of memory for a %" PRIu64 "-slot table", what, cap);
    *mask = (uint32_t)(cap - 1);
    return NULL;
}

/* ---- vocabulary ---- */

rlx_status rlx_tok_vocab_init(rlx_tok_vocab *v, uint32_t n) {
    *v = (rlx_tok_vocab){0};
    if (n == 0 || n > (uint32_t)INT32_MAX)
        return rlx_errorf(RLX_ERR_BAD_FILE, "vocabulary of %" PRIu32 " tokens (expected 1 .. %d)", n, INT32_MAX);
    v->n = n;
    v->text_off = malloc(n * sizeof *v->text_off);
    v->text_len = calloc(n, sizeof *v->text_len);
    v->score = calloc(n, sizeof *v->score);
    v->type = calloc(n, sizeof *v->type);
    v->flags = calloc(n, sizeof *v->flags);
    if (!v->text_off || !v->text_len || !v->score || !v->type || !v->flags) {
        rlx_tok_vocab_free(v);
        return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "vocabulary of %" PRIu32 " tokens: out of memory", n);
    }
    for (uint32_t i = 0; i < n; i++) v->text_off[i] = SIZE_MAX;
    return NULL;
}

rlx_status rlx_tok_vocab_set(rlx_tok_vocab *v, uint32_t id, const char *text, size_t len, float score,
                             uint8_t type) {
    if (id >= v->n)
        return rlx_errorf(RLX_ERR_BAD_FILE, "token id %" PRIu32 " ('%.*s') is outside the vocabulary of %" PRIu32,
                          id, (int)(len > 64 ? 64 : len), text, v->n);
    if (v->text_off[id] != SIZE_MAX)
        return rlx_errorf(RLX_ERR_BAD_FILE, "token id %" PRIu32 " is given twice: '%s' and '%.*s'", id,
                          rlx_tok_text(v, (int32_t)id), (int)(len > 64 ? 64 : len), text);
    if (len > UINT32_MAX) return rlx_errorf(RLX_ERR_BAD_FILE, "token id %" PRIu32 ": text of %zu bytes", id, len);
    size_t off = v->text.len;
    RLX_TRY(rlx_tok_buf_append(&v->text, text, len));
    RLX_TRY(rlx_tok_buf_append(&v->text, "", 1)); /* each text NUL-terminated in place */
    v->text_off[id] = off;
    v->text_len[id] = (uint32_t)len;
    v->score[id] = score;
    v->type[id] = type;
    return NULL;
}

static rlx_status set_placeholder(rlx_tok_vocab *v, uint32_t id, const char *fmt, uint8_t type) {
    char name[32];
    int n = snprintf(name, sizeof name, fmt, id);
    size_t off = v->text.len;
    RLX_TRY(rlx_tok_buf_append(&v->text, name, (size_t)n + 1));
    v->text_off[id] = off;
    v->text_len[id] = (uint32_t)n;
    v->type[id] = type;
    return NULL;
}

int32_t rlx_tok_vocab_find(const rlx_tok_vocab *v, const char *s, size_t len) {
    if (!v->slots) return RLX_TOKEN_NULL;
    uint32_t i = (uint32_t)rlx_tok_hash(s, len, FNV_BASIS) & v->mask;
    for (;; i = (i + 1) & v->mask) {
        uint32_t e = v->slots[i];
        if (!e) return RLX_TOKEN_NULL;
        uint32_t id = e - 1;
        if (v->text_len[id] == len && !memcmp(v->text.p + v->text_off[id], s, len)) return (int32_t)id;
    }
}

rlx_status rlx_tok_vocab_index(rlx_tok_vocab *v, const char *what) {
    for (uint32_t id = 0; id < v->n; id++) {
        if (v->text_off[id] == SIZE_MAX) RLX_TRY(set_placeholder(v, id, "[PAD%" PRIu32 "]", RLX_TOKEN_TYPE_UNUSED));
        else if (v->text_len[id] == 0) {
            /* llama.cpp renames empty tokens so that every token has a findable text. */
            uint8_t type = v->type[id];
            RLX_TRY(set_placeholder(v, id, "[EMPTY_%" PRIu32 "]", type));
        }
    }
    free(v->slots);
    RLX_TRY(alloc_slots(v->n, &v->slots, &v->mask, what));
    v->max_len = 0;
    for (uint32_t id = 0; id < v->n; id++) {
        const char *s = v->text.p + v->text_off[id];
        size_t len = v->text_len[id];
        if (len > v->max_len) v->max_len = (uint32_t)len;
        uint32_t i = (uint32_t)rlx_tok_hash(s, len, FNV_BASIS) & v->mask;
        for (; v->slots[i]; i = (i + 1) & v->mask) {
            uint32_t other = v->slots[i] - 1;
            if (v->text_len[other] == len && !memcmp(v->text.p + v->text_off[other], s, len))
                return rlx_errorf(RLX_ERR_BAD_FILE, "%s: duplicate token in vocabulary: '%.*s' has ids %" PRIu32
                                  " and %" PRIu32, what, (int)(len > 64 ? 64 : len), s, other, id);
        }
        v->slots[i] = id + 1;
    }
    return NULL;
}

void rlx_tok_vocab_free(rlx_tok_vocab *v) {
    rlx_tok_buf_free(&v->text);
    rlx_tok_buf_free(&v->piece);
    free(v->text_off);
    free(v->text_len);
    free(v->score);
    free(v->type);
    free(v->flags);
    free(v->slots);
    free(v->piece_off);
    free(v->piece_len);
    *v = (rlx_tok_vocab){0};
}

/* ---- merges ---- */

static uint64_t pair_hash(const char *l, size_t ll, const char *r, size_t rl) {
    /* The 0xFF between the halves never occurs in UTF-8, so ("ab","c") and ("a","bc") differ. */
    uint64_t h = rlx_tok_hash(l, ll, FNV_BASIS);
    h = rlx_tok_hash("\xFF", 1, h);
    return rlx_tok_hash(r, rl, h);
}

rlx_status rlx_tok_merges_add(rlx_tok_merges *m, const char *left, size_t left_len, const char *right,
                              size_t right_len) {
    if (m->n == UINT32_MAX - 1 || left_len > UINT32_MAX || right_len > UINT32_MAX)
        return rlx_errorf(RLX_ERR_BAD_FILE, "too many or too long BPE merges");
    if (m->n == m->cap) {
        uint32_t cap = m->cap ? (m->cap > UINT32_MAX / 2 ? UINT32_MAX - 1 : m->cap * 2) : 1024;
        size_t *off = realloc(m->off, (size_t)cap * sizeof *off);
        if (off) m->off = off;
        uint32_t *ll = realloc(m->left_len, (size_t)cap * sizeof *ll);
        if (ll) m->left_len = ll;
        uint32_t *rl = realloc(m->right_len, (size_t)cap * sizeof *rl);
        if (rl) m->right_len = rl;
        if (!off || !ll || !rl) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "BPE merges: out of memory at %" PRIu32, cap);
        m->cap = cap;
    }
    m->off[m->n] = m->text.len;
    RLX_TRY(rlx_tok_buf_append(&m->text, left, left_len));
    RLX_TRY(rlx_tok_buf_append(&m->text, right, right_len));
    m->left_len[m->n] = (uint32_t)left_len;
    m->right_len[m->n] = (uint32_t)right_len;
    m->n++;
    return NULL;
}

rlx_status rlx_tok_merges_add_line(rlx_tok_merges *m, const char *line, size_t len) {
    /* llama.cpp splits at word.find(' ', 1), so a part may itself start with a space. */
    const char *sp = len > 1 ? memchr(line + 1, ' ', len - 1) : NULL;
    if (!sp) return rlx_errorf(RLX_ERR_BAD_FILE, "merge '%.*s' has no space between its two parts", (int)(len > 64 ? 64 : len), line);
    size_t ll = (size_t)(sp - line);
    return rlx_tok_merges_add(m, line, ll, sp + 1, len - ll - 1);
}

int32_t rlx_tok_merges_rank(const rlx_tok_merges *m, const char *left, size_t left_len, const char *right,
                            size_t right_len) {
    if (!m->slots) return -1;
    uint32_t i = (uint32_t)pair_hash(left, left_len, right, right_len) & m->mask;
    for (;; i = (i + 1) & m->mask) {
        uint32_t e = m->slots[i];
        if (!e) return -1;
        uint32_t r = e - 1;
        const char *t = m->text.p + m->off[r];
        if (m->left_len[r] == left_len && m->right_len[r] == right_len && !memcmp(t, left, left_len) &&
            !memcmp(t + left_len, right, right_len))
            return (int32_t)r;
    }
}

rlx_status rlx_tok_merges_index(rlx_tok_merges *m) {
    free(m->slots);
    m->slots = NULL;
    uint32_t *slots = NULL, mask = 0;
    RLX_TRY(alloc_slots(m->n, &slots, &mask, "BPE merges"));
    m->slots = slots;
    m->mask = mask;
    for (uint32_t r = 0; r < m->n; r++) {
        const char *t = m->text.p + m->off[r];
        uint32_t ll = m->left_len[r], rl = m->right_len[r];
        /* emplace semantics: a repeated pair keeps its first (best) rank. */
        if (rlx_tok_merges_rank(m, t, ll, t + ll, rl) >= 0) continue;
        uint32_t i = (uint32_t)pair_hash(t, ll, t + ll, rl) & mask;
        while (slots[i]) i = (i + 1) & mask;
        slots[i] = r + 1;
    }
    return NULL;
}

void rlx_tok_merges_free(rlx_tok_merges *m) {
    rlx_tok_buf_free(&m->text);
    free(m->off);
    free(m->left_len);
    free(m->right_len);
    free(m->slots);
    *m = (rlx_tok_merges){0};
}
