#version 450
// EMBED: out[i, :] = row ids[i] of the table, decoded from its stored type. One workgroup per
// output row. A table split into row parts is looked up once per part; each part writes the rows
// whose id it holds. Ids outside [0, vocab) are reported through the status words (the run then
// fails with an error naming the id) and give a zero row; padding rows (token-major ids past n_tokens) are zero.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(constant_id = 1) const uint W_TYPE = 0;

layout(set = 1, binding = 0) readonly buffer Wt { uint w_words[]; };
layout(set = 1, binding = 1) readonly buffer Ids { int ids[]; };
layout(set = 1, binding = 2) writeonly buffer O { float o[]; };

layout(push_constant) uniform Push {
    uint rows;      // rows of ids / out
    uint d;         // row length
    uint row_bytes; // bytes per table row
    uint part_row0; // first table row held by this binding
    uint part_rows; // table rows held by this binding
    uint vocab;     // table rows in all
    uint node;      // IR node index, for the error report
    uint tok;       // 1: ids are token-major (rows >= n_tokens are padding)
} p;

#include "dequant.glsl"

void main() {
    uint i = group_id();
    if (i >= p.rows) return;
    uint t = gl_LocalInvocationID.x, base = i * p.d;
    int id = ids[i];
    bool first_part = p.part_row0 == 0u;
    bool live = i < valid_rows(p.rows, p.tok);
    bool valid = live && id >= 0 && uint(id) < p.vocab;
    if (live && !valid && first_part && t == 0u) rlx_report(RLX_ERR_EMBED_ID, p.node, uint(id));
    if (!valid) {
        if (first_part)
            for (uint c = t; c < p.d; c += WG) o[base + c] = 0.0;
        return;
    }
    if (uint(id) < p.part_row0 || uint(id) - p.part_row0 >= p.part_rows) return;
    uint row = (uint(id) - p.part_row0) * p.row_bytes, n8 = p.d / 8u;
    for (uint u = t; u < n8; u += WG) {
        vec4 lo, hi;
        dq8(row, u * 8u, lo, hi);
        uint oi = base + u * 8u;
        o[oi] = lo.x; o[oi + 1u] = lo.y; o[oi + 2u] = lo.z; o[oi + 3u] = lo.w;
        o[oi + 4u] = hi.x; o[oi + 5u] = hi.y; o[oi + 6u] = hi.z; o[oi + 7u] = hi.w;
    }
    for (uint c = n8 * 8u + t; c < p.d; c += WG) o[base + c] = dq1(row, c);
}
