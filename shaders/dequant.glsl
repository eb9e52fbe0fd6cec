// In-register decoding of stored weight types: ggml's block layouts (llama.cpp
// ggml/src/ggml-common.h, block_q*), read from a uint array named w_words that the including
// kernel declares, with the type given by the spec constant W_TYPE (rlx_dtype = ggml_type).
//
// Every block size in bytes is even and every field inside a block starts at an even offset, so
// all reads here are of 32-bit values at 2-aligned byte addresses (rd32). Byte addresses are
// 32-bit: a binding never exceeds 2 GiB (runtime/vk_device.c). Weight bindings carry 16 bytes of
// padding past the data (runtime/vk_backend.c), so rd32 reads its two words unconditionally and
// picks with a select: a branch on the address costs both paths on SIMD CPU devices (lavapipe).

#define T_F32 0u
#define T_F16 1u
#define T_Q4_0 2u
#define T_Q4_1 3u
#define T_Q5_0 6u
#define T_Q5_1 7u
#define T_Q8_0 8u
#define T_Q2_K 10u
#define T_Q3_K 11u
#define T_Q4_K 12u
#define T_Q5_K 13u
#define T_Q6_K 14u
#define T_Q8_K 15u
#define T_BF16 30u

// K-quant 6-bit scale and min of sub-block j (0..7) from its scale bytes a = scales[j % 4],
// b = scales[j % 4 + 4] and c = scales[j % 4 + 8] (c is not read below 4): ggml-quants.c
// get_scale_min_k4's packing, the one rule every K-quant decoder here uses.
uvec2 k4_scale_min(uint a, uint b, uint c, uint j) {
    return j < 4u ? uvec2(a & 63u, b & 63u) : uvec2((c & 15u) | ((a >> 6) << 4), (c >> 4) | ((b >> 6) << 4));
}

// The same from the 12 scale bytes loaded as three words.
uvec2 k4_scale_min_words(uvec3 s, uint j) {
    uint sh = (j & 3u) * 8u;
    return k4_scale_min((s.x >> sh) & 0xffu, (s.y >> sh) & 0xffu, (s.z >> sh) & 0xffu, j);
}

// Q4_K's 64-value group g of a block, from the block's first 16 bytes hd (d and dmin in hd.x, the
// 12 scale bytes in hd.yzw): value = scale * q - min, with (scale, min) of the low nibbles'
// sub-block 2 g in .xy and of the high nibbles' 2 g + 1 in .zw.
vec4 q4k_group_scales(uvec4 hd, uint g) {
    vec2 dm = unpackHalf2x16(hd.x), s0 = vec2(k4_scale_min_words(hd.yzw, 2u * g)),
         s1 = vec2(k4_scale_min_words(hd.yzw, 2u * g + 1u));
    return vec4(dm.x * s0.x, dm.y * s0.y, dm.x * s1.x, dm.y * s1.y);
}

// A kernel with its own decoders (matvec.comp) takes only the type numbers and rules above.
#ifndef RLX_DEQUANT_TYPES_ONLY

// The 32 bits from halfword `odd` of word a on, c the word after a: 2-aligned data read in words.
uint funnel(uint a, uint c, bool odd) { return odd ? (a >> 16) | (c << 16) : a; }

// The 32 bits at byte address a (a even).
uint rd32(uint a) {
    uint i = a >> 2;
    return funnel(w_words[i], w_words[i + 1u], (a & 2u) != 0u);
}

uint rd16(uint a) { return (w_words[a >> 2] >> ((a & 2u) * 8u)) & 0xffffu; }
uint rd8(uint a) { return (w_words[a >> 2] >> ((a & 3u) * 8u)) & 0xffu; }
float rdf16(uint a) { return unpackHalf2x16(rd16(a)).x; }

// Bytes per block and elements per block of W_TYPE.
uint block_bytes() {
    switch (W_TYPE) {
    case T_F32: return 4u;
    case T_F16: case T_BF16: return 2u;
    case T_Q4_0: return 18u;
    case T_Q4_1: return 20u;
    case T_Q5_0: return 22u;
    case T_Q5_1: return 24u;
    case T_Q8_0: return 34u;
    case T_Q2_K: return 84u;
    case T_Q3_K: return 110u;
    case T_Q4_K: return 144u;
    case T_Q5_K: return 176u;
    case T_Q6_K: return 210u;
    case T_Q8_K: return 292u;
    }
    return 4u;
}

