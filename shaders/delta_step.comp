#version 450
// DELTA_RULE step by step (ir/ops.def): the decode form. A workgroup per (table row s, value head
// h, block of CW state columns); its invocation (rg, j) keeps rows rg, rg + RG, .. of column j of
// the head's state S [dk, dv] in registers for the whole run, so each run reads and writes the
// state once. For each row of the sequence, in row order: S <- e^g S; u = beta (v - S^T k);
// S <- S + k u^T; o = S^T q, with the sums over S's rows met in shared memory. A sequence whose
// first row is position 0 starts from zeros; padding rows' outputs are 0. With p.norm (q and k's
// L2_NORMs absorbed, shaders/delta.glsl) each row's q and k are normalised here: the factors apply
// to the products, not to the staged rows, which saves a barrier.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "reduce.glsl"

layout(constant_id = 1) const uint CW = 32; // state columns per workgroup; WG = CW * RG
layout(constant_id = 2) const uint NR = 16; // state rows per invocation: RG * NR >= dk
const uint RG = WG / CW;

#define DELTA_SPEC_GATE 3
#define DELTA_SPEC_SIG 4
#define DELTA_PART 0
#include "delta.glsl"

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
            float kss = 0.0, qss = 0.0;
            for (uint i = tid; i < RG * NR; i += WG) {
                bool ok = i < p.dk;
                float kv = ok ? k_at((r * p.hk + kh) * p.dk + i) : 0.0, qv = ok ? q_at((r * p.hk + kh) * p.dk + i) : 0.0;
                ks[i] = kv;
                qs[i] = qv;
                kss += kv * kv;
                qss += qv * qv;
            }
            // the absorbed L2_NORMs: k's factor applies where ks is read, q's to the output
            float kn = 1.0, qn = 1.0;
            if (p.norm != 0u) {
                kn = 1.0 / sqrt(wg_sum(kss) + p.eps);
                qn = p.q_scale / sqrt(wg_sum(qss) + p.eps);
            }
            barrier();
            float decay = exp(gate_of(r, h)), b = beta_of(r, h);
            float part = 0.0;
            [[unroll]] for (uint n = 0u; n < NR; n++) {
                S[n] *= decay;
                part += S[n] * ks[rg + RG * n];
            }
            part *= kn;
            red[tid] = part;
            barrier();
            if (rg == 0u) {
                float sk = 0.0;
                for (uint x = 0u; x < RG; x++) sk += red[x * CW + j];
                us[j] = colok ? b * (v_of(r, h, col) - sk) : 0.0;
            }
            barrier();
            float u = us[j] * kn;
            part = 0.0;
            [[unroll]] for (uint n = 0u; n < NR; n++) {
                S[n] += ks[rg + RG * n] * u;
                part += S[n] * qs[rg + RG * n];
            }
            red[tid] = part * qn;
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
