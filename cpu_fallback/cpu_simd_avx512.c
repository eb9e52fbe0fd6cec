/* The CPU backend's inner loops for x86-64 CPUs with AVX-512 F, BW and VL (Skylake-SP, Ice Lake,
 * Sapphire Rapids, Zen 4 and later), on top of AVX2, FMA and F16C; built with function target attributes
 * and picked at run time like the AVX2 variant. Twice the lanes halve the instructions that
 * decode quantized weights, which bound decode speed on K-quants. Fixed summation order: four
 * accumulators of 16 lanes take 64 consecutive elements per step, element e going to
 * accumulator (e / 16) % 4 (so a 32-element block or group fills s0, s1 or s2, s3 by its
 * parity); a 16-wide tail and then the last n % 16 elements (a masked vector) go to s0, and the
 * lanes are reduced as (s0 + s1) + (s2 + s3), then l_i + l_(i+8), then l_i + l_(i+4), then
 * (l0 + l2) + (l1 + l3). Four chains, not two, because a fused multiply-add's latency would
 * otherwise bound the loop; no scalar tail, because short rows (attention over head sizes of 8)
 * would spend their time in it.
 * Weights are decoded as in the AVX2 variant (cpu_simd_x86.h), each value bit-identical to
 * rlx_dequantize's, so dot[type] equals gemv over dequant[type] exactly here too. */
#include "cpu_fallback/cpu_internal.h"

#if RLX_CPU_HAVE_AVX2
#include "cpu_fallback/cpu_simd_x86.h"

#define TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma,f16c")))
/* Decoders and accumulators must inline into each loop: called, they would pass the
 * accumulators through memory. */
#define INLINE static inline __attribute__((always_inline, target("avx512f,avx512bw,avx512vl,avx2,fma,f16c")))

typedef struct acc16 {
    __m512 s0, s1, s2, s3;
} acc16;

INLINE acc16 acc_zero(void) {
    __m512 z = _mm512_setzero_ps();
    return (acc16){z, z, z, z};
}

INLINE float acc_sum(const acc16 *a) {
    __m512 t = _mm512_add_ps(_mm512_add_ps(a->s0, a->s1), _mm512_add_ps(a->s2, a->s3));
    __m256 u = _mm256_add_ps(_mm512_castps512_ps256(t),
                             _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(t), 1)));
    __m128 v = _mm_add_ps(_mm256_castps256_ps128(u), _mm256_extractf128_ps(u, 1));
    __m128 w = _mm_add_ps(v, _mm_movehl_ps(v, v));
    return _mm_cvtss_f32(_mm_add_ss(w, _mm_shuffle_ps(w, w, 1)));
}

/* 32 decoded weights, w0 of elements [e, e + 16) and w1 of [e + 16, e + 32), e a multiple of 32
 * whose parity (e / 32) % 2 is `odd`: stored to y + e when y is set (dequantization), else
 * multiplied with x + e into s0, s1 (even) or s2, s3 (odd). */
INLINE void put32(acc16 *a, int odd, const float *x, float *y, int64_t e, __m512 w0, __m512 w1) {
    if (y) {
        _mm512_storeu_ps(y + e, w0);
        _mm512_storeu_ps(y + e + 16, w1);
    } else if (odd) {
        a->s2 = _mm512_fmadd_ps(_mm512_loadu_ps(x + e), w0, a->s2);
        a->s3 = _mm512_fmadd_ps(_mm512_loadu_ps(x + e + 16), w1, a->s3);
    } else {
        a->s0 = _mm512_fmadd_ps(_mm512_loadu_ps(x + e), w0, a->s0);
        a->s1 = _mm512_fmadd_ps(_mm512_loadu_ps(x + e + 16), w1, a->s1);
    }
}

/* ---- decoding ---- */

/* n < 16 halves at p (the rest zero) as 16 floats. */
INLINE __m512 f16x16_part(const uint8_t *p, int64_t n) {
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16((__mmask16)((1u << n) - 1u), p));
}

INLINE __m512 f16x16(const uint8_t *p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)p));
}

