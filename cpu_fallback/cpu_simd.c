/* The CPU backend's portable inner loops, written with GCC/Clang vector extensions (128-bit: SSE2
 * on x86-64, NEON on arm64), and the choice of variant. They vectorise at -O2 without
 * -ffast-math. The fixed summation order every variant keeps (cpu_internal.h) is here: four
 * accumulators of 4 lanes take 16 consecutive elements per step, a 4-wide tail goes to the first,
 * the lanes are reduced as ((s0 + s1) + (s2 + s3)) then (l0 + l2) + (l1 + l3), and a scalar tail
 * is added last. Stored weights are decoded 16 at a time with the arithmetic of loader/core/dequant.c
 * (the order of float operations included), so each decoded value is bit-identical to
 * rlx_dequantize's. Whole loops live here, not single dot products, so short rows (a head size
 * of 8) do not pay a call each. */
#include <stdlib.h>
#include <string.h>

#include "cpu_fallback/cpu_internal.h"
#include "cpu_fallback/cpu_options.h"
#include "loader/core/half.h"

#if RLX_CPU_HAVE_AVX2
#include <cpuid.h>
#endif

/* Decoders and accumulators must inline into each loop: called, they would pass the
 * accumulators through memory. */
#define INLINE static inline __attribute__((always_inline))

typedef float v4f __attribute__((vector_size(16)));
typedef int32_t v4i __attribute__((vector_size(16)));
typedef uint32_t v4u __attribute__((vector_size(16)));
typedef uint16_t v4h __attribute__((vector_size(8)));
typedef uint8_t v4b __attribute__((vector_size(4)));
typedef int8_t v4c __attribute__((vector_size(4)));

typedef struct acc {
    v4f s0, s1, s2, s3;
} acc;

INLINE v4f ld(const float *p) {
    v4f v;
    memcpy(&v, p, sizeof v);
    return v;
}

INLINE void st(float *p, v4f v) { memcpy(p, &v, sizeof v); }

INLINE float acc_sum(const acc *a) {
    v4f t = (a->s0 + a->s1) + (a->s2 + a->s3);
    return (t[0] + t[2]) + (t[1] + t[3]);
}

/* 16 decoded weights: stored to y when y is set (dequantization), else multiplied with x[0..16)
 * into a (a dot product). */
INLINE void put16(acc *a, const float *x, float *y, v4f w0, v4f w1, v4f w2, v4f w3) {
    if (y) {
        st(y, w0);
        st(y + 4, w1);
        st(y + 8, w2);
        st(y + 12, w3);
        return;
    }
    a->s0 += ld(x) * w0;
    a->s1 += ld(x + 4) * w1;
    a->s2 += ld(x + 8) * w2;
    a->s3 += ld(x + 12) * w3;
}

/* ---- decoding 4 values ---- */

INLINE v4f splat(float v) { return (v4f){v, v, v, v}; }

INLINE v4f u8x4(v4b q) { return __builtin_convertvector(q, v4f); }

INLINE v4b bytes4(const uint8_t *p) {
    v4b q;
    memcpy(&q, p, sizeof q);
    return q;
}

/* rlx_f16_to_f32 on 4 lanes: exponent and mantissa moved into place and scaled by 2^112 (which
 * also normalises subnormals), infinities and NaNs rebuilt with their payload. */
INLINE v4f f16x4(const uint8_t *p) {
    v4h h;
    memcpy(&h, p, sizeof h);
    v4u u = __builtin_convertvector(h, v4u);
    v4u sign = (u & 0x8000u) << 16, em = u & 0x7fffu;
    v4f mag = (v4f)(em << 13) * 0x1p112f;
    v4u special = (v4u)(em >= 0x7c00u);
    v4u bits = sign | ((v4u)mag & ~special) | ((0x7f800000u | ((em & 0x3ffu) << 13)) & special);
    return (v4f)bits;
}

INLINE v4f bf16x4(const uint8_t *p) {
    v4h h;
    memcpy(&h, p, sizeof h);
    return (v4f)(__builtin_convertvector(h, v4u) << 16);
}

INLINE uint16_t u16_at(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }
INLINE float f16_at(const uint8_t *p) { return rlx_f16_to_f32(u16_at(p)); }

