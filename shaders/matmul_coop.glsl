// MATMUL for many rows on cooperative matrices (16 x 16 x 16 f16 x f16 -> f32):
// out[r, m0 + m] = epilogue(sum_k x[r, k] * w[m, k]) in TM x TN output tiles. Bindings, push
// constants and epilogues are matmul_tiled.comp's; k % 32 == 0. Included by matmul_coop.comp
// (VK_NV_cooperative_matrix) and matmul_coop_emu.comp (the same kernel with the four matrix
// operations done by plain code on shared memory, so that devices without cooperative matrices,
// lavapipe in CI, can check everything else: staging, splitting, pipelining, edges, epilogues).
//
// Workgroup: TM * 4 invocations = TM / 8 subgroups of 32 (runtime/vk_lower.c selects the NV kernel
// on devices whose subgroups are 32 wide); subgroup g owns the 32 x 16 NB block of x rows
// 32 (g / 4) .., w rows 16 NB (g % 4) .. (2 NB 16 x 16 accumulators, two more for the low parts).
// Each step of BK along k stages the x tile (f32 -> f16) and the weight tile (decoded from its
// stored type by dequant.glsl, then f32 -> f16; F16 weights copied as they are) in shared memory,
// 8 values (one uvec4 of f16) per chunk, rows padded to an odd number of uvec4 so that the 8 rows
// of an 8 x 8 sub-block sit on distinct banks. The global loads of the next DEPTH steps are in
// flight during the multiplies of the current one (a ring of DEPTH register sets, the k loop
// unrolled by DEPTH so that each set has fixed registers). DEPTH 2 keeps twice the bytes in flight
// per workgroup, but was slower wherever it was measured: the plan uses 1 (vk_plan.c).
// Spec TM (64 or 128 x rows), BK (64, or 32 where the operands would not fit in shared memory),
// DEPTH (1 or 2), TN (64 or 128 weight rows; 128 only with PREC 0): with TN 128 each subgroup owns
// 32 w rows (two 16 x 16 blocks side by side), so each staged x tile feeds twice the weights, the
// x side's loads and staging per weight byte halve, and each k step has twice the weight bytes in
// flight.
//
// Split k (spec SPLIT > 1). A few rows (a decode batch) over a weight of a few thousand rows make a
// grid of a few dozen tiles, fewer than the device has multiprocessors, each walking all of k: so
// the grid is SPLIT times larger, workgroup g taking k range g / tiles (push ksplit values, a
// multiple of BK, the last range shorter), and each writes its raw sums to the partials (binding 4,
// [split][p.rows][p.m_rows]); shaders/matmul_reduce.comp then adds the SPLIT partials of each
// output in a fixed order and applies the epilogue.
//
// Precision (spec PREC). f16 has an 11-bit significand, so a plain f16 product rounds every x and
// w by up to 2^-12 (about 4e-4 relative in each output): the default (PREC 0, RLX_VK_COOPMAT unset
// or mixed), within the fixtures' f16 / mixed-compute tolerance, not the f32 ones the op tests
// hold the exact paths to. RLX_VK_COOPMAT=exact splits each operand in two f16 parts,
// v = hi + lo * 2^-11 with hi = v rounded to 11 significant bits (hi_part: exact in f16, 0 below
// f16's normal range) and lo = f16((v - hi) * 2^11), and
//     x.w = xh.wh + 2^-11 (xl.wh + xh.wl)      (the xl.wl term is below 2^-22 relative)
// with the two sums in separate f32 accumulators. That keeps about 22 significant bits of every
// operand, as good as f32 accumulation needs, for 3 multiplies instead of 1:
//   PREC 2: x and w split (any weight type: decoded values have up to 24 significant bits);
//   PREC 1: x split, w as it is (F16 weights are exact in f16): 2 multiplies;
//   PREC 0: neither: 1 multiply.
// Range: f16 holds |v| < 65504. A tile whose staged x or w values reach 16384 (so that hi and the
// scaled lo stay finite whatever the rounding mode of the conversion) or are not finite is
// recomputed in f32 by a plain loop: slow, but such values are rare and the result stays right.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(constant_id = 1) const uint W_TYPE = 0;
layout(constant_id = 2) const uint EPI = 0;
layout(constant_id = 3) const uint PREC = 2;
layout(constant_id = 4) const uint TM = 64;
layout(constant_id = 5) const uint BK = 64;
layout(constant_id = 6) const uint DEPTH = 1;
layout(constant_id = 7) const uint SPLIT = 1;
layout(constant_id = 8) const uint TN = 64;
layout(constant_id = 9) const uint OROWS = 64; // output rows combined per round at the end: 64, or 32
                                               // where 64 rows of TN 128 exceed the shared memory

