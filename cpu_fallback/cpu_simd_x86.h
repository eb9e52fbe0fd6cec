/* What the x86 SIMD variants (cpu_simd_avx2.c, cpu_simd_avx512.c) share: scalar fields and the
 * byte-level decoding of quant blocks into 16 quants per 128-bit vector, which each variant then
 * widens to floats at its own width. Layouts and arithmetic: loader/core/dequant.c (ggml-common.h
 * block structs). Built for AVX2+FMA+F16C, which every x86 variant includes, so the helpers
 * inline into either. Include only where RLX_CPU_HAVE_AVX2. */
#ifndef RLX_CPU_SIMD_X86_H
#define RLX_CPU_SIMD_X86_H

#include <immintrin.h>
#include <stdint.h>
#include <string.h>

/* Decoders must inline into each loop: called, they would pass vectors through memory. */
#define X86_INLINE static inline __attribute__((always_inline, target("avx2,fma,f16c")))

/* F16C quiets a signalling NaN (which stays a NaN); every other value converts exactly. */
X86_INLINE float x86_f16_at(const uint8_t *p) { return _cvtsh_ss((unsigned short)(p[0] | (p[1] << 8))); }

X86_INLINE __m128i x86_load16(const uint8_t *p) { return _mm_loadu_si128((const __m128i *)(const void *)p); }

/* Bytes' bits [shift, shift + width), mask = 2^width - 1. */
X86_INLINE __m128i x86_bits8(__m128i q, int shift, int mask) {
    return _mm_and_si128(_mm_srli_epi16(q, shift), _mm_set1_epi8((char)mask));
}

/* block_q4_0 (18 bytes): half d; uint8 qs[16]; x = (q - 8) * d with quant j in the low nibble of
 * qs[j] and quant j+16 in the high one. Quants 0..15 and 16..31 as signed bytes. */
X86_INLINE void x86_q4_0_quants(const uint8_t *b, __m128i *q0, __m128i *q1) {
    const __m128i q = x86_load16(b + 2), eight = _mm_set1_epi8(8);
    *q0 = _mm_sub_epi8(x86_bits8(q, 0, 0x0f), eight);
    *q1 = _mm_sub_epi8(x86_bits8(q, 4, 0x0f), eight);
}

/* Q4_K/Q5_K's eight packed 6-bit (scale, min) pairs as dl[g] = d * scale_g and ml[g] = dmin * min_g
 * (loader/core/dequant.c: kquant_scale_min), unpacked four at a time: bytes 0-3 hold scales 0-3 and,
 * in their top 2 bits, the high bits of scales 4-7; bytes 4-7 the same for the mins; bytes 8-11
 * the low nibbles of scales 4-7 and, in their high nibbles, of mins 4-7. */
X86_INLINE void x86_scales_k4(const uint8_t *s, float d, float dmin, __m256 *dl, __m256 *ml) {
    uint32_t u[3];
    memcpy(u, s, sizeof u);
    const uint32_t low6 = 0x3f3f3f3fu, low4 = 0x0f0f0f0fu, low2 = 0x03030303u;
    uint32_t sc_lo = u[0] & low6, sc_hi = (u[2] & low4) | (((u[0] >> 6) & low2) << 4);
    uint32_t mn_lo = u[1] & low6, mn_hi = ((u[2] >> 4) & low4) | (((u[1] >> 6) & low2) << 4);
    __m128i sc = _mm_set_epi32(0, 0, (int)sc_hi, (int)sc_lo), mn = _mm_set_epi32(0, 0, (int)mn_hi, (int)mn_lo);
    *dl = _mm256_mul_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(sc)));
    *ml = _mm256_mul_ps(_mm256_set1_ps(dmin), _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(mn)));
}

