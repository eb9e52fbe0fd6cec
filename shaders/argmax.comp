#version 450
// ARGMAX over the last dim: one workgroup per row; the first index of the maximum.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(set = 1, binding = 0) readonly buffer X { float x[]; };
layout(set = 1, binding = 1) writeonly buffer O { int o[]; };

layout(push_constant) uniform Push {
    uint rows;
    uint cols;
    uint tok;
} p;

shared float best_v[WG];
shared uint best_i[WG];

void main() {
    uint r = group_id();
    if (r >= valid_rows(p.rows, p.tok)) return;
    uint base = r * p.cols, t = gl_LocalInvocationID.x;
    float bv = -1.0 / 0.0;
    uint bi = 0xffffffffu;
    for (uint c = t; c < p.cols; c += WG) {
        float v = x[base + c];
        if (bi == 0xffffffffu || v > bv) {
            bv = v;
            bi = c;
        }
    }
    best_v[t] = bv;
    best_i[t] = bi;
    barrier();
    for (uint s = WG / 2u; s > 0u; s >>= 1) {
        if (t < s) {
            float ov = best_v[t + s];
            uint oi = best_i[t + s];
            bool take = oi != 0xffffffffu &&
                        (best_i[t] == 0xffffffffu || ov > best_v[t] || (ov == best_v[t] && oi < best_i[t]));
            if (take) {
                best_v[t] = ov;
                best_i[t] = oi;
            }
        }
        barrier();
    }
    if (t == 0u) o[r] = int(best_i[0]);
}
