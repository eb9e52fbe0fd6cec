#version 450
// MOE_FFN's grouped path for many rows (runtime/vk_lower_moe.c): the (row, slot) pairs each expert
// takes, listed by shaders/moe_group.comp (pair j = i * slots + s), times that expert's weights in
// tiles, as shaders/matmul_tiled.comp does: each weight tile is decoded once per TM pairs, where
// shaders/moe_mv.comp reads it once per pair. A workgroup owns (expert e, its pairs
// [TM r0, TM r0 + TM), outputs [64 m0, 64 m0 + 64)):
//  MODE 0 (gate): y[j, f] = gate_e[f, :] . x[i, :]
//  MODE 1 (up):   y[j, f] = silu(y[j, f]) * (up_e[f, :] . x[i, :])
//  MODE 2 (down): y[j, d] = route[i, e] * (down_e[d, :] . h[j, :]), a partial that
//                 shaders/moe_sum.comp adds up over the row's slots in slot order.
// y of MODE 0 and 1 is h [rows, slots, F]; x of MODE 2 is h. The grid is fixed at compile time:
// output tiles x a bound on the tiles of pairs (runtime/vk_plan.c vk_moe_grouped_plan), walking
// the tiles moe_group.comp MODE 2 listed; a workgroup past their count returns at once.
// Each step stages TK = 32 values of k of the TM pairs' x rows and of the 64 weight rows in shared
// memory, the weights decoded on the way in (dequant.glsl, 8 elements per thread); 16 x 16 threads
// each accumulate RM x 4 outputs (thread_block). Every output is summed over k in one order, k
// ascending, whatever tile its pair falls in, so on one pipeline (one RM) a row's bits do not
// depend on the other rows' routes. k (D for gate and up, F for down) is a multiple of 32: the
// planner keeps other shapes on moe_mv.comp.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(constant_id = 1) const uint W_TYPE = 0;
layout(constant_id = 2) const uint MODE = 0;
layout(constant_id = 3) const uint RM = 1; // pair rows per thread: TM = 16 RM pairs per tile (1, 2 or 4)

layout(set = 1, binding = 0) readonly buffer X { float x[]; };
layout(set = 1, binding = 1) readonly buffer Route { float route[]; };
layout(set = 1, binding = 2) readonly buffer Wt { uint w_words[]; };
layout(set = 1, binding = 3) readonly buffer List { uint list[]; }; // moe_group.comp MODE 1
layout(set = 1, binding = 4) buffer Y { float y[]; };

layout(push_constant) uniform Push {
    uint rows;         // static rows: the lists' stride, and the grid's row tiles (ceil(rows / TM))
    uint experts;
    uint slots;
    uint k;            // dot length (D for gate/up, F for down)
    uint m;            // outputs per expert (F for gate/up, D for down)
    uint row_bytes;    // bytes per weight row
    uint expert_bytes; // bytes per expert matrix
} p;

#include "dequant.glsl"
#include "act.glsl"

#define TN 64u
#define TK 32u
#define TM (16u * RM)
#define TM_MAX 64u
shared float xs[TK][TM_MAX + 1u]; // xs[c][r] = x row of pair r, value k0 + c; padded: no bank conflicts
shared vec4 ws[TK][TN / 4u];      // ws[c][w / 4][w % 4] = weight row m0 + w, value k0 + c
shared uint pair[TM_MAX];         // the tile's pairs j (NONE past the expert's count)

const uint NONE = 0xffffffffu;

// Stages values [k0, k0 + TK) of the tile's x rows and weight rows.
void stage(uint e, uint m0, uint k0) {
    uint t = gl_LocalInvocationID.x;
    for (uint q = t; q < TM * TK; q += WG) { // consecutive invocations read consecutive k of one row
        uint r = q / TK, c = q % TK, j = pair[r];
        uint src = MODE == 2u ? j : j / p.slots; // h row j, or x row i
        xs[c][r] = j != NONE ? x[src * p.k + k0 + c] : 0.0;
    }
    uint lr = t / 4u, lk = (t % 4u) * 8u; // weight row lr, values lk .. lk + 7
    vec4 lo = vec4(0.0), hi = vec4(0.0);
    if (m0 + lr < p.m) dq8(e * p.expert_bytes + (m0 + lr) * p.row_bytes, k0 + lk, lo, hi);
    [[unroll]] for (uint c = 0u; c < 4u; c++) {
        ws[lk + c][lr / 4u][lr % 4u] = lo[c];
        ws[lk + 4u + c][lr / 4u][lr % 4u] = hi[c];
    }
}

// This invocation's place in the 16 x 16 grid of 4-output blocks (tx) by RM-pair blocks (ty): each
// 32 consecutive invocations take 8 tx by 4 ty, so that a 32-wide subgroup's reads of a step's
// weights (8 vec4) and x values (4 per pair row) are one 128-byte shared-memory access each,
// where 16 tx by 2 ty took two for the weights.
uvec2 thread_block() {
    uint t = gl_LocalInvocationID.x;
    return uvec2((t & 7u) | (((t >> 5) & 1u) << 3), ((t >> 3) & 3u) | ((t >> 6) << 2));
}

void write_out(uint e, uint m0, float acc[4][4]) {
    uvec2 b2 = thread_block();
    uint tx = b2.x, ty = b2.y;
    [[unroll]] for (uint a = 0u; a < RM; a++) {
        uint j = pair[ty * RM + a];
        if (j == NONE) continue;
        float w = MODE == 2u ? route[(j / p.slots) * p.experts + e] : 1.0;
        [[unroll]] for (uint b = 0u; b < 4u; b++) {
            uint f = m0 + tx * 4u + b, yi = j * p.m + f;
            if (f >= p.m) continue;
            float v = acc[a][b];
            if (MODE == 1u) v *= silu(y[yi]);
            y[yi] = MODE == 2u ? w * v : v;
        }
    }
}

void main() {
    // WG is 256 (the planner asks for it): 16 x 16 threads
    uint t = gl_LocalInvocationID.x, tx = thread_block().x, ty = thread_block().y;
    uint m_tiles = (p.m + TN - 1u) / TN, row_tiles = (p.rows + TM - 1u) / TM, g = group_id();
    uint tiles_at = p.experts + p.experts * p.rows, tile = g / m_tiles, m0 = (g % m_tiles) * TN;
    if (tile >= list[tiles_at]) return; // uniform: fewer tiles hold pairs than the grid bounds
    uint code = list[tiles_at + 1u + tile], e = code / row_tiles, r0 = (code % row_tiles) * TM, count = list[e];
    for (uint r = t; r < TM; r += WG) pair[r] = r0 + r < count ? list[p.experts + e * p.rows + r0 + r] : NONE;
    barrier();
    float acc[4][4];
    [[unroll]] for (uint a = 0u; a < 4u; a++)
        [[unroll]] for (uint b = 0u; b < 4u; b++) acc[a][b] = 0.0;
    for (uint k0 = 0u; k0 < p.k; k0 += TK) {
        stage(e, m0, k0);
        barrier();
        for (uint c = 0u; c < TK; c++) {
            vec4 wv = ws[c][tx];
            [[unroll]] for (uint a = 0u; a < RM; a++) {
                float xv = xs[c][ty * RM + a];
                acc[a][0] += xv * wv.x;
                acc[a][1] += xv * wv.y;
                acc[a][2] += xv * wv.z;
                acc[a][3] += xv * wv.w;
            }
        }
        barrier();
    }
    write_out(e, m0, acc);
}
