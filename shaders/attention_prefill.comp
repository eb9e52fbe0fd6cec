#version 450
// ATTENTION (ir/ops.def) for many query rows (prefill): a tiled flash attention. A workgroup takes 64
// query rows of one head and walks the keys they can see in blocks of 32 with an online softmax:
//   1. scores S = Q K^T of the block, 4 rows x 2 keys per invocation, the head dimension staged in
//      chunks of 32 (Q and K transposed in shared memory, so each step reads a vec4 of Q);
//   2. masking (causal: key j visible to the query at p = n_past + i when j <= p, within the
//      window, below the T keys bound), then per row the running max, the rescale factor of what
//      came before and the row sum, one invocation per row, while the others stage the V block;
//   3. O = O * rescale + P V, 4 rows x (D / 16) output dims per invocation from shared memory.
// With spec PF (GPUs), the global loads of the next Q/K chunk (or of the V block) are issued before
// the multiplies of the current one, so that their latency overlaps the math even with one
// workgroup per SM. CPU devices (lavapipe) load right before storing: there every value live
// across a barrier is saved and restored by a coroutine switch, which costs more than it hides.
// Blocks wholly outside the causal window of the 64 rows are skipped. GQA: head h reads kv head
// h / (H / H_kv). Padding rows (and rows that see no key) are 0. Everything is f32.
// Spec D: the head sizes Dh, Dv rounded up to a multiple of 64 (at most 256); PF: prefetch; WG 256.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(constant_id = 1) const uint D = 128;
layout(constant_id = 2) const uint PF = 1;

layout(set = 1, binding = 0) readonly buffer Q { float q[]; };
layout(set = 1, binding = 1) readonly buffer K { float k[]; };
layout(set = 1, binding = 2) readonly buffer V { float v[]; };
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

#define BQ 64u  // query rows per workgroup
#define BKV 32u // keys per block
#define DC 32u  // head dims per staged Q/K chunk
const uint NG = D / 64u;         // vec4 groups of output dims per invocation
const uint VSTR = D + 8u;        // V row stride: 8 apart keeps the 4 keys a subgroup stages on distinct banks
const uint QS = 0u;              // phase 1: Q chunk [DC][BQ]
const uint KS = DC * BQ;         //          K chunk [DC][BKV]
const uint VS = 0u;              // phase 3: V block [BKV][VSTR], over the Q/K chunks
const uint A_SIZE = BKV * VSTR > KS + DC * BKV ? BKV * VSTR : KS + DC * BKV;
const uint PS = A_SIZE;          // P block, key-major [BKV][BQ]
const uint CR = PS + BKV * BQ;   // per row: the rescale factor, at the end 1 / row sum
shared vec4 sm4[(CR + BQ) / 4u];

float sm(uint i) { return sm4[i >> 2][i & 3u]; }
void sm_set(uint i, float x) { sm4[i >> 2][i & 3u] = x; }

// This workgroup and its staging registers.
uint t, h, kvh, i0, valid, hi;
float rq[8], rk[4], rv[32]; // the next Q/K chunk, the next V block (D / 8 values)

// Q rows t / 4, dims (t % 4) * 8 ..; K key t / 8, dims (t % 8) * 4 ..; zeros past the data.
void load_qk(uint j0, uint d0) {
    uint i = i0 + (t >> 2), dq = d0 + (t & 3u) * 8u, j = j0 + (t >> 3), dk = d0 + (t & 7u) * 4u;
    [[unroll]] for (uint c = 0u; c < 8u; c++)
        rq[c] = i < valid && dq + c < p.dh ? q[(i * p.heads + h) * p.dh + dq + c] : 0.0;
    [[unroll]] for (uint c = 0u; c < 4u; c++)
        rk[c] = j <= hi && dk + c < p.dh ? k[(j * p.kv_heads + kvh) * p.dh + dk + c] : 0.0;
}

void store_qk() {
    uint r = t >> 2, dq = (t & 3u) * 8u, jj = t >> 3, dk = (t & 7u) * 4u;
    [[unroll]] for (uint c = 0u; c < 8u; c++) sm_set(QS + (dq + c) * BQ + r, rq[c]);
    [[unroll]] for (uint c = 0u; c < 4u; c++) sm_set(KS + (dk + c) * BKV + jj, rk[c]);
}

// V key t / 8, dims t % 8 + 8 u; keys past hi may be unwritten cache rows: zeros, not their bits.
void load_v(uint j0) {
    uint j = j0 + (t >> 3);
    [[unroll]] for (uint u = 0u; u < D / 8u; u++) {
        uint d = (t & 7u) + 8u * u;
        rv[u] = j <= hi && d < p.dv ? v[(j * p.kv_heads + kvh) * p.dv + d] : 0.0;
    }
}

void store_v() {
    [[unroll]] for (uint u = 0u; u < D / 8u; u++) sm_set(VS + (t >> 3) * VSTR + (t & 7u) + 8u * u, rv[u]);
}