#include "matmul_coop_io.glsl"

#include "dequant.glsl"
#include "act.glsl"

#define LO_SCALE 2048.0
#define MIN_NORMAL 6.103515625e-5 // 2^-14, f16's smallest normal value

const uint NB = TN / 64u;                            // w blocks of 16 per subgroup
const uint S = BK / 8u + 1u;                          // operand row stride in uvec4 (8 halves)
const uint CPR = BK / 8u;                             // chunks of 8 values per operand row and step
const uint XL = TM * S;                               // XH at 0
const uint WH = PREC >= 1u ? 2u * TM * S : TM * S;
const uint WL = WH + TN * S;
const uint OPS = PREC >= 2u ? WL + TN * S : WL;
const uint CS = TN / 4u + 1u;                         // result row stride in uvec4 (4 floats)
const uint OUTS = OROWS * CS;
const uint X_PER = TM * CPR / WG;                     // x chunks per invocation and step (WG = 4 TM)
const uint W_CHUNKS = TN * CPR;
const uint W_PER = W_CHUNKS > WG ? W_CHUNKS / WG : 1u;
const uint NOUT = OROWS * TN / WG;                    // results per invocation and round

// Q4_K weights are fetched in units of 16 values: 8 quant bytes of a row (one 8-byte load) give the
// low nibbles (8 values) and the high ones (the 8 values 32 further), both sub-blocks' scales coming
// from the block's 16-byte header (one load), instead of a decode per 8-value chunk that reads
// each field on its own (dq8: about 9 loads). A unit's two chunks sit in one invocation, so the
// path needs an even W_PER and k steps of whole 64-value groups (BK % 64 == 0). The raw words wait
// in the ring (qhd, qq, qg) and are decoded when staged, DEPTH steps later: decoding them at the
// fetch would wait on the loads there, which the ring exists to hide.
bool q4k_units() { return W_TYPE == T_Q4_K && BK % 64u == 0u && W_CHUNKS % WG == 0u && W_PER % 2u == 0u; }

shared uvec4 smem[OPS > OUTS ? OPS : OUTS];
shared uint s_bad;

uint t;
uint split_at, k_lo, k_hi; // this workgroup's split and k range: all of k, or its split's
vec4 xr[DEPTH * X_PER * 2u]; // ring of the next steps' x values
vec4 wr[DEPTH * W_PER * 2u]; // decoded weights
uvec4 wraw[DEPTH * W_PER];   // or F16 weights as stored
const uint QU = (DEPTH * W_PER + 1u) / 2u; // Q4_K units in the ring (at least 1: GLSL has no empty arrays)
uvec4 qhd[QU]; // or Q4_K units: the block's header (zero: a unit outside the tile)
uvec2 qq[QU];  // ... its 8 quant bytes
uint qg[QU];   // ... and its 64-value group in the block
const uint Q6W = 8u;               // raw words per Q6_K chunk
uint q6raw[DEPTH * W_PER * Q6W];  // or Q6_K chunks' raw words (zero: a chunk outside the tile)
uint q6at[DEPTH * W_PER];          // ... and where in them the chunk's bytes sit
bool bad = false;

#include "coop_ops.glsl"

bool raw_f16() { return W_TYPE == T_F16 && PREC < 2u; }

#include "matmul_coop_out.glsl"

// v rounded to f16's 11 significant bits (ties away from zero) by integer arithmetic, 0 below f16's
// normal range: a value f16 holds exactly, so its conversion cannot round whatever the device's
// rounding mode. Not f32(f16(v)) through unpackHalf2x16(packHalf2x16(v)): NVIDIA's compiler folds
// that round trip into v (dxil-spirv PR 100 saw the same), which leaves every low part 0 and the
// "exact" mode with plain f16 error.
vec4 hi_part(vec4 v) {
    vec4 h = uintBitsToFloat((floatBitsToUint(v) + 0x1000u) & 0xffffe000u);
    return mix(h, vec4(0.0), lessThan(abs(v), vec4(MIN_NORMAL)));
}

