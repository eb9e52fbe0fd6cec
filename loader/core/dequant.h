/* Dequantization of stored tensor types to f32: F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0,
 * Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, Q8_K (exactly the types whose rlx_dtype_info.can_dequantize is
 * true). Block layouts are ggml's (llama.cpp ggml/src/ggml-common.h); the arithmetic matches
 * ggml's reference dequantize_row_* and gguf-py's quants.py, so results are bit-identical.
 *
 * Allocation-free and reentrant: the CPU backend calls rlx_dequantize per row in hot loops.
 * Sources need no alignment (GGUF blocks sit at any byte offset). */
#ifndef RLX_LOADER_DEQUANT_H
#define RLX_LOADER_DEQUANT_H

#include <stdint.h>

#include "loader/core/dtype.h"
#include "rlx/status.h"

/* Dequantizes n elements (n / block_size blocks) from src into dst. Preconditions, which it
 * asserts: type can be dequantized and n is a multiple of its block size. */
void rlx_dequantize(uint32_t type, const void *src, float *dst, uint64_t n);

/* Checked form for data of unknown origin: errors when the type is unknown or cannot be
 * dequantized (RLX_ERR_UNSUPPORTED), when n is not a multiple of the block size, or when src_bytes
 * holds fewer than n elements (RLX_ERR_INVALID_ARGUMENT). `what` names the tensor in messages. */
rlx_status rlx_dequantize_tensor(uint32_t type, const void *src, uint64_t src_bytes, float *dst, uint64_t n,
                                 const char *what);

#endif
