#version 450
// ROPE (ir/ops.def): the pair (x0, x1) of head dims turns by theta_i = pos * base^(-2i/n_rot) /
// freq_factors[i], pos = n_past + row. NORMAL pairs dims (2i, 2i+1), NEOX (i, i + n_rot/2); dims
// >= n_rot pass through.
//
// Accuracy: pos * inv_freq reaches thousands of radians, where a float angle is off by ~1e-4, and
// float tricks (fma-based exact products) are not portable: some drivers split fma. So the host
// gives each pair its angle step in turns, theta_i / 2pi, as a 64-bit fixed-point fraction
// (runtime/vk_lower.c), and pos * step mod 1 turn is exact 32-bit integer arithmetic
// (umulExtended). The quarter turn is taken off in integers too; what is left, |r| <= pi/4, goes
// through minimax polynomials (Cephes sinf/cosf) instead of the built-ins, whose Vulkan precision
// is only 2^-11 absolute. The angle error is ~3e-8 rad at any position.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(constant_id = 1) const uint NEOX = 0;

layout(set = 1, binding = 0) readonly buffer X { float x[]; };
layout(set = 1, binding = 1) readonly buffer T { uvec2 step_turns[]; }; // (low, high) words per pair
layout(set = 1, binding = 2) writeonly buffer O { float o[]; };

layout(push_constant) uniform Push {
    uint rows;
    uint heads;
    uint dh;
    uint n_rot;
    uint tok;
} p;

// (sin, cos) of pos * step turns.
vec2 sincos_turns(uint pos, uvec2 step) {
    uint h1, l1, h2, l2;
    umulExtended(pos, step.x, h1, l1);
    umulExtended(pos, step.y, h2, l2);
    uint turns = l2 + h1;                      // the fraction of a turn, in units of 2^-32
    uint q = (turns + 0x20000000u) >> 30;      // nearest quarter turn
    int rem = int(turns - (q << 30));          // in [-2^29, 2^29)
    float r = (float(rem) + float(l1) * 2.3283064365386963e-10) * 1.4629180792671596e-09; // * 2pi / 2^32
    float z = r * r;
    float s = r + r * z * (-1.6666654611e-1 + z * (8.3321608736e-3 + z * -1.9515295891e-4));
    float c = 1.0 - 0.5 * z + z * z * (4.166664568298827e-2 + z * (-1.388731625493765e-3 + z * 2.443315711809948e-5));
    if (q == 0u) return vec2(s, c);
    if (q == 1u) return vec2(c, -s);
    if (q == 2u) return vec2(-s, -c);
    return vec2(-c, s);
}

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
    uint i = slot;
    uint i0 = NEOX != 0u ? i : 2u * i, i1 = NEOX != 0u ? i + half_rot : 2u * i + 1u;
    vec2 sc = sincos_turns(rlx.n_past + row, step_turns[i]);
    float x0 = x[base + i0], x1 = x[base + i1];
    o[base + i0] = x0 * sc.y - x1 * sc.x;
    o[base + i1] = x0 * sc.x + x1 * sc.y;
}
