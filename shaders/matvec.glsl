// MATMUL for few rows of x (decode, small batches), for the weight types most models are made of:
// F32, F16, BF16, Q8_0, Q4_K, Q6_K (runtime/vk_plan.c sends other types to matmul.comp).
// out[r, m0 + m] = epilogue(sum_k x[r, k] * w[m, k]) for the weight rows [m0, m0 + m_rows) held by
// this binding (large weights come in row parts).
// NORM: x is RMS_NORM(x, nw) of the raw rows bound (the norm has no dispatch of its own, a stage
// fewer in decode): x is multiplied by nw as it is loaded, each row's sum of squares is gathered on
// the way, from the same loads, and meets in the final reduction with the dot products, which are
// then scaled by rsqrt(mean + eps). No barrier comes before the weight loads.
// GATE: the gated FFN's act(x Wg) * (x Wu) in one dispatch (the gate projection needs no dispatch
// and no stage of its own): of a group's R rows, the first R / 2 are rows of Wu (binding 1) and
// the last R / 2 the same rows of Wg (binding 5), so the pair meets in the final reduction.
// NORM 2 (SCALED): x is the RMS_NORM input times the norm's weights, written by the POST matvec
// that computed the input; the sums are scaled by the rsqrt(mean + eps) it left in its sync block
// (bound at binding 4). Nothing is added to the loop over x.
// POST (one x row, one weight part): the residual row this matvec writes is also read by an
// RMS_NORM: each output is written times pw (for SCALED readers), each workgroup leaves the sum of
// squares of its outputs in the sync block (binding 8) and counts itself done, and the last one
// sums them and leaves rsqrt(mean + eps). The norm then has no dispatch and no stage of its own.
// POST 2 (ARGMAX, one x row, one weight part): the index of the row's maximum (its first index)
// goes to binding 6. Workgroups leave their maxima, the last of each TEAM of workgroups reduces
// its team's, and the last of those the teams': the argmax has no dispatch and no stage of its own.
// As in shaders/argmax.comp, NaN is read as +inf and an infinite maximum gives -1 (ir/ops.def).
// EXPERTS (a MoE FFN in decode, runtime/vk_lower_moe.c moe_matvec; NX 1; bits): the routed experts' rows
// take this kernel's loads instead of a per-value decode. Slot s of x row c is the s-th expert that
// route row c (binding 7) routes to (nonzero weight, in index order: shaders/moe_mv.comp's slots);
// each subgroup finds the experts it needs itself, a round trip to L2 but no barrier before the
// weight loads. A slot the row does not route to reads expert 0.
//  1: the weights are all experts' gate and up rows [E x F, k]; output row v is row e * F + v % F,
//     e the expert of slot v / F (with GATE: the hidden rows h [slots, F] of the FFN).
//  2: ... each up row's sum times its slot's route weight (0 for a slot not routed to), so that h
//     is weighted and the down pass one matvec.
//  4: the down pass: x is the weighted h, [slots x F], and output row d's weight row is the
//     concatenation over the slots of row d of the slot's expert [D, F]: unit addresses go through
//     wblock, which finds the slot's expert for each block.
//  8: EPI_ADD's aux is multiplied by sigmoid(binding 9 [rows]) (a gated shared expert), and
// 16: binding 10 is added as well (the residual): the sums after a MoE FFN in the graph.
// WARM (the last matvec before a decode attention, runtime/vk_fuse.c mark_warm): the workgroups
// also read the K and V cache rows that attention will walk (positions below row 0's, the most recent
// that one 16-byte word per invocation covers) so that it finds them in L2, not in memory; the
// loads go out before the weights' and feed only a shared-memory atomic.
//
// Decode is bound by the weight read, and a GPU reaches its bandwidth only with megabytes of loads
// in flight (its bandwidth times its memory latency), so the layout is about independent loads:
//  - a workgroup is G = WG / T groups of T threads; a group owns R weight rows, and its T threads
//    split K into units of a few to a few dozen bytes, thread i taking units i, i + T, .. . Each
//    loop trip first issues the loads of UNR units of all R rows, then does the arithmetic;
//    neighbouring threads read neighbouring bytes, so each warp-wide load touches few cache lines.
//  - the R rows of a thread share its x loads, which would otherwise cost more L1 traffic than the
//    weights themselves (x is f32; the weights of decode-heavy models 4.5 to 16 bits).
//  - 16-byte loads where the type keeps rows 16-aligned (F32 with K % 4 == 0, F16/BF16 with
//    K % 8 == 0, Q4_K's 144-byte blocks); aligned 32-bit words, funnel-shifted, for the 2-aligned
//    fields of Q8_0 (34-byte blocks) and Q6_K (210 bytes); never a byte at a time.
//  - quants become floats through the exponent (q | 0x4B000000 is the float 2^23 + q): exact, and two
//    full-rate operations, where a conversion instruction runs at 16 per clock and SM against 128
//    FP32 operations (CUDA programming guide, arithmetic instruction throughput, compute capability 9.0).
//    Block scales are decoded once per unit, not per value.
//  - sums meet through subgroupAdd and one pass over shared memory: a single barrier.
// Groups are made of whole subgroups (thread and group numbers come from the subgroup numbers), so
// any subgroup size works as long as it divides T (the host picks T as a multiple of the device's
// subgroup size, >= R * NX) and is at least 4 (the size of `red`).
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require

