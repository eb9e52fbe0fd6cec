/* f32 to the K-quants Q4_K, Q5_K and Q6_K: 256-element super-blocks whose sub-block scales are
 * themselves quantized against one f16 super-scale. Block structs: llama.cpp
 * ggml/src/ggml-common.h; loader/core/dequant.c is the exact inverse.
 *
 * Each sub-block gets its least-squares scale (and min) from the searches in quantize.c; those
 * scales are quantized to 6 bits (Q4_K/Q5_K) or int8 (Q6_K); the super-scale is then refined by a
 * small search that minimises the block's squared error with the values re-quantized against the
 * scales as stored. */
#include <math.h>
#include <string.h>

#include "loader/quant/quantize.h"

#define QK_K 256
#define SUPER_STEPS 2 /* super-scale candidates: (2 * SUPER_STEPS + 1) stretches of the plain one */

/* ---- Q4_K / Q5_K: 8 sub-blocks of 32, x = (d*sc)*q - dmin*m with 6-bit sc and m ---- */

typedef struct affine_super {
    float d, dmin;     /* as stored (f16-rounded) */
    uint8_t sc[8], m[8]; /* 6-bit */
} affine_super;

/* Squared error of the super-block when every value is re-quantized against the stored scales. */
static float affine_super_error(const float *x, int nmax, const affine_super *s, uint8_t *q) {
    float err = 0;
    for (int j = 0; j < 8; j++) {
        float dl = s->d * (float)s->sc[j], ml = s->dmin * (float)s->m[j], id = dl != 0 ? 1.0f / dl : 0.0f;
        for (int i = 0; i < 32; i++) {
            const float v = x[32 * j + i];
            int l = rlx_quant_round_clamp((v + ml) * id, 0, nmax);
            q[32 * j + i] = (uint8_t)l;
            float e = v - (dl * (float)l - ml);
            err += e * e;
        }
    }
    return err;
}

/* Quantizes the sub-block scales and mins (scale >= 0, min >= 0 meaning an offset of -min) to 6
 * bits under the super-scales d = max/stretch, trying stretches around 63 for the scales, and
 * keeps the choice with the least error over the whole super-block. Leaves the quants in q. */
static void quantize_affine_super(const float *x, int nmax, const float *scale, const float *min, affine_super *best,
                                  uint8_t *q) {
    float max_scale = 0, max_min = 0;
    for (int j = 0; j < 8; j++) {
        max_scale = fmaxf(max_scale, scale[j]);
        max_min = fmaxf(max_min, min[j]);
    }
    float best_err = INFINITY;
    uint8_t trial[QK_K];
    for (int k = -SUPER_STEPS; k <= SUPER_STEPS; k++) {
        float stretch = 63.0f + 0.25f * (float)k;
        if (stretch > 63.0f + 0.5f) continue; /* beyond 63.5 the largest scale would round to 64 */
        affine_super s;
        s.d = rlx_quant_f16_round(max_scale / stretch);
        s.dmin = rlx_quant_f16_round(max_min / 63.0f);
        float id = s.d != 0 ? 1.0f / s.d : 0.0f, idm = s.dmin != 0 ? 1.0f / s.dmin : 0.0f;
        for (int j = 0; j < 8; j++) {
            s.sc[j] = (uint8_t)rlx_quant_round_clamp(scale[j] * id, 0, 63);
            s.m[j] = (uint8_t)rlx_quant_round_clamp(min[j] * idm, 0, 63);
        }
        float err = affine_super_error(x, nmax, &s, trial);
        if (err < best_err || best_err == INFINITY) {
            best_err = err;
            *best = s;
            memcpy(q, trial, QK_K);
        }
    }
}

/* The 12 scale bytes (the inverse of dequant.c's kquant_scale_min): bytes 0-3 hold scales 0-3 and
 * the top 2 bits of scales 4-7, bytes 4-7 mins 0-3 and the top bits of mins 4-7, bytes 8-11 the
 * low nibbles of scale j+4 (low) and min j+4 (high). */
static void pack_scales_mins(const uint8_t *sc, const uint8_t *m, uint8_t *out) {
    for (int j = 0; j < 4; j++) {
        out[j] = (uint8_t)(sc[j] | ((sc[j + 4] >> 4) << 6));
        out[j + 4] = (uint8_t)(m[j] | ((m[j + 4] >> 4) << 6));
        out[j + 8] = (uint8_t)((sc[j + 4] & 0x0f) | ((m[j + 4] & 0x0f) << 4));
    }
}

/* Fits the super-block and writes its head (half d, dmin; scales[12]) at out; q gets the quants. */
static void fit_affine_super(const float *x, int nmax, uint8_t *q, uint8_t *out) {
    affine_super s;
    float scale[8], min[8];
    for (int j = 0; j < 8; j++) {
        float d, m;
        rlx_quant_fit_affine(x + 32 * j, 32, nmax, true, &d, &m, q + 32 * j);
        scale[j] = d;
        min[j] = -m;
    }
    quantize_affine_super(x, nmax, scale, min, &s, q);
    rlx_quant_put_f16(out, s.d);
    rlx_quant_put_f16(out + 2, s.dmin);
    pack_scales_mins(s.sc, s.m, out + 4);
}

