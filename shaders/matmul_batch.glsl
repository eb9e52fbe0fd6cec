// MATMUL of a decode batch (at most 64 rows of x) over F16, Q4_K or Q6_K weights on cooperative
// matrices (16 x 16 x 16 f16 x f16 -> f32, the mixed mode):
// out[r, m0 + m] = epilogue(sum_k x[r, k] w[m, k]).
// Bindings, push constants, spec ids and split-k partials are matmul_coop.glsl's, so the host
// emits both alike; runtime/vk_plan.c vk_batch_takes says where this one runs. Included by
// matmul_batch.comp (VK_NV_cooperative_matrix) and matmul_batch_emu.comp (the matrix operations by
// plain code, shaders/coop_ops.glsl, so that lavapipe checks everything else).
//
// Why not matmul_coop.glsl: at 64 rows its workgroups wait on one k step's loads at a time (each
// step's weights pass through registers and shared memory between two barriers). Here each
// subgroup owns 16 weight rows (TN / 16 subgroups) and all 64 x rows (4 accumulators), and keeps
// its own weight loads DEPTH k steps ahead, in flight across the workgroup's barriers: each lane
// holds its raw words of 32 values per step (a ring of DEPTH), stages them (F16 as stored, Q4_K and
// Q6_K decoded) in the subgroup's own 16 rows of shared memory, and the subgroup loads its operands
// from there after a subgroup barrier, so no workgroup barrier waits on a weight load. (Loading the
// F16 blocks straight from the buffer into cooperative operands, a ring of them, was slower than
// matmul_coop: docs/PERFORMANCE.md.) Only x goes through shared memory for the whole workgroup
// (f32 -> f16, double-buffered: one barrier per k step), and each staged x tile feeds TN weight
// rows.
// Spec TN (64 or 128; WG = 2 TN), BK (64), DEPTH (1, 2 or 4), SPLIT (k ranges, as matmul_coop.glsl);
// TM is 64, PREC 0, weight rows a multiple of 16 (the plan's rule); OROWS is unused. x values, or
// decoded weights, at or past 16384 (f16 overflow) send the tile to the f32 loop, as in matmul_coop.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(constant_id = 1) const uint W_TYPE = 1; // T_F16
layout(constant_id = 2) const uint EPI = 0;
layout(constant_id = 3) const uint PREC = 0;
layout(constant_id = 4) const uint TM = 64;
layout(constant_id = 5) const uint BK = 64;
layout(constant_id = 6) const uint DEPTH = 2;
layout(constant_id = 7) const uint SPLIT = 1;
layout(constant_id = 8) const uint TN = 128;
layout(constant_id = 9) const uint OROWS = 64;

#include "matmul_coop_io.glsl"

#include "dequant.glsl"
#include "act.glsl"

const uint KB = BK / 16u;      // weight blocks (16 x 16) per k step and subgroup
const uint S = BK / 8u + 1u;   // x row stride in uvec4, odd: a block's 8 rows on distinct banks
const uint CPR = BK / 8u;      // chunks of 8 x values per row and step
const uint XBUF = TM * S;      // one x buffer; two, then the result rounds
const uint CS = 16u / 4u + 1u; // result row stride in uvec4 (16 floats and one pad)
const uint X_PER = TM * CPR / WG;
const uint KRAW = W_TYPE == T_Q6_K ? 18u : W_TYPE == T_F16 ? 16u : 8u; // raw words per lane and step
const uint WREG = 2u * XBUF;       // the subgroups' weight rows of the step (f16), 16 each
const uint OPS = WREG + TN * S;    // the operands; the result rounds reuse the space
const uint OUTS = (TN / 16u) * 16u * CS;

shared uvec4 smem[OPS > OUTS ? OPS : OUTS];
shared uint s_bad;

uint t;
uint split_at, k_lo, k_hi;
vec4 xr[X_PER * 2u]; // the next step's x values
uint kraw[DEPTH * KRAW]; // this lane's raw weight words, DEPTH steps ahead
bool bad = false;

#include "coop_ops.glsl"
#include "matmul_coop_out.glsl"

