#version 450
// ATTENTION (ir/ops.def) for many query rows (prefill): a tiled flash attention in f32. A workgroup
// takes 32 query rows of one head; its two halves of 128 invocations walk alternate blocks of 32
// keys (a split of the key range inside the workgroup: each half keeps its own running max, sums
// and output, merged at the end), so that the longest rows of a causal prefill are two walks of
// half the length. Per block, in each half:
//   1. scores S = Q K^T, 4 rows x 2 keys per invocation: Q from shared memory (staged once, rows
//      padded so that the 8 rows a subgroup reads sit on distinct banks), K straight from the
//      buffer as vec4 (the 8 invocations of a key ask for the same address: one request; each
//      quad of the block is read once per half), then masking (causal: key j is visible to the
//      query at p = n_past + i when j <= p, within the window, below the T keys bound) and
//      scaling into the P block in shared memory;
//   2. softmax statistics: 4 invocations per row, 8 keys each (partial maxima through shared
//      memory, partial sums kept apart until the end): the running max, the rescale factor of what
//      came before, exp(s - max) written back over the scores;
//   3. O = O * rescale + P V, 4 rows x (D / 16) output dims per invocation, V straight from the
//      buffer as vec4.
// No staging of K and V: with the loads issued straight from the loops, the compiler can keep
// several in flight, and the three barriers per block stay the only ones. The loops over the head
// dims and keys are left for the compiler to unroll (unrolled in the source, lavapipe spent most
// of a minute compiling the variants).
// Blocks wholly outside the causal window of the 32 rows are skipped; keys past the last visible
// one read as 0 (unwritten cache rows may hold any bits). GQA: head h reads kv head h / (H / H_kv).
// Padding rows (and rows that see no key) are 0.
// Spec D: the head sizes Dh, Dv rounded up to a multiple of 64 (at most 256); VEC: Dh and Dv are
// multiples of 4 (rows of q, k, v and out start 16-byte aligned: vec4 access); WG 256.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(constant_id = 1) const uint D = 128;
layout(constant_id = 2) const uint VEC = 1;

layout(set = 1, binding = 0) readonly buffer Q { float q[]; };
layout(set = 1, binding = 0) readonly buffer Q4 { vec4 q4[]; };
layout(set = 1, binding = 1) readonly buffer K { float k[]; };
layout(set = 1, binding = 1) readonly buffer K4 { vec4 k4[]; };
layout(set = 1, binding = 2) readonly buffer V { float v[]; };
layout(set = 1, binding = 2) readonly buffer V4 { vec4 v4[]; };
layout(set = 1, binding = 3) writeonly buffer O { float o[]; };

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
} p;

#define BQ 32u   // query rows per workgroup
#define BKV 32u  // keys per block
#define HALF 128u
const uint NQ = D / 64u;     // vec4 groups of output dims per invocation
const uint QSTR = D + 4u;    // Q row stride: 4 banks apart
const uint PSTR = BQ + 8u;   // P key stride: the 4 keys a subgroup writes sit 8 banks apart
const uint QS = 0u;          // Q [BQ][QSTR]; at the end the second half's output
const uint PS = QS + BQ * QSTR; // P blocks [2][BKV][PSTR], key-major
const uint PM = PS + 2u * BKV * PSTR; // partial maxima [2][4][BQ]
const uint CR = PM + 8u * BQ;        // rescale factors [2][BQ]
const uint LS = CR + 2u * BQ;        // at the end: partial sums [2][4][BQ]
const uint MS = LS + 8u * BQ;        //             running maxima [2][BQ]
shared vec4 sm4[(MS + 2u * BQ) / 4u];

float sm(uint i) { return sm4[i >> 2][i & 3u]; }
void sm_set(uint i, float x) { sm4[i >> 2][i & 3u] = x; }

uint h, kvh, hi;

// Dims d0 .. d0 + 3 of a row starting at element `base` of a buffer of rows of n floats (n % 4 == 0
// under VEC); zeros past n. vec4 views start at the same 16-byte aligned binding offset.
vec4 q_quad(uint base, uint d0) {
    if (VEC != 0u) return d0 < p.dh ? q4[(base + d0) >> 2] : vec4(0.0);
    vec4 r;
    [[unroll]] for (uint c = 0u; c < 4u; c++) r[c] = d0 + c < p.dh ? q[base + d0 + c] : 0.0;
    return r;
}

