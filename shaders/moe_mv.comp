#version 450
// MOE_FFN in three passes over the experts each row routes to (route[i, e] != 0; slot s is the
// s-th such expert in index order), each weight read packed (dequant.glsl):
//  MODE 0 (gate): y[i, s, f] = gate_e[f, :] . x[i, :]
//  MODE 1 (up):   y[i, s, f] = act(y[i, s, f]) * (up_e[f, :] . x[i, :])
//  MODE 2 (down): y[i, d]    = sum_s route[i, e_s] * (down_e[d, :] . h[i, s, :])
// Rows route to at most `slots` experts (top_k when the route comes from MOE_ROUTE, else E).
// A workgroup computes R output rows, one per subgroup (matmul.comp's scheme).
// EPI (MODE 2; runtime/vk_fuse.c fuse_moe): the sums that follow the FFN in the graph, each of which
// would be a dispatch and a stage of its own in a dispatch-bound decode step:
//   y[i, d] = (moe + aux[i, d] * (EPI & 2 ? sigmoid(aux_gate[i]) : 1)) + resid[i, d]
// with the aux term when EPI & 1 (a shared expert, maybe gated) and the resid term when EPI & 4.
// SCALED (MODE 0 and 1; runtime/vk_fuse.c fuse_norm_into_producer): x is an RMS_NORM's input times
// its weights, written by the matvec that computed the input, and the dot products are scaled by
// the rsqrt(mean + eps) that matvec left in its sync block (shaders/matvec.glsl NORM 2), so the norm
// takes no dispatch and no stage of its own.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require

layout(constant_id = 1) const uint W_TYPE = 0;
layout(constant_id = 2) const uint MODE = 0;
layout(constant_id = 3) const uint ACT = 0; // MODE 1: 0 silu, 1 gelu_tanh
layout(constant_id = 4) const uint R = 1;   // output rows per workgroup (about WG / subgroup size)
layout(constant_id = 5) const uint EPI = 0; // MODE 2: 1 aux, 2 aux gated, 4 resid (bits)
layout(constant_id = 6) const uint SCALED = 0;

layout(set = 1, binding = 0) readonly buffer X { float x[]; };
layout(set = 1, binding = 1) readonly buffer Route { float route[]; };
layout(set = 1, binding = 2) readonly buffer Wt { uint w_words[]; };
layout(set = 1, binding = 3) buffer Y { float y[]; };
layout(set = 1, binding = 4) readonly buffer Aux { float aux[]; };          // EPI & 1: [rows, m]
layout(set = 1, binding = 5) readonly buffer AuxGate { float aux_gate[]; }; // EPI & 2: [rows]
layout(set = 1, binding = 6) readonly buffer Resid { float resid[]; };      // EPI & 4: [rows, m]
layout(set = 1, binding = 7) readonly buffer Ns { float ns_rs[]; };         // SCALED: the sync block
#include "sync_layout.h"

layout(push_constant) uniform Push {
    uint rows;
    uint experts;
    uint slots;
    uint k;           // dot length (D for gate/up, F for down)
    uint m;           // outputs per expert (F for gate/up, D for down)
    uint row_bytes;   // bytes per weight row
    uint expert_bytes; // bytes per expert matrix
    uint tok;
} p;

#include "dequant.glsl"
#include "act.glsl"

// A row's routed experts in index order (slot s is the s-th) and their route weights, found once
// per workgroup by its first subgroup (a prefix count per subgroup-wide step over the E weights):
// every output row of the workgroup reads them from here, where each scanning route itself cost
// the dispatch slots x E loads per output row. Rows of more than MAX_SLOTS slots (a route that did
// not come from MOE_ROUTE) scan route as they go.
const uint MAX_SLOTS = 64u;
shared uint slot_e[MAX_SLOTS];
shared float slot_w[MAX_SLOTS];
shared uint slot_n;

