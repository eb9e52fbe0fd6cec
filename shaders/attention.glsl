// ATTENTION (ir/ops.def), built for few query rows (decode), correct for any. One workgroup per
// (query row i, block of GW query heads of one kv head[, key split s]), so the heads that share a
// kv head (GQA) read its K and V once. Query i sits at pos = rlx_pos(i) and sees keys j in
// [lo, pos] (lo from the sliding window), clamped to the T keys bound. Padding rows are 0.
// PAGED (k and v are the session's pools): key j is the pool row of position j of row i's
// sequence (common.glsl rlx_page_row: one load of the page table per key, from a small buffer
// every lane reads alike); else k and v are this run's rows, key j row j, and pos = n_past + i.
//
// Flash decoding inside the workgroup: each subgroup walks its own keys, blocks of KB x G neighbours
// dealt out in turn, with its own online softmax (running max m, sum l, accumulators acc rescaled
// per block). A subgroup is G = subgroup size / LPK groups of LPK lanes; each group takes KB keys of
// the block, and its lanes split the head dims (EPL of K, EPV of V each, in units of VEC
// consecutive elements, one load each: lane u's unit x holds dims ((x LPK + u) VEC ...+ VEC), so a
// unit of the group's lanes is one contiguous run of the row), so a key's score is a few loads per
// lane and a sum over LPK lanes (log2 LPK shuffles, for G keys at once), and a block's K and V rows
// are one memory round trip. By default LPK is the whole subgroup (G = 1: runtime/vk_plan.c
// vk_attention_lanes says why); the groups' (m, l, acc) merge at the end of the walk (shuffles),
// and the subgroups' meet in shared memory, the only barrier. (Walking all keys
// in chunks shared by the whole workgroup costs two barriers and a serial softmax per chunk, which
// at decode's few query rows leaves the kernel waiting on barriers rather than on memory.)
// SPLIT (long contexts, few query rows): the visible keys are cut into `splits` ranges, one
// workgroup each, which write their unnormalised partial (max, sum, acc[Dv]) for attn_combine.comp.
// LPK is at most the device's smallest subgroup size, so any size it runs holds whole groups.
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
#extension GL_KHR_shader_subgroup_shuffle : require

#ifdef ATTN_FIXED
// attention_step_fixed.comp: the usual decode plan (runtime/vk_lower.c attention_step_kernel) as
// constants of the source, where the driver sizes the arrays and unrolls the loops before it
// allocates registers (with specialization constants it may allocate for the general case). The
// host specializes both kernels alike; Vulkan ignores the entries of ids 1, 3-5 and 11, which this
// one does not declare.
const uint GW = 1u, KB = 8u, EPL = 4u, EPV = 4u, VEC = 4u; // runtime/vk_lower.c attention_step_kernel
#else
layout(constant_id = 1) const uint GW = 1;    // query heads per workgroup (a divisor of H / H_kv)
layout(constant_id = 3) const uint KB = 8;    // keys per lane group and block
layout(constant_id = 4) const uint EPL = 4;   // K dims per lane (ceil(dh / LPK), in whole units of VEC)
layout(constant_id = 5) const uint EPV = 4;   // V dims per lane
#endif
// Lanes per key (a power of 2, at most the smallest subgroup size); elements per load unit: 1, 2 or
// 4 (dividing dh, dv, EPL and EPV). Ids 8 and 9, or 10 and 11 after ATTN_STEP's.
#ifdef ATTN_STEP
layout(constant_id = 10) const uint LPK = 32;
#ifndef ATTN_FIXED
layout(constant_id = 11) const uint VEC = 1;
#endif
#else
layout(constant_id = 8) const uint LPK = 32;
layout(constant_id = 9) const uint VEC = 1;
#endif
const uint UL = EPL / VEC, UV = EPV / VEC;    // load units per lane of a K row, of a V row
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
// The caches again, in load units of 4 and 2 elements (VEC); the walk reads only these, or k and v
// where VEC is 1.
layout(set = 1, binding = 1) readonly buffer K4 { kvu_t k4[]; };
layout(set = 1, binding = 2) readonly buffer V4 { kvu_t v4[]; };
layout(set = 1, binding = 1) readonly buffer K2 { kv2u_t k2[]; };
layout(set = 1, binding = 2) readonly buffer V2 { kv2u_t v2[]; };
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

// Per (subgroup, head, dim): the subgroups' scaled acc side by side, where they fit in 8 KB, or 32
// bytes an invocation in workgroups wider than 256 (runtime/vk_plan.c attention_shared counts it);
// a meeting with one barrier instead of one per subgroup, since each barrier stalls the whole
// workgroup on its slowest subgroup.
const uint SUBS_CAP = WG > 256u ? 8u * WG : 2048u;
shared float subs[SUBS_CAP];