layout(constant_id = 1) const uint W_TYPE = 0;
layout(constant_id = 2) const uint NX = 1; // rows of x per workgroup
layout(constant_id = 3) const uint EPI = 0;
layout(constant_id = 4) const uint R = 1;  // weight rows per group
layout(constant_id = 5) const uint T = 64; // threads per group
layout(constant_id = 6) const uint NORM = 0; // 1: x is RMS_NORM(x, nw); 2: SCALED; see above
layout(constant_id = 7) const uint GATE = 0; // 1: rows R / 2.. are gate rows (binding 5), see above; EPI *_MUL
layout(constant_id = 8) const uint POST = 0; // 1: a norm's factor, 2: ARGMAX; see above
layout(constant_id = 9) const uint UNR_PLAIN = 2; // units per thread and trip for F32, F16, BF16
layout(constant_id = 10) const uint WARM = 0; // 1: read the cache rows at bindings 9 and 10, see above
layout(constant_id = 11) const uint EXPERTS = 0; // bits: rows chosen through the route (binding 7), see above
#define EPI_NONE 0u
#define EPI_ADD 1u      // out = aux + dot (residual add fused in)
#define EPI_SILU_MUL 2u // out = silu(aux) * dot (gated FFN: aux is the gate projection; under GATE, the gate rows)
#define EPI_GELU_MUL 3u // out = gelu_tanh(aux) * dot

// MATVEC_STREAM (matvec_stream.comp): the weights are declared coherent, which asks the driver for
// loads that see other invocations' writes, so it cannot serve them from the SM's L1; each weight
// byte is read once, and x and the folded norm's weights keep the L1 to themselves; for long rows
// the weight stream would otherwise evict x. runtime/vk_plan.c vk_matvec_kernel says where it is used.
#ifdef MATVEC_STREAM
#define W_ACCESS coherent readonly
#else
#define W_ACCESS readonly
#endif
layout(set = 1, binding = 0) readonly buffer X { vec4 xv[]; }; // rows of k floats, k % 4 == 0
layout(set = 1, binding = 1) W_ACCESS buffer Wt { uvec4 wq[]; };
layout(set = 1, binding = 1) W_ACCESS buffer Wt1 { uint wu[]; }; // the same weights, for word loads
layout(set = 1, binding = 2) writeonly buffer O { float o[]; };
layout(set = 1, binding = 3) readonly buffer Aux { float aux[]; };
layout(set = 1, binding = 4) readonly buffer Nw { vec4 nw[]; }; // NORM 1: the norm's weights (k floats)
layout(set = 1, binding = 4) readonly buffer Ns { float ns_rs[]; }; // NORM 2: the sync block of the POST matvec
layout(set = 1, binding = 5) W_ACCESS buffer Wg { uvec4 gq[]; }; // GATE: the gate weights, same type and shape
layout(set = 1, binding = 5) W_ACCESS buffer Wg1 { uint gu[]; };
layout(set = 1, binding = 6) writeonly buffer Xs { float xs_out[]; }; // POST 1: out * pw
layout(set = 1, binding = 6) writeonly buffer Xi { uint argmax_out[]; }; // POST 2: the index
layout(set = 1, binding = 7) readonly buffer Pw { float pw[]; };       // POST: the norm's weights
layout(set = 1, binding = 7) readonly buffer Route { float route[]; }; // EXPERTS: [rows, experts]
// POST's sync block (shaders/sync_layout.h): the count of workgroups done, the
// rsqrt(mean + eps) at SYNC_RS, the workgroups' sums of squares from SYNC_SUMS; zero at compile.
layout(set = 1, binding = 8) coherent buffer Sync { uint sync_w[]; };
layout(set = 1, binding = 8) coherent buffer Sync4 { uvec4 sync_w4[]; };
#include "sync_layout.h"
const uint SYNC_RS = RLX_SYNC_RS, SYNC_SUMS = RLX_SYNC_LISTS;
layout(set = 1, binding = 9) readonly buffer WarmK { uvec4 warm_k[]; }; // WARM: the K cache [rows][warm_row16]
layout(set = 1, binding = 10) readonly buffer WarmV { uvec4 warm_v[]; }; // WARM: the V cache
layout(set = 1, binding = 9) readonly buffer AuxGate { float aux_gate[]; }; // EXPERTS 8: [rows]
layout(set = 1, binding = 10) readonly buffer Resid { float resid[]; };     // EXPERTS 16: [rows, m]

layout(push_constant) uniform Push {
    uint rows;      // rows of x
    uint k;         // row length
    uint m_rows;    // weight rows in this part
    uint m0;        // first output column of this part
    uint m;         // output row stride (all weight rows)
    uint row_bytes; // bytes per weight row
    uint tok;       // x rows per token (0: all rows)
    float eps;      // NORM
    float post_eps; // POST
    uint groups;    // POST, WARM: workgroups dispatched
    uint warm_row16; // WARM: 16-byte words per cache row (all kv heads of one position)
    uint experts;    // EXPERTS: E
    uint f_rows;     // EXPERTS: rows per expert F (4: values per slot)
} p;

#define RLX_DEQUANT_TYPES_ONLY
#include "dequant.glsl"
#include "act.glsl"

