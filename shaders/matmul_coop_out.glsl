// What shaders/matmul_coop.glsl and matmul_batch.glsl share around their products: x values in
// f16's range, the store of one raw sum (the split partials, or the epilogue), and the f32 tile
// for values past f16's range. The includer declares the bindings, p, t, split_at, k_lo, k_hi, TM
// and TN first.

#define BIG 16384.0 // the largest |x| staged in f16: its split parts stay finite in any rounding mode

bool fits(vec4 v) { return all(lessThan(abs(v), vec4(BIG))); }

uvec4 to_f16(vec4 a, vec4 b) {
    return uvec4(packHalf2x16(a.xy), packHalf2x16(a.zw), packHalf2x16(b.xy), packHalf2x16(b.zw));
}


void store_out(uint r, uint wr, float v) {
    if (SPLIT > 1u) { // raw: matmul_reduce.comp applies the epilogue to the sum of the splits
        part[(split_at * p.rows + r) * p.m_rows + wr] = v;
        return;
    }
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
    for (uint e = t; e < TM * TN; e += WG) {
        uint r = xr0 + e / TN, wr = wr0 + e % TN;
        if (r >= rows || wr >= p.m_rows) continue;
        float acc = 0.0;
        for (uint k0 = k_lo; k0 < k_hi; k0 += 8u) {
            vec4 lo, hi;
            dq8(wr * p.row_bytes, k0, lo, hi);
            uint i = (r * p.k + k0) >> 2;
            acc += dot(x4[i], lo) + dot(x4[i + 1u], hi);
        }
        store_out(r, wr, acc);
    }
}

