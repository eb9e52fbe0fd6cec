#version 450
// MOE_ROUTE (ir/ops.def): per row, softmax over the E router logits, keep the top_k largest
// (ties: the lower expert index first), zero the rest, renormalise the kept ones to sum 1 when
// norm_topk. One workgroup per row (E <= 1024, checked by the compiler): the row's logits in shared
// memory, the max and the sum as workgroup reductions, and each of the top_k picks a workgroup
// argmax (a subgroup's, then the subgroups'), where one invocation walking all E logits top_k + 3
// times was the decode step's slowest kernel on a model of 256 experts.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "reduce.glsl"

layout(set = 1, binding = 0) readonly buffer X { float x[]; };
layout(set = 1, binding = 1) buffer O { float o[]; };

layout(push_constant) uniform Push {
    uint rows;
    uint experts;
    uint top_k;
    uint norm_topk;
    uint tok;
} p;

const uint NONE = 0xffffffffu;
shared float xs[1024];
shared uint chosen[32];     // bit e: expert e is kept
shared float pick_v[WG];    // per subgroup: its best logit ...
shared uint pick_e[WG];     // ... and that expert

// (v, e) before (bv, be): larger, or equal and a lower index; NONE is last.
bool before(float v, uint e, float bv, uint be) {
    return e != NONE && (be == NONE || v > bv || (v == bv && e < be));
}

bool is_chosen(uint e) { return (chosen[e >> 5] & (1u << (e & 31u))) != 0u; }

void main() {
    uint r = group_id(), t = gl_LocalInvocationID.x;
    if (r >= valid_rows(p.rows, p.tok)) return; // uniform: a workgroup is one row
    uint base = r * p.experts;
    float m = -1.0 / 0.0;
    for (uint e = t; e < p.experts; e += WG) {
        xs[e] = x[base + e];
        m = max(m, xs[e]);
    }
    for (uint w = t; w < 32u; w += WG) chosen[w] = 0u;
    m = wg_max(m); // its barriers also publish xs and chosen
    float s = 0.0;
    for (uint e = t; e < p.experts; e += WG) s += exp(xs[e] - m);
    s = wg_sum(s);
    float kept = 0.0;
    for (uint n = 0u; n < p.top_k; n++) {
        float bv = -1.0 / 0.0;
        uint be = NONE;
        for (uint e = t; e < p.experts; e += WG)
            if (!is_chosen(e) && before(xs[e], e, bv, be)) {
                bv = xs[e];
                be = e;
            }
        float sv = subgroupMax(be == NONE ? -1.0 / 0.0 : bv);
        uint se = subgroupMin(be != NONE && bv == sv ? be : NONE);
        if (subgroupElect()) {
            pick_v[gl_SubgroupID] = sv;
            pick_e[gl_SubgroupID] = se;
        }
        barrier();
        bv = -1.0 / 0.0;
        be = NONE;
        for (uint g = 0u; g < gl_NumSubgroups; g++)
            if (before(pick_v[g], pick_e[g], bv, be)) {
                bv = pick_v[g];
                be = pick_e[g];
            }
        barrier(); // every invocation has read the picks
        if (be == NONE) break; // fewer experts than top_k: the compiler refuses that, kept for safety
        if (t == 0u) chosen[be >> 5] |= 1u << (be & 31u);
        kept += exp(bv - m) / s;
        barrier();
    }
    for (uint e = t; e < p.experts; e += WG) {
        float pe = exp(xs[e] - m) / s;
        o[base + e] = is_chosen(e) ? (p.norm_topk != 0u ? pe / kept : pe) : 0.0;
    }
}