// Key j's dims d0 .. d0 + 3; zeros past the last visible key.
vec4 k_quad(uint j, uint d0) {
    if (j > hi) return vec4(0.0);
    uint base = (j * p.kv_heads + kvh) * p.dh;
    if (VEC != 0u) return d0 < p.dh ? k4[(base + d0) >> 2] : vec4(0.0);
    vec4 r;
    [[unroll]] for (uint c = 0u; c < 4u; c++) r[c] = d0 + c < p.dh ? k[base + d0 + c] : 0.0;
    return r;
}

vec4 v_quad(uint j, uint d0) {
    if (j > hi) return vec4(0.0);
    uint base = (j * p.kv_heads + kvh) * p.dv;
    if (VEC != 0u) return d0 < p.dv ? v4[(base + d0) >> 2] : vec4(0.0);
    vec4 r;
    [[unroll]] for (uint c = 0u; c < 4u; c++) r[c] = d0 + c < p.dv ? v[base + d0 + c] : 0.0;
    return r;
}

void store_out(uint row, uint d0, vec4 x) {
    [[unroll]] for (uint c = 0u; c < 4u; c++)
        if (d0 + c < p.dv) o[(row * p.heads + h) * p.dv + d0 + c] = x[c];
}

void main() {
    uint t = gl_LocalInvocationID.x, half_ = t / HALF, u = t % HALF;
    uint gid = group_id(), blocks = (p.rows + BQ - 1u) / BQ;
    h = gid % p.heads;
    uint i0 = (blocks - 1u - gid / p.heads) * BQ; // the longest rows first
    uint valid = valid_rows(p.rows, p.tok);
    if (i0 >= valid || p.t == 0u) {
        for (uint e = t; e < BQ * p.dv; e += WG) {
            uint i = i0 + e / p.dv;
            if (i < p.rows) o[(i * p.heads + h) * p.dv + e % p.dv] = 0.0;
        }
        return;
    }
    kvh = h / (p.heads / p.kv_heads);
    uint last = min(i0 + BQ, valid) - 1u;
    uint pos0 = rlx.n_past + i0, pos_last = rlx.n_past + last;
    hi = min(pos_last, p.t - 1u);
    uint lo = (p.window > 0u && pos0 + 1u > p.window) ? pos0 + 1u - p.window : 0u;
    uint first = lo / BKV * BKV, n_blocks = (hi - first) / BKV + 1u;

    // Q rows i0 .. i0 + 31, zeros past the valid rows and past Dh
    for (uint e = t; e < BQ * (D / 4u); e += WG) {
        uint r = e / (D / 4u), d0 = (e % (D / 4u)) * 4u;
        vec4 x = i0 + r < valid ? q_quad(((i0 + r) * p.heads + h) * p.dh, d0) : vec4(0.0);
        sm4[(QS + r * QSTR + d0) >> 2] = x;
    }

    // phase 1: rows rg + 8 i, keys kg and kg + 16; phase 2: row sr, keys 8 sp ..; phase 3: rows
    // 4 rg .. + 3, dims 64 g + 4 dc ..
    uint rg = u % 8u, kg = u / 8u, sr = u % BQ, sp = u / BQ, dc = u / 8u;
    uint ps = PS + half_ * BKV * PSTR;
    float m = -1.0 / 0.0, l = 0.0; // row sr: the running max, the sum over keys 8 sp .. of each block
    vec4 acc[4][NQ];
    [[unroll]] for (uint i = 0u; i < 4u; i++)
        [[unroll]] for (uint g = 0u; g < NQ; g++) acc[i][g] = vec4(0.0);
    uint iters = (n_blocks + 1u) / 2u;
    for (uint it = 0u; it < iters; it++) {
        uint j0 = first + (2u * it + half_) * BKV;
        bool live = j0 <= hi; // uniform in each half
        barrier(); // Q staged; the last block's P and rescale factors read
        // 1. scores
        if (live) {
            float s[4][2] = {{0.0, 0.0}, {0.0, 0.0}, {0.0, 0.0}, {0.0, 0.0}};
            for (uint d0 = 0u; d0 < p.dh; d0 += 4u) {
                vec4 ka = k_quad(j0 + kg, d0), kb = k_quad(j0 + kg + 16u, d0);
                [[unroll]] for (uint i = 0u; i < 4u; i++) {
                    vec4 qv = sm4[(QS + (rg + 8u * i) * QSTR + d0) >> 2];
                    [[unroll]] for (uint c = 0u; c < 4u; c++) { // one fma chain per score
                        s[i][0] += qv[c] * ka[c];
                        s[i][1] += qv[c] * kb[c];
                    }
                }
            }
            [[unroll]] for (uint i = 0u; i < 4u; i++) {
                uint row = rg + 8u * i, pos = rlx.n_past + i0 + row;
                [[unroll]] for (uint c = 0u; c < 2u; c++) {
                    uint j = j0 + kg + 16u * c;
                    bool seen = i0 + row < valid && j <= min(pos, p.t - 1u) && (p.window == 0u || pos - j < p.window);
                    sm_set(ps + (kg + 16u * c) * PSTR + row, seen ? s[i][c] * p.scale : -1.0 / 0.0);
                }
            }
        }
        barrier();
        // 2. softmax statistics
        float part = -1.0 / 0.0;
        if (live) {
            [[unroll]] for (uint j = 0u; j < 8u; j++) part = max(part, sm(ps + (8u * sp + j) * PSTR + sr));
            sm_set(PM + (half_ * 4u + sp) * BQ + sr, part);
        }
        barrier();
        if (live) {
            float mx = m;
            [[unroll]] for (uint c = 0u; c < 4u; c++) mx = max(mx, sm(PM + (half_ * 4u + c) * BQ + sr));
            float corr = mx == -1.0 / 0.0 ? 1.0 : exp(m - mx), sum = 0.0;
            [[unroll]] for (uint j = 0u; j < 8u; j++) {
                uint at = ps + (8u * sp + j) * PSTR + sr;
                float e = mx == -1.0 / 0.0 ? 0.0 : exp(sm(at) - mx);
                sm_set(at, e);
                sum += e;
            }
            l = l * corr + sum;
            m = mx;
            if (sp == 0u) sm_set(CR + half_ * BQ + sr, corr);
        }
        barrier();
        // 3. O = O * corr + P V
        if (live) {
            vec4 corr = sm4[(CR + half_ * BQ + rg * 4u) >> 2];
            [[unroll]] for (uint i = 0u; i < 4u; i++)
                [[unroll]] for (uint g = 0u; g < NQ; g++) acc[i][g] *= corr[i];
            for (uint j = 0u; j < BKV; j++) {
                vec4 pv = sm4[(ps + j * PSTR + rg * 4u) >> 2];
                [[unroll]] for (uint g = 0u; g < NQ; g++) {
                    vec4 vv = v_quad(j0 + j, g * 64u + dc * 4u);
                    [[unroll]] for (uint i = 0u; i < 4u; i++) acc[i][g] += pv[i] * vv;
                }
            }
        }
    }

    // merge the halves: the second one's output over Q, both halves' maxima and partial sums
    barrier();
    sm_set(LS + (half_ * 4u + sp) * BQ + sr, l);
    if (sp == 0u) sm_set(MS + half_ * BQ + sr, m);
    if (half_ == 1u)
        [[unroll]] for (uint i = 0u; i < 4u; i++)
            [[unroll]] for (uint g = 0u; g < NQ; g++) sm4[(QS + (rg * 4u + i) * QSTR + g * 64u + dc * 4u) >> 2] = acc[i][g];
    barrier();
    if (half_ == 1u) return;
    [[unroll]] for (uint i = 0u; i < 4u; i++) {
        uint r = rg * 4u + i, row = i0 + r;
        if (row >= p.rows) continue;
        float m0 = sm(MS + r), m1 = sm(MS + BQ + r), mx = max(m0, m1), l0 = 0.0, l1 = 0.0;
        [[unroll]] for (uint c = 0u; c < 4u; c++) {
            l0 += sm(LS + c * BQ + r);
            l1 += sm(LS + (4u + c) * BQ + r);
        }
        float f0 = m0 == -1.0 / 0.0 ? 0.0 : exp(m0 - mx), f1 = m1 == -1.0 / 0.0 ? 0.0 : exp(m1 - mx);
        float sum = l0 * f0 + l1 * f1, inv = row < valid && sum > 0.0 ? 1.0 / sum : 0.0;
        [[unroll]] for (uint g = 0u; g < NQ; g++) {
            uint d0 = g * 64u + dc * 4u;
            vec4 other = sm4[(QS + r * QSTR + d0) >> 2];
            store_out(row, d0, (acc[i][g] * f0 + other * f1) * inv);
        }
    }
}