/* ---- rows of plain types ---- */

static float dot_f32(const float *restrict x, const float *restrict w, int64_t n) {
    acc a = {0};
    int64_t k = 0;
    for (; k + 16 <= n; k += 16) put16(&a, x + k, NULL, ld(w + k), ld(w + k + 4), ld(w + k + 8), ld(w + k + 12));
    for (; k + 4 <= n; k += 4) a.s0 += ld(x + k) * ld(w + k);
    float s = acc_sum(&a);
    for (; k < n; k++) s += x[k] * w[k];
    return s;
}

static float dot_f16(const float *restrict x, const uint8_t *restrict w, int64_t n) {
    acc a = {0};
    int64_t k = 0;
    for (; k + 16 <= n; k += 16)
        put16(&a, x + k, NULL, f16x4(w + 2 * k), f16x4(w + 2 * k + 8), f16x4(w + 2 * k + 16), f16x4(w + 2 * k + 24));
    for (; k + 4 <= n; k += 4) a.s0 += ld(x + k) * f16x4(w + 2 * k);
    float s = acc_sum(&a);
    for (; k < n; k++) s += x[k] * f16_at(w + 2 * k);
    return s;
}

static float dot_bf16(const float *restrict x, const uint8_t *restrict w, int64_t n) {
    acc a = {0};
    int64_t k = 0;
    for (; k + 16 <= n; k += 16)
        put16(&a, x + k, NULL, bf16x4(w + 2 * k), bf16x4(w + 2 * k + 8), bf16x4(w + 2 * k + 16),
              bf16x4(w + 2 * k + 24));
    for (; k + 4 <= n; k += 4) a.s0 += ld(x + k) * bf16x4(w + 2 * k);
    float s = acc_sum(&a);
    for (; k < n; k++) s += x[k] * rlx_bf16_to_f32(u16_at(w + 2 * k));
    return s;
}

static void rows_f32(float *restrict y, const float *restrict x, const uint8_t *restrict w, size_t row_bytes,
                     int64_t rows, int64_t n) {
    for (int64_t r = 0; r < rows; r++) y[r] = dot_f32(x, (const float *)(const void *)(w + (size_t)r * row_bytes), n);
}

static void rows_f16(float *restrict y, const float *restrict x, const uint8_t *restrict w, size_t row_bytes,
                     int64_t rows, int64_t n) {
    for (int64_t r = 0; r < rows; r++) y[r] = dot_f16(x, w + (size_t)r * row_bytes, n);
}

static void rows_bf16(float *restrict y, const float *restrict x, const uint8_t *restrict w, size_t row_bytes,
                      int64_t rows, int64_t n) {
    for (int64_t r = 0; r < rows; r++) y[r] = dot_bf16(x, w + (size_t)r * row_bytes, n);
}

static void dequant_f16(float *restrict y, const uint8_t *restrict w, int64_t n) {
    int64_t k = 0;
    for (; k + 4 <= n; k += 4) st(y + k, f16x4(w + 2 * k));
    for (; k < n; k++) y[k] = f16_at(w + 2 * k);
}

static void dequant_bf16(float *restrict y, const uint8_t *restrict w, int64_t n) {
    int64_t k = 0;
    for (; k + 4 <= n; k += 4) st(y + k, bf16x4(w + 2 * k));
    for (; k < n; k++) y[k] = rlx_bf16_to_f32(u16_at(w + 2 * k));
}

/* ---- blocks (layouts and arithmetic: loader/core/dequant.c) ---- */

/* block_q8_0 (34 bytes): half d; int8 qs[32]. x = q * d */
INLINE void block_q8_0(const uint8_t *b, const float *x, float *y, acc *a) {
    const v4f d = splat(f16_at(b));
    for (int h = 0; h < 32; h += 16) {
        v4f w[4];
        for (int i = 0; i < 4; i++) {
            v4c q;
            memcpy(&q, b + 2 + h + 4 * i, sizeof q);
            w[i] = __builtin_convertvector(q, v4f) * d;
        }
        put16(a, x ? x + h : NULL, y ? y + h : NULL, w[0], w[1], w[2], w[3]);
    }
}

