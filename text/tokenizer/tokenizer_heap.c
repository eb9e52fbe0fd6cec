#include "text/tokenizer/tokenizer_heap.h"

#include <stdlib.h>
#include <string.h>

static unsigned char *at(const rlx_tok_heap *h, size_t i) {
    return h->items + i * h->item_size;
}

static rlx_status grow(rlx_tok_heap *h) {
    size_t cap = h->cap ? h->cap * 2 : 64;
    unsigned char *items = realloc(h->items, cap * h->item_size);
    if (!items) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "%s: out of memory for %zu pairs", h->what, cap);
    h->items = items;
    h->cap = cap;
    return NULL;
}

rlx_status rlx_tok_heap_push(rlx_tok_heap *h, const void *item) {
    if (h->n == h->cap) RLX_TRY(grow(h));
    size_t i = h->n++;
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!h->before(item, at(h, parent))) break;
        memcpy(at(h, i), at(h, parent), h->item_size);
        i = parent;
    }
    memcpy(at(h, i), item, h->item_size);
    return NULL;
}

void rlx_tok_heap_pop(rlx_tok_heap *h, void *out) {
    memcpy(out, at(h, 0), h->item_size);
    /* the last item sifts down from the root; it stays readable at index n, past every slot the
     * sift writes */
    size_t n = --h->n, i = 0;
    const unsigned char *last = at(h, n);
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && h->before(at(h, c + 1), at(h, c))) c++;
        if (!h->before(at(h, c), last)) break;
        memcpy(at(h, i), at(h, c), h->item_size);
        i = c;
    }
    if (n) memcpy(at(h, i), last, h->item_size);
}

void rlx_tok_heap_free(rlx_tok_heap *h) {
    free(h->items);
    h->items = NULL;
    h->n = h->cap = 0;
}
