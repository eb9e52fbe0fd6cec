#version 450
// MOE_FFN's grouped path (runtime/vk_lower_moe.c), last step: y[i, d] = the sum over the row's
// slots s, in slot order, of part[i, s, d] = route[i, e_s] * (down_{e_s}[d, :] . h[i, s, :])
// (shaders/moe_mm.comp MODE 2). Slot order, from 0, is the order of shaders/moe_mv.comp's sum, so
// a row's sum never depends on which tiles its pairs fell in. A row of no slots is 0.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(set = 1, binding = 0) readonly buffer Slots { uint slot[]; }; // moe_group.comp MODE 0
layout(set = 1, binding = 1) readonly buffer Part { float part[]; };
layout(set = 1, binding = 2) writeonly buffer Y { float y[]; };

layout(push_constant) uniform Push {
    uint rows;
    uint slots;
    uint d;
    uint tok;
} p;

void main() {
    uint stride = gl_NumWorkGroups.x * gl_NumWorkGroups.y * WG;
    uint n = valid_rows(p.rows, p.tok) * p.d;
    for (uint o = group_id() * WG + gl_LocalInvocationID.x; o < n; o += stride) {
        uint i = o / p.d, c = o % p.d;
        float acc = 0.0;
        for (uint s = 0u; s < p.slots && slot[i * p.slots + s] != 0xffffffffu; s++)
            acc += part[(i * p.slots + s) * p.d + c];
        y[o] = acc;
    }
}
