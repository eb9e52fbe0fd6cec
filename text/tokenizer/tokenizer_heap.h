/* A binary min-heap of fixed-size items ordered by a caller's "before" function: the priority
 * queue of pending merges that the BPE and SentencePiece tokenizers share. */
#ifndef RLX_TEXT_TOKENIZER_HEAP_H
#define RLX_TEXT_TOKENIZER_HEAP_H

#include <stdbool.h>
#include <stddef.h>

#include "rlx/status.h"

typedef bool (*rlx_tok_heap_before_fn)(const void *a, const void *b);

typedef struct {
    unsigned char *items;          /* owned, cap items of item_size bytes */
    size_t n, cap;
    size_t item_size;
    rlx_tok_heap_before_fn before; /* true when a must come out before b */
    const char *what;              /* names the tokenizer in the out-of-memory message */
} rlx_tok_heap;

/* Adds a copy of *item (item_size bytes). */
rlx_status rlx_tok_heap_push(rlx_tok_heap *h, const void *item);
/* Moves the first item into *out; h->n must be > 0. */
void rlx_tok_heap_pop(rlx_tok_heap *h, void *out);
void rlx_tok_heap_free(rlx_tok_heap *h);

#endif
