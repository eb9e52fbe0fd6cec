// ATTENTION (ir/ops.def), built for few query rows (decode), correct for any. One workgroup per
// (query row i, block of GW query heads of one kv head[, key split s]), so the heads that share a
// kv head (GQA) read its K and V once. Query i sits at pos = rlx_pos(i) and sees keys j in
// [lo, pos] (lo from the sliding window), clamped to the T keys bound. Padding rows are 0.
// PAGED (k and v are the session's pools): key j is the pool row of position j of row i's
// sequence (common.glsl rlx_page_row: one load of the page table per key, from a small buffer
// every lane reads alike); else k and v are this run's rows, key j row j, and pos = n_past + i.
//
// Flash decoding inside the workgroup: each subgroup walks its own keys, blocks of KB neighbours
// dealt out in turn, with its own online softmax (running max m, sum l, accumulators acc rescaled
// per block); its lanes split the head dims (EPL of K, EPV of V each), so a key's score is a few
// loads per lane and one subgroupAdd, and a block's K and V rows are one memory round trip. No
// barrier until the end, where the subgroups' (m, l, acc) meet in shared memory. (Walking all keys
// in chunks shared by the whole workgroup costs two barriers and a serial softmax per chunk, which
// at decode's few query rows leaves the kernel waiting on barriers rather than on memory.)
// SPLIT (long contexts, few query rows): the visible keys are cut into `splits` ranges, one
// workgroup each, which write their unnormalised partial (max, sum, acc[Dv]) for attn_combine.comp.
// EPL and EPV are planned for the device's smallest subgroup size, so any size it runs covers the
// head dims.
// ATTN_STEP (attention_step.comp; runtime/vk_fuse.c fuse_attention_step): one decode token, whose
// q/k norm, RoPE and K/V cache write come into this dispatch instead of a stage of their own. Each
// workgroup turns its GW query heads and the new key into shared memory (a subgroup per head, as
// rms_norm.comp does), one workgroup per kv head writes the new K and V rows into the caches, and
// no workgroup reads that cache row: the workgroup whose keys end at pos starts its subgroup 0's
// online softmax with the new key from shared memory, and the cache walk stops before it.
// F16 pools (RLX_KV_F16, the *_f16 kernels; only with PAGED): K and V rows are converted to float as
// they are loaded; ATTN_STEP rounds the new key and value to F16 in shared memory before anything
// uses them, so the new key is scored and the cache written with the same value, which later
// steps read back (cached == naive at every step, and no step sees a key other steps do not).
// Included by attention.comp, attention_step.comp (which defines ATTN_STEP) and
// attention_step_fixed.comp (ATTN_STEP and ATTN_FIXED), and their _f16 twins.
#include "common.glsl"
#include "kv_type.glsl"
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require

#ifdef ATTN_FIXED
// attention_step_fixed.comp: the usual decode plan (runtime/vk_lower.c attention_step_kernel) as
// constants of the source, where the driver sizes the arrays and unrolls the loops before it
// allocates registers (with specialization constants it may allocate for the general case). The
// host specializes both kernels alike; Vulkan ignores the entries of ids 1 and 3-5, which this one
// does not declare.
const uint GW = 1u, KB = 8u, EPL = 4u, EPV = 4u;
#else
layout(constant_id = 1) const uint GW = 1;    // query heads per workgroup (a divisor of H / H_kv)
layout(constant_id = 3) const uint KB = 8;    // keys per subgroup block
layout(constant_id = 4) const uint EPL = 4;   // K dims per lane (ceil(dh / smallest subgroup size))
layout(constant_id = 5) const uint EPV = 4;   // V dims per lane
#endif
layout(constant_id = 2) const uint SPLIT = 0;
#ifdef ATTN_STEP
const uint PAGED = 1u; // the step writes the new key into the pool
#else
layout(constant_id = 7) const uint PAGED = 1;
#endif
layout(constant_id = 6) const uint DPT = 1;   // output dims per invocation (ceil(dv / WG))

#ifdef ATTN_STEP
#include "rope.glsl"
layout(constant_id = 7) const uint ROPE = 2;    // 1 NORMAL pairs, 2 NEOX pairs
layout(constant_id = 8) const uint QK_NORM = 1; // 1: q and k rows are RMS-normalised before RoPE
layout(constant_id = 9) const uint PD = 128;    // floats per row of prep (>= dh, dv)
#define CACHE_ACCESS // row pos of the caches is written
#else
#define CACHE_ACCESS readonly
#endif

