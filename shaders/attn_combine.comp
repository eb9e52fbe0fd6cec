#version 450
// Combines the key-split partials of attention.comp (SPLIT): for query row i and head h, with
// partial s = (m_s, l_s, acc_s[Dv]) over its key range, out = sum_s e^(m_s - M) acc_s /
// sum_s e^(m_s - M) l_s, M = max_s m_s. Empty ranges have m = -inf and weigh nothing. One
// workgroup per (row, head); padding rows are 0. The splits' weights are computed once, in shared
// memory, so each output dim is one pass of independent loads over the splits.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(constant_id = 1) const uint MAX_SPLITS = 64; // runtime/vk_plan.h ATTN_MAX_SPLITS

layout(set = 1, binding = 0) readonly buffer Part { float part[]; };
layout(set = 1, binding = 1) writeonly buffer O { float o[]; };

layout(push_constant) uniform Push {
    uint rows;
    uint heads;
    uint dv;
    uint splits;
    uint tok;
} p;

shared float sm[MAX_SPLITS], sw[MAX_SPLITS];

void main() {
    uint ih = group_id(), i = ih / p.heads, t = gl_LocalInvocationID.x;
    if (i >= p.rows) return;
    uint obase = ih * p.dv, stride = p.dv + 2u, pb = ih * p.splits * stride;
    if (i >= valid_rows(p.rows, p.tok)) {
        for (uint d = t; d < p.dv; d += WG) o[obase + d] = 0.0;
        return;
    }
    for (uint s = t; s < p.splits; s += WG) {
        sm[s] = part[pb + s * stride];
        sw[s] = part[pb + s * stride + 1u];
    }
    barrier();
    float big = -1.0 / 0.0;
    for (uint s = 0u; s < p.splits; s++) big = max(big, sm[s]);
    float l = 0.0;
    for (uint s = 0u; s < p.splits; s++) l += sm[s] > -1.0 / 0.0 ? exp(sm[s] - big) * sw[s] : 0.0;
    barrier(); // every invocation has read sw: it now holds each split's weight
    for (uint s = t; s < p.splits; s += WG) sw[s] = sm[s] > -1.0 / 0.0 ? exp(sm[s] - big) : 0.0;
    barrier();
    float inv = l > 0.0 ? 1.0 / l : 0.0;
    for (uint d = t; d < p.dv; d += WG) {
        float acc = 0.0;
        for (uint s = 0u; s < p.splits; s++) acc += sw[s] * part[pb + s * stride + 2u + d];
        o[obase + d] = acc * inv;
    }
}
