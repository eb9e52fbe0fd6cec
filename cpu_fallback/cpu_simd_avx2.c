/* The CPU backend's inner loops for x86-64 CPUs with AVX2, FMA and F16C (Haswell, Zen and later),
 * built with function target attributes so the rest of the library stays baseline x86-64;
 * cpu_simd.c picks this variant at run time when the CPU has all three. Fixed summation order:
 * four accumulators of 8 lanes take 32 consecutive elements per step (one fused multiply-add
 * each), an 8-wide tail goes to the first, the lanes are reduced as ((s0 + s1) + (s2 + s3)),
 * then ((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 + l7)), and a scalar tail is added last.
 * Stored weights are decoded 32 at a time in registers with loader/dequant.c's arithmetic (a
 * multiply and a subtract, never fused), so every decoded value is bit-identical to
 * rlx_dequantize's (NaNs aside: F16C quiets a signalling NaN, which stays a NaN) and dot[type]
 * equals gemv over dequant[type] exactly. */
#include "cpu_fallback/cpu_internal.h"

#if RLX_CPU_HAVE_AVX2
#include <immintrin.h>
#include <string.h>

#include "loader/half.h"

#define TARGET __attribute__((target("avx2,fma,f16c")))
/* Decoders and accumulators must inline into each loop: called, they would pass the
 * accumulators through memory. */
#define INLINE static inline __attribute__((always_inline, target("avx2,fma,f16c")))

typedef struct acc8 {
    __m256 s0, s1, s2, s3;
} acc8;

INLINE acc8 acc_zero(void) {
    __m256 z = _mm256_setzero_ps();
    return (acc8){z, z, z, z};
}

INLINE float acc_sum(const acc8 *a) {
    __m256 t = _mm256_add_ps(_mm256_add_ps(a->s0, a->s1), _mm256_add_ps(a->s2, a->s3));
    __m128 u = _mm_add_ps(_mm256_castps256_ps128(t), _mm256_extractf128_ps(t, 1));
    __m128 v = _mm_add_ps(u, _mm_movehl_ps(u, u));
    return _mm_cvtss_f32(_mm_add_ss(v, _mm_shuffle_ps(v, v, 1)));
}

/* 32 decoded weights w0..w3 of elements [e, e + 32): stored to y + e when y is set
 * (dequantization), else multiplied with x + e into a (a dot product). */
INLINE void put32(acc8 *a, const float *x, float *y, int64_t e, __m256 w0, __m256 w1, __m256 w2,
                                __m256 w3) {
    if (y) {
        _mm256_storeu_ps(y + e, w0);
        _mm256_storeu_ps(y + e + 8, w1);
        _mm256_storeu_ps(y + e + 16, w2);
        _mm256_storeu_ps(y + e + 24, w3);
        return;
    }
    a->s0 = _mm256_fmadd_ps(_mm256_loadu_ps(x + e), w0, a->s0);
    a->s1 = _mm256_fmadd_ps(_mm256_loadu_ps(x + e + 8), w1, a->s1);
    a->s2 = _mm256_fmadd_ps(_mm256_loadu_ps(x + e + 16), w2, a->s2);
    a->s3 = _mm256_fmadd_ps(_mm256_loadu_ps(x + e + 24), w3, a->s3);
}

/* ---- decoding ---- */

INLINE __m256 f16x8(const uint8_t *p) {
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)p));
}

INLINE __m256 bf16x8(const uint8_t *p) {
    __m256i u = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(const void *)p));
    return _mm256_castsi256_ps(_mm256_slli_epi32(u, 16));
}

INLINE float f16_at(const uint8_t *p) { return _cvtsh_ss((unsigned short)(p[0] | (p[1] << 8))); }

INLINE __m128i load16(const uint8_t *p) { return _mm_loadu_si128((const __m128i *)(const void *)p); }

/* The low 8 bytes of q as 8 floats, read as unsigned or signed. */
INLINE __m256 cvt_u8(__m128i q) { return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(q)); }
INLINE __m256 cvt_s8(__m128i q) { return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q)); }
/* The high 8 bytes. */
INLINE __m128i high8(__m128i q) { return _mm_srli_si128(q, 8); }

