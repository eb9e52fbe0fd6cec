/* HF checkpoint -> rlx weights under GGUF names, with the transforms llama.cpp's converter
 * (convert_hf_to_gguf.py) applies, so that a checkpoint and its GGUF conversion give the same
 * tensors. Names follow gguf-py/gguf/tensor_mapping.py; transforms, per family:
 *   llama    q_proj/k_proj rows permuted for the interleaved RoPE layout (LlamaModel.permute);
 *            llama3 rope scaling materialised as `rope_freqs.weight` (generate_extra_tensors)
 *   gemma3   every `*norm.weight` stored as w + 1 (Gemma3Model.norm_shift), q/k norms included
 *   qwen3moe per-expert `mlp.experts.E.{gate,up,down}_proj` stacked into `ffn_*_exps`
 *            (Qwen2MoeModel.modify_tensors); fused `gate_up_proj` split
 *   qwen35   `A_log` -> -exp(A_log); conv1d squeezed; `*norm.weight` + 1 except the linear-attention
 *            norm (Qwen3NextModel.modify_tensors); V heads reordered from grouped to tiled when
 *            key and value head counts differ (_LinearAttentionVReorderBase)
 *   all      tied embeddings: `lm_head.weight` dropped.
 * Stored types: a tensor that is only renamed borrows the safetensors mapping (or is copied when
 * its data is not aligned to its element size, so every weight is naturally aligned). Reordered and
 * stacked tensors are owned copies in the source dtype (a permutation is exact in any dtype).
 * Tensors whose values are computed (norm + 1, -exp, rope_freqs) are owned F32, because the
 * converter computes them in float32 from the bf16/f16 values and the result need not be
 * representable in the source dtype. */
#ifndef RLX_LOADER_HF_CONVERT_H
#define RLX_LOADER_HF_CONVERT_H

#include <stdbool.h>
#include <stddef.h>

#include "loader/format/model_config.h"
#include "rlx/status.h"
#include "loader/format/safetensors.h"
#include "loader/core/weight.h"

/* Owned allocations (names, transformed data) behind a converted weight table. */
typedef struct rlx_hf_arena {
    void **blocks; /* owned, n entries, each owned */
    size_t n, cap;
} rlx_hf_arena;

void rlx_hf_arena_free(rlx_hf_arena *a); /* frees the blocks; the arena itself is caller storage */

/* The GGUF name of one HF tensor for `family` (written to out, cap bytes). Returns NULL with
 * *skip = true for tensors the converter drops (vision towers, MTP heads, rotary inv_freq), and an
 * RLX_ERR_UNSUPPORTED error for a name with no GGUF counterpart. Expert tensors map to their
 * stacked name (`blk.N.ffn_gate_exps.weight`). */
rlx_status rlx_hf_map_name(rlx_family family, const char *name, char *out, size_t cap, bool *skip);

/* Builds the GGUF-named weight table of an HF checkpoint. *out (n_out entries, sorted by name) is
 * malloc'ed; names and transformed data live in `arena`, the rest borrows `st`. */
rlx_status rlx_hf_convert(const rlx_safetensors *st, const rlx_model_config *cfg, rlx_hf_arena *arena,
                          rlx_weight **out, size_t *n_out);

/* llama3 RoPE frequency factors, head_dim/2 of them, computed in float32 step by step as the
 * converter's torch code does (LlamaModel.generate_extra_tensors). */
void rlx_hf_llama3_rope_freqs(const rlx_model_config *cfg, float *out);

#endif
