#version 450
// MATMUL, matrix-vector form: out[r, m0 + m] = epilogue(sum_k x[r, k] * w[m, k]) for the weight
// rows [m0, m0 + m_rows) held by this binding (large weights come in row parts). A workgroup owns
// R weight rows and NX rows of x; each weight row is read by one subgroup, whatever its size,
// decoded 8 elements at a time in registers (dequant.glsl) and used for all NX rows of x, and
// reduced with subgroupAdd: no shared memory, no barriers. Decode (NX = 1) is memory-bound on the
// weight read.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require

layout(constant_id = 1) const uint W_TYPE = 0;
layout(constant_id = 2) const uint NX = 1;
layout(constant_id = 3) const uint EPI = 0;
layout(constant_id = 4) const uint R = 1; // weight rows per workgroup (about WG / subgroup size)
#define EPI_NONE 0u
#define EPI_ADD 1u      // out = aux + dot (residual add fused in)
#define EPI_SILU_MUL 2u // out = silu(aux) * dot (gated FFN: aux is the gate projection)
#define EPI_GELU_MUL 3u // out = gelu_tanh(aux) * dot

layout(set = 1, binding = 0) readonly buffer X { float x[]; };
layout(set = 1, binding = 1) readonly buffer Wt { uint w_words[]; };
layout(set = 1, binding = 2) writeonly buffer O { float o[]; };
layout(set = 1, binding = 3) readonly buffer Aux { float aux[]; };

layout(push_constant) uniform Push {
    uint rows;      // rows of x
    uint k;         // row length
    uint m_rows;    // weight rows in this part
    uint m0;        // first output column of this part
    uint m;         // output row stride (all weight rows)
    uint row_bytes; // bytes per weight row
    uint tok;       // x rows per token (0: all rows)
} p;

#include "dequant.glsl"
#include "act.glsl"

void main() {
    uint gid = group_id(), groups_m = (p.m_rows + R - 1u) / R;
    uint w0 = (gid % groups_m) * R, r0 = (gid / groups_m) * NX;
    uint rows = valid_rows(p.rows, p.tok);
    if (r0 >= rows) return;
    uint lane = gl_SubgroupInvocationID, n8 = p.k / 8u;
    // weight rows go to subgroups; each subgroup's lanes split the row and reduce with subgroupAdd
    for (uint rr = gl_SubgroupID; rr < R; rr += gl_NumSubgroups) {
        uint wr = w0 + rr;
        if (wr >= p.m_rows) break;
        uint row = wr * p.row_bytes;
        float acc[NX];
        [[unroll]] for (uint r = 0u; r < NX; r++) acc[r] = 0.0;
        for (uint u = lane; u < n8; u += gl_SubgroupSize) {
            vec4 lo, hi;
            dq8(row, u * 8u, lo, hi);
            [[unroll]] for (uint r = 0u; r < NX; r++) {
                if (r0 + r < rows) {
                    uint xi = (r0 + r) * p.k + u * 8u;
                    acc[r] += dot(lo, vec4(x[xi], x[xi + 1u], x[xi + 2u], x[xi + 3u])) +
                              dot(hi, vec4(x[xi + 4u], x[xi + 5u], x[xi + 6u], x[xi + 7u]));
                }
            }
        }
        for (uint e = n8 * 8u + lane; e < p.k; e += gl_SubgroupSize) {
            float wv = dq1(row, e);
            [[unroll]] for (uint r = 0u; r < NX; r++)
                if (r0 + r < rows) acc[r] += wv * x[(r0 + r) * p.k + e];
        }
        [[unroll]] for (uint r = 0u; r < NX; r++) {
            float v = subgroupAdd(acc[r]);
            if (lane != 0u || r0 + r >= rows) continue;
            uint oi = (r0 + r) * p.m + p.m0 + wr;
            switch (EPI) {
            case EPI_ADD: v += aux[oi]; break;
            case EPI_SILU_MUL: v *= silu(aux[oi]); break;
            case EPI_GELU_MUL: v *= gelu_tanh(aux[oi]); break;
            }
            o[oi] = v;
        }
    }
}
