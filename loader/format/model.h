/* A model on the host: its family config and its weights under rlx's one naming convention
 * (GGUF's: `token_embd.weight`, `blk.N.attn_q.weight`, ...), whatever file it came from.
 *
 * From a GGUF file, weights point into the mmap. From an HF directory (config.json +
 * *.safetensors, single or sharded), HF names are mapped to GGUF names and llama.cpp's converter
 * transforms are applied, so the two sources give the same tensors:
 *   - llama Q/K rows permuted for the interleaved RoPE layout;
 *   - Gemma (1+w) norms stored as w+1;
 *   - qwen3moe experts stacked into `blk.N.ffn_{gate,up,down}_exps.weight`;
 *   - llama3 RoPE scaling materialised as `rope_freqs.weight`;
 *   - tied embeddings: no `output.weight`.
 * Transformed tensors are owned by the rlx_model; the rest borrow the mapping. */
#ifndef RLX_LOADER_MODEL_H
#define RLX_LOADER_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "loader/format/gguf.h"
#include "loader/format/model_config.h"
#include "loader/core/weight.h"
#include "rlx/status.h"



typedef enum { RLX_MODEL_GGUF, RLX_MODEL_HF_DIR } rlx_model_source;

typedef struct rlx_model rlx_model;
struct rlx_model {
    rlx_model_source source;
    char *path;                /* owned */
    rlx_model_config config;
    rlx_weight *weights;       /* owned, n_weights, sorted by name */
    size_t n_weights;
    rlx_gguf *gguf;            /* owned when source == RLX_MODEL_GGUF, else NULL */
    void *hf_;                 /* owned: safetensors mappings and parsed JSON of an HF directory */
};

/* `path` is a .gguf file or a directory with config.json. Fills config, weights and checks that
 * every tensor the family needs exists with the shape the config implies, and that every tensor
 * present is one the family reads (or a multi-token-prediction tensor, which none reads yet:
 * those are left out of `weights`, so they are never uploaded). */
rlx_status rlx_model_open(const char *path, rlx_model **out);
void rlx_model_close(rlx_model *m); /* NULL is fine */
const rlx_weight *rlx_model_weight(const rlx_model *m, const char *name); /* NULL if absent */
uint64_t rlx_model_n_params(const rlx_model *m);

#endif