const uint RN = R * NX; // sums per thread
const uint RO = GATE != 0u ? R / 2u : R; // output rows per group
const uint G = WG / T;
// Units per thread and trip: two give each thread 2R independent loads of 16 bytes (or 8R words);
// a Q4_K unit issues two 16-byte loads per row (quants and the block header), a Q6_K unit 10 words.
// Plain types take the host's choice (runtime/vk_plan.c: one for long decode rows).
const uint UNR = W_TYPE == T_Q4_K || W_TYPE == T_Q6_K ? 1u : W_TYPE == T_Q8_0 ? 2u : UNR_PLAIN;

const uint RS = RN + (NORM == 1u ? NX : 0u); // sums per subgroup in red: the dot products, then NORM's sums of squares
shared float red[(WG / 4u) * RS]; // [subgroup][sum]

float acc[RN]; // acc[r * NX + c]: weight row r of the group, x row c
float ss[NX];  // NORM: sum of squares of x row c over this thread's units
uint wrow[R];  // byte address of each weight row (clamped to the last row)
const uint MAX_SLOTS = 16u;
uint seg[MAX_SLOTS]; // EXPERTS 4: byte offset of each slot's expert matrix
uint xrow[NX]; // vec4 index of each x row (clamped to the last valid row)
uint lane;     // thread number within the group

// Weight row r's 16 bytes or word i (r is a constant once loops are unrolled: no branch remains).
uvec4 w16(uint r, uint i) { return GATE != 0u && r >= RO ? gq[i] : wq[i]; }
uint word(uint r, uint i) { return GATE != 0u && r >= RO ? gu[i] : wu[i]; }

// Byte address of block blk (of blk_bytes bytes holding blk_vals values) of weight row r; under
// EXPERTS 4 the row is the slots' rows side by side, each p.f_rows values.
uint wblock(uint r, uint blk, uint blk_bytes, uint blk_vals) {
    if ((EXPERTS & 4u) == 0u) return wrow[r] + blk * blk_bytes;
    uint per = p.f_rows / blk_vals;
    return wrow[r] + seg[blk / per] + (blk % per) * blk_bytes;
}

// vec4 i of x row c, as the weight rows are multiplied by it: times the norm's weights under NORM.
// Every vec4 of a row is loaded once per thread group, so its square is counted once.
vec4 xget(uint c, uint i) {
    vec4 v = xv[xrow[c] + i];
    if (NORM != 1u) return v;
    ss[c] += dot(v, v);
    return v * nw[i];
}

// q - bias as a float, exactly, for an integer 0 <= q < 2^23.
float qf(uint q, float bias) { return uintBitsToFloat(q | 0x4B000000u) - (8388608.0 + bias); }

vec4 bytes4(uint w, float bias) {
    return vec4(qf(w & 0xffu, bias), qf((w >> 8) & 0xffu, bias), qf((w >> 16) & 0xffu, bias), qf(w >> 24, bias));
}

// The 32 bits at byte 0 (sh == 0) or byte 2 (sh == 16) of the word pair (a, b).
uint funnel(uint a, uint b, uint sh) { return sh == 0u ? a : (a >> 16) | (b << 16); }

// ---- F32 (4 values per unit), F16 and BF16 (8): one 16-byte load ----

void plain8(uvec4 q, out vec4 lo, out vec4 hi) {
    if (W_TYPE == T_BF16) {
        lo = uintBitsToFloat(uvec4(q.x << 16, q.x & 0xffff0000u, q.y << 16, q.y & 0xffff0000u));
        hi = uintBitsToFloat(uvec4(q.z << 16, q.z & 0xffff0000u, q.w << 16, q.w & 0xffff0000u));
    } else {
        lo = vec4(unpackHalf2x16(q.x), unpackHalf2x16(q.y));
        hi = vec4(unpackHalf2x16(q.z), unpackHalf2x16(q.w));
    }
}

void mv_plain() {
    uint per = W_TYPE == T_F32 ? 4u : 8u, n = p.k / per;
    for (uint u0 = lane; u0 < n; u0 += T * UNR) {
        uvec4 q[UNR * R];
        [[unroll]] for (uint j = 0u; j < UNR; j++) {
            uint u = min(u0 + j * T, n - 1u);
            [[unroll]] for (uint r = 0u; r < R; r++) q[j * R + r] = w16(r, wblock(r, u, 16u, W_TYPE == T_F32 ? 4u : 8u) / 16u);
        }
        [[unroll]] for (uint j = 0u; j < UNR; j++) {
            uint u = u0 + j * T;
            if (u >= n) break;
            [[unroll]] for (uint c = 0u; c < NX; c++) {
                if (W_TYPE == T_F32) {
                    vec4 xa = xget(c, u);
                    [[unroll]] for (uint r = 0u; r < R; r++) acc[r * NX + c] += dot(uintBitsToFloat(q[j * R + r]), xa);
                } else {
                    vec4 xa = xget(c, 2u * u), xb = xget(c, 2u * u + 1u), lo, hi;
                    [[unroll]] for (uint r = 0u; r < R; r++) {
                        plain8(q[j * R + r], lo, hi);
                        acc[r * NX + c] += dot(lo, xa) + dot(hi, xb);
                    }
                }
            }
        }
    }
}

