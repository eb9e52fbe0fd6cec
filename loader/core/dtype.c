/* The dtype table. Block sizes and byte sizes follow ggml's block layouts (ggml-common.h in
 * llama.cpp documents each block struct). */
#include "loader/core/dtype.h"

#include <inttypes.h>
#include <strings.h>

static const rlx_dtype_info dtype_table[RLX_DTYPE_COUNT] = {
    [RLX_DTYPE_F32] = {"F32", 1, 4, true},
    [RLX_DTYPE_F16] = {"F16", 1, 2, true},
    [RLX_DTYPE_Q4_0] = {"Q4_0", 32, 18, true},
    [RLX_DTYPE_Q4_1] = {"Q4_1", 32, 20, true},
    [RLX_DTYPE_Q5_0] = {"Q5_0", 32, 22, true},
    [RLX_DTYPE_Q5_1] = {"Q5_1", 32, 24, true},
    [RLX_DTYPE_Q8_0] = {"Q8_0", 32, 34, true},
    [RLX_DTYPE_Q8_1] = {"Q8_1", 32, 36, false},
    [RLX_DTYPE_Q2_K] = {"Q2_K", 256, 84, true},
    [RLX_DTYPE_Q3_K] = {"Q3_K", 256, 110, true},
    [RLX_DTYPE_Q4_K] = {"Q4_K", 256, 144, true},
    [RLX_DTYPE_Q5_K] = {"Q5_K", 256, 176, true},
    [RLX_DTYPE_Q6_K] = {"Q6_K", 256, 210, true},
    [RLX_DTYPE_Q8_K] = {"Q8_K", 256, 292, true},
    [RLX_DTYPE_IQ2_XXS] = {"IQ2_XXS", 256, 66, false},
    [RLX_DTYPE_IQ2_XS] = {"IQ2_XS", 256, 74, false},
    [RLX_DTYPE_IQ3_XXS] = {"IQ3_XXS", 256, 98, false},
    [RLX_DTYPE_IQ1_S] = {"IQ1_S", 256, 50, false},
    [RLX_DTYPE_IQ4_NL] = {"IQ4_NL", 32, 18, false},
    [RLX_DTYPE_IQ3_S] = {"IQ3_S", 256, 110, false},
    [RLX_DTYPE_IQ2_S] = {"IQ2_S", 256, 82, false},
    [RLX_DTYPE_IQ4_XS] = {"IQ4_XS", 256, 136, false},
    [RLX_DTYPE_I8] = {"I8", 1, 1, false},
    [RLX_DTYPE_I16] = {"I16", 1, 2, false},
    [RLX_DTYPE_I32] = {"I32", 1, 4, false},
    [RLX_DTYPE_I64] = {"I64", 1, 8, false},
    [RLX_DTYPE_F64] = {"F64", 1, 8, false},
    [RLX_DTYPE_IQ1_M] = {"IQ1_M", 256, 56, false},
    [RLX_DTYPE_BF16] = {"BF16", 1, 2, true},
    [RLX_DTYPE_TQ1_0] = {"TQ1_0", 256, 54, false},
    [RLX_DTYPE_TQ2_0] = {"TQ2_0", 256, 66, false},
    [RLX_DTYPE_MXFP4] = {"MXFP4", 32, 17, false},
};

const rlx_dtype_info *rlx_dtype_get(uint32_t type) {
    if (type >= RLX_DTYPE_COUNT || !dtype_table[type].name) return NULL;
    return &dtype_table[type];
}

const char *rlx_dtype_name(uint32_t type) {
    const rlx_dtype_info *info = rlx_dtype_get(type);
    return info ? info->name : "unknown";
}

bool rlx_dtype_from_name(const char *name, rlx_dtype *out) {
    for (uint32_t t = 0; t < RLX_DTYPE_COUNT; t++) {
        if (dtype_table[t].name && strcasecmp(dtype_table[t].name, name) == 0) {
            *out = (rlx_dtype)t;
            return true;
        }
    }
    return false;
}

rlx_status rlx_dtype_bytes(uint32_t type, uint64_t n, const char *what, uint64_t *out) {
    const rlx_dtype_info *info = rlx_dtype_get(type);
    if (!info) return rlx_errorf(RLX_ERR_UNSUPPORTED, "%s: unknown tensor type %" PRIu32, what, type);
    if (n % info->block_size != 0)
        return rlx_errorf(RLX_ERR_BAD_FILE, "%s: %" PRIu64 " elements is not a multiple of the %s block size %" PRIu32,
                          what, n, info->name, info->block_size);
    uint64_t bytes;
    if (__builtin_mul_overflow(n / info->block_size, (uint64_t)info->type_size, &bytes))
        return rlx_errorf(RLX_ERR_BAD_FILE, "%s: byte size of %" PRIu64 " %s elements overflows 64 bits", what, n,
                          info->name);
    *out = bytes;
    return NULL;
}