/* block_q4_0 (18 bytes): half d; uint8 qs[16]. x = (q - 8) * d, quant j in the low nibble of
 * qs[j], quant j+16 in the high nibble */
INLINE void block_q4_0(const uint8_t *b, const float *x, float *y, acc *a) {
    const v4f d = splat(f16_at(b));
    for (int h = 0; h < 2; h++) {
        v4f w[4];
        for (int i = 0; i < 4; i++) {
            v4b q = bytes4(b + 2 + 4 * i);
            v4b nib = h ? q >> 4 : q & 0x0f;
            w[i] = __builtin_convertvector(__builtin_convertvector(nib, v4i) - 8, v4f) * d;
        }
        put16(a, x ? x + 16 * h : NULL, y ? y + 16 * h : NULL, w[0], w[1], w[2], w[3]);
    }
}

/* Q4_K/Q5_K's packed 6-bit (scale, min) pair j (loader/core/dequant.c: kquant_scale_min). */
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

/* One group of 32 of a Q4_K/Q5_K block: dl * q - ml, q the nibble of qs (`high`: the high one)
 * plus 16 where bit `hbit` of qh is set (Q5_K; qh NULL for Q4_K). */
INLINE void group_k4(const uint8_t *qs, const uint8_t *qh, int high, int hbit, float dl, float ml,
                            const float *x, float *y, acc *a) {
    const v4f d = splat(dl), m = splat(ml);
    for (int h = 0; h < 32; h += 16) {
        v4f w[4];
        for (int i = 0; i < 4; i++) {
            v4b q = bytes4(qs + h + 4 * i);
            q = high ? q >> 4 : q & 0x0f;
            if (qh) q += ((bytes4(qh + h + 4 * i) >> hbit) & 1) << 4;
            w[i] = d * u8x4(q) - m;
        }
        put16(a, x ? x + h : NULL, y ? y + h : NULL, w[0], w[1], w[2], w[3]);
    }
}

/* block_q4_K (144 bytes): half d, dmin; uint8 scales[12]; uint8 qs[128]. */
INLINE void block_q4_k(const uint8_t *b, const float *x, float *y, acc *a) {
    const float d = f16_at(b), dmin = f16_at(b + 2);
    for (int g = 0; g < 8; g++) {
        float dl, ml;
        scale_min_k4(b + 4, g, d, dmin, &dl, &ml);
        group_k4(b + 16 + 32 * (g / 2), NULL, g % 2, 0, dl, ml, x ? x + 32 * g : NULL, y ? y + 32 * g : NULL, a);
    }
}

/* block_q5_K (176 bytes): half d, dmin; uint8 scales[12]; uint8 qh[32]; uint8 qs[128]. */
INLINE void block_q5_k(const uint8_t *b, const float *x, float *y, acc *a) {
    const float d = f16_at(b), dmin = f16_at(b + 2);
    for (int g = 0; g < 8; g++) {
        float dl, ml;
        scale_min_k4(b + 4, g, d, dmin, &dl, &ml);
        group_k4(b + 48 + 32 * (g / 2), b + 16, g % 2, g, dl, ml, x ? x + 32 * g : NULL, y ? y + 32 * g : NULL, a);
    }
}

/* block_q6_K (210 bytes): uint8 ql[128]; uint8 qh[64]; int8 scales[16]; half d.
 * x = (d*scale) * (q - 32); in each 128-element half, element l + 32g takes the low (g < 2) or
 * high nibble of ql[l + 32*(g%2)] and bits 2g of qh[l]; scale index 2g + l/16. */
INLINE void block_q6_k(const uint8_t *b, const float *x, float *y, acc *a) {
    const float d = f16_at(b + 208);
    const int8_t *sc = (const int8_t *)(const void *)(b + 192);
    for (int half = 0; half < 2; half++) {
        const uint8_t *ql = b + 64 * half, *qh = b + 128 + 32 * half;
        for (int g = 0; g < 4; g++)
            for (int h = 0; h < 32; h += 16) {
                const v4f ds = splat(d * (float)sc[8 * half + 2 * g + h / 16]);
                v4f w[4];
                for (int i = 0; i < 4; i++) {
                    int l = h + 4 * i;
                    v4b lo = bytes4(ql + l + 32 * (g % 2));
                    lo = g < 2 ? lo & 0x0f : lo >> 4;
                    v4b q = lo | (((bytes4(qh + l) >> (2 * g)) & 3) << 4);
                    w[i] = ds * __builtin_convertvector(__builtin_convertvector(q, v4i) - 32, v4f);
                }
                int e = 128 * half + 32 * g + h;
                put16(a, x ? x + e : NULL, y ? y + e : NULL, w[0], w[1], w[2], w[3]);
            }
    }
}