layout(set = 1, binding = 0) readonly buffer Q { float q[]; }; // ATTN_STEP: before norm and RoPE
layout(set = 1, binding = 1) CACHE_ACCESS buffer K { kv_t k[]; };
layout(set = 1, binding = 2) CACHE_ACCESS buffer V { kv_t v[]; };
layout(set = 1, binding = 3) writeonly buffer O { float o[]; };
layout(set = 1, binding = 4) writeonly buffer Part { float part[]; }; // SPLIT: [(i H + h) splits + s][Dv + 2]
#ifdef ATTN_STEP
layout(set = 1, binding = 5) readonly buffer KN { float knew[]; }; // the token's K rows [H_kv, dh], before norm and RoPE
layout(set = 1, binding = 6) readonly buffer VN { float vnew[]; }; // the token's V rows [H_kv, dv]
layout(set = 1, binding = 7) readonly buffer QW { float qw[]; };   // QK_NORM: the q norm's weights [dh]
layout(set = 1, binding = 8) readonly buffer KW { float kw[]; };   // QK_NORM: the k norm's weights [dh]
layout(set = 1, binding = 9) readonly buffer QT { uvec2 q_turns[]; }; // RoPE angle steps (rope.glsl)
layout(set = 1, binding = 10) readonly buffer KT { uvec2 k_turns[]; };
#endif

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
    uint splits;
#ifdef ATTN_STEP
    uint n_rot;
    float q_eps;
    float k_eps;
#endif
} p;

shared float sm[GW * WG], sl[GW * WG]; // per (head, subgroup): its max, its weighted sum
shared float so[GW * DPT * WG];           // per (head, dim): the subgroups' scaled acc, summed

// Per (subgroup, head, dim): the subgroups' scaled acc side by side, where they fit in 8 KB (the
// rest of the kernel's shared memory is within 32 KB with it); a meeting with one barrier instead of
// one per subgroup, since each barrier stalls the whole workgroup on its slowest subgroup.
const uint SUBS_CAP = 2048u;
shared float subs[SUBS_CAP];

// Dim d of head g's weighted acc summed over the ns subgroups (see the meeting in main).
float met(uint g, uint d, uint ns, bool side) {
    if (!side) return so[g * DPT * WG + d];
    float v = 0.0;
    for (uint s = 0u; s < ns; s++) v += subs[(s * GW + g) * p.dv + d];
    return v;
}

float qr[GW * EPL];                // this lane's share of the GW query rows
float m[GW], l[GW], acc[GW * EPV]; // this subgroup's online softmax over its keys

// Two blocks of KB keys' K and V rows (buffer 0 and 1): while one is scored, the other's loads are
// in flight, and each is refilled as soon as it is scored, so that a subgroup's first two blocks
// are loaded together before the query rows are prepared: a walk of more than one block then
// waits for one memory round trip fewer, in the registers that one block ahead would take anyway.
float k0[KB * EPL], v0[KB * EPV], k1[KB * EPL], v1[KB * EPV];

uint pages; // PAGED: where the query row's page table starts (rlx_pages_of)

// The row of k and v holding key j.
uint key_row(uint j) { return PAGED != 0u ? rlx_page_row(pages, j) : j; }

// Issues the loads of the KB keys from j0 into buffer b (rows past hi repeat row hi); b is a
// constant wherever this is inlined, so no branch remains.
void load_block(uint j0, uint hi, uint kvh, uint kv_row, bool b) {
    uint lane = gl_SubgroupInvocationID, sgs = gl_SubgroupSize;
    [[unroll]] for (uint kb = 0u; kb < KB; kb++) {
        uint row = key_row(min(j0 + kb, hi)) * kv_row + kvh;
        [[unroll]] for (uint e = 0u; e < EPL; e++) {
            float x = float(k[row * p.dh + min(lane + e * sgs, p.dh - 1u)]);
            if (b) k1[kb * EPL + e] = x; else k0[kb * EPL + e] = x;
        }
        [[unroll]] for (uint e = 0u; e < EPV; e++) {
            float x = float(v[row * p.dv + min(lane + e * sgs, p.dv - 1u)]);
            if (b) v1[kb * EPV + e] = x; else v0[kb * EPV + e] = x;
        }
    }
}

