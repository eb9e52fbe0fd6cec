#version 450
// MATMUL for many rows on cooperative matrices (VK_NV_cooperative_matrix, 16 x 16 x 16 f16 x f16 ->
// f32): out[r, m0 + m] = epilogue(sum_k x[r, k] * w[m, k]) in 64 x 64 output tiles. Bindings, push
// constants and epilogues are matmul_tiled.comp's; k % 32 == 0.
//
// A workgroup is 256 invocations = 8 subgroups of 32 (runtime/vk_lower.c selects this kernel only
// on devices whose subgroups are 32 wide). Each step of 64 along k stages the x tile (f32 -> f16)
// and the weight tile (decoded from its stored type by dequant.glsl, then f32 -> f16) in shared
// memory; each subgroup owns a 32 x 16 block of the output (two 16 x 16 accumulators). The next
// step's global loads are issued before the current step's multiplies so that their latency
// overlaps the math.
//
// Precision (spec PREC). f16 has an 11-bit significand, so a plain f16 product would round every
// x and w by up to 2^-12 (about 4e-4 relative in each output: above the f32 tolerances the op and
// family parity tests hold every path to). Instead each operand is split in two f16 parts,
// v = hi + lo * 2^-11 with hi = v rounded to 11 significant bits (hi_part: exact in f16, 0 below
// f16's normal range) and lo = f16((v - hi) * 2^11), and
//     x.w = xh.wh + 2^-11 (xl.wh + xh.wl)      (the xl.wl term is below 2^-22 relative)
// with the two sums in separate f32 accumulators. That keeps about 22 significant bits of every
// operand, as good as f32 accumulation needs, for 3 multiplies instead of 1:
//   PREC 2: x and w split (any weight type: decoded values have up to 24 significant bits);
//   PREC 1: x split, w as it is (F16 weights are exact in f16): 2 multiplies;
//   PREC 0: neither (RLX_VK_COOPMAT=fast, an experiment: about 4e-4 relative error).
// Range: f16 holds |v| < 65504. A tile whose staged x or w values reach 16384 (so that hi and the
// scaled lo stay finite whatever the rounding mode of the conversion) or are not finite is
// recomputed in f32 by a plain loop: slow, but such values are rare and the result stays right.
#extension GL_GOOGLE_include_directive : require
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_KHR_shader_subgroup_basic : require
#include "common.glsl"

layout(constant_id = 1) const uint W_TYPE = 0;
layout(constant_id = 2) const uint EPI = 0;
layout(constant_id = 3) const uint PREC = 2;

layout(set = 1, binding = 0) readonly buffer X { vec4 x4[]; }; // rows start 16-byte aligned: k % 32 == 0
layout(set = 1, binding = 1) readonly buffer Wt { uint w_words[]; };
layout(set = 1, binding = 1) readonly buffer Wt4 { uvec4 w4[]; }; // the same weights, for F16 rows
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
#define BK 64u
#define S (BK / 8u + 1u)   // operand row stride in uvec4 (8 halves); the extra one spreads rows over banks
#define OPERAND (TILE * S) // one staged 64 x BK operand
#define XH 0u
#define XL OPERAND
#define WH (2u * OPERAND)
#define WL (3u * OPERAND)
#define CS (TILE / 4u + 1u) // result row stride in uvec4 (4 floats), reusing the operand space
#define DS (TILE * CS)      // where the 2^-11 sums go
#define BIG 16384.0
#define LO_SCALE 2048.0
#define MIN_NORMAL 6.103515625e-5 // 2^-14, f16's smallest normal value

shared uvec4 smem[4u * OPERAND];
shared uint s_bad;

// This invocation's staging slot: tile row sr, columns sc * 16 .. + 15, of both x and w.
uint t, sr, sc;
vec4 xv[4];    // x values of the next step
vec4 wv[4];    // decoded weights of the next step
uvec4 wraw[2]; // or F16 weights as stored
bool bad = false;

bool raw_f16() { return W_TYPE == T_F16 && PREC < 2u; }

bool fits(vec4 v) { return all(lessThan(abs(v), vec4(BIG))); }

uvec4 to_f16(vec4 a, vec4 b) {
    return uvec4(packHalf2x16(a.xy), packHalf2x16(a.zw), packHalf2x16(b.xy), packHalf2x16(b.zw));
}

// v rounded to f16's 11 significant bits (ties away from zero) by integer arithmetic, 0 below f16's
// normal range: a value f16 holds exactly, so its conversion cannot round whatever the device's
// rounding mode. Not f32(f16(v)) through unpackHalf2x16(packHalf2x16(v)): NVIDIA's compiler folds
// that round trip into v (dxil-spirv PR 100 saw the same), which left every low part 0 and the
// "exact" mode with plain f16 error on the H100.
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

// Global loads of step k0 into registers; zeros past the rows, weight rows and k.
void fetch(uint k0, uint xr0, uint wr0, uint rows) {
    uint r = xr0 + sr, n = wr0 + sr, kc = k0 + sc * 16u;
    bool kin = kc < p.k;
    for (uint i = 0u; i < 4u; i++) xv[i] = vec4(0.0);
    if (r < rows && kin) {
        uint i0 = (r * p.k + kc) >> 2;
        [[unroll]] for (uint i = 0u; i < 4u; i++) xv[i] = x4[i0 + i];
    }
    bool win = n < p.m_rows && kin;
    if (raw_f16()) {
        wraw[0] = uvec4(0u);
        wraw[1] = uvec4(0u);
        if (win) { // F16 rows are 64-byte multiples (k % 32 == 0) in 16-byte aligned bindings
            uint a = (n * p.row_bytes + kc * 2u) >> 4;
            wraw[0] = w4[a];
            wraw[1] = w4[a + 1u];
        }
        return;
    }
    for (uint i = 0u; i < 4u; i++) wv[i] = vec4(0.0);
    if (win) {
        dq8(n * p.row_bytes, kc, wv[0], wv[1]);
        dq8(n * p.row_bytes, kc + 8u, wv[2], wv[3]);
    }
}