INLINE __m512 bf16_widen(__m256i h) { return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16)); }

INLINE __m512 bf16x16(const uint8_t *p) { return bf16_widen(_mm256_loadu_si256((const __m256i *)(const void *)p)); }

INLINE __m512 bf16x16_part(const uint8_t *p, int64_t n) {
    return bf16_widen(_mm256_maskz_loadu_epi16((__mmask16)((1u << n) - 1u), p));
}

/* n < 16 floats at p (the rest zero). */
INLINE __m512 f32x16_part(const float *p, int64_t n) { return _mm512_maskz_loadu_ps((__mmask16)((1u << n) - 1u), p); }

/* 16 bytes as 16 floats, read as unsigned or signed. */
INLINE __m512 cvt_u8(__m128i q) { return _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(q)); }
INLINE __m512 cvt_s8(__m128i q) { return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q)); }

/* ---- rows of plain types ---- */

/* The plain-type loops: 64-element steps, a last 32-element half step, a 16-wide tail, and the
 * remaining n % 16 as a masked vector. */
TARGET static float dot_f32(const float *restrict x, const float *restrict w, int64_t n) {
    acc16 a = acc_zero();
    int64_t k = 0;
    for (; k + 64 <= n; k += 64) {
        put32(&a, 0, x, NULL, k, _mm512_loadu_ps(w + k), _mm512_loadu_ps(w + k + 16));
        put32(&a, 1, x, NULL, k + 32, _mm512_loadu_ps(w + k + 32), _mm512_loadu_ps(w + k + 48));
    }
    for (; k + 32 <= n; k += 32) put32(&a, 0, x, NULL, k, _mm512_loadu_ps(w + k), _mm512_loadu_ps(w + k + 16));
    for (; k + 16 <= n; k += 16) a.s0 = _mm512_fmadd_ps(_mm512_loadu_ps(x + k), _mm512_loadu_ps(w + k), a.s0);
    if (k < n) a.s0 = _mm512_fmadd_ps(f32x16_part(x + k, n - k), f32x16_part(w + k, n - k), a.s0);
    return acc_sum(&a);
}

TARGET static float dot_f16(const float *restrict x, const uint8_t *restrict w, int64_t n) {
    acc16 a = acc_zero();
    int64_t k = 0;
    for (; k + 64 <= n; k += 64) {
        put32(&a, 0, x, NULL, k, f16x16(w + 2 * k), f16x16(w + 2 * k + 32));
        put32(&a, 1, x, NULL, k + 32, f16x16(w + 2 * k + 64), f16x16(w + 2 * k + 96));
    }
    for (; k + 32 <= n; k += 32) put32(&a, 0, x, NULL, k, f16x16(w + 2 * k), f16x16(w + 2 * k + 32));
    for (; k + 16 <= n; k += 16) a.s0 = _mm512_fmadd_ps(_mm512_loadu_ps(x + k), f16x16(w + 2 * k), a.s0);
    if (k < n) a.s0 = _mm512_fmadd_ps(f32x16_part(x + k, n - k), f16x16_part(w + 2 * k, n - k), a.s0);
    return acc_sum(&a);
}

TARGET static float dot_bf16(const float *restrict x, const uint8_t *restrict w, int64_t n) {
    acc16 a = acc_zero();
    int64_t k = 0;
    for (; k + 64 <= n; k += 64) {
        put32(&a, 0, x, NULL, k, bf16x16(w + 2 * k), bf16x16(w + 2 * k + 32));
        put32(&a, 1, x, NULL, k + 32, bf16x16(w + 2 * k + 64), bf16x16(w + 2 * k + 96));
    }
    for (; k + 32 <= n; k += 32) put32(&a, 0, x, NULL, k, bf16x16(w + 2 * k), bf16x16(w + 2 * k + 32));
    for (; k + 16 <= n; k += 16) a.s0 = _mm512_fmadd_ps(_mm512_loadu_ps(x + k), bf16x16(w + 2 * k), a.s0);
    if (k < n) a.s0 = _mm512_fmadd_ps(f32x16_part(x + k, n - k), bf16x16_part(w + 2 * k, n - k), a.s0);
    return acc_sum(&a);
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
    for (; k + 16 <= n; k += 16) _mm512_storeu_ps(y + k, f16x16(w + 2 * k));
    if (k < n) _mm512_mask_storeu_ps(y + k, (__mmask16)((1u << (n - k)) - 1u), f16x16_part(w + 2 * k, n - k));
}

