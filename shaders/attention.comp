#version 450
// ATTENTION (ir/ops.def), built for few query rows (decode), correct for any. One workgroup per
// (query row i, block of GW query heads of one kv head[, key split s]), so the heads that share a
// kv head (GQA) read its K and V once. Query i sits at pos = n_past + i and sees keys j in
// [lo, pos] (lo from the sliding window), clamped to the T keys bound. Padding rows are 0.
//
// Keys are taken CH at a time with an online softmax (running max and sum rescaled per chunk), so
// any T runs in fixed registers. Within a chunk:
//  - scores: each subgroup takes KB keys at a time; its lanes split the head dims (EPL each), so
//    one key's dot product is a few loads per lane and one subgroupAdd;
//  - the chunk's V rows are loaded (invocation t owns dims t + e WG, e < DPT) at the same time as
//    K, so a chunk costs one memory round trip;
//  - after one barrier every invocation reads the chunk's scores from shared memory and updates
//    its own running max, sum and accumulators: no workgroup reductions.
// SPLIT (long contexts, few query rows): the visible keys are cut into `splits` ranges, one
// workgroup each, which write their unnormalised partial (max, sum, acc[Dv]) for attn_combine.comp.
// EPL, KB and DPT are planned for the device's usual subgroup size; another size still computes
// the same values (extra dims go through a loop; subgroups take turns over the keys).
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require

layout(constant_id = 1) const uint GW = 1;    // query heads per workgroup (a divisor of H / H_kv)
layout(constant_id = 2) const uint SPLIT = 0;
layout(constant_id = 3) const uint CH = 32;   // keys per chunk
layout(constant_id = 4) const uint EPL = 4;   // head dims per lane in a dot product
layout(constant_id = 5) const uint KB = 8;    // keys per subgroup per pass
layout(constant_id = 6) const uint DPT = 1;   // output dims per invocation

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

shared float sp[GW * CH]; // the chunk's scores, per head

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
    uint lane = gl_SubgroupInvocationID, sgs = gl_SubgroupSize;

    float qr[GW * EPL];
    [[unroll]] for (uint g = 0u; g < GW; g++)
        [[unroll]] for (uint e = 0u; e < EPL; e++) {
            uint d = lane + e * sgs;
            qr[g * EPL + e] = d < p.dh ? q[((i * p.heads + h0 + g) * p.dh) + d] : 0.0;
        }
    float m[GW], l[GW], acc[GW * DPT];
    [[unroll]] for (uint g = 0u; g < GW; g++) {
        m[g] = -1.0 / 0.0;
        l[g] = 0.0;
        [[unroll]] for (uint e = 0u; e < DPT; e++) acc[g * DPT + e] = 0.0;
    }

    for (uint j0 = lo; j0 <= hi; j0 += CH) {
        uint n = min(CH, hi - j0 + 1u);
        float vr[DPT * CH];
        [[unroll]] for (uint e = 0u; e < DPT; e++) {
            uint d = min(t + e * WG, p.dv - 1u);
            [[unroll]] for (uint jj = 0u; jj < CH; jj++)
                vr[e * CH + jj] = v[((j0 + min(jj, n - 1u)) * kv_row + kvh) * p.dv + d];
        }
        for (uint jb = gl_SubgroupID * KB; jb < n; jb += gl_NumSubgroups * KB) {
            float dot[GW * KB];
            [[unroll]] for (uint c = 0u; c < GW * KB; c++) dot[c] = 0.0;
            [[unroll]] for (uint e = 0u; e < EPL; e++) {
                uint d = min(lane + e * sgs, p.dh - 1u); // qr is 0 past dh
                [[unroll]] for (uint kb = 0u; kb < KB; kb++) {
                    float kv = k[((j0 + min(jb + kb, n - 1u)) * kv_row + kvh) * p.dh + d];
                    [[unroll]] for (uint g = 0u; g < GW; g++) dot[g * KB + kb] += qr[g * EPL + e] * kv;
                }
            }
            for (uint d = lane + EPL * sgs; d < p.dh; d += sgs) // a subgroup smaller than planned
                [[unroll]] for (uint kb = 0u; kb < KB; kb++) {
                    float kv = k[((j0 + min(jb + kb, n - 1u)) * kv_row + kvh) * p.dh + d];
                    [[unroll]] for (uint g = 0u; g < GW; g++)
                        dot[g * KB + kb] += q[((i * p.heads + h0 + g) * p.dh) + d] * kv;
                }
            [[unroll]] for (uint kb = 0u; kb < KB; kb++)
                [[unroll]] for (uint g = 0u; g < GW; g++) {
                    float s = subgroupAdd(dot[g * KB + kb]) * p.scale;
                    if (subgroupElect() && jb + kb < n) sp[g * CH + jb + kb] = s;
                }
        }
        barrier();
        [[unroll]] for (uint g = 0u; g < GW; g++) {
            float mc = m[g];
            [[unroll]] for (uint jj = 0u; jj < CH; jj++)
                if (jj < n) mc = max(mc, sp[g * CH + jj]);
            float corr = exp(m[g] - mc), sum = 0.0; // corr is 0 on the first chunk (m = -inf)
            [[unroll]] for (uint e = 0u; e < DPT; e++) acc[g * DPT + e] *= corr;
            [[unroll]] for (uint jj = 0u; jj < CH; jj++) {
                if (jj >= n) continue;
                float pj = exp(sp[g * CH + jj] - mc);
                sum += pj;
                [[unroll]] for (uint e = 0u; e < DPT; e++) acc[g * DPT + e] += pj * vr[e * CH + jj];
            }
            l[g] = l[g] * corr + sum;
            m[g] = mc;
        }
        barrier(); // sp is rewritten by the next chunk
    }

    [[unroll]] for (uint g = 0u; g < GW; g++) {
        uint ih = i * p.heads + h0 + g;
        if (SPLIT != 0u) {
            uint pb = (ih * splits + sp_i) * (p.dv + 2u);
            if (t == 0u) {
                part[pb] = m[g];
                part[pb + 1u] = l[g];
            }
            [[unroll]] for (uint e = 0u; e < DPT; e++)
                if (t + e * WG < p.dv) part[pb + 2u + t + e * WG] = acc[g * DPT + e];
            continue;
        }
        float inv = l[g] > 0.0 ? 1.0 / l[g] : 0.0; // no visible key: 0, as the CPU reference
        [[unroll]] for (uint e = 0u; e < DPT; e++)
            if (t + e * WG < p.dv) o[ih * p.dv + t + e * WG] = acc[g * DPT + e] * inv;
    }
}
