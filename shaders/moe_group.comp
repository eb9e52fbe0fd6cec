#version 450
// MOE_FFN's grouped path (runtime/vk_lower_moe.c), step one: which (row, slot) pairs each expert
// takes, for shaders/moe_mm.comp and moe_sum.comp. Slot s of row i is the s-th expert with
// route[i, e] != 0 in index order (shaders/moe_mv.comp's numbering: both paths share the layout of
// h, [rows, slots, F]); a pair is listed as the word j = i * slots + s.
//  MODE 0: one workgroup per row i: slot[i, s] = the expert of slot s, NONE past the row's last.
//  MODE 1: one workgroup per expert e: list = count[E], then per expert `rows` words; count[e] and
//          list[e][0 .. count[e]) = the pairs of the rows routed to e, in ascending row order.
// The order comes from a workgroup scan over the rows, not from atomics, so it is the same on every
// run, and so is every sum moe_mm.comp and moe_sum.comp make over it. Only rows < n_tokens count.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require

layout(constant_id = 1) const uint MODE = 0;

layout(set = 1, binding = 0) readonly buffer Route { float route[]; };
layout(set = 1, binding = 1) buffer Slots { uint slot[]; };
layout(set = 1, binding = 2) buffer List { uint list[]; };

layout(push_constant) uniform Push {
    uint rows;    // static rows: each expert's list holds up to this many pairs
    uint experts;
    uint slots;
    uint tok;
} p;

const uint NONE = 0xffffffffu;

// MODE 0: the first subgroup walks the row's E weights a subgroup-wide step at a time; a prefix
// count over the step gives each routed expert its slot.
void find_slots(uint i) {
    if (gl_SubgroupID != 0u) return;
    uint n = 0u, base = i * p.slots;
    for (uint e0 = 0u; e0 < p.experts && n < p.slots; e0 += gl_SubgroupSize) {
        uint e = e0 + gl_SubgroupInvocationID;
        uint on = e < p.experts && route[i * p.experts + e] != 0.0 ? 1u : 0u, rank = n + subgroupExclusiveAdd(on);
        if (on != 0u && rank < p.slots) slot[base + rank] = e;
        n += subgroupAdd(on);
    }
    for (uint s = min(n, p.slots) + gl_SubgroupInvocationID; s < p.slots; s += gl_SubgroupSize) slot[base + s] = NONE;
}

shared uint sg_count[WG]; // per subgroup: its routed rows of this step (>= gl_NumSubgroups)

// The exclusive prefix of `on` over the workgroup, in invocation order; *total: the sum.
uint wg_exclusive(uint on, out uint total) {
    uint before = subgroupExclusiveAdd(on), mine = subgroupAdd(on);
    if (subgroupElect()) sg_count[gl_SubgroupID] = mine;
    barrier();
    total = 0u;
    for (uint g = 0u; g < gl_NumSubgroups; g++) {
        if (g < gl_SubgroupID) before += sg_count[g];
        total += sg_count[g];
    }
    barrier(); // every invocation has read sg_count before the next step writes it
    return before;
}

// MODE 1: the workgroup takes WG rows a step; the rows routed to e get consecutive places in order.
void list_rows(uint e, uint n_rows) {
    uint t = gl_LocalInvocationID.x, n = 0u, base = p.experts + e * p.rows;
    for (uint i0 = 0u; i0 < n_rows; i0 += WG) { // uniform: n_rows is the run's
        uint i = i0 + t, j = NONE;
        if (i < n_rows && route[i * p.experts + e] != 0.0)
            for (uint s = 0u; s < p.slots; s++)
                if (slot[i * p.slots + s] == e) {
                    j = i * p.slots + s;
                    break;
                }
        uint total, at = wg_exclusive(j != NONE ? 1u : 0u, total);
        if (j != NONE) list[base + n + at] = j;
        n += total;
    }
    if (t == 0u) list[e] = n;
}

void main() {
    uint g = group_id(), n_rows = valid_rows(p.rows, p.tok);
    if (MODE == 0u) {
        if (g < n_rows) find_slots(g);
        return;
    }
    if (g < p.experts) list_rows(g, n_rows); // uniform: a workgroup is one expert
}
