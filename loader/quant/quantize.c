/* f32 rows to ggml's plain and 32-element block types, and the scale searches every quantizer
 * shares. Block structs: llama.cpp ggml/src/ggml-common.h (each function cites its struct);
 * loader/core/dequant.c is the exact inverse we are checked against. */
#include "loader/quant/quantize.h"

#include <assert.h>
#include <math.h>
#include <string.h>

#define QK 32
/* Perturbations tried around the plain scale choice: (2 * SEARCH_STEPS + 1) candidates, each
 * 0.1 of a quantization level apart. */
#define SEARCH_STEPS 4

uint64_t rlx_quantize_find_nonfinite(const float *x, uint64_t n) {
    for (uint64_t i = 0; i < n; i++)
        if (!isfinite(x[i])) return i;
    return n;
}

/* ---- scale searches ---- */

/* Least-squares d for fixed q: d = <x,q>/<q,q>; the error is |x|^2 - <x,q>^2/<q,q>. */
static float symmetric_candidate(const float *x, int n, int nmax, float iscale, float sxx, int8_t *q, float *d) {
    float sxq = 0, sqq = 0;
    for (int i = 0; i < n; i++) {
        int l = rlx_quant_round_clamp(iscale * x[i], -nmax, nmax - 1);
        q[i] = (int8_t)l;
        sxq += x[i] * (float)l;
        sqq += (float)(l * l);
    }
    *d = sqq > 0 ? sxq / sqq : 0.0f;
    return sqq > 0 ? sxx - sxq * sxq / sqq : sxx;
}

float rlx_quant_fit_symmetric(const float *x, int n, int nmax, float *d, int8_t *q) {
    float amax = 0, vmax = 0, sxx = 0;
    for (int i = 0; i < n; i++) {
        sxx += x[i] * x[i];
        if (fabsf(x[i]) > amax) {
            amax = fabsf(x[i]);
            vmax = x[i];
        }
    }
    if (!(amax > 1e-30f)) { /* all zero (or NaN): nothing to scale */
        memset(q, 0, (size_t)n);
        *d = 0;
        return 0;
    }
    int8_t trial[256];
    assert(n <= 256);
    /* The plain choice maps the largest magnitude onto the longer, negative end of the range
     * (-nmax); the search also tries the positive end (nmax - 1) and small stretches of both. */
    float best = INFINITY;
    for (int side = 0; side < 2; side++) {
        float target = side == 0 ? -(float)nmax : (float)(nmax - 1);
        for (int k = -SEARCH_STEPS; k <= SEARCH_STEPS; k++) {
            float t = target + 0.1f * (float)k, dk;
            float err = symmetric_candidate(x, n, nmax, t / vmax, sxx, trial, &dk);
            if (err < best || best == INFINITY) {
                best = err;
                *d = dk;
                memcpy(q, trial, (size_t)n);
            }
        }
    }
    /* One more round: quantize against the fitted d and fit again. */
    if (*d != 0) {
        float dk, err = symmetric_candidate(x, n, nmax, 1.0f / *d, sxx, trial, &dk);
        if (err < best) {
            best = err;
            *d = dk;
            memcpy(q, trial, (size_t)n);
        }
    }
    return best;
}

/* Sums of a block that do not depend on the candidate. */
typedef struct block_sums {
    float sx, sxx;
} block_sums;

/* Quantizes x against (1/iscale, m0) and refits d and m by least squares (x ~ d*q + m). The
 * refit's error, expanded from the sums, screens the candidate; one that may beat `best` is
 * measured exactly. Returns that error, or INFINITY for a candidate that is rejected or unusable. */
static float affine_candidate(const float *x, int n, int nmax, bool nonpositive_min, float iscale, float m0,
                              block_sums bs, float best, uint8_t *q, float *d, float *m) {
    float sq = 0, sqq = 0, sxq = 0;
    for (int i = 0; i < n; i++) {
        int l = rlx_quant_round_clamp(iscale * (x[i] - m0), 0, nmax);
        q[i] = (uint8_t)l;
        sq += (float)l;
        sqq += (float)(l * l);
        sxq += x[i] * (float)l;
    }
    float fn = (float)n, det = fn * sqq - sq * sq;
    if (!(det > 0)) return INFINITY; /* every q equal: no line to fit */
    float dd = (fn * sxq - sq * bs.sx) / det;
    float mm = (bs.sx - dd * sq) / fn;
    if (nonpositive_min && mm > 0) {
        mm = 0;
        dd = sxq / sqq;
    }
    if (nonpositive_min && !(dd > 0)) return INFINITY; /* the K-quants store unsigned scales */
    /* sum (x - d q - m)^2 expanded; rounding can make it slightly off, hence the exact pass */
    float est = bs.sxx - 2 * dd * sxq - 2 * mm * bs.sx + dd * dd * sqq + 2 * dd * mm * sq + fn * mm * mm;
    if (!(est < best * 1.001f + 1e-30f)) return INFINITY;
    float err = 0;
    for (int i = 0; i < n; i++) {
        float e = x[i] - dd * (float)q[i] - mm;
        err += e * e;
    }
    *d = dd;
    *m = mm;
    return err;
}

