#version 450
// Combines the key-split partials of attention.comp (SPLIT): for query row i and head h, with
// partial s = (m_s, l_s, acc_s[Dv]) over its key range, out = sum_s e^(m_s - M) acc_s /
// sum_s e^(m_s - M) l_s, M = max_s m_s. Empty ranges have m = -inf and weigh nothing. One
// workgroup per (row, head); padding rows are 0.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(set = 1, binding = 0) readonly buffer Part { float part[]; };
layout(set = 1, binding = 1) writeonly buffer O { float o[]; };

layout(push_constant) uniform Push {
    uint rows;
    uint heads;
    uint dv;
    uint splits;
    uint tok;
} p;

void main() {
    uint ih = group_id(), i = ih / p.heads, t = gl_LocalInvocationID.x;
    if (i >= p.rows) return;
    uint obase = ih * p.dv, stride = p.dv + 2u, pb = ih * p.splits * stride;
    if (i >= valid_rows(p.rows, p.tok)) {
        for (uint d = t; d < p.dv; d += WG) o[obase + d] = 0.0;
        return;
    }
    float big = -1.0 / 0.0;
    for (uint s = 0u; s < p.splits; s++) big = max(big, part[pb + s * stride]);
    float l = 0.0;
    for (uint s = 0u; s < p.splits; s++) {
        float m = part[pb + s * stride];
        if (m > -1.0 / 0.0) l += exp(m - big) * part[pb + s * stride + 1u];
    }
    float inv = l > 0.0 ? 1.0 / l : 0.0;
    for (uint d = t; d < p.dv; d += WG) {
        float acc = 0.0;
        for (uint s = 0u; s < p.splits; s++) {
            float m = part[pb + s * stride];
            if (m > -1.0 / 0.0) acc += exp(m - big) * part[pb + s * stride + 2u + d];
        }
        o[obase + d] = acc * inv;
    }
}
