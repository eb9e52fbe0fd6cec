#version 450
// KV_WRITE: rows [0, n_tokens) of x go to cache rows [n_past, n_past + n_tokens). The host has
// checked n_past + n_tokens <= cap before the run.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(set = 1, binding = 0) readonly buffer X { float x[]; };
layout(set = 1, binding = 1) buffer C { float cache[]; };

layout(push_constant) uniform Push {
    uint row_elems; // H_kv * Dh
    uint rows;      // static rows of x
} p;

void main() {
    uint n = min(rlx.n_tokens, p.rows) * p.row_elems;
    uint dst = rlx.n_past * p.row_elems;
    uint stride = gl_NumWorkGroups.x * gl_NumWorkGroups.y * WG;
    for (uint i = group_id() * WG + gl_LocalInvocationID.x; i < n; i += stride) cache[dst + i] = x[i];
}