TARGET static void dequant_bf16(float *restrict y, const uint8_t *restrict w, int64_t n) {
    int64_t k = 0;
    for (; k + 16 <= n; k += 16) _mm512_storeu_ps(y + k, bf16x16(w + 2 * k));
    if (k < n) _mm512_mask_storeu_ps(y + k, (__mmask16)((1u << (n - k)) - 1u), bf16x16_part(w + 2 * k, n - k));
}

/* ---- blocks (cpu_simd_x86.h decodes the quants) ---- */

/* 32 quants as 16 + 16 signed bytes, times d0 (quants 0..15) and d1 (16..31): Q8_0, Q4_0, Q6_K. */
INLINE void put_scaled(acc16 *a, int odd, const float *x, float *y, int64_t e, __m128i q0, __m128i q1, __m512 d0,
                       __m512 d1) {
    put32(a, odd, x, y, e, _mm512_mul_ps(d0, cvt_s8(q0)), _mm512_mul_ps(d1, cvt_s8(q1)));
}

/* 32 quants as 16 + 16 unsigned bytes, as d * q - m: Q4_K, Q5_K. */
INLINE void put_affine(acc16 *a, int odd, const float *x, float *y, int64_t e, __m128i q0, __m128i q1, __m512 d,
                       __m512 m) {
    put32(a, odd, x, y, e, _mm512_sub_ps(_mm512_mul_ps(d, cvt_u8(q0)), m),
          _mm512_sub_ps(_mm512_mul_ps(d, cvt_u8(q1)), m));
}

/* Lane i of v in all 16 lanes. */
INLINE __m512 lane16(__m256 v, int i) {
    return _mm512_permutexvar_ps(_mm512_set1_epi32(i), _mm512_castps256_ps512(v));
}

/* Block functions: block b holds elements [e, e + block size) of the row; i is its index. */

INLINE void block_q8_0(const uint8_t *b, int64_t i, const float *x, float *y, int64_t e, acc16 *a) {
    const __m512 d = _mm512_set1_ps(x86_f16_at(b));
    put_scaled(a, (int)(i & 1), x, y, e, x86_load16(b + 2), x86_load16(b + 18), d, d);
}

INLINE void block_q4_0(const uint8_t *b, int64_t i, const float *x, float *y, int64_t e, acc16 *a) {
    const __m512 d = _mm512_set1_ps(x86_f16_at(b));
    __m128i q0, q1;
    x86_q4_0_quants(b, &q0, &q1);
    put_scaled(a, (int)(i & 1), x, y, e, q0, q1, d, d);
}

/* The loops below are unrolled where a bit position depends on the group, so that every shift
 * is an immediate. dl, ml: the block's scales and mins (x86_scales_k4). */
INLINE void group_k(acc16 *a, const float *x, float *y, int64_t e, const uint8_t *b, int g, bool q5, __m256 dl,
                    __m256 ml) {
    __m128i q0, q1;
    if (q5) x86_q5_k_quants(b, g, &q0, &q1);
    else x86_q4_k_quants(b, g, &q0, &q1);
    put_affine(a, g & 1, x, y, e + 32 * g, q0, q1, lane16(dl, g), lane16(ml, g));
}

INLINE void block_q4_k(const uint8_t *b, int64_t i, const float *x, float *y, int64_t e, acc16 *a) {
    (void)i;
    __m256 dl, ml;
    x86_scales_k4(b + 4, x86_f16_at(b), x86_f16_at(b + 2), &dl, &ml);
    for (int k = 0; k < 4; k++) {
        group_k(a, x, y, e, b, 2 * k, false, dl, ml);
        group_k(a, x, y, e, b, 2 * k + 1, false, dl, ml);
    }
}

