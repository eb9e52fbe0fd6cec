// ATTENTION (ir/ops.def) for many query rows (prefill): a tiled flash attention in f32. A workgroup
// of 256 invocations takes BQ query rows of one head and walks their visible keys in blocks of BKV,
// each block staged in shared memory: its K rows, and once the scores are taken its V rows in the
// same place. The next block's K and V are loaded into registers while the current one is summed,
// so a block costs one memory round trip that overlaps the arithmetic. Per block:
//   1. scores S = Q K^T from shared memory, an SR x SK tile per invocation (rows ty + 16 i, keys
//      tx + 16 c), masked (causal: key j is visible to the query at p = rlx_pos(i) when j <= p,
//      within the window, below the T keys bound, and i is of the pass's sequence) and scaled into P;
//   2. one invocation per row: the running max, the rescale factor of what came before, and
//      exp(s - max) over its scores in P; meanwhile the others stage V;
//   3. O = O * rescale + P V: 4 rows x 4 dims per invocation, P read for 4 rows at once.
// Staged, each K and V row is loaded once per workgroup; read straight from the buffer, every
// invocation that needs it would load it again, and those loads, not the arithmetic, would bound it.
// The longest rows go first. Blocks wholly outside the causal window of the BQ rows are skipped;
// keys past the last visible one read as 0 (unwritten cache rows may hold any bits). GQA: head h
// reads kv head h / (H / H_kv). Padding rows (and rows that see no key) are 0.
// Spec D: the head sizes Dh, Dv rounded up to 64, 128 or 256, which sets BQ = 4096 / D (so that
// phase 3 is 4 rows x 4 dims per invocation); VEC: Dh and Dv are multiples of 4 (rows of q, k, v
// and out start 16-byte aligned: vec4 access); BKV 32 or 16, as the device's shared memory allows
// (runtime/vk_plan.c vk_attention_prefill_plan keeps the same count); WG 256.
// PAGED (k and v are the session's pools, common.glsl): the rows of a tile may belong to several
// sequences (a mixed batch). The tile makes one pass of the block walk per distinct sequence, in
// the order of their first rows, over that sequence's keys through its page table, with the rows
// of other sequences masked; the online softmax of a row carries across passes (a fully masked
// block leaves it as it was: rescale 1, weights 0). A tile of one sequence, as every prefill chunk
// is, makes one pass over the keys it made before. Without PAGED, k and v are this run's rows: key
// j is row j, row i sits at n_past + i.
#include "common.glsl"
#include "kv_type.glsl"

layout(constant_id = 1) const uint D = 128;
layout(constant_id = 2) const uint VEC = 1;
layout(constant_id = 3) const uint BKV = 32; // keys per block: 32, or 16 where 32 do not fit
layout(constant_id = 4) const uint PAGED = 1; // k and v are the pools

layout(set = 1, binding = 0) readonly buffer Q { float q[]; };
layout(set = 1, binding = 0) readonly buffer Q4 { vec4 q4[]; };
layout(set = 1, binding = 1) readonly buffer K { kv_t k[]; }; // F16 (RLX_KV_F16): only PAGED
layout(set = 1, binding = 1) readonly buffer K4 { kv4_t k4[]; };
layout(set = 1, binding = 2) readonly buffer V { kv_t v[]; };
layout(set = 1, binding = 2) readonly buffer V4 { kv4_t v4[]; };
layout(set = 1, binding = 3) writeonly buffer O { float o[]; };

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
} p;

const uint BQ = 4096u / D;             // query rows per workgroup: 64, 32, 16
const uint QUADS = D / 4u;             // vec4 of a row
const uint DS = D + 4u;                // row stride of staged Q and K / V: 8 keys a quarter subgroup
                                       // reads sit on distinct banks
const uint PSTR = BQ + 4u;             // P is key-major: [BKV][PSTR]
const uint SR = BQ / 16u, SK = BKV / 16u; // phase 1 tile
const uint OR = 4u;                    // phase 3 rows per invocation (BQ * QUADS / 256)
const uint KV_PER = BKV * QUADS / 256u; // quads of a K or V block each invocation stages

shared vec4 qs[BQ * DS / 4u];
shared vec4 kvs[BKV * DS / 4u];
shared vec4 ps[BKV * PSTR / 4u];
shared float cr[BQ]; // per row: the block's rescale factor; at the end 1 / sum
shared uint rpos[BQ], rseq[BQ]; // per row: its position and table row (~0u: padding)
shared bool rfirst[BQ];         // per row: the first of its sequence in the tile

float p_get(uint i) { return ps[i >> 2][i & 3u]; }
void p_set(uint i, float x) { ps[i >> 2][i & 3u] = x; }

uint h, kvh, hi, pages; // pages: the pass's page table (rlx_pages_of)