// ---- Q8_0 (block_q8_0: half d; int8 qs[32]; 34 bytes) ----
// A unit is a quarter block, 8 values: the word holding d and the three words holding its 8 bytes,
// funnel-shifted (they start 2 bytes off the alignment of d).

void mv_q8_0() {
    uint n = p.k / 8u;
    for (uint u0 = lane; u0 < n; u0 += T * UNR) {
        uvec4 q[UNR * R];
        [[unroll]] for (uint j = 0u; j < UNR; j++) {
            uint u = min(u0 + j * T, n - 1u);
            [[unroll]] for (uint r = 0u; r < R; r++) {
                uint b = wblock(r, u >> 2, 34u, 32u), i = (b + 2u + (u & 3u) * 8u) >> 2;
                q[j * R + r] = uvec4(word(r, b >> 2), word(r, i), word(r, i + 1u), word(r, i + 2u));
            }
        }
        [[unroll]] for (uint j = 0u; j < UNR; j++) {
            uint u = u0 + j * T;
            if (u >= n) break;
            [[unroll]] for (uint c = 0u; c < NX; c++) {
                vec4 xa = xget(c, 2u * u), xb = xget(c, 2u * u + 1u);
                [[unroll]] for (uint r = 0u; r < R; r++) {
                    uvec4 w = q[j * R + r];
                    uint sh = (wblock(r, u >> 2, 34u, 32u) & 2u) * 8u; // d's half of its word
                    float d = unpackHalf2x16(w.x >> sh).x;
                    // int8 v as the byte v ^ 0x80 = v + 128
                    vec4 lo = bytes4(funnel(w.y, w.z, 16u - sh) ^ 0x80808080u, 128.0);
                    vec4 hi = bytes4(funnel(w.z, w.w, 16u - sh) ^ 0x80808080u, 128.0);
                    acc[r * NX + c] += d * (dot(lo, xa) + dot(hi, xb));
                }
            }
        }
    }
}

// ---- Q4_K (block_q4_K: half d, dmin; uint8 scales[12]; uint8 qs[128]; 144 bytes = 9 x 16) ----
// Unit 8 blk + v is the 16 bytes qs[16v + l], l < 16, of block blk, read with the block's first 16
// bytes (d, dmin, scales): two 16-byte loads. Byte 32c + l' (c = v / 2) holds value 64c + l' in its
// low nibble (sub-block 2c) and value 64c + 32 + l' in its high nibble (sub-block 2c + 1); the two
// scales and mins are decoded once for the unit's 32 values. Units of 16 bytes, not 32, give twice
// the threads, each with half the serial work; smaller units (8 or 4 bytes) would load the block
// header once per 16 or 8 values, which costs more than the shorter work saves.

// Scale and min of sub-block j from the scale bytes 0-3, 4-7, 8-11 in s.
vec2 k4_scale(uvec3 s, uint j) {
    uvec2 v = k4_scale_min_words(s, j);
    return vec2(qf(v.x, 0.0), qf(v.y, 0.0));
}

void mv_q4_k() {
    uint n = p.k / 32u;
    for (uint u0 = lane; u0 < n; u0 += T * UNR) {
        uvec4 hd[UNR * R], qs[UNR * R];
        [[unroll]] for (uint j = 0u; j < UNR; j++) {
            uint u = min(u0 + j * T, n - 1u);
            [[unroll]] for (uint r = 0u; r < R; r++) {
                uint b = wblock(r, u >> 3, 144u, 256u) / 16u;
                hd[j * R + r] = w16(r, b);
                qs[j * R + r] = w16(r, b + 1u + (u & 7u));
            }
        }
        [[unroll]] for (uint j = 0u; j < UNR; j++) {
            uint u = u0 + j * T;
            if (u >= n) break;
            uint c2 = (u & 7u) >> 1, x0 = (u >> 3) * 64u + c2 * 16u + (u & 1u) * 4u; // vec4 of the first low value
            [[unroll]] for (uint c = 0u; c < NX; c++) {
                // Each nibble is masked where it lies (byte b of w or w >> 16, low or high half)
                // and turned into the float q * 2^(0, 4, 8, 12): one logic operation and one add
                // per value, no shift or byte extraction; the sums of each power of two are kept
                // apart (lanes of ql / qh) and scaled back once.
                vec4 ql[R], qh[R];
                [[unroll]] for (uint r = 0u; r < R; r++) ql[r] = qh[r] = vec4(0.0);
                vec4 xs = vec4(0.0);
                [[unroll]] for (uint i = 0u; i < 4u; i++) {
                    vec4 xl = xget(c, x0 + i), xh = xget(c, x0 + 8u + i);
                    xs += vec4(xl.x + xl.y, xl.z + xl.w, xh.x + xh.y, xh.z + xh.w);
                    [[unroll]] for (uint r = 0u; r < R; r++) {
                        uint a = qs[j * R + r][i], b = a >> 16;
                        ql[r] += vec4(qf(a & 0xfu, 0.0), qf(a & 0xf00u, 0.0), qf(b & 0xfu, 0.0), qf(b & 0xf00u, 0.0)) * xl;
                        qh[r] += vec4(qf(a & 0xf0u, 0.0), qf(a & 0xf000u, 0.0), qf(b & 0xf0u, 0.0), qf(b & 0xf000u, 0.0)) * xh;
                    }
                }
                float sum_lo = xs.x + xs.y, sum_hi = xs.z + xs.w; // for the mins, shared by the R rows
                [[unroll]] for (uint r = 0u; r < R; r++) {
                    uvec4 hh = hd[j * R + r];
                    vec2 dm = unpackHalf2x16(hh.x), s0 = k4_scale(hh.yzw, 2u * c2), s1 = k4_scale(hh.yzw, 2u * c2 + 1u);
                    float sl = ql[r].x + ql[r].z + (ql[r].y + ql[r].w) * (1.0 / 256.0);
                    float sh = (qh[r].x + qh[r].z) * (1.0 / 16.0) + (qh[r].y + qh[r].w) * (1.0 / 4096.0);
                    acc[r * NX + c] += dm.x * (s0.x * sl + s1.x * sh) - dm.y * (s0.y * sum_lo + s1.y * sum_hi);
                }
            }
        }
    }
}