/* Bytes' bits [shift, shift + width), mask = 2^width - 1. */
INLINE __m128i bits8(__m128i q, int shift, int mask) {
    return _mm_and_si128(_mm_srli_epi16(q, shift), _mm_set1_epi8((char)mask));
}

/* ---- rows of plain types ---- */

TARGET static float dot_f32(const float *restrict x, const float *restrict w, int64_t n) {
    acc8 a = acc_zero();
    int64_t k = 0;
    for (; k + 32 <= n; k += 32) {
        put32(&a, x, NULL, k, _mm256_loadu_ps(w + k), _mm256_loadu_ps(w + k + 8), _mm256_loadu_ps(w + k + 16),
              _mm256_loadu_ps(w + k + 24));
    }
    for (; k + 8 <= n; k += 8) a.s0 = _mm256_fmadd_ps(_mm256_loadu_ps(x + k), _mm256_loadu_ps(w + k), a.s0);
    float s = acc_sum(&a);
    for (; k < n; k++) s += x[k] * w[k];
    return s;
}

TARGET static float dot_f16(const float *restrict x, const uint8_t *restrict w, int64_t n) {
    acc8 a = acc_zero();
    int64_t k = 0;
    for (; k + 32 <= n; k += 32) {
        const uint8_t *p = w + 2 * k;
        put32(&a, x, NULL, k, f16x8(p), f16x8(p + 16), f16x8(p + 32), f16x8(p + 48));
    }
    for (; k + 8 <= n; k += 8) a.s0 = _mm256_fmadd_ps(_mm256_loadu_ps(x + k), f16x8(w + 2 * k), a.s0);
    float s = acc_sum(&a);
    for (; k < n; k++) s += x[k] * f16_at(w + 2 * k);
    return s;
}

TARGET static float dot_bf16(const float *restrict x, const uint8_t *restrict w, int64_t n) {
    acc8 a = acc_zero();
    int64_t k = 0;
    for (; k + 32 <= n; k += 32) {
        const uint8_t *p = w + 2 * k;
        put32(&a, x, NULL, k, bf16x8(p), bf16x8(p + 16), bf16x8(p + 32), bf16x8(p + 48));
    }
    for (; k + 8 <= n; k += 8) a.s0 = _mm256_fmadd_ps(_mm256_loadu_ps(x + k), bf16x8(w + 2 * k), a.s0);
    float s = acc_sum(&a);
    for (; k < n; k++) s += x[k] * rlx_bf16_to_f32((uint16_t)(w[2 * k] | (w[2 * k + 1] << 8)));
    return s;
}

TARGET static void rows_f32(float *restrict y, const float *restrict x, const uint8_t *restrict w, size_t row_bytes,
                            int64_t rows, int64_t n) {
    for (int64_t r = 0; r < rows; r++) y[r] = dot_f32(x, (const float *)(const void *)(w + (size_t)r * row_bytes), n);
}

TARGET static void rows_f16(float *restrict y, const float *restrict x, const uint8_t *restrict w, size_t row_bytes,
                            int64_t rows, int64_t n) {
    for (int64_t r = 0; r < rows; r++) y[r] = dot_f16(x, w + (size_t)r * row_bytes, n);
}

TARGET static void rows_bf16(float *restrict y, const float *restrict x, const uint8_t *restrict w, size_t row_bytes,
                             int64_t rows, int64_t n) {
    for (int64_t r = 0; r < rows; r++) y[r] = dot_bf16(x, w + (size_t)r * row_bytes, n);
}

TARGET static void dequant_f16(float *restrict y, const uint8_t *restrict w, int64_t n) {
    int64_t k = 0;
    for (; k + 8 <= n; k += 8) _mm256_storeu_ps(y + k, f16x8(w + 2 * k));
    for (; k < n; k++) y[k] = f16_at(w + 2 * k);
}

TARGET static void dequant_bf16(float *restrict y, const uint8_t *restrict w, int64_t n) {
    int64_t k = 0;
    for (; k + 8 <= n; k += 8) _mm256_storeu_ps(y + k, bf16x8(w + 2 * k));
    for (; k < n; k++) y[k] = rlx_bf16_to_f32((uint16_t)(w[2 * k] | (w[2 * k + 1] << 8)));
}