uint block_elems() {
    switch (W_TYPE) {
    case T_F32: case T_F16: case T_BF16: return 1u;
    case T_Q2_K: case T_Q3_K: case T_Q4_K: case T_Q5_K: case T_Q6_K: case T_Q8_K: return 256u;
    }
    return 32u;
}

// Four signed bytes of w, sign-extended.
vec4 s8x4(uint w) {
    return vec4(bitfieldExtract(int(w), 0, 8), bitfieldExtract(int(w), 8, 8), bitfieldExtract(int(w), 16, 8),
                bitfieldExtract(int(w), 24, 8));
}
// Low (hi == 0) or high nibbles of the four bytes of w.
vec4 nib4(uint w, uint hi) {
    uint s = hi * 4u;
    return vec4((w >> s) & 15u, (w >> (s + 8u)) & 15u, (w >> (s + 16u)) & 15u, (w >> (s + 24u)) & 15u);
}
// Bits b, b+1, .. of four consecutive bytes starting at the byte holding bit 0 of `bits`:
// the single bit `shift` of each byte of w, as 0/1.
vec4 bit4(uint w, uint shift) {
    return vec4((w >> shift) & 1u, (w >> (shift + 8u)) & 1u, (w >> (shift + 16u)) & 1u, (w >> (shift + 24u)) & 1u);
}

// The 2-bit fields at bit `shift` of the four bytes of w.
vec4 crumb4(uint w, uint shift) {
    return vec4((w >> shift) & 3u, (w >> (shift + 8u)) & 3u, (w >> (shift + 16u)) & 3u, (w >> (shift + 24u)) & 3u);
}

// Four Q6_K quants less 32: the low (nh 0) or high nibbles of ql's word lw, with the 2-bit fields
// at bit sh of qh's word hw as their high bits.
vec4 q6k_q4(uint lw, uint nh, uint hw, uint sh) { return nib4(lw, nh) + 16.0 * crumb4(hw, sh) - 32.0; }

// k4_scale_min of sub-block j from the 12 scale bytes at sc, read byte by byte.
vec2 scale_min_k4(uint sc, uint j) {
    uint i = j & 3u;
    return vec2(k4_scale_min(rd8(sc + i), rd8(sc + i + 4u), j < 4u ? 0u : rd8(sc + i + 8u), j));
}