// ---- Q6_K (block_q6_K: uint8 ql[128]; uint8 qh[64]; int8 scales[16]; half d; 210 bytes) ----
// Value 128n + 32t + l (n < 2, t < 4, l < 32) is the low (t < 2) or high nibble of
// ql[64n + 32(t & 1) + l] plus 16 times bits 2t, 2t + 1 of qh[32n + l], minus 32, times
// d * scales[8n + 2t + l / 16]. Unit 16 blk + 8n + j holds l = 4j .. 4j + 3 of half n for all t:
// 16 values from three 4-byte fields (ql[64n + 4j], ql[64n + 32 + 4j], qh[32n + 4j]), their four
// scales (bytes j / 4 + 2t of the half's 8) and d, so that the field, scale and address work is
// shared by 16 values (the decode, not the read, bounds Q6_K). A block starts 2 bytes off word
// alignment when its offset is, and then so does every field: each is read as two words,
// funnel-shifted by the same amount. The 16 units of a half are neighbours.

// The bytes of w (6-bit values q) as q - 32 for bytes 0 and 2 and 256 (q - 32) for bytes 1 and 3,
// each masked where it lies in w or w >> 16: one logic operation and one add per value (x of the
// odd bytes comes scaled by 1 / 256).
vec4 q6_vals(uint w) {
    uint h = w >> 16;
    return vec4(qf(w & 0x3fu, 32.0), qf(w & 0x3f00u, 8192.0), qf(h & 0x3fu, 32.0), qf(h & 0x3f00u, 8192.0));
}

void mv_q6_k() {
    uint n = p.k / 16u;
    for (uint u0 = lane; u0 < n; u0 += T * UNR) {
        uvec4 qa[UNR * R]; // the word pairs of ql[64n + 4j] and ql[64n + 32 + 4j]
        uvec4 qb[UNR * R]; // the word pair of qh[32n + 4j], the first two words of the half's scales
        uvec2 qc[UNR * R]; // the third word of the scales, the word of d
        [[unroll]] for (uint j = 0u; j < UNR; j++) {
            uint u = min(u0 + j * T, n - 1u), half_n = (u >> 3) & 1u;
            [[unroll]] for (uint r = 0u; r < R; r++) {
                uint wb = wblock(r, u >> 4, 210u, 256u) >> 2, i = wb + 16u * half_n + (u & 7u);
                uint h = wb + 32u + 8u * half_n + (u & 7u), s = wb + 48u + 2u * half_n;
                qa[j * R + r] = uvec4(word(r, i), word(r, i + 1u), word(r, i + 8u), word(r, i + 9u));
                qb[j * R + r] = uvec4(word(r, h), word(r, h + 1u), word(r, s), word(r, s + 1u));
                qc[j * R + r] = uvec2(word(r, s + 2u), word(r, wb + 52u));
            }
        }
        [[unroll]] for (uint j = 0u; j < UNR; j++) {
            uint u = u0 + j * T;
            if (u >= n) break;
            uint half_n = (u >> 3) & 1u, g = ((u & 7u) >> 2) * 8u, x0 = (u >> 4) * 64u + half_n * 32u + (u & 7u);
            [[unroll]] for (uint c = 0u; c < NX; c++) {
                vec4 xs[4]; // x of l = 4j .. 4j + 3 for each t, see q6_vals
                [[unroll]] for (uint t = 0u; t < 4u; t++) xs[t] = xget(c, x0 + 8u * t) * vec4(1.0, 1.0 / 256.0, 1.0, 1.0 / 256.0);
                [[unroll]] for (uint r = 0u; r < R; r++) {
                    uvec4 a = qa[j * R + r], b = qb[j * R + r];
                    uvec2 e = qc[j * R + r];
                    uint sh = (wblock(r, u >> 4, 210u, 256u) & 2u) * 8u;
                    uint lo0 = funnel(a.x, a.y, sh), lo1 = funnel(a.z, a.w, sh), qh = funnel(b.x, b.y, sh);
                    vec4 dots = vec4(dot(q6_vals((lo0 & 0x0f0f0f0fu) | ((qh << 4) & 0x30303030u)), xs[0]),
                                     dot(q6_vals((lo1 & 0x0f0f0f0fu) | ((qh << 2) & 0x30303030u)), xs[1]),
                                     dot(q6_vals(((lo0 >> 4) & 0x0f0f0f0fu) | (qh & 0x30303030u)), xs[2]),
                                     dot(q6_vals(((lo1 >> 4) & 0x0f0f0f0fu) | ((qh >> 2) & 0x30303030u)), xs[3]));
                    // scales j/4 + {0, 2} in bytes 0 and 2 of s0, + {4, 6} in s1; int8 v as v ^ 0x80
                    uint s0 = (funnel(b.z, b.w, sh) >> g) ^ 0x00800080u, s1 = (funnel(b.w, e.x, sh) >> g) ^ 0x00800080u;
                    vec4 sc = vec4(qf(s0 & 0xffu, 128.0), qf((s0 >> 16) & 0xffu, 128.0), qf(s1 & 0xffu, 128.0),
                                   qf((s1 >> 16) & 0xffu, 128.0));
                    acc[r * NX + c] += unpackHalf2x16(e.y >> sh).x * dot(sc, dots);
                }
            }
        }
    }
}