/* ---- blocks (layouts and arithmetic: loader/dequant.c) ---- */

/* block_q8_0 (34 bytes): half d; int8 qs[32]. x = q * d */
INLINE void block_q8_0(const uint8_t *b, const float *x, float *y, int64_t e, acc8 *a) {
    const __m256 d = _mm256_set1_ps(f16_at(b));
    const __m128i q0 = load16(b + 2), q1 = load16(b + 18);
    put32(a, x, y, e, _mm256_mul_ps(cvt_s8(q0), d), _mm256_mul_ps(cvt_s8(high8(q0)), d),
          _mm256_mul_ps(cvt_s8(q1), d), _mm256_mul_ps(cvt_s8(high8(q1)), d));
}

/* block_q4_0 (18 bytes): half d; uint8 qs[16]. x = (q - 8) * d, quant j in the low nibble of
 * qs[j], quant j+16 in the high one */
INLINE void block_q4_0(const uint8_t *b, const float *x, float *y, int64_t e, acc8 *a) {
    const __m256 d = _mm256_set1_ps(f16_at(b));
    const __m128i q = load16(b + 2), eight = _mm_set1_epi8(8);
    const __m128i lo = _mm_sub_epi8(bits8(q, 0, 0x0f), eight), hi = _mm_sub_epi8(bits8(q, 4, 0x0f), eight);
    put32(a, x, y, e, _mm256_mul_ps(cvt_s8(lo), d), _mm256_mul_ps(cvt_s8(high8(lo)), d),
          _mm256_mul_ps(cvt_s8(hi), d), _mm256_mul_ps(cvt_s8(high8(hi)), d));
}

/* Q4_K/Q5_K's packed 6-bit (scale, min) pair j (loader/dequant.c: kquant_scale_min). */
INLINE void scale_min_k4(const uint8_t *s, int j, float d, float dmin, float *dl, float *ml) {
    uint8_t sc, m;
    if (j < 4) {
        sc = s[j] & 63;
        m = s[j + 4] & 63;
    } else {
        sc = (uint8_t)((s[j + 4] & 0x0f) | ((s[j - 4] >> 6) << 4));
        m = (uint8_t)((s[j + 4] >> 4) | ((s[j] >> 6) << 4));
    }
    *dl = d * (float)sc;
    *ml = dmin * (float)m;
}

/* One group of 32 of a Q4_K/Q5_K block, quants 0..15 in q0 and 16..31 in q1: dl * q - ml. */
INLINE void group_k4(acc8 *a, const float *x, float *y, int64_t e, __m128i q0, __m128i q1,
                                   float dl, float ml) {
    const __m256 d = _mm256_set1_ps(dl), m = _mm256_set1_ps(ml);
    put32(a, x, y, e, _mm256_sub_ps(_mm256_mul_ps(d, cvt_u8(q0)), m),
          _mm256_sub_ps(_mm256_mul_ps(d, cvt_u8(high8(q0))), m), _mm256_sub_ps(_mm256_mul_ps(d, cvt_u8(q1)), m),
          _mm256_sub_ps(_mm256_mul_ps(d, cvt_u8(high8(q1))), m));
}

/* block_q4_K (144 bytes): half d, dmin; uint8 scales[12]; uint8 qs[128]; group 2k takes the low
 * nibbles of qs[32k..32k+31], group 2k+1 the high ones. */
INLINE void block_q4_k(const uint8_t *b, const float *x, float *y, int64_t e, acc8 *a) {
    const float d = f16_at(b), dmin = f16_at(b + 2);
    for (int k = 0; k < 4; k++) {
        const __m128i q0 = load16(b + 16 + 32 * k), q1 = load16(b + 32 + 32 * k);
        float dl, ml;
        scale_min_k4(b + 4, 2 * k, d, dmin, &dl, &ml);
        group_k4(a, x, y, e + 64 * k, bits8(q0, 0, 0x0f), bits8(q1, 0, 0x0f), dl, ml);
        scale_min_k4(b + 4, 2 * k + 1, d, dmin, &dl, &ml);
        group_k4(a, x, y, e + 64 * k + 32, bits8(q0, 4, 0x0f), bits8(q1, 4, 0x0f), dl, ml);
    }
}

