// ROPE (ir/ops.def): the pair (x0, x1) of head dims turns by theta_i = pos * base^(-2i/n_rot) /
// freq_factors[i], pos = rlx_pos(row); dims >= n_rot pass through. Angles: rope.glsl.
// KV != 0 (runtime/vk_fuse.c fuse_kv) absorbs the KV_WRITE that takes the result: head h of token
// row i lands at head h of the pool row of position rlx_pos(i) of i's sequence, and with KV == 2 the
// V rows of the same tokens are copied into the V pool by the same invocations (one dispatch
// instead of three).
#include "common.glsl"
#include "rope.glsl"
#include "kv_type.glsl"

layout(constant_id = 1) const uint NEOX = 0;
layout(constant_id = 2) const uint KV = 0; // 0 out; 1 out is a K cache; 2 and copy V rows to the V cache

layout(set = 1, binding = 0) readonly buffer X { float x[]; };
layout(set = 1, binding = 1) readonly buffer T { uvec2 step_turns[]; };
#ifdef RLX_KV_F16
layout(set = 1, binding = 2) writeonly buffer O { kv_t o[]; }; // rope_f16.comp: only with KV (a pool)
#else
layout(set = 1, binding = 2) writeonly buffer O { float o[]; };
#endif
layout(set = 1, binding = 3) readonly buffer VS { float vsrc[]; }; // KV 2: V rows [rows * heads, dv]
layout(set = 1, binding = 4) writeonly buffer VC { kv_t vc[]; };  // KV 2: V cache

layout(push_constant) uniform Push {
    uint rows;
    uint heads;
    uint dh;
    uint n_rot;
    uint tok;   // 1: token-major (always with KV: a KV_WRITE takes the first n_tokens rows)
    uint dv; // KV 2: V row length
} p;

void main() {
    uint half_rot = p.n_rot / 2u, per_head = half_rot + (p.dh - p.n_rot + 1u) / 2u;
    uint idx = group_id() * WG + gl_LocalInvocationID.x;
    if (idx >= valid_rows(p.rows, p.tok) * p.heads * per_head) return;
    uint slot = idx % per_head, hrow = idx / per_head, row = hrow / p.heads;
    uint pos = rlx_pos(row), cache_hrow = KV != 0u ? rlx_kv_row(row, pos) * p.heads + hrow - row * p.heads : 0u;
    uint base = hrow * p.dh, obase = KV != 0u ? cache_hrow * p.dh : base;
    if (KV == 2u) {
        uint src = hrow * p.dv, dst = cache_hrow * p.dv;
        for (uint d = slot; d < p.dv; d += per_head) vc[dst + d] = kv_store(vsrc[src + d]);
    }
    if (slot >= half_rot) { // pass-through dims
        uint d = p.n_rot + 2u * (slot - half_rot);
        o[obase + d] = kv_store(x[base + d]);
        if (d + 1u < p.dh) o[obase + d + 1u] = kv_store(x[base + d + 1u]);
        return;
    }
    uvec2 d = rope_pair(slot, p.n_rot, NEOX != 0u);
    vec2 sc = sincos_turns(pos, step_turns[slot]);
    float x0 = x[base + d.x], x1 = x[base + d.y];
    o[obase + d.x] = kv_store(x0 * sc.y - x1 * sc.x);
    o[obase + d.y] = kv_store(x0 * sc.x + x1 * sc.y);
}