// Invocation t's output: its group's sums from red, the norm, the epilogue. Returns whether it
// stores one (its value in v).
bool store(uint t, uint w0, uint r0, uint rows, uint spg, out float v, out uint col) {
    v = 0.0;
    uint gg = t / (RO * NX), s = t % (RO * NX), wr = w0 + gg * RO + s / NX, xr = r0 + s % NX;
    col = p.m0 + wr;
    if (wr >= p.m_rows || xr >= rows) return false;
    float gv = 0.0; // the gate row's dot product (GATE)
    for (uint i = 0u; i < spg; i++) {
        v += red[(gg * spg + i) * RS + s];
        if (GATE != 0u) gv += red[(gg * spg + i) * RS + RO * NX + s];
    }
    if (NORM != 0u) {
        float rs = ns_rs[SYNC_RS];
        if (NORM == 1u) {
            float sq = 0.0;
            for (uint i = 0u; i < spg; i++) sq += red[(gg * spg + i) * RS + RN + s % NX];
            rs = inversesqrt(sq / float(p.k) + p.eps);
        }
        v *= rs;
        gv *= rs;
    }
    uint oi = xr * p.m + p.m0 + wr;
    switch (EPI) {
    case EPI_ADD:
        v += aux[oi] * ((EXPERTS & 8u) != 0u ? sigmoid(aux_gate[xr]) : 1.0);
        if ((EXPERTS & 16u) != 0u) v += resid[oi];
        break;
    case EPI_SILU_MUL: v *= silu(GATE != 0u ? gv : aux[oi]); break;
    case EPI_GELU_MUL: v *= gelu_tanh(GATE != 0u ? gv : aux[oi]); break;
    }
    o[oi] = v;
    if (POST == 1u) xs_out[oi] = v * pw[p.m0 + wr];
    return true;
}

shared float post_red[WG / 4u];

// Called by a whole subgroup after its elected lane stored its share in the sync block: that lane
// counts on word c of n members; whether this was the last, in every lane, whose loads then see
// every member's stores.
bool counted_last(uint c, uint n) {
    bool last = false;
    if (subgroupElect()) {
        memoryBarrierBuffer();
        last = atomicAdd(sync_w[c], 1u) == n - 1u;
    }
    if (subgroupMax(last ? 1u : 0u) == 0u) return false;
    memoryBarrierBuffer();
    return true;
}

// POST, see above. The workgroup's sum of squares meets in post_red; its first subgroup leaves it,
// and in the last workgroup sums all of them, eight 16-byte loads per lane in flight per trip.
void post_sums(uint gid, float sq) {
    sq = subgroupAdd(sq);
    if (subgroupElect()) post_red[gl_SubgroupID] = sq;
    barrier();
    if (gl_SubgroupID != 0u) return;
    sq = 0.0;
    for (uint i = 0u; i < gl_NumSubgroups; i++) sq += post_red[i];
    if (subgroupElect()) sync_w[SYNC_SUMS + gid] = floatBitsToUint(sq);
    if (!counted_last(0u, p.groups)) return;
    uint n4 = (p.groups + 3u) / 4u, lane4 = gl_SubgroupInvocationID, b4 = SYNC_SUMS / 4u;
    vec4 acc4 = vec4(0.0);
    for (uint j0 = 0u; j0 < n4; j0 += 8u * gl_SubgroupSize) {
        uvec4 w[8];
        [[unroll]] for (uint e = 0u; e < 8u; e++) w[e] = sync_w4[b4 + min(j0 + lane4 + e * gl_SubgroupSize, n4 - 1u)];
        [[unroll]] for (uint e = 0u; e < 8u; e++)
            if (j0 + lane4 + e * gl_SubgroupSize < n4) acc4 += uintBitsToFloat(w[e]);
    }
    float total = subgroupAdd(acc4.x + acc4.y + acc4.z + acc4.w);
    if (subgroupElect()) {
        sync_w[SYNC_RS] = floatBitsToUint(inversesqrt(total / float(p.m) + p.post_eps));
        sync_w[0] = 0u; // for the next run
    }
}

// ---- POST 2: ARGMAX ----
// Only the first subgroup of a workgroup takes part past its workgroup's maximum (no workgroup-wide
// barrier but one), and it reads the pairs two per 16-byte load.

