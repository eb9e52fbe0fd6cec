#version 450
// CAUSAL_CONV (ir/ops.def): y = silu(sum_j w[c, j] u_j + w[c, K-1] x) over each sequence's last
// K-1 inputs u (its earlier rows of the run, else the state: the part at state_offset of its slot,
// [K-1, C], oldest first; zeros for a sequence whose first row is position 0); the state then
// holds its last K-1 inputs. Three forms (PAR):
//  0: decode. Invocation (s, c) walks table row s's rows in row order with the inputs in registers
//     (and zeroes row s's output when s is a padding row).
//  1: prefill, the outputs. Invocation (o, c): the row at place o of the state table's order, its
//     inputs read from x or the state (rows past n_tokens: zeroed); the state is only read.
//  2: prefill, the state after pass 1: invocation (s, c) copies table row s's last K-1 inputs.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

#define MAX_TAPS 16 // K <= MAX_TAPS (runtime/vk_lower_recurrent.c refuses more)

layout(constant_id = 1) const uint PAR = 0;

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
    uint seq_groups;   // PAR 0, 2: workgroups across the table rows (each strides over them)
} p;

float silu_of(float v) { return v / (1.0 + exp(-v)); }

// The input t places before row `at` of table row s (at - t < 0: from the state, whose row
// K-1 + (at - t) it is).
float input_of(uint s, int at, uint base, bool fresh, uint ch) {
    if (at >= 0) return x[rlx_seq_row(s, uint(at)) * p.c + ch];
    return fresh ? 0.0 : st[base + uint(int(p.k) - 1 + at) * p.c];
}

void main() {
    uint gid = group_id(), ch = (gid % p.chan_groups) * WG + gl_LocalInvocationID.x;
    if (ch >= p.c) return;
    uint km1 = p.k - 1u;
    if (PAR == 1u) {
        uint at = gid / p.chan_groups;
        if (at >= rlx.n_tokens) {
            o[at * p.c + ch] = 0.0;
            return;
        }
        uint r = rlx_order(at), s = rlx_seq_of(r), t = at - rlx_seq_first(s);
        uint base = rlx_seq_slot(s) * p.state_floats + p.state_offset + ch;
        bool fresh = rlx_seq_fresh(s);
        float acc = w[ch * p.k + km1] * x[r * p.c + ch];
        for (uint j = 0u; j < km1; j++) acc += w[ch * p.k + j] * input_of(s, int(t) - int(km1) + int(j), base, fresh, ch);
        o[r * p.c + ch] = silu_of(acc);
        return;
    }
    for (uint s = gid / p.chan_groups; s < p.rows; s += p.seq_groups) {
        if (PAR == 0u && s >= rlx.n_tokens) o[s * p.c + ch] = 0.0;
        if (s >= rlx.n_seqs) continue;
        uint base = rlx_seq_slot(s) * p.state_floats + p.state_offset + ch;
        bool fresh = rlx_seq_fresh(s);
        uint n = rlx_seq_count(s);
        if (PAR == 2u) {
            // row j takes the input n - (K-1) + j places in: a later state row, never one written
            for (uint j = 0u; j < km1; j++) st[base + j * p.c] = input_of(s, int(n) - int(km1) + int(j), base, fresh, ch);
            continue;
        }
        float wt[MAX_TAPS], u[MAX_TAPS];
        for (uint j = 0u; j < p.k; j++) wt[j] = w[ch * p.k + j];
        for (uint j = 0u; j < km1; j++) u[j] = fresh ? 0.0 : st[base + j * p.c];
        for (uint t = 0u; t < n; t++) {
            uint r = rlx_seq_row(s, t);
            float xv = x[r * p.c + ch];
            float acc = wt[km1] * xv;
            for (uint j = 0u; j < km1; j++) acc += wt[j] * u[j];
            for (uint j = 0u; j + 1u < km1; j++) u[j] = u[j + 1u];
            if (km1 > 0u) u[km1 - 1u] = xv;
            o[r * p.c + ch] = silu_of(acc);
        }
        for (uint j = 0u; j < km1; j++) st[base + j * p.c] = u[j];
    }
}
