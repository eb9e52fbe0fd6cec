// What the DELTA_RULE kernels share: its bindings and push constants, and the operands a fused
// dispatch computes itself (runtime/vk_fuse.c fuse_delta): g from DELTA_GATE's inputs (GATE:
// A[h] softplus(a + dt_bias[h])), beta from SIGMOID's input (SIG), and v read through a SLICE of a
// wider row (v_len != 0: element f of v is x[f / v_len][v_begin + f % v_len]).
// The includer defines DELTA_PART: 0 every operand (delta_step.comp), 1 the state-free ones and the
// records WY (delta_prep.comp), 2 the state's ones and WY (delta_chunk.comp); bindings are numbered
// densely in each (shaders/kernels.def). Parts 0 and 1 define DELTA_SPEC_GATE and DELTA_SPEC_SIG,
// the ids after their own spec constants.
#if DELTA_PART != 2
layout(constant_id = DELTA_SPEC_GATE) const uint GATE = 0;
layout(constant_id = DELTA_SPEC_SIG) const uint SIG = 0;
#endif

layout(set = 1, binding = 0) readonly buffer Q { float q[]; };
layout(set = 1, binding = 1) readonly buffer K { float k[]; };
#if DELTA_PART == 0
layout(set = 1, binding = 2) readonly buffer V { float v[]; };
layout(set = 1, binding = 3) readonly buffer G { float g[]; };
layout(set = 1, binding = 4) readonly buffer B { float beta[]; };
layout(set = 1, binding = 5) buffer S { float st[]; };
layout(set = 1, binding = 6) writeonly buffer O { float o[]; };
layout(set = 1, binding = 7) readonly buffer GA { float gate_a[]; };    // GATE: A
layout(set = 1, binding = 8) readonly buffer GB { float gate_bias[]; }; // GATE: dt_bias
#elif DELTA_PART == 1
layout(set = 1, binding = 2) readonly buffer G { float g[]; };
layout(set = 1, binding = 3) readonly buffer B { float beta[]; };
layout(set = 1, binding = 4) readonly buffer GA { float gate_a[]; };
layout(set = 1, binding = 5) readonly buffer GB { float gate_bias[]; };
layout(set = 1, binding = 6) buffer WY { float wy[]; };
#else
layout(set = 1, binding = 2) readonly buffer V { float v[]; };
layout(set = 1, binding = 3) buffer S { float st[]; };
layout(set = 1, binding = 4) writeonly buffer O { float o[]; };
layout(set = 1, binding = 5) readonly buffer WY { float wy[]; };
#endif

layout(push_constant) uniform Push {
    uint rows, hk, hv, dk, dv;
    uint state_offset; // floats into a slot (the head-0 state)
    uint state_floats; // floats per slot
    uint col_blocks;   // workgroups across a head's columns
    uint seq_groups;   // workgroups across the table rows (each strides over them)
    uint v_len, v_in_cols, v_begin;
    // delta_step.comp with q and k's L2_NORMs (and q's SCALE) absorbed (runtime/vk_fuse.c
    // fuse_delta): norm != 0, q and k read through SLICEs as v is (q_len, k_len != 0), each row
    // normalised by 1 / sqrt(sum(x^2) + eps), q's also times q_scale
    uint q_len, q_in_cols, q_begin, k_len, k_in_cols, k_begin;
    float eps, q_scale;
    uint norm;
} p;

#if DELTA_PART != 2
float softplus(float x) { return max(x, 0.0) + log(1.0 + exp(-abs(x))); }

float gate_of(uint r, uint h) {
    float x = g[r * p.hv + h];
    return GATE != 0u ? gate_a[h] * softplus(x + gate_bias[h]) : x;
}

float beta_of(uint r, uint h) {
    float x = beta[r * p.hv + h];
    return SIG != 0u ? 1.0 / (1.0 + exp(-x)) : x;
}
#endif

#if DELTA_PART == 0
// Element f of q, k as DELTA_RULE reads them (before the norm, when it absorbed one).
float q_at(uint f) { return q[p.q_len == 0u ? f : (f / p.q_len) * p.q_in_cols + p.q_begin + f % p.q_len]; }
float k_at(uint f) { return k[p.k_len == 0u ? f : (f / p.k_len) * p.k_in_cols + p.k_begin + f % p.k_len]; }
#endif

#if DELTA_PART != 1
// v[r, h, col]
float v_of(uint r, uint h, uint col) {
    uint f = (r * p.hv + h) * p.dv + col;
    return v[p.v_len == 0u ? f : (f / p.v_len) * p.v_in_cols + p.v_begin + f % p.v_len];
}
#endif
