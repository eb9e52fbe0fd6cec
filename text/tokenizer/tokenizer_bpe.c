/* Byte-level BPE (GGUF tokenizer model "gpt2"): pre-tokenize into words, then merge each word's
 * characters pair by pair, always applying the adjacent pair of lowest merge rank first (leftmost
 * on ties), until no adjacent pair is a merge. Semantics of llama.cpp's llm_tokenizer_bpe_session,
 * which HF tokenizers' BPE model also follows. A priority queue keyed by rank keeps the loop
 * O(n log n) per word; entries made stale by an earlier merge are skipped when popped. */
#include <stdlib.h>
#include <string.h>

#include "text/tokenizer/tokenizer.h"
#include "text/tokenizer/tokenizer_heap.h"
#include "text/tokenizer/tokenizer_utf8.h"

typedef struct {
    int32_t prev, next; /* neighbours in the word, -1 at the ends */
    uint32_t off, n;    /* bytes of the word this symbol covers; n = 0 once merged away */
} bpe_sym;

typedef struct {
    int32_t left, right;
    int32_t rank;
    uint32_t left_n, right_n; /* sizes when queued: a popped entry whose sizes changed is stale */
} bpe_pair;

typedef struct {
    bpe_sym *sym;
    size_t n_sym, cap_sym;
    rlx_tok_heap heap; /* of bpe_pair */
} bpe_work;

static bool pair_before(const void *pa, const void *pb) {
    const bpe_pair *a = pa, *b = pb;
    return a->rank < b->rank || (a->rank == b->rank && a->left < b->left);
}

static rlx_status try_pair(const rlx_tokenizer *t, const char *word, bpe_work *w, int32_t left, int32_t right) {
    if (left < 0 || right < 0) return NULL;
    const bpe_sym *l = &w->sym[left], *r = &w->sym[right];
    int32_t rank = rlx_tok_merges_rank(&t->merges, word + l->off, l->n, word + r->off, r->n);
    if (rank < 0) return NULL;
    bpe_pair p = {left, right, rank, l->n, r->n};
    return rlx_tok_heap_push(&w->heap, &p);
}

static rlx_status split_chars(const char *word, size_t len, bpe_work *w) {
    w->n_sym = 0;
    for (size_t off = 0; off < len;) {
        size_t n = rlx_utf8_lead_len((uint8_t)word[off]);
        if (n > len - off) n = len - off;
        if (w->n_sym == w->cap_sym) {
            size_t cap = w->cap_sym ? w->cap_sym * 2 : 64;
            bpe_sym *s = realloc(w->sym, cap * sizeof *s);
            if (!s) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "BPE: out of memory for %zu symbols", cap);
            w->sym = s;
            w->cap_sym = cap;
        }
        int32_t i = (int32_t)w->n_sym++;
        w->sym[i] = (bpe_sym){i - 1, off + n == len ? -1 : i + 1, (uint32_t)off, (uint32_t)n};
        off += n;
    }
    return NULL;
}

/* A symbol that is not a token (only possible when the vocabulary lacks a merge's result or a
 * base character) falls back to its characters, each as a token when it is one. */
static rlx_status emit_symbol(const rlx_tokenizer *t, const char *s, size_t n, rlx_tok_ids *out) {
    int32_t id = rlx_tok_vocab_find(&t->vocab, s, n);
    if (id >= 0) return rlx_tok_ids_push(out, id);
    for (size_t i = 0; i < n;) {
        size_t k = rlx_utf8_lead_len((uint8_t)s[i]);
        if (k > n - i) k = n - i;
        id = rlx_tok_vocab_find(&t->vocab, s + i, k);
        if (id >= 0) RLX_TRY(rlx_tok_ids_push(out, id));
        i += k;
    }
    return NULL;
}

static rlx_status encode_word(const rlx_tokenizer *t, const char *word, size_t len, bpe_work *w,
                              rlx_tok_ids *out) {
    if (t->ignore_merges) {
        int32_t id = rlx_tok_vocab_find(&t->vocab, word, len);
        if (id >= 0) return rlx_tok_ids_push(out, id);
    }
    RLX_TRY(split_chars(word, len, w));
    w->heap.n = 0;
    for (size_t i = 1; i < w->n_sym; i++) RLX_TRY(try_pair(t, word, w, (int32_t)i - 1, (int32_t)i));
    while (w->heap.n) {
        bpe_pair p;
        rlx_tok_heap_pop(&w->heap, &p);
        bpe_sym *l = &w->sym[p.left], *r = &w->sym[p.right];
        if (l->n != p.left_n || r->n != p.right_n || l->n == 0 || r->n == 0) continue;
        l->n += r->n;
        r->n = 0;
        l->next = r->next;
        if (r->next >= 0) w->sym[r->next].prev = p.left;
        RLX_TRY(try_pair(t, word, w, l->prev, p.left));
        RLX_TRY(try_pair(t, word, w, p.left, l->next));
    }
    for (int32_t i = w->n_sym ? 0 : -1; i >= 0; i = w->sym[i].next)
        RLX_TRY(emit_symbol(t, word + w->sym[i].off, w->sym[i].n, out));
    return NULL;
}

rlx_status rlx_tok_bpe_encode(const rlx_tokenizer *t, const char *text, size_t len, rlx_tok_budget *budget,
                              rlx_tok_ids *out) {
    rlx_tok_words words = {0};
    bpe_work w = {.heap = {.item_size = sizeof(bpe_pair), .before = pair_before, .what = "BPE"}};
    rlx_status s = rlx_tok_pretok_split(&t->pretok, text, len, budget, &words);
    for (size_t i = 0; !s && i < words.n; i++) s = encode_word(t, words.bytes.p + words.off[i], words.len[i], &w, out);
    rlx_tok_words_free(&words);
    free(w.sym);
    rlx_tok_heap_free(&w.heap);
    return s;
}
