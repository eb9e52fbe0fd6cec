#version 450
// The end of a split-k MATMUL (shaders/matmul_coop.glsl SPLIT > 1): out[r, m0 + n] =
// epilogue(sum over s of part[s, r, n]), the splits added in order s = 0, 1, .. (one order for
// every run, so a split plan's results repeat bit for bit), for the valid rows.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(constant_id = 1) const uint EPI = 0; // as matmul_coop.glsl: 1 add, 2 silu-mul, 3 gelu-mul

layout(set = 1, binding = 0) readonly buffer Part { float part[]; }; // [split][rows][m_rows]
layout(set = 1, binding = 1) writeonly buffer O { float o[]; };
layout(set = 1, binding = 2) readonly buffer Aux { float aux[]; };

layout(push_constant) uniform Push {
    uint rows;   // rows of the partials (all of x's)
    uint m_rows; // weight rows of this part
    uint m0;     // first output column of this part
    uint m;      // output row stride
    uint tok;    // x rows per token (0: all rows)
    uint split;  // partials per output
} p;

#include "act.glsl"

void main() {
    uint i = group_id() * WG + gl_LocalInvocationID.x, r = i / p.m_rows, n = i % p.m_rows;
    if (r >= valid_rows(p.rows, p.tok)) return;
    float v = 0.0;
    for (uint s = 0u; s < p.split; s++) v += part[(s * p.rows + r) * p.m_rows + n];
    uint oi = r * p.m + p.m0 + n;
    switch (EPI) {
    case 1u: v += aux[oi]; break;
    case 2u: v *= silu(aux[oi]); break;
    case 3u: v *= gelu_tanh(aux[oi]); break;
    }
    o[oi] = v;
}
