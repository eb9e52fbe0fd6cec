#version 450
// ATTENTION (ir/ops.def), built for few query rows (decode), correct for any. One workgroup per
// (query row i, block of GW query heads of one kv head[, key split s]), so the heads that share a
// kv head (GQA) read its K and V once. Query i sits at pos = n_past + i and sees keys j in
// [lo, pos] (lo from the sliding window), clamped to the T keys bound. Padding rows are 0.
//
// Flash decoding inside the workgroup: each subgroup walks its own keys, blocks of KB neighbours
// dealt out in turn, with its own online softmax (running max m, sum l, accumulators acc rescaled
// per block); its lanes split the head dims (EPL of K, EPV of V each), so a key's score is a few
// loads per lane and one subgroupAdd, and a block's K and V rows are one memory round trip. No
// barrier until the end, where the subgroups' (m, l, acc) meet in shared memory. (Walking all keys
// in chunks shared by the whole workgroup, with two barriers and a serial softmax per chunk, took
// ~25 us per layer at ~100 keys on the H100.)
// SPLIT (long contexts, few query rows): the visible keys are cut into `splits` ranges, one
// workgroup each, which write their unnormalised partial (max, sum, acc[Dv]) for attn_combine.comp.
// EPL and EPV are planned for the device's smallest subgroup size, so any size it runs covers the
// head dims.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require

layout(constant_id = 1) const uint GW = 1;    // query heads per workgroup (a divisor of H / H_kv)
layout(constant_id = 2) const uint SPLIT = 0;
layout(constant_id = 3) const uint KB = 8;    // keys per subgroup block
layout(constant_id = 4) const uint EPL = 4;   // K dims per lane (ceil(dh / smallest subgroup size))
layout(constant_id = 5) const uint EPV = 4;   // V dims per lane
layout(constant_id = 6) const uint DPT = 1;   // output dims per invocation (ceil(dv / WG))

layout(set = 1, binding = 0) readonly buffer Q { float q[]; };
layout(set = 1, binding = 1) readonly buffer K { float k[]; };
layout(set = 1, binding = 2) readonly buffer V { float v[]; };
layout(set = 1, binding = 3) writeonly buffer O { float o[]; };
layout(set = 1, binding = 4) writeonly buffer Part { float part[]; }; // SPLIT: [(i H + h) splits + s][Dv + 2]

layout(push_constant) uniform Push {
    uint rows;  // query rows n
    uint heads; // H
    uint kv_heads;
    uint dh;
    uint dv;
    uint t;     // key rows bound
    uint window;
    float scale;
    uint tok;
    uint splits;
} p;

shared float sm[GW * WG], sl[GW * WG]; // per (head, subgroup): its max, its weighted sum
shared float so[GW * DPT * WG];           // per (head, dim): the subgroups' scaled acc, summed

float qr[GW * EPL];                // this lane's share of the GW query rows
float m[GW], l[GW], acc[GW * EPV]; // this subgroup's online softmax over its keys

// One block of KB keys from j0 (keys past hi are masked): scores, then the online update.
void attend_block(uint j0, uint hi, uint kvh, uint kv_row) {
    uint lane = gl_SubgroupInvocationID, sgs = gl_SubgroupSize;
    float kr[KB * EPL], vr[KB * EPV];
    [[unroll]] for (uint kb = 0u; kb < KB; kb++) {
        uint row = min(j0 + kb, hi) * kv_row + kvh;
        [[unroll]] for (uint e = 0u; e < EPL; e++) kr[kb * EPL + e] = k[row * p.dh + min(lane + e * sgs, p.dh - 1u)];
        [[unroll]] for (uint e = 0u; e < EPV; e++) vr[kb * EPV + e] = v[row * p.dv + min(lane + e * sgs, p.dv - 1u)];
    }
    [[unroll]] for (uint g = 0u; g < GW; g++) {
        float sc[KB], mc = m[g];
        [[unroll]] for (uint kb = 0u; kb < KB; kb++) {
            float dot = 0.0; // qr is 0 past dh
            [[unroll]] for (uint e = 0u; e < EPL; e++) dot += qr[g * EPL + e] * kr[kb * EPL + e];
            sc[kb] = j0 + kb <= hi ? subgroupAdd(dot) * p.scale : -1.0 / 0.0;
            mc = max(mc, sc[kb]);
        }
        float corr = exp(m[g] - mc); // 0 on the first block (m = -inf); key j0 is visible, so mc is finite
        l[g] *= corr;
        [[unroll]] for (uint e = 0u; e < EPV; e++) acc[g * EPV + e] *= corr;
        [[unroll]] for (uint kb = 0u; kb < KB; kb++) {
            float pj = exp(sc[kb] - mc);
            l[g] += pj;
            [[unroll]] for (uint e = 0u; e < EPV; e++) acc[g * EPV + e] += pj * vr[kb * EPV + e];
        }
        m[g] = mc;
    }
}

