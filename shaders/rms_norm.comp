#version 450
// RMS_NORM: one workgroup per row; out = x / sqrt(mean(x^2) + eps) * w * scale (scale is 1 unless
// a following SCALE was fused in).
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "reduce.glsl"

layout(set = 1, binding = 0) readonly buffer X { float x[]; };
layout(set = 1, binding = 1) readonly buffer W { float w[]; };
layout(set = 1, binding = 2) writeonly buffer O { float o[]; };

layout(push_constant) uniform Push {
    uint rows;
    uint cols;
    float eps;
    float scale;
    uint tok;
} p;

void main() {
    uint r = group_id();
    if (r >= valid_rows(p.rows, p.tok)) return;
    uint base = r * p.cols, t = gl_LocalInvocationID.x;
    float ss = 0.0;
    for (uint c = t; c < p.cols; c += WG) ss += x[base + c] * x[base + c];
    ss = wg_sum(ss);
    float k = inversesqrt(ss / float(p.cols) + p.eps) * p.scale;
    for (uint c = t; c < p.cols; c += WG) o[base + c] = x[base + c] * k * w[c];
}