// The 8 values a, c as f16 at smem[hi_at], and with lo their scaled low parts at smem[lo_at].
void split(vec4 a, vec4 c, uint hi_at, uint lo_at, bool lo) {
    if (!lo) {
        smem[hi_at] = to_f16(a, c);
        return;
    }
    vec4 ha = hi_part(a), hc = hi_part(c);
    smem[hi_at] = to_f16(ha, hc);
    smem[lo_at] = to_f16((a - ha) * LO_SCALE, (c - hc) * LO_SCALE);
}

// The weight chunk that ring entry i of this invocation holds: chunk c of a step is 8 values of
// weight row c / CPR at column 8 (c % CPR); t + i WG, or with q4k_units() unit t + (i / 2) WG's low
// (i even) or high nibbles: unit u is 8 quant bytes of row u / (BK / 16), 64-value group
// (u % (BK / 16)) / 4, bytes 8 (u % 4) of the group's 32.
uint w_chunk(uint i) {
    if (!q4k_units()) return t + i * WG;
    uint u = t + (i / 2u) * WG, v = u % (BK / 16u);
    return (u / (BK / 16u)) * CPR + (v / 4u) * 8u + v % 4u + (i % 2u) * 4u;
}

// Unit u of the ring (ring entries 2 u and 2 u + 1: the low and high chunks of a q4k_units() unit)
// from weight row n at k column kc (a multiple of 8 whose 64-value group holds both chunks). Blocks
// are 144 bytes and rows a whole number of them from 16-aligned bindings, so the header is one
// 16-byte load and the 8 quant bytes one 8-byte load (hd.x: d and dmin; hd.yzw: the 12 scale bytes).
void fetch_q4k(uint u, uint n, uint kc) {
    uint b = n * p.row_bytes + (kc >> 8) * 144u, grp = (kc & 255u) >> 6;
    qhd[u] = w4[b >> 4];
    qq[u] = w2[(b + 16u + 32u * grp + (kc & 31u)) >> 3];
    qg[u] = grp;
}

// Unit u's 16 values: its low chunk lo[0..1], its high chunk hi[0..1] (zeros from a zero header).
void decode_q4k(uint u, out vec4 lo0, out vec4 lo1, out vec4 hi0, out vec4 hi1) {
    vec4 sm = q4k_group_scales(qhd[u], qg[u]);
    uvec2 q = qq[u];
    lo0 = sm.x * nib4(q.x, 0u) - sm.y;
    lo1 = sm.x * nib4(q.y, 0u) - sm.y;
    hi0 = sm.z * nib4(q.x, 1u) - sm.w;
    hi1 = sm.z * nib4(q.y, 1u) - sm.w;
}

// Q6_K chunks wait in the ring as raw words too (the reason is Q4_K's): 210-byte blocks are only
// 2-aligned, so each chunk's 8 low-bit bytes (ql) and 8 high-bit bytes (qh) take 3 words each,
// funnelled at the decode, beside the words holding its scale byte and d (dequant.glsl dq8's
// decode, the same arithmetic). q6at: bit 0 the block's half-word offset (ql, qh and d share it),
// bits 1-2 the scale's byte, bits 3-5 the 2-bit shift of qh, bit 6 ql's nibble.
void fetch_q6k(uint at, uint row, uint e) {
    uint b = row + (e >> 8) * 210u, k = e & 255u, n = k >> 7, r = k & 127u, qq = r >> 5, l = r & 31u;
    uint ql = b + 64u * n + l + (qq & 1u) * 32u, qh = b + 128u + 32u * n + l, sc = b + 192u + 8u * n + (l >> 4) + 2u * qq;
    uint o = at * Q6W;
    UNROLL for (uint w = 0u; w < 3u; w++) {
        q6raw[o + w] = w_words[(ql >> 2) + w];
        q6raw[o + 3u + w] = w_words[(qh >> 2) + w];
    }
    q6raw[o + 6u] = w_words[sc >> 2];
    q6raw[o + 7u] = w_words[(b + 208u) >> 2];
    q6at[at] = ((b >> 1) & 1u) | ((sc & 3u) << 1) | ((2u * qq) << 3) | ((qq >> 1) << 6);
}

