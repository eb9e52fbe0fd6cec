/* IEEE 754 binary16 (f16) and bfloat16 (bf16) <-> binary32 conversions, exact for every input
 * class: zeros, subnormals, normals, infinities and NaNs (NaNs stay NaN, quieted on narrowing).
 * Narrowing rounds to nearest, ties to even, like hardware conversions and ggml's reference.
 * Header-only and branch-light so dequantization loops can inline them. */
#ifndef RLX_LOADER_HALF_H
#define RLX_LOADER_HALF_H

#include <stdint.h>
#include <string.h>

static inline uint32_t rlx_f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static inline float rlx_f32_from_bits(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* binary16: 1 sign, 5 exponent (bias 15), 10 mantissa bits. */
static inline float rlx_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t em = h & 0x7fffu;
    if (em >= 0x7c00u) /* inf or NaN: all-ones exponent, payload kept */
        return rlx_f32_from_bits(sign | 0x7f800000u | ((em & 0x3ffu) << 13));
    /* Placing exponent+mantissa 13 bits up reads them as a binary32 whose exponent is 112 too
     * small (bias 127 vs 15); multiplying by 2^112 is exact, and also normalizes subnormals. */
    float mag = rlx_f32_from_bits(em << 13) * 0x1p112f;
    return rlx_f32_from_bits(sign | rlx_f32_bits(mag));
}

static inline uint16_t rlx_f32_to_f16(float f) {
    uint32_t x = rlx_f32_bits(f);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    uint32_t ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u) /* NaN: keep the top payload bits, force quiet so it stays a NaN */
        return (uint16_t)(sign | 0x7e00u | ((ax >> 13) & 0x3ffu));
    if (ax >= 0x477ff000u) /* >= 65520, the midpoint above the largest f16 (65504): rounds to inf */
        return (uint16_t)(sign | 0x7c00u);
    if (ax < 0x38800000u) {
        /* Below 2^-14: the result is subnormal (or zero). Adding 0.5 (whose ulp is 2^-24, the f16
         * subnormal step) lets the FPU round to nearest-even; the low bits are then the f16. */
        float t = rlx_f32_from_bits(ax) + 0.5f;
        return (uint16_t)(sign | (rlx_f32_bits(t) - 0x3f000000u));
    }
    uint32_t odd = (ax >> 13) & 1u; /* ties to even: round up at exactly half only if odd */
    ax += ((uint32_t)(15 - 127) << 23) + 0xfffu + odd;
    return (uint16_t)(sign | (ax >> 13));
}

/* bfloat16 is the top half of a binary32. */
static inline float rlx_bf16_to_f32(uint16_t b) { return rlx_f32_from_bits((uint32_t)b << 16); }

static inline uint16_t rlx_f32_to_bf16(float f) {
    uint32_t x = rlx_f32_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) /* NaN: truncate and force quiet (ggml does the same) */
        return (uint16_t)((x >> 16) | 0x40u);
    return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

#endif
