/* What the safetensors fuzz targets check of every tensor set they open. Header-only: each target
 * is its own program. */
#ifndef RLX_FUZZ_UTIL_H
#define RLX_FUZZ_UTIL_H

#include <stdint.h>
#include <stdlib.h>

#include "loader/format/safetensors.h"

/* Reads the first and last byte of every tensor (the reader proved they lie inside the input; a
 * sanitized build checks it) into *sink, and aborts unless each name finds its own tensor (names
 * are unique and sorted). */
static inline void fuzz_touch_safetensors(const rlx_safetensors *st, volatile uint8_t *sink) {
    for (size_t i = 0; i < st->n_tensors; i++) {
        const rlx_st_tensor *t = &st->tensors[i];
        if (t->nbytes) *sink ^= t->data[0] ^ t->data[t->nbytes - 1];
        if (rlx_safetensors_find(st, t->name) != t) abort();
    }
}

#endif