// The block in buffer b from j0 (keys past hi are masked): scores, then the online update.
void attend_block(uint j0, uint hi, bool b) {
    [[unroll]] for (uint g = 0u; g < GW; g++) {
        float sc[KB], mc = m[g];
        [[unroll]] for (uint kb = 0u; kb < KB; kb++) {
            float dot = 0.0; // qr is 0 past dh
            [[unroll]] for (uint e = 0u; e < EPL; e++) dot += qr[g * EPL + e] * (b ? k1[kb * EPL + e] : k0[kb * EPL + e]);
            sc[kb] = j0 + kb <= hi ? subgroupAdd(dot) * p.scale : -1.0 / 0.0;
            mc = max(mc, sc[kb]);
        }
        float corr = exp(m[g] - mc); // 0 on the first block (m = -inf); key j0 is visible, so mc is finite
        l[g] *= corr;
        [[unroll]] for (uint e = 0u; e < EPV; e++) acc[g * EPV + e] *= corr;
        [[unroll]] for (uint kb = 0u; kb < KB; kb++) {
            float pj = exp(sc[kb] - mc);
            l[g] += pj;
            [[unroll]] for (uint e = 0u; e < EPV; e++) acc[g * EPV + e] += pj * (b ? v1[kb * EPV + e] : v0[kb * EPV + e]);
        }
        m[g] = mc;
    }
}

#ifdef ATTN_STEP
shared float prep[(GW + 2u) * PD]; // rows: the GW query heads, the new key, the new value

// Row r of prep (r < GW: query head h0 + r of row 0; GW: the new key of kv head kvh), normalised and
// turned, by one subgroup; each lane keeps to its own slots (rope_slot), so none reads another's.
// A lane's values, norm weights and angle steps are loaded together: the weights and steps come
// from memory every step (the weights of the layers between evict them), and loaded after the
// sums of squares they would be a second round trip.
void prep_row(uint r, uint h0, uint kvh, uint pos) {
    bool is_q = r < GW;
    uint base = is_q ? (h0 + r) * p.dh : kvh * p.dh, pr = r * PD, lane = gl_SubgroupInvocationID;
    uint rot = ROPE != 0u ? p.n_rot : 0u, slots = rot / 2u + (p.dh - rot + 1u) / 2u;
    float va[EPL], vb[EPL], wa[EPL], wb[EPL]; // vb 0 where the slot's second dim is past dh
    uvec2 dims[EPL], turns[EPL];
    [[unroll]] for (uint e = 0u; e < EPL; e++) {
        uint s = min(lane + e * gl_SubgroupSize, slots - 1u);
        uvec2 d = rope_slot(s, rot, p.dh, ROPE == 2u);
        uint dy = min(d.y, p.dh - 1u), ts = rot > 1u ? min(s, rot / 2u - 1u) : 0u;
        dims[e] = d;
        va[e] = is_q ? q[base + d.x] : knew[base + d.x];
        float b = is_q ? q[base + dy] : knew[base + dy]; // loaded unconditionally, with the rest
        vb[e] = d.y < p.dh ? b : 0.0;
        wa[e] = QK_NORM != 0u ? (is_q ? qw[d.x] : kw[d.x]) : 1.0;
        wb[e] = QK_NORM != 0u ? (is_q ? qw[dy] : kw[dy]) : 1.0;
        turns[e] = rot > 1u ? (is_q ? q_turns[ts] : k_turns[ts]) : uvec2(0u); // no angle is bound without RoPE
    }
    float ss = 0.0;
    [[unroll]] for (uint e = 0u; e < EPL; e++)
        if (lane + e * gl_SubgroupSize < slots) ss += va[e] * va[e] + vb[e] * vb[e];
    float rs = QK_NORM != 0u ? inversesqrt(subgroupAdd(ss) / float(p.dh) + (is_q ? p.q_eps : p.k_eps)) : 1.0;
    [[unroll]] for (uint e = 0u; e < EPL; e++) {
        uint s = lane + e * gl_SubgroupSize;
        if (s >= slots) continue;
        uvec2 d = dims[e];
        float a = va[e] * rs * wa[e], b = vb[e] * rs * wb[e];
        if (s < rot / 2u) {
            vec2 sc = sincos_turns(pos, turns[e]);
            float a2 = a * sc.y - b * sc.x;
            b = a * sc.x + b * sc.y;
            a = a2;
        }
        if (!is_q) { // the value the cache will hold
            a = kv_round(a);
            b = kv_round(b);
        }
        prep[pr + d.x] = a;
        if (d.y < p.dh) prep[pr + d.y] = b;
    }
}
#endif

