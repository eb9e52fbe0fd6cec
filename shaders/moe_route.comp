#version 450
// MOE_ROUTE (ir/ops.def): per row, softmax over the E router logits, keep the top_k largest
// (ties: the lower expert index first), zero the rest, renormalise the kept ones to sum 1 when
// norm_topk. One subgroup per row, the row in its lanes' registers (expert e in lane e % S, slot
// e / S, S the subgroup size; at most PER slots, sized by the host), so the max, the sum and each of
// the top_k picks are subgroup reductions with no barrier: a workgroup's argmax per pick, three
// barriers each, was most of this kernel's time in a decode step of a model of 256 experts. The
// other subgroups of the workgroup take the next rows.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require

layout(set = 1, binding = 0) readonly buffer X { float x[]; };
layout(set = 1, binding = 1) writeonly buffer O { float o[]; };

layout(push_constant) uniform Push {
    uint rows;
    uint experts;
    uint top_k;
    uint norm_topk;
    uint tok;
} p;

layout(constant_id = 1) const uint MAX_PER = 8; // ceil(E / the smallest subgroup size), at most 32 words of bits
const uint NONE = 0xffffffffu;

void main() {
    uint lane = gl_SubgroupInvocationID, sgs = gl_SubgroupSize;
    uint r = group_id() * gl_NumSubgroups + gl_SubgroupID;
    if (r >= valid_rows(p.rows, p.tok)) return; // uniform in the subgroup: no barrier follows
    uint base = r * p.experts, per = (p.experts + sgs - 1u) / sgs;
    float xs[MAX_PER];
    float m = -1.0 / 0.0;
    [[unroll]] for (uint j = 0u; j < MAX_PER; j++) {
        uint e = lane + j * sgs;
        xs[j] = j < per && e < p.experts ? x[base + e] : -1.0 / 0.0;
        m = max(m, xs[j]);
    }
    m = subgroupMax(m);
    float s = 0.0;
    [[unroll]] for (uint j = 0u; j < MAX_PER; j++)
        if (j < per && lane + j * sgs < p.experts) s += exp(xs[j] - m);
    s = subgroupAdd(s);
    uint chosen[(MAX_PER + 31u) / 32u]; // bit j: this lane's expert lane + j S is kept
    [[unroll]] for (uint w = 0u; w < (MAX_PER + 31u) / 32u; w++) chosen[w] = 0u;
    float kept = 0.0;
    for (uint n = 0u; n < p.top_k; n++) {
        float bv = -1.0 / 0.0;
        uint be = NONE; // this lane's best expert not yet kept: slots ascend, so the first of equals
        [[unroll]] for (uint j = 0u; j < MAX_PER; j++) {
            uint e = lane + j * sgs;
            if (j < per && e < p.experts && (chosen[j / 32u] & (1u << (j % 32u))) == 0u && (be == NONE || xs[j] > bv)) {
                bv = xs[j];
                be = e;
            }
        }
        float sv = subgroupMax(be == NONE ? -1.0 / 0.0 : bv);
        uint se = subgroupMin(be != NONE && bv == sv ? be : NONE);
        if (se == NONE) break; // fewer experts than top_k: the compiler refuses that, kept for safety
        if (se % sgs == lane) chosen[se / sgs / 32u] |= 1u << (se / sgs % 32u);
        kept += exp(sv - m) / s;
    }
    [[unroll]] for (uint j = 0u; j < MAX_PER; j++) {
        uint e = lane + j * sgs;
        if (j >= per || e >= p.experts) continue;
        float pe = exp(xs[j] - m) / s;
        o[base + e] = (chosen[j / 32u] & (1u << (j % 32u))) != 0u ? (p.norm_topk != 0u ? pe / kept : pe) : 0.0;
    }
}