// Ring entry at's 8 Q6_K values.
void decode_q6k(uint at, out vec4 lo, out vec4 hi) {
    uint o = at * Q6W, m = q6at[at], sh = (m >> 3) & 7u, nh = (m >> 6) & 1u;
    bool odd = (m & 1u) != 0u;
    float d = unpackHalf2x16(odd ? q6raw[o + 7u] >> 16 : q6raw[o + 7u]).x *
              float(bitfieldExtract(int(q6raw[o + 6u]), int(8u * ((m >> 1) & 3u)), 8));
    uint lw0 = funnel(q6raw[o], q6raw[o + 1u], odd), lw1 = funnel(q6raw[o + 1u], q6raw[o + 2u], odd);
    uint hw0 = funnel(q6raw[o + 3u], q6raw[o + 4u], odd), hw1 = funnel(q6raw[o + 4u], q6raw[o + 5u], odd);
    lo = d * q6k_q4(lw0, nh, hw0, sh);
    hi = d * q6k_q4(lw1, nh, hw1, sh);
}

// Global loads of k step `step` into ring slot `slot` (chunks by w_chunk); zeros past the rows,
// weight rows and k.
void fetch(uint slot, uint step, uint xr0, uint wr0, uint rows) {
    uint k0 = k_lo + step * BK;
    UNROLL for (uint i = 0u; i < X_PER; i++) {
        uint c = t + i * WG, r = xr0 + c / CPR, kc = k0 + (c % CPR) * 8u, at = (slot * X_PER + i) * 2u;
        xr[at] = vec4(0.0);
        xr[at + 1u] = vec4(0.0);
        if (r < rows && kc < k_hi) {
            uint q = (r * p.k + kc) >> 2;
            xr[at] = x4[q];
            xr[at + 1u] = x4[q + 1u];
        }
    }
    UNROLL for (uint i = 0u; i < W_PER; i++) {
        uint c = w_chunk(i), n = wr0 + c / CPR, kc = k0 + (c % CPR) * 8u, at = slot * W_PER + i;
        bool in_tile = c < W_CHUNKS && n < p.m_rows && kc < k_hi;
        if (q4k_units()) { // both chunks of the unit at once (k_hi is a multiple of 64: Q4_K's 256 or a split's BK)
            if (i % 2u == 1u) continue;
            qhd[at / 2u] = uvec4(0u);
            qq[at / 2u] = uvec2(0u);
            qg[at / 2u] = 0u;
            if (in_tile) fetch_q4k(at / 2u, n, kc);
        } else if (raw_f16()) { // F16 rows are 64-byte multiples (k % 32 == 0) in 16-byte aligned bindings
            wraw[at] = in_tile ? w4[(n * p.row_bytes + kc * 2u) >> 4] : uvec4(0u);
        } else if (W_TYPE == T_Q6_K) {
            UNROLL for (uint w = 0u; w < Q6W; w++) q6raw[at * Q6W + w] = 0u;
            q6at[at] = 0u;
            if (in_tile) fetch_q6k(at, n * p.row_bytes, kc);
        } else {
            wr[2u * at] = vec4(0.0);
            wr[2u * at + 1u] = vec4(0.0);
            if (in_tile) dq8(n * p.row_bytes, kc, wr[2u * at], wr[2u * at + 1u]);
        }
    }
}

// Ring slot `slot` into shared memory, split per PREC.
void stage(uint slot) {
    UNROLL for (uint i = 0u; i < X_PER; i++) {
        uint c = t + i * WG, at = (slot * X_PER + i) * 2u, o = (c / CPR) * S + c % CPR;
        vec4 a = xr[at], b = xr[at + 1u];
        bad = bad || !fits(a) || !fits(b);
        split(a, b, o, XL + o, PREC >= 1u);
    }
    UNROLL for (uint i = 0u; i < W_PER; i++) {
        uint c = w_chunk(i), at = slot * W_PER + i, o = WH + (c / CPR) * S + c % CPR;
        if (q4k_units() && i % 2u == 0u) // this unit's two chunks into ring entries at, at + 1
            decode_q4k(at / 2u, wr[2u * at], wr[2u * at + 1u], wr[2u * at + 2u], wr[2u * at + 3u]);
        if (W_TYPE == T_Q6_K) decode_q6k(at, wr[2u * at], wr[2u * at + 1u]);
        if (c < W_CHUNKS && raw_f16()) {
            smem[o] = wraw[at];
        } else if (c < W_CHUNKS) {
            vec4 a = wr[2u * at], b = wr[2u * at + 1u];
            bad = bad || !fits(a) || !fits(b);
            split(a, b, o, o + TN * S, PREC >= 2u);
        }
    }
}