/* block_q4_K (144 bytes): half d, dmin; uint8 scales[12]; uint8 qs[128]; sub-block 2k in the low
 * nibbles of qs[32k..32k+31], sub-block 2k+1 in the high nibbles. */
void rlx_quantize_block_q4_k(const float *x, uint8_t *out) {
    uint8_t q[QK_K];
    fit_affine_super(x, 15, q, out);
    uint8_t *qs = out + 16;
    for (int k = 0; k < 4; k++)
        for (int l = 0; l < 32; l++) qs[32 * k + l] = (uint8_t)(q[64 * k + l] | (q[64 * k + 32 + l] << 4));
}

/* block_q5_K (176 bytes): half d, dmin; uint8 scales[12]; uint8 qh[32]; uint8 qs[128]; low
 * nibbles as Q4_K, bit 4 of element l of sub-block g in bit g of qh[l]. */
void rlx_quantize_block_q5_k(const float *x, uint8_t *out) {
    uint8_t q[QK_K];
    fit_affine_super(x, 31, q, out);
    uint8_t *qh = out + 16, *qs = out + 48;
    memset(qh, 0, 32);
    for (int k = 0; k < 4; k++) {
        for (int l = 0; l < 32; l++) {
            int lo = q[64 * k + l], hi = q[64 * k + 32 + l];
            qs[32 * k + l] = (uint8_t)((lo & 0x0f) | ((hi & 0x0f) << 4));
            qh[l] |= (uint8_t)(((lo >> 4) << (2 * k)) | ((hi >> 4) << (2 * k + 1)));
        }
    }
}

/* ---- Q6_K: 16 sub-blocks of 16, x = (d*sc)*(q - 32) with int8 sc ---- */

static float q6_error(const float *x, float d, const int8_t *sc, int8_t *q) {
    float err = 0;
    for (int j = 0; j < 16; j++) {
        float dl = d * (float)sc[j], id = dl != 0 ? 1.0f / dl : 0.0f;
        for (int i = 0; i < 16; i++) {
            const float v = x[16 * j + i];
            int l = rlx_quant_round_clamp(v * id, -32, 31);
            q[16 * j + i] = (int8_t)l;
            float e = v - dl * (float)l;
            err += e * e;
        }
    }
    return err;
}

/* block_q6_K (210 bytes): uint8 ql[128]; uint8 qh[64]; int8 scales[16]; half d. Per 128-element
 * half h, element l + 32g (g = 0..3) keeps its low nibble in ql[64h + l + 32(g%2)] (low nibble for
 * g < 2, high for g >= 2) and its top 2 bits in bits 2g of qh[32h + l]. */
void rlx_quantize_block_q6_k(const float *x, uint8_t *out) {
    float scale[16], vmax = 0, amax = 0;
    int8_t q[QK_K], trial[QK_K];
    for (int j = 0; j < 16; j++) {
        rlx_quant_fit_symmetric(x + 16 * j, 16, 32, &scale[j], q + 16 * j);
        if (fabsf(scale[j]) > amax) {
            amax = fabsf(scale[j]);
            vmax = scale[j];
        }
    }
    /* The largest scale maps onto -128, int8's longer end, or a little inside it. */
    float best_err = INFINITY, d = 0;
    int8_t sc[16] = {0};
    for (int k = 0; k <= 2 * SUPER_STEPS && amax > 0; k++) {
        float dk = rlx_quant_f16_round(vmax / -(128.0f - 0.25f * (float)k)), id = dk != 0 ? 1.0f / dk : 0.0f;
        int8_t sck[16];
        for (int j = 0; j < 16; j++) sck[j] = (int8_t)rlx_quant_round_clamp(scale[j] * id, -128, 127);
        float err = q6_error(x, dk, sck, trial);
        if (err < best_err || best_err == INFINITY) {
            best_err = err;
            d = dk;
            memcpy(sc, sck, sizeof sc);
            memcpy(q, trial, sizeof q);
        }
    }
    if (!(amax > 0)) memset(q, 0, sizeof q);
    uint8_t *ql = out, *qh = out + 128;
    for (int h = 0; h < 2; h++) {
        for (int l = 0; l < 32; l++) {
            int q1 = q[128 * h + l] + 32, q2 = q[128 * h + l + 32] + 32;
            int q3 = q[128 * h + l + 64] + 32, q4 = q[128 * h + l + 96] + 32;
            ql[64 * h + l] = (uint8_t)((q1 & 0x0f) | ((q3 & 0x0f) << 4));
            ql[64 * h + l + 32] = (uint8_t)((q2 & 0x0f) | ((q4 & 0x0f) << 4));
            qh[32 * h + l] = (uint8_t)((q1 >> 4) | ((q2 >> 4) << 2) | ((q3 >> 4) << 4) | ((q4 >> 4) << 6));
        }
    }
    memcpy(out + 192, sc, 16);
    rlx_quant_put_f16(out + 208, d);
}
