#version 450
// SOFTMAX over the last dim: one workgroup per row, max-subtracted for stability.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "reduce.glsl"

layout(set = 1, binding = 0) readonly buffer X { float x[]; };
layout(set = 1, binding = 1) writeonly buffer O { float o[]; };

layout(push_constant) uniform Push {
    uint rows;
    uint cols;
    uint tok;
} p;

void main() {
    uint r = group_id();
    if (r >= valid_rows(p.rows, p.tok)) return;
    uint base = r * p.cols, t = gl_LocalInvocationID.x;
    float m = -1.0 / 0.0;
    for (uint c = t; c < p.cols; c += WG) m = max(m, x[base + c]);
    m = wg_max(m);
    float s = 0.0;
    for (uint c = t; c < p.cols; c += WG) s += exp(x[base + c] - m);
    s = wg_sum(s);
    float inv = 1.0 / s;
    for (uint c = t; c < p.cols; c += WG) o[base + c] = exp(x[base + c] - m) * inv;
}