uint key_row(uint j) { return PAGED != 0u ? rlx_page_row(pages, j) : j; }

// Dims d0 .. d0 + 3 of a row starting at element `base` of a buffer of rows of n floats (n % 4 == 0
// under VEC); zeros past n. vec4 views start at the same 16-byte aligned binding offset.
vec4 q_quad(uint base, uint d0) {
    if (VEC != 0u) return d0 < p.dh ? q4[(base + d0) >> 2] : vec4(0.0);
    vec4 r;
    [[unroll]] for (uint c = 0u; c < 4u; c++) r[c] = d0 + c < p.dh ? q[base + d0 + c] : 0.0;
    return r;
}

// Key j's dims d0 .. d0 + 3; zeros past the last visible key.
vec4 k_quad(uint j, uint d0) {
    if (j > hi) return vec4(0.0);
    uint base = (key_row(j) * p.kv_heads + kvh) * p.dh;
    if (VEC != 0u) return d0 < p.dh ? vec4(k4[(base + d0) >> 2]) : vec4(0.0);
    vec4 r;
    [[unroll]] for (uint c = 0u; c < 4u; c++) r[c] = d0 + c < p.dh ? float(k[base + d0 + c]) : 0.0;
    return r;
}

vec4 v_quad(uint j, uint d0) {
    if (j > hi) return vec4(0.0);
    uint base = (key_row(j) * p.kv_heads + kvh) * p.dv;
    if (VEC != 0u) return d0 < p.dv ? vec4(v4[(base + d0) >> 2]) : vec4(0.0);
    vec4 r;
    [[unroll]] for (uint c = 0u; c < 4u; c++) r[c] = d0 + c < p.dv ? float(v[base + d0 + c]) : 0.0;
    return r;
}

void store_out(uint row, uint d0, vec4 x) {
    [[unroll]] for (uint c = 0u; c < 4u; c++)
        if (d0 + c < p.dv) o[(row * p.heads + h) * p.dv + d0 + c] = x[c];
}

vec4 kq[KV_PER], vq[KV_PER]; // the next block's K and V quads, in flight

void fetch(uint j0) {
    [[unroll]] for (uint s = 0u; s < KV_PER; s++) {
        uint e = gl_LocalInvocationID.x + s * 256u, j = j0 + e / QUADS, d0 = (e % QUADS) * 4u;
        kq[s] = k_quad(j, d0);
        vq[s] = v_quad(j, d0);
    }
}

void stage(bool values) {
    [[unroll]] for (uint s = 0u; s < KV_PER; s++) {
        uint e = gl_LocalInvocationID.x + s * 256u;
        kvs[(e / QUADS) * (DS / 4u) + e % QUADS] = values ? vq[s] : kq[s];
    }
}

// The pass of the sequence whose first row in the tile is fr: sets pages and hi, and the key
// blocks to walk (false: none). Every invocation computes the same from shared memory.
bool pass_range(uint fr, out uint first, out uint n_blocks) {
    pages = rseq[fr];
    uint pos_lo = ~0u, pos_hi = 0u; // this sequence's rows' positions
    for (uint r = 0u; r < BQ; r++)
        if (rseq[r] == pages) {
            pos_lo = min(pos_lo, rpos[r]);
            pos_hi = max(pos_hi, rpos[r]);
        }
    hi = min(pos_hi, p.t - 1u);
    uint lo = (p.window > 0u && pos_lo + 1u > p.window) ? pos_lo + 1u - p.window : 0u;
    first = lo / BKV * BKV;
    n_blocks = lo <= hi ? (hi - first) / BKV + 1u : 0u;
    return lo <= hi;
}

