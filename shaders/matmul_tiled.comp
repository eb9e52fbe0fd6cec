#version 450
// MATMUL for many rows (prefill): out[r, m0 + m] = epilogue(sum_k x[r, k] * w[m, k]), computed in
// 64 x 64 output tiles. Each step stages a 64 x 32 slice of x and of the weight rows in shared
// memory, the weights decoded from their stored type on the way in (dequant.glsl, 8 elements per
// thread), and every thread accumulates a 4 x 4 block of outputs. The slices are stored k-major,
// so that each step of the inner loop reads its 4 x values and 4 weights as two vec4 (the 16
// threads of a row of the block read 16 consecutive vec4: no bank conflicts). Bindings, push
// constants and epilogues are matmul.comp's; the row length k must be a multiple of 32 (the
// compiler falls back to matmul.comp otherwise). Devices with cooperative matrices run
// matmul_coop.comp instead.
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
shared vec4 xs[TK][TILE / 4u]; // xs[k][r / 4][r % 4] = x[r0 + r, k0 + k]
shared vec4 ws[TK][TILE / 4u];

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
        uint lq = lr / 4u, lc = lr % 4u;
        [[unroll]] for (uint j = 0u; j < 4u; j++) {
            ws[lk + j][lq][lc] = lo[j];
            ws[lk + 4u + j][lq][lc] = hi[j];
        }
        uint xi = (xr0 + lr) * p.k + k0 + lk;
        bool xin = xr0 + lr < rows;
        [[unroll]] for (uint j = 0u; j < 8u; j++) xs[lk + j][lq][lc] = xin ? x[xi + j] : 0.0;
        barrier();
        for (uint kk = 0u; kk < TK; kk++) {
            vec4 a = xs[kk][ty], b = ws[kk][tx];
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
