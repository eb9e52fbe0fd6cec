/* The CPU backend's inner loops for x86-64 CPUs with AVX2, FMA and F16C (Haswell, Zen and later),
 * built with function target attributes so the rest of the library stays baseline x86-64;
 * cpu_simd.c picks this variant at run time when the CPU has all three. Fixed summation order:
 * four accumulators of 8 lanes take 32 consecutive elements per step (one fused multiply-add
 * each), an 8-wide tail goes to the first, the lanes are reduced as ((s0 + s1) + (s2 + s3)),
 * then ((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 + l7)), and a scalar tail is added last.
 * Stored weights are decoded 32 at a time in registers with loader/core/dequant.c's arithmetic (a
 * multiply and a subtract, never fused), so every decoded value is bit-identical to
 * rlx_dequantize's (NaNs aside: F16C quiets a signalling NaN, which stays a NaN) and dot[type]
 * equals gemv over dequant[type] exactly. */
#include "cpu_fallback/cpu_internal.h"

#if RLX_CPU_HAVE_AVX2
#include "cpu_fallback/cpu_simd_x86.h"
#include "loader/core/half.h"

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
INLINE void put32(acc8 *a, const float *x, float *y, int64_t e, __m256 w0, __m256 w1, __m256 w2, __m256 w3) {
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

/* The low 8 bytes of q as 8 floats, read as unsigned or signed, and the high 8 bytes. */
INLINE __m256 cvt_u8(__m128i q) { return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(q)); }
INLINE __m256 cvt_s8(__m128i q) { return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q)); }
INLINE __m128i high8(__m128i q) { return _mm_srli_si128(q, 8); }

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
    for (; k < n; k++) s += x[k] * x86_f16_at(w + 2 * k);
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
    for (; k < n; k++) y[k] = x86_f16_at(w + 2 * k);
}

TARGET static void dequant_bf16(float *restrict y, const uint8_t *restrict w, int64_t n) {
    int64_t k = 0;
    for (; k + 8 <= n; k += 8) _mm256_storeu_ps(y + k, bf16x8(w + 2 * k));
    for (; k < n; k++) y[k] = rlx_bf16_to_f32((uint16_t)(w[2 * k] | (w[2 * k + 1] << 8)));
}

/* ---- blocks (cpu_simd_x86.h decodes the quants) ---- */

/* 32 quants as 16 + 16 signed bytes, times d0 (quants 0..15) and d1 (16..31): Q8_0, Q4_0, Q6_K. */
INLINE void put_scaled(acc8 *a, const float *x, float *y, int64_t e, __m128i q0, __m128i q1, __m256 d0, __m256 d1) {
    put32(a, x, y, e, _mm256_mul_ps(d0, cvt_s8(q0)), _mm256_mul_ps(d0, cvt_s8(high8(q0))),
          _mm256_mul_ps(d1, cvt_s8(q1)), _mm256_mul_ps(d1, cvt_s8(high8(q1))));
}

/* 32 quants as 16 + 16 unsigned bytes, as d * q - m: Q4_K, Q5_K. */
INLINE void put_affine(acc8 *a, const float *x, float *y, int64_t e, __m128i q0, __m128i q1, __m256 d, __m256 m) {
    put32(a, x, y, e, _mm256_sub_ps(_mm256_mul_ps(d, cvt_u8(q0)), m),
          _mm256_sub_ps(_mm256_mul_ps(d, cvt_u8(high8(q0))), m), _mm256_sub_ps(_mm256_mul_ps(d, cvt_u8(q1)), m),
          _mm256_sub_ps(_mm256_mul_ps(d, cvt_u8(high8(q1))), m));
}

/* block_q8_0 (34 bytes): half d; int8 qs[32]; x = q * d */
INLINE void block_q8_0(const uint8_t *b, const float *x, float *y, int64_t e, acc8 *a) {
    const __m256 d = _mm256_set1_ps(x86_f16_at(b));
    put_scaled(a, x, y, e, x86_load16(b + 2), x86_load16(b + 18), d, d);
}