// Dim d of head g's weighted acc summed over the ns subgroups (see the meeting in main).
float met(uint g, uint d, uint ns, bool side) {
    if (!side) return so[g * DPT * WG + d];
    float v = 0.0;
    for (uint s = 0u; s < ns; s++) v += subs[(s * GW + g) * p.dv + d];
    return v;
}

float qr[GW * EPL];                // this lane's share of the GW query rows
float m[GW], l[GW], acc[GW * EPV]; // this lane group's online softmax over its keys

// Two blocks of KB keys' K and V rows (buffer 0 and 1): while one is scored, the other's loads are
// in flight, and each is refilled as soon as it is scored, so that a subgroup's first two blocks
// are loaded together before the query rows are prepared: a walk of more than one block then
// waits for one memory round trip fewer, in the registers that one block ahead would take anyway.
kvu_t k0[KB * UL], v0[KB * UV], k1[KB * UL], v1[KB * UV];

uint pages; // PAGED: where the query row's page table starts (rlx_pages_of)

// The row of k and v holding key j.
uint key_row(uint j) { return PAGED != 0u ? rlx_page_row(pages, j) : j; }

// Lane u's (u = lane % LPK) element i of its unit x, in a row of n elements: its dim (n or more:
// none), and where its unit starts (clamped into the row, so every load is in bounds).
uint unit_dim(uint x, uint i) { return ((x * LPK + gl_SubgroupInvocationID % LPK) * VEC) + i; }
uint unit_at(uint x, uint n) { return min(unit_dim(x, 0u), n - VEC); }

kvu_t load_k(uint at) {
    if (VEC == 4u) return k4[at >> 2u];
    if (VEC == 2u) return kvu_of2(k2[at >> 1u]);
    return kvu_of1(k[at]);
}

kvu_t load_v(uint at) {
    if (VEC == 4u) return v4[at >> 2u];
    if (VEC == 2u) return kvu_of2(v2[at >> 1u]);
    return kvu_of1(v[at]);
}

// x summed over the LPK lanes of each group (every lane of the group gets it).
float group_add(float x) {
    [[unroll]] for (uint o = LPK >> 1u; o > 0u; o >>= 1u) x += subgroupShuffleXor(x, o);
    return x;
}

// Issues the loads of this lane group's KB keys of the block from j0 into buffer b (rows past hi
// repeat row hi); b is a constant wherever this is inlined, so no branch remains.
void load_block(uint j0, uint hi, uint kvh, uint kv_row, bool b) {
    uint first = j0 + (gl_SubgroupInvocationID / LPK) * KB;
    [[unroll]] for (uint kb = 0u; kb < KB; kb++) {
        uint row = key_row(min(first + kb, hi)) * kv_row + kvh;
        [[unroll]] for (uint x = 0u; x < UL; x++) {
            kvu_t w = load_k(row * p.dh + unit_at(x, p.dh));
            if (b) k1[kb * UL + x] = w; else k0[kb * UL + x] = w;
        }
        [[unroll]] for (uint x = 0u; x < UV; x++) {
            kvu_t w = load_v(row * p.dv + unit_at(x, p.dv));
            if (b) v1[kb * UV + x] = w; else v0[kb * UV + x] = w;
        }
    }
}

// The group's keys of the block in buffer b from j0 (keys past hi are masked): scores, then the
// online update. A key's K units are converted once for all GW heads, and so are its V units.
void attend_block(uint j0, uint hi, bool b) {
    uint first = j0 + (gl_SubgroupInvocationID / LPK) * KB;
    float sc[GW * KB];
    [[unroll]] for (uint kb = 0u; kb < KB; kb++) {
        float kf[EPL];
        [[unroll]] for (uint x = 0u; x < UL; x++)
            [[unroll]] for (uint i = 0u; i < VEC; i++) kf[x * VEC + i] = kvu_get(b ? k1[kb * UL + x] : k0[kb * UL + x], i);
        [[unroll]] for (uint g = 0u; g < GW; g++) {
            float dot = 0.0; // qr is 0 past dh
            [[unroll]] for (uint e = 0u; e < EPL; e++) dot += qr[g * EPL + e] * kf[e];
            sc[g * KB + kb] = first + kb <= hi ? group_add(dot) * p.scale : -1.0 / 0.0;
        }
    }
    [[unroll]] for (uint g = 0u; g < GW; g++) {
        float mc = m[g];
        [[unroll]] for (uint kb = 0u; kb < KB; kb++) mc = max(mc, sc[g * KB + kb]);
        // the group's keys may all be masked (mc -inf: nothing changes); else corr is 0 on its first keys
        float corr = mc > -1.0 / 0.0 ? exp(m[g] - mc) : 1.0;
        l[g] *= corr;
        [[unroll]] for (uint e = 0u; e < EPV; e++) acc[g * EPV + e] *= corr;
        [[unroll]] for (uint kb = 0u; kb < KB; kb++) {
            float s = sc[g * KB + kb];
            sc[g * KB + kb] = s > -1.0 / 0.0 ? exp(s - mc) : 0.0;
            l[g] += sc[g * KB + kb];
        }
        m[g] = mc;
    }
    [[unroll]] for (uint kb = 0u; kb < KB; kb++) {
        float vf[EPV];
        [[unroll]] for (uint x = 0u; x < UV; x++)
            [[unroll]] for (uint i = 0u; i < VEC; i++) vf[x * VEC + i] = kvu_get(b ? v1[kb * UV + x] : v0[kb * UV + x], i);
        [[unroll]] for (uint g = 0u; g < GW; g++)
            [[unroll]] for (uint e = 0u; e < EPV; e++) acc[g * EPV + e] += sc[g * KB + kb] * vf[e];
    }
}