float rlx_quant_fit_affine(const float *x, int n, int nmax, bool nonpositive_min, float *d, float *m, uint8_t *q) {
    float lo = x[0], hi = x[0];
    block_sums bs = {0, 0};
    for (int i = 0; i < n; i++) {
        lo = x[i] < lo ? x[i] : lo;
        hi = x[i] > hi ? x[i] : hi;
        bs.sx += x[i];
        bs.sxx += x[i] * x[i];
    }
    if (nonpositive_min && lo > 0) lo = 0;
    float range = hi - lo;
    if (!(range > 1e-30f)) { /* constant block (or NaN): the offset alone represents it */
        memset(q, 0, (size_t)n);
        *d = 0;
        *m = lo;
        float err = 0;
        for (int i = 0; i < n; i++) err += (x[i] - lo) * (x[i] - lo);
        return err;
    }
    /* The plain choice (min..max spread over 0..nmax) first; it always yields a fit. */
    float best = 0;
    *d = range / (float)nmax;
    *m = lo;
    float id = 1.0f / *d;
    for (int i = 0; i < n; i++) {
        q[i] = (uint8_t)rlx_quant_round_clamp((x[i] - lo) * id, 0, nmax);
        float e = x[i] - *d * (float)q[i] - lo;
        best += e * e;
    }
    uint8_t trial[256];
    assert(n <= 256);
    for (int k = -SEARCH_STEPS; k <= SEARCH_STEPS + 1; k++) {
        /* the last round re-quantizes against the best fit so far and fits again */
        float iscale = k <= SEARCH_STEPS ? ((float)nmax + 0.1f * (float)k) / range : 1.0f / *d;
        float m0 = k <= SEARCH_STEPS ? lo : *m;
        float dk = 0, mk = 0;
        float err = affine_candidate(x, n, nmax, nonpositive_min, iscale, m0, bs, best, trial, &dk, &mk);
        if (err < best) {
            best = err;
            *d = dk;
            *m = mk;
            memcpy(q, trial, (size_t)n);
        }
    }
    return best;
}

/* ---- 32-element blocks ---- */

/* Final quants against the stored (f16-rounded) scale: the rounding of d moves the optimum. */
static void requant_symmetric(const float *x, int n, int nmax, float d, int8_t *q) {
    float id = d != 0 ? 1.0f / d : 0.0f;
    for (int i = 0; i < n; i++) q[i] = (int8_t)rlx_quant_round_clamp(x[i] * id, -nmax, nmax - 1);
}

static void requant_affine(const float *x, int n, int nmax, float d, float m, uint8_t *q) {
    float id = d != 0 ? 1.0f / d : 0.0f;
    for (int i = 0; i < n; i++) q[i] = (uint8_t)rlx_quant_round_clamp((x[i] - m) * id, 0, nmax);
}

/* The 32-element fits: the scale (and min) stored as half at out, the quants in q chosen against
 * the stored values. */
static void fit_symmetric_block(const float *x, int nmax, int8_t *q, uint8_t *out) {
    float d;
    rlx_quant_fit_symmetric(x, QK, nmax, &d, q);
    rlx_quant_put_f16(out, d);
    requant_symmetric(x, QK, nmax, rlx_quant_f16_round(d), q);
}

static void fit_affine_block(const float *x, int nmax, uint8_t *q, uint8_t *out) {
    float d, m;
    rlx_quant_fit_affine(x, QK, nmax, false, &d, &m, q);
    rlx_quant_put_f16(out, d);
    rlx_quant_put_f16(out + 2, m);
    requant_affine(x, QK, nmax, rlx_quant_f16_round(d), rlx_quant_f16_round(m), q);
}

/* block_q4_0 (18 bytes): half d; uint8 qs[16]; x = (q - 8) * d, quant j in the low nibble of
 * qs[j], quant j+16 in the high nibble. */
static void block_q4_0(const float *x, uint8_t *out) {
    int8_t q[QK];
    fit_symmetric_block(x, 8, q, out);
    for (int j = 0; j < QK / 2; j++) out[2 + j] = (uint8_t)((q[j] + 8) | ((q[j + QK / 2] + 8) << 4));
}