/* block_q5_K (176 bytes): half d, dmin; uint8 scales[12]; uint8 qh[32]; uint8 qs[128]; as Q4_K
 * plus 16 where bit g of qh[l] is set. */
INLINE void block_q5_k(const uint8_t *b, const float *x, float *y, int64_t e, acc8 *a) {
    const float d = f16_at(b), dmin = f16_at(b + 2);
    const __m128i h0 = load16(b + 16), h1 = load16(b + 32);
    for (int k = 0; k < 4; k++) {
        const __m128i q0 = load16(b + 48 + 32 * k), q1 = load16(b + 64 + 32 * k);
        for (int half = 0; half < 2; half++) {
            int g = 2 * k + half;
            float dl, ml;
            scale_min_k4(b + 4, g, d, dmin, &dl, &ml);
            __m128i l0 = _mm_or_si128(bits8(q0, 4 * half, 0x0f), _mm_slli_epi16(bits8(h0, g, 1), 4));
            __m128i l1 = _mm_or_si128(bits8(q1, 4 * half, 0x0f), _mm_slli_epi16(bits8(h1, g, 1), 4));
            group_k4(a, x, y, e + 32 * g, l0, l1, dl, ml);
        }
    }
}

/* One group of 32 of a Q6_K half: low 4 bits from lo0/lo1 (quants 0..15 / 16..31), high 2 from
 * bits `shift` of h0/h1; x = ds * (q - 32), ds0 for quants 0..15 and ds1 for 16..31. */
INLINE void group_q6(acc8 *a, const float *x, float *y, int64_t e, __m128i lo0, __m128i lo1, __m128i h0,
                                   __m128i h1, int shift, float ds0, float ds1) {
    const __m128i c32 = _mm_set1_epi8(32);
    __m128i q0 = _mm_sub_epi8(_mm_or_si128(lo0, _mm_slli_epi16(bits8(h0, shift, 3), 4)), c32);
    __m128i q1 = _mm_sub_epi8(_mm_or_si128(lo1, _mm_slli_epi16(bits8(h1, shift, 3), 4)), c32);
    const __m256 d0 = _mm256_set1_ps(ds0), d1 = _mm256_set1_ps(ds1);
    put32(a, x, y, e, _mm256_mul_ps(d0, cvt_s8(q0)), _mm256_mul_ps(d0, cvt_s8(high8(q0))),
          _mm256_mul_ps(d1, cvt_s8(q1)), _mm256_mul_ps(d1, cvt_s8(high8(q1))));
}

/* block_q6_K (210 bytes): uint8 ql[128]; uint8 qh[64]; int8 scales[16]; half d.
 * x = (d*scale) * (q - 32); in each 128-element half, element l + 32g takes the low (g < 2) or
 * high nibble of ql[l + 32*(g%2)] and bits 2g of qh[l]; scale index 2g + l/16. */
INLINE void block_q6_k(const uint8_t *b, const float *x, float *y, int64_t e, acc8 *a) {
    const float d = f16_at(b + 208);
    for (int half = 0; half < 2; half++) {
        const uint8_t *ql = b + 64 * half, *qh = b + 128 + 32 * half;
        const int8_t *sc = (const int8_t *)(const void *)(b + 192 + 8 * half);
        const __m128i a0 = load16(ql), a1 = load16(ql + 16), b0 = load16(ql + 32), b1 = load16(ql + 48);
        const __m128i h0 = load16(qh), h1 = load16(qh + 16);
        int64_t o = e + 128 * half;
        group_q6(a, x, y, o, bits8(a0, 0, 0x0f), bits8(a1, 0, 0x0f), h0, h1, 0, d * (float)sc[0], d * (float)sc[1]);
        group_q6(a, x, y, o + 32, bits8(b0, 0, 0x0f), bits8(b1, 0, 0x0f), h0, h1, 2, d * (float)sc[2],
                 d * (float)sc[3]);
        group_q6(a, x, y, o + 64, bits8(a0, 4, 0x0f), bits8(a1, 4, 0x0f), h0, h1, 4, d * (float)sc[4],
                 d * (float)sc[5]);
        group_q6(a, x, y, o + 96, bits8(b0, 4, 0x0f), bits8(b1, 4, 0x0f), h0, h1, 6, d * (float)sc[6],
                 d * (float)sc[7]);
    }
}