// Elements [e, e + 8) of the row whose first block starts at byte `row`; e % 8 == 0.
void dq8(uint row, uint e, out vec4 lo, out vec4 hi) {
    switch (W_TYPE) {
    case T_F32: { // rows of F32 are 4-aligned
        uint i = (row >> 2) + e;
        lo = uintBitsToFloat(uvec4(w_words[i], w_words[i + 1u], w_words[i + 2u], w_words[i + 3u]));
        hi = uintBitsToFloat(uvec4(w_words[i + 4u], w_words[i + 5u], w_words[i + 6u], w_words[i + 7u]));
        return;
    }
    case T_F16: {
        uint a = row + e * 2u;
        lo = vec4(unpackHalf2x16(rd32(a)), unpackHalf2x16(rd32(a + 4u)));
        hi = vec4(unpackHalf2x16(rd32(a + 8u)), unpackHalf2x16(rd32(a + 12u)));
        return;
    }
    case T_BF16: {
        uint a = row + e * 2u;
        uint w0 = rd32(a), w1 = rd32(a + 4u), w2 = rd32(a + 8u), w3 = rd32(a + 12u);
        lo = vec4(uintBitsToFloat(w0 << 16), uintBitsToFloat(w0 & 0xffff0000u), uintBitsToFloat(w1 << 16),
                  uintBitsToFloat(w1 & 0xffff0000u));
        hi = vec4(uintBitsToFloat(w2 << 16), uintBitsToFloat(w2 & 0xffff0000u), uintBitsToFloat(w3 << 16),
                  uintBitsToFloat(w3 & 0xffff0000u));
        return;
    }
    case T_Q8_0: { // block_q8_0: half d; int8 qs[32]
        uint b = row + (e >> 5) * 34u, j = e & 31u;
        float d = rdf16(b);
        lo = d * s8x4(rd32(b + 2u + j));
        hi = d * s8x4(rd32(b + 6u + j));
        return;
    }
    case T_Q4_0: { // block_q4_0: half d; uint8 qs[16]; element j<16 low nibble of qs[j], else high of qs[j-16]
        uint b = row + (e >> 5) * 18u, j = e & 31u, h = j >> 4, q = b + 2u + (j & 15u);
        float d = rdf16(b);
        lo = d * (nib4(rd32(q), h) - 8.0);
        hi = d * (nib4(rd32(q + 4u), h) - 8.0);
        return;
    }
    case T_Q4_1: { // block_q4_1: half d, m; uint8 qs[16]
        uint b = row + (e >> 5) * 20u, j = e & 31u, h = j >> 4, q = b + 4u + (j & 15u);
        float d = rdf16(b), m = rdf16(b + 2u);
        lo = d * nib4(rd32(q), h) + m;
        hi = d * nib4(rd32(q + 4u), h) + m;
        return;
    }
    case T_Q5_0: { // block_q5_0: half d; uint32 qh; uint8 qs[16]; bit j of qh is element j's 5th bit
        uint b = row + (e >> 5) * 22u, j = e & 31u, h = j >> 4, q = b + 6u + (j & 15u);
        float d = rdf16(b);
        uint qh = rd32(b + 2u) >> j;
        vec4 h0 = vec4(qh & 1u, (qh >> 1) & 1u, (qh >> 2) & 1u, (qh >> 3) & 1u);
        vec4 h1 = vec4((qh >> 4) & 1u, (qh >> 5) & 1u, (qh >> 6) & 1u, (qh >> 7) & 1u);
        lo = d * (nib4(rd32(q), h) + 16.0 * h0 - 16.0);
        hi = d * (nib4(rd32(q + 4u), h) + 16.0 * h1 - 16.0);
        return;
    }
    case T_Q5_1: { // block_q5_1: half d, m; uint32 qh; uint8 qs[16]
        uint b = row + (e >> 5) * 24u, j = e & 31u, h = j >> 4, q = b + 8u + (j & 15u);
        float d = rdf16(b), m = rdf16(b + 2u);
        uint qh = rd32(b + 4u) >> j;
        vec4 h0 = vec4(qh & 1u, (qh >> 1) & 1u, (qh >> 2) & 1u, (qh >> 3) & 1u);
        vec4 h1 = vec4((qh >> 4) & 1u, (qh >> 5) & 1u, (qh >> 6) & 1u, (qh >> 7) & 1u);
        lo = d * (nib4(rd32(q), h) + 16.0 * h0) + m;
        hi = d * (nib4(rd32(q + 4u), h) + 16.0 * h1) + m;
        return;
    }
    case T_Q2_K: { // block_q2_K: uint8 scales[16]; uint8 qs[64]; half d, dmin. Element e: half n = e/128,
                   // 2-bit field j = e%128/32 of qs[32n + e%32], scale byte 8n + e%128/16 (low d, high min)
        uint b = row + (e >> 8) * 84u, k = e & 255u, n = k >> 7, j = (k & 127u) >> 5, l = k & 31u;
        uint sc = rd8(b + 8u * n + ((k & 127u) >> 4));
        float d = rdf16(b + 80u) * float(sc & 15u), m = rdf16(b + 82u) * float(sc >> 4);
        uint q = b + 16u + 32u * n + l;
        lo = d * crumb4(rd32(q), 2u * j) - m;
        hi = d * crumb4(rd32(q + 4u), 2u * j) - m;
        return;
    }
    case T_Q3_K: { // block_q3_K: uint8 hmask[32]; uint8 qs[64]; uint8 scales[12]; half d. As Q2_K, minus 4
                   // where bit 4n + j of hmask[e%32] is clear; scales: 6-bit, packed 4 + 2 bits, minus 32
        uint b = row + (e >> 8) * 110u, k = e & 255u, n = k >> 7, j = (k & 127u) >> 5, l = k & 31u;
        uint is = 8u * n + ((k & 127u) >> 4), grp = is >> 2;
        uint low = grp < 2u ? rd8(b + 96u + is) & 15u : rd8(b + 96u + is - 8u) >> 4;
        uint high = (rd8(b + 104u + (is & 3u)) >> (2u * grp)) & 3u;
        float d = rdf16(b + 108u) * float(int(low | (high << 4)) - 32);
        uint q = b + 32u + 32u * n + l, hm = b + l, hb = 4u * n + j;
        lo = d * (crumb4(rd32(q), 2u * j) - 4.0 + 4.0 * bit4(rd32(hm), hb));
        hi = d * (crumb4(rd32(q + 4u), 2u * j) - 4.0 + 4.0 * bit4(rd32(hm + 4u), hb));
        return;
    }
    case T_Q4_K: { // block_q4_K: half d, dmin; uint8 scales[12]; uint8 qs[128]
        uint b = row + (e >> 8) * 144u, k = e & 255u, c = k >> 6, l = k & 63u, h = l >> 5;
        vec2 sm = scale_min_k4(b + 4u, 2u * c + h);
        float d = rdf16(b) * sm.x, m = rdf16(b + 2u) * sm.y;
        uint q = b + 16u + 32u * c + (l & 31u);
        lo = d * nib4(rd32(q), h) - m;
        hi = d * nib4(rd32(q + 4u), h) - m;
        return;
    }
    case T_Q5_K: { // block_q5_K: half d, dmin; uint8 scales[12]; uint8 qh[32]; uint8 qs[128]
        uint b = row + (e >> 8) * 176u, k = e & 255u, c = k >> 6, l = k & 63u, h = l >> 5;
        vec2 sm = scale_min_k4(b + 4u, 2u * c + h);
        float d = rdf16(b) * sm.x, m = rdf16(b + 2u) * sm.y;
        uint q = b + 48u + 32u * c + (l & 31u), qh = b + 16u + (l & 31u), s = 2u * c + h;
        lo = d * (nib4(rd32(q), h) + 16.0 * bit4(rd32(qh), s)) - m;
        hi = d * (nib4(rd32(q + 4u), h) + 16.0 * bit4(rd32(qh + 4u), s)) - m;
        return;
    }
    case T_Q6_K: { // block_q6_K: uint8 ql[128]; uint8 qh[64]; int8 scales[16]; half d
        uint b = row + (e >> 8) * 210u, k = e & 255u, n = k >> 7, r = k & 127u, qq = r >> 5, l = r & 31u;
        uint ql = b + 64u * n + l + (qq & 1u) * 32u, qh = b + 128u + 32u * n + l, sh = 2u * qq;
        float d = rdf16(b + 208u) * float(bitfieldExtract(int(rd8(b + 192u + 8u * n + (l >> 4) + 2u * qq)), 0, 8));
        uint lw0 = rd32(ql), lw1 = rd32(ql + 4u), hw0 = rd32(qh), hw1 = rd32(qh + 4u);
        uint nh = qq >> 1;
        lo = d * q6k_q4(lw0, nh, hw0, sh);
        hi = d * q6k_q4(lw1, nh, hw1, sh);
        return;
    }
    case T_Q8_K: { // block_q8_K: float d; int8 qs[256]; int16 bsums[16]
        uint b = row + (e >> 8) * 292u, k = e & 255u;
        float d = uintBitsToFloat(rd32(b));
        lo = d * s8x4(rd32(b + 4u + k));
        hi = d * s8x4(rd32(b + 8u + k));
        return;
    }
    }
    lo = vec4(0.0);
    hi = vec4(0.0);
}

// One element of a plain-type (F32/F16/BF16) row: for the tail of rows not a multiple of 8.
float dq1(uint row, uint e) {
    switch (W_TYPE) {
    case T_F32: return uintBitsToFloat(rd32(row + e * 4u));
    case T_F16: return rdf16(row + e * 2u);
    case T_BF16: return uintBitsToFloat(rd16(row + e * 2u) << 16);
    }
    return 0.0;
}
#endif // RLX_DEQUANT_TYPES_ONLY
