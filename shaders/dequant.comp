#version 450
// Decodes a whole stored weight into f32 rows. Used only where a quantized or half WEIGHT stands
// in for an F32 operand (a norm weight stored as F16, say); matmuls and lookups read packed data.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(constant_id = 1) const uint W_TYPE = 0;

layout(set = 1, binding = 0) readonly buffer Wt { uint w_words[]; };
layout(set = 1, binding = 1) writeonly buffer O { float o[]; };

layout(push_constant) uniform Push {
    uint rows;
    uint k;         // row length
    uint row_bytes;
} p;

#include "dequant.glsl"

void main() {
    uint r = group_id();
    if (r >= p.rows) return;
    uint t = gl_LocalInvocationID.x, row = r * p.row_bytes, base = r * p.k, n8 = p.k / 8u;
    for (uint u = t; u < n8; u += WG) {
        vec4 lo, hi;
        dq8(row, u * 8u, lo, hi);
        uint oi = base + u * 8u;
        o[oi] = lo.x; o[oi + 1u] = lo.y; o[oi + 2u] = lo.z; o[oi + 3u] = lo.w;
        o[oi + 4u] = hi.x; o[oi + 5u] = hi.y; o[oi + 6u] = hi.z; o[oi + 7u] = hi.w;
    }
    for (uint c = n8 * 8u + t; c < p.k; c += WG) o[base + c] = dq1(row, c);
}