void main() {
    uint gid = group_id(), splits = SPLIT != 0u ? p.splits : 1u, blocks = p.heads / GW;
    uint sp_i = gid % splits, ib = gid / splits;
    uint i = ib / blocks, h0 = (ib % blocks) * GW, t = gl_LocalInvocationID.x;
    if (i >= p.rows) return;
    bool empty = i >= valid_rows(p.rows, p.tok) || p.t == 0u;
    if (empty && SPLIT != 0u) return; // split partials of padding rows are never combined
    uint pos = rlx.n_past + i;
    uint hi = empty ? 0u : min(pos, p.t - 1u);
    uint lo = empty ? 1u : (p.window > 0u && pos + 1u > p.window) ? pos + 1u - p.window : 0u;
    if (SPLIT != 0u && lo <= hi) { // this workgroup's share of [lo, hi]; may be empty
        uint per = (hi - lo + splits) / splits, first = lo + sp_i * per;
        hi = min(hi, first + per - 1u);
        lo = first;
    }
    uint kvh = h0 / (p.heads / p.kv_heads), kv_row = p.kv_heads;
    uint lane = gl_SubgroupInvocationID, sgs = gl_SubgroupSize, sg = gl_SubgroupID, ns = gl_NumSubgroups;

    [[unroll]] for (uint g = 0u; g < GW; g++)
        [[unroll]] for (uint e = 0u; e < EPL; e++) {
            uint d = lane + e * sgs;
            qr[g * EPL + e] = d < p.dh ? q[((i * p.heads + h0 + g) * p.dh) + d] : 0.0;
        }
    [[unroll]] for (uint g = 0u; g < GW; g++) {
        m[g] = -1.0 / 0.0;
        l[g] = 0.0;
        [[unroll]] for (uint e = 0u; e < EPV; e++) acc[g * EPV + e] = 0.0;
    }
    if (lo <= hi)
        for (uint j0 = lo + sg * KB; j0 <= hi; j0 += ns * KB) attend_block(j0, hi, kvh, kv_row);

    // The subgroups meet: the overall max M, each subgroup's weight e^(m - M) (0 for one that saw
    // no key), its weighted sum, then its weighted acc added into so one subgroup at a time.
    if (subgroupElect())
        [[unroll]] for (uint g = 0u; g < GW; g++) sm[g * WG + sg] = m[g];
    for (uint x = t; x < GW * DPT * WG; x += WG) so[x] = 0.0;
    barrier();
    float big[GW], wsub[GW]; // the overall max; this subgroup's weight
    [[unroll]] for (uint g = 0u; g < GW; g++) {
        big[g] = -1.0 / 0.0;
        for (uint s = 0u; s < ns; s++) big[g] = max(big[g], sm[g * WG + s]);
        wsub[g] = m[g] > -1.0 / 0.0 ? exp(m[g] - big[g]) : 0.0;
    }
    if (subgroupElect())
        [[unroll]] for (uint g = 0u; g < GW; g++) sl[g * WG + sg] = l[g] * wsub[g];
    for (uint s = 0u; s < ns; s++) {
        if (s == sg)
            [[unroll]] for (uint g = 0u; g < GW; g++)
                [[unroll]] for (uint e = 0u; e < EPV; e++) {
                    uint d = lane + e * sgs;
                    if (d < p.dv) so[g * DPT * WG + d] += acc[g * EPV + e] * wsub[g];
                }
        barrier();
    }

    [[unroll]] for (uint g = 0u; g < GW; g++) {
        uint ih = i * p.heads + h0 + g;
        float sum = 0.0;
        for (uint s = 0u; s < ns; s++) sum += sl[g * WG + s];
        if (SPLIT != 0u) {
            uint pb = (ih * splits + sp_i) * (p.dv + 2u);
            if (t == 0u) {
                part[pb] = big[g];
                part[pb + 1u] = sum;
            }
            [[unroll]] for (uint e = 0u; e < DPT; e++)
                if (t + e * WG < p.dv) part[pb + 2u + t + e * WG] = so[g * DPT * WG + t + e * WG];
            continue;
        }
        float inv = sum > 0.0 ? 1.0 / sum : 0.0; // no visible key: 0, as the CPU reference
        [[unroll]] for (uint e = 0u; e < DPT; e++)
            if (t + e * WG < p.dv) o[ih * p.dv + t + e * WG] = so[g * DPT * WG + t + e * WG] * inv;
    }
}
