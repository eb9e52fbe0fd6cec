/* SentencePiece-style tokenization (GGUF tokenizer model "llama"), with llama.cpp's
 * llm_tokenizer_spm semantics: spaces become U+2581, the text is split into characters, and the
 * adjacent pair whose concatenation is the highest-scoring token (leftmost on ties) is merged
 * until no adjacent pair forms a token. A character that is not a token falls back to its bytes
 * as <0xNN> tokens. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text/tokenizer/tokenizer.h"
#include "text/tokenizer/tokenizer_heap.h"
#include "text/tokenizer/tokenizer_utf8.h"

#define SPACE_MARK "\xE2\x96\x81" /* U+2581 LOWER ONE EIGHTH BLOCK, SentencePiece's space */

typedef struct {
    int32_t prev, next;
    uint32_t off, n; /* n = 0 once merged into its left neighbour */
} spm_sym;

typedef struct {
    int32_t left, right;
    float score;
    uint32_t size; /* bytes of the pair when queued; a popped pair of another size is stale */
} spm_pair;

typedef struct {
    const char *text;
    spm_sym *sym;
    size_t n_sym;
    rlx_tok_heap heap; /* of spm_pair */
} spm_work;

static bool pair_before(const void *pa, const void *pb) {
    const spm_pair *a = pa, *b = pb;
    return a->score > b->score || (a->score == b->score && a->left < b->left);
}

static rlx_status try_pair(const rlx_tokenizer *t, spm_work *w, int32_t left, int32_t right) {
    if (left < 0 || right < 0) return NULL;
    const spm_sym *l = &w->sym[left], *r = &w->sym[right];
    int32_t id = rlx_tok_vocab_find(&t->vocab, w->text + l->off, (size_t)l->n + r->n);
    if (id < 0) return NULL;
    spm_pair p = {left, right, t->vocab.score[id], l->n + r->n};
    return rlx_tok_heap_push(&w->heap, &p);
}

/* llama_vocab::byte_to_token for SPM: <0xNN>, else the byte itself as a one-byte token; rlx adds
 * the unknown token as a last resort where llama.cpp would throw. */
static rlx_status emit_byte(const rlx_tokenizer *t, uint8_t b, rlx_tok_ids *out) {
    char hex[8];
    snprintf(hex, sizeof hex, "<0x%02X>", b);
    int32_t id = rlx_tok_vocab_find(&t->vocab, hex, 6);
    if (id < 0) id = rlx_tok_vocab_find(&t->vocab, (const char *)&b, 1);
    if (id < 0) id = t->special[RLX_SPECIAL_UNK];
    return id >= 0 ? rlx_tok_ids_push(out, id) : NULL;
}

static rlx_status escape_spaces(const char *text, size_t len, bool space_prefix, rlx_tok_buf *b) {
    if (space_prefix) RLX_TRY(rlx_tok_buf_append(b, SPACE_MARK, 3));
    for (size_t i = 0; i < len;) {
        const char *sp = memchr(text + i, ' ', len - i);
        size_t run = sp ? (size_t)(sp - (text + i)) : len - i;
        RLX_TRY(rlx_tok_buf_append(b, text + i, run));
        i += run;
        if (sp) {
            RLX_TRY(rlx_tok_buf_append(b, SPACE_MARK, 3));
            i++;
        }
    }
    return NULL;
}

static rlx_status merge_all(const rlx_tokenizer *t, spm_work *w, size_t len) {
    for (size_t off = 0; off < len;) {
        size_t n = rlx_utf8_lead_len((uint8_t)w->text[off]);
        if (n > len - off) n = len - off;
        int32_t i = (int32_t)w->n_sym++;
        w->sym[i] = (spm_sym){i - 1, off + n == len ? -1 : i + 1, (uint32_t)off, (uint32_t)n};
        off += n;
    }
    for (size_t i = 1; i < w->n_sym; i++) RLX_TRY(try_pair(t, w, (int32_t)i - 1, (int32_t)i));
    while (w->heap.n) {
        spm_pair p;
        rlx_tok_heap_pop(&w->heap, &p);
        spm_sym *l = &w->sym[p.left], *r = &w->sym[p.right];
        if (l->n == 0 || r->n == 0 || l->n + r->n != p.size) continue;
        l->n += r->n;
        r->n = 0;
        l->next = r->next;
        if (r->next >= 0) w->sym[r->next].prev = p.left;
        RLX_TRY(try_pair(t, w, l->prev, p.left));
        RLX_TRY(try_pair(t, w, p.left, l->next));
    }
    return NULL;
}

rlx_status rlx_tok_spm_encode(const rlx_tokenizer *t, const char *text, size_t len, bool space_prefix,
                              rlx_tok_ids *out) {
    rlx_tok_buf b = {0};
    spm_work w = {.heap = {.item_size = sizeof(spm_pair), .before = pair_before, .what = "SentencePiece"}};
    rlx_status s = escape_spaces(text, len, space_prefix, &b);
    if (!s && b.len) {
        w.text = b.p;
        w.sym = malloc(b.len * sizeof *w.sym); /* at most one symbol per byte */
        if (!w.sym) s = rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "SentencePiece: out of memory for %zu symbols", b.len);
    }
    if (!s && b.len) s = merge_all(t, &w, b.len);
    for (int32_t i = (!s && w.n_sym) ? 0 : -1; !s && i >= 0; i = w.sym[i].next) {
        const spm_sym *sym = &w.sym[i];
        int32_t id = rlx_tok_vocab_find(&t->vocab, w.text + sym->off, sym->n);
        if (id >= 0) {
            s = rlx_tok_ids_push(out, id);
            continue;
        }
        for (uint32_t k = 0; !s && k < sym->n; k++) s = emit_byte(t, (uint8_t)w.text[sym->off + k], out);
    }
    rlx_tok_buf_free(&b);
    free(w.sym);
    rlx_tok_heap_free(&w.heap);
    return s;
}
