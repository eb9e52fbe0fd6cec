#version 450
// RMS_NORM: one workgroup per row; out = x / sqrt(mean(x^2) + eps) * w * scale. Fused forms
// (runtime/vk_lower.c): scale != 1 absorbs a following SCALE; ROPE != 0 absorbs a following ROPE
// of the normalised head (q/k norm then RoPE, as Qwen3 and Gemma 3 prepare Q and K): row r is
// head r % heads of token row r / heads, and its pairs are rotated as rope.comp does.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "reduce.glsl"
#include "rope.glsl"

layout(constant_id = 1) const uint ROPE = 0; // 0 none, 1 NORMAL pairs, 2 NEOX pairs

layout(set = 1, binding = 0) readonly buffer X { float x[]; };
layout(set = 1, binding = 1) readonly buffer W { float w[]; };
layout(set = 1, binding = 2) writeonly buffer O { float o[]; };
layout(set = 1, binding = 3) readonly buffer T { uvec2 step_turns[]; };

layout(push_constant) uniform Push {
    uint rows;
    uint cols;
    float eps;
    float scale;
    uint tok;
    uint heads; // ROPE: rows per token row
    uint n_rot; // ROPE: rotated dims
} p;

void main() {
    uint r = group_id();
    if (r >= valid_rows(p.rows, p.tok)) return;
    uint base = r * p.cols, t = gl_LocalInvocationID.x;
    float ss = 0.0;
    for (uint c = t; c < p.cols; c += WG) ss += x[base + c] * x[base + c];
    ss = wg_sum(ss);
    float k = inversesqrt(ss / float(p.cols) + p.eps) * p.scale;
    if (ROPE == 0u) {
        for (uint c = t; c < p.cols; c += WG) o[base + c] = x[base + c] * k * w[c];
        return;
    }
    uint half_rot = p.n_rot / 2u, pos = rlx.n_past + r / p.heads;
    for (uint i = t; i < half_rot; i += WG) {
        uvec2 d = rope_pair(i, p.n_rot, ROPE == 2u);
        vec2 sc = sincos_turns(pos, step_turns[i]);
        float x0 = x[base + d.x] * k * w[d.x], x1 = x[base + d.y] * k * w[d.y];
        o[base + d.x] = x0 * sc.y - x1 * sc.x;
        o[base + d.y] = x0 * sc.x + x1 * sc.y;
    }
    for (uint c = p.n_rot + t; c < p.cols; c += WG) o[base + c] = x[base + c] * k * w[c];
}