#ifdef RLX_COOP_EMULATE
#define SYNC_W() barrier() // emulated subgroups span several of the device's
#else
#define SYNC_W() subgroupBarrier()
#endif

// Lane l stages 32 values of weight row n0 + l / 2 per k step, those at 16 h .. and 32 + 16 h ..
// (h = l % 2) of the step's 64 (a K-quant block's group, whose bytes for them sit together in
// both formats). Its raw words wait in ring slot d (KRAW words) from DEPTH steps ahead.

// The byte address of row n0 + l / 2's block at k column kc.
uint kq_block(uint n0, uint kc) { return (n0 + (t % 32u) / 2u) * p.row_bytes + (kc >> 8) * block_bytes(); }

// Q4_K (144-byte blocks in rows of whole blocks from 16-aligned bindings): the header (d, dmin,
// the 12 scale bytes) and the half's 16 quant bytes of group j (low nibbles: sub-block 2 j, high
// ones: 2 j + 1), one 16-byte load each.
void fetch_w_q4k(uint at, uint b, uint j) {
    uvec4 hd = w4[b >> 4], q = w4[(b + 16u + 32u * j + 16u * (t % 2u)) >> 4];
    kraw[at] = hd.x, kraw[at + 1u] = hd.y, kraw[at + 2u] = hd.z, kraw[at + 3u] = hd.w;
    kraw[at + 4u] = q.x, kraw[at + 5u] = q.y, kraw[at + 6u] = q.z, kraw[at + 7u] = q.w;
}

// Q6_K (210-byte blocks, so only 2-aligned): the 5 words over each 16 bytes the half needs, funnelled
// at decode (q6k_word): the low 4 bits of both quadrants (ql), their high 2 bits (qh), the 4 scale
// bytes of the group and the word holding d.
void fetch_w_q6k(uint at, uint b, uint j) {
    uint n = j >> 1, h = t % 2u;
    uint from[3] = uint[3](b + 64u * n + 16u * h, b + 64u * n + 32u + 16u * h, b + 128u + 32u * n + 16u * h);
    UNROLL for (uint c = 0u; c < 3u; c++)
        UNROLL for (uint i = 0u; i < 5u; i++) kraw[at + 5u * c + i] = w_words[(from[c] >> 2) + i];
    uint sc = (b + 192u + 8u * n + 4u * (j & 1u)) >> 2;
    kraw[at + 15u] = w_words[sc];
    kraw[at + 16u] = w_words[sc + 1u];
    kraw[at + 17u] = w_words[(b + 208u) >> 2];
}

// F16 (rows of 64-byte multiples in 16-aligned bindings): the lane's 4 chunks of 8 values, one
// 16-byte load each; a step cut short by k_hi (k % 32 == 0) leaves whole 16-value blocks unread,
// which the multiplies skip.
void fetch_w_f16(uint at, uint n0, uint kc) {
    uint b = (n0 + (t % 32u) / 2u) * p.row_bytes + kc * 2u;
    UNROLL for (uint c = 0u; c < 4u; c++) {
        uint chunk = (c / 2u) * 4u + 2u * (t % 2u) + c % 2u;
        uvec4 v = kc + 8u * chunk < k_hi ? w4[(b + 16u * chunk) >> 4] : uvec4(0u);
        kraw[at + 4u * c] = v.x, kraw[at + 4u * c + 1u] = v.y, kraw[at + 4u * c + 2u] = v.z;
        kraw[at + 4u * c + 3u] = v.w;
    }
}

void fetch_w(uint d, uint s, uint n0) {
    uint kc = k_lo + s * BK, j = (kc & 255u) >> 6;
    if (W_TYPE == T_F16) fetch_w_f16(d * KRAW, n0, kc);
    else if (W_TYPE == T_Q4_K) fetch_w_q4k(d * KRAW, kq_block(n0, kc), j);
    else fetch_w_q6k(d * KRAW, kq_block(n0, kc), j);
}

// Word i of 16 bytes that start 2 bytes into their first word (odd) or at it.
uint q6k_word(uint at, uint i, bool odd) { return funnel(kraw[at + i], kraw[at + i + 1u], odd); }

