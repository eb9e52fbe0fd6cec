#version 450
// L2_NORM (ir/ops.def): x / sqrt(sum(x^2) + eps) over the last dim, one workgroup per row, times
// `scale` (a SCALE it absorbed). len != 0: x is read through a SLICE of a wider row (runtime/
// vk_fuse.c fuse_l2): element f is x[f / len][begin + f % len], x's rows in_cols long.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "reduce.glsl"

layout(set = 1, binding = 0) readonly buffer X { float x[]; };
layout(set = 1, binding = 1) writeonly buffer O { float o[]; };

layout(push_constant) uniform Push {
    uint rows;
    uint cols;
    float eps;
    uint tok; // rows per token row (0: all rows are computed)
    float scale;
    uint len, in_cols, begin;
} p;

float x_at(uint f) { return x[p.len == 0u ? f : (f / p.len) * p.in_cols + p.begin + f % p.len]; }

void main() {
    uint r = group_id();
    if (r >= valid_rows(p.rows, p.tok)) return;
    uint base = r * p.cols, t = gl_LocalInvocationID.x;
    float ss = 0.0;
    for (uint c = t; c < p.cols; c += WG) ss += x_at(base + c) * x_at(base + c);
    float inv = 1.0 / sqrt(wg_sum(ss) + p.eps);
    for (uint c = t; c < p.cols; c += WG) o[base + c] = x_at(base + c) * inv * p.scale;
}
