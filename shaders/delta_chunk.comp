#version 450
// DELTA_RULE in the chunked (WY) form (ir/ops.def; the equations are cpu_fallback/
// cpu_kernels_recurrent.c's): the prefill form. A workgroup per (table row s, value head h, block
// of CW state columns): the columns of S are independent given the keys, so each workgroup keeps
// its block S [DK, CW] in shared memory for the whole run (read and written once) and walks the
// sequence's rows in chunks of up to L: the chunk's decays G (cumulative), the strictly lower
// A[t][i] = beta_t e^(G_t - G_i) (k_t . k_i), the right-hand sides beta_t (v_t - e^(G_t) S^T k_t),
// solved by forward substitution into U (each column by its own invocation), then
// o_t = e^(G_t) S^T q_t + sum_{i<=t} e^(G_t - G_i) (q_t . k_i) U_i and
// S <- e^(G_L) S + sum_t e^(G_L - G_t) k_t U_t^T. A sequence whose first row is position 0 starts
// from zeros; padding rows' outputs are 0.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(constant_id = 1) const uint CW = 32; // state columns per workgroup
layout(constant_id = 2) const uint L = 64;  // rows per chunk
layout(constant_id = 3) const uint DK = 128; // key head size

#define DELTA_SPEC_GATE 4
#define DELTA_SPEC_SIG 5
#include "delta.glsl"

shared float sS[DK * CW]; // the state block, row a, column j at a * CW + j
shared float sM[L * L];   // A, then e^(G_t - G_i) (q_t . k_i)
shared float sU[L * CW];  // right-hand sides, then U
shared float sG[L];       // cumulative decay
shared float sB[L];       // beta
shared float sE[L];       // e^(G_last - G_t)
shared uint sR[L];        // the chunk's rows

float dot_rows(uint qrow, uint krow, bool from_q) {
    float acc = 0.0;
    for (uint a = 0u; a < DK; a++) acc += (from_q ? q[qrow + a] : k[qrow + a]) * k[krow + a];
    return acc;
}

void main() {
    uint gid = group_id(), tid = gl_LocalInvocationID.x;
    uint cb = gid % p.col_blocks, h = (gid / p.col_blocks) % p.hv, kh = h % p.hk;
    uint c0 = cb * CW;
    for (uint s = gid / (p.col_blocks * p.hv); s < p.rows; s += p.seq_groups) {
        if (s >= rlx.n_tokens)
            for (uint j = tid; j < CW; j += WG)
                if (c0 + j < p.dv) o[(s * p.hv + h) * p.dv + c0 + j] = 0.0;
        if (s >= rlx.n_seqs) continue;
        uint base = rlx_seq_slot(s) * p.state_floats + p.state_offset + h * DK * p.dv + c0;
        bool fresh = rlx_seq_fresh(s);
        barrier(); // the previous sequence's last readers of sS are done
        for (uint e = tid; e < DK * CW; e += WG) {
            uint a = e / CW, j = e % CW;
            sS[e] = (fresh || c0 + j >= p.dv) ? 0.0 : st[base + a * p.dv + j];
        }
        uint count = rlx_seq_count(s);
        for (uint t0 = 0u; t0 < count; t0 += L) {
            uint m = min(L, count - t0);
            barrier();
            if (tid < m) {
                uint r = rlx_seq_row(s, t0 + tid);
                sR[tid] = r;
                sG[tid] = gate_of(r, h);
                sB[tid] = beta_of(r, h);
            }
            barrier();
            if (tid == 0u) {
                float acc = 0.0;
                for (uint t = 0u; t < m; t++) sG[t] = acc += sG[t];
                for (uint t = 0u; t < m; t++) sE[t] = exp(sG[m - 1u] - sG[t]);
            }
            barrier();
            for (uint e = tid; e < m * m; e += WG) {
                uint t = e / m, i = e % m;
                float val = 0.0;
                if (i < t)
                    val = sB[t] * exp(sG[t] - sG[i]) *
                          dot_rows((sR[t] * p.hk + kh) * DK, (sR[i] * p.hk + kh) * DK, false);
                sM[t * L + i] = val;
            }
            for (uint e = tid; e < m * CW; e += WG) {
                uint t = e / CW, j = e % CW, kr = (sR[t] * p.hk + kh) * DK;
                float acc = 0.0;
                for (uint a = 0u; a < DK; a++) acc += k[kr + a] * sS[a * CW + j];
                float vv = c0 + j < p.dv ? v_of(sR[t], h, c0 + j) : 0.0;
                sU[t * CW + j] = sB[t] * (vv - exp(sG[t]) * acc);
            }
            barrier();
            for (uint j = tid; j < CW; j += WG)
                for (uint t = 1u; t < m; t++) {
                    float acc = sU[t * CW + j];
                    for (uint i = 0u; i < t; i++) acc -= sM[t * L + i] * sU[i * CW + j];
                    sU[t * CW + j] = acc;
                }
            barrier();
            for (uint e = tid; e < m * m; e += WG) {
                uint t = e / m, i = e % m;
                float val = 0.0;
                if (i <= t)
                    val = exp(sG[t] - sG[i]) * dot_rows((sR[t] * p.hk + kh) * DK, (sR[i] * p.hk + kh) * DK, true);
                sM[t * L + i] = val;
            }
            barrier();
            for (uint e = tid; e < m * CW; e += WG) {
                uint t = e / CW, j = e % CW, qr = (sR[t] * p.hk + kh) * DK;
                float acc = 0.0;
                for (uint a = 0u; a < DK; a++) acc += q[qr + a] * sS[a * CW + j];
                acc *= exp(sG[t]);
                for (uint i = 0u; i <= t; i++) acc += sM[t * L + i] * sU[i * CW + j];
                if (c0 + j < p.dv) o[(sR[t] * p.hv + h) * p.dv + c0 + j] = acc;
            }
            barrier();
            float eL = exp(sG[m - 1u]);
            for (uint e = tid; e < DK * CW; e += WG) {
                uint a = e / CW, j = e % CW;
                float acc = eL * sS[e];
                for (uint t = 0u; t < m; t++) acc += sE[t] * k[(sR[t] * p.hk + kh) * DK + a] * sU[t * CW + j];
                sS[e] = acc;
            }
        }
        barrier();
        for (uint e = tid; e < DK * CW; e += WG) {
            uint a = e / CW, j = e % CW;
            if (c0 + j < p.dv) st[base + a * p.dv + j] = sS[e];
        }
    }
}