/* The dot and dequant entries of a block type, from its block function. */
#define BLOCK_KERNELS(name, elems, bytes)                                                                          \
    TARGET static void rows_##name(float *restrict y, const float *restrict x, const uint8_t *restrict w,         \
                                   size_t row_bytes, int64_t rows, int64_t n) {                                    \
        for (int64_t r = 0; r < rows; r++) {                                                                        \
            const uint8_t *b = w + (size_t)r * row_bytes;                                                           \
            acc8 a = acc_zero();                                                                                    \
            for (int64_t i = 0; i < n / (elems); i++) block_##name(b + (size_t)i * (bytes), x, NULL, i * (elems), &a); \
            y[r] = acc_sum(&a);                                                                                     \
        }                                                                                                           \
    }                                                                                                               \
    TARGET static void dequant_##name(float *restrict y, const uint8_t *restrict w, int64_t n) {                   \
        for (int64_t i = 0; i < n / (elems); i++) block_##name(w + (size_t)i * (bytes), NULL, y, i * (elems), NULL); \
    }

BLOCK_KERNELS(q8_0, 32, 34)
BLOCK_KERNELS(q4_0, 32, 18)
BLOCK_KERNELS(q4_k, 256, 144)
BLOCK_KERNELS(q5_k, 256, 176)
BLOCK_KERNELS(q6_k, 256, 210)

/* ---- f32 loops ---- */

TARGET static void gemv_avx2(float *restrict y, const float *restrict x, const float *restrict m, int64_t stride,
                             int64_t rows, int64_t n) {
    for (int64_t r = 0; r < rows; r++) y[r] = dot_f32(x, m + r * stride, n);
}

TARGET static void gemv_t_avx2(float *restrict y, const float *restrict w, const float *restrict m, int64_t stride,
                               int64_t rows, int64_t n) {
    for (int64_t r = 0; r < rows; r++) {
        const float *restrict xr = m + r * stride;
        const __m256 va = _mm256_set1_ps(w[r]);
        int64_t k = 0;
        for (; k + 8 <= n; k += 8)
            _mm256_storeu_ps(y + k, _mm256_fmadd_ps(va, _mm256_loadu_ps(xr + k), _mm256_loadu_ps(y + k)));
        for (; k < n; k++) y[k] += w[r] * xr[k];
    }
}

const rlx_cpu_simd rlx_cpu_simd_avx2 = {
    .name = "avx2",
    .gemv = gemv_avx2,
    .gemv_t = gemv_t_avx2,
    .dot =
        {
            [RLX_DTYPE_F32] = rows_f32,
            [RLX_DTYPE_F16] = rows_f16,
            [RLX_DTYPE_BF16] = rows_bf16,
            [RLX_DTYPE_Q8_0] = rows_q8_0,
            [RLX_DTYPE_Q4_0] = rows_q4_0,
            [RLX_DTYPE_Q4_K] = rows_q4_k,
            [RLX_DTYPE_Q5_K] = rows_q5_k,
            [RLX_DTYPE_Q6_K] = rows_q6_k,
        },
    .dequant =
        {
            [RLX_DTYPE_F16] = dequant_f16,
            [RLX_DTYPE_BF16] = dequant_bf16,
            [RLX_DTYPE_Q8_0] = dequant_q8_0,
            [RLX_DTYPE_Q4_0] = dequant_q4_0,
            [RLX_DTYPE_Q4_K] = dequant_q4_k,
            [RLX_DTYPE_Q5_K] = dequant_q5_k,
            [RLX_DTYPE_Q6_K] = dequant_q6_k,
        },
};
#endif
