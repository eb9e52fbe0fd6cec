/* Dequantization to f32. Each function reads whole blocks at byte offsets given by the block
 * struct it cites (llama.cpp ggml/src/ggml-common.h); all multi-byte fields are little-endian.
 * The order of float operations follows ggml's dequantize_row_* (and gguf-py's quants.py), e.g.
 * Q4_K computes (d*sc)*q - dmin*m, so the results are bit-identical to theirs. */
#include "loader/core/dequant.h"

#include <assert.h>
#include <inttypes.h>
#include <string.h>

#include "loader/core/half.h"

#define QK 32   /* elements per block of the 32-element types */
#define QK_K 256 /* elements per K-quant super-block */

static inline float f16_at(const uint8_t *p) { return rlx_f16_to_f32((uint16_t)(p[0] | (p[1] << 8))); }

static inline uint32_t u32_at(const uint8_t *p) {
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

/* ---- plain types ---- */

static void dequant_f32(const uint8_t *src, float *y, uint64_t n) { memcpy(y, src, (size_t)n * sizeof(float)); }

static void dequant_f16(const uint8_t *src, float *y, uint64_t n) {
    for (uint64_t i = 0; i < n; i++) y[i] = f16_at(src + 2 * i);
}

static void dequant_bf16(const uint8_t *src, float *y, uint64_t n) {
    for (uint64_t i = 0; i < n; i++) y[i] = rlx_bf16_to_f32((uint16_t)(src[2 * i] | (src[2 * i + 1] << 8)));
}

/* ---- 32-element blocks: quant j sits in the low nibble of qs[j], quant j+16 in the high nibble ---- */

/* block_q4_0 (18 bytes): half d; uint8 qs[16]. x = (q - 8) * d */
static void dequant_q4_0(const uint8_t *b, float *y, uint64_t nb) {
    for (uint64_t i = 0; i < nb; i++, b += 18, y += QK) {
        const float d = f16_at(b);
        const uint8_t *qs = b + 2;
        for (int j = 0; j < QK / 2; j++) {
            y[j] = (float)((qs[j] & 0x0f) - 8) * d;
            y[j + QK / 2] = (float)((qs[j] >> 4) - 8) * d;
        }
    }
}

/* block_q4_1 (20 bytes): half d, m; uint8 qs[16]. x = q * d + m */
static void dequant_q4_1(const uint8_t *b, float *y, uint64_t nb) {
    for (uint64_t i = 0; i < nb; i++, b += 20, y += QK) {
        const float d = f16_at(b), m = f16_at(b + 2);
        const uint8_t *qs = b + 4;
        for (int j = 0; j < QK / 2; j++) {
            y[j] = (float)(qs[j] & 0x0f) * d + m;
            y[j + QK / 2] = (float)(qs[j] >> 4) * d + m;
        }
    }
}

/* Bit j of qh (a little-endian u32) is the 5th bit of quant j. */
static inline int q5_quant(const uint8_t *qs, uint32_t qh, int j) {
    int low = j < QK / 2 ? qs[j] & 0x0f : qs[j - QK / 2] >> 4;
    return low | (int)(((qh >> j) & 1u) << 4);
}

/* block_q5_0 (22 bytes): half d; uint8 qh[4]; uint8 qs[16]. x = (q - 16) * d */
static void dequant_q5_0(const uint8_t *b, float *y, uint64_t nb) {
    for (uint64_t i = 0; i < nb; i++, b += 22, y += QK) {
        const float d = f16_at(b);
        const uint32_t qh = u32_at(b + 2);
        for (int j = 0; j < QK; j++) y[j] = (float)(q5_quant(b + 6, qh, j) - 16) * d;
    }
}

/* block_q5_1 (24 bytes): half d, m; uint8 qh[4]; uint8 qs[16]. x = q * d + m */
static void dequant_q5_1(const uint8_t *b, float *y, uint64_t nb) {
    for (uint64_t i = 0; i < nb; i++, b += 24, y += QK) {
        const float d = f16_at(b), m = f16_at(b + 2);
        const uint32_t qh = u32_at(b + 4);
        for (int j = 0; j < QK; j++) y[j] = (float)q5_quant(b + 8, qh, j) * d + m;
    }
}

/* block_q8_0 (34 bytes): half d; int8 qs[32]. x = q * d */
static void dequant_q8_0(const uint8_t *b, float *y, uint64_t nb) {
    for (uint64_t i = 0; i < nb; i++, b += 34, y += QK) {
        const float d = f16_at(b);
        for (int j = 0; j < QK; j++) y[j] = (float)(int8_t)b[2 + j] * d;
    }
}

/* ---- K-quants: 256-element super-blocks ---- */

/* The 12-byte scales of Q4_K/Q5_K pack 8 six-bit (scale, min) pairs:
 *   bytes 0-3: low 6 bits = scale j (j<4), top 2 bits = high bits of scale j+4
 *   bytes 4-7: low 6 bits = min j (j<4),   top 2 bits = high bits of min j+4
 *   bytes 8-11: low nibble = low bits of scale j+4, high nibble = low bits of min j+4 */
static inline void kquant_scale_min(const uint8_t *s, int j, uint8_t *sc, uint8_t *m) {
    if (j < 4) {
        *sc = s[j] & 63;
        *m = s[j + 4] & 63;
    } else {
        *sc = (uint8_t)((s[j + 4] & 0x0f) | ((s[j - 4] >> 6) << 4));
        *m = (uint8_t)((s[j + 4] >> 4) | ((s[j] >> 6) << 4));
    }
}

/* block_q2_K (84 bytes): uint8 scales[16] (low nibble scale, high nibble min, per 16 quants);
 * uint8 qs[64] (2-bit quants); half d, dmin. x = d*sc*q - dmin*m. Quant l of group g (0..7) in
 * each 128-element half lives in bits 2*(g/2) of qs[32*half + 16*(g%2) + l]. */
static void dequant_q2_k(const uint8_t *b, float *y, uint64_t nb) {
    for (uint64_t i = 0; i < nb; i++, b += 84) {
        const uint8_t *scales = b, *q = b + 16;
        const float d = f16_at(b + 80), dmin = f16_at(b + 82);
        int is = 0;
        for (int half = 0; half < 2; half++, q += 32) {
            for (int shift = 0; shift < 8; shift += 2) {
                for (int k = 0; k < 2; k++, is++) {
                    const float dl = d * (float)(scales[is] & 0x0f), ml = dmin * (float)(scales[is] >> 4);
                    for (int l = 0; l < 16; l++) *y++ = dl * (float)((q[16 * k + l] >> shift) & 3) - ml;
                }
            }
        }
    }
}

/* Q3_K's 12 scale bytes hold 16 six-bit scales: the low nibbles come from bytes 0-7 (scale j and
 * j+8 share byte j%8), the high 2 bits from bytes 8-11 (scale j uses bits 2*(j/4) of byte 8+j%4). */
static inline int q3_k_scale(const uint8_t *s, int j) {
    int low = j < 8 ? s[j] & 0x0f : s[j - 8] >> 4;
    int high = (s[8 + j % 4] >> (2 * (j / 4))) & 3;
    return (low | (high << 4)) - 32;
}

/* block_q3_K (110 bytes): uint8 hmask[32] (high bits); uint8 qs[64] (low 2 bits); uint8
 * scales[12]; half d. x = d*(scale-32) * (q_low - (hmask bit set ? 0 : 4)). */
static void dequant_q3_k(const uint8_t *b, float *y, uint64_t nb) {
    for (uint64_t i = 0; i < nb; i++, b += 110) {
        const uint8_t *hm = b, *q = b + 32, *scales = b + 96;
        const float d_all = f16_at(b + 108);
        int is = 0;
        unsigned m = 1; /* hmask bit for the current group of 32 */
        for (int half = 0; half < 2; half++, q += 32) {
            for (int shift = 0; shift < 8; shift += 2, m <<= 1) {
                for (int k = 0; k < 2; k++, is++) {
                    const float dl = d_all * (float)q3_k_scale(scales, is);
                    for (int l = 0; l < 16; l++) {
                        int idx = 16 * k + l;
                        int quant = ((q[idx] >> shift) & 3) - ((hm[idx] & m) ? 0 : 4);
                        *y++ = dl * (float)quant;
                    }
                }
            }
        }
    }
}

/* block_q4_K (144 bytes): half d, dmin; uint8 scales[12]; uint8 qs[128]. Eight groups of 32:
 * group 2k takes the low nibbles of qs[32k..32k+31], group 2k+1 the high nibbles.
 * x = (d*sc)*q - dmin*m */
static void dequant_q4_k(const uint8_t *b, float *y, uint64_t nb) {
    for (uint64_t i = 0; i < nb; i++, b += 144) {
        const float d = f16_at(b), dmin = f16_at(b + 2);
        const uint8_t *scales = b + 4, *q = b + 16;
        for (int k = 0; k < 4; k++, q += 32, y += 64) {
            uint8_t sc, m;
            kquant_scale_min(scales, 2 * k, &sc, &m);
            const float d1 = d * (float)sc, m1 = dmin * (float)m;
            kquant_scale_min(scales, 2 * k + 1, &sc, &m);
            const float d2 = d * (float)sc, m2 = dmin * (float)m;
            for (int l = 0; l < 32; l++) {
                y[l] = d1 * (float)(q[l] & 0x0f) - m1;
                y[l + 32] = d2 * (float)(q[l] >> 4) - m2;
            }
        }
    }
}

/* block_q5_K (176 bytes): half d, dmin; uint8 scales[12]; uint8 qh[32]; uint8 qs[128]. As Q4_K,
 * plus a 5th bit: bit g of qh[l] for element l of group g. */
static void dequant_q5_k(const uint8_t *b, float *y, uint64_t nb) {
    for (uint64_t i = 0; i < nb; i++, b += 176) {
        const float d = f16_at(b), dmin = f16_at(b + 2);
        const uint8_t *scales = b + 4, *qh = b + 16, *ql = b + 48;
        for (int k = 0; k < 4; k++, ql += 32, y += 64) {
            uint8_t sc, m;
            kquant_scale_min(scales, 2 * k, &sc, &m);
            const float d1 = d * (float)sc, m1 = dmin * (float)m;
            kquant_scale_min(scales, 2 * k + 1, &sc, &m);
            const float d2 = d * (float)sc, m2 = dmin * (float)m;
            const unsigned u1 = 1u << (2 * k), u2 = 2u << (2 * k);
            for (int l = 0; l < 32; l++) {
                y[l] = d1 * (float)((ql[l] & 0x0f) + (qh[l] & u1 ? 16 : 0)) - m1;
                y[l + 32] = d2 * (float)((ql[l] >> 4) + (qh[l] & u2 ? 16 : 0)) - m2;
            }
        }
    }
}

/* block_q6_K (210 bytes): uint8 ql[128] (low 4 bits); uint8 qh[64] (high 2 bits); int8
 * scales[16] (one per 16 elements); half d. x = (d*scale) * (q - 32). Per 128-element half,
 * element l + 32*g (g = 0..3) takes its low nibble from ql[l + 32*(g%2)] (low nibble for g<2,
 * high for g>=2) and its high bits from bits 2g of qh[l]. */
static void dequant_q6_k(const uint8_t *b, float *y, uint64_t nb) {
    for (uint64_t i = 0; i < nb; i++, b += 210) {
        const uint8_t *ql = b, *qh = b + 128;
        const int8_t *sc = (const int8_t *)(b + 192);
        const float d = f16_at(b + 208);
        for (int half = 0; half < 2; half++, ql += 64, qh += 32, sc += 8, y += 128) {
            for (int l = 0; l < 32; l++) {
                const int is = l / 16;
                const int q1 = ((ql[l] & 0x0f) | ((qh[l] & 3) << 4)) - 32;
                const int q2 = ((ql[l + 32] & 0x0f) | (((qh[l] >> 2) & 3) << 4)) - 32;
                const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
                const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
                y[l] = d * (float)sc[is] * (float)q1;
                y[l + 32] = d * (float)sc[is + 2] * (float)q2;
                y[l + 64] = d * (float)sc[is + 4] * (float)q3;
                y[l + 96] = d * (float)sc[is + 6] * (float)q4;
            }
        }
    }
}

/* block_q8_K (292 bytes): float d; int8 qs[256]; int16 bsums[16] (unused here). x = d * q */
static void dequant_q8_k(const uint8_t *b, float *y, uint64_t nb) {
    for (uint64_t i = 0; i < nb; i++, b += 292, y += QK_K) {
        const float d = rlx_f32_from_bits(u32_at(b));
        for (int j = 0; j < QK_K; j++) y[j] = d * (float)(int8_t)b[4 + j];
    }
}

/* ---- dispatch ---- */

typedef void (*dequant_fn)(const uint8_t *src, float *dst, uint64_t n_units);

/* n_units is elements for plain types and blocks for block types. */
static dequant_fn dequant_for(uint32_t type) {
    switch (type) {
    case RLX_DTYPE_F32: return dequant_f32;
    case RLX_DTYPE_F16: return dequant_f16;
    case RLX_DTYPE_BF16: return dequant_bf16;
    case RLX_DTYPE_Q4_0: return dequant_q4_0;
    case RLX_DTYPE_Q4_1: return dequant_q4_1;
    case RLX_DTYPE_Q5_0: return dequant_q5_0;
    case RLX_DTYPE_Q5_1: return dequant_q5_1;
    case RLX_DTYPE_Q8_0: return dequant_q8_0;
    case RLX_DTYPE_Q2_K: return dequant_q2_k;
    case RLX_DTYPE_Q3_K: return dequant_q3_k;
    case RLX_DTYPE_Q4_K: return dequant_q4_k;
    case RLX_DTYPE_Q5_K: return dequant_q5_k;
    case RLX_DTYPE_Q6_K: return dequant_q6_k;
    case RLX_DTYPE_Q8_K: return dequant_q8_k;
    default: return NULL;
    }
}

void rlx_dequantize(uint32_t type, const void *src, float *dst, uint64_t n) {
    const rlx_dtype_info *info = rlx_dtype_get(type);
    dequant_fn fn = dequant_for(type);
    assert(info && fn && n % info->block_size == 0);
    if (!info || !fn) return;
    fn(src, dst, n / info->block_size);
}

rlx_status rlx_dequantize_tensor(uint32_t type, const void *src, uint64_t src_bytes, float *dst, uint64_t n,
                                 const char *what) {
    if (!what) what = "tensor";
    const rlx_dtype_info *info = rlx_dtype_get(type);
    if (!info) return rlx_errorf(RLX_ERR_UNSUPPORTED, "%s: unknown tensor type %" PRIu32, what, type);
    if (!info->can_dequantize || !dequant_for(type))
        return rlx_errorf(RLX_ERR_UNSUPPORTED, "%s: dequantizing %s to f32 is not supported", what, info->name);
    if (n % info->block_size != 0)
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "%s: %" PRIu64 " elements is not a multiple of the %s block size %" PRIu32,
                          what, n, info->name, info->block_size);
    uint64_t need;
    RLX_TRY(rlx_dtype_bytes(type, n, what, &need));
    if (src_bytes < need)
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "%s: %" PRIu64 " %s elements need %" PRIu64 " bytes, only %" PRIu64 " given",
                          what, n, info->name, need, src_bytes);
    if (n && (!src || !dst)) return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "%s: NULL source or destination", what);
    if (n) rlx_dequantize(type, src, dst, n);
    return NULL;
}
