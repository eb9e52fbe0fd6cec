// RMS_NORM: out = x / sqrt(mean(x^2) + eps) * w * scale over each row. Fused forms
// (runtime/vk_fuse.c): scale != 1 absorbs a following SCALE; ROPE != 0 absorbs a following ROPE
// of the normalised head (q/k norm then RoPE, as Qwen3 and Gemma 3 prepare Q and K): row r is
// head r % heads of token row r / heads, and its pairs are rotated as rope.comp does. KV != 0
// absorbs the KV_WRITE that takes the result: row r (head r % heads of token row t = r / heads)
// lands at that head of the pool row of position rlx_pos(t) of t's sequence, and with KV == 2 the
// row r of the V projection is copied into the V pool alongside (one dispatch instead of three).
// RES == 1 absorbs the ADD of a residual that follows the norm (Gemma 3's post-norms):
// out = res + norm(x); RES == 2 the MUL by SiLU of a gate that follows it (the Gated DeltaNet
// layer's output norm): out = norm(x) silu(res).
//
// Speed (a decode step is latency-bound): a row is shared by a whole team, a workgroup for long
// rows or one subgroup per row for head-sized rows (several rows per workgroup, no barriers), and
// each invocation loads all its elements (NS slots of two elements, and their weights) before the
// first use, so a row costs one memory round trip, a reduction and the stores. Slot s holds the
// pair of dims that RoPE rotates together, or two pass-through dims half a tail apart, so an
// invocation rotates what it holds and consecutive invocations read consecutive addresses. Slots
// past NS per invocation (a smaller subgroup than the host planned for) are read twice instead.
#include "common.glsl"
#include "reduce.glsl"
#include "rope.glsl"
#include "kv_type.glsl"

layout(constant_id = 1) const uint ROPE = 0; // 0 none, 1 NORMAL pairs, 2 NEOX pairs
layout(constant_id = 2) const uint TEAM = 0; // 0: one workgroup per row; 1: one subgroup per row
layout(constant_id = 3) const uint R = 1;    // TEAM 1: rows per workgroup
layout(constant_id = 4) const uint NS = 2;   // slots per invocation held in registers
layout(constant_id = 5) const uint KV = 0;   // 0 out; 1 out is a K cache; 2 and copy V rows to the V cache
layout(constant_id = 6) const uint RES = 0;  // 1: add the residual rows (binding 4); 2: times their SiLU

layout(set = 1, binding = 0) readonly buffer X { float x[]; };
layout(set = 1, binding = 1) readonly buffer W { float w[]; };
#ifdef RLX_KV_F16
layout(set = 1, binding = 2) writeonly buffer O { kv_t o[]; }; // rms_norm_f16.comp: only with KV (a pool)
#else
layout(set = 1, binding = 2) writeonly buffer O { float o[]; };
#endif
layout(set = 1, binding = 3) readonly buffer T { uvec2 step_turns[]; };
layout(set = 1, binding = 4) readonly buffer VS { float vsrc[]; };  // KV 2: V rows [rows, dv]; RES: residual
layout(set = 1, binding = 5) writeonly buffer VC { kv_t vc[]; };   // KV 2: V cache

layout(push_constant) uniform Push {
    uint rows;
    uint cols;
    float eps;
    float scale;
    uint tok;   // rows per token row (KV: heads, as a KV_WRITE takes the first n_tokens rows)
    uint heads; // ROPE, KV: rows per token row
    uint n_rot; // ROPE: rotated dims
    uint dv;    // KV 2: V row length
} p;


float team_sum(float v) { return TEAM == 0u ? wg_sum(v) : subgroupAdd(v); }

float residual(uint i) { return RES != 0u ? vsrc[i] : 0.0; }

// The normalised value y with its residual or gate r (residual(): 0 without either).
float combine(float y, float r) { return RES == 2u ? y * (r / (1.0 + exp(-r))) : y + r; }

// Head row r's row in the pool (KV): head r % heads of its token's pool row.
uint cache_row(uint r) {
    uint t = r / p.heads;
    return rlx_kv_row(t, rlx_pos(t)) * p.heads + (r - t * p.heads);
}

