#version 450
// ARGMAX over the last dim: one workgroup per row; the first index of the maximum, or -1 for a row
// holding NaN or +inf, or only -inf (ir/ops.def): NaN is read as +inf, and an infinite maximum is
// no answer.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(constant_id = 1) const uint VEC = 0; // 1: rows of cols % 4 == 0, read as vec4
layout(set = 1, binding = 0) readonly buffer X { float x[]; };
layout(set = 1, binding = 0) readonly buffer X4 { vec4 x4[]; };
layout(set = 1, binding = 1) writeonly buffer O { int o[]; };

layout(push_constant) uniform Push {
    uint rows;
    uint cols;
    uint tok;
} p;

shared float best_v[WG];

// NaN compares false with everything, so it would never win: read it as +inf, which does.
float ord(float v) { return isnan(v) ? 1.0 / 0.0 : v; }
shared uint best_i[WG];

void main() {
    uint r = group_id();
    if (r >= valid_rows(p.rows, p.tok)) return;
    uint base = r * p.cols, t = gl_LocalInvocationID.x;
    float bv = -1.0 / 0.0;
    uint bi = 0xffffffffu;
    // Several strides per trip, loaded before any is compared (VEC: eight vec4 per trip): a
    // vocabulary row is hundreds of trips per invocation, and one load in flight per trip leaves it
    // latency-bound. The indices rise, so comparing them in order keeps the first index of the maximum.
    uint c = t;
    if (VEC != 0u) {
        uint c4 = t, n4 = p.cols / 4u, b4 = base / 4u;
        for (; c4 + 7u * WG < n4; c4 += 8u * WG) {
            vec4 v[8];
            [[unroll]] for (uint j = 0u; j < 8u; j++) {
                v[j] = x4[b4 + c4 + j * WG];
                [[unroll]] for (uint e = 0u; e < 4u; e++) v[j][e] = ord(v[j][e]);
            }
            [[unroll]] for (uint j = 0u; j < 8u; j++)
                [[unroll]] for (uint e = 0u; e < 4u; e++)
                    if (bi == 0xffffffffu || v[j][e] > bv) {
                        bv = v[j][e];
                        bi = 4u * (c4 + j * WG) + e;
                    }
        }
        for (; c4 < n4; c4 += WG) {
            vec4 v = x4[b4 + c4];
            [[unroll]] for (uint e = 0u; e < 4u; e++) v[e] = ord(v[e]);
            [[unroll]] for (uint e = 0u; e < 4u; e++)
                if (bi == 0xffffffffu || v[e] > bv) {
                    bv = v[e];
                    bi = 4u * c4 + e;
                }
        }
        c = p.cols; // the scalar loops below have nothing left
    }
    for (; c + 3u * WG < p.cols; c += 4u * WG) {
        float v[4] = {ord(x[base + c]), ord(x[base + c + WG]), ord(x[base + c + 2u * WG]), ord(x[base + c + 3u * WG])};
        [[unroll]] for (uint j = 0u; j < 4u; j++) {
            if (bi == 0xffffffffu || v[j] > bv) {
                bv = v[j];
                bi = c + j * WG;
            }
        }
    }
    for (; c < p.cols; c += WG) {
        float v = ord(x[base + c]);
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
    if (t == 0u) o[r] = isinf(best_v[0]) ? -1 : int(best_i[0]);
}