const uint TEAM = RLX_SYNC_ARGMAX_TEAM, SYNC_TEAMS = RLX_SYNC_LISTS, NONE = 0xffffffffu;
shared float am_v[POST == 2u ? G * RO * NX : 1u];
shared uint am_i[POST == 2u ? G * RO * NX : 1u];

// (v, i) beats (bv, bi): the first index of the maximum, as shaders/argmax.comp.
bool beats(float v, uint i, float bv, uint bi) { return i != NONE && (bi == NONE || v > bv || (v == bv && i < bi)); }

void take(float v, uint i, inout float bv, inout uint bi) {
    if (beats(v, i, bv, bi)) {
        bv = v;
        bi = i;
    }
}

// The subgroup's best pair, in every lane.
void subgroup_best(inout float bv, inout uint bi) {
    float m = subgroupMax(bi != NONE ? bv : -1.0 / 0.0);
    bi = subgroupMin(bi != NONE && bv == m ? bi : NONE);
    bv = m;
}

// The best of the n (max, index) pairs from word w (16-byte aligned) of the sync block.
void pairs_best(uint w, uint n, out float bv, out uint bi) {
    bv = 0.0;
    bi = NONE;
    uint lane = gl_SubgroupInvocationID, sgs = gl_SubgroupSize, n2 = (n + 1u) / 2u;
    for (uint j0 = 0u; j0 < n2; j0 += 4u * sgs) {
        uvec4 q[4];
        [[unroll]] for (uint e = 0u; e < 4u; e++) q[e] = sync_w4[w / 4u + min(j0 + lane + e * sgs, n2 - 1u)];
        [[unroll]] for (uint e = 0u; e < 4u; e++) {
            uint j = j0 + lane + e * sgs;
            if (j >= n2) continue;
            take(uintBitsToFloat(q[e].x), q[e].y, bv, bi);
            if (2u * j + 1u < n) take(uintBitsToFloat(q[e].z), q[e].w, bv, bi);
        }
    }
    subgroup_best(bv, bi);
}

// The elected lane leaves pair (bv, bi) at word w, then counted_last(c, n).
bool leave_and_count(uint w, float bv, uint bi, uint c, uint n) {
    if (subgroupElect()) {
        sync_w[w] = floatBitsToUint(bv);
        sync_w[w + 1u] = bi;
    }
    return counted_last(c, n);
}

// Sync block words (shaders/sync_layout.h): [0] teams done, [SYNC_TEAMS + team] the team's
// workgroups done, then a pair per workgroup from w1 and a pair per team from w2.
void post_argmax(uint gid, float v, uint i) {
    v = isnan(v) ? 1.0 / 0.0 : v;
    uint t = gl_LocalInvocationIndex;
    if (t < G * RO * NX) {
        am_v[t] = v;
        am_i[t] = i;
    }
    barrier();
    if (gl_SubgroupID != 0u) return;
    float bv = 0.0;
    uint bi = NONE;
    for (uint j = gl_SubgroupInvocationID; j < G * RO * NX; j += gl_SubgroupSize) take(am_v[j], am_i[j], bv, bi);
    subgroup_best(bv, bi);
    uint teams = (p.groups + TEAM - 1u) / TEAM, team = gid / TEAM, members = min(TEAM, p.groups - team * TEAM);
    uint w1 = SYNC_TEAMS + (teams + 3u) / 4u * 4u, w2 = w1 + 2u * ((p.groups + 3u) / 4u * 4u);
    if (!leave_and_count(w1 + 2u * gid, bv, bi, SYNC_TEAMS + team, members)) return;
    pairs_best(w1 + 2u * team * TEAM, members, bv, bi);
    if (subgroupElect()) sync_w[SYNC_TEAMS + team] = 0u; // for the next run: every member has counted
    if (!leave_and_count(w2 + 2u * team, bv, bi, 0u, teams)) return;
    pairs_best(w2, teams, bv, bi);
    if (subgroupElect()) {
        argmax_out[0] = isinf(bv) ? NONE : bi;
        sync_w[0] = 0u;
    }
}

// ---- WARM ----

shared uint warm_sink;
uvec4 warm_k0, warm_v0;

// Issues this workgroup's loads: one 16-byte word per invocation and cache, of the most recent
// positions below row 0's (of row 0's sequence, through its page table) that the workgroups'
// invocations cover; warm_end consumes them.
void warm_begin(uint gid) {
    uint pos = rlx_pos(0u), rows = min(pos, p.groups * WG / p.warm_row16), i = gid * WG + gl_LocalInvocationIndex;
    bool in_range = i < rows * p.warm_row16;
    uint r = i / p.warm_row16, j = pos - rows + r;
    uint at = in_range ? rlx_kv_row(0u, j) * p.warm_row16 + (i - r * p.warm_row16) : 0u;
    warm_k0 = in_range ? warm_k[at] : uvec4(0u);
    warm_v0 = in_range ? warm_v[at] : uvec4(0u);
}