/* The dot and dequant entries of a block type, from its block function. */
#define BLOCK_KERNELS(name, elems, bytes)                                                           \
    static void rows_##name(float *restrict y, const float *restrict x, const uint8_t *restrict w,  \
                        size_t row_bytes, int64_t rows, int64_t n) {                                \
        for (int64_t r = 0; r < rows; r++) {                                                        \
            const uint8_t *b = w + (size_t)r * row_bytes;                                           \
            acc a = {0};                                                                            \
            for (int64_t i = 0; i < n / (elems); i++)                                               \
                block_##name(b + (size_t)i * (bytes), x + i * (elems), NULL, &a);                   \
            y[r] = acc_sum(&a);                                                                     \
        }                                                                                           \
    }                                                                                               \
    static void dequant_##name(float *restrict y, const uint8_t *restrict w, int64_t n) {           \
        for (int64_t i = 0; i < n / (elems); i++)                                                   \
            block_##name(w + (size_t)i * (bytes), NULL, y + i * (elems), NULL);                     \
    }

BLOCK_KERNELS(q8_0, 32, 34)
BLOCK_KERNELS(q4_0, 32, 18)
BLOCK_KERNELS(q4_k, 256, 144)
BLOCK_KERNELS(q5_k, 256, 176)
BLOCK_KERNELS(q6_k, 256, 210)

/* ---- f32 loops ---- */

static void gemv_base(float *restrict y, const float *restrict x, const float *restrict m, int64_t stride,
                      int64_t rows, int64_t n) {
    for (int64_t r = 0; r < rows; r++) y[r] = dot_f32(x, m + r * stride, n);
}

static void gemv_t_base(float *restrict y, const float *restrict w, const float *restrict m, int64_t stride,
                        int64_t rows, int64_t n) {
    for (int64_t r = 0; r < rows; r++) {
        const float *restrict xr = m + r * stride;
        const v4f va = splat(w[r]);
        int64_t k = 0;
        for (; k + 4 <= n; k += 4) st(y + k, ld(y + k) + va * ld(xr + k));
        for (; k < n; k++) y[k] += w[r] * xr[k];
    }
}

static const rlx_cpu_simd simd_base = {
    .name = "base",
    .gemv = gemv_base,
    .gemv_t = gemv_t_base,
    RLX_CPU_SIMD_TYPE_KERNELS,
};

/* ---- choice ---- */

int rlx_cpu_simd_all(const rlx_cpu_simd *out[RLX_CPU_SIMD_MAX]) {
    int n = 0;
    out[n++] = &simd_base;
#if RLX_CPU_HAVE_AVX2
    /* __builtin_cpu_supports also checks that the OS saves the YMM state; not every compiler
     * knows "f16c" there, so that bit comes from CPUID leaf 1 (ECX bit 29) */
    unsigned eax, ebx, ecx, edx;
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __get_cpuid(1, &eax, &ebx, &ecx, &edx) &&
        (ecx & bit_F16C)) {
        out[n++] = &rlx_cpu_simd_avx2;
        if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
            __builtin_cpu_supports("avx512vl"))
            out[n++] = &rlx_cpu_simd_avx512;
    }
#endif
    return n;
}

const rlx_cpu_simd *rlx_cpu_simd_select(const rlx_cpu_options *o) {
    const rlx_cpu_simd *all[RLX_CPU_SIMD_MAX];
    int n = rlx_cpu_simd_all(all);
    const char *want = o->simd;
    for (int i = 0; want && i < n; i++)
        if (strcmp(all[i]->name, want) == 0) return all[i];
    return all[n - 1];
}
