#version 450
// LAST_ROW: copies row n_tokens - 1 (as raw 32-bit words, so F32 and I32 alike).
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(set = 1, binding = 0) readonly buffer X { uint x[]; };
layout(set = 1, binding = 1) writeonly buffer O { uint o[]; };

layout(push_constant) uniform Push {
    uint row_elems;
} p;

void main() {
    uint base = (rlx.n_tokens - 1u) * p.row_elems;
    uint stride = gl_NumWorkGroups.x * gl_NumWorkGroups.y * WG;
    for (uint i = group_id() * WG + gl_LocalInvocationID.x; i < p.row_elems; i += stride) o[i] = x[base + i];
}