void main() {
    t = gl_LocalInvocationID.x;
    uint gid = group_id(), blocks = (p.rows + BQ - 1u) / BQ;
    h = gid % p.heads;
    i0 = (blocks - 1u - gid / p.heads) * BQ; // the longest rows first
    valid = valid_rows(p.rows, p.tok);
    uint rg = t >> 4, kc = t & 15u, dc = t & 15u; // phase 1: rows rg*4.., keys kc*2..; phase 3: dims dc*4..
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
    float m = -1.0 / 0.0, l = 0.0; // invocation t < BQ: the running max and sum of row i0 + t
    vec4 acc[4][4];
    [[unroll]] for (uint i = 0u; i < 4u; i++)
        [[unroll]] for (uint g = 0u; g < 4u; g++) acc[i][g] = vec4(0.0);
    uint chunks = (p.dh + DC - 1u) / DC;
    if (PF != 0u) load_qk(lo / BKV * BKV, 0u);
    for (uint j0 = lo / BKV * BKV; j0 <= hi; j0 += BKV) {
        // 1. scores
        float s[4][2] = {{0.0, 0.0}, {0.0, 0.0}, {0.0, 0.0}, {0.0, 0.0}};
        for (uint c = 0u; c < chunks; c++) {
            barrier(); // the previous readers of this space are done
            if (PF == 0u) load_qk(j0, c * DC);
            store_qk();
            barrier();
            if (PF != 0u && c + 1u < chunks) load_qk(j0, (c + 1u) * DC);
            if (PF != 0u && c + 1u == chunks) load_v(j0);
            for (uint d = 0u; d < DC; d++) {
                vec4 qv = sm4[(QS + d * BQ + rg * 4u) >> 2];
                float k0 = sm(KS + d * BKV + kc * 2u), k1 = sm(KS + d * BKV + kc * 2u + 1u);
                [[unroll]] for (uint i = 0u; i < 4u; i++) {
                    s[i][0] += qv[i] * k0;
                    s[i][1] += qv[i] * k1;
                }
            }
        }
        [[unroll]] for (uint i = 0u; i < 4u; i++) {
            uint row = rg * 4u + i, pos = rlx.n_past + i0 + row;
            [[unroll]] for (uint c = 0u; c < 2u; c++) {
                uint j = j0 + kc * 2u + c;
                bool seen = i0 + row < valid && j <= min(pos, p.t - 1u) && (p.window == 0u || pos - j < p.window);
                sm_set(PS + (kc * 2u + c) * BQ + row, seen ? s[i][c] * p.scale : -1.0 / 0.0);
            }
        }
        barrier(); // scores published; Q/K chunks free
        // 2. softmax statistics (one invocation per row) while everyone stages V
        if (t < BQ) {
            float mx = m;
            for (uint j = 0u; j < BKV; j++) mx = max(mx, sm(PS + j * BQ + t));
            float corr = mx == -1.0 / 0.0 ? 1.0 : exp(m - mx), sum = 0.0;
            for (uint j = 0u; j < BKV; j++) {
                float e = mx == -1.0 / 0.0 ? 0.0 : exp(sm(PS + j * BQ + t) - mx);
                sm_set(PS + j * BQ + t, e);
                sum += e;
            }
            l = l * corr + sum;
            m = mx;
            sm_set(CR + t, corr);
        }
        if (PF == 0u) load_v(j0);
        store_v();
        barrier();
        if (PF != 0u && j0 + BKV <= hi) load_qk(j0 + BKV, 0u);
        // 3. O = O * corr + P V
        vec4 corr = sm4[(CR + rg * 4u) >> 2];
        [[unroll]] for (uint i = 0u; i < 4u; i++)
            [[unroll]] for (uint g = 0u; g < NG; g++) acc[i][g] *= corr[i];
        for (uint j = 0u; j < BKV; j++) {
            vec4 pv = sm4[(PS + j * BQ + rg * 4u) >> 2];
            [[unroll]] for (uint g = 0u; g < NG; g++) {
                vec4 vv = sm4[(VS + j * VSTR + g * 64u + dc * 4u) >> 2];
                [[unroll]] for (uint i = 0u; i < 4u; i++) acc[i][g] += pv[i] * vv;
            }
        }
    }
    barrier();
    if (t < BQ) sm_set(CR + t, l > 0.0 ? 1.0 / l : 0.0);
    barrier();
    vec4 inv = sm4[(CR + rg * 4u) >> 2];
    [[unroll]] for (uint i = 0u; i < 4u; i++) {
        uint row = i0 + rg * 4u + i;
        if (row >= p.rows) continue;
        [[unroll]] for (uint g = 0u; g < NG; g++)
            [[unroll]] for (uint c = 0u; c < 4u; c++) {
                uint d = g * 64u + dc * 4u + c;
                if (d < p.dv) o[(row * p.heads + h) * p.dv + d] = row < valid ? acc[i][g][c] * inv[i] : 0.0;
            }
    }
}
