#version 450
// GATHER_ROWS (ir/ops.def): output row r is x's row idx[r], or 0 where idx[r] is outside
// [0, n_tokens). Raw 32-bit words.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(set = 1, binding = 0) readonly buffer X { uint x[]; };
layout(set = 1, binding = 1) readonly buffer I { int idx[]; };
layout(set = 1, binding = 2) writeonly buffer O { uint o[]; };

layout(push_constant) uniform Push {
    uint row_elems;
    uint rows; // output rows
} p;

void main() {
    uint n = p.rows * p.row_elems;
    uint stride = gl_NumWorkGroups.x * gl_NumWorkGroups.y * WG;
    for (uint i = group_id() * WG + gl_LocalInvocationID.x; i < n; i += stride) {
        int r = idx[i / p.row_elems];
        o[i] = r >= 0 && uint(r) < rlx.n_tokens ? x[uint(r) * p.row_elems + i % p.row_elems] : 0u;
    }
}