// The G lane groups of each subgroup merge their (m, l, acc): pairs of groups o lanes apart swap
// theirs and both keep the same sum, so afterwards every group holds the subgroup's.
void merge_groups() {
    for (uint o = LPK; o < gl_SubgroupSize; o <<= 1u)
        [[unroll]] for (uint g = 0u; g < GW; g++) {
            float mo = subgroupShuffleXor(m[g], o), lo = subgroupShuffleXor(l[g], o), mn = max(m[g], mo);
            float wa = m[g] > -1.0 / 0.0 ? exp(m[g] - mn) : 0.0, wb = mo > -1.0 / 0.0 ? exp(mo - mn) : 0.0;
            l[g] = l[g] * wa + lo * wb;
            [[unroll]] for (uint e = 0u; e < EPV; e++)
                acc[g * EPV + e] = acc[g * EPV + e] * wa + subgroupShuffleXor(acc[g * EPV + e], o) * wb;
            m[g] = mn;
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
    uint lane = gl_SubgroupInvocationID, sg = gl_SubgroupID, ns = gl_NumSubgroups;

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
    uint keys = KB * (gl_SubgroupSize / LPK); // a subgroup's block
    uint j0 = lo + sg * keys, step = ns * keys;
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
            uint d = unit_dim(e / VEC, e % VEC);
            qr[g * EPL + e] = d < p.dh ? prep[g * PD + d] : 0.0;
        }
    if (has_new && sg == 0u) // every group scores it (the sums span a group); group 0 keeps it
        [[unroll]] for (uint g = 0u; g < GW; g++) {
            float dot = 0.0;
            [[unroll]] for (uint e = 0u; e < EPL; e++) // qr is 0 past dh
                dot += qr[g * EPL + e] * prep[GW * PD + min(unit_dim(e / VEC, e % VEC), p.dh - 1u)];
            dot = group_add(dot) * p.scale;
            if (lane < LPK) {
                m[g] = dot;
                l[g] = 1.0;
                [[unroll]] for (uint e = 0u; e < EPV; e++) {
                    uint d = unit_dim(e / VEC, e % VEC);
                    acc[g * EPV + e] = d < p.dv ? prep[(GW + 1u) * PD + d] : 0.0;
                }
            }
        }
#else
    [[unroll]] for (uint g = 0u; g < GW; g++)
        [[unroll]] for (uint e = 0u; e < EPL; e++) {
            uint d = unit_dim(e / VEC, e % VEC);
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
    merge_groups(); // every lane of the subgroup, walking or not (the shuffles read partners)

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
    // group 0's lanes hold the subgroup's acc (merge_groups); their dims cover dv once
    if (side) {
        [[unroll]] for (uint g = 0u; g < GW; g++)
            [[unroll]] for (uint e = 0u; e < EPV; e++) {
                uint d = unit_dim(e / VEC, e % VEC);
                if (lane < LPK && d < p.dv) subs[(sg * GW + g) * p.dv + d] = acc[g * EPV + e] * wsub[g];
            }
        barrier();
    } else
        for (uint s = 0u; s < ns; s++) {
            if (s == sg)
                [[unroll]] for (uint g = 0u; g < GW; g++)
                    [[unroll]] for (uint e = 0u; e < EPV; e++) {
                        uint d = unit_dim(e / VEC, e % VEC);
                        if (lane < LPK && d < p.dv) so[g * DPT * WG + d] += acc[g * EPV + e] * wsub[g];
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
