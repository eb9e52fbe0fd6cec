#version 450
// ROPE (ir/ops.def): the pair (x0, x1) of head dims turns by theta_i = pos * base^(-2i/n_rot) /
// freq_factors[i], pos = n_past + row; dims >= n_rot pass through. Angles: rope.glsl.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "rope.glsl"

layout(constant_id = 1) const uint NEOX = 0;

layout(set = 1, binding = 0) readonly buffer X { float x[]; };
layout(set = 1, binding = 1) readonly buffer T { uvec2 step_turns[]; };
layout(set = 1, binding = 2) writeonly buffer O { float o[]; };

layout(push_constant) uniform Push {
    uint rows;
    uint heads;
    uint dh;
    uint n_rot;
    uint tok;
} p;

void main() {
    uint half_rot = p.n_rot / 2u, per_head = half_rot + (p.dh - p.n_rot + 1u) / 2u;
    uint idx = group_id() * WG + gl_LocalInvocationID.x;
    if (idx >= valid_rows(p.rows, p.tok) * p.heads * per_head) return;
    uint slot = idx % per_head, hrow = idx / per_head, row = hrow / p.heads;
    uint base = hrow * p.dh;
    if (slot >= half_rot) { // pass-through dims
        uint d = p.n_rot + 2u * (slot - half_rot);
        o[base + d] = x[base + d];
        if (d + 1u < p.dh) o[base + d + 1u] = x[base + d + 1u];
        return;
    }
    uvec2 d = rope_pair(slot, p.n_rot, NEOX != 0u);
    vec2 sc = sincos_turns(rlx.n_past + row, step_turns[slot]);
    float x0 = x[base + d.x], x1 = x[base + d.y];
    o[base + d.x] = x0 * sc.y - x1 * sc.x;
    o[base + d.y] = x0 * sc.x + x1 * sc.y;
}
