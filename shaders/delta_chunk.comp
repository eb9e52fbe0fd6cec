#version 450
// DELTA_RULE's chunked (WY) form, part 2 of 2 (ir/ops.def; the equations are cpu_fallback/
// cpu_kernels_recurrent.c's): the prefill form. Part 1 (shaders/delta_prep.comp) has left, per
// chunk row t, W = (I + A)^-1 diag(beta), the decayed q_t . k_i and the cumulative decay G_t in the
// scratch records; what remains depends on the state and runs chunk after chunk. A workgroup per
// (table row s, value head h, block of CW state columns): the columns of S are independent given
// the keys, so each workgroup keeps its block S [DK, CW] in shared memory for the whole run (read
// and written once) and per chunk computes X_t = v_t - e^(G_t) S^T k_t and P_t = e^(G_t) S^T q_t,
// then U = W X, o_t = P_t + sum_{i<=t} QK[t][i] U_i and S <- e^(G_L) S + sum_t e^(G_L - G_t) k_t U_t^T,
// all small products from shared memory. A sequence whose first row is position 0 starts from
// zeros; padding rows' outputs are 0.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(constant_id = 1) const uint CW = 16; // state columns per workgroup
layout(constant_id = 2) const uint L = 64;  // rows per chunk
layout(constant_id = 3) const uint DK = 128; // key head size

#define DELTA_PART 2
#include "delta.glsl"

shared float sS[DK * CW]; // the state block, row a, column j at a * CW + j
shared float sX[L * CW];  // v - e^G S^T k
shared float sP[L * CW];  // e^G S^T q
shared float sU[L * CW];  // U = W X
shared float sG[L];       // cumulative decay
shared float sE[L];       // e^(G_last - G_t)
shared uint sR[L];        // the chunk's rows

uint record(uint o, uint h) { return (o * p.hv + h) * (2u * L + 1u); }

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
        uint count = rlx_seq_count(s), first = rlx_seq_first(s);
        for (uint t0 = 0u; t0 < count; t0 += L) {
            uint m = min(L, count - t0);
            barrier();
            if (tid < m) {
                sR[tid] = rlx_seq_row(s, t0 + tid);
                sG[tid] = wy[record(first + t0 + tid, h) + 2u * L];
            }
            barrier();
            if (tid < m) sE[tid] = exp(sG[m - 1u] - sG[tid]);
            for (uint e = tid; e < m * CW; e += WG) {
                uint t = e / CW, j = e % CW, row = (sR[t] * p.hk + kh) * DK;
                float ka = 0.0, qa = 0.0;
                for (uint a = 0u; a < DK; a++) {
                    float sv = sS[a * CW + j];
                    ka += k[row + a] * sv;
                    qa += q[row + a] * sv;
                }
                float eg = exp(sG[t]), vv = c0 + j < p.dv ? v_of(sR[t], h, c0 + j) : 0.0;
                sX[e] = vv - eg * ka;
                sP[e] = eg * qa;
            }
            barrier();
            for (uint e = tid; e < m * CW; e += WG) {
                uint t = e / CW, j = e % CW, w = record(first + t0 + t, h);
                float acc = 0.0;
                for (uint i = 0u; i <= t; i++) acc += wy[w + i] * sX[i * CW + j];
                sU[e] = acc;
            }
            barrier();
            for (uint e = tid; e < m * CW; e += WG) {
                uint t = e / CW, j = e % CW, w = record(first + t0 + t, h) + L;
                float acc = sP[e];
                for (uint i = 0u; i <= t; i++) acc += wy[w + i] * sU[i * CW + j];
                if (c0 + j < p.dv) o[(sR[t] * p.hv + h) * p.dv + c0 + j] = acc;
            }
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