void load_slots(uint i) {
    if (p.slots > MAX_SLOTS) return;
    if (gl_SubgroupID == 0u) {
        uint n = 0u;
        for (uint e0 = 0u; e0 < p.experts && n < p.slots; e0 += gl_SubgroupSize) {
            uint e = e0 + gl_SubgroupInvocationID;
            float w = e < p.experts ? route[i * p.experts + e] : 0.0;
            uint on = w != 0.0 ? 1u : 0u, rank = n + subgroupExclusiveAdd(on);
            if (on != 0u && rank < p.slots) {
                slot_e[rank] = e;
                slot_w[rank] = w;
            }
            n += subgroupAdd(on);
        }
        if (subgroupElect()) slot_n = min(n, p.slots);
    }
    barrier();
}

// Expert index of slot s of row i, or 0xffffffff when the row routes to fewer experts.
uint slot_expert(uint i, uint s) {
    if (p.slots <= MAX_SLOTS) return s < slot_n ? slot_e[s] : 0xffffffffu;
    uint n = 0u;
    for (uint e = 0u; e < p.experts; e++) {
        if (route[i * p.experts + e] != 0.0) {
            if (n == s) return e;
            n++;
        }
    }
    return 0xffffffffu;
}

// The route weight of slot s (expert e) of row i.
float slot_weight(uint i, uint s, uint e) {
    return p.slots <= MAX_SLOTS ? slot_w[s] : route[i * p.experts + e];
}

// This subgroup's share of route-weighted dot products: lanes split the row, subgroupAdd reduces.
float dot_row(uint e, uint out_row, uint xbase) {
    uint lane = gl_SubgroupInvocationID, row = e * p.expert_bytes + out_row * p.row_bytes, n8 = p.k / 8u;
    float acc = 0.0;
    for (uint u = lane; u < n8; u += gl_SubgroupSize) {
        vec4 lo, hi;
        dq8(row, u * 8u, lo, hi);
        uint xi = xbase + u * 8u;
        acc += dot(lo, vec4(x[xi], x[xi + 1u], x[xi + 2u], x[xi + 3u])) +
               dot(hi, vec4(x[xi + 4u], x[xi + 5u], x[xi + 6u], x[xi + 7u]));
    }
    for (uint c = n8 * 8u + lane; c < p.k; c += gl_SubgroupSize) acc += dq1(row, c) * x[xbase + c];
    return subgroupAdd(acc);
}

void main() {
    // a workgroup owns R consecutive output rows of one (row i[, slot s]); one subgroup per output
    uint gid = group_id(), blocks = (p.m + R - 1u) / R, lane = gl_SubgroupInvocationID;
    uint f0 = (gid % blocks) * R;
    if (MODE == 2u) {
        uint i = gid / blocks;
        if (i >= valid_rows(p.rows, p.tok)) return; // uniform: a workgroup is one row
        load_slots(i);
        for (uint rr = gl_SubgroupID; rr < R && f0 + rr < p.m; rr += gl_NumSubgroups) {
            uint d = f0 + rr;
            float acc = 0.0;
            for (uint s = 0u; s < p.slots; s++) {
                uint e = slot_expert(i, s);
                if (e == 0xffffffffu) break;
                acc += slot_weight(i, s, e) * dot_row(e, d, (i * p.slots + s) * p.k);
            }
            if (lane == 0u) {
                if ((EPI & 1u) != 0u) acc += aux[i * p.m + d] * ((EPI & 2u) != 0u ? sigmoid(aux_gate[i]) : 1.0);
                if ((EPI & 4u) != 0u) acc += resid[i * p.m + d];
                y[i * p.m + d] = acc;
            }
        }
        return;
    }
    uint s = (gid / blocks) % p.slots, i = gid / (blocks * p.slots);
    if (i >= valid_rows(p.rows, p.tok)) return; // uniform
    load_slots(i);
    uint e = slot_expert(i, s);
    for (uint rr = gl_SubgroupID; rr < R && f0 + rr < p.m; rr += gl_NumSubgroups) {
        uint f = f0 + rr, yi = (i * p.slots + s) * p.m + f;
        if (e == 0xffffffffu) {
            if (lane == 0u) y[yi] = 0.0;
            continue;
        }
        float v = dot_row(e, f, i * p.k) * (SCALED != 0u ? ns_rs[RLX_SYNC_RS] : 1.0);
        if (lane == 0u) {
            if (MODE == 1u) v *= ACT == 0u ? silu(y[yi]) : gelu_tanh(y[yi]);
            y[yi] = v;
        }
    }
}
