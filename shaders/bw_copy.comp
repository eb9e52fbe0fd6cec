#version 450
// Memory bandwidth probe for `rlx bench` (runtime/vk_bandwidth.c): dst = src in 16-byte words, a
// grid-stride loop so that any group count covers the buffer. Uses set 1 only (no run-time
// scalars), so the host binds no common set for it.
layout(local_size_x_id = 0, local_size_y = 1, local_size_z = 1) in;
layout(constant_id = 0) const uint WG = 256;

layout(set = 1, binding = 0) readonly buffer Src { uvec4 src[]; };
layout(set = 1, binding = 1) writeonly buffer Dst { uvec4 dst[]; };

layout(push_constant) uniform Push {
    uint n; // uvec4 words to copy
} p;

void main() {
    uint stride = gl_NumWorkGroups.x * WG;
    for (uint i = gl_WorkGroupID.x * WG + gl_LocalInvocationID.x; i < p.n; i += stride) dst[i] = src[i];
}