// The registers of fetch() into shared memory, split per PREC.
void stage() {
    uint b = sr * S + sc * 2u;
    [[unroll]] for (uint h = 0u; h < 2u; h++) {
        vec4 a = xv[2u * h], c = xv[2u * h + 1u];
        bad = bad || !fits(a) || !fits(c);
        split(a, c, XH + b + h, XL + b + h, PREC >= 1u);
        if (raw_f16()) {
            smem[WH + b + h] = wraw[h];
            continue;
        }
        a = wv[2u * h];
        c = wv[2u * h + 1u];
        bad = bad || !fits(a) || !fits(c);
        split(a, c, WH + b + h, WL + b + h, PREC >= 2u);
    }
}

void store_out(uint r, uint wr, float v) {
    uint oi = r * p.m + p.m0 + wr;
    switch (EPI) {
    case 1u: v += aux[oi]; break;
    case 2u: v *= silu(aux[oi]); break;
    case 3u: v *= gelu_tanh(aux[oi]); break;
    }
    o[oi] = v;
}

// The whole tile in f32, for values out of f16's range.
void slow_tile(uint xr0, uint wr0, uint rows) {
    for (uint e = t; e < TILE * TILE; e += 256u) {
        uint r = xr0 + e / TILE, wr = wr0 + e % TILE;
        if (r >= rows || wr >= p.m_rows) continue;
        float acc = 0.0;
        for (uint k0 = 0u; k0 < p.k; k0 += 8u) {
            vec4 lo, hi;
            dq8(wr * p.row_bytes, k0, lo, hi);
            uint i = (r * p.k + k0) >> 2;
            acc += dot(x4[i], lo) + dot(x4[i + 1u], hi);
        }
        store_out(r, wr, acc);
    }
}

void main() {
    t = gl_LocalInvocationID.x;
    sr = t >> 2;
    sc = t & 3u;
    uint tiles_m = (p.m_rows + TILE - 1u) / TILE;
    uint gid = group_id();
    uint wr0 = (gid % tiles_m) * TILE, xr0 = (gid / tiles_m) * TILE;
    uint rows = valid_rows(p.rows, p.tok);
    if (xr0 >= rows) return;
    if (t == 0u) s_bad = 0u;
    // subgroup g: output rows sm .. sm + 31, columns sn .. sn + 15 of the tile
    uint g = gl_SubgroupID, sm = (g >> 2) * 32u, sn = (g & 3u) * 16u;
    fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> c0 = fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>(0.0);
    fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> c1 = c0, d0 = c0, d1 = c0; // d: the 2^-11 terms
    fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> a0, a1, b, l0, l1, bl;
    fetch(0u, xr0, wr0, rows);
    for (uint k0 = 0u; k0 < p.k; k0 += BK) {
        barrier(); // the previous step's multiplies are done with smem
        stage();
        barrier();
        if (k0 + BK < p.k) fetch(k0 + BK, xr0, wr0, rows);
        [[unroll]] for (uint kk = 0u; kk < BK / 8u; kk += 2u) {
            coopMatLoadNV(a0, smem, XH + sm * S + kk, S, false);
            coopMatLoadNV(a1, smem, XH + (sm + 16u) * S + kk, S, false);
            coopMatLoadNV(b, smem, WH + sn * S + kk, S, true); // w rows are the columns of B
            c0 = coopMatMulAddNV(a0, b, c0);
            c1 = coopMatMulAddNV(a1, b, c1);
            if (PREC >= 1u) {
                coopMatLoadNV(l0, smem, XL + sm * S + kk, S, false);
                coopMatLoadNV(l1, smem, XL + (sm + 16u) * S + kk, S, false);
                d0 = coopMatMulAddNV(l0, b, d0);
                d1 = coopMatMulAddNV(l1, b, d1);
            }
            if (PREC >= 2u) {
                coopMatLoadNV(bl, smem, WL + sn * S + kk, S, true);
                d0 = coopMatMulAddNV(a0, bl, d0);
                d1 = coopMatMulAddNV(a1, bl, d1);
            }
        }
    }
    if (bad) s_bad = 1u;
    barrier();
    if (s_bad != 0u) { // uniform: every invocation read it after the barrier
        slow_tile(xr0, wr0, rows);
        return;
    }
    // The two sums meet in f32 here (glslang 11's optimizer crashes on arithmetic between matrices).
    coopMatStoreNV(c0, smem, sm * CS + sn / 4u, CS, false);
    coopMatStoreNV(c1, smem, (sm + 16u) * CS + sn / 4u, CS, false);
    if (PREC >= 1u) {
        coopMatStoreNV(d0, smem, DS + sm * CS + sn / 4u, CS, false);
        coopMatStoreNV(d1, smem, DS + (sm + 16u) * CS + sn / 4u, CS, false);
    }
    barrier();
    for (uint e = t; e < TILE * TILE; e += 256u) {
        uint r = e / TILE, n = e % TILE, i = r * CS + n / 4u;
        if (xr0 + r >= rows || wr0 + n >= p.m_rows) continue;
        float v = uintBitsToFloat(smem[i][n % 4u]);
        if (PREC >= 1u) v += uintBitsToFloat(smem[DS + i][n % 4u]) * (1.0 / LO_SCALE);
        store_out(xr0 + r, wr0 + n, v);
    }
}