// The lane's 32 values (first, second: 16 each) into subgroup g's weight rows, and the range check.
void put_w(uint g, vec4 f[8]) {
    uint at = WREG + (g * 16u + (t % 32u) / 2u) * S + 2u * (t % 2u);
    UNROLL for (uint i = 0u; i < 8u; i++) bad = bad || !fits(f[i]);
    smem[at] = to_f16(f[0], f[1]);
    smem[at + 1u] = to_f16(f[2], f[3]);
    smem[at + 4u] = to_f16(f[4], f[5]);
    smem[at + 5u] = to_f16(f[6], f[7]);
}

// Ring slot d (step s) into subgroup g's weight rows: F16 as stored; Q4_K decoded, d * scale * q -
// dmin * min per sub-block; Q6_K d * scale * (q - 32) per 16 values.
void stage_w(uint d, uint s, uint g, uint n0) {
    uint kc = k_lo + s * BK, j = (kc & 255u) >> 6, at = d * KRAW, h = t % 2u;
    vec4 f[8];
    if (W_TYPE == T_F16) {
        uint to = WREG + (g * 16u + (t % 32u) / 2u) * S + 2u * h;
        UNROLL for (uint c = 0u; c < 4u; c++)
            smem[to + (c / 2u) * 4u + c % 2u] = uvec4(kraw[at + 4u * c], kraw[at + 4u * c + 1u],
                                                       kraw[at + 4u * c + 2u], kraw[at + 4u * c + 3u]);
        return;
    }
    if (W_TYPE == T_Q4_K) {
        vec4 sm = q4k_group_scales(uvec4(kraw[at], kraw[at + 1u], kraw[at + 2u], kraw[at + 3u]), j);
        UNROLL for (uint i = 0u; i < 4u; i++) {
            f[i] = sm.x * nib4(kraw[at + 4u + i], 0u) - sm.y;
            f[4u + i] = sm.z * nib4(kraw[at + 4u + i], 1u) - sm.w;
        }
    } else {
        bool odd = (kq_block(n0, kc) & 2u) != 0u; // every field's address has the block's parity
        uint sw = q6k_word(at, 15u, odd), c = j & 1u;
        float dd = unpackHalf2x16(odd ? kraw[at + 17u] >> 16 : kraw[at + 17u]).x;
        float sa = dd * float(bitfieldExtract(int(sw), int(8u * h), 8)),
              sb = dd * float(bitfieldExtract(int(sw), int(8u * h + 16u), 8));
        UNROLL for (uint i = 0u; i < 4u; i++) {
            uint qa = q6k_word(at, i, odd), qb = q6k_word(at + 5u, i, odd), qh = q6k_word(at + 10u, i, odd);
            f[i] = sa * q6k_q4(qa, c, qh, 4u * c);
            f[4u + i] = sb * q6k_q4(qb, c, qh, 4u * c + 2u);
        }
    }
    put_w(g, f);
}

// Round i of the results: x rows 16 i .. + 16 of the subgroup's 16 weight rows from n0, stored at
// smem[at] just before; the barriers keep each round's space apart from the next one's.
void out_round(uint i, uint at, uint n0, uint rows, bool live) {
    barrier();
    UNROLL for (uint j = 0u; j < 8u; j++) {
        uint e = t % 32u + 32u * j, r = 16u * i + e / 16u, n = e % 16u;
        float v = uintBitsToFloat(smem[at + (e / 16u) * CS + n / 4u][n % 4u]);
        if (live && r < rows && n0 + n < p.m_rows) store_out(r, n0 + n, v);
    }
    barrier();
}

// x chunks of step s into xr (zeros past the valid rows and k_hi).
void fetch_x(uint s, uint rows) {
    uint k0 = k_lo + s * BK;
    UNROLL for (uint i = 0u; i < X_PER; i++) {
        uint c = t + i * WG, r = c / CPR, kc = k0 + (c % CPR) * 8u;
        xr[2u * i] = vec4(0.0);
        xr[2u * i + 1u] = vec4(0.0);
        if (r < rows && kc < k_hi) {
            uint q = (r * p.k + kc) >> 2;
            xr[2u * i] = x4[q];
            xr[2u * i + 1u] = x4[q + 1u];
        }
    }
}

