#version 450
// Decodes a whole stored weight into rows of f32 where a quantized or half WEIGHT stands in for an
// F32 operand (a norm weight stored as F16, say), or (F16_OUT) of f16 for a prefill matmul in a
// mixed mode (runtime/vk_lower.c emit_matmul_tiled), whose cooperative kernel rounds every decoded
// weight to f16 anyway: decoded once into f16 rows, the weight is read as F16 weights are, one
// 16-byte load per 8 values. A value f16 cannot hold (|v| > 65504) is reported as
// RLX_ERR_F16_RANGE (node, row): the mixed mode cannot compute with it.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(constant_id = 1) const uint W_TYPE = 0;
layout(constant_id = 2) const uint F16_OUT = 0; // 1: f16 rows, k % 8 == 0

layout(set = 1, binding = 0) readonly buffer Wt { uint w_words[]; };
layout(set = 1, binding = 1) writeonly buffer O { float o[]; };
layout(set = 1, binding = 1) writeonly buffer O16 { uvec4 o16[]; };

layout(push_constant) uniform Push {
    uint rows;
    uint k;         // row length
    uint row_bytes;
    uint node;      // F16_OUT: reported with RLX_ERR_F16_RANGE
} p;

#include "dequant.glsl"

bool fits_f16(vec4 v) { return all(lessThanEqual(abs(v), vec4(65504.0))) || any(isinf(v)) || any(isnan(v)); }

void main() {
    uint r = group_id();
    if (r >= p.rows) return;
    uint t = gl_LocalInvocationID.x, row = r * p.row_bytes, base = r * p.k, n8 = p.k / 8u;
    for (uint u = t; u < n8; u += WG) {
        vec4 lo, hi;
        dq8(row, u * 8u, lo, hi);
        uint oi = base + u * 8u;
        if (F16_OUT != 0u) {
            if (!fits_f16(lo) || !fits_f16(hi)) rlx_report(RLX_ERR_F16_RANGE, p.node, r);
            o16[oi / 8u] = uvec4(packHalf2x16(lo.xy), packHalf2x16(lo.zw), packHalf2x16(hi.xy), packHalf2x16(hi.zw));
            continue;
        }
        o[oi] = lo.x; o[oi + 1u] = lo.y; o[oi + 2u] = lo.z; o[oi + 3u] = lo.w;
        o[oi + 4u] = hi.x; o[oi + 5u] = hi.y; o[oi + 6u] = hi.z; o[oi + 7u] = hi.w;
    }
    for (uint c = n8 * 8u + t; F16_OUT == 0u && c < p.k; c += WG) o[base + c] = dq1(row, c);
}