void copy_v(uint r, uint lane, uint size) {
    uint src = r * p.dv, dst = cache_row(r) * p.dv;
    for (uint d = lane; d < p.dv; d += size) vc[dst + d] = kv_store(vsrc[src + d]);
}

void norm_row(uint r, uint lane, uint size) {
    uint rot = ROPE != 0u ? p.n_rot : 0u, half_rot = rot / 2u, tail_half = (p.cols - rot + 1u) / 2u;
    uint slots = half_rot + tail_half, base = r * p.cols;
    float a[NS], b[NS], wa[NS], wb[NS], ra[NS], rb[NS];
    float ss = 0.0;
    [[unroll]] for (uint e = 0u; e < NS; e++) {
        uint s = lane + e * size;
        // clamped indices: every load is in bounds, and unused values are zeroed after the load
        uvec2 d = rope_slot(min(s, slots - 1u), rot, p.cols, ROPE == 2u);
        bool has_a = s < slots, has_b = has_a && d.y < p.cols;
        d = min(d, uvec2(p.cols - 1u));
        a[e] = x[base + d.x];
        wa[e] = w[d.x];
        b[e] = x[base + d.y];
        wb[e] = w[d.y];
        a[e] = has_a ? a[e] : 0.0;
        b[e] = has_b ? b[e] : 0.0;
        ra[e] = residual(base + d.x); // loaded with x: no round trip after the reduction
        rb[e] = residual(base + d.y);
        ss += a[e] * a[e] + b[e] * b[e];
    }
    for (uint s = lane + NS * size; s < slots; s += size) {
        uvec2 d = rope_slot(s, rot, p.cols, ROPE == 2u);
        ss += x[base + d.x] * x[base + d.x];
        if (d.y < p.cols) ss += x[base + d.y] * x[base + d.y];
    }
    if (KV == 2u) copy_v(r, lane, size); // its loads overlap the reduction
    ss = team_sum(ss);
    float k = inversesqrt(ss / float(p.cols) + p.eps) * p.scale;
    uint obase = KV != 0u ? cache_row(r) * p.cols : base;
    uint pos = ROPE != 0u ? rlx_pos(r / p.heads) : 0u;
    [[unroll]] for (uint e = 0u; e < NS; e++) {
        uint s = lane + e * size;
        if (s >= slots) continue;
        uvec2 d = rope_slot(s, rot, p.cols, ROPE == 2u);
        float y0 = combine(a[e] * k * wa[e], ra[e]), y1 = combine(b[e] * k * wb[e], rb[e]);
        if (ROPE != 0u && s < half_rot) {
            vec2 sc = sincos_turns(pos, step_turns[s]);
            o[obase + d.x] = kv_store(y0 * sc.y - y1 * sc.x);
            o[obase + d.y] = kv_store(y0 * sc.x + y1 * sc.y);
            continue;
        }
        o[obase + d.x] = kv_store(y0);
        if (d.y < p.cols) o[obase + d.y] = kv_store(y1);
    }
    for (uint s = lane + NS * size; s < slots; s += size) {
        uvec2 d = rope_slot(s, rot, p.cols, ROPE == 2u);
        float y0 = x[base + d.x] * k * w[d.x], y1 = 0.0;
        if (d.y < p.cols) y1 = x[base + d.y] * k * w[d.y];
        if (ROPE != 0u && s < half_rot) {
            vec2 sc = sincos_turns(pos, step_turns[s]);
            o[obase + d.x] = kv_store(y0 * sc.y - y1 * sc.x);
            o[obase + d.y] = kv_store(y0 * sc.x + y1 * sc.y);
            continue;
        }
        o[obase + d.x] = kv_store(combine(y0, residual(base + d.x)));
        if (d.y < p.cols) o[obase + d.y] = kv_store(combine(y1, residual(base + d.y)));
    }
}

void main() {
    uint valid = valid_rows(p.rows, p.tok);
    if (TEAM == 0u) {
        uint r = group_id();
        if (r < valid) norm_row(r, gl_LocalInvocationID.x, WG);
        return;
    }
    uint r0 = group_id() * R, r1 = min(r0 + R, valid);
    for (uint r = r0 + gl_SubgroupID; r < r1; r += gl_NumSubgroups)
        norm_row(r, gl_SubgroupInvocationID, gl_SubgroupSize);
}