INLINE void block_q5_k(const uint8_t *b, int64_t i, const float *x, float *y, int64_t e, acc16 *a) {
    (void)i;
    __m256 dl, ml;
    x86_scales_k4(b + 4, x86_f16_at(b), x86_f16_at(b + 2), &dl, &ml);
    for (int k = 0; k < 4; k++) {
        group_k(a, x, y, e, b, 2 * k, true, dl, ml);
        group_k(a, x, y, e, b, 2 * k + 1, true, dl, ml);
    }
}

/* ds: the scales (times d) of half h (x86_scales_q6). */
INLINE void group_q6(acc16 *a, const float *x, float *y, int64_t e, const uint8_t *b, int h, int g, __m256 ds) {
    __m128i q0, q1;
    x86_q6_k_quants(b, h, g, &q0, &q1);
    put_scaled(a, g & 1, x, y, e + 128 * h + 32 * g, q0, q1, lane16(ds, 2 * g), lane16(ds, 2 * g + 1));
}

INLINE void block_q6_k(const uint8_t *b, int64_t i, const float *x, float *y, int64_t e, acc16 *a) {
    (void)i;
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
            acc16 a = acc_zero();                                                                          \
            for (int64_t i = 0; i < n / (elems); i++)                                                      \
                block_##name(b + (size_t)i * (bytes), i, x, NULL, i * (elems), &a);                        \
            y[r] = acc_sum(&a);                                                                            \
        }                                                                                                  \
    }                                                                                                      \
    TARGET static void dequant_##name(float *restrict y, const uint8_t *restrict w, int64_t n) {           \
        for (int64_t i = 0; i < n / (elems); i++)                                                          \
            block_##name(w + (size_t)i * (bytes), i, NULL, y, i * (elems), NULL);                          \
    }

BLOCK_KERNELS(q8_0, 32, 34)
BLOCK_KERNELS(q4_0, 32, 18)
BLOCK_KERNELS(q4_k, 256, 144)
BLOCK_KERNELS(q5_k, 256, 176)
BLOCK_KERNELS(q6_k, 256, 210)

/* ---- f32 loops ---- */

TARGET static void gemv_avx512(float *restrict y, const float *restrict x, const float *restrict m, int64_t stride,
                               int64_t rows, int64_t n) {
    for (int64_t r = 0; r < rows; r++) y[r] = dot_f32(x, m + r * stride, n);
}

TARGET static void gemv_t_avx512(float *restrict y, const float *restrict w, const float *restrict m, int64_t stride,
                                 int64_t rows, int64_t n) {
    const __mmask16 tail = (__mmask16)((1u << (n % 16)) - 1u);
    for (int64_t r = 0; r < rows; r++) {
        const float *restrict xr = m + r * stride;
        const __m512 va = _mm512_set1_ps(w[r]);
        int64_t k = 0;
        for (; k + 16 <= n; k += 16)
            _mm512_storeu_ps(y + k, _mm512_fmadd_ps(va, _mm512_loadu_ps(xr + k), _mm512_loadu_ps(y + k)));
        if (k < n)
            _mm512_mask_storeu_ps(y + k, tail, _mm512_fmadd_ps(va, f32x16_part(xr + k, n - k), f32x16_part(y + k, n - k)));
    }
}

const rlx_cpu_simd rlx_cpu_simd_avx512 = {
    .name = "avx512",
    /* measured on a Xeon (Skylake-SP class): stories260K (rows of 64 and 172, heads of 8) ran 20%
     * slower than on AVX2 when its rows were on this variant, and as fast with rows under 256 on
     * AVX2; qwen3-0.6B Q4_K_M (rows of 1024 and more) decoded 1.3x faster here */
    .min_row = 256,
    .narrow = &rlx_cpu_simd_avx2,
    .gemv = gemv_avx512,
    .gemv_t = gemv_t_avx512,
    RLX_CPU_SIMD_TYPE_KERNELS,
};
#endif
