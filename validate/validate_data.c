#include "validate/validate_data.h"

#include <stdlib.h>
#include <string.h>

#include "loader/core/dtype.h"
#include "loader/core/half.h"

uint64_t rlx_validate_rng_next(rlx_validate_rng *r) {
    r->s ^= r->s >> 12;
    r->s ^= r->s << 25;
    r->s ^= r->s >> 27;
    return r->s * 0x2545F4914F6CDD1Dull;
}

float rlx_validate_rng_uniform(rlx_validate_rng *r, float lo, float hi) {
    return lo + (hi - lo) * (float)((double)(rlx_validate_rng_next(r) >> 11) / 9007199254740992.0);
}

int32_t rlx_validate_rng_int(rlx_validate_rng *r, int32_t lo, int32_t hi) {
    return lo + (int32_t)(rlx_validate_rng_next(r) % (uint64_t)((int64_t)hi - lo + 1));
}

static void put16(uint8_t *p, uint16_t v) { memcpy(p, &v, 2); }

/* Scale fields of one block (ggml-common.h): d (and m / dmin) as small f16 values. */
static void fix_block(uint32_t type, uint8_t *blk, rlx_validate_rng *r) {
    uint16_t d = rlx_f32_to_f16(rlx_validate_rng_uniform(r, 0.002f, 0.03f));
    uint16_t m = rlx_f32_to_f16(rlx_validate_rng_uniform(r, -0.05f, 0.05f));
    switch (type) {
    case RLX_DTYPE_Q4_0:
    case RLX_DTYPE_Q5_0:
    case RLX_DTYPE_Q8_0: put16(blk, d); break;
    case RLX_DTYPE_Q4_1:
    case RLX_DTYPE_Q5_1:
    case RLX_DTYPE_Q4_K:
    case RLX_DTYPE_Q5_K:
        put16(blk, d);
        put16(blk + 2, m);
        break;
    case RLX_DTYPE_Q2_K: /* { uint8 scales[16]; uint8 qs[64]; f16 d, dmin } */
        put16(blk + 80, d);
        put16(blk + 82, m);
        break;
    case RLX_DTYPE_Q3_K: put16(blk + 108, d); break; /* { hmask[32]; qs[64]; scales[12]; f16 d } */
    case RLX_DTYPE_Q6_K: put16(blk + 208, d); break; /* { ql[128]; qh[64]; scales[16]; f16 d } */
    case RLX_DTYPE_Q8_K: {                           /* { f32 d; qs[256]; bsums[16] } */
        float f = rlx_validate_rng_uniform(r, 0.002f, 0.03f);
        memcpy(blk, &f, 4);
        break;
    }
    default: break;
    }
}

rlx_status rlx_validate_weight_random(rlx_validate_rng *r, const char *name, uint32_t type, uint32_t n_dims,
                                      uint64_t ne0, uint64_t ne1, uint64_t ne2, rlx_weight *out) {
    rlx_weight w = {.name = name, .type = type, .n_dims = n_dims, .ne = {ne0, ne1, ne2, 1}};
    for (uint32_t d = n_dims; d < RLX_WEIGHT_MAX_DIMS; d++) w.ne[d] = 1;
    uint64_t numel = 0, bytes = 0;
    if (__builtin_mul_overflow(w.ne[0], w.ne[1], &numel) || __builtin_mul_overflow(numel, w.ne[2], &numel))
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "random weight '%s': %llu x %llu x %llu elements overflow", name,
                          (unsigned long long)ne0, (unsigned long long)ne1, (unsigned long long)ne2);
    RLX_TRY(rlx_dtype_bytes(type, numel, name, &bytes));
    uint8_t *data = malloc(bytes ? bytes : 1);
    if (!data) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "random weight '%s': %llu bytes", name, (unsigned long long)bytes);
    for (uint64_t i = 0; i < bytes; i++) data[i] = (uint8_t)rlx_validate_rng_next(r);
    const rlx_dtype_info *info = rlx_dtype_get(type);
    for (uint64_t e = 0; info->block_size == 1 && e < numel; e++) {
        float v = rlx_validate_rng_uniform(r, -1.0f, 1.0f);
        if (type == RLX_DTYPE_F32) memcpy(data + 4 * e, &v, 4);
        if (type == RLX_DTYPE_F16) put16(data + 2 * e, rlx_f32_to_f16(v));
        if (type == RLX_DTYPE_BF16) put16(data + 2 * e, rlx_f32_to_bf16(v));
    }
    for (uint64_t b = 0; info->block_size > 1 && b < bytes / info->type_size; b++)
        fix_block(type, data + b * info->type_size, r);
    w.data = data;
    w.nbytes = bytes;
    *out = w;
    return NULL;
}

void rlx_validate_weight_free(rlx_weight *w) {
    free((void *)w->data);
    w->data = NULL;
}
