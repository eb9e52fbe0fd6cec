#version 450
// MATMUL for many rows (prefill): out[r, m0 + m] = epilogue(sum_k x[r, k] * w[m, k]), computed in
// 64 x 64 output tiles. Each step stages a 64 x 32 slice of x and of the weight rows in shared
// memory, the weights decoded from their stored type on the way in (dequant.glsl, 8 elements per
// thread), and every thread accumulates a 4 x 4 block of outputs. Bindings, push constants and
// epilogues are matmul.comp's; the row length k must be a multiple of 32 (the compiler falls back
// to matmul.comp otherwise).
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(constant_id = 1) const uint W_TYPE = 0;
layout(constant_id = 2) const uint EPI = 0;

layout(set = 1, binding = 0) readonly buffer X { float x[]; };
layout(set = 1, binding = 1) readonly buffer Wt { uint w_words[]; };
layout(set = 1, binding = 2) writeonly buffer O { float o[]; };
layout(set = 1, binding = 3) readonly buffer Aux { float aux[]; };

layout(push_constant) uniform Push {
    uint rows;
    uint k;
    uint m_rows;
    uint m0;
    uint m;
    uint row_bytes;
    uint tok;
} p;

#include "dequant.glsl"
#include "act.glsl"

#define TILE 64u
#define TK 32u
shared float xs[TILE][TK + 1u];
shared float ws[TILE][TK + 1u];

void main() {
    // WG is 256 here (the compiler asks for it): 16 x 16 threads, 4 x 4 outputs each
    uint t = gl_LocalInvocationID.x, tx = t % 16u, ty = t / 16u;
    uint tiles_m = (p.m_rows + TILE - 1u) / TILE;
    uint gid = group_id();
    uint wr0 = (gid % tiles_m) * TILE, xr0 = (gid / tiles_m) * TILE;
    uint rows = valid_rows(p.rows, p.tok);
    if (xr0 >= rows) return;
    float acc[4][4];
    [[unroll]] for (uint i = 0u; i < 4u; i++)
        [[unroll]] for (uint j = 0u; j < 4u; j++) acc[i][j] = 0.0;
    uint lr = t / 4u, lk = (t % 4u) * 8u; // this thread's staging slot: tile row lr, columns lk..lk+7
    for (uint k0 = 0u; k0 < p.k; k0 += TK) {
        vec4 lo = vec4(0.0), hi = vec4(0.0);
        if (wr0 + lr < p.m_rows) dq8((wr0 + lr) * p.row_bytes, k0 + lk, lo, hi);
        ws[lr][lk] = lo.x; ws[lr][lk + 1u] = lo.y; ws[lr][lk + 2u] = lo.z; ws[lr][lk + 3u] = lo.w;
        ws[lr][lk + 4u] = hi.x; ws[lr][lk + 5u] = hi.y; ws[lr][lk + 6u] = hi.z; ws[lr][lk + 7u] = hi.w;
        uint xi = (xr0 + lr) * p.k + k0 + lk;
        bool xin = xr0 + lr < rows;
        [[unroll]] for (uint j = 0u; j < 8u; j++) xs[lr][lk + j] = xin ? x[xi + j] : 0.0;
        barrier();
        for (uint kk = 0u; kk < TK; kk++) {
            vec4 a = vec4(xs[ty * 4u][kk], xs[ty * 4u + 1u][kk], xs[ty * 4u + 2u][kk], xs[ty * 4u + 3u][kk]);
            vec4 b = vec4(ws[tx * 4u][kk], ws[tx * 4u + 1u][kk], ws[tx * 4u + 2u][kk], ws[tx * 4u + 3u][kk]);
            [[unroll]] for (uint i = 0u; i < 4u; i++) {
                acc[i][0] += a[i] * b.x;
                acc[i][1] += a[i] * b.y;
                acc[i][2] += a[i] * b.z;
                acc[i][3] += a[i] * b.w;
            }
        }
        barrier();
    }
    [[unroll]] for (uint i = 0u; i < 4u; i++) {
        uint r = xr0 + ty * 4u + i;
        if (r >= rows) continue;
        [[unroll]] for (uint j = 0u; j < 4u; j++) {
            uint wr = wr0 + tx * 4u + j;
            if (wr >= p.m_rows) continue;
            uint oi = r * p.m + p.m0 + wr;
            float v = acc[i][j];
            switch (EPI) {
            case 1u: v += aux[oi]; break;
            case 2u: v *= silu(aux[oi]); break;
            case 3u: v *= gelu_tanh(aux[oi]); break;
            }
            o[oi] = v;
        }
    }
}