/* block_q4_1 (20 bytes): half d, m; uint8 qs[16]; x = q * d + m. */
static void block_q4_1(const float *x, uint8_t *out) {
    uint8_t q[QK];
    fit_affine_block(x, 15, q, out);
    for (int j = 0; j < QK / 2; j++) out[4 + j] = (uint8_t)(q[j] | (q[j + QK / 2] << 4));
}

/* The 5-bit types: low nibbles as in Q4_0, bit 4 of quant j in bit j of the little-endian u32 qh. */
static void pack_q5(const uint8_t *q, uint8_t *qh, uint8_t *qs) {
    uint32_t h = 0;
    for (int j = 0; j < QK; j++) h |= (uint32_t)(q[j] >> 4) << j;
    for (int i = 0; i < 4; i++) qh[i] = (uint8_t)(h >> (8 * i));
    for (int j = 0; j < QK / 2; j++) qs[j] = (uint8_t)((q[j] & 0x0f) | ((q[j + QK / 2] & 0x0f) << 4));
}

/* block_q5_0 (22 bytes): half d; uint8 qh[4]; uint8 qs[16]; x = (q - 16) * d. */
static void block_q5_0(const float *x, uint8_t *out) {
    int8_t q[QK];
    uint8_t u[QK];
    fit_symmetric_block(x, 16, q, out);
    for (int j = 0; j < QK; j++) u[j] = (uint8_t)(q[j] + 16);
    pack_q5(u, out + 2, out + 6);
}

/* block_q5_1 (24 bytes): half d, m; uint8 qh[4]; uint8 qs[16]; x = q * d + m. */
static void block_q5_1(const float *x, uint8_t *out) {
    uint8_t q[QK];
    fit_affine_block(x, 31, q, out);
    pack_q5(q, out + 4, out + 8);
}

/* block_q8_0 (34 bytes): half d; int8 qs[32]; x = q * d. With 255 levels the plain absmax scale
 * is already within a hair of the best one. */
static void block_q8_0(const float *x, uint8_t *out) {
    float amax = 0;
    for (int j = 0; j < QK; j++) amax = fmaxf(amax, fabsf(x[j]));
    float d = amax / 127.0f;
    rlx_quant_put_f16(out, d);
    float ds = rlx_quant_f16_round(d), id = ds != 0 ? 1.0f / ds : 0.0f;
    for (int j = 0; j < QK; j++) out[2 + j] = (uint8_t)(int8_t)rlx_quant_round_clamp(x[j] * id, -127, 127);
}

/* ---- rows ---- */

typedef void (*block_fn)(const float *x, uint8_t *out);

static block_fn block_for(uint32_t type) {
    switch (type) {
    case RLX_DTYPE_Q4_0: return block_q4_0;
    case RLX_DTYPE_Q4_1: return block_q4_1;
    case RLX_DTYPE_Q5_0: return block_q5_0;
    case RLX_DTYPE_Q5_1: return block_q5_1;
    case RLX_DTYPE_Q8_0: return block_q8_0;
    case RLX_DTYPE_Q4_K: return rlx_quantize_block_q4_k;
    case RLX_DTYPE_Q5_K: return rlx_quantize_block_q5_k;
    case RLX_DTYPE_Q6_K: return rlx_quantize_block_q6_k;
    default: return NULL;
    }
}

bool rlx_quantize_supported(uint32_t type) {
    return type == RLX_DTYPE_F32 || type == RLX_DTYPE_F16 || type == RLX_DTYPE_BF16 || block_for(type) != NULL;
}

size_t rlx_quantize_rows(uint32_t type, const float *src, void *dst, uint64_t n_rows, uint64_t n_per_row) {
    const rlx_dtype_info *info = rlx_dtype_get(type);
    assert(info && rlx_quantize_supported(type) && n_per_row % info->block_size == 0);
    if (!info || !rlx_quantize_supported(type)) return 0;
    uint64_t n = n_rows * n_per_row;
    uint8_t *out = dst;
    switch (type) {
    case RLX_DTYPE_F32: memcpy(out, src, (size_t)n * sizeof(float)); break;
    case RLX_DTYPE_F16:
        for (uint64_t i = 0; i < n; i++) rlx_quant_put_f16(out + 2 * i, src[i]);
        break;
    case RLX_DTYPE_BF16:
        for (uint64_t i = 0; i < n; i++) {
            uint16_t b = rlx_f32_to_bf16(src[i]);
            out[2 * i] = (uint8_t)b;
            out[2 * i + 1] = (uint8_t)(b >> 8);
        }
        break;
    default: {
        block_fn fn = block_for(type);
        for (uint64_t b = 0; b < n / info->block_size; b++) fn(src + b * info->block_size, out + b * info->type_size);
    }
    }
    return (size_t)(n / info->block_size * info->type_size);
}
