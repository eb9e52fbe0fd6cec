#version 450
// MOE_FFN's grouped path (runtime/vk_lower_moe.c), last step: y[i, d] = the sum over the row's
// slots s, in slot order, of part[i, s, d] = route[i, e_s] * (down_{e_s}[d, :] . h[i, s, :])
// (shaders/moe_mm.comp MODE 2). Slot order, from 0, is the order of shaders/moe_mv.comp's sum, so
// a row's sum never depends on which tiles its pairs fell in. A row of no slots is 0.
// EPI (runtime/vk_fuse.c fuse_moe): the sums that follow the FFN in the graph, as moe_mv.comp's
// down pass adds them: y[i, d] = (sum + aux[i, d] * (EPI & 2 ? sigmoid(aux_gate[i]) : 1)) +
// resid[i, d], with the aux term when EPI & 1 and the resid term when EPI & 4.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(constant_id = 1) const uint EPI = 0; // 1 aux, 2 aux gated, 4 resid (bits)

layout(set = 1, binding = 0) readonly buffer Slots { uint slot[]; }; // moe_group.comp MODE 0
layout(set = 1, binding = 1) readonly buffer Part { float part[]; };
layout(set = 1, binding = 2) writeonly buffer Y { float y[]; };
layout(set = 1, binding = 3) readonly buffer Aux { float aux[]; };          // EPI & 1: [rows, d]
layout(set = 1, binding = 4) readonly buffer AuxGate { float aux_gate[]; }; // EPI & 2: [rows]
layout(set = 1, binding = 5) readonly buffer Resid { float resid[]; };      // EPI & 4: [rows, d]

layout(push_constant) uniform Push {
    uint rows;
    uint slots;
    uint d;
    uint tok;
} p;

#include "act.glsl"

void main() {
    uint stride = gl_NumWorkGroups.x * gl_NumWorkGroups.y * WG;
    uint n = valid_rows(p.rows, p.tok) * p.d;
    for (uint o = group_id() * WG + gl_LocalInvocationID.x; o < n; o += stride) {
        uint i = o / p.d, c = o % p.d;
        float acc = 0.0;
        for (uint s = 0u; s < p.slots && slot[i * p.slots + s] != 0xffffffffu; s++)
            acc += part[(i * p.slots + s) * p.d + c];
        if ((EPI & 1u) != 0u) acc += aux[o] * ((EPI & 2u) != 0u ? sigmoid(aux_gate[i]) : 1.0);
        if ((EPI & 4u) != 0u) acc += resid[o];
        y[o] = acc;
    }
}