// xr as f16 into x buffer b.
void stage_x(uint b) {
    UNROLL for (uint i = 0u; i < X_PER; i++) {
        uint c = t + i * WG;
        vec4 a = xr[2u * i], d = xr[2u * i + 1u];
        bad = bad || !fits(a) || !fits(d);
        smem[b * XBUF + (c / CPR) * S + c % CPR] = to_f16(a, d);
    }
}

// The step's products of weight operand B with the 16-row blocks of x that hold valid rows.
#define MUL_X(B)                                                                                   \
    LOAD(a, xb + kb * 2u, false);                                                                  \
    c0 = MULADD(a, B, c0);                                                                         \
    if (rows > 16u) {                                                                              \
        LOAD(a, xb + 16u * S + kb * 2u, false);                                                    \
        c1 = MULADD(a, B, c1);                                                                     \
    }                                                                                              \
    if (rows > 32u) {                                                                              \
        LOAD(a, xb + 32u * S + kb * 2u, false);                                                    \
        c2 = MULADD(a, B, c2);                                                                     \
    }                                                                                              \
    if (rows > 48u) {                                                                              \
        LOAD(a, xb + 48u * S + kb * 2u, false);                                                    \
        c3 = MULADD(a, B, c3);                                                                     \
    }

void main() {
    t = gl_LocalInvocationID.x;
    uint tiles = (p.m_rows + TN - 1u) / TN, gid = group_id() % tiles;
    split_at = group_id() / tiles;
    uint wr0 = gid * TN, rows = valid_rows(p.rows, p.tok);
    k_lo = SPLIT > 1u ? split_at * p.ksplit : 0u;
    k_hi = SPLIT > 1u ? min(k_lo + p.ksplit, p.k) : p.k;
    if (t == 0u) s_bad = 0u;
    uint g = subgroup_index(), n0 = wr0 + 16u * g;
    bool live = n0 < p.m_rows; // uniform in the subgroup: weight rows come in whole blocks of 16
    uint steps = (k_hi - k_lo + BK - 1u) / BK;
    ACCUM c0 = ACCUM_ZERO;
    ACCUM c1 = c0, c2 = c0, c3 = c0;
    OPERAND a, bw;
    fetch_x(0u, rows);
    UNROLL for (uint r = 0u; r < DEPTH; r++)
        if (live && k_lo + r * BK < k_hi) fetch_w(r, r, n0);
    stage_x(0u);
    barrier();
    for (uint s0 = 0u; s0 < steps; s0 += DEPTH) {
        UNROLL for (uint d = 0u; d < DEPTH; d++) {
            uint s = s0 + d;
            if (s >= steps) continue; // uniform
            if (s + 1u < steps) fetch_x(s + 1u, rows);
            // the previous step's readers of the weight rows passed the last barrier
            if (live) stage_w(d, s, g, n0);
            if (live && s + DEPTH < steps) fetch_w(d, s + DEPTH, n0);
            SYNC_W();
            uint xb = (s % 2u) * XBUF;
            UNROLL for (uint kb = 0u; kb < KB; kb++) {
                uint kc = k_lo + s * BK + kb * 16u;
                if (live && kc < k_hi) { // uniform in the subgroup; blocks of x rows past the valid ones stay 0
                    LOAD(bw, WREG + g * 16u * S + kb * 2u, true); // w rows are the columns of B
                    MUL_X(bw);
                }
            }
            if (s + 1u < steps) { // the other buffer's readers passed the last barrier
                stage_x((s + 1u) % 2u);
                barrier();
            }
        }
    }
    if (bad) s_bad = 1u;
    barrier();
    if (s_bad != 0u) { // uniform: every invocation read it after the barrier
        slow_tile(0u, wr0, rows);
        return;
    }
    // Each subgroup's 64 x 16 results leave through its own 16-row space, one accumulator a round.
    uint at = g * 16u * CS;
    barrier();
    if (live) STORE(c0, at);
    out_round(0u, at, n0, rows, live);
    if (live) STORE(c1, at);
    out_round(1u, at, n0, rows, live);
    if (live) STORE(c2, at);
    out_round(2u, at, n0, rows, live);
    if (live) STORE(c3, at);
    out_round(3u, at, n0, rows, live);
}
