// KV_WRITE: row r < n_tokens of x goes to the pool row of position rlx_pos(r) of its sequence
// (common.glsl). The host has checked the positions and pages before the run
// (rlx_backend_check_rows, or n_past + n_tokens <= cap in the single-sequence form).
#include "common.glsl"
#include "kv_type.glsl"

layout(set = 1, binding = 0) readonly buffer X { float x[]; };
layout(set = 1, binding = 1) buffer C { kv_t cache[]; };

layout(push_constant) uniform Push {
    uint row_elems; // H_kv * Dh
    uint rows;      // static rows of x
} p;

void main() {
    uint n = min(rlx.n_tokens, p.rows) * p.row_elems;
    uint stride = gl_NumWorkGroups.x * gl_NumWorkGroups.y * WG;
    for (uint i = group_id() * WG + gl_LocalInvocationID.x; i < n; i += stride) {
        uint r = i / p.row_elems;
        cache[rlx_kv_row(r, rlx_pos(r)) * p.row_elems + (i - r * p.row_elems)] = kv_store(x[i]);
    }
}
