#version 450
// DELTA_RULE step by step (ir/ops.def): the decode form. A workgroup per (table row s, value head
// h, block of CW state columns); its invocation (rg, j) keeps rows rg, rg + RG, .. of column j of
// the head's state S [dk, dv] in registers for the whole run, so each run reads and writes the
// state once. For each row of the sequence, in row order: S <- e^g S; u = beta (v - S^T k);
// S <- S + k u^T; o = S^T q, with the sums over S's rows met in shared memory. A sequence whose
// first row is position 0 starts from zeros; padding rows' outputs are 0.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(constant_id = 1) const uint CW = 32; // state columns per workgroup; WG = CW * RG
layout(constant_id = 2) const uint NR = 16; // state rows per invocation: RG * NR >= dk
const uint RG = WG / CW;

layout(set = 1, binding = 0) readonly buffer Q { float q[]; };
layout(set = 1, binding = 1) readonly buffer K { float k[]; };
layout(set = 1, binding = 2) readonly buffer V { float v[]; };
layout(set = 1, binding = 3) readonly buffer G { float g[]; };
layout(set = 1, binding = 4) readonly buffer B { float beta[]; };
layout(set = 1, binding = 5) buffer S { float st[]; };
layout(set = 1, binding = 6) writeonly buffer O { float o[]; };

layout(push_constant) uniform Push {
    uint rows, hk, hv, dk, dv;
    uint state_offset; // floats into a slot (the head-0 state)
    uint state_floats; // floats per slot
    uint col_blocks;   // workgroups across a head's columns
    uint seq_groups;   // workgroups across the table rows (each strides over them)
} p;

shared float ks[RG * NR];
shared float qs[RG * NR];
shared float red[WG];
shared float us[CW];

void main() {
    uint gid = group_id(), tid = gl_LocalInvocationID.x;
    uint cb = gid % p.col_blocks, h = (gid / p.col_blocks) % p.hv, kh = h % p.hk;
    uint j = tid % CW, rg = tid / CW, col = cb * CW + j;
    bool colok = col < p.dv;
    for (uint s = gid / (p.col_blocks * p.hv); s < p.rows; s += p.seq_groups) {
        if (s >= rlx.n_tokens && colok) o[(s * p.hv + h) * p.dv + col] = 0.0;
        if (s >= rlx.n_seqs) continue;
        uint base = rlx_seq_slot(s) * p.state_floats + p.state_offset + h * p.dk * p.dv + col;
        bool fresh = rlx_seq_fresh(s);
        float S[NR];
        [[unroll]] for (uint n = 0u; n < NR; n++) {
            uint i = rg + RG * n;
            S[n] = (fresh || !colok || i >= p.dk) ? 0.0 : st[base + i * p.dv];
        }
        uint count = rlx_seq_count(s);
        for (uint t = 0u; t < count; t++) {
            uint r = rlx_seq_row(s, t);
            barrier(); // the previous row's readers of ks, qs, red are done
            for (uint i = tid; i < RG * NR; i += WG) {
                bool ok = i < p.dk;
                ks[i] = ok ? k[(r * p.hk + kh) * p.dk + i] : 0.0;
                qs[i] = ok ? q[(r * p.hk + kh) * p.dk + i] : 0.0;
            }
            barrier();
            float decay = exp(g[r * p.hv + h]), b = beta[r * p.hv + h];
            float part = 0.0;
            [[unroll]] for (uint n = 0u; n < NR; n++) {
                S[n] *= decay;
                part += S[n] * ks[rg + RG * n];
            }
            red[tid] = part;
            barrier();
            if (rg == 0u) {
                float sk = 0.0;
                for (uint x = 0u; x < RG; x++) sk += red[x * CW + j];
                us[j] = colok ? b * (v[(r * p.hv + h) * p.dv + col] - sk) : 0.0;
            }
            barrier();
            float u = us[j];
            part = 0.0;
            [[unroll]] for (uint n = 0u; n < NR; n++) {
                S[n] += ks[rg + RG * n] * u;
                part += S[n] * qs[rg + RG * n];
            }
            red[tid] = part;
            barrier();
            if (rg == 0u && colok) {
                float acc = 0.0;
                for (uint x = 0u; x < RG; x++) acc += red[x * CW + j];
                o[(r * p.hv + h) * p.dv + col] = acc;
            }
        }
        [[unroll]] for (uint n = 0u; n < NR; n++) {
            uint i = rg + RG * n;
            if (colok && i < p.dk) st[base + i * p.dv] = S[n];
        }
    }
}
