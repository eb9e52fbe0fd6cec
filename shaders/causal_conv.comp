#version 450
// CAUSAL_CONV (ir/ops.def): per channel c of each sequence in the run, walking its rows in row
// order with the last K-1 inputs in registers: y = silu(sum_j w[c, j] u_j + w[c, K-1] x), then
// the state (the part at state_offset of the sequence's slot, [K-1, C], oldest first) holds the
// last K-1 inputs. A sequence whose first row is position 0 starts from zeros. Invocation (s, c):
// table row s (s < n_seqs), and row s's output zeroed when s is a padding row.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

#define MAX_TAPS 16 // K <= MAX_TAPS (runtime/vk_lower_recurrent.c refuses more)

layout(set = 1, binding = 0) readonly buffer X { float x[]; };
layout(set = 1, binding = 1) readonly buffer W { float w[]; };
layout(set = 1, binding = 2) buffer S { float st[]; };
layout(set = 1, binding = 3) writeonly buffer O { float o[]; };

layout(push_constant) uniform Push {
    uint rows;         // static rows of x
    uint c;            // channels
    uint k;            // taps
    uint state_offset; // floats into a slot
    uint state_floats; // floats per slot
    uint chan_groups;  // workgroups across the channels
    uint seq_groups;   // workgroups across the table rows (each strides over them)
} p;

void main() {
    uint gid = group_id(), ch = (gid % p.chan_groups) * WG + gl_LocalInvocationID.x;
    if (ch >= p.c) return;
    uint km1 = p.k - 1u;
    float wt[MAX_TAPS];
    for (uint j = 0u; j < p.k; j++) wt[j] = w[ch * p.k + j];
    for (uint s = gid / p.chan_groups; s < p.rows; s += p.seq_groups) {
        if (s >= rlx.n_tokens) o[s * p.c + ch] = 0.0;
        if (s >= rlx.n_seqs) continue;
        uint base = rlx_seq_slot(s) * p.state_floats + p.state_offset + ch;
        bool fresh = rlx_seq_fresh(s);
        float u[MAX_TAPS];
        for (uint j = 0u; j < km1; j++) u[j] = fresh ? 0.0 : st[base + j * p.c];
        uint n = rlx_seq_count(s);
        for (uint t = 0u; t < n; t++) {
            uint r = rlx_seq_row(s, t);
            float xv = x[r * p.c + ch];
            float acc = wt[km1] * xv;
            for (uint j = 0u; j < km1; j++) acc += wt[j] * u[j];
            for (uint j = 0u; j + 1u < km1; j++) u[j] = u[j + 1u];
            if (km1 > 0u) u[km1 - 1u] = xv;
            o[r * p.c + ch] = acc / (1.0 + exp(-acc));
        }
        for (uint j = 0u; j < km1; j++) st[base + j * p.c] = u[j];
    }
}