INLINE void block_q4_0(const uint8_t *b, const float *x, float *y, int64_t e, acc8 *a) {
    const __m256 d = _mm256_set1_ps(x86_f16_at(b));
    __m128i q0, q1;
    x86_q4_0_quants(b, &q0, &q1);
    put_scaled(a, x, y, e, q0, q1, d, d);
}

/* The loops below are unrolled where a bit position depends on the group, so that every shift
 * is an immediate. dl, ml: the block's scales and mins (x86_scales_k4). */
INLINE void group_k(acc8 *a, const float *x, float *y, int64_t e, const uint8_t *b, int g, bool q5, __m256 dl,
                    __m256 ml) {
    __m128i q0, q1;
    if (q5) x86_q5_k_quants(b, g, &q0, &q1);
    else x86_q4_k_quants(b, g, &q0, &q1);
    put_affine(a, x, y, e + 32 * g, q0, q1, x86_lane(dl, g), x86_lane(ml, g));
}

INLINE void block_q4_k(const uint8_t *b, const float *x, float *y, int64_t e, acc8 *a) {
    __m256 dl, ml;
    x86_scales_k4(b + 4, x86_f16_at(b), x86_f16_at(b + 2), &dl, &ml);
    for (int k = 0; k < 4; k++) {
        group_k(a, x, y, e, b, 2 * k, false, dl, ml);
        group_k(a, x, y, e, b, 2 * k + 1, false, dl, ml);
    }
}

INLINE void block_q5_k(const uint8_t *b, const float *x, float *y, int64_t e, acc8 *a) {
    __m256 dl, ml;
    x86_scales_k4(b + 4, x86_f16_at(b), x86_f16_at(b + 2), &dl, &ml);
    for (int k = 0; k < 4; k++) {
        group_k(a, x, y, e, b, 2 * k, true, dl, ml);
        group_k(a, x, y, e, b, 2 * k + 1, true, dl, ml);
    }
}

/* ds: the scales (times d) of half h (x86_scales_q6). */
INLINE void group_q6(acc8 *a, const float *x, float *y, int64_t e, const uint8_t *b, int h, int g, __m256 ds) {
    __m128i q0, q1;
    x86_q6_k_quants(b, h, g, &q0, &q1);
    put_scaled(a, x, y, e + 128 * h + 32 * g, q0, q1, x86_lane(ds, 2 * g), x86_lane(ds, 2 * g + 1));
}

INLINE void block_q6_k(const uint8_t *b, const float *x, float *y, int64_t e, acc8 *a) {
    __m256 ds[2];
    x86_scales_q6(b, x86_f16_at(b + 208), &ds[0], &ds[1]);
    for (int h = 0; h < 2; h++) {
        group_q6(a, x, y, e, b, h, 0, ds[h]);
        group_q6(a, x, y, e, b, h, 1, ds[h]);
        group_q6(a, x, y, e, b, h, 2, ds[h]);
        group_q6(a, x, y, e, b, h, 3, ds[h]);
    }
}

/* The dot and dequant entries of a block type, from its block function. */
#define BLOCK_KERNELS(name, elems, bytes)                                                                  \
    TARGET static void rows_##name(float *restrict y, const float *restrict x, const uint8_t *restrict w,  \
                        size_t row_bytes, int64_t rows, int64_t n) {                                       \
        for (int64_t r = 0; r < rows; r++) {                                                               \
            const uint8_t *b = w + (size_t)r * row_bytes;                                                  \
            acc8 a = acc_zero();                                                                           \
            for (int64_t i = 0; i < n / (elems); i++)                                                      \
                block_##name(b + (size_t)i * (bytes), x, NULL, i * (elems), &a);                           \
            y[r] = acc_sum(&a);                                                                            \
        }                                                                                                  \
    }                                                                                                      \
    TARGET static void dequant_##name(float *restrict y, const uint8_t *restrict w, int64_t n) {           \
        for (int64_t i = 0; i < n / (elems); i++)                                                          \
            block_##name(w + (size_t)i * (bytes), NULL, y, i * (elems), NULL);                             \
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
    RLX_CPU_SIMD_TYPE_KERNELS,
};
#endif
