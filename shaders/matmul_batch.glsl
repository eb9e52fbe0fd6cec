// MATMUL of a decode batch (at most 64 rows of x) over F16 weights on cooperative matrices (16 x 16
// x 16 f16 x f16 -> f32, the mixed mode): out[r, m0 + m] = epilogue(sum_k x[r, k] * w[m, k]).
// Bindings, push constants, spec ids and split-k partials are matmul_coop.glsl's, so the host
// emits both alike; runtime/vk_plan.c vk_batch_takes says where this one runs. Included by
// matmul_batch.comp (VK_NV_cooperative_matrix) and matmul_batch_emu.comp (the matrix operations by
// plain code, shaders/coop_ops.glsl, so that lavapipe checks everything else).
//
// Why not matmul_coop.glsl: at 64 rows its workgroups wait on one k step's loads at a time (each
// step's weights pass through registers and shared memory between two barriers), so the weights
// stream at a third of the memory's rate. Here:
//  - each subgroup owns 16 weight rows (TN / 16 subgroups) and all 64 x rows (4 accumulators), and
//    loads its weight blocks straight from the buffer into cooperative operands, DEPTH k steps
//    ahead (a ring of DEPTH x BK / 16 operands in registers), so its loads stay in flight across
//    the barriers;
//  - only x goes through shared memory (f32 -> f16, double-buffered: one barrier per k step), and
//    each staged x tile feeds TN weight rows.
// Spec TN (64 or 128; WG = 2 TN), BK (64), DEPTH (1 or 2), SPLIT (k ranges, as matmul_coop.glsl);
// TM is 64, PREC 0, W_TYPE F16, weight rows a multiple of 16 (the plan's rule); OROWS is unused.
// x values at or past 16384 (f16 overflow) send the tile to the f32 loop, as in matmul_coop.glsl.
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
const uint RING = DEPTH * KB;

shared uvec4 smem[2u * XBUF > (TN / 16u) * 16u * CS ? 2u * XBUF : (TN / 16u) * 16u * CS];
shared uint s_bad;

uint t;
uint split_at, k_lo, k_hi;
vec4 xr[X_PER * 2u]; // the next step's x values
bool bad = false;

#include "coop_ops.glsl"
#include "matmul_coop_out.glsl"

#ifdef RLX_COOP_EMULATE
// A weight block read where it is multiplied (the weights are read-only: the same values as a load
// ahead); column n is weight row n, 8 values per uvec4 from w4[at + n stride].
struct wblock {
    uint at, stride;
};
#define WOPERAND wblock
#define LOAD_W(m, at, stride) m = wblock(at, stride)
#define MULADD_W(a, b, c) muladd_w(a, b, c)

float w_at(wblock b, uint n, uint k) { return unpackHalf2x16(w4[b.at + n * b.stride + k / 8u][(k % 8u) / 2u])[k % 2u]; }

accum muladd_w(operand a, wblock b, accum c) {
    uint lane = t % 32u;
    [[dont_unroll]] for (uint k = 0u; k < 16u; k++) {
        [[unroll]] for (uint i = 0u; i < 8u; i++) {
            uint e = lane + 32u * i;
            c.v[i] += op_at(a, e / 16u, k) * w_at(b, e % 16u, k);
        }
    }
    return c;
}
#else
#define WOPERAND OPERAND
#define LOAD_W(m, at, stride) coopMatLoadNV(m, w4, at, stride, true)
#define MULADD_W(a, b, c) coopMatMulAddNV(a, b, c)
#endif

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

void main() {
    t = gl_LocalInvocationID.x;
    uint tiles = (p.m_rows + TN - 1u) / TN, gid = group_id() % tiles;
    split_at = group_id() / tiles;
    uint wr0 = gid * TN, rows = valid_rows(p.rows, p.tok);
    k_lo = SPLIT > 1u ? split_at * p.ksplit : 0u;
    k_hi = SPLIT > 1u ? min(k_lo + p.ksplit, p.k) : p.k;
    if (t == 0u) s_bad = 0u;
    uint g = subgroup_index(), n0 = wr0 + 16u * g, stride = p.row_bytes >> 4;
    bool live = n0 < p.m_rows; // uniform in the subgroup: weight rows come in whole blocks of 16
    uint steps = (k_hi - k_lo + BK - 1u) / BK;
    ACCUM c0 = ACCUM_ZERO;
    ACCUM c1 = c0, c2 = c0, c3 = c0;
    OPERAND a;
    WOPERAND wb[RING]; // ring: the weight blocks of the next DEPTH steps
    fetch_x(0u, rows);
    UNROLL for (uint r = 0u; r < RING; r++) {
        uint kc = k_lo + r * 16u;
        if (live && kc < k_hi) LOAD_W(wb[r], (n0 * p.row_bytes + kc * 2u) >> 4, stride);
    }
    stage_x(0u);
    barrier();
    for (uint s0 = 0u; s0 < steps; s0 += DEPTH) {
        UNROLL for (uint d = 0u; d < DEPTH; d++) {
            uint s = s0 + d;
            if (s >= steps) continue; // uniform
            if (s + 1u < steps) fetch_x(s + 1u, rows);
            uint xb = (s % 2u) * XBUF;
            UNROLL for (uint kb = 0u; kb < KB; kb++) {
                uint kc = k_lo + s * BK + kb * 16u, r = d * KB + kb, next = kc + DEPTH * BK;
                if (live && kc < k_hi) { // uniform in the subgroup; blocks of x rows past the valid ones stay 0
                    LOAD(a, xb + kb * 2u, false);
                    c0 = MULADD_W(a, wb[r], c0);
                    if (rows > 16u) {
                        LOAD(a, xb + 16u * S + kb * 2u, false);
                        c1 = MULADD_W(a, wb[r], c1);
                    }
                    if (rows > 32u) {
                        LOAD(a, xb + 32u * S + kb * 2u, false);
                        c2 = MULADD_W(a, wb[r], c2);
                    }
                    if (rows > 48u) {
                        LOAD(a, xb + 48u * S + kb * 2u, false);
                        c3 = MULADD_W(a, wb[r], c3);
                    }
                }
                if (live && next < k_hi) LOAD_W(wb[r], (n0 * p.row_bytes + next * 2u) >> 4, stride);
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
