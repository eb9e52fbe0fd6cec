/* The CPU backend's inner loops, written with GCC/Clang vector extensions so they vectorise at -O2
 * without -ffast-math: gemv (many dot products against one vector) and its transpose (a weighted
 * sum of rows). Each variant has a fixed reduction order, so a result never depends on the thread
 * count; the variant is picked once per backend from the CPU (AVX2 when present, else a baseline
 * of 128-bit vectors, which every x86-64 and arm64 CPU has). Whole loops live here, not single
 * dot products, so short rows (a head size of 8) do not pay a call each. */
#include <string.h>

#include "cpu_fallback/cpu_internal.h"

typedef float v4f __attribute__((vector_size(16)));

static inline float dot_base(const float *restrict a, const float *restrict b, int64_t n) {
    v4f s0 = {0}, s1 = {0}, s2 = {0}, s3 = {0};
    int64_t k = 0;
    for (; k + 16 <= n; k += 16) {
        v4f a0, a1, a2, a3, b0, b1, b2, b3;
        memcpy(&a0, a + k, 16);
        memcpy(&a1, a + k + 4, 16);
        memcpy(&a2, a + k + 8, 16);
        memcpy(&a3, a + k + 12, 16);
        memcpy(&b0, b + k, 16);
        memcpy(&b1, b + k + 4, 16);
        memcpy(&b2, b + k + 8, 16);
        memcpy(&b3, b + k + 12, 16);
        s0 += a0 * b0;
        s1 += a1 * b1;
        s2 += a2 * b2;
        s3 += a3 * b3;
    }
    for (; k + 4 <= n; k += 4) {
        v4f a0, b0;
        memcpy(&a0, a + k, 16);
        memcpy(&b0, b + k, 16);
        s0 += a0 * b0;
    }
    v4f t = (s0 + s1) + (s2 + s3);
    float s = (t[0] + t[2]) + (t[1] + t[3]);
    for (; k < n; k++) s += a[k] * b[k];
    return s;
}

static inline void axpy_base(float *restrict y, float alpha, const float *restrict x, int64_t n) {
    int64_t k = 0;
    v4f va = {alpha, alpha, alpha, alpha};
    for (; k + 4 <= n; k += 4) {
        v4f xv, yv;
        memcpy(&xv, x + k, 16);
        memcpy(&yv, y + k, 16);
        yv += va * xv;
        memcpy(y + k, &yv, 16);
    }
    for (; k < n; k++) y[k] += alpha * x[k];
}

static void gemv_base(float *restrict y, const float *restrict x, const float *restrict m, int64_t stride,
                      int64_t rows, int64_t n) {
    for (int64_t r = 0; r < rows; r++) y[r] = dot_base(x, m + r * stride, n);
}

static void gemv_t_base(float *restrict y, const float *restrict w, const float *restrict m, int64_t stride,
                        int64_t rows, int64_t n) {
    for (int64_t r = 0; r < rows; r++) axpy_base(y, w[r], m + r * stride, n);
}

static const rlx_cpu_simd simd_base = {"base", gemv_base, gemv_t_base};

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
typedef float v8f __attribute__((vector_size(32)));

#define AVX2 __attribute__((target("avx2")))

AVX2 static inline float dot_avx2(const float *restrict a, const float *restrict b, int64_t n) {
    v8f s0 = {0}, s1 = {0}, s2 = {0}, s3 = {0};
    int64_t k = 0;
    for (; k + 32 <= n; k += 32) {
        v8f a0, a1, a2, a3, b0, b1, b2, b3;
        memcpy(&a0, a + k, 32);
        memcpy(&a1, a + k + 8, 32);
        memcpy(&a2, a + k + 16, 32);
        memcpy(&a3, a + k + 24, 32);
        memcpy(&b0, b + k, 32);
        memcpy(&b1, b + k + 8, 32);
        memcpy(&b2, b + k + 16, 32);
        memcpy(&b3, b + k + 24, 32);
        s0 += a0 * b0;
        s1 += a1 * b1;
        s2 += a2 * b2;
        s3 += a3 * b3;
    }
    for (; k + 8 <= n; k += 8) {
        v8f a0, b0;
        memcpy(&a0, a + k, 32);
        memcpy(&b0, b + k, 32);
        s0 += a0 * b0;
    }
    v8f t = (s0 + s1) + (s2 + s3);
    float s = ((t[0] + t[4]) + (t[2] + t[6])) + ((t[1] + t[5]) + (t[3] + t[7]));
    for (; k < n; k++) s += a[k] * b[k];
    return s;
}

AVX2 static inline void axpy_avx2(float *restrict y, float alpha, const float *restrict x, int64_t n) {
    int64_t k = 0;
    v8f va = {alpha, alpha, alpha, alpha, alpha, alpha, alpha, alpha};
    for (; k + 8 <= n; k += 8) {
        v8f xv, yv;
        memcpy(&xv, x + k, 32);
        memcpy(&yv, y + k, 32);
        yv += va * xv;
        memcpy(y + k, &yv, 32);
    }
    for (; k < n; k++) y[k] += alpha * x[k];
}

AVX2 static void gemv_avx2(float *restrict y, const float *restrict x, const float *restrict m, int64_t stride,
                           int64_t rows, int64_t n) {
    for (int64_t r = 0; r < rows; r++) y[r] = dot_avx2(x, m + r * stride, n);
}

AVX2 static void gemv_t_avx2(float *restrict y, const float *restrict w, const float *restrict m, int64_t stride,
                             int64_t rows, int64_t n) {
    for (int64_t r = 0; r < rows; r++) axpy_avx2(y, w[r], m + r * stride, n);
}

static const rlx_cpu_simd simd_avx2 = {"avx2", gemv_avx2, gemv_t_avx2};
#endif

const rlx_cpu_simd *rlx_cpu_simd_select(void) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2")) return &simd_avx2;
#endif
    return &simd_base;
}