/* Q6_K's sixteen int8 scales times d: scales 0-7 in lo, 8-15 in hi. */
X86_INLINE void x86_scales_q6(const uint8_t *b, float d, __m256 *lo, __m256 *hi) {
    const __m128i s = x86_load16(b + 192);
    const __m256 vd = _mm256_set1_ps(d);
    *lo = _mm256_mul_ps(vd, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(s)));
    *hi = _mm256_mul_ps(vd, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(s, 8))));
}

/* Lane i of v in every lane. */
X86_INLINE __m256 x86_lane(__m256 v, int i) { return _mm256_permutevar8x32_ps(v, _mm256_set1_epi32(i)); }

/* block_q4_K (144 bytes): half d, dmin; uint8 scales[12]; uint8 qs[128]; x = dl * q - ml. Group g
 * (32 quants) takes the low (g even) or high nibbles of qs[32*(g/2) ..]: quants 0..15 and 16..31
 * as unsigned bytes. */
X86_INLINE void x86_q4_k_quants(const uint8_t *b, int g, __m128i *q0, __m128i *q1) {
    const uint8_t *qs = b + 16 + 32 * (g / 2);
    *q0 = x86_bits8(x86_load16(qs), 4 * (g % 2), 0x0f);
    *q1 = x86_bits8(x86_load16(qs + 16), 4 * (g % 2), 0x0f);
}

/* block_q5_K (176 bytes): half d, dmin; uint8 scales[12]; uint8 qh[32]; uint8 qs[128]; as Q4_K
 * (qs at byte 48) plus 16 where bit g of qh[l] is set. */
X86_INLINE void x86_q5_k_quants(const uint8_t *b, int g, __m128i *q0, __m128i *q1) {
    const uint8_t *qs = b + 48 + 32 * (g / 2);
    /* bit g selected by a mask rather than a shift, so g need not be a constant */
    const __m128i bit = _mm_set1_epi8((char)(1 << g)), sixteen = _mm_set1_epi8(16);
    __m128i h0 = _mm_and_si128(_mm_cmpeq_epi8(_mm_and_si128(x86_load16(b + 16), bit), bit), sixteen);
    __m128i h1 = _mm_and_si128(_mm_cmpeq_epi8(_mm_and_si128(x86_load16(b + 32), bit), bit), sixteen);
    *q0 = _mm_or_si128(x86_bits8(x86_load16(qs), 4 * (g % 2), 0x0f), h0);
    *q1 = _mm_or_si128(x86_bits8(x86_load16(qs + 16), 4 * (g % 2), 0x0f), h1);
}

/* block_q6_K (210 bytes): uint8 ql[128]; uint8 qh[64]; int8 scales[16]; half d; x = (d*scale) *
 * (q - 32). In 128-element half h, group g (element l + 32g) takes the low (g < 2) or high
 * nibble of ql[64h + l + 32*(g%2)] and bits 2g of qh[32h + l]; quants 0..15 use scale 8h + 2g,
 * 16..31 scale 8h + 2g + 1. Quants minus 32 as signed bytes. */
X86_INLINE void x86_q6_k_quants(const uint8_t *b, int h, int g, __m128i *q0, __m128i *q1) {
    const uint8_t *ql = b + 64 * h + 32 * (g % 2), *qh = b + 128 + 32 * h;
    const __m128i c32 = _mm_set1_epi8(32);
    __m128i l0 = x86_bits8(x86_load16(ql), 4 * (g / 2), 0x0f), l1 = x86_bits8(x86_load16(ql + 16), 4 * (g / 2), 0x0f);
    __m128i h0 = _mm_slli_epi16(x86_bits8(x86_load16(qh), 2 * g, 3), 4);
    __m128i h1 = _mm_slli_epi16(x86_bits8(x86_load16(qh + 16), 2 * g, 3), 4);
    *q0 = _mm_sub_epi8(_mm_or_si128(l0, h0), c32);
    *q1 = _mm_sub_epi8(_mm_or_si128(l1, h1), c32);
}

#endif