// EXPERTS: the expert that slot s of route row c names (0xffffffff when it routes to fewer), found by
// the whole subgroup: each lane counts the nonzero weights of its run of experts, a prefix sum
// says which lane holds the s-th, and that lane walks its run again.
uint slot_expert(uint c, uint s) {
    uint sgs = gl_SubgroupSize, per = (p.experts + sgs - 1u) / sgs, e0 = gl_SubgroupInvocationID * per;
    uint e1 = min(e0 + per, p.experts), base = c * p.experts, n = 0u;
    for (uint e = e0; e < e1; e++) n += route[base + e] != 0.0 ? 1u : 0u;
    uint before = subgroupExclusiveAdd(n), found = 0xffffffffu;
    if (s >= before && s < before + n) {
        uint left = s - before;
        for (uint e = e0; e < e1; e++)
            if (route[base + e] != 0.0) {
                if (left == 0u) {
                    found = e;
                    break;
                }
                left--;
            }
    }
    return subgroupMin(found);
}

float wsc[R]; // EXPERTS 2: the route weight of each weight row's slot

// EXPERTS 1: wrow (and wsc) for output rows v0 .. v0 + RO - 1 of x row c (clamped like the plain rows).
void expert_rows(uint v0, uint c) {
    uint first = min(v0, p.m_rows - 1u), last = min(v0 + RO - 1u, p.m_rows - 1u);
    uint ef = slot_expert(c, first / p.f_rows);
    uint el = last / p.f_rows == first / p.f_rows ? ef : slot_expert(c, last / p.f_rows);
    [[unroll]] for (uint r = 0u; r < R; r++) {
        uint v = min(v0 + r % RO, p.m_rows - 1u), e = v / p.f_rows == first / p.f_rows ? ef : el;
        wsc[r] = e == 0xffffffffu ? 0.0 : route[c * p.experts + e];
        wrow[r] = ((e == 0xffffffffu ? 0u : e) * p.f_rows + v % p.f_rows) * p.row_bytes;
    }
}

// EXPERTS 4: seg, the byte offset of each slot's expert (expert 0 for a slot not routed to: its h is 0).
void expert_segments(uint c) {
    uint slots = p.k / p.f_rows, bytes = p.m_rows * p.row_bytes;
    [[unroll]] for (uint s = 0u; s < MAX_SLOTS; s++) {
        uint e = s < slots ? slot_expert(c, s) : 0u;
        seg[s] = (e == 0xffffffffu ? 0u : e) * bytes;
    }
}

// A use of the loads that the compiler cannot drop and that has no effect on any result.
void warm_end() {
    uvec4 x = warm_k0 ^ warm_v0;
    if (x.x == 0x9E3779B9u && x.y == 0x7F4A7C15u) atomicOr(warm_sink, 1u);
}

void main() {
    uint gid = group_id(), per_wg = G * RO, groups_m = (p.m_rows + per_wg - 1u) / per_wg;
    if (WARM != 0u) warm_begin(gid);
    uint w0 = (gid % groups_m) * per_wg, r0 = (gid / groups_m) * NX;
    uint rows = valid_rows(p.rows, p.tok);
    if (r0 >= rows) return; // the whole workgroup: no barrier is skipped by part of it
    uint spg = max(T / gl_SubgroupSize, 1u), g = gl_SubgroupID / spg;
    lane = (gl_SubgroupID % spg) * gl_SubgroupSize + gl_SubgroupInvocationID;
    [[unroll]] for (uint r = 0u; r < R; r++) wrow[r] = min(w0 + g * RO + r % RO, p.m_rows - 1u) * p.row_bytes;
    if ((EXPERTS & 1u) != 0u) expert_rows(w0 + g * RO, min(r0, rows - 1u));
    if ((EXPERTS & 4u) != 0u) expert_segments(min(r0, rows - 1u));
    [[unroll]] for (uint c = 0u; c < NX; c++) xrow[c] = min(r0 + c, rows - 1u) * (p.k / 4u);
    [[unroll]] for (uint s = 0u; s < RN; s++) acc[s] = 0.0;
    [[unroll]] for (uint c = 0u; c < NX; c++) ss[c] = 0.0;
    switch (W_TYPE) {
    case T_Q8_0: mv_q8_0(); break;
    case T_Q4_K: mv_q4_k(); break;
    case T_Q6_K: mv_q6_k(); break;
    default: mv_plain(); break;
    }
    if ((EXPERTS & 2u) != 0u) // the up rows (the first RO), weighted; the gate rows are not
        [[unroll]] for (uint s = 0u; s < RO * NX; s++) acc[s] *= wsc[s / NX];
    [[unroll]] for (uint s = 0u; s < RN; s++) {
        float v = subgroupAdd(acc[s]);
        if (subgroupElect()) red[gl_SubgroupID * RS + s] = v;
    }
    if (NORM == 1u)
        [[unroll]] for (uint c = 0u; c < NX; c++) {
            float v = subgroupAdd(ss[c]);
            if (subgroupElect()) red[gl_SubgroupID * RS + RN + c] = v;
        }
    barrier();
    float v = 0.0;
    uint col = 0u;
    bool stored = gl_LocalInvocationIndex < G * RO * NX && store(gl_LocalInvocationIndex, w0, r0, rows, spg, v, col);
    if (WARM != 0u) warm_end();
    if (POST == 1u) post_sums(gid, stored ? v * v : 0.0);
    if (POST == 2u) post_argmax(gid, v, stored ? col : NONE);
}
