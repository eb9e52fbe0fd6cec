#version 450
// MOE_FFN's grouped path (runtime/vk_lower_moe.c), step one: which (row, slot) pairs each expert
// takes, for shaders/moe_mm.comp and moe_sum.comp. Slot s of row i is the s-th expert with
// route[i, e] != 0 in index order (shaders/moe_mv.comp's numbering: both paths share the layout of
// h, [rows, slots, F]); a pair is listed as the word j = i * slots + s.
//  MODE 0: one workgroup per row i: slot[i, s] = the expert of slot s, NONE past the row's last.
//  MODE 1: one workgroup per expert e: list = count[E], then per expert `rows` words; count[e] and
//          list[e][0 .. count[e]) = the pairs of the rows routed to e, in ascending row order.
//  MODE 2: one workgroup: after the lists, n_tiles, then the tiles of tm pairs that hold pairs, in
//          expert order, each the word e * row_tiles + r (tile r of expert e; row_tiles =
//          ceil(rows / tm)): moe_mm.comp's grid walks these, not every (expert, tile) there could be.
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
    uint tm;      // MODE 2: pairs per tile (moe_mm.comp TM)
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

shared uint sg_count[WG]; // per subgroup: its sum of this step (>= gl_NumSubgroups)

// The exclusive prefix of v over the workgroup, in invocation order; *total: the sum.
uint wg_exclusive(uint v, out uint total) {
    uint before = subgroupExclusiveAdd(v), mine = subgroupAdd(v);
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

// MODE 2: WG experts a step; each expert's tiles get consecutive places, in expert order.
void list_tiles() {
    uint t = gl_LocalInvocationID.x, n = 0u, row_tiles = (p.rows + p.tm - 1u) / p.tm;
    uint base = p.experts + p.experts * p.rows;
    for (uint e0 = 0u; e0 < p.experts; e0 += WG) {
        uint e = e0 + t, tiles = e < p.experts ? (list[e] + p.tm - 1u) / p.tm : 0u;
        uint total, at = base + 1u + n + wg_exclusive(tiles, total);
        for (uint r = 0u; r < tiles; r++) list[at + r] = e * row_tiles + r;
        n += total;
    }
    if (t == 0u) list[base] = n;
}

void main() {
    uint g = group_id(), n_rows = valid_rows(p.rows, p.tok);
    if (MODE == 0u) {
        if (g < n_rows) find_slots(g);
    } else if (MODE == 1u) {
        if (g < p.experts) list_rows(g, n_rows); // uniform: a workgroup is one expert
    } else if (g == 0u) {
        list_tiles();
    }
}
