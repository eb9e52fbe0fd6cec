#version 450
// The elementwise ops of the Gated DeltaNet layer (ir/ops.def), over the n elements of the output
// (rows of `cols`): OP 0 DELTA_GATE y = A[c] softplus(a + dt_bias[c]); 1 SLICE y[r, j] =
// x[r, begin + j] (x rows of in_cols); 2 SCALE_ROWS y[r, c] = x[r, c] s[r].
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(constant_id = 1) const uint OP = 0;
#define OP_DELTA_GATE 0u
#define OP_SLICE 1u
#define OP_SCALE_ROWS 2u

layout(set = 1, binding = 0) readonly buffer X { float x[]; };
layout(set = 1, binding = 1) readonly buffer A { float a1[]; };
layout(set = 1, binding = 2) readonly buffer C { float a2[]; };
layout(set = 1, binding = 3) writeonly buffer O { float o[]; };

layout(push_constant) uniform Push {
    uint n;       // output elements
    uint cols;    // output row length
    uint in_cols; // SLICE: x's row length
    uint begin;   // SLICE: first column taken
    uint tok;     // elements per token row (0: all n are computed)
} p;

// log(1 + e^x) without overflow or loss of small terms
float softplus(float v) { return max(v, 0.0) + log(1.0 + exp(-abs(v))); }

void main() {
    uint stride = gl_NumWorkGroups.x * gl_NumWorkGroups.y * WG;
    uint n = valid_rows(p.n, p.tok);
    for (uint i = group_id() * WG + gl_LocalInvocationID.x; i < n; i += stride) {
        uint r = i / p.cols, c = i % p.cols;
        float y;
        switch (OP) {
        case OP_DELTA_GATE: y = a1[c] * softplus(x[i] + a2[c]); break;
        case OP_SLICE: y = x[r * p.in_cols + p.begin + c]; break;
        default: y = x[i] * a1[r]; break;
        }
        o[i] = y;
    }
}
