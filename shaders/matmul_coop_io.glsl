// The interface of shaders/matmul_coop.glsl and matmul_batch.glsl (runtime/vk_lower.c emits both
// alike): x, the weights (as words, 16-byte and 8-byte units), the output, the epilogue's operand,
// the split-k partials, and the push constants.

layout(set = 1, binding = 0) readonly buffer X { vec4 x4[]; }; // rows start 16-byte aligned: k % 32 == 0
layout(set = 1, binding = 1) readonly buffer Wt { uint w_words[]; };
layout(set = 1, binding = 1) readonly buffer Wt4 { uvec4 w4[]; }; // the same weights, for F16 rows
layout(set = 1, binding = 1) readonly buffer Wt2 { uvec2 w2[]; }; // and for Q4_K's quants
layout(set = 1, binding = 2) writeonly buffer O { float o[]; };
layout(set = 1, binding = 3) readonly buffer Aux { float aux[]; };
layout(set = 1, binding = 4) writeonly buffer Part { float part[]; }; // SPLIT > 1: raw sums

layout(push_constant) uniform Push {
    uint rows;
    uint k;
    uint m_rows;
    uint m0;
    uint m;
    uint row_bytes;
    uint tok;
    uint ksplit; // SPLIT > 1: the k values of one split
} p;
