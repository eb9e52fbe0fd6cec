#version 450
// Elementwise ops over n floats: out = f(a, b). OP picks f (ir/ops.def semantics; the fused gated
// forms are silu(a) * b and gelu_tanh(a) * b; SIGMOID 1 / (1 + e^-a)).
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(constant_id = 1) const uint OP = 0;
#define OP_ADD 0u
#define OP_MUL 1u
#define OP_SCALE 2u
#define OP_SILU 3u
#define OP_GELU_TANH 4u
#define OP_SILU_MUL 5u
#define OP_GELU_MUL 6u
#define OP_SIGMOID 7u

layout(set = 1, binding = 0) readonly buffer A { float a[]; };
layout(set = 1, binding = 1) readonly buffer B { float b[]; };
layout(set = 1, binding = 2) writeonly buffer O { float o[]; };

layout(push_constant) uniform Push {
    uint n;
    float scale;
    uint tok; // elements per token row (0: all n are computed)
} p;

#include "act.glsl"

void main() {
    uint stride = gl_NumWorkGroups.x * gl_NumWorkGroups.y * WG;
    uint n = valid_rows(p.n, p.tok);
    for (uint i = group_id() * WG + gl_LocalInvocationID.x; i < n; i += stride) {
        float x = a[i];
        float y;
        switch (OP) {
        case OP_ADD: y = x + b[i]; break;
        case OP_MUL: y = x * b[i]; break;
        case OP_SCALE: y = x * p.scale; break;
        case OP_SILU: y = silu(x); break;
        case OP_GELU_TANH: y = gelu_tanh(x); break;
        case OP_SILU_MUL: y = silu(x) * b[i]; break;
        case OP_GELU_MUL: y = gelu_tanh(x) * b[i]; break;
        case OP_SIGMOID: y = sigmoid(x); break;
        default: y = x; break;
        }
        o[i] = y;
    }
}