void main() {
    t = gl_LocalInvocationID.x;
    uint tiles_m = (p.m_rows + TN - 1u) / TN, tiles = tiles_m * ((p.rows + TM - 1u) / TM);
    uint gid = group_id() % tiles;
    split_at = group_id() / tiles;
    uint wr0 = (gid % tiles_m) * TN, xr0 = (gid / tiles_m) * TM;
    uint rows = valid_rows(p.rows, p.tok);
    k_lo = SPLIT > 1u ? split_at * p.ksplit : 0u;
    k_hi = SPLIT > 1u ? min(k_lo + p.ksplit, p.k) : p.k;
    if (xr0 >= rows) return;
    if (t == 0u) s_bad = 0u;
    uint g = subgroup_index(), sm = (g / 4u) * 32u, sn = (g % 4u) * 16u * NB;
    ACCUM c0 = ACCUM_ZERO;
    ACCUM c1 = c0, d0 = c0, d1 = c0; // d: the 2^-11 terms, or with NB 2 the second w block's sums
    OPERAND a0, a1, b, l0, l1, bl;
    uint steps = (k_hi - k_lo + BK - 1u) / BK;
    UNROLL for (uint r = 0u; r < DEPTH; r++)
        if (r < steps) fetch(r, r, xr0, wr0, rows);
    for (uint s0 = 0u; s0 < steps; s0 += DEPTH) {
        UNROLL for (uint r = 0u; r < DEPTH; r++) {
            uint s = s0 + r;
            if (s >= steps) continue; // uniform
            barrier();                // the previous step's multiplies are done with smem
            stage(r);
            barrier();
            if (s + DEPTH < steps) fetch(r, s + DEPTH, xr0, wr0, rows);
            UNROLL for (uint kk = 0u; kk < CPR; kk += 2u) {
                LOAD(a0, sm * S + kk, false);
                LOAD(a1, (sm + 16u) * S + kk, false);
                LOAD(b, WH + sn * S + kk, true); // w rows are the columns of B
                c0 = MULADD(a0, b, c0);
                c1 = MULADD(a1, b, c1);
                if (NB == 2u) { // PREC 0
                    LOAD(bl, WH + (sn + 16u) * S + kk, true);
                    d0 = MULADD(a0, bl, d0);
                    d1 = MULADD(a1, bl, d1);
                }
                if (PREC >= 1u) {
                    LOAD(l0, XL + sm * S + kk, false);
                    LOAD(l1, XL + (sm + 16u) * S + kk, false);
                    d0 = MULADD(l0, b, d0);
                    d1 = MULADD(l1, b, d1);
                }
                if (PREC >= 2u) {
                    LOAD(bl, WL + sn * S + kk, true);
                    d0 = MULADD(a0, bl, d0);
                    d1 = MULADD(a1, bl, d1);
                }
            }
        }
    }
    if (bad) s_bad = 1u;
    barrier();
    if (s_bad != 0u) { // uniform: every invocation read it after the barrier
        slow_tile(xr0, wr0, rows);
        return;
    }
    // The two sums meet in f32 here, OROWS rows at a time: the main sums through smem, then the
    // 2^-11 ones over the same space (glslang 11's optimizer crashes on arithmetic between
    // matrices).
    for (uint r0 = 0u; r0 < TM; r0 += OROWS) {
        bool mine = sm >= r0 && sm < r0 + OROWS; // uniform in each subgroup
        uint at = (sm - r0) * CS + sn / 4u;
        float v[NOUT];
        barrier(); // the multiplies, or the previous round's readers, are done with smem
        if (mine) {
            STORE(c0, at);
            STORE(c1, at + 16u * CS);
            if (NB == 2u) {
                STORE(d0, at + 4u);
                STORE(d1, at + 16u * CS + 4u);
            }
        }
        barrier();
        UNROLL for (uint i = 0u; i < NOUT; i++) {
            uint e = t + i * WG, n = e % TN;
            v[i] = uintBitsToFloat(smem[(e / TN) * CS + n / 4u][n % 4u]);
        }
        if (PREC >= 1u) {
            barrier();
            if (mine) {
                STORE(d0, at);
                STORE(d1, at + 16u * CS);
            }
            barrier();
            UNROLL for (uint i = 0u; i < NOUT; i++) {
                uint e = t + i * WG, n = e % TN;
                v[i] += uintBitsToFloat(smem[(e / TN) * CS + n / 4u][n % 4u]) * (1.0 / LO_SCALE);
            }
        }
        UNROLL for (uint i = 0u; i < NOUT; i++) {
            uint e = t + i * WG, r = xr0 + r0 + e / TN, n = wr0 + e % TN;
            if (r < rows && n < p.m_rows) store_out(r, n, v[i]);
        }
    }
}