void main() {
    uint gid = group_id(), splits = SPLIT != 0u ? p.splits : 1u, blocks = p.heads / GW;
    uint sp_i = gid % splits, ib = gid / splits;
    uint i = ib / blocks, h0 = (ib % blocks) * GW, t = gl_LocalInvocationID.x;
    if (i >= p.rows) return;
    bool empty = i >= valid_rows(p.rows, p.tok) || p.t == 0u;
    if (empty && SPLIT != 0u) return; // split partials of padding rows are never combined
    uint pos = PAGED != 0u ? rlx_pos(i) : rlx.n_past + i;
    pages = PAGED != 0u ? rlx_pages_of(i) : 0u;
    uint hi = empty ? 0u : min(pos, p.t - 1u);
    uint lo = empty ? 1u : (p.window > 0u && pos + 1u > p.window) ? pos + 1u - p.window : 0u;
    if (SPLIT != 0u && lo <= hi) { // this workgroup's share of [lo, hi]; may be empty
        uint per = (hi - lo + splits) / splits, first = lo + sp_i * per;
        hi = min(hi, first + per - 1u);
        lo = first;
    }
    uint kvh = h0 / (p.heads / p.kv_heads), kv_row = p.kv_heads;
    uint lane = gl_SubgroupInvocationID, sgs = gl_SubgroupSize, sg = gl_SubgroupID, ns = gl_NumSubgroups;

    [[unroll]] for (uint g = 0u; g < GW; g++) {
        m[g] = -1.0 / 0.0;
        l[g] = 0.0;
        [[unroll]] for (uint e = 0u; e < EPV; e++) acc[g * EPV + e] = 0.0;
    }
#ifdef ATTN_STEP
    bool has_new = !empty && lo <= hi && hi == pos; // the new key is this workgroup's to attend
    bool walk = has_new ? hi > lo : lo <= hi;       // the cache's keys stop before the new one
    if (has_new) hi -= 1u;
#else
    bool walk = lo <= hi;
#endif
    uint j0 = lo + sg * KB, step = ns * KB;
    walk = walk && j0 <= hi; // this subgroup has keys to walk
    // The cache rows walked were written by earlier dispatches, so their first blocks' loads go out
    // before the query rows are read and prepared: the cache's round trip overlaps the preparation.
    if (walk) load_block(j0, hi, kvh, kv_row, false);
    if (walk && j0 + step <= hi) load_block(j0 + step, hi, kvh, kv_row, true);
#ifdef ATTN_STEP
    for (uint r = sg; r <= GW; r += ns) prep_row(r, h0, kvh, pos);
    for (uint d = t; d < p.dv; d += WG) prep[(GW + 1u) * PD + d] = kv_round(vnew[kvh * p.dv + d]);
    barrier();
    if (!empty && h0 % (p.heads / p.kv_heads) == 0u && sp_i == 0u) { // one writer per kv head
        uint row = key_row(pos) * kv_row + kvh;
        for (uint d = t; d < p.dh; d += WG) k[row * p.dh + d] = kv_store(prep[GW * PD + d]);
        for (uint d = t; d < p.dv; d += WG) v[row * p.dv + d] = kv_store(prep[(GW + 1u) * PD + d]);
    }
    [[unroll]] for (uint g = 0u; g < GW; g++)
        [[unroll]] for (uint e = 0u; e < EPL; e++) {
            uint d = lane + e * sgs;
            qr[g * EPL + e] = d < p.dh ? prep[g * PD + d] : 0.0;
        }
    if (has_new && sg == 0u)
        [[unroll]] for (uint g = 0u; g < GW; g++) {
            float dot = 0.0;
            [[unroll]] for (uint e = 0u; e < EPL; e++) {
                uint d = lane + e * sgs;
                dot += qr[g * EPL + e] * prep[GW * PD + min(d, p.dh - 1u)]; // qr is 0 past dh
            }
            m[g] = subgroupAdd(dot) * p.scale;
            l[g] = 1.0;
            [[unroll]] for (uint e = 0u; e < EPV; e++) {
                uint d = lane + e * sgs;
                acc[g * EPV + e] = d < p.dv ? prep[(GW + 1u) * PD + d] : 0.0;
            }
        }
#else
    [[unroll]] for (uint g = 0u; g < GW; g++)
        [[unroll]] for (uint e = 0u; e < EPL; e++) {
            uint d = lane + e * sgs;
            qr[g * EPL + e] = d < p.dh ? q[((i * p.heads + h0 + g) * p.dh) + d] : 0.0;
        }
#endif
    // Blocks alternate between the buffers; a buffer is refilled with the block two ahead.
    if (walk)
        for (; j0 <= hi; j0 += 2u * step) {
            attend_block(j0, hi, false);
            if (j0 + 2u * step <= hi) load_block(j0 + 2u * step, hi, kvh, kv_row, false);
            if (j0 + step > hi) break;
            attend_block(j0 + step, hi, true);
            if (j0 + 3u * step <= hi) load_block(j0 + 3u * step, hi, kvh, kv_row, true);
        }

    // The subgroups meet: the overall max M, each subgroup's weight e^(m - M) (0 for one that saw
    // no key), its weighted sum, then its weighted acc: side by side in subs where all fit (one
    // barrier), else added into so one subgroup at a time (a barrier each; the same sums, in the
    // same order).
    if (subgroupElect())
        [[unroll]] for (uint g = 0u; g < GW; g++) sm[g * WG + sg] = m[g];
    bool side = ns * GW * p.dv <= SUBS_CAP;
    if (!side)
        for (uint x = t; x < GW * DPT * WG; x += WG) so[x] = 0.0;
    barrier();
    float big[GW], wsub[GW]; // the overall max; this subgroup's weight
    [[unroll]] for (uint g = 0u; g < GW; g++) {
        big[g] = -1.0 / 0.0;
        for (uint s = 0u; s < ns; s++) big[g] = max(big[g], sm[g * WG + s]);
        wsub[g] = m[g] > -1.0 / 0.0 ? exp(m[g] - big[g]) : 0.0;
    }
    if (subgroupElect())
        [[unroll]] for (uint g = 0u; g < GW; g++) sl[g * WG + sg] = l[g] * wsub[g];
    if (side) {
        [[unroll]] for (uint g = 0u; g < GW; g++)
            [[unroll]] for (uint e = 0u; e < EPV; e++) {
                uint d = lane + e * sgs;
                if (d < p.dv) subs[(sg * GW + g) * p.dv + d] = acc[g * EPV + e] * wsub[g];
            }
        barrier();
    } else
        for (uint s = 0u; s < ns; s++) {
            if (s == sg)
                [[unroll]] for (uint g = 0u; g < GW; g++)
                    [[unroll]] for (uint e = 0u; e < EPV; e++) {
                        uint d = lane + e * sgs;
                        if (d < p.dv) so[g * DPT * WG + d] += acc[g * EPV + e] * wsub[g];
                    }
            barrier();
        }

    [[unroll]] for (uint g = 0u; g < GW; g++) {
        uint ih = i * p.heads + h0 + g;
        float sum = 0.0;
        for (uint s = 0u; s < ns; s++) sum += sl[g * WG + s];
        if (SPLIT != 0u) {
            uint pb = (ih * splits + sp_i) * (p.dv + 2u);
            if (t == 0u) {
                part[pb] = big[g];
                part[pb + 1u] = sum;
            }
            [[unroll]] for (uint e = 0u; e < DPT; e++)
                if (t + e * WG < p.dv) part[pb + 2u + t + e * WG] = met(g, t + e * WG, ns, side);
            continue;
        }
        float inv = sum > 0.0 ? 1.0 / sum : 0.0; // no visible key: 0, as the CPU reference
        [[unroll]] for (uint e = 0u; e < DPT; e++)
            if (t + e * WG < p.dv) o[ih * p.dv + t + e * WG] = met(g, t + e * WG, ns, side) * inv;
    }
}
