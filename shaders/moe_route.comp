#version 450
// MOE_ROUTE (ir/ops.def): per row, softmax over the E router logits, keep the top_k largest
// (ties: the lower expert index first), zero the rest, renormalise the kept ones to sum 1 when
// norm_topk. One invocation per row: E is small (checked <= 1024 by the compiler).
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(set = 1, binding = 0) readonly buffer X { float x[]; };
layout(set = 1, binding = 1) buffer O { float o[]; };

layout(push_constant) uniform Push {
    uint rows;
    uint experts;
    uint top_k;
    uint norm_topk;
    uint tok;
} p;

void main() {
    uint r = group_id() * WG + gl_LocalInvocationID.x;
    if (r >= valid_rows(p.rows, p.tok)) return;
    uint base = r * p.experts;
    float m = -1.0 / 0.0;
    for (uint e = 0u; e < p.experts; e++) m = max(m, x[base + e]);
    float s = 0.0;
    for (uint e = 0u; e < p.experts; e++) s += exp(x[base + e] - m);
    uint chosen[32];
    for (uint w = 0u; w < 32u; w++) chosen[w] = 0u;
    float kept = 0.0;
    for (uint n = 0u; n < p.top_k; n++) {
        uint best = 0xffffffffu;
        float bv = 0.0;
        for (uint e = 0u; e < p.experts; e++) {
            if ((chosen[e >> 5] & (1u << (e & 31u))) != 0u) continue;
            float v = x[base + e];
            if (best == 0xffffffffu || v > bv) {
                best = e;
                bv = v;
            }
        }
        chosen[best >> 5] |= 1u << (best & 31u);
        kept += exp(bv - m) / s;
    }
    for (uint e = 0u; e < p.experts; e++) {
        bool on = (chosen[e >> 5] & (1u << (e & 31u))) != 0u;
        float pe = exp(x[base + e] - m) / s;
        o[base + e] = on ? (p.norm_topk != 0u ? pe / kept : pe) : 0.0;
    }
}
