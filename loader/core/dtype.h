/* Tensor storage types. The numbering is GGUF's (ggml_type), so a GGUF tensor-info type field is
 * an rlx_dtype as-is; safetensors dtypes map onto the same enum. */
#ifndef RLX_LOADER_DTYPE_H
#define RLX_LOADER_DTYPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rlx/status.h"

typedef enum {
    RLX_DTYPE_F32 = 0,
    RLX_DTYPE_F16 = 1,
    RLX_DTYPE_Q4_0 = 2,
    RLX_DTYPE_Q4_1 = 3,
    RLX_DTYPE_Q5_0 = 6,
    RLX_DTYPE_Q5_1 = 7,
    RLX_DTYPE_Q8_0 = 8,
    RLX_DTYPE_Q8_1 = 9,
    RLX_DTYPE_Q2_K = 10,
    RLX_DTYPE_Q3_K = 11,
    RLX_DTYPE_Q4_K = 12,
    RLX_DTYPE_Q5_K = 13,
    RLX_DTYPE_Q6_K = 14,
    RLX_DTYPE_Q8_K = 15,
    RLX_DTYPE_IQ2_XXS = 16,
    RLX_DTYPE_IQ2_XS = 17,
    RLX_DTYPE_IQ3_XXS = 18,
    RLX_DTYPE_IQ1_S = 19,
    RLX_DTYPE_IQ4_NL = 20,
    RLX_DTYPE_IQ3_S = 21,
    RLX_DTYPE_IQ2_S = 22,
    RLX_DTYPE_IQ4_XS = 23,
    RLX_DTYPE_I8 = 24,
    RLX_DTYPE_I16 = 25,
    RLX_DTYPE_I32 = 26,
    RLX_DTYPE_I64 = 27,
    RLX_DTYPE_F64 = 28,
    RLX_DTYPE_IQ1_M = 29,
    RLX_DTYPE_BF16 = 30,
    RLX_DTYPE_TQ1_0 = 34,
    RLX_DTYPE_TQ2_0 = 35,
    RLX_DTYPE_MXFP4 = 39,
    RLX_DTYPE_COUNT = 40, /* one past the largest number; not every number below is a type */
} rlx_dtype;

typedef struct rlx_dtype_info {
    const char *name;    /* as llama.cpp spells it: "F32", "Q4_K", ... */
    uint32_t block_size; /* elements per block (1 for plain types) */
    uint32_t type_size;  /* bytes per block */
    bool can_dequantize; /* rlx_dequantize supports it */
} rlx_dtype_info;

/* NULL when `type` is not a known ggml type number. */
const rlx_dtype_info *rlx_dtype_get(uint32_t type);
/* The type's name, or "unknown" for a number that is not a type. */
const char *rlx_dtype_name(uint32_t type);
/* Parses "Q4_K" etc. (case-insensitive). Returns false for an unknown name. */
bool rlx_dtype_from_name(const char *name, rlx_dtype *out);
/* Bytes used by n elements of `type`; errors when the type is unknown, n is not a multiple of
 * the block size, or the product overflows. `what` names the tensor in the message. */
rlx_status rlx_dtype_bytes(uint32_t type, uint64_t n, const char *what, uint64_t *out);

#endif
