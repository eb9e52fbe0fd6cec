#version 450
// ATTENTION (ir/ops.def): one workgroup per (query row i, head h[, key split s]). Query i sits at
// p = n_past + i and sees keys j in [lo, p] (lo from the sliding window), clamped to the T keys
// bound. Keys are taken WG at a time with an online softmax (running max and sum rescaled per
// chunk), so any T runs in fixed shared memory. GQA: head h reads kv head h / (H / H_kv). Padding
// rows are 0.
// SPLIT (long contexts, few query rows): the visible keys are cut into `splits` ranges, one
// workgroup each, which write their unnormalised partial (max, sum, acc[Dv]) for attn_combine.comp.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "reduce.glsl"

layout(constant_id = 1) const uint MAXD = 512; // largest head size (Dh and Dv)
layout(constant_id = 2) const uint SPLIT = 0;

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

shared float sq[MAXD];
shared float sacc[MAXD];
shared float sp[WG];

void main() {
    uint gid = group_id(), splits = SPLIT != 0u ? p.splits : 1u;
    uint sp_i = gid % splits, ih = gid / splits;
    uint i = ih / p.heads, h = ih % p.heads, t = gl_LocalInvocationID.x;
    if (i >= p.rows) return;
    uint obase = (i * p.heads + h) * p.dv;
    if (i >= valid_rows(p.rows, p.tok) || p.t == 0u) {
        if (SPLIT == 0u)
            for (uint d = t; d < p.dv; d += WG) o[obase + d] = 0.0;
        return; // split partials of padding rows are never combined
    }
    uint pos = rlx.n_past + i;
    uint hi = min(pos, p.t - 1u);
    uint lo = (p.window > 0u && pos + 1u > p.window) ? pos + 1u - p.window : 0u;
    if (SPLIT != 0u) { // this workgroup's share of [lo, hi]; may be empty
        uint per = (hi - lo + splits) / splits, first = lo + sp_i * per;
        hi = min(hi, first + per - 1u);
        lo = first;
    }
    uint kvh = h / (p.heads / p.kv_heads);
    uint qbase = (i * p.heads + h) * p.dh;
    for (uint d = t; d < p.dh; d += WG) sq[d] = q[qbase + d];
    for (uint d = t; d < p.dv; d += WG) sacc[d] = 0.0;
    barrier();
    float m = -1.0 / 0.0, l = 0.0;
    for (uint j0 = lo; j0 <= hi; j0 += WG) {
        uint j = j0 + t;
        float s = -1.0 / 0.0;
        if (j <= hi) {
            uint kb = (j * p.kv_heads + kvh) * p.dh;
            float acc = 0.0;
            for (uint d = 0u; d < p.dh; d++) acc += sq[d] * k[kb + d];
            s = acc * p.scale;
        }
        float m_new = max(m, wg_max(s));
        float corr = exp(m - m_new);
        float pj = j <= hi ? exp(s - m_new) : 0.0;
        sp[t] = pj;
        l = l * corr + wg_sum(pj); // wg_sum's barriers also publish sp
        uint n = min(WG, hi - j0 + 1u);
        for (uint d = t; d < p.dv; d += WG) {
            float acc = sacc[d] * corr;
            for (uint jj = 0u; jj < n; jj++) acc += sp[jj] * v[((j0 + jj) * p.kv_heads + kvh) * p.dv + d];
            sacc[d] = acc;
        }
        barrier();
        m = m_new;
    }
    if (SPLIT != 0u) {
        uint pb = (ih * splits + sp_i) * (p.dv + 2u);
        if (t == 0u) {
            part[pb] = m;
            part[pb + 1u] = l;
        }
        for (uint d = t; d < p.dv; d += WG) part[pb + 2u + d] = sacc[d];
        return;
    }
    float inv = 1.0 / l;
    for (uint d = t; d < p.dv; d += WG) o[obase + d] = sacc[d] * inv;
}
