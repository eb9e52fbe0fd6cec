#version 450
// Reads the first bytes of the next stage's weights so that its first workgroups find them in L2
// (runtime/vk_warm_next.c). Recorded after the last matvec of a decode stage, with no barrier
// between, it runs as that matvec's workgroups drain, when memory would otherwise idle. Each
// invocation has PER 16-byte loads in flight. They feed an atomic on the status words that never
// runs in practice (the words would have to XOR to a fixed value) and would not change them if it
// did: a use outside the workgroup, so that no compiler may drop the loads. (Synchronization
// validation counts it as a write of the status words: of the kernels that touch them, embed and
// dequant run at a program's start or in prefill, never in a decode matvec's stage, and matvec.glsl's
// WARM keeps its own loads alive through shared memory so as not to touch them in every stage.)
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(constant_id = 1) const uint PER = 8;

layout(set = 1, binding = 0) readonly buffer W { uvec4 w[]; };

layout(push_constant) uniform Push {
    uint n; // 16-byte words to read
} p;

void main() {
    uint stride = gl_NumWorkGroups.x * gl_NumWorkGroups.y * WG * PER;
    uvec4 acc = uvec4(0u);
    for (uint i = group_id() * WG * PER + gl_LocalInvocationID.x; i < p.n; i += stride) {
        uvec4 v[PER];
        [[unroll]] for (uint j = 0u; j < PER; j++) v[j] = w[min(i + j * WG, p.n - 1u)];
        [[unroll]] for (uint j = 0u; j < PER; j++) acc ^= v[j];
    }
    if (acc == uvec4(0x9E3779B9u, 0x7F4A7C15u, 0x85EBCA6Bu, 0xC2B2AE35u)) atomicOr(rlx_status[0], 0u);
}
