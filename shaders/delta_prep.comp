#version 450
// DELTA_RULE's chunked (WY) form, part 1 of 2 (part 2: shaders/delta_chunk.comp; the equations are
// cpu_fallback/cpu_kernels_recurrent.c's): everything within a chunk that does not depend on the
// state, for every (chunk, value head) at once, so that the sequential part 2 is left with the
// state's products only. A workgroup per (chunk group, value head) walks the run's chunks (a
// sequence's rows in runs of L; chunk number n goes to group n % seq_groups) and writes, for each
// row t of the chunk, at order place o = first(s) + t0 + t (shaders/common.glsl) the scratch record
// [(o * hv + h) * (2L + 1)]:
//   W [L]  row t of T diag(beta), T = (I + A)^-1, A[t][i] = beta_t e^(G_t - G_i) (k_t . k_i) (i < t)
//   QK [L] e^(G_t - G_i) (q_t . k_i) for i <= t
//   G      the chunk's cumulative log decay at t
// so that U = W (v - e^G S^T k) solves the chunk's triangular system. Entries past t are not written.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(constant_id = 1) const uint L = 64;   // rows per chunk
layout(constant_id = 2) const uint DK = 128; // key head size

#define DELTA_SPEC_GATE 3
#define DELTA_SPEC_SIG 4
#define DELTA_PART 1
#include "delta.glsl"

const uint KB = 32u; // key columns staged in shared memory at a time

shared float sK[KB * L]; // the chunk's keys, column a - a0 of row i at (a - a0) * L + i (no bank conflicts)
shared float sM[L * L];  // k_t . k_i, then A, then T (in place)
shared float sG[L];      // cumulative log decay
shared float sB[L];      // beta
shared uint sR[L];       // the chunk's rows

uint record(uint o, uint h) { return (o * p.hv + h) * (2u * L + 1u); }

void chunk(uint s, uint t0, uint m, uint h, uint kh) {
    uint tid = gl_LocalInvocationID.x, o0 = rlx_seq_first(s) + t0;
    barrier(); // the previous chunk's readers are done
    if (tid < m) {
        uint r = rlx_seq_row(s, t0 + tid);
        sR[tid] = r;
        sG[tid] = gate_of(r, h);
        sB[tid] = beta_of(r, h);
    }
    for (uint e = tid; e < m * m; e += WG) sM[(e / m) * L + e % m] = 0.0;
    barrier();
    if (tid == 0u) {
        float acc = 0.0;
        for (uint t = 0u; t < m; t++) sG[t] = acc += sG[t];
    }
    // k_t . k_i into sM and q_t . k_i into the QK records (each invocation its own entries), over
    // blocks of KB key columns staged in shared memory
    for (uint a0 = 0u; a0 < DK; a0 += KB) {
        uint nb = min(KB, DK - a0);
        barrier();
        for (uint e = tid; e < nb * m; e += WG) {
            uint a = e / m, i = e % m;
            sK[a * L + i] = k[(sR[i] * p.hk + kh) * DK + a0 + a];
        }
        barrier();
        for (uint e = tid; e < m * m; e += WG) {
            uint t = e / m, i = e % m;
            if (i > t) continue;
            uint qr = (sR[t] * p.hk + kh) * DK + a0;
            float kk = 0.0, qk = 0.0;
            for (uint a = 0u; a < nb; a++) {
                float ki = sK[a * L + i];
                kk += sK[a * L + t] * ki;
                qk += q[qr + a] * ki;
            }
            sM[t * L + i] += kk;
            uint at = record(o0 + t, h) + L + i;
            wy[at] = a0 == 0u ? qk : wy[at] + qk;
        }
    }
    barrier();
    for (uint e = tid; e < m * m; e += WG) {
        uint t = e / m, i = e % m;
        if (i > t) continue;
        float d = exp(sG[t] - sG[i]);
        uint at = record(o0 + t, h) + L + i;
        wy[at] = d * wy[at];
        sM[t * L + i] = i < t ? sB[t] * d * sM[t * L + i] : 0.0;
    }
    // T = (I + A)^-1, unit lower triangular, a row at a time in place over A:
    // T[t][c] = -(A[t][c] + sum_{c<i<t} A[t][i] T[i][c]), each column by its own invocation
    for (uint t = 1u; t < m; t++) {
        barrier();
        float val = 0.0;
        if (tid < t) {
            val = sM[t * L + tid];
            for (uint i = tid + 1u; i < t; i++) val += sM[t * L + i] * sM[i * L + tid];
        }
        barrier();
        if (tid < t) sM[t * L + tid] = -val;
    }
    barrier();
    for (uint e = tid; e < m * m; e += WG) {
        uint t = e / m, i = e % m;
        if (i <= t) wy[record(o0 + t, h) + i] = (i == t ? 1.0 : sM[t * L + i]) * sB[i];
    }
    if (tid < m) wy[record(o0 + tid, h) + 2u * L] = sG[tid];
}

void main() {
    uint gid = group_id(), h = gid % p.hv, cg = gid / p.hv, kh = h % p.hk;
    uint n = 0u;
    for (uint s = 0u; s < rlx.n_seqs; s++) {
        uint count = rlx_seq_count(s);
        for (uint t0 = 0u; t0 < count; t0 += L, n++)
            if (n % p.seq_groups == cg) chunk(s, t0, min(L, count - t0), h, kh);
    }
}