void main() {
    uint t = gl_LocalInvocationID.x, gid = group_id(), blocks = (p.rows + BQ - 1u) / BQ;
    h = gid % p.heads;
    uint i0 = (blocks - 1u - gid / p.heads) * BQ; // the longest rows first
    uint valid = valid_rows(p.rows, p.tok);
    if (i0 >= valid || p.t == 0u) {
        for (uint e = t; e < BQ * p.dv; e += WG) {
            uint i = i0 + e / p.dv;
            if (i < p.rows) o[(i * p.heads + h) * p.dv + e % p.dv] = 0.0;
        }
        return;
    }
    kvh = h / (p.heads / p.kv_heads);
    if (t < BQ) {
        uint i = i0 + t;
        bool ok = i < valid;
        rpos[t] = ok ? (PAGED != 0u ? rlx_pos(i) : rlx.n_past + i) : 0u;
        rseq[t] = ok ? (PAGED != 0u ? rlx_pages_of(i) : 0u) : ~0u;
    }
    barrier();
    if (t < BQ) {
        bool first = rseq[t] != ~0u;
        for (uint r = 0u; r < t && first; r++) first = rseq[r] != rseq[t];
        rfirst[t] = first;
    }
    // row 0 is valid, so the first pass is its sequence's: its first block's loads go out before
    // the Q rows are staged, as in a tile of one sequence
    uint first, n_blocks;
    bool walk = pass_range(0u, first, n_blocks);
    if (walk) fetch(first);
    // Q rows i0 .. i0 + BQ - 1, zeros past the valid rows and past Dh
    for (uint e = t; e < BQ * QUADS; e += WG) {
        uint r = e / QUADS, d0 = (e % QUADS) * 4u;
        qs[r * (DS / 4u) + d0 / 4u] = i0 + r < valid ? q_quad(((i0 + r) * p.heads + h) * p.dh, d0) : vec4(0.0);
    }
    barrier();

    uint ty = t / 16u, tx = t % 16u; // phase 1
    uint qd = t % QUADS, rg = t / QUADS; // phase 3: dims 4 qd .. 4 qd + 3, rows OR rg .. OR rg + 3
    float m = -1.0 / 0.0, l = 0.0;    // t < BQ: row t's running max and sum
    vec4 acc[OR];
    [[unroll]] for (uint i = 0u; i < OR; i++) acc[i] = vec4(0.0);
    for (uint fr = 0u; fr < BQ; fr++) {
        if (!rfirst[fr]) continue; // uniform: shared, written before the last barrier
        if (fr > 0u) {
            walk = pass_range(fr, first, n_blocks);
            if (walk) fetch(first);
        }
        if (!walk) continue; // no visible key (a window past T): the rows stay empty
        for (uint b = 0u; b < n_blocks; b++) {
            uint j0 = first + b * BKV;
            barrier(); // the last block's V and P are read
            stage(false);
            barrier();
            // 1. scores
            float s[SR][SK];
            [[unroll]] for (uint i = 0u; i < SR; i++)
                [[unroll]] for (uint c = 0u; c < SK; c++) s[i][c] = 0.0;
            for (uint d = 0u; d < QUADS; d++) {
                vec4 kv[SK];
                [[unroll]] for (uint c = 0u; c < SK; c++) kv[c] = kvs[(tx + 16u * c) * (DS / 4u) + d];
                [[unroll]] for (uint i = 0u; i < SR; i++) {
                    vec4 qv = qs[(ty + 16u * i) * (DS / 4u) + d];
                    [[unroll]] for (uint c = 0u; c < SK; c++) s[i][c] += dot(qv, kv[c]);
                }
            }
            [[unroll]] for (uint i = 0u; i < SR; i++) {
                uint row = ty + 16u * i, pos = rpos[row];
                bool mine = rseq[row] == pages;
                [[unroll]] for (uint c = 0u; c < SK; c++) {
                    uint j = j0 + tx + 16u * c;
                    bool seen = mine && j <= min(pos, p.t - 1u) && (p.window == 0u || pos - j < p.window);
                    p_set((tx + 16u * c) * PSTR + row, seen ? s[i][c] * p.scale : -1.0 / 0.0);
                }
            }
            barrier();
            // 2. softmax statistics, and V staged where K was
            stage(true);
            if (t < BQ) {
                float mx = m;
                for (uint j = 0u; j < BKV; j++) mx = max(mx, p_get(j * PSTR + t));
                float corr = mx == -1.0 / 0.0 ? 1.0 : exp(m - mx), sum = 0.0;
                for (uint j = 0u; j < BKV; j++) {
                    float e = mx == -1.0 / 0.0 ? 0.0 : exp(p_get(j * PSTR + t) - mx);
                    p_set(j * PSTR + t, e);
                    sum += e;
                }
                l = l * corr + sum;
                m = mx;
                cr[t] = corr;
            }
            if (b + 1u < n_blocks) fetch(j0 + BKV);
            barrier();
            // 3. O = O * corr + P V
            [[unroll]] for (uint i = 0u; i < OR; i++) acc[i] *= cr[rg * OR + i];
            for (uint j = 0u; j < BKV; j++) {
                vec4 pv = ps[(j * PSTR + rg * OR) / 4u], vv = kvs[j * (DS / 4u) + qd];
                [[unroll]] for (uint i = 0u; i < OR; i++) acc[i] += pv[i] * vv;
            }
        }
    }

    barrier();
    if (t < BQ) cr[t] = i0 + t < valid && l > 0.0 ? 1.0 / l : 0.0;
    barrier();
    [[unroll]] for (uint i = 0u; i < OR; i++) {
        uint r = rg * OR + i;
        if (i0 + r < p.rows) store_out(i0 + r, qd * 4u, acc[i] * cr[r]);
    }
}
